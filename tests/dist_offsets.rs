//! Reads along the sharded axis at offsets known by their range (a
//! convolution's `x[r + dr - 2]`, a window's `v[i + d]`, a recurrence's
//! `u[t - 1, i + d - 1]`), against the unsharded twins on every rank of
//! the world this binary runs in (`.ci/run`: `mpirun -np 1, 2, 3`):
//! balanced and uneven blocks, a rank with an empty block, grids with
//! fewer rows than the halo (the rows then come from several ranks).
//! Elementwise results bit for bit; reductions within a stated tolerance
//! and the same bits on every rank. A failed check exits non-zero.

use einlang::dist::{block, World};
use einlang::einlang;
use einlang::ndarray::{s, Array1, Array2};
use std::ops::Range;

einlang! {
    /// A same-size convolution of rows (a kernel of five rows: two rows of
    /// the neighbours each way), its loss, and the loss's gradient with
    /// respect to the (replicated) kernel: a reduction over the rows that
    /// reads `x[r + dr - 2]` for every kernel row `dr`.
    #[shard(H)]
    pub fn conv(x: [f32; H, W], k: [f32; 5, 3]) -> ([f32; H, W], f32, [f32; 5, 3]) {
        let y[r in 0..H, s in 0..W] = sum[dr, ds](if iy >= 0 && iy < H && ix >= 0 && ix < W { x[iy, ix] } else { 0.0 } * k[dr, ds]) where iy = r + dr - 2, ix = s + ds - 1;
        let l = sum[r, s](y[r, s] * y[r, s]);
        (y, l, @l / @k)
    }
    pub fn conv_whole(x: [f32; H, W], k: [f32; 5, 3]) -> ([f32; H, W], f32, [f32; 5, 3]) {
        let y[r in 0..H, s in 0..W] = sum[dr, ds](if iy >= 0 && iy < H && ix >= 0 && ix < W { x[iy, ix] } else { 0.0 } * k[dr, ds]) where iy = r + dr - 2, ix = s + ds - 1;
        let l = sum[r, s](y[r, s] * y[r, s]);
        (y, l, @l / @k)
    }

    /// A forward window of four elements read directly at `i + d` (three
    /// rows of the next ranks), and its integer twin (exact).
    #[shard(N)]
    pub fn window(v: [f64; N], c: [i64; N]) -> ([f64; N], [i64; N]) {
        let y[i in 0..N] = sum[d in 0..4](if i + d < N { v[i + d] * ((d + 1) as f64) } else { 0.0 });
        let z[i in 0..N] = sum[d in 0..4](if i + d < N { c[i + d] } else { 0 });
        (y, z)
    }
    pub fn window_whole(v: [f64; N], c: [i64; N]) -> ([f64; N], [i64; N]) {
        let y[i in 0..N] = sum[d in 0..4](if i + d < N { v[i + d] * ((d + 1) as f64) } else { 0.0 });
        let z[i in 0..N] = sum[d in 0..4](if i + d < N { c[i + d] } else { 0 });
        (y, z)
    }

    /// Time steps of a three-point mean whose neighbours come from a
    /// reduction index (`u[t - 1, i + d - 1]`): halo rows exchanged every
    /// step.
    #[shard(N)]
    pub fn smooth(u0: [f64; N, M], steps: i64) -> [f64; N, M] {
        let u[0, i, j] = u0[i, j];
        let u[t in 1..steps, i in 0..N, j in 0..M] = sum[d in 0..3](if i + d >= 1 && i + d <= N { u[t - 1, i + d - 1, j] } else { 0.0 }) / 3.0;
        let last[i, j] = u[steps - 1, i, j];
        last
    }
    pub fn smooth_whole(u0: [f64; N, M], steps: i64) -> [f64; N, M] {
        let u[0, i, j] = u0[i, j];
        let u[t in 1..steps, i in 0..N, j in 0..M] = sum[d in 0..3](if i + d >= 1 && i + d <= N { u[t - 1, i + d - 1, j] } else { 0.0 }) / 3.0;
        let last[i, j] = u[steps - 1, i, j];
        last
    }
}

/// Deterministic data, the same on every rank.
fn data(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 33) as f32 / (1u64 << 31) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// Asserts that `bits` are the same on every rank.
fn same_everywhere(world: &World, what: &str, bits: &[i64]) {
    let all = world.all_gather_i64(bits);
    for (r, chunk) in all.chunks(bits.len().max(1)).enumerate() {
        assert_eq!(chunk, bits, "{what}: rank {r} differs from rank {}", world.rank());
    }
}

fn close(what: &str, a: f32, b: f32, tol: f32) {
    assert!((a - b).abs() <= tol * (1.0 + b.abs()), "{what}: {a} vs {b}");
}

/// The kernel gradient by central differences of the unsharded loss (in
/// f64 over the f32 function), for an independent check of the twin.
fn conv_fd(x: &Array2<f32>, k: &Array2<f32>) -> Array2<f64> {
    let loss = |k: &Array2<f32>| conv_whole(x, k).unwrap().1 as f64;
    let mut g = Array2::zeros(k.raw_dim());
    for p in 0..5 {
        for q in 0..3 {
            let h = 1e-2f32;
            let (mut a, mut b) = (k.clone(), k.clone());
            a[[p, q]] += h;
            b[[p, q]] -= h;
            g[[p, q]] = (loss(&a) - loss(&b)) / (2.0 * h as f64);
        }
    }
    g
}

fn conv_case(world: &World, h: usize, w: usize, rows: Range<usize>) {
    let x = Array2::from_shape_vec((h, w), data(h * w, 3 + h as u64)).unwrap();
    let k = Array2::from_shape_vec((5, 3), data(15, 4)).unwrap();
    let (y, l, g) = conv(world, x.slice(s![rows.clone(), ..]), &k).unwrap();
    let (y1, l1, g1) = conv_whole(&x, &k).unwrap();
    let want = y1.slice(s![rows.clone(), ..]);
    assert_eq!(y.shape(), want.shape());
    assert!(
        y.iter().zip(want.iter()).all(|(a, b)| a.to_bits() == b.to_bits()),
        "conv {h}x{w}, rank {}: rows differ from the unsharded ones",
        world.rank()
    );
    close("conv loss", l, l1, 1e-5);
    for (a, b) in g.iter().zip(g1.iter()) {
        close("kernel gradient", *a, *b, 1e-4);
    }
    if h * w > 0 && world.rank() == 0 {
        let fd = conv_fd(&x, &k);
        for (a, b) in g1.iter().zip(fd.iter()) {
            assert!((*a as f64 - b).abs() <= 2e-2 * (1.0 + b.abs()), "kernel gradient {a} vs differences {b}");
        }
    }
    let bits: Vec<i64> = [l].iter().chain(g.iter()).map(|v| v.to_bits() as i64).collect();
    same_everywhere(world, "conv loss and gradient", &bits);
}

fn window_case(world: &World, n: usize, rows: Range<usize>) {
    let v = Array1::from_shape_fn(n, |i| data(n, 9)[i] as f64);
    let c = Array1::from_shape_fn(n, |i| (i as i64 * 7919) % 1000 - 500 + i64::from(i == 2) * (i64::MAX / 8));
    let (y, z) = window(world, v.slice(s![rows.clone()]), c.slice(s![rows.clone()])).unwrap();
    let (y1, z1) = window_whole(&v, &c).unwrap();
    assert!(
        y.iter().zip(y1.slice(s![rows.clone()]).iter()).all(|(a, b)| a.to_bits() == b.to_bits()),
        "window {n}, rank {}",
        world.rank()
    );
    assert_eq!(z.to_vec(), z1.slice(s![rows.clone()]).to_vec(), "integer window {n}, rank {}", world.rank());
}

fn smooth_case(world: &World, n: usize, m: usize, steps: i64, rows: Range<usize>) {
    let u0 = Array2::from_shape_fn((n, m), |(i, j)| ((i * 31 + j * 17) % 11) as f64 / 11.0);
    let before = world.bytes_sent();
    let got = smooth(world, u0.slice(s![rows.clone(), ..]), steps).unwrap();
    let sent = world.bytes_sent() - before;
    let want = smooth_whole(&u0, steps).unwrap();
    let want = want.slice(s![rows.clone(), ..]);
    assert!(
        got.iter().zip(want.iter()).all(|(a, b)| a.to_bits() == b.to_bits()),
        "smooth {n}x{m}, rank {}",
        world.rank()
    );
    if world.size() > 1 {
        // The halo is one row each way: with balanced blocks of at least
        // one row, a row to each neighbour holding rows per step, plus the
        // agreement (entry: status, N, M, steps, whose all-gather also
        // gives the block lengths; a status word per step and at the end).
        let (rank, size) = (world.rank(), world.size());
        let holds: Vec<usize> = (0..size).map(|r| block(n, r, size).len()).collect();
        if rows == block(n, rank, size) {
            let neighbours = if holds[rank] == 0 {
                0
            } else {
                usize::from(rank > 0 && holds[rank - 1] > 0) + usize::from(rank + 1 < size && holds[rank + 1] > 0)
            };
            let steps = (steps - 1).max(0) as u64;
            let expected = 8 + 24 + 8 + steps * (8 + (neighbours * m * 8) as u64);
            assert_eq!(sent, expected, "smooth {n}x{m}: bytes sent by rank {rank}");
        }
    }
}

fn main() {
    let world = World::init().expect("a world");
    let (rank, size) = (world.rank(), world.size());
    // Balanced blocks; grids of one to three rows are thinner than the
    // convolution's and the window's halos on several ranks.
    for n in [1usize, 2, 3, 4, 7, 12] {
        let rows = block(n, rank, size);
        conv_case(&world, n, 4, rows.clone());
        window_case(&world, n, rows.clone());
        smooth_case(&world, n, 3, 5, rows);
    }
    // Uneven blocks, rank 0 empty: ranks hold 0, 1, 2, ... more rows.
    let lens: Vec<usize> = (0..size).map(|r| r * 2 + usize::from(r == size - 1)).collect();
    let n: usize = lens.iter().sum();
    let start: usize = lens[..rank].iter().sum();
    let rows = start..start + lens[rank];
    conv_case(&world, n, 3, rows.clone());
    window_case(&world, n, rows.clone());
    smooth_case(&world, n, 2, 4, rows);
    // A window over blocks of one row: its three rows ahead come from
    // three ranks (the last ones' from fewer).
    let lens: Vec<usize> = vec![1; size];
    let start: usize = lens[..rank].iter().sum();
    window_case(&world, size, start..start + 1);
    // What a convolution with its kernel gradient sends: the two rows
    // each neighbour needs, once (the forward pass and the gradient read
    // the same extended copy), the gradient and the loss, and agreement
    // words (entry: status, H, W, whose all-gather also gives the block
    // lengths; before the exchange and the two all-reduces; the end).
    let (h, w) = (64, 32);
    let x = Array2::from_shape_vec((h, w), data(h * w, 5)).unwrap();
    let k = Array2::from_shape_vec((5, 3), data(15, 6)).unwrap();
    let rows = block(h, rank, size);
    let before = world.bytes_sent();
    conv(&world, x.slice(s![rows, ..]), &k).unwrap();
    let sent = world.bytes_sent() - before;
    println!("rank {rank} of {size}: conv {h} x {w} sent {sent} bytes");
    if size > 1 {
        let neighbours = usize::from(rank > 0) + usize::from(rank + 1 < size);
        let expected = neighbours * 2 * w * 4 + (15 + 1) * 4 + 7 * 8;
        assert_eq!(sent, expected as u64, "conv: bytes sent by rank {rank}");
    }
    println!("rank {rank} of {size}: offsets of known range agree with the twins ({} bytes sent)", world.bytes_sent());
}
