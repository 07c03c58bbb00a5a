//! Checks shared by the convolutions' integration tests (`conv_direct`,
//! `conv_grouped`).

#![allow(dead_code)]

use einlang::ndarray::{Array, Array4, Dimension};

/// `got` equals the `f64` reference `want` within a tolerance that grows
/// with the number of terms summed per element.
pub fn assert_close<D: Dimension>(got: &Array<f32, D>, want: &Array<f64, D>, terms: usize, what: &str) {
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

/// `len` values in `[-1, 1)` from `seed` (xorshift).
pub fn data(len: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0) as f32
        })
        .collect()
}

/// A tensor of `shape` filled by [`data`].
pub fn tensor(shape: (usize, usize, usize, usize), seed: u64) -> Array4<f32> {
    Array4::from_shape_vec(shape, data(shape.0 * shape.1 * shape.2 * shape.3, seed)).unwrap()
}
