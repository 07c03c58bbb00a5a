//! `f32` convolutions over the channels-first layouts, which `opt::conv`
//! hands to the runtime's direct kernel (`einlang_runtime::conv`): valid
//! with a bias (window extents from the arguments), padded by a guard (the
//! kernel written first, asymmetric padding), with an activation after the
//! bias, a single image without a batch axis, literal strides (2, mixed 3
//! and 2) and dilations, and both gradients of a layer, and
//! `std::ml::conv2d` with run-time strides, pads and dilations (the kernel
//! where they allow it, the packed product elsewhere). Each is
//! compared with naive
//! `f64` loops written here on odd shapes (1, 7, primes, empty extents) and
//! on one to three threads; the `checked` feature runs the reference loop
//! nests instead.

mod conv_support;

use conv_support::{assert_close, threads};
use einlang::einlang;
use einlang::ndarray::{Array1, Array4};

einlang! {
    pub fn conv_valid(x: [f32; N, C, H, W], k: [f32; O, C, KH, KW], b: [f32; O]) -> [f32; N, O, H - KH + 1, W - KW + 1] {
        let y[n, o, i, j] = sum[c, r, s](x[n, c, i + r, j + s] * k[o, c, r, s]) + b[o];
        y
    }

    /// Same padding by a guard, the kernel first, the loops in another order.
    pub fn conv_same(x: [f32; N, C, H, W], k: [f32; O, C, 3, 3]) -> [f32; N, O, H, W] {
        let y[n, o, i in 0..H, j in 0..W] = sum[s, c, r](
            if ih >= 0 && ih < H && iw >= 0 && iw < W { k[o, c, r, s] * x[n, c, ih, iw] } else { 0.0 }
            where ih = i + r - 1, iw = j + s - 1
        );
        y
    }

    /// Two rows of padding on top, none on the left, a 3x5 window.
    pub fn conv_skewed(x: [f32; N, C, H, W], k: [f32; O, C, 3, 5]) -> [f32; N, O, H + 1, W - 4] {
        let y[n, o, i in 0..H + 1, j in 0..W - 4] = sum[c, r, s](
            if ih >= 0 && ih < H && iw >= 0 && iw < W { x[n, c, ih, iw] * k[o, c, r, s] } else { 0.0 }
            where ih = i + r - 2, iw = j + s
        );
        y
    }

    /// A bias and a ReLU after the sum.
    pub fn conv_relu(x: [f32; N, C, H, W], k: [f32; O, C, 3, 3], b: [f32; O]) -> [f32; N, O, H - 2, W - 2] {
        let y[n, o, i, j] = max(sum[c, r, s](x[n, c, i + r, j + s] * k[o, c, r, s]) + b[o], 0.0);
        y
    }

    /// The window's indices bound in a `where`, a ReLU after the bias.
    pub fn conv_where(x: [f32; N, C, H, W], k: [f32; O, C, KH, KW], b: [f32; O]) -> [f32; N, O, H - KH + 1, W - KW + 1] {
        let y[n, o, i, j] = max(sum[c, r, s](x[n, c, iy, ix] * k[o, c, r, s]) + b[o], 0.0) where iy = i + r, ix = j + s;
        y
    }

    /// A ReLU written with the zero first, no bias, same padding.
    pub fn conv_relu_first(x: [f32; N, C, H, W], k: [f32; O, C, 3, 3]) -> [f32; N, O, H, W] {
        let y[n, o, i in 0..H, j in 0..W] = max(0.0, sum[c, r, s](
            if ih >= 0 && ih < H && iw >= 0 && iw < W { x[n, c, ih, iw] * k[o, c, r, s] } else { 0.0 }
            where ih = i + r - 1, iw = j + s - 1
        ));
        y
    }

    /// One image, no batch axis.
    pub fn conv_single(x: [f32; C, H, W], k: [f32; O, C, 3, 3], b: [f32; O]) -> [f32; O, H - 2, W - 2] {
        let y[o, i, j] = sum[c, r, s](x[c, i + r, j + s] * k[o, c, r, s]) + b[o];
        y
    }

    /// Half the squared output of a padded layer, and its gradients.
    pub fn layer_grads(x: [f32; N, C, H, W], k: [f32; O, C, 3, 3], b: [f32; O]) -> ([f32; N, C, H, W], [f32; O, C, 3, 3]) {
        let y[n, o, i in 0..H, j in 0..W] = sum[c, r, s](
            if ih >= 0 && ih < H && iw >= 0 && iw < W { x[n, c, ih, iw] * k[o, c, r, s] } else { 0.0 }
            where ih = i + r - 1, iw = j + s - 1
        ) + b[o];
        let loss = sum[n, o, i, j](y[n, o, i, j] * y[n, o, i, j]) / 2.0;
        (@loss / @x, @loss / @k)
    }

    /// Stride 2, one row and column of padding before the image and as
    /// many after as the output needs, a bias (ONNX's `strides = 2, pads =
    /// 1`).
    pub fn conv_s2(x: [f32; N, C, H, W], k: [f32; O, C, 3, 3], b: [f32; O]) -> [f32; N, O, (H + 1) / 2, (W + 1) / 2] {
        let y[n, o, i in 0..(H + 1) / 2, j in 0..(W + 1) / 2] = sum[c, r, s](
            if ih >= 0 && ih < H && iw >= 0 && iw < W { x[n, c, ih, iw] * k[o, c, r, s] } else { 0.0 }
            where ih = 2 * i + r - 1, iw = 2 * j + s - 1
        ) + b[o];
        y
    }

    /// Strides 3 and 2 written in the read, valid.
    pub fn conv_s32(x: [f32; N, C, H, W], k: [f32; O, C, 3, 3]) -> [f32; N, O, (H - 3) / 3 + 1, (W - 3) / 2 + 1] {
        let y[n, o, i, j] = sum[c, r, s](x[n, c, 3 * i + r, j * 2 + s] * k[o, c, r, s]);
        y
    }

    /// Dilation 2, padded to the image's extents.
    pub fn conv_dilated(x: [f32; N, C, H, W], k: [f32; O, C, 3, 3]) -> [f32; N, O, H, W] {
        let y[n, o, i in 0..H, j in 0..W] = sum[c, r, s](
            if ih >= 0 && ih < H && iw >= 0 && iw < W { k[o, c, r, s] * x[n, c, ih, iw] } else { 0.0 }
            where ih = i + 2 * r - 2, iw = j + 2 * s - 2
        );
        y
    }

    /// Stride 2 and dilation 2 together, pads 2 and 1, a ReLU after the bias.
    pub fn conv_s2_d2_relu(x: [f32; N, C, H, W], k: [f32; O, C, 3, 2], b: [f32; O]) -> [f32; N, O, (H + 1) / 2, W / 2] {
        let y[n, o, i in 0..(H + 1) / 2, j in 0..W / 2] = max(sum[c, r, s](
            if ih >= 0 && ih < H && iw >= 0 && iw < W { x[n, c, ih, iw] * k[o, c, r, s] } else { 0.0 }
            where ih = 2 * i + 2 * r - 2, iw = 2 * j + 2 * s - 1
        ) + b[o], 0.0);
        y
    }

    /// The input gradient of a dilated layer with uneven pads and a 3x2
    /// window, against a given output gradient `g` (a flipped convolution).
    pub fn dilated_input_grad(x: [f32; N, C, H, W], k: [f32; O, C, 3, 2], g: [f32; N, O, H, W]) -> [f32; N, C, H, W] {
        let y[n, o, i in 0..H, j in 0..W] = sum[c, r, s](
            if ih >= 0 && ih < H && iw >= 0 && iw < W { x[n, c, ih, iw] * k[o, c, r, s] } else { 0.0 }
            where ih = i + 2 * r - 2, iw = j + s - 1
        );
        let loss = sum[n, o, i, j](y[n, o, i, j] * g[n, o, i, j]);
        @loss / @x
    }

    /// The standard library's convolution, whose strides, pads and
    /// dilations are run-time values: the direct kernel where the strides
    /// and dilations are positive and the pads not negative, the packed
    /// product elsewhere.
    pub fn std_conv2d(x: [f32; N, C, H, W], k: [f32; O, C, KH, KW], b: [f32; O], sh: i64, sw: i64, ph: i64, pw: i64, dh: i64, dw: i64) -> [f32; N, O, ?, ?] {
        std::ml::conv2d(x, k, b, sh, sw, ph, pw, dh, dw)
    }
}

/// Values in `[-1, 1)` from a small xorshift sequence.
fn data(len: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0) as f32
        })
        .collect()
}

fn tensor(shape: (usize, usize, usize, usize), seed: u64) -> Array4<f32> {
    Array4::from_shape_vec(shape, data(shape.0 * shape.1 * shape.2 * shape.3, seed)).unwrap()
}

/// `y[n, o, i, j] = bias[o] + sum x[n, c, i + r - top, j + s - left] k[o, c, r, s]`
/// over the reads inside `x`, in `f64`, then `max(_, 0)` when `relu`.
fn naive(
    x: &Array4<f32>,
    k: &Array4<f32>,
    b: Option<&Array1<f32>>,
    pad: (usize, usize),
    out: (usize, usize),
    relu: bool,
) -> Array4<f64> {
    naive_window(x, k, b, (1, 1), (pad.0 as isize, pad.1 as isize), (1, 1), out, relu)
}

const SHAPES: &[(usize, usize, usize, usize, usize)] = &[
    // (N, C, H, W, O)
    (1, 1, 3, 3, 1),
    (2, 3, 7, 7, 5),
    (1, 7, 13, 11, 17),
    (3, 5, 9, 31, 7),
    (1, 9, 5, 70, 13),
    (0, 3, 5, 5, 2),
    (2, 0, 5, 5, 3),
    (2, 3, 5, 5, 0),
];

#[test]
fn valid_convolutions_with_a_bias_match_naive_loops() {
    threads(|| {
        for &(n, c, h, w, o) in SHAPES {
            for (kh, kw) in [(3, 3), (1, 1), (2, 5)].into_iter().filter(|&(kh, kw)| kh <= h && kw <= w) {
                let (x, k, b) = (tensor((n, c, h, w), 1), tensor((o, c, kh, kw), 2), Array1::from(data(o, 3)));
                let got = conv_valid(&x, &k, &b).unwrap();
                let want = naive(&x, &k, Some(&b), (0, 0), (h + 1 - kh, w + 1 - kw), false);
                assert_close(&got, &want, c * kh * kw, &format!("valid {n}x{c}x{h}x{w} o{o} {kh}x{kw}"));
            }
        }
    });
}

#[test]
fn padded_convolutions_match_naive_loops() {
    threads(|| {
        for &(n, c, h, w, o) in SHAPES {
            let (x, k) = (tensor((n, c, h, w), 4), tensor((o, c, 3, 3), 5));
            let got = conv_same(&x, &k).unwrap();
            assert_close(
                &got,
                &naive(&x, &k, None, (1, 1), (h, w), false),
                c * 9,
                &format!("same {n}x{c}x{h}x{w} o{o}"),
            );
            if w < 4 {
                continue;
            }
            let k = tensor((o, c, 3, 5), 6);
            let got = conv_skewed(&x, &k).unwrap();
            let want = naive(&x, &k, None, (2, 0), (h + 1, w - 4), false);
            assert_close(&got, &want, c * 15, &format!("skewed {n}x{c}x{h}x{w} o{o}"));
        }
        // An image of one pixel: every window reads mostly padding.
        let (x, k) = (tensor((2, 3, 1, 1), 7), tensor((4, 3, 3, 3), 8));
        assert_close(&conv_same(&x, &k).unwrap(), &naive(&x, &k, None, (1, 1), (1, 1), false), 27, "one pixel");
    });
}

#[test]
fn a_single_image_is_a_batch_of_one() {
    threads(|| {
        for &(_, c, h, w, o) in SHAPES {
            let (x, k, b) = (tensor((1, c, h, w), 15), tensor((o, c, 3, 3), 16), Array1::from(data(o, 17)));
            let x3 = x.index_axis(einlang::ndarray::Axis(0), 0).to_owned();
            let got = conv_single(&x3, &k, &b).unwrap().insert_axis(einlang::ndarray::Axis(0));
            let want = naive(&x, &k, Some(&b), (0, 0), (h - 2, w - 2), false);
            assert_close(&got, &want, c * 9, &format!("single {c}x{h}x{w} o{o}"));
        }
    });
}

/// The kernel applies a ReLU as it stores (`Conv::relu`): written either
/// way round, into a buffer of other strides, and a NaN in the image gives
/// 0 where it is read, as `max` has it.
#[test]
fn a_relu_of_the_sum_is_applied_by_the_kernel() {
    threads(|| {
        for &(n, c, h, w, o) in SHAPES {
            let (x, k) = (tensor((n, c, h, w), 12), tensor((o, c, 3, 3), 13));
            let want = naive(&x, &k, None, (1, 1), (h, w), true);
            let got = conv_relu_first(&x, &k).unwrap();
            assert_close(&got, &want, c * 9, &format!("relu first {n}x{c}x{h}x{w} o{o}"));
            let mut back = Array4::<f32>::from_elem((w, h, o, n), f32::NAN);
            let mut view = back.view_mut().reversed_axes();
            conv_relu_first_into(&x, &k, &mut view).unwrap();
            assert_close(&view.to_owned(), &want, c * 9, &format!("relu first into {n}x{c}x{h}x{w} o{o}"));
        }
    });
    let (mut x, k, b) = (tensor((1, 2, 5, 5), 14), tensor((3, 2, 3, 3), 15), Array1::from(data(3, 16)));
    x[[0, 1, 2, 2]] = f32::NAN;
    let got = conv_relu(&x, &k, &b).unwrap();
    // Every output of the 3 x 3 valid output reads (2, 2).
    assert!(got.iter().all(|&v| v == 0.0), "{got:?}");
}

#[test]
fn an_activation_after_the_bias_matches_loops() {
    threads(|| {
        for &(n, c, h, w, o) in SHAPES {
            let (x, k, b) = (tensor((n, c, h, w), 9), tensor((o, c, 3, 3), 10), Array1::from(data(o, 11)));
            let got = conv_relu(&x, &k, &b).unwrap();
            let want = naive(&x, &k, Some(&b), (0, 0), (h - 2, w - 2), true);
            assert_close(&got, &want, c * 9, &format!("relu {n}x{c}x{h}x{w} o{o}"));
            let got = conv_where(&x, &k, &b).unwrap();
            assert_close(&got, &want, c * 9, &format!("where {n}x{c}x{h}x{w} o{o}"));
        }
    });
}

#[test]
fn wrong_extents_are_errors_not_panics() {
    let (x, k, b) = (tensor((1, 3, 1, 5), 1), tensor((2, 3, 3, 3), 2), Array1::from(data(2, 3)));
    assert!(conv_valid(&x, &k, &b).is_err());
    let k = tensor((2, 4, 3, 3), 2);
    assert!(conv_valid(&tensor((1, 3, 5, 5), 1), &k, &b).is_err());
}

#[test]
fn gradients_of_a_padded_layer_match_naive_loops() {
    threads(|| {
        for &(n, c, h, w, o) in &[(1, 1, 3, 3, 1), (2, 3, 7, 5, 4), (1, 5, 6, 11, 7)] {
            let (x, k, b) = (tensor((n, c, h, w), 12), tensor((o, c, 3, 3), 13), Array1::from(data(o, 14)));
            let (dx, dk) = layer_grads(&x, &k, &b).unwrap();
            let y = naive(&x, &k, Some(&b), (1, 1), (h, w), false);
            let mut want_dx = Array4::<f64>::zeros((n, c, h, w));
            let mut want_dk = Array4::<f64>::zeros((o, c, 3, 3));
            for ((nn, oo, i, j), dy) in y.indexed_iter() {
                for cc in 0..c {
                    for r in 0..3 {
                        for s in 0..3 {
                            let (p, q) = ((i + r) as isize - 1, (j + s) as isize - 1);
                            if p >= 0 && (p as usize) < h && q >= 0 && (q as usize) < w {
                                let (p, q) = (p as usize, q as usize);
                                want_dx[[nn, cc, p, q]] += dy * k[[oo, cc, r, s]] as f64;
                                want_dk[[oo, cc, r, s]] += dy * x[[nn, cc, p, q]] as f64;
                            }
                        }
                    }
                }
            }
            assert_close(&dx, &want_dx, o * 9 * (c * 9 + 1), "dx");
            assert_close(&dk, &want_dk, n * h * w * (c * 9 + 1), "dk");
        }
    });
}

/// `d_x` of `sum(y * g)` for `y` the layer of `dilated_input_grad`, by
/// hand: every term `x[n, c, i + 2r - 2, j + s - 1] k[o, c, r, s]` of `y`
/// adds `g[n, o, i, j] k[o, c, r, s]` to the gradient at its read.
fn dilated_grad_by_hand(x: &Array4<f32>, k: &Array4<f32>, g: &Array4<f32>) -> Array4<f64> {
    let (n, c, h, w) = x.dim();
    let (o, _, kh, kw) = k.dim();
    let mut dx = Array4::<f64>::zeros((n, c, h, w));
    for ((nn, oo, i, j), gv) in g.indexed_iter() {
        for cc in 0..c {
            for r in 0..kh {
                for s in 0..kw {
                    let (p, q) = ((i + 2 * r) as isize - 2, (j + s) as isize - 1);
                    if p >= 0 && (p as usize) < h && q >= 0 && (q as usize) < w && oo < o {
                        dx[[nn, cc, p as usize, q as usize]] += *gv as f64 * k[[oo, cc, r, s]] as f64;
                    }
                }
            }
        }
    }
    dx
}

#[test]
fn input_gradients_match_hand_loops_and_finite_differences() {
    threads(|| {
        for &(n, c, h, w, o) in SHAPES.iter().chain(&[(2, 4, 11, 13, 6), (1, 3, 1, 1, 2)]) {
            let what = format!("dilated input gradient {n}x{c}x{h}x{w} o{o}");
            let (x, k, g) = (tensor((n, c, h, w), 31), tensor((o, c, 3, 2), 32), tensor((n, o, h, w), 33));
            let dx = dilated_input_grad(&x, &k, &g).unwrap();
            assert_close(&dx, &dilated_grad_by_hand(&x, &k, &g), o * 6, &what);
            // Central differences of the loss (linear in `x`, so exact up
            // to rounding) at a few points.
            let loss = |x: &Array4<f32>| {
                let y = naive_window(x, &k, None, (1, 1), (2, 1), (2, 1), (h, w), false);
                y.iter().zip(g.iter()).map(|(a, b)| a * *b as f64).sum::<f64>()
            };
            let every = (x.len() / 3).max(1);
            for (t, at) in x.indexed_iter().map(|(at, _)| at).enumerate() {
                if t % every != every / 2 {
                    continue;
                }
                let step = 1.0f32 / 64.0;
                let (mut up, mut down) = (x.clone(), x.clone());
                up[at] += step;
                down[at] -= step;
                let fd = (loss(&up) - loss(&down)) / (up[at] as f64 - down[at] as f64);
                assert!((dx[at] as f64 - fd).abs() <= 1e-4 * (1.0 + fd.abs()), "{what} at {at:?}: {} vs {fd}", dx[at]);
            }
        }
    });
}

#[test]
fn results_go_into_the_callers_buffer() {
    let (x, k, b) = (tensor((2, 3, 9, 8), 18), tensor((5, 3, 3, 3), 19), Array1::from(data(5, 20)));
    let want = naive(&x, &k, Some(&b), (0, 0), (7, 6), false);
    let mut y = Array4::<f32>::from_elem((2, 5, 7, 6), f32::NAN);
    conv_valid_into(&x, &k, &b, &mut y).unwrap();
    assert_close(&y, &want, 27, "into");
    // A view of other strides.
    let mut t = Array4::<f32>::from_elem((6, 7, 5, 2), f32::NAN);
    conv_valid_into(&x, &k, &b, t.view_mut().permuted_axes([3, 2, 1, 0])).unwrap();
    assert_close(&t.view().permuted_axes([3, 2, 1, 0]).to_owned(), &want, 27, "into a permuted view");
    // A wrong shape: an error naming the buffer, nothing written.
    let mut bad = Array4::<f32>::from_elem((2, 5, 7, 5), 7.0);
    assert!(matches!(conv_valid_into(&x, &k, &b, &mut bad), Err(einlang::Error::Shape { .. })));
    assert!(bad.iter().all(|v| *v == 7.0));
}

/// `y[n, o, i, j] = bias[o] + sum x[n, c, i sh + r dh - ph, j sw + s dw - pw] k[o, c, r, s]`
/// over the reads inside `x`, in `f64`: strides, dilations and pads per
/// axis, the output extents `(H + 2 ph - dh (KH - 1) - 1) / sh + 1`.
fn naive_strided(
    x: &Array4<f32>,
    k: &Array4<f32>,
    b: &Array1<f32>,
    stride: (usize, usize),
    pad: (isize, isize),
    dilation: (usize, usize),
) -> Array4<f64> {
    let (_, _, h, w) = x.dim();
    let (_, _, kh, kw) = k.dim();
    let extent = |len: usize, pad: isize, dil: usize, kl: usize, stride: usize| {
        ((len as isize + 2 * pad - (dil * (kl - 1)) as isize - 1).div_euclid(stride as isize) + 1).max(0) as usize
    };
    let (oh, ow) = (extent(h, pad.0, dilation.0, kh, stride.0), extent(w, pad.1, dilation.1, kw, stride.1));
    naive_window(x, k, Some(b), stride, pad, dilation, (oh, ow), false)
}

/// [`naive_strided`] with the output extents given (the pads after the
/// image are what they need) and an optional bias and ReLU.
#[allow(clippy::too_many_arguments)]
fn naive_window(
    x: &Array4<f32>,
    k: &Array4<f32>,
    b: Option<&Array1<f32>>,
    stride: (usize, usize),
    pad: (isize, isize),
    dilation: (usize, usize),
    (oh, ow): (usize, usize),
    relu: bool,
) -> Array4<f64> {
    let (n, c, h, w) = x.dim();
    let (o, _, kh, kw) = k.dim();
    Array4::from_shape_fn((n, o, oh, ow), |(nn, oo, i, j)| {
        let mut sum = b.map_or(0.0, |b| b[oo] as f64);
        for cc in 0..c {
            for r in 0..kh {
                for s in 0..kw {
                    let y = (i * stride.0 + r * dilation.0) as isize - pad.0;
                    let z = (j * stride.1 + s * dilation.1) as isize - pad.1;
                    if y >= 0 && (y as usize) < h && z >= 0 && (z as usize) < w {
                        sum += x[[nn, cc, y as usize, z as usize]] as f64 * k[[oo, cc, r, s]] as f64;
                    }
                }
            }
        }
        if relu {
            sum.max(0.0)
        } else {
            sum
        }
    })
}

#[test]
fn literal_strides_and_dilations_match_naive_loops() {
    let mut shapes = SHAPES.to_vec();
    // Odd and even extents, a prime image, one too small for a stride-2
    // row of the window.
    shapes.extend([(2, 4, 8, 10, 7), (1, 3, 29, 23, 11), (1, 2, 4, 3, 3)]);
    threads(|| {
        for &(n, c, h, w, o) in &shapes {
            let what = |f: &str| format!("{f} {n}x{c}x{h}x{w} o{o}");
            let (x, k, b) = (tensor((n, c, h, w), 21), tensor((o, c, 3, 3), 22), Array1::from(data(o, 23)));
            let want = naive_window(&x, &k, Some(&b), (2, 2), (1, 1), (1, 1), (h.div_ceil(2), w.div_ceil(2)), false);
            assert_close(&conv_s2(&x, &k, &b).unwrap(), &want, c * 9, &what("stride 2"));
            let want = naive_window(&x, &k, None, (3, 2), (0, 0), (1, 1), ((h - 3) / 3 + 1, (w - 3) / 2 + 1), false);
            assert_close(&conv_s32(&x, &k).unwrap(), &want, c * 9, &what("strides 3, 2"));
            let want = naive_window(&x, &k, None, (1, 1), (2, 2), (2, 2), (h, w), false);
            assert_close(&conv_dilated(&x, &k).unwrap(), &want, c * 9, &what("dilation 2"));
            let k = tensor((o, c, 3, 2), 24);
            let want = naive_window(&x, &k, Some(&b), (2, 2), (2, 1), (2, 2), (h.div_ceil(2), w / 2), true);
            assert_close(&conv_s2_d2_relu(&x, &k, &b).unwrap(), &want, c * 6, &what("stride 2 dilation 2 relu"));
        }
    });
}

#[test]
fn a_strided_result_goes_into_a_permuted_view() {
    let (x, k, b) = (tensor((2, 3, 9, 8), 25), tensor((5, 3, 3, 3), 26), Array1::from(data(5, 27)));
    let want = naive_window(&x, &k, Some(&b), (2, 2), (1, 1), (1, 1), (5, 4), false);
    let mut t = Array4::<f32>::from_elem((4, 5, 5, 2), f32::NAN);
    conv_s2_into(&x, &k, &b, t.view_mut().permuted_axes([3, 2, 1, 0])).unwrap();
    assert_close(&t.view().permuted_axes([3, 2, 1, 0]).to_owned(), &want, 27, "stride 2 into a permuted view");
    let mut bad = Array4::<f32>::from_elem((2, 5, 4, 4), 7.0);
    assert!(matches!(conv_s2_into(&x, &k, &b, &mut bad), Err(einlang::Error::Shape { .. })));
    assert!(bad.iter().all(|v| *v == 7.0));
}

#[test]
fn the_standard_librarys_convolution_matches_naive_loops() {
    // (stride, pad, dilation) per axis: the kernel's cases (strides and
    // dilations of at least 1, pads 0, 1, 2, asymmetric) and the packed
    // product's (a negative pad).
    let settings: &[((i64, i64), (i64, i64), (i64, i64))] = &[
        ((1, 1), (0, 0), (1, 1)),
        ((1, 1), (1, 1), (1, 1)),
        ((1, 1), (2, 2), (1, 1)),
        ((1, 1), (2, 0), (1, 1)),
        ((2, 2), (0, 0), (1, 1)),
        ((2, 2), (1, 1), (1, 1)),
        ((2, 1), (2, 1), (1, 1)),
        ((1, 1), (1, 1), (2, 2)),
        ((1, 1), (2, 2), (1, 2)),
        ((3, 2), (1, 2), (2, 1)),
        ((3, 3), (1, 1), (1, 1)),
        ((1, 2), (-1, 0), (1, 1)),
    ];
    threads(|| {
        for &(n, c, h, w, o) in SHAPES {
            for (kh, kw) in [(3, 3), (2, 5)] {
                let (x, k, b) = (tensor((n, c, h, w), 11), tensor((o, c, kh, kw), 12), Array1::from(data(o, 13)));
                for &((sh, sw), (ph, pw), (dh, dw)) in settings {
                    let what = format!("std::ml::conv2d {n}x{c}x{h}x{w} o{o} {kh}x{kw} stride {sh},{sw} pad {ph},{pw} dilation {dh},{dw}");
                    let fits = |len: usize, p: i64, d: i64, kl: usize| len as i64 + 2 * p >= d * (kl as i64 - 1) + 1;
                    if !fits(h, ph, dh, kh) || !fits(w, pw, dw, kw) {
                        continue;
                    }
                    let got = std_conv2d(&x, &k, &b, sh, sw, ph, pw, dh, dw).unwrap();
                    let want = naive_strided(
                        &x,
                        &k,
                        &b,
                        (sh as usize, sw as usize),
                        (ph as isize, pw as isize),
                        (dh as usize, dw as usize),
                    );
                    assert_close(&got, &want, c * kh * kw, &what);
                }
            }
        }
    });
}
