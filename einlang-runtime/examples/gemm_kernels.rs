//! Times the matrix products generated code runs (`gemm::matmul`,
//! `gemm::batched_matmul`) on the library `EINLANG_GEMM` names (`gemm`,
//! `matrixmultiply`, or `blas` with the feature `blas`), for comparing the
//! libraries on one machine: run it once per library, alternately.
//!
//! `EINLANG_GEMM=blas cargo run --release -p einlang-runtime --features blas --example gemm_kernels`

use std::time::Instant;

use einlang_runtime::gemm::{batched_matmul, matmul};
use ndarray::{Array2, Array3};

/// The fastest of `reps` runs of `f`, in seconds, after one warm-up run.
fn best(reps: usize, mut f: impl FnMut()) -> f64 {
    f();
    (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    let library = std::env::var("EINLANG_GEMM").unwrap_or_else(|_| "default".to_string());
    let fill = |i: usize, j: usize| ((i * 7 + j * 3) % 17) as f32 * 0.125 - 1.0;
    for (m, k, n) in [(1024, 1024, 1024), (1000, 777, 1029), (256, 1024, 1024), (8, 1024, 1024)] {
        let a = Array2::from_shape_fn((m, k), |(i, j)| fill(i, j));
        let b = Array2::from_shape_fn((k, n), |(i, j)| fill(j, i));
        let t = best(8, || {
            let c = matmul("bench", m as i64, n as i64, k as i64, a.view(), b.view()).unwrap();
            std::hint::black_box(c);
        });
        let gflops = 2.0 * (m * n * k) as f64 / t / 1e9;
        println!("{library:>14}  matmul {m}x{k}x{n}: {:8.2} ms  {gflops:6.1} GFLOP/s", t * 1e3);
    }
    // Attention scores: q k^T per batch, k read transposed.
    let (batch, m, n, k) = (32, 256, 256, 64);
    let q = Array3::from_shape_fn((batch, m, k), |(p, i, j)| fill(p + i, j));
    let kk = Array3::from_shape_fn((batch, n, k), |(p, i, j)| fill(i, p + j));
    let kt = kk.view().permuted_axes([0, 2, 1]);
    let t = best(8, || {
        let c = batched_matmul("bench", batch as i64, m as i64, n as i64, k as i64, q.view(), kt).unwrap();
        std::hint::black_box(c);
    });
    let gflops = 2.0 * (batch * m * n * k) as f64 / t / 1e9;
    println!("{library:>14}  batched {batch}x{m}x{k}x{n} (k^T): {:8.2} ms  {gflops:6.1} GFLOP/s", t * 1e3);
}
