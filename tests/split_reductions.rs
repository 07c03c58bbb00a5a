//! Reductions the runtime splits across threads: a vector that
//! accumulates a reduction over an outer axis (`par::fill_reduced`:
//! column sums and extrema, a vector times a matrix, with a term after the
//! reduction) and a scalar reduction computed once (`par::reduce`: a `let`
//! or a function's result). Each is compared with a sequential fold in
//! `f64`, on pools of one, two and three threads and at sizes that split
//! (and one that does not). Extrema are exact and skip NaN terms, as the
//! loop does; sums agree up to rounding, and are the same bits on any
//! number of threads.

mod common;

use einlang::einlang;
use einlang::ndarray::{Array1, Array2};

einlang! {
    pub fn col_sum(x: [f32; N, C]) -> [f32; C] {
        let s[c] = sum[n](x[n, c]);
        s
    }

    pub fn col_mean(x: [f64; N, C]) -> [f64; C] {
        let m[c] = sum[n](x[n, c]) / (N as f64);
        m
    }

    pub fn col_max(x: [f64; N, C]) -> [f64; C] {
        let m[c] = max[n](x[n, c]);
        m
    }

    pub fn col_min(x: [f64; N, C]) -> [f64; C] {
        let m[c] = min[n](x[n, c]);
        m
    }

    pub fn vec_mat(v: [f64; K], a: [f64; K, M]) -> [f64; M] {
        let y[j] = sum[k](v[k] * a[k, j]);
        y
    }

    pub fn sum_squares(x: [f32; N]) -> f32 {
        sum[i](x[i] * x[i])
    }

    pub fn total_and_max(x: [f64; N, C]) -> (f64, f64) {
        let s = sum[n, c](x[n, c] * 0.5);
        let m = max[n, c](x[n, c]);
        (s, m)
    }
}

fn on_threads<R: Send>(threads: usize, f: impl FnOnce() -> R + Send) -> R {
    common::split_small_loops();
    rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("a thread pool").install(f)
}

/// Values in [-1, 1) from a simple generator, with NaN at every
/// `nan_every`-th position when it is not zero.
fn matrix(n: usize, c: usize, seed: u64, nan_every: usize) -> Array2<f64> {
    let mut s = seed;
    Array2::from_shape_fn((n, c), |(i, j)| {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        if nan_every > 0 && (i * c + j) % nan_every == nan_every - 1 {
            f64::NAN
        } else {
            (s >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        }
    })
}

fn close(got: f64, want: f64, scale: f64, what: &str) {
    assert!((got - want).abs() <= 1e-9 * scale.max(1.0), "{what}: {got} vs {want}");
}

/// The extremum a sequential loop computes: NaN terms skipped.
fn fold_extremum(xs: impl Iterator<Item = f64>, max: bool) -> f64 {
    xs.fold(
        if max { f64::NEG_INFINITY } else { f64::INFINITY },
        |m, v| {
            if (max && v > m) || (!max && v < m) {
                v
            } else {
                m
            }
        },
    )
}

#[test]
fn column_reductions_match_sequential_folds() {
    // (rows, columns): a short vector over many rows (the reduction
    // splits), a long one (the vector splits), a small one (neither).
    for (n, c) in [(3000, 37), (40, 70_000), (5, 3)] {
        let x = matrix(n, c, 7, 0);
        let x_nan = matrix(n, c, 11, 13);
        for threads in [1, 2, 3] {
            let (mean, max, min) =
                on_threads(threads, || (col_mean(&x).unwrap(), col_max(&x_nan).unwrap(), col_min(&x_nan).unwrap()));
            for j in 0..c {
                let col = || (0..n).map(|i| x[[i, j]]);
                close(mean[j], col().sum::<f64>() / n as f64, 1.0, "column mean");
                let nan_col = || (0..n).map(|i| x_nan[[i, j]]);
                assert_eq!(max[j], fold_extremum(nan_col(), true), "column max {j} ({n}x{c}, {threads} threads)");
                assert_eq!(min[j], fold_extremum(nan_col(), false), "column min {j} ({n}x{c}, {threads} threads)");
            }
        }
    }
}

#[test]
fn f32_column_sums_and_a_vector_times_a_matrix() {
    let (k, m) = (2500, 300);
    let a = matrix(k, m, 3, 0);
    let v: Array1<f64> = matrix(1, k, 5, 0).row(0).to_owned();
    let a32 = a.mapv(|x| x as f32);
    for threads in [1, 2, 3] {
        let (y, s) = on_threads(threads, || (vec_mat(&v, &a).unwrap(), col_sum(&a32).unwrap()));
        for j in 0..m {
            let want: f64 = (0..k).map(|i| v[i] * a[[i, j]]).sum();
            close(y[j], want, k as f64, "vector times matrix");
            let want32: f64 = (0..k).map(|i| a32[[i, j]] as f64).sum();
            assert!((s[j] as f64 - want32).abs() <= 1e-3, "f32 column sum {j}: {} vs {want32}", s[j]);
        }
    }
}

#[test]
fn scalar_reductions_match_sequential_folds() {
    let x = matrix(700, 130, 9, 0);
    let x_nan = matrix(700, 130, 17, 29);
    let flat: Array1<f32> = x.iter().map(|v| *v as f32).collect();
    let want_sq: f64 = flat.iter().map(|v| (*v as f64) * (*v as f64)).sum();
    // The parts depend on the sizes only: the same bits on any number of
    // threads.
    let bits = |threads| on_threads(threads, || sum_squares(&flat).unwrap().to_bits());
    assert_eq!(bits(2), bits(1));
    assert_eq!(bits(3), bits(1));
    for threads in [1, 2, 3] {
        let (sq, (s, _), (_, m)) = on_threads(threads, || {
            (sum_squares(&flat).unwrap(), total_and_max(&x).unwrap(), total_and_max(&x_nan).unwrap())
        });
        assert!((sq as f64 - want_sq).abs() <= 1e-4 * want_sq, "sum of squares: {sq} vs {want_sq}");
        close(s, x.iter().map(|v| v * 0.5).sum(), x.len() as f64, "sum over two loops");
        assert_eq!(m, fold_extremum(x_nan.iter().copied(), true), "maximum over two loops, NaN skipped");
    }
    // Empty ranges give the identities.
    let empty = Array2::<f64>::zeros((0, 4));
    assert_eq!(total_and_max(&empty).unwrap(), (0.0, f64::NEG_INFINITY));
    assert_eq!(sum_squares(&Array1::<f32>::zeros(0)).unwrap(), 0.0);
}
