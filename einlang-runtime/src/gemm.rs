//! Matrix products for contractions the compiler recognized as GEMM-shaped.
//!
//! The operands arrive as views already permuted to `[batch, m, k]` and
//! `[batch, k, n]` (any strides, including transposed ones); ndarray's
//! `general_mat_mul` hands them to `matrixmultiply` with their strides, so a
//! transposed operand is never copied. Batches run in parallel through rayon.

use ndarray::linalg::general_mat_mul;
use ndarray::{s, Array2, Array3, ArrayView2, ArrayView3, Axis, LinalgScalar};
use rayon::prelude::*;

use crate::Error;

/// Extents as `usize`, refusing negative ones.
fn extents<const N: usize>(function: &str, dims: [i64; N]) -> Result<[usize; N], Error> {
    let mut out = [0usize; N];
    for (o, d) in out.iter_mut().zip(dims) {
        *o = crate::shape::extent(function, "a matrix product extent", d)?;
    }
    Ok(out)
}

/// Checks that a view covers the `rows x cols` corner the product reads.
fn covers<T>(function: &str, v: &ArrayView2<'_, T>, rows: usize, cols: usize) -> Result<(), Error> {
    if v.nrows() >= rows && v.ncols() >= cols {
        Ok(())
    } else {
        Err(Error::Extent {
            function: function.to_string(),
            message: format!("a matrix product operand of shape {:?} is smaller than {rows}x{cols}", v.shape()),
        })
    }
}

/// `a[..m, ..k] · b[..k, ..n]` into a new standard-layout `m x n` array.
pub fn matmul<T>(
    function: &str,
    m: i64,
    n: i64,
    k: i64,
    a: ArrayView2<'_, T>,
    b: ArrayView2<'_, T>,
) -> Result<Array2<T>, Error>
where
    T: LinalgScalar + Send + Sync,
{
    let [m, n, k] = extents(function, [m, n, k])?;
    covers(function, &a, m, k)?;
    covers(function, &b, k, n)?;
    // Results are in standard layout whatever the operands' layouts.
    let mut out = Array2::<T>::zeros((m, n));
    let (a, b) = (a.slice(s![..m, ..k]), b.slice(s![..k, ..n]));
    // One GEMM runs on one thread: a large product is cut into blocks of
    // rows (or of columns, when it has few rows), one per thread.
    let threads = rayon::current_num_threads();
    let work = m.saturating_mul(n).saturating_mul(k);
    if threads > 1 && work >= PARALLEL_WORK {
        if m >= n.min(threads * BLOCK_MIN) {
            let rows = m.div_ceil(threads).max(BLOCK_MIN);
            out.axis_chunks_iter_mut(Axis(0), rows).into_par_iter().enumerate().for_each(|(i, mut c)| {
                let lo = i * rows;
                let a = a.slice(s![lo..lo + c.nrows(), ..]);
                general_mat_mul(T::one(), &a, &b, T::zero(), &mut c);
            });
        } else {
            let cols = n.div_ceil(threads).max(BLOCK_MIN);
            out.axis_chunks_iter_mut(Axis(1), cols).into_par_iter().enumerate().for_each(|(j, mut c)| {
                let lo = j * cols;
                let b = b.slice(s![.., lo..lo + c.ncols()]);
                general_mat_mul(T::one(), &a, &b, T::zero(), &mut c);
            });
        }
    } else {
        general_mat_mul(T::one(), &a, &b, T::zero(), &mut out);
    }
    Ok(out)
}

/// Multiply-adds above which a product is split across threads.
const PARALLEL_WORK: usize = 1 << 21;

/// The fewest rows (or columns) of a block of a split product.
const BLOCK_MIN: usize = 32;

/// Batched product: `out[p] = a[p, ..m, ..k] · b[p, ..k, ..n]` for `p < batch`.
pub fn batched_matmul<T>(
    function: &str,
    batch: i64,
    m: i64,
    n: i64,
    k: i64,
    a: ArrayView3<'_, T>,
    b: ArrayView3<'_, T>,
) -> Result<Array3<T>, Error>
where
    T: LinalgScalar + Send + Sync,
{
    let [batch, m, n, k] = extents(function, [batch, m, n, k])?;
    if a.len_of(Axis(0)) < batch || b.len_of(Axis(0)) < batch {
        return Err(Error::Extent {
            function: function.to_string(),
            message: format!("a batched product has fewer than {batch} batches"),
        });
    }
    let mut out = Array3::<T>::zeros((batch, m, n));
    out.axis_iter_mut(Axis(0)).into_par_iter().enumerate().try_for_each(|(p, mut c)| {
        let ap = a.index_axis(Axis(0), p);
        let bp = b.index_axis(Axis(0), p);
        covers(function, &ap, m, k)?;
        covers(function, &bp, k, n)?;
        general_mat_mul(T::one(), &ap.slice(s![..m, ..k]), &bp.slice(s![..k, ..n]), T::zero(), &mut c);
        Ok(())
    })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array;

    fn naive(a: &ArrayView2<'_, f64>, b: &ArrayView2<'_, f64>, m: usize, n: usize, k: usize) -> Array2<f64> {
        Array2::from_shape_fn((m, n), |(i, j)| (0..k).map(|p| a[[i, p]] * b[[p, j]]).sum())
    }

    #[test]
    fn matmul_matches_loops_with_transposed_and_oversized_operands() {
        let a = Array::from_shape_fn((7, 5), |(i, j)| (i * 5 + j) as f64 * 0.25 - 3.0);
        let bt = Array::from_shape_fn((4, 6), |(i, j)| (i as f64) - (j as f64) * 0.5);
        let b = bt.t();
        // Only the 6x5 corner of `a` and the 5x4 corner of `b^T` take part.
        let got = matmul("f", 6, 4, 5, a.view(), b).unwrap();
        assert_eq!(got, naive(&a.view(), &b, 6, 4, 5));
        assert!(got.is_standard_layout());
        let both_transposed = matmul("f", 4, 6, 5, b.t(), a.t()).unwrap();
        assert!(both_transposed.is_standard_layout());
        assert_eq!(both_transposed, naive(&a.view(), &b, 6, 4, 5).t());
    }

    #[test]
    fn a_large_product_split_across_threads_matches_loops() {
        // Tall (split by rows) and wide (split by columns), one operand
        // transposed, on four threads.
        let pool = rayon::ThreadPoolBuilder::new().num_threads(4).build().unwrap();
        for (m, n, k) in [(301, 40, 190), (40, 333, 200)] {
            let a = Array::from_shape_fn((m, k), |(i, j)| ((i * 7 + j * 3) % 11) as f64 - 5.0);
            let bt = Array::from_shape_fn((n, k), |(i, j)| ((i * 5 + j) % 13) as f64 * 0.5);
            let got = pool.install(|| matmul("f", m as i64, n as i64, k as i64, a.view(), bt.t()).unwrap());
            assert!(got.is_standard_layout());
            assert_eq!(got, naive(&a.view(), &bt.t(), m, n, k));
        }
    }

    #[test]
    fn matmul_rejects_negative_and_oversized_extents() {
        let a = Array2::<f32>::zeros((2, 2));
        assert!(matmul("f", -1, 2, 2, a.view(), a.view()).is_err());
        assert!(matmul("f", 3, 2, 2, a.view(), a.view()).is_err());
    }

    #[test]
    fn batched_matmul_matches_loops() {
        let a = Array::from_shape_fn((3, 4, 2), |(p, i, j)| (p + i * 2 + j) as f64);
        let b = Array::from_shape_fn((3, 5, 2), |(p, i, j)| (p * 3) as f64 - (i + j) as f64);
        let bt = b.view().permuted_axes([0, 2, 1]);
        let got = batched_matmul("f", 3, 4, 5, 2, a.view(), bt).unwrap();
        for p in 0..3 {
            let want = naive(&a.index_axis(Axis(0), p), &bt.index_axis(Axis(0), p), 4, 5, 2);
            assert_eq!(got.index_axis(Axis(0), p), want);
        }
    }
}
