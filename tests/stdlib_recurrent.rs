//! `std::ml::{rnn, lstm, gru}` against naive step-by-step loops written
//! here from the formulas in the library's documentation (the seed's gate
//! layouts, each output step consuming its own input step).

use approx::assert_abs_diff_eq;
use einlang::einlang;
use einlang::ndarray::{Array1, Array2, Array3, Axis};
use einlang::Error;

einlang! {
    use std::ml::recurrent_ops::{rnn, lstm, gru};

    pub fn run_rnn(x: [f64; T, N, I], w: [f64; H, I], r: [f64; H, H], b: [f64; B2], h0: [f64; N, H], act: str)
        -> ([f64; T, N, H], [f64; N, H]) {
        rnn(x, w, r, b, h0, shape(r)[1], 0, act)
    }

    pub fn rnn_backward(x: [f64; T, N, I], w: [f64; H, I], r: [f64; H, H], b: [f64; B2], h0: [f64; N, H])
        -> ([f64; T, N, H], [f64; N, H]) {
        rnn(x, w, r, b, h0, shape(r)[1], 1, "Tanh")
    }

    pub fn run_lstm(x: [f32; T, N, I], w: [f32; G, I], r: [f32; G, H], b: [f32; B8], h0: [f32; N, H], c0: [f32; N, H], clip: f32)
        -> ([f32; T, N, H], [f32; N, H], [f32; N, H]) {
        lstm(x, w, r, b, h0, c0, shape(r)[1], 0, clip)
    }

    pub fn run_gru(x: [f64; T, N, I], w: [f64; G, I], r: [f64; G, H], b: [f64; B6], h0: [f64; N, H])
        -> ([f64; T, N, H], [f64; N, H]) {
        gru(x, w, r, b, h0, shape(r)[1], 0, 0)
    }
}

/// Deterministic values in about [-1, 1].
fn fill3(d: (usize, usize, usize), seed: f64) -> Array3<f64> {
    Array3::from_shape_fn(d, |(a, b, c)| ((a * 7 + b * 3 + c) as f64 * 0.37 + seed).sin())
}
fn fill2(d: (usize, usize), seed: f64) -> Array2<f64> {
    Array2::from_shape_fn(d, |(a, b)| ((a * 5 + b) as f64 * 0.61 + seed).cos() * 0.8)
}
fn fill1(n: usize, seed: f64) -> Array1<f64> {
    Array1::from_shape_fn(n, |a| (a as f64 * 0.29 + seed).sin() * 0.5)
}
/// Input [t, n, i], W [g h, i], R [g h, h], B [2 g h] and initial state
/// [n, h] for a layer of `g` gate blocks.
fn layer(
    t: usize,
    n: usize,
    i: usize,
    h: usize,
    g: usize,
    seed: f64,
) -> (Array3<f64>, Array2<f64>, Array2<f64>, Array1<f64>, Array2<f64>) {
    (
        fill3((t, n, i), seed),
        fill2((g * h, i), seed + 0.1),
        fill2((g * h, h), seed + 0.2) * 0.5,
        fill1(2 * g * h, seed + 0.3),
        fill2((n, h), seed + 0.4) * 0.5,
    )
}
/// Row `bn` of step `step` of a sequence, and row `bn` of a state.
fn at(x: &Array3<f64>, step: usize, bn: usize) -> Vec<f64> {
    x.index_axis(Axis(0), step).row(bn).to_vec()
}
fn sigmoid(z: f64) -> f64 {
    1.0 / (1.0 + (-z).exp())
}

/// Gate `g` (a block of rows of `w` / `r`) of unit `h` at input `x` and
/// state `hp`, with both biases.
fn gate(
    w: &Array2<f64>,
    r: &Array2<f64>,
    b: &Array1<f64>,
    blocks: usize,
    g: usize,
    h: usize,
    x: &[f64],
    hp: &[f64],
) -> f64 {
    let hs = r.ncols();
    let row = g * hs + h;
    let mut z = b[row] + b[row + blocks * hs];
    for (i, xi) in x.iter().enumerate() {
        z += w[[row, i]] * xi;
    }
    for (k, hk) in hp.iter().enumerate() {
        z += r[[row, k]] * hk;
    }
    z
}

#[test]
fn rnn_matches_a_loop_for_each_activation() {
    let (t, n, i, h) = (5, 2, 3, 4);
    let (x, w, r, b, h0) = layer(t, n, i, h, 1, 0.1);
    for (name, f) in [("Tanh", f64::tanh as fn(f64) -> f64), ("Sigmoid", sigmoid), ("Relu", |z: f64| z.max(0.0))] {
        let (y, yh) = run_rnn(&x, &w, &r, &b, &h0, name).unwrap();
        let mut state = h0.clone();
        for step in 0..t {
            let mut next = state.clone();
            for bn in 0..n {
                let xs = at(&x, step, bn);
                let hp = state.row(bn).to_vec();
                for u in 0..h {
                    next[[bn, u]] = f(gate(&w, &r, &b, 1, 0, u, &xs, &hp));
                }
            }
            state = next;
            assert_abs_diff_eq!(y.index_axis(Axis(0), step), state.view(), epsilon = 1e-12);
        }
        assert_abs_diff_eq!(yh, state, epsilon = 1e-12);
    }
}

#[test]
fn rnn_rejects_other_directions_and_shapes() {
    let x = fill3((3, 1, 2), 0.0);
    let (w, r, b, h0) = (fill2((2, 2), 0.0), fill2((2, 2), 1.0), fill1(4, 0.0), fill2((1, 2), 0.0));
    assert!(matches!(rnn_backward(&x, &w, &r, &b, &h0), Err(Error::Assert { .. })));
    // A bias of the wrong length.
    assert!(run_rnn(&x, &w, &r, &fill1(3, 0.0), &h0, "Tanh").is_err());
}

#[test]
fn lstm_matches_a_loop_with_and_without_clipping() {
    let (t, n, i, h) = (4, 2, 3, 3);
    let (x, w, r, b, h0) = layer(t, n, i, h, 4, 0.7);
    let c0 = fill2((n, h), 1.3) * 2.0;
    let to32 = |a: &Array3<f64>| a.mapv(|v| v as f32);
    for clip in [0.0f64, 0.5] {
        let cl = |c: f64| if clip > 0.0 { c.clamp(-clip, clip) } else { c };
        let (y, yh, yc) = run_lstm(
            &to32(&x),
            &w.mapv(|v| v as f32),
            &r.mapv(|v| v as f32),
            &b.mapv(|v| v as f32),
            &h0.mapv(|v| v as f32),
            &c0.mapv(|v| v as f32),
            clip as f32,
        )
        .unwrap();
        let (mut hs, mut cs) = (h0.clone(), c0.clone());
        for step in 0..t {
            let (mut nh, mut nc) = (hs.clone(), cs.clone());
            for bn in 0..n {
                let xs = at(&x, step, bn);
                let hp = hs.row(bn).to_vec();
                for u in 0..h {
                    let gi = sigmoid(gate(&w, &r, &b, 4, 0, u, &xs, &hp));
                    let gf = sigmoid(gate(&w, &r, &b, 4, 1, u, &xs, &hp));
                    let gg = gate(&w, &r, &b, 4, 2, u, &xs, &hp).tanh();
                    let go = sigmoid(gate(&w, &r, &b, 4, 3, u, &xs, &hp));
                    nc[[bn, u]] = gf * cs[[bn, u]] + gi * gg;
                    nh[[bn, u]] = go * cl(nc[[bn, u]]).tanh();
                }
            }
            hs = nh;
            cs = nc;
            assert_abs_diff_eq!(y.index_axis(Axis(0), step).mapv(|v| v as f64), hs, epsilon = 1e-5);
        }
        assert_abs_diff_eq!(yh.mapv(|v| v as f64), hs, epsilon = 1e-5);
        assert_abs_diff_eq!(yc.mapv(|v| v as f64), cs.mapv(cl), epsilon = 1e-5);
    }
}

#[test]
fn gru_matches_a_loop() {
    let (t, n, i, h) = (6, 3, 2, 4);
    let (x, w, r, b, h0) = layer(t, n, i, h, 3, 1.1);
    let (y, yh) = run_gru(&x, &w, &r, &b, &h0).unwrap();
    let mut hs = h0.clone();
    for step in 0..t {
        let mut nh = hs.clone();
        for bn in 0..n {
            let xs = at(&x, step, bn);
            let hp = hs.row(bn).to_vec();
            let reset: Vec<f64> = (0..h).map(|k| sigmoid(gate(&w, &r, &b, 3, 0, k, &xs, &hp)) * hp[k]).collect();
            for u in 0..h {
                let z = sigmoid(gate(&w, &r, &b, 3, 1, u, &xs, &hp));
                // The candidate reads r * h[t - 1] through R's third block.
                let cand = gate(&w, &r, &b, 3, 2, u, &xs, &reset).tanh();
                nh[[bn, u]] = (1.0 - z) * hp[u] + z * cand;
            }
        }
        hs = nh;
        assert_abs_diff_eq!(y.index_axis(Axis(0), step), hs.view(), epsilon = 1e-12);
    }
    assert_abs_diff_eq!(yh, hs, epsilon = 1e-12);
}
