//! Forward mode for a tensor target: tangents pushed along the tape.
//!
//! Every active binding `v` gets a tangent `t_v` with `v`'s axes followed
//! by the source's axes `Q`: `t_v[I, Q] = d v[I] / d x[Q]`. A scalar source
//! has no `Q`, and the sweep costs about one primal pass; a tensor source
//! gives the dense Jacobian (`shape(y) ++ shape(x)`) in one pass of
//! `|x|`-wide tangents. A read of `x` itself is the one-hot
//! `if idx == Q { 1 } else { 0 }`, never a materialized identity. A
//! recurrence's tangent is a recurrence with the same clauses. A request
//! at a fixed source point (a Jacobian column) has no `Q`: its one-hot
//! compares with the point.

use std::collections::HashMap;

use super::build::Build;
use super::reverse::{pointwise, Point};
use super::rules::{self, Partial};
use super::Cx;
use crate::analysis::Ty;
use crate::base::ops::{BinOp, RedOp, UnOp};
use crate::base::scalar::ScalarKind;
use crate::diag::Diagnostic;
use crate::hir::{Callee, DefId, DefKind, ExprId, ExprKind, IndexedDef, Recurrence, RedVar, Slot, Stmt, Where};
use crate::transform::copy::Copier;

pub(super) fn run(
    hir: &mut crate::hir::Hir,
    cx: &Cx,
    ty_x: &Ty,
    point: Option<&[ExprId]>,
) -> Result<(Vec<Stmt>, DefId), Diagnostic> {
    let span = cx.span;
    let q_rank = match (ty_x, point) {
        (_, Some(_)) => 0,
        (Ty::Tensor(_, dims), None) => dims.len(),
        _ => 0,
    };
    let b = Build { hir, span };
    let qs: Vec<DefId> = (0..q_rank).map(|a| b.hir.alloc_def(format!("q{a}"), DefKind::Index, span)).collect();
    let point = point.map(<[ExprId]>::to_vec);
    let mut f = Fwd { b, cx, qs, point, tangents: HashMap::new(), out: Vec::new(), picked: HashMap::new() };
    if cx.y == cx.x {
        let def = f.identity()?;
        return Ok((f.out, def));
    }
    for t in cx.tape {
        let Some(v) = super::defined(&t.stmt) else { continue };
        if v == cx.x || !cx.act.active.contains(&v) {
            continue;
        }
        let tv = f.b.hir.alloc_def(format!("t_{}", super::base_name(f.b.hir, v)), DefKind::Local, span);
        f.tangents.insert(v, tv);
        let stmt = match &t.stmt {
            Stmt::Let { value, .. } => {
                let value = *value;
                match cx.def_ty(v) {
                    Ty::Tensor(..) if f.qs.is_empty() && f.rule_call(value).is_some() => {
                        let tangent = f.rule_call(value).unwrap_or(value);
                        Some(Stmt::Let { def: tv, ty: None, value: tangent, span })
                    }
                    Ty::Tensor(_, dims) => {
                        let mut point = Point::new(f.b.hir, vec![value], &[]);
                        let vars: Vec<DefId> =
                            (0..dims.len()).map(|a| f.b.hir.alloc_def(format!("i{a}"), DefKind::Index, span)).collect();
                        let body = pointwise(&mut f.b, cx, &mut point, value, &vars)?;
                        let slots = f.b.slots_over(v, &vars);
                        f.clause(v, tv, &slots, &[], body, point)?.map(Stmt::Indexed)
                    }
                    _ => {
                        let point = Point::new(f.b.hir, vec![value], &[]);
                        f.clause(v, tv, &[], &[], value, point)?.map(Stmt::Indexed)
                    }
                }
            }
            Stmt::Indexed(d) => {
                let point = Point::new(f.b.hir, roots(d), &d.wheres);
                f.clause(v, tv, &d.slots, &d.wheres, d.body, point)?.map(Stmt::Indexed)
            }
            Stmt::Recurrence(r) => {
                let mut clauses = Vec::new();
                for d in &r.clauses {
                    let point = Point::new(f.b.hir, roots(d), &d.wheres);
                    if let Some(c) = f.clause(v, tv, &d.slots, &d.wheres, d.body, point)? {
                        clauses.push(c);
                    }
                }
                Some(Stmt::Recurrence(Recurrence { def: tv, clauses, span }))
            }
            Stmt::Expr(_) => None,
        };
        if let Some(s) = stmt {
            f.out.push(unwrap_scalar(s));
        }
    }
    let result = *f.tangents.get(&cx.y).ok_or_else(|| Diagnostic::bug(span, "the target has no tangent"))?;
    Ok((f.out, result))
}

fn roots(d: &IndexedDef) -> Vec<ExprId> {
    let mut roots = vec![d.body];
    for w in &d.wheres {
        match w {
            Where::Bind { value, .. } => roots.push(*value),
            Where::Guard(g) => roots.push(*g),
        }
    }
    roots
}

/// An indexed definition with no slots is a scalar `let`.
fn unwrap_scalar(s: Stmt) -> Stmt {
    match s {
        Stmt::Indexed(d) if d.slots.is_empty() && d.wheres.is_empty() => {
            Stmt::Let { def: d.def, ty: None, value: d.body, span: d.span }
        }
        Stmt::Indexed(d) if d.slots.is_empty() => {
            // Guards of a scalar: zero where they fail.
            Stmt::Indexed(d)
        }
        s => s,
    }
}

struct Fwd<'a, 'h> {
    b: Build<'h>,
    cx: &'a Cx<'a>,
    /// The source's axes, as template variables.
    qs: Vec<DefId>,
    /// The source's point, for a request at one point (then `qs` is empty).
    point: Option<Vec<ExprId>>,
    tangents: HashMap<DefId, DefId>,
    out: Vec<Stmt>,
    /// Reduction variables a one-hot fixed (`sum[k](a[k] * (k == s))` is
    /// `a[s]`): substituted when the clause is copied.
    picked: HashMap<DefId, ExprId>,
}

impl Fwd<'_, '_> {
    fn q_reads(&mut self) -> Vec<ExprId> {
        self.qs.clone().into_iter().map(|q| self.b.def(q)).collect()
    }

    /// What a read of the source is compared with: its axes, or its point.
    fn source_point(&mut self) -> Vec<ExprId> {
        match self.point.clone() {
            Some(p) => p,
            None => self.q_reads(),
        }
    }

    /// Slots over the source's axes, bound to fresh variables in `c`.
    fn q_slots(&mut self, c: &mut Copier) -> Vec<Slot> {
        let x = self.cx.x;
        self.qs
            .clone()
            .into_iter()
            .enumerate()
            .map(|(a, q)| {
                let zero = self.b.int(0);
                let hi = self.b.extent(x, a);
                let def = c.bind(self.b.hir, q);
                Slot::Var { def, range: Some(self.b.range(zero, hi)) }
            })
            .collect()
    }

    /// A whole-tensor call of a function with a rule, `f(a, b)` with
    /// tensor arguments that are names: the rule applied to the tangents
    /// of the names (a scalar source only).
    fn rule_call(&mut self, value: ExprId) -> Option<ExprId> {
        let ExprKind::Call { callee: Callee::Fn(g), args, .. } = self.b.hir.exprs[value].kind.clone() else {
            return None;
        };
        let g = self.cx.tables.instance_calls.get(&value).copied().unwrap_or(g);
        let rule = super::rule_of(self.b.hir, g)?.clone();
        // A point rule goes point by point (`pointwise`) instead.
        if super::rule_is_elementwise(self.b.hir, &rule) {
            return None;
        }
        if !args.iter().any(|a| matches!(self.cx.tables.expr_ty.get(a.index()), Some(Ty::Tensor(..)))) {
            return None;
        }
        let mut diffs = Vec::new();
        for &a in &args {
            let k = self.cx.tables.expr_ty.get(a.index()).and_then(Ty::elem).unwrap_or(ScalarKind::F32);
            diffs.push(match self.b.hir.exprs[a].kind {
                ExprKind::Def(u) if self.tangents.contains_key(&u) => Ok(self.b.def(self.tangents[&u])),
                ExprKind::Def(u) if u == self.cx.x => Ok(self.b.float(1.0, k)),
                ExprKind::Def(_) | ExprKind::Lit(_) => Err(k),
                _ => return None,
            });
        }
        Some(super::apply_rule(&mut self.b, &rule, &args, &diffs))
    }

    /// `@x / @x`: the identity, `J[P, Q] = (P == Q)`.
    fn identity(&mut self) -> Result<DefId, Diagnostic> {
        let span = self.b.span;
        let x = self.cx.x;
        let k = self.cx.def_ty(x).elem().unwrap_or(ScalarKind::F32);
        let def = self.b.hir.alloc_def(format!("d_{}", super::base_name(self.b.hir, x)), DefKind::Local, span);
        let mut c = Copier::new();
        let ps: Vec<DefId> =
            (0..self.qs.len()).map(|a| self.b.hir.alloc_def(format!("p{a}"), DefKind::Index, span)).collect();
        let mut slots = self.b.slots_over(x, &ps);
        let p_reads: Vec<ExprId> = ps.iter().map(|&p| self.b.def(p)).collect();
        let onehot = self.onehot(&p_reads, k);
        slots.extend(self.q_slots(&mut c));
        let body = c.expr(self.b.hir, onehot);
        self.out.push(unwrap_scalar(Stmt::Indexed(IndexedDef { def, slots, wheres: Vec::new(), body, span })));
        Ok(def)
    }

    /// `if idx == Q { 1 } else { 0 }`.
    fn onehot(&mut self, idx: &[ExprId], k: ScalarKind) -> ExprId {
        let qs = self.source_point();
        let eqs: Vec<ExprId> = idx.iter().zip(qs).map(|(&i, q)| self.b.bin(BinOp::Eq, i, q)).collect();
        let one = self.b.float(1.0, k);
        match self.b.all(&eqs) {
            Some(c) => self.b.select(c, one, k),
            None => one,
        }
    }

    /// The tangent clause of `v[slots] = body where wheres`: None when the
    /// tangent is zero there.
    fn clause(
        &mut self,
        v: DefId,
        tv: DefId,
        slots: &[Slot],
        wheres: &[Where],
        body: ExprId,
        mut point: Point,
    ) -> Result<Option<IndexedDef>, Diagnostic> {
        let span = self.b.span;
        let tangent = self.fwd(&mut point, body)?;
        let k = point.kind(self.cx, body).unwrap_or(ScalarKind::F32);
        let tangent = match tangent {
            Some(t) => t,
            None => self.b.float(0.0, k),
        };
        let mut c = Copier::with(point.locals.clone());
        c.subst.extend(self.picked.iter().map(|(d, e)| (*d, *e)));
        let mut new_slots = Vec::new();
        for (axis, s) in slots.iter().enumerate() {
            new_slots.push(match s {
                Slot::Var { def, range } => {
                    // Reads of the primal may vanish from the tangent (a
                    // one-hot), so every range is explicit.
                    let range = match range {
                        Some(r) => c.range(self.b.hir, r),
                        None => {
                            let zero = self.b.int(0);
                            let hi = self.b.extent(v, axis);
                            self.b.range(zero, hi)
                        }
                    };
                    Slot::Var { def: c.bind(self.b.hir, *def), range: Some(range) }
                }
                other => other.clone(),
            });
        }
        new_slots.extend(self.q_slots(&mut c));
        let wheres = c.wheres(self.b.hir, wheres);
        let body = c.expr(self.b.hir, tangent);
        Ok(Some(IndexedDef { def: tv, slots: new_slots, wheres, body, span }))
    }

    /// `sum[vars](body where wheres)`, with one-hot sums folded: a factor
    /// `if v == e { 1 } else { 0 }` (a tangent of a read of the source)
    /// fixes the reduction variable `v` to `e` instead of summing over it,
    /// under `e`'s range guard.
    fn sum_of(&mut self, p: &Point, vars: Vec<RedVar>, wheres: Vec<Where>, body: ExprId, k: ScalarKind) -> ExprId {
        let Some((rest, eqs)) = self.onehot_factor(body) else {
            return self.b.e(ExprKind::Reduce { op: RedOp::Sum, vars, wheres, body });
        };
        let mut guards = Vec::new();
        let mut conds = Vec::new();
        let mut left = vars.clone();
        for (a, b) in eqs {
            let pick = [(a, b), (b, a)].into_iter().find_map(|(v, e)| match self.b.hir.exprs[v].kind {
                ExprKind::Def(d)
                    if left.iter().any(|r| r.def == d)
                        && !self.mentions_any(e, &vars)
                        && !self.picked.contains_key(&d) =>
                {
                    Some((d, e))
                }
                _ => None,
            });
            match pick {
                Some((d, e)) => {
                    let var = left.iter().find(|r| r.def == d).cloned().expect("found above");
                    left.retain(|r| r.def != d);
                    self.picked.insert(d, e);
                    if let Some((lo, hi)) = p.bounds(&mut self.b, self.cx, d, &var.range) {
                        let here = self.b.def(d);
                        let ge = self.b.bin(BinOp::Le, lo, here);
                        let here = self.b.def(d);
                        let lt = self.b.bin(BinOp::Lt, here, hi);
                        guards.push(self.b.bin(BinOp::And, ge, lt));
                    }
                }
                None => conds.push(self.b.bin(BinOp::Eq, a, b)),
            }
        }
        guards.extend(conds);
        // Guards mentioning only picked variables hold per point.
        let mut wheres = wheres;
        if left.is_empty() {
            // Where entries of the sum become conditions on the point.
            for w in wheres.drain(..) {
                if let Where::Guard(g) = w {
                    guards.push(g);
                }
            }
            return match self.b.all(&guards) {
                Some(c) => self.b.select(c, rest, k),
                None => rest,
            };
        }
        wheres.extend(guards.into_iter().map(Where::Guard));
        self.b.e(ExprKind::Reduce { op: RedOp::Sum, vars: left, wheres, body: rest })
    }

    /// `rest * (if a1 == b1 && ... { 1 } else { 0 })` (either order, or the
    /// one-hot alone): `rest` and the equations.
    fn onehot_factor(&mut self, e: ExprId) -> Option<(ExprId, Vec<(ExprId, ExprId)>)> {
        let eqs_of = |hir: &crate::hir::Hir, s: ExprId| -> Option<Vec<(ExprId, ExprId)>> {
            let ExprKind::If { cond, then, els: Some(els) } = hir.exprs[s].kind else { return None };
            let lit = |x: ExprId, v: f64| matches!(&hir.exprs[x].kind, ExprKind::Lit(crate::base::ops::Lit::Float(t, _)) if t.parse::<f64>().ok() == Some(v));
            if !lit(then, 1.0) || !lit(els, 0.0) {
                return None;
            }
            let mut out = Vec::new();
            let mut stack = vec![cond];
            while let Some(c) = stack.pop() {
                match hir.exprs[c].kind {
                    ExprKind::Binary(BinOp::And, a, b) => stack.extend([a, b]),
                    ExprKind::Binary(BinOp::Eq, a, b) => out.push((a, b)),
                    _ => return None,
                }
            }
            Some(out)
        };
        if let Some(eqs) = eqs_of(self.b.hir, e) {
            let one = match self.b.hir.exprs[e].kind {
                ExprKind::If { then, .. } => then,
                _ => return None,
            };
            return Some((one, eqs));
        }
        let ExprKind::Binary(BinOp::Mul, a, b) = self.b.hir.exprs[e].kind else { return None };
        if let Some(eqs) = eqs_of(self.b.hir, b) {
            return Some((a, eqs));
        }
        eqs_of(self.b.hir, a).map(|eqs| (b, eqs))
    }

    fn mentions_any(&self, e: ExprId, vars: &[RedVar]) -> bool {
        self.b
            .hir
            .reachable([e])
            .into_iter()
            .any(|x| matches!(self.b.hir.exprs[x].kind, ExprKind::Def(d) if vars.iter().any(|v| v.def == d)))
    }

    fn read_tangent(&mut self, u: DefId, mut args: Vec<ExprId>) -> ExprId {
        let tu = self.tangents[&u];
        args.extend(self.q_reads());
        self.b.index(tu, args)
    }

    fn fwd(&mut self, p: &mut Point, e: ExprId) -> Result<Option<ExprId>, Diagnostic> {
        let Some(k) = p.kind(self.cx, e) else { return Ok(None) };
        if !p.depends(self.b.hir, &self.cx.act.active, e) {
            return Ok(None);
        }
        let span = self.b.span;
        let x = self.cx.x;
        Ok(match self.b.hir.exprs[e].kind.clone() {
            ExprKind::Def(d) => {
                if let Some(&v) = p.locals.get(&d) {
                    return self.fwd(p, v);
                }
                if d == x {
                    Some(self.onehot(&[], k))
                } else if self.tangents.contains_key(&d) {
                    Some(self.read_tangent(d, Vec::new()))
                } else {
                    None
                }
            }
            ExprKind::Index { base, args } => {
                let u = p.tensor_read(self.b.hir, base, span)?;
                if u == x {
                    Some(self.onehot(&args, k))
                } else if self.tangents.contains_key(&u) {
                    Some(self.read_tangent(u, args))
                } else {
                    None
                }
            }
            ExprKind::Unary(UnOp::Neg, a) => self.fwd(p, a)?.map(|t| self.b.neg(t)),
            ExprKind::Binary(op, a, b) => match op {
                BinOp::Add => {
                    let (ta, tb) = (self.fwd(p, a)?, self.fwd(p, b)?);
                    self.b.add_opt(ta, tb)
                }
                BinOp::Sub => {
                    let (ta, tb) = (self.fwd(p, a)?, self.fwd(p, b)?);
                    match (ta, tb) {
                        (Some(ta), Some(tb)) => Some(self.b.sub(ta, tb)),
                        (ta, None) => ta,
                        (None, Some(tb)) => Some(self.b.neg(tb)),
                    }
                }
                BinOp::Mul => {
                    let ta = self.fwd(p, a)?;
                    let l = self.b.mul_opt(ta, b);
                    let tb = self.fwd(p, b)?;
                    let r = tb.map(|tb| self.b.mul(a, tb));
                    self.b.add_opt(l, r)
                }
                BinOp::Div => {
                    let ta = self.fwd(p, a)?;
                    let l = ta.map(|ta| self.b.div(ta, b));
                    let tb = self.fwd(p, b)?;
                    let r = match tb {
                        Some(tb) => {
                            let q = self.b.div(e, b);
                            let q = self.b.neg(q);
                            Some(self.b.mul(q, tb))
                        }
                        None => None,
                    };
                    self.b.add_opt(l, r)
                }
                BinOp::Rem => self.fwd(p, a)?,
                BinOp::Pow => {
                    let f = p.intrinsics.get(&e).or_else(|| self.cx.tables.intrinsic.get(&e)).copied();
                    let f = f.ok_or_else(|| Diagnostic::bug(span, "a power with no chosen intrinsic"))?;
                    self.fwd_call(p, f, &[a, b], e, k)?
                }
                _ => None,
            },
            ExprKind::Cast(a, _) => {
                self.fwd(p, a)?.map(|t| if p.kind(self.cx, a) == Some(k) { t } else { self.b.cast(t, k) })
            }
            ExprKind::Call { callee: Callee::Intrinsic(f), args, .. } => self.fwd_call(p, f, &args, e, k)?,
            ExprKind::Call { callee: Callee::Fn(g), args, .. } => {
                let g = self.cx.tables.instance_calls.get(&e).copied().unwrap_or(g);
                let Some(rule) = super::rule_of(self.b.hir, g).cloned() else {
                    let name = self.b.hir.name(self.b.hir.fns[g].def).to_string();
                    return Err(Diagnostic::bug(
                        span,
                        format!("a call of `{name}` was not inlined before differentiation"),
                    ));
                };
                let mut diffs = Vec::new();
                let mut any = false;
                for &a in &args {
                    let ka = p.kind(self.cx, a).unwrap_or(k);
                    match self.fwd(p, a)? {
                        Some(t) => {
                            any = true;
                            diffs.push(Ok(t));
                        }
                        None => diffs.push(Err(ka)),
                    }
                }
                if !any {
                    return Ok(None);
                }
                Some(super::apply_rule(&mut self.b, &rule, &args, &diffs))
            }
            ExprKind::Reduce { op, vars, wheres, body } => {
                let (vars, wheres, body) = super::reverse::nest_extremum(&mut self.b, p, op, vars, wheres, body, k);
                let Some(tb) = self.fwd(p, body)? else { return Ok(None) };
                match op {
                    RedOp::Sum => Some(self.sum_of(p, vars, wheres, tb, k)),
                    RedOp::Max | RedOp::Min => {
                        let guard = super::reverse::selected(&mut self.b, op, &vars, &wheres, body);
                        let mut wheres = wheres;
                        wheres.push(Where::Guard(guard));
                        Some(self.b.e(ExprKind::Reduce { op: RedOp::Sum, vars, wheres, body: tb }))
                    }
                    RedOp::Prod => {
                        let others = super::reverse::other_factors(&mut self.b, &vars, &wheres, body);
                        let term = self.b.mul(tb, others);
                        Some(self.b.e(ExprKind::Reduce { op: RedOp::Sum, vars, wheres, body: term }))
                    }
                    _ => None,
                }
            }
            ExprKind::If { cond, then, els } => {
                let tt = self.fwd(p, then)?;
                let te = match els {
                    Some(x) => self.fwd(p, x)?,
                    None => None,
                };
                if tt.is_none() && te.is_none() {
                    return Ok(None);
                }
                let tt = tt.unwrap_or_else(|| self.b.float(0.0, k));
                let te = te.unwrap_or_else(|| self.b.float(0.0, k));
                Some(self.b.e(ExprKind::If { cond, then: tt, els: Some(te) }))
            }
            ExprKind::Block(b) => match b.tail {
                Some(t) => self.fwd(p, t)?,
                None => None,
            },
            ExprKind::Lit(_) => None,
            ExprKind::Match { scrutinee, arms } => {
                // The tangent of the taken arm, chosen by the same match.
                let mut new_arms = Vec::new();
                let mut any = false;
                for a in &arms {
                    let t = self.fwd(p, a.body)?;
                    any |= t.is_some();
                    let body = t.unwrap_or_else(|| self.b.float(0.0, k));
                    new_arms.push(crate::hir::Arm { pat: a.pat.clone(), guard: a.guard, body, span: a.span });
                }
                if !any {
                    return Ok(None);
                }
                Some(self.b.e(ExprKind::Match { scrutinee, arms: new_arms }))
            }
            _ => return Err(Diagnostic::error(span, "cannot differentiate through this kind of expression")),
        })
    }

    fn fwd_call(
        &mut self,
        p: &mut Point,
        f: crate::base::intrinsic::Intrinsic,
        args: &[ExprId],
        e: ExprId,
        k: ScalarKind,
    ) -> Result<Option<ExprId>, Diagnostic> {
        let partials = rules::intrinsic(&mut self.b, f, args, e, k);
        let mut sum = None;
        for (&a, part) in args.iter().zip(partials) {
            let Some(part) = part else { continue };
            let Some(ta) = self.fwd(p, a)? else { continue };
            let term = match part {
                Partial::Scale(s) => self.b.mul(s, ta),
                Partial::Select(c) => self.b.select(c, ta, k),
            };
            sum = self.b.add_opt(sum, Some(term));
        }
        Ok(sum)
    }
}
