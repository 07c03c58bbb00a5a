//! `opt::half`: half-precision arithmetic computed in f32 and rounded
//! where values are stored, shown on optimized IR.

use expect_test::{expect, Expect};

use crate::ir;
use crate::test_support::lowered;

fn check(src: &str, expect: Expect) {
    match super::optimize(lowered(src)) {
        Ok(p) => expect.assert_eq(&ir::pretty::pretty_program(&p)),
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn an_expression_computes_in_f32_and_rounds_once_when_stored() {
    check(
        "use std::math::exp; pub fn f(x: [f16; N], a: f16) -> [f16; N] { let y[i] = exp(x[i] * a) - 1; y }",
        expect![[r#"
            pub fn f(x: tensor<f16, 1>, a: f16) -> tensor<f16, 1> {
                bind N = x.shape[0]
                tensor y[i in 0..N]: f16 (cost 23) = (exp(((read x[i] unchecked) as f32) * (a as f32)) - 1f32) as f16
                result y
            }
        "#]],
    );
}

#[test]
fn reductions_accumulate_in_f32_and_comparisons_compare_f32_values() {
    check(
        "pub fn f(x: [bf16; N]) -> (bf16, i64, bool) { (sum[i](x[i]) / 2, argmax[i](x[i]), x[0] < x[1]) }",
        expect![[r#"
            pub fn f(x: tensor<bf16, 1>) -> (bf16, i64, bool) {
                bind N = x.shape[0]
                result (((sum[i in 0..N] (read x[i] unchecked) as f32) / 2f32) as bf16, argmax[i_2 in 0..N] (read x[i_2] unchecked) as f32, ((read x[0i64] checked) as f32) < ((read x[1i64] checked) as f32))
            }
        "#]],
    );
}

#[test]
fn casts_round_once_from_the_value_they_convert() {
    check(
        "pub fn f(x: [f64; N], k: i32) -> ([f16; N], f32, i32, bf16) { let h[i] = x[i] as f16; (h, h[0] as f32 * 2.0, h[0] as i32, h[0] as bf16) }",
        expect![[r#"
            pub fn f(x: tensor<f64, 1>, k: i32) -> (tensor<f16, 1>, f32, i32, bf16) {
                bind N = x.shape[0]
                tensor h[i in 0..N]: f16 (cost 3) = (read x[i] unchecked) as f16
                result (h, ((read h[0i64] checked) as f32) * 2.0f32, ((read h[0i64] checked) as f32) as i32, ((read h[0i64] checked) as f32) as bf16)
            }
        "#]],
    );
}

#[test]
fn a_product_of_half_values_is_a_gemm_of_them() {
    check(
        "pub fn f(a: [f16; M, K], b: [f16; K, N]) -> [f16; M, N] { let c[i, j] = sum[k](a[i, k] * b[k, j]); c }",
        expect![[r#"
            pub fn f(a: tensor<f16, 2>, b: tensor<f16, 2>) -> tensor<f16, 2> {
                bind M = a.shape[0]
                bind K = a.shape[1]
                bind N = b.shape[1]
                check b.shape[0] == K ("K")
                gemm c = a[0, 1] x b[0, 1] (m M, n N, k K): f16
                  reference tensor c[i in 0..M, j in 0..N]: f16 (cost 513) = (sum[k in 0..K] ((read a[i, k] unchecked) as f32) * ((read b[k, j] unchecked) as f32)) as f16
                result c
            }
        "#]],
    );
}

#[test]
fn functions_without_half_values_are_left_alone() {
    let src = "pub fn f(x: [f32; N]) -> f32 { let y[i] = x[i] * 2.0; sum[i](y[i]) }";
    let mut p = match super::optimize(lowered(src)) {
        Ok(p) => p,
        Err(e) => panic!("{e}"),
    };
    let before = p.clone();
    for f in &mut p.fns {
        super::half::run(f);
    }
    assert!(p == before);
}
