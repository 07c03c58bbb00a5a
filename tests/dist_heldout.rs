//! Held-out programs for `#[shard]`, written from the contract (DESIGN.md,
//! "Past one machine") rather than from the other dist tests: the sharded
//! axis in second place, several parameters sharing it, `B` in arithmetic,
//! ties of `argmax`/`argmin` across ranks, `any`/`all`, integer
//! `prod`/`min`/`max`, calls of other functions and of `std::ml` from a
//! sharded function, a gradient with the batch sharded (against the
//! unsharded gradient and finite differences), stencils at offsets of two
//! rows over a range `2..N - 2` and on grids smaller than the halo, a rank
//! with an empty block, tuples of a sharded tensor and a replicated scalar,
//! the `_into` forms, and errors on one rank only (every rank the same
//! kind of `Err`, the `World` usable afterwards). Every result is compared
//! with the unsharded twin on the whole data. `.ci/run` runs this binary
//! under `mpirun -np 1, 2, 3`; a failed check exits non-zero after
//! reporting every failure of this rank.

use std::cell::RefCell;
use std::ops::Range;

use einlang::dist::{block, World};
use einlang::ndarray::{s, Array1, Array2, Array3};
use einlang::{einlang, Error};

einlang! {
    use std::math::{abs, exp};
    use std::ml::{softmax, cross_entropy_loss};

    /// The sharded axis second: `x` is `[C, B]`; a mean over `B * C`.
    #[shard(B)]
    pub fn second(x: [f32; C, B], w: [f32; C], t: [f32; B]) -> ([f32; C], f32, [f32; B]) {
        let y[n] = sum[c](x[c, n] * w[c]);
        let l = sum[n, c]((x[c, n] * y[n] - t[n]) * (x[c, n] * y[n] - t[n])) / ((B * C) as f32);
        let g = @l / @w;
        (g, l, y)
    }
    pub fn second_whole(x: [f32; C, B], w: [f32; C], t: [f32; B]) -> ([f32; C], f32, [f32; B]) {
        let y[n] = sum[c](x[c, n] * w[c]);
        let l = sum[n, c]((x[c, n] * y[n] - t[n]) * (x[c, n] * y[n] - t[n])) / ((B * C) as f32);
        let g = @l / @w;
        (g, l, y)
    }

    /// Ties everywhere: argmax/argmin over the sharded axis, per column
    /// and of a row value, with the sharded axis in the middle.
    #[shard(B)]
    pub fn ties(x: [f64; K, B, J]) -> ([i64; K, J], [i64; K, J], i64, i64, [f64; B]) {
        let hi[k, j] = argmax[n](x[k, n, j]);
        let lo[k, j] = argmin[n](x[k, n, j]);
        let r[n] = sum[k, j](x[k, n, j]);
        (hi, lo, argmax[n](r[n]), argmin[n](r[n] * -1.0), r)
    }
    pub fn ties_whole(x: [f64; K, B, J]) -> ([i64; K, J], [i64; K, J], i64, i64, [f64; B]) {
        let hi[k, j] = argmax[n](x[k, n, j]);
        let lo[k, j] = argmin[n](x[k, n, j]);
        let r[n] = sum[k, j](x[k, n, j]);
        (hi, lo, argmax[n](r[n]), argmin[n](r[n] * -1.0), r)
    }

    /// Integers: exact `prod`, `min`, `max`, `sum`, and `any`/`all`, with
    /// the global index in the values.
    #[shard(B)]
    pub fn exact(a: [i64; B], b: [i32; B, K]) -> (i64, i64, i64, [i32; K], [i32; K], bool, bool, bool, [i64; B]) {
        let p = prod[n](a[n] % 5 + 1);
        let lo = min[n](a[n] * (n as i64) - 3);
        let hi = max[n, k]((b[n, k] as i64) + (n as i64));
        let cp[k] = prod[n](b[n, k] % 3 + 2);
        let cm[k] = min[n](b[n, k] - (n as i32));
        let some = any[n](a[n] == 7);
        let every = all[n](a[n] >= -1000);
        let none = any[n, k](b[n, k] > 1000000);
        let idx[n] = a[n] + (n as i64) * (B as i64);
        (p, lo, hi, cp, cm, some, every, none, idx)
    }
    pub fn exact_whole(a: [i64; B], b: [i32; B, K]) -> (i64, i64, i64, [i32; K], [i32; K], bool, bool, bool, [i64; B]) {
        let p = prod[n](a[n] % 5 + 1);
        let lo = min[n](a[n] * (n as i64) - 3);
        let hi = max[n, k]((b[n, k] as i64) + (n as i64));
        let cp[k] = prod[n](b[n, k] % 3 + 2);
        let cm[k] = min[n](b[n, k] - (n as i32));
        let some = any[n](a[n] == 7);
        let every = all[n](a[n] >= -1000);
        let none = any[n, k](b[n, k] > 1000000);
        let idx[n] = a[n] + (n as i64) * (B as i64);
        (p, lo, hi, cp, cm, some, every, none, idx)
    }

    /// A helper of this program, called from a sharded function.
    fn centred(z) {
        let m[n] = sum[c](z[n, c]) / 4.0;
        let y[n, c] = z[n, c] - m[n];
        y
    }

    /// A classifier step: logits, a helper, `std::ml` softmax (over the
    /// unsharded axis) and cross entropy, the mean over the sharded batch,
    /// and its gradient.
    #[shard(B)]
    pub fn classify(x: [f64; B, I], w: [f64; I, C], t: [f64; B, C]) -> ([f64; I, C], f64, [f64; B, C]) {
        let z[n, c] = sum[i](x[n, i] * w[i, c]);
        let zc = centred(z);
        let p = softmax(zc);
        let ce = cross_entropy_loss(zc, t);
        let l = sum[n](ce[n]) / (B as f64);
        let g = @l / @w;
        (g, l, p)
    }
    pub fn classify_whole(x: [f64; B, I], w: [f64; I, C], t: [f64; B, C]) -> ([f64; I, C], f64, [f64; B, C]) {
        let z[n, c] = sum[i](x[n, i] * w[i, c]);
        let zc = centred(z);
        let p = softmax(zc);
        let ce = cross_entropy_loss(zc, t);
        let l = sum[n](ce[n]) / (B as f64);
        let g = @l / @w;
        (g, l, p)
    }
    /// The loss alone, for finite differences.
    pub fn classify_loss(x: [f64; B, I], w: [f64; I, C], t: [f64; B, C]) -> f64 {
        let z[n, c] = sum[i](x[n, i] * w[i, c]);
        let zc = centred(z);
        let ce = cross_entropy_loss(zc, t);
        sum[n](ce[n]) / (B as f64)
    }

    /// A fourth-difference stencil (offsets -2..2) on the rows `2..N - 2`,
    /// a tuple of the sharded result and a replicated scalar.
    #[shard(N)]
    pub fn fourth(u: [f64; N, M]) -> ([f64; N, M], f64) {
        let v[i, j] = u[i - 2, j] - 4.0 * u[i - 1, j] + 6.0 * u[i, j] - 4.0 * u[i + 1, j] + u[i + 2, j] + (i as f64)
            where i >= 2, i < N - 2;
        (v, sum[i, j](v[i, j] * v[i, j]))
    }
    pub fn fourth_whole(u: [f64; N, M]) -> ([f64; N, M], f64) {
        let v[i, j] = u[i - 2, j] - 4.0 * u[i - 1, j] + 6.0 * u[i, j] - 4.0 * u[i + 1, j] + u[i + 2, j] + (i as f64)
            where i >= 2, i < N - 2;
        (v, sum[i, j](v[i, j] * v[i, j]))
    }

    /// A recurrence over time on rows `2..N - 2` reading two rows each way,
    /// the sharded axis second (`u0: [M, N]`).
    #[shard(N)]
    pub fn smooth(u0: [f32; M, N], steps: i64) -> ([f32; M, N], f32) {
        let u[0, j, i] = u0[j, i];
        let u[t in 1..steps, j, i in 2..N - 2] = 0.4 * u[t - 1, j, i] + 0.2 * (u[t - 1, j, i - 1] + u[t - 1, j, i + 1])
            + 0.1 * (u[t - 1, j, i - 2] + u[t - 1, j, i + 2]);
        let last[j, i] = u[steps - 1, j, i];
        (last, max[j, i](last[j, i]))
    }
    pub fn smooth_whole(u0: [f32; M, N], steps: i64) -> ([f32; M, N], f32) {
        let u[0, j, i] = u0[j, i];
        let u[t in 1..steps, j, i in 2..N - 2] = 0.4 * u[t - 1, j, i] + 0.2 * (u[t - 1, j, i - 1] + u[t - 1, j, i + 1])
            + 0.1 * (u[t - 1, j, i - 2] + u[t - 1, j, i + 2]);
        let last[j, i] = u[steps - 1, j, i];
        (last, max[j, i](last[j, i]))
    }

    /// A 1-D stencil step, called per step through `_into`.
    #[shard(N)]
    pub fn step1(u: [f64; N]) -> [f64; N] {
        let v[i] = if i >= 1 && i + 1 < N { 0.25 * u[i - 1] + 0.5 * u[i] + 0.25 * u[i + 1] } else { u[i] };
        v
    }
    pub fn step1_whole(u: [f64; N]) -> [f64; N] {
        let v[i] = if i >= 1 && i + 1 < N { 0.25 * u[i - 1] + 0.5 * u[i] + 0.25 * u[i + 1] } else { u[i] };
        v
    }

    /// A gather along an unsharded axis at data indices (an index out of
    /// range on one rank is an error on every rank), with a non-`B` axis
    /// `K` that must agree across ranks.
    #[shard(B)]
    pub fn lookup(table: [f32; R, K], idx: [i64; B], wts: [f32; B, K]) -> ([f32; B], f32) {
        let v[n] = sum[k](table[idx[n], k] * wts[n, k]);
        (v, sum[n](v[n]))
    }

    /// Two parameters sharing `B` and a replicated one of extent `B`
    /// (the blocks must add up to it).
    #[shard(B)]
    pub fn pair(a: [f64; B], b: [f64; B]) -> f64 {
        sum[n](a[n] * b[n])
    }

    /// Softmax over the sharded axis (the batch last): a max and a sum
    /// over `B` per row, each an all-reduce, between elementwise steps.
    #[shard(B)]
    pub fn soft_b(x: [f32; C, B]) -> ([f32; C, B], [f32; C]) {
        let m[c] = max[n](x[c, n]);
        let e[c, n] = exp(x[c, n] - m[c]);
        let z[c] = sum[n](e[c, n]);
        let y[c, n] = e[c, n] / z[c];
        (y, m)
    }
    pub fn soft_b_whole(x: [f32; C, B]) -> ([f32; C, B], [f32; C]) {
        let m[c] = max[n](x[c, n]);
        let e[c, n] = exp(x[c, n] - m[c]);
        let z[c] = sum[n](e[c, n]);
        let y[c, n] = e[c, n] / z[c];
        (y, m)
    }

    /// Gradient descent written as a recurrence over steps: every step's
    /// gradient is a sum over the sharded batch.
    #[shard(B)]
    pub fn descend(x: [f64; B, I], y: [f64; B], steps: i64, lr: f64) -> [f64; I] {
        let w[0, i] = 0.0;
        let w[t in 1..steps, i] = w[t - 1, i]
            - lr * sum[n](x[n, i] * (sum[k](x[n, k] * w[t - 1, k]) - y[n])) / (B as f64);
        let last[i] = w[steps - 1, i];
        last
    }
    pub fn descend_whole(x: [f64; B, I], y: [f64; B], steps: i64, lr: f64) -> [f64; I] {
        let w[0, i] = 0.0;
        let w[t in 1..steps, i] = w[t - 1, i]
            - lr * sum[n](x[n, i] * (sum[k](x[n, k] * w[t - 1, k]) - y[n])) / (B as f64);
        let last[i] = w[steps - 1, i];
        last
    }

    /// The gradient of a sharded parameter (a block result) and of a
    /// stencil's input with the grid sharded.
    #[shard(N)]
    pub fn grid_grad(u: [f64; N, M], k: [f64; 3]) -> ([f64; N, M], [f64; 3], f64) {
        let v[i in 0..N, j] = sum[d in 0..3](k[d] * u[i + d - 1, j]) where i >= 1, i + 1 < N;
        let l = sum[i, j](v[i, j] * v[i, j] * (1.0 + (i as f64) * 0.1));
        (@l / @u, @l / @k, l)
    }
    pub fn grid_grad_whole(u: [f64; N, M], k: [f64; 3]) -> ([f64; N, M], [f64; 3], f64) {
        let v[i in 0..N, j] = sum[d in 0..3](k[d] * u[i + d - 1, j]) where i >= 1, i + 1 < N;
        let l = sum[i, j](v[i, j] * v[i, j] * (1.0 + (i as f64) * 0.1));
        (@l / @u, @l / @k, l)
    }

    /// A sum over the sharded axis reading a neighbour (total variation).
    #[shard(N)]
    pub fn tv(u: [f32; N]) -> (f32, f32) {
        (sum[i in 0..N - 1](abs(u[i + 1] - u[i])), max[i in 1..N](u[i] - u[i - 1]))
    }
    pub fn tv_whole(u: [f32; N]) -> (f32, f32) {
        (sum[i in 0..N - 1](abs(u[i + 1] - u[i])), max[i in 1..N](u[i] - u[i - 1]))
    }

    /// A helper with offsets, called from a sharded function.
    fn diff2(u) {
        let d[i, j] = if i >= 1 && i + 1 < shape(u)[0] { u[i - 1, j] - 2.0 * u[i, j] + u[i + 1, j] } else { 0.0 };
        d
    }
    #[shard(N)]
    pub fn via_helper(u: [f64; N, M]) -> ([f64; N, M], f64) {
        let d = diff2(u);
        (d, sum[i, j](d[i, j]))
    }
    pub fn via_helper_whole(u: [f64; N, M]) -> ([f64; N, M], f64) {
        let d = diff2(u);
        (d, sum[i, j](d[i, j]))
    }


    /// Empty batches, bool blocks, a float `prod`, a guard with `B / 2`.
    #[shard(B)]
    pub fn misc(x: [f32; B], f: [bool; B]) -> (f32, f32, f32, i64, i64, bool, bool, f32, [f32; B]) {
        let total = sum[n](x[n]);
        let big[n] = if x[n] > total / (B as f32) { 1.0 } else { 0.0 };
        (total, prod[n](1.0 + x[n] * 0.1), max[n](x[n]), argmax[n](x[n]), argmin[n](x[n]),
         any[n](f[n]), all[n](f[n]), sum[n](x[n] where n < B / 2), big)
    }
    pub fn misc_whole(x: [f32; B], f: [bool; B]) -> (f32, f32, f32, i64, i64, bool, bool, f32, [f32; B]) {
        let total = sum[n](x[n]);
        let big[n] = if x[n] > total / (B as f32) { 1.0 } else { 0.0 };
        (total, prod[n](1.0 + x[n] * 0.1), max[n](x[n]), argmax[n](x[n]), argmin[n](x[n]),
         any[n](f[n]), all[n](f[n]), sum[n](x[n] where n < B / 2), big)
    }

    /// A scalar parameter that must agree, and a plain-definition stencil
    /// along a sharded second axis.
    #[shard(N)]
    pub fn scaled(u: [f64; M, N], a: f64) -> [f64; M, N] {
        let v[j, i] = a * (u[j, i - 2] + u[j, i + 2]) - u[j, i] where i >= 2, i < N - 2;
        v
    }
    pub fn scaled_whole(u: [f64; M, N], a: f64) -> [f64; M, N] {
        let v[j, i] = a * (u[j, i - 2] + u[j, i + 2]) - u[j, i] where i >= 2, i < N - 2;
        v
    }


    /// A recurrence whose clause runs over `1..K` and holds a max, an
    /// argmax and a masked sum over the sharded axis at every step.
    #[shard(B)]
    pub fn drift(x: [f32; B, K], steps: i64) -> ([f32; K], f32) {
        let c[0, k] = 0.0;
        let c[t in 1..steps, k in 0..1] = c[t - 1, k] + 1.0;
        let c[t in 1..steps, k in 1..K] = 0.5 * c[t - 1, k] + max[n](x[n, k] - c[t - 1, k - 1])
            + (argmax[n](x[n, k] * c[t - 1, k]) as f32) * 0.01 + sum[n](x[n, k] where x[n, k] > c[t - 1, k]);
        let last[k] = c[steps - 1, k];
        (last, sum[n, k](x[n, k] * last[k]))
    }
    pub fn drift_whole(x: [f32; B, K], steps: i64) -> ([f32; K], f32) {
        let c[0, k] = 0.0;
        let c[t in 1..steps, k in 0..1] = c[t - 1, k] + 1.0;
        let c[t in 1..steps, k in 1..K] = 0.5 * c[t - 1, k] + max[n](x[n, k] - c[t - 1, k - 1])
            + (argmax[n](x[n, k] * c[t - 1, k]) as f32) * 0.01 + sum[n](x[n, k] where x[n, k] > c[t - 1, k]);
        let last[k] = c[steps - 1, k];
        (last, sum[n, k](x[n, k] * last[k]))
    }


    /// A per-step all-reduce whose terms gather from a table (a bad index
    /// on one rank at a later step), and an assert on the block.
    #[shard(B)]
    pub fn gathered(table: [f64; R], idx: [i64; B], steps: i64) -> [f64; 2] {
        assert(all[n](idx[n] >= 0), "indices are not negative");
        let a[0, s in 0..2] = 1.0;
        let a[t in 1..steps, s in 0..2] = a[t - 1, s] * 0.5 + sum[n](table[idx[n] + t - 1] * (s as f64 + 1.0));
        let last[s in 0..2] = a[steps - 1, s];
        last
    }


    /// A result with the sharded axis last (a transpose of the block).
    #[shard(B)]
    pub fn flip(x: [f32; B, K]) -> ([f32; K, B], f32) {
        let y[k, n] = x[n, k] * 2.0 + (n as f32);
        (y, sum[n](x[n, 0] * y[1, n]))
    }

}

thread_local! {
    static FAILURES: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

fn fail(msg: String) {
    eprintln!("FAILED: {msg}");
    FAILURES.with(|f| f.borrow_mut().push(msg));
}

fn check(cond: bool, msg: impl FnOnce() -> String) {
    if !cond {
        fail(msg());
    }
}

/// Deterministic data in [-1, 1), the same on every rank.
fn data(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 33) as f64 / (1u64 << 31) as f64) * 2.0 - 1.0
        })
        .collect()
}

/// Every rank's block length for the block shapes tried over `size`
/// ranks: balanced ones of several sizes, and uneven ones with an empty
/// rank (0/5/2 on three ranks).
fn shapes(size: usize) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> =
        [1usize, 2, 3, 7, 10].into_iter().map(|n| (0..size).map(|r| block(n, r, size).len()).collect()).collect();
    match size {
        2 => out.extend([vec![0, 6], vec![5, 0], vec![1, 4]]),
        3 => out.extend([vec![0, 5, 2], vec![3, 0, 4], vec![4, 2, 0], vec![1, 1, 5]]),
        _ => {}
    }
    out
}

fn rows_of(lens: &[usize], rank: usize) -> Range<usize> {
    let start: usize = lens[..rank].iter().sum();
    start..start + lens[rank]
}

fn same_everywhere(world: &World, what: &str, bits: &[i64]) {
    let all = world.all_gather_i64(bits);
    let n = bits.len().max(1);
    for (r, chunk) in all.chunks(n).enumerate() {
        check(chunk == bits, || format!("{what}: rank {r} differs from rank {}", world.rank()));
    }
}

fn close(what: &str, a: f64, b: f64, tol: f64) {
    let both_nan = a.is_nan() && b.is_nan();
    check(both_nan || (a - b).abs() <= tol * (1.0 + b.abs()), || format!("{what}: {a} vs {b}"));
}

fn bits64(v: impl IntoIterator<Item = f64>) -> Vec<i64> {
    v.into_iter().map(|x| x.to_bits() as i64).collect()
}

fn bits32(v: impl IntoIterator<Item = f32>) -> Vec<i64> {
    v.into_iter().map(|x| i64::from(x.to_bits())).collect()
}

fn second_case(world: &World, lens: &[usize]) {
    let (rank, n) = (world.rank(), lens.iter().sum::<usize>());
    let rows = rows_of(lens, rank);
    let c = 3;
    let x = Array2::from_shape_vec((c, n), data(c * n, 11 + n as u64).into_iter().map(|v| v as f32).collect()).unwrap();
    let w = Array1::from_iter(data(c, 12).into_iter().map(|v| v as f32));
    let t = Array1::from_iter(data(n, 13).into_iter().map(|v| v as f32));
    let got = second(world, x.slice(s![.., rows.clone()]), &w, t.slice(s![rows.clone()]));
    let (g1, l1, y1) = second_whole(&x, &w, &t).unwrap();
    let Ok((g, l, y)) = got else {
        return fail(format!("second {lens:?} rank {rank}: {got:?}"));
    };
    check(bits32(y.iter().copied()) == bits32(y1.slice(s![rows.clone()]).iter().copied()), || {
        format!("second {lens:?} rank {rank}: y {y} vs {}", y1.slice(s![rows.clone()]))
    });
    close(&format!("second {lens:?} loss"), f64::from(l), f64::from(l1), 1e-5);
    for (a, b) in g.iter().zip(g1.iter()) {
        close(&format!("second {lens:?} gradient"), f64::from(*a), f64::from(*b), 1e-4);
    }
    same_everywhere(world, "second loss/gradient", &bits32([l].into_iter().chain(g.iter().copied())));
}

fn ties_case(world: &World, lens: &[usize]) {
    let (rank, n) = (world.rank(), lens.iter().sum::<usize>());
    let rows = rows_of(lens, rank);
    let (k, j) = (2, 3);
    // Few distinct values: ties within and across ranks; rows equal in
    // their sums too.
    let x = Array3::from_shape_fn((k, n, j), |(a, b, c)| ((a + 2 * c + (b / 2) * 3) % 4) as f64);
    let got = ties(world, x.slice(s![.., rows.clone(), ..]));
    let want = ties_whole(&x).unwrap();
    let Ok((hi, lo, am, an, r)) = got else {
        return fail(format!("ties {lens:?} rank {rank}: {got:?}"));
    };
    check(hi == want.0 && lo == want.1 && am == want.2 && an == want.3, || {
        format!("ties {lens:?} rank {rank}: {hi} {lo} {am} {an} vs {} {} {} {}", want.0, want.1, want.2, want.3)
    });
    check(r == want.4.slice(s![rows.clone()]), || format!("ties {lens:?} rank {rank}: rows"));
}

fn exact_case(world: &World, lens: &[usize]) {
    let (rank, n) = (world.rank(), lens.iter().sum::<usize>());
    let rows = rows_of(lens, rank);
    let k = 3;
    let a = Array1::from_shape_fn(n, |i| ((i * 37 + 5) % 23) as i64 - 11);
    let b = Array2::from_shape_fn((n, k), |(i, c)| ((i * 13 + c * 7) % 19) as i32 - 9);
    let got = exact(world, a.slice(s![rows.clone()]), b.slice(s![rows.clone(), ..]));
    let want = exact_whole(&a, &b).unwrap();
    let Ok(got) = got else {
        return fail(format!("exact {lens:?} rank {rank}: {got:?}"));
    };
    let want_block = want.8.slice(s![rows.clone()]).to_owned();
    check(got.8 == want_block, || format!("exact {lens:?} rank {rank}: idx {} vs {}", got.8, want_block));
    let (g, w) = (
        (got.0, got.1, got.2, &got.3, &got.4, got.5, got.6, got.7),
        (want.0, want.1, want.2, &want.3, &want.4, want.5, want.6, want.7),
    );
    check(g == w, || format!("exact {lens:?} rank {rank}: {g:?} vs {w:?}"));
}

fn classify_case(world: &World, lens: &[usize]) {
    let (rank, n) = (world.rank(), lens.iter().sum::<usize>());
    let rows = rows_of(lens, rank);
    let (i, c) = (5, 4);
    let x = Array2::from_shape_vec((n, i), data(n * i, 21 + n as u64)).unwrap();
    let w = Array2::from_shape_vec((i, c), data(i * c, 22)).unwrap();
    let t = Array2::from_shape_fn((n, c), |(a, b)| if (a * 3 + 1) % c == b { 1.0 } else { 0.0 });
    let got = classify(world, x.slice(s![rows.clone(), ..]), &w, t.slice(s![rows.clone(), ..]));
    let (g1, l1, p1) = classify_whole(&x, &w, &t).unwrap();
    let Ok((g, l, p)) = got else {
        return fail(format!("classify {lens:?} rank {rank}: {got:?}"));
    };
    check(bits64(p.iter().copied()) == bits64(p1.slice(s![rows.clone(), ..]).iter().copied()), || {
        format!("classify {lens:?} rank {rank}: softmax rows differ")
    });
    close(&format!("classify {lens:?} loss"), l, l1, 1e-12);
    for (a, b) in g.iter().zip(g1.iter()) {
        close(&format!("classify {lens:?} gradient vs unsharded"), *a, *b, 1e-12);
    }
    // Finite differences of the unsharded loss.
    let h = 1e-6;
    for ((a, b), gv) in [(0usize, 0usize), (2, 3), (4, 1)].into_iter().map(|p| (p, g[p])) {
        let mut wp = w.clone();
        wp[(a, b)] += h;
        let mut wm = w.clone();
        wm[(a, b)] -= h;
        let fd = (classify_loss(&x, &wp, &t).unwrap() - classify_loss(&x, &wm, &t).unwrap()) / (2.0 * h);
        close(&format!("classify {lens:?} gradient vs finite differences at ({a}, {b})"), gv, fd, 1e-6);
    }
    same_everywhere(world, "classify loss/gradient", &bits64([l].into_iter().chain(g.iter().copied())));
}

fn fourth_case(world: &World, lens: &[usize]) {
    let (rank, n) = (world.rank(), lens.iter().sum::<usize>());
    let rows = rows_of(lens, rank);
    let m = 3;
    let u = Array2::from_shape_vec((n, m), data(n * m, 31 + n as u64)).unwrap();
    let before = world.bytes_sent();
    let got = fourth(world, u.slice(s![rows.clone(), ..]));
    let sent = world.bytes_sent() - before;
    let (v1, t1) = fourth_whole(&u).unwrap();
    let Ok((v, t)) = got else {
        return fail(format!("fourth {lens:?} rank {rank}: {got:?}"));
    };
    check(bits64(v.iter().copied()) == bits64(v1.slice(s![rows.clone(), ..]).iter().copied()), || {
        format!("fourth {lens:?} rank {rank}: {v} vs {}", v1.slice(s![rows.clone(), ..]))
    });
    close(&format!("fourth {lens:?} total"), t, t1, 1e-12);
    same_everywhere(world, "fourth total", &bits64([t]));
    // The halo rows: at most two rows each way, never the whole block.
    let halo = (4 * m * 8) as u64;
    check(sent <= 200 + halo * world.size() as u64, || format!("fourth {lens:?} rank {rank}: sent {sent} bytes"));
}

fn smooth_case(world: &World, lens: &[usize]) {
    let (rank, n) = (world.rank(), lens.iter().sum::<usize>());
    let rows = rows_of(lens, rank);
    let m = 2;
    let u0 =
        Array2::from_shape_vec((m, n), data(n * m, 41 + n as u64).into_iter().map(|v| v as f32).collect()).unwrap();
    for steps in [1i64, 2, 5] {
        let got = smooth(world, u0.slice(s![.., rows.clone()]), steps);
        let (l1, m1) = smooth_whole(&u0, steps).unwrap();
        let Ok((l, mx)) = got else {
            return fail(format!("smooth {lens:?} steps {steps} rank {rank}: {got:?}"));
        };
        check(bits32(l.iter().copied()) == bits32(l1.slice(s![.., rows.clone()]).iter().copied()), || {
            format!("smooth {lens:?} steps {steps} rank {rank}: {l} vs {}", l1.slice(s![.., rows.clone()]))
        });
        check(mx.to_bits() == m1.to_bits(), || format!("smooth {lens:?} max {mx} vs {m1}"));
    }
}

fn step_into_case(world: &World, lens: &[usize]) {
    let (rank, n) = (world.rank(), lens.iter().sum::<usize>());
    let rows = rows_of(lens, rank);
    let mut whole = Array1::from_vec(data(n, 51 + n as u64));
    let mut mine = whole.slice(s![rows.clone()]).to_owned();
    let mut next = Array1::<f64>::zeros(rows.len());
    for step in 0..4 {
        if let Err(e) = step1_into(world, &mine, &mut next) {
            return fail(format!("step1_into {lens:?} rank {rank} step {step}: {e:?}"));
        }
        std::mem::swap(&mut mine, &mut next);
        whole = step1_whole(&whole).unwrap();
        check(bits64(mine.iter().copied()) == bits64(whole.slice(s![rows.clone()]).iter().copied()), || {
            format!("step1_into {lens:?} rank {rank} step {step}: {mine} vs {}", whole.slice(s![rows.clone()]))
        });
    }
    // A result buffer of the wrong length on one rank: the same error
    // everywhere.
    let wrong = world.size() - 1;
    let mut out = Array1::<f64>::zeros(rows.len() + usize::from(rank == wrong));
    let got = step1_into(world, &mine, &mut out);
    check(matches!(got, Err(Error::Shape { .. })), || format!("step1_into wrong buffer {lens:?} rank {rank}: {got:?}"));
}

fn soft_b_case(world: &World, lens: &[usize]) {
    let (rank, n) = (world.rank(), lens.iter().sum::<usize>());
    let rows = rows_of(lens, rank);
    let c = 3;
    let x = Array2::from_shape_vec((c, n), data(c * n, 71 + n as u64).into_iter().map(|v| (v * 4.0) as f32).collect())
        .unwrap();
    let got = soft_b(world, x.slice(s![.., rows.clone()]));
    let (y1, m1) = soft_b_whole(&x).unwrap();
    let Ok((y, m)) = got else {
        return fail(format!("soft_b {lens:?} rank {rank}: {got:?}"));
    };
    check(bits32(m.iter().copied()) == bits32(m1.iter().copied()), || format!("soft_b {lens:?} max {m} vs {m1}"));
    for (a, b) in y.iter().zip(y1.slice(s![.., rows.clone()]).iter()) {
        close(&format!("soft_b {lens:?} rank {rank}"), f64::from(*a), f64::from(*b), 1e-6);
    }
    check(y.shape() == [c, rows.len()], || format!("soft_b {lens:?} rank {rank}: shape {:?}", y.shape()));
}

fn descend_case(world: &World, lens: &[usize]) {
    let (rank, n) = (world.rank(), lens.iter().sum::<usize>());
    let rows = rows_of(lens, rank);
    let i = 3;
    let x = Array2::from_shape_vec((n, i), data(n * i, 81 + n as u64)).unwrap();
    let y = Array1::from_vec(data(n, 82));
    let before = world.bytes_sent();
    let got = descend(world, x.slice(s![rows.clone(), ..]), y.slice(s![rows.clone()]), 6, 0.3);
    let sent = world.bytes_sent() - before;
    let w1 = descend_whole(&x, &y, 6, 0.3).unwrap();
    let Ok(w) = got else {
        return fail(format!("descend {lens:?} rank {rank}: {got:?}"));
    };
    // Independent reference: plain loops.
    let mut wr = vec![0.0f64; i];
    for _ in 1..6 {
        let mut g = vec![0.0; i];
        for r in 0..n {
            let e: f64 = (0..i).map(|k| x[(r, k)] * wr[k]).sum::<f64>() - y[r];
            for c in 0..i {
                g[c] += x[(r, c)] * e;
            }
        }
        for c in 0..i {
            wr[c] -= 0.3 * g[c] / n as f64;
        }
    }
    for c in 0..i {
        close(&format!("descend {lens:?} vs twin"), w[c], w1[c], 1e-12);
        close(&format!("descend {lens:?} vs loops"), w[c], wr[c], 1e-12);
    }
    same_everywhere(world, "descend", &bits64(w.iter().copied()));
    // Five steps of three values each, plus agreements: never the data.
    if world.size() > 1 {
        check(sent <= 5 * (3 * 8 + 8) + 200, || format!("descend {lens:?} rank {rank}: sent {sent}"));
    }
}

fn grid_grad_case(world: &World, lens: &[usize]) {
    let (rank, n) = (world.rank(), lens.iter().sum::<usize>());
    let rows = rows_of(lens, rank);
    let m = 2;
    let u = Array2::from_shape_vec((n, m), data(n * m, 91 + n as u64)).unwrap();
    let k = Array1::from_vec(vec![0.5, -1.0, 0.25]);
    let got = grid_grad(world, u.slice(s![rows.clone(), ..]), &k);
    let (gu1, gk1, l1) = grid_grad_whole(&u, &k).unwrap();
    let Ok((gu, gk, l)) = got else {
        return fail(format!("grid_grad {lens:?} rank {rank}: {got:?}"));
    };
    check(gu.shape() == [rows.len(), m], || format!("grid_grad {lens:?} rank {rank}: shape {:?}", gu.shape()));
    for (a, b) in gu.iter().zip(gu1.slice(s![rows.clone(), ..]).iter()) {
        close(&format!("grid_grad {lens:?} rank {rank} du"), *a, *b, 1e-12);
    }
    for (a, b) in gk.iter().zip(gk1.iter()) {
        close(&format!("grid_grad {lens:?} dk"), *a, *b, 1e-12);
    }
    close(&format!("grid_grad {lens:?} loss"), l, l1, 1e-12);
    same_everywhere(world, "grid_grad dk", &bits64(gk.iter().copied().chain([l])));
}

fn tv_case(world: &World, lens: &[usize]) {
    let (rank, n) = (world.rank(), lens.iter().sum::<usize>());
    let rows = rows_of(lens, rank);
    let u = Array1::from_iter(data(n, 101 + n as u64).into_iter().map(|v| v as f32));
    let got = tv(world, u.slice(s![rows.clone()]));
    let (a1, b1) = tv_whole(&u).unwrap();
    let Ok((a, b)) = got else {
        return fail(format!("tv {lens:?} rank {rank}: {got:?}"));
    };
    close(&format!("tv {lens:?} sum"), f64::from(a), f64::from(a1), 1e-5);
    check(b.to_bits() == b1.to_bits(), || format!("tv {lens:?} max {b} vs {b1}"));
}

fn helper_case(world: &World, lens: &[usize]) {
    let (rank, n) = (world.rank(), lens.iter().sum::<usize>());
    let rows = rows_of(lens, rank);
    let m = 3;
    let u = Array2::from_shape_vec((n, m), data(n * m, 111 + n as u64)).unwrap();
    let got = via_helper(world, u.slice(s![rows.clone(), ..]));
    let (d1, t1) = via_helper_whole(&u).unwrap();
    let Ok((d, t)) = got else {
        return fail(format!("via_helper {lens:?} rank {rank}: {got:?}"));
    };
    check(bits64(d.iter().copied()) == bits64(d1.slice(s![rows.clone(), ..]).iter().copied()), || {
        format!("via_helper {lens:?} rank {rank}: {d} vs {}", d1.slice(s![rows.clone(), ..]))
    });
    close(&format!("via_helper {lens:?} total"), t, t1, 1e-12);
}

fn misc_case(world: &World, lens: &[usize]) {
    let (rank, n) = (world.rank(), lens.iter().sum::<usize>());
    let rows = rows_of(lens, rank);
    let x = Array1::from_iter((0..n).map(|i| ((i * 7) % 5) as f32 - 2.0));
    let f = Array1::from_iter((0..n).map(|i| i % 3 != 1));
    let got = misc(world, x.slice(s![rows.clone()]), f.slice(s![rows.clone()]));
    let want = misc_whole(&x, &f);
    match (got, want) {
        (Ok(g), Ok(w)) => {
            let (gs, ws) = (
                format!("{:?}", (g.0, g.1, g.2, g.3, g.4, g.5, g.6, g.7)),
                format!("{:?}", (w.0, w.1, w.2, w.3, w.4, w.5, w.6, w.7)),
            );
            check(
                g.0 == w.0
                    && g.2.to_bits() == w.2.to_bits()
                    && g.3 == w.3
                    && g.4 == w.4
                    && g.5 == w.5
                    && g.6 == w.6
                    && g.7 == w.7,
                || format!("misc {lens:?} rank {rank}: {gs} vs {ws}"),
            );
            close(&format!("misc {lens:?} prod"), f64::from(g.1), f64::from(w.1), 1e-5);
            check(g.8 == w.8.slice(s![rows.clone()]), || format!("misc {lens:?} rank {rank}: big"));
        }
        (Err(a), Err(b)) => {
            check(std::mem::discriminant(&a) == std::mem::discriminant(&b), || format!("misc {lens:?}: {a:?} vs {b:?}"))
        }
        (g, w) => fail(format!("misc {lens:?} rank {rank}: {:?} vs {:?}", g.map(|_| ()), w.map(|_| ()))),
    }
}

fn scaled_case(world: &World, lens: &[usize]) {
    let (rank, n) = (world.rank(), lens.iter().sum::<usize>());
    let rows = rows_of(lens, rank);
    let m = 2;
    let u = Array2::from_shape_vec((m, n), data(n * m, 121 + n as u64)).unwrap();
    let got = scaled(world, u.slice(s![.., rows.clone()]), 0.5);
    let want = scaled_whole(&u, 0.5).unwrap();
    match got {
        Ok(v) => check(bits64(v.iter().copied()) == bits64(want.slice(s![.., rows.clone()]).iter().copied()), || {
            format!("scaled {lens:?} rank {rank}: {v} vs {}", want.slice(s![.., rows.clone()]))
        }),
        Err(e) => fail(format!("scaled {lens:?} rank {rank}: {e:?}")),
    }
    // A scalar that differs on one rank: an error on every rank.
    let a = if rank + 1 == world.size() && world.size() > 1 { 0.25 } else { 0.5 };
    let got = scaled(world, u.slice(s![.., rows.clone()]), a);
    if world.size() > 1 {
        check(matches!(got, Err(Error::Dist { .. })), || format!("scaled with differing a, rank {rank}: {got:?}"));
    }
}

fn gradient_bytes(world: &World) {
    // A gradient step sends its gradient and loss, not the data.
    let (rank, size) = (world.rank(), world.size());
    let (n, i, c) = (40usize, 5usize, 4usize);
    let rows = block(n, rank, size);
    let x = Array2::from_shape_vec((n, i), data(n * i, 131)).unwrap();
    let w = Array2::from_shape_vec((i, c), data(i * c, 132)).unwrap();
    let t = Array2::from_shape_fn((n, c), |(a, b)| if a % c == b { 1.0 } else { 0.0 });
    let before = world.bytes_sent();
    let got = classify(world, x.slice(s![rows.clone(), ..]), &w, t.slice(s![rows.clone(), ..]));
    let sent = world.bytes_sent() - before;
    check(got.is_ok(), || format!("gradient bytes: {got:?}"));
    if rank == 0 {
        println!("classify step ({n} rows, {i}x{c} weights) on {size} ranks: rank 0 sent {sent} bytes");
    }
    if size > 1 {
        let values = ((i * c + 1) * 8) as u64;
        check(sent >= values && sent <= values + 128, || format!("gradient bytes on rank {rank}: {sent}"));
    }
}

fn drift_case(world: &World, lens: &[usize]) {
    let (rank, n) = (world.rank(), lens.iter().sum::<usize>());
    let rows = rows_of(lens, rank);
    let k = 4;
    let x = Array2::from_shape_fn((n, k), |(a, b)| (((a * 5 + b * 3) % 7) as f32 - 3.0) * 0.25);
    for steps in [1i64, 2, 6] {
        let got = drift(world, x.slice(s![rows.clone(), ..]), steps);
        let (l1, t1) = drift_whole(&x, steps).unwrap();
        let Ok((l, t)) = got else {
            return fail(format!("drift {lens:?} steps {steps} rank {rank}: {got:?}"));
        };
        for (a, b) in l.iter().zip(l1.iter()) {
            close(&format!("drift {lens:?} steps {steps}"), f64::from(*a), f64::from(*b), 1e-5);
        }
        close(&format!("drift {lens:?} steps {steps} total"), f64::from(t), f64::from(t1), 1e-5);
        same_everywhere(world, "drift", &bits32(l.iter().copied().chain([t])));
    }
}

/// Errors inside a recurrence's steps and in an assert, on one rank only.
fn step_errors(world: &World) {
    let (rank, size) = (world.rank(), world.size());
    let culprit = size - 1;
    let (n, r) = (7usize, 6usize);
    let rows = block(n, rank, size);
    let table = Array1::from_vec(data(r, 141));
    let good = Array1::from_shape_fn(n, |i| (i % 3) as i64);
    // Steps 1..4 read table[idx + t - 1] up to idx + 2 < 6: in range.
    let want: Vec<f64> = {
        let mut a = [1.0f64; 2];
        for t in 1..4 {
            for (s, v) in a.iter_mut().enumerate() {
                *v = *v * 0.5 + (0..n).map(|i| table[good[i] as usize + t - 1] * (s as f64 + 1.0)).sum::<f64>();
            }
        }
        a.to_vec()
    };
    match gathered(world, &table, good.slice(s![rows.clone()]), 4) {
        Ok(v) => {
            for (a, b) in v.iter().zip(&want) {
                close("gathered", *a, *b, 1e-12);
            }
        }
        Err(e) => fail(format!("gathered rank {rank}: {e:?}")),
    }
    // An index that leaves the table at step 3 only, on the culprit.
    let mut late = good.clone();
    let last_row = block(n, culprit, size).end - 1;
    late[last_row] = 4;
    let got = gathered(world, &table, late.slice(s![rows.clone()]), 4);
    same_everywhere(world, "kind of error of a bad gather at a later step", &[kind(&got)]);
    check(matches!(got, Err(Error::Index { .. }) | Err(Error::Dist { .. })), || {
        format!("late bad gather, rank {rank}: {got:?}")
    });
    if rank == culprit {
        check(matches!(got, Err(Error::Index { .. })), || format!("late bad gather on the culprit: {got:?}"));
    }
    // A failed assert on the culprit only.
    let mut neg = good.clone();
    neg[last_row] = -1;
    let got = gathered(world, &table, neg.slice(s![rows.clone()]), 4);
    same_everywhere(world, "kind of error of an assert on one rank", &[kind(&got)]);
    check(matches!(got, Err(Error::Assert { .. }) | Err(Error::Dist { .. })), || {
        format!("assert on one rank, rank {rank}: {got:?}")
    });
    // Usable afterwards.
    match gathered(world, &table, good.slice(s![rows.clone()]), 4) {
        Ok(v) => {
            check(v.iter().zip(&want).all(|(a, b)| (a - b).abs() < 1e-9), || format!("gathered after errors: {v}"))
        }
        Err(e) => fail(format!("gathered after errors, rank {rank}: {e:?}")),
    }
}

/// `_into` of a tuple with a sharded tensor and a replicated scalar.
fn tuple_into(world: &World, lens: &[usize]) {
    let (rank, n) = (world.rank(), lens.iter().sum::<usize>());
    let rows = rows_of(lens, rank);
    let m = 3;
    let u = Array2::from_shape_vec((n, m), data(n * m, 151 + n as u64)).unwrap();
    let (v1, t1) = fourth_whole(&u).unwrap();
    let mut out = Array2::<f64>::from_elem((rows.len(), m), f64::NAN);
    match fourth_into(world, u.slice(s![rows.clone(), ..]), &mut out) {
        Ok(t) => {
            check(bits64(out.iter().copied()) == bits64(v1.slice(s![rows.clone(), ..]).iter().copied()), || {
                format!("fourth_into {lens:?} rank {rank}: {out} vs {}", v1.slice(s![rows.clone(), ..]))
            });
            close("fourth_into total", t, t1, 1e-12);
        }
        Err(e) => fail(format!("fourth_into {lens:?} rank {rank}: {e:?}")),
    }
}

fn flip_case(world: &World, lens: &[usize]) {
    let (rank, n) = (world.rank(), lens.iter().sum::<usize>());
    let rows = rows_of(lens, rank);
    let k = 3;
    let x = Array2::from_shape_fn((n, k), |(a, b)| ((a * 3 + b) % 5) as f32 * 0.5);
    match flip(world, x.slice(s![rows.clone(), ..])) {
        Ok((y, t)) => {
            let want =
                Array2::from_shape_fn((k, rows.len()), |(b, a)| x[(rows.start + a, b)] * 2.0 + (rows.start + a) as f32);
            check(y == want, || format!("flip {lens:?} rank {rank}: {y} vs {want}"));
            let tw: f32 = (0..n).map(|a| x[(a, 0)] * (x[(a, 1)] * 2.0 + a as f32)).sum();
            close(&format!("flip {lens:?} total"), f64::from(t), f64::from(tw), 1e-5);
        }
        Err(e) => fail(format!("flip {lens:?} rank {rank}: {e:?}")),
    }
}

/// Errors on one rank only: every rank gets the same kind of `Err`, and
/// the world computes correctly afterwards.
fn errors(world: &World) {
    let (rank, size) = (world.rank(), world.size());
    let culprit = size - 1;
    let (n, k, r) = (7usize, 2usize, 4usize);
    let rows = block(n, rank, size);
    let table = Array2::from_shape_vec((r, k), data(r * k, 61).into_iter().map(|v| v as f32).collect()).unwrap();
    let wts = Array2::from_shape_vec((n, k), data(n * k, 62).into_iter().map(|v| v as f32).collect()).unwrap();
    let good = Array1::from_shape_fn(n, |i| (i % r) as i64);
    // A bad gather index on the culprit's block (when it has rows).
    let mut bad = good.clone();
    if !rows.is_empty() && rank == culprit {
        bad[rows.start] = r as i64 + 3;
    }
    let has_rows = !block(n, culprit, size).is_empty();
    let got = lookup(world, &table, bad.slice(s![rows.clone()]), wts.slice(s![rows.clone(), ..]));
    same_everywhere(world, "kind of error of a bad gather on one rank", &[kind(&got)]);
    if has_rows {
        check(matches!(got, Err(Error::Index { .. }) | Err(Error::Dist { .. })), || {
            format!("bad gather on rank {culprit}: rank {rank} got {got:?}")
        });
        if size == 1 {
            check(matches!(got, Err(Error::Index { .. })), || format!("bad gather alone: {got:?}"));
        }
    }
    // Mismatched non-B extent (K) on one rank.
    let wts_wide = Array2::<f32>::zeros((n, k + 1));
    let wts_r: einlang::ndarray::ArrayView2<f32> =
        if rank == culprit { wts_wide.slice(s![rows.clone(), ..]) } else { wts.slice(s![rows.clone(), ..]) };
    let table_wide = Array2::<f32>::zeros((r, k + 1));
    let table_r = if rank == culprit { table_wide.view() } else { table.view() };
    let got = lookup(world, table_r, good.slice(s![rows.clone()]), wts_r);
    same_everywhere(world, "kind of error of a K that differs on one rank", &[kind(&got)]);
    if size > 1 {
        check(got.is_err(), || format!("mismatched K on rank {culprit}: rank {rank} got {got:?}"));
    } else {
        check(got.is_ok(), || format!("a world of one with K = {}: {got:?}", k + 1));
    }
    // Blocks of two parameters sharing B that differ on one rank.
    let a = Array1::from_vec(data(n, 63));
    let b_len = if rank == culprit { rows.len() + 1 } else { rows.len() };
    let b = Array1::from_vec(data(b_len, 64));
    let got = pair(world, a.slice(s![rows.clone()]), &b);
    same_everywhere(world, "kind of error of blocks that differ on one rank", &[kind(&got)]);
    check(matches!(got, Err(Error::Shape { .. }) | Err(Error::Extent { .. }) | Err(Error::Dist { .. })), || {
        format!("blocks of a and b differ on rank {culprit}: rank {rank} got {got:?}")
    });
    // The world still works: the good gather.
    let got = lookup(world, &table, good.slice(s![rows.clone()]), wts.slice(s![rows.clone(), ..]));
    let want: Vec<f32> = (0..n).map(|i| (0..k).map(|c| table[(good[i] as usize, c)] * wts[(i, c)]).sum()).collect();
    match got {
        Ok((v, total)) => {
            check(v.to_vec() == want[rows.clone()], || {
                format!("lookup after errors, rank {rank}: {v} vs {:?}", &want[rows.clone()])
            });
            let t: f32 = want.iter().sum();
            close("lookup total after errors", f64::from(total), f64::from(t), 1e-5);
        }
        Err(e) => fail(format!("lookup after errors, rank {rank}: {e:?}")),
    }
}

/// A number per kind of result, to compare across ranks.
fn kind<T>(r: &Result<T, Error>) -> i64 {
    match r {
        Ok(_) => 0,
        Err(Error::Shape { .. }) => 1,
        Err(Error::Extent { .. }) => 2,
        Err(Error::Index { .. }) => 3,
        Err(Error::Assert { .. }) => 4,
        Err(Error::Dist { .. }) => 5,
        Err(_) => 6,
    }
}

/// Error kinds agree: the culprit's kind reaches every rank.
fn error_kinds_agree(world: &World) {
    let (rank, size) = (world.rank(), world.size());
    let (n, k, r) = (5usize, 2usize, 3usize);
    let rows = block(n, rank, size);
    let table = Array2::<f32>::ones((r, k));
    let wts = Array2::<f32>::ones((n, k));
    let mut idx = Array1::from_shape_fn(n, |i| (i % r) as i64);
    idx[n - 1] = -1; // on the last rank with rows
    let got = lookup(world, &table, idx.slice(s![rows.clone()]), wts.slice(s![rows.clone(), ..]));
    let kind = match &got {
        Ok(_) => 0,
        Err(Error::Index { .. }) => 1,
        Err(Error::Dist { .. }) => 2,
        Err(_) => 3,
    };
    check(kind != 0, || format!("negative gather index: rank {rank} got Ok"));
    same_everywhere(world, "kind of error of a bad gather", &[kind]);
}

fn main() {
    let world = World::init().unwrap();
    let size = world.size();
    for lens in shapes(size) {
        second_case(&world, &lens);
        ties_case(&world, &lens);
        exact_case(&world, &lens);
        classify_case(&world, &lens);
        fourth_case(&world, &lens);
        smooth_case(&world, &lens);
        step_into_case(&world, &lens);
        soft_b_case(&world, &lens);
        descend_case(&world, &lens);
        drift_case(&world, &lens);
        grid_grad_case(&world, &lens);
        tv_case(&world, &lens);
        helper_case(&world, &lens);
        misc_case(&world, &lens);
        scaled_case(&world, &lens);
        tuple_into(&world, &lens);
        flip_case(&world, &lens);
    }
    misc_case(&world, &vec![0; size]);
    second_case(&world, &vec![0; size]);
    ties_case(&world, &vec![0; size]);
    gradient_bytes(&world);
    errors(&world);
    step_errors(&world);
    error_kinds_agree(&world);
    let failures = FAILURES.with(|f| f.borrow().len());
    if failures > 0 {
        eprintln!("rank {}: {failures} failures", world.rank());
        std::process::exit(1);
    }
    println!("rank {} of {size}: all held-out checks passed", world.rank());
}
