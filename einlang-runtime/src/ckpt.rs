//! Checkpointed reverse sweeps (the compiler's `Sweep`): when a gradient
//! recomputes a recurrence's history from checkpoints instead of keeping
//! it, the chunk and window sizes, the checkpoints themselves, and the flag
//! that a read outside the steps a window holds raises.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;

use ndarray::{Array, Dimension};

use crate::Error;

/// The default of [`history_limit`]: 256 MiB.
pub const DEFAULT_HISTORY_LIMIT: usize = 256 << 20;

static LIMIT: AtomicUsize = AtomicUsize::new(DEFAULT_HISTORY_LIMIT);
/// Whether `set_history_limit` has been called.
static SET: AtomicBool = AtomicBool::new(false);

/// The size in bytes above which a recurrence's history is recomputed from
/// checkpoints during a reverse sweep rather than kept whole: the last
/// [`set_history_limit`], else the environment variable
/// `EINLANG_HISTORY_LIMIT` (bytes) when it is set to a number, else
/// [`DEFAULT_HISTORY_LIMIT`].
pub fn history_limit() -> usize {
    if SET.load(Ordering::Acquire) {
        return LIMIT.load(Ordering::Relaxed);
    }
    static FROM_ENV: OnceLock<usize> = OnceLock::new();
    *FROM_ENV.get_or_init(|| {
        std::env::var("EINLANG_HISTORY_LIMIT").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(DEFAULT_HISTORY_LIMIT)
    })
}

/// Sets [`history_limit`] for the whole process (0: always checkpoint;
/// `usize::MAX`: never) and returns the previous limit.
pub fn set_history_limit(bytes: usize) -> usize {
    let before = history_limit();
    LIMIT.store(bytes, Ordering::Relaxed);
    SET.store(true, Ordering::Release);
    before
}

/// Whether a history of `steps` steps of `state` elements of `elem_bytes`
/// bytes each is over the limit. A sequence of one step has nothing to
/// recompute.
pub fn use_checkpoints(steps: i64, state: i64, elem_bytes: usize) -> bool {
    if steps < 2 {
        return false;
    }
    let bytes = (steps as u128) * (state.max(0) as u128) * (elem_bytes as u128);
    bytes > history_limit() as u128
}

/// Steps per chunk: the ceiling of `sqrt(steps)`, at least 1.
pub fn chunk(steps: i64) -> i64 {
    let steps = steps.max(1);
    let mut c = (steps as f64).sqrt().ceil() as i64;
    while c > 1 && (c - 1) * (c - 1) >= steps {
        c -= 1;
    }
    while c * c < steps {
        c += 1;
    }
    c.max(1)
}

/// Window slots for chunks of `chunk` steps, `lookback` steps before a
/// chunk and reads up to `margin` steps beyond it either way: a power of
/// two.
pub fn slots(chunk: i64, lookback: u64, margin: u64) -> usize {
    let need = chunk.max(1) as u128 + lookback as u128 + 2 * margin as u128 + 1;
    usize::try_from(need).unwrap_or(usize::MAX / 2 + 1).next_power_of_two()
}

/// Raised by a read of a step that its window does not hold; the function
/// then gives up and its caller runs the form that keeps every step.
#[derive(Debug, Default)]
pub struct Miss(AtomicBool);

impl Miss {
    pub fn new() -> Miss {
        Miss(AtomicBool::new(false))
    }

    /// Records a miss unless `lo <= step < hi`.
    #[inline(always)]
    pub fn check(&self, step: i64, lo: i64, hi: i64) {
        if step < lo || step >= hi {
            self.0.store(true, Ordering::Relaxed);
        }
    }

    pub fn missed(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// The last `lookback` steps before every chunk boundary, copied out of a
/// window (an array whose first axis is `slots` slots, standard layout).
pub struct Checkpoints<T> {
    slab: usize,
    lookback: usize,
    data: Vec<T>,
}

impl<T: Copy + Default> Checkpoints<T> {
    /// Room for the steps before each of `chunks` chunk starts, or
    /// `Error::Alloc` naming `function` and `tensor` when there is no
    /// memory for it.
    pub fn new<D: Dimension>(
        function: &str,
        tensor: &str,
        window: &Array<T, D>,
        lookback: u64,
        chunks: i64,
    ) -> Result<Checkpoints<T>, Error> {
        let slab = window.shape().iter().skip(1).product::<usize>();
        let lookback = lookback as usize;
        let len = slab.checked_mul(lookback).and_then(|n| n.checked_mul(chunks.max(0) as usize));
        let bytes = len.and_then(|n| n.checked_mul(std::mem::size_of::<T>()));
        let failed = || Error::Alloc {
            function: function.to_string(),
            tensor: tensor.to_string(),
            bytes: bytes.unwrap_or(usize::MAX),
        };
        let len = len.ok_or_else(failed)?;
        let mut data = Vec::new();
        data.try_reserve_exact(len).map_err(|_| failed())?;
        data.resize(len, T::default());
        Ok(Checkpoints { slab, lookback, data })
    }

    /// Saves the steps `start - lookback .. start` (those at or after 0) as
    /// the checkpoint of chunk `index`.
    pub fn save<D: Dimension>(&mut self, window: &Array<T, D>, mask: usize, index: i64, start: i64) {
        let Some(src) = window.as_slice() else { return };
        for (at, slot) in self.places(src.len(), mask, index, start) {
            self.data[at..at + self.slab].copy_from_slice(&src[slot..slot + self.slab]);
        }
    }

    /// Puts the checkpoint of chunk `index` back into the window at its
    /// steps.
    pub fn restore<D: Dimension>(&self, window: &mut Array<T, D>, mask: usize, index: i64, start: i64) {
        let Some(dst) = window.as_slice_mut() else { return };
        for (at, slot) in self.places(dst.len(), mask, index, start) {
            dst[slot..slot + self.slab].copy_from_slice(&self.data[at..at + self.slab]);
        }
    }

    /// For each step of the checkpoint of chunk `index` (before `start`,
    /// at or after 0): where it is kept and its slot in a window of
    /// `window_len` elements, both in range.
    fn places(&self, window_len: usize, mask: usize, index: i64, start: i64) -> Vec<(usize, usize)> {
        (0..self.lookback)
            .filter_map(|j| {
                let step = start - (self.lookback - j) as i64;
                let at = (index.max(0) as usize * self.lookback + j) * self.slab;
                let slot = (step.max(0) as usize & mask) * self.slab;
                let fits = step >= 0 && at + self.slab <= self.data.len() && slot + self.slab <= window_len;
                fits.then_some((at, slot))
            })
            .collect()
    }
}

/// `total += part`, element by element (same shape; otherwise nothing).
pub fn add_into<T: Copy + std::ops::AddAssign, D: Dimension>(total: &mut Array<T, D>, part: &Array<T, D>) {
    if total.shape() == part.shape() {
        total.zip_mut_with(part, |t, p| *t += *p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_are_the_ceiling_of_the_square_root() {
        for (steps, want) in [(1, 1), (2, 2), (4, 2), (5, 3), (9, 3), (10, 4), (100_000, 317), (1 << 40, 1 << 20)] {
            assert_eq!(chunk(steps), want, "{steps}");
        }
    }

    #[test]
    fn windows_hold_a_chunk_and_its_margins() {
        assert_eq!(slots(317, 1, 2), 512);
        assert_eq!(slots(3, 1, 0), 8);
        assert!(slots(100, 3, 10).is_power_of_two());
    }

    #[test]
    fn checkpoints_come_back_at_their_steps() {
        // A window of 4 slots of 2 elements; steps 5 and 6 sit in slots 1 and 2.
        let mut w = Array::from_shape_vec((4, 2), (0..8).map(|v| v as f32).collect()).unwrap();
        let mut ck = Checkpoints::new("f", "w", &w, 2, 3).unwrap();
        ck.save(&w, 3, 2, 7);
        w.fill(-1.0);
        ck.restore(&mut w, 3, 2, 7);
        assert_eq!(w.row(1).to_vec(), vec![2.0, 3.0]);
        assert_eq!(w.row(2).to_vec(), vec![4.0, 5.0]);
        assert_eq!(w.row(0).to_vec(), vec![-1.0, -1.0]);
    }

    #[test]
    fn a_miss_is_remembered() {
        let m = Miss::new();
        m.check(3, 0, 4);
        assert!(!m.missed());
        m.check(4, 0, 4);
        assert!(m.missed());
    }

    #[test]
    fn large_histories_are_checkpointed() {
        set_history_limit(DEFAULT_HISTORY_LIMIT);
        assert_eq!(history_limit(), DEFAULT_HISTORY_LIMIT);
        assert!(!use_checkpoints(1, i64::MAX, 8));
        assert!(use_checkpoints(1 << 20, 1 << 10, 4));
        assert!(!use_checkpoints(64, 32, 4));
    }
}
