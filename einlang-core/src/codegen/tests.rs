//! Code generation snapshots: hand-built loop IR functions and their
//! `ir::pretty` text, here, and the Rust they become (formatted by
//! prettyplease) in `einlang-core/tests/codegen_samples/`, where the
//! facade's `tests/codegen_samples.rs` compiles it.
//! The IR is validated first; `check_invalid` snapshots validator errors.
//! The programs and their builders are in `test_programs`.

use expect_test::{expect, Expect};

use super::test_programs::*;

use crate::base::ops::BinOp;
use crate::ir::pretty::pretty_program;
use crate::ir::validate::validate;
use crate::ir::{ExprKind, FuncId, Program, Repr, Stmt, VarId, VarInfo};

// ----- drivers -------------------------------------------------------------

fn rust_text(p: &Program, options: &crate::Options) -> String {
    let tokens = crate::codegen::emit_program(p, options);
    match syn::parse2::<syn::File>(tokens.clone()) {
        Ok(file) => prettyplease::unparse(&file),
        Err(e) => panic!("generated code does not parse: {e}\n{tokens}"),
    }
}

/// The IR text of a valid program, here, and the Rust it becomes, in its
/// compilable sample (see `compilable_sample`).
fn check(p: &Program, expect: Expect) {
    if let Err(e) = validate(p) {
        panic!("invalid IR:\n{e}");
    }
    compilable_sample(&rust_text(p, &crate::Options { baseline_only: true, ..Default::default() }));
    expect.assert_eq(&pretty_program(p));
}

/// The generated Rust with every read checked (`Options::checked`), in its
/// compilable sample.
fn check_all_checked(p: &Program) {
    compilable_sample(&rust_text(p, &crate::Options { checked: true, ..Default::default() }));
}

/// The validator's complaint about a broken program.
fn check_invalid(p: &Program, expect: Expect) {
    match validate(p) {
        Ok(()) => panic!("validate accepted a broken program:\n{}", pretty_program(p)),
        Err(e) => expect.assert_eq(&e),
    }
}

// ----- tests ---------------------------------------------------------------

#[test]
fn keyword_names_are_escaped() {
    check(
        &keyword_names(),
        expect![[r#"
            fn loop(type: f32) -> f32 {
                result type * 2.0f32
            }

            pub fn match(self: tensor<f32, 1>) -> f32 {
                bind N = self.shape[0]
                let Ok: f32 = loop(read self[0i64] checked)
                let __x: f32 = Ok
                let type_: f32 = __x
                let type: f32 = type_ + __x
                result type
            }
        "#]],
    );
}

/// Names the source spells as raw identifiers reach the IR as they are and
/// come out of the Rust back end escaped.
#[test]
fn keyword_names_from_source() {
    let src: proc_macro2::TokenStream = quote::quote! {
        pub fn r#type(r#match: [f32; N], Ok: f32) -> [f32; N] {
            let r#loop[i] = r#match[i] * Ok;
            let __x = r#loop[0];
            let type_[j] = r#loop[j] * __x;
            type_
        }
    };
    let compiled = crate::test_support::compile_tokens(src);
    let ir = pretty_program(&compiled.ir);
    assert!(ir.contains("pub fn type(match: tensor<f32, 1>, Ok: f32)"), "{ir}");
    let rust = match syn::parse2::<syn::File>(compiled.rust.clone()) {
        Ok(file) => prettyplease::unparse(&file),
        Err(e) => panic!("generated code does not parse: {e}\n{}", compiled.rust),
    };
    for spelling in ["pub fn type_<", "match_: ", "Ok_: f32", "let loop_: ", "let x_: f32", "let type_: "] {
        assert!(rust.contains(spelling), "`{spelling}` in\n{rust}");
    }
}

/// Integer `+ - *`, negation, `**` and `sum` / `prod` accumulation are
/// wrapping methods (the same bits in debug and release builds); float
/// arithmetic keeps Rust's operators.
#[test]
fn integer_arithmetic_wraps_and_float_arithmetic_does_not() {
    let src: proc_macro2::TokenStream = quote::quote! {
        pub fn ints(x: [i32; N], a: i32, e: i32) -> (i32, i32, i32, i32) {
            (sum[i](x[i] * a), prod[i](x[i] - 1), -a + a ** 3, a ** e)
        }
        pub fn floats(x: [f32; N], a: f32) -> (f32, f32, f32) {
            (sum[i](x[i] * a), prod[i](x[i] - 1.0), -a + a ** 3)
        }
    };
    let compiled = crate::test_support::compile_tokens(src);
    let rust = match syn::parse2::<syn::File>(compiled.rust.clone()) {
        Ok(file) => prettyplease::unparse(&file),
        Err(e) => panic!("generated code does not parse: {e}\n{}", compiled.rust),
    };
    let (ints, floats) = rust.split_at(rust.find("pub fn floats").expect("both functions are emitted"));
    let ints: String = ints.split_whitespace().collect();
    let floats: String = floats.split_whitespace().collect();
    for spelling in [
        "__sum_i=__sum_i.wrapping_add(",
        ".wrapping_mul(a)",
        "__prod_i_2=__prod_i_2.wrapping_mul(",
        ".wrapping_sub(1i32)",
        "a.wrapping_neg().wrapping_add(a.wrapping_pow(3u32))",
        "__rt::arith::int_pow(\"ints\",a,e)?",
    ] {
        assert!(ints.contains(spelling), "`{spelling}` in\n{ints}");
    }
    assert!(!ints.contains("+=") && !ints.contains("*="), "{ints}");
    assert!(!floats.contains("wrapping"), "{floats}");
    for spelling in ["__tail_i+=", "__prod_i_2*=", "-a+a.powi(3)"] {
        assert!(floats.contains(spelling), "`{spelling}` in\n{floats}");
    }
}

#[test]
fn matmul_with_reduction() {
    check(
        &matmul(),
        expect![[r#"
            /// Plain matrix product.
            pub fn matmul(a: tensor<f32, 2>, b: tensor<f32, 2>) -> tensor<f32, 2> {
                bind M = a.shape[0]
                bind K = a.shape[1]
                bind N = b.shape[1]
                check b.shape[0] == K ("K")
                tensor c[i in 0..M, j in 0..N]: f32 (cost 3) = sum[k in 0..K] (read a[i, k] unchecked) * (read b[k, j] unchecked)
                result c
            }
        "#]],
    );
}

#[test]
fn matmul_all_checked() {
    check_all_checked(&matmul());
}

#[test]
fn guarded_definition_with_where_binding() {
    check(
        &upper_relu(),
        expect![[r#"
            pub fn upper_relu(m: tensor<f32, 2>) -> tensor<f32, 2> {
                bind N = m.shape[0]
                check m.shape[1] == N ("N")
                tensor u[i in 0..N, j in 0..N]: f32 (cost 2) = max(z, 0.0f32) where z = read m[i, j] unchecked, i <= j
                result u
            }
        "#]],
    );
}

#[test]
fn scalar_result_with_call() {
    check(
        &norm(),
        expect![[r#"
            pub fn sum_sq(x: tensor<f32, 1>) -> f32 {
                bind N = x.shape[0]
                result sum[i in 0..N] powi(read x[i] unchecked, 2i32)
            }

            fn norm(x: tensor<f32, 1>) -> f32 {
                bind N = x.shape[0]
                let s: f32 = sum_sq(x)
                let half: i64 = N / 2i64
                result sqrt(s) / (half as f32)
            }
        "#]],
    );
}

#[test]
fn strided_checked_read() {
    check(
        &every_other(),
        expect![[r#"
            pub fn every_other(x: tensor<f32, 1>, m: i64) -> tensor<f32, 1> {
                bind N = x.shape[0]
                tensor y[i in 0..m]: f32 (cost 1) = read x[2i64 * i] checked
                result y
            }
        "#]],
    );
}

/// A host function's body is emitted twice on x86-64: first inside a
/// `#[target_feature(enable = "avx2,fma")]` function the body calls when
/// the processor has both, then as written (the fallback).
#[test]
fn host_functions_have_an_avx2_twin() {
    let rust = rust_text(&conv1d(), &crate::Options::default());
    let twin = rust.find("unsafe fn __wide(").expect("a twin");
    let attr = rust.find("#[target_feature(enable = \"avx2,fma\")]").expect("its features");
    let cfg = rust.find("#[cfg(target_arch = \"x86_64\")]").expect("x86-64 only");
    let call = rust.find("if ::einlang::__private::cpu::wide() {").expect("a run-time test");
    assert!(cfg < attr && attr < twin && twin < call, "{rust}");
    // The loop nest appears in the twin and in the fallback after it.
    let fills: Vec<usize> = rust.match_indices("__rt::par::fill").map(|(i, _)| i).collect();
    assert_eq!(fills.len(), 2, "{rust}");
    assert!(twin < fills[0] && fills[0] < call && call < fills[1], "{rust}");
    // Checked mode has one form.
    let checked = rust_text(&conv1d(), &crate::Options { checked: true, ..Default::default() });
    assert!(!checked.contains("__wide"), "{checked}");
}

#[test]
fn rank_one_with_runtime_extent() {
    check(
        &conv1d(),
        expect![[r#"
            pub fn conv1d(x: tensor<f32, 1>, w: tensor<f32, 1>) -> tensor<f32, 1> {
                bind N = x.shape[0]
                bind K = w.shape[0]
                extent len_t = N - K + 1 ("N - K + 1")
                tensor y[t in 0..len_t]: f32 (cost 2) = sum[r in 0..K] (read x[t + r] unchecked) * (read w[r] unchecked)
                check_result y.shape[0] == N - K + 1 ("N - K + 1")
                result y
            }
        "#]],
    );
}

#[test]
fn rank_three_with_offset_axis() {
    check(
        &shift3(),
        expect![[r#"
            pub fn shift3(x: tensor<f64, 3>) -> tensor<f64, 3> {
                bind B = x.shape[0]
                bind M = x.shape[1]
                bind N = x.shape[2]
                tensor y[b in 0..B, i in 1..M, j in 0..N]: f64 (cost 2) = (read x[b, i, j] unchecked) - (read x[b, i - 1i64, j] unchecked)
                result y
            }
        "#]],
    );
}

#[test]
fn argmax_view_guarded_sum_and_tuple_result() {
    check(
        &stats(),
        expect![[r#"
            pub fn stats(x: tensor<f32, 2>) -> (tensor<i64, 1>, tensor<f32, 1>, f32, bool) {
                bind B = x.shape[0]
                bind N = x.shape[1]
                tensor am[b in 0..B]: i64 (cost 1) = argmax[n in 0..N] read x[b, n] unchecked
                let first_row: tensor<f32, 1> = view x[0i64]
                let total: f32 = sum[b2 in 0..B, n2 in 0..N] read x[b2, n2] unchecked where (read x[b2, n2] unchecked) > 0.0f32
                let finite: bool = all[b3 in 0..B, n3 in 0..N] abs(read x[b3, n3] unchecked) < 1e30f32
                result (am, first_row, total, finite)
            }
        "#]],
    );
}

#[test]
fn scalar_operations_and_literals() {
    check(
        &scalars(),
        expect![[r#"
            pub fn scalars(p: i32, q: i32, s: f64) -> (i32, f64, bool) {
                let r: i32 = int_pow(p, 3i32) % q
                let t: f64 = if s > 2.5f64 { sigmoid((-s) * 1e-3f64) } else { -0.5f64 }
                let flag: bool = r as bool
                let table: tensor<f64, 2> = array[2, 2] [1f64, 2f64, 3f64, 4f64]
                result (r, ({
                    tensor zero_d[]: f64 (cost 1) = t
                    (read zero_d[] unchecked) + (read table[1i64, 0i64] unchecked)
                }) + (flag as f64), flag)
            }
        "#]],
    );
}

#[test]
fn values_are_borrowed_moved_or_copied() {
    check(
        &values(),
        expect![[r#"
            pub fn pair(x: tensor<f32, 1>) -> (tensor<f32, 1>, f32) {
                result (x, 1.0f32)
            }

            pub fn pick(x: tensor<f32, 1>, c: bool) -> tensor<f32, 1> {
                let p: (tensor<f32, 1>, f32) = pair(x)
                let q: tensor<f32, 1> = p.0
                let r: tensor<f32, 1> = if c { q } else { {
                    let z: tensor<f32, 1> = pair(x).0
                    z
                } }
                let w: tensor<f32, 1> = r
                result w
            }

            pub fn greet(s: str) -> str {
                let t: str = greet(s)
                result if 1i64 > 2i64 { t } else { "hello" }
            }
        "#]],
    );
}

#[test]
fn invalid_use_before_definition() {
    let mut p = matmul();
    // Read `c` inside its own definition.
    if let Stmt::Tensor(def) = &mut p.fns[0].body[0] {
        def.body = read(def.var, F32, vec![ix(VarId(6)), ix(VarId(7))], false);
    }
    // Return a variable that is never defined.
    p.fns[0].vars.push(VarInfo {
        name: "ghost".to_string(),
        source_name: "ghost".to_string(),
        ty: Repr::Tensor(F32, 2),
    });
    p.fns[0].result = expr(ExprKind::Var(VarId(9)), Repr::Tensor(F32, 2));
    check_invalid(
        &p,
        expect![[r#"
        in `matmul`: `c` is used where it is not defined
        in `matmul`: `ghost` is used where it is not defined"#]],
    );
}

#[test]
fn invalid_index_count_and_types() {
    let mut p = matmul();
    if let Stmt::Tensor(def) = &mut p.fns[0].body[0] {
        // `a[i]` on a rank-2 tensor, and an `f32` index.
        def.body = bin(
            BinOp::Add,
            read(VarId(0), F32, vec![ix(VarId(6))], false),
            read(VarId(1), F32, vec![float("1.0", F32), ix(VarId(7))], false),
        );
    }
    check_invalid(
        &p,
        expect![[r#"
        in `matmul`: a read of `a` with 1 indices, but its rank is 2
        in `matmul`: an index has type `f32`, expected `i64`"#]],
    );
}

#[test]
fn invalid_dimension_and_call() {
    let mut p = norm();
    // A dimension over an `f32` variable; a call of an unknown function.
    p.fns[1].body[1] = Stmt::Let { var: VarId(3), value: expr(ExprKind::Dim(dim(VarId(2))), Repr::Scalar(I64)) };
    p.fns[1].body[0] =
        Stmt::Let { var: VarId(2), value: expr(ExprKind::Call { func: FuncId(99), args: vec![] }, Repr::Scalar(F32)) };
    p.calls_changed(FuncId(1));
    check_invalid(
        &p,
        expect![[r#"
        in `norm`: a call of function 99, which is not a function of the program
        in `norm`: dimension `s` mentions `s` of type `f32`"#]],
    );
}

/// The call graph a program carries is the graph of its bodies: a body
/// that stops calling a function without `Program::calls_changed` is
/// caught, and once the graph takes the change the program is valid again.
#[test]
fn a_call_graph_that_misses_a_change_is_invalid() {
    let mut p = norm();
    assert_eq!(p.calls().callees(FuncId(1)).iter().map(|c| c.func).collect::<Vec<_>>(), vec![FuncId(0)]);
    p.fns[1].body[0] = Stmt::Let { var: VarId(2), value: float("1.0", F32) };
    check_invalid(&p, expect![[r#"in `norm`: the call graph does not hold the calls of its body"#]]);
    p.calls_changed(FuncId(1));
    assert!(p.calls().callees(FuncId(1)).is_empty());
    assert_eq!(validate(&p), Ok(()));
}

#[test]
fn invalid_ir_becomes_an_internal_compiler_error() {
    let mut p = matmul();
    p.fns[0].vars[2].name = "not an ident".to_string();
    let text = crate::codegen::emit_program(&p, &crate::Options::default()).to_string();
    assert!(text.contains("compile_error"), "{text}");
    assert!(text.contains("internal compiler error in einlang: invalid loop IR"), "{text}");
}

/// `std::math`'s functions are the runtime's branch-free forms (`vmath`),
/// which vectorize, in `f32` and `f64`.
#[test]
fn math_functions_use_the_vectorizable_forms() {
    let src: proc_macro2::TokenStream = quote::quote! {
        pub fn acts(x: f32, y: f64) -> (f32, f64) {
            let a = std::math::tanh(x) + std::math::sigmoid(x) + std::math::erf(x) + std::math::ln(x);
            let b = std::math::sin(x) + std::math::pow(x, 1.5) + std::math::atan2(x, 2.0);
            let c = std::math::exp(y) + std::math::tanh(y) + std::math::log1p(y) + std::math::sin(y) + std::math::erf(y);
            let d = std::math::pow(y, 0.5) + std::math::atan2(y, 1.0);
            (a + b, c + d)
        }
    };
    let options = crate::Options { baseline_only: true, ..Default::default() };
    let Ok(ast) = crate::syntax::parse_tokens(src) else { panic!("the program parses") };
    let Ok(compiled) = crate::compile(ast, &options) else { panic!("the program compiles") };
    let file = syn::parse2::<syn::File>(compiled.rust).expect("generated code parses");
    let rust = prettyplease::unparse(&file);
    let lets: String = rust
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("let ") || l.contains("__rt::"))
        .collect::<Vec<_>>()
        .join("\n");
    expect![[r#"
        let a: f32 = __rt::vmath::tanh_f32(x) + __rt::vmath::sigmoid_f32(x)
        + __rt::vmath::erf_f32(x) + __rt::vmath::ln_f32(x);
        let b: f32 = __rt::vmath::sin_f32(x) + __rt::vmath::pow_f32(x, 1.5f32)
        + __rt::vmath::atan2_f32(x, 2.0f32);
        let c: f64 = __rt::vmath::exp_f64(y) + __rt::vmath::tanh_f64(y)
        + __rt::vmath::log1p_f64(y) + __rt::vmath::sin_f64(y) + __rt::vmath::erf_f64(y);
        let d: f64 = __rt::vmath::pow_f64(y, 0.5f64) + __rt::vmath::atan2_f64(y, 1.0f64);"#]]
    .assert_eq(&lets);
}

/// A function of scalars to a scalar without loops (an activation called
/// per element) has no AVX2 twin of its own, whose `cpu::wide()` test on
/// every call kept its callers' loops scalar; it is `#[inline]`. The
/// tensor function calling it keeps its twin.
#[test]
fn scalar_functions_have_no_twin_and_inline() {
    let src: proc_macro2::TokenStream = quote::quote! {
        fn act(x: f32) -> f32 { 0.5 * x * (1.0 + std::math::tanh(x)) }
        pub fn acts(x: [f32; N]) -> [f32; N] {
            let y[i] = act(x[i]);
            y
        }
    };
    let Ok(ast) = crate::syntax::parse_tokens(src) else { panic!("the program parses") };
    let Ok(compiled) = crate::compile(ast, &crate::Options::default()) else { panic!("the program compiles") };
    let rust: String = compiled.rust.to_string().split_whitespace().collect();
    let act = rust.find("fnact_").or_else(|| rust.find("fnact(")).expect("the helper is emitted");
    let acts = rust.find("fn__acts_body").expect("the tensor function is emitted");
    let (helper, tensor) =
        if act < acts { (&rust[act..acts], &rust[acts..]) } else { (&rust[act..], &rust[acts..act]) };
    assert!(!helper.contains("__wide") && rust[..act].ends_with("#[inline(always)]"), "{rust}");
    assert!(tensor.contains("__wide"), "{tensor}");
}

/// An exponential of `a - m`, `m` the maximum of `a` over the whole range
/// of the exponential's index, takes the lanes' form for arguments at most
/// zero (a fused softmax row, a sum of exponentials over a row, at the top
/// level); one whose `m` is the maximum of something else, over a part of
/// the range, or subtracted the other way takes the general one.
#[test]
fn exponentials_below_their_rows_maximum_skip_the_upper_clamp() {
    let forms = |src: &str| {
        let c = crate::compile_str(src, &crate::Options::default()).expect("compiles");
        let rust = c.rust.to_string();
        (rust.contains("exp_f32_nonpositive"), rust.contains("__simd :: exp_f32 ("))
    };
    let below = [
        "pub fn f(x: [f32; N, C]) -> [f32; N, C] {
            let m[n] = max[c](x[n, c]);
            let e[n, c] = std::math::exp(x[n, c] - m[n]);
            let y[n, c] = e[n, c] / sum[k](e[n, k]);
            y
        }",
        "pub fn f(x: [f32; N, C]) -> [f32; N, C] { std::ml::log_softmax(x) }",
        "pub fn f(x: [f32; N]) -> f32 {
            let m = max[i](x[i]);
            m + std::math::ln(sum[i](std::math::exp(x[i] - m)))
        }",
        "pub fn f(x: [f32; N, C]) -> [f32; N] {
            let m[n] = max[c](x[n, c] * 2.0);
            let s[n] = sum[c](std::math::exp(x[n, c] * 2.0 - m[n]));
            s
        }",
    ];
    for src in below {
        assert_eq!(forms(src), (true, false), "{src}");
    }
    let general = [
        "pub fn f(x: [f32; N, C], z: [f32; N, C]) -> [f32; N, C] {
            let m[n] = max[c](z[n, c]);
            let e[n, c] = std::math::exp(x[n, c] - m[n]);
            let y[n, c] = e[n, c] / sum[k](e[n, k]);
            y
        }",
        "pub fn f(x: [f32; N]) -> f32 {
            let m = max[i](x[i]);
            std::math::ln(sum[i](std::math::exp(m - x[i])))
        }",
        "pub fn f(x: [f32; N, C]) -> [f32; N] {
            let m[n] = max[c](x[n, c]);
            let s[n] = sum[c](std::math::exp(x[n, c] * 2.0 - m[n]));
            s
        }",
        "pub fn f(x: [f32; N]) -> f32 {
            let m = max[i in 1..N](x[i]);
            std::math::ln(sum[i](std::math::exp(x[i] - m)))
        }",
    ];
    for src in general {
        assert_eq!(forms(src), (false, true), "{src}");
    }
}
