//! Programs a new user wrote that must compile and mean what the reference
//! says: array literals whose element type comes from all their elements
//! and their context, in every position; ranges of a recurrence's own
//! reads inside its step; sizes from run-time values that cannot be
//! allocated, returned as errors. Expected values are written by hand.

use einlang::einlang;
use einlang::ndarray::{array, Array1};

einlang! {
    use std::math::sqrt;

    pub fn in_let() -> [f32; 3] {
        let v = [1, 2.5, 4.0];
        v
    }

    pub fn returned() -> [f64; 3] {
        [1, 2.5, 4]
    }

    fn total(x: [f32; N]) -> f32 {
        sum[i](x[i])
    }

    pub fn as_argument() -> f32 {
        total([1, 2.5, 4.0])
    }

    pub fn indexed_directly(k: i64) -> f32 {
        [1, 2.5, 4.0][k]
    }

    pub fn nested() -> [f32; 2, 2] {
        [[1, 2.5], [3.5, 4]]
    }

    pub fn integers_stay_integers() -> [i32; 3] {
        [1, 2, 3]
    }

    /// Power iteration written as a recurrence; the step reads the previous
    /// row of `x` at every index `j` of its axis.
    pub fn iterate(a: [f32; N, N], x0: [f32; N]) -> [f32; N] {
        let x[0, i in 0..N] = x0[i];
        let x[k in 1..40, i in 0..N] = {
            let xk[j] = x[k - 1, j];
            let y[r] = sum[j](a[r, j] * xk[j]);
            let norm = sqrt(sum[r](y[r] * y[r]));
            y[i] / norm
        };
        let last[i] = x[39, i];
        last
    }

    pub fn ramp(n: i64) -> [f64; ?] {
        [i as f64 | i in 0..n]
    }

    pub fn outer(a: [f32; N], b: [f32; M]) -> [f32; N, M] {
        let o[i, j] = a[i] * b[j];
        o
    }
}

#[test]
fn array_literals_take_their_type_from_every_element() {
    assert_eq!(in_let().unwrap(), array![1.0f32, 2.5, 4.0]);
    assert_eq!(returned().unwrap(), array![1.0f64, 2.5, 4.0]);
    assert_eq!(as_argument().unwrap(), 7.5);
    assert_eq!(indexed_directly(0).unwrap(), 1.0);
    assert_eq!(indexed_directly(1).unwrap(), 2.5);
    assert_eq!(nested().unwrap(), array![[1.0f32, 2.5], [3.5, 4.0]]);
    assert_eq!(integers_stay_integers().unwrap(), array![1, 2, 3]);
    assert!(indexed_directly(3).is_err(), "an index past the literal is an error, not a panic");
}

#[test]
fn a_recurrence_step_reads_its_previous_row_over_the_stated_range() {
    // [[2, 0], [0, 1]] has its dominant eigenvector along the first axis.
    let a = array![[2.0f32, 0.0], [0.0, 1.0]];
    let x = iterate(&a, &array![1.0f32, 1.0]).unwrap();
    assert!((x[0] - 1.0).abs() < 1e-6 && x[1].abs() < 1e-6, "{x}");
}

#[test]
fn sizes_that_cannot_be_allocated_are_errors() {
    // 2^50 elements of 8 bytes, reserved before the first is computed.
    assert!(
        matches!(ramp(1 << 50), Err(einlang::Error::Alloc { function, bytes, .. }) if function == "ramp" && bytes == 1 << 53)
    );
    assert_eq!(ramp(4).unwrap(), array![0.0, 1.0, 2.0, 3.0]);
    // 2^48 elements: 1 PiB, past any address space (so refused even where
    // the kernel overcommits memory without limit).
    let big = Array1::<f32>::zeros(1 << 24);
    assert!(matches!(outer(&big, &big), Err(einlang::Error::Alloc { .. })));
    assert_eq!(outer(&array![1.0f32, 2.0], &array![3.0f32]).unwrap(), array![[3.0], [6.0]]);
}
