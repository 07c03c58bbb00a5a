//! Parallel loops over the rows of an output buffer.

use crate::Error;
use std::mem::MaybeUninit;

use ndarray::{Array, Array1, Dimension, IntoDimension};
use rayon::prelude::*;

/// A raw pointer that parallel tasks share, each writing elements no
/// other task touches (a convolution's output runs, the sums of a
/// definition's rows written as the rows are: generated code).
#[doc(hidden)]
#[derive(Clone, Copy)]
pub struct Shared<T>(pub *mut T);
// SAFETY: the tasks write disjoint elements of a buffer that outlives them.
unsafe impl<T: Send> Send for Shared<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for Shared<T> {}

impl<T> Shared<T> {
    /// Writes `v` to the element `at` elements from the first.
    ///
    /// # Safety
    ///
    /// `at` addresses an element of the buffer, which no other task
    /// accesses meanwhile.
    #[inline(always)]
    pub unsafe fn write(self, at: usize, v: T) {
        unsafe { self.0.add(at).write(v) }
    }
}

/// Below this many scalar operations (`ir::cost`'s estimate times the
/// points) a loop nest runs on the calling thread by default: splitting
/// smaller work across threads costs more than it saves. Rayon's fork and
/// join from a caller outside the pool took 15-25 us on the 2-core
/// virtual machines this project is measured on (the workers' wake-up and
/// the caller's), where an 8192-element `x * 1.5` takes 1 us on the
/// calling thread: into a buffer, 8192 `tanh` took 22 us on two threads
/// and 3.5 on one, 32768 30 and 12, 65536 (about this many operations)
/// 24-26 both ways, and only larger ones gain (AVX-512 Xeon; the bar was
/// 2^15 before).
pub const DEFAULT_PARALLEL_WORK: usize = 1 << 20;

/// What [`parallel_work`] returns until [`set_parallel_work`] or the
/// environment sets it.
const UNSET: usize = usize::MAX;

static PARALLEL_WORK: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(UNSET);

/// Sets, for the whole process, the fewest scalar operations a loop nest
/// splits across threads for (at least 1). The default is
/// [`DEFAULT_PARALLEL_WORK`], or `EINLANG_PAR_WORK` from the environment
/// when it is set. Only the speed depends on it: every split gives the
/// bits of the calling thread alone.
pub fn set_parallel_work(ops: usize) {
    PARALLEL_WORK.store(bar(ops), std::sync::atomic::Ordering::Relaxed);
}

/// `ops` as a bar: at least 1, never [`UNSET`].
fn bar(ops: usize) -> usize {
    ops.clamp(1, UNSET - 1)
}

/// The fewest scalar operations a loop nest splits across threads for
/// ([`set_parallel_work`]).
#[inline]
pub fn parallel_work() -> usize {
    use std::sync::atomic::Ordering;
    match PARALLEL_WORK.load(Ordering::Relaxed) {
        UNSET => {
            let ops = std::env::var("EINLANG_PAR_WORK")
                .ok()
                .and_then(|v| v.trim().parse::<usize>().ok())
                .map_or(DEFAULT_PARALLEL_WORK, bar);
            // (A concurrent `set_parallel_work` wins over the environment.)
            let _ = PARALLEL_WORK.compare_exchange(UNSET, ops, Ordering::Relaxed, Ordering::Relaxed);
            PARALLEL_WORK.load(Ordering::Relaxed)
        }
        ops => ops,
    }
}

thread_local! {
    static IN_ROWS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Marks the current thread as running a row of a parallel loop until
/// dropped (restoring what it was: rows nest).
struct InRows(bool);

impl InRows {
    fn enter() -> InRows {
        InRows(IN_ROWS.with(|c| c.replace(true)))
    }
}

impl Drop for InRows {
    fn drop(&mut self) {
        IN_ROWS.with(|c| c.set(self.0));
    }
}

/// Whether this thread is running a row of a parallel [`for_each_row`]: a
/// matrix product there (one per row of a definition) runs on this thread
/// alone, since the other rows keep the other threads busy.
pub(crate) fn in_parallel_rows() -> bool {
    IN_ROWS.with(|c| c.get())
}

/// `f` on every item of `items` in parallel until one fails: that error
/// (the first recorded, when several fail at once). Items after a failure
/// are skipped. Rayon's own `try_for_each` cost about 25 ns an item more
/// than `for_each` (a softmax of 16384 rows of 256 on one thread: 2.38 ms
/// against 1.97 for the same row kernel), as much as a fifth of a short
/// row's time.
pub(crate) fn try_each<I, F>(items: I, f: F) -> Result<(), Error>
where
    I: ParallelIterator,
    F: Fn(I::Item) -> Result<(), Error> + Sync + Send,
{
    use std::sync::atomic::{AtomicBool, Ordering};
    let failed = AtomicBool::new(false);
    let first = std::sync::Mutex::new(None);
    items.for_each(|item| {
        if failed.load(Ordering::Relaxed) {
            return;
        }
        if let Err(e) = f(item) {
            failed.store(true, Ordering::Relaxed);
            if let Ok(mut first) = first.lock() {
                first.get_or_insert(e);
            }
        }
    });
    match first.into_inner() {
        Ok(Some(e)) => Err(e),
        Ok(None) => Ok(()),
        // A task panicked while holding the lock (the panic itself goes on
        // to the caller through rayon); the error it held is still there.
        Err(poisoned) => poisoned.into_inner().map_or(Ok(()), Err),
    }
}

/// Runs `body(row, chunk)` for every `row_len`-sized chunk of `out`, in
/// parallel when `work` (an estimate of scalar operations in the whole nest)
/// is above [`parallel_work`]. Stops at the first error.
pub fn for_each_row<T, F>(out: &mut [T], row_len: usize, work: usize, body: F) -> Result<(), Error>
where
    T: Send,
    F: Fn(usize, &mut [T]) -> Result<(), Error> + Sync + Send,
{
    if row_len == 0 || out.is_empty() {
        return Ok(());
    }
    if work >= parallel_work() && out.len() / row_len > 1 {
        try_each(out.par_chunks_mut(row_len).enumerate(), |(row, chunk)| {
            let _rows = InRows::enter();
            body(row, chunk)
        })
    } else {
        out.chunks_mut(row_len).enumerate().try_for_each(|(row, chunk)| body(row, chunk))
    }
}

/// The most elements of a rank-1 output one call of a [`fill`] body writes
/// when the fill runs in parallel: large enough that the body's inner loop
/// vectorizes and amortizes the call, small enough to split a long vector
/// across threads.
pub const BLOCK_LEN: usize = 4096;

/// A parallel rank-1 fill is cut into at least this many blocks (when it has
/// that many elements), so that expensive points still spread over threads.
const MIN_BLOCKS: usize = 64;

/// Allocates a tensor of `shape` in standard (row-major) layout and fills it
/// by calling `body(first, chunk)` on consecutive chunks of its elements, in
/// in parallel when the work estimate (`elements * cost_per_point`) is
/// above [`parallel_work`].
///
/// For rank 2 and more, each chunk is one index of the outermost axis (a
/// "row" holding all inner axes) and `first` is that index. For rank 1, a
/// chunk is a block of consecutive elements and `first` is the index of its
/// first element: the whole vector when the fill runs on one thread, else
/// blocks of at most [`BLOCK_LEN`] elements, at least `MIN_BLOCKS` of them.
/// For rank 0, the body is called once with `first = 0` and the single
/// element.
///
/// `body` is called only with non-empty chunks, so every inner axis length
/// is at least 1 inside it. A shape whose size overflows `isize` (in bytes)
/// is an `Error::Extent`, not a panic. Stops at the first error.
pub fn fill<T, D, Sh, F>(function: &str, shape: Sh, cost_per_point: u64, body: F) -> Result<Array<T, D>, Error>
where
    T: Clone + Default + Send + 'static,
    D: Dimension,
    Sh: IntoDimension<Dim = D>,
    F: Fn(usize, &mut [T]) -> Result<(), Error> + Sync + Send,
{
    let dim = shape.into_dimension();
    check_size::<T, D>(function, &dim)?;
    let mut out = filled(function, dim, T::default())?;
    fill_chunks(function, &mut out, cost_per_point, 1, body)?;
    Ok(out)
}

/// The fewest elements a block of [`fill_reduced`] has when it cuts the
/// vector into strips (when the vector has that many): one pass of its
/// body over the block reads a run of at least this many consecutive
/// elements of every operand it walks along.
pub const STRIP_LEN: usize = 256;

/// The longest vector whose reduction [`fill_reduced`] splits (each part
/// accumulates into a vector of its own).
pub const SPLIT_MAX_LEN: usize = 1 << 14;

/// About how much work (scalar operations) one part of a large split
/// reduction does (more, shorter parts measured slower: each is a task,
/// and a vector's part has a vector of its own to merge).
pub const PART_WORK: usize = 1 << 20;

/// A split reduction has at least this many parts (when its work is that
/// many times [`parallel_work`]), so that one of less than
/// `MIN_PARTS * PART_WORK` still spreads over threads.
const MIN_PARTS: usize = 4;

/// The most parts [`fill_reduced`] splits a reduction into.
const MAX_VECTOR_PARTS: usize = 64;

/// How many parts a split reduction of `terms` terms and `work` in all is
/// cut into: about [`PART_WORK`] each, at least [`MIN_PARTS`] when the
/// work allows, at most `max` and `terms`. It depends only on the sizes.
fn part_count(work: usize, terms: usize, max: usize) -> usize {
    (work / PART_WORK).max((work / parallel_work()).min(MIN_PARTS)).clamp(1, max).min(terms.max(1))
}

/// The bounds of part `p` of `parts` equal parts of `lo..hi`, which has
/// `terms` terms (its length, saturated at `i64::MAX`: the last part
/// ends at `hi` even then).
fn part_bounds((lo, hi): (i64, i64), terms: usize, parts: usize, p: usize) -> (i64, i64) {
    // In u128: no overflow.
    let at = |p: usize| if p >= parts { hi } else { lo + ((terms as u128 * p as u128) / parts as u128) as i64 };
    (at(p), at(p + 1))
}

/// Whether the parts of a split reduction run on several threads: there
/// are several, and this is not a row of a parallel loop (whose siblings
/// keep them busy).
fn parts_in_parallel() -> bool {
    rayon::current_num_threads() > 1 && !in_parallel_rows()
}

/// A rank-1 tensor of `len` elements that accumulates the terms of a
/// reduction pass by pass (`y[j] = sum[k](v[k] * a[k, j])` with the
/// reduction's loops outside the element's loop, so each pass walks the
/// operands' rows): every element starts at `start`, then
/// `body(first, lo, hi, block)` accumulates the terms of the outermost
/// reduction loop from `lo` to `hi` into the elements from `first` on, and
/// `finish(first, block)` applies what comes after the reduction. One
/// term of the outer loop costs about `work_per_term` scalar operations
/// per element.
///
/// With the work above [`parallel_work`], either
/// - the reduction is split, when the vector is at most [`SPLIT_MAX_LEN`]
///   elements long: the outer loop's range is cut into equal parts
///   (`part_count`, at most 64), each accumulated into a vector of its
///   own, in parallel, and merged in order with `merge(&mut earlier,
///   later)`. The parts depend only on the sizes, so the result (a
///   reassociation of the reduction) is the same on any number of
///   threads; or
/// - the vector is cut into blocks as wide as the threads allow (two per
///   thread, at least [`STRIP_LEN`] elements), where blocks of a few
///   elements would walk the operands a cache line per row.
///
/// Stops at the first error.
#[allow(clippy::too_many_arguments)]
pub fn fill_reduced<T, F, M, E>(
    function: &str,
    len: usize,
    (lo, hi): (i64, i64),
    work_per_term: usize,
    start: T,
    body: F,
    merge: M,
    finish: E,
) -> Result<Array1<T>, Error>
where
    T: Copy + Send + Sync + 'static,
    F: Fn(usize, i64, i64, &mut [T]) -> Result<(), Error> + Sync + Send,
    M: Fn(&mut T, T),
    E: Fn(usize, &mut [T]) -> Result<(), Error> + Sync + Send,
{
    let dim = ndarray::Ix1(len);
    check_size::<T, ndarray::Ix1>(function, &dim)?;
    let mut out = filled(function, dim, start)?;
    let terms = usize::try_from(hi.saturating_sub(lo)).unwrap_or(0);
    let work = len.saturating_mul(terms).saturating_mul(work_per_term.max(1));
    let slice = new_slice(function, &mut out)?;
    let parts = part_count(work, terms, MAX_VECTOR_PARTS);
    if work >= parallel_work() && len <= SPLIT_MAX_LEN && parts > 1 {
        let one = |p: usize| -> Result<Array1<T>, Error> {
            let (a, b) = part_bounds((lo, hi), terms, parts, p);
            let mut part = filled(function, dim, start)?;
            body(0, a, b, new_slice(function, &mut part)?)?;
            Ok(part)
        };
        let mut add = |part: Array1<T>| {
            slice.iter_mut().zip(part.iter()).for_each(|(acc, &v)| merge(acc, v));
            crate::pool::recycle(part);
        };
        if parts_in_parallel() {
            // One row of a pooled scratch tensor per part; the error of
            // the first part that fails, as in order.
            let mut scratch = filled(function, ndarray::Ix2(parts, len), start)?;
            let first_error: std::sync::Mutex<Option<(usize, Error)>> = std::sync::Mutex::new(None);
            new_slice(function, &mut scratch)?.par_chunks_mut(len.max(1)).enumerate().for_each(|(p, row)| {
                let _rows = InRows::enter();
                let (a, b) = part_bounds((lo, hi), terms, parts, p);
                if let Err(e) = body(0, a, b, row) {
                    if let Ok(mut first) = first_error.lock() {
                        if first.as_ref().is_none_or(|(q, _)| p < *q) {
                            *first = Some((p, e));
                        }
                    }
                }
            });
            if let Some((_, e)) = first_error.into_inner().ok().flatten() {
                crate::pool::recycle(scratch);
                return Err(e);
            }
            for part in scratch.rows() {
                slice.iter_mut().zip(part.iter()).for_each(|(acc, &v)| merge(acc, v));
            }
            crate::pool::recycle(scratch);
        } else {
            for p in 0..parts {
                add(one(p)?);
            }
        }
        finish(0, slice)?;
        return Ok(out);
    }
    let parallel = work >= parallel_work() && parts_in_parallel();
    let strip = if parallel { len.div_ceil(2 * rayon::current_num_threads()).max(STRIP_LEN) } else { len };
    for_each_row(slice, strip.max(1), if parallel { work } else { 0 }, |block, chunk| {
        body(block * strip, lo, hi, chunk)?;
        finish(block * strip, chunk)
    })?;
    Ok(out)
}

/// A scalar reduction over `lo..hi` (its outermost loop), each term about
/// `work_per_term` scalar operations: `part(from, to)` reduces the terms
/// from `from` to `to`. When the work is above [`parallel_work`], the range
/// is cut into equal parts (`part_count`), reduced in parallel
/// (unless this is a row of a parallel loop) and combined in order with
/// `merge(earlier, later)`. The parts depend only on the sizes, so the
/// result (a reassociation of the reduction, and a more accurate sum than
/// one long run of lanes) is the same on any number of threads. Stops at
/// the first error.
pub fn reduce<T, F, M>(lo: i64, hi: i64, work_per_term: usize, part: F, merge: M) -> Result<T, Error>
where
    T: Send,
    F: Fn(i64, i64) -> Result<T, Error> + Sync + Send,
    M: Fn(T, T) -> T,
{
    let terms = usize::try_from(hi.saturating_sub(lo)).unwrap_or(0);
    let work = terms.saturating_mul(work_per_term.max(1));
    let parts = part_count(work, terms, usize::MAX);
    if work < parallel_work() || parts == 1 {
        return part(lo, hi);
    }
    let one = |p: usize| {
        let (a, b) = part_bounds((lo, hi), terms, parts, p);
        part(a, b)
    };
    if parts_in_parallel() {
        let all: Vec<Result<T, Error>> = (0..parts)
            .into_par_iter()
            .map(|p| {
                let _rows = InRows::enter();
                one(p)
            })
            .collect();
        let mut all = all.into_iter();
        let mut acc = all.next().unwrap_or_else(|| one(0))?;
        for p in all {
            acc = merge(acc, p?);
        }
        Ok(acc)
    } else {
        let mut acc = one(0)?;
        for p in 1..parts {
            acc = merge(acc, one(p)?);
        }
        Ok(acc)
    }
}

/// [`fill`] without writing the elements first: the tensor is allocated
/// uninitialized and `body` must write every element of every chunk it is
/// given (with `MaybeUninit::write`) before it returns `Ok`. An `Err` from
/// `body` drops the partly written tensor without reading it.
///
/// # Safety
///
/// When `body` returns `Ok(())` for a chunk, it has initialized every
/// element of that chunk. (Code generation calls this only for
/// definitions whose loop nest assigns each element of its chunk once.)
pub unsafe fn fill_uninit<T, D, Sh, F>(
    function: &str,
    shape: Sh,
    cost_per_point: u64,
    body: F,
) -> Result<Array<T, D>, Error>
where
    T: Copy + Send + 'static,
    D: Dimension,
    Sh: IntoDimension<Dim = D>,
    F: Fn(usize, &mut [MaybeUninit<T>]) -> Result<(), Error> + Sync + Send,
{
    // SAFETY: the caller's promise, for chunks of one row.
    unsafe { fill_uninit_rows(function, shape, cost_per_point, 1, body) }
}

/// [`fill_uninit`] handing `rows` rows of the first axis to each call
/// (fewer in the last chunk; the whole tensor for rank 1, in blocks as
/// [`fill`] makes them): `body(first, chunk)` writes the rows from `first`
/// on. A definition that reads another tensor across its rows (a
/// transpose, `y[j, i] = x[i, j]`) walks a block of them at once, so each
/// line of the source it loads serves `rows` outputs.
///
/// # Safety
///
/// As for [`fill_uninit`]: when `body` returns `Ok(())` for a chunk, it has
/// initialized every element of that chunk.
pub unsafe fn fill_uninit_rows<T, D, Sh, F>(
    function: &str,
    shape: Sh,
    cost_per_point: u64,
    rows: usize,
    body: F,
) -> Result<Array<T, D>, Error>
where
    T: Copy + Send + 'static,
    D: Dimension,
    Sh: IntoDimension<Dim = D>,
    F: Fn(usize, &mut [MaybeUninit<T>]) -> Result<(), Error> + Sync + Send,
{
    let dim = shape.into_dimension();
    check_size::<T, D>(function, &dim)?;
    let mut out = crate::pool::try_uninit::<T, D>(function, "", dim)?;
    let shape = out.raw_dim();
    let elems = new_slice(function, &mut out)?;
    // SAFETY: the caller's promise.
    unsafe { fill_slice_uninit(elems, shape.slice(), cost_per_point, rows.max(1), body) }?;
    // SAFETY: `fill_slice_uninit` handed every element to `body` in
    // exactly one chunk and every call returned `Ok`, so by the caller's
    // promise every element is initialized.
    Ok(unsafe { out.assume_init() })
}

/// An `Error::Extent` unless a tensor of `dim` can be allocated: the limits
/// `Array::from_elem` would otherwise panic on (the product of the
/// non-zero axis lengths fits in `isize`, and so does the size in bytes).
pub(crate) fn check_size<T, D: Dimension>(function: &str, dim: &D) -> Result<(), Error> {
    let too_large = || Error::Extent {
        function: function.to_string(),
        message: format!("a tensor of shape {:?} is too large to allocate", dim.slice()),
    };
    let nonzero = dim.slice().iter().filter(|&&n| n != 0).try_fold(1usize, |acc, &n| acc.checked_mul(n));
    if nonzero.is_none_or(|n| n > isize::MAX as usize) {
        return Err(too_large());
    }
    let len = dim.size();
    if len.checked_mul(std::mem::size_of::<T>()).is_none_or(|bytes| bytes > isize::MAX as usize) {
        return Err(too_large());
    }
    Ok(())
}

/// Hands the elements of `out` (standard layout) to `body` in the chunks
/// [`fill`] describes, each element in exactly one chunk.
fn fill_chunks<E, D, F>(
    function: &str,
    out: &mut Array<E, D>,
    cost_per_point: u64,
    rows: usize,
    body: F,
) -> Result<(), Error>
where
    E: Send,
    D: Dimension,
    F: Fn(usize, &mut [E]) -> Result<(), Error> + Sync + Send,
{
    let shape = out.raw_dim();
    let slice = new_slice(function, out)?;
    fill_slice(slice, shape.slice(), cost_per_point, rows, body)
}

/// The work estimate of a fill of `len` elements at `cost_per_point`
/// operations each (saturating), which decides whether it runs in parallel.
pub(crate) fn work(len: usize, cost_per_point: u64) -> usize {
    len.saturating_mul(usize::try_from(cost_per_point).unwrap_or(usize::MAX))
}

/// [`fill_slice`] over elements the body initializes, streamed to memory
/// when the result outgrows the caches (see [`crate::stream`]).
///
/// # Safety
///
/// When `body` returns `Ok(())` for a chunk, it has initialized every
/// element of it, writing whole values only.
pub(crate) unsafe fn fill_slice_uninit<T, F>(
    elems: &mut [MaybeUninit<T>],
    shape: &[usize],
    cost_per_point: u64,
    rows: usize,
    body: F,
) -> Result<(), Error>
where
    T: Copy + Send,
    F: Fn(usize, &mut [MaybeUninit<T>]) -> Result<(), Error> + Sync + Send,
{
    if crate::stream::chosen(std::mem::size_of_val(elems), cost_per_point) {
        // SAFETY: the caller's promise.
        if let Some(outcome) = unsafe { crate::stream::staged(elems, shape, cost_per_point, rows, &body) } {
            return outcome;
        }
    }
    fill_slice(elems, shape, cost_per_point, rows, body)
}

/// [`fill_chunks`] over the elements of a tensor of `shape` in memory order
/// (`elems.len()` is the product of `shape`).
pub(crate) fn fill_slice<E, F>(
    elems: &mut [E],
    shape: &[usize],
    cost_per_point: u64,
    rows: usize,
    body: F,
) -> Result<(), Error>
where
    E: Send,
    F: Fn(usize, &mut [E]) -> Result<(), Error> + Sync + Send,
{
    let len = elems.len();
    let ndim = shape.len();
    if len == 0 {
        return Ok(());
    }
    let work = work(len, cost_per_point);
    // Every product of axis lengths fits now (none is zero, all fit in `len`).
    let row_len = match ndim {
        0 => 1,
        1 if work < parallel_work() => len,
        1 => len.div_ceil(MIN_BLOCKS).clamp(1, BLOCK_LEN),
        _ => shape[1..].iter().product(),
    };
    if ndim == 1 {
        for_each_row(elems, row_len, work, |block, chunk| body(block * row_len, chunk))
    } else if rows > 1 {
        for_each_row(elems, row_len.saturating_mul(rows), work, |block, chunk| body(block * rows, chunk))
    } else {
        for_each_row(elems, row_len, work, body)
    }
}

/// A tensor of shape `dim` from the [pool](crate::pool), every element
/// `value` (`Error::Alloc` when there is no memory for it).
fn filled<T: Clone + Send + 'static, D: Dimension>(function: &str, dim: D, value: T) -> Result<Array<T, D>, Error> {
    let mut out = crate::pool::try_uninit::<T, D>(function, "", dim)?;
    out.iter_mut().for_each(|e| {
        e.write(value.clone());
    });
    // SAFETY: every element was just written.
    Ok(unsafe { out.assume_init() })
}

/// The elements of a tensor this module allocated, in memory order.
fn new_slice<'a, E, D: Dimension>(function: &str, out: &'a mut Array<E, D>) -> Result<&'a mut [E], Error> {
    out.as_slice_mut().ok_or_else(|| Error::Extent {
        function: function.to_string(),
        message: "internal error in einlang: a new tensor is not contiguous".to_string(),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn rows_of_a_parallel_loop_know_they_are_inside_one() {
        assert!(!in_parallel_rows());
        let mut out = vec![false; 64];
        // Work above the threshold: the rows run in parallel.
        for_each_row(&mut out, 1, parallel_work(), |_, chunk| {
            chunk[0] = in_parallel_rows();
            Ok(())
        })
        .unwrap();
        assert!(out.iter().all(|&b| b));
        assert!(!in_parallel_rows());
        // A serial loop's rows are not.
        for_each_row(&mut out, 1, 0, |_, chunk| {
            chunk[0] = in_parallel_rows();
            Ok(())
        })
        .unwrap();
        assert!(out.iter().all(|&b| !b));
    }

    use super::*;

    #[test]
    fn the_bar_for_threads_is_at_least_one_operation() {
        // (Not through `set_parallel_work`: other tests of this binary
        // read the bar meanwhile, and one checks that a loop above it runs
        // in parallel.)
        assert_eq!(bar(0), 1);
        assert_eq!(bar(7), 7);
        assert_eq!(bar(usize::MAX), usize::MAX - 1);
        assert!(parallel_work() >= 1);
    }

    #[test]
    fn visits_every_row_in_both_modes() {
        for work in [0, parallel_work() * 2] {
            let mut out = vec![0usize; 12];
            for_each_row(&mut out, 4, work, |row, chunk| {
                for (j, v) in chunk.iter_mut().enumerate() {
                    *v = row * 10 + j;
                }
                Ok(())
            })
            .unwrap();
            assert_eq!(out, vec![0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23]);
        }
    }

    /// A failing row stops the loop with its error, in both modes; with
    /// several failing rows in parallel, the error is one of theirs.
    #[test]
    fn a_failing_row_returns_its_error() {
        let fail = |row: usize| Error::Extent { function: "f".into(), message: format!("row {row}") };
        for work in [0, parallel_work() * 2] {
            let mut out = vec![0u8; 4 * 1000];
            let got = for_each_row(&mut out, 4, work, |row, _| if row == 617 { Err(fail(row)) } else { Ok(()) });
            assert!(matches!(got, Err(Error::Extent { ref message, .. }) if message == "row 617"), "{got:?}");
            let got = for_each_row(&mut out, 4, work, |row, _| if row % 3 == 1 { Err(fail(row)) } else { Ok(()) });
            assert!(
                matches!(got, Err(Error::Extent { ref message, .. })
                    if message.strip_prefix("row ").and_then(|r| r.parse::<usize>().ok()).is_some_and(|r| r % 3 == 1)),
                "{got:?}"
            );
            assert!(for_each_row(&mut out, 4, work, |_, _| Ok(())).is_ok());
        }
    }

    #[test]
    fn fill_rank_2_by_rows() {
        let a = fill("f", [3, 2], 1, |i, row: &mut [usize]| {
            for (j, v) in row.iter_mut().enumerate() {
                *v = i * 10 + j;
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(a, ndarray::array![[0, 1], [10, 11], [20, 21]]);
    }

    #[test]
    fn fill_rank_1_by_blocks_and_rank_0() {
        let n = BLOCK_LEN * 2 + 3;
        let a = fill("f", [n], 1_000, |first, block: &mut [usize]| {
            for (p, v) in block.iter_mut().enumerate() {
                *v = first + p;
            }
            Ok(())
        })
        .unwrap();
        assert!(a.iter().enumerate().all(|(i, v)| *v == i));
        let s = fill("f", [], 1, |first, one: &mut [f32]| {
            one[0] = first as f32 + 2.0;
            Ok(())
        })
        .unwrap();
        assert_eq!(s.into_scalar(), 2.0);
    }

    #[test]
    fn fill_empty_and_huge_shapes() {
        let a = fill("f", [0, 1 << 20, 1 << 20], 1, |_, _: &mut [f64]| unreachable!()).unwrap();
        assert_eq!(a.shape(), &[0, 1 << 20, 1 << 20]);
        assert!(matches!(fill("f", [0, usize::MAX, 2], 1, |_, _: &mut [f64]| Ok(())), Err(Error::Extent { .. })));
        assert!(matches!(fill("f", [usize::MAX, 2], 1, |_, _: &mut [f64]| Ok(())), Err(Error::Extent { .. })));
        assert!(matches!(fill("f", [1 << 62], 1, |_, _: &mut [f64]| Ok(())), Err(Error::Extent { .. })));
    }

    #[test]
    fn first_error_is_returned() {
        let mut out = vec![0u8; 8];
        let r = for_each_row(&mut out, 2, 0, |row, _| {
            if row == 2 {
                Err(Error::Assert { function: "f".into(), message: "row 2".into() })
            } else {
                Ok(())
            }
        });
        assert!(r.is_err());
    }

    /// Runs `f` on a pool of `threads` threads.
    fn on_threads<R: Send>(threads: usize, f: impl FnOnce() -> R + Send) -> R {
        rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("a thread pool").install(f)
    }

    #[test]
    fn a_split_reduction_takes_every_term_once_in_order() {
        // Each part lists its terms; merging concatenates: the whole range,
        // in order, whatever the split.
        for threads in [1, 2, 3] {
            for (lo, hi) in [(0i64, 0i64), (5, 4), (0, 1), (-3, 4), (0, 7), (-1000, 12_345)] {
                let got = on_threads(threads, || {
                    reduce(
                        lo,
                        hi,
                        parallel_work(),
                        |a, b| Ok((a..b).collect::<Vec<i64>>()),
                        |mut x: Vec<i64>, y: Vec<i64>| {
                            x.extend(y);
                            x
                        },
                    )
                })
                .unwrap();
                assert_eq!(got, (lo..hi).collect::<Vec<_>>(), "{threads} threads, {lo}..{hi}");
            }
        }
    }

    #[test]
    fn a_split_reduction_stops_at_an_error() {
        let err = on_threads(2, || {
            reduce(
                0,
                1000,
                parallel_work(),
                |a, b| {
                    if (a..b).contains(&700) {
                        Err(Error::Assert { function: "f".into(), message: "bad term".into() })
                    } else {
                        Ok(b - a)
                    }
                },
                |x, y| x + y,
            )
        });
        assert!(matches!(err, Err(Error::Assert { message, .. }) if message == "bad term"));
    }

    #[test]
    fn a_reduced_vector_splits_its_reduction_or_itself() {
        // y[j] = 2 * sum[k in lo..hi](k * 1000 + j), in integers held
        // exactly by f64: the same whether the reduction is split (short
        // vector), the vector is cut into strips (long vector) or neither
        // (little work), on one thread or several.
        let (lo, hi) = (-5i64, 300i64);
        for threads in [1, 2, 3] {
            for (len, cost) in [(7usize, 1usize), (1000, 1000), (SPLIT_MAX_LEN + 5, 1000), (3, 1_000_000)] {
                let y = on_threads(threads, || {
                    fill_reduced(
                        "f",
                        len,
                        (lo, hi),
                        cost,
                        0.0f64,
                        |first, a, b, block| {
                            for k in a..b {
                                for (p, v) in block.iter_mut().enumerate() {
                                    *v += (k * 1000 + (first + p) as i64) as f64;
                                }
                            }
                            Ok(())
                        },
                        |acc, part| *acc += part,
                        |_, block| {
                            block.iter_mut().for_each(|v| *v *= 2.0);
                            Ok(())
                        },
                    )
                })
                .unwrap();
                let terms = (hi - lo) as f64;
                let ks: f64 = (lo..hi).map(|k| k as f64).sum();
                for (j, v) in y.iter().enumerate() {
                    assert_eq!(*v, 2.0 * (ks * 1000.0 + terms * j as f64), "{threads} threads, {len} elements, at {j}");
                }
            }
        }
        // An error from a part is the call's.
        let err = on_threads(2, || {
            fill_reduced(
                "f",
                16,
                (0, 100),
                100_000,
                0.0f32,
                |_, a, _, _| {
                    if a > 0 {
                        Err(Error::Assert { function: "f".into(), message: "late part".into() })
                    } else {
                        Ok(())
                    }
                },
                |acc, part| *acc += part,
                |_, _| Ok(()),
            )
        });
        assert!(matches!(err, Err(Error::Assert { message, .. }) if message == "late part"));
    }

    #[test]
    fn split_reductions_give_the_same_bits_on_any_number_of_threads() {
        // Terms that round differently in every order.
        let term = |k: i64, j: usize| ((k as f32) * 0.1f32 + j as f32 * 0.37f32).sin();
        let run = |threads: usize| {
            on_threads(threads, || {
                let v = fill_reduced(
                    "f",
                    100,
                    (0, 20_000),
                    4,
                    0.0f32,
                    |first, a, b, block| {
                        for k in a..b {
                            for (p, v) in block.iter_mut().enumerate() {
                                *v += term(k, first + p);
                            }
                        }
                        Ok(())
                    },
                    |acc, part| *acc += part,
                    |_, _| Ok(()),
                )
                .unwrap();
                let s =
                    reduce(0, 1_000_000, 4, |a, b| Ok((a..b).map(|k| term(k, 0)).sum::<f32>()), |x, y| x + y).unwrap();
                (v.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), s.to_bits())
            })
        };
        let one = run(1);
        assert_eq!(run(2), one);
        assert_eq!(run(3), one);
    }
}
