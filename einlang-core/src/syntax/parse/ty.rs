//! Types and the dimension expressions inside tensor types.

use proc_macro2::Delimiter;
use syn::parse::ParseStream;
use syn::{token, Token};

use super::{
    brackets, enter, error_with_help, error_with_note, expected, parens, parse_comma_list, parse_name, peek_group_at,
    peek_name_at, peek_pow,
};
use crate::base::span::Span;
use crate::syntax::ast::{BinOp, DimExpr, ScalarKind, Type};

/// `f32`, `str`, `[T; d, ...]`, `[T]`, `[T; *]`, `jagged[T]`, `(A, B)`,
/// `(A, B) -> R`.
pub(super) fn parse_type(input: ParseStream) -> syn::Result<Type> {
    let _guard = enter(input)?;
    if input.peek(token::Bracket) {
        return parse_tensor_type(input);
    }
    if input.peek(token::Paren) {
        return parse_paren_type(input);
    }
    let Some(ident) = peek_name_at(input, 0) else {
        return Err(expected(input, "a type"));
    };
    let name = ident.to_string();
    if name == "jagged" && peek_group_at(input, 1, Delimiter::Bracket) {
        let keyword = parse_name(input)?;
        let (group, content) = brackets(input)?;
        let elem = parse_type(&content)?;
        if !content.is_empty() {
            return Err(expected(&content, "`]`"));
        }
        return Ok(Type::Jagged { elem: Box::new(elem), span: keyword.span.to(group) });
    }
    let name = parse_name(input)?;
    if name.name == "str" {
        return Ok(Type::Str(name.span));
    }
    match ScalarKind::from_name(&name.name) {
        Some(kind) => Ok(Type::Scalar(kind, name.span)),
        None => Err(unknown_type(&name.name, name.span.lo())),
    }
}

/// "unknown type `x`", with a suggestion for names from other languages.
fn unknown_type(name: &str, span: proc_macro2::Span) -> syn::Error {
    let message = format!("unknown type `{name}`");
    let help = match name {
        "float" | "double" | "f16" | "real" => Some("use `f32` or `f64`"),
        "int" | "integer" | "long" | "isize" | "usize" | "i128" | "u16" | "u128" => {
            Some("use one of `i8`, `i16`, `i32`, `i64`, `u8`, `u32`, `u64`")
        }
        "String" | "string" => Some("use `str`"),
        _ => None,
    };
    match help {
        Some(help) => error_with_help(span, &message, help),
        None => error_with_note(
            span,
            &message,
            "the types are `i8`, `i16`, `i32`, `i64`, `u8`, `u32`, `u64`, `f32`, `f64`, `bool`, `str`, \
             tensors `[T; d1, d2]` and `jagged[T]`, tuples `(A, B)` and functions `(A) -> B`",
        ),
    }
}

/// `[T]`, `[T; d1, d2, ...]` or `[T; *]`.
fn parse_tensor_type(input: ParseStream) -> syn::Result<Type> {
    let (span, content) = brackets(input)?;
    let elem = Box::new(parse_type(&content)?);
    if content.is_empty() {
        return Ok(Type::Tensor { elem, dims: None, span });
    }
    if !content.peek(Token![;]) {
        return Err(expected(&content, "`;` or `]`"));
    }
    content.parse::<Token![;]>()?;
    if content.peek(Token![*]) && !peek_pow(&content) {
        content.parse::<Token![*]>()?;
        if !content.is_empty() {
            return Err(expected(&content, "`]` after `*`"));
        }
        return Ok(Type::DynRank { elem, span });
    }
    let dims = parse_comma_list(&content, "]", parse_dim)?;
    if dims.is_empty() {
        return Err(expected(&content, "a dimension"));
    }
    Ok(Type::Tensor { elem, dims: Some(dims), span })
}

/// `(A, B)`, `(A,)`, `()`, `(A)` (just `A`), or a function type
/// `(A, B) -> R`.
fn parse_paren_type(input: ParseStream) -> syn::Result<Type> {
    let (span, content) = parens(input)?;
    let (mut elems, trailing_comma) = super::comma_list(&content, parse_type)?;
    if input.peek(Token![->]) {
        input.parse::<Token![->]>()?;
        let ret = parse_type(input)?;
        let span = span.to(ret.span());
        return Ok(Type::Fn { params: elems, ret: Box::new(ret), span });
    }
    if elems.len() == 1 && !trailing_comma {
        return Ok(elems.remove(0));
    }
    Ok(Type::Tuple(elems, span))
}

/// A dimension: `+ -` over `* /` over literals, names, `?` and parentheses.
fn parse_dim(input: ParseStream) -> syn::Result<DimExpr> {
    let _guard = enter(input)?;
    let mut lhs = parse_dim_product(input)?;
    loop {
        let op = if input.peek(Token![+]) {
            input.parse::<Token![+]>()?;
            BinOp::Add
        } else if input.peek(Token![-]) {
            input.parse::<Token![-]>()?;
            BinOp::Sub
        } else {
            return Ok(lhs);
        };
        let rhs = parse_dim_product(input)?;
        lhs = dim_binary(op, lhs, rhs);
    }
}

fn parse_dim_product(input: ParseStream) -> syn::Result<DimExpr> {
    let mut lhs = parse_dim_atom(input)?;
    loop {
        let op = if peek_pow(input) {
            return Err(syn::Error::new(input.span(), "`**` is not supported in dimensions"));
        } else if input.peek(Token![*]) {
            input.parse::<Token![*]>()?;
            BinOp::Mul
        } else if input.peek(Token![/]) {
            input.parse::<Token![/]>()?;
            BinOp::Div
        } else {
            return Ok(lhs);
        };
        let rhs = parse_dim_atom(input)?;
        lhs = dim_binary(op, lhs, rhs);
    }
}

fn dim_binary(op: BinOp, lhs: DimExpr, rhs: DimExpr) -> DimExpr {
    let span = lhs.span().to(rhs.span());
    DimExpr::Binary { op, lhs: Box::new(lhs), rhs: Box::new(rhs), span }
}

fn parse_dim_atom(input: ParseStream) -> syn::Result<DimExpr> {
    if input.peek(syn::LitInt) {
        let lit = input.parse::<syn::LitInt>()?;
        if !lit.suffix().is_empty() {
            return Err(syn::Error::new(lit.span(), "a dimension is written without a type suffix"));
        }
        let value = lit
            .base10_parse::<i64>()
            .map_err(|_| syn::Error::new(lit.span(), format!("dimension `{lit}` is too large")))?;
        return Ok(DimExpr::Lit(value, Span::token(lit.span())));
    }
    if input.peek(Token![?]) {
        return Ok(DimExpr::Unknown(Span::token(input.parse::<Token![?]>()?.span)));
    }
    if input.peek(token::Paren) {
        let (span, content) = parens(input)?;
        let inner = parse_dim(&content)?;
        if !content.is_empty() {
            return Err(expected(&content, "`)`"));
        }
        // A parenthesized binary dimension covers its parentheses.
        return Ok(match inner {
            DimExpr::Binary { op, lhs, rhs, .. } => DimExpr::Binary { op, lhs, rhs, span },
            other => other,
        });
    }
    if peek_name_at(input, 0).is_some() {
        return Ok(DimExpr::Name(parse_name(input)?));
    }
    Err(expected(input, "a dimension (a number, a name or `?`)"))
}
