//! Sixteen lanes at a time: forms of a function for a run of sixteen
//! arguments, one module per instruction set, each giving the bits of the
//! element function ([`crate::arith::exp_f32`]) on every lane.
//!
//! Generated code computes a row's exponentials sixteen at a time where it
//! also sums them (`codegen/rust/in_place.rs`), and calls
//! `__simd::exp_f32` there; each CPU form of a generated function binds
//! `__simd` to its own module ([`avx512`] in the AVX-512 twin, [`portable`]
//! elsewhere), since the forms share their code. The AVX-512 form applies
//! `2^n` with one `vscalefps` (one rounding of `er * 2^n`, gradual
//! underflow and overflow included) where the element function multiplies
//! by `2^a` and `2^b` built from bits: the same product rounded once, in
//! about a third fewer instructions per sixteen lanes.

/// The element function on each lane: what the AVX2 twin and the baseline
/// form compute (the loop vectorizes as the element loop did).
pub mod portable {
    /// `e^x` on each of sixteen lanes ([`crate::arith::exp_f32`]).
    ///
    /// # Safety
    ///
    /// None (`unsafe` only to be called as [`super::avx512::exp_f32`] is).
    #[inline(always)]
    pub unsafe fn exp_f32(x: [f32; 16]) -> [f32; 16] {
        let mut y = [0.0f32; 16];
        for (y, x) in y.iter_mut().zip(x) {
            *y = crate::arith::exp_f32(x);
        }
        y
    }
}

/// The AVX-512 forms (on other architectures, the portable ones: no
/// generated code binds them there).
#[cfg(target_arch = "x86_64")]
pub mod avx512 {
    use std::arch::x86_64::*;

    use crate::arith::exp32::*;

    /// `e^x` on each of sixteen lanes, the bits of
    /// [`crate::arith::exp_f32`]: its clamp (NaN passes it), reduction and
    /// polynomial in the same fused operations, `2^n` by `vscalefps`, NaN
    /// returned as it came.
    ///
    /// # Safety
    ///
    /// The processor has AVX-512F.
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub unsafe fn exp_f32(x: [f32; 16]) -> [f32; 16] {
        // SAFETY: 16 `f32` in, 16 out; AVX-512F as the caller vouches.
        unsafe {
            let v = _mm512_loadu_ps(x.as_ptr());
            // `max(LOW, v)` and `min(HIGH, c)` return their second operand
            // when either is NaN, so NaN passes as in `exp_f32`.
            let c = _mm512_max_ps(_mm512_set1_ps(LOW), v);
            let c = _mm512_min_ps(_mm512_set1_ps(HIGH), c);
            let round = _mm512_set1_ps(ROUND);
            let n = _mm512_sub_ps(_mm512_fmadd_ps(c, _mm512_set1_ps(LOG2E), round), round);
            // `(-n) * hi + c` rounded once is `fnmadd(n, hi, c)`.
            let r = _mm512_fnmadd_ps(n, _mm512_set1_ps(LN2_HI), c);
            let r = _mm512_fnmadd_ps(n, _mm512_set1_ps(LN2_LO), r);
            let mut p = _mm512_set1_ps(POLY[0]);
            for k in &POLY[1..] {
                p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(*k));
            }
            let er = _mm512_add_ps(_mm512_fmadd_ps(_mm512_mul_ps(p, r), r, r), _mm512_set1_ps(1.0));
            let y = _mm512_scalef_ps(er, n);
            let nan = _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(v, v);
            let mut out = [0.0f32; 16];
            _mm512_storeu_ps(out.as_mut_ptr(), _mm512_mask_mov_ps(y, nan, v));
            out
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
pub use portable as avx512;

#[cfg(test)]
mod tests {
    /// Every lane of the AVX-512 form (and of the portable one) gives
    /// `arith::exp_f32`'s bits: on every `f32` in release builds (runs of
    /// sixteen; one run in 4096 in debug builds), and on the special
    /// values and the edges of the clamp and of the subnormal range in
    /// every lane position.
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn the_avx512_form_gives_the_element_functions_bits() {
        if !crate::cpu::has_avx512() {
            return;
        }
        let exp = crate::arith::exp_f32;
        let check = |xs: [f32; 16]| {
            // SAFETY: AVX-512F checked above.
            let got = unsafe { super::avx512::exp_f32(xs) };
            let plain = unsafe { super::portable::exp_f32(xs) };
            for ((x, g), p) in xs.iter().zip(got).zip(plain) {
                let want = exp(*x);
                assert_eq!(g.to_bits(), want.to_bits(), "e^{x:e}: {g:e} against {want:e}");
                assert_eq!(p.to_bits(), want.to_bits(), "e^{x:e}");
            }
        };
        let step: u64 = if cfg!(debug_assertions) { 16 * 4096 } else { 16 };
        let mut bits: u64 = 0;
        while bits < 1 << 32 {
            check(std::array::from_fn(|l| f32::from_bits((bits + l as u64) as u32)));
            bits += step;
        }
        let special = [
            0.0,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            -f32::NAN,
            f32::from_bits(0x7fc0_1234),
            f32::from_bits(0xff80_0001),
            -104.0,
            -103.97,
            -87.34,
            -87.33,
            -100.0,
            -149.0 * std::f32::consts::LN_2,
            88.72,
            88.73,
            89.0,
            89.01,
            f32::MAX,
            f32::MIN,
            f32::MIN_POSITIVE,
            1e-30,
        ];
        for chunk in special.chunks(16) {
            for shift in 0..16 {
                check(std::array::from_fn(|l| chunk[(l + shift) % chunk.len()]));
            }
        }
    }
}
