//! `include_ein!`: Einlang files compiled into Rust items, compared with
//! naive Rust loops. The fixtures live in `tests/ein/`; paths are relative
//! to the crate root (`CARGO_MANIFEST_DIR`).

mod common;

use common::*;
use einlang::ndarray::{array, Array1, Array2};

mod kernels {
    einlang::include_ein!("tests/ein/kernels.ein");
}

mod program {
    einlang::include_ein!("tests/ein/program.ein");
}

/// A file without top-level statements compiles to a module with no `main`:
/// the `main` written beside it would collide with a generated one.
mod library {
    einlang::include_ein!("tests/ein/library.ein");

    #[allow(dead_code)]
    pub fn main() -> &'static str {
        "not generated"
    }
}

#[test]
fn library_file_compiles_to_a_module_without_main() {
    assert_eq!(library::twice(1.5).unwrap(), 3.0);
    assert_eq!(library::hypot(3.0, 4.0).unwrap(), 5.0);
    assert_eq!(library::main(), "not generated");
}

#[test]
fn matmul_from_file_matches_reference() {
    for (seed, &(m, k, n)) in [(1, 1, 1), (3, 5, 2), (13, 17, 11), (2, 64, 3)].iter().enumerate() {
        let a = rand2(m, k, 2 * seed as u64);
        let b = rand2(k, n, 2 * seed as u64 + 1);
        let c: Array2<f32> = kernels::matmul(&a, &b).unwrap();
        let mut expected = Array2::<f32>::zeros((m, n));
        for i in 0..m {
            for j in 0..n {
                let mut acc = 0.0f64;
                for p in 0..k {
                    acc += a[[i, p]] as f64 * b[[p, j]] as f64;
                }
                expected[[i, j]] = acc as f32;
            }
        }
        assert_close(&c, &expected, 1e-5);
    }
}

#[test]
fn softmax_from_file_matches_reference() {
    let x = array![[1.0f32, 2.0, 3.0], [1000.0, 1000.0, 1000.0], [-5.0, 0.0, 5.0]];
    let y = kernels::softmax(&x).unwrap();
    let mut expected = Array2::<f32>::zeros(x.dim());
    for n in 0..x.nrows() {
        let m = x.row(n).iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v as f64));
        let total: f64 = x.row(n).iter().map(|&v| (v as f64 - m).exp()).sum();
        for c in 0..x.ncols() {
            expected[[n, c]] = ((x[[n, c]] as f64 - m).exp() / total) as f32;
        }
    }
    assert_close(&y, &expected, 1e-6);
}

#[test]
fn private_helpers_of_a_file_are_callable_from_its_functions() {
    let x = Array1::from(vec![1.0f32, -2.5, 4.0]);
    assert_eq!(kernels::double(&x).unwrap(), array![2.0f32, -5.0, 8.0]);
}

#[test]
fn shape_errors_from_file_functions_are_errors() {
    let a = Array2::<f32>::zeros((2, 3));
    let b = Array2::<f32>::zeros((4, 5));
    match kernels::matmul(&a, &b) {
        Err(einlang::Error::Shape { function, symbol, expected, found, .. }) => {
            assert_eq!((function.as_str(), symbol.as_str(), expected, found), ("matmul", "K", 3, 4));
        }
        other => panic!("expected a shape error, got {other:?}"),
    }
}

#[test]
fn top_level_statements_of_a_file_become_main() {
    let result: Result<(), einlang::Error> = program::main();
    assert!(result.is_ok());
}
