//! Copying HIR with substitution: the one way the transforms (instances of
//! generic functions, autodiff, tensor elements) write HIR somewhere new.
//! Every name the copy binds (block locals, index and reduction variables,
//! where bindings, pattern bindings) gets a fresh definition, so no `DefId`
//! is bound twice; free names stay as they are unless `subst` replaces them
//! by an expression (copied at each use, so the result shares no node with
//! anything). A `where` binding whose name is substituted is dropped.
//!
//! A copy of a whole function for an instance (`Copier::instance`, see
//! `transform::instantiate`) also gives the function's own free names
//! (parameters, dimension symbols) fresh definitions, expands named rest
//! indices, and keeps only the branch a test of ranks selects.

use std::collections::HashMap;

use crate::base::ops::RedOp;
use crate::diag::Diagnostic;
use crate::hir::{
    Arm, Block, CompClause, DefId, DimAnn, ExprId, ExprKind, Hir, IndexedDef, InterpPart, Pat, Range, RedVar, Slot,
    Stmt, TyAnn, Where,
};
use crate::transform::instantiate::Instance;

#[derive(Default)]
pub(crate) struct Copier {
    /// Free names replaced by (copies of) an expression.
    pub subst: HashMap<DefId, ExprId>,
    /// Names bound inside the copied code, to their fresh copies.
    pub map: HashMap<DefId, DefId>,
    /// Differentials `@p` of a rule's parameters replaced by expressions.
    pub diffs: HashMap<DefId, ExprId>,
    /// Reads of one tensor become reads of another with one axis reversed.
    pub reindex: Option<Reindex>,
    /// Nodes copied as (copies of) another expression.
    pub replace: HashMap<ExprId, ExprId>,
    /// Names read by index that the copy rewrites (see [`ReadAs`]).
    pub reads: HashMap<DefId, ReadAs>,
    /// Set when a name of `reads` is used in a way it cannot rewrite.
    pub failed: bool,
    /// For a copy of a whole function as an instance: what the copy knows
    /// of the template's ranks (see the module docs).
    pub instance: Option<Instance>,
}

/// How a read `d[args]` of a name in `Copier::reads` is copied.
#[derive(Clone)]
pub(crate) enum ReadAs {
    /// `base[prefix.., args..]`: a parameter bound to a (partial) read.
    Prefix { base: DefId, prefix: Vec<ExprId> },
    /// `body` with `slots` replaced by `args`: a definition read at one
    /// of its points.
    Point { slots: Vec<DefId>, body: ExprId },
    /// Not available where the copy goes: any use fails.
    Unavailable,
}

/// `from[.., e, ..]` (e at `axis`) becomes `to[.., last - e, ..]`.
#[derive(Clone, Copy)]
pub(crate) struct Reindex {
    pub from: DefId,
    pub to: DefId,
    pub axis: usize,
    pub last: ExprId,
}

impl Copier {
    pub fn new() -> Copier {
        Copier::default()
    }

    pub fn with(subst: HashMap<DefId, ExprId>) -> Copier {
        Copier { subst, ..Copier::default() }
    }

    /// A copier for an instance of a function (see the module docs).
    pub fn instance(instance: Instance) -> Copier {
        Copier { instance: Some(instance), ..Copier::default() }
    }

    /// The diagnostics an instance's copy found (rest indices whose extent
    /// cannot be told).
    pub fn take_errors(&mut self) -> Vec<Diagnostic> {
        self.instance.as_mut().map(|i| std::mem::take(&mut i.errors)).unwrap_or_default()
    }

    /// A fresh definition for a name the copy binds.
    pub fn bind(&mut self, hir: &mut Hir, d: DefId) -> DefId {
        if self.instance.is_some() {
            return self.name(hir, d);
        }
        let def = hir.defs[d].clone();
        let n = hir.alloc_def(def.name, def.kind, def.span);
        self.map.insert(d, n);
        n
    }

    /// The copy's name for `d`: its fresh definition if the copy bound it;
    /// in an instance, a fresh definition for every name of the function
    /// (unless the instance keeps its definitions); else `d`.
    pub fn name(&mut self, hir: &mut Hir, d: DefId) -> DefId {
        if let Some(&n) = self.map.get(&d) {
            return n;
        }
        match &self.instance {
            Some(i) if i.fresh(hir, d) => {
                let def = hir.defs[d].clone();
                let n = hir.alloc_def(def.name, def.kind, def.span);
                self.map.insert(d, n);
                n
            }
            _ => d,
        }
    }

    /// A type annotation, its dimension symbols renamed.
    pub fn ty(&mut self, hir: &mut Hir, t: &TyAnn) -> TyAnn {
        match t {
            TyAnn::Scalar(k) => TyAnn::Scalar(*k),
            TyAnn::Str => TyAnn::Str,
            TyAnn::Dyn { elem, span } => TyAnn::Dyn { elem: *elem, span: *span },
            TyAnn::Jagged { elem, span } => TyAnn::Jagged { elem: *elem, span: *span },
            TyAnn::Strs { dim, span } => TyAnn::Strs { dim: self.dim(hir, dim), span: *span },
            TyAnn::Tuple(items) => TyAnn::Tuple(items.iter().map(|t| self.ty(hir, t)).collect()),
            TyAnn::Tensor { elem, dims, span } => {
                TyAnn::Tensor { elem: *elem, dims: dims.iter().map(|d| self.dim(hir, d)).collect(), span: *span }
            }
        }
    }

    fn dim(&mut self, hir: &mut Hir, d: &DimAnn) -> DimAnn {
        match d {
            DimAnn::Sym(s, span) => DimAnn::Sym(self.name(hir, *s), *span),
            DimAnn::Bin(op, a, b, span) => {
                DimAnn::Bin(*op, Box::new(self.dim(hir, a)), Box::new(self.dim(hir, b)), *span)
            }
            other => other.clone(),
        }
    }

    pub fn range(&mut self, hir: &mut Hir, r: &Range) -> Range {
        Range { start: self.expr(hir, r.start), end: self.expr(hir, r.end), span: r.span }
    }

    fn opt_range(&mut self, hir: &mut Hir, r: &Option<Range>) -> Option<Range> {
        r.as_ref().map(|r| self.range(hir, r))
    }

    /// Where entries.
    pub fn wheres(&mut self, hir: &mut Hir, ws: &[Where]) -> Vec<Where> {
        let mut out = Vec::new();
        for w in ws {
            match w {
                Where::Bind { def, .. } if self.subst.contains_key(def) => {}
                Where::Bind { def, value } => {
                    let value = self.expr(hir, *value);
                    let def = self.bind(hir, *def);
                    out.push(Where::Bind { def, value });
                }
                Where::Guard(g) => out.push(Where::Guard(self.expr(hir, *g))),
            }
        }
        out
    }

    pub fn indexed(&mut self, hir: &mut Hir, d: &IndexedDef, def: DefId) -> IndexedDef {
        let mut slots = Vec::new();
        for s in &d.slots {
            match (s, &mut self.instance) {
                (Slot::Var { def, range }, _) => {
                    let range = self.opt_range(hir, range);
                    slots.push(Slot::Var { def: self.bind(hir, *def), range });
                }
                // In an instance a rest index becomes its index variables.
                (Slot::Rest(rest, span), Some(i)) => {
                    let vars = i.expand_rest(hir, d, *rest, *span);
                    slots.extend(vars.into_iter().map(|v| Slot::Var { def: v, range: None }));
                }
                (other, _) => slots.push(other.clone()),
            }
        }
        if let Some(i) = &mut self.instance {
            i.ranks.insert(d.def, slots.len());
        }
        let wheres = self.wheres(hir, &d.wheres);
        let body = self.expr(hir, d.body);
        IndexedDef { def, slots, wheres, body, span: d.span }
    }

    pub fn block(&mut self, hir: &mut Hir, b: &Block) -> Block {
        let mut stmts = Vec::new();
        for s in &b.stmts {
            stmts.push(match s {
                Stmt::Let { def, ty, value, span } => {
                    if let Some(i) = &mut self.instance {
                        i.note_let(hir, *def, ty.as_ref(), *value);
                    }
                    let value = self.expr(hir, *value);
                    let ty = ty.as_ref().map(|t| self.ty(hir, t));
                    Stmt::Let { def: self.bind(hir, *def), ty, value, span: *span }
                }
                Stmt::Indexed(d) => {
                    let def = self.bind(hir, d.def);
                    let copy = self.indexed(hir, d, def);
                    if copy.slots.is_empty() && d.slots.iter().any(|s| matches!(s, Slot::Rest(..))) {
                        // `let r[..b] = ...` whose rest index expands to no
                        // axis defines a scalar (a reduction of a vector).
                        let value = if copy.wheres.is_empty() {
                            copy.body
                        } else {
                            let kind = ExprKind::Reduce {
                                op: RedOp::Sum,
                                vars: Vec::new(),
                                wheres: copy.wheres,
                                body: copy.body,
                            };
                            hir.alloc_expr(kind, copy.span)
                        };
                        Stmt::Let { def: copy.def, ty: None, value, span: copy.span }
                    } else {
                        Stmt::Indexed(copy)
                    }
                }
                Stmt::Recurrence(r) => {
                    let def = self.bind(hir, r.def);
                    let clauses = r.clauses.iter().map(|c| self.indexed(hir, c, def)).collect();
                    Stmt::Recurrence(crate::hir::Recurrence { def, clauses, span: r.span })
                }
                Stmt::Expr(e) => Stmt::Expr(self.expr(hir, *e)),
            });
        }
        let tail = b.tail.map(|t| self.expr(hir, t));
        Block { stmts, tail }
    }

    fn pat(&mut self, hir: &mut Hir, p: &Pat) -> Pat {
        // (Binders: `bind`, which in an instance is the same as `name`.)
        match p {
            Pat::Bind(d) => Pat::Bind(self.bind(hir, *d)),
            Pat::Tuple(items) => Pat::Tuple(items.iter().map(|p| self.pat(hir, p)).collect()),
            Pat::Or(alts) => Pat::Or(alts.iter().map(|p| self.pat(hir, p)).collect()),
            Pat::At(d, p) => {
                let d = self.bind(hir, *d);
                Pat::At(d, Box::new(self.pat(hir, p)))
            }
            other => other.clone(),
        }
    }

    /// The copy of a read of a name in `reads`, at the copied `args`.
    fn read_as(&mut self, hir: &mut Hir, how: ReadAs, mut args: Vec<ExprId>, span: crate::base::span::Span) -> ExprId {
        match how {
            ReadAs::Prefix { base, prefix } => {
                let mut all: Vec<ExprId> = prefix.iter().map(|p| self.expr(hir, *p)).collect();
                all.append(&mut args);
                let base = hir.alloc_expr(ExprKind::Def(base), span);
                hir.alloc_expr(ExprKind::Index { base, args: all }, span)
            }
            ReadAs::Point { slots, body } if slots.len() == args.len() => {
                let saved: Vec<_> = slots.iter().zip(&args).map(|(s, a)| (*s, self.subst.insert(*s, *a))).collect();
                let value = self.expr(hir, body);
                for (s, old) in saved {
                    match old {
                        Some(o) => self.subst.insert(s, o),
                        None => self.subst.remove(&s),
                    };
                }
                value
            }
            _ => {
                self.failed = true;
                hir.alloc_expr(ExprKind::Error, span)
            }
        }
    }

    pub fn expr(&mut self, hir: &mut Hir, e: ExprId) -> ExprId {
        if let Some(to) = self.replace.remove(&e) {
            let copy = self.expr(hir, to);
            self.replace.insert(e, to);
            return copy;
        }
        let span = hir.span(e);
        let kind = match hir.exprs[e].kind.clone() {
            ExprKind::Def(d) => {
                if let Some(&to) = self.subst.get(&d) {
                    return self.expr(hir, to);
                }
                self.failed |= self.reads.contains_key(&d);
                ExprKind::Def(self.name(hir, d))
            }
            ExprKind::Differential(d) => {
                if let Some(&to) = self.diffs.get(&d) {
                    return self.expr(hir, to);
                }
                ExprKind::Differential(self.name(hir, d))
            }
            ExprKind::Deriv { target, wrt } => {
                let target = self.name(hir, target);
                ExprKind::Deriv { target, wrt: self.name(hir, wrt) }
            }
            ExprKind::Rest(_) if self.instance.is_some() => {
                if let Some(i) = &mut self.instance {
                    i.errors.push(Diagnostic::error(span, "a rest index can only appear in a subscript"));
                }
                ExprKind::Error
            }
            k @ (ExprKind::Lit(_) | ExprKind::Error | ExprKind::Rest(_)) => k,
            ExprKind::Unary(op, a) => ExprKind::Unary(op, self.expr(hir, a)),
            ExprKind::Binary(op, a, b) => {
                let a = self.expr(hir, a);
                ExprKind::Binary(op, a, self.expr(hir, b))
            }
            ExprKind::Cast(a, k) => ExprKind::Cast(self.expr(hir, a), k),
            ExprKind::Field(a, i) => ExprKind::Field(self.expr(hir, a), i),
            ExprKind::TensorCast(a, t) => {
                let a = self.expr(hir, a);
                ExprKind::TensorCast(a, self.ty(hir, &t))
            }
            ExprKind::Call { callee, callee_span, args } => {
                let args = args.iter().map(|a| self.expr(hir, *a)).collect();
                ExprKind::Call { callee, callee_span, args }
            }
            ExprKind::Index { base, args } if self.instance.is_some() => {
                let base = self.expr(hir, base);
                let mut new_args = Vec::new();
                for a in &args {
                    match hir.exprs[*a].kind {
                        // A rest index becomes its index variables.
                        ExprKind::Rest(r) => {
                            let vars =
                                self.instance.as_ref().and_then(|i| i.rests.get(&r).cloned()).unwrap_or_default();
                            let at = hir.span(*a);
                            for v in vars {
                                new_args.push(hir.alloc_expr(ExprKind::Def(v), at));
                            }
                        }
                        _ => new_args.push(self.expr(hir, *a)),
                    }
                }
                // Rest indices that expand to nothing read a scalar.
                if new_args.is_empty() {
                    return base;
                }
                ExprKind::Index { base, args: new_args }
            }
            ExprKind::Index { base, args } => {
                let mut args: Vec<ExprId> = args.iter().map(|a| self.expr(hir, *a)).collect();
                if let ExprKind::Def(d) = hir.exprs[base].kind {
                    if let Some(how) = self.reads.get(&d).cloned() {
                        return self.read_as(hir, how, args, span);
                    }
                }
                let base = match (self.reindex, &hir.exprs[base].kind) {
                    (Some(r), ExprKind::Def(d)) if *d == r.from && r.axis < args.len() => {
                        let last = self.expr(hir, r.last);
                        args[r.axis] =
                            hir.alloc_expr(ExprKind::Binary(crate::base::ops::BinOp::Sub, last, args[r.axis]), span);
                        hir.alloc_expr(ExprKind::Def(r.to), span)
                    }
                    _ => self.expr(hir, base),
                };
                ExprKind::Index { base, args }
            }
            ExprKind::Array(xs) => ExprKind::Array(xs.iter().map(|a| self.expr(hir, *a)).collect()),
            ExprKind::Jagged(xs) => ExprKind::Jagged(xs.iter().map(|a| self.expr(hir, *a)).collect()),
            ExprKind::Tuple(xs) => ExprKind::Tuple(xs.iter().map(|a| self.expr(hir, *a)).collect()),
            ExprKind::Builtin(b, xs) => ExprKind::Builtin(b, xs.iter().map(|a| self.expr(hir, *a)).collect()),
            ExprKind::Reduce { op, vars, wheres, body } if self.instance.is_some() => {
                let mut new_vars = Vec::new();
                for v in &vars {
                    if hir.defs[v.def].kind == crate::hir::DefKind::Rest {
                        // `sum[..r](x[..r])`: one variable per axis `..r` spans.
                        let at = hir.defs[v.def].span;
                        if let Some(i) = &mut self.instance {
                            let vs = i.expand_rest_in(hir, super::instantiate::roots_of(body, &wheres), v.def, at);
                            new_vars.extend(vs.into_iter().map(|d| RedVar { def: d, range: None }));
                        }
                    } else {
                        let range = self.opt_range(hir, &v.range);
                        new_vars.push(RedVar { def: self.bind(hir, v.def), range });
                    }
                }
                let plain = matches!(op, RedOp::Sum | RedOp::Prod | RedOp::Max | RedOp::Min | RedOp::All | RedOp::Any);
                if new_vars.is_empty() && wheres.is_empty() && plain {
                    // Rest indices that span no axis: a reduction over one
                    // point is that point.
                    return self.expr(hir, body);
                }
                let wheres = self.wheres(hir, &wheres);
                ExprKind::Reduce { op, vars: new_vars, wheres, body: self.expr(hir, body) }
            }
            ExprKind::Reduce { op, vars, wheres, body } => {
                // The reduction's variables shadow any substitution of
                // the same names outside it.
                let shadowed: Vec<_> =
                    vars.iter().map(|v| (v.def, self.subst.remove(&v.def), self.map.get(&v.def).copied())).collect();
                let vars = vars
                    .iter()
                    .map(|v| {
                        let range = self.opt_range(hir, &v.range);
                        RedVar { def: self.bind(hir, v.def), range }
                    })
                    .collect();
                let wheres = self.wheres(hir, &wheres);
                let body = self.expr(hir, body);
                for (d, subst, map) in shadowed {
                    if let Some(s) = subst {
                        self.subst.insert(d, s);
                    }
                    match map {
                        Some(m) => self.map.insert(d, m),
                        None => self.map.remove(&d),
                    };
                }
                ExprKind::Reduce { op, vars, wheres, body }
            }
            ExprKind::If { cond, then, els } => {
                // In an instance, a test of ranks, which the instance fixes,
                // keeps only the branch it selects: the other may not type
                // at these ranks (`conv` of a 1-D input calls the 1-D kernel).
                match (self.instance.as_ref().and_then(|i| i.static_bool(hir, cond)), els) {
                    (Some(true), _) => return self.expr(hir, then),
                    (Some(false), Some(els)) => return self.expr(hir, els),
                    _ => {}
                }
                let cond = self.expr(hir, cond);
                let then = self.expr(hir, then);
                ExprKind::If { cond, then, els: els.map(|x| self.expr(hir, x)) }
            }
            ExprKind::Block(b) => ExprKind::Block(self.block(hir, &b)),
            ExprKind::Match { scrutinee, arms } => {
                let scrutinee = self.expr(hir, scrutinee);
                let arms = arms
                    .iter()
                    .map(|a| {
                        let pat = self.pat(hir, &a.pat);
                        let guard = a.guard.map(|g| self.expr(hir, g));
                        Arm { pat, guard, body: self.expr(hir, a.body), span: a.span }
                    })
                    .collect();
                ExprKind::Match { scrutinee, arms }
            }
            ExprKind::Interp(parts) => ExprKind::Interp(
                parts
                    .iter()
                    .map(|p| match p {
                        InterpPart::Value(x, prec) => InterpPart::Value(self.expr(hir, *x), *prec),
                        InterpPart::Text(t) => InterpPart::Text(t.clone()),
                    })
                    .collect(),
            ),
            ExprKind::Comprehension { body, clauses, rows } => {
                let clauses = clauses
                    .iter()
                    .map(|c| match c {
                        CompClause::Range { def, range } => {
                            let range = self.range(hir, range);
                            CompClause::Range { def: self.bind(hir, *def), range }
                        }
                        CompClause::Each { def, over } => {
                            let over = self.expr(hir, *over);
                            CompClause::Each { def: self.bind(hir, *def), over }
                        }
                        CompClause::Filter(f) => CompClause::Filter(self.expr(hir, *f)),
                    })
                    .collect();
                ExprKind::Comprehension { body: self.expr(hir, body), clauses, rows }
            }
        };
        hir.alloc_expr(kind, span)
    }
}
