//! Sharded functions (`#[shard(B)]`): each rank computes its own block of
//! the symbol's axes, and the communication the program needs is stated
//! in the IR ([`Comm`]).
//!
//! Runs on the IR as lowered, before the other passes (which then see an
//! ordinary function over local extents). The rewrite:
//!
//! - entry: the parameter axes of dimension `B` give `B_local` (this rank's
//!   block); `B` itself, the whole extent, and `B_offset`, where the block
//!   starts, are bound by the back end after the ranks agree on them
//!   ([`ShardParts`]). Every other dimension bound at entry is checked to be
//!   the same on every rank.
//! - a definition axis over `0..B` runs over the block `B_offset ..
//!   B_offset + B_local`; its index variable keeps the global value, so the
//!   body means what it means unsharded (`n as f32`, guards).
//! - a read of a sharded tensor along its sharded axis at the point's own
//!   index reads the local position `n - B_offset`.
//! - a reduction whose loop runs over `B` (any range `a..b` that mentions
//!   `B`: its global meaning) runs over the part of the range in the block,
//!   then an all-reduce combines the ranks' parts: the reduction is bound
//!   to a value of its own (a scalar, or a tensor over the definition's
//!   axes), followed by [`Comm::AllReduce`] (or [`Comm::AllReduceArg`] for
//!   `argmax`/`argmin`).
//!
//! - a read along `B` at the point's index plus an offset of known range
//!   (a constant, a reduction index or definition axis of constant range,
//!   directly or through a `where` binding: `x[r + dr - 1]` in a
//!   convolution) reads a copy extended with as many of the neighbouring
//!   ranks' rows as the offsets reach ([`Comm::Extend`]); in a recurrence
//!   over another axis, reads of earlier steps keep halo rows that are
//!   exchanged at every step that reads them, overlapped with the rows
//!   that read no halo row: the clause is cut into its interior rows,
//!   after [`Comm::HaloStart`], and its edge rows, after
//!   [`Comm::HaloWait`].
//!
//! What needs other ranks' rows otherwise (a read along `B` at a
//! data-dependent index, a reduction over `B` inside a definition over `B`,
//! a recurrence over `B`, a whole sharded tensor passed on) is a compile
//! error that says why and what to write instead.

use std::collections::HashMap;

use crate::base::dim::{Dim, DimVar};
use crate::base::ops::{BinOp, RedOp};
use crate::base::scalar::ScalarKind;
use crate::base::span::Span;
use crate::diag::Diagnostic;
use crate::ir::affine::Affine;
use crate::ir::visit;
use crate::ir::{
    Comm, EntryCheck, Expr, ExprKind, Function, HaloEdge, Program, RecClause, Repr, ShardParts, Stmt, TensorDef, VarId,
    WhereEntry,
};

/// Rewrites every sharded function of `program`; the errors of those that
/// cannot be sharded.
pub fn run(program: &mut Program) -> Vec<Diagnostic> {
    let mut diags = Vec::new();
    // The functions as lowered, for inlining calls into sharded ones.
    let lowered: Vec<Function> = program.fns.clone();
    let mut sharded = Vec::new();
    for (id, f) in program.functions_mut() {
        let Some(shard) = f.shard.clone() else { continue };
        if let Err(d) = shard_function(f, &shard.symbol, shard.span, &lowered) {
            diags.push(d);
        }
        sharded.push(id);
    }
    // Their calls passing sharded tensors are inlined.
    for id in sharded {
        program.calls_changed(id);
    }
    diags
}

fn dvar(v: VarId) -> Dim {
    Dim::var(DimVar(v.0))
}

fn mentions(d: &Dim, v: VarId) -> bool {
    d.vars().contains(&DimVar(v.0))
}

/// How deep calls are inlined into a sharded function (a recursive
/// function has no end).
const MAX_INLINE_DEPTH: u32 = 64;

struct Cx<'a> {
    f: &'a mut Function,
    name: String,
    symbol: String,
    span: Span,
    global: VarId,
    local: VarId,
    offset: VarId,
    /// Tensors held in blocks, with their sharded axis.
    sharded: HashMap<VarId, usize>,
    /// Tuples holding sharded tensors: the sharded axis of each element.
    tuples: HashMap<VarId, Vec<Option<usize>>>,
    /// Every function as lowered (callees are inlined in the sharded
    /// context).
    lowered: &'a [Function],
    inlining: u32,
    /// Index variables over the block that hold the local position
    /// (`0..B_local`; their global value is `i + B_offset`), rather than
    /// the global index.
    modes: HashMap<VarId, Mode>,
    /// Sharded tensors stored with halo rows: how many come before the
    /// block along the sharded axis.
    halo: HashMap<VarId, i64>,
    /// While a recurrence's clauses are rewritten: its tensor, which they
    /// may read at constant offsets along the sharded axis (earlier steps,
    /// whose halos are exchanged).
    in_rec: Option<VarId>,
    /// Extents and `i64` values computed from the symbol (`max(1, B)`):
    /// ranges over them are ranges over the symbol.
    derived: std::collections::HashSet<VarId>,
    /// Whether a halo exchange was placed.
    uses_halo: bool,
    /// While a definition is rewritten: the tensors it reads at offsets
    /// along the sharded axis, and their extended copies (`Comm::Extend`).
    redirect: HashMap<VarId, VarId>,
    /// Greater than zero inside a definition's points or a reduction's
    /// terms, where no communication can be placed.
    nested: u32,
    /// While a definition or a recurrence's clause is rewritten: the
    /// offsets from its index known by their range ([`Ranges`]).
    ranges: Ranges,
    /// Extended copies made so far and in scope: the tensor, its copy,
    /// and the rows before and after its block (a later reader needing no
    /// more rows reads the same copy: one exchange per tensor).
    extended: HashMap<VarId, (VarId, i64, i64)>,
    /// Every extended copy made, and the tensor it extends.
    sources: HashMap<VarId, VarId>,
}

fn shard_function(f: &mut Function, symbol: &str, span: Span, lowered: &[Function]) -> Result<(), Diagnostic> {
    let name = f.name.clone();
    // The dimension variable of the symbol, bound at entry from a parameter.
    let global = f.entry.iter().find_map(|e| match e {
        EntryCheck::BindDim { dim, .. } if f.var(*dim).source_name == symbol => Some(*dim),
        _ => None,
    });
    let Some(global) = global else {
        return Err(Diagnostic::error(span, format!("no parameter of `{name}` has an axis of dimension `{symbol}`"))
            .help(format!("`#[shard({symbol})]` splits the parameter axes whose dimension is `{symbol}`")));
    };
    let local = f.add_var(&format!("{symbol}_local"), Repr::Scalar(ScalarKind::I64));
    let offset = f.add_var(&format!("{symbol}_offset"), Repr::Scalar(ScalarKind::I64));
    let mut cx = Cx {
        f,
        name,
        symbol: symbol.to_string(),
        span,
        global,
        local,
        offset,
        sharded: HashMap::new(),
        tuples: HashMap::new(),
        modes: HashMap::new(),
        halo: HashMap::new(),
        in_rec: None,
        uses_halo: false,
        derived: Default::default(),
        redirect: HashMap::new(),
        nested: 0,
        ranges: Ranges::default(),
        extended: HashMap::new(),
        sources: HashMap::new(),
        lowered,
        inlining: 0,
    };
    let mut agreed = Vec::new();
    let mut entry = std::mem::take(&mut cx.f.entry);
    for e in &mut entry {
        match e {
            EntryCheck::BindDim { dim, param, path, axis } => {
                if *dim == global {
                    cx.shard_param(*param, path, *axis)?;
                    *dim = local;
                } else {
                    agreed.push(*dim);
                }
            }
            EntryCheck::CheckDim { param, path, axis, expected, .. } => {
                if *expected == dvar(global) {
                    cx.shard_param(*param, path, *axis)?;
                    *expected = dvar(local);
                } else if mentions(expected, global) {
                    let p = cx.f.var(*param).source_name.clone();
                    return Err(cx
                        .error(format!(
                            "parameter `{p}` has an axis whose extent involves `{symbol}` but is not `{symbol}`"
                        ))
                        .help(format!("only axes of extent exactly `{symbol}` can be split across ranks")));
                }
            }
        }
    }
    cx.f.entry = entry;
    let body = std::mem::take(&mut cx.f.body);
    let mut body = cx.stmts(body)?;
    let mut result = std::mem::replace(&mut cx.f.result, Expr::unit());
    cx.result(&mut result, &mut body)?;
    sink_reductions(&mut body);
    cx.f.body = body;
    cx.f.result = result;
    let uses_halo = cx.uses_halo;
    let mut edges: Vec<HaloEdge> = cx
        .halo
        .iter()
        .filter_map(|(&tensor, &lo)| {
            let axis = *cx.sharded.get(&tensor)?;
            let source = cx.sources.get(&tensor).copied().unwrap_or(tensor);
            Some(HaloEdge { tensor, source, axis, lo })
        })
        .collect();
    edges.sort_by_key(|e| e.tensor.0);
    if let Some(s) = &mut cx.f.shard {
        s.parts = Some(ShardParts { global, local, offset, agreed, halo: uses_halo, edges });
    }
    Ok(())
}

impl Cx<'_> {
    fn error(&self, msg: String) -> Diagnostic {
        Diagnostic::error(self.span, format!("in sharded function `{}`: {msg}", self.name))
    }

    fn vname(&self, v: VarId) -> String {
        self.f.var(v).source_name.clone()
    }

    fn shard_param(&mut self, param: VarId, path: &[u32], axis: usize) -> Result<(), Diagnostic> {
        if !path.is_empty() {
            let p = self.vname(param);
            return Err(self
                .error(format!("parameter `{p}` holds a sharded tensor inside a tuple"))
                .help("pass the sharded tensor as a parameter of its own"));
        }
        if let Some(&other) = self.sharded.get(&param) {
            if other != axis {
                let p = self.vname(param);
                return Err(self
                    .error(format!("parameter `{p}` has two axes of dimension `{}`", self.symbol))
                    .note("a rank holds a block of one axis; a second would need other ranks' rows")
                    .help("give the second axis a dimension symbol of its own"));
            }
        }
        self.sharded.insert(param, axis);
        Ok(())
    }

    /// Whether `d` involves the symbol (directly, or through an extent or
    /// `i64` value computed from it).
    fn is_over(&self, d: &Dim) -> bool {
        d.vars().iter().any(|v| VarId(v.0) == self.global || self.derived.contains(&VarId(v.0)))
    }

    fn stmts(&mut self, stmts: Vec<Stmt>) -> Result<Vec<Stmt>, Diagnostic> {
        let mut out = Vec::with_capacity(stmts.len());
        for s in stmts {
            self.stmt(s, &mut out)?;
        }
        Ok(out)
    }

    fn stmt(&mut self, s: Stmt, out: &mut Vec<Stmt>) -> Result<(), Diagnostic> {
        match s {
            Stmt::Let { var, mut value } => {
                self.inline_calls(&mut value, out)?;
                if let ExprKind::Tuple(items) = &mut value.kind {
                    let axes: Vec<Option<usize>> = items.iter().map(|i| self.yields_sharded(i)).collect();
                    if axes.iter().any(Option::is_some) {
                        for i in items.iter_mut() {
                            if self.yields_sharded(i).is_none() {
                                self.hoist_scalar(i, out)?;
                                self.expr(i, &[])?;
                            }
                        }
                        self.tuples.insert(var, axes);
                        out.push(Stmt::Let { var, value });
                        return Ok(());
                    }
                }
                if let ExprKind::Var(x) = value.kind {
                    if let Some(&axis) = self.sharded.get(&x) {
                        self.sharded.insert(var, axis);
                        out.push(Stmt::Let { var, value });
                        return Ok(());
                    }
                }
                self.hoist_scalar(&mut value, out)?;
                self.expr(&mut value, &[])?;
                if value.ty == Repr::Scalar(ScalarKind::I64) {
                    let mut over = false;
                    visit_all(&value, &mut |x| match &x.kind {
                        ExprKind::Dim(d) => over |= self.is_over(d),
                        ExprKind::Var(v) => over |= self.derived.contains(v),
                        _ => {}
                    });
                    if over {
                        self.derived.insert(var);
                    }
                }
                if let Some(axis) = self.yields_sharded(&value) {
                    self.sharded.insert(var, axis);
                }
                out.push(Stmt::Let { var, value });
            }
            Stmt::Expr(mut value) => {
                self.hoist_scalar(&mut value, out)?;
                self.expr(&mut value, &[])?;
                out.push(Stmt::Expr(value));
            }
            Stmt::Tensor(def) => self.tensor(def, out)?,
            Stmt::Extent { var, value, what } => {
                // A number computed from the whole extent, the same on
                // every rank; ranges over it are ranges over the symbol.
                if self.is_over(&value) {
                    self.derived.insert(var);
                }
                out.push(Stmt::Extent { var, value, what });
            }
            Stmt::SameExtent { .. } => out.push(s),
            Stmt::CheckResultDim { tensor, path, axis, symbol, mut declared } => {
                if path.is_empty() && self.sharded.get(&tensor) == Some(&axis) && declared == dvar(self.global) {
                    declared = dvar(self.local);
                }
                out.push(Stmt::CheckResultDim { tensor, path, axis, symbol, declared });
            }
            Stmt::Reshape { source, .. } if self.sharded.contains_key(&source) => {
                let t = self.vname(source);
                return Err(self
                    .error(format!("`{t}` is split across ranks and cannot be reshaped"))
                    .help("reshape the blocks before the call, or define the reshaped tensor pointwise"));
            }
            Stmt::Recurrence(r) => self.recurrence(r, out)?,
            Stmt::Reshape { .. } => out.push(s),
            Stmt::Comm(_) | Stmt::Gemm(_) | Stmt::Conv(_) | Stmt::Rows(_) | Stmt::Sweep(_) => {
                return Err(Diagnostic::bug(self.span, "sharding runs on the IR as lowered"));
            }
        }
        Ok(())
    }

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
    fn recurrence(&mut self, mut r: crate::ir::Recurrence, out: &mut Vec<Stmt>) -> Result<(), Diagnostic> {
        let t = self.vname(r.var);
        let seq_over =
            r.seq.iter().any(|(a, l)| self.is_over(&r.extents[*a]) || self.is_over(&l.start) || self.is_over(&l.end));
        if seq_over {
            return Err(self
                .error(format!("the recurrence `{t}` runs along `{}`", self.symbol))
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
            // sharded tensors there are errors, from `access`).
            self.nested += 1;
            let mut res = Ok(());
            for c in &mut r.clauses {
                if res.is_ok() {
                    res = self.expr(&mut c.body, &[]);
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
                return Err(self
                    .error(format!("a clause of the recurrence `{t}` writes a single point along `{}`", self.symbol))
                    .note("a literal position along the sharded axis belongs to one rank")
                    .help(format!(
                        "write the clause over a range of `{}` and guard the points (`where`)",
                        self.symbol
                    )));
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
                    .error(format!(
                        "a clause of `{t}` reads the current step of `{t}` at an offset along `{}`",
                        self.symbol
                    ))
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
            let res = self.expr(&mut c.body, &[p]);
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

    /// The sharded tensors that the body of `def` (over the block, index
    /// `i`) reads at offsets from `i` along their sharded axis (constants,
    /// or offsets known by their range: `x[r + dr]` in a convolution): each
    /// gets an extended copy with the neighbours' rows ([`Comm::Extend`]),
    /// as many as the offsets reach, which the body then reads.
    /// The same for a reduction over the block (index `i`) in `body`.
    fn extend_for(&mut self, body: &Expr, own: Option<VarId>, i: VarId, ranges: &Ranges, out: &mut Vec<Stmt>) {
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
        for (t, lo, hi) in need {
            // A copy extended as far already (tensors are values: the
            // rows are the same), in scope here: read it again.
            if let Some(&(ext, elo, ehi)) = self.extended.get(&t) {
                if elo >= lo && ehi >= hi {
                    self.redirect.insert(t, ext);
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
    }

    /// The index of the loop over the symbol of the reduction `e`.
    fn b_index(&self, e: &Expr) -> Option<VarId> {
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
    fn extend_reduction(&mut self, red: &Expr, axes: Option<&[crate::ir::Axis]>, out: &mut Vec<Stmt>) -> Ranges {
        let mut ranges = Ranges::default().with_axes(axes.unwrap_or(&[]));
        if let Some(i) = self.b_index(red) {
            ranges.merge(Ranges::of(red, &[i]));
            self.extend_for(red, None, i, &ranges, out);
        }
        ranges
    }

    /// A definition: its axes over the symbol become the block; a
    /// reduction over the symbol in it (only where it has no such axis) is
    /// computed as this rank's part and all-reduced.
    fn tensor(&mut self, mut def: TensorDef, out: &mut Vec<Stmt>) -> Result<(), Diagnostic> {
        let mut own = Vec::new();
        for (k, a) in def.axes.iter_mut().enumerate() {
            if a.extent == dvar(self.global) && a.start.as_constant() == Some(0) {
                a.extent = dvar(self.local);
                self.modes.insert(a.index, Mode::Local);
                own.push((k, a.index));
            } else if self.is_over(&a.extent) || self.is_over(&a.start) {
                let t = self.vname(def.var);
                return Err(self
                    .error(format!(
                        "axis {k} of `{t}` has a range that involves `{}` but is not `0..{}`",
                        self.symbol, self.symbol
                    ))
                    .note("only axes over the whole sharded extent are split across ranks")
                    .help(format!("define `{t}` over `{}` and guard the points you need (`where`)", self.symbol)));
            }
        }
        if own.len() > 1 {
            let t = self.vname(def.var);
            return Err(self
                .error(format!("`{t}` has two axes over `{}`", self.symbol))
                .note("a rank holds a block of one axis; the other would need every rank's rows")
                .help("give the second axis a dimension symbol of its own"));
        }
        let scope: Vec<VarId> = own.iter().map(|&(_, i)| i).collect();
        if let Some(&(k, _)) = own.first() {
            self.sharded.insert(def.var, k);
            let ranges = Ranges::of(&def.body, &scope).with_axes(&def.axes);
            self.extend_for(&def.body, Some(def.var), scope[0], &ranges, out);
            self.ranges = ranges;
            self.nested += 1;
            let r = self.expr(&mut def.body, &scope);
            self.nested -= 1;
            self.redirect.clear();
            self.ranges = Ranges::default();
            r?;
            def.cost_per_point = crate::ir::cost::expr_cost(&def.body);
            out.push(Stmt::Tensor(def));
            return Ok(());
        }
        // No sharded axis: reductions over the symbol become parts.
        let whole_reduce = matches!(&def.body.kind, ExprKind::Reduce { op, loops, .. }
            if !matches!(op, RedOp::ArgMax | RedOp::ArgMin) && loops.iter().any(|l| self.is_over(&l.start) || self.is_over(&l.end)));
        if whole_reduce {
            let ExprKind::Reduce { op, .. } = &def.body.kind else { unreachable!() };
            let op = *op;
            let ranges = self.extend_reduction(&def.body, Some(&def.axes), out);
            self.ranges = ranges;
            let r = self.reduce_local(&mut def.body);
            self.ranges = Ranges::default();
            self.redirect.clear();
            r?;
            def.cost_per_point = crate::ir::cost::expr_cost(&def.body);
            let total = def.var;
            let ty = self.f.var(total).ty.clone();
            let part = self.f.add_var(&format!("{}_part", self.vname(total)), ty);
            def.var = part;
            let elem = def.elem;
            out.push(Stmt::Tensor(def));
            out.push(Stmt::Comm(Comm::AllReduce { out: total, input: part, op, elem }));
            return Ok(());
        }
        let mut hoisted = Vec::new();
        self.hoist_in_def(&mut def, &mut hoisted)?;
        out.extend(hoisted);
        self.nested += 1;
        let r = self.expr(&mut def.body, &[]);
        self.nested -= 1;
        r?;
        def.cost_per_point = crate::ir::cost::expr_cost(&def.body);
        out.push(Stmt::Tensor(def));
        Ok(())
    }

    fn over_b(&self, e: &Expr) -> bool {
        matches!(&e.kind, ExprKind::Reduce { loops, .. } if loops.iter().any(|l| self.is_over(&l.start) || self.is_over(&l.end)))
    }

    /// Moves every reduction over the symbol out of a top-level value
    /// (reachable through arithmetic only) into a `let` of its own part and
    /// its all-reduce, leaving a read of the total.
    fn hoist_scalar(&mut self, e: &mut Expr, out: &mut Vec<Stmt>) -> Result<(), Diagnostic> {
        if self.over_b(e) {
            let Repr::Scalar(_) = e.ty else {
                return Err(Diagnostic::bug(self.span, "a reduction of a non-scalar"));
            };
            let red = std::mem::replace(e, Expr::unit());
            let total = self.reduce_part(red, None, out)?;
            *e = total;
            return Ok(());
        }
        // Arithmetic, and the operands of an `assert` or `print`, are
        // evaluated once, unconditionally: their reductions can come first.
        if arithmetic(e) || matches!(e.kind, ExprKind::Assert { .. } | ExprKind::Print(_)) {
            let mut res = Ok(());
            visit::for_each_child_mut(e, &mut |c| {
                if res.is_ok() {
                    res = self.hoist_scalar(c, out);
                }
            });
            return res;
        }
        Ok(())
    }

    /// `red` (a reduction over the symbol) as this rank's part, bound to a
    /// scalar (or, with `axes`, a tensor over a definition's axes whose
    /// index variables it reads) and all-reduced; the expression that
    /// reads the total.
    fn reduce_part(
        &mut self,
        mut red: Expr,
        axes: Option<&[crate::ir::Axis]>,
        out: &mut Vec<Stmt>,
    ) -> Result<Expr, Diagnostic> {
        let ExprKind::Reduce { op, loops, wheres, body } = &red.kind else {
            return Err(Diagnostic::bug(self.span, "not a reduction"));
        };
        let (op, ty) = (*op, red.ty.clone());
        let Repr::Scalar(k) = body.ty else {
            return Err(Diagnostic::bug(self.span, "a reduction of a non-scalar"));
        };
        let arg = matches!(op, RedOp::ArgMax | RedOp::ArgMin);
        if arg && loops.len() != 1 {
            return Err(self
                .error(format!("`{}` over several indices, one of them over `{}`", op.name(), self.symbol))
                .help(format!("reduce over the `{}` index alone", self.symbol)));
        }
        // For argmax/argmin, the extremum itself (the same loops and terms).
        let best = arg.then(|| {
            let extremum = if op == RedOp::ArgMax { RedOp::Max } else { RedOp::Min };
            let e = Expr {
                kind: ExprKind::Reduce {
                    op: extremum,
                    loops: loops.clone(),
                    wheres: wheres.clone(),
                    body: body.clone(),
                },
                ty: Repr::Scalar(k),
            };
            self.fresh_binders(e)
        });
        // For argmax/argmin of floats, the first index of the extremum
        // among the terms that are not NaN (the unsharded reduction keeps
        // a NaN only when it is the first term, so a rank whose block
        // starts with one needs both; integers use `red` itself): each
        // term bound once, then guarded by `v == v`.
        let skip = (arg && k.is_float()).then(|| {
            let v = self.f.add_var("term", Repr::Scalar(k));
            let var = Expr { kind: ExprKind::Var(v), ty: Repr::Scalar(k) };
            let not_nan = Expr {
                kind: ExprKind::Binary(BinOp::Eq, Box::new(var.clone()), Box::new(var.clone())),
                ty: Repr::Scalar(ScalarKind::Bool),
            };
            let mut wheres = wheres.clone();
            wheres.push(WhereEntry::Bind(v, (**body).clone()));
            wheres.push(WhereEntry::Guard(not_nan));
            let e = Expr {
                kind: ExprKind::Reduce { op, loops: loops.clone(), wheres, body: Box::new(var) },
                ty: ty.clone(),
            };
            self.fresh_binders(e)
        });
        if self.nested > 0 {
            return Err(self.bug_nested());
        }
        // Reads of sharded tensors at offsets from the index over the
        // block (`x[r + dr]` in a convolution's kernel gradient, `dr` an
        // axis of the definition): extended copies first.
        let mut ranges = self.extend_reduction(&red, axes, out);
        for b in best.iter().chain(&skip) {
            if let Some(i) = self.b_index(b) {
                ranges.merge(Ranges::of(b, &[i]));
            }
        }
        self.ranges = ranges;
        let r = self.reduce_local(&mut red);
        let best = match (r, best) {
            (Ok(()), Some(mut b)) => self.reduce_local(&mut b).map(|()| Some(b)),
            (Ok(()), None) => Ok(None),
            (Err(e), _) => Err(e),
        };
        let skip = match (&best, skip) {
            (Ok(_), Some(mut s)) => self.reduce_local(&mut s).map(|()| Some(s)),
            _ => Ok(None),
        };
        self.ranges = Ranges::default();
        self.redirect.clear();
        let (best, skip) = (best?, skip?);
        let bind = |cx: &mut Self, value: Expr, what: &str, out: &mut Vec<Stmt>| -> VarId {
            match axes {
                None => {
                    let v = cx.f.add_var(what, value.ty.clone());
                    out.push(Stmt::Let { var: v, value });
                    v
                }
                Some(axes) => {
                    let Repr::Scalar(ek) = value.ty else { unreachable!() };
                    let v = cx.f.add_var(what, Repr::Tensor(ek, axes.len()));
                    // Each definition has index variables of its own.
                    let mut axes = axes.to_vec();
                    let mut map = HashMap::new();
                    for a in &mut axes {
                        let ty = cx.f.var(a.index).ty.clone();
                        let name = cx.vname(a.index);
                        let fresh = cx.f.add_var(&name, ty);
                        map.insert(a.index, fresh);
                        a.index = fresh;
                    }
                    let mut value = value;
                    rename_all(&mut value, &map);
                    out.push(Stmt::Tensor(TensorDef::new(v, ek, axes, value)));
                    v
                }
            }
        };
        let total_ty = match axes {
            None => ty.clone(),
            Some(axes) => match &ty {
                Repr::Scalar(ek) => Repr::Tensor(*ek, axes.len()),
                _ => return Err(Diagnostic::bug(self.span, "a reduction of a non-scalar")),
            },
        };
        let name = format!("{}_{}", op.name(), self.symbol);
        let total = self.f.add_var(&format!("{name}_total"), total_ty);
        if let Some(best) = best {
            let b = bind(self, best, &format!("{name}_best"), out);
            let i = bind(self, red, &format!("{name}_part"), out);
            let s = match skip {
                Some(s) => bind(self, s, &format!("{name}_skip"), out),
                None => i,
            };
            out.push(Stmt::Comm(Comm::AllReduceArg {
                out: total,
                best: b,
                index: i,
                skip: s,
                max: op == RedOp::ArgMax,
                elem: k,
            }));
        } else {
            let Repr::Scalar(ek) = ty else { unreachable!() };
            let p = bind(self, red, &format!("{name}_part"), out);
            out.push(Stmt::Comm(Comm::AllReduce { out: total, input: p, op, elem: ek }));
        }
        Ok(match axes {
            None => Expr { kind: ExprKind::Var(total), ty },
            Some(axes) => Expr {
                kind: ExprKind::Read {
                    tensor: total,
                    indices: axes
                        .iter()
                        .map(|a| Expr { kind: ExprKind::Var(a.index), ty: Repr::Scalar(ScalarKind::I64) })
                        .collect(),
                    checked: false,
                },
                ty,
            },
        })
    }

    /// Reductions over the symbol inside a definition without a sharded
    /// axis, reachable through arithmetic (and the definition's own
    /// guards), become tensors of parts over the definition's axes.
    fn hoist_in_def(&mut self, def: &mut TensorDef, out: &mut Vec<Stmt>) -> Result<(), Diagnostic> {
        // The definition's axes, with fresh index variables for the parts
        // (each definition defines its own).
        let mut body = std::mem::replace(&mut def.body, Expr::unit());
        let r = self.hoist_def_rec(&mut body, def, out);
        def.body = body;
        r
    }

    fn hoist_def_rec(&mut self, e: &mut Expr, def: &TensorDef, out: &mut Vec<Stmt>) -> Result<(), Diagnostic> {
        if self.over_b(e) {
            // The parts get index variables of their own (`reduce_part`).
            let red = std::mem::replace(e, Expr::unit());
            let total = self.reduce_part(red, Some(&def.axes), out)?;
            *e = total;
            return Ok(());
        }
        let descend = arithmetic(e)
            || matches!(&e.kind, ExprKind::Guarded { wheres, .. } if wheres.iter().all(|w| matches!(w, WhereEntry::Guard(_))));
        if descend {
            let mut res = Ok(());
            visit::for_each_child_mut(e, &mut |c| {
                if res.is_ok() {
                    res = self.hoist_def_rec(c, def, out);
                }
            });
            return res;
        }
        Ok(())
    }

    /// `c` with fresh variables for its loops' indices and everything its
    /// body binds (a copy of a clause beside the original).
    fn fresh_clause(&mut self, mut c: RecClause) -> RecClause {
        let mut bound: Vec<VarId> = c.loops.iter().map(|l| l.index).collect();
        visit_all(&c.body, &mut |x| visit::for_each_binder(x, &mut |v| bound.push(v)));
        let mut map = HashMap::new();
        for v in bound {
            let ty = self.f.var(v).ty.clone();
            let name = self.vname(v);
            map.insert(v, self.f.add_var(&name, ty));
        }
        rename_all(&mut c.body, &map);
        for l in &mut c.loops {
            l.index = map.get(&l.index).copied().unwrap_or(l.index);
            rename_dim(&mut l.start, &map);
            rename_dim(&mut l.end, &map);
        }
        c
    }

    /// `e` with fresh variables for everything it binds (a copy of an
    /// expression must not define its variables a second time).
    fn fresh_binders(&mut self, mut e: Expr) -> Expr {
        let mut bound = Vec::new();
        visit_all(&e, &mut |x| visit::for_each_binder(x, &mut |v| bound.push(v)));
        let mut map = HashMap::new();
        for v in bound {
            let ty = self.f.var(v).ty.clone();
            let name = self.vname(v);
            map.insert(v, self.f.add_var(&name, ty));
        }
        rename_all(&mut e, &map);
        e
    }

    /// Rewrites reads of sharded tensors and reductions over the symbol in
    /// `e`; `scope` holds the index variables that run over this rank's
    /// block.
    fn expr(&mut self, e: &mut Expr, scope: &[VarId]) -> Result<(), Diagnostic> {
        match &mut e.kind {
            ExprKind::Read { tensor, indices, checked } => {
                if let Some(&ext) = self.redirect.get(tensor) {
                    *tensor = ext;
                }
                // A tensor not held in blocks read at a block's index: its
                // bounds were proven for the whole extent; check them.
                if !self.sharded.contains_key(tensor)
                    && indices.iter().any(|ix| matches!(ix.kind, ExprKind::Var(i) if scope.contains(&i)))
                {
                    *checked = true;
                }
                let tensor = *tensor;
                self.access(tensor, indices, scope)
            }
            ExprKind::View { tensor, indices } => {
                if let Some(&ext) = self.redirect.get(tensor) {
                    *tensor = ext;
                }
                let tensor = *tensor;
                self.access(tensor, indices, scope)
            }
            ExprKind::Len { tensor, axis } => {
                if self.sharded.get(tensor) == Some(axis) {
                    e.kind = ExprKind::Dim(dvar(self.global));
                }
                Ok(())
            }
            ExprKind::Var(v) if self.sharded.contains_key(v) => {
                let t = self.vname(*v);
                Err(self
                    .error(format!("`{t}` is split across ranks and is used whole here"))
                    .note("a call or an operation on the whole tensor would see only this rank's block")
                    .help(format!(
                        "write the computation on `{t}` inside this function with indices (`let y[n, ..] = ...{t}[n, ..]...`)"
                    )))
            }
            ExprKind::Field(t, _) if matches!(&t.kind, ExprKind::Var(t) if self.tuples.contains_key(t)) => Ok(()),
            ExprKind::Var(v) if self.tuples.contains_key(v) => {
                let t = self.vname(*v);
                Err(self
                    .error(format!("the tuple `{t}` holds tensors split across ranks and is used whole here"))
                    .help("take its elements apart first (`let (a, b) = ...;`)"))
            }
            ExprKind::Var(v) if self.modes.contains_key(v) => {
                // An index over the block used as a value: its global value.
                let shift = self.shift(*v);
                let old = std::mem::replace(e, Expr::unit());
                *e = plus(old, shift);
                Ok(())
            }
            ExprKind::Dim(d) => {
                *d = self.global_dim(d);
                Ok(())
            }
            _ => self.expr_rest(e, scope),
        }
    }

    /// `d` with every index over the block replaced by its global value.
    fn global_dim(&self, d: &Dim) -> Dim {
        d.substitute(&|v: DimVar| {
            self.modes.contains_key(&VarId(v.0)).then(|| Dim::var(v).add(&self.shift(VarId(v.0))))
        })
    }

    /// What an index variable over the block adds to its value to give
    /// the global index.
    fn shift(&self, v: VarId) -> Dim {
        match self.modes.get(&v) {
            Some(Mode::Local) => dvar(self.offset),
            Some(Mode::Storage(lo)) => dvar(self.offset).add_const(-lo),
            None => Dim::zero(),
        }
    }

    fn access(&mut self, tensor: VarId, indices: &mut [Expr], scope: &[VarId]) -> Result<(), Diagnostic> {
        {
            {
                let sharded_axis = self.sharded.get(&tensor).copied();
                for (k, ix) in indices.iter_mut().enumerate() {
                    let own = offset_of(ix, scope, &self.ranges).is_some();
                    if !(Some(k) == sharded_axis && own) {
                        self.expr(ix, scope)?;
                    }
                }
                if let Some(&axis) = self.sharded.get(&tensor) {
                    let Some(ix) = indices.get_mut(axis) else {
                        let t = self.vname(tensor);
                        return Err(self
                            .error(format!(
                                "`{t}` is split across ranks along axis {axis}, which this access leaves whole"
                            ))
                            .help("read it element by element at the point's own index"));
                    };
                    let at = offset_of(ix, scope, &self.ranges);
                    let t = self.vname(tensor);
                    let Some(off) = at else {
                        return Err(self
                            .error(format!(
                                "`{t}` is read along the sharded axis `{}` at an index that is not the point's own index over `{}`",
                                self.symbol, self.symbol
                            ))
                            .note("that element may be on another rank: a gather along the sharded axis would need every rank's block")
                            .help(format!(
                                "read `{t}` at the index of a definition or reduction over `{}` plus an offset of known range (a constant, or a reduction index or axis of constant range: `{t}[r + dr]`), or pass it unsharded (a dimension of its own)",
                                self.symbol
                            )));
                    };
                    let h = self.halo.get(&tensor).copied().unwrap_or(0);
                    let extended = self.redirect.values().any(|&e| e == tensor);
                    if (off.lo, off.hi) != (0, 0) && self.in_rec != Some(tensor) && !extended {
                        return Err(self
                            .error(format!(
                                "`{t}` is read along the sharded axis `{}` at an offset from the point's index",
                                self.symbol
                            ))
                            .note("sharded functions exchange halos for the reads of a recurrence's earlier steps (`u[t - 1, i - 1, j]`), not for other tensors")
                            .help(format!(
                                "write the stencil as a recurrence over another axis, or shard `{t}` along an axis it is not shifted on"
                            )));
                    }
                    // The position along the sharded axis: the global index,
                    // less the offset, plus the halo. The index holds the
                    // global index where it reads a where-bound variable
                    // (whose value was made global), otherwise `i +
                    // shift(i)` plus the offset.
                    let i = off.index;
                    let shift = if off.bound { Dim::zero() } else { self.shift(i) };
                    let delta = shift.sub(&dvar(self.offset)).add_const(h);
                    *ix = match constant_offset(ix, scope) {
                        Some((_, c)) if !off.bound => {
                            let var = Expr { kind: ExprKind::Var(i), ty: Repr::Scalar(ScalarKind::I64) };
                            plus(var, delta.add_const(c))
                        }
                        _ => plus(std::mem::replace(ix, Expr::unit()), delta),
                    };
                }
            }
        }
        Ok(())
    }

    fn expr_rest(&mut self, e: &mut Expr, scope: &[VarId]) -> Result<(), Diagnostic> {
        match &mut e.kind {
            ExprKind::Reduce { loops, .. } => {
                let over = loops.iter().any(|l| self.is_over(&l.start) || self.is_over(&l.end));
                if !over {
                    for l in loops.iter_mut() {
                        l.start = self.global_dim(&l.start);
                        l.end = self.global_dim(&l.end);
                    }
                    self.nested += 1;
                    let mut res = Ok(());
                    visit::for_each_child_mut(e, &mut |c| {
                        if res.is_ok() {
                            res = self.expr(c, scope);
                        }
                    });
                    self.nested -= 1;
                    return res;
                }
                if !scope.is_empty() {
                    return Err(self
                        .error(format!("a reduction over `{}` inside a definition over `{}`", self.symbol, self.symbol))
                        .note("each point would need every rank's rows")
                        .help("reduce in a definition without the sharded axis, or pass one operand unsharded"));
                }
                Err(self.bug_nested())
            }
            ExprKind::Tuple(items) => {
                for i in items.iter_mut() {
                    self.expr(i, scope)?;
                    if self.yields_sharded(i).is_some() {
                        return Err(self
                            .error("a tuple holds a tensor split across ranks".to_string())
                            .help("return the sharded tensor from the function directly, or keep it in a variable"));
                    }
                }
                Ok(())
            }
            ExprKind::Block { stmts, .. } => {
                // Nested statements: definitions inside a value. Extended
                // copies made in here are not in scope after it.
                let outer_extended = self.extended.clone();
                let inner = std::mem::take(stmts);
                let mut new = Vec::new();
                for s in inner {
                    match s {
                        Stmt::Let { .. }
                        | Stmt::Tensor(_)
                        | Stmt::Expr(_)
                        | Stmt::Extent { .. }
                        | Stmt::SameExtent { .. }
                        | Stmt::CheckResultDim { .. } => {
                            if !scope.is_empty() {
                                let mut s = s;
                                let mut res = Ok(());
                                visit::for_each_stmt_expr_mut(&mut s, &mut |c| {
                                    if res.is_ok() {
                                        res = self.expr(c, scope);
                                    }
                                });
                                res?;
                                new.push(s);
                            } else {
                                self.stmt(s, &mut new)?;
                            }
                        }
                        other => self.stmt(other, &mut new)?,
                    }
                }
                let ExprKind::Block { result, .. } = &mut e.kind else { unreachable!() };
                let mut result = std::mem::replace(result.as_mut(), Expr::unit());
                let r =
                    if scope.is_empty() { self.result(&mut result, &mut new) } else { self.expr(&mut result, scope) };
                let ExprKind::Block { stmts, result: slot } = &mut e.kind else { unreachable!() };
                *stmts = new;
                **slot = result;
                self.extended = outer_extended;
                r
            }
            _ => {
                let mut res = Ok(());
                visit::for_each_child_mut(e, &mut |c| {
                    if res.is_ok() {
                        res = self.expr(c, scope);
                    }
                });
                res
            }
        }
    }

    /// Calls in a top-level value (outside points and reductions) that pass
    /// a sharded tensor: the callee's statements are compiled here, in the
    /// sharded context, and the call becomes a read of its result.
    fn inline_calls(&mut self, e: &mut Expr, out: &mut Vec<Stmt>) -> Result<(), Diagnostic> {
        let descend = arithmetic(e) || matches!(e.kind, ExprKind::Call { .. } | ExprKind::Field(..));
        if !descend {
            return Ok(());
        }
        let mut res = Ok(());
        visit::for_each_child_mut(e, &mut |c| {
            if res.is_ok() {
                res = self.inline_calls(c, out);
            }
        });
        res?;
        let ExprKind::Call { func, args } = &e.kind else { return Ok(()) };
        let passes_sharded = args.iter().any(|a| {
            let mut found = false;
            crate::ir::visit::visit_var_uses(a, &mut |v| {
                found |= self.sharded.contains_key(&v) || self.tuples.contains_key(&v);
            });
            found
        });
        if !passes_sharded {
            return Ok(());
        }
        let Some(g) = self.lowered.get(func.index()) else {
            return Err(Diagnostic::bug(self.span, format!("the called function {} is missing", func.0)));
        };
        let func = g.name.clone();
        if self.inlining >= MAX_INLINE_DEPTH {
            return Err(self
                .error(format!("calls from it inline `{func}` without end (a recursive function?)"))
                .note("a sharded function compiles the functions it calls with sharded tensors in its own context"));
        }
        let g = g.clone();
        let ExprKind::Call { args, .. } = std::mem::replace(&mut e.kind, ExprKind::Tuple(Vec::new())) else {
            unreachable!()
        };
        let (stmts, result) = self.inline_body(&g, args)?;
        self.inlining += 1;
        let mut r = Ok(());
        for s in stmts {
            r = self.stmt(s, out);
            if r.is_err() {
                break;
            }
        }
        self.inlining -= 1;
        r?;
        *e = result;
        Ok(())
    }

    /// The statements of `g` with fresh variables, its parameters bound to
    /// `args` and its entry's dimensions to the arguments' extents (the
    /// sharded symbol where an argument's sharded axis gives one); and its
    /// result.
    fn inline_body(&mut self, g: &Function, args: Vec<Expr>) -> Result<(Vec<Stmt>, Expr), Diagnostic> {
        let unsupported = g.body.iter().any(|s| {
            !matches!(
                s,
                Stmt::Let { .. }
                    | Stmt::Tensor(_)
                    | Stmt::Expr(_)
                    | Stmt::Extent { .. }
                    | Stmt::SameExtent { .. }
                    | Stmt::CheckResultDim { .. }
                    | Stmt::Recurrence(_)
            )
        }) || g.device.is_some()
            || g.checkpointed.is_some();
        let mut odd = false;
        for s in &g.body {
            if let Stmt::Recurrence(r) = s {
                odd |= r.clauses.iter().any(|c| !c.prelude.is_empty());
            }
            visit::for_each_stmt_expr(s, &mut |x| {
                visit_all(x, &mut |y| {
                    odd |= matches!(
                        y.kind,
                        ExprKind::Collect { .. }
                            | ExprKind::DynMap { .. }
                            | ExprKind::JaggedRow { .. }
                            | ExprKind::ShapeOf { .. }
                    )
                })
            });
        }
        if unsupported || odd || args.len() != g.params.len() {
            return Err(self
                .error(format!("`{}` is called with a sharded tensor, and its body cannot be compiled in the sharded context", g.name))
                .note("a sharded function compiles the functions it passes sharded tensors to as part of itself; this one has a recurrence, a reshape or a construct that needs the whole tensor")
                .help("write that part in the sharded function itself, or call the function on tensors that are not sharded"));
        }
        // Fresh variables for all of `g`'s.
        let mut map: HashMap<VarId, VarId> = HashMap::new();
        for (k, info) in g.vars.iter().enumerate() {
            let fresh = self.f.add_var(&info.source_name, info.ty.clone());
            map.insert(VarId(k as u32), fresh);
        }
        let mut stmts = Vec::new();
        let i64t = Repr::Scalar(ScalarKind::I64);
        for (&p, arg) in g.params.iter().zip(args) {
            stmts.push(Stmt::Let { var: map[&p], value: arg });
        }
        // The argument's sharded axes, known before the statements run.
        let arg_axis = |cx: &Self, stmts: &[Stmt], p: VarId| -> Option<usize> {
            stmts.iter().find_map(|s| match s {
                Stmt::Let { var, value } if *var == p => cx.yields_sharded(value),
                _ => None,
            })
        };
        for check in &g.entry {
            match check {
                EntryCheck::BindDim { dim, param, path, axis } => {
                    if !path.is_empty() {
                        return Err(self.error(format!("`{}` takes a tuple of tensors", g.name)));
                    }
                    if arg_axis(self, &stmts, map[param]) == Some(*axis) {
                        // The callee's dimension is the sharded symbol.
                        map.insert(*dim, self.global);
                    } else {
                        let value = Expr { kind: ExprKind::Len { tensor: map[param], axis: *axis }, ty: i64t.clone() };
                        stmts.push(Stmt::Let { var: map[dim], value });
                    }
                }
                EntryCheck::CheckDim { param, path, axis, symbol, expected } => {
                    if !path.is_empty() {
                        return Err(self.error(format!("`{}` takes a tuple of tensors", g.name)));
                    }
                    let held = arg_axis(self, &stmts, map[param]) == Some(*axis);
                    let mut expected = expected.clone();
                    rename_dim(&mut expected, &map);
                    if held {
                        // Blocks of the sharded axis are all this rank's.
                        if expected != dvar(self.global) {
                            return Err(self.error(format!(
                                "`{}` expects an extent other than `{}` where it is passed a sharded tensor",
                                g.name, self.symbol
                            )));
                        }
                        continue;
                    }
                    let len = self.f.add_var(&format!("{symbol}_len"), i64t.clone());
                    let value = Expr { kind: ExprKind::Len { tensor: map[param], axis: *axis }, ty: i64t.clone() };
                    stmts.push(Stmt::Let { var: len, value });
                    stmts.push(Stmt::SameExtent {
                        index: symbol.clone(),
                        a: dvar(len),
                        a_what: format!("axis {axis} of `{}` in `{}`", g.var(*param).source_name, g.name),
                        b: expected,
                        b_what: format!("`{symbol}`"),
                    });
                }
            }
        }
        for s in &g.body {
            let mut s = s.clone();
            rename_stmt(&mut s, &map);
            stmts.push(s);
        }
        let mut result = g.result.clone();
        rename_all(&mut result, &map);
        Ok((stmts, result))
    }

    /// A reduction over the symbol, computed over this rank's part of its
    /// range.
    fn reduce_local(&mut self, e: &mut Expr) -> Result<(), Diagnostic> {
        let ExprKind::Reduce { loops, .. } = &mut e.kind else {
            return Err(Diagnostic::bug(self.span, "not a reduction"));
        };
        let over: Vec<usize> =
            (0..loops.len()).filter(|&k| self.is_over(&loops[k].start) || self.is_over(&loops[k].end)).collect();
        if over.len() != 1 {
            return Err(self
                .error(format!("a reduction with two indices over `{}`", self.symbol))
                .help("give one of them a dimension symbol of its own"));
        }
        let block_end = dvar(self.offset).add(&dvar(self.local));
        // `argmax`/`argmin` answer with the index itself: global indices.
        let arg = matches!(e.kind, ExprKind::Reduce { op: RedOp::ArgMax | RedOp::ArgMin, .. });
        let ExprKind::Reduce { loops, .. } = &mut e.kind else { unreachable!() };
        let l = &mut loops[over[0]];
        if !arg && l.start.as_constant() == Some(0) && l.end == dvar(self.global) {
            // The whole range: the loop runs over local positions.
            l.end = dvar(self.local);
            self.modes.insert(l.index, Mode::Local);
        } else {
            // A part of the range (`1..B - 1`): global indices, clipped to
            // the block.
            l.start = Dim::max(&l.start, &dvar(self.offset));
            l.end = Dim::min(&l.end, &block_end);
        }
        let inner = vec![l.index];
        self.nested += 1;
        let mut res = Ok(());
        visit::for_each_child_mut(e, &mut |c| {
            if res.is_ok() {
                res = self.expr(c, &inner);
            }
        });
        self.nested -= 1;
        res
    }

    fn bug_nested(&self) -> Diagnostic {
        self.error(format!("a reduction over `{}` here cannot be combined across ranks", self.symbol))
            .note("the ranks' parts of a reduction are combined between statements, not inside a point, a branch or another reduction")
            .help(format!(
                "bind the reduction over `{}` to a `let` of its own (or a definition without the sharded axis) and use that",
                self.symbol
            ))
    }

    /// The sharded axis of the tensor `e` evaluates to, when it is one.
    fn yields_sharded(&self, e: &Expr) -> Option<usize> {
        match &e.kind {
            ExprKind::Var(v) => self.sharded.get(v).copied(),
            ExprKind::Field(t, k) => match &t.kind {
                ExprKind::Var(t) => self.tuples.get(t).and_then(|axes| axes.get(*k as usize).copied().flatten()),
                _ => None,
            },
            ExprKind::Block { result, .. } => self.yields_sharded(result),
            ExprKind::If { then, els, .. } => self.yields_sharded(then).or_else(|| self.yields_sharded(els)),
            _ => None,
        }
    }

    /// A result: sharded tensors are returned as this rank's block.
    fn result(&mut self, e: &mut Expr, out: &mut Vec<Stmt>) -> Result<(), Diagnostic> {
        match &mut e.kind {
            ExprKind::Var(v) if self.sharded.contains_key(v) => Ok(()),
            ExprKind::Tuple(items) => {
                for i in items.iter_mut() {
                    self.result(i, out)?;
                }
                Ok(())
            }
            ExprKind::Block { .. } => self.expr(e, &[]),
            _ => {
                // Calls passing sharded tensors are compiled here, and
                // reductions over the symbol computed (and combined),
                // before the result.
                self.inline_calls(e, out)?;
                if self.yields_sharded(e).is_some() {
                    return Ok(());
                }
                self.hoist_scalar(e, out)?;
                self.expr(e, &[])
            }
        }
    }
}

/// Whether `e` computes from its children without binding or choosing
/// (the reductions in it can be computed before it).
fn arithmetic(e: &Expr) -> bool {
    matches!(
        e.kind,
        ExprKind::Unary(..) | ExprKind::Binary(..) | ExprKind::Cast(..) | ExprKind::Intrinsic(..) | ExprKind::Tuple(_)
    )
}

/// `(i, c)` when `ix` is `i + c` for an index `i` in `scope` and a
/// constant `c`.
fn constant_offset(ix: &Expr, scope: &[VarId]) -> Option<(VarId, i64)> {
    Affine::of(ix, &|_| true)?.var_plus_const().filter(|(i, _)| scope.contains(i))
}

/// Offsets from a point's index known by their range: the indices of
/// reductions with constant ranges (`dr` in `x[r + dr]`), and where-bound
/// variables that hold a point's index plus such an offset (`where iy = r +
/// dr`).
#[derive(Clone, Debug, Default)]
struct Ranges {
    /// Reduction indices: their least and greatest value.
    loops: HashMap<VarId, (i64, i64)>,
    /// Where-bound variables: the point's index, and the least and greatest
    /// offset from it.
    binds: HashMap<VarId, (VarId, i64, i64)>,
}

impl Ranges {
    /// These ranges and the axes of constant range among `axes` (a
    /// definition's indices).
    fn with_axes(mut self, axes: &[crate::ir::Axis]) -> Ranges {
        for a in axes {
            if let (Some(s), Some(n)) = (a.start.as_constant(), a.extent.as_constant()) {
                self.loops.insert(a.index, (s, s + (n - 1).max(0)));
            }
        }
        self
    }

    fn merge(&mut self, o: Ranges) {
        self.loops.extend(o.loops);
        self.binds.extend(o.binds);
    }

    /// The ranges in `e`, whose point's indices are `scope` (variables are
    /// bound once, so one table serves the whole expression).
    fn of(e: &Expr, scope: &[VarId]) -> Ranges {
        let mut r = Ranges::default();
        visit_all(e, &mut |x| {
            let wheres = match &x.kind {
                ExprKind::Reduce { loops, wheres, .. } => {
                    for l in loops {
                        if let (Some(a), Some(b)) = (l.start.as_constant(), l.end.as_constant()) {
                            r.loops.insert(l.index, (a, a.max(b - 1)));
                        }
                    }
                    wheres
                }
                ExprKind::Guarded { wheres, .. } => wheres,
                _ => return,
            };
            for w in wheres {
                if let WhereEntry::Bind(v, value) = w {
                    let mut at = None;
                    match (linear(value, scope, &r, &mut at), at) {
                        (Some((lo, hi)), Some((i, _))) => {
                            r.binds.insert(*v, (i, lo, hi));
                        }
                        (Some(range), None) => {
                            r.loops.insert(*v, range);
                        }
                        _ => {}
                    }
                }
            }
        });
        r
    }
}

/// An index along a sharded axis: the point's index `index` plus an offset
/// between `lo` and `hi`, directly or through a where-bound variable
/// (`bound`).
#[derive(Clone, Copy, Debug)]
struct Offset {
    index: VarId,
    lo: i64,
    hi: i64,
    bound: bool,
}

/// The index `ix` as the point's own index (one of `scope`) plus an offset
/// of known range: sums and differences of constants, reduction indices of
/// constant range and their constant multiples, with the point's index
/// (directly or through a where-bound variable) once, added.
fn offset_of(ix: &Expr, scope: &[VarId], ranges: &Ranges) -> Option<Offset> {
    let mut at = None;
    let (lo, hi) = linear(ix, scope, ranges, &mut at)?;
    at.map(|(index, bound)| Offset { index, lo, hi, bound })
}

/// The range of `e`, less the point's index it holds (noted in `at`): `e`
/// in its affine form, the point's index (or a where-bound variable that
/// holds it) added once, every other variable a reduction index or a
/// where-bound variable of known range.
fn linear(e: &Expr, scope: &[VarId], ranges: &Ranges, at: &mut Option<(VarId, bool)>) -> Option<(i64, i64)> {
    let known = |v: VarId| scope.contains(&v) || ranges.binds.contains_key(&v) || ranges.loops.contains_key(&v);
    let form = Affine::of(e, &known)?;
    let c = form.rest.as_constant()?;
    let (mut lo, mut hi) = (c, c);
    for &(v, k) in &form.terms {
        let (a, b) = if scope.contains(&v) {
            if k != 1 || at.is_some() {
                return None;
            }
            *at = Some((v, false));
            (0, 0)
        } else if let Some(&(i, a, b)) = ranges.binds.get(&v) {
            if k != 1 || at.is_some() {
                return None;
            }
            *at = Some((i, true));
            (a, b)
        } else {
            let &(a, b) = ranges.loops.get(&v)?;
            let (x, y) = (a.checked_mul(k)?, b.checked_mul(k)?);
            (x.min(y), x.max(y))
        };
        lo = lo.checked_add(a)?;
        hi = hi.checked_add(b)?;
    }
    Some((lo, hi))
}

/// Calls `f` on `e` and every expression inside it, statements included.
fn visit_all(e: &Expr, f: &mut dyn FnMut(&Expr)) {
    f(e);
    visit::for_each_child(e, &mut |c| visit_all(c, f));
}

/// Renames variables everywhere in `e`: reads, binders, and dimensions.
fn rename_all(e: &mut Expr, map: &HashMap<VarId, VarId>) {
    let dim = |d: &mut Dim| {
        *d = d.substitute(&|v: DimVar| map.get(&VarId(v.0)).map(|&to| dvar(to)));
    };
    match &mut e.kind {
        ExprKind::Block { stmts, result } => {
            // Statements rename their binders too; once each.
            stmts.iter_mut().for_each(|s| rename_stmt(s, map));
            rename_all(result, map);
            return;
        }
        ExprKind::Var(v) => {
            if let Some(&to) = map.get(v) {
                *v = to;
            }
        }
        ExprKind::Dim(d) => dim(d),
        ExprKind::Read { tensor, .. } | ExprKind::View { tensor, .. } | ExprKind::Len { tensor, .. } => {
            if let Some(&to) = map.get(tensor) {
                *tensor = to;
            }
        }
        ExprKind::Reduce { loops, wheres, .. } => {
            for l in loops.iter_mut() {
                if let Some(&to) = map.get(&l.index) {
                    l.index = to;
                }
                dim(&mut l.start);
                dim(&mut l.end);
            }
            for w in wheres.iter_mut() {
                if let WhereEntry::Bind(v, _) = w {
                    if let Some(&to) = map.get(v) {
                        *v = to;
                    }
                }
            }
        }
        ExprKind::Guarded { wheres, .. } => {
            for w in wheres.iter_mut() {
                if let WhereEntry::Bind(v, _) = w {
                    if let Some(&to) = map.get(v) {
                        *v = to;
                    }
                }
            }
        }
        _ => {}
    }
    visit::for_each_child_mut(e, &mut |c| rename_all(c, map));
}

fn rename_dim(d: &mut Dim, map: &HashMap<VarId, VarId>) {
    *d = d.substitute(&|v: DimVar| map.get(&VarId(v.0)).map(|&to| dvar(to)));
}

/// Renames every variable of a statement (binders, reads, dimensions) by
/// `map`; for the statements an inlined body may hold (`inline_body`).
fn rename_stmt(s: &mut Stmt, map: &HashMap<VarId, VarId>) {
    let var = |v: &mut VarId| {
        if let Some(&to) = map.get(v) {
            *v = to;
        }
    };
    match s {
        Stmt::Let { var: v, value } => {
            var(v);
            rename_all(value, map);
        }
        Stmt::Expr(value) => rename_all(value, map),
        Stmt::Tensor(def) => {
            var(&mut def.var);
            for a in &mut def.axes {
                var(&mut a.index);
                rename_dim(&mut a.start, map);
                rename_dim(&mut a.extent, map);
            }
            rename_all(&mut def.body, map);
        }
        Stmt::Extent { var: v, value, .. } => {
            var(v);
            rename_dim(value, map);
        }
        Stmt::SameExtent { a, b, .. } => {
            rename_dim(a, map);
            rename_dim(b, map);
        }
        Stmt::CheckResultDim { tensor, declared, .. } => {
            var(tensor);
            rename_dim(declared, map);
        }
        Stmt::Reshape { var: v, source, dims, .. } => {
            var(v);
            var(source);
            dims.iter_mut().for_each(|d| rename_dim(d, map));
        }
        Stmt::Recurrence(r) => {
            var(&mut r.var);
            r.extents.iter_mut().for_each(|d| rename_dim(d, map));
            for (_, l) in &mut r.seq {
                var(&mut l.index);
                rename_dim(&mut l.start, map);
                rename_dim(&mut l.end, map);
            }
            for c in &mut r.clauses {
                for cv in &mut c.cover {
                    if let crate::ir::Cover::Range(a, b) = cv {
                        rename_dim(a, map);
                        rename_dim(b, map);
                    }
                }
                for l in &mut c.loops {
                    var(&mut l.index);
                    rename_dim(&mut l.start, map);
                    rename_dim(&mut l.end, map);
                }
                c.prelude.iter_mut().for_each(|s| rename_stmt(s, map));
                rename_all(&mut c.body, map);
            }
        }
        Stmt::Gemm(_) | Stmt::Conv(_) | Stmt::Rows(_) | Stmt::Sweep(_) | Stmt::Comm(_) => {}
    }
}

/// How an index variable over the block holds its value.
#[derive(Clone, Copy, Debug)]
enum Mode {
    /// The position in the block: the global index less the offset.
    Local,
    /// The position in a recurrence's storage, whose sharded axis has `lo`
    /// halo rows before the block.
    Storage(i64),
}

/// `e + d` (`e` itself when `d` is zero).
fn plus(e: Expr, d: Dim) -> Expr {
    if d.as_constant() == Some(0) {
        return e;
    }
    let i64t = Repr::Scalar(ScalarKind::I64);
    Expr {
        kind: ExprKind::Binary(BinOp::Add, Box::new(e), Box::new(Expr { kind: ExprKind::Dim(d), ty: i64t.clone() })),
        ty: i64t,
    }
}

struct RecIndexLoop(usize);

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
fn loop_at(at: &[crate::ir::RecIndex], a: usize) -> Option<RecIndexLoop> {
    match at.get(a) {
        Some(crate::ir::RecIndex::Loop(k)) => Some(RecIndexLoop(*k)),
        _ => None,
    }
}

/// Moves every all-reduce down to just before the first statement that
/// reads what it combines: all-reduces that nothing needs in between end
/// up next to each other, and a back end sends them in one message (a
/// gradient's sums over the batch, all read by the update at the end).
fn sink_reductions(body: &mut Vec<Stmt>) {
    let mut i = body.len();
    while i > 0 {
        i -= 1;
        let Stmt::Comm(c @ (Comm::AllReduce { .. } | Comm::AllReduceArg { .. })) = &body[i] else { continue };
        let Some(out) = c.defines() else { continue };
        let mut to = i + 1;
        while to < body.len() {
            let mut reads = false;
            crate::ir::visit::visit_stmt_var_uses(&body[to], &mut |v| reads |= v == out);
            if reads {
                break;
            }
            to += 1;
        }
        if to > i + 1 {
            let s = body.remove(i);
            body.insert(to - 1, s);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::ir::{Comm, Stmt};

    /// The program lowered (the driver runs `shard::run` on it), or its
    /// first error.
    fn sharded(src: &str) -> Result<crate::ir::Program, String> {
        let ast = crate::syntax::parse_str(src).map_err(|d| d[0].message.clone())?;
        crate::driver::lower(ast, &crate::codegen::Options::default()).map(|l| l.ir).map_err(|d| d[0].message.clone())
    }

    fn comms(p: &crate::ir::Program) -> Vec<Comm> {
        p.fns[0].body.iter().filter_map(|s| if let Stmt::Comm(c) = s { Some(c.clone()) } else { None }).collect()
    }

    #[test]
    fn a_gradient_over_the_batch_is_local_parts_and_one_all_reduce_each() {
        let p = sharded(
            "#[shard(B)]
            fn step(x: [f32; B, I], w: [f32; I], t: [f32; B]) -> ([f32; I], f32) {
                let y[n] = sum[i](x[n, i] * w[i]);
                let l = sum[n]((y[n] - t[n]) * (y[n] - t[n])) / (B as f32);
                (@l / @w, l)
            }",
        )
        .unwrap();
        let c = comms(&p);
        assert_eq!(c.len(), 2, "{c:?}");
        assert!(c.iter().all(|c| matches!(c, Comm::AllReduce { op: crate::base::ops::RedOp::Sum, .. })));
        let parts = p.fns[0].shard.as_ref().and_then(|s| s.parts.as_ref()).unwrap();
        assert_eq!(p.fns[0].var(parts.local).source_name, "B_local");
        assert!(!parts.halo);
    }

    #[test]
    fn a_stencil_over_time_exchanges_halos_in_its_steps() {
        let p = sharded(
            "#[shard(N)]
            fn heat(u0: [f64; N, M], steps: i64) -> [f64; N, M] {
                let u[0, i, j] = u0[i, j];
                let u[t in 1..steps, i in 1..N - 1, j] = u[t - 1, i - 1, j] + u[t - 1, i + 1, j];
                let last[i, j] = u[steps - 1, i, j];
                last
            }",
        )
        .unwrap();
        let rec = p.fns[0].body.iter().find_map(|s| if let Stmt::Recurrence(r) = s { Some(r) } else { None }).unwrap();
        // The step's clause in three: its interior rows after the start of
        // the exchange, its edge rows (below, above) after the wait.
        let preludes: Vec<_> = rec.clauses.iter().map(|c| &c.prelude[..]).collect();
        assert!(
            matches!(
                preludes[..],
                [
                    [],
                    [Stmt::Comm(Comm::HaloStart { lo: 1, hi: 1, axis: 1, .. })],
                    [Stmt::Comm(Comm::HaloWait { .. })],
                    []
                ]
            ),
            "{preludes:?}"
        );
        assert!(p.fns[0].shard.as_ref().and_then(|s| s.parts.as_ref()).unwrap().halo);
    }

    #[test]
    fn a_halo_reading_clause_splits_into_interior_and_edge_rows() {
        // Reads two rows below and one above: the interior starts two rows
        // into the block and ends one row before its end (storage rows:
        // 2 halo rows, the block, 1 halo row).
        let p = sharded(
            "#[shard(N)]
            fn f(u0: [f32; N], steps: i64) -> [f32; N] {
                let u[0, i] = u0[i];
                let u[t in 1..steps, i in 2..N - 1] = u[t - 1, i - 2] + u[t - 1, i + 1] + u[t - 1, i];
                let last[i] = u[steps - 1, i];
                last
            }",
        )
        .unwrap();
        let text = crate::ir::pretty::pretty_function(&p, &p.fns[0]);
        expect_test::expect![[r#"
            fn f(u0: tensor<f32, 1>, steps: i64) -> tensor<f32, 1> {
                bind N_local = u0.shape[0]
                extent u_axis0_len = max(1, steps) ("max(1, steps)")
                recurrence u[u_axis0_len, N_local + 3]: f32 window axis 0 slots 2 clear_steps
                    sequential axis 0: t in 0..u_axis0_len
                    clause [t, i] when [= 0] over [i in 2..N_local + 2] (cost 2) = read u0[i + -2] unchecked
                    at each step of the next clause:
                        start halo exchange of u at axis 0 = t - 1i64, axis 1: 2 rows below, 1 above
                    clause [t, i_2] when [in 1..steps] over [i_2 in min(min(N - 1, N_local + N_offset) - N_offset + 2, 4)..min(min(N - 1, N_local + N_offset) - N_offset + 2, max(N_local + 1, min(min(N - 1, N_local + N_offset) - N_offset + 2, 4)))] (cost 21) = ((read u[t - 1i64, i_2 + -2] unchecked) + (read u[t - 1i64, i_2 + 1] unchecked)) + (read u[t - 1i64, i_2] unchecked)
                    at each step of the next clause:
                        wait for the halo exchange of u
                    clause [t, i_4] when [in 1..steps] over [i_4 in max(2, N_offset) - N_offset + 2..min(min(N - 1, N_local + N_offset) - N_offset + 2, 4)] (cost 21) = ((read u[t - 1i64, i_4 + -2] unchecked) + (read u[t - 1i64, i_4 + 1] unchecked)) + (read u[t - 1i64, i_4] unchecked)
                    clause [t, i_5] when [in 1..steps] over [i_5 in min(min(N - 1, N_local + N_offset) - N_offset + 2, max(N_local + 1, min(min(N - 1, N_local + N_offset) - N_offset + 2, 4)))..min(N - 1, N_local + N_offset) - N_offset + 2] (cost 21) = ((read u[t - 1i64, i_5 + -2] unchecked) + (read u[t - 1i64, i_5 + 1] unchecked)) + (read u[t - 1i64, i_5] unchecked)
                tensor last[i_3 in 0..N_local]: f32 (cost 7) = read u[steps - 1i64, i_3 + 2] checked
                result last
            }
        "#]].assert_eq(&text);
    }

    #[test]
    fn reads_at_offsets_of_known_range_extend_by_the_range() {
        // A convolution's rows through where-bound variables: two rows each
        // way for a kernel of five rows centred on the point.
        let p = sharded(
            "#[shard(H)]
            fn conv(x: [f32; H, W], k: [f32; 5, 3]) -> [f32; H, W] {
                let y[r in 0..H, s in 0..W] = sum[dr, ds](if iy >= 0 && iy < H && ix >= 0 && ix < W { x[iy, ix] } else { 0.0 } * k[dr, ds]) where iy = r + dr - 2, ix = s + ds - 1;
                y
            }",
        )
        .unwrap();
        let c = comms(&p);
        assert!(matches!(c[..], [Comm::Extend { lo: 2, hi: 2, axis: 0, .. }]), "{c:?}");
        // A window read directly at `i + d`: rows after the block only.
        let p = sharded(
            "#[shard(N)]
            fn window(v: [f64; N]) -> [f64; N] {
                let y[i in 0..N] = sum[d in 0..4](if i + d < N { v[i + d] } else { 0.0 });
                y
            }",
        )
        .unwrap();
        let c = comms(&p);
        assert!(matches!(c[..], [Comm::Extend { lo: 0, hi: 3, axis: 0, .. }]), "{c:?}");
    }

    #[test]
    fn reads_of_other_ranks_rows_are_errors_that_say_why() {
        let gather = sharded(
            "#[shard(B)]
            fn g(x: [f32; B], idx: [i64; B]) -> [f32; B] {
                let y[n] = x[idx[n]];
                y
            }",
        );
        assert!(gather.unwrap_err().contains("not the point's own index"));
        let along = sharded(
            "#[shard(B)]
            fn c(x: [f32; B]) -> [f32; B] {
                let c[0] = x[0];
                let c[n in 1..B] = c[n - 1] + x[n];
                c
            }",
        );
        assert!(along.unwrap_err().contains("runs along `B`"));
    }
}
