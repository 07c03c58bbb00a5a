//! Contractions that are not matrix products as written, run as GEMMs over
//! packed operands (`einlang_core::opt::pack`): convolutions in several
//! forms (valid, padded by a guard, strided, dilated, grouped, 1-D, 3-D),
//! the kernel gradient of a convolution, a contraction over two indices of
//! four-axis tensors, and a gathered side that is an expression. Each is
//! compared with naive loops written here; the `checked` feature runs the
//! GEMMs' reference loops instead.

use einlang::einlang;
use einlang::ndarray::{Array, Array1, Array2, Array3, Array4, Array5};

einlang! {
    pub fn conv_valid(x: [f64; N, C, H, W], k: [f64; O, C, KH, KW], b: [f64; O]) -> [f64; N, O, H - KH + 1, W - KW + 1] {
        let y[n, o, i, j] = sum[c, r, s](x[n, c, i + r, j + s] * k[o, c, r, s]) + b[o];
        y
    }

    /// Same padding by a guard, written with the kernel first.
    pub fn conv_same(x: [f64; N, C, H, W], k: [f64; O, C, 3, 3]) -> [f64; N, O, H, W] {
        let y[n, o, i in 0..H, j in 0..W] = sum[c, r, s](
            if ih >= 0 && ih < H && iw >= 0 && iw < W { k[o, c, r, s] * x[n, c, ih, iw] } else { 0.0 }
            where ih = i + r - 1, iw = j + s - 1
        );
        y
    }

    /// Stride 2 and dilation 2, with a ReLU after the sum.
    pub fn conv_strided(x: [f64; C, H, W], k: [f64; O, C, 2, 2], oh: i64, ow: i64) -> [f64; O, ?, ?] {
        let y[o, i in 0..oh, j in 0..ow] = max(sum[c, r, s](x[c, 2 * i + 2 * r, 2 * j + 2 * s] * k[o, c, r, s]), 0.0);
        y
    }

    /// Grouped: the group axis is read by both operands (a batch of the GEMM).
    pub fn conv_grouped(x: [f64; N, G, C, L], k: [f64; G, O, C, 3]) -> [f64; N, G, O, L - 2] {
        let y[n, g, o, t] = sum[c, r](x[n, g, c, t + r] * k[g, o, c, r]);
        y
    }

    /// A 3-D convolution: the packed operand has eight axes.
    pub fn conv3d(x: [f64; N, C, D, H, W], k: [f64; O, C, 2, 2, 2]) -> [f64; N, O, D - 1, H - 1, W - 1] {
        let y[n, o, d, i, j] = sum[c, p, r, s](x[n, c, d + p, i + r, j + s] * k[o, c, p, r, s]);
        y
    }

    /// The kernel gradient of a convolution: the output gradient is the
    /// plain operand, the input read shifted.
    pub fn conv_kernel_grad(x: [f64; N, C, H, W], dy: [f64; N, O, P, Q]) -> [f64; O, C, 3, 3] {
        let dk[o, c, r in 0..3, s in 0..3] = sum[n, i, j](dy[n, o, i, j] * x[n, c, i + r, j + s]);
        dk
    }

    /// The kernel gradient of an output gradient computed here: its packed
    /// copy is a view of that temporary (`y` is read only by definitions).
    pub fn kernel_grad_of_temporary(x: [f64; N, C, H, W], dy: [f64; N, O, H - 2, W - 2]) -> [f64; O, C, 3, 3] {
        let y[n, o, p, q] = 2.0 * dy[n, o, p, q];
        let dk[o, c, r, s] = sum[n, p, q](x[n, c, p + r, q + s] * y[n, o, p, q]);
        let l[o] = sum[n, p, q](y[n, o, p, q]);
        let dk2[o, c, r, s] = dk[o, c, r, s] + l[o];
        dk2
    }

    /// The same temporary also returned: its packed copy stays a copy.
    pub fn kernel_grad_and_temporary(x: [f64; N, C, H, W], dy: [f64; N, O, H - 2, W - 2])
        -> ([f64; O, C, 3, 3], [f64; N, O, H - 2, W - 2]) {
        let y[n, o, p, q] = 2.0 * dy[n, o, p, q];
        let dk[o, c, r, s] = sum[n, p, q](x[n, c, p + r, q + s] * y[n, o, p, q]);
        (dk, y)
    }

    /// Attention scores over heads: two batch axes.
    pub fn scores(q: [f64; B, Hd, T, D], k: [f64; B, Hd, S, D]) -> [f64; B, Hd, T, S] {
        let s[b, h, t, u] = sum[d](q[b, h, t, d] * k[b, h, u, d]);
        s
    }

    /// The gathered side an expression of a shifted read and a row mean.
    pub fn centered(x: [f64; N, L], m: [f64; N], k: [f64; O, 3]) -> [f64; N, O, L - 2] {
        let y[n, o, t] = sum[r]((x[n, t + r] - m[n]) * 2.0 * k[o, r]);
        y
    }

    /// Sums that start above zero (a weight gradient through time): the
    /// sum is shifted to start at 0, `h[t - 1]` becomes a plain read.
    pub fn through_time(d: [f64; T, B, J], h: [f64; T, B, K]) -> [f64; K, J] {
        let g[k, j] = sum[t in 1..T, n](d[t, n, j] * h[t - 1, n, k]);
        g
    }

    /// Both operands shifted, from step 2.
    pub fn from_step_two(a: [f64; T, I], b: [f64; T, J]) -> [f64; I, J] {
        let g[i, j] = sum[t in 2..T](a[t, i] * b[t - 1, j]);
        g
    }

    /// Channels last (NHWC), padded: the packed copy keeps the channels
    /// innermost (runs of the input) and the product is made per image
    /// in the output's order `[i, j, o]`.
    pub fn conv_nhwc(x: [f64; N, H, W, C], k: [f64; KH, KW, C, O]) -> [f64; N, H, W, O] {
        let y[n, i in 0..H, j in 0..W, o] = sum[r, s, c](
            if ih >= 0 && ih < H && iw >= 0 && iw < W { x[n, ih, iw, c] * k[r, s, c, o] } else { 0.0 }
            where ih = i + r - 1, iw = j + s - 1
        );
        y
    }

    /// The kernel gradient of a valid channels-last convolution: a
    /// product per image, summed.
    pub fn conv_nhwc_kernel_grad(x: [f64; N, H, W, C], dy: [f64; N, P, Q, O]) -> [f64; 2, 3, C, O] {
        let dk[r in 0..2, s in 0..3, c, o] = sum[n, i, j](x[n, i + r, j + s, c] * dy[n, i, j, o]);
        dk
    }

    /// The input gradient of a valid convolution (a transposed
    /// convolution: `opt::col2im` multiplies first, then shifts).
    pub fn conv_input_grad(x: [f64; N, C, H, W], k: [f64; O, C, KH, KW], g: [f64; N, O, H - KH + 1, W - KW + 1])
        -> [f64; N, C, H, W] {
        let y[n, o, i, j] = sum[c, r, s](x[n, c, i + r, j + s] * k[o, c, r, s]);
        let l = sum[n, o, i, j](y[n, o, i, j] * g[n, o, i, j]);
        @l / @x
    }

    /// A transposed convolution written out over a padded copy.
    pub fn transposed_padded(dy: [f64; N, O, P, Q], k: [f64; O, C, 3, 3]) -> [f64; N, C, P + 2, Q + 2] {
        let pad[n, o, a in 0..P + 4, b in 0..Q + 4] =
            if a >= 2 && a < P + 2 && b >= 2 && b < Q + 2 { dy[n, o, a - 2, b - 2] } else { 0.0 };
        let d[n, c, p in 0..P + 2, q in 0..Q + 2] = sum[o, r, s](pad[n, o, p - r + 2, q - s + 2] * k[o, c, r, s]);
        d
    }

    /// The same over a copy whose guard drops the gradient's last row and
    /// first column: not a plain padding, so the copy is multiplied as it is.
    pub fn transposed_cropped(dy: [f64; N, O, P, Q], k: [f64; O, C, 3, 3]) -> [f64; N, C, P + 2, Q + 2] {
        let pad[n, o, a in 0..P + 4, b in 0..Q + 4] =
            if a >= 2 && a < P + 1 && b > 2 && b - 2 <= Q - 1 { dy[n, o, a - 2, b - 2] } else { 0.0 };
        let d[n, c, p in 0..P + 2, q in 0..Q + 2] = sum[o, r, s](pad[n, o, p - r + 2, q - s + 2] * k[o, c, r, s]);
        d
    }

    /// The same over a parameter, the kernel read first.
    pub fn transposed_param(xp: [f64; N, O, A, B], k: [f64; O, C, 3, 2]) -> [f64; N, C, A - 2, B - 1] {
        let d[n, c, p in 0..A - 2, q in 0..B - 1] = sum[o, r, s](k[o, c, r, s] * xp[n, o, p - r + 2, q - s + 1]);
        d
    }

    /// The same over the first two of three channels: each image's
    /// channels are copied (not the image's sub-tensor as it is).
    pub fn transposed_two_of_three(xp: [f64; N, 3, A, B], k: [f64; 2, C, 3, 2]) -> [f64; N, C, A - 2, B - 1] {
        let d[n, c, p in 0..A - 2, q in 0..B - 1] = sum[o in 0..2, r, s](k[o, c, r, s] * xp[n, o, p - r + 2, q - s + 1]);
        d
    }

    /// A transposed convolution whose read is not proven in bounds (the
    /// output's extents are arguments): checked, an error when it is out.
    pub fn transposed_unproven(xp: [f64; N, O, A, B], k: [f64; O, C, 3, 3], h: i64, w: i64) -> [f64; N, C, ?, ?] {
        let d[n, c, p in 0..h, q in 0..w] = sum[o, r, s](xp[n, o, p - r + 2, q - s + 2] * k[o, c, r, s]);
        d
    }

    /// A read of the plain operand that is not proven in bounds: `w`'s
    /// second axis may be shorter than the sum.
    pub fn unproven(a: [f64; M, K], w: [f64; O, L, 2]) -> [f64; M, O] {
        let y[i, o] = sum[k in 0..K, r](0.5 * a[i, k] * w[o, k, r]);
        y
    }
}

fn fill<D: einlang::ndarray::Dimension>(shape: D, seed: u64) -> Array<f64, D> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    Array::from_shape_fn(shape, |_| {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    })
}

fn assert_close<D: einlang::ndarray::Dimension>(got: &Array<f64, D>, want: &Array<f64, D>) {
    assert_eq!(got.shape(), want.shape());
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() <= 1e-10 * (1.0 + w.abs()), "{g} vs {w}\n{got}\n{want}");
    }
}

#[test]
fn valid_convolution_with_bias() {
    let (n, c, h, w, o, kh, kw) = (2, 3, 7, 6, 4, 3, 2);
    let x = fill(Ix4(n, c, h, w), 1);
    let k = fill(Ix4(o, c, kh, kw), 2);
    let b = fill(einlang::ndarray::Ix1(o), 3);
    let mut want = Array4::<f64>::zeros((n, o, h - kh + 1, w - kw + 1));
    for ((nn, oo, i, j), v) in want.indexed_iter_mut() {
        let mut acc = b[oo];
        for cc in 0..c {
            for r in 0..kh {
                for s in 0..kw {
                    acc += x[[nn, cc, i + r, j + s]] * k[[oo, cc, r, s]];
                }
            }
        }
        *v = acc;
    }
    assert_close(&conv_valid(&x, &k, &b).unwrap(), &want);
    // A kernel as large as the image: one output point.
    let small = fill(Ix4(1, c, kh, kw), 4);
    let y = conv_valid(&small, &k, &b).unwrap();
    for oo in 0..o {
        let want = b[oo]
            + (&small.index_axis(einlang::ndarray::Axis(0), 0) * &k.index_axis(einlang::ndarray::Axis(0), oo)).sum();
        assert!((y[[0, oo, 0, 0]] - want).abs() < 1e-10);
    }
}

#[allow(non_snake_case)]
fn Ix4(a: usize, b: usize, c: usize, d: usize) -> einlang::ndarray::Ix4 {
    einlang::ndarray::Dim([a, b, c, d])
}

#[test]
fn padded_convolution() {
    let (n, c, h, w, o) = (2, 2, 5, 4, 3);
    let x = fill(Ix4(n, c, h, w), 5);
    let k = fill(Ix4(o, c, 3, 3), 6);
    let mut want = Array4::<f64>::zeros((n, o, h, w));
    for ((nn, oo, i, j), v) in want.indexed_iter_mut() {
        for cc in 0..c {
            for r in 0..3 {
                for s in 0..3 {
                    let (ih, iw) = (i as i64 + r as i64 - 1, j as i64 + s as i64 - 1);
                    if ih >= 0 && ih < h as i64 && iw >= 0 && iw < w as i64 {
                        *v += k[[oo, cc, r, s]] * x[[nn, cc, ih as usize, iw as usize]];
                    }
                }
            }
        }
    }
    assert_close(&conv_same(&x, &k).unwrap(), &want);
}

#[test]
fn channels_last_convolution_and_kernel_gradient() {
    let (n, h, w, c, o) = (2, 5, 6, 3, 4);
    let x = fill(Ix4(n, h, w, c), 21);
    let k = fill(Ix4(3, 3, c, o), 22);
    let mut want = Array4::<f64>::zeros((n, h, w, o));
    for ((nn, i, j, oo), v) in want.indexed_iter_mut() {
        for r in 0..3 {
            for s in 0..3 {
                let (ih, iw) = (i as i64 + r as i64 - 1, j as i64 + s as i64 - 1);
                if ih < 0 || ih >= h as i64 || iw < 0 || iw >= w as i64 {
                    continue;
                }
                for cc in 0..c {
                    *v += x[[nn, ih as usize, iw as usize, cc]] * k[[r, s, cc, oo]];
                }
            }
        }
    }
    assert_close(&conv_nhwc(&x, &k).unwrap(), &want);

    let (p, q) = (h - 1, w - 2);
    let dy = fill(Ix4(n, p, q, o), 23);
    let mut want = Array4::<f64>::zeros((2, 3, c, o));
    for ((r, s, cc, oo), v) in want.indexed_iter_mut() {
        for nn in 0..n {
            for i in 0..p {
                for j in 0..q {
                    *v += x[[nn, i + r, j + s, cc]] * dy[[nn, i, j, oo]];
                }
            }
        }
    }
    assert_close(&conv_nhwc_kernel_grad(&x, &dy).unwrap(), &want);
}

#[test]
fn strided_dilated_convolution() {
    let (c, h, w, o) = (2, 11, 9, 3);
    let x = fill(einlang::ndarray::Ix3(c, h, w), 7);
    let k = fill(Ix4(o, c, 2, 2), 8);
    let (oh, ow) = ((h - 3) / 2 + 1, (w - 3) / 2 + 1);
    let mut want = Array3::<f64>::zeros((o, oh, ow));
    for ((oo, i, j), v) in want.indexed_iter_mut() {
        let mut acc = 0.0;
        for cc in 0..c {
            for r in 0..2 {
                for s in 0..2 {
                    acc += x[[cc, 2 * i + 2 * r, 2 * j + 2 * s]] * k[[oo, cc, r, s]];
                }
            }
        }
        *v = acc.max(0.0);
    }
    assert_close(&conv_strided(&x, &k, oh as i64, ow as i64).unwrap(), &want);
}

#[test]
fn grouped_convolution() {
    let (n, g, c, l, o) = (2, 3, 2, 8, 2);
    let x = fill(Ix4(n, g, c, l), 9);
    let k = fill(Ix4(g, o, c, 3), 10);
    let mut want = Array4::<f64>::zeros((n, g, o, l - 2));
    for ((nn, gg, oo, t), v) in want.indexed_iter_mut() {
        for cc in 0..c {
            for r in 0..3 {
                *v += x[[nn, gg, cc, t + r]] * k[[gg, oo, cc, r]];
            }
        }
    }
    assert_close(&conv_grouped(&x, &k).unwrap(), &want);
}

#[test]
fn three_dimensional_convolution() {
    let (n, c, d, h, w, o) = (2, 2, 4, 3, 5, 3);
    let x = fill(einlang::ndarray::Dim([n, c, d, h, w]), 11);
    let k = fill(einlang::ndarray::Dim([o, c, 2, 2, 2]), 12);
    let mut want = Array5::<f64>::zeros((n, o, d - 1, h - 1, w - 1));
    for ((nn, oo, dd, i, j), v) in want.indexed_iter_mut() {
        for cc in 0..c {
            for p in 0..2 {
                for r in 0..2 {
                    for s in 0..2 {
                        *v += x[[nn, cc, dd + p, i + r, j + s]] * k[[oo, cc, p, r, s]];
                    }
                }
            }
        }
    }
    assert_close(&conv3d(&x, &k).unwrap(), &want);
}

#[test]
fn kernel_gradient_of_a_convolution() {
    let (n, c, h, w, o) = (2, 3, 6, 7, 2);
    let x = fill(Ix4(n, c, h, w), 13);
    // The output gradient's packed copy is the parameter itself when it
    // is in standard layout and exactly the block the sum reads: also
    // given larger than that block (the sum stops at `H - 2`, `W - 2`) and
    // with its axes in another memory order.
    let exact = fill(Ix4(n, o, h - 2, w - 2), 14);
    let larger = fill(Ix4(n, o, h, w + 1), 15);
    let transposed = fill(Ix4(w - 2, h - 2, o, n), 16);
    let transposed = transposed.view().permuted_axes([3, 2, 1, 0]);
    for dy in [exact.view(), larger.view(), transposed] {
        let mut want = Array4::<f64>::zeros((o, c, 3, 3));
        for ((oo, cc, r, s), v) in want.indexed_iter_mut() {
            for nn in 0..n {
                for i in 0..h - 2 {
                    for j in 0..w - 2 {
                        *v += dy[[nn, oo, i, j]] * x[[nn, cc, i + r, j + s]];
                    }
                }
            }
        }
        assert_close(&conv_kernel_grad(&x, dy).unwrap(), &want);
    }
}

#[test]
fn kernel_gradient_of_a_temporary() {
    let (n, c, h, w, o) = (2, 3, 6, 7, 4);
    let x = fill(Ix4(n, c, h, w), 17);
    let dy = fill(Ix4(n, o, h - 2, w - 2), 18);
    let mut dk = Array4::<f64>::zeros((o, c, 3, 3));
    for ((oo, cc, r, s), v) in dk.indexed_iter_mut() {
        for nn in 0..n {
            for i in 0..h - 2 {
                for j in 0..w - 2 {
                    *v += 2.0 * dy[[nn, oo, i, j]] * x[[nn, cc, i + r, j + s]];
                }
            }
        }
    }
    let mut with_l = dk.clone();
    for ((oo, _, _, _), v) in with_l.indexed_iter_mut() {
        *v += 2.0 * dy.index_axis(einlang::ndarray::Axis(1), oo).sum();
    }
    // Twice: the second call reuses the pooled buffers of the first.
    for _ in 0..2 {
        assert_close(&kernel_grad_of_temporary(&x, &dy).unwrap(), &with_l);
        let (got, y) = kernel_grad_and_temporary(&x, &dy).unwrap();
        assert_close(&got, &dk);
        assert_close(&y, &dy.mapv(|v| 2.0 * v));
    }
}

#[test]
fn attention_scores_over_heads() {
    let (b, hd, t, s, d) = (2, 3, 4, 5, 6);
    let q = fill(Ix4(b, hd, t, d), 15);
    let k = fill(Ix4(b, hd, s, d), 16);
    let mut want = Array4::<f64>::zeros((b, hd, t, s));
    for ((bb, h, i, u), v) in want.indexed_iter_mut() {
        for dd in 0..d {
            *v += q[[bb, h, i, dd]] * k[[bb, h, u, dd]];
        }
    }
    assert_close(&scores(&q, &k).unwrap(), &want);
}

#[test]
fn gathered_side_is_an_expression() {
    let (n, l, o) = (3, 9, 2);
    let x: Array2<f64> = fill(einlang::ndarray::Ix2(n, l), 17);
    let m: Array1<f64> = fill(einlang::ndarray::Ix1(n), 18);
    let k: Array2<f64> = fill(einlang::ndarray::Ix2(o, 3), 19);
    let mut want = Array3::<f64>::zeros((n, o, l - 2));
    for ((nn, oo, t), v) in want.indexed_iter_mut() {
        for r in 0..3 {
            *v += (x[[nn, t + r]] - m[nn]) * 2.0 * k[[oo, r]];
        }
    }
    assert_close(&centered(&x, &m, &k).unwrap(), &want);
}

#[test]
fn an_unproven_read_is_still_checked() {
    let a: Array2<f64> = fill(einlang::ndarray::Ix2(3, 4), 20);
    let w = fill(einlang::ndarray::Ix3(2, 4, 2), 21);
    let mut want = Array2::<f64>::zeros((3, 2));
    for ((i, o), v) in want.indexed_iter_mut() {
        for k in 0..4 {
            for r in 0..2 {
                *v += a[[i, k]] * w[[o, k, r]] * 0.5;
            }
        }
    }
    assert_close(&unproven(&a, &w).unwrap(), &want);
    // `w` shorter than the sum along its second axis: an error, never a
    // read out of bounds.
    let short = fill(einlang::ndarray::Ix3(2, 3, 2), 22);
    assert!(unproven(&a, &short).is_err());
    // No rows: nothing is read, so no error either.
    let none = Array2::<f64>::zeros((0, 4));
    assert_eq!(unproven(&none, &short).unwrap().shape(), &[0, 2]);
}

#[test]
fn sums_that_start_above_zero() {
    for t_len in [1usize, 2, 5] {
        let (b, j, k) = (3, 4, 5);
        let d = fill(einlang::ndarray::Ix3(t_len, b, j), 31);
        let h = fill(einlang::ndarray::Ix3(t_len, b, k), 32);
        let want = Array2::from_shape_fn((k, j), |(kk, jj)| {
            let mut acc = 0.0;
            for t in 1..t_len {
                for n in 0..b {
                    acc += d[[t, n, jj]] * h[[t - 1, n, kk]];
                }
            }
            acc
        });
        assert_close(&through_time(&d, &h).unwrap(), &want);
        let (a2, b2) = (fill(einlang::ndarray::Ix2(t_len, 6), 33), fill(einlang::ndarray::Ix2(t_len, 7), 34));
        let want = Array2::from_shape_fn((6, 7), |(i, jj)| (2..t_len).map(|t| a2[[t, i]] * b2[[t - 1, jj]]).sum());
        assert_close(&from_step_two(&a2, &b2).unwrap(), &want);
    }
}

/// `d[n, c, i + r + off_r, j + s + off_s] += g[n, o, i, j] * k[o, c, r, s]`
/// for every term whose target is inside `d`: the transposed convolution
/// as the scatter it is the adjoint of.
fn scatter(g: &Array4<f64>, k: &Array4<f64>, out: (usize, usize), off: (i64, i64)) -> Array4<f64> {
    let (n, o, p, q) = g.dim();
    let (_, c, kh, kw) = k.dim();
    let mut d = Array4::<f64>::zeros((n, c, out.0, out.1));
    for nn in 0..n {
        for oo in 0..o {
            for i in 0..p {
                for j in 0..q {
                    for cc in 0..c {
                        for r in 0..kh {
                            for s in 0..kw {
                                let (a, b) = (i as i64 + r as i64 + off.0, j as i64 + s as i64 + off.1);
                                if a >= 0 && b >= 0 && (a as usize) < out.0 && (b as usize) < out.1 {
                                    d[[nn, cc, a as usize, b as usize]] += g[[nn, oo, i, j]] * k[[oo, cc, r, s]];
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    d
}

#[test]
fn input_gradient_of_a_convolution() {
    // Fewer input than output channels, more, a non-square kernel, a
    // kernel as large as the image, one image of one row of outputs.
    for (n, c, h, w, o, kh, kw) in [
        (2, 3, 6, 7, 5, 3, 3),
        (3, 4, 5, 5, 2, 3, 3),
        (1, 2, 4, 6, 3, 2, 3),
        (2, 2, 3, 3, 3, 3, 3),
        (1, 1, 3, 8, 1, 3, 2),
    ] {
        let x = fill(Ix4(n, c, h, w), 41);
        let k = fill(Ix4(o, c, kh, kw), 42);
        let g = fill(Ix4(n, o, h - kh + 1, w - kw + 1), 43);
        assert_close(&conv_input_grad(&x, &k, &g).unwrap(), &scatter(&g, &k, (h, w), (0, 0)));
    }
}

#[test]
fn transposed_convolutions_written_out() {
    for (n, o, p, q, c) in [(2, 3, 4, 5, 2), (1, 1, 1, 1, 3), (3, 2, 6, 3, 4)] {
        let dy = fill(Ix4(n, o, p, q), 44);
        let k = fill(Ix4(o, c, 3, 3), 45);
        assert_close(&transposed_padded(&dy, &k).unwrap(), &scatter(&dy, &k, (p + 2, q + 2), (0, 0)));
        let mut cropped = dy.clone();
        cropped.slice_mut(einlang::ndarray::s![.., .., p - 1, ..]).fill(0.0);
        cropped.slice_mut(einlang::ndarray::s![.., .., .., 0]).fill(0.0);
        assert_close(&transposed_cropped(&dy, &k).unwrap(), &scatter(&cropped, &k, (p + 2, q + 2), (0, 0)));
        // Over a parameter: `xp[.., p - r + 2, q - s + 1]` for output points
        // `0..A - 2`, `0..B - 1` is the scatter of `xp` shifted back.
        let (a, b) = (p + 2, q + 1);
        let xp = fill(Ix4(n, o, a, b), 46);
        let k2 = fill(Ix4(o, c, 3, 2), 47);
        assert_close(&transposed_param(&xp, &k2).unwrap(), &scatter(&xp, &k2, (a - 2, b - 1), (-2, -1)));
        // The parameter in another memory order: its image sub-tensors are
        // copied in row-major order instead of viewed.
        let xp_t = xp.view().permuted_axes([3, 2, 1, 0]).as_standard_layout().into_owned();
        let xp_t = xp_t.view().permuted_axes([3, 2, 1, 0]);
        assert!(!xp_t.is_standard_layout());
        assert_close(&transposed_param(xp_t, &k2).unwrap(), &scatter(&xp, &k2, (a - 2, b - 1), (-2, -1)));
        let x3 = fill(Ix4(n, 3, a, b), 49);
        let k3 = fill(Ix4(2, c, 3, 2), 50);
        let first_two = x3.slice(einlang::ndarray::s![.., 0..2, .., ..]).to_owned();
        assert_close(&transposed_two_of_three(&x3, &k3).unwrap(), &scatter(&first_two, &k3, (a - 2, b - 1), (-2, -1)));
    }
}

#[test]
fn an_unproven_transposed_convolution_is_checked() {
    let (n, o, a, b, c) = (2, 3, 6, 5, 2);
    let xp = fill(Ix4(n, o, a, b), 48);
    let k = fill(Ix4(o, c, 3, 3), 49);
    let got = transposed_unproven(&xp, &k, (a - 2) as i64, (b - 2) as i64).unwrap();
    assert_close(&got, &scatter(&xp, &k, (a - 2, b - 2), (-2, -2)));
    // One row too many reads past `xp`: an error, never an out-of-bounds read.
    assert!(transposed_unproven(&xp, &k, (a - 1) as i64, (b - 2) as i64).is_err());
}
