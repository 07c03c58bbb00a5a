//! Classifies MNIST digits with an int8-quantized CNN written in Einlang:
//! activations and weights are int8, convolutions and the dense layer
//! accumulate i8 x i8 products in i32 and rescale to f32 once per output.
//!
//! ```sh
//! cargo run --release --example mnist_quantized -- ../shared/models/mnist_quantized/weights ../shared/models/mnist/samples
//! ```
//!
//! The weights directory holds int8 weights `conv1_w_q.npy [8, 1, 5, 5]`,
//! `conv2_w_q.npy [16, 8, 5, 5]`, `fc_w_q.npy [256, 10]`, their per-tensor
//! scales `*_w_s.npy [1]`, f32 biases, and the activation scales
//! `act1_s.npy` and `flat_s.npy` (symmetric quantization, zero point 0).

mod common;

use std::error::Error;
use std::path::PathBuf;

use einlang::einlang;
use einlang::ndarray::{Array1, Array2, Array4};
use ndarray_npy::read_npy;

einlang! {
    use std::math::{clamp, round};
    use std::ml::relu;

    /// Symmetric int8 quantization: round(x / s), saturated to [-128, 127].
    fn quantize(x: [f32; C, H, W], s: f32) -> [i8; C, H, W] {
        let q[c, h, w] = clamp(round(x[c, h, w] / s), -128.0, 127.0) as i8;
        q
    }

    /// A 5x5 "same" convolution of int8 activations (scale `xs`) with int8
    /// weights (scale `ws`): i32 accumulation, then one rescale, bias, ReLU.
    fn qconv5_relu(x: [i8; C, H, W], xs: f32, w: [i8; O, C, 5, 5], ws: f32, b: [f32; O]) -> [f32; O, H, W] {
        let y[o, oy in 0..H, ox in 0..W] = relu(acc as f32 * (xs * ws) + b[o])
            where acc = sum[c, r, s](
                if iy >= 0 && iy < H && ix >= 0 && ix < W { x[c, iy, ix] as i32 * w[o, c, r, s] as i32 } else { 0 }
                where iy = oy + r - 2, ix = ox + s - 2
            );
        y
    }

    fn max_pool2(t: [f32; C, H, W]) -> [f32; C, H / 2, W / 2] {
        let p[c, y, x] = max[dy in 0..2, dx in 0..2](t[c, 2 * y + dy, 2 * x + dx]);
        p
    }

    fn max_pool3(t: [f32; C, H, W]) -> [f32; C, H / 3, W / 3] {
        let p[c, y, x] = max[dy in 0..3, dx in 0..3](t[c, 3 * y + dy, 3 * x + dx]);
        p
    }

    /// The digit in a 1x28x28 image (ink dark on light, values in [0, 1]).
    pub fn classify(
        img: [f32; 1, 28, 28],
        w1: [i8; 8, 1, 5, 5], w1s: f32, b1: [f32; 8],
        w2: [i8; 16, 8, 5, 5], w2s: f32, b2: [f32; 16],
        wf: [i8; 256, 10], wfs: f32, bf: [f32; 10],
        act1_s: f32, flat_s: f32,
    ) -> (i64, [f32; 10]) {
        let input_s = 1.0 / 127.0;
        let inv[c, y, x] = 1.0 - img[c, y, x];
        let p1 = max_pool2(qconv5_relu(quantize(inv, input_s), input_s, w1, w1s, b1));
        let p2 = max_pool3(qconv5_relu(quantize(p1, act1_s), act1_s, w2, w2s, b2));
        let flat = quantize(p2, flat_s);
        let logits[k] = sum[c, y, x](flat[c, y, x] as i32 * wf[c * 16 + y * 4 + x, k] as i32) as f32 * (flat_s * wfs) + bf[k];
        (argmax[k](logits[k]), logits)
    }
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [weights, samples] = args.as_slice() else {
        return Err("usage: mnist_quantized WEIGHTS_DIR SAMPLES_DIR".into());
    };
    let (weights, samples) = (PathBuf::from(weights), PathBuf::from(samples));
    let load = |name: &str| weights.join(name);
    let scale = |name: &str| -> Result<f32, Box<dyn Error>> {
        let s: Array1<f32> = read_npy(load(name))?;
        s.first().copied().ok_or_else(|| format!("{name} is empty").into())
    };
    let w1: Array4<i8> = read_npy(load("conv1_w_q.npy"))?;
    let w2: Array4<i8> = read_npy(load("conv2_w_q.npy"))?;
    let wf: Array2<i8> = read_npy(load("fc_w_q.npy"))?;
    let b1: Array1<f32> = read_npy(load("conv1_b.npy"))?;
    let b2: Array1<f32> = read_npy(load("conv2_b.npy"))?;
    let bf: Array1<f32> = read_npy(load("fc_b.npy"))?;
    let (w1s, w2s, wfs) = (scale("conv1_w_s.npy")?, scale("conv2_w_s.npy")?, scale("fc_w_s.npy")?);
    let (act1_s, flat_s) = (scale("act1_s.npy")?, scale("flat_s.npy")?);

    common::classify_samples(&samples, |img| {
        Ok(classify(img, &w1, w1s, &b1, &w2, w2s, &b2, &wf, wfs, &bf, act1_s, flat_s)?)
    })?;
    Ok(())
}
