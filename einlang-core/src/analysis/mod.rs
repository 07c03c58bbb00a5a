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

mod cx;
pub mod device;
mod infer;
pub mod pretty;
mod ranges;
pub mod recur;
mod sig;
mod stmt;
#[cfg(test)]
mod tests;
pub mod ty;

use std::collections::HashMap;

use crate::base::dim::{Dim, DimVar, Truth};
use crate::base::intrinsic::Intrinsic;
use crate::base::scalar::ScalarKind;
use crate::base::span::Span;
use crate::diag::Diagnostics;
use crate::hir::{DefId, DefKind, ExprId, FnId, Hir};
use cx::{Cx, FnState, Narrowing, Read, Unit};
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
    /// of their arguments (see `crate::transform::mono`).
    pub mono_requests: Vec<MonoRequest>,
    /// Indexed definitions whose element is a tensor (`let y[n] =
    /// f(x[n]);`, LANGUAGE.md §3): the value, and the number of axes it
    /// adds. `transform::elements` rewrites each into a definition over
    /// those axes too before the tables are used any further.
    pub element_requests: HashMap<ExprId, usize>,
    /// For each call of a generic function, the instance it calls (the
    /// final `Instances::calls`, set by monomorphization for lowering).
    pub instance_calls: HashMap<ExprId, FnId>,
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
    /// the driver records them in `Instances::literal_types` and analyzes
    /// again.
    /// Each with the span of the use.
    pub retypes: Vec<(DefId, ScalarKind, Span)>,
}

/// What monomorphization (`crate::transform::mono`) has decided so far, the
/// input of an analysis round beside the HIR: the instance each call of a
/// generic function reaches, the instances that could not be made, and the
/// types of `let` bindings of unsuffixed literals decided by a later use.
#[derive(Debug, Default)]
pub struct Instances {
    /// For each call of a generic function: the instance it calls.
    pub calls: HashMap<ExprId, FnId>,
    /// Instances whose copying failed (an error was reported): they are not
    /// analyzed, and calls of them are quietly erroneous.
    pub broken: std::collections::HashSet<FnId>,
    /// `let` bindings of unsuffixed literals (`let v = [1, 2, 3];`) whose
    /// type a later use decided, as Rust infers it: `v[i] + k` with `k:
    /// i64` makes `v` an `[i64; 3]`. With the span of that use.
    pub literal_types: HashMap<DefId, (ScalarKind, Span)>,
    /// Unsuffixed integer literal arguments of generic calls that the
    /// instance's body uses as floats, by call and argument position: the
    /// float type each takes.
    pub literal_args: HashMap<(ExprId, usize), ScalarKind>,
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
pub fn analyze(hir: &Hir, instances: &Instances, diags: &mut Diagnostics) -> Tables {
    let mut cx = Cx {
        hir,
        inst: instances,
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
    let analyzed =
        |f: FnId, func: &crate::hir::Function| !func.is_generic() && !instances.broken.contains(&f) && !hir.skipped(f);
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
