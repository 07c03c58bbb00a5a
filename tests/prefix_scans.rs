//! Sums and products over a prefix of a definition's own index (`sum[k in
//! 0..i]`, `0..i + 1`) computed as running values (`opt::scan`) against
//! naive loops: the standard library's `cumsum`, `cumprod` and `cummax`, a
//! running minimum (over no term: the type's greatest value), an
//! inclusive sum of squares, integers, a prefix down the first axis, three
//! axes, a term that gathers (an error stays an error), and sums that are
//! not prefixes (the term reads the index; the end is not the index),
//! which run as written.

mod common;

use common::*;
use einlang::einlang;
use einlang::ndarray::{Array1, Array2, Array3};
use einlang::Error;

einlang! {
    pub fn cumsum_std(x: [f64; N, M]) -> [f64; N, M] {
        std::array::cumsum(x)
    }

    pub fn cumprod_std(x: [f64; N, M]) -> [f64; N, M] {
        std::array::cumprod(x)
    }

    pub fn cummax_std(x: [f64; N, M]) -> [f64; N, M] {
        std::array::cummax(x)
    }

    pub fn lows(x: [i32; M]) -> [i32; M] {
        let r[i in 0..M] = min[k in 0..i](x[k]);
        r
    }

    pub fn squares(x: [f64; M]) -> [f64; M] {
        let r[i in 0..M] = sum[k in 0..i + 1](x[k] * x[k]);
        r
    }

    pub fn counts(x: [i64; N, M]) -> [i64; N, M] {
        let r[b, i] = sum[k in 0..i](x[b, k]) - 2 * x[b, i];
        r
    }

    pub fn down(x: [f64; N, M]) -> [f64; N, M] {
        let r[i, b] = x[i, b] * sum[k in 0..i + 1](x[k, b]);
        r
    }

    pub fn batched(x: [f64; B, N, M]) -> [f64; B, N, M] {
        let r[a, b, i in 0..M] = sum[k in 0..i](x[a, b, k] * 0.5);
        r
    }

    pub fn gathered(c: [i64; M], w: [i64; K]) -> [i64; M] {
        let r[i in 0..M] = sum[k in 0..i + 1](w[c[k]]);
        r
    }

    /// `x[i - k]` reads the index: a convolution, not a prefix.
    pub fn reversed(x: [f64; M]) -> [f64; M] {
        let r[i in 0..M] = sum[k in 0..i + 1](x[i - k] * (k as f64));
        r
    }

    /// The end is half the index: not a prefix of it.
    pub fn halves(x: [f64; M]) -> [f64; M] {
        let r[i in 0..M] = sum[k in 0..i / 2](x[k]);
        r
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * (1.0 + a.abs().max(b.abs()))
}

#[test]
fn the_standard_librarys_running_sums_and_products() {
    for (n, m) in [(0, 4), (3, 0), (1, 1), (5, 7), (9, 17), (40, 300)] {
        let x = rand2_f64(n, m, (n * 100 + m) as u64);
        let (mut sums, mut prods) = (x.clone(), x.clone());
        for b in 0..n {
            for i in 1..m {
                sums[[b, i]] = sums[[b, i - 1]] + x[[b, i]];
                prods[[b, i]] = prods[[b, i - 1]] * x[[b, i]];
            }
        }
        let got = cumsum_std(&x).unwrap();
        assert!(got.iter().zip(sums.iter()).all(|(a, b)| close(*a, *b)), "cumsum {n} x {m}");
        let got = cumprod_std(&x).unwrap();
        assert!(got.iter().zip(prods.iter()).all(|(a, b)| close(*a, *b)), "cumprod {n} x {m}");
    }
}

#[test]
fn running_extrema() {
    for (n, m) in [(0, 4), (1, 1), (5, 7), (9, 17)] {
        let x = rand2_f64(n, m, (n * 100 + m + 5) as u64);
        let mut want = x.clone();
        for b in 0..n {
            for i in 1..m {
                want[[b, i]] = want[[b, i]].max(want[[b, i - 1]]);
            }
        }
        assert_eq!(cummax_std(&x).unwrap(), want, "cummax {n} x {m}");
    }
    for m in [0usize, 1, 2, 30] {
        let x = Array1::from_shape_fn(m, |i| ((i * 37) % 23) as i32 - 11);
        // Over no term: the greatest `i32`.
        let want = Array1::from_shape_fn(m, |i| (0..i).map(|k| x[k]).min().unwrap_or(i32::MAX));
        assert_eq!(lows(&x).unwrap(), want, "lows {m}");
    }
}

#[test]
fn inclusive_integer_and_first_axis_prefixes() {
    for m in [0usize, 1, 2, 33] {
        let x = rand1_f64(m, m as u64 + 1);
        let mut acc = 0.0;
        let want: Array1<f64> = x
            .iter()
            .map(|v| {
                acc += v * v;
                acc
            })
            .collect();
        let got = squares(&x).unwrap();
        assert!(got.iter().zip(want.iter()).all(|(a, b)| close(*a, *b)), "squares {m}");
    }
    for (n, m) in [(0, 3), (1, 1), (4, 9), (17, 30)] {
        let x = Array2::from_shape_fn((n, m), |(b, i)| ((b * 7 + i * 3) % 11) as i64 - 5);
        let want = Array2::from_shape_fn((n, m), |(b, i)| (0..i).map(|k| x[[b, k]]).sum::<i64>() - 2 * x[[b, i]]);
        assert_eq!(counts(&x).unwrap(), want, "counts {n} x {m}");
        let y = rand2_f64(n, m, (n + m) as u64);
        let want = Array2::from_shape_fn((n, m), |(i, b)| y[[i, b]] * (0..=i).map(|k| y[[k, b]]).sum::<f64>());
        let got = down(&y).unwrap();
        assert!(got.iter().zip(want.iter()).all(|(a, b)| close(*a, *b)), "down {n} x {m}");
    }
    let x = Array3::from_shape_fn((3, 4, 21), |(a, b, i)| (a * 100 + b * 10 + i) as f64 * 0.125);
    let want = Array3::from_shape_fn((3, 4, 21), |(a, b, i)| (0..i).map(|k| x[[a, b, k]] * 0.5).sum::<f64>());
    let got = batched(&x).unwrap();
    assert!(got.iter().zip(want.iter()).all(|(a, b)| close(*a, *b)), "batched");
}

#[test]
fn a_gathered_term_still_fails_out_of_range() {
    let w = Array1::from(vec![1i64, 10, 100]);
    let mut c = Array1::from(vec![0i64, 2, 1, 1, 0, 2]);
    let mut acc = 0;
    let want: Array1<i64> = c
        .iter()
        .map(|&k| {
            acc += w[k as usize];
            acc
        })
        .collect();
    assert_eq!(gathered(&c, &w).unwrap(), want);
    c[4] = 3;
    assert!(matches!(gathered(&c, &w).unwrap_err(), Error::Index { .. }));
}

#[test]
fn sums_that_are_not_prefixes_run_as_written() {
    for m in [0usize, 1, 5, 20] {
        let x = rand1_f64(m, m as u64 + 3);
        let want = Array1::from_shape_fn(m, |i| (0..=i).map(|k| x[i - k] * k as f64).sum::<f64>());
        let got = reversed(&x).unwrap();
        assert!(got.iter().zip(want.iter()).all(|(a, b)| close(*a, *b)), "reversed {m}");
        let want = Array1::from_shape_fn(m, |i| (0..i / 2).map(|k| x[k]).sum::<f64>());
        let got = halves(&x).unwrap();
        assert!(got.iter().zip(want.iter()).all(|(a, b)| close(*a, *b)), "halves {m}");
    }
}
