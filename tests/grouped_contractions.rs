//! Sums whose gathered operand reads an output axis only through a quotient
//! (`x[n, (o / F) * C + c, ..]`, a grouped convolution with the input
//! channel computed from the output channel), which `opt::groups` makes a
//! product per group: compared with naive loops written here over odd
//! shapes, one group, one channel per group, a group size that does not
//! divide the output channels, strides and padding by guards, a bias
//! added after the sum, a quotient in a where binding, `f32`; and a
//! divisor that is not positive or channels past the input's, which keep
//! the sum as written (an error for zero and for a read outside the input,
//! the loops' own result for a negative divisor).

mod common;

use common::Rng;
use einlang::einlang;
use einlang::ndarray::{Array, Array1, Array4};

einlang! {
    /// The form: the channel read from the output channel's group.
    pub fn grouped(x: [f64; N, C, H, W], k: [f64; O, CG, KH, KW], fpg: i64, cpg: i64) -> [f64; N, O, H - KH + 1, W - KW + 1] {
        let y[n, o, i, j] = sum[c, r, s](x[n, (o / fpg) * cpg + c, i + r, j + s] * k[o, c, r, s]);
        y
    }

    /// The kernel first, a bias after the sum, stride 2 and padding 1 by a
    /// guard, the channel bound in a where entry.
    pub fn grouped_padded(x: [f64; N, C, H, W], k: [f64; O, CG, 3, 3], b: [f64; O], fpg: i64, oh: i64, ow: i64)
        -> [f64; N, O, ?, ?] {
        let y[n, o, i in 0..oh, j in 0..ow] = sum[c, r, s](
            if ih >= 0 && ih < H && iw >= 0 && iw < W { k[o, c, r, s] * x[n, ch, ih, iw] } else { 0.0 }
            where ih = 2 * i + r - 1, iw = 2 * j + s - 1, ch = (o / fpg) * CG + c
        ) + b[o];
        y
    }

    /// `f32`, 1-D, the output channel last.
    pub fn grouped_last(x: [f32; N, L, C], k: [f32; KL, CG, O], fpg: i64) -> [f32; N, L - KL + 1, O] {
        let y[n, i, o] = sum[t, c](x[n, i + t, (o / fpg) * CG + c] * k[t, c, o]);
        y
    }
}

fn rand<Sh: einlang::ndarray::ShapeBuilder>(shape: Sh, rng: &mut Rng) -> Array<f64, Sh::Dim> {
    Array::from_shape_simple_fn(shape, || rng.range(-1.0, 1.0))
}

fn close<D: einlang::ndarray::Dimension>(got: &Array<f64, D>, want: &Array<f64, D>, what: &str) {
    assert_eq!(got.shape(), want.shape(), "{what}");
    for (a, b) in got.iter().zip(want.iter()) {
        assert!((a - b).abs() <= 1e-9 * (1.0 + b.abs()), "{what}: {a} against {b}");
    }
}

/// `grouped_padded`'s loops, with the bias, for stride 2 and padding 1.
fn padded_ref(x: &Array4<f64>, k: &Array4<f64>, b: &Array1<f64>, fpg: usize, oh: usize, ow: usize) -> Array4<f64> {
    let (n, _, h, w) = x.dim();
    let (o, cg, _, _) = k.dim();
    let mut y = Array4::zeros((n, o, oh, ow));
    for ((nn, oo, i, j), v) in y.indexed_iter_mut() {
        let mut acc = 0.0;
        for c in 0..cg {
            for r in 0..3 {
                for s in 0..3 {
                    let (ih, iw) = ((2 * i + r) as i64 - 1, (2 * j + s) as i64 - 1);
                    if ih >= 0 && iw >= 0 && (ih as usize) < h && (iw as usize) < w {
                        acc += k[[oo, c, r, s]] * x[[nn, (oo / fpg) * cg + c, ih as usize, iw as usize]];
                    }
                }
            }
        }
        *v = acc + b[oo];
    }
    y
}

/// `grouped`'s loops for any divisor (a negative one divides as Rust's
/// `/`, towards zero); None where a read falls outside `x`.
fn grouped_ref(x: &Array4<f64>, k: &Array4<f64>, fpg: i64, cpg: i64) -> Option<Array4<f64>> {
    let (n, ch, h, w) = x.dim();
    let (o, cg, kh, kw) = k.dim();
    let mut y = Array4::zeros((n, o, h - kh + 1, w - kw + 1));
    for ((nn, oo, i, j), v) in y.indexed_iter_mut() {
        let mut acc = 0.0;
        for c in 0..cg {
            let at = (oo as i64 / fpg) * cpg + c as i64;
            if at < 0 || at >= ch as i64 {
                return None;
            }
            for r in 0..kh {
                for s in 0..kw {
                    acc += x[[nn, at as usize, i + r, j + s]] * k[[oo, c, r, s]];
                }
            }
        }
        *v = acc;
    }
    Some(y)
}

#[test]
fn grouped_convolutions_against_loops() {
    let mut rng = Rng::new(37);
    // (N, groups, channels per group, filters per group, H, W, KH, KW)
    for (n, groups, cpg, fpg, h, w, kh, kw) in [
        (2, 4, 3, 2, 9, 8, 3, 3),
        (1, 1, 5, 7, 7, 11, 3, 2), // one group
        (3, 6, 1, 1, 6, 5, 3, 3),  // one channel and one filter per group (depthwise)
        (1, 6, 1, 3, 5, 7, 1, 1),  // depthwise with a multiplier, 1x1
        (2, 3, 2, 5, 13, 4, 2, 3), // prime extents
        (1, 2, 4, 3, 3, 3, 3, 3),  // a single output point
        (0, 2, 2, 2, 4, 4, 3, 3),  // no image
    ] {
        let x = rand((n, groups * cpg, h, w), &mut rng);
        let k = rand((groups * fpg, cpg, kh, kw), &mut rng);
        let got = grouped(&x, &k, fpg as i64, cpg as i64).expect("grouped");
        let want = grouped_ref(&x, &k, fpg as i64, cpg as i64).expect("reads inside x");
        close(&got, &want, &format!("grouped n={n} groups={groups} cpg={cpg} fpg={fpg}"));
    }
}

#[test]
fn a_group_size_that_does_not_divide_the_filters() {
    let mut rng = Rng::new(38);
    // 7 filters in groups of 3: the last group has one filter.
    let x = rand((2, 9, 6, 7), &mut rng);
    let k = rand((7, 3, 3, 3), &mut rng);
    let got = grouped(&x, &k, 3, 3).expect("grouped");
    close(&got, &grouped_ref(&x, &k, 3, 3).unwrap(), "7 filters in groups of 3");
    // Groups of 10 > 7 filters: one group.
    let got = grouped(&x, &k, 10, 3).expect("grouped");
    close(&got, &grouped_ref(&x, &k, 10, 3).unwrap(), "one group larger than the filters");
}

#[test]
fn a_divisor_that_is_not_positive_keeps_the_sum() {
    let mut rng = Rng::new(39);
    let x = rand((1, 4, 5, 5), &mut rng);
    let k = rand((3, 2, 3, 3), &mut rng);
    assert!(grouped(&x, &k, 0, 2).is_err(), "division by zero");
    // A negative divisor larger than the filters: every quotient is 0.
    let got = grouped(&x, &k, -5, 2).expect("quotients of zero");
    close(&got, &grouped_ref(&x, &k, -5, 2).unwrap(), "divisor -5");
    // A quotient of -1 reads channel -2: an index error, as the loops.
    assert!(grouped_ref(&x, &k, -2, 2).is_none());
    assert!(grouped(&x, &k, -2, 2).is_err(), "a read before channel 0");
    // Channels past the input's: an index error, as the loops.
    assert!(grouped_ref(&x, &k, 1, 3).is_none());
    assert!(grouped(&x, &k, 1, 3).is_err(), "a read past the last channel");
    // The same with no output point: nothing is read, no error.
    let none = rand((0, 4, 5, 5), &mut rng);
    assert_eq!(grouped(&none, &k, 1, 3).expect("nothing read").dim(), (0, 3, 3, 3));
}

#[test]
fn strided_padded_with_bias_and_a_bound_channel() {
    let mut rng = Rng::new(40);
    for (n, groups, cpg, fpg, h, w) in [(2, 4, 2, 3, 9, 7), (1, 1, 3, 4, 5, 5), (2, 5, 1, 1, 8, 6), (1, 3, 2, 2, 1, 1)]
    {
        let (oh, ow) = ((h + 2 - 3) / 2 + 1, (w + 2 - 3) / 2 + 1);
        let x = rand((n, groups * cpg, h, w), &mut rng);
        let k = rand((groups * fpg, cpg, 3, 3), &mut rng);
        let b = rand(groups * fpg, &mut rng);
        let got = grouped_padded(&x, &k, &b, fpg as i64, oh as i64, ow as i64).expect("grouped_padded");
        close(&got, &padded_ref(&x, &k, &b, fpg, oh, ow), &format!("padded groups={groups} cpg={cpg} fpg={fpg}"));
    }
}

#[test]
fn output_channel_last_in_f32() {
    let mut rng = Rng::new(41);
    for (n, l, groups, cpg, fpg, kl) in [(2, 9, 3, 2, 4, 3), (1, 5, 1, 3, 3, 5), (3, 7, 4, 1, 1, 2)] {
        let x = rand((n, l, groups * cpg), &mut rng).mapv(|v| v as f32);
        let k = rand((kl, cpg, groups * fpg), &mut rng).mapv(|v| v as f32);
        let got = grouped_last(&x, &k, fpg as i64).expect("grouped_last");
        assert_eq!(got.dim(), (n, l - kl + 1, groups * fpg));
        for ((nn, i, o), v) in got.indexed_iter() {
            let mut acc = 0.0f64;
            for t in 0..kl {
                for c in 0..cpg {
                    acc += x[[nn, i + t, (o / fpg) * cpg + c]] as f64 * k[[t, c, o]] as f64;
                }
            }
            assert!((*v as f64 - acc).abs() <= 1e-4 * (1.0 + acc.abs()), "last n={nn} i={i} o={o}: {v} against {acc}");
        }
    }
}
