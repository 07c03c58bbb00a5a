//! The 1-D and 3-D ONNX-style convolutions and poolings of `std::ml`
//! (`conv1d conv3d max_pool1d average_pool1d max_pool3d average_pool3d`)
//! against plain loops, at f32 and f64, plus cross-checks of the 1-D forms
//! against the 2-D `conv`, `max_pool` and `average_pool` on images of height 1.

mod common;

use common::*;
use einlang::einlang;
use einlang::ndarray::{Array, Array1, Array3, Array5, Dimension, ShapeBuilder};

einlang! {
    use std::ml::*;

    // The f32 functions call the kernels by their own names; the f64 ones
    // call `conv`, `max_pool` and `average_pool`, which pick the kernel by
    // the rank of x.
    pub fn conv1d32(x: [f32; N, C, L], w: [f32; M, K, Q], b: [f32; M], s: [i64; 1], p: [i64; 2], d: [i64; 1], g: i64)
        -> [f32; N, M, ?] { conv1d(x, w, b, s, p, d, g) }
    pub fn conv1d64(x: [f64; N, C, L], w: [f64; M, K, Q], b: [f64; M], s: [i64; 1], p: [i64; 2], d: [i64; 1], g: i64)
        -> [f64; N, M, ?] { conv(x, w, b, s, p, d, g) }
    pub fn conv3d32(x: [f32; N, C, D, H, W], w: [f32; M, K, R, P, Q], b: [f32; M], s: [i64; 3], p: [i64; 6],
        d: [i64; 3], g: i64) -> [f32; N, M, ?, ?, ?] { conv3d(x, w, b, s, p, d, g) }
    pub fn conv3d64(x: [f64; N, C, D, H, W], w: [f64; M, K, R, P, Q], b: [f64; M], s: [i64; 3], p: [i64; 6],
        d: [i64; 3], g: i64) -> [f64; N, M, ?, ?, ?] { conv(x, w, b, s, p, d, g) }
    pub fn conv2d32(x: [f32; N, C, H, W], w: [f32; M, K, P, Q], b: [f32; M], s: [i64; 2], p: [i64; 4], d: [i64; 2], g: i64)
        -> [f32; N, M, ?, ?] { conv(x, w, b, s, p, d, g) }
    pub fn conv2d64(x: [f64; N, C, H, W], w: [f64; M, K, P, Q], b: [f64; M], s: [i64; 2], p: [i64; 4], d: [i64; 2], g: i64)
        -> [f64; N, M, ?, ?] { conv(x, w, b, s, p, d, g) }

    pub fn pool1d32(x: [f32; N, C, L], k: [i64; 1], s: [i64; 1], p: [i64; 1]) -> ([f32; N, C, ?], [f32; N, C, ?]) {
        (max_pool1d(x, k, s, p), average_pool1d(x, k, s, p))
    }
    pub fn pool1d64(x: [f64; N, C, L], k: [i64; 1], s: [i64; 1], p: [i64; 1]) -> ([f64; N, C, ?], [f64; N, C, ?]) {
        (max_pool(x, k, s, p), average_pool(x, k, s, p))
    }
    pub fn pool3d32(x: [f32; N, C, D, H, W], k: [i64; 3], s: [i64; 3], p: [i64; 3])
        -> ([f32; N, C, ?, ?, ?], [f32; N, C, ?, ?, ?]) {
        (max_pool3d(x, k, s, p), average_pool3d(x, k, s, p))
    }
    pub fn pool3d64(x: [f64; N, C, D, H, W], k: [i64; 3], s: [i64; 3], p: [i64; 3])
        -> ([f64; N, C, ?, ?, ?], [f64; N, C, ?, ?, ?]) {
        (max_pool(x, k, s, p), average_pool(x, k, s, p))
    }
    /// The seed's call: literal vectors of `i32` and a literal group.
    pub fn conv_seed(x: [f32; N, C, L], w: [f32; M, K, Q], b: [f32; M]) -> [f32; N, M, ?] {
        conv(x, w, b, [1], [0, 0], [1], 1)
    }
    /// A rank that no kernel takes is an error when it runs.
    pub fn conv_rank2(x: [f32; N, C], w: [f32; M, K], b: [f32; M]) -> [f32; N, C] {
        conv(x, w, b, [1], [0, 0], [1], 1)
    }
    pub fn pool2d64(x: [f64; N, C, H, W], k: [i64; 2], s: [i64; 2], p: [i64; 2]) -> ([f64; N, C, ?, ?], [f64; N, C, ?, ?]) {
        (max_pool(x, k, s, p), average_pool(x, k, s, p))
    }
}

// ===========================================================================
// Data and references
// ===========================================================================

fn rand_f64<D: Dimension, Sh: ShapeBuilder<Dim = D>>(shape: Sh, seed: u64) -> Array<f64, D> {
    let mut rng = Rng::new(seed);
    Array::from_shape_simple_fn(shape, || rng.range(-1.0, 1.0))
}

fn vec_i64(a: &[usize]) -> Array1<i64> {
    Array1::from_iter(a.iter().map(|&v| v as i64))
}

/// Position `o * stride + k * dilation - pad_begin` inside `0..len`, if it is.
fn tap(o: usize, stride: usize, k: usize, dilation: usize, pad_begin: usize, len: usize) -> Option<usize> {
    let i = (o * stride + k * dilation) as i64 - pad_begin as i64;
    (i >= 0 && (i as usize) < len).then_some(i as usize)
}

/// Output extent of a padded, dilated window sweep.
fn out_len(len: usize, pad_begin: usize, pad_end: usize, k: usize, stride: usize, dilation: usize) -> usize {
    (len + pad_begin + pad_end - dilation * (k - 1) - 1) / stride + 1
}

#[allow(clippy::too_many_arguments)]
fn conv1d_ref(
    x: &Array3<f64>,
    w: &Array3<f64>,
    b: &Array1<f64>,
    s: usize,
    pads: [usize; 2],
    d: usize,
    group: usize,
) -> Array3<f64> {
    let (n, c, l) = x.dim();
    let (m, cpg, k) = w.dim();
    assert_eq!(cpg, c / group);
    let fpg = m / group;
    let ol = out_len(l, pads[0], pads[1], k, s, d);
    let mut y = Array3::zeros((n, m, ol));
    for nn in 0..n {
        for o in 0..m {
            for i in 0..ol {
                let mut acc = b[o];
                for cl in 0..cpg {
                    for r in 0..k {
                        if let Some(il) = tap(i, s, r, d, pads[0], l) {
                            acc += x[[nn, (o / fpg) * cpg + cl, il]] * w[[o, cl, r]];
                        }
                    }
                }
                y[[nn, o, i]] = acc;
            }
        }
    }
    y
}

#[allow(clippy::too_many_arguments)]
fn conv3d_ref(
    x: &Array5<f64>,
    w: &Array5<f64>,
    b: &Array1<f64>,
    s: [usize; 3],
    pads: [usize; 6],
    d: [usize; 3],
    group: usize,
) -> Array5<f64> {
    let (n, c, dd, h, wd) = x.dim();
    let (m, cpg, kd, kh, kw) = w.dim();
    assert_eq!(cpg, c / group);
    let fpg = m / group;
    let od = out_len(dd, pads[0], pads[3], kd, s[0], d[0]);
    let oh = out_len(h, pads[1], pads[4], kh, s[1], d[1]);
    let ow = out_len(wd, pads[2], pads[5], kw, s[2], d[2]);
    let mut y = Array5::zeros((n, m, od, oh, ow));
    for nn in 0..n {
        for o in 0..m {
            for t in 0..od {
                for i in 0..oh {
                    for j in 0..ow {
                        let mut acc = b[o];
                        for cl in 0..cpg {
                            for r in 0..kd {
                                for p in 0..kh {
                                    for q in 0..kw {
                                        let (Some(id), Some(ih), Some(iw)) = (
                                            tap(t, s[0], r, d[0], pads[0], dd),
                                            tap(i, s[1], p, d[1], pads[1], h),
                                            tap(j, s[2], q, d[2], pads[2], wd),
                                        ) else {
                                            continue;
                                        };
                                        acc += x[[nn, (o / fpg) * cpg + cl, id, ih, iw]] * w[[o, cl, r, p, q]];
                                    }
                                }
                            }
                        }
                        y[[nn, o, t, i, j]] = acc;
                    }
                }
            }
        }
    }
    y
}

/// Max and average pooling of [N, C, L] by loops; padding (symmetric) is
/// skipped, and the average divides by the number of positions inside.
fn pool1d_ref(x: &Array3<f64>, k: usize, s: usize, p: usize) -> (Array3<f64>, Array3<f64>) {
    let (n, c, l) = x.dim();
    let ol = out_len(l, p, p, k, s, 1);
    let mut mx = Array3::zeros((n, c, ol));
    let mut avg = Array3::zeros((n, c, ol));
    for nn in 0..n {
        for cc in 0..c {
            for i in 0..ol {
                let (mut m, mut sum, mut cnt) = (f64::NEG_INFINITY, 0.0, 0.0);
                for r in 0..k {
                    if let Some(il) = tap(i, s, r, 1, p, l) {
                        let v = x[[nn, cc, il]];
                        m = m.max(v);
                        sum += v;
                        cnt += 1.0;
                    }
                }
                mx[[nn, cc, i]] = m;
                avg[[nn, cc, i]] = sum / cnt;
            }
        }
    }
    (mx, avg)
}

/// Max and average pooling of [N, C, D, H, W] by loops, as `pool1d_ref`.
fn pool3d_ref(x: &Array5<f64>, k: [usize; 3], s: [usize; 3], p: [usize; 3]) -> (Array5<f64>, Array5<f64>) {
    let (n, c, dd, h, w) = x.dim();
    let od = out_len(dd, p[0], p[0], k[0], s[0], 1);
    let oh = out_len(h, p[1], p[1], k[1], s[1], 1);
    let ow = out_len(w, p[2], p[2], k[2], s[2], 1);
    let mut mx = Array5::zeros((n, c, od, oh, ow));
    let mut avg = Array5::zeros((n, c, od, oh, ow));
    for nn in 0..n {
        for cc in 0..c {
            for t in 0..od {
                for i in 0..oh {
                    for j in 0..ow {
                        let (mut m, mut sum, mut cnt) = (f64::NEG_INFINITY, 0.0, 0.0);
                        for r in 0..k[0] {
                            for q in 0..k[1] {
                                for u in 0..k[2] {
                                    let (Some(id), Some(ih), Some(iw)) = (
                                        tap(t, s[0], r, 1, p[0], dd),
                                        tap(i, s[1], q, 1, p[1], h),
                                        tap(j, s[2], u, 1, p[2], w),
                                    ) else {
                                        continue;
                                    };
                                    let v = x[[nn, cc, id, ih, iw]];
                                    m = m.max(v);
                                    sum += v;
                                    cnt += 1.0;
                                }
                            }
                        }
                        mx[[nn, cc, t, i, j]] = m;
                        avg[[nn, cc, t, i, j]] = sum / cnt;
                    }
                }
            }
        }
    }
    (mx, avg)
}

// ===========================================================================
// Convolution
// ===========================================================================

#[test]
fn conv1d_with_strides_pads_dilations_and_groups() {
    let x = rand_f64((2, 6, 11), 100);
    let b = rand_f64(6, 101);
    // (group, stride, [begin, end], dilation, kernel)
    for (group, s, p, d, k) in [
        (1usize, 1usize, [0usize, 0], 1usize, 3usize),
        (1, 2, [1, 2], 1, 3),
        (2, 3, [2, 0], 2, 3),
        (3, 1, [0, 3], 3, 2),
        (6, 2, [1, 1], 1, 4),
        (2, 4, [3, 1], 2, 1),
    ] {
        let w = rand_f64((6, 6 / group, k), 102 + group as u64 * 10 + k as u64);
        let want = conv1d_ref(&x, &w, &b, s, p, d, group);
        let (sv, pv, dv) = (vec_i64(&[s]), vec_i64(&p), vec_i64(&[d]));
        let got = conv1d64(&x, &w, &b, &sv, &pv, &dv, group as i64).unwrap();
        assert_eq!(got.dim(), want.dim(), "group {group} s {s} p {p:?} d {d} k {k}");
        assert_close(&got, &want, 1e-12);
        let (x32, w32, b32) = (to_f32(&x), to_f32(&w), to_f32(&b));
        let got = conv1d32(&x32, &w32, &b32, &sv, &pv, &dv, group as i64).unwrap();
        let want = conv1d_ref(&x32.mapv(f64::from), &w32.mapv(f64::from), &b32.mapv(f64::from), s, p, d, group);
        assert_close(&got, &to_f32(&want), 1e-5);
    }
}

#[test]
fn conv1d_by_hand() {
    // x = [1, 2, 3, 4], w = [2, -1], stride 1, pads [1, 0], dilation 1:
    // taps (pad, 1), (1, 2), (2, 3), (3, 4) give -1, 0, 1, 2, plus 0.5.
    let x = Array3::from_shape_vec((1, 1, 4), vec![1.0f64, 2.0, 3.0, 4.0]).unwrap();
    let w = Array3::from_shape_vec((1, 1, 2), vec![2.0f64, -1.0]).unwrap();
    let got =
        conv1d64(&x, &w, &Array1::from_elem(1, 0.5), &vec_i64(&[1]), &vec_i64(&[1, 0]), &vec_i64(&[1]), 1).unwrap();
    assert_eq!(got.into_raw_vec_and_offset().0, vec![-0.5, 0.5, 1.5, 2.5]);
    // Stride 2, dilation 2, pads [0, 1]: taps (1, 3) and (3, pad).
    let got = conv1d64(&x, &w, &Array1::zeros(1), &vec_i64(&[2]), &vec_i64(&[0, 1]), &vec_i64(&[2]), 1).unwrap();
    assert_eq!(got.into_raw_vec_and_offset().0, vec![-1.0, 6.0]);
}

#[test]
fn conv1d_equals_conv_on_images_of_height_one() {
    let x = rand_f64((2, 4, 9), 110);
    let b = rand_f64(4, 111);
    for (group, s, p, d) in [(1usize, 1usize, [0usize, 0], 1usize), (2, 2, [1, 3], 2), (4, 3, [2, 1], 1)] {
        let w = rand_f64((4, 4 / group, 3), 112 + group as u64);
        let got = conv1d64(&x, &w, &b, &vec_i64(&[s]), &vec_i64(&p), &vec_i64(&[d]), group as i64).unwrap();
        let x4 = x.clone().into_shape_with_order((2, 4, 1, 9)).unwrap();
        let w4 = w.clone().into_shape_with_order((4, 4 / group, 1, 3)).unwrap();
        let img =
            conv2d64(&x4, &w4, &b, &vec_i64(&[1, s]), &vec_i64(&[0, p[0], 0, p[1]]), &vec_i64(&[1, d]), group as i64)
                .unwrap();
        let (n, m, one, ow) = img.dim();
        assert_eq!(one, 1);
        assert_close(&got, &img.into_shape_with_order((n, m, ow)).unwrap(), 1e-12);

        let (x32, w32, b32) = (to_f32(&x), to_f32(&w), to_f32(&b));
        let got = conv1d32(&x32, &w32, &b32, &vec_i64(&[s]), &vec_i64(&p), &vec_i64(&[d]), group as i64).unwrap();
        let img = conv2d32(
            &x32.into_shape_with_order((2, 4, 1, 9)).unwrap(),
            &w32.into_shape_with_order((4, 4 / group, 1, 3)).unwrap(),
            &b32,
            &vec_i64(&[1, s]),
            &vec_i64(&[0, p[0], 0, p[1]]),
            &vec_i64(&[1, d]),
            group as i64,
        )
        .unwrap();
        let (n, m, _, ow) = img.dim();
        assert_close(&got, &img.into_shape_with_order((n, m, ow)).unwrap(), 1e-6);
    }
}

#[test]
fn conv3d_with_strides_pads_dilations_and_groups() {
    let x = rand_f64((2, 4, 5, 6, 7), 120);
    let b = rand_f64(4, 121);
    // (group, strides, pads [d, h, w begins, d, h, w ends], dilations, kernel)
    for (group, s, p, d, k) in [
        (1usize, [1usize, 1, 1], [0usize, 0, 0, 0, 0, 0], [1usize, 1, 1], [2usize, 3, 2]),
        (1, [2, 1, 3], [1, 0, 2, 0, 1, 1], [1, 2, 1], [3, 2, 3]),
        (2, [1, 2, 2], [0, 2, 1, 2, 0, 1], [2, 1, 2], [2, 3, 2]),
        (4, [3, 1, 2], [2, 1, 0, 1, 2, 3], [1, 1, 3], [2, 2, 2]),
    ] {
        let w = rand_f64((4, 4 / group, k[0], k[1], k[2]), 122 + group as u64 * 7 + k[0] as u64);
        let want = conv3d_ref(&x, &w, &b, s, p, d, group);
        let (sv, pv, dv) = (vec_i64(&s), vec_i64(&p), vec_i64(&d));
        let got = conv3d64(&x, &w, &b, &sv, &pv, &dv, group as i64).unwrap();
        assert_eq!(got.dim(), want.dim(), "group {group} s {s:?} p {p:?} d {d:?} k {k:?}");
        assert_close(&got, &want, 1e-12);
        let (x32, w32, b32) = (to_f32(&x), to_f32(&w), to_f32(&b));
        let got = conv3d32(&x32, &w32, &b32, &sv, &pv, &dv, group as i64).unwrap();
        let want = conv3d_ref(&x32.mapv(f64::from), &w32.mapv(f64::from), &b32.mapv(f64::from), s, p, d, group);
        assert_close(&got, &to_f32(&want), 1e-5);
    }
}

#[test]
fn conv3d_with_depth_one_equals_conv() {
    let x = rand_f64((1, 2, 1, 5, 6), 130);
    let w = rand_f64((3, 2, 1, 3, 2), 131);
    let b = rand_f64(3, 132);
    let got =
        conv3d64(&x, &w, &b, &vec_i64(&[1, 2, 1]), &vec_i64(&[0, 1, 0, 0, 2, 1]), &vec_i64(&[1, 1, 2]), 1).unwrap();
    let img = conv2d64(
        &x.into_shape_with_order((1, 2, 5, 6)).unwrap(),
        &w.into_shape_with_order((3, 2, 3, 2)).unwrap(),
        &b,
        &vec_i64(&[2, 1]),
        &vec_i64(&[1, 0, 2, 1]),
        &vec_i64(&[1, 2]),
        1,
    )
    .unwrap();
    let (n, m, oh, ow) = img.dim();
    assert_eq!(got.dim(), (n, m, 1, oh, ow));
    assert_close(&got, &img.into_shape_with_order((n, m, 1, oh, ow)).unwrap(), 1e-12);
}

// ===========================================================================
// Pooling
// ===========================================================================

#[test]
fn max_and_average_pool1d() {
    let x = rand_f64((2, 3, 10), 140);
    let x32 = to_f32(&x);
    // (kernel, stride, symmetric pad)
    for (k, s, p) in [(2usize, 2usize, 0usize), (3, 1, 1), (4, 3, 2), (3, 2, 2), (1, 3, 0), (5, 4, 1)] {
        let (kv, sv, pv) = (vec_i64(&[k]), vec_i64(&[s]), vec_i64(&[p]));
        let (wm, wa) = pool1d_ref(&x, k, s, p);
        let (m, avg) = pool1d64(&x, &kv, &sv, &pv).unwrap();
        assert_eq!(m.dim(), wm.dim(), "k {k} s {s} p {p}");
        assert_close(&m, &wm, 1e-12);
        assert_close(&avg, &wa, 1e-12);
        let (wm, wa) = pool1d_ref(&x32.mapv(f64::from), k, s, p);
        let (m, avg) = pool1d32(&x32, &kv, &sv, &pv).unwrap();
        assert_close(&m, &to_f32(&wm), 1e-6);
        assert_close(&avg, &to_f32(&wa), 1e-5);
    }
}

#[test]
fn average_pool1d_divides_by_the_positions_inside() {
    // Kernel 3, stride 2, pad 1 over [1, 2, 3, 4, 5]: windows (pad, 1, 2),
    // (2, 3, 4), (4, 5, pad) average 1.5, 3 and 4.5; maxima 2, 4, 5.
    let x = Array3::from_shape_vec((1, 1, 5), vec![1.0f64, 2.0, 3.0, 4.0, 5.0]).unwrap();
    let (m, avg) = pool1d64(&x, &vec_i64(&[3]), &vec_i64(&[2]), &vec_i64(&[1])).unwrap();
    assert_eq!(m.into_raw_vec_and_offset().0, vec![2.0, 4.0, 5.0]);
    assert_eq!(avg.into_raw_vec_and_offset().0, vec![1.5, 3.0, 4.5]);
    // Negative values: padding must not act as a 0 in the maximum.
    let (m, _) = pool1d64(&x.mapv(|v| -v), &vec_i64(&[2]), &vec_i64(&[1]), &vec_i64(&[1])).unwrap();
    assert_eq!(m.into_raw_vec_and_offset().0, vec![-1.0, -1.0, -2.0, -3.0, -4.0, -5.0]);
}

#[test]
fn pool1d_equals_pool_on_images_of_height_one() {
    let x = rand_f64((2, 2, 9), 150);
    for (k, s, p) in [(3usize, 2usize, 1usize), (2, 1, 0), (4, 3, 2)] {
        let (m, avg) = pool1d64(&x, &vec_i64(&[k]), &vec_i64(&[s]), &vec_i64(&[p])).unwrap();
        let x4 = x.clone().into_shape_with_order((2, 2, 1, 9)).unwrap();
        let (m2, avg2) = pool2d64(&x4, &vec_i64(&[1, k]), &vec_i64(&[1, s]), &vec_i64(&[0, p])).unwrap();
        let (n, c, _, ow) = m2.dim();
        assert_close(&m, &m2.into_shape_with_order((n, c, ow)).unwrap(), 0.0);
        assert_close(&avg, &avg2.into_shape_with_order((n, c, ow)).unwrap(), 1e-12);
    }
}

#[test]
fn max_and_average_pool3d() {
    let x = rand_f64((2, 2, 5, 6, 7), 160);
    let x32 = to_f32(&x);
    // (kernel, strides, symmetric pads)
    for (k, s, p) in [
        ([2usize, 2, 2], [2usize, 2, 2], [0usize, 0, 0]),
        ([3, 2, 3], [1, 2, 2], [1, 1, 0]),
        ([2, 3, 4], [3, 1, 3], [1, 0, 2]),
        ([3, 3, 2], [2, 3, 1], [2, 1, 1]),
    ] {
        let (kv, sv, pv) = (vec_i64(&k), vec_i64(&s), vec_i64(&p));
        let (wm, wa) = pool3d_ref(&x, k, s, p);
        let (m, avg) = pool3d64(&x, &kv, &sv, &pv).unwrap();
        assert_eq!(m.dim(), wm.dim(), "k {k:?} s {s:?} p {p:?}");
        assert_close(&m, &wm, 1e-12);
        assert_close(&avg, &wa, 1e-12);
        let (wm, wa) = pool3d_ref(&x32.mapv(f64::from), k, s, p);
        let (m, avg) = pool3d32(&x32, &kv, &sv, &pv).unwrap();
        assert_close(&m, &to_f32(&wm), 1e-6);
        assert_close(&avg, &to_f32(&wa), 1e-5);
    }
}

#[test]
fn conv_picks_the_kernel_by_rank() {
    let x = rand_f64((1, 2, 6), 150);
    let w = rand_f64((3, 2, 2), 151);
    let b = rand_f64(3, 152);
    let got = conv_seed(&to_f32(&x), &to_f32(&w), &to_f32(&b)).unwrap();
    let want = conv1d_ref(&x, &w, &b, 1, [0, 0], 1, 1);
    assert_close(&got, &to_f32(&want), 1e-5);
    let x2 = einlang::ndarray::Array2::<f32>::zeros((1, 2));
    let w2 = einlang::ndarray::Array2::<f32>::zeros((1, 2));
    assert!(matches!(conv_rank2(&x2, &w2, &Array1::zeros(1)), Err(einlang::Error::Assert { .. })));
}
