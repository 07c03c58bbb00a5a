//! Calls of scalar functions computed in place: `std::ml::sigmoid(x[i])`
//! becomes `1 / (1 + exp(-x[i]))` in the caller's value.
//!
//! A function is inlined when it has no statements and no entry checks,
//! its parameters are scalars and its result is float arithmetic over them
//! alone: literals, parameters, and unary, binary, cast and intrinsic
//! operations whose values are `f32` or `f64` (none of which can fail).
//! Its calls are then replaced by its result with each parameter replaced
//! by the call's argument, in every host function of the program (device
//! code keeps its calls of device functions), bodies
//! calling such functions first (`std::ml::gelu_tanh` calls `sigmoid`).
//!
//! The passes after this one, and the back ends, see the arithmetic
//! instead of an opaque call that returns `Result`: a definition whose
//! value calls `silu` is inlined where it is read (`inline` takes values
//! that cannot fail), and an element loop of `std::ml::sigmoid` computes
//! its exponentials sixteen at a time (`codegen/rust/lane_maps.rs`). The
//! values are those of the call, bit for bit: the same operations in the
//! same order on the same arguments.
//!
//! A call keeps its form when inlining could change what it does or cost
//! more than it saves:
//! - an argument that may fail (a checked read, a call) must be the only
//!   one that may, and its parameter must be used exactly once, so that
//!   the call fails where and as it did;
//! - an argument whose parameter the body uses more than once must be
//!   cheap to compute again (a variable, a literal, a read at indices of
//!   variables and literals): `silu(a[i] * b[i] + c)` keeps its call
//!   rather than computing the product twice.

use std::collections::HashMap;

use crate::ir::{visit, Expr, ExprKind, FuncId, Function, Program, Repr, VarId};

/// How many rounds of inlining run: a function calling an inlinable one is
/// itself inlinable after the round that inlined its calls, so this is
/// the depth of nested scalar functions that end up inlined.
const ROUNDS: usize = 4;

/// Inlines the calls of scalar functions in every host function of
/// `program` (`device[id]`: whether device code reaches function `id`;
/// kernels keep their calls of device functions).
pub fn run(program: &mut Program, device: &[bool]) {
    for _ in 0..ROUNDS {
        let inlinable: HashMap<FuncId, (Vec<VarId>, Expr)> = program
            .functions()
            .filter(|(_, g)| is_scalar_formula(g))
            .map(|(id, g)| (id, (g.params.clone(), g.result.clone())))
            .collect();
        if inlinable.is_empty() {
            return;
        }
        let mut changed_any = false;
        let ids: Vec<FuncId> = program.functions().map(|(id, _)| id).collect();
        for id in ids {
            if device.get(id.index()).copied().unwrap_or(false) {
                continue;
            }
            let Some(f) = program.fns.get_mut(id.index()) else { continue };
            let mut changed = false;
            for s in &mut f.body {
                visit::for_each_stmt_expr_mut(s, &mut |e| changed |= inline_in(e, &inlinable));
            }
            changed |= inline_in(&mut f.result, &inlinable);
            if changed {
                program.calls_changed(id);
                changed_any = true;
            }
        }
        if !changed_any {
            return;
        }
    }
}

/// Whether `g` is a scalar formula: no statements or entry checks, scalar
/// parameters, and a result of float arithmetic over them (module docs).
fn is_scalar_formula(g: &Function) -> bool {
    g.body.is_empty()
        && g.entry.is_empty()
        && g.device.is_none()
        && g.params.iter().all(|p| matches!(g.var(*p).ty, Repr::Scalar(_)))
        && float_over(&g.result, &g.params)
}

/// Whether `e` is float arithmetic over the variables `params`.
fn float_over(e: &Expr, params: &[VarId]) -> bool {
    let float = matches!(e.ty, Repr::Scalar(k) if k.is_float() && !k.is_half());
    match &e.kind {
        ExprKind::Lit(_) => matches!(e.ty, Repr::Scalar(_)),
        ExprKind::Var(v) => params.contains(v),
        ExprKind::Unary(..) | ExprKind::Binary(..) | ExprKind::Cast(..) | ExprKind::Intrinsic(..) if float => {
            let mut ok = true;
            visit::for_each_child(e, &mut |c| ok &= float_over(c, params));
            ok
        }
        _ => false,
    }
}

/// Inlines the qualifying calls inside `e` (arguments first); whether any
/// was.
fn inline_in(e: &mut Expr, inlinable: &HashMap<FuncId, (Vec<VarId>, Expr)>) -> bool {
    let mut changed = false;
    visit::for_each_child_mut(e, &mut |c| changed |= inline_in(c, inlinable));
    let ExprKind::Call { func, args } = &e.kind else { return changed };
    let Some((params, result)) = inlinable.get(func) else { return changed };
    if !qualifies(params, result, args) {
        return changed;
    }
    let mut value = result.clone();
    substitute(&mut value, &params.iter().copied().zip(args.iter()).collect());
    *e = value;
    true
}

/// Whether a call with `args` of the function with `params` and `result`
/// may be inlined (module docs).
fn qualifies(params: &[VarId], result: &Expr, args: &[Expr]) -> bool {
    if params.len() != args.len() {
        return false;
    }
    let mut failing = 0;
    for (p, a) in params.iter().zip(args) {
        let mut uses = 0;
        visit::visit_var_uses(result, &mut |v| uses += usize::from(v == *p));
        if visit::may_fail(a) {
            failing += 1;
            if uses != 1 {
                return false;
            }
        } else if uses > 1 && !cheap(a) {
            return false;
        }
    }
    failing <= 1
}

/// Whether `e` costs no more than a load to compute again: a variable, a
/// literal, a dimension, or an unchecked read at indices of those.
fn cheap(e: &Expr) -> bool {
    let leaf = |x: &Expr| matches!(x.kind, ExprKind::Var(_) | ExprKind::Lit(_) | ExprKind::Dim(_));
    match &e.kind {
        ExprKind::Read { indices, checked: false, .. } => indices.iter().all(leaf),
        _ => leaf(e),
    }
}

/// `e` with every parameter's variable replaced by its argument (`e`
/// mentions no other variable: `float_over`).
fn substitute(e: &mut Expr, args: &HashMap<VarId, &Expr>) {
    if let ExprKind::Var(v) = &e.kind {
        if let Some(a) = args.get(v) {
            *e = (*a).clone();
        }
        return;
    }
    visit::for_each_child_mut(e, &mut |c| substitute(c, args));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{calls_in, lowered};

    /// The calls left in public function `name` of `src` after the pass.
    fn calls_left(src: &str, name: &str) -> usize {
        let mut program = lowered(src);
        let device = vec![false; program.fns.len()];
        run(&mut program, &device);
        crate::ir::validate::validate(&program).unwrap_or_else(|e| panic!("{e}"));
        calls_in(&program, name)
    }

    #[test]
    fn formulas_are_computed_in_place_through_nested_calls() {
        let src = "
            fn logistic(v: f32) -> f32 { 1.0 / (1.0 + std::math::exp(-v)) }
            fn swish(v: f32) -> f32 { v * logistic(v) }
            pub fn f(x: [f32; N]) -> [f32; N] { let y[i] = swish(x[i]) + std::ml::gelu_tanh(x[i]); y }
        ";
        assert_eq!(calls_left(src, "f"), 0);
    }

    #[test]
    fn calls_that_inlining_would_change_or_repeat_stay() {
        // A costly argument of a parameter used twice.
        let src = "
            fn swish(v: f32) -> f32 { v * std::math::sigmoid(v) }
            pub fn f(x: [f32; N]) -> [f32; N] { let y[i] = swish(x[i] * 2.0 + 1.0); y }
        ";
        assert_eq!(calls_left(src, "f"), 1);
        // A read that may fail passed to a parameter the body ignores.
        let src = "
            fn first(a: f32, b: f32) -> f32 { a * 2.0 }
            pub fn f(x: [f32; N], k: [i64; N]) -> [f32; N] { let y[i] = first(x[i], x[k[i]]); y }
        ";
        assert_eq!(calls_left(src, "f"), 1);
        // A body with statements, and one with a branch.
        let src = "
            fn twice(v: f32) -> f32 { let w = v + v; w }
            fn pos(v: f32) -> f32 { if v > 0.0 { v } else { 0.0 } }
            pub fn f(x: [f32; N]) -> [f32; N] { let y[i] = twice(x[i]) + pos(x[i]); y }
        ";
        assert_eq!(calls_left(src, "f"), 2);
    }
}
