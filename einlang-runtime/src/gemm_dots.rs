//! `f32` products of a few rows by a matrix read in place (a child of
//! `gemm`), as a batch of one to fifteen rows meets a dense layer's weight.
//!
//! **Stored by columns** (`dots`): `x · w^T` with `w` an `[out, in]`
//! weight, the layout of a dense layer's weight in most frameworks. Each
//! output element is a dot product of a row of `a` with a column of `b`,
//! both contiguous. The packed kernels (and the `gemm` crate) would copy
//! `b` into panels first, which for so few rows costs more than the
//! product: `b` is read once, in place, and the rows of `a` (a few pages)
//! stay in the cache. A block of `C` columns times `R` rows keeps `R x C`
//! vector sums in registers; each step of a vector's width of terms loads
//! `C + R` vectors for `R x C` multiply-adds, the last step masked, and at
//! the end each sum is added across its lanes.
//!
//! **Stored by rows** (`by_rows`): `x · w` with `w` an `[in, out]` matrix.
//! A block of `R` rows times `C` vectors of columns keeps its `R x C x W`
//! outputs in registers, and each term of the sum loads `C` vectors of one
//! row of `b` and broadcasts `R` values of `a` for `R x C` multiply-adds;
//! each output is one chain of fused multiply-adds over the terms in order
//! (the same bits however the columns are cut and on any number of
//! threads).
//!
//! Either way the columns are cut into pieces, one task each, on several
//! threads once `b` is large enough to be worth it. Each kernel, written
//! once (`dot_kernel!`, `row_kernel!`), is compiled for AVX-512F (sixteen
//! lanes, 32 registers: blocks up to 4 rows x 4 columns, or 2 x 8) and for
//! AVX2 with FMA (eight lanes, 16 registers: 2 x 4).

use rayon::prelude::*;

use super::packed::{Isa, Mat};

/// The most rows `dots` takes (`gemm` sends it fewer than this).
pub(super) const MAX_ROWS: usize = 15;

/// Columns per task: a task's columns of `b` (32 x 4 KB at 1024 terms)
/// stay in the second-level cache while every block of rows reads them.
const TASK_COLS: usize = 32;

/// `c = a · b` (times `scale` when there is one, rounded once more: the
/// bits of the product followed by the multiplication) for `a: m x k`
/// with contiguous rows and `b: k x n` with contiguous columns (`b.rs ==
/// 1`), `c` written whole and not read, on up to `threads` threads.
///
/// # Safety
///
/// The processor has `isa` (AVX-512F; AVX2 and FMA); `1 <= m <=
/// MAX_ROWS`, `k > 0`, `a.cs == 1` and `b.rs == 1` (or `k == 1`); `a` and
/// `b` address `m x k` and `k x n` readable elements, `c` `m x n` writable
/// ones that nothing else accesses meanwhile.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn dots(
    isa: Isa,
    m: usize,
    k: usize,
    n: usize,
    a: Mat,
    b: Mat,
    c: Mat,
    threads: usize,
    scale: Option<f32>,
) {
    // SAFETY: as the caller vouches.
    unsafe { in_tasks::<false>(isa, m, k, n, a, b, c, threads, scale, TASK_COLS) }
}

/// Columns per task of `by_rows`: one block of eight vectors of sixteen
/// with AVX-512, four blocks of four vectors of eight with AVX2.
const ROW_TASK_COLS: usize = 128;

/// `c = a · b` (times `scale` when there is one, rounded once more) for
/// `a: m x k` and `b: k x n` with contiguous rows (`b.cs == 1`), `c`
/// written whole and not read, on up to `threads` threads: each output
/// the chain of fused multiply-adds `a[i, 0] b[0, j] + ... + a[i, k-1]
/// b[k-1, j]` from zero, in that order.
///
/// # Safety
///
/// The processor has `isa` (AVX-512F; AVX2 and FMA); `m >= 1`, `k > 0`,
/// `b.cs == 1`; `a` and `b` address `m x k` and `k x n` readable
/// elements, `c` `m x n` writable ones that nothing else accesses
/// meanwhile.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn by_rows(
    isa: Isa,
    m: usize,
    k: usize,
    n: usize,
    a: Mat,
    b: Mat,
    c: Mat,
    threads: usize,
    scale: Option<f32>,
) {
    // SAFETY: as the caller vouches.
    unsafe { in_tasks::<true>(isa, m, k, n, a, b, c, threads, scale, ROW_TASK_COLS) }
}

/// `dots` (`BY_ROWS` false) or `by_rows`: the columns in pieces of
/// `task_cols`, a task each.
///
/// # Safety
///
/// As `dots` or `by_rows`.
#[allow(clippy::too_many_arguments)]
unsafe fn in_tasks<const BY_ROWS: bool>(
    isa: Isa,
    m: usize,
    k: usize,
    n: usize,
    a: Mat,
    b: Mat,
    c: Mat,
    threads: usize,
    scale: Option<f32>,
    task_cols: usize,
) {
    let task = |t: usize| {
        let j0 = t * task_cols;
        let j1 = (j0 + task_cols).min(n);
        // SAFETY: columns j0..j1 of `b` and `c` exist; the processor has
        // `isa`; as the caller vouches.
        unsafe {
            match isa {
                Isa::Avx512 => avx512::columns::<BY_ROWS>(m, k, j0, j1, a, b, c, scale),
                Isa::Avx2 => avx2::columns::<BY_ROWS>(m, k, j0, j1, a, b, c, scale),
            }
        }
    };
    let tasks = n.div_ceil(task_cols);
    if threads > 1 {
        (0..tasks).into_par_iter().for_each(task);
    } else {
        (0..tasks).for_each(task);
    }
}

/// `columns`, `either` and `block` for the instruction set `$features`,
/// over the module's vector type `V` of `W` lanes and its helpers `zero`,
/// `load`, `load_rest` (the first `rest <= W` lanes, zeros after),
/// `fmadd` and `sum` (across the lanes); blocks of at most `RMAX` rows,
/// `CWIDE` columns when one or two rows share a block, else `CNARROW`
/// (`row_kernel!` gives the same module `row_block`).
macro_rules! dot_kernel {
    ($features:literal) => {
        /// Columns `j0..j1` of `c`: blocks of columns, each times every
        /// block of rows; a block `CWIDE` sums (dots) or vectors of sums
        /// (`BY_ROWS`) wide when one or two rows share it, else `CNARROW`.
        ///
        /// # Safety
        ///
        /// As `dots` (or `by_rows` with `BY_ROWS`), and `j0 < j1 <= n`.
        #[target_feature(enable = $features)]
        #[allow(clippy::too_many_arguments)]
        pub(super) unsafe fn columns<const BY_ROWS: bool>(
            m: usize,
            k: usize,
            j0: usize,
            j1: usize,
            a: Mat,
            b: Mat,
            c: Mat,
            scale: Option<f32>,
        ) {
            let wide = m <= 2;
            let step = if wide { CWIDE } else { CNARROW } * if BY_ROWS { W } else { 1 };
            let mut j = j0;
            while j < j1 {
                let cols = step.min(j1 - j);
                let mut i = 0;
                while i < m {
                    let rows = (m - i).min(RMAX);
                    // SAFETY: rows i..i + rows and columns j..j + cols are
                    // inside the operands, as the caller vouches.
                    unsafe {
                        match (rows, wide) {
                            (1, true) => either::<BY_ROWS, 1, CWIDE>(k, i, j, cols, a, b, c, scale),
                            (2, true) => either::<BY_ROWS, 2, CWIDE>(k, i, j, cols, a, b, c, scale),
                            (1, false) => either::<BY_ROWS, 1, CNARROW>(k, i, j, cols, a, b, c, scale),
                            (2, false) => either::<BY_ROWS, 2, CNARROW>(k, i, j, cols, a, b, c, scale),
                            (3, _) => either::<BY_ROWS, 3, CNARROW>(k, i, j, cols, a, b, c, scale),
                            _ => either::<BY_ROWS, 4, CNARROW>(k, i, j, cols, a, b, c, scale),
                        }
                    }
                    i += rows;
                }
                j += cols;
            }
        }

        /// `row_block` with `BY_ROWS`, else `block`.
        ///
        /// # Safety
        ///
        /// As the one it calls.
        #[inline]
        #[target_feature(enable = $features)]
        #[allow(clippy::too_many_arguments)]
        unsafe fn either<const BY_ROWS: bool, const R: usize, const C: usize>(
            k: usize,
            i0: usize,
            j0: usize,
            cols: usize,
            a: Mat,
            b: Mat,
            c: Mat,
            scale: Option<f32>,
        ) {
            // SAFETY: as the caller vouches.
            unsafe {
                if BY_ROWS {
                    row_block::<R, C>(k, i0, j0, cols, a, b, c, scale)
                } else {
                    block::<R, C>(k, i0, j0, cols, a, b, c, scale)
                }
            }
        }

        /// The `R x cols` block of `c` at `(i0, j0)` (`cols <= C`; columns
        /// past `cols` repeat the last one, computed and not stored), `R x
        /// C` sums of `W` lanes over the `k` terms, the last step masked.
        ///
        /// # Safety
        ///
        /// As `dots`; rows `i0..i0 + R` and columns `j0..j0 + cols` (`1 <=
        /// cols <= C`) are inside the operands.
        #[target_feature(enable = $features)]
        #[allow(clippy::too_many_arguments)]
        unsafe fn block<const R: usize, const C: usize>(
            k: usize,
            i0: usize,
            j0: usize,
            cols: usize,
            a: Mat,
            b: Mat,
            c: Mat,
            scale: Option<f32>,
        ) {
            // SAFETY (throughout): rows and columns inside the operands, as
            // the caller vouches; the processor has the features.
            unsafe {
                let mut sums = [[zero(); C]; R];
                let rows: [*const f32; R] = std::array::from_fn(|r| a.at(i0 + r, 0).cast_const());
                let at: [*const f32; C] = std::array::from_fn(|q| b.at(0, j0 + q.min(cols - 1)).cast_const());
                let whole = k / W;
                for s in 0..whole {
                    let p = s * W;
                    let w: [V; C] = std::array::from_fn(|q| load(at[q].add(p)));
                    for r in 0..R {
                        let x = load(rows[r].add(p));
                        for q in 0..C {
                            sums[r][q] = fmadd(x, w[q], sums[r][q]);
                        }
                    }
                }
                let rest = k - whole * W;
                if rest > 0 {
                    let p = whole * W;
                    let w: [V; C] = std::array::from_fn(|q| load_rest(at[q].add(p), rest));
                    for r in 0..R {
                        let x = load_rest(rows[r].add(p), rest);
                        for q in 0..C {
                            sums[r][q] = fmadd(x, w[q], sums[r][q]);
                        }
                    }
                }
                for (r, row) in sums.iter().enumerate() {
                    for (q, v) in row.iter().enumerate().take(cols) {
                        let mut y = sum(*v);
                        if let Some(s) = scale {
                            y *= s;
                        }
                        c.at(i0 + r, j0 + q).write(y);
                    }
                }
            }
        }
    };
}

/// `row_block` (`by_rows`) for the instruction set `$features`, over the
/// same helpers as `dot_kernel!` and `broadcast` and `store` (all `W`
/// lanes to memory).
macro_rules! row_kernel {
    ($features:literal) => {
        /// The `R x cols` block of `c` at `(i0, j0)` (`cols <= C x W`):
        /// `R x C` vectors of sums over the `k` terms, each term loading
        /// `C` vectors of a row of `b` (masked past `cols`).
        ///
        /// # Safety
        ///
        /// As `by_rows`; rows `i0..i0 + R` and columns `j0..j0 + cols`
        /// (`1 <= cols <= C x W`) are inside the operands.
        #[target_feature(enable = $features)]
        #[allow(clippy::too_many_arguments)]
        unsafe fn row_block<const R: usize, const C: usize>(
            k: usize,
            i0: usize,
            j0: usize,
            cols: usize,
            a: Mat,
            b: Mat,
            c: Mat,
            scale: Option<f32>,
        ) {
            // Lanes of vector `q` inside the block: W, then the rest, then 0.
            let lanes: [usize; C] = std::array::from_fn(|q| cols.saturating_sub(q * W).min(W));
            let mut sums = [[zero(); C]; R];
            // SAFETY (throughout): rows and columns inside the operands, as
            // the caller vouches (a masked load reads only its lanes; its
            // address is formed with wrapping arithmetic); the processor
            // has the features.
            unsafe {
                if cols == C * W {
                    for p in 0..k {
                        let row = b.at(p, j0).cast_const();
                        let w: [V; C] = std::array::from_fn(|q| load(row.add(q * W)));
                        for r in 0..R {
                            let x = broadcast(*a.at(i0 + r, p));
                            for q in 0..C {
                                sums[r][q] = fmadd(x, w[q], sums[r][q]);
                            }
                        }
                    }
                } else {
                    for p in 0..k {
                        let row = b.at(p, j0).cast_const();
                        let w: [V; C] = std::array::from_fn(|q| load_rest(row.wrapping_add(q * W), lanes[q]));
                        for r in 0..R {
                            let x = broadcast(*a.at(i0 + r, p));
                            for q in 0..C {
                                sums[r][q] = fmadd(x, w[q], sums[r][q]);
                            }
                        }
                    }
                }
                let mut out = [0.0f32; W];
                for (r, row) in sums.iter().enumerate() {
                    for (q, v) in row.iter().enumerate() {
                        store(out.as_mut_ptr(), *v);
                        for (l, y) in out.iter().enumerate().take(lanes[q]) {
                            let y = match scale {
                                Some(s) => *y * s,
                                None => *y,
                            };
                            c.at(i0 + r, j0 + q * W + l).write(y);
                        }
                    }
                }
            }
        }
    };
}

/// Sixteen lanes (AVX-512F).
#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    use super::Mat;

    type V = __m512;
    const W: usize = 16;
    const RMAX: usize = 4;
    const CWIDE: usize = 8;
    const CNARROW: usize = 4;

    #[inline]
    #[target_feature(enable = "avx512f")]
    fn zero() -> V {
        _mm512_setzero_ps()
    }

    /// # Safety
    ///
    /// `p` is valid for reads of `W` values.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn load(p: *const f32) -> V {
        unsafe { _mm512_loadu_ps(p) }
    }

    /// # Safety
    ///
    /// `p` is valid for reads of `rest <= W` values.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn load_rest(p: *const f32, rest: usize) -> V {
        unsafe { _mm512_maskz_loadu_ps(((1u32 << rest) - 1) as __mmask16, p) }
    }

    #[inline]
    #[target_feature(enable = "avx512f")]
    fn broadcast(x: f32) -> V {
        _mm512_set1_ps(x)
    }

    /// # Safety
    ///
    /// `p` is valid for writes of `W` values.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn store(p: *mut f32, v: V) {
        unsafe { _mm512_storeu_ps(p, v) }
    }

    #[inline]
    #[target_feature(enable = "avx512f")]
    fn fmadd(a: V, b: V, c: V) -> V {
        _mm512_fmadd_ps(a, b, c)
    }

    #[inline]
    #[target_feature(enable = "avx512f")]
    fn sum(v: V) -> f32 {
        _mm512_reduce_add_ps(v)
    }

    dot_kernel!("avx512f");
    row_kernel!("avx512f");
}

/// Eight lanes (AVX2 with FMA).
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::Mat;

    type V = __m256;
    const W: usize = 8;
    const RMAX: usize = 2;
    const CWIDE: usize = 4;
    const CNARROW: usize = 4;

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn zero() -> V {
        _mm256_setzero_ps()
    }

    /// # Safety
    ///
    /// `p` is valid for reads of `W` values.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn load(p: *const f32) -> V {
        unsafe { _mm256_loadu_ps(p) }
    }

    /// # Safety
    ///
    /// `p` is valid for reads of `rest <= W` values.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn load_rest(p: *const f32, rest: usize) -> V {
        let mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(rest as i32), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        // SAFETY: only the first `rest` lanes are read.
        unsafe { _mm256_maskload_ps(p, mask) }
    }

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn broadcast(x: f32) -> V {
        _mm256_set1_ps(x)
    }

    /// # Safety
    ///
    /// `p` is valid for writes of `W` values.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn store(p: *mut f32, v: V) {
        unsafe { _mm256_storeu_ps(p, v) }
    }

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn fmadd(a: V, b: V, c: V) -> V {
        _mm256_fmadd_ps(a, b, c)
    }

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn sum(v: V) -> f32 {
        let half = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
        let pair = _mm_add_ps(half, _mm_movehl_ps(half, half));
        _mm_cvtss_f32(_mm_add_ss(pair, _mm_shuffle_ps::<1>(pair, pair)))
    }

    dot_kernel!("avx2,fma");
    row_kernel!("avx2,fma");
}
