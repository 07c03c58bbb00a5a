//! Statements and units: `let`s, indexed definitions and expression
//! statements, each typed as its own unit, with `where` clauses and the
//! explicit ranges of index variables.

use super::cx::{Cx, Unit};
use super::infer::same_kind_and_rank;
use super::{IndexRange, Ty};
use crate::base::dim::Dim;
use crate::base::scalar::ScalarKind;
use crate::diag::Diagnostic;
use crate::hir::{DefKind, ExprId, ExprKind, Slot, Stmt, Where};

impl<'a> Cx<'a> {
    pub(super) fn infer_block_stmts(&mut self, stmts: &[Stmt]) {
        for s in stmts {
            match s {
                Stmt::Let { def, ty, value, .. } => {
                    let ann = ty.as_ref().map(|a| self.ann_to_ty(a));
                    let decided = self.inst.literal_types.get(def).map(|&(k, _)| k);
                    let expect = ann.as_ref().and_then(|t| t.elem()).or(decided);
                    if ty.is_none() && !self.in_instance && self.literal_value(*value) {
                        self.flex_lets.insert(*def);
                    } else if let Some(o) = self.origin(*value) {
                        self.literal_origin.insert(*def, o);
                    }
                    let t = self.infer_unit(*value, expect);
                    // `let y: [T; *] = x` makes `y` dynamic-rank.
                    let t = match (&ann, t) {
                        (Some(Ty::Dyn(k1)), Ty::Tensor(k2, _)) if *k1 == k2 => Ty::Dyn(k2),
                        (_, t) => t,
                    };
                    let mut t = t;
                    if let Some(a) = ann {
                        if !t.is_error() && !a.is_error() && !same_kind_and_rank(&a, &t) {
                            self.retype_to(*value, &t, &a, self.hir.span(*value));
                            let d = Diagnostic::error(
                                self.hir.span(*value),
                                format!(
                                    "mismatched types: expected `{}`, found `{}`",
                                    self.t.show_ty(&a),
                                    self.t.show_ty(&t)
                                ),
                            );
                            self.err(d);
                            // The binding has the declared type: later uses
                            // are checked against what was meant.
                            t = a;
                        }
                    }
                    if t == Ty::I64 {
                        self.let_values.insert(*def, *value);
                    }
                    self.env.insert(*def, t.clone());
                    self.t.def_ty.insert(*def, t);
                    self.let_locals.insert(*def);
                }
                Stmt::Indexed(def) => {
                    if let Some(o) = self.origin(def.body) {
                        self.literal_origin.insert(def.def, o);
                    }
                    let t = self.infer_indexed(def, None);
                    self.env.insert(def.def, t.clone());
                    self.t.def_ty.insert(def.def, t);
                }
                Stmt::Recurrence(rec) => {
                    let t = self.infer_recurrence(rec);
                    self.env.insert(rec.def, t.clone());
                    self.t.def_ty.insert(rec.def, t);
                }
                Stmt::Expr(e) => {
                    self.infer_unit(*e, None);
                }
            }
        }
    }

    /// Infers a statement-level expression as its own unit.
    pub(super) fn infer_unit(&mut self, e: ExprId, expect: Option<ScalarKind>) -> Ty {
        self.units.push(Unit { diags_at_start: self.diags.len(), ..Unit::default() });
        let t = self.infer(e, expect);
        self.finish_unit();
        t
    }

    pub(super) fn infer_indexed(&mut self, def: &crate::hir::IndexedDef, expect: Option<ScalarKind>) -> Ty {
        let mut unit = Unit { diags_at_start: self.diags.len(), ..Unit::default() };
        for slot in &def.slots {
            if let Slot::Var { def: v, range } = slot {
                unit.vars.push(*v);
                self.env.insert(*v, Ty::I64);
                self.t.def_ty.insert(*v, Ty::I64);
                if let Some(r) = range {
                    if let Some(ir) = self.explicit_range(r, false) {
                        unit.explicit.insert(*v, ir);
                    }
                }
            }
        }
        self.units.push(unit);
        let guarded = self.infer_wheres(&def.wheres);
        if guarded {
            self.cond_depth += 1;
        }
        let body = self.infer(def.body, expect);
        if guarded {
            self.cond_depth -= 1;
        }
        self.pop_narrowings(&def.wheres);
        self.finish_unit();
        let (elem, elem_dims) = match &body {
            Ty::Scalar(k) => (*k, Vec::new()),
            Ty::Error => return Ty::Error,
            // A tensor element adds its axes after the written ones.
            Ty::Tensor(k, dims) => {
                self.t.element_requests.insert(def.body, dims.len());
                (*k, dims.clone())
            }
            other => {
                let d = Diagnostic::error(
                    self.hir.span(def.body),
                    format!(
                        "the value of an indexed definition must be a scalar or a tensor, found `{}`",
                        self.t.show_ty(other)
                    ),
                );
                self.err(d);
                return Ty::Error;
            }
        };
        let mut dims = Vec::new();
        for slot in &def.slots {
            match slot {
                Slot::Var { def: v, .. } => match self.t.ranges.get(v) {
                    Some(r) => dims.push(r.end.clone()),
                    None => return Ty::Error,
                },
                Slot::Lit(n, _) => dims.push(Dim::constant(n + 1)),
                // Generic templates, which hold rest indices, are never analyzed.
                Slot::Rest(..) => return Ty::Error,
            }
        }
        dims.extend(elem_dims);
        Ty::Tensor(elem, dims)
    }

    /// Types `where` entries in order, pushing narrowings for index guards.
    /// Returns whether any guard is present.
    pub(super) fn infer_wheres(&mut self, wheres: &[Where]) -> bool {
        let mut guarded = false;
        for w in wheres {
            match w {
                Where::Bind { def, value } => {
                    self.where_values.insert(*def, *value);
                    let t = self.infer(*value, None);
                    self.env.insert(*def, t.clone());
                    self.t.def_ty.insert(*def, t);
                }
                Where::Guard(g) => {
                    guarded = true;
                    let t = self.infer(*g, Some(ScalarKind::Bool));
                    self.expect_bool(*g, &t, "a `where` guard");
                    let ns = self.narrowings_of(*g);
                    self.narrow.extend(ns);
                }
            }
        }
        guarded
    }

    pub(super) fn pop_narrowings(&mut self, wheres: &[Where]) {
        for w in wheres {
            if let Where::Guard(g) = w {
                let n = self.narrowings_of(*g).len();
                let keep = self.narrow.len().saturating_sub(n);
                self.narrow.truncate(keep);
            }
        }
    }

    pub(super) fn expect_bool(&mut self, e: ExprId, t: &Ty, what: &str) {
        match t {
            Ty::Scalar(ScalarKind::Bool) | Ty::Error => {}
            Ty::Tensor(..) => {
                let d = Diagnostic::error(
                    self.hir.span(e),
                    format!("{what} must be a scalar `bool`, found `{}`", self.t.show_ty(t)),
                )
                .note("conditions are evaluated once per point; a tensor has no single truth value")
                .help("index the tensor, or reduce it with `all[..](..)` / `any[..](..)`");
                self.err(d);
            }
            other => {
                let d = Diagnostic::error(
                    self.hir.span(e),
                    format!("{what} must be `bool`, found `{}`", self.t.show_ty(other)),
                );
                self.err(d);
            }
        }
    }

    /// Whether `e` can be evaluated before the statement it is in: it
    /// reads only parameters, dimensions, constants and `let` locals (no
    /// index variable, `where` binding or pattern binding).
    fn before_statement(&self, e: ExprId) -> bool {
        self.hir.reachable([e]).into_iter().all(|x| match self.hir.exprs[x].kind {
            ExprKind::Def(d) => match self.hir.defs[d].kind {
                DefKind::Param | DefKind::Dim | DefKind::Const => true,
                DefKind::Local => self.let_locals.contains(&d),
                _ => false,
            },
            ExprKind::Block(_) | ExprKind::Comprehension { .. } | ExprKind::Reduce { .. } | ExprKind::Match { .. } => {
                false
            }
            _ => true,
        })
    }

    /// The range `r` as dimensions. A bound that is not a dimension is
    /// evaluated at run time: before the statement when it reads no index
    /// (`Tables::runtime_bounds`), or, for a reduction (`per_point`), at
    /// each point where the reduction is evaluated (`Tables::point_bounds`).
    pub(super) fn explicit_range(&mut self, r: &crate::hir::Range, per_point: bool) -> Option<IndexRange> {
        let s_ty = self.infer(r.start, Some(ScalarKind::I64));
        let e_ty = self.infer(r.end, Some(ScalarKind::I64));
        let mut start = self.to_dim(r.start);
        let mut end = self.to_dim(r.end);
        for (e, t, d) in [(r.start, s_ty, &mut start), (r.end, e_ty, &mut end)] {
            if t.is_error() {
                return None;
            }
            // Any other integer value that does not depend on an index is
            // evaluated once, before the statement, as a hidden dimension.
            if d.is_none() && t.scalar().is_some_and(|k| k.is_int()) {
                let before = self.before_statement(e);
                if before || per_point {
                    let v = self.fresh_hidden();
                    self.t.dim_names.insert(v, "?".to_string());
                    let table = if before { &mut self.t.runtime_bounds } else { &mut self.t.point_bounds };
                    table.insert(e, v);
                    *d = Some(Dim::var(v));
                }
            }
            if d.is_none() {
                let d = Diagnostic::error(
                    self.hir.span(e),
                    "a range bound must be an integer that does not depend on an index variable",
                )
                .help(
                    "use dimension names, `i64` parameters, literals, or an integer computed before the loop; \
                     in a reduction (`sum[k in 0..len(j[i])]`) any integer is evaluated at each point",
                );
                self.err(d);
                return None;
            }
        }
        Some(IndexRange { start: start?, end: end? })
    }
}
