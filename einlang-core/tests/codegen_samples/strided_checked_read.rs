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
    let __standard_x = __rt::pool::standard("every_other", "x", x.view())?;
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
        __rt::pool::named(
            "y",
            __rt::dest::fill_uninit_into(
                "every_other",
                [__rt::shape::extent("every_other", "m", m)?],
                1,
                __fill_y,
                &mut *__out0,
            ),
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
