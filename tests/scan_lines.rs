//! Recurrences along the rows of a matrix whose rows run alone
//! (`codegen/rust/lines.rs`: blocks of rows across threads, each running
//! its steps in tiles) against naive loops, on 1 to 3 threads, at sizes
//! around a block (8 rows) and a tile (16 steps): a prefix sum, a special
//! first row, a batch of matrices (lines over two axes), a look-back of
//! two steps, steps no clause writes (zeros,
//! though the tensor comes uninitialized from a dirty pool), a window
//! (only the last column read), and a gather that fails.

#[macro_use]
mod common;

use common::*;
use einlang::ndarray::{Array1, Array2};
use einlang::Error;

einlang_with_source! {
    use std::math::max;

    pub fn prefix(x: [f32; N, M]) -> [f32; N, M] {
        let c[i, 0] = x[i, 0];
        let c[i, j in 1..M] = c[i, j - 1] + x[i, j];
        c
    }

    /// Row 0 decays; the others sum; column 0 is the input.
    pub fn first_row(x: [f64; N, M]) -> [f64; N, M] {
        let c[i, 0] = x[i, 0];
        let c[0, j in 1..M] = 0.5 * c[0, j - 1] + x[0, j];
        let c[i in 1..N, j in 1..M] = c[i, j - 1] + x[i, j];
        c
    }

    pub fn fibonacci(x: [i64; N, 2], m: i64) -> [i64; N, m] {
        let f[i, 0] = x[i, 0];
        let f[i, 1] = x[i, 1];
        let f[i in 0..N, j in 2..m] = f[i, j - 1] + f[i, j - 2];
        f
    }

    /// Column 0 is never written (zeros); rows from `h` on skip column 2.
    pub fn gaps(x: [f64; N, M], h: i64) -> [f64; N, M] {
        let c[i in 0..N, 1] = x[i, 1];
        let c[i in 0..h, j in 2..M] = c[i, j - 1] + x[i, j];
        let c[i in h..N, j in 3..M] = 2.0 * c[i, j - 1] - x[i, j];
        c
    }

    /// The running maximum of each row; only its last column is read.
    pub fn last_max(x: [f32; N, M]) -> [f32; N] {
        let m[i, 0] = x[i, 0];
        let m[i, j in 1..M] = max(m[i, j - 1], x[i, j]);
        let out[i] = m[i, M - 1];
        out
    }

    /// Leaves a large matrix of large values in the buffer pool.
    pub fn big(x: [f32; N, M]) -> [f32; N, M] {
        let y[i, j] = x[i, j] * 1.0e30 + 7.0;
        y
    }

    /// A batch of matrices, each scanned along its rows; matrix 0's row 1
    /// decays.
    pub fn batched(x: [f64; B, N, M]) -> [f64; B, N, M] {
        let c[a, i, 0] = x[a, i, 0];
        let c[0, 1, j in 1..M] = 0.5 * c[0, 1, j - 1] + x[0, 1, j];
        let c[a in 0..B, i in 0..N, j in 1..M] = c[a, i, j - 1] + x[a, i, j];
        c
    }

    /// Each row reads its mirror's previous step: the rows do not run
    /// alone.
    pub fn mirrored(x: [f64; N, M]) -> [f64; N, M] {
        let c[i, 0] = x[i, 0];
        let c[i, j in 1..M] = 0.5 * c[N - 1 - i, j - 1] + x[i, j];
        c
    }

    /// Each step gathers `w` at a code of the row.
    pub fn gather(a: [i64; N, M], w: [i64; K]) -> [i64; N, M] {
        let g[i, 0] = 0;
        let g[i, j in 1..M] = g[i, j - 1] + w[a[i, j]];
        g
    }
}

const SIZES: [(usize, usize); 11] =
    [(1, 2), (1, 17), (7, 15), (8, 16), (9, 17), (17, 2), (16, 33), (33, 40), (70, 100), (300, 513), (4, 3000)];

fn pools() -> Vec<(usize, rayon::ThreadPool)> {
    common::split_small_loops();
    [1, 2, 3].into_iter().map(|n| (n, rayon::ThreadPoolBuilder::new().num_threads(n).build().unwrap())).collect()
}

/// Leaves a dirty buffer of `n * m` `f32`s (and more) in the pool.
fn dirty(n: usize, m: usize) {
    let x = rand2(n.max(1), m.max(1), 99);
    drop(big(&x).unwrap());
    drop(big(&rand2(2 * n.max(1), m.max(1), 98)).unwrap());
}

#[test]
fn prefix_sums_along_rows() {
    for (n, m) in SIZES {
        let x = rand2(n, m, (n * 1000 + m) as u64);
        let mut want = x.clone();
        for i in 0..n {
            for j in 1..m {
                want[[i, j]] += want[[i, j - 1]];
            }
        }
        for (threads, pool) in pools() {
            dirty(n, m);
            assert_eq!(pool.install(|| prefix(&x)).unwrap(), want, "{n} x {m}, {threads} threads");
        }
    }
}

#[test]
fn a_first_row_of_its_own() {
    for (n, m) in SIZES {
        let x = rand2_f64(n, m, (n * 1000 + m + 1) as u64);
        let mut want = x.clone();
        for i in 0..n {
            for j in 1..m {
                want[[i, j]] = if i == 0 { 0.5 * want[[i, j - 1]] } else { want[[i, j - 1]] } + x[[i, j]];
            }
        }
        for (threads, pool) in pools() {
            dirty(n, m);
            assert_eq!(pool.install(|| first_row(&x)).unwrap(), want, "{n} x {m}, {threads} threads");
        }
    }
}

#[test]
fn a_look_back_of_two_steps() {
    for n in [0usize, 1, 8, 9, 20] {
        let x = Array2::from_shape_fn((n, 2), |(i, j)| (i as i64) - 3 * (j as i64));
        for m in [2usize, 3, 16, 17, 50] {
            let mut want = Array2::<i64>::zeros((n, m));
            for i in 0..n {
                want[[i, 0]] = x[[i, 0]];
                want[[i, 1]] = x[[i, 1]];
                for j in 2..m {
                    want[[i, j]] = want[[i, j - 1]].wrapping_add(want[[i, j - 2]]);
                }
            }
            for (threads, pool) in pools() {
                assert_eq!(pool.install(|| fibonacci(&x, m as i64)).unwrap(), want, "{n} x {m}, {threads} threads");
            }
        }
    }
}

#[test]
fn steps_no_clause_writes_are_zero() {
    for (n, m) in SIZES {
        let x = rand2_f64(n, m, (n * 1000 + m + 2) as u64);
        for h in [0, n / 2, n] {
            let mut want = Array2::<f64>::zeros((n, m));
            for i in 0..n {
                for j in 1..m {
                    if j == 1 {
                        want[[i, j]] = x[[i, 1]];
                    } else if i < h {
                        want[[i, j]] = want[[i, j - 1]] + x[[i, j]];
                    } else if j >= 3 {
                        want[[i, j]] = 2.0 * want[[i, j - 1]] - x[[i, j]];
                    }
                }
            }
            for (threads, pool) in pools() {
                dirty(n, m);
                let got = pool.install(|| gaps(&x, h as i64)).unwrap();
                assert_eq!(got, want, "{n} x {m}, rows from {h}, {threads} threads");
            }
        }
    }
}

#[test]
fn a_window_of_the_last_steps() {
    for (n, m) in SIZES {
        let x = rand2(n, m, (n * 1000 + m + 3) as u64);
        let want = Array1::from_shape_fn(n, |i| x.row(i).iter().fold(f32::MIN, |a, &b| a.max(b)));
        for (threads, pool) in pools() {
            dirty(n, m);
            assert_eq!(pool.install(|| last_max(&x)).unwrap(), want, "{n} x {m}, {threads} threads");
        }
    }
}

#[test]
fn a_batch_of_matrices() {
    for (b, n, m) in [(1, 2, 1), (2, 3, 5), (3, 8, 17), (4, 9, 40), (1, 2, 300)] {
        let x =
            einlang::ndarray::Array3::from_shape_fn((b, n, m), |(a, i, j)| ((a * 31 + i * 7 + j) % 13) as f64 - 6.0);
        let mut want = x.clone();
        for a in 0..b {
            for i in 0..n {
                for j in 1..m {
                    // The later clause wins where both cover a point (row
                    // 1 of matrix 0), and reads the step before, not
                    // what the earlier clause just wrote.
                    want[[a, i, j]] = want[[a, i, j - 1]] + x[[a, i, j]];
                }
            }
        }
        for (threads, pool) in pools() {
            dirty(b * n, m);
            let got = pool.install(|| batched(&x));
            assert_eq!(got.unwrap(), want, "{b} x {n} x {m}, {threads} threads");
        }
    }
}

#[test]
fn empty_extents() {
    // No rows: nothing runs.
    let x = Array2::<f32>::zeros((0, 5));
    assert_eq!(prefix(&x).unwrap(), x);
    // No columns: the first column's clause still defines column 0, and
    // reads outside `x` there.
    let err = prefix(&Array2::<f32>::zeros((4, 0))).unwrap_err();
    assert!(matches!(err, Error::Index { axis: 1, index: 0, len: 0, .. }), "{err:?}");
    // No rows, but row 0 has a clause of its own: it reads outside too.
    let err = first_row(&Array2::<f64>::zeros((0, 4))).unwrap_err();
    assert!(matches!(err, Error::Index { axis: 0, index: 0, len: 0, .. }), "{err:?}");
}

#[test]
fn a_gather_out_of_range_is_an_error_on_any_thread() {
    let (n, m) = (40, 30);
    let w = Array1::from_shape_fn(5, |k| (k * k) as i64);
    let mut a = Array2::from_shape_fn((n, m), |(i, j)| ((i + j) % 5) as i64);
    let mut want = Array2::<i64>::zeros((n, m));
    for i in 0..n {
        for j in 1..m {
            want[[i, j]] = want[[i, j - 1]] + w[a[[i, j]] as usize];
        }
    }
    for (threads, pool) in pools() {
        assert_eq!(pool.install(|| gather(&a, &w)).unwrap(), want, "{threads} threads");
    }
    a[[33, 17]] = 5;
    for (threads, pool) in pools() {
        let err = pool.install(|| gather(&a, &w)).unwrap_err();
        assert!(matches!(err, Error::Index { .. }), "{threads} threads: {err:?}");
    }
}

#[test]
fn rows_run_alone_only_when_each_reads_only_itself() {
    for (func, name) in
        [("prefix", "c"), ("first_row", "c"), ("fibonacci", "f"), ("gaps", "c"), ("last_max", "m"), ("batched", "c")]
    {
        assert!(recurrence_facts(SRC, func, name).lines, "{func}");
    }
    let f = recurrence_facts(SRC, "mirrored", "c");
    assert_eq!((f.sequential, f.parallel), (vec![1], vec![0]));
    assert!(!f.lines);
    for (n, m) in SIZES {
        let x = rand2_f64(n, m, (n * 1000 + m + 4) as u64);
        let mut want = x.clone();
        for j in 1..m {
            for i in 0..n {
                want[[i, j]] = 0.5 * want[[n - 1 - i, j - 1]] + x[[i, j]];
            }
        }
        for (threads, pool) in pools() {
            assert_eq!(pool.install(|| mirrored(&x)).unwrap(), want, "{n} x {m}, {threads} threads");
        }
    }
}
