//! The loop IR's cost model: a rough, back-end-neutral estimate of the
//! scalar operations one evaluation of an expression takes.
//!
//! Lowering records it per point of every tensor definition and recurrence
//! clause (`cost_per_point`), and passes that rewrite a body record it
//! again. Back ends multiply it by the number of points to decide how to
//! run a loop nest (on several threads, in blocks); the estimate itself
//! says nothing about how.

use crate::base::dim::Dim;
use crate::base::intrinsic::Intrinsic;
use crate::ir::{Axis, CollectStep, Expr, ExprKind, FmtPart, Stmt, WhereEntry};

/// How many iterations a loop or axis whose extent is not a constant counts
/// as.
const SYMBOLIC_TRIPS: u64 = 64;

/// A rough count of scalar operations to evaluate `e` once. Loops whose
/// trip count is not a constant count as `SYMBOLIC_TRIPS` (64) iterations;
/// calls, file access and blocks carry fixed surcharges.
pub fn expr_cost(e: &Expr) -> u64 {
    use ExprKind as K;
    let own = 1u64;
    let children: u64 = match &e.kind {
        K::DynMap { inputs, body, .. } => {
            inputs.iter().map(expr_cost).sum::<u64>() + expr_cost(body).saturating_mul(SYMBOLIC_TRIPS)
        }
        K::Lit(_) | K::Var(_) | K::Dim(_) => 0,
        K::Unary(_, x) | K::Cast(x, _) | K::Field(x, _) => expr_cost(x),
        K::Binary(_, a, b) => expr_cost(a) + expr_cost(b),
        K::Intrinsic(f, args) => args.iter().map(expr_cost).sum::<u64>() + intrinsic_cost(*f),
        K::Tuple(args) => args.iter().map(expr_cost).sum::<u64>() + 4,
        K::Call { args, .. } => args.iter().map(expr_cost).sum::<u64>() + 64,
        K::Read { indices, .. } | K::View { indices, .. } => indices.iter().map(expr_cost).sum(),
        K::Reduce { loops, wheres, body, .. } => {
            let count = loops.iter().map(|l| trips(&l.end.sub(&l.start))).fold(1u64, u64::saturating_mul);
            let inner = expr_cost(body)
                + wheres
                    .iter()
                    .map(|w| match w {
                        WhereEntry::Bind(_, x) | WhereEntry::Guard(x) => expr_cost(x),
                    })
                    .sum::<u64>();
            count.saturating_mul(inner + 1)
        }
        K::Guarded { wheres, body } => {
            expr_cost(body)
                + wheres
                    .iter()
                    .map(|w| match w {
                        WhereEntry::Bind(_, x) | WhereEntry::Guard(x) => expr_cost(x),
                    })
                    .sum::<u64>()
        }
        K::If { cond, then, els } => expr_cost(cond) + expr_cost(then).max(expr_cost(els)),
        K::Block { result, .. } => expr_cost(result) + 16,
        K::ArrayLit { elems, .. } | K::Print(elems) => elems.iter().map(expr_cost).sum(),
        K::Format(parts) => {
            parts.iter().map(|p| if let FmtPart::Value(x, _) = p { expr_cost(x) + 16 } else { 1 }).sum()
        }
        K::Assert { cond, message } => expr_cost(cond) + expr_cost(message),
        K::Len { .. } | K::ShapeOf { .. } => 1,
        K::DynShape { value, arg, .. } => expr_cost(value) + expr_cost(arg) + 64,
        K::JaggedLit { rows } => rows.iter().map(expr_cost).sum::<u64>() + 16,
        K::JaggedRow { index, .. } => expr_cost(index) + 4,
        K::ShapeCast { value, .. } => expr_cost(value) + 8,
        K::LoadNpy { .. } | K::SaveNpy { .. } | K::Fs { .. } => 1 << 20,
        K::Collect { steps, body, .. } => {
            let count = steps
                .iter()
                .map(|s| match s {
                    CollectStep::Loop(l) => trips(&l.end.sub(&l.start)),
                    CollectStep::Where(_) => 1,
                })
                .fold(1u64, u64::saturating_mul);
            count.saturating_mul(expr_cost(body) + 2)
        }
    };
    own.saturating_add(children)
}

/// The iterations a loop or axis of extent `extent` counts as: the
/// constant, at least one, or `SYMBOLIC_TRIPS`.
fn trips(extent: &Dim) -> u64 {
    extent.as_constant().map(|c| c.max(1) as u64).unwrap_or(SYMBOLIC_TRIPS)
}

/// The points `axes` span, counted as `trips` counts each extent.
fn points(axes: &[Axis]) -> u64 {
    axes.iter().map(|a| trips(&a.extent)).fold(1u64, u64::saturating_mul)
}

/// The share of each point of a row in the work of the statements that run
/// once per row before it (the prelude of a `Rows`, whose row is `row`:
/// the definition's axes after the first): each statement's cost per point
/// times its points, spread over the row's points. A reduction over the
/// row in the prelude (a softmax's maximum) thus costs each point about
/// one term, whether the row's extent is a constant or not: a symbolic
/// extent counts as `SYMBOLIC_TRIPS` both as the reduction's trips and as
/// the row's points.
pub fn row_prelude_share(prelude: &[Stmt], row: &[Axis]) -> u64 {
    let work = |cost: u64, axes: &[Axis]| cost.saturating_mul(points(axes));
    let total = prelude
        .iter()
        .map(|s| match s {
            Stmt::Tensor(t) => work(t.cost_per_point, &t.axes),
            Stmt::Rows(r) => work(r.def.cost_per_point, &r.def.axes),
            Stmt::Gemm(g) => work(g.reference.cost_per_point, &g.reference.axes),
            Stmt::Let { value, .. } => expr_cost(value),
            _ => 0,
        })
        .fold(0u64, u64::saturating_add);
    total.div_ceil(points(row))
}

/// The operations of one intrinsic beyond its arguments': a few for those
/// one or two instructions compute (a square root, a rounding, a
/// comparison), more for the polynomial approximations (`exp`, `tanh`,
/// `sin`, `erf`, a power: a range reduction and a dozen or more fused
/// operations, `vmath`), and a loop's worth for the integer ones that
/// iterate.
fn intrinsic_cost(f: Intrinsic) -> u64 {
    use Intrinsic as I;
    match f {
        I::Sqrt | I::Abs | I::Floor | I::Ceil | I::Round | I::Trunc | I::Min | I::Max | I::Powi => 4,
        I::Gcd | I::Lcm | I::Factorial | I::IntPow => 32,
        I::Exp
        | I::Ln
        | I::Log10
        | I::Log2
        | I::Log1p
        | I::Expm1
        | I::Sin
        | I::Cos
        | I::Tan
        | I::Asin
        | I::Acos
        | I::Atan
        | I::Sinh
        | I::Cosh
        | I::Tanh
        | I::Asinh
        | I::Acosh
        | I::Atanh
        | I::Erf
        | I::Sigmoid
        | I::Atan2
        | I::Powf => 16,
    }
}
