//! Pipelines over rows indexed by several leading axes (`opt::lead`):
//! softmax over the last axis of a rank-3 or rank-4 tensor, a layer norm
//! over `[B, S, D]`. Checked against plain loops and, bit for bit, against
//! the same rows written at rank two, fresh and into buffers of every
//! layout, on odd and empty extents and on one to three threads.

mod common;

use einlang::einlang;
use einlang::half::f16;
use einlang::ndarray::{Array1, Array2, Array3, Array4, ArrayView2, Axis};
use einlang::Error;

einlang! {
    use std::math::{exp, sqrt};

    pub fn softmax2(x: [f32; N, C]) -> [f32; N, C] {
        let m[n] = max[c](x[n, c]);
        let e[n, c] = exp(x[n, c] - m[n]);
        let y[n, c] = e[n, c] / sum[k](e[n, k]);
        y
    }

    pub fn softmax3(x: [f32; B, N, C]) -> [f32; B, N, C] {
        let m[b, n] = max[c](x[b, n, c]);
        let e[b, n, c] = exp(x[b, n, c] - m[b, n]);
        let y[b, n, c] = e[b, n, c] / sum[k](e[b, n, k]);
        y
    }

    pub fn softmax4(x: [f32; B, H, S, C]) -> [f32; B, H, S, C] {
        let m[b, h, s] = max[c](x[b, h, s, c]);
        let e[b, h, s, c] = exp(x[b, h, s, c] - m[b, h, s]);
        let y[b, h, s, c] = e[b, h, s, c] / sum[k](e[b, h, s, k]);
        y
    }

    pub fn norm3(x: [f64; B, S, D], g: [f64; D], beta: [f64; D]) -> [f64; B, S, D] {
        let mean[b, s] = sum[d](x[b, s, d]) / D as f64;
        let var[b, s] = sum[d]((x[b, s, d] - mean[b, s]) * (x[b, s, d] - mean[b, s])) / D as f64;
        let y[b, s, d] = (x[b, s, d] - mean[b, s]) / sqrt(var[b, s] + 1e-5) * g[d] + beta[d];
        y
    }

    /// Centred rows read by a product over the last axis (a dense layer
    /// over a sequence), and by a later definition: rows that are not the
    /// result keep their axes.
    pub fn centred_dense(x: [f64; B, S, D], w: [f64; D, E]) -> [f64; B, S, E] {
        let mean[b, s] = sum[d](x[b, s, d]) / D as f64;
        let y[b, s, d] = x[b, s, d] - mean[b, s];
        let z[b, s, e] = sum[d](y[b, s, d] * w[d, e]);
        z
    }

    pub fn centred_scaled(x: [f32; B, S, D]) -> [f32; B, S, D] {
        let mean[b, s] = sum[d](x[b, s, d]) / D as f32;
        let y[b, s, d] = x[b, s, d] - mean[b, s];
        let z[b, s, d] = y[b, s, d] * y[b, s, 0];
        z
    }

    /// Half precision rows (computed in `f32`, rounded once).
    pub fn softmax3_half(x: [f16; B, N, C]) -> [f16; B, N, C] {
        let m[b, n] = max[c](x[b, n, c]);
        let e[b, n, c] = exp(x[b, n, c] - m[b, n]);
        let y[b, n, c] = e[b, n, c] / sum[k](e[b, n, k]);
        y
    }

    /// A per-batch shift read by the rows at `b` alone: its axes stay apart.
    pub fn shifted3(x: [f32; B, N, C], t: [f32; B]) -> [f32; B, N, C] {
        let m[b, n] = max[c](x[b, n, c]);
        let y[b, n, c] = exp(x[b, n, c] - m[b, n]) + t[b];
        y
    }
}

fn values(len: usize, seed: u64) -> Vec<f32> {
    (0..len as u64).map(|i| ((i * 2654435761 + seed * 97) % 2001) as f32 / 100.0 - 10.0).collect()
}

/// Softmax of each row of `x` in `f64`.
fn naive_softmax(x: ArrayView2<f32>) -> Array2<f64> {
    let mut y = Array2::zeros(x.dim());
    for (i, row) in x.axis_iter(Axis(0)).enumerate() {
        let m = row.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b)) as f64;
        let total: f64 = row.iter().map(|&v| (v as f64 - m).exp()).sum();
        for (j, &v) in row.iter().enumerate() {
            y[[i, j]] = (v as f64 - m).exp() / total;
        }
    }
    y
}

fn check_softmax3(b: usize, n: usize, c: usize) {
    let x = Array3::from_shape_vec((b, n, c), values(b * n * c, (b * 7 + n * 3 + c) as u64)).unwrap();
    let flat = x.view().into_shape_with_order((b * n, c)).unwrap();
    let rows = softmax2(flat).unwrap();
    let want = naive_softmax(flat);
    let got = softmax3(&x).unwrap();
    assert_eq!(got.dim(), (b, n, c));
    let got_flat: Vec<f32> = got.iter().copied().collect();
    for (g, w) in got_flat.iter().zip(want.iter()) {
        assert!((*g as f64 - w).abs() <= 1e-6 * (1.0 + w.abs()), "{b}x{n}x{c}: {g} vs {w}");
    }
    // The bits of the same rows at rank two.
    assert_eq!(
        got_flat.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        rows.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
    );

    // Into a buffer in standard layout, and into a transposed view.
    let mut out = Array3::<f32>::from_elem((b, n, c), f32::NAN);
    softmax3_into(&x, &mut out).unwrap();
    assert_eq!(
        out.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        got.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
    );
    let mut back = Array3::<f32>::from_elem((c, n, b), f32::NAN);
    let mut view = back.view_mut().reversed_axes();
    softmax3_into(&x, &mut view).unwrap();
    assert_eq!(view, got);
}

#[test]
fn rank_three_softmax_rows_match_loops_and_rank_two() {
    for &(b, n, c) in
        &[(1, 1, 1), (2, 3, 5), (3, 7, 17), (1, 13, 33), (5, 2, 64), (2, 1, 100), (0, 3, 4), (3, 0, 4), (2, 3, 0)]
    {
        check_softmax3(b, n, c);
    }
}

#[test]
fn rank_three_softmax_on_one_to_three_threads() {
    for threads in 1..=3 {
        common::split_small_loops();
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| {
            check_softmax3(4, 129, 37);
            check_softmax3(2, 4096, 16);
        });
    }
}

#[test]
fn rank_four_softmax_rows_match_rank_two() {
    let (b, h, s, c) = (2, 3, 7, 19);
    let x = Array4::from_shape_vec((b, h, s, c), values(b * h * s * c, 5)).unwrap();
    let flat = x.view().into_shape_with_order((b * h * s, c)).unwrap();
    let rows = softmax2(flat).unwrap();
    let want = naive_softmax(flat);
    let got = softmax4(&x).unwrap();
    for ((g, r), w) in got.iter().zip(rows.iter()).zip(want.iter()) {
        assert_eq!(g.to_bits(), r.to_bits());
        assert!((*g as f64 - w).abs() <= 1e-6 * (1.0 + w.abs()));
    }
    let mut out = Array4::<f32>::zeros((b, h, s, c));
    softmax4_into(&x, &mut out).unwrap();
    assert_eq!(out, got);
}

#[test]
fn a_buffer_of_another_shape_is_an_error_naming_out_and_stays_untouched() {
    let x = Array3::from_shape_vec((2, 3, 4), values(24, 1)).unwrap();
    for shape in [(2, 3, 5), (2, 4, 4), (3, 3, 4), (6, 1, 4)] {
        let mut out = Array3::<f32>::from_elem(shape, 7.0);
        match softmax3_into(&x, &mut out) {
            Err(Error::Shape { function, param, .. }) => {
                assert_eq!(function, "softmax3");
                assert_eq!(param, "out");
            }
            other => panic!("{shape:?}: {other:?}"),
        }
        assert!(out.iter().all(|&v| v == 7.0));
    }
    // The axis named is the result's.
    let mut out = Array3::<f32>::zeros((2, 3, 5));
    assert!(matches!(softmax3_into(&x, &mut out), Err(Error::Shape { axis: 2, expected: 4, found: 5, .. })));
}

#[test]
fn layer_norm_over_batch_and_sequence_matches_loops() {
    let (b, s, d) = (3, 5, 11);
    let x = Array3::from_shape_fn((b, s, d), |(i, j, k)| ((i * 131 + j * 17 + k * 7) % 23) as f64 / 5.0 - 2.0);
    let g = Array1::from_shape_fn(d, |k| 0.5 + k as f64 / 10.0);
    let beta = Array1::from_shape_fn(d, |k| k as f64 / 3.0 - 1.0);
    let got = norm3(&x, &g, &beta).unwrap();
    let mut out = Array3::<f64>::zeros((b, s, d));
    norm3_into(&x, &g, &beta, &mut out).unwrap();
    assert_eq!(out, got);
    for i in 0..b {
        for j in 0..s {
            let row: Vec<f64> = (0..d).map(|k| x[[i, j, k]]).collect();
            let mean = row.iter().sum::<f64>() / d as f64;
            let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / d as f64;
            for k in 0..d {
                let want = (row[k] - mean) / (var + 1e-5).sqrt() * g[k] + beta[k];
                assert!((got[[i, j, k]] - want).abs() <= 1e-12 * (1.0 + want.abs()), "{i} {j} {k}");
            }
        }
    }
}

#[test]
fn rows_reading_a_leading_index_alone_keep_their_axes() {
    let (b, n, c) = (3, 4, 9);
    let x = Array3::from_shape_vec((b, n, c), values(b * n * c, 3)).unwrap();
    let t = Array1::from_vec(vec![0.5f32, -1.0, 2.0]);
    let got = shifted3(&x, &t).unwrap();
    for i in 0..b {
        for j in 0..n {
            let m = (0..c).map(|k| x[[i, j, k]]).fold(f32::NEG_INFINITY, f32::max);
            for k in 0..c {
                let want = (x[[i, j, k]] - m).exp() + t[i];
                assert!((got[[i, j, k]] - want).abs() <= 1e-6 * (1.0 + want.abs()));
            }
        }
    }
}

#[test]
fn merged_rows_read_by_a_product_match_loops() {
    for &(b, s, d, e) in &[(2, 3, 5, 4), (1, 7, 16, 9), (3, 1, 1, 2), (0, 2, 3, 4)] {
        let x = Array3::from_shape_fn((b, s, d), |(i, j, k)| ((i * 37 + j * 11 + k * 5) % 19) as f64 / 4.0 - 2.0);
        let w = Array2::from_shape_fn((d, e), |(k, o)| ((k * 7 + o * 3) % 11) as f64 / 5.0 - 1.0);
        let got = centred_dense(&x, &w).unwrap();
        assert_eq!(got.dim(), (b, s, e));
        for i in 0..b {
            for j in 0..s {
                let mean = (0..d).map(|k| x[[i, j, k]]).sum::<f64>() / d as f64;
                for o in 0..e {
                    let want: f64 = (0..d).map(|k| (x[[i, j, k]] - mean) * w[[k, o]]).sum();
                    assert!((got[[i, j, o]] - want).abs() <= 1e-12 * (1.0 + want.abs()), "{i} {j} {o}");
                }
            }
        }
        let xf = x.mapv(|v| v as f32);
        let scaled = centred_scaled(&xf).unwrap();
        for i in 0..b {
            for j in 0..s {
                let mean = (0..d).map(|k| xf[[i, j, k]]).sum::<f32>() / d as f32;
                for k in 0..d {
                    let want = (xf[[i, j, k]] - mean) * (xf[[i, j, 0]] - mean);
                    assert!((scaled[[i, j, k]] - want).abs() <= 1e-5 * (1.0 + want.abs()), "{i} {j} {k}");
                }
            }
        }
    }
}

#[test]
fn half_precision_rows_over_two_leading_axes_match_loops() {
    let (b, n, c) = (3, 5, 21);
    let x32 = Array3::from_shape_vec((b, n, c), values(b * n * c, 9)).unwrap().mapv(|v| v / 4.0);
    let x = x32.mapv(f16::from_f32);
    let got = softmax3_half(&x).unwrap();
    let mut out = Array3::<f16>::from_elem((b, n, c), f16::NAN);
    softmax3_half_into(&x, &mut out).unwrap();
    assert_eq!(
        out.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        got.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
    );
    let flat = x.mapv(f32::from).into_shape_with_order((b * n, c)).unwrap();
    let want = naive_softmax(flat.view());
    for (g, w) in got.iter().zip(want.iter()) {
        // Each exponential and the quotient rounded to `f16`.
        assert!((f32::from(*g) as f64 - w).abs() <= 4.0 * 2f64.powi(-11) * w.abs() + 1e-7, "{g} vs {w}");
    }
}
