//! Shared by the derivative tests (`autodiff.rs`, `autodiff_models.rs`,
//! `autodiff_rules.rs`): random data, central finite differences and
//! comparisons, and a softmax written as a plain loop.

#![allow(dead_code)]

use crate::common::Rng;
use einlang::ndarray::{Array, Array1, Array2, ArrayD, Dimension, IxDyn, ShapeBuilder};

// ===========================================================================
// Helpers: data, finite differences, comparison
// ===========================================================================

/// Step of the central differences: with f64 and well-scaled functions the
/// truncation error (~h^2) and the rounding error (~1e-16 |f| / h) are both
/// far below [`FD_TOL`].
pub const STEP: f64 = 1e-6;

/// Tolerance of a gradient against finite differences: `|got - want| <=
/// FD_TOL * (1 + |want|)`. A wrong rule is off by O(1), a million times more.
pub const FD_TOL: f64 = 1e-6;

/// Tolerance of a gradient against a formula or a backward pass evaluated in
/// f64 (only rounding separates them).
pub const EXACT_TOL: f64 = 1e-10;

/// Values uniform in `[-1, 1)`, any shape, deterministic in `seed`.
pub fn rand<Sh: ShapeBuilder>(shape: Sh, seed: u64) -> Array<f64, Sh::Dim> {
    let mut rng = Rng::new(seed);
    Array::from_shape_simple_fn(shape, || rng.range(-1.0, 1.0))
}

/// Values uniform in `[lo, hi)`, any shape.
pub fn rand_in<Sh: ShapeBuilder>(shape: Sh, lo: f64, hi: f64, seed: u64) -> Array<f64, Sh::Dim> {
    let mut rng = Rng::new(seed);
    Array::from_shape_simple_fn(shape, || rng.range(lo, hi))
}

/// `n` class labels in `0..classes`.
pub fn labels(n: usize, classes: usize, seed: u64) -> Array1<i64> {
    let mut rng = Rng::new(seed);
    Array1::from_shape_simple_fn(n, || rng.int(0, classes as i32 - 1) as i64)
}

/// Central differences of a scalar function at every entry of `x`; the
/// result has the shape of `x`.
pub fn fd_grad<D: Dimension>(x: &Array<f64, D>, mut f: impl FnMut(&Array<f64, D>) -> f64) -> Array<f64, D> {
    let mut xp = x.as_standard_layout().into_owned();
    let mut g = Array::<f64, D>::zeros(x.raw_dim());
    for k in 0..x.len() {
        let orig = xp.as_slice().unwrap()[k];
        let (hi, lo) = (orig + STEP, orig - STEP);
        xp.as_slice_mut().unwrap()[k] = hi;
        let up = f(&xp);
        xp.as_slice_mut().unwrap()[k] = lo;
        let down = f(&xp);
        xp.as_slice_mut().unwrap()[k] = orig;
        g.as_slice_mut().unwrap()[k] = (up - down) / (hi - lo);
    }
    g
}

/// Central differences of a tensor function at every entry of `x`: the dense
/// Jacobian, of shape `y.shape ++ x.shape`.
pub fn fd_jacobian<D: Dimension, E: Dimension>(
    x: &Array<f64, D>,
    mut f: impl FnMut(&Array<f64, D>) -> Array<f64, E>,
) -> ArrayD<f64> {
    let y0 = f(x);
    let mut shape = y0.shape().to_vec();
    shape.extend_from_slice(x.shape());
    let (ny, nx) = (y0.len(), x.len());
    let mut jac = vec![0.0; ny * nx];
    let mut xp = x.as_standard_layout().into_owned();
    for k in 0..nx {
        let orig = xp.as_slice().unwrap()[k];
        let (hi, lo) = (orig + STEP, orig - STEP);
        xp.as_slice_mut().unwrap()[k] = hi;
        let up = f(&xp);
        xp.as_slice_mut().unwrap()[k] = lo;
        let down = f(&xp);
        xp.as_slice_mut().unwrap()[k] = orig;
        // `iter` walks both in logical (row-major) order, whatever the layout.
        for (m, (u, d)) in up.iter().zip(down.iter()).enumerate() {
            jac[m * nx + k] = (u - d) / (hi - lo);
        }
    }
    ArrayD::from_shape_vec(IxDyn(&shape), jac).unwrap()
}

/// Central difference of a tensor function of one scalar.
pub fn fd_scalar<E: Dimension>(s: f64, mut f: impl FnMut(f64) -> Array<f64, E>) -> Array<f64, E> {
    let (hi, lo) = (s + STEP, s - STEP);
    let mut d = f(hi);
    let down = f(lo);
    d.zip_mut_with(&down, |u, v| *u = (*u - v) / (hi - lo));
    d
}

/// Central difference of a scalar function of one scalar.
pub fn fd_scalar_scalar(s: f64, mut f: impl FnMut(f64) -> f64) -> f64 {
    let (hi, lo) = (s + STEP, s - STEP);
    (f(hi) - f(lo)) / (hi - lo)
}

/// Asserts equal shapes and `|got - want| <= tol * (1 + |want|)` everywhere,
/// naming the first entry that fails. NaN never passes.
#[track_caller]
pub fn assert_grad<D: Dimension, E: Dimension>(what: &str, got: &Array<f64, D>, want: &Array<f64, E>, tol: f64) {
    assert_eq!(got.shape(), want.shape(), "{what}: shape of the gradient differs from the reference");
    let got_d = got.view().into_dyn();
    for ((idx, &g), &w) in got_d.indexed_iter().zip(want.iter()) {
        let ok = (g - w).abs() <= tol * (1.0 + w.abs());
        assert!(
            ok,
            "{what}: entry {:?}: got {g}, want {w} (tolerance {tol})\n got = {got}\nwant = {want}",
            idx.slice()
        );
    }
}

/// Scalar version of [`assert_grad`].
#[track_caller]
pub fn assert_scalar(what: &str, got: f64, want: f64, tol: f64) {
    assert!((got - want).abs() <= tol * (1.0 + want.abs()), "{what}: got {got}, want {want} (tolerance {tol})");
}

/// `a` widened to f64.
pub fn widen<D: Dimension>(a: &Array<f32, D>) -> Array<f64, D> {
    a.mapv(f64::from)
}

/// `a` rounded to f32.
pub fn narrow<D: Dimension>(a: &Array<f64, D>) -> Array<f32, D> {
    a.mapv(|v| v as f32)
}

/// Row softmax in f64 (shifted by the row maximum).
pub fn softmax_rows(z: &Array2<f64>) -> Array2<f64> {
    let mut p = z.clone();
    for mut row in p.rows_mut() {
        let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        row.mapv_inplace(|v| (v - m).exp());
        let s = row.sum();
        row.mapv_inplace(|v| v / s);
    }
    p
}
