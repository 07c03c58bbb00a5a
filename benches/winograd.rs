//! Winograd F(2,3) and F(4,3), and a direct convolution over blocked
//! channels, for 3x3 stride-1 convolutions, measured against what
//! einlang compiles now (`opt::pack`: im2col and a GEMM) and against
//! im2col + GEMM by hand, in one run: the evidence for choosing (or not)
//! a rewrite in the compiler (docs/performance-onnx.md, "Convolutions:
//! Winograd, a direct kernel over blocked channels, and blocked im2col
//! measured").
//!
//! The sides, called in turn every round (medians, and the median of the
//! per-round ratios to the first):
//! - `conv`: the convolution as users write it (`opt::pack` today);
//! - `conv_winograd`: Winograd F(2,3) written as ordinary einlang
//!   definitions (kernel transform `G k G^T`, tile transform `B^T d B`
//!   with zeros past the edge, the 16 products `sum[c](U * V)`, output
//!   transform `A^T M A` plus the bias), what a rewrite would emit;
//! - `conv_winograd_explicit`: the same with the transforms written out
//!   (no products by the constant matrices), called whole and per image
//!   from a caller's loop (to tell code quality from cache footprint);
//! - `winograd_hand`: the same algorithm by hand (row-wise transforms, the
//!   16 products by matrixmultiply per image and block of tile rows, so
//!   the transformed tiles stay in cache; `WINOGRAD_ROWS` tile rows per
//!   block, 8 by default);
//! - `winograd43_hand`: F(4,3) by hand the same way (4x4 output tiles,
//!   36 products; half as many tile rows per block);
//! - `direct_hand`: a direct convolution over blocked channels by hand
//!   (NCHWc-style, as MLAS does it): the input reordered to blocks of 8
//!   channels, the filters to blocks of 16, six output pixels x 16 filters
//!   kept in registers over the whole sum (FMA in the AVX2 twin);
//! - `conv_gemm_rows`: im2col + GEMM by hand per image and block of output
//!   rows, the block's columns small enough to stay in L2;
//! - `conv_gemm`: im2col + GEMM by hand per image, as in `benches/conv.rs`.
//!
//! Every side is checked against `conv_gemm` first (the tolerance is
//! `1e-3` of the largest output: F(2,3)'s transforms grow an input's
//! rounding error by a small constant factor, see the docs).

mod common;

use std::hint::black_box;
use std::time::Instant;

use einlang::einlang;
use einlang::ndarray::linalg::general_mat_mul;
use einlang::ndarray::parallel::prelude::*;
use einlang::ndarray::{s, Array1, Array2, Array4, Axis};
use rayon::slice::ParallelSliceMut;

einlang! {
    pub fn conv(x: [f32; N, C, H, W], k: [f32; O, C, KH, KW], b: [f32; O]) -> [f32; N, O, H - KH + 1, W - KW + 1] {
        let y[n, o, i, j] = sum[c, r, s](x[n, c, i + r, j + s] * k[o, c, r, s]) + b[o];
        y
    }

    /// Winograd F(2,3), valid, with a bias, in ordinary definitions.
    pub fn conv_winograd(x: [f32; N, C, H, W], k: [f32; O, C, 3, 3], b: [f32; O]) -> [f32; N, O, H - 2, W - 2] {
        let g = [[1.0, 0.0, 0.0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0.0, 0.0, 1.0]];
        let bt = [[1.0, 0.0, -1.0, 0.0], [0.0, 1.0, 1.0, 0.0], [0.0, -1.0, 1.0, 0.0], [0.0, 1.0, 0.0, -1.0]];
        let at = [[1.0, 1.0, 1.0, 0.0], [0.0, 1.0, -1.0, -1.0]];
        let u[a in 0..4, e in 0..4, o, c] = sum[r in 0..3, s in 0..3](g[a, r] * k[o, c, r, s] * g[e, s]);
        let v[n, a in 0..4, e in 0..4, c, ti in 0..(H - 1) / 2, tj in 0..(W - 1) / 2] = sum[p in 0..4, q in 0..4](
            if 2 * ti + p < H && 2 * tj + q < W { bt[a, p] * x[n, c, 2 * ti + p, 2 * tj + q] * bt[e, q] } else { 0.0 }
        );
        let m[n, a, e, o, ti, tj] = sum[c](u[a, e, o, c] * v[n, a, e, c, ti, tj]);
        let y[n, o, i in 0..H - 2, j in 0..W - 2] =
            sum[a in 0..4, e in 0..4](at[i % 2, a] * m[n, a, e, o, i / 2, j / 2] * at[j % 2, e]) + b[o];
        y
    }

    /// The same with the transforms written out: no products by the
    /// constant matrices' zeros and ones, the rows of `B^T d` first.
    pub fn conv_winograd_explicit(x: [f32; N, C, H, W], k: [f32; O, C, 3, 3], b: [f32; O]) -> [f32; N, O, H - 2, W - 2] {
        let g = [[1.0, 0.0, 0.0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0.0, 0.0, 1.0]];
        let u[a in 0..4, e in 0..4, o, c] = sum[r in 0..3, s in 0..3](g[a, r] * k[o, c, r, s] * g[e, s]);
        let t[n, c, ti in 0..(H - 1) / 2, a in 0..4, col in 0..W] = match a {
            0 => x[n, c, 2 * ti, col] - x[n, c, 2 * ti + 2, col],
            1 => x[n, c, 2 * ti + 1, col] + x[n, c, 2 * ti + 2, col],
            2 => x[n, c, 2 * ti + 2, col] - x[n, c, 2 * ti + 1, col],
            _ => x[n, c, 2 * ti + 1, col] - (if 2 * ti + 3 < H { x[n, c, 2 * ti + 3, col] } else { 0.0 }),
        };
        let v[n, a in 0..4, e in 0..4, c, ti in 0..(H - 1) / 2, tj in 0..(W - 1) / 2] = match e {
            0 => t[n, c, ti, a, 2 * tj] - t[n, c, ti, a, 2 * tj + 2],
            1 => t[n, c, ti, a, 2 * tj + 1] + t[n, c, ti, a, 2 * tj + 2],
            2 => t[n, c, ti, a, 2 * tj + 2] - t[n, c, ti, a, 2 * tj + 1],
            _ => t[n, c, ti, a, 2 * tj + 1] - (if 2 * tj + 3 < W { t[n, c, ti, a, 2 * tj + 3] } else { 0.0 }),
        };
        let m[n, a, e, o, ti, tj] = sum[c](u[a, e, o, c] * v[n, a, e, c, ti, tj]);
        let z[n, o, i in 0..H - 2, e in 0..4, tj in 0..(W - 1) / 2] = match i % 2 {
            0 => m[n, 0, e, o, i / 2, tj] + m[n, 1, e, o, i / 2, tj] + m[n, 2, e, o, i / 2, tj],
            _ => m[n, 1, e, o, i / 2, tj] - m[n, 2, e, o, i / 2, tj] - m[n, 3, e, o, i / 2, tj],
        };
        let y[n, o, i, j in 0..W - 2] = match j % 2 {
            0 => z[n, o, i, 0, j / 2] + z[n, o, i, 1, j / 2] + z[n, o, i, 2, j / 2],
            _ => z[n, o, i, 1, j / 2] - z[n, o, i, 2, j / 2] - z[n, o, i, 3, j / 2],
        } + b[o];
        y
    }
}

common::twin! {
/// im2col + GEMM per image, images in parallel (as `benches/conv.rs`).
fn conv_gemm(x: &Array4<f32>, k: &Array4<f32>, bias: &Array1<f32>) -> Array4<f32> {
    let (n, c, h, w) = x.dim();
    let (o, _, kh, kw) = k.dim();
    let (oh, ow) = (h - kh + 1, w - kw + 1);
    let km = k.view().into_shape_with_order((o, c * kh * kw)).expect("standard layout kernel");
    let mut y = Array4::<f32>::zeros((n, o, oh, ow));
    y.axis_iter_mut(Axis(0)).into_par_iter().enumerate().for_each(|(nn, mut img)| {
        let xs = x.index_axis(Axis(0), nn);
        let xs = xs.as_slice().expect("standard layout");
        let mut cols = Array2::<f32>::zeros((c * kh * kw, oh * ow));
        for (row, mut out) in cols.axis_iter_mut(Axis(0)).enumerate() {
            let out = out.as_slice_mut().expect("standard layout");
            let (cc, r, s) = (row / (kh * kw), row / kw % kh, row % kw);
            for i in 0..oh {
                out[i * ow..][..ow].copy_from_slice(&xs[(cc * h + i + r) * w + s..][..ow]);
            }
        }
        for (oo, mut plane) in img.axis_iter_mut(Axis(0)).enumerate() {
            plane.fill(bias[oo]);
        }
        let mut out = img.into_shape_with_order((o, oh * ow)).expect("standard layout");
        general_mat_mul(1.0, &km, &cols, 1.0, &mut out);
    });
    y
}
}

/// `U[(a, e), o, c] = (G k[o, c] G^T)[a, e]`.
fn kernel_transform(k: &Array4<f32>) -> Vec<f32> {
    let (o, c, _, _) = k.dim();
    let mut u = vec![0f32; 16 * o * c];
    for oo in 0..o {
        for cc in 0..c {
            let g = |r: usize, s: usize| k[[oo, cc, r, s]];
            let mut t = [[0f32; 3]; 4];
            for s in 0..3 {
                t[0][s] = g(0, s);
                t[1][s] = 0.5 * (g(0, s) + g(1, s) + g(2, s));
                t[2][s] = 0.5 * (g(0, s) - g(1, s) + g(2, s));
                t[3][s] = g(2, s);
            }
            for (a, t) in t.iter().enumerate() {
                let v = [t[0], 0.5 * (t[0] + t[1] + t[2]), 0.5 * (t[0] - t[1] + t[2]), t[2]];
                for (e, v) in v.iter().enumerate() {
                    u[((a * 4 + e) * o + oo) * c + cc] = *v;
                }
            }
        }
    }
    u
}

/// A raw pointer shared by the tasks that write disjoint rows of `y`.
#[derive(Clone, Copy)]
struct Out(*mut f32);
// SAFETY: each task writes only its own image's block of tile rows.
unsafe impl Send for Out {}
unsafe impl Sync for Out {}

common::twin! {
/// Winograd F(2,3) by hand, valid, with a bias: per image and block of
/// `rows` tile rows (in parallel), the input transform by whole image rows
/// (`B^T` as row combinations, then the column combinations at stride 2),
/// 16 products `U[ab] (O x C) * V[ab] (C x tiles)` by matrixmultiply, and
/// the output transform with the bias.
fn winograd_hand(x: &Array4<f32>, k: &Array4<f32>, bias: &Array1<f32>, rows: usize) -> Array4<f32> {
    let u = kernel_transform(k);
    let o = k.dim().0;
    let (n, c, h, w) = x.dim();
    let (oh, ow) = (h - 2, w - 2);
    let (tp, tq) = (oh.div_ceil(2), ow.div_ceil(2));
    let mut y = Array4::<f32>::zeros((n, o, oh, ow));
    let xs = x.as_slice().expect("standard layout");
    let blocks = tp.div_ceil(rows);
    let out = Out(y.as_slice_mut().expect("standard layout").as_mut_ptr());
    let ew = 2 * tq + 2;
    (0..n * blocks).into_par_iter().for_each(|task| {
        let out = out;
        let (nn, bl) = (task / blocks, task % blocks);
        let (r0, r1) = (bl * rows, (bl * rows + rows).min(tp));
        let nt = (r1 - r0) * tq;
        let mut v = vec![0f32; 16 * c * nt];
        let mut m = vec![0f32; 16 * o * nt];
        let img = &xs[nn * c * h * w..][..c * h * w];
        let mut d = vec![0f32; 4 * ew];
        let mut e = vec![0f32; 4 * ew];
        for cc in 0..c {
            let plane = &img[cc * h * w..][..h * w];
            for ti in r0..r1 {
                for a in 0..4 {
                    let row = 2 * ti + a;
                    let dst = &mut d[a * ew..][..ew];
                    if row < h {
                        dst[..w].copy_from_slice(&plane[row * w..][..w]);
                        dst[w..].fill(0.0);
                    } else {
                        dst.fill(0.0);
                    }
                }
                for q in 0..ew {
                    let (d0, d1, d2, d3) = (d[q], d[ew + q], d[2 * ew + q], d[3 * ew + q]);
                    e[q] = d0 - d2;
                    e[ew + q] = d1 + d2;
                    e[2 * ew + q] = d2 - d1;
                    e[3 * ew + q] = d1 - d3;
                }
                let base = (ti - r0) * tq;
                for a in 0..4 {
                    let er = &e[a * ew..][..ew];
                    for tj in 0..tq {
                        let (d0, d1, d2, d3) = (er[2 * tj], er[2 * tj + 1], er[2 * tj + 2], er[2 * tj + 3]);
                        let at = |b: usize| ((a * 4 + b) * c + cc) * nt + base + tj;
                        v[at(0)] = d0 - d2;
                        v[at(1)] = d1 + d2;
                        v[at(2)] = d2 - d1;
                        v[at(3)] = d1 - d3;
                    }
                }
            }
        }
        for ab in 0..16 {
            // SAFETY: the operands are `o x c`, `c x nt` and `o x nt`
            // row-major blocks inside `u`, `v` and `m`.
            unsafe {
                matrixmultiply::sgemm(
                    o,
                    c,
                    nt,
                    1.0,
                    u[ab * o * c..].as_ptr(),
                    c as isize,
                    1,
                    v[ab * c * nt..].as_ptr(),
                    nt as isize,
                    1,
                    0.0,
                    m[ab * o * nt..].as_mut_ptr(),
                    nt as isize,
                    1,
                );
            }
        }
        let mut f = vec![0f32; 8 * tq];
        for oo in 0..o {
            let bo = bias[oo];
            for ti in r0..r1 {
                let base = (ti - r0) * tq;
                for b in 0..4 {
                    let mm = |a: usize| &m[((a * 4 + b) * o + oo) * nt + base..][..tq];
                    let (m0, m1, m2, m3) = (mm(0), mm(1), mm(2), mm(3));
                    for tj in 0..tq {
                        f[b * tq + tj] = m0[tj] + m1[tj] + m2[tj];
                        f[(4 + b) * tq + tj] = m1[tj] - m2[tj] - m3[tj];
                    }
                }
                for a in 0..2 {
                    let i = 2 * ti + a;
                    if i >= oh {
                        continue;
                    }
                    let fa = &f[a * 4 * tq..][..4 * tq];
                    // SAFETY: row `i` of output plane `(nn, oo)`, written by
                    // this task alone.
                    let yrow = unsafe { std::slice::from_raw_parts_mut(out.0.add(((nn * o + oo) * oh + i) * ow), ow) };
                    for (tj, pair) in yrow.chunks_mut(2).enumerate() {
                        let (g0, g1, g2, g3) = (fa[tj], fa[tq + tj], fa[2 * tq + tj], fa[3 * tq + tj]);
                        pair[0] = g0 + g1 + g2 + bo;
                        if let Some(second) = pair.get_mut(1) {
                            *second = g1 - g2 - g3 + bo;
                        }
                    }
                }
            }
        }
    });
    y
}
}

/// `B^T d` of F(4,3), for one column of six values.
#[inline(always)]
fn bt6(d: [f32; 6]) -> [f32; 6] {
    [
        4.0 * d[0] - 5.0 * d[2] + d[4],
        -4.0 * (d[1] + d[2]) + d[3] + d[4],
        4.0 * (d[1] - d[2]) - d[3] + d[4],
        2.0 * (d[3] - d[1]) - d[2] + d[4],
        2.0 * (d[1] - d[3]) - d[2] + d[4],
        4.0 * d[1] - 5.0 * d[3] + d[5],
    ]
}

/// `A^T m` of F(4,3), for one column of six values.
#[inline(always)]
fn at6(m: [f32; 6]) -> [f32; 4] {
    let (s12, d12, s34, d34) = (m[1] + m[2], m[1] - m[2], m[3] + m[4], m[3] - m[4]);
    [m[0] + s12 + s34, d12 + 2.0 * d34, s12 + 4.0 * s34, d12 + 8.0 * d34 + m[5]]
}

/// `U[(a, e), o, c] = (G k[o, c] G^T)[a, e]` of F(4,3).
fn kernel_transform43(k: &Array4<f32>) -> Vec<f32> {
    let (o, c, _, _) = k.dim();
    let g3 = |v: [f32; 3]| {
        [
            v[0] / 4.0,
            -(v[0] + v[1] + v[2]) / 6.0,
            -(v[0] - v[1] + v[2]) / 6.0,
            v[0] / 24.0 + v[1] / 12.0 + v[2] / 6.0,
            v[0] / 24.0 - v[1] / 12.0 + v[2] / 6.0,
            v[2],
        ]
    };
    let mut u = vec![0f32; 36 * o * c];
    for oo in 0..o {
        for cc in 0..c {
            let cols: Vec<[f32; 6]> =
                (0..3).map(|s| g3([k[[oo, cc, 0, s]], k[[oo, cc, 1, s]], k[[oo, cc, 2, s]]])).collect();
            for a in 0..6 {
                let v = g3([cols[0][a], cols[1][a], cols[2][a]]);
                for (e, v) in v.iter().enumerate() {
                    u[((a * 6 + e) * o + oo) * c + cc] = *v;
                }
            }
        }
    }
    u
}

common::twin! {
/// Winograd F(4,3) by hand, valid, with a bias: as `winograd_hand` with
/// 4x4 output tiles (6x6 input tiles), 36 products per block.
fn winograd43_hand(x: &Array4<f32>, k: &Array4<f32>, bias: &Array1<f32>, rows: usize) -> Array4<f32> {
    let u = kernel_transform43(k);
    let o = k.dim().0;
    let (n, c, h, w) = x.dim();
    let (oh, ow) = (h - 2, w - 2);
    let (tp, tq) = (oh.div_ceil(4), ow.div_ceil(4));
    let mut y = Array4::<f32>::zeros((n, o, oh, ow));
    let xs = x.as_slice().expect("standard layout");
    let blocks = tp.div_ceil(rows);
    let out = Out(y.as_slice_mut().expect("standard layout").as_mut_ptr());
    let ew = 4 * tq + 2;
    (0..n * blocks).into_par_iter().for_each(|task| {
        let out = out;
        let (nn, bl) = (task / blocks, task % blocks);
        let (r0, r1) = (bl * rows, (bl * rows + rows).min(tp));
        let nt = (r1 - r0) * tq;
        let mut v = vec![0f32; 36 * c * nt];
        let mut m = vec![0f32; 36 * o * nt];
        let img = &xs[nn * c * h * w..][..c * h * w];
        let mut d = vec![0f32; 6 * ew];
        let mut e = vec![0f32; 6 * ew];
        for cc in 0..c {
            let plane = &img[cc * h * w..][..h * w];
            for ti in r0..r1 {
                for a in 0..6 {
                    let row = 4 * ti + a;
                    let dst = &mut d[a * ew..][..ew];
                    if row < h {
                        dst[..w].copy_from_slice(&plane[row * w..][..w]);
                        dst[w..].fill(0.0);
                    } else {
                        dst.fill(0.0);
                    }
                }
                for q in 0..ew {
                    let col = bt6([d[q], d[ew + q], d[2 * ew + q], d[3 * ew + q], d[4 * ew + q], d[5 * ew + q]]);
                    for (a, t) in col.iter().enumerate() {
                        e[a * ew + q] = *t;
                    }
                }
                let base = (ti - r0) * tq;
                for a in 0..6 {
                    let er = &e[a * ew..][..ew];
                    for tj in 0..tq {
                        let t = &er[4 * tj..][..6];
                        let row = bt6([t[0], t[1], t[2], t[3], t[4], t[5]]);
                        for (b, val) in row.iter().enumerate() {
                            v[((a * 6 + b) * c + cc) * nt + base + tj] = *val;
                        }
                    }
                }
            }
        }
        for ab in 0..36 {
            // SAFETY: the operands are `o x c`, `c x nt` and `o x nt`
            // row-major blocks inside `u`, `v` and `m`.
            unsafe {
                matrixmultiply::sgemm(
                    o,
                    c,
                    nt,
                    1.0,
                    u[ab * o * c..].as_ptr(),
                    c as isize,
                    1,
                    v[ab * c * nt..].as_ptr(),
                    nt as isize,
                    1,
                    0.0,
                    m[ab * o * nt..].as_mut_ptr(),
                    nt as isize,
                    1,
                );
            }
        }
        // f[a, b, tj]: `A^T` applied down the tile's columns.
        let mut f = vec![0f32; 24 * tq];
        for oo in 0..o {
            let bo = bias[oo];
            for ti in r0..r1 {
                let base = (ti - r0) * tq;
                for b in 0..6 {
                    let mm = |a: usize| &m[((a * 6 + b) * o + oo) * nt + base..][..tq];
                    let ms = [mm(0), mm(1), mm(2), mm(3), mm(4), mm(5)];
                    for tj in 0..tq {
                        let col = at6([ms[0][tj], ms[1][tj], ms[2][tj], ms[3][tj], ms[4][tj], ms[5][tj]]);
                        for (a, val) in col.iter().enumerate() {
                            f[(a * 6 + b) * tq + tj] = *val;
                        }
                    }
                }
                for a in 0..4 {
                    let i = 4 * ti + a;
                    if i >= oh {
                        continue;
                    }
                    let fa = &f[a * 6 * tq..][..6 * tq];
                    // SAFETY: row `i` of output plane `(nn, oo)`, written by
                    // this task alone.
                    let yrow = unsafe { std::slice::from_raw_parts_mut(out.0.add(((nn * o + oo) * oh + i) * ow), ow) };
                    for (tj, quad) in yrow.chunks_mut(4).enumerate() {
                        let g = at6([fa[tj], fa[tq + tj], fa[2 * tq + tj], fa[3 * tq + tj], fa[4 * tq + tj], fa[5 * tq + tj]]);
                        for (dst, val) in quad.iter_mut().zip(g) {
                            *dst = val + bo;
                        }
                    }
                }
            }
        }
    });
    y
}
}

/// The output pixels along a row one call of `direct_tile` computes.
const PIX: usize = 6;

/// `PX` output pixels `(i, j0..j0 + PX)` of 16 filters, the whole sum over
/// the channel blocks and the 3x3 window in registers: `xb` is the image
/// as `[C / 8][H][W][8]`, `kb` the filter block as `[C / 8][3][3][8][16]`.
#[inline(always)]
fn direct_tile<const PX: usize>(
    xb: &[f32],
    kb: &[f32],
    cbs: usize,
    h: usize,
    w: usize,
    i: usize,
    j0: usize,
) -> [[f32; 16]; PX] {
    let mut acc = [[0f32; 16]; PX];
    for cb in 0..cbs {
        for r in 0..3 {
            let xrow = &xb[(cb * h + i + r) * w * 8..][..w * 8];
            for s in 0..3 {
                let wk = &kb[((cb * 3 + r) * 3 + s) * 128..][..128];
                let xs = &xrow[(j0 + s) * 8..][..PX * 8];
                for ci in 0..8 {
                    let wv: &[f32; 16] = wk[ci * 16..][..16].try_into().expect("16 filters");
                    for p in 0..PX {
                        let xv = xs[p * 8 + ci];
                        for l in 0..16 {
                            // FMA in the AVX2 twin (this bench's machines have it).
                            acc[p][l] = xv.mul_add(wv[l], acc[p][l]);
                        }
                    }
                }
            }
        }
    }
    acc
}

common::twin! {
/// A direct convolution over blocked channels (NCHWc-style), valid, with a
/// bias: the input reordered to blocks of 8 channels, the filters to
/// blocks of 16, and per image and filter block (in parallel) each output
/// row computed `PIX` pixels at a time by `direct_tile`, written to the
/// NCHW output with the bias.
fn direct_hand(x: &Array4<f32>, k: &Array4<f32>, bias: &Array1<f32>) -> Array4<f32> {
    let (n, c, h, w) = x.dim();
    let o = k.dim().0;
    let (oh, ow) = (h - 2, w - 2);
    let (cbs, obs) = (c.div_ceil(8), o.div_ceil(16));
    let mut xb = vec![0f32; n * cbs * h * w * 8];
    xb.par_chunks_mut(cbs * h * w * 8).enumerate().for_each(|(nn, img)| {
        for cc in 0..c {
            let (cb, ci) = (cc / 8, cc % 8);
            for (q, v) in x.slice(s![nn, cc, .., ..]).iter().enumerate() {
                img[(cb * h * w + q) * 8 + ci] = *v;
            }
        }
    });
    let mut kb = vec![0f32; obs * cbs * 9 * 128];
    for oo in 0..o {
        for cc in 0..c {
            for r in 0..3 {
                for sx in 0..3 {
                    let at = ((((oo / 16) * cbs + cc / 8) * 3 + r) * 3 + sx) * 128 + (cc % 8) * 16 + oo % 16;
                    kb[at] = k[[oo, cc, r, sx]];
                }
            }
        }
    }
    let mut y = Array4::<f32>::zeros((n, o, oh, ow));
    let out = Out(y.as_mut_ptr());
    (0..n * obs).into_par_iter().for_each(|task| {
        let out = out;
        let (nn, ob) = (task / obs, task % obs);
        let img = &xb[nn * cbs * h * w * 8..][..cbs * h * w * 8];
        let kblk = &kb[ob * cbs * 9 * 128..][..cbs * 9 * 128];
        let filters = 16.min(o - ob * 16);
        let store = |acc: &[[f32; 16]], i: usize, j0: usize| {
            for l in 0..filters {
                let oo = ob * 16 + l;
                // SAFETY: row `i` of plane `(nn, oo)`, columns `j0..j0 +
                // acc.len()`, written by this task alone.
                let row = unsafe { std::slice::from_raw_parts_mut(out.0.add(((nn * o + oo) * oh + i) * ow + j0), acc.len()) };
                for (d, a) in row.iter_mut().zip(acc) {
                    *d = a[l] + bias[oo];
                }
            }
        };
        for i in 0..oh {
            let mut j0 = 0;
            while j0 + PIX <= ow {
                store(&direct_tile::<PIX>(img, kblk, cbs, h, w, i, j0), i, j0);
                j0 += PIX;
            }
            while j0 < ow {
                store(&direct_tile::<1>(img, kblk, cbs, h, w, i, j0), i, j0);
                j0 += 1;
            }
        }
    });
    y
}
}

common::twin! {
/// im2col + GEMM per image and block of output rows (in parallel), the
/// block's columns at most `floats` values so that they stay in the core's
/// L2 while matrixmultiply packs them; the product is written into the
/// block's rows of `y` (row stride `oh * ow`) over the bias.
fn conv_gemm_rows(x: &Array4<f32>, k: &Array4<f32>, bias: &Array1<f32>, floats: usize) -> Array4<f32> {
    let (n, c, h, w) = x.dim();
    let o = k.dim().0;
    let (oh, ow) = (h - 2, w - 2);
    let rows = (floats / (c * 9 * ow)).clamp(1, oh);
    let blocks = oh.div_ceil(rows);
    let km = k.as_slice().expect("standard layout kernel");
    let xs = x.as_slice().expect("standard layout");
    let mut y = Array4::<f32>::zeros((n, o, oh, ow));
    for (oo, mut plane) in y.axis_iter_mut(Axis(1)).enumerate() {
        plane.fill(bias[oo]);
    }
    let out = Out(y.as_mut_ptr());
    (0..n * blocks).into_par_iter().for_each(|task| {
        let out = out;
        let (nn, bl) = (task / blocks, task % blocks);
        let (i0, i1) = (bl * rows, (bl * rows + rows).min(oh));
        let cols_n = (i1 - i0) * ow;
        let mut cols = vec![0f32; c * 9 * cols_n];
        let img = &xs[nn * c * h * w..][..c * h * w];
        for (row, dst) in cols.chunks_mut(cols_n).enumerate() {
            let (cc, r, s) = (row / 9, row / 3 % 3, row % 3);
            for i in i0..i1 {
                dst[(i - i0) * ow..][..ow].copy_from_slice(&img[(cc * h + i + r) * w + s..][..ow]);
            }
        }
        // SAFETY: `km` is `o x 9c`, `cols` `9c x cols_n`, and the output
        // block rows `i0..i1` of image `nn`, written by this task alone.
        unsafe {
            matrixmultiply::sgemm(
                o,
                c * 9,
                cols_n,
                1.0,
                km.as_ptr(),
                (c * 9) as isize,
                1,
                cols.as_ptr(),
                cols_n as isize,
                1,
                1.0,
                out.0.add((nn * o * oh + i0) * ow),
                (oh * ow) as isize,
                1,
            );
        }
    });
    y
}
}

fn data4(a: usize, b: usize, c: usize, d: usize, seed: u64) -> Array4<f32> {
    let v = common::data(a * b * c * d, seed).into_iter().map(|v| v as f32).collect();
    Array4::from_shape_vec((a, b, c, d), v).expect("matching length")
}

fn close(a: &Array4<f32>, b: &Array4<f32>, what: &str) {
    assert_eq!(a.shape(), b.shape(), "{what}");
    let scale = b.iter().fold(1.0f32, |m, v| m.max(v.abs()));
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() <= 1e-3 * scale, "{what}: {x} vs {y}");
    }
}

fn main() {
    let runs = 9;
    // Tile rows per task of the hand-written form (`WINOGRAD_ROWS`).
    let rows: usize = std::env::var("WINOGRAD_ROWS").ok().and_then(|v| v.parse().ok()).unwrap_or(8);
    let rows43 = rows.div_ceil(2);
    for (n, c, h, o) in [(8, 32, 32, 64), (8, 64, 56, 64), (8, 128, 28, 128)] {
        let x = data4(n, c, h, h, 1);
        let k = data4(o, c, 3, 3, 2);
        let b: Array1<f32> = common::data(o, 3).into_iter().map(|v| v as f32).collect();
        let want = conv_gemm(&x, &k, &b);
        close(&conv(&x, &k, &b).expect("conv"), &want, "conv");
        close(&conv_winograd(&x, &k, &b).expect("conv_winograd"), &want, "conv_winograd");
        close(&conv_winograd_explicit(&x, &k, &b).expect("conv_winograd_explicit"), &want, "conv_winograd_explicit");
        close(&winograd_hand(&x, &k, &b, rows), &want, "winograd_hand");
        close(&conv_gemm_rows(&x, &k, &b, 1 << 17), &want, "conv_gemm_rows");
        close(&direct_hand(&x, &k, &b), &want, "direct_hand");
        let f43 = winograd43_hand(&x, &k, &b, rows43);
        close(&f43, &want, "winograd43_hand");
        let err43 = f43.iter().zip(&want).fold(0f32, |m, (a, b)| m.max((a - b).abs()));
        let err23 = winograd_hand(&x, &k, &b, rows).iter().zip(&want).fold(0f32, |m, (a, b)| m.max((a - b).abs()));
        println!("winograd N={n} C={c} {h}x{h} O={o}: largest difference from im2col + GEMM, F(2,3) {err23:.2e}, F(4,3) {err43:.2e}");
        let mut sides: [(&str, Box<dyn FnMut()>, Vec<f64>); 9] = [
            (
                "einlang conv (im2col + GEMM)",
                Box::new(|| drop(black_box(conv(black_box(&x), &k, &b).unwrap()))),
                vec![],
            ),
            (
                "einlang Winograd definitions",
                Box::new(|| drop(black_box(conv_winograd(black_box(&x), &k, &b).unwrap()))),
                vec![],
            ),
            (
                "einlang Winograd, transforms written out",
                Box::new(|| drop(black_box(conv_winograd_explicit(black_box(&x), &k, &b).unwrap()))),
                vec![],
            ),
            (
                "einlang Winograd written out, per image (caller's loop)",
                Box::new(|| {
                    let mut y = Array4::<f32>::zeros(want.dim());
                    y.axis_iter_mut(Axis(0)).into_par_iter().enumerate().for_each(|(i, img)| {
                        let img = img.insert_axis(Axis(0));
                        conv_winograd_explicit_into(x.slice(s![i..i + 1, .., .., ..]), &k, &b, img).unwrap();
                    });
                    drop(black_box(y))
                }),
                vec![],
            ),
            ("Winograd by hand", Box::new(|| drop(black_box(winograd_hand(black_box(&x), &k, &b, rows)))), vec![]),
            (
                "direct, blocked channels (NCHWc-style) by hand",
                Box::new(|| drop(black_box(direct_hand(black_box(&x), &k, &b)))),
                vec![],
            ),
            (
                "Winograd F(4,3) by hand",
                Box::new(|| drop(black_box(winograd43_hand(black_box(&x), &k, &b, rows43)))),
                vec![],
            ),
            (
                "im2col + GEMM by hand, blocks of output rows (512 KB of columns)",
                Box::new(|| drop(black_box(conv_gemm_rows(black_box(&x), &k, &b, 1 << 17)))),
                vec![],
            ),
            ("im2col + GEMM by hand", Box::new(|| drop(black_box(conv_gemm(black_box(&x), &k, &b)))), vec![]),
        ];
        for (_, f, _) in sides.iter_mut() {
            f();
        }
        for _ in 0..runs {
            for (_, f, t) in sides.iter_mut() {
                let start = Instant::now();
                f();
                t.push(start.elapsed().as_secs_f64());
            }
        }
        let flops = 2.0 * (n * o * (h - 2) * (h - 2) * c * 9) as f64;
        let base = sides[0].2.clone();
        for (label, _, t) in sides.iter_mut() {
            let mut ratios: Vec<f64> = t.iter().zip(&base).map(|(a, b)| a / b).collect();
            ratios.sort_by(f64::total_cmp);
            t.sort_by(f64::total_cmp);
            let med = t[runs / 2];
            println!(
                "winograd N={n} C={c} {h}x{h} O={o} 3x3 valid + bias, {label}: {:.2} ms ({:.1} GFLOP/s direct-equivalent), {:.2}x of einlang conv (median of paired ratios)",
                med * 1e3,
                flops / med / 1e9,
                ratios[runs / 2]
            );
        }
    }
}
