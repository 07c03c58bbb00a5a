//! Matrix products through the system's OpenBLAS (cargo feature `blas`):
//! `cblas_sgemm` / `cblas_dgemm` on one thread per call, the product split
//! across rayon's threads by `gemm` as for matrixmultiply, so rayon stays
//! the one pool of threads (OpenBLAS's own would compete with it, and with
//! the products of a batch running in parallel).
//!
//! CBLAS addresses a matrix by a leading dimension along one axis and unit
//! stride along the other. An operand with another layout (a reversed
//! view, strides on both axes) makes `product` return `false`, and the
//! caller computes that product with a library that takes any strides.

use std::any::TypeId;
use std::sync::Once;

use cblas_sys::{cblas_dgemm, cblas_sgemm, CBLAS_LAYOUT, CBLAS_TRANSPOSE};
use ndarray::ArrayView2;

// The CBLAS functions `cblas-sys` declares, and `openblas_set_num_threads`,
// are OpenBLAS's.
#[link(name = "openblas")]
extern "C" {
    fn openblas_set_num_threads(n: std::os::raw::c_int);
}

/// Keeps OpenBLAS on the calling thread (see the module docs); once per
/// process, before the first product.
fn single_threaded() {
    static ONCE: Once = Once::new();
    // SAFETY: OpenBLAS's documented setter, called before any product of
    // this process runs (`Once` orders it before every later call).
    ONCE.call_once(|| unsafe { openblas_set_num_threads(1) });
}

/// How CBLAS reads a `rows x cols` view in row-major order: as it is or
/// transposed, and its leading dimension; `None` when neither axis has
/// unit stride (or a stride is negative).
fn operand<T>(v: &ArrayView2<'_, T>) -> Option<(CBLAS_TRANSPOSE, i32)> {
    let (rows, cols) = v.dim();
    let (s0, s1) = (v.strides()[0], v.strides()[1]);
    // An axis of length one may carry any stride.
    let unit = |len: usize, s: isize| s == 1 || len <= 1;
    let lead = |s: isize, min: usize| -> Option<i32> {
        let min = min.max(1);
        let ld = if s >= min as isize { s as usize } else { min };
        i32::try_from(ld).ok()
    };
    if unit(cols, s1) && (s0 >= 0 || rows <= 1) {
        // Row-major: element (i, j) at i * ld + j; with one row, any
        // leading dimension of at least `cols` serves.
        let ld = if rows <= 1 { lead(cols as isize, cols)? } else { lead(s0, cols)? };
        if rows > 1 && (s0 as usize) < cols {
            return None;
        }
        Some((CBLAS_TRANSPOSE::CblasNoTrans, ld))
    } else if unit(rows, s0) && (s1 >= 0 || cols <= 1) {
        // Column-major: element (i, j) at j * ld + i, the transpose of a
        // row-major `cols x rows` matrix.
        let ld = if cols <= 1 { lead(rows as isize, rows)? } else { lead(s1, rows)? };
        if cols > 1 && (s1 as usize) < rows {
            return None;
        }
        Some((CBLAS_TRANSPOSE::CblasTrans, ld))
    } else {
        None
    }
}

/// `out = a · b` through CBLAS, `out` being `m x n` elements at `ptr` with
/// strides `rs`, `cs`; `T` is `f32` or `f64`. Returns `false`, having
/// written nothing, when an operand's layout is not one CBLAS reads.
///
/// # Safety
///
/// `ptr` must be valid for writes of the `m x n` elements its strides
/// address, which nothing else accesses meanwhile.
pub(crate) unsafe fn product<'v, T: 'static>(
    a: ArrayView2<'v, T>,
    b: ArrayView2<'v, T>,
    ptr: *mut T,
    rs: isize,
    cs: isize,
) -> bool {
    let (m, k, n) = (a.nrows(), a.ncols(), b.ncols());
    // Row-major C: unit column stride. A column-major C is the row-major
    // transpose: C^T = B^T · A^T.
    let (a, b, m, n, ldc) = if cs == 1 || n <= 1 {
        (a, b, m, n, if m <= 1 { n.max(1) as isize } else { rs })
    } else if rs == 1 || m <= 1 {
        (b.reversed_axes(), a.reversed_axes(), n, m, if n <= 1 { m.max(1) as isize } else { cs })
    } else {
        return false;
    };
    if ldc < n.max(1) as isize {
        return false;
    }
    let (Some((ta, lda)), Some((tb, ldb))) = (operand(&a), operand(&b)) else { return false };
    let (Ok(m), Ok(n), Ok(k), Ok(ldc)) = (i32::try_from(m), i32::try_from(n), i32::try_from(k), i32::try_from(ldc))
    else {
        return false;
    };
    single_threaded();
    let layout = CBLAS_LAYOUT::CblasRowMajor;
    if TypeId::of::<T>() == TypeId::of::<f32>() {
        let (pa, pb, pc) = (a.as_ptr().cast::<f32>(), b.as_ptr().cast::<f32>(), ptr.cast::<f32>());
        // SAFETY: the layouts were checked above (unit strides, leading
        // dimensions covering a row); beta = 0, so C is not read.
        unsafe { cblas_sgemm(layout, ta, tb, m, n, k, 1.0, pa, lda, pb, ldb, 0.0, pc, ldc) };
    } else if TypeId::of::<T>() == TypeId::of::<f64>() {
        let (pa, pb, pc) = (a.as_ptr().cast::<f64>(), b.as_ptr().cast::<f64>(), ptr.cast::<f64>());
        // SAFETY: as for f32.
        unsafe { cblas_dgemm(layout, ta, tb, m, n, k, 1.0, pa, lda, pb, ldb, 0.0, pc, ldc) };
    } else {
        return false;
    }
    true
}
