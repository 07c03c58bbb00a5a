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
//!   `argmax`/`argmin`). In a recurrence without a sharded axis the
//!   parts and all-reduces of a clause's reductions go in the clause's
//!   prelude: they run at every step it covers.
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
//! error that says why and what to write instead, at the construct that
//! needs the rows (`ir::Function::spans`: the reduction, the clause, else
//! the statement being rewritten, in an inlined callee its own), with
//! labels at the calls that inlined it and at the attribute.

mod halo;
mod inline;
mod offsets;

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

use inline::{rename_all, rename_dim};
use offsets::{constant_offset, offset_of, Ranges};

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
    /// The `#[shard]` attribute.
    span: Span,
    /// The innermost construct of the source being rewritten (a `let`, a
    /// definition, a clause), and how deep in inlined calls it is: where
    /// errors point when nothing more precise is known.
    site: Option<(Span, u32)>,
    /// The calls being inlined, outermost first: the callee's name and
    /// where it is called (the construct holding the call).
    calls: Vec<(String, Option<Span>)>,
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
    /// The extended copies that a later statement reads again: their
    /// `Comm::ExtendStart` keeps the whole block ([`whole_copies`]).
    reread: std::collections::HashSet<VarId>,
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
        site: None,
        calls: Vec::new(),
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
        reread: Default::default(),
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
                        .error_at(
                            cx.span_of(*param),
                            format!(
                                "parameter `{p}` has an axis whose extent involves `{symbol}` but is not `{symbol}`"
                            ),
                        )
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
    whole_copies(&mut body, &cx.reread);
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
    /// An error at the construct being rewritten (see `error_at`).
    fn error(&self, msg: String) -> Diagnostic {
        self.error_at(None, msg)
    }

    /// An error at `at` (a span of the construct at the current depth of
    /// inlining), else at the construct being rewritten, else at the
    /// attribute; with a label at each call that brought it into the
    /// sharded function and one at the attribute.
    fn error_at(&self, at: Option<Span>, msg: String) -> Diagnostic {
        let (primary, depth) = match (at, self.site) {
            (Some(s), _) => (Some(s), self.inlining as usize),
            (None, Some((s, d))) => (Some(s), d as usize),
            (None, None) => (None, 0),
        };
        let Some(primary) = primary else {
            return Diagnostic::error(self.span, format!("in sharded function `{}`: {msg}", self.name));
        };
        let mut d = Diagnostic::error(primary, format!("in sharded function `{}`: {msg}", self.name));
        for (callee, call) in self.calls.iter().take(depth) {
            if let Some(call) = call {
                d = d.label(*call, format!("`{callee}` is called here, and compiled in the sharded context"));
            }
        }
        d.label(self.span, format!("`{}` is sharded along `{}` here", self.name, self.symbol))
    }

    /// The reduction `e` in the source (through its index variables, the
    /// one over the symbol first).
    fn reduction_span(&self, e: &Expr) -> Option<Span> {
        let ExprKind::Reduce { loops, .. } = &e.kind else { return None };
        let over = loops.iter().filter(|l| self.is_over(&l.start) || self.is_over(&l.end));
        over.chain(loops.iter()).find_map(|l| self.span_of(l.index))
    }

    /// Clause `k` of the recurrence `v` as lowered.
    fn clause_span(&self, v: VarId, k: usize) -> Option<Span> {
        self.f.spans.clause(v, k)
    }

    /// Where the source defines `v`.
    fn span_of(&self, v: VarId) -> Option<Span> {
        self.f.spans.var(v)
    }

    /// Runs `f` with the construct defining `v` (when the source has one)
    /// as the site of errors.
    fn at_site<T>(&mut self, at: Option<Span>, f: impl FnOnce(&mut Self) -> T) -> T {
        let saved = self.site;
        if let Some(s) = at {
            self.site = Some((s, self.inlining));
        }
        let r = f(self);
        self.site = saved;
        r
    }

    fn vname(&self, v: VarId) -> String {
        self.f.var(v).source_name.clone()
    }

    fn shard_param(&mut self, param: VarId, path: &[u32], axis: usize) -> Result<(), Diagnostic> {
        if !path.is_empty() {
            let p = self.vname(param);
            return Err(self
                .error_at(self.span_of(param), format!("parameter `{p}` holds a sharded tensor inside a tuple"))
                .help("pass the sharded tensor as a parameter of its own"));
        }
        if let Some(&other) = self.sharded.get(&param) {
            if other != axis {
                let p = self.vname(param);
                return Err(self
                    .error_at(
                        self.span_of(param),
                        format!("parameter `{p}` has two axes of dimension `{}`", self.symbol),
                    )
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
        let at = match &s {
            Stmt::Let { var, .. } | Stmt::Extent { var, .. } | Stmt::Reshape { var, .. } => self.span_of(*var),
            Stmt::Tensor(def) => self.span_of(def.var),
            Stmt::Recurrence(r) => self.span_of(r.var),
            _ => None,
        };
        self.at_site(at, |cx| cx.stmt_here(s, out))
    }

    fn stmt_here(&mut self, s: Stmt, out: &mut Vec<Stmt>) -> Result<(), Diagnostic> {
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
            let mut exts = Vec::new();
            let depth = self.extend_for(&def.body, Some(def.var), scope[0], &ranges, &mut exts);
            self.ranges = ranges;
            self.nested += 1;
            let r = self.expr(&mut def.body, &scope);
            self.nested -= 1;
            self.redirect.clear();
            self.ranges = Ranges::default();
            r?;
            def.cost_per_point = crate::ir::cost::expr_cost(&def.body);
            self.overlap_definition(def, k, exts, depth, out);
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
                .error_at(
                    self.reduction_span(&red),
                    format!("`{}` over several indices, one of them over `{}`", op.name(), self.symbol),
                )
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
            return Err(self.bug_nested(self.reduction_span(&red)));
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
                    // Positions along the axes: `index - start`.
                    indices: axes
                        .iter()
                        .map(|a| {
                            let i = Expr { kind: ExprKind::Var(a.index), ty: Repr::Scalar(ScalarKind::I64) };
                            if a.start.as_constant() == Some(0) {
                                return i;
                            }
                            let start =
                                Expr { kind: ExprKind::Dim(a.start.clone()), ty: Repr::Scalar(ScalarKind::I64) };
                            Expr {
                                kind: ExprKind::Binary(BinOp::Sub, Box::new(i), Box::new(start)),
                                ty: Repr::Scalar(ScalarKind::I64),
                            }
                        })
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
        let r = self.hoist_axes_rec(&mut body, &def.axes, out);
        def.body = body;
        r
    }

    /// Reductions over the symbol in the value of a clause `c` of a
    /// recurrence without a sharded axis, reachable through arithmetic
    /// (and the clause's own guards), become tensors of parts over the
    /// clause's loops and their all-reduces in the clause's prelude, which
    /// runs at every step the clause covers before its points.
    fn hoist_in_clause(&mut self, c: &mut RecClause) -> Result<(), Diagnostic> {
        let axes: Vec<crate::ir::Axis> = c
            .loops
            .iter()
            .map(|l| crate::ir::Axis { index: l.index, start: l.start.clone(), extent: l.end.sub(&l.start) })
            .collect();
        let mut body = std::mem::replace(&mut c.body, Expr::unit());
        // The first reduction over the symbol in the clause, for errors.
        let mut first = None;
        visit_all(&body, &mut |x| {
            if first.is_none() && self.over_b(x) {
                first = self.reduction_span(x);
            }
        });
        let mut prelude = Vec::new();
        let r = self.hoist_axes_rec(&mut body, &axes, &mut prelude);
        c.body = body;
        r?;
        if !prelude.is_empty() {
            if self.f.device.is_some() {
                return Err(self
                    .error_at(first, format!(
                        "a reduction over `{}` inside a step of a recurrence, in a device function",
                        self.symbol
                    ))
                    .note("device recurrences run their steps as kernels without communication between them")
                    .help(format!(
                        "call a sharded function once per step from the host, or write the recurrence in a host function"
                    )));
            }
            // Every part first, then the all-reduces, adjacent: those
            // of one step travel in one message (the parts read no total).
            let (comms, mut parts): (Vec<Stmt>, Vec<Stmt>) =
                prelude.into_iter().partition(|s| matches!(s, Stmt::Comm(_)));
            parts.extend(comms);
            parts.append(&mut c.prelude);
            c.prelude = parts;
            c.cost_per_point = crate::ir::cost::expr_cost(&c.body);
        }
        Ok(())
    }

    /// Replaces each reduction over the symbol reachable from `e` through
    /// arithmetic and guards by its all-reduced total, its part a tensor
    /// over `axes` pushed to `out`.
    fn hoist_axes_rec(
        &mut self,
        e: &mut Expr,
        axes: &[crate::ir::Axis],
        out: &mut Vec<Stmt>,
    ) -> Result<(), Diagnostic> {
        if self.over_b(e) {
            let red = std::mem::replace(e, Expr::unit());
            let total = self.reduce_part(red, Some(axes), out)?;
            *e = total;
            return Ok(());
        }
        let descend = arithmetic(e)
            || matches!(&e.kind, ExprKind::Guarded { wheres, .. } if wheres.iter().all(|w| matches!(w, WhereEntry::Guard(_))));
        if descend {
            let mut res = Ok(());
            visit::for_each_child_mut(e, &mut |c| {
                if res.is_ok() {
                    res = self.hoist_axes_rec(c, axes, out);
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
                        .error_at(
                            self.reduction_span(e),
                            format!("a reduction over `{}` inside a definition over `{}`", self.symbol, self.symbol),
                        )
                        .note("each point would need every rank's rows")
                        .help("reduce in a definition without the sharded axis, or pass one operand unsharded"));
                }
                Err(self.bug_nested(self.reduction_span(e)))
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

    /// A reduction over the symbol, computed over this rank's part of its
    /// range.
    fn reduce_local(&mut self, e: &mut Expr) -> Result<(), Diagnostic> {
        let ExprKind::Reduce { loops, .. } = &mut e.kind else {
            return Err(Diagnostic::bug(self.span, "not a reduction"));
        };
        let over: Vec<usize> =
            (0..loops.len()).filter(|&k| self.is_over(&loops[k].start) || self.is_over(&loops[k].end)).collect();
        if over.len() != 1 {
            let at = over.get(1).and_then(|&k| self.span_of(loops[k].index));
            return Err(self
                .error_at(at, format!("a reduction with two indices over `{}`", self.symbol))
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

    fn bug_nested(&self, at: Option<Span>) -> Diagnostic {
        self.error_at(at, format!("a reduction over `{}` here cannot be combined across ranks", self.symbol))
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

/// Calls `f` on `e` and every expression inside it, statements included.
fn visit_all(e: &Expr, f: &mut dyn FnMut(&Expr)) {
    f(e);
    visit::for_each_child(e, &mut |c| visit_all(c, f));
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

/// The extended copies started in `body` that a later statement reads
/// again (`reread`) hold the whole block, not only its edge rows.
fn whole_copies(body: &mut [Stmt], reread: &std::collections::HashSet<VarId>) {
    for s in body {
        match s {
            Stmt::Comm(Comm::ExtendStart { out, edge, .. }) if reread.contains(out) => *edge = u64::MAX,
            Stmt::Recurrence(r) => {
                for c in &mut r.clauses {
                    whole_copies(&mut c.prelude, reread);
                }
            }
            _ => {}
        }
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
mod tests;
