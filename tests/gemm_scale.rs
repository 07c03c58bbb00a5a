//! Products multiplied by a scalar that does not depend on the point
//! (`sum[d](q[h, i, d] * k[h, j, d]) / 8.0`, `* s`, `0.3 * sum[..](..)`),
//! which `opt::gemm` folds into the product (`Gemm::scale`), against the
//! same products unscaled and then scaled (the same bits), and against
//! naive loops in `f64`, on odd shapes (1, 7, primes, empty, sums of more
//! than one block of the kernels' 256 terms), transposed operands, a
//! batch, `f32` and `f64`, on 1 to 3 threads; a division by a number that
//! is not a power of two (not folded) too. The `checked` feature runs the
//! reference loops instead, with the same bits against the unscaled form.

mod gemm_support;

use einlang::einlang;
use einlang::ndarray::{Array2, Array3};
use gemm_support::{close, f32s, on_threads, values};

einlang! {
    pub fn scores(q: [f32; B, N, D], k: [f32; B, M, D]) -> [f32; B, N, M] {
        let s[b, i, j] = sum[d](q[b, i, d] * k[b, j, d]);
        s
    }

    pub fn scores_by_8(q: [f32; B, N, D], k: [f32; B, M, D]) -> [f32; B, N, M] {
        let s[b, i, j] = sum[d](q[b, i, d] * k[b, j, d]) / 8.0;
        s
    }

    pub fn mm(a: [f64; M, K], b: [f64; K, N]) -> [f64; M, N] {
        let c[i, j] = sum[k](a[i, k] * b[k, j]);
        c
    }

    pub fn mm_times(a: [f64; M, K], b: [f64; K, N], s: f64) -> [f64; M, N] {
        let c[i, j] = sum[k](a[i, k] * b[k, j]) * s;
        c
    }

    pub fn mm32(a: [f32; M, K], b: [f32; K, N]) -> [f32; M, N] {
        let c[i, j] = sum[k](a[i, k] * b[k, j]);
        c
    }

    pub fn mm32_left(a: [f32; M, K], b: [f32; K, N]) -> [f32; M, N] {
        let c[i, j] = 0.3 * sum[k](a[i, k] * b[k, j]);
        c
    }

    pub fn mm32_by_3(a: [f32; M, K], b: [f32; K, N]) -> [f32; M, N] {
        let c[i, j] = sum[k](a[i, k] * b[k, j]) / 3.0;
        c
    }

    pub fn attention(q: [f32; H, N, D], k: [f32; H, M, D], v: [f32; H, M, E]) -> [f32; H, N, E] {
        let s[h, i, j] = sum[d](q[h, i, d] * k[h, j, d]) / 8.0;
        let m[h, i] = max[j](s[h, i, j]);
        let e[h, i, j] = std::math::exp(s[h, i, j] - m[h, i]);
        let z[h, i] = sum[j](e[h, i, j]);
        let y[h, i, d] = sum[j](e[h, i, j] * v[h, j, d]) / z[h, i];
        y
    }
}

/// `[rows, terms, cols]`: units, 7, primes, empty extents, and sums of
/// one to three blocks of 256 terms.
const SHAPES: &[[usize; 3]] =
    &[[1, 1, 1], [7, 7, 7], [13, 5, 37], [29, 300, 41], [24, 513, 64], [0, 3, 5], [4, 0, 3], [3, 2, 0]];

#[test]
fn scaled_batched_scores_are_the_scores_divided_in_every_bit() {
    on_threads(|| {
        for &[n, d, m] in SHAPES {
            for b in [1, 3] {
                let q = Array3::from_shape_vec((b, n, d), f32s(b * n * d, 1)).unwrap();
                let k = Array3::from_shape_vec((b, m, d), f32s(b * m * d, 2)).unwrap();
                let got = scores_by_8(&q, &k).unwrap();
                let plain = scores(&q, &k).unwrap();
                assert_eq!(got, plain.mapv(|v| v / 8.0), "{b}x{n}x{d}x{m}");
                let want = Array3::from_shape_fn((b, n, m), |(h, i, j)| {
                    (0..d).map(|p| q[[h, i, p]] as f64 * k[[h, j, p]] as f64).sum::<f64>() / 8.0
                });
                close(&got.mapv(f64::from), &want, 1e-5, &format!("scores / 8, {b}x{n}x{d}x{m}"));
            }
        }
    });
}

#[test]
fn products_times_a_scalar_are_the_products_scaled_in_every_bit() {
    on_threads(|| {
        for &[m, k, n] in SHAPES {
            let a = Array2::from_shape_vec((m, k), values(m * k, 3)).unwrap();
            let bt = Array2::from_shape_vec((n, k), values(n * k, 4)).unwrap();
            // A transposed right operand.
            let b = bt.t().to_owned();
            for s in [0.3, -2.5, 0.125] {
                let got = mm_times(&a, &bt.t(), s).unwrap();
                assert_eq!(got, mm(&a, &b).unwrap().mapv(|v| v * s), "{m}x{k}x{n} * {s}");
                let want =
                    Array2::from_shape_fn((m, n), |(i, j)| (0..k).map(|p| a[[i, p]] * b[[p, j]]).sum::<f64>() * s);
                close(&got, &want, 1e-12, &format!("{m}x{k}x{n} * {s}"));
                // Into a transposed buffer.
                let mut out = Array2::<f64>::from_elem((n, m), f64::NAN);
                let mut view = out.view_mut().reversed_axes();
                mm_times_into(&a, &b, s, &mut view).unwrap();
                assert_eq!(view, got, "{m}x{k}x{n} * {s} into a transposed view");
            }
            let (a32, b32) = (a.mapv(|v| v as f32), b.mapv(|v| v as f32));
            let plain = mm32(&a32, &b32).unwrap();
            assert_eq!(mm32_left(&a32, &b32).unwrap(), plain.mapv(|v| 0.3 * v), "0.3 * {m}x{k}x{n}");
            // Not folded (`x / 3` is not `x * (1 / 3)`), the same bits all the same.
            assert_eq!(mm32_by_3(&a32, &b32).unwrap(), plain.mapv(|v| v / 3.0), "{m}x{k}x{n} / 3");
            let mut out = Array2::<f32>::from_elem((m, n), f32::NAN);
            mm32_left_into(&a32, &b32, &mut out).unwrap();
            assert_eq!(out, plain.mapv(|v| 0.3 * v), "0.3 * {m}x{k}x{n} into");
        }
    });
}

#[test]
fn attention_with_its_scale_folded_matches_loops() {
    on_threads(|| {
        for &[h, n, m, d, e] in &[[1, 1, 1, 1, 1], [2, 7, 13, 5, 3], [3, 17, 29, 64, 11], [1, 0, 3, 4, 2]] {
            let q = Array3::from_shape_vec((h, n, d), f32s(h * n * d, 5)).unwrap();
            let k = Array3::from_shape_vec((h, m, d), f32s(h * m * d, 6)).unwrap();
            let v = Array3::from_shape_vec((h, m, e), f32s(h * m * e, 7)).unwrap();
            let got = attention(&q, &k, &v).unwrap().mapv(f64::from);
            let mut want = Array3::<f64>::zeros((h, n, e));
            for p in 0..h {
                for i in 0..n {
                    let s: Vec<f64> = (0..m)
                        .map(|j| (0..d).map(|t| q[[p, i, t]] as f64 * k[[p, j, t]] as f64).sum::<f64>() / 8.0)
                        .collect();
                    let top = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                    let w: Vec<f64> = s.iter().map(|x| (x - top).exp()).collect();
                    let z: f64 = w.iter().sum();
                    for c in 0..e {
                        want[[p, i, c]] = (0..m).map(|j| w[j] * v[[p, j, c]] as f64).sum::<f64>() / z;
                    }
                }
            }
            close(&got, &want, 1e-5, &format!("attention {h}x{n}x{m}x{d}x{e}"));
        }
    });
}
