//! Halo exchanges of a sharded function: a recurrence's halo rows,
//! exchanged at every step that reads them and overlapped with the
//! clause's interior rows ([`split_rows`]), and the extended copies of
//! tensors that definitions and reductions read at offsets along the
//! sharded axis ([`Comm::Extend`]).

use super::*;
use crate::ir::{Loop, RecIndex, Recurrence};

impl Cx<'_> {
    /// A recurrence. One whose axes do not involve the symbol is computed
    /// as it is (on every rank). One with an axis of extent exactly the
    /// symbol, not a sequential one, computes this rank's block of it:
    /// stored with halo rows on either side as deep as its clauses read
    /// its earlier steps at constant offsets along the axis, which are
    /// exchanged with the neighbouring ranks at every step that reads
    /// them: each clause that reads them becomes its interior rows, after
    /// the start of the exchange ([`Comm::HaloStart`] in their prelude),
    /// then its edge rows, after its wait ([`Comm::HaloWait`]): the
    /// interior is computed while the rows travel ([`split_rows`]).
    pub(super) fn recurrence(&mut self, mut r: crate::ir::Recurrence, out: &mut Vec<Stmt>) -> Result<(), Diagnostic> {
        let t = self.vname(r.var);
        let seq_over =
            r.seq.iter().any(|(a, l)| self.is_over(&r.extents[*a]) || self.is_over(&l.start) || self.is_over(&l.end));
        if seq_over {
            // The first clause that steps along the symbol reading an
            // earlier point of the recurrence (else one that covers a range
            // of it).
            let steps = |c: &RecClause| {
                c.cover.iter().any(|cv| match cv {
                    crate::ir::Cover::Range(s, e) => self.is_over(s) || self.is_over(e),
                    crate::ir::Cover::At(_) => false,
                })
            };
            let reads_itself = |c: &RecClause| {
                let mut reads = false;
                visit_all(&c.body, &mut |e| {
                    reads |= matches!(&e.kind, ExprKind::Read { tensor, .. } if *tensor == r.var);
                });
                reads
            };
            let at = r
                .clauses
                .iter()
                .position(|c| steps(c) && reads_itself(c))
                .or_else(|| r.clauses.iter().position(steps))
                .and_then(|k| self.clause_span(r.var, k));
            return Err(self
                .error_at(at, format!("the recurrence `{t}` runs along `{}`", self.symbol))
                .note("each step would need the step before from another rank: the ranks would run one after another")
                .help(format!(
                    "shard along another axis, or run the recurrence along `{}` in an unsharded function",
                    self.symbol
                )));
        }
        let mut axes = Vec::new();
        for (a, d) in r.extents.iter().enumerate() {
            if *d == dvar(self.global) {
                axes.push(a);
            } else if self.is_over(d) {
                // A clause that writes one position along the axis (a
                // boundary row) makes its extent `max(B, n + 1)`.
                let single = r.clauses.iter().position(|c| matches!(c.at.get(a), Some(RecIndex::Lit(_))));
                if let Some(n) = single {
                    return Err(self.single_point(&t, self.clause_span(r.var, n)));
                }
                return Err(self
                    .error(format!(
                        "axis {a} of the recurrence `{t}` has an extent that involves `{}` but is not `{}`",
                        self.symbol, self.symbol
                    ))
                    .help(format!("define `{t}` over `{}` itself and restrict its clauses' ranges", self.symbol)));
            }
        }
        if axes.len() > 1 {
            return Err(self
                .error(format!("the recurrence `{t}` has two axes over `{}`", self.symbol))
                .help("give the second axis a dimension symbol of its own"));
        }
        let Some(&a) = axes.first() else {
            // Nothing of it is sharded: the clauses read no block (reads of
            // sharded tensors there are errors, from `access`), but a
            // clause's value may hold reductions over the symbol (a
            // gradient step per step of a training loop): each becomes
            // this rank's part over the clause's loops and an all-reduce,
            // in the clause's prelude, at every step it covers.
            for (n, c) in r.clauses.iter_mut().enumerate() {
                let at = self.clause_span(r.var, n);
                self.at_site(at, |cx| cx.hoist_in_clause(c))?;
            }
            self.nested += 1;
            let mut res = Ok(());
            for (n, c) in r.clauses.iter_mut().enumerate() {
                if res.is_ok() {
                    let at = self.clause_span(r.var, n);
                    res = self.at_site(at, |cx| cx.expr(&mut c.body, &[]));
                }
            }
            self.nested -= 1;
            res?;
            out.push(Stmt::Recurrence(r));
            return Ok(());
        };
        let [(time, tl)] = &r.seq[..] else {
            return Err(self
                .error(format!("the recurrence `{t}` has several sequential axes and an axis over `{}`", self.symbol))
                .help("shard a recurrence with one sequential axis (time steps over a sharded grid)"));
        };
        let (time, tvar) = (*time, tl.index);
        // The halo each side: the largest offsets of the clauses' reads of
        // the recurrence's earlier steps along the sharded axis.
        let (mut lo, mut hi) = (0i64, 0i64);
        // Per clause: whether it reads earlier steps at offsets, and how
        // far each way (its own halo depth, for its interior rows).
        let mut reads_offsets = vec![false; r.clauses.len()];
        let mut depth = vec![(0i64, 0i64); r.clauses.len()];
        for (n, c) in r.clauses.iter().enumerate() {
            let Some(RecIndexLoop(k)) = loop_at(&c.at, a) else {
                return Err(self.single_point(&t, self.clause_span(r.var, n)));
            };
            let p = c.loops[k].index;
            let ranges = Ranges::of(&c.body, &[p]);
            let mut bad = None;
            visit_all(&c.body, &mut |e| {
                let ExprKind::Read { tensor, indices, .. } = &e.kind else { return };
                if *tensor != r.var {
                    return;
                }
                let Some(ix) = indices.get(a) else { return };
                let Some(off) = offset_of(ix, &[p], &ranges) else { return };
                if (off.lo, off.hi) == (0, 0) {
                    return;
                }
                // Only earlier steps, whose rows the neighbours have.
                let earlier = indices.get(time).is_some_and(|s| match constant_offset(s, &[tvar]) {
                    Some((_, d)) => d < 0,
                    None => false,
                });
                if !earlier {
                    bad = Some(off.lo);
                }
                lo = lo.max(-off.lo);
                hi = hi.max(off.hi);
                depth[n] = (depth[n].0.max(-off.lo), depth[n].1.max(off.hi));
                reads_offsets[n] = true;
            });
            if bad.is_some() {
                return Err(self
                    .error_at(
                        self.clause_span(r.var, n),
                        format!(
                            "a clause of `{t}` reads the current step of `{t}` at an offset along `{}`",
                            self.symbol
                        ),
                    )
                    .note("neighbouring ranks compute that step at the same time; only earlier steps are exchanged")
                    .help(format!("read an earlier step (`{t}[t - 1, i - 1, ..]`)")));
            }
        }
        r.extents[a] = dvar(self.local).add_const(lo + hi);
        self.sharded.insert(r.var, a);
        self.halo.insert(r.var, lo);
        let block_end = dvar(self.offset).add(&dvar(self.local));
        let i64t = Repr::Scalar(ScalarKind::I64);
        let mut clauses = Vec::with_capacity(r.clauses.len());
        // The covers of the clauses that exchange: a later clause with
        // the same cover runs at the same steps, after that exchange
        // (whose halos are as deep as every clause's reads), and needs
        // none of its own.
        let mut exchanged: Vec<Vec<crate::ir::Cover>> = Vec::new();
        for (n, mut c) in std::mem::take(&mut r.clauses).into_iter().enumerate() {
            let Some(RecIndexLoop(k)) = loop_at(&c.at, a) else { unreachable!() };
            let l = &mut c.loops[k];
            // The clause's range of the axis (global), clipped to the block,
            // as storage positions.
            let (start, end) = if l.start.as_constant() == Some(0) && l.end == dvar(self.global) {
                (Dim::constant(lo), dvar(self.local).add_const(lo))
            } else {
                let s = Dim::max(&l.start, &dvar(self.offset));
                let e = Dim::min(&l.end, &block_end);
                (s.sub(&dvar(self.offset)).add_const(lo), e.sub(&dvar(self.offset)).add_const(lo))
            };
            l.start = start;
            l.end = end;
            let p = l.index;
            self.modes.insert(p, Mode::Storage(lo));
            self.in_rec = Some(r.var);
            self.ranges = Ranges::of(&c.body, &[p]);
            self.nested += 1;
            let at = self.clause_span(r.var, n);
            let res = self.at_site(at, |cx| cx.expr(&mut c.body, &[p]));
            self.nested -= 1;
            self.in_rec = None;
            self.ranges = Ranges::default();
            res?;
            if !reads_offsets[n] || exchanged.contains(&c.cover) {
                clauses.push(c);
                continue;
            }
            exchanged.push(c.cover.clone());
            let step = Expr {
                kind: ExprKind::Binary(
                    BinOp::Sub,
                    Box::new(Expr { kind: ExprKind::Var(tvar), ty: i64t.clone() }),
                    Box::new(Expr { kind: ExprKind::Lit(crate::ir::Literal::Int(1)), ty: i64t.clone() }),
                ),
                ty: i64t.clone(),
            };
            let start =
                Stmt::Comm(Comm::HaloStart { tensor: r.var, time, step, axis: a, lo: lo as u64, hi: hi as u64 });
            let [interior, below, above] = split_rows(c, k, lo, depth[n], dvar(self.local));
            // Each part binds variables of its own.
            let (below, above) = (self.fresh_clause(below), self.fresh_clause(above));
            clauses.push(RecClause { prelude: [vec![start], interior.prelude].concat(), ..interior });
            clauses.push(RecClause {
                prelude: [vec![Stmt::Comm(Comm::HaloWait { tensor: r.var })], below.prelude].concat(),
                ..below
            });
            clauses.push(above);
            self.uses_halo = true;
        }
        r.clauses = clauses;
        r.clear_steps = true;
        r.lines = false;
        r.wavefront = false;
        out.push(Stmt::Recurrence(r));
        Ok(())
    }

    /// A clause of the recurrence `t` (at `at`) writes one position along
    /// the sharded axis.
    fn single_point(&self, t: &str, at: Option<Span>) -> Diagnostic {
        self.error_at(at, format!("a clause of the recurrence `{t}` writes a single point along `{}`", self.symbol))
            .note("a literal position along the sharded axis belongs to one rank")
            .help(format!("write the clause over a range of `{}` and guard the points (`where`)", self.symbol))
    }

    /// The sharded tensors that the body of `def` (over the block, index
    /// `i`) reads at offsets from `i` along their sharded axis (constants,
    /// or offsets known by their range: `x[r + dr]` in a convolution): each
    /// gets an extended copy with the neighbours' rows ([`Comm::Extend`]),
    /// as many as the offsets reach, which the body then reads.
    /// The same for a reduction over the block (index `i`) in `body`.
    /// Returns how far the reads reach before and after the point.
    pub(super) fn extend_for(
        &mut self,
        body: &Expr,
        own: Option<VarId>,
        i: VarId,
        ranges: &Ranges,
        out: &mut Vec<Stmt>,
    ) -> (i64, i64) {
        let mut need: Vec<(VarId, i64, i64)> = Vec::new();
        visit_all(body, &mut |e| {
            let ExprKind::Read { tensor, indices, .. } = &e.kind else { return };
            let Some(&a) = self.sharded.get(tensor) else { return };
            if Some(*tensor) == own || self.halo.contains_key(tensor) || self.redirect.contains_key(tensor) {
                return;
            }
            let Some(off) = indices.get(a).and_then(|ix| offset_of(ix, &[i], ranges)) else { return };
            if (off.lo, off.hi) == (0, 0) {
                return;
            }
            match need.iter_mut().find(|(t, _, _)| t == tensor) {
                Some((_, lo, hi)) => {
                    *lo = (*lo).max(-off.lo);
                    *hi = (*hi).max(off.hi);
                }
                None => need.push((*tensor, (-off.lo).max(0), off.hi.max(0))),
            }
        });
        let depth = need.iter().fold((0, 0), |(l, h), &(_, lo, hi)| (l.max(lo), h.max(hi)));
        for (t, lo, hi) in need {
            // A copy extended as far already (tensors are values: the
            // rows are the same), in scope here: read it again.
            if let Some(&(ext, elo, ehi)) = self.extended.get(&t) {
                if elo >= lo && ehi >= hi {
                    self.redirect.insert(t, ext);
                    self.reread.insert(ext);
                    continue;
                }
            }
            let ty = self.f.var(t).ty.clone();
            let Repr::Tensor(elem, _) = ty else { continue };
            let ext = self.f.add_var(&format!("{}_halo", self.vname(t)), ty);
            let axis = self.sharded[&t];
            out.push(Stmt::Comm(Comm::Extend { out: ext, input: t, axis, lo: lo as u64, hi: hi as u64, elem }));
            self.sharded.insert(ext, axis);
            self.halo.insert(ext, lo);
            self.redirect.insert(t, ext);
            self.extended.insert(t, (ext, lo, hi));
            self.sources.insert(ext, t);
            self.uses_halo = true;
        }
        depth
    }

    /// The definition `def` (rewritten over the block, its axis `k` the
    /// sharded one) after the extensions `exts` it reads
    /// ([`Comm::Extend`]), its reads reaching `depth` rows before and
    /// after a point. In a host function, where every axis starts at 0,
    /// the exchanges overlap the rows that read no halo row: each starts
    /// ([`Comm::ExtendStart`]), the definition's interior rows are
    /// computed, then the exchanges complete ([`Comm::HaloWait`]) and the
    /// edge rows are computed ([`split_rows`]), all three parts written
    /// into the one tensor: a recurrence without sequential loops, whose
    /// clauses are the parts. Otherwise the exchanges, then the definition.
    pub(super) fn overlap_definition(
        &mut self,
        def: TensorDef,
        k: usize,
        exts: Vec<Stmt>,
        depth: (i64, i64),
        out: &mut Vec<Stmt>,
    ) {
        let splits = self.f.device.is_none()
            && !exts.is_empty()
            && depth != (0, 0)
            && def.axes.iter().all(|a| a.start.as_constant() == Some(0));
        if !splits {
            out.extend(exts);
            out.push(Stmt::Tensor(def));
            return;
        }
        let mut waits = Vec::new();
        // The edge rows read the copies' halo rows and the block rows
        // within `below + above` of either end of the block; the interior
        // reads the tensors themselves (`direct`).
        let edge = (depth.0.max(0) + depth.1.max(0)) as u64;
        let mut direct: HashMap<VarId, (VarId, i64)> = HashMap::new();
        for s in exts {
            match s {
                Stmt::Comm(Comm::Extend { out: ext, input, axis, lo, hi, elem }) => {
                    out.push(Stmt::Comm(Comm::ExtendStart { out: ext, input, axis, lo, hi, elem, edge }));
                    waits.push(Stmt::Comm(Comm::HaloWait { tensor: ext }));
                    direct.insert(ext, (input, lo as i64));
                }
                other => out.push(other),
            }
        }
        let whole = RecClause {
            cover: Vec::new(),
            at: (0..def.axes.len()).map(RecIndex::Loop).collect(),
            loops: def
                .axes
                .iter()
                .map(|a| Loop { index: a.index, start: Dim::zero(), end: a.extent.clone() })
                .collect(),
            cost_per_point: def.cost_per_point,
            body: def.body,
            prelude: Vec::new(),
        };
        let [mut interior, below, above] = split_rows(whole, k, 0, depth, dvar(self.local));
        read_block(&mut interior.body, &direct, &self.sharded);
        let (below, above) = (self.fresh_clause(below), self.fresh_clause(above));
        let below = RecClause { prelude: [waits, below.prelude].concat(), ..below };
        out.push(Stmt::Recurrence(Recurrence {
            var: def.var,
            elem: def.elem,
            extents: def.axes.iter().map(|a| a.extent.clone()).collect(),
            window: None,
            seq: Vec::new(),
            clear_steps: false,
            wavefront: false,
            lines: false,
            clauses: vec![interior, below, above],
        }));
    }

    /// The index of the loop over the symbol of the reduction `e`.
    pub(super) fn b_index(&self, e: &Expr) -> Option<VarId> {
        match &e.kind {
            ExprKind::Reduce { loops, .. } => {
                loops.iter().find(|l| self.is_over(&l.start) || self.is_over(&l.end)).map(|l| l.index)
            }
            _ => None,
        }
    }

    /// Extended copies of the sharded tensors that the reduction over the
    /// symbol `red` (in a definition over `axes`, if any) reads at offsets
    /// from its index over the block; the ranges of its offsets.
    pub(super) fn extend_reduction(
        &mut self,
        red: &Expr,
        axes: Option<&[crate::ir::Axis]>,
        out: &mut Vec<Stmt>,
    ) -> Ranges {
        let mut ranges = Ranges::default().with_axes(axes.unwrap_or(&[]));
        if let Some(i) = self.b_index(red) {
            ranges.merge(Ranges::of(red, &[i]));
            self.extend_for(red, None, i, &ranges, out);
        }
        ranges
    }
}

/// The reads of the extended copies in `direct` (each with its tensor and
/// its halo rows before the block) in `e`, a definition's interior rows,
/// made reads of the tensors themselves: position `p` along the sharded
/// axis of a copy is row `p - lo` of the block, inside it for every row
/// of the interior, so the copy's other rows need not hold the block.
fn read_block(e: &mut Expr, direct: &HashMap<VarId, (VarId, i64)>, sharded: &HashMap<VarId, usize>) {
    if let ExprKind::Read { tensor, indices, .. } = &mut e.kind {
        if let (Some(&(input, lo)), Some(&axis)) = (direct.get(tensor), sharded.get(tensor)) {
            if let Some(ix) = indices.get_mut(axis) {
                let old = std::mem::replace(ix, Expr::unit());
                *ix = match old.kind {
                    // `i + (d + lo)` (the position) becomes `i + d`.
                    ExprKind::Binary(BinOp::Add, a, b) if matches!(&b.kind, ExprKind::Dim(_)) => {
                        let ExprKind::Dim(d) = b.kind else { unreachable!() };
                        plus(*a, d.add_const(-lo))
                    }
                    kind => plus(Expr { kind, ty: old.ty }, Dim::constant(-lo)),
                };
                *tensor = input;
            }
        }
    }
    visit::for_each_child_mut(e, &mut |c| read_block(c, direct, sharded));
}

pub(super) struct RecIndexLoop(usize);

/// A halo-reading clause of a sharded recurrence cut along its loop `k`
/// (over the sharded axis, in storage positions: `lo` halo rows, then the
/// block of `local` rows) into the rows whose reads stay inside the block
/// (the interior: its reads reach `below` rows before a point and `above`
/// after it) and the edge rows before and after them: `[interior, edge
/// before, edge after]`, together the clause's rows, each computed as the
/// clause computes it. A block thinner than the reads has no interior (the
/// cuts clamp to the clause's range: every part may be empty).
fn split_rows(c: RecClause, k: usize, lo: i64, (below, above): (i64, i64), local: Dim) -> [RecClause; 3] {
    let (start, end) = (c.loops[k].start.clone(), c.loops[k].end.clone());
    let clamp = |x: Dim, from: &Dim| Dim::min(&Dim::max(&x, from), &end);
    // The first row whose reads start inside the block, and the first
    // whose reads pass its end.
    let first = clamp(Dim::constant(lo + below), &start);
    let past = clamp(local.add_const(lo - above), &first);
    let part = |s: Dim, e: Dim| {
        let mut p = RecClause { prelude: Vec::new(), ..c.clone() };
        p.loops[k].start = s;
        p.loops[k].end = e;
        p
    };
    let interior = RecClause { prelude: c.prelude.clone(), ..part(first.clone(), past.clone()) };
    [interior, part(start, first), part(past, end)]
}

/// The clause loop that writes axis `a`, if a loop does.
pub(super) fn loop_at(at: &[crate::ir::RecIndex], a: usize) -> Option<RecIndexLoop> {
    match at.get(a) {
        Some(crate::ir::RecIndex::Loop(k)) => Some(RecIndexLoop(*k)),
        _ => None,
    }
}
