//! Inside a recurrence's step, an index that reads an axis of the
//! recurrence itself takes that axis's range from the extents its clauses
//! state (`x[0, i in 0..N]`, `x[k in 1..S, i in 0..N]`), even when no
//! other read gives it, and wherever the read is (a `let` in the step, a
//! reduction). Each compared with a naive loop.

use einlang::einlang;
use einlang::ndarray::{Array1, Array2};

einlang! {
    /// The step copies the previous row with `let xk[j] = x[k - 1, j]`; `j`
    /// ranges over axis 1 of `x`, `0..N`. The boundary is a literal, so the
    /// clause that reads `x` is typed before the one that states `0..N` as
    /// written by a clause without reads.
    pub fn smooth(a: [f32; N]) -> [f32; 40, N] {
        let x[0, i in 0..N] = 1.0;
        let x[k in 1..40, i in 0..N] = {
            let xk[j] = x[k - 1, j];
            0.5 * xk[i] + 0.25 * xk[(i + 1) % N] + a[i] * 0.01
        };
        x
    }

    /// A reduction over the previous row in the step, with the range of the
    /// sequential axis from an `i64` parameter.
    pub fn normalize(a: [f64; N], steps: i64) -> [f64; ?, N] {
        let x[0, i in 0..N] = 1.0;
        let x[k in 1..steps, i in 0..N] = {
            let prev[j] = x[k - 1, j];
            let total = sum[j](prev[j]);
            prev[i] / total + a[i]
        };
        x
    }
}

fn smooth_ref(a: &Array1<f32>) -> Array2<f32> {
    let n = a.len();
    let mut x = Array2::<f32>::zeros((40, n));
    for i in 0..n {
        x[[0, i]] = 1.0;
    }
    for k in 1..40 {
        let xk: Vec<f32> = (0..n).map(|j| x[[k - 1, j]]).collect();
        for i in 0..n {
            x[[k, i]] = 0.5 * xk[i] + 0.25 * xk[(i + 1) % n] + a[i] * 0.01;
        }
    }
    x
}

fn normalize_ref(a: &Array1<f64>, steps: usize) -> Array2<f64> {
    let n = a.len();
    let mut x = Array2::<f64>::zeros((steps.max(1), n));
    for i in 0..n {
        x[[0, i]] = 1.0;
    }
    for k in 1..steps {
        let total: f64 = (0..n).map(|j| x[[k - 1, j]]).sum();
        for i in 0..n {
            x[[k, i]] = x[[k - 1, i]] / total + a[i];
        }
    }
    x
}

#[test]
fn a_let_in_the_step_reads_the_previous_row() {
    let a = Array1::from_iter((0..7).map(|v| v as f32 * 0.3 - 1.0));
    let got = smooth(&a).unwrap();
    let want = smooth_ref(&a);
    assert_eq!(got.dim(), (40, 7));
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() <= 1e-5 * w.abs().max(1.0), "{g} vs {w}");
    }
}

#[test]
fn a_reduction_over_the_previous_row() {
    let a = Array1::from_iter((0..5).map(|v| 0.1 * v as f64));
    let got = normalize(&a, 12).unwrap();
    let want = normalize_ref(&a, 12);
    assert_eq!(got.dim(), (12, 5));
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() <= 1e-12 * w.abs().max(1.0), "{g} vs {w}");
    }
}
