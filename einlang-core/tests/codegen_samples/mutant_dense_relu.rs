// The Rust of a mutant of tests/stages/dense_relu.ein:
// fn dense(x: [f32; B, I], w: [f32; I, O], b: [f32; O]) -> [f32; B, O] {
//     let y[n, o] = act where z = sum[i](x[n, 0] * w[i, o]) + b[o], act = if z > 0.0 { z } else { 0.0 };
//     y
// }
//
// /// Two dense layers, the second one scaled.
// pub fn mlp(x: [f32; B, I], w1: [f32; I, H], b1: [f32; H], w2: [f32; H, O], b2: [f32; O]) -> [f32; B, O] {
//     let h = dense(x, w1, b1);
//     dense(h, w2, b2) * 0.5
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
fn __dense_body(
    x: ::einlang::__private::ndarray::ArrayView<
        '_,
        f32,
        ::einlang::__private::ndarray::Ix2,
    >,
    w: ::einlang::__private::ndarray::ArrayView<
        '_,
        f32,
        ::einlang::__private::ndarray::Ix2,
    >,
    b: ::einlang::__private::ndarray::ArrayView<
        '_,
        f32,
        ::einlang::__private::ndarray::Ix1,
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
    let B: i64 = x.shape()[0] as i64;
    let I: i64 = x.shape()[1] as i64;
    let O: i64 = w.shape()[1] as i64;
    __rt::shape::check_dim("dense", "w", 0, "I", I, w.shape()[0])?;
    __rt::shape::check_dim("dense", "b", 0, "O", O, b.shape()[0])?;
    let __standard_x = __rt::pool::standard("dense", "x", x.view())?;
    let x = __standard_x.view();
    let __standard_w = __rt::pool::standard("dense", "w", w.view())?;
    let w = __standard_w.view();
    let __standard_b = __rt::pool::standard("dense", "b", b.view())?;
    let b = __standard_b.view();
    let __fill_y_cols = |
        __pos_n_2: usize,
        __row_y_cols: &mut [::core::mem::MaybeUninit<f32>],
    | -> ::core::result::Result<(), __rt::Error> {
        let n_2: i64 = __pos_n_2 as i64;
        for (__pos_i, __slot_y_cols) in __row_y_cols.iter_mut().enumerate() {
            let i: i64 = __pos_i as i64;
            __slot_y_cols
                .write('__guard0: {
                    if !(O > 0i64) {
                        break '__guard0 0.0f32;
                    }
                    x[[
                        __rt::shape::check_index("dense", "x", 0, n_2, x.shape()[0])?,
                        __rt::shape::check_index("dense", "x", 1, 0i64, x.shape()[1])?,
                    ]]
                });
        }
        Ok(())
    };
    let y_cols: __nd::Array<f32, __nd::Ix2> = unsafe {
        __rt::pool::named(
            "y_cols",
            __rt::par::fill_uninit("dense", [B as usize, I as usize], 7, __fill_y_cols),
        )
    }?;
    let y_kern = __rt::shape::leading_block(
        "dense",
        w.view(),
        &[I as usize, O as usize],
    )?;
    let y_cols_m: __nd::Array<f32, __nd::Ix2> = __rt::shape::reshape_owned(
        "dense",
        y_cols,
        [(B).max(0) as usize, (I).max(0) as usize],
    )?;
    let y_kern_m = __rt::shape::reshape_view(
        "dense",
        y_kern.view(),
        [(I).max(0) as usize, (O).max(0) as usize],
    )?;
    let y_prod_m: __nd::Array<f32, __nd::Ix2> = __rt::pool::named(
        "y_prod_m",
        __rt::gemm::matmul(
            "dense",
            B,
            O,
            I,
            y_cols_m.view().permuted_axes([0, 1]),
            y_kern_m.view().permuted_axes([0, 1]),
        ),
    )?;
    let y_prod: __nd::Array<f32, __nd::Ix2> = __rt::shape::reshape_owned(
        "dense",
        y_prod_m,
        [(B).max(0) as usize, (O).max(0) as usize],
    )?;
    let __fill_y = |
        __pos_n: usize,
        __row_y: &mut [::core::mem::MaybeUninit<f32>],
    | -> ::core::result::Result<(), __rt::Error> {
        let n: i64 = __pos_n as i64;
        for (__pos_o, __slot_y) in __row_y.iter_mut().enumerate() {
            let o: i64 = __pos_o as i64;
            __slot_y
                .write({
                    let z: f32 = unsafe {
                        *y_prod
                            .as_ptr()
                            .add((n as usize) * y_prod.shape()[1] + o as usize)
                    } + unsafe { *b.as_ptr().add(o as usize) };
                    let act: f32 = if z > 0.0f32 { z } else { 0.0f32 };
                    act
                });
        }
        Ok(())
    };
    let y: __nd::Array<f32, __nd::Ix2> = unsafe {
        __rt::pool::named(
            "y",
            __rt::dest::fill_uninit_into(
                "dense",
                [B as usize, O as usize],
                13,
                __fill_y,
                &mut *__out0,
            ),
        )
    }?;
    let __result = y;
    __rt::pool::recycle(y_cols_m);
    __rt::pool::recycle(y_prod);
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
fn dense<'__a0, '__a1, '__a2>(
    x: impl ::core::convert::Into<
        ::einlang::__private::ndarray::ArrayView<
            '__a0,
            f32,
            ::einlang::__private::ndarray::Ix2,
        >,
    >,
    w: impl ::core::convert::Into<
        ::einlang::__private::ndarray::ArrayView<
            '__a1,
            f32,
            ::einlang::__private::ndarray::Ix2,
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
    ::einlang::__private::ndarray::Array<f32, ::einlang::__private::ndarray::Ix2>,
    ::einlang::__private::Error,
> {
    __dense_body(
        x.into(),
        w.into(),
        b.into(),
        &mut ::einlang::__private::dest::Out::none(),
    )
}
/// Writes the result of `dense` into the caller's buffer `out`, of any strides, overwriting it.
///
/// # Errors
///
/// As `dense`; also `Error::Shape` naming a buffer whose shape is not the result's, before
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
fn dense_into<'__a0, '__a1, '__a2, '__o0>(
    x: impl ::core::convert::Into<
        ::einlang::__private::ndarray::ArrayView<
            '__a0,
            f32,
            ::einlang::__private::ndarray::Ix2,
        >,
    >,
    w: impl ::core::convert::Into<
        ::einlang::__private::ndarray::ArrayView<
            '__a1,
            f32,
            ::einlang::__private::ndarray::Ix2,
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
            ::einlang::__private::ndarray::Ix2,
        >,
    >,
) -> ::core::result::Result<(), ::einlang::__private::Error> {
    let mut __out0 = ::einlang::__private::dest::Out::new("out", out.into());
    let __value0 = __dense_body(x.into(), w.into(), b.into(), &mut __out0)?;
    __out0.finish("dense", __value0)?;
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
#[doc(hidden)]
fn __mlp_body(
    x: ::einlang::__private::ndarray::ArrayView<
        '_,
        f32,
        ::einlang::__private::ndarray::Ix2,
    >,
    w1: ::einlang::__private::ndarray::ArrayView<
        '_,
        f32,
        ::einlang::__private::ndarray::Ix2,
    >,
    b1: ::einlang::__private::ndarray::ArrayView<
        '_,
        f32,
        ::einlang::__private::ndarray::Ix1,
    >,
    w2: ::einlang::__private::ndarray::ArrayView<
        '_,
        f32,
        ::einlang::__private::ndarray::Ix2,
    >,
    b2: ::einlang::__private::ndarray::ArrayView<
        '_,
        f32,
        ::einlang::__private::ndarray::Ix1,
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
    let B: i64 = x.shape()[0] as i64;
    let I: i64 = x.shape()[1] as i64;
    let H: i64 = w1.shape()[1] as i64;
    let O: i64 = w2.shape()[1] as i64;
    __rt::shape::check_dim("mlp", "w1", 0, "I", I, w1.shape()[0])?;
    __rt::shape::check_dim("mlp", "b1", 0, "H", H, b1.shape()[0])?;
    __rt::shape::check_dim("mlp", "w2", 0, "H", H, w2.shape()[0])?;
    __rt::shape::check_dim("mlp", "b2", 0, "O", O, b2.shape()[0])?;
    let __standard_x = __rt::pool::standard("mlp", "x", x.view())?;
    let x = __standard_x.view();
    let __standard_w1 = __rt::pool::standard("mlp", "w1", w1.view())?;
    let w1 = __standard_w1.view();
    let __standard_b1 = __rt::pool::standard("mlp", "b1", b1.view())?;
    let b1 = __standard_b1.view();
    let __standard_w2 = __rt::pool::standard("mlp", "w2", w2.view())?;
    let w2 = __standard_w2.view();
    let __standard_b2 = __rt::pool::standard("mlp", "b2", b2.view())?;
    let b2 = __standard_b2.view();
    let h = dense(x.view(), w1.view(), b1.view())?;
    let arg = dense(h.view(), w2.view(), b2.view())?;
    let __fill_tmp = |
        __pos_i0: usize,
        __row_tmp: &mut [::core::mem::MaybeUninit<f32>],
    | -> ::core::result::Result<(), __rt::Error> {
        let i0: i64 = __pos_i0 as i64;
        for (__pos_i1, __slot_tmp) in __row_tmp.iter_mut().enumerate() {
            let i1: i64 = __pos_i1 as i64;
            __slot_tmp.write(unsafe { *arg.uget([i0 as usize, i1 as usize]) } * 0.5f32);
        }
        Ok(())
    };
    let tmp: __nd::Array<f32, __nd::Ix2> = unsafe {
        __rt::pool::named(
            "tmp",
            __rt::dest::fill_uninit_into(
                "mlp",
                [B as usize, O as usize],
                5,
                __fill_tmp,
                &mut *__out0,
            ),
        )
    }?;
    let __result = tmp;
    __rt::pool::recycle(arg);
    Ok(__result)
}
/// Two dense layers, the second one scaled.
///
/// # Einlang signature
///
/// ```text
/// fn mlp(x: [f32; B, I], w1: [f32; I, H], b1: [f32; H], w2: [f32; H, O], b2: [f32; O]) -> [f32; B, O]
/// ```
///
/// The lengths the arguments must agree on (every axis listed has that length):
///
/// - `I`: `x` axis 1, `w1` axis 0
/// - `H`: `w1` axis 1, `b1` axis 0, `w2` axis 0
/// - `O`: `w2` axis 1, `b2` axis 0
///
/// # Errors
///
/// Returns `Err` in these cases:
///
/// - `einlang::Error::Shape`: a tensor argument's length along an axis differs from what the signature and the other arguments say (see above), or a result's computed extent differs from the declared one.
/// - `einlang::Error::Extent`: an extent computed from the arguments' lengths is negative, or one index is bound to two different lengths.
/// - `einlang::Error::Index`: an index computed from data falls outside the tensor it reads.
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
pub fn mlp<'__a0, '__a1, '__a2, '__a3, '__a4>(
    x: impl ::core::convert::Into<
        ::einlang::__private::ndarray::ArrayView<
            '__a0,
            f32,
            ::einlang::__private::ndarray::Ix2,
        >,
    >,
    w1: impl ::core::convert::Into<
        ::einlang::__private::ndarray::ArrayView<
            '__a1,
            f32,
            ::einlang::__private::ndarray::Ix2,
        >,
    >,
    b1: impl ::core::convert::Into<
        ::einlang::__private::ndarray::ArrayView<
            '__a2,
            f32,
            ::einlang::__private::ndarray::Ix1,
        >,
    >,
    w2: impl ::core::convert::Into<
        ::einlang::__private::ndarray::ArrayView<
            '__a3,
            f32,
            ::einlang::__private::ndarray::Ix2,
        >,
    >,
    b2: impl ::core::convert::Into<
        ::einlang::__private::ndarray::ArrayView<
            '__a4,
            f32,
            ::einlang::__private::ndarray::Ix1,
        >,
    >,
) -> ::core::result::Result<
    ::einlang::__private::ndarray::Array<f32, ::einlang::__private::ndarray::Ix2>,
    ::einlang::__private::Error,
> {
    __mlp_body(
        x.into(),
        w1.into(),
        b1.into(),
        w2.into(),
        b2.into(),
        &mut ::einlang::__private::dest::Out::none(),
    )
}
/// Writes the result of `mlp` into the caller's buffer `out`, of any strides, overwriting it.
///
/// # Errors
///
/// As `mlp`; also `Error::Shape` naming a buffer whose shape is not the result's, before
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
pub fn mlp_into<'__a0, '__a1, '__a2, '__a3, '__a4, '__o0>(
    x: impl ::core::convert::Into<
        ::einlang::__private::ndarray::ArrayView<
            '__a0,
            f32,
            ::einlang::__private::ndarray::Ix2,
        >,
    >,
    w1: impl ::core::convert::Into<
        ::einlang::__private::ndarray::ArrayView<
            '__a1,
            f32,
            ::einlang::__private::ndarray::Ix2,
        >,
    >,
    b1: impl ::core::convert::Into<
        ::einlang::__private::ndarray::ArrayView<
            '__a2,
            f32,
            ::einlang::__private::ndarray::Ix1,
        >,
    >,
    w2: impl ::core::convert::Into<
        ::einlang::__private::ndarray::ArrayView<
            '__a3,
            f32,
            ::einlang::__private::ndarray::Ix2,
        >,
    >,
    b2: impl ::core::convert::Into<
        ::einlang::__private::ndarray::ArrayView<
            '__a4,
            f32,
            ::einlang::__private::ndarray::Ix1,
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
    let __value0 = __mlp_body(
        x.into(),
        w1.into(),
        b1.into(),
        w2.into(),
        b2.into(),
        &mut __out0,
    )?;
    __out0.finish("mlp", __value0)?;
    Ok(())
}
