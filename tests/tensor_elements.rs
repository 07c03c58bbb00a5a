//! Indexed definitions whose element is a tensor (LANGUAGE.md §3: `let
//! rows[i] = [x[i], y[i]];` has shape `[N, 2]`; `let h[t in 1..T] =
//! step(h[t - 1], x[t]);` a state vector per step): array literals, calls,
//! reads of rows and elementwise expressions of them, in plain definitions
//! and in recurrences, and derivatives through them. Compared with naive
//! loops.

use einlang::einlang;
use einlang::ndarray::{array, Array1, Array2, Axis};

einlang! {
    pub fn rows(x: [f32; N], y: [f32; N]) -> [f32; N, 2] {
        let r[i] = [x[i], y[i]];
        r
    }

    /// Nested literals add one axis per level; where-bindings are shared.
    pub fn blocks(x: [f64; N]) -> [f64; N, 2, 2] {
        let b[i] = [[v, 0.0], [1.0, -v]] where v = x[i] * 2.0;
        b
    }

    /// A literal element after written axes, and a guard.
    pub fn pairs(m: [i32; R, C]) -> [i32; R, C, 2] {
        let p[i, j] = [m[i, j], i as i32 * 10 + j as i32] where m[i, j] > 0;
        p
    }

    /// A rotation applied `steps - 1` times to a point: the state of the
    /// recurrence is a vector of two.
    pub fn orbit(steps: i64, c: f64, s: f64) -> [f64; steps, 2] {
        let p[0] = [1.0, 0.0];
        let p[t in 1..steps] = [c * p[t - 1, 0] - s * p[t - 1, 1], s * p[t - 1, 0] + c * p[t - 1, 1]];
        p
    }
}

einlang! {
    use std::math::{exp, tanh};

    /// One step of a tanh RNN on a state vector.
    fn step(w: [f64; H, H], h: [f64; H], x: [f64; H]) -> [f64; H] {
        let z[j] = tanh(sum[k](w[j, k] * h[k]) + x[j]);
        z
    }

    /// The state at every step: the element of `h` is the state vector.
    pub fn rnn(h0: [f64; H], w: [f64; H, H], x: [f64; T, H]) -> [f64; T, H] {
        let h[0] = h0;
        let h[t in 1..T] = step(w, h[t - 1], x[t]);
        h
    }

    /// Its gradient: the loss reads every state.
    pub fn rnn_grad(h0: [f64; H], w: [f64; H, H], x: [f64; T, H]) -> ([f64; H, H], [f64; H]) {
        let h[0] = h0;
        let h[t in 1..T] = step(w, h[t - 1], x[t]);
        let l = sum[t, j](h[t, j] * h[t, j]);
        (@l / @w, @l / @h0)
    }

    fn softmax_row(v) {
        let m = max[k](v[k]);
        let e[k] = exp(v[k] - m);
        let s = sum[k](e[k]);
        let y[k] = e[k] / s;
        y
    }

    /// A function of a row applied to every row, inside an elementwise
    /// expression with a read of another row.
    pub fn rows_softmax(x: [f64; N, C], b: [f64; N, C]) -> [f64; N, C] {
        let y[n] = softmax_row(x[n]) * 2.0 + b[n];
        y
    }

    /// A value that is not written out at a point (a tensor `let` in the
    /// callee): computed whole at each row and read there.
    fn shifted(v) {
        let m = max[k](v[k]);
        let d = v - m;
        d
    }
    pub fn rows_shifted(x: [f64; N, C]) -> [f64; N, C] {
        let y[n] = shifted(x[n]);
        y
    }
}

fn rand(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        })
        .collect()
}

/// The RNN's states by plain loops, and the loss sum of their squares.
fn rnn_loop(h0: &Array1<f64>, w: &Array2<f64>, x: &Array2<f64>) -> (Array2<f64>, f64) {
    let (t_len, h_len) = x.dim();
    let mut h = Array2::zeros((t_len, h_len));
    h.row_mut(0).assign(h0);
    for t in 1..t_len {
        for j in 0..h_len {
            let mut a = x[[t, j]];
            for k in 0..h_len {
                a += w[[j, k]] * h[[t - 1, k]];
            }
            h[[t, j]] = a.tanh();
        }
    }
    let l = h.iter().map(|v| v * v).sum();
    (h, l)
}

#[test]
fn a_step_function_defines_the_state_vector() {
    let (t_len, h_len) = (6, 4);
    let h0 = Array1::from_vec(rand(h_len, 1));
    let w = Array2::from_shape_vec((h_len, h_len), rand(h_len * h_len, 2)).unwrap().mapv(|v| v * 0.7);
    let x = Array2::from_shape_vec((t_len, h_len), rand(t_len * h_len, 3)).unwrap();
    let got = rnn(&h0, &w, &x).unwrap();
    let (want, _) = rnn_loop(&h0, &w, &x);
    assert!((&got - &want).iter().all(|d| d.abs() < 1e-12), "{got}\n{want}");

    // The gradient against central finite differences of the loop.
    let (gw, gh0) = rnn_grad(&h0, &w, &x).unwrap();
    let eps = 1e-6;
    for j in 0..h_len {
        for k in 0..h_len {
            let (mut up, mut down) = (w.clone(), w.clone());
            up[[j, k]] += eps;
            down[[j, k]] -= eps;
            let fd = (rnn_loop(&h0, &up, &x).1 - rnn_loop(&h0, &down, &x).1) / (2.0 * eps);
            assert!((gw[[j, k]] - fd).abs() < 1e-6 * (1.0 + fd.abs()), "d/dw[{j}, {k}]: {} vs {fd}", gw[[j, k]]);
        }
        let (mut up, mut down) = (h0.clone(), h0.clone());
        up[j] += eps;
        down[j] -= eps;
        let fd = (rnn_loop(&up, &w, &x).1 - rnn_loop(&down, &w, &x).1) / (2.0 * eps);
        assert!((gh0[j] - fd).abs() < 1e-6 * (1.0 + fd.abs()), "d/dh0[{j}]: {} vs {fd}", gh0[j]);
    }
}

#[test]
fn a_row_function_applies_to_every_row() {
    let (n, c) = (3, 5);
    let x = Array2::from_shape_vec((n, c), rand(n * c, 4)).unwrap().mapv(|v| v * 3.0);
    let b = Array2::from_shape_vec((n, c), rand(n * c, 5)).unwrap();
    let got = rows_softmax(&x, &b).unwrap();
    for (i, row) in x.axis_iter(Axis(0)).enumerate() {
        let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let s: f64 = row.iter().map(|v| (v - m).exp()).sum();
        for k in 0..c {
            let want = 2.0 * (row[k] - m).exp() / s + b[[i, k]];
            assert!((got[[i, k]] - want).abs() < 1e-12, "[{i}, {k}]: {} vs {want}", got[[i, k]]);
        }
    }
    let got = rows_shifted(&x).unwrap();
    for (i, row) in x.axis_iter(Axis(0)).enumerate() {
        let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        for k in 0..c {
            assert_eq!(got[[i, k]], row[k] - m, "[{i}, {k}]");
        }
    }
}

#[test]
fn literal_elements_add_axes() {
    let x = array![1.0f32, 2.0, 3.0];
    let y = array![-1.0f32, 0.5, 4.0];
    let got = rows(&x, &y).unwrap();
    assert_eq!(got, Array2::from_shape_fn((3, 2), |(i, k)| if k == 0 { x[i] } else { y[i] }));

    let v = Array1::from_vec(vec![0.5f64, -1.5]);
    let b = blocks(&v).unwrap();
    for i in 0..2 {
        let w = v[i] * 2.0;
        assert_eq!(b.slice(einlang::ndarray::s![i, .., ..]), array![[w, 0.0], [1.0, -w]]);
    }

    let m = array![[3, -1], [0, 7]];
    let p = pairs(&m).unwrap();
    for i in 0..2 {
        for j in 0..2 {
            let want = if m[[i, j]] > 0 { [m[[i, j]], (i * 10 + j) as i32] } else { [0, 0] };
            assert_eq!([p[[i, j, 0]], p[[i, j, 1]]], want);
        }
    }
}

#[test]
fn vector_state_recurrence() {
    let (c, s) = (0.6f64, 0.8f64);
    let got = orbit(5, c, s).unwrap();
    let (mut a, mut b) = (1.0f64, 0.0f64);
    for t in 0..5 {
        if t > 0 {
            let (na, nb) = (c * a - s * b, s * a + c * b);
            a = na;
            b = nb;
        }
        assert!((got[[t, 0]] - a).abs() < 1e-12 && (got[[t, 1]] - b).abs() < 1e-12, "step {t}");
    }
}
