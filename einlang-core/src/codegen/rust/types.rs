//! Rust spellings of IR types and literals.

use proc_macro2::TokenStream;
use quote::quote;

use super::{Bug, Code, Prec};
use crate::base::scalar::{int_fits, ScalarKind};
use crate::codegen::paths;
use crate::ir::{Literal, Repr};

// Higher ranks use `IxDyn`.
pub use crate::codegen::host::MAX_STATIC_RANK;

/// The Rust type of a scalar (see `host::scalar_type`).
pub fn scalar(k: ScalarKind) -> TokenStream {
    crate::codegen::host::scalar_type(k)
}

/// `nd::Ix2`, or `nd::IxDyn` above rank 6.
pub fn dim(rank: usize, nd: &TokenStream) -> TokenStream {
    dim_of(Some(rank), nd)
}

/// The dimension type of a rank, `None` for dynamic rank (`nd::IxDyn`).
pub fn dim_of(rank: Option<usize>, nd: &TokenStream) -> TokenStream {
    rank.and_then(|r| crate::codegen::host::static_dim(r, nd)).unwrap_or_else(|| quote!(#nd::IxDyn))
}

/// An owned tensor: `nd::Array<f32, nd::Ix2>` (`None`: dynamic rank).
pub fn array(k: ScalarKind, rank: Option<usize>, nd: &TokenStream) -> TokenStream {
    let (elem, dim) = (scalar(k), dim_of(rank, nd));
    quote!(#nd::Array<#elem, #dim>)
}

/// A tensor view: `nd::ArrayView<'a, f32, nd::Ix2>` (`'_` without a name;
/// rank `None`: dynamic).
pub fn view(k: ScalarKind, rank: Option<usize>, lifetime: Option<&syn::Lifetime>, nd: &TokenStream) -> TokenStream {
    let (elem, dim) = (scalar(k), dim_of(rank, nd));
    match lifetime {
        Some(lt) => quote!(#nd::ArrayView<#lt, #elem, #dim>),
        None => quote!(#nd::ArrayView<'_, #elem, #dim>),
    }
}

/// A mutable tensor view: `nd::ArrayViewMut<'a, f32, nd::Ix2>` (rank
/// `None`: dynamic).
pub fn view_mut(k: ScalarKind, rank: Option<usize>, lifetime: &syn::Lifetime, nd: &TokenStream) -> TokenStream {
    let (elem, dim) = (scalar(k), dim_of(rank, nd));
    quote!(#nd::ArrayViewMut<#lifetime, #elem, #dim>)
}

/// The type of a value the function body works with for a parameter: views
/// for tensors, `&str` for strings.
pub fn param(ty: &Repr, nd: &TokenStream) -> Result<TokenStream, Bug> {
    Ok(match ty {
        Repr::Scalar(k) => scalar(*k),
        Repr::Tensor(k, rank) => view(*k, Some(*rank), None, nd),
        Repr::Dyn(k) => view(*k, None, None, nd),
        Repr::Jagged(k) => {
            let (rt, t) = (paths::rt(), scalar(*k));
            quote!(&#rt::Jagged<#t>)
        }
        Repr::Str => quote!(&str),
        Repr::Strs => {
            let s = paths::string();
            quote!(&[#s])
        }
        Repr::Unit => quote!(()),
        Repr::Tuple(items) => {
            let items = items.iter().map(|t| param(t, nd)).collect::<Result<Vec<_>, _>>()?;
            tuple_of(items)
        }
    })
}

/// The owned type a function returns: arrays, `String`, tuples of those.
pub fn owned(ty: &Repr, nd: &TokenStream) -> TokenStream {
    match ty {
        Repr::Scalar(k) => scalar(*k),
        Repr::Tensor(k, rank) => array(*k, Some(*rank), nd),
        Repr::Dyn(k) => array(*k, None, nd),
        Repr::Jagged(k) => {
            let (rt, t) = (paths::rt(), scalar(*k));
            quote!(#rt::Jagged<#t>)
        }
        Repr::Str => paths::string(),
        Repr::Strs => {
            let s = paths::string();
            quote!(::std::vec::Vec<#s>)
        }
        Repr::Unit => quote!(()),
        Repr::Tuple(items) => tuple_of(items.iter().map(|t| owned(t, nd)).collect()),
    }
}

/// `()`, `(a,)`, `(a, b)`.
pub(super) fn tuple_of(items: Vec<TokenStream>) -> TokenStream {
    match items.len() {
        0 => quote!(()),
        1 => {
            let item = &items[0];
            quote!((#item,))
        }
        _ => quote!((#(#items),*)),
    }
}

/// A shape value for ndarray from `usize` lengths: `[a, b]` (an
/// `IntoDimension` for the static rank), `nd::IxDyn(&[...])` above rank 6.
pub fn shape(lens: &[TokenStream], nd: &TokenStream) -> TokenStream {
    if lens.is_empty() {
        quote!(#nd::Ix0())
    } else if lens.len() <= MAX_STATIC_RANK {
        quote!([#(#lens),*])
    } else {
        quote!(#nd::IxDyn(&[#(#lens),*]))
    }
}

/// A Rust expression parsed from generated text; literals go through here so
/// that a malformed one is an internal error rather than a panic.
fn parse_tokens(text: &str) -> Result<TokenStream, Bug> {
    text.parse::<TokenStream>().map_err(|e| format!("cannot emit literal `{text}`: {e}"))
}

/// `0` of a scalar type (`false` for `bool`).
pub fn zero(k: ScalarKind) -> TokenStream {
    constant(k, 0)
}

/// `1` of a scalar type (`true` for `bool`).
pub fn one(k: ScalarKind) -> TokenStream {
    constant(k, 1)
}

/// A small non-negative integer constant of type `k`.
fn constant(k: ScalarKind, v: u8) -> TokenStream {
    match k {
        ScalarKind::Bool => {
            if v == 0 {
                quote!(false)
            } else {
                quote!(true)
            }
        }
        _ if k.is_half() => {
            let t = scalar(k);
            if v == 0 {
                quote!(#t::ZERO)
            } else if v == 1 {
                quote!(#t::ONE)
            } else {
                let v = proc_macro2::Literal::f64_suffixed(f64::from(v));
                quote!(#t::from_f64_const(#v))
            }
        }
        _ if k.is_float() => {
            // `0.0f32` reads better than the `0f32` of `Literal::f32_suffixed`.
            let t = scalar(k);
            format!("{v}.0{}", k.name()).parse::<TokenStream>().unwrap_or_else(|_| quote!((#v as #t)))
        }
        _ => match suffixed_int(u128::from(v), k) {
            Some(lit) => quote!(#lit),
            None => {
                let lit = proc_macro2::Literal::u8_unsuffixed(v);
                quote!(#lit)
            }
        },
    }
}

/// The start of a `max` (`lowest`) or `min` (`highest`) reduction over
/// `k` and the comparison by which a term replaces it (`>`, `<`; NaN
/// compares false, so NaN terms are skipped).
pub fn extremum(max: bool, k: ScalarKind) -> (TokenStream, TokenStream) {
    if max {
        (lowest(k), quote!(>))
    } else {
        (highest(k), quote!(<))
    }
}

/// The identity of `max` (the least value of the type, `-inf` for floats).
pub fn lowest(k: ScalarKind) -> TokenStream {
    let t = scalar(k);
    if k.is_float() {
        quote!(#t::NEG_INFINITY)
    } else if k == ScalarKind::Bool {
        quote!(false)
    } else {
        quote!(#t::MIN)
    }
}

/// The identity of `min` (the greatest value of the type, `inf` for floats).
pub fn highest(k: ScalarKind) -> TokenStream {
    let t = scalar(k);
    if k.is_float() {
        quote!(#t::INFINITY)
    } else if k == ScalarKind::Bool {
        quote!(true)
    } else {
        quote!(#t::MAX)
    }
}

/// `v` with the suffix of integer type `k`, if it is a value of `k`.
fn suffixed_int(v: u128, k: ScalarKind) -> Option<proc_macro2::Literal> {
    use proc_macro2::Literal as L;
    Some(match k {
        ScalarKind::I8 => L::i8_suffixed(i8::try_from(v).ok()?),
        ScalarKind::I16 => L::i16_suffixed(i16::try_from(v).ok()?),
        ScalarKind::I32 => L::i32_suffixed(i32::try_from(v).ok()?),
        ScalarKind::I64 => L::i64_suffixed(i64::try_from(v).ok()?),
        ScalarKind::U8 => L::u8_suffixed(u8::try_from(v).ok()?),
        ScalarKind::U32 => L::u32_suffixed(u32::try_from(v).ok()?),
        ScalarKind::U64 => L::u64_suffixed(u64::try_from(v).ok()?),
        _ => return None,
    })
}

/// A literal of its IR type. Negative numbers are a unary minus applied to
/// a positive literal (`-3i64`), the form rustc and prettyplease expect.
pub fn literal(lit: &Literal, ty: &Repr) -> Result<Code, Bug> {
    let kind = match ty {
        Repr::Scalar(k) => Some(*k),
        Repr::Str => None,
        other => return Err(format!("a literal of type `{other:?}`")),
    };
    match (lit, kind) {
        (Literal::Bool(b), Some(ScalarKind::Bool)) => {
            Ok(Code::new(if *b { quote!(true) } else { quote!(false) }, Prec::Postfix))
        }
        (Literal::Str(s), None) => {
            let lit = proc_macro2::Literal::string(s);
            Ok(Code::new(quote!(#lit), Prec::Postfix))
        }
        (Literal::Int(v), Some(k)) if k.is_int() => {
            if !int_fits(*v, k) {
                return Err(format!("integer literal {v} does not fit `{}`", k.name()));
            }
            let t = scalar(k);
            if *v < 0 && !int_fits(-*v, k) {
                // The most negative value has no positive counterpart.
                return Ok(Code::new(quote!(#t::MIN), Prec::Postfix));
            }
            let magnitude = suffixed_int(v.unsigned_abs(), k)
                .ok_or_else(|| format!("integer literal {v} does not fit `{}`", k.name()))?;
            if *v < 0 {
                Ok(Code::new(quote!(-#magnitude), Prec::Unary))
            } else {
                Ok(Code::new(quote!(#magnitude), Prec::Postfix))
            }
        }
        (Literal::Int(v), Some(k)) if k.is_float() => float_literal(&format!("{v}"), k),
        (Literal::Float(text), Some(k)) if k.is_float() => float_literal(text, k),
        (lit, _) => Err(format!("literal {lit:?} cannot have type `{ty:?}`")),
    }
}

/// A float literal of type `k` with the value of `text` rounded once to `k`
/// (so `0.1f32` is the `f32` nearest to 0.1), in Rust's shortest form.
fn float_literal(text: &str, k: ScalarKind) -> Result<Code, Bug> {
    let cleaned: String = text.chars().filter(|c| *c != '_').collect();
    let (negative, digits) = match cleaned.strip_prefix('-') {
        Some(rest) => (true, rest.to_string()),
        None => (false, cleaned),
    };
    let t = scalar(k);
    if k.is_half() {
        // Rounded once from the literal's f64 value (`from_f64_const`
        // rounds to nearest, ties to even).
        let v: f64 = digits.parse().map_err(|_| format!("float literal `{text}` is not a number"))?;
        let v = if negative { -v } else { v };
        let lit = if v.is_nan() {
            quote!(::core::primitive::f64::NAN)
        } else if v.is_infinite() && v > 0.0 {
            quote!(::core::primitive::f64::INFINITY)
        } else if v.is_infinite() {
            quote!(::core::primitive::f64::NEG_INFINITY)
        } else {
            let l = proc_macro2::Literal::f64_suffixed(v.abs());
            if v.is_sign_negative() {
                quote!(-#l)
            } else {
                quote!(#l)
            }
        };
        return Ok(Code::new(quote!(#t::from_f64_const(#lit)), Prec::Postfix));
    }
    let (finite, shortest) = if k == ScalarKind::F32 {
        let v: f32 = digits.parse().map_err(|_| format!("float literal `{text}` is not a number"))?;
        (v.is_finite(), format!("{v:?}"))
    } else {
        let v: f64 = digits.parse().map_err(|_| format!("float literal `{text}` is not a number"))?;
        (v.is_finite(), format!("{v:?}"))
    };
    let magnitude = if !finite {
        if shortest.contains("NaN") {
            quote!(#t::NAN)
        } else {
            quote!(#t::INFINITY)
        }
    } else {
        parse_tokens(&format!("{shortest}{}", k.name()))?
    };
    if negative {
        Ok(Code::new(quote!(-#magnitude), Prec::Unary))
    } else {
        Ok(Code::new(magnitude, Prec::Postfix))
    }
}

/// A string literal token.
pub fn str_lit(s: &str) -> proc_macro2::Literal {
    proc_macro2::Literal::string(s)
}

/// An unsuffixed `usize`-like literal (axes, positions).
pub fn usize_lit(n: usize) -> proc_macro2::Literal {
    proc_macro2::Literal::usize_unsuffixed(n)
}

/// An `i64` literal (loop bounds, offsets).
pub fn i64_lit(n: i64) -> proc_macro2::Literal {
    proc_macro2::Literal::i64_suffixed(n)
}
