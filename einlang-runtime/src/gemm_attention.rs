//! One head of attention, `softmax(q kt) v` with the softmax's division
//! after the second product, as one call (a child of `gemm`): the chain
//! that `opt::slices` runs per batch (a scaled product, the rows' maximum
//! and exponentials with their sums, the product with `v`, the division)
//! when the generated code recognizes it. With our packed kernels
//! (AVX-512 or AVX2) it runs fused (`packed::attention`: per block of a
//! tile's rows, the scores in a buffer that stays in the cache);
//! otherwise, and for shapes the packed kernels do not take, as the
//! chain's own steps. Either way the bits are the chain's.

use std::mem::MaybeUninit;

use ndarray::{s, Array2, ArrayView2};
use rayon::prelude::*;

use super::{available_threads, corners, covers, extents, matmul_with, Error};

/// The softmax row of generated code over `row`, in place: the maximum
/// (the lanes of `vmath::lanes`' `ExtremumF32` over runs of sixty-four and of
/// sixteen, then the tail); each value `v` becomes `exp(v - max)`
/// (`arith::exp_f32`); the sum of the new values in sixteen lanes and a
/// tail, the lanes added up halving (`vmath::lanes::sum16`, or its AVX-512
/// form: the same bits) then the tail, is returned. The same steps as a
/// row definition `e[i, j] = exp(s[i, j] - m)` after `let m = max[j](s[i,
/// j])` with its row sum (`codegen/rust/in_place.rs`), so the same bits:
/// the exponentials of arguments at most 0 or NaN through the function
/// without the upper clamp (`exp_f32_nonpositive`, the same bits there),
/// each run stored and added to the sums as it is computed (the lanes'
/// sums and the tail's add the same values in the same order as a pass of
/// their own would). With `AVX512` (in code compiled for it), the
/// exponentials of each run of sixteen through `vmath::lanes::avx512`.
#[inline(always)]
pub(crate) fn softmax_row<const AVX512: bool>(row: &mut [f32]) -> f32 {
    // The maximum in `ExtremumF32`'s sixty-four lanes, as generated code
    // keeps it: runs of sixty-four, then of sixteen, then the tail.
    macro_rules! row_max {
        ($extremum:ty) => {{
            let mut lanes = <$extremum>::new();
            let mut runs = row.chunks_exact(64);
            for run in &mut runs {
                if let Ok(run) = <&[f32; 64]>::try_from(run) {
                    lanes.step64(*run);
                }
            }
            let mut rest = runs.remainder().chunks_exact(16);
            for run in &mut rest {
                if let Ok(run) = <&[f32; 16]>::try_from(run) {
                    lanes.step16(*run);
                }
            }
            let mut tail = f32::NEG_INFINITY;
            for v in rest.remainder() {
                if *v > tail {
                    tail = *v;
                }
            }
            lanes.finish(tail)
        }};
    }
    // SAFETY: `AVX512` only where the code is compiled for AVX-512F (the
    // caller's promise); the portable form needs nothing.
    let max = unsafe {
        if AVX512 {
            row_max!(crate::vmath::lanes::avx512::ExtremumF32<true>)
        } else {
            row_max!(crate::vmath::lanes::portable::ExtremumF32<true>)
        }
    };
    let mut sums = [0.0f32; 16];
    let mut runs = row.chunks_exact_mut(16);
    for run in &mut runs {
        let Ok(run) = <&mut [f32; 16]>::try_from(run) else { continue };
        let args: [f32; 16] = std::array::from_fn(|l| run[l] - max);
        // SAFETY: `AVX512` only where the code is compiled for AVX-512F
        // (the caller's promise); the portable form needs nothing. Every
        // argument is at most 0 (`max` is the row's largest value) or NaN.
        let e = unsafe {
            if AVX512 {
                crate::vmath::lanes::avx512::exp_f32_nonpositive(args)
            } else {
                crate::vmath::lanes::portable::exp_f32_nonpositive(args)
            }
        };
        *run = e;
        for (s, e) in sums.iter_mut().zip(e) {
            *s += e;
        }
    }
    let mut rest = 0.0f32;
    for v in runs.into_remainder() {
        *v = crate::arith::exp_f32(*v - max);
        rest += *v;
    }
    // SAFETY: as for the exponentials.
    let total = unsafe {
        if AVX512 {
            crate::vmath::lanes::avx512::sum16_f32(sums)
        } else {
            crate::vmath::lanes::portable::sum16_f32(sums)
        }
    };
    total + rest
}

/// `softmax_row` over each row of `len` values of `e` (row-major), its
/// sum into `z` (left as it is for rows of no values: the sum of none).
fn softmax_rows(e: &mut [f32], len: usize, z: &mut [f32], parallel: bool) {
    if len == 0 {
        return;
    }
    let row = |(r, z): (&mut [f32], &mut f32)| *z = softmax_wide(r);
    if parallel {
        e.par_chunks_mut(len).zip(z.par_iter_mut()).for_each(row);
    } else {
        e.chunks_mut(len).zip(z.iter_mut()).for_each(row);
    }
}

/// `softmax_row` with the widest vectors generated code would use here.
fn softmax_wide(row: &mut [f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")]
        unsafe fn wide512(row: &mut [f32]) -> f32 {
            softmax_row::<true>(row)
        }
        #[target_feature(enable = "avx2,fma")]
        unsafe fn wide(row: &mut [f32]) -> f32 {
            softmax_row::<false>(row)
        }
        if crate::cpu::wide512() {
            // SAFETY: the processor has these features.
            return unsafe { wide512(row) };
        }
        if crate::cpu::wide() {
            // SAFETY: as above.
            return unsafe { wide(row) };
        }
    }
    softmax_row::<false>(row)
}

/// The instruction set of our packed kernel (`packed::sgemm`) when a
/// product of `m x k` times `k x n` `f32` goes to it in `product_kernel`.
#[cfg(target_arch = "x86_64")]
fn packed_sgemm(m: usize, n: usize, k: usize) -> Option<super::packed::Isa> {
    let kernel = super::large_kernel();
    super::packed_isa(kernel).filter(|_| k > 0 && super::packed_takes(kernel, m, n, k))
}

/// One head of attention written row-major into `out` (`m x dv`
/// elements, possibly uninitialized): `out[i, c] = y[i, c] / z[i]` where
/// `s = q[..m, ..d] · kt[..d, ..nk]` (each element times `scale`, when
/// there is one, as `matmul_scaled`), `e[i, j] = exp(s[i, j] - max[j]
/// s[i, j])` (`softmax_row`), `z[i] = sum[j](e[i, j])` and `y = e ·
/// v[..nk, ..dv]`: the bits of those steps run one after the other
/// (`matmul_scaled`, the rows, `matmul`, the division), fused where our
/// packed kernels would run both products. Operands smaller than the
/// extents, negative extents, or an `out` of another length are
/// `Err(Error::Extent)` naming `function`, nothing written. Every element
/// is written when it returns `Ok`.
#[allow(clippy::too_many_arguments)]
pub fn attention_into(
    function: &str,
    [m, nk, d, dv]: [i64; 4],
    q: ArrayView2<'_, f32>,
    kt: ArrayView2<'_, f32>,
    v: ArrayView2<'_, f32>,
    scale: Option<f32>,
    out: &mut [MaybeUninit<f32>],
) -> Result<(), Error> {
    let ([m, nk], q, kt) = corners(function, [m, nk, d], q, kt)?;
    let [d, dv] = extents(function, [d, dv])?;
    covers(function, &v, nk, dv)?;
    let v = v.slice_move(s![..nk, ..dv]);
    if m.checked_mul(dv) != Some(out.len()) {
        return Err(Error::Extent {
            function: function.to_string(),
            message: format!("an attention head of {m}x{dv} written into {} elements", out.len()),
        });
    }
    if out.is_empty() {
        return Ok(());
    }
    let threads = available_threads();
    #[cfg(target_arch = "x86_64")]
    if let Some(isa) = packed_sgemm(m, nk, d).filter(|_| packed_sgemm(m, dv, nk).is_some()) {
        let mat = |v: &ArrayView2<'_, f32>| super::packed::Mat {
            ptr: v.as_ptr().cast_mut(),
            rs: v.strides()[0],
            cs: v.strides()[1],
        };
        let work = m.saturating_mul(nk).saturating_mul(d.saturating_add(dv));
        let threads = if work >= super::PARALLEL_WORK { threads } else { 1 };
        let o = super::packed::Mat { ptr: out.as_mut_ptr().cast::<f32>(), rs: dv as isize, cs: 1 };
        // SAFETY: the processor has `isa` (`packed_sgemm`: with AVX-512F
        // also BW, DQ, VL, as generated code's twins check); `q`, `kt`,
        // `v` are views of exactly those extents (`corners`), d, nk > 0;
        // `out` holds m x dv elements, borrowed mutably here.
        unsafe { super::packed::attention(isa, [m, d, nk, dv], mat(&q), mat(&kt), mat(&v), scale, o, threads) };
        return Ok(());
    }
    // The chain's steps, as generated code runs them.
    let [mi, nki, di, dvi] = [m, nk, d, dv].map(|x| x as i64);
    let mut e: Array2<f32> = matmul_with(function, [mi, nki, di], q, kt, scale)?;
    let mut z = vec![0.0f32; m];
    let parallel = threads > 1 && m.saturating_mul(nk) >= crate::par::parallel_work();
    let rows = e.as_slice_mut().ok_or_else(|| Error::Extent {
        function: function.to_string(),
        message: "a fresh product array is not contiguous".to_string(),
    })?;
    softmax_rows(rows, nk, &mut z, parallel);
    let y = matmul_with(function, [mi, dvi, nki], e.view(), v, None)?;
    for ((slots, row), z) in out.chunks_exact_mut(dv).zip(y.outer_iter()).zip(&z) {
        for (slot, y) in slots.iter_mut().zip(row.iter()) {
            slot.write(*y / *z);
        }
    }
    crate::pool::recycle(e);
    crate::pool::recycle(y);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array2;

    /// A deterministic value in about [-2, 2) for element `(i, j)` of
    /// matrix `seed`.
    fn value(seed: usize, i: usize, j: usize) -> f32 {
        let h = (seed * 7919 + i * 104_729 + j * 1_299_709) % 4093;
        h as f32 / 1023.25 - 2.0
    }

    /// The chain step by step: the product (times `scale`), a maximum
    /// over each row in sixteen lanes and a tail (lanes folded in order),
    /// `exp` of the difference, the sum in sixteen lanes (added halving)
    /// and a tail, the second product, the division. Written here from
    /// the definition, not through `softmax_row`.
    fn chain(
        q: ArrayView2<'_, f32>,
        kt: ArrayView2<'_, f32>,
        v: ArrayView2<'_, f32>,
        scale: Option<f32>,
    ) -> Array2<f32> {
        let (m, d, nk, dv) = (q.nrows(), q.ncols(), kt.ncols(), v.ncols());
        let dims = [m as i64, nk as i64, d as i64];
        let s = match scale {
            Some(c) => super::super::matmul_scaled("t", dims[0], dims[1], dims[2], q, kt, c).unwrap(),
            None => super::super::matmul("t", dims[0], dims[1], dims[2], q, kt).unwrap(),
        };
        let mut e = Array2::<f32>::zeros((m, nk));
        let mut z = vec![0.0f32; m];
        for i in 0..m {
            let full = nk / 16 * 16;
            let mut lanes = [f32::NEG_INFINITY; 16];
            for j in 0..full {
                if s[[i, j]] > lanes[j % 16] {
                    lanes[j % 16] = s[[i, j]];
                }
            }
            let mut tail = f32::NEG_INFINITY;
            for j in full..nk {
                if s[[i, j]] > tail {
                    tail = s[[i, j]];
                }
            }
            let mut mx = lanes[0];
            for l in &lanes[1..] {
                if *l > mx {
                    mx = *l;
                }
            }
            if tail > mx {
                mx = tail;
            }
            let mut sums = [0.0f32; 16];
            let mut rest = 0.0f32;
            for j in 0..nk {
                e[[i, j]] = crate::arith::exp_f32(s[[i, j]] - mx);
                if j < full {
                    sums[j % 16] += e[[i, j]];
                } else {
                    rest += e[[i, j]];
                }
            }
            for h in [8, 4, 2, 1] {
                for p in 0..h {
                    sums[p] += sums[p + h];
                }
            }
            z[i] = sums[0] + rest;
        }
        let y = super::super::matmul("t", m as i64, dv as i64, nk as i64, e.view(), v).unwrap();
        Array2::from_shape_fn((m, dv), |(i, c)| y[[i, c]] / z[i])
    }

    /// The same in `f64` loops, the softmax as written.
    fn loops(
        q: ArrayView2<'_, f32>,
        kt: ArrayView2<'_, f32>,
        v: ArrayView2<'_, f32>,
        scale: Option<f32>,
    ) -> Array2<f64> {
        let (m, d, nk, dv) = (q.nrows(), q.ncols(), kt.ncols(), v.ncols());
        let c = f64::from(scale.unwrap_or(1.0));
        Array2::from_shape_fn((m, dv), |(i, col)| {
            let s: Vec<f64> = (0..nk)
                .map(|j| (0..d).map(|p| f64::from(q[[i, p]]) * f64::from(kt[[p, j]])).sum::<f64>() * c)
                .collect();
            let mx = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let e: Vec<f64> = s.iter().map(|x| (x - mx).exp()).collect();
            let z: f64 = e.iter().sum();
            (0..nk).map(|j| e[j] * f64::from(v[[j, col]])).sum::<f64>() / z
        })
    }

    fn run(q: ArrayView2<'_, f32>, kt: ArrayView2<'_, f32>, v: ArrayView2<'_, f32>, scale: Option<f32>) -> Array2<f32> {
        let (m, d, nk, dv) = (q.nrows(), q.ncols(), kt.ncols(), v.ncols());
        let mut out = vec![MaybeUninit::<f32>::uninit(); m * dv];
        attention_into("t", [m, nk, d, dv].map(|x| x as i64), q, kt, v, scale, &mut out).unwrap();
        // SAFETY: `attention_into` returned `Ok`: every element is written.
        Array2::from_shape_vec((m, dv), out.into_iter().map(|x| unsafe { x.assume_init() }).collect()).unwrap()
    }

    /// Shapes on both paths: fused (at least 16 rows filling the tiles,
    /// 32 or more keys and output columns) with one and two blocks of the
    /// sums, partial panels and a last block of 1, 4, 8 or 11 rows, one on
    /// several threads; and the chain's own steps (few rows or columns,
    /// empty extents).
    const SHAPES: &[[usize; 4]] = &[
        // [m, nk, d, dv]
        [97, 33, 7, 32],
        [131, 300, 64, 37],
        [24, 40, 300, 64],
        [36, 257, 1, 33],
        [256, 64, 64, 64],
        [104, 64, 16, 48],
        // Enough work to run on several threads (`PARALLEL_WORK`).
        [260, 500, 64, 40],
        [1, 1, 1, 1],
        [7, 13, 5, 3],
        [17, 37, 7, 41],
        [3, 0, 4, 2],
        [5, 7, 0, 3],
        [0, 5, 3, 2],
        [4, 6, 3, 0],
    ];

    #[test]
    fn the_bits_of_the_chain_and_near_f64_loops_on_one_to_three_threads() {
        for threads in 1..=3 {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| {
                for (n, &[m, nk, d, dv]) in SHAPES.iter().enumerate() {
                    let q = Array2::from_shape_fn((m, d), |(i, j)| value(3 * n, i, j));
                    // `k` as keys by features, read transposed (strides
                    // [1, d]), as attention's `k[h, j, d]` is.
                    let k = Array2::from_shape_fn((nk, d), |(i, j)| value(3 * n + 1, i, j));
                    let v = Array2::from_shape_fn((nk, dv), |(i, j)| value(3 * n + 2, i, j));
                    for scale in [Some(0.125f32), Some(0.3), None] {
                        let got = run(q.view(), k.t(), v.view(), scale);
                        let want = chain(q.view(), k.t(), v.view(), scale);
                        let near = loops(q.view(), k.t(), v.view(), scale);
                        for ((g, w), x) in got.iter().zip(&want).zip(&near) {
                            assert!(
                                g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()),
                                "{m}x{nk}x{d}x{dv} {scale:?} on {threads}: {g} against the chain's {w}"
                            );
                            if nk > 0 {
                                assert!((f64::from(*g) - x).abs() <= 1e-4 * (1.0 + x.abs()), "{g} against {x}");
                            }
                        }
                        // Rows of a transposed `q` (column stride m) and a
                        // `k^T` stored as such (unit column stride).
                        let qt = q.t().to_owned();
                        let ktc = k.t().to_owned();
                        let got = run(qt.t(), ktc.view(), v.view(), scale);
                        let want = chain(qt.t(), ktc.view(), v.view(), scale);
                        for (g, w) in got.iter().zip(&want) {
                            assert!(g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()));
                        }
                    }
                }
            });
        }
    }

    #[test]
    fn wrong_extents_are_errors_and_nothing_is_written() {
        let q = Array2::from_shape_fn((20, 8), |(i, j)| value(0, i, j));
        let k = Array2::from_shape_fn((40, 8), |(i, j)| value(1, i, j));
        let v = Array2::from_shape_fn((40, 32), |(i, j)| value(2, i, j));
        let mut out = vec![MaybeUninit::new(7.0f32); 20 * 32];
        let mut short = vec![MaybeUninit::new(7.0f32); 20 * 32 - 1];
        assert!(attention_into("t", [20, 40, 8, 32], q.view(), k.t(), v.view(), None, &mut short).is_err());
        assert!(attention_into("t", [21, 40, 8, 32], q.view(), k.t(), v.view(), None, &mut out).is_err());
        assert!(attention_into("t", [20, 41, 8, 32], q.view(), k.t(), v.view(), None, &mut out).is_err());
        assert!(attention_into("t", [20, 40, 8, 33], q.view(), k.t(), v.view(), None, &mut out).is_err());
        assert!(attention_into("t", [20, -1, 8, 32], q.view(), k.t(), v.view(), None, &mut out).is_err());
        // SAFETY: initialized above.
        assert!(out.iter().chain(&short).all(|x| unsafe { x.assume_init() } == 7.0));
        // Smaller extents than the operands read their corners.
        let mut corner = vec![MaybeUninit::<f32>::uninit(); 18 * 32];
        attention_into("t", [18, 36, 7, 32], q.view(), k.t(), v.view(), None, &mut corner).unwrap();
        let want = chain(q.slice(s![..18, ..7]), k.t().slice(s![..7, ..36]), v.slice(s![..36, ..32]), None);
        // SAFETY: written by the call.
        assert!(corner.iter().zip(&want).all(|(g, w)| unsafe { g.assume_init() }.to_bits() == w.to_bits()));
    }
}
