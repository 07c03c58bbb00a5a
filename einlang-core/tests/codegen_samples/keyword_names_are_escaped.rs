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
#[inline(always)]
fn loop_(type_: f32) -> ::core::result::Result<f32, ::einlang::__private::Error> {
    use ::einlang::__private as __rt;
    use ::einlang::__private::ndarray as __nd;
    Ok(type_ * 2.0f32)
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
pub fn match_<'__a0>(
    self_: impl ::core::convert::Into<
        ::einlang::__private::ndarray::ArrayView<
            '__a0,
            f32,
            ::einlang::__private::ndarray::Ix1,
        >,
    >,
) -> ::core::result::Result<f32, ::einlang::__private::Error> {
    fn __body(
        self_: ::einlang::__private::ndarray::ArrayView<
            '_,
            f32,
            ::einlang::__private::ndarray::Ix1,
        >,
    ) -> ::core::result::Result<f32, ::einlang::__private::Error> {
        use ::einlang::__private as __rt;
        use ::einlang::__private::ndarray as __nd;
        let N: i64 = self_.shape()[0] as i64;
        let __standard_self_ = __rt::pool::standard("match_", "self", self_.view())?;
        let self_ = __standard_self_.view();
        let Ok_: f32 = loop_(
            self_[[
                __rt::shape::check_index("match_", "self", 0, 0i64, self_.shape()[0])?,
            ]],
        )?;
        let x_: f32 = Ok_;
        let type_: f32 = x_;
        let type__2: f32 = type_ + x_;
        Ok(type__2)
    }
    __body(self_.into())
}
