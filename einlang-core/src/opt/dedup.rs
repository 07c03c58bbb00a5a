//! Duplicate definitions: a tensor defined exactly like an earlier one of
//! the same statement list (the same element type, axis ranges and value,
//! up to the names of index variables) is not computed again; its uses
//! read the earlier one.
//!
//! Gradients make these: the reverse of a packed convolution packs the
//! input again for the kernel's gradient (`d_k_cols`), exactly as the
//! forward pass did (`y_cols`), megabytes of copies each time.
//!
//! A packed tensor is consumed by a reshape (which takes it by value), so
//! duplicate `d` of `p` is only merged when every use of `d` is
//! - a reshape to dimensions that an earlier reshape of `p` (before that
//!   use) already has: that reshape's result stands for this one's, or
//! - a reshape to other dimensions, when an earlier reshape's result is not
//!   read from that use on: the use reshapes that result instead (the
//!   same elements in the same order: a convolution's columns read per
//!   image by the forward product, as one matrix by the kernel's
//!   gradient), or
//! - a read before `p` is first reshaped (while `p` is still there);
//!
//! and its value cannot fail (float or integer arithmetic on reads proven
//! in bounds, `ir::equiv::alpha_eq` compares nothing else). Only top-level
//! statements are compared.

use std::collections::HashMap;

use crate::base::dim::Dim;
use crate::ir::equiv::alpha_eq;
use crate::ir::visit;
use crate::ir::visit::{visit_stmt_var_uses, visit_var_uses};
use crate::ir::{Expr, ExprKind, Function, Stmt, VarId};

/// Merges the duplicate definitions of `f`'s top-level statements.
pub fn run(f: &mut Function) {
    let mut i = 0;
    while i < f.body.len() {
        if let Some(plan) = duplicate_of(f, i) {
            apply(f, plan);
            // Statements after `i` moved up by one or more; look at `i` again.
            continue;
        }
        i += 1;
    }
}

/// How to merge the definition at `d` into an earlier one: the statements
/// to remove (`d` and its reshapes) and the renames of their variables.
struct Plan {
    remove: Vec<usize>,
    renames: HashMap<VarId, VarId>,
    /// Reshapes (by position) that reshape another variable instead.
    sources: Vec<(usize, VarId)>,
}

/// The dimension with every extent variable of the statements before `at`
/// replaced by its value: `oy_len` (an `extent oy_len = H - KH + 1`) and
/// `H - KH + 1` compare equal. (An extent statement fails when its value
/// is negative, so where it ran the two are the same number.)
fn norm(f: &Function, at: usize, d: &Dim) -> Dim {
    let mut d = d.clone();
    for s in f.body[..at.min(f.body.len())].iter().rev() {
        if let Stmt::Extent { var, value, .. } = s {
            d = d.substitute(&|v| (v.0 == var.0).then(|| value.clone()));
        }
    }
    d
}

fn duplicate_of(f: &Function, d: usize) -> Option<Plan> {
    let Stmt::Tensor(dup) = &f.body[d] else { return None };
    if dup.domain_guards != 0 {
        return None;
    }
    let original = f.body[..d].iter().find_map(|s| {
        let Stmt::Tensor(p) = s else { return None };
        if p.domain_guards != 0 || p.elem != dup.elem || p.axes.len() != dup.axes.len() {
            return None;
        }
        let mut map = HashMap::new();
        for (a, b) in dup.axes.iter().zip(&p.axes) {
            if norm(f, d, &a.start) != norm(f, d, &b.start) || norm(f, d, &a.extent) != norm(f, d, &b.extent) {
                return None;
            }
            map.insert(a.index, b.index);
        }
        alpha_eq(&dup.body, &p.body, &mut map).then_some(p.var)
    })?;
    // Where the original is reshaped: position, result and dimensions.
    let reshapes: Vec<(usize, VarId, &Vec<Dim>)> = f
        .body
        .iter()
        .enumerate()
        .filter_map(|(j, s)| match s {
            Stmt::Reshape { var, source, dims, .. } if *source == original => Some((j, *var, dims)),
            _ => None,
        })
        .collect();
    let first_reshape = reshapes.first().map(|r| r.0).unwrap_or(usize::MAX);
    let mut plan = Plan { remove: vec![d], renames: HashMap::from([(dup.var, original)]), sources: Vec::new() };
    // Whether `v` is read at position `from` or later (or in the result).
    let read_from = |v: VarId, from: usize| {
        let mut read = false;
        for s in &f.body[from..] {
            visit_stmt_var_uses(s, &mut |u| read |= u == v);
        }
        visit_var_uses(&f.result, &mut |u| read |= u == v);
        read
    };
    for (j, s) in f.body.iter().enumerate().skip(d + 1) {
        let mut uses = 0;
        visit_stmt_var_uses(s, &mut |v| uses += usize::from(v == dup.var));
        if uses == 0 {
            continue;
        }
        match s {
            Stmt::Reshape { var, source, dims, .. } if *source == dup.var => {
                let same = |ds: &Vec<Dim>| {
                    ds.len() == dims.len() && ds.iter().zip(dims).all(|(a, b)| norm(f, j, a) == norm(f, j, b))
                };
                if let Some((_, earlier, _)) = reshapes.iter().find(|(at, _, ds)| *at < j && same(ds)) {
                    plan.remove.push(j);
                    plan.renames.insert(*var, *earlier);
                } else {
                    let (_, earlier, _) = reshapes.iter().rev().find(|(at, r, _)| *at < j && !read_from(*r, j))?;
                    if plan.sources.iter().any(|(_, r)| r == earlier) {
                        return None;
                    }
                    plan.sources.push((j, *earlier));
                }
            }
            _ if j < first_reshape => {}
            _ => return None,
        }
    }
    let mut in_result = false;
    visit_var_uses(&f.result, &mut |v| in_result |= v == dup.var);
    if in_result && first_reshape != usize::MAX {
        return None;
    }
    Some(plan)
}

fn apply(f: &mut Function, mut plan: Plan) {
    for &(j, from) in &plan.sources {
        if let Stmt::Reshape { source, .. } = &mut f.body[j] {
            *source = from;
        }
    }
    plan.remove.sort_unstable();
    for &j in plan.remove.iter().rev() {
        f.body.remove(j);
    }
    for s in &mut f.body {
        rename_stmt(s, &plan.renames);
    }
    rename_expr(&mut f.result, &plan.renames);
}

fn rename_stmt(s: &mut Stmt, map: &HashMap<VarId, VarId>) {
    let swap = |v: &mut VarId| {
        if let Some(to) = map.get(v) {
            *v = *to;
        }
    };
    match s {
        Stmt::Gemm(g) => {
            swap(&mut g.a);
            swap(&mut g.b);
        }
        Stmt::Reshape { source, .. } => swap(source),
        Stmt::CheckResultDim { tensor, .. } => swap(tensor),
        _ => {}
    }
    visit::for_each_stmt_expr_mut(s, &mut |e| rename_expr(e, map));
}

fn rename_expr(e: &mut Expr, map: &HashMap<VarId, VarId>) {
    match &mut e.kind {
        ExprKind::Var(v) | ExprKind::Read { tensor: v, .. } => {
            if let Some(to) = map.get(v) {
                *v = *to;
            }
        }
        ExprKind::Block { stmts, .. } => {
            for s in stmts.iter_mut() {
                rename_stmt(s, map);
            }
        }
        _ => {}
    }
    visit::for_each_child_mut(e, &mut |c| rename_expr(c, map));
}
