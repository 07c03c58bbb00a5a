//! Gradients from derivative requests (`@l / @w`) against the loss alone and
//! against backward passes written by hand, measured in the same run.
//!
//! - dense: a 512-512-10 ReLU MLP on a batch of 256, mean softmax
//!   cross-entropy against integer labels; gradients of `w1, b1, w2, b2`.
//!   Baseline: forward and backward with `ndarray::Array2::dot`
//!   (matrixmultiply, the GEMM einlang dispatches to). Twice: with the
//!   hidden layer written in one line, `relu(sum[i](x[n, i] * w1[i, j]) +
//!   b1[j])`, and with the pre-activation bound to a name `a` first. In the
//!   one-line form the reduction inside `relu(...)` is bound to a tensor of
//!   its own, which the primal computes as a GEMM and `relu`'s `@fn` rule
//!   reads, so both forms run the same products.
//! - conv2d: N=8, C=16, 32x32 images, 3x3 kernels, O=32 (valid), loss the sum
//!   of the squared outputs; gradients of the kernel, the bias and the input.
//!   Baseline: im2col + `dot` forward, `dot` + col2im backward, images in
//!   parallel (rayon).
//! - rnn: `h[t] = tanh(h[t-1] w + x[t] u)`, T=64 and 512 steps, batch 32,
//!   64 inputs, hidden 128, loss the sum of the squared last state;
//!   gradients of `w` and `u`. Baseline: backpropagation through time with
//!   `dot`. At T=512 also with the history recomputed from checkpoints
//!   ("ckpt": the history limit set to 0 around the gradient's call), the
//!   form a long sequence's gradient takes.
//!
//! For each case four functions are timed: the einlang loss, the einlang
//! gradient, and the baseline's loss and gradient (forward + backward). The
//! table printed at the end gives gradient / loss for both (the
//! cheap-gradient ratio) and einlang gradient / baseline gradient. Results
//! are checked against the baseline before anything is timed.
//!
//! Kept short (10 samples, 1 s of measurement per function; a call slower
//! than 1 s is timed once and left out of criterion): the whole run takes
//! about half a minute on 2 cores.

mod common;

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, SamplingMode};
use einlang::einlang;
use einlang::ndarray::parallel::prelude::*;
use einlang::ndarray::{s, Array, Array1, Array2, Array3, Array4, ArrayD, Axis, Dimension, Zip};

einlang! {
    use std::ml::{log_softmax, relu};
    use std::math::tanh;

    /// Mean softmax cross-entropy of a ReLU MLP on a batch.
    pub fn mlp_loss(
        x: [f32; B, I], labels: [i64; B],
        w1: [f32; I, H], b1: [f32; H], w2: [f32; H, C], b2: [f32; C],
    ) -> f32 {
        let h[n, j] = relu(sum[i](x[n, i] * w1[i, j]) + b1[j]);
        let z[n, c] = sum[j](h[n, j] * w2[j, c]) + b2[c];
        let lp = log_softmax(z);
        let l = -sum[n](lp[n, labels[n]]) / (B as f32);
        l
    }

    /// The gradients of `mlp_loss` with respect to every parameter.
    pub fn mlp_grad(
        x: [f32; B, I], labels: [i64; B],
        w1: [f32; I, H], b1: [f32; H], w2: [f32; H, C], b2: [f32; C],
    ) -> ([f32; I, H], [f32; H], [f32; H, C], [f32; C]) {
        let l = mlp_loss(x, labels, w1, b1, w2, b2);
        (@l / @w1, @l / @b1, @l / @w2, @l / @b2)
    }

    /// `mlp_loss` with the hidden pre-activation bound to a name.
    pub fn mlp_named_loss(
        x: [f32; B, I], labels: [i64; B],
        w1: [f32; I, H], b1: [f32; H], w2: [f32; H, C], b2: [f32; C],
    ) -> f32 {
        let a[n, j] = sum[i](x[n, i] * w1[i, j]) + b1[j];
        let h[n, j] = relu(a[n, j]);
        let z[n, c] = sum[j](h[n, j] * w2[j, c]) + b2[c];
        let lp = log_softmax(z);
        let l = -sum[n](lp[n, labels[n]]) / (B as f32);
        l
    }

    /// The gradients of `mlp_named_loss` with respect to every parameter.
    pub fn mlp_named_grad(
        x: [f32; B, I], labels: [i64; B],
        w1: [f32; I, H], b1: [f32; H], w2: [f32; H, C], b2: [f32; C],
    ) -> ([f32; I, H], [f32; H], [f32; H, C], [f32; C]) {
        let l = mlp_named_loss(x, labels, w1, b1, w2, b2);
        (@l / @w1, @l / @b1, @l / @w2, @l / @b2)
    }

    /// Sum of the squared outputs of a valid 2-D convolution with bias.
    pub fn conv_loss(x: [f32; N, C, H, W], k: [f32; O, C, KH, KW], b: [f32; O]) -> f32 {
        let y[n, o, oy, ox] = sum[c, r, s](x[n, c, oy + r, ox + s] * k[o, c, r, s]) + b[o];
        let l = sum[n, o, oy, ox](y[n, o, oy, ox] * y[n, o, oy, ox]);
        l
    }

    /// The gradients of `conv_loss` with respect to the kernel, the bias
    /// and the input.
    pub fn conv_grad(x: [f32; N, C, H, W], k: [f32; O, C, KH, KW], b: [f32; O])
        -> ([f32; O, C, KH, KW], [f32; O], [f32; N, C, H, W]) {
        let l = conv_loss(x, k, b);
        (@l / @k, @l / @b, @l / @x)
    }

    /// Sum of the squared last state of a tanh RNN run over `x`.
    pub fn rnn_loss(h0: [f32; B, H], w: [f32; H, H], u: [f32; I, H], x: [f32; T, B, I]) -> f32 {
        let h[0, n, j] = h0[n, j];
        let h[t in 1..T, n, j] = tanh(sum[k](h[t - 1, n, k] * w[k, j]) + sum[i](x[t, n, i] * u[i, j]));
        let l = sum[n, j](h[T - 1, n, j] * h[T - 1, n, j]);
        l
    }

    /// The gradients of `rnn_loss` with respect to `w` and `u`.
    pub fn rnn_grad(h0: [f32; B, H], w: [f32; H, H], u: [f32; I, H], x: [f32; T, B, I])
        -> ([f32; H, H], [f32; I, H]) {
        let l = rnn_loss(h0, w, u, x);
        (@l / @w, @l / @u)
    }
}

/// Deterministic `f32` values in `[-scale, scale)`.
fn data(len: usize, seed: u64, scale: f32) -> Vec<f32> {
    common::data(len, seed).into_iter().map(|v| v as f32 * scale).collect()
}

fn array<D: Dimension>(shape: impl einlang::ndarray::ShapeBuilder<Dim = D>, seed: u64, scale: f32) -> Array<f32, D> {
    let shape = shape.into_shape_with_order();
    let len = shape.size();
    Array::from_shape_vec(shape, data(len, seed, scale)).expect("shape and length agree")
}

fn scalar(v: f32) -> ArrayD<f32> {
    einlang::ndarray::arr0(v).into_dyn()
}

// ---------------------------------------------------------------------------
// Dense network: hand-written forward and backward
// ---------------------------------------------------------------------------

struct Mlp {
    x: Array2<f32>,
    labels: Array1<i64>,
    w1: Array2<f32>,
    b1: Array1<f32>,
    w2: Array2<f32>,
    b2: Array1<f32>,
}

impl Mlp {
    fn new(batch: usize, inputs: usize, hidden: usize, classes: usize) -> Mlp {
        Mlp {
            x: array((batch, inputs), 1, 1.0),
            labels: (0..batch).map(|n| ((n * 7 + 3) % classes) as i64).collect(),
            w1: array((inputs, hidden), 2, 1.0 / (inputs as f32).sqrt()),
            b1: array(hidden, 3, 0.1),
            w2: array((hidden, classes), 4, 1.0 / (hidden as f32).sqrt()),
            b2: array(classes, 5, 0.1),
        }
    }

    /// Pre-activations, hidden layer, log-probabilities.
    fn forward(&self) -> (Array2<f32>, Array2<f32>, Array2<f32>) {
        let mut a = self.x.dot(&self.w1);
        a += &self.b1;
        let h = a.mapv(|v| v.max(0.0));
        let mut z = h.dot(&self.w2);
        z += &self.b2;
        for mut row in z.axis_iter_mut(Axis(0)) {
            let m = row.fold(f32::NEG_INFINITY, |m, &v| m.max(v));
            let lse = m + row.fold(0.0, |s, &v| s + (v - m).exp()).ln();
            row -= lse;
        }
        (a, h, z)
    }

    fn loss_of(&self, lp: &Array2<f32>) -> f32 {
        -self.labels.iter().enumerate().map(|(n, &c)| lp[[n, c as usize]]).sum::<f32>() / lp.nrows() as f32
    }

    fn loss(&self) -> f32 {
        self.loss_of(&self.forward().2)
    }

    fn grad(&self) -> (Array2<f32>, Array1<f32>, Array2<f32>, Array1<f32>) {
        let (a, h, lp) = self.forward();
        let batch = lp.nrows() as f32;
        // d loss / d z = (softmax - one-hot) / batch.
        let mut dz = lp.mapv(|v| v.exp() / batch);
        for (n, &c) in self.labels.iter().enumerate() {
            dz[[n, c as usize]] -= 1.0 / batch;
        }
        let gw2 = h.t().dot(&dz);
        let gb2 = dz.sum_axis(Axis(0));
        let mut da = dz.dot(&self.w2.t());
        Zip::from(&mut da).and(&a).for_each(|d, &a| {
            if a <= 0.0 {
                *d = 0.0
            }
        });
        let gw1 = self.x.t().dot(&da);
        let gb1 = da.sum_axis(Axis(0));
        (gw1, gb1, gw2, gb2)
    }
}

/// The dense case; `named` uses `mlp_named_*`, whose pre-activation has a
/// name (the one-line form's gradient recomputes it, see the module docs).
fn mlp_case(batch: usize, inputs: usize, hidden: usize, classes: usize, named: bool) -> Case {
    let m = std::rc::Rc::new(Mlp::new(batch, inputs, hidden, classes));
    let (m1, m2, m3, m4) = (m.clone(), m.clone(), m.clone(), m);
    Case {
        group: if named { "mlp_named" } else { "mlp" },
        param: format!("b{batch}_{inputs}_{hidden}_{classes}"),
        label: format!("dense {inputs}-{hidden}-{classes} B={batch}{}", if named { ", a named" } else { "" }),
        primal: Box::new(move || {
            let m = &m1;
            let l = if named { mlp_named_loss } else { mlp_loss };
            vec![scalar(l(&m.x, &m.labels, &m.w1, &m.b1, &m.w2, &m.b2).expect("loss"))]
        }),
        grad: Some(Box::new(move || {
            let m = &m2;
            let g = if named { mlp_named_grad } else { mlp_grad };
            let (a, b, c, d) = g(&m.x, &m.labels, &m.w1, &m.b1, &m.w2, &m.b2).expect("grad");
            vec![a.into_dyn(), b.into_dyn(), c.into_dyn(), d.into_dyn()]
        })),
        hand_primal: Box::new(move || vec![scalar(m3.loss())]),
        hand_grad: Box::new(move || {
            let (a, b, c, d) = m4.grad();
            vec![a.into_dyn(), b.into_dyn(), c.into_dyn(), d.into_dyn()]
        }),
        baseline_name: "ndarray dot",
    }
}

// ---------------------------------------------------------------------------
// Convolution: im2col + dot
// ---------------------------------------------------------------------------

struct Conv {
    x: Array4<f32>,
    k: Array4<f32>,
    b: Array1<f32>,
}

common::twin! {
/// The columns of one image for a `kh x kw` valid convolution:
/// `cols[(c, r, s), (y, x)] = img[c, y + r, x + s]`.
fn im2col(img: einlang::ndarray::ArrayView3<f32>, kh: usize, kw: usize) -> Array2<f32> {
    let (c, h, w) = img.dim();
    let (oh, ow) = (h - kh + 1, w - kw + 1);
    let mut cols = Array2::<f32>::zeros((c * kh * kw, oh * ow));
    for ci in 0..c {
        for r in 0..kh {
            for s in 0..kw {
                let mut row = cols.row_mut((ci * kh + r) * kw + s);
                let row = row.as_slice_mut().expect("standard layout");
                for y in 0..oh {
                    let src = img.slice(s![ci, y + r, s..s + ow]);
                    row[y * ow..(y + 1) * ow].copy_from_slice(src.as_slice().expect("contiguous image row"));
                }
            }
        }
    }
    cols
}
}

common::twin! {
/// Adds the columns back into an image: the transpose of `im2col`.
fn col2im(cols: &Array2<f32>, c: usize, h: usize, w: usize, kh: usize, kw: usize) -> Array3<f32> {
    let (oh, ow) = (h - kh + 1, w - kw + 1);
    let mut img = Array3::<f32>::zeros((c, h, w));
    for ci in 0..c {
        for r in 0..kh {
            for s in 0..kw {
                let row = cols.row((ci * kh + r) * kw + s);
                let row = row.as_slice().expect("standard layout");
                for y in 0..oh {
                    let mut dst = img.slice_mut(s![ci, y + r, s..s + ow]);
                    for (d, v) in dst.iter_mut().zip(&row[y * ow..(y + 1) * ow]) {
                        *d += v;
                    }
                }
            }
        }
    }
    img
}
}

impl Conv {
    fn new(n: usize, c: usize, hw: usize, o: usize, kk: usize) -> Conv {
        Conv {
            x: array((n, c, hw, hw), 6, 1.0),
            k: array((o, c, kk, kk), 7, 1.0 / ((c * kk * kk) as f32).sqrt()),
            b: array(o, 8, 0.1),
        }
    }

    fn kernel_matrix(&self) -> Array2<f32> {
        let (o, c, kh, kw) = self.k.dim();
        self.k.to_shape((o, c * kh * kw)).expect("standard layout kernel").to_owned()
    }

    /// One image's columns and outputs `[O, OH * OW]`.
    fn forward_one(&self, kmat: &Array2<f32>, img: einlang::ndarray::ArrayView3<f32>) -> (Array2<f32>, Array2<f32>) {
        let (_, _, kh, kw) = self.k.dim();
        let cols = im2col(img, kh, kw);
        let mut y = kmat.dot(&cols);
        y += &self.b.view().insert_axis(Axis(1));
        (cols, y)
    }

    fn loss(&self) -> f32 {
        let kmat = self.kernel_matrix();
        (0..self.x.len_of(Axis(0)))
            .into_par_iter()
            .map(|n| self.forward_one(&kmat, self.x.index_axis(Axis(0), n)).1.fold(0.0f32, |s, &v| s + v * v))
            .sum()
    }

    fn grad(&self) -> (Array4<f32>, Array1<f32>, Array4<f32>) {
        let (o, c, kh, kw) = self.k.dim();
        let (n, _, h, w) = self.x.dim();
        let kmat = self.kernel_matrix();
        let parts: Vec<(Array2<f32>, Array1<f32>, Array3<f32>)> = (0..n)
            .into_par_iter()
            .map(|i| {
                let (cols, y) = self.forward_one(&kmat, self.x.index_axis(Axis(0), i));
                let dy = y * 2.0;
                let dk = dy.dot(&cols.t());
                let db = dy.sum_axis(Axis(1));
                let dx = col2im(&kmat.t().dot(&dy), c, h, w, kh, kw);
                (dk, db, dx)
            })
            .collect();
        let mut dk = Array2::<f32>::zeros((o, c * kh * kw));
        let mut db = Array1::<f32>::zeros(o);
        let mut dx = Array4::<f32>::zeros((n, c, h, w));
        for (i, (k, b, x)) in parts.into_iter().enumerate() {
            dk += &k;
            db += &b;
            dx.index_axis_mut(Axis(0), i).assign(&x);
        }
        (dk.into_shape_with_order((o, c, kh, kw)).expect("kernel shape"), db, dx)
    }
}

fn conv_case(n: usize, c: usize, hw: usize, o: usize, kk: usize) -> Case {
    let p = std::sync::Arc::new(Conv::new(n, c, hw, o, kk));
    let (p1, p2, p3, p4) = (p.clone(), p.clone(), p.clone(), p);
    Case {
        group: "conv2d",
        param: format!("n{n}_c{c}_hw{hw}_o{o}_k{kk}"),
        label: format!("conv2d N={n} C={c} {hw}x{hw} O={o} {kk}x{kk}"),
        primal: Box::new(move || vec![scalar(conv_loss(&p1.x, &p1.k, &p1.b).expect("conv_loss"))]),
        grad: Some(Box::new(move || {
            let (a, b, c) = conv_grad(&p2.x, &p2.k, &p2.b).expect("conv_grad");
            vec![a.into_dyn(), b.into_dyn(), c.into_dyn()]
        })),
        hand_primal: Box::new(move || vec![scalar(p3.loss())]),
        hand_grad: Box::new(move || {
            let (a, b, c) = p4.grad();
            vec![a.into_dyn(), b.into_dyn(), c.into_dyn()]
        }),
        baseline_name: "im2col + dot",
    }
}

// ---------------------------------------------------------------------------
// RNN: backpropagation through time with dot
// ---------------------------------------------------------------------------

struct Rnn {
    h0: Array2<f32>,
    w: Array2<f32>,
    u: Array2<f32>,
    x: Array3<f32>,
}

impl Rnn {
    fn new(steps: usize, batch: usize, inputs: usize, hidden: usize) -> Rnn {
        Rnn {
            h0: array((batch, hidden), 9, 0.5),
            w: array((hidden, hidden), 10, 1.0 / (hidden as f32).sqrt()),
            u: array((inputs, hidden), 11, 1.0 / (inputs as f32).sqrt()),
            x: array((steps, batch, inputs), 12, 1.0),
        }
    }

    /// Every state `h[t]`, `t in 0..T`; the input terms of all steps are one
    /// product.
    fn states(&self) -> Vec<Array2<f32>> {
        let (steps, batch, inputs) = self.x.dim();
        let xu = self.x.to_shape((steps * batch, inputs)).expect("standard layout").dot(&self.u);
        let mut hs = vec![self.h0.clone()];
        for t in 1..steps {
            let mut a = hs[t - 1].dot(&self.w);
            a += &xu.slice(s![t * batch..(t + 1) * batch, ..]);
            a.mapv_inplace(f32::tanh);
            hs.push(a);
        }
        hs
    }

    fn loss(&self) -> f32 {
        self.states().last().expect("at least one state").fold(0.0, |s, &v| s + v * v)
    }

    fn grad(&self) -> (Array2<f32>, Array2<f32>) {
        let (steps, batch, inputs) = self.x.dim();
        let hs = self.states();
        let mut gw = Array2::<f32>::zeros(self.w.raw_dim());
        // d loss / d (pre-activation) of every step, stacked, for one product with x.
        let mut da_all = Array2::<f32>::zeros((steps * batch, self.w.nrows()));
        let mut dh = &hs[steps - 1] * 2.0;
        for t in (1..steps).rev() {
            let da = dh * hs[t].mapv(|v| 1.0 - v * v);
            gw += &hs[t - 1].t().dot(&da);
            dh = da.dot(&self.w.t());
            da_all.slice_mut(s![t * batch..(t + 1) * batch, ..]).assign(&da);
        }
        let gu = self.x.to_shape((steps * batch, inputs)).expect("standard layout").t().dot(&da_all);
        (gw, gu)
    }
}

/// `checkpointed`: the gradient recomputes the history from checkpoints
/// (the history limit set to 0 around the call), as it would for a long
/// sequence.
fn rnn_case(steps: usize, batch: usize, inputs: usize, hidden: usize, checkpointed: bool) -> Case {
    let p = std::rc::Rc::new(Rnn::new(steps, batch, inputs, hidden));
    let (p1, p2, p3, p4) = (p.clone(), p.clone(), p.clone(), p);
    let how = if checkpointed { "_ckpt" } else { "" };
    Case {
        group: "rnn",
        param: format!("t{steps}_b{batch}_i{inputs}_h{hidden}{how}"),
        label: format!(
            "rnn tanh T={steps} B={batch} I={inputs} H={hidden}{}",
            if checkpointed { ", ckpt" } else { "" }
        ),
        primal: Box::new(move || vec![scalar(rnn_loss(&p1.h0, &p1.w, &p1.u, &p1.x).expect("rnn_loss"))]),
        grad: Some(Box::new(move || {
            let limit = if checkpointed { 0 } else { usize::MAX };
            let before = einlang::checkpoint::set_history_limit(limit);
            let (a, b) = rnn_grad(&p2.h0, &p2.w, &p2.u, &p2.x).expect("rnn_grad");
            einlang::checkpoint::set_history_limit(before);
            vec![a.into_dyn(), b.into_dyn()]
        })),
        hand_primal: Box::new(move || vec![scalar(p3.loss())]),
        hand_grad: Box::new(move || {
            let (a, b) = p4.grad();
            vec![a.into_dyn(), b.into_dyn()]
        }),
        baseline_name: "BPTT with dot",
    }
}

// ---------------------------------------------------------------------------
// Checking and timing
// ---------------------------------------------------------------------------

type Run = Box<dyn Fn() -> Vec<ArrayD<f32>>>;

/// One network: its einlang loss and gradient, and the baseline's.
struct Case {
    /// Criterion group.
    group: &'static str,
    /// Criterion parameter (no spaces: it becomes a directory name).
    param: String,
    /// What the table calls this case.
    label: String,
    primal: Run,
    /// None where the compiler cannot differentiate the network yet.
    grad: Option<Run>,
    hand_primal: Run,
    hand_grad: Run,
    baseline_name: &'static str,
}

/// Criterion names of the four functions of a case, in table order.
const ROLES: [&str; 4] = ["einlang_loss", "einlang_grad", "hand_loss", "hand_grad"];

impl Case {
    /// The four functions in the order of `ROLES`.
    fn runs(&self) -> [Option<&Run>; 4] {
        [Some(&self.primal), self.grad.as_ref(), Some(&self.hand_primal), Some(&self.hand_grad)]
    }
}

/// One call slower than this is left out of criterion and timed once (its
/// checking call), so that the run stays short even if a gradient is slow.
const SLOW: Duration = Duration::from_secs(1);

fn time_once(f: &Run) -> (Duration, Vec<ArrayD<f32>>) {
    let start = Instant::now();
    let out = black_box(f());
    (start.elapsed(), out)
}

/// Fails unless einlang's values agree with the baseline's.
fn compare(case: &Case, what: &str, got: &[ArrayD<f32>], want: &[ArrayD<f32>]) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g.shape(), w.shape(), "{}: {what} {i} has the wrong shape", case.label);
        let scale = w.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        let worst = g.iter().zip(w.iter()).fold(0.0f32, |m, (a, b)| m.max((a - b).abs()));
        assert!(
            worst.is_finite() && worst <= 1e-3 * scale.max(1e-6),
            "{}: einlang {what} {i} differs from the {} one by up to {worst} (values up to {scale})",
            case.label,
            case.baseline_name
        );
    }
}

/// Runs every function of a case once, checks einlang's loss and gradient
/// against the baseline's, and returns how long each call took.
fn check(case: &Case) -> [Option<Duration>; 4] {
    // The losses are cheap: one untimed call each keeps thread-pool start-up
    // and first allocations out of the durations.
    black_box((case.primal)());
    black_box((case.hand_primal)());
    let results: Vec<Option<(Duration, Vec<ArrayD<f32>>)>> = case.runs().iter().map(|f| f.map(time_once)).collect();
    let out = |i: usize| results[i].as_ref().map(|(_, v)| v.as_slice());
    compare(case, "loss", out(0).expect("einlang loss"), out(2).expect("hand loss"));
    if let Some(grad) = out(1) {
        compare(case, "gradient", grad, out(3).expect("hand gradient"));
    }
    std::array::from_fn(|i| results[i].as_ref().map(|(d, _)| *d))
}

/// The median time of each of a case's calls (None where absent). The
/// loss and the gradient of one side are timed in rounds that call each
/// once in turn, after a few untimed calls of each: a slow stretch of the
/// machine then falls on both alike, and neither is timed cold. The two
/// sides are timed one after the other, each with its own pair: the
/// baseline's GEMM runs its own threads, which would otherwise still be
/// spinning when einlang's calls start. A call slower than `SLOW` is timed
/// once.
fn interleaved(case: &Case, first: &[Option<Duration>; 4]) -> [Option<Duration>; 4] {
    let runs = case.runs();
    let mut out = *first;
    // (einlang's loss and gradient, the baseline's)
    for pair in [[0, 1], [2, 3]] {
        // (role, call, its first duration)
        let timed: Vec<(usize, &Run, Duration)> =
            pair.into_iter().filter_map(|i| Some((i, runs[i]?, first[i]?))).filter(|(_, _, d)| *d <= SLOW).collect();
        for (_, f, d) in &timed {
            for _ in 0..warm_ups(*d) {
                black_box(f());
            }
        }
        let rounds = runs_for(timed.iter().map(|(_, _, d)| d.as_secs_f64()).sum());
        let mut times: Vec<Vec<Duration>> = vec![Vec::with_capacity(rounds); timed.len()];
        for _ in 0..rounds {
            for ((_, f, _), t) in timed.iter().zip(&mut times) {
                t.push(time_once(f).0);
            }
        }
        for ((i, _, _), mut t) in timed.iter().zip(times) {
            t.sort();
            out[*i] = Some(t[rounds / 2]);
        }
    }
    out
}

/// Untimed calls before timing: about a tenth of a second, 2 to 20.
fn warm_ups(one: Duration) -> usize {
    ((0.1 / one.as_secs_f64().max(1e-6)) as usize).clamp(2, 20)
}

/// How many rounds fit about a second given one round's duration: at
/// least 3, at most 101, odd.
fn runs_for(one: f64) -> usize {
    let fit = (1.0 / one.max(1e-6)) as usize;
    fit.clamp(3, 101) | 1
}

fn fmt_ms(d: Option<Duration>) -> String {
    let Some(d) = d else { return "n/a".to_string() };
    let ms = d.as_secs_f64() * 1e3;
    if ms >= 100.0 {
        format!("{ms:.0} ms")
    } else if ms >= 10.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{ms:.2} ms")
    }
}

fn ratio(a: Option<Duration>, b: Option<Duration>) -> String {
    match (a, b) {
        (Some(a), Some(b)) => format!("{:.2}x", a.as_secs_f64() / b.as_secs_f64()),
        _ => "n/a".to_string(),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let flag = |f: &str| args.iter().any(|a| a == f);
    if flag("--list") {
        Criterion::default().configure_from_args().final_summary();
        return;
    }
    // Without `--bench` (cargo test --benches, cargo bench -- --test) criterion
    // runs every benchmark once as a test; use small sizes and skip the table.
    let test_mode = flag("--test") || !flag("--bench");
    let cases = if test_mode {
        vec![
            mlp_case(8, 12, 16, 5, false),
            mlp_case(8, 12, 16, 5, true),
            conv_case(2, 3, 8, 4, 3),
            rnn_case(5, 3, 4, 6, false),
            rnn_case(5, 3, 4, 6, true),
        ]
    } else {
        vec![
            mlp_case(256, 512, 512, 10, false),
            mlp_case(256, 512, 512, 10, true),
            conv_case(8, 16, 32, 32, 3),
            rnn_case(64, 32, 64, 128, false),
            rnn_case(512, 32, 64, 128, false),
            rnn_case(512, 32, 64, 128, true),
        ]
    };
    let firsts: Vec<[Option<Duration>; 4]> = cases.iter().map(check).collect();

    let mut criterion = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .configure_from_args();
    for (case, first) in cases.iter().zip(&firsts) {
        let mut group = criterion.benchmark_group(case.group);
        group.sampling_mode(SamplingMode::Flat);
        for ((role, f), first) in ROLES.iter().zip(case.runs()).zip(first) {
            let (Some(f), Some(first)) = (f, first) else { continue };
            if *first > SLOW && !test_mode {
                println!("{} {role}: one call takes {}, left out of criterion", case.label, fmt_ms(Some(*first)));
                continue;
            }
            group.bench_function(BenchmarkId::new(*role, &case.param), |b| b.iter(|| black_box(f())));
        }
        group.finish();
    }
    criterion.final_summary();
    if test_mode {
        return;
    }

    let slow = firsts.iter().flatten().flatten().any(|d| *d > SLOW);
    let timings: Vec<[Option<Duration>; 4]> =
        cases.iter().zip(&firsts).map(|(case, first)| interleaved(case, first)).collect();
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    println!();
    println!(
        "gradients vs losses and vs hand-written backward passes (medians of rounds calling loss and gradient in turn, {threads} hardware threads)"
    );
    println!("  grad/loss: gradient time / loss time; einlang/hand: einlang gradient time / baseline gradient time");
    if slow {
        println!("  (a call slower than {} s is timed once)", SLOW.as_secs());
    }
    println!(
        "{:<34} {:>9} {:>9} {:>9}   {:>9} {:>9} {:>9}   {:>12}  baseline",
        "case", "loss", "grad", "grad/loss", "hand loss", "hand grad", "grad/loss", "einlang/hand"
    );
    for (case, [el, eg, hl, hg]) in cases.iter().zip(timings) {
        println!(
            "{:<34} {:>9} {:>9} {:>9}   {:>9} {:>9} {:>9}   {:>12}  {}",
            case.label,
            fmt_ms(el),
            fmt_ms(eg),
            ratio(eg, el),
            fmt_ms(hl),
            fmt_ms(hg),
            ratio(hg, hl),
            ratio(eg, hg),
            case.baseline_name
        );
    }
}
