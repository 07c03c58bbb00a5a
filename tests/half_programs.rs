//! Half-precision programs written the way a user coming from PyTorch's
//! autocast or candle's `f16` tensors would write them, checked against
//! `f32` references computed in the test from the same rounded inputs.
//! Tolerances come from the formats: a value rounded once to `f16` is
//! within 2^-11 of it relatively (2^-8 for `bf16`); a result computed in
//! `f32` and rounded once is within one such rounding of the reference.

use einlang::einlang;
use einlang::half::{bf16, f16};
use einlang::ndarray::{Array1, Array2};

einlang! {
    use std::math::{exp, sqrt, tanh};

    pub fn mm16(a: [f16; M, K], b: [f16; K, N]) -> [f16; M, N] {
        let c[i, j] = sum[k](a[i, k] * b[k, j]);
        c
    }

    pub fn mmb16(a: [bf16; M, K], b: [bf16; K, N]) -> [bf16; M, N] {
        let c[i, j] = sum[k](a[i, k] * b[k, j]);
        c
    }

    pub fn softmax16(x: [f16; N, C]) -> [f16; N, C] {
        let m[n] = max[c](x[n, c]);
        let e[n, c] = exp(x[n, c] - m[n]);
        let y[n, c] = e[n, c] / sum[k](e[n, k]);
        y
    }

    pub fn total16(x: [f16; N]) -> f16 {
        sum[i](x[i])
    }

    pub fn adapt16(x: [f16; N]) -> [f16; N] {
        let y[i] = max(x[i] * 2 + 0.5, 0) - sqrt(x[i] * x[i] + 1) + tanh(x[i]);
        y
    }

    pub fn casts(x: [f16; N], y: [bf16; N], k: [i32; N]) -> ([f32; N], [f16; N], [bf16; N], [i32; N]) {
        let a[i] = x[i] as f32 + y[i] as f32;
        let b[i] = k[i] as f16;
        let c[i] = x[i] as bf16;
        let d[i] = y[i] as i32;
        (a, b, c, d)
    }

    pub fn grad16(w: [f16; N], x: [f16; N], t: [f16; N]) -> [f16; N] {
        let loss = sum[i]((w[i] * x[i] - t[i]) ** 2);
        @loss / @w
    }

    /// f32 master weights, f16 compute, f32 gradient.
    pub fn mixed_step(w: [f32; I, O], x: [f16; B, I], t: [f16; B, O], lr: f32) -> [f32; I, O] {
        let wh[i, o] = w[i, o] as f16;
        let y[n, o] = sum[i](x[n, i] * wh[i, o]);
        let loss = sum[n, o](((y[n, o] - t[n, o]) as f32) ** 2);
        let g = @loss / @wh;
        let w2[i, o] = w[i, o] - lr * (g[i, o] as f32);
        w2
    }

    pub fn scale16(x: f16, s: f16) -> f16 {
        x * s + 1
    }
}

fn h(v: f32) -> f16 {
    f16::from_f32(v)
}

fn hb(v: f32) -> bf16 {
    bf16::from_f32(v)
}

fn rand(seed: &mut u64) -> f32 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    ((*seed >> 11) as f64 / (1u64 << 53) as f64) as f32 * 2.0 - 1.0
}

/// `got` is the reference rounded once, within one rounding of `eps`
/// (relative, plus an absolute floor for values near zero).
fn close(got: f32, reference: f32, eps: f32, floor: f32) -> bool {
    (got - reference).abs() <= eps * reference.abs() + floor
}

#[test]
fn f16_product_accumulates_in_f32_and_rounds_once() {
    let mut s = 7u64;
    let (m, k, n) = (7, 131, 5);
    let a = Array2::from_shape_fn((m, k), |_| h(rand(&mut s)));
    let b = Array2::from_shape_fn((k, n), |_| h(rand(&mut s)));
    let c = mm16(&a, &b).unwrap();
    for i in 0..m {
        for j in 0..n {
            let r: f32 = (0..k).map(|q| a[[i, q]].to_f32() * b[[q, j]].to_f32()).sum();
            // f32 accumulation error is far below one f16 rounding.
            assert!(close(c[[i, j]].to_f32(), r, 2f32.powi(-10), 1e-3), "{i},{j}: {} vs {r}", c[[i, j]]);
        }
    }
}

#[test]
fn bf16_product_widens() {
    let mut s = 11u64;
    let (m, k, n) = (3, 64, 9);
    let a = Array2::from_shape_fn((m, k), |_| hb(rand(&mut s)));
    let b = Array2::from_shape_fn((k, n), |_| hb(rand(&mut s)));
    let c = mmb16(&a, &b).unwrap();
    for i in 0..m {
        for j in 0..n {
            let r: f32 = (0..k).map(|q| a[[i, q]].to_f32() * b[[q, j]].to_f32()).sum();
            assert!(close(c[[i, j]].to_f32(), r, 2f32.powi(-7), 1e-2), "{i},{j}: {} vs {r}", c[[i, j]]);
        }
    }
}

#[test]
fn sum_of_4096_ones_is_4096() {
    let x = Array1::from_elem(4096, h(1.0));
    assert_eq!(total16(&x).unwrap().to_f32(), 4096.0);
    let x = Array1::from_elem(10000, h(0.1));
    // In f16 arithmetic this sum stalls at 256; accumulated in f32 and
    // rounded once it is 0.1 rounded to f16 (0.099975586) times 10000.
    let expect = 10000.0 * h(0.1).to_f32();
    assert!(close(total16(&x).unwrap().to_f32(), expect, 2f32.powi(-10), 0.0));
}

#[test]
fn softmax_in_half_precision() {
    let mut s = 3u64;
    let x = Array2::from_shape_fn((4, 37), |_| h(rand(&mut s) * 8.0));
    let y = softmax16(&x).unwrap();
    for n in 0..4 {
        let m = (0..37).map(|c| x[[n, c]].to_f32()).fold(f32::MIN, f32::max);
        // Each stored intermediate (the exponentials) is rounded to f16.
        let e: Vec<f32> = (0..37).map(|c| h((x[[n, c]].to_f32() - m).exp()).to_f32()).collect();
        let total: f32 = e.iter().sum();
        let mut row = 0.0;
        for c in 0..37 {
            let r = e[c] / total;
            assert!(close(y[[n, c]].to_f32(), r, 2f32.powi(-9), 1e-4), "{n},{c}: {} vs {r}", y[[n, c]]);
            row += y[[n, c]].to_f32();
        }
        assert!((row - 1.0).abs() < 0.02);
    }
}

#[test]
fn literals_and_math_functions_adapt_to_half() {
    let xs = [-3.0f32, -0.75, 0.0, 0.3, 1.5, 7.25];
    let x = Array1::from_iter(xs.iter().map(|&v| h(v)));
    let y = adapt16(&x).unwrap();
    for (i, &v) in xs.iter().enumerate() {
        let v = h(v).to_f32();
        let r = (v * 2.0 + 0.5).max(0.0) - (v * v + 1.0).sqrt() + v.tanh();
        assert!(close(y[i].to_f32(), r, 2f32.powi(-9), 2e-3), "{v}: {} vs {r}", y[i]);
    }
}

#[test]
fn casts_between_half_and_every_other_type() {
    let x = Array1::from_vec(vec![h(1.5), h(-2.25), h(65504.0)]);
    let y = Array1::from_vec(vec![hb(0.5), hb(-7.9), hb(3.0e38)]);
    let k = Array1::from_vec(vec![3i32, -70000, 2049]);
    let (a, b, c, d) = casts(&x, &y, &k).unwrap();
    assert_eq!(a[0], 2.0);
    assert_eq!(a[1], -2.25 + hb(-7.9).to_f32());
    assert_eq!(b[0], h(3.0));
    assert!(b[1].is_infinite() && b[1].to_f32() < 0.0, "-70000 is past f16's range");
    assert_eq!(b[2], h(2048.0), "2049 rounds to even in f16");
    assert_eq!(c[0], hb(1.5));
    assert_eq!(c[2], hb(65504.0));
    assert_eq!(d[0], 0);
    assert_eq!(d[1], hb(-7.9).to_f32() as i32);
    assert_eq!(d[2], i32::MAX, "a float cast to an integer saturates, as in Rust");
}

#[test]
fn gradients_in_half_precision_match_the_analytic_gradient() {
    let mut s = 5u64;
    let n = 33;
    let w = Array1::from_shape_fn(n, |_| h(rand(&mut s)));
    let x = Array1::from_shape_fn(n, |_| h(rand(&mut s)));
    let t = Array1::from_shape_fn(n, |_| h(rand(&mut s)));
    let g = grad16(&w, &x, &t).unwrap();
    for i in 0..n {
        let (wi, xi, ti) = (w[i].to_f32(), x[i].to_f32(), t[i].to_f32());
        let r = 2.0 * (wi * xi - ti) * xi;
        assert!(close(g[i].to_f32(), r, 2f32.powi(-8), 2e-3), "{i}: {} vs {r}", g[i]);
    }
}

#[test]
fn mixed_precision_step_keeps_f32_master_weights() {
    let mut s = 9u64;
    let (b, i_, o) = (6, 5, 3);
    let w = Array2::from_shape_fn((i_, o), |_| rand(&mut s));
    let x = Array2::from_shape_fn((b, i_), |_| h(rand(&mut s)));
    let t = Array2::from_shape_fn((b, o), |_| h(rand(&mut s)));
    let lr = 0.01f32;
    let w2 = mixed_step(&w, &x, &t, lr).unwrap();
    let wh = w.mapv(|v| h(v).to_f32());
    for ii in 0..i_ {
        for oo in 0..o {
            let mut g = 0.0f32;
            for n in 0..b {
                let y = h((0..i_).map(|q| x[[n, q]].to_f32() * wh[[q, oo]]).sum::<f32>()).to_f32();
                g += 2.0 * (y - t[[n, oo]].to_f32()) * x[[n, ii]].to_f32();
            }
            let r = w[[ii, oo]] - lr * h(g).to_f32();
            assert!((w2[[ii, oo]] - r).abs() < 1e-3 * lr.max(1e-4) + 2e-4, "{ii},{oo}: {} vs {r}", w2[[ii, oo]]);
        }
    }
}

#[test]
fn half_scalars_in_and_out() {
    assert_eq!(scale16(h(1.5), h(2.0)).unwrap(), h(4.0));
    assert_eq!(scale16(h(1000.0), h(1000.0)).unwrap().to_f32(), f32::INFINITY);
}
