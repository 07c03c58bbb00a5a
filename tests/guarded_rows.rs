//! Definitions whose guard bounds the innermost index (padding, shifted
//! windows, triangles) compute the range where it holds once per row
//! (`codegen/rust/clip.rs`), and sums whose guards bound it add each term
//! to that range of the row (a transposed convolution's shifted sum).
//! Each is compared with a plain loop written from the definition's
//! meaning, on shapes where the range is empty, partial and whole.

use einlang::einlang;
use einlang::ndarray::Array2;

einlang! {
    // Padding through a where-bound index and a run-time offset.
    pub fn shifted(x: [f64; N, W], s: i64) -> [f64; N, W] {
        let y[i, j in 0..W] = if jj >= 0 && jj < W { x[i, jj] } else { 0.0 } where jj = j + s - 2;
        y
    }

    // Every comparison, with the index on either side.
    pub fn band(x: [f64; N, W], a: i64, b: i64) -> [f64; N, W] {
        let y[i, j] = x[i, j] * 2.0 where j > a, b >= j;
        y
    }

    pub fn band2(x: [f64; N, W], a: i64, b: i64) -> [f64; N, W] {
        let y[i, j] = x[i, j] + 1.0 where a < j + 1, j - 1 <= b;
        y
    }

    // A triangle: the bound is the row's own index.
    pub fn lower(x: [f64; N, N]) -> [f64; N, N] {
        let y[i, j] = x[i, j] where j <= i;
        y
    }

    // A test of the row alone (once per row) and one of the value (per
    // element), next to the bounds.
    pub fn mixed(x: [f64; N, W], s: i64) -> [f64; N, W] {
        let y[i, j in 0..W] = if i > 0 && jj >= 0 && jj < W && x[i, jj] > 0.5 { x[i, jj] } else { 0.0 } where jj = j + s;
        y
    }

    // A binding evaluated at every point, before the guard: its checked
    // read fails where the guard would not hold.
    pub fn bound_first(x: [f64; N, W], s: i64) -> [f64; N, W] {
        let y[i, j in 0..W] = v where v = x[i, j + s], j + s < W;
        y
    }

    // A test that may fail ahead of the bounds: it runs at every point.
    pub fn test_first(x: [f64; N, W], s: i64) -> [f64; N, W] {
        let y[i, j in 0..W] = if x[i, j + s] > 2.0 && j + s < W { x[i, j] } else { 0.0 };
        y
    }

    // A strided index (a stride-2 convolution's padding), with every
    // comparison and the stride on either side of the product.
    pub fn strided(x: [f64; N, W], s: i64, m: i64) -> [f64; N, ?] {
        let y[i, j in 0..m] = if jj >= 0 && jj < W { x[i, jj] } else { 0.0 } where jj = 2 * j + s - 1;
        y
    }

    pub fn strided_band(x: [f64; N, W], a: i64, b: i64) -> [f64; N, W] {
        let y[i, j] = x[i, j] where 3 * j > a, b >= j * 3 - j, a < 5 * j + 1 + j;
        y
    }

    // The shifted sum of a transposed convolution over unpadded columns:
    // guards as where entries, and as an `if` around the term.
    pub fn col2im(g: [f64; C, KH, KW, P, Q]) -> [f64; C, P + KH - 1, Q + KW - 1] {
        let d[c, y in 0..P + KH - 1, x in 0..Q + KW - 1] =
            sum[r, s](g[c, r, s, y - r, x - s] where 0 <= y - r, y - r < P, 0 <= x - s, x - s < Q);
        d
    }

    pub fn col2im_if(g: [f64; C, KH, KW, P, Q]) -> [f64; C, P + KH - 1, Q + KW - 1] {
        let d[c, y in 0..P + KH - 1, x in 0..Q + KW - 1] =
            sum[r, s](if y - r >= 0 && y - r < P && x - s >= 0 && x - s < Q { g[c, r, s, y - r, x - s] } else { 0.0 });
        d
    }

    // A window at a run-time offset (ranges not known exact at compile
    // time), plus a term outside the sum.
    pub fn window_sum(x: [f64; N, W], s: i64) -> [f64; N, W] {
        let y[i, j in 0..W] = sum[r in 0..3](x[i, jj] * 2.0 where jj = j + r + s, jj >= 0, jj < W) + 0.5;
        y
    }

    // A test of the value next to the bound: it stays per element.
    pub fn window_positive(x: [f64; N, W]) -> [f64; N, W] {
        let y[i, j in 0..W] = sum[r in 0..4](if x[i, j - r] > 0.5 { x[i, j - r] } else { 0.0 } where j - r >= 0);
        y
    }

    // Integers, and an axis that starts above zero.
    pub fn ints(x: [i64; N, W]) -> [i64; N, W] {
        let y[i, j in 2..W] = if j - 3 >= 0 { x[i, j - 3] * 10 } else { 0 };
        y
    }
}

fn data(n: usize, w: usize, seed: u64) -> Array2<f64> {
    Array2::from_shape_fn((n, w), |(i, j)| (((i * 31 + j * 17 + seed as usize * 7) % 23) as f64) / 23.0)
}

#[test]
fn padding_by_a_run_time_offset() {
    let x = data(3, 7, 1);
    for s in [-20, -6, -1, 0, 1, 2, 3, 5, 8, 30, i64::MAX, i64::MAX - 1, i64::MIN, i64::MIN + 5] {
        let got = shifted(&x, s).unwrap();
        let want = Array2::from_shape_fn((3, 7), |(i, j)| {
            // The language's integer arithmetic wraps.
            let jj = (j as i64).wrapping_add(s).wrapping_sub(2);
            if (0..7).contains(&jj) {
                x[[i, jj as usize]]
            } else {
                0.0
            }
        });
        assert_eq!(got, want, "s = {s}");
    }
}

#[test]
fn strided_padding_by_a_run_time_offset() {
    let x = data(2, 9, 4);
    for s in [-30, -9, -4, -3, -2, -1, 0, 1, 2, 3, 4, 9, 17, 40, i64::MAX, i64::MAX - 3, i64::MIN, i64::MIN + 7] {
        for m in [0, 1, 4, 5, 6, 11] {
            let got = strided(&x, s, m).unwrap();
            let want = Array2::from_shape_fn((2, m as usize), |(i, j)| {
                let jj = 2i64.wrapping_mul(j as i64).wrapping_add(s).wrapping_sub(1);
                if (0..9).contains(&jj) {
                    x[[i, jj as usize]]
                } else {
                    0.0
                }
            });
            assert_eq!(got, want, "s = {s}, m = {m}");
        }
    }
}

#[test]
fn strided_bounds_on_either_side() {
    let x = data(2, 10, 5);
    for a in [-20, -7, -1, 0, 1, 5, 6, 7, 12, 13, 40, 59, 60, 61, 70] {
        for b in [-9, -1, 0, 1, 2, 3, 7, 8, 9, 17, 18, 19, 40] {
            let got = strided_band(&x, a, b).unwrap();
            let want = Array2::from_shape_fn((2, 10), |(i, j)| {
                let j = j as i64;
                if 3 * j > a && b >= 2 * j && a < 6 * j + 1 {
                    x[[i, j as usize]] * 1.0
                } else {
                    0.0
                }
            });
            assert_eq!(got, want, "a = {a}, b = {b}");
        }
    }
}

#[test]
fn bounds_on_either_side_strict_or_not() {
    let x = data(2, 9, 2);
    for (a, b) in [(-3, 20), (2, 6), (5, 5), (6, 5), (-1, 0), (8, 100), (i64::MIN, i64::MAX)] {
        let got = band(&x, a, b).unwrap();
        let want =
            Array2::from_shape_fn((2, 9), |(i, j)| if (j as i64) > a && b >= j as i64 { x[[i, j]] * 2.0 } else { 0.0 });
        assert_eq!(got, want, "band a = {a}, b = {b}");
        if a == i64::MIN || b == i64::MAX {
            continue;
        }
        let got = band2(&x, a, b).unwrap();
        let want = Array2::from_shape_fn((2, 9), |(i, j)| {
            let j = j as i64;
            if a < j + 1 && j - 1 <= b {
                x[[i, j as usize]] + 1.0
            } else {
                0.0
            }
        });
        assert_eq!(got, want, "band2 a = {a}, b = {b}");
    }
}

#[test]
fn a_triangle_bounded_by_the_row() {
    for n in [1, 2, 5, 16] {
        let x = data(n, n, 3);
        let want = Array2::from_shape_fn((n, n), |(i, j)| if j <= i { x[[i, j]] } else { 0.0 });
        assert_eq!(lower(&x).unwrap(), want);
    }
}

#[test]
fn row_tests_and_value_tests_next_to_the_bounds() {
    let x = data(4, 11, 4);
    for s in [-12, -3, 0, 2, 11] {
        let want = Array2::from_shape_fn((4, 11), |(i, j)| {
            let jj = j as i64 + s;
            if i > 0 && (0..11).contains(&jj) && x[[i, jj as usize]] > 0.5 {
                x[[i, jj as usize]]
            } else {
                0.0
            }
        });
        assert_eq!(mixed(&x, s).unwrap(), want, "s = {s}");
    }
}

#[test]
fn integers_on_an_axis_from_two() {
    for w in [2, 3, 4, 9] {
        let x = Array2::from_shape_fn((2, w), |(i, j)| (i * 100 + j) as i64);
        let got = ints(&x).unwrap();
        // Points outside the definition's range (j < 2) are 0.
        let want = Array2::from_shape_fn((2, w), |(i, j)| {
            let j = j as i64;
            if j >= 2 && j - 3 >= 0 {
                x[[i, (j - 3) as usize]] * 10
            } else {
                0
            }
        });
        assert_eq!(got, want, "w = {w}");
    }
}

#[test]
fn a_binding_before_the_guard_still_fails_outside_it() {
    let x = data(2, 5, 5);
    // s = 0 reads in bounds everywhere; s = 1 reads x[i, 5] at j = 4.
    assert_eq!(bound_first(&x, 0).unwrap(), x);
    assert!(bound_first(&x, 1).is_err());
    assert!(bound_first(&x, -1).is_err());
}

#[test]
fn a_test_ahead_of_the_bounds_still_fails_outside_them() {
    let x = data(2, 5, 6);
    // Every value is below 2, so the bound is never reached: the read
    // runs at every point and fails where it leaves the row.
    assert_eq!(test_first(&x, 0).unwrap(), Array2::zeros((2, 5)));
    assert!(test_first(&x, 2).is_err());
}

fn data5(dims: [usize; 5]) -> einlang::ndarray::Array5<f64> {
    einlang::ndarray::Array5::from_shape_fn(dims, |(a, b, c, d, e)| {
        (((a * 13 + b * 7 + c * 5 + d * 3 + e * 11) % 19) as f64) / 19.0 - 0.4
    })
}

#[test]
fn shifted_sums_over_unpadded_columns() {
    // Kernels smaller than, equal to and larger than the image.
    for (c, kh, kw, p, q) in [(2, 3, 3, 4, 5), (1, 1, 2, 3, 1), (2, 4, 3, 2, 2), (1, 3, 5, 1, 3)] {
        let g = data5([c, kh, kw, p, q]);
        let (h, w) = (p + kh - 1, q + kw - 1);
        // Scatter each term to where it lands.
        let mut want = einlang::ndarray::Array3::<f64>::zeros((c, h, w));
        for ci in 0..c {
            for r in 0..kh {
                for s in 0..kw {
                    for y in 0..p {
                        for x in 0..q {
                            want[[ci, y + r, x + s]] += g[[ci, r, s, y, x]];
                        }
                    }
                }
            }
        }
        for (form, got) in [("where", col2im(&g).unwrap()), ("if", col2im_if(&g).unwrap())] {
            assert_eq!(got.dim(), want.dim());
            for (a, b) in got.iter().zip(want.iter()) {
                assert!((a - b).abs() < 1e-12, "{form} {:?}: {got} vs {want}", (c, kh, kw, p, q));
            }
        }
    }
}

#[test]
fn a_sum_over_a_window_at_a_run_time_offset() {
    let x = data(3, 6, 2);
    for s in [-10, -4, -3, -2, -1, 0, 1, 3, 5, 6, 20, i64::MAX, i64::MAX - 1, i64::MIN, i64::MIN + 2] {
        let got = window_sum(&x, s).unwrap();
        let want = Array2::from_shape_fn((3, 6), |(i, j)| {
            let mut acc = 0.0;
            for r in 0..3i64 {
                let jj = (j as i64).wrapping_add(r).wrapping_add(s);
                if (0..6).contains(&jj) {
                    acc += x[[i, jj as usize]] * 2.0;
                }
            }
            acc + 0.5
        });
        assert_eq!(got, want, "s = {s}");
    }
}

#[test]
fn a_value_test_next_to_a_bound_in_a_sum() {
    let x = data(4, 7, 3);
    let got = window_positive(&x).unwrap();
    let want = Array2::from_shape_fn((4, 7), |(i, j)| {
        (0..4).filter(|&r| r <= j).map(|r| x[[i, j - r]]).filter(|&v| v > 0.5).sum::<f64>()
    });
    for (a, b) in got.iter().zip(want.iter()) {
        assert!((a - b).abs() < 1e-12, "{got} vs {want}");
    }
}
