//! Calls of formulas written out: on scalars (`opt::calls`), element loops
//! calling `std::ml::sigmoid`, `silu`, `gelu_tanh` or a function of the
//! program; on whole tensors (`transform::formulas`), `std::ml::gelu_tanh(x)`
//! with `x` a tensor. Each gives the bits of the function's formula
//! computed element by element (the lane forms of `exp` included), and a
//! call that fails still fails.

use einlang::einlang;
use einlang::ndarray::{Array1, Array2};

einlang! {
    fn logistic(v: f32) -> f32 { 1.0 / (1.0 + std::math::exp(-v)) }
    fn swish(v: f32) -> f32 { v * logistic(v) }
    fn first(a: f32, b: f32) -> f32 { a * 2.0 }
    fn damp(v: f64) -> f64 { v / (1.0 + std::math::exp(-v)) }
    fn gate(v) { v / (1.0 + std::math::exp(-v)) }

    pub fn ml_sigmoid(x: [f32; N]) -> [f32; N] {
        let y[i] = std::ml::sigmoid(x[i]);
        y
    }

    pub fn ml_silu(x: [f32; N, C]) -> [f32; N, C] {
        let y[n, c] = std::ml::silu(x[n, c]);
        y
    }

    pub fn ml_gelu_tanh(x: [f32; N]) -> [f32; N] {
        let y[i] = std::ml::gelu_tanh(x[i]);
        y
    }

    /// A function of the program calling another, and one whose argument
    /// is computed (its call stays: the argument would be computed twice).
    pub fn own(x: [f32; N]) -> [f32; N] {
        let y[i] = swish(x[i]) - swish(x[i] * 0.5 + 1.0);
        y
    }

    pub fn own64(x: [f64; N]) -> [f64; N] {
        let y[i] = damp(x[i]);
        y
    }

    /// Formulas applied to whole tensors: nested (`gelu_tanh` calls
    /// `sigmoid`), with a scalar argument, the program's own, and an
    /// argument computed from two tensors.
    pub fn whole_gelu(x: [f32; N]) -> [f32; N] {
        std::ml::gelu_tanh(x)
    }

    pub fn whole_leaky(x: [f32; N, C]) -> [f32; N, C] {
        std::ml::leaky_relu(x, 0.125)
    }

    pub fn whole_swish(x: [f32; N]) -> [f32; N] {
        let y = gate(x);
        y
    }

    pub fn whole_sum_silu(a: [f32; N], b: [f32; N]) -> [f32; N] {
        std::ml::silu(a + b) * 2.0
    }

    /// Reads that fail: as an argument used once, and as one the body
    /// ignores.
    pub fn gathered(x: [f32; N], k: [i64; M]) -> [f32; M] {
        let y[i] = std::ml::sigmoid(x[k[i]]);
        y
    }

    pub fn ignored(x: [f32; N], k: [i64; N]) -> [f32; N] {
        let y[i] = first(x[i], x[k[i]]);
        y
    }
}

/// `1 / (1 + e^-v)` with the crate's `exp` (the one every form of the
/// generated code computes).
fn sigmoid_formula(v: f32) -> f32 {
    1.0 / (1.0 + einlang::__private::arith::exp_f32(-v))
}

/// Values over the whole range of the exponential and its ends: zeros,
/// subnormals, overflow on both sides, infinities, NaN.
fn inputs(len: usize) -> Array1<f32> {
    let specials = [0.0f32, -0.0, 1e-40, -104.5, -87.4, 88.8, 89.5, 1e30, f32::INFINITY, -f32::INFINITY, f32::NAN];
    Array1::from_shape_fn(len, |i| {
        if i % 5 == 3 {
            specials[(i / 5 + len) % specials.len()]
        } else {
            (i as f32 * 0.77 - 9.0) * 3.1
        }
    })
}

/// The same bits, or both NaN (`-inf * 0` in `gelu_tanh` may give either
/// sign of NaN, as the optimizer orders it).
fn same(got: f32, want: f32, what: &str) {
    assert!(got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()), "{what}: {got:e} against {want:e}");
}

#[test]
fn standard_library_formulas_keep_their_bits() {
    for len in [0usize, 1, 7, 15, 16, 17, 40, 97] {
        let x = inputs(len);
        let s = ml_sigmoid(&x).unwrap();
        let g = ml_gelu_tanh(&x).unwrap();
        let o = own(&x).unwrap();
        for i in 0..len {
            let v = x[i];
            same(s[i], sigmoid_formula(v), &format!("std::ml::sigmoid, {len} elements, at {i}"));
            let u = 1.5957691216057308f64 as f32 * (v + 0.044715f32 * v * v * v);
            same(g[i], v * sigmoid_formula(u), &format!("std::ml::gelu_tanh, {len} elements, at {i}"));
            let w = v * 0.5 + 1.0;
            same(o[i], v * sigmoid_formula(v) - w * sigmoid_formula(w), &format!("swish, {len} elements, at {i}"));
        }
    }
    for c in [1usize, 16, 33] {
        let flat = inputs(3 * c);
        let x = Array2::from_shape_fn((3, c), |(n, j)| flat[n * c + j]);
        let y = ml_silu(&x).unwrap();
        for ((n, j), got) in y.indexed_iter() {
            let v = x[[n, j]];
            same(*got, v * sigmoid_formula(v), &format!("std::ml::silu, {c} columns, at ({n}, {j})"));
        }
    }
}

#[test]
fn double_precision_formula() {
    let x = Array1::from_shape_fn(37, |i| (i as f64 - 18.0) * 2.7);
    let y = own64(&x).unwrap();
    for i in 0..37 {
        let v = x[i];
        let want = v / (1.0 + einlang::__private::vmath::exp_f64(-v));
        assert!(y[i].to_bits() == want.to_bits(), "at {i}: {} against {want}", y[i]);
    }
}

#[test]
fn failing_arguments_still_fail() {
    let x = Array1::from_shape_fn(5, |i| i as f32 - 2.0);
    let inside = Array1::from(vec![4i64, 0, 2]);
    let y = gathered(&x, &inside).unwrap();
    for (i, &k) in inside.iter().enumerate() {
        same(y[i], sigmoid_formula(x[k as usize]), &format!("gathered at {i}"));
    }
    let outside = Array1::from(vec![1i64, 5, 0]);
    assert!(matches!(gathered(&x, &outside), Err(einlang::Error::Index { .. })), "{:?}", gathered(&x, &outside));
    let outside = Array1::from(vec![0i64, 1, 2, 3, -1]);
    assert!(matches!(ignored(&x, &outside), Err(einlang::Error::Index { .. })), "{:?}", ignored(&x, &outside));
    let inside = Array1::from(vec![4i64, 3, 2, 1, 0]);
    let y = ignored(&x, &inside).unwrap();
    for i in 0..5 {
        same(y[i], x[i] * 2.0, &format!("ignored at {i}"));
    }
}

#[test]
fn formulas_over_whole_tensors_keep_their_bits() {
    for len in [0usize, 1, 15, 16, 17, 40, 97] {
        let x = inputs(len);
        let g = whole_gelu(&x).unwrap();
        let w = whole_swish(&x).unwrap();
        let b = x.mapv(|v| v * 0.25 - 1.0);
        let s = whole_sum_silu(&x, &b).unwrap();
        for i in 0..len {
            let v = x[i];
            let u = 1.5957691216057308f64 as f32 * (v + 0.044715f32 * v * v * v);
            same(g[i], v * sigmoid_formula(u), &format!("gelu_tanh of a tensor, {len} elements, at {i}"));
            let e = einlang::__private::arith::exp_f32(-v);
            same(w[i], v / (1.0 + e), &format!("a formula of the program on a tensor, {len} elements, at {i}"));
            let t = v + b[i];
            same(s[i], t * sigmoid_formula(t) * 2.0, &format!("silu(a + b) * 2, {len} elements, at {i}"));
        }
    }
    let flat = inputs(3 * 17);
    let x = Array2::from_shape_fn((3, 17), |(n, j)| flat[n * 17 + j]);
    let y = whole_leaky(&x).unwrap();
    for ((n, j), got) in y.indexed_iter() {
        let v = x[[n, j]];
        same(*got, v.max(0.0) + 0.125 * v.min(0.0), &format!("leaky_relu of a matrix at ({n}, {j})"));
    }
}
