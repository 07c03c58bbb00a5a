//! Storage and loops for recurrences.
//!
//! A recurrence writes points of a tensor while reading points written
//! earlier, possibly from several threads at once (the parallel axes of one
//! step, the tiles of one anti-diagonal of a wavefront). [`Store`] is the raw
//! view that allows this. The compiler guarantees, by the dependency
//! analysis of `einlang_core::analysis::recur`, that
//! - concurrent writes go to distinct points, and
//! - every read is of a point that was written before the read began (an
//!   earlier step, an earlier tile, or an earlier clause of the same point)
//!   and is not written again while it may still be read,
//!
//! so no access races; that is the safety contract of [`Store::get`] and
//! [`Store::set`].

use std::marker::PhantomData;

use ndarray::{Array, ArrayView, Dimension};
use rayon::prelude::*;

use crate::Error;

/// Raw element access to an array being filled by a recurrence: a pointer
/// to a standard-layout (row-major) array and its shape. `Copy`, so that
/// generated loops take a local copy whose shape the optimizer knows is not
/// changed by the writes.
pub struct Store<'a, T, const N: usize> {
    ptr: *mut T,
    shape: [usize; N],
    _array: PhantomData<&'a T>,
}

impl<T, const N: usize> Clone for Store<'_, T, N> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T, const N: usize> Copy for Store<'_, T, N> {}

// SAFETY: a `Store` stands for a mutable borrow of the array's elements;
// sharing it between threads is sound under the access contract in the
// module docs.
unsafe impl<T: Send, const N: usize> Sync for Store<'_, T, N> {}
unsafe impl<T: Send, const N: usize> Send for Store<'_, T, N> {}

impl<'a, T: Copy + Default, const N: usize> Store<'a, T, N> {
    /// Borrows `array` for the duration of the recurrence. The generated
    /// code always passes a freshly allocated array of rank `N` (standard
    /// layout); anything else gets a store of no elements.
    pub fn new<D: Dimension>(array: &'a mut Array<T, D>) -> Store<'a, T, N> {
        let mut shape = [0usize; N];
        if array.ndim() == N && array.is_standard_layout() {
            shape.copy_from_slice(array.shape());
        }
        Store { ptr: array.as_mut_ptr(), shape, _array: PhantomData }
    }

    #[inline(always)]
    fn offset(&self, idx: [usize; N]) -> usize {
        idx.iter().zip(&self.shape).fold(0usize, |off, (i, n)| off * n + i)
    }

    /// The element at `idx`.
    ///
    /// # Safety
    /// `idx` is inside the array's shape, and the point is not being written
    /// concurrently (see the module docs).
    #[inline(always)]
    pub unsafe fn get(&self, idx: [usize; N]) -> T {
        debug_assert!(idx.iter().zip(&self.shape).all(|(i, n)| i < n));
        *self.ptr.add(self.offset(idx))
    }

    /// Writes the element at `idx`.
    ///
    /// # Safety
    /// `idx` is inside the array's shape, and no other thread reads or
    /// writes the point concurrently (see the module docs).
    #[inline(always)]
    pub unsafe fn set(&self, idx: [usize; N], value: T) {
        debug_assert!(idx.iter().zip(&self.shape).all(|(i, n)| i < n));
        *self.ptr.add(self.offset(idx)) = value;
    }

    /// The `len` consecutive elements along the last axis starting at `idx`.
    ///
    /// # Safety
    /// The elements are inside the array, and nothing else reads or writes
    /// them while the slice lives (see the module docs).
    #[inline(always)]
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn row_mut(&self, idx: [usize; N], len: usize) -> &'a mut [T] {
        std::slice::from_raw_parts_mut(self.ptr.add(self.offset(idx)), len)
    }

    /// A read-only view of the whole array, with its rank as `D`: for a
    /// clause that passes a sub-tensor of the recurrence (an earlier step's
    /// row) to a function while other points are being written.
    ///
    /// # Safety
    /// Only points written before the view is made, and not written while
    /// it lives, are read through it (see the module docs). `D` has rank
    /// `N` (otherwise the view has no elements).
    #[inline]
    pub unsafe fn view<D: Dimension>(&self) -> ArrayView<'a, T, D> {
        match D::from_dimension(&ndarray::IxDyn(&self.shape)) {
            Some(shape) => ArrayView::from_shape_ptr(shape, self.ptr),
            None => ArrayView::from_shape_ptr(D::zeros(D::NDIM.unwrap_or(N)), self.ptr),
        }
    }

    /// Zeroes the slab at position `at` of `axis` (a circular buffer's slot
    /// about to hold a new step).
    ///
    /// # Safety
    /// `axis < N`, `at` is inside that axis, and no other thread accesses
    /// the slab concurrently.
    #[inline]
    pub unsafe fn clear_slab(&self, axis: usize, at: usize) {
        // Row-major: the slab is `outer` runs of `inner` contiguous elements.
        let outer: usize = self.shape[..axis].iter().product();
        let inner: usize = self.shape[axis + 1..].iter().product();
        for o in 0..outer {
            let start = (o * self.shape[axis] + at) * inner;
            std::slice::from_raw_parts_mut(self.ptr.add(start), inner).fill(T::default());
        }
    }
}

/// Runs `body(i)` for `i` in `start..end`, in parallel (rayon) when `work`
/// (estimated scalar operations of the whole loop) is above
/// [`crate::par::PAR_THRESHOLD`]. Stops at the first error.
#[inline]
pub fn each<F>(start: i64, end: i64, work: usize, body: F) -> Result<(), Error>
where
    F: Fn(i64) -> Result<(), Error> + Sync + Send,
{
    if end <= start {
        return Ok(());
    }
    if work >= crate::par::PAR_THRESHOLD && end - start > 1 {
        (start..end).into_par_iter().try_for_each(body)
    } else {
        (start..end).try_for_each(body)
    }
}

/// Fills `out[k] = value(start + k)`: the innermost loop of a clause that
/// writes a row of the last axis. `out` is a separate `&mut` argument, so
/// the optimizer knows the reads inside `value` do not alias it and can
/// vectorize. Runs in parallel blocks when `parallel` and `work` is above
/// the threshold. Stops at the first error.
#[inline]
pub fn fill_row<T, F>(out: &mut [T], start: i64, work: usize, parallel: bool, value: F) -> Result<(), Error>
where
    T: Send,
    F: Fn(i64) -> Result<T, Error> + Sync + Send,
{
    if parallel && work >= crate::par::PAR_THRESHOLD && out.len() > crate::par::BLOCK_LEN / 8 {
        let block = (out.len() / rayon::current_num_threads().max(1) / 4).clamp(64, crate::par::BLOCK_LEN);
        out.par_chunks_mut(block)
            .enumerate()
            .try_for_each(|(b, chunk)| fill_seq(chunk, start + (b * block) as i64, &value))
    } else {
        fill_seq(out, start, &value)
    }
}

#[inline(always)]
fn fill_seq<T, F>(out: &mut [T], start: i64, value: &F) -> Result<(), Error>
where
    F: Fn(i64) -> Result<T, Error>,
{
    for (k, slot) in out.iter_mut().enumerate() {
        *slot = value(start + k as i64)?;
    }
    Ok(())
}

/// Tile edge of the blocked wavefront. The compiler uses a wavefront only
/// when no read looks back further than this along either axis.
pub const TILE: i64 = 64;

/// Whether a two-axis recurrence of `cells` points should run as a blocked
/// wavefront: only when several threads can share each anti-diagonal and
/// there are enough tiles to keep them busy.
pub fn use_wavefront(rows: i64, cols: i64) -> bool {
    rayon::current_num_threads() > 1 && rows >= 4 * TILE && cols >= 4 * TILE
}

/// Runs `body(i, j)` for every point of `r0 x r1` such that each point runs
/// after every point with smaller-or-equal `i` and `j` (other than itself):
/// the points are cut into `TILE x TILE` tiles, the tiles of one
/// anti-diagonal run in parallel, and inside a tile the points run row by
/// row. Stops at the first error.
pub fn wavefront<F>(r0: (i64, i64), r1: (i64, i64), body: F) -> Result<(), Error>
where
    F: Fn(i64, i64) -> Result<(), Error> + Sync + Send,
{
    let (n0, n1) = (r0.1 - r0.0, r1.1 - r1.0);
    if n0 <= 0 || n1 <= 0 {
        return Ok(());
    }
    let (t0, t1) = ((n0 + TILE - 1) / TILE, (n1 + TILE - 1) / TILE);
    let tile = |bi: i64, bj: i64| -> Result<(), Error> {
        let (i_lo, j_lo) = (r0.0 + bi * TILE, r1.0 + bj * TILE);
        let (i_hi, j_hi) = ((i_lo + TILE).min(r0.1), (j_lo + TILE).min(r1.1));
        for i in i_lo..i_hi {
            for j in j_lo..j_hi {
                body(i, j)?;
            }
        }
        Ok(())
    };
    for d in 0..t0 + t1 - 1 {
        let lo = (d - (t1 - 1)).max(0);
        let hi = d.min(t0 - 1);
        (lo..=hi).into_par_iter().try_for_each(|bi| tile(bi, d - bi))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn store_reads_what_it_wrote_and_clears_slabs() {
        let mut a = Array::<f64, _>::zeros((3, 4));
        {
            let s = Store::<f64, 2>::new(&mut a);
            unsafe {
                s.set([1, 2], 5.0);
                s.set([2, 3], 7.0);
                assert_eq!(s.get([1, 2]), 5.0);
                s.clear_slab(0, 1);
                assert_eq!(s.get([1, 2]), 0.0);
            }
        }
        assert_eq!(a[[2, 3]], 7.0);
        assert_eq!(a.sum(), 7.0);
    }

    #[test]
    fn wavefront_runs_each_point_after_its_upper_left_neighbours() {
        // A 300 x 200 grid of "done" stamps: each point checks that its
        // neighbours above, to the left and diagonal were stamped first.
        let (n0, n1) = (300i64, 200i64);
        let done: Vec<AtomicUsize> = (0..n0 * n1).map(|_| AtomicUsize::new(0)).collect();
        let count = AtomicUsize::new(0);
        let result = wavefront((0, n0), (0, n1), |i, j| {
            for (di, dj) in [(1, 0), (0, 1), (1, 1)] {
                let (pi, pj) = (i - di, j - dj);
                if pi >= 0 && pj >= 0 && done[(pi * n1 + pj) as usize].load(Ordering::SeqCst) == 0 {
                    return Err(Error::Assert {
                        function: "t".into(),
                        message: format!("({i}, {j}) before ({pi}, {pj})"),
                    });
                }
            }
            done[(i * n1 + j) as usize].store(1 + count.fetch_add(1, Ordering::SeqCst), Ordering::SeqCst);
            Ok(())
        });
        assert!(result.is_ok(), "{result:?}");
        assert_eq!(count.load(Ordering::SeqCst), (n0 * n1) as usize);
    }

    #[test]
    fn each_stops_at_the_first_error() {
        let seen = AtomicUsize::new(0);
        let r = each(0, 10, 0, |i| {
            seen.fetch_add(1, Ordering::SeqCst);
            if i == 3 {
                Err(Error::Assert { function: "t".into(), message: "stop".into() })
            } else {
                Ok(())
            }
        });
        assert!(r.is_err());
        assert_eq!(seen.load(Ordering::SeqCst), 4);
    }
}
