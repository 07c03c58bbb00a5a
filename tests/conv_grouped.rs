//! `std::ml::conv` (ONNX's `Conv`: run-time strides, pads, dilations and
//! `group`) on images, which `opt::conv` hands to the runtime's direct
//! kernel per group (`conv::conv2d_grouped`) where at run time the group
//! divides the filters, the weights' channels are the image's per group,
//! the strides and dilations are at least 1 and the pads not negative, and
//! to the packed products of `opt::groups` otherwise (a negative pad, a
//! group that does not divide the channels). A literal grouped form
//! without guards takes the same kernel. Each is compared with naive `f64`
//! loops written here on odd shapes (1, 7, primes, empty extents) and on
//! one to three threads; the `checked` feature runs the reference loop
//! nests instead.

mod conv_support;

use conv_support::{assert_close, threads};
use einlang::einlang;
use einlang::ndarray::{Array1, Array4};

einlang! {
    pub fn onnx_conv(x: [f32; N, C, H, W], w: [f32; O, K, KH, KW], b: [f32; O], s: [i64; 2], p: [i64; 4], d: [i64; 2], g: i64)
        -> [f32; N, O, ?, ?] {
        std::ml::conv(x, w, b, s, p, d, g)
    }

    /// The channel computed from the filter, valid, no bias.
    pub fn grouped_valid(x: [f32; N, C, H, W], k: [f32; O, CG, KH, KW], fpg: i64) -> [f32; N, O, H - KH + 1, W - KW + 1] {
        let y[n, o, i, j] = sum[c, r, s](x[n, (o / fpg) * CG + c, i + r, j + s] * k[o, c, r, s]);
        y
    }
}

/// `y[n, o, i, j] = b[o] + sum x[n, (o / (O / G)) (C / G) + c, i sh - top +
/// r dh, j sw - left + s dw] w[o, c, r, s]` over the reads inside `x`, in
/// `f64` (ONNX's definition), with `pads = [top, left, bottom, right]`.
fn naive(
    x: &Array4<f32>,
    w: &Array4<f32>,
    b: &Array1<f32>,
    s: [i64; 2],
    p: [i64; 4],
    d: [i64; 2],
    g: usize,
) -> Array4<f64> {
    let (n, c, h, wd) = x.dim();
    let (o, k, kh, kw) = w.dim();
    let (cpg, fpg) = (c / g, o / g);
    let oh = ((h as i64 + p[0] + p[2] - d[0] * (kh as i64 - 1) - 1) / s[0] + 1).max(0) as usize;
    let ow = ((wd as i64 + p[1] + p[3] - d[1] * (kw as i64 - 1) - 1) / s[1] + 1).max(0) as usize;
    Array4::from_shape_fn((n, o, oh, ow), |(nn, of, i, j)| {
        let mut acc = b[of] as f64;
        for cc in 0..k {
            for r in 0..kh {
                for t in 0..kw {
                    let ih = i as i64 * s[0] - p[0] + r as i64 * d[0];
                    let iw = j as i64 * s[1] - p[1] + t as i64 * d[1];
                    if ih >= 0 && ih < h as i64 && iw >= 0 && iw < wd as i64 {
                        acc +=
                            x[[nn, (of / fpg) * cpg + cc, ih as usize, iw as usize]] as f64 * w[[of, cc, r, t]] as f64;
                    }
                }
            }
        }
        acc
    })
}

/// Deterministic values in `[-1, 1)`.
fn data(shape: (usize, usize, usize, usize), seed: u64) -> Array4<f32> {
    let mut st = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    Array4::from_shape_fn(shape, |_| {
        st = st.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((st >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    })
}

#[test]
fn std_conv_in_groups_matches_naive_loops() {
    // (N, groups, channels per group, H, W, filters per group, KH, KW)
    let shapes: &[(usize, usize, usize, usize, usize, usize, usize, usize)] = &[
        (1, 1, 1, 3, 3, 1, 3, 3),
        (2, 1, 7, 9, 7, 5, 3, 3),
        (2, 4, 8, 11, 13, 16, 3, 3),
        (1, 3, 1, 13, 7, 1, 3, 2),
        (3, 2, 7, 5, 17, 7, 2, 3),
        (1, 5, 3, 7, 7, 13, 5, 5),
        (0, 2, 3, 7, 7, 2, 3, 3),
        (2, 7, 2, 1, 1, 3, 1, 1),
    ];
    // (strides, pads [top, left, bottom, right], dilations)
    let windows: &[([i64; 2], [i64; 4], [i64; 2])] = &[
        ([1, 1], [0, 0, 0, 0], [1, 1]),
        ([1, 1], [1, 1, 1, 1], [1, 1]),
        ([2, 2], [1, 1, 1, 1], [1, 1]),
        ([3, 2], [2, 0, 1, 3], [1, 2]),
        ([1, 1], [0, 1, 2, 0], [2, 1]),
    ];
    for &(n, g, cg, h, w, f, kh, kw) in shapes {
        let (c, o) = (g * cg, g * f);
        let x = data((n, c, h, w), 1 + c as u64);
        let k = data((o, cg, kh, kw), 2 + o as u64);
        let b = Array1::from_iter((0..o).map(|v| v as f32 * 0.25 - 1.0));
        for &(s, p, d) in windows {
            let want = naive(&x, &k, &b, s, p, d, g);
            let what = format!("N{n} G{g} C{c} {h}x{w} O{o} {kh}x{kw} s{s:?} p{p:?} d{d:?}");
            threads(|| {
                let got = onnx_conv(
                    &x,
                    &k,
                    &b,
                    &Array1::from(s.to_vec()),
                    &Array1::from(p.to_vec()),
                    &Array1::from(d.to_vec()),
                    g as i64,
                )
                .unwrap_or_else(|e| panic!("{what}: {e}"));
                assert_close(&got, &want, cg * kh * kw, &what);
            });
        }
    }
}

/// Values the kernel does not take keep the definition as written: a
/// negative pad, a group that does not divide the channels (its quotient
/// rounds down, as the definition reads), and the errors of the packed
/// path stay errors.
#[test]
fn other_groups_and_pads_keep_the_definition() {
    let x = data((2, 6, 7, 9), 5);
    let b = Array1::from_iter((0..8).map(|v| v as f32 * 0.5));
    let vec = |v: &[i64]| Array1::from(v.to_vec());
    // A negative pad crops the image.
    let k = data((8, 3, 3, 3), 6);
    let got = onnx_conv(&x, &k, &b, &vec(&[1, 2]), &vec(&[-1, 1, 0, 1]), &vec(&[1, 1]), 2).unwrap();
    assert_close(&got, &naive(&x, &k, &b, [1, 2], [-1, 1, 0, 1], [1, 1], 2), 27, "negative pad");
    // 6 channels in 4 groups: one channel per group, the first four read.
    let k = data((8, 1, 3, 3), 7);
    let got = onnx_conv(&x, &k, &b, &vec(&[1, 1]), &vec(&[1, 1, 1, 1]), &vec(&[1, 1]), 4).unwrap();
    assert_close(&got, &naive(&x, &k, &b, [1, 1], [1, 1, 1, 1], [1, 1], 4), 9, "group 4 of 6 channels");
    // 6 channels in 4 groups with 2 weight channels each: the last group
    // reads channels 3 and 4 (the definition's), not the kernel's grouping.
    let k = data((8, 2, 3, 3), 8);
    let got = onnx_conv(&x, &k, &b, &vec(&[1, 1]), &vec(&[0, 0, 0, 0]), &vec(&[1, 1]), 4).unwrap();
    assert_close(&got, &naive(&x, &k, &b, [1, 1], [0, 0, 0, 0], [1, 1], 4), 18, "overlapping groups");
    // A weight with more channels than a group has reads past the image.
    let k = data((8, 4, 3, 3), 9);
    assert!(onnx_conv(&x, &k, &b, &vec(&[1, 1]), &vec(&[1, 1, 1, 1]), &vec(&[1, 1]), 2).is_err());
    // Group 0 divides by zero.
    let k = data((8, 3, 3, 3), 10);
    assert!(onnx_conv(&x, &k, &b, &vec(&[1, 1]), &vec(&[1, 1, 1, 1]), &vec(&[1, 1]), 0).is_err());
}

#[test]
fn a_literal_grouped_form_matches_naive_loops() {
    for &(n, g, cg, h, w, f, kh, kw) in &[
        (2usize, 4usize, 8usize, 9usize, 11usize, 16usize, 3usize, 3usize),
        (1, 3, 1, 5, 7, 1, 2, 3),
        (3, 1, 5, 6, 6, 7, 3, 3),
    ] {
        let (c, o) = (g * cg, g * f);
        let x = data((n, c, h, w), 20 + c as u64);
        let k = data((o, cg, kh, kw), 21 + o as u64);
        let b = Array1::zeros(o);
        let want = naive(&x, &k, &b, [1, 1], [0, 0, 0, 0], [1, 1], g);
        threads(|| {
            let got = grouped_valid(&x, &k, f as i64).unwrap();
            assert_close(&got, &want, cg * kh * kw, "literal grouped");
        });
    }
    // A divisor that is not positive keeps the definition (division by 0
    // is an error).
    let x = data((1, 4, 5, 5), 30);
    let k = data((4, 2, 3, 3), 31);
    assert!(grouped_valid(&x, &k, 0).is_err());
}
