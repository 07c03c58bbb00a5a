//! The seed implementation's standard-library paths and functions that
//! programs ported from it rely on: `std::array::partition_2d` (against a
//! hand-written loop over rows or columns), the submodules that share their
//! name with a function or constant (`std::math::sum::sum`,
//! `std::math::constants::pi::pi`), keywords as path segments after `::`
//! (`std::math::mod`, `std::ml::where`), and `std::math_utils` (against
//! values derived by hand and Rust's own operators).

mod common;

use common::*;
use einlang::einlang;
use einlang::ndarray::{array, s, Array1, Array2, ArrayView1, Axis, Ix2};

// ---------------------------------------------------------------------------
// std::array::partition_2d

einlang! {
    use std::array::partition_2d;

    pub fn partition_2d_f32(x: [f32; H, W], p: f32, axis: i64) -> ([f32; ?, ?], [f32; ?, ?], [f32; ?, ?]) {
        partition_2d(x, p, axis)
    }
    pub fn partition_2d_i32(x: [i32; H, W], p: i32, axis: i32) -> ([i32; ?, ?], [i32; ?, ?], [i32; ?, ?]) {
        std::array::partition_2d(x, p, axis)
    }
    /// Each part read afterwards by indices: its extents come from the
    /// value at run time, whichever axis was split.
    pub fn smaller_sum_and_shape(x: [f32; H, W], p: f32, axis: i64) -> (f32, i64, i64) {
        let parts = partition_2d(x, p, axis);
        let s = parts.0;
        (sum[i, j](s[i, j]), shape(s)[0], shape(s)[1])
    }
    /// The seed's call form: a literal axis and a use of the parts after.
    pub fn partition_rows_counts(x: [f64; H, W], p: f64) -> (i64, i64, i64, f64) {
        let parts = partition_2d(x, p, 0);
        let larger = parts.2;
        (len(parts.0), len(parts.1), len(larger), sum[i, j](larger[i, j]))
    }
}

/// The rows (axis 0) or columns (axis 1) of `x` whose elements all satisfy
/// `keep`, rows kept as rows and columns as columns.
fn select_ref<A: Copy>(x: &Array2<A>, axis: usize, keep: impl Fn(A) -> bool) -> Array2<A> {
    let lanes: Vec<ArrayView1<A>> = x.axis_iter(Axis(axis)).filter(|lane| lane.iter().all(|&v| keep(v))).collect();
    let (h, w) = x.dim();
    let flat: Vec<A> = lanes.iter().flat_map(|lane| lane.iter().copied()).collect();
    if axis == 0 {
        Array2::from_shape_vec((lanes.len(), w), flat).unwrap()
    } else {
        Array2::from_shape_vec((lanes.len(), h), flat).unwrap().reversed_axes()
    }
}

fn partition_2d_ref<A: Copy + PartialOrd>(x: &Array2<A>, p: A, axis: usize) -> [Array2<A>; 3] {
    [select_ref(x, axis, |v| v < p), select_ref(x, axis, |v| v == p), select_ref(x, axis, |v| v > p)]
}

/// Rows of small integers, some constant, some all below or above 5, so
/// that every part gets rows; the columns are mixed, but pivots 0 and 10
/// put some or all of them into one part.
fn partition_input() -> Array2<i32> {
    array![[1, 2, 3, 4, 1], [5, 5, 5, 5, 5], [7, 9, 6, 8, 6], [1, 7, 3, 9, 5], [5, 5, 5, 5, 5], [0, 4, 2, 4, 3],]
}

#[test]
fn partition_2d_rows_match_the_seed_example() {
    // The example in the seed's comments, with one more row: [1, 2] < 3,
    // [5, 6] > 3, [3, 3] == 3, and [3, 4] in no part (its elements are not
    // all 3; the seed's code agrees, though its comment lists it as equal).
    let x = array![[1.0f32, 2.0], [5.0, 6.0], [3.0, 4.0], [3.0, 3.0]];
    let (s, e, l) = partition_2d_f32(&x, 3.0, 0).unwrap();
    assert_eq!(s.into_dimensionality().unwrap(), array![[1.0f32, 2.0]]);
    assert_eq!(e.into_dimensionality().unwrap(), array![[3.0f32, 3.0]]);
    assert_eq!(l.into_dimensionality().unwrap(), array![[5.0f32, 6.0]]);
}

#[test]
fn partition_2d_splits_rows_and_columns_like_a_loop() {
    let x = partition_input();
    for axis in [0, 1] {
        for p in [0, 3, 5, 6, 10] {
            let got = partition_2d_i32(&x, p, axis).unwrap();
            let want = partition_2d_ref(&x, p, axis as usize);
            for (g, w) in [got.0, got.1, got.2].into_iter().zip(&want) {
                assert_eq!(g.into_dimensionality::<Ix2>().unwrap(), w, "axis {axis}, pivot {p}");
            }
        }
    }
    // Columns keep their height: the columns of the transpose are the rows
    // of `x`, of which rows 0 and 5 are all below 5.
    let (s, _, _) = partition_2d_i32(x.t(), 5, 1).unwrap();
    let s = s.into_dimensionality::<Ix2>().unwrap();
    assert_eq!(s, array![[1, 0], [2, 4], [3, 2], [4, 4], [1, 3]]);
}

#[test]
fn partition_2d_random_matrices_and_views() {
    for (seed, (h, w)) in [(1, (4, 3)), (2, (7, 2)), (3, (1, 5)), (4, (6, 1))] {
        // Values in {-1, 0, 1} so that all three parts can be non-empty.
        let x = rand2_i32(h, w, seed).mapv(|v| v.signum()).mapv(|v| v as f32);
        let (xt, spread) = (transposed(&x), spread_cols(&x, f32::NAN));
        for axis in [0usize, 1] {
            // The same matrix in row-major, column-major and strided storage.
            for input in [x.view(), xt.t(), spread.slice(s![.., ..;2])] {
                let got = partition_2d_f32(input, 0.0, axis as i64).unwrap();
                let want = partition_2d_ref(&x, 0.0, axis);
                for (g, w) in [got.0, got.1, got.2].into_iter().zip(&want) {
                    assert_eq!(g.into_dimensionality::<Ix2>().unwrap(), w);
                }
            }
        }
    }
}

#[test]
fn partition_2d_empty_parts_keep_the_other_extent() {
    let x = array![[1.0f32, 2.0, 3.0], [4.0, 5.0, 6.0]];
    // Nothing is equal to 9 and nothing larger: [0, 3] by rows, [2, 0] by
    // columns.
    let (s, e, l) = partition_2d_f32(&x, 9.0, 0).unwrap();
    assert_eq!((s.shape(), e.shape(), l.shape()), (&[2, 3][..], &[0, 3][..], &[0, 3][..]));
    let (s, e, l) = partition_2d_f32(&x, 9.0, 1).unwrap();
    assert_eq!((s.shape(), e.shape(), l.shape()), (&[2, 3][..], &[2, 0][..], &[2, 0][..]));
    // Every row of a matrix without columns is vacuously in all parts.
    let none = Array2::<f32>::zeros((3, 0));
    let (s, e, l) = partition_2d_f32(&none, 0.0, 0).unwrap();
    assert_eq!((s.shape(), e.shape(), l.shape()), (&[3, 0][..], &[3, 0][..], &[3, 0][..]));
}

#[test]
fn partition_2d_parts_are_read_with_their_own_extents() {
    // Columns 0 and 1 are all below 5, column 2 is not: the smaller part
    // is [2, 2], narrower than the input.
    let x = array![[1.0f32, 2.0, 3.0], [1.0, 2.0, 9.0]];
    assert_eq!(smaller_sum_and_shape(&x, 5.0, 1).unwrap(), (6.0, 2, 2));
    assert_eq!(smaller_sum_and_shape(&x, 5.0, 0).unwrap(), (6.0, 1, 3));
    assert_eq!(smaller_sum_and_shape(x.t(), 5.0, 0).unwrap(), (6.0, 2, 2));
    assert_eq!(smaller_sum_and_shape(x.t(), 3.5, 1).unwrap(), (6.0, 3, 1));
    for (seed, (h, w)) in [(5, (3, 7)), (6, (8, 2))] {
        let x = rand2_i32(h, w, seed).mapv(|v| v.signum() as f32);
        for axis in [0usize, 1] {
            let want = partition_2d_ref(&x, 0.0, axis);
            let got = smaller_sum_and_shape(&x, 0.0, axis as i64).unwrap();
            let (k0, k1) = want[0].dim();
            assert_eq!(got, (want[0].sum(), k0 as i64, k1 as i64), "seed {seed}, axis {axis}");
        }
    }
}

#[test]
fn partition_2d_nan_is_in_no_part() {
    let x = array![[1.0f32, f32::NAN], [1.0, 1.0], [f32::NAN, f32::NAN]];
    let (s, e, l) = partition_2d_f32(&x, 1.0, 0).unwrap();
    assert_eq!((s.shape(), l.shape()), (&[0, 2][..], &[0, 2][..]));
    assert_eq!(e.into_dimensionality::<Ix2>().unwrap(), array![[1.0f32, 1.0]]);
    let (s, e, l) = partition_2d_f32(&x, 1.0, 1).unwrap();
    assert_eq!((s.shape(), e.shape(), l.shape()), (&[3, 0][..], &[3, 0][..], &[3, 0][..]));
}

#[test]
fn partition_2d_counts_in_f64() {
    let x = rand2_f64(9, 4, 7).mapv(|v| (v * 2.0).round());
    let want = partition_2d_ref(&x, 0.0, 0);
    let (ns, ne, nl, total) = partition_rows_counts(&x, 0.0).unwrap();
    assert_eq!((ns, ne, nl), (want[0].nrows() as i64, want[1].nrows() as i64, want[2].nrows() as i64));
    assert_eq!(total, want[2].sum());
}

#[test]
fn partition_2d_rejects_other_axes() {
    let x = array![[1.0f32, 2.0], [3.0, 4.0]];
    for axis in [2, -1, 7] {
        let err = partition_2d_f32(&x, 2.0, axis).unwrap_err();
        assert!(matches!(err, einlang::Error::Assert { .. }), "axis {axis}: {err}");
        assert!(err.to_string().contains("axis must be 0"), "{err}");
    }
    assert!(partition_2d_i32(&array![[1, 2]], 1, 2).is_err());
}

// ---------------------------------------------------------------------------
// Submodules that share a name with a function or constant

mod submodules {
    einlang::einlang! {
        use std::math::sum::sum;
        use std::math::constants::pi::pi;
        use std::math::constants;

        /// The seed's file modules: `sum` from `std::math::sum`, `pi` from
        /// `std::math::constants::pi`, each called and (for pi) read.
        pub fn imported(x: [f64; N]) -> (f64, f32, f64, f32) {
            (sum(x), pi(), pi * x[0], constants::pi())
        }

        /// The same names by full path, and the function and constant
        /// behind each submodule.
        pub fn by_path(x: [f32; A, B]) -> (f32, f32, f32, f32, f32, f32) {
            (
                std::math::sum::sum(x),
                std::math::sum(x),
                std::math::constants::pi::pi(),
                std::math::constants::pi(),
                std::math::constants::pi,
                std::math::constants::pi::pi / 2.0,
            )
        }
    }
}

mod function_imports {
    einlang::einlang! {
        use std::math::sum;
        use std::math::constants::pi;

        /// Without the last `::name`, the import is the function or the
        /// constant, not the submodule.
        pub fn values(x: [i64; N]) -> (i64, f64) {
            let p: f64 = pi;
            (sum(x), p)
        }
    }
}

#[test]
fn seed_submodule_paths_resolve() {
    let x = array![2.0f64, -2.0, 4.25];
    let (s, p, tau, p2) = submodules::imported(&x).unwrap();
    assert_eq!(s, 2.0 - 2.0 + 4.25);
    assert_eq!(p, std::f32::consts::PI);
    assert_eq!(tau, std::f64::consts::TAU);
    assert_eq!(p2, std::f32::consts::PI);

    let m = array![[1.0f32, 2.0, 3.0], [4.0, 5.0, 6.5]];
    let got = submodules::by_path(&m).unwrap();
    let pi = std::f32::consts::PI;
    assert_eq!(got, (21.5, 21.5, pi, pi, pi, pi / 2.0));

    let v = Array1::from_iter(-3i64..=10);
    assert_eq!(function_imports::values(&v).unwrap(), ((-3..=10).sum(), std::f64::consts::PI));
}

// ---------------------------------------------------------------------------
// Keywords as path segments

mod keyword_paths {
    einlang::einlang! {
        use std::ml::where;
        use std::ml::where as select;
        use std::math::mod;
        use std::math::{mod as floor_mod, basic::{mod as basic_mod}};
        use std::ml;

        /// `std::math::mod` by every path: floored modulo (the sign of the
        /// divisor).
        pub fn mods(a: i64, b: i64) -> (i64, i64, i64, i64, i64) {
            (std::math::mod(a, b), floor_mod(a, b), basic_mod(a, b), self::mod(a, b), std::math::basic::mod(a, b))
        }

        /// `std::ml::where` by every path.
        pub fn selects(c: [bool; N], x: [f32; N], y: [f32; N]) -> ([f32; N], [f32; N], [f32; N], [f32; N]) {
            (std::ml::where(c, x, y), select(c, x, y), ml::where(c, y, x), self::where(c, x, y))
        }
    }
}

#[test]
fn keywords_after_colons_name_functions() {
    for a in -9i64..=9 {
        for b in [-4i64, -3, 2, 5] {
            let want = a.rem_euclid(b) + if b < 0 && a.rem_euclid(b) != 0 { b } else { 0 };
            // Floored modulo by hand: the remainder takes the divisor's sign.
            assert_eq!(want, a - b * (a as f64 / b as f64).floor() as i64);
            let got = keyword_paths::mods(a, b).unwrap();
            assert_eq!(got, (want, want, want, want, want), "{a} mod {b}");
        }
    }
    let c = array![true, false, false, true];
    let x = array![1.0f32, 2.0, 3.0, 4.0];
    let y = array![-1.0f32, -2.0, -3.0, -4.0];
    let (a, b, swapped, d) = keyword_paths::selects(&c, &x, &y).unwrap();
    let want = array![1.0f32, -2.0, -3.0, 4.0];
    assert_eq!(a, want);
    assert_eq!(b, want);
    assert_eq!(swapped, array![-1.0f32, 2.0, 3.0, -4.0]);
    assert_eq!(d, want);
}

// ---------------------------------------------------------------------------
// std::math_utils

mod math_utils {
    einlang::einlang! {
        use std::math_utils;
        use std::math_utils::{clamp, sign};

        pub fn utils_i32(a: i32, b: i32, lo: i32, hi: i32) -> (i32, i32, i32, i32) {
            (math_utils::max(a, b), math_utils::min(a, b), clamp(a, lo, hi), sign(a))
        }
        pub fn utils_i64(a: i64, b: i64, lo: i64, hi: i64) -> (i64, i64, i64, i32) {
            (math_utils::max(a, b), math_utils::min(a, b), clamp(a, lo, hi), sign(a))
        }
        pub fn utils_f32(a: f32, b: f32, lo: f32, hi: f32) -> (f32, f32, f32, i32) {
            (math_utils::max(a, b), math_utils::min(a, b), clamp(a, lo, hi), sign(a))
        }
        pub fn utils_f64(a: f64, b: f64, lo: f64, hi: f64) -> (f64, f64, f64, i32) {
            (std::math_utils::max(a, b), std::math_utils::min(a, b), std::math_utils::clamp(a, lo, hi), std::math_utils::sign(a))
        }
    }
}

/// The seed's definitions, written out: `b` on ties (and when a comparison
/// with NaN is false), the bounds outside them, 0 for zero and NaN.
fn utils_ref(a: f64, b: f64, lo: f64, hi: f64) -> (f64, f64, f64, i32) {
    let max = if a > b { a } else { b };
    let min = if a < b { a } else { b };
    let clamp = if a < lo {
        lo
    } else if a > hi {
        hi
    } else {
        a
    };
    let sign = if a > 0.0 {
        1
    } else if a < 0.0 {
        -1
    } else {
        0
    };
    (max, min, clamp, sign)
}

#[test]
fn math_utils_integers() {
    assert_eq!(math_utils::utils_i32(7, -2, 0, 5).unwrap(), (7, -2, 5, 1));
    assert_eq!(math_utils::utils_i32(-7, -2, 0, 5).unwrap(), (-2, -7, 0, -1));
    assert_eq!(math_utils::utils_i32(0, 0, -1, 1).unwrap(), (0, 0, 0, 0));
    assert_eq!(math_utils::utils_i32(i32::MIN, i32::MAX, -1, 1).unwrap(), (i32::MAX, i32::MIN, -1, -1));
    let mut rng = Rng::new(11);
    for _ in 0..200 {
        let (a, b, lo) = (rng.int(-50, 50) as i64, rng.int(-50, 50) as i64, rng.int(-20, 0) as i64);
        let hi = lo + rng.int(0, 30) as i64;
        let want = (a.max(b), a.min(b), a.clamp(lo, hi), a.signum() as i32);
        assert_eq!(math_utils::utils_i64(a, b, lo, hi).unwrap(), want, "{a} {b} {lo} {hi}");
    }
    assert_eq!(math_utils::utils_i64(i64::MAX, 1, 0, 9).unwrap(), (i64::MAX, 1, 9, 1));
}

#[test]
fn math_utils_floats() {
    let mut rng = Rng::new(12);
    for _ in 0..200 {
        let (a, b) = (rng.range(-3.0, 3.0), rng.range(-3.0, 3.0));
        let lo = rng.range(-2.0, 0.0);
        let hi = lo + rng.range(0.0, 2.0);
        assert_eq!(math_utils::utils_f64(a, b, lo, hi).unwrap(), utils_ref(a, b, lo, hi));
        let (af, bf, lof, hif) = (a as f32, b as f32, lo as f32, hi as f32);
        let (mx, mn, cl, sg) = utils_ref(af as f64, bf as f64, lof as f64, hif as f64);
        assert_eq!(math_utils::utils_f32(af, bf, lof, hif).unwrap(), (mx as f32, mn as f32, cl as f32, sg));
    }
    // Ties, signed zeros, infinities and NaN follow the comparisons.
    assert_eq!(math_utils::utils_f64(2.0, 2.0, 0.0, 1.0).unwrap(), (2.0, 2.0, 1.0, 1));
    let (mx, mn, cl, sg) = math_utils::utils_f64(-0.0, 0.0, -1.0, 1.0).unwrap();
    assert!(mx == 0.0 && mx.is_sign_positive() && mn.is_sign_positive() && cl.is_sign_negative() && sg == 0);
    assert_eq!(math_utils::utils_f32(f32::NEG_INFINITY, 1.0, -5.0, 5.0).unwrap(), (1.0, f32::NEG_INFINITY, -5.0, -1));
    let (mx, mn, cl, sg) = math_utils::utils_f64(f64::NAN, 1.0, -1.0, 1.0).unwrap();
    assert_eq!((mx, mn, sg), (1.0, 1.0, 0));
    assert!(cl.is_nan());
    let (mx, mn, _, _) = math_utils::utils_f64(1.0, f64::NAN, -1.0, 1.0).unwrap();
    assert!(mx.is_nan() && mn.is_nan());
}

mod rank_dispatched {
    einlang::einlang! {
        use std::ml::diag;
        /// `diag` builds a matrix from a vector and takes the diagonal of a
        /// matrix; `std::array::topk` is `std::ml::topk`.
        pub fn both(v: [f64; N], m: [i32; A, A]) -> ([f64; N, N], [i32; A], ([f64; ?], [i64; ?])) {
            (diag(v), diag(m), std::array::topk(v, 2, -1))
        }
    }
}

#[test]
fn diag_and_array_topk() {
    let v = einlang::ndarray::array![0.5, -1.0, 4.0, 2.0];
    let m = einlang::ndarray::Array2::from_shape_fn((3, 3), |(i, j)| (i * 10 + j) as i32);
    let (d, e, (vals, pos)) = rank_dispatched::both(&v, &m).unwrap();
    for i in 0..4 {
        for j in 0..4 {
            assert_eq!(d[[i, j]], if i == j { v[i] } else { 0.0 });
        }
    }
    assert_eq!(e.to_vec(), vec![0, 11, 22]);
    assert_eq!((vals.to_vec(), pos.to_vec()), (vec![4.0, 2.0], vec![2, 3]));
}
