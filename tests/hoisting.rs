//! Reductions over fewer axes than their definition are computed once per
//! point of the axes they read (`opt::hoist`); the values are those of the
//! definitions as written, checked against plain loops.

use einlang::einlang;
use einlang::ndarray::{Array1, Array2};

einlang! {
    /// Guards on the point alone (`i >= s`) and on the term (`k >= 1`):
    /// the first is tested once per sum (`opt::guards`).
    pub fn guarded_rows(a: [f64; N, K], s: i64) -> [f64; N] {
        let y[i] = sum[k](a[i, k] * 2.0 where i >= s, k >= 1);
        y
    }

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

    /// Softmax written inline: the maximum inside the sum is computed once
    /// per row and shared with the numerator's.
    pub fn softmax_inline(x: [f32; N, C]) -> [f32; N, C] {
        let y[n, c] = exp(x[n, c] - max[j](x[n, j])) / sum[k](exp(x[n, k] - max[j](x[n, j])));
        y
    }

    /// A named maximum in the sum, an inline one in the numerator.
    pub fn softmax_mixed(x: [f32; N, C]) -> [f32; N, C] {
        let m[n] = max[c](x[n, c]);
        let y[n, c] = exp(x[n, c] - max[j](x[n, j])) / sum[k](exp(x[n, k] - m[n]));
        y
    }

    /// Softmax with where-bindings: the maximum is bound once and read by
    /// the sum in the next binding.
    pub fn softmax_where(x: [f32; N, C]) -> [f32; N, C] {
        let y[n, c] = e / s where m = max[j](x[n, j]), e = exp(x[n, c] - m), s = sum[k](exp(x[n, k] - m));
        y
    }

    /// Log-sum-exp of a vector, the maximum written twice.
    pub fn logsumexp(x: [f64; N]) -> f64 {
        let z = std::math::ln(sum[i](exp(x[i] - max[j](x[j])))) + max[j](x[j]);
        z
    }

    /// Every row scaled by the sum over the whole matrix of a row maximum
    /// (a reduction two levels inside another, invariant in both).
    pub fn nested(x: [f64; N, C]) -> [f64; N, C] {
        let y[n, c] = x[n, c] / sum[i, k](exp(x[i, k] - max[j](x[n, j]) - max[p, q](x[p, q])));
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

fn softmax_reference(x: &Array2<f32>) -> Array2<f32> {
    let mut y = x.clone();
    for mut row in y.rows_mut() {
        let m = row.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        row.mapv_inplace(|v| (v - m).exp());
        let total: f32 = row.sum();
        row.mapv_inplace(|v| v / total);
    }
    y
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(32))]

    /// Every way of writing softmax, the log-sum-exp and the nested
    /// reductions agree with plain loops on random shapes and data.
    #[test]
    fn forms_agree_with_loops(n in 1usize..7, c in 1usize..40, seed in 0u64..1000) {
        let x = Array2::from_shape_fn((n, c), |(i, j)| (((i * 31 + j * 17) as u64 * 2654435761 + seed) % 1000) as f64 / 125.0 - 4.0);
        let xf = x.mapv(|v| v as f32);
        let want = softmax_reference(&xf);
        for got in [
            softmax_rows(&xf).unwrap(),
            softmax_inline(&xf).unwrap(),
            softmax_mixed(&xf).unwrap(),
            softmax_where(&xf).unwrap(),
        ] {
            for (g, w) in got.iter().zip(want.iter()) {
                proptest::prop_assert!((g - w).abs() <= 1e-5 * (1.0 + w.abs()), "{g} vs {w}");
            }
        }
        let v = x.row(0).to_owned();
        let m = v.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let lse = v.iter().map(|x| (x - m).exp()).sum::<f64>().ln() + m;
        proptest::prop_assert!((logsumexp(&v).unwrap() - lse).abs() <= 1e-12 * (1.0 + lse.abs()));
        let got = nested(&x).unwrap();
        let all = x.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        for i in 0..n {
            let rm = x.row(i).iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let total: f64 = x.iter().map(|v| (v - rm - all).exp()).sum();
            for j in 0..c {
                let w = x[[i, j]] / total;
                proptest::prop_assert!((got[[i, j]] - w).abs() <= 1e-9 * (1.0 + w.abs()), "{} vs {w}", got[[i, j]]);
            }
        }
    }
}

#[test]
fn invariant_guards_match_a_loop() {
    let a = data(5, 4);
    for s in [-1i64, 0, 2, 5, 9] {
        let want = Array1::from_shape_fn(5, |i| {
            if (i as i64) < s {
                return 0.0;
            }
            (1..4).map(|k| a[[i, k]] * 2.0).sum()
        });
        let got = guarded_rows(&a, s).unwrap();
        for (g, w) in got.iter().zip(&want) {
            assert!((g - w).abs() <= 1e-12 * (1.0 + w.abs()), "s = {s}: {got} vs {want}");
        }
    }
}
