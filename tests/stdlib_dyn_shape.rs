//! `std::ml::{reshape, squeeze, unsqueeze}`: shape operations whose extents
//! or axes come at run time, giving dynamic-rank results that a declared
//! result type (or `as`) checks. References are written by hand from the
//! row-major order of the elements.

use einlang::einlang;
use einlang::ndarray::{array, Array, ArrayD, IxDyn};
use einlang::Error;

einlang! {
    use std::ml::{reshape, squeeze, unsqueeze};

    /// A result of declared shape: rank and extents are checked.
    pub fn to_matrix(x: [f32; N], rows: i64) -> [f32; 2, ?] {
        reshape(x, [rows, -1])
    }

    pub fn any_shape(x: [i32; A, B], shape: [i64; K]) -> [i32; *] {
        reshape(x, shape)
    }

    pub fn drop_axes(x: [f64; A, B, C], axes: [i32; K]) -> [f64; *] {
        squeeze(x, axes)
    }

    pub fn add_axes(x: [f64; A, B], axes: [i64; K]) -> [f64; *] {
        unsqueeze(x, axes)
    }

    /// The seed's `std::ml::shape_ops::shape`: the extents as an `i64`
    /// vector, usable as a reshape target.
    pub fn extents(x: [f32; A, B, C]) -> [i64; 3] {
        std::ml::shape_ops::shape(x)
    }

    pub fn like(x: [i32; N], y: [f32; A, B]) -> [i32; *] {
        use std::ml::shape_ops::shape;
        reshape(x, shape(y))
    }

    /// Converted explicitly, then used with indices.
    pub fn trace_of(x: [f32; N]) -> f32 {
        let m = reshape(x, [2, 2]) as [f32; 2, 2];
        m[0, 0] + m[1, 1]
    }
}

#[test]
fn reshape_keeps_row_major_order() {
    let x = array![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
    assert_eq!(to_matrix(&x, 2).unwrap(), array![[1.0f32, 2.0, 3.0], [4.0, 5.0, 6.0]]);
    // Three rows is the wrong shape for `[f32; 2, ?]`: an error, not a panic.
    assert!(matches!(to_matrix(&x, 3), Err(Error::Extent { .. }) | Err(Error::Shape { .. })), "{:?}", to_matrix(&x, 3));
    assert!(matches!(to_matrix(&x, 4), Err(Error::Extent { .. })));

    let m = array![[1, 2, 3], [4, 5, 6]];
    let r = any_shape(&m, &array![3, 1, 2]).unwrap();
    assert_eq!(r, ArrayD::from_shape_vec(IxDyn(&[3, 1, 2]), vec![1, 2, 3, 4, 5, 6]).unwrap());
    // A transposed view is read in its logical order.
    let r = any_shape(&m.t(), &array![6]).unwrap();
    assert_eq!(r.iter().copied().collect::<Vec<_>>(), vec![1, 4, 2, 5, 3, 6]);
    assert_eq!(trace_of(&array![1.0f32, 2.0, 3.0, 4.0]).unwrap(), 5.0);
}

#[test]
fn squeeze_and_unsqueeze_by_axes() {
    let x = Array::from_shape_fn((1, 3, 1), |(_, j, _)| j as f64);
    assert_eq!(drop_axes(&x, &array![]).unwrap().shape(), &[3]);
    assert_eq!(drop_axes(&x, &array![-1]).unwrap().shape(), &[1, 3]);
    assert!(matches!(drop_axes(&x, &array![1]), Err(Error::Extent { .. })));
    let m = array![[1.0, 2.0], [3.0, 4.0]];
    let u = add_axes(&m, &array![0, 3]).unwrap();
    assert_eq!(u.shape(), &[1, 2, 2, 1]);
    assert_eq!(u.iter().copied().collect::<Vec<_>>(), vec![1.0, 2.0, 3.0, 4.0]);
    assert!(matches!(add_axes(&m, &array![7]), Err(Error::Extent { .. })));
}

#[test]
fn shape_gives_the_extents() {
    let x = Array::from_shape_fn((2, 3, 4), |(a, b, c)| (a + b + c) as f32);
    assert_eq!(extents(&x).unwrap(), array![2i64, 3, 4]);
    let y = array![[0.0f32, 0.0, 0.0], [0.0, 0.0, 0.0]];
    let got = like(&array![1, 2, 3, 4, 5, 6], &y).unwrap();
    assert_eq!(got, array![[1, 2, 3], [4, 5, 6]].into_dyn());
    assert!(like(&array![1, 2, 3], &y).is_err());
}
