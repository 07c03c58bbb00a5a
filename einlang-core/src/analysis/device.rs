//! Device placement: the user errors of `#[device(cuda)]` functions, found
//! on the analysed HIR so that they are reported before lowering, at the
//! attribute's span (an `include_ein!` user sees its file and line).
//!
//! - Without the cargo feature `cuda`, every device function is an error
//!   that says to enable it.
//! - With it, a host function that reaches a device function through its
//!   calls, and that device code does not itself call (such a function runs
//!   only as the CUDA twin of the device code), is an error: a device
//!   function takes a `&Device` first and is called from Rust, not from
//!   Einlang host code.
//!
//! The functions checked are the ones lowering lowers: not generic, not
//! skipped; a call of a generic function goes to the instance
//! monomorphization chose for it (`Tables::instance_calls`).

use std::collections::{HashMap, HashSet};

use crate::analysis::Tables;
use crate::base::span::Span;
use crate::diag::{Diagnostic, Diagnostics};
use crate::hir::{Callee, ExprKind, FnId, Hir};

/// Reports the placement errors of `hir` into `diags`; `cuda` says whether
/// device functions are compiled (the facade's feature `cuda`).
pub fn check(hir: &Hir, tables: &Tables, cuda: bool, diags: &mut Diagnostics) {
    let live: Vec<FnId> =
        hir.fns.iter().filter(|(f, func)| !func.is_generic() && !hir.skipped(*f)).map(|(f, _)| f).collect();
    let device: HashMap<FnId, Span> = live.iter().filter_map(|&f| hir.fns[f].device.map(|s| (f, s))).collect();
    if !cuda {
        for f in &live {
            if let Some(span) = device.get(f) {
                diags.push(
                    Diagnostic::error(*span, "`#[device(cuda)]` needs the cargo feature `cuda` of `einlang`")
                        .help("enable it: `einlang = { version = \"0.1\", features = [\"cuda\"] }`"),
                );
            }
        }
        return;
    }
    let calls: HashMap<FnId, Vec<FnId>> = live.iter().map(|&f| (f, callees(hir, tables, f))).collect();
    // Device functions and everything they call (their CUDA twins).
    let mut on_device: HashSet<FnId> = device.keys().copied().collect();
    let mut work: Vec<FnId> = on_device.iter().copied().collect();
    while let Some(f) = work.pop() {
        for &g in calls.get(&f).into_iter().flatten() {
            if on_device.insert(g) {
                work.push(g);
            }
        }
    }
    // Host functions that reach a device function, with the one they reach
    // (the first of their callees that is one, or reaches one).
    let mut bound: HashMap<FnId, FnId> = HashMap::new();
    loop {
        let mut changed = false;
        for &f in &live {
            if device.contains_key(&f) || bound.contains_key(&f) {
                continue;
            }
            let reached = calls[&f].iter().find_map(|g| match device.contains_key(g) {
                true => Some(*g),
                false => bound.get(g).copied(),
            });
            if let Some(d) = reached {
                bound.insert(f, d);
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    for &f in &live {
        let Some(d) = bound.get(&f) else { continue };
        if on_device.contains(&f) {
            continue;
        }
        let (callee, caller) = (hir.name(hir.fns[*d].def), hir.name(hir.fns[f].def));
        diags.push(
            Diagnostic::error(
                device[d],
                format!("the device function `{callee}` is called from host code (`{caller}`)"),
            )
            .note("a `#[device(cuda)]` function takes a `&einlang::cuda::Device` first and is called from Rust"),
        );
    }
}

/// The functions `f` calls, in source order, each once.
fn callees(hir: &Hir, tables: &Tables, f: FnId) -> Vec<FnId> {
    let func = &hir.fns[f];
    let mut roots = Vec::new();
    func.body.stmts.iter().for_each(|s| crate::hir::stmt_operands(s, &mut roots));
    roots.extend(func.body.tail);
    let mut out = Vec::new();
    for e in hir.reachable(roots) {
        if let ExprKind::Call { callee: Callee::Fn(g), .. } = &hir.exprs[e].kind {
            let g = tables.instance_calls.get(&e).copied().unwrap_or(*g);
            if !out.contains(&g) {
                out.push(g);
            }
        }
    }
    out
}
