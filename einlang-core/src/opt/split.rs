//! Index-set splitting: a recurrence clause whose value is an `if` on its
//! own indices becomes one clause per piece of its domain, each computing
//! the branch taken there.
//!
//! A dynamic program written as one clause with its boundary in branches,
//!
//! ```text
//! let d[i in 0..N + 1, j in 0..M + 1] = if i == 0 { j } else if j == 0 { i } else { .. };
//! ```
//!
//! becomes the three clauses a user could have written (`d[0, j]`,
//! `d[i in 1.., 0]`, `d[i in 1.., j in 1..]`), and a stencil whose border is
//! a branch (`if i == 0 || i == N - 1 || .. { 0.0 } else { .. }`) becomes
//! its border stripes and its interior. The interior then runs without a
//! test per point, and the back end's treatment of clauses (rows in lanes,
//! runs of a row without cover tests) applies to it. Reads in the branch
//! are already unchecked where the condition keeps them inside (analysis
//! narrows an index in both branches of an `if`).
//!
//! A condition splits when it compares an index of the clause (a
//! sequential loop or one of the clause's own loops), with coefficient 1
//! or -1, against an integer expression of variables defined before the
//! recurrence (`i == 0`, `j < N - 1`, `1 + i > K`), or is `!`, `&&` or `||` of
//! such comparisons, or of comparisons the piece decides. Each piece's
//! ranges are the clause's cut at the comparison's bound, clamped into the
//! clause's range, so the pieces cover exactly the clause's points for
//! every value of the variables; pieces provably empty are dropped. A
//! clause that would split into more than [`MAX_PIECES`] pieces stays whole.
//! Clauses split in place: the pieces are disjoint, so source order among
//! the recurrence's clauses is kept.

use std::collections::{HashMap, HashSet};

use crate::base::dim::{Dim, DimVar};
use crate::base::ops::{BinOp, UnOp};
use crate::base::scalar::ScalarKind;
use crate::ir::affine::Affine;
use crate::ir::cost::expr_cost;
use crate::ir::visit;
use crate::ir::{
    Cover, EntryCheck, Expr, ExprKind, Function, Loop, RecClause, Recurrence, Repr, Stmt, VarId, WhereEntry,
};

/// The most clauses one clause may become (a 3-D border with its first
/// step is seven).
pub const MAX_PIECES: usize = 16;

/// Splits the clauses of every recurrence in `f` (its statements and those
/// of blocks inside them).
pub fn run(f: &mut Function) {
    // The dimensions bound from shapes are never negative.
    let mut nonneg = HashSet::new();
    for c in &f.entry {
        if let EntryCheck::BindDim { dim, .. } = c {
            nonneg.insert(*dim);
        }
    }
    let mut body = std::mem::take(&mut f.body);
    stmts(f, &mut body, &mut nonneg);
    f.body = body;
    let mut result = std::mem::replace(&mut f.result, Expr::unit());
    expr(f, &mut result, &nonneg);
    f.result = result;
}

/// Splits the recurrences of `list`; `nonneg` holds the variables known
/// not to be negative where the list starts, and gains the extents it
/// checks.
fn stmts(f: &mut Function, list: &mut [Stmt], nonneg: &mut HashSet<VarId>) {
    for s in list.iter_mut() {
        match s {
            // An extent is checked not negative, and so is a variable it
            // equals (`steps` in `t in 0..steps`).
            Stmt::Extent { var, value, .. } => {
                nonneg.insert(*var);
                nonneg.extend(value.as_var().map(|v| VarId(v.0)));
            }
            // So is an extent of the recurrence that is one variable:
            // the back ends check the extents of its other axes before
            // its steps, and no step runs when a sequential one is
            // negative.
            Stmt::Recurrence(r) => {
                let mut known = nonneg.clone();
                known.extend(r.extents.iter().filter_map(|e| e.as_var()).map(|v| VarId(v.0)));
                split_recurrence(f, r, &known);
            }
            _ => {}
        }
        let known = nonneg.clone();
        visit::for_each_stmt_expr_mut(s, &mut |e| expr(f, e, &known));
    }
}

fn expr(f: &mut Function, e: &mut Expr, nonneg: &HashSet<VarId>) {
    if let ExprKind::Block { stmts: list, .. } = &mut e.kind {
        stmts(f, list, &mut nonneg.clone());
    }
    visit::for_each_child_mut(e, &mut |x| expr(f, x, nonneg));
}

fn split_recurrence(f: &mut Function, r: &mut Recurrence, nonneg: &HashSet<VarId>) {
    let mut clauses = Vec::with_capacity(r.clauses.len());
    for c in std::mem::take(&mut r.clauses) {
        match split_clause(f, r, &c, nonneg) {
            Some(pieces) => clauses.extend(pieces),
            None => clauses.push(c),
        }
    }
    r.clauses = clauses;
}

/// The range `[lo, hi)` of one index of a clause.
#[derive(Clone, Debug, PartialEq)]
struct Span {
    var: VarId,
    lo: Dim,
    hi: Dim,
}

/// The clause's pieces, or None when it does not split (no `if` on its
/// indices at the top of its value, or too many pieces).
fn split_clause(f: &mut Function, r: &Recurrence, c: &RecClause, nonneg: &HashSet<VarId>) -> Option<Vec<RecClause>> {
    if !c.prelude.is_empty() || !matches!(c.body.kind, ExprKind::If { .. }) {
        return None;
    }
    let mut spans = Vec::new();
    for ((_, l), cover) in r.seq.iter().zip(&c.cover) {
        let (lo, hi) = match cover {
            Cover::At(n) => (Dim::constant(*n), Dim::constant(n.checked_add(1)?)),
            Cover::Range(a, b) => (a.clone(), b.clone()),
        };
        spans.push(Span { var: l.index, lo, hi });
    }
    spans.extend(c.loops.iter().map(|l| Span { var: l.index, lo: l.start.clone(), hi: l.end.clone() }));
    // The pieces' ends are folded by `Dim`, whose proofs take every
    // variable as non-negative: the ends may mention only such variables.
    if !spans.iter().all(|s| known_nonneg(&s.lo, nonneg) && known_nonneg(&s.hi, nonneg)) {
        return None;
    }
    let cx = Cx { nonneg };
    let mut pieces = Vec::new();
    cx.pieces(spans, &c.body, &mut pieces)?;
    if pieces.len() == 1 && pieces[0].1 == c.body {
        return None;
    }
    let seq = r.seq.len();
    let mut out = Vec::with_capacity(pieces.len());
    for (n, (mut spans, mut body)) in pieces.into_iter().enumerate() {
        // Every piece after the first defines its variables anew: its
        // loops, and what its value binds inside.
        if n > 0 {
            freshen(f, &mut spans[seq..], &mut body)?;
        }
        out.push({
            let cover = spans[..seq]
                .iter()
                .map(|s| match (s.lo.as_constant(), s.hi.as_constant()) {
                    (Some(a), Some(b)) if b == a + 1 => Cover::At(a),
                    _ => Cover::Range(s.lo.clone(), s.hi.clone()),
                })
                .collect();
            let loops =
                spans[seq..].iter().map(|s| Loop { index: s.var, start: s.lo.clone(), end: s.hi.clone() }).collect();
            RecClause { cover, at: c.at.clone(), loops, cost_per_point: expr_cost(&body), body, prelude: Vec::new() }
        });
    }
    Some(out)
}

/// Gives the loops of `spans` and the variables `body` binds new
/// variables, renaming their uses in `body`. None when `body` binds
/// variables in a form this does not rename (blocks, collections).
fn freshen(f: &mut Function, spans: &mut [Span], body: &mut Expr) -> Option<()> {
    let mut map = HashMap::new();
    let mut defined = Vec::new();
    visit::defined_in(body, &mut defined);
    for v in spans.iter().map(|s| s.var).chain(defined) {
        let info = f.var(v).clone();
        map.insert(v, f.add_var(&info.source_name, info.ty));
    }
    for s in spans.iter_mut() {
        s.var = map[&s.var];
    }
    rename(body, &map)
}

/// Renames the variables `e` defines and reads by `map`; None at a form
/// whose variables it does not rename.
pub(super) fn rename(e: &mut Expr, map: &HashMap<VarId, VarId>) -> Option<()> {
    let var = |v: &mut VarId| {
        if let Some(to) = map.get(v) {
            *v = *to;
        }
    };
    let dim = |d: &mut Dim| *d = d.substitute(&|x| map.get(&VarId(x.0)).map(|v| Dim::var(DimVar(v.0))));
    let wheres = |ws: &mut [WhereEntry]| {
        for w in ws {
            if let WhereEntry::Bind(v, _) = w {
                var(v);
            }
        }
    };
    match &mut e.kind {
        ExprKind::Var(v) => var(v),
        ExprKind::Dim(d) => dim(d),
        ExprKind::Read { tensor, .. } | ExprKind::View { tensor, .. } | ExprKind::Len { tensor, .. } => var(tensor),
        ExprKind::Reduce { loops, wheres: ws, .. } => {
            for l in loops {
                var(&mut l.index);
                dim(&mut l.start);
                dim(&mut l.end);
            }
            wheres(ws);
        }
        ExprKind::Guarded { wheres: ws, .. } => wheres(ws),
        ExprKind::Lit(_)
        | ExprKind::Unary(..)
        | ExprKind::Binary(..)
        | ExprKind::Cast(..)
        | ExprKind::Intrinsic(..)
        | ExprKind::Call { .. }
        | ExprKind::If { .. }
        | ExprKind::Tuple(_)
        | ExprKind::Field(..)
        | ExprKind::Format(_)
        | ExprKind::Print(_)
        | ExprKind::Assert { .. } => {}
        _ => return None,
    }
    let mut ok = Some(());
    visit::for_each_child_mut(e, &mut |x| ok = ok.and_then(|()| rename(x, map)));
    ok
}

/// What splitting a clause knows: the variables a bound may mention
/// (known not to be negative, so defined before the recurrence, never
/// the clause's own).
struct Cx<'a> {
    nonneg: &'a HashSet<VarId>,
}

/// Whether every variable of `d` is known not to be negative.
fn known_nonneg(d: &Dim, nonneg: &HashSet<VarId>) -> bool {
    d.vars().into_iter().all(|v| nonneg.contains(&VarId(v.0)))
}

/// A comparison `var op bound` (`op` one of `<`, `<=`, `>`, `>=`, `==`,
/// `!=`) with `bound` free of the clause's own variables.
struct Cut {
    var: VarId,
    op: BinOp,
    bound: Dim,
}

impl Cx<'_> {
    /// Pushes the pieces of `spans` and the value computed there: through
    /// every `if` at the top of `body` that the pieces decide. None when
    /// more than `MAX_PIECES`.
    fn pieces(&self, spans: Vec<Span>, body: &Expr, out: &mut Vec<(Vec<Span>, Expr)>) -> Option<()> {
        if let ExprKind::If { cond, then, els } = &body.kind {
            if let Some(parts) = self.decide(spans.clone(), cond) {
                for (spans, holds) in parts {
                    self.pieces(spans, if holds { then } else { els }, out)?;
                }
                return (out.len() <= MAX_PIECES).then_some(());
            }
        }
        out.push((spans, body.clone()));
        (out.len() <= MAX_PIECES).then_some(())
    }

    /// `spans` cut into pieces on each of which `cond` has one value, or
    /// None when `cond` is not made of comparisons that cut them.
    fn decide(&self, spans: Vec<Span>, cond: &Expr) -> Option<Vec<(Vec<Span>, bool)>> {
        match &cond.kind {
            ExprKind::Unary(UnOp::Not, x) => {
                Some(self.decide(spans, x)?.into_iter().map(|(s, holds)| (s, !holds)).collect())
            }
            ExprKind::Binary(op @ (BinOp::And | BinOp::Or), a, b) => {
                // `a && b`: false where `a` is; elsewhere `b` decides.
                // `a || b`: true where `a` is.
                let settled = *op == BinOp::Or;
                let mut out = Vec::new();
                for (s, holds) in self.decide(spans, a)? {
                    if holds == settled {
                        out.push((s, holds));
                    } else {
                        out.extend(self.decide(s, b)?);
                    }
                }
                Some(out)
            }
            ExprKind::Binary(op, a, b) if op.is_comparison() => {
                let cut = self.cut(&spans, *op, a, b)?;
                cut_spans(spans, &cut)
            }
            _ => None,
        }
    }

    /// `a op b` as `var op' bound` for one index of `spans`.
    fn cut(&self, spans: &[Span], op: BinOp, a: &Expr, b: &Expr) -> Option<Cut> {
        let int = Repr::Scalar(ScalarKind::I64);
        if a.ty != int || b.ty != int {
            return None;
        }
        spans.iter().find_map(|s| {
            let (ca, ra) = Affine::in_var(a, s.var)?;
            let (cb, rb) = Affine::in_var(b, s.var)?;
            // `ca v + ra op cb v + rb`, so `(ca - cb) v op rb - ra`.
            let bound = rb.sub(&ra);
            if !known_nonneg(&bound, self.nonneg) {
                return None;
            }
            match ca.checked_sub(cb)? {
                1 => Some(Cut { var: s.var, op: flip(flip(op)?)?, bound }),
                // `-v op x` is `v op' -x` with the comparison flipped.
                -1 => Some(Cut { var: s.var, op: flip(op)?, bound: bound.neg() }),
                _ => None,
            }
        })
    }
}

/// `op` with its operands swapped.
fn flip(op: BinOp) -> Option<BinOp> {
    Some(match op {
        BinOp::Lt => BinOp::Gt,
        BinOp::Le => BinOp::Ge,
        BinOp::Gt => BinOp::Lt,
        BinOp::Ge => BinOp::Le,
        BinOp::Eq => BinOp::Eq,
        BinOp::Ne => BinOp::Ne,
        _ => return None,
    })
}

/// The pieces of `spans` on which `cut` is true or false, in order along
/// its index, less those provably empty.
fn cut_spans(spans: Vec<Span>, cut: &Cut) -> Option<Vec<(Vec<Span>, bool)>> {
    let k = spans.iter().position(|s| s.var == cut.var)?;
    let (lo, hi) = (spans[k].lo.clone(), spans[k].hi.clone());
    // A point of the range: `max(lo, min(hi, x))`, so every piece lies
    // inside `[lo, hi)` and the pieces cover it for any values.
    let clamp = |x: Dim| Dim::max(&lo, &Dim::min(&hi, &x));
    let b = &cut.bound;
    // Cut points and the value on each side: `v < b` is true below `b`.
    let (points, values): (Vec<Dim>, Vec<bool>) = match cut.op {
        BinOp::Lt => (vec![clamp(b.clone())], vec![true, false]),
        BinOp::Le => (vec![clamp(b.add_const(1))], vec![true, false]),
        BinOp::Gt => (vec![clamp(b.add_const(1))], vec![false, true]),
        BinOp::Ge => (vec![clamp(b.clone())], vec![false, true]),
        BinOp::Eq => (vec![clamp(b.clone()), clamp(b.add_const(1))], vec![false, true, false]),
        BinOp::Ne => (vec![clamp(b.clone()), clamp(b.add_const(1))], vec![true, false, true]),
        _ => return None,
    };
    let mut bounds = vec![lo.clone()];
    bounds.extend(points);
    bounds.push(hi.clone());
    let mut out = Vec::new();
    for (w, holds) in bounds.windows(2).zip(values) {
        if w[1].prove_le(&w[0]).is_true() {
            continue;
        }
        let mut s = spans.clone();
        s[k].lo = w[0].clone();
        s[k].hi = w[1].clone();
        out.push((s, holds));
    }
    Some(out)
}
