//! Hoisting: a reduction in a tensor definition's value that does not
//! depend on every axis of the definition is computed once per point of the
//! axes it does depend on, in a temporary tensor defined just before, not
//! once per point of the whole definition.
//!
//! `let y[n, c] = e[n, c] / sum[k](e[n, k]);` sums each row once (a
//! temporary `y_sum[n]`) instead of once per element of the row, which
//! turns the row-wise softmax from quadratic into linear work per row.
//!
//! A reduction is hoisted when evaluating it at more or other points than
//! the definition would cannot change what the program does:
//! - it is reached from the value through arithmetic only (operators,
//!   casts, intrinsics; not under an `if`, a guard or a block, whose
//!   conditions may be what proved its reads in bounds), and the
//!   definition has no where entries;
//! - it and everything in it are float arithmetic on reads proven in
//!   bounds (`checked: false`), variables, literals and nested reductions:
//!   nothing in it can fail or has an effect;
//! - the ranges of its loops, and every dimension in it, mention none of
//!   the definition's axes (the axes it reads by index are the temporary's
//!   axes);
//! - at least one axis of the definition is missing from what it reads.

use std::collections::{HashMap, HashSet};

use super::gemm::{recost, rename, replace_at};
use crate::base::dim::Dim;
use crate::base::ops::BinOp;
use crate::base::scalar::ScalarKind;
use crate::ir::cost::expr_cost;
use crate::ir::visit;
use crate::ir::{Axis, Expr, ExprKind, Function, Repr, Stmt, TensorDef, VarId};

/// Hoists the qualifying reductions of every definition of `f` (nested
/// blocks included).
pub fn run(f: &mut Function) {
    super::over_function(f, rewrite_stmts, rewrite_expr);
}

fn rewrite_stmts(f: &mut Function, stmts: &mut Vec<Stmt>) {
    let mut i = 0;
    while i < stmts.len() {
        visit::for_each_stmt_expr_mut(&mut stmts[i], &mut |e| rewrite_expr(f, e));
        let mut hoisted = Vec::new();
        if let Stmt::Tensor(def) = &mut stmts[i] {
            hoist_from(f, def, &mut hoisted);
        }
        let n = hoisted.len();
        for (k, tmp) in hoisted.into_iter().enumerate() {
            stmts.insert(i + k, tmp);
        }
        i += n + 1;
    }
}

fn rewrite_expr(f: &mut Function, e: &mut Expr) {
    if let ExprKind::Block { stmts, .. } = &mut e.kind {
        rewrite_stmts(f, stmts);
    }
    visit::for_each_child_mut(e, &mut |c| rewrite_expr(f, c));
}

/// Moves every qualifying reduction of `def`'s value into a temporary of
/// its own (appended to `out`, in the order they are to be defined).
fn hoist_from(f: &mut Function, def: &mut TensorDef, out: &mut Vec<Stmt>) {
    if def.domain_guards != 0 || def.axes.is_empty() {
        return;
    }
    let axes: Vec<VarId> = def.axes.iter().map(|a| a.index).collect();
    let mut found = Vec::new();
    find(&def.body, &axes, &mut Vec::new(), &mut found);
    if found.is_empty() {
        return;
    }
    // Replacing a reduction by a read leaves the paths of the others as
    // they are: none is inside another.
    for (path, used, elem) in found {
        out.push(hoist(f, def, &path, &used, elem));
    }
    recost(def);
}

/// The qualifying reductions reached from `e` (at `path` of the value)
/// through arithmetic: each one's path, the axes it reads and its type.
fn find(e: &Expr, axes: &[VarId], path: &mut Vec<usize>, found: &mut Vec<(Vec<usize>, Vec<VarId>, ScalarKind)>) {
    match &e.kind {
        ExprKind::Reduce { .. } => {
            if let (Some(used), Repr::Scalar(elem)) = (hoistable(e, axes), &e.ty) {
                found.push((path.clone(), used, *elem));
            }
        }
        ExprKind::Unary(..) | ExprKind::Binary(..) | ExprKind::Cast(..) | ExprKind::Intrinsic(..) => {
            let mut i = 0;
            visit::for_each_child(e, &mut |c| {
                path.push(i);
                find(c, axes, path, found);
                path.pop();
                i += 1;
            });
        }
        _ => {}
    }
}

/// The axes of the definition that reduction `e` reads, in the
/// definition's order, when it qualifies (see the module docs).
fn hoistable(e: &Expr, axes: &[VarId]) -> Option<Vec<VarId>> {
    if !matches!(e.ty, Repr::Scalar(k) if k.is_float()) {
        return None;
    }
    let axis_set: HashSet<VarId> = axes.iter().copied().collect();
    let mut used = HashSet::new();
    if !pure_float(e, &axis_set, &mut used) {
        return None;
    }
    if used.len() == axes.len() {
        return None;
    }
    Some(axes.iter().copied().filter(|a| used.contains(a)).collect())
}

/// Whether `e` is made only of what cannot fail (see the module docs);
/// records the axes it reads. Dimensions must not mention an axis.
fn pure_float(e: &Expr, axes: &HashSet<VarId>, used: &mut HashSet<VarId>) -> bool {
    let mentions_axis = |d: &Dim| d.vars().iter().any(|v| axes.contains(&VarId(v.0)));
    let own = match &e.kind {
        ExprKind::Lit(_) => true,
        ExprKind::Var(v) => {
            if axes.contains(v) {
                used.insert(*v);
            }
            true
        }
        ExprKind::Dim(d) => !mentions_axis(d),
        ExprKind::Read { checked, .. } => !checked,
        ExprKind::Reduce { loops, wheres, .. } => {
            wheres.is_empty() && loops.iter().all(|l| !mentions_axis(&l.start) && !mentions_axis(&l.end))
        }
        ExprKind::Unary(..) | ExprKind::Cast(..) | ExprKind::Intrinsic(..) => true,
        // Integer `/` and `%` may fail; float arithmetic and index
        // arithmetic (which wraps) cannot.
        ExprKind::Binary(op, ..) => {
            !(matches!(op, BinOp::Div | BinOp::Rem) && matches!(e.ty, Repr::Scalar(k) if k.is_int()))
        }
        _ => false,
    };
    let mut children = true;
    visit::for_each_child(e, &mut |c| children &= pure_float(c, axes, used));
    own && children
}

/// Replaces the reduction (of element type `elem`) at `path` of `def.body`
/// by a read of a new temporary over the axes `used`, defined (the returned
/// statement) with index variables of its own; a scalar `let` when it
/// reads no axis.
fn hoist(f: &mut Function, def: &mut TensorDef, path: &[usize], used: &[VarId], elem: ScalarKind) -> Stmt {
    let i64_ty = Repr::Scalar(ScalarKind::I64);
    let name = format!("{}_red", f.var(def.var).source_name);
    let ty = if used.is_empty() { Repr::Scalar(elem) } else { Repr::Tensor(elem, used.len()) };
    let tmp = f.add_var(&name, ty);
    let mut renamed = HashMap::new();
    let mut tmp_axes = Vec::new();
    for a in def.axes.iter().filter(|a| used.contains(&a.index)) {
        let source = f.var(a.index).source_name.clone();
        let v = f.add_var(&source, i64_ty.clone());
        renamed.insert(a.index, v);
        tmp_axes.push(Axis { index: v, start: a.start.clone(), extent: a.extent.clone() });
    }
    let read = if used.is_empty() {
        Expr { kind: ExprKind::Var(tmp), ty: Repr::Scalar(elem) }
    } else {
        let indices = used.iter().map(|a| Expr { kind: ExprKind::Var(*a), ty: i64_ty.clone() }).collect();
        Expr { kind: ExprKind::Read { tensor: tmp, indices, checked: false }, ty: Repr::Scalar(elem) }
    };
    let mut value = replace_at(&mut def.body, path, &mut Some(read))
        .unwrap_or_else(|| Expr { kind: ExprKind::Tuple(Vec::new()), ty: Repr::Unit });
    if used.is_empty() {
        return Stmt::Let { var: tmp, value };
    }
    rename(&mut value, &renamed);
    Stmt::Tensor(TensorDef {
        var: tmp,
        elem,
        axes: tmp_axes,
        cost_per_point: expr_cost(&value),
        body: value,
        domain_guards: 0,
    })
}
