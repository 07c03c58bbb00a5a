//! Indexing any primary expression, not only a name: a call's result
//! (`f(x)[j]`), parenthesized arithmetic (`(a + b)[i]`), an array literal
//! (`[1.0, 2.0][k]`), a tuple field (`pair.0[i]`), chained subscripts
//! (`g(x)[i][j]`), also inside reductions and indexed definitions, where the
//! result's shape gives the index its range. A run-time index out of range
//! is an `Err`. Every result is compared with plain loops or hand-derived
//! numbers.

mod common;

use einlang::einlang;
use einlang::ndarray::{array, Array1, Array2};
use einlang::Error;

einlang! {
    /// `x[j % 4] * j` for `j` in `0..10`.
    fn ramp(x: [f32; 4]) -> [f32; 10] {
        let y[j in 0..10] = x[j % 4] * (j as f32);
        y
    }

    /// `j` takes its range `0..10` from the shape of `ramp(x)`.
    pub fn ramp_plus_one(x: [f32; 4]) -> [f32; 10] {
        let y[j] = ramp(x)[j] + 1.0;
        y
    }

    /// An affine read narrows the range as it does for a name: `0..7`.
    pub fn ramp_shifted(x: [f32; 4]) -> [f32; 7] {
        let y[j] = ramp(x)[j + 3];
        y
    }

    /// Constant indices outside any definition.
    pub fn ramp_ends(x: [f32; 4]) -> (f32, f32) {
        (ramp(x)[0], ramp(x)[9])
    }

    /// A run-time index, checked.
    pub fn ramp_at(x: [f32; 4], n: i64) -> f32 {
        ramp(x)[n]
    }

    /// A run-time index inside a definition, checked per point.
    pub fn ramp_gather(x: [f32; 4], idx: [i64; M]) -> [f32; M] {
        let y[m] = ramp(x)[idx[m]];
        y
    }

    /// A dense layer: 3 logits from 4 features.
    fn logits(img: [f32; 4], w: [f32; 3, 4], b: [f32; 3]) -> [f32; 3] {
        let z[c] = sum[i](w[c, i] * img[i]) + b[c];
        z
    }

    /// The class of one image.
    pub fn predict(img: [f32; 4], w: [f32; 3, 4], b: [f32; 3]) -> i64 {
        argmax[j](logits(img, w, b)[j])
    }

    /// The class of each image: the layer's output depends on the point
    /// `n`, so it is computed once per image, outside the `argmax`.
    pub fn classify(imgs: [f32; N, 4], w: [f32; 3, 4], b: [f32; 3]) -> [i64; N] {
        let cls[n] = argmax[j](logits(imgs[n], w, b)[j]);
        cls
    }

    /// The largest logit minus the mean of the logits, per image: two
    /// reductions, each over its own call of the layer per image.
    pub fn margins(imgs: [f32; N, 4], w: [f32; 3, 4], b: [f32; 3]) -> [f32; N] {
        let m[n] = max[j](logits(imgs[n], w, b)[j]) - sum[j](logits(imgs[n], w, b)[j]) / 3.0;
        m
    }

    /// Parenthesized arithmetic: `(a + b)[i] * (a - b)[i]`.
    pub fn sum_times_diff(a: [f32; N], b: [f32; N]) -> [f32; N] {
        let y[i] = (a + b)[i] * (a - b)[i];
        y
    }

    /// An array literal indexed by an index variable (its numbers take the
    /// type of `x`: f64) and by a run-time value.
    pub fn literal_weights(x: [f64; 3], k: [i64; M]) -> ([f64; 3], [f64; M]) {
        let y[i] = x[i] * [1.0, 2.0, 3.0][i];
        let z[m] = [0.5, 1.5, 2.5][k[m]];
        (y, z)
    }

    fn stats(x: [f32; N]) -> ([f32; N], f32) {
        let s = sum[i](x[i]);
        (x, s / (len(x) as f32))
    }

    /// A tuple field of a tuple-valued name and of a call's result.
    pub fn fields(x: [f32; N]) -> ([f32; N], [f32; N]) {
        let pair = (x, x * 2.0);
        let y[i] = pair.0[i] + pair.1[i];
        let c[i] = stats(x).0[i] - stats(x).1;
        (y, c)
    }

    fn outer(a: [f32; N], b: [f32; M]) -> [f32; N, M] {
        let o[i, j] = a[i] * b[j];
        o
    }

    fn total(v: [f32; K]) -> f32 {
        sum[k](v[k])
    }

    /// Chained subscripts of a rank-2 result (`outer(a, b)[i][j]` is one
    /// element), a row of it (`outer(a, b)[i]`), and a sum over one axis.
    pub fn chained(a: [f32; N], b: [f32; M]) -> ([f32; M, N], [f32; N], [f32; M]) {
        let t[j, i] = outer(a, b)[i][j];
        let rows[i] = total(outer(a, b)[i]);
        let cols[j] = sum[i](outer(a, b)[i, j]);
        (t, rows, cols)
    }

    fn triple(v: f32) -> [f32; 3] {
        [v, 2.0 * v, 3.0 * v]
    }

    /// Inside reductions: `triple(x[i])` depends on the point `i` (once per
    /// point), `triple(x[k])` on the reduction's index (once per `k`), and
    /// a nested computed value (`triple(x[i])[0]`) inside another call.
    pub fn in_reductions(x: [f32; N]) -> ([f32; N], f32, [f32; N]) {
        let y[i] = sum[k](triple(x[i])[k]);
        let s = sum[k](triple(x[k])[2] - x[k]);
        let z[i] = prod[j](triple(triple(x[i])[1])[j]);
        (y, s, z)
    }

    /// A comprehension over a call's result.
    pub fn comprehension(x: [f32; 4]) -> [f32; 5] {
        [ramp(x)[2 * i] | i in 0..5]
    }

    fn halve(h: [f32; 3]) -> [f32; 3] {
        let o[j] = h[j] * 0.5 + 1.0;
        o
    }

    /// A recurrence: `halve(x)` is computed once, before it;
    /// `triple(h[t - 1, 0])` reads the previous step, so at each point.
    pub fn iterate(x: [f32; 3]) -> [f32; 4, 3] {
        let h[0, j] = x[j];
        let h[t in 1..4, j] = halve(x)[j] + triple(h[t - 1, 0])[j];
        h
    }
}

fn ramp_ref(x: &Array1<f32>) -> Vec<f32> {
    (0..10).map(|j| x[j % 4] * j as f32).collect()
}

fn logits_ref(img: &[f32], w: &Array2<f32>, b: &Array1<f32>) -> Vec<f32> {
    (0..3).map(|c| (0..4).map(|i| w[[c, i]] * img[i]).sum::<f32>() + b[c]).collect()
}

fn argmax_ref(v: &[f32]) -> i64 {
    let mut best = 0;
    for (j, &x) in v.iter().enumerate() {
        if x > v[best] {
            best = j;
        }
    }
    best as i64
}

#[test]
fn call_result_in_a_definition_takes_its_range_from_the_shape() {
    let x = array![1.0f32, -2.0, 0.5, 3.0];
    let r = ramp_ref(&x);
    let y = ramp_plus_one(&x).unwrap();
    assert_eq!(y.len(), 10);
    for j in 0..10 {
        assert_eq!(y[j], r[j] + 1.0);
    }
    let s = ramp_shifted(&x).unwrap();
    assert_eq!(s.len(), 7);
    for j in 0..7 {
        assert_eq!(s[j], r[j + 3]);
    }
    assert_eq!(ramp_ends(&x).unwrap(), (0.0, r[9]));
}

#[test]
fn run_time_index_out_of_range_is_an_error() {
    let x = array![1.0f32, -2.0, 0.5, 3.0];
    let r = ramp_ref(&x);
    assert_eq!(ramp_at(&x, 7).unwrap(), r[7]);
    match ramp_at(&x, 10) {
        Err(Error::Index { tensor, axis, index, len, .. }) => {
            assert_eq!((tensor.as_str(), axis, index, len), ("ramp(x)", 0, 10, 10))
        }
        other => panic!("expected Error::Index, got {other:?}"),
    }
    assert!(matches!(ramp_at(&x, -1), Err(Error::Index { index: -1, .. })));
    assert_eq!(ramp_gather(&x, &array![9i64, 0, 4]).unwrap(), array![r[9], r[0], r[4]]);
    assert!(matches!(ramp_gather(&x, &array![3i64, 11]), Err(Error::Index { index: 11, len: 10, .. })));
    assert!(matches!(literal_weights(&array![1.0, 1.0, 1.0], &array![0i64, 3]), Err(Error::Index { index: 3, .. })));
}

#[test]
fn argmax_of_a_layer_output() {
    let w = common::rand2(3, 4, 7);
    let b = array![0.1f32, -0.2, 0.05];
    let imgs = common::rand2(6, 4, 8);
    let cls = classify(&imgs, &w, &b).unwrap();
    let margin = margins(&imgs, &w, &b).unwrap();
    for n in 0..6 {
        let row: Vec<f32> = imgs.row(n).to_vec();
        let l = logits_ref(&row, &w, &b);
        assert_eq!(cls[n], argmax_ref(&l));
        assert_eq!(predict(&imgs.row(n).to_owned(), &w, &b).unwrap(), argmax_ref(&l));
        let max = l.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        let mean = l.iter().sum::<f32>() / 3.0;
        assert!((margin[n] - (max - mean)).abs() < 1e-5, "{} vs {}", margin[n], max - mean);
    }
}

#[test]
fn parenthesized_arithmetic() {
    let a = array![1.0f32, 2.0, -3.0, 0.5];
    let b = array![4.0f32, -1.0, 2.0, 0.25];
    let y = sum_times_diff(&a, &b).unwrap();
    for i in 0..4 {
        assert_eq!(y[i], (a[i] + b[i]) * (a[i] - b[i]));
    }
}

#[test]
fn array_literal() {
    let (y, z) = literal_weights(&array![2.0f64, -1.0, 0.5], &array![2i64, 0, 1, 2]).unwrap();
    assert_eq!(y, array![2.0f64, -2.0, 1.5]);
    assert_eq!(z, array![2.5f64, 0.5, 1.5, 2.5]);
}

#[test]
fn tuple_fields() {
    let x = array![1.0f32, 2.0, 6.0];
    let (y, c) = fields(&x).unwrap();
    assert_eq!(y, array![3.0f32, 6.0, 18.0]);
    assert_eq!(c, array![-2.0f32, -1.0, 3.0]);
}

#[test]
fn chained_and_partial_subscripts() {
    let a = array![1.0f32, 2.0, 3.0];
    let b = array![0.5f32, -1.0];
    let (t, rows, cols) = chained(&a, &b).unwrap();
    assert_eq!(t.dim(), (2, 3));
    for i in 0..3 {
        for j in 0..2 {
            assert_eq!(t[[j, i]], a[i] * b[j]);
        }
        assert_eq!(rows[i], (0..2).map(|j| a[i] * b[j]).sum::<f32>());
    }
    for j in 0..2 {
        assert_eq!(cols[j], (0..3).map(|i| a[i] * b[j]).sum::<f32>());
    }
}

#[test]
fn inside_reductions() {
    let x = array![1.0f32, -2.0, 0.5];
    let (y, s, z) = in_reductions(&x).unwrap();
    for i in 0..3 {
        assert_eq!(y[i], x[i] + 2.0 * x[i] + 3.0 * x[i]);
        let v = 2.0 * x[i];
        assert_eq!(z[i], v * (2.0 * v) * (3.0 * v));
    }
    assert_eq!(s, (0..3).map(|k| 3.0 * x[k] - x[k]).sum::<f32>());
}

#[test]
fn comprehension_and_recurrence() {
    let x = array![1.0f32, -2.0, 0.5, 3.0];
    let r = ramp_ref(&x);
    assert_eq!(comprehension(&x).unwrap(), array![r[0], r[2], r[4], r[6], r[8]]);

    let x = array![2.0f32, 4.0, -1.0];
    let h = iterate(&x).unwrap();
    let mut want = [[0.0f32; 3]; 4];
    want[0] = [x[0], x[1], x[2]];
    for t in 1..4 {
        for j in 0..3 {
            want[t][j] = x[j] * 0.5 + 1.0 + want[t - 1][0] * (j + 1) as f32;
        }
    }
    for t in 0..4 {
        for j in 0..3 {
            assert_eq!(h[[t, j]], want[t][j]);
        }
    }
}
