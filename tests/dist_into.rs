//! The `_into` form of a sharded stencil writes this rank's block of the
//! result straight into the caller's buffer: a time loop that calls it
//! once per step, swapping two buffers, allocates nothing of the block's
//! size per call, and not even on its first call besides the copy of the
//! block with its halo rows that the `World` keeps between calls. Counted
//! by a global allocator (allocations of at least the block's bytes); the
//! results are compared bit for bit with naive loops over the whole grid.
//! `.ci/run` runs this binary under `mpirun -np 1, 2, 3`; a failed check
//! exits non-zero.

#[macro_use]
mod alloc_support;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use einlang::dist::World;
use einlang::einlang;
use einlang::ndarray::{s, Array2};

einlang! {
    /// One step of the heat equation on a grid split by rows.
    #[shard(N)]
    pub fn heat_step(u: [f64; N, M], r: f64) -> [f64; N, M] {
        let v[i, j] = if i >= 1 && i + 1 < N && j >= 1 && j + 1 < M {
            u[i, j] + r * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1] - 4.0 * u[i, j])
        } else {
            u[i, j]
        };
        v
    }
}

static COUNTING: AtomicBool = AtomicBool::new(false);
/// Allocations of at least `LARGE` bytes while counting.
static LARGE_SEEN: AtomicUsize = AtomicUsize::new(0);
static LARGE: AtomicUsize = AtomicUsize::new(usize::MAX);

fn count(bytes: usize) {
    if COUNTING.load(Ordering::Relaxed) && bytes >= LARGE.load(Ordering::Relaxed) {
        LARGE_SEEN.fetch_add(1, Ordering::Relaxed);
    }
}

counting_allocator!(count);

/// Runs `f` counting the allocations of at least `bytes` bytes.
fn large_allocations<T>(bytes: usize, f: impl FnOnce() -> T) -> (T, usize) {
    LARGE.store(bytes, Ordering::SeqCst);
    LARGE_SEEN.store(0, Ordering::SeqCst);
    COUNTING.store(true, Ordering::SeqCst);
    let value = f();
    COUNTING.store(false, Ordering::SeqCst);
    (value, LARGE_SEEN.load(Ordering::SeqCst))
}

/// One step over the whole grid, by plain loops.
fn reference_step(u: &Array2<f64>, r: f64) -> Array2<f64> {
    let (n, m) = u.dim();
    Array2::from_shape_fn((n, m), |(i, j)| {
        if i >= 1 && i + 1 < n && j >= 1 && j + 1 < m {
            u[(i, j)] + r * (u[(i - 1, j)] + u[(i + 1, j)] + u[(i, j - 1)] + u[(i, j + 1)] - 4.0 * u[(i, j)])
        } else {
            u[(i, j)]
        }
    })
}

fn main() {
    let world = World::init().unwrap();
    let (rank, size) = (world.rank(), world.size());
    let mut failed = false;
    // Distinct grid sizes (no earlier buffer of the pool fits a later
    // one): rows per rank from thin to thick, a row longer than a page.
    for (n, m) in [(60usize, 700usize), (9, 1100), (301, 530)] {
        let rows = world.block(n);
        let mut whole = Array2::from_shape_fn((n, m), |(i, j)| ((i * 31 + j * 17) % 23) as f64 / 23.0);
        let mut u = whole.slice(s![rows.clone(), ..]).to_owned();
        let mut next = Array2::<f64>::zeros(u.dim());
        let block_bytes = rows.len() * m * 8;
        for step in 0..6 {
            let (got, large) = large_allocations(block_bytes.max(1), || heat_step_into(&world, &u, 0.2, &mut next));
            if let Err(e) = got {
                eprintln!("rank {rank}: heat_step_into {n}x{m} step {step}: {e:?}");
                failed = true;
                break;
            }
            std::mem::swap(&mut u, &mut next);
            whole = reference_step(&whole, 0.2);
            let want = whole.slice(s![rows.clone(), ..]);
            if !u.iter().zip(want.iter()).all(|(a, b)| a.to_bits() == b.to_bits()) {
                eprintln!("rank {rank}: heat_step_into {n}x{m} step {step}: not the reference's bits");
                failed = true;
            }
            // The first call may allocate the World's copy of the block
            // with its halos (in a world of one too); nothing else of the
            // block's size, ever (the result computed apart and copied in
            // was one more per call).
            let allowed = usize::from(step == 0);
            if rows.len() > 2 && large > allowed {
                eprintln!(
                    "rank {rank}: heat_step_into {n}x{m} step {step}: {large} allocations of the block's size ({block_bytes} bytes or more), {allowed} allowed"
                );
                failed = true;
            }
        }
    }
    // A buffer that is not in standard layout (every other column of a
    // wider array): the result is computed apart and copied in, the same
    // bits.
    let (n, m) = (11usize, 6usize);
    let rows = world.block(n);
    let whole = Array2::from_shape_fn((n, m), |(i, j)| ((i * 7 + j * 5) % 13) as f64 / 13.0);
    let mut wide = Array2::<f64>::from_elem((rows.len(), 2 * m), f64::NAN);
    match heat_step_into(&world, whole.slice(s![rows.clone(), ..]), 0.2, wide.slice_mut(s![.., ..;2])) {
        Ok(()) => {
            let want = reference_step(&whole, 0.2);
            let got = wide.slice(s![.., ..;2]);
            if !got.iter().zip(want.slice(s![rows.clone(), ..]).iter()).all(|(a, b)| a.to_bits() == b.to_bits()) {
                eprintln!("rank {rank}: heat_step_into a strided buffer: not the reference's bits");
                failed = true;
            }
            if !wide.slice(s![.., 1..;2]).iter().all(|v| v.is_nan()) {
                eprintln!("rank {rank}: heat_step_into wrote outside the strided buffer");
                failed = true;
            }
        }
        Err(e) => {
            eprintln!("rank {rank}: heat_step_into a strided buffer: {e:?}");
            failed = true;
        }
    }
    if failed {
        std::process::exit(1);
    }
    println!("rank {rank} of {size}: the sharded stencil's _into wrote into the caller's buffers");
}
