//! Generated kernels against hand-written baselines, measured in the same run.
//!
//! - matmul 512^2 and 1024^2, and skinny 1 x 1024 x 1024 and 8 x 1024 x 1024
//!   (a dense layer's batch of one and of eight): einlang vs
//!   `ndarray::Array2::dot` (matrixmultiply) and vs the `gemm` crate called
//!   directly
//! - a dense layer with bias and ReLU, 256 x 1024 x 1024: einlang vs the
//!   product with its epilogue fused by hand (a block of rows per thread;
//!   each block starts as the bias, `general_mat_mul` adds the product,
//!   ReLU runs on the block while it is in cache)
//! - conv2d C=16, H=W=64, O=32, 3x3: einlang vs hand-written loops (parallel
//!   over output channels, inner loop over contiguous rows)
//! - `std::ml::einsum("bij,bjk->bik", a, b)`, 8 batches of 256^2: einlang vs
//!   `ndarray::Array2::dot` per batch
//! - row-wise softmax, 4096 x 1024, written four ways that divide by the sum
//!   (the README's, with named `m` and `e`; inline, `exp(x - max) /
//!   sum(exp(x - max))`; a mix reading a named maximum in the sum only;
//!   where-bindings) and one that multiplies by its reciprocal: einlang vs a
//!   fused hand-written loop that rounds the same way (rayon over rows; max,
//!   exp, sum in lanes, then a division per element or one reciprocal per
//!   row)
//! - the same rows, 16384 x 256, as a rank-3 tensor `[64, 256, 256]`
//!   against the same fused loop
//! - `std::ml::log_softmax` over rows (4096 x 1024, 16384 x 256) into a
//!   reused buffer, timed in alternation with the softmax of the same rows
//!   (the line onnxruntime's `LogSoftmax` is compared with);
//! - softmax over the first axis (columns), 4096 x 1024: einlang vs a hand
//!   loop (column statistics over blocks of columns in parallel, reading
//!   rows; then the output rows in parallel)
//! - elementwise `a * b + c`, 16 M `f32` as one vector and as a 4096 x 4096
//!   matrix: einlang vs a fused rayon loop; a parallel copy of one operand
//!   gives the machine's bandwidth (GB/s printed for all three);
//! - a transpose `y[j, i] = x[i, j]`, 4096 x 4096 `f32`: einlang vs a rayon
//!   loop writing sixteen output rows per task;
//! - `a * b + c` into a buffer reused from call to call (`fma_vec_into`) vs
//!   the fused loop into its own reused buffer, and both fresh;
//! - math functions over 16 Mi `f32`: GELU (tanh and erf forms), sigmoid,
//!   tanh, ln, sin: einlang vs a rayon loop calling the standard library's
//!   (libm's) function per element; and each into a reused buffer
//!   (`NAME_into`) vs a parallel copy into a reused buffer, with GELU and
//!   `std::ml::sigmoid` also applied to the whole tensor (checked bit for
//!   bit against the indexed form);
//! - `sin` over 16 Mi `f64` in `[-100, 100)`: einlang (`vmath::sin_f64`)
//!   vs the rayon loop calling `f64::sin` (what the generated code called
//!   before), timed in alternation;
//!
//! The hand-written baselines have the generated code's two forms
//! (`common::twin!`): on x86-64 they also run compiled for AVX2 and FMA
//! when the processor has both, as einlang's functions do.
//!
//! Criterion groups come first; then every pair is timed again with
//! `Instant` (median of a few runs) and a ratio line with GFLOP/s is printed,
//! so the figures are visible in plain `cargo bench` output. Each result is
//! checked against its baseline before anything is timed.
//!
//! Kept short on purpose (10 samples, short measurement times): a kernel that
//! takes longer than `SLOW` for one call is left out of criterion and only
//! timed by hand, so the whole run stays within a few minutes even when the
//! generated code is a naive loop nest.

mod common;

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, SamplingMode};
use einlang::einlang;
use einlang::ndarray::linalg::general_mat_mul;
use einlang::ndarray::parallel::prelude::*;
use einlang::ndarray::{Array1, Array2, Array3, Array4, ArrayD, Axis};
use rayon::slice::{ParallelSlice, ParallelSliceMut};

einlang! {
    /// Matrix product.
    pub fn matmul(a: [f32; M, K], b: [f32; K, N]) -> [f32; M, N] {
        let c[i, j] = sum[k](a[i, k] * b[k, j]);
        c
    }

    /// Batched matrix product written as numpy's einsum.
    pub fn dense_relu(x: [f32; B, I], w: [f32; I, O], b: [f32; O]) -> [f32; B, O] {
        let y[n, j] = if z > 0.0 { z } else { 0.0 } where z = sum[i](x[n, i] * w[i, j]) + b[j];
        y
    }

    pub fn einsum_bmm(a: [f32; B, M, K], b: [f32; B, K, N]) -> [f32; B, M, N] {
        std::ml::einsum("bij,bjk->bik", a, b)
    }

    /// Row-wise softmax, as the README writes it.
    pub fn softmax(x: [f32; N, C]) -> [f32; N, C] {
        let m[n] = max[c](x[n, c]);
        let e[n, c] = std::math::exp(x[n, c] - m[n]);
        let y[n, c] = e[n, c] / sum[k](e[n, k]);
        y
    }

    /// Row-wise softmax written inline: every maximum and the sum in one line.
    pub fn softmax_inline(x: [f32; N, C]) -> [f32; N, C] {
        let y[n, c] = std::math::exp(x[n, c] - max[j](x[n, j])) / sum[k](std::math::exp(x[n, k] - max[j](x[n, j])));
        y
    }

    /// Row-wise softmax with a named maximum read in the sum only.
    pub fn softmax_mixed(x: [f32; N, C]) -> [f32; N, C] {
        let m[n] = max[c](x[n, c]);
        let y[n, c] = std::math::exp(x[n, c] - max[j](x[n, j])) / sum[k](std::math::exp(x[n, k] - m[n]));
        y
    }

    /// Row-wise softmax with where-bindings.
    pub fn softmax_where(x: [f32; N, C]) -> [f32; N, C] {
        let y[n, c] = e / s where m = max[j](x[n, j]), e = std::math::exp(x[n, c] - m), s = sum[k](std::math::exp(x[n, k] - m));
        y
    }

    /// Row-wise softmax scaling by the reciprocal of the sum, as the fused
    /// baseline does (a different rounding from dividing).
    pub fn softmax_reciprocal(x: [f32; N, C]) -> [f32; N, C] {
        let m[n] = max[c](x[n, c]);
        let e[n, c] = std::math::exp(x[n, c] - m[n]);
        let y[n, c] = e[n, c] * (1.0 / sum[k](e[n, k]));
        y
    }

    /// Row-wise log-softmax, `std::ml::log_softmax` (onnxruntime's
    /// `LogSoftmax`).
    pub fn log_softmax_rows(x: [f32; N, C]) -> [f32; N, C] {
        std::ml::log_softmax(x)
    }

    /// Row-wise softmax of a rank-3 tensor (its two leading axes index the
    /// rows: `opt::lead`).
    pub fn softmax_rank3(x: [f32; B, N, C]) -> [f32; B, N, C] {
        let m[b, n] = max[c](x[b, n, c]);
        let e[b, n, c] = std::math::exp(x[b, n, c] - m[b, n]);
        let y[b, n, c] = e[b, n, c] / sum[k](e[b, n, k]);
        y
    }

    /// Softmax over the first axis.
    pub fn softmax_columns(x: [f32; N, C]) -> [f32; N, C] {
        let m[c] = max[k](x[k, c]);
        let e[n, c] = std::math::exp(x[n, c] - m[c]);
        let y[n, c] = e[n, c] / sum[k](e[k, c]);
        y
    }

    /// Column sums: a reduction over the outer axis of a row-major matrix.
    pub fn col_sum(x: [f32; N, C]) -> [f32; C] {
        let s[c] = sum[n](x[n, c]);
        s
    }

    /// A vector times a matrix: each output reduces down a column.
    pub fn vec_mat(v: [f32; K], a: [f32; K, M]) -> [f32; M] {
        let y[j] = sum[k](v[k] * a[k, j]);
        y
    }

    /// A sum of squares over a whole vector, as a function's result.
    pub fn sum_squares(x: [f32; N]) -> f32 {
        sum[i](x[i] * x[i])
    }

    /// Elementwise multiply-add of vectors.
    pub fn fma_vec(a: [f32; N], b: [f32; N], c: [f32; N]) -> [f32; N] {
        let y[i] = a[i] * b[i] + c[i];
        y
    }

    /// A transpose: the source read across the output's rows.
    pub fn transpose(x: [f32; M, N]) -> [f32; N, M] {
        let y[j, i] = x[i, j];
        y
    }

    /// Attention's head split: `[B, S, H, D]` as `[B, H, S, D]`.
    pub fn split_heads(x: [f32; B, S, H, D]) -> [f32; B, H, S, D] {
        let y[b, h, s, d] = x[b, s, h, d];
        y
    }

    /// Images from channels first to channels last.
    pub fn to_channels_last(x: [f32; N, C, H, W]) -> [f32; N, H, W, C] {
        let y[n, i, j, c] = x[n, c, i, j];
        y
    }

    /// Images from channels last to channels first.
    pub fn to_channels_first(x: [f32; N, H, W, C]) -> [f32; N, C, H, W] {
        let y[n, c, i, j] = x[n, i, j, c];
        y
    }

    /// Every axis of a rank-3 tensor reversed.
    pub fn reverse_axes(x: [f32; A, B, C]) -> [f32; C, B, A] {
        let y[c, b, a] = x[a, b, c];
        y
    }

    /// GELU, tanh form (`std::ml::gelu_tanh`), elementwise.
    pub fn gelu_tanh_vec(x: [f32; N]) -> [f32; N] {
        let y[i] = std::ml::gelu_tanh(x[i]);
        y
    }

    /// GELU, erf form (`std::ml::gelu`), elementwise.
    pub fn gelu_erf_vec(x: [f32; N]) -> [f32; N] {
        let y[i] = std::ml::gelu(x[i]);
        y
    }

    /// The same functions applied to the whole tensor: formulas of the
    /// standard library written out over it (`transform::formulas`).
    pub fn gelu_tanh_whole(x: [f32; N]) -> [f32; N] {
        std::ml::gelu_tanh(x)
    }

    pub fn ml_sigmoid_whole(x: [f32; N]) -> [f32; N] {
        std::ml::sigmoid(x)
    }

    /// The logistic function (`std::math::sigmoid`), elementwise.
    pub fn sigmoid_vec(x: [f32; N]) -> [f32; N] {
        let y[i] = std::math::sigmoid(x[i]);
        y
    }

    /// Hyperbolic tangent, elementwise.
    pub fn tanh_vec(x: [f32; N]) -> [f32; N] {
        let y[i] = std::math::tanh(x[i]);
        y
    }

    /// Natural logarithm, elementwise.
    pub fn ln_vec(x: [f32; N]) -> [f32; N] {
        let y[i] = std::math::ln(x[i]);
        y
    }

    /// Sine, elementwise.
    pub fn sin_vec(x: [f32; N]) -> [f32; N] {
        let y[i] = std::math::sin(x[i]);
        y
    }

    /// Sine of `f64`, elementwise.
    pub fn sin_vec64(x: [f64; N]) -> [f64; N] {
        let y[i] = std::math::sin(x[i]);
        y
    }

    /// Elementwise multiply-add of matrices.
    pub fn fma_mat(a: [f32; M, N], b: [f32; M, N], c: [f32; M, N]) -> [f32; M, N] {
        let y[i, j] = a[i, j] * b[i, j] + c[i, j];
        y
    }

    /// Valid 2-D convolution (cross-correlation) with bias.
    pub fn conv2d(img: [f32; C, H, W], k: [f32; O, C, KH, KW], b: [f32; O]) -> [f32; O, H - KH + 1, W - KW + 1] {
        let out[o, y, x] = sum[c, r, s](img[c, iy, ix] * k[o, c, r, s]) + b[o] where iy = y + r, ix = x + s;
        out
    }
}

/// One call slower than this keeps a kernel out of criterion (it still gets
/// timed by hand, with fewer runs).
const SLOW: Duration = Duration::from_secs(3);

/// Deterministic `f32` values in `[-1, 1)`.
fn data(len: usize, seed: u64) -> Vec<f32> {
    common::data(len, seed).into_iter().map(|v| v as f32).collect()
}

common::twin! {
/// The conv2d baseline: for each output channel (in parallel), accumulate
/// `k[o, c, r, s] * img[c, y + r, s..s + OW]` into output rows, so the inner
/// loop runs over contiguous memory and vectorizes.
fn conv2d_loops(img: &Array3<f32>, k: &Array4<f32>, bias: &Array1<f32>) -> Array3<f32> {
    let (c, h, w) = img.dim();
    let (o, c2, kh, kw) = k.dim();
    assert_eq!(c, c2);
    let (oh, ow) = (h - kh + 1, w - kw + 1);
    let src = img.as_slice().expect("standard layout image");
    let ker = k.as_slice().expect("standard layout kernel");
    let mut out = Array3::<f32>::zeros((o, oh, ow));
    out.axis_iter_mut(Axis(0)).into_par_iter().enumerate().for_each(|(oc, mut plane)| {
        let plane = plane.as_slice_mut().expect("standard layout output");
        plane.fill(bias[oc]);
        for ic in 0..c {
            for r in 0..kh {
                for s in 0..kw {
                    let kv = ker[((oc * c + ic) * kh + r) * kw + s];
                    for y in 0..oh {
                        let row = &src[(ic * h + y + r) * w + s..][..ow];
                        let dst = &mut plane[y * ow..][..ow];
                        for (d, &v) in dst.iter_mut().zip(row) {
                            *d += kv * v;
                        }
                    }
                }
            }
        }
    });
    out
}
}

type Kernel = Box<dyn Fn() -> ArrayD<f32>>;

/// One comparison: an einlang kernel and its baseline on the same inputs.
struct Case {
    /// Criterion group.
    group: &'static str,
    /// Criterion parameter (no spaces: it becomes a directory name).
    param: String,
    /// What the printed ratio line calls this case.
    label: String,
    /// Floating-point operations of one call (GFLOP/s printed), or when
    /// `bytes` is set, ignored.
    flops: f64,
    /// Bytes one call must move at least (GB/s printed instead).
    bytes: Option<f64>,
    baseline_name: &'static str,
    einlang: Kernel,
    baseline: Kernel,
    /// Duration of one einlang call, measured during the correctness check.
    first_einlang: Duration,
    first_baseline: Duration,
}

/// The baseline a product is compared with.
#[derive(Clone, Copy)]
enum Gemm {
    /// `ndarray`'s `dot` (matrixmultiply).
    Dot,
    /// The `gemm` crate called directly, on rayon's threads, into an
    /// uninitialized output.
    Crate,
}

fn gemm_crate(a: &Array2<f32>, b: &Array2<f32>) -> Array2<f32> {
    let (m, k, n) = (a.nrows(), a.ncols(), b.ncols());
    let mut c = Vec::<f32>::with_capacity(m * n);
    // SAFETY: both operands are standard layout; dst (m x n, row-major) is
    // written whole and not read (read_dst = false).
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            c.as_mut_ptr(),
            1,
            n as isize,
            false,
            a.as_ptr(),
            1,
            k as isize,
            b.as_ptr(),
            1,
            n as isize,
            0.0,
            1.0,
            false,
            false,
            false,
            gemm::Parallelism::Rayon(0),
        );
        c.set_len(m * n);
    }
    Array2::from_shape_vec((m, n), c).unwrap()
}

fn matmul_case(m: usize, n: usize, k: usize, baseline: Gemm) -> Case {
    let a = Array2::from_shape_vec((m, k), data(m * k, 1)).unwrap();
    let b = Array2::from_shape_vec((k, n), data(k * n, 2)).unwrap();
    let (a2, b2) = (a.clone(), b.clone());
    let (baseline_name, baseline, tag): (_, Kernel, _) = match baseline {
        Gemm::Dot => ("ndarray dot", Box::new(move || a2.dot(&b2).into_dyn()), "dot"),
        Gemm::Crate => ("gemm crate", Box::new(move || gemm_crate(&a2, &b2).into_dyn()), "gemm"),
    };
    Case {
        group: "matmul",
        param: format!("{m}x{n}x{k}-{tag}"),
        label: format!("matmul {m}x{n}x{k}"),
        flops: 2.0 * (m * n * k) as f64,
        baseline_name,
        einlang: Box::new(move || matmul(&a, &b).expect("matmul").into_dyn()),
        baseline,
        first_einlang: Duration::ZERO,
        first_baseline: Duration::ZERO,
        bytes: None,
    }
}

common::twin! {
/// `relu(x w + b)` with the epilogue fused by hand: a block of rows per
/// thread, each initialized to the bias, the product added by
/// `general_mat_mul` (matrixmultiply), ReLU applied while the block is hot.
fn dense_fused(x: &Array2<f32>, w: &Array2<f32>, b: &Array1<f32>) -> Array2<f32> {
    let (m, n) = (x.nrows(), w.ncols());
    let threads = rayon::current_num_threads().max(1);
    let block = m.div_ceil(threads).max(1);
    let mut y = Array2::<f32>::zeros((m, n));
    y.axis_chunks_iter_mut(Axis(0), block).into_par_iter().enumerate().for_each(|(i, mut out)| {
        for mut row in out.rows_mut() {
            row.assign(b);
        }
        let rows = x.slice(einlang::ndarray::s![i * block..i * block + out.nrows(), ..]);
        general_mat_mul(1.0, &rows, w, 1.0, &mut out);
        out.mapv_inplace(|v| v.max(0.0));
    });
    y
}
}

fn dense_case(m: usize, k: usize, n: usize) -> Case {
    let x = Array2::from_shape_vec((m, k), data(m * k, 21)).unwrap();
    let w = Array2::from_shape_vec((k, n), data(k * n, 22)).unwrap();
    let b = Array1::from_vec(data(n, 23));
    let (x2, w2, b2) = (x.clone(), w.clone(), b.clone());
    Case {
        group: "matmul",
        param: format!("dense-relu-{m}x{n}x{k}"),
        label: format!("dense + bias + ReLU {m}x{n}x{k}"),
        flops: 2.0 * (m * n * k) as f64,
        baseline_name: "gemm + fused epilogue",
        einlang: Box::new(move || dense_relu(&x, &w, &b).expect("dense").into_dyn()),
        baseline: Box::new(move || dense_fused(&x2, &w2, &b2).into_dyn()),
        first_einlang: Duration::ZERO,
        first_baseline: Duration::ZERO,
        bytes: None,
    }
}

fn einsum_case(batch: usize, n: usize) -> Case {
    let a = Array3::from_shape_vec((batch, n, n), data(batch * n * n, 6)).unwrap();
    let b = Array3::from_shape_vec((batch, n, n), data(batch * n * n, 7)).unwrap();
    let (a2, b2) = (a.clone(), b.clone());
    Case {
        group: "einsum",
        param: format!("b{batch}_n{n}"),
        label: format!("einsum bij,bjk->bik B={batch} {n}^2"),
        flops: 2.0 * batch as f64 * (n as f64).powi(3),
        baseline_name: "ndarray dot per batch",
        einlang: Box::new(move || einsum_bmm(&a, &b).expect("einsum").into_dyn()),
        baseline: Box::new(move || {
            let mut out = Array3::<f32>::zeros((batch, n, n));
            for (mut o, (x, y)) in out.outer_iter_mut().zip(a2.outer_iter().zip(b2.outer_iter())) {
                o.assign(&x.dot(&y));
            }
            out.into_dyn()
        }),
        first_einlang: Duration::ZERO,
        first_baseline: Duration::ZERO,
        bytes: None,
    }
}

fn conv_case(c: usize, hw: usize, o: usize, kk: usize) -> Case {
    let img = Array3::from_shape_vec((c, hw, hw), data(c * hw * hw, 3)).unwrap();
    let k = Array4::from_shape_vec((o, c, kk, kk), data(o * c * kk * kk, 4)).unwrap();
    let b = Array1::from_vec(data(o, 5));
    let (img2, k2, b2) = (img.clone(), k.clone(), b.clone());
    let out_hw = hw - kk + 1;
    Case {
        group: "conv2d",
        param: format!("c{c}_hw{hw}_o{o}_k{kk}"),
        label: format!("conv2d C={c} H=W={hw} O={o} {kk}x{kk}"),
        flops: 2.0 * (o * c * kk * kk * out_hw * out_hw) as f64,
        baseline_name: "hand-written loops",
        einlang: Box::new(move || conv2d(&img, &k, &b).expect("conv2d").into_dyn()),
        baseline: Box::new(move || conv2d_loops(&img2, &k2, &b2).into_dyn()),
        first_einlang: Duration::ZERO,
        first_baseline: Duration::ZERO,
        bytes: None,
    }
}

/// The exponential the generated code uses (vectorizable, unlike
/// `f32::exp`'s libm call): the row softmax baseline, whose loop
/// vectorizes, ran 1.8x faster with it (4.8 ms against 8.5 ms); the column
/// baseline, whose loop does not, ran slower (22 ms against 16 ms) and
/// keeps `f32::exp`.
use einlang::__private::arith::exp_f32;

common::twin! {
/// The softmax baseline: one pass per row (in parallel over rows) for the
/// maximum, one that writes `exp`, one that sums it in eight lanes, one
/// that scales; the output is not zeroed first.
fn softmax_fused(x: &Array2<f32>, divide: bool) -> Array2<f32> {
    let mut y = Array2::<f32>::uninit(x.raw_dim());
    y.axis_iter_mut(Axis(0)).into_par_iter().zip(x.axis_iter(Axis(0))).for_each(|(mut out, row)| {
        let m = row.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        let (xs, os) = (row.as_slice().expect("standard layout"), out.as_slice_mut().expect("standard layout"));
        for (o, &v) in os.iter_mut().zip(xs) {
            o.write(exp_f32(v - m));
        }
        // SAFETY: every element of the row was written just above.
        let es: &[f32] = unsafe { &*(os as *const [std::mem::MaybeUninit<f32>] as *const [f32]) };
        let mut lanes = [0.0f32; 8];
        let mut ec = es.chunks_exact(8);
        for ek in &mut ec {
            for l in 0..8 {
                lanes[l] += ek[l];
            }
        }
        lanes[0] += ec.remainder().iter().sum::<f32>();
        let total: f32 = lanes.iter().sum();
        if divide {
            // SAFETY: every element of the row was written above.
            out.iter_mut().for_each(|o| unsafe { *o.assume_init_mut() /= total });
        } else {
            let inv = 1.0 / total;
            // SAFETY: every element of the row was written above.
            out.iter_mut().for_each(|o| unsafe { *o.assume_init_mut() *= inv });
        }
    });
    // SAFETY: every row was written in full.
    unsafe { y.assume_init() }
}
}

type Softmax = fn(&Array2<f32>) -> Array2<f32>;

fn softmax_case(form: &'static str, f: Softmax, n: usize, c: usize) -> Case {
    let x = Array2::from_shape_vec((n, c), data(n * c, 6)).unwrap();
    let x2 = x.clone();
    // Each form against the loop that rounds as it does: `e / s` divides
    // every element, `e * (1 / s)` multiplies by one reciprocal per row.
    let divide = form != "reciprocal";
    Case {
        group: "softmax",
        param: format!("{form}_n{n}_c{c}"),
        label: format!("softmax ({form}) {n}x{c}"),
        // max, subtract, exp (counted as one), sum, divide.
        flops: 5.0 * (n * c) as f64,
        baseline_name: if divide { "fused loop dividing" } else { "fused loop, reciprocal" },
        einlang: Box::new(move || f(&x).into_dyn()),
        baseline: Box::new(move || softmax_fused(&x2, divide).into_dyn()),
        first_einlang: Duration::ZERO,
        first_baseline: Duration::ZERO,
        bytes: None,
    }
}

fn softmax_readme(x: &Array2<f32>) -> Array2<f32> {
    softmax(x).expect("softmax")
}

fn softmax_inline_form(x: &Array2<f32>) -> Array2<f32> {
    softmax_inline(x).expect("softmax")
}

fn softmax_mixed_form(x: &Array2<f32>) -> Array2<f32> {
    softmax_mixed(x).expect("softmax")
}

fn softmax_where_form(x: &Array2<f32>) -> Array2<f32> {
    softmax_where(x).expect("softmax")
}

fn softmax_reciprocal_form(x: &Array2<f32>) -> Array2<f32> {
    softmax_reciprocal(x).expect("softmax")
}

common::twin! {
/// The column softmax baseline: per block of 256 columns (in parallel),
/// the maximum and the sum of exponentials, each a pass over the rows of
/// the block; then every output row (in parallel).
fn softmax_columns_loops(x: &Array2<f32>) -> Array2<f32> {
    let (n, c) = x.dim();
    let src = x.as_slice().expect("standard layout");
    let starts: Vec<usize> = (0..c).step_by(256).collect();
    let stats: Vec<(Vec<f32>, Vec<f32>)> = starts
        .par_iter()
        .map(|&c0| {
            let w = 256.min(c - c0);
            let mut m = vec![f32::NEG_INFINITY; w];
            for r in 0..n {
                for (mj, v) in m.iter_mut().zip(&src[r * c + c0..][..w]) {
                    *mj = mj.max(*v);
                }
            }
            let mut s = vec![0.0f32; w];
            for r in 0..n {
                for ((sj, v), mj) in s.iter_mut().zip(&src[r * c + c0..][..w]).zip(&m) {
                    *sj += (v - mj).exp();
                }
            }
            (m, s)
        })
        .collect();
    let m: Vec<f32> = stats.iter().flat_map(|(m, _)| m.iter().copied()).collect();
    let inv: Vec<f32> = stats.iter().flat_map(|(_, s)| s.iter().map(|t| 1.0 / t)).collect();
    let mut y = Array2::<f32>::zeros((n, c));
    y.axis_iter_mut(Axis(0)).into_par_iter().zip(x.axis_iter(Axis(0))).for_each(|(mut o, r)| {
        for j in 0..c {
            o[j] = (r[j] - m[j]).exp() * inv[j];
        }
    });
    y
}
}

/// The rows as 64 blocks of a rank-3 tensor (`n` a multiple of 64).
fn softmax_rank3_form(x: &Array2<f32>) -> Array2<f32> {
    let (n, c) = x.dim();
    let x3 = x.view().into_shape_with_order((64, n / 64, c)).expect("rows in 64 blocks");
    softmax_rank3(x3).expect("softmax").into_shape_with_order((n, c)).expect("same elements")
}

fn softmax_columns_form(x: &Array2<f32>) -> Array2<f32> {
    softmax_columns(x).expect("softmax")
}

fn softmax_cases(n: usize, c: usize) -> Vec<Case> {
    vec![
        softmax_case("readme", softmax_readme, n, c),
        softmax_case("inline", softmax_inline_form, n, c),
        softmax_case("mixed", softmax_mixed_form, n, c),
        softmax_case("where", softmax_where_form, n, c),
        softmax_case("reciprocal", softmax_reciprocal_form, n, c),
        Case {
            param: format!("columns_n{n}_c{c}"),
            label: format!("softmax over columns {n}x{c}"),
            baseline_name: "hand loops",
            baseline: {
                let x = Array2::from_shape_vec((n, c), data(n * c, 6)).unwrap();
                Box::new(move || softmax_columns_loops(&x).into_dyn())
            },
            ..softmax_case("columns", softmax_columns_form, n, c)
        },
    ]
}

common::twin! {
/// The elementwise baseline: one fused pass over the operands in parallel
/// chunks, writing each element once into an uninitialized buffer.
fn fma_fused(a: &[f32], b: &[f32], c: &[f32]) -> Vec<f32> {
    let mut out: Vec<f32> = Vec::with_capacity(a.len());
    out.spare_capacity_mut()[..a.len()].par_chunks_mut(1 << 14).enumerate().for_each(|(k, chunk)| {
        let at = k << 14;
        let (a, b, c) = (&a[at..at + chunk.len()], &b[at..at + chunk.len()], &c[at..at + chunk.len()]);
        for (((o, x), y), z) in chunk.iter_mut().zip(a).zip(b).zip(c) {
            o.write(x * y + z);
        }
    });
    // SAFETY: every element of the first `a.len()` was written above.
    unsafe { out.set_len(a.len()) };
    out
}
}

common::twin! {
/// A parallel copy into an uninitialized buffer: the bandwidth reference.
fn par_copy(a: &[f32]) -> Vec<f32> {
    let mut out: Vec<f32> = Vec::with_capacity(a.len());
    out.spare_capacity_mut()[..a.len()].par_chunks_mut(1 << 14).zip(a.par_chunks(1 << 14)).for_each(|(o, x)| {
        for (o, x) in o.iter_mut().zip(x) {
            o.write(*x);
        }
    });
    // SAFETY: every element of the first `a.len()` was written above.
    unsafe { out.set_len(a.len()) };
    out
}
}

common::twin! {
/// The elementwise baseline into a reused buffer: the fused pass writing
/// the caller's elements.
fn fma_fused_into(a: &[f32], b: &[f32], c: &[f32], out: &mut [f32]) -> () {
    out.par_chunks_mut(1 << 14).enumerate().for_each(|(k, chunk)| {
        let at = k << 14;
        let (a, b, c) = (&a[at..at + chunk.len()], &b[at..at + chunk.len()], &c[at..at + chunk.len()]);
        for (((o, x), y), z) in chunk.iter_mut().zip(a).zip(b).zip(c) {
            *o = x * y + z;
        }
    });
}
}

/// `a * b + c` over `len` elements written into a buffer the caller reuses
/// (`fma_vec_into`), against the fused loop into its own reused buffer:
/// neither pays the page faults of a fresh result. Checked equal first;
/// timed (pairs of calls, alternating) unless `timed` is false. The fresh
/// forms are timed the same way, for the difference.
fn into_reused(len: usize, timed: bool) {
    let (a, b, c) = (data(len, 11), data(len, 12), data(len, 13));
    let (av, bv, cv) = (Array1::from_vec(a.clone()), Array1::from_vec(b.clone()), Array1::from_vec(c.clone()));
    let mut out = Array1::<f32>::zeros(len);
    let mut hand = vec![0.0f32; len];
    fma_vec_into(&av, &bv, &cv, &mut out).expect("fma_into");
    fma_fused_into(&a, &b, &c, &mut hand);
    assert_eq!(out.as_slice().expect("standard"), &hand[..], "fma_vec_into differs from the hand loop");
    if !timed {
        return;
    }
    let (t_into, t_hand) = common::paired(
        9,
        || fma_vec_into(&av, &bv, &cv, &mut out).expect("fma_into"),
        || fma_fused_into(&a, &b, &c, &mut hand),
    );
    let (t_fresh, t_fused) = common::paired(
        9,
        || {
            black_box(fma_vec(&av, &bv, &cv).expect("fma"));
        },
        || {
            black_box(fma_fused(&a, &b, &c));
        },
    );
    let gbs = |t: f64| 16.0 * len as f64 / t / 1e9;
    println!(
        "a*b+c {len} f32 into a reused buffer: einlang fma_vec_into {:.2} ms, hand loop into its buffer {:.2} ms, \
         ratio {:.2}x ({:.1} vs {:.1} GB/s); fresh results: einlang {:.2} ms, fused loop {:.2} ms",
        t_into * 1e3,
        t_hand * 1e3,
        t_into / t_hand,
        gbs(t_into),
        gbs(t_hand),
        t_fresh * 1e3,
        t_fused * 1e3,
    );
}

/// Row softmax (README form) into a buffer reused from call to call
/// (`softmax_into`, as onnxruntime writes into its arena), checked equal to
/// the fresh form first, then timed in alternation with the fresh form.
fn softmax_into_reused(n: usize, c: usize, timed: bool) {
    let x = Array2::from_shape_vec((n, c), data(n * c, 6)).unwrap();
    let mut out = Array2::<f32>::zeros((n, c));
    softmax_into(&x, &mut out).expect("softmax_into");
    let want = softmax(&x).expect("softmax");
    assert!(out.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits()), "softmax_into differs from softmax");
    if !timed {
        return;
    }
    let (t_into, t_fresh) = common::paired(
        15,
        || softmax_into(&x, &mut out).expect("softmax_into"),
        || drop(black_box(softmax(&x).expect("softmax"))),
    );
    println!(
        "softmax (readme) {n}x{c} into a reused buffer: einlang {:.3} ms, fresh result {:.3} ms, ratio {:.2}x",
        t_into * 1e3,
        t_fresh * 1e3,
        t_into / t_fresh
    );
}

/// `std::ml::log_softmax` over rows into a buffer reused from call to call,
/// checked against a loop in `f64` first, then timed in alternation with
/// the softmax of the same rows into a buffer of its own.
fn log_softmax_into_reused(n: usize, c: usize, timed: bool) {
    let x = Array2::from_shape_vec((n, c), data(n * c, 6)).unwrap();
    let mut out = Array2::<f32>::zeros((n, c));
    log_softmax_rows_into(&x, &mut out).expect("log_softmax_rows_into");
    for (row, got) in x.rows().into_iter().zip(out.rows()) {
        let m = row.iter().fold(f64::NEG_INFINITY, |a, &v| a.max(v as f64));
        let lse = m + row.iter().map(|&v| (v as f64 - m).exp()).sum::<f64>().ln();
        for (&v, &g) in row.iter().zip(got) {
            let want = v as f64 - lse;
            assert!((g as f64 - want).abs() <= 1e-5 * (1.0 + want.abs()), "log_softmax {g} against {want}");
        }
    }
    if !timed {
        return;
    }
    let mut other = Array2::<f32>::zeros((n, c));
    let (t_log, t_soft) = common::paired(
        15,
        || log_softmax_rows_into(&x, &mut out).expect("log_softmax_rows_into"),
        || softmax_into(&x, &mut other).expect("softmax_into"),
    );
    println!(
        "log_softmax {n}x{c} into a reused buffer: einlang {:.3} ms, softmax into a reused buffer {:.3} ms, ratio {:.2}x",
        t_log * 1e3,
        t_soft * 1e3,
        t_log / t_soft
    );
}

/// The head split (`split_heads`) into a buffer reused from call to call,
/// checked equal to the fresh form first, then timed in alternation with
/// the fresh form and with a parallel copy of as many elements into a
/// reused buffer (the bandwidth limit: a read and a write per element).
fn split_heads_into_reused([b, s, h, d]: [usize; 4], timed: bool) {
    let len = b * s * h * d;
    let x = Array4::from_shape_vec((b, s, h, d), data(len, 16)).unwrap();
    let mut out = Array4::<f32>::zeros((b, h, s, d));
    split_heads_into(&x, &mut out).expect("split_heads_into");
    let want = split_heads(&x).expect("split_heads");
    assert!(
        out.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits()),
        "split_heads_into differs from split_heads"
    );
    if !timed {
        return;
    }
    let (t_into, t_fresh) = common::paired(
        15,
        || split_heads_into(&x, &mut out).expect("split_heads_into"),
        || drop(black_box(split_heads(&x).expect("split_heads"))),
    );
    let flat = x.as_slice().unwrap();
    let mut copied = vec![0.0f32; len];
    let (_, t_copy) = common::paired(
        9,
        || split_heads_into(&x, &mut out).expect("split_heads_into"),
        || copied.par_chunks_mut(1 << 14).zip(flat.par_chunks(1 << 14)).for_each(|(o, i)| o.copy_from_slice(i)),
    );
    println!(
        "permute heads (0,2,1,3) {b}x{s}x{h}x{d} f32 into a reused buffer: einlang {:.3} ms ({:.1} GB/s), fresh result \
         {:.3} ms, parallel copy into a reused buffer {:.3} ms ({:.1} GB/s)",
        t_into * 1e3,
        8.0 * len as f64 / t_into / 1e9,
        t_fresh * 1e3,
        t_copy * 1e3,
        8.0 * len as f64 / t_copy / 1e9,
    );
}

type UnaryInto = fn(&Array1<f32>, &mut Array1<f32>);

/// The math functions of `math_cases` written into a buffer reused from
/// call to call (`NAME_into`, as onnxruntime writes into its arena), each
/// checked equal to its fresh form first, then timed in alternation with a
/// parallel copy into a reused buffer (the bandwidth both need: a read and
/// a write per element).
fn math_into(len: usize, timed: bool) {
    let cases: [(&str, Unary, UnaryInto, f32, f32); 8] = [
        ("gelu_tanh", |x| gelu_tanh_vec(x).expect("gelu"), |x, o| gelu_tanh_vec_into(x, o).expect("gelu"), 6.0, 0.0),
        // Checked against the indexed form, which they must equal bit for bit.
        (
            "gelu_tanh whole",
            |x| gelu_tanh_vec(x).expect("gelu"),
            |x, o| gelu_tanh_whole_into(x, o).expect("gelu"),
            6.0,
            0.0,
        ),
        (
            "ml_sigmoid whole",
            |x| ml_sigmoid_whole(x).expect("sigmoid"),
            |x, o| ml_sigmoid_whole_into(x, o).expect("sigmoid"),
            6.0,
            0.0,
        ),
        ("gelu_erf", |x| gelu_erf_vec(x).expect("gelu"), |x, o| gelu_erf_vec_into(x, o).expect("gelu"), 6.0, 0.0),
        ("sigmoid", |x| sigmoid_vec(x).expect("sigmoid"), |x, o| sigmoid_vec_into(x, o).expect("sigmoid"), 6.0, 0.0),
        ("tanh", |x| tanh_vec(x).expect("tanh"), |x, o| tanh_vec_into(x, o).expect("tanh"), 6.0, 0.0),
        ("ln", |x| ln_vec(x).expect("ln"), |x, o| ln_vec_into(x, o).expect("ln"), 1.0, 1.0),
        ("sin", |x| sin_vec(x).expect("sin"), |x, o| sin_vec_into(x, o).expect("sin"), 100.0, 0.0),
    ];
    let mut out = Array1::<f32>::zeros(len);
    let mut copied = vec![0.0f32; len];
    for (name, fresh, into, scale, shift) in cases {
        let x: Vec<f32> = data(len, 31).into_iter().map(|v| v * scale + shift).collect();
        let xa = Array1::from_vec(x.clone());
        into(&xa, &mut out);
        let want = fresh(&xa);
        assert!(out.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits()), "{name}_into differs from {name}");
        if !timed {
            continue;
        }
        let (t_into, t_copy) = common::paired(
            9,
            || into(&xa, &mut out),
            || {
                copied.par_chunks_mut(1 << 14).zip(x.par_chunks(1 << 14)).for_each(|(o, i)| o.copy_from_slice(i));
            },
        );
        let gbs = |t: f64| 8.0 * len as f64 / t / 1e9;
        println!(
            "{name} {len} f32 into a reused buffer: einlang {:.3} ms ({:.1} GB/s), parallel copy into a reused buffer \
             {:.3} ms ({:.1} GB/s), ratio {:.2}x",
            t_into * 1e3,
            gbs(t_into),
            t_copy * 1e3,
            gbs(t_copy),
            t_into / t_copy,
        );
    }
}

/// The math-function baseline: a rayon loop over chunks calling `f` (the
/// standard library's function, a libm call per element) into an
/// uninitialized buffer.
fn map_libm(x: &[f32], f: fn(f32) -> f32) -> Vec<f32> {
    let mut out: Vec<f32> = Vec::with_capacity(x.len());
    out.spare_capacity_mut()[..x.len()].par_chunks_mut(1 << 14).zip(x.par_chunks(1 << 14)).for_each(|(o, x)| {
        for (o, x) in o.iter_mut().zip(x) {
            o.write(f(*x));
        }
    });
    // SAFETY: every element of the first `x.len()` was written above.
    unsafe { out.set_len(x.len()) };
    out
}

type Unary = fn(&Array1<f32>) -> Array1<f32>;

/// An elementwise math function over `len` values (the bench's data in
/// `[-1, 1)`, times `scale`, plus `shift`) against the libm loop.
fn unary_case(name: &'static str, f: Unary, libm: fn(f32) -> f32, len: usize, scale: f32, shift: f32) -> Case {
    let x: Vec<f32> = data(len, 31).into_iter().map(|v| v * scale + shift).collect();
    let xa = Array1::from_vec(x.clone());
    Case {
        group: "elementwise",
        param: format!("{name}_{len}"),
        label: format!("{name} {len} f32"),
        flops: 0.0,
        bytes: Some(8.0 * len as f64),
        baseline_name: "libm rayon loop",
        einlang: Box::new(move || f(&xa).into_dyn()),
        baseline: Box::new(move || Array1::from_vec(map_libm(&x, libm)).into_dyn()),
        first_einlang: Duration::ZERO,
        first_baseline: Duration::ZERO,
    }
}

fn gelu_tanh_libm(x: f32) -> f32 {
    0.5 * x * (1.0 + (0.797_884_6 * (x + 0.044715 * x * x * x)).tanh())
}

fn gelu_erf_libm(x: f32) -> f32 {
    0.5 * x * (1.0 + einlang::__private::arith::erf_f32(x * std::f32::consts::FRAC_1_SQRT_2))
}

fn sigmoid_libm(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

/// `sin` over `len` `f64` values in `[-100, 100)`: einlang against the
/// rayon loop calling `f64::sin` (libm, what generated code called before
/// `vmath::sin_f64`), each writing a fresh result; checked within 1 ulp,
/// then timed in alternation.
fn sin64(len: usize, timed: bool) {
    let x: Vec<f64> = common::data(len, 37).into_iter().map(|v| v * 100.0).collect();
    let xa = Array1::from_vec(x.clone());
    let libm = || {
        let mut out: Vec<f64> = Vec::with_capacity(x.len());
        out.spare_capacity_mut()[..x.len()].par_chunks_mut(1 << 14).zip(x.par_chunks(1 << 14)).for_each(|(o, x)| {
            for (o, x) in o.iter_mut().zip(x) {
                o.write(x.sin());
            }
        });
        // SAFETY: every element of the first `x.len()` was written above.
        unsafe { out.set_len(x.len()) };
        out
    };
    let (got, want) = (sin_vec64(&xa).expect("sin"), libm());
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() <= 2.3e-16 * w.abs().max(1e-300), "sin f64: {g} against libm's {w}");
    }
    if !timed {
        return;
    }
    let (t_ein, t_libm) =
        common::paired(9, || drop(black_box(sin_vec64(&xa).expect("sin"))), || drop(black_box(libm())));
    let gbs = |t: f64| 16.0 * len as f64 / t / 1e9;
    println!(
        "sin {len} f64: einlang {:.3} ms ({:.1} GB/s), libm rayon loop {:.3} ms ({:.1} GB/s), ratio {:.2}x",
        t_ein * 1e3,
        gbs(t_ein),
        t_libm * 1e3,
        gbs(t_libm),
        t_ein / t_libm
    );
}

/// GELU (both forms), sigmoid, tanh, ln and sin over `len` values; GELU
/// and sigmoid over `[-6, 6)` (both tails), ln over `(0, 2)`, sin over
/// `[-100, 100)`.
fn math_cases(len: usize) -> Vec<Case> {
    vec![
        unary_case("gelu_tanh", |x| gelu_tanh_vec(x).expect("gelu"), gelu_tanh_libm, len, 6.0, 0.0),
        unary_case("gelu_erf", |x| gelu_erf_vec(x).expect("gelu"), gelu_erf_libm, len, 6.0, 0.0),
        unary_case("sigmoid", |x| sigmoid_vec(x).expect("sigmoid"), sigmoid_libm, len, 6.0, 0.0),
        unary_case("tanh", |x| tanh_vec(x).expect("tanh"), f32::tanh, len, 6.0, 0.0),
        unary_case("ln", |x| ln_vec(x).expect("ln"), f32::ln, len, 1.0, 1.0),
        unary_case("sin", |x| sin_vec(x).expect("sin"), f32::sin, len, 100.0, 0.0),
    ]
}

/// `a * b + c` over `len` elements (as a matrix of `rows` rows when set),
/// against the fused loop.
fn fma_case(len: usize, rows: Option<usize>) -> Case {
    let (a, b, c) = (data(len, 11), data(len, 12), data(len, 13));
    let shape = match rows {
        Some(r) => format!("{r}x{}", len / r),
        None => len.to_string(),
    };
    let (a2, b2, c2) = (a.clone(), b.clone(), c.clone());
    let einlang: Kernel = match rows {
        None => {
            let (a, b, c) = (Array1::from_vec(a.clone()), Array1::from_vec(b.clone()), Array1::from_vec(c.clone()));
            Box::new(move || fma_vec(&a, &b, &c).expect("fma").into_dyn())
        }
        Some(r) => {
            let m = |v: &Vec<f32>| Array2::from_shape_vec((r, len / r), v.clone()).unwrap();
            let (a, b, c) = (m(&a), m(&b), m(&c));
            Box::new(move || fma_mat(&a, &b, &c).expect("fma").into_dyn())
        }
    };
    let shape_of = rows.map(|r| vec![r, len / r]).unwrap_or_else(|| vec![len]);
    let fused: Kernel = Box::new(move || ArrayD::from_shape_vec(shape_of.clone(), fma_fused(&a2, &b2, &c2)).unwrap());
    let bytes = 4.0 * 4.0 * len as f64;
    Case {
        group: "elementwise",
        param: format!("fma_{shape}"),
        label: format!("a*b+c {shape} f32"),
        flops: 2.0 * len as f64,
        bytes: Some(bytes),
        baseline_name: "fused rayon loop",
        einlang,
        baseline: fused,
        first_einlang: Duration::ZERO,
        first_baseline: Duration::ZERO,
    }
}

common::twin! {
/// `y[j] = sum[k](w(k) * a[k, j])` by hand, for column sums (`w = 1`) and a
/// vector times a matrix: the rows split into one block per task, each
/// block's partial sums accumulated along its rows (contiguous), the
/// partial vectors added at the end.
fn reduce_rows(a: &[f32], m: usize, v: Option<&[f32]>) -> Vec<f32> {
    let rows = a.len() / m;
    let per = rows.div_ceil(4 * rayon::current_num_threads()).max(1);
    let parts: Vec<Vec<f32>> = a
        .par_chunks(per * m)
        .enumerate()
        .map(|(b, block)| {
            let mut acc = vec![0.0f32; m];
            for (r, row) in block.chunks_exact(m).enumerate() {
                let w = v.map_or(1.0, |v| v[b * per + r]);
                for (o, x) in acc.iter_mut().zip(row) {
                    *o += w * x;
                }
            }
            acc
        })
        .collect();
    let mut out = vec![0.0f32; m];
    for p in parts {
        for (o, x) in out.iter_mut().zip(p) {
            *o += x;
        }
    }
    out
}
}

common::twin! {
/// A sum of squares by hand: parallel chunks of 64 Ki elements, sixteen
/// accumulators each (two vector registers), the chunks' sums added.
fn sum_squares_fused(x: &[f32]) -> f32 {
    x.par_chunks(1 << 16)
        .map(|c| {
            let mut acc = [0.0f32; 16];
            let mut runs = c.chunks_exact(16);
            for run in &mut runs {
                for (a, v) in acc.iter_mut().zip(run) {
                    *a += v * v;
                }
            }
            acc.iter().sum::<f32>() + runs.remainder().iter().map(|v| v * v).sum::<f32>()
        })
        .sum()
}
}

/// Reductions a naive loop nest gets wrong: down the columns of a matrix
/// (column sums, a vector times a matrix) and over a whole vector.
fn reduction_cases(n: usize, c: usize, len: usize) -> Vec<Case> {
    let x = Array2::from_shape_vec((n, c), data(n * c, 21)).unwrap();
    let v = Array1::from_vec(data(n, 22));
    let flat = Array1::from_vec(data(len, 23));
    let case = |param: String, label: String, bytes: f64, einlang: Kernel, baseline: Kernel| Case {
        group: "reductions",
        param,
        label,
        flops: 0.0,
        bytes: Some(bytes),
        baseline_name: "fused rayon loop",
        einlang,
        baseline,
        first_einlang: Duration::ZERO,
        first_baseline: Duration::ZERO,
    };
    let bytes = 4.0 * (n * c) as f64;
    let (x1, x2, x3, x4, v1, v2) = (x.clone(), x.clone(), x.clone(), x, v.clone(), v);
    let (f1, f2) = (flat.clone(), flat);
    vec![
        case(
            format!("col_sum_{n}x{c}"),
            format!("column sums {n}x{c} f32"),
            bytes,
            Box::new(move || col_sum(&x1).expect("col_sum").into_dyn()),
            Box::new(move || ArrayD::from_shape_vec(vec![c], reduce_rows(x2.as_slice().unwrap(), c, None)).unwrap()),
        ),
        case(
            format!("vec_mat_{n}x{c}"),
            format!("vector times matrix {n}x{c} f32"),
            bytes,
            Box::new(move || vec_mat(&v1, &x3).expect("vec_mat").into_dyn()),
            Box::new(move || {
                let y = reduce_rows(x4.as_slice().unwrap(), c, Some(v2.as_slice().unwrap()));
                ArrayD::from_shape_vec(vec![c], y).unwrap()
            }),
        ),
        case(
            format!("sum_squares_{len}"),
            format!("sum of squares {len} f32"),
            4.0 * len as f64,
            Box::new(move || einlang::ndarray::arr0(sum_squares(&f1).expect("sum_squares")).into_dyn()),
            Box::new(move || einlang::ndarray::arr0(sum_squares_fused(f2.as_slice().unwrap())).into_dyn()),
        ),
    ]
}

common::twin! {
/// The transpose written by hand: sixteen output rows per task (one cache
/// line of each source row), into an uninitialized buffer.
fn transpose_blocked(x: &[f32], m: usize, n: usize) -> Vec<f32> {
    let mut out: Vec<f32> = Vec::with_capacity(m * n);
    out.spare_capacity_mut()[..m * n].par_chunks_mut(16 * m).enumerate().for_each(|(k, rows)| {
        let j0 = 16 * k;
        let count = rows.len() / m;
        for i in 0..m {
            let src = &x[i * n + j0..][..count];
            for (b, v) in src.iter().enumerate() {
                rows[b * m + i].write(*v);
            }
        }
    });
    // SAFETY: every element of the first `m * n` was written above.
    unsafe { out.set_len(m * n) };
    out
}
}

/// A transpose of an `m x n` matrix against the blocked hand loop.
fn transpose_case(m: usize, n: usize) -> Case {
    let x = data(m * n, 14);
    let xm = Array2::from_shape_vec((m, n), x.clone()).unwrap();
    let einlang: Kernel = Box::new(move || transpose(&xm).expect("transpose").into_dyn());
    let baseline: Kernel = Box::new(move || ArrayD::from_shape_vec(vec![n, m], transpose_blocked(&x, m, n)).unwrap());
    Case {
        group: "elementwise",
        param: format!("transpose_{m}x{n}"),
        label: format!("transpose {m}x{n} f32"),
        flops: 0.0,
        bytes: Some(8.0 * (m * n) as f64),
        baseline_name: "blocked rayon loop",
        einlang,
        baseline,
        first_einlang: Duration::ZERO,
        first_baseline: Duration::ZERO,
    }
}

/// A permutation of a row-major tensor of `shape` (output axis `k` is
/// input axis `perm[k]`) written by hand: the output's last-axis rows in
/// parallel, each read at the input's stride of that axis.
fn permute_loop(x: &[f32], shape: &[usize], perm: &[usize]) -> Vec<f32> {
    let rank = shape.len();
    let mut strides = vec![1usize; rank];
    for a in (0..rank.saturating_sub(1)).rev() {
        strides[a] = strides[a + 1] * shape[a + 1];
    }
    let out_shape: Vec<usize> = perm.iter().map(|&a| shape[a]).collect();
    let row = out_shape[rank - 1];
    let step = strides[perm[rank - 1]];
    let mut out = vec![0.0f32; x.len()];
    out.par_chunks_mut(row.max(1)).enumerate().for_each(|(r, dst)| {
        // The input offset of the row's first element, from its output index.
        let (mut rest, mut base) = (r, 0);
        for k in (0..rank - 1).rev() {
            base += (rest % out_shape[k]) * strides[perm[k]];
            rest /= out_shape[k];
        }
        for (e, d) in dst.iter_mut().enumerate() {
            *d = x[base + e * step];
        }
    });
    out
}

type Permutation = fn(einlang::ndarray::ArrayViewD<f32>) -> ArrayD<f32>;

/// An axis permutation of `shape` (`perm` as in `permute_loop`) against the
/// hand loop.
fn permute_case(name: &str, shape: &[usize], perm: &'static [usize], f: Permutation) -> Case {
    let len: usize = shape.iter().product();
    let x = data(len, 15);
    let xa = ArrayD::from_shape_vec(shape.to_vec(), x.clone()).unwrap();
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let out_shape: Vec<usize> = perm.iter().map(|&a| shape[a]).collect();
    let shape = shape.to_vec();
    let einlang: Kernel = Box::new(move || f(xa.view()));
    let baseline: Kernel =
        Box::new(move || ArrayD::from_shape_vec(out_shape.clone(), permute_loop(&x, &shape, perm)).unwrap());
    Case {
        group: "elementwise",
        param: format!("permute_{name}_{}", dims.join("x")),
        label: format!("permute {name} {} f32", dims.join("x")),
        flops: 0.0,
        bytes: Some(8.0 * len as f64),
        baseline_name: "rayon loop over output rows",
        einlang,
        baseline,
        first_einlang: Duration::ZERO,
        first_baseline: Duration::ZERO,
    }
}

/// Attention's head split of `heads` (`[batch, sequence, heads, features]`),
/// and images `[n, a, b, c]` from channels first to last and back, and a
/// reversal of three axes.
fn permute_cases(heads: [usize; 4], [n, a, b, c]: [usize; 4]) -> Vec<Case> {
    fn dim4(x: einlang::ndarray::ArrayViewD<f32>) -> einlang::ndarray::ArrayView4<f32> {
        x.into_dimensionality().unwrap()
    }
    vec![
        permute_case("heads (0,2,1,3)", &heads, &[0, 2, 1, 3], |x| split_heads(&dim4(x)).expect("heads").into_dyn()),
        permute_case("nchw->nhwc", &[n, a, b, c], &[0, 2, 3, 1], |x| {
            to_channels_last(&dim4(x)).expect("nhwc").into_dyn()
        }),
        permute_case("nhwc->nchw", &[n, b, c, a], &[0, 3, 1, 2], |x| {
            to_channels_first(&dim4(x)).expect("nchw").into_dyn()
        }),
        permute_case("reverse (2,1,0)", &[n * a, b, c], &[2, 1, 0], |x| {
            reverse_axes(&x.into_dimensionality::<einlang::ndarray::Ix3>().unwrap()).expect("reverse").into_dyn()
        }),
    ]
}

fn time_once(f: &Kernel) -> (Duration, ArrayD<f32>) {
    let start = Instant::now();
    let out = black_box(f());
    (start.elapsed(), out)
}

/// Runs both kernels once, checks that they agree, and records the times.
fn check(case: &mut Case) {
    // One untimed call each first, so allocation and thread-pool start-up stay
    // out of the estimates.
    black_box((case.einlang)());
    black_box((case.baseline)());
    let (te, got) = time_once(&case.einlang);
    let (tb, want) = time_once(&case.baseline);
    case.first_einlang = te;
    case.first_baseline = tb;
    assert_eq!(got.shape(), want.shape(), "{}: einlang result shape differs from the baseline", case.label);
    let scale = want.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    let worst = got.iter().zip(want.iter()).fold(0.0f32, |m, (g, w)| m.max((g - w).abs()));
    assert!(
        worst.is_finite() && worst <= 1e-4 * (1.0 + scale),
        "{}: einlang differs from {} by up to {worst} (values up to {scale})",
        case.label,
        case.baseline_name
    );
}

/// Median of `runs` timed calls.
fn median(f: &Kernel, runs: usize) -> Duration {
    let mut times: Vec<Duration> = (0..runs).map(|_| time_once(f).0).collect();
    times.sort();
    times[runs / 2]
}

/// How many runs fit a ~2 s budget per kernel given one call's duration: at
/// least 3, at most 11, odd.
fn runs_for(one: Duration) -> usize {
    let fit = (2.0 / one.as_secs_f64().max(1e-6)) as usize;
    (fit.clamp(3, 11)) | 1
}

fn fmt_ms(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1e3;
    if ms >= 100.0 {
        format!("{ms:.0} ms")
    } else if ms >= 10.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{ms:.3} ms")
    }
}

fn gflops(flops: f64, d: Duration) -> f64 {
    flops / d.as_secs_f64() / 1e9
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let flag = |f: &str| args.iter().any(|a| a == f);
    if flag("--list") {
        Criterion::default().configure_from_args().final_summary();
        return;
    }
    // Without `--bench` (cargo test --benches, cargo bench -- --test) criterion
    // runs every benchmark once as a test; use small sizes and skip the timing.
    let test_mode = flag("--test") || !flag("--bench");

    let mut cases = if test_mode {
        let mut v = vec![
            matmul_case(64, 64, 64, Gemm::Dot),
            matmul_case(3, 96, 80, Gemm::Crate),
            dense_case(20, 12, 40),
            conv_case(3, 16, 4, 3),
            einsum_case(2, 32),
            fma_case(1000, None),
        ];
        v.push(fma_case(1000, Some(8)));
        v.push(transpose_case(37, 21));
        v.extend(permute_cases([2, 7, 3, 5], [2, 3, 7, 5]));
        v.extend(math_cases(1001));
        v.extend(softmax_cases(8, 16));
        v.extend(reduction_cases(40, 24, 1000));
        v
    } else {
        let mut v = vec![
            matmul_case(512, 512, 512, Gemm::Dot),
            matmul_case(1024, 1024, 1024, Gemm::Dot),
            matmul_case(1024, 1024, 1024, Gemm::Crate),
            // A batch of one and of eight through a dense layer.
            matmul_case(1, 1024, 1024, Gemm::Crate),
            matmul_case(8, 1024, 1024, Gemm::Crate),
            matmul_case(8, 1024, 1024, Gemm::Dot),
            dense_case(256, 1024, 1024),
            conv_case(16, 64, 32, 3),
            einsum_case(8, 256),
            fma_case(1 << 24, None),
            fma_case(1 << 24, Some(4096)),
            transpose_case(4096, 4096),
        ];
        v.extend(permute_cases([8, 512, 16, 64], [16, 64, 56, 56]));
        v.extend(math_cases(1 << 24));
        v.extend(softmax_cases(4096, 1024));
        // Shorter rows, more of them (onnxruntime's comparison has both).
        v.push(softmax_case("readme", softmax_readme, 16384, 256));
        v.push(softmax_case("rank3", softmax_rank3_form, 16384, 256));
        v.extend(reduction_cases(8192, 1024, 1 << 24));
        v
    };
    let only: Option<&str> = args.iter().skip(1).find(|a| !a.starts_with("--")).map(|s| s.as_str());
    cases.retain(|c| only.is_none_or(|o| c.group.contains(o) || c.param.contains(o)));
    for case in &mut cases {
        check(case);
    }

    let mut criterion = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .configure_from_args();
    for group_name in ["matmul", "conv2d", "einsum", "elementwise", "softmax", "reductions"] {
        let mut group = criterion.benchmark_group(group_name);
        group
            .sample_size(10)
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(2))
            .sampling_mode(SamplingMode::Flat);
        for case in cases.iter().filter(|c| c.group == group_name) {
            if case.first_einlang > SLOW && !test_mode {
                println!(
                    "{}: one einlang call takes {}, left out of criterion (timed by hand below)",
                    case.label,
                    fmt_ms(case.first_einlang)
                );
            } else {
                group.bench_function(BenchmarkId::new("einlang", &case.param), |b| {
                    b.iter(|| black_box((case.einlang)()))
                });
            }
            let baseline_id = case.baseline_name.replace(' ', "_");
            group.bench_function(BenchmarkId::new(baseline_id, &case.param), |b| {
                b.iter(|| black_box((case.baseline)()))
            });
        }
        group.finish();
    }
    criterion.final_summary();

    if test_mode {
        into_reused(1000, false);
        math_into(1001, false);
        sin64(1001, false);
        softmax_into_reused(8, 16, false);
        log_softmax_into_reused(9, 37, false);
        split_heads_into_reused([2, 7, 3, 5], false);
        return;
    }

    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    println!();
    println!("einlang vs baselines, median of several runs ({threads} hardware threads; ratio = einlang time / baseline time)");
    for case in &cases {
        let te = median(&case.einlang, runs_for(case.first_einlang));
        let tb = median(&case.baseline, runs_for(case.first_baseline));
        let (unit, rate_e, rate_b) = match case.bytes {
            Some(bytes) => ("GB/s", bytes / te.as_secs_f64() / 1e9, bytes / tb.as_secs_f64() / 1e9),
            None => ("GFLOP/s", gflops(case.flops, te), gflops(case.flops, tb)),
        };
        println!(
            "{}: einlang {}, {} {}, ratio {:.2}x  (einlang {rate_e:.1} {unit}, {} {rate_b:.1} {unit})",
            case.label,
            fmt_ms(te),
            case.baseline_name,
            fmt_ms(tb),
            te.as_secs_f64() / tb.as_secs_f64(),
            case.baseline_name,
        );
    }
    if cases.iter().any(|c| c.group == "softmax") {
        softmax_into_reused(4096, 1024, true);
        softmax_into_reused(16384, 256, true);
        log_softmax_into_reused(4096, 1024, true);
        log_softmax_into_reused(16384, 256, true);
    }
    if cases.iter().any(|c| c.param.starts_with("permute")) {
        split_heads_into_reused([8, 512, 16, 64], true);
    }
    if cases.iter().any(|c| c.group == "elementwise") {
        into_reused(1 << 24, true);
        math_into(1 << 24, true);
        sin64(1 << 24, true);
        // The machine's bandwidth: a parallel copy reads and writes each
        // element once.
        let len = 1usize << 24;
        let a = data(len, 11);
        let copy: Kernel = Box::new(move || ArrayD::from_shape_vec(vec![len], par_copy(&a)).unwrap());
        black_box(copy());
        let t = median(&copy, 7);
        println!(
            "parallel copy {len} f32 (bandwidth reference): {}, {:.1} GB/s",
            fmt_ms(t),
            8.0 * len as f64 / t.as_secs_f64() / 1e9
        );
    }
}
