//! Test data and checks shared by the products' integration tests
//! (`gemm_shapes`, `gemm_scale`): deterministic values, pools of 1-3
//! threads, a relative comparison.

#![allow(dead_code)]

use einlang::ndarray::Array;

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
