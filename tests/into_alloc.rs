//! A training loop written with `NAME_into` takes no memory from the
//! allocator after its first step: every result goes into the caller's
//! buffers and every temporary comes back from the runtime's pool. Counted
//! by a global allocator; the file holds one test so that nothing else
//! allocates while it counts.
//!
//! The exceptions are other libraries' own memory: a matrix product's
//! packing buffers, which the GEMM libraries (the `gemm` crate,
//! matrixmultiply) allocate inside every call, and the block that rayon's
//! job queue adds every 63 jobs sent to its threads. Each allocation is
//! attributed by its backtrace, and those made inside these libraries are
//! counted apart.

#[macro_use]
mod alloc_support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use einlang::einlang;
use einlang::ndarray::{Array1, Array2};

mod digits {
    einlang::include_ein!("examples/ein/train_digits.ein");
}

einlang! {
    use std::math::sigmoid;

    /// Logistic regression: one SGD step on the mean cross-entropy, the
    /// new weights and bias, and the loss before the step.
    pub fn logistic_step(x: [f32; B, I], y: [f32; B], w: [f32; I], b: f32, lr: f32) -> ([f32; I], f32, f32) {
        let p[n] = sigmoid(sum[i](x[n, i] * w[i]) + b);
        let loss = -sum[n](y[n] * std::math::ln(p[n]) + (1.0 - y[n]) * std::math::ln(1.0 - p[n])) / (B as f32);
        let (gw, gb) = (@loss / @w, @loss / @b);
        (w - lr * gw, b - lr * gb, loss)
    }
}

/// Whether allocations are being counted.
static COUNTING: AtomicBool = AtomicBool::new(false);
/// Set while one allocation's backtrace is taken (which allocates itself).
static TRACING: AtomicBool = AtomicBool::new(false);
/// The allocations counted: (bytes, whether inside a GEMM library or
/// rayon's queue).
static SEEN: Mutex<Vec<(usize, bool)>> = Mutex::new(Vec::new());

fn count(bytes: usize) {
    if !COUNTING.load(Ordering::SeqCst) || TRACING.swap(true, Ordering::SeqCst) {
        return;
    }
    let trace = std::backtrace::Backtrace::force_capture().to_string();
    let gemm = trace.lines().any(|l| {
        l.contains("matrixmultiply::")
            || l.contains("gemm_")
            || l.contains(" gemm::")
            || l.contains("crossbeam_deque::")
    });
    if let Ok(mut seen) = SEEN.lock() {
        seen.push((bytes, gemm));
    }
    TRACING.store(false, Ordering::SeqCst);
}

counting_allocator!(count);

/// Runs `step` with allocations counted: (outside those libraries, inside).
fn counted<T>(step: impl FnOnce() -> T) -> (T, Vec<usize>, Vec<usize>) {
    SEEN.lock().unwrap().clear();
    COUNTING.store(true, Ordering::SeqCst);
    let value = step();
    COUNTING.store(false, Ordering::SeqCst);
    let seen = std::mem::take(&mut *SEEN.lock().unwrap());
    let (gemm, own): (Vec<_>, Vec<_>) = seen.into_iter().partition(|&(_, gemm)| gemm);
    (value, own.into_iter().map(|s| s.0).collect(), gemm.into_iter().map(|s| s.0).collect())
}

/// A deterministic pseudo-random value in [-0.5, 0.5).
fn noise(seed: usize) -> f32 {
    let x = (seed as u64).wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    ((x >> 40) as f32 / (1u64 << 24) as f32) - 0.5
}

#[test]
fn training_loops_with_into_forms_allocate_nothing_after_their_first_step() -> Result<(), einlang::Error> {
    // Logistic regression: no matrix product, so no allocation at all.
    let (batch, inputs) = (300, 40);
    let x = Array2::from_shape_fn((batch, inputs), |(n, i)| noise(n * inputs + i));
    let y = Array1::from_shape_fn(batch, |n| if x.row(n).sum() > 0.0 { 1.0f32 } else { 0.0 });
    let (mut w, mut b) = (Array1::<f32>::zeros(inputs), 0.0f32);
    let mut w_next = w.clone();
    // The plain form first, as the reference (its results are new arrays).
    let mut reference = Vec::new();
    let (mut rw, mut rb) = (w.clone(), b);
    for _ in 0..6 {
        let (rw_next, rb_next, r_loss) = logistic_step(&x, &y, &rw, rb, 0.5)?;
        reference.push((rw_next.clone(), rb_next, r_loss));
        (rw, rb) = (rw_next, rb_next);
    }
    for (step, (rw_next, rb_next, r_loss)) in reference.into_iter().enumerate() {
        let (rest, own, gemm) = counted(|| logistic_step_into(&x, &y, &w, b, 0.5, &mut w_next));
        let (b_next, loss) = rest?;
        assert_eq!((loss.to_bits(), b_next.to_bits()), (r_loss.to_bits(), rb_next.to_bits()), "step {step}");
        assert_eq!(w_next, rw_next, "step {step}");
        if step > 0 {
            assert!(own.is_empty(), "step {step} allocated {own:?} (and {gemm:?} in rayon)");
        }
        std::mem::swap(&mut w, &mut w_next);
        b = b_next;
    }

    // The digits MLP: products go to a GEMM library, whose packing buffers
    // are its own; einlang allocates nothing.
    let (batch, inputs, hidden, classes) = (256, 64, 64, 10);
    let x = Array2::from_shape_fn((batch, inputs), |(n, i)| noise(n * inputs + i));
    let labels = Array1::from_shape_fn(batch, |n| (n * 7 % classes) as i64);
    let mut w1 = Array2::from_shape_fn((inputs, hidden), |(i, j)| noise(1_000_000 + i * hidden + j) * 0.2);
    let mut b1 = Array1::<f32>::zeros(hidden);
    let mut w2 = Array2::from_shape_fn((hidden, classes), |(j, c)| noise(2_000_000 + j * classes + c) * 0.2);
    let mut b2 = Array1::<f32>::zeros(classes);
    let (mut w1n, mut b1n, mut w2n, mut b2n) = (w1.clone(), b1.clone(), w2.clone(), b2.clone());
    let (mut rw1, mut rb1, mut rw2, mut rb2) = (w1.clone(), b1.clone(), w2.clone(), b2.clone());
    let mut reference = Vec::new();
    for _ in 0..6 {
        let (a, bb, c, d, rl) = digits::sgd_step(&x, &labels, &rw1, &rb1, &rw2, &rb2, 0.5)?;
        (rw1, rb1, rw2, rb2) = (a, bb, c, d);
        reference.push(rl);
    }
    let mut losses = Vec::new();
    for (step, rl) in reference.into_iter().enumerate() {
        let (l, own, _gemm) = counted(|| {
            digits::sgd_step_into(&x, &labels, &w1, &b1, &w2, &b2, 0.5, &mut w1n, &mut b1n, &mut w2n, &mut b2n)
        });
        let l = l?;
        assert_eq!(l.to_bits(), rl.to_bits(), "step {step}");
        if step > 0 {
            assert!(own.is_empty(), "step {step} allocated {own:?} outside the GEMM libraries and rayon");
        }
        std::mem::swap(&mut w1, &mut w1n);
        std::mem::swap(&mut b1, &mut b1n);
        std::mem::swap(&mut w2, &mut w2n);
        std::mem::swap(&mut b2, &mut b2n);
        losses.push(l);
    }
    assert_eq!((w1, b1, w2, b2), (rw1, rb1, rw2, rb2), "the same weights as the plain form");
    assert!(losses[5] < losses[0], "the loss goes down: {losses:?}");
    Ok(())
}
