//! Code generation: the loop IR printed as Rust (and, later, CUDA C).
//!
//! Back ends only print; every decision that needs an analysis fact (which
//! reads are proven in bounds, which loops are independent, the extents of
//! loops) is already in the IR. How those facts are spelled (rayon, unchecked
//! access, runtime paths) is each back end's own choice. An IR that breaks the invariants of
//! `ir/mod.rs` is reported as an internal compiler error, never a panic.

pub mod paths;
pub mod rust;

#[cfg(test)]
mod tests;

use proc_macro2::TokenStream;

use crate::base::span::Span;
use crate::diag::Diagnostic;
use crate::ir;

/// The Rust items of a lowered program: one `fn` per IR function.
///
/// A program that fails validation, or a function the emitter cannot print,
/// becomes a `compile_error!` saying "internal compiler error"; the other
/// functions are still emitted so that the rest of the user's crate keeps
/// type-checking.
pub fn emit_program(p: &ir::Program, options: &crate::Options) -> TokenStream {
    if let Err(msg) = ir::validate::validate(p) {
        return Diagnostic::bug(Span::call_site(), format!("invalid loop IR: {msg}")).to_compile_errors();
    }
    let fns = rust::fn_idents(p);
    let mut out = TokenStream::new();
    for f in &p.fns {
        match rust::emit_function(f, &fns, options) {
            Ok(tokens) => out.extend(tokens),
            Err(msg) => {
                out.extend(Diagnostic::bug(Span::call_site(), format!("in `{}`: {msg}", f.name)).to_compile_errors())
            }
        }
    }
    out.extend(emit_modules(p, &fns));
    out
}

/// A module tree: functions re-exported here, and child modules.
#[derive(Default)]
struct ModuleTree {
    exports: Vec<(String, String)>,
    children: std::collections::BTreeMap<String, ModuleTree>,
}

/// `pub mod m { pub use super::m_f as f; ... }` for the public functions of
/// inline Einlang modules, so Rust code reaches them as `m::f`.
fn emit_modules(p: &ir::Program, fns: &rust::FnIdents) -> TokenStream {
    let mut root = ModuleTree::default();
    for f in &p.fns {
        // A function without a Rust name was reported when it was emitted.
        if let (Some((path, name)), Some(target)) = (&f.export, fns.get(&f.name)) {
            let mut node = &mut root;
            for seg in path {
                node = node.children.entry(seg.clone()).or_default();
            }
            node.exports.push((target.to_string(), name.clone()));
        }
    }
    fn emit(node: &ModuleTree, depth: usize) -> TokenStream {
        let mut out = TokenStream::new();
        for (target, name) in &node.exports {
            let supers = (0..depth).map(|_| quote::quote!(super::));
            let (target, name) = (quote::format_ident!("{}", target), quote::format_ident!("{}", name));
            out.extend(quote::quote!(pub use #(#supers)* #target as #name;));
        }
        for (name, child) in &node.children {
            let inner = emit(child, depth + 1);
            let name = quote::format_ident!("{}", name);
            out.extend(quote::quote!(pub mod #name { #inner }));
        }
        out
    }
    emit(&root, 0)
}
