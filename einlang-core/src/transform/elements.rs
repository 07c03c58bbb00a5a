//! Indexed definitions whose element is a tensor (LANGUAGE.md §3): `let
//! y[n] = f(x[n]);` and, in a recurrence, `let h[t in 1..T] = step(h[t -
//! 1], x[t]);`. Analysis types them (the element's axes follow the written
//! ones) and records each (`Tables::element_requests`); this pass rewrites
//! every one into a definition of one scalar per point, over fresh index
//! variables for the element's axes, and analysis runs again.
//!
//! The value at a point of the element is written out where the language
//! allows: reads gain the element's indices (`x[n]` at `e0` is `x[n, e0]`),
//! elementwise operators and intrinsics apply to the values at the point,
//! and a call of an Einlang function is inlined at the point when its body
//! is indexed definitions and scalar `let`s (its parameters bound to reads
//! or scalars), so
//!
//! ```text
//! fn step(w, h, x) { let z[j] = tanh(sum[k](w[j, k] * h[k]) + x[j]); z }
//! let h[t in 1..T] = step(w, h[t - 1], x[t]);
//! ```
//!
//! becomes `let h[t in 1..T, e0] = tanh(sum[k](w[e0, k] * h[t - 1, k]) +
//! x[t, e0]);`: the recurrence reads its own earlier points, and its
//! derivative, storage and parallel loops are those of the definition
//! written by hand. Any other value is computed whole at each point of the
//! definition and read at the element's indices (correct, but it repeats
//! the work once per element).

use super::copy::{Copier, ReadAs};
use crate::analysis::{Tables, Ty};
use crate::base::span::Span;
use crate::hir::{Block, Callee, DefId, DefKind, ExprId, ExprKind, FnId, Hir, IndexedDef, Slot, Stmt};

/// Rewrites every definition `tables` records as tensor-valued; whether
/// there was one.
pub fn rewrite(hir: &mut Hir, tables: &Tables) -> bool {
    if tables.element_requests.is_empty() {
        return false;
    }
    let mut changed = false;
    let fns: Vec<FnId> = hir.fns.iter().map(|(id, _)| id).collect();
    for f in fns {
        let mut body = std::mem::replace(&mut hir.fns[f].body, Block { stmts: Vec::new(), tail: None });
        changed |= rewrite_block(hir, tables, &mut body);
        hir.fns[f].body = body;
    }
    let blocks: Vec<ExprId> =
        hir.exprs.iter().filter(|(_, e)| matches!(e.kind, ExprKind::Block(_))).map(|(id, _)| id).collect();
    for e in blocks {
        let ExprKind::Block(mut b) = std::mem::replace(&mut hir.exprs[e].kind, ExprKind::Error) else { continue };
        changed |= rewrite_block(hir, tables, &mut b);
        hir.exprs[e].kind = ExprKind::Block(b);
    }
    changed
}

fn rewrite_block(hir: &mut Hir, tables: &Tables, b: &mut Block) -> bool {
    let mut changed = false;
    for s in &mut b.stmts {
        match s {
            Stmt::Indexed(d) => changed |= rewrite_def(hir, tables, d),
            Stmt::Recurrence(r) => {
                for c in &mut r.clauses {
                    changed |= rewrite_def(hir, tables, c);
                }
            }
            Stmt::Let { .. } | Stmt::Expr(_) => {}
        }
    }
    changed
}

/// `v[slots] = e` with `e` a tensor of `n` axes: `v[slots, e0, .., en-1] =
/// e at (e0, .., en-1)`.
fn rewrite_def(hir: &mut Hir, tables: &Tables, d: &mut IndexedDef) -> bool {
    let Some(&n) = tables.element_requests.get(&d.body) else { return false };
    let span = hir.span(d.body);
    let axes: Vec<DefId> = (0..n).map(|a| hir.alloc_def(format!("e{a}"), DefKind::Index, span)).collect();
    let at: Vec<ExprId> = axes.iter().map(|&a| hir.alloc_expr(ExprKind::Def(a), span)).collect();
    let mut p = Point { hir, tables, span };
    d.body = p.value_at(d.body, at);
    d.slots.extend(axes.into_iter().map(|def| Slot::Var { def, range: None }));
    true
}

struct Point<'a> {
    hir: &'a mut Hir,
    tables: &'a Tables,
    span: Span,
}

impl Point<'_> {
    fn is_tensor(&self, e: ExprId) -> bool {
        matches!(self.tables.expr_ty.get(e.index()), Some(Ty::Tensor(..)))
    }

    fn e(&mut self, kind: ExprKind) -> ExprId {
        self.hir.alloc_expr(kind, self.span)
    }

    /// Fresh copies of the indices `at` (every node has one parent).
    fn fresh(&mut self, at: &[ExprId]) -> Vec<ExprId> {
        let mut c = Copier::new();
        at.iter().map(|&a| c.expr(self.hir, a)).collect()
    }

    /// The value of `e` at the element indices `at`: `e` itself when it is
    /// a scalar.
    fn value_at(&mut self, e: ExprId, at: Vec<ExprId>) -> ExprId {
        if !self.is_tensor(e) {
            return e;
        }
        match self.hir.exprs[e].kind.clone() {
            ExprKind::Def(_) => {
                let base = e;
                self.e(ExprKind::Index { base, args: at })
            }
            ExprKind::Index { base, mut args } if matches!(self.hir.exprs[base].kind, ExprKind::Def(_)) => {
                args.extend(at);
                self.e(ExprKind::Index { base, args })
            }
            ExprKind::Unary(op, a) => {
                let a = self.value_at(a, at);
                self.e(ExprKind::Unary(op, a))
            }
            ExprKind::Binary(op, a, b) => {
                let at2 = self.fresh(&at);
                let a = self.value_at(a, at);
                let b = self.value_at(b, at2);
                self.e(ExprKind::Binary(op, a, b))
            }
            ExprKind::Cast(a, k) => {
                let a = self.value_at(a, at);
                self.e(ExprKind::Cast(a, k))
            }
            ExprKind::If { cond, then, els: Some(els) } => {
                let at2 = self.fresh(&at);
                let then = self.value_at(then, at);
                let els = self.value_at(els, at2);
                self.e(ExprKind::If { cond, then, els: Some(els) })
            }
            ExprKind::Block(Block { stmts, tail: Some(t) }) if stmts.is_empty() => self.value_at(t, at),
            ExprKind::Call { callee: callee @ Callee::Intrinsic(_), callee_span, args } => {
                let mut new = Vec::new();
                for a in args {
                    let here = self.fresh(&at);
                    new.push(self.value_at(a, here));
                }
                self.e(ExprKind::Call { callee, callee_span, args: new })
            }
            ExprKind::Call { callee: Callee::Fn(g), ref args, .. } => {
                let callee = self.tables.instance_calls.get(&e).copied().unwrap_or(g);
                match self.inline_at(callee, args, &at) {
                    Some(v) => v,
                    None => self.whole_at(e, at),
                }
            }
            _ => self.whole_at(e, at),
        }
    }

    /// `{ let v = e; v[at] }`: the whole value, read at the point.
    fn whole_at(&mut self, e: ExprId, at: Vec<ExprId>) -> ExprId {
        let tmp = self.hir.alloc_def("element", DefKind::Local, self.span);
        let base = self.e(ExprKind::Def(tmp));
        let read = self.e(ExprKind::Index { base, args: at });
        let stmts = vec![Stmt::Let { def: tmp, ty: None, value: e, span: self.span }];
        self.e(ExprKind::Block(Block { stmts, tail: Some(read) }))
    }

    /// The value of `callee(args)` at `at`, written from the callee's body,
    /// when every parameter is bound to a read or a scalar and the body is
    /// indexed definitions (of plain index variables, no `where`) and
    /// scalar `let`s ending in a read of one of them or of a parameter.
    fn inline_at(&mut self, callee: FnId, args: &[ExprId], at: &[ExprId]) -> Option<ExprId> {
        let f = self.hir.fns[callee].clone();
        if f.params.len() != args.len() || f.is_generic() {
            return None;
        }
        let mut c = Copier::new();
        for (p, &a) in f.params.iter().zip(args) {
            if !self.is_tensor(a) {
                c.subst.insert(p.def, a);
                continue;
            }
            let how = match self.hir.exprs[a].kind.clone() {
                ExprKind::Def(base) => ReadAs::Prefix { base, prefix: Vec::new() },
                ExprKind::Index { base, args } => match self.hir.exprs[base].kind {
                    ExprKind::Def(base) => ReadAs::Prefix { base, prefix: args },
                    _ => ReadAs::Unavailable,
                },
                _ => ReadAs::Unavailable,
            };
            c.reads.insert(p.def, how);
        }
        for s in &f.body.stmts {
            match s {
                Stmt::Let { def, value, .. } if !self.is_tensor(*value) => {
                    c.subst.insert(*def, *value);
                }
                Stmt::Indexed(d) if d.wheres.is_empty() => {
                    let slots: Option<Vec<DefId>> =
                        d.slots.iter().map(|s| if let Slot::Var { def, .. } = s { Some(*def) } else { None }).collect();
                    let slots = slots?;
                    c.reads.insert(d.def, ReadAs::Point { slots, body: d.body });
                }
                _ => return None,
            }
        }
        let value = self.copy_at(&mut c, f.body.tail?, at)?;
        (!c.failed).then_some(value)
    }

    /// The value of the callee's tensor expression `e` at `at`, copied
    /// through `c` (which binds the callee's parameters and locals): reads
    /// of a local or a parameter, and elementwise operations of them.
    fn copy_at(&mut self, c: &mut Copier, e: ExprId, at: &[ExprId]) -> Option<ExprId> {
        if !self.is_tensor(e) {
            return Some(c.expr(self.hir, e));
        }
        let kind = match self.hir.exprs[e].kind.clone() {
            ExprKind::Def(name) => {
                c.reads.get(&name)?;
                let args = self.fresh(at);
                let base = self.e(ExprKind::Def(name));
                // Copying a read applies the bindings: a local's value at
                // the point, or the argument's read extended. (The probe
                // itself is left unused.)
                let probe = self.e(ExprKind::Index { base, args });
                return Some(c.expr(self.hir, probe));
            }
            ExprKind::Index { base, mut args } => {
                let ExprKind::Def(name) = self.hir.exprs[base].kind else { return None };
                c.reads.get(&name)?;
                args.extend(self.fresh(at));
                let base = self.e(ExprKind::Def(name));
                let probe = self.e(ExprKind::Index { base, args });
                return Some(c.expr(self.hir, probe));
            }
            ExprKind::Unary(op, a) => ExprKind::Unary(op, self.copy_at(c, a, at)?),
            ExprKind::Binary(op, a, b) => {
                let a = self.copy_at(c, a, at)?;
                ExprKind::Binary(op, a, self.copy_at(c, b, at)?)
            }
            ExprKind::Cast(a, k) => ExprKind::Cast(self.copy_at(c, a, at)?, k),
            ExprKind::Call { callee: callee @ Callee::Intrinsic(_), callee_span, args } => {
                let args = args.iter().map(|&a| self.copy_at(c, a, at)).collect::<Option<Vec<_>>>()?;
                ExprKind::Call { callee, callee_span, args }
            }
            _ => return None,
        };
        Some(self.e(kind))
    }
}
