//! The second half of `std::ml` (reductions, indexing, quantization,
//! attention, shape operations, ONNX-style convolution and pooling) against
//! independent references: hand-written loops over the same inputs, or
//! values derived by hand.

mod common;

use common::*;
use einlang::einlang;
use einlang::ndarray::{array, Array, Array1, Array2, Array3, Array4, ArrayD, Axis, Dimension, IxDyn};

einlang! {
    use std::ml::*;

    pub fn reduce2(x: [f32; A, B]) -> (
        [f32; A], [f32; A], [f32; A], [f32; A], [f32; A],
        [f32; A], [f32; A], [f32; A], [f32; A], [f32; A],
    ) {
        (reduce_mean(x), reduce_sum(x), reduce_max(x), reduce_min(x), reduce_prod(x),
         reduce_l1(x), reduce_l2(x), reduce_sum_square(x), reduce_log_sum(abs(x)), reduce_log_sum_exp(x))
    }
    pub fn reduce3(x: [f64; A, B, C]) -> (
        [f64; A, B], [f64; A, B], [f64; A, B], [f64; A, B], [f64; A, B],
        [f64; A, B], [f64; A, B], [f64; A, B], [f64; A, B], [f64; A, B],
    ) {
        (reduce_mean(x), reduce_sum(x), reduce_max(x), reduce_min(x), reduce_prod(x),
         reduce_l1(x), reduce_l2(x), reduce_sum_square(x), reduce_log_sum(abs(x)), reduce_log_sum_exp(x))
    }
    /// Of a vector, each reduction is a scalar.
    pub fn reduce1(x: [f64; N]) -> (f64, f64, f64, f64, f64, f64, f64, f64, f64, f64) {
        (reduce_mean(x), reduce_sum(x), reduce_max(x), reduce_min(x), reduce_prod(x),
         reduce_l1(x), reduce_l2(x), reduce_sum_square(x), reduce_log_sum(abs(x)), reduce_log_sum_exp(x))
    }
    pub fn cumsum1(x: [f32; N]) -> [f32; N] { cumsum(x) }
    pub fn cumsum2(x: [f64; A, N]) -> [f64; A, N] { cumsum(x) }

    pub fn inorm32(x: [f32; N, C, H, W], s: [f32; C], b: [f32; C]) -> [f32; N, C, H, W] {
        instance_normalization(x, s, b, 1e-5)
    }
    pub fn inorm64(x: [f64; N, C, H, W], s: [f64; C], b: [f64; C]) -> [f64; N, C, H, W] {
        instance_normalization(x, s, b, 1e-5)
    }
    pub fn norms64(m: [f64; A, B], v: [f64; N]) -> [f64; 5] {
        [matrix_norm_frobenius(m), matrix_norm_1(m), matrix_norm_inf(m), vec_norm_1(v), vec_norm_inf(v)]
    }
    pub fn norms32(m: [f32; A, B], v: [f32; N]) -> [f32; 5] {
        [matrix_norm_frobenius(m), matrix_norm_1(m), matrix_norm_inf(m), vec_norm_1(v), vec_norm_inf(v)]
    }

    pub fn gather1(x: [f32; A], i: [i64; K]) -> [f32; K] { gather(x, i, 0) }
    pub fn gather2(x: [f64; A, B], i: [i64; K], axis: i64) -> [f64; K, B] { gather(x, i, axis) }
    pub fn gather3(x: [i32; A, B, C], i: [i32; K]) -> [i32; K, B, C] { gather(x, i, 0) }
    pub fn gather_el2(x: [f32; A, B], i: [i64; C, D], axis: i64) -> [f32; C, D] { gather_elements(x, i, axis) }
    pub fn gather_el3(x: [f64; A, B, C], i: [i64; D, E, F], axis: i64) -> [f64; D, E, F] {
        gather_elements(x, i, axis)
    }
    pub fn scatter_el2(x: [f32; A, B], i: [i64; C, D], u: [f32; C, D], axis: i64) -> [f32; A, B] {
        scatter_elements(x, i, u, axis)
    }
    pub fn scatter_el3(x: [f64; A, B, C], i: [i64; D, E, F], u: [f64; D, E, F], axis: i64) -> [f64; A, B, C] {
        scatter_elements(x, i, u, axis)
    }
    pub fn onehot32(i: [i64; N], depth: i64, v: [f32; 2]) -> [f32; N, ?] { onehot(i, depth, v) }
    pub fn onehot64(i: [i32; N], depth: i64, v: [f64; 2]) -> [f64; N, ?] { onehot(i, depth, v) }

    pub fn quant1(x: [f32; N], s: f32, z: f32) -> ([f32; N], [f32; N]) {
        (quantize_linear(x, s, z), dequantize_linear(x, s, z))
    }
    pub fn quant2(x: [f32; A, B], s: f32, z: f32) -> ([f32; A, B], [f32; A, B]) {
        (quantize_linear(x, s, z), dequantize_linear(x, s, z))
    }
    pub fn quant3(x: [f64; A, B, C], s: f64, z: f64) -> ([f64; A, B, C], [f64; A, B, C]) {
        (quantize_linear(x, s, z), dequantize_linear(x, s, z))
    }
    pub fn qmm(a: [i8; M, K], sa: f32, b: [i8; K, N], sb: f32) -> [f32; M, N] { qmatmul(a, sa, b, sb) }
    pub fn qlin(x: [i8; K], sx: f64, w: [i8; K, N], sw: f64, b: [f32; N]) -> [f32; N] { qlinear(x, sx, w, sw, b) }

    pub fn attn32(q: [f32; B, S, D], k: [f32; B, T, D], v: [f32; B, T, D], scale: f32, mask: [f32; B, S, T]) -> (
        [f32; B, S, D], [f32; B, S, D], [f32; B, S, D], [f32; B, S, D],
    ) {
        (attention(q, k, v, scale), attention_dummy(q, k, v, scale),
         multi_head_attention_simple(q, k, v, 2, scale), multi_head_attention(q, k, v, 2, scale, mask))
    }
    pub fn attn64(q: [f64; B, S, D], k: [f64; B, T, D], v: [f64; B, T, D], heads: i64, mask: [f64; B, S, T]) -> (
        [f64; B, S, D], [f64; B, S, D],
    ) {
        (multi_head_attention_simple(q, k, v, heads, 0.25), multi_head_attention(q, k, v, heads, 0.25, mask))
    }

    pub fn shape1(a: [f32; N], b: [f32; M], shift: i64) -> ([f32; ?], [f32; ?], [f32; N], [f32; ?]) {
        (concat(a, b), tile(a, 3), roll(a, shift), repeat_interleave(a, 2))
    }
    pub fn shape2(a: [f64; R, N], b: [f64; R, M], shift: i64) -> ([f64; R, ?], [f64; R, ?], [f64; R, N], [f64; R, ?]) {
        (concat(a, b), tile(a, 2), roll(a, shift), repeat_interleave(a, 3))
    }
    pub fn shape3(a: [f32; Q, R, N], b: [f32; Q, R, M], shift: i64) -> (
        [f32; Q, R, ?], [f32; Q, R, ?], [f32; Q, R, N], [f32; Q, R, ?],
    ) {
        (concat(a, b), tile(a, 2), roll(a, shift), repeat_interleave(a, 2))
    }
    pub fn pad2(a: [f32; M, N], p: [i64; 1], v: f32) -> [f32; ?, ?] { pad(a, p, v) }
    pub fn squeeze3(a: [f32; 1, M, N], b: [f64; M, N, 1]) -> ([f32; M, N], [f64; M, N]) {
        (squeeze_first(a), squeeze_last(b))
    }
    pub fn squeeze_bad(a: [f32; M, N]) -> [f32; N] { squeeze_first(a) }
    pub fn unsqueeze2(a: [f32; M, N]) -> ([f32; 1, M, N], [f32; M, N, 1]) { (unsqueeze_first(a), unsqueeze_last(a)) }
    pub fn unsqueeze1(a: [f64; N]) -> ([f64; 1, N], [f64; N, 1]) { (unsqueeze_first(a), unsqueeze_last(a)) }
    pub fn expand2(a: [f32; M, N], s: [i64; 2]) -> [f32; ?, ?] { expand(a, s) }

    pub fn conv32(x: [f32; N, C, H, W], w: [f32; M, K, P, Q], b: [f32; M], s: [i64; 2], p: [i64; 4], d: [i64; 2], g: i64)
        -> [f32; N, M, ?, ?] { conv(x, w, b, s, p, d, g) }
    /// The seed's spelling: `i32` literal vectors.
    pub fn conv_seed(x: [f32; N, C, H, W], w: [f32; M, K, P, Q], b: [f32; M]) -> [f32; N, M, ?, ?] {
        conv(x, w, b, [2, 1], [1, 2, 0, 1], [1, 2], 1)
    }
    pub fn qconv8(x: [i8; N, C, H, W], xs: f32, w: [i8; M, K, P, Q], ws: f32, b: [f32; M], s: [i64; 2], p: [i64; 4],
        d: [i64; 2], g: i64) -> [f32; N, M, ?, ?] { qconv(x, xs, w, ws, b, s, p, d, g) }
    pub fn dwconv64(x: [f64; N, C, H, W], w: [f64; C, 1, P, Q], b: [f64; C], s: [i64; 2], p: [i64; 2], d: [i64; 2])
        -> [f64; N, C, ?, ?] { depthwise_conv(x, w, b, s, p, d) }
    pub fn convt32(x: [f32; N, C, H, W], w: [f32; C, M, P, Q], b: [f32; M], s: [i64; 2], p: [i64; 2], o: [i64; 2])
        -> [f32; N, M, ?, ?] { conv_transpose(x, w, b, s, p, o) }
    pub fn pool64(x: [f64; N, C, H, W], k: [i64; 2], s: [i64; 2], p: [i64; 2]) -> ([f64; N, C, ?, ?], [f64; N, C, ?, ?]) {
        (max_pool(x, k, s, p), average_pool(x, k, s, p))
    }
    pub fn pool32(x: [f32; N, C, H, W], k: [i64; 2], s: [i64; 2], p: [i64; 2]) -> ([f32; N, C, ?, ?], [f32; N, C, ?, ?]) {
        (max_pool(x, k, s, p), average_pool(x, k, s, p))
    }
}

// ===========================================================================
// Reference helpers
// ===========================================================================

/// Folds every last-axis lane of `x` with `f`, in f64: the result drops the
/// last axis.
fn lanes_ref<A: Copy + Into<f64>, D: Dimension>(x: &Array<A, D>, f: impl Fn(&[f64]) -> f64) -> ArrayD<f64> {
    let xd = x.mapv(|v| v.into()).into_dyn();
    let last = Axis(xd.ndim() - 1);
    let shape: Vec<usize> = xd.shape()[..xd.ndim() - 1].to_vec();
    let vals: Vec<f64> = xd.lanes(last).into_iter().map(|l| f(&l.to_vec())).collect();
    ArrayD::from_shape_vec(IxDyn(&shape), vals).unwrap()
}

fn reductions_ref(l: &[f64]) -> [f64; 10] {
    let n = l.len() as f64;
    let sum: f64 = l.iter().sum();
    let max = l.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let min = l.iter().cloned().fold(f64::INFINITY, f64::min);
    let mut prod = 1.0;
    for v in l {
        prod *= v;
    }
    let l1: f64 = l.iter().map(|v| v.abs()).sum();
    let sq: f64 = l.iter().map(|v| v * v).sum();
    let lse = l.iter().map(|v| v.exp()).sum::<f64>().ln();
    [sum / n, sum, max, min, prod, l1, sq.sqrt(), sq, l1.ln(), lse]
}

fn dyn_f32<D: Dimension>(a: &Array<f32, D>) -> ArrayD<f64> {
    a.mapv(f64::from).into_dyn()
}

// ===========================================================================
// Reductions
// ===========================================================================

#[test]
fn reductions_over_the_last_axis() {
    let x = rand2(4, 6, 1).mapv(|v| v * 2.0);
    let got = reduce2(&x).unwrap();
    let got = [got.0, got.1, got.2, got.3, got.4, got.5, got.6, got.7, got.8, got.9];
    for (r, g) in got.iter().enumerate() {
        let want = lanes_ref(&x, |l| reductions_ref(l)[r]);
        assert_close(&dyn_f32(g), &want, 1e-5);
    }

    let y = Array3::from_shape_fn((2, 3, 5), |(a, b, c)| ((a * 15 + b * 5 + c) as f64 * 0.37).sin() * 3.0);
    let got = reduce3(&y).unwrap();
    let got = [got.0, got.1, got.2, got.3, got.4, got.5, got.6, got.7, got.8, got.9];
    for (r, g) in got.iter().enumerate() {
        let want = lanes_ref(&y, |l| reductions_ref(l)[r]);
        assert_close(&g.clone().into_dyn(), &want, 1e-12);
    }
    let v = array![0.5f64, -1.25, 2.0, 3.5, -0.75];
    let g = reduce1(&v).unwrap();
    let got = [g.0, g.1, g.2, g.3, g.4, g.5, g.6, g.7, g.8, g.9];
    let want = reductions_ref(v.as_slice().unwrap());
    for (g, w) in got.iter().zip(&want) {
        assert_close_scalar(*g, *w, 1e-12);
    }
    // Large inputs: the log-sum-exp does not overflow.
    let big = array![[1000.0f32, 1000.0]];
    assert_close_scalar(reduce2(&big).unwrap().9[0], 1000.0 + 2f32.ln(), 1e-6);
}

#[test]
fn cumsum_in_ml() {
    let x = array![1.0f32, -2.0, 0.5, 4.0];
    assert_eq!(cumsum1(&x).unwrap(), array![1.0f32, -1.0, -0.5, 3.5]);
    let y = rand2_f64(3, 7, 2);
    let got = cumsum2(&y).unwrap();
    for i in 0..3 {
        let mut acc = 0.0;
        for j in 0..7 {
            acc += y[[i, j]];
            assert_close_scalar(got[[i, j]], acc, 1e-12);
        }
    }
}

// ===========================================================================
// Normalization and norms
// ===========================================================================

fn inorm_ref(x: &Array4<f64>, s: &Array1<f64>, b: &Array1<f64>, eps: f64) -> Array4<f64> {
    let (n, c, h, w) = x.dim();
    let mut y = Array4::zeros((n, c, h, w));
    for nn in 0..n {
        for cc in 0..c {
            let mut mean = 0.0;
            for i in 0..h {
                for j in 0..w {
                    mean += x[[nn, cc, i, j]];
                }
            }
            mean /= (h * w) as f64;
            let mut var = 0.0;
            for i in 0..h {
                for j in 0..w {
                    var += (x[[nn, cc, i, j]] - mean).powi(2);
                }
            }
            var /= (h * w) as f64;
            for i in 0..h {
                for j in 0..w {
                    y[[nn, cc, i, j]] = s[cc] * (x[[nn, cc, i, j]] - mean) / (var + eps).sqrt() + b[cc];
                }
            }
        }
    }
    y
}

#[test]
fn instance_normalization_per_plane() {
    let x = rand4(2, 3, 4, 5, 3);
    let s = rand1(3, 4);
    let b = rand1(3, 5);
    let want = inorm_ref(&x.mapv(f64::from), &s.mapv(f64::from), &b.mapv(f64::from), 1e-5);
    assert_close(&inorm32(&x, &s, &b).unwrap(), &to_f32(&want), 1e-4);
    let x64 = x.mapv(f64::from);
    let got = inorm64(&x64, &s.mapv(f64::from), &b.mapv(f64::from)).unwrap();
    assert_close(&got, &want, 1e-12);
}

#[test]
fn vector_and_matrix_norms() {
    let m = array![[1.0, -2.0, 3.0], [-4.0, 5.0, -6.5]];
    let v = array![3.0, -4.0, 0.5];
    // Frobenius: sqrt(1 + 4 + 9 + 16 + 25 + 42.25); column sums 5, 7, 9.5; row sums 6, 15.5.
    let want = [97.25f64.sqrt(), 9.5, 15.5, 7.5, 4.0];
    let got = norms64(&m, &v).unwrap();
    for (g, w) in got.iter().zip(want) {
        assert_close_scalar(*g, w, 1e-12);
    }
    let got = norms32(&m.mapv(|x| x as f32), &v.mapv(|x| x as f32)).unwrap();
    for (g, w) in got.iter().zip(want) {
        assert_close_scalar(*g, w as f32, 1e-6);
    }
}

// ===========================================================================
// Indexing
// ===========================================================================

#[test]
fn gather_along_the_first_axis() {
    let x = array![10.0f32, 11.0, 12.0, 13.0];
    assert_eq!(gather1(&x, &array![3, 0, 0, 2]).unwrap(), array![13.0f32, 10.0, 10.0, 12.0]);

    let m = rand2_f64(4, 3, 6);
    let idx = array![2i64, 2, 0];
    for axis in [0, -2] {
        let got = gather2(&m, &idx, axis).unwrap();
        for k in 0..3 {
            for j in 0..3 {
                assert_eq!(got[[k, j]], m[[idx[k] as usize, j]]);
            }
        }
    }
    assert!(gather2(&m, &idx, 1).is_err(), "other axes are refused");
    assert!(gather2(&m, &array![4i64], 0).is_err(), "an index outside the axis is an error");

    let t = Array3::from_shape_fn((3, 2, 2), |(a, b, c)| (a * 100 + b * 10 + c) as i32);
    let got = gather3(&t, &array![1, 2]).unwrap();
    assert_eq!(got, array![[[100, 101], [110, 111]], [[200, 201], [210, 211]]]);
}

#[test]
fn gather_elements_along_first_and_last_axes() {
    let x = array![[1.0f32, 2.0], [3.0, 4.0]];
    let i = array![[0i64, 0], [1, 0]];
    // The ONNX examples: axis 1 gives [[1, 1], [4, 3]]; axis 0 gives [[1, 2], [3, 2]].
    assert_eq!(gather_el2(&x, &i, 1).unwrap(), array![[1.0f32, 1.0], [4.0, 3.0]]);
    assert_eq!(gather_el2(&x, &i, -1).unwrap(), array![[1.0f32, 1.0], [4.0, 3.0]]);
    assert_eq!(gather_el2(&x, &i, 0).unwrap(), array![[1.0f32, 2.0], [3.0, 2.0]]);

    let t = Array3::from_shape_fn((3, 2, 4), |(a, b, c)| (a * 100 + b * 10 + c) as f64);
    let mut rng = Rng::new(7);
    let i0 = Array3::from_shape_fn((2, 2, 4), |_| rng.int(0, 2) as i64);
    let got = gather_el3(&t, &i0, 0).unwrap();
    for ((a, b, c), v) in got.indexed_iter() {
        assert_eq!(*v, t[[i0[[a, b, c]] as usize, b, c]]);
    }
    let i2 = Array3::from_shape_fn((3, 2, 5), |_| rng.int(0, 3) as i64);
    let got = gather_el3(&t, &i2, 2).unwrap();
    for ((a, b, c), v) in got.indexed_iter() {
        assert_eq!(*v, t[[a, b, i2[[a, b, c]] as usize]]);
    }
    assert!(gather_el3(&t, &i2, 1).is_err(), "a middle axis is refused");
}

/// ScatterElements by its definition: copy, then write the updates in order.
fn scatter_ref<D: Dimension>(
    data: &Array<f64, D>,
    idx: &Array<i64, D>,
    upd: &Array<f64, D>,
    axis: usize,
) -> ArrayD<f64> {
    let mut out = data.clone().into_dyn();
    let idx = idx.clone().into_dyn();
    for (pos, u) in upd.clone().into_dyn().indexed_iter() {
        let mut target: Vec<usize> = pos.slice().to_vec();
        target[axis] = idx[&pos] as usize;
        out[IxDyn(&target)] = *u;
    }
    out
}

#[test]
fn scatter_elements_last_update_wins() {
    // The ONNX example along axis 0.
    let data = Array2::<f32>::zeros((3, 3));
    let idx = array![[1i64, 0, 2], [0, 2, 1]];
    let upd = array![[1.0f32, 1.1, 1.2], [2.0, 2.1, 2.2]];
    assert_eq!(
        scatter_el2(&data, &idx, &upd, 0).unwrap(),
        array![[2.0f32, 1.1, 0.0], [1.0, 0.0, 2.2], [0.0, 2.1, 1.2]]
    );
    // Along axis 1, with a repeated index: the later update wins.
    let data = array![[1.0f32, 2.0, 3.0, 4.0, 5.0]];
    let idx = array![[1i64, 3, 1]];
    let upd = array![[1.1f32, 2.1, 7.0]];
    assert_eq!(scatter_el2(&data, &idx, &upd, 1).unwrap(), array![[1.0f32, 7.0, 3.0, 2.1, 5.0]]);

    let t = rand3(3, 2, 4, 8).mapv(f64::from);
    let mut rng = Rng::new(9);
    let i0 = Array3::from_shape_fn((2, 2, 4), |_| rng.int(0, 2) as i64);
    let u0 = rand3(2, 2, 4, 10).mapv(f64::from);
    assert_eq!(scatter_el3(&t, &i0, &u0, 0).unwrap().into_dyn(), scatter_ref(&t, &i0, &u0, 0));
    let i2 = Array3::from_shape_fn((3, 2, 6), |_| rng.int(0, 3) as i64);
    let u2 = rand3(3, 2, 6, 11).mapv(f64::from);
    assert_eq!(scatter_el3(&t, &i2, &u2, -1).unwrap().into_dyn(), scatter_ref(&t, &i2, &u2, 2));
}

#[test]
fn onehot_rows() {
    let got = onehot32(&array![2i64, 0, 5], 3, &array![0.0f32, 1.0]).unwrap();
    assert_eq!(got, array![[0.0f32, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]);
    let got = onehot64(&array![1, 3], 4, &array![-1.0, 2.5]).unwrap();
    assert_eq!(got, array![[-1.0, 2.5, -1.0, -1.0], [-1.0, -1.0, -1.0, 2.5]]);
}

// ===========================================================================
// Quantization
// ===========================================================================

fn quant_ref(x: f64, s: f64, z: f64) -> f64 {
    // Round half away from zero, then shift and saturate to int8.
    let q = (x / s).abs().floor() + if (x / s).abs().fract() >= 0.5 { 1.0 } else { 0.0 };
    (q.copysign(x / s) + z).clamp(-128.0, 127.0)
}

#[test]
fn quantize_and_dequantize_linear() {
    let x = array![0.0f32, 0.25, -0.25, 1.0, 100.0, -100.0, 0.74];
    let (q, d) = quant1(&x, 0.5, 3.0).unwrap();
    // x / 0.5 = 0, 0.5, -0.5, 2, 200, -200, 1.48: rounded 0, 1, -1, 2, 200, -200, 1; plus 3; saturated.
    assert_eq!(q, array![3.0f32, 4.0, 2.0, 5.0, 127.0, -128.0, 4.0]);
    assert_eq!(d, x.mapv(|v| (v - 3.0) * 0.5));

    let m = rand2(3, 4, 12).mapv(|v| v * 40.0);
    let (q, d) = quant2(&m, 0.3, -2.0).unwrap();
    for ((i, j), v) in m.indexed_iter() {
        assert_eq!(q[[i, j]] as f64, quant_ref(f64::from(*v / 0.3f32), 1.0, -2.0));
        assert_close_scalar(d[[i, j]], (*v + 2.0) * 0.3, 1e-6);
    }
    let t = rand3(2, 3, 2, 13).mapv(|v| f64::from(v) * 90.0);
    let (q, d) = quant3(&t, 0.5, 1.0).unwrap();
    for (p, v) in t.indexed_iter() {
        assert_eq!(q[p], quant_ref(*v, 0.5, 1.0));
        assert_close_scalar(d[p], (*v - 1.0) * 0.5, 1e-12);
    }
}

#[test]
fn quantized_products() {
    let a = array![[1i8, -2, 3], [127, -128, 0]];
    let b = array![[2i8, 1], [-1, 0], [4, -3]];
    let got = qmm(&a, 0.5, &b, 0.25).unwrap();
    // Integer products: [[16, -8], [382, 127]], times 0.125.
    assert_eq!(got, array![[2.0f32, -1.0], [47.75, 15.875]]);

    let x = array![3i8, -1, 2];
    let w = array![[1i8, 2], [3, 4], [-5, 6]];
    let bias = array![0.5f32, -1.0];
    // x . w = [3 - 3 - 10, 6 - 4 + 12] = [-10, 14]; scale 0.1 * 2.
    let got = qlin(&x, 0.1, &w, 2.0, &bias).unwrap();
    assert_close(&got, &array![-1.5f32, 1.8], 1e-6);
}

// ===========================================================================
// Attention
// ===========================================================================

/// Multi-head attention by loops, in f64; `heads` = 1 is plain attention.
fn mha_ref(
    q: &Array3<f64>,
    k: &Array3<f64>,
    v: &Array3<f64>,
    heads: usize,
    scale: f64,
    mask: Option<&Array3<f64>>,
) -> Array3<f64> {
    let (nb, s, d) = q.dim();
    let t = k.dim().1;
    let hd = d / heads;
    let mut out = Array3::zeros((nb, s, d));
    for b in 0..nb {
        for h in 0..heads {
            for i in 0..s {
                let mut scores = vec![0.0; t];
                for j in 0..t {
                    let mut dot = 0.0;
                    for e in h * hd..(h + 1) * hd {
                        dot += q[[b, i, e]] * k[[b, j, e]];
                    }
                    scores[j] = dot * scale;
                    if let Some(m) = mask {
                        if m[[b, i, j]] <= 0.0 {
                            scores[j] = -1e9;
                        }
                    }
                }
                let mx = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let ex: Vec<f64> = scores.iter().map(|s| (s - mx).exp()).collect();
                let z: f64 = ex.iter().sum();
                for e in h * hd..(h + 1) * hd {
                    let mut acc = 0.0;
                    for j in 0..t {
                        acc += ex[j] / z * v[[b, j, e]];
                    }
                    out[[b, i, e]] = acc;
                }
            }
        }
    }
    out
}

#[test]
fn attention_single_and_multi_head() {
    let q = rand3(2, 3, 4, 20);
    let k = rand3(2, 5, 4, 21);
    let v = rand3(2, 5, 4, 22);
    let mut rng = Rng::new(23);
    let mask = Array3::from_shape_fn((2, 3, 5), |(_, _, j)| if j == 0 || rng.unit() < 0.6 { 1.0f32 } else { 0.0 });
    let (q64, k64, v64, m64) = (q.mapv(f64::from), k.mapv(f64::from), v.mapv(f64::from), mask.mapv(f64::from));
    let (a, a2, mh, mhm) = attn32(&q, &k, &v, 0.7, &mask).unwrap();
    let plain = to_f32(&mha_ref(&q64, &k64, &v64, 1, 0.7, None));
    assert_close(&a, &plain, 1e-5);
    assert_close(&a2, &plain, 1e-5);
    assert_close(&mh, &to_f32(&mha_ref(&q64, &k64, &v64, 2, 0.7, None)), 1e-5);
    assert_close(&mhm, &to_f32(&mha_ref(&q64, &k64, &v64, 2, 0.7, Some(&m64))), 1e-5);

    let q = rand3(1, 4, 6, 24).mapv(f64::from);
    let k = rand3(1, 2, 6, 25).mapv(f64::from);
    let v = rand3(1, 2, 6, 26).mapv(f64::from);
    let mask = array![[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 2.0]]];
    for heads in [1, 2, 3, 6] {
        let (mh, mhm) = attn64(&q, &k, &v, heads, &mask).unwrap();
        assert_close(&mh, &mha_ref(&q, &k, &v, heads as usize, 0.25, None), 1e-12);
        assert_close(&mhm, &mha_ref(&q, &k, &v, heads as usize, 0.25, Some(&mask)), 1e-12);
    }
    assert!(attn64(&q, &k, &v, 4, &mask).is_err(), "6 features do not split into 4 heads");
}

// ===========================================================================
// Shape operations
// ===========================================================================

/// concat, tile(reps), roll(shift), repeat_interleave(rep) of one lane.
fn lane_ops(a: &[f64], b: &[f64], reps: usize, shift: i64, rep: usize) -> [Vec<f64>; 4] {
    let n = a.len();
    let cat = a.iter().chain(b).copied().collect();
    let tile = (0..n * reps).map(|j| a[j % n]).collect();
    let mut roll = vec![0.0; n];
    for (i, v) in a.iter().enumerate() {
        roll[(i as i64 + shift).rem_euclid(n as i64) as usize] = *v;
    }
    let ri = a.iter().flat_map(|v| std::iter::repeat(*v).take(rep)).collect();
    [cat, tile, roll, ri]
}

#[test]
fn shape_operations_at_ranks_one_to_three() {
    let a = array![1.0f32, 2.0, 3.0];
    let b = array![4.0f32, 5.0];
    let (cat, tile, roll, ri) = shape1(&a, &b, 1).unwrap();
    assert_eq!(cat, array![1.0f32, 2.0, 3.0, 4.0, 5.0]);
    assert_eq!(tile, array![1.0f32, 2.0, 3.0, 1.0, 2.0, 3.0, 1.0, 2.0, 3.0]);
    assert_eq!(roll, array![3.0f32, 1.0, 2.0]);
    assert_eq!(ri, array![1.0f32, 1.0, 2.0, 2.0, 3.0, 3.0]);
    assert_eq!(shape1(&a, &b, -4).unwrap().2, array![2.0f32, 3.0, 1.0]);

    let a = rand2_f64(3, 4, 30);
    let b = rand2_f64(3, 2, 31);
    for shift in [-5i64, -1, 0, 2, 9] {
        let got = shape2(&a, &b, shift).unwrap();
        for r in 0..3 {
            let want = lane_ops(&a.row(r).to_vec(), &b.row(r).to_vec(), 2, shift, 3);
            assert_eq!(got.0.row(r).to_vec(), want[0]);
            assert_eq!(got.1.row(r).to_vec(), want[1]);
            assert_eq!(got.2.row(r).to_vec(), want[2]);
            assert_eq!(got.3.row(r).to_vec(), want[3]);
        }
    }

    let a = rand3(2, 2, 3, 32);
    let b = rand3(2, 2, 1, 33);
    let got = shape3(&a, &b, 2).unwrap();
    for p in 0..2 {
        for r in 0..2 {
            let la: Vec<f64> = (0..3).map(|j| f64::from(a[[p, r, j]])).collect();
            let lb = vec![f64::from(b[[p, r, 0]])];
            let want = lane_ops(&la, &lb, 2, 2, 2);
            let lane = |t: &Array3<f32>| (0..t.dim().2).map(|j| f64::from(t[[p, r, j]])).collect::<Vec<_>>();
            assert_eq!(lane(&got.0), want[0]);
            assert_eq!(lane(&got.1), want[1]);
            assert_eq!(lane(&got.2), want[2]);
            assert_eq!(lane(&got.3), want[3]);
        }
    }
}

#[test]
fn pad_squeeze_unsqueeze_expand() {
    let a = array![[1.0f32, 2.0], [3.0, 4.0]];
    let got = pad2(&a, &array![1], -1.0).unwrap();
    assert_eq!(
        got,
        array![[-1.0f32, -1.0, -1.0, -1.0], [-1.0, 1.0, 2.0, -1.0], [-1.0, 3.0, 4.0, -1.0], [-1.0, -1.0, -1.0, -1.0]]
    );
    assert_eq!(pad2(&a, &array![0], 7.0).unwrap(), a);

    let t = rand3(1, 2, 3, 40);
    let u = rand3(2, 3, 1, 41).mapv(f64::from);
    let (s0, s1) = squeeze3(&t, &u).unwrap();
    assert_eq!(s0, t.index_axis(Axis(0), 0).to_owned());
    assert_eq!(s1, u.index_axis(Axis(2), 0).to_owned());
    assert!(squeeze_bad(&rand2(2, 3, 42)).is_err(), "an axis of extent 2 cannot be squeezed");

    let m = rand2(2, 3, 43);
    let (f, l) = unsqueeze2(&m).unwrap();
    assert_eq!(f, m.clone().insert_axis(Axis(0)));
    assert_eq!(l, m.clone().insert_axis(Axis(2)));
    let v = rand1_f64(4, 44);
    let (f, l) = unsqueeze1(&v).unwrap();
    assert_eq!(f, v.clone().insert_axis(Axis(0)));
    assert_eq!(l, v.clone().insert_axis(Axis(1)));

    let row = array![[1.0f32, 2.0, 3.0]];
    assert_eq!(expand2(&row, &array![2, 3]).unwrap(), array![[1.0f32, 2.0, 3.0], [1.0, 2.0, 3.0]]);
    let col = array![[1.0f32], [2.0]];
    assert_eq!(expand2(&col, &array![2, 3]).unwrap(), array![[1.0f32, 1.0, 1.0], [2.0, 2.0, 2.0]]);
    assert_eq!(expand2(&array![[5.0f32]], &array![1, 2]).unwrap(), array![[5.0f32, 5.0]]);
    assert_eq!(expand2(&a, &array![2, 2]).unwrap(), a);
    assert!(expand2(&a, &array![2, 3]).is_err(), "an axis of extent 2 does not broadcast to 3");
}

// ===========================================================================
// Convolution and pooling
// ===========================================================================

#[allow(clippy::too_many_arguments)]
fn conv_ref(
    x: &Array4<f64>,
    w: &Array4<f64>,
    b: &Array1<f64>,
    s: [usize; 2],
    pads: [usize; 4],
    d: [usize; 2],
    group: usize,
) -> Array4<f64> {
    let (n, c, h, wd) = x.dim();
    let (m, cpg, kh, kw) = w.dim();
    assert_eq!(cpg, c / group);
    let oh = (h + pads[0] + pads[2] - d[0] * (kh - 1) - 1) / s[0] + 1;
    let ow = (wd + pads[1] + pads[3] - d[1] * (kw - 1) - 1) / s[1] + 1;
    let fpg = m / group;
    let mut y = Array4::zeros((n, m, oh, ow));
    for nn in 0..n {
        for o in 0..m {
            for i in 0..oh {
                for j in 0..ow {
                    let mut acc = b[o];
                    for cl in 0..cpg {
                        for r in 0..kh {
                            for q in 0..kw {
                                let ih = (i * s[0] + r * d[0]) as i64 - pads[0] as i64;
                                let iw = (j * s[1] + q * d[1]) as i64 - pads[1] as i64;
                                if ih >= 0 && iw >= 0 && (ih as usize) < h && (iw as usize) < wd {
                                    acc += x[[nn, (o / fpg) * cpg + cl, ih as usize, iw as usize]] * w[[o, cl, r, q]];
                                }
                            }
                        }
                    }
                    y[[nn, o, i, j]] = acc;
                }
            }
        }
    }
    y
}

#[test]
fn conv_with_strides_pads_dilations_and_groups() {
    let x = rand4(2, 4, 7, 6, 50);
    let b = rand1(6, 51);
    for (group, s, p, d) in [
        (1i64, [1i64, 1], [0i64, 0, 0, 0], [1i64, 1]),
        (1, [2, 1], [1, 2, 0, 1], [1, 2]),
        (2, [2, 3], [1, 1, 1, 1], [2, 1]),
        (2, [1, 2], [0, 1, 2, 0], [1, 1]),
    ] {
        let w = rand4(6, 4 / group as usize, 3, 2, 52 + group as u64);
        let got =
            conv32(&x, &w, &b, &array![s[0], s[1]], &Array1::from_vec(p.to_vec()), &array![d[0], d[1]], group).unwrap();
        let us = |a: &[i64]| a.iter().map(|&v| v as usize).collect::<Vec<_>>();
        let want = conv_ref(
            &x.mapv(f64::from),
            &w.mapv(f64::from),
            &b.mapv(f64::from),
            us(&s).try_into().unwrap(),
            us(&p).try_into().unwrap(),
            us(&d).try_into().unwrap(),
            group as usize,
        );
        assert_close(&got, &to_f32(&want), 1e-5);
    }
}

#[test]
fn conv_takes_i32_vectors() {
    let x = rand4(1, 2, 6, 5, 80);
    let w = rand4(3, 2, 3, 2, 81);
    let b = rand1(3, 82);
    // The loop reference, with the strides, pads and dilations `conv_seed` writes.
    let want = conv_ref(&x.mapv(f64::from), &w.mapv(f64::from), &b.mapv(f64::from), [2, 1], [1, 2, 0, 1], [1, 2], 1);
    assert_close(&conv_seed(&x, &w, &b).unwrap(), &to_f32(&want), 1e-5);
}

#[test]
fn qconv_accumulates_int8_products_exactly() {
    let ints = |shape: (usize, usize, usize, usize), seed: u64| {
        let mut rng = Rng::new(seed);
        Array4::from_shape_fn(shape, |_| (rng.range(-127.0, 128.0).floor() as i32) as i8)
    };
    let x = ints((2, 4, 6, 7), 70);
    let b = rand1(6, 71);
    let (xs, ws) = (0.02f32, 0.005f32);
    for (group, s, p, d) in [(1i64, [1i64, 1], [2i64, 2, 2, 2], [1i64, 1]), (2, [2, 1], [1, 0, 0, 1], [1, 2])] {
        let w = ints((6, 4 / group as usize, 3, 3), 72 + group as u64);
        let got =
            qconv8(&x, xs, &w, ws, &b, &array![s[0], s[1]], &Array1::from_vec(p.to_vec()), &array![d[0], d[1]], group)
                .unwrap();
        let us = |a: &[i64]| a.iter().map(|&v| v as usize).collect::<Vec<_>>();
        // The integer sums are exact in f64; the bias is added after scaling.
        let sums = conv_ref(
            &x.mapv(f64::from),
            &w.mapv(f64::from),
            &Array1::zeros(6),
            us(&s).try_into().unwrap(),
            us(&p).try_into().unwrap(),
            us(&d).try_into().unwrap(),
            group as usize,
        );
        let mut want = sums.mapv(|v| v as f32 * (xs * ws));
        for ((_, o, _, _), v) in want.indexed_iter_mut() {
            *v += b[o];
        }
        assert_close(&got, &want, 1e-5);
    }
}

#[test]
fn depthwise_conv_is_a_grouped_conv() {
    let x = rand4(1, 3, 6, 5, 60).mapv(f64::from);
    let w = rand4(3, 1, 3, 3, 61).mapv(f64::from);
    let b = rand1(3, 62).mapv(f64::from);
    for (s, p, d) in [([1i64, 1], [1i64, 1], [1i64, 1]), ([2, 1], [0, 2], [1, 2])] {
        let got = dwconv64(&x, &w, &b, &array![s[0], s[1]], &array![p[0], p[1]], &array![d[0], d[1]]).unwrap();
        let (s, p, d) =
            ([s[0] as usize, s[1] as usize], [p[0] as usize, p[1] as usize], [d[0] as usize, d[1] as usize]);
        let want = conv_ref(&x, &w, &b, s, [p[0], p[1], p[0], p[1]], d, 3);
        assert_close(&got, &want, 1e-12);
    }
}

/// Transposed convolution by scattering each input element's contribution.
fn conv_transpose_ref(
    x: &Array4<f64>,
    w: &Array4<f64>,
    b: &Array1<f64>,
    s: [usize; 2],
    p: [usize; 2],
    op: [usize; 2],
) -> Array4<f64> {
    let (n, c, h, wd) = x.dim();
    let (_, m, kh, kw) = w.dim();
    let oh = (h - 1) * s[0] + kh - 2 * p[0] + op[0];
    let ow = (wd - 1) * s[1] + kw - 2 * p[1] + op[1];
    let mut y = Array4::zeros((n, m, oh, ow));
    for nn in 0..n {
        for o in 0..m {
            for i in 0..oh {
                for j in 0..ow {
                    y[[nn, o, i, j]] = b[o];
                }
            }
        }
        for cc in 0..c {
            for hh in 0..h {
                for ww in 0..wd {
                    for o in 0..m {
                        for r in 0..kh {
                            for q in 0..kw {
                                let i = (hh * s[0] + r) as i64 - p[0] as i64;
                                let j = (ww * s[1] + q) as i64 - p[1] as i64;
                                if i >= 0 && j >= 0 && (i as usize) < oh && (j as usize) < ow {
                                    y[[nn, o, i as usize, j as usize]] += x[[nn, cc, hh, ww]] * w[[cc, o, r, q]];
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    y
}

#[test]
fn conv_transpose_scatters_the_kernel() {
    let x = rand4(2, 3, 4, 3, 70);
    let w = rand4(3, 2, 3, 2, 71);
    let b = rand1(2, 72);
    for (s, p, op) in [([1i64, 1], [0i64, 0], [0i64, 0]), ([2, 3], [1, 0], [1, 0]), ([3, 2], [1, 1], [0, 1])] {
        let got = convt32(&x, &w, &b, &array![s[0], s[1]], &array![p[0], p[1]], &array![op[0], op[1]]).unwrap();
        let u = |a: [i64; 2]| [a[0] as usize, a[1] as usize];
        let want = conv_transpose_ref(&x.mapv(f64::from), &w.mapv(f64::from), &b.mapv(f64::from), u(s), u(p), u(op));
        assert_close(&got, &to_f32(&want), 1e-5);
    }
}

/// Max and average pooling by loops; padded positions are skipped, and the
/// average divides by the number of positions inside the image.
fn pool_ref(x: &Array4<f64>, k: [usize; 2], s: [usize; 2], p: [usize; 2]) -> (Array4<f64>, Array4<f64>) {
    let (n, c, h, w) = x.dim();
    let oh = (h + 2 * p[0] - k[0]) / s[0] + 1;
    let ow = (w + 2 * p[1] - k[1]) / s[1] + 1;
    let mut mx = Array4::zeros((n, c, oh, ow));
    let mut avg = Array4::zeros((n, c, oh, ow));
    for nn in 0..n {
        for cc in 0..c {
            for i in 0..oh {
                for j in 0..ow {
                    let (mut m, mut sum, mut cnt) = (f64::NEG_INFINITY, 0.0, 0.0);
                    for r in 0..k[0] {
                        for q in 0..k[1] {
                            let ih = (i * s[0] + r) as i64 - p[0] as i64;
                            let iw = (j * s[1] + q) as i64 - p[1] as i64;
                            if ih >= 0 && iw >= 0 && (ih as usize) < h && (iw as usize) < w {
                                let v = x[[nn, cc, ih as usize, iw as usize]];
                                m = m.max(v);
                                sum += v;
                                cnt += 1.0;
                            }
                        }
                    }
                    mx[[nn, cc, i, j]] = m;
                    avg[[nn, cc, i, j]] = sum / cnt;
                }
            }
        }
    }
    (mx, avg)
}

#[test]
fn max_and_average_pool() {
    let x = rand4(2, 2, 7, 6, 80);
    let x64 = x.mapv(f64::from);
    for (k, s, p) in [([2i64, 2], [2i64, 2], [0i64, 0]), ([3, 2], [1, 2], [1, 1]), ([3, 3], [2, 3], [1, 0])] {
        let u = |a: [i64; 2]| [a[0] as usize, a[1] as usize];
        let (wm, wa) = pool_ref(&x64, u(k), u(s), u(p));
        let (a, b, c) = (array![k[0], k[1]], array![s[0], s[1]], array![p[0], p[1]]);
        let (m, avg) = pool64(&x64, &a, &b, &c).unwrap();
        assert_close(&m, &wm, 1e-12);
        assert_close(&avg, &wa, 1e-12);
        let (m, avg) = pool32(&x, &a, &b, &c).unwrap();
        assert_close(&m, &to_f32(&wm), 1e-6);
        assert_close(&avg, &to_f32(&wa), 1e-5);
    }
}

mod select {
    use einlang::einlang;

    einlang! {
        pub fn where1(c: [bool; N], x: [f32; N], y: [f32; N]) -> [f32; N] { std::ml::where(c, x, y) }
        pub fn where2(c: [bool; A, B], x: [f64; A, B], y: [f64; A, B]) -> [f64; A, B] { std::ml::where(c, x, y) }
        pub fn where3(c: [bool; A, B, C], x: [i32; A, B, C], y: [i32; A, B, C]) -> [i32; A, B, C] {
            std::ml::where(c, x, y)
        }
    }
}

#[test]
fn where_chooses_elementwise() {
    use select::*;
    assert_eq!(
        where1(&array![true, false, true], &array![1.0f32, 2.0, 3.0], &array![-1.0f32, -2.0, -3.0]).unwrap(),
        array![1.0f32, -2.0, 3.0]
    );
    let x = rand2_f64(3, 4, 90);
    let y = rand2_f64(3, 4, 91);
    let c = x.mapv(|v| v > 0.0);
    let got = where2(&c, &x, &y).unwrap();
    for ((i, j), v) in got.indexed_iter() {
        assert_eq!(*v, if c[[i, j]] { x[[i, j]] } else { y[[i, j]] });
    }
    let x = Array3::from_shape_fn((2, 2, 3), |(a, b, c)| (a * 6 + b * 3 + c) as i32);
    let c = x.mapv(|v| v % 3 == 0);
    let got = where3(&c, &x, &(-&x)).unwrap();
    for (p, v) in got.indexed_iter() {
        assert_eq!(*v, if c[p] { x[p] } else { -x[p] });
    }
}

mod topk {
    einlang::einlang! {
        pub fn top2(x: [f32; R, N]) -> ([f32; ?, ?], [i64; ?, ?]) { std::ml::topk(x, 2, -1) }
        pub fn top_vec(x: [i32; N], k: i64) -> ([i32; ?], [i64; ?]) { std::ml::topk(x, k, 0) }
        pub fn top_axis(x: [f32; R, N], axis: i32) -> ([f32; ?, ?], [i64; ?, ?]) { std::ml::topk(x, 1, axis) }
    }
}

#[test]
fn topk_along_the_last_axis() {
    let x = rand2(4, 7, 901);
    let (v, ix) = topk::top2(&x).unwrap();
    for r in 0..4 {
        let (want_v, want_i) = topk_ref(&x.row(r).to_vec(), 2);
        assert_eq!(v.row(r).to_vec(), want_v);
        assert_eq!(ix.row(r).to_vec(), want_i);
    }
    let y = array![3, 9, 1, 9, 4];
    for k in 1..=5 {
        let (v, ix) = topk::top_vec(&y, k).unwrap();
        let (want_v, want_i) = topk_ref(&y.to_vec(), k as usize);
        assert_eq!((v.to_vec(), ix.to_vec()), (want_v, want_i));
    }
    assert!(matches!(topk::top_vec(&y, 6), Err(einlang::Error::Assert { .. })));
    assert!(topk::top_axis(&x, 0).is_ok() && topk::top_axis(&x, 1).is_ok());
    assert!(matches!(topk::top_axis(&x, 2), Err(einlang::Error::Assert { .. })));
}

mod onnx_ops {
    einlang::einlang! {
        use std::ml::*;

        pub fn arith(a: [f32; R, C], b: [f32; R, C]) -> ([f32; R, C], [f32; R, C], [f32; R, C], [f32; R, C]) {
            (add(a, b), subtract(a, b), multiply(a, b), divide(a, b))
        }
        pub fn compare(a: [f64; N], b: [f64; N]) -> ([f32; N], [f32; N], [f32; N], [f32; N], [f32; N], [f32; N]) {
            (equal(a, b), not_equal(a, b), greater(a, b), greater_or_equal(a, b), less(a, b), less_or_equal(a, b))
        }
        pub fn logic(a: [bool; N], b: [bool; N]) -> ([bool; N], [bool; N], [bool; N], [bool; N]) {
            (logical_and(a, b), logical_or(a, b), logical_xor(a, b), logical_not(a))
        }
        pub fn special(x: [f32; N]) -> ([f32; N], [f32; N], [f32; N], [f32; N]) {
            (is_nan(x), is_inf(x), identity(x), dropout(x, 0.25, 1))
        }
        pub fn scalars(x: f64, y: f64) -> (f64, f32) {
            (divide(x, y), greater(x, y))
        }
    }
}

#[test]
fn onnx_elementwise_operators() {
    let a = rand2(3, 4, 911);
    let b = rand2(3, 4, 912);
    let (s, d, p, q) = onnx_ops::arith(&a, &b).unwrap();
    assert_eq!(s, &a + &b);
    assert_eq!(d, &a - &b);
    assert_eq!(p, &a * &b);
    assert_eq!(q, &a / &b);

    let x = array![1.0f64, 2.0, 3.0, 4.0];
    let y = array![1.0f64, 3.0, 2.0, 4.0];
    let (eq, ne, gt, ge, lt, le) = onnx_ops::compare(&x, &y).unwrap();
    let f = |c: fn(f64, f64) -> bool| -> Vec<f32> {
        x.iter().zip(&y).map(|(a, b)| if c(*a, *b) { 1.0 } else { 0.0 }).collect()
    };
    assert_eq!(eq.to_vec(), f(|a, b| a == b));
    assert_eq!(ne.to_vec(), f(|a, b| a != b));
    assert_eq!(gt.to_vec(), f(|a, b| a > b));
    assert_eq!(ge.to_vec(), f(|a, b| a >= b));
    assert_eq!(lt.to_vec(), f(|a, b| a < b));
    assert_eq!(le.to_vec(), f(|a, b| a <= b));

    let p = array![true, true, false, false];
    let q = array![true, false, true, false];
    let (and, or, xor, not) = onnx_ops::logic(&p, &q).unwrap();
    assert_eq!(and.to_vec(), vec![true, false, false, false]);
    assert_eq!(or.to_vec(), vec![true, true, true, false]);
    assert_eq!(xor.to_vec(), vec![false, true, true, false]);
    assert_eq!(not.to_vec(), vec![false, false, true, true]);

    let v = array![1.0f32, f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -2.0];
    let (nan, inf, same, dropped) = onnx_ops::special(&v).unwrap();
    assert_eq!(nan.to_vec(), vec![0.0, 1.0, 0.0, 0.0, 0.0]);
    assert_eq!(inf.to_vec(), vec![0.0, 0.0, 1.0, 1.0, 0.0]);
    assert_eq!(same[0], 1.0);
    assert!(same[1].is_nan());
    assert_eq!(dropped[4], -2.0 * 0.75);
    assert_eq!(onnx_ops::scalars(3.0, 2.0).unwrap(), (1.5, 1.0));
}

mod selection_more {
    einlang::einlang! {
        use std::ml::{argmax, argmin, range, nonzero, numel};

        pub fn picks(x: [f32; R, C], v: [i32; N]) -> ([i64; R], [i64; R], i64, i64) {
            (argmax(x), argmin(x), argmax(v), numel(x))
        }
        pub fn ranges(start: f32, limit: f32, delta: f32) -> [f32; ?] { range(start, limit, delta) }
        pub fn nonzeros(v: [i32; N]) -> [i64; ?] { nonzero(v) }
    }
}

#[test]
fn selection_and_range_operators() {
    let x = array![[1.0f32, 5.0, 5.0, -1.0], [0.0, -3.0, 2.0, -3.0]];
    let v = array![3, 9, 1, 9];
    let (amax, amin, vmax, n) = selection_more::picks(&x, &v).unwrap();
    let first = |row: Vec<f32>, better: fn(f32, f32) -> bool| -> i64 {
        let mut best = 0;
        for (i, &val) in row.iter().enumerate() {
            if better(val, row[best]) {
                best = i;
            }
        }
        best as i64
    };
    for r in 0..2 {
        assert_eq!(amax[r], first(x.row(r).to_vec(), |a, b| a > b));
        assert_eq!(amin[r], first(x.row(r).to_vec(), |a, b| a < b));
    }
    assert_eq!((vmax, n), (1, 8));
    assert_eq!(selection_more::ranges(1.0, 2.0, 0.25).unwrap().to_vec(), vec![1.0, 1.25, 1.5, 1.75]);
    assert_eq!(selection_more::nonzeros(&array![0, 4, 0, -2]).unwrap().to_vec(), vec![1i64, 3]);
}
