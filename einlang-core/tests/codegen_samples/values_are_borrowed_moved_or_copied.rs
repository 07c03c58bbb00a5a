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
    let __standard_x = __rt::pool::standard("pair", "x", x.view())?;
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
    let __standard_x = __rt::pool::standard("pick", "x", x.view())?;
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
