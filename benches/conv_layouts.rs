//! Convolutions written channels last (`x[n, i + r, j + s, c]`, filters
//! `[r, s, c, o]`, result `[n, i, j, o]`), which `opt::conv_layout` runs on
//! the direct kernel through permuted copies, against the same arithmetic
//! written channels first (the kernel on the caller's layout, no copies),
//! timed in alternation on the same data: valid with a bias, padded by a
//! guard with a ReLU, stride 2 with padding 1. The shapes are the conv
//! bench's (N=8, 56x56, 64 channels, 64 filters; 32x32, 32 channels).
//! `benches/python/compare_onnx.py --only "channels last"` times
//! onnxruntime's `Transpose`, `Conv`, `Transpose` on the same shapes.
//!
//! Each result is checked against the channels-first form first.

mod common;

use std::hint::black_box;

use einlang::einlang;
use einlang::ndarray::{Array1, Array4};

einlang! {
    pub fn nhwc_valid(x: [f32; N, H, W, C], k: [f32; 3, 3, C, O], b: [f32; O]) -> [f32; N, H - 2, W - 2, O] {
        let y[n, i, j, o] = sum[r, s, c](x[n, i + r, j + s, c] * k[r, s, c, o]) + b[o];
        y
    }

    pub fn nchw_valid(x: [f32; N, C, H, W], k: [f32; O, C, 3, 3], b: [f32; O]) -> [f32; N, O, H - 2, W - 2] {
        let y[n, o, i, j] = sum[c, r, s](x[n, c, i + r, j + s] * k[o, c, r, s]) + b[o];
        y
    }

    pub fn nhwc_same_relu(x: [f32; N, H, W, C], k: [f32; 3, 3, C, O], b: [f32; O]) -> [f32; N, H, W, O] {
        let y[n, i in 0..H, j in 0..W, o] = max(sum[c, r, s](
            if ih >= 0 && ih < H && iw >= 0 && iw < W { x[n, ih, iw, c] * k[r, s, c, o] } else { 0.0 }
            where ih = i + r - 1, iw = j + s - 1
        ) + b[o], 0.0);
        y
    }

    pub fn nchw_same_relu(x: [f32; N, C, H, W], k: [f32; O, C, 3, 3], b: [f32; O]) -> [f32; N, O, H, W] {
        let y[n, o, i in 0..H, j in 0..W] = max(sum[c, r, s](
            if ih >= 0 && ih < H && iw >= 0 && iw < W { x[n, c, ih, iw] * k[o, c, r, s] } else { 0.0 }
            where ih = i + r - 1, iw = j + s - 1
        ) + b[o], 0.0);
        y
    }

    pub fn nhwc_stride2(x: [f32; N, H, W, C], k: [f32; 3, 3, C, O], b: [f32; O]) -> [f32; N, (H + 1) / 2, (W + 1) / 2, O] {
        let y[n, i in 0..(H + 1) / 2, j in 0..(W + 1) / 2, o] = sum[c, r, s](
            if ih >= 0 && ih < H && iw >= 0 && iw < W { x[n, ih, iw, c] * k[r, s, c, o] } else { 0.0 }
            where ih = 2 * i + r - 1, iw = 2 * j + s - 1
        ) + b[o];
        y
    }

    pub fn nchw_stride2(x: [f32; N, C, H, W], k: [f32; O, C, 3, 3], b: [f32; O]) -> [f32; N, O, (H + 1) / 2, (W + 1) / 2] {
        let y[n, o, i in 0..(H + 1) / 2, j in 0..(W + 1) / 2] = sum[c, r, s](
            if ih >= 0 && ih < H && iw >= 0 && iw < W { x[n, c, ih, iw] * k[o, c, r, s] } else { 0.0 }
            where ih = 2 * i + r - 1, iw = 2 * j + s - 1
        ) + b[o];
        y
    }
}

type Conv = fn(&Array4<f32>, &Array4<f32>, &Array1<f32>) -> Array4<f32>;

fn main() {
    let runs = 7;
    let only = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let cases: [(&str, Conv, Conv); 3] = [
        ("valid + bias", |x, k, b| nhwc_valid(x, k, b).unwrap(), |x, k, b| nchw_valid(x, k, b).unwrap()),
        (
            "padded (guard) + bias + ReLU",
            |x, k, b| nhwc_same_relu(x, k, b).unwrap(),
            |x, k, b| nchw_same_relu(x, k, b).unwrap(),
        ),
        ("stride 2, pad 1 + bias", |x, k, b| nhwc_stride2(x, k, b).unwrap(), |x, k, b| nchw_stride2(x, k, b).unwrap()),
    ];
    for (n, c, h, o) in [(8, 64, 56, 64), (8, 32, 32, 64)] {
        let x: Array4<f32> = Array4::from_shape_vec(
            (n, h, h, c),
            common::data(n * h * h * c, 1).into_iter().map(|v| v as f32).collect(),
        )
        .expect("length");
        let k: Array4<f32> = Array4::from_shape_vec(
            (3, 3, c, o),
            common::data(9 * c * o, 2).into_iter().map(|v| v as f32 * 0.1).collect(),
        )
        .expect("length");
        let b: Array1<f32> = common::data(o, 3).into_iter().map(|v| v as f32).collect();
        let x_first = x.view().permuted_axes([0, 3, 1, 2]).as_standard_layout().to_owned();
        let k_first = k.view().permuted_axes([3, 2, 0, 1]).as_standard_layout().to_owned();
        for (what, last, first) in cases {
            let label = format!("conv channels last N={n} C={c} {h}x{h} O={o} 3x3 {what}");
            if only.as_ref().is_some_and(|o| !label.contains(o.as_str())) {
                continue;
            }
            let got = last(&x, &k, &b);
            let want = first(&x_first, &k_first, &b);
            let scale = want.iter().fold(1.0f32, |m, v| m.max(v.abs()));
            for (a, w) in got.view().permuted_axes([0, 3, 1, 2]).iter().zip(&want) {
                assert!((a - w).abs() <= 1e-4 * scale, "{label}: {a} vs {w}");
            }
            let (oh, ow) = (got.dim().1, got.dim().2);
            let flops = 2.0 * (n * o * oh * ow * c * 9) as f64;
            let (e, f) = common::paired(
                runs,
                || drop(black_box(last(black_box(&x), &k, &b))),
                || drop(black_box(first(black_box(&x_first), &k_first, &b))),
            );
            println!(
                "{label}: einlang {:.2} ms ({:.1} GFLOP/s), the same channels first {:.2} ms ({:.1} GFLOP/s), ratio {:.2}x",
                e * 1e3,
                flops / e / 1e9,
                f * 1e3,
                flops / f / 1e9,
                e / f
            );
        }
    }
}
