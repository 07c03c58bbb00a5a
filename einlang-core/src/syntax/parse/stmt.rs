//! Blocks, statements, `let` with index slots, `where` clauses and patterns.

use syn::parse::ParseStream;
use syn::{token, Token};

use super::{
    braces, brackets, enter, error_with_help, expect_token, expected, expr, item, lit, parse_comma_list, parse_name,
    peek_name, peek_name_at, peek_single_eq, with_help,
};
use crate::base::span::Span;
use crate::syntax::ast::{Block, Expr, ExprKind, IndexSlot, LetStmt, Lit, Pattern, Stmt, WhereItem};

/// What one step of statement parsing found.
enum Parsed {
    /// A statement, boxed as a `let` is much larger than an expression.
    Stmt(Box<Stmt>),
    /// An expression without `;` at the end of its block.
    Tail(Expr),
    /// A stray `;`.
    Empty,
}

/// `{ stmt* [tail] }`.
pub(super) fn parse_block(input: ParseStream) -> syn::Result<Block> {
    let _guard = enter(input)?;
    let (span, content) = braces(input)?;
    let mut stmts = Vec::new();
    let mut tail = None;
    while !content.is_empty() {
        match parse_stmt(&content)? {
            Parsed::Stmt(stmt) => stmts.push(*stmt),
            Parsed::Tail(expr) => tail = Some(Box::new(expr)),
            Parsed::Empty => {}
        }
    }
    Ok(Block { stmts, tail, span })
}

/// A statement at the top level of a program or module, where every
/// expression statement but a block-like one needs its `;`.
pub(super) fn parse_top_level_stmt(input: ParseStream) -> syn::Result<Stmt> {
    match parse_stmt(input)? {
        Parsed::Stmt(stmt) => Ok(*stmt),
        Parsed::Tail(expr) if is_block_like(&expr) => Ok(Stmt::Expr(expr)),
        Parsed::Tail(expr) => Err(syn::Error::new(expr.span.hi(), "expected `;` after this expression")),
        Parsed::Empty => Err(input.error("expected a statement")),
    }
}

fn is_block_like(expr: &Expr) -> bool {
    matches!(expr.kind, ExprKind::If { .. } | ExprKind::Match { .. } | ExprKind::Block(_))
}

/// One statement, or the tail expression of a block.
///
/// As in Rust, a statement that starts with `if`, `match` or `{` ends with
/// its closing brace: it needs no `;`, and no operator continues it.
fn parse_stmt(input: ParseStream) -> syn::Result<Parsed> {
    if input.peek(Token![;]) {
        input.parse::<Token![;]>()?;
        return Ok(Parsed::Empty);
    }
    if input.peek(Token![let]) {
        return Ok(Parsed::Stmt(Box::new(Stmt::Let(parse_let(input)?))));
    }
    if item::peek_item(input) {
        if let Some(item) = item::parse_declaration(input)? {
            return Ok(Parsed::Stmt(Box::new(Stmt::Item(Box::new(item)))));
        }
        // Only doc comments were consumed; a statement follows.
        if input.peek(Token![let]) {
            return Ok(Parsed::Stmt(Box::new(Stmt::Let(parse_let(input)?))));
        }
    }
    let block_like = input.peek(Token![if]) || input.peek(Token![match]) || input.peek(token::Brace);
    let expr = if block_like { expr::parse_block_like(input)? } else { expr::parse_expr(input)? };
    if input.peek(Token![;]) {
        input.parse::<Token![;]>()?;
        return Ok(Parsed::Stmt(Box::new(Stmt::Expr(expr))));
    }
    if input.is_empty() {
        return Ok(Parsed::Tail(expr));
    }
    if block_like {
        return Ok(Parsed::Stmt(Box::new(Stmt::Expr(expr))));
    }
    if peek_single_eq(input, 0) {
        return Err(error_with_help(
            input.span(),
            "cannot assign to a binding: bindings are immutable",
            "shadow it with a new binding instead: `let name = ...;`",
        ));
    }
    Err(expected(input, "`;`"))
}

/// `let pat [[slots]] [: T] = value [where items];`
fn parse_let(input: ParseStream) -> syn::Result<LetStmt> {
    let let_token = input.parse::<Token![let]>()?;
    let pat = parse_let_pattern(input)?;
    let indices = if matches!(pat, Pattern::Name(_)) && input.peek(token::Bracket) {
        Some(parse_index_slots(input)?)
    } else {
        None
    };
    let ty = super::parse_annotation_and_eq(input)?;
    let value = expr::parse_expr(input)?;
    let where_clause = if input.peek(Token![where]) { parse_where(input)? } else { Vec::new() };
    let semi = expect_token!(input, ;)?;
    Ok(LetStmt { pat, indices, ty, value, where_clause, span: Span::new(let_token.span, semi.span) })
}

/// `[i, t in 1..T, 0, ..batch]` on the left of an indexed definition.
fn parse_index_slots(input: ParseStream) -> syn::Result<Vec<IndexSlot>> {
    let (span, content) = brackets(input)?;
    let slots = parse_comma_list(&content, "]", parse_index_slot)?;
    if slots.is_empty() {
        return Err(error_with_help(
            span.lo(),
            "an indexed definition needs at least one index",
            "remove the brackets to define a scalar",
        ));
    }
    Ok(slots)
}

fn parse_index_slot(input: ParseStream) -> syn::Result<IndexSlot> {
    let slot = if input.peek(Token![..]) && !input.peek(Token![..=]) {
        input.parse::<Token![..]>()?;
        IndexSlot::Rest(parse_name(input)?)
    } else if input.peek(syn::LitInt) {
        let lit = input.parse::<syn::LitInt>()?;
        let value = lit
            .base10_parse::<i64>()
            .map_err(|_| syn::Error::new(lit.span(), format!("index `{lit}` is out of range")))?;
        IndexSlot::Lit(value, Span::token(lit.span()))
    } else if peek_name(input) {
        let var = parse_name(input)?;
        if input.peek(Token![in]) {
            input.parse::<Token![in]>()?;
            IndexSlot::Ranged { var, range: expr::parse_range(input)? }
        } else {
            IndexSlot::Var(var)
        }
    } else {
        return Err(slot_error(input));
    };
    if !input.is_empty() && !input.peek(Token![,]) {
        return Err(slot_error(input));
    }
    Ok(slot)
}

fn slot_error(input: ParseStream) -> syn::Error {
    with_help(
        expected(input, "an index slot"),
        "an index slot is a variable `i`, a ranged variable `i in 0..N`, an integer or a rest `..name`; \
         write expressions such as `t + 1` in the reads on the right-hand side",
    )
}

/// `where item, item, ...` after a `let` value or a reduction body; stops at
/// the first token that cannot continue the list (`;`, or the end of the
/// reduction's parentheses).
pub(super) fn parse_where(input: ParseStream) -> syn::Result<Vec<WhereItem>> {
    input.parse::<Token![where]>()?;
    let mut items = vec![parse_where_item(input)?];
    while input.peek(Token![,]) {
        input.parse::<Token![,]>()?;
        if input.is_empty() || input.peek(Token![;]) {
            break;
        }
        items.push(parse_where_item(input)?);
    }
    Ok(items)
}

/// `name = expr` (binding or index equation), `name in a..b` (a range, an
/// error reported later), or a guard.
fn parse_where_item(input: ParseStream) -> syn::Result<WhereItem> {
    if peek_name(input) && peek_single_eq(input, 1) {
        let name = parse_name(input)?;
        input.parse::<Token![=]>()?;
        let value = expr::parse_expr(input)?;
        let span = name.span.to(value.span);
        return Ok(WhereItem::Bind { name, value, span });
    }
    if peek_name_at(input, 0).is_some() && input.peek2(Token![in]) {
        let var = parse_name(input)?;
        input.parse::<Token![in]>()?;
        let range = expr::parse_range(input)?;
        let span = var.span.to(range.span);
        return Ok(WhereItem::Range { var, range, span });
    }
    Ok(WhereItem::Guard(expr::parse_expr(input)?))
}

/// The pattern of a `let`: a name, `_`, or a tuple of those.
fn parse_let_pattern(input: ParseStream) -> syn::Result<Pattern> {
    let _guard = enter(input)?;
    if input.peek(Token![_]) {
        return Ok(Pattern::Wildcard(Span::token(input.parse::<Token![_]>()?.span)));
    }
    if input.peek(token::Paren) {
        return parse_tuple_pattern(input, parse_let_pattern);
    }
    if peek_name(input) {
        return Ok(Pattern::Name(parse_name(input)?));
    }
    Err(expected(input, "a name, `_` or a tuple pattern"))
}

/// `(p, q, ...)`; `(p)` is `p` and `(p,)` a tuple of one.
fn parse_tuple_pattern(input: ParseStream, elem: fn(ParseStream) -> syn::Result<Pattern>) -> syn::Result<Pattern> {
    let (span, content) = super::parens(input)?;
    let (mut pats, trailing_comma) = super::comma_list(&content, elem)?;
    if pats.len() == 1 && !trailing_comma {
        return Ok(pats.remove(0));
    }
    Ok(Pattern::Tuple(pats, span))
}

/// A `match` arm's pattern: literals (with an optional `-`), ranges of
/// literals `lo..=hi` / `lo..hi`, `_`, names and tuples, and alternatives
/// of those separated by `|`.
pub(super) fn parse_match_pattern(input: ParseStream) -> syn::Result<Pattern> {
    let _guard = enter(input)?;
    let first = parse_match_alternative(input)?;
    if !input.peek(Token![|]) || input.peek(Token![||]) {
        return Ok(first);
    }
    let mut alts = vec![first];
    while input.peek(Token![|]) && !input.peek(Token![||]) {
        input.parse::<Token![|]>()?;
        alts.push(parse_match_alternative(input)?);
    }
    let span = alts[0].span().to(alts[alts.len() - 1].span());
    Ok(Pattern::Or(alts, span))
}

/// One alternative of a `match` pattern.
fn parse_match_alternative(input: ParseStream) -> syn::Result<Pattern> {
    let _guard = enter(input)?;
    if input.peek(Token![_]) {
        return Ok(Pattern::Wildcard(Span::token(input.parse::<Token![_]>()?.span)));
    }
    if input.peek(token::Paren) {
        return parse_tuple_pattern(input, parse_match_pattern);
    }
    if peek_name(input) && input.peek2(Token![@]) {
        let name = parse_name(input)?;
        input.parse::<Token![@]>()?;
        return Ok(Pattern::At(name, Box::new(parse_match_alternative(input)?)));
    }
    if peek_name(input) {
        return Ok(Pattern::Name(parse_name(input)?));
    }
    if input.peek(syn::Lit) || input.peek(Token![-]) {
        let (lo, lo_span) = parse_pattern_lit(input)?;
        let Some(inclusive) = super::parse_range_op(input)? else {
            return Ok(Pattern::Lit(lo, lo_span));
        };
        let (hi, hi_span) = parse_pattern_lit(input)?;
        return Ok(Pattern::Range { lo, hi, inclusive, span: lo_span.to(hi_span) });
    }
    Err(expected(input, "a pattern"))
}

/// A literal in a pattern, with an optional leading `-` for numbers.
fn parse_pattern_lit(input: ParseStream) -> syn::Result<(Lit, Span)> {
    let minus = if input.peek(Token![-]) { Some(input.parse::<Token![-]>()?.span) } else { None };
    if !input.peek(syn::Lit) {
        return Err(expected(input, "a literal"));
    }
    let (value, span) = lit::parse_lit(input)?;
    let Some(minus) = minus else { return Ok((value, span)) };
    let negated = match value {
        Lit::Int(v, kind) => Lit::Int(-v, kind),
        Lit::Float(text, kind) => Lit::Float(format!("-{text}"), kind),
        Lit::Bool(_) | Lit::Str(_) => return Err(syn::Error::new(minus, "only numbers can be negated in a pattern")),
    };
    Ok((negated, Span::new(minus, span.hi())))
}
