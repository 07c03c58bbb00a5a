//! Property tests: generated kernels agree with the naive references on
//! random shapes (1..=12 per dimension), random data and random layouts.
//! Case counts are modest so the suite stays fast.

mod common;

use common::*;
use einlang::einlang;
use einlang::ndarray::{Array1, Array2, Array3, Array4};
use proptest::prelude::*;

einlang! {
    use std::math::exp;

    pub fn matmul(a: [f32; M, K], b: [f32; K, N]) -> [f32; M, N] {
        let c[i, j] = sum[k](a[i, k] * b[k, j]);
        c
    }

    pub fn conv2d(img: [f32; C, H, W], k: [f32; O, C, KH, KW], b: [f32; O]) -> [f32; O, H - KH + 1, W - KW + 1] {
        let out[o, y, x] = sum[c, r, s](img[c, iy, ix] * k[o, c, r, s]) + b[o] where iy = y + r, ix = x + s;
        out
    }

    pub fn softmax(x: [f32; N, C]) -> [f32; N, C] {
        let m[n] = max[c](x[n, c]);
        let e[n, c] = exp(x[n, c] - m[n]);
        let y[n, c] = e[n, c] / sum[k](e[n, k]);
        y
    }
}

const CASES: u32 = 32;

fn vec_f32(len: usize, lo: f32, hi: f32) -> impl Strategy<Value = Vec<f32>> {
    prop::collection::vec(lo..hi, len)
}

fn matrix(rows: usize, cols: usize) -> impl Strategy<Value = Array2<f32>> {
    vec_f32(rows * cols, -1.0, 1.0).prop_map(move |v| Array2::from_shape_vec((rows, cols), v).unwrap())
}

/// `(a, b, transpose_a, transpose_b)` for `a: [M, K]`, `b: [K, N]`.
fn matmul_case() -> impl Strategy<Value = (Array2<f32>, Array2<f32>, bool, bool)> {
    (1usize..=12, 1usize..=12, 1usize..=12)
        .prop_flat_map(|(m, k, n)| (matrix(m, k), matrix(k, n), any::<bool>(), any::<bool>()))
}

/// `(img, kernel, bias, channels_last)` with the kernel no larger than the image.
fn conv_case() -> impl Strategy<Value = (Array3<f32>, Array4<f32>, Array1<f32>, bool)> {
    (1usize..=12, 1usize..=12, 1usize..=12, 1usize..=12)
        .prop_flat_map(|(c, h, w, o)| (Just((c, h, w, o)), 1usize..=h, 1usize..=w))
        .prop_flat_map(|((c, h, w, o), kh, kw)| {
            (
                vec_f32(c * h * w, -1.0, 1.0).prop_map(move |v| Array3::from_shape_vec((c, h, w), v).unwrap()),
                vec_f32(o * c * kh * kw, -1.0, 1.0)
                    .prop_map(move |v| Array4::from_shape_vec((o, c, kh, kw), v).unwrap()),
                vec_f32(o, -1.0, 1.0).prop_map(Array1::from_vec),
                any::<bool>(),
            )
        })
}

/// `(x, transposed)`: rows of moderate values shifted by a large per-case offset.
fn softmax_case() -> impl Strategy<Value = (Array2<f32>, bool)> {
    (1usize..=12, 1usize..=12, prop::sample::select(vec![0.0f32, 1000.0, -1000.0, 50.0])).prop_flat_map(
        |(n, c, offset)| {
            (
                vec_f32(n * c, -20.0, 20.0)
                    .prop_map(move |v| Array2::from_shape_vec((n, c), v).unwrap().mapv(|x| x + offset)),
                any::<bool>(),
            )
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    #[test]
    fn matmul_agrees_with_reference((a, b, ta, tb) in matmul_case()) {
        let expected = matmul_ref_f32(a.view(), b.view());
        // Optionally pass column-major views of the same values.
        let at = transposed(&a);
        let bt = transposed(&b);
        let a_in = if ta { at.t() } else { a.view() };
        let b_in = if tb { bt.t() } else { b.view() };
        let c = matmul(a_in, b_in).unwrap();
        assert_close(&c, &expected, 1e-5);
    }

    #[test]
    fn conv2d_agrees_with_reference((img, k, b, channels_last) in conv_case()) {
        let expected = conv2d_ref(img.view(), k.view(), b.view());
        let (c, h, w) = img.dim();
        let (o, _, kh, kw) = k.dim();
        let out = if channels_last {
            let perm = [1, 2, 0];
            let store = permuted_storage3(&img, perm);
            conv2d(store.view().permuted_axes(inverse_perm3(perm)), &k, &b).unwrap()
        } else {
            conv2d(&img, &k, &b).unwrap()
        };
        prop_assert_eq!(out.dim(), (o, h - kh + 1, w - kw + 1), "C={} H={} W={}", c, h, w);
        // Sums of up to 1728 products: allow for f32 rounding in any summation order.
        assert_close(&out, &expected, 5e-4);
    }

    #[test]
    fn softmax_agrees_with_reference((x, transpose) in softmax_case()) {
        let xt = transposed(&x);
        // Either x itself or x viewed through the transpose of its transpose.
        let y = if transpose { softmax(xt.t()).unwrap() } else { softmax(&x).unwrap() };
        prop_assert!(y.iter().all(|v| v.is_finite() && *v >= 0.0), "non-finite or negative entry in {}", y);
        for row in y.outer_iter() {
            prop_assert!((row.sum() - 1.0).abs() < 1e-5, "row sums to {}", row.sum());
        }
        assert_close(&y, &softmax_ref(x.view()), 1e-5);
    }
}
