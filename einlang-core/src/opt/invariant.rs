//! Step-invariant work out of recurrences: a reduction in a clause of a
//! recurrence that does not read the recurrence itself is computed for
//! every step at once, before the recurrence, as a definition over the
//! clause's steps and points; the clause reads it.
//!
//! In a tanh RNN,
//!
//! ```text
//! let h[t in 1..T, n, j] = tanh(sum[k](h[t - 1, n, k] * w[k, j]) + sum[i](x[t, n, i] * u[i, j]));
//! ```
//!
//! the input projection `sum[i](x[t, n, i] * u[i, j])` becomes
//! `h_in[t', n, j]` over `t' in 0..T - 1` (step `t' + 1`), which the `gemm`
//! and `pack` passes then make one matrix product over all steps instead
//! of `T` small loops; only the recurrent product stays inside.
//!
//! A reduction moves when:
//! - the clause covers a range of steps of the recurrence's one sequential
//!   loop (not a single step), and the clause's loops do not depend on the
//!   step;
//! - it is reached from the clause's value through arithmetic only
//!   (operators, casts, intrinsics), so it is evaluated at every point of
//!   the clause anyway;
//! - it cannot fail (`hoist::pure_float`: float arithmetic on reads proven
//!   in bounds) and reads neither the recurrence nor a variable bound
//!   inside the clause's value;
//! - it reads the step index: the tensors it reads then grow with the
//!   number of steps already, so its result (steps x points) does not
//!   change how the program's memory grows, also when the recurrence keeps
//!   only a window of its steps.
//!
//! `layout` (host code only) then copies, once before the recurrence, a
//! tensor that a step's reduction walks with a stride (`w[k, j]` summed
//! over `k`) into one with the reduced axis last (`w_t[j, k]`): in the RNN
//! above, 18.4 ms became 11.3 ms on a 2-core AVX-512 machine.

use std::collections::{HashMap, HashSet};

use super::gemm::rename;
use super::hoist::pure_float;
use crate::base::dim::Dim;
use crate::base::ops::BinOp;
use crate::base::scalar::ScalarKind;
use crate::ir::cost::expr_cost;
use crate::ir::visit;
use crate::ir::{Axis, Cover, Expr, ExprKind, Function, Recurrence, Repr, Stmt, TensorDef, VarId};

/// Moves the step-invariant reductions of the recurrences among `f`'s
/// top-level statements.
pub fn run(f: &mut Function) {
    each_recurrence(f, hoist_recurrence);
}

/// Gives the tensors that recurrence steps reduce over a layout with the
/// reduced axis last (`transpose_reads`). Host code only: on a GPU the
/// threads of a step read the original layout coalesced.
pub fn layout(f: &mut Function) {
    each_recurrence(f, transpose_reads);
}

/// Runs `rewrite` on every top-level recurrence of `f` (with its position)
/// and puts the definitions it returns just before it.
fn each_recurrence(f: &mut Function, rewrite: fn(&mut Function, usize, &mut Recurrence) -> Vec<TensorDef>) {
    let mut i = 0;
    while i < f.body.len() {
        let Stmt::Recurrence(mut r) = f.body[i].clone() else {
            i += 1;
            continue;
        };
        let defs = rewrite(f, i, &mut r);
        let n = defs.len();
        f.body[i] = Stmt::Recurrence(r);
        for (k, d) in defs.into_iter().enumerate() {
            f.body.insert(i + k, Stmt::Tensor(d));
        }
        i += n + 1;
    }
}

fn hoist_recurrence(f: &mut Function, _at: usize, r: &mut Recurrence) -> Vec<TensorDef> {
    let [(_, seq)] = &r.seq[..] else { return Vec::new() };
    let t = seq.index;
    let mut defs = Vec::new();
    for c in &mut r.clauses {
        let Some(Cover::Range(lo, hi)) = c.cover.first().cloned() else { continue };
        let step = crate::base::dim::DimVar(t.0);
        if c.loops.iter().any(|l| l.start.vars().contains(&step) || l.end.vars().contains(&step)) {
            continue;
        }
        let points: Vec<VarId> = c.loops.iter().map(|l| l.index).collect();
        let mut allowed: HashSet<VarId> = points.iter().copied().collect();
        allowed.insert(t);
        let bound = bound_in(&c.body);
        // The reductions reached from the value through arithmetic.
        let mut paths = Vec::new();
        super::rows::arithmetic_nodes(&c.body, &mut Vec::new(), &mut |e, path| {
            if matches!(e.kind, ExprKind::Reduce { .. }) {
                paths.push(path.to_vec());
            }
        });
        let owner = f.var(r.var).source_name.clone();
        for path in paths {
            let Some(red) = super::hoist::at_path(&c.body, &path) else { continue };
            let Repr::Scalar(elem) = red.ty else { continue };
            let mut reads = HashSet::new();
            let own = bound_in(red);
            if !pure_float(red, &allowed, &HashSet::new(), &mut reads)
                || reads.iter().any(|v| bound.contains(v) && !own.contains(v))
                || !reads.contains(&t)
                || reads.contains(&r.var)
                || super::rows::reads_any(red, &HashSet::from([r.var]))
            {
                continue;
            }
            let red = red.clone();
            let (def, read) = step_table(f, &owner, elem, red, t, &lo, &hi, &c.loops);
            super::gemm::replace_at(&mut c.body, &path, &mut Some(read));
            defs.push(def);
        }
        c.cost_per_point = expr_cost(&c.body);
    }
    defs
}

/// The definition `name[s in 0..hi - lo, p.. in loops] = red` (the step
/// `t` is `s + lo`) and the read of it at the clause's point.
#[allow(clippy::too_many_arguments)]
fn step_table(
    f: &mut Function,
    owner: &str,
    elem: ScalarKind,
    mut red: Expr,
    t: VarId,
    lo: &Dim,
    hi: &Dim,
    loops: &[crate::ir::Loop],
) -> (TensorDef, Expr) {
    let i64t = Repr::Scalar(ScalarKind::I64);
    let var = f.add_var(&format!("{owner}_in"), Repr::Tensor(elem, 1 + loops.len()));
    let s = f.add_var("s", i64t.clone());
    let mut renamed = HashMap::new();
    let mut axes = vec![Axis { index: s, start: Dim::zero(), extent: Dim::max(&hi.sub(lo), &Dim::zero()) }];
    for l in loops {
        let source = f.var(l.index).source_name.clone();
        let p = f.add_var(&source, i64t.clone());
        renamed.insert(l.index, p);
        axes.push(Axis { index: p, start: l.start.clone(), extent: l.end.sub(&l.start) });
    }
    // The step is `s + lo` inside the table's value.
    let v = |v: VarId| Expr { kind: ExprKind::Var(v), ty: i64t.clone() };
    let dim = |d: &Dim| Expr { kind: ExprKind::Dim(d.clone()), ty: i64t.clone() };
    let shifted = Expr { kind: ExprKind::Binary(BinOp::Add, Box::new(v(s)), Box::new(dim(lo))), ty: i64t.clone() };
    super::hoist::substitute_var(&mut red, t, &shifted);
    rename(&mut red, &renamed);
    let cost_per_point = expr_cost(&red);
    let def = TensorDef { var, elem, axes, body: red, cost_per_point, domain_guards: 0 };
    let step = Expr { kind: ExprKind::Binary(BinOp::Sub, Box::new(v(t)), Box::new(dim(lo))), ty: i64t.clone() };
    let mut indices = vec![step];
    indices.extend(loops.iter().map(|l| v(l.index)));
    let read = Expr { kind: ExprKind::Read { tensor: var, indices, checked: false }, ty: Repr::Scalar(elem) };
    (def, read)
}

/// Inside the recurrence's clauses (run at every step), a read in a
/// reduction `X[.., k, .., j]` of a tensor defined before the recurrence,
/// whose innermost loop `k` indexes an axis other than the last, walks
/// memory with a stride at every term. Such a tensor is copied once, before
/// the recurrence, with that axis moved last (`X_t[.., .., j, k]`), and the
/// read takes the copy: `sum[k](h[t - 1, n, k] * w[k, j])` then reads both
/// factors contiguously. Only reads whose indices are distinct plain
/// variables, of parameters and of earlier definitions whose axes start
/// at zero (their extents are known).
fn transpose_reads(f: &mut Function, at: usize, r: &mut Recurrence) -> Vec<TensorDef> {
    let mut copies: HashMap<(VarId, usize), VarId> = HashMap::new();
    let mut defs = Vec::new();
    for c in &mut r.clauses {
        let mut sites = Vec::new();
        strided_reads(&c.body, None, r.var, &mut Vec::new(), &mut sites);
        for (path, tensor, axis) in sites {
            let Some(extents) = extents_of(f, at, tensor) else { continue };
            let Repr::Tensor(elem, rank) = f.var(tensor).ty else { continue };
            if extents.len() != rank {
                continue;
            }
            let order: Vec<usize> = (0..rank).filter(|&a| a != axis).chain(std::iter::once(axis)).collect();
            let copy = match copies.get(&(tensor, axis)) {
                Some(&v) => v,
                None => {
                    let name = format!("{}_t", f.var(tensor).source_name);
                    let v = f.add_var(&name, Repr::Tensor(elem, rank));
                    let i64t = Repr::Scalar(ScalarKind::I64);
                    let vars: Vec<VarId> = (0..rank).map(|a| f.add_var(&format!("a{a}"), i64t.clone())).collect();
                    let axes = order
                        .iter()
                        .map(|&a| Axis { index: vars[a], start: Dim::zero(), extent: extents[a].clone() })
                        .collect();
                    let indices = vars.iter().map(|&x| Expr { kind: ExprKind::Var(x), ty: i64t.clone() }).collect();
                    let body =
                        Expr { kind: ExprKind::Read { tensor, indices, checked: false }, ty: Repr::Scalar(elem) };
                    let cost_per_point = expr_cost(&body);
                    defs.push(TensorDef { var: v, elem, axes, body, cost_per_point, domain_guards: 0 });
                    copies.insert((tensor, axis), v);
                    v
                }
            };
            let Some(read) = super::hoist::at_path(&c.body, &path) else { continue };
            let ExprKind::Read { indices, checked, .. } = &read.kind else { continue };
            let indices = order.iter().map(|&a| indices[a].clone()).collect();
            let new = Expr { kind: ExprKind::Read { tensor: copy, indices, checked: *checked }, ty: read.ty.clone() };
            super::gemm::replace_at(&mut c.body, &path, &mut Some(new));
        }
    }
    defs
}

/// The reads (path, tensor, axis) under a reduction whose innermost loop
/// variable indexes `axis`, not the last, of a tensor other than `own`,
/// with distinct plain variables as indices. `inner` is the innermost
/// loop variable of the closest reduction around `e`.
fn strided_reads(
    e: &Expr,
    inner: Option<VarId>,
    own: VarId,
    path: &mut Vec<usize>,
    out: &mut Vec<(Vec<usize>, VarId, usize)>,
) {
    let inner = match &e.kind {
        ExprKind::Reduce { loops, .. } => loops.last().map(|l| l.index).or(inner),
        _ => inner,
    };
    if let (ExprKind::Read { tensor, indices, .. }, Some(k)) = (&e.kind, inner) {
        let vars: Vec<Option<VarId>> =
            indices.iter().map(|i| if let ExprKind::Var(v) = i.kind { Some(v) } else { None }).collect();
        let distinct = vars.iter().enumerate().all(|(a, v)| v.is_some() && !vars[..a].contains(v));
        let axis = vars.iter().position(|v| *v == Some(k));
        if *tensor != own && distinct && vars.len() >= 2 {
            if let Some(axis) = axis.filter(|&a| a + 1 < vars.len()) {
                out.push((path.clone(), *tensor, axis));
            }
        }
        return;
    }
    let mut n = 0;
    visit::for_each_child(e, &mut |c| {
        path.push(n);
        strided_reads(c, inner, own, path, out);
        path.pop();
        n += 1;
    });
}

/// The extents of `tensor`'s axes when they are known: a parameter's
/// from the entry checks, an earlier top-level definition's (before
/// statement `at`) when its axes start at zero, an alias's (`let a = b`)
/// those of what it names.
fn extents_of(f: &Function, at: usize, tensor: VarId) -> Option<Vec<Dim>> {
    // `let w_2 = w` (as the gradient's copy of the primal reads it).
    let alias = f.body[..at].iter().find_map(|s| match s {
        Stmt::Let { var, value: Expr { kind: ExprKind::Var(of), .. } } if *var == tensor => Some(*of),
        _ => None,
    });
    if let Some(of) = alias.filter(|&of| of != tensor) {
        return extents_of(f, at, of);
    }
    if f.params.contains(&tensor) {
        let Repr::Tensor(_, rank) = f.var(tensor).ty else { return None };
        return (0..rank).map(|axis| super::entry_extent(f, tensor, axis)).collect();
    }
    f.body[..at].iter().find_map(|s| match s {
        Stmt::Tensor(d) if d.var == tensor && d.axes.iter().all(|a| a.start == Dim::zero()) => {
            Some(d.axes.iter().map(|a| a.extent.clone()).collect())
        }
        _ => None,
    })
}

/// The variables bound anywhere inside `e`.
fn bound_in(e: &Expr) -> HashSet<VarId> {
    let mut out = Vec::new();
    visit::defined_in(e, &mut out);
    out.into_iter().collect()
}
