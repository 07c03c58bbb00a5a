//! Every generated host function has two forms on x86-64: the target's
//! baseline, and a twin compiled for AVX2 and FMA that runs when the
//! processor has both (the runtime's `cpu` module); those evaluating
//! polynomial math (`exp`, `tanh`, `log`) a third, for AVX-512. The twin must compute
//! the same bits: Rust never fuses a multiplication and an addition by
//! itself, and generated reductions fix their order in the source. Each
//! function here runs on the same inputs under both forms
//! (`cpu::set_baseline_only`) and the results are compared bit for bit,
//! over the operations whose vector code differs most: `exp`, `tanh`,
//! `log`, `sqrt` and division, reductions in lanes (sum, maximum,
//! minimum), rows clipped by guards, products packed for a GEMM, a
//! recurrence, integer arithmetic that wraps, and a gradient.
//!
//! On a processor without AVX2 both runs take the baseline form and the
//! test compares it with itself.

use einlang::cpu;
use einlang::einlang;
use einlang::ndarray::{Array, Array1, Array2, Array4, Dimension};

einlang! {
    use std::math::{exp, log, sqrt, tanh};

    /// An element loop whose value has a sixteen-lane form (`lane_maps`):
    /// runs of sixteen through `vmath::lanes`, the rest element by element.
    pub fn exp_map(x: [f32; N]) -> [f32; N] {
        let y[i] = exp(x[i] * 3.0);
        y
    }

    pub fn sigmoid_rows(x: [f32; N, C]) -> [f32; N, C] {
        let y[n, c] = x[n, c] * std::math::sigmoid(x[n, c]) + 1.0 / (1.0 + exp(-x[n, c]));
        y
    }

    pub fn softmax(x: [f32; N, C]) -> [f32; N, C] {
        let m[n] = max[c](x[n, c]);
        let e[n, c] = exp(x[n, c] - m[n]);
        let y[n, c] = e[n, c] / sum[k](e[n, k]);
        y
    }

    pub fn layer_norm(x: [f64; N, C], g: [f64; C]) -> [f64; N, C] {
        let mu[n] = sum[c](x[n, c]) / (C as f64);
        let var[n] = sum[c]((x[n, c] - mu[n]) * (x[n, c] - mu[n])) / (C as f64);
        let y[n, c] = g[c] * (x[n, c] - mu[n]) / sqrt(var[n] + 1e-5);
        y
    }

    pub fn pointwise(a: [f32; N], b: [f32; N]) -> [f32; N] {
        let y[i] = tanh(a[i]) * log(1.0 + b[i] * b[i]) + a[i] * b[i] - min(a[i], b[i]);
        y
    }

    pub fn conv_same(x: [f32; N, C, H, W], k: [f32; O, C, 3, 3]) -> [f32; N, O, H, W] {
        let y[n, o, i in 0..H, j in 0..W] = sum[c, r, s](
            if ih >= 0 && ih < H && iw >= 0 && iw < W { k[o, c, r, s] * x[n, c, ih, iw] } else { 0.0 }
            where ih = i + r - 1, iw = j + s - 1
        );
        y
    }

    pub fn conv_loss(x: [f32; N, C, H, W], k: [f32; O, C, KH, KW]) -> f32 {
        let y[n, o, p, q] = sum[c, r, s](x[n, c, p + r, q + s] * k[o, c, r, s]);
        sum[n, o, p, q](y[n, o, p, q] * y[n, o, p, q])
    }

    pub fn conv_grad(x: [f32; N, C, H, W], k: [f32; O, C, KH, KW]) -> ([f32; O, C, KH, KW], [f32; N, C, H, W]) {
        let l = conv_loss(x, k);
        (@l / @k, @l / @x)
    }

    pub fn scan(x: [f64; T]) -> [f64; T] {
        let h[0] = x[0];
        let h[t in 1..T] = 0.5 * h[t - 1] + exp(-x[t] * x[t]);
        h
    }

    /// `f32` extrema in sixty-four lanes (`vmath::lanes::ExtremumF32`):
    /// along rows, of a term with arithmetic, and over two loops.
    pub fn extrema(x: [f32; N, C]) -> ([f32; N], [f32; N]) {
        let hi[n] = max[c](x[n, c]);
        let lo[n] = min[c](x[n, c] * 2.0);
        (hi, lo)
    }

    pub fn whole_max(x: [f32; N, C]) -> f32 {
        max[n, c](x[n, c])
    }

    pub fn hash(a: [i32; N], b: [i32; N]) -> [i32; N] {
        let y[i] = a[i] * 16777619 + b[i] * b[i] - a[i] / (b[i] % 7 + 8);
        y
    }
}

/// Deterministic values in `[-scale, scale)` (a linear congruential
/// sequence), different for each `seed`.
fn values(n: usize, seed: u64, scale: f64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0) * scale
        })
        .collect()
}

fn f32s<D: Dimension>(shape: D, seed: u64, scale: f64) -> Array<f32, D> {
    let n = shape.size();
    Array::from_shape_vec(shape, values(n, seed, scale).into_iter().map(|v| v as f32).collect()).expect("shape")
}

fn f64s<D: Dimension>(shape: D, seed: u64, scale: f64) -> Array<f64, D> {
    let n = shape.size();
    Array::from_shape_vec(shape, values(n, seed, scale)).expect("shape")
}

/// The bits of every element, to compare without float equality (which
/// would take NaN for unequal and -0 for +0).
trait Bits {
    fn bits(&self) -> Vec<u64>;
}
impl<D: Dimension> Bits for Array<f32, D> {
    fn bits(&self) -> Vec<u64> {
        self.iter().map(|v| u64::from(v.to_bits())).collect()
    }
}
impl<D: Dimension> Bits for Array<f64, D> {
    fn bits(&self) -> Vec<u64> {
        self.iter().map(|v| v.to_bits()).collect()
    }
}
impl<D: Dimension> Bits for Array<i32, D> {
    fn bits(&self) -> Vec<u64> {
        self.iter().map(|&v| u64::from(v as u32)).collect()
    }
}
impl Bits for f32 {
    fn bits(&self) -> Vec<u64> {
        vec![u64::from(self.to_bits())]
    }
}
impl<A: Bits, B: Bits> Bits for (A, B) {
    fn bits(&self) -> Vec<u64> {
        let mut v = self.0.bits();
        v.extend(self.1.bits());
        v
    }
}

/// `f` under the baseline form, then under the AVX2 form, then under the
/// fastest form (AVX-512 for the functions that have one, where the
/// processor has it): the same bits.
fn same_bits<R: Bits>(what: &str, f: impl Fn() -> R) {
    cpu::set_baseline_only(true);
    let baseline = f().bits();
    cpu::set_baseline_only(false);
    cpu::set_avx2_only(true);
    let avx2 = f().bits();
    cpu::set_avx2_only(false);
    let fastest = f().bits();
    for (form, bits) in [("AVX2", &avx2), ("fastest", &fastest)] {
        assert_eq!(baseline.len(), bits.len(), "{what}");
        if let Some(i) = (0..baseline.len()).find(|&i| baseline[i] != bits[i]) {
            panic!("{what}: element {i} differs: {:#x} (baseline) against {:#x} ({form})", baseline[i], bits[i]);
        }
    }
}

/// One test: the switch is global to the process, so the cases run in turn.
#[test]
fn both_forms_compute_the_same_bits() {
    #[cfg(target_arch = "x86_64")]
    if std::env::var_os("EINLANG_CPU").is_none() {
        // The second run of each case does take the twin.
        let has = std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma");
        assert_eq!(cpu::wide(), has);
    }
    // Rows of lengths that are and are not multiples of the vector widths.
    for (n, c) in [(7, 1000), (33, 29), (4, 1)] {
        let x: Array2<f32> = f32s(einlang::ndarray::Ix2(n, c), 1 + c as u64, 30.0);
        same_bits("softmax", || softmax(&x).expect("softmax"));
        let xd: Array2<f64> = f64s(einlang::ndarray::Ix2(n, c), 2 + c as u64, 3.0);
        let g: Array1<f64> = f64s(einlang::ndarray::Ix1(c), 3, 1.0);
        same_bits("layer norm", || layer_norm(&xd, &g).expect("layer norm"));
    }
    for len in [1, 7, 8, 31, 4099] {
        let a: Array1<f32> = f32s(einlang::ndarray::Ix1(len), 4, 5.0);
        let b: Array1<f32> = f32s(einlang::ndarray::Ix1(len), 5, 5.0);
        same_bits("pointwise", || pointwise(&a, &b).expect("pointwise"));
        let ia = Array1::from_iter(values(len, 6, 1e9).into_iter().map(|v| v as i32));
        let ib = Array1::from_iter(values(len, 7, 1e9).into_iter().map(|v| v as i32));
        same_bits("wrapping integers", || hash(&ia, &ib).expect("hash"));
        let xs: Array1<f64> = f64s(einlang::ndarray::Ix1(len), 8, 2.0);
        same_bits("recurrence", || scan(&xs).expect("scan"));
        let e: Array1<f32> = f32s(einlang::ndarray::Ix1(len), 12, 40.0);
        same_bits("exp map", || exp_map(&e).expect("exp_map"));
    }
    for (n, c) in [(3, 15), (5, 16), (2, 49)] {
        let x: Array2<f32> = f32s(einlang::ndarray::Ix2(n, c), 13, 100.0);
        same_bits("sigmoid rows", || sigmoid_rows(&x).expect("sigmoid_rows"));
    }
    let x: Array4<f32> = f32s(einlang::ndarray::Ix4(2, 3, 13, 30), 9, 1.0);
    let k: Array4<f32> = f32s(einlang::ndarray::Ix4(5, 3, 3, 3), 10, 1.0);
    same_bits("padded convolution", || conv_same(&x, &k).expect("conv_same"));
    same_bits("convolution loss", || conv_loss(&x, &k).expect("conv_loss"));
    same_bits("convolution gradient", || conv_grad(&x, &k).expect("conv_grad"));
    // Extrema over rows of every length around the runs of sixteen and
    // sixty-four, with rows of only zeros of either sign and NaNs (which
    // zero wins shows the order of every comparison), checked against a
    // plain loop that skips NaN too.
    for c in [0, 1, 15, 16, 17, 63, 64, 65, 100, 257] {
        let n = 6;
        let mut x: Array2<f32> = f32s(einlang::ndarray::Ix2(n, c), 14 + c as u64, 50.0);
        for (r, mut row) in x.rows_mut().into_iter().enumerate() {
            for (j, v) in row.iter_mut().enumerate() {
                let k = (j * 7 + r * 3) % 5;
                if r >= 3 {
                    *v = [0.0, -0.0, -0.0, f32::NAN, 0.0][k];
                } else if r == 2 && k == 0 {
                    *v = f32::NAN;
                }
            }
        }
        same_bits("extrema", || extrema(&x).expect("extrema"));
        same_bits("maximum over two loops", || whole_max(&x).expect("whole_max"));
        let (hi, lo) = extrema(&x).expect("extrema");
        for (r, row) in x.rows().into_iter().enumerate() {
            let want_hi = row.iter().fold(f32::NEG_INFINITY, |a, &v| if v > a { v } else { a });
            let want_lo = row.iter().fold(f32::INFINITY, |a, &v| if 2.0 * v < a { 2.0 * v } else { a });
            assert_eq!(hi[r], want_hi, "maximum of row {r} of {c}");
            assert_eq!(lo[r], want_lo, "minimum of row {r} of {c}");
        }
        let want = x.iter().fold(f32::NEG_INFINITY, |a, &v| if v > a { v } else { a });
        assert_eq!(whole_max(&x).expect("whole_max"), want, "maximum of {n} x {c}");
    }
    // A view with strides of its own (a transposed input).
    let t: Array2<f32> = f32s(einlang::ndarray::Ix2(40, 9), 11, 10.0);
    same_bits("softmax of a transposed view", || softmax(t.t()).expect("softmax"));
}
