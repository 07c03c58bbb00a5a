//! The analysis context `Cx`: the tables being filled, the per-function and
//! per-statement state (units, reads, narrowings), and the small helpers
//! every part of the analysis uses (diagnostics, fresh dimensions, type
//! annotations).

use std::collections::HashMap;

use super::{dim_var, recur, IndexRange, Tables, Ty, HIDDEN_DIM_BASE};
use crate::base::dim::{Dim, DimVar};
use crate::base::ops::BinOp;
use crate::base::span::Span;
use crate::diag::{Diagnostic, Diagnostics};
use crate::hir::{DefId, DefKind, DimAnn, ExprId, FnId, Hir, TyAnn};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum FnState {
    NotStarted,
    InProgress,
    Done,
}

/// A tensor read recorded for range inference and bounds checking.
#[derive(Clone, Debug)]
pub(super) struct Read {
    pub(super) expr: ExprId,
    pub(super) tensor: String,
    pub(super) span: Span,
    /// Per indexed axis: the axis length, the index as a `Dim` (None when it
    /// is data-dependent) and the index expression.
    pub(super) axes: Vec<(Dim, Option<Dim>, ExprId)>,
    /// Whether the read only happens under a condition.
    pub(super) conditional: bool,
    /// Range narrowings in force at the read (from guards and `if`s).
    pub(super) narrow: Vec<Narrowing>,
    /// Whether the read selects a sub-tensor (always checked at run time).
    pub(super) partial: bool,
    /// For a read of a recurrence inside its own clauses: the recurrence
    /// (see `recur`).
    pub(super) own: Option<DefId>,
}

/// `lo <= var < hi` and `var != except` known to hold inside a guarded
/// region (the `else` of `if i == 0` excludes one point: it narrows a
/// range that starts or ends there).
#[derive(Clone, Debug)]
pub(super) struct Narrowing {
    pub(super) var: DefId,
    pub(super) lo: Option<Dim>,
    pub(super) hi: Option<Dim>,
    pub(super) except: Option<Dim>,
}

/// The index variables introduced by one statement and the reads seen in it.
#[derive(Default)]
pub(super) struct Unit {
    /// How many diagnostics existed when the unit started: a unit that
    /// already reported an error does not add "cannot infer" follow-ons.
    pub(super) diags_at_start: usize,
    /// Whether an expression of the unit has the type `Error`.
    pub(super) saw_error: bool,
    pub(super) vars: Vec<DefId>,
    pub(super) explicit: HashMap<DefId, IndexRange>,
    pub(super) reads: Vec<Read>,
}

pub(super) struct Cx<'a> {
    pub(super) hir: &'a Hir,
    /// What monomorphization has decided so far.
    pub(super) inst: &'a super::Instances,
    pub(super) t: Tables,
    pub(super) diags: &'a mut Diagnostics,
    pub(super) env: HashMap<DefId, Ty>,
    pub(super) fn_state: Vec<FnState>,
    pub(super) units: Vec<Unit>,
    pub(super) narrow: Vec<Narrowing>,
    pub(super) cond_depth: usize,
    pub(super) next_hidden: u32,
    /// The value of every where-binding typed so far (index equations are
    /// substituted through these).
    pub(super) where_values: HashMap<DefId, ExprId>,
    /// Index variables whose range could not be inferred (already reported).
    pub(super) failed_vars: std::collections::HashSet<DefId>,
    /// Dimension variables the function being analyzed has values for
    /// (bound from its parameters' shapes, or `i64` parameters).
    pub(super) bound_dims: std::collections::HashSet<DimVar>,
    /// Recurrences whose clauses are being typed, innermost last.
    pub(super) recs: Vec<recur::RecState>,
    /// Ranges for recurrence slots that nothing in their clause bounds.
    pub(super) slot_fallback: HashMap<DefId, IndexRange>,
    /// Locals bound by `let` statements: their values exist before any
    /// later statement runs, so a range bound may read them.
    pub(super) let_locals: std::collections::HashSet<DefId>,
    /// The value of every `i64` `let` local typed so far: a symbolic
    /// integer expression reads through it (`let n = len(x);` is `N`).
    pub(super) let_values: HashMap<DefId, ExprId>,
    /// Unannotated `let`s whose value is made of unsuffixed literals: their
    /// type is open to a later use (see `Tables::retypes`), or was decided
    /// by one (`Instances::literal_types`).
    pub(super) flex_lets: std::collections::HashSet<DefId>,
    /// Locals whose element type comes from one of `flex_lets` (`let s =
    /// sum[i](v[i])`, a definition reading it, a generator over it).
    pub(super) literal_origin: HashMap<DefId, DefId>,
    /// Whether the function being analyzed is an instance of a generic
    /// function (its literals are not retyped: the copy is remade).
    pub(super) in_instance: bool,
    /// Result types of recursive functions without a declared one, from
    /// their base cases (see `analyze_fn`).
    pub(super) rec_guess: HashMap<FnId, Ty>,
    /// Functions whose body made a recursive call before their result type
    /// was known (the call's type was left open).
    pub(super) recursing: std::collections::HashSet<FnId>,
    /// Recursive functions whose result type could not be found that way.
    pub(super) rec_failed: std::collections::HashSet<FnId>,
    /// Functions whose body made a recursive call in the current round.
    pub(super) rec_called: std::collections::HashSet<FnId>,
    /// How many times each recursive function was analyzed again.
    pub(super) rec_rounds: HashMap<FnId, usize>,
}

/// Per-function state saved while another function is analyzed on demand.
pub(super) struct Saved {
    pub(super) bound_dims: std::collections::HashSet<DimVar>,
    pub(super) env: HashMap<DefId, Ty>,
    pub(super) units: Vec<Unit>,
    pub(super) narrow: Vec<Narrowing>,
    pub(super) cond_depth: usize,
    pub(super) recs: Vec<recur::RecState>,
}

impl<'a> Cx<'a> {
    pub(super) fn err(&mut self, d: Diagnostic) {
        self.diags.push(d);
    }

    /// A new dimension variable for an extent known only at run time.
    /// Whether `a` and `b`, not provably equal, are different dimensions
    /// (LANGUAGE.md §3), a compile error rather than a run-time check: both
    /// are sizes written in the program's types (dimension symbols of
    /// declared parameters, and constants; nothing known only at run time:
    /// `?`, a scalar parameter, a run-time bound) and they are made of
    /// different symbols (`K` and `N`, `N` and `3`; not `max(1, T)` and
    /// `T`, which agree for some values of `T`). Never inside an instance
    /// of a generic function, whose symbols are fresh for each argument and
    /// may stand for one size at the call.
    pub(super) fn different_dimensions(&self, a: &Dim, b: &Dim) -> bool {
        self.declared_size(a) && self.declared_size(b) && a.vars() != b.vars()
    }

    fn declared_size(&self, d: &Dim) -> bool {
        !self.in_instance
            && d.vars().iter().all(|v| {
                v.0 < HIDDEN_DIM_BASE
                    && v.0 < self.hir.defs.len() as u32
                    && self.hir.defs[DefId::from_raw(v.0)].kind == DefKind::Dim
            })
    }

    pub(super) fn fresh_hidden(&mut self) -> DimVar {
        let v = DimVar(self.next_hidden);
        self.next_hidden += 1;
        v
    }

    pub(super) fn name(&self, d: DefId) -> &str {
        self.hir.name(d)
    }

    pub(super) fn ann_to_ty(&mut self, ann: &TyAnn) -> Ty {
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

    pub(super) fn dim_ann(&mut self, d: &DimAnn) -> Option<Dim> {
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

    pub(super) fn set(&mut self, e: ExprId, t: Ty) -> Ty {
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

    /// A fresh extent known only at run time, shown as `?`.
    pub(super) fn run_time_dim(&mut self) -> Dim {
        let v = self.fresh_hidden();
        self.t.dim_names.insert(v, "?".to_string());
        Dim::var(v)
    }
}
