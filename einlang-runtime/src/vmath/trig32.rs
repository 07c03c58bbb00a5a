//! `f32` `sin`, `cos` and `tan` without branches, calls or loads that
//! depend on the argument (see the parent module): an exact reduction by
//! `pi/2` for every finite `f32` in `f64` arithmetic whose products are
//! exact (`reduce_pio2_f32`), then `sin` and `cos` of the remainder as
//! `f32` polynomials, sixteen lanes in the AVX-512 twin (`tan` divides in
//! `f64`).

#![allow(clippy::excessive_precision, clippy::unreadable_literal)]

use super::flip_f32;

/// Adding `1.5 * 2^52` rounds an `f64` below `2^51` in magnitude to an
/// integer held in the low bits of the sum; subtracting it again gives the
/// integer.
const ROUND: f64 = 6_755_399_441_055_744.0;

/// `2^E 2/pi mod 4` in three parts for `E` = 0, 28, 54, 80 (one column per
/// `E`), each part already divided by `2^E`: `T1` is the bits of weights
/// `2^1` to `2^-27` (of `2^E 2/pi mod 4`), `T2` the next 29, `T3` the rest
/// rounded to 53 bits (bits of `2/pi` to about `2^-(E + 140)`). 29 bits
/// times an `f32`'s 24 fit in a double, so `|x| T1` and `|x| T2` are exact.
const T1: [u64; 4] = [0x3fe45f306c000000, 0x3e4727220a000000, 0x3c94a7f09c000000, 0x3b0abe8fa9000000];
const T2: [u64; 4] = [0x3e2c9c882a000000, 0x3c729fc275000000, 0x3ad5f47d4d000000, 0x3934ddc0db000000];
const T3: [u64; 4] = [0x3c44fe13abe8fa9a, 0x3a9f47d4d377036e, 0x38ebb81b6c52b328, 0x3758a5664f10e410];

/// `|x| = (n + g) pi/2` with `|g| <= 1/2` (a little more at rounding
/// ties), for every finite `f32`: `(g pi/2, n mod 4)`, the remainder in
/// `f64` with a relative error below `2^-50`.
///
/// `|x| 2/pi mod 4` is `M (2^E 2/pi mod 4) mod 4` for `M = |x| / 2^E`
/// whenever `M` is an integer (`E` at most the exponent of `|x|`'s last
/// bit), so one of four `E` serves every exponent: `E = 0` below `2^51`
/// (no integer needed: no multiple of 4 is dropped), 28, 54 and 80 above,
/// each where `M < 2^49`. The constant in three parts (`T1` to `T3`,
/// chosen by three comparisons, no load), the products `p1` and `p2` are
/// exact; their integer parts are dropped (kept modulo 4 for the
/// quadrant), exactly, their fractions added by Knuth's two-sum, `p3`
/// (below `2^-6`, rounded twice: within `2^-58`) to the low part, and the
/// sum rounded once more to the nearest quarter turn. The error stays
/// below `2^-57` of a turn, and no `f32` lies closer to a multiple of
/// `pi/2` than `2^-29.86` of a turn (`7.729179e28`, bits `0x6f79be45`,
/// found by a search over every `f32`), so `g` keeps at least 30 bits more
/// than an `f32` needs.
#[inline(always)]
pub(super) fn reduce_pio2_f32(x: f32) -> (f64, u32) {
    let a = x.abs() as f64;
    let b1 = a >= 2_251_799_813_685_248.0; // 2^51
    let b2 = a >= 151_115_727_451_828_646_838_272.0; // 2^77
    let b3 = a >= 10_141_204_801_825_835_211_973_625_643_008.0; // 2^103
    let pick = |t: [u64; 4]| {
        let b = if b3 {
            t[3]
        } else if b2 {
            t[2]
        } else if b1 {
            t[1]
        } else {
            t[0]
        };
        f64::from_bits(b)
    };
    let (p1, p2, p3) = (a * pick(T1), a * pick(T2), a * pick(T3));
    // The integer parts of p1 and p2 (exact: below 2^51) and their
    // fractions (exact).
    let i1 = (p1 + ROUND) - ROUND;
    let i2 = (p2 + ROUND) - ROUND;
    let (f1, f2) = (p1 - i1, p2 - i2);
    // f1 + f2 in two parts (Knuth's two-sum), the low part joined by p3.
    let s = f1 + f2;
    let bb = s - f1;
    let lo = ((f1 - (s - bb)) + (f2 - bb)) + p3;
    // The nearest quarter turn to s + lo; s minus it is exact (|s| <= 1).
    let i3 = ((s + lo) + ROUND) - ROUND;
    let g = (s - i3) + lo;
    // The quarter turns modulo 4: the integers' sum (below 2^52, exact)
    // in the low bits of its sum with 1.5 * 2^52.
    let n = (((i1 + i2) + i3) + ROUND).to_bits() as u32 & 3;
    (g * std::f64::consts::FRAC_PI_2, n)
}

/// `(sin r, cos r)` for `r = rh + rl` (`|r| <= pi/4` and a little, `|rl|
/// <= ulp(rh) / 2`) in `f32`: Taylor series to `r^11` and `r^12` (the
/// first terms left out below `2^-33` of the result), `rl` through the
/// first derivatives, `1 - r^2/2` with its rounding error carried (with
/// the reduction, at most 0.82 ulp over every `f32`).
#[inline(always)]
fn sincos_f32(rh: f32, rl: f32) -> (f32, f32) {
    let z = rh * rh;
    let mut s = -1.0f32 / 39_916_800.0;
    s = s * z + 1.0 / 362_880.0;
    s = s * z - 1.0 / 5_040.0;
    s = s * z + 1.0 / 120.0;
    s = s * z - 1.0 / 6.0;
    let hz = 0.5 * z;
    let w = 1.0 - hz;
    let sin = rh + (rh * z * s + rl * w);
    let mut c = 1.0f32 / 479_001_600.0;
    c = c * z - 1.0 / 3_628_800.0;
    c = c * z + 1.0 / 40_320.0;
    c = c * z - 1.0 / 720.0;
    c = c * z + 1.0 / 24.0;
    let cos = w + (((1.0 - w) - hz) + (z * z * c - rh * rl));
    (sin, cos)
}

/// The reduction of `x` with the remainder split into `f32` parts.
#[inline(always)]
fn reduce_split(x: f32) -> (f32, f32, u32) {
    let (r, n) = reduce_pio2_f32(x);
    let rh = r as f32;
    (rh, (r - rh as f64) as f32, n)
}

/// Sine (at most 0.82 ulp over all 2^32 `f32`s: the reduction is
/// exact); NaN for NaN and `±inf`, `-0` kept.
#[inline(always)]
pub fn sin_f32(x: f32) -> f32 {
    let (rh, rl, n) = reduce_split(x);
    let (s, c) = sincos_f32(rh, rl);
    let v = if n & 1 == 0 { s } else { c };
    let v = if n & 2 == 0 { v } else { -v };
    let y = flip_f32(v, x);
    if x.is_finite() {
        y
    } else {
        f32::NAN
    }
}

/// Cosine (as `sin_f32`; at most 0.82 ulp over all `f32`s).
#[inline(always)]
pub fn cos_f32(x: f32) -> f32 {
    let (rh, rl, n) = reduce_split(x);
    let (s, c) = sincos_f32(rh, rl);
    let v = if n & 1 == 0 { c } else { -s };
    let v = if n & 2 == 0 { v } else { -v };
    if x.is_finite() {
        v
    } else {
        f32::NAN
    }
}

/// `(sin r, cos r)` in `f64` for `|r| <= pi/4` and a little: Taylor
/// series to `r^13` and `r^14` (first terms left out below `2^-36` of the
/// result, ample for a quotient rounded to `f32`).
#[inline(always)]
fn sincos_f64(r: f64) -> (f64, f64) {
    let z = r * r;
    let mut s = -1.0 / 6_227_020_800.0f64; // -1/13!
    s = s * z + 1.0 / 39_916_800.0;
    s = s * z - 1.0 / 362_880.0;
    s = s * z + 1.0 / 5_040.0;
    s = s * z - 1.0 / 120.0;
    s = s * z + 1.0 / 6.0;
    let sin = r - r * z * s;
    let mut c = 1.0 / 87_178_291_200.0f64; // 1/14!
    c = c * z - 1.0 / 479_001_600.0;
    c = c * z + 1.0 / 3_628_800.0;
    c = c * z - 1.0 / 40_320.0;
    c = c * z + 1.0 / 720.0;
    c = c * z - 1.0 / 24.0;
    let cos = 1.0 - 0.5 * z + z * z * (-c);
    (sin, cos)
}

/// Tangent (at most 0.5 ulp over all `f32`s): the reduction of `sin_f32`,
/// `sin r / cos r` (or `-cos r / sin r` in odd quadrants) in `f64`,
/// rounded once.
#[inline(always)]
pub fn tan_f32(x: f32) -> f32 {
    let (r, n) = reduce_pio2_f32(x);
    let (s, c) = sincos_f64(r);
    let v = if n & 1 == 0 { s / c } else { -c / s };
    let y = flip_f32(v as f32, x);
    if x.is_finite() {
        y
    } else {
        f32::NAN
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{err32, sweep32};
    use super::*;

    /// `sin`, `cos`, `tan` over every `stride()`-th `f32` bit pattern
    /// (every exponent, both signs, `EINLANG_VMATH_STRIDE=1` for all 2^32)
    /// against `f64`'s libm.
    #[test]
    fn f32_sin() {
        sweep32("sin f32", sin_f32, f64::sin, 1.0);
    }

    #[test]
    fn f32_cos() {
        sweep32("cos f32", cos_f32, f64::cos, 1.0);
    }

    #[test]
    fn f32_tan() {
        sweep32("tan f32", tan_f32, f64::tan, 1.0);
    }

    /// The `f32`s closest to a multiple of `pi/2` (from a search over
    /// every `f32`: the reduction's remainder is smallest there), the ends
    /// of each bucket of the reduction, and consecutive `f32`s around
    /// multiples of `pi/2` up to 2^24, where the rounding to the nearest
    /// quarter turn changes quadrant.
    #[test]
    fn f32_hard_arguments() {
        let mut worst = 0.0f64;
        let mut check = |x: f32| {
            for x in [x, -x] {
                let d = x as f64;
                worst = worst.max(err32(sin_f32(x), d.sin())).max(err32(cos_f32(x), d.cos()));
                worst = worst.max(err32(tan_f32(x), d.tan()));
            }
        };
        for b in [0x6f79be45u32, 0x50a3e87f, 0x6ff9be45, 0x5123e87f, 0x437ce5f1, 0x6a1976f1, 0x53b146a6] {
            check(f32::from_bits(b));
        }
        // 2^51, 2^77, 2^103 and their neighbours; f32::MAX.
        for e in [51, 77, 103] {
            let b = ((127 + e) as u32) << 23;
            for d in 0..4 {
                check(f32::from_bits(b + d));
                check(f32::from_bits(b - d));
            }
        }
        check(f32::MAX);
        for k in 1..3000u32 {
            let c = (k as f64 * k as f64 * 1.87) * std::f64::consts::FRAC_PI_2;
            if c > 16_777_216.0 {
                break;
            }
            let mid = (c as f32).to_bits();
            for b in mid - 8..mid + 8 {
                check(f32::from_bits(b));
            }
        }
        assert!(worst <= 1.0, "{worst} ulp");
    }

    #[test]
    fn special_values() {
        for x in [f32::INFINITY, f32::NEG_INFINITY, f32::NAN, -f32::NAN] {
            assert!(sin_f32(x).is_nan() && cos_f32(x).is_nan() && tan_f32(x).is_nan(), "{x}");
        }
        assert_eq!(sin_f32(0.0).to_bits(), 0);
        assert_eq!(sin_f32(-0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(tan_f32(-0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(cos_f32(-0.0), 1.0);
        assert_eq!(cos_f32(0.0), 1.0);
        let tiny = f32::from_bits(1);
        assert_eq!(sin_f32(tiny), tiny);
        assert_eq!(sin_f32(-tiny), -tiny);
        assert_eq!(tan_f32(1e-30), 1e-30);
        assert_eq!(sin_f32(1e-30), 1e-30);
        assert_eq!(cos_f32(1e-30), 1.0);
        // sin(f32::MAX) = -0.521876..., a value only an exact reduction finds.
        assert!(err32(sin_f32(f32::MAX), (f32::MAX as f64).sin()) <= 1.0);
        assert!(err32(cos_f32(f32::MIN), (f32::MIN as f64).cos()) <= 1.0);
    }
}
