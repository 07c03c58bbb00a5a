//! `f32` convolutions written in other layouts than the direct kernel's
//! (`opt::conv_layout`): channels last (`x[n, i + r, j + s, c]`), the
//! filters as `[r, s, c, o]` or `[o, r, s, c]`, the result as `[n, i, j,
//! o]`, one image `[i, j, c]`, padded by a guard, strided, with a bias and
//! a ReLU; and two forms the rewrite leaves to the packed product (a 1x1
//! window, a depthwise sum over the window alone). Each is compared with
//! naive `f64` loops written here on odd shapes (1, 7, primes, empty
//! extents) and on one to three threads.

mod conv_support;

use conv_support::{assert_close, data, tensor, threads};
use einlang::einlang;
use einlang::ndarray::{Array1, Array3, Array4};

einlang! {
    /// Channels last, filters `[r, s, c, o]`, valid, a bias.
    pub fn nhwc_valid(x: [f32; N, H, W, C], k: [f32; KH, KW, C, O], b: [f32; O]) -> [f32; N, H - KH + 1, W - KW + 1, O] {
        let y[n, i, j, o] = sum[c, r, s](x[n, i + r, j + s, c] * k[r, s, c, o]) + b[o];
        y
    }

    /// Channels last, filters `[o, r, s, c]`, same padding by a guard, a ReLU.
    pub fn nhwc_same_relu(x: [f32; N, H, W, C], k: [f32; O, 3, 3, C], b: [f32; O]) -> [f32; N, H, W, O] {
        let y[n, i in 0..H, j in 0..W, o] = max(sum[r, s, c](
            if ih >= 0 && ih < H && iw >= 0 && iw < W { k[o, r, s, c] * x[n, ih, iw, c] } else { 0.0 }
            where ih = i + r - 1, iw = j + s - 1
        ) + b[o], 0.0);
        y
    }

    /// Channels last, stride 2, pad 1, filters `[r, s, c, o]`.
    pub fn nhwc_stride2(x: [f32; N, H, W, C], k: [f32; 3, 3, C, O]) -> [f32; N, (H + 1) / 2, (W + 1) / 2, O] {
        let y[n, i in 0..(H + 1) / 2, j in 0..(W + 1) / 2, o] = sum[c, r, s](
            if ih >= 0 && ih < H && iw >= 0 && iw < W { x[n, ih, iw, c] * k[r, s, c, o] } else { 0.0 }
            where ih = 2 * i + r - 1, iw = 2 * j + s - 1
        );
        y
    }

    /// Channels last with a run-time stride and pad (`std::ml::conv2d`'s
    /// form): the kernel where they allow it, the packed product elsewhere.
    pub fn nhwc_runtime(x: [f32; N, H, W, C], k: [f32; KH, KW, C, O], sh: i64, ph: i64) -> [f32; N, ?, ?, O] {
        let oh = (H + 2 * ph - KH) / sh + 1;
        let ow = (W + 2 * ph - KW) / sh + 1;
        let y[n, i in 0..oh, j in 0..ow, o] = sum[c, r, s](
            if ih >= 0 && ih < H && iw >= 0 && iw < W { x[n, ih, iw, c] * k[r, s, c, o] } else { 0.0 }
            where ih = i * sh + r - ph, iw = j * sh + s - ph
        );
        y
    }

    /// One image, channels last.
    pub fn hwc_single(x: [f32; H, W, C], k: [f32; 3, 3, C, O]) -> [f32; H - 2, W - 2, O] {
        let y[i, j, o] = sum[c, r, s](x[i + r, j + s, c] * k[r, s, c, o]);
        y
    }

    /// One image, channels last, the window's indices bound in a `where`
    /// (every index of the image's read a variable), filters `[o, c, r, s]`.
    pub fn hwc_where(x: [f32; H, W, C], k: [f32; O, C, KH, KW], b: [f32; O]) -> [f32; H - KH + 1, W - KW + 1, O] {
        let y[i, j, o] = sum[c, r, s](x[iy, ix, c] * k[o, c, r, s]) + b[o] where iy = i + r, ix = j + s;
        y
    }

    /// The same channels first: the kernel's own layout, left as it is.
    pub fn chw_where(x: [f32; C, H, W], k: [f32; O, C, KH, KW], b: [f32; O]) -> [f32; O, H - KH + 1, W - KW + 1] {
        let y[o, i, j] = sum[c, r, s](x[c, iy, ix] * k[o, c, r, s]) + b[o] where iy = i + r, ix = j + s;
        y
    }

    /// Channels first with the filters `[r, s, c, o]`: only they move.
    pub fn nchw_hwio(x: [f32; N, C, H, W], k: [f32; 3, 3, C, O]) -> [f32; N, O, H - 2, W - 2] {
        let y[n, o, i, j] = sum[c, r, s](x[n, c, i + r, j + s] * k[r, s, c, o]);
        y
    }

    /// A 1x1 window, channels last: a matrix product, left to `pack`.
    pub fn nhwc_pointwise(x: [f32; N, H, W, C], k: [f32; 1, 1, C, O]) -> [f32; N, H, W, O] {
        let y[n, i, j, o] = sum[c, r, s](x[n, i + r, j + s, c] * k[r, s, c, o]);
        y
    }

    /// Depthwise, channels last: a sum over the window alone, not rewritten.
    pub fn nhwc_depthwise(x: [f32; N, H, W, C], k: [f32; 3, 3, C]) -> [f32; N, H - 2, W - 2, C] {
        let y[n, i, j, c] = sum[r, s](x[n, i + r, j + s, c] * k[r, s, c]);
        y
    }
}

/// The window of a convolution: stride and padding (top and left).
#[derive(Clone, Copy)]
struct Window {
    stride: usize,
    pad: i64,
}

/// Naive `f64` loops over channels-last images: `x(n, h, w, c)`,
/// `k(o, c, r, s)`, output `[n, oh, ow, o]`.
#[allow(clippy::too_many_arguments)]
fn naive_nhwc(
    x: &Array4<f32>,
    k: impl Fn(usize, usize, usize, usize) -> f32,
    (o_len, kh, kw): (usize, usize, usize),
    b: Option<&Array1<f32>>,
    win: Window,
    (oh, ow): (usize, usize),
) -> Array4<f64> {
    let (n_len, h, w, c_len) = x.dim();
    Array4::from_shape_fn((n_len, oh, ow, o_len), |(n, i, j, o)| {
        let mut acc = b.map_or(0.0, |b| b[o] as f64);
        for c in 0..c_len {
            for r in 0..kh {
                for s in 0..kw {
                    let ih = (i * win.stride + r) as i64 - win.pad;
                    let iw = (j * win.stride + s) as i64 - win.pad;
                    if ih >= 0 && iw >= 0 && (ih as usize) < h && (iw as usize) < w {
                        acc += x[[n, ih as usize, iw as usize, c]] as f64 * k(o, c, r, s) as f64;
                    }
                }
            }
        }
        acc
    })
}

/// `(n, c, h, w, o)` shapes: ones, primes, a single output point, empty
/// batch, channels, filters.
const SHAPES: [(usize, usize, usize, usize, usize); 8] = [
    (1, 1, 3, 3, 1),
    (2, 3, 7, 5, 4),
    (1, 7, 11, 13, 5),
    (3, 2, 3, 3, 1),
    (0, 3, 5, 5, 2),
    (2, 0, 5, 5, 3),
    (2, 3, 5, 5, 0),
    (1, 16, 9, 9, 17),
];

#[test]
fn channels_last_valid_with_a_bias_matches_naive_loops() {
    threads(|| {
        for (seed, &(n, c, h, w, o)) in SHAPES.iter().enumerate() {
            for (kh, kw) in [(3, 3), (1, 3), (3, 2)] {
                let x = tensor((n, h, w, c), seed as u64);
                let k = tensor((kh, kw, c, o), 100 + seed as u64);
                let b = Array1::from_vec(data(o, 200 + seed as u64));
                let got = nhwc_valid(&x, &k, &b).unwrap();
                let want = naive_nhwc(
                    &x,
                    |o, c, r, s| k[[r, s, c, o]],
                    (o, kh, kw),
                    Some(&b),
                    Window { stride: 1, pad: 0 },
                    (h - kh + 1, w - kw + 1),
                );
                let what = format!("nhwc valid {n}x{h}x{w}x{c} o{o} {kh}x{kw}");
                assert_close(&got, &want, c * kh * kw, &what);
            }
        }
    });
}

#[test]
fn channels_last_padded_and_strided_match_naive_loops() {
    threads(|| {
        for (seed, &(n, c, h, w, o)) in SHAPES.iter().enumerate() {
            let x = tensor((n, h, w, c), seed as u64);
            let k_ohwi = tensor((o, 3, 3, c), 300 + seed as u64);
            let b = Array1::from_vec(data(o, 400 + seed as u64));
            let got = nhwc_same_relu(&x, &k_ohwi, &b).unwrap();
            let want = naive_nhwc(
                &x,
                |o, c, r, s| k_ohwi[[o, r, s, c]],
                (o, 3, 3),
                Some(&b),
                Window { stride: 1, pad: 1 },
                (h, w),
            )
            .mapv(|v| v.max(0.0));
            let what = format!("nhwc same relu {n}x{h}x{w}x{c} o{o}");
            assert_close(&got, &want, c * 9, &what);

            let k_hwio = tensor((3, 3, c, o), 500 + seed as u64);
            let got = nhwc_stride2(&x, &k_hwio).unwrap();
            let want = naive_nhwc(
                &x,
                |o, c, r, s| k_hwio[[r, s, c, o]],
                (o, 3, 3),
                None,
                Window { stride: 2, pad: 1 },
                (h.div_ceil(2), w.div_ceil(2)),
            );
            let what = format!("nhwc stride 2 {n}x{h}x{w}x{c} o{o}");
            assert_close(&got, &want, c * 9, &what);
        }
    });
}

#[test]
fn channels_last_with_a_run_time_stride_and_pad_matches_naive_loops() {
    threads(|| {
        for (seed, &(n, c, h, w, o)) in SHAPES.iter().enumerate() {
            for (stride, pad) in [(1, 0), (1, 1), (2, 1), (3, 2), (2, -1)] {
                let x = tensor((n, h, w, c), 1100 + seed as u64);
                let k = tensor((3, 2, c, o), 1200 + seed as u64);
                let (oh, ow) = ((h as i64 + 2 * pad - 3) / stride + 1, (w as i64 + 2 * pad - 2) / stride + 1);
                let got = nhwc_runtime(&x, &k, stride, pad).unwrap();
                let win = Window { stride: stride as usize, pad };
                let want =
                    naive_nhwc(&x, |o, c, r, s| k[[r, s, c, o]], (o, 3, 2), None, win, (oh as usize, ow as usize));
                let what = format!("nhwc run-time stride {stride} pad {pad}, {n}x{h}x{w}x{c} o{o}");
                assert_close(&got, &want, c * 6, &what);
            }
        }
    });
}

#[test]
fn one_image_and_moved_filters_match_naive_loops() {
    threads(|| {
        for (seed, &(_, c, h, w, o)) in SHAPES.iter().enumerate() {
            let x = tensor((1, h, w, c), 600 + seed as u64);
            let k = tensor((3, 3, c, o), 700 + seed as u64);
            let want = naive_nhwc(
                &x,
                |o, c, r, s| k[[r, s, c, o]],
                (o, 3, 3),
                None,
                Window { stride: 1, pad: 0 },
                (h - 2, w - 2),
            );
            let single: Array3<f32> = x.index_axis(einlang::ndarray::Axis(0), 0).to_owned();
            let got = hwc_single(&single, &k).unwrap();
            let what = format!("hwc single {h}x{w}x{c} o{o}");
            let want1 = want.index_axis(einlang::ndarray::Axis(0), 0).to_owned();
            assert_close(&got, &want1, c * 9, &what);

            // Bound window indices, the filters `[o, c, r, s]`, a bias; the
            // same channels first.
            let k_oihw = k.view().permuted_axes([3, 2, 0, 1]).as_standard_layout().to_owned();
            let b = Array1::from_vec(data(o, 750 + seed as u64));
            let biased = &want1 + &b.mapv(f64::from);
            let got = hwc_where(&single, &k_oihw, &b).unwrap();
            assert_close(&got, &biased, c * 9, &format!("hwc where {h}x{w}x{c} o{o}"));
            let chw = single.view().permuted_axes([2, 0, 1]).as_standard_layout().to_owned();
            let got = chw_where(&chw, &k_oihw, &b).unwrap();
            let biased_first = biased.view().permuted_axes([2, 0, 1]).to_owned();
            assert_close(&got, &biased_first, c * 9, &format!("chw where {h}x{w}x{c} o{o}"));

            // The same image channels first, the filters `[r, s, c, o]`.
            let x_nchw = x.view().permuted_axes([0, 3, 1, 2]).as_standard_layout().to_owned();
            let got = nchw_hwio(&x_nchw, &k).unwrap();
            let want_nchw = want.view().permuted_axes([0, 3, 1, 2]).to_owned();
            let what = format!("nchw hwio {h}x{w}x{c} o{o}");
            assert_close(&got, &want_nchw, c * 9, &what);
        }
    });
}

#[test]
fn forms_left_to_the_packed_product_match_naive_loops() {
    threads(|| {
        for (seed, &(n, c, h, w, o)) in SHAPES.iter().enumerate() {
            let x = tensor((n, h, w, c), 800 + seed as u64);
            let k = tensor((1, 1, c, o), 900 + seed as u64);
            let got = nhwc_pointwise(&x, &k).unwrap();
            let want =
                naive_nhwc(&x, |o, c, _, _| k[[0, 0, c, o]], (o, 1, 1), None, Window { stride: 1, pad: 0 }, (h, w));
            assert_close(&got, &want, c, &format!("pointwise {n}x{h}x{w}x{c} o{o}"));

            let kd = Array3::from_shape_vec((3, 3, c), data(9 * c, 1000 + seed as u64)).unwrap();
            let got = nhwc_depthwise(&x, &kd).unwrap();
            let want = Array4::from_shape_fn((n, h - 2, w - 2, c), |(n, i, j, c)| {
                let mut acc = 0.0f64;
                for r in 0..3 {
                    for s in 0..3 {
                        acc += x[[n, i + r, j + s, c]] as f64 * kd[[r, s, c]] as f64;
                    }
                }
                acc
            });
            assert_close(&got, &want, 9, &format!("depthwise nhwc {n}x{h}x{w}x{c}"));
        }
    });
}

#[test]
fn mismatched_channels_are_a_shape_error() {
    let x = tensor((1, 5, 5, 3), 1);
    let k = tensor((3, 3, 4, 2), 2);
    let b = Array1::from_vec(data(2, 3));
    assert!(matches!(nhwc_valid(&x, &k, &b), Err(einlang::Error::Shape { .. })));
}

#[test]
fn into_writes_a_strided_buffer_and_rejects_a_wrong_shape() {
    let (n, c, h, w, o) = (2, 3, 6, 5, 4);
    let x = tensor((n, h, w, c), 11);
    let k = tensor((3, 3, c, o), 12);
    let b = Array1::from_vec(data(o, 13));
    let want =
        naive_nhwc(&x, |o, c, r, s| k[[r, s, c, o]], (o, 3, 3), Some(&b), Window { stride: 1, pad: 0 }, (h - 2, w - 2));
    // The caller's buffer holds the result channels first: `out` is its
    // view in the definition's order, of strides no kernel would choose.
    let mut buffer = Array4::<f32>::from_elem((n, o, h - 2, w - 2), f32::NAN);
    nhwc_valid_into(&x, &k, &b, buffer.view_mut().permuted_axes([0, 2, 3, 1])).unwrap();
    let got = buffer.view().permuted_axes([0, 2, 3, 1]).to_owned();
    assert_close(&got, &want, c * 9, "into a permuted view");
    // A wrong shape is an error naming `out`, and the buffer is untouched.
    let mut wrong = Array4::<f32>::from_elem((n, h - 2, w - 2, o + 1), 7.0);
    match nhwc_valid_into(&x, &k, &b, &mut wrong) {
        Err(einlang::Error::Shape { param, .. }) => assert_eq!(param, "out"),
        other => panic!("expected a shape error naming out, got {other:?}"),
    }
    assert!(wrong.iter().all(|v| *v == 7.0));
}
