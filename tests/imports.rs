//! Imports between `.ein` files: `tests/ein/app.ein` imports
//! `vec_ops.ein`, which imports `scalars.ein`; every file is mounted as a
//! module of the program. Results are compared with naive Rust loops.

use approx::assert_abs_diff_eq;
use einlang::ndarray::{array, Array1};

mod app {
    einlang::include_ein!("tests/ein/app.ein");
}

#[test]
fn functions_of_an_imported_file() {
    let x = Array1::from_shape_fn(7, |i| i as f32 * 0.5 - 1.0);
    let w = Array1::from_shape_fn(7, |i| 1.0 - i as f32 * 0.25);
    let mut expect = 0.0f32;
    for i in 0..7 {
        expect += x[i] * 3.0 * w[i];
    }
    assert_abs_diff_eq!(app::weighted(&x, &w, 3.0).unwrap(), expect, epsilon = 1e-5);
}

#[test]
fn a_file_imported_by_an_imported_file() {
    assert_eq!(app::cube(-1.5).unwrap(), -3.375);
    let x = array![3.0f32, -4.0];
    assert_eq!(app::vec_ops::norm2(&x).unwrap(), 25.0);
}

mod modtree {
    einlang::include_ein!("tests/ein/modtree/main.ein");
}

#[test]
fn module_files_and_directory_modules() {
    let x = array![2.5, -1.0, 7.25, 0.0];
    assert_eq!(modtree::spread(&x).unwrap(), 7.25 - -1.0);
    assert_eq!(modtree::box_volume(2.0, 3.0, 0.5).unwrap(), 3.0);
}
