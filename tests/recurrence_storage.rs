//! The storage decision across lookbacks and observations (thesis §9.4):
//! lookback 1, 2 and 4 x observation of the final point, of the last three
//! steps, of the whole tensor and at a dynamic index x a 1-D recurrence and
//! a 2-D one with a parallel axis. Every case checks the value against a
//! naive loop and the decision against the exact window length (or full
//! storage for the right reason).

#[macro_use]
mod common;

use common::*;
use einlang::ndarray::{Array1, Array2};
use einlang_core::analysis::recur::{FullReason, RecurrenceFacts, Storage};

/// `x[t] = u[t]` for `t < L`, then `x[t] = 0.5 x[t-1] + 0.25 x[t-L] + u[t]`.
fn reference(u: &Array2<f64>, lookback: usize) -> Array2<f64> {
    let mut x = Array2::<f64>::zeros(u.raw_dim());
    for t in 0..u.nrows() {
        for j in 0..u.ncols() {
            x[[t, j]] =
                if t < lookback { u[[t, j]] } else { 0.5 * x[[t - 1, j]] + 0.25 * x[[t - lookback, j]] + u[[t, j]] };
        }
    }
    x
}

/// One module per lookback: the eight functions of the suite and their source.
macro_rules! suite {
    ($m:ident, $l:tt) => {
        mod $m {
            #![allow(non_snake_case)]
            einlang_with_source! {
                pub fn final_1d(u: [f64; T]) -> f64 {
                    let x[t in 0..$l] = u[t];
                    let x[t in $l..T] = 0.5 * x[t - 1] + 0.25 * x[t - $l] + u[t];
                    x[T - 1]
                }
                pub fn last3_1d(u: [f64; T]) -> [f64; 3] {
                    let x[t in 0..$l] = u[t];
                    let x[t in $l..T] = 0.5 * x[t - 1] + 0.25 * x[t - $l] + u[t];
                    let y[k in 0..3] = x[T - 3 + k];
                    y
                }
                pub fn whole_1d(u: [f64; T]) -> [f64; T] {
                    let x[t in 0..$l] = u[t];
                    let x[t in $l..T] = 0.5 * x[t - 1] + 0.25 * x[t - $l] + u[t];
                    x
                }
                pub fn dynamic_1d(u: [f64; T], at: i64) -> f64 {
                    let x[t in 0..$l] = u[t];
                    let x[t in $l..T] = 0.5 * x[t - 1] + 0.25 * x[t - $l] + u[t];
                    x[at]
                }
                pub fn final_2d(u: [f64; T, J]) -> [f64; J] {
                    let x[t in 0..$l, j] = u[t, j];
                    let x[t in $l..T, j] = 0.5 * x[t - 1, j] + 0.25 * x[t - $l, j] + u[t, j];
                    let y[j] = x[T - 1, j];
                    y
                }
                pub fn last3_2d(u: [f64; T, J]) -> [f64; 3, J] {
                    let x[t in 0..$l, j] = u[t, j];
                    let x[t in $l..T, j] = 0.5 * x[t - 1, j] + 0.25 * x[t - $l, j] + u[t, j];
                    let y[k in 0..3, j] = x[T - 3 + k, j];
                    y
                }
                pub fn whole_2d(u: [f64; T, J]) -> [f64; T, J] {
                    let x[t in 0..$l, j] = u[t, j];
                    let x[t in $l..T, j] = 0.5 * x[t - 1, j] + 0.25 * x[t - $l, j] + u[t, j];
                    x
                }
                pub fn dynamic_2d(u: [f64; T, J], at: i64) -> [f64; J] {
                    let x[t in 0..$l, j] = u[t, j];
                    let x[t in $l..T, j] = 0.5 * x[t - 1, j] + 0.25 * x[t - $l, j] + u[t, j];
                    let y[j] = x[at, j];
                    y
                }
            }
        }
    };
}

suite!(lookback1, 1);
suite!(lookback2, 2);
suite!(lookback4, 4);

fn facts(src: &str, func: &str) -> RecurrenceFacts {
    recurrence_facts(src, func, "x")
}

/// Checks the eight functions of one lookback's module.
macro_rules! check {
    ($m:ident, $l:expr) => {{
        let lookback: u64 = $l;
        let (t_len, j_len) = (37, 5);
        let u2 = rand2_f64(t_len, j_len, lookback);
        let u1: Array1<f64> = u2.column(0).to_owned();
        let want2 = reference(&u2, lookback as usize);
        let want1: Array1<f64> = want2.column(0).to_owned();
        let at = 11i64;

        // Values against the naive loop.
        assert_close_scalar($m::final_1d(&u1).unwrap(), want1[t_len - 1], 1e-12);
        assert_close(&$m::last3_1d(&u1).unwrap(), &want1.slice(einlang::ndarray::s![t_len - 3..]).to_owned(), 1e-12);
        assert_close(&$m::whole_1d(&u1).unwrap(), &want1, 1e-12);
        assert_close_scalar($m::dynamic_1d(&u1, at).unwrap(), want1[at as usize], 1e-12);
        assert_close(&$m::final_2d(&u2).unwrap(), &want2.row(t_len - 1).to_owned(), 1e-12);
        assert_close(
            &$m::last3_2d(&u2).unwrap(),
            &want2.slice(einlang::ndarray::s![t_len - 3.., ..]).to_owned(),
            1e-12,
        );
        assert_close(&$m::whole_2d(&u2).unwrap(), &want2, 1e-12);
        assert_close(&$m::dynamic_2d(&u2, at).unwrap(), &want2.row(at as usize).to_owned(), 1e-12);
        // A dynamic index out of range is an error.
        assert!($m::dynamic_1d(&u1, t_len as i64).is_err());
        assert!($m::dynamic_2d(&u2, -1).is_err());

        // Decisions.
        for (func, parallel) in [("final_1d", vec![]), ("final_2d", vec![1])] {
            let f = facts($m::SRC, func);
            assert_eq!(f.sequential, vec![0], "{func}");
            assert_eq!(f.parallel, parallel, "{func}");
            assert_eq!(f.lookback, Some(lookback), "{func}");
            assert_eq!(f.tail, Some(1), "{func}");
            assert_eq!(f.storage, window(lookback + 1), "{func}");
        }
        for func in ["last3_1d", "last3_2d"] {
            let f = facts($m::SRC, func);
            assert_eq!(f.tail, Some(3), "{func}");
            assert_eq!(f.storage, window((lookback + 1).max(3)), "{func}");
        }
        for func in ["whole_1d", "whole_2d"] {
            assert_eq!(facts($m::SRC, func).storage, Storage::Full(FullReason::WholeTensor), "{func}");
        }
        for func in ["dynamic_1d", "dynamic_2d"] {
            assert_eq!(facts($m::SRC, func).storage, Storage::Full(FullReason::DynamicIndex), "{func}");
        }
    }};
}

#[test]
fn lookback_1() {
    check!(lookback1, 1);
}

#[test]
fn lookback_2() {
    check!(lookback2, 2);
}

#[test]
fn lookback_4() {
    check!(lookback4, 4);
}
