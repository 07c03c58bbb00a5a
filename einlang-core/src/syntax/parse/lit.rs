//! Literals, and the `{expr}` / `{expr:.N}` interpolation inside strings.

use proc_macro2::{Group, TokenStream, TokenTree};
use syn::parse::ParseStream;

use super::{check_nesting, error_with_help, expected, parse_expr_tokens};
use crate::base::span::Span;
use crate::syntax::ast::{Expr, ExprKind, Lit, ScalarKind, StrPart};

/// A literal expression; a string with interpolations becomes
/// `ExprKind::Interp`.
pub(super) fn parse_lit_expr(input: ParseStream) -> syn::Result<Expr> {
    let lit = input.parse::<syn::Lit>()?;
    let span = Span::token(lit.span());
    if let syn::Lit::Str(string) = &lit {
        let parts = parse_string(string)?;
        let kind = if parts.iter().any(|part| matches!(part, StrPart::Interp { .. })) {
            ExprKind::Interp(parts)
        } else {
            ExprKind::Lit(Lit::Str(plain_text(parts)))
        };
        return Ok(Expr { kind, span });
    }
    Ok(Expr { kind: ExprKind::Lit(convert(&lit)?), span })
}

/// A literal without interpolation, as in patterns.
pub(super) fn parse_lit(input: ParseStream) -> syn::Result<(Lit, Span)> {
    if !input.peek(syn::Lit) {
        return Err(expected(input, "a literal"));
    }
    let lit = input.parse::<syn::Lit>()?;
    let span = Span::token(lit.span());
    if let syn::Lit::Str(string) = &lit {
        let parts = parse_string(string)?;
        if parts.iter().any(|part| matches!(part, StrPart::Interp { .. })) {
            return Err(syn::Error::new(string.span(), "an interpolated string cannot be a pattern"));
        }
        return Ok((Lit::Str(plain_text(parts)), span));
    }
    Ok((convert(&lit)?, span))
}

fn plain_text(parts: Vec<StrPart>) -> String {
    parts
        .into_iter()
        .map(|part| match part {
            StrPart::Text(text) => text,
            StrPart::Interp { .. } => String::new(),
        })
        .collect()
}

/// A number or boolean literal.
fn convert(lit: &syn::Lit) -> syn::Result<Lit> {
    match lit {
        syn::Lit::Int(int) => {
            let kind = suffix_kind(int.suffix(), int.span(), "integer")?;
            if let Some(kind) = kind.filter(|kind| kind.is_float()) {
                // `1f32` is a float written without a fraction.
                return Ok(Lit::Float(int.base10_digits().to_string(), Some(kind)));
            }
            let value = int
                .base10_parse::<i128>()
                .map_err(|_| syn::Error::new(int.span(), format!("integer literal `{int}` is too large")))?;
            Ok(Lit::Int(value, kind))
        }
        syn::Lit::Float(float) => {
            let kind = suffix_kind(float.suffix(), float.span(), "float")?;
            if kind.is_some_and(|kind| !kind.is_float()) {
                return Err(syn::Error::new(
                    float.span(),
                    format!("invalid suffix `{}` for float literal", float.suffix()),
                ));
            }
            Ok(Lit::Float(float.base10_digits().to_string(), kind))
        }
        syn::Lit::Bool(boolean) => Ok(Lit::Bool(boolean.value)),
        syn::Lit::Str(string) => Ok(Lit::Str(string.value())),
        syn::Lit::Char(ch) => {
            Err(error_with_help(ch.span(), "character literals are not supported", "use a string: `\"c\"`"))
        }
        other => Err(syn::Error::new(other.span(), "this kind of literal is not supported")),
    }
}

fn suffix_kind(suffix: &str, span: proc_macro2::Span, what: &str) -> syn::Result<Option<ScalarKind>> {
    if suffix.is_empty() {
        return Ok(None);
    }
    match ScalarKind::from_name(suffix) {
        Some(kind) if kind != ScalarKind::Bool => Ok(Some(kind)),
        _ => Err(error_with_help(
            span,
            &format!("invalid suffix `{suffix}` for {what} literal"),
            "the suffix must be a numeric type: `i8`, `i16`, `i32`, `i64`, `u8`, `u32`, `u64`, `f32` or `f64`",
        )),
    }
}

/// Splits a string literal's value into text and `{expr}` / `{expr:.N}`
/// pieces; `{{` and `}}` are literal braces.
fn parse_string(lit: &syn::LitStr) -> syn::Result<Vec<StrPart>> {
    let span = lit.span();
    let value = lit.value();
    let mut parts = Vec::new();
    let mut text = String::new();
    let mut rest = value.as_str();
    while let Some(pos) = rest.find(['{', '}']) {
        text.push_str(&rest[..pos]);
        let is_open = rest[pos..].starts_with('{');
        let after = &rest[pos + 1..];
        if !is_open {
            if let Some(next) = after.strip_prefix('}') {
                text.push('}');
                rest = next;
                continue;
            }
            return Err(error_with_help(span, "unmatched `}` in string", "write `}}` for a literal `}`"));
        }
        if let Some(next) = after.strip_prefix('{') {
            text.push('{');
            rest = next;
            continue;
        }
        let Some(end) = closing_brace(after) else {
            return Err(error_with_help(span, "unclosed `{` in string", "write `{{` for a literal `{`"));
        };
        if !text.is_empty() {
            parts.push(StrPart::Text(std::mem::take(&mut text)));
        }
        parts.push(parse_interp(&after[..end], span)?);
        rest = &after[end + 1..];
    }
    text.push_str(rest);
    if !text.is_empty() {
        parts.push(StrPart::Text(text));
    }
    Ok(parts)
}

/// The byte offset of the `}` that closes an interpolation whose text
/// starts at `text`, skipping nested braces and string literals.
fn closing_brace(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (pos, ch) in text.char_indices() {
        if in_string {
            match ch {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match ch {
            '"' => in_string = true,
            '{' => depth += 1,
            '}' if depth == 0 => return Some(pos),
            '}' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// The byte offset of the `:` that starts a format spec in an
/// interpolation: the last one outside brackets and strings that is not
/// part of `::`.
fn format_colon(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    let mut found = None;
    for (pos, &byte) in bytes.iter().enumerate() {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            b':' if depth == 0 => {
                let before = pos.checked_sub(1).map(|i| bytes[i]);
                let after = bytes.get(pos + 1).copied();
                if before != Some(b':') && after != Some(b':') {
                    found = Some(pos);
                }
            }
            _ => {}
        }
    }
    found
}

/// One `{...}` of an interpolated string: the expression text and an
/// optional `:.N` precision. The expression's tokens take the span of the
/// string literal, so errors inside it point at the string.
fn parse_interp(inner: &str, span: proc_macro2::Span) -> syn::Result<StrPart> {
    let (expr_text, precision) = match format_colon(inner) {
        Some(colon) => {
            let spec = &inner[colon + 1..];
            let precision = spec
                .strip_prefix('.')
                .filter(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|digits| digits.parse::<u32>().ok());
            match precision {
                Some(precision) => (&inner[..colon], Some(precision)),
                None => {
                    return Err(error_with_help(
                        span,
                        &format!("unsupported format `:{spec}` in string"),
                        "only a precision is supported: `{x:.3}`",
                    ))
                }
            }
        }
        None => (inner, None),
    };
    if expr_text.trim().is_empty() {
        return Err(error_with_help(
            span,
            "empty `{}` in string",
            "put an expression inside (`{x}`), or write `{{}}` for literal braces",
        ));
    }
    let context = |message: &str| syn::Error::new(span, format!("in the interpolation `{{{inner}}}`: {message}"));
    let tokens = expr_text.parse::<TokenStream>().map_err(|_| context("invalid token or unbalanced delimiter"))?;
    check_nesting(&tokens).map_err(|err| context(&err.to_string()))?;
    let expr = parse_expr_tokens(respan(tokens, span)).map_err(|err| context(&err.to_string()))?;
    Ok(StrPart::Interp { expr, precision })
}

/// Gives every token of `tokens` the span `span`.
fn respan(tokens: TokenStream, span: proc_macro2::Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|tree| match tree {
            TokenTree::Group(group) => {
                let mut new = Group::new(group.delimiter(), respan(group.stream(), span));
                new.set_span(span);
                TokenTree::Group(new)
            }
            mut other => {
                other.set_span(span);
                other
            }
        })
        .collect()
}
