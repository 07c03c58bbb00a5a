//! Elementary functions without branches, calls or table lookups, so that a
//! loop applying one of them to every element vectorizes (the standard
//! library's `f32::tanh`, `f64::ln`, ... are a libm call per element, which
//! keeps the loop scalar). Generated code calls these for `std::math`'s
//! functions; each is `#[inline(always)]`, so it is compiled into the loop
//! and, in a function's AVX2 twin, with its instructions.
//!
//! How they are written:
//! - every case is computed and the answer chosen by `if c { a } else { b }`
//!   between values (LLVM emits blends), never by returning early;
//! - integer parts of a float are found by adding `1.5 * 2^23` (`2^52`) and
//!   reading the bits, powers of two are built from bits, so nothing needs
//!   `round`/`floor` (library calls on baseline x86-64) or a saturating
//!   float-to-integer conversion;
//! - plain `*` and `+` (Rust never contracts `a * b + c` on its own), except
//!   in the reduction and polynomial of the exponential and of `e^x - 1`
//!   and in `erf`'s polynomials, which are compute bound in the activations
//!   built on them (`sigmoid`, `tanh`, GELU, softmax) and use `mul_add`: a
//!   fused multiply-add is rounded once wherever it runs (one instruction
//!   in the AVX2 and AVX-512 twins, libm's correctly rounded `fmaf` in the
//!   baseline form, slower there), so a function gives the same bits on
//!   every processor;
//! - the `f32` functions whose accuracy needs it (`tan`, `pow`, the
//!   inverse and hyperbolic ones) compute in `f64` and round once, which
//!   makes them correctly rounded in nearly every case; the frequent ones
//!   of neural networks (`exp`, `expm1`, `ln`, `log2`, `log10`, `log1p`,
//!   `tanh`, `sigmoid`, `erf`) and `sin`, `cos` stay in `f32`, eight lanes
//!   wide (sixteen in the AVX-512 twin); `sin` and `cos` reduce their
//!   argument in `f64` (`vmath/trig32.rs`).
//!
//! Accuracy, as measured by the tests below over millions of arguments
//! spanning every exponent (`f32` against `f64`'s libm, `f64` against the
//! platform's libm, glibc, itself within 1 ulp of the exact value): see each
//! function's comment. Special values follow IEEE 754 / C99 Annex F
//! (NaN in, NaN out; `ln(0) = -inf`, `ln(-1) = NaN`, `log1p(-1) = -inf`,
//! `tanh(±inf) = ±1`, signed zeros kept where the function is odd).
//!
//! `f32` `sin`, `cos` and `tan` reduce their argument exactly for every
//! exponent with no separate path for large arguments: `|x| 2/pi` modulo 4
//! from a constant in four 29-bit parts (one of four sets, chosen by the
//! size of `|x|`) whose products with `|x|` are exact in `f64`; within 1
//! ulp over all 2^32 arguments. `f64` `sin`, `cos` and `tan` reduce theirs
//! exactly too, for every exponent: the 192
//! bits of `2/pi` an exponent needs are chosen out of 1,216 by masks (17
//! candidates for each of four words), which vectorizes in the AVX2 and
//! AVX-512 forms, where a table load per element (a gather) kept the AVX2
//! form scalar and cost the AVX-512 form more than the masks.

// Fitted coefficients are written with the digits the fit gave; bounds as
// comparisons (`f32::clamp` and `partial_cmp` would hide which way NaN
// goes, which each function decides).
#![allow(clippy::excessive_precision, clippy::manual_clamp, clippy::neg_cmp_op_on_partial_ord)]

pub mod lanes;
mod trig32;
mod trig64;
pub use trig32::{cos_f32, sin_f32, tan_f32};
pub use trig64::{cos_f64, sin_f64, tan_f64};

// ---------------------------------------------------------------- f32 core

// `log2 e`, `ln 2` in two parts (`n * LN2_HI_F32` is exact for |n| <
// 2^15) and `2^n` from its bits: the exponential's (`arith::exp32`).
use crate::arith::exp32::{pow2i as pow2i_f32, LN2_HI as LN2_HI_F32, LN2_LO as LN2_LO_F32, LOG2E as LOG2E_F32};

/// `e^x`: the exponential of `arith::exp_f32` (at most 2 ulp).
#[inline(always)]
pub fn exp_f32(x: f32) -> f32 {
    crate::arith::exp_f32(x)
}

/// `x = n ln 2 + r` (|r| <= 0.35) and `e^r - 1` by a degree-8 Taylor
/// polynomial, for `x` in `[-30, 89]`: returns `(n, e^r - 1)`.
#[inline(always)]
fn expm1_parts_f32(c: f32) -> (i32, f32) {
    let (r, ni) = crate::arith::exp32::reduce(c);
    let mut h = 1.0 / 40320.0f32;
    h = h.mul_add(r, 1.0 / 5040.0);
    h = h.mul_add(r, 1.0 / 720.0);
    h = h.mul_add(r, 1.0 / 120.0);
    h = h.mul_add(r, 1.0 / 24.0);
    h = h.mul_add(r, 1.0 / 6.0);
    h = h.mul_add(r, 0.5);
    (ni, (r * r).mul_add(h, r))
}

/// `e^x - 1`, accurate near 0 (at most 2 ulp, see the tests): `x = n ln
/// 2 + r`, a degree-8 Taylor polynomial for `e^r - 1` (|r| <= 0.35), then
/// `2^n (e^r - 1) + (2^n - 1)` (exact parts) for `n <= 24` and
/// `(e^r - 1 + 1) 2^n - 1` above, `2^n` in two halves so that the results
/// near overflow stay finite.
#[inline(always)]
pub fn expm1_f32(x: f32) -> f32 {
    // Below -30 the result rounds to -1 (e^-30 < 2^-25); clamping there
    // also keeps every intermediate normal (subnormals cost a microcode
    // assist per operation on x86).
    let c = if x < -30.0 {
        -30.0
    } else if x > 89.0 {
        89.0
    } else {
        x
    };
    let (ni, em) = expm1_parts_f32(c);
    let t = pow2i_f32(ni);
    let small = t * em + (t - 1.0);
    // The large form only for n > 24; its scale from n >= 25 either way.
    let nb = if ni > 25 { ni } else { 25 };
    let a = nb >> 1;
    let big = (em + 1.0) * pow2i_f32(a) * pow2i_f32(nb.wrapping_sub(a)) - 1.0;
    let y = if ni > 24 { big } else { small };
    // Zero keeps its sign; NaN stays NaN.
    if x == 0.0 || x.is_nan() {
        x
    } else {
        y
    }
}

/// The pieces of `ln(m)` for `m = 1 + f` in `[sqrt(1/2), sqrt(2))`:
/// `ln(1 + f) = f - hfsq + s (hfsq + R)` with `s = f / (2 + f)` (so that
/// `ln(1 + f) = 2 atanh(s)`), `hfsq = f^2 / 2` and `R` the atanh series'
/// tail in `s^2 <= 0.0295`. Returns `(f, hfsq, s (hfsq + R))`.
#[inline(always)]
fn log_parts_f32(m: f32) -> (f32, f32, f32) {
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    let mut r = 2.0 / 9.0f32;
    r = r * z + 2.0 / 7.0;
    r = r * z + 2.0 / 5.0;
    r = r * z + 2.0 / 3.0;
    let hfsq = 0.5 * f * f;
    (f, hfsq, s * (hfsq + r * z))
}

/// `x = 2^k m` with `m` in `[sqrt(1/2), sqrt(2))`, for finite `x > 0`
/// (subnormals included); `k` as a float.
#[inline(always)]
fn split_f32(x: f32) -> (f32, f32) {
    let sub = x < f32::MIN_POSITIVE;
    let xs = if sub { x * 33_554_432.0 } else { x }; // 2^25
    let adj = if sub { -25 } else { 0 };
    let ix = (xs.to_bits() as i32).wrapping_add(0x3f80_0000 - 0x3f35_04f3);
    let k = (ix >> 23) - 127 + adj;
    let m = f32::from_bits(((ix & 0x007f_ffff) + 0x3f35_04f3) as u32);
    (k as f32, m)
}

/// The special values of a logarithm: `-inf` at 0, NaN below 0 and for NaN,
/// `inf` at `inf`; `y` otherwise.
#[inline(always)]
fn log_special_f32(x: f32, y: f32) -> f32 {
    if x == 0.0 {
        f32::NEG_INFINITY
    } else if !(x >= 0.0) {
        f32::NAN
    } else if x == f32::INFINITY {
        x
    } else {
        y
    }
}

/// Natural logarithm (at most 1 ulp, see the tests).
#[inline(always)]
pub fn ln_f32(x: f32) -> f32 {
    let (k, m) = split_f32(x);
    let (f, hfsq, tail) = log_parts_f32(m);
    let y = k * LN2_HI_F32 + (((tail + k * LN2_LO_F32) - hfsq) + f);
    log_special_f32(x, y)
}

/// Base-2 logarithm (at most 2 ulp): `k + ln(m) log2(e)`, the exact `k`
/// added last.
#[inline(always)]
pub fn log2_f32(x: f32) -> f32 {
    let (k, m) = split_f32(x);
    let (f, hfsq, tail) = log_parts_f32(m);
    let hi = f - hfsq;
    let lo = (f - hi) - hfsq + tail;
    let y = k + (hi * LOG2E_F32 + lo * LOG2E_F32);
    log_special_f32(x, y)
}

/// Base-10 logarithm (at most 2 ulp): `k log10(2) + ln(m) log10(e)`, the
/// first product exact.
#[inline(always)]
pub fn log10_f32(x: f32) -> f32 {
    const L10_2_HI: f32 = 0.301_025_39; // 2^-12 multiple: k * L10_2_HI is exact
    const L10_2_LO: f32 = 4.605_038e-6;
    const LOG10E: f32 = std::f32::consts::LOG10_E;
    let (k, m) = split_f32(x);
    let (f, hfsq, tail) = log_parts_f32(m);
    let hi = f - hfsq;
    let lo = (f - hi) - hfsq + tail;
    let y = k * L10_2_HI + (k * L10_2_LO + (hi * LOG10E + lo * LOG10E));
    log_special_f32(x, y)
}

/// `ln(1 + x)`, accurate near 0 (at most 2 ulp): the logarithm of `u = 1 +
/// x` (rounded) plus `c / u`, `c` the rounding error of `u` (exact).
#[inline(always)]
pub fn log1p_f32(x: f32) -> f32 {
    let u = 1.0 + x;
    let c = if x < 1.0 { x - (u - 1.0) } else { 1.0 - (u - x) };
    let (k, m) = split_f32(u);
    let (f, hfsq, tail) = log_parts_f32(m);
    let y = k * LN2_HI_F32 + (((tail + (k * LN2_LO_F32 + c / u)) - hfsq) + f);
    if x == 0.0 {
        x
    } else if x == -1.0 {
        f32::NEG_INFINITY
    } else if !(x >= -1.0) {
        f32::NAN
    } else if x == f32::INFINITY {
        x
    } else {
        y
    }
}

/// Hyperbolic tangent (at most 3 ulp; 2.50 measured, near 4.5, where
/// `2 + t` rounds): `-t / (2 + t)` with `t = e^(-2|x|)
/// - 1` (exact for tiny `x`, `1` once `t` reaches `-1`), the sign of `x`.
#[inline(always)]
pub fn tanh_f32(x: f32) -> f32 {
    // tanh rounds to 1 past 9.02.
    let a = x.abs();
    let a = if a > 10.0 { 10.0 } else { a };
    // `expm1_f32(-2a)` over `[-20, 0]`, where it takes its small form
    // (`2^n (e^r - 1) + (2^n - 1)`, `n` in `[-29, 0]`): the same bits
    // without the large form, the clamps and the tests for zero and NaN
    // (zero gives `+0` here, `-t / (2 + t)` is `-0`, and the sign of `x`
    // follows; NaN runs through). A third less work per element.
    let (ni, em) = expm1_parts_f32(-2.0 * a);
    let p = pow2i_f32(ni);
    let t = p * em + (p - 1.0);
    (-t / (2.0 + t)).copysign(x)
}

/// The logistic function `1 / (1 + e^-x)` (at most 3 ulp; 2.40 measured,
/// near -4.16, below 2 for `x >= 0`): with `e = e^-|x|`, `1 / (1 + e)` for `x >= 0` and `e / (1 + e)` below, so that
/// neither side overflows and the far negative tail keeps its precision.
#[inline(always)]
pub fn sigmoid_f32(x: f32) -> f32 {
    let e = exp_f32(-x.abs());
    let d = 1.0 + e;
    if x >= 0.0 {
        1.0 / d
    } else {
        e / d
    }
}

/// `e^v` for `v` in `[-87, 0]`: the same bits as `arith::exp_f32` there
/// (its reduction and polynomial) with `2^n` applied by one multiplication
/// (normal for these `n`), without the clamps and the NaN test, which
/// `erf_f32`'s argument never needs: a tenth less work for it.
#[inline(always)]
fn exp_neg_f32(v: f32) -> f32 {
    let (er, ni) = crate::arith::exp_reduced_f32(v);
    er * pow2i_f32(ni)
}

/// The error function (at most 2 ulp; 1.55 measured on every `f32`, near
/// 1.060): `x P(x^2)` below 0.84375, `1 - e^(R(x))` above, where `R` is a
/// degree-5 polynomial in `x - 0.84375` fitted to `ln(erfc(x))` on
/// `[0.84375, 3.92]` (past 3.92 `erf` rounds to 1), both fitted for this
/// module. `R` comes from `benches/python/fit_erf.py`: a least-squares fit
/// reweighted towards minimax (Lawson) of `erfc(x) (R(x) - ln(erfc(x)))`,
/// the error `e^R` carries into `1 - e^R` in units of its last place,
/// then rounded to `f32` and checked on every `f32` of the range with this
/// arithmetic (fused multiply-adds, as here) and `exp_neg_f32`. Centred on the
/// split, `R`'s terms are small where `e^R` matters (near 0.84375,
/// `e^R` about 0.23); far out, where `R` is large and rounds coarsely,
/// `e^R` is too small to reach `1 - e^R`'s last place. The earlier form
/// (`1 - e^(-x^2) Q(x)`, a 13-term `Q`) took about 17 operations more.
#[inline(always)]
pub fn erf_f32(x: f32) -> f32 {
    let a = x.abs();
    let z = a * a;
    let mut p = 8.889_625_7e-5f32;
    p = p.mul_add(z, -8.255_121e-4);
    p = p.mul_add(z, 5.210_120_4e-3);
    p = p.mul_add(z, -2.686_276_8e-2);
    p = p.mul_add(z, 1.128_375_2e-1);
    p = p.mul_add(z, -3.761_263_7e-1);
    // 2/sqrt(pi) - 1: x + x (P - 1) rounds once at the end, where x P
    // would round 2/sqrt(pi) and the product (2 ulp near 0).
    p = p.mul_add(z, 1.283_791_7e-1);
    let small = a.mul_add(p, a);
    // The clamp keeps `R` within `exp_neg_f32`'s range (`R(3.92)` is
    // -17.4, `R(0)` -0.0015) and `inf` away from the polynomial.
    let ac = if a > 3.92 { 3.92 } else { a };
    let u = ac - 0.843_75;
    let mut r = -1.310_284_7e-3f32;
    r = r.mul_add(u, 1.049_794_5e-2);
    r = r.mul_add(u, -4.767_174_6e-2);
    r = r.mul_add(u, -8.222_354e-1);
    r = r.mul_add(u, -2.378_687_1);
    r = r.mul_add(u, -1.457_686);
    let big = 1.0 - exp_neg_f32(r);
    let y = if a < 0.843_75 { small } else { big };
    if x.is_nan() {
        x
    } else {
        y.copysign(x)
    }
}

// ---------------------------------------------------------------- f64 core

const MAGIC_F64: f64 = 6_755_399_441_055_744.0; // 1.5 * 2^52
const LOG2E_F64: f64 = std::f64::consts::LOG2_E;
// ln 2 in two parts (fdlibm's); n * LN2_HI_F64 is exact for |n| < 2^20.
const LN2_HI_F64: f64 = 6.931_471_803_691_238_164_90e-1;
const LN2_LO_F64: f64 = 1.908_214_929_270_587_700_02e-10;
const PIO2_HI: f64 = std::f64::consts::FRAC_PI_2;
const PIO2_LO: f64 = 6.123_233_995_736_766_035_87e-17;
const PIO4_HI: f64 = std::f64::consts::FRAC_PI_4;
const PIO4_LO: f64 = 3.061_616_997_868_383_017_93e-17;
const PI_HI: f64 = std::f64::consts::PI;
const PI_LO: f64 = 1.224_646_799_147_353_207_17e-16;

/// `2^n` for `n` in `[-1022, 1023]` (other `n` give garbage, never a panic).
#[inline(always)]
fn pow2i_f64(n: i64) -> f64 {
    f64::from_bits((n.wrapping_add(1023) as u64).wrapping_shl(52))
}

/// `x = n ln 2 + r`, `|r| <= ln 2 / 2`, for `x` already clamped to a few
/// thousand: `(n, n as an integer, r)`.
#[inline(always)]
fn reduce_ln2_f64(c: f64) -> (f64, i64, f64) {
    let shifted = c * LOG2E_F64 + MAGIC_F64;
    let n = shifted - MAGIC_F64;
    let ni = (shifted.to_bits() as i64).wrapping_sub(MAGIC_F64.to_bits() as i64);
    (n, ni, c - n * LN2_HI_F64 - n * LN2_LO_F64)
}

/// `(e^r - 1 - r) / r^2` for `|r| <= 0.35`: the Taylor series to `r^14`
/// (the first term left out is below 2^-60 of the result).
#[inline(always)]
fn expm1_tail_f64(r: f64) -> f64 {
    let mut h = 1.0 / 87_178_291_200.0f64; // 1/14!
    h = h * r + 1.0 / 6_227_020_800.0;
    h = h * r + 1.0 / 479_001_600.0;
    h = h * r + 1.0 / 39_916_800.0;
    h = h * r + 1.0 / 3_628_800.0;
    h = h * r + 1.0 / 362_880.0;
    h = h * r + 1.0 / 40_320.0;
    h = h * r + 1.0 / 5_040.0;
    h = h * r + 1.0 / 720.0;
    h = h * r + 1.0 / 120.0;
    h = h * r + 1.0 / 24.0;
    h = h * r + 1.0 / 6.0;
    h * r + 0.5
}

/// `e^x` (at most 1 ulp, see the tests): `x = n ln 2 + r`, the Taylor
/// series of `e^r`, `2^n` in two halves (gradual underflow, overflow to
/// `inf`).
#[inline(always)]
pub fn exp_f64(x: f64) -> f64 {
    let c = if x < -746.0 {
        -746.0
    } else if x > 710.0 {
        710.0
    } else {
        x
    };
    let (_, ni, r) = reduce_ln2_f64(c);
    let er = 1.0 + (r + r * r * expm1_tail_f64(r));
    // n in [-1077, 1025]; halves by a logical shift of n + 2048.
    let a = ((ni.wrapping_add(2048) as u64) >> 1) as i64 - 1024;
    let y = er * pow2i_f64(a) * pow2i_f64(ni.wrapping_sub(a));
    if x.is_nan() {
        x
    } else {
        y
    }
}

/// `e^x - 1`, accurate near 0 (at most 2 ulp): as `expm1_f32`.
#[inline(always)]
pub fn expm1_f64(x: f64) -> f64 {
    // Below -40 the result rounds to -1 (e^-40 < 2^-54); as `expm1_f32`.
    let c = if x < -40.0 {
        -40.0
    } else if x > 710.0 {
        710.0
    } else {
        x
    };
    let (_, ni, r) = reduce_ln2_f64(c);
    let em = r + r * r * expm1_tail_f64(r);
    let t = pow2i_f64(ni);
    let small = t * em + (t - 1.0);
    let nb = if ni > 54 { ni } else { 54 };
    let a = ((nb as u64) >> 1) as i64; // nb > 0: a logical shift
    let big = (em + 1.0) * pow2i_f64(a) * pow2i_f64(nb.wrapping_sub(a)) - 1.0;
    let y = if ni > 53 { big } else { small };
    if x == 0.0 || x.is_nan() {
        x
    } else {
        y
    }
}

/// As `log_parts_f32`, the atanh series to `s^21` (`s^2 <= 0.0295`: the
/// first term left out is below 2^-60 of the result).
#[inline(always)]
fn log_parts_f64(m: f64) -> (f64, f64, f64) {
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    let mut r = 2.0 / 21.0f64;
    r = r * z + 2.0 / 19.0;
    r = r * z + 2.0 / 17.0;
    r = r * z + 2.0 / 15.0;
    r = r * z + 2.0 / 13.0;
    r = r * z + 2.0 / 11.0;
    r = r * z + 2.0 / 9.0;
    r = r * z + 2.0 / 7.0;
    r = r * z + 2.0 / 5.0;
    r = r * z + 2.0 / 3.0;
    let hfsq = 0.5 * f * f;
    (f, hfsq, s * (hfsq + r * z))
}

/// `x = 2^k m`, `m` in `[sqrt(1/2), sqrt(2))`, for finite `x > 0`.
#[inline(always)]
fn split_f64(x: f64) -> (f64, f64) {
    let sub = x < f64::MIN_POSITIVE;
    let xs = if sub { x * 18_014_398_509_481_984.0 } else { x }; // 2^54
    let adj = if sub { 54.0 } else { 0.0 };
    let ix = xs.to_bits().wrapping_add(0x3ff0_0000_0000_0000 - 0x3fe6_a09e_667f_3bcd);
    // k + 1023 from the exponent bits, converted exactly through 2^52.
    let kb = f64::from_bits(0x4330_0000_0000_0000 | (ix >> 52));
    let k = kb - (4_503_599_627_370_496.0 + 1023.0) - adj;
    let m = f64::from_bits((ix & 0x000f_ffff_ffff_ffff).wrapping_add(0x3fe6_a09e_667f_3bcd));
    (k, m)
}

#[inline(always)]
fn log_special_f64(x: f64, y: f64) -> f64 {
    if x == 0.0 {
        f64::NEG_INFINITY
    } else if !(x >= 0.0) {
        f64::NAN
    } else if x == f64::INFINITY {
        x
    } else {
        y
    }
}

/// Natural logarithm (at most 1 ulp).
#[inline(always)]
pub fn ln_f64(x: f64) -> f64 {
    let (k, m) = split_f64(x);
    let (f, hfsq, tail) = log_parts_f64(m);
    let y = k * LN2_HI_F64 + (((tail + k * LN2_LO_F64) - hfsq) + f);
    log_special_f64(x, y)
}

/// Base-2 logarithm (at most 2 ulp).
#[inline(always)]
pub fn log2_f64(x: f64) -> f64 {
    let (k, m) = split_f64(x);
    let (f, hfsq, tail) = log_parts_f64(m);
    let hi = f - hfsq;
    let lo = (f - hi) - hfsq + tail;
    let y = k + (hi * LOG2E_F64 + lo * LOG2E_F64);
    log_special_f64(x, y)
}

/// Base-10 logarithm (at most 2 ulp).
#[inline(always)]
pub fn log10_f64(x: f64) -> f64 {
    const L10_2_HI: f64 = 3.010_299_956_636_117_713_06e-1;
    const L10_2_LO: f64 = 3.694_239_077_158_930_786_16e-13;
    const LOG10E: f64 = std::f64::consts::LOG10_E;
    let (k, m) = split_f64(x);
    let (f, hfsq, tail) = log_parts_f64(m);
    let hi = f - hfsq;
    let lo = (f - hi) - hfsq + tail;
    let y = k * L10_2_HI + (k * L10_2_LO + (hi * LOG10E + lo * LOG10E));
    log_special_f64(x, y)
}

/// `ln(1 + x)`, accurate near 0 (at most 2 ulp): as `log1p_f32`.
#[inline(always)]
pub fn log1p_f64(x: f64) -> f64 {
    let u = 1.0 + x;
    let c = if x < 1.0 { x - (u - 1.0) } else { 1.0 - (u - x) };
    let (k, m) = split_f64(u);
    let (f, hfsq, tail) = log_parts_f64(m);
    let y = k * LN2_HI_F64 + (((tail + (k * LN2_LO_F64 + c / u)) - hfsq) + f);
    if x == 0.0 {
        x
    } else if x == -1.0 {
        f64::NEG_INFINITY
    } else if !(x >= -1.0) {
        f64::NAN
    } else if x == f64::INFINITY {
        x
    } else {
        y
    }
}

/// Hyperbolic tangent (at most 3 ulp): as `tanh_f32`.
#[inline(always)]
pub fn tanh_f64(x: f64) -> f64 {
    // tanh rounds to 1 past 19.1.
    let a = x.abs();
    let a = if a > 20.0 { 20.0 } else { a };
    let t = expm1_f64(-2.0 * a);
    (-t / (2.0 + t)).copysign(x)
}

/// The logistic function (at most 2 ulp): as `sigmoid_f32`.
#[inline(always)]
pub fn sigmoid_f64(x: f64) -> f64 {
    let e = exp_f64(-x.abs());
    let d = 1.0 + e;
    if x >= 0.0 {
        1.0 / d
    } else {
        e / d
    }
}

/// Hyperbolic sine (at most 3 ulp): `(t + t / (t + 1)) / 2` with `t =
/// e^|x| - 1` (exact near 0); past 709, `(e^(|x|/2) / 2) e^(|x|/2)` so that the
/// results just below overflow stay finite.
#[inline(always)]
pub fn sinh_f64(x: f64) -> f64 {
    let a = x.abs();
    let t = expm1_f64(a);
    let mid = 0.5 * (t + t / (t + 1.0));
    let h = exp_f64(0.5 * a);
    let big = (0.5 * h) * h;
    (if a > 709.0 { big } else { mid }).copysign(x)
}

/// Hyperbolic cosine (at most 3 ulp): `(e + 1 / e) / 2`, past 709 as
/// `sinh_f64`.
#[inline(always)]
pub fn cosh_f64(x: f64) -> f64 {
    let a = x.abs();
    let e = exp_f64(a);
    let mid = 0.5 * (e + 1.0 / e);
    let h = exp_f64(0.5 * a);
    let big = (0.5 * h) * h;
    if a > 709.0 {
        big
    } else {
        mid
    }
}

/// Inverse hyperbolic sine (at most 2 ulp): `log1p(a + a^2 / (1 + sqrt(1 +
/// a^2)))` (no cancellation near 0), `ln(a) + ln 2` past 2^28.
#[inline(always)]
pub fn asinh_f64(x: f64) -> f64 {
    let a = x.abs();
    let a2 = a * a;
    let mid = log1p_f64(a + a2 / (1.0 + (1.0 + a2).sqrt()));
    let big = ln_f64(a) + std::f64::consts::LN_2;
    (if a > 268_435_456.0 { big } else { mid }).copysign(x)
}

/// Inverse hyperbolic cosine (at most 2 ulp): `log1p(t + sqrt(2t + t^2))`
/// with `t = x - 1` (exact near 1), `ln(x) + ln 2` past 2^28; NaN below 1.
#[inline(always)]
pub fn acosh_f64(x: f64) -> f64 {
    let t = x - 1.0;
    let mid = log1p_f64(t + (2.0 * t + t * t).sqrt());
    let big = ln_f64(x) + std::f64::consts::LN_2;
    if !(x >= 1.0) {
        f64::NAN
    } else if x > 268_435_456.0 {
        big
    } else {
        mid
    }
}

/// Inverse hyperbolic tangent (at most 2 ulp): `log1p(2a / (1 - a)) / 2`.
#[inline(always)]
pub fn atanh_f64(x: f64) -> f64 {
    let a = x.abs();
    (0.5 * log1p_f64((a + a) / (1.0 - a))).copysign(x)
}

/// Arctangent (at most 2 ulp): `|x|` reduced to `|t| <= tan(pi/8)` by
/// `atan(a) = pi/2 + atan(-1/a)` or `pi/4 + atan((a - 1) / (a + 1))`, then
/// `t + t^3 P(t^2)` (fitted, Chebyshev, for this module).
#[inline(always)]
pub fn atan_f64(x: f64) -> f64 {
    let a = x.abs();
    let big = a > 2.414_213_562_373_095;
    let mid = a > 0.414_213_562_373_095_03;
    // Both quotients computed, then chosen: a division inside a branch
    // keeps LLVM from turning the branch into a select.
    let (inv, ratio) = (-1.0 / a, (a - 1.0) / (a + 1.0));
    let t = if big {
        inv
    } else if mid {
        ratio
    } else {
        a
    };
    let (hi, lo) = if big {
        (PIO2_HI, PIO2_LO)
    } else if mid {
        (PIO4_HI, PIO4_LO)
    } else {
        (0.0, 0.0)
    };
    let z = t * t;
    let mut p = -0.019_176_887_119_062_259f64;
    p = p * z + 0.039_231_658_295_587_191;
    p = p * z - 0.050_854_497_379_402_599;
    p = p * z + 0.058_581_489_128_022_099;
    p = p * z - 0.066_645_114_473_819_48;
    p = p * z + 0.076_921_831_908_260_866;
    p = p * z - 0.090_909_045_781_239_019;
    p = p * z + 0.111_111_110_152_563_62;
    p = p * z - 0.142_857_142_846_665_43;
    p = p * z + 0.199_999_999_999_955_21;
    p = p * z - 0.333_333_333_333_333_3;
    (hi + (t + (lo + t * (z * p)))).copysign(x)
}

/// Arcsine (at most 3 ulp): `atan(x / sqrt((1 - x)(1 + x)))`.
#[inline(always)]
pub fn asin_f64(x: f64) -> f64 {
    atan_f64(x / ((1.0 - x) * (1.0 + x)).sqrt())
}

/// Arccosine (at most 2 ulp): `2 atan(sqrt((1 - x) / (1 + x)))`.
#[inline(always)]
pub fn acos_f64(x: f64) -> f64 {
    2.0 * atan_f64(((1.0 - x) / (1.0 + x)).sqrt())
}

/// The angle of `(x, y)` (at most 2 ulp): `atan(|y| / |x|)`, mirrored for
/// `x` negative (`-0` included) and signed as `y`; C99's values for zeros
/// and infinities.
#[inline(always)]
pub fn atan2_f64(y: f64, x: f64) -> f64 {
    let (ay, ax) = (y.abs(), x.abs());
    let a = atan_f64(ay / ax);
    let a = if ay == f64::INFINITY && ax == f64::INFINITY {
        PIO4_HI
    } else if ay == 0.0 {
        0.0
    } else {
        a
    };
    let a = if x.is_sign_negative() { (PI_HI - a) + PI_LO } else { a };
    if x.is_nan() || y.is_nan() {
        x + y
    } else {
        a.copysign(y)
    }
}

/// `erf(x) / x - 1` as a polynomial in `x^2` on `[0, 0.84375^2]`, highest
/// power first (fitted, Chebyshev, for this module).
const ERF_SMALL_F64: [f64; 12] = [
    -8.879702704985848e-10,
    1.4205594850504056e-08,
    -1.630309508468887e-07,
    1.6457914349746103e-06,
    -1.4925463570287675e-05,
    0.00012055327421282683,
    -0.000854832691425112,
    0.005223977624080742,
    -0.026866170645031,
    0.11283791670954745,
    -0.3761263890318375,
    0.1283791670955126,
];
/// `erfc(x) e^(x^2)` on `[0.84375, 2.0]` as a polynomial in `x - 1.421875`, highest
/// power first.
const ERFC_Q1_F64: [f64; 18] = [
    -5.140343813421903e-09,
    1.9426588404561217e-08,
    -6.410074485927317e-08,
    2.3036649199981386e-07,
    -8.125053389868845e-07,
    2.776717147539732e-06,
    -9.228120216402968e-06,
    2.97789690174504e-05,
    -9.309686910859258e-05,
    0.00028126737680202375,
    -0.0008188629375198073,
    0.002289390207578033,
    -0.006121246984173695,
    0.015571818680250296,
    -0.03744429714637302,
    0.08438474736545869,
    -0.17615100837982156,
    0.3348494624055177,
];
/// `erfc(x) e^(x^2)` on `[2.0, 3.5]` as a polynomial in `x - 2.75`, highest
/// power first.
const ERFC_Q2_F64: [f64; 18] = [
    -1.9033341776852134e-11,
    8.88871719258283e-11,
    -3.601905695321358e-10,
    1.6194561547466204e-09,
    -7.2012225046835695e-09,
    3.121531648858328e-08,
    -1.3262502467727597e-07,
    5.519738191507474e-07,
    -2.2473735137402935e-06,
    8.940156439196906e-06,
    -3.469860956890751e-05,
    0.0001311818004875362,
    -0.0004821950849815436,
    0.0017195818852915683,
    -0.005934337896997966,
    0.019758592987322816,
    -0.06323763756063484,
    0.1936620962790687,
];
/// `erfc(x) e^(x^2)` on `[3.5, 6.0]` as a polynomial in `x - 4.75`, highest
/// power first.
const ERFC_Q3_F64: [f64; 18] = [
    -2.7193036019864156e-14,
    1.6893363955995483e-13,
    -8.473208026588069e-13,
    5.12800546963121e-12,
    -3.124412795480489e-11,
    1.8494111335759245e-10,
    -1.0807407331242056e-09,
    6.242305999386548e-09,
    -3.5595758245294924e-08,
    2.0029203969026852e-07,
    -1.1115677167336422e-06,
    6.081114529130165e-06,
    -3.27757811351432e-05,
    0.00017392830404389724,
    -0.0009080988970296605,
    0.00466132636897215,
    -0.02350344859816315,
    0.11630270721024731,
];

/// The error function (at most 2 ulp): `x + x P(x^2)` below 0.84375, `1 -
/// e^(-x^2) Q(x)` up to 6 (where `erf` rounds to 1), `Q = erfc(x) e^(x^2)`
/// a degree-17 polynomial on each of three intervals, its coefficients
/// chosen per element by selects.
#[inline(always)]
pub fn erf_f64(x: f64) -> f64 {
    let a = x.abs();
    let z = a * a;
    let mut p = ERF_SMALL_F64[0];
    for c in &ERF_SMALL_F64[1..] {
        p = p * z + c;
    }
    let small = a + a * p;
    let ac = if a > 6.0 { 6.0 } else { a };
    let (first, second) = (ac < 2.0, ac < 3.5);
    let u = ac
        - if first {
            1.421_875
        } else if second {
            2.75
        } else {
            4.75
        };
    let mut q = 0.0;
    for i in 0..ERFC_Q1_F64.len() {
        let c = if first {
            ERFC_Q1_F64[i]
        } else if second {
            ERFC_Q2_F64[i]
        } else {
            ERFC_Q3_F64[i]
        };
        q = q * u + c;
    }
    let big = 1.0 - exp_f64(-(ac * ac)) * q;
    let y = if a < 0.843_75 { small } else { big };
    if x.is_nan() {
        x
    } else {
        y.copysign(x)
    }
}

/// `a b` exactly, as `(hi, lo)` with `hi = fl(a b)`: Dekker's product
/// (Veltkamp's split; no `mul_add`, so both CPU forms agree). `|a|, |b| <
/// 2^995`.
#[inline(always)]
fn two_prod(a: f64, b: f64) -> (f64, f64) {
    const SPLIT: f64 = 134_217_729.0; // 2^27 + 1
    let split = |v: f64| {
        let c = SPLIT * v;
        let hi = c - (c - v);
        (hi, v - hi)
    };
    let (ah, al) = split(a);
    let (bh, bl) = split(b);
    let p = a * b;
    (p, ((ah * bh - p) + ah * bl + al * bh) + al * bl)
}

/// `a + b` exactly, as `(sum, error)` (Knuth's two-sum).
#[inline(always)]
fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}

/// `ln(x)` for finite `x > 0` as a double-double `(hi, lo)` within about
/// 2^-64 of the value: `k ln 2 + 2s + 2s^3/3 + ...` (`2 atanh(s)`, `s =
/// f / (2 + f)`) with `s` in two parts (its division corrected by the
/// exact residual), `2s^3/3` in double-double, `ln 2` in two parts; only
/// the series from `s^5` on (below 2^-12 of the result) is plain `f64`.
#[inline(always)]
fn ln_dd(x: f64) -> (f64, f64) {
    const TT_HI: f64 = 2.0 / 3.0;
    const TT_LO: f64 = 3.700_743_415_417_188e-17; // 2/3 - TT_HI
    let (k, m) = split_f64(x);
    let f = m - 1.0;
    let d = 2.0 + f;
    let dl = f - (d - 2.0); // 2 + f = d + dl exactly
    let s = f / d;
    let (ph, pl) = two_prod(s, d);
    let sl = (((f - ph) - pl) - s * dl) / d;
    // s^3 = (zh + zl) s + 3 s^2 sl, then times 2/3.
    let (zh, zl) = two_prod(s, s);
    let (ch, cl) = two_prod(zh, s);
    let cl = cl + zl * s + 3.0 * zh * sl;
    let (th, tl) = two_prod(ch, TT_HI);
    let tl = tl + ch * TT_LO + cl * TT_HI;
    let mut r = 2.0 / 23.0f64;
    r = r * zh + 2.0 / 21.0;
    r = r * zh + 2.0 / 19.0;
    r = r * zh + 2.0 / 17.0;
    r = r * zh + 2.0 / 15.0;
    r = r * zh + 2.0 / 13.0;
    r = r * zh + 2.0 / 11.0;
    r = r * zh + 2.0 / 9.0;
    r = r * zh + 2.0 / 7.0;
    r = r * zh + 2.0 / 5.0;
    let tail = s * zh * zh * r; // the series from 2s^5/5 on
    let (hi, e1) = two_sum(k * LN2_HI_F64, 2.0 * s);
    let (hi, e2) = two_sum(hi, th);
    let lo = e1 + e2 + (2.0 * sl + tl + tail + k * LN2_LO_F64);
    let h = hi + lo;
    (h, lo - (h - hi))
}

/// `x ** y` for `f64` (at most 1 ulp, see the tests): `e^(y ln|x|)` with
/// the logarithm and its product with `y` in double-double, the product's
/// low part added to the exponential's reduced argument; the special cases
/// as `pow_f32`.
#[inline(always)]
pub fn pow_f64(x: f64, y: f64) -> f64 {
    const TWO52: f64 = 4_503_599_627_370_496.0;
    let ax = x.abs();
    let (lh, ll) = ln_dd(ax);
    let lh = if ax == 0.0 {
        f64::NEG_INFINITY
    } else if ax == f64::INFINITY || ax.is_nan() {
        ax
    } else {
        lh
    };
    // Past 2^900 every finite product overflows or underflows `exp` anyway.
    let yc = if y > 8.0e270 {
        8.0e270
    } else if y < -8.0e270 {
        -8.0e270
    } else {
        y
    };
    let (_, tl) = two_prod(yc, lh);
    let th = y * lh;
    let tl = tl + yc * ll;
    let tl = if th.abs() < 1000.0 { tl } else { 0.0 };
    // e^(th + tl): th reduced as `exp_f64` does, tl added to the reduced
    // argument, so that the one rounding of consequence is `1 + (..)`.
    let c = if th < -746.0 {
        -746.0
    } else if th > 710.0 {
        710.0
    } else {
        th
    };
    let (_, ni, r) = reduce_ln2_f64(c);
    let r = r + tl;
    let er = 1.0 + (r + r * r * expm1_tail_f64(r));
    let a = ((ni.wrapping_add(2048) as u64) >> 1) as i64 - 1024;
    let r = er * pow2i_f64(a) * pow2i_f64(ni.wrapping_sub(a));
    let r = if th.is_nan() { th } else { r };
    let ay = y.abs();
    let s = ay + TWO52;
    let is_int = ay >= TWO52 || s - TWO52 == ay;
    let odd = if ay < TWO52 { is_int && (s.to_bits() & 1) == 1 } else { ay < 2.0 * TWO52 && (ay.to_bits() & 1) == 1 };
    let r = if x.is_sign_negative() && odd { -r } else { r };
    let r = if x < 0.0 && x > f64::NEG_INFINITY && !is_int { f64::NAN } else { r };
    if y == 0.0 || x == 1.0 || (x == -1.0 && ay == f64::INFINITY) {
        1.0
    } else {
        r
    }
}

// ------------------------------------------ f32 through f64, sin cos tan

/// Hyperbolic sine, through `f64` (correctly rounded but for rare ties).
#[inline(always)]
pub fn sinh_f32(x: f32) -> f32 {
    sinh_f64(x as f64) as f32
}

/// Hyperbolic cosine, through `f64`.
#[inline(always)]
pub fn cosh_f32(x: f32) -> f32 {
    cosh_f64(x as f64) as f32
}

/// Inverse hyperbolic sine, through `f64`.
#[inline(always)]
pub fn asinh_f32(x: f32) -> f32 {
    asinh_f64(x as f64) as f32
}

/// Inverse hyperbolic cosine, through `f64`.
#[inline(always)]
pub fn acosh_f32(x: f32) -> f32 {
    acosh_f64(x as f64) as f32
}

/// Inverse hyperbolic tangent, through `f64`.
#[inline(always)]
pub fn atanh_f32(x: f32) -> f32 {
    atanh_f64(x as f64) as f32
}

/// Arctangent, through `f64`.
#[inline(always)]
pub fn atan_f32(x: f32) -> f32 {
    atan_f64(x as f64) as f32
}

/// Arcsine, through `f64`.
#[inline(always)]
pub fn asin_f32(x: f32) -> f32 {
    asin_f64(x as f64) as f32
}

/// Arccosine, through `f64`.
#[inline(always)]
pub fn acos_f32(x: f32) -> f32 {
    acos_f64(x as f64) as f32
}

/// `atan2(y, x)`, through `f64`.
#[inline(always)]
pub fn atan2_f32(y: f32, x: f32) -> f32 {
    atan2_f64(y as f64, x as f64) as f32
}

/// `x ** y` for floats (correctly rounded but for rare ties): `e^(y ln|x|)`
/// in `f64` (29 more bits than the result needs), then the sign and the
/// special cases of C99's `pow`: `x ** 0 = 1` and `1 ** y = 1` even for
/// NaN, a negative finite `x` to a non-integer power is NaN, an odd integer
/// power keeps the sign of `x` (`-0` and `-inf` included), `(-1) ** ±inf = 1`.
#[inline(always)]
pub fn pow_f32(x: f32, y: f32) -> f32 {
    let (xd, yd) = (x as f64, y as f64);
    let r = exp_f64(yd * ln_f64(xd.abs()));
    let ay = yd.abs();
    // |y| < 2^52: adding 2^52 rounds it to an integer whose parity is the
    // last bit. Every f32 of 2^24 or more is an even integer.
    let s = ay + 4_503_599_627_370_496.0;
    let is_int = ay >= 4_503_599_627_370_496.0 || s - 4_503_599_627_370_496.0 == ay;
    let odd = is_int && ay < 16_777_216.0 && (s.to_bits() & 1) == 1;
    let r = if x.is_sign_negative() && odd { -r } else { r };
    let r = if x < 0.0 && x > f32::NEG_INFINITY && !is_int { f64::NAN } else { r };
    let r = if y == 0.0 || x == 1.0 || (x == -1.0 && ay == f64::INFINITY) { 1.0 } else { r };
    r as f32
}

/// `v` negated when `x` is negative (its sign bit), for odd functions
/// computed on `|x|`.
#[inline(always)]
fn flip_f32(v: f32, x: f32) -> f32 {
    f32::from_bits(v.to_bits() ^ (x.to_bits() & 0x8000_0000))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bit patterns between sweep points: every exponent of both signs is
    /// visited either way. Dense (~17 million `f32` arguments per function)
    /// in release builds, sparse in debug ones; `EINLANG_VMATH_STRIDE`
    /// overrides (1 is exhaustive).
    fn stride() -> u64 {
        let default = if cfg!(debug_assertions) { 65_521 } else { 251 };
        std::env::var("EINLANG_VMATH_STRIDE").ok().and_then(|s| s.parse().ok()).unwrap_or(default)
    }

    /// Random `f64` arguments per set (three sets) for the `f64` sweeps.
    fn count() -> usize {
        if cfg!(debug_assertions) {
            20_000
        } else {
            1_000_000
        }
    }

    /// Units in the last place of an `f32` result `got` from the exact
    /// `want`: the ulp is that of `want`'s binade (subnormal spacing below
    /// the normal range). NaN must meet NaN, and an infinite or overflowing
    /// `want` the infinity it rounds to.
    pub(super) fn err32(got: f32, want: f64) -> f64 {
        if want.is_nan() || got.is_nan() {
            return if want.is_nan() && got.is_nan() { 0.0 } else { f64::INFINITY };
        }
        let w = want as f32;
        if w.is_infinite() || got.is_infinite() {
            return if got == w { 0.0 } else { f64::INFINITY };
        }
        let e = ((want.abs().to_bits() >> 52) as i32 - 1023).max(-126);
        (got as f64 - want).abs() / 2f64.powi(e - 23)
    }

    /// Units in the last place of an `f64` result from the reference.
    pub(super) fn err64(got: f64, want: f64) -> f64 {
        if want.is_nan() || got.is_nan() {
            return if want.is_nan() && got.is_nan() { 0.0 } else { f64::INFINITY };
        }
        if want.is_infinite() || got.is_infinite() {
            return if got == want { 0.0 } else { f64::INFINITY };
        }
        let e = ((want.abs().to_bits() >> 52) as i32 - 1023).max(-1022);
        (got - want).abs() / (2f64.powi(e) * 2f64.powi(-52))
    }

    /// Every `stride()`-th `f32` bit pattern (both signs, all exponents,
    /// subnormals, infinities and NaNs) plus the special values: the worst
    /// error of `f` against `reference` computed in `f64`.
    pub(super) fn sweep32(name: &str, f: fn(f32) -> f32, reference: fn(f64) -> f64, bound: f64) -> f64 {
        let mut worst = (0.0f64, 0.0f32);
        let mut check = |x: f32| {
            let e = err32(f(x), reference(x as f64));
            if e > worst.0 || e.is_nan() {
                worst = (e, x);
            }
        };
        let specials = [
            0.0,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            f32::MIN_POSITIVE,
            -f32::MIN_POSITIVE,
            f32::from_bits(1),
            -f32::from_bits(1),
            f32::MAX,
            f32::MIN,
            1.0,
            -1.0,
            0.5,
            2.0,
            std::f32::consts::PI,
            std::f32::consts::FRAC_PI_2,
            std::f32::consts::FRAC_PI_4,
        ];
        specials.into_iter().for_each(&mut check);
        let step = stride();
        let mut bits = 0u64;
        while bits < 1 << 32 {
            check(f32::from_bits(bits as u32));
            bits += step;
        }
        eprintln!("{name}: at most {:.3} ulp (at {:e})", worst.0, worst.1);
        assert!(
            worst.0 <= bound,
            "{name}: {} ulp at {:e} ({:?} against {})",
            worst.0,
            worst.1,
            f(worst.1),
            reference(worst.1 as f64)
        );
        worst.0
    }

    /// xorshift64*: deterministic pseudo-random bits.
    struct Bits(u64);

    impl Bits {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }

        /// Uniform in `[-r, r)`.
        fn uniform(&mut self, r: f64) -> f64 {
            ((self.next() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0) * r
        }
    }

    /// `f64` arguments: random bit patterns (every exponent, both signs),
    /// uniform over `[-r, r]`, and log-uniform magnitudes from 2^-30 to `r`
    /// with random signs, plus the special values.
    pub(super) fn sweep64(name: &str, f: fn(f64) -> f64, reference: fn(f64) -> f64, r: f64, bound: f64) -> f64 {
        let mut worst = (0.0f64, 0.0f64);
        let mut check = |x: f64| {
            let e = err64(f(x), reference(x));
            if e > worst.0 || e.is_nan() {
                worst = (e, x);
            }
        };
        let specials = [
            0.0,
            -0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            f64::MIN_POSITIVE,
            f64::from_bits(1),
            -f64::from_bits(1),
            f64::MAX,
            f64::MIN,
            1.0,
            -1.0,
            0.5,
            2.0,
        ];
        specials.into_iter().for_each(&mut check);
        let mut rng = Bits(0x9e37_79b9_7f4a_7c15);
        for _ in 0..count() {
            check(f64::from_bits(rng.next()));
            check(rng.uniform(r));
            let mag = (rng.uniform(0.5) + 0.5) * (r.log2() + 30.0) - 30.0;
            check(2f64.powf(mag).copysign(rng.uniform(1.0)));
        }
        eprintln!("{name}: at most {:.3} ulp (at {:e})", worst.0, worst.1);
        assert!(
            worst.0 <= bound,
            "{name}: {} ulp at {:e} ({:?} against {})",
            worst.0,
            worst.1,
            f(worst.1),
            reference(worst.1)
        );
        worst.0
    }

    fn sigmoid_ref(x: f64) -> f64 {
        // The stable form with the platform's exp (no overflow either side).
        let e = (-x.abs()).exp();
        if x >= 0.0 {
            1.0 / (1.0 + e)
        } else {
            e / (1.0 + e)
        }
    }

    /// musl's `acosh` (the `libm` crate) returns numbers below -1 where the
    /// function is undefined; the reference is NaN there.
    fn acosh_ref(x: f64) -> f64 {
        if x >= 1.0 {
            libm::acosh(x)
        } else {
            f64::NAN
        }
    }

    #[test]
    fn f32_exponentials_and_logarithms() {
        sweep32("exp f32", exp_f32, f64::exp, 2.0);
        sweep32("expm1 f32", expm1_f32, f64::exp_m1, 2.0);
        sweep32("ln f32", ln_f32, f64::ln, 2.0);
        sweep32("log2 f32", log2_f32, f64::log2, 2.0);
        sweep32("log10 f32", log10_f32, f64::log10, 2.0);
        sweep32("log1p f32", log1p_f32, f64::ln_1p, 2.0);
    }

    #[test]
    fn f32_activations() {
        sweep32("tanh f32", tanh_f32, f64::tanh, 3.0);
        sweep32("sigmoid f32", sigmoid_f32, sigmoid_ref, 3.0);
        sweep32("erf f32", erf_f32, libm::erf, 2.0);
    }

    /// `erf_f32` on every `f32` from 0.5 to 4.5 of both signs (every
    /// 16th in debug builds): the split at 0.84375 and the end of `1 -
    /// e^R` at 3.92 included, then their neighbours, subnormals and the
    /// special values one by one. `EINLANG_VMATH_STRIDE=1` with this
    /// test's name covers all 2^32 patterns through `sweep32`.
    #[test]
    fn erf_f32_split_and_tail() {
        sweep32("erf f32", erf_f32, libm::erf, 2.0);
        let step = if cfg!(debug_assertions) { 16 } else { 1 };
        let mut worst = (0.0f64, 0.0f32);
        let (lo, hi) = (0.5f32.to_bits(), 4.5f32.to_bits());
        let mut bits = lo;
        while bits <= hi {
            for x in [f32::from_bits(bits), -f32::from_bits(bits)] {
                let e = err32(erf_f32(x), libm::erf(x as f64));
                if e > worst.0 {
                    worst = (e, x);
                }
            }
            bits += step;
        }
        eprintln!("erf f32 on [0.5, 4.5]: at most {:.3} ulp (at {:e})", worst.0, worst.1);
        assert!(worst.0 <= 2.0, "erf f32: {} ulp at {:e}", worst.0, worst.1);
        let split = 0.843_75f32;
        let end = 3.92f32;
        let near = |v: f32| [f32::from_bits(v.to_bits() - 1), v, f32::from_bits(v.to_bits() + 1)];
        for x in near(split).into_iter().chain(near(end)) {
            for x in [x, -x] {
                let e = err32(erf_f32(x), libm::erf(x as f64));
                assert!(e <= 2.0, "erf f32({x:e}) = {:e}: {e} ulp", erf_f32(x));
            }
        }
        // Where `erf` rounds to 1, it is 1 exactly, and far out too.
        for x in [4.0f32, 10.0, 1e30, f32::MAX, f32::INFINITY] {
            assert_eq!(erf_f32(x), 1.0);
            assert_eq!(erf_f32(-x), -1.0);
        }
        // Tiny arguments: `2x/sqrt(pi)` within 2 ulp, signs kept, zeros exact.
        for x in [f32::from_bits(1), f32::from_bits(0x007f_ffff), f32::MIN_POSITIVE, 1e-30, 1e-10] {
            for x in [x, -x] {
                let e = err32(erf_f32(x), libm::erf(x as f64));
                assert!(e <= 2.0, "erf f32({x:e}) = {:e}: {e} ulp", erf_f32(x));
                assert_eq!(erf_f32(x).is_sign_negative(), x < 0.0);
            }
        }
        assert_eq!(erf_f32(0.0).to_bits(), 0.0f32.to_bits());
        assert_eq!(erf_f32(-0.0).to_bits(), (-0.0f32).to_bits());
        assert!(erf_f32(f32::NAN).is_nan() && erf_f32(-f32::NAN).is_nan());
    }

    #[test]
    fn f32_through_f64() {
        sweep32("sinh f32", sinh_f32, f64::sinh, 1.0);
        sweep32("cosh f32", cosh_f32, f64::cosh, 1.0);
        sweep32("asinh f32", asinh_f32, libm::asinh, 1.0);
        sweep32("acosh f32", acosh_f32, acosh_ref, 1.0);
        sweep32("atanh f32", atanh_f32, libm::atanh, 1.0);
        sweep32("atan f32", atan_f32, f64::atan, 1.0);
        sweep32("asin f32", asin_f32, f64::asin, 1.0);
        sweep32("acos f32", acos_f32, f64::acos, 1.0);
    }

    #[test]
    fn f64_functions() {
        sweep64("exp f64", exp_f64, f64::exp, 750.0, 2.0);
        sweep64("expm1 f64", expm1_f64, f64::exp_m1, 750.0, 2.0);
        sweep64("ln f64", ln_f64, f64::ln, 1e300, 2.0);
        sweep64("log2 f64", log2_f64, f64::log2, 1e300, 2.0);
        sweep64("log10 f64", log10_f64, f64::log10, 1e300, 2.0);
        sweep64("log1p f64", log1p_f64, f64::ln_1p, 1e300, 2.0);
        sweep64("tanh f64", tanh_f64, f64::tanh, 30.0, 3.0);
        sweep64("sigmoid f64", sigmoid_f64, sigmoid_ref, 750.0, 3.0);
        sweep64("sinh f64", sinh_f64, f64::sinh, 720.0, 3.0);
        sweep64("cosh f64", cosh_f64, f64::cosh, 720.0, 3.0);
        sweep64("asinh f64", asinh_f64, libm::asinh, 1e300, 3.0);
        sweep64("acosh f64", acosh_f64, acosh_ref, 1e300, 3.0);
        sweep64("atanh f64", atanh_f64, libm::atanh, 1.0, 3.0);
        sweep64("atan f64", atan_f64, f64::atan, 1e300, 2.0);
        sweep64("asin f64", asin_f64, f64::asin, 1.0, 3.0);
        sweep64("acos f64", acos_f64, f64::acos, 1.0, 3.0);
        sweep64("erf f64", erf_f64, libm::erf, 7.0, 2.0);
    }

    /// Pairs of `f32` bit patterns at random, and pairs of moderate values,
    /// against `f64`.
    fn sweep32x2(
        name: &str,
        f: fn(f32, f32) -> f32,
        reference: fn(f64, f64) -> f64,
        moderate: (f64, f64),
        bound: f64,
    ) -> f64 {
        let mut worst = (0.0f64, 0.0f32, 0.0f32);
        let mut rng = Bits(0x2545_f491_4f6c_dd1d);
        let specials = [
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.5,
            -0.5,
            2.0,
            -2.0,
            3.0,
            -3.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            f32::MAX,
            f32::from_bits(1),
        ];
        let mut pairs: Vec<(f32, f32)> = specials.iter().flat_map(|&a| specials.iter().map(move |&b| (a, b))).collect();
        for _ in 0..count() * 4 {
            pairs.push((f32::from_bits(rng.next() as u32), f32::from_bits((rng.next() >> 32) as u32)));
            pairs.push((rng.uniform(moderate.0) as f32, rng.uniform(moderate.1) as f32));
        }
        for (a, b) in pairs {
            let e = err32(f(a, b), reference(a as f64, b as f64));
            if e > worst.0 || e.is_nan() {
                worst = (e, a, b);
            }
        }
        eprintln!("{name}: at most {:.3} ulp (at {:e}, {:e})", worst.0, worst.1, worst.2);
        assert!(worst.0 <= bound, "{name}: {} ulp at ({:e}, {:e})", worst.0, worst.1, worst.2);
        worst.0
    }

    #[test]
    fn f32_binary() {
        sweep32x2("atan2 f32", atan2_f32, f64::atan2, (10.0, 10.0), 1.0);
        sweep32x2("pow f32", pow_f32, f64::powf, (20.0, 30.0), 1.0);
        // Positive bases over a wide range.
        sweep32x2("pow f32 positive", |x, y| pow_f32(x.abs(), y), |x, y| x.abs().powf(y), (1e3, 12.0), 1.0);
    }

    #[test]
    fn f64_pow() {
        let mut rng = Bits(11);
        let mut worst = (0.0f64, 0.0, 0.0);
        let specials = [
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.5,
            -0.5,
            2.0,
            -2.0,
            3.0,
            -3.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            f64::MAX,
            f64::from_bits(1),
            1e300,
            -1e-300,
        ];
        let mut pairs: Vec<(f64, f64)> = specials.iter().flat_map(|&a| specials.iter().map(move |&b| (a, b))).collect();
        for _ in 0..count() {
            pairs.push((f64::from_bits(rng.next()), f64::from_bits(rng.next())));
            pairs.push((rng.uniform(20.0), rng.uniform(30.0)));
            pairs.push((rng.uniform(1e3).abs(), rng.uniform(100.0)));
            // Near 1 with large exponents: where ln's extra bits matter.
            pairs.push((1.0 + rng.uniform(1e-6), rng.uniform(1e8)));
            pairs.push((rng.uniform(4.0), (rng.next() % 200) as f64 - 100.0));
        }
        for (x, y) in pairs {
            let e = err64(pow_f64(x, y), x.powf(y));
            if e > worst.0 || e.is_nan() {
                worst = (e, x, y);
            }
        }
        eprintln!("pow f64: at most {:.3} ulp (at {:e}, {:e})", worst.0, worst.1, worst.2);
        assert!(worst.0 <= 1.5, "pow f64: {} ulp at ({:e}, {:e})", worst.0, worst.1, worst.2);
        assert_eq!(pow_f64(-2.0, 3.0), -8.0);
        assert!(err64(pow_f64(2.0, 0.5), std::f64::consts::SQRT_2) <= 1.0);
        assert!(err64(pow_f64(10.0, -2.0), 0.01) <= 1.0);
        assert_eq!(pow_f64(2.0, 10.0), 1024.0);
        assert_eq!(pow_f64(0.5, -3.0), 8.0);
        assert!(pow_f64(-8.0, 1.0 / 3.0).is_nan());
        assert_eq!(pow_f64(-0.0, -1.0), f64::NEG_INFINITY);
        assert_eq!(pow_f64(f64::NAN, 0.0), 1.0);
    }

    #[test]
    fn f64_atan2() {
        let mut rng = Bits(7);
        let mut worst = 0.0f64;
        for _ in 0..count() {
            for (y, x) in
                [(f64::from_bits(rng.next()), f64::from_bits(rng.next())), (rng.uniform(10.0), rng.uniform(10.0))]
            {
                worst = worst.max(err64(atan2_f64(y, x), y.atan2(x)));
            }
        }
        eprintln!("atan2 f64: at most {worst:.3} ulp");
        assert!(worst <= 3.0, "{worst}");
    }

    /// `exp_neg_f32` gives `exp_f32`'s bits on `[-87, 0]`: every
    /// `f32` there (as many as the stride visits, all of them at 1).
    #[test]
    fn exp_neg_matches_exp() {
        let step = stride().min(4096) as usize;
        for b in (0..=(87.0f32).to_bits()).step_by(step).chain([(87.0f32).to_bits()]) {
            let v = -f32::from_bits(b);
            assert_eq!(exp_neg_f32(v).to_bits(), exp_f32(v).to_bits(), "e^{v}");
        }
    }

    #[test]
    fn special_values() {
        let inf = f32::INFINITY;
        assert_eq!(ln_f32(0.0), -inf);
        assert_eq!(ln_f32(-0.0), -inf);
        assert!(ln_f32(-1.0).is_nan());
        assert!(ln_f32(f32::NAN).is_nan());
        assert_eq!(ln_f32(inf), inf);
        assert_eq!(ln_f32(1.0), 0.0);
        assert_eq!(log2_f32(8.0), 3.0);
        assert_eq!(log2_f32(f32::from_bits(1)), -149.0);
        assert_eq!(log10_f32(1000.0), 3.0);
        assert_eq!(log1p_f32(-1.0), -inf);
        assert!(log1p_f32(-2.0).is_nan());
        assert_eq!(log1p_f32(inf), inf);
        assert!(log1p_f32(-0.0).is_sign_negative());
        assert_eq!(log1p_f32(1e-30), 1e-30);
        assert_eq!(expm1_f32(-inf), -1.0);
        assert_eq!(expm1_f32(inf), inf);
        assert!(expm1_f32(-0.0).is_sign_negative());
        assert_eq!(expm1_f32(1e-30), 1e-30);
        assert!(err32(expm1_f32(88.7), (88.7f32 as f64).exp_m1()) <= 2.0);
        assert_eq!(tanh_f32(inf), 1.0);
        assert_eq!(tanh_f32(-inf), -1.0);
        assert_eq!(tanh_f32(20.0), 1.0);
        assert!(tanh_f32(-0.0).is_sign_negative());
        assert_eq!(tanh_f32(1e-30), 1e-30);
        assert!(tanh_f32(f32::NAN).is_nan());
        assert_eq!(sigmoid_f32(inf), 1.0);
        assert_eq!(sigmoid_f32(-inf), 0.0);
        assert_eq!(sigmoid_f32(0.0), 0.5);
        assert_eq!(sigmoid_f32(1e-30), 0.5);
        assert!(sigmoid_f32(f32::NAN).is_nan());
        // The far tail: e^-100, a subnormal, not 0.
        let tail = sigmoid_f32(-100.0);
        assert!(tail > 0.0 && err32(tail, (-100.0f64).exp()) <= 2.0);
        assert_eq!(erf_f32(inf), 1.0);
        assert_eq!(erf_f32(-inf), -1.0);
        assert!(erf_f32(-0.0).is_sign_negative());
        assert!(erf_f32(f32::NAN).is_nan());
        assert!(asin_f32(1.5).is_nan() && acos_f32(-1.5).is_nan() && acosh_f32(0.5).is_nan());
        assert_eq!(atanh_f32(1.0), inf);
        assert_eq!(acos_f32(-1.0), std::f32::consts::PI);
        assert_eq!(pow_f32(f32::NAN, 0.0), 1.0);
        assert_eq!(pow_f32(1.0, f32::NAN), 1.0);
        assert_eq!(pow_f32(-1.0, inf), 1.0);
        assert!(pow_f32(-2.0, 0.5).is_nan());
        assert_eq!(pow_f32(-2.0, 3.0), -8.0);
        assert_eq!(pow_f32(-0.0, -3.0), -inf);
        assert_eq!(pow_f32(-inf, 3.0), -inf);
        assert_eq!(pow_f32(-inf, 0.5), inf);
        assert_eq!(pow_f32(0.0, -1.0), inf);
        assert_eq!(pow_f32(2.0, 10.0), 1024.0);
        assert_eq!(atan2_f32(0.0, -0.0), std::f32::consts::PI);
        assert_eq!(atan2_f32(-0.0, -1.0), -std::f32::consts::PI);
        assert_eq!(atan2_f32(inf, -inf), 3.0 * std::f32::consts::FRAC_PI_4);
        // f64
        assert_eq!(ln_f64(0.0), f64::NEG_INFINITY);
        assert!(ln_f64(-1.0).is_nan());
        assert_eq!(log1p_f64(-1.0), f64::NEG_INFINITY);
        assert_eq!(log2_f64(f64::from_bits(1)), -1074.0);
        assert_eq!(exp_f64(-800.0), 0.0);
        assert_eq!(exp_f64(710.0), f64::INFINITY);
        assert!(exp_f64(-740.0) > 0.0);
        assert_eq!(tanh_f64(-f64::INFINITY), -1.0);
        assert_eq!(sigmoid_f64(-f64::INFINITY), 0.0);
        assert!(sinh_f64(710.0).is_finite() && sinh_f64(711.0).is_infinite());
        assert_eq!(atanh_f64(-1.0), f64::NEG_INFINITY);
    }
}
