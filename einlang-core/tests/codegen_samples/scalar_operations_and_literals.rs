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
pub fn scalars(
    p: i32,
    q: i32,
    s: f64,
) -> ::core::result::Result<(i32, f64, bool), ::einlang::__private::Error> {
    use ::einlang::__private as __rt;
    use ::einlang::__private::ndarray as __nd;
    let r: i32 = __rt::arith::int_rem("scalars", p.wrapping_pow(3u32), q)?;
    let t: f64 = if s > 2.5f64 {
        __rt::vmath::sigmoid_f64(-s * 0.001f64)
    } else {
        -0.5f64
    };
    let flag: bool = r != 0i32;
    let table = __rt::value::array_lit::<
        f64,
        _,
    >("scalars", [2usize, 2usize], ::std::vec![1.0f64, 2.0f64, 3.0f64, 4.0f64])?;
    Ok((
        r,
        ({
            let zero_d: __nd::Array<f64, __nd::Ix0> = __nd::arr0(t);
            (unsafe { *zero_d.uget(()) }
                + unsafe { *table.uget([1i64 as usize, 0i64 as usize]) })
        }) + flag as u8 as f64,
        flag,
    ))
}
