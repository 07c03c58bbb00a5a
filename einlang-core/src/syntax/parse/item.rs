//! Items (`fn`, `@fn`, `use`, `mod`, `const`), attributes, `use` trees, and
//! the per-item error recovery loop.

use proc_macro2::TokenTree;
use syn::parse::discouraged::Speculative;
use syn::parse::ParseStream;
use syn::{token, Token};

use super::{
    ast_ident, braces, brackets, enter, expect_token, expected, parens, parse_comma_list, parse_name,
    parse_path_segment, parse_path_tail_segment, peek_name, peek_path_tail_segment, stmt, ty,
};
use crate::base::span::Span;
use crate::syntax::ast::{Attr, ConstItem, FnItem, Item, ModItem, Param, UseItem, UseTree, Visibility};

/// Parses items up to the end of `input`, recovering from errors: an item
/// that fails adds its first error to `errors` and is skipped.
pub(super) fn parse_items(input: ParseStream, errors: &mut Vec<syn::Error>) -> Vec<Item> {
    let mut items = Vec::new();
    while !input.is_empty() {
        let fork = input.fork();
        match parse_item(&fork) {
            Ok(item) => {
                input.advance_to(&fork);
                items.extend(item);
            }
            Err(err) => {
                errors.push(err);
                skip_item(input);
            }
        }
    }
    items
}

/// Parses one item or top-level statement. `None` for what leaves nothing in
/// the tree: a stray `;` or an inner doc attribute (`//!` module docs).
fn parse_item(input: ParseStream) -> syn::Result<Option<Item>> {
    if input.peek(Token![;]) {
        input.parse::<Token![;]>()?;
        return Ok(None);
    }
    if input.peek(Token![#]) && input.peek2(Token![!]) {
        parse_inner_attr(input)?;
        return Ok(None);
    }
    if let Some(item) = parse_declaration(input)? {
        return Ok(Some(item));
    }
    Ok(Some(Item::Stmt(stmt::parse_top_level_stmt(input)?)))
}

/// Whether an item keyword (or what may precede one) comes next; these start
/// `Stmt::Item` inside blocks.
pub(super) fn peek_item(input: ParseStream) -> bool {
    input.peek(Token![fn])
        || input.peek(Token![pub])
        || input.peek(Token![use])
        || input.peek(Token![mod])
        || input.peek(Token![const])
        || input.peek(Token![#])
        || (input.peek(Token![@]) && input.peek2(Token![fn]))
}

/// Parses an item other than a statement: optional attributes and `pub`,
/// then `fn`, `@fn`, `use`, `mod` or `const`. Returns `None`, having consumed
/// nothing but doc comments, when what follows is a statement.
pub(super) fn parse_declaration(input: ParseStream) -> syn::Result<Option<Item>> {
    let outer = parse_outer_attrs(input)?;
    let vis_span = if input.peek(Token![pub]) { Some(input.parse::<Token![pub]>()?.span) } else { None };
    let vis = if vis_span.is_some() { Visibility::Public } else { Visibility::Private };
    let start = |span: proc_macro2::Span| vis_span.unwrap_or(span);

    if input.peek(Token![fn]) {
        let lo = start(input.span());
        return Ok(Some(Item::Fn(parse_fn(input, outer, vis, lo)?)));
    }
    if input.peek(Token![@]) && input.peek2(Token![fn]) {
        let at = input.parse::<Token![@]>()?;
        return Ok(Some(Item::DerivRule(parse_fn(input, outer, vis, start(at.span))?)));
    }

    // Only functions take attributes; doc comments elsewhere are accepted
    // and dropped, as the AST has no place for them.
    let not_fn = |what: &str| -> syn::Result<()> {
        match outer.attrs.first() {
            Some(attr) => Err(syn::Error::new(attr.span.lo(), format!("attributes are not allowed on {what}"))),
            None => Ok(()),
        }
    };
    if input.peek(Token![use]) {
        not_fn("`use` items")?;
        let use_token = input.parse::<Token![use]>()?;
        let tree = parse_use_tree(input, false)?;
        let semi = expect_token!(input, ;)?;
        let span = Span::new(start(use_token.span), semi.span);
        return Ok(Some(Item::Use(UseItem { vis, tree, span })));
    }
    if input.peek(Token![mod]) {
        not_fn("modules")?;
        let mod_token = input.parse::<Token![mod]>()?;
        return Ok(Some(Item::Mod(parse_mod(input, vis, start(mod_token.span))?)));
    }
    if input.peek(Token![const]) {
        not_fn("constants")?;
        let const_token = input.parse::<Token![const]>()?;
        return Ok(Some(Item::Const(parse_const(input, vis, start(const_token.span))?)));
    }
    if vis_span.is_some() {
        return Err(expected(input, "`fn`, `use`, `mod` or `const` after `pub`"));
    }
    not_fn("statements")?;
    Ok(None)
}

/// Outer attributes: doc comments and `#[name]` / `#[name(args)]`.
#[derive(Default)]
struct OuterAttrs {
    docs: Vec<String>,
    attrs: Vec<Attr>,
}

fn parse_outer_attrs(input: ParseStream) -> syn::Result<OuterAttrs> {
    let mut outer = OuterAttrs::default();
    while input.peek(Token![#]) && !input.peek2(Token![!]) {
        let pound = input.parse::<Token![#]>()?;
        let (group, content) = brackets(input)?;
        if content.cursor().ident().is_none() {
            return Err(expected(&content, "an attribute name"));
        }
        let name_token = syn::ext::IdentExt::parse_any(&content)?;
        let name = ast_ident(&name_token);
        if name.name == "doc" && content.peek(Token![=]) {
            content.parse::<Token![=]>()?;
            if !content.peek(syn::LitStr) {
                return Err(expected(&content, "a string"));
            }
            outer.docs.push(content.parse::<syn::LitStr>()?.value());
        } else {
            let args = if content.peek(token::Paren) {
                let (_, args) = parens(&content)?;
                parse_comma_list(&args, ")", parse_attr_arg)?
            } else {
                Vec::new()
            };
            outer.attrs.push(Attr { name, args, span: Span::new(pound.span, group.hi()) });
        }
        if !content.is_empty() {
            return Err(expected(&content, "`]`"));
        }
    }
    Ok(outer)
}

/// An attribute argument: an identifier, or a literal kept as its text.
fn parse_attr_arg(input: ParseStream) -> syn::Result<crate::syntax::ast::Ident> {
    if input.peek(syn::Lit) {
        let lit: proc_macro2::Literal = input.parse()?;
        return Ok(crate::syntax::ast::Ident { name: lit.to_string(), span: Span::token(lit.span()) });
    }
    if input.cursor().ident().is_some() {
        let ident = syn::ext::IdentExt::parse_any(input)?;
        return Ok(ast_ident(&ident));
    }
    Err(expected(input, "an identifier or a literal"))
}

/// `#![doc = "..."]` (from `//!`) is accepted and ignored; other inner
/// attributes are errors.
fn parse_inner_attr(input: ParseStream) -> syn::Result<()> {
    let pound = input.parse::<Token![#]>()?;
    input.parse::<Token![!]>()?;
    let (_, content) = brackets(input)?;
    if content.cursor().ident().is_some() {
        let name: proc_macro2::Ident = syn::ext::IdentExt::parse_any(&content)?;
        if name == "doc" {
            // Consume the rest: the module's doc text has no place in the AST.
            while !content.is_empty() {
                content.parse::<TokenTree>()?;
            }
            return Ok(());
        }
    }
    while !content.is_empty() {
        content.parse::<TokenTree>()?;
    }
    Err(syn::Error::new(pound.span, "inner attributes are not supported"))
}

/// `fn name(params) [-> T] { ... }` or `fn name(params) [-> T];`, after any
/// `pub` and `@`. `lo` is the span of the item's first token.
fn parse_fn(input: ParseStream, outer: OuterAttrs, vis: Visibility, lo: proc_macro2::Span) -> syn::Result<FnItem> {
    input.parse::<Token![fn]>()?;
    let name = parse_name(input)?;
    let (_, content) = parens(input)?;
    let params = parse_comma_list(&content, ")", parse_param)?;
    let ret = if input.peek(Token![->]) {
        input.parse::<Token![->]>()?;
        Some(ty::parse_type(input)?)
    } else {
        None
    };
    let (body, hi) = if input.peek(Token![;]) {
        (None, input.parse::<Token![;]>()?.span)
    } else if input.peek(token::Brace) {
        let block = stmt::parse_block(input)?;
        let hi = block.span.hi();
        (Some(block), hi)
    } else {
        let what = if ret.is_some() { "`{` or `;`" } else { "`->`, `{` or `;`" };
        return Err(expected(input, what));
    };
    Ok(FnItem { vis, docs: outer.docs, attrs: outer.attrs, name, params, ret, body, span: Span::new(lo, hi) })
}

/// `name` or `name: Type`, in a function's or a lambda's parameter list.
pub(super) fn parse_param(input: ParseStream) -> syn::Result<Param> {
    let name = parse_name(input)?;
    let ty = if input.peek(Token![:]) && !input.peek(Token![::]) {
        input.parse::<Token![:]>()?;
        Some(ty::parse_type(input)?)
    } else {
        None
    };
    let span = match &ty {
        Some(ty) => name.span.to(ty.span()),
        None => name.span,
    };
    Ok(Param { name, ty, span })
}

/// `a::b::{c, d as e, f::*}`, `a::*`, `a as b`. `after_colons` is whether
/// the tree follows `::` (directly or inside a group that does), where a
/// keyword is a name: `use std::ml::where;`, `use std::math::{mod, fmod};`.
fn parse_use_tree(input: ParseStream, after_colons: bool) -> syn::Result<UseTree> {
    let _guard = enter(input)?;
    if input.peek(Token![*]) {
        return Ok(UseTree::Glob(Span::token(input.parse::<Token![*]>()?.span)));
    }
    if input.peek(token::Brace) {
        let (span, content) = braces(input)?;
        let trees = parse_comma_list(&content, "}", |content| parse_use_tree(content, after_colons))?;
        return Ok(UseTree::Group(trees, span));
    }
    let segment = if after_colons && peek_path_tail_segment(input) {
        parse_path_tail_segment(input)?
    } else if peek_name(input) || input.peek(Token![crate]) || input.peek(Token![self]) || input.peek(Token![super]) {
        parse_path_segment(input)?
    } else {
        return Err(expected(input, "a path, `{` or `*`"));
    };
    if input.peek(Token![::]) {
        input.parse::<Token![::]>()?;
        let rest = parse_use_tree(input, true)?;
        return Ok(UseTree::Path { segment, rest: Box::new(rest) });
    }
    let alias = if input.peek(Token![as]) {
        input.parse::<Token![as]>()?;
        Some(parse_name(input)?)
    } else {
        None
    };
    Ok(UseTree::Name { name: segment, alias })
}

/// `mod name { items }`, after `mod`. The errors of all its items are
/// reported together.
fn parse_mod(input: ParseStream, vis: Visibility, lo: proc_macro2::Span) -> syn::Result<ModItem> {
    let _guard = enter(input)?;
    let name = parse_name(input)?;
    if input.peek(syn::Token![;]) {
        let semi = input.parse::<syn::Token![;]>()?;
        return Ok(ModItem { vis, name, items: Vec::new(), external: true, span: Span::new(lo, semi.span) });
    }
    let (group, content) = braces(input)?;
    let mut errors = Vec::new();
    let items = parse_items(&content, &mut errors);
    let mut errors = errors.into_iter();
    if let Some(mut first) = errors.next() {
        for err in errors {
            first.combine(err);
        }
        return Err(first);
    }
    Ok(ModItem { vis, name, items, external: false, span: Span::new(lo, group.hi()) })
}

/// `const NAME [: T] = value;`, after `const`.
fn parse_const(input: ParseStream, vis: Visibility, lo: proc_macro2::Span) -> syn::Result<ConstItem> {
    let name = parse_name(input)?;
    let ty = super::parse_annotation_and_eq(input)?;
    let value = super::expr::parse_expr(input)?;
    let semi = expect_token!(input, ;)?;
    Ok(ConstItem { vis, name, ty, value, span: Span::new(lo, semi.span) })
}

/// Skips the item that starts at `input` after it failed to parse: up to and
/// including the next top-level `;`, or its brace group. A `fn`, `@fn` or
/// `mod` ends with its first brace group; a statement ends with a `;`, or
/// with a brace group followed by the start of another item or statement.
fn skip_item(input: ParseStream) {
    if input.peek(Token![#]) && input.peek2(Token![!]) {
        // An inner attribute is an item of its own: `#`, `!`, `[...]`.
        for _ in 0..3 {
            if input.parse::<TokenTree>().is_err() {
                return;
            }
        }
        return;
    }
    let brace_terminated = starts_braced_item(input);
    while !input.is_empty() {
        if input.peek(Token![;]) {
            let _ = input.parse::<Token![;]>();
            return;
        }
        let is_brace = input.peek(token::Brace);
        if input.parse::<TokenTree>().is_err() {
            return;
        }
        if is_brace && (brace_terminated || input.is_empty() || starts_new_statement(input)) {
            if input.peek(Token![;]) {
                let _ = input.parse::<Token![;]>();
            }
            return;
        }
    }
}

/// Whether the item at `input` is a `fn`, `@fn` or `mod`, after any
/// attributes and `pub`.
fn starts_braced_item(input: ParseStream) -> bool {
    let fork = input.fork();
    while fork.peek(Token![#]) {
        let _ = fork.parse::<TokenTree>();
        let _ = fork.parse::<TokenTree>();
    }
    if fork.peek(Token![pub]) {
        let _ = fork.parse::<TokenTree>();
    }
    if fork.peek(Token![@]) {
        let _ = fork.parse::<TokenTree>();
    }
    fork.peek(Token![fn]) || fork.peek(Token![mod])
}

/// Whether a keyword that can only start an item or statement comes next.
fn starts_new_statement(input: ParseStream) -> bool {
    peek_item(input) || input.peek(Token![let])
}
