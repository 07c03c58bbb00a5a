//! Mixed-precision training: `f32` master weights, `f16` compute.
//!
//! A two-layer tanh network learns a fixed random "teacher" network of the
//! same shape from 512 samples. Each step (`step16`, one Einlang function)
//! rounds the `f32` master weights to `f16`, runs the forward pass, the
//! loss and its gradients in `f16` (every stored value in 16 bits, every
//! sum and product accumulated in `f32`), scales the loss by a constant
//! so that small gradients do not flush to zero in `f16` (loss scaling),
//! and updates the `f32` masters with the unscaled gradients. `step32` is
//! the same step in `f32` from the same start, for comparison.
//!
//! ```sh
//! cargo run --release --example mixed_precision
//! ```
//!
//! Prints both losses every 50 steps; exits with an error unless the
//! `f16` run's loss fell tenfold and ends within 1.5x of the `f32` run's
//! (above the `f32` loss by more than `f16`'s rounding could explain).

use std::error::Error;

use einlang::half::f16;
use einlang::ndarray::Array2;

mod model {
    einlang::einlang! {
        use std::math::tanh;

        fn loss16(w1: [f16; I, H], w2: [f16; H, O], x: [f16; B, I], t: [f16; B, O], scale: f16) -> f16 {
            let h[n, j] = tanh(sum[i](x[n, i] * w1[i, j]));
            let y[n, o] = sum[j](h[n, j] * w2[j, o]);
            sum[n, o]((y[n, o] - t[n, o]) ** 2) * scale
        }

        /// One SGD step on the mean squared error: f16 copies of the
        /// masters, the f16 loss (the mean times `scale`) and its gradients,
        /// an f32 update of the masters with the gradients unscaled.
        pub fn step16(w1: [f32; I, H], w2: [f32; H, O], x: [f16; B, I], t: [f16; B, O], lr: f32, scale: f32)
            -> ([f32; I, H], [f32; H, O], f32)
        {
            let w1h[i, j] = w1[i, j] as f16;
            let w2h[j, o] = w2[j, o] as f16;
            let l = loss16(w1h, w2h, x, t, (scale / ((B * O) as f32)) as f16);
            let g1 = @l / @w1h;
            let g2 = @l / @w2h;
            let n1[i, j] = w1[i, j] - lr * (g1[i, j] as f32) / scale;
            let n2[j, o] = w2[j, o] - lr * (g2[j, o] as f32) / scale;
            (n1, n2, l as f32 / scale)
        }

        fn loss32(w1: [f32; I, H], w2: [f32; H, O], x: [f32; B, I], t: [f32; B, O]) -> f32 {
            let h[n, j] = tanh(sum[i](x[n, i] * w1[i, j]));
            let y[n, o] = sum[j](h[n, j] * w2[j, o]);
            sum[n, o]((y[n, o] - t[n, o]) ** 2)
        }

        /// The same step in f32, on the sum of squares.
        pub fn step32(w1: [f32; I, H], w2: [f32; H, O], x: [f32; B, I], t: [f32; B, O], lr: f32)
            -> ([f32; I, H], [f32; H, O], f32)
        {
            let l = loss32(w1, w2, x, t);
            let g1 = @l / @w1;
            let g2 = @l / @w2;
            let n1[i, j] = w1[i, j] - lr * g1[i, j];
            let n2[j, o] = w2[j, o] - lr * g2[j, o];
            (n1, n2, l)
        }

        /// The teacher's outputs.
        pub fn teacher(w1: [f32; I, H], w2: [f32; H, O], x: [f32; B, I]) -> [f32; B, O] {
            let h[n, j] = tanh(sum[i](x[n, i] * w1[i, j]));
            let y[n, o] = sum[j](h[n, j] * w2[j, o]);
            y
        }
    }
}

const SAMPLES: usize = 512;
const INPUTS: usize = 16;
const HIDDEN: usize = 32;
const OUTPUTS: usize = 4;

/// Deterministic values in [-scale, scale).
fn random(rows: usize, cols: usize, seed: u64, scale: f32) -> Array2<f32> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    Array2::from_shape_fn((rows, cols), |_| {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0) * scale
    })
}

fn main() -> Result<(), Box<dyn Error>> {
    let x = random(SAMPLES, INPUTS, 1, 1.0);
    let t = model::teacher(&random(INPUTS, HIDDEN, 2, 0.5), &random(HIDDEN, OUTPUTS, 3, 0.5), &x)?;
    let (xh, th) = (x.mapv(f16::from_f32), t.mapv(f16::from_f32));
    let (w1, w2) = (random(INPUTS, HIDDEN, 4, 0.3), random(HIDDEN, OUTPUTS, 5, 0.3));
    let (mut a1, mut a2) = (w1.clone(), w2.clone());
    let (mut b1, mut b2) = (w1, w2);
    // The learning rate of the mean squared error (step32 takes the sum's),
    // and the loss scale: the mean times 256 stays well inside f16's range
    // (65504) and lifts its gradients far above f16's smallest values.
    let (lr, per) = (0.05, (SAMPLES * OUTPUTS) as f32);
    let scale = 256.0;
    let (mut first, mut last16, mut last32) = (None, 0.0, 0.0);
    for step in 0..=400 {
        let (n1, n2, l16) = model::step16(&a1, &a2, &xh, &th, lr, scale)?;
        let (m1, m2, l32) = model::step32(&b1, &b2, &x, &t, lr / per)?;
        (a1, a2, b1, b2) = (n1, n2, m1, m2);
        first.get_or_insert(l16);
        (last16, last32) = (l16, l32 / per);
        if step % 50 == 0 {
            println!("step {step:3}: mean squared error f16 {:.6}, f32 {:.6}", last16, last32);
        }
    }
    let first = first.unwrap_or(f32::NAN);
    if !(last16 < first / 10.0) || !(last16 < 1.5 * last32 + 1e-4) {
        return Err(format!("f16 training did not keep up: from {first} to {last16} (f32: {last32})").into());
    }
    Ok(())
}
