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
    let __standard_m = __rt::pool::standard("upper_relu", "m", m.view())?;
    let m = __standard_m.view();
    let __fill_u = |
        __pos_i: usize,
        __row_u: &mut [::core::mem::MaybeUninit<f32>],
    | -> ::core::result::Result<(), __rt::Error> {
        let i: i64 = __pos_i as i64;
        {
            let __first: i128 = (0i64) as i128;
            let __last: i128 = __first + (__row_u.len()) as i128 - 1;
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
            let m = m.view();
            for __slot_u in __row_u[..__a].iter_mut() {
                __slot_u.write(0.0f32);
            }
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
            for __slot_u in __row_u[__b..].iter_mut() {
                __slot_u.write(0.0f32);
            }
        }
        Ok(())
    };
    let u: __nd::Array<f32, __nd::Ix2> = unsafe {
        __rt::pool::named(
            "u",
            __rt::dest::fill_uninit_into(
                "upper_relu",
                [N as usize, N as usize],
                2,
                __fill_u,
                &mut *__out0,
            ),
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
