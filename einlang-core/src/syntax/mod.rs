//! Syntax: the AST, the parser (from tokens and from text, one parser), and
//! the AST pretty printer used by snapshot tests.

pub mod ast;
