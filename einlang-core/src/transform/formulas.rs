//! Calls of formulas with tensor arguments written out: `std::ml::gelu_tanh(x)`
//! with `x` a tensor becomes `x * sigmoid(1.59.. * (x + 0.044715 * x * x *
//! x))`, and `sigmoid(t)` in turn `1.0 / (1.0 + exp(-t))`.
//!
//! A formula is a function whose body is one expression of literals, its
//! parameters, operators, casts and calls (`fn sigmoid(x) { 1.0 / (1.0 +
//! exp(-x)) }`). Applied to tensors, its instance computes each operator
//! over whole tensors: a temporary per operator and a pass over memory per
//! nested call (`gelu_tanh` over 16 Mi `f32` ran at 3.4x the indexed
//! `y[i] = gelu_tanh(x[i])`). Written out in the caller, the operators are
//! the caller's whole-tensor arithmetic, which lowering and `opt::inline`
//! fuse into one definition computing the same operations on each element
//! (the same values, bit for bit).
//!
//! Only calls with a tensor argument are rewritten (a call on scalars
//! stays a call; `opt::calls` computes it in place later), only in host
//! functions that are not sharded, only where the tensor arguments'
//! extents are dimensions the caller's parameters bind (a tensor of a
//! `?` extent, which only the callee's entry would bind, keeps the call),
//! and only where writing the body out computes nothing twice, drops
//! nothing and reorders nothing: each argument is a name or a literal but
//! one at most, whose parameter the body uses once. The pass runs after
//! the derivatives are answered (their rules, `@fn sigmoid`, see the calls),
//! and the driver analyzes the program again after each round: a call the
//! copy brings in (the `sigmoid` inside `gelu_tanh`) is written out in the
//! next round, once analysis has typed it.

use std::collections::{BTreeSet, HashMap};

use super::copy::Copier;
use crate::analysis::{Tables, Ty};
use crate::base::dim::DimVar;
use crate::hir::{Block, Callee, DefId, ExprId, ExprKind, FnId, Hir, Stmt};

/// Writes out the calls of formulas with a tensor argument that `tables`
/// types (one level: calls inside the copies wait for the next round);
/// whether there was one.
///
/// A rewritten call is replaced where the function's top-level statements
/// and value hold it: the `let` value, expression statement or value that
/// contains it is copied with the call's written-out form in its place
/// (an expression's operands precede it in the arena, so a node is never
/// rewritten in place). Calls elsewhere (inside an indexed definition's
/// value, whose elements are scalars) stay.
pub fn rewrite(hir: &mut Hir, tables: &Tables) -> bool {
    let mut candidates: HashMap<ExprId, Formula> = HashMap::new();
    for (call, e) in hir.exprs.iter() {
        let ExprKind::Call { callee: Callee::Fn(g), args, .. } = &e.kind else { continue };
        // Nodes allocated after the tables were built have no types yet.
        if call.index() >= tables.expr_ty.len() || args.iter().any(|a| a.index() >= tables.expr_ty.len()) {
            continue;
        }
        if !args.iter().any(|&a| matches!(tables.ty(a), Ty::Tensor(..))) {
            continue;
        }
        let f = tables.instance_calls.get(&call).copied().unwrap_or(*g);
        let Some((params, body)) = formula(hir, f) else { continue };
        if params.len() == args.len() && computes_nothing_twice(hir, body, &params, args) {
            candidates.insert(call, Formula { params, body, args: args.clone() });
        }
    }
    if candidates.is_empty() {
        return false;
    }
    let mut changed = false;
    // Device and sharded functions keep their calls (their back ends
    // compile calls of their own way).
    let fns: Vec<FnId> = hir
        .fns
        .iter()
        .filter(|(_, f)| f.skip.is_none() && f.device.is_none() && f.shard.is_none())
        .map(|(id, _)| id)
        .collect();
    for f in fns {
        // The dimensions the function's parameters bind: an argument whose
        // extents are made of them has them wherever the function computes.
        let mut known: BTreeSet<DimVar> = BTreeSet::new();
        for p in &hir.fns[f].params {
            if let Some(Ty::Tensor(_, dims)) = tables.def_ty.get(&p.def) {
                dims.iter().for_each(|d| known.extend(d.vars()));
            }
        }
        let mut body = std::mem::replace(&mut hir.fns[f].body, Block { stmts: Vec::new(), tail: None });
        let roots = body.stmts.iter_mut().filter_map(|s| match s {
            Stmt::Let { value, .. } => Some(value),
            Stmt::Expr(e) => Some(e),
            _ => None,
        });
        for root in roots.chain(body.tail.as_mut()) {
            changed |= rewrite_root(hir, tables, &candidates, &known, root);
        }
        hir.fns[f].body = body;
    }
    changed
}

/// A call of a formula: its parameters, its body and the call's arguments.
struct Formula {
    params: Vec<DefId>,
    body: ExprId,
    args: Vec<ExprId>,
}

/// Replaces `root` by a copy with the calls of `candidates` inside it
/// written out, when it holds one whose tensor arguments have extents
/// made of the dimensions `known` (not an extent only a callee's entry
/// binds, a `?` of a split); whether it did.
fn rewrite_root(
    hir: &mut Hir,
    tables: &Tables,
    candidates: &HashMap<ExprId, Formula>,
    known: &BTreeSet<DimVar>,
    root: &mut ExprId,
) -> bool {
    let extents_known = |a: &ExprId| match tables.ty(*a) {
        Ty::Tensor(_, dims) => dims.iter().all(|d| d.vars().is_subset(known)),
        _ => true,
    };
    let mut replace: HashMap<ExprId, ExprId> = HashMap::new();
    for e in hir.reachable([*root]) {
        let Some(call) = candidates.get(&e) else { continue };
        if !call.args.iter().all(extents_known) {
            continue;
        }
        let mut copier = Copier::with(call.params.iter().copied().zip(call.args.iter().copied()).collect());
        let copy = copier.expr(hir, call.body);
        if !copier.failed {
            replace.insert(e, copy);
        }
    }
    if replace.is_empty() {
        return false;
    }
    let mut copier = Copier { replace, ..Copier::new() };
    let copy = copier.expr(hir, *root);
    if copier.failed {
        return false;
    }
    *root = copy;
    true
}

/// The parameters and body expression of function `f` when it is a
/// formula (see the module docs): a host function, not sharded, whose body
/// is one expression of literals, its parameters, operators, casts and
/// calls.
fn formula(hir: &Hir, f: FnId) -> Option<(Vec<DefId>, ExprId)> {
    let func = &hir.fns[f];
    if func.device.is_some() || func.shard.is_some() || func.skip.is_some() || !func.body.stmts.is_empty() {
        return None;
    }
    let body = func.body.tail?;
    let params: Vec<DefId> = func.params.iter().map(|p| p.def).collect();
    arithmetic(hir, body, &params).then_some((params, body))
}

/// Whether `e` is made of literals, the names `params`, operators, casts
/// and calls.
fn arithmetic(hir: &Hir, e: ExprId, params: &[DefId]) -> bool {
    match &hir.exprs[e].kind {
        ExprKind::Lit(_) => true,
        ExprKind::Def(d) => params.contains(d),
        ExprKind::Unary(_, x) | ExprKind::Cast(x, _) => arithmetic(hir, *x, params),
        ExprKind::Binary(_, a, b) => arithmetic(hir, *a, params) && arithmetic(hir, *b, params),
        ExprKind::Call { args, .. } => args.iter().all(|&a| arithmetic(hir, a, params)),
        _ => false,
    }
}

/// Whether every argument is a name or a literal but one at most, whose
/// parameter `body` uses exactly once: the body computes it once, where
/// the call did (an argument the body ignores would not be computed, and
/// could no longer fail; two computed ones could fail in another order).
fn computes_nothing_twice(hir: &Hir, body: ExprId, params: &[DefId], args: &[ExprId]) -> bool {
    let mut uses: HashMap<DefId, usize> = HashMap::new();
    count_uses(hir, body, &mut uses);
    let computed: Vec<(&DefId, &ExprId)> = params
        .iter()
        .zip(args)
        .filter(|(_, &a)| !matches!(hir.exprs[a].kind, ExprKind::Def(_) | ExprKind::Lit(_)))
        .collect();
    match computed.as_slice() {
        [] => true,
        [(p, _)] => uses.get(*p) == Some(&1),
        _ => false,
    }
}

/// Counts the uses of each name in `e` (a formula's body).
fn count_uses(hir: &Hir, e: ExprId, uses: &mut HashMap<DefId, usize>) {
    if let ExprKind::Def(d) = hir.exprs[e].kind {
        *uses.entry(d).or_default() += 1;
    }
    let mut operands = Vec::new();
    crate::hir::operands(&hir.exprs[e].kind, &mut operands);
    operands.into_iter().for_each(|o| count_uses(hir, o, uses));
}

#[cfg(test)]
mod tests {
    use crate::test_support::{calls_in, lowered};

    /// The calls left in the lowered IR of public function `name` of `src`.
    fn calls_left(src: &str, name: &str) -> usize {
        calls_in(&lowered(src), name)
    }

    #[test]
    fn formulas_of_tensors_become_the_callers_arithmetic() {
        let src = "pub fn f(x: [f32; N]) -> [f32; N] { std::ml::gelu_tanh(x) }";
        assert_eq!(calls_left(src, "f"), 0);
        let src = "pub fn f(x: [f32; N, C]) -> [f32; N, C] { let y = std::ml::leaky_relu(x, 0.5); y * 2.0 }";
        assert_eq!(calls_left(src, "f"), 0);
    }

    #[test]
    fn calls_that_would_compute_twice_or_are_not_formulas_stay() {
        // `silu` reads its parameter twice: `a + b` would be computed twice.
        let src = "pub fn f(a: [f32; N], b: [f32; N]) -> [f32; N] { std::ml::silu(a + b) }";
        assert_eq!(calls_left(src, "f"), 1);
        // A computed argument the body ignores (it would no longer be
        // computed), and two computed arguments.
        let src = "fn first(a, b) { a * 2.0 } pub fn f(x: [f32; N], y: [f32; N]) -> [f32; N] { first(x, x + y) }";
        assert_eq!(calls_left(src, "f"), 1);
        let src = "fn add(a, b) { a + b } pub fn f(x: [f32; N], y: [f32; N]) -> [f32; N] { add(x * y, x - y) }";
        assert_eq!(calls_left(src, "f"), 1);
        // A body with a definition is not a formula.
        let src = "fn g(v) { let w[i] = v[i] * 2.0; w } pub fn f(x: [f32; N]) -> [f32; N] { g(x) }";
        assert_eq!(calls_left(src, "f"), 1);
    }
}
