//! The einlang compiler.
//!
//! `driver::compile` is the whole pipeline, readable top to bottom; `entry`
//! holds the two macros' entry points (`expand` for `einlang!`,
//! `expand_file` for `include_ein!`). `docs/architecture.md` describes the
//! stages, what each owns and guarantees, and which may import which.
//!
//! This file only declares the stages and re-exports what the macros and
//! tools use: each item lives in the stage that owns it (`Options` in
//! `codegen`, whose choices they are; `Compiled` in `driver`).

pub mod analysis;
pub mod base;
pub mod codegen;
pub mod diag;
pub mod driver;
pub mod entry;
pub mod hir;
pub mod ir;
pub mod lower;
pub mod opt;
pub mod resolve;
pub mod source;
pub mod syntax;
#[cfg(test)]
mod test_support;
pub mod transform;

pub use codegen::Options;
pub use driver::{compile, compile_str, Compiled};
pub use entry::expand;
pub use entry::include::expand_file;
