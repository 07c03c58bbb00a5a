//! GEMM pass tests: programs lowered and optimized, printed as IR. A
//! program the pass must leave alone is compared with its lowered IR.

use expect_test::{expect, Expect};

use crate::ir;
use crate::test_support::lowered;

fn optimized(src: &str) -> ir::Program {
    match super::optimize(lowered(src)) {
        Ok(p) => p,
        Err(e) => panic!("{e}"),
    }
}

/// The optimized IR of `src`.
fn check(src: &str, expect: Expect) {
    expect.assert_eq(&ir::pretty::pretty_program(&optimized(src)));
}

/// `src` has no GEMM: the passes leave its lowered IR as it is.
fn check_unchanged(src: &str) {
    let before = lowered(src);
    let after = optimized(src);
    assert_eq!(ir::pretty::pretty_program(&after), ir::pretty::pretty_program(&before));
    assert!(after == before);
}

#[test]
fn whole_definition_is_the_reference() {
    check(
        "pub fn mm(a: [f32; M, K], b: [f32; K, N]) -> [f32; M, N] { let c[i, j] = sum[k](a[i, k] * b[k, j]); c }",
        expect![[r#"
            pub fn mm(a: tensor<f32, 2>, b: tensor<f32, 2>) -> tensor<f32, 2> {
                bind M = a.shape[0]
                bind K = a.shape[1]
                bind N = b.shape[1]
                check b.shape[0] == K ("K")
                gemm c = a[0, 1] x b[0, 1] (m M, n N, k K): f32
                  reference tensor c[i in 0..M, j in 0..N]: f32 (cost 513) = sum[k in 0..K] (read a[i, k] unchecked) * (read b[k, j] unchecked)
                result c
            }
        "#]],
    );
}

#[test]
fn batched_with_permuted_operands() {
    check(
        "pub fn bmm(a: [f64; B, K, M], b: [f64; B, N, K]) -> [f64; B, M, N] {
            let c[q, i, j] = sum[k](b[q, j, k] * a[q, k, i]);
            c
        }",
        expect![[r#"
            pub fn bmm(a: tensor<f64, 3>, b: tensor<f64, 3>) -> tensor<f64, 3> {
                bind B = a.shape[0]
                bind K = a.shape[1]
                bind M = a.shape[2]
                bind N = b.shape[1]
                check b.shape[0] == B ("B")
                check b.shape[2] == K ("K")
                gemm c = a[0, 2, 1] x b[0, 2, 1] (batch B, m M, n N, k K): f64
                  reference tensor c[q in 0..B, i in 0..M, j in 0..N]: f64 (cost 641) = sum[k in 0..K] (read b[q, j, k] unchecked) * (read a[q, k, i] unchecked)
                result c
            }
        "#]],
    );
}

/// A product inside a where-binding gets its own temporary; the definition
/// reads it and its cost is recorded again.
#[test]
fn product_in_a_binding_gets_a_temporary() {
    check(
        "pub fn dense(x: [f32; B, I], w: [f32; I, O], b: [f32; O]) -> [f32; B, O] {
            let y[n, o] = max(z, 0.0) where z = sum[i](x[n, i] * w[i, o]) + b[o];
            y
        }",
        expect![[r#"
            pub fn dense(x: tensor<f32, 2>, w: tensor<f32, 2>, b: tensor<f32, 1>) -> tensor<f32, 2> {
                bind B = x.shape[0]
                bind I = x.shape[1]
                bind O = w.shape[1]
                check w.shape[0] == I ("I")
                check b.shape[0] == O ("O")
                gemm y_mm = x[0, 1] x w[0, 1] (m B, n O, k I): f32
                  reference tensor y_mm[n_2 in 0..B, o_2 in 0..O]: f32 (cost 513) = sum[i in 0..I] (read x[n_2, i] unchecked) * (read w[i, o_2] unchecked)
                tensor y[n in 0..B, o in 0..O]: f32 (cost 12) = max((read y_mm[n, o] unchecked) + (read b[o] unchecked), 0.0f32)
                result y
            }
        "#]],
    );
}

/// Of two products, the last one runs as the definition's GEMM.
#[test]
fn last_product_is_chosen() {
    check(
        "pub fn two(a: [f32; M, K], b: [f32; K, N]) -> [f32; M, N] {
            let c[i, j] = sum[k](a[i, k] * b[k, j]) + sum[l](a[i, l] * b[l, j]) * 2.0;
            c
        }",
        expect![[r#"
            pub fn two(a: tensor<f32, 2>, b: tensor<f32, 2>) -> tensor<f32, 2> {
                bind M = a.shape[0]
                bind K = a.shape[1]
                bind N = b.shape[1]
                check b.shape[0] == K ("K")
                gemm c_mm = a[0, 1] x b[0, 1] * 2.0f32 (m M, n N, k K): f32
                  reference tensor c_mm[i_2 in 0..M, j_2 in 0..N]: f32 (cost 515) = (sum[l in 0..K] (read a[i_2, l] unchecked) * (read b[l, j_2] unchecked)) * 2.0f32
                tensor c_cols[i_3 in 0..M, k in 0..K]: f32 (cost 3) = read a[i_3, k] unchecked
                tensor c_kern[k_2 in 0..K, j_3 in 0..N]: f32 (cost 3) = read b[k_2, j_3] unchecked
                reshape c_cols_m = c_cols as [M, K]: f32
                reshape c_kern_m = c_kern as [K, N]: f32
                gemm c_prod_m = c_cols_m[0, 1] x c_kern_m[0, 1] (m M, n N, k K): f32
                  reference tensor c_prod_m[m in 0..M, n in 0..N]: f32 (cost 513) = sum[k_3 in 0..K] (read c_cols_m[m, k_3] unchecked) * (read c_kern_m[k_3, n] unchecked)
                reshape c_prod = c_prod_m as [M, N]: f32
                tensor c[i in 0..M, j in 0..N]: f32 (cost 7) = (read c_prod[i, j] unchecked) + (read c_mm[i, j] unchecked)
                result c
            }
        "#]],
    );
}

/// A product inside whole-tensor arithmetic in the value is found in the
/// elementwise temporary.
#[test]
fn product_inside_a_temporary() {
    check(
        "fn first(x: [f32; 3]) -> f32 { x[0] }
        pub fn nested(a: [f32; M, K], b: [f32; K, N], v: [f32; 3]) -> [f32; M, N] {
            let c[i, j] = first(v * sum[k](a[i, k] * b[k, j]));
            c
        }",
        expect![[r#"
            fn first(x: tensor<f32, 1>) -> f32 {
                check x.shape[0] == 3 ("3")
                result read x[0i64] unchecked
            }

            pub fn nested(a: tensor<f32, 2>, b: tensor<f32, 2>, v: tensor<f32, 1>) -> tensor<f32, 2> {
                bind M = a.shape[0]
                bind K = a.shape[1]
                bind N = b.shape[1]
                check b.shape[0] == K ("K")
                check v.shape[0] == 3 ("3")
                gemm c_mm = a[0, 1] x b[0, 1] (m M, n N, k K): f32
                  reference tensor c_mm[i_2 in 0..M, j_2 in 0..N]: f32 (cost 513) = sum[k in 0..K] (read a[i_2, k] unchecked) * (read b[k, j_2] unchecked)
                tensor c[i in 0..M, j in 0..N]: f32 (cost 83) = first({
                    tensor tmp[i0 in 0..3]: f32 (cost 6) = (read v[i0] unchecked) * (read c_mm[i, j] unchecked)
                    tmp
                })
                result c
            }
        "#]],
    );
}

#[test]
fn a_user_guard_keeps_the_gemm() {
    check(
        "pub fn upper(a: [f32; M, K], b: [f32; K, N]) -> [f32; M, N] {
            let c[i, j] = sum[k](a[i, k] * b[k, j]) where i <= j;
            c
        }",
        expect![[r#"
            pub fn upper(a: tensor<f32, 2>, b: tensor<f32, 2>) -> tensor<f32, 2> {
                bind M = a.shape[0]
                bind K = a.shape[1]
                bind N = b.shape[1]
                check b.shape[0] == K ("K")
                gemm c_mm = a[0, 1] x b[0, 1] (m M, n N, k K): f32
                  reference tensor c_mm[i_2 in 0..M, j_2 in 0..N]: f32 (cost 513) = sum[k in 0..K] (read a[i_2, k] unchecked) * (read b[k, j_2] unchecked)
                tensor c[i in 0..M, j in 0..N]: f32 (cost 7) = (read c_mm[i, j] unchecked) where i <= j
                result c
            }
        "#]],
    );
}

/// A range that does not start at zero restricts the definition's domain.
#[test]
fn shifted_range_is_no_gemm() {
    check_unchanged(
        "pub fn shifted(a: [f32; M, K], b: [f32; K, N]) -> [f32; M, N] {
            let c[i in 1..M, j] = sum[k](a[i, k] * b[k, j]);
            c
        }",
    );
}

#[test]
fn integer_product_is_no_gemm() {
    check_unchanged(
        "pub fn mm(a: [i32; M, K], b: [i32; K, N]) -> [i32; M, N] { let c[i, j] = sum[k](a[i, k] * b[k, j]); c }",
    );
}

/// A contracted range that depends on the point (a triangular product) is
/// no matrix product, even with every read proven in bounds.
#[test]
fn point_dependent_range_is_no_gemm() {
    check_unchanged(
        "pub fn tri(a: [f32; N, N], b: [f32; N, N]) -> [f32; N, N] {
            let c[i, j] = sum[k in 0..i + 1](a[i, k] * b[k, j]);
            c
        }",
    );
}

#[test]
fn unproven_reads_are_no_gemm() {
    // The GEMM routine never reads `b` itself: packing copies it with its
    // reads checked (and only when the definition has points).
    let out = packed(
        "pub fn off(a: [f32; M, K], b: [f32; L, N]) -> [f32; M, N] {
            let c[i, j] = sum[k in 0..K](a[i, k] * b[k, j]);
            c
        }",
    );
    assert!(!out.contains("gemm c ="), "{out}");
    assert!(out.contains("= (read b[k_2, j_2] checked) where M > 0i64"), "{out}");
    assert!(out.contains("gemm c_prod_m = c_cols_m[0, 1] x c_kern_m[0, 1]"), "{out}");
}

/// The hoisting pass's output for `src`, checked to hold (or not) a
/// hoisted temporary.
fn hoisted(src: &str) -> String {
    after_pass(src, super::hoist::run)
}

/// The IR of `src` after the GEMM pass and packing.
fn packed(src: &str) -> String {
    let mut p = lowered(src);
    for f in &mut p.fns {
        super::gemm::run(f);
        super::pack::run(f);
    }
    if let Err(e) = ir::validate::validate(&p) {
        panic!("invalid after packing: {e}\n{}", ir::pretty::pretty_program(&p));
    }
    ir::pretty::pretty_program(&p)
}

#[test]
fn a_reduction_over_fewer_axes_is_computed_once_per_point_of_them() {
    // Row sums of softmax: once per row, not once per element.
    let out = hoisted("pub fn sm(e: [f32; N, C]) -> [f32; N, C] { let y[n, c] = e[n, c] / sum[k](e[n, k]); y }");
    assert!(
        out.contains("tensor y_red[n_2 in 0..N]: f32 (cost 257) = sum[k in 0..C] read e[n_2, k] unchecked"),
        "{out}"
    );
    assert!(out.contains("= (read e[n, c] unchecked) / (read y_red[n] unchecked)"), "{out}");
    // Column sums, the other axis.
    let out = hoisted("pub fn cs(x: [f64; N, M]) -> [f64; N, M] { let y[i, j] = x[i, j] - sum[r](x[r, j]); y }");
    assert!(out.contains("tensor y_red[j_2 in 0..M]: f64"), "{out}");
    // A reduction that reads no axis is a scalar `let`.
    let out = hoisted("pub fn nz(x: [f32; N]) -> [f32; N] { let y[i] = x[i] / sum[k](x[k]); y }");
    assert!(out.contains("let y_red: f32 = sum[k in 0..N] read x[k] unchecked"), "{out}");
}

#[test]
fn reductions_that_may_fail_or_depend_on_every_axis_stay() {
    // Every axis: nothing to save.
    check_unchanged(
        "pub fn mm(a: [f32; M, K], b: [f32; K, N]) -> [f32; M, N] { let c[i, j] = sum[k](a[i, k] * b[k, j] * 2.0); c }",
    );
    // Under a condition, which may be what proves its reads.
    check_unchanged(
        "pub fn g(x: [f32; N, M]) -> [f32; N, M] { let y[i, j] = if x[i, j] > 0.0 { x[i, j] / max[k](x[i, k]) } else { 0.0 }; y }",
    );
    // A read checked at run time may fail where the definition has no points.
    check_unchanged(
        "pub fn s(x: [f32; N, M], o: i64) -> [f32; N, M] { let y[i, j] = x[i, j] + sum[k in 0..M](x[i, k + o]); y }",
    );
    // Integer division may fail.
    check_unchanged("pub fn d(x: [i64; N, M]) -> [i64; N, M] { let y[i, j] = x[i, j] + sum[k](100 / x[i, k]); y }");
    // A definition with its own guard.
    check_unchanged(
        "pub fn w(x: [f32; N, M]) -> [f32; N, M] { let y[i, j] = x[i, j] / sum[k](x[i, k]) where i <= j; y }",
    );
}

/// Packing puts the longer run innermost: an output's rows after a
/// kernel's offsets for a convolution, the summed output positions last
/// for its kernel gradient. A convolution's product comes out in the
/// definition's own order: per image, the kernel (shared by every image)
/// times the image's columns.
#[test]
fn a_product_led_by_columns_is_batched_with_the_rows_shared() {
    // A 1x1 convolution: per image, the weights times the image's `[C,
    // H * W]` matrix, a view of `x` (no packed copy), written in `y`'s order.
    let out = packed(
        "pub fn conv1x1(x: [f32; N, C, H, W], k: [f32; O, C]) -> [f32; N, O, H, W] {
            let y[n, o, h, w] = sum[c](k[o, c] * x[n, c, h, w]);
            y
        }",
    );
    assert!(out.contains("reshape y_kern_m = y_kern as [N, C, H * W]"), "{out}");
    assert!(out.contains("gemm y_prod_m = y_cols_m[0, 1] x y_kern_m[0, 1, 2] (batch N, m O, n H * W, k C)"), "{out}");
    assert!(out.contains("reshape y = y_prod_m as [N, O, H, W]"), "{out}");
    // With a bias after it, the definition reads the product at its point.
    let out = packed(
        "pub fn conv1x1(x: [f32; N, C, L], k: [f32; O, C], b: [f32; O]) -> [f32; N, O, L] {
            let y[n, o, t] = sum[c](x[n, c, t] * k[o, c]) + b[o];
            y
        }",
    );
    assert!(out.contains("(batch N, m O, n L, k C)"), "{out}");
    assert!(out.contains("read y_prod[n, o, t] unchecked"), "{out}");
}

#[test]
fn packed_operands_keep_the_longer_run_innermost() {
    let out = packed(
        "pub fn conv(x: [f32; N, C, H, W], k: [f32; O, C, 3, 3]) -> [f32; N, O, H - 2, W - 2] {
            let y[n, o, i, j] = sum[c, r, s](x[n, c, i + r, j + s] * k[o, c, r, s]);
            y
        }",
    );
    assert!(
        out.contains("tensor y_cols[c in 0..C, r in 0..3, s in 0..3, n_2 in 0..N, i_2 in 0..i_len, j_2 in 0..j_len]"),
        "{out}"
    );
    assert!(out.contains("reshape y_cols_m = y_cols as [9 * C, N, i_len * j_len]"), "{out}");
    assert!(out.contains("gemm y_prod_m = y_kern_m[1, 0] x y_cols_m[1, 0, 2] (batch N, m O,"), "{out}");
    // The definition is the product as it is: its reshape defines `y`.
    assert!(out.contains("reshape y = y_prod_m as [N, O, i_len, j_len]"), "{out}");
    assert!(!out.contains("tensor y["), "{out}");
    // No leading rows: one product, still in the definition's order.
    let out = packed(
        "pub fn conv1(x: [f32; C, H, W], k: [f32; O, C, 3, 3]) -> [f32; O, H - 2, W - 2] {
            let y[o, i, j] = sum[c, r, s](x[c, i + r, j + s] * k[o, c, r, s]);
            y
        }",
    );
    assert!(out.contains("gemm y_prod_m = y_kern_m[1, 0] x y_cols_m[0, 1] (m O, n i_len * j_len"), "{out}");
    // Rows after the columns in another order: `[rows, cols]`, reordered.
    let out = packed(
        "pub fn conv2(x: [f32; N, C, H, W], k: [f32; O, C, 3, 3]) -> [f32; O, N, H - 2, W - 2] {
            let y[o, n, i, j] = sum[c, r, s](x[n, c, i + r, j + s] * k[o, c, r, s]);
            y
        }",
    );
    assert!(out.contains("gemm y_prod_m = y_kern_m[1, 0] x y_cols_m[0, 1] (m O, n N * i_len * j_len"), "{out}");
    let out = packed(
        "pub fn dk(x: [f32; N, C, H, W], dy: [f32; N, O, P, Q]) -> [f32; O, C, 3, 3] {
            let dk[o, c, r in 0..3, s in 0..3] = sum[n, i, j](dy[n, o, i, j] * x[n, c, i + r, j + s]);
            dk
        }",
    );
    assert!(out.contains("tensor dk_cols[c_2 in 0..C, r_2 in 0..3, s_2 in 0..3, n in 0..N, i in 0.."), "{out}");
    assert!(out.contains("gemm dk_prod_m = dk_cols_m[0, 1] x dk_kern_m[0, 1]"), "{out}");
}

/// A padded read that its guard keeps in bounds is unchecked in the packed
/// copy; a guard that does not bound it leaves it checked.
#[test]
fn a_guard_that_bounds_a_padded_read_unchecks_it() {
    let padded = |upper: &str| {
        packed(&format!(
            "pub fn conv(x: [f32; N, C, H, W], k: [f32; O, C, 3, 3]) -> [f32; N, O, H, W] {{
                let y[n, o, i in 0..H, j in 0..W] = sum[c, r, s](
                    if ih >= 0 && ih < {upper} && iw >= 0 && iw < W {{ x[n, c, ih, iw] * k[o, c, r, s] }} else {{ 0.0 }}
                    where ih = i + r - 1, iw = j + s - 1
                );
                y
            }}"
        ))
    };
    let out = padded("H");
    assert!(out.contains("{ read x[n_2, c, ih, iw] unchecked }"), "{out}");
    let out = padded("H + 1");
    assert!(out.contains("{ read x[n_2, c, ih, iw] checked }"), "{out}");
}

/// The IR of `src` after the one pass `pass` (and none other).
fn after_pass(src: &str, pass: fn(&mut ir::Function)) -> String {
    let mut p = lowered(src);
    for f in &mut p.fns {
        pass(f);
    }
    if let Err(e) = ir::validate::validate(&p) {
        panic!("invalid after the pass: {e}\n{}", ir::pretty::pretty_program(&p));
    }
    ir::pretty::pretty_program(&p)
}

fn check_hoist(src: &str, expect: Expect) {
    expect.assert_eq(&after_pass(src, super::hoist::run));
}

/// Softmax written inline: the maximum in the sum's body does not depend
/// on the sum's loop, so it is computed once per row too, and it is the
/// same as the numerator's, so both read one temporary.
#[test]
fn invariant_reduction_inside_a_sum_moves_out_and_is_shared() {
    check_hoist(
        "pub fn sm(x: [f32; N, C]) -> [f32; N, C] {
            let y[n, c] = std::math::exp(x[n, c] - max[j](x[n, j])) / sum[k](std::math::exp(x[n, k] - max[j](x[n, j])));
            y
        }",
        expect![[r#"
            pub fn sm(x: tensor<f32, 2>) -> tensor<f32, 2> {
                bind N = x.shape[0]
                bind C = x.shape[1]
                tensor y_red[n_2 in 0..N]: f32 (cost 257) = max[j in 0..C] read x[n_2, j] unchecked
                tensor y_red_2[n_3 in 0..N]: f32 (cost 1537) = sum[k in 0..C] exp((read x[n_3, k] unchecked) - (read y_red[n_3] unchecked))
                tensor y[n in 0..N, c in 0..C]: f32 (cost 26) = exp((read x[n, c] unchecked) - (read y_red[n] unchecked)) / (read y_red_2[n] unchecked)
                result y
            }
        "#]],
    );
}

/// A reduction equal to an earlier definition (up to index names) reads
/// it, and a scalar `let` shares its maximum the same way.
#[test]
fn reductions_equal_to_earlier_statements_read_them() {
    check_hoist(
        "pub fn sm(x: [f32; N, C]) -> [f32; N, C] {
            let m[n] = max[c](x[n, c]);
            let y[n, c] = std::math::exp(x[n, c] - max[j](x[n, j])) / sum[k](std::math::exp(x[n, k] - m[n]));
            y
        }
        pub fn lse(x: [f64; N]) -> f64 {
            let z = std::math::ln(sum[i](std::math::exp(x[i] - max[j](x[j])))) + max[j](x[j]);
            z
        }",
        expect![[r#"
            pub fn sm(x: tensor<f32, 2>) -> tensor<f32, 2> {
                bind N = x.shape[0]
                bind C = x.shape[1]
                tensor m[n in 0..N]: f32 (cost 257) = max[c in 0..C] read x[n, c] unchecked
                tensor y_red[n_3 in 0..N]: f32 (cost 1537) = sum[k in 0..C] exp((read x[n_3, k] unchecked) - (read m[n_3] unchecked))
                tensor y[n_2 in 0..N, c_2 in 0..C]: f32 (cost 26) = exp((read x[n_2, c_2] unchecked) - (read m[n_2] unchecked)) / (read y_red[n_2] unchecked)
                result y
            }

            pub fn lse(x: tensor<f64, 1>) -> f64 {
                bind N = x.shape[0]
                let z_red: f64 = max[j in 0..N] read x[j] unchecked
                let z: f64 = ln(sum[i in 0..N] exp((read x[i] unchecked) - z_red)) + z_red
                result z
            }
        "#]],
    );
}

/// What stays inside a sum: a reduction reading the sum's variable, one
/// under the sum's guard, and one over a range that depends on the sum's
/// variable; a reduction that only looks the same (other ranges, another
/// tensor) is not shared.
#[test]
fn dependent_or_guarded_inner_reductions_stay() {
    let src = "pub fn a(x: [f32; N, N]) -> [f32; N] {
            let y[i] = sum[k](x[i, k] * max[j](x[k, j]));
            y
        }
        pub fn b(x: [f32; N, N]) -> [f32; N] {
            let y[i] = sum[k](x[i, k] * max[j](x[i, j]) where k > 0);
            y
        }
        pub fn c(x: [f32; N, N]) -> [f32; N] {
            let y[i] = sum[k](x[i, k] * max[j in 0..k](x[i, j]));
            y
        }";
    let before = ir::pretty::pretty_program(&lowered(src));
    assert_eq!(after_pass(src, super::hoist::run), before);
    let out = after_pass(
        "pub fn d(x: [f32; N, C], w: [f32; N, C]) -> [f32; N, C] {
            let m[n] = max[c](w[n, c]);
            let y[n, c] = x[n, c] - max[j](x[n, j]);
            y
        }",
        super::hoist::run,
    );
    assert!(
        out.contains("tensor y_red[n_3 in 0..N]: f32 (cost 257) = max[j in 0..C] read x[n_3, j] unchecked"),
        "{out}"
    );
}

fn check_rows(src: &str, expect: Expect) {
    expect.assert_eq(&after_pass(src, super::rows::run));
}

/// A row-wise pipeline joins the definition at its end: rank-one members
/// are scalars per row, the others rows of their own.
#[test]
fn a_pipeline_is_computed_row_by_row() {
    check_rows(
        "pub fn sm(x: [f32; N, C]) -> [f32; N, C] {
            let m[n] = max[c](x[n, c]);
            let e[n, c] = std::math::exp(x[n, c] - m[n]);
            let s[n] = sum[k](e[n, k]);
            let y[n, c] = e[n, c] / s[n];
            y
        }",
        expect![[r#"
            pub fn sm(x: tensor<f32, 2>) -> tensor<f32, 2> {
                bind N = x.shape[0]
                bind C = x.shape[1]
                rows of y, once per n_4:
                    let m: f32 = max[c in 0..C] read x[n_4, c] unchecked
                    tensor e[c_2 in 0..C]: f32 (cost 22) = exp((read x[n_4, c_2] unchecked) - m)
                    let s: f32 = sum[k in 0..C] read e[k] unchecked
                    tensor y[n_4 in 0..N, c_3 in 0..C]: f32 (cost 34) = (read e[c_3] unchecked) / s
                result y
            }
        "#]],
    );
}

/// A term of the value that the sum before it also computes is a row
/// tensor both read.
#[test]
fn a_term_shared_with_a_sum_is_computed_once() {
    check_rows(
        "pub fn sm(x: [f32; N, C]) -> [f32; N, C] {
            let m[n] = max[c](x[n, c]);
            let s[n] = sum[k](std::math::exp(x[n, k] - m[n]));
            let y[n, c] = std::math::exp(x[n, c] - m[n]) / s[n];
            y
        }",
        expect![[r#"
            pub fn sm(x: tensor<f32, 2>) -> tensor<f32, 2> {
                bind N = x.shape[0]
                bind C = x.shape[1]
                rows of y, once per n_3:
                    let m: f32 = max[c in 0..C] read x[n_3, c] unchecked
                    tensor y_term[c_3 in 0..C]: f32 (cost 22) = exp((read x[n_3, c_3] unchecked) - m)
                    let s: f32 = sum[k in 0..C] read y_term[k] unchecked
                    tensor y[n_3 in 0..N, c_2 in 0..C]: f32 (cost 34) = (read y_term[c_2] unchecked) / s
                result y
            }
        "#]],
    );
}

/// A definition read at another row, or used outside the pipeline, stays
/// a whole tensor; the rest of the pipeline still fuses.
#[test]
fn producers_read_elsewhere_stay_whole() {
    check_rows(
        "pub fn a(x: [f64; N, C]) -> [f64; N, C] {
            let e[n, c] = std::math::exp(x[n, c]);
            let s[n] = sum[k](e[n, k]);
            let y[n, c] = e[n, c] - e[0, c] + s[n];
            y
        }
        pub fn b(x: [f64; N, C]) -> ([f64; N, C], [f64; N, C]) {
            let e[n, c] = std::math::exp(x[n, c]);
            let y[n, c] = e[n, c] + 1.0;
            (y, e)
        }
        pub fn c(x: [f64; N, C], k: [i64; N, C]) -> [f64; N, C] {
            let e[n, c] = x[n, c] * 2.0;
            let y[n, c] = e[n, c] + x[n, k[n, c]];
            y
        }",
        expect![[r#"
            pub fn a(x: tensor<f64, 2>) -> tensor<f64, 2> {
                bind N = x.shape[0]
                bind C = x.shape[1]
                tensor e[n in 0..N, c in 0..C]: f64 (cost 20) = exp(read x[n, c] unchecked)
                rows of y, once per n_3:
                    let s: f64 = sum[k in 0..C] read e[n_3, k] unchecked
                    tensor y[n_3 in 0..N, c_2 in 0..C]: f64 (cost 14) = ((read e[n_3, c_2] unchecked) - (read e[0i64, c_2] checked)) + s
                result y
            }

            pub fn b(x: tensor<f64, 2>) -> (tensor<f64, 2>, tensor<f64, 2>) {
                bind N = x.shape[0]
                bind C = x.shape[1]
                tensor e[n in 0..N, c in 0..C]: f64 (cost 20) = exp(read x[n, c] unchecked)
                tensor y[n_2 in 0..N, c_2 in 0..C]: f64 (cost 5) = (read e[n_2, c_2] unchecked) + 1.0f64
                result (y, e)
            }

            pub fn c(x: tensor<f64, 2>, k: tensor<i64, 2>) -> tensor<f64, 2> {
                bind N = x.shape[0]
                bind C = x.shape[1]
                check k.shape[0] == N ("N")
                check k.shape[1] == C ("C")
                rows of y, once per n_2:
                    tensor e[c in 0..C]: f64 (cost 5) = (read x[n_2, c] unchecked) * 2.0f64
                    tensor y[n_2 in 0..N, c_2 in 0..C]: f64 (cost 13) = (read e[c_2] unchecked) + (read x[n_2, read k[n_2, c_2] unchecked] checked)
                result y
            }
        "#]],
    );
}

fn check_inline(src: &str, expect: Expect) {
    expect.assert_eq(&after_pass(src, super::inline::run));
}

/// A definition read once at its own point is computed where it is read;
/// one read twice, read under a sum, or read at another point stays.
#[test]
fn definitions_read_once_at_their_point_are_inlined() {
    check_inline(
        "pub fn chain(a: [f32; N], b: [f32; N], c: [f32; N]) -> [f32; N] {
            let t[i] = a[i] * b[i];
            let u[i] = t[i] + c[i];
            let y[i] = u[i] * u[i];
            y
        }
        pub fn stay(a: [f32; N, N]) -> [f32; N, N] {
            let t[i, j] = std::math::exp(a[i, j]);
            let s[i, j] = sum[k](t[i, k]) + a[i, j];
            let w[i, j] = a[i, j] * 2.0;
            let y[i, j] = s[j, i] + w[i, j];
            y
        }",
        expect![[r#"
            pub fn chain(a: tensor<f32, 1>, b: tensor<f32, 1>, c: tensor<f32, 1>) -> tensor<f32, 1> {
                bind N = a.shape[0]
                check b.shape[0] == N ("N")
                check c.shape[0] == N ("N")
                tensor u[i_2 in 0..N]: f32 (cost 8) = ((read a[i_2] unchecked) * (read b[i_2] unchecked)) + (read c[i_2] unchecked)
                tensor y[i_3 in 0..N]: f32 (cost 5) = (read u[i_3] unchecked) * (read u[i_3] unchecked)
                result y
            }

            pub fn stay(a: tensor<f32, 2>) -> tensor<f32, 2> {
                bind N = a.shape[0]
                check a.shape[1] == N ("N")
                tensor t[i in 0..N, j in 0..N]: f32 (cost 20) = exp(read a[i, j] unchecked)
                tensor s[i_2 in 0..N, j_2 in 0..N]: f32 (cost 261) = (sum[k in 0..N] read t[i_2, k] unchecked) + (read a[i_2, j_2] unchecked)
                tensor y[i_4 in 0..N, j_4 in 0..N]: f32 (cost 9) = (read s[j_4, i_4] unchecked) + ((read a[i_4, j_4] unchecked) * 2.0f32)
                result y
            }
        "#]],
    );
}

#[test]
fn a_guard_on_the_point_alone_is_tested_once_per_sum() {
    let p = optimized(
        "pub fn g(a: [f32; N, K], s: i64) -> [f32; N] {
            let y[i] = sum[k](a[i, k] * 2.0 where i >= s, k >= 1);
            y
        }",
    );
    let text = ir::pretty::pretty_program(&p);
    // `i >= s` reads no variable of the sum: it moves out; `k >= 1` stays.
    assert!(text.contains("if i >= s { sum[k in 0..K]"), "{text}");
    assert!(text.contains("where k >= 1i64 }") && !text.contains("where i >= s"), "{text}");
}

/// In device code (one batched product per convolution), a convolution's
/// gradient packs the input once: the kernel's gradient reads the forward
/// product's packed columns as one matrix (a reshape of the per-image
/// reshape), not a second packed copy.
#[test]
fn a_device_gradient_shares_the_forward_packing() {
    let mut p = lowered(
        "pub fn g(x: [f32; N, C, H, W], k: [f32; O, C, 3, 3]) -> ([f32; O, C, 3, 3], [f32; N, C, H, W]) {
            let y[n, o, i, j] = sum[c, r, s](x[n, c, i + r, j + s] * k[o, c, r, s]);
            let l = sum[n, o, i, j](y[n, o, i, j] * y[n, o, i, j]);
            (@l / @k, @l / @x)
        }",
    );
    for f in &mut p.fns {
        super::gemm::run(f);
        super::pack::run(f);
        super::dedup::run(f);
    }
    ir::validate::validate(&p).unwrap();
    let out = ir::pretty::pretty_program(&p);
    assert_eq!(out.matches("= read x[").count(), 1, "{out}");
    assert!(out.contains("reshape y_cols_m = y_cols as [9 * C, N, i_len * j_len]"), "{out}");
    assert!(out.contains("reshape d_k_cols_m = y_cols_m as [9 * C,"), "{out}");
}

/// In host code, a convolution over a batch packs and multiplies one image
/// at a time, inside the rows of its output: the packed copy is one
/// image's, and the product is written in the output's order. (`f64`: an
/// `f32` one runs the direct kernel, `opt::conv`.)
#[test]
fn host_convolutions_pack_one_image_per_row() {
    let out = ir::pretty::pretty_program(&optimized(
        "pub fn conv(x: [f64; N, C, H, W], k: [f64; O, C, 3, 3], b: [f64; O]) -> [f64; N, O, H - 2, W - 2] {
            let y[n, o, i, j] = sum[c, r, s](x[n, c, i + r, j + s] * k[o, c, r, s]) + b[o];
            y
        }",
    ));
    assert!(out.contains("rows of y, once per n:"), "{out}");
    assert!(out.contains("= read x[n, c, i_3 + r, j_3 + s] unchecked"), "{out}");
    assert!(out.contains("gemm y_prod_m = y_kern_m[1, 0] x y_cols_m[0, 1] (m O, n i_len * j_len, k 9 * C)"), "{out}");
    assert!(out.contains("(read y_prod[o, i, j] unchecked) + (read b[o] unchecked)"), "{out}");
}

/// In host code, a kernel gradient's sum over the images is split: a
/// product per image (its packed columns times its output gradient, in
/// the rows of a partial result), then the sum of the partial results.
#[test]
fn host_kernel_gradients_multiply_one_image_at_a_time() {
    let out = ir::pretty::pretty_program(&optimized(
        "pub fn dk(x: [f32; N, C, H, W], dy: [f32; N, O, P, Q]) -> [f32; O, C, 3, 3] {
            let dk[o, c, r in 0..3, s in 0..3] = sum[n, i, j](dy[n, o, i, j] * x[n, c, i + r, j + s]);
            dk
        }",
    ));
    assert!(out.contains("rows of dk_part, once per n:"), "{out}");
    assert!(out.contains("= view dk_part_kern_m[n]"), "{out}");
    // The output gradient is copied in its own order (no transposing
    // copy) and read transposed by the product.
    assert!(out.contains("tensor dk_part_kern[n_4 in 0..N, o_3 in 0..O, i_2 in 0..min(H - 2, P), j_2 in 0..min(W - 2, Q)]: f32 (cost 5) = read dy[n_4, o_3, i_2, j_2] unchecked"), "{out}");
    assert!(
        out.contains("gemm dk_part_prod_m = dk_part_cols_m[0, 1] x dk_part_kern_row[1, 0] (m 9 * C, n O,"),
        "{out}"
    );
    assert!(out.contains("= sum[n_2 in 0..N] read dk_part[n_2, o, c, r, s] unchecked"), "{out}");
}

/// Channels last: a convolution runs the direct kernel on permuted copies
/// of the image and the filters, writing its result in the definition's
/// order (`conv_layout`, then `conv`'s permuted result); the kernel gradient, which the kernel does not
/// take, keeps the packed copy with the channels innermost (the gathered
/// read's contiguous axis, so packing copies runs of memory) and
/// multiplies one image at a time.
#[test]
fn channels_last_convolutions_run_the_kernel_on_copies() {
    let out = ir::pretty::pretty_program(&optimized(
        "pub fn conv(x: [f32; N, H, W, C], k: [f32; 3, 3, C, O]) -> [f32; N, H - 2, W - 2, O] {
            let y[n, i, j, o] = sum[r, s, c](x[n, i + r, j + s, c] * k[r, s, c, o]);
            y
        }
        pub fn dk(x: [f32; N, H, W, C], dy: [f32; N, P, Q, O]) -> [f32; 3, 3, C, O] {
            let dk[r in 0..3, s in 0..3, c, o] = sum[n, i, j](x[n, i + r, j + s, c] * dy[n, i, j, o]);
            dk
        }",
    ));
    assert!(
        out.contains("y_image[n_2 in 0..N, c_2 in 0..C, h in 0..H, w in 0..W]: f32 (cost 5) = read x[n_2, h, w, c_2]"),
        "{out}"
    );
    assert!(
        out.contains(
            "y_filters[o_2 in 0..O, c_3 in 0..C, r_2 in 0..3, s_2 in 0..3]: f32 (cost 5) = read k[r_2, s_2, c_3, o_2]"
        ),
        "{out}"
    );
    // The kernel writes the result in its own order (no copy).
    assert!(out.contains("conv y = y_image * y_filters (pad 0, 0, out order [0, 2, 3, 1]): f32"), "{out}");
    assert!(out.contains("reference tensor y[n_3 in 0..N, i_2 in 0..i_len, j_2 in 0..j_len, o_3 in 0..O]"), "{out}");
    assert!(!out.contains("y_nchw"), "{out}");
    assert!(!out.contains("y_cols"), "{out}");
    assert!(out.contains("rows of dk_part, once per n:"), "{out}");
    assert!(out.contains("s_4 in 0..3, c_4 in 0..C]: f32 (cost 9) = read x[n, i + r_4, j + s_4, c_4]"), "{out}");
    // Both of the image's rows and columns read at the output's row: not a
    // convolution in any layout, left as written.
    let out = ir::pretty::pretty_program(&optimized(
        "pub fn diag(x: [f32; N, H, H, C], k: [f32; 3, 3, C, O]) -> [f32; N, H - 2, H - 2, O] {
            let y[n, i, j in 0..H - 2, o] = sum[r, s, c](x[n, i + r, i + s, c] * k[r, s, c, o]) + x[n, j, j, 0];
            y
        }",
    ));
    assert!(!out.contains("y_image") && !out.contains("conv y"), "{out}");
    // A kernel gradient channels first has the form too, with the filters
    // as images and the batch as channels: left to the per-image products.
    let out = ir::pretty::pretty_program(&optimized(
        "pub fn dk(x: [f32; N, C, H, W], dy: [f32; N, O, P, Q]) -> [f32; O, C, 3, 3] {
            let dk[o, c, r in 0..3, s in 0..3] = sum[n, i, j](dy[n, o, i, j] * x[n, c, i + r, j + s]);
            dk
        }",
    ));
    assert!(!out.contains("dk_image") && !out.contains("conv dk"), "{out}");
    assert!(out.contains("rows of dk_part, once per n:"), "{out}");
}

/// A grouped convolution is multiplied per image too: the packed columns
/// of the image's groups, one product per group with that group's kernel,
/// written in the output's order `[g, o, (i, j)]`.
#[test]
fn grouped_convolutions_multiply_per_image_and_group() {
    let out = ir::pretty::pretty_program(&optimized(
        "pub fn conv(x: [f32; N, G, C, H, W], k: [f32; G, O, C, 3, 3]) -> [f32; N, G, O, H - 2, W - 2] {
            let y[n, g, o, i, j] = sum[c, r, s](x[n, g, c, i + r, j + s] * k[g, o, c, r, s]);
            y
        }",
    ));
    assert!(out.contains("rows of y, once per n:"), "{out}");
    assert!(out.contains("reshape y_cols_m = y_cols_2 as [G, 9 * C, i_len * j_len]"), "{out}");
    assert!(
        out.contains("gemm y_prod_m = y_kern_m[0, 2, 1] x y_cols_m[0, 1, 2] (batch G, m O, n i_len * j_len"),
        "{out}"
    );
    assert!(out.contains("= read y_prod[g, o, i, j] unchecked"), "{out}");
}

/// A copy read once (a reversed one, as a gradient's `d_h`) is read from
/// its source where it was read, under a reduction too: no pass copies it.
#[test]
fn a_copy_read_once_reads_its_source() {
    let text = ir::pretty::pretty_program(&optimized(
        "pub fn f(x: [f64; N], w: [f64; N, M]) -> [f64; M] {
            let r[i in 0..N] = x[N - 1 - i];
            let y[j] = sum[i](r[i] * w[i, j] + 1.0);
            y
        }",
    ));
    assert!(!text.contains("tensor r["), "{text}");
    assert!(text.contains("read x[(N - 1i64) - i"), "{text}");
}

/// A term added to itself (the derivative of `h * h` gives two equal
/// terms) is doubled, evaluated once.
#[test]
fn a_term_added_to_itself_is_doubled() {
    let text = ir::pretty::pretty_program(&optimized(
        "pub fn g(x: [f64; N]) -> [f64; N] {
            let l = sum[i](x[i] * x[i]);
            @l / @x
        }",
    ));
    // d/dx sum(x * x) = 2 x: one term, the seed's product by one gone.
    assert!(text.contains("tensor d_x[p0 in 0..N]: f64 (cost 9) = 2.0f64 * (read x[p0] unchecked)"), "{text}");
}

/// The adjoint of a recurrence reads its own previous step, and the
/// primal's step, at indices written the short way: reversed time
/// substituted into `t - 1` is `s - 1`, not a nest of `max(1, T) - 1`.
#[test]
fn reversed_time_indices_are_written_the_short_way() {
    let text = ir::pretty::pretty_program(&optimized(
        "use std::math::tanh;
        pub fn g(h0: [f64; N], w: [f64; N, N], x: [f64; T, N]) -> [f64; N, N] {
            let h[0, j] = h0[j];
            let h[t in 1..T, j] = tanh(sum[k](h[t - 1, k] * w[k, j]) + x[t, j]);
            let l = sum[j](h[T - 1, j] * h[T - 1, j]);
            @l / @w
        }",
    ));
    assert!(text.contains("read r_h[s - 1i64, "), "{text}");
    assert!(text.contains("read h[(max(1, T) - 1) - s, "), "{text}");
    assert!(!text.contains("((max(1, T)) - 1i64) - (("), "{text}");
    assert!(!text.contains("d_l * "), "{text}");
}

#[test]
fn a_costly_subexpression_is_computed_once_in_its_scope() {
    let p = optimized(
        "use std::math::tanh;
        pub fn f(x: [f64; N]) -> ([f64; N], [f64; N]) {
            let y[i] = 1.0 - tanh(x[i]) * tanh(x[i]);
            let z[i] = if x[i] > 0.0 { tanh(2.0 * x[i]) * tanh(2.0 * x[i]) } else { tanh(2.0 * x[i]) };
            (y, z)
        }",
    );
    let text = ir::pretty::pretty_program(&p);
    let f = &p.fns[0];
    let (ir::Stmt::Tensor(y), ir::Stmt::Tensor(z)) = (&f.body[0], &f.body[1]) else { panic!("{text}") };
    // `y`: one block binding the tanh, read twice.
    let ir::ExprKind::Block { stmts, result } = &y.body.kind else { panic!("{text}") };
    assert_eq!(stmts.len(), 1, "{text}");
    let mut tanhs = 0;
    fn count(e: &ir::Expr, n: &mut usize) {
        *n += usize::from(matches!(e.kind, ir::ExprKind::Intrinsic(..)));
        ir::visit::for_each_child(e, &mut |c| count(c, n));
    }
    count(result, &mut tanhs);
    assert_eq!(tanhs, 0, "{text}");
    // `z`: shared inside the branch that computes it twice, not across the
    // branches (the other one is not always evaluated).
    let ir::ExprKind::If { then, els, .. } = &z.body.kind else { panic!("{text}") };
    assert!(matches!(then.kind, ir::ExprKind::Block { .. }), "{text}");
    assert!(matches!(els.kind, ir::ExprKind::Intrinsic(..)), "{text}");
}

#[test]
fn a_reverse_sweep_through_a_recurrence_gets_a_checkpointed_alternative() {
    let p = optimized(
        "use std::math::tanh;
        pub fn g(w: [f64; H, H], h0: [f64; H], x: [f64; T, H]) -> [f64; H, H] {
            let h[0, j] = h0[j];
            let h[t in 1..T, j] = tanh(sum[k](w[j, k] * h[t - 1, k]) + x[t, j]);
            let l = sum[j](h[T - 1, j] * h[T - 1, j]);
            @l / @w
        }",
    );
    let text = ir::pretty::pretty_program(&p);
    let g = p.fns.iter().find(|f| f.name == "g").expect("g");
    let c = g.checkpointed.as_ref().unwrap_or_else(|| panic!("{text}"));
    assert_eq!((p.func(c.alternative).name.as_str(), c.primal.as_str()), ("g__ckpt", "h"), "{text}");
    let alt = p.fns.iter().find(|f| f.name == "g__ckpt").unwrap_or_else(|| panic!("{text}"));
    assert!(alt.may_give_up() && !alt.public, "{text}");
    let sweeps: Vec<&ir::Sweep> =
        alt.body.iter().filter_map(|s| if let ir::Stmt::Sweep(w) = s { Some(&**w) } else { None }).collect();
    assert_eq!(sweeps.len(), 1, "{text}");
    let w = sweeps[0];
    assert_eq!((w.lookback, w.sums.len()), (1, 1), "{text}");
    // The gradient's sum over time runs per chunk, reading the adjoint at
    // the step after the primal's.
    assert!(matches!(&w.sums[0].part, ir::Stmt::Tensor(_)) && w.sums[0].offset == 0, "{text}");
    // Nothing outside the sweep reads the histories.
    assert!(alt.body.iter().all(|s| !matches!(s, ir::Stmt::Recurrence(_))), "{text}");
}

#[test]
fn a_recurrence_without_a_gradient_has_no_alternative() {
    let p = optimized(
        "pub fn run(h0: [f64; H], w: [f64; H], steps: i64) -> f64 {
            let h[0, j] = h0[j];
            let h[t in 1..steps, j] = w[j] * h[t - 1, j];
            let r[0, j] = h[steps - 1, j];
            let r[s in 1..steps, j] = r[s - 1, j] + h[steps - 1 - s, j];
            sum[j](r[steps - 1, j])
        }",
    );
    assert_eq!(p.fns.len(), 1, "{}", ir::pretty::pretty_program(&p));
    assert!(p.fns[0].checkpointed.is_none());
}

/// A convolution's input gradient (a transposed convolution) multiplies
/// the kernel into each image's unpadded gradient, then adds the shifted
/// products where they fall inside it; with provably fewer contracted
/// channels than output ones (4 against 16) it is packed as before.
#[test]
fn a_transposed_convolution_multiplies_then_shifts() {
    let text = ir::pretty::pretty_program(&optimized(
        "pub fn g(x: [f32; N, C, H, W], k: [f32; O, C, 3, 3], b: [f32; O]) -> [f32; N, C, H, W] {
            let y[n, o, i, j] = sum[c, r, s](x[n, c, i + r, j + s] * k[o, c, r, s]) + b[o];
            let l = sum[n, o, i, j](y[n, o, i, j] * y[n, o, i, j]);
            @l / @x
        }
        pub fn narrow(dy: [f32; N, 4, P, Q], k: [f32; 4, 16, 3, 3]) -> [f32; N, 16, P - 2, Q - 2] {
            let d[n, c, p in 0..P - 2, q in 0..Q - 2] = sum[o, r, s](dy[n, o, p - r + 2, q - s + 2] * k[o, c, r, s]);
            d
        }",
    ));
    let (g, narrow) = text.split_at(text.find("pub fn narrow").expect("two functions"));
    // The padded output gradient is not built: the product reads `d_y`
    // itself (its `P x Q` columns, not the padded ones; the image's
    // sub-tensor as it is, no copy) and the shifted sum skips the offsets
    // that fall outside it.
    assert!(g.contains("let d_x_src: tensor<f32, 3> = view d_y[p0_2]"), "{g}");
    assert!(g.contains("reshape d_x_src_m = d_x_src as [O, p2_len * p3_len]"), "{g}");
    assert!(g.contains("gemm d_x_g_m = d_x_kern_m[1, 0] x d_x_src_m[0, 1] (m 9 * C, n p2_len * p3_len, k O)"), "{g}");
    assert!(g.contains("= sum[r_2 in 0..3, s_2 in 0..3] read d_x_g[p1_2, r_2, s_2, p2_2 - r_2, p3_2 - s_2] unchecked where 0i64 <= (p2_2 - r_2), (p2_2 - r_2) < p2_len, 0i64 <= (p3_2 - s_2), (p3_2 - s_2) < p3_len"), "{g}");
    assert!(!g.contains("d_x_cols") && !g.contains("d_y_pad"), "{g}");
    assert!(narrow.contains("gemm d_prod_m") && !narrow.contains("d_g_m"), "{narrow}");
}

/// A gradient function does not compute its target (the loss's final sum,
/// which reverse mode does not read) nor its seed once `simplify` has
/// folded it; a binding nobody reads whose read may fail is kept, so its
/// error still comes.
#[test]
fn values_nothing_reads_are_not_computed() {
    let text = ir::pretty::pretty_program(&optimized(
        "pub fn g(x: [f32; N], w: [f32; N]) -> [f32; N] {
            let y[i] = x[i] * w[i];
            let l = sum[i](y[i] * y[i]);
            @l / @w
        }
        pub fn kept(x: [f32; N], j: i64) -> f32 {
            let unused = x[j];
            let gone = sum[i](x[i]) * 2.0;
            1.0
        }",
    ));
    let (g, kept) = text.split_at(text.find("pub fn kept").expect("two functions"));
    assert!(!g.contains("let l:") && !g.contains("let d_l"), "{g}");
    assert!(g.contains("tensor d_w") && g.contains("read y["), "{g}");
    assert!(kept.contains("let unused") && !kept.contains("let gone"), "{kept}");
}

/// A row definition (a convolution's output) read only by a later
/// definition at its own point is not stored: the rows compute that
/// definition (`inline::run_rows`); read by two definitions, it stays.
/// (`f64`: an `f32` stride-1 convolution runs the direct kernel.)
#[test]
fn a_row_definition_read_once_takes_its_reader_in() {
    let text = ir::pretty::pretty_program(&optimized(
        "pub fn once(x: [f64; N, C, H, W], k: [f64; O, C, 3, 3], b: [f64; O]) -> [f64; N, O, H - 2, W - 2] {
            let y[n, o, i, j] = sum[c, r, s](x[n, c, i + r, j + s] * k[o, c, r, s]) + b[o];
            let z[n, o, i, j] = y[n, o, i, j] * y[n, o, i, j] + 1.0;
            z
        }
        pub fn twice(x: [f64; N, C, H, W], k: [f64; O, C, 3, 3]) -> ([f64; N, O, H - 2, W - 2], [f64; N, O, H - 2, W - 2]) {
            let y[n, o, i, j] = sum[c, r, s](x[n, c, i + r, j + s] * k[o, c, r, s]);
            let z[n, o, i, j] = y[n, o, i, j] * 2.0;
            let w[n, o, i, j] = y[n, o, i, j] + 2.0;
            (z, w)
        }",
    ));
    let (once, twice) = text.split_at(text.find("pub fn twice").expect("two functions"));
    assert!(once.contains("rows of z, once per n:") && !once.contains("rows of y"), "{once}");
    assert!(!once.contains("read y["), "{once}");
    assert!(twice.contains("rows of y, once per n:") && twice.contains("read y["), "{twice}");
}

/// The optimized IR of `src`, printed.
fn printed(src: &str) -> String {
    ir::pretty::pretty_program(&optimized(src))
}

#[test]
fn a_product_divided_by_a_power_of_two_is_a_scaled_gemm() {
    // Attention's scores: `/ 8.0` is `* 0.125` in every bit, folded into
    // the batched product, which now defines `s` itself (no `s_mm`).
    check(
        "pub fn scores(q: [f32; H, N, D], k: [f32; H, N, D]) -> [f32; H, N, N] {
            let s[h, i, j] = sum[d](q[h, i, d] * k[h, j, d]) / 8.0;
            s
        }",
        expect![[r#"
            pub fn scores(q: tensor<f32, 3>, k: tensor<f32, 3>) -> tensor<f32, 3> {
                bind H = q.shape[0]
                bind N = q.shape[1]
                bind D = q.shape[2]
                check k.shape[0] == H ("H")
                check k.shape[1] == N ("N")
                check k.shape[2] == D ("D")
                gemm s = q[0, 1, 2] x k[0, 2, 1] * 0.125f32 (batch H, m N, n N, k D): f32
                  reference tensor s[h in 0..H, i in 0..N, j in 0..N]: f32 (cost 643) = (sum[d in 0..D] (read q[h, i, d] unchecked) * (read k[h, j, d] unchecked)) / 8.0f32
                result s
            }
        "#]],
    );
}

#[test]
fn products_times_an_invariant_scalar_are_scaled_gemms() {
    // A literal on either side, a parameter, an `f64` power of two, and a
    // scaled product inside a larger value (a temporary `y_mm`).
    let out = printed(
        "pub fn mm(a: [f32; M, K], b: [f32; K, N]) -> [f32; M, N] { let c[i, j] = 0.3 * sum[k](a[i, k] * b[k, j]); c }",
    );
    assert!(out.contains("gemm c = a[0, 1] x b[0, 1] * 0.3f32"), "{out}");
    let out = printed(
        "pub fn mm(a: [f32; M, K], b: [f32; K, N], s: f32) -> [f32; M, N] { let c[i, j] = sum[k](a[i, k] * b[k, j]) * s; c }",
    );
    assert!(out.contains("gemm c = a[0, 1] x b[0, 1] * s "), "{out}");
    let out = printed("pub fn mm(a: [f64; M, K], b: [f64; K, N]) -> [f64; M, N] { let c[i, j] = sum[k](a[i, k] * b[k, j]) / 1024.0; c }");
    assert!(out.contains("gemm c = a[0, 1] x b[0, 1] * 0.0009765625f64"), "{out}");
    let out = printed(
        "pub fn dense(x: [f32; B, I], w: [f32; I, O], b: [f32; O]) -> [f32; B, O] {
            let y[n, j] = sum[i](x[n, i] * w[i, j]) * 0.5 + b[j];
            y
        }",
    );
    assert!(out.contains("gemm y_mm = x[0, 1] x w[0, 1] * 0.5f32"), "{out}");
    assert!(out.contains("= (read y_mm[n, j] unchecked) + (read b[j] unchecked)"), "{out}");
}

#[test]
fn divisions_that_would_change_bits_stay_after_the_product() {
    // `x / 3.0` is not `x * (1 / 3)` for every `x`, nor is `x / s`; a
    // subnormal power of two has no reciprocal in `f32`; a scale read at
    // the point is no scale; an `f16` product keeps its division too.
    for (src, after) in [
        ("let c[i, j] = sum[k](a[i, k] * b[k, j]) / 3.0;", "(read c_mm[i, j] unchecked) / 3.0f32"),
        ("let c[i, j] = sum[k](a[i, k] * b[k, j]) / s;", "(read c_mm[i, j] unchecked) / s"),
        ("let c[i, j] = sum[k](a[i, k] * b[k, j]) / 1e-40;", "(read c_mm[i, j] unchecked) / 1e-40f32"),
        ("let c[i, j] = sum[k](a[i, k] * b[k, j]) / 0.0;", "(read c_mm[i, j] unchecked) / 0.0f32"),
        ("let c[i, j] = sum[k](a[i, k] * b[k, j]) * a[i, 0];", "(read c_mm[i, j] unchecked) * (read a[i, 0i64]"),
    ] {
        let out = printed(&format!("pub fn mm(a: [f32; M, K], b: [f32; K, N], s: f32) -> [f32; M, N] {{ {src} c }}"));
        assert!(out.contains("gemm c_mm = a[0, 1] x b[0, 1] (m M"), "{src}: {out}");
        assert!(out.contains(after), "{src}: {out}");
    }
    let out = printed(
        "pub fn mm(a: [f16; M, K], b: [f16; K, N]) -> [f16; M, N] { let c[i, j] = sum[k](a[i, k] * b[k, j]) * 0.5; c }",
    );
    assert!(out.contains("gemm c_mm = a[0, 1] x b[0, 1] (m M"), "{out}");
}

#[test]
fn only_exact_reciprocals_of_powers_of_two_are_folded() {
    use crate::base::scalar::ScalarKind;
    use crate::opt::gemm::exact_reciprocal;
    // Values of every magnitude, subnormals included, and their neighbours.
    let mut xs: Vec<f32> = vec![0.0, -0.0, f32::MIN_POSITIVE, f32::MAX, -f32::MAX, 1.0, 3.0, f32::INFINITY];
    let mut bits = 0x0000_0001u32;
    while bits < 0x7f80_0000 {
        for d in [0u32, 1, 2, 0x1234] {
            xs.push(f32::from_bits(bits + d));
            xs.push(-f32::from_bits(bits + d));
        }
        bits = bits.wrapping_mul(3).wrapping_add(0x3571);
    }
    for e in -149i32..=127 {
        let v = 2f32.powi(e);
        let text = format!("{v:e}");
        match exact_reciprocal(&text, ScalarKind::F32) {
            Some(r) => {
                let r: f32 = r.parse().unwrap();
                assert!(v.is_normal(), "{text}");
                for &x in &xs {
                    assert_eq!((x / v).to_bits(), (x * r).to_bits(), "{x:e} / {text}");
                }
            }
            // Only subnormal powers of two are refused (their reciprocals
            // overflow).
            None => assert!(!v.is_normal(), "{text}"),
        }
    }
    for text in ["3.0", "0.1", "10.0", "6.0", "0.0", "1e-40", "inf", "NaN", "1e39", "0.3"] {
        assert_eq!(exact_reciprocal(text, ScalarKind::F32), None, "{text}");
    }
    assert_eq!(exact_reciprocal("-8.0", ScalarKind::F32).as_deref(), Some("-0.125"));
    assert_eq!(exact_reciprocal("8.0", ScalarKind::F64).as_deref(), Some("0.125"));
    assert_eq!(exact_reciprocal("1e-310", ScalarKind::F64), None);
    assert_eq!(exact_reciprocal("1_024.0", ScalarKind::F64).as_deref(), Some("0.0009765625"));
    assert_eq!(exact_reciprocal("8.0", ScalarKind::F16), None);
}

/// A definition that only permutes the axes of a member (a channels-last
/// result of a channels-first computation) is not made rows: as a whole
/// tensor it is a blocked copy, as rows every element a gather.
#[test]
fn a_permuted_copy_stays_whole() {
    let permuted = after_pass(
        "pub fn f(x: [f32; N, O, P]) -> [f32; N, P, O] {
            let t[n, o, p] = std::math::max(x[n, o, p] * 2.0, 0.0);
            let y[n, p, o] = t[n, o, p];
            y
        }",
        super::rows::run,
    );
    assert!(!permuted.contains("rows of"), "{permuted}");
    // In its own order it joins the rows.
    let own = after_pass(
        "pub fn f(x: [f32; N, O, P]) -> [f32; N, O, P] {
            let t[n, o, p] = std::math::max(x[n, o, p] * 2.0, 0.0);
            let y[n, o, p] = t[n, o, p] + 1.0;
            y
        }",
        super::rows::run,
    );
    assert!(own.contains("rows of y"), "{own}");
}
