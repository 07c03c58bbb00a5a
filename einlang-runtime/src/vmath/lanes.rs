//! Sixteen lanes at a time: forms of a function for a run of sixteen
//! arguments, one module per instruction set, each giving the bits of the
//! element function ([`crate::arith::exp_f32`], `f32` division) on every
//! lane.
//!
//! Generated code computes a row's exponentials sixteen at a time where it
//! also sums them, and divides a row by one value along it (softmax's
//! division by the row's sum) in place (`codegen/rust/in_place.rs`), and
//! calls `__simd::exp_f32` and `__simd::div_f32_in_place` there; it keeps
//! an `f32` maximum or minimum in `__simd::ExtremumF32`'s sixty-four lanes
//! (`extremum`). Each CPU form of a generated function binds `__simd` to
//! its own module ([`avx512`] in the AVX-512 twin, [`avx2`] in the AVX2
//! twin, [`portable`] in the baseline), since the forms share their code.
//! The AVX-512 form applies `2^n` with one
//! `vscalefps` (one rounding of `er * 2^n`, gradual underflow and overflow
//! included) where the element function multiplies by `2^a` and `2^b`
//! built from bits: the same product rounded once, in about a third fewer
//! instructions per sixteen lanes. It divides through the divisor's
//! reciprocal and one exact correction (Markstein's), which rounds as the
//! division does, in three fused operations where `vdivps` takes ten cycles
//! a register on Zen 4.

/// The sixteen partial sums of a float sum (generated code's reductions
/// in lanes) added into one, halving: lane `p` with lane `p +
/// 8`, then `p + 4`, `p + 2`, `p + 1`. Four dependent additions where the
/// lanes in order wait on fifteen. Not inlined, so that LLVM does not
/// reshape the loop that fills the lanes to suit the tree: inline, it split
/// the lanes across narrower registers. Every CPU form of a generated
/// function adds its lanes in this order, so their sums have the same
/// bits: the portable form calls this, the AVX2 and AVX-512 forms of an
/// `f32` sum their `sum16_f32`, the same tree in vector registers.
#[inline(never)]
pub fn sum16<T: Copy + core::ops::Add<Output = T>>(lanes: [T; 16]) -> T {
    let mut c = lanes;
    let mut h = 8;
    while h > 0 {
        for p in 0..h {
            c[p] = c[p] + c[p + h];
        }
        h /= 2;
    }
    c[0]
}

mod extremum;

/// The element functions on each lane: what the baseline form computes,
/// and the AVX2 twin but for extrema (the loops vectorize as the element
/// loops did).
pub mod portable {
    pub use super::extremum::portable::ExtremumF32;

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

    /// `e^x` on each of sixteen lanes whose arguments are at most 0 or a
    /// quiet NaN ([`crate::arith::exp_nonpositive_f32`], the bits of
    /// [`exp_f32`] there).
    ///
    /// # Safety
    ///
    /// None (`unsafe` only to be called as the AVX-512 form is).
    #[inline(always)]
    pub unsafe fn exp_f32_nonpositive(x: [f32; 16]) -> [f32; 16] {
        let mut y = [0.0f32; 16];
        for (y, x) in y.iter_mut().zip(x) {
            *y = crate::arith::exp_nonpositive_f32(x);
        }
        y
    }

    /// The logistic function on each of sixteen lanes
    /// ([`crate::vmath::sigmoid_f32`]).
    ///
    /// # Safety
    ///
    /// None (`unsafe` only to be called as [`super::avx512::sigmoid_f32`]
    /// is).
    #[inline(always)]
    pub unsafe fn sigmoid_f32(x: [f32; 16]) -> [f32; 16] {
        let mut y = [0.0f32; 16];
        for (y, x) in y.iter_mut().zip(x) {
            *y = crate::vmath::sigmoid_f32(x);
        }
        y
    }

    /// The sixteen lanes of an `f32` sum added up ([`super::sum16`]).
    ///
    /// # Safety
    ///
    /// None (`unsafe` only to be called as the AVX-512 form is).
    #[inline(always)]
    pub unsafe fn sum16_f32(lanes: [f32; 16]) -> f32 {
        super::sum16(lanes)
    }

    /// Divides each of the `len` `f32` at `ptr` by `d`, in place.
    ///
    /// # Safety
    ///
    /// `ptr` is valid for reads and writes of `len` initialized `f32`, and
    /// nothing else accesses them during the call.
    #[inline(always)]
    pub unsafe fn div_f32_in_place(ptr: *mut f32, len: usize, d: f32) {
        for i in 0..len {
            // SAFETY: `i < len`, as the caller vouches.
            unsafe { *ptr.add(i) /= d };
        }
    }
}

/// The AVX-512 forms (on other architectures, the portable ones: no
/// generated code binds them there).
#[cfg(target_arch = "x86_64")]
pub mod avx512 {
    use std::arch::x86_64::*;

    pub use super::extremum::avx512::ExtremumF32;

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
        // SAFETY: AVX-512F as the caller vouches.
        unsafe { exp_lanes::<true>(x) }
    }

    /// `e^x` on each of sixteen lanes whose arguments are all at most 0
    /// (`-inf` included) or a quiet NaN (as a subtraction leaves one): the
    /// bits of [`exp_f32`] there, without its upper clamp, which such an
    /// argument never reaches, and its NaN test (a quiet NaN passes every
    /// operation unchanged). Generated code calls it for `exp(a - m)` with
    /// `m` the maximum of `a` along the row (softmax): two operations of
    /// about twenty fewer; a softmax over rows of 64 to 1024 took
    /// 0.94-0.97 of the time (minima of 41 calls, alternated), its
    /// logarithm 0.94-0.98 but on rows of 1024 (within the noise there).
    ///
    /// # Safety
    ///
    /// The processor has AVX-512F.
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub unsafe fn exp_f32_nonpositive(x: [f32; 16]) -> [f32; 16] {
        // SAFETY: AVX-512F as the caller vouches.
        unsafe { exp_lanes::<false>(x) }
    }

    /// [`exp_f32`] (`ANY`: every argument), or [`exp_f32_nonpositive`].
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn exp_lanes<const ANY: bool>(x: [f32; 16]) -> [f32; 16] {
        // SAFETY: 16 `f32` in, 16 out; AVX-512F as the callers vouch.
        unsafe {
            let v = _mm512_loadu_ps(x.as_ptr());
            // `max(LOW, v)` and `min(HIGH, c)` return their second operand
            // when either is NaN, so NaN passes as in `exp_f32`.
            let mut c = _mm512_max_ps(_mm512_set1_ps(LOW), v);
            if ANY {
                c = _mm512_min_ps(_mm512_set1_ps(HIGH), c);
            }
            let round = _mm512_set1_ps(ROUND);
            let n = _mm512_sub_ps(_mm512_fmadd_ps(c, _mm512_set1_ps(LOG2E), round), round);
            // `n (-hi) + c` rounded once, as the element function: no
            // operand is negated, so a NaN keeps its sign (an `fnmadd`
            // kept it in release builds and lost it in debug builds).
            let r = _mm512_fmadd_ps(n, _mm512_set1_ps(-LN2_HI), c);
            let r = _mm512_fmadd_ps(n, _mm512_set1_ps(-LN2_LO), r);
            let mut p = _mm512_set1_ps(POLY[0]);
            for k in &POLY[1..] {
                p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(*k));
            }
            let one = _mm512_set1_ps(1.0);
            let er = _mm512_fmadd_ps(_mm512_fmadd_ps(p, r, one), r, one);
            let mut y = _mm512_scalef_ps(er, n);
            if ANY {
                // A signalling NaN comes back as it came, as from the
                // element function (the operations above return it quiet).
                let nan = _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(v, v);
                y = _mm512_mask_mov_ps(y, nan, v);
            }
            let mut out = [0.0f32; 16];
            _mm512_storeu_ps(out.as_mut_ptr(), y);
            out
        }
    }

    /// The logistic function on each of sixteen lanes, the bits of
    /// [`crate::vmath::sigmoid_f32`]: `e = e^-|x|` by [`exp_f32`] (the bits
    /// of `arith::exp_f32`), then `1 / (1 + e)` where `x >= 0` and `e / (1 +
    /// e)` elsewhere (NaN included), as one division of the chosen
    /// numerator.
    ///
    /// # Safety
    ///
    /// The processor has AVX-512F.
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub unsafe fn sigmoid_f32(x: [f32; 16]) -> [f32; 16] {
        // SAFETY: 16 `f32` in, 16 out; AVX-512F as the caller vouches.
        unsafe {
            let v = _mm512_loadu_ps(x.as_ptr());
            let neg_abs = _mm512_or_ps(v, _mm512_set1_ps(-0.0));
            let mut args = [0.0f32; 16];
            _mm512_storeu_ps(args.as_mut_ptr(), neg_abs);
            let e = _mm512_loadu_ps(exp_f32(args).as_ptr());
            let d = _mm512_add_ps(_mm512_set1_ps(1.0), e);
            let nonneg = _mm512_cmp_ps_mask::<_CMP_GE_OQ>(v, _mm512_setzero_ps());
            let num = _mm512_mask_mov_ps(e, nonneg, _mm512_set1_ps(1.0));
            let mut out = [0.0f32; 16];
            _mm512_storeu_ps(out.as_mut_ptr(), _mm512_div_ps(num, d));
            out
        }
    }

    /// The sixteen lanes of an `f32` sum added up in [`super::sum16`]'s
    /// order (lane `p` with `p + 8`, `p + 4`, `p + 2`, `p + 1`: the same
    /// bits), the halves of one register added: inlined into the loop
    /// that fills the lanes, where the portable function is a call that
    /// takes them through memory (a softmax over rows of 256 `f32` spent
    /// 7% of its samples in that call).
    ///
    /// # Safety
    ///
    /// The processor has AVX-512F.
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub unsafe fn sum16_f32(lanes: [f32; 16]) -> f32 {
        // SAFETY: 16 `f32` read; AVX-512F (and so AVX and SSE3) as the
        // caller vouches.
        unsafe {
            let v = _mm512_loadu_ps(lanes.as_ptr());
            let hi = _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(v)));
            super::avx2::add_eight(_mm256_add_ps(_mm512_castps512_ps256(v), hi))
        }
    }

    /// The divisors a run is divided through the reciprocal by
    /// ([`div_f32_in_place`]): `[2^-24, 2^24]` in magnitude.
    const D_LOW: f32 = 1.0 / 16_777_216.0;
    const D_HIGH: f32 = 16_777_216.0;
    /// The bits of `2^-96` and `2^96`: dividends between them (in
    /// magnitude) take the reciprocal.
    const E_LOW_BITS: u32 = (127 - 96) << 23;
    const E_HIGH_BITS: u32 = (127 + 96) << 23;

    /// Divides each of the `len` `f32` at `ptr` by `d`, in place, with the
    /// bits of the division, sixteen at a time through `d`'s reciprocal.
    ///
    /// With `r = RN(1/d)` (one correctly rounded division per call), `q0 =
    /// RN(e r)` is within one ulp of `e / d`, the remainder `e - q0 d` is a
    /// float (one fused operation computes it exactly), and `RN(q0 + rem
    /// r)` is `RN(e / d)` (Markstein's theorem; IA-64's division ends with
    /// these two steps). That holds while nothing underflows or overflows:
    /// for divisors in `[2^-24, 2^24]` and dividends in `[2^-96, 2^96]`
    /// every quantity is a normal number. A run of sixteen with any other
    /// dividend (zero, subnormal, huge, infinite, NaN) divides, and so does
    /// a call with any other divisor. The tests compare the bits with
    /// division on every dividend significand for thousands of divisors
    /// (scaling by powers of two is exact in that range, so the
    /// significands are the whole question).
    ///
    /// # Safety
    ///
    /// `ptr` is valid for reads and writes of `len` initialized `f32`,
    /// nothing else accesses them during the call, and the processor has
    /// AVX-512F.
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub unsafe fn div_f32_in_place(ptr: *mut f32, len: usize, d: f32) {
        if !(D_LOW..=D_HIGH).contains(&d.abs()) {
            // SAFETY: the caller's promise.
            unsafe { super::portable::div_f32_in_place(ptr, len, d) };
            return;
        }
        let r = 1.0 / d;
        // SAFETY: every access is below `len`, as the caller vouches, and
        // AVX-512F is there.
        unsafe {
            let (vd, vr) = (_mm512_set1_ps(d), _mm512_set1_ps(r));
            let abs = _mm512_set1_epi32(0x7fff_ffff);
            let low = _mm512_set1_epi32(E_LOW_BITS as i32);
            let span = _mm512_set1_epi32((E_HIGH_BITS - E_LOW_BITS) as i32);
            let run = |at: usize, mask: __mmask16| {
                let e = _mm512_maskz_loadu_ps(mask, ptr.add(at));
                let q0 = _mm512_mul_ps(e, vr);
                let rem = _mm512_fnmadd_ps(q0, vd, e);
                let q1 = _mm512_fmadd_ps(rem, vr, q0);
                // `|e| - 2^-96 <= 2^96 - 2^-96` on the bits, unsigned.
                let off = _mm512_sub_epi32(_mm512_and_si512(_mm512_castps_si512(e), abs), low);
                let ok = _mm512_cmple_epu32_mask(off, span);
                let q = if ok & mask == mask { q1 } else { _mm512_div_ps(e, vd) };
                _mm512_mask_storeu_ps(ptr.add(at), mask, q);
            };
            let mut at = 0;
            while len - at >= 16 {
                run(at, 0xffff);
                at += 16;
            }
            if at < len {
                run(at, (1u16 << (len - at)) - 1);
            }
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
pub use portable as avx512;

/// The AVX2 forms: the portable element functions (compiled for AVX2
/// inside the twin), the extremum in eight `ymm` registers.
#[cfg(target_arch = "x86_64")]
pub mod avx2 {
    use std::arch::x86_64::*;

    pub use super::extremum::avx2::ExtremumF32;
    pub use super::portable::{div_f32_in_place, exp_f32, exp_f32_nonpositive, sigmoid_f32};

    /// The sixteen lanes of an `f32` sum added up in [`super::sum16`]'s
    /// order (the same bits), as the AVX-512 form does.
    ///
    /// # Safety
    ///
    /// The processor has AVX2.
    #[inline]
    #[target_feature(enable = "avx2")]
    pub unsafe fn sum16_f32(lanes: [f32; 16]) -> f32 {
        // SAFETY: 16 `f32` read, AVX as the caller vouches.
        unsafe {
            let (lo, hi) = (_mm256_loadu_ps(lanes.as_ptr()), _mm256_loadu_ps(lanes.as_ptr().add(8)));
            add_eight(_mm256_add_ps(lo, hi))
        }
    }

    /// Lanes `p` and `p + 4` of `v` added, then `p + 2`, then `p + 1`: the
    /// last three steps of [`super::sum16`].
    ///
    /// # Safety
    ///
    /// The processor has AVX (register operations only).
    #[inline]
    #[target_feature(enable = "avx")]
    pub(super) unsafe fn add_eight(v: __m256) -> f32 {
        let four = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
        let two = _mm_add_ps(four, _mm_movehl_ps(four, four));
        _mm_cvtss_f32(_mm_add_ss(two, _mm_movehdup_ps(two)))
    }
}

#[cfg(not(target_arch = "x86_64"))]
pub use portable as avx2;

#[cfg(test)]
mod tests {
    /// The halving order, checked on values where it shows: `2^24` in lane
    /// 0 absorbs a `1` added to it alone (`2^24 + 1` rounds back to
    /// `2^24`, ties to even), but the `1`s of lanes 1 and 9 meet each other
    /// first, and `2^24 + 2` is exact. In lane order both would be lost.
    #[test]
    fn sixteen_lanes_are_summed_halving() {
        let big = 16_777_216.0f32;
        let mut l = [0.0f32; 16];
        l[0] = big;
        l[1] = 1.0;
        l[9] = 1.0;
        assert_eq!(super::sum16(l), big + 2.0);
        let in_order = l.iter().fold(0.0f32, |a, b| a + b);
        assert_eq!(in_order, big, "lane order loses both ones");
        // Small integers are exact in any order.
        let l: [f64; 16] = std::array::from_fn(|p| (p * p) as f64);
        assert_eq!(super::sum16(l), 1240.0);
    }

    /// The vector forms of the lanes' sum add in the portable order: the
    /// same bits on values whose sums round differently in other orders
    /// (magnitudes from 2^-30 to 2^30, both signs, cancellations), on
    /// infinities and NaNs, and on the halving test's lanes.
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn the_vector_forms_sum_the_lanes_in_the_same_order() {
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut cases: Vec<[f32; 16]> = (0..100_000)
            .map(|_| {
                std::array::from_fn(|_| {
                    let r = next();
                    let mag = 2f32.powi((r % 61) as i32 - 30);
                    let sig = 1.0 + ((r >> 8) % 1_000_000) as f32 / 1_000_000.0;
                    if r >> 40 & 1 == 0 {
                        mag * sig
                    } else {
                        -mag * sig
                    }
                })
            })
            .collect();
        let mut halving = [0.0f32; 16];
        halving[0] = 16_777_216.0;
        halving[1] = 1.0;
        halving[9] = 1.0;
        cases.push(halving);
        for special in [f32::INFINITY, f32::NEG_INFINITY, f32::NAN, -0.0] {
            for at in 0..16 {
                let mut l: [f32; 16] = std::array::from_fn(|p| p as f32 - 7.5);
                l[at] = special;
                cases.push(l);
            }
        }
        cases.push([-0.0; 16]);
        for l in cases {
            let want = super::sum16(l);
            let same = |g: f32| g.to_bits() == want.to_bits() || (g.is_nan() && want.is_nan());
            // SAFETY: nothing is needed by the portable form.
            assert!(same(unsafe { super::portable::sum16_f32(l) }), "{l:?}");
            if crate::cpu::wide() {
                // SAFETY: AVX2 checked.
                let g = unsafe { super::avx2::sum16_f32(l) };
                assert!(same(g), "{l:?}: {g:e} against {want:e}");
            }
            if crate::cpu::has_avx512() {
                // SAFETY: AVX-512F checked.
                let g = unsafe { super::avx512::sum16_f32(l) };
                assert!(same(g), "{l:?}: {g:e} against {want:e}");
            }
        }
    }

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

    /// The forms for arguments at most 0 or a quiet NaN (AVX-512 where the
    /// processor has it, and the portable one) give `arith::exp_f32`'s
    /// bits on every such `f32` (every negative one in
    /// release builds, one run in 4096 in debug builds; both zeros,
    /// `-inf`, the edges of the clamp and of the subnormal range), and on
    /// quiet NaNs of both signs and any payload as they come from a
    /// subtraction, in every lane position.
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn the_exponential_of_arguments_at_most_zero_keeps_the_bits() {
        let avx512 = crate::cpu::has_avx512();
        let check = |xs: [f32; 16]| {
            // SAFETY: none needed.
            let plain = unsafe { super::portable::exp_f32_nonpositive(xs) };
            // SAFETY: AVX-512F where it is called.
            let got = avx512.then(|| unsafe { super::avx512::exp_f32_nonpositive(xs) });
            for (l, x) in xs.iter().enumerate() {
                let want = crate::arith::exp_f32(*x);
                assert_eq!(plain[l].to_bits(), want.to_bits(), "e^{x:e}: {:e} against {want:e}", plain[l]);
                if let Some(got) = got {
                    assert_eq!(got[l].to_bits(), want.to_bits(), "e^{x:e}: {:e} against {want:e}", got[l]);
                }
            }
        };
        let step: u64 = if cfg!(debug_assertions) { 16 * 4096 } else { 16 };
        // The negative numbers: bit patterns from -0 up to -inf.
        let mut bits: u64 = 0x8000_0000;
        while bits <= 0xff80_0000 {
            check(std::array::from_fn(|l| f32::from_bits((bits + l as u64).min(0xff80_0000) as u32)));
            bits += step;
        }
        // Quiet NaNs as a subtraction leaves them: `a - m` with `a` or `m`
        // NaN, or `inf - inf`.
        let nans: Vec<f32> = [f32::NAN, -f32::NAN, f32::from_bits(0x7fc0_1234), f32::from_bits(0xffc0_0001)]
            .into_iter()
            .flat_map(|n| [n - 1.0, 3.0 - n])
            .chain([f32::INFINITY - f32::INFINITY, f32::NEG_INFINITY - f32::NEG_INFINITY])
            .collect();
        assert!(nans.iter().all(|n| n.is_nan()));
        let mut special = vec![0.0, -0.0, f32::NEG_INFINITY, -104.0, -103.97, -87.34, -87.33, -100.0, -1e-30];
        special.push(-149.0 * std::f32::consts::LN_2);
        special.extend(nans);
        for chunk in special.chunks(16) {
            for shift in 0..16 {
                check(std::array::from_fn(|l| chunk[(l + shift) % chunk.len()]));
            }
        }
    }

    /// The AVX-512 logistic function gives `vmath::sigmoid_f32`'s bits on
    /// every `f32` in release builds (one run of sixteen in 4096 in debug
    /// builds), NaN included.
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn the_avx512_logistic_gives_the_element_functions_bits() {
        if !crate::cpu::has_avx512() {
            return;
        }
        let step: u64 = if cfg!(debug_assertions) { 16 * 4096 } else { 16 };
        let mut bits: u64 = 0;
        while bits < 1 << 32 {
            let xs: [f32; 16] = std::array::from_fn(|l| f32::from_bits((bits + l as u64) as u32));
            // SAFETY: AVX-512F checked above.
            let got = unsafe { super::avx512::sigmoid_f32(xs) };
            let plain = unsafe { super::portable::sigmoid_f32(xs) };
            for ((x, g), p) in xs.iter().zip(got).zip(plain) {
                let want = crate::vmath::sigmoid_f32(*x);
                assert_eq!(g.to_bits(), want.to_bits(), "sigmoid({x:e}): {g:e} against {want:e}");
                assert_eq!(p.to_bits(), want.to_bits(), "sigmoid({x:e})");
            }
            bits += step;
        }
    }

    /// The AVX-512 division gives the bits of `e / d`: on every dividend
    /// significand in `[1, 2)` (both signs) for a few thousand divisor
    /// significands (those next to 1 and 2, the ones whose significand is
    /// all ones or nearly, and a pseudo-random spread) in release builds (a
    /// sample in debug builds); on dividends and divisors of every scale
    /// and the special values (zeros, subnormals, infinities, NaN, the
    /// edges of the reciprocal's range); and on runs of every length up to
    /// 40, for the masked tail.
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn the_avx512_division_gives_the_divisions_bits() {
        if !crate::cpu::has_avx512() {
            return;
        }
        let divide = |row: &mut [f32], d: f32| {
            // SAFETY: the row's own elements; AVX-512F checked above.
            unsafe { super::avx512::div_f32_in_place(row.as_mut_ptr(), row.len(), d) }
        };
        let mut row = Vec::new();
        let mut check = |es: &[f32], d: f32| {
            row.clear();
            row.extend_from_slice(es);
            divide(&mut row, d);
            for (e, q) in es.iter().zip(&row) {
                let want = e / d;
                assert!(
                    q.to_bits() == want.to_bits() || (q.is_nan() && want.is_nan()),
                    "{e:e} / {d:e}: {q:e} against {want:e}"
                );
            }
        };
        let one = 1.0f32.to_bits();
        let release = !cfg!(debug_assertions);
        // Every dividend significand (a sample in debug builds), both signs.
        let step = if release { 1 } else { 4099 };
        let dividends: Vec<f32> =
            (0..1u32 << 23).step_by(step).flat_map(|m| [f32::from_bits(one | m), -f32::from_bits(one | m)]).collect();
        let mut divisors: Vec<u32> = (0..64).chain((1 << 23) - 64..1 << 23).collect();
        divisors.extend((0..23).flat_map(|k| [(1 << 23) - (1 << k), ((1 << 23) - 1) ^ (1 << k)]));
        let mut x: u32 = 0x9e37_79b9;
        let spread = if release { 2000 } else { 16 };
        for _ in 0..spread {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            divisors.push(x & ((1 << 23) - 1));
        }
        if !release {
            divisors.truncate(24);
        }
        for m in divisors {
            let d = f32::from_bits(one | m);
            check(&dividends, d);
            check(&dividends, -d);
        }
        // Every scale and the special values.
        let mut special = vec![
            0.0,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            f32::MAX,
            f32::MIN_POSITIVE,
            f32::MIN_POSITIVE / 3.0,
            1e-45,
            -1e-45,
        ];
        for k in -149..128 {
            let p = 2.0f32.powi(k);
            special.extend([p, -p * 1.618_034, p * 1.999_999_9, p * 1.000_000_1]);
        }
        let edges = [2.0f32.powi(-24), 2.0f32.powi(24), 2.0f32.powi(96), 2.0f32.powi(-96)];
        for e in edges {
            special.extend([e, f32::from_bits(e.to_bits() - 1), f32::from_bits(e.to_bits() + 1), -e]);
        }
        for &d in &special {
            check(&special, d);
        }
        // Tails: every length up to 40, where the masked run starts anywhere.
        for len in 0..=40 {
            let es: Vec<f32> = (0..len).map(|i| 0.37 * i as f32 - 3.0).collect();
            check(&es, 7.3);
            check(&es, 1.0e-30);
        }
    }
}
