// The Rust of a mutant of tests/stages/softmax.ein:
// use std::math::exp;
//
// /// Row softmax shifted by the row maximum.
// pub fn softmax(x: [f64; N, C]) -> [f64; N, C] {
//     let m[n] = max[c](x[n, c]);
//     let e[n, c] = (x[n, c] - m[n]);
//     let y[n, c] = e[n, c] / sum[k](e[n, k]);
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
fn __softmax_body(
    x: ::einlang::__private::ndarray::ArrayView<
        '_,
        f64,
        ::einlang::__private::ndarray::Ix2,
    >,
    __out0: &mut ::einlang::__private::dest::Out<
        '_,
        f64,
        ::einlang::__private::ndarray::Ix2,
    >,
) -> ::core::result::Result<
    ::einlang::__private::ndarray::Array<f64, ::einlang::__private::ndarray::Ix2>,
    ::einlang::__private::Error,
> {
    use ::einlang::__private as __rt;
    use ::einlang::__private::ndarray as __nd;
    let N: i64 = x.shape()[0] as i64;
    let C: i64 = x.shape()[1] as i64;
    let __standard_x = __rt::pool::standard("softmax", "x", x.view())?;
    let x = __standard_x.view();
    let __fill_y = |
        __pos_n_3: usize,
        __row_y: &mut [::core::mem::MaybeUninit<f64>],
    | -> ::core::result::Result<(), __rt::Error> {
        let n_3: i64 = __pos_n_3 as i64;
        let m: f64 = {
            let mut __lanes_c: [f64; 16] = [f64::NEG_INFINITY; 16];
            let mut __tail_c: f64 = f64::NEG_INFINITY;
            let __end_c: i64 = C;
            let mut __base_c: i64 = 0i64;
            while __end_c.saturating_sub(__base_c) >= 16i64 {
                for __lane in 0..16 {
                    let c: i64 = __base_c + __lane as i64;
                    let __v: f64 = unsafe {
                        *x.as_ptr().add((n_3 as usize) * x.shape()[1] + c as usize)
                    };
                    if __v > __lanes_c[__lane] {
                        __lanes_c[__lane] = __v;
                    }
                }
                __base_c += 16i64;
            }
            for c in __base_c..__end_c {
                let __v: f64 = unsafe {
                    *x.as_ptr().add((n_3 as usize) * x.shape()[1] + c as usize)
                };
                if __v > __tail_c {
                    __tail_c = __v;
                }
            }
            let mut __max_c: f64 = __lanes_c[0];
            if __lanes_c[1] > __max_c {
                __max_c = __lanes_c[1];
            }
            if __lanes_c[2] > __max_c {
                __max_c = __lanes_c[2];
            }
            if __lanes_c[3] > __max_c {
                __max_c = __lanes_c[3];
            }
            if __lanes_c[4] > __max_c {
                __max_c = __lanes_c[4];
            }
            if __lanes_c[5] > __max_c {
                __max_c = __lanes_c[5];
            }
            if __lanes_c[6] > __max_c {
                __max_c = __lanes_c[6];
            }
            if __lanes_c[7] > __max_c {
                __max_c = __lanes_c[7];
            }
            if __lanes_c[8] > __max_c {
                __max_c = __lanes_c[8];
            }
            if __lanes_c[9] > __max_c {
                __max_c = __lanes_c[9];
            }
            if __lanes_c[10] > __max_c {
                __max_c = __lanes_c[10];
            }
            if __lanes_c[11] > __max_c {
                __max_c = __lanes_c[11];
            }
            if __lanes_c[12] > __max_c {
                __max_c = __lanes_c[12];
            }
            if __lanes_c[13] > __max_c {
                __max_c = __lanes_c[13];
            }
            if __lanes_c[14] > __max_c {
                __max_c = __lanes_c[14];
            }
            if __lanes_c[15] > __max_c {
                __max_c = __lanes_c[15];
            }
            if __tail_c > __max_c {
                __max_c = __tail_c;
            }
            __max_c
        };
        let __len_y: usize = __row_y.len();
        let __ptr_y: *mut f64 = __row_y.as_mut_ptr().cast::<f64>();
        let mut __lanes: [f64; 16] = [0.0f64; 16];
        let mut __vals: [f64; 16] = [0.0f64; 16];
        let mut __tail: f64 = 0.0f64;
        let mut __start: usize = 0;
        let __ahead_x: bool = __rt::prefetch::rows_of(x.shape()[1].saturating_mul(8));
        let __next_x = x
            .as_ptr()
            .wrapping_add((n_3 as usize).wrapping_add(1).wrapping_mul(x.shape()[1]));
        while __len_y - __start >= 16 {
            if __ahead_x {
                __rt::prefetch::line(__next_x.wrapping_add(__start));
                __rt::prefetch::line(__next_x.wrapping_add((__start) + 8));
            }
            for __lane in 0..16 {
                let __pos_c_2: usize = __start + __lane;
                let c_2: i64 = __pos_c_2 as i64;
                __vals[__lane] = unsafe {
                    *x.as_ptr().add((n_3 as usize) * x.shape()[1] + c_2 as usize)
                } - m;
            }
            for __lane in 0..16 {
                unsafe { __ptr_y.add(__start + __lane).write(__vals[__lane]) };
                __lanes[__lane] += __vals[__lane];
            }
            __start += 16;
        }
        for __pos_c_2 in __start..__len_y {
            let c_2: i64 = __pos_c_2 as i64;
            let __v: f64 = unsafe {
                *x.as_ptr().add((n_3 as usize) * x.shape()[1] + c_2 as usize)
            } - m;
            unsafe { __ptr_y.add(__pos_c_2).write(__v) };
            __tail += __v;
        }
        let y_red: f64 = __rt::vmath::lanes::sum16(__lanes) + __tail;
        let e = unsafe {
            __nd::RawArrayView::from_shape_ptr(__len_y, __ptr_y as *const f64)
        };
        for __pos_c_3 in 0..__len_y {
            let c_3: i64 = __pos_c_3 as i64;
            let __v: f64 = unsafe { *e.as_ptr().add(c_3 as usize) } / y_red;
            unsafe { __ptr_y.add(__pos_c_3).write(__v) };
        }
        Ok(())
    };
    let y: __nd::Array<f64, __nd::Ix2> = unsafe {
        __rt::pool::named(
            "y",
            __rt::dest::fill_uninit_into(
                "softmax",
                [N as usize, C as usize],
                17,
                __fill_y,
                &mut *__out0,
            ),
        )
    }?;
    Ok(y)
}
/// Row softmax shifted by the row maximum.
///
/// # Einlang signature
///
/// ```text
/// fn softmax(x: [f64; N, C]) -> [f64; N, C]
/// ```
///
/// # Errors
///
/// Returns `Err` in these cases:
///
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
pub fn softmax<'__a0>(
    x: impl ::core::convert::Into<
        ::einlang::__private::ndarray::ArrayView<
            '__a0,
            f64,
            ::einlang::__private::ndarray::Ix2,
        >,
    >,
) -> ::core::result::Result<
    ::einlang::__private::ndarray::Array<f64, ::einlang::__private::ndarray::Ix2>,
    ::einlang::__private::Error,
> {
    __softmax_body(x.into(), &mut ::einlang::__private::dest::Out::none())
}
/// Writes the result of `softmax` into the caller's buffer `out`, of any strides, overwriting it.
///
/// # Errors
///
/// As `softmax`; also `Error::Shape` naming a buffer whose shape is not the result's, before
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
pub fn softmax_into<'__a0, '__o0>(
    x: impl ::core::convert::Into<
        ::einlang::__private::ndarray::ArrayView<
            '__a0,
            f64,
            ::einlang::__private::ndarray::Ix2,
        >,
    >,
    out: impl ::core::convert::Into<
        ::einlang::__private::ndarray::ArrayViewMut<
            '__o0,
            f64,
            ::einlang::__private::ndarray::Ix2,
        >,
    >,
) -> ::core::result::Result<(), ::einlang::__private::Error> {
    let mut __out0 = ::einlang::__private::dest::Out::new("out", out.into());
    let __value0 = __softmax_body(x.into(), &mut __out0)?;
    __out0.finish("softmax", __value0)?;
    Ok(())
}
