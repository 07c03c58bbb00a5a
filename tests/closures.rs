//! Lambdas and closures: function values are resolved at compile time
//! (called, passed to functions, returned from them). Each result is
//! compared with a hand-computed value or a naive loop.

use approx::assert_abs_diff_eq;
use einlang::einlang;
use einlang::ndarray::{array, Array1, Array2};

einlang! {
    use std::math::{exp, sqrt};

    fn apply(f, x) { f(x) }
    fn twice(f, x) { f(f(x)) }
    /// Passes its function parameter on to another function.
    fn apply_twice(f, x) { twice(f, x) }
    fn scaler(k) { |x| x * k }
    fn compose(f, g) { |x| f(g(x)) }
    fn square(x) { x * x }
    /// Maps a function over the rows of a matrix, pointwise.
    fn map2(f, m) {
        let y[i, j] = f(m[i, j]);
        y
    }

    /// A lambda capturing a local, called inside an indexed definition.
    pub fn scale_by(x: [f32; N], factor: f32) -> [f32; N] {
        let f = |v| v * factor;
        let y[i] = f(x[i]);
        y
    }

    /// A lambda with two parameters and a typed one.
    pub fn lerp(a: [f64; N], b: [f64; N], t: f64) -> [f64; N] {
        let mix = |p, q: f64| p * (1.0 - t) + q * t;
        let y[i] = mix(a[i], b[i]);
        y
    }

    /// A lambda passed to a generic function, capturing a scalar.
    pub fn shift_all(x: [f64; N], d: f64) -> [f64; N] {
        let y[i] = apply(|v| v + d, x[i]);
        y
    }

    /// A named function and an intrinsic passed as values.
    pub fn by_name(x: f64) -> (f64, f64) {
        (apply(square, x), apply(sqrt, x))
    }

    /// A closure returned from a function, then called.
    pub fn scaled(x: f32) -> f32 {
        let s = scaler(2.5);
        s(x)
    }

    /// Composition of closures, applied twice through two generic functions.
    pub fn composed(x: f64, k: f64) -> (f64, f64) {
        let h = compose(|v| v + 1.0, scaler(k));
        (h(x), apply_twice(h, x))
    }

    /// A whole-tensor lambda, and a lambda mapped over a matrix.
    pub fn tensor_lambdas(m: [f32; R, C], bias: f32) -> ([f32; R, C], [f32; R, C]) {
        let add = |t| t + bias;
        (add(m), map2(|v| exp(v) * bias, m))
    }

    /// A lambda called directly and a curried lambda.
    pub fn immediate(x: i64) -> (i64, i64) {
        let add = |a| |b| a + b;
        ((|v| v * 3)(x), add(x)(10))
    }

    /// A lambda capturing a tensor, in a reduction.
    pub fn dot_with(w: [f32; N], x: [f32; N]) -> f32 {
        let term = |i| w[i] * x[i];
        sum[i](term(i))
    }
}

#[test]
fn lambda_capturing_a_local_in_an_indexed_definition() {
    let x = array![1.0f32, -2.0, 3.5];
    assert_eq!(scale_by(&x, 3.0).unwrap(), array![3.0f32, -6.0, 10.5]);
}

#[test]
fn lambda_with_two_parameters() {
    let a = array![0.0f64, 1.0, 2.0];
    let b = array![10.0f64, 11.0, 12.0];
    let y = lerp(&a, &b, 0.25).unwrap();
    for i in 0..3 {
        assert_abs_diff_eq!(y[i], a[i] * 0.75 + b[i] * 0.25, epsilon = 1e-12);
    }
}

#[test]
fn lambda_passed_to_a_generic_function() {
    let x = array![1.0f64, 2.0, -3.0];
    assert_eq!(shift_all(&x, 0.5).unwrap(), array![1.5, 2.5, -2.5]);
}

#[test]
fn functions_passed_by_name() {
    let (a, b) = by_name(9.0).unwrap();
    assert_eq!(a, 81.0);
    assert_eq!(b, 3.0);
}

#[test]
fn closure_returned_from_a_function() {
    assert_eq!(scaled(4.0).unwrap(), 10.0);
}

#[test]
fn composed_closures() {
    // h(x) = k * x + 1; twice: h(h(x)).
    let (once, twice) = composed(2.0, 3.0).unwrap();
    assert_eq!(once, 7.0);
    assert_eq!(twice, 22.0);
}

#[test]
fn lambdas_over_tensors() {
    let m = Array2::from_shape_fn((2, 3), |(i, j)| (i * 3 + j) as f32 * 0.5 - 1.0);
    let (a, b) = tensor_lambdas(&m, 2.0).unwrap();
    for i in 0..2 {
        for j in 0..3 {
            assert_eq!(a[[i, j]], m[[i, j]] + 2.0);
            assert_abs_diff_eq!(b[[i, j]], m[[i, j]].exp() * 2.0, epsilon = 1e-5);
        }
    }
}

#[test]
fn immediate_and_curried_lambdas() {
    assert_eq!(immediate(7).unwrap(), (21, 17));
}

#[test]
fn lambda_capturing_a_tensor_in_a_reduction() {
    let w = Array1::from_shape_fn(5, |i| i as f32 + 1.0);
    let x = Array1::from_shape_fn(5, |i| 2.0 - i as f32);
    let mut expect = 0.0f32;
    for i in 0..5 {
        expect += w[i] * x[i];
    }
    assert_abs_diff_eq!(dot_with(&w, &x).unwrap(), expect, epsilon = 1e-5);
}

einlang! {
    /// Parameters declared with function types: the lambda's parameters
    /// take the declared types, and its value must have the result type.
    fn apply(f: (f32) -> f32, x: f32) -> f32 { f(x) }

    fn twice(f: (f64) -> f64, x: f64) -> f64 { f(f(x)) }

    fn zip_with(g: (f32, f32) -> f32, a: [f32; N], b: [f32; N]) -> [f32; N] {
        let y[i] = g(a[i], b[i]);
        y
    }

    fn square(v: f64) -> f64 { v * v }

    pub fn typed_apply(x: f32) -> f32 { apply(|v| v * 3.0 + 1.0, x) }

    pub fn typed_twice(x: f64) -> f64 { twice(square, x) }

    pub fn typed_zip(a: [f32; N], b: [f32; N], k: f32) -> [f32; N] {
        zip_with(|p, q| p * q + k, a, b)
    }
}

#[test]
fn function_typed_parameters() {
    assert_eq!(typed_apply(2.0).unwrap(), 7.0);
    assert_eq!(typed_twice(3.0).unwrap(), 81.0);
    let a = array![1.0f32, 2.0, -1.0];
    let b = array![0.5f32, 4.0, 3.0];
    let want: Vec<f32> = a.iter().zip(&b).map(|(p, q)| p * q + 0.25).collect();
    assert_eq!(typed_zip(&a, &b, 0.25).unwrap().to_vec(), want);
}

mod literal_captures {
    einlang::einlang! {
        fn make_scaler(factor) { |x| x * factor }
        fn map(f, v) { let r[i] = f(v[i]); r }
        /// Closures made from literal arguments and passed on: each keeps
        /// its own constant.
        pub fn two_scalers(v: [f64; N]) -> ([f64; N], [f64; N]) {
            let s = make_scaler(2.5);
            let t = make_scaler(-1.0);
            (map(s, v), map(t, v))
        }
        pub fn scaler_of(v: [f32; N], k: f32) -> [f32; N] { let s = make_scaler(k); map(s, v) }
    }
}

#[test]
fn closures_capturing_literal_arguments_passed_on() {
    let v = array![1.0, -2.0, 4.0];
    let (a, b) = literal_captures::two_scalers(&v).unwrap();
    assert_eq!(a, array![2.5, -5.0, 10.0]);
    assert_eq!(b, array![-1.0, 2.0, -4.0]);
    assert_eq!(literal_captures::scaler_of(&array![1.0f32, 2.0], 3.0).unwrap(), array![3.0f32, 6.0]);
}
