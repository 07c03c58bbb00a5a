//! Named rest indices in generic functions: one definition serves every
//! rank. Compared with naive loops.

use approx::assert_relative_eq;
use einlang::einlang;
use einlang::ndarray::{Array1, Array2, Array3, Axis};

einlang! {
    use std::math::exp;

    /// Softmax over the last axis, for any rank.
    fn softmax(x) {
        let m[..b] = max[c](x[..b, c]);
        let e[..b, c] = exp(x[..b, c] - m[..b]);
        let s[..b] = sum[c](e[..b, c]);
        let y[..b, c] = e[..b, c] / s[..b];
        y
    }

    /// A dense layer over any number of leading batch axes.
    fn dense(x, w) {
        let y[..batch, o] = sum[i](x[..batch, i] * w[i, o]);
        y
    }

    pub fn softmax1(x: [f32; N]) -> [f32; N] { softmax(x) }
    pub fn softmax2(x: [f32; R, C]) -> [f32; R, C] { softmax(x) }
    pub fn softmax3(x: [f64; A, B, C]) -> [f64; A, B, C] { softmax(x) }
    pub fn dense2(x: [f32; B, I], w: [f32; I, O]) -> [f32; B, O] { dense(x, w) }
    pub fn dense3(x: [f32; T, B, I], w: [f32; I, O]) -> [f32; T, B, O] { dense(x, w) }
}

fn softmax_ref(row: &[f64]) -> Vec<f64> {
    let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let e: Vec<f64> = row.iter().map(|v| (v - m).exp()).collect();
    let s: f64 = e.iter().sum();
    e.iter().map(|v| v / s).collect()
}

#[test]
fn softmax_at_ranks_one_to_three() {
    let v = Array1::from_vec(vec![1.0f32, 2.0, 3.0, 1000.0]);
    let got = softmax1(&v).unwrap();
    let want = softmax_ref(&v.iter().map(|x| *x as f64).collect::<Vec<_>>());
    for (g, w) in got.iter().zip(&want) {
        assert_relative_eq!(*g as f64, *w, max_relative = 1e-5);
    }
    let m = Array2::from_shape_fn((3, 4), |(i, j)| (i * 4 + j) as f32 * 0.7 - 3.0);
    let got = softmax2(&m).unwrap();
    for (gr, mr) in got.axis_iter(Axis(0)).zip(m.axis_iter(Axis(0))) {
        let want = softmax_ref(&mr.iter().map(|x| *x as f64).collect::<Vec<_>>());
        for (g, w) in gr.iter().zip(&want) {
            assert_relative_eq!(*g as f64, *w, max_relative = 1e-5);
        }
    }
    let t = Array3::from_shape_fn((2, 3, 5), |(a, b, c)| ((a * 15 + b * 5 + c) as f64).sin() * 4.0);
    let got = softmax3(&t).unwrap();
    for a in 0..2 {
        for b in 0..3 {
            let row: Vec<f64> = (0..5).map(|c| t[[a, b, c]]).collect();
            let want = softmax_ref(&row);
            for c in 0..5 {
                assert_relative_eq!(got[[a, b, c]], want[c], max_relative = 1e-12);
            }
        }
    }
}

#[test]
fn dense_over_any_number_of_batch_axes() {
    let w = Array2::from_shape_fn((3, 2), |(i, o)| (i as f32) - (o as f32) * 0.5);
    let x2 = Array2::from_shape_fn((4, 3), |(b, i)| (b * 3 + i) as f32 * 0.25);
    let y2 = dense2(&x2, &w).unwrap();
    let x3 = Array3::from_shape_fn((2, 4, 3), |(t, b, i)| (t * 12 + b * 3 + i) as f32 * 0.1);
    let y3 = dense3(&x3, &w).unwrap();
    for b in 0..4 {
        for o in 0..2 {
            let want: f32 = (0..3).map(|i| x2[[b, i]] * w[[i, o]]).sum();
            assert_relative_eq!(y2[[b, o]], want, max_relative = 1e-6);
            for t in 0..2 {
                let want: f32 = (0..3).map(|i| x3[[t, b, i]] * w[[i, o]]).sum();
                assert_relative_eq!(y3[[t, b, o]], want, max_relative = 1e-6);
            }
        }
    }
}

einlang! {
    /// Reductions over a rest index: every axis it spans.
    fn sum_squares(x) { sum[..r](x[..r] * x[..r]) }

    /// The largest entry of each leading slice.
    fn slice_max(x) {
        let y[i] = max[..r](x[i, ..r]);
        y
    }

    pub fn sum_squares1(x: [f64; N]) -> f64 { sum_squares(x) }
    pub fn sum_squares3(x: [f64; A, B, C]) -> f64 { sum_squares(x) }
    pub fn slice_max2(x: [i32; R, C]) -> [i32; R] { slice_max(x) }
    pub fn slice_max3(x: [f32; A, B, C]) -> [f32; A] { slice_max(x) }
}

#[test]
fn reductions_over_rest_indices() {
    let v = Array1::from_vec(vec![1.5f64, -2.0, 0.5]);
    assert_relative_eq!(sum_squares1(&v).unwrap(), 1.5 * 1.5 + 4.0 + 0.25);
    let c = Array3::from_shape_fn((2, 3, 4), |(a, b, d)| (a as f64) - 0.5 * (b as f64) + 0.25 * (d as f64));
    let want: f64 = c.iter().map(|v| v * v).sum();
    assert_relative_eq!(sum_squares3(&c).unwrap(), want, epsilon = 1e-12);
    let m = Array2::from_shape_fn((3, 4), |(i, j)| ((i * 7 + j * 5) % 11) as i32 - 5);
    let want: Vec<i32> = m.rows().into_iter().map(|r| *r.iter().max().unwrap()).collect();
    assert_eq!(slice_max2(&m).unwrap().to_vec(), want);
    let x = c.mapv(|v| v as f32);
    let want: Vec<f32> = x.axis_iter(Axis(0)).map(|s| s.iter().cloned().fold(f32::NEG_INFINITY, f32::max)).collect();
    assert_eq!(slice_max3(&x).unwrap().to_vec(), want);
}

einlang! {
    /// Rest indices in typed functions: the parameters' ranks expand them.
    pub fn scale_rows(x: [f32; B, T, D], s: [f32; B, T]) -> [f32; B, T, D] {
        let y[..b, d] = x[..b, d] * s[..b];
        y
    }

    pub fn total3(x: [f64; A, B, C]) -> f64 {
        sum[..r](x[..r])
    }
}

#[test]
fn rest_indices_in_typed_functions() {
    let x = Array3::from_shape_fn((2, 3, 4), |(a, b, c)| (a * 12 + b * 4 + c) as f32);
    let s = Array2::from_shape_fn((2, 3), |(a, b)| (a + b) as f32 - 1.0);
    let got = scale_rows(&x, &s).unwrap();
    for ((a, b, c), v) in got.indexed_iter() {
        assert_eq!(*v, x[[a, b, c]] * s[[a, b]]);
    }
    let y = x.mapv(|v| v as f64 * 0.5);
    assert_relative_eq!(total3(&y).unwrap(), y.sum(), epsilon = 1e-12);
}

mod guarded_points {
    einlang::einlang! {
        fn positive_part(x) { let y[..i] = x[..i] where x[..i] > 0.0; y }
        fn count_positive(x) { sum[..r](1i64 where x[..r] > 0.0) }
        fn largest_negative(x) { max[..r](x[..r] where x[..r] < 0.0) }
        fn ones(x) { let one[..i] = 1i64 where v = x[..i]; one }

        /// At a scalar the rest indices span no axis: each definition or
        /// reduction is over one point, which its guard may exclude.
        pub fn at_scalar(a: f64) -> (f64, i64, f64, i64) {
            (positive_part(a), count_positive(a), largest_negative(a), ones(a))
        }
        pub fn at_vector(v: [f64; N]) -> ([f64; N], i64, f64, [i64; N]) {
            (positive_part(v), count_positive(v), largest_negative(v), ones(v))
        }
    }
}

#[test]
fn guards_over_rest_indices_that_span_no_axis() {
    assert_eq!(guarded_points::at_scalar(2.5).unwrap(), (2.5, 1, f64::NEG_INFINITY, 1));
    assert_eq!(guarded_points::at_scalar(-1.5).unwrap(), (0.0, 0, -1.5, 1));
    let v = einlang::ndarray::array![1.0, -4.0, 3.0, -0.5];
    let (p, c, m, o) = guarded_points::at_vector(&v).unwrap();
    assert_eq!(p.to_vec(), v.iter().map(|x| if *x > 0.0 { *x } else { 0.0 }).collect::<Vec<_>>());
    assert_eq!(c, v.iter().filter(|x| **x > 0.0).count() as i64);
    assert_eq!(m, v.iter().copied().filter(|x| *x < 0.0).fold(f64::NEG_INFINITY, f64::max));
    assert_eq!(o.to_vec(), vec![1; 4]);
}

mod top_level {
    einlang::einlang! {
        fn corners() -> [f64; 2, 3] { [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]] }

        // Rest indices in top-level statements, over bindings whose rank the
        // program shows: literals, calls with a declared result, operators
        // of those, earlier definitions.
        let x = [[1.0, 2.0], [3.0, 4.0]];
        let doubled[..b] = x[..b] * 2.0;
        let row_sums[i] = sum[..r](x[i, ..r]);
        let m = corners() * 2.0;
        let shifted[..b, j] = m[..b, j] + 1.0;
        let total = sum[..r](shifted[..r]);

        /// A function reads bindings defined with rest indices.
        fn corner_sum() { doubled[0, 0] + doubled[1, 1] + row_sums[1] }

        assert(doubled[0, 1] == 4.0 && doubled[1, 0] == 6.0, "doubled");
        assert(row_sums[0] == 3.0 && row_sums[1] == 7.0, "row sums");
        // (1..=6) doubled plus one each: 2 * 21 + 6.
        assert(total == 48.0, "total");
        assert(corner_sum() == 2.0 + 8.0 + 7.0, "read by a function");
    }
}

#[test]
fn rest_indices_in_top_level_statements() {
    top_level::main().unwrap();
}
