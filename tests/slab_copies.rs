//! A definition that copies a block of a tensor at leading indices that do
//! not depend on its own (`y[i, j] = x[t, i, j]`, a recurrence's last
//! step) is one checked copy (`shape::slab`) instead of a loop checking
//! every element. Its values, and its errors, are the loop's: an index
//! out of range is `Error::Index` naming the axis, the index and the
//! length; a definition with no elements reads nothing, so it is no error.

use einlang::einlang;
use einlang::ndarray::{Array2, Array3};
use einlang::Error;

einlang! {
    pub fn step_of(x: [f32; T, N, M], t: i64) -> [f32; N, M] {
        let y[i, j] = x[t, i, j];
        y
    }

    pub fn rows_of(x: [i64; T, N, M], t: i64, k: [i64; K]) -> [i64; K, M] {
        let y[i in 0..K, j] = x[t, i, j];
        y
    }

    // The last step of a recurrence kept in a window of two steps.
    pub fn running_sum(x: [f64; T, N], steps: i64) -> [f64; N] {
        let s[0, n] = x[0, n];
        let s[t in 1..steps, n] = s[t - 1, n] + x[t, n];
        let last[n] = s[steps - 1, n];
        last
    }
}

fn cube(t: usize, n: usize, m: usize) -> Array3<f32> {
    Array3::from_shape_fn((t, n, m), |(a, b, c)| (a * 10_000 + b * 100 + c) as f32)
}

#[test]
fn a_step_is_copied_as_the_loop_would_read_it() {
    let x = cube(3, 40, 70);
    for t in 0..3 {
        let y = step_of(&x, t as i64).unwrap();
        assert_eq!(y, x.index_axis(einlang::ndarray::Axis(0), t));
    }
    // A transposed (non-standard) source reads the same elements.
    let xt = x.clone().reversed_axes();
    let xt = xt.as_standard_layout().to_owned().reversed_axes();
    assert_eq!(step_of(&xt, 1).unwrap(), x.index_axis(einlang::ndarray::Axis(0), 1));
}

#[test]
fn indices_out_of_range_are_the_loops_errors() {
    let x = cube(3, 4, 5);
    for t in [-1i64, 3, 100] {
        match step_of(&x, t) {
            Err(Error::Index { axis, index, len, .. }) => assert_eq!((axis, index, len), (0, t, 3)),
            other => panic!("t = {t}: {other:?}"),
        }
    }
    // No element, no read: no error, whatever `t` is.
    let empty = Array3::<f32>::zeros((3, 0, 5));
    assert_eq!(step_of(&empty, 7).unwrap().shape(), &[0, 5]);
    // More rows than the source has: the first row past it.
    let xi = x.mapv(|v| v as i64);
    let k = einlang::ndarray::Array1::<i64>::zeros(6);
    match rows_of(&xi, 1, &k) {
        Err(Error::Index { axis, index, len, .. }) => assert_eq!((axis, index, len), (1, 4, 4)),
        other => panic!("{other:?}"),
    }
    let k = einlang::ndarray::Array1::<i64>::zeros(3);
    assert_eq!(rows_of(&xi, 2, &k).unwrap(), xi.slice(einlang::ndarray::s![2, 0..3, ..]));
}

#[test]
fn the_last_step_of_a_recurrence_in_a_window() {
    let x = Array2::from_shape_fn((50, 300), |(t, n)| ((t * 7 + n * 3) % 11) as f64 - 5.0);
    for steps in [1usize, 2, 3, 50] {
        let got = running_sum(&x, steps as i64).unwrap();
        for n in 0..300 {
            let want: f64 = (0..steps).map(|t| x[[t, n]]).sum();
            assert_eq!(got[n], want, "steps {steps}, n {n}");
        }
    }
    // No step: the read of step -1 is an error.
    assert!(matches!(running_sum(&x, 0), Err(Error::Index { axis: 0, index: -1, .. })));
}
