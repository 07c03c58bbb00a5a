//! Dynamic rank `[T; *]` and checked tensor conversions `x as [T; ...]`.
//!
//! A `[T; *]` parameter takes an `ArrayViewD`, a `[T; *]` result is an
//! `ArrayD`. Converting to a type of known rank checks the rank and the
//! declared extents at run time and is an `Err` on a mismatch; a tensor of
//! known rank converts to `[T; *]` implicitly (at a call, a result, an
//! annotated `let`) or with `as`.

use einlang::einlang;
use einlang::ndarray::{array, Array, ArrayD, Ix2, IxDyn};
use einlang::Error;

einlang! {
    /// The input, checked to be a batch of 8 single-channel 5x5 images.
    pub fn as_images(x: [f32; *]) -> [f32; 8, 1, 5, 5] {
        x as [f32; 8, 1, 5, 5]
    }

    /// The sum of a matrix given with dynamic rank; its extents are read
    /// from the value (`N`, `M` name them).
    pub fn matrix_total(x: [f32; *]) -> f32 {
        let m = x as [f32; N, M];
        sum[i, j](m[i, j])
    }

    /// Rank and extents of a dynamic-rank value.
    pub fn describe(x: [f64; *]) -> (i64, i64, i64, i64) {
        let s = shape(x);
        (len(s), len(shape(x)), len(x), shape(x)[1])
    }

    /// A static tensor returned as `[T; *]`, implicitly and with `as`.
    pub fn forget_rank(x: [i32; N, M]) -> ([i32; *], [i32; *]) {
        let y: [i32; *] = x;
        (y, x as [i32; *])
    }

    /// Twice a vector given with dynamic rank, as a dynamic-rank result.
    pub fn twice(x: [f64; *]) -> [f64; *] {
        let v = x as [f64; N];
        let y[i] = 2.0 * v[i];
        y
    }

    /// A call that passes a static matrix to a `[T; *]` parameter.
    pub fn total_via_dyn(x: [f32; A, B]) -> f32 {
        matrix_total(x)
    }

    /// Between static types of one rank: the declared extents are checked.
    pub fn as_two_by_three(x: [f32; N, M]) -> [f32; 2, 3] {
        x as [f32; 2, 3]
    }

    /// A generic function called with a dynamic-rank argument.
    fn first_of(v) {
        let w = v as [f32; N];
        w[0]
    }

    pub fn first(x: [f32; *]) -> f32 {
        first_of(x)
    }

    /// Conversions to another element type convert every element, as a
    /// scalar `as` does; `as [T]` converts the elements of any shape.
    pub fn widen(x: [f32; N]) -> [f64; N] {
        x as [f64; N]
    }

    pub fn truncate(x: [f32; *]) -> [i32; 2, 2] {
        x as [i32; 2, 2]
    }

    pub fn literal_as_floats() -> [f32; 2, 3] {
        [[1, 2, 3], [4, 5, 6]] as [f32]
    }
}

fn naive_sum(x: &Array<f32, Ix2>) -> f32 {
    let mut s = 0.0;
    for i in 0..x.nrows() {
        for j in 0..x.ncols() {
            s += x[[i, j]];
        }
    }
    s
}

#[test]
fn conversion_to_a_known_shape_keeps_the_data() {
    let data: Vec<f32> = (0..200).map(|v| v as f32 * 0.5).collect();
    let x = ArrayD::from_shape_vec(IxDyn(&[8, 1, 5, 5]), data.clone()).unwrap();
    let y = as_images(x.view()).unwrap();
    assert_eq!(y.shape(), &[8, 1, 5, 5]);
    assert_eq!(y.iter().copied().collect::<Vec<_>>(), data);
    assert_eq!(y[[3, 0, 2, 4]], ((3 * 25 + 2 * 5 + 4) as f32) * 0.5);
}

#[test]
fn a_wrong_rank_or_extent_is_an_error() {
    let x = ArrayD::<f32>::zeros(IxDyn(&[8, 25]));
    match as_images(x.view()) {
        Err(Error::Rank { expected: 4, found: 2, target, .. }) => assert_eq!(target, "[f32; 8, 1, 5, 5]"),
        other => panic!("expected a rank error, got {other:?}"),
    }
    let x = ArrayD::<f32>::zeros(IxDyn(&[8, 1, 5, 4]));
    match as_images(x.view()) {
        Err(Error::Shape { axis: 3, expected: 5, found: 4, .. }) => {}
        other => panic!("expected a shape error on axis 3, got {other:?}"),
    }
    let m = array![[1.0f32, 2.0], [3.0, 4.0]];
    match as_two_by_three(&m) {
        Err(Error::Shape { axis: 0, expected: 2, found: 2, .. }) => panic!("axis 0 matches"),
        Err(Error::Shape { axis: 1, expected: 3, found: 2, .. }) => {}
        other => panic!("expected a shape error on axis 1, got {other:?}"),
    }
    let ok = array![[1.0f32, 2.0, 3.0], [4.0, 5.0, 6.0]];
    assert_eq!(as_two_by_three(&ok).unwrap(), ok);
}

#[test]
fn extents_come_from_the_value() {
    let m = Array::from_shape_fn((3, 7), |(i, j)| (i * 7 + j) as f32 - 4.0);
    assert_eq!(matrix_total(m.view().into_dyn()).unwrap(), naive_sum(&m));
    assert_eq!(total_via_dyn(&m).unwrap(), naive_sum(&m));
    let v = ArrayD::<f32>::zeros(IxDyn(&[4]));
    assert!(matches!(matrix_total(v.view()), Err(Error::Rank { expected: 2, found: 1, .. })));
}

#[test]
fn shape_and_len_are_read_at_run_time() {
    let x = ArrayD::<f64>::zeros(IxDyn(&[4, 6, 2]));
    assert_eq!(describe(x.view()).unwrap(), (3, 3, 4, 6));
    // A vector has no axis 1: an error, not a panic.
    let v = ArrayD::<f64>::zeros(IxDyn(&[5]));
    assert!(matches!(describe(v.view()), Err(Error::Extent { .. })));
}

#[test]
fn static_tensors_convert_to_dynamic_rank() {
    let x = array![[1, 2, 3], [4, 5, 6]];
    let (a, b) = forget_rank(&x).unwrap();
    assert_eq!(a, x.clone().into_dyn());
    assert_eq!(b, x.into_dyn());
    let v = ArrayD::from_shape_vec(IxDyn(&[3]), vec![1.0, -2.0, 0.25]).unwrap();
    let y = twice(v.view()).unwrap();
    assert_eq!(y, ArrayD::from_shape_vec(IxDyn(&[3]), vec![2.0, -4.0, 0.5]).unwrap());
}

#[test]
fn generic_functions_take_dynamic_rank_arguments() {
    let v = ArrayD::from_shape_vec(IxDyn(&[2]), vec![7.5f32, 1.0]).unwrap();
    assert_eq!(first(v.view()).unwrap(), 7.5);
}

#[test]
fn conversions_convert_elements() {
    let x = array![1.5f32, -2.25, 1e-3];
    let want: Vec<f64> = x.iter().map(|v| f64::from(*v)).collect();
    assert_eq!(widen(&x).unwrap().to_vec(), want);
    let d = ArrayD::from_shape_vec(IxDyn(&[2, 2]), vec![1.9f32, -1.9, 300.2, 0.0]).unwrap();
    assert_eq!(truncate(d.view()).unwrap(), array![[1, -1], [300, 0]]);
    let bad = ArrayD::<f32>::zeros(IxDyn(&[4]));
    assert!(matches!(truncate(bad.view()), Err(Error::Rank { expected: 2, found: 1, .. })));
    assert_eq!(literal_as_floats().unwrap(), array![[1.0f32, 2.0, 3.0], [4.0, 5.0, 6.0]]);
}

mod elementwise {
    einlang::einlang! {
        use std::math::{exp, max, pow};

        /// Operators, casts and elementwise math on dynamic-rank values,
        /// with scalars, with each other and with tensors of known rank;
        /// the shapes are checked when it runs.
        pub fn mix(x: [f64; *], y: [f64; *], t: [f64; A, B]) -> ([f64; *], [bool; *], [i32; *], [f64; *]) {
            let a = -x * 2.0 + exp(y) - t;
            let c = x > 2.0 && !(y > 4.0);
            let d = (x * 10.0) as i32 % 7;
            let e = x ** 2 + pow(x, y) + max(x, 3.0);
            (a, c, d, e)
        }
    }
}

#[test]
fn elementwise_operations_on_dynamic_rank_values() {
    let x = ArrayD::from_shape_vec(IxDyn(&[2, 3]), vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
    let y = x.mapv(|v| v / 4.0 + 0.5);
    let t = Array::from_shape_fn((2, 3), |(i, j)| (i * 3 + j) as f64 * 0.25);
    let (a, c, d, e) = elementwise::mix(&x.view(), &y.view(), &t).unwrap();
    let at = |v: &ArrayD<f64>, k: usize| v.as_slice().unwrap()[k];
    for k in 0..6 {
        let (xv, yv, tv) = (at(&x, k), at(&y, k), t.as_slice().unwrap()[k]);
        // `exp` and `pow` are the runtime's vectorizable forms, within an
        // ulp or two of the standard library's.
        let close =
            |got: f64, want: f64| assert!((got - want).abs() <= 4.0 * f64::EPSILON * want.abs(), "{got} {want}");
        close(a.as_slice().unwrap()[k], -xv * 2.0 + yv.exp() - tv);
        assert_eq!(c.as_slice().unwrap()[k], xv > 2.0 && !(yv > 4.0));
        assert_eq!(d.as_slice().unwrap()[k], (xv * 10.0) as i32 % 7);
        close(e.as_slice().unwrap()[k], xv.powi(2) + xv.powf(yv) + xv.max(3.0));
    }
    assert_eq!(a.shape(), &[2, 3]);
    // Operands of different shapes (also of one size) are an error.
    let y6 = ArrayD::from_elem(IxDyn(&[6]), 1.0);
    assert!(matches!(elementwise::mix(&x.view(), &y6.view(), &t), Err(Error::Extent { .. })));
    let t32 = Array::zeros((3, 2));
    assert!(matches!(elementwise::mix(&x.view(), &y.view(), &t32), Err(Error::Extent { .. })));
}
