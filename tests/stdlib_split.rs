//! `std::ml::split`: the first part of a tensor split along any axis, with
//! the size taken from an integer vector at run time (as the seed's `split`
//! returns it). References are slices taken by ndarray.

use einlang::einlang;
use einlang::ndarray::{array, s, Array3, ArrayD, IxDyn, Slice};
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

    /// Every axis of ranks 4 to 6, counted from the front or the back.
    pub fn split4(x: [i32; A, B, C, D], size: i64, axis: i64) -> [i32; ?, ?, ?, ?] {
        split(x, [size], axis)
    }
    pub fn split5(x: [i32; A, B, C, D, E], size: i64, axis: i64) -> [i32; ?, ?, ?, ?, ?] {
        split(x, [size], axis)
    }
    pub fn split6(x: [i32; A, B, C, D, E, F], size: i64, axis: i64) -> [i32; ?, ?, ?, ?, ?, ?] {
        split(x, [size], axis)
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
    assert_eq!(middle(&x, &array![2]).unwrap(), x.slice(s![.., ..2, ..]));
    let m = array![[-1.0f32, 2.0], [3.0, -4.0]];
    assert_eq!(head_relu(&m).unwrap(), array![[0.0f32, 2.0]]);
}

#[test]
fn split_along_every_axis_of_ranks_4_to_6() {
    let shape = [2usize, 3, 4, 2, 3, 2];
    for rank in 4..=6 {
        let dims = &shape[..rank];
        let x = ArrayD::from_shape_fn(IxDyn(dims), |ix| (0..rank).fold(0i32, |acc, k| acc * 10 + ix[k] as i32));
        for axis in 0..rank {
            let size = dims[axis] - 1;
            let mut want = x.clone();
            want.slice_axis_inplace(einlang::ndarray::Axis(axis), Slice::from(..size));
            for given in [axis as i64, axis as i64 - rank as i64] {
                let got = match rank {
                    4 => split4(&x.view().into_dimensionality().unwrap(), size as i64, given).unwrap().into_dyn(),
                    5 => split5(&x.view().into_dimensionality().unwrap(), size as i64, given).unwrap().into_dyn(),
                    _ => split6(&x.view().into_dimensionality().unwrap(), size as i64, given).unwrap().into_dyn(),
                };
                assert_eq!(got, want, "rank {rank}, axis {given}");
            }
        }
    }
}

#[test]
fn bad_sizes_and_axes_are_errors() {
    let m = array![[1.0f32, 2.0], [3.0, 4.0]];
    assert!(matches!(head_rows(&m, &array![3]), Err(Error::Assert { .. })));
    assert!(matches!(head(&array![1, 2], &array![]), Err(Error::Index { .. })));
    let x = Array3::<f32>::zeros((2, 3, 4));
    assert!(matches!(middle(&x, &array![4]), Err(Error::Assert { .. })));
    assert!(matches!(last_of_3(&x, &array![5]), Err(Error::Assert { .. })));
    let x4 = einlang::ndarray::Array4::<i32>::zeros((1, 2, 3, 4));
    assert!(matches!(split4(&x4, 1, 4), Err(Error::Assert { .. })));
    assert!(matches!(split4(&x4, 1, -5), Err(Error::Assert { .. })));
}
