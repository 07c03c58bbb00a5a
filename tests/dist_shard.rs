//! `#[shard(B)]` functions against their unsharded twins, on every rank of
//! the world this binary runs in: `cargo test --test dist_shard` is a world
//! of one; `.ci/run` also runs the binary (built with `--features mpi`)
//! under `mpirun -np 1, 2, 3`. Every rank holds the whole data (made the
//! same way on every rank), passes its block of the sharded axes, and
//! checks its results: elementwise results bit for bit against the twin's
//! rows, reductions within a stated tolerance of the twin and with the same
//! bits on every rank, integers exactly. A failed check exits non-zero.

use einlang::dist::{block, World};
use einlang::einlang;
use einlang::ndarray::{s, Array1, Array2};

einlang! {
    /// Least squares: the loss, its gradient, and the fitted values.
    #[shard(B)]
    pub fn lsq(x: [f32; B, I], w: [f32; I], t: [f32; B]) -> ([f32; I], f32, [f32; B]) {
        let y[n] = sum[i](x[n, i] * w[i]);
        let l = sum[n]((y[n] - t[n]) * (y[n] - t[n])) / (B as f32);
        let g = @l / @w;
        (g, l, y)
    }
    pub fn lsq_whole(x: [f32; B, I], w: [f32; I], t: [f32; B]) -> ([f32; I], f32, [f32; B]) {
        let y[n] = sum[i](x[n, i] * w[i]);
        let l = sum[n]((y[n] - t[n]) * (y[n] - t[n])) / (B as f32);
        let g = @l / @w;
        (g, l, y)
    }

    /// Column sums and extrema, a row-wise value that uses the global
    /// index, and argmax/argmin over the sharded axis.
    #[shard(B)]
    pub fn cols(x: [f32; B, I]) -> ([f32; I], [f32; I], [f32; B], i64, [i64; I], f32) {
        let s[i] = sum[n](x[n, i]) * 2.0;
        let hi[i] = max[n](x[n, i]);
        let r[n] = max[i](x[n, i]) + (n as f32);
        let a = argmax[n](r[n]);
        let c[i] = argmin[n](x[n, i]);
        let m = min[n in 1..B](r[n] - (n as f32)) + (B as f32);
        (s, hi, r, a, c, m)
    }
    pub fn cols_whole(x: [f32; B, I]) -> ([f32; I], [f32; I], [f32; B], i64, [i64; I], f32) {
        let s[i] = sum[n](x[n, i]) * 2.0;
        let hi[i] = max[n](x[n, i]);
        let r[n] = max[i](x[n, i]) + (n as f32);
        let a = argmax[n](r[n]);
        let c[i] = argmin[n](x[n, i]);
        let m = min[n in 1..B](r[n] - (n as f32)) + (B as f32);
        (s, hi, r, a, c, m)
    }

    /// Integer reductions (exact) and logical ones.
    #[shard(N)]
    pub fn ints(v: [i64; N, K], p: [i32; N]) -> ([i64; K], [i64; K], i64, i32, bool, bool) {
        let s[k] = sum[n](v[n, k] * (n + 1));
        let lo[k] = min[n](v[n, k]);
        let hi = max[n, k](v[n, k]);
        let pr = prod[n](p[n]);
        let some = any[n](p[n] == 3);
        let every = all[n](p[n] > 0);
        (s, lo, hi, pr, some, every)
    }
    pub fn ints_whole(v: [i64; N, K], p: [i32; N]) -> ([i64; K], [i64; K], i64, i32, bool, bool) {
        let s[k] = sum[n](v[n, k] * (n + 1));
        let lo[k] = min[n](v[n, k]);
        let hi = max[n, k](v[n, k]);
        let pr = prod[n](p[n]);
        let some = any[n](p[n] == 3);
        let every = all[n](p[n] > 0);
        (s, lo, hi, pr, some, every)
    }

    /// The heat stencil over a grid split by rows: a recurrence over time
    /// that reads the previous step's neighbouring rows (halo exchanges).
    #[shard(N)]
    pub fn heat(u0: [f64; N, M], r: f64, steps: i64) -> [f64; N, M] {
        let u[0, i, j] = u0[i, j];
        let u[t in 1..steps, i in 1..N - 1, j in 1..M - 1] = u[t - 1, i, j]
            + r * (u[t - 1, i - 1, j] + u[t - 1, i + 1, j] + u[t - 1, i, j - 1] + u[t - 1, i, j + 1] - 4.0 * u[t - 1, i, j]);
        let last[i, j] = u[steps - 1, i, j];
        last
    }
    pub fn heat_whole(u0: [f64; N, M], r: f64, steps: i64) -> [f64; N, M] {
        let u[0, i, j] = u0[i, j];
        let u[t in 1..steps, i in 1..N - 1, j in 1..M - 1] = u[t - 1, i, j]
            + r * (u[t - 1, i - 1, j] + u[t - 1, i + 1, j] + u[t - 1, i, j - 1] + u[t - 1, i, j + 1] - 4.0 * u[t - 1, i, j]);
        let last[i, j] = u[steps - 1, i, j];
        last
    }

    /// A wider stencil (two rows each way) with a global index in its value.
    #[shard(N)]
    pub fn wide(u0: [f32; N, M], steps: i64) -> [f32; N, M] {
        let u[0, i, j] = u0[i, j] + (i as f32) * 0.01;
        let u[t in 1..steps, i in 2..N - 2, j] = 0.5 * u[t - 1, i, j] + 0.125 * (u[t - 1, i - 2, j] + u[t - 1, i + 2, j])
            + 0.0625 * (u[t - 1, i - 1, j] + u[t - 1, i + 1, j]) + ((t + i) as f32) * 0.001;
        let last[i, j] = u[steps - 1, i, j];
        last
    }
    pub fn wide_whole(u0: [f32; N, M], steps: i64) -> [f32; N, M] {
        let u[0, i, j] = u0[i, j] + (i as f32) * 0.01;
        let u[t in 1..steps, i in 2..N - 2, j] = 0.5 * u[t - 1, i, j] + 0.125 * (u[t - 1, i - 2, j] + u[t - 1, i + 2, j])
            + 0.0625 * (u[t - 1, i - 1, j] + u[t - 1, i + 1, j]) + ((t + i) as f32) * 0.001;
        let last[i, j] = u[steps - 1, i, j];
        last
    }

    /// A stencil in a plain definition, on a parameter and on a computed
    /// tensor: the neighbours' rows come with the tensor (one exchange per
    /// tensor), the guards keep their global meaning.
    #[shard(N)]
    pub fn lap(u: [f32; N, M]) -> ([f32; N, M], f32) {
        let v[i, j] = u[i - 1, j] + u[i + 1, j] - 2.0 * u[i, j] where i >= 1, i < N - 1;
        let w[i, j] = v[i, j] * 0.5 + v[i - 2, j] where i >= 2;
        (w, sum[i, j](w[i, j] * w[i, j]))
    }
    pub fn lap_whole(u: [f32; N, M]) -> ([f32; N, M], f32) {
        let v[i, j] = u[i - 1, j] + u[i + 1, j] - 2.0 * u[i, j] where i >= 1, i < N - 1;
        let w[i, j] = v[i, j] * 0.5 + v[i - 2, j] where i >= 2;
        (w, sum[i, j](w[i, j] * w[i, j]))
    }

    /// An `assert` of this rank's elements, and one of a reduction over
    /// the sharded axis.
    #[shard(N)]
    pub fn positive_total(v: [f32; N]) -> f32 {
        assert(v > 0.0, "every element must be positive");
        assert(all[i](v[i] > -100.0), "no element below -100");
        sum[i](v[i])
    }

    /// A gather along an unsharded axis at data-dependent indices (checked
    /// at run time: an index out of range is an error on that rank).
    #[shard(B)]
    pub fn pick(table: [f32; R], idx: [i64; B]) -> (f32, [f32; B]) {
        let v[n] = table[idx[n]];
        (sum[n](v[n]), v)
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

fn matrix(rows: usize, cols: usize, seed: u64) -> Array2<f32> {
    Array2::from_shape_vec((rows, cols), data(rows * cols, seed)).unwrap()
}

/// Asserts that `v` has the same bits on every rank.
fn same_everywhere(world: &World, what: &str, bits: &[i64]) {
    let all = world.all_gather_i64(bits);
    for (r, chunk) in all.chunks(bits.len().max(1)).enumerate() {
        assert_eq!(chunk, bits, "{what}: rank {r} differs from rank {}", world.rank());
    }
}

fn f32_bits(v: impl IntoIterator<Item = f32>) -> Vec<i64> {
    v.into_iter().map(|x| x.to_bits() as i64).collect()
}

fn close(what: &str, a: f32, b: f32, tol: f32) {
    assert!((a - b).abs() <= tol * (1.0 + b.abs()), "{what}: {a} vs {b}");
}

fn lsq_case(world: &World, n: usize, rows: std::ops::Range<usize>) {
    let (i_len, rank) = (5, world.rank());
    let x = matrix(n, i_len, 1 + n as u64);
    let w = Array1::from(data(i_len, 2));
    let t = Array1::from(data(n, 3));
    let (g, l, y) = lsq(world, x.slice(s![rows.clone(), ..]), &w, t.slice(s![rows.clone()])).unwrap();
    let (g1, l1, y1) = lsq_whole(&x, &w, &t).unwrap();
    // Elementwise: this rank's rows, bit for bit.
    assert_eq!(f32_bits(y.iter().copied()), f32_bits(y1.slice(s![rows.clone()]).iter().copied()), "rank {rank} y");
    // Reductions: within 1e-5 relative of the unsharded sums (the order
    // of the terms differs), the same bits on every rank.
    close("loss", l, l1, 1e-5);
    for (a, b) in g.iter().zip(g1.iter()) {
        close("gradient", *a, *b, 1e-5);
    }
    same_everywhere(world, "loss and gradient", &f32_bits([l].into_iter().chain(g.iter().copied())));
}

fn cols_case(world: &World, n: usize, rows: std::ops::Range<usize>) {
    let x = matrix(n, 4, 7 + n as u64);
    let (s, hi, r, a, c, m) = cols(world, x.slice(s![rows.clone(), ..])).unwrap();
    let (s1, hi1, r1, a1, c1, m1) = cols_whole(&x).unwrap();
    assert_eq!(f32_bits(r.iter().copied()), f32_bits(r1.slice(s![rows.clone()]).iter().copied()));
    for (p, q) in s.iter().zip(s1.iter()) {
        close("column sum", *p, *q, 1e-5);
    }
    // Extrema and their positions are exact.
    assert_eq!(f32_bits(hi.iter().copied()), f32_bits(hi1.iter().copied()));
    assert_eq!((a, c.to_vec()), (a1, c1.to_vec()), "argmax/argmin");
    assert_eq!(m.to_bits(), m1.to_bits(), "min over 1..B");
    same_everywhere(world, "cols", &f32_bits(s.iter().copied().chain([m])));
}

fn ints_case(world: &World, n: usize, rows: std::ops::Range<usize>) {
    let k = 3;
    let v = Array2::from_shape_fn((n, k), |(i, j)| {
        (i as i64 * 7919 + j as i64 * 104729) % 1000 - 500 + i64::from(i == 3) * i64::MAX / 2
    });
    let p = Array1::from_shape_fn(n, |i| (i % 5) as i32 + 1);
    let got = ints(world, v.slice(s![rows.clone(), ..]), p.slice(s![rows.clone()])).unwrap();
    let want = ints_whole(&v, &p).unwrap();
    assert_eq!(got, want, "integer reductions on rank {}", world.rank());
}

/// Stencils: this rank's rows bit for bit against the unsharded result;
/// a call sends its halo rows (one row to each neighbour per step) and a
/// few words of agreement, counted exactly.
fn stencils(world: &World) {
    let (rank, size) = (world.rank(), world.size());
    for (n, m, steps) in [(12usize, 7usize, 30i64), (3, 5, 4), (2, 4, 3), (1, 3, 2), (9, 1, 5), (40, 33, 1)] {
        let u0 = Array2::from_shape_fn((n, m), |(i, j)| ((i * 31 + j * 17) % 11) as f64 / 11.0);
        let rows = block(n, rank, size);
        let before = world.bytes_sent();
        let got = heat(world, u0.slice(s![rows.clone(), ..]), 0.2, steps).unwrap();
        let sent = world.bytes_sent() - before;
        let want = heat_whole(&u0, 0.2, steps).unwrap();
        let want = want.slice(s![rows.clone(), ..]);
        assert_eq!(got.shape(), want.shape());
        assert!(got.iter().zip(want.iter()).all(|(a, b)| a.to_bits() == b.to_bits()), "heat {n}x{m}, rank {rank}");
        if size > 1 {
            let holds: Vec<usize> = (0..size).map(|r| block(n, r, size).len()).collect();
            let neighbours = if holds[rank] == 0 {
                0
            } else {
                usize::from((0..rank).any(|r| holds[r] > 0)) + usize::from((rank + 1..size).any(|r| holds[r] > 0))
            };
            let exchanges = (steps - 1).max(0) as u64;
            // Entry: a status word, the extents (N, M) and the scalar
            // parameters (r, steps), whose all-gather also gives the block
            // lengths; the end: a status word. Each step: a status word and one row of M f64 to each
            // neighbour.
            let expected = 8 + 16 + 16 + 8 + exchanges * (8 + (neighbours * m * 8) as u64);
            assert_eq!(sent, expected, "heat {n}x{m}: bytes sent by rank {rank}");
        }
    }
    for (n, m) in [(11usize, 3usize), (6, 4), (4, 2), (2, 2), (1, 1)] {
        let u = matrix(n, m, 21);
        let rows = block(n, rank, size);
        // Blocks thinner than the halo (two rows) take rows from several
        // ranks.
        let (w, total) = lap(world, u.slice(s![rows.clone(), ..])).unwrap();
        let (w1, total1) = lap_whole(&u).unwrap();
        let want = w1.slice(s![rows.clone(), ..]);
        assert!(w.iter().zip(want.iter()).all(|(a, b)| a.to_bits() == b.to_bits()), "lap {n}x{m}, rank {rank}");
        close("lap total", total, total1, 1e-5);
        same_everywhere(world, "lap total", &f32_bits([total]));
    }
    for (n, m, steps) in [(13usize, 4usize, 9i64), (6, 2, 3), (5, 3, 2), (3, 2, 4), (2, 3, 3)] {
        let u0 = matrix(n, m, 9);
        let rows = block(n, rank, size);
        // Blocks thinner than the halo (two rows) take rows from several
        // ranks.
        let got = wide(world, u0.slice(s![rows.clone(), ..]), steps).unwrap();
        let want = wide_whole(&u0, steps).unwrap();
        let want = want.slice(s![rows.clone(), ..]);
        assert!(got.iter().zip(want.iter()).all(|(a, b)| a.to_bits() == b.to_bits()), "wide {n}x{m}, rank {rank}");
    }
}

fn errors(world: &World) {
    let (rank, size) = (world.rank(), world.size());
    let n = 9;
    let rows = block(n, rank, size);
    // An axis other than the sharded one that differs across ranks.
    let i_len = if size > 1 && rank == size - 1 { 4 } else { 5 };
    let x = matrix(n, i_len, 1);
    let w = Array1::from(data(i_len, 2));
    let t = Array1::from(data(n, 3));
    let r = lsq(world, x.slice(s![rows.clone(), ..]), &w, t.slice(s![rows.clone()]));
    if size > 1 {
        let e = r.expect_err("inconsistent extents are an error on every rank");
        assert!(matches!(e, einlang::Error::Dist { .. }), "rank {rank}: {e}");
        assert!(e.to_string().contains("`I` differs"), "{e}");
    } else {
        assert!(r.is_ok());
    }
    // Scalar parameters that differ across ranks: the same error on every
    // rank, naming the parameter, before any halo is exchanged.
    if size > 1 {
        let u0 = Array2::from_shape_fn((n, 3), |(i, j)| (i + j) as f64);
        let r_last = if rank == size - 1 { 0.25 } else { 0.2 };
        let e = heat(world, u0.slice(s![rows.clone(), ..]), r_last, 4).expect_err("a scalar that differs");
        assert!(
            matches!(&e, einlang::Error::Dist { message } if message.contains("scalar parameter `r` differs") && message.contains("0.2 on rank 0") && message.contains(&format!("0.25 on rank {}", size - 1))),
            "rank {rank}: {e}"
        );
        let steps = if rank == 0 { 5 } else { 4 };
        let e = heat(world, u0.slice(s![rows.clone(), ..]), 0.2, steps).expect_err("a step count that differs");
        assert!(
            matches!(&e, einlang::Error::Dist { message } if message.contains("`steps` differs")),
            "rank {rank}: {e}"
        );
    }
    // A bad gather on the last rank only: every rank returns its error.
    let table = Array1::from(data(6, 4));
    let idx = Array1::from_shape_fn(n, |i| if i == n - 1 { 6 } else { (i % 6) as i64 });
    let e = pick(world, &table, idx.slice(s![rows.clone()])).expect_err("a bad index on one rank");
    assert!(matches!(&e, einlang::Error::Index { index: 6, len: 6, .. }), "rank {rank}: {e}");
    // A local shape error on rank 0 (labels shorter than its rows), when
    // rank 0 holds rows.
    if !rows.is_empty() {
        let short = t.slice(s![rows.start..rows.end - 1]);
        let x = matrix(n, 5, 1);
        let w = Array1::from(data(5, 2));
        let r = if rank == 0 {
            lsq(world, x.slice(s![rows.clone(), ..]), &w, short)
        } else {
            lsq(world, x.slice(s![rows.clone(), ..]), &w, t.slice(s![rows.clone()]))
        };
        let e = r.expect_err("a shape error on rank 0 is an error everywhere");
        assert!(matches!(e, einlang::Error::Shape { .. }), "rank {rank}: {e}");
    }
    // A failed assert on the last rank only (its block has the one
    // negative element): the same error on every rank.
    let v = Array1::from_shape_fn(n, |i| if i == n - 1 { -1.0f32 } else { 1.0 + i as f32 });
    let e = positive_total(world, v.slice(s![rows.clone()])).expect_err("a failed assert on one rank");
    assert!(matches!(&e, einlang::Error::Assert { message, .. } if message.contains("positive")), "rank {rank}: {e}");
    let v = Array1::from_shape_fn(n, |i| 1.0 + i as f32);
    let total = positive_total(world, v.slice(s![rows.clone()])).unwrap();
    close("positive total", total, (1..=n).sum::<usize>() as f32, 1e-6);
    // The world is still usable: a good call afterwards.
    let idx = Array1::from_shape_fn(n, |i| (i % 6) as i64);
    let (total, v) = pick(world, &table, idx.slice(s![rows.clone()])).unwrap();
    assert_eq!(v.len(), rows.len());
    let want: f32 = (0..n).map(|i| table[i % 6]).sum();
    close("gather total", total, want, 1e-5);
}

/// `NAME_into` of a sharded function: this rank's block of the result into
/// the caller's buffer (any strides); a buffer of the wrong shape on one
/// rank is the same `Error::Shape` on every rank, and leaves the world
/// usable.
fn into_buffers(world: &World) {
    let (rank, size) = (world.rank(), world.size());
    let (n, m) = (10, 3);
    let u = matrix(n, m, 31);
    let rows = block(n, rank, size);
    let (w, total) = lap(world, u.slice(s![rows.clone(), ..])).unwrap();
    // A transposed buffer: written through its strides.
    let mut buf = Array2::<f32>::zeros((m, rows.len()));
    let t = lap_into(world, u.slice(s![rows.clone(), ..]), buf.view_mut().reversed_axes()).unwrap();
    assert_eq!(t.to_bits(), total.to_bits());
    assert!(buf.t().iter().zip(w.iter()).all(|(a, b)| a.to_bits() == b.to_bits()), "lap_into, rank {rank}");
    // The last rank's buffer has one column too many.
    let cols = if rank == size - 1 { m + 1 } else { m };
    let mut bad = Array2::<f32>::from_elem((rows.len(), cols), 7.0);
    let e = lap_into(world, u.slice(s![rows.clone(), ..]), &mut bad).expect_err("a wrong buffer on one rank");
    assert!(matches!(e, einlang::Error::Shape { .. }), "rank {rank}: {e}");
    if rank == size - 1 {
        assert!(bad.iter().all(|&v| v == 7.0), "a rejected buffer is left untouched");
    }
    let again = lap_into(world, u.slice(s![rows.clone(), ..]), &mut buf.view_mut().reversed_axes()).unwrap();
    assert_eq!(again.to_bits(), total.to_bits());
}

/// The gradient of a least-squares step sends its all-reduced values (the
/// gradient and the loss) and a few words of agreement, not the data.
fn bytes(world: &World) {
    let (n, i_len) = (64, 16);
    let rows = world.block(n);
    let x = matrix(n, i_len, 5);
    let w = Array1::from(data(i_len, 6));
    let t = Array1::from(data(n, 7));
    let before = world.bytes_sent();
    lsq(world, x.slice(s![rows.clone(), ..]), &w, t.slice(s![rows.clone()])).unwrap();
    let sent = world.bytes_sent() - before;
    if world.size() == 1 {
        assert_eq!(sent, 0);
        return;
    }
    // The values: the gradient (16 f32) and the loss (one f32).
    let values = (i_len as u64 + 1) * 4;
    // Agreement: one status word before each of the two all-reduces and at
    // the entry and the end, the entry's extents (B and I).
    let agreement = 4 * 8 + 2 * 8;
    assert_eq!(sent, values + agreement, "rank {}", world.rank());
    assert!(sent < (rows.len() * i_len * 4) as u64 || rows.len() < 4);
}

fn main() {
    let world = World::init().expect("a world");
    let (rank, size) = (world.rank(), world.size());
    for n in [1usize, 2, 7, 10, 33] {
        // Balanced blocks (empty ones when n < size).
        lsq_case(&world, n, block(n, rank, size));
        cols_case(&world, n.max(2), block(n.max(2), rank, size));
        ints_case(&world, n.max(4), block(n.max(4), rank, size));
    }
    // Uneven blocks, rank 0 empty: ranks hold 0, 1, 2, ... more rows.
    let lens: Vec<usize> = (0..size).map(|r| r * 2 + usize::from(r == size - 1)).collect();
    let n: usize = lens.iter().sum();
    let start: usize = lens[..rank].iter().sum();
    if n >= 2 {
        lsq_case(&world, n, start..start + lens[rank]);
        cols_case(&world, n, start..start + lens[rank]);
        ints_case(&world, n.max(1), start..start + lens[rank]);
    }
    stencils(&world);
    errors(&world);
    into_buffers(&world);
    bytes(&world);
    println!("rank {rank} of {size}: sharded functions agree with their twins ({} bytes sent)", world.bytes_sent());
}
