//! Inlining the Einlang functions a derivative passes through, so that the
//! generators see only statements and elementary operations, and the
//! primal's intermediate values are computed once and shared with the
//! derivative code.
//!
//! A call that is a `let`'s whole value becomes the callee's statements
//! (parameters bound by `let`s) followed by the `let` of its result. A call
//! elsewhere in a `let` (not under a reduction, branch or block) is first
//! bound to a temporary `let`. A call inside an indexed definition's point
//! (`sigmoid(z[i])`) becomes a block expression there.

use super::build::Build;
use super::{edit_block, replace_expr, Activity, BlockLoc, TapeStmt};
use crate::analysis::Tables;
use crate::base::span::Span;
use crate::diag::Diagnostic;
use crate::hir::{
    self, Block, Callee, DefId, DefKind, DimAnn, ExprId, ExprKind, FnId, Hir, IndexedDef, Slot, Stmt, TyAnn, Where,
};
use crate::transform::copy::Copier;

/// Binds the first reduction that feeds a call on the active path to a
/// tensor of its own: `h[n, j] = f(sum[i](..) + b[j])` becomes
/// `h_pre[n, j] = sum[i](..) + b[j]; h[n, j] = f(h_pre[n, j])`. The
/// derivative of `f` needs its argument, which is then read instead of
/// computed again for every term, and the contraction stays visible to the
/// GEMM pass. Whether it did.
pub(super) fn split_one(hir: &mut Hir, f: FnId, tape: &[TapeStmt], act: &Activity, span: Span) -> bool {
    for t in tape {
        let Stmt::Indexed(d) = &t.stmt else { continue };
        if !act.active.contains(&d.def) || d.slots.iter().any(|s| !matches!(s, Slot::Var { .. })) {
            continue;
        }
        let ExprKind::Call { args, .. } = &hir.exprs[d.body].kind else { continue };
        let binds: Vec<DefId> =
            d.wheres.iter().filter_map(|w| if let Where::Bind { def, .. } = w { Some(*def) } else { None }).collect();
        let arg = args.iter().copied().find(|&a| {
            let inner = hir.reachable([a]);
            !matches!(hir.exprs[a].kind, ExprKind::Reduce { .. } | ExprKind::Index { .. } | ExprKind::Def(_))
                && inner.iter().any(|&e| matches!(hir.exprs[e].kind, ExprKind::Reduce { .. }))
                && !inner.iter().any(|&e| {
                    matches!(hir.exprs[e].kind, ExprKind::Block(_))
                        || matches!(hir.exprs[e].kind, ExprKind::Def(x) if binds.contains(&x))
                })
        });
        let Some(arg) = arg else { continue };
        let name = format!("{}_pre", super::base_name(hir, d.def));
        let pre = hir.alloc_def(name, DefKind::Local, span);
        let mut c = Copier::new();
        let template =
            IndexedDef { def: pre, slots: d.slots.clone(), wheres: d.wheres.clone(), body: arg, span: d.span };
        let split = c.indexed(hir, &template, pre);
        let vars: Vec<ExprId> = d
            .slots
            .iter()
            .filter_map(|s| {
                if let Slot::Var { def, .. } = s {
                    Some(hir.alloc_expr(ExprKind::Def(*def), span))
                } else {
                    None
                }
            })
            .collect();
        let base = hir.alloc_expr(ExprKind::Def(pre), span);
        let read = hir.alloc_expr(ExprKind::Index { base, args: vars }, span);
        replace_expr(hir, f, arg, read);
        let index = t.index;
        edit_block(hir, f, block_of(hir, f, t), |_, b| {
            b.stmts.insert(index, Stmt::Indexed(split));
        });
        return true;
    }
    false
}

/// Inlines the first call on the active path of the tape; whether there
/// was one.
pub(super) fn one(
    hir: &mut Hir,
    tables: &Tables,
    f: FnId,
    tape: &[TapeStmt],
    act: &Activity,
    span: Span,
    forward: bool,
) -> Result<bool, Diagnostic> {
    for t in tape {
        let Some(v) = super::defined(&t.stmt) else { continue };
        if !act.active.contains(&v) {
            continue;
        }
        let mut roots = Vec::new();
        hir::stmt_operands(&t.stmt, &mut roots);
        for c in hir.reachable(roots.iter().copied()) {
            let ExprKind::Call { callee: Callee::Fn(g), args, .. } = &hir.exprs[c].kind else { continue };
            // A `let` of a call with a tensor rule keeps the call: reverse
            // mode transposes the rule.
            if matches!(&t.stmt, Stmt::Let { value, .. } if *value == c)
                && super::tensor_rule_call(hir, tables, c).is_some()
            {
                continue;
            }
            let callee = tables.instance_calls.get(&c).copied().unwrap_or(*g);
            if hir.fns[callee].is_generic()
                || hir.fns[callee].skip == Some(hir::Skip::Inlined)
                || super::uses_rule(hir, callee, forward)
            {
                continue;
            }
            let varied = hir
                .reachable(args.iter().copied())
                .into_iter()
                .any(|e| matches!(hir.exprs[e].kind, ExprKind::Def(d) if act.varied.contains(&d)));
            if !varied {
                continue;
            }
            if hoist_invariant(hir, f, tape, t, c, span) {
                return Ok(true);
            }
            inline_call(hir, f, t, c, callee, span)?;
            return Ok(true);
        }
    }
    Ok(false)
}

fn inline_call(hir: &mut Hir, f: FnId, t: &TapeStmt, call: ExprId, callee: FnId, span: Span) -> Result<(), Diagnostic> {
    let loc = block_of(hir, f, t);
    if let Stmt::Let { def, ty, value, span: let_span } = &t.stmt {
        let (def, ty, value, let_span) = (*def, ty.clone(), *value, *let_span);
        if value == call {
            let (mut stmts, tail) = body_copy(hir, call, callee, span);
            let Some(tail) = tail else { return Err(unit_result(hir, callee, span)) };
            stmts.push(Stmt::Let { def, ty, value: tail, span: let_span });
            let index = t.index;
            edit_block(hir, f, loc, |_, b| {
                b.stmts.splice(index..=index, stmts);
            });
            return Ok(());
        }
        if !under_binder(hir, value, call) {
            // `let v = g(f(x))`: bind the call first.
            let name = format!("{}_arg", super::base_name(hir, def));
            let tmp = hir.alloc_def(name, DefKind::Local, span);
            let read = hir.alloc_expr(ExprKind::Def(tmp), span);
            replace_expr(hir, f, call, read);
            let index = t.index;
            edit_block(hir, f, block_of(hir, f, t), |_, b| {
                b.stmts.insert(index, Stmt::Let { def: tmp, ty: None, value: call, span });
            });
            return Ok(());
        }
    }
    let (stmts, tail) = body_copy(hir, call, callee, span);
    if stmts.iter().any(|s| !matches!(s, Stmt::Let { .. })) {
        let name = hir.name(hir.fns[callee].def).to_string();
        return Err(Diagnostic::error(
            span,
            format!("cannot differentiate through this call of `{name}`: it builds tensors inside one point of a definition"),
        )
        .help(format!("bind the call to a `let` of its own first: `let r = {name}(...);`")));
    }
    let Some(tail) = tail else { return Err(unit_result(hir, callee, span)) };
    let block = hir.alloc_expr(ExprKind::Block(Block { stmts, tail: Some(tail) }), span);
    replace_expr(hir, f, call, block);
    Ok(())
}

/// Binds a call inside a statement's points (`y[n, c] * log_softmax(z)[n,
/// c]`, or under a reduction) whose arguments read only what the statement
/// level sees (parameters, dimension symbols, earlier statements' bindings)
/// to a `let` of its own before the statement: it is computed once instead
/// of at every point, and its result is a whole-tensor value that reverse
/// mode differentiates statement by statement (or through its rule). Not
/// under a branch, where the call may not be evaluated at all. Whether it
/// did.
fn hoist_invariant(hir: &mut Hir, f: FnId, tape: &[TapeStmt], t: &TapeStmt, call: ExprId, span: Span) -> bool {
    if matches!(&t.stmt, Stmt::Let { value, .. } if *value == call) {
        return false;
    }
    let ExprKind::Call { args, .. } = &hir.exprs[call].kind else { return false };
    let mut outer: std::collections::HashSet<DefId> = hir.fns[f].params.iter().map(|p| p.def).collect();
    outer.extend(tape.iter().filter_map(|s| super::defined(&s.stmt)));
    let invariant = hir.reachable(args.iter().copied()).into_iter().all(|e| match hir.exprs[e].kind {
        ExprKind::Def(d) => match hir.defs[d].kind {
            DefKind::Local | DefKind::Index | DefKind::WhereBind | DefKind::Rest | DefKind::Param => outer.contains(&d),
            _ => true,
        },
        _ => true,
    });
    let mut roots = Vec::new();
    hir::stmt_operands(&t.stmt, &mut roots);
    if !invariant || roots.iter().any(|&r| under_branch(hir, r, call)) {
        return false;
    }
    let owner = super::defined(&t.stmt).map(|v| super::base_name(hir, v).to_string()).unwrap_or_default();
    let tmp = hir.alloc_def(format!("{owner}_call"), DefKind::Local, span);
    let read = hir.alloc_expr(ExprKind::Def(tmp), span);
    replace_expr(hir, f, call, read);
    let index = t.index;
    edit_block(hir, f, block_of(hir, f, t), |_, b| {
        b.stmts.insert(index, Stmt::Let { def: tmp, ty: None, value: call, span });
    });
    true
}

/// Whether `call` sits in a branch of an `if` or `match` inside `root` (or
/// does not occur in it).
fn under_branch(hir: &Hir, root: ExprId, call: ExprId) -> bool {
    fn walk(hir: &Hir, e: ExprId, call: ExprId, under: bool) -> Option<bool> {
        if e == call {
            return Some(under);
        }
        let kind = &hir.exprs[e].kind;
        let branches = matches!(kind, ExprKind::If { .. } | ExprKind::Match { .. } | ExprKind::Comprehension { .. });
        let mut ops = Vec::new();
        hir::operands(kind, &mut ops);
        ops.into_iter().find_map(|o| walk(hir, o, call, under || branches))
    }
    walk(hir, root, call, false).unwrap_or(false)
}

fn unit_result(hir: &Hir, callee: FnId, span: Span) -> Diagnostic {
    let name = hir.name(hir.fns[callee].def).to_string();
    Diagnostic::error(span, format!("cannot differentiate through `{name}`: it returns no value"))
}

/// The block that holds a tape statement, as it is now.
fn block_of(hir: &Hir, f: FnId, t: &TapeStmt) -> BlockLoc {
    super::find(hir, f).and_then(|found| found.levels.get(t.level).map(|l| l.block)).unwrap_or(BlockLoc::Body)
}

/// Whether `call` sits under a reduction, branch, block, match or
/// comprehension inside `root`, where binding it first would change what is
/// evaluated.
fn under_binder(hir: &Hir, root: ExprId, call: ExprId) -> bool {
    fn walk(hir: &Hir, e: ExprId, call: ExprId, under: bool) -> Option<bool> {
        if e == call {
            return Some(under);
        }
        let kind = &hir.exprs[e].kind;
        let binds = matches!(
            kind,
            ExprKind::Reduce { .. }
                | ExprKind::If { .. }
                | ExprKind::Block(_)
                | ExprKind::Match { .. }
                | ExprKind::Comprehension { .. }
        );
        let mut ops = Vec::new();
        hir::operands(kind, &mut ops);
        ops.into_iter().find_map(|o| walk(hir, o, call, under || binds))
    }
    walk(hir, root, call, false).unwrap_or(true)
}

/// The callee's body for this call: `let`s binding its parameters to the
/// arguments, its statements with fresh names, and its tail. Dimension
/// symbols of the parameters' types become the arguments' extents.
fn body_copy(hir: &mut Hir, call: ExprId, callee: FnId, span: Span) -> (Vec<Stmt>, Option<ExprId>) {
    let ExprKind::Call { args, .. } = hir.exprs[call].kind.clone() else { return (Vec::new(), None) };
    let func = hir.fns[callee].clone();
    let mut copier = Copier::new();
    let mut stmts = Vec::new();
    for (p, a) in func.params.iter().zip(args) {
        let local = hir.alloc_def(hir.name(p.def).to_string(), DefKind::Local, span);
        copier.map.insert(p.def, local);
        // A scalar parameter's type decides an unsuffixed literal argument
        // (`f(1.0)` with `f(u0: f64)`), as the call did.
        let ty = match &p.ty {
            Some(t @ TyAnn::Scalar(_)) => Some(t.clone()),
            _ => None,
        };
        stmts.push(Stmt::Let { def: local, ty, value: a, span });
        if let Some(TyAnn::Tensor { dims, .. }) = &p.ty {
            for (axis, d) in dims.iter().enumerate() {
                if let DimAnn::Sym(sym, _) = d {
                    let extent = Build { hir, span }.extent(local, axis);
                    copier.subst.entry(*sym).or_insert(extent);
                }
            }
        }
    }
    let body = copier.block(hir, &func.body);
    stmts.extend(body.stmts);
    (stmts, body.tail)
}
