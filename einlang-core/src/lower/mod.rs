//! Lowering: HIR plus analysis tables to the loop IR.
//!
//! Every decision that needs analysis facts is made here, so that back ends
//! only print: variables get unique names, dimension symbols become
//! variables bound at entry, inferred extents that may be negative get an
//! `Extent` check, index ranges that do not start at zero become guards,
//! whole-tensor arithmetic (`x * 2.0 + y`) becomes a pointwise tensor
//! definition over fresh indices, and each read carries whether its bounds
//! were proven.

use std::collections::{HashMap, HashSet};

use crate::analysis::{self, EntryPlan, Tables, Ty as ATy};
use crate::base::dim::{Dim, DimVar, Truth};
use crate::base::ops::{BinOp, Lit};
use crate::base::scalar::ScalarKind;
use crate::diag::{Diagnostic, Diagnostics};
use crate::hir::{self, Callee, DefId, DefKind, ExprId, ExprKind, FnId, Hir, Slot, Where};
use crate::ir::cost::expr_cost;
use crate::ir::{self, Axis, Expr, Literal, Loop, Repr, Stmt, TensorDef, VarId, VarInfo, WhereEntry};

/// Lowers every function of a program that analyzed without errors.
///
/// `tag` tells this macro call's private functions (instances of generic
/// functions, the standard library's) from another call's in the same Rust
/// module.
pub fn lower_program(hir: &Hir, t: &Tables, tag: &str, diags: &mut Diagnostics) -> ir::Program {
    let names = fn_names(hir, tag);
    // Each function lowered gets the next id, in the HIR's order.
    let mut ids = vec![None; hir.fns.len()];
    let mut next = 0;
    for (f, func) in hir.fns.iter() {
        if !func.is_generic() && !hir.skipped(f) {
            ids[f.index()] = Some(ir::FuncId(next));
            next += 1;
        }
    }
    let mut fns = Vec::new();
    let mut failed = false;
    for (f, func) in hir.fns.iter() {
        if func.is_generic() || hir.skipped(f) {
            continue;
        }
        let mut cx = FnLower {
            hir,
            t,
            names: &names,
            ids: &ids,
            vars: Vec::new(),
            of_def: HashMap::new(),
            of_hidden: HashMap::new(),
            used_names: HashSet::new(),
            bug: None,
            pattern_binds: HashMap::new(),
            spans: ir::Spans::default(),
        };
        match cx.lower_fn(f) {
            Some(func) => fns.push(func),
            None => {
                let span = hir.fns[f].span;
                let msg = cx.bug.unwrap_or_else(|| "lowering failed without a reason".to_string());
                diags.push(Diagnostic::bug(span, msg));
                failed = true;
            }
        }
    }
    // Without a function that failed, the ids of the others would not
    // hold; the error stops the pipeline.
    if failed {
        fns.clear();
    }
    ir::Program::new(fns)
}

/// The IR name of each function: its own name, made unique. The user's
/// functions are named first, so they keep their names; instances of generic
/// functions (`relu_f32r2`) give way. Generic templates are never emitted and
/// take no name.
fn fn_names(hir: &Hir, tag: &str) -> Vec<String> {
    let mut used = HashSet::new();
    let mut out = vec![String::new(); hir.fns.len()];
    for pass in 0..2 {
        for (id, f) in hir.fns.iter() {
            let user = !f.stdlib && hir.fns[id].origin.is_none();
            if f.is_generic() || hir.skipped(id) || user != (pass == 0) {
                continue;
            }
            // A function of an inline module is named `module_name`; its
            // module re-exports it under its own name when it is public.
            let own = hir.name(f.def).to_string();
            let base =
                if user && !f.module_path.is_empty() { format!("{}_{own}", f.module_path.join("_")) } else { own };
            let base = if user { base } else { format!("{base}_{tag}") };
            let mut name = base.clone();
            let mut n = 2;
            while !used.insert(name.clone()) {
                name = format!("{base}_{n}");
                n += 1;
            }
            out[id.index()] = name;
        }
    }
    out
}

struct FnLower<'a> {
    hir: &'a Hir,
    t: &'a Tables,
    names: &'a [String],
    /// The IR id of each function lowered, by HIR index.
    ids: &'a [Option<ir::FuncId>],
    vars: Vec<VarInfo>,
    of_def: HashMap<DefId, VarId>,
    of_hidden: HashMap<DimVar, VarId>,
    used_names: HashSet<String>,
    /// Set when an invariant the analyses promise does not hold.
    bug: Option<String>,
    /// Names bound by `match` patterns, with the part of the scrutinee each
    /// stands for.
    pattern_binds: HashMap<DefId, Expr>,
    /// Where the source defines the variables and clauses lowered so far
    /// (`ir::Spans`).
    spans: ir::Spans,
}

fn lower_ty(t: &ATy) -> Option<Repr> {
    Some(match t {
        ATy::Scalar(k) => Repr::Scalar(*k),
        ATy::Tensor(k, dims) => Repr::Tensor(*k, dims.len()),
        ATy::Dyn(k) => Repr::Dyn(*k),
        ATy::Jagged(k) => Repr::Jagged(*k),
        ATy::Strs(_) => Repr::Strs,
        ATy::Tuple(items) if items.is_empty() => Repr::Unit,
        ATy::Tuple(items) => Repr::Tuple(items.iter().map(lower_ty).collect::<Option<_>>()?),
        ATy::Str => Repr::Str,
        ATy::Error => return None,
    })
}

impl<'a> FnLower<'a> {
    fn fail<T>(&mut self, msg: impl Into<String>) -> Option<T> {
        if self.bug.is_none() {
            self.bug = Some(msg.into());
        }
        None
    }

    /// A new variable named after `source`, made unique in the function. A
    /// temporary that resolution named after the expression it holds
    /// (`f(x)`, see `resolve::computed`) is named `value`; messages keep
    /// the expression (`VarInfo::source_name`).
    fn new_var(&mut self, source: &str, ty: Repr) -> VarId {
        let plain = source.chars().next().is_some_and(|c| c == '_' || c.is_alphabetic())
            && source.chars().all(|c| c == '_' || c.is_alphanumeric());
        let base = if plain { source.to_string() } else { "value".to_string() };
        let mut name = base.clone();
        let mut n = 2;
        while !self.used_names.insert(name.clone()) {
            name = format!("{base}_{n}");
            n += 1;
        }
        let id = VarId(self.vars.len() as u32);
        self.vars.push(VarInfo { name, source_name: source.to_string(), ty });
        id
    }

    fn var_of(&mut self, d: DefId) -> Option<VarId> {
        match self.of_def.get(&d) {
            Some(v) => Some(*v),
            None => self.fail(format!("`{}` has no variable", self.hir.name(d))),
        }
    }

    /// Rewrites an analysis `Dim` over `DefId`s into one over `VarId`s.
    fn dim(&mut self, d: &Dim) -> Option<Dim> {
        let mut map = HashMap::new();
        for v in d.vars() {
            let var = if v.0 >= analysis::HIDDEN_DIM_BASE {
                self.of_hidden.get(&v).copied()
            } else {
                self.of_def.get(&DefId::from_raw(v.0)).copied()
            };
            match var {
                Some(x) => {
                    map.insert(v, Dim::var(DimVar(x.0)));
                }
                None => return self.fail(format!("dimension `{}` mentions an unbound variable", self.t.show_dim(d))),
            }
        }
        Some(d.substitute(&|v| map.get(&v).cloned()))
    }

    /// `fn name(p: [f32; T, D], ...) -> [f32; T, D]`, as the user wrote it
    /// (the declared result type where there is one, else the inferred one).
    fn signature(&self, f: FnId, sig: &analysis::FnSig) -> String {
        let func = &self.hir.fns[f];
        let params: Vec<String> = func
            .params
            .iter()
            .zip(&sig.params)
            .map(|(p, ty)| format!("{}: {}", self.hir.name(p.def), self.t.show_ty(ty)))
            .collect();
        let ret = match &sig.ret {
            ATy::Tuple(items) if items.is_empty() => String::new(),
            ty => format!(" -> {}", self.t.show_ty(ty)),
        };
        format!("fn {}({}){ret}", self.hir.name(func.def), params.join(", "))
    }

    fn lower_fn(&mut self, f: FnId) -> Option<ir::Function> {
        let func = &self.hir.fns[f];
        let sig = self.t.sigs[f.index()].clone()?;
        let mut params = Vec::new();
        for (p, ty) in func.params.iter().zip(&sig.params) {
            let ty = lower_ty(ty)?;
            let v = self.new_var(self.hir.name(p.def), ty);
            self.of_def.insert(p.def, v);
            self.spans.set_var(v, p.span);
            params.push(v);
        }
        let mut entry = Vec::new();
        for plan in &sig.entry {
            match plan {
                EntryPlan::BindDim { dim, param, path, axis } => {
                    let name = self.t.dim_name(*dim);
                    let name = if name == "?" { format!("__dim{}", self.vars.len()) } else { name };
                    let v = self.new_var(name.trim_start_matches("__"), Repr::Scalar(ScalarKind::I64));
                    if dim.0 >= analysis::HIDDEN_DIM_BASE {
                        self.of_hidden.insert(*dim, v);
                    } else {
                        self.of_def.insert(DefId::from_raw(dim.0), v);
                    }
                    entry.push(ir::EntryCheck::BindDim {
                        dim: v,
                        param: params[*param],
                        path: path.clone(),
                        axis: *axis,
                    });
                }
                EntryPlan::CheckDim { .. } => {}
            }
        }
        for plan in &sig.entry {
            if let EntryPlan::CheckDim { param, path, axis, symbol, expected } = plan {
                let expected = self.dim(expected)?;
                entry.push(ir::EntryCheck::CheckDim {
                    param: params[*param],
                    path: path.clone(),
                    axis: *axis,
                    symbol: symbol.clone(),
                    expected,
                });
            }
        }
        let mut body = Vec::new();
        self.lower_stmts(&func.body.stmts, &mut body)?;
        let ret = lower_ty(&sig.ret)?;
        let mut result = match func.body.tail {
            Some(tail) => {
                self.bind_runtime_bounds(&[tail], &mut body)?;
                coerce(self.lower_value(tail, &mut body)?, &ret)
            }
            None => Expr { kind: ir::ExprKind::Tuple(Vec::new()), ty: Repr::Unit },
        };
        if !sig.result_checks.is_empty() {
            let tensor = match result.kind {
                ir::ExprKind::Var(v) => v,
                _ => {
                    let v = self.new_var("result", result.ty.clone());
                    body.push(Stmt::Let { var: v, value: result });
                    result = Expr { kind: ir::ExprKind::Var(v), ty: self.vars[v.0 as usize].ty.clone() };
                    v
                }
            };
            for c in &sig.result_checks {
                let declared = self.dim(&c.declared)?;
                body.push(Stmt::CheckResultDim {
                    tensor,
                    path: c.path.clone(),
                    axis: c.axis,
                    symbol: c.symbol.clone(),
                    declared,
                });
            }
        }
        let export = (func.public && !func.stdlib && !func.module_path.is_empty() && self.hir.fns[f].origin.is_none())
            .then(|| (func.module_path.clone(), self.hir.name(func.def).to_string()));
        Some(ir::Function {
            name: self.names[f.index()].clone(),
            public: func.public,
            export,
            docs: func.docs.clone(),
            signature: Some(self.signature(f, &sig)),
            params,
            ret,
            entry,
            body,
            result,
            vars: std::mem::take(&mut self.vars),
            device: func.device.map(|span| ir::Device { span }),
            shard: func.shard.as_ref().map(|(symbol, span)| ir::Shard {
                symbol: symbol.clone(),
                span: *span,
                parts: None,
            }),
            checkpointed: None,
            spans: std::mem::take(&mut self.spans),
        })
    }

    fn lower_stmts(&mut self, stmts: &[hir::Stmt], out: &mut Vec<Stmt>) -> Option<()> {
        for s in stmts {
            let mut roots = Vec::new();
            hir::stmt_operands(s, &mut roots);
            self.bind_runtime_bounds(&roots, out)?;
            match s {
                hir::Stmt::Let { def, value, span, .. } => {
                    self.emit_same_extents(*value, &[], out);
                    let v = self.lower_value(*value, out)?;
                    let v = match self.t.def_ty.get(def) {
                        Some(t) => coerce(v, &lower_ty(t)?),
                        None => v,
                    };
                    let var = self.new_var(self.hir.name(*def), v.ty.clone());
                    self.of_def.insert(*def, var);
                    self.spans.set_var(var, *span);
                    out.push(Stmt::Let { var, value: v });
                    // Extents known only now (a filtered comprehension's
                    // length) are read off the value.
                    if let Some(ATy::Tensor(_, dims)) = self.t.def_ty.get(def) {
                        for (axis, d) in dims.iter().enumerate() {
                            if let Some(h) = d
                                .as_var()
                                .filter(|h| h.0 >= analysis::HIDDEN_DIM_BASE && !self.of_hidden.contains_key(h))
                            {
                                let len = self.new_var("len", Repr::Scalar(ScalarKind::I64));
                                self.of_hidden.insert(h, len);
                                out.push(Stmt::Let {
                                    var: len,
                                    value: Expr {
                                        kind: ir::ExprKind::Len { tensor: var, axis },
                                        ty: Repr::Scalar(ScalarKind::I64),
                                    },
                                });
                            }
                        }
                    }
                }
                hir::Stmt::Indexed(d) => self.lower_indexed(d, out)?,
                hir::Stmt::Recurrence(r) => self.lower_recurrence(r, out)?,
                hir::Stmt::Expr(e) => {
                    self.emit_same_extents(*e, &[], out);
                    let v = self.lower_value(*e, out)?;
                    out.push(Stmt::Expr(v));
                }
            }
        }
        Some(())
    }

    /// Evaluates the run-time range bounds (`Tables::runtime_bounds`) that
    /// the expressions `roots` contain, outside nested blocks (their
    /// statements bind their own), into variables for their hidden
    /// dimensions.
    fn bind_runtime_bounds(&mut self, roots: &[ExprId], out: &mut Vec<Stmt>) -> Option<()> {
        if self.t.runtime_bounds.is_empty() {
            return Some(());
        }
        let mut stack = roots.to_vec();
        let mut ops = Vec::new();
        while let Some(e) = stack.pop() {
            if let Some(&h) = self.t.runtime_bounds.get(&e) {
                if !self.of_hidden.contains_key(&h) {
                    self.bind_bound(e, h, out)?;
                }
            }
            if matches!(self.hir.exprs[e].kind, ExprKind::Block(_)) {
                // A nested block's statements bind their own; its value
                // is lowered with the block.
                continue;
            }
            ops.clear();
            hir::operands(&self.hir.exprs[e].kind, &mut ops);
            stack.extend(ops.iter().copied());
        }
        Some(())
    }

    /// `let bound: i64 = e;` for the run-time range bound `e`, which the
    /// hidden dimension `h` stands for.
    fn bind_bound(&mut self, e: ExprId, h: DimVar, out: &mut Vec<Stmt>) -> Option<()> {
        let value = self.lower_expr(e)?;
        let value = match value.ty {
            Repr::Scalar(ScalarKind::I64) => value,
            _ => Expr { kind: ir::ExprKind::Cast(Box::new(value), ScalarKind::I64), ty: Repr::Scalar(ScalarKind::I64) },
        };
        let v = self.new_var("bound", Repr::Scalar(ScalarKind::I64));
        out.push(Stmt::Let { var: v, value });
        self.of_hidden.insert(h, v);
        Some(())
    }

    /// Run-time agreement checks for the index variables of a statement.
    fn emit_same_extents(&mut self, e: ExprId, extra: &[DefId], out: &mut Vec<Stmt>) {
        let mut defs: Vec<DefId> = extra.to_vec();
        collect_index_defs(self.hir, e, &mut defs);
        for d in defs {
            if let Some(checks) = self.t.same_extent.get(&d) {
                for c in checks.clone() {
                    let (Some(a), Some(b)) = (self.dim(&c.a), self.dim(&c.b)) else { continue };
                    out.push(Stmt::SameExtent { index: c.index, a, a_what: c.a_what, b, b_what: c.b_what });
                }
            }
        }
    }

    /// An extent as a `Dim` that is a constant or a variable, emitting an
    /// `Extent` check for anything more complex.
    fn checked_extent(&mut self, d: &Dim, index: &str, out: &mut Vec<Stmt>) -> Option<Dim> {
        let d = self.dim(d)?;
        if d.as_constant().is_some_and(|c| c >= 0) || d.as_var().is_some() {
            return Some(d);
        }
        let what = d.display(&|v| self.vars.get(v.0 as usize).map(|i| i.source_name.clone()).unwrap_or_default());
        let v = self.new_var(&format!("{index}_len"), Repr::Scalar(ScalarKind::I64));
        out.push(Stmt::Extent { var: v, value: d, what });
        Some(Dim::var(DimVar(v.0)))
    }

    /// Run-time extent agreements for the index variables of an indexed
    /// definition: its slots, and those its `where` entries and body use.
    fn emit_definition_extents(&mut self, d: &hir::IndexedDef, out: &mut Vec<Stmt>) {
        let mut extra: Vec<DefId> =
            d.slots.iter().filter_map(|s| if let Slot::Var { def, .. } = s { Some(*def) } else { None }).collect();
        for w in &d.wheres {
            match w {
                Where::Bind { value, .. } => collect_index_defs(self.hir, *value, &mut extra),
                Where::Guard(g) => collect_index_defs(self.hir, *g, &mut extra),
            }
        }
        self.emit_same_extents(d.body, &extra, out);
    }

    fn lower_indexed(&mut self, d: &hir::IndexedDef, out: &mut Vec<Stmt>) -> Option<()> {
        self.emit_definition_extents(d, out);
        let mut axes = Vec::new();
        let mut guards = Vec::new();
        for (k, slot) in d.slots.iter().enumerate() {
            let def = match slot {
                Slot::Var { def, .. } => def,
                Slot::Rest(..) => return self.fail("a rest index reached lowering"),
                Slot::Lit(n, _) => {
                    // A literal slot writes one position of an axis of
                    // length `n + 1`; the others stay zero.
                    let v = self.new_var(&format!("at{k}"), Repr::Scalar(ScalarKind::I64));
                    let cond = Expr {
                        kind: ir::ExprKind::Binary(
                            BinOp::Eq,
                            Box::new(var_expr(v, Repr::Scalar(ScalarKind::I64))),
                            Box::new(dim_expr(Dim::constant(*n))),
                        ),
                        ty: Repr::Scalar(ScalarKind::Bool),
                    };
                    guards.push(WhereEntry::Guard(cond));
                    axes.push(Axis { index: v, start: Dim::zero(), extent: Dim::constant(n + 1) });
                    continue;
                }
            };
            let range = self.t.ranges.get(def).cloned()?;
            let v = self.new_var(self.hir.name(*def), Repr::Scalar(ScalarKind::I64));
            self.of_def.insert(*def, v);
            let extent = self.checked_extent(&range.end, self.hir.name(*def), out)?;
            let start = self.dim(&range.start)?;
            if start.prove_le(&Dim::zero()) != Truth::True {
                // Points before the range's start are left zero.
                let cond = Expr {
                    kind: ir::ExprKind::Binary(
                        BinOp::Ge,
                        Box::new(var_expr(v, Repr::Scalar(ScalarKind::I64))),
                        Box::new(dim_expr(start)),
                    ),
                    ty: Repr::Scalar(ScalarKind::Bool),
                };
                guards.push(WhereEntry::Guard(cond));
            }
            axes.push(Axis { index: v, start: Dim::zero(), extent });
        }
        let domain_guards = guards.len();
        let mut wheres = guards;
        wheres.extend(self.lower_wheres(&d.wheres)?);
        let body = self.lower_expr(d.body)?;
        let elem = match &body.ty {
            Repr::Scalar(k) => *k,
            _ => return self.fail("indexed definition with a non-scalar body reached lowering"),
        };
        let body = guarded(wheres, body);
        let cost = expr_cost(&body);
        let var = self.new_var(self.hir.name(d.def), Repr::Tensor(elem, axes.len()));
        self.of_def.insert(d.def, var);
        self.spans.set_var(var, d.span);
        out.push(Stmt::Tensor(TensorDef { var, elem, axes, body, cost_per_point: cost, domain_guards }));
        Some(())
    }

    /// A recurrence: one sequential loop per recurrent axis in the order
    /// analysis chose, the clauses inside (see `ir::Recurrence`).
    fn lower_recurrence(&mut self, rec: &hir::Recurrence, out: &mut Vec<Stmt>) -> Option<()> {
        let Some(facts) = self.t.recurrences.get(&rec.def).cloned() else {
            return self.fail(format!("recurrence `{}` has no facts", self.hir.name(rec.def)));
        };
        let Some(ATy::Tensor(elem, dims)) = self.t.def_ty.get(&rec.def).cloned() else {
            return self.fail("recurrence without a tensor type");
        };
        let name = self.hir.name(rec.def).to_string();
        let mut extents = Vec::new();
        for (axis, d) in dims.iter().enumerate() {
            extents.push(self.checked_extent(d, &format!("{name}_axis{axis}"), out)?);
        }
        // Where each clause writes along each axis.
        let mut covers: Vec<Vec<ir::Cover>> = Vec::new();
        for c in &rec.clauses {
            let mut row = Vec::new();
            for slot in &c.slots {
                row.push(match slot {
                    Slot::Lit(n, _) => ir::Cover::At(*n),
                    Slot::Var { def, .. } => {
                        let r = self.t.ranges.get(def).cloned()?;
                        ir::Cover::Range(self.dim(&r.start)?, self.dim(&r.end)?)
                    }
                    Slot::Rest(..) => return self.fail("a rest index reached lowering"),
                });
            }
            covers.push(row);
        }
        let mut seq = Vec::new();
        for &axis in &facts.sequential {
            let source = rec.clauses.iter().find_map(|c| match &c.slots[axis] {
                Slot::Var { def, .. } => Some(self.hir.name(*def).to_string()),
                _ => None,
            });
            let v = self.new_var(source.as_deref().unwrap_or("step"), Repr::Scalar(ScalarKind::I64));
            for c in &rec.clauses {
                if let Slot::Var { def, .. } = &c.slots[axis] {
                    self.of_def.insert(*def, v);
                }
            }
            let start = covers
                .iter()
                .map(|row| match &row[axis] {
                    ir::Cover::At(n) => Dim::constant(*n),
                    ir::Cover::Range(s, _) => s.clone(),
                })
                .reduce(|a, b| Dim::min(&a, &b))?;
            seq.push((axis, Loop { index: v, start, end: extents[axis].clone() }));
        }
        let var = self.new_var(&name, Repr::Tensor(elem, dims.len()));
        self.of_def.insert(rec.def, var);
        self.spans.set_var(var, rec.span);
        let mut clauses = Vec::new();
        for (k, (c, row)) in rec.clauses.iter().zip(&covers).enumerate() {
            self.spans.set_clause(var, k, c.span);
            self.emit_definition_extents(c, out);
            let cover = seq.iter().map(|(axis, _)| row[*axis].clone()).collect();
            let mut at = Vec::new();
            let mut loops = Vec::new();
            for (axis, slot) in c.slots.iter().enumerate() {
                if let Some(k) = seq.iter().position(|(a, _)| *a == axis) {
                    at.push(ir::RecIndex::Seq(k));
                    continue;
                }
                match (slot, &row[axis]) {
                    (Slot::Var { def, .. }, ir::Cover::Range(start, end)) => {
                        let v = self.new_var(self.hir.name(*def), Repr::Scalar(ScalarKind::I64));
                        self.of_def.insert(*def, v);
                        at.push(ir::RecIndex::Loop(loops.len()));
                        loops.push(Loop { index: v, start: start.clone(), end: end.clone() });
                    }
                    (_, ir::Cover::At(n)) => at.push(ir::RecIndex::Lit(*n)),
                    _ => return self.fail("a clause slot without a cover"),
                }
            }
            let wheres = self.lower_wheres(&c.wheres)?;
            let body = self.lower_expr(c.body)?;
            if body.ty != Repr::Scalar(elem) {
                return self.fail("a recurrence clause of another type reached lowering");
            }
            let body = guarded(wheres, body);
            let cost_per_point = expr_cost(&body);
            clauses.push(ir::RecClause { cover, at, loops, cost_per_point, body, prelude: Vec::new() });
        }
        let window = match facts.storage {
            analysis::recur::Storage::Window { axis, slots, .. } if seq.first().is_some_and(|(a, _)| *a == axis) => {
                Some(ir::Window { axis, slots })
            }
            _ => None,
        };
        // A rank-1 window needs no clearing when every step of its loop is
        // written by a clause (the covers chain from the start to the end).
        let clear_steps = window.is_some() && !(dims.len() == 1 && covers_chain(&covers, &seq));
        let (wavefront, lines) = (facts.wavefront, facts.lines);
        out.push(Stmt::Recurrence(ir::Recurrence {
            var,
            elem,
            extents,
            window,
            seq,
            clear_steps,
            wavefront,
            lines,
            clauses,
        }));
        Some(())
    }

    fn lower_wheres(&mut self, wheres: &[Where]) -> Option<Vec<WhereEntry>> {
        let mut out = Vec::new();
        for w in wheres {
            match w {
                Where::Bind { def, value } => {
                    let v = self.lower_expr(*value)?;
                    let var = self.new_var(self.hir.name(*def), v.ty.clone());
                    self.of_def.insert(*def, var);
                    out.push(WhereEntry::Bind(var, v));
                }
                Where::Guard(g) => out.push(WhereEntry::Guard(self.lower_expr(*g)?)),
            }
        }
        Some(out)
    }

    fn ty_of(&mut self, e: ExprId) -> Option<Repr> {
        match lower_ty(self.t.ty(e)) {
            Some(t) => Some(t),
            None => self.fail("an expression without a type reached lowering"),
        }
    }

    /// Lowers a statement-level value; a compound tensor expression becomes
    /// a pointwise tensor definition appended to `out`.
    fn lower_value(&mut self, e: ExprId, out: &mut Vec<Stmt>) -> Option<Expr> {
        if self.is_compound_tensor(e) {
            let (stmts, v) = self.tensorize(e)?;
            out.extend(stmts);
            return Some(var_expr(v, self.vars[v.0 as usize].ty.clone()));
        }
        self.lower_expr(e)
    }

    /// Whether `e` is tensor-valued and computed pointwise (not a name, call
    /// or sub-tensor selection).
    fn is_compound_tensor(&self, e: ExprId) -> bool {
        matches!(self.t.ty(e), ATy::Tensor(..)) && self.is_elementwise(e)
    }

    /// Whether `e` is an operator, a cast or an intrinsic call, which apply
    /// to each element of a tensor operand.
    fn is_elementwise(&self, e: ExprId) -> bool {
        matches!(
            self.hir.exprs[e].kind,
            ExprKind::Unary(..)
                | ExprKind::Binary(..)
                | ExprKind::Cast(..)
                | ExprKind::Call { callee: Callee::Intrinsic(_), .. }
        )
    }

    /// `let tmp[i0, i1, ..] = e[i0, i1, ..]` for a whole-tensor expression.
    fn tensorize(&mut self, e: ExprId) -> Option<(Vec<Stmt>, VarId)> {
        let ATy::Tensor(elem, dims) = self.t.ty(e).clone() else {
            return self.fail("tensorize of a non-tensor");
        };
        let mut stmts = Vec::new();
        let mut axes = Vec::new();
        let mut idx = Vec::new();
        for (k, d) in dims.iter().enumerate() {
            let extent = self.checked_extent(d, &format!("i{k}"), &mut stmts)?;
            let v = self.new_var(&format!("i{k}"), Repr::Scalar(ScalarKind::I64));
            axes.push(Axis { index: v, start: Dim::zero(), extent });
            idx.push(v);
        }
        let body = self.pointwise(e, &idx, &dims, &mut stmts)?;
        let cost = expr_cost(&body);
        let var = self.new_var("tmp", Repr::Tensor(elem, dims.len()));
        stmts.push(Stmt::Tensor(TensorDef { var, elem, axes, body, cost_per_point: cost, domain_guards: 0 }));
        Some((stmts, var))
    }

    /// The value of tensor expression `e` at point `idx` (of shape `dims`).
    fn pointwise(&mut self, e: ExprId, idx: &[VarId], dims: &[Dim], pre: &mut Vec<Stmt>) -> Option<Expr> {
        let ty = self.t.ty(e).clone();
        let ATy::Tensor(k, own_dims) = &ty else {
            return self.lower_expr(e);
        };
        let read_at = |this: &mut Self, v: VarId, own: &[Dim]| -> Expr {
            // Shapes were proven equal or could not be compared; check in
            // the second case.
            let checked = own.iter().zip(dims).any(|(a, b)| a.prove_eq(b) != Truth::True);
            let indices = idx.iter().map(|i| var_expr(*i, Repr::Scalar(ScalarKind::I64))).collect();
            let _ = this;
            Expr { kind: ir::ExprKind::Read { tensor: v, indices, checked }, ty: Repr::Scalar(*k) }
        };
        if let ExprKind::Def(d) = self.hir.exprs[e].kind {
            let v = self.var_of(d)?;
            return Some(read_at(self, v, own_dims));
        }
        if self.is_elementwise(e) {
            return self.elementwise_node(e, *k, |this, x| this.pointwise(x, idx, dims, pre));
        }
        // A call or sub-tensor: evaluate once into a temporary.
        let v = self.lower_expr(e)?;
        let tmp = self.new_var("arg", v.ty.clone());
        pre.push(Stmt::Let { var: tmp, value: v });
        Some(read_at(self, tmp, own_dims))
    }

    /// The scalar operation of elementwise expression `e` (see
    /// `is_elementwise`) with elements of type `k`, applied to what `point`
    /// gives for each operand: its element at the point of a whole-tensor
    /// loop (`pointwise`) or of a dynamic-rank map (`dyn_point`).
    fn elementwise_node(
        &mut self,
        e: ExprId,
        k: ScalarKind,
        mut point: impl FnMut(&mut Self, ExprId) -> Option<Expr>,
    ) -> Option<Expr> {
        let kind = match self.hir.exprs[e].kind.clone() {
            ExprKind::Unary(op, x) => ir::ExprKind::Unary(op, Box::new(point(self, x)?)),
            ExprKind::Binary(BinOp::Pow, a, b) => {
                let Some(i) = self.t.intrinsic.get(&e).copied() else {
                    return self.fail("`**` without a chosen intrinsic");
                };
                ir::ExprKind::Intrinsic(i, vec![point(self, a)?, point(self, b)?])
            }
            ExprKind::Binary(op, a, b) => {
                ir::ExprKind::Binary(op, Box::new(point(self, a)?), Box::new(point(self, b)?))
            }
            ExprKind::Cast(x, to) => ir::ExprKind::Cast(Box::new(point(self, x)?), to),
            ExprKind::Call { callee: Callee::Intrinsic(i), args, .. } => {
                let i = self.t.intrinsic.get(&e).copied().unwrap_or(i);
                let args = args.iter().map(|a| point(self, *a)).collect::<Option<Vec<_>>>()?;
                ir::ExprKind::Intrinsic(i, args)
            }
            _ => return self.fail("an elementwise operation of another expression"),
        };
        let ty = match &kind {
            ir::ExprKind::Binary(op, ..) if op.is_comparison() => Repr::Scalar(ScalarKind::Bool),
            _ => Repr::Scalar(k),
        };
        Some(Expr { kind, ty })
    }

    /// Whether `e` is an elementwise operation with a dynamic-rank result.
    fn is_compound_dyn(&self, e: ExprId) -> bool {
        matches!(self.t.ty(e), ATy::Dyn(_)) && self.is_elementwise(e)
    }

    /// An elementwise expression with a dynamic-rank operand: one map over
    /// its tensor operands, which must share one shape at run time.
    fn dyn_map(&mut self, e: ExprId) -> Option<Expr> {
        let (mut pre, mut inputs, mut elems) = (Vec::new(), Vec::new(), Vec::new());
        let body = self.dyn_point(e, &mut inputs, &mut elems, &mut pre)?;
        let Repr::Scalar(k) = body.ty else {
            return self.fail("an elementwise map of a non-scalar");
        };
        let map = Expr { kind: ir::ExprKind::DynMap { inputs, elems, body: Box::new(body) }, ty: Repr::Dyn(k) };
        if pre.is_empty() {
            return Some(map);
        }
        Some(Expr { ty: map.ty.clone(), kind: ir::ExprKind::Block { stmts: pre, result: Box::new(map) } })
    }

    /// The element of `e` inside `dyn_map`: operations of dynamic-rank
    /// values apply to elements; any other tensor becomes an input, read
    /// element by element; a scalar is computed once, before the map.
    fn dyn_point(
        &mut self,
        e: ExprId,
        inputs: &mut Vec<Expr>,
        elems: &mut Vec<VarId>,
        pre: &mut Vec<Stmt>,
    ) -> Option<Expr> {
        let ty = self.t.ty(e).clone();
        if let ATy::Scalar(_) = ty {
            let v = self.lower_expr(e)?;
            if matches!(v.kind, ir::ExprKind::Lit(_) | ir::ExprKind::Var(_)) {
                return Some(v);
            }
            let tmp = self.new_var("scalar", v.ty.clone());
            let ty = v.ty.clone();
            pre.push(Stmt::Let { var: tmp, value: v });
            return Some(var_expr(tmp, ty));
        }
        if !self.is_compound_dyn(e) {
            let v = self.lower_expr(e)?;
            let (Repr::Tensor(k, _) | Repr::Dyn(k)) = v.ty else {
                return self.fail("an elementwise operand that is not a tensor");
            };
            let elem = self.new_var("elem", Repr::Scalar(k));
            inputs.push(v);
            elems.push(elem);
            return Some(var_expr(elem, Repr::Scalar(k)));
        }
        let ATy::Dyn(k) = ty else { return self.fail("an elementwise map of a non-tensor") };
        self.elementwise_node(e, k, |this, x| this.dyn_point(x, inputs, elems, pre))
    }

    fn lower_expr(&mut self, e: ExprId) -> Option<Expr> {
        if self.is_compound_dyn(e) {
            return self.dyn_map(e);
        }
        if self.is_compound_tensor(e) {
            let (stmts, v) = self.tensorize(e)?;
            let ty = self.vars[v.0 as usize].ty.clone();
            return Some(Expr {
                ty: ty.clone(),
                kind: ir::ExprKind::Block { stmts, result: Box::new(var_expr(v, ty)) },
            });
        }
        let ty = self.ty_of(e)?;
        let kind = match &self.hir.exprs[e].kind {
            ExprKind::Error => return self.fail("an erroneous expression reached lowering"),
            ExprKind::Rest(_) => return self.fail("a rest index reached lowering"),
            ExprKind::Deriv { .. } | ExprKind::Differential(_) => {
                return self.fail("a derivative request reached lowering")
            }
            ExprKind::Lit(lit) => ir::ExprKind::Lit(match lit {
                Lit::Int(v, _) => Literal::Int(*v),
                Lit::Float(s, _) => Literal::Float(s.clone()),
                Lit::Bool(b) => Literal::Bool(*b),
                Lit::Str(s) => Literal::Str(s.clone()),
            }),
            ExprKind::Def(d) if self.pattern_binds.contains_key(d) => return self.pattern_binds.get(d).cloned(),
            ExprKind::Def(d) => {
                if self.hir.defs[*d].kind == DefKind::Dim && !self.of_def.contains_key(d) {
                    return self.fail(format!("dimension `{}` is not bound", self.hir.name(*d)));
                }
                ir::ExprKind::Var(self.var_of(*d)?)
            }
            ExprKind::Unary(op, x) => ir::ExprKind::Unary(*op, Box::new(self.lower_expr(*x)?)),
            ExprKind::Binary(op, a, b) => {
                let la = self.lower_expr(*a)?;
                let lb = self.lower_expr(*b)?;
                if *op == BinOp::Pow {
                    let Some(i) = self.t.intrinsic.get(&e).copied() else {
                        return self.fail("`**` without a chosen intrinsic");
                    };
                    ir::ExprKind::Intrinsic(i, vec![la, lb])
                } else if *op == BinOp::Add && la.ty == Repr::Str {
                    // Concatenation: the two texts, formatted as they are.
                    ir::ExprKind::Format(vec![ir::FmtPart::Value(la, None), ir::FmtPart::Value(lb, None)])
                } else {
                    ir::ExprKind::Binary(*op, Box::new(la), Box::new(lb))
                }
            }
            ExprKind::Cast(x, k) => ir::ExprKind::Cast(Box::new(self.lower_expr(*x)?), *k),
            ExprKind::Call { callee, args, .. } => {
                let args = args.iter().map(|a| self.lower_expr(*a)).collect::<Option<Vec<_>>>()?;
                match callee {
                    Callee::Intrinsic(i) => {
                        ir::ExprKind::Intrinsic(self.t.intrinsic.get(&e).copied().unwrap_or(*i), args)
                    }
                    Callee::Fn(f) => {
                        let f = self.t.instance_calls.get(&e).copied().unwrap_or(*f);
                        let params = &self.t.sigs.get(f.index())?.as_ref()?.params;
                        let args = args
                            .into_iter()
                            .zip(params)
                            .map(|(a, p)| Some(coerce(a, &lower_ty(p)?)))
                            .collect::<Option<_>>()?;
                        let Some(func) = self.ids.get(f.index()).copied().flatten() else {
                            self.bug = Some(format!(
                                "a call of `{}`, which is not lowered",
                                self.hir.name(self.hir.fns[f].def)
                            ));
                            return None;
                        };
                        ir::ExprKind::Call { func, args }
                    }
                }
            }
            ExprKind::Index { base, args } if self.hir.shape_index(*base, args).is_some() => {
                let (x, axis) = self.hir.shape_index(*base, args)?;
                return self.axis_len(x, axis);
            }
            ExprKind::Index { base, args } => {
                let ExprKind::Def(d) = self.hir.exprs[*base].kind else {
                    return self.fail("indexing of a computed value reached lowering");
                };
                let tensor = self.var_of(d)?;
                if matches!(self.vars[tensor.0 as usize].ty, Repr::Jagged(_) | Repr::Str | Repr::Strs) {
                    let index = Box::new(self.lower_index(*args.first()?)?);
                    if let (Repr::Jagged(k), [_, at]) = (&self.vars[tensor.0 as usize].ty, args.as_slice()) {
                        // `j[i][k]`: the row, then its element (checked).
                        let row_ty = Repr::Tensor(*k, 1);
                        let row = self.new_var("row", row_ty.clone());
                        let value = Expr { kind: ir::ExprKind::JaggedRow { jagged: tensor, index }, ty: row_ty };
                        let read =
                            ir::ExprKind::Read { tensor: row, indices: vec![self.lower_index(*at)?], checked: true };
                        return Some(Expr {
                            kind: ir::ExprKind::Block {
                                stmts: vec![Stmt::Let { var: row, value }],
                                result: Box::new(Expr { kind: read, ty: ty.clone() }),
                            },
                            ty,
                        });
                    }
                    return Some(Expr { kind: ir::ExprKind::JaggedRow { jagged: tensor, index }, ty });
                }
                let indices = args.iter().map(|a| self.lower_index(*a)).collect::<Option<Vec<_>>>()?;
                if matches!(ty, Repr::Tensor(..)) {
                    ir::ExprKind::View { tensor, indices }
                } else {
                    let checked = !self.t.read_proven.get(&e).copied().unwrap_or(false);
                    ir::ExprKind::Read { tensor, indices, checked }
                }
            }
            ExprKind::Field(x, i) => ir::ExprKind::Field(Box::new(self.lower_expr(*x)?), *i),
            ExprKind::Reduce { op, vars, wheres, body } => {
                // Bounds that depend on the point are evaluated right
                // before the loops.
                let mut bounds = Vec::new();
                for r in vars.iter().filter_map(|v| v.range.as_ref()) {
                    for bound in [r.start, r.end] {
                        if let Some(&h) = self.t.point_bounds.get(&bound) {
                            self.bind_bound(bound, h, &mut bounds)?;
                        }
                    }
                }
                let mut loops = Vec::new();
                for v in vars {
                    let Some(range) = self.t.ranges.get(&v.def).cloned() else {
                        return self.fail(format!("index `{}` has no range", self.hir.name(v.def)));
                    };
                    let var = self.new_var(self.hir.name(v.def), Repr::Scalar(ScalarKind::I64));
                    self.of_def.insert(v.def, var);
                    self.spans.set_var(var, self.hir.span(e));
                    loops.push(Loop { index: var, start: self.dim(&range.start)?, end: self.dim(&range.end)? });
                }
                let wheres = self.lower_wheres(wheres)?;
                let body = self.lower_expr(*body)?;
                let reduce = ir::ExprKind::Reduce { op: *op, loops, wheres, body: Box::new(body) };
                if bounds.is_empty() {
                    reduce
                } else {
                    ir::ExprKind::Block { stmts: bounds, result: Box::new(Expr { kind: reduce, ty: ty.clone() }) }
                }
            }
            ExprKind::If { cond, then, els } => {
                let Some(els) = els else {
                    return self.fail("`if` without `else` reached lowering");
                };
                ir::ExprKind::If {
                    cond: Box::new(self.lower_expr(*cond)?),
                    then: Box::new(self.lower_expr(*then)?),
                    els: Box::new(self.lower_expr(*els)?),
                }
            }
            ExprKind::Block(b) => {
                let mut stmts = Vec::new();
                self.lower_stmts(&b.stmts, &mut stmts)?;
                let result = match b.tail {
                    Some(t) => {
                        self.bind_runtime_bounds(&[t], &mut stmts)?;
                        self.lower_value(t, &mut stmts)?
                    }
                    None => Expr { kind: ir::ExprKind::Tuple(Vec::new()), ty: Repr::Unit },
                };
                if stmts.is_empty() {
                    return Some(result);
                }
                ir::ExprKind::Block { stmts, result: Box::new(result) }
            }
            ExprKind::Array(items) if matches!(self.t.ty(e), ATy::Strs(_)) => {
                let elems = items.iter().map(|x| self.lower_expr(*x)).collect::<Option<Vec<_>>>()?;
                ir::ExprKind::ArrayLit { shape: vec![elems.len()], elems }
            }
            ExprKind::Array(_) => {
                let ATy::Tensor(_, dims) = self.t.ty(e).clone() else {
                    return self.fail("array literal without a tensor type");
                };
                let shape = dims.iter().map(|d| d.as_constant().map(|c| c as usize)).collect::<Option<Vec<_>>>()?;
                let (mut elems, mut pre) = (Vec::new(), Vec::new());
                self.flatten_array(e, &mut elems, &mut pre)?;
                let lit = ir::ExprKind::ArrayLit { shape, elems };
                if pre.is_empty() {
                    lit
                } else {
                    ir::ExprKind::Block { stmts: pre, result: Box::new(Expr { kind: lit, ty: ty.clone() }) }
                }
            }
            ExprKind::Tuple(items) => {
                ir::ExprKind::Tuple(items.iter().map(|x| self.lower_expr(*x)).collect::<Option<Vec<_>>>()?)
            }
            ExprKind::Jagged(rows) => {
                ir::ExprKind::JaggedLit { rows: rows.iter().map(|x| self.lower_expr(*x)).collect::<Option<Vec<_>>>()? }
            }
            ExprKind::Interp(parts) => {
                let mut out = Vec::new();
                for p in parts {
                    out.push(match p {
                        hir::InterpPart::Text(t) => ir::FmtPart::Text(t.clone()),
                        hir::InterpPart::Value(x, prec) => ir::FmtPart::Value(self.lower_expr(*x)?, *prec),
                    });
                }
                ir::ExprKind::Format(out)
            }
            ExprKind::Builtin(b, args) => return self.lower_builtin(*b, args, ty),
            ExprKind::TensorCast(x, _) => {
                let (target, checks) = self.t.cast_extents.get(&e).cloned()?;
                let mut extents = Vec::new();
                for c in &checks {
                    extents.push(match c {
                        Some(d) => Some(self.dim(d)?),
                        None => None,
                    });
                }
                if let ExprKind::Builtin(hir::Builtin::LoadNpy, args) = &self.hir.exprs[*x].kind {
                    let path = self.lower_expr(*args.first()?)?;
                    ir::ExprKind::LoadNpy { path: Box::new(path), extents }
                } else {
                    let value = self.lower_expr(*x)?;
                    let (Repr::Tensor(from, _) | Repr::Dyn(from)) = value.ty else {
                        return self.fail("a tensor conversion of a non-tensor");
                    };
                    let (Repr::Tensor(to, _) | Repr::Dyn(to)) = ty else {
                        return self.fail("a tensor conversion to a non-tensor");
                    };
                    // The shape first, keeping the elements' type; between
                    // tensors of one rank with every extent proven, that is
                    // the value itself.
                    let shaped_ty = match ty {
                        Repr::Tensor(_, rank) => Repr::Tensor(from, rank),
                        _ => Repr::Dyn(from),
                    };
                    let shaped = if value.ty == shaped_ty && extents.iter().all(Option::is_none) {
                        value
                    } else {
                        Expr {
                            kind: ir::ExprKind::ShapeCast { value: Box::new(value), target, extents },
                            ty: shaped_ty,
                        }
                    };
                    return if from == to { Some(shaped) } else { self.convert_elements(shaped, to) };
                }
            }
            ExprKind::Match { scrutinee, arms } => return self.lower_match(*scrutinee, arms, ty),
            ExprKind::Comprehension { body, clauses, rows } => {
                let rows = *rows;
                let mut steps = Vec::new();
                for c in clauses {
                    match c {
                        hir::CompClause::Range { def, .. } => {
                            let range = self.t.ranges.get(def).cloned()?;
                            let var = self.new_var(self.hir.name(*def), Repr::Scalar(ScalarKind::I64));
                            self.of_def.insert(*def, var);
                            steps.push(ir::CollectStep::Loop(Loop {
                                index: var,
                                start: self.dim(&range.start)?,
                                end: self.dim(&range.end)?,
                            }));
                        }
                        hir::CompClause::Each { def, over } => {
                            // Iterate over a named tensor's first axis, or a
                            // jagged array's rows.
                            let tensor = self.lower_expr(*over)?;
                            let jagged = matches!(self.t.ty(*over), ATy::Jagged(_) | ATy::Strs(_));
                            let dims = match self.t.ty(*over).clone() {
                                ATy::Tensor(_, dims) => dims,
                                ATy::Jagged(_) | ATy::Strs(_) => Vec::new(),
                                _ => return self.fail("comprehension over a non-tensor"),
                            };
                            let tvar = match tensor.kind {
                                ir::ExprKind::Var(v) => v,
                                _ => {
                                    let v = self.new_var("items", tensor.ty.clone());
                                    steps.push(ir::CollectStep::Where(WhereEntry::Bind(v, tensor)));
                                    v
                                }
                            };
                            let i64_ty = Repr::Scalar(ScalarKind::I64);
                            let end = if jagged {
                                let rows = self.new_var("rows", i64_ty.clone());
                                let count =
                                    Expr { kind: ir::ExprKind::Len { tensor: tvar, axis: 0 }, ty: i64_ty.clone() };
                                steps.push(ir::CollectStep::Where(WhereEntry::Bind(rows, count)));
                                Dim::var(crate::base::dim::DimVar(rows.0))
                            } else {
                                self.dim(dims.first()?)?
                            };
                            let index = self.new_var("at", i64_ty.clone());
                            steps.push(ir::CollectStep::Loop(Loop { index, start: Dim::zero(), end }));
                            let elem_ty = lower_ty(self.t.def_ty.get(def)?)?;
                            let at = var_expr(index, i64_ty.clone());
                            let elem = match elem_ty {
                                _ if jagged => Expr {
                                    kind: ir::ExprKind::JaggedRow { jagged: tvar, index: Box::new(at) },
                                    ty: elem_ty.clone(),
                                },
                                Repr::Scalar(_) => Expr {
                                    kind: ir::ExprKind::Read { tensor: tvar, indices: vec![at], checked: false },
                                    ty: elem_ty.clone(),
                                },
                                _ => Expr {
                                    kind: ir::ExprKind::View { tensor: tvar, indices: vec![at] },
                                    ty: elem_ty.clone(),
                                },
                            };
                            let var = self.new_var(self.hir.name(*def), elem_ty);
                            self.of_def.insert(*def, var);
                            steps.push(ir::CollectStep::Where(WhereEntry::Bind(var, elem)));
                            // A row's length is read off the row.
                            if let Some(ATy::Tensor(_, row_dims)) = self.t.def_ty.get(def).cloned() {
                                for (axis, d) in row_dims.iter().enumerate() {
                                    if let Some(h) = d.as_var().filter(|h| h.0 >= analysis::HIDDEN_DIM_BASE) {
                                        let len = self.new_var("len", i64_ty.clone());
                                        let value =
                                            Expr { kind: ir::ExprKind::Len { tensor: var, axis }, ty: i64_ty.clone() };
                                        steps.push(ir::CollectStep::Where(WhereEntry::Bind(len, value)));
                                        self.of_hidden.insert(h, len);
                                    }
                                }
                            }
                        }
                        hir::CompClause::Filter(f) => {
                            steps.push(ir::CollectStep::Where(WhereEntry::Guard(self.lower_expr(*f)?)))
                        }
                    }
                }
                let elem_shape = match self.t.ty(*body).clone() {
                    // Rows of a jagged array have their own lengths.
                    ATy::Tensor(_, dims) if !rows => dims.iter().map(|d| self.dim(d)).collect::<Option<Vec<_>>>()?,
                    _ => Vec::new(),
                };
                ir::ExprKind::Collect { steps, body: Box::new(self.lower_expr(*body)?), elem_shape }
            }
        };
        Some(Expr { kind, ty })
    }

    /// `match` becomes a chain of `if`s over a local holding the scrutinee;
    /// names bound by patterns stand for fields of that local. The last arm
    /// is the final `else`: exhaustiveness (checked in analysis) means it is
    /// reached only when it matches.
    fn lower_match(&mut self, scrutinee: ExprId, arms: &[hir::Arm], ty: Repr) -> Option<Expr> {
        let s = self.lower_expr(scrutinee)?;
        let tmp = self.new_var("matched", s.ty.clone());
        let tmp_expr = var_expr(tmp, s.ty.clone());
        let mut lowered = Vec::new();
        for arm in arms {
            self.bind_pattern(&arm.pat, &tmp_expr);
            let mut cond = self.pattern_cond(&arm.pat, &tmp_expr);
            if let Some(g) = arm.guard {
                let g = self.lower_expr(g)?;
                cond = Some(match cond {
                    Some(c) => bool_and(c, g),
                    None => g,
                });
            }
            lowered.push((cond, self.lower_expr(arm.body)?));
        }
        let (_, mut acc) = lowered.pop()?;
        while let Some((cond, body)) = lowered.pop() {
            acc = match cond {
                None => body,
                Some(c) => Expr {
                    ty: ty.clone(),
                    kind: ir::ExprKind::If { cond: Box::new(c), then: Box::new(body), els: Box::new(acc) },
                },
            };
        }
        Some(Expr {
            ty,
            kind: ir::ExprKind::Block { stmts: vec![Stmt::Let { var: tmp, value: s }], result: Box::new(acc) },
        })
    }

    fn bind_pattern(&mut self, p: &hir::Pat, part: &Expr) {
        match p {
            hir::Pat::Bind(d) => {
                self.pattern_binds.insert(*d, part.clone());
            }
            hir::Pat::At(d, p) => {
                self.pattern_binds.insert(*d, part.clone());
                self.bind_pattern(p, part);
            }
            hir::Pat::Tuple(items) => {
                if let Repr::Tuple(tys) = &part.ty {
                    for (i, (p, t)) in items.iter().zip(tys.clone()).enumerate() {
                        let field = Expr { kind: ir::ExprKind::Field(Box::new(part.clone()), i as u32), ty: t };
                        self.bind_pattern(p, &field);
                    }
                }
            }
            _ => {}
        }
    }

    /// The condition under which `p` matches `part` (None: always).
    fn pattern_cond(&mut self, p: &hir::Pat, part: &Expr) -> Option<Expr> {
        let lit = |l: &Lit, ty: &Repr| Expr {
            kind: ir::ExprKind::Lit(match l {
                Lit::Int(v, _) => Literal::Int(*v),
                Lit::Float(s, _) => Literal::Float(s.clone()),
                Lit::Bool(b) => Literal::Bool(*b),
                Lit::Str(s) => Literal::Str(s.clone()),
            }),
            ty: ty.clone(),
        };
        let cmp = |op: BinOp, a: Expr, b: Expr| Expr {
            kind: ir::ExprKind::Binary(op, Box::new(a), Box::new(b)),
            ty: Repr::Scalar(ScalarKind::Bool),
        };
        match p {
            hir::Pat::Wild | hir::Pat::Bind(_) => None,
            hir::Pat::Lit(l, _) => Some(cmp(BinOp::Eq, part.clone(), lit(l, &part.ty))),
            hir::Pat::Range { lo, hi, inclusive, .. } => {
                let low = cmp(BinOp::Le, lit(lo, &part.ty), part.clone());
                let high = cmp(if *inclusive { BinOp::Le } else { BinOp::Lt }, part.clone(), lit(hi, &part.ty));
                Some(bool_and(low, high))
            }
            hir::Pat::At(_, p) => self.pattern_cond(p, part),
            hir::Pat::Or(alts) => {
                let mut acc: Option<Expr> = None;
                for q in alts {
                    // An alternative that always matches makes the whole.
                    let c = self.pattern_cond(q, part)?;
                    acc = Some(match acc {
                        Some(a) => Expr {
                            kind: ir::ExprKind::Binary(BinOp::Or, Box::new(a), Box::new(c)),
                            ty: Repr::Scalar(ScalarKind::Bool),
                        },
                        None => c,
                    });
                }
                acc
            }
            hir::Pat::Tuple(items) => {
                let Repr::Tuple(tys) = &part.ty else { return None };
                let mut acc: Option<Expr> = None;
                for (i, (p, t)) in items.iter().zip(tys.clone()).enumerate() {
                    let field = Expr { kind: ir::ExprKind::Field(Box::new(part.clone()), i as u32), ty: t };
                    if let Some(c) = self.pattern_cond(p, &field) {
                        acc = Some(match acc {
                            Some(a) => bool_and(a, c),
                            None => c,
                        });
                    }
                }
                acc
            }
        }
    }

    fn lower_builtin(&mut self, b: hir::Builtin, args: &[ExprId], ty: Repr) -> Option<Expr> {
        use hir::Builtin;
        let kind = match b {
            Builtin::Print => {
                ir::ExprKind::Print(args.iter().map(|a| self.lower_expr(*a)).collect::<Option<Vec<_>>>()?)
            }
            Builtin::Assert => {
                let cond = self.lower_expr(*args.first()?)?;
                let message = match args.get(1) {
                    Some(m) => self.lower_expr(*m)?,
                    None => {
                        Expr { kind: ir::ExprKind::Lit(Literal::Str("assertion failed".to_string())), ty: Repr::Str }
                    }
                };
                ir::ExprKind::Assert { cond: Box::new(cond), message: Box::new(message) }
            }
            Builtin::Shape if matches!(self.t.ty(*args.first()?), ATy::Dyn(_)) => {
                return self.with_var(*args.first()?, ty, |tensor| ir::ExprKind::ShapeOf { tensor });
            }
            Builtin::Len => return self.axis_len(*args.first()?, 0),
            Builtin::Reshape(op) => {
                let value = Box::new(self.lower_expr(*args.first()?)?);
                let arg = Box::new(self.lower_expr(*args.get(1)?)?);
                ir::ExprKind::DynShape { op, value, arg }
            }
            Builtin::TypeOf => ir::ExprKind::Lit(Literal::Str(type_name(self.t.ty(*args.first()?)))),
            Builtin::LoadNpy => return self.fail("`load_npy` without a type reached lowering"),
            Builtin::Fs(op) => {
                ir::ExprKind::Fs { op, args: args.iter().map(|a| self.lower_expr(*a)).collect::<Option<Vec<_>>>()? }
            }
            Builtin::SaveNpy => {
                let path = self.lower_expr(*args.first()?)?;
                let value = self.lower_expr(*args.get(1)?)?;
                ir::ExprKind::SaveNpy { path: Box::new(path), value: Box::new(value) }
            }
            Builtin::Shape => {
                let x = *args.first()?;
                let ATy::Tensor(_, dims) = self.t.ty(x).clone() else {
                    return self.fail("`shape` of a non-tensor reached lowering");
                };
                let mut elems = Vec::new();
                for d in &dims {
                    elems.push(dim_expr(self.dim(d)?));
                }
                ir::ExprKind::ArrayLit { shape: vec![dims.len()], elems }
            }
        };
        Some(Expr { kind, ty })
    }

    /// `let tmp = value; let out[i, ..] = tmp[i, ..] as to`: a tensor of
    /// known rank with its elements converted.
    fn convert_elements(&mut self, value: Expr, to: ScalarKind) -> Option<Expr> {
        let Repr::Tensor(from, rank) = value.ty else {
            return self.fail("an element conversion of a tensor without a known rank");
        };
        let i64_ty = Repr::Scalar(ScalarKind::I64);
        let tmp = self.new_var("converted", value.ty.clone());
        let mut stmts = vec![Stmt::Let { var: tmp, value }];
        let (mut axes, mut indices) = (Vec::new(), Vec::new());
        for axis in 0..rank {
            let len = self.new_var("len", i64_ty.clone());
            let len_value = Expr { kind: ir::ExprKind::Len { tensor: tmp, axis }, ty: i64_ty.clone() };
            stmts.push(Stmt::Let { var: len, value: len_value });
            let index = self.new_var(&format!("i{axis}"), i64_ty.clone());
            axes.push(Axis { index, start: Dim::zero(), extent: Dim::var(DimVar(len.0)) });
            indices.push(var_expr(index, i64_ty.clone()));
        }
        let read = Expr { kind: ir::ExprKind::Read { tensor: tmp, indices, checked: false }, ty: Repr::Scalar(from) };
        let body = Expr { kind: ir::ExprKind::Cast(Box::new(read), to), ty: Repr::Scalar(to) };
        let out = self.new_var("out", Repr::Tensor(to, rank));
        let cost_per_point = expr_cost(&body);
        stmts.push(Stmt::Tensor(TensorDef { var: out, elem: to, axes, body, cost_per_point, domain_guards: 0 }));
        Some(Expr {
            ty: Repr::Tensor(to, rank),
            kind: ir::ExprKind::Block { stmts, result: Box::new(var_expr(out, Repr::Tensor(to, rank))) },
        })
    }

    /// `read(var)` for the variable that holds the value of `x`: its own
    /// when `x` is a name, else a temporary bound in a block around the
    /// result.
    fn with_var(&mut self, x: ExprId, ty: Repr, read: impl FnOnce(VarId) -> ir::ExprKind) -> Option<Expr> {
        if let ExprKind::Def(d) = self.hir.exprs[x].kind {
            return Some(Expr { kind: read(self.var_of(d)?), ty });
        }
        let value = self.lower_expr(x)?;
        let tmp = self.new_var("value", value.ty.clone());
        let result = Expr { kind: read(tmp), ty: ty.clone() };
        Some(Expr {
            kind: ir::ExprKind::Block { stmts: vec![Stmt::Let { var: tmp, value }], result: Box::new(result) },
            ty,
        })
    }

    /// `len(x)` or `shape(x)[axis]`: the extent from the type when it is
    /// known here, else read off the value at run time (a dynamic-rank
    /// tensor, or an unnamed value whose extent only it knows).
    fn axis_len(&mut self, x: ExprId, axis: usize) -> Option<Expr> {
        let i64_ty = Repr::Scalar(ScalarKind::I64);
        let known = match self.t.ty(x) {
            ATy::Tensor(_, dims) => dims.get(axis).is_some_and(|d| {
                d.vars().iter().all(|v| v.0 < analysis::HIDDEN_DIM_BASE || self.of_hidden.contains_key(v))
            }),
            _ => false,
        };
        if known {
            return Some(Expr { kind: ir::ExprKind::Dim(self.axis_dim(x, axis)?), ty: i64_ty });
        }
        self.with_var(x, i64_ty, |tensor| ir::ExprKind::Len { tensor, axis })
    }

    /// The extent of axis `axis` of tensor `x`, over the function's variables.
    fn axis_dim(&mut self, x: ExprId, axis: usize) -> Option<Dim> {
        let ATy::Tensor(_, dims) = self.t.ty(x).clone() else {
            return self.fail("an axis length of a non-tensor reached lowering");
        };
        let d = dims.get(axis)?.clone();
        self.dim(&d)
    }

    /// The scalars of an array literal in row-major order. An element that
    /// is a tensor of known size but not itself a literal (`[x, y]`, `[m as
    /// [f32], ..]`) is evaluated once into a temporary (in `pre`) and read
    /// element by element.
    fn flatten_array(&mut self, e: ExprId, out: &mut Vec<Expr>, pre: &mut Vec<Stmt>) -> Option<()> {
        if let ExprKind::Array(items) = &self.hir.exprs[e].kind {
            for x in items.clone() {
                self.flatten_array(x, out, pre)?;
            }
            return Some(());
        }
        let ATy::Tensor(k, dims) = self.t.ty(e).clone() else {
            out.push(self.lower_expr(e)?);
            return Some(());
        };
        let shape = dims.iter().map(|d| d.as_constant()).collect::<Option<Vec<i64>>>()?;
        let value = self.lower_expr(e)?;
        let tmp = self.new_var("part", value.ty.clone());
        pre.push(Stmt::Let { var: tmp, value });
        let total: i64 = shape.iter().product();
        for flat in 0..total {
            let (mut rest, mut indices) = (flat, vec![0; shape.len()]);
            for (axis, n) in shape.iter().enumerate().rev() {
                indices[axis] = rest % n;
                rest /= n;
            }
            let indices = indices
                .into_iter()
                .map(|i| Expr {
                    kind: ir::ExprKind::Lit(Literal::Int(i128::from(i))),
                    ty: Repr::Scalar(ScalarKind::I64),
                })
                .collect();
            out.push(Expr { kind: ir::ExprKind::Read { tensor: tmp, indices, checked: false }, ty: Repr::Scalar(k) });
        }
        Some(())
    }

    /// An index expression as `i64`.
    fn lower_index(&mut self, e: ExprId) -> Option<Expr> {
        let x = self.lower_expr(e)?;
        if x.ty == Repr::Scalar(ScalarKind::I64) {
            Some(x)
        } else {
            Some(Expr { kind: ir::ExprKind::Cast(Box::new(x), ScalarKind::I64), ty: Repr::Scalar(ScalarKind::I64) })
        }
    }
}

/// Whether the clauses' covers of a rank-1 recurrence's only axis follow
/// each other without gaps from the loop's start: then they cover
/// everything up to the largest end, which is the extent.
fn covers_chain(covers: &[Vec<ir::Cover>], seq: &[(usize, Loop)]) -> bool {
    let Some((_, lp)) = seq.first() else { return false };
    let mut spans: Vec<(Dim, Dim)> = covers
        .iter()
        .map(|row| match &row[0] {
            ir::Cover::At(n) => (Dim::constant(*n), Dim::constant(n + 1)),
            ir::Cover::Range(s, e) => (s.clone(), e.clone()),
        })
        .collect();
    let mut at = lp.start.clone();
    while !spans.is_empty() {
        let Some(i) = spans.iter().position(|(s, _)| *s == at) else { return false };
        at = spans.remove(i).1;
    }
    true
}

/// What `typeof` says of a value of type `t`: the scalar's name, `str`,
/// and, as the seed implementation says, `rectangular` for a tensor and
/// `tuple` for a tuple.
fn type_name(t: &ATy) -> String {
    match t {
        ATy::Scalar(k) => k.name().to_string(),
        ATy::Str => "str".to_string(),
        ATy::Tensor(..) | ATy::Dyn(_) | ATy::Strs(_) => "rectangular".to_string(),
        ATy::Jagged(_) => "jagged".to_string(),
        ATy::Tuple(items) if items.is_empty() => "()".to_string(),
        ATy::Tuple(_) => "tuple".to_string(),
        ATy::Error => "{unknown}".to_string(),
    }
}

/// `value` as a value of type `to`: a tensor where `[T; *]` is expected
/// becomes a dynamic-rank one, a dynamic-rank tensor where a rank is
/// expected (a function's result) is checked to have it; anything else is
/// unchanged.
fn coerce(value: Expr, to: &Repr) -> Expr {
    match (&value.ty, to) {
        (Repr::Dyn(k1), Repr::Tensor(k2, rank)) if k1 == k2 => Expr {
            ty: to.clone(),
            kind: ir::ExprKind::ShapeCast {
                target: format!("[{}; {}]", k2.name(), vec!["_"; *rank].join(", ")),
                value: Box::new(value),
                extents: vec![None; *rank],
            },
        },
        (Repr::Tensor(k1, _), Repr::Dyn(k2)) if k1 == k2 => Expr {
            ty: to.clone(),
            kind: ir::ExprKind::ShapeCast {
                target: format!("[{}; *]", k2.name()),
                value: Box::new(value),
                extents: Vec::new(),
            },
        },
        _ => value,
    }
}

/// `body` under `wheres` (a false guard makes the point zero).
fn guarded(wheres: Vec<WhereEntry>, body: Expr) -> Expr {
    if wheres.is_empty() {
        body
    } else {
        Expr { ty: body.ty.clone(), kind: ir::ExprKind::Guarded { wheres, body: Box::new(body) } }
    }
}

fn var_expr(v: VarId, ty: Repr) -> Expr {
    Expr { kind: ir::ExprKind::Var(v), ty }
}

fn bool_and(a: Expr, b: Expr) -> Expr {
    Expr { kind: ir::ExprKind::Binary(BinOp::And, Box::new(a), Box::new(b)), ty: Repr::Scalar(ScalarKind::Bool) }
}

fn dim_expr(d: Dim) -> Expr {
    Expr { kind: ir::ExprKind::Dim(d), ty: Repr::Scalar(ScalarKind::I64) }
}

/// Index variables introduced anywhere in `e` (reduction variables).
fn collect_index_defs(hir: &Hir, e: ExprId, out: &mut Vec<DefId>) {
    let mut stack = vec![e];
    while let Some(x) = stack.pop() {
        match &hir.exprs[x].kind {
            ExprKind::Reduce { vars, wheres, body, .. } => {
                out.extend(vars.iter().map(|v| v.def));
                stack.push(*body);
                for w in wheres {
                    match w {
                        Where::Bind { value, .. } => stack.push(*value),
                        Where::Guard(g) => stack.push(*g),
                    }
                }
            }
            ExprKind::Unary(_, a) | ExprKind::Cast(a, _) | ExprKind::Field(a, _) | ExprKind::TensorCast(a, _) => {
                stack.push(*a)
            }
            ExprKind::Binary(_, a, b) => {
                stack.push(*a);
                stack.push(*b);
            }
            ExprKind::Call { args, .. }
            | ExprKind::Array(args)
            | ExprKind::Jagged(args)
            | ExprKind::Tuple(args)
            | ExprKind::Builtin(_, args) => stack.extend(args.iter().copied()),
            ExprKind::Interp(parts) => {
                for p in parts {
                    if let hir::InterpPart::Value(x, _) = p {
                        stack.push(*x);
                    }
                }
            }
            ExprKind::Match { scrutinee, arms } => {
                stack.push(*scrutinee);
                for a in arms {
                    stack.extend(a.guard);
                    stack.push(a.body);
                }
            }
            // Comprehension generators have explicit ranges; nothing to check.
            ExprKind::Comprehension { .. } => {}
            ExprKind::Index { base, args } => {
                stack.push(*base);
                stack.extend(args.iter().copied());
            }
            ExprKind::If { cond, then, els } => {
                stack.push(*cond);
                stack.push(*then);
                if let Some(x) = els {
                    stack.push(*x);
                }
            }
            ExprKind::Block(b) => {
                // Nested statements lower their own checks.
                if let Some(t) = b.tail {
                    stack.push(t);
                }
            }
            ExprKind::Lit(_)
            | ExprKind::Def(_)
            | ExprKind::Rest(_)
            | ExprKind::Error
            | ExprKind::Deriv { .. }
            | ExprKind::Differential(_) => {}
        }
    }
}
