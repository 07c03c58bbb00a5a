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
    #[allow(unused_imports)]
    use ::einlang::__private::vmath::lanes::portable as __simd;
    use ::einlang::__private as __rt;
    use ::einlang::__private::ndarray as __nd;
    let N: i64 = x.shape()[0] as i64;
    let K: i64 = w.shape()[0] as i64;
    let __standard_x = __rt::pool::standard("conv1d", "x", x.view())?;
    let x = __standard_x.view();
    let __standard_w = __rt::pool::standard("conv1d", "w", w.view())?;
    let w = __standard_w.view();
    let len_t: i64 = __rt::shape::checked_extent(
        "conv1d",
        "N - K + 1",
        (|| -> ::core::option::Option<i64> {
            ::core::option::Option::Some((N).checked_sub((K))?.checked_add((1i64))?)
        })(),
    )? as i64;
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
                    let mut __sum_r: f32 = unsafe { __simd::sum16_f32(__lanes_r) }
                        + __tail_r;
                    __sum_r
                });
        }
        Ok(())
    };
    let y: __nd::Array<f32, __nd::Ix1> = unsafe {
        __rt::pool::named(
            "y",
            __rt::par::fill_uninit("conv1d", [len_t as usize], 2, __fill_y),
        )
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
