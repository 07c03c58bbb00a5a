//! Common subexpressions within one value (and a float term added to
//! itself, `x + x`, doubled instead): a costly pure float
//! subexpression that a value computes twice (the `tanh(z)` in a
//! derivative's `1 - tanh(z) * tanh(z)`, the `sin` shared by a primal term
//! and its derivative) is computed once into a scalar `let` of a block.
//!
//! Only what is evaluated whenever the value is: the scope is a value
//! (a definition's body, a clause's, a `let`'s), the branches of an `if`,
//! the body of a reduction or of a guarded value, each on its own; a
//! subexpression under a condition is not moved out of it. Candidates are
//! float, cannot fail (`hoist::pure_float`: no checked read, no integer
//! division) and call a math function or reduce (LLVM already shares plain
//! arithmetic, but not calls into libm such as `tanh`). Host code only,
//! after every other pass (their patterns see the values unchanged).

use super::gemm::replace_at;
use super::hoist::pure_float;
use crate::base::ops::BinOp;
use crate::ir::cost::expr_cost;
use crate::ir::visit;
use crate::ir::{Expr, ExprKind, Function, Literal, Repr, Stmt, VarId};

/// Shares the repeated subexpressions of every value of `f`.
pub fn run(f: &mut Function) {
    super::over_function(f, stmts, scope);
}

fn stmts(f: &mut Function, list: &mut Vec<Stmt>) {
    for s in list.iter_mut() {
        let before = f.vars.len();
        visit::for_each_stmt_expr_mut(s, &mut |e| scope(f, e));
        if f.vars.len() == before {
            continue;
        }
        // A row definition's cost includes its prelude's: kept as it was.
        match s {
            Stmt::Tensor(d) => d.cost_per_point = expr_cost(&d.body),
            Stmt::Recurrence(r) => r.clauses.iter_mut().for_each(|c| c.cost_per_point = expr_cost(&c.body)),
            _ => {}
        }
    }
}

/// `x + x` (the same float term twice, as the derivative of `x * x`
/// gives) as `2.0 * x`: one evaluation of `x`, the same value in IEEE
/// arithmetic (doubling is exact), and a shorter expansion.
fn double_terms(e: &mut Expr) {
    visit::for_each_child_mut(e, &mut double_terms);
    let doubled = match &e.kind {
        ExprKind::Binary(BinOp::Add, a, b) if a == b && matches!(e.ty, Repr::Scalar(k) if k.is_float()) => {
            Some((**a).clone())
        }
        _ => None,
    };
    if let Some(x) = doubled {
        let two = Expr { kind: ExprKind::Lit(Literal::Float("2.0".into())), ty: e.ty.clone() };
        e.kind = ExprKind::Binary(BinOp::Mul, Box::new(two), Box::new(x));
    }
}

/// At most this many subexpressions are shared per scope.
const MAX_SHARED: usize = 16;

/// Shares within the scopes nested in `e`, then within `e`'s own.
fn scope(f: &mut Function, e: &mut Expr) {
    double_terms(e);
    nested(f, e, true);
    if !matches!(e.ty, Repr::Scalar(_)) {
        return;
    }
    let mut lets: Vec<(VarId, Expr)> = Vec::new();
    for _ in 0..MAX_SHARED {
        let mut nodes = Vec::new();
        region(e, &mut Vec::new(), &mut nodes);
        for (k, (_, v)) in lets.iter().enumerate() {
            region(v, &mut vec![usize::MAX, k], &mut nodes);
        }
        let Some((sub, paths)) = repeated(&nodes) else { break };
        let Repr::Scalar(k) = sub.ty else { break };
        let tmp = f.add_var("shared", Repr::Scalar(k));
        let var = Expr { kind: ExprKind::Var(tmp), ty: sub.ty.clone() };
        for p in paths {
            if p.first() == Some(&usize::MAX) {
                replace_at(&mut lets[p[1]].1, &p[2..], &mut Some(var.clone()));
            } else {
                replace_at(e, &p, &mut Some(var.clone()));
            }
        }
        lets.push((tmp, sub));
    }
    if lets.is_empty() {
        return;
    }
    // A shared value may read one shared after it: order by what they read.
    let mut ordered = Vec::new();
    while !lets.is_empty() {
        let pending: Vec<VarId> = lets.iter().map(|(v, _)| *v).collect();
        let ready = lets.iter().position(|(v, x)| {
            let mut reads_pending = false;
            crate::ir::visit::visit_var_uses(x, &mut |u| reads_pending |= u != *v && pending.contains(&u));
            !reads_pending
        });
        let Some(i) = ready else { return };
        ordered.push(lets.remove(i));
    }
    let ty = e.ty.clone();
    let result = std::mem::replace(e, Expr::unit());
    let stmts = ordered.into_iter().map(|(var, value)| Stmt::Let { var, value }).collect();
    *e = Expr { kind: ExprKind::Block { stmts, result: Box::new(result) }, ty };
}

/// Runs [`scope`] on every scope nested in `e` (not `e` itself when `top`).
fn nested(f: &mut Function, e: &mut Expr, top: bool) {
    if !top && is_scope_root(e) {
        scope(f, e);
        return;
    }
    match &mut e.kind {
        ExprKind::If { cond, then, els } => {
            nested(f, cond, false);
            scope(f, then);
            scope(f, els);
        }
        ExprKind::Reduce { body, .. } | ExprKind::Guarded { body, .. } => {
            // Where entries bind and test in order: left as they are.
            scope(f, body);
        }
        ExprKind::Block { stmts: inner, result } => {
            stmts(f, inner);
            scope(f, result);
        }
        _ => visit::for_each_child_mut(e, &mut |c| nested(f, c, false)),
    }
}

/// Expressions whose parts are not all evaluated whenever they are.
fn is_scope_root(e: &Expr) -> bool {
    matches!(
        e.kind,
        ExprKind::If { .. }
            | ExprKind::Reduce { .. }
            | ExprKind::Guarded { .. }
            | ExprKind::Block { .. }
            | ExprKind::Binary(BinOp::And | BinOp::Or, ..)
    )
}

/// The subexpressions of `e` evaluated whenever `e` is (with their child
/// paths): `e`, and its children unless `e` opens a scope of its own. A
/// whole reduction is one, its body is not.
fn region<'e>(e: &'e Expr, path: &mut Vec<usize>, out: &mut Vec<(Vec<usize>, &'e Expr)>) {
    out.push((path.clone(), e));
    if is_scope_root(e) {
        return;
    }
    let mut k = 0;
    visit::for_each_child(e, &mut |c| {
        path.push(k);
        region(c, path, out);
        path.pop();
        k += 1;
    });
}

/// The costliest subexpression worth sharing that occurs more than once
/// among `nodes`, and the paths of its occurrences.
fn repeated(nodes: &[(Vec<usize>, &Expr)]) -> Option<(Expr, Vec<Vec<usize>>)> {
    let mut best: Option<(u64, usize)> = None;
    for (i, (_, x)) in nodes.iter().enumerate() {
        if !worth_sharing(x) {
            continue;
        }
        let cost = expr_cost(x);
        if best.is_some_and(|(c, _)| c >= cost) {
            continue;
        }
        if nodes.iter().enumerate().any(|(j, (_, y))| j != i && *y == *x) {
            best = Some((cost, i));
        }
    }
    let (_, i) = best?;
    let sub = nodes[i].1.clone();
    let paths = nodes.iter().filter(|(_, y)| **y == sub).map(|(p, _)| p.clone()).collect();
    Some((sub, paths))
}

/// A float value that cannot fail and calls a math function or reduces.
fn worth_sharing(e: &Expr) -> bool {
    fn calls(e: &Expr) -> bool {
        let mut found = matches!(e.kind, ExprKind::Intrinsic(..) | ExprKind::Reduce { .. });
        visit::for_each_child(e, &mut |c| found |= calls(c));
        found
    }
    let float = matches!(e.ty, Repr::Scalar(k) if k.is_float());
    let none = std::collections::HashSet::new();
    float && calls(e) && pure_float(e, &none, &none, &mut std::collections::HashSet::new())
}
