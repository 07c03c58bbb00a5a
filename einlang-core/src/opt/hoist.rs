//! Hoisting: loop-invariant reductions. A reduction in a definition's
//! value that does not depend on every axis of the definition is computed
//! once per point of the axes it does depend on, in a temporary defined
//! just before, not once per point of the whole definition; a reduction
//! inside another reduction's body that does not depend on that
//! reduction's loops is computed once per point of the definition's axes
//! it reads, not once per term. Reductions that compute the same values as
//! an earlier statement (the same arithmetic up to the names of index
//! variables, over the same ranges) read that statement's tensor instead.
//!
//! `let y[n, c] = e[n, c] / sum[k](e[n, k]);` sums each row once (a
//! temporary `y_red[n]`) instead of once per element of the row, which
//! turns the row-wise softmax from quadratic into linear work per row. In
//! `exp(x[n, c] - max[j](x[n, j])) / sum[k](exp(x[n, k] - max[j](x[n, j])))`
//! both maxima are one temporary `y_red[n]`, read in the sum's body too.
//!
//! A reduction is hoisted when evaluating it at more or other points than
//! the definition would cannot change what the program does:
//! - it is reached from the value (of a tensor definition without domain
//!   guards, or of a scalar float `let`) through arithmetic only
//!   (operators, casts, intrinsics, the bodies of reductions without where
//!   entries, the where-bindings before the first guard; not under an `if`,
//!   a guard or a block, whose conditions may be what proved its reads in
//!   bounds), and it reads no variable bound inside the value around it
//!   (a where-binding, a loop);
//! - it and everything in it are float arithmetic on reads proven in
//!   bounds (`checked: false`), variables, literals and nested reductions:
//!   nothing in it can fail or has an effect;
//! - the ranges of its loops, and every dimension in it, mention none of
//!   the definition's axes nor the loops around it (the axes it reads by
//!   index are the temporary's axes), and it reads no variable of a loop
//!   around it;
//! - it is inside another reduction, or at least one axis of the
//!   definition is missing from what it reads.
//!
//! Temporaries are looked at again after they are made, so invariant
//! reductions nested several levels deep move out one level at a time.
//! Where-bindings before the first guard are substituted into what follows
//! them when that costs nothing (a variable, a literal or a plain read; or
//! a value used once, not under a reduction; in both cases one that cannot
//! fail): in `e / s where m = max[j](x[n, j]), e = exp(x[n, c] - m), s =
//! sum[k](exp(x[n, k] - m))` the maximum moves out, `m` becomes a read of
//! it and is substituted, then the sum (which read `m`) moves out too.

use std::collections::{HashMap, HashSet};

use super::gemm::{recost, rename, replace_at};
use crate::base::dim::Dim;
use crate::base::ops::BinOp;
use crate::base::scalar::ScalarKind;
use crate::ir::equiv::alpha_eq;
use crate::ir::visit;
use crate::ir::{Axis, Expr, ExprKind, Function, Repr, Stmt, TensorDef, VarId, WhereEntry};

/// Hoists the qualifying reductions of every definition of `f` (nested
/// blocks included).
pub fn run(f: &mut Function) {
    super::over_function(f, rewrite_stmts, rewrite_expr);
}

fn rewrite_stmts(f: &mut Function, stmts: &mut Vec<Stmt>) {
    let mut i = 0;
    while i < stmts.len() {
        visit::for_each_stmt_expr_mut(&mut stmts[i], &mut |e| rewrite_expr(f, e));
        let (earlier, rest) = stmts.split_at_mut(i);
        let mut hoisted = Vec::new();
        match &mut rest[0] {
            Stmt::Tensor(def) if def.domain_guards == 0 => {
                let axes = def.axes.clone();
                let owner = f.var(def.var).source_name.clone();
                // Hoisting a reduction out of one where-binding may
                // make the binding a plain read, which is substituted
                // into the later ones, whose reductions may then move
                // out in turn.
                let mut changed = false;
                loop {
                    let flat = flatten_bindings(&mut def.body);
                    let moved = hoist_from(f, &owner, &axes, &mut def.body, earlier, &mut hoisted);
                    changed |= flat | moved;
                    if !flat && !moved {
                        break;
                    }
                }
                if changed {
                    recost(def);
                }
            }
            Stmt::Let { var, value } if matches!(value.ty, Repr::Scalar(k) if k.is_float()) => {
                let owner = f.var(*var).source_name.clone();
                hoist_from(f, &owner, &[], value, earlier, &mut hoisted);
            }
            _ => {}
        }
        // The temporaries go just before the statement and are looked at
        // next: their values may hold reductions that are invariant in
        // their own loops.
        let n = hoisted.len();
        for (k, tmp) in hoisted.into_iter().enumerate() {
            stmts.insert(i + k, tmp);
        }
        if n == 0 {
            i += 1;
        }
    }
}

fn rewrite_expr(f: &mut Function, e: &mut Expr) {
    if let ExprKind::Block { stmts, .. } = &mut e.kind {
        rewrite_stmts(f, stmts);
    }
    visit::for_each_child_mut(e, &mut |c| rewrite_expr(f, c));
}

/// A reduction to move out: its path in the value, the axes it reads (in
/// the definition's order), its element type, and whether it moves out in
/// any case (else only when an earlier statement has its values).
struct Found {
    path: Vec<usize>,
    used: Vec<VarId>,
    elem: ScalarKind,
    hoist: bool,
}

/// Moves every qualifying reduction of `body` (the value of a definition
/// over `axes`, or of a scalar `let` when `axes` is empty) out: into a
/// temporary of its own (appended to `out`, in the order they are to be
/// defined), or, when an earlier statement already defines the same
/// values, a read of it. Returns whether `body` changed.
fn hoist_from(
    f: &mut Function,
    owner: &str,
    axes: &[Axis],
    body: &mut Expr,
    earlier: &[Stmt],
    out: &mut Vec<Stmt>,
) -> bool {
    let axis_vars: Vec<VarId> = axes.iter().map(|a| a.index).collect();
    // Variables bound inside the value (where-bindings, loops): a
    // reduction that reads one of those of its surroundings stays.
    let mut local = Vec::new();
    visit::defined_in(body, &mut local);
    let local: HashSet<VarId> = local.into_iter().collect();
    let mut found = Vec::new();
    find(body, &axis_vars, &local, &HashSet::new(), &mut Vec::new(), &mut found);
    let mut changed = false;
    // Replacing a reduction by a read leaves the paths of the others as
    // they are: one found inside another comes before it.
    for Found { path, used, elem, hoist: must } in found {
        let Some(red) = at_path(body, &path) else { continue };
        let existing = earlier.iter().chain(out.iter()).find_map(|s| same_values(s, red, axes, &used));
        let read = match existing {
            Some(var) => read_of(var, &used, elem),
            None if must => {
                let (tmp, stmt) = hoist(f, owner, axes, body, &path, &used, elem);
                out.push(stmt);
                read_of(tmp, &used, elem)
            }
            None => continue,
        };
        replace_at(body, &path, &mut Some(read));
        changed = true;
    }
    changed
}

/// The expression at `path` below `e`.
pub(super) fn at_path<'a>(e: &'a Expr, path: &[usize]) -> Option<&'a Expr> {
    let Some((&i, rest)) = path.split_first() else { return Some(e) };
    let mut n = 0;
    let mut child = None;
    visit::for_each_child(e, &mut |c| {
        if n == i {
            child = Some(c);
        }
        n += 1;
    });
    at_path(child?, rest)
}

/// A read of hoisted value `var` at the point `used` (the variable itself
/// when it reads no axis).
fn read_of(var: VarId, used: &[VarId], elem: ScalarKind) -> Expr {
    let i64_ty = Repr::Scalar(ScalarKind::I64);
    if used.is_empty() {
        return Expr { kind: ExprKind::Var(var), ty: Repr::Scalar(elem) };
    }
    let indices = used.iter().map(|a| Expr { kind: ExprKind::Var(*a), ty: i64_ty.clone() }).collect();
    Expr { kind: ExprKind::Read { tensor: var, indices, checked: false }, ty: Repr::Scalar(elem) }
}

/// The qualifying reductions reached from `e` (at `path` of the value)
/// through arithmetic and through the bodies of reductions without where
/// entries (`inner`: the variables of the loops around `e`). A reduction
/// that would be computed as often outside as in place is listed after the
/// ones inside it, to be shared with an earlier statement only.
fn find(
    e: &Expr,
    axes: &[VarId],
    local: &HashSet<VarId>,
    inner: &HashSet<VarId>,
    path: &mut Vec<usize>,
    found: &mut Vec<Found>,
) {
    match &e.kind {
        ExprKind::Reduce { loops, wheres, .. } => {
            let candidate = hoistable(e, axes, local, inner);
            if let (Some((used, true)), Repr::Scalar(elem)) = (&candidate, &e.ty) {
                found.push(Found { path: path.clone(), used: used.clone(), elem: *elem, hoist: true });
                return;
            }
            if wheres.is_empty() {
                let mut inner = inner.clone();
                inner.extend(loops.iter().map(|l| l.index));
                visit::for_each_child(e, &mut |c| {
                    path.push(0);
                    find(c, axes, local, &inner, path, found);
                    path.pop();
                });
            }
            if let (Some((used, false)), Repr::Scalar(elem)) = (candidate, &e.ty) {
                found.push(Found { path: path.clone(), used, elem: *elem, hoist: false });
            }
        }
        ExprKind::Unary(..) | ExprKind::Binary(..) | ExprKind::Cast(..) | ExprKind::Intrinsic(..) => {
            let mut i = 0;
            visit::for_each_child(e, &mut |c| {
                path.push(i);
                find(c, axes, local, inner, path, found);
                path.pop();
                i += 1;
            });
        }
        // The bindings before the first guard are computed at every point;
        // the value too when there is no guard.
        ExprKind::Guarded { wheres, body } => {
            let leading = wheres.iter().take_while(|w| matches!(w, WhereEntry::Bind(..))).count();
            for (i, w) in wheres.iter().take(leading).enumerate() {
                if let WhereEntry::Bind(_, x) = w {
                    path.push(i);
                    find(x, axes, local, inner, path, found);
                    path.pop();
                }
            }
            if leading == wheres.len() {
                path.push(wheres.len());
                find(body, axes, local, inner, path, found);
                path.pop();
            }
        }
        _ => {}
    }
}

/// Substitutes the where-bindings before the first guard of `e` (the
/// value of a definition) into the later entries and the value when that
/// costs nothing: the bound value cannot fail (`pure_float`) and is a
/// variable, a literal or a read at variables and literals, or it is used
/// once, not under a reduction (or another construct that repeats its
/// body). A value left without where entries loses its `Guarded`. Returns
/// whether anything changed.
fn flatten_bindings(e: &mut Expr) -> bool {
    let ExprKind::Guarded { wheres, body } = &mut e.kind else { return false };
    let mut changed = false;
    let mut i = 0;
    while i < wheres.len() {
        let WhereEntry::Bind(v, value) = &wheres[i] else { break };
        let v = *v;
        let simple = match &value.kind {
            ExprKind::Var(_) | ExprKind::Lit(_) => true,
            ExprKind::Read { indices, checked: false, .. } => {
                indices.iter().all(|x| matches!(x.kind, ExprKind::Var(_) | ExprKind::Lit(_)))
            }
            _ => false,
        };
        let mut reads = HashSet::new();
        let pure = pure_float(value, &HashSet::new(), &HashSet::new(), &mut reads);
        let (mut uses, mut repeated) = (0, false);
        for later in wheres[i + 1..].iter() {
            let (WhereEntry::Bind(_, x) | WhereEntry::Guard(x)) = later;
            count_uses(x, v, false, &mut uses, &mut repeated);
        }
        count_uses(body, v, false, &mut uses, &mut repeated);
        if !pure || !(simple || (uses == 1 && !repeated)) {
            i += 1;
            continue;
        }
        let WhereEntry::Bind(_, value) = wheres.remove(i) else { break };
        for later in wheres[i..].iter_mut() {
            let (WhereEntry::Bind(_, x) | WhereEntry::Guard(x)) = later;
            substitute_var(x, v, &value);
        }
        substitute_var(body, v, &value);
        changed = true;
    }
    if changed && wheres.is_empty() {
        let inner = std::mem::replace(&mut **body, Expr::unit());
        *e = inner;
    }
    changed
}

/// Counts the mentions of `v` in `e`; `repeated` is set when one is under
/// a construct that evaluates its body more than once.
fn count_uses(e: &Expr, v: VarId, under_loop: bool, uses: &mut usize, repeated: &mut bool) {
    if let ExprKind::Var(x) = &e.kind {
        if *x == v {
            *uses += 1;
            *repeated |= under_loop;
        }
    }
    let looping =
        under_loop || matches!(e.kind, ExprKind::Reduce { .. } | ExprKind::Collect { .. } | ExprKind::DynMap { .. });
    visit::for_each_child(e, &mut |c| count_uses(c, v, looping, uses, repeated));
}

/// Replaces every use of variable `v` in `e` by `value`.
pub(super) fn substitute_var(e: &mut Expr, v: VarId, value: &Expr) {
    if matches!(e.kind, ExprKind::Var(x) if x == v) {
        *e = value.clone();
        return;
    }
    visit::for_each_child_mut(e, &mut |c| substitute_var(c, v, value));
}

/// The axes of the definition that reduction `e` reads, in the
/// definition's order, when it is pure and reads none of the loop
/// variables `inner` around it, and whether it qualifies for hoisting (see
/// the module docs): it is inside such a loop or it does not read every
/// axis.
fn hoistable(e: &Expr, axes: &[VarId], local: &HashSet<VarId>, inner: &HashSet<VarId>) -> Option<(Vec<VarId>, bool)> {
    if !matches!(e.ty, Repr::Scalar(k) if k.is_float()) {
        return None;
    }
    let axis_set: HashSet<VarId> = axes.iter().copied().collect();
    let mut reads = HashSet::new();
    if !pure_float(e, &axis_set, inner, &mut reads) {
        return None;
    }
    let mut own = Vec::new();
    visit::defined_in(e, &mut own);
    if reads.iter().any(|v| inner.contains(v) || (local.contains(v) && !own.contains(v))) {
        return None;
    }
    let used: Vec<VarId> = axes.iter().copied().filter(|a| reads.contains(a)).collect();
    let hoist = used.len() < axes.len() || !inner.is_empty();
    Some((used, hoist))
}

/// Whether `e` is made only of what cannot fail (see the module docs);
/// records the variables it reads. Dimensions must not mention an axis or
/// a loop variable around it.
pub(super) fn pure_float(e: &Expr, axes: &HashSet<VarId>, inner: &HashSet<VarId>, reads: &mut HashSet<VarId>) -> bool {
    let mentions = |d: &Dim| d.vars().iter().any(|v| axes.contains(&VarId(v.0)) || inner.contains(&VarId(v.0)));
    let own = match &e.kind {
        ExprKind::Lit(_) => true,
        ExprKind::Var(v) => {
            reads.insert(*v);
            true
        }
        ExprKind::Dim(d) => !mentions(d),
        ExprKind::Read { checked, .. } => !checked,
        ExprKind::Reduce { loops, wheres, .. } => {
            wheres.is_empty() && loops.iter().all(|l| !mentions(&l.start) && !mentions(&l.end))
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
    visit::for_each_child(e, &mut |c| children &= pure_float(c, axes, inner, reads));
    own && children
}

/// The variable of statement `s` when it defines, at the point `used` of
/// `axes`, the value of reduction `red`: a scalar `let` of the same value
/// when `used` is empty, else a definition without guards whose axes have
/// the ranges of `used`, in order, and whose value is `red` with its axes
/// in their place.
fn same_values(s: &Stmt, red: &Expr, axes: &[Axis], used: &[VarId]) -> Option<VarId> {
    let mut map = HashMap::new();
    match s {
        Stmt::Let { var, value } if used.is_empty() => alpha_eq(value, red, &mut map).then_some(*var),
        Stmt::Tensor(def) if def.domain_guards == 0 && def.axes.len() == used.len() && !used.is_empty() => {
            for (theirs, ours) in def.axes.iter().zip(used) {
                let ours = axes.iter().find(|a| a.index == *ours)?;
                if theirs.start != ours.start || theirs.extent != ours.extent {
                    return None;
                }
                map.insert(theirs.index, ours.index);
            }
            alpha_eq(&def.body, red, &mut map).then_some(def.var)
        }
        _ => None,
    }
}

/// Replaces the reduction (of element type `elem`) at `path` of `body` (the
/// value of a definition over `axes`, named after `owner`) by nothing yet,
/// and returns a new temporary over the axes `used` and the statement that
/// defines it with index variables of its own; a scalar `let` when it reads
/// no axis. The caller puts the read in its place.
fn hoist(
    f: &mut Function,
    owner: &str,
    axes: &[Axis],
    body: &mut Expr,
    path: &[usize],
    used: &[VarId],
    elem: ScalarKind,
) -> (VarId, Stmt) {
    let i64_ty = Repr::Scalar(ScalarKind::I64);
    let name = format!("{owner}_red");
    let ty = if used.is_empty() { Repr::Scalar(elem) } else { Repr::Tensor(elem, used.len()) };
    let tmp = f.add_var(&name, ty);
    let mut renamed = HashMap::new();
    let mut tmp_axes = Vec::new();
    for a in axes.iter().filter(|a| used.contains(&a.index)) {
        let source = f.var(a.index).source_name.clone();
        let v = f.add_var(&source, i64_ty.clone());
        renamed.insert(a.index, v);
        tmp_axes.push(Axis { index: v, start: a.start.clone(), extent: a.extent.clone() });
    }
    let placeholder = Expr::unit();
    let mut value = replace_at(body, path, &mut Some(placeholder)).unwrap_or_else(|| Expr::unit());
    if used.is_empty() {
        return (tmp, Stmt::Let { var: tmp, value });
    }
    rename(&mut value, &renamed);
    let def = TensorDef::new(tmp, elem, tmp_axes, value);
    (tmp, Stmt::Tensor(def))
}
