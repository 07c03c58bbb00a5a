//! `std::ml::{rnn, lstm, gru}` against naive step-by-step loops written
//! here from the formulas (each output step consuming its own input step),
//! in both directions: forward (0) and ONNX's reverse (1), where the steps
//! are consumed from the last to the first and Y[t] is the state after
//! x[t]. The seed's layouts (no direction axis) are checked against loops
//! in the seed's gate order and formulas (lstm i f g o, gru r z n with h =
//! (1 - z) h[t - 1] + z n). ONNX's layouts (a direction axis D on the
//! weights, initial states and results) are checked, per direction on that
//! direction's weights, against loops written from ONNX's operator
//! definitions (opset 14, layout 0, default activations: lstm i o f c, gru
//! z r h with h = (1 - z) h~ + z h[t - 1]): D = 1 forward or reverse, and
//! D = 2 bidirectional (direction 0 of the axis forward, 1 reverse).

use approx::assert_abs_diff_eq;
use einlang::einlang;
use einlang::ndarray::{stack, Array1, Array2, Array3, Array4, Axis};
use einlang::Error;

einlang! {
    use std::ml::recurrent_ops::{rnn, lstm, gru};

    pub fn run_rnn(x: [f64; T, N, I], w: [f64; H, I], r: [f64; H, H], b: [f64; B2], h0: [f64; N, H], act: str, dir: i64)
        -> ([f64; T, N, H], [f64; N, H]) {
        rnn(x, w, r, b, h0, shape(r)[1], dir, act)
    }

    pub fn run_rnn32(x: [f32; T, N, I], w: [f32; H, I], r: [f32; H, H], b: [f32; B2], h0: [f32; N, H], act: str, dir: i32)
        -> ([f32; T, N, H], [f32; N, H]) {
        std::ml::rnn(x, w, r, b, h0, shape(r)[1], dir, act)
    }

    /// The seed's way of writing a direction: a literal.
    pub fn rnn_reverse(x: [f64; T, N, I], w: [f64; H, I], r: [f64; H, H], b: [f64; B2], h0: [f64; N, H])
        -> ([f64; T, N, H], [f64; N, H]) {
        rnn(x, w, r, b, h0, shape(r)[1], 1, "Tanh")
    }

    pub fn rnn_bidirectional(x: [f64; T, N, I], w: [f64; H, I], r: [f64; H, H], b: [f64; B2], h0: [f64; N, H])
        -> ([f64; T, N, H], [f64; N, H]) {
        rnn(x, w, r, b, h0, shape(r)[1], 2, "Tanh")
    }

    pub fn run_lstm(x: [f32; T, N, I], w: [f32; G, I], r: [f32; G, H], b: [f32; B8], h0: [f32; N, H], c0: [f32; N, H], clip: f32, dir: i64)
        -> ([f32; T, N, H], [f32; N, H], [f32; N, H]) {
        lstm(x, w, r, b, h0, c0, shape(r)[1], dir, clip)
    }

    pub fn run_lstm64(x: [f64; T, N, I], w: [f64; G, I], r: [f64; G, H], b: [f64; B8], h0: [f64; N, H], c0: [f64; N, H], clip: f64, dir: i32)
        -> ([f64; T, N, H], [f64; N, H], [f64; N, H]) {
        lstm(x, w, r, b, h0, c0, shape(r)[1], dir, clip)
    }

    pub fn run_gru(x: [f64; T, N, I], w: [f64; G, I], r: [f64; G, H], b: [f64; B6], h0: [f64; N, H], dir: i64)
        -> ([f64; T, N, H], [f64; N, H]) {
        gru(x, w, r, b, h0, shape(r)[1], dir, 0)
    }

    pub fn run_gru32(x: [f32; T, N, I], w: [f32; G, I], r: [f32; G, H], b: [f32; B6], h0: [f32; N, H], dir: i32)
        -> ([f32; T, N, H], [f32; N, H]) {
        gru(x, w, r, b, h0, shape(r)[1], dir, 0)
    }

    // ONNX's layouts: a direction axis D first on the weights and initial
    // states, second on Y.
    pub fn onnx_rnn(x: [f64; T, N, I], w: [f64; D, H, I], r: [f64; D, H, H], b: [f64; D, B2], h0: [f64; D, N, H], act: str, dir: i64)
        -> ([f64; T, D, N, H], [f64; D, N, H]) {
        rnn(x, w, r, b, h0, shape(r)[2], dir, act)
    }

    pub fn onnx_rnn32(x: [f32; T, N, I], w: [f32; D, H, I], r: [f32; D, H, H], b: [f32; D, B2], h0: [f32; D, N, H], act: str, dir: i32)
        -> ([f32; T, D, N, H], [f32; D, N, H]) {
        std::ml::rnn(x, w, r, b, h0, shape(r)[2], dir, act)
    }

    /// A literal direction, as an ONNX model's attribute would be.
    pub fn onnx_rnn_bidirectional(x: [f64; T, N, I], w: [f64; D, H, I], r: [f64; D, H, H], b: [f64; D, B2], h0: [f64; D, N, H])
        -> ([f64; T, D, N, H], [f64; D, N, H]) {
        rnn(x, w, r, b, h0, shape(r)[2], 2, "Tanh")
    }

    /// R, B and initial_h with their own direction extents, for the
    /// library's shape check.
    pub fn onnx_rnn_any_d(x: [f64; T, N, I], w: [f64; D, H, I], r: [f64; DR, H, H], b: [f64; DB, B2], h0: [f64; DH, N, H], dir: i64)
        -> ([f64; T, D, N, H], [f64; D, N, H]) {
        rnn(x, w, r, b, h0, shape(r)[2], dir, "Tanh")
    }

    pub fn onnx_lstm(x: [f32; T, N, I], w: [f32; D, G, I], r: [f32; D, G, H], b: [f32; D, B8], h0: [f32; D, N, H], c0: [f32; D, N, H], clip: f32, dir: i64)
        -> ([f32; T, D, N, H], [f32; D, N, H], [f32; D, N, H]) {
        lstm(x, w, r, b, h0, c0, shape(r)[2], dir, clip)
    }

    pub fn onnx_lstm64(x: [f64; T, N, I], w: [f64; D, G, I], r: [f64; D, G, H], b: [f64; D, B8], h0: [f64; D, N, H], c0: [f64; D, N, H], clip: f64, dir: i32)
        -> ([f64; T, D, N, H], [f64; D, N, H], [f64; D, N, H]) {
        lstm(x, w, r, b, h0, c0, shape(r)[2], dir, clip)
    }

    pub fn onnx_gru(x: [f64; T, N, I], w: [f64; D, G, I], r: [f64; D, G, H], b: [f64; D, B6], h0: [f64; D, N, H], dir: i64)
        -> ([f64; T, D, N, H], [f64; D, N, H]) {
        gru(x, w, r, b, h0, shape(r)[2], dir, 0)
    }

    pub fn onnx_gru32(x: [f32; T, N, I], w: [f32; D, G, I], r: [f32; D, G, H], b: [f32; D, B6], h0: [f32; D, N, H], dir: i32)
        -> ([f32; T, D, N, H], [f32; D, N, H]) {
        gru(x, w, r, b, h0, shape(r)[2], dir, 0)
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
fn f32s<D: einlang::ndarray::Dimension>(a: &einlang::ndarray::Array<f64, D>) -> einlang::ndarray::Array<f32, D> {
    a.mapv(|v| v as f32)
}
fn f64s<D: einlang::ndarray::Dimension>(a: &einlang::ndarray::Array<f32, D>) -> einlang::ndarray::Array<f64, D> {
    a.mapv(f64::from)
}

/// Input [t, n, i], W [g h, i], R [g h, h], B [2 g h] and initial state
/// [n, h] for a layer of `g` gate blocks.
struct Layer {
    x: Array3<f64>,
    w: Array2<f64>,
    r: Array2<f64>,
    b: Array1<f64>,
    h0: Array2<f64>,
}

fn layer(t: usize, n: usize, i: usize, h: usize, g: usize, seed: f64) -> Layer {
    Layer {
        x: fill3((t, n, i), seed),
        w: fill2((g * h, i), seed + 0.1),
        r: fill2((g * h, h), seed + 0.2) * 0.5,
        b: fill1(2 * g * h, seed + 0.3),
        h0: fill2((n, h), seed + 0.4) * 0.5,
    }
}

/// One layer per direction over the input of the first (so the directions
/// differ only in their weights and initial states), each with its own
/// seed.
fn directions(t: usize, n: usize, i: usize, h: usize, g: usize, seeds: &[f64]) -> Vec<Layer> {
    let first = layer(t, n, i, h, g, seeds[0]);
    let mut ls: Vec<Layer> =
        seeds[1..].iter().map(|&s| Layer { x: first.x.clone(), ..layer(t, n, i, h, g, s) }).collect();
    ls.insert(0, first);
    ls
}

/// ONNX's layouts of `ls` (one layer per direction): W [D, gh, i], R [D,
/// gh, h], B [D, 2gh] and initial_h [D, n, h].
struct Onnx {
    w: Array3<f64>,
    r: Array3<f64>,
    b: Array2<f64>,
    h0: Array3<f64>,
}

fn onnx(ls: &[Layer]) -> Onnx {
    let ws: Vec<_> = ls.iter().map(|l| l.w.view()).collect();
    let rs: Vec<_> = ls.iter().map(|l| l.r.view()).collect();
    let bs: Vec<_> = ls.iter().map(|l| l.b.view()).collect();
    let hs: Vec<_> = ls.iter().map(|l| l.h0.view()).collect();
    Onnx {
        w: stack(Axis(0), &ws).unwrap(),
        r: stack(Axis(0), &rs).unwrap(),
        b: stack(Axis(0), &bs).unwrap(),
        h0: stack(Axis(0), &hs).unwrap(),
    }
}

/// Per-direction states [n, h] stacked to [D, n, h].
fn stack_states(s: &[Array2<f64>]) -> Array3<f64> {
    stack(Axis(0), &s.iter().map(|a| a.view()).collect::<Vec<_>>()).unwrap()
}

/// Per-direction Y [t, n, h] stacked to ONNX's [t, D, n, h].
fn stack_ys(s: &[Array3<f64>]) -> Array4<f64> {
    stack(Axis(1), &s.iter().map(|a| a.view()).collect::<Vec<_>>()).unwrap()
}

/// The reversal flag of each direction of an ONNX layer: D = 1 with
/// `direction` 0 or 1, D = 2 (bidirectional) forward then reverse.
fn reversals(direction: i64) -> Vec<bool> {
    match direction {
        0 => vec![false],
        1 => vec![true],
        _ => vec![false, true],
    }
}

/// The seeds of one layer per direction of `direction`.
fn seeds(direction: i64, base: f64) -> Vec<f64> {
    (0..reversals(direction).len()).map(|d| base + 2.3 * d as f64).collect()
}

impl Layer {
    /// The steps in the order the layer consumes them.
    fn steps(&self, reverse: bool) -> Vec<usize> {
        let t = self.x.dim().0;
        if reverse {
            (0..t).rev().collect()
        } else {
            (0..t).collect()
        }
    }

    /// Row `bn` of step `step` of the input.
    fn input(&self, step: usize, bn: usize) -> Vec<f64> {
        self.x.index_axis(Axis(0), step).row(bn).to_vec()
    }

    /// Gate `g` (a block of rows of W / R, of `blocks`) of unit `h` at
    /// input `x` and state `hp`, with both biases.
    fn gate(&self, blocks: usize, g: usize, h: usize, x: &[f64], hp: &[f64]) -> f64 {
        let hs = self.r.ncols();
        let row = g * hs + h;
        let mut z = self.b[row] + self.b[row + blocks * hs];
        for (i, xi) in x.iter().enumerate() {
            z += self.w[[row, i]] * xi;
        }
        for (k, hk) in hp.iter().enumerate() {
            z += self.r[[row, k]] * hk;
        }
        z
    }
}

fn sigmoid(z: f64) -> f64 {
    1.0 / (1.0 + (-z).exp())
}

/// The reference RNN: (Y [t, n, h], Y_h [n, h]).
fn rnn_ref(l: &Layer, f: fn(f64) -> f64, reverse: bool) -> (Array3<f64>, Array2<f64>) {
    let (t, n, _) = l.x.dim();
    let h = l.r.ncols();
    let mut y = Array3::zeros((t, n, h));
    let mut state = l.h0.clone();
    for step in l.steps(reverse) {
        let mut next = state.clone();
        for bn in 0..n {
            let (xs, hp) = (l.input(step, bn), state.row(bn).to_vec());
            for u in 0..h {
                next[[bn, u]] = f(l.gate(1, 0, u, &xs, &hp));
            }
        }
        state = next;
        y.index_axis_mut(Axis(0), step).assign(&state);
    }
    (y, state)
}

/// The reference LSTM: (Y, Y_h, Y_c), the cell clipped where it is read.
fn lstm_ref(l: &Layer, c0: &Array2<f64>, clip: f64, reverse: bool) -> (Array3<f64>, Array2<f64>, Array2<f64>) {
    lstm_loop(l, c0, clip, reverse, [0, 1, 2, 3])
}

/// The LSTM step by step, with the blocks of W, R and each half of B for
/// the gates i, f, g (the cell candidate) and o at `blocks`.
fn lstm_loop(
    l: &Layer,
    c0: &Array2<f64>,
    clip: f64,
    reverse: bool,
    blocks: [usize; 4],
) -> (Array3<f64>, Array2<f64>, Array2<f64>) {
    let (t, n, _) = l.x.dim();
    let h = l.r.ncols();
    let cl = |c: f64| if clip > 0.0 { c.clamp(-clip, clip) } else { c };
    let mut y = Array3::zeros((t, n, h));
    let (mut hs, mut cs) = (l.h0.clone(), c0.clone());
    for step in l.steps(reverse) {
        let (mut nh, mut nc) = (hs.clone(), cs.clone());
        for bn in 0..n {
            let (xs, hp) = (l.input(step, bn), hs.row(bn).to_vec());
            for u in 0..h {
                let gi = sigmoid(l.gate(4, blocks[0], u, &xs, &hp));
                let gf = sigmoid(l.gate(4, blocks[1], u, &xs, &hp));
                let gg = l.gate(4, blocks[2], u, &xs, &hp).tanh();
                let go = sigmoid(l.gate(4, blocks[3], u, &xs, &hp));
                nc[[bn, u]] = gf * cs[[bn, u]] + gi * gg;
                nh[[bn, u]] = go * cl(nc[[bn, u]]).tanh();
            }
        }
        hs = nh;
        cs = nc;
        y.index_axis_mut(Axis(0), step).assign(&hs);
    }
    (y, hs, cs.mapv(cl))
}

/// The reference GRU: (Y, Y_h), the seed's formulas (blocks r, z, n and
/// h = (1 - z) h[t - 1] + z n).
fn gru_ref(l: &Layer, reverse: bool) -> (Array3<f64>, Array2<f64>) {
    gru_loop(l, reverse, [0, 1, 2], false)
}

/// The GRU step by step, with the blocks of W, R and each half of B for r,
/// z and the candidate at `blocks`. The candidate reads r * h[t - 1]
/// through R's candidate block. `z_keeps_state`: ONNX's h = (1 - z) n + z
/// h[t - 1], else the seed's h = (1 - z) h[t - 1] + z n.
fn gru_loop(l: &Layer, reverse: bool, blocks: [usize; 3], z_keeps_state: bool) -> (Array3<f64>, Array2<f64>) {
    let (t, n, _) = l.x.dim();
    let h = l.r.ncols();
    let mut y = Array3::zeros((t, n, h));
    let mut hs = l.h0.clone();
    for step in l.steps(reverse) {
        let mut nh = hs.clone();
        for bn in 0..n {
            let (xs, hp) = (l.input(step, bn), hs.row(bn).to_vec());
            let reset: Vec<f64> = (0..h).map(|k| sigmoid(l.gate(3, blocks[0], k, &xs, &hp)) * hp[k]).collect();
            for u in 0..h {
                let z = sigmoid(l.gate(3, blocks[1], u, &xs, &hp));
                let cand = l.gate(3, blocks[2], u, &xs, &reset).tanh();
                nh[[bn, u]] = if z_keeps_state { (1.0 - z) * cand + z * hp[u] } else { (1.0 - z) * hp[u] + z * cand };
            }
        }
        hs = nh;
        y.index_axis_mut(Axis(0), step).assign(&hs);
    }
    (y, hs)
}

/// ONNX's LSTM (blocks of W, R and each half of B in the order i, o, f,
/// c): it = σ(Xt Wi^T + Ht-1 Ri^T + Wbi + Rbi), ot, ft likewise, ct~ =
/// tanh(..c..), Ct = ft Ct-1 + it ct~, Ht = ot tanh(Ct). `clip` > 0 is the
/// library's (the seed's) cell clipping, as `lstm_ref` does it.
fn lstm_onnx_ref(l: &Layer, c0: &Array2<f64>, clip: f64, reverse: bool) -> (Array3<f64>, Array2<f64>, Array2<f64>) {
    // i is block 0, f block 2, c block 3, o block 1.
    lstm_loop(l, c0, clip, reverse, [0, 2, 3, 1])
}

/// ONNX's GRU, linear_before_reset = 0 (blocks z, r, h): zt = σ(Xt Wz^T +
/// Ht-1 Rz^T + Wbz + Rbz), rt likewise, ht~ = tanh(Xt Wh^T + (rt ⊙ Ht-1)
/// Rh^T + Rbh + Wbh), Ht = (1 - zt) ⊙ ht~ + zt ⊙ Ht-1.
fn gru_onnx_ref(l: &Layer, reverse: bool) -> (Array3<f64>, Array2<f64>) {
    // r is block 1, z block 0, h block 2.
    gru_loop(l, reverse, [1, 0, 2], true)
}

const ACTIVATIONS: [(&str, fn(f64) -> f64); 3] = [("Tanh", f64::tanh), ("Sigmoid", sigmoid), ("Relu", |z| z.max(0.0))];

#[test]
fn rnn_matches_a_loop_for_each_activation_and_direction() {
    let l = layer(5, 2, 3, 4, 1, 0.1);
    for (name, f) in ACTIVATIONS {
        for dir in [0, 1] {
            let (want_y, want_h) = rnn_ref(&l, f, dir == 1);
            let (y, yh) = run_rnn(&l.x, &l.w, &l.r, &l.b, &l.h0, name, dir).unwrap();
            assert_abs_diff_eq!(y, want_y, epsilon = 1e-12);
            assert_abs_diff_eq!(yh, want_h, epsilon = 1e-12);
            let (y, yh) =
                run_rnn32(&f32s(&l.x), &f32s(&l.w), &f32s(&l.r), &f32s(&l.b), &f32s(&l.h0), name, dir as i32).unwrap();
            assert_abs_diff_eq!(f64s(&y), want_y, epsilon = 1e-5);
            assert_abs_diff_eq!(f64s(&yh), want_h, epsilon = 1e-5);
        }
    }
    let (y, yh) = rnn_reverse(&l.x, &l.w, &l.r, &l.b, &l.h0).unwrap();
    let (want_y, want_h) = rnn_ref(&l, f64::tanh, true);
    assert_abs_diff_eq!(y, want_y, epsilon = 1e-12);
    assert_abs_diff_eq!(yh, want_h, epsilon = 1e-12);
}

/// The reverse direction is not the forward one: the reference itself
/// tells them apart on this data (so the comparisons above can fail), and
/// the final state of the reverse pass is Y[0], not Y[T - 1].
#[test]
fn reverse_is_the_other_order() {
    let l = layer(4, 2, 3, 3, 1, 0.5);
    let (fy, fh) = rnn_ref(&l, f64::tanh, false);
    let (ry, rh) = rnn_ref(&l, f64::tanh, true);
    assert!((&fy - &ry).iter().any(|d| d.abs() > 1e-3));
    assert!((&fh - &rh).iter().any(|d| d.abs() > 1e-3));
    let (y, yh) = run_rnn(&l.x, &l.w, &l.r, &l.b, &l.h0, "Tanh", 1).unwrap();
    assert_abs_diff_eq!(y.index_axis(Axis(0), 0), yh.view(), epsilon = 1e-15);
    assert!((&y.index_axis(Axis(0), 3) - &yh).iter().any(|d| d.abs() > 1e-3));
    // One step: both directions agree.
    let one = layer(1, 2, 3, 3, 1, 0.9);
    let f = run_rnn(&one.x, &one.w, &one.r, &one.b, &one.h0, "Tanh", 0).unwrap();
    let r = run_rnn(&one.x, &one.w, &one.r, &one.b, &one.h0, "Tanh", 1).unwrap();
    assert_abs_diff_eq!(f.0, r.0, epsilon = 1e-15);
}

#[test]
fn rnn_rejects_bidirectional_and_other_shapes() {
    let x = fill3((3, 1, 2), 0.0);
    let (w, r, b, h0) = (fill2((2, 2), 0.0), fill2((2, 2), 1.0), fill1(4, 0.0), fill2((1, 2), 0.0));
    assert!(matches!(rnn_bidirectional(&x, &w, &r, &b, &h0), Err(Error::Assert { .. })));
    for dir in [2, -1, 3] {
        assert!(matches!(run_rnn(&x, &w, &r, &b, &h0, "Tanh", dir), Err(Error::Assert { .. })));
    }
    // A bias of the wrong length.
    assert!(run_rnn(&x, &w, &r, &fill1(3, 0.0), &h0, "Tanh", 0).is_err());
    assert!(run_rnn(&x, &w, &r, &fill1(3, 0.0), &h0, "Tanh", 1).is_err());
}

#[test]
fn lstm_matches_a_loop_with_and_without_clipping_in_both_directions() {
    let (n, h) = (2, 3);
    let l = layer(4, n, 3, h, 4, 0.7);
    let c0 = fill2((n, h), 1.3) * 2.0;
    for clip in [0.0f64, 0.5] {
        for dir in [0, 1] {
            let (want_y, want_h, want_c) = lstm_ref(&l, &c0, clip, dir == 1);
            let (y, yh, yc) = run_lstm(
                &f32s(&l.x),
                &f32s(&l.w),
                &f32s(&l.r),
                &f32s(&l.b),
                &f32s(&l.h0),
                &f32s(&c0),
                clip as f32,
                dir,
            )
            .unwrap();
            assert_abs_diff_eq!(f64s(&y), want_y, epsilon = 1e-5);
            assert_abs_diff_eq!(f64s(&yh), want_h, epsilon = 1e-5);
            assert_abs_diff_eq!(f64s(&yc), want_c, epsilon = 1e-5);
            let (y, yh, yc) = run_lstm64(&l.x, &l.w, &l.r, &l.b, &l.h0, &c0, clip, dir as i32).unwrap();
            assert_abs_diff_eq!(y, want_y, epsilon = 1e-12);
            assert_abs_diff_eq!(yh, want_h, epsilon = 1e-12);
            assert_abs_diff_eq!(yc, want_c, epsilon = 1e-12);
        }
    }
    let (y, ..) = lstm_ref(&l, &c0, 0.0, false);
    let (ry, ..) = lstm_ref(&l, &c0, 0.0, true);
    assert!((&y - &ry).iter().any(|d| d.abs() > 1e-3));
    assert!(matches!(run_lstm64(&l.x, &l.w, &l.r, &l.b, &l.h0, &c0, 0.0, 2), Err(Error::Assert { .. })));
}

#[test]
fn gru_matches_a_loop_in_both_directions() {
    let l = layer(6, 3, 2, 4, 3, 1.1);
    for dir in [0, 1] {
        let (want_y, want_h) = gru_ref(&l, dir == 1);
        let (y, yh) = run_gru(&l.x, &l.w, &l.r, &l.b, &l.h0, dir).unwrap();
        assert_abs_diff_eq!(y, want_y, epsilon = 1e-12);
        assert_abs_diff_eq!(yh, want_h, epsilon = 1e-12);
        let (y, yh) = run_gru32(&f32s(&l.x), &f32s(&l.w), &f32s(&l.r), &f32s(&l.b), &f32s(&l.h0), dir as i32).unwrap();
        assert_abs_diff_eq!(f64s(&y), want_y, epsilon = 1e-5);
        assert_abs_diff_eq!(f64s(&yh), want_h, epsilon = 1e-5);
    }
    let (y, _) = gru_ref(&l, false);
    let (ry, _) = gru_ref(&l, true);
    assert!((&y - &ry).iter().any(|d| d.abs() > 1e-3));
    assert!(matches!(run_gru(&l.x, &l.w, &l.r, &l.b, &l.h0, 2), Err(Error::Assert { .. })));
}

#[test]
fn onnx_rnn_matches_the_loop_per_direction() {
    for dir in [0i64, 1, 2] {
        let ls = directions(5, 2, 3, 4, 1, &seeds(dir, 0.3));
        let o = onnx(&ls);
        let x = &ls[0].x;
        for (name, f) in ACTIVATIONS {
            let refs: Vec<_> = ls.iter().zip(reversals(dir)).map(|(l, rev)| rnn_ref(l, f, rev)).collect();
            let want_y = stack_ys(&refs.iter().map(|r| r.0.clone()).collect::<Vec<_>>());
            let want_h = stack_states(&refs.iter().map(|r| r.1.clone()).collect::<Vec<_>>());
            let (y, yh) = onnx_rnn(x, &o.w, &o.r, &o.b, &o.h0, name, dir).unwrap();
            assert_abs_diff_eq!(y, want_y, epsilon = 1e-12);
            assert_abs_diff_eq!(yh, want_h, epsilon = 1e-12);
            let (y, yh) =
                onnx_rnn32(&f32s(x), &f32s(&o.w), &f32s(&o.r), &f32s(&o.b), &f32s(&o.h0), name, dir as i32).unwrap();
            assert_abs_diff_eq!(f64s(&y), want_y, epsilon = 1e-5);
            assert_abs_diff_eq!(f64s(&yh), want_h, epsilon = 1e-5);
        }
        if dir == 2 {
            let (fwd, rev) = (rnn_ref(&ls[0], f64::tanh, false), rnn_ref(&ls[1], f64::tanh, true));
            let (y, yh) = onnx_rnn_bidirectional(x, &o.w, &o.r, &o.b, &o.h0).unwrap();
            assert_abs_diff_eq!(y, stack_ys(&[fwd.0.clone(), rev.0.clone()]), epsilon = 1e-12);
            assert_abs_diff_eq!(yh, stack_states(&[fwd.1.clone(), rev.1.clone()]), epsilon = 1e-12);
            // The references tell the directions apart, so the comparisons
            // above fail if the library swaps the directions' weights, or
            // runs direction 1 forward.
            let (fwd_swapped, rev_swapped) = (rnn_ref(&ls[1], f64::tanh, false), rnn_ref(&ls[0], f64::tanh, true));
            assert!((&fwd.0 - &fwd_swapped.0).iter().any(|d| d.abs() > 1e-3));
            assert!((&rev.0 - &rev_swapped.0).iter().any(|d| d.abs() > 1e-3));
            assert!((&rev.0 - &fwd_swapped.0).iter().any(|d| d.abs() > 1e-3));
            // The reverse direction's final state is its Y at step 0, in the
            // input's time order.
            assert_abs_diff_eq!(
                y.slice(einlang::ndarray::s![0, 1, .., ..]),
                yh.index_axis(Axis(0), 1),
                epsilon = 1e-15
            );
            assert_abs_diff_eq!(
                y.slice(einlang::ndarray::s![4, 0, .., ..]),
                yh.index_axis(Axis(0), 0),
                epsilon = 1e-15
            );
        }
    }
}

#[test]
fn onnx_lstm_matches_the_loop_per_direction() {
    let (n, h) = (2, 3);
    for dir in [0i64, 1, 2] {
        let ls = directions(4, n, 3, h, 4, &seeds(dir, 0.7));
        let o = onnx(&ls);
        let c0s: Vec<Array2<f64>> = (0..ls.len()).map(|d| fill2((n, h), 1.3 + d as f64) * 2.0).collect();
        let c0 = stack_states(&c0s);
        let x = &ls[0].x;
        for clip in [0.0f64, 0.5] {
            let refs: Vec<_> =
                ls.iter().zip(&c0s).zip(reversals(dir)).map(|((l, c), rev)| lstm_onnx_ref(l, c, clip, rev)).collect();
            // The seed's gate order gives other values on these weights, so
            // the comparisons below tell the orders apart.
            let (seed_y, ..) = lstm_ref(&ls[0], &c0s[0], clip, reversals(dir)[0]);
            assert!((&seed_y - &refs[0].0).iter().any(|d| d.abs() > 1e-3));
            let want_y = stack_ys(&refs.iter().map(|r| r.0.clone()).collect::<Vec<_>>());
            let want_h = stack_states(&refs.iter().map(|r| r.1.clone()).collect::<Vec<_>>());
            let want_c = stack_states(&refs.iter().map(|r| r.2.clone()).collect::<Vec<_>>());
            let (y, yh, yc) =
                onnx_lstm(&f32s(x), &f32s(&o.w), &f32s(&o.r), &f32s(&o.b), &f32s(&o.h0), &f32s(&c0), clip as f32, dir)
                    .unwrap();
            assert_abs_diff_eq!(f64s(&y), want_y, epsilon = 1e-5);
            assert_abs_diff_eq!(f64s(&yh), want_h, epsilon = 1e-5);
            assert_abs_diff_eq!(f64s(&yc), want_c, epsilon = 1e-5);
            let (y, yh, yc) = onnx_lstm64(x, &o.w, &o.r, &o.b, &o.h0, &c0, clip, dir as i32).unwrap();
            assert_abs_diff_eq!(y, want_y, epsilon = 1e-12);
            assert_abs_diff_eq!(yh, want_h, epsilon = 1e-12);
            assert_abs_diff_eq!(yc, want_c, epsilon = 1e-12);
        }
        if dir == 2 {
            // Direction 1 with direction 0's weights and states would differ.
            let (other, ..) = lstm_onnx_ref(&ls[0], &c0s[0], 0.0, true);
            let (want, ..) = lstm_onnx_ref(&ls[1], &c0s[1], 0.0, true);
            assert!((&other - &want).iter().any(|d| d.abs() > 1e-3));
        }
    }
}

#[test]
fn onnx_gru_matches_the_loop_per_direction() {
    for dir in [0i64, 1, 2] {
        let ls = directions(6, 3, 2, 4, 3, &seeds(dir, 1.1));
        let o = onnx(&ls);
        let x = &ls[0].x;
        let refs: Vec<_> = ls.iter().zip(reversals(dir)).map(|(l, rev)| gru_onnx_ref(l, rev)).collect();
        // The seed's order and update give other values on these weights.
        let (seed_y, _) = gru_ref(&ls[0], reversals(dir)[0]);
        assert!((&seed_y - &refs[0].0).iter().any(|d| d.abs() > 1e-3));
        let want_y = stack_ys(&refs.iter().map(|r| r.0.clone()).collect::<Vec<_>>());
        let want_h = stack_states(&refs.iter().map(|r| r.1.clone()).collect::<Vec<_>>());
        let (y, yh) = onnx_gru(x, &o.w, &o.r, &o.b, &o.h0, dir).unwrap();
        assert_abs_diff_eq!(y, want_y, epsilon = 1e-12);
        assert_abs_diff_eq!(yh, want_h, epsilon = 1e-12);
        let (y, yh) = onnx_gru32(&f32s(x), &f32s(&o.w), &f32s(&o.r), &f32s(&o.b), &f32s(&o.h0), dir as i32).unwrap();
        assert_abs_diff_eq!(f64s(&y), want_y, epsilon = 1e-5);
        assert_abs_diff_eq!(f64s(&yh), want_h, epsilon = 1e-5);
        if dir == 2 {
            let (other, _) = gru_onnx_ref(&ls[1], false);
            assert!((&other - &refs[0].0).iter().any(|d| d.abs() > 1e-3));
        }
    }
}

/// One step of one unit, worked by hand from ONNX's definitions, with
/// weights whose gates differ so that another gate order or the seed's
/// GRU update gives another value.
#[test]
fn onnx_layouts_by_hand_one_step() {
    let x = Array3::from_elem((1, 1, 1), 1.0);
    let ln3 = 3f64.ln();
    // GRU, blocks z r h: Wz = ln 3, Wr = 0, Wh = 1; R = [0, 0, 2]; Wb =
    // [0, 0, 0.25], Rb = [0, 0, 0.25]; h0 = 0.5, x = 1.
    //   z = σ(ln 3) = 3 / 4, r = σ(0) = 1 / 2,
    //   h~ = tanh(1 + 2 (r h0) + 0.25 + 0.25) = tanh(1 + 0.5 + 0.5) = tanh 2,
    //   H = (1 - z) h~ + z h0 = tanh(2) / 4 + 3 / 8 ≈ 0.616007.
    // (The seed's order r z n would read r = 3/4, z = 1/2 and give
    // 1/4 + tanh(2.25) / 2 ≈ 0.739.)
    let w = Array3::from_shape_vec((1, 3, 1), vec![ln3, 0.0, 1.0]).unwrap();
    let r = Array3::from_shape_vec((1, 3, 1), vec![0.0, 0.0, 2.0]).unwrap();
    let b = Array2::from_shape_vec((1, 6), vec![0.0, 0.0, 0.25, 0.0, 0.0, 0.25]).unwrap();
    let h0 = Array3::from_elem((1, 1, 1), 0.5);
    let want = 2f64.tanh() / 4.0 + 3.0 / 8.0;
    assert_abs_diff_eq!(want, 0.616007, epsilon = 1e-6);
    for dir in [0, 1] {
        let (y, yh) = onnx_gru(&x, &w, &r, &b, &h0, dir).unwrap();
        assert_abs_diff_eq!(y[[0, 0, 0, 0]], want, epsilon = 1e-12);
        assert_abs_diff_eq!(yh[[0, 0, 0]], want, epsilon = 1e-12);
    }
    // LSTM, blocks i o f c: Wi = ln 3, Wo = 0, Wf = -ln 3, Wc = 1; R and B
    // zero; h0 = 0, c0 = 1, x = 1.
    //   i = 3 / 4, o = 1 / 2, f = σ(-ln 3) = 1 / 4, c~ = tanh 1,
    //   C = f c0 + i c~ = 1/4 + 3 tanh(1) / 4 ≈ 0.821196,
    //   H = o tanh(C) = tanh(C) / 2 ≈ 0.337860.
    let w = Array3::from_shape_vec((1, 4, 1), vec![ln3, 0.0, -ln3, 1.0]).unwrap();
    let r = Array3::zeros((1, 4, 1));
    let b = Array2::zeros((1, 8));
    let (h0, c0) = (Array3::zeros((1, 1, 1)), Array3::from_elem((1, 1, 1), 1.0));
    let want_c = 0.25 + 0.75 * 1f64.tanh();
    let want_h = want_c.tanh() / 2.0;
    assert_abs_diff_eq!(want_c, 0.821196, epsilon = 1e-6);
    assert_abs_diff_eq!(want_h, 0.337860, epsilon = 1e-6);
    let (y, yh, yc) = onnx_lstm64(&x, &w, &r, &b, &h0, &c0, 0.0, 0).unwrap();
    assert_abs_diff_eq!(y[[0, 0, 0, 0]], want_h, epsilon = 1e-12);
    assert_abs_diff_eq!(yh[[0, 0, 0]], want_h, epsilon = 1e-12);
    assert_abs_diff_eq!(yc[[0, 0, 0]], want_c, epsilon = 1e-12);
}

/// With ONNX's layouts, D = 1 takes direction 0 or 1 and D = 2 takes 2;
/// any other pairing is an `Error::Assert` naming the function. With the
/// seed's layouts, 2 asks for weights with a direction axis.
#[test]
fn onnx_layouts_reject_a_direction_that_does_not_match_d() {
    let one = directions(3, 2, 3, 2, 1, &[0.2]);
    let two = directions(3, 2, 3, 2, 1, &[0.2, 0.9]);
    let (o1, o2) = (onnx(&one), onnx(&two));
    let x = &one[0].x;
    let assert_msg = |e: Error, function: &str| match e {
        Error::Assert { message, .. } => {
            assert!(message.starts_with(&format!("{function}: ")), "{message}");
            assert!(message.contains("direction"), "{message}");
        }
        other => panic!("expected an Error::Assert, got {other}"),
    };
    for dir in [2, -1, 3] {
        assert_msg(onnx_rnn(x, &o1.w, &o1.r, &o1.b, &o1.h0, "Tanh", dir).unwrap_err(), "rnn");
    }
    for dir in [0, 1, -1, 3] {
        assert_msg(onnx_rnn(x, &o2.w, &o2.r, &o2.b, &o2.h0, "Tanh", dir).unwrap_err(), "rnn");
        assert_msg(
            onnx_rnn32(&f32s(x), &f32s(&o2.w), &f32s(&o2.r), &f32s(&o2.b), &f32s(&o2.h0), "Relu", dir as i32)
                .unwrap_err(),
            "rnn",
        );
    }
    assert!(matches!(onnx_rnn_bidirectional(x, &o1.w, &o1.r, &o1.b, &o1.h0), Err(Error::Assert { .. })));
    assert!(onnx_rnn_bidirectional(x, &o2.w, &o2.r, &o2.b, &o2.h0).is_ok());
    // R, B or initial_h with another D than W.
    assert!(onnx_rnn_any_d(x, &o2.w, &o2.r, &o2.b, &o2.h0, 2).is_ok());
    assert!(matches!(onnx_rnn_any_d(x, &o2.w, &o1.r, &o2.b, &o2.h0, 2), Err(Error::Assert { .. })));
    assert!(matches!(onnx_rnn_any_d(x, &o2.w, &o2.r, &o1.b, &o2.h0, 2), Err(Error::Assert { .. })));
    assert!(matches!(onnx_rnn_any_d(x, &o2.w, &o2.r, &o2.b, &o1.h0, 2), Err(Error::Assert { .. })));

    let (l1, l2) = (directions(3, 2, 3, 2, 4, &[0.2]), directions(3, 2, 3, 2, 4, &[0.2, 0.9]));
    let (o1, o2) = (onnx(&l1), onnx(&l2));
    let c1 = stack_states(&[fill2((2, 2), 0.5)]);
    let c2 = stack_states(&[fill2((2, 2), 0.5), fill2((2, 2), 0.6)]);
    assert_msg(onnx_lstm64(x, &o1.w, &o1.r, &o1.b, &o1.h0, &c1, 0.0, 2).unwrap_err(), "lstm");
    assert_msg(onnx_lstm64(x, &o2.w, &o2.r, &o2.b, &o2.h0, &c2, 0.0, 0).unwrap_err(), "lstm");
    assert_msg(
        onnx_lstm(&f32s(x), &f32s(&o2.w), &f32s(&o2.r), &f32s(&o2.b), &f32s(&o2.h0), &f32s(&c2), 0.0, 1).unwrap_err(),
        "lstm",
    );

    let (l1, l2) = (directions(3, 2, 3, 2, 3, &[0.2]), directions(3, 2, 3, 2, 3, &[0.2, 0.9]));
    let (o1, o2) = (onnx(&l1), onnx(&l2));
    assert_msg(onnx_gru(x, &o1.w, &o1.r, &o1.b, &o1.h0, 2).unwrap_err(), "gru");
    assert_msg(onnx_gru(x, &o2.w, &o2.r, &o2.b, &o2.h0, 0).unwrap_err(), "gru");
    assert_msg(onnx_gru32(&f32s(x), &f32s(&o2.w), &f32s(&o2.r), &f32s(&o2.b), &f32s(&o2.h0), 1).unwrap_err(), "gru");

    // The seed's layouts: bidirectional needs a direction axis.
    let l = layer(3, 2, 3, 2, 1, 0.2);
    let e = run_rnn(&l.x, &l.w, &l.r, &l.b, &l.h0, "Tanh", 2).unwrap_err();
    assert!(e.to_string().contains("direction axis"), "{e}");
    let l = layer(3, 2, 3, 2, 4, 0.2);
    let e = run_lstm64(&l.x, &l.w, &l.r, &l.b, &l.h0, &l.h0, 0.0, 2).unwrap_err();
    assert!(e.to_string().contains("direction axis"), "{e}");
    let l = layer(3, 2, 3, 2, 3, 0.2);
    let e = run_gru(&l.x, &l.w, &l.r, &l.b, &l.h0, 2).unwrap_err();
    assert!(e.to_string().contains("direction axis"), "{e}");
}
