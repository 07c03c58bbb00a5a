//! Chains of batched products and row kernels run one batch at a time
//! (`opt::slices`): attention `softmax(q k^T / 8) v` and other chains
//! against `f64` loops on odd shapes (1, 3, 7 batches; 1, 5, 13, 33 rows;
//! 1 and 7 features; empty batches, rows and features), on 1 to 3
//! threads; the fused chain bit for bit against the same chain with every
//! intermediate also returned (then used outside the chain, so nothing
//! joins it); a chain whose intermediate is read across batches (not per
//! batch), and operands whose batch axis is not their first.

mod gemm_support;

mod common;

use einlang::einlang;
use einlang::ndarray::{Array, Array3, Ix3};
use gemm_support::tensor3;

einlang! {
    use std::math::{exp, tanh};

    /// Attention as `benches/products.rs` writes it: the whole chain runs
    /// per head.
    pub fn attention(q: [f32; H, N, D], k: [f32; H, N, D], v: [f32; H, N, D]) -> [f32; H, N, D] {
        let s[h, i, j] = sum[d](q[h, i, d] * k[h, j, d]) / 8.0;
        let m[h, i] = max[j](s[h, i, j]);
        let e[h, i, j] = exp(s[h, i, j] - m[h, i]);
        let z[h, i] = sum[j](e[h, i, j]);
        let y[h, i, d] = sum[j](e[h, i, j] * v[h, j, d]) / z[h, i];
        y
    }

    /// The same with every intermediate returned: each is used outside
    /// the chain, so no statement joins another's rows per head.
    pub fn attention_parts(
        q: [f32; H, N, D],
        k: [f32; H, N, D],
        v: [f32; H, N, D],
    ) -> ([f32; H, N, D], [f32; H, N, N], [f32; H, N, N], [f32; H, N, D]) {
        let s[h, i, j] = sum[d](q[h, i, d] * k[h, j, d]) / 8.0;
        let m[h, i] = max[j](s[h, i, j]);
        let e[h, i, j] = exp(s[h, i, j] - m[h, i]);
        let z[h, i] = sum[j](e[h, i, j]);
        let p[h, i, d] = sum[j](e[h, i, j] * v[h, j, d]);
        let y[h, i, d] = p[h, i, d] / z[h, i];
        (y, s, e, p)
    }

    /// `e` returned as well: used outside, it stays whole; the rest of the
    /// chain (the second product) may still run per head.
    pub fn attention_and_e(q: [f64; H, N, D], k: [f64; H, N, D], v: [f64; H, N, D]) -> ([f64; H, N, D], [f64; H, N, N]) {
        let s[h, i, j] = sum[d](q[h, i, d] * k[h, j, d]) * 0.25;
        let m[h, i] = max[j](s[h, i, j]);
        let e[h, i, j] = exp(s[h, i, j] - m[h, i]);
        let z[h, i] = sum[j](e[h, i, j]);
        let y[h, i, d] = sum[j](e[h, i, j] * v[h, j, d]) / z[h, i];
        (y, e)
    }

    /// The scores' maximum over the heads: `s` is read across batches, so
    /// it cannot be computed one head at a time.
    pub fn across_heads(q: [f64; H, N, D], k: [f64; H, N, D], v: [f64; H, N, D]) -> [f64; H, N, D] {
        let s[h, i, j] = sum[d](q[h, i, d] * k[h, j, d]);
        let g[i, j] = max[h](s[h, i, j]);
        let e[h, i, j] = exp(s[h, i, j] - g[i, j]);
        let y[h, i, d] = sum[j](e[h, i, j] * v[h, j, d]) * 2.0;
        y
    }

    /// `std::ml::attention` with a scale given at run time.
    pub fn attention_std(q: [f32; H, N, D], k: [f32; H, N, D], v: [f32; H, N, D], c: f32) -> [f32; H, N, D] {
        std::ml::attention(q, k, v, c)
    }

    /// Cross-attention: keys of another length, values of another width,
    /// other names, the scale on the left.
    pub fn cross(q: [f32; B, N, D], key: [f32; B, M, D], val: [f32; B, M, E]) -> [f32; B, N, E] {
        let t[b, r, c] = 0.3 * sum[f](q[b, r, f] * key[b, c, f]);
        let top[b, r] = max[c](t[b, r, c]);
        let p[b, r, c] = exp(t[b, r, c] - top[b, r]);
        let total[b, r] = sum[c](p[b, r, c]);
        let out[b, r, x] = sum[c](p[b, r, c] * val[b, c, x]) / total[b, r];
        out
    }

    /// Two products with an elementwise kernel between them, operands
    /// laid out `[row, head, feature]` (the batch axis second).
    pub fn mlp_heads(x: [f64; N, H, D], w: [f64; H, D, F], u: [f64; H, F, D]) -> [f64; H, N, D] {
        let a[h, i, f] = sum[d](x[i, h, d] * w[h, d, f]);
        let t[h, i, f] = tanh(a[h, i, f]) + 1.0;
        let y[h, i, d] = sum[f](t[h, i, f] * u[h, f, d]) - x[i, h, d];
        y
    }
}

/// Runs `f` on 1, 2 and 3 threads.
fn on_threads(f: impl Fn(usize) + Sync) {
    for threads in 1..=3 {
        common::split_small_loops();
        rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap().install(|| f(threads));
    }
}

fn attention_loops(q: &Array3<f64>, k: &Array3<f64>, v: &Array3<f64>, scale: f64) -> Array<f64, Ix3> {
    let (h, n, d) = q.dim();
    let mut y = Array::<f64, Ix3>::zeros((h, n, d));
    for a in 0..h {
        for i in 0..n {
            let s: Vec<f64> =
                (0..n).map(|j| (0..d).map(|c| q[[a, i, c]] * k[[a, j, c]]).sum::<f64>() * scale).collect();
            let m = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let e: Vec<f64> = s.iter().map(|x| (x - m).exp()).collect();
            let z: f64 = e.iter().sum();
            for c in 0..d {
                y[[a, i, c]] = (0..n).map(|j| e[j] * v[[a, j, c]]).sum::<f64>() / z;
            }
        }
    }
    y
}

const SHAPES: &[(usize, usize, usize)] =
    &[(1, 1, 1), (1, 5, 7), (3, 13, 7), (7, 33, 1), (3, 33, 7), (2, 40, 16), (0, 5, 7), (3, 0, 7), (3, 5, 0)];

/// Shapes whose heads the runtime runs fused on AVX-512 (`gemm::
/// attention_into`: rows filling the 12-row tiles, 32 or more keys and
/// features): a last block of one row (97, prime), sums of two blocks
/// (300 keys, 300 features), partial panels of columns.
const FUSED: &[(usize, usize, usize)] = &[(1, 97, 33), (3, 97, 33), (2, 300, 40), (1, 36, 300), (3, 24, 64)];

#[test]
fn attention_per_head_against_loops_and_bit_for_bit_against_the_whole_statements() {
    on_threads(|threads| {
        for (seed, &(h, n, d)) in SHAPES.iter().enumerate() {
            let seed = seed as u64;
            let q = tensor3(h, n, d, 10 + seed);
            let k = tensor3(h, n, d, 20 + seed);
            let v = tensor3(h, n, d, 30 + seed);
            let (qf, kf, vf) = (q.mapv(|x| x as f32), k.mapv(|x| x as f32), v.mapv(|x| x as f32));
            let got = attention(&qf, &kf, &vf).unwrap();
            assert_eq!(got.shape(), &[h, n, d]);
            let want = attention_loops(&qf.mapv(f64::from), &kf.mapv(f64::from), &vf.mapv(f64::from), 0.125);
            for (g, w) in got.iter().zip(want.iter()) {
                assert!(
                    (*g as f64 - w).abs() <= 1e-5 * w.abs().max(1.0),
                    "{h}x{n}x{d}, {threads} threads: {g} against {w}"
                );
            }
            let (whole, s, e, p) = attention_parts(&qf, &kf, &vf).unwrap();
            assert_eq!(s.shape(), &[h, n, n]);
            assert_eq!(e.shape(), &[h, n, n]);
            assert_eq!(p.shape(), &[h, n, d]);
            for (g, w) in got.iter().zip(whole.iter()) {
                assert_eq!(g.to_bits(), w.to_bits(), "{h}x{n}x{d}, {threads} threads: {g} against {w}");
            }
        }
    });
}

#[test]
fn an_intermediate_used_elsewhere_stays_whole_and_right() {
    on_threads(|threads| {
        for (seed, &(h, n, d)) in SHAPES.iter().enumerate() {
            let seed = seed as u64;
            let (q, k, v) = (tensor3(h, n, d, 40 + seed), tensor3(h, n, d, 50 + seed), tensor3(h, n, d, 60 + seed));
            let (y, e) = attention_and_e(&q, &k, &v).unwrap();
            let want = attention_loops(&q, &k, &v, 0.25);
            for (g, w) in y.iter().zip(want.iter()) {
                assert!((g - w).abs() <= 1e-12 * w.abs().max(1.0), "{h}x{n}x{d}, {threads} threads: {g} against {w}");
            }
            assert_eq!(e.shape(), &[h, n, n]);
            for a in 0..h {
                for i in 0..n {
                    let s: Vec<f64> =
                        (0..n).map(|j| (0..d).map(|c| q[[a, i, c]] * k[[a, j, c]]).sum::<f64>() * 0.25).collect();
                    let m = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                    for j in 0..n {
                        let w = (s[j] - m).exp();
                        assert!((e[[a, i, j]] - w).abs() <= 1e-12 * w.abs().max(1.0), "e {h}x{n}x{d}");
                    }
                }
            }
        }
    });
}

#[test]
fn a_maximum_across_heads_is_not_per_head_and_stays_right() {
    on_threads(|threads| {
        for (seed, &(h, n, d)) in SHAPES.iter().enumerate() {
            let seed = seed as u64;
            let (q, k, v) = (tensor3(h, n, d, 70 + seed), tensor3(h, n, d, 80 + seed), tensor3(h, n, d, 90 + seed));
            let got = across_heads(&q, &k, &v).unwrap();
            let s = |a: usize, i: usize, j: usize| (0..d).map(|c| q[[a, i, c]] * k[[a, j, c]]).sum::<f64>();
            for a in 0..h {
                for i in 0..n {
                    for c in 0..d {
                        let w: f64 = (0..n)
                            .map(|j| {
                                let g = (0..h).map(|b| s(b, i, j)).fold(f64::NEG_INFINITY, f64::max);
                                (s(a, i, j) - g).exp() * v[[a, j, c]]
                            })
                            .sum::<f64>()
                            * 2.0;
                        let got = got[[a, i, c]];
                        assert!(
                            (got - w).abs() <= 1e-12 * w.abs().max(1.0),
                            "{h}x{n}x{d}, {threads} threads: {got} against {w}"
                        );
                    }
                }
            }
        }
    });
}

#[test]
fn two_products_with_a_kernel_between_and_the_batch_axis_second() {
    on_threads(|threads| {
        for (seed, &(h, n, d)) in SHAPES.iter().enumerate() {
            let seed = seed as u64;
            let f = (d + 3) % 5 + 1;
            let x = tensor3(n, h, d, 100 + seed);
            let w = tensor3(h, d, f, 110 + seed);
            let u = tensor3(h, f, d, 120 + seed);
            let got = mlp_heads(&x, &w, &u).unwrap();
            assert_eq!(got.shape(), &[h, n, d]);
            for a in 0..h {
                for i in 0..n {
                    let t: Vec<f64> =
                        (0..f).map(|g| (0..d).map(|c| x[[i, a, c]] * w[[a, c, g]]).sum::<f64>().tanh() + 1.0).collect();
                    for c in 0..d {
                        let want = (0..f).map(|g| t[g] * u[[a, g, c]]).sum::<f64>() - x[[i, a, c]];
                        let g = got[[a, i, c]];
                        assert!(
                            (g - want).abs() <= 1e-12 * want.abs().max(1.0),
                            "{h}x{n}x{d}, {threads} threads: {g} against {want}"
                        );
                    }
                }
            }
        }
    });
}

#[test]
fn attention_into_the_callers_buffer_of_any_strides() {
    for (seed, &(h, n, d)) in SHAPES.iter().enumerate() {
        let seed = seed as u64;
        let q = tensor3(h, n, d, 130 + seed).mapv(|x| x as f32);
        let k = tensor3(h, n, d, 140 + seed).mapv(|x| x as f32);
        let v = tensor3(h, n, d, 150 + seed).mapv(|x| x as f32);
        let want = attention(&q, &k, &v).unwrap();
        // A buffer laid out `[d, n, h]`, written through its transposed view.
        let mut out = Array3::<f32>::from_elem((d, n, h), f32::NAN);
        attention_into(&q, &k, &v, out.view_mut().reversed_axes()).unwrap();
        for a in 0..h {
            for i in 0..n {
                for c in 0..d {
                    assert_eq!(out[[c, i, a]].to_bits(), want[[a, i, c]].to_bits(), "{h}x{n}x{d}");
                }
            }
        }
        // A wrong shape is an error naming `out`, and nothing is written.
        let mut wrong = Array3::<f32>::from_elem((h, n, d + 1), 7.0);
        assert!(attention_into(&q, &k, &v, &mut wrong).is_err());
        assert!(wrong.iter().all(|&x| x == 7.0));
    }
}

#[test]
fn heads_run_fused_against_loops_and_bit_for_bit_against_the_whole_statements() {
    on_threads(|threads| {
        for (seed, &(h, n, d)) in FUSED.iter().enumerate() {
            let seed = seed as u64;
            let q = tensor3(h, n, d, 210 + seed).mapv(|x| x as f32);
            let k = tensor3(h, n, d, 220 + seed).mapv(|x| x as f32);
            let v = tensor3(h, n, d, 230 + seed).mapv(|x| x as f32);
            let got = attention(&q, &k, &v).unwrap();
            let want = attention_loops(&q.mapv(f64::from), &k.mapv(f64::from), &v.mapv(f64::from), 0.125);
            for (g, w) in got.iter().zip(want.iter()) {
                assert!(
                    (*g as f64 - w).abs() <= 1e-5 * w.abs().max(1.0),
                    "{h}x{n}x{d}, {threads} threads: {g} against {w}"
                );
            }
            let (whole, ..) = attention_parts(&q, &k, &v).unwrap();
            for (g, w) in got.iter().zip(whole.iter()) {
                assert_eq!(g.to_bits(), w.to_bits(), "{h}x{n}x{d}, {threads} threads");
            }
            // Into a caller's buffer laid out `[d, n, h]`: the same bits.
            let mut out = Array3::<f32>::from_elem((d, n, h), f32::NAN);
            attention_into(&q, &k, &v, out.view_mut().reversed_axes()).unwrap();
            assert!(out.view().reversed_axes().iter().zip(got.iter()).all(|(a, b)| a.to_bits() == b.to_bits()));
            // `std::ml::attention` with the scale at run time: the same
            // bits for 0.125, near the loops for 0.3.
            let same = attention_std(&q, &k, &v, 0.125).unwrap();
            assert!(same.iter().zip(got.iter()).all(|(a, b)| a.to_bits() == b.to_bits()), "{h}x{n}x{d}");
            let other = attention_std(&q, &k, &v, 0.3).unwrap();
            let want = attention_loops(&q.mapv(f64::from), &k.mapv(f64::from), &v.mapv(f64::from), 0.3);
            for (g, w) in other.iter().zip(want.iter()) {
                assert!((*g as f64 - w).abs() <= 1e-5 * w.abs().max(1.0), "{h}x{n}x{d}: {g} against {w}");
            }
        }
    });
}

#[test]
fn cross_attention_with_other_extents_and_names_against_loops() {
    // (batches, rows, keys, features, value width): fused and not.
    let shapes = [(2, 97, 40, 7, 33), (1, 131, 300, 16, 64), (3, 5, 3, 2, 1), (2, 24, 7, 5, 40), (1, 36, 0, 3, 32)];
    on_threads(|threads| {
        for (seed, &(b, n, m, d, e)) in shapes.iter().enumerate() {
            let seed = seed as u64;
            let q = tensor3(b, n, d, 310 + seed);
            let k = tensor3(b, m, d, 320 + seed);
            let v = tensor3(b, m, e, 330 + seed);
            let (qf, kf, vf) = (q.mapv(|x| x as f32), k.mapv(|x| x as f32), v.mapv(|x| x as f32));
            let got = cross(&qf, &kf, &vf).unwrap();
            assert_eq!(got.shape(), &[b, n, e]);
            let (q, k, v) = (qf.mapv(f64::from), kf.mapv(f64::from), vf.mapv(f64::from));
            for a in 0..b {
                for i in 0..n {
                    let s: Vec<f64> = (0..m)
                        .map(|j| 0.3f32 as f64 * (0..d).map(|c| q[[a, i, c]] * k[[a, j, c]]).sum::<f64>())
                        .collect();
                    let top = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                    let p: Vec<f64> = s.iter().map(|x| (x - top).exp()).collect();
                    let total: f64 = p.iter().sum();
                    for x in 0..e {
                        let w = (0..m).map(|j| p[j] * v[[a, j, x]]).sum::<f64>() / total;
                        let g = f64::from(got[[a, i, x]]);
                        // No keys: 0 / 0, as the loops.
                        assert!(
                            (g - w).abs() <= 1e-5 * w.abs().max(1.0) || (g.is_nan() && w.is_nan()),
                            "{b}x{n}x{m}x{d}x{e}, {threads} threads: {g} against {w}"
                        );
                    }
                }
            }
        }
    });
}
