//! Function signatures: declaring each function's parameter and result
//! types with its entry plan, analyzing a function's body, and checking the
//! body's result against the declared one.

use std::collections::HashMap;

use super::cx::{Cx, FnState, Saved};
use super::{dim_var, EntryPlan, FnSig, ResultCheck, Ty, HIDDEN_DIM_BASE};
use crate::base::dim::{Dim, DimVar, Truth};
use crate::base::scalar::ScalarKind;
use crate::base::span::Span;
use crate::diag::Diagnostic;
use crate::hir::{ExprId, ExprKind, FnId, TyAnn};

impl<'a> Cx<'a> {
    pub(super) fn declare_sig(&mut self, f: FnId) {
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

    pub(super) fn analyze_fn(&mut self, f: FnId) {
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
        let outer_instance = std::mem::replace(&mut self.in_instance, self.hir.fns[f].origin.is_some());
        // An untyped parameter takes its type from the argument: a literal
        // argument's type is decided like a literal `let`'s, keyed by the
        // generic function's parameter (instances are remade).
        // Only scalars: a literal argument is one.
        if let Some(&(generic, _)) = self.hir.fns[f].origin.as_ref() {
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
        if let Some(&(generic, call)) = self.hir.fns[f].origin.as_ref() {
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
        // The untyped parameters, which took the arguments' types; tensor
        // extents are the instance's own symbols, so only ranks are shown.
        let shown = |t: &Ty| match t {
            Ty::Tensor(k, dims) => format!("[{}; {}]", k.name(), vec!["_"; dims.len()].join(", ")),
            other => self.t.show_ty(other),
        };
        let untyped: Vec<String> = match self.t.sigs.get(inst.index()).and_then(|s| s.as_ref()) {
            Some(sig) => self.hir.fns[generic]
                .params
                .iter()
                .zip(&sig.params)
                .filter(|(p, _)| p.ty.is_none())
                .map(|(p, t)| format!("`{}: {}`", self.name(p.def), shown(t)))
                .collect(),
            None => Vec::new(),
        };
        let mut d = Diagnostic::error(call, format!("`{name}` cannot be called with these arguments"));
        let generic_note = match untyped.len() {
            0 => format!("`{name}` is generic; its body is checked for each combination of argument types"),
            1..=4 => format!(
                "`{name}` is generic; its body is checked for each combination of argument types, here {}",
                untyped.join(", ")
            ),
            n => format!(
                "`{name}` is generic; its body is checked for each combination of argument types (here of its {n} untyped parameters)"
            ),
        };
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
            // One rank: another shape says what the body has (the likely
            // fix when the declaration was a guess); another element type
            // (`argmax` gives `i64` where `i32` is declared) how to convert.
            let same_rank = match (found, declared) {
                (Ty::Scalar(_), Ty::Scalar(_)) => true,
                (Ty::Tensor(_, a), Ty::Tensor(_, b)) => a.len() == b.len(),
                _ => false,
            };
            match (found.elem(), declared.elem()) {
                (Some(kf), Some(kd)) if same_rank && kf == kd && matches!(found, Ty::Tensor(..)) => {
                    d = d.help(format!(
                        "declare the result as `{}`, or change the body to give `{}`",
                        cx.t.show_ty(found),
                        cx.t.show_ty(declared)
                    ));
                }
                (Some(kf), Some(kd)) if same_rank && kf != kd && kf != ScalarKind::Bool && kd != ScalarKind::Bool => {
                    d = d.help(format!(
                        "convert the result with `(...) as {}`, or declare the type the body has",
                        cx.t.show_ty(declared)
                    ));
                }
                _ => {}
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
                    let truth = a.prove_eq(b);
                    let different = match truth {
                        Truth::True => false,
                        Truth::False => true,
                        Truth::Unknown => self.different_dimensions(a, b),
                    };
                    if different {
                        let at = if path.is_empty() {
                            String::new()
                        } else {
                            format!(
                                " of result element {}",
                                path.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(".")
                            )
                        };
                        let why = if truth == Truth::Unknown {
                            ", a different dimension (dimension symbols name distinct sizes)"
                        } else {
                            ""
                        };
                        return Err(Some(format!(
                            "axis {axis}{at} is declared as `{}` but inferred as `{}`{why}",
                            self.t.show_dim(a),
                            self.t.show_dim(b)
                        )));
                    }
                    if truth == Truth::Unknown {
                        checks.push(check(axis, a));
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
}

pub(super) fn collect_dims(t: &Ty, f: &mut dyn FnMut(&Dim)) {
    match t {
        Ty::Tensor(_, dims) => dims.iter().for_each(f),
        Ty::Tuple(items) => items.iter().for_each(|t| collect_dims(t, f)),
        _ => {}
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
