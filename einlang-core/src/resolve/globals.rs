//! Top-level bindings read by functions, as the seed allows:
//!
//! ```text
//! let w = load_npy("w.npy") as [f32; 10, 4];
//! fn score(x) { let y[j] = sum[i](x[i] * w[j, i]); y }
//! print(score(v));
//! ```
//!
//! Top-level statements are the body of the generated `main`, so `w` is a
//! local of `main`. A function of the program's root module that reads a
//! top-level name not otherwise in scope gets a hidden, untyped parameter
//! for it (which makes it generic, instantiated per call as usual). A
//! function that calls such a function passes the value on, getting the
//! parameter itself; a call in `main` passes the binding of that name at
//! the point of the call. A `pub` function cannot read top-level bindings:
//! its Rust signature would have to change.

use std::collections::{HashMap, HashSet};

use super::Resolver;
use crate::diag::{Diagnostic, Diagnostics};
use crate::hir::{self, DefId, DefKind, ExprKind, FnId};
use crate::syntax::ast;

/// The names the program's top-level `let` statements bind.
fn top_level_names(program: &ast::Program) -> HashSet<String> {
    let mut out = HashSet::new();
    for item in &program.items {
        if let ast::Item::Stmt(ast::Stmt::Let(l)) = item {
            pattern_names(&l.pat, &mut out);
        }
    }
    out
}

/// The names pattern `p` binds.
pub(super) fn pattern_names(p: &ast::Pattern, out: &mut HashSet<String>) {
    match p {
        ast::Pattern::Name(id) => {
            out.insert(id.name.clone());
        }
        ast::Pattern::Tuple(items, _) | ast::Pattern::Or(items, _) => items.iter().for_each(|q| pattern_names(q, out)),
        ast::Pattern::At(id, q) => {
            out.insert(id.name.clone());
            pattern_names(q, out);
        }
        _ => {}
    }
}

/// The single-segment names `f`'s body reads and the names it binds with
/// `let` (anywhere) or as parameters, and the root functions it calls.
fn body_names(f: &ast::FnItem) -> (HashSet<String>, HashSet<String>) {
    let (mut read, mut bound) = (HashSet::new(), HashSet::new());
    for p in &f.params {
        bound.insert(p.name.name.clone());
    }
    let Some(body) = &f.body else { return (read, bound) };
    let block = ast::Expr { kind: ast::ExprKind::Block(body.clone()), span: body.span };
    crate::syntax::visit::walk_expr(&block, &mut |e| match &e.kind {
        ast::ExprKind::Path(p) if p.len() == 1 => {
            read.insert(p[0].name.clone());
        }
        ast::ExprKind::Block(b) => {
            for s in &b.stmts {
                if let ast::Stmt::Let(l) = s {
                    pattern_names(&l.pat, &mut bound);
                }
            }
        }
        _ => {}
    });
    (read, bound)
}

impl Resolver {
    /// Decides, before any body is resolved, which top-level bindings each
    /// function of the root module reads, directly or through the root
    /// functions it calls, and gives it a hidden parameter for each.
    pub(super) fn plan_captures(&mut self, program: &ast::Program) {
        let globals = top_level_names(program);
        if globals.is_empty() {
            return;
        }
        let fns: Vec<(FnId, &ast::FnItem)> = program
            .items
            .iter()
            .filter_map(|i| match i {
                ast::Item::Fn(f) => self.fn_of_item.get(&(f as *const ast::FnItem)).map(|id| (*id, f)),
                _ => None,
            })
            .collect();
        let by_name: HashMap<&str, FnId> = fns.iter().map(|(id, f)| (f.name.name.as_str(), *id)).collect();
        let mut reads: HashMap<FnId, Vec<String>> = HashMap::new();
        let mut calls: Vec<(FnId, FnId)> = Vec::new();
        for (id, f) in &fns {
            let (read, bound) = body_names(f);
            let mut direct: Vec<String> =
                read.iter().filter(|n| globals.contains(*n) && !bound.contains(*n)).cloned().collect();
            direct.sort();
            reads.insert(*id, direct);
            for n in &read {
                if let Some(g) = by_name.get(n.as_str()).filter(|_| !bound.contains(n)) {
                    calls.push((*id, *g));
                }
            }
        }
        loop {
            let mut changed = false;
            for &(f, g) in &calls {
                for name in reads.get(&g).cloned().unwrap_or_default() {
                    let list = reads.entry(f).or_default();
                    if !list.contains(&name) {
                        list.push(name);
                        changed = true;
                    }
                }
            }
            if !changed {
                break;
            }
        }
        for (f, names) in reads {
            if names.is_empty() {
                continue;
            }
            let span = self.hir.defs[self.hir.fns[f].def].span;
            let list = names.into_iter().map(|n| (n.clone(), self.hir.alloc_def(n, DefKind::Param, span))).collect();
            self.captures.insert(f, list);
        }
    }

    /// The hidden parameter through which the function being resolved
    /// reads the top-level binding `ident`, if that is what the name is.
    pub(super) fn capture_global(&mut self, ident: &ast::Ident) -> Option<DefId> {
        let f = self.current_fn?;
        self.captures.get(&f)?.iter().find(|(n, _)| *n == ident.name).map(|(_, d)| *d)
    }

    /// The extra arguments of a call of `callee` that reads top-level
    /// bindings: the caller's own hidden parameters, or in `main` the
    /// bindings in scope at the call.
    pub(super) fn capture_args(
        &mut self,
        callee: FnId,
        span: crate::base::span::Span,
        diags: &mut Diagnostics,
    ) -> Vec<hir::ExprId> {
        let Some(needed) = self.captures.get(&callee).cloned() else { return Vec::new() };
        let mut out = Vec::new();
        for (name, _) in needed {
            let value = match self.current_fn {
                Some(f) => self.captures.get(&f).and_then(|l| l.iter().find(|(n, _)| *n == name)).map(|(_, d)| *d),
                None => self.lookup_local(&name),
            };
            match value {
                Some(d) => out.push(self.hir.alloc_expr(ExprKind::Def(d), span)),
                None => {
                    let callee_name = self.hir.name(self.hir.fns[callee].def).to_string();
                    diags.push(
                        Diagnostic::error(
                            span,
                            format!("`{callee_name}` reads the top-level binding `{name}`, which is not defined before this call"),
                        )
                        .help(format!("define `{name}` before the first statement that calls `{callee_name}`")),
                    );
                }
            }
        }
        out
    }

    /// Adds the hidden parameters to the functions (after their bodies are
    /// resolved); a `pub` function may not have any.
    pub(super) fn attach_captures(&mut self, diags: &mut Diagnostics) {
        let mut captures: Vec<(FnId, Vec<(String, DefId)>)> =
            self.captures.iter().map(|(f, l)| (*f, l.clone())).collect();
        captures.sort_by_key(|(f, _)| f.index());
        for (f, list) in captures {
            let func = &self.hir.fns[f];
            if func.public {
                let names: Vec<String> = list.iter().map(|(n, _)| format!("`{n}`")).collect();
                let d = Diagnostic::error(
                    self.hir.defs[func.def].span,
                    format!(
                        "`pub fn {}` reads the top-level binding{} {}",
                        self.hir.name(func.def),
                        if names.len() == 1 { "" } else { "s" },
                        names.join(", ")
                    ),
                )
                .note("a public function's Rust signature lists everything it reads")
                .help("pass them as parameters, or make the function private");
                diags.push(d);
                continue;
            }
            for (_, def) in list {
                let span = self.hir.defs[def].span;
                self.hir.fns[f].params.push(hir::Param { def, ty: None, span });
            }
        }
    }
}
