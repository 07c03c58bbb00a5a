//! Classifies MNIST digits with a small CNN written in Einlang.
//!
//! ```sh
//! cargo run --release --example mnist -- ../shared/models/mnist/weights ../shared/models/mnist/samples
//! ```
//!
//! The weights directory holds `conv1_w.npy [8, 1, 5, 5]`, `conv1_b.npy`,
//! `conv2_w.npy [16, 8, 5, 5]`, `conv2_b.npy`, `fc_w.npy [256, 10]` and
//! `fc_b.npy`; the samples directory holds 28x28 binary PGM images (`P5`).
//! The network is the ONNX model zoo's MNIST CNN (convolutions with "same"
//! padding, pools of 2 and 3). Each image is scaled to [0, 1] and
//! classified; the example prints one line per image, then the digits.

mod common;

use std::error::Error;
use std::path::PathBuf;

use einlang::einlang;
use einlang::ndarray::{Array1, Array2, Array4};
use ndarray_npy::read_npy;

einlang! {
    use std::ml::relu;

    /// A 5x5 convolution with zero padding 2 ("same" size), then ReLU.
    fn conv5_same_relu(t: [f32; C, H, W], w: [f32; O, C, 5, 5], b: [f32; O]) -> [f32; O, H, W] {
        let y[o, oy in 0..H, ox in 0..W] = relu(sum[c, r, s](
            if iy >= 0 && iy < H && ix >= 0 && ix < W { t[c, iy, ix] } else { 0.0 } * w[o, c, r, s]
        ) + b[o]) where iy = oy + r - 2, ix = ox + s - 2;
        y
    }

    /// Max-pooling with a 2x2 window and stride 2.
    fn max_pool2(t: [f32; C, H, W]) -> [f32; C, H / 2, W / 2] {
        let p[c, y, x] = max[dy in 0..2, dx in 0..2](t[c, 2 * y + dy, 2 * x + dx]);
        p
    }

    /// Max-pooling with a 3x3 window and stride 3.
    fn max_pool3(t: [f32; C, H, W]) -> [f32; C, H / 3, W / 3] {
        let p[c, y, x] = max[dy in 0..3, dx in 0..3](t[c, 3 * y + dy, 3 * x + dx]);
        p
    }

    /// The digit in a 1x28x28 image with ink dark on light (pixel values
    /// in [0, 1]): invert, conv(5x5) -> relu -> maxpool(2) -> conv(5x5) ->
    /// relu -> maxpool(3) -> dense. Returns the class and the logits.
    pub fn classify(
        img: [f32; 1, 28, 28],
        w1: [f32; 8, 1, 5, 5], b1: [f32; 8],
        w2: [f32; 16, 8, 5, 5], b2: [f32; 16],
        wf: [f32; 256, 10], bf: [f32; 10],
    ) -> (i64, [f32; 10]) {
        let inv[c, y, x] = 1.0 - img[c, y, x];
        let p1 = max_pool2(conv5_same_relu(inv, w1, b1));
        let p2 = max_pool3(conv5_same_relu(p1, w2, b2));
        let logits[k] = sum[c, y, x](p2[c, y, x] * wf[c * 16 + y * 4 + x, k]) + bf[k];
        (argmax[k](logits[k]), logits)
    }
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [weights, samples] = args.as_slice() else {
        return Err("usage: mnist WEIGHTS_DIR SAMPLES_DIR".into());
    };
    let (weights, samples) = (PathBuf::from(weights), PathBuf::from(samples));
    let load = |name: &str| weights.join(name);
    let w1: Array4<f32> = read_npy(load("conv1_w.npy"))?;
    let b1: Array1<f32> = read_npy(load("conv1_b.npy"))?;
    let w2: Array4<f32> = read_npy(load("conv2_w.npy"))?;
    let b2: Array1<f32> = read_npy(load("conv2_b.npy"))?;
    let wf: Array2<f32> = read_npy(load("fc_w.npy"))?;
    let bf: Array1<f32> = read_npy(load("fc_b.npy"))?;

    common::classify_samples(&samples, |img| Ok(classify(img, &w1, &b1, &w2, &b2, &wf, &bf)?))?;
    Ok(())
}
