//! GEMM: tensor definitions that are, or contain, a (batched) matrix
//! product become `Stmt::Gemm`, which back ends run with a tuned routine.
//!
//! A definition qualifies when it has two or three axes (`[batch,] row,
//! col`) and no domain guards, and a sum in its value or in one of its
//! where-bindings has the form `sum[k in 0..K](x * y)` where
//! - the sum's elements are floats (`f16` and `bf16` too: the runtime
//!   accumulates their products in `f32`) and it has no where entries;
//! - `x` and `y` are reads proven in bounds whose indices are exactly the
//!   variables `{batch, row, k}` and `{batch, k, col}`, in any order, either
//!   operand first;
//! - the operands and `K` are defined before the definition.
//!
//! The sums are tried right to left: the where-bindings from the last, then
//! the value, each depth first from its last operand, through operators,
//! casts, calls and the elementwise temporaries of whole-tensor arithmetic.
//! The first that qualifies is the definition's one GEMM.
//!
//! A sum multiplied by a scalar that is the same at every point (a float
//! literal, or a variable defined before the definition), `sum[k](x * y) *
//! s` or `s * sum[k](x * y)`, is the product with that scale
//! (`Gemm::scale`): the runtime multiplies each finished sum once, the same
//! bits as the product and then the multiplication. A division is folded
//! only by a literal power of two whose reciprocal is exact in the
//! element type (`x / 8.0` is `x * 0.125` in every bit, subnormal results
//! included: both are `x / 8` rounded once); by anything else
//! (`x / 3.0`, `x / s`) it stays a division after the product, since
//! `x * (1 / 3)` differs from `x / 3` in the last bit for some `x`.
//!
//! When that sum (with its scale) is the whole value, the definition becomes the GEMM's
//! reference loop nest and the GEMM defines its tensor. Otherwise the sum
//! gets a temporary of its own (`y_mm`), defined by a GEMM just before the
//! definition (with a reference over fresh index variables), and the
//! definition reads the temporary at its point instead.

use std::collections::{HashMap, HashSet};

use crate::base::dim::Dim;
use crate::base::ops::{BinOp, RedOp};
use crate::base::scalar::ScalarKind;
use crate::ir::cost::expr_cost;
use crate::ir::visit;
use crate::ir::{Axis, Expr, ExprKind, Function, Gemm, Literal, Repr, Stmt, TensorDef, VarId, WhereEntry};

/// Rewrites every qualifying definition of `f`, wherever it is (nested
/// blocks included).
pub fn run(f: &mut Function) {
    super::over_function(f, rewrite_stmts, rewrite_expr);
}

/// A sum recognized as a matrix product, and where it is in the
/// definition's body (child positions in `ir::visit` order).
pub(super) struct Product {
    pub(super) path: Vec<usize>,
    elem: ScalarKind,
    /// The extent of the contracted index.
    k: Dim,
    pub(super) a: VarId,
    a_axes: Vec<usize>,
    pub(super) b: VarId,
    b_axes: Vec<usize>,
    /// What the finished sum is multiplied by (see the module docs).
    scale: Option<Expr>,
}

fn rewrite_stmts(f: &mut Function, stmts: &mut Vec<Stmt>) {
    let mut i = 0;
    while i < stmts.len() {
        let found = match &stmts[i] {
            Stmt::Tensor(def) => find(f, def),
            _ => None,
        };
        if let Some(p) = found {
            if p.path.is_empty() {
                // The whole value: the definition is the reference.
                if let Stmt::Tensor(def) = stmts.remove(i) {
                    stmts.insert(i, Stmt::Gemm(gemm(&p, def.var, def)));
                }
            } else if let Stmt::Tensor(def) = &mut stmts[i] {
                let g = hoist(f, def, &p);
                stmts.insert(i, Stmt::Gemm(g));
                i += 1;
            }
        }
        if !matches!(stmts[i], Stmt::Gemm(_)) {
            visit::for_each_stmt_expr_mut(&mut stmts[i], &mut |e| rewrite_expr(f, e));
        }
        i += 1;
    }
}

/// Rewrites the definitions inside the blocks of `e`.
fn rewrite_expr(f: &mut Function, e: &mut Expr) {
    super::in_blocks(f, e, rewrite_stmts);
}

/// The sum of `def` that runs as a GEMM, if any (see the module docs).
pub(super) fn find(f: &Function, def: &TensorDef) -> Option<Product> {
    if !(2..=3).contains(&def.axes.len()) || def.domain_guards > 0 {
        return None;
    }
    let axes: Vec<VarId> = def.axes.iter().map(|a| a.index).collect();
    let inside = defined_inside(def);
    let mut stack = value_roots(def);
    while let Some((e, path)) = stack.pop() {
        let descend = match &e.kind {
            ExprKind::Reduce { .. } => {
                if let Some(mut p) = product(f, e, &axes, &inside, &path) {
                    // The multiplication around the sum, when it scales it.
                    if let Some((&_, up)) = path.split_last() {
                        if let Some(scale) = child_at(&def.body, up).and_then(|e| scale_of(f, e, p.elem, &inside)) {
                            p.path = up.to_vec();
                            p.scale = Some(scale);
                        }
                    }
                    return Some(p);
                }
                false
            }
            ExprKind::Binary(..)
            | ExprKind::Unary(..)
            | ExprKind::Cast(..)
            | ExprKind::Call { .. }
            | ExprKind::Intrinsic(..) => true,
            // A whole-tensor operation inside the value: its elementwise
            // temporaries.
            ExprKind::Block { .. } => true,
            _ => false,
        };
        if !descend {
            continue;
        }
        let temporaries: Vec<&Expr> = match &e.kind {
            ExprKind::Block { stmts, .. } => {
                stmts.iter().filter_map(|s| if let Stmt::Tensor(d) = s { Some(&d.body) } else { None }).collect()
            }
            _ => Vec::new(),
        };
        let is_block = matches!(e.kind, ExprKind::Block { .. });
        let mut n = 0;
        visit::for_each_child(e, &mut |c| {
            if !is_block || temporaries.iter().any(|t| std::ptr::eq(*t, c)) {
                let mut at = path.clone();
                at.push(n);
                stack.push((c, at));
            }
            n += 1;
        });
    }
    None
}

/// `e` as a matrix product over the definition's `axes` (`[batch,] row,
/// col`), when it is one; `inside` holds the variables defined inside the
/// definition, which the GEMM before it cannot use.
fn product(f: &Function, e: &Expr, axes: &[VarId], inside: &HashSet<VarId>, path: &[usize]) -> Option<Product> {
    let ExprKind::Reduce { op: RedOp::Sum, loops, wheres, body } = &e.kind else { return None };
    let ([l], true) = (loops.as_slice(), wheres.is_empty()) else { return None };
    let Repr::Scalar(elem @ (ScalarKind::F16 | ScalarKind::BF16 | ScalarKind::F32 | ScalarKind::F64)) = e.ty else {
        return None;
    };
    if l.start.as_constant() != Some(0) || l.end.vars().iter().any(|v| inside.contains(&VarId(v.0))) {
        return None;
    }
    let ExprKind::Binary(BinOp::Mul, x, y) = &body.kind else { return None };
    let read = |r: &Expr| -> Option<(VarId, Vec<VarId>)> {
        let ExprKind::Read { tensor, indices, checked: false } = &r.kind else { return None };
        if inside.contains(tensor) || f.var(*tensor).ty != Repr::Tensor(elem, axes.len()) {
            return None;
        }
        let vars = indices
            .iter()
            .map(|i| if let ExprKind::Var(v) = i.kind { Some(v) } else { None })
            .collect::<Option<Vec<_>>>()?;
        Some((*tensor, vars))
    };
    let ((xa, xargs), (ya, yargs)) = (read(x)?, read(y)?);
    let (batch, row, col) = match axes {
        [r, c] => (None, *r, *c),
        [b, r, c] => (Some(*b), *r, *c),
        _ => return None,
    };
    let k = l.index;
    let a_roles: Vec<VarId> = batch.into_iter().chain([row, k]).collect();
    let b_roles: Vec<VarId> = batch.into_iter().chain([k, col]).collect();
    let sorted = |v: &[VarId]| {
        let mut v = v.to_vec();
        v.sort();
        v
    };
    let (a, a_args, b, b_args) = if sorted(&xargs) == sorted(&a_roles) && sorted(&yargs) == sorted(&b_roles) {
        (xa, xargs, ya, yargs)
    } else if sorted(&yargs) == sorted(&a_roles) && sorted(&xargs) == sorted(&b_roles) {
        (ya, yargs, xa, xargs)
    } else {
        return None;
    };
    let role_axes = |args: &[VarId], roles: &[VarId]| -> Option<Vec<usize>> {
        roles.iter().map(|r| args.iter().position(|a| a == r)).collect()
    };
    Some(Product {
        path: path.to_vec(),
        elem,
        k: l.end.clone(),
        a,
        a_axes: role_axes(&a_args, &a_roles)?,
        b,
        b_axes: role_axes(&b_args, &b_roles)?,
        scale: None,
    })
}

/// The expression at `path` below `e` (child positions in `ir::visit`
/// order).
fn child_at<'e>(e: &'e Expr, path: &[usize]) -> Option<&'e Expr> {
    let Some((&i, rest)) = path.split_first() else { return Some(e) };
    let (mut n, mut found) = (0, None);
    visit::for_each_child(e, &mut |c| {
        if n == i {
            found = Some(c);
        }
        n += 1;
    });
    child_at(found?, rest)
}

/// The scale by which `e`, a product (a `Reduce`) times or divided by
/// something, multiplies the product's sum, when that is a scalar of the
/// product's type the same at every point of the definition (see the
/// module docs: a division only by an exact power of two).
fn scale_of(f: &Function, e: &Expr, elem: ScalarKind, inside: &HashSet<VarId>) -> Option<Expr> {
    let ExprKind::Binary(op @ (BinOp::Mul | BinOp::Div), x, y) = &e.kind else { return None };
    if e.ty != Repr::Scalar(elem) || !matches!(elem, ScalarKind::F32 | ScalarKind::F64) {
        return None;
    }
    let is_sum = |s: &Expr| matches!(s.kind, ExprKind::Reduce { .. });
    let invariant = |s: &Expr| {
        s.ty == Repr::Scalar(elem)
            && match &s.kind {
                ExprKind::Lit(Literal::Float(_)) => true,
                ExprKind::Var(v) => !inside.contains(v) && f.var(*v).ty == Repr::Scalar(elem),
                _ => false,
            }
    };
    match op {
        BinOp::Mul if is_sum(x) && invariant(y) => Some((**y).clone()),
        BinOp::Mul if is_sum(y) && invariant(x) => Some((**x).clone()),
        BinOp::Div if is_sum(x) && invariant(y) => {
            let ExprKind::Lit(Literal::Float(text)) = &y.kind else { return None };
            let reciprocal = exact_reciprocal(text, elem)?;
            Some(Expr { kind: ExprKind::Lit(Literal::Float(reciprocal)), ty: y.ty.clone() })
        }
        _ => None,
    }
}

/// The text of `1 / v` for the float literal `text` of type `elem`, when
/// `v` is a power of two whose reciprocal the type holds exactly (then
/// `x / v` and `x * (1 / v)` are the same real number rounded once, the
/// same bits for every `x`); `None` for any other value.
pub(super) fn exact_reciprocal(text: &str, elem: ScalarKind) -> Option<String> {
    match elem {
        ScalarKind::F32 => {
            let v: f32 = text.replace('_', "").parse().ok()?;
            let r = 1.0 / v;
            let pow2 = |x: f32| x.is_normal() && x.to_bits() & 0x007f_ffff == 0;
            (pow2(v) && (pow2(r) || r.is_subnormal() && r.to_bits().is_power_of_two()) && r * v == 1.0)
                .then(|| format!("{r:?}"))
        }
        ScalarKind::F64 => {
            let v: f64 = text.replace('_', "").parse().ok()?;
            let r = 1.0 / v;
            let pow2 = |x: f64| x.is_normal() && x.to_bits() & 0x000f_ffff_ffff_ffff == 0;
            (pow2(v) && (pow2(r) || r.is_subnormal() && r.to_bits().is_power_of_two()) && r * v == 1.0)
                .then(|| format!("{r:?}"))
        }
        _ => None,
    }
}

/// Moves the product out of `def` into a temporary of its own and returns
/// the GEMM that defines it; `def` reads the temporary at its point.
pub(super) fn hoist(f: &mut Function, def: &mut TensorDef, p: &Product) -> Gemm {
    let (tmp, reference) = hoist_part(f, def, &p.path, p.elem, "mm");
    gemm(p, tmp, reference)
}

/// Moves the part of `def`'s body at `path` into a new tensor
/// `{name}_{suffix}` of element `elem` over `def`'s axes, which `def` now
/// reads at its point; returns the tensor and its definition by the moved
/// part (over index variables of its own), the reference loop nest of the
/// operation that will define it.
pub(super) fn hoist_part(
    f: &mut Function,
    def: &mut TensorDef,
    path: &[usize],
    elem: ScalarKind,
    suffix: &str,
) -> (VarId, TensorDef) {
    let i64_ty = Repr::Scalar(ScalarKind::I64);
    let name = format!("{}_{suffix}", f.var(def.var).source_name);
    let tmp = f.add_var(&name, Repr::Tensor(elem, def.axes.len()));
    // The reference loop nest gets index variables of its own.
    let mut renamed = HashMap::new();
    let mut ref_axes = Vec::new();
    for a in &def.axes {
        let source = f.var(a.index).source_name.clone();
        let v = f.add_var(&source, i64_ty.clone());
        renamed.insert(a.index, v);
        ref_axes.push(Axis { index: v, start: Dim::zero(), extent: a.extent.clone() });
    }
    let indices = def.axes.iter().map(|a| Expr { kind: ExprKind::Var(a.index), ty: i64_ty.clone() }).collect();
    let read = Expr { kind: ExprKind::Read { tensor: tmp, indices, checked: false }, ty: Repr::Scalar(elem) };
    let mut sum = replace_at(&mut def.body, path, &mut Some(read)).unwrap_or_else(Expr::unit);
    rename(&mut sum, &renamed);
    recost(def);
    (tmp, TensorDef::new(tmp, elem, ref_axes, sum))
}

/// The GEMM of `p` defining `out`, over the axes of its reference.
fn gemm(p: &Product, out: VarId, reference: TensorDef) -> Gemm {
    let extent = |i: usize| reference.axes[i].extent.clone();
    let (batch, m, n) =
        if reference.axes.len() == 3 { (Some(extent(0)), extent(1), extent(2)) } else { (None, extent(0), extent(1)) };
    Gemm {
        out,
        elem: p.elem,
        batch,
        m,
        n,
        k: p.k.clone(),
        a: p.a,
        a_axes: p.a_axes.clone(),
        b: p.b,
        b_axes: p.b_axes.clone(),
        scale: p.scale.clone(),
        slice: None,
        reference,
    }
}

/// The variables a definition defines: its axes and every binder in its
/// body (a GEMM or a packed copy before the definition cannot read them).
pub(super) fn defined_inside(def: &TensorDef) -> HashSet<VarId> {
    let mut inside: Vec<VarId> = def.axes.iter().map(|a| a.index).collect();
    visit::defined_in(&def.body, &mut inside);
    inside.into_iter().collect()
}

/// Where a definition's sums are searched from: its value and, under its
/// where entries, each binding's value, with their paths (child positions
/// in `ir::visit` order); the last one is searched first.
pub(super) fn value_roots(def: &TensorDef) -> Vec<(&Expr, Vec<usize>)> {
    match &def.body.kind {
        ExprKind::Guarded { wheres, body } => {
            let mut roots = vec![(&**body, vec![wheres.len()])];
            for (n, w) in wheres.iter().enumerate() {
                if let WhereEntry::Bind(_, x) = w {
                    roots.push((x, vec![n]));
                }
            }
            roots
        }
        _ => vec![(&def.body, Vec::new())],
    }
}

/// The first sum of `def`'s value (its body, or a `where` binding of
/// it, reached through elementwise operations only) for which `qualifies`,
/// given the sum, the variables defined inside `def` and the sum's path,
/// gives a result. Definitions with domain guards or an axis not starting
/// at 0 have none.
pub(super) fn first_sum<T>(
    def: &TensorDef,
    mut qualifies: impl FnMut(&Expr, &HashSet<VarId>, &[usize]) -> Option<T>,
) -> Option<T> {
    if def.domain_guards > 0 || def.axes.iter().any(|a| a.start.as_constant() != Some(0)) {
        return None;
    }
    let inside = defined_inside(def);
    let mut stack = value_roots(def);
    while let Some((e, path)) = stack.pop() {
        match &e.kind {
            ExprKind::Reduce { .. } => {
                if let Some(found) = qualifies(e, &inside, &path) {
                    return Some(found);
                }
            }
            ExprKind::Binary(..) | ExprKind::Unary(..) | ExprKind::Cast(..) | ExprKind::Intrinsic(..) => {
                let mut n = 0;
                visit::for_each_child(e, &mut |c| {
                    let mut at = path.clone();
                    at.push(n);
                    stack.push((c, at));
                    n += 1;
                });
            }
            _ => {}
        }
    }
    None
}

/// The factors of a sum's body, `(left, right, condition)`: `x * y`, or
/// `if cond { x * y } else { 0 }`.
pub(super) fn sum_factors(body: &Expr) -> Option<(&Expr, &Expr, Option<&Expr>)> {
    match &body.kind {
        ExprKind::Binary(BinOp::Mul, x, y) => Some((x, y, None)),
        ExprKind::If { cond, then, els } if visit::is_zero(els) => match &then.kind {
            ExprKind::Binary(BinOp::Mul, x, y) => Some((x, y, Some(cond))),
            _ => None,
        },
        _ => None,
    }
}

/// Replaces the expression at `path` below `e` with `with`, returning it.
pub(super) fn replace_at(e: &mut Expr, path: &[usize], with: &mut Option<Expr>) -> Option<Expr> {
    let Some((&i, rest)) = path.split_first() else {
        return Some(std::mem::replace(e, with.take()?));
    };
    let (mut n, mut out) = (0, None);
    visit::for_each_child_mut(e, &mut |c| {
        if n == i {
            out = replace_at(c, rest, with);
        }
        n += 1;
    });
    out
}

/// Renames the variables `e` reads by `map`.
pub(super) fn rename(e: &mut Expr, map: &HashMap<VarId, VarId>) {
    if let ExprKind::Var(v) = &mut e.kind {
        if let Some(to) = map.get(v) {
            *v = *to;
        }
    }
    visit::for_each_child_mut(e, &mut |x| rename(x, map));
}

/// Records the cost of `def`, and of the definitions inside it, again
/// after a part of its body changed.
pub(super) fn recost(def: &mut TensorDef) {
    recost_expr(&mut def.body);
    def.cost_per_point = expr_cost(&def.body);
}

fn recost_expr(e: &mut Expr) {
    let ExprKind::Block { stmts, result } = &mut e.kind else {
        visit::for_each_child_mut(e, &mut recost_expr);
        return;
    };
    for s in stmts.iter_mut() {
        match s {
            Stmt::Tensor(d) => recost(d),
            Stmt::Gemm(g) => recost(&mut g.reference),
            Stmt::Recurrence(r) => {
                for c in &mut r.clauses {
                    recost_expr(&mut c.body);
                    c.cost_per_point = expr_cost(&c.body);
                }
            }
            other => visit::for_each_stmt_expr_mut(other, &mut recost_expr),
        }
    }
    recost_expr(result);
}
