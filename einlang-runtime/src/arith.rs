//! Scalar arithmetic that can fail: integer division, remainder and power.
//!
//! Integer arithmetic wraps on overflow (two's complement), identically in
//! debug and release builds: generated code writes `+ - *` and negation as
//! `wrapping_*` methods, and the helpers here follow the same rule. Rust's
//! integer `/` and `%` panic on a zero divisor, so generated code routes
//! them through the functions here, which return `Error::Arithmetic` for a
//! zero divisor (and a negative integer exponent) and wrap otherwise
//! (`MIN / -1 == MIN`, `MIN % -1 == 0`). Float arithmetic needs none of
//! this (it is IEEE: `1.0 / 0.0` is `inf`).

use crate::Error;

/// The integer types of Einlang (`i8 i16 i32 i64 u8 u32 u64`).
pub trait Int: Copy + PartialEq + Sized {
    const ZERO: Self;
    const ONE: Self;
    fn wrapping_div(self, rhs: Self) -> Self;
    fn wrapping_rem(self, rhs: Self) -> Self;
    fn wrapping_mul(self, rhs: Self) -> Self;
    fn wrapping_pow(self, exp: u32) -> Self;
    /// The value as an `i128` (exact for every implementing type).
    fn to_i128(self) -> i128;
    /// The value of type `Self` equal to `v`, if there is one.
    fn from_i128(v: i128) -> Option<Self>;
}

macro_rules! impl_int {
    ($($t:ty),* $(,)?) => {
        $(
            impl Int for $t {
                const ZERO: Self = 0;
                const ONE: Self = 1;
                #[inline]
                fn wrapping_div(self, rhs: Self) -> Self {
                    <$t>::wrapping_div(self, rhs)
                }
                #[inline]
                fn wrapping_rem(self, rhs: Self) -> Self {
                    <$t>::wrapping_rem(self, rhs)
                }
                #[inline]
                fn wrapping_mul(self, rhs: Self) -> Self {
                    <$t>::wrapping_mul(self, rhs)
                }
                #[inline]
                fn wrapping_pow(self, exp: u32) -> Self {
                    <$t>::wrapping_pow(self, exp)
                }
                #[inline]
                fn to_i128(self) -> i128 {
                    self as i128
                }
                #[inline]
                fn from_i128(v: i128) -> Option<Self> {
                    <$t>::try_from(v).ok()
                }
            }
        )*
    };
}

impl_int!(i8, i16, i32, i64, u8, u32, u64);

#[cold]
fn arithmetic(function: &str, message: String) -> Error {
    Error::Arithmetic { function: function.to_string(), message }
}

/// The greatest common divisor, non-negative (`gcd(0, 0) == 0`). For
/// `gcd(MIN, MIN)` or `gcd(MIN, 0)`, whose value does not fit, the result
/// wraps to `MIN`, as `MIN.wrapping_abs()` does.
pub fn gcd<T: Int>(a: T, b: T) -> T {
    let (mut x, mut y) = (a.to_i128().unsigned_abs(), b.to_i128().unsigned_abs());
    while y != 0 {
        let r = x % y;
        x = y;
        y = r;
    }
    T::from_i128(x as i128).unwrap_or(a)
}

/// The least common multiple, non-negative; an error when it does not fit.
pub fn lcm<T: Int>(function: &str, a: T, b: T) -> Result<T, Error> {
    let g = gcd(a, b).to_i128().unsigned_abs();
    if g == 0 {
        return Ok(T::ZERO);
    }
    let value = (a.to_i128().unsigned_abs() / g).checked_mul(b.to_i128().unsigned_abs());
    value
        .and_then(|v| i128::try_from(v).ok())
        .and_then(T::from_i128)
        .ok_or_else(|| arithmetic(function, format!("lcm({}, {}) overflows", a.to_i128(), b.to_i128())))
}

/// `n!`; an error for a negative `n` or a result that does not fit.
pub fn factorial<T: Int>(function: &str, n: T) -> Result<T, Error> {
    let n = n.to_i128();
    if n < 0 {
        return Err(arithmetic(function, format!("factorial of the negative number {n}")));
    }
    let mut acc: i128 = 1;
    for k in 2..=n {
        match acc.checked_mul(k).filter(|v| T::from_i128(*v).is_some()) {
            Some(v) => acc = v,
            None => return Err(arithmetic(function, format!("factorial({n}) overflows"))),
        }
    }
    T::from_i128(acc).ok_or_else(|| arithmetic(function, format!("factorial({n}) overflows")))
}

/// `e^x` for `f32`, without branches or calls, so that loops of it
/// vectorize (`f32::exp` is a call into the platform's libm per element).
/// Range reduction `x = n ln 2 + r` with `|r| <= ln 2 / 2` (`ln 2` split in
/// two so that `n ln 2` is exact), a degree-6 polynomial for `e^r`, and
/// `2^n` built from bits in two halves, so that results that overflow are
/// infinite and results in the subnormal range are gradual. NaN stays NaN.
/// The reduction and the polynomial are fused multiply-adds (`mul_add`,
/// rounded once in every form: an instruction where the processor has
/// FMA, libm's `fmaf` otherwise), about a quarter fewer instructions than
/// separate products and sums.
/// At most 2 units in the last place from the exact value (the test
/// below compares with `f64::exp` over the whole domain; 0.89 measured,
/// see `exp32::POLY`).
#[inline(always)]
// The clamp is written out: NaN passes it (`f32::clamp` would too, but
// says less about which way NaN goes).
#[allow(clippy::manual_clamp)]
pub fn exp_f32(x: f32) -> f32 {
    // Below -104 the result rounds to 0, above 89 it is infinite.
    let c = if x < exp32::LOW {
        exp32::LOW
    } else if x > exp32::HIGH {
        exp32::HIGH
    } else {
        x
    };
    let (er, ni) = exp_reduced_f32(c);
    let y = times_pow2(er, ni);
    if x.is_nan() {
        x
    } else {
        y
    }
}

/// [`exp_f32`] of an argument at most 0 (`-inf` included) or a quiet NaN
/// (as a subtraction leaves one): its bits there, without the upper clamp,
/// which such an argument never reaches, and the NaN test (a quiet NaN
/// passes every operation unchanged). Generated code computes `exp(a -
/// m)`, `m` the maximum of `a` along a row, with it
/// (`vmath::lanes::portable::exp_f32_nonpositive`).
#[inline(always)]
pub fn exp_nonpositive_f32(x: f32) -> f32 {
    let c = if x < exp32::LOW { exp32::LOW } else { x };
    let (er, ni) = exp_reduced_f32(c);
    times_pow2(er, ni)
}

/// `er 2^n` for `n` in `[-151, 129]` (any `n` when `er` is NaN), as `er
/// 2^a 2^b` with both factors normal, so that results in the subnormal
/// range round once, gradually, and results past the largest are
/// infinite.
#[inline(always)]
fn times_pow2(er: f32, ni: i32) -> f32 {
    let a = ni >> 1;
    er * exp32::pow2i(a) * exp32::pow2i(ni.wrapping_sub(a))
}

/// `e^c = er 2^n` as `(er, n)`, for `c` in `[-104, 89]`: the reduction
/// `c = n ln 2 + r` (`ln 2` in two parts, so that `n ln 2` is exact) and
/// the degree-6 polynomial for `e^r` of [`exp_f32`] in Horner's form, six
/// fused multiply-adds, which `vmath::exp_neg_f32` shares so that the two
/// give the same bits.
#[inline(always)]
pub(crate) fn exp_reduced_f32(c: f32) -> (f32, i32) {
    use exp32::*;
    let (r, ni) = reduce(c);
    let mut p = POLY[0];
    for k in &POLY[1..] {
        p = p.mul_add(r, *k);
    }
    (p.mul_add(r, 1.0).mul_add(r, 1.0), ni)
}

/// The constants of [`exp_f32`], which `vmath::lanes` shares so that its
/// sixteen-lane form gives the same bits.
pub(crate) mod exp32 {
    pub const LOG2E: f32 = std::f32::consts::LOG2_E;
    /// 1.5 * 2^23: adding it rounds to an integer held in the low mantissa bits.
    pub const ROUND: f32 = 12_582_912.0;
    /// `ln 2` in two parts; `n * LN2_HI` is exact for the `n` that occur.
    pub const LN2_HI: f32 = 0.693_359_4;
    pub const LN2_LO: f32 = -2.121_944_4e-4;
    /// `e^r = 1 + r (1 + r P(r))`, `P`'s coefficients from the highest
    /// power (a degree-6 fit, with the digits the fit gave), evaluated in
    /// Horner's form: 0.89 ulp at most from `e^x` over every `f32` of
    /// `[-104, 89]` (measured against `f64`), where a degree-7
    /// polynomial summed as `1 + (r + r^2 P)` was 1.02 ulp (99 values
    /// above 1) in two more operations.
    #[allow(clippy::excessive_precision)]
    pub const POLY: [f32; 5] = [1.381_313_2e-3, 8.369_425e-3, 4.166_845_6e-2, 1.666_651_5e-1, 4.999_999_4e-1];
    /// The arguments are clamped to `[LOW, HIGH]` first: below, `e^x`
    /// rounds to 0; above, it is infinite.
    pub const LOW: f32 = -104.0;
    pub const HIGH: f32 = 89.0;

    /// `2^n` for `n` in `[-126, 127]` (other `n` give garbage, never a
    /// panic), from its bits.
    #[inline(always)]
    pub fn pow2i(n: i32) -> f32 {
        f32::from_bits((n.wrapping_add(127) as u32).wrapping_shl(23))
    }

    /// `c = n ln 2 + r` as `(r, n)`: `n` the nearest integer to `c log2
    /// e` (`|c| < 2^22`), `r` in fused operations with `ln 2` in two parts
    /// (`n ln 2` exact), `|r| <= ln 2 / 2` and a little. `n` multiplies
    /// the negated parts (rather than `-n` the parts: the same values), so
    /// that a NaN `c` comes out in `r` with its sign.
    #[inline(always)]
    pub fn reduce(c: f32) -> (f32, i32) {
        let shifted = c.mul_add(LOG2E, ROUND);
        let n = shifted - ROUND;
        let ni = (shifted.to_bits() as i32).wrapping_sub(ROUND.to_bits() as i32);
        (n.mul_add(-LN2_LO, n.mul_add(-LN2_HI, c)), ni)
    }
}

/// The error function, from `libm` (Rust's std has none). Generated code
/// calls `vmath::erf_f32`, which vectorizes; this is the reference its
/// tests and benches compare with.
#[inline]
pub fn erf_f32(x: f32) -> f32 {
    libm::erff(x)
}

/// The error function, from `libm` (the reference of `vmath::erf_f64`).
#[inline]
pub fn erf_f64(x: f64) -> f64 {
    libm::erf(x)
}

/// `a / b` for integers, truncating toward zero (Rust semantics); a zero
/// divisor is an error. The one quotient that overflows, `MIN / -1`, wraps
/// to `MIN`.
#[inline]
pub fn int_div<T: Int>(function: &str, a: T, b: T) -> Result<T, Error> {
    if b == T::ZERO {
        return Err(arithmetic(function, format!("integer division of {} by zero", a.to_i128())));
    }
    Ok(a.wrapping_div(b))
}

/// `a % b` for integers (the sign of `a`, Rust semantics); a zero divisor is
/// an error. `MIN % -1` is mathematically 0 and returns 0.
#[inline]
pub fn int_rem<T: Int>(function: &str, a: T, b: T) -> Result<T, Error> {
    if b == T::ZERO {
        return Err(arithmetic(function, format!("integer remainder of {} by zero", a.to_i128())));
    }
    Ok(a.wrapping_rem(b))
}

/// `base ** exp` for integers, wrapping on overflow as `*` does (the result
/// is `base` multiplied by itself `exp` times, modulo 2^bits). A negative
/// exponent is an error (the result would not be an integer).
#[inline]
pub fn int_pow<T: Int, E: Int>(function: &str, base: T, exp: E) -> Result<T, Error> {
    let e = exp.to_i128();
    if e < 0 {
        return Err(arithmetic(function, format!("integer power {} ** {e} has a negative exponent", base.to_i128())));
    }
    Ok(match u32::try_from(e) {
        Ok(e) => base.wrapping_pow(e),
        // Exponents past `u32` (from `i64` and `u64`): square and multiply
        // over the exponent's bits, wrapping, as `wrapping_pow` does.
        Err(_) => {
            let (mut acc, mut square, mut bits) = (T::ONE, base, e as u128);
            while bits > 0 {
                if bits & 1 == 1 {
                    acc = acc.wrapping_mul(square);
                }
                square = square.wrapping_mul(square);
                bits >>= 1;
            }
            acc
        }
    })
}

/// The float types of Einlang (`f32 f64`).
pub trait Float: Copy {
    fn powi(self, n: i32) -> Self;
    fn powf_i128(self, n: i128) -> Self;
}

impl Float for f32 {
    #[inline]
    fn powi(self, n: i32) -> Self {
        f32::powi(self, n)
    }
    #[inline]
    fn powf_i128(self, n: i128) -> Self {
        f32::powf(self, n as f32)
    }
}

impl Float for f64 {
    #[inline]
    fn powi(self, n: i32) -> Self {
        f64::powi(self, n)
    }
    #[inline]
    fn powf_i128(self, n: i128) -> Self {
        f64::powf(self, n as f64)
    }
}

/// `base ** exp` for a float base and an integer exponent of any integer
/// type. Exponents outside `i32` (where `powi` would truncate them) go
/// through `powf`, which is exact for them to the precision of the type.
#[inline]
pub fn powi<F: Float, E: Int>(base: F, exp: E) -> F {
    let e = exp.to_i128();
    match i32::try_from(e) {
        Ok(e) => base.powi(e),
        Err(_) => base.powf_i128(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Units in the last place between `got` and the exact `want`.
    fn ulps(got: f32, want: f64) -> f64 {
        let w = want as f32;
        let ulp = (f32::from_bits(w.to_bits() + 1) - w).abs().max(f32::from_bits(1)) as f64;
        (got as f64 - want).abs() / ulp
    }

    #[test]
    fn exp_f32_is_within_two_ulps_of_the_exact_value_everywhere() {
        // Every 97th f32 from -110 to 90 (about 25 million values, both
        // signs' whole exponent ranges), against f64's exponential.
        let mut worst = (0.0, 0.0f32);
        let mut bits = (-110.0f32).to_bits();
        let mut checked = 0u64;
        loop {
            let x = f32::from_bits(bits);
            let want = (x as f64).exp();
            let got = exp_f32(x);
            if want > f32::MAX as f64 {
                assert_eq!(got, f32::INFINITY, "exp({x})");
            } else {
                let e = ulps(got, want);
                if e > worst.0 {
                    worst = (e, x);
                }
            }
            checked += 1;
            if x >= 0.0 {
                if x > 90.0 {
                    break;
                }
                bits += 97;
            } else if bits < 97 + 0x8000_0000 {
                bits = 0;
            } else {
                bits -= 97;
            }
        }
        assert!(checked > 1_000_000);
        assert!(worst.0 <= 2.0, "{} ulps at {}", worst.0, worst.1);
    }

    #[test]
    fn exp_f32_keeps_the_special_values() {
        assert!(exp_f32(f32::NAN).is_nan());
        assert_eq!(exp_f32(f32::INFINITY), f32::INFINITY);
        assert_eq!(exp_f32(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp_f32(0.0), 1.0);
        assert_eq!(exp_f32(-0.0), 1.0);
        assert_eq!(exp_f32(1000.0), f32::INFINITY);
        assert_eq!(exp_f32(-1000.0), 0.0);
        assert_eq!(exp_f32(f32::MAX), f32::INFINITY);
        assert_eq!(exp_f32(f32::MIN), 0.0);
        // Gradual underflow: e^-100 is subnormal.
        let tiny = exp_f32(-100.0);
        assert!(tiny > 0.0 && tiny < f32::MIN_POSITIVE);
        assert!(ulps(tiny, (-100.0f64).exp()) <= 2.0);
        assert_eq!(exp_f32(1.0), std::f32::consts::E);
    }

    #[test]
    fn gcd_lcm_factorial() {
        assert_eq!(gcd(12i32, 18), 6);
        assert_eq!(gcd(-12i64, 18), 6);
        assert_eq!(gcd(0u8, 0), 0);
        assert_eq!(lcm("f", 4i32, 6), Ok(12));
        assert_eq!(lcm("f", 0i32, 6), Ok(0));
        assert!(lcm("f", i32::MAX, i32::MAX - 1).is_err());
        assert_eq!(factorial("f", 5i32), Ok(120));
        assert_eq!(factorial("f", 0u8), Ok(1));
        assert!(factorial("f", 13i32).is_err());
        assert_eq!(factorial("f", 20i64), Ok(2_432_902_008_176_640_000));
        assert!(factorial("f", -1i64).is_err());
    }

    #[test]
    fn erf_matches_known_values() {
        // Abramowitz & Stegun table 7.1: erf(0.5) = 0.5204998778, erf(1) = 0.8427007929.
        assert!((erf_f64(0.5) - 0.520_499_877_8).abs() < 1e-9);
        assert!((erf_f64(1.0) - 0.842_700_792_9).abs() < 1e-9);
        assert!((erf_f32(-1.0) + 0.842_700_8).abs() < 1e-6);
    }

    #[test]
    fn division_truncates_reports_zero_and_wraps() {
        assert_eq!(int_div("f", 7i32, -2), Ok(-3));
        assert_eq!(int_rem("f", -7i64, 2), Ok(-1));
        assert!(matches!(int_div("f", 1u8, 0), Err(Error::Arithmetic { .. })));
        assert!(matches!(int_rem("f", 1i16, 0), Err(Error::Arithmetic { .. })));
        assert_eq!(int_div("f", i64::MIN, -1), Ok(i64::MIN));
        assert_eq!(int_div("f", i8::MIN, -1), Ok(i8::MIN));
        assert_eq!(int_rem("f", i64::MIN, -1), Ok(0));
        assert_eq!(int_rem("f", i32::MIN, -1), Ok(0));
    }

    #[test]
    fn integer_power() {
        assert_eq!(int_pow("f", 3i32, 4i32), Ok(81));
        assert_eq!(int_pow("f", 2u8, 0u8), Ok(1));
        assert!(int_pow("f", 2i32, -1i32).is_err());
        // Overflow wraps, as repeated `wrapping_mul` does.
        assert_eq!(int_pow("f", 2i32, 31i32), Ok(i32::MIN));
        assert_eq!(int_pow("f", 2i32, 32i32), Ok(0));
        assert_eq!(int_pow("f", 3u8, 5u8), Ok(243));
        assert_eq!(int_pow("f", 3u8, 6u8), Ok(217)); // 729 - 2 * 256
        assert_eq!(int_pow("f", -1i64, i64::MAX), Ok(-1));
        assert_eq!(int_pow("f", -1i64, 1i64 << 40), Ok(1));
        assert_eq!(int_pow("f", 0u64, u64::MAX), Ok(0));
        assert_eq!(int_pow("f", 1u64, u64::MAX), Ok(1));
        assert_eq!(int_pow("f", 2u64, u64::MAX), Ok(0));
        assert_eq!(int_pow("f", 2i64, 1i64 << 40), Ok(0));
        // Past `u32`, square and multiply agrees with a plain wrapping loop
        // reduced by the multiplicative order: 3 has order 2^62 modulo 2^64,
        // so 3^(2^62 + 5) == 3^5.
        assert_eq!(int_pow("f", 3u64, (1u64 << 62) + 5), Ok(243));
        assert_eq!(int_pow("f", 3i64, (1i64 << 62) + 5), Ok(243));
        // 5 has order 2^30 modulo 2^32.
        assert_eq!(int_pow("f", 5u32, (1u64 << 32) + 3), Ok(125));
        assert_eq!(int_pow("f", 5u32, 1u64 << 40), Ok(1));
    }

    #[test]
    fn float_power_with_integer_exponent() {
        assert_eq!(powi(2.0f32, 3i64), 8.0);
        assert_eq!(powi(2.0f64, -1i32), 0.5);
        assert_eq!(powi(1.0f64, i64::MAX), 1.0);
        assert_eq!(powi(0.5f64, 1u64 << 40), 0.0);
    }
}
