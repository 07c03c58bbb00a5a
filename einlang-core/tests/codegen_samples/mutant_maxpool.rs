// The Rust of a mutant of tests/stages/maxpool.ein:
// /// 2x2 max-pool with stride 2, and the index of each row's maximum.
// pub fn pool(x: [f32; H, W]) -> ([f32; (H - 2) / 22  + 1, (W - 2) / 2 + 1], [i64; H]) {
//     let p[i, j] = max[di in 0..2, dj in 0..2](x[2 * i + di, 2 * j + dj]);
//     let a[i] = argmax[j](x[i, j]);
//     (p, a)
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
fn __pool_body(
    x: ::einlang::__private::ndarray::ArrayView<
        '_,
        f32,
        ::einlang::__private::ndarray::Ix2,
    >,
    __out0: &mut ::einlang::__private::dest::Out<
        '_,
        f32,
        ::einlang::__private::ndarray::Ix2,
    >,
    __out1: &mut ::einlang::__private::dest::Out<
        '_,
        i64,
        ::einlang::__private::ndarray::Ix1,
    >,
) -> ::core::result::Result<
    (
        ::einlang::__private::ndarray::Array<f32, ::einlang::__private::ndarray::Ix2>,
        ::einlang::__private::ndarray::Array<i64, ::einlang::__private::ndarray::Ix1>,
    ),
    ::einlang::__private::Error,
> {
    use ::einlang::__private as __rt;
    use ::einlang::__private::ndarray as __nd;
    let H: i64 = x.shape()[0] as i64;
    let W: i64 = x.shape()[1] as i64;
    let __standard_x = __rt::pool::standard("pool", "x", x.view())?;
    let x = __standard_x.view();
    let i_len: i64 = __rt::shape::checked_extent(
        "pool",
        "H / 2",
        (|| -> ::core::option::Option<i64> {
            ::core::option::Option::Some(((H)).checked_div_euclid((2i64))?)
        })(),
    )? as i64;
    let j_len: i64 = __rt::shape::checked_extent(
        "pool",
        "W / 2",
        (|| -> ::core::option::Option<i64> {
            ::core::option::Option::Some(((W)).checked_div_euclid((2i64))?)
        })(),
    )? as i64;
    let __fill_p = |
        __pos_i: usize,
        __row_p: &mut [::core::mem::MaybeUninit<f32>],
    | -> ::core::result::Result<(), __rt::Error> {
        let i: i64 = __pos_i as i64;
        for (__pos_j, __slot_p) in __row_p.iter_mut().enumerate() {
            let j: i64 = __pos_j as i64;
            __slot_p
                .write({
                    let mut __max_di: f32 = f32::NEG_INFINITY;
                    for di in 0i64..2i64 {
                        for dj in 0i64..2i64 {
                            let __v: f32 = unsafe {
                                *x
                                    .as_ptr()
                                    .add(
                                        (2i64.wrapping_mul(i).wrapping_add(di) as usize)
                                            * x.shape()[1]
                                            + 2i64.wrapping_mul(j).wrapping_add(dj) as usize,
                                    )
                            };
                            if __v > __max_di {
                                __max_di = __v;
                            }
                        }
                    }
                    __max_di
                });
        }
        Ok(())
    };
    let p: __nd::Array<f32, __nd::Ix2> = unsafe {
        __rt::pool::named(
            "p",
            __rt::par::fill_uninit(
                "pool",
                [i_len as usize, j_len as usize],
                49,
                __fill_p,
            ),
        )
    }?;
    let __fill_a = |
        __first_a: usize,
        __block_a: &mut [::core::mem::MaybeUninit<i64>],
    | -> ::core::result::Result<(), __rt::Error> {
        for (__pos_i_2, __slot_a) in __block_a.iter_mut().enumerate() {
            let i_2: i64 = (__first_a + __pos_i_2) as i64;
            __slot_a
                .write({
                    let mut __argmax_j_2: i64 = -1;
                    let mut __best_j_2: f32 = 0.0f32;
                    let mut __found_j_2 = false;
                    for j_2 in 0i64..W {
                        let __v: f32 = unsafe {
                            *x.as_ptr().add((i_2 as usize) * x.shape()[1] + j_2 as usize)
                        };
                        if !__found_j_2 || __v > __best_j_2 {
                            __best_j_2 = __v;
                            __argmax_j_2 = j_2;
                            __found_j_2 = true;
                        }
                    }
                    __argmax_j_2
                });
        }
        Ok(())
    };
    let a: __nd::Array<i64, __nd::Ix1> = unsafe {
        __rt::pool::named(
            "a",
            __rt::par::fill_uninit("pool", [H as usize], 257, __fill_a),
        )
    }?;
    let result = (p, a);
    __rt::shape::check_result_dim(
        "pool",
        0,
        "(H + 20) / 22",
        ((H + 20i64).div_euclid(22i64)),
        result.0.shape()[0],
    )?;
    Ok(result)
}
/// 2x2 max-pool with stride 2, and the index of each row's maximum.
///
/// # Einlang signature
///
/// ```text
/// fn pool(x: [f32; H, W]) -> ([f32; (H + 20) / 22, W / 2], [i64; H])
/// ```
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
pub fn pool<'__a0>(
    x: impl ::core::convert::Into<
        ::einlang::__private::ndarray::ArrayView<
            '__a0,
            f32,
            ::einlang::__private::ndarray::Ix2,
        >,
    >,
) -> ::core::result::Result<
    (
        ::einlang::__private::ndarray::Array<f32, ::einlang::__private::ndarray::Ix2>,
        ::einlang::__private::ndarray::Array<i64, ::einlang::__private::ndarray::Ix1>,
    ),
    ::einlang::__private::Error,
> {
    __pool_body(
        x.into(),
        &mut ::einlang::__private::dest::Out::none(),
        &mut ::einlang::__private::dest::Out::none(),
    )
}
/// Writes the result of `pool` into the caller's buffers `out0`, `out1`, ... (one per tensor of the result, in order), of any strides, overwriting it.
///
/// # Errors
///
/// As `pool`; also `Error::Shape` naming a buffer whose shape is not the result's, before
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
pub fn pool_into<'__a0, '__o0, '__o1>(
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
            f32,
            ::einlang::__private::ndarray::Ix2,
        >,
    >,
    out1: impl ::core::convert::Into<
        ::einlang::__private::ndarray::ArrayViewMut<
            '__o1,
            i64,
            ::einlang::__private::ndarray::Ix1,
        >,
    >,
) -> ::core::result::Result<(), ::einlang::__private::Error> {
    let mut __out0 = ::einlang::__private::dest::Out::new("out0", out0.into());
    let mut __out1 = ::einlang::__private::dest::Out::new("out1", out1.into());
    let (__value0, __value1) = __pool_body(x.into(), &mut __out0, &mut __out1)?;
    __out0.finish("pool", __value0)?;
    __out1.finish("pool", __value1)?;
    Ok(())
}
