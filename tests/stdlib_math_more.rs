//! `std::math::mod`, `max_float` and `min_float` against Rust's own
//! definitions: `rem_euclid` adjusted to the divisor's sign, and the
//! constants of `f64`.

use einlang::einlang;
use einlang::ndarray::{array, Array1};

einlang! {
    use std::math::{max_float, min_float};

    pub fn mod_i32(a: i32, b: i32) -> i32 { std::math::mod(a, b) }
    pub fn mod_i64(a: i64, b: i64) -> i64 { std::math::mod(a, b) }
    pub fn mod_f64(a: f64, b: f64) -> f64 { std::math::mod(a, b) }
    pub fn mod_f32(a: f32, b: f32) -> f32 { std::math::mod(a, b) }
    pub fn mod_tensor(a: [f64; N], b: f64) -> [f64; N] { std::math::mod(a, b) }
    pub fn float_limits() -> (f64, f64) { (max_float, std::math::min_float) }
    pub fn below_max(x: f64) -> bool { x < max_float && x > min_float }
}

/// Floored modulo: the remainder with the sign of the divisor.
fn floored(a: f64, b: f64) -> f64 {
    let r = a % b;
    if r != 0.0 && (r < 0.0) != (b < 0.0) {
        r + b
    } else {
        r
    }
}

#[test]
fn mod_takes_the_sign_of_the_divisor() {
    for a in -9..=9 {
        for b in [-4, -3, -1, 1, 2, 5] {
            let want = floored(a as f64, b as f64) as i32;
            assert_eq!(mod_i32(a, b).unwrap(), want, "{a} mod {b}");
            assert_eq!(mod_i64(a as i64, b as i64).unwrap(), want as i64);
        }
    }
    assert_eq!(mod_i32(7, 3).unwrap(), 1);
    assert_eq!(mod_i32(-7, 3).unwrap(), 2);
    assert_eq!(mod_i32(7, -3).unwrap(), -2);
    for (a, b) in [(5.5, 2.0), (-5.5, 2.0), (5.5, -2.0), (-5.5, -2.0), (0.75, 0.5), (-0.25, 3.0)] {
        approx::assert_relative_eq!(mod_f64(a, b).unwrap(), floored(a, b), max_relative = 1e-12);
        approx::assert_relative_eq!(mod_f32(a as f32, b as f32).unwrap(), floored(a, b) as f32, max_relative = 1e-6);
    }
    let got = mod_tensor(&array![-3.5, 3.5, 1.0], 2.0).unwrap();
    assert_eq!(got, Array1::from_iter([-3.5, 3.5, 1.0].map(|a| floored(a, 2.0))));
}

#[test]
fn float_limits_are_the_seeds_f64_values() {
    assert_eq!(float_limits().unwrap(), (f64::MAX, f64::MIN_POSITIVE));
    assert!(below_max(1e300).unwrap());
    assert!(!below_max(f64::INFINITY).unwrap());
    assert!(!below_max(0.0).unwrap());
}
