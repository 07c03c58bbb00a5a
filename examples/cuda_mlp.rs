//! The digits MLP of `train_digits` on a GPU: the forward pass and the whole
//! SGD step (loss, gradients by `@l / @w`, update) are `#[device(cuda)]`
//! functions, compiled to CUDA kernels and cuBLAS calls; the parameters stay
//! on the device between steps. The CPU version of the same source checks
//! the first step and the final accuracy.
//!
//! ```sh
//! cargo run --release --features cuda --example cuda_mlp
//! ```
//!
//! Without a GPU it says so, compiles every kernel of this binary with NVRTC
//! when `libnvrtc` is on the library path (as a user's CI would), and exits
//! successfully.

#[path = "common/digits.rs"]
mod digits;

use std::error::Error;
use std::time::Instant;

use digits::{Params, Rng};
use einlang::cuda::{self, Device, Tensor};
use einlang::ndarray::{Array1, Array2, Axis, Ix1, Ix2};

mod gpu {
    einlang::einlang! {
        use std::math::tanh;
        use std::ml::log_softmax;

        pub fn logits(x: [f32; B, I], w1: [f32; I, H], b1: [f32; H], w2: [f32; H, C], b2: [f32; C]) -> [f32; B, C] {
            let h[n, j] = tanh(sum[i](x[n, i] * w1[i, j]) + b1[j]);
            let z[n, c] = sum[j](h[n, j] * w2[j, c]) + b2[c];
            z
        }

        pub fn batch_loss(
            x: [f32; B, I], labels: [i64; B],
            w1: [f32; I, H], b1: [f32; H], w2: [f32; H, C], b2: [f32; C],
        ) -> f32 {
            let lp = log_softmax(logits(x, w1, b1, w2, b2));
            -sum[n](lp[n, labels[n]]) / (B as f32)
        }

        /// Class scores of a batch, on the device.
        #[device(cuda)]
        pub fn forward(x: [f32; B, I], w1: [f32; I, H], b1: [f32; H], w2: [f32; H, C], b2: [f32; C]) -> [f32; B, C] {
            logits(x, w1, b1, w2, b2)
        }

        /// One SGD step on the device: the new parameters and the loss.
        #[device(cuda)]
        pub fn sgd_step(
            x: [f32; B, I], labels: [i64; B],
            w1: [f32; I, H], b1: [f32; H], w2: [f32; H, C], b2: [f32; C],
            lr: f32,
        ) -> ([f32; I, H], [f32; H], [f32; H, C], [f32; C], f32) {
            let l = batch_loss(x, labels, w1, b1, w2, b2);
            let (gw1, gb1, gw2, gb2) = (@l / @w1, @l / @b1, @l / @w2, @l / @b2);
            (w1 - lr * gw1, b1 - lr * gb1, w2 - lr * gw2, b2 - lr * gb2, l)
        }
    }
}

const HIDDEN: usize = 64;
const BATCH: usize = 50;
const LR: f32 = 0.3;
const EPOCHS: usize = 30;

/// The parameters in device memory.
struct DeviceParams {
    w1: Tensor<f32, Ix2>,
    b1: Tensor<f32, Ix1>,
    w2: Tensor<f32, Ix2>,
    b2: Tensor<f32, Ix1>,
}

impl DeviceParams {
    fn upload(dev: &Device, p: &Params) -> Result<DeviceParams, einlang::Error> {
        Ok(DeviceParams {
            w1: Tensor::from_host(dev, &p.w1)?,
            b1: Tensor::from_host(dev, &p.b1)?,
            w2: Tensor::from_host(dev, &p.w2)?,
            b2: Tensor::from_host(dev, &p.b2)?,
        })
    }

    fn download(&self) -> Result<Params, einlang::Error> {
        Ok(Params { w1: self.w1.to_host()?, b1: self.b1.to_host()?, w2: self.w2.to_host()?, b2: self.b2.to_host()? })
    }

    /// One step on a batch already on the device; the loss.
    fn step(&mut self, dev: &Device, x: &Tensor<f32, Ix2>, y: &Tensor<i64, Ix1>) -> Result<f32, einlang::Error> {
        let (w1, b1, w2, b2, loss) = gpu::sgd_step(dev, x, y, &self.w1, &self.b1, &self.w2, &self.b2, LR)?;
        *self = DeviceParams { w1, b1, w2, b2 };
        Ok(loss)
    }
}

fn max_difference(a: &Array2<f32>, b: &Array2<f32>) -> f32 {
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

fn main() -> Result<(), Box<dyn Error>> {
    let dev = match Device::new(0) {
        Ok(dev) => dev,
        Err(e) => {
            println!("cuda_mlp: no GPU here ({e}).");
            println!("With one, this example trains the digits MLP with every step on the device.");
            if cuda::nvrtc_available() {
                let n = cuda::compile_check("sm_90")?;
                println!("NVRTC compiled all {n} kernels of this binary for sm_90 without a GPU.");
            } else {
                println!("NVRTC is not on the library path either, so the kernels were not compiled.");
            }
            return Ok(());
        }
    };
    println!("device {} ({}), {} kernels in this binary", dev.ordinal(), dev.arch(), cuda::kernels().len());

    let (train, test) = digits::load()?;
    let mut rng = Rng::new(2024);
    let init = Params::init(HIDDEN, &mut rng);

    // The forward pass and one step against the CPU.
    let cpu_scores = digits::mlp::logits(&test.x, &init.w1, &init.b1, &init.w2, &init.b2)?;
    let mut params = DeviceParams::upload(&dev, &init)?;
    let x_test = Tensor::from_host(&dev, &test.x)?;
    let gpu_scores = gpu::forward(&dev, &x_test, &params.w1, &params.b1, &params.w2, &params.b2)?.to_host()?;
    println!("forward pass: largest difference from the CPU {:.2e}", max_difference(&gpu_scores, &cpu_scores));
    let rows: Vec<usize> = (0..BATCH).collect();
    let (x0, y0) = (train.x.select(Axis(0), &rows), train.y.select(Axis(0), &rows));
    let (cw1, _, _, _, closs) = digits::mlp::sgd_step(&x0, &y0, &init.w1, &init.b1, &init.w2, &init.b2, LR)?;
    let mut probe = DeviceParams::upload(&dev, &init)?;
    let gloss = probe.step(&dev, &Tensor::from_host(&dev, &x0)?, &Tensor::from_host(&dev, &y0)?)?;
    println!(
        "one step: loss {gloss:.5} (CPU {closs:.5}), largest w1 difference {:.2e}",
        max_difference(&probe.w1.to_host()?, &cw1)
    );

    // Training: batches are copied to the device, the parameters stay there.
    let start = Instant::now();
    for epoch in 1..=EPOCHS {
        let order = rng.permutation(train.y.len());
        let mut total = 0.0;
        for rows in order.chunks_exact(BATCH) {
            let x: Array2<f32> = train.x.select(Axis(0), rows);
            let y: Array1<i64> = train.y.select(Axis(0), rows);
            total += params.step(&dev, &Tensor::from_host(&dev, &x)?, &Tensor::from_host(&dev, &y)?)?;
        }
        if epoch % 10 == 0 {
            println!("epoch {epoch:2}: train loss {:.4}", total / (order.len() / BATCH) as f32);
        }
    }
    dev.synchronize()?;
    let trained = params.download()?;
    let accuracy = trained.accuracy(&test)?;
    println!(
        "test accuracy {:.1}% after {EPOCHS} epochs, {:.0} ms on the device",
        100.0 * accuracy,
        start.elapsed().as_secs_f64() * 1e3
    );
    if accuracy < 0.9 {
        return Err(format!("test accuracy {:.1}% is below 90%", 100.0 * accuracy).into());
    }
    Ok(())
}
