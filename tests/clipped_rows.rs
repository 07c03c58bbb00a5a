//! Definitions whose value is `if guard { v } else { w }` with a guard that
//! bounds the row's index run as three stretches per row (`w`, `v` without
//! tests, `w`): here against naive loops over every position, on grids of
//! 0 to 13 rows and columns, with an `else` that copies, one that computes,
//! one that gathers (its error where the per-element loop meets it, and
//! none where the guard holds), in `f64`, `f32` and `i64`; and the same for
//! a recurrence's rows (heat over time, the border kept).

use einlang::einlang;
use einlang::ndarray::{Array1, Array2};
use einlang::Error;

einlang! {
    pub fn heat(u: [f64; N, M], r: f64) -> [f64; N, M] {
        let v[i, j] = if i >= 1 && i + 1 < N && j >= 1 && j + 1 < M {
            u[i, j] + r * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1] - 4.0 * u[i, j])
        } else {
            u[i, j]
        };
        v
    }

    pub fn border(u: [f32; N, M]) -> [f32; N, M] {
        let v[i, j] = if j >= 2 && M - j > 1 && i + 1 < N { u[i, j - 2] * u[i, j + 1] } else { 2.0 * u[i, j] + 1.0 };
        v
    }

    pub fn gathered(u: [f64; N], idx: [i64; N]) -> [f64; N] {
        let v[j] = if j >= 1 && j + 1 < N { u[j - 1] + u[j + 1] } else { u[idx[j]] };
        v
    }

    pub fn heat_steps(u0: [f64; N, M], r: f64, c: i64, steps: [i64; T]) -> [f64; N, M] {
        let h[0, i, j] = u0[i, j];
        let h[t in 1..T, i, j] = if i >= 1 && i + 1 < N && j >= c && j + c < M {
            h[t - 1, i, j] + r * (h[t - 1, i - 1, j] + h[t - 1, i + 1, j] + h[t - 1, i, j - 1] + h[t - 1, i, j + 1]
                - 4.0 * h[t - 1, i, j])
        } else {
            h[t - 1, i, j] * 0.5
        };
        h[T - 1]
    }

    pub fn counts(u: [i64; N, M]) -> [i64; N, M] {
        let v[i, j] = if j + 3 <= M && i > 0 { u[i, j + 2] - u[i - 1, j] } else { -u[i, j] };
        v
    }
}

fn grid(n: usize, m: usize, seed: u64) -> Array2<f64> {
    let mut s = seed;
    Array2::from_shape_fn((n, m), |_| {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    })
}

const SIZES: [usize; 7] = [0, 1, 2, 3, 4, 7, 13];

#[test]
fn a_stencil_with_its_border_copied() {
    for n in SIZES {
        for m in SIZES {
            let u = grid(n, m, (n * 31 + m) as u64);
            let got = heat(&u, 0.2).unwrap();
            let want = Array2::from_shape_fn((n, m), |(i, j)| {
                if i >= 1 && i + 1 < n && j >= 1 && j + 1 < m {
                    u[[i, j]] + 0.2 * (u[[i - 1, j]] + u[[i + 1, j]] + u[[i, j - 1]] + u[[i, j + 1]] - 4.0 * u[[i, j]])
                } else {
                    u[[i, j]]
                }
            });
            let same = got.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same && got.dim() == (n, m), "{n}x{m}: {got} vs {want}");
        }
    }
}

#[test]
fn a_recurrence_with_its_border_computed() {
    for n in SIZES {
        for m in SIZES {
            let u0 = grid(n, m, (n * 5 + m) as u64);
            for (t, c) in [(1usize, 1i64), (2, 1), (5, 1), (3, 2), (4, 0), (3, -1)] {
                let got = heat_steps(&u0, 0.15, c, &Array1::<i64>::zeros(t));
                // Columns `c - 1` and `M - c` are read where the guard holds:
                // a `c` below 1 reads outside the grid there.
                if c < 1 && t > 1 && n >= 3 && m >= 1 {
                    assert!(matches!(got, Err(Error::Index { .. })), "{n}x{m}, c = {c}: {got:?}");
                    continue;
                }
                let mut want = u0.clone();
                for _ in 1..t {
                    let prev = want.clone();
                    want = Array2::from_shape_fn((n, m), |(i, j)| {
                        let (jc, mc) = (j as i64, m as i64);
                        if i >= 1 && i + 1 < n && jc >= c && jc + c < mc {
                            prev[[i, j]]
                                + 0.15
                                    * (prev[[i - 1, j]] + prev[[i + 1, j]] + prev[[i, j - 1]] + prev[[i, j + 1]]
                                        - 4.0 * prev[[i, j]])
                        } else {
                            prev[[i, j]] * 0.5
                        }
                    });
                }
                let got = got.unwrap();
                let same = got.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits());
                assert!(same && got.dim() == (n, m), "{n}x{m}, {t} steps, c = {c}: {got} vs {want}");
            }
        }
    }
}

#[test]
fn a_computed_else_value() {
    for n in SIZES {
        for m in SIZES {
            let u = grid(n, m, (n * 17 + m) as u64).mapv(|x| x as f32);
            let got = border(&u).unwrap();
            let want = Array2::from_shape_fn((n, m), |(i, j)| {
                if j >= 2 && m as i64 - j as i64 > 1 && i + 1 < n {
                    u[[i, j - 2]] * u[[i, j + 1]]
                } else {
                    2.0 * u[[i, j]] + 1.0
                }
            });
            let same = got.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same, "{n}x{m}: {got} vs {want}");
        }
    }
}

#[test]
fn integers_exact() {
    for n in SIZES {
        for m in SIZES {
            let u = grid(n, m, (n * 7 + m) as u64).mapv(|x| (x * 1000.0) as i64);
            let got = counts(&u).unwrap();
            let want = Array2::from_shape_fn((n, m), |(i, j)| {
                if j + 3 <= m && i > 0 {
                    u[[i, j + 2]] - u[[i - 1, j]]
                } else {
                    -u[[i, j]]
                }
            });
            assert_eq!(got, want, "{n}x{m}");
        }
    }
}

#[test]
fn a_gather_outside_the_guard_fails_only_where_it_runs() {
    for n in SIZES {
        let u = Array1::from_shape_fn(n, |k| k as f64 * 1.5 - 2.0);
        // Every index in range: the border gathers, the interior adds.
        let idx = Array1::from_shape_fn(n, |k| ((k * 5 + 3) % n.max(1)) as i64);
        let got = gathered(&u, &idx).unwrap();
        let want =
            Array1::from_shape_fn(n, |j| if j >= 1 && j + 1 < n { u[j - 1] + u[j + 1] } else { u[idx[j] as usize] });
        assert_eq!(got, want, "{n}");
        if n >= 3 {
            // A bad index where the guard holds is never read.
            let mut inner = idx.clone();
            inner[1] = 99;
            assert_eq!(gathered(&u, &inner).unwrap(), want, "{n}");
            // One on the border is.
            for at in [0, n - 1] {
                let mut bad = idx.clone();
                bad[at] = -1;
                assert!(matches!(gathered(&u, &bad), Err(Error::Index { .. })), "{n} {at}");
            }
        }
    }
}
