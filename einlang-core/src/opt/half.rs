//! Half precision (`f16`, `bf16`): arithmetic in `f32`, rounding where a
//! value is stored.
//!
//! The language's meaning (LANGUAGE.md §2): a half-precision value is
//! stored in 16 bits, but an expression over such values computes in
//! `f32` and rounds once when its value is stored (a tensor's element, a
//! `let`, a result, an argument); a reduction accumulates in `f32`. This
//! pass writes that meaning into the IR, so that no back end does
//! arithmetic on half-precision values: every expression of a half type
//! that computes (an operator, a math function, a reduction, a cast to a
//! half type) becomes the same expression in `f32`, its half-precision
//! operands read through a cast to `f32` (exact), and a cast back to the
//! half type where the value is stored. Comparisons, `max`/`min` and the
//! bodies of `argmax`/`argmin` over half values compare their `f32` values
//! (the same order). Reads, variables, calls and the like keep their half
//! type: they are storage.
//!
//! Runs after the structural passes, which see the program as written (a
//! contraction of `f16` operands is recognized as a GEMM of `f16`, which
//! the runtime accumulates in `f32`), and before `cse`, whose shared
//! values then hold `f32` values and do not round.

use crate::base::scalar::ScalarKind;
use crate::ir::{self, Expr, ExprKind, Repr, Stmt, WhereEntry};

/// Rewrites `f`'s half-precision arithmetic into `f32` (see the module
/// docs). A function without half-precision values is left as it is.
pub fn run(f: &mut ir::Function) {
    for s in &mut f.body {
        stmt(s);
    }
    let result = std::mem::replace(&mut f.result, Expr::unit());
    f.result = fix(result);
}

fn stmt(s: &mut Stmt) {
    ir::visit::for_each_stmt_expr_mut(s, &mut |e| {
        let taken = std::mem::replace(e, Expr::unit());
        *e = fix(taken);
    });
}

/// The half type of a scalar expression, if it has one.
fn half(e: &Expr) -> Option<ScalarKind> {
    match e.ty {
        Repr::Scalar(k) if k.is_half() => Some(k),
        _ => None,
    }
}

const F32: Repr = Repr::Scalar(ScalarKind::F32);

fn cast(e: Expr, to: ScalarKind) -> Expr {
    Expr { kind: ExprKind::Cast(Box::new(e), to), ty: Repr::Scalar(to) }
}

/// `e` with its own type, its half-precision arithmetic done in `f32` and
/// rounded once, here.
fn fix(e: Expr) -> Expr {
    if let Some(k) = half(&e) {
        return match e.kind {
            ExprKind::Unary(..) | ExprKind::Binary(..) | ExprKind::Intrinsic(..) | ExprKind::Reduce { .. } => {
                cast(widen(e), k)
            }
            // A conversion rounds once, from the value it converts.
            ExprKind::Cast(x, to) => {
                let x = if half(&x).is_some() { widen(*x) } else { fix(*x) };
                if x.ty == e.ty {
                    x
                } else {
                    cast(x, to)
                }
            }
            // Transparent: the value stored is that of a branch, the body,
            // the block's result (a definition's guards stay its root).
            kind => children(Expr { kind, ty: e.ty }),
        };
    }
    match e.kind {
        // Comparisons of half values compare their f32 values.
        ExprKind::Binary(op, a, b) if half(&a).is_some() => {
            Expr { kind: ExprKind::Binary(op, Box::new(widen(*a)), Box::new(widen(*b))), ty: e.ty }
        }
        ExprKind::Cast(x, to) if half(&x).is_some() => {
            let x = widen(*x);
            if to == ScalarKind::F32 {
                x
            } else {
                cast(x, to)
            }
        }
        // `argmax`, `argmin`, `all`, `any` of half-precision terms.
        ExprKind::Reduce { op, loops, wheres, body } if half(&body).is_some() => Expr {
            kind: ExprKind::Reduce { op, loops, wheres: fix_wheres(wheres), body: Box::new(widen(*body)) },
            ty: e.ty,
        },
        kind => children(Expr { kind, ty: e.ty }),
    }
}

/// `e` with `fix` applied to everything directly inside it (the
/// expressions of its blocks' statements included).
fn children(mut e: Expr) -> Expr {
    ir::visit::for_each_child_mut(&mut e, &mut |x| {
        let taken = std::mem::replace(x, Expr::unit());
        *x = fix(taken);
    });
    e
}

fn fix_wheres(wheres: Vec<WhereEntry>) -> Vec<WhereEntry> {
    wheres
        .into_iter()
        .map(|w| match w {
            WhereEntry::Bind(v, x) => WhereEntry::Bind(v, fix(x)),
            WhereEntry::Guard(x) => WhereEntry::Guard(fix(x)),
        })
        .collect()
}

/// The `f32` value of `e`, an expression of a half type, computed in `f32`
/// throughout: operators, math functions and reductions over `f32`
/// operands, stored values (reads, variables, calls) converted exactly.
fn widen(e: Expr) -> Expr {
    let Some(k) = half(&e) else { return fix(e) };
    let kind = match e.kind {
        ExprKind::Lit(l) => ExprKind::Lit(l),
        ExprKind::Unary(op, x) => ExprKind::Unary(op, Box::new(widen(*x))),
        ExprKind::Binary(op, a, b) => ExprKind::Binary(op, Box::new(widen(*a)), Box::new(widen(*b))),
        ExprKind::Intrinsic(i, args) => ExprKind::Intrinsic(i, args.into_iter().map(widen).collect()),
        ExprKind::Reduce { op, loops, wheres, body } => {
            ExprKind::Reduce { op, loops, wheres: fix_wheres(wheres), body: Box::new(widen(*body)) }
        }
        ExprKind::Guarded { wheres, body } => {
            ExprKind::Guarded { wheres: fix_wheres(wheres), body: Box::new(widen(*body)) }
        }
        ExprKind::If { cond, then, els } => {
            ExprKind::If { cond: Box::new(fix(*cond)), then: Box::new(widen(*then)), els: Box::new(widen(*els)) }
        }
        ExprKind::Block { mut stmts, result } => {
            stmts.iter_mut().for_each(stmt);
            ExprKind::Block { stmts, result: Box::new(widen(*result)) }
        }
        // `x as f16` inside an expression: rounded to the half type (the
        // cast says so), then computed with in f32.
        ExprKind::Cast(x, to) => {
            let x = if half(&x).is_some() { widen(*x) } else { fix(*x) };
            let rounded = if x.ty == e.ty { x } else { cast(x, to) };
            return cast(rounded, ScalarKind::F32);
        }
        // Storage: exact in f32.
        kind => return cast(children(Expr { kind, ty: Repr::Scalar(k) }), ScalarKind::F32),
    };
    Expr { kind, ty: F32 }
}
