//! Direct two-dimensional convolution without im2col columns.
//!
//! `y[n, o, i, j] = bias[o] + sum[c, r, s](x[n, c, i sh + r dh - top, j sw + s dw - left] * k[o, c, r, s])`,
//! where a read outside `x` is zero (padding by a guard; `top = left = 0`,
//! strides and dilations 1 and an output of `H - KH + 1` by `W - KW + 1`
//! is the valid convolution), optionally followed by `max(0, _)`. Any
//! window extents, strides and dilations of at least 1 (a [`Window`]) and
//! any output extents are accepted: the rows and columns the window leaves
//! are zeros. `k` may have any strides (a permuted or reversed view: an
//! input gradient reads the kernel with filters and channels swapped,
//! backwards along the window).
//!
//! A strided window is first split by the stride's phases: phase plane
//! `(a, b)` of a channel holds the zero-bordered image's rows `a, a + sh,
//! ..` and columns `b, b + sw, ..`, and tap `(r, s)` reads plane `(r dh %
//! sh, s dw % sw)` at `(i + r dh / sh, j + s dw / sw)`, so that the pixels
//! of an output row are consecutive in every plane a tap reads; only the
//! phases some tap reads are kept (one plane for stride 1). The
//! description below is that of one plane, each tap an offset (`offs`)
//! from the pixel's flat position.
//!
//! The image is copied into a zero-bordered buffer whose rows are
//! `Wp = OW + KW - 1` long, so that every output pixel `(i, j)` becomes the
//! flat position `q = i Wp + j` and every term of its sum the flat read
//! `q + r Wp + s` of one channel plane: each `(c, r, s)` of the reduction is
//! one contiguous stretch of the plane for every pixel of a tile. A tile
//! is `TQ` consecutive positions (the lanes of the vector registers) by `F`
//! filters, all `TQ x F` sums in registers over a block of channels: per
//! `(c, r, s)` the kernel loads `TQ` input values and broadcasts `F`
//! weights, `TQ F` multiply-adds. Positions with `j >= OW` (the `KW - 1`
//! columns between rows) are computed and dropped. The channel loop is
//! blocked so that a block's input stretch stays in L1 while every filter
//! group uses it; the partial sums of a tile live in a small buffer
//! between channel blocks (the first block starts from zero). Tasks
//! (image, run of tiles) run in parallel, and each copies only the band
//! of rows of every channel's phase planes that its tiles read (the rows
//! of its positions and the window's reach), so the copy is read back
//! from cache; a valid stride-1 convolution of a standard-layout batch
//! reads the image in place (but for its last image). The bias epilogue
//! stores each row's pixels from vector registers.
//!
//! Kernels: AVX-512 (`TQ = 64`, four `zmm` per filter, 6 filters: 24
//! accumulators; or `TQ = 48` by 8 filters, chosen where it computes fewer
//! filters past the group's, as for 16 or 64 filters a group), AVX2 + FMA
//! (`TQ = 16`, 6 filters: 12 `ymm`), chosen by
//! what the processor has (detected once, as the GEMM libraries choose
//! theirs, so that `cpu::set_baseline_only` does not change the bits of a
//! result); a portable form for other processors and for `f64`. The sum of
//! each pixel runs over the channels in order, then `r`, then `s` (one
//! rounding per term: the vector forms fuse the multiply-add, so they give
//! the same bits whatever their tile). A batch's fresh result
//! ([`conv2d_grouped_new`]) is not zeroed first: the kernel writes it whole.
//!
//! One filter per group (a depthwise convolution) would leave all but one
//! filter of a tile zero; it runs per (image, group) task instead, which
//! copies the group's phase planes itself (while they are in cache: no
//! copy of the whole batch first) and sums each run of rows as one flat
//! stretch of positions (`Kernel::dw`: eight `zmm` or `ymm` of sums at a
//! time in the vector forms, sixteen values in the baseline one). Each term
//! is a product and then a sum, never fused, so every form gives the same
//! bits.

use crate::Error;
use ndarray::{ArrayView1, ArrayView4, ArrayViewMut4, Ix1};
use rayon::prelude::*;
use std::ops::{Add, Mul};

/// The element types the convolution runs on.
pub trait ConvElem:
    Copy + Send + Sync + Default + PartialOrd + Add<Output = Self> + Mul<Output = Self> + 'static
{
    /// The fastest kernel this processor has for the type.
    #[doc(hidden)]
    fn kernel() -> Kernel<Self>;
    /// The fastest kernel for `filters` filters a group.
    #[doc(hidden)]
    fn kernel_for(filters: usize) -> Kernel<Self> {
        let _ = filters;
        Self::kernel()
    }
    /// Every kernel this processor can run for the type, fastest first.
    #[doc(hidden)]
    fn kernels() -> Vec<Kernel<Self>>;
}

/// A tile kernel and its shape (`TQ` positions by `F` filters).
#[doc(hidden)]
#[derive(Clone, Copy)]
pub struct Kernel<T> {
    tq: usize,
    f: usize,
    /// `tile(x, w, acc, plane, offs, taps, cn, first)`: adds to `acc` (`F
    /// x TQ`, filter-major; zeros instead of its values when `first`) the
    /// sums over `cn` channels of the input at `x` (the first channel of
    /// the block, offset to the tile's first position; channels `plane`
    /// apart) times the weights at `w` (`[cn][taps][F]`), the term of tap
    /// `t` read `offs[t]` after the position.
    tile: TileFn<T>,
    /// `store(dst, stride, sums, b, relu)`: [`store_run`] (vector registers
    /// in the vector forms; the same bits).
    store: StoreFn<T>,
    /// The row form of one filter per group (depthwise), `dw(sums, len,
    /// x, plane, offs, taps, w, wstep, cn)`: writes to `sums[q]`, for `q`
    /// in `0..len`, the sum over `cn` channels (`plane` apart from `x`,
    /// which is offset to the first position) and `taps` taps (tap `t`
    /// read `offs[t]` after the position) of `w[(c taps + t) wstep] x[..]`,
    /// each term a product and then a sum (two roundings), channels then
    /// taps in order from zero: every form gives the same bits.
    dw: DwRow<T>,
    name: &'static str,
}

/// [`Kernel::tile`]'s signature.
type TileFn<T> = unsafe fn(*const T, *const T, *mut T, usize, *const usize, usize, usize, bool);

/// [`Kernel::store`]'s signature.
type StoreFn<T> = unsafe fn(*mut T, isize, &[T], T, bool);

/// [`Kernel::dw`]'s signature.
type DwRow<T> = unsafe fn(*mut T, usize, *const T, usize, *const usize, usize, *const T, usize, usize);

impl ConvElem for f32 {
    fn kernel() -> Kernel<f32> {
        Self::kernels()[0]
    }
    fn kernel_for(filters: usize) -> Kernel<f32> {
        #[cfg(target_arch = "x86_64")]
        if x86::features().1 {
            // The tile of the fewest filters computed past the group's
            // (`filters` rounded up to the tile's), 8 filters on a tie.
            let computed = |k: &Kernel<f32>| filters.div_ceil(k.f) * k.f;
            return if computed(&x86::K512X8) <= computed(&x86::K512) { x86::K512X8 } else { x86::K512 };
        }
        Self::kernel()
    }
    fn kernels() -> Vec<Kernel<f32>> {
        let mut all = Vec::new();
        #[cfg(target_arch = "x86_64")]
        {
            let (fma, avx512) = x86::features();
            if avx512 {
                all.push(x86::K512);
                all.push(x86::K512X8);
            }
            if fma {
                all.push(x86::K256);
            }
        }
        all.push(portable::<f32>());
        all
    }
}

impl ConvElem for f64 {
    fn kernel() -> Kernel<f64> {
        portable::<f64>()
    }
    fn kernels() -> Vec<Kernel<f64>> {
        vec![portable::<f64>()]
    }
}

/// The portable kernel: 16 positions by 4 filters.
fn portable<T: ConvElem>() -> Kernel<T> {
    Kernel {
        tq: 16,
        f: 4,
        tile: tile_portable::<T, 16, 4>,
        store: store_run::<T>,
        dw: dw_portable::<T>,
        name: "portable",
    }
}

/// [`Kernel::dw`] in the baseline instruction set: 16 positions at a time
/// (four SSE2 registers of `f32`), the rest by [`dw_tail`].
///
/// # Safety
/// `sums` writable for `len` values; `x` readable for `cn` channels of
/// `plane` values, over `len + max(offs)` positions each; `offs` for `taps`
/// values; `w` at `(c taps + t) wstep` for every channel `c` and tap `t`.
#[allow(clippy::too_many_arguments)]
unsafe fn dw_portable<T: ConvElem>(
    sums: *mut T,
    len: usize,
    x: *const T,
    plane: usize,
    offs: *const usize,
    taps: usize,
    w: *const T,
    wstep: usize,
    cn: usize,
) {
    const B: usize = 16;
    // SAFETY: the caller's.
    let offs = unsafe { std::slice::from_raw_parts(offs, taps) };
    let mut j = 0;
    while j + B <= len {
        let mut a = [T::default(); B];
        for c in 0..cn {
            for (t, &off) in offs.iter().enumerate() {
                // SAFETY: the caller's (positions `j .. j + B` of the stretch).
                let (wv, src) =
                    unsafe { (*w.add((c * taps + t) * wstep), &*(x.add(c * plane + off + j) as *const [T; B])) };
                for (a, &v) in a.iter_mut().zip(src) {
                    *a = *a + wv * v;
                }
            }
        }
        // SAFETY: `j + B <= len`.
        unsafe { std::slice::from_raw_parts_mut(sums.add(j), B) }.copy_from_slice(&a);
        j += B;
    }
    // SAFETY: the caller's.
    unsafe { dw_tail(sums, j, len, x, plane, offs, w, wstep, cn) };
}

/// Positions `j..len` of [`Kernel::dw`], one at a time (the same terms in
/// the same order as the vector forms).
///
/// # Safety
/// As [`dw_portable`]'s.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn dw_tail<T: ConvElem>(
    sums: *mut T,
    j: usize,
    len: usize,
    x: *const T,
    plane: usize,
    offs: &[usize],
    w: *const T,
    wstep: usize,
    cn: usize,
) {
    let taps = offs.len();
    for q in j..len {
        let mut a = T::default();
        for c in 0..cn {
            for (t, &off) in offs.iter().enumerate() {
                // SAFETY: the caller's.
                unsafe { a = a + *w.add((c * taps + t) * wstep) * *x.add(c * plane + off + q) };
            }
        }
        // SAFETY: `q < len`.
        unsafe { *sums.add(q) = a };
    }
}

/// # Safety
/// `x` readable for `cn` channels of `plane` values from the tile's first
/// position on, over `TQ + max(offs)` positions each; `offs` for `taps`
/// values; `w` for `cn taps F` values; `acc` for `F TQ`.
#[allow(clippy::too_many_arguments)]
unsafe fn tile_portable<T: ConvElem, const TQ: usize, const F: usize>(
    x: *const T,
    w: *const T,
    acc: *mut T,
    plane: usize,
    offs: *const usize,
    taps: usize,
    cn: usize,
    first: bool,
) {
    let mut sums = [[T::default(); TQ]; F];
    for (f, row) in sums.iter_mut().enumerate().filter(|_| !first) {
        // SAFETY: `acc` holds `F TQ` values.
        row.copy_from_slice(unsafe { std::slice::from_raw_parts(acc.add(f * TQ), TQ) });
    }
    // SAFETY: `offs` holds `taps` values.
    let offs = unsafe { std::slice::from_raw_parts(offs, taps) };
    let mut wi = w;
    for c in 0..cn {
        for &off in offs {
            // SAFETY: within the stretch the caller guarantees.
            let xs = unsafe { std::slice::from_raw_parts(x.add(c * plane + off), TQ) };
            for row in sums.iter_mut() {
                // SAFETY: `w` holds `cn taps F` values.
                let b = unsafe { *wi };
                wi = unsafe { wi.add(1) };
                for (a, &v) in row.iter_mut().zip(xs) {
                    *a = *a + v * b;
                }
            }
        }
    }
    for (f, row) in sums.iter().enumerate() {
        // SAFETY: as above.
        unsafe { std::slice::from_raw_parts_mut(acc.add(f * TQ), TQ) }.copy_from_slice(row);
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::x86_dw::{dw256, dw512};
    use super::Kernel;
    use std::arch::x86_64::*;

    pub(super) const K512: Kernel<f32> =
        Kernel { tq: 64, f: 6, tile: tile512::<4, 6>, store: store512, dw: dw512, name: "avx512" };

    /// [`K512`] with tiles of 48 positions by 8 filters (24 `zmm` of sums
    /// too): for filter counts that 8 divides and 6 does not (16 filters
    /// a group ran as three blocks of 6, 18 computed).
    pub(super) const K512X8: Kernel<f32> =
        Kernel { tq: 48, f: 8, tile: tile512::<3, 8>, store: store512, dw: dw512, name: "avx512x8" };

    /// Whether the processor has AVX2 and FMA, and whether it also has
    /// AVX-512 (foundation): detected once. As the GEMM libraries do, the
    /// kernel follows the processor, not `cpu::set_baseline_only`: both
    /// vector kernels fuse every multiply-add in the same order, so every
    /// form of a generated function computes the same bits.
    pub(super) fn features() -> (bool, bool) {
        static DETECTED: std::sync::OnceLock<(bool, bool)> = std::sync::OnceLock::new();
        *DETECTED.get_or_init(|| {
            let fma = is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma");
            (fma, fma && is_x86_feature_detected!("avx512f"))
        })
    }
    pub(super) const K256: Kernel<f32> =
        Kernel { tq: 16, f: 6, tile: tile256, store: store256, dw: dw256, name: "avx2" };

    /// [`super::store_run`]'s contract: a contiguous run without the
    /// activation in `zmm` registers (then a masked vector), else
    /// `store_run` itself. One rounding per value (`s + b`): the same bits.
    unsafe fn store512(dst: *mut f32, stride: isize, sums: &[f32], b: f32, relu: bool) {
        // SAFETY: `K512` is chosen only where `features` found AVX-512.
        unsafe {
            if stride == 1 && !relu {
                store512_inner(dst, sums, b)
            } else {
                super::store_run(dst, stride, sums, b, relu)
            }
        }
    }

    #[target_feature(enable = "avx512f,avx2,fma")]
    unsafe fn store512_inner(dst: *mut f32, sums: &[f32], b: f32) {
        // SAFETY: `dst` holds `sums.len()` values (the caller's); the last
        // vector's lanes past the end are masked (neither read nor written).
        unsafe {
            let bv = _mm512_set1_ps(b);
            let mut j = 0;
            while j < sums.len() {
                let left = sums.len() - j;
                let m: __mmask16 = if left >= 16 { 0xffff } else { (1u16 << left) - 1 };
                let v = _mm512_add_ps(_mm512_maskz_loadu_ps(m, sums.as_ptr().add(j)), bv);
                _mm512_mask_storeu_ps(dst.add(j), m, v);
                j += 16;
            }
        }
    }

    /// [`store512`] in `ymm` registers (the rest one at a time).
    unsafe fn store256(dst: *mut f32, stride: isize, sums: &[f32], b: f32, relu: bool) {
        // SAFETY: `K256` is chosen only where `features` found AVX2.
        unsafe {
            if stride == 1 && !relu {
                store256_inner(dst, sums, b)
            } else {
                super::store_run(dst, stride, sums, b, relu)
            }
        }
    }

    #[target_feature(enable = "avx2,fma")]
    unsafe fn store256_inner(dst: *mut f32, sums: &[f32], b: f32) {
        // SAFETY: `dst` holds `sums.len()` values (the caller's).
        unsafe {
            let bv = _mm256_set1_ps(b);
            let mut j = 0;
            while j + 8 <= sums.len() {
                _mm256_storeu_ps(dst.add(j), _mm256_add_ps(_mm256_loadu_ps(sums.as_ptr().add(j)), bv));
                j += 8;
            }
            for (l, &v) in sums.iter().enumerate().skip(j) {
                *dst.add(l) = v + b;
            }
        }
    }

    /// [`super::tile_portable`]'s contract with `TQ = 16 V` and `F`.
    #[allow(clippy::too_many_arguments)]
    unsafe fn tile512<const V: usize, const F: usize>(
        x: *const f32,
        w: *const f32,
        acc: *mut f32,
        plane: usize,
        offs: *const usize,
        taps: usize,
        cn: usize,
        first: bool,
    ) {
        // SAFETY: `K512` is chosen only where `features` found AVX-512,
        // AVX2 and FMA.
        unsafe { tile512_inner::<V, F>(x, w, acc, plane, offs, taps, cn, first) }
    }

    #[target_feature(enable = "avx512f,avx2,fma")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn tile512_inner<const V: usize, const F: usize>(
        x: *const f32,
        w: *const f32,
        acc: *mut f32,
        plane: usize,
        offs: *const usize,
        taps: usize,
        cn: usize,
        first: bool,
    ) {
        // SAFETY (every block below): the reads and writes stay within the
        // stretches the caller guarantees (`tile_portable`).
        unsafe {
            let mut a = [[_mm512_setzero_ps(); V]; F];
            for (f, row) in a.iter_mut().enumerate().filter(|_| !first) {
                for (v, r) in row.iter_mut().enumerate() {
                    *r = _mm512_loadu_ps(acc.add(f * 16 * V + v * 16));
                }
            }
            let mut wi = w;
            for c in 0..cn {
                let xc = x.add(c * plane);
                for t in 0..taps {
                    let xs = xc.add(*offs.add(t));
                    let xv: [__m512; V] = std::array::from_fn(|v| _mm512_loadu_ps(xs.add(16 * v)));
                    for (f, row) in a.iter_mut().enumerate() {
                        let b = _mm512_set1_ps(*wi.add(f));
                        for (r, &xx) in row.iter_mut().zip(&xv) {
                            *r = _mm512_fmadd_ps(xx, b, *r);
                        }
                    }
                    wi = wi.add(F);
                }
            }
            for (f, row) in a.iter().enumerate() {
                for (v, r) in row.iter().enumerate() {
                    _mm512_storeu_ps(acc.add(f * 16 * V + v * 16), *r);
                }
            }
        }
    }

    /// [`super::tile_portable`]'s contract with `TQ = 16`, `F = 6`.
    #[allow(clippy::too_many_arguments)]
    unsafe fn tile256(
        x: *const f32,
        w: *const f32,
        acc: *mut f32,
        plane: usize,
        offs: *const usize,
        taps: usize,
        cn: usize,
        first: bool,
    ) {
        // SAFETY: `K256` is chosen only where `features` found AVX2 and FMA.
        unsafe { tile256_inner(x, w, acc, plane, offs, taps, cn, first) }
    }

    #[target_feature(enable = "avx2,fma")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn tile256_inner(
        x: *const f32,
        w: *const f32,
        acc: *mut f32,
        plane: usize,
        offs: *const usize,
        taps: usize,
        cn: usize,
        first: bool,
    ) {
        // SAFETY: as in `tile512_inner`.
        unsafe {
            let mut a = [[_mm256_setzero_ps(); 2]; 6];
            for (f, row) in a.iter_mut().enumerate().filter(|_| !first) {
                for (v, r) in row.iter_mut().enumerate() {
                    *r = _mm256_loadu_ps(acc.add(f * 16 + v * 8));
                }
            }
            let mut wi = w;
            for c in 0..cn {
                let xc = x.add(c * plane);
                for t in 0..taps {
                    let xs = xc.add(*offs.add(t));
                    let x0 = _mm256_loadu_ps(xs);
                    let x1 = _mm256_loadu_ps(xs.add(8));
                    for (f, row) in a.iter_mut().enumerate() {
                        let b = _mm256_set1_ps(*wi.add(f));
                        row[0] = _mm256_fmadd_ps(x0, b, row[0]);
                        row[1] = _mm256_fmadd_ps(x1, b, row[1]);
                    }
                    wi = wi.add(6);
                }
            }
            for (f, row) in a.iter().enumerate() {
                for (v, r) in row.iter().enumerate() {
                    _mm256_storeu_ps(acc.add(f * 16 + v * 8), *r);
                }
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86_dw {
    //! [`super::Kernel::dw`] in AVX2 and AVX-512 registers: eight vectors
    //! of sums at a time (the add's latency, four cycles, spread over eight
    //! independent sums), then one, then the rest (one at a time for AVX2,
    //! a masked vector for AVX-512). A product and then a sum per term,
    //! never fused: the bits of [`super::dw_portable`].
    use super::dw_tail;
    use std::arch::x86_64::*;

    /// [`super::dw_portable`]'s contract.
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn dw256(
        sums: *mut f32,
        len: usize,
        x: *const f32,
        plane: usize,
        offs: *const usize,
        taps: usize,
        w: *const f32,
        wstep: usize,
        cn: usize,
    ) {
        // SAFETY: `K256` (which holds this form) is chosen only where
        // `x86::features` found AVX2 and FMA.
        unsafe { dw256_inner(sums, len, x, plane, offs, taps, w, wstep, cn) }
    }

    #[target_feature(enable = "avx2,fma")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn dw256_inner(
        sums: *mut f32,
        len: usize,
        x: *const f32,
        plane: usize,
        offs: *const usize,
        taps: usize,
        w: *const f32,
        wstep: usize,
        cn: usize,
    ) {
        // SAFETY (every block below): within the stretches the caller
        // guarantees (`dw_portable`), positions `j ..` below `len`.
        unsafe {
            let offs = std::slice::from_raw_parts(offs, taps);
            let mut j = 0;
            while j + 64 <= len {
                let mut a = [_mm256_setzero_ps(); 8];
                for c in 0..cn {
                    for (t, &off) in offs.iter().enumerate() {
                        let wv = _mm256_set1_ps(*w.add((c * taps + t) * wstep));
                        let xs = x.add(c * plane + off + j);
                        for (v, a) in a.iter_mut().enumerate() {
                            *a = _mm256_add_ps(*a, _mm256_mul_ps(wv, _mm256_loadu_ps(xs.add(8 * v))));
                        }
                    }
                }
                for (v, a) in a.iter().enumerate() {
                    _mm256_storeu_ps(sums.add(j + 8 * v), *a);
                }
                j += 64;
            }
            while j + 8 <= len {
                let mut a = _mm256_setzero_ps();
                for c in 0..cn {
                    for (t, &off) in offs.iter().enumerate() {
                        let wv = _mm256_set1_ps(*w.add((c * taps + t) * wstep));
                        a = _mm256_add_ps(a, _mm256_mul_ps(wv, _mm256_loadu_ps(x.add(c * plane + off + j))));
                    }
                }
                _mm256_storeu_ps(sums.add(j), a);
                j += 8;
            }
            dw_tail(sums, j, len, x, plane, offs, w, wstep, cn);
        }
    }

    /// [`super::dw_portable`]'s contract.
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn dw512(
        sums: *mut f32,
        len: usize,
        x: *const f32,
        plane: usize,
        offs: *const usize,
        taps: usize,
        w: *const f32,
        wstep: usize,
        cn: usize,
    ) {
        // SAFETY: `K512` (which holds this form) is chosen only where
        // `x86::features` found AVX-512, AVX2 and FMA.
        unsafe { dw512_inner(sums, len, x, plane, offs, taps, w, wstep, cn) }
    }

    #[target_feature(enable = "avx512f,avx2,fma")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn dw512_inner(
        sums: *mut f32,
        len: usize,
        x: *const f32,
        plane: usize,
        offs: *const usize,
        taps: usize,
        w: *const f32,
        wstep: usize,
        cn: usize,
    ) {
        // SAFETY (every block below): within the stretches the caller
        // guarantees (`dw_portable`), positions `j ..` below `len`; the
        // last vector's loads and store are masked to the positions left
        // (masked lanes are neither read nor written).
        unsafe {
            let offs = std::slice::from_raw_parts(offs, taps);
            let mut j = 0;
            while j + 128 <= len {
                let mut a = [_mm512_setzero_ps(); 8];
                for c in 0..cn {
                    for (t, &off) in offs.iter().enumerate() {
                        let wv = _mm512_set1_ps(*w.add((c * taps + t) * wstep));
                        let xs = x.add(c * plane + off + j);
                        for (v, a) in a.iter_mut().enumerate() {
                            *a = _mm512_add_ps(*a, _mm512_mul_ps(wv, _mm512_loadu_ps(xs.add(16 * v))));
                        }
                    }
                }
                for (v, a) in a.iter().enumerate() {
                    _mm512_storeu_ps(sums.add(j + 16 * v), *a);
                }
                j += 128;
            }
            while j < len {
                let m: __mmask16 = if len - j >= 16 { 0xffff } else { (1u16 << (len - j)) - 1 };
                let mut a = _mm512_setzero_ps();
                for c in 0..cn {
                    for (t, &off) in offs.iter().enumerate() {
                        let wv = _mm512_set1_ps(*w.add((c * taps + t) * wstep));
                        a = _mm512_add_ps(a, _mm512_mul_ps(wv, _mm512_maskz_loadu_ps(m, x.add(c * plane + off + j))));
                    }
                }
                _mm512_mask_storeu_ps(sums.add(j), m, a);
                j += 16;
            }
        }
    }
}

/// Writes `sums[l] + b` (then `max(0, _)` when `relu`) to `dst` at `l`
/// times `stride` for every `l`.
///
/// # Safety
/// `dst` valid for writes at those offsets.
#[inline]
unsafe fn store_run<T: ConvElem>(dst: *mut T, stride: isize, sums: &[T], b: T, relu: bool) {
    let zero = T::default();
    let act = |s: T| {
        let v = s + b;
        // (`max(0, NaN)` is 0, as `f32::max` has it.)
        match (relu, v.partial_cmp(&zero)) {
            (true, Some(std::cmp::Ordering::Greater)) | (false, _) => v,
            (true, _) => zero,
        }
    };
    if stride == 1 {
        // SAFETY: the caller's.
        let row = unsafe { std::slice::from_raw_parts_mut(dst, sums.len()) };
        if relu {
            for (d, &s) in row.iter_mut().zip(sums) {
                *d = act(s);
            }
        } else {
            for (d, &s) in row.iter_mut().zip(sums) {
                *d = s + b;
            }
        }
    } else {
        for (l, &s) in sums.iter().enumerate() {
            // SAFETY: the caller's.
            unsafe { *dst.offset(l as isize * stride) = act(s) };
        }
    }
}

/// Writes `line[k sw]` to `dst[k]` for every `k` of `dst` (`line` holds at
/// least `(dst.len() - 1) sw + 1` values). Strides 1 to 4 run as loops over
/// arrays of that many values, which the compiler vectorizes (a stride-2
/// row split into its column phases one value at a time was most of a
/// strided depthwise convolution's copy).
fn gather<T: Copy>(dst: &mut [std::mem::MaybeUninit<T>], line: &[T], sw: usize) {
    fn fixed<T: Copy, const S: usize>(dst: &mut [std::mem::MaybeUninit<T>], line: &[T]) {
        let (chunks, _) = line.as_chunks::<S>();
        let whole = chunks.len().min(dst.len());
        for (d, c) in dst[..whole].iter_mut().zip(chunks) {
            d.write(c[0]);
        }
        for (k, d) in dst.iter_mut().enumerate().skip(whole) {
            d.write(line[k * S]);
        }
    }
    match sw {
        1 => fixed::<T, 1>(dst, line),
        2 => fixed::<T, 2>(dst, line),
        3 => fixed::<T, 3>(dst, line),
        4 => fixed::<T, 4>(dst, line),
        _ => {
            for (d, v) in dst.iter_mut().zip(line.iter().step_by(sw)) {
                d.write(*v);
            }
        }
    }
}

/// The shape mismatch `Error::Shape` for `conv2d`'s arguments.
fn shape_error(function: &str, param: &str, axis: usize, symbol: &str, expected: usize, found: usize) -> Error {
    Error::Shape {
        function: function.to_string(),
        param: param.to_string(),
        axis,
        symbol: symbol.to_string(),
        expected,
        found,
    }
}

/// The geometry of a convolution's window: output pixel `(i, j)`, tap
/// `(r, s)` reads the image at `(i sh + r dh - top, j sw + s dw - left)`
/// (zero outside it). A pair `(top, left)` converts into the window of
/// those pads with strides and dilations 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// `(top, left)`: the pads before the first row and column.
    pub pad: (usize, usize),
    /// `(sh, sw)`, each at least 1.
    pub stride: (usize, usize),
    /// `(dh, dw)`, each at least 1.
    pub dilation: (usize, usize),
}

impl From<(usize, usize)> for Window {
    fn from(pad: (usize, usize)) -> Window {
        Window { pad, stride: (1, 1), dilation: (1, 1) }
    }
}

/// Writes into `out` (`N x O x OH x OW`, any strides) the convolution of
/// `x` (`N x C x H x W`) by `k` (`O x C x KH x KW`, any strides) as the
/// module describes, over `window` (a [`Window`], or `(top, left)`: the
/// pads of a stride-1 convolution) with zeros outside `x`, adding
/// `bias` (its first `O` values) and applying `max(0, _)` when `relu`. `function` names the
/// caller in errors: `Error::Shape` when the extents disagree,
/// `Error::Extent` when a buffer's size overflows or a stride or dilation
/// is 0, `Error::Alloc` when memory runs out. Any other extent may be zero.
pub fn conv2d<T: ConvElem>(
    function: &str,
    x: ArrayView4<'_, T>,
    k: ArrayView4<'_, T>,
    bias: Option<ArrayView1<'_, T>>,
    window: impl Into<Window>,
    relu: bool,
    out: ArrayViewMut4<'_, T>,
) -> Result<(), Error> {
    conv2d_with(function, T::kernel_for(k.dim().0), x, k, bias, window, relu, out)
}

/// [`conv2d`] in `groups` groups: `x` has `groups C` channels, `k` is
/// `O x C x KH x KW` with `O` a multiple of `groups`, and filter `o` reads
/// the channels `g C .. (g + 1) C` of its group `g = o / (O / groups)`:
/// `y[n, o, i, j] = bias[o] + sum[c, r, s](x[n, g C + c, ..] * k[o, c, r, s])`
/// (ONNX's `Conv` with `group`). One group is [`conv2d`]. Errors as
/// [`conv2d`]'s, and `Error::Shape` when `x`'s channels are not `groups`
/// times `k`'s or `groups` does not divide the filters, `Error::Extent`
/// for 0 groups (unless there are neither channels nor filters).
#[allow(clippy::too_many_arguments)]
pub fn conv2d_grouped<T: ConvElem>(
    function: &str,
    x: ArrayView4<'_, T>,
    k: ArrayView4<'_, T>,
    bias: Option<ArrayView1<'_, T>>,
    window: impl Into<Window>,
    groups: usize,
    relu: bool,
    out: ArrayViewMut4<'_, T>,
) -> Result<(), Error> {
    let kernel = T::kernel_for(k.dim().0 / groups.max(1));
    conv2d_impl(function, kernel, x, k, bias, window.into(), groups, relu, Out::of(out))
}

/// [`conv2d_grouped`] into a new standard-layout array of `shape` from
/// the buffer pool, which the kernel writes whole: it is not zeroed first
/// (a fresh output's zeros were a write of the whole result and, for large
/// ones, its page faults). Axis `a` of the array holds the kernel's axis
/// `order[a]` of `N x O x OH x OW` (`[0, 1, 2, 3]`; `[0, 2, 3, 1]` for a
/// result stored channels last). `tensor` names the result in
/// `Error::Alloc`.
#[allow(clippy::too_many_arguments)]
pub fn conv2d_grouped_new<T: ConvElem>(
    function: &str,
    tensor: &str,
    shape: [usize; 4],
    order: [usize; 4],
    x: ArrayView4<'_, T>,
    k: ArrayView4<'_, T>,
    bias: Option<ArrayView1<'_, T>>,
    window: impl Into<Window>,
    groups: usize,
    relu: bool,
) -> Result<ndarray::Array4<T>, Error> {
    let inv = inverse_order(function, order)?;
    if groups == 0 {
        // (`conv2d_impl` accepts 0 groups without writing `out`.)
        let mut y = crate::pool::zeros(function, tensor, shape, T::default())?;
        let view = y.view_mut().permuted_axes(inv);
        conv2d_impl(function, T::kernel(), x, k, bias, window.into(), groups, relu, Out::of(view))?;
        return Ok(y);
    }
    let mut y = crate::pool::try_uninit::<T, ndarray::Ix4>(function, tensor, ndarray::Dim(shape))?;
    let dim = (shape[inv[0]], shape[inv[1]], shape[inv[2]], shape[inv[3]]);
    let strides = inv.map(|a| y.strides()[a]);
    let out = Out { ptr: y.as_mut_ptr().cast::<T>(), dim, strides };
    let kernel = T::kernel_for(k.dim().0 / groups);
    conv2d_impl(function, kernel, x, k, bias, window.into(), groups, relu, out)?;
    // SAFETY: with at least one group, `conv2d_impl` returns `Ok` only
    // after writing every value of `out` (the tiles cover every position
    // of every filter, the depthwise rows every row), or when `out` is
    // empty.
    Ok(unsafe { y.assume_init() })
}

/// The axes of an array whose axis `a` holds the kernel's axis `order[a]`
/// in the kernel's order (`permuted_axes` of it is the kernel's view).
pub(crate) fn inverse_order(function: &str, order: [usize; 4]) -> Result<[usize; 4], Error> {
    let mut inv = [usize::MAX; 4];
    for (a, &k) in order.iter().enumerate() {
        match inv.get_mut(k) {
            Some(slot) if *slot == usize::MAX => *slot = a,
            _ => {
                return Err(Error::Extent {
                    function: function.to_string(),
                    message: format!("internal error in einlang: the result order {order:?} is not a permutation"),
                })
            }
        }
    }
    Ok(inv)
}

/// The output of [`conv2d_impl`]: `dim` values at `ptr` with `strides` (in
/// elements), written through raw pointers only (never read).
struct Out<T> {
    ptr: *mut T,
    dim: (usize, usize, usize, usize),
    strides: [isize; 4],
}

impl<T> Out<T> {
    fn of(mut out: ArrayViewMut4<'_, T>) -> Out<T> {
        let strides = [0, 1, 2, 3].map(|a| out.strides()[a]);
        Out { ptr: out.as_mut_ptr(), dim: out.dim(), strides }
    }
}

/// [`conv2d_grouped`] with a given kernel (one of [`kernels`]).
#[doc(hidden)]
#[allow(clippy::too_many_arguments)]
pub fn conv2d_grouped_with<T: ConvElem>(
    function: &str,
    kernel: Kernel<T>,
    x: ArrayView4<'_, T>,
    k: ArrayView4<'_, T>,
    bias: Option<ArrayView1<'_, T>>,
    window: impl Into<Window>,
    groups: usize,
    relu: bool,
    out: ArrayViewMut4<'_, T>,
) -> Result<(), Error> {
    conv2d_impl(function, kernel, x, k, bias, window.into(), groups, relu, Out::of(out))
}

/// Every kernel this processor can run for `T`, fastest first (for
/// tests and benchmarks).
#[doc(hidden)]
pub fn kernels<T: ConvElem>() -> Vec<Kernel<T>> {
    T::kernels()
}

impl<T> Kernel<T> {
    /// The kernel's name (`avx512`, `avx2`, `portable`).
    pub fn name(&self) -> &'static str {
        self.name
    }
}

/// [`conv2d`] with a given kernel (one of [`kernels`]).
#[doc(hidden)]
#[allow(clippy::too_many_arguments)]
pub fn conv2d_with<T: ConvElem>(
    function: &str,
    kernel: Kernel<T>,
    x: ArrayView4<'_, T>,
    k: ArrayView4<'_, T>,
    bias: Option<ArrayView1<'_, T>>,
    window: impl Into<Window>,
    relu: bool,
    out: ArrayViewMut4<'_, T>,
) -> Result<(), Error> {
    conv2d_impl(function, kernel, x, k, bias, window.into(), 1, relu, Out::of(out))
}

/// The convolution in `cg` groups (one for [`conv2d`]).
#[allow(clippy::too_many_arguments)]
fn conv2d_impl<T: ConvElem>(
    function: &str,
    kernel: Kernel<T>,
    x: ArrayView4<'_, T>,
    k: ArrayView4<'_, T>,
    bias: Option<ArrayView1<'_, T>>,
    window: Window,
    cg: usize,
    relu: bool,
    out: Out<T>,
) -> Result<(), Error> {
    let Window { pad, stride: (sh, sw), dilation: (dh, dw) } = window;
    let (n, c, h, w) = x.dim();
    let (o, kc, kh, kw) = k.dim();
    let (on, oo, oh, ow) = out.dim;
    if cg == 0 {
        if c == 0 && o == 0 {
            return Ok(());
        }
        return Err(Error::Extent { function: function.to_string(), message: "a convolution in 0 groups".to_string() });
    }
    if kc.checked_mul(cg) != Some(c) {
        return Err(shape_error(function, "k", 1, "C", c / cg, kc));
    }
    if o % cg != 0 {
        return Err(shape_error(function, "k", 0, "O", o.next_multiple_of(cg), o));
    }
    // Filters per group.
    let fpg = o / cg;
    if on != n {
        return Err(shape_error(function, "out", 0, "N", n, on));
    }
    if oo != o {
        return Err(shape_error(function, "out", 1, "O", o, oo));
    }
    if let Some(b) = &bias {
        if b.len() < o {
            return Err(shape_error(function, "bias", 0, "O", o, b.len()));
        }
    }
    if on * oo * oh * ow == 0 {
        return Ok(());
    }
    let too_large = || Error::Extent {
        function: function.to_string(),
        message: format!("a convolution of {n}x{c}x{h}x{w} by {o}x{c}x{kh}x{kw} into {oh}x{ow} is too large"),
    };
    if sh == 0 || sw == 0 || dh == 0 || dw == 0 {
        return Err(Error::Extent {
            function: function.to_string(),
            message: format!("a convolution with strides {sh}x{sw} and dilations {dh}x{dw} (each must be at least 1)"),
        });
    }
    let (tq, fg) = (kernel.tq, kernel.f);
    // The padded image read at `(i sh + r dh, j sw + s dw)` is split by
    // the stride's phases: phase plane `(a, b)` holds the padded image's
    // rows `a, a + sh, ..` and columns `b, b + sw, ..`, so tap `(r, s)`
    // reads plane `(r dh % sh, s dw % sw)` at `(i + r dh / sh, j + s dw /
    // sw)`: the pixels of one row of the output are consecutive there.
    // Only the phases some tap reads are kept (one for stride 1).
    let phases = |kx: usize, d: usize, st: usize| -> Option<(Vec<usize>, usize)> {
        let mut seen: Vec<usize> = (0..kx).map(|r| Some(r.checked_mul(d)? % st)).collect::<Option<_>>()?;
        seen.sort_unstable();
        seen.dedup();
        if seen.is_empty() {
            seen.push(0);
        }
        let reach = kx.saturating_sub(1).checked_mul(d)? / st;
        Some((seen, reach))
    };
    let (row_phases, row_reach) = phases(kh, dh, sh).ok_or_else(too_large)?;
    let (col_phases, col_reach) = phases(kw, dw, sw).ok_or_else(too_large)?;
    // Each phase plane: `hp` rows of `wp`.
    let wp = ow.checked_add(col_reach).ok_or_else(too_large)?;
    let hp = oh.checked_add(row_reach).ok_or_else(too_large)?;
    let phase = hp.checked_mul(wp).ok_or_else(too_large)?;
    let nph = row_phases.len() * col_phases.len();
    let plane = phase.checked_mul(nph).ok_or_else(too_large)?;
    let positions = oh.checked_mul(wp).ok_or_else(too_large)?;
    let tiles = positions.div_ceil(tq);
    let taps = kh.checked_mul(kw).ok_or_else(too_large)?;
    // Tap `(r, s)`'s read, after the position, in `(r, s)` order (the
    // order of the weights and of the sum).
    let mut offs = Vec::with_capacity(taps);
    for r in 0..kh {
        let (rd, rp) = (r * dh / sh, row_phases.binary_search(&(r * dh % sh)).unwrap_or(0));
        for s in 0..kw {
            let (cd, cp) = (s * dw / sw, col_phases.binary_search(&(s * dw % sw)).unwrap_or(0));
            offs.push((rp * col_phases.len() + cp) * phase + rd * wp + cd);
        }
    }
    let reach = offs.iter().copied().max().unwrap_or(0);
    // Reads of the last tile past the last channel's planes.
    let slack = (tiles * tq + reach).saturating_sub(plane) + 1;
    let image = c.checked_mul(plane).ok_or_else(too_large)?;
    // A valid stride-1 convolution of a standard-layout image reads the
    // image itself, but for the last one: the last tile's reads past an
    // image's end fall in the next image, which must exist (the last is
    // copied).
    let direct =
        pad == (0, 0) && (sh, sw) == (1, 1) && wp == w && hp == h && n > 1 && image >= slack && x.is_standard_layout();
    let copied = if direct { 1 } else { n };
    let first_copied = n - copied;
    // Blocks of `fg` filters per convolution group.
    let groups = fpg.div_ceil(fg);
    let wlen = groups
        .checked_mul(fg)
        .and_then(|v| v.checked_mul(cg))
        .and_then(|v| v.checked_mul(kc))
        .and_then(|v| v.checked_mul(taps))
        .ok_or_else(too_large)?;

    let (top, left) = pad;
    let (row_phases, col_phases) = (&row_phases, &col_phases);
    // Writes rows `r0 .. r0 + rows` of channel `cc` of image `nn`'s phase
    // planes into `planes` (one run of `rows wp` values per phase, in
    // phase order). Each source row is read for every column phase while
    // it is in cache; rows past the planes' `hp` are written too (only
    // dropped positions read them).
    // Per column phase `pc`: column `jj` of its planes is column `jj sw +
    // pc - left` of the image, inside it for `jj` in `j0..j1`, the first
    // of them the image's column `from`.
    let col_runs: Vec<(usize, usize, usize)> = col_phases
        .iter()
        .map(|&pc| {
            let first = |lo: usize| lo.saturating_sub(pc).div_ceil(sw);
            let (j0, j1) = (first(left).min(wp), first(left.saturating_add(w)).min(wp));
            (j0, j1, if j0 < j1 { j0 * sw + pc - left } else { 0 })
        })
        .collect();
    let col_runs = &col_runs;
    // The image's values in standard layout, when it has it.
    let dense = x.as_slice();
    let fill = |planes: &mut [std::mem::MaybeUninit<T>], nn: usize, cc: usize, r0: usize, rows: usize| {
        let src = x.index_axis(ndarray::Axis(0), nn);
        let src = src.index_axis(ndarray::Axis(0), cc);
        let chan = dense.map(|d| &d[(nn * c + cc) * h * w..][..h * w]);
        let run = rows * wp;
        let ncp = col_phases.len();
        // Rows in order, each row's phases in order: for the phases of a
        // stride, the image's rows in order (one stream through the image).
        for i in 0..rows {
            for (rpi, &pr) in row_phases.iter().enumerate() {
                // Row `r0 + i` is the image's row `(r0 + i) sh + pr - top`.
                let si = ((r0 + i) * sh + pr).checked_sub(top).filter(|&si| si < h);
                for (cpi, &(j0, j1, from)) in col_runs.iter().enumerate() {
                    let at = (rpi * ncp + cpi) * run + i * wp;
                    let row = &mut planes[at..at + wp];
                    let Some(si) = si.filter(|_| j0 < j1) else {
                        row.iter_mut().for_each(|d| {
                            d.write(T::default());
                        });
                        continue;
                    };
                    row[..j0].iter_mut().for_each(|d| {
                        d.write(T::default());
                    });
                    match chan {
                        // A contiguous row: every `sw`-th value from `from`.
                        Some(chan) => gather(&mut row[j0..j1], &chan[si * w + from..(si + 1) * w], sw),
                        None => {
                            let line = src.row(si);
                            let line = line.slice(ndarray::s![from..;sw]);
                            for (d, v) in row[j0..j1].iter_mut().zip(line.iter()) {
                                d.write(*v);
                            }
                        }
                    }
                    row[j1..].iter_mut().for_each(|d| {
                        d.write(T::default());
                    });
                }
            }
        }
    };
    // Every task copies the planes it reads itself, while they are in
    // cache (no copy of the whole batch first, which the tasks would read
    // back from memory): one filter per group (depthwise) its group's
    // whole planes, the tiles the band of rows their positions read.
    let dwise = fpg == 1 && cg > 1;

    let mut wb = crate::pool::try_uninit::<T, Ix1>(function, "convolution weights", Ix1(wlen))?;
    {
        // `[convolution group][block][c][r][s][filter]`, in that order,
        // zero past the group's last filter.
        let ws = wb.as_slice_mut().expect("a new buffer is contiguous");
        let mut slots = ws.iter_mut();
        // (Reads by strides, not checked indexing: the packing runs alone
        // before the parallel part.)
        let (kp, ks) = (k.as_ptr(), [0, 1, 2, 3].map(|a| k.strides()[a]));
        // SAFETY: every call below passes indices within `k`'s extents
        // (`gg fpg + of < O`, `cc < C`, `r < KH`, `s < KW`).
        let read = |of: usize, cc: usize, r: usize, s: usize| unsafe {
            *kp.offset(of as isize * ks[0] + cc as isize * ks[1] + r as isize * ks[2] + s as isize * ks[3])
        };
        for gg in 0..cg {
            for g in 0..groups {
                for cc in 0..kc {
                    for r in 0..kh {
                        for s in 0..kw {
                            for of in g * fg..(g + 1) * fg {
                                let v = if of < fpg { read(gg * fpg + of, cc, r, s) } else { T::default() };
                                if let Some(d) = slots.next() {
                                    d.write(v);
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    // SAFETY: every element was written above.
    let wb = unsafe { wb.assume_init() };
    let ws = wb.as_slice().expect("a new buffer is contiguous");

    // Channels per block: the block's input stretch within about 16 KB.
    let stretch = nph * (tq + row_reach * wp + col_reach);
    let cb = ((16 << 10) / (stretch * std::mem::size_of::<T>()).max(1)).clamp(1, kc.max(1));
    // Blocks of even size (31 + 1 channels would run the last block's
    // filter groups for one channel).
    let cb = kc.max(1).div_ceil(kc.max(1).div_ceil(cb));
    // Tiles per task: enough tasks for the threads, each a few tiles.
    let per_task = (n * tiles / (4 * rayon::current_num_threads())).clamp(1, 16);
    // Runs of even length (16 + 7 tiles would leave one thread the long
    // runs' last while the other is idle).
    let per_task = tiles.div_ceil(tiles.div_ceil(per_task)).max(1);
    let runs = tiles.div_ceil(per_task);
    let strides = out.strides;
    let optr = crate::par::Shared(out.ptr);
    let bias = bias.map(|b| b.iter().take(o).copied().collect::<Vec<T>>());
    let zero = T::default();
    if dwise {
        // One filter per group (a depthwise convolution): a tile of `fg`
        // filters would compute `fg - 1` of zeros. Each task is one
        // image's group; its positions (`q = i wp + j`, as the tiles'),
        // a few rows at a time, are one flat stretch of every plane the
        // group reads, summed by the kernel's row form (`Kernel::dw`, in
        // the processor's widest registers), and the pixels (`j < ow`)
        // of each row are stored with the bias.
        let rows = (4096 / wp.max(1)).clamp(1, oh);
        (0..n * cg).into_par_iter().try_for_each(|task| -> Result<(), Error> {
            let optr = &optr;
            let (nn, gg) = (task / cg, task % cg);
            // The group's planes: in `x` itself (a valid stride-1
            // convolution, but for the last image), or copied here.
            let local = if nn < first_copied {
                None
            } else {
                let len = kc.checked_mul(plane).ok_or_else(too_large)?;
                let mut own = crate::pool::try_uninit::<T, Ix1>(function, "convolution input", Ix1(len))?;
                let dst = own.as_slice_mut().expect("a new buffer is contiguous");
                for (cc, planes) in dst.chunks_mut(plane.max(1)).enumerate() {
                    fill(planes, nn, gg * kc + cc, 0, hp);
                }
                // SAFETY: every element was written by `fill`.
                Some(unsafe { own.assume_init() })
            };
            let chan0 = match &local {
                Some(own) => own.as_ptr(),
                // SAFETY: image `nn`'s channel `gg kc` of `x`, whose standard
                // layout holds `n` images of `image` values.
                None => unsafe { x.as_ptr().add(nn * image + gg * kc * plane) },
            };
            let mut sums = crate::pool::try_uninit::<T, Ix1>(function, "convolution rows", Ix1(rows * wp))?;
            sums.iter_mut().for_each(|v| {
                v.write(zero);
            });
            // SAFETY: written above.
            let mut sums_buf = unsafe { sums.assume_init() };
            let sums = sums_buf.as_slice_mut().expect("a new buffer is contiguous");
            let b = bias.as_ref().map_or(zero, |b| b[gg]);
            let mut i0 = 0;
            while i0 < oh {
                let i1 = (i0 + rows).min(oh);
                // The last row's positions end at its last pixel.
                let len = (i1 - i0 - 1) * wp + ow;
                // SAFETY: positions `i0 wp .. i0 wp + len` plus each tap's
                // offset, at most `hp wp - 1` plus the last phase's start,
                // lie within each of the group's `kc` planes from `chan0`;
                // the weights of group `gg`'s channels within `ws`; `sums`
                // holds `rows wp >= len`.
                unsafe {
                    (kernel.dw)(
                        sums.as_mut_ptr(),
                        len,
                        chan0.add(i0 * wp),
                        plane,
                        offs.as_ptr(),
                        taps,
                        ws.as_ptr().add(gg * groups * kc * taps * fg),
                        fg,
                        kc,
                    )
                };
                for i in i0..i1 {
                    let at = nn as isize * strides[0] + gg as isize * strides[1] + i as isize * strides[2];
                    // SAFETY: pixels `(nn, gg, i, ..)` are within `out`, and
                    // this task alone writes them.
                    unsafe { (kernel.store)(optr.0.offset(at), strides[3], &sums[(i - i0) * wp..][..ow], b, relu) };
                }
                i0 = i1;
            }
            // The task's buffers go back to the pool for the next task (large
            // ones freed would be mapped afresh, page by page).
            crate::pool::recycle(sums_buf);
            if let Some(own) = local {
                crate::pool::recycle(own);
            }
            Ok(())
        })?;
        return Ok(());
    }
    // Where the images' runs are fewer than four a thread (a small batch
    // of small images), each run's blocks of filters (over every group)
    // are split into parts, one task each, which copy the band alike.
    let blocks = cg * groups;
    let threads = 4 * rayon::current_num_threads();
    let parts = if n * runs >= threads { 1 } else { threads.div_ceil(n * runs).clamp(1, blocks.max(1)) };
    (0..n * runs * parts).into_par_iter().try_for_each(|task| -> Result<(), Error> {
        // (The whole `Shared`, not its raw pointer field, is captured.)
        let optr = &optr;
        let (nn, run, part) = (task / (runs * parts), task / parts % runs, task % parts);
        // The part's blocks of filters, `gg groups + g` for block `g` of
        // convolution group `gg`, in `b0..b1`.
        let (b0, b1) = (part * blocks / parts, (part + 1) * blocks / parts);
        let (t0, t1) = (run * per_task, ((run + 1) * per_task).min(tiles));
        let mut acc = crate::pool::try_uninit::<T, Ix1>(function, "convolution sums", Ix1(groups * fg * tq))?;
        acc.iter_mut().for_each(|v| {
            v.write(zero);
        });
        // SAFETY: written above.
        let mut acc_buf = unsafe { acc.assume_init() };
        let acc = acc_buf.as_slice_mut().expect("a new buffer is contiguous");
        // The planes the tiles read: `x` itself (`plane` values a channel,
        // the taps' offsets `offs`), or the task's copy of the rows `r0 ..`
        // of every phase its positions read (`band` values a channel).
        let r0 = t0 * tq / wp;
        // The last tile's last read, `t1 tq - 1` plus the farthest tap's
        // offset within its phase, is before `r0 + rows` rows.
        let rows = (t1 * tq + row_reach * wp + col_reach).div_ceil(wp.max(1)) - r0;
        let (local, band, boffs) = if nn < first_copied {
            (None, plane, offs.clone())
        } else {
            let band = rows.checked_mul(wp).and_then(|v| v.checked_mul(nph)).ok_or_else(too_large)?;
            let len = band.checked_mul(c).ok_or_else(too_large)?;
            let mut own = crate::pool::try_uninit::<T, Ix1>(function, "convolution input", Ix1(len))?;
            let dst = own.as_slice_mut().expect("a new buffer is contiguous");
            for (cc, planes) in dst.chunks_mut(band.max(1)).enumerate() {
                fill(planes, nn, cc, r0, rows);
            }
            // The taps' offsets within the band: phases `rows wp` apart.
            let boffs = offs.iter().map(|&off| (off / phase) * rows * wp + off % phase).collect::<Vec<_>>();
            // SAFETY: every element was written by `fill`.
            (Some(unsafe { own.assume_init() }), band, boffs)
        };
        // The first channel's plane, where position `q` of the image is
        // `base + q - first` (`first` at most the task's first position).
        let (base, first) = match &local {
            Some(own) => (own.as_ptr(), r0 * wp),
            // SAFETY: image `nn` of `x`, whose standard layout holds `n`
            // images of `image` values.
            None => (unsafe { x.as_ptr().add(nn * image) }, 0),
        };
        let (plane, offs) = (band, &boffs);
        for t in t0..t1 {
            let q0 = t * tq;
            let q_end = (q0 + tq).min(positions);
            for gg in b0 / groups..b1.div_ceil(groups) {
                let (g0, g1) = (b0.saturating_sub(gg * groups), (b1 - gg * groups).min(groups));
                let mut c0 = 0;
                while c0 < kc {
                    let cn = cb.min(kc - c0);
                    for g in g0..g1 {
                        // SAFETY: the input stretch from `q0` over `cn`
                        // planes of group `gg`'s channels lies within the
                        // task's band (its rows reach the last tile's last
                        // read) or within `x` (the next image covers the
                        // last tile's), the weights of block `g` of group
                        // `gg` and channels `c0..c0 + cn` within `ws`, the
                        // block's sums within `acc`.
                        unsafe {
                            (kernel.tile)(
                                base.add((gg * kc + c0) * plane + q0 - first),
                                ws.as_ptr().add(((gg * groups + g) * kc + c0) * taps * fg),
                                acc.as_mut_ptr().add(g * fg * tq),
                                plane,
                                offs.as_ptr(),
                                taps,
                                cn,
                                c0 == 0,
                            );
                        }
                    }
                    c0 += cn;
                }
                // Epilogue: the runs of positions that are pixels (`j <
                // OW`), row by row, with the bias and the activation.
                let mut q = q0;
                while q < q_end {
                    let (i, j) = (q / wp, q % wp);
                    let run = (i * wp + ow).min(q_end).saturating_sub(q);
                    for f in (g0 * fg..(g1 * fg).min(fpg)).filter(|_| run > 0) {
                        let of = gg * fpg + f;
                        let sums = &acc[f * tq + (q - q0)..][..run];
                        let b = bias.as_ref().map_or(zero, |b| b[of]);
                        let at = nn as isize * strides[0]
                            + of as isize * strides[1]
                            + i as isize * strides[2]
                            + j as isize * strides[3];
                        // SAFETY: pixels `(nn, of, i, j..j + run)` are
                        // within `out`, and this task alone writes the
                        // pixels of its tiles for its blocks' filters.
                        unsafe { (kernel.store)(optr.0.offset(at), strides[3], sums, b, relu) };
                    }
                    q = (i + 1) * wp;
                }
            }
        }
        // The task's buffers go back to the pool for the next task.
        crate::pool::recycle(acc_buf);
        if let Some(own) = local {
            crate::pool::recycle(own);
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{Array1, Array4};

    /// `n` values in `[-1, 1)` from a small linear congruential sequence.
    fn data(len: usize, seed: u64) -> Vec<f64> {
        let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (0..len)
            .map(|_| {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
            })
            .collect()
    }

    /// The naive sum in `f64`.
    #[allow(clippy::too_many_arguments)]
    fn naive(
        x: &Array4<f64>,
        k: &Array4<f64>,
        bias: Option<&Array1<f64>>,
        window: impl Into<Window>,
        relu: bool,
        oh: usize,
        ow: usize,
    ) -> Array4<f64> {
        let Window { pad, stride, dilation } = window.into();
        let (n, c, h, w) = x.dim();
        let (o, _, kh, kw) = k.dim();
        let mut y = Array4::zeros((n, o, oh, ow));
        for nn in 0..n {
            for of in 0..o {
                for i in 0..oh {
                    for j in 0..ow {
                        let mut s = bias.map_or(0.0, |b| b[of]);
                        for cc in 0..c {
                            for r in 0..kh {
                                for t in 0..kw {
                                    let (si, sj) = (
                                        (i * stride.0 + r * dilation.0) as isize - pad.0 as isize,
                                        (j * stride.1 + t * dilation.1) as isize - pad.1 as isize,
                                    );
                                    if si >= 0 && (si as usize) < h && sj >= 0 && (sj as usize) < w {
                                        s += x[[nn, cc, si as usize, sj as usize]] * k[[of, cc, r, t]];
                                    }
                                }
                            }
                        }
                        y[[nn, of, i, j]] = if relu { s.max(0.0) } else { s };
                    }
                }
            }
        }
        y
    }

    /// Every kernel against the naive sum, f32 and f64, on one shape.
    #[allow(clippy::too_many_arguments)]
    fn check(
        n: usize,
        c: usize,
        h: usize,
        w: usize,
        o: usize,
        kh: usize,
        kw: usize,
        window: impl Into<Window>,
        oh: usize,
        ow: usize,
    ) {
        let pad = window.into();
        let x = Array4::from_shape_vec((n, c, h, w), data(n * c * h * w, 1)).unwrap();
        let k = Array4::from_shape_vec((o, c, kh, kw), data(o * c * kh * kw, 2)).unwrap();
        let b = Array1::from_vec(data(o, 3));
        for (bias, relu) in [(None, false), (Some(&b), true)] {
            let want = naive(&x, &k, bias, pad, relu, oh, ow);
            let tol = 1e-5 * (c * kh * kw + 1) as f64;
            let (x32, k32, b32) = (x.mapv(|v| v as f32), k.mapv(|v| v as f32), b.mapv(|v| v as f32));
            for kern in kernels::<f32>() {
                let mut y = Array4::<f32>::from_elem((n, o, oh, ow), f32::NAN);
                conv2d_with("t", kern, x32.view(), k32.view(), bias.map(|_| b32.view()), pad, relu, y.view_mut())
                    .unwrap();
                for (a, e) in y.iter().zip(&want) {
                    assert!(
                        (*a as f64 - e).abs() <= tol,
                        "{} {n}x{c}x{h}x{w} o{o} {kh}x{kw} {pad:?}: {a} vs {e}",
                        kern.name()
                    );
                }
            }
            let mut y = Array4::<f64>::from_elem((n, o, oh, ow), f64::NAN);
            conv2d("t", x.view(), k.view(), bias.map(|b| b.view()), pad, relu, y.view_mut()).unwrap();
            for (a, e) in y.iter().zip(&want) {
                assert!((a - e).abs() <= 1e-12 * (c * kh * kw + 1) as f64, "f64 {n}x{c}x{h}x{w}: {a} vs {e}");
            }
        }
    }

    #[test]
    fn valid_convolutions_on_odd_shapes_match_the_naive_sum() {
        for &(n, c, h, w, o) in &[
            (1, 1, 3, 3, 1),
            (2, 3, 7, 5, 7),
            (1, 7, 11, 13, 17),
            (3, 9, 5, 31, 5),
            (1, 17, 19, 70, 13),
            (1, 2, 3, 200, 3),
        ] {
            check(n, c, h, w, o, 3, 3, (0, 0), h - 2, w - 2);
        }
        check(2, 5, 9, 8, 6, 1, 1, (0, 0), 9, 8);
        check(1, 3, 8, 11, 7, 2, 5, (0, 0), 7, 7);
        check(1, 4, 6, 6, 3, 5, 5, (0, 0), 2, 2);
    }

    #[test]
    fn padded_convolutions_read_zeros_outside_the_image() {
        check(2, 3, 7, 5, 7, 3, 3, (1, 1), 7, 5);
        check(1, 11, 13, 17, 19, 3, 3, (1, 1), 13, 17);
        check(1, 2, 1, 1, 3, 3, 3, (1, 1), 1, 1);
        check(1, 3, 5, 7, 2, 3, 3, (2, 0), 6, 5);
        check(2, 4, 4, 4, 5, 5, 5, (2, 2), 4, 4);
    }

    #[test]
    fn strided_and_dilated_windows_match_the_naive_sum() {
        let win = |pad, stride, dilation| Window { pad, stride, dilation };
        // Strides 2 and 3, mixed, with and without padding.
        check(2, 3, 7, 9, 7, 3, 3, win((1, 1), (2, 2), (1, 1)), 4, 5);
        check(1, 5, 13, 17, 11, 3, 3, win((1, 1), (3, 3), (1, 1)), 5, 6);
        check(2, 4, 11, 10, 13, 3, 3, win((0, 1), (3, 2), (1, 1)), 3, 5);
        check(1, 3, 16, 16, 5, 5, 5, win((2, 2), (2, 2), (1, 1)), 8, 8);
        check(1, 2, 9, 9, 3, 1, 1, win((0, 0), (2, 2), (1, 1)), 5, 5);
        check(1, 7, 57, 57, 8, 3, 3, win((1, 1), (2, 2), (1, 1)), 29, 29);
        // Even windows, a stride larger than the window.
        check(2, 3, 12, 11, 6, 2, 4, win((1, 0), (2, 3), (1, 1)), 6, 3);
        check(1, 2, 10, 10, 7, 2, 2, win((0, 0), (4, 5), (1, 1)), 3, 2);
        // Dilations, alone and with strides.
        check(2, 3, 9, 11, 7, 3, 3, win((0, 0), (1, 1), (2, 2)), 5, 7);
        check(1, 4, 12, 13, 5, 3, 3, win((2, 2), (1, 1), (2, 3)), 12, 11);
        check(2, 3, 15, 14, 6, 3, 2, win((1, 2), (2, 3), (3, 2)), 6, 5);
        check(1, 2, 17, 19, 3, 3, 3, win((3, 0), (3, 2), (2, 4)), 5, 6);
        // Asymmetric pads (an output extent that leaves the last rows).
        check(1, 3, 8, 8, 4, 3, 3, win((0, 1), (2, 2), (1, 1)), 3, 4);
        // An output smaller than the window, pixels wholly in the padding.
        check(1, 3, 2, 3, 5, 5, 5, win((2, 2), (2, 2), (1, 1)), 1, 2);
        check(1, 2, 3, 3, 2, 3, 3, win((4, 4), (2, 2), (1, 1)), 4, 4);
        // Prime and unit extents.
        check(3, 1, 7, 1, 1, 3, 1, win((1, 0), (2, 1), (1, 1)), 4, 1);
        check(1, 13, 29, 31, 17, 3, 3, win((1, 1), (2, 2), (1, 1)), 15, 16);
    }

    #[test]
    fn empty_extents_give_the_bias_or_nothing() {
        check(0, 3, 5, 5, 2, 3, 3, (0, 0), 3, 3);
        check(2, 0, 5, 5, 2, 3, 3, (0, 0), 3, 3);
        check(2, 3, 5, 5, 0, 3, 3, (0, 0), 3, 3);
        check(1, 3, 5, 5, 2, 3, 3, (0, 0), 0, 3);
        check(1, 3, 2, 2, 2, 3, 3, (0, 0), 0, 0);
        check(1, 3, 4, 4, 2, 0, 0, (0, 0), 4, 4);
        let win = |pad, stride, dilation| Window { pad, stride, dilation };
        check(0, 3, 5, 5, 2, 3, 3, win((1, 1), (2, 2), (1, 1)), 3, 3);
        check(2, 0, 5, 5, 2, 3, 3, win((1, 1), (2, 3), (2, 1)), 3, 2);
        check(1, 3, 4, 4, 2, 0, 3, win((0, 0), (2, 2), (1, 1)), 2, 2);
    }

    #[test]
    fn a_zero_stride_or_dilation_is_an_error() {
        let x = Array4::<f32>::zeros((1, 2, 5, 5));
        let k = Array4::<f32>::zeros((3, 2, 3, 3));
        let mut y = Array4::<f32>::zeros((1, 3, 2, 2));
        for (stride, dilation) in [((0, 1), (1, 1)), ((1, 1), (1, 0))] {
            let win = Window { pad: (0, 0), stride, dilation };
            assert!(matches!(
                conv2d("f", x.view(), k.view(), None, win, false, y.view_mut()),
                Err(Error::Extent { .. })
            ));
        }
    }

    #[test]
    fn strided_outputs_and_one_to_three_threads() {
        let x = Array4::from_shape_vec((3, 5, 9, 10), data(3 * 5 * 90, 4)).unwrap().mapv(|v| v as f32);
        let k = Array4::from_shape_vec((7, 5, 3, 3), data(7 * 45, 5)).unwrap().mapv(|v| v as f32);
        let want = naive(&x.mapv(|v| v as f64), &k.mapv(|v| v as f64), None, (0, 0), false, 7, 8);
        for threads in 1..=3 {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            // An output whose axes are permuted (NHWC memory).
            let mut y = Array4::<f32>::zeros((3, 7, 8, 7));
            let mut yv = y.view_mut().permuted_axes([0, 3, 1, 2]);
            pool.install(|| conv2d("t", x.view(), k.view(), None, (0, 0), false, yv.view_mut())).unwrap();
            for (a, e) in yv.iter().zip(&want) {
                assert!((*a as f64 - e).abs() <= 1e-4, "{threads} threads: {a} vs {e}");
            }
            // An image whose axes are permuted (NHWC memory) is copied.
            let nhwc = x.view().permuted_axes([0, 2, 3, 1]).as_standard_layout().into_owned();
            let xv = nhwc.view().permuted_axes([0, 3, 1, 2]);
            let mut y = Array4::<f32>::zeros((3, 7, 7, 8));
            pool.install(|| conv2d("t", xv, k.view(), None, (0, 0), false, y.view_mut())).unwrap();
            for (a, e) in y.iter().zip(&want) {
                assert!((*a as f64 - e).abs() <= 1e-4, "{threads} threads, permuted input: {a} vs {e}");
            }
        }
    }

    #[test]
    fn the_vector_kernels_compute_the_same_bits() {
        let x = Array4::from_shape_vec((2, 13, 9, 23), data(2 * 13 * 9 * 23, 6)).unwrap().mapv(|v| v as f32);
        let k = Array4::from_shape_vec((11, 13, 3, 3), data(11 * 13 * 9, 7)).unwrap().mapv(|v| v as f32);
        let fused: Vec<_> = kernels::<f32>().into_iter().filter(|k| k.name() != "portable").collect();
        let results: Vec<(Array4<f32>, Array4<f32>)> = fused
            .iter()
            .map(|kern| {
                let mut y = Array4::<f32>::zeros((2, 11, 9, 23));
                conv2d_with("t", *kern, x.view(), k.view(), None, (1, 1), false, y.view_mut()).unwrap();
                let win = Window { pad: (1, 1), stride: (2, 3), dilation: (1, 2) };
                let mut z = Array4::<f32>::zeros((2, 11, 5, 7));
                conv2d_with("t", *kern, x.view(), k.view(), None, win, false, z.view_mut()).unwrap();
                (y, z)
            })
            .collect();
        for pair in results.windows(2) {
            assert!(pair[0].0.iter().zip(pair[1].0.iter()).all(|(a, b)| a.to_bits() == b.to_bits()));
            assert!(pair[0].1.iter().zip(pair[1].1.iter()).all(|(a, b)| a.to_bits() == b.to_bits()));
        }
    }

    /// The naive grouped sum in `f64`: filter `o` of `k` (`O x C x KH x
    /// KW`) reads channels `g C ..` of `x`, `g = o / (O / groups)`.
    fn naive_grouped(
        x: &Array4<f64>,
        k: &Array4<f64>,
        bias: &Array1<f64>,
        window: Window,
        groups: usize,
        oh: usize,
        ow: usize,
    ) -> Array4<f64> {
        let Window { pad, stride, dilation } = window;
        let (n, _, h, w) = x.dim();
        let (o, c, kh, kw) = k.dim();
        let fpg = o / groups;
        Array4::from_shape_fn((n, o, oh, ow), |(nn, of, i, j)| {
            let mut s = bias[of];
            for cc in 0..c {
                for r in 0..kh {
                    for t in 0..kw {
                        let si = (i * stride.0 + r * dilation.0) as isize - pad.0 as isize;
                        let sj = (j * stride.1 + t * dilation.1) as isize - pad.1 as isize;
                        if si >= 0 && (si as usize) < h && sj >= 0 && (sj as usize) < w {
                            s += x[[nn, (of / fpg) * c + cc, si as usize, sj as usize]] * k[[of, cc, r, t]];
                        }
                    }
                }
            }
            s
        })
    }

    #[test]
    fn grouped_convolutions_match_the_naive_sum() {
        let unit = Window { pad: (0, 0), stride: (1, 1), dilation: (1, 1) };
        let strided = Window { pad: (1, 2), stride: (2, 3), dilation: (1, 2) };
        // (n, groups, channels per group, h, w, filters per group, kh, kw, window)
        for &(n, g, c, h, w, f, kh, kw, win) in &[
            (1, 1, 3, 7, 7, 5, 3, 3, unit),
            (2, 4, 8, 9, 11, 16, 3, 3, Window { pad: (1, 1), ..unit }),
            (3, 3, 1, 13, 7, 1, 3, 2, Window { pad: (1, 0), ..unit }),
            (1, 2, 7, 11, 17, 7, 3, 3, strided),
            (2, 5, 2, 5, 5, 13, 2, 2, unit),
            (1, 7, 3, 1, 1, 2, 1, 1, unit),
            (0, 3, 2, 5, 5, 2, 3, 3, unit),
            (2, 2, 3, 3, 3, 6, 5, 5, Window { pad: (2, 2), ..unit }),
            // One filter per group (depthwise, and two channels each).
            (2, 5, 1, 8, 9, 1, 3, 3, Window { pad: (1, 1), ..unit }),
            (1, 4, 2, 9, 10, 1, 3, 3, strided),
        ] {
            let (cx, o) = (g * c, g * f);
            let oh = (h + 2 * win.pad.0).saturating_sub(win.dilation.0 * (kh - 1) + 1) / win.stride.0 + 1;
            let ow = (w + 2 * win.pad.1).saturating_sub(win.dilation.1 * (kw - 1) + 1) / win.stride.1 + 1;
            let x = Array4::from_shape_vec((n, cx, h, w), data(n * cx * h * w, 11)).unwrap();
            let k = Array4::from_shape_vec((o, c, kh, kw), data(o * c * kh * kw, 12)).unwrap();
            let b = Array1::from_vec(data(o, 13));
            let want = naive_grouped(&x, &k, &b, win, g, oh, ow);
            let (x32, k32, b32) = (x.mapv(|v| v as f32), k.mapv(|v| v as f32), b.mapv(|v| v as f32));
            for kern in kernels::<f32>() {
                for threads in 1..=3 {
                    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
                    let mut y = Array4::<f32>::from_elem((n, o, oh, ow), f32::NAN);
                    pool.install(|| {
                        conv2d_grouped_with(
                            "t",
                            kern,
                            x32.view(),
                            k32.view(),
                            Some(b32.view()),
                            win,
                            g,
                            false,
                            y.view_mut(),
                        )
                    })
                    .unwrap();
                    for (a, e) in y.iter().zip(&want) {
                        let tol = 1e-5 * (c * kh * kw + 1) as f64;
                        assert!((*a as f64 - e).abs() <= tol, "{} g{g} {n}x{cx}x{h}x{w} o{o}: {a} vs {e}", kern.name());
                    }
                }
            }
            let mut y = Array4::<f64>::from_elem((n, o, oh, ow), f64::NAN);
            conv2d_grouped("t", x.view(), k.view(), Some(b.view()), win, g, false, y.view_mut()).unwrap();
            for (a, e) in y.iter().zip(&want) {
                assert!((a - e).abs() <= 1e-12 * (c * kh * kw + 1) as f64, "f64 g{g}: {a} vs {e}");
            }
        }
    }

    /// Every row form of one filter per group (depthwise) against the
    /// naive sum, with the same bits in every form: rows that end in
    /// eight-vector blocks, single vectors and tails, unit and prime
    /// extents, strides, dilations and pads, a valid stride-1 batch (read
    /// in place but for its last image), an empty batch, a ReLU, one to
    /// three threads.
    #[test]
    fn depthwise_forms_match_the_naive_sum_with_the_same_bits() {
        let unit = Window { pad: (0, 0), stride: (1, 1), dilation: (1, 1) };
        let same = Window { pad: (1, 1), ..unit };
        let s2 = Window { pad: (1, 1), stride: (2, 2), dilation: (1, 1) };
        // (n, groups, channels per group, h, w, kh, kw, window, relu)
        for &(n, g, c, h, w, kh, kw, win, relu) in &[
            (2, 3, 1, 37, 41, 3, 3, same, false),
            (3, 4, 1, 19, 23, 3, 3, unit, false),
            (1, 5, 2, 17, 131, 3, 3, s2, true),
            (2, 2, 1, 29, 7, 3, 3, Window { pad: (2, 1), stride: (3, 2), dilation: (2, 1) }, false),
            (3, 7, 1, 1, 1, 1, 1, unit, true),
            (1, 2, 1, 7, 7, 5, 5, Window { pad: (2, 2), ..unit }, false),
            (1, 3, 3, 13, 200, 2, 3, s2, false),
            (0, 3, 1, 5, 5, 3, 3, same, false),
        ] {
            let cx = g * c;
            let oh = (h + 2 * win.pad.0).saturating_sub(win.dilation.0 * (kh - 1) + 1) / win.stride.0 + 1;
            let ow = (w + 2 * win.pad.1).saturating_sub(win.dilation.1 * (kw - 1) + 1) / win.stride.1 + 1;
            let x = Array4::from_shape_vec((n, cx, h, w), data(n * cx * h * w, 31)).unwrap();
            let k = Array4::from_shape_vec((g, c, kh, kw), data(g * c * kh * kw, 32)).unwrap();
            let b = Array1::from_vec(data(g, 33));
            let want = naive_grouped(&x, &k, &b, win, g, oh, ow).mapv(|v| if relu { v.max(0.0) } else { v });
            let (x32, k32, b32) = (x.mapv(|v| v as f32), k.mapv(|v| v as f32), b.mapv(|v| v as f32));
            let mut first: Option<Array4<f32>> = None;
            for kern in kernels::<f32>() {
                for threads in 1..=3 {
                    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
                    let mut y = Array4::<f32>::from_elem((n, g, oh, ow), f32::NAN);
                    pool.install(|| {
                        let (xv, kv, bv) = (x32.view(), k32.view(), Some(b32.view()));
                        conv2d_grouped_with("t", kern, xv, kv, bv, win, g, relu, y.view_mut())
                    })
                    .unwrap();
                    for (a, e) in y.iter().zip(&want) {
                        let tol = 1e-5 * (c * kh * kw + 1) as f64;
                        assert!((*a as f64 - e).abs() <= tol, "{} g{g} {n}x{cx}x{h}x{w}: {a} vs {e}", kern.name());
                    }
                    match &first {
                        None => first = Some(y),
                        Some(f) => assert!(
                            f.iter().zip(&y).all(|(a, b)| a.to_bits() == b.to_bits()),
                            "{} g{g} {n}x{cx}x{h}x{w}: other bits",
                            kern.name()
                        ),
                    }
                }
            }
            let mut y = Array4::<f64>::from_elem((n, g, oh, ow), f64::NAN);
            conv2d_grouped("t", x.view(), k.view(), Some(b.view()), win, g, relu, y.view_mut()).unwrap();
            for (a, e) in y.iter().zip(&want) {
                assert!((a - e).abs() <= 1e-12 * (c * kh * kw + 1) as f64, "f64 g{g}: {a} vs {e}");
            }
        }
    }

    /// `conv2d_grouped_new` (a new array that is not zeroed first) against
    /// the naive grouped sum and with the bits of `conv2d_grouped` into a
    /// zeroed array, on a reused pool buffer full of NaN (a value the
    /// kernel left would show): groups 1, 2, 4 and depthwise, strides 1, 2
    /// and 3, pads, dilations, an image smaller than the window, prime and
    /// unit extents, one image whose tasks split its filters, an empty
    /// batch, one to three threads.
    #[test]
    fn new_outputs_are_written_whole_with_the_same_bits() {
        let unit = Window { pad: (0, 0), stride: (1, 1), dilation: (1, 1) };
        let same = Window { pad: (1, 1), ..unit };
        let s2 = Window { pad: (1, 1), stride: (2, 2), dilation: (1, 1) };
        // (n, groups, channels per group, h, w, filters per group, kh, kw, window)
        for &(n, g, c, h, w, f, kh, kw, win) in &[
            (2, 1, 5, 13, 17, 7, 3, 3, same),
            (3, 1, 3, 11, 11, 13, 3, 3, unit),
            (1, 2, 3, 23, 19, 5, 3, 3, s2),
            (2, 4, 2, 17, 29, 16, 3, 3, s2),
            (1, 4, 8, 9, 9, 4, 3, 3, Window { pad: (1, 2), stride: (3, 3), dilation: (1, 1) }),
            (2, 5, 1, 31, 37, 1, 3, 3, s2),
            (1, 3, 1, 7, 7, 1, 3, 3, same),
            (1, 2, 3, 2, 3, 3, 5, 5, Window { pad: (2, 2), stride: (2, 1), dilation: (1, 1) }),
            (1, 1, 1, 1, 1, 1, 1, 1, unit),
            (1, 3, 2, 19, 23, 2, 3, 3, Window { pad: (2, 1), stride: (2, 3), dilation: (2, 1) }),
            // One image of few tiles: its runs split by blocks of filters.
            (1, 1, 3, 29, 31, 37, 3, 3, same),
            (1, 2, 3, 5, 6, 29, 3, 3, s2),
            (0, 2, 3, 5, 5, 2, 3, 3, same),
        ] {
            let (cx, o) = (g * c, g * f);
            let oh = (h + 2 * win.pad.0).saturating_sub(win.dilation.0 * (kh - 1) + 1) / win.stride.0 + 1;
            let ow = (w + 2 * win.pad.1).saturating_sub(win.dilation.1 * (kw - 1) + 1) / win.stride.1 + 1;
            let x = Array4::from_shape_vec((n, cx, h, w), data(n * cx * h * w, 41)).unwrap();
            let k = Array4::from_shape_vec((o, c, kh, kw), data(o * c * kh * kw, 42)).unwrap();
            let b = Array1::from_vec(data(o, 43));
            let want = naive_grouped(&x, &k, &b, win, g, oh, ow);
            let (x32, k32, b32) = (x.mapv(|v| v as f32), k.mapv(|v| v as f32), b.mapv(|v| v as f32));
            for threads in 1..=3 {
                let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
                let mut old = Array4::<f32>::zeros((n, o, oh, ow));
                pool.install(|| {
                    conv2d_grouped("t", x32.view(), k32.view(), Some(b32.view()), win, g, false, old.view_mut())
                })
                .unwrap();
                let y = pool
                    .install(|| {
                        // A buffer of NaN for the pool to hand out (on this
                        // thread: small buffers are cached by the thread
                        // that recycles them).
                        crate::pool::recycle(Array4::<f32>::from_elem((n, o, oh, ow), f32::NAN));
                        let (xv, kv, bv) = (x32.view(), k32.view(), Some(b32.view()));
                        conv2d_grouped_new("t", "y", [n, o, oh, ow], [0, 1, 2, 3], xv, kv, bv, win, g, false)
                    })
                    .unwrap();
                assert_eq!(y.dim(), (n, o, oh, ow));
                for ((a, e), z) in y.iter().zip(&want).zip(&old) {
                    let tol = 1e-5 * (c * kh * kw + 1) as f64;
                    assert!((*a as f64 - e).abs() <= tol, "g{g} {n}x{cx}x{h}x{w} o{o} {win:?}: {a} vs {e}");
                    assert_eq!(a.to_bits(), z.to_bits(), "g{g} {n}x{cx}x{h}x{w} o{o} {win:?}: other bits");
                }
            }
            let y = conv2d_grouped_new(
                "t",
                "y",
                [n, o, oh, ow],
                [0, 1, 2, 3],
                x.view(),
                k.view(),
                Some(b.view()),
                win,
                g,
                false,
            )
            .unwrap();
            for (a, e) in y.iter().zip(&want) {
                assert!((a - e).abs() <= 1e-12 * (c * kh * kw + 1) as f64, "f64 g{g}: {a} vs {e}");
            }
        }
        // Errors as `conv2d_grouped`'s: 0 groups, groups that do not fit.
        let x = Array4::<f32>::zeros((2, 6, 5, 5));
        let k = Array4::<f32>::zeros((4, 2, 3, 3));
        let r = conv2d_grouped_new("f", "y", [2, 4, 3, 3], [0, 1, 2, 3], x.view(), k.view(), None, (0, 0), 0, false);
        assert!(matches!(r, Err(Error::Extent { .. })), "{r:?}");
        let r = conv2d_grouped_new("f", "y", [2, 4, 3, 3], [0, 1, 2, 3], x.view(), k.view(), None, (0, 0), 3, false);
        assert!(matches!(r, Err(Error::Shape { axis: 0, .. })), "{r:?}");
        let r = conv2d_grouped_new("f", "y", [2, 5, 3, 3], [0, 1, 2, 3], x.view(), k.view(), None, (0, 0), 3, false);
        assert!(matches!(r, Err(Error::Shape { .. })), "{r:?}");
    }

    /// `gather` against an index loop: strides 1 to 6, every length up to
    /// 40, lines of exactly the values read and one more.
    #[test]
    fn gather_reads_every_stride_th_value() {
        let line: Vec<f32> = (0..300).map(|v| v as f32 * 0.5 - 7.0).collect();
        for sw in 1..=6 {
            for len in 0..=40 {
                for extra in [0, 1] {
                    let need = if len == 0 { 0 } else { (len - 1) * sw + 1 + extra };
                    let mut dst = vec![std::mem::MaybeUninit::new(f32::NAN); len];
                    gather(&mut dst, &line[3..3 + need], sw);
                    for (kk, d) in dst.iter().enumerate() {
                        // SAFETY: initialized above.
                        assert_eq!(unsafe { d.assume_init() }, line[3 + kk * sw], "stride {sw}, length {len}");
                    }
                }
            }
        }
    }

    #[test]
    fn groups_that_do_not_fit_are_errors() {
        let x = Array4::<f32>::zeros((2, 6, 5, 5));
        let mut y = Array4::<f32>::zeros((2, 4, 3, 3));
        // 6 channels are not 4 groups of 1.
        let k = Array4::<f32>::zeros((4, 1, 3, 3));
        let r = conv2d_grouped("f", x.view(), k.view(), None, (0, 0), 4, false, y.view_mut());
        assert!(matches!(r, Err(Error::Shape { axis: 1, .. })), "{r:?}");
        // 4 filters in 3 groups.
        let k = Array4::<f32>::zeros((4, 2, 3, 3));
        let r = conv2d_grouped("f", x.view(), k.view(), None, (0, 0), 3, false, y.view_mut());
        assert!(matches!(r, Err(Error::Shape { axis: 0, .. })), "{r:?}");
        let r = conv2d_grouped("f", x.view(), k.view(), None, (0, 0), 0, false, y.view_mut());
        assert!(matches!(r, Err(Error::Extent { .. })), "{r:?}");
    }

    #[test]
    fn disagreeing_extents_are_shape_errors() {
        let x = Array4::<f32>::zeros((2, 3, 5, 5));
        let k = Array4::<f32>::zeros((4, 2, 3, 3));
        let mut y = Array4::<f32>::zeros((2, 4, 3, 3));
        assert!(matches!(conv2d("f", x.view(), k.view(), None, (0, 0), false, y.view_mut()), Err(Error::Shape { .. })));
        let k = Array4::<f32>::zeros((4, 3, 3, 3));
        let mut y = Array4::<f32>::zeros((2, 5, 3, 3));
        assert!(matches!(conv2d("f", x.view(), k.view(), None, (0, 0), false, y.view_mut()), Err(Error::Shape { .. })));
        let b = Array1::<f32>::zeros(3);
        let mut y = Array4::<f32>::zeros((2, 4, 3, 3));
        assert!(matches!(
            conv2d("f", x.view(), k.view(), Some(b.view()), (0, 0), false, y.view_mut()),
            Err(Error::Shape { .. })
        ));
    }
}
