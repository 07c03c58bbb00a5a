//! The product-shaped kernels of issue 37's table, timed for
//! `benches/python/compare_onnx.py` (which runs this bench and onnxruntime
//! on the same shapes, alternately), each printed with its GFLOP/s and the
//! share of the machine's peak (`common::peak_gflops`: measured by chains of
//! fused multiply-adds on every thread):
//!
//! - matmul 1000 x 777 x 1029 (`M x K x N`, sizes that divide into no
//!   block);
//! - batched attention scores `s[b, i, j] = sum[d](q[b, i, d] * k[b, j,
//!   d])`, 32 batches of 256 x 64 times (256 x 64)^T;
//! - a dense layer with bias and ReLU, 256 x 1024 -> 1024;
//! - a 1x1 convolution, N=8 C=256 28x28 -> 256 channels (NCHW), written
//!   with a matrix of weights `k[o, c]`;
//! - attention `softmax(q k^T / 8) v`, 16 heads of 256 x 64, 8 of 512 x
//!   64 and 32 of 128 x 32, written out and through `std::ml::attention`;
//! - skinny products, 1, 4 and 8 rows times 1024 x 1024, and 1, 4 and 8
//!   rows (and 1 row times 4096 x 4096) times the transpose of an `[out,
//!   in]` weight.
//!
//! Each result is checked against `ndarray`'s `dot` (per batch where there
//! are batches) before anything is timed. `cargo bench --bench products --
//! FILTER` runs the cases whose label contains `FILTER`; without `--bench`
//! (`cargo test --benches`) the cases run once on small odd shapes as a
//! check.

mod common;

use std::hint::black_box;
use std::time::{Duration, Instant};

use einlang::einlang;
use einlang::ndarray::{Array1, Array2, Array3, Array4, ArrayD, Axis};

einlang! {
    pub fn matmul(a: [f32; M, K], b: [f32; K, N]) -> [f32; M, N] {
        let c[i, j] = sum[k](a[i, k] * b[k, j]);
        c
    }

    pub fn scores(q: [f32; B, N, D], k: [f32; B, N, D]) -> [f32; B, N, N] {
        let s[b, i, j] = sum[d](q[b, i, d] * k[b, j, d]);
        s
    }

    pub fn dense_relu(x: [f32; B, I], w: [f32; I, O], b: [f32; O]) -> [f32; B, O] {
        let y[n, j] = if z > 0.0 { z } else { 0.0 } where z = sum[i](x[n, i] * w[i, j]) + b[j];
        y
    }

    pub fn linear(x: [f32; B, I], w: [f32; O, I]) -> [f32; B, O] {
        let y[n, o] = sum[i](x[n, i] * w[o, i]);
        y
    }

    pub fn conv1x1(x: [f32; N, C, H, W], k: [f32; O, C]) -> [f32; N, O, H, W] {
        let y[n, o, h, w] = sum[c](k[o, c] * x[n, c, h, w]);
        y
    }

    pub fn attention(q: [f32; H, N, D], k: [f32; H, N, D], v: [f32; H, N, D]) -> [f32; H, N, D] {
        let s[h, i, j] = sum[d](q[h, i, d] * k[h, j, d]) / 8.0;
        let m[h, i] = max[j](s[h, i, j]);
        let e[h, i, j] = std::math::exp(s[h, i, j] - m[h, i]);
        let z[h, i] = sum[j](e[h, i, j]);
        let y[h, i, d] = sum[j](e[h, i, j] * v[h, j, d]) / z[h, i];
        y
    }

    pub fn attention_std(q: [f32; H, N, D], k: [f32; H, N, D], v: [f32; H, N, D]) -> [f32; H, N, D] {
        std::ml::attention(q, k, v, 0.125)
    }
}

type Kernel = Box<dyn Fn() -> ArrayD<f32>>;

/// One case: einlang's kernel and an independent reference.
struct Case {
    label: String,
    flops: f64,
    einlang: Kernel,
    reference: Kernel,
}

/// Deterministic `f32` values in `[-1, 1)`.
fn data(len: usize, seed: u64) -> Vec<f32> {
    common::data(len, seed).into_iter().map(|v| v as f32).collect()
}

fn a2(r: usize, c: usize, seed: u64) -> Array2<f32> {
    Array2::from_shape_vec((r, c), data(r * c, seed)).unwrap()
}

fn a3(b: usize, r: usize, c: usize, seed: u64) -> Array3<f32> {
    Array3::from_shape_vec((b, r, c), data(b * r * c, seed)).unwrap()
}

fn matmul_case(label: &str, m: usize, k: usize, n: usize) -> Case {
    let (a, b) = (a2(m, k, 1), a2(k, n, 2));
    let (ra, rb) = (a.clone(), b.clone());
    Case {
        label: format!("{label} {m}x{k}x{n}"),
        flops: 2.0 * (m * k * n) as f64,
        einlang: Box::new(move || matmul(&a, &b).expect("matmul").into_dyn()),
        reference: Box::new(move || ra.dot(&rb).into_dyn()),
    }
}

/// `x w^T` for a weight stored `[out, in]` (a dense layer's weight in most
/// frameworks).
fn linear_case(m: usize, k: usize, n: usize) -> Case {
    let (x, w) = (a2(m, k, 1), a2(n, k, 2));
    let (rx, rw) = (x.clone(), w.clone());
    Case {
        label: format!("skinny x.w^T {m}x{k}x{n}"),
        flops: 2.0 * (m * k * n) as f64,
        einlang: Box::new(move || linear(&x, &w).expect("linear").into_dyn()),
        reference: Box::new(move || rx.dot(&rw.t()).into_dyn()),
    }
}

/// `q k^T` per batch through `dot`.
fn scores_ref(q: &Array3<f32>, k: &Array3<f32>) -> Array3<f32> {
    let (b, n) = (q.shape()[0], q.shape()[1]);
    let mut out = Array3::<f32>::zeros((b, n, n));
    for (mut o, (x, y)) in out.outer_iter_mut().zip(q.outer_iter().zip(k.outer_iter())) {
        o.assign(&x.dot(&y.t()));
    }
    out
}

fn scores_case(b: usize, n: usize, d: usize) -> Case {
    let (q, k) = (a3(b, n, d, 3), a3(b, n, d, 4));
    let (rq, rk) = (q.clone(), k.clone());
    Case {
        label: format!("batched q.k^T {b}x{n}x{n}x{d}"),
        flops: 2.0 * (b * n * n * d) as f64,
        einlang: Box::new(move || scores(&q, &k).expect("scores").into_dyn()),
        reference: Box::new(move || scores_ref(&rq, &rk).into_dyn()),
    }
}

fn dense_case(m: usize, k: usize, n: usize) -> Case {
    let (x, w, b) = (a2(m, k, 5), a2(k, n, 6), Array1::from_vec(data(n, 7)));
    let (rx, rw, rb) = (x.clone(), w.clone(), b.clone());
    Case {
        label: format!("dense+bias+ReLU {m}x{k}->{n}"),
        flops: 2.0 * (m * k * n) as f64,
        einlang: Box::new(move || dense_relu(&x, &w, &b).expect("dense").into_dyn()),
        reference: Box::new(move || (rx.dot(&rw) + &rb).mapv(|v| v.max(0.0)).into_dyn()),
    }
}

fn conv1x1_case(n: usize, c: usize, hw: usize, o: usize) -> Case {
    let x = Array4::from_shape_vec((n, c, hw, hw), data(n * c * hw * hw, 8)).unwrap();
    let k = a2(o, c, 9);
    let (rx, rk) = (x.clone(), k.clone());
    Case {
        label: format!("1x1 conv N={n} C={c} {hw}x{hw} O={o}"),
        flops: 2.0 * (n * c * hw * hw * o) as f64,
        einlang: Box::new(move || conv1x1(&x, &k).expect("conv1x1").into_dyn()),
        reference: Box::new(move || {
            let mut y = Array4::<f32>::zeros((n, o, hw, hw));
            for (mut yi, xi) in y.outer_iter_mut().zip(rx.outer_iter()) {
                let xm = xi.to_shape((c, hw * hw)).unwrap();
                yi.assign(&rk.dot(&xm).into_shape_with_order((o, hw, hw)).unwrap());
            }
            y.into_dyn()
        }),
    }
}

/// `softmax(q k^T / 8) v` per head through `dot`.
fn attention_ref(q: &Array3<f32>, k: &Array3<f32>, v: &Array3<f32>) -> Array3<f32> {
    let mut s = scores_ref(q, k) / 8.0;
    for mut row in s.lanes_mut(Axis(2)) {
        let m = row.fold(f32::NEG_INFINITY, |a, &b| a.max(b));
        row.mapv_inplace(|x| (x - m).exp());
        let z = row.sum();
        row.mapv_inplace(|x| x / z);
    }
    let mut y = Array3::<f32>::zeros(q.raw_dim());
    for (mut o, (p, vv)) in y.outer_iter_mut().zip(s.outer_iter().zip(v.outer_iter())) {
        o.assign(&p.dot(&vv));
    }
    y
}

fn attention_case(std_form: bool, h: usize, n: usize, d: usize) -> Case {
    let (q, k, v) = (a3(h, n, d, 10), a3(h, n, d, 11), a3(h, n, d, 12));
    let (rq, rk, rv) = (q.clone(), k.clone(), v.clone());
    let form = if std_form { "std::ml::attention" } else { "attention" };
    Case {
        label: format!("{form} softmax(q.k^T/8).v {h}x{n}x{d}"),
        flops: 4.0 * (h * n * n * d) as f64,
        einlang: if std_form {
            Box::new(move || attention_std(&q, &k, &v).expect("attention").into_dyn())
        } else {
            Box::new(move || attention(&q, &k, &v).expect("attention").into_dyn())
        },
        reference: Box::new(move || attention_ref(&rq, &rk, &rv).into_dyn()),
    }
}

fn time_once(f: &Kernel) -> Duration {
    let start = Instant::now();
    black_box(f());
    start.elapsed()
}

/// Checks einlang against the reference (relative to the largest value).
fn check(case: &Case) {
    let (got, want) = ((case.einlang)(), (case.reference)());
    assert_eq!(got.shape(), want.shape(), "{}: shape", case.label);
    let scale = want.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    let worst = got.iter().zip(want.iter()).fold(0.0f32, |m, (g, w)| m.max((g - w).abs()));
    assert!(
        worst.is_finite() && worst <= 1e-4 * (1.0 + scale),
        "{}: differs by {worst} (values up to {scale})",
        case.label
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let flag = |f: &str| args.iter().any(|a| a == f);
    if flag("--list") {
        return;
    }
    let test_mode = flag("--test") || !flag("--bench");
    let mut cases = if test_mode {
        vec![
            matmul_case("matmul", 7, 13, 29),
            matmul_case("skinny", 1, 31, 17),
            linear_case(3, 37, 19),
            scores_case(3, 7, 5),
            dense_case(7, 11, 13),
            conv1x1_case(2, 5, 3, 7),
            attention_case(false, 2, 7, 5),
            attention_case(true, 2, 7, 5),
        ]
    } else {
        vec![
            matmul_case("matmul", 1000, 777, 1029),
            scores_case(32, 256, 64),
            dense_case(256, 1024, 1024),
            conv1x1_case(8, 256, 28, 256),
            attention_case(false, 16, 256, 64),
            attention_case(true, 16, 256, 64),
            attention_case(false, 8, 512, 64),
            attention_case(true, 8, 512, 64),
            attention_case(false, 32, 128, 32),
            attention_case(true, 32, 128, 32),
            matmul_case("skinny", 1, 1024, 1024),
            matmul_case("skinny", 4, 1024, 1024),
            matmul_case("skinny", 8, 1024, 1024),
            linear_case(1, 1024, 1024),
            linear_case(4, 1024, 1024),
            linear_case(8, 1024, 1024),
            linear_case(1, 4096, 4096),
        ]
    };
    let only = args.iter().skip(1).find(|a| !a.starts_with("--"));
    cases.retain(|c| only.is_none_or(|o| c.label.contains(o.as_str())));
    for case in &cases {
        check(case);
    }
    if test_mode {
        return;
    }
    let peak = common::peak_gflops();
    match &peak {
        Some((_, how)) => println!("peak: {how}"),
        None => println!("peak: the clock is not reported"),
    }
    for case in &cases {
        black_box((case.einlang)());
        let one = time_once(&case.einlang);
        let runs = ((1.0 / one.as_secs_f64().max(1e-6)) as usize).clamp(5, 41) | 1;
        let mut times: Vec<Duration> = (0..runs).map(|_| time_once(&case.einlang)).collect();
        times.sort();
        let t = times[runs / 2];
        let rate = case.flops / t.as_secs_f64() / 1e9;
        let share = peak.as_ref().map(|(p, _)| format!(", {:.0}% of {p:.0}", 100.0 * rate / p)).unwrap_or_default();
        println!(
            "{}: einlang {:.4} ms  ({rate:.1} GFLOP/s{share}; median of {runs})",
            case.label,
            t.as_secs_f64() * 1e3
        );
    }
}
