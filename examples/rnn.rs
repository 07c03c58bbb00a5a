//! An Elman RNN with a tanh cell written as a recurrence: the compiler runs
//! time sequentially and the hidden units in parallel, and, because only the
//! last state is read, keeps two time steps instead of the whole sequence.
//!
//! Run with `cargo run --release --example rnn`.

use einlang::ndarray::{Array1, Array2};

#[macro_use]
#[path = "common/recurrence.rs"]
mod recurrence;

program! {
    use std::math::tanh;

    /// The last hidden state of `h[t] = tanh(W h[t-1] + U x[t])`.
    pub fn rnn(h0: [f32; H], w: [f32; H, H], u: [f32; H, I], x: [f32; T, I]) -> [f32; H] {
        let h[0, j] = h0[j];
        let h[t in 1..T, j] = tanh(sum[k](w[j, k] * h[t - 1, k]) + sum[i](u[j, i] * x[t, i]));
        let last[j] = h[T - 1, j];
        last
    }
}

fn main() -> Result<(), einlang::Error> {
    let (hidden, inputs, steps) = (64, 8, 10_000);
    // A deterministic sine-wave input and small weights.
    let x = Array2::from_shape_fn((steps, inputs), |(t, i)| ((t as f32) * 0.01 + i as f32).sin());
    let w = Array2::from_shape_fn((hidden, hidden), |(j, k)| (((j * 7 + k * 3) % 11) as f32 - 5.0) * 0.02);
    let u = Array2::from_shape_fn((hidden, inputs), |(j, i)| (((j + 2 * i) % 5) as f32 - 2.0) * 0.1);
    let h0 = Array1::<f32>::zeros(hidden);

    let start = std::time::Instant::now();
    let h = rnn(&h0, &w, &u, &x)?;
    let took = start.elapsed();
    println!("last hidden state after {steps} steps (first 6 of {hidden}): {:.4}", h.slice(einlang::ndarray::s![..6]));
    println!("took {:.2} ms", took.as_secs_f64() * 1e3);

    if let Some(f) = recurrence::facts(SRC, "rnn", "h") {
        println!(
            "h: sequential axes {:?}, parallel axes {:?}, lookback {:?}, storage {:?}",
            f.sequential, f.parallel, f.lookback, f.storage
        );
    }
    Ok(())
}
