//! The parser: tokens in, AST out.
//!
//! There is one parser for both sources of Einlang code: the tokens of an
//! `einlang! { ... }` call (`parse_tokens`) and source text of `.ein` files and
//! the standard library (`parse_str`, which lexes with `proc_macro2` first). It
//! is written on syn's `ParseStream` machinery as a set of free functions, one
//! per grammar rule, split by topic:
//!
//! - `item.rs`: items, attributes, `use` trees, and the recovery loop;
//! - `stmt.rs`: blocks, statements, `let` with index slots, `where`, patterns;
//! - `expr.rs`: expressions, by precedence climbing;
//! - `lit.rs`: literals and interpolated strings;
//! - `ty.rs`: types and dimension expressions.
//!
//! Invariants:
//! - The parser never panics, whatever the input. Recursion is bounded: token
//!   groups nested deeper than `MAX_DEPTH` are rejected before syn sees them,
//!   and every recursive rule enters a `DepthGuard`.
//! - Errors are recovered per item: an item (or top-level statement) that
//!   fails reports its first error and is skipped up to its end (the next
//!   top-level `;`, or its brace group), then parsing continues. A `mod`
//!   reports the errors of all its items.
//! - Every node's span runs from its first token to its last.
//! - Messages follow rustc: lowercase, code in backticks,
//!   "expected `;`, found `x`". `help:` and `note:` lines travel inside a
//!   `syn::Error` message after `HELP_MARKER` / `NOTE_MARKER` and become
//!   `Diagnostic::help` / `Diagnostic::note` at the end.

mod expr;
mod item;
mod lit;
mod stmt;
mod ty;

use std::cell::Cell;

use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};
use syn::buffer::Cursor;
use syn::parse::{ParseBuffer, ParseStream, Parser};
use syn::token;

use crate::base::span::Span;
use crate::diag::Diagnostic;
use crate::syntax::ast::{self, Program};

/// Parses the tokens of an `einlang! { ... }` call.
pub fn parse_tokens(tokens: TokenStream) -> Result<Program, Vec<Diagnostic>> {
    if let Err(err) = check_nesting(&tokens) {
        return Err(to_diagnostics(vec![err]));
    }
    let _end = InputEnd::set(last_token_span(&tokens));
    let mut errors = Vec::new();
    let parsed = (|input: ParseStream| Ok(item::parse_items(input, &mut errors))).parse2(tokens);
    match parsed {
        Ok(items) if errors.is_empty() => Ok(Program { items }),
        Ok(_) => Err(to_diagnostics(errors)),
        Err(err) => {
            errors.push(err);
            Err(to_diagnostics(errors))
        }
    }
}

/// Parses Einlang source text (`.ein` files, the standard library). The text
/// is lexed into Rust tokens (so comments and doc comments behave as in
/// `einlang!`), then parsed by `parse_tokens`.
pub fn parse_str(src: &str) -> Result<Program, Vec<Diagnostic>> {
    match src.parse::<TokenStream>() {
        Ok(tokens) => parse_tokens(tokens),
        Err(err) => Err(vec![Diagnostic::error(Span::token(err.span()), "invalid token or unbalanced delimiter")]),
    }
}

/// Parses a complete expression from `tokens`; used for the expressions
/// inside interpolated strings.
fn parse_expr_tokens(tokens: TokenStream) -> syn::Result<ast::Expr> {
    check_nesting(&tokens)?;
    (|input: ParseStream| {
        let expr = expr::parse_expr(input)?;
        if !input.is_empty() {
            return Err(expected(input, "end of expression"));
        }
        Ok(expr)
    })
    .parse2(tokens)
}

// ---------------------------------------------------------------------------
// Errors

/// Starts a `help:` line inside a `syn::Error` message.
const HELP_MARKER: &str = "\n= help: ";
/// Starts a `note:` line inside a `syn::Error` message.
const NOTE_MARKER: &str = "\n= note: ";

/// An error at `span` with a `help:` line.
fn error_with_help(span: proc_macro2::Span, message: &str, help: &str) -> syn::Error {
    syn::Error::new(span, format!("{message}{HELP_MARKER}{help}"))
}

/// An error at `span` with a `note:` line.
fn error_with_note(span: proc_macro2::Span, message: &str, note: &str) -> syn::Error {
    syn::Error::new(span, format!("{message}{NOTE_MARKER}{note}"))
}

/// Adds a `help:` line to an error.
fn with_help(err: syn::Error, help: &str) -> syn::Error {
    error_with_help(err.span(), &err.to_string(), help)
}

fn to_diagnostics(errors: Vec<syn::Error>) -> Vec<Diagnostic> {
    errors
        .into_iter()
        .flat_map(|err| err.into_iter())
        .map(|err| {
            let text = err.to_string();
            let mut pieces = text.split("\n= ");
            let mut message = pieces.next().unwrap_or_default().to_string();
            let mut helps = Vec::new();
            let mut notes = Vec::new();
            for piece in pieces {
                if let Some(help) = piece.strip_prefix("help: ") {
                    helps.push(help.to_string());
                } else if let Some(note) = piece.strip_prefix("note: ") {
                    notes.push(note.to_string());
                } else {
                    message.push_str("\n= ");
                    message.push_str(piece);
                }
            }
            let mut diag = Diagnostic::error(Span::token(err.span()), message);
            diag.helps = helps;
            diag.notes = notes;
            diag
        })
        .collect()
}

/// "expected {what}, found `x`" at the next token. At the end of the whole
/// input the error points at its last token rather than at the macro call.
fn expected(input: ParseStream, what: &str) -> syn::Error {
    let found = describe_next(input);
    let span = match found {
        Found::EndOfInput => InputEnd::get().unwrap_or_else(|| input.span()),
        _ => input.span(),
    };
    syn::Error::new(span, format!("expected {what}, found {found}"))
}

/// The last token of the input being parsed, for errors at its end.
struct InputEnd(Option<proc_macro2::Span>);

thread_local! {
    static INPUT_END: Cell<Option<proc_macro2::Span>> = const { Cell::new(None) };
}

impl InputEnd {
    /// Records `span` until the returned guard drops.
    fn set(span: Option<proc_macro2::Span>) -> InputEnd {
        InputEnd(INPUT_END.with(|end| end.replace(span)))
    }

    fn get() -> Option<proc_macro2::Span> {
        INPUT_END.with(|end| end.get())
    }
}

impl Drop for InputEnd {
    fn drop(&mut self) {
        let previous = self.0;
        INPUT_END.with(|end| end.set(previous));
    }
}

/// The span of the last token of `tokens` (the closing delimiter of a
/// trailing group).
fn last_token_span(tokens: &TokenStream) -> Option<proc_macro2::Span> {
    tokens.clone().into_iter().last().map(|tree| match tree {
        TokenTree::Group(group) => group.span_close(),
        other => other.span(),
    })
}

/// Parses the token `tok` or fails with "expected `tok`, found ...".
macro_rules! expect_token {
    ($input:expr, $($tok:tt)+) => {{
        let input: syn::parse::ParseStream = $input;
        if input.peek(syn::Token![$($tok)+]) {
            input.parse::<syn::Token![$($tok)+]>()
        } else {
            Err($crate::syntax::parse::expected(input, concat!("`", stringify!($($tok)+), "`")))
        }
    }};
}
use expect_token;

/// Operators worth naming as one token in messages ("found `..=`").
const OPERATORS: [&str; 17] =
    ["..=", "...", "::", "->", "=>", "==", "!=", "<=", ">=", "&&", "||", "..", "+=", "-=", "*=", "/=", "**"];

/// What comes next, for "found ..." in messages.
enum Found {
    Token(String),
    /// The end of a delimited group, at its closing delimiter.
    Close(&'static str),
    EndOfInput,
}

impl std::fmt::Display for Found {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Found::Token(text) => f.write_str(text),
            Found::Close(close) => write!(f, "`{close}`"),
            Found::EndOfInput => f.write_str("end of input"),
        }
    }
}

/// Describes the next token for "found ..." in messages.
fn describe_next(input: ParseStream) -> Found {
    let cursor = input.cursor();
    if cursor.eof() {
        // At the end of a group syn reports the closing delimiter's span; at
        // the end of the whole input it reports the call site.
        return match input.span().source_text().as_deref() {
            Some(")") => Found::Close(")"),
            Some("]") => Found::Close("]"),
            Some("}") => Found::Close("}"),
            _ => Found::EndOfInput,
        };
    }
    if let Some((ident, _)) = cursor.ident() {
        let text = if is_keyword(&ident.to_string()) { format!("keyword `{ident}`") } else { format!("`{ident}`") };
        return Found::Token(text);
    }
    if let Some((punct, rest)) = cursor.punct() {
        let mut chars = String::from(punct.as_char());
        let (mut spacing, mut rest) = (punct.spacing(), rest);
        while spacing == Spacing::Joint && chars.len() < 3 {
            match rest.punct() {
                Some((next, after)) => {
                    chars.push(next.as_char());
                    spacing = next.spacing();
                    rest = after;
                }
                None => break,
            }
        }
        while chars.len() > 1 && !OPERATORS.contains(&chars.as_str()) {
            chars.pop();
        }
        return Found::Token(format!("`{chars}`"));
    }
    if let Some((lit, _)) = cursor.literal() {
        return Found::Token(format!("`{}`", shorten(&lit.to_string())));
    }
    if let Some((_, delim, _, _)) = cursor.any_group() {
        let text = match delim {
            Delimiter::Parenthesis => "`(`",
            Delimiter::Bracket => "`[`",
            Delimiter::Brace => "`{`",
            Delimiter::None => "a macro fragment",
        };
        return Found::Token(text.to_string());
    }
    match cursor.token_tree() {
        Some((tree, _)) => Found::Token(format!("`{}`", shorten(&tree.to_string()))),
        None => Found::EndOfInput,
    }
}

fn shorten(text: &str) -> String {
    const MAX: usize = 32;
    if text.chars().count() <= MAX {
        text.to_string()
    } else {
        let head: String = text.chars().take(MAX).collect();
        format!("{head}...")
    }
}

// ---------------------------------------------------------------------------
// Recursion limits

/// The deepest nesting of groups and recursive rules the parser accepts.
/// Real programs stay far below it; it exists so that hostile input fails
/// with a diagnostic instead of overflowing the stack.
const MAX_DEPTH: u32 = 64;

thread_local! {
    /// Current recursion depth of the parser on this thread. A thread-local
    /// rather than a parameter because syn's parse functions carry no state.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// Counts one level of recursion while alive.
struct DepthGuard(());

impl Drop for DepthGuard {
    fn drop(&mut self) {
        DEPTH.with(|depth| depth.set(depth.get().saturating_sub(1)));
    }
}

/// Enters one level of recursion, or fails when the input nests too deeply.
fn enter(input: ParseStream) -> syn::Result<DepthGuard> {
    let depth = DEPTH.with(|depth| depth.get()) + 1;
    if depth > MAX_DEPTH {
        return Err(syn::Error::new(input.span(), format!("the code nests too deeply (more than {MAX_DEPTH} levels)")));
    }
    DEPTH.with(|d| d.set(depth));
    Ok(DepthGuard(()))
}

/// Rejects token trees nested more than `MAX_DEPTH` groups deep, without
/// recursion, before syn (whose token buffer is built recursively) sees them.
fn check_nesting(tokens: &TokenStream) -> syn::Result<()> {
    let mut stack = vec![tokens.clone().into_iter()];
    while let Some(top) = stack.last_mut() {
        match top.next() {
            Some(TokenTree::Group(group)) => {
                if stack.len() > MAX_DEPTH as usize {
                    return Err(syn::Error::new(
                        group.span_open(),
                        format!("the code nests too deeply (more than {MAX_DEPTH} levels)"),
                    ));
                }
                stack.push(group.stream().into_iter());
            }
            Some(_) => {}
            None => {
                stack.pop();
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Tokens

/// Words that cannot be used as names. These are Rust's keywords, so that
/// every Einlang name is also a valid Rust name in generated code, except
/// `typeof`, which Rust reserves and Einlang has as a builtin function.
fn is_keyword(word: &str) -> bool {
    matches!(
        word,
        "_" | "abstract"
            | "as"
            | "async"
            | "await"
            | "become"
            | "box"
            | "break"
            | "const"
            | "continue"
            | "crate"
            | "do"
            | "dyn"
            | "else"
            | "enum"
            | "extern"
            | "false"
            | "final"
            | "fn"
            | "for"
            | "if"
            | "impl"
            | "in"
            | "let"
            | "loop"
            | "macro"
            | "match"
            | "mod"
            | "move"
            | "mut"
            | "override"
            | "priv"
            | "pub"
            | "ref"
            | "return"
            | "Self"
            | "self"
            | "static"
            | "struct"
            | "super"
            | "trait"
            | "true"
            | "try"
            | "type"
            | "unsafe"
            | "unsized"
            | "use"
            | "virtual"
            | "where"
            | "while"
            | "yield"
    )
}

/// The cursor `n` token trees ahead, if there are that many.
fn cursor_at<'a>(input: ParseStream<'a>, n: usize) -> Option<Cursor<'a>> {
    let mut cursor = input.cursor();
    for _ in 0..n {
        cursor = cursor.token_tree()?.1;
    }
    Some(cursor)
}

/// The identifier `n` token trees ahead, if it is one that can be a name.
fn peek_name_at(input: ParseStream, n: usize) -> Option<proc_macro2::Ident> {
    let (ident, _) = cursor_at(input, n)?.ident()?;
    if is_keyword(&ident.to_string()) {
        None
    } else {
        Some(ident)
    }
}

/// Whether a name (not a keyword) comes next.
fn peek_name(input: ParseStream) -> bool {
    peek_name_at(input, 0).is_some()
}

/// Whether a group with `delim` is `n` token trees ahead.
fn peek_group_at(input: ParseStream, n: usize, delim: Delimiter) -> bool {
    cursor_at(input, n).is_some_and(|cursor| cursor.group(delim).is_some())
}

/// Whether `**` comes next. It arrives as two `*` tokens; as Einlang has no
/// other use for `* *`, their spacing is not checked (tokens made by `quote!`
/// have `Alone` spacing).
fn peek_pow(input: ParseStream) -> bool {
    let cursor = input.cursor();
    let Some((first, rest)) = cursor.punct() else { return false };
    first.as_char() == '*' && rest.punct().is_some_and(|(second, _)| second.as_char() == '*')
}

/// Whether a lone `=` comes next (not `==` or `=>`).
fn peek_single_eq(input: ParseStream, n: usize) -> bool {
    let Some(cursor) = cursor_at(input, n) else { return false };
    match cursor.punct() {
        Some((eq, rest)) if eq.as_char() == '=' => {
            eq.spacing() == Spacing::Alone || !rest.punct().is_some_and(|(next, _)| matches!(next.as_char(), '=' | '>'))
        }
        _ => false,
    }
}

/// Parses a name (an identifier that is not a keyword).
fn parse_name(input: ParseStream) -> syn::Result<ast::Ident> {
    if !peek_name(input) {
        return Err(expected(input, "identifier"));
    }
    let ident: proc_macro2::Ident = syn::ext::IdentExt::parse_any(input)?;
    Ok(ast_ident(&ident))
}

/// Parses a path segment: a name, or `crate`, `self`, `super`.
fn parse_path_segment(input: ParseStream) -> syn::Result<ast::Ident> {
    if input.peek(syn::Token![crate]) || input.peek(syn::Token![self]) || input.peek(syn::Token![super]) {
        let ident: proc_macro2::Ident = syn::ext::IdentExt::parse_any(input)?;
        return Ok(ast_ident(&ident));
    }
    parse_name(input)
}

/// Parses a path segment after `::`. There a keyword can only be a name, so
/// any identifier but `_` is one: the standard library's `std::math::mod`
/// and `std::ml::where` (defined as `r#mod` and `r#where`) are reachable by
/// their paths, in expressions and in `use`. A first segment `mod` still
/// starts a module item and `where` a guard, so neither name can be used
/// unqualified; `use std::ml::where as select;` gives it another name.
fn parse_path_tail_segment(input: ParseStream) -> syn::Result<ast::Ident> {
    if peek_path_tail_segment(input) {
        let ident: proc_macro2::Ident = syn::ext::IdentExt::parse_any(input)?;
        return Ok(ast_ident(&ident));
    }
    parse_path_segment(input)
}

/// Whether a path segment that may follow `::` comes next: any identifier,
/// keywords included, except `_`.
fn peek_path_tail_segment(input: ParseStream) -> bool {
    input.cursor().ident().is_some_and(|(ident, _)| ident != "_")
}

fn ast_ident(ident: &proc_macro2::Ident) -> ast::Ident {
    ast::Ident { name: syn::ext::IdentExt::unraw(ident).to_string(), span: Span::token(ident.span()) }
}

/// The span of a delimited group, from its opening to its closing delimiter.
fn group_span(delim: &proc_macro2::extra::DelimSpan) -> Span {
    Span::new(delim.open(), delim.close())
}

/// Opens a `(...)` group, or fails with "expected `(`, found ...".
fn parens<'a>(input: &ParseBuffer<'a>) -> syn::Result<(Span, ParseBuffer<'a>)> {
    if !input.peek(token::Paren) {
        return Err(expected(input, "`(`"));
    }
    let content;
    let paren = syn::parenthesized!(content in input);
    Ok((group_span(&paren.span), content))
}

/// Opens a `[...]` group, or fails with "expected `[`, found ...".
fn brackets<'a>(input: &ParseBuffer<'a>) -> syn::Result<(Span, ParseBuffer<'a>)> {
    if !input.peek(token::Bracket) {
        return Err(expected(input, "`[`"));
    }
    let content;
    let bracket = syn::bracketed!(content in input);
    Ok((group_span(&bracket.span), content))
}

/// Opens a `{...}` group, or fails with "expected `{`, found ...".
fn braces<'a>(input: &ParseBuffer<'a>) -> syn::Result<(Span, ParseBuffer<'a>)> {
    if !input.peek(token::Brace) {
        return Err(expected(input, "`{`"));
    }
    let content;
    let brace = syn::braced!(content in input);
    Ok((group_span(&brace.span), content))
}

/// Parses `elem, elem, ...` up to the end of `content` (a group's inside),
/// with an optional trailing comma. `close` names the closing delimiter for
/// messages.
fn parse_comma_list<T>(
    content: ParseStream,
    close: &str,
    elem: impl FnMut(ParseStream) -> syn::Result<T>,
) -> syn::Result<Vec<T>> {
    comma_list_until(content, close, elem).map(|(elems, _)| elems)
}

/// The elements of a parenthesized list and whether it ended with a comma
/// (which makes `(a,)` a tuple rather than `a` in parentheses).
fn comma_list<T>(content: ParseStream, elem: impl FnMut(ParseStream) -> syn::Result<T>) -> syn::Result<(Vec<T>, bool)> {
    comma_list_until(content, ")", elem)
}

fn comma_list_until<T>(
    content: ParseStream,
    close: &str,
    mut elem: impl FnMut(ParseStream) -> syn::Result<T>,
) -> syn::Result<(Vec<T>, bool)> {
    let mut elems = Vec::new();
    let mut trailing_comma = false;
    while !content.is_empty() {
        elems.push(elem(content)?);
        trailing_comma = false;
        if content.is_empty() {
            break;
        }
        if !content.peek(syn::Token![,]) {
            return Err(expected(content, &format!("`,` or `{close}`")));
        }
        content.parse::<syn::Token![,]>()?;
        trailing_comma = true;
    }
    Ok((elems, trailing_comma))
}

/// An optional `: Type` followed by `=` (in `let` and `const`).
fn parse_annotation_and_eq(input: ParseStream) -> syn::Result<Option<crate::syntax::ast::Type>> {
    let ty = if input.peek(syn::Token![:]) {
        input.parse::<syn::Token![:]>()?;
        Some(ty::parse_type(input)?)
    } else {
        None
    };
    if !peek_single_eq(input, 0) {
        return Err(expected(input, "`=`"));
    }
    input.parse::<syn::Token![=]>()?;
    Ok(ty)
}

/// `..=` (true) or `..` (false), if one comes next.
fn parse_range_op(input: ParseStream) -> syn::Result<Option<bool>> {
    if input.peek(syn::Token![..=]) {
        input.parse::<syn::Token![..=]>()?;
        Ok(Some(true))
    } else if input.peek(syn::Token![..]) {
        input.parse::<syn::Token![..]>()?;
        Ok(Some(false))
    } else {
        Ok(None)
    }
}
