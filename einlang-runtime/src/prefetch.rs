//! Lines asked for before they are read: the next row of a matrix while
//! this one is computed, the operands of a map a kilobyte ahead.
//!
//! A row pipeline (a softmax: the row's maximum, its exponentials and
//! their sum, then the row divided) reads each row of its input two or
//! three times. The first pass takes the row from memory and the later
//! ones find it in the first-level cache, so the processor's own
//! prefetchers see short bursts of misses, one row long, separated by
//! long stretches of arithmetic, and rows of a few hundred bytes to a few
//! kilobytes arrive only as the first pass asks for them. Generated code
//! (`codegen::rust`, `tensor_with_prelude`) therefore has the second pass
//! over a row ask for the same line of the next row as it goes: one
//! [`line()`] per run of its lanes, so the requests are spread over the
//! pass's arithmetic instead of queued at once, and the next row's first
//! pass finds its lines in the cache.
//!
//! On an AVX-512 Xeon (2 MiB of level-2 cache a core), a softmax over
//! rows of 4096 x 1024 `f32` on one thread took 0.80-0.88 of the time,
//! 16384 x 256 0.90-0.95, 1024 x 1000 0.85-0.90, 2048 x 4096 0.70-0.80;
//! rows of 64 `f32` (256 bytes) and rows of 64 KiB and longer gained
//! nothing or lost up to 5% (the hardware's streams cover them), hence
//! [`ROW_BYTES`]. A request on the same line twice, or past the matrix's
//! last row, costs an instruction and changes nothing: these are hints,
//! which never fault and never change a result.
//!
//! An element map bound by its arithmetic (`tanh(x[i])`) streams its
//! operand and its output while the core is busy with the polynomial, and
//! there the prefetchers fell behind as well: generated code runs such a
//! map in pieces of 64 elements, each asking for the lines a kilobyte
//! ahead of it (`codegen/rust/ahead.rs` has the figures).

use std::ops::RangeInclusive;

/// The lengths of rows, in bytes, whose next row is asked for: from 512
/// bytes (eight lines: shorter rows gained nothing) to 16 KiB (a row, the
/// next and the output's row within a 48 KiB first-level cache; longer
/// rows lost a little).
pub const ROW_BYTES: RangeInclusive<usize> = 512..=16 << 10;

/// Whether rows of `bytes` bytes have their next row asked for (see
/// [`ROW_BYTES`]).
#[inline]
pub fn rows_of(bytes: usize) -> bool {
    ROW_BYTES.contains(&bytes)
}

/// Asks the processor to bring the line holding the byte at `p` into its
/// first-level cache. A hint only: `p` need not point into anything (the
/// instruction never faults, and nothing is read through `p`), so callers
/// compute it with `wrapping_add`. Nothing on other architectures.
#[inline(always)]
pub fn line<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `prefetcht0` is in every x86-64 processor (SSE) and reads
    // nothing a program can observe; an address outside the process only
    // makes it do nothing.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(p.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_from_eight_lines_to_sixteen_kibibytes_are_asked_for() {
        assert!(!rows_of(0));
        assert!(!rows_of(256));
        assert!(!rows_of(511));
        assert!(rows_of(512));
        assert!(rows_of(1024 * 4));
        assert!(rows_of(16384));
        assert!(!rows_of(16385));
        assert!(!rows_of(64 << 10));
    }

    #[test]
    fn a_line_past_the_end_or_nowhere_is_only_a_hint() {
        let v = [1.0f32; 4];
        line(v.as_ptr().wrapping_add(1 << 20));
        line(std::ptr::null::<f32>());
        line(usize::MAX as *const u8);
        assert_eq!(v, [1.0f32; 4]);
    }
}
