//! Results that outgrow the caches written with non-temporal stores.
//!
//! A plain store to a line that is in no cache first reads the line
//! (write-allocate): an element map over a result far larger than the
//! caches moves three bytes for each two it means to (read the source,
//! read the destination, write it back). Non-temporal stores skip the read.
//! On Intel's processors (a Xeon with AVX-512: `x * 1.5` over 16 Mi `f32`
//! on two threads in 0.66-0.72x the time) the fills whose every element
//! their body writes (`par::fill_uninit_rows`,
//! `dest::fill_uninit_rows_into`) stream a result of at least
//! [`threshold`] bytes whose body is bound by memory ([`MAX_COST`]): each
//! call of the body writes a stack buffer that stays in the level-1
//! cache, whose lines then go out whole with non-temporal stores, and a
//! fence ends each task's share.
//! The body is called as without streaming (the same rows per call; for
//! rank 1, runs of consecutive elements, whose lengths no body depends
//! on), so the result has the same bits. On AMD's Zen 4
//! the same stores lost up to 20% on arithmetic-bound maps (the extra
//! pass through the buffer) and gained little elsewhere
//! (`docs/performance-onnx-zen4.md`), so other processors keep plain
//! stores unless [`set_streaming`] says otherwise.

use std::mem::{size_of, MaybeUninit};
use std::sync::atomic::{AtomicU8, Ordering};

use crate::par::for_each_row;
use crate::Error;

/// When results are streamed: see [`set_streaming`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Streaming {
    /// Results of at least [`threshold`] bytes whose body is bound by the
    /// memory traffic (at most [`MAX_COST`] operations per element), on
    /// processors where that pays (Intel's, x86-64): the default.
    Auto,
    /// Never: plain stores everywhere.
    Never,
    /// Every result of a streaming fill, whatever its size and processor
    /// (x86-64 only): to compare the two ways, or to test the streamed one
    /// on small tensors.
    Always,
}

/// [`Streaming`] as set, plus `UNSET` (not yet read from the environment).
static MODE: AtomicU8 = AtomicU8::new(UNSET);
const UNSET: u8 = u8::MAX;

/// Sets when results are streamed, for the whole process. The default is
/// [`Streaming::Auto`], or what `EINLANG_STREAM` says (`never`, `always`,
/// `auto`) when it is set. Either way a result has the same bits: only the
/// speed differs.
pub fn set_streaming(mode: Streaming) {
    MODE.store(mode as u8, Ordering::Relaxed);
}

/// The mode [`set_streaming`] set, else the environment's, else `Auto`.
pub fn streaming() -> Streaming {
    let from = |v: u8| match v {
        1 => Streaming::Never,
        2 => Streaming::Always,
        _ => Streaming::Auto,
    };
    match MODE.load(Ordering::Relaxed) {
        UNSET => {
            let mode = match std::env::var("EINLANG_STREAM").as_deref() {
                Ok("never") | Ok("0") => Streaming::Never,
                Ok("always") | Ok("1") => Streaming::Always,
                _ => Streaming::Auto,
            };
            // (A concurrent `set_streaming` wins over the environment.)
            let _ = MODE.compare_exchange(UNSET, mode as u8, Ordering::Relaxed, Ordering::Relaxed);
            from(MODE.load(Ordering::Relaxed))
        }
        v => from(v),
    }
}

/// The fewest bytes of a result streamed in [`Streaming::Auto`] mode
/// (`None` where it never is): the level-2 caches of the threads of the
/// pool, one core's times their number. A smaller result may still be in
/// a cache when it is read next, which the stores would have bypassed.
pub fn threshold() -> Option<usize> {
    if !cfg!(target_arch = "x86_64") {
        return None;
    }
    let l2 = crate::cpu::intel_l2_bytes()?;
    Some(l2.saturating_mul(rayon::current_num_threads().max(1)))
}

/// The most operations per element (the loop IR's estimate, `ir::cost`)
/// of a body whose result is streamed in `Auto` mode: a few arithmetic
/// operations on what it reads, bound by the memory traffic, so that a
/// third less of it shows. A body with a polynomial function (`tanh`,
/// `exp`: 16 and more) or a row kernel is bound by its arithmetic, and
/// the stack buffer's extra pass then cost more than the stores saved:
/// `tanh` and sigmoid over 16 Mi `f32` took 1.1-1.3x the time streamed,
/// `x * 1.5` 0.66-0.72x and `a * b + c` 0.81-1.0x (the Xeon's figures).
pub const MAX_COST: u64 = 8;

/// Whether a result of `bytes` whose body costs `cost_per_point` is
/// streamed now.
pub(crate) fn chosen(bytes: usize, cost_per_point: u64) -> bool {
    if !cfg!(target_arch = "x86_64") {
        return false;
    }
    match streaming() {
        Streaming::Never => false,
        Streaming::Always => true,
        Streaming::Auto => cost_per_point <= MAX_COST && threshold().is_some_and(|t| bytes >= t),
    }
}

/// The stack buffer one call of a body writes: 16 KiB, so that it stays in
/// the level-1 cache beside the lines the body reads.
const STAGE_BYTES: usize = 16 << 10;

/// What one task streams before its fence: the fence waits for the
/// stores to drain, which a fence per call of a short row's body did not
/// amortize (the Zen 4 file's measurements).
const TASK_BYTES: usize = 256 << 10;

#[repr(C, align(64))]
struct Stage([MaybeUninit<u8>; STAGE_BYTES]);

/// `fill_slice` (`par`) with the result streamed (`par::fill_slice_uninit`
/// calls it when [`chosen`] says so): `Some` of the outcome, or `None`
/// (nothing done) when `rows` rows of the result do not fit the stack
/// buffer (each call of `body` must get the chunk it would get without
/// streaming).
///
/// # Safety
///
/// When `body` returns `Ok(())` for a chunk it has initialized every
/// element of it, writing whole values only.
pub(crate) unsafe fn staged<T, F>(
    elems: &mut [MaybeUninit<T>],
    shape: &[usize],
    cost_per_point: u64,
    rows: usize,
    body: &F,
) -> Option<Result<(), Error>>
where
    T: Copy + Send,
    F: Fn(usize, &mut [MaybeUninit<T>]) -> Result<(), Error> + Sync + Send,
{
    let size = size_of::<T>();
    let len = elems.len();
    if shape.is_empty() || len == 0 || size == 0 || size > STAGE_BYTES || !fits_stage::<T>() {
        return None;
    }
    let work = crate::par::work(len, cost_per_point);
    // A call's chunk: `fill_slice`'s blocks for rank 1 (any length there,
    // `first` counting elements: the stack buffer's), `rows` whole rows
    // otherwise (`first` counting rows).
    let (call_len, call_first) = match shape.len() {
        1 => (STAGE_BYTES / size, STAGE_BYTES / size),
        _ => {
            let row_len: usize = shape[1..].iter().product();
            let call_len = row_len.checked_mul(rows.max(1))?;
            if call_len.checked_mul(size)? > STAGE_BYTES {
                return None;
            }
            (call_len, rows.max(1))
        }
    };
    let calls_per_task = (TASK_BYTES / (call_len * size)).max(1);
    let task_len = call_len * calls_per_task;
    Some(for_each_row(elems, task_len, work, |task, chunk| {
        let mut stage = Stage([MaybeUninit::uninit(); STAGE_BYTES]);
        // SAFETY: the stage is aligned for any `T` of at most 64-byte
        // alignment and holds `STAGE_BYTES / size` of them.
        let staged: &mut [MaybeUninit<T>] =
            unsafe { std::slice::from_raw_parts_mut(stage.0.as_mut_ptr().cast(), STAGE_BYTES / size) };
        let mut outcome = Ok(());
        for (k, piece) in chunk.chunks_mut(call_len).enumerate() {
            let first = (task * calls_per_task + k) * call_first;
            let staged = &mut staged[..piece.len()];
            outcome = body(first, staged);
            if outcome.is_err() {
                break;
            }
            // SAFETY: `body` returned `Ok`, so it initialized every element
            // of `staged` with whole values; `piece` has its length.
            unsafe { stream_copy(piece.as_mut_ptr().cast(), staged.as_ptr().cast(), std::mem::size_of_val(piece)) };
        }
        fence();
        outcome
    }))
}

/// Whether `T`'s alignment lets the stage hold it (always for the
/// tensors' element types; checked once per instantiation).
const fn fits_stage<T>() -> bool {
    std::mem::align_of::<T>() <= 64
}

/// Copies `len` bytes from `src` to `dst`: the whole 64-byte lines of
/// `dst` with non-temporal stores, the bytes before and after them plainly.
///
/// # Safety
///
/// Both ranges are valid for `len` bytes and do not overlap.
unsafe fn stream_copy(dst: *mut u8, src: *const u8, len: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        let head = dst.align_offset(64).min(len);
        // SAFETY: the caller's promise, for every range below.
        unsafe {
            std::ptr::copy_nonoverlapping(src, dst, head);
            let lines = (len - head) / 64;
            if crate::cpu::has_avx512() {
                lines512(dst.add(head), src.add(head), lines);
            } else {
                lines128(dst.add(head), src.add(head), lines);
            }
            let done = head + lines * 64;
            std::ptr::copy_nonoverlapping(src.add(done), dst.add(done), len - done);
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: the caller's promise.
    unsafe {
        std::ptr::copy_nonoverlapping(src, dst, len)
    }
}

/// `lines` 64-byte lines to `dst` (aligned to 64) from `src`, with
/// AVX-512 non-temporal stores.
///
/// # Safety
///
/// The processor has AVX-512 foundation; the ranges are valid.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn lines512(dst: *mut u8, src: *const u8, lines: usize) {
    use std::arch::x86_64::{_mm512_loadu_si512, _mm512_stream_si512};
    for i in 0..lines {
        // SAFETY: the caller's promise.
        unsafe {
            let v = _mm512_loadu_si512(src.add(i * 64).cast());
            _mm512_stream_si512(dst.add(i * 64).cast(), v);
        }
    }
}

/// As [`lines512`] with SSE2's 16-byte non-temporal stores, four a line.
///
/// # Safety
///
/// The ranges are valid and `dst` is aligned to 64.
#[cfg(target_arch = "x86_64")]
unsafe fn lines128(dst: *mut u8, src: *const u8, lines: usize) {
    use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
    for i in 0..lines * 4 {
        // SAFETY: the caller's promise.
        unsafe {
            let v = _mm_loadu_si128(src.add(i * 16).cast::<__m128i>());
            _mm_stream_si128(dst.add(i * 16).cast::<__m128i>(), v);
        }
    }
}

/// Orders this thread's non-temporal stores before its later stores (the
/// task's completion, which the thread that reads the result waits on).
fn fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `sfence` has no preconditions.
    unsafe {
        std::arch::x86_64::_mm_sfence();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn a_streamed_copy_is_the_copy_at_every_alignment_and_length() {
        let src: Vec<u8> = (0..1000u32).map(|i| (i * 7 + 3) as u8).collect();
        for offset in 0..70 {
            for len in [0, 1, 5, 63, 64, 65, 127, 128, 200, 513, 900] {
                let mut dst = vec![0u8; 1100];
                let mut want = dst.clone();
                want[offset..offset + len].copy_from_slice(&src[3..3 + len]);
                // SAFETY: both ranges are in bounds and distinct vectors.
                unsafe { stream_copy(dst.as_mut_ptr().add(offset), src.as_ptr().add(3), len) };
                fence();
                assert_eq!(dst, want, "offset {offset}, length {len}");
            }
        }
    }

    /// Both forms of the line copy, whichever the processor takes.
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn both_line_copies_copy_whole_lines() {
        let src: Vec<u8> = (0..64 * 9 + 5).map(|i| (i * 13 + 1) as u8).collect();
        let mut dst = Stage([MaybeUninit::new(0u8); STAGE_BYTES]);
        let out = dst.0.as_mut_ptr().cast::<u8>();
        // SAFETY: nine lines from `src + 5` and into the aligned stage.
        unsafe { lines128(out, src.as_ptr().add(5), 9) };
        fence();
        // SAFETY: the first 576 bytes were just written.
        assert_eq!(unsafe { std::slice::from_raw_parts(out, 576) }, &src[5..581]);
        if crate::cpu::has_avx512() {
            let mut dst = Stage([MaybeUninit::new(0u8); STAGE_BYTES]);
            let out = dst.0.as_mut_ptr().cast::<u8>();
            // SAFETY: as above; the processor has AVX-512F.
            unsafe { lines512(out, src.as_ptr().add(3), 9) };
            fence();
            // SAFETY: as above.
            assert_eq!(unsafe { std::slice::from_raw_parts(out, 576) }, &src[3..579]);
        }
    }

    /// The calls `staged` makes, against the chunks `par::fill_slice`
    /// hands out: the same `(first, length)` pairs, and the same result.
    fn same_calls_and_elements(shape: &[usize], rows: usize, cost: u64) {
        let len: usize = shape.iter().product();
        let body_calls = Mutex::new(Vec::new());
        let body = |first: usize, chunk: &mut [MaybeUninit<f32>]| -> Result<(), Error> {
            body_calls.lock().unwrap().push((first, chunk.len()));
            let row_len: usize = if shape.len() == 1 { 1 } else { shape[1..].iter().product() };
            for (k, e) in chunk.iter_mut().enumerate() {
                // Rank 1: `first` counts elements; else rows.
                let at = if shape.len() == 1 { first + k } else { first * row_len + k };
                e.write(at as f32 * 0.5 - 3.0);
            }
            Ok(())
        };
        let mut streamed = vec![MaybeUninit::new(f32::NAN); len];
        // SAFETY: the body writes every element of its chunks.
        let outcome = unsafe { staged(&mut streamed, shape, cost, rows, &body) };
        let row_bytes = shape[1..].iter().product::<usize>() * rows * 4;
        if shape.len() > 1 && row_bytes > STAGE_BYTES {
            assert!(outcome.is_none(), "{shape:?}");
            return;
        }
        outcome.expect("streamed").expect("no error");
        let mut streamed_calls = std::mem::take(&mut *body_calls.lock().unwrap());
        streamed_calls.sort();
        let want: Vec<f32> = (0..len).map(|i| i as f32 * 0.5 - 3.0).collect();
        // SAFETY: every element was written (checked against `want`).
        let got: Vec<f32> = streamed.iter().map(|e| unsafe { e.assume_init() }).collect();
        assert_eq!(got, want, "{shape:?}, rows {rows}");
        // Rows: the same calls as without streaming.
        if shape.len() > 1 {
            let mut plain = vec![MaybeUninit::new(0.0f32); len];
            crate::par::fill_slice(&mut plain, shape, cost, rows, body).unwrap();
            let mut plain_calls = std::mem::take(&mut *body_calls.lock().unwrap());
            plain_calls.sort();
            assert_eq!(streamed_calls, plain_calls, "{shape:?}, rows {rows}");
        } else {
            // Rank 1: consecutive blocks covering the vector once.
            let mut next = 0;
            for (first, n) in streamed_calls {
                assert_eq!(first, next, "{shape:?}");
                next += n;
            }
            assert_eq!(next, len);
        }
    }

    #[test]
    fn streamed_fills_call_the_body_as_plain_ones_on_odd_shapes() {
        for cost in [1, 1 << 20] {
            for shape in [&[1][..], &[7], &[4099], &[100_003], &[1, 1], &[7, 13], &[257, 31], &[3, 5, 7], &[2, 5000]] {
                for rows in [1, 3, 16] {
                    same_calls_and_elements(shape, rows, cost);
                }
            }
        }
    }

    #[test]
    fn a_failing_body_stops_the_streamed_fill_with_its_error() {
        let mut elems = vec![MaybeUninit::new(0.0f32); 300_000];
        let body = |first: usize, chunk: &mut [MaybeUninit<f32>]| -> Result<(), Error> {
            if first >= 100_000 {
                return Err(Error::Extent { function: "f".into(), message: format!("at {first}") });
            }
            chunk.iter_mut().for_each(|e| {
                e.write(1.0);
            });
            Ok(())
        };
        // SAFETY: the body writes whole values into every chunk it accepts.
        let outcome = unsafe { staged(&mut elems, &[300_000], 1 << 20, 1, &body) }.expect("streamed");
        assert!(matches!(outcome, Err(Error::Extent { .. })));
    }

    #[test]
    fn the_mode_is_read_back_as_set() {
        let before = streaming();
        set_streaming(Streaming::Never);
        assert_eq!(streaming(), Streaming::Never);
        assert!(!chosen(usize::MAX, 1));
        set_streaming(Streaming::Always);
        assert_eq!(streaming(), Streaming::Always);
        assert_eq!(chosen(1, 1000), cfg!(target_arch = "x86_64"));
        set_streaming(before);
    }
}
