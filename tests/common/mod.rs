//! Shared helpers for the integration tests: a deterministic random source,
//! naive reference implementations written as plain loops, view builders that
//! produce non-contiguous inputs, and comparison helpers built on `approx`.
//!
//! The references are deliberately the most obvious loops (accumulating in
//! f64 where rounding matters), so a disagreement points at the generated
//! code, not at the reference.

#![allow(dead_code)]

use std::fmt::Debug;

use approx::RelativeEq;
use ndarray::{
    Array, Array1, Array2, Array3, Array4, ArrayView1, ArrayView2, ArrayView3, ArrayView4, Dimension, LinalgScalar,
};

// ---------------------------------------------------------------------------
// Threads
// ---------------------------------------------------------------------------

/// Lets loop nests of a few thousand operations split across threads, as
/// they did before the runtime's default bar rose to 2^20
/// (`einlang::cpu::set_parallel_work`): the tests that run on one to three
/// threads were sized for that bar. Any bar gives the same results; this
/// one exercises the splits.
pub fn split_small_loops() {
    einlang::cpu::set_parallel_work(1 << 15);
}

// ---------------------------------------------------------------------------
// Deterministic data
// ---------------------------------------------------------------------------

/// A small xorshift64* generator: deterministic, dependency-free test data.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        // Spread small seeds over the state space; the state must not be 0.
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03 | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `[lo, hi)`.
    pub fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }

    /// Uniform integer in `lo..=hi`.
    pub fn int(&mut self, lo: i32, hi: i32) -> i32 {
        lo + (self.next_u64() % (hi - lo + 1) as u64) as i32
    }
}

/// Values uniform in `[-1, 1)`.
pub fn rand1(n: usize, seed: u64) -> Array1<f32> {
    let mut rng = Rng::new(seed);
    Array1::from_shape_fn(n, |_| rng.range(-1.0, 1.0) as f32)
}

/// Values uniform in `[-1, 1)`.
pub fn rand2(rows: usize, cols: usize, seed: u64) -> Array2<f32> {
    let mut rng = Rng::new(seed);
    Array2::from_shape_fn((rows, cols), |_| rng.range(-1.0, 1.0) as f32)
}

/// Values uniform in `[-1, 1)`.
pub fn rand3(d0: usize, d1: usize, d2: usize, seed: u64) -> Array3<f32> {
    let mut rng = Rng::new(seed);
    Array3::from_shape_fn((d0, d1, d2), |_| rng.range(-1.0, 1.0) as f32)
}

/// Values uniform in `[-1, 1)`.
pub fn rand4(d0: usize, d1: usize, d2: usize, d3: usize, seed: u64) -> Array4<f32> {
    let mut rng = Rng::new(seed);
    Array4::from_shape_fn((d0, d1, d2, d3), |_| rng.range(-1.0, 1.0) as f32)
}

/// Values uniform in `[-1, 1)`.
pub fn rand2_f64(rows: usize, cols: usize, seed: u64) -> Array2<f64> {
    let mut rng = Rng::new(seed);
    Array2::from_shape_fn((rows, cols), |_| rng.range(-1.0, 1.0))
}

/// Values uniform in `[-1, 1)`.
pub fn rand1_f64(n: usize, seed: u64) -> Array1<f64> {
    let mut rng = Rng::new(seed);
    Array1::from_shape_fn(n, |_| rng.range(-1.0, 1.0))
}

/// Integers uniform in `-9..=9`.
pub fn rand2_i32(rows: usize, cols: usize, seed: u64) -> Array2<i32> {
    let mut rng = Rng::new(seed);
    Array2::from_shape_fn((rows, cols), |_| rng.int(-9, 9))
}

/// Integers uniform in `-50..=50`.
pub fn rand1_i32(n: usize, seed: u64) -> Array1<i32> {
    let mut rng = Rng::new(seed);
    Array1::from_shape_fn(n, |_| rng.int(-50, 50))
}

// ---------------------------------------------------------------------------
// Non-contiguous inputs
// ---------------------------------------------------------------------------

/// A standard-layout array holding the transpose of `a`. `transposed(&a).t()`
/// is then a view equal to `a` whose strides are column-major.
pub fn transposed<A: Clone>(a: &Array2<A>) -> Array2<A> {
    let t = a.t();
    Array2::from_shape_vec(t.raw_dim(), t.iter().cloned().collect()).expect("shape of a transpose")
}

/// An array twice as wide as `a` whose even columns are the columns of `a`
/// and whose odd columns hold `filler`, so that
/// `spread_cols(&a, f).slice(s![.., ..;2])` is a view equal to `a` with a
/// column stride of 2 (and the filler would show up in any result that reads
/// the wrong element).
pub fn spread_cols<A: Clone>(a: &Array2<A>, filler: A) -> Array2<A> {
    let (r, c) = a.dim();
    let mut out = Array2::from_elem((r, 2 * c), filler);
    for i in 0..r {
        for j in 0..c {
            out[[i, 2 * j]] = a[[i, j]].clone();
        }
    }
    out
}

/// Like [`spread_cols`] for rows: `spread_rows(&a, f).slice(s![..;2, ..])` equals `a`.
pub fn spread_rows<A: Clone>(a: &Array2<A>, filler: A) -> Array2<A> {
    let (r, c) = a.dim();
    let mut out = Array2::from_elem((2 * r, c), filler);
    for i in 0..r {
        for j in 0..c {
            out[[2 * i, j]] = a[[i, j]].clone();
        }
    }
    out
}

/// `a` with its axes permuted by `perm`, copied into standard layout. Viewing
/// the result with `.permuted_axes(inverse_perm3(perm))` gives back a view
/// equal to `a` whose strides are not row-major.
pub fn permuted_storage3<A: Clone>(a: &Array3<A>, perm: [usize; 3]) -> Array3<A> {
    let v = a.view().permuted_axes(perm);
    Array3::from_shape_vec(v.raw_dim(), v.iter().cloned().collect()).expect("shape of a permutation")
}

/// The inverse of an axis permutation.
pub fn inverse_perm3(perm: [usize; 3]) -> [usize; 3] {
    let mut inv = [0; 3];
    for (i, &p) in perm.iter().enumerate() {
        inv[p] = i;
    }
    inv
}

// ---------------------------------------------------------------------------
// Comparison helpers
// ---------------------------------------------------------------------------

/// Asserts equal shapes, then elementwise closeness: each element passes when
/// its absolute difference is at most `eps` or its relative difference is at
/// most `eps`.
#[track_caller]
pub fn assert_close<A, D>(actual: &Array<A, D>, expected: &Array<A, D>, eps: A)
where
    A: RelativeEq<Epsilon = A> + Copy + Debug,
    D: Dimension,
{
    assert_eq!(actual.shape(), expected.shape(), "result shape differs from the reference");
    approx::assert_relative_eq!(actual, expected, epsilon = eps, max_relative = eps);
}

/// Scalar version of [`assert_close`].
#[track_caller]
pub fn assert_close_scalar<A>(actual: A, expected: A, eps: A)
where
    A: RelativeEq<Epsilon = A> + Copy + Debug,
{
    approx::assert_relative_eq!(actual, expected, epsilon = eps, max_relative = eps);
}

/// Rounds an f64 reference to f32.
pub fn to_f32<D: Dimension>(a: &Array<f64, D>) -> Array<f32, D> {
    a.mapv(|v| v as f32)
}

// ---------------------------------------------------------------------------
// Naive references
// ---------------------------------------------------------------------------

/// `c[i, j] = sum_k a[i, k] * b[k, j]`, in the element type (exact for integers).
pub fn matmul_ref<A: LinalgScalar>(a: ArrayView2<A>, b: ArrayView2<A>) -> Array2<A> {
    let (m, k) = a.dim();
    let (k2, n) = b.dim();
    assert_eq!(k, k2, "matmul_ref: inner dimensions differ");
    let mut c = Array2::zeros((m, n));
    for i in 0..m {
        for j in 0..n {
            let mut acc = A::zero();
            for kk in 0..k {
                acc = acc + a[[i, kk]] * b[[kk, j]];
            }
            c[[i, j]] = acc;
        }
    }
    c
}

/// `c[i, j] = sum_k a[i, k] * b[k, j]` for f32 inputs, accumulated in f64.
pub fn matmul_ref_f32(a: ArrayView2<f32>, b: ArrayView2<f32>) -> Array2<f32> {
    let a64 = a.mapv(f64::from);
    let b64 = b.mapv(f64::from);
    to_f32(&matmul_ref(a64.view(), b64.view()))
}

/// Batched product with the second operand stored transposed:
/// `c[bb, i, j] = sum_k a[bb, i, k] * b[bb, j, k]`, accumulated in f64.
pub fn bmm_nt_ref(a: ArrayView3<f32>, b: ArrayView3<f32>) -> Array3<f32> {
    let (nb, m, k) = a.dim();
    let (nb2, n, k2) = b.dim();
    assert_eq!((nb, k), (nb2, k2), "bmm_nt_ref: batch or inner dimensions differ");
    let mut c = Array3::zeros((nb, m, n));
    for bb in 0..nb {
        for i in 0..m {
            for j in 0..n {
                let mut acc = 0.0f64;
                for kk in 0..k {
                    acc += f64::from(a[[bb, i, kk]]) * f64::from(b[[bb, j, kk]]);
                }
                c[[bb, i, j]] = acc as f32;
            }
        }
    }
    c
}

/// Valid (unpadded, stride 1) 2-D convolution as written in deep learning
/// (cross-correlation): `out[o, y, x] = sum_{c, r, s} img[c, y + r, x + s] *
/// k[o, c, r, s] + bias[o]`, shape `[O, H - KH + 1, W - KW + 1]`, accumulated in f64.
pub fn conv2d_ref(img: ArrayView3<f32>, k: ArrayView4<f32>, bias: ArrayView1<f32>) -> Array3<f32> {
    let (c, h, w) = img.dim();
    let (o, c2, kh, kw) = k.dim();
    assert_eq!(c, c2, "conv2d_ref: channel counts differ");
    assert_eq!(bias.len(), o, "conv2d_ref: bias length differs");
    assert!(kh <= h && kw <= w, "conv2d_ref: kernel larger than image");
    let (oh, ow) = (h - kh + 1, w - kw + 1);
    let mut out = Array3::zeros((o, oh, ow));
    for oc in 0..o {
        for y in 0..oh {
            for x in 0..ow {
                let mut acc = 0.0f64;
                for ic in 0..c {
                    for r in 0..kh {
                        for s in 0..kw {
                            acc += f64::from(img[[ic, y + r, x + s]]) * f64::from(k[[oc, ic, r, s]]);
                        }
                    }
                }
                out[[oc, y, x]] = (acc + f64::from(bias[oc])) as f32;
            }
        }
    }
    out
}

/// Valid 1-D correlation: `y[i] = sum_r x[i + r] * w[r]`, length `L - KW + 1`.
pub fn conv1d_ref(x: ArrayView1<f32>, w: ArrayView1<f32>) -> Array1<f32> {
    let n = x.len() - w.len() + 1;
    Array1::from_shape_fn(n, |i| (0..w.len()).map(|r| f64::from(x[i + r]) * f64::from(w[r])).sum::<f64>() as f32)
}

/// Row softmax in f64, shifted by the row maximum.
pub fn softmax_ref_f64(x: ArrayView2<f64>) -> Array2<f64> {
    let (n, c) = x.dim();
    let mut y = Array2::zeros((n, c));
    for i in 0..n {
        let m = (0..c).map(|j| x[[i, j]]).fold(f64::NEG_INFINITY, f64::max);
        let denom: f64 = (0..c).map(|j| (x[[i, j]] - m).exp()).sum();
        for j in 0..c {
            y[[i, j]] = (x[[i, j]] - m).exp() / denom;
        }
    }
    y
}

/// Row softmax of f32 data, computed in f64 and rounded.
pub fn softmax_ref(x: ArrayView2<f32>) -> Array2<f32> {
    to_f32(&softmax_ref_f64(x.mapv(f64::from).view()))
}

/// `u[i, j] = m[i, j]` where `i <= j`, 0 elsewhere.
pub fn upper_ref<A: LinalgScalar>(m: ArrayView2<A>) -> Array2<A> {
    Array2::from_shape_fn(m.raw_dim(), |(i, j)| if i <= j { m[[i, j]] } else { A::zero() })
}

/// Sum of the strictly positive entries of each row.
pub fn positive_row_sum_ref(x: ArrayView2<f32>) -> Array1<f32> {
    Array1::from_shape_fn(x.nrows(), |i| {
        x.row(i).iter().filter(|&&v| v > 0.0).map(|&v| f64::from(v)).sum::<f64>() as f32
    })
}

/// Largest minus smallest entry of each row.
pub fn row_range_ref(x: ArrayView2<f32>) -> Array1<f32> {
    Array1::from_shape_fn(x.nrows(), |i| {
        let row = x.row(i);
        let hi = row.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        let lo = row.iter().cloned().fold(f32::INFINITY, f32::min);
        hi - lo
    })
}

/// Index of the largest entry of each row; the first one on ties.
pub fn argmax_rows_ref(x: ArrayView2<f32>) -> Array1<i64> {
    Array1::from_shape_fn(x.nrows(), |i| {
        let mut best = 0usize;
        for j in 1..x.ncols() {
            if x[[i, j]] > x[[i, best]] {
                best = j;
            }
        }
        best as i64
    })
}

/// `relu(x @ w + b)`, accumulated in f64.
pub fn dense_relu_ref(x: ArrayView2<f32>, w: ArrayView2<f32>, b: ArrayView1<f32>) -> Array2<f32> {
    let (n, i) = x.dim();
    let (i2, o) = w.dim();
    assert_eq!(i, i2);
    Array2::from_shape_fn((n, o), |(r, c)| {
        let z = (0..i).map(|k| f64::from(x[[r, k]]) * f64::from(w[[k, c]])).sum::<f64>() + f64::from(b[c]);
        z.max(0.0) as f32
    })
}

/// 2x2 max-pool with stride 2 (floor mode: a trailing odd row/column is dropped).
pub fn maxpool2_ref(x: ArrayView2<f32>) -> Array2<f32> {
    let (h, w) = x.dim();
    Array2::from_shape_fn((h / 2, w / 2), |(i, j)| {
        let mut m = f32::NEG_INFINITY;
        for di in 0..2 {
            for dj in 0..2 {
                m = m.max(x[[2 * i + di, 2 * j + dj]]);
            }
        }
        m
    })
}

/// `o[i, j] = u[i] * v[j]`.
pub fn outer_ref(u: ArrayView1<f32>, v: ArrayView1<f32>) -> Array2<f32> {
    Array2::from_shape_fn((u.len(), v.len()), |(i, j)| u[i] * v[j])
}

/// The table of longest common subsequence lengths of every pair of
/// prefixes of `a` and `b`.
pub fn lcs_table_ref(a: &[i64], b: &[i64]) -> Array2<i64> {
    let (n, m) = (a.len(), b.len());
    let mut c = Array2::<i64>::zeros((n + 1, m + 1));
    for i in 1..=n {
        for j in 1..=m {
            c[[i, j]] = if a[i - 1] == b[j - 1] { c[[i - 1, j - 1]] + 1 } else { c[[i, j - 1]].max(c[[i - 1, j]]) };
        }
    }
    c
}

// ---------------------------------------------------------------------------
// Recurrences: programs with their source text, and the compiler's facts
// ---------------------------------------------------------------------------

/// Compiles the tokens with `einlang!` and also keeps them as text in
/// `SRC`, so that a test can ask `einlang-core` what it decided for them.
#[allow(unused_macros)]
macro_rules! einlang_with_source {
    ($($src:tt)*) => {
        einlang::einlang! { $($src)* }
        #[allow(dead_code)]
        pub const SRC: &str = stringify!($($src)*);
    };
}

/// The facts of recurrence `name` in function `func` of the program `src`.
pub fn recurrence_facts(src: &str, func: &str, name: &str) -> einlang_core::analysis::recur::RecurrenceFacts {
    let compiled = einlang_core::compile_str(src, &einlang_core::Options::default())
        .unwrap_or_else(|e| panic!("compiles: {:?}", e.iter().map(|d| d.message.clone()).collect::<Vec<_>>()));
    compiled.recurrence(func, name).cloned().unwrap_or_else(|| panic!("no recurrence `{name}` in `{func}`"))
}

/// A circular buffer of `len` steps along axis 0.
pub fn window(len: u64) -> einlang_core::analysis::recur::Storage {
    einlang_core::analysis::recur::Storage::Window { axis: 0, len, slots: len.next_power_of_two() }
}

/// The `k` largest of a vector and their positions, largest first, ties in
/// order, by sorting.
pub fn topk_ref<T: PartialOrd + Copy>(v: &[T], k: usize) -> (Vec<T>, Vec<i64>) {
    let mut idx: Vec<usize> = (0..v.len()).collect();
    idx.sort_by(|&a, &b| v[b].partial_cmp(&v[a]).unwrap().then(a.cmp(&b)));
    idx.truncate(k);
    (idx.iter().map(|&i| v[i]).collect(), idx.iter().map(|&i| i as i64).collect())
}
