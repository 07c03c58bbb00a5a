//! Product-shaped kernels against naive loops on odd shapes (extents 1, 7,
//! primes, empty), on 1, 2 and 3 threads: a product whose output leads
//! with a column of one operand (`y[n, o, i, j] = sum[c](k[o, c] * x[n, c,
//! i, j])`, a 1x1 convolution: a batched product with the weights shared,
//! made in the definition's own order, see `opt::pack`), with two leading
//! columns, with the operands the other way round, with a bias and ReLU
//! after it; batched attention scores `q k^T`; attention; a dense layer
//! with bias and ReLU; skinny products. The `checked` feature runs the
//! reference loops instead.

mod gemm_support;

use einlang::einlang;
use einlang::ndarray::{Array1, Array2, Array3, Array4};
use gemm_support::{close, f32s, on_threads, values};

einlang! {
    pub fn conv1x1(x: [f32; N, C, H, W], k: [f32; O, C]) -> [f32; N, O, H, W] {
        let y[n, o, h, w] = sum[c](k[o, c] * x[n, c, h, w]);
        y
    }

    /// The operands the other way round, one spatial axis.
    pub fn conv1x1_swapped(x: [f64; N, C, L], k: [f64; O, C]) -> [f64; N, O, L] {
        let y[n, o, t] = sum[c](x[n, c, t] * k[o, c]);
        y
    }

    /// Two leading columns.
    pub fn two_leading(x: [f64; A, B, C, L], k: [f64; O, C]) -> [f64; A, B, O, L] {
        let y[a, b, o, t] = sum[c](k[o, c] * x[a, b, c, t]);
        y
    }

    /// A bias and ReLU after the product.
    pub fn conv1x1_relu(x: [f32; N, C, H, W], k: [f32; O, C], b: [f32; O]) -> [f32; N, O, H, W] {
        let y[n, o, h, w] = max(sum[c](k[o, c] * x[n, c, h, w]) + b[o], 0.0);
        y
    }

    pub fn scores(q: [f32; B, N, D], k: [f32; B, M, D]) -> [f32; B, N, M] {
        let s[b, i, j] = sum[d](q[b, i, d] * k[b, j, d]);
        s
    }

    pub fn attention(q: [f64; H, N, D], k: [f64; H, M, D], v: [f64; H, M, E]) -> [f64; H, N, E] {
        let s[h, i, j] = sum[d](q[h, i, d] * k[h, j, d]) / 8.0;
        let m[h, i] = max[j](s[h, i, j]);
        let e[h, i, j] = std::math::exp(s[h, i, j] - m[h, i]);
        let z[h, i] = sum[j](e[h, i, j]);
        let y[h, i, d] = sum[j](e[h, i, j] * v[h, j, d]) / z[h, i];
        y
    }

    pub fn dense_relu(x: [f32; B, I], w: [f32; I, O], b: [f32; O]) -> [f32; B, O] {
        let y[n, j] = if z > 0.0 { z } else { 0.0 } where z = sum[i](x[n, i] * w[i, j]) + b[j];
        y
    }

    pub fn matmul(a: [f32; M, K], b: [f32; K, N]) -> [f32; M, N] {
        let c[i, j] = sum[k](a[i, k] * b[k, j]);
        c
    }
}

const SHAPES: &[[usize; 4]] = &[[1, 1, 1, 1], [2, 7, 3, 5], [3, 13, 1, 17], [0, 4, 3, 3], [2, 0, 3, 3], [1, 5, 0, 2]];

#[test]
fn a_1x1_convolution_matches_loops() {
    on_threads(|| {
        for &[n, c, hw, o] in SHAPES {
            let (h, w) = (hw, hw + 2);
            let x = Array4::from_shape_vec((n, c, h, w), f32s(n * c * h * w, 1)).unwrap();
            let k = Array2::from_shape_vec((o, c), f32s(o * c, 2)).unwrap();
            let b = Array1::from_vec(f32s(o, 3));
            let want = Array4::from_shape_fn((n, o, h, w), |(i, p, y, z)| {
                (0..c).map(|q| k[[p, q]] as f64 * x[[i, q, y, z]] as f64).sum::<f64>()
            });
            let got = conv1x1(&x, &k).unwrap().mapv(f64::from);
            close(&got, &want, 1e-5, &format!("conv1x1 {n}x{c}x{h}x{w} -> {o}"));
            let relu = conv1x1_relu(&x, &k, &b).unwrap().mapv(f64::from);
            let want_relu =
                Array4::from_shape_fn(want.raw_dim(), |(i, p, y, z)| (want[[i, p, y, z]] + b[p] as f64).max(0.0));
            close(&relu, &want_relu, 1e-5, &format!("conv1x1 + bias + ReLU {n}x{c}x{h}x{w} -> {o}"));
            // Into a transposed buffer of the result's shape.
            let mut out = Array4::<f32>::from_elem((w, h, o, n), f32::NAN);
            let mut view = out.view_mut().reversed_axes();
            conv1x1_into(&x, &k, &mut view).unwrap();
            close(&view.mapv(f64::from), &want, 1e-5, "conv1x1_into");
        }
    });
}

#[test]
fn leading_columns_in_either_operand_order_match_loops() {
    on_threads(|| {
        for &[n, c, l, o] in SHAPES {
            let x = Array3::from_shape_vec((n, c, l), values(n * c * l, 4)).unwrap();
            let k = Array2::from_shape_vec((o, c), values(o * c, 5)).unwrap();
            let want =
                Array3::from_shape_fn((n, o, l), |(i, p, t)| (0..c).map(|q| x[[i, q, t]] * k[[p, q]]).sum::<f64>());
            close(&conv1x1_swapped(&x, &k).unwrap(), &want, 1e-12, "swapped");
            let (a, bb) = (n, 2);
            let x4 = Array4::from_shape_vec((a, bb, c, l), values(a * bb * c * l, 6)).unwrap();
            let want4 = Array4::from_shape_fn((a, bb, o, l), |(i, j, p, t)| {
                (0..c).map(|q| k[[p, q]] * x4[[i, j, q, t]]).sum::<f64>()
            });
            close(&two_leading(&x4, &k).unwrap(), &want4, 1e-12, "two leading columns");
        }
    });
}

#[test]
fn batched_scores_and_attention_match_loops() {
    on_threads(|| {
        for &[b, n, m, d] in &[[1, 1, 1, 1], [3, 7, 5, 2], [2, 17, 13, 11], [0, 3, 3, 3], [2, 3, 0, 4], [2, 3, 4, 0]] {
            let q = Array3::from_shape_vec((b, n, d), f32s(b * n * d, 7)).unwrap();
            let k = Array3::from_shape_vec((b, m, d), f32s(b * m * d, 8)).unwrap();
            let want = Array3::from_shape_fn((b, n, m), |(p, i, j)| {
                (0..d).map(|e| q[[p, i, e]] as f64 * k[[p, j, e]] as f64).sum::<f64>()
            });
            close(&scores(&q, &k).unwrap().mapv(f64::from), &want, 1e-5, "scores");
            if m == 0 {
                continue;
            }
            let e_len = d + 1;
            let (qd, kd) = (q.mapv(f64::from), k.mapv(f64::from));
            let v = Array3::from_shape_vec((b, m, e_len), values(b * m * e_len, 9)).unwrap();
            let want = Array3::from_shape_fn((b, n, e_len), |(p, i, t)| {
                let s: Vec<f64> =
                    (0..m).map(|j| (0..d).map(|e| qd[[p, i, e]] * kd[[p, j, e]]).sum::<f64>() / 8.0).collect();
                let mx = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let z: f64 = s.iter().map(|x| (x - mx).exp()).sum();
                (0..m).map(|j| (s[j] - mx).exp() * v[[p, j, t]]).sum::<f64>() / z
            });
            close(&attention(&qd, &kd, &v).unwrap(), &want, 1e-12, "attention");
        }
    });
}

#[test]
fn dense_layers_and_skinny_products_match_loops() {
    on_threads(|| {
        for &[m, k, n] in
            &[[1, 1, 1], [1, 37, 29], [4, 31, 67], [8, 7, 41], [7, 13, 1], [0, 5, 3], [3, 0, 5], [23, 41, 37]]
        {
            let a = Array2::from_shape_vec((m, k), f32s(m * k, 10)).unwrap();
            let w = Array2::from_shape_vec((k, n), f32s(k * n, 11)).unwrap();
            let bias = Array1::from_vec(f32s(n, 12));
            let prod = Array2::from_shape_fn((m, n), |(i, j)| {
                (0..k).map(|p| a[[i, p]] as f64 * w[[p, j]] as f64).sum::<f64>()
            });
            close(&matmul(&a, &w).unwrap().mapv(f64::from), &prod, 1e-5, "matmul");
            let want = Array2::from_shape_fn((m, n), |(i, j)| (prod[[i, j]] + bias[j] as f64).max(0.0));
            close(&dense_relu(&a, &w, &bias).unwrap().mapv(f64::from), &want, 1e-5, "dense + bias + ReLU");
        }
    });
}
