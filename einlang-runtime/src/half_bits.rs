//! Conversions between `f32` and the 16-bit float formats without branches
//! or calls, so that loops of them vectorize.
//!
//! Generated code converts every half-precision value it loads to `f32`
//! and every value it stores back (see `opt::half` in the compiler). The
//! `half` crate's conversions pick an instruction at run time (F16C) or
//! fall back to branchy bit twiddling; either way a loop of them runs one
//! element at a time. These give the same results (`f16`: exact widening,
//! rounding to nearest with ties to even, overflow to infinity, NaN to a
//! quiet NaN; `bf16`: likewise, with `f32`'s exponent) as selects on
//! integer lanes.

use half::{bf16, f16};

/// `h` as an `f32` (exact).
#[inline(always)]
pub fn f16_to_f32(h: f16) -> f32 {
    let h = u32::from(h.to_bits());
    let sign = (h & 0x8000) << 16;
    // Exponent and mantissa moved to f32's places, the exponent rebiased
    // from 15 to 127.
    let shifted = (h & 0x7fff) << 13;
    let exp = shifted & 0x0f80_0000;
    let normal = shifted + ((127 - 15) << 23);
    // Infinity and NaN keep an all-ones exponent.
    let special = normal + ((128 - 16) << 23);
    // Subnormals (and zero): the mantissa as a number times 2^-24, computed
    // exactly as (2^-14 + m 2^-24) - 2^-14.
    let sub = f32::from_bits(normal + (1 << 23)) - f32::from_bits(113 << 23);
    let magnitude = if exp == 0x0f80_0000 {
        special
    } else if exp == 0 {
        sub.to_bits()
    } else {
        normal
    };
    f32::from_bits(magnitude | sign)
}

/// `x` rounded to the nearest `f16` (ties to even; beyond the largest
/// finite value, infinity; NaN a quiet NaN).
#[inline(always)]
pub fn f16_from_f32(x: f32) -> f16 {
    let bits = x.to_bits();
    let sign = (bits >> 16) & 0x8000;
    let a = bits & 0x7fff_ffff;
    // At or above 65520 (halfway past the largest f16) the result is
    // infinite; NaN stays NaN.
    let big = if a > 0x7f80_0000 { 0x7e00 } else { 0x7c00 };
    // Below 2^-14 the result is subnormal: adding 0.5 (2^-1) lines the
    // f16 subnormal's last place up with f32's, and the addition rounds to
    // nearest even.
    let small = (f32::from_bits(a) + 0.5).to_bits().wrapping_sub(0x3f00_0000);
    // (Every candidate is computed, with wrapping arithmetic: the ones not
    // chosen may overflow.)
    // Normal: rebias, then round the 13 dropped bits to nearest even.
    let odd = (a >> 13) & 1;
    let normal = a.wrapping_sub((127 - 15) << 23).wrapping_add(0xfff + odd) >> 13;
    let magnitude = if a >= 0x4780_0000 {
        big
    } else if a < 0x3880_0000 {
        small
    } else {
        normal
    };
    f16::from_bits((magnitude | sign) as u16)
}

/// `h` as an `f32` (exact).
#[inline(always)]
pub fn bf16_to_f32(h: bf16) -> f32 {
    f32::from_bits(u32::from(h.to_bits()) << 16)
}

/// `x` rounded to the nearest `bf16` (ties to even; NaN a quiet NaN).
#[inline(always)]
pub fn bf16_from_f32(x: f32) -> bf16 {
    let bits = x.to_bits();
    let rounded = (bits.wrapping_add(0x7fff + ((bits >> 16) & 1))) >> 16;
    let nan = (bits >> 16) | 0x40;
    let out = if bits & 0x7fff_ffff > 0x7f80_0000 { nan } else { rounded };
    bf16::from_bits(out as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every f16 and bf16 widens as the `half` crate widens it.
    #[test]
    fn widening_matches_the_half_crate_on_every_pattern() {
        for b in 0..=u16::MAX {
            let (h, g) = (f16::from_bits(b), bf16::from_bits(b));
            let (x, y) = (f16_to_f32(h), h.to_f32());
            assert!(x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()), "{b:#06x}: {x} vs {y}");
            let (x, y) = (bf16_to_f32(g), g.to_f32());
            assert!(x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()), "{b:#06x}: {x} vs {y}");
        }
    }

    /// Rounding agrees with the `half` crate on every f16 and bf16, the
    /// points halfway between neighbours (ties) and next to them, and a
    /// sweep of f32 patterns across every exponent.
    #[test]
    fn rounding_matches_the_half_crate() {
        let check = |x: f32| {
            let (a, b) = (f16_from_f32(x), f16::from_f32(x));
            assert!(a == b || (a.is_nan() && b.is_nan()), "f16 of {x:e} ({:#010x}): {a} vs {b}", x.to_bits());
            let (a, b) = (bf16_from_f32(x), bf16::from_f32(x));
            assert!(a == b || (a.is_nan() && b.is_nan()), "bf16 of {x:e} ({:#010x}): {a} vs {b}", x.to_bits());
        };
        for b in 0..=u16::MAX {
            let x = f16::from_bits(b).to_f32();
            let next = f16::from_bits(b.wrapping_add(1)).to_f32();
            check(x);
            if x.is_finite() && next.is_finite() {
                let mid = (x + next) / 2.0;
                for m in [mid, f32::from_bits(mid.to_bits() + 1), f32::from_bits(mid.to_bits() - 1)] {
                    check(m);
                }
            }
            let y = f32::from_bits(u32::from(b) << 16);
            check(y);
            check(f32::from_bits((u32::from(b) << 16) | 0x8000));
            check(f32::from_bits((u32::from(b) << 16) | 0x8001));
            check(f32::from_bits((u32::from(b) << 16) | 0x7fff));
        }
        for x in [65504.0f32, 65519.99, 65520.0, 1e10, f32::INFINITY, f32::NAN, f32::MIN_POSITIVE, 5.96e-8, 2.98e-8] {
            check(x);
            check(-x);
        }
        let mut s = 12345u32;
        for _ in 0..1_000_000 {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            check(f32::from_bits(s));
        }
    }
}
