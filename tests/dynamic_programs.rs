//! Two-axis dynamic programs against naive Rust loops, on one, two and
//! three threads, at sizes around the groups of rows computed in lanes
//! (eight rows advancing along an anti-diagonal) and the wavefront's tiles:
//! look-backs of one and two rows and columns, integer and float
//! elements, whole tables and windows, clauses that switch rows or
//! override a column in the middle, one clause with its boundary in
//! branches (`opt::split` makes the clauses of it, whose interior runs in
//! lanes), and a gather that fails.

#[macro_use]
mod common;

use common::*;
use einlang::ndarray::{Array1, Array2};
use einlang::{einlang, Error};

mod edit {
    einlang::include_ein!("examples/ein/edit_distance.ein");
}

einlang! {
    use std::math::{abs, max, min};

    /// Longest common subsequence lengths, the whole table.
    pub fn lcs(a: [i64; N], b: [i64; M]) -> [i64; N + 1, M + 1] {
        let c[0, j in 0..M + 1] = 0;
        let c[i in 1..N + 1, 0] = 0;
        let c[i in 1..N + 1, j in 1..M + 1] =
            if a[i - 1] == b[j - 1] { c[i - 1, j - 1] + 1 } else { max(c[i, j - 1], c[i - 1, j]) };
        c
    }

    /// Dynamic time warping: only the last point is read (a window).
    pub fn dtw(a: [f32; N], b: [f32; M]) -> f32 {
        let d[0, 0] = 0.0;
        let d[0, j in 1..M + 1] = 1.0e30;
        let d[i in 1..N + 1, 0] = 1.0e30;
        let d[i in 1..N + 1, j in 1..M + 1] =
            abs(a[i - 1] - b[j - 1]) + min(min(d[i - 1, j], d[i, j - 1]), d[i - 1, j - 1]);
        d[N, M]
    }

    /// Reads two rows and two columns back, and a knight's move.
    pub fn far(x: [f64; N], y: [f64; M]) -> [f64; N + 2, M + 2] {
        let d[i in 0..2, j in 0..M + 2] = 0.5 + 0.25 * (i as f64) - 0.125 * (j as f64);
        let d[i in 2..N + 2, j in 0..2] = 0.75 * (j as f64) - 0.5;
        let d[i in 2..N + 2, j in 2..M + 2] = 0.5 * d[i - 2, j] + 0.25 * d[i, j - 2] + 0.125 * d[i - 1, j - 1]
            - 0.0625 * d[i - 2, j - 1] + x[i - 2] * y[j - 2];
        d
    }

    /// Rows from 37 on use another clause, and column 40 of every row is
    /// overridden by a later clause (it wins).
    pub fn switched(a: [i32; N], b: [i32; M]) -> [i32; N + 1, M + 1] {
        let d[0, j in 0..M + 1] = j as i32;
        let d[i in 1..N + 1, 0] = 2 * (i as i32);
        let d[i in 1..min(37, N + 1), j in 1..M + 1] = max(d[i - 1, j], d[i, j - 1]) - a[i - 1] * b[j - 1];
        let d[i in min(37, N + 1)..N + 1, j in 1..M + 1] =
            min(d[i - 1, j] + 1, d[i - 1, j - 1] + a[i - 1] * b[j - 1]);
        let d[i in 1..N + 1, 40] = d[i - 1, 40] + 3;
        d
    }

    /// The last two rows are read after the recurrence: a window of two.
    pub fn last_two(a: [f64; N], b: [f64; M]) -> [f64; M + 1] {
        let d[0, j in 0..M + 1] = 0.5 * (j as f64);
        let d[i in 1..N + 1, 0] = 0.25 * (i as f64);
        let d[i in 1..N + 1, j in 1..M + 1] = 0.5 * d[i - 1, j] - 0.25 * d[i, j - 1] + 0.125 * d[i - 1, j - 1] + a[i - 1] * b[j - 1];
        let out[j] = d[N - 1, j] - 2.0 * d[N, j];
        out
    }

    /// Edit distance as one clause over the whole table, its boundary in
    /// branches: split into row 0, column 0 and the interior, whose reads
    /// the failed conditions keep inside (unchecked, in lanes).
    pub fn single_clause(a: [i32; N], b: [i32; M]) -> i32 {
        let d[i in 0..N + 1, j in 0..M + 1] = if i == 0 { j as i32 } else if j == 0 { i as i32 } else {
            min(min(d[i - 1, j] + 1, d[i, j - 1] + 1), d[i - 1, j - 1] + (if a[i - 1] == b[j - 1] { 0 } else { 1 }))
        };
        d[N, M]
    }

    /// The same, keeping the table.
    pub fn single_clause_table(a: [i32; N], b: [i32; M]) -> [i32; N + 1, M + 1] {
        let d[i in 0..N + 1, j in 0..M + 1] = if i == 0 { j as i32 } else if j == 0 { i as i32 } else {
            min(min(d[i - 1, j] + 1, d[i, j - 1] + 1), d[i - 1, j - 1] + (if a[i - 1] == b[j - 1] { 0 } else { 1 }))
        };
        d
    }

    /// The same with the boundary in one branch of `||`.
    pub fn either_zero(a: [i32; N], b: [i32; M]) -> i32 {
        let d[i in 0..N + 1, j in 0..M + 1] = if i == 0 || j == 0 { (i + j) as i32 } else {
            min(min(d[i - 1, j] + 1, d[i, j - 1] + 1), d[i - 1, j - 1] + (if a[i - 1] == b[j - 1] { 0 } else { 1 }))
        };
        d[N, M]
    }

    /// LCS with its boundary in branches, and a branch on the data
    /// inside, which stays.
    pub fn lcs_branches(a: [i64; N], b: [i64; M]) -> [i64; N + 1, M + 1] {
        let c[i in 0..N + 1, j in 0..M + 1] = if i < 1 || j < 1 { 0 }
            else if a[i - 1] == b[j - 1] { c[i - 1, j - 1] + 1 } else { max(c[i, j - 1], c[i - 1, j]) };
        c
    }

    /// Each point gathers `w` at a code of `a`: an error when a code is
    /// out of range.
    pub fn gather(a: [i64; N], b: [i64; M], w: [i64; K]) -> i64 {
        let d[0, j in 0..M + 1] = 0;
        let d[i in 1..N + 1, 0] = 0;
        let d[i in 1..N + 1, j in 1..M + 1] = max(d[i - 1, j], d[i, j - 1]) + w[a[i - 1] + b[j - 1]];
        d[N, M]
    }
}

/// Sizes around a group of rows (8), a band of the wavefront (64 rows),
/// its tiles, and its window (512 rows).
const SIZES: [(usize, usize); 12] =
    [(0, 0), (1, 5), (5, 1), (7, 8), (8, 8), (9, 17), (16, 40), (17, 100), (63, 70), (130, 300), (300, 260), (520, 90)];

fn pools() -> Vec<(usize, rayon::ThreadPool)> {
    common::split_small_loops();
    [1, 2, 3].into_iter().map(|n| (n, rayon::ThreadPoolBuilder::new().num_threads(n).build().unwrap())).collect()
}

fn codes(rng: &mut Rng, n: usize, hi: i32) -> Vec<i32> {
    (0..n).map(|_| rng.int(0, hi)).collect()
}

#[test]
fn edit_distance_and_its_table() {
    let mut rng = Rng::new(41);
    for (n, m) in SIZES {
        let (a, b) = (codes(&mut rng, n, 4), codes(&mut rng, m, 4));
        let mut want = Array2::<i32>::zeros((n + 1, m + 1));
        for j in 0..=m {
            want[[0, j]] = j as i32;
        }
        for i in 1..=n {
            want[[i, 0]] = i as i32;
            for j in 1..=m {
                let sub = want[[i - 1, j - 1]] + i32::from(a[i - 1] != b[j - 1]);
                want[[i, j]] = (want[[i - 1, j]] + 1).min(want[[i, j - 1]] + 1).min(sub);
            }
        }
        let (a, b) = (Array1::from(a), Array1::from(b));
        for (threads, pool) in pools() {
            let (d, table) = pool.install(|| (edit::distance(&a, &b), edit::table(&a, &b)));
            assert_eq!(d.unwrap(), want[[n, m]], "{n} x {m}, {threads} threads");
            assert_eq!(table.unwrap(), want, "{n} x {m}, {threads} threads");
            // Written as one clause with its boundary in branches.
            let (d, table) = pool.install(|| (single_clause(&a, &b), single_clause_table(&a, &b)));
            assert_eq!(d.unwrap(), want[[n, m]], "one clause, {n} x {m}, {threads} threads");
            assert_eq!(table.unwrap(), want, "one clause, {n} x {m}, {threads} threads");
            let d = pool.install(|| either_zero(&a, &b));
            assert_eq!(d.unwrap(), want[[n, m]], "one clause with `||`, {n} x {m}, {threads} threads");
        }
    }
}

#[test]
fn longest_common_subsequences() {
    let mut rng = Rng::new(43);
    for (n, m) in SIZES {
        let a: Vec<i64> = codes(&mut rng, n, 3).into_iter().map(i64::from).collect();
        let b: Vec<i64> = codes(&mut rng, m, 3).into_iter().map(i64::from).collect();
        let want = lcs_table_ref(&a, &b);
        let (a, b) = (Array1::from(a), Array1::from(b));
        for (threads, pool) in pools() {
            assert_eq!(pool.install(|| lcs(&a, &b)).unwrap(), want, "{n} x {m}, {threads} threads");
            let got = pool.install(|| lcs_branches(&a, &b)).unwrap();
            assert_eq!(got, want, "one clause, {n} x {m}, {threads} threads");
        }
    }
}

#[test]
fn dynamic_time_warping() {
    let mut rng = Rng::new(47);
    for (n, m) in SIZES {
        let a: Vec<f32> = (0..n).map(|_| rng.range(-1.0, 1.0) as f32).collect();
        let b: Vec<f32> = (0..m).map(|_| rng.range(-1.0, 1.0) as f32).collect();
        let mut d = Array2::<f32>::from_elem((n + 1, m + 1), 1.0e30);
        d[[0, 0]] = 0.0;
        for i in 1..=n {
            for j in 1..=m {
                d[[i, j]] = (a[i - 1] - b[j - 1]).abs() + d[[i - 1, j]].min(d[[i, j - 1]]).min(d[[i - 1, j - 1]]);
            }
        }
        let (a, b) = (Array1::from(a), Array1::from(b));
        for (threads, pool) in pools() {
            // The same operations in the same order: the same bits.
            let got = pool.install(|| dtw(&a, &b)).unwrap();
            assert_eq!(got.to_bits(), d[[n, m]].to_bits(), "{n} x {m}, {threads} threads: {got} vs {}", d[[n, m]]);
        }
    }
}

#[test]
fn look_backs_of_two_rows_and_columns() {
    let mut rng = Rng::new(53);
    for (n, m) in SIZES {
        let x: Vec<f64> = (0..n).map(|_| rng.range(-1.0, 1.0)).collect();
        let y: Vec<f64> = (0..m).map(|_| rng.range(-1.0, 1.0)).collect();
        let mut d = Array2::<f64>::zeros((n + 2, m + 2));
        for i in 0..n + 2 {
            for j in 0..m + 2 {
                d[[i, j]] = if i < 2 {
                    0.5 + 0.25 * i as f64 - 0.125 * j as f64
                } else if j < 2 {
                    0.75 * j as f64 - 0.5
                } else {
                    0.5 * d[[i - 2, j]] + 0.25 * d[[i, j - 2]] + 0.125 * d[[i - 1, j - 1]] - 0.0625 * d[[i - 2, j - 1]]
                        + x[i - 2] * y[j - 2]
                };
            }
        }
        let (x, y) = (Array1::from(x), Array1::from(y));
        for (threads, pool) in pools() {
            let got = pool.install(|| far(&x, &y)).unwrap();
            assert!(got.iter().zip(&d).all(|(g, w)| g.to_bits() == w.to_bits()), "{n} x {m}, {threads} threads");
        }
    }
}

#[test]
fn clauses_that_switch_rows_and_override_a_column() {
    let mut rng = Rng::new(59);
    // The override writes column 40: the table has at least 41 columns.
    for (n, m) in SIZES.into_iter().filter(|&(_, m)| m >= 40) {
        let (a, b) = (codes(&mut rng, n, 5), codes(&mut rng, m, 5));
        let mut d = Array2::<i32>::zeros((n + 1, m + 1));
        for j in 0..=m {
            d[[0, j]] = j as i32;
        }
        for i in 1..=n {
            d[[i, 0]] = 2 * i as i32;
            for j in 1..=m {
                d[[i, j]] = if j == 40 {
                    d[[i - 1, 40]] + 3
                } else if i < 37 {
                    d[[i - 1, j]].max(d[[i, j - 1]]) - a[i - 1] * b[j - 1]
                } else {
                    (d[[i - 1, j]] + 1).min(d[[i - 1, j - 1]] + a[i - 1] * b[j - 1])
                };
            }
        }
        let (a, b) = (Array1::from(a), Array1::from(b));
        for (threads, pool) in pools() {
            assert_eq!(pool.install(|| switched(&a, &b)).unwrap(), d, "{n} x {m}, {threads} threads");
        }
    }
}

#[test]
fn the_last_two_rows_of_a_window() {
    let mut rng = Rng::new(67);
    for (n, m) in SIZES.into_iter().filter(|&(n, _)| n >= 1) {
        let a: Vec<f64> = (0..n).map(|_| rng.range(-1.0, 1.0)).collect();
        let b: Vec<f64> = (0..m).map(|_| rng.range(-1.0, 1.0)).collect();
        let mut d = Array2::<f64>::zeros((n + 1, m + 1));
        for j in 0..=m {
            d[[0, j]] = 0.5 * j as f64;
        }
        for i in 1..=n {
            d[[i, 0]] = 0.25 * i as f64;
            for j in 1..=m {
                d[[i, j]] =
                    0.5 * d[[i - 1, j]] - 0.25 * d[[i, j - 1]] + 0.125 * d[[i - 1, j - 1]] + a[i - 1] * b[j - 1];
            }
        }
        let want: Vec<f64> = (0..=m).map(|j| d[[n - 1, j]] - 2.0 * d[[n, j]]).collect();
        let (a, b) = (Array1::from(a), Array1::from(b));
        for (threads, pool) in pools() {
            let got = pool.install(|| last_two(&a, &b)).unwrap();
            assert!(got.iter().zip(&want).all(|(g, w)| g.to_bits() == w.to_bits()), "{n} x {m}, {threads} threads");
        }
    }
}

#[test]
fn a_gather_out_of_range_is_an_error_on_any_thread() {
    let mut rng = Rng::new(61);
    for (n, m) in [(9, 17), (130, 300), (300, 260)] {
        let a: Array1<i64> = (0..n).map(|_| i64::from(rng.int(0, 3))).collect();
        let b: Array1<i64> = (0..m).map(|_| i64::from(rng.int(0, 3))).collect();
        let w: Array1<i64> = (0..9).map(|k| 10 - k).collect();
        let mut d = Array2::<i64>::zeros((n + 1, m + 1));
        for i in 1..=n {
            for j in 1..=m {
                d[[i, j]] = d[[i - 1, j]].max(d[[i, j - 1]]) + w[(a[i - 1] + b[j - 1]) as usize];
            }
        }
        let mut bad = a.clone();
        bad[n / 2] = 50;
        for (threads, pool) in pools() {
            assert_eq!(pool.install(|| gather(&a, &b, &w)).unwrap(), d[[n, m]], "{n} x {m}, {threads} threads");
            let err = pool.install(|| gather(&bad, &b, &w)).unwrap_err();
            assert!(matches!(err, Error::Index { .. }), "{n} x {m}, {threads} threads: {err:?}");
        }
    }
}
