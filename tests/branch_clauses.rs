//! Recurrences written as one clause with their first steps and borders
//! in branches (`opt::split` makes one clause per piece of the domain)
//! against naive Rust loops, at extents of 0, 1 and 2 where the pieces'
//! ends clamp, and larger: a 2-D stencil with its border in `||`, a 1-D
//! stencil with borders of different widths written with `!` and `>=`, a
//! scan restarted at a position known only at run time (negative, inside,
//! past the end), a sum over its own loop in a branch taken at both ends,
//! and a condition on two indices at once, which stays a branch.

mod common;

use common::*;
use einlang::einlang;
use einlang::ndarray::{Array1, Array2};

mod boundaries {
    einlang::include_ein!("examples/ein/boundaries.ein");
}
use boundaries::heat_branches as heat;

einlang! {
    /// Two points held on the left, one on the right.
    pub fn lopsided(u0: [f64; N], steps: i64) -> [f64; N] {
        let u[t in 0..steps, i in 0..N] = if t < 1 { u0[i] }
            else if !(i >= 2) || i >= N - 1 { u[t - 1, i] }
            else { 0.25 * u[t - 1, i - 2] + 0.5 * u[t - 1, i] + 0.25 * u[t - 1, i + 1] };
        let last[i] = u[steps - 1, i];
        last
    }

    /// A scan that starts again at `k`.
    pub fn restart(u: [f64; T], a: f64, k: i64) -> [f64; T] {
        let x[t in 0..T] = if t == 0 || t == k { u[t] } else { a * x[t - 1] + u[t] };
        x
    }

    /// The ends take a weighted sum of the point before; the same branch
    /// (with its loop) in two pieces.
    pub fn ends(w: [f64; K], x0: [f64; N], steps: i64) -> [f64; N] {
        let u[t in 0..steps, i in 0..N] = if t == 0 { x0[i] }
            else if i == 0 || i == N - 1 { sum[k](w[k] * u[t - 1, i]) }
            else { 0.5 * (u[t - 1, i - 1] + u[t - 1, i + 1]) };
        let last[i] = u[steps - 1, i];
        last
    }

    /// `t == i` names both indices: no piece of the domain decides it.
    pub fn diagonal(x: [f64; N], steps: i64) -> [f64; steps, N] {
        let p[t in 0..steps, i in 0..N] = if t == i { 1.0 } else if t == 0 { x[i] } else { 0.5 * p[t - 1, i] };
        p
    }
}

const SIZES: [(usize, usize); 10] = [(0, 0), (0, 3), (1, 1), (1, 4), (2, 2), (2, 5), (3, 3), (4, 2), (17, 9), (40, 33)];

#[test]
fn a_stencil_with_its_border_in_branches() {
    for (n, m) in SIZES {
        let u0 = rand2_f64(n, m, (n * 100 + m) as u64);
        for steps in [1usize, 2, 5] {
            let mut u = u0.clone();
            for _ in 1..steps {
                let mut next = Array2::<f64>::zeros((n, m));
                for i in 1..n.saturating_sub(1) {
                    for j in 1..m.saturating_sub(1) {
                        let c = u[[i, j]];
                        next[[i, j]] =
                            c + 0.2 * (u[[i - 1, j]] + u[[i + 1, j]] + u[[i, j - 1]] + u[[i, j + 1]] - 4.0 * c);
                    }
                }
                u = next;
            }
            let got = heat(&u0, 0.2, steps as i64).unwrap();
            assert_eq!(got, u, "{n} x {m}, {steps} steps");
        }
    }
}

#[test]
fn borders_of_different_widths() {
    for n in [0usize, 1, 2, 3, 4, 5, 31] {
        let u0 = rand1_f64(n, n as u64 + 7);
        for steps in [1usize, 2, 6] {
            let mut u = u0.clone();
            for _ in 1..steps {
                let mut next = u.clone();
                for i in 2..n.saturating_sub(1) {
                    next[i] = 0.25 * u[i - 2] + 0.5 * u[i] + 0.25 * u[i + 1];
                }
                u = next;
            }
            assert_eq!(lopsided(&u0, steps as i64).unwrap(), u, "{n} points, {steps} steps");
        }
    }
}

#[test]
fn a_restart_known_only_at_run_time() {
    for len in [0usize, 1, 2, 9] {
        let u = rand1_f64(len, len as u64 + 11);
        for k in [-3i64, 0, 1, 4, 8, 9, 20] {
            let mut want = Array1::<f64>::zeros(len);
            for t in 0..len {
                want[t] = if t == 0 || t as i64 == k { u[t] } else { 0.9 * want[t - 1] + u[t] };
            }
            assert_eq!(restart(&u, 0.9, k).unwrap(), want, "length {len}, restart at {k}");
        }
    }
}

#[test]
fn a_sum_in_a_branch_taken_at_both_ends() {
    let w = Array1::from(vec![0.5, 0.25, 0.125]);
    let total: f64 = w.iter().sum();
    for n in [0usize, 1, 2, 3, 12] {
        let x0 = rand1_f64(n, n as u64 + 13);
        for steps in [1usize, 3] {
            let mut u = x0.clone();
            for _ in 1..steps {
                let mut next = u.clone();
                for i in 0..n {
                    next[i] = if i == 0 || i == n - 1 { total * u[i] } else { 0.5 * (u[i - 1] + u[i + 1]) };
                }
                u = next;
            }
            assert_close(&ends(&w, &x0, steps as i64).unwrap(), &u, 1e-12);
        }
    }
}

#[test]
fn a_condition_on_two_indices_stays_a_branch() {
    for n in [0usize, 1, 3, 6] {
        let x = rand1_f64(n, n as u64 + 17);
        for steps in [1usize, 4, 8] {
            let mut want = Array2::<f64>::zeros((steps, n));
            for t in 0..steps {
                for i in 0..n {
                    want[[t, i]] = if t == i {
                        1.0
                    } else if t == 0 {
                        x[i]
                    } else {
                        0.5 * want[[t - 1, i]]
                    };
                }
            }
            assert_eq!(diagonal(&x, steps as i64).unwrap(), want, "{n} points, {steps} steps");
        }
    }
}
