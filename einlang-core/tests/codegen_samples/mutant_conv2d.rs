// The Rust of a mutant of tests/stages/conv2d.ein:
// /// Valid 2-D convolution with bias.
// pub fn conv2d(x: [f32; C, H, W], w: [f32; O, C, KH, KW], b: [f32; O]) -> [f32; O, H - KH + 1, W + KW + 1] {
//     let y[o, oy, ox] = sum[c, r, s](x[c, iy, ix] * w[o, c, r, s]) + b[o] where iy = oy + r, ix = ox + s;
//     y
// }
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
fn __conv2d_body(
    x: ::einlang::__private::ndarray::ArrayView<
        '_,
        f32,
        ::einlang::__private::ndarray::Ix3,
    >,
    w: ::einlang::__private::ndarray::ArrayView<
        '_,
        f32,
        ::einlang::__private::ndarray::Ix4,
    >,
    b: ::einlang::__private::ndarray::ArrayView<
        '_,
        f32,
        ::einlang::__private::ndarray::Ix1,
    >,
    __out0: &mut ::einlang::__private::dest::Out<
        '_,
        f32,
        ::einlang::__private::ndarray::Ix3,
    >,
) -> ::core::result::Result<
    ::einlang::__private::ndarray::Array<f32, ::einlang::__private::ndarray::Ix3>,
    ::einlang::__private::Error,
> {
    use ::einlang::__private as __rt;
    use ::einlang::__private::ndarray as __nd;
    let C: i64 = x.shape()[0] as i64;
    let H: i64 = x.shape()[1] as i64;
    let W: i64 = x.shape()[2] as i64;
    let O: i64 = w.shape()[0] as i64;
    let KH: i64 = w.shape()[2] as i64;
    let KW: i64 = w.shape()[3] as i64;
    __rt::shape::check_dim("conv2d", "w", 1, "C", C, w.shape()[1])?;
    __rt::shape::check_dim("conv2d", "b", 0, "O", O, b.shape()[0])?;
    let __standard_x = __rt::pool::standard("conv2d", "x", x.view())?;
    let x = __standard_x.view();
    let __standard_w = __rt::pool::standard("conv2d", "w", w.view())?;
    let w = __standard_w.view();
    let __standard_b = __rt::pool::standard("conv2d", "b", b.view())?;
    let b = __standard_b.view();
    let oy_len: i64 = __rt::shape::checked_extent(
        "conv2d",
        "H - KH + 1",
        (|| -> ::core::option::Option<i64> {
            ::core::option::Option::Some((H).checked_sub((KH))?.checked_add((1i64))?)
        })(),
    )? as i64;
    let ox_len: i64 = __rt::shape::checked_extent(
        "conv2d",
        "W - KW + 1",
        (|| -> ::core::option::Option<i64> {
            ::core::option::Option::Some((W).checked_sub((KW))?.checked_add((1i64))?)
        })(),
    )? as i64;
    let y: __nd::Array<f32, __nd::Ix3> = {
        let mut __out_y: __nd::Array<f32, __nd::Ix3> = __rt::pool::zeros(
            "conv2d",
            "y",
            [O as usize, oy_len as usize, ox_len as usize],
            <f32>::default(),
        )?;
        __rt::conv::conv2d(
            "conv2d",
            x.view().insert_axis(__nd::Axis(0)),
            w.view(),
            ::core::option::Option::Some(b.view()),
            (0, 0),
            false,
            __out_y.view_mut().insert_axis(__nd::Axis(0)),
        )?;
        __out_y
    };
    __rt::shape::check_result_dim(
        "conv2d",
        2,
        "W + KW + 1",
        (W + KW + 1i64),
        y.shape()[2],
    )?;
    Ok(y)
}
/// Valid 2-D convolution with bias.
///
/// # Einlang signature
///
/// ```text
/// fn conv2d(x: [f32; C, H, W], w: [f32; O, C, KH, KW], b: [f32; O]) -> [f32; O, H - KH + 1, W + KW + 1]
/// ```
///
/// The lengths the arguments must agree on (every axis listed has that length):
///
/// - `C`: `x` axis 0, `w` axis 1
/// - `O`: `w` axis 0, `b` axis 0
///
/// # Errors
///
/// Returns `Err` in these cases:
///
/// - `einlang::Error::Shape`: a tensor argument's length along an axis differs from what the signature and the other arguments say (see above), or a result's computed extent differs from the declared one.
/// - `einlang::Error::Extent`: an extent computed from the arguments' lengths is negative, or one index is bound to two different lengths.
/// - `einlang::Error::Alloc`: a tensor whose size comes from the arguments (a result, a temporary, or the row-major copy of an argument passed with other strides) cannot be allocated (the process is not taken down).
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
pub fn conv2d<'__a0, '__a1, '__a2>(
    x: impl ::core::convert::Into<
        ::einlang::__private::ndarray::ArrayView<
            '__a0,
            f32,
            ::einlang::__private::ndarray::Ix3,
        >,
    >,
    w: impl ::core::convert::Into<
        ::einlang::__private::ndarray::ArrayView<
            '__a1,
            f32,
            ::einlang::__private::ndarray::Ix4,
        >,
    >,
    b: impl ::core::convert::Into<
        ::einlang::__private::ndarray::ArrayView<
            '__a2,
            f32,
            ::einlang::__private::ndarray::Ix1,
        >,
    >,
) -> ::core::result::Result<
    ::einlang::__private::ndarray::Array<f32, ::einlang::__private::ndarray::Ix3>,
    ::einlang::__private::Error,
> {
    __conv2d_body(
        x.into(),
        w.into(),
        b.into(),
        &mut ::einlang::__private::dest::Out::none(),
    )
}
/// Writes the result of `conv2d` into the caller's buffer `out`, of any strides, overwriting it.
///
/// # Errors
///
/// As `conv2d`; also `Error::Shape` naming a buffer whose shape is not the result's, before
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
pub fn conv2d_into<'__a0, '__a1, '__a2, '__o0>(
    x: impl ::core::convert::Into<
        ::einlang::__private::ndarray::ArrayView<
            '__a0,
            f32,
            ::einlang::__private::ndarray::Ix3,
        >,
    >,
    w: impl ::core::convert::Into<
        ::einlang::__private::ndarray::ArrayView<
            '__a1,
            f32,
            ::einlang::__private::ndarray::Ix4,
        >,
    >,
    b: impl ::core::convert::Into<
        ::einlang::__private::ndarray::ArrayView<
            '__a2,
            f32,
            ::einlang::__private::ndarray::Ix1,
        >,
    >,
    out: impl ::core::convert::Into<
        ::einlang::__private::ndarray::ArrayViewMut<
            '__o0,
            f32,
            ::einlang::__private::ndarray::Ix3,
        >,
    >,
) -> ::core::result::Result<(), ::einlang::__private::Error> {
    let mut __out0 = ::einlang::__private::dest::Out::new("out", out.into());
    let __value0 = __conv2d_body(x.into(), w.into(), b.into(), &mut __out0)?;
    __out0.finish("conv2d", __value0)?;
    Ok(())
}
