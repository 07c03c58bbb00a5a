//! Matrix products inside recurrence steps: an RNN's
//! `sum[k](h[t - 1, n, k] * w[k, j])` is, at each step, the product of the previous step (a `B x
//! H` matrix) with `w`. Computed point by point it is a dot product per
//! point; here the clause gets a prelude that copies the step's slab into a
//! tensor of its own and multiplies it by a GEMM, and the clause reads the
//! product. Any operand read at one step (`t + c` or `c - t` along one axis,
//! plain variables on the others) is copied so: the recurrence's earlier
//! steps, an input's slab at the step (`x[t, n, i]`, whose product with `u`
//! `opt::invariant` hoists out of ordinary recurrences, but not out of a
//! checkpointed sweep's), and, in a sweep's sums over time, the slabs of
//! the primal and the adjoint at each time value (the gradient `sum[t,
//! n](h[t - 1, n, a] * d_h[t, n, b])` is a GEMM per time value).
//!
//! A sum qualifies when `opt::gemm` takes it for a matrix product over the
//! clause's loops (from 0, two or three of them) once its slab reads read
//! the copies, every slab copied is within its tensor at every step the
//! code runs, and every read of the product is within its tensor over the
//! whole loops (the product is computed where a condition around the sum
//! is false too). Host code only.

use crate::base::dim::Dim;
use crate::base::ops::{BinOp, RedOp};
use crate::base::scalar::ScalarKind;
use crate::ir::affine::Affine;
use crate::ir::cost::expr_cost;
use crate::ir::visit;
use crate::ir::{Axis, ChunkSum, Cover, Expr, ExprKind, Function, Recurrence, Repr, Stmt, TensorDef, VarId};

/// Gives the qualifying sums of `f`'s top-level recurrences (and of its
/// sweep's) their per-step products.
pub fn run(f: &mut Function) {
    for i in 0..f.body.len() {
        match &f.body[i] {
            Stmt::Recurrence(r) => {
                let mut r = r.clone();
                rewrite(f, &mut r, &[]);
                f.body[i] = Stmt::Recurrence(r);
            }
            Stmt::Sweep(w) => {
                let mut w = (**w).clone();
                let histories = [
                    (w.primal.var, w.primal.extents.iter().map(|d| super::resolve_extents(f, d)).collect()),
                    (w.adjoint.var, w.adjoint.extents.iter().map(|d| super::resolve_extents(f, d)).collect()),
                ];
                rewrite(f, &mut w.primal, &histories);
                rewrite(f, &mut w.adjoint, &histories);
                for s in &mut w.sums {
                    chunk_term(f, s, &histories);
                }
                f.body[i] = Stmt::Sweep(Box::new(w));
            }
            _ => {}
        }
    }
}

/// A step variable and the range of values it takes where the code runs.
struct Steps {
    t: VarId,
    lo: Dim,
    hi: Dim,
}

/// The clauses of `r`; `known` gives the extents of tensors that are not
/// top-level statements of `f` (a sweep's histories).
fn rewrite(f: &mut Function, r: &mut Recurrence, known: &[(VarId, Vec<Dim>)]) {
    let [(_, seq)] = r.seq.as_slice() else { return };
    let t = seq.index;
    if !r.elem.is_float() {
        return;
    }
    let mut known = known.to_vec();
    known.push((r.var, r.extents.iter().map(|d| super::resolve_extents(f, d)).collect()));
    for c in &mut r.clauses {
        if !c.prelude.is_empty() || !(2..=3).contains(&c.loops.len()) || c.loops.iter().any(|l| l.start != Dim::zero())
        {
            continue;
        }
        let (lo, hi) = match c.cover.first() {
            Some(Cover::At(n)) => (Dim::constant(*n), Dim::constant(n + 1)),
            Some(Cover::Range(a, b)) => (a.clone(), b.clone()),
            None => continue,
        };
        let steps = Steps { t, lo, hi };
        let axes: Vec<Axis> =
            c.loops.iter().map(|l| Axis { index: l.index, start: Dim::zero(), extent: l.end.clone() }).collect();
        let (body, prelude) = products(f, &c.body, &axes, &steps, &known, r.var);
        if !prelude.is_empty() {
            c.body = body;
            c.cost_per_point = expr_cost(&c.body);
            c.prelude = prelude;
        }
    }
}

/// A sweep's sum over time, computed per time value: its term's product
/// as a GEMM of the slabs at that time.
fn chunk_term(f: &mut Function, s: &mut ChunkSum, known: &[(VarId, Vec<Dim>)]) {
    let Stmt::Tensor(d) = &s.part else { return };
    if !s.prelude.is_empty() || !(2..=3).contains(&d.axes.len()) || d.axes.iter().any(|a| a.start != Dim::zero()) {
        return;
    }
    let steps = Steps { t: s.time, lo: s.full.0.clone(), hi: s.full.1.clone() };
    let (axes, value, name) = (d.axes.clone(), d.body.clone(), d.var);
    let (body, prelude) = products(f, &value, &axes, &steps, known, name);
    if prelude.is_empty() {
        return;
    }
    if let Stmt::Tensor(d) = &mut s.part {
        d.body = body;
        d.cost_per_point = expr_cost(&d.body);
    }
    s.prelude = prelude;
}

/// `value` (over `axes`) with each qualifying sum read from a product, and
/// the statements that compute the products (slab copies and GEMMs).
fn products(
    f: &mut Function,
    value: &Expr,
    axes: &[Axis],
    steps: &Steps,
    known: &[(VarId, Vec<Dim>)],
    name: VarId,
) -> (Expr, Vec<Stmt>) {
    let mut body = value.clone();
    let mut prelude = Vec::new();
    let mut sums = Vec::new();
    candidates(&body, &mut Vec::new(), &mut sums);
    // Candidates are disjoint subtrees: each path stays valid.
    for path in sums {
        let Some(sum) = super::hoist::at_path(&body, &path).cloned() else { continue };
        let Some((stmts, read)) = slab_product(f, axes, &sum, steps, known, name) else { continue };
        super::gemm::replace_at(&mut body, &path, &mut Some(read));
        prelude.extend(stmts);
    }
    (body, prelude)
}

/// The slab copies and the GEMM computing `sum` (a sum over one loop of a
/// product of two reads) over `axes`, and the read of the product that
/// replaces it; None when it is not such a product of at least one slab.
fn slab_product(
    f: &mut Function,
    axes: &[Axis],
    sum: &Expr,
    steps: &Steps,
    known: &[(VarId, Vec<Dim>)],
    name: VarId,
) -> Option<(Vec<Stmt>, Expr)> {
    let ExprKind::Reduce { op: RedOp::Sum, loops, wheres, body } = &sum.kind else { return None };
    let ExprKind::Binary(BinOp::Mul, x, y) = &body.kind else { return None };
    let elem = match sum.ty {
        Repr::Scalar(k) if k.is_float() => k,
        _ => return None,
    };
    let mut copies = Vec::new();
    let mut sides = Vec::new();
    for side in [x, y] {
        match slab(f, side, steps, known) {
            Some((copy, read)) => {
                copies.push(copy);
                sides.push(read);
            }
            None => sides.push((**side).clone()),
        }
    }
    if copies.is_empty() {
        return None;
    }
    let product = Expr {
        kind: ExprKind::Binary(BinOp::Mul, Box::new(sides[0].clone()), Box::new(sides[1].clone())),
        ty: body.ty.clone(),
    };
    let reduce =
        ExprKind::Reduce { op: RedOp::Sum, loops: loops.clone(), wheres: wheres.clone(), body: Box::new(product) };
    let mut def = TensorDef {
        var: name,
        elem,
        axes: axes.to_vec(),
        cost_per_point: 0,
        body: Expr { kind: reduce, ty: sum.ty.clone() },
        domain_guards: 0,
    };
    let p = super::gemm::find(f, &def)?;
    let mut extents: Vec<(VarId, Vec<Dim>)> = known.to_vec();
    extents.extend(copies.iter().map(|c: &TensorDef| (c.var, c.axes.iter().map(|a| a.extent.clone()).collect())));
    if !p.path.is_empty() || !in_bounds(f, &def, &extents) {
        return None;
    }
    let g = super::gemm::hoist(f, &mut def, &p);
    let stmts = copies.into_iter().map(Stmt::Tensor).chain([Stmt::Gemm(g)]).collect();
    Some((stmts, def.body))
}

/// For a read of one step (one index `t + c` or `c - t`, plain variables
/// elsewhere) of a tensor whose extents are known, within it at every step
/// `steps` takes: the copy of that step's slab and the read of the copy.
fn slab(f: &mut Function, e: &Expr, steps: &Steps, known: &[(VarId, Vec<Dim>)]) -> Option<(TensorDef, Expr)> {
    let ExprKind::Read { tensor, indices, checked: false } = &e.kind else { return None };
    let Repr::Scalar(elem) = e.ty else { return None };
    let mut step_axis = None;
    for (a, i) in indices.iter().enumerate() {
        match (&i.kind, Affine::in_var(i, steps.t)) {
            (ExprKind::Var(v), _) if *v != steps.t => {}
            (_, Some((coeff @ (1 | -1), rest))) if step_axis.is_none() => step_axis = Some((a, coeff, rest)),
            _ => return None,
        }
    }
    let (axis, coeff, rest) = step_axis?;
    let extents: Vec<Dim> = match known.iter().find(|(v, _)| v == tensor) {
        Some((_, e)) => e.clone(),
        None => (0..indices.len()).map(|a| extent_of(f, *tensor, a)).collect::<Option<_>>()?,
    };
    // The step's index over `lo..hi`: its first and last values.
    let last = steps.hi.sub(&Dim::one());
    let (min, max) =
        if coeff == 1 { (steps.lo.add(&rest), last.add(&rest)) } else { (rest.sub(&last), rest.sub(&steps.lo)) };
    if !Dim::zero().prove_le(&min).is_true() || !max.prove_lt(&extents[axis]).is_true() {
        return None;
    }
    let i64_ty = Repr::Scalar(ScalarKind::I64);
    let name = format!("{}_step", f.var(*tensor).source_name);
    let copy = f.add_var(&name, Repr::Tensor(elem, indices.len() - 1));
    let mut axes = Vec::new();
    let mut copy_idx = Vec::new();
    let mut read_idx = Vec::new();
    for (a, i) in indices.iter().enumerate() {
        if a == axis {
            copy_idx.push(i.clone());
        } else {
            let v = f.add_var(&format!("p{a}"), i64_ty.clone());
            axes.push(Axis { index: v, start: Dim::zero(), extent: extents[a].clone() });
            copy_idx.push(Expr { kind: ExprKind::Var(v), ty: i64_ty.clone() });
            read_idx.push(i.clone());
        }
    }
    let body = Expr { kind: ExprKind::Read { tensor: *tensor, indices: copy_idx, checked: false }, ty: e.ty.clone() };
    let def = TensorDef::new(copy, elem, axes, body);
    let read = Expr { kind: ExprKind::Read { tensor: copy, indices: read_idx, checked: false }, ty: e.ty.clone() };
    Some((def, read))
}

/// The sums of `e` (with their paths) reached through arithmetic and the
/// branches of `if`s, not inside another sum.
fn candidates(e: &Expr, path: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
    let cond_child = match &e.kind {
        ExprKind::Reduce { .. } => {
            out.push(path.clone());
            return;
        }
        ExprKind::Binary(..) | ExprKind::Unary(..) | ExprKind::Cast(..) | ExprKind::Intrinsic(..) => None,
        // Children: the condition (skipped), then the branches.
        ExprKind::If { .. } => Some(0),
        _ => return,
    };
    let mut n = 0;
    visit::for_each_child(e, &mut |c| {
        if Some(n) != cond_child {
            path.push(n);
            candidates(c, path, out);
            path.pop();
        }
        n += 1;
    });
}

/// Whether every read in `def`'s value (a sum of a product of two reads
/// at variables) is within its tensor's extents (`known`, or as `f` says)
/// over the whole ranges of the definition's axes and the sum's loop.
fn in_bounds(f: &Function, def: &TensorDef, known: &[(VarId, Vec<Dim>)]) -> bool {
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
            let extent = match known.iter().find(|(k, _)| k == tensor) {
                Some((_, e)) => e.get(axis).cloned(),
                None => extent_of(f, *tensor, axis),
            };
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
    if let Some(d) = super::entry_extent(f, t, axis) {
        return Some(d);
    }
    for s in &f.body {
        match s {
            Stmt::Let { var, value: Expr { kind: ExprKind::Var(from), .. } } if *var == t => {
                return extent_of(f, *from, axis);
            }
            Stmt::Tensor(d) if d.var == t => return d.axes.get(axis).map(|a| super::resolve_extents(f, &a.extent)),
            _ => {}
        }
    }
    None
}
