//! `std::math` against independent references: Rust's float methods for the
//! elementary functions (the test checks that each name maps to the right
//! operation at each float type), hand-written formulas for the functions
//! defined in Einlang, and table values for `erf`.

use approx::assert_relative_eq;
use einlang::einlang;
use einlang::ndarray::{array, Array1};

einlang! {
    use std::math::*;

    pub fn unary64(x: f64) -> [f64; 24] {
        [exp(x), ln(x), log(x), log10(x), log2(x), log1p(x), expm1(x), sqrt(x),
         sin(x), cos(x), tan(x), asin(x / 4.0), acos(x / 4.0), atan(x),
         sinh(x), cosh(x), tanh(x), asinh(x), acosh(x + 1.0), atanh(x / 4.0),
         sigmoid(x), abs(-x), rsqrt(x), reciprocal(x)]
    }

    pub fn unary32(x: f32) -> [f32; 12] {
        [exp(x), ln(x), sqrt(x), sin(x), cos(x), tanh(x), sigmoid(x), log1p(x), atan(x), cosh(x), square(x), neg(x)]
    }

    pub fn rounding(x: f64) -> [f64; 4] {
        [floor(x), ceil(x), round(x), trunc(x)]
    }

    pub fn binary64(a: f64, b: f64) -> [f64; 8] {
        [min(a, b), max(a, b), pow(a, b), a ** 2, atan2(a, b), fmod(a, b), clamp(a, -1.0, 1.0), clip(b, 0.0, 0.5)]
    }

    pub fn more64(x: f64) -> [f64; 7] {
        [sign(x), clamp_min(x, 0.0), clamp_max(x, 0.0), saturate(x), deg_to_rad(x), rad_to_deg(x), erf(x)]
    }

    pub fn integers(a: i64, b: i64, n: i32) -> (i64, i64, i32, i64, i64, i32) {
        (gcd(a, b), lcm(a, b), factorial(n), min(a, b), abs(a - b), pow(n, 2))
    }

    pub fn constants() -> [f64; 13] {
        [pi, e, tau, phi, sqrt2, sqrt3, ln2, ln10, log2e, log10e, infinity, nan, epsilon]
    }

    pub fn pi32() -> f32 { pi }

    /// Elementwise use on tensors: an intrinsic and a generic library function.
    pub fn on_tensors(v: [f32; N]) -> ([f32; N], [f32; N]) {
        (exp(v), clamp(v, 0.0, 1.0))
    }

    pub fn fact(n: i32) -> i32 { factorial(n) }

    /// `pow` and `**` with a tensor operand: tensor and scalar either way
    /// round, and two tensors of one shape.
    pub fn pow_broadcast(b: [f64; N], x: [f64; N], s: f64) -> ([f64; N], [f64; N], [f64; N], [f64; N]) {
        (pow(s, x), b ** x, pow(b, s), b ** [2, 0, 3])
    }

    pub fn pow_matrices(b: [f32; M, N], x: [f32; M, N]) -> [f32; M, N] { b ** x }
}

#[test]
fn pow_broadcasts_like_the_other_operators() {
    let b = array![2.0f64, 0.5, 3.0];
    let x = array![1.5f64, -2.0, 0.25];
    let (sx, bx, bs, bi) = pow_broadcast(&b, &x, 1.5).unwrap();
    for i in 0..3 {
        assert_relative_eq!(sx[i], 1.5f64.powf(x[i]), max_relative = 1e-12);
        assert_relative_eq!(bx[i], b[i].powf(x[i]), max_relative = 1e-12);
        assert_relative_eq!(bs[i], b[i].powf(1.5), max_relative = 1e-12);
    }
    assert_eq!(bi, array![4.0, 1.0, 27.0]);
    let m = array![[2.0f32, 4.0], [9.0, 1.5]];
    let e = array![[3.0f32, 0.5], [-0.5, 2.0]];
    assert_relative_eq!(pow_matrices(&m, &e).unwrap(), array![[8.0, 2.0], [1.0 / 3.0, 2.25]], max_relative = 1e-6);
    // Two tensors of different shapes are an error, as for `+`.
    assert!(pow_matrices(&m, &array![[1.0f32, 2.0]]).is_err());
}

#[test]
fn elementary_functions_at_f64() {
    for x in [0.3f64, 1.0, 2.5] {
        let got = unary64(x).unwrap();
        let want = array![
            x.exp(),
            x.ln(),
            x.ln(),
            x.log10(),
            x.log2(),
            x.ln_1p(),
            x.exp_m1(),
            x.sqrt(),
            x.sin(),
            x.cos(),
            x.tan(),
            (x / 4.0).asin(),
            (x / 4.0).acos(),
            x.atan(),
            x.sinh(),
            x.cosh(),
            x.tanh(),
            x.asinh(),
            (x + 1.0).acosh(),
            (x / 4.0).atanh(),
            1.0 / (1.0 + (-x).exp()),
            x,
            1.0 / x.sqrt(),
            1.0 / x
        ];
        for (g, w) in got.iter().zip(want.iter()) {
            assert_relative_eq!(*g, *w, max_relative = 1e-14);
        }
    }
}

#[test]
fn elementary_functions_at_f32() {
    let x = 0.75f32;
    let got = unary32(x).unwrap();
    let want = [
        x.exp(),
        x.ln(),
        x.sqrt(),
        x.sin(),
        x.cos(),
        x.tanh(),
        1.0 / (1.0 + (-x).exp()),
        x.ln_1p(),
        x.atan(),
        x.cosh(),
        x * x,
        -x,
    ];
    for (g, w) in got.iter().zip(want.iter()) {
        assert_relative_eq!(*g, *w, max_relative = 1e-6);
    }
}

#[test]
fn rounding_modes() {
    assert_eq!(rounding(2.5).unwrap(), array![2.0, 3.0, 3.0, 2.0]);
    assert_eq!(rounding(-2.5).unwrap(), array![-3.0, -2.0, -3.0, -2.0]);
    assert_eq!(rounding(-0.4).unwrap(), array![-1.0, -0.0, -0.0, -0.0]);
}

#[test]
fn binary_functions() {
    let (a, b) = (-3.5f64, 2.0f64);
    let got = binary64(a, b).unwrap();
    // fmod keeps the sign of the dividend: -3.5 = -1 * 2 - 1.5.
    let want = array![-3.5, 2.0, 12.25, 12.25, a.atan2(b), -1.5, -1.0, 0.5];
    for (g, w) in got.iter().zip(want.iter()) {
        assert_relative_eq!(*g, *w, max_relative = 1e-14);
    }
}

#[test]
fn library_functions_written_in_einlang() {
    let got = more64(-2.0).unwrap();
    let want = [-1.0, 0.0, -2.0, 0.0, -2.0 * std::f64::consts::PI / 180.0, -2.0 * 180.0 / std::f64::consts::PI];
    for (g, w) in got.iter().zip(want.iter()) {
        assert_relative_eq!(*g, *w, max_relative = 1e-14);
    }
    // Abramowitz & Stegun, table 7.1: erf(2.0) = 0.995322265.
    assert_relative_eq!(got[6], -0.995_322_265, max_relative = 1e-9);
    let pos = more64(0.5).unwrap();
    assert_eq!(pos[0], 1.0);
    assert_eq!(pos[3], 0.5);
    assert_relative_eq!(pos[6], 0.520_499_877_8, max_relative = 1e-9);
    assert_eq!(more64(0.0).unwrap()[0], 0.0);
    assert!(more64(f64::NAN).unwrap()[0].is_nan());
}

#[test]
fn integer_functions() {
    assert_eq!(integers(12, 18, 5).unwrap(), (6, 36, 120, 12, 6, 25));
    assert_eq!(integers(-4, 6, 0).unwrap(), (2, 12, 1, -4, 10, 0));
    assert!(fact(13).is_err(), "13! does not fit in i32");
    assert!(fact(-1).is_err());
}

#[test]
fn constants_take_the_type_of_their_use() {
    let c = constants().unwrap();
    use std::f64::consts as k;
    let want =
        [k::PI, k::E, k::TAU, 1.618033988749895, k::SQRT_2, 3f64.sqrt(), k::LN_2, k::LN_10, k::LOG2_E, k::LOG10_E];
    for (g, w) in c.iter().zip(want.iter()) {
        assert_relative_eq!(*g, *w, max_relative = 1e-15);
    }
    assert_eq!(c[10], f64::INFINITY);
    assert!(c[11].is_nan());
    assert_eq!(c[12], f64::EPSILON);
    assert_eq!(pi32().unwrap(), std::f32::consts::PI);
}

#[test]
fn functions_apply_elementwise_to_tensors() {
    let v: Array1<f32> = array![-1.0, 0.25, 3.0];
    let (e, c) = on_tensors(&v).unwrap();
    for i in 0..3 {
        assert_relative_eq!(e[i], v[i].exp(), max_relative = 1e-6);
        assert_eq!(c[i], v[i].clamp(0.0, 1.0));
    }
}
