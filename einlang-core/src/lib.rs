//! The einlang compiler.
//!
//! `driver::compile` is the whole pipeline, readable top to bottom; `entry`
//! holds the two macros' entry points (`expand` for `einlang!`,
//! `expand_file` for `include_ein!`). `docs/architecture.md` describes the
//! stages, what each owns and guarantees, and which may import which.

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

use proc_macro2::TokenStream;

pub use driver::{compile, compile_str};
pub use entry::expand;
pub use entry::include::expand_file;

/// Compilation options that come from the macro crate's features.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Bounds-check every tensor access, including proven ones.
    pub checked: bool,
    /// The directory of the program's source file (`include_ein!`), the
    /// value of `std::io::script_dir()`; None for `einlang!`, whose
    /// `script_dir()` is the calling crate's `CARGO_MANIFEST_DIR`.
    pub script_dir: Option<String>,
    /// Compile `#[device(cuda)]` functions (the facade's feature `cuda`);
    /// without it they are an error that says to enable the feature.
    pub cuda: bool,
    /// Emit each host function for the target's baseline instruction set
    /// only, without its AVX2 twin (see the runtime's `cpu` module): for
    /// snapshots that show the code once. `checked` implies it.
    pub baseline_only: bool,
}

/// Everything the pipeline produced, for tests and tools.
pub struct Compiled {
    pub ast: syntax::ast::Program,
    pub hir: hir::Hir,
    pub tables: analysis::Tables,
    pub ir: ir::Program,
    pub rust: TokenStream,
}

impl Compiled {
    /// What the compiler decided for the recurrence `name` of the Einlang
    /// function `function` (`"main"` for top-level statements): its
    /// recurrent and parallel axes, offsets, order and storage.
    pub fn recurrence(&self, function: &str, name: &str) -> Option<&analysis::recur::RecurrenceFacts> {
        self.recurrences().into_iter().find(|f| f.function == function && f.name == name)
    }

    /// How each derivative request of the Einlang function `function` was
    /// answered: its mode and, for recurrences differentiated in reverse
    /// mode, how the primal's history is had.
    pub fn derivatives(&self, function: &str) -> Vec<&hir::DerivFact> {
        self.hir.deriv_facts.iter().filter(|f| f.function == function).collect()
    }

    /// Every recurrence's facts, in no particular order.
    pub fn recurrences(&self) -> Vec<&analysis::recur::RecurrenceFacts> {
        self.tables.recurrences.values().collect()
    }
}
