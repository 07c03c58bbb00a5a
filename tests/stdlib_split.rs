//! `std::ml::split`: the first part of a tensor split along its first or
//! last axis, with the size taken from an integer vector at run time (as
//! the seed's `split` returns it). References are slices taken by ndarray.

use einlang::einlang;
use einlang::ndarray::{array, s, Array3};
use einlang::Error;

einlang! {
    use std::ml::split;

    pub fn head_rows(m: [f32; N, M], sizes: [i32; K]) -> [f32; ?, M] {
        split(m, sizes, 0)
    }

    pub fn head_cols(m: [f32; N, M], sizes: [i64; K]) -> [f32; N, ?] {
        split(m, sizes, -1)
    }

    pub fn head(v: [i32; N], sizes: [i32; K]) -> [i32; ?] {
        split(v, sizes, 0)
    }

    /// The split part used afterwards: its sum, through an indexed read.
    pub fn head_sum(v: [f64; N], sizes: [i32; K]) -> f64 {
        let h = split(v, sizes, 0);
        sum[i](h[i])
    }

    /// Rank 3, along the last axis given as rank - 1.
    pub fn last_of_3(x: [f32; A, B, C], sizes: [i32; K]) -> [f32; A, B, ?] {
        split(x, sizes, 2)
    }

    pub fn middle(x: [f32; A, B, C], sizes: [i32; K]) -> [f32; A, ?, C] {
        split(x, sizes, 1)
    }

    /// The seed's submodule paths reach the same functions.
    pub fn head_relu(m: [f32; N, M]) -> [f32; ?, M] {
        std::ml::activations::relu(std::ml::shape_ops::split(m, [1], 0))
    }
}

#[test]
fn split_takes_the_first_part_along_an_axis() {
    let m = array![[1.0f32, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0], [10.0, 11.0, 12.0]];
    assert_eq!(head_rows(&m, &array![3, 1]).unwrap(), m.slice(s![..3, ..]));
    assert_eq!(head_cols(&m, &array![2i64, 1]).unwrap(), m.slice(s![.., ..2]));
    assert_eq!(head_cols(&m.t(), &array![1i64]).unwrap(), m.t().slice(s![.., ..1]));
    assert_eq!(head(&array![5, 6, 7], &array![2]).unwrap(), array![5, 6]);
    assert_eq!(head(&array![5, 6, 7], &array![0]).unwrap().len(), 0);
    let v = array![0.5f64, 1.5, -2.0, 8.0];
    assert_eq!(head_sum(&v, &array![3]).unwrap(), 0.5 + 1.5 - 2.0);
    let x = Array3::from_shape_fn((2, 3, 4), |(a, b, c)| (a * 100 + b * 10 + c) as f32);
    assert_eq!(last_of_3(&x, &array![3]).unwrap(), x.slice(s![.., .., ..3]));
    let m = array![[-1.0f32, 2.0], [3.0, -4.0]];
    assert_eq!(head_relu(&m).unwrap(), array![[0.0f32, 2.0]]);
}

#[test]
fn bad_sizes_and_axes_are_errors() {
    let m = array![[1.0f32, 2.0], [3.0, 4.0]];
    assert!(matches!(head_rows(&m, &array![3]), Err(Error::Index { .. })));
    assert!(matches!(head(&array![1, 2], &array![]), Err(Error::Index { .. })));
    let x = Array3::<f32>::zeros((2, 3, 4));
    assert!(matches!(middle(&x, &array![1]), Err(Error::Assert { .. })));
}
