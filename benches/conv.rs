//! Convolutions written in Einstein notation against im2col + GEMM written
//! by hand, measured in the same run: the forward pass of a batch (valid,
//! with a bias), a padded one (a guard), both again on the larger N=8 C=64
//! 56x56 O=64 and with stride 2, padding 1 and a bias on that shape, a
//! padded one with stride 2, one
//! with the channels last (NHWC), a grouped one, `std::ml::conv2d` (run-time
//! stride and pad: stride 1 and 2, padding 1), the kernel gradient (the output
//! gradient contracted with the shifted input), and the input gradient (a
//! transposed convolution, written out over a padded copy as reverse mode
//! writes it; the baseline multiplies per image, then adds the columns
//! back, "col2im").
//!
//! The baseline packs the input by hand (rayon over the packed rows), runs
//! one `general_mat_mul` (matrixmultiply, the GEMM einlang dispatches to),
//! and writes the result back in `[n, o, y, x]` order with the bias. The
//! einlang side is what `opt::pack` makes of the definition. Each result is
//! checked against the baseline before anything is timed; one ratio line
//! (medians of rounds that call each side once in turn, `common::paired`)
//! is printed per case. `CONV_PROFILE=C,H,GROUPS,STRIDE[,CALLS]` instead
//! calls one `std::ml::conv` case (N=8, O=64, 3x3, padding 1, a bias) in a
//! loop alone, for a profiler, and prints its median and best times.

mod common;

use std::hint::black_box;

use einlang::einlang;
use einlang::ndarray::linalg::general_mat_mul;
use einlang::ndarray::parallel::prelude::*;
use einlang::ndarray::{s, Array1, Array2, Array4, Array5, Axis};

einlang! {
    pub fn conv(x: [f32; N, C, H, W], k: [f32; O, C, KH, KW], b: [f32; O]) -> [f32; N, O, H - KH + 1, W - KW + 1] {
        let y[n, o, i, j] = sum[c, r, s](x[n, c, i + r, j + s] * k[o, c, r, s]) + b[o];
        y
    }

    pub fn conv_same(x: [f32; N, C, H, W], k: [f32; O, C, 3, 3]) -> [f32; N, O, H, W] {
        let y[n, o, i in 0..H, j in 0..W] = sum[c, r, s](
            if ih >= 0 && ih < H && iw >= 0 && iw < W { x[n, c, ih, iw] * k[o, c, r, s] } else { 0.0 }
            where ih = i + r - 1, iw = j + s - 1
        );
        y
    }

    pub fn conv_stride2(x: [f32; N, C, H, W], k: [f32; O, C, 3, 3]) -> [f32; N, O, H / 2, W / 2] {
        let y[n, o, i in 0..H / 2, j in 0..W / 2] = sum[c, r, s](
            if ih >= 0 && ih < H && iw >= 0 && iw < W { x[n, c, ih, iw] * k[o, c, r, s] } else { 0.0 }
            where ih = 2 * i + r - 1, iw = 2 * j + s - 1
        );
        y
    }

    /// Stride 2, padding 1 (before; after as the output needs), a bias.
    pub fn conv_s2(x: [f32; N, C, H, W], k: [f32; O, C, 3, 3], b: [f32; O]) -> [f32; N, O, (H + 1) / 2, (W + 1) / 2] {
        let y[n, o, i in 0..(H + 1) / 2, j in 0..(W + 1) / 2] = sum[c, r, s](
            if ih >= 0 && ih < H && iw >= 0 && iw < W { x[n, c, ih, iw] * k[o, c, r, s] } else { 0.0 }
            where ih = 2 * i + r - 1, iw = 2 * j + s - 1
        ) + b[o];
        y
    }

    pub fn conv_nhwc(x: [f32; N, H, W, C], k: [f32; KH, KW, C, O]) -> [f32; N, H - KH + 1, W - KW + 1, O] {
        let y[n, i, j, o] = sum[r, s, c](x[n, i + r, j + s, c] * k[r, s, c, o]);
        y
    }

    pub fn conv_grouped(x: [f32; N, G, C, H, W], k: [f32; G, O, C, 3, 3]) -> [f32; N, G, O, H - 2, W - 2] {
        let y[n, g, o, i, j] = sum[c, r, s](x[n, g, c, i + r, j + s] * k[g, o, c, r, s]);
        y
    }

    /// Grouped with the input channel computed from the output channel, as
    /// `std::ml::conv` and ONNX's `Conv` with `group` write it.
    pub fn conv_grouped_computed(x: [f32; N, C, H, W], k: [f32; O, CG, 3, 3], fpg: i64) -> [f32; N, O, H - 2, W - 2] {
        let y[n, o, i, j] = sum[c, r, s](x[n, (o / fpg) * CG + c, i + r, j + s] * k[o, c, r, s]);
        y
    }

    /// `std::ml::conv` with 4 groups, padding 1 and a bias.
    pub fn conv_std_grouped(x: [f32; N, C, H, W], k: [f32; O, CG, 3, 3], b: [f32; O]) -> [f32; N, O, H, W] {
        std::ml::conv(x, k, b, [1, 1], [1, 1, 1, 1], [1, 1], 4)
    }

    /// `std::ml::conv` (ONNX's `Conv`) with a run-time stride, pad and group.
    pub fn conv_onnx(x: [f32; N, C, H, W], k: [f32; O, CG, KH, KW], b: [f32; O], stride: i64, pad: i64, group: i64) -> [f32; N, O, ?, ?] {
        std::ml::conv(x, k, b, [stride, stride], [pad, pad, pad, pad], [1, 1], group)
    }

    /// `std::ml::conv2d`, whose strides and pads are run-time values.
    pub fn conv_std(x: [f32; N, C, H, W], k: [f32; O, C, KH, KW], b: [f32; O], stride: i64, pad: i64) -> [f32; N, O, ?, ?] {
        std::ml::conv2d(x, k, b, stride, stride, pad, pad, 1, 1)
    }

    /// A padded layer's input gradient as reverse mode writes it, for the
    /// output gradient `g` (the forward pass runs too, as in a training
    /// step).
    pub fn layer_input_grad(x: [f32; N, C, H, W], k: [f32; O, C, 3, 3], g: [f32; N, O, H, W]) -> [f32; N, C, H, W] {
        let y[n, o, i in 0..H, j in 0..W] = sum[c, r, s](
            if ih >= 0 && ih < H && iw >= 0 && iw < W { x[n, c, ih, iw] * k[o, c, r, s] } else { 0.0 }
            where ih = i + r - 1, iw = j + s - 1
        );
        let loss = sum[n, o, i, j](y[n, o, i, j] * g[n, o, i, j]);
        @loss / @x
    }

    pub fn kernel_grad(x: [f32; N, C, H, W], dy: [f32; N, O, P, Q]) -> [f32; O, C, 3, 3] {
        let dk[o, c, r in 0..3, s in 0..3] = sum[n, i, j](dy[n, o, i, j] * x[n, c, i + r, j + s]);
        dk
    }

    pub fn input_grad(dy: [f32; N, O, P, Q], k: [f32; O, C, 3, 3]) -> [f32; N, C, P + 2, Q + 2] {
        let pad[n, o, a in 0..P + 4, b in 0..Q + 4] =
            if a >= 2 && a < P + 2 && b >= 2 && b < Q + 2 { dy[n, o, a - 2, b - 2] } else { 0.0 };
        let dx[n, c, y in 0..P + 2, x in 0..Q + 2] = sum[o, r, s](pad[n, o, y - r + 2, x - s + 2] * k[o, c, r, s]);
        dx
    }
}

/// The classic layout (Caffe's, onnxruntime's): per image, columns `[(c,
/// r, s), (y, x)]` built from runs of image rows, then `k · cols` written
/// straight into the image's `[o, y, x]` output, which starts as the bias;
/// images in parallel.
fn conv_gemm(x: &Array4<f32>, k: &Array4<f32>, bias: &Array1<f32>, pad: usize) -> Array4<f32> {
    conv_gemm_strided(x, k, bias, pad, 1)
}

common::twin! {
/// `conv_gemm` with a stride: with stride 1 each packed row is built from
/// runs of image rows, else element by element.
fn conv_gemm_strided(x: &Array4<f32>, k: &Array4<f32>, bias: &Array1<f32>, pad: usize, stride: usize) -> Array4<f32> {
    let (n, c, h, w) = x.dim();
    let (o, _, kh, kw) = k.dim();
    let (oh, ow) = ((h + 2 * pad - kh) / stride + 1, (w + 2 * pad - kw) / stride + 1);
    let km = k.view().into_shape_with_order((o, c * kh * kw)).expect("standard layout kernel");
    let mut y = Array4::<f32>::zeros((n, o, oh, ow));
    y.axis_iter_mut(Axis(0)).into_par_iter().enumerate().for_each(|(nn, mut img)| {
        let xs = x.index_axis(Axis(0), nn);
        let xs = xs.as_slice().expect("standard layout");
        let mut cols = Array2::<f32>::zeros((c * kh * kw, oh * ow));
        for (row, mut out) in cols.axis_iter_mut(Axis(0)).enumerate() {
            let out = out.as_slice_mut().expect("standard layout");
            let (cc, r, s) = (row / (kh * kw), row / kw % kh, row % kw);
            for i in 0..oh {
                let ih = (stride * i + r) as isize - pad as isize;
                if ih < 0 || ih as usize >= h {
                    continue;
                }
                let src = &xs[(cc * h + ih as usize) * w..][..w];
                let dst = &mut out[i * ow..][..ow];
                if stride == 1 {
                    // Output columns j read image column j + s - pad.
                    let lo = pad.saturating_sub(s);
                    let hi = ow.min(w + pad - s);
                    if lo < hi {
                        dst[lo..hi].copy_from_slice(&src[lo + s - pad..hi + s - pad]);
                    }
                } else {
                    for (j, d) in dst.iter_mut().enumerate() {
                        let iw = (stride * j + s) as isize - pad as isize;
                        if iw >= 0 && (iw as usize) < w {
                            *d = src[iw as usize];
                        }
                    }
                }
            }
        }
        for (oo, mut plane) in img.axis_iter_mut(Axis(0)).enumerate() {
            plane.fill(bias[oo]);
        }
        let mut out = img.into_shape_with_order((o, oh * ow)).expect("standard layout");
        general_mat_mul(1.0, &km, &cols, 1.0, &mut out);
    });
    y
}
}

common::twin! {
/// Channels last: per image, rows `(i, j)` of columns `(r, s, c)`, each
/// `r` a run of `KW * C` input values, times the kernel as `[(r, s, c),
/// o]` straight into the image's `[(i, j), o]` output; images in parallel.
fn conv_nhwc_gemm(x: &Array4<f32>, k: &Array4<f32>) -> Array4<f32> {
    let (n, h, w, c) = x.dim();
    let (kh, kw, _, o) = k.dim();
    let (oh, ow) = (h - kh + 1, w - kw + 1);
    let km = k.view().into_shape_with_order((kh * kw * c, o)).expect("standard layout kernel");
    let mut y = Array4::<f32>::zeros((n, oh, ow, o));
    y.axis_iter_mut(Axis(0)).into_par_iter().enumerate().for_each(|(nn, img)| {
        let xs = x.index_axis(Axis(0), nn);
        let xs = xs.as_slice().expect("standard layout");
        let mut cols = Array2::<f32>::zeros((oh * ow, kh * kw * c));
        for (row, mut out) in cols.axis_iter_mut(Axis(0)).enumerate() {
            let out = out.as_slice_mut().expect("standard layout");
            let (i, j) = (row / ow, row % ow);
            for r in 0..kh {
                out[r * kw * c..][..kw * c].copy_from_slice(&xs[((i + r) * w + j) * c..][..kw * c]);
            }
        }
        let mut out = img.into_shape_with_order((oh * ow, o)).expect("standard layout");
        general_mat_mul(1.0, &cols, &km, 0.0, &mut out);
    });
    y
}
}

common::twin! {
/// A grouped convolution: per image (in parallel) and group, the classic
/// im2col of the group's channels and one GEMM of the group's kernel into
/// the group's output rows.
fn conv_grouped_gemm(x: &Array5<f32>, k: &Array5<f32>) -> Array5<f32> {
    let (n, g, c, h, w) = x.dim();
    let (_, o, _, kh, kw) = k.dim();
    let (oh, ow) = (h - kh + 1, w - kw + 1);
    let mut y = Array5::<f32>::zeros((n, g, o, oh, ow));
    y.axis_iter_mut(Axis(0)).into_par_iter().enumerate().for_each(|(nn, mut img)| {
        let mut cols = Array2::<f32>::zeros((c * kh * kw, oh * ow));
        for (gg, out) in img.axis_iter_mut(Axis(0)).enumerate() {
            let xs = x.slice(s![nn, gg, .., .., ..]);
            let xs = xs.as_slice().expect("standard layout");
            for (row, mut dst) in cols.axis_iter_mut(Axis(0)).enumerate() {
                let dst = dst.as_slice_mut().expect("standard layout");
                let (cc, r, q) = (row / (kh * kw), row / kw % kh, row % kw);
                for i in 0..oh {
                    dst[i * ow..][..ow].copy_from_slice(&xs[(cc * h + i + r) * w + q..][..ow]);
                }
            }
            let km = k.slice(s![gg, .., .., .., ..]);
            let km = km.into_shape_with_order((o, c * kh * kw)).expect("standard layout kernel");
            let mut out = out.into_shape_with_order((o, oh * ow)).expect("standard layout");
            general_mat_mul(1.0, &km, &cols, 0.0, &mut out);
        }
    });
    y
}
}

common::twin! {
/// The kernel gradient by im2col, per image in parallel: `dy[n]` as `[o,
/// (y, x)]` times the image's columns `[(y, x), (c, r, s)]` (rows of the
/// classic layout's transpose), the images' products summed.
fn kernel_grad_gemm(x: &Array4<f32>, dy: &Array4<f32>) -> Array4<f32> {
    let (n, c, h, w) = x.dim();
    let (_, o, p, q) = dy.dim();
    let parts: Vec<Array2<f32>> = (0..n)
        .into_par_iter()
        .map(|nn| {
            let xs = x.index_axis(Axis(0), nn);
            let xs = xs.as_slice().expect("standard layout");
            // cols[(c, r, s), (y, x)] = x[c, y + r, x + s]
            let mut cols = Array2::<f32>::zeros((c * 9, p * q));
            for (row, mut out) in cols.axis_iter_mut(Axis(0)).enumerate() {
                let out = out.as_slice_mut().expect("standard layout");
                let (cc, r, s) = (row / 9, row / 3 % 3, row % 3);
                for i in 0..p {
                    out[i * q..][..q].copy_from_slice(&xs[(cc * h + i + r) * w + s..][..q]);
                }
            }
            let dyn_ = dy.index_axis(Axis(0), nn);
            let dym = dyn_.into_shape_with_order((o, p * q)).expect("standard layout");
            let mut part = Array2::<f32>::zeros((o, c * 9));
            general_mat_mul(1.0, &dym, &cols.t(), 0.0, &mut part);
            part
        })
        .collect();
    let mut sum = Array2::<f32>::zeros((o, c * 9));
    for part in parts {
        sum += &part;
    }
    sum.into_shape_with_order((o, c, 3, 3)).expect("contiguous")
}
}

common::twin! {
/// The input gradient by col2im, per image in parallel: the kernel as
/// `[(c, r, s), o]` times `dy[n]` as `[o, (y, x)]`, then each row of the
/// product added back at its offset.
fn input_grad_gemm(dy: &Array4<f32>, k: &Array4<f32>) -> Array4<f32> {
    let (n, o, p, q) = dy.dim();
    let c = k.dim().1;
    let (h, w) = (p + 2, q + 2);
    let kmat = k.view().into_shape_with_order((o, c * 9)).expect("standard layout");
    let mut dx = Array4::<f32>::zeros((n, c, h, w));
    dx.axis_iter_mut(Axis(0)).into_par_iter().enumerate().for_each(|(nn, mut img)| {
        let dym = dy.index_axis(Axis(0), nn).into_shape_with_order((o, p * q)).expect("standard layout");
        let mut cols = Array2::<f32>::zeros((c * 9, p * q));
        general_mat_mul(1.0, &kmat.t(), &dym, 0.0, &mut cols);
        let img = img.as_slice_mut().expect("standard layout");
        for (row, src) in cols.axis_iter(Axis(0)).enumerate() {
            let src = src.as_slice().expect("standard layout");
            let (cc, r, s) = (row / 9, row / 3 % 3, row % 3);
            for i in 0..p {
                let out = &mut img[(cc * h + i + r) * w + s..][..q];
                for (d, v) in out.iter_mut().zip(&src[i * q..][..q]) {
                    *d += v;
                }
            }
        }
    });
    dx
}
}

fn data4(a: usize, b: usize, c: usize, d: usize, seed: u64) -> Array4<f32> {
    let v = common::data(a * b * c * d, seed).into_iter().map(|v| v as f32).collect();
    Array4::from_shape_vec((a, b, c, d), v).expect("matching length")
}

fn close(a: &Array4<f32>, b: &Array4<f32>, what: &str) {
    assert_eq!(a.shape(), b.shape(), "{what}");
    let scale = b.iter().fold(1.0f32, |m, v| m.max(v.abs()));
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() <= 1e-3 * scale, "{what}: {x} vs {y}");
    }
}

fn report(label: &str, flops: f64, e: f64, b: f64) {
    println!(
        "{label}: einlang {:.2} ms ({:.1} GFLOP/s), im2col + GEMM {:.2} ms ({:.1} GFLOP/s), ratio {:.2}x (einlang time / baseline time)",
        e * 1e3,
        flops / e / 1e9,
        b * 1e3,
        flops / b / 1e9,
        e / b
    );
}

/// The runtime's direct convolution (`einlang_runtime::conv`) into a fresh
/// output: `pad` rows and columns of zeros on each side, `bias` added.
fn direct(x: &Array4<f32>, k: &Array4<f32>, bias: Option<&Array1<f32>>, pad: usize) -> Array4<f32> {
    let (n, _, h, w) = x.dim();
    let (o, _, kh, kw) = k.dim();
    let mut y = Array4::<f32>::zeros((n, o, h + 2 * pad + 1 - kh, w + 2 * pad + 1 - kw));
    einlang::__private::conv::conv2d(
        "direct",
        x.view(),
        k.view(),
        bias.map(|b| b.view()),
        (pad, pad),
        false,
        y.view_mut(),
    )
    .expect("direct convolution");
    y
}

/// One line for the direct kernel against einlang's time `e` in the same
/// rounds (no `: einlang` in it, so `compare_onnx.py` skips it).
fn report_direct(label: &str, flops: f64, d: f64, e: f64) {
    println!(
        "{label} [runtime direct kernel] direct {:.2} ms ({:.1} GFLOP/s), einlang {:.2} ms, ratio {:.2}x (direct / einlang)",
        d * 1e3,
        flops / d / 1e9,
        e * 1e3,
        d / e
    );
}

/// `std::ml::conv2d` (run-time stride and pad) at the shape, N=8
/// C=64 56x56 O=64 3x3 with a bias: stride 1 (the direct kernel, chosen at
/// run time) and stride 2 (the packed product), padding 1.
fn std_cases(runs: usize) {
    let (n, c, h, w, o) = (8, 64, 56, 56, 64);
    let x = data4(n, c, h, w, 8);
    let k = data4(o, c, 3, 3, 9);
    let b: Array1<f32> = common::data(o, 10).into_iter().map(|v| v as f32).collect();
    for stride in [1usize, 2] {
        let want = conv_gemm_strided(&x, &k, &b, 1, stride);
        close(&conv_std(&x, &k, &b, stride as i64, 1).expect("conv_std"), &want, "conv_std");
        let (oh, ow) = ((h + 2 - 3) / stride + 1, (w + 2 - 3) / stride + 1);
        let flops = 2.0 * (n * o * oh * ow * c * 9) as f64;
        let (e, g) = common::paired(
            runs,
            || drop(black_box(conv_std(black_box(&x), &k, &b, stride as i64, 1).unwrap())),
            || drop(black_box(conv_gemm_strided(black_box(&x), &k, &b, 1, stride))),
        );
        report(&format!("std::ml::conv2d N={n} C={c} {h}x{w} O={o} 3x3 stride {stride}, pad 1, bias"), flops, e, g);
    }
}

/// `std::ml::conv` (run-time stride, pad and group) with padding 1 and a
/// bias, groups 1 and 4 and depthwise, strides 1 and 2, against the hand
/// im2col + GEMM per group (`conv_gemm_strided` on each group's channels
/// and filters) in the same run.
fn onnx_cases(runs: usize) {
    for (n, c, h, o, groups) in
        [(8, 32, 32, 64, 1), (8, 32, 32, 64, 4), (8, 64, 56, 64, 1), (8, 64, 56, 64, 4), (8, 64, 56, 64, 64)]
    {
        let (cg, fg) = (c / groups, o / groups);
        let x = data4(n, c, h, h, 21);
        let k = data4(o, cg, 3, 3, 22);
        let b: Array1<f32> = common::data(o, 23).into_iter().map(|v| v as f32).collect();
        for stride in [1usize, 2] {
            let hand = || {
                let parts: Vec<Array4<f32>> = (0..groups)
                    .map(|g| {
                        let xg = x.slice(s![.., g * cg..(g + 1) * cg, .., ..]).to_owned();
                        let kg = k.slice(s![g * fg..(g + 1) * fg, .., .., ..]).to_owned();
                        let bg = b.slice(s![g * fg..(g + 1) * fg]).to_owned();
                        conv_gemm_strided(&xg, &kg, &bg, 1, stride)
                    })
                    .collect();
                let views: Vec<_> = parts.iter().map(|p| p.view()).collect();
                einlang::ndarray::concatenate(Axis(1), &views).expect("same extents")
            };
            let want = hand();
            let call = || conv_onnx(&x, &k, &b, stride as i64, 1, groups as i64).expect("conv_onnx");
            close(&call(), &want, "conv_onnx");
            let flops = 2.0 * (want.len() * cg * 9) as f64;
            let (e, g) = common::paired(runs, || drop(black_box(call())), || drop(black_box(hand())));
            let which = if groups == c { format!("group {groups} (depthwise)") } else { format!("group {groups}") };
            report(
                &format!("std::ml::conv N={n} C={c} {h}x{h} O={o} 3x3 {which}, stride {stride}, pad 1, bias"),
                flops,
                e,
                g,
            );
        }
    }
}

/// The literal stride 2, padding 1 and a bias (`conv_s2`) against the
/// hand im2col + GEMM with the same stride.
fn stride2_case(x: &Array4<f32>, k: &Array4<f32>, b: &Array1<f32>, runs: usize) {
    let (n, c, h, w) = x.dim();
    let o = k.dim().0;
    let want = conv_gemm_strided(x, k, b, 1, 2);
    close(&conv_s2(x, k, b).expect("conv_s2"), &want, "conv_s2");
    let flops = 2.0 * (want.len() * c * 9) as f64;
    let (e, g) = common::paired(
        runs,
        || drop(black_box(conv_s2(black_box(x), k, b).unwrap())),
        || drop(black_box(conv_gemm_strided(black_box(x), k, b, 1, 2))),
    );
    report(&format!("conv N={n} C={c} {h}x{w} O={o} 3x3 stride 2, pad 1 + bias"), flops, e, g);
}

/// `layer_input_grad` at the shape against the hand forward pass
/// (im2col + GEMM, padded) plus the hand col2im of `g` cropped to the
/// image.
fn layer_grad_case(runs: usize) {
    let (n, c, h, w, o) = (8, 64, 56, 56, 64);
    let (x, k, g) = (data4(n, c, h, w, 11), data4(o, c, 3, 3, 12), data4(n, o, h, w, 13));
    let zero = Array1::<f32>::zeros(o);
    let hand = || {
        let y = conv_gemm(&x, &k, &zero, 1);
        let full = input_grad_gemm(&g, &k);
        (y, full.slice(s![.., .., 1..h + 1, 1..w + 1]).to_owned())
    };
    close(&layer_input_grad(&x, &k, &g).expect("layer_input_grad"), &hand().1, "layer_input_grad");
    let flops = 2.0 * 2.0 * (n * o * h * w * c * 9) as f64;
    let (e, b) = common::paired(
        runs,
        || drop(black_box(layer_input_grad(black_box(&x), &k, &g).unwrap())),
        || drop(black_box(hand())),
    );
    report(
        &format!("conv layer input gradient (reverse mode) + forward N={n} C={c} {h}x{w} O={o} 3x3 pad 1"),
        flops,
        e,
        b,
    );
}

fn main() {
    let runs = 7;
    // Only the standard library's cases (for rounds that compare commits).
    if std::env::var_os("CONV_STD_ONLY").is_some() {
        std_cases(runs);
        return;
    }
    // `CONV_PROFILE=C,H,GROUPS,STRIDE[,CALLS]`: one `std::ml::conv` case
    // (N=8, O=64, 3x3, padding 1, a bias) called in a loop alone, for a
    // profiler (`perf record`), with its median time printed.
    if let Ok(spec) = std::env::var("CONV_PROFILE") {
        let v: Vec<usize> = spec.split(',').map(|t| t.trim().parse().expect("CONV_PROFILE: numbers")).collect();
        let (c, h, groups, stride, calls) = (v[0], v[1], v[2], v[3], v.get(4).copied().unwrap_or(200));
        let x = data4(8, c, h, h, 21);
        let k = data4(64, c / groups, 3, 3, 22);
        let b: Array1<f32> = common::data(64, 23).into_iter().map(|v| v as f32).collect();
        let mut times = Vec::with_capacity(calls);
        for _ in 0..calls {
            let start = std::time::Instant::now();
            drop(black_box(conv_onnx(&x, &k, &b, stride as i64, 1, groups as i64).expect("conv_onnx")));
            times.push(start.elapsed().as_secs_f64() * 1e3);
        }
        times.sort_by(f64::total_cmp);
        println!("CONV_PROFILE {spec}: median {:.3} ms, best {:.3} ms", times[calls / 2], times[0]);
        return;
    }
    // Only `std::ml::conv` (ONNX's form) with run-time groups.
    if std::env::var_os("CONV_ONNX_ONLY").is_some() {
        onnx_cases(runs);
        return;
    }
    if std::env::var_os("CONV_GRAD_ONLY").is_some() {
        layer_grad_case(3);
        return;
    }
    // Only the literal stride-2 case at the shape.
    if std::env::var_os("CONV_STRIDE_ONLY").is_some() {
        let (n, c, h, w, o) = (8, 64, 56, 56, 64);
        let b: Array1<f32> = common::data(o, 3).into_iter().map(|v| v as f32).collect();
        stride2_case(&data4(n, c, h, w, 6), &data4(o, c, 3, 3, 7), &b, runs);
        return;
    }
    let (n, c, h, w, o) = (8, 32, 32, 32, 64);
    let x = data4(n, c, h, w, 1);
    let k = data4(o, c, 3, 3, 2);
    let b: Array1<f32> = common::data(o, 3).into_iter().map(|v| v as f32).collect();

    let (got, want) = (conv(&x, &k, &b).expect("conv"), conv_gemm(&x, &k, &b, 0));
    close(&got, &want, "conv");
    let flops = 2.0 * (n * o * (h - 2) * (w - 2) * c * 9) as f64;
    let (e, g) = common::paired(
        runs,
        || drop(black_box(conv(black_box(&x), &k, &b).unwrap())),
        || drop(black_box(conv_gemm(black_box(&x), &k, &b, 0))),
    );
    report(&format!("conv N={n} C={c} {h}x{w} O={o} 3x3 valid + bias"), flops, e, g);
    close(&direct(&x, &k, Some(&b), 0), &want, "direct");
    let (d, e) = common::paired(
        runs,
        || drop(black_box(direct(black_box(&x), &k, Some(&b), 0))),
        || drop(black_box(conv(black_box(&x), &k, &b).unwrap())),
    );
    report_direct(&format!("conv N={n} C={c} {h}x{w} O={o} 3x3 valid + bias"), flops, d, e);

    let zero = Array1::<f32>::zeros(o);
    let (got, want) = (conv_same(&x, &k).expect("conv_same"), conv_gemm(&x, &k, &zero, 1));
    close(&got, &want, "conv_same");
    let flops = 2.0 * (n * o * h * w * c * 9) as f64;
    let (e, g) = common::paired(
        runs,
        || drop(black_box(conv_same(black_box(&x), &k).unwrap())),
        || drop(black_box(conv_gemm(black_box(&x), &k, &zero, 1))),
    );
    report(&format!("conv N={n} C={c} {h}x{w} O={o} 3x3 padded (guard)"), flops, e, g);
    close(&direct(&x, &k, None, 1), &want, "direct padded");
    let (d, e) = common::paired(
        runs,
        || drop(black_box(direct(black_box(&x), &k, None, 1))),
        || drop(black_box(conv_same(black_box(&x), &k).unwrap())),
    );
    report_direct(&format!("conv N={n} C={c} {h}x{w} O={o} 3x3 padded (guard)"), flops, d, e);

    // The shape: N=8 C=64 56x56 O=64, valid + bias and padded.
    {
        let (c, h, w) = (64, 56, 56);
        let x = data4(n, c, h, w, 6);
        let k = data4(o, c, 3, 3, 7);
        close(&conv(&x, &k, &b).expect("conv"), &conv_gemm(&x, &k, &b, 0), "conv 56");
        let flops = 2.0 * (n * o * (h - 2) * (w - 2) * c * 9) as f64;
        let (e, g) = common::paired(
            runs,
            || drop(black_box(conv(black_box(&x), &k, &b).unwrap())),
            || drop(black_box(conv_gemm(black_box(&x), &k, &b, 0))),
        );
        report(&format!("conv N={n} C={c} {h}x{w} O={o} 3x3 valid + bias"), flops, e, g);
        close(&direct(&x, &k, Some(&b), 0), &conv_gemm(&x, &k, &b, 0), "direct 56");
        let (d, e) = common::paired(
            runs,
            || drop(black_box(direct(black_box(&x), &k, Some(&b), 0))),
            || drop(black_box(conv(black_box(&x), &k, &b).unwrap())),
        );
        report_direct(&format!("conv N={n} C={c} {h}x{w} O={o} 3x3 valid + bias"), flops, d, e);
        close(&conv_same(&x, &k).expect("conv_same"), &conv_gemm(&x, &k, &zero, 1), "conv_same 56");
        let flops = 2.0 * (n * o * h * w * c * 9) as f64;
        let (e, g) = common::paired(
            runs,
            || drop(black_box(conv_same(black_box(&x), &k).unwrap())),
            || drop(black_box(conv_gemm(black_box(&x), &k, &zero, 1))),
        );
        report(&format!("conv N={n} C={c} {h}x{w} O={o} 3x3 padded (guard)"), flops, e, g);
        close(&direct(&x, &k, None, 1), &conv_gemm(&x, &k, &zero, 1), "direct padded 56");
        let (d, e) = common::paired(
            runs,
            || drop(black_box(direct(black_box(&x), &k, None, 1))),
            || drop(black_box(conv_same(black_box(&x), &k).unwrap())),
        );
        report_direct(&format!("conv N={n} C={c} {h}x{w} O={o} 3x3 padded (guard)"), flops, d, e);
        stride2_case(&x, &k, &b, runs);
    }
    if std::env::var_os("CONV_MAIN_ONLY").is_some() {
        return;
    }

    let (got, want) = (conv_stride2(&x, &k).expect("conv_stride2"), conv_gemm_strided(&x, &k, &zero, 1, 2));
    close(&got, &want, "conv_stride2");
    let flops = 2.0 * (n * o * (h / 2) * (w / 2) * c * 9) as f64;
    let (e, g) = common::paired(
        runs,
        || drop(black_box(conv_stride2(black_box(&x), &k).unwrap())),
        || drop(black_box(conv_gemm_strided(black_box(&x), &k, &zero, 1, 2))),
    );
    report(&format!("conv N={n} C={c} {h}x{w} O={o} 3x3 stride 2, padded (guard)"), flops, e, g);

    let xl = x.view().permuted_axes([0, 2, 3, 1]).as_standard_layout().into_owned();
    let kl = k.view().permuted_axes([2, 3, 1, 0]).as_standard_layout().into_owned();
    let (got, want) = (conv_nhwc(&xl, &kl).expect("conv_nhwc"), conv_nhwc_gemm(&xl, &kl));
    close(&got, &want, "conv_nhwc");
    let flops = 2.0 * (n * o * (h - 2) * (w - 2) * c * 9) as f64;
    let (e, g) = common::paired(
        runs,
        || drop(black_box(conv_nhwc(black_box(&xl), &kl).unwrap())),
        || drop(black_box(conv_nhwc_gemm(black_box(&xl), &kl))),
    );
    report(&format!("conv N={n} {h}x{w} C={c} O={o} 3x3 channels last (NHWC), valid"), flops, e, g);

    let groups = 4;
    let xg = x.view().into_shape_with_order((n, groups, c / groups, h, w)).expect("standard layout").to_owned();
    let kg = data4(groups * o / groups, c / groups, 3, 3, 5)
        .into_shape_with_order((groups, o / groups, c / groups, 3, 3))
        .expect("standard layout");
    let (got, want) = (conv_grouped(&xg, &kg).expect("conv_grouped"), conv_grouped_gemm(&xg, &kg));
    let shape4 = |a: Array5<f32>| {
        let d = a.dim();
        a.into_shape_with_order((d.0, d.1 * d.2, d.3, d.4)).expect("standard layout")
    };
    close(&shape4(got), &shape4(want), "conv_grouped");
    let flops = 2.0 * (n * o * (h - 2) * (w - 2) * (c / groups) * 9) as f64;
    let (e, g) = common::paired(
        runs,
        || drop(black_box(conv_grouped(black_box(&xg), &kg).unwrap())),
        || drop(black_box(conv_grouped_gemm(black_box(&xg), &kg))),
    );
    report(&format!("conv N={n} C={c} {h}x{w} O={o} 3x3 in {groups} groups, valid"), flops, e, g);

    // The same grouped convolution over the ungrouped layouts, the input
    // channel computed from the output channel.
    let k4 = kg.view().into_shape_with_order((o, c / groups, 3, 3)).expect("standard layout").to_owned();
    let as5 = |a: &Array4<f32>| {
        let d = a.dim();
        a.view().into_shape_with_order((d.0, groups, d.1 / groups, d.2, d.3)).expect("standard layout").to_owned()
    };
    let grouped_ref = |x: &Array4<f32>| shape4(conv_grouped_gemm(&as5(x), &kg));
    let fpg = (o / groups) as i64;
    close(
        &conv_grouped_computed(&x, &k4, fpg).expect("conv_grouped_computed"),
        &grouped_ref(&x),
        "conv_grouped_computed",
    );
    let (e, g) = common::paired(
        runs,
        || drop(black_box(conv_grouped_computed(black_box(&x), &k4, fpg).unwrap())),
        || drop(black_box(grouped_ref(black_box(&x)))),
    );
    report(&format!("conv N={n} C={c} {h}x{w} O={o} 3x3 in {groups} groups, channel from o"), flops, e, g);

    // std::ml::conv, 4 groups, padding 1, a bias: against the grouped
    // baseline over a zero-padded copy, plus the bias.
    let xp = {
        let mut p = Array4::<f32>::zeros((n, c, h + 2, w + 2));
        p.slice_mut(s![.., .., 1..h + 1, 1..w + 1]).assign(&x);
        p
    };
    let with_bias = |x: &Array4<f32>| {
        let mut y = grouped_ref(x);
        y.axis_iter_mut(Axis(1)).zip(b.iter()).for_each(|(mut c, v)| c += *v);
        y
    };
    close(&conv_std_grouped(&x, &k4, &b).expect("conv_std_grouped"), &with_bias(&xp), "conv_std_grouped");
    let flops = 2.0 * (n * o * h * w * (c / groups) * 9) as f64;
    let (e, g) = common::paired(
        runs,
        || drop(black_box(conv_std_grouped(black_box(&x), &k4, &b).unwrap())),
        || drop(black_box(with_bias(black_box(&xp)))),
    );
    report(&format!("std::ml::conv N={n} C={c} {h}x{w} O={o} 3x3 group 4, pad 1, bias"), flops, e, g);

    let dy = data4(n, o, h - 2, w - 2, 4);
    let (got, want) = (kernel_grad(&x, &dy).expect("kernel_grad"), kernel_grad_gemm(&x, &dy));
    close(&got, &want, "kernel_grad");
    let (e, g) = common::paired(
        runs,
        || drop(black_box(kernel_grad(black_box(&x), &dy).unwrap())),
        || drop(black_box(kernel_grad_gemm(black_box(&x), &dy))),
    );
    let flops = 2.0 * (o * c * 9 * n * (h - 2) * (w - 2)) as f64;
    report(&format!("conv kernel gradient N={n} C={c} {h}x{w} O={o} 3x3"), flops, e, g);

    let (got, want) = (input_grad(&dy, &k).expect("input_grad"), input_grad_gemm(&dy, &k));
    close(&got, &want, "input_grad");
    let (e, g) = common::paired(
        runs,
        || drop(black_box(input_grad(black_box(&dy), &k).unwrap())),
        || drop(black_box(input_grad_gemm(black_box(&dy), &k))),
    );
    report(&format!("conv input gradient N={n} C={c} {h}x{w} O={o} 3x3 (transposed, col2im)"), flops, e, g);

    layer_grad_case(runs);
    std_cases(runs);
    onnx_cases(runs);
}
