//! Inlining: a definition read once, at the point it defines, is computed
//! where it is read, with no tensor of its own.
//!
//! `let t[i, j] = a[i, j] * b[i, j]; let y[i, j] = t[i, j] + c[i, j];`
//! becomes `let y[i, j] = a[i, j] * b[i, j] + c[i, j];`: one pass over
//! memory instead of two, no temporary allocated.
//!
//! Definition `p` is inlined into a later definition `d` of the same
//! statement list when:
//! - `p` is mentioned exactly once in the whole function, by a read in
//!   `d`'s value whose indices are `d`'s axis variables in order, not under
//!   a reduction (or another construct that repeats its body): each point of
//!   `p` is computed once, as before;
//! - `p` and `d` have the same rank and axis ranges, and `p` has no domain
//!   guards;
//! - `p`'s value is float arithmetic that cannot fail
//!   (`hoist::pure_float`), so computing it at a later time, or not at all
//!   where `d`'s guards skip the read, changes nothing.
//!
//! A copy (`p`'s value one proven read of another tensor, a gradient's
//! reversed `d_h[p0, j] = r_h[T - 1 - p0, j]`) read once by a proven read
//! anywhere in `d`, under a reduction too, is replaced there by the read of
//! its source at the composed indices: no pass copies it.

use std::collections::HashMap;

use super::gemm::{recost, rename};
use super::hoist::pure_float;
use crate::ir::validate::{visit_stmt_var_uses, visit_var_uses};
use crate::ir::visit;
use crate::ir::{Expr, ExprKind, Function, Stmt, TensorDef, VarId};

/// Inlines every qualifying definition of `f` (nested blocks included).
pub fn run(f: &mut Function) {
    let mut counts: HashMap<VarId, usize> = HashMap::new();
    for s in &f.body {
        visit_stmt_var_uses(s, &mut |v| *counts.entry(v).or_default() += 1);
    }
    visit_var_uses(&f.result, &mut |v| *counts.entry(v).or_default() += 1);
    let mut body = std::mem::take(&mut f.body);
    rewrite_stmts(&counts, &mut body);
    f.body = body;
    let unit = Expr::unit();
    let mut result = std::mem::replace(&mut f.result, unit);
    rewrite_expr(&counts, &mut result);
    f.result = result;
}

fn rewrite_stmts(counts: &HashMap<VarId, usize>, stmts: &mut Vec<Stmt>) {
    let mut i = 0;
    while i < stmts.len() {
        visit::for_each_stmt_expr_mut(&mut stmts[i], &mut |e| rewrite_expr(counts, e));
        let (earlier, rest) = stmts.split_at_mut(i);
        let mut taken = Vec::new();
        if let Stmt::Tensor(d) = &mut rest[0] {
            let axes: Vec<VarId> = d.axes.iter().map(|a| a.index).collect();
            let mut changed = false;
            for (j, s) in earlier.iter().enumerate() {
                let Stmt::Tensor(p) = s else { continue };
                if is_copy(counts, p) && read_copy(&mut d.body, p) {
                    taken.push(j);
                    changed = true;
                    continue;
                }
                if !inlinable(counts, p, d) {
                    continue;
                }
                let mut value = p.body.clone();
                let map: HashMap<VarId, VarId> = p.axes.iter().map(|a| a.index).zip(axes.iter().copied()).collect();
                rename(&mut value, &map);
                if substitute(&mut d.body, p.var, &axes, &mut Some(value)) {
                    taken.push(j);
                    changed = true;
                }
            }
            if changed {
                recost(d);
            }
        }
        for &j in taken.iter().rev() {
            stmts.remove(j);
        }
        // The definition moved up by the statements taken out before it.
        i = i - taken.len() + 1;
    }
}

fn rewrite_expr(counts: &HashMap<VarId, usize>, e: &mut Expr) {
    if let ExprKind::Block { stmts, .. } = &mut e.kind {
        rewrite_stmts(counts, stmts);
    }
    visit::for_each_child_mut(e, &mut |c| rewrite_expr(counts, c));
}

/// Whether `p` is a copy read once: its value one proven read of another
/// tensor (a reversed or shifted copy, such as a gradient's `d_h[p0, j] =
/// r_h[T - 1 - p0, j]`).
fn is_copy(counts: &HashMap<VarId, usize>, p: &TensorDef) -> bool {
    counts.get(&p.var) == Some(&1)
        && p.domain_guards == 0
        && matches!(&p.body.kind, ExprKind::Read { checked: false, indices, .. }
            if indices.iter().all(|i| !visit::may_fail(i)))
}

/// Replaces the proven read of the copy `p` in `e` (anywhere, under a
/// reduction too) by the read of its source at the composed indices: both
/// reads were in bounds, so the composed one is. Whether it did.
fn read_copy(e: &mut Expr, p: &TensorDef) -> bool {
    if let ExprKind::Read { tensor, indices, checked: false } = &e.kind {
        if *tensor == p.var && indices.len() == p.axes.len() {
            let mut value = p.body.clone();
            for (a, i) in p.axes.iter().zip(indices) {
                super::hoist::substitute_var(&mut value, a.index, i);
            }
            *e = value;
            return true;
        }
    }
    let mut done = false;
    visit::for_each_child_mut(e, &mut |c| {
        if !done {
            done = read_copy(c, p);
        }
    });
    done
}

fn inlinable(counts: &HashMap<VarId, usize>, p: &TensorDef, d: &TensorDef) -> bool {
    counts.get(&p.var) == Some(&1)
        && p.domain_guards == 0
        && p.elem.is_float()
        && p.axes.len() == d.axes.len()
        && p.axes.iter().zip(&d.axes).all(|(a, b)| a.start == b.start && a.extent == b.extent)
        && pure_float(&p.body, &p.axes.iter().map(|a| a.index).collect(), &Default::default(), &mut Default::default())
}

/// Replaces the read of `p` at the point `axes` in `e` by `value`, unless
/// it is under a construct that evaluates its body more than once per
/// point; returns whether it did.
fn substitute(e: &mut Expr, p: VarId, axes: &[VarId], value: &mut Option<Expr>) -> bool {
    if let ExprKind::Read { tensor, indices, .. } = &e.kind {
        let at_point = indices.len() == axes.len()
            && indices.iter().zip(axes).all(|(i, a)| matches!(i.kind, ExprKind::Var(v) if v == *a));
        if *tensor == p && at_point {
            if let Some(v) = value.take() {
                *e = v;
                return true;
            }
        }
        return false;
    }
    if matches!(e.kind, ExprKind::Reduce { .. } | ExprKind::Collect { .. } | ExprKind::DynMap { .. }) {
        return false;
    }
    let mut done = false;
    visit::for_each_child_mut(e, &mut |c| {
        if !done {
            done = substitute(c, p, axes, value);
        }
    });
    done
}
