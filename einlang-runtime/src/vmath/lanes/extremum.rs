//! The maximum or minimum of an `f32` reduction kept in sixty-four lanes:
//! four independent runs of sixteen, so that the comparisons of one run
//! need not wait for those of the run before (a maximum's chain of
//! dependent comparisons, and the sixteen comparisons in lane order that
//! ended it, held a fifth of a softmax over rows of 256).
//!
//! Every form computes the same value, bit for bit, `-0.0` and `0.0`
//! included: the lanes `L[0..64]` start at `-inf` (a maximum) or `inf`;
//! a run of sixty-four terms `t` keeps `L[p] = keep(t[p], L[p])`, a run of
//! sixteen keeps `L[p]` for `p < 16`, where `keep(v, a)` is `v` when `v`
//! is greater (less) than `a` and `a` otherwise (so a NaN term is
//! skipped, and no lane ever holds one); the end combines halving, `L[p]
//! = keep(L[p + h], L[p])` for `h` = 32, 16, 8, 4, 2, 1, then `keep(tail,
//! L[0])` with the terms the runs left over. `keep` is what `vmaxps` and
//! `vminps` compute with the term first.
//!
//! Generated code (`reduce_in_lanes` in `codegen/rust/expr.rs`) computes
//! each run's terms into an array and hands it over; with contiguous terms
//! LLVM loads them straight into the registers.

/// The form of the baseline and of architectures other than x86-64: the
/// lanes in memory, the definition above as written.
pub mod portable {
    /// A maximum (`MAX`) or minimum of `f32` terms in sixty-four lanes
    /// (see the module docs).
    #[derive(Clone, Copy, Debug)]
    pub struct ExtremumF32<const MAX: bool> {
        lanes: [f32; 64],
    }

    #[inline(always)]
    fn keep<const MAX: bool>(v: f32, a: f32) -> f32 {
        if MAX && v > a || !MAX && v < a {
            v
        } else {
            a
        }
    }

    impl<const MAX: bool> ExtremumF32<MAX> {
        /// No term yet.
        ///
        /// # Safety
        ///
        /// None (`unsafe` as the other forms' are).
        #[inline(always)]
        pub unsafe fn new() -> Self {
            Self { lanes: [if MAX { f32::NEG_INFINITY } else { f32::INFINITY }; 64] }
        }

        /// Keeps a run of sixty-four terms.
        ///
        /// # Safety
        ///
        /// None (`unsafe` as the other forms' are).
        #[inline(always)]
        pub unsafe fn step64(&mut self, terms: [f32; 64]) {
            for (l, t) in self.lanes.iter_mut().zip(terms) {
                *l = keep::<MAX>(t, *l);
            }
        }

        /// Keeps a run of sixteen terms in the first sixteen lanes.
        ///
        /// # Safety
        ///
        /// None (`unsafe` as the other forms' are).
        #[inline(always)]
        pub unsafe fn step16(&mut self, terms: [f32; 16]) {
            for (l, t) in self.lanes.iter_mut().zip(terms) {
                *l = keep::<MAX>(t, *l);
            }
        }

        /// The extremum of every term kept and of `tail`.
        ///
        /// # Safety
        ///
        /// None (`unsafe` as the other forms' are).
        #[inline(always)]
        pub unsafe fn finish(self, tail: f32) -> f32 {
            let mut l = self.lanes;
            let mut h = 32;
            while h > 0 {
                for p in 0..h {
                    l[p] = keep::<MAX>(l[p + h], l[p]);
                }
                h /= 2;
            }
            keep::<MAX>(tail, l[0])
        }
    }
}

/// The AVX2 form: eight registers of eight lanes.
#[cfg(target_arch = "x86_64")]
pub mod avx2 {
    use std::arch::x86_64::*;

    /// A maximum (`MAX`) or minimum of `f32` terms in sixty-four lanes
    /// (see the module docs): lanes `8j..8j + 8` in register `j`.
    #[derive(Clone, Copy, Debug)]
    pub struct ExtremumF32<const MAX: bool> {
        regs: [__m256; 8],
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    fn keep<const MAX: bool>(v: __m256, a: __m256) -> __m256 {
        if MAX {
            _mm256_max_ps(v, a)
        } else {
            _mm256_min_ps(v, a)
        }
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    fn keep1<const MAX: bool>(v: __m128, a: __m128) -> __m128 {
        if MAX {
            _mm_max_ps(v, a)
        } else {
            _mm_min_ps(v, a)
        }
    }

    impl<const MAX: bool> ExtremumF32<MAX> {
        /// No term yet.
        ///
        /// # Safety
        ///
        /// The processor has AVX2.
        #[inline]
        #[target_feature(enable = "avx2")]
        pub unsafe fn new() -> Self {
            Self { regs: [_mm256_set1_ps(if MAX { f32::NEG_INFINITY } else { f32::INFINITY }); 8] }
        }

        /// Keeps a run of sixty-four terms.
        ///
        /// # Safety
        ///
        /// The processor has AVX2.
        #[inline]
        #[target_feature(enable = "avx2")]
        pub unsafe fn step64(&mut self, terms: [f32; 64]) {
            for (j, r) in self.regs.iter_mut().enumerate() {
                // SAFETY: `8j + 8 <= 64` terms.
                *r = keep::<MAX>(unsafe { _mm256_loadu_ps(terms.as_ptr().add(8 * j)) }, *r);
            }
        }

        /// Keeps a run of sixteen terms in the first sixteen lanes.
        ///
        /// # Safety
        ///
        /// The processor has AVX2.
        #[inline]
        #[target_feature(enable = "avx2")]
        pub unsafe fn step16(&mut self, terms: [f32; 16]) {
            for (j, r) in self.regs[..2].iter_mut().enumerate() {
                // SAFETY: `8j + 8 <= 16` terms.
                *r = keep::<MAX>(unsafe { _mm256_loadu_ps(terms.as_ptr().add(8 * j)) }, *r);
            }
        }

        /// The extremum of every term kept and of `tail`.
        ///
        /// # Safety
        ///
        /// The processor has AVX2.
        #[inline]
        #[target_feature(enable = "avx2")]
        pub unsafe fn finish(self, tail: f32) -> f32 {
            let mut r = self.regs;
            // h = 32 and 16: whole registers.
            for j in 0..4 {
                r[j] = keep::<MAX>(r[j + 4], r[j]);
            }
            for j in 0..2 {
                r[j] = keep::<MAX>(r[j + 2], r[j]);
            }
            // h = 8, 4, 2, 1.
            let a = keep::<MAX>(r[1], r[0]);
            let x = keep1::<MAX>(_mm256_extractf128_ps::<1>(a), _mm256_castps256_ps128(a));
            let x = keep1::<MAX>(_mm_movehl_ps(x, x), x);
            let x = keep1::<MAX>(_mm_shuffle_ps::<0b01>(x, x), x);
            let t = _mm_set_ss(tail);
            _mm_cvtss_f32(keep1::<MAX>(t, x))
        }
    }
}

/// The AVX-512 form: four registers of sixteen lanes.
#[cfg(target_arch = "x86_64")]
pub mod avx512 {
    use std::arch::x86_64::*;

    /// A maximum (`MAX`) or minimum of `f32` terms in sixty-four lanes
    /// (see the module docs): lanes `16j..16j + 16` in register `j`.
    #[derive(Clone, Copy, Debug)]
    pub struct ExtremumF32<const MAX: bool> {
        regs: [__m512; 4],
    }

    #[inline]
    #[target_feature(enable = "avx512f")]
    fn keep<const MAX: bool>(v: __m512, a: __m512) -> __m512 {
        if MAX {
            _mm512_max_ps(v, a)
        } else {
            _mm512_min_ps(v, a)
        }
    }

    impl<const MAX: bool> ExtremumF32<MAX> {
        /// No term yet.
        ///
        /// # Safety
        ///
        /// The processor has AVX-512F.
        #[inline]
        #[target_feature(enable = "avx512f")]
        pub unsafe fn new() -> Self {
            Self { regs: [_mm512_set1_ps(if MAX { f32::NEG_INFINITY } else { f32::INFINITY }); 4] }
        }

        /// Keeps a run of sixty-four terms.
        ///
        /// # Safety
        ///
        /// The processor has AVX-512F.
        #[inline]
        #[target_feature(enable = "avx512f")]
        pub unsafe fn step64(&mut self, terms: [f32; 64]) {
            for (j, r) in self.regs.iter_mut().enumerate() {
                // SAFETY: `16j + 16 <= 64` terms.
                *r = keep::<MAX>(unsafe { _mm512_loadu_ps(terms.as_ptr().add(16 * j)) }, *r);
            }
        }

        /// Keeps a run of sixteen terms in the first sixteen lanes.
        ///
        /// # Safety
        ///
        /// The processor has AVX-512F.
        #[inline]
        #[target_feature(enable = "avx512f")]
        pub unsafe fn step16(&mut self, terms: [f32; 16]) {
            // SAFETY: sixteen terms.
            self.regs[0] = keep::<MAX>(unsafe { _mm512_loadu_ps(terms.as_ptr()) }, self.regs[0]);
        }

        /// The extremum of every term kept and of `tail`.
        ///
        /// # Safety
        ///
        /// The processor has AVX-512F.
        #[inline]
        #[target_feature(enable = "avx512f")]
        pub unsafe fn finish(self, tail: f32) -> f32 {
            let [r0, r1, r2, r3] = self.regs;
            // h = 32 and 16: whole registers.
            let (r0, r1) = (keep::<MAX>(r2, r0), keep::<MAX>(r3, r1));
            let a = keep::<MAX>(r1, r0);
            // h = 8 and 4: lanes 8..16 (blocks 2, 3), then 4..8 (block 1)
            // to the front; h = 2 and 1 within the first block.
            let a = keep::<MAX>(_mm512_shuffle_f32x4::<0b11_10_11_10>(a, a), a);
            let a = keep::<MAX>(_mm512_shuffle_f32x4::<0b01_01_01_01>(a, a), a);
            let a = keep::<MAX>(_mm512_permute_ps::<0b11_10_11_10>(a), a);
            let a = keep::<MAX>(_mm512_permute_ps::<0b01_01_01_01>(a), a);
            let t = _mm512_set1_ps(tail);
            _mm512_cvtss_f32(keep::<MAX>(t, a))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::portable::ExtremumF32;

    /// The extremum of `terms` the way generated code runs it: runs of
    /// sixty-four, then of sixteen, then the rest as the tail; in every
    /// form the processor has. Returns each form's result.
    fn every_form<const MAX: bool>(terms: &[f32]) -> Vec<(&'static str, f32)> {
        let start = if MAX { f32::NEG_INFINITY } else { f32::INFINITY };
        let tail = |rest: &[f32]| rest.iter().fold(start, |a, &v| if MAX && v > a || !MAX && v < a { v } else { a });
        let split = |n: usize| (n / 64 * 64, (n % 64) / 16 * 16);
        let (n64, n16) = split(terms.len());
        let runs64 = || terms[..n64].chunks_exact(64).map(|c| <[f32; 64]>::try_from(c).unwrap());
        let runs16 = || terms[n64..n64 + n16].chunks_exact(16).map(|c| <[f32; 16]>::try_from(c).unwrap());
        let rest = tail(&terms[n64 + n16..]);
        let mut out = Vec::new();
        // SAFETY: the portable form needs nothing.
        unsafe {
            let mut e = ExtremumF32::<MAX>::new();
            runs64().for_each(|r| e.step64(r));
            runs16().for_each(|r| e.step16(r));
            out.push(("portable", e.finish(rest)));
        }
        #[cfg(target_arch = "x86_64")]
        {
            if crate::cpu::has_avx2_fma() {
                // SAFETY: AVX2 checked.
                unsafe {
                    let mut e = super::avx2::ExtremumF32::<MAX>::new();
                    runs64().for_each(|r| e.step64(r));
                    runs16().for_each(|r| e.step16(r));
                    out.push(("avx2", e.finish(rest)));
                }
            }
            if crate::cpu::has_avx512() {
                // SAFETY: AVX-512F checked.
                unsafe {
                    let mut e = super::avx512::ExtremumF32::<MAX>::new();
                    runs64().for_each(|r| e.step64(r));
                    runs16().for_each(|r| e.step16(r));
                    out.push(("avx512", e.finish(rest)));
                }
            }
        }
        out
    }

    /// Every form gives the bits of the portable one, and the value of a
    /// plain loop that skips NaN (the sign of a zero aside, which the loop
    /// and the lanes may pick differently): lengths 0 to 300, terms
    /// drawn with repeats, both zeros, infinities and NaNs, the extremum
    /// placed in every lane position, and terms that are only zeros of
    /// either sign and NaNs, where which zero wins shows the order of
    /// every comparison.
    #[test]
    fn every_form_keeps_the_extremum_of_a_plain_loop() {
        let mut s = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        let special = [0.0f32, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 1.5, -1.5, f32::MIN_POSITIVE];
        for n in 0..300usize {
            for round in 0..5 {
                let mut terms: Vec<f32> = (0..n)
                    .map(|_| match next() % 8 {
                        _ if round == 4 => [0.0, -0.0, -0.0, f32::NAN][(next() % 4) as usize],
                        0 => special[(next() % special.len() as u64) as usize],
                        _ => ((next() % 2001) as f32 - 1000.0) / 8.0,
                    })
                    .collect();
                if round == 3 && n > 0 {
                    // No NaN and the one largest term at one position.
                    terms.iter_mut().for_each(|t| *t = if t.is_nan() { 0.0 } else { t.clamp(-100.0, 100.0) });
                    let at = (next() % n as u64) as usize;
                    terms[at] = 1000.0;
                }
                let check = |got: Vec<(&str, f32)>, want: f32, what: &str| {
                    let bits = got[0].1.to_bits();
                    for (form, g) in got {
                        assert_eq!(g.to_bits(), bits, "{what} of {n} terms: {form} gives {g:e}");
                        assert!(g == want || g.is_nan() && want.is_nan(), "{what} of {n}: {g:e} against {want:e}");
                    }
                };
                let max = terms.iter().fold(f32::NEG_INFINITY, |a, &v| if v > a { v } else { a });
                let min = terms.iter().fold(f32::INFINITY, |a, &v| if v < a { v } else { a });
                check(every_form::<true>(&terms), max, "maximum");
                check(every_form::<false>(&terms), min, "minimum");
                if round == 3 && n > 0 {
                    assert_eq!(max, 1000.0);
                }
            }
        }
    }
}
