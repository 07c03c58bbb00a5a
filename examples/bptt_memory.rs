//! Backpropagation through 10^5 steps of a recurrence in memory that does
//! not grow with the sequence: the gradient recomputes the primal's
//! history from checkpoints (one every `ceil(sqrt(T))` steps) instead of
//! keeping all of it, once the history is over the runtime's limit
//! (`einlang::checkpoint::history_limit`).
//!
//! The state is 512 `f64`s, so the whole history would be 410 MB, and its
//! adjoint as much again. The peak resident memory stays a few MB. The
//! gradient is checked against finite differences of the loss.
//!
//! Run with `cargo run --release --example bptt_memory`.

#[macro_use]
#[path = "common/recurrence.rs"]
#[allow(dead_code)]
mod recurrence;

use einlang::ndarray::Array1;

program! {
    use std::math::{sin, tanh};

    /// A leaky tanh recurrence over `steps` steps driven by a sine of the
    /// step and the component; the loss is the mean square of the last state.
    pub fn loss(h0: [f64; H], w: [f64; H], steps: i64) -> f64 {
        let h[0, j] = h0[j];
        let h[t in 1..steps, j] = 0.9 * h[t - 1, j] + 0.1 * tanh(w[j] * h[t - 1, j] + sin(0.001 * (t as f64) + (j as f64)));
        sum[j](h[steps - 1, j] * h[steps - 1, j]) / (H as f64)
    }

    pub fn grad(h0: [f64; H], w: [f64; H], steps: i64) -> [f64; H] {
        let l = loss(h0, w, steps);
        @l / @w
    }
}

/// Peak resident set size in kB (Linux `VmHWM`), if available.
fn peak_rss_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn main() -> Result<(), einlang::Error> {
    let (h, steps) = (512usize, 100_000i64);
    let h0 = Array1::from_shape_fn(h, |j| ((j as f64) * 0.37).sin());
    let w = Array1::from_shape_fn(h, |j| 0.5 + 0.4 * ((j as f64) * 0.11).cos());
    let start = std::time::Instant::now();
    let l = loss(&h0, &w, steps)?;
    let primal = start.elapsed();
    println!("loss {l:.6} in {:.2} s", primal.as_secs_f64());
    let before = peak_rss_kb();
    let start = std::time::Instant::now();
    let g = grad(&h0, &w, steps)?;
    let took = start.elapsed();
    let after = peak_rss_kb();
    let history_mb = steps as f64 * h as f64 * 8.0 / 1e6;
    println!(
        "gradient through {steps} steps of {h} states in {:.2} s ({:.1}x the loss)",
        took.as_secs_f64(),
        took.as_secs_f64() / primal.as_secs_f64()
    );
    match (before, after) {
        (Some(b), Some(a)) => println!(
            "peak resident memory: {:.1} MB before, {:.1} MB after (the whole history would be {history_mb:.0} MB)",
            b as f64 / 1024.0,
            a as f64 / 1024.0
        ),
        _ => println!("peak resident memory: not available on this system"),
    }
    // Central differences of the loss at a few components.
    let eps = 1e-5;
    for j in [0usize, 1, h / 2, h - 1] {
        let (mut up, mut down) = (w.clone(), w.clone());
        up[j] += eps;
        down[j] -= eps;
        let fd = (loss(&h0, &up, steps)? - loss(&h0, &down, steps)?) / (2.0 * eps);
        println!("dl/dw[{j}] = {:+.6e} (finite differences {fd:+.6e})", g[j]);
        assert!((g[j] - fd).abs() <= 1e-5 * (1.0 + fd.abs()), "gradient {j}: {} vs {fd}", g[j]);
    }
    if let Ok(compiled) = einlang_core::compile_str(SRC, &einlang_core::Options::default()) {
        for fact in compiled.derivatives("grad") {
            println!("@{} / @{}: {:?}, histories {:?}", fact.target, fact.source, fact.mode, fact.reversed);
        }
    }
    Ok(())
}
