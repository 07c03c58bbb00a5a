//! Float sums, maxima and minima run their innermost loop in sixteen
//! independent lanes (`f32` maxima and minima in sixty-four, four runs of
//! sixteen at once), combined at the end (`codegen/rust/expr.rs`,
//! `reduce_in_lanes`), over one loop or several. Extrema are those of the
//! sequential loop: NaN terms are skipped, an empty or all-NaN range gives
//! the operation's identity (`-inf` for a maximum, `inf` for a minimum),
//! infinities count as values; sums agree with a sequential sum up to
//! rounding. Checked against sequential folds on every length around the
//! lane count.

mod common;

use einlang::einlang;
use einlang::ndarray::{Array1, Array2};
use proptest::prelude::*;

einlang! {
    pub fn row_max(x: [f64; N, C]) -> [f64; N] {
        let m[n] = max[c](x[n, c]);
        m
    }

    pub fn row_min(x: [f64; N, C]) -> [f64; N] {
        let m[n] = min[c](x[n, c]);
        m
    }

    // Strided terms (a column), in `f32`, with a term computed per element.
    pub fn col_max_scaled(x: [f32; N, C]) -> [f32; C] {
        let m[c] = max[n](x[n, c] * 2.0 - 1.0);
        m
    }

    pub fn vec_min(x: [f32; N]) -> f32 {
        min[i](x[i])
    }

    // Over two loops (the runs of the inner one continue the lanes), and
    // over a triangle (runs of every length).
    pub fn whole(x: [f64; N, C]) -> (f64, f64, f64) {
        (sum[n, c](x[n, c] * 0.5), max[n, c](x[n, c]), min[c, n](x[n, c]))
    }

    // `f32` extrema keep four runs of sixteen lanes at once
    // (`vmath::lanes::ExtremumF32`): rows, a term with arithmetic, and a
    // long vector that `par::reduce` splits across threads.
    pub fn row_max32(x: [f32; N, C]) -> [f32; N] {
        let m[n] = max[c](x[n, c]);
        m
    }

    pub fn row_min32_shifted(x: [f32; N, C]) -> [f32; N] {
        let m[n] = min[c](x[n, c] - 1.0);
        m
    }

    pub fn vec_max32(x: [f32; N]) -> f32 {
        max[i](x[i])
    }

    pub fn triangle(x: [f64; N, N]) -> f64 {
        sum[i](sum[j in 0..i + 1](x[i, j]))
    }
}

/// The sequential fold the language defines: NaN terms skipped.
fn fold(xs: impl Iterator<Item = f64>, max: bool) -> f64 {
    let start = if max { f64::NEG_INFINITY } else { f64::INFINITY };
    xs.fold(start, |acc, v| if (max && v > acc) || (!max && v < acc) { v } else { acc })
}

fn same(a: f64, b: f64) -> bool {
    a == b || (a.is_nan() && b.is_nan())
}

/// A value of kind `k`: ordinary, NaN, an infinity or a zero.
fn value(k: u8, v: f64) -> f64 {
    match k {
        0 => f64::NAN,
        1 => f64::INFINITY,
        2 => f64::NEG_INFINITY,
        3 => 0.0,
        _ => v,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn extrema_in_lanes_match_the_loop(
        n in 1usize..4,
        c in 0usize..27,
        kinds in prop::collection::vec(0u8..12, 108),
        vals in prop::collection::vec(-5.0f64..5.0, 108),
    ) {
        let x = Array2::from_shape_fn((n, c), |(i, j)| value(kinds[i * c + j], vals[i * c + j]));
        let (mx, mn) = (row_max(&x).unwrap(), row_min(&x).unwrap());
        for i in 0..n {
            prop_assert!(same(mx[i], fold(x.row(i).iter().copied(), true)), "{mx} {x}");
            prop_assert!(same(mn[i], fold(x.row(i).iter().copied(), false)), "{mn} {x}");
        }
        let xf = x.mapv(|v| v as f32);
        let cm = col_max_scaled(&xf).unwrap();
        for j in 0..c {
            let want = fold(xf.column(j).iter().map(|&v| (v * 2.0 - 1.0) as f64), true);
            prop_assert!(same(cm[j] as f64, want), "{cm} {xf}");
        }
        let (total, hi, lo) = whole(&x).unwrap();
        prop_assert!(same(hi, fold(x.iter().copied(), true)));
        prop_assert!(same(lo, fold(x.iter().copied(), false)));
        let finite = x.iter().all(|v| v.is_finite());
        if finite {
            let want: f64 = x.iter().map(|v| v * 0.5).sum();
            prop_assert!((total - want).abs() <= 1e-9 * (1.0 + want.abs()), "{total} vs {want}");
        } else {
            prop_assert!(total.is_nan() || total.is_infinite());
        }
        let flat: Array1<f32> = xf.iter().copied().collect();
        let want = fold(flat.iter().map(|&v| v as f64), false);
        prop_assert!(same(vec_min(&flat).unwrap() as f64, want));
    }
}

#[test]
fn all_nan_and_empty_rows_give_the_identity() {
    let x = Array2::from_elem((2, 19), f64::NAN);
    assert_eq!(row_max(&x).unwrap(), Array1::from_elem(2, f64::NEG_INFINITY));
    assert_eq!(row_min(&x).unwrap(), Array1::from_elem(2, f64::INFINITY));
    let empty = Array2::<f64>::zeros((3, 0));
    assert_eq!(row_max(&empty).unwrap(), Array1::from_elem(3, f64::NEG_INFINITY));
}

/// The `f32` extrema on rows of every length around the runs of sixteen
/// and sixty-four (prime ones among them), with NaNs, infinities and zeros
/// among the terms, and on vectors long enough to be split across
/// threads, on one to three threads: the loop's values.
#[test]
fn f32_extrema_match_the_loop_on_one_to_three_threads() {
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let mut draw = move || {
        let k = (next() % 40) as u8;
        value(k, ((next() % 20001) as f64 - 10000.0) / 64.0) as f32
    };
    for threads in 1..=3 {
        common::split_small_loops();
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("pool");
        pool.install(|| {
            for c in [0usize, 1, 7, 13, 16, 17, 31, 63, 64, 65, 97, 128, 129, 200, 257] {
                let x = Array2::from_shape_fn((5, c), |_| draw());
                let (mx, mn) = (row_max32(&x).unwrap(), row_min32_shifted(&x).unwrap());
                for i in 0..5 {
                    let want_max = fold(x.row(i).iter().map(|&v| v as f64), true);
                    let want_min = fold(x.row(i).iter().map(|&v| (v - 1.0) as f64), false);
                    assert!(same(mx[i] as f64, want_max), "max of row {i} of {c}, {threads} threads");
                    assert!(same(mn[i] as f64, want_min), "min of row {i} of {c}, {threads} threads");
                }
            }
            for n in [1usize, 7, 65, 4099, 100_003] {
                let x: Array1<f32> = (0..n).map(|_| draw()).collect();
                let want = fold(x.iter().map(|&v| v as f64), true);
                assert!(same(vec_max32(&x).unwrap() as f64, want), "max of {n}, {threads} threads");
            }
        });
    }
}

#[test]
fn sums_over_a_triangle() {
    for n in [0usize, 1, 7, 8, 9, 15, 16, 17, 30, 33] {
        let x = Array2::from_shape_fn((n, n), |(i, j)| ((i * 13 + j * 7) % 11) as f64 - 5.0);
        let want: f64 = (0..n).flat_map(|i| (0..=i).map(move |j| (i, j))).map(|(i, j)| x[[i, j]]).sum();
        assert_eq!(triangle(&x).unwrap(), want, "n = {n}");
    }
}
