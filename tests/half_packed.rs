//! Half-precision contractions that are not matrix products as written run
//! as the runtime's half GEMMs (`f32` accumulation): convolutions over
//! packed operands (`opt::pack`), a convolution's input gradient
//! multiplied first and shifted after (`opt::col2im`), and the products of
//! a recurrence's steps (`opt::steps`). Each is checked against `f32`
//! computed here from the same rounded inputs, within the tolerances of
//! tests/half.rs: `FACTOR` units of the format's precision of the result,
//! plus `f32`'s own rounding of the sum (`K` terms, 2^-24 each of the
//! terms' magnitudes).

use einlang::half::{bf16, f16};
use einlang::ndarray::{Array2, Array3, Array4};

/// 2^-10 and 2^-7: a unit in the last place of `f16` and `bf16` at 1.
const F16_EPS: f32 = 1.0 / 1024.0;
const BF16_EPS: f32 = 1.0 / 128.0;

/// Units of the format's precision a result may differ by.
const FACTOR: f32 = 2.0;

mod k {
    einlang::einlang! {
        use std::math::tanh;

        pub fn conv16(x: [f16; N, C, H, W], k: [f16; O, C, KH, KW]) -> [f16; N, O, H - KH + 1, W - KW + 1] {
            let y[n, o, i, j] = sum[c, r, s](x[n, c, i + r, j + s] * k[o, c, r, s]);
            y
        }

        /// Same padding by a guard.
        pub fn conv_same16(x: [f16; N, C, H, W], k: [f16; O, C, 3, 3]) -> [f16; N, O, H, W] {
            let y[n, o, i in 0..H, j in 0..W] = sum[c, r, s](
                if ih >= 0 && ih < H && iw >= 0 && iw < W { k[o, c, r, s] * x[n, c, ih, iw] } else { 0.0 }
                where ih = i + r - 1, iw = j + s - 1
            );
            y
        }

        pub fn convb16(x: [bf16; N, C, H, W], k: [bf16; O, C, KH, KW]) -> [bf16; N, O, H - KH + 1, W - KW + 1] {
            let y[n, o, i, j] = sum[c, r, s](x[n, c, i + r, j + s] * k[o, c, r, s]);
            y
        }

        /// The input gradient of a valid convolution.
        pub fn conv_input_grad16(x: [f16; N, C, H, W], k: [f16; O, C, KH, KW], g: [f16; N, O, H - KH + 1, W - KW + 1])
            -> [f16; N, C, H, W] {
            let y[n, o, i, j] = sum[c, r, s](x[n, c, i + r, j + s] * k[o, c, r, s]);
            let l = sum[n, o, i, j](y[n, o, i, j] * g[n, o, i, j]);
            @l / @x
        }

        pub fn rnn16(h0: [f16; B, H], w: [f16; H, H], x: [f16; T, B, H]) -> [f16; T, B, H] {
            let h[0, n, j] = h0[n, j];
            let h[t in 1..T, n, j] = tanh(sum[k](h[t - 1, n, k] * w[k, j]) + x[t, n, j]);
            h
        }
    }
}

/// Deterministic values in [-1, 1).
fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

fn h4(shape: (usize, usize, usize, usize), seed: u64) -> Array4<f16> {
    let n = shape.0 * shape.1 * shape.2 * shape.3;
    Array4::from_shape_vec(shape, values(n, seed).into_iter().map(f16::from_f32).collect()).unwrap()
}

fn close(what: &str, got: f32, want: f32, tol: f32) {
    assert!((got - want).abs() <= tol, "{what}: got {got}, want {want} (tolerance {tol})");
}

/// A valid (or, with `pad`, same-padded) convolution in `f32` of the
/// widened inputs, and each output's sum of the terms' magnitudes.
fn conv_ref(x: &Array4<f32>, k: &Array4<f32>, pad: usize) -> (Array4<f32>, Array4<f32>) {
    let (n, c, h, w) = x.dim();
    let (o, _, kh, kw) = k.dim();
    let (p, q) = (h + 2 * pad - kh + 1, w + 2 * pad - kw + 1);
    let mut y = Array4::zeros((n, o, p, q));
    let mut mag = Array4::zeros((n, o, p, q));
    for ((b, oc, i, j), v) in y.indexed_iter_mut() {
        for ci in 0..c {
            for r in 0..kh {
                for s in 0..kw {
                    let (ih, iw) = ((i + r) as isize - pad as isize, (j + s) as isize - pad as isize);
                    if ih >= 0 && iw >= 0 && (ih as usize) < h && (iw as usize) < w {
                        let t = x[[b, ci, ih as usize, iw as usize]] * k[[oc, ci, r, s]];
                        *v += t;
                        mag[[b, oc, i, j]] += t.abs();
                    }
                }
            }
        }
    }
    (y, mag)
}

#[test]
fn f16_and_bf16_convolutions_are_packed_products() {
    let (x, k) = (h4((2, 3, 9, 8), 1), h4((4, 3, 3, 2), 2));
    let (xf, kf) = (x.mapv(f16::to_f32), k.mapv(f16::to_f32));
    let terms = (3 * 3 * 2) as f32;
    let (want, mag) = conv_ref(&xf, &kf, 0);
    let got = k::conv16(&x, &k).unwrap();
    assert_eq!(got.dim(), want.dim());
    for (i, w) in want.indexed_iter() {
        let tol = FACTOR * F16_EPS * w.abs() + terms * mag[i] / (1 << 24) as f32;
        close(&format!("conv16{i:?}"), got[i].to_f32(), *w, tol);
    }
    let k3 = h4((4, 3, 3, 3), 3);
    let (want, mag) = conv_ref(&xf, &k3.mapv(f16::to_f32), 1);
    let got = k::conv_same16(&x, &k3).unwrap();
    assert_eq!(got.dim(), want.dim());
    for (i, w) in want.indexed_iter() {
        let tol = FACTOR * F16_EPS * w.abs() + 27.0 * mag[i] / (1 << 24) as f32;
        close(&format!("conv_same16{i:?}"), got[i].to_f32(), *w, tol);
    }
    let (xb, kb) = (x.mapv(|v| bf16::from_f32(v.to_f32())), k.mapv(|v| bf16::from_f32(v.to_f32())));
    let (want, mag) = conv_ref(&xb.mapv(bf16::to_f32), &kb.mapv(bf16::to_f32), 0);
    let got = k::convb16(&xb, &kb).unwrap();
    for (i, w) in want.indexed_iter() {
        let tol = FACTOR * BF16_EPS * w.abs() + terms * mag[i] / (1 << 24) as f32;
        close(&format!("convb16{i:?}"), got[i].to_f32(), *w, tol);
    }
    // A sum of 4608 ones (channels x kernel): accumulated in f32, not in
    // f16 (whose sums stop at 2048).
    let ones = Array4::from_elem((1, 512, 3, 3), f16::ONE);
    let got = k::conv16(&ones, &Array4::from_elem((2, 512, 3, 3), f16::ONE)).unwrap();
    assert!(got.iter().all(|v| *v == f16::from_f32(4608.0)), "{got:?}");
}

#[test]
fn the_input_gradient_of_an_f16_convolution() {
    let (x, k) = (h4((2, 3, 7, 6), 4), h4((4, 3, 3, 2), 5));
    let g = h4((2, 4, 5, 5), 6);
    let got = k::conv_input_grad16(&x, &k, &g).unwrap();
    let (kf, gf) = (k.mapv(f16::to_f32), g.mapv(f16::to_f32));
    for ((n, c, h, w), v) in got.indexed_iter() {
        let (mut want, mut mag) = (0f32, 0f32);
        for o in 0..4 {
            for r in 0..3 {
                for s in 0..2 {
                    if h >= r && w >= s && h - r < 5 && w - s < 5 {
                        let t = gf[[n, o, h - r, w - s]] * kf[[o, c, r, s]];
                        want += t;
                        mag += t.abs();
                    }
                }
            }
        }
        // The products of each kernel tap may be rounded before the taps
        // are summed: a unit of each term's magnitude on top.
        let tol = FACTOR * F16_EPS * want.abs() + F16_EPS * mag + 24.0 * mag / (1 << 24) as f32;
        close(&format!("dx[{n}, {c}, {h}, {w}]"), v.to_f32(), want, tol);
    }
}

#[test]
fn f16_recurrence_steps_are_products() {
    let (b, hd, t) = (5, 40, 12);
    let h0 = Array2::from_shape_vec((b, hd), values(b * hd, 7).into_iter().map(f16::from_f32).collect()).unwrap();
    let w = Array2::from_shape_vec((hd, hd), values(hd * hd, 8).into_iter().map(|v| f16::from_f32(v * 0.3)).collect())
        .unwrap();
    let x = Array3::from_shape_vec((t, b, hd), values(t * b * hd, 9).into_iter().map(f16::from_f32).collect()).unwrap();
    let h = k::rnn16(&h0, &w, &x).unwrap();
    assert_eq!(h.index_axis(einlang::ndarray::Axis(0), 0), h0);
    // Each step from the previous step's stored (rounded) values.
    for s in 1..t {
        for n in 0..b {
            for j in 0..hd {
                let terms = (0..hd).map(|k| h[[s - 1, n, k]].to_f32() * w[[k, j]].to_f32());
                let (sum, mag) = terms.fold((0f32, 0f32), |(a, m), v| (a + v, m + v.abs()));
                let want = (sum + x[[s, n, j]].to_f32()).tanh();
                // The product may be stored before `x` is added (a unit of
                // it, through tanh, whose slope is at most 1).
                let tol =
                    FACTOR * F16_EPS * want.abs() + F16_EPS * sum.abs() + hd as f32 * mag / (1 << 24) as f32 + 1e-6;
                close(&format!("h[{s}, {n}, {j}]"), h[[s, n, j]].to_f32(), want, tol);
            }
        }
    }
}

/// The passes took these contractions: the optimized IR multiplies them
/// as GEMMs.
#[test]
fn the_passes_take_half_precision() {
    // Packed (`opt::pack`), twice; multiplied first (`opt::col2im`); a
    // product per step (`opt::steps`).
    let cases = [
        ("pub fn conv(x: [f16; N, C, H, W], k: [f16; O, C, 3, 3]) -> [f16; N, O, H - 2, W - 2] {
             let y[n, o, i, j] = sum[c, r, s](x[n, c, i + r, j + s] * k[o, c, r, s]);
             y
         }", "gemm y_prod_m = y_kern_m"),
        ("pub fn conv(x: [bf16; N, C, H, W], k: [bf16; O, C, 3, 3]) -> [bf16; N, O, H - 2, W - 2] {
             let y[n, o, i, j] = sum[c, r, s](x[n, c, i + r, j + s] * k[o, c, r, s]);
             y
         }", "gemm y_prod_m = y_kern_m"),
        ("pub fn grad(x: [f16; N, C, H, W], k: [f16; O, C, 3, 3], g: [f16; N, O, H - 2, W - 2]) -> [f16; N, C, H, W] {
             let y[n, o, i, j] = sum[c, r, s](x[n, c, i + r, j + s] * k[o, c, r, s]);
             let l = sum[n, o, i, j](y[n, o, i, j] * g[n, o, i, j]);
             @l / @x
         }", "gemm d_x_g_m = d_x_kern_m"),
        ("use std::math::tanh;
         pub fn rnn(h0: [f16; B, H], w: [f16; H, H], x: [f16; T, B, H]) -> [f16; T, B, H] {
             let h[0, n, j] = h0[n, j];
             let h[t in 1..T, n, j] = tanh(sum[k](h[t - 1, n, k] * w[k, j]) + x[t, n, j]);
             h
         }", "gemm h_mm = h_step"),
    ];
    for (src, marker) in cases {
        let compiled = einlang_core::compile_str(src, &einlang_core::Options::default()).unwrap();
        let text = einlang_core::ir::pretty::pretty_program(&compiled.ir);
        assert!(text.contains(marker), "{marker} in\n{text}");
        if marker.contains("h_step") {
            assert!(text.contains("at each step of the next clause:"), "{text}");
        }
    }
}
