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
        let shape = Self::shape_of(array.shape(), array.is_standard_layout());
        Store { ptr: array.as_mut_ptr(), shape, _array: PhantomData }
    }

    /// A store over `shape`'s elements in standard layout at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` points at `shape`'s product of elements, initialized, that
    /// nothing else reads or writes while the store (or a copy) is used,
    /// for `'a`.
    pub unsafe fn from_raw(ptr: *mut T, shape: [usize; N]) -> Store<'a, T, N> {
        Store { ptr, shape, _array: PhantomData }
    }

    /// [`Store::new`] over an uninitialized array (a recurrence's window
    /// from the buffer pool): the generated code writes or clears every
    /// point of a slot before anything reads it, and every slot before the
    /// array is taken as initialized.
    pub fn new_uninit<D: Dimension>(array: &'a mut Array<std::mem::MaybeUninit<T>, D>) -> Store<'a, T, N> {
        let shape = Self::shape_of(array.shape(), array.is_standard_layout());
        Store { ptr: array.as_mut_ptr().cast::<T>(), shape, _array: PhantomData }
    }

    /// The store's shape for an array of `shape`: none (no elements) unless
    /// it has rank `N` and standard layout.
    fn shape_of(shape: &[usize], standard: bool) -> [usize; N] {
        let mut out = [0usize; N];
        if shape.len() == N && standard {
            out.copy_from_slice(shape);
        }
        out
    }

    /// The array's shape (all zeros for a store of no elements).
    pub fn shape(&self) -> [usize; N] {
        self.shape
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

    /// Zeroes the points of the slab at position `at` of `axis` outside
    /// the box `lo..hi` (per axis; `axis`'s own entries are ignored, and
    /// the box is clipped to the shape): a slot about to be written by one
    /// clause at its first use, whose other points must read as zero.
    ///
    /// # Safety
    /// As [`Store::clear_slab`].
    pub unsafe fn clear_outside(&self, axis: usize, at: usize, lo: [usize; N], hi: [usize; N]) {
        let Some(last) = N.checked_sub(1) else { return };
        let mut lo = lo;
        let mut hi = hi;
        for k in 0..N {
            hi[k] = hi[k].min(self.shape[k]);
            lo[k] = lo[k].min(hi[k]);
        }
        (lo[axis], hi[axis]) = (0, self.shape[axis]);
        // Lines along the last axis (single points when the slab's axis is
        // the last): a line outside the box is zeroed whole, a line in it
        // at its two ends.
        let (before, (len, keep)) =
            if axis == last { (N, (1, 0..1)) } else { (last, (self.shape[last], lo[last]..hi[last])) };
        let lines: usize = (0..before).filter(|&k| k != axis).map(|k| self.shape[k]).product();
        let mut idx = [0usize; N];
        for line in 0..lines {
            let mut rest = line;
            for k in (0..before).rev() {
                if k == axis {
                    idx[k] = at;
                } else {
                    idx[k] = rest % self.shape[k];
                    rest /= self.shape[k];
                }
            }
            let run = std::slice::from_raw_parts_mut(self.ptr.add(self.offset(idx)), len);
            if (0..last).any(|k| idx[k] < lo[k] || idx[k] >= hi[k]) {
                run.fill(T::default());
            } else {
                run[..keep.start].fill(T::default());
                run[keep.end..].fill(T::default());
            }
        }
    }
}

/// Runs `body(i)` for `i` in `start..end`, in parallel (rayon) when `work`
/// (estimated scalar operations of the whole loop) is above
/// [`crate::par::parallel_work`]. Stops at the first error.
#[inline]
pub fn each<F>(start: i64, end: i64, work: usize, body: F) -> Result<(), Error>
where
    F: Fn(i64) -> Result<(), Error> + Sync + Send,
{
    if end <= start {
        return Ok(());
    }
    if work >= crate::par::parallel_work() && end - start > 1 {
        crate::par::try_each((start..end).into_par_iter(), body)
    } else {
        (start..end).try_for_each(body)
    }
}

/// Runs `body(lo, hi)` over blocks `lo..hi` of `block` lines covering
/// `0..lines`, in parallel (rayon) when `work_per_line * lines` is above
/// [`crate::par::parallel_work`]: the lines of a recurrence that each run
/// their steps alone (see einlang-core's `codegen/rust/lines.rs`). Stops at
/// the first error.
#[inline]
pub fn line_blocks<F>(lines: i64, block: usize, work_per_line: usize, body: F) -> Result<(), Error>
where
    F: Fn(i64, i64) -> Result<(), Error> + Sync + Send,
{
    if lines <= 0 {
        return Ok(());
    }
    let block = block.max(1) as i64;
    let blocks = (lines + block - 1) / block;
    let run = |b: i64| body(b * block, ((b + 1) * block).min(lines));
    let work = work_per_line.saturating_mul(lines as usize);
    if work >= crate::par::parallel_work() && blocks > 1 {
        crate::par::try_each((0..blocks).into_par_iter(), run)
    } else {
        (0..blocks).try_for_each(run)
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
    if parallel && work >= crate::par::parallel_work() && out.len() > crate::par::BLOCK_LEN / 8 {
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

/// Columns of a wavefront's tile: reads look back at most [`TILE`], so a
/// tile may be wider than its band is tall; wider tiles hand longer runs
/// of a row to the generated code and wait less often, and rows in lanes
/// (see [`skewed`]) spend less of a tile on the triangles at its ends.
const WIDTH: i64 = 16 * TILE;

/// Whether a two-axis recurrence of `rows x cols` points should run as a
/// wavefront: only when several threads can work on it and there are
/// enough tiles to keep them busy.
pub fn use_wavefront(rows: i64, cols: i64) -> bool {
    rayon::current_num_threads() > 1 && rows >= 4 * TILE && cols >= 4 * TILE
}

/// Window slots a recurrence with a window along its outer axis keeps when
/// it runs as a wavefront (see [`wavefront_banded`]).
pub const WAVE_SLOTS: usize = 512;

/// Bands (of [`TILE`] steps of the outer axis) in flight at once in a
/// windowed wavefront: those being computed and the one they read all fit
/// in [`WAVE_SLOTS`], with a band to spare for the look-back.
const WINDOWED_WORKERS: usize = WAVE_SLOTS / TILE as usize - 2;

/// Runs every point of `r0 x r1` such that each point runs after every
/// point with smaller-or-equal `i` and `j` (other than itself), a tile at a
/// time: `band(i_lo, i_hi, j_lo, j_hi)` runs the points of rows
/// `i_lo..i_hi` and columns `j_lo..j_hi` in an order that keeps those
/// dependences (row by row, or rows in lanes: see [`skewed`]). Stops at
/// the first error. See [`wavefront_banded`].
pub fn wavefront<F>(r0: (i64, i64), r1: (i64, i64), band: F) -> Result<(), Error>
where
    F: Fn(i64, i64, i64, i64) -> Result<(), Error> + Sync + Send,
{
    pipeline(r0, r1, usize::MAX, &|_| Ok(()), &band)
}

/// [`wavefront`] over a recurrence that keeps only a window of at least
/// [`WAVE_SLOTS`] slots of its outer axis; `prepare(i)` runs (on the
/// band's thread) before any point of step `i` (to clear the step's slot).
///
/// The outer axis is cut into bands of [`TILE`] steps, taken in order by
/// at most `WAVE_SLOTS / TILE - 2` workers. A worker runs its band tile by
/// tile (`WIDTH` columns each), and starts a tile only when the band above
/// has finished the tiles up to the one above it (reads look back at most
/// `TILE` along each axis). So a band runs only while the bands before it
/// are finished or running, and at most `workers + 1` bands are read or
/// written at once: they fit in the window with a band to spare (a band's
/// look-back), so no slot is overwritten while it may still be read.
pub fn wavefront_banded<P, F>(r0: (i64, i64), r1: (i64, i64), prepare: P, band: F) -> Result<(), Error>
where
    P: Fn(i64) -> Result<(), Error> + Sync + Send,
    F: Fn(i64, i64, i64, i64) -> Result<(), Error> + Sync + Send,
{
    pipeline(r0, r1, WINDOWED_WORKERS, &prepare, &band)
}

/// The same points as [`wavefront`], on this thread: groups of `group`
/// rows (the last may be shorter) over all of `r1`, in order, with
/// `prepare(i)` run for every row of a group before it starts. A window
/// of more than `group` plus the look-back slots is enough.
pub fn bands<P, F>(r0: (i64, i64), r1: (i64, i64), group: i64, prepare: P, band: F) -> Result<(), Error>
where
    P: Fn(i64) -> Result<(), Error>,
    F: Fn(i64, i64, i64, i64) -> Result<(), Error>,
{
    let mut lo = r0.0;
    while lo < r0.1 {
        let hi = lo.saturating_add(group.max(1)).min(r0.1);
        (lo..hi).try_for_each(&prepare)?;
        band(lo, hi, r1.0, r1.1)?;
        lo = hi;
    }
    Ok(())
}

/// The points of rows `i0..i0 + lanes` and columns `cols.0..cols.1` of a
/// two-axis recurrence whose reads look back along both axes, with the
/// columns `main.0..main.1` (inside `cols`) computed in lanes: at step `s`,
/// lane `r` computes the point `(i0 + r, s - r)`. The points a lane reads
/// from the lanes (one row up, one column left, or both, and further) were
/// computed at earlier steps, so each step's lanes are independent (SIMD),
/// and the dependence along a row is spread over `lanes` points.
///
/// - `row(i, lo, hi)` runs the points `(i, lo..hi)` in order: first the
///   start of every row, up to where its lane begins (a triangle), then
///   after the lanes the rest of every row;
/// - `steps(s0, s1)` runs the steps `s0..s1`, when there are any: lane `r`
///   covers the columns `s0 - r..s1 - r`, all inside `main`.
///
/// Every point runs once, after the points above and to the left of it.
pub fn skewed<R, S>(lanes: i64, i0: i64, cols: (i64, i64), main: (i64, i64), row: &R, steps: S) -> Result<(), Error>
where
    R: Fn(i64, i64, i64) -> Result<(), Error>,
    S: FnOnce(i64, i64) -> Result<(), Error>,
{
    let s0 = main.0 + lanes - 1;
    let s1 = main.1.max(s0);
    for r in 0..lanes {
        row(i0 + r, cols.0, (s0 - r).min(cols.1))?;
    }
    if s1 > s0 {
        steps(s0, s1)?;
    }
    for r in 0..lanes {
        row(i0 + r, (s1 - r).max(cols.0), cols.1)?;
    }
    Ok(())
}

/// The pipelined band wavefront of [`wavefront_banded`], with at most
/// `max_workers` workers.
#[inline]
fn pipeline<P, F>(r0: (i64, i64), r1: (i64, i64), max_workers: usize, prepare: &P, tile: &F) -> Result<(), Error>
where
    P: Fn(i64) -> Result<(), Error> + Sync,
    F: Fn(i64, i64, i64, i64) -> Result<(), Error> + Sync,
{
    use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
    use std::sync::Mutex;

    let (n0, n1) = (r0.1 - r0.0, r1.1 - r1.0);
    if n0 <= 0 || n1 <= 0 {
        return Ok(());
    }
    let (bands, tiles) = (((n0 + TILE - 1) / TILE) as usize, (n1 + WIDTH - 1) / WIDTH);
    // Tiles finished by each band (a band finished entirely has `tiles`).
    let done: Vec<AtomicI64> = (0..bands).map(|_| AtomicI64::new(0)).collect();
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let first_error: Mutex<Option<Error>> = Mutex::new(None);
    let fail = |e: Error| {
        failed.store(true, Ordering::Release);
        if let Ok(mut slot) = first_error.lock() {
            slot.get_or_insert(e);
        }
    };
    let run_band = |band: usize| -> Result<(), Error> {
        let i_lo = r0.0 + band as i64 * TILE;
        let i_hi = (i_lo + TILE).min(r0.1);
        for i in i_lo..i_hi {
            prepare(i)?;
        }
        for t in 0..tiles {
            if band > 0 {
                // Reads look back, at most a tile: the band above's
                // tiles up to this one.
                let need = t + 1;
                let mut spins = 0u32;
                while done[band - 1].load(Ordering::Acquire) < need {
                    if failed.load(Ordering::Acquire) {
                        return Ok(());
                    }
                    spins += 1;
                    if spins < 64 {
                        std::hint::spin_loop();
                    } else {
                        std::thread::yield_now();
                    }
                }
            }
            let j_lo = r1.0 + t * WIDTH;
            let j_hi = (j_lo + WIDTH).min(r1.1);
            tile(i_lo, i_hi, j_lo, j_hi)?;
            done[band].store(t + 1, Ordering::Release);
        }
        Ok(())
    };
    let worker = || loop {
        if failed.load(Ordering::Acquire) {
            return;
        }
        let band = next.fetch_add(1, Ordering::AcqRel);
        if band >= bands {
            return;
        }
        if let Err(e) = run_band(band) {
            fail(e);
            return;
        }
    };
    // Workers are threads of their own, not rayon jobs: a rayon thread
    // waiting inside `body` (a parallel loop of a clause) may run any
    // queued job, and a band started there would wait on the band below
    // it in the same thread's stack.
    let workers = rayon::current_num_threads().min(max_workers).min(bands).max(1);
    std::thread::scope(|s| {
        for _ in 1..workers {
            s.spawn(worker);
        }
        worker();
    });
    match first_error.into_inner() {
        Ok(Some(e)) => Err(e),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};

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
    fn clearing_outside_a_box_zeroes_exactly_the_rest_of_the_slab() {
        // A window of 2 slots of 4 x 5 points: slot 1 keeps rows 1..3,
        // columns 1..4 (a stencil's interior), slot 0 is untouched.
        let mut a = Array::<f64, _>::ones((2, 4, 5));
        let s = Store::<f64, 3>::new(&mut a);
        unsafe { s.clear_outside(0, 1, [9, 1, 1], [9, 3, 4]) };
        for ((t, i, j), &v) in a.indexed_iter() {
            let kept = t == 0 || ((1..3).contains(&i) && (1..4).contains(&j));
            assert_eq!(v, if kept { 1.0 } else { 0.0 }, "({t}, {i}, {j})");
        }
        // The window on the last axis: one point per row; a box past the
        // shape is clipped.
        let mut b = Array::<i32, _>::ones((3, 4));
        let s = Store::<i32, 2>::new(&mut b);
        unsafe { s.clear_outside(1, 2, [1, 0], [2, 0]) };
        unsafe { s.clear_outside(1, 3, [0, 0], [7, 0]) };
        let want = ndarray::array![[1, 1, 0, 1], [1, 1, 1, 1], [1, 1, 0, 1]];
        assert_eq!(b, want);
    }

    #[test]
    fn wavefront_runs_each_point_after_its_upper_left_neighbours() {
        // A 300 x 200 grid of "done" stamps: each point checks that its
        // neighbours above, to the left and diagonal were stamped first.
        let (n0, n1) = (300i64, 200i64);
        let done: Vec<AtomicUsize> = (0..n0 * n1).map(|_| AtomicUsize::new(0)).collect();
        let count = AtomicUsize::new(0);
        let point = |i: i64, j: i64| -> Result<(), Error> {
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
        };
        let result = wavefront((0, n0), (0, n1), |i_lo, i_hi, lo, hi| {
            (i_lo..i_hi).try_for_each(|i| (lo..hi).try_for_each(|j| point(i, j)))
        });
        assert!(result.is_ok(), "{result:?}");
        assert_eq!(count.load(Ordering::SeqCst), (n0 * n1) as usize);
    }

    #[test]
    fn rows_in_lanes_run_every_point_once_after_its_upper_left_neighbours() {
        // Groups of 8 rows in lanes over several column ranges (none, at
        // either end, in the middle, all), the leftover rows one by one;
        // each point checks the points up to two rows up and two columns
        // left were stamped first, and is stamped once.
        let (n0, n1) = (37i64, 50i64);
        for main in [(0, 0), (0, 50), (0, 20), (30, 50), (10, 40), (5, 12), (20, 21)] {
            let done: Vec<AtomicUsize> = (0..n0 * n1).map(|_| AtomicUsize::new(0)).collect();
            let point = |i: i64, j: i64| -> Result<(), Error> {
                for (di, dj) in [(1, 0), (0, 1), (1, 1), (2, 0), (0, 2), (2, 1), (1, 2)] {
                    let (pi, pj) = (i - di, j - dj);
                    if pi >= 0 && pj >= 0 && done[(pi * n1 + pj) as usize].load(Ordering::SeqCst) == 0 {
                        return Err(Error::Assert {
                            function: "t".into(),
                            message: format!("{main:?}: ({i}, {j}) before ({pi}, {pj})"),
                        });
                    }
                }
                if done[(i * n1 + j) as usize].fetch_add(1, Ordering::SeqCst) != 0 {
                    return Err(Error::Assert { function: "t".into(), message: format!("({i}, {j}) twice") });
                }
                Ok(())
            };
            let row = |i: i64, lo: i64, hi: i64| (lo..hi).try_for_each(|j| point(i, j));
            let prepared = AtomicUsize::new(0);
            let result = bands(
                (0, n0),
                (0, n1),
                8,
                |_| {
                    prepared.fetch_add(1, Ordering::SeqCst);
                    Ok(())
                },
                |i_lo, i_hi, lo, hi| {
                    if i_hi - i_lo < 8 {
                        return (i_lo..i_hi).try_for_each(|i| row(i, lo, hi));
                    }
                    skewed(8, i_lo, (lo, hi), main, &row, |s0, s1| {
                        assert!(s0 - 7 >= main.0 && s1 <= main.1, "{main:?}: steps {s0}..{s1}");
                        (s0..s1).try_for_each(|s| (0..8).try_for_each(|r| point(i_lo + r, s - r)))
                    })
                },
            );
            assert!(result.is_ok(), "{result:?}");
            assert!(done.iter().all(|d| d.load(Ordering::SeqCst) == 1), "{main:?}");
            assert_eq!(prepared.load(Ordering::SeqCst), n0 as usize);
        }
    }

    #[test]
    fn a_windowed_wavefront_never_overwrites_a_slot_still_read() {
        // Each point stamps its slot with its step and reads the slots of
        // the furthest look-back (a tile up, a tile left, both): they must
        // hold exactly those steps, never a later one sharing the slot.
        // Eight threads, so the workers are capped by the window.
        let (n0, n1) = (2000i64, 300i64);
        let slots = WAVE_SLOTS as i64;
        let stamp: Vec<AtomicI64> = (0..slots * n1).map(|_| AtomicI64::new(-1)).collect();
        let at = |i: i64, j: i64| &stamp[((i % slots) * n1 + j) as usize];
        let point = |i: i64, j: i64| -> Result<(), Error> {
            if at(i, j).load(Ordering::SeqCst) != -1 {
                return Err(Error::Assert { function: "t".into(), message: format!("({i}, {j}) not prepared") });
            }
            for (di, dj) in [(1, 0), (0, 1), (1, 1), (TILE, 0), (0, TILE), (TILE, TILE)] {
                let (pi, pj) = (i - di, j - dj);
                if pi >= 0 && pj >= 0 && at(pi, pj).load(Ordering::SeqCst) != pi {
                    return Err(Error::Assert {
                        function: "t".into(),
                        message: format!("({i}, {j}) read ({pi}, {pj}): {}", at(pi, pj).load(Ordering::SeqCst)),
                    });
                }
            }
            at(i, j).store(i, Ordering::SeqCst);
            Ok(())
        };
        let pool = rayon::ThreadPoolBuilder::new().num_threads(8).build().unwrap();
        let result = pool.install(|| {
            wavefront_banded(
                (0, n0),
                (0, n1),
                |i| {
                    for j in 0..n1 {
                        at(i, j).store(-1, Ordering::SeqCst);
                    }
                    Ok(())
                },
                |i_lo, i_hi, lo, hi| (i_lo..i_hi).try_for_each(|i| (lo..hi).try_for_each(|j| point(i, j))),
            )
        });
        assert!(result.is_ok(), "{result:?}");
        assert_eq!(at(n0 - 1, n1 - 1).load(Ordering::SeqCst), n0 - 1);
    }

    #[test]
    fn a_wavefront_stops_at_the_first_error() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(4).build().unwrap();
        let seen = AtomicUsize::new(0);
        let r = pool.install(|| {
            wavefront((0, 1000), (0, 500), |i_lo, i_hi, lo, hi| {
                (i_lo..i_hi).flat_map(|i| (lo..hi).map(move |j| (i, j))).try_for_each(|(i, j)| {
                    seen.fetch_add(1, Ordering::SeqCst);
                    if (i, j) == (300, 200) {
                        Err(Error::Assert { function: "t".into(), message: "stop".into() })
                    } else {
                        Ok(())
                    }
                })
            })
        });
        assert!(matches!(r, Err(Error::Assert { .. })), "{r:?}");
        assert!(seen.load(Ordering::SeqCst) < 1000 * 500);
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
