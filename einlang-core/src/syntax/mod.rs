//! Syntax: the AST, the parser (from tokens and from text, one parser), and
//! the AST pretty printer used by snapshot tests.
//!
//! API: `parse_tokens` parses the tokens of an `einlang! { ... }` call,
//! `parse_str` parses source text (`.ein` files, the standard library) with
//! the same parser; both return every syntax error they find, at most one per
//! item. `pretty::pretty_program` / `pretty::pretty_expr` render a tree
//! without spans.

pub mod ast;
pub mod hoist;
mod parse;
pub mod pretty;
pub mod visit;

#[cfg(test)]
mod tests;

pub use parse::{parse_str, parse_tokens};
