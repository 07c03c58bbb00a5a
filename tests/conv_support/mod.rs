//! Checks shared by the convolutions' integration tests (`conv_direct`,
//! `conv_grouped`).

#![allow(dead_code)]

use einlang::ndarray::Array4;

/// `got` equals the `f64` reference `want` within a tolerance that grows
/// with the number of terms summed per element.
pub fn assert_close(got: &Array4<f32>, want: &Array4<f64>, terms: usize, what: &str) {
    assert_eq!(got.dim(), want.dim(), "{what}");
    let tol = 2e-6 * (terms as f64 + 1.0);
    for ((at, a), e) in got.indexed_iter().zip(want) {
        assert!((*a as f64 - e).abs() <= tol, "{what} at {at:?}: {a} vs {e}");
    }
}

/// On one, two and three threads.
pub fn threads(body: impl Fn() + Send + Sync) {
    for t in 1..=3 {
        rayon::ThreadPoolBuilder::new().num_threads(t).build().unwrap().install(&body);
    }
}
