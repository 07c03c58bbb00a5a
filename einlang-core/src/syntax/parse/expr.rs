//! Expressions, by precedence climbing.
//!
//! From lowest to highest precedence:
//!
//! | level | operators | associativity |
//! |---|---|---|
//! | range | `a..b`, `a..=b` (only where a range is expected) | none |
//! | 1 | `\|\|` | left |
//! | 2 | `&&` | left |
//! | 3 | `== != < <= > >=` | none (chains are an error) |
//! | 4 | `+ -` | left |
//! | 5 | `* / %` | left |
//! | cast | `as T` | left |
//! | unary | `-` `!` | prefix |
//! | power | `**` | right; its right operand may be unary (`2.0 ** -1`) |
//! | postfix | calls `f(a)`, subscripts `x[i]`, tuple fields `t.0` | left |
//!
//! so `-x ** 2` is `-(x ** 2)` and `a as f32 * b` is `(a as f32) * b`.

use proc_macro2::Delimiter;
use syn::parse::ParseStream;
use syn::{token, Token};

use super::{
    brackets, enter, error_with_help, expect_token, expected, item, lit, parens, parse_comma_list, parse_name,
    parse_path_segment, parse_path_tail_segment, peek_group_at, peek_name, peek_name_at, peek_pow, stmt, ty, with_help,
};
use crate::base::span::Span;
use crate::syntax::ast::{
    BinOp, CompClause, Expr, ExprKind, Ident, IndexArg, MatchArm, RangeExpr, RedOp, RedVar, UnOp,
};

/// A full expression (everything but a bare range).
pub(super) fn parse_expr(input: ParseStream) -> syn::Result<Expr> {
    let _guard = enter(input)?;
    parse_binary(input, 1)
}

/// `start..end` or `start..=end`.
pub(super) fn parse_range(input: ParseStream) -> syn::Result<RangeExpr> {
    let start = parse_expr(input)?;
    parse_range_end(input, start)
}

/// The rest of a range whose start is parsed.
fn parse_range_end(input: ParseStream, start: Expr) -> syn::Result<RangeExpr> {
    let Some(inclusive) = super::parse_range_op(input)? else {
        return Err(expected(input, "`..` or `..=`"));
    };
    let end = parse_expr(input)?;
    let span = start.span.to(end.span);
    Ok(RangeExpr { start: Box::new(start), end: Box::new(end), inclusive, span })
}

/// An expression, or a range used as a value (what a comprehension
/// generator iterates over).
fn parse_iterable(input: ParseStream) -> syn::Result<Expr> {
    let start = parse_expr(input)?;
    if input.peek(Token![..]) {
        let range = parse_range_end(input, start)?;
        return Ok(Expr { span: range.span, kind: ExprKind::Range(range) });
    }
    Ok(start)
}

// ---------------------------------------------------------------------------
// Operators

/// The binary operator at the front of `input`, with its precedence level.
fn peek_binop(input: ParseStream) -> Option<(BinOp, u8)> {
    let op = if input.peek(Token![||]) {
        BinOp::Or
    } else if input.peek(Token![&&]) {
        BinOp::And
    } else if input.peek(Token![==]) {
        BinOp::Eq
    } else if input.peek(Token![!=]) {
        BinOp::Ne
    } else if input.peek(Token![<=]) {
        BinOp::Le
    } else if input.peek(Token![>=]) {
        BinOp::Ge
    } else if input.peek(Token![<]) {
        BinOp::Lt
    } else if input.peek(Token![>]) {
        BinOp::Gt
    } else if input.peek(Token![+]) {
        BinOp::Add
    } else if input.peek(Token![-]) && !input.peek(Token![->]) {
        BinOp::Sub
    } else if input.peek(Token![*]) {
        BinOp::Mul
    } else if input.peek(Token![/]) {
        BinOp::Div
    } else if input.peek(Token![%]) {
        BinOp::Rem
    } else {
        return None;
    };
    let level = match op {
        BinOp::Or => 1,
        BinOp::And => 2,
        BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => 3,
        BinOp::Add | BinOp::Sub => 4,
        BinOp::Mul | BinOp::Div | BinOp::Rem | BinOp::Pow => 5,
    };
    Some((op, level))
}

/// Consumes the tokens of `op`, which `peek_binop` or `peek_pow` found:
/// one `Punct` per character of its symbol.
fn parse_binop(input: ParseStream, op: BinOp) -> syn::Result<()> {
    for _ in 0..op.symbol().len() {
        input.parse::<proc_macro2::Punct>()?;
    }
    Ok(())
}

/// `x in set`, as the seed writes membership: for a range `x in a..b`,
/// `x >= a && x < b` (`<=` for `..=`); else `std::array::contains(set, x)`.
/// `keyword` is the span of `in`.
fn membership(x: Expr, set: Expr, keyword: Span) -> Expr {
    let span = x.span.to(set.span);
    if let ExprKind::Range(r) = set.kind {
        let bin = |op, l: Expr, r: Expr| Expr {
            span: l.span.to(r.span),
            kind: ExprKind::Binary { op, lhs: Box::new(l), rhs: Box::new(r) },
        };
        let upper = if r.inclusive { BinOp::Le } else { BinOp::Lt };
        let low = bin(BinOp::Ge, x.clone(), *r.start);
        let high = bin(upper, x, *r.end);
        return bin(BinOp::And, low, high);
    }
    let path =
        ["std", "array", "contains"].iter().map(|name| Ident { name: name.to_string(), span: keyword }).collect();
    let callee = Expr { kind: ExprKind::Path(path), span: keyword };
    Expr { kind: ExprKind::Call { callee: Box::new(callee), args: vec![set, x] }, span }
}

/// The clauses of a comprehension. `x in xs` where an earlier generator of
/// the same comprehension binds `x` is a membership filter, as in the seed
/// (`[x | x in 1..20, x in 5..15]`), not a second generator.
fn parse_comp_clauses(input: ParseStream) -> syn::Result<Vec<CompClause>> {
    let clauses = parse_comma_list(input, "]", parse_comp_clause)?;
    if clauses.is_empty() {
        return Err(expected(input, "a generator `x in xs`"));
    }
    let mut bound: Vec<String> = Vec::new();
    Ok(clauses
        .into_iter()
        .map(|c| match c {
            CompClause::Gen { var, iter } if bound.contains(&var.name) => {
                let keyword = var.span;
                let x = Expr { span: var.span, kind: ExprKind::Path(vec![var]) };
                CompClause::Filter(membership(x, iter, keyword))
            }
            CompClause::Gen { var, iter } => {
                bound.push(var.name.clone());
                CompClause::Gen { var, iter }
            }
            filter => filter,
        })
        .collect())
}

/// Binary operators of level `min_level` and above.
fn parse_binary(input: ParseStream, min_level: u8) -> syn::Result<Expr> {
    let mut lhs = parse_cast(input)?;
    let mut after_comparison = false;
    loop {
        // `x in xs` (membership, at the level of comparisons), as the seed
        // writes it: `std::array::contains(xs, x)`.
        if input.peek(Token![in]) && min_level <= 3 && !after_comparison {
            let keyword = input.parse::<Token![in]>()?.span;
            let rhs = parse_binary(input, 4)?;
            let set = match super::parse_range_op(input)? {
                Some(inclusive) => {
                    let end = parse_binary(input, 4)?;
                    let span = rhs.span.to(end.span);
                    Expr {
                        kind: ExprKind::Range(RangeExpr { start: Box::new(rhs), end: Box::new(end), inclusive, span }),
                        span,
                    }
                }
                None => rhs,
            };
            lhs = membership(lhs, set, Span::token(keyword));
            after_comparison = true;
            continue;
        }
        let Some((op, level)) = peek_binop(input) else { break };
        if level < min_level {
            break;
        }
        if op == BinOp::Mul && peek_pow(input) {
            // A power after a cast: `x as f32 ** 2`.
            return Err(error_with_help(input.span(), "`**` cannot follow a cast", "add parentheses: `(x as T) ** y`"));
        }
        if op.is_comparison() && after_comparison {
            return Err(error_with_help(
                input.span(),
                "comparison operators cannot be chained",
                "split the comparison into two and join them with `&&`",
            ));
        }
        parse_binop(input, op)?;
        let rhs = parse_binary(input, level + 1)?;
        after_comparison = op.is_comparison();
        let span = lhs.span.to(rhs.span);
        lhs = Expr { kind: ExprKind::Binary { op, lhs: Box::new(lhs), rhs: Box::new(rhs) }, span };
    }
    Ok(lhs)
}

/// `unary (as T)*`.
fn parse_cast(input: ParseStream) -> syn::Result<Expr> {
    let mut expr = parse_unary(input)?;
    while input.peek(Token![as]) {
        input.parse::<Token![as]>()?;
        let ty = ty::parse_type(input)?;
        let span = expr.span.to(ty.span());
        expr = Expr { kind: ExprKind::Cast { expr: Box::new(expr), ty }, span };
    }
    Ok(expr)
}

/// `-unary`, `!unary`, `+unary` (the operand itself, as the seed allows),
/// or a power.
fn parse_unary(input: ParseStream) -> syn::Result<Expr> {
    if input.peek(Token![+]) && !input.peek(Token![+=]) {
        let _guard = enter(input)?;
        let plus = input.parse::<Token![+]>()?.span;
        let expr = parse_unary(input)?;
        let span = Span::new(plus, expr.span.hi());
        return Ok(Expr { span, ..expr });
    }
    let op = if input.peek(Token![-]) {
        UnOp::Neg
    } else if input.peek(Token![!]) {
        UnOp::Not
    } else {
        return parse_power(input);
    };
    let _guard = enter(input)?;
    let op_span = match op {
        UnOp::Neg => input.parse::<Token![-]>()?.span,
        UnOp::Not => input.parse::<Token![!]>()?.span,
    };
    let expr = parse_unary(input)?;
    let span = Span::new(op_span, expr.span.hi());
    Ok(Expr { kind: ExprKind::Unary { op, expr: Box::new(expr) }, span })
}

/// `postfix ** unary`, right-associative.
fn parse_power(input: ParseStream) -> syn::Result<Expr> {
    let base = parse_postfix(input)?;
    if !peek_pow(input) {
        return Ok(base);
    }
    parse_binop(input, BinOp::Pow)?;
    let _guard = enter(input)?;
    let exponent = parse_unary(input)?;
    let span = base.span.to(exponent.span);
    Ok(Expr { kind: ExprKind::Binary { op: BinOp::Pow, lhs: Box::new(base), rhs: Box::new(exponent) }, span })
}

/// A primary expression followed by calls, subscripts and tuple fields.
fn parse_postfix(input: ParseStream) -> syn::Result<Expr> {
    let mut expr = parse_primary(input)?;
    loop {
        if input.peek(token::Paren) {
            let (group, content) = parens(input)?;
            let args = parse_comma_list(&content, ")", parse_expr)?;
            let span = expr.span.to(group);
            expr = Expr { kind: ExprKind::Call { callee: Box::new(expr), args }, span };
        } else if input.peek(token::Bracket) {
            let (group, content) = brackets(input)?;
            let args = parse_comma_list(&content, "]", parse_index_arg)?;
            let span = expr.span.to(group);
            expr = Expr { kind: ExprKind::Index { base: Box::new(expr), args }, span };
        } else if input.peek(Token![.]) && !input.peek(Token![..]) {
            input.parse::<Token![.]>()?;
            // `x.length`, `x.shape` and `x.size`, as the seed writes them,
            // are `len(x)`, `shape(x)` and `std::array::size(x)`.
            if input.peek(syn::Ident) {
                let fork = input.fork();
                let name = parse_name(&fork)?;
                let path: Option<&[&str]> = match name.name.as_str() {
                    "length" => Some(&["len"]),
                    "shape" => Some(&["shape"]),
                    "size" => Some(&["std", "array", "size"]),
                    _ => None,
                };
                if let Some(path) = path {
                    parse_name(input)?;
                    let span = Span::new(expr.span.lo(), name.span.hi());
                    let segments = path.iter().map(|s| Ident { name: s.to_string(), span: name.span }).collect();
                    let callee = Expr { kind: ExprKind::Path(segments), span: name.span };
                    expr = Expr { kind: ExprKind::Call { callee: Box::new(callee), args: vec![expr] }, span };
                    continue;
                }
            }
            for (index, index_span) in parse_field_indices(input)? {
                let span = Span::new(expr.span.lo(), index_span.hi());
                expr = Expr { kind: ExprKind::Field { base: Box::new(expr), index, index_span }, span };
            }
        } else {
            return Ok(expr);
        }
    }
}

/// `i + 1` or `..rest` inside a subscript.
fn parse_index_arg(input: ParseStream) -> syn::Result<IndexArg> {
    if input.peek(Token![..]) && !input.peek(Token![..=]) {
        input.parse::<Token![..]>()?;
        return Ok(IndexArg::Rest(parse_name(input)?));
    }
    Ok(IndexArg::Expr(parse_expr(input)?))
}

/// The field indices after a `.`: `0` in `t.0`, or both of `0.1` in
/// `t.0.1`, which the lexer delivers as one float literal.
fn parse_field_indices(input: ParseStream) -> syn::Result<Vec<(u32, Span)>> {
    let invalid = |span: proc_macro2::Span, text: &str| {
        syn::Error::new(span, format!("invalid tuple field `{text}`; tuple fields are written `.0`, `.1`, ..."))
    };
    if input.peek(syn::LitInt) {
        let lit = input.parse::<syn::LitInt>()?;
        if !lit.suffix().is_empty() {
            return Err(invalid(lit.span(), &lit.to_string()));
        }
        let index = lit.base10_parse::<u32>().map_err(|_| invalid(lit.span(), &lit.to_string()))?;
        return Ok(vec![(index, Span::token(lit.span()))]);
    }
    if input.peek(syn::LitFloat) {
        let lit = input.parse::<syn::LitFloat>()?;
        let text = lit.to_string();
        let indices: Option<Vec<u32>> = match text.split_once('.') {
            Some((first, second)) if is_field_digits(first) && is_field_digits(second) => {
                first.parse().ok().zip(second.parse().ok()).map(|(a, b)| vec![a, b])
            }
            _ => None,
        };
        let indices = indices.ok_or_else(|| invalid(lit.span(), &text))?;
        return Ok(indices.into_iter().map(|index| (index, Span::token(lit.span()))).collect());
    }
    Err(with_help(
        expected(input, "a tuple field index"),
        "einlang has no methods or named fields besides `.length`, `.shape` and `.size`; call a function instead: `f(x)`",
    ))
}

fn is_field_digits(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())
}

// ---------------------------------------------------------------------------
// Primary expressions

fn parse_primary(input: ParseStream) -> syn::Result<Expr> {
    if input.peek(syn::Lit) {
        return lit::parse_lit_expr(input);
    }
    if input.peek(token::Paren) {
        return parse_paren(input);
    }
    if input.peek(token::Bracket) {
        return parse_array(input);
    }
    if input.peek(token::Brace) || input.peek(Token![if]) || input.peek(Token![match]) {
        return parse_block_like(input);
    }
    if input.peek(Token![|]) || input.peek(Token![||]) {
        return parse_lambda(input);
    }
    if input.peek(Token![@]) {
        return parse_derivative(input);
    }
    if let Some(ident) = peek_name_at(input, 0) {
        let name = ident.to_string();
        if name == "jagged" && peek_group_at(input, 1, Delimiter::Bracket) {
            return parse_jagged(input);
        }
        if let Some(op) = RedOp::from_name(&name) {
            if peek_group_at(input, 1, Delimiter::Bracket) && peek_group_at(input, 2, Delimiter::Parenthesis) {
                return parse_reduce(input, op);
            }
        }
        return parse_path(input);
    }
    if input.peek(Token![crate]) || input.peek(Token![self]) || input.peek(Token![super]) {
        return parse_path(input);
    }
    for word in ["for", "while", "loop"] {
        if input.cursor().ident().is_some_and(|(ident, _)| ident == word) {
            return Err(error_with_help(
                input.span(),
                &format!("einlang has no `{word}` loops"),
                "write the computation with index notation (`let y[i] = ...`), a comprehension or a recurrence",
            ));
        }
    }
    if input.peek(Token![return]) {
        return Err(error_with_help(
            input.span(),
            "einlang has no `return`",
            "a function returns the value of its last expression",
        ));
    }
    Err(expected(input, "expression"))
}

/// `if`, `match` or a block: the expressions that may stand as statements
/// without `;`.
pub(super) fn parse_block_like(input: ParseStream) -> syn::Result<Expr> {
    if input.peek(Token![if]) {
        return parse_if(input);
    }
    if input.peek(Token![match]) {
        return parse_match(input);
    }
    let block = stmt::parse_block(input)?;
    Ok(Expr { span: block.span, kind: ExprKind::Block(block) })
}

/// `a`, `a::b::c`, `crate::f`, `super::g`.
fn parse_path(input: ParseStream) -> syn::Result<Expr> {
    let mut segments = vec![parse_path_segment(input)?];
    while input.peek(Token![::]) {
        input.parse::<Token![::]>()?;
        segments.push(parse_path_tail_segment(input)?);
    }
    let span = match (segments.first(), segments.last()) {
        (Some(first), Some(last)) => first.span.to(last.span),
        _ => Span::token(input.span()),
    };
    Ok(Expr { kind: ExprKind::Path(segments), span })
}

/// `()`, `(e)`, `(a,)`, `(a, b)`.
fn parse_paren(input: ParseStream) -> syn::Result<Expr> {
    let (span, content) = parens(input)?;
    let (mut elems, trailing_comma) = super::comma_list(&content, parse_expr)?;
    if elems.len() == 1 && !trailing_comma {
        let inner = elems.remove(0);
        return Ok(Expr { kind: inner.kind, span });
    }
    Ok(Expr { kind: ExprKind::Tuple(elems), span })
}

/// `[a, b, c]` or `[e | i in 0..n, x in xs, cond]`.
fn parse_array(input: ParseStream) -> syn::Result<Expr> {
    let (span, content) = brackets(input)?;
    if content.is_empty() {
        return Ok(Expr { kind: ExprKind::Array(Vec::new()), span });
    }
    let first = parse_expr(&content)?;
    if content.peek(Token![|]) && !content.peek(Token![||]) {
        content.parse::<Token![|]>()?;
        let clauses = parse_comp_clauses(&content)?;
        // A tuple element is a row: the comprehension stacks its
        // components, as the seed's `np.array` of tuples does, so
        // `[(i, j) | ...]` is a matrix with one row per pair.
        let body = match first.kind {
            ExprKind::Tuple(elems) => Expr { kind: ExprKind::Array(elems), span: first.span },
            kind => Expr { kind, span: first.span },
        };
        return Ok(Expr { kind: ExprKind::Comprehension { body: Box::new(body), clauses, rows: false }, span });
    }
    let mut elems = vec![first];
    if !content.is_empty() {
        if !content.peek(Token![,]) {
            return Err(expected(&content, "`,`, `|` or `]`"));
        }
        content.parse::<Token![,]>()?;
        elems.extend(parse_comma_list(&content, "]", parse_expr)?);
    }
    Ok(Expr { kind: ExprKind::Array(elems), span })
}

/// `x in xs` (a generator) or a boolean filter.
fn parse_comp_clause(input: ParseStream) -> syn::Result<CompClause> {
    if peek_name(input) && input.peek2(Token![in]) {
        let var = parse_name(input)?;
        input.parse::<Token![in]>()?;
        return Ok(CompClause::Gen { var, iter: parse_iterable(input)? });
    }
    Ok(CompClause::Filter(parse_expr(input)?))
}

/// `jagged[a, b, ...]`.
fn parse_jagged(input: ParseStream) -> syn::Result<Expr> {
    let keyword = parse_name(input)?;
    let (group, content) = brackets(input)?;
    let span = keyword.span.to(group);
    if !content.is_empty() {
        // `jagged[row | clauses]`: a comprehension of rows.
        let fork = content.fork();
        if parse_expr(&fork).is_ok() && fork.peek(Token![|]) && !fork.peek(Token![||]) {
            let body = parse_expr(&content)?;
            content.parse::<Token![|]>()?;
            let clauses = parse_comp_clauses(&content)?;
            return Ok(Expr { kind: ExprKind::Comprehension { body: Box::new(body), clauses, rows: true }, span });
        }
    }
    let elems = parse_comma_list(&content, "]", parse_expr)?;
    Ok(Expr { kind: ExprKind::Jagged(elems), span })
}

/// `sum[k, j in 0..N](body [where items])`.
fn parse_reduce(input: ParseStream, op: RedOp) -> syn::Result<Expr> {
    let op_ident = parse_name(input)?;
    let (vars_span, vars_content) = brackets(input)?;
    let vars = parse_comma_list(&vars_content, "]", parse_red_var)?;
    if vars.is_empty() {
        return Err(syn::Error::new(
            vars_span.lo(),
            format!("`{}` needs at least one index to reduce over", op.name()),
        ));
    }
    let (body_span, content) = parens(input)?;
    let body = parse_expr(&content)?;
    let where_clause = if content.peek(Token![where]) { stmt::parse_where(&content)? } else { Vec::new() };
    if !content.is_empty() {
        let what = if where_clause.is_empty() { "`where` or `)`" } else { "`,` or `)`" };
        return Err(expected(&content, what));
    }
    let span = op_ident.span.to(body_span);
    Ok(Expr { kind: ExprKind::Reduce { op, op_span: op_ident.span, vars, body: Box::new(body), where_clause }, span })
}

/// `k`, `k in a..b` or `..r`.
fn parse_red_var(input: ParseStream) -> syn::Result<RedVar> {
    if input.peek(Token![..]) {
        input.parse::<Token![..]>()?;
        let var = parse_name(input)?;
        return Ok(RedVar { var, range: None, rest: true });
    }
    let var = parse_name(input)?;
    let range = if input.peek(Token![in]) {
        input.parse::<Token![in]>()?;
        Some(parse_range(input)?)
    } else {
        None
    };
    Ok(RedVar { var, range, rest: false })
}

/// `if cond { ... } [else if ... | else { ... }]`.
fn parse_if(input: ParseStream) -> syn::Result<Expr> {
    let _guard = enter(input)?;
    let if_token = input.parse::<Token![if]>()?;
    let cond = parse_expr(input)?;
    let then = stmt::parse_block(input)?;
    let mut hi = then.span.hi();
    let els = if input.peek(Token![else]) {
        input.parse::<Token![else]>()?;
        let els = if input.peek(Token![if]) {
            parse_if(input)?
        } else if input.peek(token::Brace) {
            let block = stmt::parse_block(input)?;
            Expr { span: block.span, kind: ExprKind::Block(block) }
        } else {
            return Err(expected(input, "`{` or `if` after `else`"));
        };
        hi = els.span.hi();
        Some(Box::new(els))
    } else {
        None
    };
    Ok(Expr { kind: ExprKind::If { cond: Box::new(cond), then, els }, span: Span::new(if_token.span, hi) })
}

/// `match e { pat [if guard] => body, ... }`.
fn parse_match(input: ParseStream) -> syn::Result<Expr> {
    let match_token = input.parse::<Token![match]>()?;
    let scrutinee = parse_expr(input)?;
    let (group, content) = super::braces(input)?;
    let mut arms = Vec::new();
    while !content.is_empty() {
        let pat = stmt::parse_match_pattern(&content)?;
        // `if` as in Rust; `where` as the seed writes a guard.
        let guard = if content.peek(Token![if]) || content.peek(Token![where]) {
            if content.peek(Token![if]) {
                content.parse::<Token![if]>()?;
            } else {
                content.parse::<Token![where]>()?;
            }
            Some(parse_expr(&content)?)
        } else {
            None
        };
        expect_token!(&content, =>)?;
        // As in Rust, a block-like body ends the arm; the comma is optional.
        let block_like = content.peek(token::Brace) || content.peek(Token![if]) || content.peek(Token![match]);
        let body = if block_like { parse_block_like(&content)? } else { parse_expr(&content)? };
        let span = pat.span().to(body.span);
        arms.push(MatchArm { pat, guard, body, span });
        if content.peek(Token![,]) {
            content.parse::<Token![,]>()?;
        } else if !content.is_empty() && !block_like {
            return Err(expected(&content, "`,` or `}`"));
        }
    }
    let span = Span::new(match_token.span, group.hi());
    Ok(Expr { kind: ExprKind::Match { scrutinee: Box::new(scrutinee), arms }, span })
}

/// `|x, y: f32| body` or `|| body`.
fn parse_lambda(input: ParseStream) -> syn::Result<Expr> {
    let (lo, params) = if input.peek(Token![||]) {
        (input.parse::<Token![||]>()?.spans[0], Vec::new())
    } else {
        let open = input.parse::<Token![|]>()?.span;
        let mut params = Vec::new();
        while !input.peek(Token![|]) {
            params.push(item::parse_param(input)?);
            if input.peek(Token![,]) {
                input.parse::<Token![,]>()?;
            } else if !input.peek(Token![|]) {
                return Err(expected(input, "`,` or `|`"));
            }
        }
        input.parse::<Token![|]>()?;
        (open, params)
    };
    let body = parse_expr(input)?;
    let span = Span::new(lo, body.span.hi());
    Ok(Expr { kind: ExprKind::Lambda { params, body: Box::new(body) }, span })
}

/// `@y / @x` (a derivative) or `@y` (a differential).
fn parse_derivative(input: ParseStream) -> syn::Result<Expr> {
    let at = input.parse::<Token![@]>()?.span;
    let target = parse_name(input)?;
    if input.peek(Token![/]) && input.peek2(Token![@]) {
        input.parse::<Token![/]>()?;
        input.parse::<Token![@]>()?;
        let wrt = parse_name(input)?;
        let span = Span::new(at, wrt.span.hi());
        return Ok(Expr { kind: ExprKind::Deriv { target, wrt }, span });
    }
    let span = Span::new(at, target.span.hi());
    Ok(Expr { kind: ExprKind::Differential(target), span })
}
