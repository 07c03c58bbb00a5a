//! Range inference and bounds checking for one unit (statement).
//!
//! Constraints on an index variable `v` come from
//! - an explicit range in brackets (`v in a..b`), which is final;
//! - direct reads `T[.., v, ..]`: `v` ranges over that axis. Several direct
//!   reads must agree: equal extents are fine, provably different ones are
//!   an error naming both, undecidable ones are checked at run time;
//! - affine reads `T[.., c * v + rest, ..]` with a constant `c > 0` once the
//!   other index variables in `rest` have ranges: the largest range for
//!   which the read stays in bounds, `end = (len - 1 - max(rest)) / c + 1`,
//!   and a start that keeps `c * start + min(rest) >= 0`.
//!
//! The range of `v` is the intersection of its candidates. Afterwards every
//! read is checked against its tensor using the final ranges, narrowed by
//! any enclosing index guards.

use std::collections::HashSet;

use super::{dim_var, Cx, Dim, DimVar, IndexRange, Narrowing, Read, SameExtent, Truth, Unit, HIDDEN_DIM_BASE};
use crate::base::ops::{BinOp, UnOp};
use crate::diag::Diagnostic;
use crate::hir::{DefId, DefKind, ExprId, ExprKind};

/// An upper or lower candidate derived from one read.
struct Candidate {
    start: Dim,
    end: Dim,
}

impl<'a> Cx<'a> {
    fn index_def(&self, v: DimVar) -> Option<DefId> {
        if v.0 >= HIDDEN_DIM_BASE || v.0 as usize >= self.hir.defs.len() {
            return None;
        }
        let d = DefId::from_raw(v.0);
        (self.hir.defs[d].kind == DefKind::Index).then_some(d)
    }

    /// Whether `v` is a value that may be negative at run time: an `i64`
    /// parameter or a range bound evaluated at run time. The algebra
    /// treats every variable as non-negative, which is true of extents and
    /// of indices over them, not of these.
    fn is_signed(&self, v: DimVar) -> bool {
        // The hidden dimensions of run-time bounds are values, not extents.
        self.t.runtime_bounds.values().chain(self.t.point_bounds.values()).any(|h| *h == v)
            || (v.0 < HIDDEN_DIM_BASE
                && (v.0 as usize) < self.hir.defs.len()
                && self.hir.defs[DefId::from_raw(v.0)].kind == DefKind::Param)
    }

    /// `d` with each signed variable `v` written as `v⁺ - s`, for fresh
    /// non-negative `v⁺` and one shared `s`: every assignment of integers
    /// to the signed variables is one of non-negative values to these, so
    /// what the prover shows about the result holds for every value `d`
    /// can take.
    pub(super) fn signed_view(&self, d: &Dim) -> Dim {
        if !d.vars().into_iter().any(|v| self.is_signed(v)) {
            return d.clone();
        }
        let shift = Dim::var(DimVar(u32::MAX));
        d.substitute(&|v| self.is_signed(v).then(|| Dim::var(DimVar(v.0 | 1 << 31)).sub(&shift)))
    }

    /// Whether `0 <= d` for every value `d`'s variables can take.
    pub(super) fn proven_nonneg(&self, d: &Dim) -> Truth {
        Dim::zero().prove_le(&self.signed_view(d))
    }

    /// Whether `d < len`, likewise.
    fn proven_below(&self, d: &Dim, len: &Dim) -> Truth {
        self.signed_view(d).prove_lt(&self.signed_view(len))
    }

    /// Whether `d` mentions an extent of a recurrence not known yet.
    fn is_placeholder(&self, d: &Dim) -> bool {
        d.vars().iter().any(|v| self.recs.iter().any(|r| r.placeholders.contains(v)))
    }

    /// The index variables a dimension expression mentions.
    pub(super) fn index_vars(&self, d: &Dim) -> Vec<DefId> {
        d.vars().into_iter().filter_map(|v| self.index_def(v)).collect()
    }

    /// Narrowings implied by a condition that is a conjunction of
    /// comparisons between an index variable and an integer expression.
    pub(super) fn narrowings_of(&self, cond: ExprId) -> Vec<Narrowing> {
        let mut out = Vec::new();
        self.collect_narrowings(cond, true, &mut out);
        out
    }

    /// Narrowings implied by a condition being false (in an `else`): of
    /// a disjunction of comparisons, each comparison's negation.
    pub(super) fn negated_narrowings_of(&self, cond: ExprId) -> Vec<Narrowing> {
        let mut out = Vec::new();
        self.collect_narrowings(cond, false, &mut out);
        out
    }

    /// Pushes what `cond == holds` implies.
    fn collect_narrowings(&self, cond: ExprId, holds: bool, out: &mut Vec<Narrowing>) {
        let (op, a, b) = match &self.hir.exprs[cond].kind {
            ExprKind::Unary(UnOp::Not, x) => return self.collect_narrowings(*x, !holds, out),
            ExprKind::Binary(op, a, b) => (*op, *a, *b),
            _ => return,
        };
        // A conjunction that holds, or a disjunction that fails: each part.
        if (op == BinOp::And && holds) || (op == BinOp::Or && !holds) {
            self.collect_narrowings(a, holds, out);
            self.collect_narrowings(b, holds, out);
            return;
        }
        if !op.is_comparison() {
            return;
        }
        for (var, op, bound) in self.solved_comparison(a, op, b) {
            // What fails is the opposite comparison.
            let op = match (op, holds) {
                (op, true) => op,
                (BinOp::Lt, false) => BinOp::Ge,
                (BinOp::Le, false) => BinOp::Gt,
                (BinOp::Gt, false) => BinOp::Le,
                (BinOp::Ge, false) => BinOp::Lt,
                (BinOp::Eq, false) => BinOp::Ne,
                (BinOp::Ne, false) => BinOp::Eq,
                _ => continue,
            };
            let (lo, hi, except) = match op {
                BinOp::Lt => (None, Some(bound), None),
                BinOp::Le => (None, Some(bound.add_const(1)), None),
                BinOp::Gt => (Some(bound.add_const(1)), None, None),
                BinOp::Ge => (Some(bound), None, None),
                BinOp::Eq => (Some(bound.clone()), Some(bound.add_const(1)), None),
                BinOp::Ne => (None, None, Some(bound)),
                _ => continue,
            };
            out.push(Narrowing { var, lo, hi, except });
        }
    }

    /// The comparison `a op b` of two integer expressions solved for each
    /// index variable it mentions with coefficient 1 or -1, as
    /// `var op' bound` (`i + 1 < N` is `i < N - 1`; `N - i > 2` is
    /// `i < N - 2`; `i + j < N` bounds both). The bounds are exact over the
    /// integers: no division is involved.
    fn solved_comparison(&self, a: ExprId, op: BinOp, b: ExprId) -> Vec<(DefId, BinOp, Dim)> {
        let (Some(da), Some(db)) = (self.to_dim(a), self.to_dim(b)) else {
            return Vec::new();
        };
        // `a op b` is `diff op 0`.
        let diff = da.sub(&db);
        let flip = |op: BinOp| match op {
            BinOp::Lt => BinOp::Gt,
            BinOp::Le => BinOp::Ge,
            BinOp::Gt => BinOp::Lt,
            BinOp::Ge => BinOp::Le,
            other => other,
        };
        let mut out = Vec::new();
        for v in self.index_vars(&diff) {
            let var = dim_var(v);
            // `diff = c * v + rest`, `rest` free of `v`.
            let rest = diff.substitute(&|x| (x == var).then(Dim::zero));
            match Self::coefficient(&diff, v) {
                // `v + rest op 0` is `v op -rest`.
                Some(1) => out.push((v, op, rest.neg())),
                // `rest - v op 0` is `rest op v`, that is `v flip(op) rest`.
                Some(-1) => out.push((v, flip(op), rest)),
                _ => {}
            }
        }
        out
    }

    /// The effective range of `v` under `narrow`: its range cut by the
    /// bounds, then by the excluded points at either end (repeatedly:
    /// `i != 0 && i != 1` starts at 2).
    fn range_under(&self, v: DefId, narrow: &[Narrowing]) -> Option<IndexRange> {
        let r = self.t.ranges.get(&v)?;
        let mut start = r.start.clone();
        let mut end = r.end.clone();
        let mine: Vec<&Narrowing> = narrow.iter().filter(|n| n.var == v).collect();
        for n in &mine {
            if let Some(lo) = &n.lo {
                start = Dim::max(&start, lo);
            }
            if let Some(hi) = &n.hi {
                end = Dim::min(&end, hi);
            }
        }
        let excepts: Vec<&Dim> = mine.iter().filter_map(|n| n.except.as_ref()).collect();
        for _ in 0..excepts.len() {
            for x in &excepts {
                if x.prove_eq(&start).is_true() {
                    start = start.add_const(1);
                } else if x.prove_eq(&end.add_const(-1)).is_true() {
                    end = end.add_const(-1);
                }
            }
        }
        Some(IndexRange { start, end })
    }

    /// The coefficient of `v` in `d` when `d` is affine in `v` with a
    /// constant coefficient.
    fn coefficient(d: &Dim, v: DefId) -> Option<i64> {
        let var = dim_var(v);
        let at1 = d.substitute(&|x| (x == var).then(Dim::one));
        let at0 = d.substitute(&|x| (x == var).then(Dim::zero));
        let at2 = d.substitute(&|x| (x == var).then(|| Dim::constant(2)));
        let c = at1.sub(&at0).as_constant()?;
        // Affine: the step from 1 to 2 equals the step from 0 to 1.
        (at2.sub(&at1).as_constant()? == c).then_some(c)
    }

    /// The largest (`max`) or smallest value of `d` over the ranges of the
    /// index variables it mentions.
    pub(super) fn extremum(&self, d: &Dim, max: bool, narrow: &[Narrowing]) -> Option<Dim> {
        self.extremum_keeping(d, max, narrow, None)
    }

    /// `extremum`, leaving the index variable `keep` as it is: the bounds of
    /// other variables may mention it (`k in 0..i + 1` read as `x[i - k]`).
    fn extremum_keeping(&self, d: &Dim, max: bool, narrow: &[Narrowing], keep: Option<DefId>) -> Option<Dim> {
        let mut cur = d.clone();
        // Ranges may mention other index variables (`k in 0..i`); a few
        // rounds of substitution eliminate them.
        // The latest-defined variable first: its range may mention earlier
        // ones (`k - i` with `k in 0..i` is at most -1), never the reverse.
        for _ in 0..16 {
            let Some(v) = self.index_vars(&cur).into_iter().filter(|v| Some(*v) != keep).max_by_key(|v| v.raw()) else {
                return Some(cur);
            };
            let c = Self::coefficient(&cur, v)?;
            let r = self.range_under(v, narrow)?;
            let value = if (c > 0) == max { r.end.add_const(-1) } else { r.start.clone() };
            let var = dim_var(v);
            cur = cur.substitute(&|x| (x == var).then(|| value.clone()));
        }
        None
    }

    /// The candidate range of `v` from one read axis `arg` of length `len`,
    /// when the other index variables of `arg` already have ranges. Those
    /// ranges may mention `v` (`sum[k in 0..i + 1](x[i - k])`): the largest
    /// and smallest values of the read are then affine in `v` themselves,
    /// and `v` ranges where both stay in bounds (`i - 0 < len` and `i - i
    /// >= 0` give `i in 0..len`).
    fn affine_candidate(&self, v: DefId, arg: &Dim, len: &Dim) -> Option<Candidate> {
        let c = Self::coefficient(arg, v)?;
        if c <= 0 {
            return None;
        }
        let var = dim_var(v);
        let rest = arg.substitute(&|x| (x == var).then(Dim::zero));
        let at_v = |d: Dim| Dim::constant(c).mul(&Dim::var(var)).add(&d);
        let hi = at_v(self.extremum_keeping(&rest, true, &[], Some(v))?);
        let lo = at_v(self.extremum_keeping(&rest, false, &[], Some(v))?);
        let at_zero = |d: &Dim| d.substitute(&|x| (x == var).then(Dim::zero));
        let c_hi = Self::coefficient(&hi, v)?;
        if c_hi <= 0 {
            return None;
        }
        let hi0 = at_zero(&hi);
        let end = if c_hi == 1 {
            len.sub(&hi0)
        } else {
            len.add_const(-1).sub(&hi0).floor_div(&Dim::constant(c_hi))?.add_const(1)
        };
        let c_lo = Self::coefficient(&lo, v)?;
        let start = match at_zero(&lo).as_constant() {
            Some(m) if m < 0 && c_lo > 0 => Dim::constant((-m + c_lo - 1) / c_lo),
            _ => Dim::zero(),
        };
        Some(Candidate { start, end })
    }

    /// Solves the ranges of the innermost unit's variables, checks its reads
    /// and hands reads that mention outer variables to the enclosing unit.
    pub(super) fn finish_unit(&mut self) {
        let Some(unit) = self.units.pop() else { return };
        let Unit { diags_at_start, saw_error, vars, explicit, reads } = unit;
        let quiet = saw_error || self.diags.len() > diags_at_start;
        let mut failed: HashSet<DefId> = HashSet::new();
        for (v, r) in &explicit {
            self.t.ranges.insert(*v, r.clone());
        }
        let pending: Vec<DefId> = vars.iter().copied().filter(|v| !explicit.contains_key(v)).collect();

        // Direct reads first.
        let mut direct_solved = Vec::new();
        for &v in &pending {
            let var = Dim::var(dim_var(v));
            let mut first: Option<(&Read, usize, Dim)> = None;
            for r in &reads {
                for (axis, (len, arg, _)) in r.axes.iter().enumerate() {
                    if arg.as_ref() != Some(&var) || self.is_placeholder(len) {
                        continue;
                    }
                    match &first {
                        None => first = Some((r, axis, len.clone())),
                        Some((r0, axis0, len0)) => match len0.prove_eq(len) {
                            Truth::True => {}
                            Truth::False => {
                                if !failed.contains(&v) {
                                    let name = self.name(v).to_string();
                                    let d = Diagnostic::error(
                                        self.hir.span(r.axes[axis].2),
                                        format!(
                                            "index `{name}` is bound to two different extents: {} (axis {axis0} of `{}`) and {} (axis {axis} of `{}`)",
                                            self.t.show_dim(len0),
                                            r0.tensor,
                                            self.t.show_dim(len),
                                            r.tensor
                                        ),
                                    )
                                    .label(self.hir.span(r0.axes[*axis0].2), format!("`{name}` ranges over 0..{} here", self.t.show_dim(len0)))
                                    .help(format!("make the extents agree, or give `{name}` an explicit range: `{name} in 0..n`"));
                                    self.err(d);
                                    failed.insert(v);
                                }
                            }
                            Truth::Unknown if self.different_dimensions(len0, len) => {
                                if !failed.contains(&v) {
                                    let name = self.name(v).to_string();
                                    let (d0, d1) = (self.t.show_dim(len0), self.t.show_dim(len));
                                    let d = Diagnostic::error(
                                        self.hir.span(r.axes[axis].2),
                                        format!(
                                            "index `{name}` is bound to two different dimensions: `{d0}` (axis {axis0} of `{}`) and `{d1}` (axis {axis} of `{}`)",
                                            r0.tensor, r.tensor
                                        ),
                                    )
                                    .label(self.hir.span(r0.axes[*axis0].2), format!("`{name}` ranges over 0..{d0} here"))
                                    .note("dimension symbols name distinct sizes, even where the lengths could be equal at run time")
                                    .help(format!("if `{d0}` and `{d1}` are one size, write one symbol for both in the parameter types"));
                                    self.err(d);
                                    failed.insert(v);
                                }
                            }
                            Truth::Unknown => {
                                let check = SameExtent {
                                    index: self.name(v).to_string(),
                                    a: len0.clone(),
                                    a_what: format!("`{}` axis {axis0} (`{}`)", r0.tensor, self.t.show_dim(len0)),
                                    b: len.clone(),
                                    b_what: format!("`{}` axis {axis} (`{}`)", r.tensor, self.t.show_dim(len)),
                                };
                                let list = self.t.same_extent.entry(v).or_default();
                                if !list.contains(&check) {
                                    list.push(check);
                                }
                            }
                        },
                    }
                }
            }
            if let Some((_, _, len)) = first {
                if !failed.contains(&v) {
                    self.t.ranges.insert(v, IndexRange { start: Dim::zero(), end: len });
                    direct_solved.push(v);
                }
            }
        }

        // Then affine reads, until nothing changes.
        let mut unsolved: Vec<DefId> =
            pending.iter().copied().filter(|v| !self.t.ranges.contains_key(v) && !failed.contains(v)).collect();
        loop {
            let mut progress = false;
            for v in unsolved.clone() {
                if let Some(r) = self.intersect_candidates(v, &reads, None) {
                    self.t.ranges.insert(v, r);
                    unsolved.retain(|x| *x != v);
                    progress = true;
                }
            }
            if !progress {
                break;
            }
        }
        // Directly bound variables are narrowed by affine reads as well
        // (`x[i] - x[i + 1]` gives `i in 0..N - 1`).
        for v in direct_solved {
            let base = self.t.ranges.get(&v).cloned();
            if let Some(r) = self.intersect_candidates(v, &reads, base) {
                self.t.ranges.insert(v, r);
            }
        }
        for v in unsolved {
            // A recurrence clause's slot takes the axis's extent from the
            // other clauses when nothing in it bounds the index.
            if let Some(r) = self.slot_fallback.get(&v) {
                self.t.ranges.insert(v, r.clone());
                continue;
            }
            failed.insert(v);
            if quiet {
                continue;
            }
            let name = self.name(v).to_string();
            let span = self.hir.defs[v].span;
            let d = Diagnostic::error(span, format!("cannot infer the range of index `{name}`"))
                .note(format!("`{name}` is never used alone to index a tensor axis, so no axis gives its extent"))
                .help(format!("give it an explicit range: `{name} in a..b`"));
            self.err(d);
        }

        // Bounds checks.
        let mut deferred = Vec::new();
        for r in reads {
            if let Some(def) = r.own {
                // Checked once the recurrence's extents are known.
                if let Some(rec) = self.recs.iter_mut().rev().find(|s| s.def == def) {
                    rec.reads.push((rec.clause, r));
                }
                continue;
            }
            let involved: Vec<DefId> =
                r.axes.iter().filter_map(|(_, a, _)| a.as_ref()).flat_map(|a| self.index_vars(a)).collect();
            if involved.iter().any(|v| failed.contains(v) || self.failed_vars.contains(v)) {
                self.failed_vars.extend(failed.iter().copied());
                self.t.read_proven.insert(r.expr, false);
                continue;
            }
            if involved.iter().any(|v| !self.t.ranges.contains_key(v)) {
                deferred.push(r);
                continue;
            }
            self.check_read(&r);
        }
        self.failed_vars.extend(failed);
        match self.units.last_mut() {
            Some(parent) => parent.reads.extend(deferred),
            None => {
                for r in deferred {
                    self.t.read_proven.insert(r.expr, false);
                }
            }
        }
    }

    /// Intersects the affine candidates for `v` (and `base`, if any). Returns
    /// None when no candidate exists.
    fn intersect_candidates(&self, v: DefId, reads: &[Read], base: Option<IndexRange>) -> Option<IndexRange> {
        let mut acc = base;
        let var = dim_var(v);
        for r in reads {
            // A read under a condition is protected by it (padding written as
            // `if iy >= 0 && iy < H { x[iy] } else { 0.0 }`); it must not
            // shrink the range.
            if r.conditional || r.own.is_some() {
                continue;
            }
            for (len, arg, _) in &r.axes {
                let Some(arg) = arg else { continue };
                if !arg.vars().contains(&var) || arg.as_var() == Some(var) {
                    continue;
                }
                let others_ready = self.index_vars(arg).iter().all(|u| *u == v || self.t.ranges.contains_key(u));
                if !others_ready {
                    continue;
                }
                let Some(c) = self.affine_candidate(v, arg, len) else { continue };
                acc = Some(match acc {
                    None => IndexRange { start: c.start, end: c.end },
                    Some(a) => IndexRange { start: Dim::max(&a.start, &c.start), end: Dim::min(&a.end, &c.end) },
                });
            }
        }
        acc
    }

    pub(super) fn check_read(&mut self, r: &Read) {
        if r.partial {
            self.t.read_proven.insert(r.expr, false);
            return;
        }
        let mut proven = true;
        for (axis, (len, arg, arg_expr)) in r.axes.iter().enumerate() {
            let Some(arg) = arg else {
                proven = false;
                continue;
            };
            // A direct read of a variable whose range is this very extent, or
            // an extent checked equal to it at run time.
            if let Some(v) = arg.as_var().and_then(|v| self.index_def(v)) {
                if let Some(rg) = self.t.ranges.get(&v) {
                    let start_ok = self.proven_nonneg(&rg.start) == Truth::True;
                    let end_ok = rg.end == *len
                        || self.t.same_extent.get(&v).is_some_and(|l| l.iter().any(|c| c.a == rg.end && c.b == *len));
                    if start_ok && end_ok {
                        continue;
                    }
                }
            }
            let (Some(lo), Some(hi)) = (self.extremum(arg, false, &r.narrow), self.extremum(arg, true, &r.narrow))
            else {
                proven = false;
                continue;
            };
            let low_ok = self.proven_nonneg(&lo);
            let high_ok = self.proven_below(&hi, len);
            if low_ok == Truth::True && high_ok == Truth::True {
                continue;
            }
            proven = false;
            if r.conditional || (low_ok != Truth::False && high_ok != Truth::False) {
                continue;
            }
            let (reach, bound) = if high_ok == Truth::False {
                (
                    format!("reaches `{}`", self.t.show_dim(&hi)),
                    format!("the axis has length `{}`", self.t.show_dim(len)),
                )
            } else {
                (format!("reaches `{}`", self.t.show_dim(&lo)), "indices start at 0".to_string())
            };
            let d = Diagnostic::error(
                self.hir.span(*arg_expr),
                format!(
                    "index out of bounds: axis {axis} of `{}` is read at `{}`, which {reach}, but {bound}",
                    r.tensor,
                    self.t.show_dim(arg)
                ),
            )
            .label(r.span, "in this read")
            .help("narrow the index's range, or guard the read with `where` or `if`");
            self.err(d);
            break;
        }
        self.t.read_proven.insert(r.expr, proven);
    }
}
