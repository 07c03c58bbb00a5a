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
    let __standard_x = __rt::pool::standard("shift3", "x", x.view())?;
    let x = __standard_x.view();
    let __shape_y: [usize; 3] = [
        B as usize,
        __rt::shape::checked_extent(
            "shift3",
            "M - 1",
            (|| -> ::core::option::Option<i64> {
                ::core::option::Option::Some((M).checked_sub((1i64))?)
            })(),
        )?,
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
        __rt::pool::named(
            "y",
            __rt::dest::fill_uninit_into("shift3", __shape_y, 2, __fill_y, &mut *__out0),
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
