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
pub fn sum_sq<'__a0>(
    x: impl ::core::convert::Into<
        ::einlang::__private::ndarray::ArrayView<
            '__a0,
            f32,
            ::einlang::__private::ndarray::Ix1,
        >,
    >,
) -> ::core::result::Result<f32, ::einlang::__private::Error> {
    fn __body(
        x: ::einlang::__private::ndarray::ArrayView<
            '_,
            f32,
            ::einlang::__private::ndarray::Ix1,
        >,
    ) -> ::core::result::Result<f32, ::einlang::__private::Error> {
        #[allow(unused_imports)]
        use ::einlang::__private::vmath::lanes::portable as __simd;
        use ::einlang::__private as __rt;
        use ::einlang::__private::ndarray as __nd;
        let N: i64 = x.shape()[0] as i64;
        let __standard_x = __rt::pool::standard("sum_sq", "x", x.view())?;
        let x = __standard_x.view();
        Ok(
            __rt::par::reduce(
                0i64,
                N,
                8usize,
                |__from: i64, __to: i64| -> ::core::result::Result<f32, __rt::Error> {
                    Ok({
                        let mut __lanes_i: [f32; 16] = [0.0f32; 16];
                        let mut __tail_i: f32 = 0.0f32;
                        let __end_i: i64 = __to;
                        let mut __base_i: i64 = __from;
                        while __end_i.saturating_sub(__base_i) >= 16i64 {
                            for __lane in 0..16 {
                                let i: i64 = __base_i + __lane as i64;
                                __lanes_i[__lane]
                                    += (unsafe { *x.as_ptr().add(i as usize) }).powi(2);
                            }
                            __base_i += 16i64;
                        }
                        for i in __base_i..__end_i {
                            __tail_i += (unsafe { *x.as_ptr().add(i as usize) }).powi(2);
                        }
                        let mut __sum_i: f32 = unsafe { __simd::sum16_f32(__lanes_i) }
                            + __tail_i;
                        __sum_i
                    })
                },
                |__a: f32, __b: f32| __a + __b,
            )?,
        )
    }
    __body(x.into())
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
fn norm<'__a0>(
    x: impl ::core::convert::Into<
        ::einlang::__private::ndarray::ArrayView<
            '__a0,
            f32,
            ::einlang::__private::ndarray::Ix1,
        >,
    >,
) -> ::core::result::Result<f32, ::einlang::__private::Error> {
    fn __body(
        x: ::einlang::__private::ndarray::ArrayView<
            '_,
            f32,
            ::einlang::__private::ndarray::Ix1,
        >,
    ) -> ::core::result::Result<f32, ::einlang::__private::Error> {
        use ::einlang::__private as __rt;
        use ::einlang::__private::ndarray as __nd;
        let N: i64 = x.shape()[0] as i64;
        let __standard_x = __rt::pool::standard("norm", "x", x.view())?;
        let x = __standard_x.view();
        let s: f32 = sum_sq(x.view())?;
        let half: i64 = __rt::arith::int_div("norm", N, 2i64)?;
        Ok(s.sqrt() / half as f32)
    }
    __body(x.into())
}
