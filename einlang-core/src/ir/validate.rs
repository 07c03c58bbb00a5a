//! The loop IR validator: checks the invariants of the module documentation
//! of `ir` so that back ends can print without re-checking.
//!
//! Checked, per function:
//! - names: function names are unique identifiers (letters, digits and `_`,
//!   not starting with a digit); every variable name is an identifier,
//!   unique in its function (back ends spell keywords of their language);
//! - scoping: every variable is defined once (parameter, `BindDim`, `Let`,
//!   `Extent`, `Tensor`, axis, loop, where-binding) and used only where its
//!   definition is in scope: after it in the same block or an enclosing one,
//!   loop and axis variables inside their loop, where-bindings after
//!   themselves inside their reduction or guarded value; a tensor is not in
//!   scope in its own definition; `Dim`s mention only `i64` variables in
//!   scope, and a tensor's axis extents none of its own axis variables;
//! - a tensor definition's `domain_guards` leading where entries are guards;
//! - typing: every expression's `ty` agrees with its operands (the rules of
//!   the `ir` module documentation), reads have as many indices as the rank,
//!   views fewer, indices and loop variables are `i64`, calls name a function
//!   of the program with matching argument types, literals fit their type,
//!   the result has the function's return type.

use std::collections::HashSet;

use crate::base::dim::Dim;
use crate::base::intrinsic::{FsValue, Intrinsic};
use crate::base::ops::{BinOp, RedOp, UnOp};
use crate::base::scalar::ScalarKind;
use crate::ir::calls::CallGraph;
use crate::ir::pretty::ty as ty_text;
use crate::ir::{
    CollectStep, Conv, Cover, EntryCheck, Expr, ExprKind, FmtPart, Function, Gemm, Literal, Loop, Program, RecIndex,
    Recurrence, Repr, Rows, Stmt, Sweep, TensorDef, VarId, WhereEntry,
};

/// Checks every function of `p`. The error lists every problem found, one
/// per line, each prefixed with the function's name.
pub fn validate(p: &Program) -> Result<(), String> {
    let mut errors = Vec::new();
    let mut names: HashSet<&str> = HashSet::new();
    for f in &p.fns {
        if !names.insert(f.name.as_str()) {
            errors.push(format!("function `{}` is defined twice", f.name));
        }
    }
    for f in &p.fns {
        let mut cx = Checker::new(f, &p.fns);
        cx.check_fn();
        if let Some(c) = &f.checkpointed {
            if p.get(c.alternative).is_none() {
                cx.err(format!(
                    "a checkpointed alternative `{}`, which is not a function of the program",
                    c.alternative.0
                ));
            }
        }
        errors.extend(cx.errors.into_iter().map(|e| format!("in `{}`: {e}", f.name)));
    }
    // The graph the program carries is the graph of its bodies.
    let graph = CallGraph::of(&p.fns);
    for (id, f) in p.functions() {
        if p.calls().callees(id) != graph.callees(id) {
            errors.push(format!("in `{}`: the call graph does not hold the calls of its body", f.name));
        }
    }
    if p.calls().len() != p.fns.len() {
        errors.push(format!("the call graph has {} functions, the program {}", p.calls().len(), p.fns.len()));
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("\n"))
    }
}

/// Whether `name` is an identifier: letters, digits and `_`, not starting
/// with a digit.
fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c == '_' || c.is_alphabetic()) && chars.all(|c| c == '_' || c.is_alphanumeric())
}

const I64: Repr = Repr::Scalar(ScalarKind::I64);
const BOOL: Repr = Repr::Scalar(ScalarKind::Bool);

struct Checker<'a> {
    f: &'a Function,
    fns: &'a [Function],
    /// Whether each variable has been defined (anywhere, ever).
    defined: Vec<bool>,
    /// Whether each variable is in scope now.
    in_scope: Vec<bool>,
    /// The variables each open scope defined, to take them out on exit.
    scopes: Vec<Vec<VarId>>,
    errors: Vec<String>,
}

impl<'a> Checker<'a> {
    fn new(f: &'a Function, fns: &'a [Function]) -> Checker<'a> {
        Checker {
            f,
            fns,
            defined: vec![false; f.vars.len()],
            in_scope: vec![false; f.vars.len()],
            scopes: vec![Vec::new()],
            errors: Vec::new(),
        }
    }

    fn err(&mut self, msg: String) {
        self.errors.push(msg);
    }

    fn name(&self, v: VarId) -> String {
        match self.f.vars.get(v.0 as usize) {
            Some(info) => format!("`{}`", info.name),
            None => format!("variable {}", v.0),
        }
    }

    fn ty(&self, v: VarId) -> Option<&'a Repr> {
        self.f.vars.get(v.0 as usize).map(|info| &info.ty)
    }

    fn define(&mut self, v: VarId) {
        let Some(defined) = self.defined.get_mut(v.0 as usize) else {
            self.err(format!("variable {} is defined but not declared in `vars`", v.0));
            return;
        };
        if *defined {
            let name = self.name(v);
            self.err(format!("{name} is defined twice"));
            return;
        }
        *defined = true;
        self.in_scope[v.0 as usize] = true;
        if let Some(scope) = self.scopes.last_mut() {
            scope.push(v);
        }
    }

    /// Checks a use of `v`; returns its type when it is in scope.
    fn use_var(&mut self, v: VarId) -> Option<&'a Repr> {
        match self.in_scope.get(v.0 as usize) {
            None => {
                self.err(format!("variable {} is used but not declared in `vars`", v.0));
                None
            }
            Some(false) => {
                let name = self.name(v);
                self.err(format!("{name} is used where it is not defined"));
                None
            }
            Some(true) => self.ty(v),
        }
    }

    fn push(&mut self) {
        self.scopes.push(Vec::new());
    }

    fn pop(&mut self) {
        if let Some(scope) = self.scopes.pop() {
            for v in scope {
                self.in_scope[v.0 as usize] = false;
            }
        }
    }

    fn expect_ty(&mut self, what: &str, found: &Repr, want: &Repr) {
        if found != want {
            self.err(format!("{what} has type `{}`, expected `{}`", ty_text(found), ty_text(want)));
        }
    }

    fn check_dim(&mut self, d: &Dim) {
        for v in d.vars() {
            let v = VarId(v.0);
            if let Some(ty) = self.use_var(v) {
                if ty != &I64 {
                    let name = self.name(v);
                    let text = d.display(&|v| self.name(VarId(v.0)).trim_matches('`').to_string());
                    self.err(format!("dimension `{text}` mentions {name} of type `{}`", ty_text(ty)));
                }
            }
        }
    }

    fn check_fn(&mut self) {
        let f = self.f;
        if !is_identifier(&f.name) {
            self.err(format!("`{}` is not a valid function name", f.name));
        }
        let mut names = HashSet::new();
        for info in &f.vars {
            if !is_identifier(&info.name) {
                self.err(format!("variable name `{}` is not an identifier", info.name));
            }
            if !names.insert(info.name.as_str()) {
                self.err(format!("variable name `{}` is not unique", info.name));
            }
        }
        for &p in &f.params {
            self.define(p);
        }
        for check in &f.entry {
            match check {
                EntryCheck::BindDim { dim, param, path, axis } => {
                    self.check_param_axis(*param, path, *axis);
                    self.define(*dim);
                    if let Some(ty) = self.ty(*dim) {
                        let what = format!("dimension {}", self.name(*dim));
                        self.expect_ty(&what, ty, &I64);
                    }
                }
                EntryCheck::CheckDim { param, path, axis, expected, .. } => {
                    self.check_param_axis(*param, path, *axis);
                    self.check_dim(expected);
                }
            }
        }
        // A sharded function's whole extent and offset, bound after the
        // ranks agree at entry.
        if let Some(parts) = f.shard.as_ref().and_then(|s| s.parts.as_ref()) {
            for v in [parts.global, parts.offset] {
                self.define(v);
            }
            for v in parts.agreed.iter().chain([&parts.local]) {
                self.use_var(*v);
            }
        }
        for s in &f.body {
            self.check_stmt(s);
        }
        self.check_expr(&f.result);
        self.expect_ty("the result", &f.result.ty, &f.ret);
    }

    fn check_param_axis(&mut self, param: VarId, path: &[u32], axis: usize) {
        if !self.f.params.contains(&param) {
            let name = self.name(param);
            self.err(format!("entry check of {name}, which is not a parameter"));
            return;
        }
        match self.ty(param).and_then(|t| crate::ir::tuple_element(t, path)) {
            Some(Repr::Tensor(_, rank)) if axis < *rank => {}
            Some(Repr::Strs) if axis == 0 => {}
            ty => {
                let name = self.name(param);
                self.err(format!(
                    "entry check of axis {axis} of {name}{path:?} of type `{}`",
                    ty.map_or("?".to_string(), ty_text)
                ));
            }
        }
    }

    fn check_stmt(&mut self, s: &Stmt) {
        match s {
            Stmt::Let { var, value } => {
                self.check_expr(value);
                if let Some(ty) = self.ty(*var) {
                    let what = format!("the value of {}", self.name(*var));
                    self.expect_ty(&what, &value.ty, ty);
                }
                self.define(*var);
            }
            Stmt::Extent { var, value, .. } => {
                self.check_dim(value);
                if let Some(ty) = self.ty(*var) {
                    let what = format!("extent {}", self.name(*var));
                    self.expect_ty(&what, ty, &I64);
                }
                self.define(*var);
            }
            Stmt::SameExtent { a, b, .. } => {
                self.check_dim(a);
                self.check_dim(b);
            }
            Stmt::Tensor(def) => self.check_tensor(def),
            Stmt::Gemm(g) => self.check_gemm(g),
            Stmt::Conv(c) => self.check_conv(c),
            Stmt::Recurrence(r) => self.check_recurrence(r),
            Stmt::Rows(rows) => self.check_rows(rows),
            Stmt::CheckResultDim { tensor, path, axis, declared, .. } => {
                if let Some(ty) = self.use_var(*tensor).cloned() {
                    if !matches!(crate::ir::tuple_element(&ty, path), Some(Repr::Tensor(_, rank)) if axis < rank) {
                        let name = self.name(*tensor);
                        self.err(format!("result check of axis {axis} of {name}{path:?} of type `{}`", ty_text(&ty)));
                    }
                }
                self.check_dim(declared);
            }
            Stmt::Reshape { var, source, elem, dims } => {
                for d in dims {
                    self.check_dim(d);
                }
                let src = self.name(*source);
                match self.use_var(*source) {
                    Some(Repr::Tensor(k, _)) if k == elem => {}
                    other => {
                        let other = other.map_or("?".to_string(), ty_text);
                        self.err(format!("reshape of {src} of type `{other}`"));
                    }
                }
                if let Some(ty) = self.ty(*var) {
                    let what = format!("the reshape {}", self.name(*var));
                    self.expect_ty(&what, ty, &Repr::Tensor(*elem, dims.len()));
                }
                self.define(*var);
            }
            Stmt::Expr(e) => self.check_expr(e),
            Stmt::Sweep(w) => self.check_sweep(w),
            Stmt::Comm(crate::ir::Comm::HaloStart { tensor, step, .. }) => {
                self.use_var(*tensor);
                self.check_expr(step);
            }
            Stmt::Comm(crate::ir::Comm::HaloWait { tensor }) => {
                self.use_var(*tensor);
            }
            Stmt::Comm(c) => {
                let reads = c.reads();
                let first = reads.first().and_then(|&v| self.use_var(v).cloned());
                for &v in &reads[1..] {
                    self.use_var(v);
                }
                let Some(out) = c.defines() else { return };
                let expected = match (c, first) {
                    (
                        crate::ir::Comm::AllReduce { .. }
                        | crate::ir::Comm::Extend { .. }
                        | crate::ir::Comm::ExtendStart { .. },
                        Some(ty),
                    ) => Some(ty),
                    (crate::ir::Comm::AllReduceArg { .. }, Some(Repr::Scalar(_))) => {
                        Some(Repr::Scalar(ScalarKind::I64))
                    }
                    (crate::ir::Comm::AllReduceArg { .. }, Some(Repr::Tensor(_, r))) => {
                        Some(Repr::Tensor(ScalarKind::I64, r))
                    }
                    _ => None,
                };
                match (self.ty(out).cloned(), expected) {
                    (Some(ty), Some(want)) => self.expect_ty("a communication's result", &ty, &want),
                    _ => self.err(format!("communication into {} of an unusable value", self.name(out))),
                }
                self.define(out);
            }
        }
    }

    /// A sweep's parts in the order a back end runs them; what they define
    /// stays in scope after it (the sums' totals, `between` and `after`).
    fn check_sweep(&mut self, w: &Sweep) {
        // Only among the function's own statements (which make it one that
        // may give up), not in a block.
        if !self.f.body.iter().any(|s| matches!(s, Stmt::Sweep(b) if std::ptr::eq(&**b, w))) {
            self.err("a sweep inside a block".to_string());
        }
        self.check_dim(&w.steps);
        for v in [w.chunk, w.lo, w.hi] {
            self.define(v);
            if let Some(ty) = self.ty(v) {
                let what = format!("sweep variable {}", self.name(v));
                self.expect_ty(&what, ty, &I64);
            }
        }
        for r in [&w.primal, &w.adjoint] {
            if r.window.is_some() || r.seq.len() != 1 || r.seq[0].0 != 0 {
                self.err(format!("sweep recurrence {} is not one unwindowed sequence along axis 0", self.name(r.var)));
            }
        }
        self.check_recurrence(&w.primal);
        for s in &w.between {
            self.check_stmt(s);
        }
        self.check_recurrence(&w.adjoint);
        for s in &w.sums {
            self.check_dim(&s.full.0);
            self.check_dim(&s.full.1);
            self.define(s.time);
            for p in &s.prelude {
                if !matches!(p, Stmt::Tensor(_) | Stmt::Gemm(_)) {
                    self.err(format!("a chunk sum's prelude holds {p:?}"));
                }
                self.check_stmt(p);
            }
            let part = match &s.part {
                Stmt::Tensor(d) => d.var,
                Stmt::Let { var, .. } if matches!(self.ty(*var), Some(Repr::Scalar(_))) => *var,
                other => {
                    self.err(format!("chunk sum of {other:?}"));
                    continue;
                }
            };
            self.check_stmt(&s.part);
            if let (Some(ty), Some(want)) = (self.ty(s.total), self.ty(part)) {
                let what = format!("chunk total {}", self.name(s.total));
                self.expect_ty(&what, ty, want);
            }
            self.define(s.total);
        }
        for s in &w.after {
            self.check_stmt(s);
        }
    }

    fn check_gemm(&mut self, g: &Gemm) {
        let want = if g.batch.is_some() { 3 } else { 2 };
        if let Some(v) = g.slice {
            // One batch of a batched product: an index in scope, operands
            // of rank 3 read at it or matrices of rank 2.
            if g.batch.is_some() {
                self.err("gemm of one batch with a batch extent".to_string());
            }
            self.use_var(v);
        }
        let operand_rank = if g.slice.is_some() { 3 } else { want };
        for (t, axes) in [(g.a, &g.a_axes), (g.b, &g.b_axes)] {
            let name = self.name(t);
            match self.use_var(t) {
                Some(Repr::Tensor(k, rank)) => {
                    let mut sorted = axes.clone();
                    sorted.sort_unstable();
                    // A batched product's operand may be shared by every
                    // batch (rank 2, no batch axis).
                    let shared = (g.batch.is_some() || g.slice.is_some()) && *rank == 2;
                    let want = operand_rank;
                    let ok_rank = *rank == want || shared;
                    if *k != g.elem || !ok_rank || sorted != (0..*rank).collect::<Vec<_>>() {
                        self.err(format!(
                            "gemm operand {name} of type `{}` with axes {axes:?}",
                            ty_text(&Repr::Tensor(*k, *rank))
                        ));
                    }
                }
                Some(ty) => {
                    let text = ty_text(ty);
                    self.err(format!("gemm operand {name} of type `{text}`"));
                }
                None => {}
            }
        }
        for d in g.batch.iter().chain([&g.m, &g.n, &g.k]) {
            self.check_dim(d);
        }
        if !g.elem.is_float() {
            self.err(format!("gemm of `{}`", g.elem.name()));
        }
        if g.reference.var != g.out || g.reference.axes.len() != want {
            self.err("gemm whose reference loop nest defines another tensor".to_string());
        }
        if let Some(e) = &g.scale {
            // A scalar of the product's type, the same at every point.
            let invariant = match &e.kind {
                ExprKind::Lit(_) => true,
                ExprKind::Var(v) => !g.reference.axes.iter().any(|a| a.index == *v),
                _ => false,
            };
            if e.ty != Repr::Scalar(g.elem) || !invariant {
                self.err(format!("gemm scaled by a `{}` that is not a scalar of the product", ty_text(&e.ty)));
            }
            self.check_expr(e);
        }
        self.check_tensor(&g.reference);
    }

    /// A convolution's operands are tensors of its element type, of rank
    /// 4 or 3 (`x`, as its output), 4 (`k`) and 1 (`bias`); its reference
    /// defines its output over four axes, or three for a single image.
    fn check_conv(&mut self, c: &Conv) {
        let rank = c.reference.axes.len();
        for (t, want) in [(Some(c.x), rank), (Some(c.k), 4), (c.bias, 1)] {
            let Some(t) = t else { continue };
            let name = self.name(t);
            match self.use_var(t) {
                Some(Repr::Tensor(k, rank)) if *k == c.elem && *rank == want => {}
                Some(ty) => {
                    let text = ty_text(ty);
                    self.err(format!("conv operand {name} of type `{text}`"));
                }
                None => {}
            }
        }
        if !c.elem.is_float() {
            self.err(format!("conv of `{}`", c.elem.name()));
        }
        if c.reference.var != c.out || !(3..=4).contains(&rank) {
            self.err("conv whose reference loop nest defines another tensor".to_string());
        }
        for d in [&c.pad, &c.stride, &c.dilation] {
            self.check_dim(&d.0);
            self.check_dim(&d.1);
        }
        self.check_dim(&c.groups);
        let mut axes = c.k_axes;
        axes.sort_unstable();
        if axes != [0, 1, 2, 3] {
            self.err(format!("conv whose kernel axes {:?} are not a permutation", c.k_axes));
        }
        let mut order = c.out_order;
        order.sort_unstable();
        if order != [0, 1, 2, 3] || (rank == 3 && c.out_order != [0, 1, 2, 3]) {
            self.err(format!("conv whose result order {:?} is not a permutation of its axes", c.out_order));
        }
        if let Some(e) = &c.otherwise {
            self.check_expr(&e.when);
            self.check_expr(&e.value);
            if e.when.ty != Repr::Scalar(ScalarKind::Bool) || e.value.ty != Repr::Tensor(c.elem, rank) {
                self.err("conv whose run-time branch has the wrong types".to_string());
            }
        }
        self.check_tensor(&c.reference);
    }

    /// A row definition checks like its definition with the prelude's
    /// statements in a scope where the first axis's index is defined; the
    /// prelude's variables are out of scope after it.
    fn check_rows(&mut self, rows: &Rows) {
        let def = &rows.def;
        let Some(first) = def.axes.first() else {
            self.err(format!("rows of tensor {} without axes", self.name(def.var)));
            return;
        };
        if def.axes.len() < 2 {
            self.err(format!("rows of tensor {} of rank {}", self.name(def.var), def.axes.len()));
        }
        self.check_dim(&first.start);
        self.check_dim(&first.extent);
        self.push();
        self.define(first.index);
        for s in &rows.prelude {
            // Row groups of their own in a chain run per batch (`opt::slices`).
            if !matches!(s, Stmt::Let { .. } | Stmt::Tensor(_) | Stmt::Gemm(_) | Stmt::Reshape { .. } | Stmt::Rows(_)) {
                self.err(format!("a row prelude of tensor {} holds {s:?}", self.name(def.var)));
            }
            self.check_stmt(s);
        }
        // The first axis is defined already: check the rest as a
        // definition of its own, then the tensor's type.
        let inner = TensorDef { axes: def.axes[1..].to_vec(), ..def.clone() };
        self.push();
        for a in &inner.axes {
            self.check_dim(&a.start);
            self.check_dim(&a.extent);
            self.define(a.index);
        }
        self.check_expr(&def.body);
        self.expect_ty(&format!("the body of tensor {}", self.name(def.var)), &def.body.ty, &Repr::Scalar(def.elem));
        self.pop();
        self.pop();
        if def.domain_guards > 0 {
            self.err(format!("rows of tensor {} with domain guards", self.name(def.var)));
        }
        if let Some(ty) = self.ty(def.var) {
            self.expect_ty(&format!("tensor {}", self.name(def.var)), ty, &Repr::Tensor(def.elem, def.axes.len()));
        }
        self.define(def.var);
    }

    fn check_tensor(&mut self, def: &TensorDef) {
        let name = self.name(def.var);
        if let Some(ty) = self.ty(def.var) {
            self.expect_ty(&format!("tensor {name}"), ty, &Repr::Tensor(def.elem, def.axes.len()));
        }
        // Extents size the allocation before any loop runs; starts are
        // evaluated per point but are also plain dimensions of the scope.
        for a in &def.axes {
            self.check_dim(&a.start);
            self.check_dim(&a.extent);
        }
        self.push();
        for a in &def.axes {
            self.define(a.index);
            if let Some(ty) = self.ty(a.index) {
                let what = format!("axis index {}", self.name(a.index));
                self.expect_ty(&what, ty, &I64);
            }
        }
        self.check_expr(&def.body);
        self.expect_ty(&format!("the body of tensor {name}"), &def.body.ty, &Repr::Scalar(def.elem));
        self.pop();
        self.define(def.var);
        if def.domain_guards > 0 {
            let guards = match &def.body.kind {
                ExprKind::Guarded { wheres, .. } => {
                    wheres.iter().take_while(|w| matches!(w, WhereEntry::Guard(_))).count()
                }
                _ => 0,
            };
            if guards < def.domain_guards {
                self.err(format!("tensor {name} has {} domain guards but {guards} leading guards", def.domain_guards));
            }
        }
    }

    fn check_recurrence(&mut self, r: &Recurrence) {
        let name = self.name(r.var);
        let rank = r.extents.len();
        if let Some(ty) = self.ty(r.var) {
            self.expect_ty(&format!("recurrence {name}"), ty, &Repr::Tensor(r.elem, rank));
        }
        for d in &r.extents {
            self.check_dim(d);
        }
        if let Some(w) = &r.window {
            if w.axis >= rank || !w.slots.is_power_of_two() || r.seq.first().map(|(a, _)| *a) != Some(w.axis) {
                self.err(format!("recurrence {name} has a window {w:?} not on its outermost sequential axis"));
            }
        }
        // The tensor is readable inside its clauses.
        self.define(r.var);
        self.push();
        for (axis, l) in &r.seq {
            if *axis >= rank {
                self.err(format!("recurrence {name} loops over axis {axis} of {rank}"));
            }
            self.check_loops(std::slice::from_ref(l));
        }
        for c in &r.clauses {
            if c.cover.len() != r.seq.len() || c.at.len() != rank {
                self.err(format!(
                    "a clause of recurrence {name} with {} covers and {} indices",
                    c.cover.len(),
                    c.at.len()
                ));
            }
            for cv in &c.cover {
                if let Cover::Range(a, b) = cv {
                    self.check_dim(a);
                    self.check_dim(b);
                }
            }
            for (axis, at) in c.at.iter().enumerate() {
                let ok = match at {
                    RecIndex::Seq(k) => r.seq.get(*k).is_some_and(|(a, _)| *a == axis),
                    RecIndex::Loop(k) => *k < c.loops.len(),
                    RecIndex::Lit(n) => *n >= 0,
                };
                if !ok {
                    self.err(format!("a clause of recurrence {name} writes axis {axis} at {at:?}"));
                }
            }
            self.push();
            for s in &c.prelude {
                if !matches!(
                    s,
                    Stmt::Tensor(_)
                        | Stmt::Gemm(_)
                        | Stmt::Comm(
                            crate::ir::Comm::HaloStart { .. }
                                | crate::ir::Comm::HaloWait { .. }
                                | crate::ir::Comm::AllReduce { .. }
                                | crate::ir::Comm::AllReduceArg { .. }
                        )
                ) {
                    self.err(format!("a clause prelude of recurrence {name} holds {s:?}"));
                }
                self.check_stmt(s);
            }
            self.check_loops(&c.loops);
            self.check_expr(&c.body);
            self.expect_ty(&format!("a clause of recurrence {name}"), &c.body.ty, &Repr::Scalar(r.elem));
            self.pop();
        }
        self.pop();
    }

    fn check_loops(&mut self, loops: &[Loop]) {
        for l in loops {
            self.check_dim(&l.start);
            self.check_dim(&l.end);
            self.define(l.index);
            if let Some(ty) = self.ty(l.index) {
                let what = format!("loop index {}", self.name(l.index));
                self.expect_ty(&what, ty, &I64);
            }
        }
    }

    fn check_wheres(&mut self, wheres: &[WhereEntry]) {
        for w in wheres {
            match w {
                WhereEntry::Bind(v, value) => {
                    self.check_expr(value);
                    if let Some(ty) = self.ty(*v) {
                        let what = format!("where-binding {}", self.name(*v));
                        self.expect_ty(&what, &value.ty, ty);
                    }
                    self.define(*v);
                }
                WhereEntry::Guard(g) => {
                    self.check_expr(g);
                    self.expect_ty("a guard", &g.ty, &BOOL);
                }
            }
        }
    }

    fn check_expr(&mut self, e: &Expr) {
        match &e.kind {
            ExprKind::Lit(l) => self.check_lit(l, &e.ty),
            ExprKind::Var(v) => {
                if let Some(ty) = self.use_var(*v) {
                    let what = format!("a use of {}", self.name(*v));
                    self.expect_ty(&what, &e.ty, ty);
                }
            }
            ExprKind::Dim(d) => {
                self.check_dim(d);
                self.expect_ty("a dimension value", &e.ty, &I64);
            }
            ExprKind::Unary(op, x) => {
                self.check_expr(x);
                match op {
                    UnOp::Neg => {
                        if !matches!(x.ty, Repr::Scalar(k) if k.is_signed()) {
                            self.err(format!("negation of a value of type `{}`", ty_text(&x.ty)));
                        }
                        self.expect_ty("a negation", &e.ty, &x.ty);
                    }
                    UnOp::Not => {
                        self.expect_ty("the operand of `!`", &x.ty, &BOOL);
                        self.expect_ty("`!`", &e.ty, &BOOL);
                    }
                }
            }
            ExprKind::Binary(op, a, b) => {
                self.check_expr(a);
                self.check_expr(b);
                self.check_binary(*op, a, b, &e.ty);
            }
            ExprKind::Cast(x, k) => {
                self.check_expr(x);
                if !matches!(x.ty, Repr::Scalar(_)) {
                    self.err(format!("a cast of a value of type `{}`", ty_text(&x.ty)));
                }
                self.expect_ty("a cast", &e.ty, &Repr::Scalar(*k));
            }
            ExprKind::Intrinsic(i, args) => {
                args.iter().for_each(|a| self.check_expr(a));
                self.check_intrinsic(*i, args, &e.ty);
            }
            ExprKind::Call { func, args } => {
                args.iter().for_each(|a| self.check_expr(a));
                let Some(callee) = self.fns.get(func.index()) else {
                    self.err(format!("a call of function {}, which is not a function of the program", func.0));
                    return;
                };
                let func = &callee.name;
                if callee.params.len() != args.len() {
                    self.err(format!(
                        "a call of `{func}` with {} arguments, it takes {}",
                        args.len(),
                        callee.params.len()
                    ));
                    return;
                }
                for (n, (p, a)) in callee.params.iter().zip(args).enumerate() {
                    if let Some(pty) = callee.vars.get(p.0 as usize).map(|info| &info.ty) {
                        self.expect_ty(&format!("argument {n} of `{func}`"), &a.ty, pty);
                    }
                }
                self.expect_ty(&format!("a call of `{func}`"), &e.ty, &callee.ret);
            }
            ExprKind::Read { tensor, indices, .. } => {
                indices.iter().for_each(|i| self.check_expr(i));
                self.check_indices(indices);
                match self.use_var(*tensor) {
                    Some(Repr::Tensor(k, rank)) => {
                        if indices.len() != *rank {
                            let name = self.name(*tensor);
                            self.err(format!(
                                "a read of {name} with {} indices, but its rank is {rank}",
                                indices.len()
                            ));
                        }
                        self.expect_ty("a read", &e.ty, &Repr::Scalar(*k));
                    }
                    Some(ty) => {
                        let name = self.name(*tensor);
                        self.err(format!("a read of {name} of type `{}`", ty_text(ty)));
                    }
                    None => {}
                }
            }
            ExprKind::View { tensor, indices } => {
                indices.iter().for_each(|i| self.check_expr(i));
                self.check_indices(indices);
                match self.use_var(*tensor) {
                    Some(Repr::Tensor(k, rank)) => {
                        if indices.len() >= *rank {
                            let name = self.name(*tensor);
                            self.err(format!(
                                "a view of {name} with {} indices, but its rank is {rank}",
                                indices.len()
                            ));
                        } else {
                            self.expect_ty("a view", &e.ty, &Repr::Tensor(*k, rank - indices.len()));
                        }
                    }
                    Some(ty) => {
                        let name = self.name(*tensor);
                        self.err(format!("a view of {name} of type `{}`", ty_text(ty)));
                    }
                    None => {}
                }
            }
            ExprKind::Reduce { op, loops, wheres, body } => {
                // No loops: a reduction over one point (a rest index that
                // spans no axis), under its guards.
                self.push();
                self.check_loops(loops);
                self.check_wheres(wheres);
                self.check_expr(body);
                self.pop();
                match op {
                    RedOp::All | RedOp::Any => {
                        self.expect_ty("the body of `all`/`any`", &body.ty, &BOOL);
                        self.expect_ty("`all`/`any`", &e.ty, &BOOL);
                    }
                    RedOp::ArgMax | RedOp::ArgMin => {
                        if !matches!(body.ty, Repr::Scalar(k) if k != ScalarKind::Bool) {
                            self.err(format!("the body of `{}` has type `{}`", op.name(), ty_text(&body.ty)));
                        }
                        self.expect_ty("`argmax`/`argmin`", &e.ty, &I64);
                    }
                    RedOp::Sum | RedOp::Prod | RedOp::Max | RedOp::Min => {
                        if !matches!(body.ty, Repr::Scalar(k) if k != ScalarKind::Bool) {
                            self.err(format!("the body of `{}` has type `{}`", op.name(), ty_text(&body.ty)));
                        }
                        self.expect_ty(&format!("`{}`", op.name()), &e.ty, &body.ty);
                    }
                }
            }
            ExprKind::Guarded { wheres, body } => {
                self.push();
                self.check_wheres(wheres);
                self.check_expr(body);
                self.pop();
                if !matches!(body.ty, Repr::Scalar(_)) && wheres.iter().any(|w| matches!(w, WhereEntry::Guard(_))) {
                    self.err(format!("a guarded value of type `{}` has no zero", ty_text(&body.ty)));
                }
                self.expect_ty("a guarded value", &e.ty, &body.ty);
            }
            ExprKind::If { cond, then, els } => {
                self.check_expr(cond);
                self.expect_ty("a condition", &cond.ty, &BOOL);
                self.push();
                self.check_expr(then);
                self.pop();
                self.push();
                self.check_expr(els);
                self.pop();
                self.expect_ty("the `then` branch", &then.ty, &e.ty);
                self.expect_ty("the `else` branch", &els.ty, &e.ty);
            }
            ExprKind::Block { stmts, result } => {
                self.push();
                stmts.iter().for_each(|s| self.check_stmt(s));
                self.check_expr(result);
                self.pop();
                self.expect_ty("a block", &e.ty, &result.ty);
            }
            ExprKind::Tuple(items) => {
                items.iter().for_each(|x| self.check_expr(x));
                let want = Repr::Tuple(items.iter().map(|x| x.ty.clone()).collect());
                if !(items.is_empty() && e.ty == Repr::Unit) {
                    self.expect_ty("a tuple", &e.ty, &want);
                }
            }
            ExprKind::Field(base, n) => {
                self.check_expr(base);
                match &base.ty {
                    Repr::Tuple(items) if (*n as usize) < items.len() => {
                        self.expect_ty("a field", &e.ty, &items[*n as usize])
                    }
                    ty => self.err(format!("field {n} of a value of type `{}`", ty_text(ty))),
                }
            }
            ExprKind::ArrayLit { shape, elems } => {
                elems.iter().for_each(|x| self.check_expr(x));
                let size = shape.iter().try_fold(1usize, |acc, n| acc.checked_mul(*n));
                if size != Some(elems.len()) {
                    self.err(format!("an array literal of shape {shape:?} has {} elements", elems.len()));
                }
                match e.ty {
                    Repr::Tensor(k, rank) if rank == shape.len() => {
                        for x in elems {
                            self.expect_ty("an array element", &x.ty, &Repr::Scalar(k));
                        }
                    }
                    Repr::Strs if shape.len() == 1 => {
                        for x in elems {
                            self.expect_ty("a string of a vector", &x.ty, &Repr::Str);
                        }
                    }
                    ref ty => self.err(format!("an array literal of shape {shape:?} has type `{}`", ty_text(ty))),
                }
            }
            ExprKind::Format(parts) => {
                for p in parts {
                    if let FmtPart::Value(x, _) = p {
                        self.check_expr(x);
                    }
                }
                self.expect_ty("a formatted string", &e.ty, &Repr::Str);
            }
            ExprKind::Print(xs) => {
                xs.iter().for_each(|x| self.check_expr(x));
                self.expect_ty("print", &e.ty, &Repr::Unit);
            }
            ExprKind::DynMap { inputs, elems, body } => {
                if inputs.len() != elems.len() {
                    self.err(format!("an elementwise map of {} inputs with {} elements", inputs.len(), elems.len()));
                }
                for (x, v) in inputs.iter().zip(elems) {
                    self.check_expr(x);
                    let (Repr::Tensor(k, _) | Repr::Dyn(k)) = x.ty else {
                        let text = ty_text(&x.ty);
                        self.err(format!("an elementwise map of `{text}`"));
                        continue;
                    };
                    if let Some(ty) = self.ty(*v) {
                        let what = format!("element {}", self.name(*v));
                        self.expect_ty(&what, ty, &Repr::Scalar(k));
                    }
                }
                self.push();
                elems.iter().for_each(|v| self.define(*v));
                self.check_expr(body);
                self.pop();
                match body.ty {
                    Repr::Scalar(k) => self.expect_ty("an elementwise map", &e.ty, &Repr::Dyn(k)),
                    _ => self.err("an elementwise map of a non-scalar body".to_string()),
                }
            }
            ExprKind::Fs { op, args } => {
                if args.len() != op.params().len() {
                    self.err(format!("`{}` with {} arguments", op.name(), args.len()));
                }
                for (a, want) in args.iter().zip(op.params()) {
                    self.check_expr(a);
                    self.expect_ty(op.name(), &a.ty, &fs_value_ty(*want));
                }
                self.expect_ty(op.name(), &e.ty, &fs_value_ty(op.result()));
            }
            ExprKind::LoadNpy { path, extents } => {
                self.check_expr(path);
                self.expect_ty("a path", &path.ty, &Repr::Str);
                extents.iter().flatten().for_each(|d| self.check_dim(d));
                if !matches!(e.ty, Repr::Tensor(_, rank) if rank == extents.len()) {
                    let text = ty_text(&e.ty);
                    self.err(format!("`load_npy` of type `{text}` with {} extents", extents.len()));
                }
            }
            ExprKind::ShapeCast { value, extents, .. } => {
                self.check_expr(value);
                extents.iter().flatten().for_each(|d| self.check_dim(d));
                let fits = match (&value.ty, &e.ty) {
                    (Repr::Tensor(a, _) | Repr::Dyn(a), Repr::Dyn(b)) => a == b && extents.is_empty(),
                    (Repr::Tensor(a, _) | Repr::Dyn(a), Repr::Tensor(b, rank)) => a == b && *rank == extents.len(),
                    _ => false,
                };
                if !fits {
                    let (from, to) = (ty_text(&value.ty), ty_text(&e.ty));
                    self.err(format!("a conversion from `{from}` to `{to}` with {} extents", extents.len()));
                }
            }
            ExprKind::SaveNpy { path, value } => {
                self.check_expr(path);
                self.check_expr(value);
                self.expect_ty("a path", &path.ty, &Repr::Str);
                if !matches!(value.ty, Repr::Tensor(..)) {
                    let text = ty_text(&value.ty);
                    self.err(format!("`save_npy` of `{text}`"));
                }
                self.expect_ty("save_npy", &e.ty, &Repr::Unit);
            }
            ExprKind::Len { tensor, axis } => {
                match self.use_var(*tensor) {
                    Some(Repr::Tensor(_, rank)) if axis < rank => {}
                    Some(Repr::Dyn(_)) => {}
                    Some(Repr::Jagged(_) | Repr::Str | Repr::Strs) if *axis == 0 => {}
                    Some(ty) => {
                        let text = ty_text(ty);
                        self.err(format!("length of axis {axis} of a value of type `{text}`"));
                    }
                    None => {}
                }
                self.expect_ty("a length", &e.ty, &I64);
            }
            ExprKind::DynShape { op, value, arg } => {
                self.check_expr(value);
                self.check_expr(arg);
                let fits = match (&value.ty, &arg.ty, &e.ty) {
                    (Repr::Tensor(a, _) | Repr::Dyn(a), Repr::Tensor(i, 1), Repr::Dyn(b)) => a == b && i.is_int(),
                    _ => false,
                };
                if !fits {
                    let (v, a) = (ty_text(&value.ty), ty_text(&arg.ty));
                    self.err(format!("`{}` of `{v}` by `{a}`", op.name()));
                }
            }
            ExprKind::JaggedLit { rows } => {
                rows.iter().for_each(|x| self.check_expr(x));
                let Repr::Jagged(k) = e.ty else {
                    self.err(format!("a jagged literal of type `{}`", ty_text(&e.ty)));
                    return;
                };
                for r in rows {
                    self.expect_ty("a row of a jagged array", &r.ty, &Repr::Tensor(k, 1));
                }
            }
            ExprKind::JaggedRow { jagged, index } => {
                self.check_expr(index);
                self.expect_ty("a row index", &index.ty, &I64);
                if let Some(ty) = self.use_var(*jagged) {
                    match ty {
                        Repr::Jagged(k) => {
                            let row = Repr::Tensor(*k, 1);
                            self.expect_ty("a row of a jagged array", &e.ty, &row);
                        }
                        Repr::Str => self.expect_ty("a character of a string", &e.ty, &Repr::Str),
                        Repr::Strs => self.expect_ty("a string of a vector", &e.ty, &Repr::Str),
                        other => {
                            let text = ty_text(other);
                            self.err(format!("a row of a value of type `{text}`"));
                        }
                    }
                }
            }
            ExprKind::ShapeOf { tensor } => {
                if let Some(ty) = self.use_var(*tensor) {
                    if !matches!(ty, Repr::Dyn(_)) {
                        let text = ty_text(ty);
                        self.err(format!("a run-time shape of a value of type `{text}`"));
                    }
                }
                self.expect_ty("a shape", &e.ty, &Repr::Tensor(ScalarKind::I64, 1));
            }
            ExprKind::Collect { steps, body, elem_shape } => {
                elem_shape.iter().for_each(|d| self.check_dim(d));
                self.push();
                for s in steps {
                    match s {
                        CollectStep::Loop(l) => self.check_loops(std::slice::from_ref(l)),
                        CollectStep::Where(w) => self.check_wheres(std::slice::from_ref(w)),
                    }
                }
                self.check_expr(body);
                self.pop();
                match &body.ty {
                    Repr::Tensor(k, 1) if matches!(e.ty, Repr::Jagged(_)) && elem_shape.is_empty() => {
                        self.expect_ty("a comprehension of rows", &e.ty, &Repr::Jagged(*k))
                    }
                    Repr::Scalar(k) if elem_shape.is_empty() => {
                        self.expect_ty("a comprehension", &e.ty, &Repr::Tensor(*k, 1))
                    }
                    Repr::Tensor(k, rank) if *rank == elem_shape.len() => {
                        self.expect_ty("a comprehension", &e.ty, &Repr::Tensor(*k, rank + 1))
                    }
                    Repr::Str if elem_shape.is_empty() => self.expect_ty("a comprehension", &e.ty, &Repr::Strs),
                    other => {
                        let text = ty_text(other);
                        self.err(format!("a comprehension of `{text}`"));
                    }
                }
            }
            ExprKind::Assert { cond, message } => {
                self.check_expr(cond);
                self.check_expr(message);
                if !matches!(cond.ty, Repr::Tensor(ScalarKind::Bool, _)) {
                    self.expect_ty("an assert condition", &cond.ty, &BOOL);
                }
                self.expect_ty("an assert message", &message.ty, &Repr::Str);
                self.expect_ty("assert", &e.ty, &Repr::Unit);
            }
        }
    }

    fn check_indices(&mut self, indices: &[Expr]) {
        for i in indices {
            self.expect_ty("an index", &i.ty, &I64);
        }
    }

    fn check_lit(&mut self, l: &Literal, ty: &Repr) {
        match (l, ty) {
            (Literal::Int(v), Repr::Scalar(k)) if k.is_int() => {
                if !crate::base::scalar::int_fits(*v, *k) {
                    self.err(format!("integer literal {v} does not fit `{}`", k.name()));
                }
            }
            (Literal::Int(_), Repr::Scalar(k)) if k.is_float() => {}
            (Literal::Float(text), Repr::Scalar(k)) if k.is_float() => {
                let cleaned: String = text.chars().filter(|c| *c != '_').collect();
                if cleaned.trim_start_matches('-').parse::<f64>().is_err() {
                    self.err(format!("float literal `{text}` is not a number"));
                }
            }
            (Literal::Bool(_), Repr::Scalar(ScalarKind::Bool)) | (Literal::Str(_), Repr::Str) => {}
            (l, ty) => self.err(format!("literal {l:?} of type `{}`", ty_text(ty))),
        }
    }

    fn check_binary(&mut self, op: BinOp, a: &Expr, b: &Expr, ty: &Repr) {
        let what = format!("`{}`", op.symbol());
        let text = matches!((&a.ty, &b.ty), (Repr::Str, Repr::Str) | (Repr::Strs, Repr::Strs));
        if text && matches!(op, BinOp::Eq | BinOp::Ne) {
            self.expect_ty(&what, ty, &BOOL);
            return;
        }
        let (Repr::Scalar(ka), Repr::Scalar(kb)) = (&a.ty, &b.ty) else {
            self.err(format!("{what} of `{}` and `{}`", ty_text(&a.ty), ty_text(&b.ty)));
            return;
        };
        if op == BinOp::Pow {
            let ok = (ka.is_float() && (kb == ka || kb.is_int())) || (ka.is_int() && kb.is_int());
            if !ok {
                self.err(format!("{what} of `{}` and `{}`", ka.name(), kb.name()));
            }
            self.expect_ty(&what, ty, &a.ty);
            return;
        }
        if ka != kb {
            self.err(format!("{what} of `{}` and `{}`", ka.name(), kb.name()));
        }
        if op.is_logical() {
            self.expect_ty(&format!("the operands of {what}"), &a.ty, &BOOL);
            self.expect_ty(&what, ty, &BOOL);
        } else if op.is_comparison() {
            self.expect_ty(&what, ty, &BOOL);
        } else {
            if *ka == ScalarKind::Bool {
                self.err(format!("{what} of `bool`"));
            }
            self.expect_ty(&what, ty, &a.ty);
        }
    }

    fn check_intrinsic(&mut self, i: Intrinsic, args: &[Expr], ty: &Repr) {
        use crate::base::intrinsic::Signature;
        if args.len() != i.arity() {
            self.err(format!("`{}` with {} arguments", i.name(), args.len()));
            return;
        }
        let Repr::Scalar(k) = args[0].ty else {
            self.err(format!("`{}` of a value of type `{}`", i.name(), ty_text(&args[0].ty)));
            return;
        };
        let same = || args[1].ty == args[0].ty;
        let ok = match (i, i.signature()) {
            (Intrinsic::Powf, _) => k.is_float() && same(),
            (Intrinsic::Powi, _) => k.is_float() && matches!(args[1].ty, Repr::Scalar(e) if e.is_int()),
            (Intrinsic::IntPow, _) => k.is_int() && matches!(args[1].ty, Repr::Scalar(e) if e.is_int()),
            (_, Signature::FloatUnary) => k.is_float(),
            (_, Signature::SignedUnary) => k.is_signed(),
            (_, Signature::NumUnary) => k != ScalarKind::Bool,
            (_, Signature::NumBinary) => k != ScalarKind::Bool && same(),
            (_, Signature::FloatBinary) => k.is_float() && same(),
            (_, Signature::IntUnary) => k.is_int(),
            (_, Signature::IntBinary) => k.is_int() && same(),
            (_, Signature::Pow) => false,
        };
        if !ok {
            let tys: Vec<String> = args.iter().map(|a| ty_text(&a.ty)).collect();
            self.err(format!("`{}` of `{}`", i.name(), tys.join("`, `")));
        }
        self.expect_ty(&format!("`{}`", i.name()), ty, &args[0].ty);
    }
}

/// The lowered type of an `FsOp` argument or result.
fn fs_value_ty(v: FsValue) -> Repr {
    match v {
        FsValue::Str => Repr::Str,
        FsValue::Strs => Repr::Strs,
        FsValue::Bool => Repr::Scalar(ScalarKind::Bool),
        FsValue::I64 => Repr::Scalar(ScalarKind::I64),
        FsValue::StrPair => Repr::Tuple(vec![Repr::Str, Repr::Str]),
    }
}
