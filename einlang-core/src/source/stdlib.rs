//! The standard library, parsed once per compiler process.
//!
//! Its text comes from the `einlang-stdlib` package. Every macro call of a
//! crate used to parse all of it again, which was most of the expansion time
//! of a small block; now the first call parses it and later calls share the
//! syntax trees. The trees are parsed with detached spans
//! (`base::span::detached`): a compiler span is valid only inside the macro
//! call that made it, and diagnostics about library code point at the macro
//! call anyway.
//!
//! The cache is per thread, not a process-wide `OnceLock`, because syntax
//! trees hold `proc_macro2` spans, which are neither `Send` nor `Sync`. rustc
//! expands a crate's macros on one thread, so in practice this is once per
//! compiler process.

use std::cell::OnceCell;
use std::rc::Rc;

use crate::base::span::{self, Span};
use crate::diag::Diagnostic;
use crate::syntax::{self, ast};

/// The parsed standard library: its modules in mounting order.
#[derive(Debug)]
pub struct Stdlib {
    pub modules: Vec<Module>,
}

/// One module of `std`.
#[derive(Debug)]
pub struct Module {
    pub name: &'static str,
    pub program: ast::Program,
}

thread_local! {
    static STDLIB: OnceCell<Result<Rc<Stdlib>, Vec<String>>> = const { OnceCell::new() };
}

/// The standard library, parsed on the first call of this thread. A module
/// that does not parse is a compiler bug, reported (at the macro call) by
/// every call.
pub fn stdlib() -> Result<Rc<Stdlib>, Vec<Diagnostic>> {
    let cached = STDLIB.with(|cell| cell.get_or_init(|| span::detached(parse_all)).clone());
    cached.map_err(|errors| errors.into_iter().map(|e| Diagnostic::bug(Span::call_site(), e)).collect())
}

/// Parses every module of `einlang_stdlib::MODULES`; errors as text, since
/// diagnostics hold spans that must not outlive this call.
fn parse_all() -> Result<Rc<Stdlib>, Vec<String>> {
    let mut modules = Vec::new();
    let mut errors = Vec::new();
    for m in einlang_stdlib::MODULES {
        match syntax::parse_str(m.source) {
            Ok(program) => modules.push(Module { name: m.name, program }),
            Err(diags) => {
                errors.extend(diags.iter().map(|d| format!("standard library `std::{}`: {}", m.name, d.message)))
            }
        }
    }
    if errors.is_empty() {
        Ok(Rc::new(Stdlib { modules }))
    } else {
        Err(errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_module_parses_and_is_parsed_once() {
        let first = stdlib().unwrap_or_else(|d| panic!("{}", d[0].message));
        let names: Vec<&str> = first.modules.iter().map(|m| m.name).collect();
        let expected: Vec<&str> = einlang_stdlib::MODULES.iter().map(|m| m.name).collect();
        assert_eq!(names, expected);
        let second = stdlib().unwrap_or_else(|d| panic!("{}", d[0].message));
        assert!(Rc::ptr_eq(&first, &second), "the second call reparsed the library");
    }

    #[test]
    fn library_spans_point_at_no_token() {
        let lib = stdlib().unwrap_or_else(|d| panic!("{}", d[0].message));
        let spans: Vec<Span> = lib.modules.iter().flat_map(|m| &m.program.items).filter_map(item_span).collect();
        assert!(!spans.is_empty());
        assert!(spans.iter().all(|s| s.is_detached()));
    }

    fn item_span(item: &ast::Item) -> Option<Span> {
        match item {
            ast::Item::Fn(f) => Some(f.span),
            _ => None,
        }
    }
}
