//! `std::ml` against independent references: each function is compared with
//! a hand-written Rust loop or formula (piecewise, in f64), or with values
//! derived by hand. Activations run on f64 scalars and on f32 tensors of
//! rank 1 and 2; layers on small random inputs.

mod common;

use approx::assert_relative_eq;
use common::*;
use einlang::ndarray::{array, Array, Array1, Array2, Array3, Array4, Axis, Dimension};

// ===========================================================================
// Activations
// ===========================================================================

mod act {
    use einlang::einlang;

    einlang! {
        use std::ml::*;

        // Every activation, in two groups of twelve; `a` is the parameter of
        // those that take one (hardtanh gets [-a, a], threshold replaces by -7).
        pub fn acts_a64(x: f64, a: f64) -> [f64; 12] {
            [relu(x), sigmoid(x), leaky_relu(x, a), prelu(x, a), elu(x, a), elu_alpha(x, a),
             celu(x, a), selu(x), gelu(x), gelu_tanh(x), swish(x), silu(x)]
        }
        pub fn acts_b64(x: f64, a: f64) -> [f64; 12] {
            [softplus(x), mish(x), hardtanh(x, -a, a), relu6(x), hardsigmoid(x), hardswish(x), softsign(x),
             tanhshrink(x), softshrink(x, a), hardshrink(x, a), threshold(x, a, -7.0), thresholded_relu(x, a)]
        }

        // The same lists on f32 tensors of rank 1 and 2.
        pub fn acts_a_r1(x: [f32; N], a: f32) -> ([f32; N], [f32; N], [f32; N], [f32; N], [f32; N], [f32; N],
            [f32; N], [f32; N], [f32; N], [f32; N], [f32; N], [f32; N]) {
            (relu(x), sigmoid(x), leaky_relu(x, a), prelu(x, a), elu(x, a), elu_alpha(x, a),
             celu(x, a), selu(x), gelu(x), gelu_tanh(x), swish(x), silu(x))
        }
        pub fn acts_b_r1(x: [f32; N], a: f32) -> ([f32; N], [f32; N], [f32; N], [f32; N], [f32; N], [f32; N],
            [f32; N], [f32; N], [f32; N], [f32; N], [f32; N], [f32; N]) {
            (softplus(x), mish(x), hardtanh(x, -a, a), relu6(x), hardsigmoid(x), hardswish(x), softsign(x),
             tanhshrink(x), softshrink(x, a), hardshrink(x, a), threshold(x, a, -7.0), thresholded_relu(x, a))
        }
        pub fn acts_a_r2(x: [f32; R, C], a: f32) -> (
            [f32; R, C], [f32; R, C], [f32; R, C], [f32; R, C], [f32; R, C], [f32; R, C],
            [f32; R, C], [f32; R, C], [f32; R, C], [f32; R, C], [f32; R, C], [f32; R, C],
        ) {
            (relu(x), sigmoid(x), leaky_relu(x, a), prelu(x, a), elu(x, a), elu_alpha(x, a),
             celu(x, a), selu(x), gelu(x), gelu_tanh(x), swish(x), silu(x))
        }
        pub fn acts_b_r2(x: [f32; R, C], a: f32) -> (
            [f32; R, C], [f32; R, C], [f32; R, C], [f32; R, C], [f32; R, C], [f32; R, C],
            [f32; R, C], [f32; R, C], [f32; R, C], [f32; R, C], [f32; R, C], [f32; R, C],
        ) {
            (softplus(x), mish(x), hardtanh(x, -a, a), relu6(x), hardsigmoid(x), hardswish(x), softsign(x),
             tanhshrink(x), softshrink(x, a), hardshrink(x, a), threshold(x, a, -7.0), thresholded_relu(x, a))
        }

        /// prelu with one slope per element.
        pub fn t_prelu_tensor(x: [f32; R, C], a: [f32; R, C]) -> [f32; R, C] { prelu(x, a) }
    }
}
use act::*;

/// erf by its everywhere-positive series
/// erf(x) = 2/sqrt(pi) * exp(-x^2) * sum_n 2^n x^(2n+1) / (1 * 3 * ... * (2n+1)),
/// which has no cancellation, so it is accurate to a few ulps for |x| <= 6.
fn erf_ref(x: f64) -> f64 {
    if x.abs() > 6.0 {
        return x.signum();
    }
    let mut term = x;
    let mut total = x;
    let mut n = 0.0;
    while term.abs() > 1e-17 * total.abs() {
        n += 1.0;
        term *= 2.0 * x * x / (2.0 * n + 1.0);
        total += term;
    }
    2.0 / std::f64::consts::PI.sqrt() * (-x * x).exp() * total
}

/// The 24 activations, written piecewise as the seed defines them, in f64.
fn act_ref(k: usize, x: f64, a: f64) -> f64 {
    let sig = |v: f64| 1.0 / (1.0 + (-v).exp());
    let softplus = |v: f64| if v > 30.0 { v } else { (1.0 + v.exp()).ln() };
    // The value for x > 0 and the value elsewhere.
    let split = |pos: f64, neg: f64| if x > 0.0 { pos } else { neg };
    let relu6 = |v: f64| {
        if v <= 0.0 {
            0.0
        } else if v >= 6.0 {
            6.0
        } else {
            v
        }
    };
    let (lambda, alpha) = (1.0507009873554804934, 1.6732632423543772848);
    match k {
        0 => split(x, 0.0),
        1 => sig(x),
        2 | 3 => split(x, a * x),
        4 | 5 => split(x, a * (x.exp() - 1.0)),
        6 => split(x, a * ((x / a).exp() - 1.0)),
        7 => split(lambda * x, lambda * alpha * (x.exp() - 1.0)),
        8 => 0.5 * x * (1.0 + erf_ref(x / 2f64.sqrt())),
        9 => 0.5 * x * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x.powi(3))).tanh()),
        10 | 11 => x * sig(x),
        12 => softplus(x),
        13 => x * softplus(x).tanh(),
        14 => {
            if x < -a {
                -a
            } else if x > a {
                a
            } else {
                x
            }
        }
        15 => relu6(x),
        16 => relu6(x + 3.0) / 6.0,
        17 => x * relu6(x + 3.0) / 6.0,
        18 => x / (1.0 + x.abs()),
        19 => x - x.tanh(),
        20 => {
            if x > a {
                x - a
            } else if x < -a {
                x + a
            } else {
                0.0
            }
        }
        21 => {
            if x.abs() > a {
                x
            } else {
                0.0
            }
        }
        22 => {
            if x <= a {
                -7.0
            } else {
                x
            }
        }
        23 => {
            if x > a {
                x
            } else {
                0.0
            }
        }
        _ => unreachable!(),
    }
}

/// Points on both sides of every kink, the kinks themselves, and large values.
const POINTS: [f64; 17] =
    [-40.0, -7.5, -3.0, -2.9, -1.0, -0.75, -0.5, -0.3, 0.0, 0.1, 0.3, 0.5, 1.0, 2.0, 3.5, 6.5, 40.0];

#[test]
fn activations_on_f64_scalars() {
    for a in [0.3f64, 0.5, 1.7] {
        for &x in &POINTS {
            let mut got = acts_a64(x, a).unwrap().to_vec();
            got.extend(acts_b64(x, a).unwrap());
            for (k, g) in got.iter().enumerate() {
                let want = act_ref(k, x, a);
                assert!(
                    approx::relative_eq!(*g, want, epsilon = 1e-14, max_relative = 1e-12),
                    "activation {k} at x = {x}, a = {a}: got {g}, want {want}"
                );
            }
        }
    }
}

#[test]
fn prelu_with_a_slope_per_element() {
    let x = rand2(3, 4, 5).mapv(|v| 3.0 * v);
    let a = rand2(3, 4, 6);
    let want = Array2::from_shape_fn((3, 4), |(i, j)| if x[[i, j]] > 0.0 { x[[i, j]] } else { a[[i, j]] * x[[i, j]] });
    assert_close(&t_prelu_tensor(&x, &a).unwrap(), &want, 1e-7);
}

#[test]
fn gelu_at_known_points() {
    // x * Phi(x) with Phi(1) = 0.841344746068543, Phi(-1) = 0.158655253931457,
    // Phi(2) = 0.977249868051821 (standard normal table).
    let got = |x: f64| acts_a64(x, 0.1).unwrap()[8];
    assert_relative_eq!(got(1.0), 0.841344746068543, max_relative = 1e-13);
    assert_relative_eq!(got(-1.0), -0.158655253931457, max_relative = 1e-12);
    assert_relative_eq!(got(2.0), 2.0 * 0.977249868051821, max_relative = 1e-13);
    assert_eq!(got(0.0), 0.0);
}

/// Inputs for the tensor tests: uniform in [-8, 8) plus the kink points.
fn act_inputs(n: usize, seed: u64) -> Array1<f32> {
    let mut v: Vec<f32> = rand1(n, seed).iter().map(|x| 8.0 * x).collect();
    v.extend(POINTS.iter().map(|&p| p as f32));
    Array1::from(v)
}

/// Compares activation `k` on a tensor with the f64 reference, rounded to f32.
#[track_caller]
fn check_tensor<D: Dimension>(k: usize, got: &Array<f32, D>, x: &Array<f32, D>, a: f32) {
    assert_eq!(got.shape(), x.shape(), "activation {k}: shape");
    for (g, v) in got.iter().zip(x.iter()) {
        let want = act_ref(k, *v as f64, a as f64) as f32;
        assert!(
            approx::relative_eq!(*g, want, epsilon = 1e-6, max_relative = 2e-6),
            "activation {k} at x = {v}, a = {a}: got {g}, want {want}"
        );
    }
}

#[test]
fn activations_on_f32_vectors() {
    let x = act_inputs(40, 1);
    let a = 0.5f32;
    let (r0, r1, r2, r3, r4, r5, r6, r7, r8, r9, r10, r11) = acts_a_r1(&x, a).unwrap();
    let (s0, s1, s2, s3, s4, s5, s6, s7, s8, s9, s10, s11) = acts_b_r1(&x, a).unwrap();
    let all = [r0, r1, r2, r3, r4, r5, r6, r7, r8, r9, r10, r11, s0, s1, s2, s3, s4, s5, s6, s7, s8, s9, s10, s11];
    for (k, got) in all.iter().enumerate() {
        check_tensor(k, got, &x, a);
    }
}

#[test]
fn activations_on_f32_matrices() {
    let x = act_inputs(43, 2).into_shape_with_order((12, 5)).unwrap();
    // The first group reads a column-major view of the same values:
    // generated functions accept any strides.
    let storage = transposed(&x);
    assert!(!storage.t().is_standard_layout());
    let a = 1.25f32;
    let (r0, r1, r2, r3, r4, r5, r6, r7, r8, r9, r10, r11) = acts_a_r2(storage.t(), a).unwrap();
    let (s0, s1, s2, s3, s4, s5, s6, s7, s8, s9, s10, s11) = acts_b_r2(&x, a).unwrap();
    let all = [r0, r1, r2, r3, r4, r5, r6, r7, r8, r9, r10, r11, s0, s1, s2, s3, s4, s5, s6, s7, s8, s9, s10, s11];
    for (k, got) in all.iter().enumerate() {
        check_tensor(k, got, &x, a);
    }
}

// ===========================================================================
// Linear algebra and layers
// ===========================================================================

mod la {
    use einlang::einlang;

    einlang! {
        use std::ml::*;

        pub fn t_matmul(a: [f32; M, K], b: [f32; K, N]) -> [f32; M, N] { matmul(a, b) }
        pub fn t_matmul64(a: [f64; M, K], b: [f64; K, N]) -> [f64; M, N] { matmul(a, b) }
        pub fn t_bmm(a: [f32; B, M, K], b: [f32; B, K, N]) -> [f32; B, M, N] { batch_matmul(a, b) }
        pub fn t_linear(x: [f32; B, I], w: [f32; O, I], b: [f32; O]) -> [f32; B, O] { linear(x, w, b) }
        pub fn t_gemm(a: [f32; P, Q], b: [f32; R, S], c: [f32; M, N], alpha: f32, beta: f32, ta: i32, tb: i32)
            -> [f32; M, N] {
            gemm(a, b, c, alpha, beta, ta, tb)
        }
        pub fn t_transpose(x: [f64; M, N]) -> [f64; N, M] { transpose(x) }
        pub fn t_outer(a: [f32; M], b: [f32; N]) -> [f32; M, N] { outer(a, b) }
        pub fn t_trace(x: [f64; N, N]) -> f64 { trace(x) }
        pub fn t_diag(x: [f64; N, N]) -> [f64; N] { diag_extract(x) }
        pub fn t_diag_construct(v: [f64; N]) -> [f64; N, N] { diag_construct(v) }
        pub fn t_eye(n: i64) { eye(n) }
        pub fn t_tril(x: [f32; M, N], k: i64) -> [f32; M, N] { tril(x, k) }
        pub fn t_triu(x: [f32; M, N], k: i64) -> [f32; M, N] { triu(x, k) }
        pub fn t_frob(x: [f64; M, N]) -> f64 { frobenius_norm(x) }
        pub fn t_kron(a: [f64; M, N], b: [f64; P, Q]) -> [f64; M * P, N * Q] { kron(a, b) }
        pub fn t_softmax(x: [f32; B, C]) -> [f32; B, C] { softmax(x) }
        pub fn t_log_softmax(x: [f64; B, C]) -> [f64; B, C] { log_softmax(x) }
    }
}
use la::*;

fn matmul_loop(a: &Array2<f64>, b: &Array2<f64>) -> Array2<f64> {
    let (m, k) = a.dim();
    let n = b.dim().1;
    Array2::from_shape_fn((m, n), |(i, j)| (0..k).map(|p| a[[i, p]] * b[[p, j]]).sum())
}

fn f64_of<D: Dimension>(a: &Array<f32, D>) -> Array<f64, D> {
    a.mapv(|v| v as f64)
}

#[test]
fn matmul_and_batch_matmul() {
    let a = rand2(5, 7, 11);
    let b = rand2(7, 3, 12);
    assert_close(&t_matmul(&a, &b).unwrap(), &to_f32(&matmul_loop(&f64_of(&a), &f64_of(&b))), 1e-5);
    let a64 = rand2_f64(4, 6, 13);
    let b64 = rand2_f64(6, 2, 14);
    assert_close(&t_matmul64(&a64, &b64).unwrap(), &matmul_loop(&a64, &b64), 1e-12);
    assert!(t_matmul(&a, &a).is_err(), "inner extents 7 and 5 differ");

    let x = rand3(3, 4, 5, 15);
    let y = rand3(3, 5, 2, 16);
    let got = t_bmm(&x, &y).unwrap();
    assert_eq!(got.dim(), (3, 4, 2));
    for n in 0..3 {
        let want =
            matmul_loop(&f64_of(&x.index_axis(Axis(0), n).to_owned()), &f64_of(&y.index_axis(Axis(0), n).to_owned()));
        assert_close(&got.index_axis(Axis(0), n).to_owned(), &to_f32(&want), 1e-5);
    }
}

#[test]
fn linear_uses_out_by_in_weights() {
    let x = rand2(4, 6, 21);
    let w = rand2(3, 6, 22);
    let b = rand1(3, 23);
    let got = t_linear(&x, &w, &b).unwrap();
    let want = Array2::from_shape_fn((4, 3), |(n, o)| {
        (0..6).map(|i| x[[n, i]] as f64 * w[[o, i]] as f64).sum::<f64>() + b[o] as f64
    });
    assert_close(&got, &to_f32(&want), 1e-5);
    // Hand example: y = [1, 2] . rows of w + b.
    let y =
        t_linear(&array![[1.0f32, 2.0]], &array![[1.0f32, 0.0], [0.5, -1.0], [3.0, 4.0]], &array![0.0f32, 1.0, -1.0])
            .unwrap();
    assert_eq!(y, array![[1.0f32, -0.5, 10.0]]);
}

#[test]
fn gemm_with_transpose_flags() {
    let a = rand2(3, 4, 31);
    let b = rand2(4, 5, 32);
    let c = rand2(3, 5, 33);
    let (alpha, beta) = (0.5f32, -2.0f32);
    let ab = matmul_loop(&f64_of(&a), &f64_of(&b));
    let want = to_f32(&(ab * alpha as f64 + f64_of(&c) * beta as f64));
    assert_close(&t_gemm(&a, &b, &c, alpha, beta, 0, 0).unwrap(), &want, 1e-5);
    let at = a.t().to_owned();
    let bt = b.t().to_owned();
    assert_close(&t_gemm(&at, &b, &c, alpha, beta, 1, 0).unwrap(), &want, 1e-5);
    assert_close(&t_gemm(&a, &bt, &c, alpha, beta, 0, 1).unwrap(), &want, 1e-5);
    assert_close(&t_gemm(&at, &bt, &c, alpha, beta, 1, 1).unwrap(), &want, 1e-5);
    assert!(t_gemm(&a, &b, &c, alpha, beta, 1, 0).is_err(), "op(a) is 4x3, b is 4x5");
}

#[test]
fn transpose_outer_trace_diag() {
    let x = rand2_f64(3, 5, 41);
    assert_eq!(t_transpose(&x).unwrap(), x.t().to_owned());

    let u = rand1(4, 42);
    let v = rand1(3, 43);
    let o = t_outer(&u, &v).unwrap();
    assert_eq!(o, Array2::from_shape_fn((4, 3), |(i, j)| u[i] * v[j]));

    let m = array![[1.0f64, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.5]];
    assert_eq!(t_trace(&m).unwrap(), 15.5);
    assert_eq!(t_diag(&m).unwrap(), array![1.0, 5.0, 9.5]);
    assert!(t_trace(&x).is_err(), "a 3x5 matrix has no trace");
    assert_eq!(
        t_diag_construct(&array![2.0f64, -1.0, 0.5]).unwrap(),
        array![[2.0, 0.0, 0.0], [0.0, -1.0, 0.0], [0.0, 0.0, 0.5]]
    );
    let e = t_eye(3).unwrap();
    assert_eq!(e, array![[1.0f32, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]);
    assert_eq!(t_eye(0).unwrap().len(), 0);
}

#[test]
fn tril_and_triu_with_offsets() {
    let x = rand2(4, 5, 51);
    for k in [-2i64, -1, 0, 1, 3] {
        let lo = t_tril(&x, k).unwrap();
        let up = t_triu(&x, k).unwrap();
        for ((i, j), &v) in x.indexed_iter() {
            let (i, j) = (i as i64, j as i64);
            assert_eq!(lo[[i as usize, j as usize]], if j <= i + k { v } else { 0.0 }, "tril k={k} at ({i}, {j})");
            assert_eq!(up[[i as usize, j as usize]], if j >= i + k { v } else { 0.0 }, "triu k={k} at ({i}, {j})");
        }
    }
}

#[test]
fn frobenius_norm_and_kron() {
    let m = array![[3.0f64, 0.0], [-4.0, 12.0]];
    assert_relative_eq!(t_frob(&m).unwrap(), 13.0, max_relative = 1e-15);
    let a = array![[1.0f64, 2.0], [3.0, 4.0], [5.0, 6.0]];
    let b = array![[0.0f64, 1.0, 2.0], [-1.0, 1.0, 0.5]];
    let k = t_kron(&a, &b).unwrap();
    assert_eq!(k.dim(), (6, 6));
    for i in 0..3 {
        for j in 0..2 {
            for p in 0..2 {
                for q in 0..3 {
                    assert_eq!(k[[i * 2 + p, j * 3 + q]], a[[i, j]] * b[[p, q]]);
                }
            }
        }
    }
}

/// Row softmax in f64, written as the textbook formula (no max shift: the
/// inputs are small).
fn softmax_rows(x: &Array2<f64>) -> Array2<f64> {
    let mut y = x.mapv(f64::exp);
    for mut row in y.rows_mut() {
        let s: f64 = row.sum();
        row.mapv_inplace(|v| v / s);
    }
    y
}

#[test]
fn softmax_and_log_softmax_rows() {
    let x = rand2(4, 6, 61).mapv(|v| 3.0 * v);
    let got = t_softmax(&x).unwrap();
    assert_close(&got, &to_f32(&softmax_rows(&f64_of(&x))), 1e-6);
    for row in got.rows() {
        assert_relative_eq!(row.sum(), 1.0, max_relative = 1e-6);
    }
    let x64 = rand2_f64(3, 5, 62).mapv(|v| 4.0 * v);
    assert_close(&t_log_softmax(&x64).unwrap(), &softmax_rows(&x64).mapv(f64::ln), 1e-12);
    // The max shift keeps large logits finite: softmax([1000, 1000 + ln 3]) = [1/4, 3/4].
    let big = array![[1000.0f64, 1000.0 + 3f64.ln()]];
    let ls = t_log_softmax(&big).unwrap();
    assert_relative_eq!(ls[[0, 0]], (0.25f64).ln(), max_relative = 1e-9);
    assert_relative_eq!(ls[[0, 1]], (0.75f64).ln(), max_relative = 1e-9);
    let sm = t_softmax(&big.mapv(|v| v as f32)).unwrap();
    assert_relative_eq!(sm[[0, 0]], 0.25, max_relative = 1e-3);
    assert_relative_eq!(sm[[0, 1]], 0.75, max_relative = 1e-3);
}

// ===========================================================================
// Losses
// ===========================================================================

mod loss {
    use einlang::einlang;

    einlang! {
        use std::ml::*;

        pub fn t_ce(x: [f64; B, C], t: [f64; B, C]) -> ([f64; B], [f64; B]) {
            (cross_entropy_loss(x, t), softmax_cross_entropy_loss(x, t))
        }
        pub fn t_sparse_ce(x: [f32; B, C], labels: [i64; B]) -> [f32; B] { sparse_cross_entropy(x, labels) }
        pub fn t_nll(lp: [f64; B, C], labels: [i32; B]) -> [f64; B] { nll_loss(lp, labels) }
        pub fn t_regression(p: [f32; B, F], t: [f32; B, F], delta: f32) -> ([f32; B], [f32; B], [f32; B]) {
            (mse_loss(p, t), mae_loss(p, t), huber_loss(p, t, delta))
        }
        pub fn t_regression64(p: [f64; B, F], t: [f64; B, F], delta: f64) -> ([f64; B], [f64; B], [f64; B]) {
            (mse_loss(p, t), mae_loss(p, t), huber_loss(p, t, delta))
        }
        pub fn t_bce(p: [f64; B, F], t: [f64; B, F]) -> [f64; B] { binary_cross_entropy(p, t) }
        pub fn t_bce32(p: [f32; B, F], t: [f32; B, F]) -> [f32; B] { binary_cross_entropy(p, t) }
        pub fn t_cosine(a: [f32; B, F], b: [f32; B, F]) -> [f32; B] { cosine_similarity(a, b) }
    }
}
use loss::*;

#[test]
fn cross_entropy_with_probability_targets() {
    let x = rand2_f64(4, 5, 71).mapv(|v| 3.0 * v);
    let mut rng = Rng::new(72);
    // Soft labels: positive rows summing to 1.
    let mut t = Array2::from_shape_fn((4, 5), |_| rng.range(0.0, 1.0));
    for mut row in t.rows_mut() {
        let s = row.sum();
        row.mapv_inplace(|v| v / s);
    }
    let p = softmax_rows(&x);
    let want = Array1::from_shape_fn(4, |n| -(0..5).map(|j| t[[n, j]] * p[[n, j]].ln()).sum::<f64>());
    let (a, b) = t_ce(&x, &t).unwrap();
    assert_close(&a, &want, 1e-12);
    assert_close(&b, &want, 1e-12);
    // One-hot target on a two-class row: -ln(e^2 / (e^0 + e^2)) = ln(1 + e^-2).
    let (a, _) = t_ce(&array![[0.0, 2.0]], &array![[0.0, 1.0]]).unwrap();
    assert_relative_eq!(a[0], (1.0 + (-2.0f64).exp()).ln(), max_relative = 1e-14);
}

#[test]
fn cross_entropy_with_class_labels() {
    let x = rand2(5, 4, 81).mapv(|v| 4.0 * v);
    let labels = array![0i64, 3, 1, 1, 2];
    let p = softmax_rows(&f64_of(&x));
    let want = Array1::from_shape_fn(5, |n| -p[[n, labels[n] as usize]].ln());
    assert_close(&t_sparse_ce(&x, &labels).unwrap(), &to_f32(&want), 1e-5);
    assert!(t_sparse_ce(&x, &array![0i64, 4, 1, 1, 2]).is_err(), "label 4 of 4 classes");
    assert!(t_sparse_ce(&x, &array![0i64, -1, 1, 1, 2]).is_err(), "negative label");

    let lp = array![[-0.5f64, -1.5, -2.0], [-3.0, -0.25, -1.0]];
    assert_eq!(t_nll(&lp, &array![2, 1]).unwrap(), array![2.0, 0.25]);
}

#[test]
fn regression_losses_average_each_row() {
    let p = rand2(3, 7, 91).mapv(|v| 2.0 * v);
    let t = rand2(3, 7, 92).mapv(|v| 2.0 * v);
    let delta = 0.6f32;
    let (mse, mae, huber) = t_regression(&p, &t, delta).unwrap();
    let d = f64_of(&p) - f64_of(&t);
    let delta64 = delta as f64;
    let mean_rows =
        |f: &dyn Fn(f64) -> f64| Array1::from_shape_fn(3, |n| (0..7).map(|j| f(d[[n, j]])).sum::<f64>() / 7.0);
    assert_close(&mse, &to_f32(&mean_rows(&|v| v * v)), 1e-5);
    assert_close(&mae, &to_f32(&mean_rows(&|v| v.abs())), 1e-5);
    let huber_ref = |v: f64| if v.abs() <= delta64 { 0.5 * v * v } else { delta64 * (v.abs() - 0.5 * delta64) };
    assert_close(&huber, &to_f32(&mean_rows(&huber_ref)), 1e-5);
    // Both branches of huber are reached.
    assert!(d.iter().any(|v| v.abs() <= delta64) && d.iter().any(|v| v.abs() > delta64));

    // By hand: differences [1, -3] and delta 2: mse 5, mae 2, huber (0.5 + 2 * (3 - 1)) / 2 = 2.25.
    let (mse, mae, huber) = t_regression64(&array![[1.0, 0.0]], &array![[0.0, 3.0]], 2.0).unwrap();
    assert_eq!((mse[0], mae[0], huber[0]), (5.0, 2.0, 2.25));
}

#[test]
fn binary_cross_entropy_sums_each_row() {
    let mut rng = Rng::new(101);
    let p = Array2::from_shape_fn((3, 6), |_| rng.range(0.01, 0.99));
    let t = Array2::from_shape_fn((3, 6), |_| if rng.unit() < 0.5 { 0.0 } else { 1.0 });
    let want = Array1::from_shape_fn(3, |n| {
        -(0..6).map(|j| t[[n, j]] * p[[n, j]].ln() + (1.0 - t[[n, j]]) * (1.0 - p[[n, j]]).ln()).sum::<f64>()
    });
    assert_close(&t_bce(&p, &t).unwrap(), &want, 1e-12);
    // Probabilities of exactly 0 and 1 are clipped to 1e-7 and 1 - 1e-7.
    let got = t_bce(&array![[0.0, 1.0]], &array![[1.0, 0.0]]).unwrap();
    assert_relative_eq!(got[0], -2.0 * 1e-7f64.ln(), max_relative = 1e-9);
    let got = t_bce32(&array![[0.25f32, 1.0]], &array![[1.0f32, 1.0]]).unwrap();
    assert_relative_eq!(got[0], -(0.25f32.ln()), max_relative = 1e-6);
}

#[test]
fn cosine_similarity_of_rows() {
    let a = rand2(4, 5, 111);
    let b = rand2(4, 5, 112);
    let want = Array1::from_shape_fn(4, |n| {
        let (x, y) = (a.row(n).mapv(|v| v as f64), b.row(n).mapv(|v| v as f64));
        x.dot(&y) / (x.dot(&x).sqrt() * y.dot(&y).sqrt())
    });
    assert_close(&t_cosine(&a, &b).unwrap(), &to_f32(&want), 1e-5);
    let got = t_cosine(&array![[1.0f32, 0.0], [1.0, 1.0]], &array![[0.0f32, 2.0], [-3.0, -3.0]]).unwrap();
    assert_close(&got, &array![0.0f32, -1.0], 1e-6);
}

// ===========================================================================
// Pooling and convolution
// ===========================================================================

mod pool {
    use einlang::einlang;

    einlang! {
        use std::ml::*;

        pub fn t_max_pool(x: [f32; C, H, W], kh: i64, kw: i64) { max_pool2d(x, kh, kw) }
        pub fn t_max_pool2(x: [f32; C, H, W], kh: i64, kw: i64) { max_pool2d_stride2(x, kh, kw) }
        pub fn t_avg_pool(x: [f64; C, H, W], kh: i64, kw: i64) { avg_pool2d(x, kh, kw) }
        pub fn t_avg_pool2(x: [f64; C, H, W], kh: i64, kw: i64) { avg_pool2d_stride2(x, kh, kw) }
        pub fn t_global(x: [f32; C, H, W]) -> ([f32; C], [f32; C]) { (global_average_pool(x), global_max_pool(x)) }
        pub fn t_conv(x: [f32; C, H, W], k: [f32; O, C, KH, KW], b: [f32; O]) { conv2d(x, k, b, 1, 1, 0, 0, 1, 1) }
        pub fn t_conv_seed(
            x: [f32; C, H, W], k: [f32; O, C, KH, KW], b: [f32; O], s: i32, ph: i32, pw: i32, dh: i32, dw: i32,
        ) -> [f32; O, ?, ?] {
            conv2d(x, k, b, s, s, ph, pw, dh, dw)
        }
        pub fn t_conv_batch(x: [f32; N, C, H, W], k: [f32; O, C, KH, KW], b: [f32; O]) -> [f32; N, O, ?, ?] {
            conv2d(x, k, b, 2, 2, 1, 1, 1, 1)
        }
        pub fn t_conv_padded(
            x: [f32; C, H, W], k: [f32; O, C, KH, KW], b: [f32; O], ph: i64, pw: i64, dh: i64, dw: i64,
        ) {
            conv2d_padded(x, k, b, ph, pw, dh, dw)
        }
        pub fn t_conv_stride2(x: [f32; C, H, W], k: [f32; O, C, KH, KW], b: [f32; O], ph: i64, pw: i64) {
            conv2d_stride2(x, k, b, ph, pw)
        }
    }
}
use pool::*;

/// Windowed reduction of each channel, as plain loops.
fn pool_ref(x: &Array3<f64>, kh: usize, kw: usize, stride: usize, f: fn(&[f64]) -> f64) -> Array3<f64> {
    let (c, h, w) = x.dim();
    let (ho, wo) = ((h - kh) / stride + 1, (w - kw) / stride + 1);
    Array3::from_shape_fn((c, ho, wo), |(ch, i, j)| {
        let mut window = Vec::new();
        for m in 0..kh {
            for n in 0..kw {
                window.push(x[[ch, i * stride + m, j * stride + n]]);
            }
        }
        f(&window)
    })
}

fn max_of(v: &[f64]) -> f64 {
    v.iter().cloned().fold(f64::NEG_INFINITY, f64::max)
}

fn mean_of(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

const POOL_CASES: [(usize, usize, usize, usize, usize); 5] =
    [(3, 7, 6, 2, 2), (2, 5, 8, 3, 2), (1, 4, 4, 4, 4), (2, 6, 5, 1, 1), (1, 9, 9, 3, 3)];

#[test]
fn max_pool_windows_and_strides() {
    // 2x2 windows, stride 2, by hand.
    let x = Array3::from_shape_vec((1, 4, 4), (0..16).map(|v| ((v * 7) % 16) as f32).collect()).unwrap();
    // x = [[0, 7, 14, 5], [12, 3, 10, 1], [8, 15, 6, 13], [4, 11, 2, 9]]
    assert_eq!(
        t_max_pool2(&x, 2, 2).unwrap(),
        Array3::from_shape_vec((1, 2, 2), vec![12.0, 14.0, 15.0, 13.0]).unwrap()
    );
    for (idx, &(c, h, w, kh, kw)) in POOL_CASES.iter().enumerate() {
        let x = rand3(c, h, w, 121 + idx as u64);
        for stride in [1, 2] {
            let got =
                if stride == 1 { t_max_pool(&x, kh as i64, kw as i64) } else { t_max_pool2(&x, kh as i64, kw as i64) };
            let want = pool_ref(&f64_of(&x), kh, kw, stride, max_of);
            assert_eq!(got.unwrap(), to_f32(&want), "max pool {c}x{h}x{w}, kernel {kh}x{kw}, stride {stride}");
        }
    }
    // No 2x2 window fits in one row: the output has no rows.
    assert_eq!(t_max_pool2(&rand3(1, 1, 4, 1), 2, 2).unwrap().dim(), (1, 0, 2));
    assert_eq!(t_max_pool(&rand3(1, 1, 4, 1), 2, 2).unwrap().dim(), (1, 0, 3));
    // One row and a window of three: the extent 1 - 3 + 1 is negative.
    assert!(t_max_pool(&rand3(1, 1, 4, 1), 3, 2).is_err());
}

#[test]
fn avg_pool_windows_and_strides() {
    for (idx, &(c, h, w, kh, kw)) in POOL_CASES.iter().enumerate() {
        let x = f64_of(&rand3(c, h, w, 131 + idx as u64));
        assert_close(&t_avg_pool(&x, kh as i64, kw as i64).unwrap(), &pool_ref(&x, kh, kw, 1, mean_of), 1e-12);
        assert_close(&t_avg_pool2(&x, kh as i64, kw as i64).unwrap(), &pool_ref(&x, kh, kw, 2, mean_of), 1e-12);
    }
    let x = Array3::from_shape_vec((1, 2, 4), vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 9.0]).unwrap();
    assert_eq!(t_avg_pool2(&x, 2, 2).unwrap(), Array3::from_shape_vec((1, 1, 2), vec![3.5, 5.75]).unwrap());
}

#[test]
fn global_pools() {
    let x = rand3(3, 4, 5, 141);
    let (avg, mx) = t_global(&x).unwrap();
    for c in 0..3 {
        let ch = x.index_axis(Axis(0), c).mapv(|v| v as f64);
        assert_relative_eq!(avg[c], (ch.sum() / 20.0) as f32, max_relative = 1e-6);
        assert_eq!(mx[c] as f64, ch.iter().cloned().fold(f64::NEG_INFINITY, f64::max));
    }
}

/// Convolution with zero padding, stride and dilation, as plain loops in f64.
fn conv_ref(
    x: &Array3<f32>,
    k: &Array4<f32>,
    b: &Array1<f32>,
    stride: usize,
    p: (usize, usize),
    d: (usize, usize),
) -> Array3<f32> {
    let (c, h, w) = x.dim();
    let (o, _, kh, kw) = k.dim();
    let ho = (h + 2 * p.0 - d.0 * (kh - 1) - 1) / stride + 1;
    let wo = (w + 2 * p.1 - d.1 * (kw - 1) - 1) / stride + 1;
    Array3::from_shape_fn((o, ho, wo), |(oo, i, j)| {
        let mut acc = b[oo] as f64;
        for cc in 0..c {
            for m in 0..kh {
                for n in 0..kw {
                    let ih = (i * stride + m * d.0) as i64 - p.0 as i64;
                    let iw = (j * stride + n * d.1) as i64 - p.1 as i64;
                    if ih >= 0 && ih < h as i64 && iw >= 0 && iw < w as i64 {
                        acc += x[[cc, ih as usize, iw as usize]] as f64 * k[[oo, cc, m, n]] as f64;
                    }
                }
            }
        }
        acc as f32
    })
}

#[test]
fn conv2d_by_hand() {
    // One channel, a 2x2 kernel of ones, bias 0.5.
    let x = Array3::from_shape_vec((1, 2, 3), vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
    let k = Array4::from_elem((1, 1, 2, 2), 1.0f32);
    let b = array![0.5f32];
    assert_eq!(t_conv(&x, &k, &b).unwrap(), Array3::from_shape_vec((1, 1, 2), vec![12.5, 16.5]).unwrap());
    // Padding 1 on each side: 3x4 windows over the zero-bordered image.
    let got = t_conv_padded(&x, &k, &b, 1, 1, 1, 1).unwrap();
    let want = vec![1.5, 3.5, 5.5, 3.5, 5.5, 12.5, 16.5, 9.5, 4.5, 9.5, 11.5, 6.5];
    assert_eq!(got, Array3::from_shape_vec((1, 3, 4), want).unwrap());
    assert!(t_conv(&x, &rand4(1, 2, 2, 2, 1), &b).is_err(), "kernel has 2 input channels, image 1");
}

#[test]
fn conv2d_against_loops() {
    let cases = [
        // (C, H, W, O, KH, KW, pad, dilation)
        (3, 6, 7, 2, 3, 3, (0, 0), (1, 1)),
        (2, 5, 5, 4, 3, 2, (1, 1), (1, 1)),
        (2, 8, 7, 3, 3, 3, (1, 2), (1, 1)),
        (1, 9, 8, 2, 2, 3, (0, 1), (2, 2)),
        (4, 4, 4, 1, 1, 1, (2, 0), (1, 1)),
        (2, 7, 9, 3, 3, 2, (0, 0), (3, 1)),
    ];
    for (idx, &(c, h, w, o, kh, kw, p, d)) in cases.iter().enumerate() {
        let seed = 150 + 3 * idx as u64;
        let x = rand3(c, h, w, seed);
        let k = rand4(o, c, kh, kw, seed + 1);
        let b = rand1(o, seed + 2);
        let case = format!("case {idx}: {c}x{h}x{w}, kernel {o}x{c}x{kh}x{kw}, pad {p:?}, dilation {d:?}");
        let got = t_conv_padded(&x, &k, &b, p.0 as i64, p.1 as i64, d.0 as i64, d.1 as i64).unwrap();
        assert_eq!(got.dim(), conv_ref(&x, &k, &b, 1, p, d).dim(), "{case}");
        assert_close(&got, &conv_ref(&x, &k, &b, 1, p, d), 1e-5);
        if p == (0, 0) && d == (1, 1) {
            assert_close(&t_conv(&x, &k, &b).unwrap(), &conv_ref(&x, &k, &b, 1, p, d), 1e-5);
        }
        for s in [1, 2] {
            let got = t_conv_seed(&x, &k, &b, s, p.0 as i32, p.1 as i32, d.0 as i32, d.1 as i32).unwrap();
            assert_close(&got, &conv_ref(&x, &k, &b, s as usize, p, d), 1e-5);
        }
        if d == (1, 1) {
            let batch = einlang::ndarray::stack(einlang::ndarray::Axis(0), &[x.view(), x.mapv(|v| -v).view()]).unwrap();
            let got = t_conv_batch(&batch, &k, &b).unwrap();
            let neg = conv_ref(&x.mapv(|v| -v), &k, &b, 2, (1, 1), d);
            assert_close(
                &got.index_axis(einlang::ndarray::Axis(0), 0).to_owned(),
                &conv_ref(&x, &k, &b, 2, (1, 1), d),
                1e-5,
            );
            assert_close(&got.index_axis(einlang::ndarray::Axis(0), 1).to_owned(), &neg, 1e-5);
            let got = t_conv_stride2(&x, &k, &b, p.0 as i64, p.1 as i64).unwrap();
            assert_eq!(got.dim(), conv_ref(&x, &k, &b, 2, p, d).dim(), "{case}, stride 2");
            assert_close(&got, &conv_ref(&x, &k, &b, 2, p, d), 1e-5);
        }
    }
}

// ===========================================================================
// Normalization and utilities
// ===========================================================================

mod norm {
    use einlang::einlang;

    einlang! {
        use std::ml::*;

        pub fn t_layer_norm(x: [f32; B, D], s: [f32; D], b: [f32; D], eps: f32) -> [f32; B, D] {
            layer_normalization(x, s, b, eps, -1)
        }
        pub fn t_layer_norm3(x: [f64; A, B, D], s: [f64; D], b: [f64; D], axis: i32) -> [f64; A, B, D] {
            layer_normalization(x, s, b, 1e-5, axis)
        }
        pub fn t_batch_norm(x: [f64; N, C], s: [f64; C], b: [f64; C], m: [f64; C], v: [f64; C], eps: f64)
            -> [f64; N, C] {
            batch_normalization(x, s, b, m, v, eps)
        }
        pub fn t_norms(v: [f64; N], x: [f32; B, M]) -> (f64, [f32; B, M], [f32; B, M]) {
            (vec_norm_2(v), l2_normalize(x, 0.0), flip(x))
        }
        pub fn t_l2_3(x: [f64; A, B, C], eps: f64) -> [f64; A, B, C] {
            l2_normalize(x, eps)
        }
        pub fn t_ml_flatten(x: [i32; M, N]) -> [i32; M * N] {
            flatten(x)
        }
        pub fn t_eye_literal() -> [f32; 2, 2] { eye(2 as i64) }
        pub fn t_eye_suffix() -> [f32; 3, 3] { eye(3i64) }
    }
}
use norm::*;

#[test]
fn layer_and_batch_normalization() {
    let x = rand2(3, 8, 171).mapv(|v| 5.0 * v + 1.0);
    let s = rand1(8, 172);
    let b = rand1(8, 173);
    let eps = 1e-5f32;
    let got = t_layer_norm(&x, &s, &b, eps).unwrap();
    let want = Array2::from_shape_fn((3, 8), |(n, j)| {
        let row: Vec<f64> = (0..8).map(|k| x[[n, k]] as f64).collect();
        let mean = row.iter().sum::<f64>() / 8.0;
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / 8.0;
        s[j] as f64 * (row[j] - mean) / (var + eps as f64).sqrt() + b[j] as f64
    });
    assert_close(&got, &to_f32(&want), 1e-5);

    // Rank 3, the last axis given as rank - 1; another axis is an error.
    let x3 = Array3::from_shape_fn((2, 3, 5), |(a, b, d)| ((a * 31 + b * 7 + d * 3) % 11) as f64 - 4.0);
    let s3 = array![1.0, 0.5, -1.0, 2.0, 0.25];
    let b3 = array![0.0, 0.1, 0.2, 0.3, 0.4];
    let got = t_layer_norm3(&x3, &s3, &b3, 2).unwrap();
    for a in 0..2 {
        for bb in 0..3 {
            let row: Vec<f64> = (0..5).map(|d| x3[[a, bb, d]]).collect();
            let mean = row.iter().sum::<f64>() / 5.0;
            let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / 5.0;
            for d in 0..5 {
                let want = s3[d] * (row[d] - mean) / (var + 1e-5).sqrt() + b3[d];
                assert!((got[[a, bb, d]] - want).abs() < 1e-12);
            }
        }
    }
    assert!(matches!(t_layer_norm3(&x3, &s3, &b3, 1), Err(einlang::Error::Assert { .. })));

    let x = rand2_f64(4, 3, 174);
    let (s, b, m) = (array![1.0, 2.0, -0.5], array![0.0, 0.1, 0.2], array![0.3, -0.2, 0.0]);
    let v = array![1.0, 0.25, 4.0];
    let got = t_batch_norm(&x, &s, &b, &m, &v, 1e-3).unwrap();
    let want = Array2::from_shape_fn((4, 3), |(n, c)| s[c] * (x[[n, c]] - m[c]) / (v[c] + 1e-3f64).sqrt() + b[c]);
    assert_close(&got, &want, 1e-12);
}

#[test]
fn norms_and_flip() {
    let x = array![[3.0f32, 4.0, 0.0], [1.0, -2.0, 2.0]];
    let (n, unit, flipped) = t_norms(&array![2.0, -3.0, 6.0], &x).unwrap();
    assert_relative_eq!(n, 7.0, max_relative = 1e-15);
    assert_close(&unit, &array![[0.6f32, 0.8, 0.0], [1.0 / 3.0, -2.0 / 3.0, 2.0 / 3.0]], 1e-6);
    let x3 = Array3::from_shape_fn((2, 2, 3), |(a, b, c)| (a as f64) + 0.5 * (b as f64) - (c as f64) + 0.25);
    let got = t_l2_3(&x3, 0.01).unwrap();
    for a in 0..2 {
        for b in 0..2 {
            let norm = ((0..3).map(|c| x3[[a, b, c]] * x3[[a, b, c]]).sum::<f64>() + 0.01).sqrt();
            for c in 0..3 {
                assert!((got[[a, b, c]] - x3[[a, b, c]] / norm).abs() < 1e-14);
            }
        }
    }
    assert_eq!(t_ml_flatten(&array![[1, 2], [3, 4], [5, 6]]).unwrap().to_vec(), vec![1, 2, 3, 4, 5, 6]);
    assert_eq!(flipped, array![[0.0f32, 4.0, 3.0], [2.0, -2.0, 1.0]]);
    assert_eq!(t_eye_literal().unwrap(), array![[1.0f32, 0.0], [0.0, 1.0]]);
    assert_eq!(t_eye_suffix().unwrap(), Array2::from_shape_fn((3, 3), |(i, j)| if i == j { 1.0f32 } else { 0.0 }));
}
