//! Lazy Jacobians: `let J = @y / @x;` whose every use reads a row, a
//! column or an element, `J[t..]`, `J[t.., j..]` with the target's axes `t`
//! fixed or `J[i.., s..]` with the source's axes `s` fixed (no index
//! variable of the reading statement in them), is never built. Each use
//! becomes one product instead, before the reading statement:
//! - a row: `let y_at = y[t..]; let J_row = @y_at / @x;` and the read
//!   `J_row[j..]`: a scalar target, so one backward sweep;
//! - a column: `let J_col = @y / @x` answered at the point `s` only
//!   (`Hir::deriv_points`) and the read `J_col[i..]`: one forward sweep
//!   whose tangents have no source axes.

use super::{edit_block, replace_expr, BlockLoc, Found};
use crate::analysis::{Tables, Ty};
use crate::hir::{DefKind, ExprId, ExprKind, FnId, Hir, Stmt};

/// Rewrites the Jacobian request `found` into row requests at its uses;
/// whether it did.
pub(super) fn rows(hir: &mut Hir, tables: &Tables, f: FnId, found: &Found) -> bool {
    let rank = |d| match tables.def_ty.get(&d) {
        Some(Ty::Tensor(_, dims)) => Some(dims.len()),
        Some(Ty::Scalar(_)) => Some(0),
        _ => None,
    };
    let (Some(ry), Some(rx)) = (rank(found.target), rank(found.wrt)) else { return false };
    if ry == 0 {
        return false;
    }
    // The request must be the whole value of a `let` in the function body.
    let [level] = found.levels.as_slice() else { return false };
    if level.block != BlockLoc::Body {
        return false;
    }
    let Some(Stmt::Let { def: jac, value, .. }) = hir.fns[f].body.stmts.get(level.stmt).cloned() else { return false };
    if value != found.req {
        return false;
    }
    // Every use: a full element read with fixed target axes, in a
    // statement of the function body.
    let mut roots = Vec::new();
    hir.fns[f].body.stmts.iter().for_each(|s| crate::hir::stmt_operands(s, &mut roots));
    roots.extend(hir.fns[f].body.tail);
    let all = hir.reachable(roots);
    let reads: Vec<ExprId> = all
        .iter()
        .copied()
        .filter(|&e| matches!(&hir.exprs[e].kind, ExprKind::Index { base, .. } if matches!(hir.exprs[*base].kind, ExprKind::Def(d) if d == jac)))
        .collect();
    let uses = all.iter().filter(|&&e| matches!(hir.exprs[e].kind, ExprKind::Def(d) if d == jac)).count();
    if reads.is_empty() || reads.len() != uses {
        return false;
    }
    let fixed = |hir: &Hir, e: ExprId| {
        hir.reachable([e]).into_iter().all(|x| match hir.exprs[x].kind {
            ExprKind::Def(d) => {
                matches!(hir.defs[d].kind, DefKind::Param | DefKind::Local | DefKind::Dim | DefKind::Const)
            }
            ExprKind::Reduce { .. } | ExprKind::Block(_) | ExprKind::Comprehension { .. } => false,
            _ => true,
        })
    };
    let is_row = |hir: &Hir, args: &[ExprId]| args.len() >= ry && args[..ry].iter().all(|&a| fixed(hir, a));
    let is_col =
        |hir: &Hir, args: &[ExprId]| args.len() == ry + rx && rx > 0 && args[ry..].iter().all(|&a| fixed(hir, a));
    for &r in &reads {
        let ExprKind::Index { args, .. } = &hir.exprs[r].kind else { return false };
        if args.len() > ry + rx || !(is_row(hir, args) || is_col(hir, args)) {
            return false;
        }
        let Some((_, levels)) = super::find_expr(hir, f, &|e| e == r) else { return false };
        if levels.len() != 1 {
            return false;
        }
    }
    let span = hir.span(found.req);
    let (y, x) = (found.target, found.wrt);
    for r in reads {
        let Some((_, levels)) = super::find_expr(hir, f, &|e| e == r) else { return false };
        let ExprKind::Index { args, .. } = hir.exprs[r].kind.clone() else { return false };
        if !is_row(hir, &args) {
            // A column: the request at the point `s`, read at `i`.
            let col = hir.alloc_def(format!("{}_col", super::base_name(hir, jac)), DefKind::Local, span);
            let request = hir.alloc_expr(ExprKind::Deriv { target: y, wrt: x }, span);
            hir.deriv_points.insert(request, args[ry..].to_vec());
            let col_read = hir.alloc_expr(ExprKind::Def(col), span);
            let new_read = hir.alloc_expr(ExprKind::Index { base: col_read, args: args[..ry].to_vec() }, span);
            replace_expr(hir, f, r, new_read);
            let index = levels[0].stmt;
            edit_block(hir, f, BlockLoc::Body, |_, b| {
                b.stmts.insert(index, Stmt::Let { def: col, ty: None, value: request, span });
            });
            continue;
        }
        let y_name = format!("{}_at", super::base_name(hir, y));
        let y_at = hir.alloc_def(y_name, DefKind::Local, span);
        let y_read = hir.alloc_expr(ExprKind::Def(y), span);
        let at = hir.alloc_expr(ExprKind::Index { base: y_read, args: args[..ry].to_vec() }, span);
        let row = hir.alloc_def(format!("{}_row", super::base_name(hir, jac)), DefKind::Local, span);
        let request = hir.alloc_expr(ExprKind::Deriv { target: y_at, wrt: x }, span);
        let row_read = hir.alloc_expr(ExprKind::Def(row), span);
        let new_read = if args.len() == ry {
            row_read
        } else {
            hir.alloc_expr(ExprKind::Index { base: row_read, args: args[ry..].to_vec() }, span)
        };
        replace_expr(hir, f, r, new_read);
        let index = levels[0].stmt;
        edit_block(hir, f, BlockLoc::Body, |_, b| {
            b.stmts.splice(
                index..index,
                [
                    Stmt::Let { def: y_at, ty: None, value: at, span },
                    Stmt::Let { def: row, ty: None, value: request, span },
                ],
            );
        });
    }
    // The Jacobian itself is read nowhere now.
    let index = level.stmt;
    edit_block(hir, f, BlockLoc::Body, |_, b| {
        b.stmts.remove(index);
    });
    true
}
