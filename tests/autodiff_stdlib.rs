//! Gradients through the standard library's layers (`std::ml`):
//! convolutions (strided, padded, dilated, with batch axes), pooling,
//! normalizations and attention, each against central finite differences
//! of the same library function called without `@` (so the reference
//! differentiates exactly the program asked of). Softmax, cross-entropy,
//! layer norm, max pooling and the activations are in `autodiff.rs`.

mod autodiff_support;
mod common;

#[allow(unused_imports)]
use autodiff_support::*;
#[allow(unused_imports)]
use einlang::ndarray::{Array, Array1, Array2, Array3, Array4, ArrayD, Dimension, IxDyn, ShapeBuilder};

mod conv {
    use super::*;
    use einlang::einlang;

    einlang! {
        use std::ml::{conv2d, conv2d_padded, conv2d_stride2, avg_pool2d, avg_pool2d_stride2, global_average_pool};

        // The general convolution: batch axis, stride 2, padding 1,
        // dilation 1; the loss weighs every output differently.
        pub fn p_conv(x: [f64; N, C, H, W], k: [f64; O, C, KH, KW], b: [f64; O], t: [f64; N, O, 3, 3]) -> f64 {
            let y = conv2d(x, k, b, 2, 2, 1, 1, 1, 1);
            sum[n, o, i, j](y[n, o, i, j] * t[n, o, i, j])
        }
        pub fn g_conv(x: [f64; N, C, H, W], k: [f64; O, C, KH, KW], b: [f64; O], t: [f64; N, O, 3, 3])
            -> ([f64; N, C, H, W], [f64; O, C, KH, KW], [f64; O]) {
            let y = conv2d(x, k, b, 2, 2, 1, 1, 1, 1);
            let l = sum[n, o, i, j](y[n, o, i, j] * t[n, o, i, j]);
            (@l / @x, @l / @k, @l / @b)
        }

        // Stride 1, padding and dilation 2, squared outputs.
        pub fn p_dilated(x: [f64; C, H, W], k: [f64; O, C, KH, KW], b: [f64; O]) -> f64 {
            let y = conv2d_padded(x, k, b, 1, 2, 2, 1);
            sum[o, i, j](y[o, i, j] * y[o, i, j])
        }
        pub fn g_dilated(x: [f64; C, H, W], k: [f64; O, C, KH, KW], b: [f64; O])
            -> ([f64; C, H, W], [f64; O, C, KH, KW]) {
            let y = conv2d_padded(x, k, b, 1, 2, 2, 1);
            let l = sum[o, i, j](y[o, i, j] * y[o, i, j]);
            (@l / @x, @l / @k)
        }

        // Stride 2 through a zero-padded copy.
        pub fn p_stride2(x: [f64; C, H, W], k: [f64; O, C, KH, KW], b: [f64; O]) -> f64 {
            let y = conv2d_stride2(x, k, b, 1, 1);
            sum[o, i, j](y[o, i, j] * y[o, i, j] * (1.0 + 0.1 * o as f64))
        }
        pub fn g_stride2(x: [f64; C, H, W], k: [f64; O, C, KH, KW], b: [f64; O])
            -> ([f64; C, H, W], [f64; O, C, KH, KW], [f64; O]) {
            let y = conv2d_stride2(x, k, b, 1, 1);
            let l = sum[o, i, j](y[o, i, j] * y[o, i, j] * (1.0 + 0.1 * o as f64));
            (@l / @x, @l / @k, @l / @b)
        }

        // Grouped convolutions through `std::ml::conv`, 1-D and 3-D:
        // channel `(o / filters per group) * channels per group + c`.
        pub fn p_grouped(x1: [f64; N, C, L], w1: [f64; M, G, K], b: [f64; M], x3: [f64; N, C, D, E, F], w3: [f64; M, G, 2, 2, 2]) -> f64 {
            let y1 = std::ml::conv(x1, w1, b, [2], [1, 0], [1], 2);
            let y3 = std::ml::conv(x3, w3, b, [1, 1, 1], [0, 1, 0, 0, 0, 1], [1, 1, 1], 2);
            sum[n, m, i](y1[n, m, i] ** 2) + sum[n, m, i, j, k](y3[n, m, i, j, k] * (1.0 + 0.1 * j as f64))
        }
        pub fn g_grouped(x1: [f64; N, C, L], w1: [f64; M, G, K], b: [f64; M], x3: [f64; N, C, D, E, F], w3: [f64; M, G, 2, 2, 2])
            -> ([f64; N, C, L], [f64; M, G, K], [f64; M], [f64; N, C, D, E, F], [f64; M, G, 2, 2, 2]) {
            let y1 = std::ml::conv(x1, w1, b, [2], [1, 0], [1], 2);
            let y3 = std::ml::conv(x3, w3, b, [1, 1, 1], [0, 1, 0, 0, 0, 1], [1, 1, 1], 2);
            let l = sum[n, m, i](y1[n, m, i] ** 2) + sum[n, m, i, j, k](y3[n, m, i, j, k] * (1.0 + 0.1 * j as f64));
            (@l / @x1, @l / @w1, @l / @b, @l / @x3, @l / @w3)
        }

        // Pooling: overlapping windows, strided windows, global means.
        pub fn p_pools(x: [f64; C, H, W]) -> f64 {
            let a = avg_pool2d(x, 2, 3);
            let s = avg_pool2d_stride2(x, 2, 2);
            let g = global_average_pool(x);
            sum[c, i, j](a[c, i, j] ** 2) + sum[c, i, j](s[c, i, j] ** 3) + sum[c](g[c] * (c as f64 + 1.0))
        }
        pub fn g_pools(x: [f64; C, H, W]) -> [f64; C, H, W] {
            let a = avg_pool2d(x, 2, 3);
            let s = avg_pool2d_stride2(x, 2, 2);
            let g = global_average_pool(x);
            let l = sum[c, i, j](a[c, i, j] ** 2) + sum[c, i, j](s[c, i, j] ** 3) + sum[c](g[c] * (c as f64 + 1.0));
            @l / @x
        }
    }

    #[test]
    fn strided_padded_convolution_with_a_batch() {
        let (x, k, b) = (rand((2, 3, 6, 5), 2000), rand((4, 3, 3, 3), 2001), rand(4, 2002));
        let t = rand((2, 4, 3, 3), 2003);
        let (gx, gk, gb) = g_conv(&x, &k, &b, &t).unwrap();
        assert_grad("d/dx", &gx, &fd_grad(&x, |x| p_conv(x, &k, &b, &t).unwrap()), FD_TOL);
        assert_grad("d/dk", &gk, &fd_grad(&k, |k| p_conv(&x, k, &b, &t).unwrap()), FD_TOL);
        assert_grad("d/db", &gb, &fd_grad(&b, |b| p_conv(&x, &k, b, &t).unwrap()), FD_TOL);
    }

    #[test]
    fn dilated_padded_convolution() {
        let (x, k, b) = (rand((2, 7, 6), 2010), rand((3, 2, 3, 2), 2011), rand(3, 2012));
        let (gx, gk) = g_dilated(&x, &k, &b).unwrap();
        assert_grad("d/dx", &gx, &fd_grad(&x, |x| p_dilated(x, &k, &b).unwrap()), FD_TOL);
        assert_grad("d/dk", &gk, &fd_grad(&k, |k| p_dilated(&x, k, &b).unwrap()), FD_TOL);
    }

    #[test]
    fn stride_two_convolution() {
        let (x, k, b) = (rand((2, 7, 8), 2020), rand((3, 2, 3, 3), 2021), rand(3, 2022));
        let (gx, gk, gb) = g_stride2(&x, &k, &b).unwrap();
        assert_grad("d/dx", &gx, &fd_grad(&x, |x| p_stride2(x, &k, &b).unwrap()), FD_TOL);
        assert_grad("d/dk", &gk, &fd_grad(&k, |k| p_stride2(&x, k, &b).unwrap()), FD_TOL);
        assert_grad("d/db", &gb, &fd_grad(&b, |b| p_stride2(&x, &k, b).unwrap()), FD_TOL);
    }

    #[test]
    fn grouped_convolutions_in_one_and_three_dimensions() {
        let (x1, w1, b) = (rand((2, 4, 7), 2070), rand((6, 2, 3), 2071), rand(6, 2072));
        let (x3, w3) = (rand((2, 4, 3, 3, 4), 2073), rand((6, 2, 2, 2, 2), 2074));
        let p = |x1: &Array<f64, _>, w1: &Array<f64, _>, b: &Array1<f64>, x3: &Array<f64, _>, w3: &Array<f64, _>| {
            p_grouped(x1, w1, b, x3, w3).unwrap()
        };
        let (g1, gw1, gb, g3, gw3) = g_grouped(&x1, &w1, &b, &x3, &w3).unwrap();
        assert_grad("d/dx1", &g1, &fd_grad(&x1, |x| p(x, &w1, &b, &x3, &w3)), FD_TOL);
        assert_grad("d/dw1", &gw1, &fd_grad(&w1, |w| p(&x1, w, &b, &x3, &w3)), FD_TOL);
        assert_grad("d/db", &gb, &fd_grad(&b, |b| p(&x1, &w1, b, &x3, &w3)), FD_TOL);
        assert_grad("d/dx3", &g3, &fd_grad(&x3, |x| p(&x1, &w1, &b, x, &w3)), FD_TOL);
        assert_grad("d/dw3", &gw3, &fd_grad(&w3, |w| p(&x1, &w1, &b, &x3, w)), FD_TOL);
    }

    #[test]
    fn pooling() {
        let x = rand((2, 6, 7), 2030);
        assert_grad("d/dx", &g_pools(&x).unwrap(), &fd_grad(&x, |x| p_pools(x).unwrap()), FD_TOL);
    }
}

mod norms {
    use super::*;
    use einlang::einlang;

    einlang! {
        use std::ml::{batch_normalization, instance_normalization, l2_normalize};

        pub fn p_norms(x: [f64; N, C, H, W], s: [f64; C], b: [f64; C], m: [f64; C], v: [f64; C]) -> f64 {
            let i = instance_normalization(x, s, b, 1e-5);
            let flat[n, c] = sum[h, w](x[n, c, h, w]);
            let bn = batch_normalization(flat, s, b, m, v, 1e-3);
            let l2 = l2_normalize(flat, 1e-6);
            sum[n, c, h, w](i[n, c, h, w] * i[n, c, h, w] * (1.0 + 0.1 * h as f64))
                + sum[n, c](bn[n, c] * l2[n, c] * (c as f64 - 1.0))
        }
        pub fn g_norms(x: [f64; N, C, H, W], s: [f64; C], b: [f64; C], m: [f64; C], v: [f64; C])
            -> ([f64; N, C, H, W], [f64; C], [f64; C]) {
            let i = instance_normalization(x, s, b, 1e-5);
            let flat[n, c] = sum[h, w](x[n, c, h, w]);
            let bn = batch_normalization(flat, s, b, m, v, 1e-3);
            let l2 = l2_normalize(flat, 1e-6);
            let l = sum[n, c, h, w](i[n, c, h, w] * i[n, c, h, w] * (1.0 + 0.1 * h as f64))
                + sum[n, c](bn[n, c] * l2[n, c] * (c as f64 - 1.0));
            (@l / @x, @l / @s, @l / @v)
        }
    }

    #[test]
    fn instance_batch_and_l2_normalization() {
        let (x, s, b, m) = (rand((2, 3, 3, 4), 2040), rand(3, 2041), rand(3, 2042), rand(3, 2043));
        let v = rand_in(3, 0.5, 1.5, 2044);
        let (gx, gs, gv) = g_norms(&x, &s, &b, &m, &v).unwrap();
        assert_grad("d/dx", &gx, &fd_grad(&x, |x| p_norms(x, &s, &b, &m, &v).unwrap()), FD_TOL);
        assert_grad("d/ds", &gs, &fd_grad(&s, |s| p_norms(&x, s, &b, &m, &v).unwrap()), FD_TOL);
        assert_grad("d/dv", &gv, &fd_grad(&v, |v| p_norms(&x, &s, &b, &m, v).unwrap()), FD_TOL);
    }
}

mod attention {
    use super::*;
    use einlang::einlang;

    einlang! {
        use std::ml::{attention, multi_head_attention};

        pub fn p_att(q: [f64; B, S, D], k: [f64; B, T, D], v: [f64; B, T, D], w: [f64; B, S, D]) -> f64 {
            let y = attention(q, k, v, 0.5);
            sum[b, i, d](y[b, i, d] * w[b, i, d])
        }
        pub fn g_att(q: [f64; B, S, D], k: [f64; B, T, D], v: [f64; B, T, D], w: [f64; B, S, D])
            -> ([f64; B, S, D], [f64; B, T, D], [f64; B, T, D]) {
            let y = attention(q, k, v, 0.5);
            let l = sum[b, i, d](y[b, i, d] * w[b, i, d]);
            (@l / @q, @l / @k, @l / @v)
        }

        // Two heads and a mask that hides some scores.
        pub fn p_mha(q: [f64; B, S, D], k: [f64; B, T, D], v: [f64; B, T, D], mask: [f64; B, S, T]) -> f64 {
            let y = multi_head_attention(q, k, v, 2, 0.7, mask);
            sum[b, i, d](y[b, i, d] * y[b, i, d])
        }
        pub fn g_mha(q: [f64; B, S, D], k: [f64; B, T, D], v: [f64; B, T, D], mask: [f64; B, S, T])
            -> ([f64; B, S, D], [f64; B, T, D], [f64; B, T, D]) {
            let y = multi_head_attention(q, k, v, 2, 0.7, mask);
            let l = sum[b, i, d](y[b, i, d] * y[b, i, d]);
            (@l / @q, @l / @k, @l / @v)
        }
    }

    #[test]
    fn scaled_dot_product_attention() {
        let (q, k, v) = (rand((2, 3, 4), 2050), rand((2, 5, 4), 2051), rand((2, 5, 4), 2052));
        let w = rand((2, 3, 4), 2053);
        let (gq, gk, gv) = g_att(&q, &k, &v, &w).unwrap();
        assert_grad("d/dq", &gq, &fd_grad(&q, |q| p_att(q, &k, &v, &w).unwrap()), FD_TOL);
        assert_grad("d/dk", &gk, &fd_grad(&k, |k| p_att(&q, k, &v, &w).unwrap()), FD_TOL);
        assert_grad("d/dv", &gv, &fd_grad(&v, |v| p_att(&q, &k, v, &w).unwrap()), FD_TOL);
    }

    #[test]
    fn masked_multi_head_attention() {
        let (q, k, v) = (rand((2, 3, 4), 2060), rand((2, 5, 4), 2061), rand((2, 5, 4), 2062));
        let mask = Array3::from_shape_fn((2, 3, 5), |(b, i, j)| if (b + i + j) % 3 == 0 { 0.0 } else { 1.0 });
        let (gq, gk, gv) = g_mha(&q, &k, &v, &mask).unwrap();
        assert_grad("d/dq", &gq, &fd_grad(&q, |q| p_mha(q, &k, &v, &mask).unwrap()), FD_TOL);
        assert_grad("d/dk", &gk, &fd_grad(&k, |k| p_mha(&q, k, &v, &mask).unwrap()), FD_TOL);
        assert_grad("d/dv", &gv, &fd_grad(&v, |v| p_mha(&q, &k, v, &mask).unwrap()), FD_TOL);
    }
}
