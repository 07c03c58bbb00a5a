//! Test data and checks shared by the products' integration tests
//! (`gemm_shapes`, `gemm_scale`, `row_sums`, `slices`): deterministic
//! values, pools of 1-3 threads, a relative comparison.

#![allow(dead_code)]

use einlang::ndarray::{Array, Array3};

/// Deterministic values in `[-1, 1)`, different per `seed`.
pub fn values(len: usize, seed: u64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            (s.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 52) as f64 - 1.0
        })
        .collect()
}

/// Deterministic values in about `[-2, 2)` from a linear congruential
/// generator, different per `seed` (the row kernels' tests).
pub fn spread(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) * 4.0 - 2.0
        })
        .collect()
}

/// An `a x b x c` tensor of `spread` values.
pub fn tensor3(a: usize, b: usize, c: usize, seed: u64) -> Array3<f64> {
    Array3::from_shape_vec((a, b, c), spread(a * b * c, seed)).unwrap()
}

pub fn f32s(len: usize, seed: u64) -> Vec<f32> {
    values(len, seed).into_iter().map(|v| v as f32).collect()
}

/// Runs `f` on pools of 1, 2 and 3 threads.
pub fn on_threads(f: impl Fn() + Sync) {
    for threads in 1..=3 {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(&f);
    }
}

/// `got` equals `want` within a relative tolerance.
pub fn close<D: einlang::ndarray::Dimension>(got: &Array<f64, D>, want: &Array<f64, D>, tol: f64, what: &str) {
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    for (g, w) in got.iter().zip(want.iter()) {
        assert!((g - w).abs() <= tol * (1.0 + w.abs()), "{what}: {g} against {w}");
    }
}
