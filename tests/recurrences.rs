//! Recurrences against naive Rust loops, and the compiler's decisions for
//! them (order, parallel axes, storage) read from `einlang-core`'s facts.
//!
//! Each program is compiled twice: by `einlang!` (its functions are called
//! here) and, from the same tokens, by `einlang_core::compile_str`, whose
//! `Compiled::recurrence` reports what was decided.

#[macro_use]
mod common;

use approx::assert_relative_eq;
use common::*;
use einlang::ndarray::{array, Array1, Array2, Array3};
use einlang_core::analysis::recur::{FullReason, Storage};

/// Defines module `$m` with the program's functions and its source text.
macro_rules! program {
    ($m:ident { $($src:tt)* }) => {
        mod $m {
            #![allow(non_snake_case)]
            einlang_with_source! { $($src)* }
        }
    };
}

// ---------------------------------------------------------------------------
// Fibonacci, prefix sums
// ---------------------------------------------------------------------------

program!(fib {
    pub fn fib(n: i64) -> i64 {
        let f[0] = 0i64;
        let f[1] = 1;
        let f[i in 2..n] = f[i - 1] + f[i - 2];
        f[n - 1]
    }
    pub fn fib_all(n: i64) -> [i64; ?] {
        let f[0] = 0i64;
        let f[1] = 1;
        let f[i in 2..n] = f[i - 1] + f[i - 2];
        f
    }
});

fn fib_ref(n: usize) -> Vec<i64> {
    let mut f = vec![0i64, 1];
    while f.len() < n {
        let k = f.len();
        f.push(f[k - 1] + f[k - 2]);
    }
    f
}

#[test]
fn fibonacci_in_i64() {
    let want = fib_ref(93);
    for n in [2i64, 3, 10, 50, 93] {
        assert_eq!(fib::fib(n).unwrap(), want[n as usize - 1], "fib({n})");
    }
    // F(92) is the largest Fibonacci number that fits an i64.
    assert_eq!(fib::fib(93).unwrap(), 7_540_113_804_746_346_429);
    assert_eq!(fib::fib_all(40).unwrap().to_vec(), want[..40].to_vec());
    // The extent is at least the boundary clauses' two points.
    assert_eq!(fib::fib_all(1).unwrap().to_vec(), vec![0, 1]);
}

#[test]
fn fibonacci_keeps_three_steps_when_only_the_last_is_read() {
    let f = recurrence_facts(fib::SRC, "fib", "f");
    assert_eq!(f.sequential, vec![0]);
    assert_eq!(f.lookback, Some(2));
    assert_eq!(f.tail, Some(1));
    assert_eq!(f.storage, window(3));
    assert_eq!(recurrence_facts(fib::SRC, "fib_all", "f").storage, Storage::Full(FullReason::WholeTensor));
}

program!(prefix {
    pub fn suffix3(x: [f64; N]) -> [f64; 3] {
        let s[0] = x[0];
        let s[i in 1..N] = s[i - 1] + x[i];
        let last[k in 0..3] = s[N - 3 + k];
        last
    }
});

#[test]
fn prefix_sums_observed_as_a_suffix() {
    let x = rand1_f64(1000, 3);
    let mut acc = 0.0;
    let sums: Vec<f64> = x
        .iter()
        .map(|v| {
            acc += v;
            acc
        })
        .collect();
    let got = prefix::suffix3(&x).unwrap();
    for k in 0..3 {
        assert_relative_eq!(got[k], sums[997 + k], epsilon = 1e-9);
    }
    let f = recurrence_facts(prefix::SRC, "suffix3", "s");
    assert_eq!((f.lookback, f.tail), (Some(1), Some(3)));
    assert_eq!(f.storage, window(3));
}

// ---------------------------------------------------------------------------
// An RNN with a tanh cell
// ---------------------------------------------------------------------------

program!(rnn {
    use std::math::tanh;
    pub fn rnn(h0: [f32; H], w: [f32; H, H], u: [f32; H, I], x: [f32; T, I]) -> [f32; H] {
        let h[0, j] = h0[j];
        let h[t in 1..T, j] = tanh(sum[k](w[j, k] * h[t - 1, k]) + sum[i](u[j, i] * x[t, i]));
        let last[j] = h[T - 1, j];
        last
    }
    pub fn rnn_states(h0: [f32; H], w: [f32; H, H], u: [f32; H, I], x: [f32; T, I]) -> [f32; T, H] {
        let h[0, j] = h0[j];
        let h[t in 1..T, j] = tanh(sum[k](w[j, k] * h[t - 1, k]) + sum[i](u[j, i] * x[t, i]));
        h
    }
});

fn rnn_ref(h0: &Array1<f32>, w: &Array2<f32>, u: &Array2<f32>, x: &Array2<f32>) -> Array2<f32> {
    let (t_len, hn) = (x.nrows(), h0.len());
    let mut h = Array2::<f32>::zeros((t_len, hn));
    h.row_mut(0).assign(h0);
    for t in 1..t_len {
        for j in 0..hn {
            let mut a = 0.0f64;
            for k in 0..hn {
                a += w[[j, k]] as f64 * h[[t - 1, k]] as f64;
            }
            for i in 0..x.ncols() {
                a += u[[j, i]] as f64 * x[[t, i]] as f64;
            }
            h[[t, j]] = (a as f32).tanh();
        }
    }
    h
}

#[test]
fn rnn_with_a_tanh_cell() {
    let (hn, inp, t_len) = (16, 5, 40);
    let h0 = rand1(hn, 1);
    let w = rand2(hn, hn, 2).mapv(|v| v * 0.3);
    let u = rand2(hn, inp, 3);
    let x = rand2(t_len, inp, 4);
    let want = rnn_ref(&h0, &w, &u, &x);
    assert_close(&rnn::rnn_states(&h0, &w, &u, &x).unwrap(), &want, 1e-4);
    assert_close(&rnn::rnn(&h0, &w, &u, &x).unwrap(), &want.row(t_len - 1).to_owned(), 1e-4);
    let f = recurrence_facts(rnn::SRC, "rnn", "h");
    assert_eq!((f.sequential.clone(), f.parallel.clone()), (vec![0], vec![1]));
    assert_eq!(f.storage, window(2));
    assert_eq!(recurrence_facts(rnn::SRC, "rnn_states", "h").storage, Storage::Full(FullReason::WholeTensor));
}

program!(batched_rnn {
    use std::math::tanh;

    /// Two boundary steps, then a cell whose input projection reads the
    /// input two steps back: `opt::invariant` computes that projection for
    /// all steps before the recurrence (steps 2.., table index t - 2).
    pub fn states(h0: [f32; B, H], w: [f32; H, H], u: [f32; I, H], x: [f32; T, B, I]) -> [f32; T, B, H] {
        let h[0, n, j] = h0[n, j];
        let h[1, n, j] = 0.5 * h0[n, j];
        let h[t in 2..T, n, j] =
            tanh(sum[k](h[t - 1, n, k] * w[k, j]) + sum[i](x[t - 2, n, i] * u[i, j]) + 0.25 * h[t - 2, n, j]);
        h
    }
});

fn batched_rnn_ref(h0: &Array2<f32>, w: &Array2<f32>, u: &Array2<f32>, x: &Array3<f32>) -> Array3<f32> {
    let (t_len, b, hn) = (x.shape()[0], h0.nrows(), h0.ncols());
    let mut h = Array3::<f32>::zeros((t_len.max(2), b, hn));
    for n in 0..b {
        for j in 0..hn {
            h[[0, n, j]] = h0[[n, j]];
            h[[1, n, j]] = 0.5 * h0[[n, j]];
        }
    }
    for t in 2..t_len {
        for n in 0..b {
            for j in 0..hn {
                let mut a = 0.25 * h[[t - 2, n, j]] as f64;
                for k in 0..hn {
                    a += h[[t - 1, n, k]] as f64 * w[[k, j]] as f64;
                }
                for i in 0..x.shape()[2] {
                    a += x[[t - 2, n, i]] as f64 * u[[i, j]] as f64;
                }
                h[[t, n, j]] = (a as f32).tanh();
            }
        }
    }
    h
}

#[test]
fn step_invariant_projections_leave_batched_rnns_unchanged() {
    let (b, hn, inp) = (3, 6, 4);
    let h0 = rand2(b, hn, 11);
    let w = rand2(hn, hn, 12).mapv(|v| v * 0.3);
    let u = rand2(inp, hn, 13);
    // Two steps: the recurrent clause covers none, its table is empty.
    for t_len in [2, 3, 9] {
        let x = Array3::from_shape_vec((t_len, b, inp), rand1(t_len * b * inp, 14).to_vec()).unwrap();
        let got = batched_rnn::states(&h0, &w, &u, &x).unwrap();
        let want = batched_rnn_ref(&h0, &w, &u, &x);
        assert_eq!(got.shape(), want.shape());
        for (g, w) in got.iter().zip(want.iter()) {
            assert_relative_eq!(*g, *w, epsilon = 1e-5, max_relative = 1e-4);
        }
    }
}

// ---------------------------------------------------------------------------
// Edit distance
// ---------------------------------------------------------------------------

mod edit {
    einlang::include_ein!("examples/ein/edit_distance.ein");
    pub const SRC: &str = include_str!("../examples/ein/edit_distance.ein");
}

fn codes(s: &str) -> Array1<i32> {
    s.bytes().map(|b| b as i32).collect()
}

fn edit_ref(a: &[i32], b: &[i32]) -> i32 {
    let mut prev: Vec<i32> = (0..=b.len() as i32).collect();
    for i in 1..=a.len() {
        let mut cur = vec![i as i32; b.len() + 1];
        for j in 1..=b.len() {
            let sub = prev[j - 1] + i32::from(a[i - 1] != b[j - 1]);
            cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(sub);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[test]
fn edit_distance_known_answers() {
    assert_eq!(edit::distance(&codes("kitten"), &codes("sitting")).unwrap(), 3);
    assert_eq!(edit::distance(&codes("flaw"), &codes("lawn")).unwrap(), 2);
    assert_eq!(edit::distance(&codes(""), &codes("abc")).unwrap(), 3);
    assert_eq!(edit::distance(&codes("same"), &codes("same")).unwrap(), 0);
}

#[test]
fn edit_distance_of_random_strings() {
    let mut rng = Rng::new(11);
    for _ in 0..20 {
        let (n, m) = (rng.int(0, 40) as usize, rng.int(0, 40) as usize);
        let a: Array1<i32> = (0..n).map(|_| rng.int(0, 4)).collect();
        let b: Array1<i32> = (0..m).map(|_| rng.int(0, 4)).collect();
        let want = edit_ref(a.as_slice().unwrap(), b.as_slice().unwrap());
        assert_eq!(edit::distance(&a, &b).unwrap(), want, "{a} vs {b}");
        assert_eq!(edit::table(&a, &b).unwrap()[[n, m]], want);
    }
    // Long enough for the blocked wavefront when several threads exist.
    let a: Array1<i32> = (0..700).map(|_| rng.int(0, 4)).collect();
    let b: Array1<i32> = (0..650).map(|_| rng.int(0, 4)).collect();
    let want = edit_ref(a.as_slice().unwrap(), b.as_slice().unwrap());
    assert_eq!(edit::table(&a, &b).unwrap()[[700, 650]], want);
    assert_eq!(edit::distance(&a, &b).unwrap(), want);
}

program!(lcs {
    use std::math::max;
    /// Longest common subsequence lengths: integer maxima, the left
    /// neighbour passed along the row (read before the other terms).
    pub fn lcs(a: [i64; N], b: [i64; M]) -> [i64; N + 1, M + 1] {
        let c[0, j in 0..M + 1] = 0;
        let c[i in 1..N + 1, 0] = 0;
        let c[i in 1..N + 1, j in 1..M + 1] =
            if a[i - 1] == b[j - 1] { c[i - 1, j - 1] + 1 } else { max(c[i, j - 1], c[i - 1, j]) };
        c
    }
});

/// Every cell of a table whose rows pass each point's value to the next
/// (kept in a register, from the store at the start of each run the
/// wavefront hands over), against a hand loop: one thread (rows in order)
/// and three (tiles of a banded wavefront, runs starting mid-row).
#[test]
fn a_row_passing_its_values_along_matches_a_hand_loop() {
    let mut rng = Rng::new(17);
    for (n, m) in [(0, 3), (4, 0), (7, 9), (300, 700), (513, 257)] {
        let a: Array1<i64> = (0..n).map(|_| i64::from(rng.int(0, 3))).collect();
        let b: Array1<i64> = (0..m).map(|_| i64::from(rng.int(0, 3))).collect();
        let want = lcs_table_ref(a.as_slice().unwrap(), b.as_slice().unwrap());
        for threads in [1, 3] {
            common::split_small_loops();
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            let got = pool.install(|| lcs::lcs(&a, &b)).unwrap();
            assert_eq!(got, want, "{n} x {m}, {threads} threads");
        }
    }
}

#[test]
fn edit_distance_runs_rows_in_order_and_keeps_two() {
    let f = recurrence_facts(edit::SRC, "distance", "d");
    assert_eq!(f.sequential, vec![0, 1]);
    assert!(f.parallel.is_empty());
    assert!(f.wavefront);
    assert_eq!(f.storage, window(2));
    assert_eq!(recurrence_facts(edit::SRC, "table", "d").storage, Storage::Full(FullReason::WholeTensor));
}

program!(gapped {
    /// A two-axis recurrence whose rows from 3 on leave column 1 unwritten
    /// (so it is zero there). Only the last row is read, so a window is
    /// kept, and its slots must be cleared when the rows switch clauses,
    /// also when the rows run as a banded wavefront.
    pub fn gapped(a: [f64; N], b: [f64; M]) -> [f64; M + 1] {
        let d[0, j in 0..M + 1] = 1.0;
        let d[i in 1..N + 1, 0] = 1.0;
        let d[i in 1..3, j in 1..M + 1] =
            0.3 * d[i - 1, j] + 0.3 * d[i, j - 1] + 0.3 * d[i - 1, j - 1] + a[i - 1] * b[j - 1];
        let d[i in 3..N + 1, j in 2..M + 1] =
            0.3 * d[i - 1, j] + 0.3 * d[i, j - 1] + 0.3 * d[i - 1, j - 1] + a[i - 1] * b[j - 1];
        let last[j] = d[N, j];
        last
    }
});

#[test]
fn a_windowed_two_axis_recurrence_with_a_clause_switch() {
    fn reference(a: &[f64], b: &[f64]) -> Array1<f64> {
        let (n, m) = (a.len(), b.len());
        let mut d = Array2::<f64>::zeros((n + 1, m + 1));
        d.row_mut(0).fill(1.0);
        for i in 1..=n {
            d[[i, 0]] = 1.0;
            let from = if i < 3 { 1 } else { 2 };
            for j in from..=m {
                d[[i, j]] = 0.3 * d[[i - 1, j]] + 0.3 * d[[i, j - 1]] + 0.3 * d[[i - 1, j - 1]] + a[i - 1] * b[j - 1];
            }
        }
        d.row(n).to_owned()
    }
    let mut rng = Rng::new(5);
    // Small (rows one by one), and large enough for the banded wavefront
    // when several threads exist: the last row reuses the first row's slot
    // (512 is the wavefront's window), or crosses more bands.
    for (n, m) in [(5, 4), (9, 33), (512, 300), (600, 280), (300, 700)] {
        let a: Array1<f64> = (0..n).map(|_| rng.int(0, 4) as f64 * 0.1).collect();
        let b: Array1<f64> = (0..m).map(|_| rng.int(0, 4) as f64 * 0.1).collect();
        let want = reference(a.as_slice().unwrap(), b.as_slice().unwrap());
        assert_close(&gapped::gapped(&a, &b).unwrap(), &want, 1e-12);
    }
    let f = recurrence_facts(gapped::SRC, "gapped", "d");
    assert!(f.wavefront);
    assert!(matches!(f.storage, Storage::Window { axis: 0, .. }), "{:?}", f.storage);
}

// ---------------------------------------------------------------------------
// Viterbi forward scores (max-plus)
// ---------------------------------------------------------------------------

program!(viterbi {
    pub fn scores(init: [f64; S], trans: [f64; S, S], emit: [f64; S, O], obs: [i64; T]) -> [f64; T, S] {
        let v[0, s] = init[s] + emit[s, obs[0]];
        let v[t in 1..T, s] = max[p](v[t - 1, p] + trans[p, s]) + emit[s, obs[t]];
        v
    }
});

#[test]
fn viterbi_forward_scores() {
    let (s_n, o_n, t_n) = (4, 3, 12);
    let init = rand1_f64(s_n, 5);
    let trans = rand2_f64(s_n, s_n, 6);
    let emit = rand2_f64(s_n, o_n, 7);
    let mut rng = Rng::new(8);
    let obs: Array1<i64> = (0..t_n).map(|_| rng.int(0, o_n as i32 - 1) as i64).collect();
    let mut want = Array2::<f64>::zeros((t_n, s_n));
    for s in 0..s_n {
        want[[0, s]] = init[s] + emit[[s, obs[0] as usize]];
    }
    for t in 1..t_n {
        for s in 0..s_n {
            let best = (0..s_n).map(|p| want[[t - 1, p]] + trans[[p, s]]).fold(f64::NEG_INFINITY, f64::max);
            want[[t, s]] = best + emit[[s, obs[t] as usize]];
        }
    }
    assert_close(&viterbi::scores(&init, &trans, &emit, &obs).unwrap(), &want, 1e-12);
    // An observation out of range is an error, not a panic.
    let bad = array![0i64, 5];
    assert!(viterbi::scores(&init, &trans, &emit, &bad).is_err());
}

// ---------------------------------------------------------------------------
// Heat equations with boundary clauses
// ---------------------------------------------------------------------------

program!(heat {
    pub fn heat1d(u0: [f64; N], r: f64, steps: i64) -> [f64; N] {
        let u[0, i] = u0[i];
        let u[t in 1..steps, 0] = 0.0;
        let u[t in 1..steps, i in 1..N - 1] = u[t - 1, i] + r * (u[t - 1, i - 1] - 2.0 * u[t - 1, i] + u[t - 1, i + 1]);
        let u[t in 1..steps, i in N - 1..N] = 0.0;
        let last[i] = u[steps - 1, i];
        last
    }
});

mod heat2d {
    einlang::include_ein!("examples/ein/heat.ein");
    pub const SRC: &str = include_str!("../examples/ein/heat.ein");
}

#[test]
fn heat_equation_1d() {
    let n = 50;
    let u0: Array1<f64> = (0..n).map(|i| if (20..30).contains(&i) { 1.0 } else { 0.0 }).collect();
    let (r, steps) = (0.25, 200);
    let mut u = u0.clone();
    for _ in 1..steps {
        let mut next = Array1::<f64>::zeros(n);
        for i in 1..n - 1 {
            next[i] = u[i] + r * (u[i - 1] - 2.0 * u[i] + u[i + 1]);
        }
        u = next;
    }
    assert_close(&heat::heat1d(&u0, r, steps as i64).unwrap(), &u, 1e-12);
    let f = recurrence_facts(heat::SRC, "heat1d", "u");
    assert_eq!((f.sequential.clone(), f.parallel.clone()), (vec![0], vec![1]));
    assert_eq!(f.storage, window(2));
}

#[test]
fn heat_equation_2d() {
    let (n, m) = (20, 30);
    let u0 = rand2_f64(n, m, 9);
    let (r, steps) = (0.2, 60);
    let mut u = u0.clone();
    for _ in 1..steps {
        // Points outside the interior are zero after the first step: no
        // clause covers them.
        let mut next = Array2::<f64>::zeros((n, m));
        for i in 1..n - 1 {
            for j in 1..m - 1 {
                next[[i, j]] =
                    u[[i, j]] + r * (u[[i - 1, j]] + u[[i + 1, j]] + u[[i, j - 1]] + u[[i, j + 1]] - 4.0 * u[[i, j]]);
            }
        }
        u = next;
    }
    assert_close(&heat2d::heat(&u0, r, steps as i64).unwrap(), &u, 1e-12);
    let f = recurrence_facts(heat2d::SRC, "heat", "u");
    assert_eq!((f.sequential.clone(), f.parallel.clone()), (vec![0], vec![1, 2]));
    assert_eq!(f.storage, window(2));
}

program!(phases {
    /// Two phases: every point, then the interior only. After the switch
    /// no clause writes the border, so it is zero, although the window's
    /// slots held nonzero border values from the first phase.
    pub fn switch_at_2(u0: [f64; N], steps: i64) -> [f64; N] {
        let u[0, i] = u0[i];
        let u[t in 1..2, i in 0..N] = u[t - 1, i] * 0.5 + 1.0;
        let u[t in 2..steps, i in 1..N - 1] = 0.25 * (u[t - 1, i - 1] + u[t - 1, i + 1]) + u[t - 1, i];
        let last[i] = u[steps - 1, i];
        last
    }
    pub fn switch_at_4(u0: [f64; N], steps: i64) -> [f64; N] {
        let u[0, i] = u0[i];
        let u[t in 1..4, i in 0..N] = u[t - 1, i] * 0.5 + 1.0;
        let u[t in 4..steps, i in 1..N - 1] = 0.25 * (u[t - 1, i - 1] + u[t - 1, i + 1]) + u[t - 1, i];
        let last[i] = u[steps - 1, i];
        last
    }
});

#[test]
fn a_window_slot_is_cleared_when_the_clauses_of_its_step_change() {
    let n = 12;
    let u0: Array1<f64> = (0..n).map(|i| 1.0 + i as f64).collect();
    for k in [2usize, 4] {
        for steps in 5..10usize {
            let mut u = u0.clone();
            for t in 1..steps {
                let mut next = Array1::<f64>::zeros(n);
                if t < k {
                    for i in 0..n {
                        next[i] = u[i] * 0.5 + 1.0;
                    }
                } else {
                    for i in 1..n - 1 {
                        next[i] = 0.25 * (u[i - 1] + u[i + 1]) + u[i];
                    }
                }
                u = next;
            }
            let f = if k == 2 { phases::switch_at_2 } else { phases::switch_at_4 };
            assert_close(&f(&u0, steps as i64).unwrap(), &u, 1e-12);
        }
        // A window as long as the first phase (its end could be the extent).
        let f = recurrence_facts(phases::SRC, &format!("switch_at_{k}"), "u");
        assert_eq!(f.storage, window(k as u64));
    }
}

// ---------------------------------------------------------------------------
// Forward substitution, two-field state, RK4, value iteration
// ---------------------------------------------------------------------------

program!(linear {
    pub fn forward_substitution(l: [f64; N, N], b: [f64; N]) -> [f64; N] {
        let x[i] = (b[i] - sum[k in 0..i](l[i, k] * x[k])) / l[i, i];
        x
    }
});

#[test]
fn forward_substitution_with_a_bounded_reduction() {
    let n = 30;
    let mut l = rand2_f64(n, n, 10);
    for i in 0..n {
        for k in i + 1..n {
            l[[i, k]] = 0.0;
        }
        l[[i, i]] = 2.0 + l[[i, i]].abs();
    }
    let b = rand1_f64(n, 11);
    let x = linear::forward_substitution(&l, &b).unwrap();
    // L x must give back b.
    let lx = l.dot(&x);
    assert_close(&lx, &b, 1e-10);
    let f = recurrence_facts(linear::SRC, "forward_substitution", "x");
    assert_eq!(f.reads[0].offsets[0].hi, Some(-1));
    assert_eq!(f.lookback, None);
    assert_eq!(f.storage, Storage::Full(FullReason::WholeTensor));
}

program!(oscillator {
    // Symplectic Euler: the position moves first, the velocity uses the new
    // position (a same-step read of field 0 by the clause of field 1).
    pub fn orbit(x0: f64, v0: f64, dt: f64, steps: i64) -> (f64, f64) {
        let s[0, 0] = x0;
        let s[0, 1] = v0;
        let s[t in 1..steps, 0] = s[t - 1, 0] + dt * s[t - 1, 1];
        let s[t in 1..steps, 1] = s[t - 1, 1] - dt * s[t, 0];
        (s[steps - 1, 0], s[steps - 1, 1])
    }
});

#[test]
fn two_field_state_with_a_same_step_dependency() {
    let (mut x, mut v, dt) = (1.0f64, 0.0f64, 0.01);
    for _ in 1..1000 {
        x += dt * v;
        v -= dt * x;
    }
    let (gx, gv) = oscillator::orbit(1.0, 0.0, dt, 1000).unwrap();
    assert_relative_eq!(gx, x, epsilon = 1e-12);
    assert_relative_eq!(gv, v, epsilon = 1e-12);
    let f = recurrence_facts(oscillator::SRC, "orbit", "s");
    assert_eq!((f.sequential.clone(), f.fields.clone()), (vec![0], vec![1]));
    assert_eq!(f.storage, window(2));
}

program!(lorenz {
    fn deriv(c: i64, x: f64, y: f64, z: f64) -> f64 {
        if c == 0 { 10.0 * (y - x) } else { if c == 1 { x * (28.0 - z) - y } else { x * y - 8.0 / 3.0 * z } }
    }
    fn rk4(c: i64, x: f64, y: f64, z: f64, h: f64) -> f64 {
        let k1 = [deriv(0, x, y, z), deriv(1, x, y, z), deriv(2, x, y, z)];
        let a = [x + 0.5 * h * k1[0], y + 0.5 * h * k1[1], z + 0.5 * h * k1[2]];
        let k2 = [deriv(0, a[0], a[1], a[2]), deriv(1, a[0], a[1], a[2]), deriv(2, a[0], a[1], a[2])];
        let b = [x + 0.5 * h * k2[0], y + 0.5 * h * k2[1], z + 0.5 * h * k2[2]];
        let k3 = [deriv(0, b[0], b[1], b[2]), deriv(1, b[0], b[1], b[2]), deriv(2, b[0], b[1], b[2])];
        let e = [x + h * k3[0], y + h * k3[1], z + h * k3[2]];
        let k4 = [deriv(0, e[0], e[1], e[2]), deriv(1, e[0], e[1], e[2]), deriv(2, e[0], e[1], e[2])];
        let u = [x, y, z];
        u[c] + h / 6.0 * (k1[c] + 2.0 * k2[c] + 2.0 * k3[c] + k4[c])
    }
    pub fn integrate(s0: [f64; 3], h: f64, steps: i64) -> [f64; 3] {
        let s[0, c] = s0[c];
        let s[t in 1..steps, c in 0..3] = rk4(c, s[t - 1, 0], s[t - 1, 1], s[t - 1, 2], h);
        let last[c] = s[steps - 1, c];
        last
    }
});

#[test]
fn rk4_integration_of_the_lorenz_system() {
    fn d(s: [f64; 3]) -> [f64; 3] {
        [10.0 * (s[1] - s[0]), s[0] * (28.0 - s[2]) - s[1], s[0] * s[1] - 8.0 / 3.0 * s[2]]
    }
    fn add(a: [f64; 3], b: [f64; 3], k: f64) -> [f64; 3] {
        [a[0] + k * b[0], a[1] + k * b[1], a[2] + k * b[2]]
    }
    let (h, steps) = (0.001, 2000);
    let mut s = [1.0, 1.0, 1.0];
    for _ in 1..steps {
        let k1 = d(s);
        let k2 = d(add(s, k1, 0.5 * h));
        let k3 = d(add(s, k2, 0.5 * h));
        let k4 = d(add(s, k3, h));
        s = [0, 1, 2].map(|c| s[c] + h / 6.0 * (k1[c] + 2.0 * k2[c] + 2.0 * k3[c] + k4[c]));
    }
    let got = lorenz::integrate(&array![1.0, 1.0, 1.0], h, steps).unwrap();
    for c in 0..3 {
        assert_relative_eq!(got[c], s[c], epsilon = 1e-9);
    }
    assert_eq!(recurrence_facts(lorenz::SRC, "integrate", "s").storage, window(2));
}

program!(dp {
    pub fn value_iteration(r: [f64; S, A], p: [f64; A, S, S], beta: f64, iters: i64) -> [f64; S] {
        let v[0, s] = 0.0;
        let v[k in 1..iters, s] = max[a](r[s, a] + beta * sum[s2](p[a, s, s2] * v[k - 1, s2]));
        let last[s] = v[iters - 1, s];
        last
    }
});

#[test]
fn value_iteration_against_a_loop() {
    let (s_n, a_n) = (6, 3);
    let r = rand2_f64(s_n, a_n, 12);
    let mut p = Array3::<f64>::zeros((a_n, s_n, s_n));
    let mut rng = Rng::new(13);
    for a in 0..a_n {
        for s in 0..s_n {
            let row: Vec<f64> = (0..s_n).map(|_| rng.unit() + 0.01).collect();
            let total: f64 = row.iter().sum();
            for (s2, w) in row.iter().enumerate() {
                p[[a, s, s2]] = w / total;
            }
        }
    }
    let (beta, iters) = (0.9, 50);
    let mut v = vec![0.0f64; s_n];
    for _ in 1..iters {
        v = (0..s_n)
            .map(|s| {
                (0..a_n)
                    .map(|a| r[[s, a]] + beta * (0..s_n).map(|s2| p[[a, s, s2]] * v[s2]).sum::<f64>())
                    .fold(f64::NEG_INFINITY, f64::max)
            })
            .collect();
    }
    let got = dp::value_iteration(&r, &p, beta, iters).unwrap();
    assert_close(&got, &Array1::from(v), 1e-10);
}

program!(perturbed {
    /// A later boundary clause redefines one point of an earlier one (the
    /// later wins, as in the seed's lorenz96), then a periodic recurrence.
    pub fn run(n: i64) -> [f64; n, 4] {
        let x[0, i in 0..4] = 1.0;
        let x[0, 2] = 5.0;
        let x[t in 1..n, i in 0..4] = x[t - 1, i] + 0.5 * x[t - 1, (i + 1) % 4];
        x
    }
});

#[test]
fn later_boundary_clause_wins() {
    let n = 6;
    let got = perturbed::run(n as i64).unwrap();
    let mut want = Array2::<f64>::ones((n, 4));
    want[[0, 2]] = 5.0;
    for t in 1..n {
        for i in 0..4 {
            want[[t, i]] = want[[t - 1, i]] + 0.5 * want[[t - 1, (i + 1) % 4]];
        }
    }
    assert_close(&got, &want, 1e-12);
}

// ---------------------------------------------------------------------------
// Recurrences that read each other
// ---------------------------------------------------------------------------

program!(mutual {
    /// `a` reads `b` one step back, `b` reads `a` at the same step.
    pub fn coupled(x: [f64; T]) -> ([f64; T], [f64; T]) {
        let a[0] = 1.0;
        let b[0] = 0.0;
        let a[t in 1..T] = a[t - 1] * 0.5 + b[t - 1] + x[t];
        let b[t in 1..T] = a[t] - b[t - 1];
        (a, b)
    }

    /// An LSTM-like cell: the cell state `c` reads the output `h` of the
    /// step before; `h` reads `c` of its own step. Only the last output is
    /// used.
    pub fn cell(x: [f32; T, I], w: [f32; H, I], u: [f32; H, H]) -> [f32; H] {
        use std::math::tanh;
        let h[0, j] = 0.0;
        let c[0, j] = 0.0;
        let c[t in 1..T, j] = 0.5 * c[t - 1, j] + tanh(sum[i](w[j, i] * x[t, i]) + sum[k](u[j, k] * h[t - 1, k]));
        let h[t in 1..T, j] = tanh(c[t, j]);
        let last[j] = h[T - 1, j];
        last
    }

    /// Three members, semi-implicit Euler for a spring: the acceleration
    /// from the old position, then velocity, then position, each from the
    /// one just computed.
    pub fn spring(x0: f64, v0: f64, k: f64, dt: f64, n: i64) -> ([f64; n], [f64; n], [f64; n]) {
        let acc[0] = -k * x0;
        let vel[0] = v0;
        let pos[0] = x0;
        let acc[t in 1..n] = -k * pos[t - 1];
        let vel[t in 1..n] = vel[t - 1] + dt * acc[t];
        let pos[t in 1..n] = pos[t - 1] + dt * vel[t];
        (pos, vel, acc)
    }

    /// Later reads of the members: `b` only at points (they read the fused
    /// tensor), `a` also under a lambda parameter of the same name (it is
    /// copied from its field, and the parameter is the lambda's own).
    pub fn later_reads(x: [f64; T]) -> f64 {
        let a[0] = 1.0;
        let b[0] = 0.0;
        let a[t in 1..T] = a[t - 1] * 0.5 + b[t - 1] + x[t];
        let b[t in 1..T] = a[t] - b[t - 1];
        let twice = |a| a * 2.0;
        twice(a[T - 1]) + { b[T - 1] * 10.0 }
    }
});

program!(mutual_generic {
    /// A group in a generic function, instantiated at two element types.
    fn pair(x, decay) {
        let n = len(x);
        let a[0] = x[0];
        let b[0] = x[0] * decay;
        let a[t in 1..n] = b[t - 1] + x[t];
        let b[t in 1..n] = a[t] * decay;
        (a, b)
    }
    pub fn pair_f32(x: [f32; N]) -> ([f32; N], [f32; N]) { pair(x, 0.5) }
    pub fn pair_i64(x: [i64; N]) -> ([i64; N], [i64; N]) { pair(x, 2) }
});

program!(mutual_mixed {
    /// Members of different ranks: `s` [T] and `v` [T, N] (padded with an
    /// axis it writes and reads at 0). Two groups, the second reading the
    /// first, with their clauses interleaved: `p`/`q` read `s`.
    pub fn mixed(x: [f64; T, N]) -> ([f64; T], [f64; T, N], f64) {
        let s[0] = 0.0;
        let v[0, i] = x[0, i];
        let p[0] = 1.0;
        let s[t in 1..T] = sum[i](v[t - 1, i]) * 0.25;
        let q[0] = 0.0;
        let v[t in 1..T, i] = x[t, i] - s[t];
        let p[t in 1..T] = q[t - 1] + s[t];
        let q[t in 1..T] = p[t] * 0.5;
        (s, v, p[T - 1] + q[T - 1])
    }
});

program!(mutual_top_level {
    // At the top level too; a statement between the clauses that does not
    // read the members stays where it is.
    let even[0] = 1;
    let odd[0] = 0;
    let scale = 2;
    let even[n in 1..6] = odd[n - 1] + even[n - 1] * scale;
    let odd[n in 1..6] = even[n] - odd[n - 1];
    // By hand: even 1 2 6 16 44 120, odd 0 2 4 12 32 88.
    assert(even[5] == 120 && odd[5] == 88 && even[3] == 16 && odd[2] == 4, "even {even} odd {odd}");
});

#[test]
fn recurrences_that_read_each_other() {
    let x = array![1.0f64, 2.0, 3.0, -1.0, 0.5];
    let (mut a, mut b) = (vec![1.0f64], vec![0.0f64]);
    for t in 1..x.len() {
        a.push(a[t - 1] * 0.5 + b[t - 1] + x[t]);
        b.push(a[t] - b[t - 1]);
    }
    let (ga, gb) = mutual::coupled(&x).unwrap();
    assert_eq!(mutual::later_reads(&x).unwrap(), a[4] * 2.0 + b[4] * 10.0);
    assert_eq!((ga.to_vec(), gb.to_vec()), (a, b));

    let (t_n, i_n, h_n) = (7, 3, 4);
    let x = rand2(t_n, i_n, 11);
    let w = rand2(h_n, i_n, 12);
    let u = rand2(h_n, h_n, 13);
    let (mut h, mut c) = (vec![0.0f32; h_n], vec![0.0f32; h_n]);
    for t in 1..t_n {
        let c_new: Vec<f32> = (0..h_n)
            .map(|j| {
                let wx: f32 = (0..i_n).map(|i| w[[j, i]] * x[[t, i]]).sum();
                let uh: f32 = (0..h_n).map(|k| u[[j, k]] * h[k]).sum();
                0.5 * c[j] + (wx + uh).tanh()
            })
            .collect();
        c = c_new;
        h = c.iter().map(|v| v.tanh()).collect();
    }
    assert_close(&mutual::cell(&x, &w, &u).unwrap(), &Array1::from(h), 1e-5);

    let (x0, v0, k, dt, n) = (1.0f64, 0.5, 4.0, 0.05, 40usize);
    let (mut pos, mut vel, mut acc) = (vec![x0], vec![v0], vec![-k * x0]);
    for t in 1..n {
        acc.push(-k * pos[t - 1]);
        vel.push(vel[t - 1] + dt * acc[t]);
        pos.push(pos[t - 1] + dt * vel[t]);
    }
    let (gp, gv, ga) = mutual::spring(x0, v0, k, dt, n as i64).unwrap();
    assert_eq!((gp.to_vec(), gv.to_vec(), ga.to_vec()), (pos, vel, acc));

    mutual_top_level::main().unwrap();

    // By hand: a = 1, 2 + 0.5, 3 + 1.25; b = a / 2. Integers: a = 1, 2 + 2,
    // 3 + 8; b = 2a.
    let (a, b) = mutual_generic::pair_f32(&array![1.0f32, 2.0, 3.0]).unwrap();
    assert_eq!((a, b), (array![1.0f32, 2.5, 4.25], array![0.5f32, 1.25, 2.125]));
    let (a, b) = mutual_generic::pair_i64(&array![1i64, 2, 3]).unwrap();
    assert_eq!((a, b), (array![1i64, 4, 11], array![2i64, 8, 22]));

    let (t_n, n) = (6, 3);
    let x = Array2::from_shape_fn((t_n, n), |(t, i)| (t * 3 + i) as f64 * 0.5 - 2.0);
    let mut s = vec![0.0f64; t_n];
    let mut v = Array2::<f64>::zeros((t_n, n));
    let (mut p, mut q) = (vec![1.0f64; t_n], vec![0.0f64; t_n]);
    v.row_mut(0).assign(&x.row(0));
    for t in 1..t_n {
        s[t] = v.row(t - 1).sum() * 0.25;
        for i in 0..n {
            v[[t, i]] = x[[t, i]] - s[t];
        }
        p[t] = q[t - 1] + s[t];
        q[t] = p[t] * 0.5;
    }
    let (gs, gv, last) = mutual_mixed::mixed(&x).unwrap();
    assert_eq!(gs.to_vec(), s);
    assert_close(&gv, &v, 1e-12);
    assert_eq!(last, p[t_n - 1] + q[t_n - 1]);
}

#[test]
fn recurrences_that_read_each_other_become_one_with_a_field_axis() {
    // Members are the fields (axis 0) of one recurrence named after them;
    // time runs sequentially, the hidden units in parallel.
    let f = recurrence_facts(mutual::SRC, "coupled", "a__b");
    assert_eq!((f.sequential.clone(), f.fields.clone()), (vec![1], vec![0]));
    // Both members are returned whole, copied from their fields: every
    // step is kept.
    assert!(matches!(f.storage, Storage::Full(_)), "{:?}", f.storage);
    // Only `h[T - 1, j]` is read afterwards: the read goes to the fused
    // tensor, which keeps two steps.
    let f = recurrence_facts(mutual::SRC, "cell", "h__c");
    assert_eq!((f.sequential.clone(), f.parallel.clone(), f.fields.clone()), (vec![1], vec![2], vec![0]));
    assert_eq!(f.storage, Storage::Window { axis: 1, len: 2, slots: 2 });
    let f = recurrence_facts(mutual::SRC, "spring", "acc__vel__pos");
    assert_eq!((f.sequential.clone(), f.fields.clone()), (vec![1], vec![0]));
}

mod rows_passed_to_functions {
    use einlang::einlang;
    use einlang::ndarray::{Array1, Array2};

    einlang! {
        fn total(v: [f32; H]) -> f32 { sum[j](v[j]) }
        fn peak(v: [f32; H]) -> f32 { max[j](v[j]) }

        /// Each step reads the whole previous row through a function.
        pub fn running(x: [f32; T, H]) -> [f32; T, H] {
            let h[0, j] = x[0, j];
            let h[t in 1..T, j] = x[t, j] + 0.5 * total(h[t - 1]) - peak(h[t - 1]);
            h
        }

        /// Only the last row is kept (a circular buffer of two rows).
        pub fn last(x: [f32; T, H]) -> [f32; H] {
            let h[0, j] = x[0, j];
            let h[t in 1..T, j] = x[t, j] + 0.25 * total(h[t - 1]);
            let out[j] = h[T - 1, j];
            out
        }
    }

    fn reference(x: &Array2<f32>, a: f32, b: f32) -> Array2<f32> {
        let mut h = x.clone();
        for t in 1..x.nrows() {
            let prev = h.row(t - 1).to_owned();
            let total: f32 = prev.iter().sum();
            let peak = prev.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
            for j in 0..x.ncols() {
                h[[t, j]] = x[[t, j]] + a * total - b * peak;
            }
        }
        h
    }

    #[test]
    fn rows_of_earlier_steps_are_read_while_later_ones_are_written() {
        let x = Array2::from_shape_fn((6, 5), |(t, j)| ((t * 7 + j * 3) % 11) as f32 * 0.25 - 1.0);
        let got = running(&x).unwrap();
        let want = reference(&x, 0.5, 1.0);
        approx::assert_abs_diff_eq!(got, want, epsilon = 1e-4);
        let got: Array1<f32> = last(&x).unwrap();
        let want = reference(&x, 0.25, 0.0);
        approx::assert_abs_diff_eq!(got, want.row(5).to_owned(), epsilon = 1e-4);
    }
}
