//! Recurrences: typing the clauses, extracting their dependencies, choosing
//! the order and the storage (thesis §5.6-5.9, LANGUAGE.md §4).
//!
//! A recurrence is a tensor defined by clauses that may read earlier points
//! of itself. Analysis proceeds in three steps:
//!
//! 1. **Typing** (`infer_recurrence`): clauses that do not read the tensor
//!    are analyzed first and give its element type and the extents known so
//!    far; then the others, whose reads of the tensor ("own reads") take no
//!    part in range inference except as direct reads of an axis whose
//!    extent is already known. The extent of each axis is the largest end
//!    over the clauses (a literal slot `n` ends at `n + 1`).
//! 2. **Dependencies** (`order_recurrence`): for every own read and every
//!    axis, the offset of the read point from the point being defined, as
//!    an interval (`t - 1` is `[-1, -1]`; `x[k]` with `k in 0..i` is
//!    `[.., -1]`). Axes where every clause has a literal slot are *fields*
//!    (a multi-field state); the others with a non-zero offset somewhere are
//!    *recurrent*. An order of the recurrent axes is legal when every read's
//!    offset vector is lexicographically negative in it, or zero (a point an
//!    earlier clause wrote at the same step). Recurrent axes run
//!    sequentially in that order, the remaining axes in parallel.
//! 3. **Storage** (`plan_storage`, after the whole function is analyzed):
//!    the outermost sequential axis keeps `max(lookback + 1, tail)` steps in
//!    a circular buffer when the reads look back a bounded distance and
//!    later code only reads a bounded suffix (`x[T - 1]`, `x[T - 3 + k]`);
//!    whole-tensor uses and data-dependent or unbounded indices keep it all.

use std::collections::{HashMap, HashSet};

use super::{Cx, Dim, DimVar, Read, Truth, Ty};
use crate::diag::Diagnostic;
use crate::hir::{DefId, ExprId, ExprKind, FnId, IndexedDef, Recurrence, Slot, Stmt};

/// Tile size of the blocked anti-diagonal wavefront; reads may look back at
/// most this far along each of its two axes.
pub const WAVEFRONT_TILE: i64 = 64;

/// The interval of an own read's offset along one axis; `None` is an
/// unbounded (or unknown) end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Offset {
    pub lo: Option<i64>,
    pub hi: Option<i64>,
}

impl Offset {
    pub fn exact(c: i64) -> Offset {
        Offset { lo: Some(c), hi: Some(c) }
    }

    pub fn is_zero(&self) -> bool {
        *self == Offset::exact(0)
    }

    /// Provably before the point being defined.
    pub fn is_backward(&self) -> bool {
        self.hi.is_some_and(|h| h < 0)
    }
}

/// One read of a recurrence by one of its clauses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnRead {
    /// Index of the reading clause, in source order.
    pub clause: usize,
    /// Offset per axis (fields: the offset between the field positions).
    pub offsets: Vec<Offset>,
    /// The read as written (for messages and tests).
    pub text: String,
}

/// Why a recurrence keeps its whole tensor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FullReason {
    /// No axis is recurrent (the clauses do not read earlier points).
    NotRecurrent,
    /// A read looks back an unbounded distance (`x[0]`, `x[k]` for `k < t`).
    UnboundedLookback,
    /// Later code uses the tensor as a whole (returns it, passes it on).
    WholeTensor,
    /// Later code reads it at an index not a bounded distance from the end.
    DynamicIndex,
    /// The window would be as long as the axis.
    WindowCoversAxis,
}

/// How a recurrence is stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Storage {
    /// A circular buffer of `len` steps along `axis` (allocated with `slots`
    /// = the next power of two, so positions are masks, not divisions).
    Window {
        axis: usize,
        len: u64,
        slots: u64,
    },
    Full(FullReason),
}

/// What the compiler decided for one recurrence; exposed for tests and
/// tools (`driver::Compiled::recurrence`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecurrenceFacts {
    /// The Einlang name of the function and of the tensor.
    pub function: String,
    pub name: String,
    pub rank: usize,
    pub reads: Vec<OwnRead>,
    /// Recurrent axes in the order their loops nest (outermost first).
    pub sequential: Vec<usize>,
    /// Axes that run in parallel, inside the sequential ones.
    pub parallel: Vec<usize>,
    /// Axes where every clause writes a literal position.
    pub fields: Vec<usize>,
    /// Largest look-back along the outermost sequential axis (None:
    /// unbounded).
    pub lookback: Option<u64>,
    /// Largest suffix later code reads along that axis (None: unbounded or
    /// a whole use).
    pub tail: Option<u64>,
    /// Two sequential axes whose reads only look back: eligible for a
    /// blocked anti-diagonal wavefront (used with full storage when several
    /// threads are available).
    pub wavefront: bool,
    /// One sequential axis, parallel axes, and every read of the tensor at
    /// the reading point's own position on each parallel axis (`c[i, j -
    /// 1]` for the point `[i, j]`): each point of the parallel axes runs its
    /// sequence alone, so a back end may run the parallel loops outside the
    /// sequential one (a scan along the rows of a matrix).
    pub lines: bool,
    pub storage: Storage,
}

/// A recurrence being typed: its own reads are collected here.
pub(super) struct RecState {
    pub def: DefId,
    pub clause: usize,
    pub reads: Vec<(usize, Read)>,
    /// Stand-ins for extents not known yet while typing.
    pub placeholders: HashSet<DimVar>,
}

/// The writes of one clause along one axis.
#[derive(Clone, Debug)]
enum Cover {
    At(i64),
    Range(Dim, Dim),
}

impl Cover {
    fn start(&self) -> Dim {
        match self {
            Cover::At(n) => Dim::constant(*n),
            Cover::Range(s, _) => s.clone(),
        }
    }

    fn end(&self) -> Dim {
        match self {
            Cover::At(n) => Dim::constant(n + 1),
            Cover::Range(_, e) => e.clone(),
        }
    }

    /// Whether `p` is provably outside.
    fn excludes(&self, p: &Dim) -> bool {
        p.prove_lt(&self.start()) == Truth::True || self.end().prove_le(p) == Truth::True
    }

    /// Whether the two provably share a point, assuming ranges non-empty.
    fn overlaps(&self, o: &Cover) -> bool {
        if self.start() == o.start() {
            return true;
        }
        self.start().prove_lt(&o.end()) == Truth::True && o.start().prove_lt(&self.end()) == Truth::True
    }
}

impl<'a> Cx<'a> {
    /// Types the clauses of `rec` and checks its dependencies; returns the
    /// tensor's type.
    pub(super) fn infer_recurrence(&mut self, rec: &Recurrence) -> Ty {
        let own: Vec<bool> = rec.clauses.iter().map(|c| self.clause_reads(c, rec.def)).collect();
        let rank = rec.clauses.first().map_or(0, |c| c.slots.len());
        for c in &rec.clauses {
            if c.slots.len() != rank {
                let d = Diagnostic::error(
                    c.span,
                    format!(
                        "this clause of `{}` has {} indices, but its first clause has {rank}",
                        self.name(rec.def),
                        c.slots.len()
                    ),
                );
                self.err(d);
                return Ty::Error;
            }
        }
        let mut elem = None;
        let mut ends: Vec<Option<Dim>> = vec![None; rank];
        let mut failed = false;
        // Clauses that do not read the tensor fix its type, except those
        // whose value is an unsuffixed literal: they take the type of the
        // others (or of the tensors the clauses read), and go last, so that
        // their other slots can take extents from the other clauses.
        let flexible: Vec<bool> = rec.clauses.iter().map(|c| self.flexible(c.body)).collect();
        for (i, c) in rec.clauses.iter().enumerate() {
            if !own[i] && !flexible[i] {
                let t = self.infer_indexed(c, elem);
                self.note_clause_type(rec, i, &t, &mut elem, &mut ends);
                failed |= t.is_error();
            }
        }
        let first = rec.clauses.iter().zip(&flexible).find(|(_, f)| **f).map(|(c, _)| c.body);
        // With no clause of a fixed type, the literals' type is open to the
        // uses, like a literal `let`'s (see `Tables::retypes`).
        if elem.is_none() && first.is_some() && !self.in_instance {
            self.flex_lets.insert(rec.def);
        }
        let decided = self.inst.literal_types.get(&rec.def).map(|&(k, _)| k).filter(|_| elem.is_none());
        let Some(first_elem) =
            elem.or(decided).or_else(|| self.guess_elem(rec)).or_else(|| first.and_then(|b| self.literal_kind(b)))
        else {
            let d = Diagnostic::error(
                rec.clauses[0].span,
                format!("cannot infer the element type of `{}`: every clause reads it", self.name(rec.def)),
            )
            .help("add a boundary clause with a literal slot, such as `let x[0] = 0.0;`");
            self.err(d);
            return Ty::Error;
        };
        let mut elem = Some(first_elem);
        // An axis whose extent the clauses still to type state (explicit
        // ranges, literal slots) has that extent while they are typed, so
        // that their reads of the tensor give indices its range.
        for (axis, end) in ends.iter_mut().enumerate() {
            let pending = rec.clauses.iter().zip(own.iter().zip(&flexible)).filter(|(_, (o, f))| **o || **f);
            if let Some(declared) = self.declared_extent(pending.map(|(c, (_, f))| (c, *f)), axis) {
                *end = Some(match end.take() {
                    None => declared,
                    Some(e) => Dim::max(&e, &declared),
                });
            }
        }
        let mut placeholders = HashSet::new();
        let dims: Vec<Dim> = ends
            .iter()
            .map(|e| {
                e.clone().unwrap_or_else(|| {
                    let v = self.fresh_hidden();
                    placeholders.insert(v);
                    Dim::var(v)
                })
            })
            .collect();
        self.env.insert(rec.def, Ty::Tensor(first_elem, dims));
        self.recs.push(RecState { def: rec.def, clause: 0, reads: Vec::new(), placeholders });
        for pass in [true, false] {
            for (i, c) in rec.clauses.iter().enumerate() {
                if own[i] != pass || (!pass && !flexible[i]) {
                    continue;
                }
                if let Some(r) = self.recs.last_mut() {
                    r.clause = i;
                }
                self.set_slot_fallbacks(c, &ends);
                let t = self.infer_indexed(c, elem);
                self.note_clause_type(rec, i, &t, &mut elem, &mut ends);
                failed |= t.is_error();
            }
        }
        let Some(state) = self.recs.pop() else { return Ty::Error };
        if failed {
            return Ty::Error;
        }
        let Some(extents) = ends.into_iter().collect::<Option<Vec<Dim>>>() else { return Ty::Error };
        let ty = Ty::Tensor(first_elem, extents.clone());
        // Overlapping clauses first: reads of a broken definition would only
        // add noise. Then own reads against the final extents, then the
        // points they reach that no clause writes, then the order.
        let diags_before = self.diags.len();
        self.check_overlaps(rec, &own);
        if self.diags.len() > diags_before {
            return ty;
        }
        let mut reads = Vec::new();
        for (clause, mut r) in state.reads {
            for ((len, _, _), extent) in r.axes.iter_mut().zip(&extents) {
                *len = extent.clone();
            }
            self.check_read(&r);
            reads.push((clause, r));
        }
        if self.diags.len() > diags_before {
            return ty;
        }
        self.check_uncovered(rec, &reads);
        if self.diags.len() == diags_before {
            if let Some(facts) = self.order_recurrence(rec, &reads) {
                self.t.recurrences.insert(rec.def, facts);
                self.t.own_reads.extend(reads.iter().map(|(_, r)| (r.expr, rec.def)));
            }
        }
        ty
    }

    /// Whether a clause mentions the tensor it helps define.
    fn clause_reads(&self, c: &IndexedDef, def: DefId) -> bool {
        let mut roots = Vec::new();
        crate::hir::indexed_operands(c, &mut roots);
        self.hir.reachable(roots).into_iter().any(|e| matches!(self.hir.exprs[e].kind, ExprKind::Def(d) if d == def))
    }

    /// The element type of a recurrence whose every clause reads itself: the
    /// element type of the tensors the clauses read (a float one if there is
    /// one). The clauses are then checked against it.
    fn guess_elem(&self, rec: &Recurrence) -> Option<crate::base::scalar::ScalarKind> {
        let kinds: Vec<_> = self
            .hir
            .reachable(rec.clauses.iter().map(|c| c.body))
            .into_iter()
            .filter_map(|e| match &self.hir.exprs[e].kind {
                ExprKind::Index { base, .. } => match self.hir.exprs[*base].kind {
                    ExprKind::Def(d) if d != rec.def => self.env.get(&d).and_then(|t| t.elem()),
                    _ => None,
                },
                _ => None,
            })
            .collect();
        kinds.iter().copied().find(|k| k.is_float()).or(kinds.first().copied())
    }

    /// The default type of the first literal of value `e` (`f64` or `i32`),
    /// not counting the conditions of `if`s (`if elem0 == 0 { 1.0 } ...`).
    fn literal_kind(&self, e: ExprId) -> Option<crate::base::scalar::ScalarKind> {
        use crate::base::ops::Lit;
        use crate::base::scalar::ScalarKind;
        match &self.hir.exprs[e].kind {
            ExprKind::Lit(Lit::Float(..)) => Some(ScalarKind::F64),
            ExprKind::Lit(Lit::Int(..)) => Some(ScalarKind::I32),
            ExprKind::Lit(Lit::Bool(..)) => Some(ScalarKind::Bool),
            ExprKind::Unary(_, x) => self.literal_kind(*x),
            ExprKind::Binary(_, a, b) => self.literal_kind(*a).or_else(|| self.literal_kind(*b)),
            ExprKind::If { then, els, .. } => {
                self.literal_kind(*then).or_else(|| els.and_then(|x| self.literal_kind(x)))
            }
            ExprKind::Block(b) => b.tail.and_then(|t| self.literal_kind(t)),
            _ => None,
        }
    }

    /// The extent along `axis` that `clauses` state, when each states its
    /// own (a literal slot, a range whose end mentions no index) or, in a
    /// flexible clause (`flag` set: it reads nothing), takes the others'
    /// (a slot without a range). `None` when one clause's extent would come
    /// from its reads (a slot without a range in a clause that reads), so
    /// that the extent returned is the tensor's final one.
    fn declared_extent<'c>(&self, clauses: impl Iterator<Item = (&'c IndexedDef, bool)>, axis: usize) -> Option<Dim> {
        let mut out: Option<Dim> = None;
        for (c, flexible) in clauses {
            let end = match c.slots.get(axis)? {
                Slot::Lit(n, _) => Dim::constant(n.checked_add(1)?),
                Slot::Var { range: Some(r), .. } => {
                    let end = self.to_dim(r.end)?;
                    if !self.index_vars(&end).is_empty() {
                        return None;
                    }
                    end
                }
                Slot::Var { range: None, .. } if flexible => continue,
                Slot::Var { .. } | Slot::Rest(..) => return None,
            };
            out = Some(match out {
                None => end,
                Some(o) => Dim::max(&o, &end),
            });
        }
        out
    }

    /// Slots with no range of their own fall back to the axis's extent from
    /// the clauses typed so far.
    fn set_slot_fallbacks(&mut self, c: &IndexedDef, ends: &[Option<Dim>]) {
        for (slot, end) in c.slots.iter().zip(ends) {
            if let (Slot::Var { def, range: None }, Some(end)) = (slot, end) {
                self.slot_fallback.insert(*def, super::IndexRange { start: Dim::zero(), end: end.clone() });
            }
        }
    }

    /// Records a clause's element type and extents.
    fn note_clause_type(
        &mut self,
        rec: &Recurrence,
        i: usize,
        t: &Ty,
        elem: &mut Option<crate::base::scalar::ScalarKind>,
        ends: &mut Vec<Option<Dim>>,
    ) {
        let Ty::Tensor(k, dims) = t else { return };
        // A tensor element's axes follow the written ones.
        if dims.len() > ends.len() {
            ends.resize(dims.len(), None);
        }
        match elem {
            None => *elem = Some(*k),
            Some(e) if e != k => {
                let d = Diagnostic::error(
                    self.hir.span(rec.clauses[i].body),
                    format!(
                        "this clause of `{}` computes `{}`, but its other clauses compute `{}`",
                        self.name(rec.def),
                        k.name(),
                        e.name()
                    ),
                )
                .help("cast the value with `as`");
                let d = match self.fused_group_note(rec.def) {
                    Some(note) => d.note(note),
                    None => d,
                };
                self.err(d);
            }
            Some(_) => {}
        }
        for (end, d) in ends.iter_mut().zip(dims) {
            *end = Some(match end.take() {
                None => d.clone(),
                Some(e) => Dim::max(&e, d),
            });
        }
    }

    /// Where each clause writes, per axis.
    fn covers(&self, c: &IndexedDef) -> Option<Vec<Cover>> {
        c.slots
            .iter()
            .map(|s| match s {
                Slot::Lit(n, _) => Some(Cover::At(*n)),
                Slot::Var { def, .. } => {
                    let r = self.t.ranges.get(def)?;
                    Some(Cover::Range(r.start.clone(), r.end.clone()))
                }
                Slot::Rest(..) => None,
            })
            .collect()
    }

    /// Two clauses that provably write a common point.
    /// Clauses that write a point twice are an error, except boundary
    /// clauses (neither reads the recurrence): there the later one wins,
    /// as a later statement does in the seed (`let x[0, i] = f; let x[0,
    /// 0] = f + 0.01;` perturbs one point). Clauses run in source order at
    /// each step, so the later write is the one that stays.
    fn check_overlaps(&mut self, rec: &Recurrence, own: &[bool]) {
        let Some(covers) = rec.clauses.iter().map(|c| self.covers(c)).collect::<Option<Vec<_>>>() else { return };
        let name = self.name(rec.def).to_string();
        for j in 1..covers.len() {
            for i in 0..j {
                if !own[i] && !own[j] {
                    continue;
                }
                if covers[i].iter().zip(&covers[j]).all(|(a, b)| a.overlaps(b)) {
                    let d = Diagnostic::error(
                        rec.clauses[j].span,
                        format!("this clause of `{name}` overlaps an earlier one"),
                    )
                    .label(rec.clauses[i].span, "this clause writes some of the same points")
                    .note("each point of a recurrence is defined by exactly one clause")
                    .help("make the ranges disjoint, e.g. start the recurrent clause after the boundary: `t in 1..T`");
                    self.err(d);
                    return;
                }
            }
        }
    }

    /// Own reads of points no clause writes.
    fn check_uncovered(&mut self, rec: &Recurrence, reads: &[(usize, Read)]) {
        let Some(covers) = rec.clauses.iter().map(|c| self.covers(c)).collect::<Option<Vec<_>>>() else { return };
        let name = self.name(rec.def).to_string();
        for (_, r) in reads {
            if r.conditional || r.partial {
                continue;
            }
            for (axis, (_, idx, idx_expr)) in r.axes.iter().enumerate() {
                let Some(idx) = idx else { continue };
                for max in [false, true] {
                    let Some(p) = self.extremum(idx, max, &r.narrow) else { continue };
                    if covers.iter().all(|c| c[axis].excludes(&p)) {
                        let shown = self.t.show_dim(&p);
                        let d = Diagnostic::error(
                            self.hir.span(*idx_expr),
                            format!(
                                "this read of `{name}` reaches index {shown} of axis {axis}, which no clause defines"
                            ),
                        )
                        .label(r.span, "in this read")
                        .note("points no clause covers are zero, and a recurrence must not read them")
                        .help(format!("add a boundary clause for it, such as `let {name}[{shown}] = ...;`"));
                        self.err(d);
                        return;
                    }
                }
            }
        }
    }

    /// The offsets of the own reads and a legal order of the recurrent axes.
    fn order_recurrence(&mut self, rec: &Recurrence, reads: &[(usize, Read)]) -> Option<RecurrenceFacts> {
        let rank = rec.clauses[0].slots.len();
        let name = self.name(rec.def).to_string();
        let fields: Vec<usize> =
            (0..rank).filter(|&a| rec.clauses.iter().all(|c| matches!(c.slots[a], Slot::Lit(..)))).collect();
        let mut own = Vec::new();
        // The first index that is not a dimension expression (`(i + 1) %
        // n`): its offset is unknown, which is fine when the read is at an
        // earlier step of a sequential axis (the whole step exists then).
        let mut data_index = None;
        for (clause, r) in reads {
            let c = &rec.clauses[*clause];
            let mut offsets = Vec::new();
            for (axis, (_, idx, idx_expr)) in r.axes.iter().enumerate() {
                let Some(idx) = idx else {
                    data_index.get_or_insert((*idx_expr, r.span));
                    offsets.push(Offset { lo: None, hi: None });
                    continue;
                };
                let at = match &c.slots[axis] {
                    Slot::Lit(n, _) => Dim::constant(*n),
                    Slot::Var { def, .. } => Dim::var(super::dim_var(*def)),
                    Slot::Rest(..) => return None,
                };
                let diff = idx.sub(&at);
                let lo = self.extremum(&diff, false, &r.narrow).and_then(|d| d.as_constant());
                let hi = self.extremum(&diff, true, &r.narrow).and_then(|d| d.as_constant());
                offsets.push(Offset { lo, hi });
            }
            if r.axes.len() < rank {
                // A sub-tensor read: the remaining axes are read whole.
                offsets.extend((r.axes.len()..rank).map(|_| Offset { lo: None, hi: None }));
            }
            own.push((*clause, r, offsets));
        }
        let candidates: Vec<usize> =
            (0..rank).filter(|a| !fields.contains(a) && own.iter().any(|(_, _, o)| !o[*a].is_zero())).collect();
        // The fewest axes, in the order, that make every read look back:
        // a read zero along all of them must be zero along every axis (a
        // point an earlier clause of the same step wrote), or read another
        // field at the same step of a sequential axis (an earlier clause
        // wrote all of that step before this clause runs; checked below).
        let legal = |order: &[usize]| {
            own.iter().all(|(_, _, o)| {
                for &a in order {
                    if o[a].is_zero() {
                        continue;
                    }
                    return o[a].is_backward();
                }
                (0..rank).all(|a| fields.contains(&a) || o[a].is_zero())
                    || (!order.is_empty() && fields.iter().any(|&f| !o[f].is_zero()))
            })
        };
        let order = subsets(&candidates).into_iter().flat_map(|s| permutations(&s)).find(|p| legal(p));
        let Some(order) = order else {
            if let Some((idx_expr, span)) = data_index {
                let d = Diagnostic::error(
                    self.hir.span(idx_expr),
                    format!("this index of `{name}` depends on data, so the order of the recurrence cannot be decided"),
                )
                .label(span, "in this read")
                .note("an index that is not a fixed offset is allowed only in a read of an earlier step")
                .help("read the recurrence at fixed offsets, such as `t - 1`");
                self.err(d);
                return None;
            }
            self.report_future_read(rec, &own, &candidates);
            return None;
        };
        // Same-step reads: a point an earlier clause wrote.
        for (clause, r, o) in &own {
            if !order.iter().all(|&a| o[a].is_zero()) {
                continue;
            }
            let writers: Vec<usize> = (0..rec.clauses.len())
                .filter(|&w| {
                    fields.iter().all(|&f| {
                        let (Slot::Lit(wn, _), Slot::Lit(cn, _)) =
                            (&rec.clauses[w].slots[f], &rec.clauses[*clause].slots[f])
                        else {
                            return false;
                        };
                        o[f].lo.is_some_and(|d| d == wn - cn) && o[f].hi == o[f].lo
                    })
                })
                .collect();
            let bad = if writers.is_empty() {
                Some("a point of the same step that no clause writes".to_string())
            } else if writers.contains(clause) {
                Some("the very point this clause defines".to_string())
            } else if writers.iter().any(|w| w > clause) {
                Some("a point that a later clause writes at the same step".to_string())
            } else {
                None
            };
            if let Some(what) = bad {
                let d = Diagnostic::error(r.span, format!("this read of `{name}` reads {what}"))
                    .note("at one step, a clause may read only points that earlier clauses wrote")
                    .help("read an earlier step (`t - 1`), or move the clause that writes the point first");
                self.err(d);
                return None;
            }
        }
        let parallel: Vec<usize> = (0..rank).filter(|a| !fields.contains(a) && !order.contains(a)).collect();
        let lookback = order.first().and_then(|&a| {
            own.iter().map(|(_, _, o)| o[a].lo.map(|lo| (-lo).max(0) as u64)).try_fold(0u64, |m, x| x.map(|x| m.max(x)))
        });
        let wavefront = order.len() == 2
            && own.iter().all(|(_, _, o)| {
                order.iter().all(|&a| o[a].hi.is_some_and(|h| h <= 0) && o[a].lo.is_some_and(|l| l >= -WAVEFRONT_TILE))
            });
        let lines = order.len() == 1
            && !parallel.is_empty()
            && own.iter().all(|(_, _, o)| parallel.iter().all(|&a| o[a].is_zero()));
        let texts = own.iter().map(|(c, r, o)| OwnRead { clause: *c, offsets: o.clone(), text: self.read_text(r) });
        Some(RecurrenceFacts {
            function: String::new(),
            name,
            rank,
            reads: texts.collect(),
            storage: if order.is_empty() {
                Storage::Full(FullReason::NotRecurrent)
            } else {
                Storage::Full(FullReason::WholeTensor)
            },
            sequential: order,
            parallel,
            fields,
            lookback,
            tail: None,
            wavefront,
            lines,
        })
    }

    fn read_text(&self, r: &Read) -> String {
        let idx: Vec<String> = r
            .axes
            .iter()
            .map(|(_, d, _)| d.as_ref().map(|d| self.t.show_dim(d)).unwrap_or_else(|| "?".to_string()))
            .collect();
        format!("{}[{}]", r.tensor, idx.join(", "))
    }

    /// No order works: blame the first read that is not backward in the
    /// axes' source order.
    fn report_future_read(&mut self, rec: &Recurrence, own: &[(usize, &Read, Vec<Offset>)], candidates: &[usize]) {
        let name = self.name(rec.def).to_string();
        for (clause, r, o) in own {
            let mut before: Vec<usize> = Vec::new();
            for &a in candidates {
                if o[a].is_zero() {
                    before.push(a);
                    continue;
                }
                if o[a].is_backward() {
                    break;
                }
                let c = &rec.clauses[*clause];
                let dim = |a: usize| match &c.slots[a] {
                    Slot::Var { def, .. } => format!("`{}`", self.name(*def)),
                    _ => format!("axis {a}"),
                };
                let recurrent = own.iter().any(|(_, _, o2)| o2[a].is_backward());
                let at_step = before
                    .iter()
                    .filter(|&&b| own.iter().any(|(_, _, o2)| o2[b].is_backward()))
                    .map(|&b| dim(b))
                    .collect::<Vec<_>>();
                let step = if at_step.is_empty() {
                    String::new()
                } else {
                    format!(" at the same step of {}", at_step.join(", "))
                };
                let (msg, note) = match o[a].lo {
                    Some(lo) if lo > 0 => (
                        format!(
                            "this read of `{name}` is {lo} ahead along {}{step}: that point is not computed yet",
                            dim(a)
                        ),
                        if recurrent || !at_step.is_empty() {
                            "a recurrence reads only earlier points: `t - 1`, not `t + 1`".to_string()
                        } else {
                            format!("{} is computed in increasing order", dim(a))
                        },
                    ),
                    _ => (
                        format!(
                            "cannot prove that this read of `{name}` reads an earlier point along {}{step}",
                            dim(a)
                        ),
                        "a recurrence reads only earlier points: `t - 1`, not `t + 1`".to_string(),
                    ),
                };
                let d = Diagnostic::error(r.span, msg)
                    .note(note)
                    .help("read an earlier point (`t - 1`), or a point that an earlier clause writes at the same step");
                self.err(d);
                return;
            }
        }
        let d = Diagnostic::error(rec.span, format!("no order computes `{name}` before it is read"));
        self.err(d);
    }

    /// Decides the storage of every recurrence of `f` from the reads the
    /// rest of the function makes of it.
    pub(super) fn plan_storage(&mut self, f: FnId) {
        let func = &self.hir.fns[f];
        let mut roots = Vec::new();
        for s in &func.body.stmts {
            crate::hir::stmt_operands(s, &mut roots);
        }
        roots.extend(func.body.tail);
        // The function's recurrences, those of nested blocks included.
        let hir = self.hir;
        let nested = hir.reachable(roots.iter().copied()).into_iter().flat_map(|e| match &hir.exprs[e].kind {
            ExprKind::Block(b) => b.stmts.as_slice(),
            _ => &[],
        });
        let recs: Vec<&Recurrence> = func
            .body
            .stmts
            .iter()
            .chain(nested)
            .filter_map(|s| if let Stmt::Recurrence(r) = s { Some(r) } else { None })
            .collect();
        if recs.is_empty() {
            return;
        }
        let fname = self.name(func.def).to_string();
        let ids: HashSet<DefId> = recs.iter().map(|r| r.def).collect();
        let mut uses: HashMap<DefId, Vec<Use>> = HashMap::new();
        let mut seen = HashSet::new();
        for r in roots {
            self.collect_uses(r, &ids, &mut uses, &mut seen);
        }
        for rec in recs {
            let def = rec.def;
            let Some(mut facts) = self.t.recurrences.get(&def).cloned() else { continue };
            facts.function = fname.clone();
            let covers = rec.clauses.iter().map(|c| self.covers(c)).collect::<Option<Vec<_>>>();
            if let (Some(&axis), Some(covers)) = (facts.sequential.first(), covers) {
                let ends = covers.iter().map(|c| c[axis].end());
                // The extent is the largest clause end. Ends that are
                // constants bound the window from below (if one of them is
                // the extent, the whole tensor fits); the tail is measured
                // from each of the others.
                let mut floor = 0u64;
                let mut from: Vec<Dim> = Vec::new();
                for e in ends {
                    match e.as_constant() {
                        Some(c) => floor = floor.max(c.max(0) as u64),
                        None => from.push(e),
                    }
                }
                let mut tail: Option<u64> = Some(0);
                let mut reason = None;
                for u in uses.get(&def).map(Vec::as_slice).unwrap_or(&[]) {
                    match u {
                        Use::Whole => reason = Some(FullReason::WholeTensor),
                        Use::At(args) => {
                            let t = args.get(axis).and_then(|a| {
                                let idx = self.to_dim(*a)?;
                                let min = self.extremum(&idx, false, &[])?;
                                let tails = from.iter().map(|e| e.sub(&min).as_constant());
                                let t = tails.collect::<Option<Vec<i64>>>()?.into_iter().max();
                                // Only constant ends: the index itself must be.
                                t.or_else(|| min.as_constant().map(|m| floor as i64 - m))
                            });
                            match (t, args.len() > axis) {
                                (Some(t), true) if t >= 1 => tail = tail.map(|m| m.max(t as u64)),
                                (_, true) => {
                                    reason.get_or_insert(FullReason::DynamicIndex);
                                }
                                (_, false) => reason = Some(FullReason::WholeTensor),
                            }
                        }
                    }
                }
                facts.tail = if reason.is_some() { None } else { tail };
                facts.storage = match (reason, facts.lookback) {
                    (Some(r), _) => Storage::Full(r),
                    (None, None) => Storage::Full(FullReason::UnboundedLookback),
                    (None, Some(l)) => {
                        let len = (l + 1).max(tail.unwrap_or(0)).max(floor);
                        let covers = from.is_empty();
                        if covers {
                            Storage::Full(FullReason::WindowCoversAxis)
                        } else {
                            Storage::Window { axis, len, slots: len.next_power_of_two() }
                        }
                    }
                };
            }
            self.t.recurrences.insert(def, facts);
        }
    }

    fn collect_uses(
        &self,
        e: ExprId,
        recs: &HashSet<DefId>,
        uses: &mut HashMap<DefId, Vec<Use>>,
        seen: &mut HashSet<ExprId>,
    ) {
        if !seen.insert(e) {
            return;
        }
        match &self.hir.exprs[e].kind {
            ExprKind::Index { base, args } => {
                if let ExprKind::Def(d) = self.hir.exprs[*base].kind {
                    if recs.contains(&d) {
                        if !self.t.own_reads.contains_key(&e) {
                            uses.entry(d).or_default().push(Use::At(args.clone()));
                        }
                        for a in args {
                            self.collect_uses(*a, recs, uses, seen);
                        }
                        return;
                    }
                }
            }
            ExprKind::Def(d) if recs.contains(d) => {
                uses.entry(*d).or_default().push(Use::Whole);
                return;
            }
            _ => {}
        }
        let mut ops = Vec::new();
        crate::hir::operands(&self.hir.exprs[e].kind, &mut ops);
        for o in ops {
            self.collect_uses(o, recs, uses, seen);
        }
    }
}

/// A use of a recurrence after its definition.
enum Use {
    Whole,
    /// An element read (or a sub-tensor) at these indices.
    At(Vec<ExprId>),
}

/// The subsets of `items` (in their order), smallest first.
fn subsets(items: &[usize]) -> Vec<Vec<usize>> {
    if items.len() > 5 {
        return vec![items.to_vec()];
    }
    let mut out: Vec<Vec<usize>> = (0u32..1 << items.len())
        .map(|m| items.iter().enumerate().filter(|(i, _)| m & (1 << i) != 0).map(|(_, x)| *x).collect())
        .collect();
    out.sort_by_key(|s: &Vec<usize>| s.len());
    out
}

/// All orders of `items`, the given order first.
fn permutations(items: &[usize]) -> Vec<Vec<usize>> {
    if items.len() <= 1 || items.len() > 5 {
        return vec![items.to_vec()];
    }
    let mut out = Vec::new();
    for (i, &x) in items.iter().enumerate() {
        let mut rest = items.to_vec();
        rest.remove(i);
        for mut p in permutations(&rest) {
            p.insert(0, x);
            out.push(p);
        }
    }
    out
}
