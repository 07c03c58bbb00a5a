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
    let __standard_x = __rt::pool::standard("stats", "x", x.view())?;
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
        __rt::pool::named(
            "am",
            __rt::dest::fill_uninit_into(
                "stats",
                [B as usize],
                1,
                __fill_am,
                &mut *__out0,
            ),
        )
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
