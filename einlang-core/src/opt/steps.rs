//! Matrix products inside recurrence steps: an RNN's `sum[k](h[t - 1, n, k]
//! * w[k, j])` is, at each step, the product of the previous step (a `B x
//! H` matrix) with `w`. Computed point by point it is a dot product per
//! point; here the clause gets a prelude that copies the earlier step into
//! a tensor of its own and multiplies it by a GEMM, and the clause reads
//! the product.
//!
//! A clause qualifies when its value holds a sum that `opt::gemm` takes for
//! a matrix product over the clause's loops (from 0, two or three of them)
//! once the reads of the recurrence at `t - lag` (a constant lag along its
//! only sequential loop, unchecked) read the copy instead. Host code only.

use crate::base::dim::Dim;
use crate::base::ops::BinOp;
use crate::base::scalar::ScalarKind;
use crate::ir::cost::expr_cost;
use crate::ir::visit;
use crate::ir::{Axis, Expr, ExprKind, Function, Literal, Recurrence, Repr, Stmt, TensorDef, VarId};

/// Gives the qualifying clauses of `f`'s top-level recurrences their
/// per-step products.
pub fn run(f: &mut Function) {
    for i in 0..f.body.len() {
        let Stmt::Recurrence(r) = &f.body[i] else { continue };
        let mut r = r.clone();
        rewrite(f, &mut r);
        f.body[i] = Stmt::Recurrence(r);
    }
}

fn rewrite(f: &mut Function, r: &mut Recurrence) {
    let [(axis, seq)] = r.seq.as_slice() else { return };
    let (axis, t) = (*axis, seq.index);
    let elem = r.elem;
    if !matches!(elem, ScalarKind::F32 | ScalarKind::F64) {
        return;
    }
    for ci in 0..r.clauses.len() {
        let c = &r.clauses[ci];
        if !c.prelude.is_empty() || !(2..=3).contains(&c.loops.len()) || c.loops.iter().any(|l| l.start != Dim::zero())
        {
            continue;
        }
        // The lags of the unchecked reads at a constant lag, each tried in
        // turn for a product.
        let mut lags = Vec::new();
        find_lags(&c.body, r.var, axis, t, &mut lags);
        for lag in lags {
            let c = &r.clauses[ci];
            // The copy of step `t - lag`, over the recurrence's other axes.
            let i64_ty = Repr::Scalar(ScalarKind::I64);
            let name = format!("{}_prev", f.var(r.var).source_name);
            let prev = f.add_var(&name, Repr::Tensor(elem, r.extents.len() - 1));
            let mut axes = Vec::new();
            let mut indices = Vec::new();
            for (a, extent) in r.extents.iter().enumerate() {
                if a == axis {
                    indices.push(minus(var(t, &i64_ty), lag));
                } else {
                    let source = format!("p{a}");
                    let v = f.add_var(&source, i64_ty.clone());
                    axes.push(Axis { index: v, start: Dim::zero(), extent: extent.clone() });
                    indices.push(var(v, &i64_ty));
                }
            }
            let copy_body =
                Expr { kind: ExprKind::Read { tensor: r.var, indices, checked: false }, ty: Repr::Scalar(elem) };
            let copy = TensorDef {
                var: prev,
                elem,
                axes,
                cost_per_point: expr_cost(&copy_body),
                body: copy_body,
                domain_guards: 0,
            };
            let mut body = c.body.clone();
            redirect(&mut body, r.var, axis, t, lag, prev);
            let loops: Vec<Axis> =
                c.loops.iter().map(|l| Axis { index: l.index, start: Dim::zero(), extent: l.end.clone() }).collect();
            let mut sums = Vec::new();
            candidates(&body, &mut Vec::new(), false, &mut sums);

            let prev_extents: Vec<Dim> =
                r.extents.iter().enumerate().filter(|(a, _)| *a != axis).map(|(_, d)| d.clone()).collect();
            let mut found = None;
            for (path, conditional) in sums {
                let Some(sum) = super::hoist::at_path(&body, &path) else { continue };
                let def = TensorDef {
                    var: r.var,
                    elem,
                    axes: loops.clone(),
                    cost_per_point: 0,
                    body: sum.clone(),
                    domain_guards: 0,
                };
                let Some(p) = super::gemm::find(f, &def) else { continue };
                if !p.path.is_empty() || (p.a != prev && p.b != prev) {
                    continue;
                }
                // Under a condition, the product is computed where the
                // condition is false too: every read must be in bounds there.
                if conditional && !in_bounds(f, &def, prev, &prev_extents) {
                    continue;
                }
                found = Some((path, def, p));
                break;
            }
            let Some((path, mut def, p)) = found else { continue };
            let g = super::gemm::hoist(f, &mut def, &p);
            super::gemm::replace_at(&mut body, &path, &mut Some(def.body));
            let c = &mut r.clauses[ci];
            c.body = body;
            c.cost_per_point = expr_cost(&c.body);
            c.prelude = vec![Stmt::Tensor(copy), Stmt::Gemm(g)];
            break;
        }
    }
}

/// The sums of `e` (with their paths) reached through arithmetic and the
/// branches of `if`s (`conditional` below one), not inside another sum.
fn candidates(e: &Expr, path: &mut Vec<usize>, conditional: bool, out: &mut Vec<(Vec<usize>, bool)>) {
    let (descend, cond_child) = match &e.kind {
        ExprKind::Reduce { .. } => {
            out.push((path.clone(), conditional));
            return;
        }
        ExprKind::Binary(..) | ExprKind::Unary(..) | ExprKind::Cast(..) | ExprKind::Intrinsic(..) => (true, None),
        // Children: the condition (skipped), then the branches.
        ExprKind::If { .. } => (true, Some(0)),
        _ => (false, None),
    };
    if !descend {
        return;
    }
    let under_if = matches!(e.kind, ExprKind::If { .. });
    let mut n = 0;
    visit::for_each_child(e, &mut |c| {
        if Some(n) != cond_child {
            path.push(n);
            candidates(c, path, conditional || under_if, out);
            path.pop();
        }
        n += 1;
    });
}

/// Whether every read in `def`'s value (a sum of a product of two reads
/// at variables) is within its tensor's extents over the whole ranges of
/// the definition's axes and the sum's loop.
fn in_bounds(f: &Function, def: &TensorDef, prev: VarId, prev_extents: &[Dim]) -> bool {
    let ExprKind::Reduce { loops, body, .. } = &def.body.kind else { return false };
    let mut range: std::collections::HashMap<VarId, Dim> =
        def.axes.iter().map(|a| (a.index, a.start.add(&a.extent))).collect();
    for l in loops {
        if l.start != Dim::zero() {
            return false;
        }
        range.insert(l.index, l.end.clone());
    }
    let mut ok = true;
    let mut check = |e: &Expr| {
        let ExprKind::Read { tensor, indices, .. } = &e.kind else { return };
        for (axis, i) in indices.iter().enumerate() {
            let ExprKind::Var(v) = i.kind else {
                ok = false;
                return;
            };
            let extent = if *tensor == prev { prev_extents.get(axis).cloned() } else { extent_of(f, *tensor, axis) };
            match (range.get(&v), extent) {
                (Some(end), Some(extent)) if end.prove_le(&extent).is_true() => {}
                _ => ok = false,
            }
        }
    };
    visit::for_each_child(body, &mut |c| check(c));
    ok
}

/// The extent of axis `axis` of tensor `t` where the function says it: a
/// parameter's entry checks, a top-level definition, through `let`s.
fn extent_of(f: &Function, t: VarId, axis: usize) -> Option<Dim> {
    for check in &f.entry {
        match check {
            crate::ir::EntryCheck::BindDim { dim, param, path, axis: a }
                if *param == t && path.is_empty() && *a == axis =>
            {
                return Some(Dim::var(crate::base::dim::DimVar(dim.0)));
            }
            crate::ir::EntryCheck::CheckDim { param, path, axis: a, expected, .. }
                if *param == t && path.is_empty() && *a == axis =>
            {
                return Some(expected.clone());
            }
            _ => {}
        }
    }
    for s in &f.body {
        match s {
            Stmt::Let { var, value: Expr { kind: ExprKind::Var(from), .. } } if *var == t => {
                return extent_of(f, *from, axis);
            }
            Stmt::Tensor(d) if d.var == t => return d.axes.get(axis).map(|a| a.extent.clone()),
            _ => {}
        }
    }
    None
}

fn var(v: VarId, ty: &Repr) -> Expr {
    Expr { kind: ExprKind::Var(v), ty: ty.clone() }
}

fn minus(e: Expr, lag: i64) -> Expr {
    let ty = e.ty.clone();
    let lit = Expr { kind: ExprKind::Lit(Literal::Int(lag as i128)), ty: ty.clone() };
    Expr { kind: ExprKind::Binary(BinOp::Sub, Box::new(e), Box::new(lit)), ty }
}

/// The lags of the unchecked reads of `rec` in `e` whose index along
/// `axis` is `t - lag` (lag a positive constant), each once.
fn find_lags(e: &Expr, rec: VarId, axis: usize, t: VarId, lags: &mut Vec<i64>) {
    if let ExprKind::Read { tensor, indices, checked: false } = &e.kind {
        if *tensor == rec {
            if let Some(l) = indices.get(axis).and_then(|i| lag_of(i, t)) {
                if !lags.contains(&l) {
                    lags.push(l);
                }
            }
        }
    }
    visit::for_each_child(e, &mut |c| find_lags(c, rec, axis, t, lags));
}

/// Reads of `rec` at `t - lag` along `axis` become reads of `prev` at the
/// other indices.
fn redirect(e: &mut Expr, rec: VarId, axis: usize, t: VarId, lag: i64, prev: VarId) {
    if let ExprKind::Read { tensor, indices, checked: false } = &mut e.kind {
        if *tensor == rec && indices.get(axis).and_then(|i| lag_of(i, t)) == Some(lag) {
            indices.remove(axis);
            *tensor = prev;
            return;
        }
    }
    visit::for_each_child_mut(e, &mut |c| redirect(c, rec, axis, t, lag, prev));
}

/// `l` when `e` is `t - l` for a constant `l >= 1` (in any arithmetic
/// form: `(T - 1) - ((T - 1 - s) + 1)` is `s - 1`).
fn lag_of(e: &Expr, t: VarId) -> Option<i64> {
    let (coeff, rest) = affine(e, t)?;
    let l = -rest.as_constant()?;
    (coeff == 1 && l >= 1).then_some(l)
}

/// `e` as `coeff * t + rest`.
fn affine(e: &Expr, t: VarId) -> Option<(i64, Dim)> {
    match &e.kind {
        ExprKind::Var(v) if *v == t => Some((1, Dim::zero())),
        ExprKind::Var(v) => Some((0, Dim::var(crate::base::dim::DimVar(v.0)))),
        ExprKind::Dim(d) => Some((0, d.clone())),
        ExprKind::Lit(Literal::Int(c)) => Some((0, Dim::constant(i64::try_from(*c).ok()?))),
        ExprKind::Binary(op @ (BinOp::Add | BinOp::Sub), a, b) => {
            let ((ca, ra), (cb, rb)) = (affine(a, t)?, affine(b, t)?);
            if *op == BinOp::Add {
                Some((ca.checked_add(cb)?, ra.add(&rb)))
            } else {
                Some((ca.checked_sub(cb)?, ra.sub(&rb)))
            }
        }
        _ => None,
    }
}
