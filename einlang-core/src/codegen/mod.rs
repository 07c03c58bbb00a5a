//! Code generation: the loop IR printed as Rust (`rust/`), and
//! `#[device(cuda)]` functions as CUDA C kernels with Rust launch glue
//! (`cuda/`).
//!
//! Back ends only print; every decision that needs an analysis fact (which
//! reads are proven in bounds, which loops are independent, the extents of
//! loops) is already in the IR. How those facts are spelled (rayon, unchecked
//! access, runtime paths) is each back end's own choice. An IR that breaks the invariants of
//! `ir/mod.rs` is reported as an internal compiler error, never a panic.

pub mod cuda;
mod docs;
pub mod host;
pub mod paths;
pub mod rust;

#[cfg(test)]
mod loop_tests;
#[cfg(test)]
mod test_programs;
#[cfg(test)]
mod tests;

use proc_macro2::TokenStream;

use crate::base::span::Span;
use crate::diag::Diagnostic;
use crate::ir;

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

/// The lints a generated function allows (its names follow the source,
/// its code is regular rather than idiomatic), and `extra` ones.
pub(crate) fn allow_lints(extra: TokenStream) -> TokenStream {
    quote::quote! {
        #[allow(
            non_snake_case,
            unused_variables,
            unused_mut,
            unused_parens,
            unused_braces,
            unused_imports,
            #extra
            dead_code,
            clippy::all,
            clippy::pedantic
        )]
    }
}

/// The Rust items of a lowered program: one `fn` per IR function.
///
/// A program that fails validation, or a function the emitter cannot print,
/// becomes a `compile_error!` saying "internal compiler error"; the other
/// functions are still emitted so that the rest of the user's crate keeps
/// type-checking.
pub fn emit_program(p: &ir::Program, options: &Options) -> TokenStream {
    if let Err(msg) = ir::validate::validate(p) {
        return Diagnostic::bug(Span::call_site(), format!("invalid loop IR: {msg}")).to_compile_errors();
    }
    let fns = host::FnIdents::of(p);
    let avx512 = rust::avx512_fns(p);
    let mut out = TokenStream::new();
    let twins = if options.cuda { cuda::device_twins(p) } else { Default::default() };
    let bound = cuda::device_bound(p);
    let bound_ids: std::collections::BTreeSet<ir::FuncId> = bound.keys().copied().collect();
    let mut api_docs = docs::api_docs(p);
    for (id, f) in p.functions() {
        // A public function is emitted with its whole documentation (see
        // `docs`), from a copy that holds it.
        let documented;
        let f = match api_docs.remove(&id) {
            Some(docs) => {
                documented = ir::Function { docs, ..f.clone() };
                &documented
            }
            None => f,
        };
        if let Some(device) = &f.device {
            // `analysis::device` reported device functions without the
            // feature, before lowering.
            if !options.cuda {
                let msg = format!("device function `{}` reached code generation without the feature `cuda`", f.name);
                out.extend(Diagnostic::bug(device.span, msg).to_compile_errors());
                continue;
            }
            out.extend(emit_cuda(f, id, p, &fns, options, device.span));
            continue;
        }
        // A host function that reaches a device function runs only as the
        // CUDA twin of device code that calls it (`analysis::device`
        // reported the others before lowering).
        if let Some((callee, span)) = bound.get(&id) {
            if let (true, Some(span)) = (options.cuda, twins.get(&id)) {
                out.extend(emit_cuda(f, id, p, &fns, options, *span));
            } else if options.cuda {
                let msg = format!(
                    "host function `{}` calling the device function `{}` reached code generation",
                    f.name,
                    p.func(*callee).name
                );
                out.extend(Diagnostic::bug(*span, msg).to_compile_errors());
            }
            continue;
        }
        match rust::emit_function(f, id, p, &bound_ids, &fns, options, avx512[id.index()]) {
            Ok(tokens) => out.extend(tokens),
            Err(msg) => {
                out.extend(Diagnostic::bug(Span::call_site(), format!("in `{}`: {msg}", f.name)).to_compile_errors())
            }
        }
        if let Some(span) = twins.get(&id) {
            out.extend(emit_cuda(f, id, p, &fns, options, *span));
        }
    }
    out.extend(emit_modules(p, &fns));
    out
}

/// The CUDA version of `f`, the function `id`, or the error that says why
/// there is none (at `span`, the `#[device(cuda)]` attribute that needs it).
fn emit_cuda(
    f: &ir::Function,
    id: ir::FuncId,
    p: &ir::Program,
    fns: &host::FnIdents,
    options: &Options,
    span: Span,
) -> TokenStream {
    match cuda::emit_function(f, id, p, fns, options) {
        Ok(emitted) => emitted.tokens,
        Err(cuda::Failure::Unsupported(what)) => {
            let mut d = Diagnostic::error(span, format!("`#[device(cuda)]` does not support {what} yet"));
            if f.device.is_none() {
                d = d.note(format!("in `{}`, which device code calls", f.name));
            }
            d.to_compile_errors()
        }
        Err(cuda::Failure::Bug(msg)) => {
            Diagnostic::bug(span, format!("in the CUDA version of `{}`: {msg}", f.name)).to_compile_errors()
        }
    }
}

/// A module tree: functions re-exported here, and child modules.
#[derive(Default)]
struct ModuleTree {
    exports: Vec<(String, String)>,
    children: std::collections::BTreeMap<String, ModuleTree>,
}

/// `pub mod m { pub use super::m_f as f; ... }` for the public functions of
/// inline Einlang modules (and their `_into` forms), so Rust code reaches
/// them as `m::f`.
fn emit_modules(p: &ir::Program, fns: &host::FnIdents) -> TokenStream {
    let mut root = ModuleTree::default();
    for (id, f) in p.functions() {
        // A function without a Rust name was reported when it was emitted.
        if let (Some((path, name)), Some(target)) = (&f.export, fns.get(id)) {
            let mut node = &mut root;
            for seg in path {
                node = node.children.entry(seg.clone()).or_default();
            }
            node.exports.push((target.to_string(), name.clone()));
            if rust::has_into(f, id, fns) {
                node.exports.push((rust::into_ident(target).to_string(), format!("{name}_into")));
            }
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
