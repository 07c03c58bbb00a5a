//! Sums of a definition's rows computed as the rows are written
//! (`codegen/rust/in_place.rs`, `row_sum_of`): a later `z[a..] =
//! sum[k](e[a.., k])` (at the top level, or in the row prelude of a later
//! definition, as attention's `z` after its second product) becomes the
//! sums that `e`'s loop nest added up in the reduction's lane order. The
//! values are checked bit for bit against the same sums in that order over
//! the returned `e`, and the attention against plain loops, on shapes with
//! 0, 1, 7, 16, 17 and prime extents.

mod gemm_support;

use einlang::einlang;
use einlang::ndarray::{Array, Array2, Array3, Ix3};
use gemm_support::{spread, tensor3};

einlang! {
    use std::math::exp;

    /// `z` at the top level, summing `e` of rank 2, both read by a later
    /// definition (`z` at another row too: neither joins its rows).
    pub fn sums2d(x: [f32; N, M]) -> [f32; N, M] {
        let e[i, j] = exp(x[i, j]) * 0.5;
        let z[i] = sum[j](e[i, j]);
        let y[i, j] = e[i, j] / z[i] + z[0];
        y
    }

    /// `z` in the rows of `y`: each row of `y` divided by its sum.
    pub fn normalized(x: [f64; H, N, M]) -> ([f64; H, N, M], [f64; H, N, M]) {
        let e[h, i, j] = exp(x[h, i, j] - 1.0);
        let z[h, i] = sum[j](e[h, i, j]);
        let y[h, i, j] = e[h, i, j] / z[h, i];
        (y, e)
    }

    /// A rank-2 definition and its row sums.
    pub fn sums2(x: [f64; N, M]) -> ([f64; N, M], [f64; N]) {
        let e[n, j] = x[n, j] * x[n, j] + 1.0;
        let z[n] = sum[j](e[n, j]);
        (e, z)
    }

    /// Attention as `benches/products.rs` writes it.
    pub fn attention(q: [f32; H, N, D], k: [f32; H, N, D], v: [f32; H, N, D]) -> [f32; H, N, D] {
        let s[h, i, j] = sum[d](q[h, i, d] * k[h, j, d]) / 8.0;
        let m[h, i] = max[j](s[h, i, j]);
        let e[h, i, j] = exp(s[h, i, j] - m[h, i]);
        let z[h, i] = sum[j](e[h, i, j]);
        let y[h, i, d] = sum[j](e[h, i, j] * v[h, j, d]) / z[h, i];
        y
    }

    /// Only part of each row summed: not the whole axis, computed apart.
    pub fn partial(x: [f64; N, M]) -> ([f64; N, M], [f64; N]) {
        let e[n, j] = x[n, j] + 2.0;
        let z[n] = sum[j in 1..M](e[n, j]);
        (e, z)
    }
}

/// A row summed as a reduction in lanes sums it: term `k` into lane `k %
/// 16` while a whole run of sixteen remains, the rest into a tail, then the
/// lanes halving (lane `p` plus lane `p + 8`, then `p + 4`, `p + 2`, `p +
/// 1`) plus the tail.
fn lane_sum<T: Copy + Default + std::ops::Add<Output = T>>(row: impl Iterator<Item = T>) -> T {
    let row: Vec<T> = row.collect();
    let (mut lanes, mut tail) = ([T::default(); 16], T::default());
    let whole = row.len() / 16 * 16;
    for (k, &v) in row[..whole].iter().enumerate() {
        lanes[k % 16] = lanes[k % 16] + v;
    }
    for &v in &row[whole..] {
        tail = tail + v;
    }
    for h in [8, 4, 2, 1] {
        for p in 0..h {
            lanes[p] = lanes[p] + lanes[p + h];
        }
    }
    lanes[0] + tail
}

const SHAPES: [(usize, usize, usize); 10] = [
    (1, 1, 1),
    (2, 3, 7),
    (1, 5, 16),
    (3, 2, 17),
    (2, 7, 33),
    (1, 3, 0),
    (0, 4, 5),
    (2, 0, 3),
    (1, 11, 100),
    (5, 13, 31),
];

#[test]
fn top_level_sums_keep_the_bits_of_the_lanes() {
    use einlang::__private::arith;
    for (seed, &(_, n, m)) in SHAPES.iter().enumerate() {
        let x = Array2::from_shape_vec((n, m), spread(n * m, seed as u64)).unwrap().mapv(|v| v as f32);
        let y = sums2d(&x).unwrap();
        assert_eq!(y.shape(), &[n, m]);
        for i in 0..n {
            let r = i;
            let row = |r: usize| -> Vec<f32> { (0..m).map(|j| arith::exp_f32(x[[r, j]]) * 0.5).collect() };
            let e = row(r);
            let z = lane_sum(e.iter().copied());
            let z0 = lane_sum(row(0).into_iter());
            for j in 0..m {
                assert_eq!(y[[i, j]].to_bits(), (e[j] / z + z0).to_bits(), "{n}x{m} at ({i}, {j})");
            }
            let near: f64 = (0..m).map(|j| (x[[r, j]] as f64).exp() * 0.5).sum();
            assert!((z as f64 - near).abs() <= 1e-5 * near.max(1.0), "{n}x{m}");
        }
    }
}

#[test]
fn sums_in_a_later_row_prelude_keep_the_bits_of_the_lanes() {
    for (seed, &(h, n, m)) in SHAPES.iter().enumerate() {
        let x = tensor3(h, n, m, 40 + seed as u64);
        let (y, e) = normalized(&x).unwrap();
        assert_eq!(y.shape(), &[h, n, m]);
        for a in 0..h {
            for i in 0..n {
                let z = lane_sum((0..m).map(|j| e[[a, i, j]]));
                for j in 0..m {
                    assert!((e[[a, i, j]] - (x[[a, i, j]] - 1.0).exp()).abs() <= 1e-14, "{h}x{n}x{m}");
                    assert_eq!(y[[a, i, j]].to_bits(), (e[[a, i, j]] / z).to_bits(), "{h}x{n}x{m} at ({a}, {i}, {j})");
                }
            }
        }
    }
}

#[test]
fn rank_two_and_partial_sums() {
    for (seed, &(_, n, m)) in SHAPES.iter().enumerate() {
        let x = Array2::from_shape_vec((n, m), spread(n * m, 80 + seed as u64)).unwrap();
        let (e, z) = sums2(&x).unwrap();
        let (e2, z2) = partial(&x).unwrap();
        for i in 0..n {
            for j in 0..m {
                assert_eq!(e[[i, j]].to_bits(), (x[[i, j]] * x[[i, j]] + 1.0).to_bits());
                assert_eq!(e2[[i, j]].to_bits(), (x[[i, j]] + 2.0).to_bits());
            }
            assert_eq!(z[i].to_bits(), lane_sum((0..m).map(|j| e[[i, j]])).to_bits(), "{n}x{m} row {i}");
            let near: f64 = (1..m).map(|j| x[[i, j]] + 2.0).sum();
            assert!((z2[i] - near).abs() <= 1e-12 * near.abs().max(1.0), "{n}x{m} row {i}: {} {near}", z2[i]);
        }
    }
}

fn attention_loops(q: &Array3<f32>, k: &Array3<f32>, v: &Array3<f32>) -> Array<f64, Ix3> {
    let (h, n, d) = q.dim();
    let mut y = Array::<f64, Ix3>::zeros((h, n, d));
    for a in 0..h {
        for i in 0..n {
            let s: Vec<f64> =
                (0..n).map(|j| (0..d).map(|c| q[[a, i, c]] as f64 * k[[a, j, c]] as f64).sum::<f64>() / 8.0).collect();
            let m = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let e: Vec<f64> = s.iter().map(|x| (x - m).exp()).collect();
            let z: f64 = e.iter().sum();
            for c in 0..d {
                y[[a, i, c]] = (0..n).map(|j| e[j] * v[[a, j, c]] as f64).sum::<f64>() / z;
            }
        }
    }
    y
}

#[test]
fn attention_against_loops() {
    for (seed, &(h, n, d)) in
        [(1, 1, 1), (2, 7, 5), (3, 17, 8), (1, 0, 4), (0, 3, 3), (2, 13, 0), (2, 37, 16)].iter().enumerate()
    {
        let q = tensor3(h, n, d, 100 + seed as u64).mapv(|v| v as f32);
        let k = tensor3(h, n, d, 200 + seed as u64).mapv(|v| v as f32);
        let v = tensor3(h, n, d, 300 + seed as u64).mapv(|v| v as f32);
        let got = attention(&q, &k, &v).unwrap();
        let want = attention_loops(&q, &k, &v);
        assert_eq!(got.shape(), &[h, n, d]);
        for (g, w) in got.iter().zip(want.iter()) {
            assert!((*g as f64 - w).abs() <= 1e-5 * w.abs().max(1.0), "{h}x{n}x{d}: {g} against {w}");
        }
    }
}
