//! Loop-invariant guards out of sums: `sum[j](body where g)` with a guard
//! `g` that reads none of the sum's variables becomes `if g { sum[j](body) }
//! else { 0 }`, so the loop runs without a test per term (and vectorizes).
//!
//! Reverse mode makes these: the adjoint step of a recurrence sums over
//! the next step's points under a guard on the step alone (`1 <= t + 1 &&
//! t + 1 < T`). A guard moves when it reads no loop variable of the sum
//! and no variable bound by the sum's where entries, and cannot fail
//! (`hoist::pure_float`: evaluating it once instead of once per term, or
//! also when the sum has no terms, changes nothing).

use std::collections::HashSet;

use super::hoist::pure_float;
use crate::base::ops::RedOp;
use crate::ir::visit;
use crate::ir::{Expr, ExprKind, Function, Literal, Repr, Stmt, VarId, WhereEntry};

/// Lifts the invariant guards of every sum in `f`.
pub fn run(f: &mut Function) {
    for s in &mut f.body {
        stmt(s);
    }
    expr(&mut f.result);
}

fn stmt(s: &mut Stmt) {
    visit::for_each_stmt_expr_mut(s, &mut expr);
}

fn expr(e: &mut Expr) {
    if let ExprKind::Block { stmts, .. } = &mut e.kind {
        stmts.iter_mut().for_each(stmt);
    }
    visit::for_each_child_mut(e, &mut expr);
    let ExprKind::Reduce { op: RedOp::Sum, loops, wheres, .. } = &mut e.kind else { return };
    let Repr::Scalar(k) = e.ty else { return };
    let mut own: HashSet<VarId> = loops.iter().map(|l| l.index).collect();
    for w in wheres.iter() {
        if let WhereEntry::Bind(v, _) = w {
            own.insert(*v);
        }
    }
    let mut lifted = Vec::new();
    wheres.retain(|w| {
        let WhereEntry::Guard(g) = w else { return true };
        let mut reads = HashSet::new();
        let invariant = pure_float(g, &own, &HashSet::new(), &mut reads) && reads.is_disjoint(&own);
        if invariant {
            lifted.push(g.clone());
        }
        !invariant
    });
    let Some(cond) = lifted.into_iter().reduce(|a, b| Expr {
        kind: ExprKind::Binary(crate::base::ops::BinOp::And, Box::new(a), Box::new(b)),
        ty: Repr::Scalar(crate::base::scalar::ScalarKind::Bool),
    }) else {
        return;
    };
    let zero = Expr {
        kind: ExprKind::Lit(if k.is_float() { Literal::Float("0.0".into()) } else { Literal::Int(0) }),
        ty: e.ty.clone(),
    };
    let sum = std::mem::replace(e, zero.clone());
    *e = Expr {
        kind: ExprKind::If { cond: Box::new(cond), then: Box::new(sum), els: Box::new(zero) },
        ty: Repr::Scalar(k),
    };
}
