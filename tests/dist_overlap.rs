//! The halo exchange of a sharded recurrence overlapped with its interior
//! rows: each step starts the exchange, computes the rows whose reads stay
//! inside the rank's block, waits, then computes the edge rows. Checked
//! here against naive loops bit for bit (only the order of the rows
//! changes), with blocks of every shape (balanced, uneven, empty, thinner
//! than the halo, which then has no interior), the bytes each rank sends
//! (derived from the reads, the same as the blocking exchange sent), and
//! an error on one rank between the start of an exchange and its wait
//! (a bad gather in an interior row): every rank returns it, none hangs,
//! and the `World` is usable after. Run by `.ci/run` under `mpirun -np 1,
//! 2, 3`; a failed check exits non-zero.

use einlang::dist::{block, World};
use einlang::einlang;
use einlang::ndarray::{s, Array1, Array2};
use einlang::Error;
mod dist_support;
use dist_support::{bits, block_shapes, rows_of, rows_sent};

einlang! {
    /// Reads two rows before and one after at the earlier step (a halo of
    /// two rows below, one above): blocks of one or two rows take rows
    /// from several ranks.
    #[shard(N)]
    pub fn wave(u0: [f64; N], r: f64, steps: i64) -> [f64; N] {
        let u[0, i] = u0[i];
        let u[t in 1..steps, i in 2..N - 1] = u[t - 1, i] + r * (u[t - 1, i - 2] + u[t - 1, i + 1] - 2.0 * u[t - 1, i]);
        let last[i] = u[steps - 1, i];
        last
    }

    /// The heat stencil over rows and columns (a halo of one row each way).
    #[shard(N)]
    pub fn heat(u0: [f64; N, M], r: f64, steps: i64) -> [f64; N, M] {
        let u[0, i, j] = u0[i, j];
        let u[t in 1..steps, i in 1..N - 1, j in 1..M - 1] = u[t - 1, i, j]
            + r * (u[t - 1, i - 1, j] + u[t - 1, i + 1, j] + u[t - 1, i, j - 1] + u[t - 1, i, j + 1] - 4.0 * u[t - 1, i, j]);
        let last[i, j] = u[steps - 1, i, j];
        last
    }

    /// The same stencil sharded by columns: the sharded axis is the
    /// clause's inner loop (rows of the last axis filled as slices).
    #[shard(M)]
    pub fn heat_cols(u0: [f64; N, M], r: f64, steps: i64) -> [f64; N, M] {
        let u[0, i, j] = u0[i, j];
        let u[t in 1..steps, i in 1..N - 1, j in 1..M - 1] = u[t - 1, i, j]
            + r * (u[t - 1, i - 1, j] + u[t - 1, i + 1, j] + u[t - 1, i, j - 1] + u[t - 1, i, j + 1] - 4.0 * u[t - 1, i, j]);
        let last[i, j] = u[steps - 1, i, j];
        last
    }

    /// Two clauses reading the earlier step at offsets, over the same
    /// steps (the first column, the others): one exchange a step serves
    /// both, as deep as either reads.
    #[shard(N)]
    pub fn two(u0: [f64; N, M], steps: i64) -> [f64; N, M] {
        let u[0, i, j] = u0[i, j];
        let u[t in 1..steps, i in 1..N - 1, j in 0..1] = 0.5 * (u[t - 1, i - 1, j] + u[t - 1, i + 1, j]);
        let u[t in 1..steps, i in 1..N - 1, j in 1..M] = u[t - 1, i, j] - 0.25 * u[t - 1, i + 1, j];
        let last[i, j] = u[steps - 1, i, j];
        last
    }

    /// A stencil that also gathers from a replicated table at a data index
    /// (`k`, this rank's block): a bad index fails on the rank that holds it.
    #[shard(N)]
    pub fn lookup(u0: [f64; N], k: [i64; N], w: [f64; K], steps: i64) -> [f64; N] {
        let u[0, i] = u0[i];
        let u[t in 1..steps, i in 1..N - 1] = u[t - 1, i - 1] + u[t - 1, i + 1] + w[k[i]];
        let last[i] = u[steps - 1, i];
        last
    }
    pub fn lookup_whole(u0: [f64; N], k: [i64; N], w: [f64; K], steps: i64) -> [f64; N] {
        let u[0, i] = u0[i];
        let u[t in 1..steps, i in 1..N - 1] = u[t - 1, i - 1] + u[t - 1, i + 1] + w[k[i]];
        let last[i] = u[steps - 1, i];
        last
    }
}

/// `wave` as a naive loop over the whole axis (rows not written by a step
/// are zero, as in a recurrence whose clause does not write them).
fn wave_naive(u0: &[f64], r: f64, steps: i64) -> Vec<f64> {
    let n = u0.len();
    let mut u = u0.to_vec();
    for _ in 1..steps {
        let mut v = vec![0.0; n];
        for i in 2..n.saturating_sub(1) {
            v[i] = u[i] + r * (u[i - 2] + u[i + 1] - 2.0 * u[i]);
        }
        u = v;
    }
    u
}

/// `heat` as a naive loop.
fn heat_naive(u0: &Array2<f64>, r: f64, steps: i64) -> Array2<f64> {
    let (n, m) = u0.dim();
    let mut u = u0.clone();
    for _ in 1..steps {
        let mut v = Array2::zeros((n, m));
        for i in 1..n.saturating_sub(1) {
            for j in 1..m.saturating_sub(1) {
                v[[i, j]] =
                    u[[i, j]] + r * (u[[i - 1, j]] + u[[i + 1, j]] + u[[i, j - 1]] + u[[i, j + 1]] - 4.0 * u[[i, j]]);
            }
        }
        u = v;
    }
    u
}

/// `two` as a naive loop.
fn two_naive(u0: &Array2<f64>, steps: i64) -> Array2<f64> {
    let (n, m) = u0.dim();
    let mut u = u0.clone();
    for _ in 1..steps {
        let mut v = Array2::zeros((n, m));
        for i in 1..n.saturating_sub(1) {
            for j in 0..m.min(1) {
                v[[i, j]] = 0.5 * (u[[i - 1, j]] + u[[i + 1, j]]);
            }
            for j in 1..m {
                v[[i, j]] = u[[i, j]] - 0.25 * u[[i + 1, j]];
            }
        }
        u = v;
    }
    u
}

fn stencils(world: &World, lens: &[usize]) {
    let (rank, size) = (world.rank(), world.size());
    let n: usize = lens.iter().sum();
    let rows = rows_of(lens, rank);
    let what = format!("blocks {lens:?}, rank {rank}");
    for steps in [1i64, 2, 7] {
        let u0 = Array1::from_shape_fn(n, |i| ((i * 29) % 13) as f64 / 13.0 - 0.25);
        let before = world.bytes_sent();
        let got = wave(world, u0.slice(s![rows.clone()]), 0.3, steps).expect("wave");
        let sent = world.bytes_sent() - before;
        let want = wave_naive(u0.as_slice().unwrap(), 0.3, steps);
        assert_eq!(bits(got.iter().copied()), bits(want[rows.clone()].iter().copied()), "wave {what}, {steps} steps");
        if size > 1 {
            // Entry: a status word, the block length and the scalars (r,
            // steps), in one all-gather that also gives every rank's
            // block length; the end: a status word. Each step after the
            // first: a status word, then the rows.
            let per_step = 8 + rows_sent(lens, rank, 2, 1) * 8;
            assert_eq!(sent, (8 + 24 + 8 + (steps - 1) as usize * per_step) as u64, "wave bytes, {what}");
        } else {
            assert_eq!(sent, 0);
        }
        for m in [1usize, 4] {
            let u0 = Array2::from_shape_fn((n, m), |(i, j)| ((i * 31 + j * 17) % 11) as f64 / 11.0);
            let before = world.bytes_sent();
            let got = heat(world, u0.slice(s![rows.clone(), ..]), 0.2, steps).expect("heat");
            let sent = world.bytes_sent() - before;
            let want = heat_naive(&u0, 0.2, steps);
            assert_eq!(
                bits(got.iter().copied()),
                bits(want.slice(s![rows.clone(), ..]).iter().copied()),
                "heat {what}, {m} columns, {steps} steps"
            );
            if size > 1 {
                // As `wave`, with the extent M at entry, and rows of M f64.
                let per_step = 8 + rows_sent(lens, rank, 1, 1) * m * 8;
                assert_eq!(sent, (8 + 32 + 8 + (steps - 1) as usize * per_step) as u64, "heat bytes, {what}");
            }
            let before = world.bytes_sent();
            let got = two(world, u0.slice(s![rows.clone(), ..]), steps).expect("two");
            let sent = world.bytes_sent() - before;
            let want = two_naive(&u0, steps);
            assert_eq!(
                bits(got.iter().copied()),
                bits(want.slice(s![rows.clone(), ..]).iter().copied()),
                "two {what}, {m} columns, {steps} steps"
            );
            if size > 1 {
                // One exchange a step, one row each way; the scalar is
                // `steps` alone.
                let per_step = 8 + rows_sent(lens, rank, 1, 1) * m * 8;
                assert_eq!(sent, (8 + 24 + 8 + (steps - 1) as usize * per_step) as u64, "two bytes, {what}");
            }
            // Sharded by columns: the blocks are of columns, `m` rows.
            let u0 = Array2::from_shape_fn((m + 2, n), |(i, j)| ((i * 13 + j * 7) % 10) as f64 / 10.0);
            let before = world.bytes_sent();
            let got = heat_cols(world, u0.slice(s![.., rows.clone()]), 0.2, steps).expect("heat_cols");
            let sent = world.bytes_sent() - before;
            let want = heat_naive(&u0, 0.2, steps);
            assert_eq!(
                bits(got.iter().copied()),
                bits(want.slice(s![.., rows.clone()]).iter().copied()),
                "heat_cols {what}, {} rows, {steps} steps",
                m + 2
            );
            if size > 1 {
                // Columns of m + 2 f64.
                let per_step = 8 + rows_sent(lens, rank, 1, 1) * (m + 2) * 8;
                assert_eq!(sent, (8 + 32 + 8 + (steps - 1) as usize * per_step) as u64, "heat_cols bytes, {what}");
            }
        }
    }
}

/// A bad gather in an interior row of one rank, at the first step: every
/// rank returns the unsharded twin's error (up to the function's name),
/// whether the failing rank was between the start of the exchange and its
/// wait or not; then a good call on the same `World`.
fn error_in_the_interior(world: &World) {
    let (rank, size) = (world.rank(), world.size());
    let n = 12;
    let rows = block(n, rank, size);
    let u0 = Array1::from_shape_fn(n, |i| i as f64 * 0.5);
    let w = Array1::from_vec(vec![0.25, -1.0, 2.0]);
    let good = Array1::from_shape_fn(n, |i| (i % 3) as i64);
    // Row 2 is an interior row of its rank for 1, 2 and 3 ranks (blocks
    // of 12, 6 and 4 rows; the reads reach one row each way).
    let mut bad = good.clone();
    bad[2] = 7;
    let want = lookup_whole(&u0, &bad, &w, 5).expect_err("the twin fails");
    assert!(matches!(want, Error::Index { index: 7, len: 3, .. }), "{want:?}");
    let same = |got: &Error, want: &Error| match (got, want) {
        (
            Error::Index { tensor, axis, index, len, .. },
            Error::Index { tensor: t1, axis: a1, index: i1, len: l1, .. },
        ) => assert_eq!((tensor, axis, index, len), (t1, a1, i1, l1), "rank {rank}: {got} against {want}"),
        _ => panic!("rank {rank}: {got:?} where the twin gives {want:?}"),
    };
    let got =
        lookup(world, u0.slice(s![rows.clone()]), bad.slice(s![rows.clone()]), &w, 5).expect_err("every rank fails");
    same(&got, &want);
    // A negative index, and twice in a row on the same World.
    bad[2] = -1;
    let want = lookup_whole(&u0, &bad, &w, 3).expect_err("the twin fails");
    for _ in 0..2 {
        let got = lookup(world, u0.slice(s![rows.clone()]), bad.slice(s![rows.clone()]), &w, 3).expect_err("fails");
        same(&got, &want);
    }
    // One step: no clause runs, the bad index is never read.
    let got = lookup(world, u0.slice(s![rows.clone()]), bad.slice(s![rows.clone()]), &w, 1).expect("no step");
    assert_eq!(bits(got.iter().copied()), bits(u0.slice(s![rows.clone()]).iter().copied()));
    // The World is usable after the errors.
    let got = lookup(world, u0.slice(s![rows.clone()]), good.slice(s![rows.clone()]), &w, 5).expect("a good call");
    let want = lookup_whole(&u0, &good, &w, 5).expect("the twin");
    assert_eq!(bits(got.iter().copied()), bits(want.slice(s![rows.clone()]).iter().copied()), "rank {rank}");
}

fn main() {
    let world = World::init().expect("a world");
    let (rank, size) = (world.rank(), world.size());
    for lens in block_shapes(size) {
        stencils(&world, &lens);
    }
    error_in_the_interior(&world);
    println!(
        "rank {rank} of {size}: overlapped halo exchanges agree with naive loops ({} bytes sent)",
        world.bytes_sent()
    );
}
