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
//!
//! Whole slices (the runtime's own conversions: a half-precision product
//! widened to the `f32` product and rounded back, see `gemm`) go eight at
//! a time through the F16C instructions (`vcvtph2ps`, `vcvtps2ph` with
//! ties to even) where the processor has them, detected once (and not in
//! the baseline form, [`crate::cpu::set_baseline_only`]): the same bits as
//! the element conversions. Generated code keeps the element conversions
//! in every form: LLVM does not vectorize the F16C intrinsics, and one
//! `vcvtph2ps` per element (measured in a loop of `f16` products) was
//! slower than eight lanes of the integer selects below.

use std::mem::MaybeUninit;

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

/// Whether slices convert through F16C: the processor has it (with AVX,
/// detected once) and the baseline form is not forced.
fn f16c() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        static DETECTED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        crate::cpu::wide()
            && *DETECTED.get_or_init(|| {
                std::arch::is_x86_feature_detected!("avx") && std::arch::is_x86_feature_detected!("f16c")
            })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// `src` widened to `f32` into `dst` (the first `min` of both lengths),
/// eight at a time through F16C where the processor has it.
pub fn widen_f16(src: &[f16], dst: &mut [MaybeUninit<f32>]) {
    #[cfg(target_arch = "x86_64")]
    if f16c() {
        // SAFETY: the processor has AVX and F16C (`f16c`).
        return unsafe { widen_f16_f16c(src, dst) };
    }
    for (d, s) in dst.iter_mut().zip(src) {
        d.write(f16_to_f32(*s));
    }
}

/// `src` rounded to `f16` into `dst` (the first `min` of both lengths), as
/// [`f16_from_f32`] rounds, eight at a time through F16C where the
/// processor has it.
pub fn round_f16(src: &[f32], dst: &mut [MaybeUninit<f16>]) {
    #[cfg(target_arch = "x86_64")]
    if f16c() {
        // SAFETY: the processor has AVX and F16C (`f16c`).
        return unsafe { round_f16_f16c(src, dst) };
    }
    for (d, s) in dst.iter_mut().zip(src) {
        d.write(f16_from_f32(*s));
    }
}

/// `src` widened to `f32` into `dst` (the first `min` of both lengths).
pub fn widen_bf16(src: &[bf16], dst: &mut [MaybeUninit<f32>]) {
    for (d, s) in dst.iter_mut().zip(src) {
        d.write(bf16_to_f32(*s));
    }
}

/// `src` rounded to `bf16` into `dst` (the first `min` of both lengths).
pub fn round_bf16(src: &[f32], dst: &mut [MaybeUninit<bf16>]) {
    for (d, s) in dst.iter_mut().zip(src) {
        d.write(bf16_from_f32(*s));
    }
}

/// [`widen_f16`] through `vcvtph2ps`, the tail by [`f16_to_f32`].
///
/// # Safety
///
/// The processor has AVX and F16C.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,f16c")]
unsafe fn widen_f16_f16c(src: &[f16], dst: &mut [MaybeUninit<f32>]) {
    use std::arch::x86_64::{__m128i, _mm256_cvtph_ps, _mm256_storeu_ps, _mm_loadu_si128};
    let n = src.len().min(dst.len());
    let mut i = 0;
    while i + 8 <= n {
        // SAFETY: elements i..i + 8 of both slices exist (`n`); the
        // unaligned load and store read and write exactly them (`f16` is
        // 16 bits, `MaybeUninit<f32>` an `f32`).
        unsafe {
            let h = _mm_loadu_si128(src.as_ptr().add(i).cast::<__m128i>());
            _mm256_storeu_ps(dst.as_mut_ptr().add(i).cast::<f32>(), _mm256_cvtph_ps(h));
        }
        i += 8;
    }
    for (d, s) in dst[i..n].iter_mut().zip(&src[i..n]) {
        d.write(f16_to_f32(*s));
    }
}

/// [`round_f16`] through `vcvtps2ph` (rounding to nearest, ties to even,
/// from the instruction, not from `MXCSR`), the tail by [`f16_from_f32`].
///
/// # Safety
///
/// The processor has AVX and F16C.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,f16c")]
unsafe fn round_f16_f16c(src: &[f32], dst: &mut [MaybeUninit<f16>]) {
    use std::arch::x86_64::{__m128i, _mm256_cvtps_ph, _mm256_loadu_ps, _mm_storeu_si128, _MM_FROUND_TO_NEAREST_INT};
    let n = src.len().min(dst.len());
    let mut i = 0;
    while i + 8 <= n {
        // SAFETY: as in `widen_f16_f16c`.
        unsafe {
            let x = _mm256_loadu_ps(src.as_ptr().add(i));
            let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(x);
            _mm_storeu_si128(dst.as_mut_ptr().add(i).cast::<__m128i>(), h);
        }
        i += 8;
    }
    for (d, s) in dst[i..n].iter_mut().zip(&src[i..n]) {
        d.write(f16_from_f32(*s));
    }
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

    /// Whether this processor has AVX and F16C.
    fn has_f16c() -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            std::arch::is_x86_feature_detected!("avx") && std::arch::is_x86_feature_detected!("f16c")
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    }

    /// The slice conversions (the F16C forms where the processor has them,
    /// and the dispatching functions) give the `half` crate's bits on
    /// every `f16` pattern (NaNs included), and on ties, neighbours of
    /// ties, infinities, NaNs, subnormals and a million random `f32`, in
    /// every position of a vector of eight and in a tail.
    #[test]
    fn slices_match_the_half_crate_bit_for_bit() {
        let all: Vec<f16> = (0..=u16::MAX).map(f16::from_bits).collect();
        let mut wide = vec![MaybeUninit::<f32>::uninit(); all.len()];
        // Offsets 0..3 put every pattern in every lane and in the tail.
        for (skip, f16c) in [(0, false), (0, true), (1, true), (2, true), (3, true)] {
            if f16c && !has_f16c() {
                continue;
            }
            if f16c {
                // SAFETY: the processor has AVX and F16C.
                #[cfg(target_arch = "x86_64")]
                unsafe {
                    widen_f16_f16c(&all[skip..], &mut wide[skip..])
                };
            } else {
                widen_f16(&all[skip..], &mut wide[skip..]);
            }
            for (h, w) in all[skip..].iter().zip(&wide[skip..]) {
                // SAFETY: `widen_f16` wrote every element from `skip` on.
                let w = unsafe { w.assume_init() };
                assert_eq!(w.to_bits(), h.to_f32().to_bits(), "{:#06x}", h.to_bits());
            }
        }
        let mut xs: Vec<f32> = Vec::new();
        for b in 0..=u16::MAX {
            let x = f16::from_bits(b).to_f32();
            let next = f16::from_bits(b.wrapping_add(1)).to_f32();
            xs.push(x);
            if x.is_finite() && next.is_finite() {
                let mid = (x + next) / 2.0;
                xs.extend([mid, f32::from_bits(mid.to_bits() + 1), f32::from_bits(mid.to_bits() - 1)]);
            }
        }
        for x in [65504.0f32, 65519.99, 65520.0, 1e10, f32::INFINITY, f32::NAN, f32::MIN_POSITIVE, 5.96e-8, 2.98e-8] {
            xs.extend([x, -x]);
        }
        // Signalling and quiet NaNs with payloads, f32 subnormals.
        xs.extend(
            [0x7f80_0001u32, 0x7fa0_0000, 0xffc0_1234, 0x7fff_ffff, 0x0000_0001, 0x807f_ffff].map(f32::from_bits),
        );
        let mut s = 12345u32;
        for _ in 0..1_000_000 {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            xs.push(f32::from_bits(s));
        }
        let mut halves = vec![MaybeUninit::<f16>::uninit(); xs.len()];
        for (skip, f16c) in [(0, false), (0, true), (1, true), (2, true), (3, true)] {
            if f16c && !has_f16c() {
                continue;
            }
            if f16c {
                // SAFETY: the processor has AVX and F16C.
                #[cfg(target_arch = "x86_64")]
                unsafe {
                    round_f16_f16c(&xs[skip..], &mut halves[skip..])
                };
            } else {
                round_f16(&xs[skip..], &mut halves[skip..]);
            }
            for (x, h) in xs[skip..].iter().zip(&halves[skip..]) {
                // SAFETY: `round_f16` wrote every element from `skip` on.
                let h = unsafe { h.assume_init() };
                assert_eq!(h.to_bits(), f16::from_f32(*x).to_bits(), "{x:e} ({:#010x})", x.to_bits());
            }
        }
        // bf16 slices as the element conversions (checked above).
        let mut b = vec![MaybeUninit::<bf16>::uninit(); 1000];
        round_bf16(&xs[..1000], &mut b);
        let mut back = vec![MaybeUninit::<f32>::uninit(); 1000];
        // SAFETY: `round_bf16` wrote all 1000.
        let b: Vec<bf16> = b.iter().map(|v| unsafe { v.assume_init() }).collect();
        widen_bf16(&b, &mut back);
        for ((x, h), w) in xs.iter().zip(&b).zip(&back) {
            assert_eq!(h.to_bits(), bf16_from_f32(*x).to_bits());
            // SAFETY: `widen_bf16` wrote all 1000.
            assert_eq!(unsafe { w.assume_init() }.to_bits(), h.to_f32().to_bits());
        }
    }
}
