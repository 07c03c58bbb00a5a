//! A definition (no recurrence) that reads a sharded tensor at offsets
//! along the sharded axis, with its exchange overlapped: the halo rows are
//! posted, the rows whose reads stay inside the rank's block are computed,
//! then the exchange completes and the edge rows are computed, all into
//! the one result. Checked against the unsharded twins bit for bit (only
//! the order of the rows changes), with blocks of every shape (balanced,
//! uneven, empty, thinner than the halo, which then has no interior), the
//! bytes each rank sends (derived from the reads: the rows the neighbours
//! want, as the blocking exchange sent), and an error on one rank between
//! the start of the exchange and its wait (a bad gather in an interior
//! row): every rank returns it, none hangs, and the `World` is usable
//! after. Run by `.ci/run` under `mpirun -np 1, 2, 3`; a failed check
//! exits non-zero.

use einlang::dist::{block, World};
use einlang::einlang;
use einlang::ndarray::{s, Array1, Array2};
use einlang::Error;
mod dist_support;
use dist_support::{bits, block_shapes, rows_of, rows_sent};

mod heat {
    einlang::include_ein!("examples/ein/heat_step.ein");
}
use heat::{step, step_whole};

einlang! {
    /// Two rows before and one after (a halo of two rows below, one
    /// above), in floats and in integers (exact), from two tensors read
    /// by one definition each.
    #[shard(N)]
    pub fn skew(u: [f64; N], c: [i64; N]) -> ([f64; N], [i64; N]) {
        let w[i] = if i >= 2 && i + 1 < N { u[i - 2] - 0.5 * u[i + 1] + u[i] } else { 0.0 };
        let z[i] = if i >= 2 && i + 1 < N { 3 * c[i - 2] - c[i + 1] } else { c[i] };
        (w, z)
    }
    pub fn skew_whole(u: [f64; N], c: [i64; N]) -> ([f64; N], [i64; N]) {
        let w[i] = if i >= 2 && i + 1 < N { u[i - 2] - 0.5 * u[i + 1] + u[i] } else { 0.0 };
        let z[i] = if i >= 2 && i + 1 < N { 3 * c[i - 2] - c[i + 1] } else { c[i] };
        (w, z)
    }

    /// A stencil that also gathers from a replicated table at a data index
    /// (`k`, this rank's block): a bad index fails on the rank that holds it.
    #[shard(N)]
    pub fn lookup(u: [f64; N], k: [i64; N], w: [f64; K]) -> [f64; N] {
        let v[i] = if i >= 1 && i + 1 < N { u[i - 1] + u[i + 1] + w[k[i]] } else { 0.0 };
        v
    }
    pub fn lookup_whole(u: [f64; N], k: [i64; N], w: [f64; K]) -> [f64; N] {
        let v[i] = if i >= 1 && i + 1 < N { u[i - 1] + u[i + 1] + w[k[i]] } else { 0.0 };
        v
    }
}

/// `step` as a naive loop.
fn step_naive(u: &Array2<f64>, r: f64) -> Array2<f64> {
    let (n, m) = u.dim();
    let mut v = u.clone();
    for i in 1..n.saturating_sub(1) {
        for j in 1..m.saturating_sub(1) {
            v[[i, j]] =
                u[[i, j]] + r * (u[[i - 1, j]] + u[[i + 1, j]] + u[[i, j - 1]] + u[[i, j + 1]] - 4.0 * u[[i, j]]);
        }
    }
    v
}

/// `skew` as naive loops.
fn skew_naive(u: &[f64], c: &[i64]) -> (Vec<f64>, Vec<i64>) {
    let n = u.len();
    let mut w = vec![0.0; n];
    let mut z = c.to_vec();
    for i in 2..n.saturating_sub(1) {
        w[i] = u[i - 2] - 0.5 * u[i + 1] + u[i];
        z[i] = 3 * c[i - 2] - c[i + 1];
    }
    (w, z)
}

fn stencils(world: &World, lens: &[usize]) {
    let (rank, size) = (world.rank(), world.size());
    let n: usize = lens.iter().sum();
    let rows = rows_of(lens, rank);
    let what = format!("blocks {lens:?}, rank {rank}");
    for m in [1usize, 3, 6] {
        let u = Array2::from_shape_fn((n, m), |(i, j)| ((i * 31 + j * 17) % 11) as f64 / 11.0 - 0.3);
        let before = world.bytes_sent();
        let got = step(world, u.slice(s![rows.clone(), ..]), 0.2).expect("step");
        let sent = world.bytes_sent() - before;
        let twin = step_whole(&u, 0.2).expect("the twin");
        assert_eq!(
            bits(got.iter().copied()),
            bits(twin.slice(s![rows.clone(), ..]).iter().copied()),
            "step against its twin, {what}, {m} columns"
        );
        assert_eq!(bits(twin.iter().copied()), bits(step_naive(&u, 0.2).iter().copied()), "the twin, {m} columns");
        if size > 1 {
            // Entry: a status word, the block length, M and r (one
            // all-gather, which also gives every rank's block length);
            // the exchange: a status word, then the rows; the end: a
            // status word.
            let want = 8 + 24 + 8 + rows_sent(lens, rank, 1, 1) * m * 8 + 8;
            assert_eq!(sent, want as u64, "step bytes, {what}, {m} columns");
        } else {
            assert_eq!(sent, 0);
        }
    }
    let u: Vec<f64> = (0..n).map(|i| ((i * 29) % 13) as f64 / 13.0 - 0.25).collect();
    let c: Vec<i64> = (0..n).map(|i| (i as i64 * 7919) % 1001 - 500).collect();
    let (u1, c1) = (Array1::from_vec(u.clone()), Array1::from_vec(c.clone()));
    let before = world.bytes_sent();
    let (w, z) = skew(world, u1.slice(s![rows.clone()]), c1.slice(s![rows.clone()])).expect("skew");
    let sent = world.bytes_sent() - before;
    let (tw, tz) = skew_whole(&u1, &c1).expect("the twin");
    let (nw, nz) = skew_naive(&u, &c);
    assert_eq!(bits(tw.iter().copied()), bits(nw.iter().copied()), "the twin");
    assert_eq!(tz.to_vec(), nz, "the twin");
    assert_eq!(bits(w.iter().copied()), bits(tw.slice(s![rows.clone()]).iter().copied()), "skew w, {what}");
    assert_eq!(z.to_vec(), tz.slice(s![rows.clone()]).to_vec(), "skew z, {what}");
    if size > 1 {
        // Entry: a status word, the block length (which is every rank's
        // block length, gathered); two exchanges (of `u` and of `c`), two rows below, one
        // above; the end: a status word.
        let want = 8 + 8 + 2 * (8 + rows_sent(lens, rank, 2, 1) * 8) + 8;
        assert_eq!(sent, want as u64, "skew bytes, {what}");
    }
}

/// A bad gather in an interior row of one rank: every rank returns the
/// unsharded twin's error, whether the failing rank was between the start
/// of the exchange and its wait or not; then a good call on the same
/// `World`.
fn error_in_the_interior(world: &World) {
    let (rank, size) = (world.rank(), world.size());
    let n = 12;
    let rows = block(n, rank, size);
    let u = Array1::from_shape_fn(n, |i| i as f64 * 0.5);
    let w = Array1::from_vec(vec![0.25, -1.0, 2.0]);
    let good = Array1::from_shape_fn(n, |i| (i % 3) as i64);
    // Row 2 is an interior row of its rank for 1, 2 and 3 ranks (blocks
    // of 12, 6 and 4 rows; the reads reach one row each way).
    let mut bad = good.clone();
    bad[2] = 7;
    let want = lookup_whole(&u, &bad, &w).expect_err("the twin fails");
    assert!(matches!(want, Error::Index { index: 7, len: 3, .. }), "{want:?}");
    let same = |got: &Error, want: &Error| match (got, want) {
        (
            Error::Index { tensor, axis, index, len, .. },
            Error::Index { tensor: t1, axis: a1, index: i1, len: l1, .. },
        ) => assert_eq!((tensor, axis, index, len), (t1, a1, i1, l1), "rank {rank}: {got} against {want}"),
        _ => panic!("rank {rank}: {got:?} where the twin gives {want:?}"),
    };
    for _ in 0..2 {
        let got = lookup(world, u.slice(s![rows.clone()]), bad.slice(s![rows.clone()]), &w).expect_err("fails");
        same(&got, &want);
    }
    // An edge row of the first rank (row 0 is guarded; row 1 reads row 0
    // and row 2): a negative index.
    let mut edge = good.clone();
    edge[rows.start.max(1).min(n - 2)] = -1;
    let want = lookup_whole(&u, &edge, &w).expect_err("the twin fails");
    let got = lookup(world, u.slice(s![rows.clone()]), edge.slice(s![rows.clone()]), &w).expect_err("fails");
    same(&got, &want);
    // The World is usable after the errors.
    let got = lookup(world, u.slice(s![rows.clone()]), good.slice(s![rows.clone()]), &w).expect("a good call");
    let want = lookup_whole(&u, &good, &w).expect("the twin");
    assert_eq!(bits(got.iter().copied()), bits(want.slice(s![rows.clone()]).iter().copied()), "rank {rank}");
}

/// Many calls in a row, each on the previous call's result (the world
/// keeps the extended copy between calls and reuses it, whose rows other
/// than the edge rows are then the previous call's): every call's rows
/// are the twin's, bit for bit. A call of another shape in between makes
/// a copy of its own; the next call of the first shape works as before.
fn repeated_calls(world: &World) {
    let (rank, size) = (world.rank(), world.size());
    let (n, m) = (11usize, 5usize);
    let rows = block(n, rank, size);
    let mut whole = Array2::from_shape_fn((n, m), |(i, j)| ((i * 7 + j * 3) % 5) as f64 / 5.0);
    let mut mine = whole.slice(s![rows.clone(), ..]).to_owned();
    for call in 0..6 {
        if call == 3 {
            // Another shape: more columns.
            let other = Array2::from_shape_fn((n, m + 2), |(i, j)| (i + j) as f64);
            let got = step(world, other.slice(s![rows.clone(), ..]), 0.1).expect("step");
            let want = step_whole(&other, 0.1).expect("the twin");
            assert_eq!(bits(got.iter().copied()), bits(want.slice(s![rows.clone(), ..]).iter().copied()));
        }
        mine = step(world, &mine, 0.2).expect("step");
        whole = step_naive(&whole, 0.2);
        assert_eq!(
            bits(mine.iter().copied()),
            bits(whole.slice(s![rows.clone(), ..]).iter().copied()),
            "rank {rank} of {size}, call {call}"
        );
    }
}

fn main() {
    let world = World::init().expect("a world");
    let (rank, size) = (world.rank(), world.size());
    for lens in block_shapes(size) {
        stencils(&world, &lens);
    }
    repeated_calls(&world);
    error_in_the_interior(&world);
    println!(
        "rank {rank} of {size}: overlapped extended copies agree with the twins ({} bytes sent)",
        world.bytes_sent()
    );
}
