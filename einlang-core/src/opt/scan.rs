//! Prefix reductions as scans: a sum, product, maximum or minimum over `k
//! in 0..i` (or `0..i + 1`) of the definition's own index `i`, whose terms
//! do not otherwise read `i`, is computed once per point as a running
//! value instead of from scratch (quadratic in the axis's length).
//!
//! ```text
//! let r[b, i] = x[b, i] + sum[k in 0..i](x[b, k]);        // std::array::cumsum
//! ```
//!
//! becomes a recurrence along `i` that the definition reads:
//!
//! ```text
//! recurrence p[b, i]:  p[b, 0] = 0;  p[b, i in 1..M] = p[b, i - 1] + x[b, i - 1]
//! tensor r[b, i] = x[b, i] + p[b, i]
//! ```
//!
//! Every line of `p` reads only itself (`Recurrence::lines`). The terms are
//! the same and combined in the same order (`k` ascending), so the result
//! is that of a reduction taken term by term (a maximum's term replaces
//! the value before when greater, so NaN terms are skipped as in the
//! loop); the code for a plain sum keeps eight partial sums, so the two
//! differ by float reassociation only. A
//! definition qualifies when it covers every point of axes starting at 0
//! (no domain guards), the reduction has one loop, no `where` entries, and
//! its terms read only the loop's variable, the definition's other axes
//! and variables defined before the definition, and have no effect (no
//! call, print or assertion). Each term is evaluated once instead of once
//! per later point: the same terms, so the same errors.

use super::gemm::replace_at;
use super::hoist::substitute_var;
use crate::base::dim::{Dim, DimVar};
use crate::base::ops::{BinOp, RedOp};
use crate::base::scalar::{int_range, ScalarKind};
use crate::ir::cost::expr_cost;
use crate::ir::visit;
use crate::ir::{
    Cover, Expr, ExprKind, Function, Literal, Loop, RecClause, RecIndex, Recurrence, Repr, Stmt, TensorDef, VarId,
};

/// Turns the prefix reductions of `f`'s definitions into scans.
pub fn run(f: &mut Function) {
    let mut at = 0;
    while at < f.body.len() {
        let Stmt::Tensor(def) = &f.body[at] else {
            at += 1;
            continue;
        };
        let mut def = def.clone();
        match scan(f, &mut def) {
            Some(rec) => {
                def.cost_per_point = expr_cost(&def.body);
                f.body[at] = Stmt::Tensor(def);
                f.body.insert(at, Stmt::Recurrence(rec));
                at += 2;
            }
            None => at += 1,
        }
    }
}

/// A prefix reduction of `def`: the axis it runs along, the offset of its
/// end (0 for `0..i`, 1 for `0..i + 1`), its operator, loop variable,
/// terms and type.
struct Prefix {
    axis: usize,
    offset: i64,
    op: RedOp,
    k: VarId,
    term: Expr,
    elem: ScalarKind,
}

/// Replaces the first prefix reduction in `def`'s value by a read of the
/// recurrence it returns.
fn scan(f: &mut Function, def: &mut TensorDef) -> Option<Recurrence> {
    if def.domain_guards != 0 || def.axes.iter().any(|a| a.start != Dim::zero()) {
        return None;
    }
    let axes: Vec<VarId> = def.axes.iter().map(|a| a.index).collect();
    let mut inside = Vec::new();
    visit::defined_in(&def.body, &mut inside);
    let (prefix, path) = find(&def.body, &axes, &inside)?;
    let rank = def.axes.len();
    let p = f.add_var(&format!("{}_prefix", f.var(def.var).source_name), Repr::Tensor(prefix.elem, rank));
    let t = f.add_var(&f.var(axes[prefix.axis]).source_name.clone(), Repr::Scalar(ScalarKind::I64));
    let int = Repr::Scalar(ScalarKind::I64);
    let var = |v: VarId, ty: &Repr| Expr { kind: ExprKind::Var(v), ty: ty.clone() };
    let lit = |n: i64| Expr { kind: ExprKind::Lit(Literal::Int(n.into())), ty: int.clone() };
    let sub = |a: Expr, n: i64| match n {
        0 => a,
        _ => Expr { kind: ExprKind::Binary(BinOp::Sub, Box::new(a), Box::new(lit(n))), ty: int.clone() },
    };
    // A clause over the other axes, with its own loop variables; `value`
    // makes its value from them.
    let clause = |f: &mut Function, cover: Cover, value: &dyn Fn(&[Expr]) -> Expr| {
        let (mut at, mut loops, mut point) = (Vec::new(), Vec::new(), Vec::new());
        for (n, a) in def.axes.iter().enumerate() {
            if n == prefix.axis {
                at.push(RecIndex::Seq(0));
                point.push(var(t, &int));
                continue;
            }
            let v = f.add_var(&f.var(a.index).source_name.clone(), int.clone());
            at.push(RecIndex::Loop(loops.len()));
            loops.push(Loop { index: v, start: Dim::zero(), end: a.extent.clone() });
            point.push(var(v, &int));
        }
        let body = value(&point);
        RecClause { cover: vec![cover], at, loops, cost_per_point: expr_cost(&body), body, prelude: Vec::new() }
    };
    // The term at `k = point[axis] - back`, read at the clause's point.
    let term_at = |point: &[Expr], back: i64| {
        let mut e = prefix.term.clone();
        for (n, a) in axes.iter().enumerate() {
            if n != prefix.axis {
                substitute_var(&mut e, *a, &point[n]);
            }
        }
        substitute_var(&mut e, prefix.k, &sub(point[prefix.axis].clone(), back));
        e
    };
    let ty = Repr::Scalar(prefix.elem);
    // What a reduction over no term gives.
    let identity = match int_range(prefix.elem) {
        Some((lo, hi)) => Literal::Int(match prefix.op {
            RedOp::Sum => 0,
            RedOp::Prod => 1,
            RedOp::Max => lo,
            _ => hi,
        }),
        None => Literal::Float(
            match prefix.op {
                RedOp::Sum => "0.0",
                RedOp::Prod => "1.0",
                RedOp::Max => "-inf",
                _ => "inf",
            }
            .into(),
        ),
    };
    let identity = Expr { kind: ExprKind::Lit(identity), ty: ty.clone() };
    // A maximum keeps the point before unless the term is greater (a NaN
    // term is skipped), as the reduction's loop does; the term is bound
    // once (a variable only an extremum needs).
    let held = matches!(prefix.op, RedOp::Max | RedOp::Min).then(|| f.add_var("term", ty.clone()));
    let combine = |before: Expr, term: Expr| match (prefix.op, held) {
        (RedOp::Sum | RedOp::Prod, _) | (_, None) => {
            let op = if prefix.op == RedOp::Sum { BinOp::Add } else { BinOp::Mul };
            Expr { kind: ExprKind::Binary(op, Box::new(before), Box::new(term)), ty: ty.clone() }
        }
        (op, Some(held)) => {
            let replaces = if op == RedOp::Max { BinOp::Gt } else { BinOp::Lt };
            let t = var(held, &ty);
            let cond = Expr {
                kind: ExprKind::Binary(replaces, Box::new(t.clone()), Box::new(before.clone())),
                ty: Repr::Scalar(ScalarKind::Bool),
            };
            let pick = Expr {
                kind: ExprKind::If { cond: Box::new(cond), then: Box::new(t), els: Box::new(before) },
                ty: ty.clone(),
            };
            Expr {
                kind: ExprKind::Block { stmts: vec![Stmt::Let { var: held, value: term }], result: Box::new(pick) },
                ty: ty.clone(),
            }
        }
    };
    // At 0: no term (`0..i`) or the first (`0..i + 1`).
    let first = clause(f, Cover::At(0), &|point| match prefix.offset {
        0 => identity.clone(),
        _ => term_at(point, 0),
    });
    // Later: the point before, combined with one more term.
    let extent = def.axes[prefix.axis].extent.clone();
    let next = clause(f, Cover::Range(Dim::one(), extent.clone()), &|point| {
        let mut before = point.to_vec();
        before[prefix.axis] = sub(point[prefix.axis].clone(), 1);
        let read = Expr { kind: ExprKind::Read { tensor: p, indices: before, checked: false }, ty: ty.clone() };
        combine(read, term_at(point, 1 - prefix.offset))
    });
    let read = Expr {
        kind: ExprKind::Read { tensor: p, indices: axes.iter().map(|a| var(*a, &int)).collect(), checked: false },
        ty,
    };
    replace_at(&mut def.body, &path, &mut Some(read))?;
    Some(Recurrence {
        var: p,
        elem: prefix.elem,
        extents: def.axes.iter().map(|a| a.extent.clone()).collect(),
        window: None,
        seq: vec![(prefix.axis, Loop { index: t, start: Dim::zero(), end: extent })],
        clear_steps: false,
        wavefront: false,
        // Each line reads only itself (when there are other axes).
        lines: rank > 1,
        clauses: vec![first, next],
    })
}

/// The first prefix reduction in `e` (see the module docs) and the path
/// to it (child positions, as `gemm::replace_at` takes them).
fn find(e: &Expr, axes: &[VarId], inside: &[VarId]) -> Option<(Prefix, Vec<usize>)> {
    if let Some(prefix) = prefix_of(e, axes, inside) {
        return Some((prefix, Vec::new()));
    }
    let (mut n, mut found) = (0, None);
    visit::for_each_child(e, &mut |c| {
        if found.is_none() {
            found = find(c, axes, inside).map(|(p, mut path)| {
                path.insert(0, n);
                (p, path)
            });
        }
        n += 1;
    });
    found
}

fn prefix_of(e: &Expr, axes: &[VarId], inside: &[VarId]) -> Option<Prefix> {
    let ExprKind::Reduce { op: op @ (RedOp::Sum | RedOp::Prod | RedOp::Max | RedOp::Min), loops, wheres, body } =
        &e.kind
    else {
        return None;
    };
    let (Repr::Scalar(elem), [l]) = (&e.ty, &loops[..]) else { return None };
    // Not over half-precision values: the running values would be stored,
    // rounded at every step, where each point's sum accumulates in f32.
    if !wheres.is_empty() || l.start != Dim::zero() || *elem == ScalarKind::Bool || elem.is_half() {
        return None;
    }
    // The end: an axis's index, or one more.
    let (axis, offset) = axes.iter().enumerate().find_map(|(n, a)| {
        let off = l.end.sub(&Dim::var(DimVar(a.0))).as_constant()?;
        (off == 0 || off == 1).then_some((n, off))
    })?;
    // What the terms define inside is theirs; with `0..i + 1` they are
    // copied into two clauses, which may not define a variable twice.
    let mut own = vec![l.index];
    visit::defined_in(body, &mut own);
    if offset == 1 && own.len() > 1 {
        return None;
    }
    let mut ok = true;
    crate::ir::visit::visit_var_uses(body, &mut |v| {
        ok &= v != axes[axis] && (own.contains(&v) || !inside.contains(&v) || axes.contains(&v));
    });
    let effect = |x: &Expr| {
        matches!(x.kind, ExprKind::Call { .. } | ExprKind::Print(_) | ExprKind::Assert { .. } | ExprKind::Fs { .. })
    };
    if !ok || any(body, &effect) {
        return None;
    }
    Some(Prefix { axis, offset, op: *op, k: l.index, term: (**body).clone(), elem: *elem })
}

/// Whether `pred` holds for `e` or any expression inside it.
fn any(e: &Expr, pred: &dyn Fn(&Expr) -> bool) -> bool {
    let mut found = pred(e);
    visit::for_each_child(e, &mut |c| found = found || any(c, pred));
    found
}

#[cfg(test)]
mod tests {
    /// The optimized IR of `src`, printed.
    fn optimized(src: &str) -> String {
        let program = crate::opt::optimize(crate::test_support::lowered(src)).expect("valid IR");
        crate::ir::pretty::pretty_program(&program)
    }

    #[test]
    fn a_prefix_sum_becomes_a_running_value() {
        let ir =
            optimized("pub fn c(x: [f32; N, M]) -> [f32; N, M] { let r[b, i] = x[b, i] + sum[k in 0..i](x[b, k]); r }");
        assert!(ir.contains("recurrence r_prefix[N, M]: f32 lines"), "{ir}");
        assert!(ir.contains("= 0.0f32"), "{ir}");
        assert!(
            ir.contains("(read r_prefix[b_3, i_2 - 1i64] unchecked) + (read x[b_3, i_2 - 1i64] unchecked)"),
            "{ir}"
        );
        assert!(ir.contains("= (read x[b, i] unchecked) + (read r_prefix[b, i] unchecked)"), "{ir}");
        // Inclusive, a product: the first point holds the first term.
        let ir = optimized("pub fn c(x: [f64; M]) -> [f64; M] { let r[i in 0..M] = prod[k in 0..i + 1](x[k]); r }");
        assert!(ir.contains("when [= 0] over [] (cost 2) = read x[i_2] unchecked"), "{ir}");
        assert!(ir.contains("(read r_prefix[i_2 - 1i64] unchecked) * (read x[i_2] unchecked)"), "{ir}");
        // A maximum over nothing is the least value; a term replaces the
        // point before when greater.
        let ir = optimized("pub fn c(x: [i32; M]) -> [i32; M] { let r[i in 0..M] = max[k in 0..i](x[k]); r }");
        assert!(ir.contains("= -2147483648i32"), "{ir}");
        assert!(ir.contains("let term: i32 = read x[i_2 - 1i64] unchecked"), "{ir}");
        assert!(
            ir.contains(
                "if term > (read r_prefix[i_2 - 1i64] unchecked) { term } else { read r_prefix[i_2 - 1i64] unchecked }"
            ),
            "{ir}"
        );
    }

    #[test]
    fn other_sums_stay() {
        for src in [
            // The term reads the index.
            "pub fn c(x: [f64; M]) -> [f64; M] { let r[i in 0..M] = sum[k in 0..i + 1](x[i - k]); r }",
            // The end is not the index, or one more.
            "pub fn c(x: [f64; M]) -> [f64; M] { let r[i in 0..M] = sum[k in 0..i / 2](x[k]); r }",
            "pub fn c(x: [f64; M]) -> [f64; M - 1] { let r[i in 0..M - 1] = sum[k in 0..i + 2](x[k]); r }",
            // Neither a sum, a product nor an extremum.
            "pub fn c(x: [f64; M]) -> [bool; M] { let r[i in 0..M] = all[k in 0..i + 1](x[k] > 0.0); r }",
            // A where entry.
            "pub fn c(x: [f64; M]) -> [f64; M] { let r[i in 0..M] = sum[k in 0..i](x[k] where k > 1); r }",
        ] {
            let ir = optimized(src);
            assert!(!ir.contains("r_prefix"), "{src}\n{ir}");
        }
    }
}
