//! Recurrence windows over one sequential axis come uninitialized from the
//! buffer pool (or the allocator), and each slot is prepared at its first
//! step: the points its clause does not write zeroed, the slot zeroed when
//! no clause or several cover the step, the slots no step used zeroed
//! after the steps. Each case runs right after a call that leaves a
//! window of the same size full of large values in the pool, and is
//! compared with a naive loop over zero-initialized arrays.

#[macro_use]
mod common;

use common::*;
use einlang::einlang;
use einlang::ndarray::{Array1, Array2, Array3};

einlang! {
    /// Leaves its window (two slots of `N x M`) full of large values in
    /// the pool: every point written at every step.
    pub fn dirty(n: i64, m: i64, steps: i64) -> f64 {
        let u[0, i in 0..n, j in 0..m] = 1.0e9 + (i as f64);
        let u[t in 1..steps, i in 0..n, j in 0..m] = u[t - 1, i, j] + 7.0;
        u[steps - 1, 0, 0]
    }

    /// A stencil over the interior: the border of every step after the
    /// first reads as zero.
    pub fn heat(u0: [f64; N, M], r: f64, steps: i64) -> [f64; N, M] {
        let u[0, i, j] = u0[i, j];
        let u[t in 1..steps, i in 1..N - 1, j in 1..M - 1] = u[t - 1, i, j]
            + r * (u[t - 1, i - 1, j] + u[t - 1, i + 1, j] + u[t - 1, i, j - 1] + u[t - 1, i, j + 1] - 4.0 * u[t - 1, i, j]);
        let last[i, j] = u[steps - 1, i, j];
        last
    }

    /// Step 1 writes one column (the rest reads as zero); steps from 2
    /// have two clauses, a column and the rest.
    pub fn gap(u0: [f64; N, M], steps: i64) -> [f64; N, M] {
        let u[0, i, j] = u0[i, j];
        let u[1, i in 0..N, 0] = 2.0 + u[0, i, 1];
        let u[t in 2..steps, i in 0..N, 0] = 3.0 + u[t - 2, i, 0];
        let u[t in 2..steps, i in 0..N, j in 1..M] = 0.5 * u[t - 1, i, j] + 0.25 * u[t - 2, i, j - 1];
        let last[i, j] = u[steps - 1, i, j];
        last
    }

    /// A point clause per row: the slot's box is a single column.
    pub fn column(u0: [f64; N, M], steps: i64) -> [f64; N, M] {
        let u[0, i, j] = u0[i, j];
        let u[t in 1..steps, i in 0..N, 2] = u[t - 1, i, 2] * 0.5 + u[t - 1, i, 1];
        let last[i, j] = u[steps - 1, i, j];
        last
    }
}

/// `steps` of `step`, from `u0`, each step starting from zeros.
fn reference(u0: &Array2<f64>, steps: usize, step: impl Fn(usize, &[Array2<f64>]) -> Array2<f64>) -> Array2<f64> {
    let mut all = vec![u0.clone()];
    for t in 1..steps.max(1) {
        let next = step(t, &all);
        all.push(next);
    }
    all.pop().unwrap_or_else(|| u0.clone())
}

fn make_dirty(n: usize, m: usize) {
    let v = dirty(n as i64, m as i64, 3).unwrap();
    assert_eq!(v, 1.0e9 + 14.0);
}

/// 200 x 180 `f64`: 288 KB a slot, so the window comes from the pool.
const ROWS: usize = 200;
const COLS: usize = 180;

#[test]
fn a_stencil_border_reads_zero_after_a_dirty_window() {
    let u0 = rand2_f64(ROWS, COLS, 3);
    for steps in [1usize, 2, 3, 6] {
        let want = reference(&u0, steps, |_, all| {
            let u = all.last().unwrap();
            let mut next = Array2::<f64>::zeros((ROWS, COLS));
            for i in 1..ROWS - 1 {
                for j in 1..COLS - 1 {
                    next[[i, j]] = u[[i, j]]
                        + 0.2 * (u[[i - 1, j]] + u[[i + 1, j]] + u[[i, j - 1]] + u[[i, j + 1]] - 4.0 * u[[i, j]]);
                }
            }
            next
        });
        make_dirty(ROWS, COLS);
        assert_close(&heat(&u0, 0.2, steps as i64).unwrap(), &want, 1e-12);
        // Again, straight after itself.
        assert_close(&heat(&u0, 0.2, steps as i64).unwrap(), &want, 1e-12);
    }
}

#[test]
fn a_step_with_one_column_and_steps_with_two_clauses() {
    let u0 = rand2_f64(ROWS, COLS, 5);
    for steps in [2usize, 3, 4, 7] {
        let want = reference(&u0, steps, |t, all| {
            let mut next = Array2::<f64>::zeros((ROWS, COLS));
            if t == 1 {
                for i in 0..ROWS {
                    next[[i, 0]] = 2.0 + all[0][[i, 1]];
                }
            } else {
                let (u1, u2) = (&all[t - 1], &all[t - 2]);
                for i in 0..ROWS {
                    next[[i, 0]] = 3.0 + u2[[i, 0]];
                    for j in 1..COLS {
                        next[[i, j]] = 0.5 * u1[[i, j]] + 0.25 * u2[[i, j - 1]];
                    }
                }
            }
            next
        });
        make_dirty(ROWS, COLS);
        assert_close(&gap(&u0, steps as i64).unwrap(), &want, 1e-12);
    }
}

#[test]
fn a_clause_writing_one_column() {
    let u0 = rand2_f64(ROWS, COLS, 7);
    for steps in [1usize, 2, 5] {
        let want = reference(&u0, steps, |_, all| {
            let u = all.last().unwrap();
            let mut next = Array2::<f64>::zeros((ROWS, COLS));
            for i in 0..ROWS {
                next[[i, 2]] = u[[i, 2]] * 0.5 + u[[i, 1]];
            }
            next
        });
        make_dirty(ROWS, COLS);
        assert_close(&column(&u0, steps as i64).unwrap(), &want, 1e-12);
    }
}

einlang! {
    /// A small window (not from the pool): the allocator's memory may hold
    /// anything too.
    pub fn small(x: [f64; T]) -> [f64; 3] {
        let h[0, k in 0..3] = x[0] * (k as f64);
        let h[1, 0] = x[1];
        let h[t in 2..T, k in 1..3] = h[t - 1, k] - 0.5 * h[t - 2, k - 1] + x[t];
        let out[k] = h[T - 1, k];
        out
    }
}

#[test]
fn a_small_window_from_the_allocator() {
    for len in [2usize, 3, 4, 9] {
        let x = rand1_f64(len, len as u64);
        // Fill freed memory of this size with large values first.
        for _ in 0..4 {
            let junk = Array3::<f64>::from_elem((2, 2, 3), 1.0e300);
            std::hint::black_box(&junk);
        }
        let mut h = vec![Array1::<f64>::zeros(3); len];
        for k in 0..3 {
            h[0][k] = x[0] * k as f64;
        }
        h[1][0] = x[1];
        for t in 2..len {
            for k in 1..3 {
                h[t][k] = h[t - 1][k] - 0.5 * h[t - 2][k - 1] + x[t];
            }
        }
        assert_close(&small(&x).unwrap(), &h[len - 1], 1e-12);
    }
}
