//! Analysis tests: each program is parsed, resolved and analyzed, and the
//! HIR is printed with its inferred types and ranges (`x[..]?` marks a read
//! that stays checked at run time), or the diagnostics are printed.

use expect_test::{expect, Expect};

use crate::test_support::{self, Stage};

fn check(src: &str, expect: Expect) {
    test_support::check(src, Stage::Analyze, expect);
}

fn check_error(src: &str, expect: Expect) {
    test_support::check_error(src, Stage::Analyze, expect);
}

#[test]
fn matmul_ranges_come_from_reads() {
    check(
        "fn mm(a: [f32; M, K], b: [f32; K, N]) -> [f32; M, N] { let c[i, j] = sum[k](a[i, k] * b[k, j]); c }",
        expect![[r#"
            fn mm(a#0: [f32; M, K], b#1: [f32; K, N]) -> [f32; M, N] {
                let c#5[i#2 in 0..M, j#3 in 0..N]: [f32; M, N] = sum[k#4 in 0..K]((a#0[i#2, k#4] * b#1[k#4, j#3]));
                c#5
            }
        "#]],
    );
}

#[test]
fn conv_with_index_equations() {
    check(
        "fn conv(x: [f32; C, H, W], w: [f32; O, C, KH, KW], b: [f32; O]) -> [f32; O, H - KH + 1, W - KW + 1] {
            let y[o, oy, ox] = sum[c, r, s](x[c, iy, ix] * w[o, c, r, s]) + b[o] where iy = oy + r, ix = ox + s;
            y
        }",
        expect![[r#"
            fn conv(x#0: [f32; C, H, W], w#1: [f32; O, C, KH, KW], b#2: [f32; O]) -> [f32; O, H - KH + 1, W - KW + 1] {
                let y#11[o#3 in 0..O, oy#4 in 0..H - KH + 1, ox#5 in 0..W - KW + 1]: [f32; O, H - KH + 1, W - KW + 1] = (sum[c#6 in 0..C, r#7 in 0..KH, s#8 in 0..KW]((x#0[c#6, iy#9, ix#10] * w#1[o#3, c#6, r#7, s#8]) where iy#9 = (oy#4 + r#7), ix#10 = (ox#5 + s#8)) + b#2[o#3]);
                y#11
            }
        "#]],
    );
}

#[test]
fn strided_pool_extent() {
    check(
        "fn pool(x: [f32; H, W]) -> [f32; (H - 2) / 2 + 1, (W - 2) / 2 + 1] {
            let p[i, j] = max[di in 0..2, dj in 0..2](x[2 * i + di, 2 * j + dj]);
            p
        }",
        expect![[r#"
            fn pool(x#0: [f32; H, W]) -> [f32; H / 2, W / 2] {
                let p#5[i#1 in 0..H / 2, j#2 in 0..W / 2]: [f32; H / 2, W / 2] = max[di#3 in 0..2, dj#4 in 0..2](x#0[((2 * i#1) + di#3), ((2 * j#2) + dj#4)]);
                p#5
            }
        "#]],
    );
}

#[test]
fn neighbour_difference_shrinks_the_range() {
    check(
        "fn d(x: [f32; N]) -> [f32; N - 1] { let d[i] = x[i + 1] - x[i]; d }",
        expect![[r#"
        fn d(x#0: [f32; N]) -> [f32; N - 1] {
            let d#2[i#1 in 0..N - 1]: [f32; N - 1] = (x#0[(i#1 + 1)] - x#0[i#1]);
            d#2
        }
    "#]],
    );
}

#[test]
fn guards_narrow_ranges() {
    check(
        "fn pad(x: [f32; N]) -> [f32; N + 4] { let p[h in 0..N + 4] = if h >= 2 && h < N + 2 { x[h - 2] } else { 0.0 }; p }",
        expect![[r#"
            fn pad(x#0: [f32; N]) -> [f32; N + 4] {
                let p#3[h#1 in 0..N + 4]: [f32; N + 4] = if ((h#1 >= 2) && (h#1 < (N#2 + 2))) { { x#0[(h#1 - 2)] } } else { { 0.0 } };
                p#3
            }
        "#]],
    );
}

#[test]
fn an_else_branch_narrows_by_the_failed_condition() {
    // `i != 0` at the start of the range starts it at 1; `i == N - 1`
    // failing ends it one early; a disjunction failing narrows by both;
    // `!(i < 1)` is `i >= 1`. Reads that stay inside are proven (no `?`).
    check(
        "fn f(x: [f32; N]) -> [f32; N] { let y[i in 0..N] = if i == 0 { x[i] } else { x[i - 1] }; y }",
        expect![[r#"
            fn f(x#0: [f32; N]) -> [f32; N] {
                let y#2[i#1 in 0..N]: [f32; N] = if (i#1 == 0) { { x#0[i#1] } } else { { x#0[(i#1 - 1)] } };
                y#2
            }
        "#]],
    );
    check(
        "fn f(x: [f32; N]) -> [f32; N] { let y[i in 0..N] = if i == 0 || i == N - 1 { 0.0 } else { x[i - 1] + x[i + 1] }; y }",
        expect![[r#"
            fn f(x#0: [f32; N]) -> [f32; N] {
                let y#3[i#1 in 0..N]: [f32; N] = if ((i#1 == 0) || (i#1 == (N#2 - 1))) { { 0.0 } } else { { (x#0[(i#1 - 1)] + x#0[(i#1 + 1)]) } };
                y#3
            }
        "#]],
    );
    check(
        "fn f(x: [f32; N]) -> [f32; N] { let y[i in 0..N] = if !(i < 1) { x[i - 1] } else { x[i] }; y }",
        expect![[r#"
            fn f(x#0: [f32; N]) -> [f32; N] {
                let y#2[i#1 in 0..N]: [f32; N] = if !(i#1 < 1) { { x#0[(i#1 - 1)] } } else { { x#0[i#1] } };
                y#2
            }
        "#]],
    );
    // A conjunction failing says nothing of either part, and a point
    // inside the range cuts nothing: the reads stay checked.
    check(
        "fn f(x: [f32; N]) -> [f32; N] { let y[i in 0..N] = if i == 0 && N > 3 { 0.0 } else { x[i - 1] }; y }",
        expect![[r#"
            fn f(x#0: [f32; N]) -> [f32; N] {
                let y#3[i#1 in 0..N]: [f32; N] = if ((i#1 == 0) && (N#2 > 3)) { { 0.0 } } else { { x#0[(i#1 - 1)]? } };
                y#3
            }
        "#]],
    );
    check(
        "fn f(x: [f32; N]) -> [f32; N] { let y[i in 0..N] = if i == 2 { 0.0 } else { x[i - 1] }; y }",
        expect![[r#"
            fn f(x#0: [f32; N]) -> [f32; N] {
                let y#2[i#1 in 0..N]: [f32; N] = if (i#1 == 2) { { 0.0 } } else { { x#0[(i#1 - 1)]? } };
                y#2
            }
        "#]],
    );
}

#[test]
fn literals_take_their_type_from_context() {
    check(
        "fn f(x: [f64; N], k: i64) -> [f64; N] { let y[i] = x[i] * 2.0 + (k / 16) as f64 + 1.0; y }",
        expect![[r#"
            fn f(x#0: [f64; N], k#1: i64) -> [f64; N] {
                let y#3[i#2 in 0..N]: [f64; N] = (((x#0[i#2] * 2.0) + ((k#1 / 16) as f64)) + 1.0);
                y#3
            }
        "#]],
    );
}

#[test]
fn undecidable_result_shape_is_checked_at_run_time() {
    // An extent known only at run time (`?`) may equal the declared one.
    check(
        "fn f(x: [f32; N, ?]) -> [f32; N, N] { let y[i, j] = x[i, j]; y }",
        expect![[r#"
            fn f(x#0: [f32; N, ?]) -> [f32; N, N] {
                let y#3[i#1 in 0..N, j#2 in 0..?]: [f32; N, ?] = x#0[i#1, j#2];
                y#3
            }
        "#]],
    );
}

#[test]
fn a_result_of_other_dimensions_is_an_error() {
    // A transpose returned as the declared shape: `M` and `N` are distinct
    // sizes, even if they could be equal at run time.
    check_error(
        "fn f(x: [f32; N, M]) -> [f32; N, M] { let t[j, i] = x[i, j]; t }",
        expect![[r#"
            error: mismatched result type: the body has type `[f32; M, N]`, the function declares `[f32; N, M]` @1:61
              = note: axis 0 is declared as `N` but inferred as `M`, a different dimension (dimension symbols name distinct sizes)
              = help: declare the result as `[f32; M, N]`, or change the body to give `[f32; N, M]`
              label @1:24: result type declared here"#]],
    );
}

#[test]
fn undecidable_extents_are_checked_at_run_time() {
    check(
        "fn f(a: [f32; N], b: [f32; ?]) -> [f32; N] { let c[i] = a[i] + b[i]; c }",
        expect![[r#"
            fn f(a#0: [f32; N], b#1: [f32; ?]) -> [f32; N] {
                let c#3[i#2 in 0..N]: [f32; N] = (a#0[i#2] + b#1[i#2]);
                c#3
            }
        "#]],
    );
}

#[test]
fn an_index_bound_to_two_dimension_symbols_is_an_error() {
    check_error(
        "fn f(a: [f32; M, K], b: [f32; K, N]) -> [f32; M, K] { let c[i, j] = sum[k](a[i, k] * b[j, k]); c }",
        expect![[r#"
            error: index `k` is bound to two different dimensions: `K` (axis 1 of `a`) and `N` (axis 1 of `b`) @1:90
              = note: dimension symbols name distinct sizes, even where the lengths could be equal at run time
              = help: if `K` and `N` are one size, write one symbol for both in the parameter types
              label @1:80: `k` ranges over 0..K here"#]],
    );
}

#[test]
fn index_bound_to_two_extents() {
    check_error(
        "fn f(a: [f32; 3], b: [f32; 4]) -> f32 { sum[i](a[i] * b[i]) }",
        expect![[r#"
            error: index `i` is bound to two different extents: 3 (axis 0 of `a`) and 4 (axis 0 of `b`) @1:56
              = help: make the extents agree, or give `i` an explicit range: `i in 0..n`
              label @1:49: `i` ranges over 0..3 here"#]],
    );
}

#[test]
fn out_of_bounds_affine_read() {
    check_error(
        "fn f(x: [f32; N]) -> [f32; N] { let y[i in 0..N] = x[i + 1]; y }",
        expect![[r#"
            error: index out of bounds: axis 0 of `x` is read at `i + 1`, which reaches `N`, but the axis has length `N` @1:53
              = help: narrow the index's range, or guard the read with `where` or `if`
              label @1:51: in this read"#]],
    );
}

#[test]
fn no_inferable_range() {
    check_error(
        "fn f(x: [f32; N]) -> f32 { sum[k](x[k + 1] * 2.0) + sum[j](1.0) }",
        expect![[r#"
        error: cannot infer the range of index `j` @1:56
          = note: `j` is never used alone to index a tensor axis, so no axis gives its extent
          = help: give it an explicit range: `j in a..b`"#]],
    );
}

#[test]
fn declared_result_shape_differs() {
    check_error(
        "fn f(x: [f32; N]) -> [f32; N] { let d[i] = x[i + 1] - x[i]; d }",
        expect![[r#"
            error: mismatched result type: the body has type `[f32; N - 1]`, the function declares `[f32; N]` @1:60
              = note: axis 0 is declared as `N` but inferred as `N - 1`
              = help: declare the result as `[f32; N - 1]`, or change the body to give `[f32; N]`
              label @1:21: result type declared here"#]],
    );
}

#[test]
fn declared_tuple_element_shape_differs() {
    check_error(
        "fn f(x: [f32; N]) -> (f32, ([f32; N], i64)) { let d[i] = x[i + 1] - x[i]; (1.0, (d, 2)) }",
        expect![[r#"
            error: mismatched result type: the body has type `(f32, ([f32; N - 1], i64))`, the function declares `(f32, ([f32; N], i64))` @1:74
              = note: axis 0 of result element 1.0 is declared as `N` but inferred as `N - 1`"#]],
    );
}

#[test]
fn matrices_of_strings_are_not_supported_yet() {
    check_error(
        r#"fn f() -> i64 { let m = [["a", "b"], ["c", "d"]]; 0i64 }"#,
        expect![[r#"
            error: tensors of strings of rank 2 or more are not supported yet @1:24
              = note: strings form vectors (`["a", "b"]`); a jagged array holds numbers only
              = help: keep the rows in separate vectors, or index one vector (`names[i * cols + j]`)"#]],
    );
}

#[test]
fn element_type_mismatch() {
    check_error(
        "fn f(x: f32, y: f64) -> f32 { x + y }",
        expect![[r#"
            error: mismatched types: `f32` + `f64` @1:30
              = note: einlang never converts numbers implicitly
              = help: convert one side with `as`, for example `(...) as f32`
              label @1:30: this is `f32`
              label @1:34: this is `f64`"#]],
    );
}

#[test]
fn rank_mismatch() {
    check_error(
        "fn f(x: [f32; N]) -> f32 { x[0, 1] }",
        expect![[r#"
            error: rank mismatch: `x` has rank 1 but is indexed with 2 indices @1:27
              = help: index `x` with one index, or declare it with 2 axes
              label @1:5: `x` has type `[f32; N]`"#]],
    );
}

#[test]
fn wrong_argument_count() {
    check_error(
        "fn g(x: f32, y: f32) -> f32 { x * y } fn f(x: f32) -> f32 { g(x) }",
        expect![[r#"
        error: this function takes 2 arguments but 1 argument was supplied @1:60
          label @1:3: `g` is defined here"#]],
    );
}

#[test]
fn non_scalar_condition() {
    check_error(
        "fn f(x: [bool; N], y: f32) -> f32 { if x { y } else { 0.0 } }",
        expect![[r#"
        error: the condition of `if` must be a scalar `bool`, found `[bool; N]` @1:39
          = note: conditions are evaluated once per point; a tensor has no single truth value
          = help: index the tensor, or reduce it with `all[..](..)` / `any[..](..)`"#]],
    );
}

#[test]
fn float_literal_where_integer_is_needed() {
    check_error(
        "fn f(n: i32) -> i32 { n * 2.5 }",
        expect![[r#"
        error: mismatched types: expected `i32`, found a float literal @1:26
          = note: a float literal never becomes an integer
          = help: convert the integer side to a float, for example `(...) as f32`"#]],
    );
}

#[test]
fn if_branches_with_shapes_that_differ() {
    check_error(
        "fn f(a: [f32; M, N], c: bool) -> f32 { let b[i, j in 0..N + 1] = a[i, 0]; let t = if c { a } else { b }; sum[i, j](t[i, j]) }",
        expect![[r#"
            error: `if` and `else` give tensors of shapes `[f32; M, N]` and `[f32; M, N + 1]`, which differ @1:82
              = note: the value of an `if` must have one shape whichever branch runs"#]],
    );
}

#[test]
fn prefix_reduction_bounds_mention_the_index() {
    // `k in 0..i + 1` read as `x[i - k]`: the read is largest at `k = 0` and
    // smallest at `k = i`, so `i` ranges over the whole axis.
    check(
        "fn prefix(x: [f32; N]) -> [f32; N] { let c[i] = sum[k in 0..i + 1](x[i - k]); c }",
        expect![[r#"
            fn prefix(x#0: [f32; N]) -> [f32; N] {
                let c#3[i#1 in 0..N]: [f32; N] = sum[k#2 in 0..i + 1](x#0[(i#1 - k#2)]);
                c#3
            }
        "#]],
    );
}

#[test]
fn file_functions_take_strings() {
    check_error(
        "use std::io::*; fn f(n: i32, v: [str; 2]) -> bool { let t = read_file(n); let j = join_path(\"a\"); write_file(\"p\") }",
        expect![[r#"
            error: `read_file` takes a string, found `i32` @1:70
            error: `join_path` takes a vector of strings, found `str` @1:92
            error: `write_file` takes 2 arguments (two strings), but 1 was supplied @1:98"#]],
    );
}

#[test]
fn branches_join_tuples_element_by_element() {
    check_error(
        "fn f(m: [f32; H, W], a: i64) -> f32 {
            let t[i, j in 0..W - 1] = m[i, j];
            let p = if a == 0 { (m, 1) } else { (t, 2) };
            let q = match a { 0 => (1.0, m), _ => (2.0, t) };
            0.0
        }",
        expect![[r#"
            error: `if` and `else` give tensors of shapes `([f32; H, W], i32)` and `([f32; H, W - 1], i32)`, which differ @3:20
              = note: the value of an `if` must have one shape whichever branch runs
            error: match arms give tensors of different shapes @4:50
              = note: the value of a `match` must have one shape whichever arm runs"#]],
    );
}

/// The IR of `src`, printed.
fn ir_of(src: &str) -> String {
    match crate::compile_str(src, &crate::Options::default()) {
        Ok(c) => crate::ir::pretty::pretty_program(&c.ir),
        Err(d) => panic!("{d:?}"),
    }
}

/// The printed IR of the function `name` in `ir`.
fn fn_body(ir: &str, name: &str) -> String {
    let at = ir.find(&format!("fn {name}(")).unwrap_or_else(|| panic!("no fn {name} in {ir}"));
    let end = ir[at + 1..].find("\nfn ").map_or(ir.len(), |e| at + 1 + e);
    ir[at..end].to_string()
}

/// A read proven in bounds only if a run-time value (an `i64` parameter
/// `c`) were non-negative is checked; one whose proof does not need that
/// stays unchecked, and so does a guarded one whose guard alone bounds it.
#[test]
fn signed_values_in_proofs() {
    let src = r#"
        fn from(x: [f32; N], c: i64) -> f32 { sum[k in c..N](x[k]) }
        fn shifted(x: [f32; N], c: i64) -> f32 { sum[k in 0..N - 1](x[k + c]) }
        fn plain(x: [f32; N], c: i64) -> f32 { sum[k in 0..N](x[k]) * (c as f32) }
        fn guarded(x: [f32; N], c: i64) -> f32 {
            sum[k in 0..N - 1](if k + c >= 0 && k + c < N { x[k + c] } else { 0.0 })
        }
    "#;
    let ir = ir_of(src);
    let body = |name: &str| fn_body(&ir, name);
    assert!(body("from").contains("read x[k] checked"), "{ir}");
    assert!(body("shifted").contains("read x[k + c] checked"), "{ir}");
    assert!(body("plain").contains("read x[k] unchecked"), "{ir}");
    assert!(!body("guarded").contains(" checked)"), "{ir}");
}

/// A guard that bounds an index through an expression (`i + 1 < N`,
/// `N - i > 1`, `1 - i <= 0`) is solved for the index and proves the reads
/// it covers; a guard one short (`i + 1 <= N`) leaves the read checked.
#[test]
fn guards_solved_for_the_index() {
    let src = r#"
        fn below(u: [f64; N]) -> [f64; N] {
            let v[i in 0..N] = if i + 1 < N { u[i + 1] } else { 0.0 };
            v
        }
        fn flipped(u: [f64; N]) -> [f64; N] {
            let v[i in 0..N] = if N - i > 2 && 1 - i <= 0 { u[i + 2] + u[i - 1] } else { 0.0 };
            v
        }
        fn both(u: [f64; N, M]) -> [f64; N, M] {
            let v[i, j] = if i >= 1 && i + 1 < N && j >= 1 && j + 1 < M {
                u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1]
            } else {
                u[i, j]
            };
            v
        }
        fn negated(u: [f64; N]) -> [f64; N] {
            let v[i in 0..N] = if !(i + 3 >= N) { u[i + 2] } else { 0.0 };
            v
        }
        fn short(u: [f64; N]) -> [f64; N] {
            let v[i in 0..N] = if i + 1 <= N { u[i + 1] } else { 0.0 };
            v
        }
    "#;
    let ir = ir_of(src);
    let body = |name: &str| fn_body(&ir, name);
    for name in ["below", "flipped", "both", "negated"] {
        assert!(!body(name).contains(" checked)"), "{name}: {ir}");
    }
    assert!(body("short").contains("read u[i + 1i64] checked"), "{ir}");
}
