//! Analyses over the HIR: element types, symbolic shapes and index ranges.
//!
//! The result is a set of side tables (`Tables`) keyed by `ExprId`, `DefId`
//! and `FnId`; the HIR itself is not modified. The analyses are interleaved
//! per statement because they feed each other in source order: the shape of
//! a tensor defined by one statement is needed to infer ranges in the next.
//! For one statement (a *unit*):
//!
//! 1. types are inferred bottom-up with an expected scalar type flowing down,
//!    which gives unsuffixed literals their type as in Rust; every tensor
//!    read is recorded with the symbolic form of its indices;
//! 2. the ranges of the statement's index variables are solved from explicit
//!    brackets, direct reads (`A[i, k]` binds `k` to `A`'s axis 1) and affine
//!    reads (`x[y + r]` bounds `y` by `len - r_max`), see `ranges.rs`;
//! 3. every read is checked against its tensor's extents: proven reads become
//!    unchecked accesses, definitely-out-of-bounds unconditional reads are
//!    errors, and the rest are checked at run time.
//!
//! Dimension variables (`DimVar`) are the raw ids of the `DefId`s they stand
//! for: dimension symbols, `i64` parameters and index variables. Unknown
//! dimensions (`?`) get fresh variables above `HIDDEN_DIM_BASE`.

pub mod mono;
pub mod pretty;
mod ranges;
pub mod recur;
#[cfg(test)]
mod tests;
pub mod ty;

use std::collections::HashMap;

use crate::base::dim::{Dim, DimVar, Truth};
use crate::base::intrinsic::Intrinsic;
use crate::base::ops::{BinOp, Lit, RedOp, UnOp};
use crate::base::scalar::{int_fits, ScalarKind};
use crate::base::span::Span;
use crate::diag::{Diagnostic, Diagnostics};
use crate::hir::{Callee, DefId, DefKind, DimAnn, ExprId, ExprKind, FnId, Hir, Slot, Stmt, TyAnn, Where};
pub use ty::Ty;

/// Fresh dimension variables for `?` start here, far above any `DefId`.
pub const HIDDEN_DIM_BASE: u32 = 1 << 30;

/// The range `start..end` of an index variable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexRange {
    pub start: Dim,
    pub end: Dim,
}

/// Two extents one index was bound to that could not be proven equal at
/// compile time; checked before the statement runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SameExtent {
    pub index: String,
    pub a: Dim,
    pub a_what: String,
    pub b: Dim,
    pub b_what: String,
}

/// How a parameter's shape is bound and checked at function entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EntryPlan {
    /// `path`: the tuple element of the parameter that holds the tensor
    /// (empty: the parameter itself).
    BindDim {
        dim: DimVar,
        param: usize,
        path: Vec<u32>,
        axis: usize,
    },
    CheckDim {
        param: usize,
        path: Vec<u32>,
        axis: usize,
        symbol: String,
        expected: Dim,
    },
}

/// A function's signature after analysis.
#[derive(Clone, Debug)]
pub struct FnSig {
    pub params: Vec<Ty>,
    pub ret: Ty,
    pub entry: Vec<EntryPlan>,
    /// Result axes whose declared extent could not be proven equal to the
    /// computed one.
    pub result_checks: Vec<ResultCheck>,
}

/// A result axis to check at run time.
#[derive(Clone, Debug)]
pub struct ResultCheck {
    /// Which tuple element holds the tensor (empty: the result itself).
    pub path: Vec<u32>,
    pub axis: usize,
    pub declared: Dim,
    /// The declared extent as written.
    pub symbol: String,
}

/// The analyses' results.
#[derive(Debug, Default)]
pub struct Tables {
    /// Type of every expression, by `ExprId` index.
    pub expr_ty: Vec<Ty>,
    /// Type of every parameter, local, where-binding and index variable.
    pub def_ty: HashMap<DefId, Ty>,
    /// Range of every index variable.
    pub ranges: HashMap<DefId, IndexRange>,
    /// For each element read (`Index` with as many indices as the rank):
    /// whether all its indices were proven in bounds.
    pub read_proven: HashMap<ExprId, bool>,
    /// Run-time extent agreements, attached to the index variable.
    pub same_extent: HashMap<DefId, Vec<SameExtent>>,
    /// Signatures, by `FnId` index (None for functions that failed).
    pub sigs: Vec<Option<FnSig>>,
    /// The concrete intrinsic chosen for `pow`-like calls and `**`.
    pub intrinsic: HashMap<ExprId, Intrinsic>,
    /// Source names of dimension variables (for messages).
    pub dim_names: HashMap<DimVar, String>,
    /// Calls of generic functions that have no instance yet, with the types
    /// of their arguments (see `mono`).
    pub mono_requests: Vec<MonoRequest>,
    /// For each conversion to a tensor type of known rank (`x as [T; ..]`,
    /// `load_npy(..) as [T; ..]`): the target as written, and the extent
    /// each axis must have at run time (None: taken from the value).
    pub cast_extents: HashMap<ExprId, (String, Vec<Option<Dim>>)>,
    /// Range bounds known only at run time (`0..len(j)` of a jagged array,
    /// `0..n` of a local `n`): the hidden dimension each stands for, bound
    /// by evaluating the bound before the statement that contains it.
    pub runtime_bounds: HashMap<ExprId, DimVar>,
    /// Range bounds of a reduction that depend on the point it is
    /// evaluated at (`sum[k in 0..len(j[i])](j[i][k])`): the hidden
    /// dimension each stands for, bound by evaluating the bound right
    /// before that reduction, at each point.
    pub point_bounds: HashMap<ExprId, DimVar>,
    /// The decisions made for every recurrence, by its tensor's `DefId`.
    pub recurrences: HashMap<DefId, recur::RecurrenceFacts>,
    /// Reads of a recurrence inside its own clauses, with the recurrence.
    pub own_reads: HashMap<ExprId, DefId>,
    /// `let` bindings of unsuffixed literals that a use needs at another
    /// type of the same kind (integer or float), as Rust would infer it;
    /// the driver records them in `Hir::literal_types` and analyzes again.
    /// Each with the span of the use.
    pub retypes: Vec<(DefId, ScalarKind, Span)>,
}

/// A call of generic function `generic` with arguments of types `args`.
#[derive(Clone, Debug)]
pub struct MonoRequest {
    pub call: ExprId,
    pub generic: FnId,
    pub args: Vec<Ty>,
    pub span: Span,
}

impl Tables {
    pub fn ty(&self, e: ExprId) -> &Ty {
        &self.expr_ty[e.index()]
    }

    pub fn dim_name(&self, v: DimVar) -> String {
        self.dim_names.get(&v).cloned().unwrap_or_else(|| format!("d{}", v.0))
    }

    /// Text of a dimension as the user would write it.
    pub fn show_dim(&self, d: &Dim) -> String {
        d.display(&|v| self.dim_name(v))
    }

    pub fn show_ty(&self, t: &Ty) -> String {
        t.display(&|v| self.dim_name(v))
    }
}

pub fn dim_var(def: DefId) -> DimVar {
    DimVar(def.raw())
}

/// Runs all analyses over `hir`.
pub fn analyze(hir: &Hir, diags: &mut Diagnostics) -> Tables {
    let mut cx = Cx {
        hir,
        t: Tables { expr_ty: vec![Ty::Error; hir.exprs.len()], sigs: vec![None; hir.fns.len()], ..Tables::default() },
        diags,
        env: HashMap::new(),
        fn_state: vec![FnState::NotStarted; hir.fns.len()],
        units: Vec::new(),
        narrow: Vec::new(),
        cond_depth: 0,
        next_hidden: HIDDEN_DIM_BASE,
        where_values: HashMap::new(),
        failed_vars: Default::default(),
        bound_dims: Default::default(),
        recs: Vec::new(),
        slot_fallback: HashMap::new(),
        let_locals: Default::default(),
        let_values: HashMap::new(),
        flex_lets: Default::default(),
        literal_origin: HashMap::new(),
        in_instance: false,
        rec_guess: HashMap::new(),
        recursing: Default::default(),
        rec_failed: Default::default(),
        rec_called: Default::default(),
        rec_rounds: HashMap::new(),
    };
    for (def, d) in hir.defs.iter() {
        if matches!(d.kind, DefKind::Dim | DefKind::Param | DefKind::Index) {
            cx.t.dim_names.insert(dim_var(def), d.name.clone());
        }
    }
    let analyzed = |f: FnId, func: &crate::hir::Function| {
        !func.is_generic() && !hir.broken_instances.contains(&f) && !hir.skipped(f)
    };
    for (f, func) in hir.fns.iter() {
        if analyzed(f, func) {
            cx.declare_sig(f);
        }
    }
    for (f, func) in hir.fns.iter() {
        if analyzed(f, func) {
            cx.analyze_fn(f);
        }
    }
    cx.t
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FnState {
    NotStarted,
    InProgress,
    Done,
}

/// A tensor read recorded for range inference and bounds checking.
#[derive(Clone, Debug)]
struct Read {
    expr: ExprId,
    tensor: String,
    span: Span,
    /// Per indexed axis: the axis length, the index as a `Dim` (None when it
    /// is data-dependent) and the index expression.
    axes: Vec<(Dim, Option<Dim>, ExprId)>,
    /// Whether the read only happens under a condition.
    conditional: bool,
    /// Range narrowings in force at the read (from guards and `if`s).
    narrow: Vec<Narrowing>,
    /// Whether the read selects a sub-tensor (always checked at run time).
    partial: bool,
    /// For a read of a recurrence inside its own clauses: the recurrence
    /// (see `recur`).
    own: Option<DefId>,
}

/// `lo <= var < hi` known to hold inside a guarded region.
#[derive(Clone, Debug)]
struct Narrowing {
    var: DefId,
    lo: Option<Dim>,
    hi: Option<Dim>,
}

/// The index variables introduced by one statement and the reads seen in it.
#[derive(Default)]
struct Unit {
    /// How many diagnostics existed when the unit started: a unit that
    /// already reported an error does not add "cannot infer" follow-ons.
    diags_at_start: usize,
    /// Whether an expression of the unit has the type `Error`.
    saw_error: bool,
    vars: Vec<DefId>,
    explicit: HashMap<DefId, IndexRange>,
    reads: Vec<Read>,
}

struct Cx<'a> {
    hir: &'a Hir,
    t: Tables,
    diags: &'a mut Diagnostics,
    env: HashMap<DefId, Ty>,
    fn_state: Vec<FnState>,
    units: Vec<Unit>,
    narrow: Vec<Narrowing>,
    cond_depth: usize,
    next_hidden: u32,
    /// The value of every where-binding typed so far (index equations are
    /// substituted through these).
    where_values: HashMap<DefId, ExprId>,
    /// Index variables whose range could not be inferred (already reported).
    failed_vars: std::collections::HashSet<DefId>,
    /// Dimension variables the function being analyzed has values for
    /// (bound from its parameters' shapes, or `i64` parameters).
    bound_dims: std::collections::HashSet<DimVar>,
    /// Recurrences whose clauses are being typed, innermost last.
    recs: Vec<recur::RecState>,
    /// Ranges for recurrence slots that nothing in their clause bounds.
    slot_fallback: HashMap<DefId, IndexRange>,
    /// Locals bound by `let` statements: their values exist before any
    /// later statement runs, so a range bound may read them.
    let_locals: std::collections::HashSet<DefId>,
    /// The value of every `i64` `let` local typed so far: a symbolic
    /// integer expression reads through it (`let n = len(x);` is `N`).
    let_values: HashMap<DefId, ExprId>,
    /// Unannotated `let`s whose value is made of unsuffixed literals: their
    /// type is open to a later use (see `Tables::retypes`), or was decided
    /// by one (`Hir::literal_types`).
    flex_lets: std::collections::HashSet<DefId>,
    /// Locals whose element type comes from one of `flex_lets` (`let s =
    /// sum[i](v[i])`, a definition reading it, a generator over it).
    literal_origin: HashMap<DefId, DefId>,
    /// Whether the function being analyzed is an instance of a generic
    /// function (its literals are not retyped: the copy is remade).
    in_instance: bool,
    /// Result types of recursive functions without a declared one, from
    /// their base cases (see `analyze_fn`).
    rec_guess: HashMap<FnId, Ty>,
    /// Functions whose body made a recursive call before their result type
    /// was known (the call's type was left open).
    recursing: std::collections::HashSet<FnId>,
    /// Recursive functions whose result type could not be found that way.
    rec_failed: std::collections::HashSet<FnId>,
    /// Functions whose body made a recursive call in the current round.
    rec_called: std::collections::HashSet<FnId>,
    /// How many times each recursive function was analyzed again.
    rec_rounds: HashMap<FnId, usize>,
}

/// Per-function state saved while another function is analyzed on demand.
struct Saved {
    bound_dims: std::collections::HashSet<DimVar>,
    env: HashMap<DefId, Ty>,
    units: Vec<Unit>,
    narrow: Vec<Narrowing>,
    cond_depth: usize,
    recs: Vec<recur::RecState>,
}

impl<'a> Cx<'a> {
    fn err(&mut self, d: Diagnostic) {
        self.diags.push(d);
    }

    /// A new dimension variable for an extent known only at run time.
    fn fresh_hidden(&mut self) -> DimVar {
        let v = DimVar(self.next_hidden);
        self.next_hidden += 1;
        v
    }

    fn name(&self, d: DefId) -> &str {
        self.hir.name(d)
    }

    // ----- signatures -------------------------------------------------------

    fn ann_to_ty(&mut self, ann: &TyAnn) -> Ty {
        match ann {
            TyAnn::Scalar(k) => Ty::Scalar(*k),
            TyAnn::Str => Ty::Str,
            TyAnn::Dyn { elem, .. } => Ty::Dyn(*elem),
            TyAnn::Jagged { elem, .. } => Ty::Jagged(*elem),
            TyAnn::Strs { dim, .. } => match self.dim_ann(dim) {
                Some(d) => Ty::Strs(d),
                None => Ty::Error,
            },
            TyAnn::Tuple(items) => Ty::Tuple(items.iter().map(|t| self.ann_to_ty(t)).collect()),
            TyAnn::Tensor { elem, dims, .. } => {
                let dims = dims.iter().map(|d| self.dim_ann(d)).collect::<Option<Vec<_>>>();
                match dims {
                    Some(dims) => Ty::Tensor(*elem, dims),
                    None => Ty::Error,
                }
            }
        }
    }

    fn dim_ann(&mut self, d: &DimAnn) -> Option<Dim> {
        Some(match d {
            DimAnn::Lit(v, span) => {
                if *v < 0 {
                    self.err(Diagnostic::error(*span, "a dimension cannot be negative"));
                    return None;
                }
                Dim::constant(*v)
            }
            DimAnn::Sym(def, _) => Dim::var(dim_var(*def)),
            DimAnn::Unknown(_) => self.run_time_dim(),
            DimAnn::Bin(op, l, r, span) => {
                let l = self.dim_ann(l)?;
                let r = self.dim_ann(r)?;
                match op {
                    BinOp::Add => l.add(&r),
                    BinOp::Sub => l.sub(&r),
                    BinOp::Mul => l.mul(&r),
                    BinOp::Div if r.as_constant().is_none_or(|c| c <= 0) => {
                        self.err(Diagnostic::error(
                            *span,
                            "a dimension can only be divided by a positive integer literal",
                        ));
                        return None;
                    }
                    BinOp::Div => match l.floor_div(&r) {
                        Some(d) => d,
                        None => {
                            self.err(Diagnostic::error(*span, "division by zero in a dimension"));
                            return None;
                        }
                    },
                    _ => {
                        self.err(Diagnostic::error(*span, format!("`{}` cannot be used in a dimension", op.symbol())));
                        return None;
                    }
                }
            }
        })
    }

    fn declare_sig(&mut self, f: FnId) {
        let func = &self.hir.fns[f];
        let params: Vec<Ty> = func
            .params
            .iter()
            .map(|p| match &p.ty {
                Some(a) => self.ann_to_ty(a),
                None => Ty::Error,
            })
            .collect();
        // Dimension symbols are bound by the first parameter axis that is
        // exactly that symbol; every other use is checked.
        let mut entry = Vec::new();
        let mut bound: HashMap<DimVar, ()> = HashMap::new();
        // Scalar `i64` parameters are dimension variables too, bound by
        // their value (`fn f(n: i64, x: [f32; n])` checks `x` against `n`).
        for (pi, p) in func.params.iter().enumerate() {
            if params[pi] == Ty::I64 {
                bound.insert(dim_var(p.def), ());
            }
        }
        let mut deferred = Vec::new();
        for (pi, p) in params.iter().enumerate() {
            let mut shaped = Vec::new();
            shaped_elements(p, &mut Vec::new(), &mut shaped);
            for (path, dims) in shaped {
                for (axis, d) in dims.iter().enumerate() {
                    match d.as_var() {
                        Some(v) if !bound.contains_key(&v) => {
                            bound.insert(v, ());
                            entry.push(EntryPlan::BindDim { dim: v, param: pi, path: path.clone(), axis });
                        }
                        _ => deferred.push((pi, path.clone(), axis, d.clone())),
                    }
                }
            }
        }
        let param_anns: Vec<Option<TyAnn>> = func.params.iter().map(|p| p.ty.clone()).collect();
        for (pi, path, axis, d) in deferred {
            let unbound: Vec<DimVar> = d.vars().into_iter().filter(|v| !bound.contains_key(v)).collect();
            let span = match &param_anns[pi] {
                Some(TyAnn::Tensor { dims, .. }) if path.is_empty() => {
                    dims.get(axis).map(|a| a.span()).unwrap_or(func.span)
                }
                _ => func.span,
            };
            if let Some(v) = unbound.first() {
                let name = self.t.dim_name(*v);
                self.err(
                    Diagnostic::error(
                        span,
                        format!("dimension `{}` cannot be bound from the arguments", self.t.show_dim(&d)),
                    )
                    .note(format!("`{name}` must appear alone as an axis of some parameter, like `[f32; {name}]`")),
                );
                continue;
            }
            let symbol = self.t.show_dim(&d);
            entry.push(EntryPlan::CheckDim { param: pi, path, axis, symbol, expected: d });
        }
        let ret = match &func.ret {
            Some(a) => {
                let ty = self.ann_to_ty(a);
                let mut unbound = Vec::new();
                // `?` in a result type is any extent, bound by nothing.
                collect_dims(&ty, &mut |d| {
                    unbound.extend(d.vars().into_iter().filter(|v| !bound.contains_key(v) && v.0 < HIDDEN_DIM_BASE))
                });
                if let Some(v) = unbound.first() {
                    let span = match a {
                        TyAnn::Tensor { span, .. } => *span,
                        _ => func.span,
                    };
                    let name = self.t.dim_name(*v);
                    self.err(
                        Diagnostic::error(
                            span,
                            format!("dimension `{name}` of the result is not bound by any parameter"),
                        )
                        .help("use a dimension of a parameter, or an expression of them"),
                    );
                    Ty::Error
                } else {
                    ty
                }
            }
            None if func.is_main => Ty::unit(),
            // Inferred from the body when first needed.
            None => Ty::Error,
        };
        for (p, ty) in func.params.iter().zip(&params) {
            self.t.def_ty.insert(p.def, ty.clone());
        }
        self.t.sigs[f.index()] = Some(FnSig { params, ret, entry, result_checks: Vec::new() });
    }

    fn analyze_fn(&mut self, f: FnId) {
        if self.fn_state[f.index()] != FnState::NotStarted {
            return;
        }
        self.fn_state[f.index()] = FnState::InProgress;
        let diags_before = self.diags.len();
        let func = &self.hir.fns[f];
        let mut bound_dims = std::collections::HashSet::new();
        if let Some(sig) = self.t.sigs[f.index()].as_ref() {
            for plan in &sig.entry {
                if let EntryPlan::BindDim { dim, .. } = plan {
                    bound_dims.insert(*dim);
                }
            }
        }
        for p in &func.params {
            if self.t.def_ty.get(&p.def) == Some(&Ty::I64) {
                bound_dims.insert(dim_var(p.def));
            }
        }
        let saved = Saved {
            bound_dims: std::mem::replace(&mut self.bound_dims, bound_dims),
            env: std::mem::take(&mut self.env),
            units: std::mem::take(&mut self.units),
            narrow: std::mem::take(&mut self.narrow),
            cond_depth: std::mem::replace(&mut self.cond_depth, 0),
            recs: std::mem::take(&mut self.recs),
        };
        let outer_instance = std::mem::replace(&mut self.in_instance, self.hir.instance_origin.contains_key(&f));
        // An untyped parameter takes its type from the argument: a literal
        // argument's type is decided like a literal `let`'s, keyed by the
        // generic function's parameter (instances are remade).
        // Only scalars: a literal argument is one.
        if let Some(&(generic, _)) = self.hir.instance_origin.get(&f) {
            for (p, t) in func.params.iter().zip(&self.hir.fns[generic].params) {
                if t.ty.is_none() && matches!(p.ty, Some(TyAnn::Scalar(_))) {
                    self.literal_origin.insert(p.def, t.def);
                }
            }
        }
        for p in &func.params {
            let ty = self.t.def_ty.get(&p.def).cloned().unwrap_or(Ty::Error);
            self.env.insert(p.def, ty);
        }
        let declared = self.t.sigs[f.index()].as_ref().map(|s| s.ret.clone()).unwrap_or(Ty::Error);
        let has_decl = func.ret.is_some() || func.is_main;
        let expect = if has_decl { declared.elem() } else { None };
        self.infer_block_stmts(&func.body.stmts);
        let body_ty = match func.body.tail {
            Some(tail) => self.infer_unit(tail, expect),
            None => Ty::unit(),
        };
        let ret = if has_decl {
            if !declared.is_error() && !body_ty.is_error() {
                let checks = self.check_result(f, &declared, &body_ty);
                if let Some(sig) = self.t.sigs[f.index()].as_mut() {
                    sig.result_checks = checks;
                }
            }
            declared
        } else {
            body_ty
        };
        if let Some(sig) = self.t.sigs[f.index()].as_mut() {
            sig.ret = ret.clone();
        }
        // A recursive function without a declared result: its recursive
        // calls gave the type found so far; until that type is the body's
        // own, analyze the body again with it (a few rounds at most).
        let again = !has_decl && self.rec_called.remove(&f) && self.rec_guess.get(&f) != Some(&ret);
        self.recursing.remove(&f);
        self.bound_dims = saved.bound_dims;
        self.env = saved.env;
        self.units = saved.units;
        self.narrow = saved.narrow;
        self.cond_depth = saved.cond_depth;
        self.recs = saved.recs;
        self.in_instance = outer_instance;
        if again && !self.rec_failed.contains(&f) {
            let rounds = self.rec_rounds.entry(f).or_insert(0);
            *rounds += 1;
            if ret.is_error() || *rounds > 3 {
                self.rec_failed.insert(f);
                self.rec_guess.remove(&f);
            } else {
                self.rec_guess.insert(f, ret);
            }
            drop(self.diags.split_off(diags_before));
            self.fn_state[f.index()] = FnState::NotStarted;
            self.analyze_fn(f);
            return;
        }
        self.plan_storage(f);
        self.fn_state[f.index()] = FnState::Done;
        if let Some(&(generic, call)) = self.hir.instance_origin.get(&f) {
            self.blame_call_site(f, generic, call, diags_before);
        }
    }

    /// Errors in an instance of a generic function are errors of the call
    /// that asked for it: one diagnostic at the call, with each error in
    /// the body as a label.
    fn blame_call_site(&mut self, inst: FnId, generic: FnId, call: Span, before: usize) {
        let inner = self.diags.split_off(before);
        if inner.is_empty() {
            return;
        }
        let name = self.name(self.hir.fns[generic].def).to_string();
        let args: Vec<String> = self
            .t
            .sigs
            .get(inst.index())
            .and_then(|s| s.as_ref())
            .map(|s| s.params.iter().map(|p| self.t.show_ty(p)).collect())
            .unwrap_or_default();
        let mut d =
            Diagnostic::error(call, format!("`{name}` cannot be called with arguments of type ({})", args.join(", ")));
        let generic_note = format!("`{name}` is generic; its body is checked for each combination of argument types");
        for e in inner {
            d = d.label(e.span, format!("in the body of `{name}`: {}", e.message));
            // An error that is itself a call's (a generic function calling
            // another) keeps its labels, which say what went wrong inside.
            d.labels.extend(e.labels);
            for n in e.notes.into_iter().chain([generic_note.clone()]) {
                if !d.notes.contains(&n) {
                    d.notes.push(n);
                }
            }
            for h in e.helps {
                if !d.helps.contains(&h) {
                    d.helps.push(h);
                }
            }
        }
        self.err(d);
    }

    /// Compares the declared result type with the body's; returns the axes
    /// that need a run-time check.
    fn check_result(&mut self, f: FnId, declared: &Ty, found: &Ty) -> Vec<ResultCheck> {
        let func = &self.hir.fns[f];
        let span = func.body.tail.map(|t| self.hir.span(t)).unwrap_or(func.span);
        let mut found = found;
        let retyped;
        if let Some(tail) = func.body.tail {
            if let Some(t) = self.retype_tuple_literals(tail, declared) {
                retyped = t;
                found = &retyped;
            }
            self.retype_to(tail, found, declared, span);
        }
        let ann_span = match &func.ret {
            Some(TyAnn::Tensor { span, .. }) => Some(*span),
            _ => None,
        };
        let mismatch = |cx: &mut Cx, extra: Option<String>| {
            let mut d = Diagnostic::error(
                span,
                format!(
                    "mismatched result type: the body has type `{}`, the function declares `{}`",
                    cx.t.show_ty(found),
                    cx.t.show_ty(declared)
                ),
            );
            if let Some(s) = ann_span {
                d = d.label(s, "result type declared here");
            }
            if let Some(e) = extra {
                d = d.note(e);
            }
            cx.err(d);
        };
        let mut checks = Vec::new();
        if let Err(note) = self.result_checks(declared, found, &mut Vec::new(), &mut checks) {
            mismatch(self, note);
            return Vec::new();
        }
        checks
    }

    /// Literal entries of a tuple result (`(1.0, (d, 2))`) take the
    /// declared types, as a literal result does. Returns the tuple's new
    /// type when an entry changed.
    fn retype_tuple_literals(&mut self, e: ExprId, wanted: &Ty) -> Option<Ty> {
        match (self.hir.exprs[e].kind.clone(), wanted) {
            (ExprKind::Block(b), _) => {
                let t = self.retype_tuple_literals(b.tail?, wanted)?;
                Some(self.set(e, t))
            }
            (ExprKind::Tuple(items), Ty::Tuple(ws)) if items.len() == ws.len() => {
                let mut changed = false;
                let mut tys = Vec::new();
                for (x, w) in items.iter().zip(ws) {
                    match self.retype_tuple_literals(*x, w) {
                        Some(t) => {
                            changed = true;
                            tys.push(t);
                        }
                        None => tys.push(self.t.ty(*x).clone()),
                    }
                }
                changed.then(|| self.set(e, Ty::Tuple(tys)))
            }
            (ExprKind::Tuple(_), _) => None,
            (_, Ty::Scalar(k) | Ty::Tensor(k, _)) if self.literal_value(e) => {
                let found = self.t.ty(e).elem()?;
                let same_class = found.is_int() == k.is_int() && found.is_float() == k.is_float();
                (found != *k && same_class).then(|| self.infer(e, Some(*k)))
            }
            _ => None,
        }
    }

    /// Collects into `checks` the axes of `found` (at tuple path `path` of
    /// the result) that must be checked against `declared` at run time.
    /// `Err` when the two cannot agree, with a note on the axis that differs.
    fn result_checks(
        &self,
        declared: &Ty,
        found: &Ty,
        path: &mut Vec<u32>,
        checks: &mut Vec<ResultCheck>,
    ) -> Result<(), Option<String>> {
        let check = |axis: usize, d: &Dim| ResultCheck {
            path: path.clone(),
            axis,
            declared: d.clone(),
            symbol: self.t.show_dim(d),
        };
        let any_extent = |d: &Dim| d.as_var().is_some_and(|v| v.0 >= HIDDEN_DIM_BASE);
        match (declared, found) {
            (Ty::Tensor(k1, d1), Ty::Tensor(k2, d2)) if k1 == k2 && d1.len() == d2.len() => {
                for (axis, (a, b)) in d1.iter().zip(d2).enumerate() {
                    if any_extent(a) {
                        // Declared `?`: any extent.
                        continue;
                    }
                    match a.prove_eq(b) {
                        Truth::True => {}
                        Truth::False => {
                            let at = if path.is_empty() {
                                String::new()
                            } else {
                                format!(
                                    " of result element {}",
                                    path.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(".")
                                )
                            };
                            return Err(Some(format!(
                                "axis {axis}{at} is declared as `{}` but inferred as `{}`",
                                self.t.show_dim(a),
                                self.t.show_dim(b)
                            )));
                        }
                        Truth::Unknown => checks.push(check(axis, a)),
                    }
                }
            }
            _ if declared == found => {}
            (Ty::Dyn(k1), Ty::Tensor(k2, _)) if k1 == k2 && path.is_empty() => {}
            // A dynamic-rank value converts to the declared type at run
            // time: its rank, then each declared extent, is checked.
            (Ty::Tensor(k1, d1), Ty::Dyn(k2)) if k1 == k2 && path.is_empty() => {
                for (axis, a) in d1.iter().enumerate() {
                    if !any_extent(a) {
                        checks.push(check(axis, a));
                    }
                }
            }
            (Ty::Tuple(ds), Ty::Tuple(fs)) if ds.len() == fs.len() => {
                for (i, (d, f)) in ds.iter().zip(fs).enumerate() {
                    path.push(i as u32);
                    let r = self.result_checks(d, f, path, checks);
                    path.pop();
                    r?;
                }
            }
            (Ty::Strs(a), Ty::Strs(b)) if any_extent(a) || a.prove_eq(b) == Truth::True => {}
            _ => return Err(None),
        }
        Ok(())
    }

    // ----- statements -------------------------------------------------------

    fn infer_block_stmts(&mut self, stmts: &[Stmt]) {
        for s in stmts {
            match s {
                Stmt::Let { def, ty, value, .. } => {
                    let ann = ty.as_ref().map(|a| self.ann_to_ty(a));
                    let decided = self.hir.literal_types.get(def).map(|&(k, _)| k);
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
    fn infer_unit(&mut self, e: ExprId, expect: Option<ScalarKind>) -> Ty {
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
        let elem = match &body {
            Ty::Scalar(k) => *k,
            Ty::Error => return Ty::Error,
            other => {
                let d = Diagnostic::error(
                    self.hir.span(def.body),
                    format!("the value of an indexed definition must be a scalar, found `{}`", self.t.show_ty(other)),
                )
                .note("tensor-valued elements are not supported yet");
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
        Ty::Tensor(elem, dims)
    }

    /// Types `where` entries in order, pushing narrowings for index guards.
    /// Returns whether any guard is present.
    fn infer_wheres(&mut self, wheres: &[Where]) -> bool {
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

    fn pop_narrowings(&mut self, wheres: &[Where]) {
        for w in wheres {
            if let Where::Guard(g) = w {
                let n = self.narrowings_of(*g).len();
                let keep = self.narrow.len().saturating_sub(n);
                self.narrow.truncate(keep);
            }
        }
    }

    fn expect_bool(&mut self, e: ExprId, t: &Ty, what: &str) {
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
    fn explicit_range(&mut self, r: &crate::hir::Range, per_point: bool) -> Option<IndexRange> {
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

    // ----- expressions ------------------------------------------------------

    fn set(&mut self, e: ExprId, t: Ty) -> Ty {
        if t.is_error() {
            // An erroneous operand (perhaps from an error in another
            // function) leaves indices unconstrained; do not also report
            // their ranges.
            if let Some(u) = self.units.last_mut() {
                u.saw_error = true;
            }
        }
        self.t.expr_ty[e.index()] = t.clone();
        t
    }

    /// Whether `e` is an unsuffixed literal (possibly negated or combined
    /// with other such literals) whose type comes from context.
    fn flexible(&self, e: ExprId) -> bool {
        match &self.hir.exprs[e].kind {
            ExprKind::Lit(Lit::Int(_, None)) | ExprKind::Lit(Lit::Float(_, None)) => true,
            ExprKind::Unary(UnOp::Neg, x) => self.flexible(*x),
            ExprKind::Binary(op, a, b) if !op.is_comparison() && !op.is_logical() => {
                self.flexible(*a) && self.flexible(*b)
            }
            // A recursive call whose result type is a guess takes the type
            // its use needs (see `infer_call`).
            ExprKind::Call { callee: Callee::Fn(g), .. } => {
                let g = self.hir.instances.get(&e).copied().unwrap_or(*g);
                self.rec_guess.contains_key(&g) && self.fn_state[g.index()] == FnState::InProgress
            }
            // An entry of an array-literal element (`let p[0] = [1.0, 0.0];`).
            ExprKind::If { then, els: Some(els), .. } => self.flexible_tail(*then) && self.flexible_tail(*els),
            _ => false,
        }
    }

    /// Whether `e` is made only of unsuffixed literals: a literal tree or
    /// an array literal of them.
    fn literal_value(&self, e: ExprId) -> bool {
        match &self.hir.exprs[e].kind {
            ExprKind::Array(items) => !items.is_empty() && items.iter().all(|x| self.literal_value(*x)),
            _ => self.flexible(e),
        }
    }

    /// The literal `let` (one of `flex_lets`) whose type decides the
    /// element type of `e`, if any.
    fn origin(&self, e: ExprId) -> Option<DefId> {
        match &self.hir.exprs[e].kind {
            ExprKind::Def(d) if self.flex_lets.contains(d) => Some(*d),
            ExprKind::Def(d) => self.literal_origin.get(d).copied(),
            ExprKind::Index { base, .. } => self.origin(*base),
            ExprKind::Unary(UnOp::Neg, x) => self.origin(*x),
            // Only when the other operand is literal-made too: a typed
            // operand fixes the type itself.
            ExprKind::Binary(op, a, b) if !op.is_comparison() && !op.is_logical() => self.joint_origin(*a, Some(*b)),
            ExprKind::Reduce { op, body, .. }
                if !matches!(op, RedOp::Any | RedOp::All | RedOp::ArgMax | RedOp::ArgMin) =>
            {
                self.origin(*body)
            }
            ExprKind::Block(b) => b.tail.and_then(|t| self.origin(t)),
            ExprKind::If { then, els, .. } => self.joint_origin(*then, *els),
            _ => None,
        }
    }

    /// The origin of a value made of `a` and `b` of one type: one of theirs,
    /// when each is literal-made (an origin, or a literal itself).
    fn joint_origin(&self, a: ExprId, b: Option<ExprId>) -> Option<DefId> {
        let (oa, ob) = (self.origin(a), b.and_then(|b| self.origin(b)));
        let literal = |x: ExprId, o: Option<DefId>| o.is_some() || self.flexible_tail(x);
        if !literal(a, oa) || b.is_some_and(|b| !literal(b, ob)) {
            return None;
        }
        oa.or(ob)
    }

    /// Two operands of different number types `ka` and `kb` of one kind:
    /// when exactly one of them takes its type from a literal `let`, that
    /// `let` gets the other's type in the next round (as Rust infers it).
    fn retype_to_match(&mut self, a: ExprId, ka: ScalarKind, b: ExprId, kb: ScalarKind, at: Span) {
        if ka.is_int() != kb.is_int() || ka.is_float() != kb.is_float() {
            return;
        }
        let decided = |d: DefId| self.hir.literal_types.contains_key(&d);
        match (self.origin(a), self.origin(b)) {
            (Some(d), None) => self.t.retypes.push((d, kb, at)),
            (None, Some(d)) => self.t.retypes.push((d, ka, at)),
            // A binding whose type a use already decided fixes the other.
            (Some(da), Some(db)) if !decided(da) && decided(db) => self.t.retypes.push((da, kb, at)),
            (Some(da), Some(db)) if decided(da) && !decided(db) => self.t.retypes.push((db, ka, at)),
            // Both still open (their defaults differ, `f32` for a `let` and
            // `f64` for a recurrence): the narrower takes the wider type.
            (Some(da), Some(db)) if !decided(da) && !decided(db) && da != db => {
                if width(ka) < width(kb) {
                    self.t.retypes.push((da, kb, at));
                } else {
                    self.t.retypes.push((db, ka, at));
                }
            }
            _ => {}
        }
    }

    /// A value of type `found` where `wanted` is needed (a declared result,
    /// an annotated `let`): the literal bindings it comes from take the
    /// wanted number types (component-wise for a tuple written in place).
    fn retype_to(&mut self, e: ExprId, found: &Ty, wanted: &Ty, at: Span) {
        match (&self.hir.exprs[e].kind, found, wanted) {
            (ExprKind::Tuple(items), Ty::Tuple(fs), Ty::Tuple(ws))
                if items.len() == fs.len() && fs.len() == ws.len() =>
            {
                for ((x, f), w) in items.clone().iter().zip(fs).zip(ws) {
                    self.retype_to(*x, f, w, at);
                }
            }
            _ => {
                let (Some(kf), Some(kw)) = (found.elem(), wanted.elem()) else { return };
                if kf != kw && kf.is_int() == kw.is_int() && kf.is_float() == kw.is_float() {
                    if let Some(d) = self.origin(e) {
                        self.t.retypes.push((d, kw, at));
                    }
                }
            }
        }
    }

    /// For the fused tensor of recurrences that read each other (see
    /// `resolve::mutual`): why its members must share an element type.
    pub(crate) fn fused_group_note(&self, def: DefId) -> Option<String> {
        let members = self.hir.fused_groups.get(self.name(def))?;
        let names: Vec<String> = members.iter().map(|m| format!("`{m}`")).collect();
        Some(format!(
            "{} read each other, so they are computed together as one recurrence `{}`, and must have one element \
             type",
            names.join(" and "),
            self.name(def)
        ))
    }

    /// Matches one part of argument `arg` (the whole argument, or one
    /// element of a tuple argument) against the same part of its
    /// parameter type, binding the callee's dimension variables in
    /// `subst`. `top` is the parameter when the part is the whole of a
    /// scalar-or-tensor argument (an `i64` one is a dimension). Reports
    /// mismatches: `Some(false)` after a shape mismatch, `None` after a
    /// type mismatch, which ends the argument's checks.
    fn bind_arg_part(
        &mut self,
        p: &Ty,
        at: &Ty,
        top: Option<DefId>,
        arg: &Arg<'_>,
        sig: &FnSig,
        subst: &mut HashMap<DimVar, Dim>,
    ) -> Option<bool> {
        let (a, pname, fname) = (arg.expr, arg.pname, arg.fname);
        match (p, at) {
            (Ty::Scalar(pk), Ty::Scalar(ak)) if pk == ak => {
                if let Some(param) = top.filter(|_| *pk == ScalarKind::I64) {
                    // An argument that is not a dimension expression is an
                    // extent known only at run time.
                    let d = match self.to_dim(a) {
                        Some(d) => d,
                        None => self.run_time_dim(),
                    };
                    subst.insert(dim_var(param), d);
                }
            }
            // Any tensor of the element type converts to `[T; *]`.
            (Ty::Dyn(pk), Ty::Tensor(ak, _) | Ty::Dyn(ak)) if pk == ak => {}
            (Ty::Tensor(pk, pd), Ty::Tensor(ak, ad)) if pk == ak && pd.len() == ad.len() => {
                let mut ok = true;
                for (axis, (pdim, adim)) in pd.iter().zip(ad).enumerate() {
                    let expected = pdim.substitute(&|v| subst.get(&v).cloned());
                    if let Some(v) = pdim.as_var() {
                        if let std::collections::hash_map::Entry::Vacant(slot) = subst.entry(v) {
                            slot.insert(adim.clone());
                            continue;
                        }
                    }
                    if expected.vars().iter().all(|v| !is_callee_var(sig, *v) || subst.contains_key(v))
                        && expected.prove_eq(adim) == Truth::False
                    {
                        let d = Diagnostic::error(
                            self.hir.span(a),
                            format!(
                                "shape mismatch in argument `{pname}` of `{fname}`: axis {axis} has length `{}`, \
                                 expected `{}`",
                                self.t.show_dim(adim),
                                self.t.show_dim(&expected)
                            ),
                        );
                        self.err(d);
                        ok = false;
                    }
                }
                return Some(ok);
            }
            (Ty::Str, Ty::Str) => {}
            (Ty::Jagged(pk), Ty::Jagged(ak)) if pk == ak => {}
            (Ty::Strs(pd), Ty::Strs(ad)) => {
                if let Some(v) = pd.as_var() {
                    subst.entry(v).or_insert_with(|| ad.clone());
                }
            }
            _ => {
                let (p, at) = (arg.param, arg.arg);
                if let (Some(pk), Some(ak), Some(d)) = (p.elem(), at.elem(), self.origin(a)) {
                    if pk.is_int() == ak.is_int() && pk.is_float() == ak.is_float() && pk != ak {
                        self.t.retypes.push((d, pk, self.hir.span(a)));
                    }
                }
                let d = Diagnostic::error(
                    self.hir.span(a),
                    format!(
                        "mismatched types: parameter `{pname}` of `{fname}` is `{}`, found `{}`",
                        self.t.show_ty(p),
                        self.t.show_ty(at)
                    ),
                );
                self.err(d);
                return None;
            }
        }
        Some(true)
    }

    /// Points a type mismatch at the uses that decided the type of the
    /// literal `let`s its operands come from.
    fn explain_literal_types(&self, mut d: Diagnostic, operands: &[ExprId]) -> Diagnostic {
        for &x in operands {
            let Some(def) = self.origin(x) else { continue };
            if let Some(&(k, at)) = self.hir.literal_types.get(&def) {
                d = d.label(at, format!("`{}` is `{}` because of this use", self.name(def), k.name()));
            }
            if let Some(note) = self.fused_group_note(def) {
                d = d.note(note);
            }
        }
        d
    }

    fn infer(&mut self, e: ExprId, expect: Option<ScalarKind>) -> Ty {
        let span = self.hir.span(e);
        let t = match &self.hir.exprs[e].kind {
            ExprKind::Error => Ty::Error,
            ExprKind::Rest(_) => {
                self.err(Diagnostic::bug(span, "a rest index reached analysis"));
                Ty::Error
            }
            ExprKind::Lit(lit) => self.infer_lit(e, lit, expect),
            ExprKind::Def(d) => match self.env.get(d) {
                Some(t) => t.clone(),
                None => match self.hir.defs[*d].kind {
                    DefKind::Dim => Ty::I64,
                    _ => {
                        let name = self.name(*d).to_string();
                        self.err(Diagnostic::bug(span, format!("`{name}` has no type")));
                        Ty::Error
                    }
                },
            },
            ExprKind::Unary(op, x) => {
                let t = self.infer(*x, expect);
                match (op, &t) {
                    (_, Ty::Error) => Ty::Error,
                    (UnOp::Neg, Ty::Scalar(k) | Ty::Tensor(k, _) | Ty::Dyn(k))
                        if *k != ScalarKind::Bool && k.is_signed() =>
                    {
                        t.clone()
                    }
                    (
                        UnOp::Not,
                        Ty::Scalar(ScalarKind::Bool) | Ty::Tensor(ScalarKind::Bool, _) | Ty::Dyn(ScalarKind::Bool),
                    ) => t.clone(),
                    _ => {
                        let sym = if *op == UnOp::Neg { "-" } else { "!" };
                        self.err(Diagnostic::error(
                            span,
                            format!("cannot apply unary `{sym}` to `{}`", self.t.show_ty(&t)),
                        ));
                        Ty::Error
                    }
                }
            }
            ExprKind::Binary(op, a, b) => self.infer_binary(e, *op, *a, *b, expect),
            ExprKind::Cast(x, k) => {
                // `3.14159265358979 as f64`: a literal of the same kind as
                // the target takes the target type, as in Rust.
                let same_class = |lit_float: bool| lit_float == k.is_float() && *k != ScalarKind::Bool;
                let hint = if self.flexible(*x) && same_class(is_float_lit(self.hir, *x)) { Some(*k) } else { None };
                let t = self.infer(*x, hint);
                match t {
                    Ty::Error => Ty::Error,
                    Ty::Scalar(_) => Ty::Scalar(*k),
                    Ty::Tensor(_, dims) => Ty::Tensor(*k, dims),
                    Ty::Dyn(_) => Ty::Dyn(*k),
                    other => {
                        self.err(Diagnostic::error(
                            span,
                            format!("cannot cast `{}` to `{}`", self.t.show_ty(&other), k.name()),
                        ));
                        Ty::Error
                    }
                }
            }
            ExprKind::Call { callee, callee_span, args } => {
                let (callee, callee_span, args) = (callee.clone(), *callee_span, args.clone());
                self.infer_call(e, &callee, callee_span, &args, expect)
            }
            ExprKind::Index { base, args } => {
                let (base, args) = (*base, args.clone());
                self.infer_index(e, base, &args)
            }
            ExprKind::Field(x, i) => {
                let t = self.infer(*x, None);
                match t {
                    Ty::Error => Ty::Error,
                    Ty::Tuple(items) if (*i as usize) < items.len() => items[*i as usize].clone(),
                    other => {
                        self.err(Diagnostic::error(
                            span,
                            format!("no field `{i}` on a value of type `{}`", self.t.show_ty(&other)),
                        ));
                        Ty::Error
                    }
                }
            }
            ExprKind::Reduce { op, vars, wheres, body } => {
                let (op, vars, wheres, body) = (*op, vars.clone(), wheres.clone(), *body);
                self.infer_reduce(e, op, &vars, &wheres, body, expect)
            }
            ExprKind::If { cond, then, els } => {
                let (cond, then, els) = (*cond, *then, *els);
                let ct = self.infer(cond, Some(ScalarKind::Bool));
                self.expect_bool(cond, &ct, "the condition of `if`");
                let ns = self.narrowings_of(cond);
                let n = ns.len();
                self.narrow.extend(ns);
                self.cond_depth += 1;
                let tt = self.infer(then, expect);
                let keep = self.narrow.len() - n;
                self.narrow.truncate(keep);
                let et = match els {
                    Some(x) => {
                        let ex = if self.flexible_tail(then) { expect } else { tt.elem().or(expect) };
                        self.infer(x, ex)
                    }
                    None => {
                        self.err(
                            Diagnostic::error(span, "an `if` without `else` has no value").help("add an `else` branch"),
                        );
                        Ty::Error
                    }
                };
                self.cond_depth -= 1;
                // A flexible literal in the first branch takes the second's type.
                let tt = if self.flexible_tail(then) && !et.is_error() {
                    self.retype_literal_tail(then, &et).unwrap_or(tt)
                } else {
                    tt
                };
                match (&tt, &et) {
                    // A recursive call whose type is not known yet: the
                    // other branch (the base case) gives the type.
                    (Ty::Error, Ty::Error) => Ty::Error,
                    (Ty::Error, t) | (t, Ty::Error) if !self.recursing.is_empty() => t.clone(),
                    (Ty::Error, _) | (_, Ty::Error) => Ty::Error,
                    _ => match self.join_branches(&tt, &et) {
                        Ok(t) => t,
                        Err(Join::Differ) => {
                            let d = Diagnostic::error(
                                span,
                                format!(
                                    "`if` and `else` give tensors of shapes `{}` and `{}`, which differ",
                                    self.t.show_ty(&tt),
                                    self.t.show_ty(&et)
                                ),
                            )
                            .note("the value of an `if` must have one shape whichever branch runs");
                            self.err(d);
                            Ty::Error
                        }
                        Err(Join::Mismatch) => {
                            let d = Diagnostic::error(
                                span,
                                format!(
                                    "`if` and `else` have different types: `{}` and `{}`",
                                    self.t.show_ty(&tt),
                                    self.t.show_ty(&et)
                                ),
                            );
                            self.err(d);
                            Ty::Error
                        }
                    },
                }
            }
            ExprKind::Block(b) => {
                let b = b.clone();
                self.infer_block_stmts(&b.stmts);
                match b.tail {
                    Some(t) => self.infer(t, expect),
                    None => Ty::unit(),
                }
            }
            ExprKind::Array(items) => {
                let items = items.clone();
                self.infer_array(e, &items, expect)
            }
            ExprKind::Jagged(rows) => {
                let rows = rows.clone();
                self.infer_jagged(e, &rows, expect)
            }
            ExprKind::Interp(parts) => {
                let parts = parts.clone();
                for p in parts {
                    if let crate::hir::InterpPart::Value(x, _) = p {
                        self.infer(x, None);
                    }
                }
                Ty::Str
            }
            ExprKind::Builtin(b, args) => {
                let (b, args) = (*b, args.clone());
                self.infer_builtin(e, b, &args)
            }
            ExprKind::Match { scrutinee, arms } => {
                let (scrutinee, arms) = (*scrutinee, arms.clone());
                self.infer_match(e, scrutinee, &arms, expect)
            }
            ExprKind::Comprehension { body, clauses, rows } => {
                let (body, clauses, rows) = (*body, clauses.clone(), *rows);
                self.infer_comprehension(body, &clauses, rows, expect)
            }
            ExprKind::TensorCast(x, ann) => {
                let (x, ann) = (*x, ann.clone());
                self.infer_tensor_cast(e, x, &ann)
            }
            ExprKind::Tuple(items) => {
                let items = items.clone();
                let tys: Vec<Ty> = items.iter().map(|x| self.infer(*x, None)).collect();
                if tys.iter().any(|t| t.is_error()) {
                    Ty::Error
                } else {
                    Ty::Tuple(tys)
                }
            }
        };
        self.set(e, t)
    }

    /// Whether the value of block-like `e` is a flexible literal.
    fn flexible_tail(&self, e: ExprId) -> bool {
        match &self.hir.exprs[e].kind {
            ExprKind::Block(b) => b.stmts.is_empty() && b.tail.is_some_and(|t| self.flexible_tail(t)),
            _ => self.flexible(e),
        }
    }

    /// Re-infers a flexible literal tail with the type of the other branch.
    fn retype_literal_tail(&mut self, e: ExprId, other: &Ty) -> Option<Ty> {
        let k = other.scalar()?;
        match &self.hir.exprs[e].kind {
            ExprKind::Block(b) => {
                let t = b.tail?;
                let ty = self.retype_literal_tail(t, other)?;
                Some(self.set(e, ty))
            }
            _ => Some(self.infer(e, Some(k))),
        }
    }

    fn infer_lit(&mut self, e: ExprId, lit: &Lit, expect: Option<ScalarKind>) -> Ty {
        let span = self.hir.span(e);
        match lit {
            Lit::Bool(_) => Ty::BOOL,
            Lit::Str(_) => Ty::Str,
            Lit::Int(v, suffix) => {
                let k = match (suffix, expect) {
                    (Some(k), _) => *k,
                    (None, Some(k)) if k.is_int() => k,
                    (None, Some(k)) if k.is_float() => {
                        let d = Diagnostic::error(
                            span,
                            format!("mismatched types: expected `{}`, found an integer literal", k.name()),
                        )
                        .help(format!("use a float literal: `{v}.0`"));
                        self.err(d);
                        return Ty::Error;
                    }
                    _ => ScalarKind::I32,
                };
                if !literal_fits(*v, k) {
                    self.err(Diagnostic::error(span, format!("literal `{v}` does not fit in `{}`", k.name())));
                    return Ty::Error;
                }
                Ty::Scalar(k)
            }
            Lit::Float(_, suffix) => {
                let k = match (suffix, expect) {
                    (Some(k), _) => *k,
                    (None, Some(k)) if k.is_float() => k,
                    (None, Some(k)) if k.is_int() || k == ScalarKind::Bool => {
                        let d = Diagnostic::error(
                            span,
                            format!("mismatched types: expected `{}`, found a float literal", k.name()),
                        );
                        self.err(d);
                        return Ty::Error;
                    }
                    _ => ScalarKind::F32,
                };
                Ty::Scalar(k)
            }
        }
    }

    fn infer_binary(&mut self, e: ExprId, op: BinOp, a: ExprId, b: ExprId, expect: Option<ScalarKind>) -> Ty {
        let span = self.hir.span(e);
        if op.is_logical() {
            let ta = self.infer(a, Some(ScalarKind::Bool));
            let tb = self.infer(b, Some(ScalarKind::Bool));
            if ta.is_error() || tb.is_error() {
                return Ty::Error;
            }
            let tensor = |t: &Ty| matches!(t, Ty::Tensor(..) | Ty::Dyn(_));
            if (tensor(&ta) || tensor(&tb)) && [&ta, &tb].iter().all(|t| ew_elem(t) == Some(ScalarKind::Bool)) {
                // Element by element, as arithmetic is (both operands are
                // evaluated).
                return match self.broadcast(span, &ta, &tb) {
                    Some(shape) => shape.ty(ScalarKind::Bool),
                    None => Ty::Error,
                };
            }
            if ta != Ty::BOOL || tb != Ty::BOOL {
                let d = Diagnostic::error(
                    span,
                    format!(
                        "`{}` needs `bool` operands, found `{}` and `{}`",
                        op.symbol(),
                        self.t.show_ty(&ta),
                        self.t.show_ty(&tb)
                    ),
                );
                self.err(d);
                return Ty::Error;
            }
            return Ty::BOOL;
        }
        // The operand whose type is fixed goes first, so that a literal on
        // the other side takes its type.
        let operand_expect = if op.is_comparison() { None } else { expect };
        let (ta, tb) = if op == BinOp::Pow {
            let ta = self.infer(a, expect);
            // An integer literal exponent (or a vector of them) stays an
            // integer: `x ** 2` is powi.
            let int_lit = matches!(
                &self.hir.exprs[b].kind,
                ExprKind::Lit(Lit::Int(..)) | ExprKind::Unary(..) | ExprKind::Array(..)
            ) && self.literal_value(b)
                && !is_float_lit(self.hir, b);
            let tb_expect = if int_lit { Some(ScalarKind::I32) } else { ew_elem(&ta) };
            let tb = self.infer(b, tb_expect);
            (ta, tb)
        } else if self.flexible(a) && !self.flexible(b) {
            let tb = self.infer(b, operand_expect);
            let ta = self.infer(a, ew_elem(&tb));
            (ta, tb)
        } else {
            let ta = self.infer(a, operand_expect);
            let tb = self.infer(b, ew_elem(&ta));
            (ta, tb)
        };
        if ta.is_error() || tb.is_error() {
            return Ty::Error;
        }
        if op == BinOp::Pow {
            return self.infer_pow(e, &ta, &tb);
        }
        if matches!(op, BinOp::Eq | BinOp::Ne) && matches!((&ta, &tb), (Ty::Strs(_), Ty::Strs(_))) {
            // Two vectors of strings are equal when they have the same
            // strings in the same order.
            return Ty::BOOL;
        }
        if ta == Ty::Str || tb == Ty::Str {
            if ta == tb && matches!(op, BinOp::Eq | BinOp::Ne) {
                return Ty::BOOL;
            }
            // `a + b` of two strings is their concatenation.
            if ta == tb && op == BinOp::Add {
                return Ty::Str;
            }
            let d = Diagnostic::error(
                span,
                format!("cannot apply `{}` to `{}` and `{}`", op.symbol(), self.t.show_ty(&ta), self.t.show_ty(&tb)),
            )
            .note("strings can be compared with `==` and `!=`, and joined with `+`");
            self.err(d);
            return Ty::Error;
        }
        let (ka, kb) = match (ew_elem(&ta), ew_elem(&tb)) {
            (Some(x), Some(y)) => (x, y),
            _ => {
                let d = Diagnostic::error(
                    span,
                    format!(
                        "cannot apply `{}` to `{}` and `{}`",
                        op.symbol(),
                        self.t.show_ty(&ta),
                        self.t.show_ty(&tb)
                    ),
                );
                self.err(d);
                return Ty::Error;
            }
        };
        if ka != kb {
            self.retype_to_match(a, ka, b, kb, span);
            let d =
                Diagnostic::error(span, format!("mismatched types: `{}` {} `{}`", ka.name(), op.symbol(), kb.name()))
                    .label(self.hir.span(a), format!("this is `{}`", ka.name()))
                    .label(self.hir.span(b), format!("this is `{}`", kb.name()));
            let d = self
                .explain_literal_types(d, &[a, b])
                .note("einlang never converts numbers implicitly")
                .help(format!("convert one side with `as`, for example `(...) as {}`", ka.name()));
            self.err(d);
            return Ty::Error;
        }
        let arithmetic = matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Rem);
        if arithmetic && ka == ScalarKind::Bool {
            self.err(Diagnostic::error(span, format!("cannot apply `{}` to `bool`", op.symbol())));
            return Ty::Error;
        }
        let shape = match self.broadcast(span, &ta, &tb) {
            Some(s) => s,
            None => return Ty::Error,
        };
        let k = if op.is_comparison() { ScalarKind::Bool } else { ka };
        shape.ty(k)
    }

    /// Broadcasting: scalar with scalar, tensor with scalar, or two tensors
    /// of the same shape. A dynamic-rank tensor combines with a scalar or a
    /// tensor whose shape is then checked at run time. Returns the shape of
    /// the result.
    fn broadcast(&mut self, span: Span, a: &Ty, b: &Ty) -> Option<Bcast> {
        match (a, b) {
            (Ty::Scalar(_), Ty::Scalar(_)) => Some(Bcast::Scalar),
            (Ty::Tensor(_, d), Ty::Scalar(_)) | (Ty::Scalar(_), Ty::Tensor(_, d)) => Some(Bcast::Tensor(d.clone())),
            (Ty::Dyn(_), Ty::Scalar(_) | Ty::Tensor(..) | Ty::Dyn(_))
            | (Ty::Scalar(_) | Ty::Tensor(..), Ty::Dyn(_)) => Some(Bcast::Dyn),
            (Ty::Tensor(_, d1), Ty::Tensor(_, d2)) => {
                if d1.len() != d2.len() || d1.iter().zip(d2).any(|(x, y)| x.prove_eq(y) == Truth::False) {
                    let d = Diagnostic::error(
                        span,
                        format!(
                            "cannot combine tensors of shapes `{}` and `{}` without indices",
                            self.t.show_ty(a),
                            self.t.show_ty(b)
                        ),
                    )
                    .note("without indices, only tensors of the same shape, or a tensor and a scalar, combine")
                    .help("write the operation with indices, e.g. `let z[i, j] = x[i, j] + y[j];`");
                    self.err(d);
                    return None;
                }
                Some(Bcast::Tensor(d1.clone()))
            }
            _ => {
                self.err(Diagnostic::error(
                    span,
                    format!("cannot combine `{}` and `{}`", self.t.show_ty(a), self.t.show_ty(b)),
                ));
                None
            }
        }
    }

    fn infer_pow(&mut self, e: ExprId, ta: &Ty, tb: &Ty) -> Ty {
        let span = self.hir.span(e);
        let (Some(ka), Some(kb)) = (ta.scalar(), tb.scalar()) else {
            if let (Some(ka), Some(kb)) = (ew_elem(ta), ew_elem(tb)) {
                // With a tensor operand, elementwise, under the broadcasting
                // rule of the other operators: a tensor and a scalar, or two
                // tensors of one shape.
                if let Some(i) = pow_kind(ka, kb) {
                    let Some(shape) = self.broadcast(span, ta, tb) else { return Ty::Error };
                    self.t.intrinsic.insert(e, i);
                    return shape.ty(ka);
                }
            }
            let d =
                Diagnostic::error(span, format!("cannot raise `{}` to `{}`", self.t.show_ty(ta), self.t.show_ty(tb)));
            self.err(d);
            return Ty::Error;
        };
        match pow_kind(ka, kb) {
            Some(i) => {
                self.t.intrinsic.insert(e, i);
                Ty::Scalar(ka)
            }
            None => {
                let d = Diagnostic::error(span, format!("cannot raise `{}` to a `{}` power", ka.name(), kb.name()))
                    .help("`**` takes float ** float, float ** integer, or integer ** integer of the same type");
                self.err(d);
                Ty::Error
            }
        }
    }

    fn infer_call(
        &mut self,
        e: ExprId,
        callee: &Callee,
        callee_span: Span,
        args: &[ExprId],
        expect: Option<ScalarKind>,
    ) -> Ty {
        let span = self.hir.span(e);
        match callee {
            Callee::Intrinsic(i) => self.infer_intrinsic(e, *i, callee_span, args, expect),
            Callee::Fn(f) => {
                let f = match self.instance_of(e, *f, args, callee_span) {
                    Some(f) => f,
                    None => return Ty::Error,
                };
                let func = &self.hir.fns[f];
                // An instance is named after its generic function.
                let named = self.hir.instance_origin.get(&f).map_or(func.def, |(g, _)| self.hir.fns[*g].def);
                let fname = self.name(named).to_string();
                if func.ret.is_none() && !func.is_main {
                    match self.fn_state[f.index()] {
                        FnState::NotStarted => self.analyze_fn(f),
                        FnState::InProgress => {
                            // A recursive call: its result is the type the
                            // other branches (the base case) give, found by
                            // analyzing the body again (see `analyze_fn`).
                            if let Some(guess) = self.rec_guess.get(&f).cloned() {
                                self.rec_called.insert(f);
                                args.iter().for_each(|a| {
                                    self.infer(*a, None);
                                });
                                // A number of the guessed kind takes the
                                // type its use needs, as a literal would.
                                return match (guess.scalar(), expect) {
                                    (Some(g), Some(k)) if g.is_int() == k.is_int() && g.is_float() == k.is_float() => {
                                        Ty::Scalar(k)
                                    }
                                    _ => guess,
                                };
                            }
                            if !self.rec_failed.contains(&f) {
                                self.rec_called.insert(f);
                                self.recursing.insert(f);
                                args.iter().for_each(|a| {
                                    self.infer(*a, None);
                                });
                                return Ty::Error;
                            }
                            // An instance is named after its generic function.
                            let shown = match self.hir.instance_origin.get(&f) {
                                Some(&(g, _)) => self.name(self.hir.fns[g].def).to_string(),
                                None => fname.clone(),
                            };
                            let d = Diagnostic::error(
                                callee_span,
                                format!("recursive call of `{shown}` needs a declared result type"),
                            )
                            .note("no branch of the body that does not recurse gives the result's type")
                            .help(format!("declare it: `fn {shown}(...) -> T`"));
                            self.err(d);
                            args.iter().for_each(|a| {
                                self.infer(*a, None);
                            });
                            return Ty::Error;
                        }
                        FnState::Done => {}
                    }
                }
                let Some(sig) = self.t.sigs[f.index()].clone() else { return Ty::Error };
                if sig.params.len() != args.len() {
                    let d = Diagnostic::arity(span, sig.params.len(), args.len())
                        .label(self.hir.defs[func.def].span, format!("`{fname}` is defined here"));
                    self.err(d);
                    args.iter().for_each(|a| {
                        self.infer(*a, None);
                    });
                    return Ty::Error;
                }
                // Map the callee's dimension variables to the caller's dims.
                let mut subst: HashMap<DimVar, Dim> = HashMap::new();
                let mut ok = true;
                for (i, (a, p)) in args.iter().zip(&sig.params).enumerate() {
                    let at = self.infer(*a, p.elem());
                    if at.is_error() || p.is_error() {
                        ok = false;
                        continue;
                    }
                    let pname = self.name(func.params[i].def).to_string();
                    // A tuple matches element by element.
                    let mut leaves = Vec::new();
                    let (parts, top) = if tuple_leaves(p, &at, &mut leaves) {
                        (leaves, None)
                    } else {
                        (vec![(p, &at)], Some(func.params[i].def))
                    };
                    let arg = Arg { expr: *a, param: p, arg: &at, pname: &pname, fname: &fname };
                    for (p_leaf, a_leaf) in parts {
                        match self.bind_arg_part(p_leaf, a_leaf, top, &arg, &sig, &mut subst) {
                            Some(true) => {}
                            Some(false) => ok = false,
                            None => {
                                ok = false;
                                break;
                            }
                        }
                    }
                }
                if !ok {
                    return Ty::Error;
                }
                // Extents the callee knows only at run time (`?`) are new
                // unknowns at every call.
                let ret = subst_ty(&sig.ret, &subst);
                let mut fresh: HashMap<DimVar, Dim> = HashMap::new();
                let mut hidden = Vec::new();
                collect_dims(&ret, &mut |d| hidden.extend(d.vars().into_iter().filter(|v| v.0 >= HIDDEN_DIM_BASE)));
                for v in hidden {
                    if let std::collections::hash_map::Entry::Vacant(slot) = fresh.entry(v) {
                        slot.insert(self.run_time_dim());
                    }
                }
                subst_ty(&ret, &fresh)
            }
        }
    }

    /// The function a call really calls: `f` itself, or the instance of a
    /// generic `f` for this call. Without an instance yet, records a request
    /// for one (when the argument types are known) and returns None.
    fn instance_of(&mut self, e: ExprId, f: FnId, args: &[ExprId], callee_span: Span) -> Option<FnId> {
        let func = &self.hir.fns[f];
        if !func.is_generic() {
            return Some(f);
        }
        if let Some(&inst) = self.hir.instances.get(&e) {
            if self.hir.broken_instances.contains(&inst) {
                args.iter().for_each(|a| {
                    self.infer(*a, None);
                });
                return None;
            }
            return Some(inst);
        }
        let name = self.name(func.def).to_string();
        if func.params.len() != args.len() {
            let n = func.params.len();
            let d = Diagnostic::arity(self.hir.span(e), n, args.len())
                .label(self.hir.defs[func.def].span, format!("`{name}` is defined here"));
            self.err(d);
            return None;
        }
        // Unsuffixed literal arguments (and array literals of them) take the
        // type of the other arguments of their kind (`clamp(x, 0.0, 1.0)`
        // with `x: f64` is all f64, `contains([15, 25], i)` with `i: i64`
        // an `[i64; 2]`).
        let mut tys: Vec<Ty> = vec![Ty::Error; args.len()];
        for (i, a) in args.iter().enumerate() {
            if !self.literal_value(*a) {
                tys[i] = self.infer(*a, None);
            }
        }
        for (i, a) in args.iter().enumerate() {
            if self.literal_value(*a) {
                let float = is_float_lit(self.hir, *a);
                let of_kind = |k: &ScalarKind| if float { k.is_float() } else { k.is_int() };
                let decided = self.hir.literal_types.get(&func.params[i].def).map(|&(k, _)| k).filter(of_kind);
                let hint = decided.or_else(|| tys.iter().filter_map(|t| t.elem()).find(of_kind));
                tys[i] = self.infer(*a, hint);
            }
        }
        // An argument whose type comes from a literal `let` takes the
        // number type of the other untyped arguments of its kind, when they
        // agree on one (`x in v` with `v = [1, 2]` and `x: i64`).
        let untyped: Vec<usize> = (0..args.len()).filter(|&i| self.hir.fns[f].params[i].ty.is_none()).collect();
        for &i in &untyped {
            let (Some(k), Some(d)) = (tys[i].elem(), self.origin(args[i])) else { continue };
            if self.hir.defs[d].kind == DefKind::Param {
                // A parameter of a generic function: decided only by the
                // uses in its body.
                continue;
            }
            let others: std::collections::HashSet<ScalarKind> = untyped
                .iter()
                .filter(|&&j| j != i && !self.flexible(args[j]) && self.origin(args[j]).is_none())
                .filter_map(|&j| tys[j].elem())
                .filter(|o| o.is_int() == k.is_int() && o.is_float() == k.is_float())
                .collect();
            if others.len() == 1 && !others.contains(&k) {
                let at = self.hir.span(e);
                self.t.retypes.extend(others.into_iter().map(|o| (d, o, at)));
            }
        }
        if tys.iter().all(|t| !t.is_error()) {
            self.t.mono_requests.push(MonoRequest { call: e, generic: f, args: tys, span: self.hir.span(e) });
        }
        let _ = callee_span;
        None
    }

    /// `[body | clauses]`: a rank-1 tensor. Its length is the product of the
    /// generators' extents, or, with a filter, a fresh dimension known only
    /// at run time.
    /// `load_npy(path) as [T; d1, ...]`: literal extents and dimensions the
    /// function knows are checked when the file is read; other names (and
    /// `?`) take the file's extent.
    /// `x as [T; dims]` and `x as [T; *]`: a checked conversion between
    /// tensor types, converting elements to `T` as a scalar `as` does
    /// (except to dynamic rank). From `load_npy(path)` it reads the
    /// file; from a dynamic-rank tensor it checks the rank and the declared
    /// extents at run time; from a tensor of known rank it checks the
    /// declared extents that are not proven equal (and rejects the ones
    /// proven different). Extents the target leaves open (`?`, a new name)
    /// come from the value.
    fn infer_tensor_cast(&mut self, e: ExprId, x: ExprId, ann: &TyAnn) -> Ty {
        let span = self.hir.span(e);
        let from = match &self.hir.exprs[x].kind {
            ExprKind::Builtin(crate::hir::Builtin::LoadNpy, args) => {
                let Some(&path) = args.first().filter(|_| args.len() == 1) else {
                    self.err(Diagnostic::error(self.hir.span(x), "`load_npy` takes 1 argument, the path"));
                    return Ty::Error;
                };
                let pt = self.infer(path, None);
                if !matches!(pt, Ty::Str | Ty::Error) {
                    let d = Diagnostic::error(
                        self.hir.span(path),
                        format!("the path of `load_npy` must be a string, found `{}`", self.t.show_ty(&pt)),
                    );
                    self.err(d);
                    return Ty::Error;
                }
                self.set(x, Ty::Str);
                None
            }
            _ => Some(self.infer(x, None)),
        };
        let (elem, dims) = match ann {
            TyAnn::Tensor { elem, dims, .. } => (*elem, Some(dims)),
            TyAnn::Dyn { elem, .. } => (*elem, None),
            _ => return Ty::Error,
        };
        let target = self.ann_text(ann);
        let from_dims = match &from {
            None => None,
            Some(Ty::Error) => return Ty::Error,
            Some(t @ (Ty::Tensor(k, _) | Ty::Dyn(k))) if *k != elem && dims.is_none() => {
                let d = Diagnostic::error(
                    span,
                    format!(
                        "cannot convert `{}` to `{target}`: a conversion to dynamic rank keeps the element type",
                        self.t.show_ty(t)
                    ),
                )
                .help(format!("convert the elements first: `x as [{}]`", elem.name()));
                self.err(d);
                return Ty::Error;
            }
            // Elements of another type are converted, as by a scalar `as`.
            Some(Ty::Tensor(_, ds)) => Some(ds.clone()),
            Some(Ty::Dyn(_)) => None,
            Some(t) => {
                let d = Diagnostic::error(
                    span,
                    format!("cannot convert `{}` to the tensor type `{target}`", self.t.show_ty(t)),
                )
                .note("`as` with a tensor type converts a tensor (or `load_npy(...)`) to a checked shape");
                self.err(d);
                return Ty::Error;
            }
        };
        let Some(dims) = dims else {
            // To `[T; *]`: nothing to check.
            self.t.cast_extents.insert(e, (target, Vec::new()));
            return Ty::Dyn(elem);
        };
        if let Some(fd) = &from_dims {
            if fd.len() != dims.len() {
                let d = Diagnostic::error(
                    span,
                    format!(
                        "cannot convert `{}` to `{target}`: the ranks differ ({} and {})",
                        self.t.show_ty(from.as_ref().unwrap_or(&Ty::Error)),
                        fd.len(),
                        dims.len()
                    ),
                )
                .note("a conversion checks a shape; it does not reshape")
                .help("to change the rank, define the new tensor with indices: `let y[i, j] = x[i * 3 + j]`");
                self.err(d);
                return Ty::Error;
            }
        }
        let mut shape = Vec::new();
        let mut checks = Vec::new();
        for (axis, d) in dims.iter().enumerate() {
            let known = match d {
                DimAnn::Lit(..) | DimAnn::Bin(..) => self.dim_ann(d),
                DimAnn::Sym(def, _) if self.bound_dims.contains(&dim_var(*def)) => self.dim_ann(d),
                _ => None,
            };
            let have = from_dims.as_ref().map(|fd| fd[axis].clone());
            match (known, have) {
                (Some(k), Some(h)) => match k.prove_eq(&h) {
                    Truth::True => {
                        shape.push(h);
                        checks.push(None);
                    }
                    Truth::False => {
                        let d = Diagnostic::error(
                            d.span(),
                            format!(
                                "cannot convert to `{target}`: axis {axis} has length `{}`, not `{}`",
                                self.t.show_dim(&h),
                                self.t.show_dim(&k)
                            ),
                        );
                        self.err(d);
                        return Ty::Error;
                    }
                    Truth::Unknown => {
                        shape.push(k.clone());
                        checks.push(Some(k));
                    }
                },
                (Some(k), None) => {
                    shape.push(k.clone());
                    checks.push(Some(k));
                }
                (None, Some(h)) => {
                    shape.push(h);
                    checks.push(None);
                }
                (None, None) => {
                    let v = self.fresh_hidden();
                    let name = match d {
                        DimAnn::Sym(def, _) => self.name(*def).to_string(),
                        _ => "?".to_string(),
                    };
                    self.t.dim_names.insert(v, name);
                    shape.push(Dim::var(v));
                    checks.push(None);
                }
            }
        }
        self.t.cast_extents.insert(e, (target, checks));
        Ty::Tensor(elem, shape)
    }

    /// A tensor type annotation as the user wrote it (`[f32; N, 3]`).
    fn ann_text(&mut self, ann: &TyAnn) -> String {
        match ann {
            TyAnn::Dyn { elem, .. } => format!("[{}; *]", elem.name()),
            TyAnn::Tensor { elem, dims, .. } => {
                let dims: Vec<String> = dims.iter().map(|d| self.dim_ann_text(d)).collect();
                format!("[{}; {}]", elem.name(), dims.join(", "))
            }
            other => {
                let t = self.ann_to_ty(other);
                self.t.show_ty(&t)
            }
        }
    }

    fn dim_ann_text(&self, d: &DimAnn) -> String {
        match d {
            DimAnn::Lit(v, _) => v.to_string(),
            DimAnn::Sym(def, _) => self.name(*def).to_string(),
            DimAnn::Unknown(_) => "?".to_string(),
            DimAnn::Bin(op, l, r, _) => format!("{} {} {}", self.dim_ann_text(l), op.symbol(), self.dim_ann_text(r)),
        }
    }

    fn infer_comprehension(
        &mut self,
        body: ExprId,
        clauses: &[crate::hir::CompClause],
        rows: bool,
        expect: Option<ScalarKind>,
    ) -> Ty {
        use crate::hir::CompClause;
        let mut len = Dim::one();
        let mut filtered = false;
        let mut failed = false;
        for c in clauses {
            match c {
                CompClause::Range { def, range } => {
                    self.env.insert(*def, Ty::I64);
                    self.t.def_ty.insert(*def, Ty::I64);
                    match self.explicit_range(range, false) {
                        Some(r) => {
                            // A range that ends before it starts is empty.
                            let n = r.end.sub(&r.start);
                            let n = if n.as_constant().is_some_and(|c| c < 0) { Dim::zero() } else { n };
                            len = len.mul(&n);
                            self.t.ranges.insert(*def, r);
                        }
                        None => failed = true,
                    }
                }
                CompClause::Each { def, over } => {
                    if let Some(o) = self.origin(*over) {
                        self.literal_origin.insert(*def, o);
                    }
                    let t = self.infer(*over, None);
                    let elem = match &t {
                        Ty::Tensor(k, dims) if !dims.is_empty() => {
                            len = len.mul(&dims[0]);
                            if dims.len() == 1 {
                                Ty::Scalar(*k)
                            } else {
                                Ty::Tensor(*k, dims[1..].to_vec())
                            }
                        }
                        // The rows of a jagged array: vectors whose length
                        // only each row knows.
                        Ty::Jagged(k) => {
                            let (n, r) = (self.fresh_hidden(), self.fresh_hidden());
                            self.t.dim_names.insert(n, "?".to_string());
                            self.t.dim_names.insert(r, "?".to_string());
                            len = len.mul(&Dim::var(n));
                            Ty::Tensor(*k, vec![Dim::var(r)])
                        }
                        Ty::Strs(d) => {
                            len = len.mul(d);
                            Ty::Str
                        }
                        Ty::Error => Ty::Error,
                        other => {
                            let d = Diagnostic::error(
                                self.hir.span(*over),
                                format!(
                                    "a comprehension iterates over a tensor, a jagged array or a range, found `{}`",
                                    self.t.show_ty(other)
                                ),
                            );
                            self.err(d);
                            Ty::Error
                        }
                    };
                    failed |= elem.is_error();
                    self.env.insert(*def, elem.clone());
                    self.t.def_ty.insert(*def, elem);
                }
                CompClause::Filter(f) => {
                    filtered = true;
                    let ft = self.infer(*f, Some(ScalarKind::Bool));
                    self.expect_bool(*f, &ft, "a comprehension filter");
                }
            }
        }
        if filtered {
            self.cond_depth += 1;
        }
        let bt = self.infer(body, expect);
        if filtered {
            self.cond_depth -= 1;
        }
        if failed || bt.is_error() {
            return Ty::Error;
        }
        // Tensor elements stack along a new first axis when every element
        // has one shape: extents that are constants or dimensions of the
        // function, not of the generators or known only per element.
        let generators: Vec<DimVar> = clauses
            .iter()
            .filter_map(|c| match c {
                CompClause::Range { def, .. } | CompClause::Each { def, .. } => Some(dim_var(*def)),
                CompClause::Filter(_) => None,
            })
            .collect();
        if rows {
            // `jagged[row | ...]`: vectors of any lengths are the rows.
            return match bt {
                Ty::Tensor(k, dims) if dims.len() == 1 => Ty::Jagged(k),
                other => {
                    let d = Diagnostic::error(
                        self.hir.span(body),
                        format!("a row of a jagged array must be a vector, found `{}`", self.t.show_ty(&other)),
                    )
                    .note("`jagged[row | ...]` collects vectors of any lengths");
                    self.err(d);
                    Ty::Error
                }
            };
        }
        if bt == Ty::Str {
            // Strings collect into a vector of strings.
            if filtered {
                let v = self.fresh_hidden();
                self.t.dim_names.insert(v, "len".to_string());
                len = Dim::var(v);
            }
            return Ty::Strs(len);
        }
        let (k, elem_dims) = match bt {
            Ty::Scalar(k) => (k, Vec::new()),
            Ty::Tensor(k, dims)
                if dims.iter().all(|d| d.vars().iter().all(|v| v.0 < HIDDEN_DIM_BASE && !generators.contains(v))) =>
            {
                (k, dims)
            }
            other => {
                let d = Diagnostic::error(
                    self.hir.span(body),
                    format!(
                        "the elements of a comprehension must be scalars or tensors of one shape, found `{}`",
                        self.t.show_ty(&other)
                    ),
                );
                let d = match other {
                    Ty::Tensor(..) => d
                        .note("a tensor whose length changes from element to element makes rows of different lengths")
                        .help("collect such rows in a jagged array instead: `jagged[row | ...]`"),
                    t if t == Ty::unit() => d
                        .note("an element with no value (`assert(..)`, `print(..)`) cannot be collected")
                        .help("check every element with `assert(all[i](...), msg)` instead"),
                    _ => d,
                };
                self.err(d);
                return Ty::Error;
            }
        };
        if filtered {
            let v = self.fresh_hidden();
            self.t.dim_names.insert(v, "len".to_string());
            len = Dim::var(v);
        }
        let mut dims = vec![len];
        dims.extend(elem_dims);
        Ty::Tensor(k, dims)
    }

    fn infer_match(
        &mut self,
        e: ExprId,
        scrutinee: ExprId,
        arms: &[crate::hir::Arm],
        expect: Option<ScalarKind>,
    ) -> Ty {
        let st = self.infer(scrutinee, None);
        let mut result: Option<Ty> = None;
        let mut failed = st.is_error();
        for arm in arms {
            if !st.is_error() && !self.check_pat(&arm.pat, &st) {
                failed = true;
            }
            if let Some(g) = arm.guard {
                let gt = self.infer(g, Some(ScalarKind::Bool));
                self.expect_bool(g, &gt, "a match guard");
            }
            self.cond_depth += 1;
            let hint = result.as_ref().and_then(|t| t.elem()).or(expect);
            let bt = self.infer(arm.body, hint);
            self.cond_depth -= 1;
            match (&result, &bt) {
                (_, Ty::Error) => failed = true,
                (None, _) => result = Some(bt),
                (Some(r), _) => match self.join_branches(r, &bt) {
                    Ok(t) => result = Some(t),
                    Err(Join::Differ) => {
                        let d =
                            Diagnostic::error(self.hir.span(arm.body), "match arms give tensors of different shapes")
                                .note("the value of a `match` must have one shape whichever arm runs");
                        self.err(d);
                        failed = true;
                    }
                    Err(Join::Mismatch) => {
                        let d = Diagnostic::error(
                            self.hir.span(arm.body),
                            format!(
                                "match arms have different types: `{}` and `{}`",
                                self.t.show_ty(r),
                                self.t.show_ty(&bt)
                            ),
                        );
                        self.err(d);
                        failed = true;
                    }
                },
            }
        }
        if failed {
            return Ty::Error;
        }
        if let Some(missing) = self.missing_cases(&st, arms) {
            let d = Diagnostic::error(self.hir.span(scrutinee), format!("non-exhaustive match: {missing}"))
                .label(self.hir.span(e), "in this `match`")
                .help("add the missing arms, or a wildcard arm `_ => ...`");
            self.err(d);
            return Ty::Error;
        }
        result.unwrap_or(Ty::Error)
    }

    /// The type of a value that is either `a` or `b` (two branches of an
    /// `if`, two arms of a `match`), which code after it relies on:
    /// tensors of one element type and rank whose extents are proven equal,
    /// or become a run-time extent (`?`) where either side has one; tuples
    /// element by element; vectors of strings of any lengths.
    fn join_branches(&mut self, a: &Ty, b: &Ty) -> Result<Ty, Join> {
        match (a, b) {
            _ if a == b => Ok(a.clone()),
            (Ty::Tensor(k1, d1), Ty::Tensor(k2, d2)) if k1 == k2 && d1.len() == d2.len() => {
                let hidden = |d: &Dim| d.vars().iter().any(|v| v.0 >= HIDDEN_DIM_BASE);
                let mut dims = Vec::new();
                for (x, y) in d1.iter().zip(d2) {
                    match x.prove_eq(y) {
                        Truth::True => dims.push(x.clone()),
                        Truth::False if !hidden(x) && !hidden(y) => return Err(Join::Differ),
                        // Which extent it is depends on the branch taken:
                        // known when it runs.
                        _ => dims.push(self.run_time_dim()),
                    }
                }
                Ok(Ty::Tensor(*k1, dims))
            }
            (Ty::Tuple(xs), Ty::Tuple(ys)) if xs.len() == ys.len() => {
                xs.iter().zip(ys).map(|(x, y)| self.join_branches(x, y)).collect::<Result<Vec<_>, _>>().map(Ty::Tuple)
            }
            (Ty::Strs(x), Ty::Strs(y)) => {
                Ok(if x.prove_eq(y) == Truth::True { Ty::Strs(x.clone()) } else { Ty::Strs(self.run_time_dim()) })
            }
            _ if same_kind_and_rank(a, b) => Ok(a.clone()),
            _ => Err(Join::Mismatch),
        }
    }

    /// A fresh extent known only at run time, shown as `?`.
    fn run_time_dim(&mut self) -> Dim {
        let v = self.fresh_hidden();
        self.t.dim_names.insert(v, "?".to_string());
        Dim::var(v)
    }

    /// What an exhaustive match over `t` would still need, if anything.
    /// Booleans are checked exactly; other types need an irrefutable arm
    /// (guarded arms never count).
    fn missing_cases(&self, t: &Ty, arms: &[crate::hir::Arm]) -> Option<String> {
        use crate::hir::Pat;
        let unguarded: Vec<&Pat> = arms.iter().filter(|a| a.guard.is_none()).map(|a| &a.pat).collect();
        fn irrefutable(p: &Pat) -> bool {
            match p {
                Pat::Wild | Pat::Bind(_) => true,
                Pat::Tuple(items) => items.iter().all(irrefutable),
                Pat::Or(alts) => alts.iter().any(irrefutable),
                Pat::At(_, p) => irrefutable(p),
                _ => false,
            }
        }
        fn matches_bool(p: &Pat, b: bool) -> bool {
            match p {
                Pat::Lit(Lit::Bool(x), _) => *x == b,
                Pat::Or(alts) => alts.iter().any(|q| matches_bool(q, b)),
                Pat::At(_, p) => matches_bool(p, b),
                _ => false,
            }
        }
        if unguarded.iter().any(|p| irrefutable(p)) {
            return None;
        }
        match t {
            Ty::Scalar(ScalarKind::Bool) => {
                let has = |b: bool| unguarded.iter().any(|p| matches_bool(p, b));
                match (has(true), has(false)) {
                    (true, true) => None,
                    (true, false) => Some("`false` not covered".to_string()),
                    (false, true) => Some("`true` not covered".to_string()),
                    (false, false) => Some("`true` and `false` not covered".to_string()),
                }
            }
            Ty::Scalar(k) if k.is_int() => Some(format!(
                "patterns of `{}` need a wildcard arm; integer ranges are not checked for coverage",
                k.name()
            )),
            other => Some(format!("values of type `{}` need a wildcard arm", self.t.show_ty(other))),
        }
    }

    /// Checks pattern `p` against type `t` and gives its bindings types.
    fn check_pat(&mut self, p: &crate::hir::Pat, t: &Ty) -> bool {
        use crate::hir::Pat;
        let lit_ok = |l: &Lit, k: ScalarKind| match l {
            Lit::Int(v, suffix) => k.is_int() && suffix.is_none_or(|s| s == k) && literal_fits(*v, k),
            Lit::Float(_, suffix) => k.is_float() && suffix.is_none_or(|s| s == k),
            Lit::Bool(_) => k == ScalarKind::Bool,
            Lit::Str(_) => false,
        };
        match (p, t) {
            (Pat::Wild, _) => true,
            (Pat::Or(alts), _) => {
                let mut ok = true;
                for q in alts {
                    ok &= self.check_pat(q, t);
                }
                ok
            }
            (Pat::Lit(Lit::Str(_), _), Ty::Str) => true,
            (Pat::At(d, q), _) => {
                self.env.insert(*d, t.clone());
                self.t.def_ty.insert(*d, t.clone());
                self.check_pat(q, t)
            }
            (Pat::Bind(d), _) => {
                self.env.insert(*d, t.clone());
                self.t.def_ty.insert(*d, t.clone());
                true
            }
            (Pat::Lit(l, span), Ty::Scalar(k)) => {
                if lit_ok(l, *k) {
                    return true;
                }
                self.err(Diagnostic::error(*span, format!("this pattern cannot match a value of type `{}`", k.name())));
                false
            }
            (Pat::Range { lo, hi, span, .. }, Ty::Scalar(k)) => {
                if lit_ok(lo, *k) && lit_ok(hi, *k) && *k != ScalarKind::Bool {
                    return true;
                }
                self.err(Diagnostic::error(
                    *span,
                    format!("this range pattern cannot match a value of type `{}`", k.name()),
                ));
                false
            }
            (Pat::Tuple(items), Ty::Tuple(tys)) if items.len() == tys.len() => {
                let mut ok = true;
                for (p, t) in items.iter().zip(tys) {
                    ok &= self.check_pat(p, t);
                }
                ok
            }
            (_, other) => {
                let span = match p {
                    Pat::Lit(_, s) | Pat::Range { span: s, .. } => *s,
                    _ => Span::call_site(),
                };
                self.err(Diagnostic::error(
                    span,
                    format!("this pattern cannot match a value of type `{}`", self.t.show_ty(other)),
                ));
                false
            }
        }
    }

    fn infer_builtin(&mut self, e: ExprId, b: crate::hir::Builtin, args: &[ExprId]) -> Ty {
        use crate::hir::Builtin;
        let span = self.hir.span(e);
        let arity_ok = match b {
            Builtin::Print => true,
            Builtin::Assert => matches!(args.len(), 1 | 2),
            Builtin::Len | Builtin::Shape | Builtin::LoadNpy | Builtin::TypeOf => args.len() == 1,
            Builtin::SaveNpy | Builtin::Reshape(_) => args.len() == 2,
            Builtin::Fs(op) => args.len() == op.params().len(),
        };
        if !arity_ok {
            let want = match b {
                Builtin::Assert => "1 or 2 arguments (a condition and a message)",
                Builtin::SaveNpy => "2 arguments (a path and a tensor)",
                Builtin::Reshape(_) => "2 arguments (a tensor and an integer vector)",
                Builtin::Fs(op) => match op.params() {
                    [] => "no arguments",
                    [crate::base::intrinsic::FsValue::Strs] => "1 argument (a vector of strings)",
                    [_] => "1 argument (a string)",
                    _ => "2 arguments (two strings)",
                },
                _ => "1 argument",
            };
            self.err(Diagnostic::error(
                span,
                format!(
                    "`{}` takes {want}, but {} {} supplied",
                    b.name(),
                    args.len(),
                    if args.len() == 1 { "was" } else { "were" }
                ),
            ));
            return Ty::Error;
        }
        match b {
            Builtin::Print => {
                for a in args {
                    self.infer(*a, None);
                }
                Ty::unit()
            }
            Builtin::Assert => {
                let c = self.infer(args[0], Some(ScalarKind::Bool));
                // As in the seed, a tensor of conditions asserts them all.
                if !matches!(c, Ty::Tensor(ScalarKind::Bool, _)) {
                    self.expect_bool(args[0], &c, "the condition of `assert`");
                }
                if let Some(m) = args.get(1) {
                    let t = self.infer(*m, None);
                    if !matches!(t, Ty::Str | Ty::Error) {
                        let d = Diagnostic::error(
                            self.hir.span(*m),
                            format!("the message of `assert` must be a string, found `{}`", self.t.show_ty(&t)),
                        );
                        self.err(d);
                    }
                }
                Ty::unit()
            }
            Builtin::LoadNpy => {
                self.infer(args[0], None);
                let d = Diagnostic::error(span, "`load_npy` needs the type of what it reads")
                    .help("give it with `as`: `load_npy(path) as [f32; 8, 5]`");
                self.err(d);
                Ty::Error
            }
            Builtin::SaveNpy => {
                let p = self.infer(args[0], None);
                let x = self.infer(args[1], None);
                if !matches!(p, Ty::Str | Ty::Error) {
                    let d = Diagnostic::error(
                        self.hir.span(args[0]),
                        format!("the path of `save_npy` must be a string, found `{}`", self.t.show_ty(&p)),
                    );
                    self.err(d);
                }
                if !matches!(x, Ty::Tensor(..) | Ty::Error) {
                    let d = Diagnostic::error(
                        self.hir.span(args[1]),
                        format!("`save_npy` writes a tensor, found `{}`", self.t.show_ty(&x)),
                    );
                    self.err(d);
                }
                Ty::unit()
            }
            Builtin::TypeOf => {
                self.infer(args[0], None);
                Ty::Str
            }
            Builtin::Fs(op) => {
                use crate::base::intrinsic::FsValue;
                for (a, want) in args.iter().zip(op.params()) {
                    let t = self.infer(*a, None);
                    let fits = match want {
                        FsValue::Strs => matches!(t, Ty::Strs(_) | Ty::Error),
                        _ => matches!(t, Ty::Str | Ty::Error),
                    };
                    if !fits {
                        let what = if *want == FsValue::Strs { "a vector of strings" } else { "a string" };
                        let d = Diagnostic::error(
                            self.hir.span(*a),
                            format!("`{}` takes {what}, found `{}`", op.name(), self.t.show_ty(&t)),
                        );
                        self.err(d);
                    }
                }
                match op.result() {
                    FsValue::Str => Ty::Str,
                    FsValue::Bool => Ty::BOOL,
                    FsValue::I64 => Ty::I64,
                    FsValue::StrPair => Ty::Tuple(vec![Ty::Str, Ty::Str]),
                    FsValue::Strs => Ty::Strs(self.run_time_dim()),
                }
            }
            Builtin::Reshape(op) => {
                let x = self.infer(args[0], None);
                let v = self.infer(args[1], Some(ScalarKind::I64));
                let k = match x {
                    Ty::Error => return Ty::Error,
                    Ty::Tensor(k, _) | Ty::Dyn(k) => k,
                    other => {
                        let d = Diagnostic::error(
                            self.hir.span(args[0]),
                            format!("`{}` takes a tensor, found `{}`", op.name(), self.t.show_ty(&other)),
                        );
                        self.err(d);
                        return Ty::Error;
                    }
                };
                match v {
                    Ty::Error => Ty::Error,
                    Ty::Tensor(i, dims) if i.is_int() && dims.len() == 1 => Ty::Dyn(k),
                    other => {
                        let d = Diagnostic::error(
                            self.hir.span(args[1]),
                            format!("`{}` takes an integer vector, found `{}`", op.name(), self.t.show_ty(&other)),
                        );
                        self.err(d);
                        Ty::Error
                    }
                }
            }
            Builtin::Len | Builtin::Shape => {
                let t = self.infer(args[0], None);
                match t {
                    Ty::Error => Ty::Error,
                    Ty::Tensor(_, dims) if b == Builtin::Len && !dims.is_empty() => Ty::I64,
                    Ty::Tensor(_, dims) if b == Builtin::Shape => {
                        Ty::Tensor(ScalarKind::I64, vec![Dim::constant(dims.len() as i64)])
                    }
                    // A dynamic-rank tensor's axes are read at run time (`len`
                    // of a rank-0 value is an error then); a jagged array's
                    // length is its number of rows.
                    // A string's length is its number of characters.
                    Ty::Dyn(_) | Ty::Jagged(_) | Ty::Str | Ty::Strs(_) if b == Builtin::Len => Ty::I64,
                    Ty::Dyn(_) => Ty::Tensor(ScalarKind::I64, vec![self.run_time_dim()]),
                    other => {
                        let d = Diagnostic::error(
                            self.hir.span(args[0]),
                            format!("`{}` takes a tensor, found `{}`", b.name(), self.t.show_ty(&other)),
                        );
                        self.err(d);
                        Ty::Error
                    }
                }
            }
        }
    }

    /// The extent of axis `axis` of the tensor `x` (for `len`, `shape`).
    fn axis_dim(&self, x: ExprId, axis: usize) -> Option<Dim> {
        match self.t.ty(x) {
            // An extent known only at run time is a dimension only for a
            // named value (bound when the value is); of a computed value
            // (`len(j[i])`) it is evaluated as a run-time bound instead.
            Ty::Tensor(_, dims) => dims.get(axis).cloned().filter(|d| {
                matches!(self.hir.exprs[x].kind, ExprKind::Def(_)) || d.vars().iter().all(|v| v.0 < HIDDEN_DIM_BASE)
            }),
            _ => None,
        }
    }

    fn infer_intrinsic(
        &mut self,
        e: ExprId,
        i: Intrinsic,
        callee_span: Span,
        args: &[ExprId],
        expect: Option<ScalarKind>,
    ) -> Ty {
        use crate::base::intrinsic::Signature;
        let span = self.hir.span(e);
        let sig = i.signature();
        let arity = i.arity();
        let name = if i == Intrinsic::Powf { "pow" } else { i.name() };
        if args.len() != arity {
            let d = Diagnostic::arity(span, arity, args.len())
                .label(callee_span, format!("`std::math::{name}` takes {arity}"));
            self.err(d);
            args.iter().for_each(|a| {
                self.infer(*a, None);
            });
            return Ty::Error;
        }
        let accepts = |k: ScalarKind| match sig {
            Signature::FloatUnary | Signature::FloatBinary => k.is_float(),
            Signature::SignedUnary => k.is_signed(),
            Signature::NumUnary | Signature::NumBinary | Signature::Pow => k != ScalarKind::Bool,
            Signature::IntUnary | Signature::IntBinary => k.is_int(),
        };
        let wanted = match sig {
            Signature::FloatUnary | Signature::FloatBinary => "a float",
            Signature::SignedUnary => "a signed number",
            Signature::IntUnary | Signature::IntBinary => "an integer",
            _ => "a number",
        };
        let expect = expect.filter(|k| accepts(*k));
        if arity == 2 {
            let (a, b) = (args[0], args[1]);
            let (ta, tb) = if self.flexible(a) && !self.flexible(b) {
                let tb = self.infer(b, expect);
                (self.infer(a, ew_elem(&tb)), tb)
            } else {
                let ta = self.infer(a, expect);
                (ta.clone(), self.infer(b, ew_elem(&ta)))
            };
            if ta.is_error() || tb.is_error() {
                return Ty::Error;
            }
            if sig == Signature::Pow {
                return self.infer_pow(e, &ta, &tb);
            }
            let (Some(ka), Some(kb)) = (ew_elem(&ta), ew_elem(&tb)) else {
                self.err(Diagnostic::error(span, format!("`{name}` takes numbers")));
                return Ty::Error;
            };
            if ka != kb || !accepts(ka) {
                let d = Diagnostic::error(
                    span,
                    format!("mismatched types: `{name}` of `{}` and `{}`", ka.name(), kb.name()),
                )
                .help(format!("both arguments must be {wanted} of the same type"));
                self.err(d);
                return Ty::Error;
            }
            return match self.broadcast(span, &ta, &tb) {
                Some(shape) => shape.ty(ka),
                None => Ty::Error,
            };
        }
        let t = self.infer(args[0], expect);
        let Some(k) = ew_elem(&t) else {
            if !t.is_error() {
                self.err(Diagnostic::error(span, format!("`{name}` takes a number, found `{}`", self.t.show_ty(&t))));
            }
            return Ty::Error;
        };
        if !accepts(k) {
            let d = Diagnostic::error(self.hir.span(args[0]), format!("`{name}` takes {wanted}, found `{}`", k.name()));
            let d = if k.is_int() && sig == Signature::FloatUnary {
                d.help(format!("convert it first: `{name}(x as f32)`"))
            } else {
                d
            };
            self.err(d);
            return Ty::Error;
        }
        t
    }

    fn infer_index(&mut self, e: ExprId, base: ExprId, args: &[ExprId]) -> Ty {
        let span = self.hir.span(e);
        let bt = self.infer(base, None);
        let arg_tys: Vec<Ty> = args.iter().map(|a| self.infer(*a, Some(ScalarKind::I64))).collect();
        if bt.is_error() || arg_tys.iter().any(|t| t.is_error()) {
            return Ty::Error;
        }
        if let Some((x, axis)) = self.hir.shape_index(base, args) {
            let has_axis = matches!(self.t.ty(x), Ty::Tensor(_, dims) if axis < dims.len());
            if has_axis || matches!(self.t.ty(x), Ty::Dyn(_)) {
                return Ty::I64;
            }
            let d = Diagnostic::error(
                span,
                format!("axis {axis} is out of range for `shape` of a `{}`", self.t.show_ty(self.t.ty(x))),
            );
            self.err(d);
            return Ty::Error;
        }
        let ExprKind::Def(tensor_def) = self.hir.exprs[base].kind else {
            let d = Diagnostic::error(self.hir.span(base), "only named tensors can be indexed")
                .help("bind the value with `let` first, then index the name");
            self.err(d);
            return Ty::Error;
        };
        let tensor = self.name(tensor_def).to_string();
        if bt == Ty::Str {
            // One character, as a string (the seed's `s[i]`).
            if args.len() != 1 || arg_tys[0].scalar().is_none_or(|k| !k.is_int()) {
                self.err(Diagnostic::error(
                    span,
                    format!("a character of string `{tensor}` is taken with one integer index"),
                ));
                return Ty::Error;
            }
            return Ty::Str;
        }
        if let Ty::Jagged(k) = bt {
            // One row, as a vector whose length only the row knows; with a
            // second index (`j[i][k]`, `j[i, k]`), one element of it.
            if args.len() > 2 || arg_tys.iter().any(|t| t.scalar().is_none_or(|k| !k.is_int())) {
                let d = Diagnostic::error(
                    span,
                    format!("a row of jagged array `{tensor}` is taken with one integer index"),
                )
                .help(format!("index the row with a second one: `{tensor}[i][j]`"));
                self.err(d);
                return Ty::Error;
            }
            if args.len() == 2 {
                return Ty::Scalar(k);
            }
            return Ty::Tensor(k, vec![self.run_time_dim()]);
        }
        // A vector of strings reads like a vector (its reads bound index
        // ranges), and gives a string.
        let strs = matches!(bt, Ty::Strs(_));
        let bt = match bt {
            Ty::Strs(d) => Ty::Tensor(ScalarKind::U8, vec![d]),
            other => other,
        };
        let Ty::Tensor(k, dims) = bt else {
            let d = match bt {
                Ty::Dyn(k) => Diagnostic::error(
                    span,
                    format!("`{tensor}` has dynamic rank (`[{}; *]`), so it cannot be indexed", k.name()),
                )
                .help(format!("convert it to a rank first: `let m = {tensor} as [{}; N, M];`", k.name())),
                _ => Diagnostic::error(
                    span,
                    format!("`{tensor}` is not a tensor; it has type `{}`", self.t.show_ty(&bt)),
                ),
            };
            self.err(d);
            return Ty::Error;
        };
        for (a, t) in args.iter().zip(&arg_tys) {
            if !t.scalar().is_some_and(|k| k.is_int()) {
                let d = Diagnostic::error(
                    self.hir.span(*a),
                    format!("an index must be an integer, found `{}`", self.t.show_ty(t)),
                );
                self.err(d);
                return Ty::Error;
            }
        }
        if args.len() > dims.len() {
            let d = Diagnostic::error(
                span,
                format!("rank mismatch: `{tensor}` has rank {} but is indexed with {} indices", dims.len(), args.len()),
            )
            .label(
                self.hir.defs[tensor_def].span,
                format!("`{tensor}` has type `{}`", self.t.show_ty(&Ty::Tensor(k, dims.clone()))),
            );
            self.err(d);
            return Ty::Error;
        }
        let axes = args.iter().zip(&dims).map(|(a, d)| (d.clone(), self.to_dim(*a), *a)).collect();
        let read = Read {
            expr: e,
            tensor,
            span,
            axes,
            conditional: self.cond_depth > 0,
            narrow: self.narrow.clone(),
            partial: args.len() < dims.len(),
            own: self.recs.iter().any(|r| r.def == tensor_def).then_some(tensor_def),
        };
        if let Some(u) = self.units.last_mut() {
            u.reads.push(read);
        }
        if strs {
            Ty::Str
        } else if args.len() == dims.len() {
            Ty::Scalar(k)
        } else {
            Ty::Tensor(k, dims[args.len()..].to_vec())
        }
    }

    fn infer_reduce(
        &mut self,
        e: ExprId,
        op: RedOp,
        vars: &[crate::hir::RedVar],
        wheres: &[Where],
        body: ExprId,
        expect: Option<ScalarKind>,
    ) -> Ty {
        let span = self.hir.span(e);
        for v in vars {
            self.env.insert(v.def, Ty::I64);
            self.t.def_ty.insert(v.def, Ty::I64);
            let range = v.range.as_ref().and_then(|r| self.explicit_range(r, true));
            if let Some(u) = self.units.last_mut() {
                u.vars.push(v.def);
                if let Some(r) = range {
                    u.explicit.insert(v.def, r);
                }
            }
        }
        let guarded = self.infer_wheres(wheres);
        if guarded {
            self.cond_depth += 1;
        }
        let body_expect = match op {
            RedOp::All | RedOp::Any => Some(ScalarKind::Bool),
            RedOp::ArgMax | RedOp::ArgMin => None,
            _ => expect,
        };
        let bt = self.infer(body, body_expect);
        if guarded {
            self.cond_depth -= 1;
        }
        self.pop_narrowings(wheres);
        let k = match bt {
            Ty::Error => return Ty::Error,
            Ty::Scalar(k) => k,
            other => {
                let d = Diagnostic::error(
                    self.hir.span(body),
                    format!("the body of `{}` must be a scalar, found `{}`", op.name(), self.t.show_ty(&other)),
                )
                .help("index the tensor inside the reduction");
                self.err(d);
                return Ty::Error;
            }
        };
        match op {
            RedOp::All | RedOp::Any if k != ScalarKind::Bool => {
                self.err(Diagnostic::error(span, format!("`{}` needs a `bool` body, found `{}`", op.name(), k.name())));
                Ty::Error
            }
            RedOp::Sum | RedOp::Prod | RedOp::Max | RedOp::Min | RedOp::ArgMax | RedOp::ArgMin
                if k == ScalarKind::Bool =>
            {
                self.err(Diagnostic::error(span, format!("`{}` needs a numeric body, found `bool`", op.name())));
                Ty::Error
            }
            RedOp::ArgMax | RedOp::ArgMin => Ty::I64,
            _ => Ty::Scalar(k),
        }
    }

    /// `jagged[row, ...]`: every row a vector of one element type, of any
    /// length.
    fn infer_jagged(&mut self, e: ExprId, rows: &[ExprId], expect: Option<ScalarKind>) -> Ty {
        let lead = rows.iter().position(|x| !self.flexible(*x)).unwrap_or(0);
        let Some(&lead_row) = rows.get(lead) else {
            self.err(Diagnostic::error(self.hir.span(e), "an empty jagged array has no element type"));
            return Ty::Error;
        };
        let lead_k = self.infer(lead_row, expect).elem().or(expect);
        let mut elem = None;
        for (i, &row) in rows.iter().enumerate() {
            let t = if i == lead { self.t.ty(row).clone() } else { self.infer(row, lead_k) };
            match t {
                Ty::Error => return Ty::Error,
                Ty::Tensor(k, dims) if dims.len() == 1 && elem.is_none_or(|e| e == k) => elem = Some(k),
                other => {
                    let d = Diagnostic::error(
                        self.hir.span(row),
                        format!("a row of a jagged array must be a vector, found `{}`", self.t.show_ty(&other)),
                    )
                    .note("rows are vectors of one element type, of any lengths: `jagged[[1, 2], [3]]`");
                    self.err(d);
                    return Ty::Error;
                }
            }
        }
        elem.map(Ty::Jagged).unwrap_or(Ty::Error)
    }

    fn infer_array(&mut self, e: ExprId, items: &[ExprId], expect: Option<ScalarKind>) -> Ty {
        let span = self.hir.span(e);
        if items.is_empty() {
            // `[]`: no elements, of the type the context wants (else f32,
            // as for a float literal).
            return Ty::Tensor(expect.unwrap_or(ScalarKind::F32), vec![Dim::zero()]);
        }
        let mut first: Option<Ty> = None;
        let mut tys = Vec::new();
        // A typed element first, so literals take its type.
        let lead = items.iter().position(|x| !self.flexible(*x)).unwrap_or(0);
        let lead_ty = self.infer(items[lead], expect);
        let lead_k = lead_ty.elem().or(expect);
        for (i, x) in items.iter().enumerate() {
            let t = if i == lead { lead_ty.clone() } else { self.infer(*x, lead_k) };
            tys.push(t);
        }
        for (x, t) in items.iter().zip(&tys) {
            if t.is_error() {
                return Ty::Error;
            }
            match &first {
                None => first = Some(t.clone()),
                Some(f) if f != t => {
                    if let (Some(kf), Some(kt)) = (f.elem(), t.elem()) {
                        self.retype_to_match(items[lead], kf, *x, kt, span);
                    }
                    let d = Diagnostic::error(
                        self.hir.span(*x),
                        format!("array elements differ: `{}` and `{}`", self.t.show_ty(f), self.t.show_ty(t)),
                    )
                    .note("array literals are rectangular; ragged arrays must be declared `jagged[...]`");
                    self.err(d);
                    return Ty::Error;
                }
                _ => {}
            }
        }
        match first {
            Some(Ty::Scalar(k)) => Ty::Tensor(k, vec![Dim::constant(items.len() as i64)]),
            Some(Ty::Str) => Ty::Strs(Dim::constant(items.len() as i64)),
            Some(Ty::Tensor(k, mut dims)) => {
                if dims.iter().any(|d| d.as_constant().is_none()) {
                    self.err(Diagnostic::error(span, "array literals can only nest arrays of known size"));
                    return Ty::Error;
                }
                dims.insert(0, Dim::constant(items.len() as i64));
                Ty::Tensor(k, dims)
            }
            Some(Ty::Strs(_)) => {
                let d = Diagnostic::error(span, "tensors of strings of rank 2 or more are not supported yet")
                    .note("strings form vectors (`[\"a\", \"b\"]`); a jagged array holds numbers only")
                    .help("keep the rows in separate vectors, or index one vector (`names[i * cols + j]`)");
                self.err(d);
                Ty::Error
            }
            _ => {
                self.err(Diagnostic::error(span, "array elements must be numbers or arrays"));
                Ty::Error
            }
        }
    }

    // ----- symbolic integer expressions -------------------------------------

    /// The value of an integer expression as a `Dim`, when it is a function
    /// of dimension symbols, `i64` parameters, index variables and literals.
    fn to_dim(&self, e: ExprId) -> Option<Dim> {
        match &self.hir.exprs[e].kind {
            ExprKind::Lit(Lit::Int(v, _)) => i64::try_from(*v).ok().map(Dim::constant),
            ExprKind::Def(d) => match self.hir.defs[*d].kind {
                DefKind::Dim | DefKind::Index => Some(Dim::var(dim_var(*d))),
                DefKind::Param if self.t.def_ty.get(d) == Some(&Ty::I64) => Some(Dim::var(dim_var(*d))),
                DefKind::WhereBind => self.where_value(*d).and_then(|v| self.to_dim(v)),
                DefKind::Local => self.let_values.get(d).and_then(|v| self.to_dim(*v)),
                _ => None,
            },
            ExprKind::Unary(UnOp::Neg, x) => self.to_dim(*x).map(|d| d.neg()),
            ExprKind::Binary(op, a, b) => {
                let (a, b) = (self.to_dim(*a)?, self.to_dim(*b)?);
                match op {
                    BinOp::Add => Some(a.add(&b)),
                    BinOp::Sub => Some(a.sub(&b)),
                    BinOp::Mul => Some(a.mul(&b)),
                    // Integer division truncates; it equals floor division
                    // only for a non-negative numerator and positive divisor.
                    BinOp::Div
                        if self.proven_nonneg(&a) == Truth::True
                            && self.proven_nonneg(&b.add_const(-1)) == Truth::True =>
                    {
                        a.floor_div(&b)
                    }
                    _ => None,
                }
            }
            ExprKind::Cast(x, ScalarKind::I64) => self.to_dim(*x),
            ExprKind::Builtin(crate::hir::Builtin::Len, args) => self.axis_dim(*args.first()?, 0),
            ExprKind::Index { base, args } => {
                let (x, axis) = self.hir.shape_index(*base, args)?;
                self.axis_dim(x, axis)
            }
            ExprKind::Block(b) if b.stmts.is_empty() => b.tail.and_then(|t| self.to_dim(t)),
            _ => None,
        }
    }

    fn where_value(&self, def: DefId) -> Option<ExprId> {
        self.where_values.get(&def).copied()
    }
}

/// The size in bytes of a number type (for picking the wider of two).
fn width(k: ScalarKind) -> u32 {
    match k {
        ScalarKind::Bool | ScalarKind::I8 | ScalarKind::U8 => 1,
        ScalarKind::I16 => 2,
        ScalarKind::I32 | ScalarKind::U32 | ScalarKind::F32 => 4,
        ScalarKind::I64 | ScalarKind::U64 | ScalarKind::F64 => 8,
    }
}

/// Whether a literal tree (`2.0`, `-1.5`, `12.0 / 2.0`, `2.0 ** 3`,
/// `[1.0, 2.0]`) is of the float class: a power has its base's class, other
/// operators and array literals have a float operand's.
fn is_float_lit(hir: &Hir, e: ExprId) -> bool {
    match &hir.exprs[e].kind {
        ExprKind::Lit(Lit::Float(..)) => true,
        ExprKind::Unary(_, x) => is_float_lit(hir, *x),
        ExprKind::Binary(BinOp::Pow, a, _) => is_float_lit(hir, *a),
        ExprKind::Binary(_, a, b) => is_float_lit(hir, *a) || is_float_lit(hir, *b),
        ExprKind::Array(items) => items.iter().any(|x| is_float_lit(hir, *x)),
        _ => false,
    }
}

fn is_callee_var(sig: &FnSig, v: DimVar) -> bool {
    let mut found = false;
    for p in &sig.params {
        collect_dims(p, &mut |d| found |= d.vars().contains(&v));
    }
    found
}

fn pow_kind(base: ScalarKind, exp: ScalarKind) -> Option<Intrinsic> {
    match (base.is_float(), exp.is_float()) {
        (true, true) if base == exp => Some(Intrinsic::Powf),
        (true, false) if exp.is_int() => Some(Intrinsic::Powi),
        (false, false) if base.is_int() && base == exp => Some(Intrinsic::IntPow),
        _ => None,
    }
}

/// Whether the literal `v` is a value of type `k`: a literal is unsigned in
/// the source (`-128i8` is `-(128)`), so the magnitude of the most negative
/// value is allowed too. Always true for float and `bool` types.
fn literal_fits(v: i128, k: ScalarKind) -> bool {
    !k.is_int() || int_fits(v, k) || (v > 0 && int_fits(-v, k))
}

/// The shape of an elementwise result.
enum Bcast {
    Scalar,
    Tensor(Vec<Dim>),
    /// Known only at run time: a dynamic-rank operand.
    Dyn,
}

impl Bcast {
    fn ty(self, k: ScalarKind) -> Ty {
        match self {
            Bcast::Scalar => Ty::Scalar(k),
            Bcast::Tensor(dims) => Ty::Tensor(k, dims),
            Bcast::Dyn => Ty::Dyn(k),
        }
    }
}

/// The element type of a value that elementwise operators take: a scalar,
/// a tensor or a dynamic-rank tensor.
fn ew_elem(t: &Ty) -> Option<ScalarKind> {
    match t {
        Ty::Dyn(k) => Some(*k),
        _ => t.elem(),
    }
}

/// Why two branches have no common type.
enum Join {
    /// Tensors whose extents provably differ.
    Differ,
    /// Different kinds of value.
    Mismatch,
}

fn same_kind_and_rank(a: &Ty, b: &Ty) -> bool {
    match (a, b) {
        (Ty::Scalar(x), Ty::Scalar(y)) => x == y,
        (Ty::Tensor(x, d1), Ty::Tensor(y, d2)) => x == y && d1.len() == d2.len(),
        (Ty::Dyn(x), Ty::Dyn(y)) | (Ty::Jagged(x), Ty::Jagged(y)) => x == y,
        (Ty::Tuple(x), Ty::Tuple(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_kind_and_rank(p, q)),
        (Ty::Str, Ty::Str) | (Ty::Strs(_), Ty::Strs(_)) => true,
        _ => false,
    }
}

fn collect_dims(t: &Ty, f: &mut dyn FnMut(&Dim)) {
    match t {
        Ty::Tensor(_, dims) => dims.iter().for_each(f),
        Ty::Tuple(items) => items.iter().for_each(|t| collect_dims(t, f)),
        _ => {}
    }
}

fn subst_ty(t: &Ty, subst: &HashMap<DimVar, Dim>) -> Ty {
    match t {
        Ty::Tensor(k, dims) => Ty::Tensor(*k, dims.iter().map(|d| d.substitute(&|v| subst.get(&v).cloned())).collect()),
        Ty::Tuple(items) => Ty::Tuple(items.iter().map(|t| subst_ty(t, subst)).collect()),
        other => other.clone(),
    }
}

/// An argument of a call being checked: its expression, the parameter's
/// and the argument's whole types, and the names for messages.
struct Arg<'x> {
    expr: ExprId,
    param: &'x Ty,
    arg: &'x Ty,
    pname: &'x str,
    fname: &'x str,
}

/// The pairs of non-tuple elements, in order, of a parameter type and an
/// argument type that are tuples of one structure; `false` when the
/// structures differ or `p` is not a tuple.
fn tuple_leaves<'t>(p: &'t Ty, a: &'t Ty, out: &mut Vec<(&'t Ty, &'t Ty)>) -> bool {
    match (p, a) {
        (Ty::Tuple(ps), Ty::Tuple(as_)) if ps.len() == as_.len() => ps.iter().zip(as_).all(|(p, a)| match p {
            Ty::Tuple(_) => tuple_leaves(p, a, out),
            _ => {
                out.push((p, a));
                true
            }
        }),
        _ => false,
    }
}

/// The tensors (and string vectors) of a parameter type, with the tuple
/// path that reaches each and its extents.
fn shaped_elements(ty: &Ty, path: &mut Vec<u32>, out: &mut Vec<(Vec<u32>, Vec<Dim>)>) {
    match ty {
        Ty::Tensor(_, dims) => out.push((path.clone(), dims.clone())),
        Ty::Strs(d) => out.push((path.clone(), vec![d.clone()])),
        Ty::Tuple(items) => {
            for (i, t) in items.iter().enumerate() {
                path.push(i as u32);
                shaped_elements(t, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}
