//! Code generation snapshots: hand-built loop IR functions, their
//! `ir::pretty` text, and the Rust they become (formatted by prettyplease).
//! The IR is validated first; `check_invalid` snapshots validator errors.
//! The programs and their builders are in `test_programs`.

use expect_test::{expect, Expect};

use super::test_programs::*;

use crate::base::ops::BinOp;
use crate::ir::pretty::pretty_program;
use crate::ir::validate::validate;
use crate::ir::{ExprKind, Program, Repr, Stmt, VarId, VarInfo};

// ----- drivers -------------------------------------------------------------

fn rust_text(p: &Program, options: &crate::Options) -> String {
    let tokens = crate::codegen::emit_program(p, options);
    match syn::parse2::<syn::File>(tokens.clone()) {
        Ok(file) => prettyplease::unparse(&file),
        Err(e) => panic!("generated code does not parse: {e}\n{tokens}"),
    }
}

/// The IR text and the generated Rust of a valid program.
fn check(p: &Program, expect: Expect) {
    if let Err(e) = validate(p) {
        panic!("invalid IR:\n{e}");
    }
    let ir = pretty_program(p);
    let rust = rust_text(p, &crate::Options { baseline_only: true, ..Default::default() });
    expect.assert_eq(&format!("{ir}\n{rust}"));
}

/// The generated Rust with every read checked (`Options::checked`).
fn check_all_checked(p: &Program, expect: Expect) {
    expect.assert_eq(&rust_text(p, &crate::Options { checked: true, ..Default::default() }));
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

            #[allow(
                non_snake_case,
                unused_variables,
                unused_mut,
                unused_parens,
                unused_braces,
                unused_imports,
                dead_code,
                clippy::all,
                clippy::pedantic
            )]
            #[inline(always)]
            fn loop_(type_: f32) -> ::core::result::Result<f32, ::einlang::__private::Error> {
                use ::einlang::__private as __rt;
                use ::einlang::__private::ndarray as __nd;
                Ok(type_ * 2.0f32)
            }
            #[allow(
                non_snake_case,
                unused_variables,
                unused_mut,
                unused_parens,
                unused_braces,
                unused_imports,
                dead_code,
                clippy::all,
                clippy::pedantic
            )]
            pub fn match_<'__a0>(
                self_: impl ::core::convert::Into<
                    ::einlang::__private::ndarray::ArrayView<
                        '__a0,
                        f32,
                        ::einlang::__private::ndarray::Ix1,
                    >,
                >,
            ) -> ::core::result::Result<f32, ::einlang::__private::Error> {
                fn __body(
                    self_: ::einlang::__private::ndarray::ArrayView<
                        '_,
                        f32,
                        ::einlang::__private::ndarray::Ix1,
                    >,
                ) -> ::core::result::Result<f32, ::einlang::__private::Error> {
                    use ::einlang::__private as __rt;
                    use ::einlang::__private::ndarray as __nd;
                    let N: i64 = self_.shape()[0] as i64;
                    let __standard_self_ = self_.as_standard_layout();
                    let self_ = __standard_self_.view();
                    let Ok_: f32 = loop_(
                        self_[[
                            __rt::shape::check_index("match_", "self", 0, 0i64, self_.shape()[0])?,
                        ]],
                    )?;
                    let x_: f32 = Ok_;
                    let type_: f32 = x_;
                    let type__2: f32 = type_ + x_;
                    Ok(type__2)
                }
                __body(self_.into())
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

            #[allow(
                non_snake_case,
                unused_variables,
                unused_mut,
                unused_parens,
                unused_braces,
                unused_imports,
                dead_code,
                clippy::all,
                clippy::pedantic
            )]
            #[doc(hidden)]
            fn __matmul_body(
                a: ::einlang::__private::ndarray::ArrayView<
                    '_,
                    f32,
                    ::einlang::__private::ndarray::Ix2,
                >,
                b: ::einlang::__private::ndarray::ArrayView<
                    '_,
                    f32,
                    ::einlang::__private::ndarray::Ix2,
                >,
                __out0: &mut ::einlang::__private::dest::Out<
                    '_,
                    f32,
                    ::einlang::__private::ndarray::Ix2,
                >,
            ) -> ::core::result::Result<
                ::einlang::__private::ndarray::Array<f32, ::einlang::__private::ndarray::Ix2>,
                ::einlang::__private::Error,
            > {
                use ::einlang::__private as __rt;
                use ::einlang::__private::ndarray as __nd;
                let M: i64 = a.shape()[0] as i64;
                let K: i64 = a.shape()[1] as i64;
                let N: i64 = b.shape()[1] as i64;
                __rt::shape::check_dim("matmul", "b", 0, "K", K, b.shape()[0])?;
                let __standard_a = a.as_standard_layout();
                let a = __standard_a.view();
                let __standard_b = b.as_standard_layout();
                let b = __standard_b.view();
                let c: __nd::Array<f32, __nd::Ix2> = __rt::dest::fill_into(
                    "matmul",
                    [M as usize, N as usize],
                    3,
                    |__pos_i, __row_c| -> ::core::result::Result<(), __rt::Error> {
                        let i: i64 = __pos_i as i64;
                        for __slot_c in __row_c.iter_mut() {
                            *__slot_c = 0.0f32;
                        }
                        for k in 0i64..K {
                            for (__pos_j, __slot_c) in __row_c.iter_mut().enumerate() {
                                let j: i64 = __pos_j as i64;
                                *__slot_c
                                    += unsafe {
                                        *a.as_ptr().add((i as usize) * a.shape()[1] + k as usize)
                                    }
                                        * unsafe {
                                            *b.as_ptr().add((k as usize) * b.shape()[1] + j as usize)
                                        };
                            }
                        }
                        Ok(())
                    },
                    &mut *__out0,
                )?;
                Ok(c)
            }
            /// Plain matrix product.
            #[allow(
                non_snake_case,
                unused_variables,
                unused_mut,
                unused_parens,
                unused_braces,
                unused_imports,
                dead_code,
                clippy::all,
                clippy::pedantic
            )]
            pub fn matmul<'__a0, '__a1>(
                a: impl ::core::convert::Into<
                    ::einlang::__private::ndarray::ArrayView<
                        '__a0,
                        f32,
                        ::einlang::__private::ndarray::Ix2,
                    >,
                >,
                b: impl ::core::convert::Into<
                    ::einlang::__private::ndarray::ArrayView<
                        '__a1,
                        f32,
                        ::einlang::__private::ndarray::Ix2,
                    >,
                >,
            ) -> ::core::result::Result<
                ::einlang::__private::ndarray::Array<f32, ::einlang::__private::ndarray::Ix2>,
                ::einlang::__private::Error,
            > {
                __matmul_body(a.into(), b.into(), &mut ::einlang::__private::dest::Out::none())
            }
            /// Writes the result of `matmul` into the caller's buffer `out`, of any strides, overwriting it.
            ///
            /// # Errors
            ///
            /// As `matmul`; also `Error::Shape` naming a buffer whose shape is not the result's, before
            /// anything is written to it.
            #[allow(
                non_snake_case,
                unused_variables,
                unused_mut,
                unused_parens,
                unused_braces,
                unused_imports,
                dead_code,
                clippy::all,
                clippy::pedantic
            )]
            pub fn matmul_into<'__a0, '__a1, '__o0>(
                a: impl ::core::convert::Into<
                    ::einlang::__private::ndarray::ArrayView<
                        '__a0,
                        f32,
                        ::einlang::__private::ndarray::Ix2,
                    >,
                >,
                b: impl ::core::convert::Into<
                    ::einlang::__private::ndarray::ArrayView<
                        '__a1,
                        f32,
                        ::einlang::__private::ndarray::Ix2,
                    >,
                >,
                out: impl ::core::convert::Into<
                    ::einlang::__private::ndarray::ArrayViewMut<
                        '__o0,
                        f32,
                        ::einlang::__private::ndarray::Ix2,
                    >,
                >,
            ) -> ::core::result::Result<(), ::einlang::__private::Error> {
                let mut __out0 = ::einlang::__private::dest::Out::new("out", out.into());
                let __value0 = __matmul_body(a.into(), b.into(), &mut __out0)?;
                __out0.finish("matmul", __value0)?;
                Ok(())
            }
        "#]],
    );
}

#[test]
fn matmul_all_checked() {
    check_all_checked(
        &matmul(),
        expect![[r##"
            #[allow(
                non_snake_case,
                unused_variables,
                unused_mut,
                unused_parens,
                unused_braces,
                unused_imports,
                dead_code,
                clippy::all,
                clippy::pedantic
            )]
            #[doc(hidden)]
            fn __matmul_body(
                a: ::einlang::__private::ndarray::ArrayView<
                    '_,
                    f32,
                    ::einlang::__private::ndarray::Ix2,
                >,
                b: ::einlang::__private::ndarray::ArrayView<
                    '_,
                    f32,
                    ::einlang::__private::ndarray::Ix2,
                >,
                __out0: &mut ::einlang::__private::dest::Out<
                    '_,
                    f32,
                    ::einlang::__private::ndarray::Ix2,
                >,
            ) -> ::core::result::Result<
                ::einlang::__private::ndarray::Array<f32, ::einlang::__private::ndarray::Ix2>,
                ::einlang::__private::Error,
            > {
                use ::einlang::__private as __rt;
                use ::einlang::__private::ndarray as __nd;
                let M: i64 = a.shape()[0] as i64;
                let K: i64 = a.shape()[1] as i64;
                let N: i64 = b.shape()[1] as i64;
                __rt::shape::check_dim("matmul", "b", 0, "K", K, b.shape()[0])?;
                let c: __nd::Array<f32, __nd::Ix2> = __rt::dest::fill_into(
                    "matmul",
                    [M as usize, N as usize],
                    3,
                    |__pos_i, __row_c| -> ::core::result::Result<(), __rt::Error> {
                        let i: i64 = __pos_i as i64;
                        for __slot_c in __row_c.iter_mut() {
                            *__slot_c = 0.0f32;
                        }
                        for k in 0i64..K {
                            for (__pos_j, __slot_c) in __row_c.iter_mut().enumerate() {
                                let j: i64 = __pos_j as i64;
                                *__slot_c
                                    += a[[
                                        __rt::shape::check_index("matmul", "a", 0, i, a.shape()[0])?,
                                        __rt::shape::check_index("matmul", "a", 1, k, a.shape()[1])?,
                                    ]]
                                        * b[[
                                            __rt::shape::check_index(
                                                "matmul",
                                                "b",
                                                0,
                                                k,
                                                b.shape()[0],
                                            )?,
                                            __rt::shape::check_index("matmul", "b", 1, j, b.shape()[1])?,
                                        ]];
                            }
                        }
                        Ok(())
                    },
                    &mut *__out0,
                )?;
                Ok(c)
            }
            /// Plain matrix product.
            #[allow(
                non_snake_case,
                unused_variables,
                unused_mut,
                unused_parens,
                unused_braces,
                unused_imports,
                dead_code,
                clippy::all,
                clippy::pedantic
            )]
            pub fn matmul<'__a0, '__a1>(
                a: impl ::core::convert::Into<
                    ::einlang::__private::ndarray::ArrayView<
                        '__a0,
                        f32,
                        ::einlang::__private::ndarray::Ix2,
                    >,
                >,
                b: impl ::core::convert::Into<
                    ::einlang::__private::ndarray::ArrayView<
                        '__a1,
                        f32,
                        ::einlang::__private::ndarray::Ix2,
                    >,
                >,
            ) -> ::core::result::Result<
                ::einlang::__private::ndarray::Array<f32, ::einlang::__private::ndarray::Ix2>,
                ::einlang::__private::Error,
            > {
                __matmul_body(a.into(), b.into(), &mut ::einlang::__private::dest::Out::none())
            }
            /// Writes the result of `matmul` into the caller's buffer `out`, of any strides, overwriting it.
            ///
            /// # Errors
            ///
            /// As `matmul`; also `Error::Shape` naming a buffer whose shape is not the result's, before
            /// anything is written to it.
            #[allow(
                non_snake_case,
                unused_variables,
                unused_mut,
                unused_parens,
                unused_braces,
                unused_imports,
                dead_code,
                clippy::all,
                clippy::pedantic
            )]
            pub fn matmul_into<'__a0, '__a1, '__o0>(
                a: impl ::core::convert::Into<
                    ::einlang::__private::ndarray::ArrayView<
                        '__a0,
                        f32,
                        ::einlang::__private::ndarray::Ix2,
                    >,
                >,
                b: impl ::core::convert::Into<
                    ::einlang::__private::ndarray::ArrayView<
                        '__a1,
                        f32,
                        ::einlang::__private::ndarray::Ix2,
                    >,
                >,
                out: impl ::core::convert::Into<
                    ::einlang::__private::ndarray::ArrayViewMut<
                        '__o0,
                        f32,
                        ::einlang::__private::ndarray::Ix2,
                    >,
                >,
            ) -> ::core::result::Result<(), ::einlang::__private::Error> {
                let mut __out0 = ::einlang::__private::dest::Out::new("out", out.into());
                let __value0 = __matmul_body(a.into(), b.into(), &mut __out0)?;
                __out0.finish("matmul", __value0)?;
                Ok(())
            }
        "##]],
    );
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

            #[allow(
                non_snake_case,
                unused_variables,
                unused_mut,
                unused_parens,
                unused_braces,
                unused_imports,
                dead_code,
                clippy::all,
                clippy::pedantic
            )]
            #[doc(hidden)]
            fn __upper_relu_body(
                m: ::einlang::__private::ndarray::ArrayView<
                    '_,
                    f32,
                    ::einlang::__private::ndarray::Ix2,
                >,
                __out0: &mut ::einlang::__private::dest::Out<
                    '_,
                    f32,
                    ::einlang::__private::ndarray::Ix2,
                >,
            ) -> ::core::result::Result<
                ::einlang::__private::ndarray::Array<f32, ::einlang::__private::ndarray::Ix2>,
                ::einlang::__private::Error,
            > {
                use ::einlang::__private as __rt;
                use ::einlang::__private::ndarray as __nd;
                let N: i64 = m.shape()[0] as i64;
                __rt::shape::check_dim("upper_relu", "m", 1, "N", N, m.shape()[1])?;
                let __standard_m = m.as_standard_layout();
                let m = __standard_m.view();
                let __fill_u = |
                    __pos_i: usize,
                    __row_u: &mut [::core::mem::MaybeUninit<f32>],
                | -> ::core::result::Result<(), __rt::Error> {
                    let i: i64 = __pos_i as i64;
                    {
                        let __first: i128 = (0i64) as i128;
                        let __last: i128 = __first + __row_u.len() as i128 - 1;
                        let (mut __lo, mut __hi) = (__first, __last + 1);
                        {
                            let __off: i64 = 0i64;
                            let __limit: i64 = i;
                            let __at: i128 = __limit as i128 - __off as i128;
                            __lo = __lo.max(__at);
                        }
                        let (__a, __b) = if (true) && __lo < __hi {
                            ((__lo - __first) as usize, (__hi - __first) as usize)
                        } else {
                            (0, 0)
                        };
                        for __slot_u in __row_u[..__a].iter_mut() {
                            __slot_u.write(0.0f32);
                        }
                        for __slot_u in __row_u[__b..].iter_mut() {
                            __slot_u.write(0.0f32);
                        }
                        let m = m.view();
                        for (__pos_j, __slot_u) in __row_u[__a..__b].iter_mut().enumerate() {
                            let __pos_j = __pos_j + __a;
                            let j: i64 = __pos_j as i64;
                            __slot_u
                                .write({
                                    let z: f32 = unsafe {
                                        *m.as_ptr().add((i as usize) * m.shape()[1] + j as usize)
                                    };
                                    z.max(0.0f32)
                                });
                        }
                    }
                    Ok(())
                };
                let u: __nd::Array<f32, __nd::Ix2> = unsafe {
                    __rt::dest::fill_uninit_into(
                        "upper_relu",
                        [N as usize, N as usize],
                        2,
                        __fill_u,
                        &mut *__out0,
                    )
                }?;
                Ok(u)
            }
            #[allow(
                non_snake_case,
                unused_variables,
                unused_mut,
                unused_parens,
                unused_braces,
                unused_imports,
                dead_code,
                clippy::all,
                clippy::pedantic
            )]
            pub fn upper_relu<'__a0>(
                m: impl ::core::convert::Into<
                    ::einlang::__private::ndarray::ArrayView<
                        '__a0,
                        f32,
                        ::einlang::__private::ndarray::Ix2,
                    >,
                >,
            ) -> ::core::result::Result<
                ::einlang::__private::ndarray::Array<f32, ::einlang::__private::ndarray::Ix2>,
                ::einlang::__private::Error,
            > {
                __upper_relu_body(m.into(), &mut ::einlang::__private::dest::Out::none())
            }
            /// Writes the result of `upper_relu` into the caller's buffer `out`, of any strides, overwriting it.
            ///
            /// # Errors
            ///
            /// As `upper_relu`; also `Error::Shape` naming a buffer whose shape is not the result's, before
            /// anything is written to it.
            #[allow(
                non_snake_case,
                unused_variables,
                unused_mut,
                unused_parens,
                unused_braces,
                unused_imports,
                dead_code,
                clippy::all,
                clippy::pedantic
            )]
            pub fn upper_relu_into<'__a0, '__o0>(
                m: impl ::core::convert::Into<
                    ::einlang::__private::ndarray::ArrayView<
                        '__a0,
                        f32,
                        ::einlang::__private::ndarray::Ix2,
                    >,
                >,
                out: impl ::core::convert::Into<
                    ::einlang::__private::ndarray::ArrayViewMut<
                        '__o0,
                        f32,
                        ::einlang::__private::ndarray::Ix2,
                    >,
                >,
            ) -> ::core::result::Result<(), ::einlang::__private::Error> {
                let mut __out0 = ::einlang::__private::dest::Out::new("out", out.into());
                let __value0 = __upper_relu_body(m.into(), &mut __out0)?;
                __out0.finish("upper_relu", __value0)?;
                Ok(())
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

            #[allow(
                non_snake_case,
                unused_variables,
                unused_mut,
                unused_parens,
                unused_braces,
                unused_imports,
                dead_code,
                clippy::all,
                clippy::pedantic
            )]
            pub fn sum_sq<'__a0>(
                x: impl ::core::convert::Into<
                    ::einlang::__private::ndarray::ArrayView<
                        '__a0,
                        f32,
                        ::einlang::__private::ndarray::Ix1,
                    >,
                >,
            ) -> ::core::result::Result<f32, ::einlang::__private::Error> {
                fn __body(
                    x: ::einlang::__private::ndarray::ArrayView<
                        '_,
                        f32,
                        ::einlang::__private::ndarray::Ix1,
                    >,
                ) -> ::core::result::Result<f32, ::einlang::__private::Error> {
                    use ::einlang::__private as __rt;
                    use ::einlang::__private::ndarray as __nd;
                    let N: i64 = x.shape()[0] as i64;
                    let __standard_x = x.as_standard_layout();
                    let x = __standard_x.view();
                    Ok(
                        __rt::par::reduce(
                            0i64,
                            N,
                            8usize,
                            |__from: i64, __to: i64| -> ::core::result::Result<f32, __rt::Error> {
                                Ok({
                                    let mut __lanes_i: [f32; 16] = [0.0f32; 16];
                                    let mut __tail_i: f32 = 0.0f32;
                                    let __end_i: i64 = __to;
                                    let mut __base_i: i64 = __from;
                                    while __end_i.saturating_sub(__base_i) >= 16i64 {
                                        for __lane in 0..16 {
                                            let i: i64 = __base_i + __lane as i64;
                                            __lanes_i[__lane]
                                                += (unsafe { *x.as_ptr().add(i as usize) }).powi(2);
                                        }
                                        __base_i += 16i64;
                                    }
                                    for i in __base_i..__end_i {
                                        __tail_i += (unsafe { *x.as_ptr().add(i as usize) }).powi(2);
                                    }
                                    let mut __sum_i: f32 = (__lanes_i[0] + __lanes_i[1]
                                        + __lanes_i[2] + __lanes_i[3] + __lanes_i[4] + __lanes_i[5]
                                        + __lanes_i[6] + __lanes_i[7] + __lanes_i[8] + __lanes_i[9]
                                        + __lanes_i[10] + __lanes_i[11] + __lanes_i[12]
                                        + __lanes_i[13] + __lanes_i[14] + __lanes_i[15]) + __tail_i;
                                    __sum_i
                                })
                            },
                            |__a: f32, __b: f32| __a + __b,
                        )?,
                    )
                }
                __body(x.into())
            }
            #[allow(
                non_snake_case,
                unused_variables,
                unused_mut,
                unused_parens,
                unused_braces,
                unused_imports,
                dead_code,
                clippy::all,
                clippy::pedantic
            )]
            fn norm<'__a0>(
                x: impl ::core::convert::Into<
                    ::einlang::__private::ndarray::ArrayView<
                        '__a0,
                        f32,
                        ::einlang::__private::ndarray::Ix1,
                    >,
                >,
            ) -> ::core::result::Result<f32, ::einlang::__private::Error> {
                fn __body(
                    x: ::einlang::__private::ndarray::ArrayView<
                        '_,
                        f32,
                        ::einlang::__private::ndarray::Ix1,
                    >,
                ) -> ::core::result::Result<f32, ::einlang::__private::Error> {
                    use ::einlang::__private as __rt;
                    use ::einlang::__private::ndarray as __nd;
                    let N: i64 = x.shape()[0] as i64;
                    let __standard_x = x.as_standard_layout();
                    let x = __standard_x.view();
                    let s: f32 = sum_sq(x.view())?;
                    let half: i64 = __rt::arith::int_div("norm", N, 2i64)?;
                    Ok(s.sqrt() / half as f32)
                }
                __body(x.into())
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

            #[allow(
                non_snake_case,
                unused_variables,
                unused_mut,
                unused_parens,
                unused_braces,
                unused_imports,
                dead_code,
                clippy::all,
                clippy::pedantic
            )]
            #[doc(hidden)]
            fn __every_other_body(
                x: ::einlang::__private::ndarray::ArrayView<
                    '_,
                    f32,
                    ::einlang::__private::ndarray::Ix1,
                >,
                m: i64,
                __out0: &mut ::einlang::__private::dest::Out<
                    '_,
                    f32,
                    ::einlang::__private::ndarray::Ix1,
                >,
            ) -> ::core::result::Result<
                ::einlang::__private::ndarray::Array<f32, ::einlang::__private::ndarray::Ix1>,
                ::einlang::__private::Error,
            > {
                use ::einlang::__private as __rt;
                use ::einlang::__private::ndarray as __nd;
                let N: i64 = x.shape()[0] as i64;
                let __standard_x = x.as_standard_layout();
                let x = __standard_x.view();
                let __fill_y = |
                    __first_y: usize,
                    __block_y: &mut [::core::mem::MaybeUninit<f32>],
                | -> ::core::result::Result<(), __rt::Error> {
                    for (__pos_i, __slot_y) in __block_y.iter_mut().enumerate() {
                        let i: i64 = (__first_y + __pos_i) as i64;
                        __slot_y
                            .write(
                                x[[
                                    __rt::shape::check_index(
                                        "every_other",
                                        "x",
                                        0,
                                        2i64.wrapping_mul(i),
                                        x.shape()[0],
                                    )?,
                                ]],
                            );
                    }
                    Ok(())
                };
                let y: __nd::Array<f32, __nd::Ix1> = unsafe {
                    __rt::dest::fill_uninit_into(
                        "every_other",
                        [__rt::shape::extent("every_other", "m", m)?],
                        1,
                        __fill_y,
                        &mut *__out0,
                    )
                }?;
                Ok(y)
            }
            #[allow(
                non_snake_case,
                unused_variables,
                unused_mut,
                unused_parens,
                unused_braces,
                unused_imports,
                dead_code,
                clippy::all,
                clippy::pedantic
            )]
            pub fn every_other<'__a0>(
                x: impl ::core::convert::Into<
                    ::einlang::__private::ndarray::ArrayView<
                        '__a0,
                        f32,
                        ::einlang::__private::ndarray::Ix1,
                    >,
                >,
                m: i64,
            ) -> ::core::result::Result<
                ::einlang::__private::ndarray::Array<f32, ::einlang::__private::ndarray::Ix1>,
                ::einlang::__private::Error,
            > {
                __every_other_body(x.into(), m, &mut ::einlang::__private::dest::Out::none())
            }
            /// Writes the result of `every_other` into the caller's buffer `out`, of any strides, overwriting it.
            ///
            /// # Errors
            ///
            /// As `every_other`; also `Error::Shape` naming a buffer whose shape is not the result's, before
            /// anything is written to it.
            #[allow(
                non_snake_case,
                unused_variables,
                unused_mut,
                unused_parens,
                unused_braces,
                unused_imports,
                dead_code,
                clippy::all,
                clippy::pedantic
            )]
            pub fn every_other_into<'__a0, '__o0>(
                x: impl ::core::convert::Into<
                    ::einlang::__private::ndarray::ArrayView<
                        '__a0,
                        f32,
                        ::einlang::__private::ndarray::Ix1,
                    >,
                >,
                m: i64,
                out: impl ::core::convert::Into<
                    ::einlang::__private::ndarray::ArrayViewMut<
                        '__o0,
                        f32,
                        ::einlang::__private::ndarray::Ix1,
                    >,
                >,
            ) -> ::core::result::Result<(), ::einlang::__private::Error> {
                let mut __out0 = ::einlang::__private::dest::Out::new("out", out.into());
                let __value0 = __every_other_body(x.into(), m, &mut __out0)?;
                __out0.finish("every_other", __value0)?;
                Ok(())
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

            #[allow(
                non_snake_case,
                unused_variables,
                unused_mut,
                unused_parens,
                unused_braces,
                unused_imports,
                dead_code,
                clippy::all,
                clippy::pedantic
            )]
            #[doc(hidden)]
            fn __conv1d_body(
                x: ::einlang::__private::ndarray::ArrayView<
                    '_,
                    f32,
                    ::einlang::__private::ndarray::Ix1,
                >,
                w: ::einlang::__private::ndarray::ArrayView<
                    '_,
                    f32,
                    ::einlang::__private::ndarray::Ix1,
                >,
                __out0: &mut ::einlang::__private::dest::Out<
                    '_,
                    f32,
                    ::einlang::__private::ndarray::Ix1,
                >,
            ) -> ::core::result::Result<
                ::einlang::__private::ndarray::Array<f32, ::einlang::__private::ndarray::Ix1>,
                ::einlang::__private::Error,
            > {
                use ::einlang::__private as __rt;
                use ::einlang::__private::ndarray as __nd;
                let N: i64 = x.shape()[0] as i64;
                let K: i64 = w.shape()[0] as i64;
                let __standard_x = x.as_standard_layout();
                let x = __standard_x.view();
                let __standard_w = w.as_standard_layout();
                let w = __standard_w.view();
                let len_t: i64 = __rt::shape::extent("conv1d", "N - K + 1", (N - K + 1i64))? as i64;
                let __fill_y = |
                    __first_y: usize,
                    __block_y: &mut [::core::mem::MaybeUninit<f32>],
                | -> ::core::result::Result<(), __rt::Error> {
                    for (__pos_t, __slot_y) in __block_y.iter_mut().enumerate() {
                        let t: i64 = (__first_y + __pos_t) as i64;
                        __slot_y
                            .write({
                                let mut __lanes_r: [f32; 16] = [0.0f32; 16];
                                let mut __tail_r: f32 = 0.0f32;
                                let __end_r: i64 = K;
                                let mut __base_r: i64 = 0i64;
                                while __end_r.saturating_sub(__base_r) >= 16i64 {
                                    for __lane in 0..16 {
                                        let r: i64 = __base_r + __lane as i64;
                                        __lanes_r[__lane]
                                            += unsafe { *x.as_ptr().add(t.wrapping_add(r) as usize) }
                                                * unsafe { *w.as_ptr().add(r as usize) };
                                    }
                                    __base_r += 16i64;
                                }
                                for r in __base_r..__end_r {
                                    __tail_r
                                        += unsafe { *x.as_ptr().add(t.wrapping_add(r) as usize) }
                                            * unsafe { *w.as_ptr().add(r as usize) };
                                }
                                let mut __sum_r: f32 = (__lanes_r[0] + __lanes_r[1] + __lanes_r[2]
                                    + __lanes_r[3] + __lanes_r[4] + __lanes_r[5] + __lanes_r[6]
                                    + __lanes_r[7] + __lanes_r[8] + __lanes_r[9] + __lanes_r[10]
                                    + __lanes_r[11] + __lanes_r[12] + __lanes_r[13] + __lanes_r[14]
                                    + __lanes_r[15]) + __tail_r;
                                __sum_r
                            });
                    }
                    Ok(())
                };
                let y: __nd::Array<f32, __nd::Ix1> = unsafe {
                    __rt::par::fill_uninit("conv1d", [len_t as usize], 2, __fill_y)
                }?;
                __rt::shape::check_result_dim(
                    "conv1d",
                    0,
                    "N - K + 1",
                    (N - K + 1i64),
                    y.shape()[0],
                )?;
                Ok(y)
            }
            #[allow(
                non_snake_case,
                unused_variables,
                unused_mut,
                unused_parens,
                unused_braces,
                unused_imports,
                dead_code,
                clippy::all,
                clippy::pedantic
            )]
            pub fn conv1d<'__a0, '__a1>(
                x: impl ::core::convert::Into<
                    ::einlang::__private::ndarray::ArrayView<
                        '__a0,
                        f32,
                        ::einlang::__private::ndarray::Ix1,
                    >,
                >,
                w: impl ::core::convert::Into<
                    ::einlang::__private::ndarray::ArrayView<
                        '__a1,
                        f32,
                        ::einlang::__private::ndarray::Ix1,
                    >,
                >,
            ) -> ::core::result::Result<
                ::einlang::__private::ndarray::Array<f32, ::einlang::__private::ndarray::Ix1>,
                ::einlang::__private::Error,
            > {
                __conv1d_body(x.into(), w.into(), &mut ::einlang::__private::dest::Out::none())
            }
            /// Writes the result of `conv1d` into the caller's buffer `out`, of any strides, overwriting it.
            ///
            /// # Errors
            ///
            /// As `conv1d`; also `Error::Shape` naming a buffer whose shape is not the result's, before
            /// anything is written to it.
            #[allow(
                non_snake_case,
                unused_variables,
                unused_mut,
                unused_parens,
                unused_braces,
                unused_imports,
                dead_code,
                clippy::all,
                clippy::pedantic
            )]
            pub fn conv1d_into<'__a0, '__a1, '__o0>(
                x: impl ::core::convert::Into<
                    ::einlang::__private::ndarray::ArrayView<
                        '__a0,
                        f32,
                        ::einlang::__private::ndarray::Ix1,
                    >,
                >,
                w: impl ::core::convert::Into<
                    ::einlang::__private::ndarray::ArrayView<
                        '__a1,
                        f32,
                        ::einlang::__private::ndarray::Ix1,
                    >,
                >,
                out: impl ::core::convert::Into<
                    ::einlang::__private::ndarray::ArrayViewMut<
                        '__o0,
                        f32,
                        ::einlang::__private::ndarray::Ix1,
                    >,
                >,
            ) -> ::core::result::Result<(), ::einlang::__private::Error> {
                let mut __out0 = ::einlang::__private::dest::Out::new("out", out.into());
                let __value0 = __conv1d_body(x.into(), w.into(), &mut __out0)?;
                __out0.finish("conv1d", __value0)?;
                Ok(())
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

            #[allow(
                non_snake_case,
                unused_variables,
                unused_mut,
                unused_parens,
                unused_braces,
                unused_imports,
                dead_code,
                clippy::all,
                clippy::pedantic
            )]
            #[doc(hidden)]
            fn __shift3_body(
                x: ::einlang::__private::ndarray::ArrayView<
                    '_,
                    f64,
                    ::einlang::__private::ndarray::Ix3,
                >,
                __out0: &mut ::einlang::__private::dest::Out<
                    '_,
                    f64,
                    ::einlang::__private::ndarray::Ix3,
                >,
            ) -> ::core::result::Result<
                ::einlang::__private::ndarray::Array<f64, ::einlang::__private::ndarray::Ix3>,
                ::einlang::__private::Error,
            > {
                use ::einlang::__private as __rt;
                use ::einlang::__private::ndarray as __nd;
                let B: i64 = x.shape()[0] as i64;
                let M: i64 = x.shape()[1] as i64;
                let N: i64 = x.shape()[2] as i64;
                let __standard_x = x.as_standard_layout();
                let x = __standard_x.view();
                let __shape_y: [usize; 3] = [
                    B as usize,
                    __rt::shape::extent("shift3", "M - 1", (M - 1i64))?,
                    N as usize,
                ];
                let __fill_y = |
                    __pos_b: usize,
                    __row_y: &mut [::core::mem::MaybeUninit<f64>],
                | -> ::core::result::Result<(), __rt::Error> {
                    let b: i64 = __pos_b as i64;
                    for (__pos_i, __chunk_y_i) in __row_y.chunks_exact_mut(__shape_y[2]).enumerate()
                    {
                        let i: i64 = 1i64 + __pos_i as i64;
                        for (__pos_j, __slot_y) in __chunk_y_i.iter_mut().enumerate() {
                            let j: i64 = __pos_j as i64;
                            __slot_y
                                .write(
                                    unsafe {
                                        *x
                                            .as_ptr()
                                            .add(
                                                ((b as usize) * x.shape()[1] + i as usize) * x.shape()[2]
                                                    + j as usize,
                                            )
                                    }
                                        - unsafe {
                                            *x
                                                .as_ptr()
                                                .add(
                                                    ((b as usize) * x.shape()[1]
                                                        + i.wrapping_sub(1i64) as usize) * x.shape()[2] + j as usize,
                                                )
                                        },
                                );
                        }
                    }
                    Ok(())
                };
                let y: __nd::Array<f64, __nd::Ix3> = unsafe {
                    __rt::dest::fill_uninit_into("shift3", __shape_y, 2, __fill_y, &mut *__out0)
                }?;
                Ok(y)
            }
            #[allow(
                non_snake_case,
                unused_variables,
                unused_mut,
                unused_parens,
                unused_braces,
                unused_imports,
                dead_code,
                clippy::all,
                clippy::pedantic
            )]
            pub fn shift3<'__a0>(
                x: impl ::core::convert::Into<
                    ::einlang::__private::ndarray::ArrayView<
                        '__a0,
                        f64,
                        ::einlang::__private::ndarray::Ix3,
                    >,
                >,
            ) -> ::core::result::Result<
                ::einlang::__private::ndarray::Array<f64, ::einlang::__private::ndarray::Ix3>,
                ::einlang::__private::Error,
            > {
                __shift3_body(x.into(), &mut ::einlang::__private::dest::Out::none())
            }
            /// Writes the result of `shift3` into the caller's buffer `out`, of any strides, overwriting it.
            ///
            /// # Errors
            ///
            /// As `shift3`; also `Error::Shape` naming a buffer whose shape is not the result's, before
            /// anything is written to it.
            #[allow(
                non_snake_case,
                unused_variables,
                unused_mut,
                unused_parens,
                unused_braces,
                unused_imports,
                dead_code,
                clippy::all,
                clippy::pedantic
            )]
            pub fn shift3_into<'__a0, '__o0>(
                x: impl ::core::convert::Into<
                    ::einlang::__private::ndarray::ArrayView<
                        '__a0,
                        f64,
                        ::einlang::__private::ndarray::Ix3,
                    >,
                >,
                out: impl ::core::convert::Into<
                    ::einlang::__private::ndarray::ArrayViewMut<
                        '__o0,
                        f64,
                        ::einlang::__private::ndarray::Ix3,
                    >,
                >,
            ) -> ::core::result::Result<(), ::einlang::__private::Error> {
                let mut __out0 = ::einlang::__private::dest::Out::new("out", out.into());
                let __value0 = __shift3_body(x.into(), &mut __out0)?;
                __out0.finish("shift3", __value0)?;
                Ok(())
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

            #[allow(
                non_snake_case,
                unused_variables,
                unused_mut,
                unused_parens,
                unused_braces,
                unused_imports,
                dead_code,
                clippy::all,
                clippy::pedantic
            )]
            #[doc(hidden)]
            fn __stats_body(
                x: ::einlang::__private::ndarray::ArrayView<
                    '_,
                    f32,
                    ::einlang::__private::ndarray::Ix2,
                >,
                __out0: &mut ::einlang::__private::dest::Out<
                    '_,
                    i64,
                    ::einlang::__private::ndarray::Ix1,
                >,
                __out1: &mut ::einlang::__private::dest::Out<
                    '_,
                    f32,
                    ::einlang::__private::ndarray::Ix1,
                >,
            ) -> ::core::result::Result<
                (
                    ::einlang::__private::ndarray::Array<i64, ::einlang::__private::ndarray::Ix1>,
                    ::einlang::__private::ndarray::Array<f32, ::einlang::__private::ndarray::Ix1>,
                    f32,
                    bool,
                ),
                ::einlang::__private::Error,
            > {
                use ::einlang::__private as __rt;
                use ::einlang::__private::ndarray as __nd;
                let B: i64 = x.shape()[0] as i64;
                let N: i64 = x.shape()[1] as i64;
                let __standard_x = x.as_standard_layout();
                let x = __standard_x.view();
                let __fill_am = |
                    __first_am: usize,
                    __block_am: &mut [::core::mem::MaybeUninit<i64>],
                | -> ::core::result::Result<(), __rt::Error> {
                    for (__pos_b, __slot_am) in __block_am.iter_mut().enumerate() {
                        let b: i64 = (__first_am + __pos_b) as i64;
                        __slot_am
                            .write({
                                let mut __argmax_n: i64 = -1;
                                let mut __best_n: f32 = 0.0f32;
                                let mut __found_n = false;
                                for n in 0i64..N {
                                    let __v: f32 = unsafe {
                                        *x.as_ptr().add((b as usize) * x.shape()[1] + n as usize)
                                    };
                                    if !__found_n || __v > __best_n {
                                        __best_n = __v;
                                        __argmax_n = n;
                                        __found_n = true;
                                    }
                                }
                                __argmax_n
                            });
                    }
                    Ok(())
                };
                let am: __nd::Array<i64, __nd::Ix1> = unsafe {
                    __rt::dest::fill_uninit_into("stats", [B as usize], 1, __fill_am, &mut *__out0)
                }?;
                let first_row = x
                    .view()
                    .index_axis_move(
                        __nd::Axis(0),
                        __rt::shape::check_index("stats", "x", 0, 0i64, x.shape()[0])?,
                    );
                let total: f32 = {
                    let mut __sum_b2: f32 = 0.0f32;
                    for b2 in 0i64..B {
                        for n2 in 0i64..N {
                            if !((unsafe {
                                *x.as_ptr().add((b2 as usize) * x.shape()[1] + n2 as usize)
                            }) > 0.0f32)
                            {
                                continue;
                            }
                            __sum_b2
                                += unsafe {
                                    *x.as_ptr().add((b2 as usize) * x.shape()[1] + n2 as usize)
                                };
                        }
                    }
                    __sum_b2
                };
                let finite: bool = {
                    let mut __all_b3: bool = true;
                    '__all0: for b3 in 0i64..B {
                        for n3 in 0i64..N {
                            if !((unsafe {
                                *x.as_ptr().add((b3 as usize) * x.shape()[1] + n3 as usize)
                            })
                                .abs() < 1e30f32)
                            {
                                __all_b3 = false;
                                break '__all0;
                            }
                        }
                    }
                    __all_b3
                };
                Ok((am, __rt::value::owned(first_row), total, finite))
            }
            #[allow(
                non_snake_case,
                unused_variables,
                unused_mut,
                unused_parens,
                unused_braces,
                unused_imports,
                dead_code,
                clippy::all,
                clippy::pedantic
            )]
            pub fn stats<'__a0>(
                x: impl ::core::convert::Into<
                    ::einlang::__private::ndarray::ArrayView<
                        '__a0,
                        f32,
                        ::einlang::__private::ndarray::Ix2,
                    >,
                >,
            ) -> ::core::result::Result<
                (
                    ::einlang::__private::ndarray::Array<i64, ::einlang::__private::ndarray::Ix1>,
                    ::einlang::__private::ndarray::Array<f32, ::einlang::__private::ndarray::Ix1>,
                    f32,
                    bool,
                ),
                ::einlang::__private::Error,
            > {
                __stats_body(
                    x.into(),
                    &mut ::einlang::__private::dest::Out::none(),
                    &mut ::einlang::__private::dest::Out::none(),
                )
            }
            /// Writes the result of `stats` into the caller's buffers `out0`, `out1`, ... (one per tensor of the result, in order), of any strides, overwriting it.
            ///
            /// # Errors
            ///
            /// As `stats`; also `Error::Shape` naming a buffer whose shape is not the result's, before
            /// anything is written to it.
            #[allow(
                non_snake_case,
                unused_variables,
                unused_mut,
                unused_parens,
                unused_braces,
                unused_imports,
                dead_code,
                clippy::all,
                clippy::pedantic
            )]
            pub fn stats_into<'__a0, '__o0, '__o1>(
                x: impl ::core::convert::Into<
                    ::einlang::__private::ndarray::ArrayView<
                        '__a0,
                        f32,
                        ::einlang::__private::ndarray::Ix2,
                    >,
                >,
                out0: impl ::core::convert::Into<
                    ::einlang::__private::ndarray::ArrayViewMut<
                        '__o0,
                        i64,
                        ::einlang::__private::ndarray::Ix1,
                    >,
                >,
                out1: impl ::core::convert::Into<
                    ::einlang::__private::ndarray::ArrayViewMut<
                        '__o1,
                        f32,
                        ::einlang::__private::ndarray::Ix1,
                    >,
                >,
            ) -> ::core::result::Result<(f32, bool), ::einlang::__private::Error> {
                let mut __out0 = ::einlang::__private::dest::Out::new("out0", out0.into());
                let mut __out1 = ::einlang::__private::dest::Out::new("out1", out1.into());
                let (__value0, __value1, __rest2, __rest3) = __stats_body(
                    x.into(),
                    &mut __out0,
                    &mut __out1,
                )?;
                __out0.finish("stats", __value0)?;
                __out1.finish("stats", __value1)?;
                Ok((__rest2, __rest3))
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

            #[allow(
                non_snake_case,
                unused_variables,
                unused_mut,
                unused_parens,
                unused_braces,
                unused_imports,
                dead_code,
                clippy::all,
                clippy::pedantic
            )]
            pub fn scalars(
                p: i32,
                q: i32,
                s: f64,
            ) -> ::core::result::Result<(i32, f64, bool), ::einlang::__private::Error> {
                use ::einlang::__private as __rt;
                use ::einlang::__private::ndarray as __nd;
                let r: i32 = __rt::arith::int_rem("scalars", p.wrapping_pow(3u32), q)?;
                let t: f64 = if s > 2.5f64 {
                    __rt::vmath::sigmoid_f64(-s * 0.001f64)
                } else {
                    -0.5f64
                };
                let flag: bool = r != 0i32;
                let table = __rt::value::array_lit::<
                    f64,
                    _,
                >("scalars", [2usize, 2usize], ::std::vec![1.0f64, 2.0f64, 3.0f64, 4.0f64])?;
                Ok((
                    r,
                    ({
                        let zero_d: __nd::Array<f64, __nd::Ix0> = __nd::arr0(t);
                        (unsafe { *zero_d.uget(()) }
                            + unsafe { *table.uget([1i64 as usize, 0i64 as usize]) })
                    }) + flag as u8 as f64,
                    flag,
                ))
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

            #[allow(
                non_snake_case,
                unused_variables,
                unused_mut,
                unused_parens,
                unused_braces,
                unused_imports,
                dead_code,
                clippy::all,
                clippy::pedantic
            )]
            #[doc(hidden)]
            fn __pair_body(
                x: ::einlang::__private::ndarray::ArrayView<
                    '_,
                    f32,
                    ::einlang::__private::ndarray::Ix1,
                >,
                __out0: &mut ::einlang::__private::dest::Out<
                    '_,
                    f32,
                    ::einlang::__private::ndarray::Ix1,
                >,
            ) -> ::core::result::Result<
                (::einlang::__private::ndarray::Array<f32, ::einlang::__private::ndarray::Ix1>, f32),
                ::einlang::__private::Error,
            > {
                use ::einlang::__private as __rt;
                use ::einlang::__private::ndarray as __nd;
                let __standard_x = x.as_standard_layout();
                let x = __standard_x.view();
                Ok((__rt::value::owned(x), 1.0f32))
            }
            #[allow(
                non_snake_case,
                unused_variables,
                unused_mut,
                unused_parens,
                unused_braces,
                unused_imports,
                dead_code,
                clippy::all,
                clippy::pedantic
            )]
            pub fn pair<'__a0>(
                x: impl ::core::convert::Into<
                    ::einlang::__private::ndarray::ArrayView<
                        '__a0,
                        f32,
                        ::einlang::__private::ndarray::Ix1,
                    >,
                >,
            ) -> ::core::result::Result<
                (::einlang::__private::ndarray::Array<f32, ::einlang::__private::ndarray::Ix1>, f32),
                ::einlang::__private::Error,
            > {
                __pair_body(x.into(), &mut ::einlang::__private::dest::Out::none())
            }
            /// Writes the result of `pair` into the caller's buffers `out0`, `out1`, ... (one per tensor of the result, in order), of any strides, overwriting it.
            ///
            /// # Errors
            ///
            /// As `pair`; also `Error::Shape` naming a buffer whose shape is not the result's, before
            /// anything is written to it.
            #[allow(
                non_snake_case,
                unused_variables,
                unused_mut,
                unused_parens,
                unused_braces,
                unused_imports,
                dead_code,
                clippy::all,
                clippy::pedantic
            )]
            pub fn pair_into<'__a0, '__o0>(
                x: impl ::core::convert::Into<
                    ::einlang::__private::ndarray::ArrayView<
                        '__a0,
                        f32,
                        ::einlang::__private::ndarray::Ix1,
                    >,
                >,
                out0: impl ::core::convert::Into<
                    ::einlang::__private::ndarray::ArrayViewMut<
                        '__o0,
                        f32,
                        ::einlang::__private::ndarray::Ix1,
                    >,
                >,
            ) -> ::core::result::Result<f32, ::einlang::__private::Error> {
                let mut __out0 = ::einlang::__private::dest::Out::new("out0", out0.into());
                let (__value0, __rest1) = __pair_body(x.into(), &mut __out0)?;
                __out0.finish("pair", __value0)?;
                Ok(__rest1)
            }
            #[allow(
                non_snake_case,
                unused_variables,
                unused_mut,
                unused_parens,
                unused_braces,
                unused_imports,
                dead_code,
                clippy::all,
                clippy::pedantic
            )]
            #[doc(hidden)]
            fn __pick_body(
                x: ::einlang::__private::ndarray::ArrayView<
                    '_,
                    f32,
                    ::einlang::__private::ndarray::Ix1,
                >,
                c: bool,
                __out0: &mut ::einlang::__private::dest::Out<
                    '_,
                    f32,
                    ::einlang::__private::ndarray::Ix1,
                >,
            ) -> ::core::result::Result<
                ::einlang::__private::ndarray::Array<f32, ::einlang::__private::ndarray::Ix1>,
                ::einlang::__private::Error,
            > {
                use ::einlang::__private as __rt;
                use ::einlang::__private::ndarray as __nd;
                let __standard_x = x.as_standard_layout();
                let x = __standard_x.view();
                let p = pair(x.view())?;
                let q = p.0.view();
                let r = if c {
                    __rt::value::owned(q)
                } else {
                    let z = __rt::value::owned(pair(x.view())?.0);
                    z
                };
                let w = r;
                let __result = w;
                __rt::pool::recycle(p.0);
                Ok(__result)
            }
            #[allow(
                non_snake_case,
                unused_variables,
                unused_mut,
                unused_parens,
                unused_braces,
                unused_imports,
                dead_code,
                clippy::all,
                clippy::pedantic
            )]
            pub fn pick<'__a0>(
                x: impl ::core::convert::Into<
                    ::einlang::__private::ndarray::ArrayView<
                        '__a0,
                        f32,
                        ::einlang::__private::ndarray::Ix1,
                    >,
                >,
                c: bool,
            ) -> ::core::result::Result<
                ::einlang::__private::ndarray::Array<f32, ::einlang::__private::ndarray::Ix1>,
                ::einlang::__private::Error,
            > {
                __pick_body(x.into(), c, &mut ::einlang::__private::dest::Out::none())
            }
            /// Writes the result of `pick` into the caller's buffer `out`, of any strides, overwriting it.
            ///
            /// # Errors
            ///
            /// As `pick`; also `Error::Shape` naming a buffer whose shape is not the result's, before
            /// anything is written to it.
            #[allow(
                non_snake_case,
                unused_variables,
                unused_mut,
                unused_parens,
                unused_braces,
                unused_imports,
                dead_code,
                clippy::all,
                clippy::pedantic
            )]
            pub fn pick_into<'__a0, '__o0>(
                x: impl ::core::convert::Into<
                    ::einlang::__private::ndarray::ArrayView<
                        '__a0,
                        f32,
                        ::einlang::__private::ndarray::Ix1,
                    >,
                >,
                c: bool,
                out: impl ::core::convert::Into<
                    ::einlang::__private::ndarray::ArrayViewMut<
                        '__o0,
                        f32,
                        ::einlang::__private::ndarray::Ix1,
                    >,
                >,
            ) -> ::core::result::Result<(), ::einlang::__private::Error> {
                let mut __out0 = ::einlang::__private::dest::Out::new("out", out.into());
                let __value0 = __pick_body(x.into(), c, &mut __out0)?;
                __out0.finish("pick", __value0)?;
                Ok(())
            }
            #[allow(
                non_snake_case,
                unused_variables,
                unused_mut,
                unused_parens,
                unused_braces,
                unused_imports,
                dead_code,
                clippy::all,
                clippy::pedantic
            )]
            pub fn greet(
                s: &str,
            ) -> ::core::result::Result<::std::string::String, ::einlang::__private::Error> {
                use ::einlang::__private as __rt;
                use ::einlang::__private::ndarray as __nd;
                let t = greet(s)?;
                Ok(if 1i64 > 2i64 { t } else { ::std::string::String::from("hello") })
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
    p.fns[1].body[0] = Stmt::Let {
        var: VarId(2),
        value: expr(ExprKind::Call { func: "nope".to_string(), args: vec![] }, Repr::Scalar(F32)),
    };
    check_invalid(
        &p,
        expect![[r#"
        in `norm`: a call of `nope`, which is not a function of the program
        in `norm`: dimension `s` mentions `s` of type `f32`"#]],
    );
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
/// which vectorize, where one exists for the element type; `f64` `sin`
/// stays the standard library's.
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
        + __rt::vmath::log1p_f64(y) + y.sin() + __rt::vmath::erf_f64(y);
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
