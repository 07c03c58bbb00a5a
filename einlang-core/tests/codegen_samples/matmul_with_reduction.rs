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
    #[allow(unused_imports)]
    use ::einlang::__private::vmath::lanes::portable as __simd;
    use ::einlang::__private as __rt;
    use ::einlang::__private::ndarray as __nd;
    let M: i64 = a.shape()[0] as i64;
    let K: i64 = a.shape()[1] as i64;
    let N: i64 = b.shape()[1] as i64;
    __rt::shape::check_dim("matmul", "b", 0, "K", K, b.shape()[0])?;
    let __standard_a = __rt::pool::standard("matmul", "a", a.view())?;
    let a = __standard_a.view();
    let __standard_b = __rt::pool::standard("matmul", "b", b.view())?;
    let b = __standard_b.view();
    let c: __nd::Array<f32, __nd::Ix2> = __rt::pool::named(
        "c",
        __rt::dest::fill_into(
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
        ),
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
