//! Calls of functions: instances of generic functions, recursive calls,
//! and binding the callee's dimensions from the arguments.

use std::collections::HashMap;

use super::literal::is_float_lit;
use crate::analysis::cx::{Cx, FnState};
use crate::analysis::sig::collect_dims;
use crate::analysis::{dim_var, FnSig, MonoRequest, Ty, HIDDEN_DIM_BASE};
use crate::base::dim::{Dim, DimVar, Truth};
use crate::base::scalar::ScalarKind;
use crate::base::span::Span;
use crate::diag::Diagnostic;
use crate::hir::{Callee, DefId, DefKind, ExprId, FnId};

impl<'a> Cx<'a> {
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

    pub(super) fn infer_call(
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
                let named = self.hir.fns[f].origin.as_ref().map_or(func.def, |(g, _)| self.hir.fns[*g].def);
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
                            let shown = match self.hir.fns[f].origin.as_ref() {
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
        if let Some(&inst) = self.inst.calls.get(&e) {
            if self.inst.broken.contains(&inst) {
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
                // The instance's body may have made this integer literal a
                // float (see `float_literal_argument`).
                let promoted = self.inst.literal_args.get(&(e, i)).copied().filter(|_| !float);
                let decided = self.inst.literal_types.get(&func.params[i].def).map(|&(k, _)| k).filter(of_kind);
                let hint = promoted.or(decided).or_else(|| tys.iter().filter_map(|t| t.elem()).find(of_kind));
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
}

fn is_callee_var(sig: &FnSig, v: DimVar) -> bool {
    let mut found = false;
    for p in &sig.params {
        collect_dims(p, &mut |d| found |= d.vars().contains(&v));
    }
    found
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
