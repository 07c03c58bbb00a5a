//! The heat stencil of `examples/heat.rs` over a grid split by rows across
//! MPI ranks (`#[shard(N)]` in `examples/ein/heat_dist.ein`): each rank
//! computes its block of rows and exchanges one row with each neighbour
//! per time step.
//!
//! ```sh
//! cargo build --release --features mpi --example heat_dist
//! mpirun -np 2 target/release/examples/heat_dist           # two ranks
//! RAYON_NUM_THREADS=1 mpirun -np 2 target/release/examples/heat_dist
//! cargo run --release --example heat_dist                  # a world of one
//! ```
//!
//! Prints the time per call and the bytes each rank sent. Then the same
//! number of steps as calls of a sharded definition (`step_into`: one call
//! per step, writing the next step into the second of two buffers that
//! then swap, so the stepping loop allocates no grid; its halo rows are
//! exchanged while the rows that read no halo row are computed, from the
//! block itself; the edge rows read a copy of the halo and edge rows that
//! the `World` keeps between calls; `EINLANG_HALO_OVERLAP=0` exchanges
//! them before the rows instead). With `--check`, every rank also computes
//! the whole grid alone (both ways) and checks that its rows are the same
//! bits; the exit status says whether they were. Arguments:
//! `[--check] [ROWS [COLS [STEPS]]]` (default 512 x 512, 200 steps).

use std::time::Instant;

use einlang::dist::World;
use einlang::ndarray::{s, Array2};

mod program {
    einlang::include_ein!("examples/ein/heat_dist.ein");
}

mod whole {
    einlang::include_ein!("examples/ein/heat.ein");
}

mod step {
    einlang::include_ein!("examples/ein/heat_step.ein");
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let check = args.iter().any(|a| a == "--check");
    let nums: Vec<usize> = args.iter().filter_map(|a| a.parse().ok()).collect();
    let (n, m, steps) = (
        nums.first().copied().unwrap_or(512),
        nums.get(1).copied().unwrap_or(512),
        nums.get(2).copied().unwrap_or(200),
    );
    let world = World::init()?;
    let (rank, size) = (world.rank(), world.size());
    // A hot square in the middle of a cold plate; every rank passes its rows.
    let u0 = Array2::from_shape_fn((n, m), |(i, j)| {
        if (n / 3..2 * n / 3).contains(&i) && (m / 3..2 * m / 3).contains(&j) {
            1.0
        } else {
            0.0
        }
    });
    let rows = world.block(n);
    let mine = u0.slice(s![rows.clone(), ..]);
    let _ = program::heat_rows(&world, mine, 0.2, 2)?;
    let before = world.bytes_sent();
    let reps = 3;
    let start = Instant::now();
    let mut u = program::heat_rows(&world, mine, 0.2, steps as i64)?;
    for _ in 1..reps {
        u = program::heat_rows(&world, mine, 0.2, steps as i64)?;
    }
    let per_call = start.elapsed().as_secs_f64() / reps as f64;
    let sent = (world.bytes_sent() - before) / reps as u64;
    let halo_rows = (steps.saturating_sub(1) * m * 8) as u64;
    println!(
        "rank {rank} of {size}: rows {rows:?} of {n} x {m}, {steps} steps: {:.1} ms per call, {sent} bytes sent per call \
         ({halo_rows} per neighbour in halo rows), RAYON_NUM_THREADS={}",
        per_call * 1e3,
        std::env::var("RAYON_NUM_THREADS").unwrap_or_else(|_| "(all cores)".into())
    );
    let local: f64 = u.sum();
    println!("rank {rank}: heat in my rows {local:.6}");
    if check {
        let alone = whole::heat(&u0, 0.2, steps as i64)?;
        let want = alone.slice(s![rows.clone(), ..]);
        let same = u.shape() == want.shape() && u.iter().zip(want.iter()).all(|(a, b)| a.to_bits() == b.to_bits());
        if !same {
            return Err(format!("rank {rank}: my rows differ from the one-process result").into());
        }
        println!("rank {rank}: the same bits as one process");
    }
    // The steps as calls of a sharded definition, each writing the next
    // step into the other of two buffers (`step_into`), which then swap:
    // the loop allocates no grid.
    let mut cur = Array2::<f64>::zeros(mine.raw_dim());
    let mut next = Array2::<f64>::zeros(mine.raw_dim());
    let calls = |cur: &mut Array2<f64>, next: &mut Array2<f64>| -> Result<(), einlang::Error> {
        cur.assign(&mine);
        for _ in 1..steps {
            step::step_into(&world, &*cur, 0.2, &mut *next)?;
            std::mem::swap(cur, next);
        }
        Ok(())
    };
    calls(&mut cur, &mut next)?;
    let before = world.bytes_sent();
    let start = Instant::now();
    for _ in 0..reps {
        calls(&mut cur, &mut next)?;
    }
    let v = cur;
    let per_call = start.elapsed().as_secs_f64() / reps as f64;
    let sent = (world.bytes_sent() - before) / reps as u64;
    println!(
        "rank {rank} of {size}: {} calls of a sharded definition: {:.1} ms, {sent} bytes sent, EINLANG_HALO_OVERLAP={}",
        steps.saturating_sub(1),
        per_call * 1e3,
        std::env::var("EINLANG_HALO_OVERLAP").unwrap_or_else(|_| "(unset: on)".into())
    );
    if check {
        let mut alone = u0.clone();
        let start = Instant::now();
        for _ in 1..steps {
            alone = step::step_whole(&alone, 0.2)?;
        }
        println!(
            "rank {rank}: the same calls of the unsharded definition on the whole grid: {:.1} ms",
            start.elapsed().as_secs_f64() * 1e3
        );
        let want = alone.slice(s![rows.clone(), ..]);
        let same = v.shape() == want.shape() && v.iter().zip(want.iter()).all(|(a, b)| a.to_bits() == b.to_bits());
        if !same {
            return Err(format!("rank {rank}: my rows of the definition's steps differ from one process").into());
        }
        println!("rank {rank}: the definition's steps give the same bits as one process");
    }
    Ok(())
}
