//! Communication buffers the allocator has no room for, on one rank only:
//! the message of an all-reduce (one tensor, several values in one
//! message, an `argmax` across ranks), the halo rows of a definition read
//! at offsets, and the halo of a recurrence's step. The failing rank is
//! made by its `World::set_buffer_limit` (the same `Error::Alloc` path as
//! an allocator without room). Every rank must return that rank's
//! `Error::Alloc`, none may wait for ever inside the collective, and the
//! same `World` must afterwards compute what the unsharded twin computes
//! (naive loops here). `.ci/run` runs this binary under `mpirun -np 1, 2,
//! 3`; in a world of one nothing is sent and no message is allocated, so
//! every call succeeds. A failed check exits non-zero.

use einlang::dist::World;
use einlang::ndarray::{s, Array1, Array2};
use einlang::{einlang, Error};

einlang! {
    /// An all-reduce of a tensor (the column sums over the sharded rows).
    #[shard(B)]
    pub fn col_sums(x: [f64; B, K]) -> [f64; K] {
        let c[k] = sum[n](x[n, k]);
        c
    }

    /// Several reductions at one point: one message.
    #[shard(B)]
    pub fn stats(x: [f64; B]) -> (f64, f64, i64) {
        (sum[n](x[n]), max[n](x[n]), sum[n in 0..B](n as i64))
    }

    /// An argmax across ranks, per column.
    #[shard(B)]
    pub fn col_argmax(x: [f32; B, K]) -> [i64; K] {
        let a[k] = argmax[n](x[n, k]);
        a
    }

    /// A definition read at offsets along the sharded axis: halo rows.
    #[shard(N)]
    pub fn blur(v: [f64; N, M]) -> [f64; N, M] {
        let y[i in 0..N, j in 0..M] = sum[d in 0..3](if i + d >= 1 && i + d <= N { v[i + d - 1, j] } else { 0.0 });
        y
    }

    /// A recurrence whose steps read the neighbours' rows of the step
    /// before: a halo exchange per step.
    #[shard(N)]
    pub fn heat(u0: [f64; N, M], steps: i64) -> [f64; N, M] {
        let u[0, i, j] = u0[i, j];
        let u[t in 1..steps, i in 0..N, j in 0..M] = sum[d in 0..3](if i + d >= 1 && i + d <= N { u[t - 1, i + d - 1, j] } else { 0.0 }) / 3.0;
        let last[i, j] = u[steps - 1, i, j];
        last
    }
}

/// Deterministic data, the same on every rank.
fn data(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 33) as f64 / (1u64 << 31) as f64) * 2.0 - 1.0
        })
        .collect()
}

/// The rank whose buffers get no room: the middle one of three, the last
/// of two.
fn failing(world: &World) -> usize {
    world.size() / 2
}

/// Checks that `got` is the failing rank's `Error::Alloc` in `function`
/// (of `bytes` when given) on every rank (a world of one: `Ok`), and
/// that every rank saw the same error.
fn agreed_alloc<T: std::fmt::Debug>(world: &World, got: Result<T, Error>, function: &str, bytes: Option<usize>) {
    if world.size() == 1 {
        assert!(got.is_ok(), "a world of one allocates no message: {got:?}");
        return;
    }
    let (tensor, found) = match &got {
        Err(Error::Alloc { function: f, tensor, bytes }) if f == function => (tensor.clone(), *bytes),
        other => panic!("rank {}: expected an Error::Alloc in `{function}`, got {other:?}", world.rank()),
    };
    if let Some(b) = bytes {
        assert_eq!(found, b, "rank {}: {got:?}", world.rank());
    }
    // The same error on every rank: its size and tensor name agree.
    let mine = [found as i64, tensor.len() as i64, tensor.bytes().map(i64::from).sum()];
    let all = world.all_gather_i64(&mine);
    for (r, part) in all.chunks(3).enumerate() {
        assert_eq!(part, mine, "rank {r} returned another error than rank {}", world.rank());
    }
}

/// Runs `call` with the failing rank's buffers limited to `limit` bytes,
/// then without the limit; returns both results.
fn limited<T>(world: &World, limit: usize, call: impl Fn() -> Result<T, Error>) -> (Result<T, Error>, T) {
    if world.rank() == failing(world) {
        world.set_buffer_limit(Some(limit));
    }
    let failed = call();
    world.set_buffer_limit(None);
    let ok = call().unwrap_or_else(|e| panic!("rank {}: the world is not usable after the failure: {e}", world.rank()));
    (failed, ok)
}

#[test]
fn a_tensor_all_reduce_without_room_fails_on_every_rank() {
    let world = World::init().unwrap();
    let (n, k) = (10, 6);
    let x = Array2::from_shape_vec((n, k), data(n * k, 1)).unwrap();
    let rows = world.block(n);
    // The message is this rank's 6 values (48 bytes): 40 bytes hold none.
    let (failed, ok) = limited(&world, 40, || col_sums(&world, x.slice(s![rows.clone(), ..])));
    agreed_alloc(&world, failed, "col_sums", Some(k * 8));
    for c in 0..k {
        let want: f64 = (0..n).map(|i| x[[i, c]]).sum();
        assert!((ok[c] - want).abs() <= 1e-12 * (1.0 + want.abs()), "column {c}: {} against {want}", ok[c]);
    }
    // Room for this rank's message but not for every rank's.
    let (failed, _) = limited(&world, k * 8, || col_sums(&world, x.slice(s![rows.clone(), ..])));
    agreed_alloc(&world, failed, "col_sums", Some(k * 8 * world.size()));
}

#[test]
fn several_values_in_one_message_without_room_fail_on_every_rank() {
    let world = World::init().unwrap();
    let n = 7;
    let x = Array1::from_vec(data(n, 2));
    let rows = world.block(n);
    let (failed, (s, m, i)) = limited(&world, 8, || stats(&world, x.slice(s![rows.clone()])));
    agreed_alloc(&world, failed, "stats", Some(24));
    let want_s: f64 = x.iter().sum();
    let want_m = x.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    assert!((s - want_s).abs() <= 1e-12 * (1.0 + want_s.abs()), "{s} against {want_s}");
    assert_eq!((m, i), (want_m, (0..n as i64).sum()));
}

#[test]
fn an_argmax_across_ranks_without_room_fails_on_every_rank() {
    let world = World::init().unwrap();
    let (n, k) = (9, 4);
    let x = Array2::from_shape_vec((n, k), data(n * k, 3).into_iter().map(|v| v as f32).collect()).unwrap();
    let rows = world.block(n);
    let (failed, ok) = limited(&world, 16, || col_argmax(&world, x.slice(s![rows.clone(), ..])));
    // A value and two positions per column: 4 + 16 bytes each.
    agreed_alloc(&world, failed, "col_argmax", Some(k * 20));
    for c in 0..k {
        let mut best = 0;
        for i in 1..n {
            if x[[i, c]] > x[[best, c]] {
                best = i;
            }
        }
        assert_eq!(ok[c], best as i64, "column {c}");
    }
}

#[test]
fn halo_rows_without_room_fail_on_every_rank() {
    let world = World::init().unwrap();
    let (n, m) = (8, 5);
    let v = Array2::from_shape_vec((n, m), data(n * m, 4)).unwrap();
    let rows = world.block(n);
    let (failed, ok) = limited(&world, 16, || blur(&world, v.slice(s![rows.clone(), ..])));
    agreed_alloc(&world, failed, "blur", None);
    for (li, i) in rows.clone().enumerate() {
        for j in 0..m {
            let mut want = 0.0;
            for d in 0..3 {
                if i + d >= 1 && i + d <= n {
                    want += v[[i + d - 1, j]];
                }
            }
            assert_eq!(ok[[li, j]].to_bits(), want.to_bits(), "row {i}, column {j}");
        }
    }
}

#[test]
fn a_recurrence_halo_without_room_fails_on_every_rank() {
    let world = World::init().unwrap();
    let (n, m, steps) = (9, 3, 5);
    let u0 = Array2::from_shape_vec((n, m), data(n * m, 5)).unwrap();
    let rows = world.block(n);
    let (failed, ok) = limited(&world, 16, || heat(&world, u0.slice(s![rows.clone(), ..]), steps));
    agreed_alloc(&world, failed, "heat", None);
    // The unsharded steps, in the same order of terms.
    let mut u = u0.clone();
    for _ in 1..steps {
        let mut next = Array2::zeros((n, m));
        for i in 0..n {
            for j in 0..m {
                let mut acc = 0.0;
                for d in 0..3 {
                    if i + d >= 1 && i + d <= n {
                        acc += u[[i + d - 1, j]];
                    }
                }
                next[[i, j]] = acc / 3.0;
            }
        }
        u = next;
    }
    for (li, i) in rows.enumerate() {
        for j in 0..m {
            assert_eq!(ok[[li, j]].to_bits(), u[[i, j]].to_bits(), "row {i}, column {j}");
        }
    }
}
