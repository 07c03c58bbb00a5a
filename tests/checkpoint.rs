//! Backpropagation through time with checkpoints: the same gradients
//! whether the primal's history is kept or recomputed chunk by chunk
//! (`einlang::checkpoint::set_history_limit(0)` forces the latter), against
//! a hand-written backward pass and finite differences.
//!
//! The limit is process-wide: the tests here take turns, setting it to 0
//! (checkpoint whenever the compiler could) or out of reach (keep).

mod common;

use einlang::einlang;
use einlang::ndarray::{Array1, Array2, Array3};

/// The history limit is process-wide: each test holds this while it runs.
static LIMIT: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn checkpoint_always() -> std::sync::MutexGuard<'static, ()> {
    let guard = LIMIT.lock().unwrap_or_else(|e| e.into_inner());
    einlang::checkpoint::set_history_limit(0);
    guard
}

einlang! {
    use std::math::{sin, tanh};

    /// A tanh RNN's loss: the squared last state.
    pub fn rnn_loss(h0: [f64; B, H], w: [f64; H, H], u: [f64; I, H], x: [f64; T, B, I]) -> f64 {
        let h[0, n, j] = h0[n, j];
        let h[t in 1..T, n, j] = tanh(sum[k](h[t - 1, n, k] * w[k, j]) + sum[i](x[t, n, i] * u[i, j]));
        sum[n, j](h[T - 1, n, j] * h[T - 1, n, j])
    }

    pub fn rnn_grad(h0: [f64; B, H], w: [f64; H, H], u: [f64; I, H], x: [f64; T, B, I])
        -> ([f64; H, H], [f64; I, H]) {
        let l = rnn_loss(h0, w, u, x);
        (@l / @w, @l / @u)
    }

    /// A scalar recurrence with two steps of lookback and two parameters.
    pub fn second_order(a: f64, b: f64, steps: i64) -> f64 {
        let x[0] = 0.5;
        let x[1] = 0.25;
        let x[t in 2..steps] = a * x[t - 1] + sin(b * x[t - 2]);
        x[steps - 1] * x[steps - 1]
    }

    pub fn second_order_grad(a: f64, b: f64, steps: i64) -> (f64, f64) {
        let l = second_order(a, b, steps);
        (@l / @a, @l / @b)
    }

    /// A loss that reads the first state as well as the last: the
    /// checkpointed form cannot hold both and gives up.
    pub fn both_ends_grad(h0: [f64; H], w: [f64; H, H]) -> [f64; H, H] {
        let h[0, j] = h0[j];
        let h[t in 1..20, j] = tanh(sum[k](h[t - 1, k] * w[k, j]));
        let l = sum[j](h[19, j] * h[19, j]) + sum[j](h[1, j] * h[1, j]);
        @l / @w
    }
}

/// Values uniform in `[-1, 1)`.
fn data(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = common::Rng::new(seed);
    (0..n).map(|_| rng.range(-1.0, 1.0)).collect()
}

struct Rnn {
    h0: Array2<f64>,
    w: Array2<f64>,
    u: Array2<f64>,
    x: Array3<f64>,
}

fn rnn(t: usize, b: usize, i: usize, h: usize) -> Rnn {
    Rnn {
        h0: Array2::from_shape_vec((b, h), data(b * h, 1)).unwrap(),
        w: Array2::from_shape_vec((h, h), data(h * h, 2)).unwrap() * 0.5,
        u: Array2::from_shape_vec((i, h), data(i * h, 3)).unwrap(),
        x: Array3::from_shape_vec((t, b, i), data(t * b * i, 4)).unwrap(),
    }
}

/// The RNN's gradients by a hand-written backward pass over the kept
/// states.
fn rnn_backward(p: &Rnn) -> (Array2<f64>, Array2<f64>) {
    let t_len = p.x.shape()[0];
    let mut hs = vec![p.h0.clone()];
    for t in 1..t_len {
        let pre = hs[t - 1].dot(&p.w) + p.x.index_axis(einlang::ndarray::Axis(0), t).dot(&p.u);
        hs.push(pre.mapv(f64::tanh));
    }
    let mut dw = Array2::zeros(p.w.raw_dim());
    let mut du = Array2::zeros(p.u.raw_dim());
    let mut dh = hs[t_len - 1].mapv(|v| 2.0 * v);
    for t in (1..t_len).rev() {
        let dpre = &dh * &hs[t].mapv(|v| 1.0 - v * v);
        dw = dw + hs[t - 1].t().dot(&dpre);
        du = du + p.x.index_axis(einlang::ndarray::Axis(0), t).t().dot(&dpre);
        dh = dpre.dot(&p.w.t());
    }
    (dw, du)
}

fn close(a: &Array2<f64>, b: &Array2<f64>, tol: f64) {
    assert_eq!(a.shape(), b.shape());
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() <= tol * (1.0 + y.abs()), "{x} vs {y}\n{a}\n{b}");
    }
}

#[test]
fn rnn_gradients_match_a_hand_written_backward_pass_in_any_chunking() {
    let _limit = checkpoint_always();
    // Lengths around squares and their neighbours: one chunk, a short last
    // chunk, exact squares.
    for t in [1usize, 2, 3, 4, 5, 9, 10, 17, 50] {
        let p = rnn(t, 3, 2, 4);
        let (dw, du) = rnn_grad(&p.h0, &p.w, &p.u, &p.x).unwrap();
        let (rw, ru) = rnn_backward(&p);
        close(&dw, &rw, 1e-10);
        close(&du, &ru, 1e-10);
        // The checkpointed form itself (the macro's private alternative)
        // answers rather than giving up.
        let (cw, cu) = rnn_grad__ckpt(&p.h0, &p.w, &p.u, &p.x).unwrap().expect("the sweep gave up");
        close(&cw, &rw, 1e-10);
        close(&cu, &ru, 1e-10);
    }
}

#[test]
fn kept_and_checkpointed_histories_give_the_same_gradients() {
    let p = rnn(40, 2, 3, 5);
    let _limit = checkpoint_always();
    let (cw, cu) = rnn_grad(&p.h0, &p.w, &p.u, &p.x).unwrap();
    // The kept form: the limit out of reach.
    einlang::checkpoint::set_history_limit(usize::MAX);
    let (kw, ku) = rnn_grad(&p.h0, &p.w, &p.u, &p.x).unwrap();
    close(&cw, &kw, 1e-12);
    close(&cu, &ku, 1e-12);
}

#[test]
fn two_steps_of_lookback_against_finite_differences() {
    let _limit = checkpoint_always();
    let (a, b) = (0.6, 0.9);
    for steps in [2i64, 3, 7, 30, 101] {
        // The checkpointed form itself (it must answer, not give up),
        // against finite differences and against the kept history.
        let (da, db) = second_order_grad__ckpt(a, b, steps).unwrap().expect("the sweep gave up");
        einlang::checkpoint::set_history_limit(usize::MAX);
        let (ka, kb) = second_order_grad(a, b, steps).unwrap();
        einlang::checkpoint::set_history_limit(0);
        assert!((da - ka).abs() <= 1e-12 * (1.0 + ka.abs()) && (db - kb).abs() <= 1e-12 * (1.0 + kb.abs()));
        let eps = 1e-6;
        let fa = (second_order(a + eps, b, steps).unwrap() - second_order(a - eps, b, steps).unwrap()) / (2.0 * eps);
        let fb = (second_order(a, b + eps, steps).unwrap() - second_order(a, b - eps, steps).unwrap()) / (2.0 * eps);
        assert!((da - fa).abs() <= 1e-6 * (1.0 + fa.abs()), "steps {steps}: {da} vs {fa}");
        assert!((db - fb).abs() <= 1e-6 * (1.0 + fb.abs()), "steps {steps}: {db} vs {fb}");
    }
}

#[test]
fn a_read_outside_the_window_falls_back_to_the_kept_history() {
    let _limit = checkpoint_always();
    let h0 = Array1::from(data(3, 7));
    let w = Array2::from_shape_vec((3, 3), data(9, 8)).unwrap() * 0.7;
    let g = both_ends_grad(&h0, &w).unwrap();
    assert!(both_ends_grad__ckpt(&h0, &w).unwrap().is_none(), "the sweep held a step it cannot");
    // Finite differences of the same loss, computed by hand.
    let loss = |w: &Array2<f64>| {
        let mut hs = vec![h0.clone()];
        for t in 1..20 {
            hs.push(hs[t - 1].dot(w).mapv(f64::tanh));
        }
        hs[19].dot(&hs[19]) + hs[1].dot(&hs[1])
    };
    let eps = 1e-6;
    for i in 0..3 {
        for j in 0..3 {
            let (mut a, mut b) = (w.clone(), w.clone());
            a[[i, j]] += eps;
            b[[i, j]] -= eps;
            let fd = (loss(&a) - loss(&b)) / (2.0 * eps);
            assert!((g[[i, j]] - fd).abs() <= 1e-6 * (1.0 + fd.abs()), "[{i}, {j}]: {} vs {fd}", g[[i, j]]);
        }
    }
}

#[test]
fn the_strategy_is_a_compile_fact() {
    let src = "use std::math::tanh;
        pub fn g(h0: [f32; H], w: [f32; H, H], x: [f32; T, H]) -> [f32; H, H] {
            let h[0, j] = h0[j];
            let h[t in 1..T, j] = tanh(sum[k](h[t - 1, k] * w[k, j]) + x[t, j]);
            let l = sum[j](h[T - 1, j]);
            @l / @w
        }";
    let compiled = einlang_core::compile_str(src, &einlang_core::Options::default()).unwrap();
    let facts = compiled.derivatives("g");
    assert_eq!(facts.len(), 1);
    assert_eq!(facts[0].reversed.len(), 1);
    assert_eq!(facts[0].reversed[0].0, "h");
    let einlang_core::transform::autodiff::History::Checkpointed { steps, state, memory } = &facts[0].reversed[0].1
    else {
        panic!("{:?}", facts[0].reversed)
    };
    assert_eq!((steps.as_str(), state.as_str()), ("max(1, T)", "H"));
    // Windows of the primal and the adjoint (a chunk, one step back, and
    // two steps of margin each way around it) and one step per chunk.
    assert_eq!(memory, "(2 * next_power_of_two(K + 6) + 1 * K) * (H) elements, K = ceil(sqrt(max(1, T)))");
}
