//! An array literal's element type comes from all its elements and its
//! context, never from the first element alone: `[1, 2.5, 4.0]` is `[1.0,
//! 2.5, 4.0]` (`f32`, or `f64` where the context is `f64`) in a `let`, as
//! a function's argument, indexed directly and as a function's result. An
//! all-integer literal stays an integer.

use einlang::einlang;
use einlang::ndarray::{array, Array1};

einlang! {
    /// In a `let` with no other context: `f32`.
    pub fn in_let() -> [f32; 3] {
        let a = [1, 2.5, 4.0];
        a
    }

    /// In a `let` used with an `f64`: the use makes it `f64`.
    pub fn in_let_f64(x: f64) -> [f64; 3] {
        let a = [1, 2.5, 4];
        let y[i] = a[i] * x;
        y
    }

    /// As the argument of a function taking `[f64; 3]`.
    pub fn as_argument() -> f64 {
        total([2, 0.25, 1])
    }

    fn total(v: [f64; 3]) -> f64 {
        sum[i](v[i])
    }

    /// As the argument of a generic function: the literal's own type, `f32`.
    pub fn as_generic_argument() -> [f32; 3] {
        twice([3, 1.5, -1])
    }

    fn twice(v) {
        let y[i] = v[i] * 2;
        y
    }

    /// Indexed directly.
    pub fn indexed(k: i64) -> f32 {
        [1, 2.5, 4.0][k]
    }

    /// Indexed directly inside a definition over a parameter.
    pub fn indexed_in_def(x: [f32; 3]) -> [f32; 3] {
        let y[i] = x[i] * [1, 0.5, 3][i];
        y
    }

    /// Returned as the function's result, declared `f64`.
    pub fn returned() -> [f64; 3] {
        [1, 2.5, 4]
    }

    /// Nested, the float literal in a later row.
    pub fn nested() -> [f32; 2, 2] {
        [[1, 2], [3.5, 4]]
    }

    /// All integers: an integer literal.
    pub fn integers() -> [i32; 3] {
        let a = [1, 2, 4];
        a
    }

    /// All integers, summed as integers.
    pub fn integer_sum() -> i32 {
        let a = [7, 2, 4];
        sum[i](a[i])
    }
}

#[test]
fn in_a_let() {
    assert_eq!(in_let().unwrap(), array![1.0f32, 2.5, 4.0]);
    assert_eq!(in_let_f64(2.0).unwrap(), array![2.0f64, 5.0, 8.0]);
}

#[test]
fn as_an_argument() {
    assert_eq!(as_argument().unwrap(), 3.25f64);
    assert_eq!(as_generic_argument().unwrap(), array![6.0f32, 3.0, -2.0]);
}

#[test]
fn indexed_directly() {
    assert_eq!(indexed(0).unwrap(), 1.0f32);
    assert_eq!(indexed(1).unwrap(), 2.5f32);
    assert!(indexed(3).is_err());
    let x: Array1<f32> = array![2.0, 4.0, 1.0];
    assert_eq!(indexed_in_def(&x).unwrap(), array![2.0f32, 2.0, 3.0]);
}

#[test]
fn returned_and_nested() {
    assert_eq!(returned().unwrap(), array![1.0f64, 2.5, 4.0]);
    assert_eq!(nested().unwrap(), array![[1.0f32, 2.0], [3.5, 4.0]]);
}

#[test]
fn all_integer_literals_stay_integers() {
    let a: Array1<i32> = integers().unwrap();
    assert_eq!(a, array![1, 2, 4]);
    let s: i32 = integer_sum().unwrap();
    assert_eq!(s, 13);
}
