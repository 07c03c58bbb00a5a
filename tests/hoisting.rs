//! Reductions over fewer axes than their definition are computed once per
//! point of the axes they read (`opt::hoist`); the values are those of the
//! definitions as written, checked against plain loops.

use einlang::einlang;
use einlang::ndarray::{Array1, Array2};

einlang! {
    use std::math::{abs, exp};

    pub fn softmax_rows(x: [f32; N, C]) -> [f32; N, C] {
        let m[n] = max[c](x[n, c]);
        let e[n, c] = exp(x[n, c] - m[n]);
        let y[n, c] = e[n, c] / sum[k](e[n, k]);
        y
    }

    /// Columns centred and scaled by the largest magnitude of their row.
    pub fn centred(x: [f64; N, M]) -> [f64; N, M] {
        let y[i, j] = (x[i, j] - sum[r](x[r, j]) / (N as f64)) / max[q](abs(x[i, q]));
        y
    }

    pub fn normalized(x: [f32; N]) -> [f32; N] {
        let y[i] = x[i] / sum[k](x[k] * x[k]);
        y
    }
}

fn data(n: usize, m: usize) -> Array2<f64> {
    Array2::from_shape_fn((n, m), |(i, j)| ((i * 13 + j * 7) % 17) as f64 * 0.3 - 2.0)
}

#[test]
fn softmax_rows_match_a_loop() {
    let x = data(5, 9).mapv(|v| v as f32);
    let got = softmax_rows(&x).unwrap();
    for n in 0..5 {
        let m = x.row(n).iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        let total: f32 = x.row(n).iter().map(|v| (v - m).exp()).sum();
        for c in 0..9 {
            approx::assert_relative_eq!(got[[n, c]], (x[[n, c]] - m).exp() / total, max_relative = 1e-5);
        }
    }
}

#[test]
fn column_and_row_reductions_match_a_loop() {
    let x = data(6, 4);
    let got = centred(&x).unwrap();
    for i in 0..6 {
        let peak = x.row(i).iter().fold(0.0f64, |a, v| a.max(v.abs()));
        for j in 0..4 {
            let mean = x.column(j).sum() / 6.0;
            approx::assert_relative_eq!(got[[i, j]], (x[[i, j]] - mean) / peak, max_relative = 1e-12);
        }
    }
    let v = Array1::from_vec(vec![1.0f32, -2.0, 3.0]);
    let got = normalized(&v).unwrap();
    for i in 0..3 {
        approx::assert_relative_eq!(got[i], v[i] / 14.0, max_relative = 1e-6);
    }
}
