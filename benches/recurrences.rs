//! Recurrences against hand-written Rust loops, measured in the same run.
//!
//! - a 1-D linear recurrence `x[t] = a x[t-1] + u[t]`, 2^22 steps, observed
//!   at its end (einlang keeps a 2-step window; the baseline keeps a scalar):
//!   ns/step;
//! - edit distance of two 4096-symbol strings (16.8 M cells), observed at
//!   the last cell (einlang keeps two rows; so does the baseline): ns/cell,
//!   against the textbook serial loop and against one that keeps the left
//!   neighbour in a register;
//! - a 2-D heat stencil, 256 x 256 for 100 steps, observed at the last step
//!   (einlang: window of 2 steps, rows in parallel; baseline: two buffers,
//!   rows in parallel with rayon): ns/cell-step; then on a 1024 x 1024
//!   grid (larger than the caches) for 20 steps;
//! - the same edit distance and heat stencil with their boundaries written
//!   as branches of one clause;
//! - a prefix sum along the rows of a 4096 x 2048 `f32` matrix (baseline:
//!   rows in parallel with rayon, a running sum written into an
//!   uninitialized buffer): ns/element; the same through
//!   `std::array::cumsum` (a sum over `k in 0..i` per point).
//!
//! Criterion measures each pair; then each pair is timed again (medians of
//! rounds that call each side once in turn, `common::paired`) and one
//! ratio line is printed per case. Results are checked
//! against the baseline before anything is timed.

mod common;

use std::hint::black_box;
use std::time::Duration;

use common::data;
use criterion::Criterion;
use einlang::einlang;
use einlang::ndarray::parallel::prelude::*;
use einlang::ndarray::{Array1, Array2, Axis};
use rayon::slice::{ParallelSlice, ParallelSliceMut};

einlang! {
    pub fn linear(a: f64, u: [f64; T]) -> f64 {
        let x[0] = u[0];
        let x[t in 1..T] = a * x[t - 1] + u[t];
        x[T - 1]
    }
}

// A prefix sum along rows, written as a recurrence and through the
// standard library.
einlang! {
    pub fn cumsum_std(x: [f32; N, M]) -> [f32; N, M] {
        std::array::cumsum(x)
    }

    pub fn scan_rows(x: [f32; N, M]) -> [f32; N, M] {
        let c[i, 0] = x[i, 0];
        let c[i, j in 1..M] = c[i, j - 1] + x[i, j];
        c
    }
}

mod boundaries {
    einlang::include_ein!("examples/ein/boundaries.ein");
}
use boundaries::{edit_branches, heat_branches};
mod edit {
    einlang::include_ein!("examples/ein/edit_distance.ein");
}
mod heat2d {
    einlang::include_ein!("examples/ein/heat.ein");
}
use edit::distance as edit_distance;
use heat2d::heat;

common::twin! {
fn linear_loop(a: f64, u: &[f64]) -> f64 {
    let mut x = u[0];
    for &v in &u[1..] {
        x = a * x + v;
    }
    x
}
}

common::twin! {
fn edit_loop(a: &[i32], b: &[i32]) -> i32 {
    let mut prev: Vec<i32> = (0..=b.len() as i32).collect();
    let mut cur = vec![0i32; b.len() + 1];
    for i in 1..=a.len() {
        cur[0] = i as i32;
        for j in 1..=b.len() {
            let sub = prev[j - 1] + i32::from(a[i - 1] != b[j - 1]);
            cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(sub);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}
}

common::twin! {
/// The serial loop with the left neighbour kept in a register (the
/// textbook loop above stores it and loads it back at the next cell, a
/// store-to-load round trip on the row's dependence chain): about twice as
/// fast on one core.
fn edit_loop_register(a: &[i32], b: &[i32]) -> i32 {
    let mut prev: Vec<i32> = (0..=b.len() as i32).collect();
    let mut cur = vec![0i32; b.len() + 1];
    for (i, &ai) in a.iter().enumerate() {
        let mut left = i as i32 + 1;
        cur[0] = left;
        for j in 1..=b.len() {
            let sub = prev[j - 1] + i32::from(ai != b[j - 1]);
            left = (prev[j] + 1).min(left + 1).min(sub);
            cur[j] = left;
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}
}

common::twin! {
fn heat_loop(u0: &Array2<f64>, r: f64, steps: usize) -> Array2<f64> {
    let (n, m) = u0.dim();
    let mut u = u0.clone();
    let mut next = Array2::<f64>::zeros((n, m));
    for _ in 1..steps {
        let src = u.as_slice().expect("standard layout");
        next.axis_iter_mut(Axis(0)).into_par_iter().enumerate().for_each(|(i, mut row)| {
            let row = row.as_slice_mut().expect("standard layout");
            if i == 0 || i == n - 1 {
                row.fill(0.0);
                return;
            }
            row[0] = 0.0;
            row[m - 1] = 0.0;
            for j in 1..m - 1 {
                let c = src[i * m + j];
                row[j] = c + r
                    * (src[(i - 1) * m + j] + src[(i + 1) * m + j] + src[i * m + j - 1] + src[i * m + j + 1] - 4.0 * c);
            }
        });
        std::mem::swap(&mut u, &mut next);
    }
    u
}
}

common::twin! {
fn scan_rows_loop(x: &Array2<f32>) -> Array2<f32> {
    let (n, m) = x.dim();
    let src = x.as_slice().expect("standard layout");
    let mut out: Vec<f32> = Vec::with_capacity(n * m);
    out.spare_capacity_mut()[..n * m].par_chunks_mut(m.max(1)).zip(src.par_chunks(m.max(1))).for_each(|(o, s)| {
        let mut acc = 0.0f32;
        for (o, &v) in o.iter_mut().zip(s) {
            acc += v;
            o.write(acc);
        }
    });
    // SAFETY: every element of the first `n * m` was written above.
    unsafe { out.set_len(n * m) };
    Array2::from_shape_vec((n, m), out).expect("the shape's size")
}
}

/// Prints the times per `unit` (seconds in, `count` units per call).
fn report(label: &str, unit: &str, count: f64, e: f64, b: f64) {
    let (ne, nb) = (e * 1e9 / count, b * 1e9 / count);
    println!(
        "{label}: einlang {ne:.2} ns/{unit}, hand loop {nb:.2} ns/{unit}, ratio {:.2}x (einlang time / baseline time)",
        e / b
    );
}

fn main() {
    let mut c = Criterion::default().configure_from_args().sample_size(10).measurement_time(Duration::from_secs(3));

    // 1-D recurrence.
    let steps = 1 << 22;
    let u = Array1::from_vec(data(steps, 1));
    let a = 0.999;
    let (got, want) = (linear(a, &u).expect("linear"), linear_loop(a, u.as_slice().unwrap()));
    assert!((got - want).abs() <= 1e-9 * (1.0 + want.abs()), "linear: {got} vs {want}");
    let mut g = c.benchmark_group("recurrence_1d");
    g.bench_function("einlang", |bch| bch.iter(|| linear(a, black_box(&u)).unwrap()));
    g.bench_function("hand_loop", |bch| bch.iter(|| linear_loop(a, black_box(u.as_slice().unwrap()))));
    g.finish();

    // Edit distance.
    let n = 4096;
    let sa: Array1<i32> = data(n, 2).iter().map(|v| ((v + 1.0) * 2.0) as i32).collect();
    let sb: Array1<i32> = data(n, 3).iter().map(|v| ((v + 1.0) * 2.0) as i32).collect();
    let (got, want) =
        (edit_distance(&sa, &sb).expect("edit"), edit_loop(sa.as_slice().unwrap(), sb.as_slice().unwrap()));
    assert_eq!(got, want, "edit distance");
    assert_eq!(edit_loop_register(sa.as_slice().unwrap(), sb.as_slice().unwrap()), want, "edit distance");
    let mut g = c.benchmark_group("edit_distance_4096");
    g.bench_function("einlang", |bch| bch.iter(|| edit_distance(black_box(&sa), &sb).unwrap()));
    g.bench_function("hand_loop", |bch| {
        bch.iter(|| edit_loop(black_box(sa.as_slice().unwrap()), sb.as_slice().unwrap()))
    });
    g.finish();

    // Heat stencil.
    let (hn, hsteps) = (256, 100);
    let u0 = Array2::from_shape_vec((hn, hn), data(hn * hn, 4)).unwrap();
    let (got, want) = (heat(&u0, 0.2, hsteps as i64).expect("heat"), heat_loop(&u0, 0.2, hsteps));
    let worst = got.iter().zip(want.iter()).fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
    assert!(worst <= 1e-12, "heat differs by {worst}");
    let mut g = c.benchmark_group("heat_2d_256");
    g.bench_function("einlang", |bch| bch.iter(|| heat(black_box(&u0), 0.2, hsteps as i64).unwrap()));
    g.bench_function("hand_loop", |bch| bch.iter(|| heat_loop(black_box(&u0), 0.2, hsteps)));
    g.finish();

    println!();
    let (e, b) = common::paired(
        7,
        || {
            black_box(linear(a, &u).unwrap());
        },
        || {
            black_box(linear_loop(a, u.as_slice().unwrap()));
        },
    );
    report("1-D recurrence 2^22 steps", "step", steps as f64, e, b);
    let (e, b) = common::paired(
        5,
        || {
            black_box(edit_distance(&sa, &sb).unwrap());
        },
        || {
            black_box(edit_loop(sa.as_slice().unwrap(), sb.as_slice().unwrap()));
        },
    );
    report("edit distance 4096x4096", "cell", (n * n) as f64, e, b);
    let (e, b) = common::paired(
        5,
        || {
            black_box(edit_distance(&sa, &sb).unwrap());
        },
        || {
            black_box(edit_loop_register(sa.as_slice().unwrap(), sb.as_slice().unwrap()));
        },
    );
    report("edit distance 4096x4096, against the register loop", "cell", (n * n) as f64, e, b);
    let want = edit_loop(sa.as_slice().unwrap(), sb.as_slice().unwrap());
    assert_eq!(edit_branches(&sa, &sb).expect("edit"), want, "edit distance in branches");
    let (e, b) = common::paired(
        5,
        || {
            black_box(edit_branches(&sa, &sb).unwrap());
        },
        || {
            black_box(edit_loop(sa.as_slice().unwrap(), sb.as_slice().unwrap()));
        },
    );
    report("edit distance 4096x4096, boundary in branches", "cell", (n * n) as f64, e, b);
    let (e, b) = common::paired(
        15,
        || drop(black_box(heat(&u0, 0.2, hsteps as i64).unwrap())),
        || drop(black_box(heat_loop(&u0, 0.2, hsteps))),
    );
    report("heat 2-D 256x256, 100 steps", "cell-step", (hn * hn * (hsteps - 1)) as f64, e, b);
    // The heat equation on a grid larger than the caches.
    let (bn, bsteps) = (1024, 20);
    let big = Array2::from_shape_vec((bn, bn), data(bn * bn, 5)).unwrap();
    let (e, b) = common::paired(
        7,
        || drop(black_box(heat(&big, 0.2, bsteps as i64).unwrap())),
        || drop(black_box(heat_loop(&big, 0.2, bsteps))),
    );
    report("heat 2-D 1024x1024, 20 steps", "cell-step", (bn * bn * (bsteps - 1)) as f64, e, b);
    let (got, want) = (heat_branches(&big, 0.2, bsteps as i64).expect("heat"), heat_loop(&big, 0.2, bsteps));
    let worst = got.iter().zip(want.iter()).fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
    assert!(worst <= 1e-12, "heat in branches differs by {worst}");
    let (e, b) = common::paired(
        7,
        || drop(black_box(heat_branches(&big, 0.2, bsteps as i64).unwrap())),
        || drop(black_box(heat_loop(&big, 0.2, bsteps))),
    );
    report("heat 2-D 1024x1024, 20 steps, border in branches", "cell-step", (bn * bn * (bsteps - 1)) as f64, e, b);
    // A prefix sum along rows.
    let (sn, sm) = (4096, 2048);
    let xs = Array2::from_shape_vec((sn, sm), data(sn * sm, 6).iter().map(|&v| v as f32).collect()).unwrap();
    assert_eq!(scan_rows(&xs).expect("scan"), scan_rows_loop(&xs), "prefix sums along rows");
    let (e, b) =
        common::paired(9, || drop(black_box(scan_rows(&xs).unwrap())), || drop(black_box(scan_rows_loop(&xs))));
    report("prefix sum along rows 4096x2048 f32", "element", (sn * sm) as f64, e, b);
    // The same through the standard library, written as a sum over a prefix.
    let worst = (cumsum_std(&xs).expect("cumsum") - scan_rows_loop(&xs)).iter().fold(0.0f32, |m, d| m.max(d.abs()));
    assert!(worst <= 1e-2, "std::array::cumsum differs by {worst}");
    let (e, b) =
        common::paired(9, || drop(black_box(cumsum_std(&xs).unwrap())), || drop(black_box(scan_rows_loop(&xs))));
    report("std::array::cumsum along rows 4096x2048 f32", "element", (sn * sm) as f64, e, b);
}
