//! `f32` products of a few rows by a matrix stored by columns (a child of
//! `gemm`, which chooses it on processors with AVX-512F): `x · w^T` with
//! `w` an `[out, in]` weight, the layout of a dense layer's weight in most
//! frameworks, as a batch of one to fifteen rows meets it.
//!
//! Each output element is a dot product of a row of `a` with a column of
//! `b`, both contiguous. The packed kernels (and the `gemm` crate) would
//! copy `b` into panels first, which for so few rows costs more than the
//! product: `b` is read once, in place, and the rows of `a` (a few pages)
//! stay in the cache. A block of `C` columns times `R` rows keeps `R x C`
//! sixteen-lane sums in registers; each step of sixteen terms loads `C +
//! R` vectors for `R x C` multiply-adds, and at the end each sum is added
//! across its lanes. The columns are cut into pieces, one task each, on
//! several threads once `b` is large enough to be worth it.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

use rayon::prelude::*;

use super::avx512::Mat;

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
/// The processor has AVX-512F; `1 <= m <= MAX_ROWS`, `k > 0`, `a.cs ==
/// 1` and `b.rs == 1` (or `k == 1`); `a` and `b` address `m x k` and `k x n` readable
/// elements, `c` `m x n` writable ones that nothing else accesses
/// meanwhile.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn dots(m: usize, k: usize, n: usize, a: Mat, b: Mat, c: Mat, threads: usize, scale: Option<f32>) {
    let task = |t: usize| {
        let j0 = t * TASK_COLS;
        let j1 = (j0 + TASK_COLS).min(n);
        // SAFETY: columns j0..j1 of `b` and `c` exist; as the caller vouches.
        unsafe { columns(m, k, j0, j1, a, b, c, scale) };
    };
    let tasks = n.div_ceil(TASK_COLS);
    if threads > 1 {
        (0..tasks).into_par_iter().for_each(task);
    } else {
        (0..tasks).for_each(task);
    }
}

/// Columns `j0..j1` of `c`: blocks of eight columns (four where four or
/// more rows share a block), each times every block of rows.
///
/// # Safety
///
/// As `dots`, and `j0 < j1 <= n`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[allow(clippy::too_many_arguments)]
unsafe fn columns(m: usize, k: usize, j0: usize, j1: usize, a: Mat, b: Mat, c: Mat, scale: Option<f32>) {
    // With one or two rows, eight columns give the sums enough
    // independent chains to hide the multiply-add latency; with three or
    // four rows four columns do, keeping at most 16 sums in registers.
    let wide = m <= 2;
    let step = if wide { 8 } else { 4 };
    let mut j = j0;
    while j < j1 {
        let cols = step.min(j1 - j);
        let mut i = 0;
        while i < m {
            let rows = (m - i).min(4);
            // SAFETY: rows i..i + rows and columns j..j + cols are inside
            // the operands, as the caller vouches.
            unsafe {
                match (rows, wide) {
                    (1, true) => block::<1, 8>(k, i, j, cols, a, b, c, scale),
                    (2, true) => block::<2, 8>(k, i, j, cols, a, b, c, scale),
                    (1, false) => block::<1, 4>(k, i, j, cols, a, b, c, scale),
                    (2, false) => block::<2, 4>(k, i, j, cols, a, b, c, scale),
                    (3, _) => block::<3, 4>(k, i, j, cols, a, b, c, scale),
                    _ => block::<4, 4>(k, i, j, cols, a, b, c, scale),
                }
            }
            i += rows;
        }
        j += cols;
    }
}

/// The `R x cols` block of `c` at `(i0, j0)` (`cols <= C`; columns past
/// `cols` repeat the last one, computed and not stored), `R x C` sums of
/// sixteen lanes over the `k` terms, the last step masked.
///
/// # Safety
///
/// As `dots`; rows `i0..i0 + R` and columns `j0..j0 + cols` (`1 <= cols
/// <= C`) are inside the operands.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
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
    let mut sums = [[_mm512_setzero_ps(); C]; R];
    // SAFETY (pointer arithmetic): rows and columns inside the operands.
    let rows: [*const f32; R] = std::array::from_fn(|r| unsafe { a.at(i0 + r, 0) }.cast_const());
    let cols_at: [*const f32; C] = std::array::from_fn(|q| unsafe { b.at(0, j0 + q.min(cols - 1)) }.cast_const());
    let whole = k / 16;
    for s in 0..whole {
        let p = s * 16;
        // SAFETY: terms p..p + 16 < k of each row and column.
        unsafe {
            let w: [__m512; C] = std::array::from_fn(|q| _mm512_loadu_ps(cols_at[q].add(p)));
            for r in 0..R {
                let x = _mm512_loadu_ps(rows[r].add(p));
                for q in 0..C {
                    sums[r][q] = _mm512_fmadd_ps(x, w[q], sums[r][q]);
                }
            }
        }
    }
    let rest = k - whole * 16;
    if rest > 0 {
        let p = whole * 16;
        let mask: __mmask16 = ((1u32 << rest) - 1) as __mmask16;
        // SAFETY: the masked lanes are terms p..k of each row and column.
        unsafe {
            let w: [__m512; C] = std::array::from_fn(|q| _mm512_maskz_loadu_ps(mask, cols_at[q].add(p)));
            for r in 0..R {
                let x = _mm512_maskz_loadu_ps(mask, rows[r].add(p));
                for q in 0..C {
                    sums[r][q] = _mm512_fmadd_ps(x, w[q], sums[r][q]);
                }
            }
        }
    }
    for (r, row) in sums.iter().enumerate() {
        for (q, v) in row.iter().enumerate().take(cols) {
            let mut y = _mm512_reduce_add_ps(*v);
            if let Some(s) = scale {
                y *= s;
            }
            // SAFETY: (i0 + r, j0 + q) is inside `c`.
            unsafe { c.at(i0 + r, j0 + q).write(y) };
        }
    }
}
