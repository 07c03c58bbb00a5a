//! Recurrence steps that multiply an earlier step by a matrix run as one
//! GEMM per step (`opt::steps`); every form here against a plain loop.

mod common;

use einlang::einlang;
use einlang::ndarray::{Array2, Array3};

einlang! {
    use std::math::tanh;

    pub fn rnn(h0: [f64; B, H], w: [f64; H, H], x: [f64; T, B, H]) -> [f64; T, B, H] {
        let h[0, n, j] = h0[n, j];
        let h[t in 1..T, n, j] = tanh(sum[k](h[t - 1, n, k] * w[k, j]) + x[t, n, j]);
        h
    }

    /// The matrix read transposed, two steps back, the state's axes swapped.
    pub fn lag_two(h0: [f64; H, B], w: [f64; H, H], steps: i64) -> [f64; H, B] {
        let h[0, j, n] = h0[j, n];
        let h[1, j, n] = 0.5 * h0[j, n];
        let h[t in 2..steps, j, n] = 0.1 * h[t - 1, j, n] + tanh(sum[k](w[j, k] * h[t - 2, k, n]));
        let last[j, n] = h[steps - 1, j, n];
        last
    }

    /// The product under a condition on the step.
    pub fn gated(h0: [f32; B, H], w: [f32; H, H], steps: i64) -> [f32; B, H] {
        let h[0, n, j] = h0[n, j];
        let h[t in 1..steps, n, j] = if t % 3 == 0 { h[t - 1, n, j] } else { tanh(sum[k](h[t - 1, n, k] * w[k, j])) };
        let last[n, j] = h[steps - 1, n, j];
        last
    }
}

/// Values uniform in `[-1, 1)`.
fn data(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = common::Rng::new(seed);
    (0..n).map(|_| rng.range(-1.0, 1.0)).collect()
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * (1.0 + b.abs())
}

#[test]
fn an_rnn_matches_a_plain_loop_at_every_step() {
    for (t, b, h) in [(1usize, 1usize, 1usize), (2, 1, 3), (5, 4, 7), (12, 9, 33), (3, 40, 64)] {
        let h0 = Array2::from_shape_vec((b, h), data(b * h, 1)).unwrap();
        let w = Array2::from_shape_vec((h, h), data(h * h, 2)).unwrap() * 0.4;
        let x = Array3::from_shape_vec((t, b, h), data(t * b * h, 3)).unwrap();
        let got = rnn(&h0, &w, &x).unwrap();
        let mut want = Array3::zeros((t, b, h));
        for n in 0..b {
            for j in 0..h {
                want[[0, n, j]] = h0[[n, j]];
            }
        }
        for s in 1..t {
            for n in 0..b {
                for j in 0..h {
                    let mut acc = 0.0;
                    for k in 0..h {
                        acc += want[[s - 1, n, k]] * w[[k, j]];
                    }
                    want[[s, n, j]] = (acc + x[[s, n, j]]).tanh();
                }
            }
        }
        for (g, w) in got.iter().zip(&want) {
            assert!(close(*g, *w, 1e-12), "T={t} B={b} H={h}: {g} vs {w}");
        }
    }
}

#[test]
fn two_steps_back_through_a_transposed_matrix() {
    for (steps, h, b) in [(2i64, 3usize, 2usize), (9, 5, 1), (20, 17, 6)] {
        let h0 = Array2::from_shape_vec((h, b), data(h * b, 4)).unwrap();
        let w = Array2::from_shape_vec((h, h), data(h * h, 5)).unwrap() * 0.5;
        let got = lag_two(&h0, &w, steps).unwrap();
        let mut hs = vec![h0.clone(), h0.mapv(|v| 0.5 * v)];
        for t in 2..steps as usize {
            let mut next = Array2::zeros((h, b));
            for j in 0..h {
                for n in 0..b {
                    let mut acc = 0.0;
                    for k in 0..h {
                        acc += w[[j, k]] * hs[t - 2][[k, n]];
                    }
                    next[[j, n]] = 0.1 * hs[t - 1][[j, n]] + acc.tanh();
                }
            }
            hs.push(next);
        }
        let want = &hs[steps as usize - 1];
        for (g, w) in got.iter().zip(want) {
            assert!(close(*g, *w, 1e-12), "steps {steps}: {g} vs {w}");
        }
    }
}

#[test]
fn a_product_under_a_condition_on_the_step() {
    let (b, h, steps) = (3usize, 10usize, 11i64);
    let h0 = Array2::from_shape_vec((b, h), data(b * h, 6)).unwrap().mapv(|v| v as f32);
    let w = Array2::from_shape_vec((h, h), data(h * h, 7)).unwrap().mapv(|v| v as f32 * 0.6);
    let got = gated(&h0, &w, steps).unwrap();
    let mut cur = h0.clone();
    for t in 1..steps {
        if t % 3 != 0 {
            let mut next = Array2::<f32>::zeros((b, h));
            for n in 0..b {
                for j in 0..h {
                    let mut acc = 0.0f32;
                    for k in 0..h {
                        acc += cur[[n, k]] * w[[k, j]];
                    }
                    next[[n, j]] = acc.tanh();
                }
            }
            cur = next;
        }
    }
    for (g, w) in got.iter().zip(&cur) {
        assert!((g - w).abs() <= 1e-5 * (1.0 + w.abs()), "{g} vs {w}");
    }
}

#[test]
fn the_steps_are_gemms() {
    let src = "use std::math::tanh;
        pub fn rnn(h0: [f64; B, H], w: [f64; H, H], x: [f64; T, B, H]) -> [f64; T, B, H] {
            let h[0, n, j] = h0[n, j];
            let h[t in 1..T, n, j] = tanh(sum[k](h[t - 1, n, k] * w[k, j]) + x[t, n, j]);
            h
        }";
    let compiled = einlang_core::compile_str(src, &einlang_core::Options::default()).unwrap();
    let text = einlang_core::ir::pretty::pretty_program(&compiled.ir);
    assert!(text.contains("at each step of the next clause:") && text.contains("gemm h_mm = h_step"), "{text}");
}
