//! Checked reads past the ends of the whole sharded axis: a read along `B`
//! at an offset that the compiler cannot prove in range (its guard
//! depends on a parameter) and that reaches row `-1` or row `B` on the
//! edge ranks is the unsharded twin's `Error::Index` (the same tensor,
//! axis, index and whole length), on every rank, not a read of a halo row
//! beyond the axis. The same functions with a guard that holds give the
//! twin's rows bit for bit, and the `World` is still usable after the
//! errors. Run by `.ci/run` under `mpirun -np 1, 2, 3`; a failed check
//! exits non-zero.

use einlang::dist::{block, World};
use einlang::einlang;
use einlang::ndarray::{s, Array1, Array2};
use einlang::Error;
use std::ops::Range;

einlang! {
    /// A forward difference read at `i + 1` under a guard that reaches
    /// past the last row when `e > 0`; then a sum over the rows (a
    /// collective after the rows that fail on one rank only).
    #[shard(N)]
    pub fn fwd(v: [f64; N], e: i64) -> ([f64; N], f64) {
        let y[i in 0..N] = if i + 1 < N + e { v[i + 1] - v[i] } else { 0.0 };
        let total = sum[i](y[i]);
        (y, total)
    }
    pub fn fwd_whole(v: [f64; N], e: i64) -> ([f64; N], f64) {
        let y[i in 0..N] = if i + 1 < N + e { v[i + 1] - v[i] } else { 0.0 };
        let total = sum[i](y[i]);
        (y, total)
    }

    /// A window of three rows ahead (offsets from a reduction index), over
    /// integers: past the end when `e > 0`.
    #[shard(N)]
    pub fn ahead(c: [i64; N, K], e: i64) -> [i64; N, K] {
        let y[i in 0..N, k in 0..K] = sum[d in 0..3](if i + d < N + e { c[i + d, k] * (d + 1) } else { 0 });
        y
    }
    pub fn ahead_whole(c: [i64; N, K], e: i64) -> [i64; N, K] {
        let y[i in 0..N, k in 0..K] = sum[d in 0..3](if i + d < N + e { c[i + d, k] * (d + 1) } else { 0 });
        y
    }

    /// Steps of a recurrence reading the row before at the earlier step:
    /// before the first row when `e > 0`.
    #[shard(N)]
    pub fn steps(u0: [f64; N, M], count: i64, e: i64) -> [f64; N, M] {
        let u[0, i, j] = u0[i, j];
        let u[t in 1..count, i in 0..N, j in 0..M] = 0.5 * u[t - 1, i, j] + if i + e >= 1 { 0.25 * u[t - 1, i - 1, j] } else { 0.0 };
        let last[i, j] = u[count - 1, i, j];
        last
    }
    pub fn steps_whole(u0: [f64; N, M], count: i64, e: i64) -> [f64; N, M] {
        let u[0, i, j] = u0[i, j];
        let u[t in 1..count, i in 0..N, j in 0..M] = 0.5 * u[t - 1, i, j] + if i + e >= 1 { 0.25 * u[t - 1, i - 1, j] } else { 0.0 };
        let last[i, j] = u[count - 1, i, j];
        last
    }
}

/// The same index error up to the function's name (the sharded function
/// and its twin have different names).
fn same_index_error(what: &str, got: &Error, want: &Error) {
    match (got, want) {
        (
            Error::Index { tensor, axis, index, len, .. },
            Error::Index { tensor: t1, axis: a1, index: i1, len: l1, .. },
        ) => assert_eq!((tensor, axis, index, len), (t1, a1, i1, l1), "{what}: {got} against {want}"),
        _ => panic!("{what}: {got:?} where the unsharded twin gives {want:?}"),
    }
}

fn bits_equal(what: &str, a: impl IntoIterator<Item = f64>, b: impl IntoIterator<Item = f64>) {
    let (a, b): (Vec<u64>, Vec<u64>) =
        (a.into_iter().map(f64::to_bits).collect(), b.into_iter().map(f64::to_bits).collect());
    assert_eq!(a, b, "{what}: rows differ from the unsharded twin's");
}

fn cases(world: &World, n: usize, rows: Range<usize>) {
    let rank = world.rank();
    let v = Array1::from_shape_fn(n, |i| ((i * 37) % 11) as f64 * 0.5 - 1.0);
    let c = Array2::from_shape_fn((n, 2), |(i, k)| (i * 7 + k * 3) as i64 - 4);
    let u = Array2::from_shape_fn((n, 3), |(i, j)| ((i * 5 + j * 2) % 9) as f64 - 3.0);
    for e in [0i64, 1, 2] {
        let what = format!("n = {n}, e = {e}, rank {rank}");
        match (fwd(world, v.slice(s![rows.clone()]), e), fwd_whole(&v, e)) {
            (Ok((y, t)), Ok((y1, t1))) => {
                bits_equal(&format!("fwd {what}"), y.iter().copied(), y1.slice(s![rows.clone()]).iter().copied());
                assert!((t - t1).abs() <= 1e-12 * (1.0 + t1.abs()), "fwd total {what}: {t} vs {t1}");
            }
            (Err(a), Err(b)) => same_index_error(&format!("fwd {what}"), &a, &b),
            (a, b) => panic!("fwd {what}: {a:?} where the unsharded twin gives {b:?}"),
        }
        match (ahead(world, c.slice(s![rows.clone(), ..]), e), ahead_whole(&c, e)) {
            (Ok(y), Ok(y1)) => assert_eq!(y, y1.slice(s![rows.clone(), ..]), "ahead {what}"),
            (Err(a), Err(b)) => same_index_error(&format!("ahead {what}"), &a, &b),
            (a, b) => panic!("ahead {what}: {a:?} where the unsharded twin gives {b:?}"),
        }
        match (steps(world, u.slice(s![rows.clone(), ..]), 4, e), steps_whole(&u, 4, e)) {
            (Ok(y), Ok(y1)) => {
                bits_equal(&format!("steps {what}"), y.iter().copied(), y1.slice(s![rows.clone(), ..]).iter().copied())
            }
            (Err(a), Err(b)) => same_index_error(&format!("steps {what}"), &a, &b),
            (a, b) => panic!("steps {what}: {a:?} where the unsharded twin gives {b:?}"),
        }
    }
}

fn main() {
    let world = World::init().expect("a world");
    let (rank, size) = (world.rank(), world.size());
    // The twins fail for e > 0 whenever there are rows: check that the
    // cases below do exercise the error (not only agree on `Ok`).
    assert!(matches!(fwd_whole(&Array1::zeros(3), 1), Err(Error::Index { index: 3, len: 3, .. })));
    assert!(matches!(steps_whole(&Array2::zeros((3, 1)), 2, 1), Err(Error::Index { index: -1, len: 3, .. })));
    // Balanced blocks, fewer rows than ranks, and no rows at all.
    for n in [0usize, 1, 2, 5, 9] {
        cases(&world, n, block(n, rank, size));
    }
    // Uneven blocks with the first rank empty, and with the last rank
    // empty (the edge row then lies on the rank before it).
    let lens: Vec<usize> = (0..size).map(|r| r * 2 + usize::from(r == size - 1)).collect();
    let start: usize = lens[..rank].iter().sum();
    cases(&world, lens.iter().sum(), start..start + lens[rank]);
    let lens: Vec<usize> = (0..size).map(|r| if r + 1 == size && size > 1 { 0 } else { 3 }).collect();
    let start: usize = lens[..rank].iter().sum();
    cases(&world, lens.iter().sum(), start..start + lens[rank]);
    // The world is still usable after the errors.
    let n = 6;
    let v = Array1::from_shape_fn(n, |i| i as f64);
    let (_, total) = fwd(&world, v.slice(s![block(n, rank, size)]), 0).expect("a call after the errors");
    assert_eq!(total, 5.0);
    println!("rank {rank} of {size}: reads past the ends of the sharded axis fail as the unsharded twins do");
}
