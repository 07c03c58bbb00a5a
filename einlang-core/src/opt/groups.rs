//! Grouped contractions: a sum whose gathered operand reads one of the
//! definition's axes only through a quotient, as a grouped convolution
//! reads its input channel from the output channel,
//!
//! ```text
//! y[n, o, i, j] = sum[c, r, s](x[n, (o / F) * C + c, i + r, j + s] * k[o, c, r, s])
//! ```
//!
//! is made per group. `pack` would see `o` read by both operands, a batch
//! axis of one output channel per product, and leaves such a sum alone
//! (no column is left for a GEMM): the loop nest ran as written. Here `o`
//! is split into its group `g = o / F` and its place in the group `o' = o
//! % F`, so the sum becomes
//!
//! ```text
//! let y_f = if F > 0 { F } else { 0 }
//! let y_g = if y_f > 0 { (O + y_f - 1) / y_f } else { 0 }
//! k_grp[g, o', c, r, s] = if g * y_f + o' < O { k[g * y_f + o', c, r, s] } else { 0 }
//! y_grp[n, g, o', i, j] = sum[c, r, s](x[n, g * C + c, i + r, j + s] * k_grp[g, o', c, r, s])
//! y[n, o, i, j]         = if y_f > 0 { y_grp[n, o / y_f, o % y_f, i, j] } else { the sum as before }
//! ```
//!
//! and `y_grp` is a batched contraction `pack` makes a GEMM per group
//! (batch `g`, columns `o'`). The kernel's copy is padded with zeros when
//! `F` does not divide `O`, so `y_grp`'s extra points are never read.
//!
//! A definition qualifies when it has no domain guards, its axes start at
//! 0, and one of its sums (found as `pack` finds them) has elements `f32`
//! or `f64`, loops starting at 0 whose ends mention nothing the
//! definition defines, a body `p * q` or `q * p` (possibly under `if c {
//! .. } else { 0 }`), where `p` reads a tensor defined outside the
//! definition at distinct plain variables (axes or summed variables,
//! every summed variable among them, one of them the axis `o`), and `q`,
//! `c` and the sum's where entries use `o` only in `o / F`, the same `F`
//! every time, an `i64` value that mentions nothing the definition
//! defines, and no other variable the definition defines but its axes and
//! the sum's own. A divisor that is not positive at run time keeps the
//! sum as it was written (its errors included).

use std::collections::{HashMap, HashSet};

use super::gemm::{defined_inside, first_sum, recost, replace_at, sum_factors};
use crate::base::dim::{Dim, DimVar};
use crate::base::ops::{BinOp, RedOp};
use crate::base::scalar::ScalarKind;
use crate::ir::visit::{self, visit_var_uses};
use crate::ir::{Axis, EntryCheck, Expr, ExprKind, Function, Literal, Loop, Repr, Stmt, TensorDef, VarId, WhereEntry};

/// Rewrites every qualifying definition of `f`, wherever it is.
pub fn run(f: &mut Function) {
    super::over_function(f, stmts, |f, e| super::in_blocks(f, e, stmts));
}

fn stmts(f: &mut Function, list: &mut Vec<Stmt>) {
    let mut i = 0;
    while i < list.len() {
        let found = match &list[i] {
            Stmt::Tensor(def) => find(def),
            _ => None,
        };
        let extents: Vec<Stmt> = list[..i].iter().filter(|s| matches!(s, Stmt::Extent { .. })).cloned().collect();
        if let (Some(g), Stmt::Tensor(def)) = (found, &mut list[i]) {
            let before = rewrite(f, def, g, &extents);
            let n = before.len();
            list.splice(i..i, before);
            i += n;
        }
        visit::for_each_stmt_expr_mut(&mut list[i], &mut |e| super::in_blocks(f, e, stmts));
        i += 1;
    }
}

/// A sum that qualifies (see the module docs).
struct Grouped {
    /// Where the sum is in the definition's body.
    path: Vec<usize>,
    /// The position of the split axis among the definition's axes.
    axis: usize,
    /// Whether the plain operand `p` is the left factor.
    p_first: bool,
    /// The divisor `F` of `o / F`.
    divisor: Expr,
}

fn find(def: &TensorDef) -> Option<Grouped> {
    first_sum(def, |e, inside, path| grouped(def, e, inside, path))
}

/// The factors of a sum's body, `(left, right)`, to change.
fn factors_mut(body: &mut Expr) -> Option<(&mut Expr, &mut Expr)> {
    match &mut body.kind {
        ExprKind::Binary(BinOp::Mul, x, y) => Some((x, y)),
        ExprKind::If { then, .. } => match &mut then.kind {
            ExprKind::Binary(BinOp::Mul, x, y) => Some((x, y)),
            _ => None,
        },
        _ => None,
    }
}

fn grouped(def: &TensorDef, e: &Expr, inside: &HashSet<VarId>, path: &[usize]) -> Option<Grouped> {
    let ExprKind::Reduce { op: RedOp::Sum, loops, wheres, body } = &e.kind else { return None };
    let Repr::Scalar(elem @ (ScalarKind::F32 | ScalarKind::F64)) = e.ty else { return None };
    if def.elem != elem {
        return None;
    }
    let outside = |d: &Dim| d.vars().iter().all(|v| !inside.contains(&VarId(v.0)));
    if loops.iter().any(|l| l.start.as_constant() != Some(0) || !outside(&l.end)) {
        return None;
    }
    let ks: HashSet<VarId> = loops.iter().map(|l| l.index).collect();
    let axes: Vec<VarId> = def.axes.iter().map(|a| a.index).collect();
    let (x, y, cond) = sum_factors(body)?;
    // The variables the sum defines (the gathered side may use them).
    let mut own = Vec::new();
    visit::defined_in(e, &mut own);
    for (p, q, p_first) in [(x, y, true), (y, x, false)] {
        let ExprKind::Read { tensor, indices, .. } = &p.kind else { continue };
        if inside.contains(tensor) {
            continue;
        }
        let Some(vars) = indices
            .iter()
            .map(|i| match i.kind {
                ExprKind::Var(v) if axes.contains(&v) || ks.contains(&v) => Some(v),
                _ => None,
            })
            .collect::<Option<Vec<VarId>>>()
        else {
            continue;
        };
        let distinct: HashSet<VarId> = vars.iter().copied().collect();
        if distinct.len() != vars.len() || !ks.iter().all(|k| distinct.contains(k)) {
            continue;
        }
        // The gathered side: `q`, the condition, the where entries.
        let mut gathered = vec![q];
        gathered.extend(cond);
        for w in wheres {
            match w {
                WhereEntry::Bind(_, v) | WhereEntry::Guard(v) => gathered.push(v),
            }
        }
        let mut used = HashSet::new();
        for g in &gathered {
            visit_var_uses(g, &mut |v| {
                used.insert(v);
            });
        }
        if used.iter().any(|v| inside.contains(v) && !axes.contains(v) && !own.contains(v)) {
            continue;
        }
        for (axis, o) in axes.iter().enumerate() {
            if !distinct.contains(o) || !used.contains(o) {
                continue;
            }
            let mut divisor = None;
            if gathered.iter().all(|g| only_divided(g, *o, &mut divisor, inside)) {
                if let Some(divisor) = divisor {
                    return Some(Grouped { path: path.to_vec(), axis, p_first, divisor });
                }
            }
        }
    }
    None
}

/// Whether `e` uses `o` only as `o / F`, `F` the same `i64` value
/// mentioning nothing in `inside` every time (recorded in `divisor`).
fn only_divided(e: &Expr, o: VarId, divisor: &mut Option<Expr>, inside: &HashSet<VarId>) -> bool {
    match &e.kind {
        ExprKind::Binary(BinOp::Div, a, b) if matches!(a.kind, ExprKind::Var(v) if v == o) => {
            let mut invariant = b.ty == Repr::Scalar(ScalarKind::I64) && e.ty == Repr::Scalar(ScalarKind::I64);
            visit_var_uses(b, &mut |v| invariant &= !inside.contains(&v));
            if !invariant || divisor.as_ref().is_some_and(|d| d != &**b) {
                return false;
            }
            *divisor = Some((**b).clone());
            true
        }
        ExprKind::Var(v) => *v != o,
        _ => {
            let mut mentions = false;
            // Variables an expression mentions outside its children
            // (a dimension, a read's tensor, a loop's bounds).
            if let ExprKind::Dim(d) = &e.kind {
                mentions = d.vars().contains(&DimVar(o.0));
            }
            if let ExprKind::Reduce { loops, .. } = &e.kind {
                mentions =
                    loops.iter().any(|l| l.start.vars().contains(&DimVar(o.0)) || l.end.vars().contains(&DimVar(o.0)));
            }
            let mut ok = !mentions;
            visit::for_each_child(e, &mut |c| ok = ok && only_divided(c, o, divisor, inside));
            ok
        }
    }
}

fn i64_ty() -> Repr {
    Repr::Scalar(ScalarKind::I64)
}

fn var(v: VarId, ty: Repr) -> Expr {
    Expr { kind: ExprKind::Var(v), ty }
}

fn int(v: i128) -> Expr {
    Expr { kind: ExprKind::Lit(Literal::Int(v)), ty: i64_ty() }
}

fn binary(op: BinOp, a: Expr, b: Expr) -> Expr {
    let ty = match op {
        BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::Eq | BinOp::Ne | BinOp::And | BinOp::Or => {
            Repr::Scalar(ScalarKind::Bool)
        }
        _ => a.ty.clone(),
    };
    Expr { kind: ExprKind::Binary(op, Box::new(a), Box::new(b)), ty }
}

fn if_else(cond: Expr, then: Expr, els: Expr) -> Expr {
    let ty = then.ty.clone();
    Expr { kind: ExprKind::If { cond: Box::new(cond), then: Box::new(then), els: Box::new(els) }, ty }
}

/// The expression at `path` below `e` (child positions in `ir::visit`
/// order).
fn at_path<'a>(e: &'a Expr, path: &[usize]) -> &'a Expr {
    let Some((&i, rest)) = path.split_first() else { return e };
    let (mut n, mut out) = (0, None);
    visit::for_each_child(e, &mut |c| {
        if n == i {
            out = Some(c);
        }
        n += 1;
    });
    at_path(out.expect("a path found by `find`"), rest)
}

/// When the gathered factor is a checked read with one index mentioning
/// the quotient `o / F`, and that index mentions nothing else the
/// definition defines but summed variables: pushes onto `out` `ok =
/// all[g in 0..groups, the summed variables it mentions](0 <= index &&
/// index < length)` and returns `ok` and the index's position.
fn selected_index(
    f: &mut Function,
    def: &TensorDef,
    g: &Grouped,
    out: &mut Vec<Stmt>,
    groups: VarId,
) -> Option<(VarId, usize)> {
    let ExprKind::Reduce { loops, body, .. } = &at_path(&def.body, &g.path).kind else { return None };
    let (x, y, _) = sum_factors(body)?;
    let q = if g.p_first { y } else { x };
    let ExprKind::Read { tensor, indices, checked: true } = &q.kind else { return None };
    let o = def.axes[g.axis].index;
    let inside = defined_inside(def);
    let mentions = |e: &Expr, v: VarId| {
        let mut found = false;
        visit_var_uses(e, &mut |u| found |= u == v);
        found
    };
    let mut selected = indices.iter().enumerate().filter(|(_, i)| mentions(i, o));
    let (position, index) = selected.next()?;
    if selected.next().is_some() {
        return None;
    }
    let mut used: Vec<Loop> = Vec::new();
    let mut only_loops = true;
    visit_var_uses(index, &mut |v| {
        if v != o && inside.contains(&v) {
            match loops.iter().find(|l| l.index == v) {
                Some(l) if !used.iter().any(|u| u.index == v) => used.push(l.clone()),
                Some(_) => {}
                None => only_loops = false,
            }
        }
    });
    if !only_loops {
        return None;
    }
    let group = f.add_var("g", i64_ty());
    let mut at = index.clone();
    replace_quotient(&mut at, o, &var(group, i64_ty()));
    // (Evaluated for every group, also where the sum would not be: it
    // must not fail.)
    if visit::may_fail(&at) {
        return None;
    }
    let mut steps = vec![Loop { index: group, start: Dim::zero(), end: Dim::var(DimVar(groups.0)) }];
    let mut map = HashMap::new();
    for l in used {
        let info = f.var(l.index).clone();
        let fresh = f.add_var(&info.source_name, info.ty);
        map.insert(l.index, fresh);
        steps.push(Loop { index: fresh, start: l.start, end: l.end });
    }
    super::gemm::rename(&mut at, &map);
    let length = Expr { kind: ExprKind::Len { tensor: *tensor, axis: position }, ty: i64_ty() };
    let test = binary(BinOp::And, binary(BinOp::Ge, at.clone(), int(0)), binary(BinOp::Lt, at, length));
    let ok_name = format!("{}_in_range", f.var(*tensor).source_name);
    let ok = f.add_var(&ok_name, Repr::Scalar(ScalarKind::Bool));
    out.push(Stmt::Let {
        var: ok,
        value: Expr {
            kind: ExprKind::Reduce { op: RedOp::All, loops: steps, wheres: Vec::new(), body: Box::new(test) },
            ty: Repr::Scalar(ScalarKind::Bool),
        },
    });
    Some((ok, position))
}

/// Marks the gathered read of the per-group `sum` unchecked when its index
/// at `position` is known in range (see `selected_index`) and each other
/// index is: a sum of variables of `ranges` (which start at 0) and
/// non-negative literals whose largest value is below the axis's length,
/// or bounded by the sum's condition (`0 <= i` and `i < length`).
/// `extents` are the extents defined before the definition.
fn uncheck_gathered(
    f: &Function,
    sum: &mut Expr,
    p_first: bool,
    position: usize,
    ranges: &HashMap<VarId, Dim>,
    extents: &[Stmt],
) {
    let ExprKind::Reduce { body, .. } = &mut sum.kind else { return };
    let mut facts = Vec::new();
    if let ExprKind::If { cond, .. } = &body.kind {
        let mut list = Vec::new();
        visit::conjuncts(cond, &mut list);
        facts = list.into_iter().cloned().collect();
    }
    let Some((x, y)) = factors_mut(body) else { return };
    let q = if p_first { y } else { x };
    let ExprKind::Read { tensor, indices, checked } = &mut q.kind else { return };
    let Some(lengths) = axis_lengths(f, *tensor, indices.len()) else { return };
    let tensor = *tensor;
    let proven = indices.iter().enumerate().all(|(axis, i)| {
        let length = |n: &Expr| match &n.kind {
            ExprKind::Dim(d) => *d == lengths[axis],
            ExprKind::Var(v) => Dim::var(DimVar(v.0)) == lengths[axis],
            ExprKind::Len { tensor: t, axis: a } => *t == tensor && *a == axis,
            _ => false,
        };
        let zero = |z: &Expr| matches!(z.kind, ExprKind::Lit(Literal::Int(0)));
        axis == position
            || below(i, ranges)
                .is_some_and(|top| super::resolve_extents_in(extents, &top).prove_lt(&lengths[axis]).is_true())
            || (facts.iter().any(|c| matches!(&c.kind, ExprKind::Binary(BinOp::Ge, a, z) if **a == *i && zero(z)))
                && facts.iter().any(|c| matches!(&c.kind, ExprKind::Binary(BinOp::Lt, a, n) if **a == *i && length(n))))
    });
    if proven {
        *checked = false;
    }
}

/// The largest value of an index that is a sum of variables of `ranges`
/// and non-negative literals (so never below 0), if it is one.
fn below(i: &Expr, ranges: &HashMap<VarId, Dim>) -> Option<Dim> {
    match &i.kind {
        ExprKind::Var(v) => Some(ranges.get(v)?.add_const(-1)),
        ExprKind::Lit(Literal::Int(c)) if *c >= 0 => Some(Dim::constant(i64::try_from(*c).ok()?)),
        ExprKind::Binary(BinOp::Add, a, b) => Some(below(a, ranges)?.add(&below(b, ranges)?)),
        _ => None,
    }
}

/// The lengths of `tensor`'s axes, when it is a parameter whose every axis
/// is bound to (or checked equal to) a dimension at entry.
fn axis_lengths(f: &Function, tensor: VarId, rank: usize) -> Option<Vec<Dim>> {
    if !f.params.contains(&tensor) {
        return None;
    }
    (0..rank)
        .map(|axis| {
            f.entry.iter().find_map(|c| match c {
                EntryCheck::BindDim { dim, param, path, axis: a }
                    if *param == tensor && path.is_empty() && *a == axis =>
                {
                    Some(Dim::var(DimVar(dim.0)))
                }
                EntryCheck::CheckDim { param, path, axis: a, expected, .. }
                    if *param == tensor && path.is_empty() && *a == axis =>
                {
                    Some(expected.clone())
                }
                _ => None,
            })
        })
        .collect()
}

/// Replaces every `o / F` in `e` with `g`.
fn replace_quotient(e: &mut Expr, o: VarId, g: &Expr) {
    if matches!(&e.kind, ExprKind::Binary(BinOp::Div, a, _) if matches!(a.kind, ExprKind::Var(v) if v == o)) {
        *e = g.clone();
        return;
    }
    visit::for_each_child_mut(e, &mut |c| replace_quotient(c, o, g));
}

/// Makes the group's size and count, the kernel's copy per group and the
/// product per group (returned, to go before `def`), and has `def` read
/// the product.
fn rewrite(f: &mut Function, def: &mut TensorDef, g: Grouped, extents: &[Stmt]) -> Vec<Stmt> {
    let name = f.var(def.var).source_name.clone();
    let o_axis = def.axes[g.axis].clone();
    let o = o_axis.index;
    let extent = Expr { kind: ExprKind::Dim(o_axis.extent.clone()), ty: i64_ty() };
    // The group's size (0 when the divisor is not positive) and count.
    let size = f.add_var(&format!("{name}_f"), i64_ty());
    let count = f.add_var(&format!("{name}_g"), i64_ty());
    let size_e = var(size, i64_ty());
    let positive = binary(BinOp::Gt, size_e.clone(), int(0));
    // The divisor when positive, the number of groups it makes, and
    // whether the gathered read's index that the group selects (a
    // channel) is inside its tensor for every group and summed value it
    // mentions: then the product per group reads it unchecked. Otherwise
    // the size is 0, nothing is computed per group, and the definition
    // computes the sum as written (with its errors).
    let divisor = f.add_var(&format!("{name}_d"), i64_ty());
    let groups = f.add_var(&format!("{name}_n"), i64_ty());
    let divisor_e = var(divisor, i64_ty());
    let mut out = vec![
        Stmt::Let {
            var: divisor,
            value: if_else(binary(BinOp::Gt, g.divisor.clone(), int(0)), g.divisor.clone(), int(0)),
        },
        Stmt::Let {
            var: groups,
            value: if_else(
                binary(BinOp::Gt, divisor_e.clone(), int(0)),
                binary(
                    BinOp::Div,
                    binary(BinOp::Sub, binary(BinOp::Add, extent.clone(), divisor_e.clone()), int(1)),
                    divisor_e.clone(),
                ),
                int(0),
            ),
        },
    ];
    let checked_index = selected_index(f, def, &g, &mut out, groups);
    let fast = match &checked_index {
        Some((ok, _)) => {
            binary(BinOp::And, binary(BinOp::Gt, divisor_e.clone(), int(0)), var(*ok, Repr::Scalar(ScalarKind::Bool)))
        }
        None => binary(BinOp::Gt, divisor_e.clone(), int(0)),
    };
    out.push(Stmt::Let { var: size, value: if_else(fast.clone(), divisor_e.clone(), int(0)) });
    out.push(Stmt::Let { var: count, value: if_else(fast, var(groups, i64_ty()), int(0)) });
    let size_dim = Dim::var(DimVar(size.0));
    let count_dim = Dim::var(DimVar(count.0));
    let axis = |f: &mut Function, source: &str, extent: Dim| Axis {
        index: f.add_var(source, i64_ty()),
        start: Dim::zero(),
        extent,
    };

    let ExprKind::Reduce { loops, body, .. } = &at_path(&def.body, &g.path).kind else {
        unreachable!("`find` found a sum here")
    };
    let (x, y) = sum_factors(body).map(|(x, y, _)| (x, y)).expect("`find` found a product");
    let p = if g.p_first { x } else { y };
    let ExprKind::Read { tensor, indices, checked } = &p.kind else { unreachable!("`find` found a read") };
    let Repr::Scalar(p_elem) = p.ty else { unreachable!("a read of a scalar") };

    // k_grp[g, o', rest..] = if g * size + o' < O { k[.., g * size + o', ..] } else { 0 }
    let kg = axis(f, "g", count_dim.clone());
    let o_name = f.var(o).source_name.clone();
    let ko = axis(f, &o_name, size_dim.clone());
    let flat = binary(BinOp::Add, binary(BinOp::Mul, var(kg.index, i64_ty()), size_e.clone()), var(ko.index, i64_ty()));
    let mut k_axes = vec![kg, ko];
    let mut k_indices = Vec::new();
    let index_vars: Vec<VarId> =
        indices.iter().map(|i| if let ExprKind::Var(v) = i.kind { v } else { unreachable!() }).collect();
    for v in &index_vars {
        if *v == o {
            k_indices.push(flat.clone());
            continue;
        }
        let extent = match loops.iter().find(|l| l.index == *v) {
            Some(l) => l.end.clone(),
            None => def.axes.iter().find(|a| a.index == *v).expect("an axis").extent.clone(),
        };
        let v_name = f.var(*v).source_name.clone();
        let a = axis(f, &v_name, extent);
        k_indices.push(var(a.index, i64_ty()));
        k_axes.push(a);
    }
    let zero = Expr { kind: ExprKind::Lit(Literal::Float("0.0".into())), ty: Repr::Scalar(p_elem) };
    let k_body = if_else(
        binary(BinOp::Lt, flat, extent.clone()),
        Expr { kind: ExprKind::Read { tensor: *tensor, indices: k_indices, checked: *checked }, ty: p.ty.clone() },
        zero,
    );
    let k_name = format!("{}_grp", f.var(*tensor).source_name);
    let k_var = f.add_var(&k_name, Repr::Tensor(p_elem, k_axes.len()));
    let kernel_rank = k_axes.len();
    out.push(Stmt::Tensor(TensorDef::new(k_var, p_elem, k_axes, k_body)));

    // y_grp[axes with o as (g, o')] = the sum, per group, reading k_grp.
    let mut sum = at_path(&def.body, &g.path).clone();
    let mut map = HashMap::new();
    let mut y_axes = Vec::new();
    let (yg, yo) = (axis(f, "g", count_dim), axis(f, &o_name, size_dim));
    for a in &def.axes {
        if a.index == o {
            y_axes.push(yg.clone());
            y_axes.push(yo.clone());
        } else {
            let a_name = f.var(a.index).source_name.clone();
            let fresh = axis(f, &a_name, a.extent.clone());
            map.insert(a.index, fresh.index);
            y_axes.push(fresh);
        }
    }
    let mut defined = Vec::new();
    visit::defined_in(&sum, &mut defined);
    for v in defined {
        let info = f.var(v).clone();
        map.insert(v, f.add_var(&info.source_name, info.ty));
    }
    super::split::rename(&mut sum, &map).expect("a sum's binders are loops and where bindings");
    replace_quotient(&mut sum, o, &var(yg.index, i64_ty()));
    if let Some((_, position)) = checked_index {
        let mut ranges: HashMap<VarId, Dim> = y_axes.iter().map(|a| (a.index, a.extent.clone())).collect();
        if let ExprKind::Reduce { loops, .. } = &sum.kind {
            ranges.extend(loops.iter().map(|l| (l.index, l.end.clone())));
        }
        uncheck_gathered(f, &mut sum, g.p_first, position, &ranges, extents);
    }
    if let ExprKind::Reduce { body, .. } = &mut sum.kind {
        let (x, y) = factors_mut(body).expect("`find` found a product");
        let p = if g.p_first { x } else { y };
        let mut at = vec![var(yg.index, i64_ty()), var(yo.index, i64_ty())];
        at.extend(index_vars.iter().filter(|v| **v != o).map(|v| var(map[v], i64_ty())));
        debug_assert_eq!(at.len(), kernel_rank);
        *p = Expr { kind: ExprKind::Read { tensor: k_var, indices: at, checked: false }, ty: p.ty.clone() };
    }
    let y_var = f.add_var(&format!("{name}_grp"), Repr::Tensor(def.elem, y_axes.len()));
    out.push(Stmt::Tensor(TensorDef::new(y_var, def.elem, y_axes, sum)));

    // The definition reads the product when the group's size is positive.
    let o_e = var(o, i64_ty());
    let mut at = Vec::new();
    for a in &def.axes {
        if a.index == o {
            at.push(binary(BinOp::Div, o_e.clone(), size_e.clone()));
            at.push(binary(BinOp::Rem, o_e.clone(), size_e.clone()));
        } else {
            at.push(var(a.index, i64_ty()));
        }
    }
    let read = Expr { kind: ExprKind::Read { tensor: y_var, indices: at, checked: false }, ty: Repr::Scalar(def.elem) };
    let mut slot = Some(Expr::unit());
    let original = replace_at(&mut def.body, &g.path, &mut slot).expect("`find` found a sum here");
    let mut choice = Some(if_else(positive, read, original));
    replace_at(&mut def.body, &g.path, &mut choice);
    recost(def);
    out
}
