//! Operators on whole tensors, without indices: between tensors of one
//! shape, or a tensor and a scalar (LANGUAGE.md §2), for arithmetic,
//! comparisons and the logical `&&`, `||`, `!` alike.

use einlang::einlang;
use einlang::ndarray::{array, Array2};

einlang! {
    /// Which entries lie strictly between `lo` and `hi`, which lie outside
    /// it or are flagged, and which are neither.
    pub fn bands(x: [f64; N, M], lo: f64, hi: f64, flag: [bool; N, M]) -> ([bool; N, M], [bool; N, M], [bool; N, M]) {
        let inside = x > lo && x < hi;
        let out_or_flag = !inside || flag;
        let neither = !(inside || flag) && true;
        (inside, out_or_flag, neither)
    }

    /// Logical operators between a tensor and a scalar `bool`.
    pub fn with_scalar(v: [bool; K], s: bool) -> ([bool; K], [bool; K]) {
        (v && s, s || !v)
    }
}

#[test]
fn logical_operators_apply_element_by_element() {
    let x = Array2::from_shape_fn((3, 4), |(i, j)| i as f64 * 1.5 - j as f64 * 0.75);
    let flag = Array2::from_shape_fn((3, 4), |(i, j)| (i + 2 * j) % 3 == 0);
    let (inside, out_or_flag, neither) = bands(&x, -1.0, 1.6, &flag).unwrap();
    for ((i, j), &v) in x.indexed_iter() {
        let ins = v > -1.0 && v < 1.6;
        assert_eq!(inside[[i, j]], ins, "inside at {i},{j}");
        assert_eq!(out_or_flag[[i, j]], !ins || flag[[i, j]], "out_or_flag at {i},{j}");
        assert_eq!(neither[[i, j]], !(ins || flag[[i, j]]), "neither at {i},{j}");
    }
    let v = array![true, false, true, false];
    assert_eq!(with_scalar(&v, true).unwrap(), (array![true, false, true, false], array![true, true, true, true]));
    assert_eq!(with_scalar(&v, false).unwrap(), (array![false, false, false, false], array![false, true, false, true]));
}
