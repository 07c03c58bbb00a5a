//! `opt::slices` tests: chains of batched products and row kernels, as
//! optimized IR.

use expect_test::{expect, Expect};

use crate::ir;
use crate::test_support::lowered;

fn optimized(src: &str) -> String {
    match super::optimize(lowered(src)) {
        Ok(p) => ir::pretty::pretty_program(&p),
        Err(e) => panic!("{e}"),
    }
}

fn check(src: &str, expect: Expect) {
    expect.assert_eq(&optimized(src));
}

#[test]
fn attention_runs_per_head_with_the_softmax_rows_inside() {
    check(
        "pub fn attention(q: [f32; H, N, D], k: [f32; H, N, D], v: [f32; H, N, D]) -> [f32; H, N, D] {
            let s[h, i, j] = sum[d](q[h, i, d] * k[h, j, d]) / 8.0;
            let m[h, i] = max[j](s[h, i, j]);
            let e[h, i, j] = std::math::exp(s[h, i, j] - m[h, i]);
            let z[h, i] = sum[j](e[h, i, j]);
            let y[h, i, d] = sum[j](e[h, i, j] * v[h, j, d]) / z[h, i];
            y
        }",
        expect![[r#"
            pub fn attention(q: tensor<f32, 3>, k: tensor<f32, 3>, v: tensor<f32, 3>) -> tensor<f32, 3> {
                bind H = q.shape[0]
                bind N = q.shape[1]
                bind D = q.shape[2]
                check k.shape[0] == H ("H")
                check k.shape[1] == N ("N")
                check k.shape[2] == D ("D")
                check v.shape[0] == H ("H")
                check v.shape[1] == N ("N")
                check v.shape[2] == D ("D")
                rows of y, once per h_5:
                    gemm s = q[0, 1, 2] x k[0, 2, 1] * 0.125f32 (one batch h_5, m N, n N, k D): f32
                      reference tensor s[i in 0..N, j in 0..N]: f32 (cost 643) = (sum[d in 0..D] (read q[h_5, i, d] unchecked) * (read k[h_5, j, d] unchecked)) / 8.0f32
                    rows of e, once per i_3:
                        let m: f32 = max[j_2 in 0..N] read s[i_3, j_2] unchecked
                        tensor e[i_3 in 0..N, j_3 in 0..N]: f32 (cost 27) = exp((read s[i_3, j_3] unchecked) - m)
                    gemm y_mm = e[0, 1] x v[0, 1, 2] (one batch h_5, m N, n D, k N): f32
                      reference tensor y_mm[i_6 in 0..N, d_3 in 0..D]: f32 (cost 577) = sum[j_5 in 0..N] (read e[i_6, j_5] unchecked) * (read v[h_5, j_5, d_3] unchecked)
                    tensor z[i_4 in 0..N]: f32 (cost 257) = sum[j_4 in 0..N] read e[i_4, j_4] unchecked
                    tensor y[h_5 in 0..H, i_5 in 0..N, d_2 in 0..D]: f32 (cost 1258) = (read y_mm[i_5, d_2] unchecked) / (read z[i_5] unchecked)
                result y
            }
        "#]],
    );
}

#[test]
fn operands_with_the_batch_axis_second_are_read_at_the_batch() {
    check(
        "pub fn heads(x: [f64; N, H, D], w: [f64; H, D, F], u: [f64; H, F, D]) -> [f64; H, N, D] {
            let a[h, i, f] = sum[d](x[i, h, d] * w[h, d, f]);
            let t[h, i, f] = std::math::tanh(a[h, i, f]) + 1.0;
            let y[h, i, d] = sum[f](t[h, i, f] * u[h, f, d]) - x[i, h, d];
            y
        }",
        expect![[r#"
            pub fn heads(x: tensor<f64, 3>, w: tensor<f64, 3>, u: tensor<f64, 3>) -> tensor<f64, 3> {
                bind N = x.shape[0]
                bind H = x.shape[1]
                bind D = x.shape[2]
                bind F = w.shape[2]
                check w.shape[0] == H ("H")
                check w.shape[1] == D ("D")
                check u.shape[0] == H ("H")
                check u.shape[1] == F ("F")
                check u.shape[2] == D ("D")
                rows of y, once per h_3:
                    gemm a = x[1, 0, 2] x w[0, 1, 2] (one batch h_3, m N, n F, k D): f64
                      reference tensor a[i in 0..N, f in 0..F]: f64 (cost 641) = sum[d in 0..D] (read x[i, h_3, d] unchecked) * (read w[h_3, d, f] unchecked)
                    tensor t[i_2 in 0..N, f_2 in 0..F]: f64 (cost 22) = tanh(read a[i_2, f_2] unchecked) + 1.0f64
                    gemm y_mm = t[0, 1] x u[0, 1, 2] (one batch h_3, m N, n D, k F): f64
                      reference tensor y_mm[i_4 in 0..N, d_3 in 0..D]: f64 (cost 577) = sum[f_3 in 0..F] (read t[i_4, f_3] unchecked) * (read u[h_3, f_3, d_3] unchecked)
                    tensor y[h_3 in 0..H, i_3 in 0..N, d_2 in 0..D]: f64 (cost 1248) = (read y_mm[i_3, d_2] unchecked) - (read x[i_3, h_3, d_2] unchecked)
                result y
            }
        "#]],
    );
}

#[test]
fn an_intermediate_read_elsewhere_or_across_batches_stays_whole() {
    // `e` is a result too: it heads the first part of the chain, and the
    // second product reads it whole.
    let text = optimized(
        "pub fn att(q: [f64; H, N, D], k: [f64; H, N, D], v: [f64; H, N, D]) -> ([f64; H, N, D], [f64; H, N, N]) {
            let s[h, i, j] = sum[d](q[h, i, d] * k[h, j, d]);
            let e[h, i, j] = std::math::exp(s[h, i, j]);
            let y[h, i, d] = sum[j](e[h, i, j] * v[h, j, d]) * 2.0;
            (y, e)
        }",
    );
    assert!(text.contains("rows of e, once per"), "{text}");
    assert!(text.contains("gemm y = e[0, 1, 2] x v[0, 1, 2] * 2.0f64 (batch H,"), "{text}");
    // The scores' maximum over the heads reads `s` across batches.
    let text = optimized(
        "pub fn across(q: [f64; H, N, D], k: [f64; H, N, D], v: [f64; H, N, D]) -> [f64; H, N, D] {
            let s[h, i, j] = sum[d](q[h, i, d] * k[h, j, d]);
            let g[i, j] = max[h](s[h, i, j]);
            let e[h, i, j] = std::math::exp(s[h, i, j] - g[i, j]);
            let y[h, i, d] = sum[j](e[h, i, j] * v[h, j, d]) - 1.0;
            y
        }",
    );
    // `s` and `g` stay whole; `e` and the second product still run per
    // head, reading them at the head.
    assert!(text.contains("\n    gemm s = q[0, 1, 2] x k[0, 2, 1] (batch H,"), "{text}");
    assert!(text.contains("\n    tensor g["), "{text}");
    assert!(text.contains("gemm y_mm = e[0, 1] x v[0, 1, 2] (one batch"), "{text}");
}

#[test]
fn a_chain_without_a_product_is_left_to_rows() {
    let text = optimized(
        "pub fn soft(x: [f32; H, N, M]) -> [f32; H, N, M] {
            let m[h, i] = max[j](x[h, i, j]);
            let e[h, i, j] = std::math::exp(x[h, i, j] - m[h, i]);
            let t[h, i, j] = e[h, i, j] * 2.0;
            t
        }",
    );
    assert!(!text.contains("gemm"), "{text}");
}
