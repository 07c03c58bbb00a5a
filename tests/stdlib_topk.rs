//! `std::ml::topk(X, k, axis)` along every axis of tensors of rank 1 to 3
//! (and a few higher ranks), at f32, f64 and i32, against a naive loop:
//! for each lane along the axis, pick the largest remaining element (the
//! earliest on ties) k times. Bad `k` and `axis` must be `Error::Assert`.

mod common;

use common::Rng;
use einlang::einlang;
use einlang::ndarray::{Array, ArrayD, Axis, Dimension, IxDyn, ShapeBuilder};
use einlang::Error;

einlang! {
    use std::ml::topk;

    pub fn top1_f32(x: [f32; N], k: i64, axis: i64) -> ([f32; ?], [i64; ?]) { topk(x, k, axis) }
    pub fn top2_f32(x: [f32; A, B], k: i64, axis: i64) -> ([f32; ?, ?], [i64; ?, ?]) { topk(x, k, axis) }
    pub fn top3_f32(x: [f32; A, B, C], k: i64, axis: i64) -> ([f32; ?, ?, ?], [i64; ?, ?, ?]) {
        std::ml::selection_ops::topk(x, k, axis)
    }

    pub fn top1_f64(x: [f64; N], k: i32, axis: i32) -> ([f64; ?], [i64; ?]) { topk(x, k, axis) }
    pub fn top2_f64(x: [f64; A, B], k: i32, axis: i32) -> ([f64; ?, ?], [i64; ?, ?]) { topk(x, k, axis) }
    pub fn top3_f64(x: [f64; A, B, C], k: i64, axis: i32) -> ([f64; ?, ?, ?], [i64; ?, ?, ?]) { topk(x, k, axis) }

    pub fn top1_i32(x: [i32; N], k: i64, axis: i64) -> ([i32; ?], [i64; ?]) { topk(x, k, axis) }
    pub fn top2_i32(x: [i32; A, B], k: i64, axis: i64) -> ([i32; ?, ?], [i64; ?, ?]) { topk(x, k, axis) }
    pub fn top3_i32(x: [i32; A, B, C], k: i32, axis: i64) -> ([i32; ?, ?, ?], [i64; ?, ?, ?]) { topk(x, k, axis) }

    pub fn top4_f64(x: [f64; A, B, C, D], k: i64, axis: i64) -> ([f64; ?, ?, ?, ?], [i64; ?, ?, ?, ?]) {
        topk(x, k, axis)
    }
    pub fn top5_f32(x: [f32; A, B, C, D, E], k: i64, axis: i64) -> ([f32; ?, ?, ?, ?, ?], [i64; ?, ?, ?, ?, ?]) {
        topk(x, k, axis)
    }
    pub fn top7_i32(x: [i32; A, B, C, D, E, F, G], k: i64, axis: i64)
        -> ([i32; ?, ?, ?, ?, ?, ?, ?], [i64; ?, ?, ?, ?, ?, ?, ?]) {
        topk(x, k, axis)
    }
    pub fn top8_f64(x: [f64; A, B, C, D, E, F, G, H], k: i64, axis: i64)
        -> ([f64; ?, ?, ?, ?, ?, ?, ?, ?], [i64; ?, ?, ?, ?, ?, ?, ?, ?]) {
        topk(x, k, axis)
    }

    /// A literal axis and k, as the seed writes them; a result of this one
    /// is used by further Einlang code.
    pub fn top_first_rows(x: [f32; A, B]) -> [f32; ?] {
        let (v, i) = topk(x, 2, 0);
        let s[j] = v[0, j] + v[1, j] + (i[0, j] - i[1, j]) as f32;
        s
    }
}

/// The `k` largest entries of each lane of `x` along `axis`, largest
/// first, ties in their order, by a plain selection loop; and their
/// positions along the axis.
fn topk_ref<T: PartialOrd + Copy + Default, D: Dimension>(
    x: &Array<T, D>,
    k: usize,
    axis: usize,
) -> (ArrayD<T>, ArrayD<i64>) {
    let x = x.view().into_dyn();
    let mut shape = x.shape().to_vec();
    shape[axis] = k;
    let mut vals = ArrayD::from_elem(IxDyn(&shape), T::default());
    let mut idx = ArrayD::from_elem(IxDyn(&shape), 0i64);
    for ((lane, mut vl), mut il) in
        x.lanes(Axis(axis)).into_iter().zip(vals.lanes_mut(Axis(axis))).zip(idx.lanes_mut(Axis(axis)))
    {
        let mut taken = vec![false; lane.len()];
        for p in 0..k {
            let mut best: Option<usize> = None;
            for i in 0..lane.len() {
                if !taken[i] && best.is_none_or(|b| lane[i] > lane[b]) {
                    best = Some(i);
                }
            }
            let b = best.unwrap();
            taken[b] = true;
            vl[p] = lane[b];
            il[p] = b as i64;
        }
    }
    (vals, idx)
}

/// Values with many ties: a few distinct steps.
fn data<S: ShapeBuilder<Dim = D>, D: Dimension>(shape: S, seed: u64) -> Array<f64, D> {
    let mut rng = Rng::new(seed);
    Array::from_shape_fn(shape, |_| rng.int(-4, 4) as f64 * 0.5)
}

fn is_assert<T: std::fmt::Debug>(r: Result<T, Error>) -> bool {
    matches!(r, Err(Error::Assert { .. }))
}

/// Checks what `run(k, axis)` returns against the reference for every axis
/// (given as `axis` and as `axis - rank`) and every k.
fn check_all<T, D, E, F>(x: &Array<T, D>, run: F)
where
    T: PartialOrd + Copy + Default + std::fmt::Debug,
    D: Dimension,
    E: Dimension,
    F: Fn(usize, i64) -> Result<(Array<T, E>, Array<i64, E>), Error>,
{
    let rank = x.ndim();
    for axis in 0..rank {
        for k in 1..=x.shape()[axis] {
            let want = topk_ref(x, k, axis);
            for a in [axis as i64, axis as i64 - rank as i64] {
                let (values, positions) = run(k, a).unwrap();
                assert_eq!(values.into_dyn(), want.0, "values, axis {a}, k {k}, shape {:?}", x.shape());
                assert_eq!(positions.into_dyn(), want.1, "positions, axis {a}, k {k}, shape {:?}", x.shape());
            }
        }
    }
}

#[test]
fn rank_one_every_k() {
    let x = data(7, 1);
    let x32 = x.mapv(|v| v as f32);
    let xi = x.mapv(|v| (v * 2.0) as i32);
    check_all(&x, |k, a| top1_f64(&x, k as i32, a as i32));
    check_all(&x32, |k, a| top1_f32(&x32, k as i64, a));
    check_all(&xi, |k, a| top1_i32(&xi, k as i64, a));
}

#[test]
fn rank_two_every_axis() {
    for (shape, seed) in [((4, 5), 2), ((6, 3), 3), ((1, 4), 4), ((3, 1), 5)] {
        let x = data(shape, seed);
        let x32 = x.mapv(|v| v as f32 * 1.5);
        let xi = x.mapv(|v| (v * 2.0) as i32);
        check_all(&x, |k, a| top2_f64(&x, k as i32, a as i32));
        check_all(&x32, |k, a| top2_f32(&x32, k as i64, a));
        check_all(&xi, |k, a| top2_i32(&xi, k as i64, a));
    }
}

#[test]
fn rank_three_every_axis() {
    for (shape, seed) in [((3, 4, 5), 6), ((5, 2, 3), 7), ((2, 6, 1), 8)] {
        let x = data(shape, seed);
        let x32 = x.mapv(|v| v as f32 - 0.25);
        let xi = x.mapv(|v| (v * 2.0) as i32);
        check_all(&x, |k, a| top3_f64(&x, k as i64, a as i32));
        check_all(&x32, |k, a| top3_f32(&x32, k as i64, a));
        check_all(&xi, |k, a| top3_i32(&xi, k as i32, a));
    }
}

/// Ranks 4, 5 and 7 reach the kernels for axes 1 to 3 from the front and
/// the two before the last; at rank 8, axis 4 has no kernel.
#[test]
fn higher_ranks_every_axis() {
    let x4 = data((2, 3, 4, 3), 9);
    check_all(&x4, |k, a| top4_f64(&x4, k as i64, a));
    let x5 = data((2, 3, 2, 4, 3), 10).mapv(|v| v as f32);
    check_all(&x5, |k, a| top5_f32(&x5, k as i64, a));
    let x7 = data(IxDyn(&[2, 1, 3, 2, 3, 2, 2]), 11).mapv(|v| (v * 2.0) as i32);
    check_all(&x7, |k, a| top7_i32(&x7, k as i64, a));
    let x8 = data(IxDyn(&[2, 1, 2, 1, 3, 1, 2, 2]), 12);
    for axis in [0i64, 1, 2, 3, 5, 6, 7, -1, -3] {
        let (v, i) = top8_f64(&x8, 1, axis).unwrap();
        let want = topk_ref(&x8, 1, axis.rem_euclid(8) as usize);
        assert_eq!((v.into_dyn(), i.into_dyn()), want);
    }
    assert!(is_assert(top8_f64(&x8, 1, 4)));
    assert!(is_assert(top8_f64(&x8, 1, -4)));
}

#[test]
fn results_are_usable_in_einlang() {
    let x = data((4, 3), 13).mapv(|v| v as f32);
    let (v, i) = topk_ref(&x, 2, 0);
    let want: Vec<f32> = (0..3).map(|j| v[[0, j]] + v[[1, j]] + (i[[0, j]] - i[[1, j]]) as f32).collect();
    assert_eq!(top_first_rows(&x).unwrap().to_vec(), want);
}

#[test]
fn ties_keep_their_order_and_positions_are_along_the_axis() {
    let x = einlang::ndarray::array![[1.0f64, 3.0, 3.0], [3.0, 1.0, 3.0]];
    let (v, i) = top2_f64(&x, 2, 0).unwrap();
    assert_eq!(v, einlang::ndarray::array![[3.0, 3.0, 3.0], [1.0, 1.0, 3.0]]);
    assert_eq!(i, einlang::ndarray::array![[1, 0, 0], [0, 1, 1]]);
    let (v, i) = top2_f64(&x, 2, 1).unwrap();
    assert_eq!(v, einlang::ndarray::array![[3.0, 3.0], [3.0, 3.0]]);
    assert_eq!(i, einlang::ndarray::array![[1, 2], [0, 2]]);
}

#[test]
fn bad_k_and_axis_are_assertions() {
    let x1 = data(5, 14).mapv(|v| v as f32);
    let x2 = data((3, 4), 15);
    let x3 = data((2, 3, 4), 16).mapv(|v| v as i32);
    for k in [0, -1, 6] {
        assert!(is_assert(top1_f32(&x1, k, 0)), "k {k}");
    }
    for axis in [1, -2, 7] {
        assert!(is_assert(top1_f32(&x1, 1, axis)), "axis {axis}");
    }
    // k is checked against the chosen axis.
    assert!(is_assert(top2_f64(&x2, 4, 0)));
    assert!(top2_f64(&x2, 4, 1).is_ok());
    assert!(is_assert(top2_f64(&x2, 5, -1)));
    assert!(is_assert(top2_f64(&x2, 0, 1)));
    for axis in [2, -3] {
        assert!(is_assert(top2_f64(&x2, 1, axis)), "axis {axis}");
    }
    assert!(is_assert(top3_i32(&x3, 3, 0)));
    assert!(is_assert(top3_i32(&x3, 4, -2)));
    assert!(top3_i32(&x3, 4, -1).is_ok());
    for axis in [3, -4, i64::MIN / 2] {
        assert!(is_assert(top3_i32(&x3, 1, axis)), "axis {axis}");
    }
}
