//! `std::array` against independent references: each function is compared
//! with a hand-written Rust loop over the same input, or with values derived
//! by hand. The rank-polymorphic functions run at ranks 1 to 3 and at f32,
//! f64 and (where it means something) i32.

mod common;

use common::*;
use einlang::einlang;
use einlang::ndarray::{array, Array, Array1, Array2, Array3, ArrayD, Axis, Dimension};

einlang! {
    use std::array::*;

    pub fn flatten_f32(x: [f32; M, N]) -> [f32; M * N] { flatten(x) }
    pub fn flatten_f64(x: [f64; M, N]) -> [f64; M * N] { flatten(x) }
    pub fn flatten_i32(x: [i32; M, N]) -> [i32; M * N] { flatten(x) }

    pub fn transpose2(x: [f32; M, N]) -> [f32; N, M] { transpose(x) }
    pub fn transpose3(x: [f64; B, M, N]) -> [f64; B, N, M] { transpose(x) }

    pub fn sum_f32(x: [f32; N]) -> f32 { std::array::sum(x) }
    pub fn sum_f64(x: [f64; N]) -> f64 { std::array::sum(x) }
    pub fn sum_i32(x: [i32; N]) -> i32 { std::array::sum(x) }
    pub fn sum_scalar(x: f64) -> f64 { std::array::sum(x) }
    pub fn sum_matrix(x: [f64; M, N]) -> f64 { std::array::sum(x) }
    pub fn sum_cube(x: [i32; A, B, C]) -> i32 { std::math::sum(x) }

    pub fn concat1(a: [f32; N], b: [f32; M]) -> [f32; N + M] { concatenate(a, b) }
    pub fn concat2(a: [f64; N, C], b: [f64; M, C]) -> [f64; N + M, C] { concatenate(a, b) }
    pub fn concat3(a: [i32; N, C, D], b: [i32; M, C, D]) -> [i32; N + M, C, D] { concatenate(a, b) }

    pub fn arg_f32(x: [f32; N]) -> (i64, i64) { (argmax(x), argmin(x)) }
    pub fn arg_f64(x: [f64; N]) -> (i64, i64) { (argmax(x), argmin(x)) }
    pub fn arg_i32(x: [i32; N]) -> (i64, i64) { (argmax(x), argmin(x)) }
    pub fn arg_all_f32(x: [f32; N]) -> ([i64; ?], [i64; ?]) { (argmax_all(x), argmin_all(x)) }
    pub fn arg_all_i32(x: [i32; N]) -> ([i64; ?], [i64; ?]) { (argmax_all(x), argmin_all(x)) }

    pub fn cum1_f32(x: [f32; N]) -> ([f32; N], [f32; N], [f32; N], [f32; N]) {
        (cumsum(x), cumprod(x), cummax(x), cummin(x))
    }
    pub fn cum2_f64(x: [f64; R, N]) -> ([f64; R, N], [f64; R, N], [f64; R, N], [f64; R, N]) {
        (cumsum(x), cumprod(x), cummax(x), cummin(x))
    }
    pub fn cum3_f32(x: [f32; A, B, N]) -> ([f32; A, B, N], [f32; A, B, N], [f32; A, B, N], [f32; A, B, N]) {
        (cumsum(x), cumprod(x), cummax(x), cummin(x))
    }
    pub fn cum2_i32(x: [i32; R, N]) -> ([i32; R, N], [i32; R, N], [i32; R, N], [i32; R, N]) {
        (cumsum(x), cumprod(x), cummax(x), cummin(x))
    }

    pub fn partition_f32(x: [f32; N], p: f32) -> ([f32; ?], [f32; ?], [f32; ?]) { partition(x, p) }
    pub fn partition_i32(x: [i32; N], p: i32) -> ([i32; ?], [i32; ?], [i32; ?]) { partition(x, p) }

    pub fn topk_f32(x: [f32; N], k: i64) -> [f32; ?] { topk_extract(x, k) }
    pub fn topk_f64(x: [f64; N], k: i64) -> [f64; ?] { topk_extract(x, k) }
    pub fn topk_idx_f64(x: [f64; N], ix: [i64; N], k: i64) -> ([f64; ?], [i64; ?]) {
        topk_with_indices_extract(x, ix, k)
    }
}

/// The last-axis lanes of `x` transformed by `f` (a running fold), as a
/// dynamic-rank array of the same shape.
fn scan_ref<A: Copy, D: Dimension>(x: &Array<A, D>, f: impl Fn(A, A) -> A) -> ArrayD<A> {
    let mut out = x.clone().into_dyn();
    let last = Axis(out.ndim() - 1);
    for mut lane in out.lanes_mut(last) {
        for i in 1..lane.len() {
            lane[i] = f(lane[i - 1], lane[i]);
        }
    }
    out
}

fn check_cum_f32<D: Dimension>(x: &Array<f32, D>, got: [Array<f32, D>; 4]) {
    let want = [scan_ref(x, |a, b| a + b), scan_ref(x, |a, b| a * b), scan_ref(x, f32::max), scan_ref(x, f32::min)];
    for (g, w) in got.iter().zip(&want) {
        assert_close(&g.clone().into_dyn(), w, 1e-5);
    }
}

#[test]
fn flatten_is_row_major() {
    let x = rand2(3, 4, 1);
    let want = Array1::from_iter((0..3).flat_map(|i| (0..4).map(move |j| (i, j))).map(|(i, j)| x[[i, j]]));
    assert_eq!(flatten_f32(&x).unwrap(), want);
    let y = rand2_i32(2, 5, 2);
    let got = flatten_i32(&y).unwrap();
    assert_eq!(got.len(), 10);
    for k in 0..10 {
        assert_eq!(got[k], y[[k / 5, k % 5]]);
    }
    // A column-major view flattens in its logical (row-major) order.
    let xt = transposed(&x);
    assert_eq!(flatten_f32(&xt.t().to_owned()).unwrap(), want);
    assert_eq!(flatten_f32(&Array2::zeros((0, 3))).unwrap().len(), 0);
    let z = rand2_f64(4, 2, 3);
    assert_eq!(flatten_f64(&z).unwrap().to_vec(), z.iter().copied().collect::<Vec<_>>());
}

#[test]
fn transpose_swaps_the_last_two_axes() {
    let x = rand2(3, 5, 3);
    let got = transpose2(&x).unwrap();
    assert_eq!(got.dim(), (5, 3));
    for i in 0..3 {
        for j in 0..5 {
            assert_eq!(got[[j, i]], x[[i, j]]);
        }
    }
    let y = Array3::from_shape_fn((2, 3, 4), |(b, i, j)| (b * 100 + i * 10 + j) as f64);
    let got = transpose3(&y).unwrap();
    assert_eq!(got.dim(), (2, 4, 3));
    for b in 0..2 {
        for i in 0..3 {
            for j in 0..4 {
                assert_eq!(got[[b, j, i]], y[[b, i, j]]);
            }
        }
    }
}

#[test]
fn sum_of_a_vector() {
    let x = rand1(17, 4);
    let want = x.iter().map(|&v| f64::from(v)).sum::<f64>() as f32;
    assert_close_scalar(sum_f32(&x).unwrap(), want, 1e-5);
    let y = rand1_f64(9, 5);
    let mut acc = 0.0;
    for v in &y {
        acc += v;
    }
    assert_close_scalar(sum_f64(&y).unwrap(), acc, 1e-12);
    assert_eq!(sum_i32(&array![3, -4, 10]).unwrap(), 9);
    assert_eq!(sum_f32(&Array1::zeros(0)).unwrap(), 0.0);
}

#[test]
fn sum_of_every_element_at_ranks_0_to_3() {
    assert_eq!(sum_scalar(2.5).unwrap(), 2.5);
    let m = Array2::from_shape_fn((3, 4), |(i, j)| (i as f64) * 0.5 - (j as f64) * 1.25);
    let mut acc = 0.0;
    for i in 0..3 {
        for j in 0..4 {
            acc += m[[i, j]];
        }
    }
    assert_close_scalar(sum_matrix(&m).unwrap(), acc, 1e-12);
    assert_close_scalar(sum_matrix(&m.t()).unwrap(), acc, 1e-12);
    let c = Array3::from_shape_fn((2, 3, 2), |(a, b, d)| (a * 7 + b * 3) as i32 - d as i32 * 5);
    let mut total = 0;
    for a in 0..2 {
        for b in 0..3 {
            for d in 0..2 {
                total += c[[a, b, d]];
            }
        }
    }
    assert_eq!(sum_cube(&c).unwrap(), total);
}

#[test]
fn concatenate_along_the_first_axis() {
    let a = array![1.0f32, 2.0];
    let b = array![3.0f32, 4.0, 5.0];
    assert_eq!(concat1(&a, &b).unwrap(), array![1.0f32, 2.0, 3.0, 4.0, 5.0]);
    assert_eq!(concat1(&Array1::zeros(0), &b).unwrap(), b);

    let a = rand2_f64(2, 3, 6);
    let b = rand2_f64(4, 3, 7);
    let got = concat2(&a, &b).unwrap();
    assert_eq!(got.dim(), (6, 3));
    for i in 0..6 {
        for j in 0..3 {
            let want = if i < 2 { a[[i, j]] } else { b[[i - 2, j]] };
            assert_eq!(got[[i, j]], want);
        }
    }

    let a = Array3::from_shape_fn((1, 2, 2), |(i, j, k)| (i * 4 + j * 2 + k) as i32);
    let b = Array3::from_shape_fn((2, 2, 2), |(i, j, k)| -((i * 4 + j * 2 + k) as i32) - 1);
    let got = concat3(&a, &b).unwrap();
    assert_eq!(got.dim(), (3, 2, 2));
    for i in 0..3 {
        for j in 0..2 {
            for k in 0..2 {
                let want = if i < 1 { a[[i, j, k]] } else { b[[i - 1, j, k]] };
                assert_eq!(got[[i, j, k]], want);
            }
        }
    }
}

/// First index of the maximum and of the minimum, by a plain scan.
fn arg_ref<A: PartialOrd + Copy>(x: &[A]) -> (i64, i64) {
    let (mut hi, mut lo) = (0, 0);
    for i in 1..x.len() {
        if x[i] > x[hi] {
            hi = i;
        }
        if x[i] < x[lo] {
            lo = i;
        }
    }
    (hi as i64, lo as i64)
}

fn all_ref<A: PartialEq + Copy>(x: &[A], v: A) -> Vec<i64> {
    (0..x.len()).filter(|&i| x[i] == v).map(|i| i as i64).collect()
}

#[test]
fn argmax_and_argmin_take_the_first_extremum() {
    let x = rand1(20, 8);
    assert_eq!(arg_f32(&x).unwrap(), arg_ref(x.as_slice().unwrap()));
    let y = rand1_f64(11, 9);
    assert_eq!(arg_f64(&y).unwrap(), arg_ref(y.as_slice().unwrap()));
    // Ties: the first occurrence wins.
    assert_eq!(arg_i32(&array![2, 7, 1, 7, 1]).unwrap(), (1, 2));
    let z = rand1_i32(30, 10);
    assert_eq!(arg_i32(&z).unwrap(), arg_ref(z.as_slice().unwrap()));
}

#[test]
fn argmax_all_and_argmin_all_list_every_extremum() {
    let (hi, lo) = arg_all_f32(&array![3.0f32, -1.0, 3.0, 0.0, -1.0, 3.0]).unwrap();
    assert_eq!(hi.to_vec(), vec![0, 2, 5]);
    assert_eq!(lo.to_vec(), vec![1, 4]);
    let z = Array1::from_iter(rand1_i32(40, 11).iter().map(|v| v / 20));
    let s = z.as_slice().unwrap();
    let (hi, lo) = arg_all_i32(&z).unwrap();
    assert_eq!(hi.to_vec(), all_ref(s, *s.iter().max().unwrap()));
    assert_eq!(lo.to_vec(), all_ref(s, *s.iter().min().unwrap()));
}

#[test]
fn cumulative_functions_at_ranks_one_to_three() {
    // Values near 1 keep the running products in a comfortable range.
    let x1 = rand1(9, 12).mapv(|v| 1.0 + 0.3 * v);
    let (a, b, c, d) = cum1_f32(&x1).unwrap();
    check_cum_f32(&x1, [a, b, c, d]);

    let x3 = rand3(2, 3, 6, 13).mapv(|v| 1.0 + 0.3 * v);
    let (a, b, c, d) = cum3_f32(&x3).unwrap();
    check_cum_f32(&x3, [a, b, c, d]);

    let x2 = rand2_f64(4, 7, 14).mapv(|v| 1.0 + 0.5 * v);
    let (a, b, c, d) = cum2_f64(&x2).unwrap();
    let want =
        [scan_ref(&x2, |a, b| a + b), scan_ref(&x2, |a, b| a * b), scan_ref(&x2, f64::max), scan_ref(&x2, f64::min)];
    for (g, w) in [a, b, c, d].iter().zip(&want) {
        assert_close(&g.clone().into_dyn(), w, 1e-12);
    }
}

#[test]
fn cumulative_functions_on_integers() {
    let x = array![[3, -1, 4, 1, -5], [2, 2, -7, 1, 8]];
    let (s, p, hi, lo) = cum2_i32(&x).unwrap();
    assert_eq!(s, array![[3, 2, 6, 7, 2], [2, 4, -3, -2, 6]]);
    assert_eq!(p, array![[3, -3, -12, -12, 60], [2, 4, -28, -28, -224]]);
    assert_eq!(hi, array![[3, 3, 4, 4, 4], [2, 2, 2, 2, 8]]);
    assert_eq!(lo, array![[3, -1, -1, -1, -5], [2, 2, -7, -7, -7]]);
    let (s, ..) = cum2_i32(&Array2::zeros((2, 0))).unwrap();
    assert_eq!(s.dim(), (2, 0));
}

#[test]
fn partition_keeps_the_original_order() {
    let x = array![5.0f32, 1.0, 3.0, 7.0, 3.0, 0.0];
    let (s, e, l) = partition_f32(&x, 3.0).unwrap();
    assert_eq!(s.to_vec(), vec![1.0, 0.0]);
    assert_eq!(e.to_vec(), vec![3.0, 3.0]);
    assert_eq!(l.to_vec(), vec![5.0, 7.0]);

    let z = rand1_i32(50, 15);
    let (s, e, l) = partition_i32(&z, 4).unwrap();
    let zs = z.to_vec();
    assert_eq!(s.to_vec(), zs.iter().copied().filter(|&v| v < 4).collect::<Vec<_>>());
    assert_eq!(e.to_vec(), zs.iter().copied().filter(|&v| v == 4).collect::<Vec<_>>());
    assert_eq!(l.to_vec(), zs.iter().copied().filter(|&v| v > 4).collect::<Vec<_>>());
}

#[test]
fn topk_sorts_the_largest_first() {
    let x = array![1.0f32, 5.0, 2.0, 5.0, 9.0];
    assert_eq!(topk_f32(&x, 3).unwrap().to_vec(), vec![9.0, 5.0, 5.0]);
    assert_eq!(topk_f32(&x, 0).unwrap().len(), 0);
    assert_eq!(topk_f32(&x, 8).unwrap().to_vec(), vec![9.0, 5.0, 5.0, 2.0, 1.0]);

    let y = rand1_f64(25, 16);
    let ys = y.to_vec();
    for k in [1usize, 4, 25, 30] {
        let (want_v, want_i) = topk_ref(&ys, k);
        assert_eq!(topk_f64(&y, k as i64).unwrap().to_vec(), want_v);
        let ix = Array1::from_iter(0..25i64);
        let (v, i) = topk_idx_f64(&y, &ix, k as i64).unwrap();
        assert_eq!(v.to_vec(), want_v);
        assert_eq!(i.to_vec(), want_i);
    }
    // Ties keep their original order; the indices come from the argument.
    let t = array![2.0, 3.0, 2.0, 3.0];
    let (v, i) = topk_idx_f64(&t, &array![10, 11, 12, 13], 3).unwrap();
    assert_eq!(v.to_vec(), vec![3.0, 3.0, 2.0]);
    assert_eq!(i.to_vec(), vec![11, 13, 10]);
}
