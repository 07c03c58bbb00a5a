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
//! A row definition (`Stmt::Rows`: a convolution's output, computed per
//! image after its product) that only a later definition `d` of the
//! function's body reads, at `d`'s point and outside reductions (once or
//! more: a derivative may read it twice before `cse`), takes `d` in
//! instead (`run_rows`, a pass of its own): the rows compute `d`'s value
//! with the row definition's own value in place of each read (`y = prod +
//! b` then `d_y = 2 * y` is one pass, `d_y = 2 * (prod + b)`, and `y` is
//! never stored). Both have the same ranges and float values that cannot
//! fail, and `d` reads nothing the statements between the two define: it
//! is computed earlier than it was.
//!
//! A copy (`p`'s value one proven read of another tensor, a gradient's
//! reversed `d_h[p0, j] = r_h[T - 1 - p0, j]`) read once by a proven read
//! anywhere in `d`, under a reduction too, is replaced there by the read of
//! its source at the composed indices: no pass copies it.

use std::collections::HashMap;

use super::gemm::{recost, rename};
use super::hoist::pure_float;
use crate::ir::visit;
use crate::ir::visit::visit_var_uses;
use crate::ir::{Expr, ExprKind, Function, Rows, Stmt, TensorDef, VarId};

/// Inlines every qualifying definition of `f` (nested blocks included).
pub fn run(f: &mut Function) {
    let counts = super::use_counts(f);
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

/// Moves every qualifying definition of `f`'s body into the rows of the
/// row definition it reads (see the module docs). Host code, after
/// `simplify` (a derivative's reads of its seed are literals by then).
pub fn run_rows(f: &mut Function) {
    let counts = super::use_counts(f);
    let mut i = 0;
    while i < f.body.len() {
        if into_rows(&counts, &mut f.body, i) {
            // `d` now is the row definition before it.
            f.body.remove(i);
        } else {
            i += 1;
        }
    }
}

/// Moves the definition at `i` into the rows of an earlier row definition
/// that only it reads, at its own point (see the module docs); whether it
/// did (the rows then hold it, and the caller removes it).
fn into_rows(counts: &HashMap<VarId, usize>, stmts: &mut [Stmt], i: usize) -> bool {
    let (earlier, rest) = stmts.split_at_mut(i);
    let Stmt::Tensor(d) = &rest[0] else { return false };
    // Every mention of the rows' tensor is in `d` (a derivative may read
    // it twice, `y * d_l + d_l * y`, before `simplify` and `cse`).
    let in_d = |v: VarId| {
        let mut n = 0;
        visit_var_uses(&d.body, &mut |x| n += usize::from(x == v));
        n
    };
    let Some((j, p)) = earlier.iter().enumerate().rev().find_map(|(j, s)| match s {
        Stmt::Rows(r) if counts.get(&r.def.var).is_some_and(|&n| n >= 1 && n == in_d(r.def.var)) => Some((j, r)),
        _ => None,
    }) else {
        return false;
    };
    let pure = |t: &TensorDef| {
        let axes = t.axes.iter().map(|a| a.index).collect();
        pure_float(&t.body, &axes, &Default::default(), &mut Default::default())
    };
    // The same ranges, also where two extents of the same value have names
    // of their own (a gradient's `p2_len` and the primal's `oy_len`).
    let same = |a, b| super::same_extent(earlier, a, b);
    let ranges = p.def.axes.len() == d.axes.len()
        && p.def.axes.iter().zip(&d.axes).all(|(a, b)| same(&a.start, &b.start) && same(&a.extent, &b.extent));
    if !ranges || !p.def.elem.is_float() || !d.elem.is_float() || d.domain_guards > 0 || !pure(&p.def) || !pure(d) {
        return false;
    }
    // Nothing `d` reads is defined between the rows and `d`.
    let mut between = std::collections::HashSet::new();
    for s in &earlier[j + 1..] {
        visit::for_each_stmt_binder(s, &mut |v| {
            between.insert(v);
        });
    }
    let mut reads_between = false;
    visit_var_uses(&d.body, &mut |v| reads_between |= between.contains(&v));
    if reads_between {
        return false;
    }
    // `d`'s value over the rows' axis variables, the row definition's value
    // in place of its read.
    let axes: Vec<VarId> = p.def.axes.iter().map(|a| a.index).collect();
    let map: HashMap<VarId, VarId> = d.axes.iter().map(|a| a.index).zip(axes.iter().copied()).collect();
    let mut body = d.body.clone();
    rename(&mut body, &map);
    // Each read, at the point and outside any reduction, becomes the value
    // (`cse` computes a costly one once).
    let mut replaced = 0;
    while substitute(&mut body, p.def.var, &axes, &mut Some(p.def.body.clone())) {
        replaced += 1;
    }
    if replaced != in_d(p.def.var) {
        return false;
    }
    // The rows' work (their product's included) and `d`'s per point.
    let cost_per_point = p.def.cost_per_point.saturating_add(d.cost_per_point);
    let def = TensorDef { var: d.var, elem: d.elem, axes: p.def.axes.clone(), body, cost_per_point, ..d.clone() };
    let prelude = p.prelude.clone();
    earlier[j] = Stmt::Rows(Rows { def, prelude });
    true
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
