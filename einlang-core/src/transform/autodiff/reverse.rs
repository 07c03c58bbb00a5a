//! Reverse mode for a scalar target: one backward sweep over the tape.
//!
//! Each active binding `v` gets an adjoint `dv` of its own shape, defined
//! once every later statement has contributed to it. A statement
//! `v[I] = body where ...` contributes to each active tensor `u` it reads
//! as `u[e(I, K)]` (K: the reductions around the read): the adjoint
//! `du[P] = sum over (I, K) with e(I, K) = P of dv[I] * (d body / d read)`.
//! That sum is written in *gather* form: every index position that is a
//! plain variable is solved (`i := p`), an affine one is inverted
//! (`y + r = p` gives `y := p - r` under a range guard; `2 * i + d = p`
//! gives `i := (p - d) / 2` under a divisibility guard), and only what no
//! variable solves (a data-dependent `x[idx[n]]`) stays a guarded sum. The
//! result is a loop over `du`'s points, parallel like the primal, with no
//! scatter and no atomics.

use std::collections::{HashMap, HashSet};

use super::build::Build;
use super::rules::{self, Partial};
use super::Cx;
use crate::analysis::{IndexRange, Ty};
use crate::base::dim::Dim;
use crate::base::intrinsic::Intrinsic;
use crate::base::ops::{BinOp, Lit, RedOp, UnOp};
use crate::base::scalar::ScalarKind;
use crate::diag::Diagnostic;
use crate::hir::{
    Callee, DefId, DefKind, ExprId, ExprKind, Hir, IndexedDef, Range, Recurrence, RedVar, Slot, Stmt, Where,
};
use crate::transform::copy::{Copier, Reindex};

/// An index variable with its bounds (expressions of the primal program).
#[derive(Clone)]
pub(super) struct Var {
    pub def: DefId,
    pub lo: ExprId,
    pub hi: ExprId,
    /// For a statement's own slot: the binding and axis it ranges over
    /// exactly.
    pub extent_of: Option<(DefId, usize)>,
}

/// The index variables and conditions around a point of a statement.
#[derive(Clone, Default)]
pub(super) struct Ctx {
    pub vars: Vec<Var>,
    pub guards: Vec<ExprId>,
}

/// A contribution to an adjoint: `m` at the read `u[idx]`, summed over
/// `vars` where `guards` hold.
struct Term {
    u: DefId,
    idx: Vec<ExprId>,
    m: ExprId,
    ctx: Ctx,
}

struct Adjoint {
    def: DefId,
    /// One index variable per axis of the primal.
    pvars: Vec<DefId>,
    terms: Vec<ExprId>,
}

/// The shared machinery of one statement's local derivative: point-local
/// bindings, the types of nodes made on the fly, and the statement's reads
/// (for the bounds of reduction variables).
pub(super) struct Point {
    pub locals: HashMap<DefId, ExprId>,
    pub kinds: HashMap<ExprId, ScalarKind>,
    pub intrinsics: HashMap<ExprId, Intrinsic>,
    pub roots: Vec<ExprId>,
    /// The statement's body and a read of its value at the point: a rule
    /// that needs the body's value (`exp`, `tanh`, `sqrt`, `a / b`) reads
    /// the primal instead of computing it again.
    pub value_of: Option<(ExprId, ExprId)>,
    /// How many variables the statement's own slots put in the context.
    pub top: usize,
    depends: HashMap<ExprId, bool>,
}

impl Point {
    pub fn new(hir: &Hir, roots: Vec<ExprId>, wheres: &[Where]) -> Point {
        let mut locals = HashMap::new();
        for w in wheres {
            if let Where::Bind { def, value } = w {
                locals.insert(*def, *value);
            }
        }
        for e in hir.reachable(roots.iter().copied()) {
            match &hir.exprs[e].kind {
                ExprKind::Reduce { wheres, .. } => {
                    for w in wheres {
                        if let Where::Bind { def, value } = w {
                            locals.insert(*def, *value);
                        }
                    }
                }
                ExprKind::Block(b) => {
                    for s in &b.stmts {
                        if let Stmt::Let { def, value, .. } = s {
                            locals.insert(*def, *value);
                        }
                    }
                }
                _ => {}
            }
        }
        Point {
            locals,
            kinds: HashMap::new(),
            intrinsics: HashMap::new(),
            roots,
            value_of: None,
            top: 0,
            depends: HashMap::new(),
        }
    }

    /// A `match` arm's top-level bindings (`n`, `n @ p`) stand for the
    /// scrutinee in derivative code outside the `match`.
    pub fn bind_pattern(&mut self, pat: &crate::hir::Pat, scrutinee: ExprId) {
        if let crate::hir::Pat::Bind(d) | crate::hir::Pat::At(d, _) = pat {
            self.locals.insert(*d, scrutinee);
        }
    }

    /// The tensor that the base `base` of an indexed read names: a local
    /// of a block or `where` that names another tensor (`let a = x;`) is
    /// that tensor.
    pub fn tensor_read(&self, hir: &Hir, base: ExprId, span: crate::base::span::Span) -> Result<DefId, Diagnostic> {
        let computed = || {
            Diagnostic::error(span, "cannot differentiate through a read of a computed tensor")
                .help("bind the tensor with a `let` statement of its own first")
        };
        let ExprKind::Def(mut u) = hir.exprs[base].kind else { return Err(computed()) };
        while let Some(&value) = self.locals.get(&u) {
            let ExprKind::Def(w) = hir.exprs[value].kind else { return Err(computed()) };
            u = w;
        }
        Ok(u)
    }

    /// The value of `e`: a read of the primal when `e` is the whole body.
    pub fn value(&self, e: ExprId) -> ExprId {
        match self.value_of {
            Some((body, read)) if body == e => read,
            _ => e,
        }
    }

    /// The float kind of `e`, if it is a float.
    pub fn kind(&self, cx: &Cx, e: ExprId) -> Option<ScalarKind> {
        self.kinds.get(&e).copied().or_else(|| cx.float_kind(e))
    }

    /// Whether `e` reads an active binding (through point-local bindings).
    pub fn depends(&mut self, hir: &Hir, active: &HashSet<DefId>, e: ExprId) -> bool {
        if let Some(&d) = self.depends.get(&e) {
            return d;
        }
        self.depends.insert(e, false);
        let mut any = false;
        for x in hir.reachable([e]) {
            if let ExprKind::Def(d) = hir.exprs[x].kind {
                if active.contains(&d) {
                    any = true;
                } else if let Some(&v) = self.locals.get(&d) {
                    any = self.depends(hir, active, v);
                }
                if any {
                    break;
                }
            }
        }
        self.depends.insert(e, any);
        any
    }

    /// Bounds of a reduction variable: its range, or the extent of an axis
    /// it reads plainly (`x[.., k, ..]`).
    pub fn bounds(&self, b: &mut Build, cx: &Cx, var: DefId, range: &Option<Range>) -> Option<(ExprId, ExprId)> {
        if let Some(r) = range {
            return Some((r.start, r.end));
        }
        if let Some(r) = cx.tables.ranges.get(&var) {
            if let (Some(lo), Some(hi)) = (dim_expr(b, &r.start), dim_expr(b, &r.end)) {
                return Some((lo, hi));
            }
        }
        for e in b.hir.reachable(self.roots.iter().copied()) {
            let ExprKind::Index { base, args } = &b.hir.exprs[e].kind else { continue };
            let ExprKind::Def(t) = b.hir.exprs[*base].kind else { continue };
            if let Some(axis) = args.iter().position(|a| matches!(b.hir.exprs[*a].kind, ExprKind::Def(v) if v == var)) {
                let zero = b.int(0);
                let hi = b.extent(t, axis);
                return Some((zero, hi));
            }
        }
        None
    }

    /// A copy of `e` whose variables `from` are renamed to fresh ones (for
    /// an `argmax` or a product over the same variables).
    pub fn renamed(
        hir: &mut Hir,
        e: ExprId,
        vars: &[RedVar],
        wheres: &[Where],
    ) -> (Vec<RedVar>, Vec<Where>, ExprId, Vec<DefId>) {
        let mut c = Copier::new();
        let mut fresh = Vec::new();
        let new_vars = vars
            .iter()
            .map(|v| {
                let range = v.range.as_ref().map(|r| c.range(hir, r));
                let d = c.bind(hir, v.def);
                fresh.push(d);
                RedVar { def: d, range }
            })
            .collect();
        let wheres = c.wheres(hir, wheres);
        let body = c.expr(hir, e);
        (new_vars, wheres, body, fresh)
    }
}

/// The statements of the sweep and the adjoint of each of `cx.xs`.
pub(super) fn run(hir: &mut Hir, cx: &Cx) -> Result<(Vec<Stmt>, Vec<DefId>), Diagnostic> {
    let span = cx.span;
    let k_y = match cx.def_ty(cx.y) {
        Ty::Scalar(k) => k,
        _ => return Err(Diagnostic::bug(span, "reverse mode of a tensor target")),
    };
    let mut r = Rev {
        b: Build { hir, span },
        cx,
        adj: HashMap::new(),
        out: Vec::new(),
        materialize: true,
        adjoints: HashSet::new(),
        materialized: HashMap::new(),
    };
    let one = r.b.float(1.0, k_y);
    r.adjoint(cx.y).terms.push(one);
    let mut done: HashMap<DefId, DefId> = HashMap::new();
    for t in cx.tape.iter().rev() {
        let Some(v) = super::defined(&t.stmt) else { continue };
        if !cx.act.active.contains(&v) {
            continue;
        }
        if let Stmt::Recurrence(rec) = &t.stmt {
            if let Some(dv) = r.recurrence(v, rec)? {
                if cx.xs.contains(&v) {
                    done.insert(v, dv);
                }
            }
            continue;
        }
        let Some(dv) = r.emit(v) else { continue };
        if cx.xs.contains(&v) {
            done.insert(v, dv);
        }
        match &t.stmt {
            Stmt::Let { value, .. } if super::tensor_rule_call(r.b.hir, cx.tables, *value).is_some() => {
                r.tensor_rule(v, dv, *value)?;
            }
            Stmt::Let { value, .. } => {
                let value = *value;
                match cx.def_ty(v) {
                    Ty::Scalar(_) => r.statement(v, dv, &[], &[], value)?,
                    Ty::Tensor(_, dims) => {
                        // Fresh variables over the binding's points; a slot
                        // without a range ranges over the binding's axis.
                        let vars: Vec<DefId> =
                            (0..dims.len()).map(|a| r.b.hir.alloc_def(format!("i{a}"), DefKind::Index, span)).collect();
                        let mut point = Point::new(r.b.hir, vec![value], &[]);
                        let body = pointwise(&mut r.b, cx, &mut point, value, &vars)?;
                        let slots: Vec<Slot> = vars.iter().map(|&def| Slot::Var { def, range: None }).collect();
                        r.statement_in(v, dv, &slots, &[], body, point, &mut Keep::All)?;
                    }
                    _ => return Err(unsupported(span, hir_name(&r, v), "it is not a float scalar or tensor")),
                }
            }
            Stmt::Indexed(d) => {
                let IndexedDef { slots, wheres, body, .. } = d.clone();
                r.statement(v, dv, &slots, &wheres, body)?;
            }
            Stmt::Recurrence(_) | Stmt::Expr(_) => {}
        }
    }
    let mut results = Vec::new();
    for &x in cx.xs {
        let k_x = cx.def_ty(x).elem().unwrap_or(k_y);
        let dx = match done.get(&x) {
            Some(&d) => d,
            None => match r.emit(x) {
                Some(d) => d,
                None => r.zeros(x, k_x),
            },
        };
        results.push(if k_x == k_y { dx } else { r.cast_all(x, dx, k_y) });
    }
    Ok((r.out, results))
}

fn hir_name(r: &Rev, d: DefId) -> String {
    r.b.hir.name(d).to_string()
}

fn unsupported(span: crate::base::span::Span, what: String, why: &str) -> Diagnostic {
    Diagnostic::error(span, format!("cannot differentiate through `{what}`: {why}"))
}

struct Rev<'a, 'h> {
    b: Build<'h>,
    cx: &'a Cx<'a>,
    adj: HashMap<DefId, Adjoint>,
    out: Vec<Stmt>,
    /// Off while the adjoint being read is not defined yet (the steps of
    /// an adjoint recurrence).
    materialize: bool,
    /// Every adjoint's name.
    adjoints: HashSet<DefId>,
    /// The tensor each adjoint expression was bound to before a reduction,
    /// by the expression, the point's variables and guards: the reductions
    /// of one point that the same adjoint reaches share it.
    materialized: HashMap<(ExprId, Vec<DefId>, Vec<ExprId>), DefId>,
}

impl Rev<'_, '_> {
    fn rank(&self, d: DefId) -> usize {
        match self.cx.def_ty(d) {
            Ty::Tensor(_, dims) => dims.len(),
            _ => 0,
        }
    }

    fn adjoint(&mut self, u: DefId) -> &mut Adjoint {
        if !self.adj.contains_key(&u) {
            let name = format!("d_{}", super::base_name(self.b.hir, u));
            let span = self.b.span;
            let def = self.b.hir.alloc_def(name, DefKind::Local, span);
            let pvars =
                (0..self.rank(u)).map(|a| self.b.hir.alloc_def(format!("p{a}"), DefKind::Index, span)).collect();
            self.adjoints.insert(def);
            self.adj.insert(u, Adjoint { def, pvars, terms: Vec::new() });
        }
        self.adj.get_mut(&u).expect("inserted above")
    }

    /// Slots `p in 0..shape(u)[a]` over the given variables.
    fn slots_over(&mut self, u: DefId, vars: &[DefId]) -> Vec<Slot> {
        self.b.slots_over(u, vars)
    }

    /// Defines `u`'s adjoint from its contributions; its name, or None
    /// when nothing contributed (a zero adjoint).
    fn emit(&mut self, u: DefId) -> Option<DefId> {
        let a = self.adj.remove(&u)?;
        // An adjoint that is another one read at the same point (`let v =
        // u;`, a parameter bound by inlining) is that one.
        if let [t] = a.terms.as_slice() {
            if let Some(same) = self.whole_read(*t, &a.pvars) {
                return Some(same);
            }
        }
        let mut body = None;
        for t in a.terms {
            body = self.b.add_opt(body, Some(t));
        }
        let body = body?;
        let span = self.b.span;
        let stmt = if a.pvars.is_empty() {
            Stmt::Let { def: a.def, ty: None, value: body, span }
        } else {
            let slots = self.slots_over(u, &a.pvars);
            Stmt::Indexed(IndexedDef { def: a.def, slots, wheres: Vec::new(), body, span })
        };
        self.out.push(stmt);
        Some(a.def)
    }

    /// `d[p0, p1, ..]` read at exactly the variables `pvars`, in order: `d`.
    fn whole_read(&self, e: ExprId, pvars: &[DefId]) -> Option<DefId> {
        let hir = &*self.b.hir;
        let is_var = |a: ExprId, v: DefId| matches!(hir.exprs[a].kind, ExprKind::Def(d) if d == v);
        match &hir.exprs[e].kind {
            ExprKind::Def(d) if pvars.is_empty() && self.adjoints.contains(d) => Some(*d),
            ExprKind::Index { base, args } if args.len() == pvars.len() && !pvars.is_empty() => {
                let ExprKind::Def(d) = hir.exprs[*base].kind else { return None };
                (self.adjoints.contains(&d) && args.iter().zip(pvars).all(|(&a, &v)| is_var(a, v))).then_some(d)
            }
            _ => None,
        }
    }

    /// A zero adjoint of `x`'s shape.
    fn zeros(&mut self, x: DefId, k: ScalarKind) -> DefId {
        let a = self.adjoint(x);
        let (def, pvars) = (a.def, a.pvars.clone());
        self.adj.remove(&x);
        let zero = self.b.float(0.0, k);
        let span = self.b.span;
        let stmt = if pvars.is_empty() {
            Stmt::Let { def, ty: None, value: zero, span }
        } else {
            let slots = self.slots_over(x, &pvars);
            Stmt::Indexed(IndexedDef { def, slots, wheres: Vec::new(), body: zero, span })
        };
        self.out.push(stmt);
        def
    }

    /// `dx` cast to the target's float kind.
    fn cast_all(&mut self, x: DefId, dx: DefId, k: ScalarKind) -> DefId {
        let span = self.b.span;
        let def =
            self.b.hir.alloc_def(format!("{}_as_{}", super::base_name(self.b.hir, dx), k.name()), DefKind::Local, span);
        let vars: Vec<DefId> =
            (0..self.rank(x)).map(|a| self.b.hir.alloc_def(format!("p{a}"), DefKind::Index, span)).collect();
        let args = vars.iter().map(|&v| self.b.def(v)).collect();
        let read = self.b.index(dx, args);
        let body = self.b.cast(read, k);
        let stmt = if vars.is_empty() {
            Stmt::Let { def, ty: None, value: body, span }
        } else {
            let slots = self.slots_over(x, &vars);
            Stmt::Indexed(IndexedDef { def, slots, wheres: Vec::new(), body, span })
        };
        self.out.push(stmt);
        def
    }

    fn statement(
        &mut self,
        v: DefId,
        dv: DefId,
        slots: &[Slot],
        wheres: &[Where],
        body: ExprId,
    ) -> Result<(), Diagnostic> {
        self.statement_keep(v, dv, slots, wheres, body, &mut Keep::All)
    }

    fn statement_keep(
        &mut self,
        v: DefId,
        dv: DefId,
        slots: &[Slot],
        wheres: &[Where],
        body: ExprId,
        keep: &mut Keep,
    ) -> Result<(), Diagnostic> {
        let mut roots = vec![body];
        for w in wheres {
            match w {
                Where::Bind { value, .. } => roots.push(*value),
                Where::Guard(g) => roots.push(*g),
            }
        }
        let point = Point::new(self.b.hir, roots, wheres);
        self.statement_in(v, dv, slots, wheres, body, point, keep)
    }

    /// `v = f(u, ...)` where `f`'s rule `R(u, @u)` is linear in `@u` but not
    /// a point rule: the contribution to `u`'s adjoint is `R^T dv`, the
    /// gradient of `s = <R(u, probe), dv>` with respect to a probe of `u`'s
    /// shape (any value: `s` is linear in it). Written as statements and a
    /// new request `@s / @probe` that a later step answers like any other:
    ///
    /// ```text
    /// let probe = u * 0.0; <the rule's statements>; let r = <its value>;
    /// let s = sum[i..](r[i..] * dv[i..]); let c = @s / @probe;
    /// ```
    /// and `c` is the term of `u`'s adjoint.
    fn tensor_rule(&mut self, v: DefId, dv: DefId, call: ExprId) -> Result<(), Diagnostic> {
        let span = self.b.span;
        let Some((_, rule, args)) = super::tensor_rule_call(self.b.hir, self.cx.tables, call) else {
            return Err(Diagnostic::bug(span, "a tensor rule call changed"));
        };
        let rule = rule.clone();
        let k = self.cx.def_ty(v).elem().unwrap_or(ScalarKind::F32);
        let mut probes = Vec::new();
        let mut diffs = Vec::new();
        for &a in &args {
            let u = match self.b.hir.exprs[a].kind {
                ExprKind::Def(u) if self.cx.act.active.contains(&u) => Some(u),
                _ => None,
            };
            let ka = self.cx.tables.expr_ty.get(a.index()).and_then(Ty::elem).unwrap_or(k);
            match u {
                Some(u) if ka.is_float() => {
                    let name = format!("probe_{}", super::base_name(self.b.hir, u));
                    let probe = self.b.hir.alloc_def(name, DefKind::Local, span);
                    let read = self.b.def(u);
                    let zero = self.b.float(0.0, ka);
                    let value = self.b.bin(BinOp::Mul, read, zero);
                    self.out.push(Stmt::Let { def: probe, ty: None, value, span });
                    probes.push((u, probe));
                    diffs.push(Ok(self.b.def(probe)));
                }
                _ => diffs.push(Err(ka)),
            }
        }
        let block = super::rule_block(&mut self.b, &rule, &args, &diffs);
        let Some(tail) = block.tail else {
            return Err(Diagnostic::error(span, "the derivative rule has no value"));
        };
        self.out.extend(block.stmts);
        let r = self.b.hir.alloc_def("rule_value", DefKind::Local, span);
        self.out.push(Stmt::Let { def: r, ty: None, value: tail, span });
        // s = <r, dv>
        let rank = self.rank(v);
        let vars: Vec<DefId> = (0..rank).map(|a| self.b.hir.alloc_def(format!("i{a}"), DefKind::Index, span)).collect();
        let at: Vec<ExprId> = vars.iter().map(|&i| self.b.def(i)).collect();
        let r_read = self.b.index(r, at.clone());
        let d_read = self.b.index(dv, at);
        let prod = self.b.bin(BinOp::Mul, r_read, d_read);
        let slots = self.b.slots_over(v, &vars);
        let reds: Vec<RedVar> = slots
            .into_iter()
            .filter_map(|s| if let Slot::Var { def, range } = s { Some(RedVar { def, range }) } else { None })
            .collect();
        let s_value = self.b.sum(reds, Vec::new(), prod, k);
        let s = self.b.hir.alloc_def("rule_pairing", DefKind::Local, span);
        self.out.push(Stmt::Let { def: s, ty: None, value: s_value, span });
        for (u, probe) in probes {
            let c = self.b.hir.alloc_def(format!("rule_vjp_{}", super::base_name(self.b.hir, u)), DefKind::Local, span);
            self.adjoints.insert(c);
            let request = self.b.e(ExprKind::Deriv { target: s, wrt: probe });
            self.out.push(Stmt::Let { def: c, ty: None, value: request, span });
            let pv = self.adjoint(u).pvars.clone();
            let args = pv.iter().map(|&p| self.b.def(p)).collect();
            let term = self.b.index(c, args);
            self.adjoint(u).terms.push(term);
        }
        Ok(())
    }

    /// Backpropagation through time: the adjoint of a recurrence along its
    /// sequential axis `t` is itself a recurrence, run backwards. It is
    /// written over `s = T - 1 - t` (so its reads are backward, as the
    /// language requires): `r[s] = direct(T-1-s) + sum of the clause
    /// contributions of steps after t`, then `d_v[t] = r[T - 1 - t]`, and
    /// only then the clauses' reads of other tensors contribute, reading
    /// `d_v`. The primal's whole history is kept (its later reads observe
    /// every step).
    fn recurrence(&mut self, v: DefId, rec: &Recurrence) -> Result<Option<DefId>, Diagnostic> {
        let span = self.b.span;
        let axis = self.time_axis(v, rec)?;
        let direct: Vec<ExprId> = self.adj.get_mut(&v).map(|a| std::mem::take(&mut a.terms)).unwrap_or_default();
        let (dv, pvars) = {
            let a = self.adjoint(v);
            (a.def, a.pvars.clone())
        };
        let carry = self.inner_carry(v, rec, axis, &pvars);
        let inner = |i: usize, c: &IndexedDef| match &carry {
            Some(carry) if carry.clause == i => carry.inner,
            _ => c.body,
        };
        let mut keep = Keep::SelfOnly(Lags { axis, out: Vec::new() });
        self.materialize = false;
        for (i, c) in rec.clauses.iter().enumerate() {
            self.statement_keep(v, dv, &c.slots, &c.wheres, inner(i, c), &mut keep)?;
        }
        self.materialize = true;
        let Keep::SelfOnly(lags) = keep else { return Err(Diagnostic::bug(span, "lost the recurrence's terms")) };
        let selfs = lags.out;
        if direct.is_empty() && selfs.is_empty() {
            self.adj.remove(&v);
            return Ok(None);
        }
        let max_lag = selfs.iter().map(|s| s.0).max().unwrap_or(1).max(1);
        let extent = self.b.extent(v, axis);
        let one = self.b.int(1);
        let last = self.b.sub(extent, one);
        let name = format!("r_{}", super::base_name(self.b.hir, v));
        let r = self.b.hir.alloc_def(name, DefKind::Local, span);
        let mut clauses = Vec::new();
        for step in 0..=max_lag {
            let recurrent = step == max_lag;
            let mut c = Copier::new();
            let mut slots = Vec::new();
            for (a, &pv) in pvars.iter().enumerate() {
                if a == axis {
                    if recurrent {
                        let s = self.b.hir.alloc_def("s", DefKind::Index, span);
                        let lo = self.b.int(step as i64);
                        let hi = self.b.extent(v, axis);
                        slots.push(Slot::Var { def: s, range: Some(self.b.range(lo, hi)) });
                        let read = self.b.def(s);
                        let t = self.b.sub(last, read);
                        c.subst.insert(pv, t);
                    } else {
                        slots.push(Slot::Lit(step as i64, span));
                        let lit = self.b.int(step as i64);
                        let t = self.b.sub(last, lit);
                        c.subst.insert(pv, t);
                    }
                } else {
                    let fresh = self.b.hir.alloc_def(format!("p{a}"), DefKind::Index, span);
                    let zero = self.b.int(0);
                    let hi = self.b.extent(v, a);
                    slots.push(Slot::Var { def: fresh, range: Some(self.b.range(zero, hi)) });
                    let read = self.b.def(fresh);
                    c.subst.insert(pv, read);
                }
            }
            c.reindex = Some(Reindex { from: dv, to: r, axis, last });
            let mut body = None;
            for &d in &direct {
                let e = c.expr(self.b.hir, d);
                body = self.b.add_opt(body, Some(e));
            }
            for &(lag, e) in &selfs {
                if lag <= step {
                    let e = c.expr(self.b.hir, e);
                    body = self.b.add_opt(body, Some(e));
                }
            }
            let k = self.cx.def_ty(v).elem().unwrap_or(ScalarKind::F32);
            let mut body = body.unwrap_or_else(|| self.b.float(0.0, k));
            if let Some(carry) = &carry {
                let factor = c.expr(self.b.hir, carry.factor);
                body = self.b.mul(body, factor);
            }
            clauses.push(IndexedDef { def: r, slots, wheres: Vec::new(), body, span });
        }
        self.out.push(Stmt::Recurrence(Recurrence { def: r, clauses, span }));
        // d_v[.., t, ..] = r[.., T - 1 - t, ..]
        let args: Vec<ExprId> = pvars.iter().map(|&p| self.b.def(p)).collect();
        let mut c = Copier::new();
        c.reindex = Some(Reindex { from: dv, to: r, axis, last });
        let read = self.b.index(dv, args);
        let body = c.expr(self.b.hir, read);
        let slots = self.slots_over(v, &pvars);
        self.out.push(Stmt::Indexed(IndexedDef { def: dv, slots, wheres: Vec::new(), body, span }));
        self.adj.remove(&v);
        let mut keep = Keep::Others;
        for (i, c) in rec.clauses.iter().enumerate() {
            self.statement_keep(v, dv, &c.slots, &c.wheres, inner(i, c), &mut keep)?;
        }
        Ok(Some(dv))
    }

    /// When the recurrent clause is `v[t, ..] = f(a)` with `f` an
    /// elementwise intrinsic (`tanh`, `exp`, ...), the adjoint recurrence
    /// carries the adjoint of `a` at its steps instead of `v`'s: `r = f'
    /// (direct + the steps after's contributions through a)`. Its step then
    /// reads `f'` once per point rather than once per term of the sums
    /// that `a`'s transpose makes, and the clause's contributions to other
    /// tensors start from `a`. Not when `v`'s own adjoint is asked for.
    fn inner_carry(&mut self, v: DefId, rec: &Recurrence, axis: usize, pvars: &[DefId]) -> Option<Carry> {
        if self.cx.xs.contains(&v) {
            return None;
        }
        let hir = &*self.b.hir;
        let reads_self = |c: &IndexedDef| {
            hir.reachable([c.body]).into_iter().any(|e| match &hir.exprs[e].kind {
                ExprKind::Index { base, .. } => matches!(hir.exprs[*base].kind, ExprKind::Def(d) if d == v),
                _ => false,
            })
        };
        let recurrent: Vec<usize> = (0..rec.clauses.len()).filter(|&i| reads_self(&rec.clauses[i])).collect();
        let [clause] = recurrent[..] else { return None };
        let c = &rec.clauses[clause];
        let ExprKind::Call { callee: Callee::Intrinsic(f), args, .. } = &hir.exprs[c.body].kind else { return None };
        let (f, &[inner]) = (*f, &args[..]) else { return None };
        if !c.wheres.is_empty() || f.arity() != 1 {
            return None;
        }
        let Some(Slot::Var { range: Some(range), .. }) = c.slots.get(axis) else { return None };
        let (lo, hi) = (range.start, range.end);
        let k = self.cx.def_ty(v).elem()?;
        // f' at the adjoint's point, reading v's value there.
        let mut at = Copier::new();
        for (a, s) in c.slots.iter().enumerate() {
            let Slot::Var { def, .. } = s else { return None };
            let e = self.b.def(*pvars.get(a)?);
            at.subst.insert(*def, e);
        }
        let arg = at.expr(self.b.hir, inner);
        let args: Vec<ExprId> = pvars.iter().map(|&p| self.b.def(p)).collect();
        let value = self.b.index(v, args);
        let part = rules::intrinsic(&mut self.b, f, &[arg], value, k).into_iter().next().flatten()?;
        let one = self.b.float(1.0, k);
        let slope = match part {
            Partial::Scale(s) => s,
            Partial::Select(cond) => self.b.select(cond, one, k),
        };
        // Only at the clause's steps: the boundary steps carry v's adjoint.
        let t = self.b.def(pvars[axis]);
        let (lo, hi) = (at.expr(self.b.hir, lo), at.expr(self.b.hir, hi));
        let from = self.b.bin(BinOp::Ge, t, lo);
        let t = self.b.def(pvars[axis]);
        let to = self.b.bin(BinOp::Lt, t, hi);
        let within = self.b.bin(BinOp::And, from, to);
        let one = self.b.float(1.0, k);
        let factor = self.b.e(ExprKind::If { cond: within, then: slope, els: Some(one) });
        Some(Carry { clause, inner, factor })
    }

    /// The recurrence's sequential axis: where every read of itself is
    /// `t - c` of the clause's own variable, with a positive literal `c`.
    fn time_axis(&self, v: DefId, rec: &Recurrence) -> Result<usize, Diagnostic> {
        let hir = &*self.b.hir;
        let name = hir.name(v).to_string();
        let mut axis = None;
        for c in &rec.clauses {
            for e in hir.reachable([c.body]) {
                let ExprKind::Index { base, args } = &hir.exprs[e].kind else { continue };
                if !matches!(hir.exprs[*base].kind, ExprKind::Def(d) if d == v) {
                    continue;
                }
                let found = args.iter().enumerate().find_map(|(a, &ix)| {
                    let Some(Slot::Var { def, .. }) = c.slots.get(a) else { return None };
                    match hir.exprs[ix].kind {
                        ExprKind::Binary(BinOp::Sub, x, lag)
                            if matches!(hir.exprs[x].kind, ExprKind::Def(d) if d == *def)
                                && matches!(hir.exprs[lag].kind, ExprKind::Lit(Lit::Int(n, _)) if n > 0) =>
                        {
                            Some(a)
                        }
                        _ => None,
                    }
                });
                match (found, axis) {
                    (Some(a), None) => axis = Some(a),
                    (Some(a), Some(b)) if a == b => {}
                    _ => {
                        return Err(unsupported(
                            self.b.span,
                            name,
                            "reverse mode handles recurrences along one axis whose reads of earlier steps are `t - c` with a literal `c`",
                        ))
                    }
                }
            }
        }
        axis.ok_or_else(|| Diagnostic::bug(self.b.span, "a recurrence that reads no earlier step"))
    }

    /// The contributions of the statement `v[slots] = body where wheres`,
    /// whose adjoint is `dv`, to the adjoints of what it reads.
    #[allow(clippy::too_many_arguments)]
    fn statement_in(
        &mut self,
        v: DefId,
        dv: DefId,
        slots: &[Slot],
        wheres: &[Where],
        body: ExprId,
        mut point: Point,
        keep: &mut Keep,
    ) -> Result<(), Diagnostic> {
        let mut ctx = Ctx::default();
        let mut at = Vec::new();
        for (axis, s) in slots.iter().enumerate() {
            match s {
                Slot::Var { def, range } => {
                    // Without a range, the slot ranges over `v`'s axis.
                    let (lo, hi, extent_of) = match range {
                        Some(r) => (r.start, r.end, None),
                        None => {
                            let zero = self.b.int(0);
                            (zero, self.b.extent(v, axis), Some((v, axis)))
                        }
                    };
                    ctx.vars.push(Var { def: *def, lo, hi, extent_of });
                    at.push(self.b.def(*def));
                }
                Slot::Lit(n, _) => at.push(self.b.int(*n)),
                Slot::Rest(..) => return Err(Diagnostic::bug(self.b.span, "a rest index reached autodiff")),
            }
        }
        for w in wheres {
            if let Where::Guard(g) = w {
                ctx.guards.push(*g);
            }
        }
        let seed = self.b.index(dv, at.clone());
        if !at.is_empty() || slots.is_empty() {
            let read = self.b.index(v, at);
            point.value_of = Some((body, read));
        }
        point.top = ctx.vars.len();
        let mut terms = Vec::new();
        self.rev(&mut point, body, seed, &ctx, &mut terms)?;
        for t in terms {
            match keep {
                Keep::All => self.contribute(&point, t),
                Keep::SelfOnly(lags) if t.u == v => {
                    let lag = lags.lag(self.b.hir, &t.idx);
                    let c = self.contribution(&point, t);
                    lags.out.push((lag, c));
                }
                Keep::Others if t.u != v => self.contribute(&point, t),
                _ => {}
            }
        }
        Ok(())
    }

    fn term(&self, u: DefId, idx: Vec<ExprId>, m: ExprId, ctx: &Ctx) -> Term {
        Term { u, idx, m, ctx: ctx.clone() }
    }

    fn rev(&mut self, p: &mut Point, e: ExprId, adj: ExprId, ctx: &Ctx, out: &mut Vec<Term>) -> Result<(), Diagnostic> {
        let Some(k) = p.kind(self.cx, e) else { return Ok(()) };
        if !p.depends(self.b.hir, &self.cx.act.active, e) {
            return Ok(());
        }
        let span = self.b.span;
        match self.b.hir.exprs[e].kind.clone() {
            ExprKind::Def(d) => {
                if let Some(&v) = p.locals.get(&d) {
                    return self.rev(p, v, adj, ctx, out);
                }
                out.push(self.term(d, Vec::new(), adj, ctx));
            }
            ExprKind::Index { base, args } => {
                let u = p.tensor_read(self.b.hir, base, span)?;
                if args.len() != self.rank(u) {
                    let name = self.b.hir.name(u).to_string();
                    return Err(unsupported(
                        span,
                        name,
                        "a part of it is read as a tensor inside a point; bind it with `let` first",
                    ));
                }
                out.push(self.term(u, args, adj, ctx));
            }
            ExprKind::Unary(UnOp::Neg, a) => {
                let n = self.b.neg(adj);
                self.rev(p, a, n, ctx, out)?;
            }
            ExprKind::Binary(op, a, b) => match op {
                BinOp::Add => {
                    self.rev(p, a, adj, ctx, out)?;
                    self.rev(p, b, adj, ctx, out)?;
                }
                BinOp::Sub => {
                    self.rev(p, a, adj, ctx, out)?;
                    let n = self.b.neg(adj);
                    self.rev(p, b, n, ctx, out)?;
                }
                BinOp::Mul => {
                    let da = self.b.mul(adj, b);
                    self.rev(p, a, da, ctx, out)?;
                    let db = self.b.mul(adj, a);
                    self.rev(p, b, db, ctx, out)?;
                }
                BinOp::Div => {
                    let da = self.b.div(adj, b);
                    self.rev(p, a, da, ctx, out)?;
                    let value = p.value(e);
                    let q = self.b.mul(adj, value);
                    let q = self.b.div(q, b);
                    let db = self.b.neg(q);
                    self.rev(p, b, db, ctx, out)?;
                }
                BinOp::Rem => self.rev(p, a, adj, ctx, out)?,
                BinOp::Pow => {
                    let f = p.intrinsics.get(&e).or_else(|| self.cx.tables.intrinsic.get(&e)).copied();
                    let f = f.ok_or_else(|| Diagnostic::bug(span, "a power with no chosen intrinsic"))?;
                    self.rev_call(p, f, &[a, b], e, k, adj, ctx, out)?;
                }
                _ => {}
            },
            ExprKind::Cast(a, _) => {
                if let Some(ka) = p.kind(self.cx, a) {
                    let adj = if ka == k { adj } else { self.b.cast(adj, ka) };
                    self.rev(p, a, adj, ctx, out)?;
                }
            }
            ExprKind::Call { callee: Callee::Intrinsic(f), args, .. } => {
                self.rev_call(p, f, &args, e, k, adj, ctx, out)?
            }
            ExprKind::Call { callee: Callee::Fn(g), args, .. } => {
                let g = self.cx.tables.instance_calls.get(&e).copied().unwrap_or(g);
                let name = self.b.hir.name(self.b.hir.fns[g].def).to_string();
                let Some(rule) = super::rule_of(self.b.hir, g).cloned() else {
                    return Err(Diagnostic::bug(
                        span,
                        format!("a call of `{name}` was not inlined before differentiation"),
                    ));
                };
                // A rule of scalar parameters: each partial derivative is
                // the rule with that differential one and the others zero.
                let kinds: Vec<Option<ScalarKind>> = args.iter().map(|&a| p.kind(self.cx, a)).collect();
                if args.iter().any(|&a| matches!(self.cx.tables.expr_ty.get(a.index()), Some(Ty::Tensor(..)))) {
                    return Err(Diagnostic::bug(span, format!("a whole-tensor call of `{name}` reached a point rule")));
                }
                for (i, &a) in args.iter().enumerate() {
                    let Some(ka) = kinds[i] else { continue };
                    let diffs: Vec<Result<ExprId, ScalarKind>> = kinds
                        .iter()
                        .enumerate()
                        .map(|(j, kj)| {
                            let kj = kj.unwrap_or(ka);
                            if j == i {
                                Ok(self.b.float(1.0, kj))
                            } else {
                                Err(kj)
                            }
                        })
                        .collect();
                    let partial = super::apply_rule(&mut self.b, &rule, &args, &diffs);
                    let da = self.b.mul(adj, partial);
                    self.rev(p, a, da, ctx, out)?;
                }
            }
            ExprKind::Reduce { op, vars, wheres, body } => {
                let (vars, wheres, body) = nest_extremum(&mut self.b, p, op, vars, wheres, body, k);
                let adj = if self.materialize && ctx.vars.len() == p.top && p.top > 0 && !self.is_read(adj) {
                    self.materialize(p, adj, ctx, k)
                } else {
                    adj
                };
                let mut inner = ctx.clone();
                for v in &vars {
                    let (lo, hi) = p.bounds(&mut self.b, self.cx, v.def, &v.range).ok_or_else(|| {
                        Diagnostic::error(
                            span,
                            "cannot differentiate: a reduction variable has no range to sum the adjoint over",
                        )
                        .help("give the reduction variable an explicit range: `sum[k in 0..n](...)`")
                    })?;
                    inner.vars.push(Var { def: v.def, lo, hi, extent_of: None });
                }
                for w in &wheres {
                    if let Where::Guard(g) = w {
                        inner.guards.push(*g);
                    }
                }
                match op {
                    RedOp::Sum => self.rev(p, body, adj, &inner, out)?,
                    RedOp::Max | RedOp::Min => {
                        // The adjoint goes to the selected point only, the
                        // first one on ties.
                        let guard = selected(&mut self.b, op, &vars, &wheres, body);
                        inner.guards.push(guard);
                        self.rev(p, body, adj, &inner, out)?;
                    }
                    RedOp::Prod => {
                        // The product of the other factors: exact when one
                        // of them is zero.
                        let others = other_factors(&mut self.b, &vars, &wheres, body);
                        let m = self.b.mul(adj, others);
                        self.rev(p, body, m, &inner, out)?;
                    }
                    _ => {}
                }
            }
            ExprKind::If { cond, then, els } => {
                let mut t = ctx.clone();
                t.guards.push(cond);
                self.rev(p, then, adj, &t, out)?;
                if let Some(x) = els {
                    let mut f = ctx.clone();
                    let not = self.b.e(ExprKind::Unary(UnOp::Not, cond));
                    f.guards.push(not);
                    self.rev(p, x, adj, &f, out)?;
                }
            }
            ExprKind::Block(b) => {
                if b.stmts.iter().any(|s| !matches!(s, Stmt::Let { .. })) {
                    return Err(Diagnostic::error(
                        span,
                        "cannot differentiate through a block that defines tensors inside a point",
                    ));
                }
                if let Some(t) = b.tail {
                    self.rev(p, t, adj, ctx, out)?;
                }
            }
            ExprKind::Lit(_) => {}
            ExprKind::Match { scrutinee, arms } => {
                // The adjoint reaches the taken arm: arm i's body under the
                // guard "the match takes arm i" (the same match with
                // `true` for arm i and `false` for the others).
                for (i, arm) in arms.iter().enumerate() {
                    p.bind_pattern(&arm.pat, scrutinee);
                    let taken = taken_arm(&mut self.b, scrutinee, &arms, i);
                    let mut c = ctx.clone();
                    c.guards.push(taken);
                    self.rev(p, arm.body, adj, &c, out)?;
                }
            }
            _ => return Err(Diagnostic::error(span, "cannot differentiate through this kind of expression")),
        }
        Ok(())
    }

    fn is_read(&self, e: ExprId) -> bool {
        match &self.b.hir.exprs[e].kind {
            ExprKind::Def(_) => true,
            ExprKind::Index { base, .. } => matches!(self.b.hir.exprs[*base].kind, ExprKind::Def(_)),
            _ => false,
        }
    }

    /// Binds the adjoint reaching a reduction to a tensor over the
    /// statement's points, so that the reduction's own adjoint is a plain
    /// contraction (a GEMM where the primal was one) instead of recomputing
    /// the elementwise chain for every term of the sum.
    fn materialize(&mut self, p: &Point, adj: ExprId, ctx: &Ctx, k: ScalarKind) -> ExprId {
        let span = self.b.span;
        let key = (adj, ctx.vars.iter().map(|v| v.def).collect::<Vec<_>>(), ctx.guards.clone());
        if let Some(&def) = self.materialized.get(&key) {
            let args = ctx.vars.iter().map(|v| self.b.def(v.def)).collect();
            return self.b.index(def, args);
        }
        let mut c = Copier::with(p.locals.clone());
        let mut slots = Vec::new();
        for v in &ctx.vars {
            let lo = c.expr(self.b.hir, v.lo);
            let hi = c.expr(self.b.hir, v.hi);
            let def = c.bind(self.b.hir, v.def);
            slots.push(Slot::Var { def, range: Some(self.b.range(lo, hi)) });
        }
        let body = c.expr(self.b.hir, adj);
        let guards: Vec<ExprId> = ctx.guards.iter().map(|g| c.expr(self.b.hir, *g)).collect();
        let body = match self.b.all(&guards) {
            Some(g) => self.b.select(g, body, k),
            None => body,
        };
        let def = self.b.hir.alloc_def("g", DefKind::Local, span);
        self.out.push(Stmt::Indexed(IndexedDef { def, slots, wheres: Vec::new(), body, span }));
        self.materialized.insert(key, def);
        let args = ctx.vars.iter().map(|v| self.b.def(v.def)).collect();
        self.b.index(def, args)
    }

    #[allow(clippy::too_many_arguments)]
    fn rev_call(
        &mut self,
        p: &mut Point,
        f: Intrinsic,
        args: &[ExprId],
        e: ExprId,
        k: ScalarKind,
        adj: ExprId,
        ctx: &Ctx,
        out: &mut Vec<Term>,
    ) -> Result<(), Diagnostic> {
        let value = p.value(e);
        let partials = rules::intrinsic(&mut self.b, f, args, value, k);
        for (&a, part) in args.iter().zip(partials) {
            let Some(part) = part else { continue };
            let da = match part {
                Partial::Scale(s) => self.b.mul(adj, s),
                Partial::Select(c) => self.b.select(c, adj, k),
            };
            self.rev(p, a, da, ctx, out)?;
        }
        Ok(())
    }

    /// Adds a term to its adjoint, in gather form (see the module docs).
    fn contribute(&mut self, p: &Point, t: Term) {
        let u = t.u;
        let c = self.contribution(p, t);
        self.adjoint(u).terms.push(c);
    }

    /// A term in gather form over the points of its adjoint.
    fn contribution(&mut self, p: &Point, t: Term) -> ExprId {
        let k = self.cx.def_ty(t.u).elem().unwrap_or(ScalarKind::F32);
        let pv = self.adjoint(t.u).pvars.clone();
        let vars: HashMap<DefId, Var> = t.ctx.vars.iter().map(|v| (v.def, v.clone())).collect();
        let mut solved: HashMap<DefId, ExprId> = HashMap::new();
        // The solution's own conditions come first: the context's guards
        // may read at the solved indices, which exist only when these hold.
        let mut guards = Vec::new();
        let mut shifted: Vec<(DefId, usize)> = Vec::new();
        let mut done = vec![false; t.idx.len()];
        for (a, &ix) in t.idx.iter().enumerate() {
            if let ExprKind::Def(v) = self.b.hir.exprs[ix].kind {
                if vars.contains_key(&v) && !solved.contains_key(&v) {
                    let pa = self.b.def(pv[a]);
                    solved.insert(v, pa);
                    done[a] = true;
                    if !self.same_extent(&vars[&v], t.u, a) {
                        guards.push(self.in_range(&vars[&v]));
                    }
                }
            }
        }
        for (a, &ix) in t.idx.iter().enumerate() {
            if done[a] {
                continue;
            }
            let pa = self.b.def(pv[a]);
            if let Some((v, sol, extra)) = self.invert(ix, pa, &vars, &solved) {
                solved.insert(v, sol);
                guards.extend(extra);
                shifted.push((v, a));
                done[a] = true;
            }
        }
        // A shift `v = p - r` read from one tensor only becomes a read of a
        // zero-padded copy (no guard, no bounds check per term); otherwise
        // `v` is guarded into its range.
        let padded = self.pad_shifted(&t, &shifted, &solved, &vars);
        for &(v, _) in &shifted {
            if !padded.as_ref().is_some_and(|(vs, _)| vs.contains(&v)) {
                guards.push(self.in_range(&vars[&v]));
            }
        }
        for (a, &ix) in t.idx.iter().enumerate() {
            if !done[a] {
                let pa = self.b.def(pv[a]);
                guards.push(self.b.bin(BinOp::Eq, ix, pa));
            }
        }
        let n_valid = guards.len();
        guards.extend(t.ctx.guards.iter().copied());
        let mut subst = p.locals.clone();
        subst.extend(solved.iter().map(|(d, e)| (*d, *e)));
        let mut free = Vec::new();
        for v in &t.ctx.vars {
            if solved.contains_key(&v.def) {
                continue;
            }
            let span = self.b.span;
            let name = self.b.hir.name(v.def).to_string();
            let fresh = self.b.hir.alloc_def(name, DefKind::Index, span);
            let read = self.b.def(fresh);
            subst.insert(v.def, read);
            free.push((fresh, v.lo, v.hi));
        }
        let mut c = Copier::with(subst);
        if let Some((_, (node, read))) = padded {
            c.replace.insert(node, read);
        }
        let hir = &mut *self.b.hir;
        let m = c.expr(hir, t.m);
        let mut guards: Vec<ExprId> = guards.iter().map(|g| c.expr(hir, *g)).collect();
        if n_valid > 0 && guards.len() > n_valid {
            // The context's guards read at the solved indices: under an
            // `if` of the solution's conditions, so that those reads are
            // conditional for the bounds analysis as they are at run time.
            let ctx_guards = guards.split_off(n_valid);
            let mut b = Build { hir: &mut *hir, span: self.b.span };
            let valid = b.all(&guards).expect("n_valid > 0");
            let inner = b.all(&ctx_guards).expect("context guards");
            let no = b.e(ExprKind::Lit(Lit::Bool(false)));
            guards.push(b.e(ExprKind::If { cond: valid, then: inner, els: Some(no) }));
        }
        let reds: Vec<RedVar> = free
            .into_iter()
            .map(|(def, lo, hi)| {
                let range = Range { start: c.expr(hir, lo), end: c.expr(hir, hi), span: self.b.span };
                RedVar { def, range: Some(range) }
            })
            .collect();
        self.factored_sum(reds, guards, m, k)
    }

    /// `sum[vars](a * b where guards)` with the factors of the product that
    /// mention none of `vars` moved out of the sum (`sum[j](g[n, j] *
    /// y[n, k])` is `y[n, k] * sum[j](g[n, j])`): the sum is then a
    /// reduction the `opt` passes can hoist out of loops it does not depend
    /// on, instead of a loop nested in every point.
    fn factored_sum(&mut self, vars: Vec<RedVar>, guards: Vec<ExprId>, m: ExprId, k: ScalarKind) -> ExprId {
        if vars.is_empty() {
            return self.b.sum(vars, guards, m, k);
        }
        let mut factors = Vec::new();
        let mut stack = vec![m];
        while let Some(e) = stack.pop() {
            match self.b.hir.exprs[e].kind {
                ExprKind::Binary(BinOp::Mul, a, b) => stack.extend([b, a]),
                _ => factors.push(e),
            }
        }
        let defs: Vec<DefId> = vars.iter().map(|v| v.def).collect();
        let (inner, outer): (Vec<ExprId>, Vec<ExprId>) =
            factors.into_iter().partition(|&f| defs.iter().any(|&d| self.mentions(f, d)));
        if outer.is_empty() || inner.is_empty() {
            return self.b.sum(vars, guards, m, k);
        }
        let product = |b: &mut Build, fs: &[ExprId]| fs[1..].iter().fold(fs[0], |acc, &f| b.mul(acc, f));
        let inner = product(&mut self.b, &inner);
        let outer = product(&mut self.b, &outer);
        let sum = self.b.sum(vars, guards, inner, k);
        self.b.mul(outer, sum)
    }

    /// For shifted solutions `v = p - r` (`r` summed): when the term's
    /// multiplier reads the variables `v` in one place only, a tensor read
    /// `T[.., v, ..]` with each `v` a plain index, defines the zero-padded
    /// `T_pad[.., q, ..] = T[.., q - pad, ..]` (zero outside `v`'s range,
    /// `pad = r_hi - 1`, extent `P + r_hi - 1 - r_lo` for `p in 0..P`) and
    /// gives the read of it at `v + pad` that replaces the original read:
    /// every `p - r + pad` is in bounds, so the sum needs no guard. The
    /// variables padded, and the node to replace with its replacement.
    #[allow(clippy::type_complexity)]
    fn pad_shifted(
        &mut self,
        t: &Term,
        shifted: &[(DefId, usize)],
        solved: &HashMap<DefId, ExprId>,
        vars: &HashMap<DefId, Var>,
    ) -> Option<(Vec<DefId>, (ExprId, ExprId))> {
        if shifted.is_empty() {
            return None;
        }
        let hir = &*self.b.hir;
        let is_shifted = |d: DefId| shifted.iter().any(|s| s.0 == d);
        // Each solution is `p - r` with `r` a summed variable of the term.
        let mut shift = HashMap::new();
        for &(v, a) in shifted {
            let ExprKind::Binary(BinOp::Sub, p, r) = hir.exprs[solved[&v]].kind else { return None };
            let (ExprKind::Def(_), ExprKind::Def(r)) = (&hir.exprs[p].kind, &hir.exprs[r].kind) else { return None };
            if !vars.contains_key(r) || solved.contains_key(r) {
                return None;
            }
            shift.insert(v, (*r, a));
        }
        // The guards of the context must not mention them, and the
        // multiplier must read them in one tensor read only.
        let mentions = |e: ExprId| {
            hir.reachable([e]).into_iter().any(|x| matches!(hir.exprs[x].kind, ExprKind::Def(d) if is_shifted(d)))
        };
        if t.ctx.guards.iter().any(|&g| mentions(g)) {
            return None;
        }
        let mut read = None;
        for x in hir.reachable([t.m]) {
            match &hir.exprs[x].kind {
                ExprKind::Index { base, args } if args.iter().any(|&a| mentions(a)) => {
                    let ExprKind::Def(tensor) = hir.exprs[*base].kind else { return None };
                    if read.is_some() {
                        return None;
                    }
                    let axes: Vec<Option<DefId>> = args
                        .iter()
                        .map(|&a| match hir.exprs[a].kind {
                            ExprKind::Def(d) if is_shifted(d) => Some(d),
                            _ => None,
                        })
                        .collect();
                    // Every mention is a plain index, each variable once.
                    let plain: Vec<DefId> = axes.iter().flatten().copied().collect();
                    if args.iter().zip(&axes).any(|(&a, ax)| ax.is_none() && mentions(a)) || plain.len() != shift.len()
                    {
                        return None;
                    }
                    read = Some((x, tensor, args.clone(), axes));
                }
                ExprKind::Def(d) if is_shifted(*d) => {
                    // A mention outside an index (arithmetic on `v`) is
                    // checked through its enclosing read above or rejected
                    // here when it stands alone.
                    let _ = d;
                }
                _ => {}
            }
        }
        let (node, tensor, args, axes) = read?;
        // Reject mentions outside that read.
        let inside: std::collections::HashSet<ExprId> = hir.reachable([node]).into_iter().collect();
        if hir
            .reachable([t.m])
            .into_iter()
            .any(|x| !inside.contains(&x) && matches!(hir.exprs[x].kind, ExprKind::Def(d) if is_shifted(d)))
        {
            return None;
        }
        let u = t.u;
        let span = self.b.span;
        let name = format!("{}_pad", super::base_name(self.b.hir, tensor));
        let pad_def = self.b.hir.alloc_def(name, DefKind::Local, span);
        let mut slots = Vec::new();
        let mut src_args = Vec::new();
        let mut conds = Vec::new();
        let mut new_args = Vec::new();
        for (axis, (&arg, ax)) in args.iter().zip(&axes).enumerate() {
            let q = self.b.hir.alloc_def(format!("q{axis}"), DefKind::Index, span);
            match ax {
                Some(v) => {
                    let (r, a_u) = shift[v];
                    let (r_lo, r_hi) = (vars[&r].lo, vars[&r].hi);
                    let var = vars[v].clone();
                    // pad = r_hi - 1; extent = P + r_hi - 1 - r_lo.
                    let one = self.b.int(1);
                    let pad = self.b.sub(r_hi, one);
                    let p_ext = self.b.extent(u, a_u);
                    let one = self.b.int(1);
                    let r_hi2 = self.b.sub(r_hi, one);
                    let grown = self.b.bin(BinOp::Add, p_ext, r_hi2);
                    let ext = self.b.sub(grown, r_lo);
                    let zero = self.b.int(0);
                    slots.push(Slot::Var { def: q, range: Some(self.b.range(zero, ext)) });
                    let qr = self.b.def(q);
                    let at = self.b.sub(qr, pad);
                    let ge = self.b.bin(BinOp::Le, var.lo, at);
                    let qr = self.b.def(q);
                    let one = self.b.int(1);
                    let pad2 = self.b.sub(r_hi, one);
                    let at2 = self.b.sub(qr, pad2);
                    let lt = self.b.bin(BinOp::Lt, at2, var.hi);
                    conds.push(self.b.bin(BinOp::And, ge, lt));
                    let qr = self.b.def(q);
                    let one = self.b.int(1);
                    let pad3 = self.b.sub(r_hi, one);
                    src_args.push(self.b.sub(qr, pad3));
                    // The replacement read: `v + pad` (v substituted later).
                    let vr = self.b.def(*v);
                    let one = self.b.int(1);
                    let pad4 = self.b.sub(r_hi, one);
                    new_args.push(self.b.bin(BinOp::Add, vr, pad4));
                }
                None => {
                    let zero = self.b.int(0);
                    let hi = self.b.extent(tensor, axis);
                    slots.push(Slot::Var { def: q, range: Some(self.b.range(zero, hi)) });
                    src_args.push(self.b.def(q));
                    new_args.push(arg);
                }
            }
        }
        let k = self.cx.def_ty(u).elem().unwrap_or(ScalarKind::F32);
        let src = self.b.index(tensor, src_args);
        let cond = self.b.all(&conds)?;
        let body = self.b.select(cond, src, k);
        // The copy gives the padded definition fresh expressions of its own.
        let mut c = Copier::new();
        let def = IndexedDef { def: pad_def, slots, wheres: Vec::new(), body, span };
        let def = c.indexed(self.b.hir, &def, pad_def);
        self.out.push(Stmt::Indexed(def));
        let replacement = self.b.index(pad_def, new_args);
        Some((shift.keys().copied().collect(), (node, replacement)))
    }

    /// Whether `v` ranges exactly over axis `axis` of `u`.
    fn same_extent(&self, v: &Var, u: DefId, axis: usize) -> bool {
        let dim = |t: DefId, a: usize| match self.cx.def_ty(t) {
            Ty::Tensor(_, dims) => dims.get(a).cloned(),
            _ => None,
        };
        let Some(extent) = dim(u, axis) else { return false };
        if let Some((t, a)) = v.extent_of {
            if dim(t, a).as_ref() == Some(&extent) {
                return true;
            }
        }
        self.cx.tables.ranges.get(&v.def) == Some(&IndexRange { start: Dim::zero(), end: extent })
    }

    /// `lo <= v && v < hi`, in terms of the primal variable (substituted
    /// by its solution when copied).
    fn in_range(&mut self, v: &Var) -> ExprId {
        let x = self.b.def(v.def);
        let ge = self.b.bin(BinOp::Le, v.lo, x);
        let x = self.b.def(v.def);
        let lt = self.b.bin(BinOp::Lt, x, v.hi);
        self.b.bin(BinOp::And, ge, lt)
    }

    /// Solves `ix = target` for one unsolved variable of `vars`, if `ix`
    /// is affine in it with a positive literal stride: the variable, its
    /// solution and the divisibility guards.
    fn invert(
        &mut self,
        ix: ExprId,
        target: ExprId,
        vars: &HashMap<DefId, Var>,
        solved: &HashMap<DefId, ExprId>,
    ) -> Option<(DefId, ExprId, Vec<ExprId>)> {
        match self.b.hir.exprs[ix].kind.clone() {
            ExprKind::Def(v) if vars.contains_key(&v) && !solved.contains_key(&v) => Some((v, target, Vec::new())),
            ExprKind::Binary(op @ (BinOp::Add | BinOp::Sub), a, b) => {
                let tries: [(ExprId, ExprId, bool); 2] = [(a, b, true), (b, a, false)];
                for (pivot, other, first) in tries {
                    let t = match (op, first) {
                        (BinOp::Add, _) => self.b.sub(target, other),
                        (BinOp::Sub, true) => self.b.bin(BinOp::Add, target, other),
                        _ => self.b.sub(other, target),
                    };
                    if let Some((v, sol, g)) = self.invert(pivot, t, vars, solved) {
                        if !self.mentions(other, v) && !solved.keys().any(|s| self.mentions(other, *s)) {
                            return Some((v, sol, g));
                        }
                    }
                }
                None
            }
            ExprKind::Binary(BinOp::Mul, a, b) => {
                for (s, pivot) in [(a, b), (b, a)] {
                    let ExprKind::Lit(Lit::Int(n, _)) = self.b.hir.exprs[s].kind else { continue };
                    if n <= 0 {
                        continue;
                    }
                    let t = self.b.bin(BinOp::Div, target, s);
                    if let Some((v, sol, mut g)) = self.invert(pivot, t, vars, solved) {
                        let r = self.b.bin(BinOp::Rem, target, s);
                        let zero = self.b.int(0);
                        g.push(self.b.bin(BinOp::Eq, r, zero));
                        return Some((v, sol, g));
                    }
                }
                None
            }
            _ => None,
        }
    }

    fn mentions(&self, e: ExprId, d: DefId) -> bool {
        self.b.hir.reachable([e]).into_iter().any(|x| matches!(self.b.hir.exprs[x].kind, ExprKind::Def(v) if v == d))
    }
}

/// A dimension as an expression, when it is a constant or one dimension
/// symbol or integer parameter (others come from reads instead).
fn dim_expr(b: &mut Build, d: &Dim) -> Option<ExprId> {
    if let Some(c) = d.as_constant() {
        return Some(b.int(c));
    }
    let v = d.as_var()?;
    if v.0 >= crate::analysis::HIDDEN_DIM_BASE {
        return None;
    }
    let def = DefId::from_raw(v.0);
    if def.index() >= b.hir.defs.len() || !matches!(b.hir.defs[def].kind, DefKind::Dim | DefKind::Param) {
        return None;
    }
    Some(b.def(def))
}

/// `max[a, b, ..](e)` as `max[a](max[b, ..](e))`: the outer variable's
/// first extremum, then the inner ones' within it, is the first extremum in
/// row-major order, and every selection is a single-variable `argmax`.
pub(super) fn nest_extremum(
    b: &mut Build,
    p: &mut Point,
    op: RedOp,
    vars: Vec<RedVar>,
    wheres: Vec<Where>,
    body: ExprId,
    k: ScalarKind,
) -> (Vec<RedVar>, Vec<Where>, ExprId) {
    if !matches!(op, RedOp::Max | RedOp::Min) || vars.len() < 2 {
        return (vars, wheres, body);
    }
    let mut vars = vars;
    let inner_vars = vars.split_off(1);
    let inner = b.e(ExprKind::Reduce { op, vars: inner_vars, wheres, body });
    p.kinds.insert(inner, k);
    (vars, Vec::new(), inner)
}

/// The product of a `prod` reduction's factors at every point but the
/// current one: its derivative with respect to the current factor, exact
/// when another factor is zero.
pub(super) fn other_factors(b: &mut Build, vars: &[RedVar], wheres: &[Where], body: ExprId) -> ExprId {
    let (nv, mut nw, nb, fresh) = Point::renamed(b.hir, body, vars, wheres);
    let same: Vec<ExprId> = vars
        .iter()
        .zip(&fresh)
        .map(|(v, f)| {
            let (a, c) = (b.def(v.def), b.def(*f));
            b.bin(BinOp::Eq, a, c)
        })
        .collect();
    if let Some(all) = b.all(&same) {
        let other = b.e(ExprKind::Unary(UnOp::Not, all));
        nw.push(Where::Guard(other));
    }
    b.e(ExprKind::Reduce { op: RedOp::Prod, vars: nv, wheres: nw, body: nb })
}

/// Whether `match scrutinee { arms }` takes arm `i`: the same patterns and
/// guards, with `true` as arm `i`'s value and `false` as the others'.
fn taken_arm(b: &mut Build, scrutinee: ExprId, arms: &[crate::hir::Arm], i: usize) -> ExprId {
    let arms = arms
        .iter()
        .enumerate()
        .map(|(j, a)| {
            let body = b.e(ExprKind::Lit(Lit::Bool(j == i)));
            crate::hir::Arm { pat: a.pat.clone(), guard: a.guard, body, span: a.span }
        })
        .collect();
    b.e(ExprKind::Match { scrutinee, arms })
}

/// The condition that the current point of a `max` / `min` reduction over
/// `vars` is the one it selects: the first extremum (row-major order over
/// the variables) on ties. Written with renamed copies of the reduction,
/// so no variable of the point is captured inside them.
pub(super) fn selected(b: &mut Build, op: RedOp, vars: &[RedVar], wheres: &[Where], body: ExprId) -> ExprId {
    if let [v] = vars {
        let (nv, nw, nb, _) = Point::renamed(b.hir, body, vars, wheres);
        let arg = if op == RedOp::Max { RedOp::ArgMax } else { RedOp::ArgMin };
        let pick = b.e(ExprKind::Reduce { op: arg, vars: nv, wheres: nw, body: nb });
        let here = b.def(v.def);
        return b.bin(BinOp::Eq, here, pick);
    }
    let (mv, mw, mb, _) = Point::renamed(b.hir, body, vars, wheres);
    let m = b.e(ExprKind::Reduce { op, vars: mv, wheres: mw, body: mb });
    let is_extreme = b.bin(BinOp::Eq, body, m);
    // No earlier point reaches the extremum.
    let (ev, mut ew, eb, fresh) = Point::renamed(b.hir, body, vars, wheres);
    let mut earlier: Option<ExprId> = None;
    for (v, f) in vars.iter().zip(&fresh).rev() {
        let (a, c) = (b.def(*f), b.def(v.def));
        let lt = b.bin(BinOp::Lt, a, c);
        earlier = Some(match earlier {
            None => lt,
            Some(rest) => {
                let (a, c) = (b.def(*f), b.def(v.def));
                let eq = b.bin(BinOp::Eq, a, c);
                let tie = b.bin(BinOp::And, eq, rest);
                b.bin(BinOp::Or, lt, tie)
            }
        });
    }
    ew.extend(earlier.map(Where::Guard));
    let hit = b.bin(BinOp::Eq, eb, m);
    let any = b.e(ExprKind::Reduce { op: RedOp::Any, vars: ev, wheres: ew, body: hit });
    let none = b.e(ExprKind::Unary(UnOp::Not, any));
    b.bin(BinOp::And, is_extreme, none)
}

/// A recurrence whose adjoint carries the adjoint of its recurrent
/// clause's argument (see `Rev::inner_carry`).
struct Carry {
    clause: usize,
    /// The argument `a` of `v[t, ..] = f(a)`.
    inner: ExprId,
    /// `f'` at the adjoint's point (1 at the boundary steps).
    factor: ExprId,
}

/// Which contributions of a statement to keep: all of them, those to the
/// statement's own binding (the steps of an adjoint recurrence, with their
/// lag), or those to other bindings.
enum Keep {
    All,
    SelfOnly(Lags),
    Others,
}

struct Lags {
    axis: usize,
    out: Vec<(usize, ExprId)>,
}

impl Lags {
    /// The `c` of a read `v[.., t - c, ..]`.
    fn lag(&self, hir: &Hir, idx: &[ExprId]) -> usize {
        match idx.get(self.axis).map(|&e| &hir.exprs[e].kind) {
            Some(ExprKind::Binary(BinOp::Sub, _, c)) => match hir.exprs[*c].kind {
                ExprKind::Lit(Lit::Int(n, _)) => usize::try_from(n).unwrap_or(1),
                _ => 1,
            },
            _ => 1,
        }
    }
}

/// The point `vars` of the whole-tensor expression `e`: tensor values read
/// at `vars`, scalars as they are. New nodes get their float kind in
/// `point.kinds`, so derivative rules can see them.
pub(super) fn pointwise(
    b: &mut Build,
    cx: &Cx,
    point: &mut Point,
    e: ExprId,
    vars: &[DefId],
) -> Result<ExprId, Diagnostic> {
    let ty = cx.tables.expr_ty.get(e.index()).cloned().unwrap_or(Ty::Error);
    let Ty::Tensor(k, dims) = ty else { return Ok(e) };
    let span = b.span;
    let at = |b: &mut Build, n: usize| -> Vec<ExprId> { vars[vars.len() - n..].iter().map(|&v| b.def(v)).collect() };
    let new = match b.hir.exprs[e].kind.clone() {
        ExprKind::Def(d) => {
            let args = at(b, dims.len());
            b.index(d, args)
        }
        ExprKind::Index { base, mut args } => {
            let ExprKind::Def(_) = b.hir.exprs[base].kind else {
                return Err(Diagnostic::error(span, "cannot differentiate through a part of a computed tensor"));
            };
            args.extend(at(b, dims.len()));
            b.e(ExprKind::Index { base, args })
        }
        ExprKind::Unary(op, a) => {
            let a = pointwise(b, cx, point, a, vars)?;
            b.e(ExprKind::Unary(op, a))
        }
        ExprKind::Binary(op, x, y) => {
            let x = pointwise(b, cx, point, x, vars)?;
            let y = pointwise(b, cx, point, y, vars)?;
            let n = b.e(ExprKind::Binary(op, x, y));
            if let Some(f) = cx.tables.intrinsic.get(&e) {
                point.intrinsics.insert(n, *f);
            }
            n
        }
        ExprKind::Cast(a, to) => {
            let a = pointwise(b, cx, point, a, vars)?;
            b.e(ExprKind::Cast(a, to))
        }
        // `{ e }` (a branch a rank test selected, an inlined body's tail).
        ExprKind::Block(crate::hir::Block { stmts, tail: Some(t) }) if stmts.is_empty() => {
            return pointwise(b, cx, point, t, vars);
        }
        ExprKind::Call { callee: callee @ Callee::Fn(_), callee_span, args } if matches!(callee, Callee::Fn(g) if super::rule_of(b.hir, cx.tables.instance_calls.get(&e).copied().unwrap_or(g)).is_some_and(|r| super::rule_is_elementwise(b.hir, r))) =>
        {
            let args = args.iter().map(|a| pointwise(b, cx, point, *a, vars)).collect::<Result<_, _>>()?;
            b.e(ExprKind::Call { callee, callee_span, args })
        }
        ExprKind::Call { callee: callee @ Callee::Intrinsic(_), callee_span, args } => {
            let args = args.iter().map(|a| pointwise(b, cx, point, *a, vars)).collect::<Result<_, _>>()?;
            b.e(ExprKind::Call { callee, callee_span, args })
        }
        ExprKind::If { cond, then, els: Some(els) } => {
            let then = pointwise(b, cx, point, then, vars)?;
            let els = pointwise(b, cx, point, els, vars)?;
            b.e(ExprKind::If { cond, then, els: Some(els) })
        }
        // `[a, b, c]` at `i, rest`: `if i == 0 { a[rest] } else if ...`.
        ExprKind::Array(items) if !items.is_empty() => {
            let axis = vars[vars.len() - dims.len()];
            let mut chosen = pointwise(b, cx, point, items[items.len() - 1], vars)?;
            for (n, &item) in items.iter().enumerate().rev().skip(1) {
                let here = pointwise(b, cx, point, item, vars)?;
                let i = b.def(axis);
                let lit = b.int(n as i64);
                let cond = b.bin(BinOp::Eq, i, lit);
                chosen = b.e(ExprKind::If { cond, then: here, els: Some(chosen) });
                if k.is_float() {
                    point.kinds.insert(chosen, k);
                }
            }
            chosen
        }
        _ => {
            return Err(Diagnostic::error(span, "cannot differentiate through this whole-tensor expression")
                .help("write it with indices: `let v[i, j] = ...;`"))
        }
    };
    if k.is_float() {
        point.kinds.insert(new, k);
    }
    Ok(new)
}
