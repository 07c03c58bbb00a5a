//! The einlang compiler.
//!
//! `expand` is the whole pipeline, readable top to bottom: parse the tokens,
//! resolve names into HIR, run the analyses (types, shapes, ranges), lower to
//! the loop IR, validate it, and print Rust. Every stage reports into one
//! `Diagnostics`; the pipeline stops after the first stage that reported an
//! error, so follow-on errors of a broken program are not shown.

pub mod analysis;
pub mod base;
pub mod codegen;
pub mod diag;
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

use diag::{Diagnostic, Diagnostics};

/// Compilation options that come from the macro crate's features.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Bounds-check every tensor access, including proven ones.
    pub checked: bool,
    /// The directory of the program's source file (`include_ein!`), the
    /// value of `std::io::script_dir()`; None for `einlang!`, whose
    /// `script_dir()` is the calling crate's `CARGO_MANIFEST_DIR`.
    pub script_dir: Option<String>,
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

    /// Every recurrence's facts, in no particular order.
    pub fn recurrences(&self) -> Vec<&analysis::recur::RecurrenceFacts> {
        self.tables.recurrences.values().collect()
    }
}

/// Runs the pipeline on parsed input. Errors are all the diagnostics of the
/// first stage that failed.
pub fn compile(mut ast: syntax::ast::Program, options: &Options) -> Result<Compiled, Vec<Diagnostic>> {
    syntax::hoist::hoist_nested_fns(&mut ast);
    let stdlib = source::stdlib::stdlib()?;
    let mut diags = Diagnostics::new();
    let mut hir = resolve::resolve_program(&ast, &stdlib, &mut diags);
    if diags.has_errors() {
        return Err(diags.into_vec());
    }
    diags.extend(transform::instantiate::expand_typed_rests(&mut hir));
    if diags.has_errors() {
        return Err(diags.into_vec());
    }
    validate_hir(&hir, "instantiation")?;
    let tables = transform::mono::analyze_with_instances(&mut hir, &mut diags);
    if diags.has_errors() {
        return Err(diags.into_vec());
    }
    validate_hir(&hir, "monomorphization")?;
    let ir = lower::lower_program(&hir, &tables, &program_tag(&ast), &mut diags);
    if diags.has_errors() {
        return Err(diags.into_vec());
    }
    if let Err(msg) = ir::validate::validate(&ir) {
        return Err(vec![Diagnostic::bug(base::span::Span::call_site(), format!("invalid loop IR: {msg}"))]);
    }
    let ir = match opt::optimize(ir) {
        Ok(ir) => ir,
        Err(msg) => return Err(vec![Diagnostic::bug(base::span::Span::call_site(), format!("invalid loop IR {msg}"))]),
    };
    let rust = codegen::emit_program(&ir, options);
    Ok(Compiled { ast, hir, tables, ir, rust })
}

/// Runs the HIR validator after the pass `after`; a violation is an
/// internal compiler error.
fn validate_hir(hir: &hir::Hir, after: &str) -> Result<(), Vec<Diagnostic>> {
    hir::validate::validate(hir).map_err(|msg| {
        vec![Diagnostic::bug(base::span::Span::call_site(), format!("invalid HIR after {after}: {msg}"))]
    })
}

/// A short tag that differs between macro calls with different programs,
/// for the names of their private functions (two `einlang!` calls in one
/// Rust module may both instantiate `relu` at `f32`). Deterministic: the
/// same program always gets the same tag.
fn program_tag(ast: &syntax::ast::Program) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    syntax::pretty::pretty_program(ast).hash(&mut h);
    format!("{:08x}", h.finish() as u32)
}

/// Compiles source text (a `.ein` file or a test program).
pub fn compile_str(src: &str, options: &Options) -> Result<Compiled, Vec<Diagnostic>> {
    let ast = syntax::parse_str(src)?;
    compile(ast, options)
}

/// Compiles the tokens of one `einlang! { ... }` call into Rust items.
///
/// Never panics: a panic inside the compiler is caught and reported as an
/// internal compiler error at the macro call.
pub fn expand(input: TokenStream, options: &Options) -> TokenStream {
    let result = catch_ice(|| {
        let ast = syntax::parse_tokens(input)?;
        compile(ast, options).map(|c| c.rust)
    });
    match result {
        Ok(tokens) => tokens,
        Err(diags) => {
            let mut out = TokenStream::new();
            for d in diags {
                out.extend(d.to_compile_errors());
            }
            out
        }
    }
}

/// Runs `f`, turning a panic inside it into an internal-compiler-error
/// diagnostic at the call site, so that both macros (`einlang!` and
/// `include_ein!`) report compiler bugs the same way instead of aborting
/// rustc's macro expansion.
pub(crate) fn catch_ice<T>(f: impl FnOnce() -> Result<T, Vec<Diagnostic>>) -> Result<T, Vec<Diagnostic>> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(result) => result,
        Err(payload) => {
            let msg = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_string());
            Err(vec![Diagnostic::bug(base::span::Span::call_site(), msg)])
        }
    }
}
