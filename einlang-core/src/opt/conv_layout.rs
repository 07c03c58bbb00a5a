//! Convolutions in other layouts: a definition whose sum is a
//! two-dimensional convolution with the channel anywhere in the image's
//! axes (channels last, `x[n, i + r, j + s, c]`), the filter's axes in any
//! order (`k[r, s, c, o]`, `k[o, r, s, c]`) or the output's axes in any
//! order (`y[n, i, j, o]`) runs `opt::conv`'s direct kernel on copies in
//! the layouts the kernel takes: the image as `[n, c, row, column]`, the
//! filters as `[o, c, r, s]`, the result as `[n, o, i, j]`, then copied into
//! the definition's own order (a copy `opt::conv` folds into the kernel,
//! which then writes the definition through a permuted view:
//! `Conv::out_order`). Each copy is a permutation (a blocked copy
//! at the machine's copy bandwidth); the convolution's arithmetic is nine
//! or more multiply-adds per element of the image and of the result, so
//! the copies cost a few percent where `pack`'s columns for these layouts
//! (a gathered element per term) cost several times the convolution.
//!
//! A definition qualifies when one of its sums (found as `gemm`'s are) has
//! three loops and is the product of two reads: `k`, of rank 4, at the
//! filter variable `o` (one of the definition's axes) and three of the
//! sum's variables, each once; `x`, of the definition's rank, at the
//! image axis `n` (rank 4), at the channel `c` (a variable `k` is read at
//! too) and at two indices each naming one of the definition's remaining
//! axes (through the sum's or the definition's `where` bindings), in any
//! positions, the images first. Nothing changes unless some layout differs from the
//! kernel's and the rewritten definition is what `opt::conv` turns into
//! its kernel (`conv::recognises`, checked on the candidate before
//! anything is replaced): every other form keeps `pack`'s product.
//!
//! Host code only, `f32`, like `opt::conv`; it runs just before it.

use std::collections::HashMap;

use super::conv;
use super::gemm::{first_sum, sum_factors};
use crate::base::dim::Dim;
use crate::base::scalar::ScalarKind;
use crate::ir::visit;
use crate::ir::{Axis, Expr, ExprKind, Function, Repr, Stmt, TensorDef, VarId, WhereEntry};

/// Rewrites every qualifying definition of `f`, wherever it is.
pub fn run(f: &mut Function) {
    super::over_function(f, stmts, |f, e| super::in_blocks(f, e, stmts));
}

fn stmts(f: &mut Function, list: &mut Vec<Stmt>) {
    let mut i = 0;
    while i < list.len() {
        let plan = match &list[i] {
            Stmt::Tensor(def) => find(f, def),
            _ => None,
        };
        if let Some(plan) = plan {
            if let Some(new) = rewrite(f, &list[..i], &list[i], &plan) {
                let added = new.len() - 1;
                list.splice(i..=i, new);
                i += added;
            }
        }
        visit::for_each_stmt_expr_mut(&mut list[i], &mut |e| super::in_blocks(f, e, stmts));
        i += 1;
    }
}

/// What a qualifying definition reads, and where.
struct Plan {
    x: VarId,
    /// The read of `x` in the sum, as written.
    x_read: Expr,
    /// The axes of `x` holding the image (rank 4), the channel, and the
    /// rows and columns of the window's reads (paired with `i` and `j`).
    x_axes: Vec<usize>,
    k: VarId,
    k_read: Expr,
    /// The variables of `k`'s read in the kernel's order: `o, c, r, s`.
    k_vars: [VarId; 4],
    /// The definition's axes in the kernel's order (`n, o, i, j`, or `o,
    /// i, j` for one image), as positions in its axes.
    y_axes: Vec<usize>,
}

fn var_of(e: &Expr) -> Option<VarId> {
    match e.kind {
        ExprKind::Var(v) => Some(v),
        _ => None,
    }
}

/// Whether `e` mentions `v`, through the bindings `binds`.
fn mentions(e: &Expr, v: VarId, binds: &HashMap<VarId, &Expr>, depth: usize) -> bool {
    let mut found = false;
    visit::visit_var_uses(e, &mut |u| {
        found |= u == v || (depth < 8 && binds.get(&u).is_some_and(|b| mentions(b, v, binds, depth + 1)));
    });
    found
}

fn find(f: &Function, def: &TensorDef) -> Option<Plan> {
    if def.elem != ScalarKind::F32 || !(3..=4).contains(&def.axes.len()) {
        return None;
    }
    let rank = def.axes.len();
    let axes: Vec<VarId> = def.axes.iter().map(|a| a.index).collect();
    let mut binds: HashMap<VarId, &Expr> = HashMap::new();
    if let ExprKind::Guarded { wheres, .. } = &def.body.kind {
        for w in wheres {
            if let WhereEntry::Bind(v, e) = w {
                binds.insert(*v, e);
            }
        }
    }
    let tensor_rank = |t: VarId| match f.vars.get(t.0 as usize).map(|v| &v.ty) {
        Some(Repr::Tensor(ScalarKind::F32, r)) => Some(*r),
        _ => None,
    };
    first_sum(def, |sum, _, _| {
        let ExprKind::Reduce { loops, wheres, body, .. } = &sum.kind else { return None };
        if loops.len() != 3 {
            return None;
        }
        let loop_vars: Vec<VarId> = loops.iter().map(|l| l.index).collect();
        let mut binds = binds.clone();
        for w in wheres {
            if let WhereEntry::Bind(v, e) = w {
                binds.insert(*v, e);
            }
        }
        let (p, q, _) = sum_factors(body)?;
        // `k`: every index a variable, one of them an axis of the
        // definition (the filter), the others the sum's three variables.
        let as_kernel = |e: &Expr| -> Option<(VarId, Vec<VarId>)> {
            let ExprKind::Read { tensor, indices, checked: false } = &e.kind else { return None };
            let vars: Vec<VarId> = indices.iter().map(var_of).collect::<Option<_>>()?;
            if vars.len() != 4 {
                return None;
            }
            let filters = vars.iter().filter(|v| axes.contains(v)).count();
            let summed = vars.iter().filter(|v| loop_vars.contains(v)).count();
            let distinct = (0..4).all(|a| (0..a).all(|b| vars[a] != vars[b]));
            (tensor_rank(*tensor)? == 4 && filters == 1 && summed == 3 && distinct).then_some((*tensor, vars))
        };
        let ((k, kv), xe, ke) = match (as_kernel(p), as_kernel(q)) {
            (Some(m), _) => (m, q, p),
            (None, Some(m)) => (m, p, q),
            _ => return None,
        };
        let ExprKind::Read { tensor: x, indices: xi, .. } = &xe.kind else { return None };
        if tensor_rank(*x)? != rank || xi.len() != rank || *x == k {
            return None;
        }
        let o = *kv.iter().find(|v| axes.contains(v))?;
        // The image axis (rank 4): a plain read at an axis that `k` does
        // not read; the channel: a plain read at a summed variable `k` reads.
        let n = if rank == 4 {
            let n = *axes.iter().find(|a| **a != o && xi.iter().any(|e| var_of(e) == Some(**a)))?;
            Some(n)
        } else {
            None
        };
        let c = xi.iter().filter_map(var_of).find(|v| loop_vars.contains(v) && kv.contains(v))?;
        let spatial: Vec<VarId> = axes.iter().copied().filter(|a| *a != o && Some(*a) != n).collect();
        let [i, j] = spatial[..] else { return None };
        let x_pos = |pred: &dyn Fn(&Expr) -> bool| -> Option<usize> {
            let hits: Vec<usize> = (0..rank).filter(|&a| pred(&xi[a])).collect();
            (hits.len() == 1).then(|| hits[0])
        };
        let x_n = n.map(|n| x_pos(&|e| var_of(e) == Some(n)));
        // The images are `x`'s first axis, as in every layout the kernel
        // is asked for. (A kernel gradient, `sum[n, i, j](dy[n, o, i, j] *
        // x[n, c, i + r, j + s])`, has this module's form too, with `c` as
        // the images and the batch summed as channels: a window the size
        // of an image over an output the size of a window, which the
        // kernel's tiles of positions would run nearly empty.)
        if x_n.is_some_and(|a| a != Some(0)) {
            return None;
        }
        let x_c = x_pos(&|e| var_of(e) == Some(c))?;
        let x_i = x_pos(&|e| var_of(e) != Some(c) && mentions(e, i, &binds, 0))?;
        let x_j = x_pos(&|e| var_of(e) != Some(c) && mentions(e, j, &binds, 0))?;
        // The window's variable along each: the summed variable other than
        // `c` that the row's (column's) index mentions.
        let window_var = |a: usize| -> Option<VarId> {
            let hits: Vec<VarId> =
                loop_vars.iter().copied().filter(|v| *v != c && mentions(&xi[a], *v, &binds, 0)).collect();
            (hits.len() == 1).then(|| hits[0])
        };
        let (r, s) = (window_var(x_i)?, window_var(x_j)?);
        if r == s || !kv.contains(&r) || !kv.contains(&s) {
            return None;
        }
        let mut x_axes: Vec<usize> = x_n.into_iter().collect::<Option<Vec<_>>>()?;
        x_axes.extend([x_c, x_i, x_j]);
        let pos = |v: VarId| axes.iter().position(|a| *a == v);
        let mut y_axes: Vec<usize> = n.map(pos).into_iter().collect::<Option<Vec<_>>>()?;
        y_axes.extend([pos(o)?, pos(i)?, pos(j)?]);
        if !permutation(&x_axes) || !permutation(&y_axes) {
            return None;
        }
        Some(Plan { x: *x, x_read: xe.clone(), x_axes, k, k_read: ke.clone(), k_vars: [o, c, r, s], y_axes })
    })
}

/// Whether `order` names every position below its length once.
fn permutation(order: &[usize]) -> bool {
    (0..order.len()).all(|a| order.contains(&a))
}

fn identity(order: &[usize]) -> bool {
    order.iter().enumerate().all(|(a, b)| a == *b)
}

fn index_var(v: VarId) -> Expr {
    Expr { kind: ExprKind::Var(v), ty: Repr::Scalar(ScalarKind::I64) }
}

fn read(tensor: VarId, indices: Vec<Expr>) -> Expr {
    Expr { kind: ExprKind::Read { tensor, indices, checked: false }, ty: Repr::Scalar(ScalarKind::F32) }
}

/// Replaces every occurrence of `from` below `e` with `to`.
fn replace(e: &mut Expr, from: &Expr, to: &Expr) {
    if e == from {
        *e = to.clone();
    } else {
        visit::for_each_child_mut(e, &mut |c| replace(c, from, to));
    }
}

/// A copy of tensor `t` with its axes in `order` (axis `a` of the copy is
/// axis `order[a]` of `t`, its index named `names[a]`), over `t`'s extents.
fn permuted_copy(
    f: &mut Function,
    list: &[Stmt],
    t: VarId,
    order: &[usize],
    names: &[&str],
    name: &str,
) -> Option<TensorDef> {
    let extents: Vec<_> = (0..order.len()).map(|a| conv::extent_of(f, list, t, a)).collect::<Option<_>>()?;
    let axes: Vec<Axis> = order
        .iter()
        .zip(names)
        .map(|(&a, index)| Axis {
            index: f.add_var(index, Repr::Scalar(ScalarKind::I64)),
            start: Dim::zero(),
            extent: extents[a].clone(),
        })
        .collect();
    let mut indices = vec![Expr::unit(); order.len()];
    for (b, &a) in order.iter().enumerate() {
        indices[a] = index_var(axes[b].index);
    }
    let var = f.add_var(name, Repr::Tensor(ScalarKind::F32, order.len()));
    Some(TensorDef::new(var, ScalarKind::F32, axes, read(t, indices)))
}

/// The statements that replace `stmt` (the definition `plan` was found
/// in), when the rewritten definition is the kernel's convolution.
fn rewrite(f: &mut Function, before: &[Stmt], stmt: &Stmt, plan: &Plan) -> Option<Vec<Stmt>> {
    let Stmt::Tensor(def) = stmt else { return None };
    let ExprKind::Read { indices: ki, .. } = &plan.k_read.kind else { return None };
    let k_order: Vec<usize> =
        plan.k_vars.iter().map(|v| ki.iter().position(|e| var_of(e) == Some(*v))).collect::<Option<_>>()?;
    if !permutation(&k_order) {
        return None;
    }
    if identity(&plan.x_axes) && identity(&k_order) && identity(&plan.y_axes) {
        return None;
    }
    let name = f.vars.get(def.var.0 as usize)?.source_name.clone();
    let mut out = Vec::new();
    let mut prefix: Vec<Stmt> = before.to_vec();
    let mut body = def.body.clone();
    if !identity(&plan.x_axes) {
        let names: &[&str] = if plan.x_axes.len() == 4 { &["n", "c", "h", "w"] } else { &["c", "h", "w"] };
        let copy = permuted_copy(f, before, plan.x, &plan.x_axes, names, &format!("{name}_image"))?;
        let ExprKind::Read { indices: xi, .. } = &plan.x_read.kind else { return None };
        let moved = read(copy.var, plan.x_axes.iter().map(|&a| xi[a].clone()).collect());
        replace(&mut body, &plan.x_read, &moved);
        prefix.push(Stmt::Tensor(copy.clone()));
        out.push(Stmt::Tensor(copy));
    }
    if !identity(&k_order) {
        let copy = permuted_copy(f, before, plan.k, &k_order, &["o", "c", "r", "s"], &format!("{name}_filters"))?;
        let moved = read(copy.var, plan.k_vars.iter().map(|v| index_var(*v)).collect());
        replace(&mut body, &plan.k_read, &moved);
        prefix.push(Stmt::Tensor(copy.clone()));
        out.push(Stmt::Tensor(copy));
    }
    let mut conv_def = def.clone();
    conv_def.body = body;
    if !identity(&plan.y_axes) {
        conv_def.var = f.add_var(&format!("{name}_nchw"), Repr::Tensor(ScalarKind::F32, def.axes.len()));
        conv_def.axes = plan.y_axes.iter().map(|&a| def.axes[a].clone()).collect();
    }
    if !conv::recognises(f, &prefix, &conv_def) {
        return None;
    }
    if identity(&plan.y_axes) {
        out.push(Stmt::Tensor(conv_def));
    } else {
        // The definition's own order: a copy of the kernel's result.
        let axes: Vec<Axis> = def
            .axes
            .iter()
            .map(|a| {
                let index = f.vars.get(a.index.0 as usize).map_or("a".to_string(), |v| v.source_name.clone());
                Axis { index: f.add_var(&index, Repr::Scalar(ScalarKind::I64)), ..a.clone() }
            })
            .collect();
        let indices = plan.y_axes.iter().map(|&a| index_var(axes[a].index)).collect();
        let copy = TensorDef::new(def.var, def.elem, axes, read(conv_def.var, indices));
        out.push(Stmt::Tensor(conv_def));
        out.push(Stmt::Tensor(copy));
    }
    Some(out)
}
