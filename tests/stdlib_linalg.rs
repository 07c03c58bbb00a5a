//! The linear algebra of `std::ml` (Cholesky, LU without pivoting,
//! triangular solves) against independent references: the textbook loops
//! written out below in f64, hand-derived factorizations, and the defining
//! identities (L L^T = A, L U = A, A x = b).

mod common;

use common::*;
use einlang::einlang;
use einlang::ndarray::{array, Array1, Array2};

einlang! {
    use std::ml::{cholesky, lu, solve, solve_cholesky, solve_triangular_lower, solve_triangular_lower_unit,
                  solve_triangular_upper};

    pub fn chol64(a: [f64; N, N]) -> [f64; N, N] { cholesky(a) }
    pub fn chol32(a: [f32; N, N]) -> [f32; N, N] { cholesky(a) }

    pub fn lower64(l: [f64; N, N], b: [f64; N]) -> [f64; N] { solve_triangular_lower(l, b) }
    pub fn lower32(l: [f32; N, N], b: [f32; N]) -> [f32; N] { solve_triangular_lower(l, b) }
    pub fn lower_unit64(l: [f64; N, N], b: [f64; N]) -> [f64; N] { solve_triangular_lower_unit(l, b) }
    pub fn lower_unit32(l: [f32; N, N], b: [f32; N]) -> [f32; N] { solve_triangular_lower_unit(l, b) }
    pub fn upper64(u: [f64; N, N], y: [f64; N]) -> [f64; N] { solve_triangular_upper(u, y) }
    pub fn upper32(u: [f32; N, N], y: [f32; N]) -> [f32; N] { solve_triangular_upper(u, y) }

    pub fn solve_chol64(a: [f64; N, N], b: [f64; N]) -> [f64; N] { solve_cholesky(a, b) }
    pub fn solve_chol32(a: [f32; N, N], b: [f32; N]) -> [f32; N] { solve_cholesky(a, b) }

    pub fn lu64(a: [f64; N, N]) -> ([f64; N, N], [f64; N, N]) { lu(a) }
    pub fn lu32(a: [f32; N, N]) -> ([f32; N, N], [f32; N, N]) { lu(a) }
    pub fn solve64(a: [f64; N, N], b: [f64; N]) -> [f64; N] { solve(a, b) }
    pub fn solve32(a: [f32; N, N], b: [f32; N]) -> [f32; N] { solve(a, b) }

    // Unsized parameters: the extents are compared only at run time.
    pub fn lower_any(l: [f64; N, M], b: [f64; K]) -> [f64; ?] { solve_triangular_lower(l, b) }
}

const SIZES: [usize; 4] = [1, 3, 6, 10];

// ===========================================================================
// Inputs
// ===========================================================================

/// A symmetric positive definite matrix M M^T + n I, M uniform in [-1, 1).
fn spd(n: usize, seed: u64) -> Array2<f64> {
    let m = rand2_f64(n, n, seed);
    let mut a = m.dot(&m.t());
    for i in 0..n {
        a[[i, i]] += n as f64;
    }
    a
}

/// A strictly diagonally dominant, non-symmetric matrix: every leading minor
/// is nonzero and LU without pivoting is stable.
fn dominant(n: usize, seed: u64) -> Array2<f64> {
    let mut a = rand2_f64(n, n, seed);
    for i in 0..n {
        a[[i, i]] += if i % 2 == 0 { n as f64 + 1.0 } else { -(n as f64) - 1.0 };
    }
    a
}

/// A lower-triangular matrix with a diagonal in [1.5, 2.5) or (-2.5, -1.5],
/// and `above` in every entry above the diagonal.
fn lower_tri(n: usize, seed: u64, above: f64) -> Array2<f64> {
    let r = rand2_f64(n, n, seed);
    Array2::from_shape_fn((n, n), |(i, j)| {
        if j > i {
            above
        } else if j == i {
            (2.0 + 0.5 * r[[i, i]]) * if i % 3 == 1 { -1.0 } else { 1.0 }
        } else {
            r[[i, j]]
        }
    })
}

fn transposed_owned(a: &Array2<f64>) -> Array2<f64> {
    a.t().to_owned()
}

fn f32m(a: &Array2<f64>) -> Array2<f32> {
    to_f32(a)
}

fn f32v(a: &Array1<f64>) -> Array1<f32> {
    to_f32(a)
}

fn f64m(a: &Array2<f32>) -> Array2<f64> {
    a.mapv(f64::from)
}

fn f64v(a: &Array1<f32>) -> Array1<f64> {
    a.mapv(f64::from)
}

// ===========================================================================
// References: the textbook loops, in f64
// ===========================================================================

/// Cholesky-Banachiewicz, row by row.
fn cholesky_ref(a: &Array2<f64>) -> Array2<f64> {
    let n = a.nrows();
    let mut l = Array2::<f64>::zeros((n, n));
    for i in 0..n {
        for j in 0..=i {
            let mut s = a[[i, j]];
            for k in 0..j {
                s -= l[[i, k]] * l[[j, k]];
            }
            l[[i, j]] = if i == j { s.sqrt() } else { s / l[[j, j]] };
        }
    }
    l
}

/// Forward substitution; with `unit`, the diagonal is taken as 1.
fn forward_ref(l: &Array2<f64>, b: &Array1<f64>, unit: bool) -> Array1<f64> {
    let n = b.len();
    let mut y = Array1::<f64>::zeros(n);
    for i in 0..n {
        let mut s = b[i];
        for j in 0..i {
            s -= l[[i, j]] * y[j];
        }
        y[i] = if unit { s } else { s / l[[i, i]] };
    }
    y
}

/// Back substitution, from the last row up.
fn backward_ref(u: &Array2<f64>, y: &Array1<f64>) -> Array1<f64> {
    let n = y.len();
    let mut x = Array1::<f64>::zeros(n);
    for i in (0..n).rev() {
        let mut s = y[i];
        for j in i + 1..n {
            s -= u[[i, j]] * x[j];
        }
        x[i] = s / u[[i, i]];
    }
    x
}

/// Doolittle: row i of U, then column i of L.
fn doolittle_ref(a: &Array2<f64>) -> (Array2<f64>, Array2<f64>) {
    let n = a.nrows();
    let mut l = Array2::<f64>::eye(n);
    let mut u = Array2::<f64>::zeros((n, n));
    for i in 0..n {
        for j in i..n {
            let mut s = a[[i, j]];
            for k in 0..i {
                s -= l[[i, k]] * u[[k, j]];
            }
            u[[i, j]] = s;
        }
        for r in i + 1..n {
            let mut s = a[[r, i]];
            for k in 0..i {
                s -= l[[r, k]] * u[[k, i]];
            }
            l[[r, i]] = s / u[[i, i]];
        }
    }
    (l, u)
}

/// `a` with `v` in every entry above (`upper`) or below the diagonal.
fn fill_triangle(a: &Array2<f64>, upper: bool, v: f64) -> Array2<f64> {
    Array2::from_shape_fn(a.raw_dim(), |(i, j)| if (upper && j > i) || (!upper && j < i) { v } else { a[[i, j]] })
}

#[track_caller]
fn assert_lower_triangular<A: Copy + Default + PartialEq + std::fmt::Debug>(l: &Array2<A>, unit_one: Option<A>) {
    for ((i, j), &v) in l.indexed_iter() {
        if j > i {
            assert_eq!(v, A::default(), "entry ({i}, {j}) above the diagonal");
        }
        if let (true, Some(one)) = (i == j, unit_one) {
            assert_eq!(v, one, "diagonal entry {i}");
        }
    }
}

#[track_caller]
fn assert_upper_triangular<A: Copy + Default + PartialEq + std::fmt::Debug>(u: &Array2<A>) {
    for ((i, j), &v) in u.indexed_iter() {
        if j < i {
            assert_eq!(v, A::default(), "entry ({i}, {j}) below the diagonal");
        }
    }
}

// ===========================================================================
// Cholesky
// ===========================================================================

#[test]
fn cholesky_known_factor() {
    // The classic example with an integer factor.
    let a = array![[4.0, 12.0, -16.0], [12.0, 37.0, -43.0], [-16.0, -43.0, 98.0]];
    let want = array![[2.0, 0.0, 0.0], [6.0, 1.0, 0.0], [-8.0, 5.0, 3.0]];
    assert_close(&chol64(&a).unwrap(), &want, 1e-14);
    assert_close(&chol32(&f32m(&a)).unwrap(), &f32m(&want), 1e-6);
    assert_close(&chol64(&array![[9.0]]).unwrap(), &array![[3.0]], 1e-15);
}

#[test]
fn cholesky_against_the_loop_f64() {
    for (s, n) in SIZES.into_iter().enumerate() {
        let a = spd(n, 100 + s as u64);
        let l = chol64(&a).unwrap();
        assert_close(&l, &cholesky_ref(&a), 1e-12);
        assert_lower_triangular(&l, None);
        assert!(l.diag().iter().all(|&d| d > 0.0), "positive diagonal");
        assert_close(&l.dot(&l.t()), &a, 1e-12);
    }
}

#[test]
fn cholesky_against_the_loop_f32() {
    for (s, n) in SIZES.into_iter().enumerate() {
        let a = spd(n, 200 + s as u64);
        let a32 = f32m(&a);
        let l = chol32(&a32).unwrap();
        // The reference factors the f32 input exactly, in f64.
        assert_close(&l, &f32m(&cholesky_ref(&f64m(&a32))), 1e-5);
        assert_lower_triangular(&l, None);
        let l64 = f64m(&l);
        assert_close(&l64.dot(&l64.t()), &f64m(&a32), 1e-5);
    }
}

#[test]
fn cholesky_reads_only_the_lower_triangle() {
    let a = spd(6, 300);
    let poisoned = fill_triangle(&a, true, f64::NAN);
    assert_close(&chol64(&poisoned).unwrap(), &cholesky_ref(&a), 1e-12);
}

#[test]
fn cholesky_of_an_indefinite_matrix_is_nan() {
    // Eigenvalues 3 and -1: the second pivot is sqrt(1 - 4).
    let l = chol64(&array![[1.0, 2.0], [2.0, 1.0]]).unwrap();
    assert_eq!((l[[0, 0]], l[[1, 0]]), (1.0, 2.0));
    assert!(l[[1, 1]].is_nan());
}

// ===========================================================================
// Triangular solves
// ===========================================================================

#[test]
fn forward_substitution_known_answer() {
    // 2 y0 = 4, y0 + 4 y1 = 10, -y0 + 2 y1 + 0.5 y2 = 1.5: y = (2, 2, -1).
    let l = array![[2.0, 0.0, 0.0], [1.0, 4.0, 0.0], [-1.0, 2.0, 0.5]];
    let b = array![4.0, 10.0, 1.5];
    assert_close(&lower64(&l, &b).unwrap(), &array![2.0, 2.0, -1.0], 1e-15);
    // With a unit diagonal: y0 = 4, y1 = 10 - 4, y2 = 1.5 + 4 - 12.
    assert_close(&lower_unit64(&l, &b).unwrap(), &array![4.0, 6.0, -6.5], 1e-15);
}

#[test]
fn back_substitution_known_answer() {
    // 2 x0 + x1 - x2 = 3.5, 4 x1 + 2 x2 = 10, 0.5 x2 = 1: x = (2, 1.5, 2).
    let u = array![[2.0, 1.0, -1.0], [0.0, 4.0, 2.0], [0.0, 0.0, 0.5]];
    let y = array![3.5, 10.0, 1.0];
    assert_close(&upper64(&u, &y).unwrap(), &array![2.0, 1.5, 2.0], 1e-15);
    assert_close(&upper64(&array![[4.0]], &array![2.0]).unwrap(), &array![0.5], 1e-15);
}

#[test]
fn triangular_solves_against_the_loops_f64() {
    for (s, n) in SIZES.into_iter().enumerate() {
        let seed = 400 + 10 * s as u64;
        // The entries that must not be read are NaN.
        let l = lower_tri(n, seed, f64::NAN);
        let l_clean = lower_tri(n, seed, 0.0);
        let b = rand1_f64(n, seed + 1);

        let y = lower64(&l, &b).unwrap();
        assert_close(&y, &forward_ref(&l_clean, &b, false), 1e-12);
        assert_close(&l_clean.dot(&y), &b, 1e-12);

        let mut l_unit = l.clone();
        l_unit.diag_mut().fill(f64::NAN);
        let y = lower_unit64(&l_unit, &b).unwrap();
        assert_close(&y, &forward_ref(&l_clean, &b, true), 1e-12);
        let mut l_one = l_clean.clone();
        l_one.diag_mut().fill(1.0);
        assert_close(&l_one.dot(&y), &b, 1e-12);

        let u = transposed_owned(&l);
        let u_clean = transposed_owned(&l_clean);
        let x = upper64(&u, &b).unwrap();
        assert_close(&x, &backward_ref(&u_clean, &b), 1e-12);
        assert_close(&u_clean.dot(&x), &b, 1e-12);
    }
}

#[test]
fn triangular_solves_against_the_loops_f32() {
    for (s, n) in SIZES.into_iter().enumerate() {
        let seed = 500 + 10 * s as u64;
        let l = f32m(&lower_tri(n, seed, 0.0));
        let b = f32v(&rand1_f64(n, seed + 1));
        let (l64, b64) = (f64m(&l), f64v(&b));

        assert_close(&lower32(&l, &b).unwrap(), &f32v(&forward_ref(&l64, &b64, false)), 1e-5);
        assert_close(&lower_unit32(&l, &b).unwrap(), &f32v(&forward_ref(&l64, &b64, true)), 1e-5);
        let u = l.t().to_owned();
        let x = upper32(&u, &b).unwrap();
        assert_close(&x, &f32v(&backward_ref(&transposed_owned(&l64), &b64)), 1e-5);
        assert_close(&f32v(&f64m(&u).dot(&f64v(&x))), &b, 1e-5);
    }
}

#[test]
fn triangular_solve_with_mismatched_extents_is_an_error() {
    let l = lower_tri(3, 600, 0.0);
    assert!(lower_any(&l, &rand1_f64(3, 601)).is_ok());
    assert!(lower_any(&l, &rand1_f64(2, 601)).is_err(), "b shorter than the matrix");
    assert!(lower_any(&l, &rand1_f64(4, 601)).is_err(), "b longer than the matrix");
}

// ===========================================================================
// LU
// ===========================================================================

#[test]
fn lu_known_factors() {
    let a = array![[4.0, 3.0], [6.0, 3.0]];
    let (l, u) = lu64(&a).unwrap();
    assert_close(&l, &array![[1.0, 0.0], [1.5, 1.0]], 1e-15);
    assert_close(&u, &array![[4.0, 3.0], [0.0, -1.5]], 1e-15);

    // [[2, 1, 1], [4, 3, 3], [8, 7, 9]] = L U with the multipliers 2, 4, 3.
    let a = array![[2.0, 1.0, 1.0], [4.0, 3.0, 3.0], [8.0, 7.0, 9.0]];
    let (l, u) = lu32(&f32m(&a)).unwrap();
    assert_close(&l, &array![[1.0f32, 0.0, 0.0], [2.0, 1.0, 0.0], [4.0, 3.0, 1.0]], 1e-6);
    assert_close(&u, &array![[2.0f32, 1.0, 1.0], [0.0, 1.0, 1.0], [0.0, 0.0, 2.0]], 1e-6);
}

#[test]
fn lu_against_the_loop_f64() {
    for (s, n) in SIZES.into_iter().enumerate() {
        let a = dominant(n, 700 + s as u64);
        let (l, u) = lu64(&a).unwrap();
        let (l_ref, u_ref) = doolittle_ref(&a);
        assert_close(&l, &l_ref, 1e-12);
        assert_close(&u, &u_ref, 1e-12);
        assert_lower_triangular(&l, Some(1.0));
        assert_upper_triangular(&u);
        assert_close(&l.dot(&u), &a, 1e-12);
    }
}

#[test]
fn lu_against_the_loop_f32() {
    for (s, n) in SIZES.into_iter().enumerate() {
        let a = f32m(&dominant(n, 800 + s as u64));
        let (l, u) = lu32(&a).unwrap();
        let (l_ref, u_ref) = doolittle_ref(&f64m(&a));
        assert_close(&l, &f32m(&l_ref), 1e-5);
        assert_close(&u, &f32m(&u_ref), 1e-5);
        assert_lower_triangular(&l, Some(1.0));
        assert_upper_triangular(&u);
        assert_close(&f32m(&f64m(&l).dot(&f64m(&u))), &a, 1e-5);
    }
}

#[test]
fn lu_of_an_spd_matrix_matches_cholesky() {
    // For A = L L^T, Doolittle's U is D L^T and its L is L D^-1, D = diag(L).
    let a = spd(6, 900);
    let c = cholesky_ref(&a);
    let (l, u) = lu64(&a).unwrap();
    for i in 0..6 {
        for j in 0..6 {
            assert_close_scalar(u[[i, j]], c[[i, i]] * c[[j, i]], 1e-12);
            assert_close_scalar(l[[i, j]], c[[i, j]] / c[[j, j]], 1e-12);
        }
    }
}

#[test]
fn lu_with_a_zero_pivot_is_not_finite() {
    let (_, u) = lu64(&array![[0.0, 1.0], [1.0, 0.0]]).unwrap();
    assert!(!u[[1, 1]].is_finite());
}

// ===========================================================================
// Solves
// ===========================================================================

#[test]
fn solve_known_answer() {
    // x = (1, -2, 3).
    let a = array![[2.0, 1.0, 1.0], [4.0, 3.0, 3.0], [8.0, 7.0, 9.0]];
    let b = array![3.0, 7.0, 21.0];
    assert_close(&solve64(&a, &b).unwrap(), &array![1.0, -2.0, 3.0], 1e-13);
    let a = array![[4.0, 12.0, -16.0], [12.0, 37.0, -43.0], [-16.0, -43.0, 98.0]];
    let b = a.dot(&array![1.0, -2.0, 3.0]);
    assert_close(&solve_chol64(&a, &b).unwrap(), &array![1.0, -2.0, 3.0], 1e-12);
}

#[test]
fn solves_against_the_loops_f64() {
    for (s, n) in SIZES.into_iter().enumerate() {
        let seed = 1000 + 10 * s as u64;
        let b = rand1_f64(n, seed + 1);

        let a = spd(n, seed);
        let l = cholesky_ref(&a);
        let want = backward_ref(&transposed_owned(&l), &forward_ref(&l, &b, false));
        let x = solve_chol64(&a, &b).unwrap();
        assert_close(&x, &want, 1e-12);
        assert_close(&a.dot(&x), &b, 1e-12);

        let a = dominant(n, seed + 2);
        let (l, u) = doolittle_ref(&a);
        let want = backward_ref(&u, &forward_ref(&l, &b, true));
        let x = solve64(&a, &b).unwrap();
        assert_close(&x, &want, 1e-12);
        assert_close(&a.dot(&x), &b, 1e-12);
    }
}

#[test]
fn solves_against_the_loops_f32() {
    for (s, n) in SIZES.into_iter().enumerate() {
        let seed = 1100 + 10 * s as u64;
        let b = f32v(&rand1_f64(n, seed + 1));
        let b64 = f64v(&b);

        let a = f32m(&spd(n, seed));
        let a64 = f64m(&a);
        let l = cholesky_ref(&a64);
        let want = backward_ref(&transposed_owned(&l), &forward_ref(&l, &b64, false));
        let x = solve_chol32(&a, &b).unwrap();
        assert_close(&x, &f32v(&want), 1e-4);
        assert_close(&f32v(&a64.dot(&f64v(&x))), &b, 1e-4);

        let a = f32m(&dominant(n, seed + 2));
        let a64 = f64m(&a);
        let (l, u) = doolittle_ref(&a64);
        let want = backward_ref(&u, &forward_ref(&l, &b64, true));
        let x = solve32(&a, &b).unwrap();
        assert_close(&x, &f32v(&want), 1e-4);
        assert_close(&f32v(&a64.dot(&f64v(&x))), &b, 1e-4);
    }
}
