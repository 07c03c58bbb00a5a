//! Definitions that permute a tensor's axes (`y[j, i] = x[i, j]`, any rank
//! and order) run as tiled copies: against naive loops on odd shapes (1,
//! 7, primes, empty), through `_into` into buffers of any strides, and on
//! 1-3 threads.

mod common;

use einlang::einlang;
use einlang::ndarray::{Array2, Array3, Array4, ArrayD, IxDyn, ShapeBuilder};

einlang! {
    pub fn t2(x: [f32; N, M]) -> [f32; M, N] {
        let y[j, i] = x[i, j];
        y
    }

    /// Three axes rotated.
    pub fn rot3(x: [i64; A, B, C]) -> [i64; C, A, B] {
        let y[k, i, j] = x[i, j, k];
        y
    }

    /// The two middle axes swapped: the last stays last (rows copied).
    pub fn swap_mid(x: [f64; A, B, C, D]) -> [f64; A, C, B, D] {
        let y[a, c, b, d] = x[a, b, c, d];
        y
    }

    /// Pairs of axes swapped as blocks: a transpose of `[A * B, C * D]`.
    pub fn swap_pairs(x: [f32; A, B, C, D]) -> [f32; C, D, A, B] {
        let y[c, d, a, b] = x[a, b, c, d];
        y
    }

    /// NCHW to NHWC.
    pub fn channels_last(x: [f32; N, C, H, W]) -> [f32; N, H, W, C] {
        let y[n, h, w, c] = x[n, c, h, w];
        y
    }

    /// A transpose of a tensor computed first (a temporary).
    pub fn transposed_square(x: [f32; N, M]) -> [f32; M, N] {
        let s[i, j] = x[i, j] * x[i, j];
        let y[j, i] = s[i, j];
        y
    }

    /// A leading block of the transpose (ranges narrower than the source).
    pub fn corner(x: [f32; N, M]) -> [f32; 2, 3] {
        let y[j in 0..2, i in 0..3] = x[i, j];
        y
    }
}

fn value(idx: &[usize]) -> i64 {
    idx.iter().fold(7i64, |acc, &i| acc * 131 + i as i64)
}

fn on_threads(f: impl Fn() + Sync) {
    for threads in 1..=3 {
        common::split_small_loops();
        rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("pool").install(&f);
    }
}

#[test]
fn transposes_match_naive_loops_on_odd_shapes() {
    on_threads(|| {
        for (n, m) in [(1, 1), (1, 7), (7, 1), (13, 17), (0, 5), (5, 0), (257, 131), (600, 90)] {
            let x = Array2::from_shape_fn((n, m), |(i, j)| value(&[i, j]) as f32);
            let y = t2(&x).unwrap();
            assert_eq!(y.dim(), (m, n));
            for j in 0..m {
                for i in 0..n {
                    assert_eq!(y[[j, i]], x[[i, j]], "{n}x{m} at ({j}, {i})");
                }
            }
            // A strided source (a column-major array).
            let f = Array2::from_shape_fn((n, m).f(), |(i, j)| value(&[i, j]) as f32);
            assert_eq!(t2(&f).unwrap(), y);
        }
    });
}

#[test]
fn higher_ranks_match_naive_loops() {
    on_threads(|| {
        for (a, b, c) in [(1, 1, 1), (3, 5, 7), (2, 0, 3), (11, 13, 64), (40, 3, 37)] {
            let x = Array3::from_shape_fn((a, b, c), |(i, j, k)| value(&[i, j, k]));
            let y = rot3(&x).unwrap();
            assert_eq!(y.dim(), (c, a, b));
            for ((k, i, j), v) in y.indexed_iter() {
                assert_eq!(*v, x[[i, j, k]]);
            }
        }
        // Large enough for tasks in parallel: rows of the last axis in tiles
        // of the two middle axes (a head split), rows of 1, extents of 1.
        for (a, b, c, d) in
            [(1, 2, 3, 4), (2, 7, 5, 3), (3, 1, 1, 9), (2, 33, 17, 8), (3, 67, 5, 64), (2, 301, 37, 1), (1, 97, 1, 701)]
        {
            let x = Array4::from_shape_fn((a, b, c, d), |(i, j, k, l)| value(&[i, j, k, l]) as f64);
            let y = swap_mid(&x).unwrap();
            for ((i, k, j, l), v) in y.indexed_iter() {
                assert_eq!(*v, x[[i, j, k, l]]);
            }
            let w = swap_pairs(&x.mapv(|v| v as f32)).unwrap();
            assert_eq!(w.dim(), (c, d, a, b));
            for ((k, l, i, j), v) in w.indexed_iter() {
                assert_eq!(*v, x[[i, j, k, l]] as f32);
            }
            let z = channels_last(&x.mapv(|v| v as f32)).unwrap();
            assert_eq!(z.dim(), (a, c, d, b));
            for ((n, h, w, ch), v) in z.indexed_iter() {
                assert_eq!(*v, x[[n, ch, h, w]] as f32);
            }
        }
    });
}

#[test]
fn temporaries_blocks_and_buffers() {
    let x = Array2::from_shape_fn((9, 4), |(i, j)| i as f32 - j as f32 * 0.5);
    let y = transposed_square(&x).unwrap();
    for ((j, i), v) in y.indexed_iter() {
        assert_eq!(*v, x[[i, j]] * x[[i, j]]);
    }
    let c = corner(&x).unwrap();
    for ((j, i), v) in c.indexed_iter() {
        assert_eq!(*v, x[[i, j]]);
    }
    // Into a standard buffer, a transposed view and a column-major one.
    let mut out = Array2::<f32>::zeros((4, 9));
    t2_into(&x, &mut out).unwrap();
    assert_eq!(out, x.t());
    let mut back = Array2::<f32>::zeros((9, 4));
    t2_into(&x, back.view_mut().reversed_axes()).unwrap();
    assert_eq!(back, x);
    let mut f = Array2::<f32>::zeros((4, 9).f());
    t2_into(&x, &mut f).unwrap();
    assert_eq!(f, x.t());
    let mut wrong = Array2::<f32>::zeros((9, 4));
    assert!(matches!(t2_into(&x, &mut wrong), Err(einlang::Error::Shape { ref param, .. }) if param == "out"));
    // Dynamic-rank views of the same data agree.
    let d = ArrayD::from_shape_fn(IxDyn(&[9, 4]), |i| x[[i[0], i[1]]]);
    assert_eq!(t2(&d.into_dimensionality::<einlang::ndarray::Ix2>().unwrap()).unwrap(), x.t());
}
