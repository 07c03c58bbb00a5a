//! A recurrence of 10^8 steps read only at its end: the compiler keeps a
//! two-step circular buffer, so the peak resident memory stays a few MB
//! (the full tensor would be 800 MB).
//!
//! Run with `cargo run --release --example recurrence_memory`.

#[macro_use]
#[path = "common/recurrence.rs"]
mod recurrence;

program! {
    /// The logistic map `x[t] = r x[t-1] (1 - x[t-1])`, observed at the end.
    pub fn logistic(x0: f64, r: f64, steps: i64) -> f64 {
        let x[0] = x0;
        let x[t in 1..steps] = r * x[t - 1] * (1.0 - x[t - 1]);
        x[steps - 1]
    }
}

/// Peak resident set size in kB (Linux `VmHWM`), if available.
fn peak_rss_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn main() -> Result<(), einlang::Error> {
    let steps = 100_000_000i64;
    let before = peak_rss_kb();
    let start = std::time::Instant::now();
    let x = logistic(0.2, 3.7, steps)?;
    let took = start.elapsed();
    // The same map as a plain loop, for the value.
    let mut y = 0.2f64;
    for _ in 1..steps {
        y = 3.7 * y * (1.0 - y);
    }
    println!("x[{}] = {x} (plain loop: {y}); {:.2} ns/step", steps - 1, took.as_secs_f64() * 1e9 / steps as f64);
    assert_eq!(x, y);
    match (before, peak_rss_kb()) {
        (Some(b), Some(a)) => {
            println!("peak resident memory: {:.1} MB before, {:.1} MB after", b as f64 / 1024.0, a as f64 / 1024.0)
        }
        _ => println!("peak resident memory: not available on this system"),
    }
    if let Some(f) = recurrence::facts(SRC, "logistic", "x") {
        println!("x: lookback {:?}, tail {:?}, storage {:?}", f.lookback, f.tail, f.storage);
    }
    Ok(())
}
