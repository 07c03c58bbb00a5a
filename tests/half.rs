//! Half precision (`f16`, `bf16`; LANGUAGE.md §2) against `f32` references.
//!
//! The meaning under test: a half-precision value is stored in 16 bits, an
//! expression over such values computes in `f32` and rounds once where its
//! value is stored (a definition's element, a `let`, a result), and a
//! reduction accumulates in `f32`. Every reference here is a plain loop in
//! `f32` (or `f64`) over the same rounded inputs, rounding at the same
//! stores. Where the compiler computes exactly what the reference does
//! (one `f32` expression, rounded once) the results are compared for
//! equality; where the order of an `f32` sum or a math function's last bit
//! may differ, within `FACTOR` units of the format's precision (`f16`:
//! eps = 2^-10, `bf16`: eps = 2^-7) of the value, plus the `f32` rounding
//! of a sum of `K` terms (K * 2^-24 of the sum of the terms' magnitudes).

use einlang::half::{bf16, f16};
use einlang::ndarray::{Array1, Array2};

const F16_EPS: f32 = 1.0 / 1024.0;
const BF16_EPS: f32 = 1.0 / 128.0;
/// Units of the format's precision a result may differ by: one rounding
/// of the result (half a unit) either side of a last-bit difference in f32.
const FACTOR: f32 = 2.0;

/// Deterministic values in [-1, 1).
fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

fn h1(n: usize, seed: u64) -> Array1<f16> {
    Array1::from(values(n, seed).into_iter().map(f16::from_f32).collect::<Vec<_>>())
}

fn h2(r: usize, c: usize, seed: u64) -> Array2<f16> {
    Array2::from_shape_vec((r, c), values(r * c, seed).into_iter().map(f16::from_f32).collect()).unwrap()
}

fn b2(r: usize, c: usize, seed: u64) -> Array2<bf16> {
    Array2::from_shape_vec((r, c), values(r * c, seed).into_iter().map(bf16::from_f32).collect()).unwrap()
}

fn close(what: &str, got: f32, want: f32, tol: f32) {
    assert!((got - want).abs() <= tol, "{what}: got {got}, want {want} (tolerance {tol})");
}

mod elementwise {
    einlang::einlang! {
        use std::math::{abs, exp, sqrt, tanh};
        // Literals adapt to the half type: `2` and `0.5` are f16 here.
        pub fn affine(x: [f16; N]) -> [f16; N] {
            let y[i] = x[i] * 2 + 0.5;
            y
        }
        pub fn affine_bf(x: [bf16; N]) -> [bf16; N] {
            let y[i] = x[i] * 0.5 - 1;
            y
        }
        // One expression: x * x * x - x computed in f32, rounded once.
        pub fn cubic(x: [f16; N]) -> [f16; N] {
            let y[i] = x[i] * x[i] * x[i] - x[i];
            y
        }
        pub fn axpy(alpha: f16, x: [f16; N], y: [f16; N]) -> [f16; N] {
            let z[i] = alpha * x[i] + y[i];
            z
        }
        pub fn math(x: [f16; N]) -> ([f16; N], [f16; N], [f16; N]) {
            let e[i] = exp(x[i]);
            let t[i] = tanh(x[i]);
            let s[i] = sqrt(abs(x[i]));
            (e, t, s)
        }
        pub fn relu(x: [f16; N]) -> ([f16; N], [f16; N]) {
            let a[i] = if x[i] > 0 { x[i] } else { 0 };
            let b[i] = max(x[i], 0.0);
            (a, b)
        }
        pub fn upper(m: [f16; N, N]) -> [f16; N, N] {
            let u[i, j] = m[i, j] where i <= j;
            u
        }
        pub fn stats(x: [f16; N]) -> (f16, f16, f16, i64) {
            let s = sum[i](x[i]);
            let hi = max[i](x[i]);
            let lo = min[i](x[i]);
            (s, hi, lo, argmax[i](x[i]))
        }
        pub fn first(x: [f16; N]) -> f16 {
            let y = x[0] * 3;
            y
        }
    }
}

#[test]
fn literals_adapt_and_one_expression_rounds_once() {
    let x = h1(257, 1);
    let y = elementwise::affine(&x).unwrap();
    for (a, b) in x.iter().zip(&y) {
        assert_eq!(*b, f16::from_f32(a.to_f32() * 2.0 + 0.5), "x = {a}");
    }
    let xb = Array1::from(values(100, 2).into_iter().map(bf16::from_f32).collect::<Vec<_>>());
    let yb = elementwise::affine_bf(&xb).unwrap();
    for (a, b) in xb.iter().zip(&yb) {
        assert_eq!(*b, bf16::from_f32(a.to_f32() * 0.5 - 1.0), "x = {a}");
    }
    let c = elementwise::cubic(&x).unwrap();
    for (a, b) in x.iter().zip(&c) {
        let v = a.to_f32();
        assert_eq!(*b, f16::from_f32(v * v * v - v), "x = {a}");
    }
    let y2 = h1(257, 3);
    let alpha = f16::from_f32(0.3);
    let z = elementwise::axpy(alpha, &x, &y2).unwrap();
    for i in 0..257 {
        assert_eq!(z[i], f16::from_f32(alpha.to_f32() * x[i].to_f32() + y2[i].to_f32()));
    }
    assert_eq!(elementwise::first(&x).unwrap(), f16::from_f32(x[0].to_f32() * 3.0));
}

#[test]
fn math_functions_go_through_f32() {
    let x = h1(300, 4).mapv(|v| f16::from_f32(v.to_f32() * 4.0));
    let (e, t, s) = elementwise::math(&x).unwrap();
    for i in 0..x.len() {
        let v = x[i].to_f32();
        for (what, got, want) in [("exp", e[i], v.exp()), ("tanh", t[i], v.tanh()), ("sqrt", s[i], v.abs().sqrt())] {
            close(&format!("{what}({v})"), got.to_f32(), want, FACTOR * F16_EPS * want.abs());
        }
    }
}

#[test]
fn comparisons_max_and_guards() {
    let x = h1(64, 5);
    let (a, b) = elementwise::relu(&x).unwrap();
    for i in 0..64 {
        let want = if x[i].to_f32() > 0.0 { x[i] } else { f16::ZERO };
        assert_eq!(a[i], want);
        assert_eq!(b[i], want);
    }
    let m = h2(7, 7, 6);
    let u = elementwise::upper(&m).unwrap();
    for i in 0..7 {
        for j in 0..7 {
            assert_eq!(u[[i, j]], if i <= j { m[[i, j]] } else { f16::ZERO });
        }
    }
    let (s, hi, lo, at) = elementwise::stats(&x).unwrap();
    let f: Vec<f32> = x.iter().map(|v| v.to_f32()).collect();
    let sum: f32 = f.iter().sum();
    let mag: f32 = f.iter().map(|v| v.abs()).sum();
    close("sum", s.to_f32(), sum, FACTOR * F16_EPS * sum.abs() + 64.0 * mag / (1 << 24) as f32);
    let want_hi = f.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
    assert_eq!(hi.to_f32(), want_hi);
    assert_eq!(lo.to_f32(), f.iter().cloned().fold(f32::INFINITY, f32::min));
    assert_eq!(f[at as usize], want_hi);
}

mod reductions {
    einlang::einlang! {
        pub fn total(x: [f16; N]) -> f16 {
            sum[i](x[i])
        }
        pub fn total_bf(x: [bf16; N]) -> bf16 {
            sum[i](x[i])
        }
        pub fn row_sums(x: [f16; N, M]) -> [f16; N] {
            let s[i] = sum[j](x[i, j]);
            s
        }
        pub fn running(x: [f16; N]) -> [f16; N] {
            let c[i in 0..N] = sum[k in 0..i + 1](x[k]);
            c
        }
        pub fn mean(x: [f16; N]) -> f16 {
            sum[i](x[i]) / (len(x) as f16)
        }
    }
}

#[test]
fn reductions_accumulate_in_f32() {
    // In f16, 2048 + 1 rounds back to 2048: an f16 accumulator stops there.
    let ones = Array1::from_elem(4096, f16::ONE);
    assert_eq!(reductions::total(&ones).unwrap(), f16::from_f32(4096.0));
    assert_eq!(reductions::mean(&ones).unwrap(), f16::ONE);
    // bf16 has 8 bits of precision: an accumulator in bf16 stops at 256.
    let ones_bf = Array1::from_elem(4096, bf16::ONE);
    assert_eq!(reductions::total_bf(&ones_bf).unwrap(), bf16::from_f32(4096.0));
    // A prefix sum: each point's sum in f32, not a running value in f16.
    let c = reductions::running(&ones).unwrap();
    for (i, v) in c.iter().enumerate() {
        assert_eq!(*v, f16::from_f32((i + 1) as f32), "prefix {i}");
    }
    let rows = Array2::from_elem((3, 4096), f16::ONE);
    assert!(reductions::row_sums(&rows).unwrap().iter().all(|v| *v == f16::from_f32(4096.0)));
}

mod casts {
    einlang::einlang! {
        pub fn to_ints(x: [f16; N]) -> ([i32; N], [i64; N], [u8; N], [bool; N]) {
            let a[i] = x[i] as i32;
            let b[i] = x[i] as i64;
            let c[i] = x[i] as u8;
            let d[i] = x[i] as bool;
            (a, b, c, d)
        }
        pub fn from_ints(n: [i32; N]) -> ([f16; N], [bf16; N]) {
            let a[i] = n[i] as f16;
            let b[i] = n[i] as bf16;
            (a, b)
        }
        pub fn floats(x: [f32; N], y: [f64; N]) -> ([f16; N], [bf16; N], [f32; N], [f64; N], [bf16; N]) {
            let a[i] = x[i] as f16;
            let b[i] = y[i] as bf16;
            let c[i] = a[i] as f32;
            let d[i] = b[i] as f64;
            let e[i] = a[i] as bf16;
            (a, b, c, d, e)
        }
        // Mixed precision: f32 master weights, f16 compute, f32 result.
        pub fn mixed(w: [f32; N], x: [f16; N]) -> f32 {
            let wh[i] = w[i] as f16;
            sum[i](wh[i] * x[i]) as f32
        }
    }
}

#[test]
fn casts_both_ways() {
    let x = Array1::from(
        [-3.75f32, -0.5, 0.0, 0.99, 1.0, 2.5, 255.0, 300.0, 65504.0]
            .iter()
            .map(|v| f16::from_f32(*v))
            .collect::<Vec<_>>(),
    );
    let (a, b, c, d) = casts::to_ints(&x).unwrap();
    for i in 0..x.len() {
        let v = x[i].to_f32();
        assert_eq!(a[i], v as i32);
        assert_eq!(b[i], v as i64);
        assert_eq!(c[i], v as u8);
        assert_eq!(d[i], v != 0.0);
    }
    let n = Array1::from(vec![-70000, -2049, -1, 0, 1, 2049, 65504, 70000]);
    let (a, b) = casts::from_ints(&n).unwrap();
    for i in 0..n.len() {
        assert_eq!(a[i], f16::from_f64(n[i] as f64), "{} as f16", n[i]);
        assert_eq!(b[i], bf16::from_f64(n[i] as f64), "{} as bf16", n[i]);
    }
    let xf = Array1::from(values(50, 7).into_iter().map(|v| v * 100.0).collect::<Vec<_>>());
    let yf = xf.mapv(|v| v as f64 * 1.001);
    let (a, b, c, d, e) = casts::floats(&xf, &yf).unwrap();
    for i in 0..50 {
        assert_eq!(a[i], f16::from_f32(xf[i]));
        assert_eq!(b[i], bf16::from_f64(yf[i]));
        assert_eq!(c[i], a[i].to_f32());
        assert_eq!(d[i], b[i].to_f64());
        assert_eq!(e[i], bf16::from_f32(a[i].to_f32()));
    }
    let w = Array1::from(values(40, 8));
    let xh = h1(40, 9);
    let got = casts::mixed(&w, &xh).unwrap();
    let want: f32 = (0..40).map(|i| f16::from_f32(w[i]).to_f32() * xh[i].to_f32()).sum();
    let mag: f32 = (0..40).map(|i| (w[i] * xh[i].to_f32()).abs()).sum();
    close("mixed", got, want, FACTOR * F16_EPS * want.abs() + 40.0 * mag / (1 << 24) as f32);
}

mod products {
    einlang::einlang! {
        use std::math::exp;
        pub fn mm(a: [f16; M, K], b: [f16; K, N]) -> [f16; M, N] {
            let c[i, j] = sum[k](a[i, k] * b[k, j]);
            c
        }
        pub fn mm_t(a: [f16; M, K], b: [f16; N, K]) -> [f16; M, N] {
            let c[i, j] = sum[k](a[i, k] * b[j, k]);
            c
        }
        pub fn mm_bf(a: [bf16; M, K], b: [bf16; K, N]) -> [bf16; M, N] {
            let c[i, j] = sum[k](a[i, k] * b[k, j]);
            c
        }
        pub fn dense(x: [f16; B, I], w: [f16; I, O], b: [f16; O]) -> [f16; B, O] {
            let y[n, o] = max(sum[i](x[n, i] * w[i, o]) + b[o], 0);
            y
        }
        pub fn bmm(a: [f16; P, M, K], b: [f16; P, K, N]) -> [f16; P, M, N] {
            let c[p, i, j] = sum[k](a[p, i, k] * b[p, k, j]);
            c
        }
        pub fn softmax(x: [f16; N, C]) -> [f16; N, C] {
            let m[i] = max[j](x[i, j]);
            let e[i, j] = exp(x[i, j] - m[i]);
            let s[i] = sum[j](e[i, j]);
            let y[i, j] = e[i, j] / s[i];
            y
        }
    }
}

/// `a · b` in f32 from the rounded inputs, and the sum of the terms'
/// magnitudes (for the f32 rounding bound).
fn reference<T: Copy>(a: &Array2<T>, b: &Array2<T>, f: impl Fn(T) -> f32) -> (Array2<f32>, Array2<f32>) {
    let (m, k, n) = (a.nrows(), a.ncols(), b.ncols());
    let mut c = Array2::zeros((m, n));
    let mut mag = Array2::zeros((m, n));
    for i in 0..m {
        for j in 0..n {
            for p in 0..k {
                let t = f(a[[i, p]]) * f(b[[p, j]]);
                c[[i, j]] += t;
                mag[[i, j]] += t.abs();
            }
        }
    }
    (c, mag)
}

fn check_product(
    what: &str,
    got: impl Fn(usize, usize) -> f32,
    want: &Array2<f32>,
    mag: &Array2<f32>,
    k: usize,
    eps: f32,
) {
    for ((i, j), w) in want.indexed_iter() {
        let tol = FACTOR * eps * w.abs() + k as f32 * mag[[i, j]] / (1 << 24) as f32;
        close(&format!("{what}[{i}, {j}]"), got(i, j), *w, tol);
    }
}

#[test]
fn f16_products_accumulate_in_f32() {
    // Short sums (the gemm crate's f16 kernels) and long ones (widened).
    for (m, k, n) in [(5, 7, 3), (33, 64, 40), (20, 1000, 17), (64, 600, 64)] {
        let (a, b) = (h2(m, k, 10), h2(k, n, 11));
        let c = products::mm(&a, &b).unwrap();
        let (want, mag) = reference(&a, &b, |v: f16| v.to_f32());
        check_product(&format!("mm {m}x{k}x{n}"), |i, j| c[[i, j]].to_f32(), &want, &mag, k, F16_EPS);
        let bt = b.t().as_standard_layout().into_owned();
        let ct = products::mm_t(&a, &bt).unwrap();
        check_product("mm_t", |i, j| ct[[i, j]].to_f32(), &want, &mag, k, F16_EPS);
    }
    // A sum of 4096 ones through the product.
    let a = Array2::from_elem((2, 4096), f16::ONE);
    let b = Array2::from_elem((4096, 3), f16::ONE);
    assert!(products::mm(&a, &b).unwrap().iter().all(|v| *v == f16::from_f32(4096.0)));
}

/// Operands that widen to more `f32` than any address space holds (views
/// of one element broadcast along a sum of 2^48 terms) are
/// `Err(Error::Alloc)`, not the end of the process, and the next call
/// works. (Not in `checked` mode, whose products are loops that allocate
/// nothing and would run 2^48 steps.)
#[cfg(not(feature = "checked"))]
#[test]
fn products_too_large_to_widen_are_errors() {
    let k = 1usize << 48;
    let one = Array2::from_elem((1, 1), f16::ONE);
    let (a, b) = (one.broadcast((2, k)).unwrap(), one.broadcast((k, 3)).unwrap());
    match products::mm(a, b) {
        Err(einlang::Error::Alloc { function, bytes, .. }) => {
            assert_eq!(function, "mm");
            assert!(bytes >= 2 * k * 2, "{bytes}");
        }
        other => panic!("{other:?}"),
    }
    let one = Array2::from_elem((1, 1), bf16::ONE);
    let (a, b) = (one.broadcast((2, k)).unwrap(), one.broadcast((k, 3)).unwrap());
    assert!(matches!(products::mm_bf(a, b), Err(einlang::Error::Alloc { .. })));
    let a = Array2::from_elem((2, 600), bf16::ONE);
    let b = Array2::from_elem((600, 3), bf16::ONE);
    assert!(products::mm_bf(&a, &b).unwrap().iter().all(|v| *v == bf16::from_f32(600.0)));
}

#[test]
fn bf16_products_widen() {
    for (m, k, n) in [(4, 9, 6), (40, 700, 33)] {
        let (a, b) = (b2(m, k, 12), b2(k, n, 13));
        let c = products::mm_bf(&a, &b).unwrap();
        let (want, mag) = reference(&a, &b, |v: bf16| v.to_f32());
        check_product(&format!("mm_bf {m}x{k}x{n}"), |i, j| c[[i, j]].to_f32(), &want, &mag, k, BF16_EPS);
    }
    let a = Array2::from_elem((2, 4096), bf16::ONE);
    let b = Array2::from_elem((4096, 2), bf16::ONE);
    assert!(products::mm_bf(&a, &b).unwrap().iter().all(|v| *v == bf16::from_f32(4096.0)));
}

#[test]
fn dense_layer_and_batched_products() {
    let (x, w) = (h2(9, 30, 14), h2(30, 12, 15));
    let bias = h1(12, 16);
    let y = products::dense(&x, &w, &bias).unwrap();
    let (xw, mag) = reference(&x, &w, |v: f16| v.to_f32());
    for ((n, o), v) in xw.indexed_iter() {
        // The product may be stored (rounded) before the bias is added.
        let want = (v + bias[o].to_f32()).max(0.0);
        let tol = FACTOR * F16_EPS * (v.abs() + want.abs()) + 30.0 * mag[[n, o]] / (1 << 24) as f32;
        close(&format!("dense[{n}, {o}]"), y[[n, o]].to_f32(), want, tol);
    }
    let a =
        einlang::ndarray::Array3::from_shape_vec((3, 8, 20), values(480, 17).into_iter().map(f16::from_f32).collect())
            .unwrap();
    let b =
        einlang::ndarray::Array3::from_shape_vec((3, 20, 5), values(300, 18).into_iter().map(f16::from_f32).collect())
            .unwrap();
    let c = products::bmm(&a, &b).unwrap();
    for p in 0..3 {
        let (ap, bp) = (
            a.index_axis(einlang::ndarray::Axis(0), p).to_owned(),
            b.index_axis(einlang::ndarray::Axis(0), p).to_owned(),
        );
        let (want, mag) = reference(&ap, &bp, |v: f16| v.to_f32());
        check_product("bmm", |i, j| c[[p, i, j]].to_f32(), &want, &mag, 20, F16_EPS);
    }
}

#[test]
fn softmax_rounds_at_each_definition() {
    let x = h2(6, 50, 19).mapv(|v| f16::from_f32(v.to_f32() * 8.0));
    let y = products::softmax(&x).unwrap();
    for i in 0..6 {
        // The reference rounds where the program stores: e, s and y.
        let row: Vec<f32> = (0..50).map(|j| x[[i, j]].to_f32()).collect();
        let m = row.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        let e: Vec<f32> = row.iter().map(|v| f16::from_f32((v - m).exp()).to_f32()).collect();
        let s = f16::from_f32(e.iter().sum::<f32>()).to_f32();
        for j in 0..50 {
            let want = f16::from_f32(e[j] / s).to_f32();
            // exp's last f32 bit may round e differently: a unit of e, and
            // of s, on top of y's own rounding; below 2^-14 f16's spacing
            // is 2^-24 (subnormals).
            let tol = 2.0 * FACTOR * F16_EPS * want + 2f32.powi(-24);
            close(&format!("softmax[{i}, {j}]"), y[[i, j]].to_f32(), want, tol);
        }
        let total: f32 = (0..50).map(|j| y[[i, j]].to_f32()).sum();
        close("softmax row sum", total, 1.0, 50.0 * F16_EPS);
    }
}

mod recurrences {
    einlang::einlang! {
        pub fn decay(a: [f16; T]) -> [f16; T] {
            let h[0] = a[0];
            let h[t in 1..T] = h[t - 1] * 0.9 + a[t];
            h
        }
    }
}

#[test]
fn recurrences_round_each_step() {
    let a = h1(100, 20);
    let h = recurrences::decay(&a).unwrap();
    let mut prev = a[0];
    assert_eq!(h[0], prev);
    for t in 1..100 {
        prev = f16::from_f32(prev.to_f32() * 0.9 + a[t].to_f32());
        assert_eq!(h[t], prev, "step {t}");
    }
}

mod gradients {
    einlang::einlang! {
        use std::math::{exp, tanh};
        pub fn loss(w: [f16; I, O], x: [f16; B, I], t: [f16; B, O]) -> f16 {
            let y[n, o] = tanh(sum[i](x[n, i] * w[i, o]));
            sum[n, o]((y[n, o] - t[n, o]) ** 2) / 2
        }
        pub fn grad(w: [f16; I, O], x: [f16; B, I], t: [f16; B, O]) -> [f16; I, O] {
            let l = loss(w, x, t);
            @l / @w
        }
        pub fn loss_bf(w: [bf16; N], x: [bf16; N]) -> bf16 {
            sum[i](exp(w[i] * x[i]))
        }
        pub fn grad_bf(w: [bf16; N], x: [bf16; N]) -> [bf16; N] {
            let l = loss_bf(w, x);
            @l / @w
        }
    }
}

/// The same loss in f64 on the rounded inputs, for finite differences.
fn loss64(w: &Array2<f64>, x: &Array2<f64>, t: &Array2<f64>) -> f64 {
    let y = x.dot(w).mapv(f64::tanh);
    (&y - t).mapv(|v| v * v).sum() / 2.0
}

#[test]
fn gradients_in_half_precision_match_finite_differences() {
    let (w, x, t) = (h2(6, 4, 21), h2(5, 6, 22), h2(5, 4, 23));
    let g = gradients::grad(&w, &x, &t).unwrap();
    let (w64, x64, t64) = (w.mapv(|v| v.to_f64()), x.mapv(|v| v.to_f64()), t.mapv(|v| v.to_f64()));
    let h = 1e-4;
    for i in 0..6 {
        for o in 0..4 {
            let (mut up, mut down) = (w64.clone(), w64.clone());
            up[[i, o]] += h;
            down[[i, o]] -= h;
            let fd = (loss64(&up, &x64, &t64) - loss64(&down, &x64, &t64)) / (2.0 * h);
            // Stored intermediates (y, the adjoints) each round once: a
            // few units of f16 precision of the terms of the gradient's sum.
            let scale = (0..5).map(|n| x64[[n, i]].abs()).sum::<f64>() * 2.0;
            close(&format!("dL/dw[{i}, {o}]"), g[[i, o]].to_f32(), fd as f32, 4.0 * FACTOR * F16_EPS * scale as f32);
        }
    }
    let wb = Array1::from(values(10, 24).into_iter().map(bf16::from_f32).collect::<Vec<_>>());
    let xb = Array1::from(values(10, 25).into_iter().map(bf16::from_f32).collect::<Vec<_>>());
    let gb = gradients::grad_bf(&wb, &xb).unwrap();
    for i in 0..10 {
        // d/dw sum exp(w x) = x exp(w x), by hand on the rounded inputs.
        let want = xb[i].to_f32() * (wb[i].to_f32() * xb[i].to_f32()).exp();
        close(&format!("bf16 grad[{i}]"), gb[i].to_f32(), want, 2.0 * FACTOR * BF16_EPS * want.abs() + 1e-6);
    }
}

mod library {
    einlang::einlang! {
        use std::math::abs;
        use std::ml::{log_softmax, mse_loss, relu, sigmoid, softmax};
        pub fn sm(x: [f16; N, C]) -> [f16; N, C] { softmax(x) }
        pub fn lsm(x: [bf16; N, C]) -> [bf16; N, C] { log_softmax(x) }
        pub fn act(x: [f16; N]) -> ([f16; N], [f16; N]) { (relu(x), sigmoid(x)) }
        // Whole-tensor arithmetic with an adapted literal.
        pub fn whole(x: [f16; N], y: [f16; N]) -> [f16; N] { x * y + 1 }
        // A `let` with a declared half type takes an integer literal.
        pub fn scalars(a: f16, b: bf16) -> (f16, bf16) {
            let c: f16 = 1;
            (a * a + c, b / 4)
        }
        pub fn lit() -> [f16; 3] { [1, 2.5, 4.0] }
        pub fn powers(x: [f16; N]) -> [f16; N] {
            let y[i] = x[i] ** 2 + abs(x[i]) ** 0.5;
            y
        }
        pub fn loss(p: [f16; N, F], t: [f16; N, F]) -> [f16; N] { mse_loss(p, t) }
        pub fn show(x: f16) -> str { "x = {x}" }
    }
}

#[test]
fn library_functions_and_whole_tensor_forms() {
    let x = h2(4, 30, 30).mapv(|v| f16::from_f32(v.to_f32() * 5.0));
    let y = library::sm(&x).unwrap();
    for i in 0..4 {
        let m = (0..30).map(|j| x[[i, j]].to_f32()).fold(f32::NEG_INFINITY, f32::max);
        let e: Vec<f32> = (0..30).map(|j| f16::from_f32((x[[i, j]].to_f32() - m).exp()).to_f32()).collect();
        let s = f16::from_f32(e.iter().sum::<f32>()).to_f32();
        for j in 0..30 {
            let want = f16::from_f32(e[j] / s).to_f32();
            close("std::ml::softmax", y[[i, j]].to_f32(), want, 2.0 * FACTOR * F16_EPS * want + 2f32.powi(-24));
        }
    }
    let xb = b2(3, 20, 31);
    let lp = library::lsm(&xb).unwrap();
    for i in 0..3 {
        let row: Vec<f32> = (0..20).map(|j| xb[[i, j]].to_f32()).collect();
        let m = row.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        let lse = bf16::from_f32(m + row.iter().map(|v| (v - m).exp()).sum::<f32>().ln()).to_f32();
        for j in 0..20 {
            let want = row[j] - lse;
            close("log_softmax", lp[[i, j]].to_f32(), want, 2.0 * FACTOR * BF16_EPS * (want.abs() + lse.abs()));
        }
    }
    let v = h1(50, 32);
    let (r, s) = library::act(&v).unwrap();
    for i in 0..50 {
        let f = v[i].to_f32();
        assert_eq!(r[i], f16::from_f32(f.max(0.0)));
        let want = 1.0 / (1.0 + (-f).exp());
        close("sigmoid", s[i].to_f32(), want, FACTOR * F16_EPS * want);
    }
    let w = h1(50, 33);
    let z = library::whole(&v, &w).unwrap();
    for i in 0..50 {
        assert_eq!(z[i], f16::from_f32(v[i].to_f32() * w[i].to_f32() + 1.0));
    }
    let (a, b) = library::scalars(f16::from_f32(1.5), bf16::from_f32(3.0)).unwrap();
    assert_eq!((a, b), (f16::from_f32(3.25), bf16::from_f32(0.75)));
    assert_eq!(library::lit().unwrap().to_vec(), [1.0f32, 2.5, 4.0].map(f16::from_f32).to_vec());
    let p = library::powers(&v).unwrap();
    for i in 0..50 {
        let f = v[i].to_f32();
        let want = f * f + f.abs().sqrt();
        close("powers", p[i].to_f32(), want, FACTOR * F16_EPS * want);
    }
    let (pp, tt) = (h2(3, 8, 34), h2(3, 8, 35));
    let l = library::loss(&pp, &tt).unwrap();
    for i in 0..3 {
        // `d = p - t` is stored (rounded) first.
        let want =
            (0..8).map(|j| f16::from_f32(pp[[i, j]].to_f32() - tt[[i, j]].to_f32()).to_f32().powi(2)).sum::<f32>()
                / 8.0;
        close("mse_loss", l[i].to_f32(), want, FACTOR * F16_EPS * want);
    }
    assert_eq!(library::show(f16::from_f32(0.5)).unwrap(), "x = 0.5");
    // numpy's digits of a float16: the shortest that read back as it.
    assert_eq!(library::show(f16::from_f32(0.1)).unwrap(), "x = 0.1");
}
