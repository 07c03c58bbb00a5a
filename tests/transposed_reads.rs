//! Definitions that read a tensor across their rows (a transpose, a
//! transposed operand) are written a block of rows at a time
//! (`codegen/rust/tensor.rs`, `row_blocks`). Each is compared with a loop
//! written from its meaning, on shapes whose row count is below, at and
//! above a block, on a source that is itself a transposed view, and on
//! sources the function computed (read through views local to the block's
//! closure).

mod common;

use einlang::einlang;
use einlang::ndarray::{Array2, ShapeBuilder};

einlang! {
    pub fn transpose(x: [f32; N, M]) -> [f32; M, N] {
        let y[j, i] = x[i, j];
        y
    }

    // A transposed operand next to a plain one, integers.
    pub fn mixed(a: [i64; N, N], b: [i64; N, N]) -> [i64; N, N] {
        let y[i, j] = a[i, j] * 10 + b[j, i];
        y
    }

    // An axis that starts above zero (a domain guard), and a checked read
    // that can fail.
    pub fn shifted(x: [f64; N, M], s: i64) -> [f64; ?, N] {
        let y[j in 1..M, i] = x[i, j - s] + 0.5;
        y
    }

    // Arithmetic on a transposed read and a read along the rows.
    pub fn affine(x: [f32; N, M], b: [f32; M]) -> [f32; M, N] {
        let y[i, j] = x[j, i] * 2.0 + b[i];
        y
    }

    // Sources the function computed: a product (an owned array) and a
    // recurrence's table, each read across the rows of the result.
    pub fn computed(a: [f64; N, K], b: [f64; K, M]) -> ([f64; M, N], [f64; M, N]) {
        let c[i, j] = sum[k](a[i, k] * b[k, j]);
        let ct[j, i] = c[i, j] * 0.5;
        let h[0, j in 0..M] = a[0, 0] * (j as f64);
        let h[i in 1..N, j in 0..M] = h[i - 1, j] + c[i, j];
        let ht[j, i] = h[i, j];
        (ct, ht)
    }
}

fn data(n: usize, m: usize) -> Array2<f32> {
    Array2::from_shape_fn((n, m), |(i, j)| (i * 131 + j * 7) as f32 * 0.25)
}

#[test]
fn transposes_match_a_loop_on_every_shape() {
    for (n, m) in [(0, 4), (4, 0), (1, 1), (3, 5), (16, 16), (17, 33), (40, 1), (1, 40), (100, 37)] {
        let x = data(n, m);
        let want = Array2::from_shape_fn((m, n), |(j, i)| x[[i, j]]);
        assert_eq!(transpose(&x).unwrap(), want, "{n} x {m}");
        // The source a transposed view (column-major memory).
        let xt = Array2::from_shape_vec((n, m).f(), x.t().iter().copied().collect()).unwrap();
        assert_eq!(xt, x);
        assert_eq!(transpose(&xt).unwrap(), want, "{n} x {m}, column-major source");
    }
}

#[test]
fn a_transposed_operand_next_to_a_plain_one() {
    for n in [1, 15, 16, 17, 50] {
        let a = Array2::from_shape_fn((n, n), |(i, j)| (i * 3 + j) as i64);
        let b = Array2::from_shape_fn((n, n), |(i, j)| (i as i64) - 2 * (j as i64));
        let want = Array2::from_shape_fn((n, n), |(i, j)| a[[i, j]] * 10 + b[[j, i]]);
        assert_eq!(mixed(&a, &b).unwrap(), want, "{n}");
    }
}

#[test]
fn an_axis_from_one_and_a_read_that_fails() {
    let x = Array2::from_shape_fn((19, 6), |(i, j)| (i * 10 + j) as f64);
    let got = shifted(&x, 1).unwrap();
    // Positions below the axis's start are zero.
    let want = Array2::from_shape_fn((6, 19), |(j, i)| if j >= 1 { x[[i, j - 1]] + 0.5 } else { 0.0 });
    assert_eq!(got, want);
    // `j - s` leaves the tensor for s = 2 at j = 1: an error, not a panic.
    assert!(shifted(&x, 2).is_err());
}

#[test]
fn sources_the_function_computed() {
    for (n, k, m) in [(1, 1, 1), (3, 2, 5), (17, 4, 33), (40, 3, 16)] {
        let a = Array2::from_shape_fn((n, k), |(i, j)| (i * 7 + j) as f64 * 0.5);
        let b = Array2::from_shape_fn((k, m), |(i, j)| (i as f64) - 0.25 * (j as f64));
        let c = Array2::from_shape_fn((n, m), |(i, j)| (0..k).map(|t| a[[i, t]] * b[[t, j]]).sum::<f64>());
        let mut h = Array2::<f64>::zeros((n, m));
        for j in 0..m {
            h[[0, j]] = a[[0, 0]] * j as f64;
        }
        for i in 1..n {
            for j in 0..m {
                h[[i, j]] = h[[i - 1, j]] + c[[i, j]];
            }
        }
        let (ct, ht) = computed(&a, &b).unwrap();
        let want_ct = Array2::from_shape_fn((m, n), |(j, i)| c[[i, j]] * 0.5);
        let worst = ct.iter().zip(want_ct.iter()).fold(0.0f64, |w, (x, y)| w.max((x - y).abs()));
        assert!(worst <= 1e-9, "{n} x {k} x {m}: the product's transpose differs by {worst}");
        let want_ht = Array2::from_shape_fn((m, n), |(j, i)| h[[i, j]]);
        let worst = ht.iter().zip(want_ht.iter()).fold(0.0f64, |w, (x, y)| w.max((x - y).abs()));
        assert!(worst <= 1e-9, "{n} x {k} x {m}: the table's transpose differs by {worst}");
    }
}

/// Arithmetic on a transposed read, on shapes below, at and above a block
/// of rows and of columns (16), fresh and into buffers of both layouts,
/// on 1 to 3 threads, against a loop written from its meaning.
#[test]
fn an_affine_transpose_matches_a_loop_on_one_to_three_threads() {
    for threads in 1..=3 {
        common::split_small_loops();
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("pool");
        pool.install(|| {
            for (n, m) in [(0, 3), (3, 0), (1, 1), (7, 13), (16, 16), (17, 33), (33, 17), (1, 100), (100, 1), (600, 90)]
            {
                let x = data(n, m);
                let b = einlang::ndarray::Array1::from_shape_fn(m, |i| i as f32 - 3.5);
                let want = Array2::from_shape_fn((m, n), |(i, j)| x[[j, i]] * 2.0 + b[i]);
                assert_eq!(affine(&x, &b).unwrap(), want, "{n} x {m}, {threads} threads");
                let mut out = Array2::<f32>::from_elem((m, n), -1.0);
                affine_into(&x, &b, &mut out).unwrap();
                assert_eq!(out, want, "{n} x {m}, {threads} threads, into");
                let mut out = Array2::<f32>::from_elem((m, n).f(), -1.0);
                affine_into(&x, &b, &mut out).unwrap();
                assert_eq!(out, want, "{n} x {m}, {threads} threads, into a column-major buffer");
            }
        });
    }
}
