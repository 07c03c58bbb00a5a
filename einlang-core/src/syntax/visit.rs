//! Mutable traversal of the AST: the expressions and blocks directly
//! inside an expression or a statement. Passes that rewrite the tree
//! before resolution (`hoist`, the fusion of mutually recursive
//! recurrences) recurse through these.

use super::ast::{Block, CompClause, Expr, ExprKind, IndexArg, IndexSlot, RangeExpr, Stmt, StrPart, WhereItem};

/// A part directly inside an expression or statement.
pub enum Child<'a> {
    Expr(&'a mut Expr),
    Block(&'a mut Block),
}

/// Calls `f` on each expression and block directly inside statement `s`
/// (its value, `where` entries and slot ranges; nothing of a nested item).
pub fn stmt_children(s: &mut Stmt, f: &mut dyn FnMut(Child<'_>)) {
    match s {
        Stmt::Let(l) => {
            for slot in l.indices.iter_mut().flatten() {
                if let IndexSlot::Ranged { range, .. } = slot {
                    range_children(range, f);
                }
            }
            f(Child::Expr(&mut l.value));
            where_children(&mut l.where_clause, f);
        }
        Stmt::Expr(e) => f(Child::Expr(e)),
        Stmt::Item(_) => {}
    }
}

/// Calls `f` on each expression of the entries of a `where` clause.
pub fn where_children(items: &mut [WhereItem], f: &mut dyn FnMut(Child<'_>)) {
    for w in items {
        match w {
            WhereItem::Bind { value, .. } | WhereItem::Guard(value) => f(Child::Expr(value)),
            WhereItem::Range { range, .. } => range_children(range, f),
        }
    }
}

fn range_children(r: &mut RangeExpr, f: &mut dyn FnMut(Child<'_>)) {
    f(Child::Expr(&mut r.start));
    f(Child::Expr(&mut r.end));
}

/// Calls `f` on each expression and block directly inside `e`.
pub fn expr_children(e: &mut Expr, f: &mut dyn FnMut(Child<'_>)) {
    match &mut e.kind {
        ExprKind::Lit(_) | ExprKind::Path(_) | ExprKind::Deriv { .. } | ExprKind::Differential(_) => {}
        ExprKind::Interp(parts) => {
            for p in parts {
                if let StrPart::Interp { expr, .. } = p {
                    f(Child::Expr(expr));
                }
            }
        }
        ExprKind::Unary { expr, .. } | ExprKind::Cast { expr, .. } | ExprKind::Field { base: expr, .. } => {
            f(Child::Expr(expr))
        }
        ExprKind::Binary { lhs, rhs, .. } => {
            f(Child::Expr(lhs));
            f(Child::Expr(rhs));
        }
        ExprKind::Call { callee, args } => {
            f(Child::Expr(callee));
            args.iter_mut().for_each(|a| f(Child::Expr(a)));
        }
        ExprKind::Index { base, args } => {
            f(Child::Expr(base));
            for a in args {
                if let IndexArg::Expr(x) = a {
                    f(Child::Expr(x));
                }
            }
        }
        ExprKind::Reduce { vars, body, where_clause, .. } => {
            for v in vars {
                if let Some(r) = &mut v.range {
                    range_children(r, f);
                }
            }
            f(Child::Expr(body));
            where_children(where_clause, f);
        }
        ExprKind::If { cond, then, els } => {
            f(Child::Expr(cond));
            f(Child::Block(then));
            if let Some(x) = els {
                f(Child::Expr(x));
            }
        }
        ExprKind::Match { scrutinee, arms } => {
            f(Child::Expr(scrutinee));
            for a in arms {
                if let Some(g) = &mut a.guard {
                    f(Child::Expr(g));
                }
                f(Child::Expr(&mut a.body));
            }
        }
        ExprKind::Block(b) => f(Child::Block(b)),
        ExprKind::Array(items) | ExprKind::Jagged(items) | ExprKind::Tuple(items) => {
            items.iter_mut().for_each(|x| f(Child::Expr(x)))
        }
        ExprKind::Comprehension { body, clauses, .. } => {
            f(Child::Expr(body));
            for c in clauses {
                match c {
                    CompClause::Gen { iter: x, .. } | CompClause::Filter(x) => f(Child::Expr(x)),
                }
            }
        }
        ExprKind::Lambda { body, .. } => f(Child::Expr(body)),
        ExprKind::Range(r) => range_children(r, f),
    }
}

/// Calls `f` on every expression inside `e` (`e` included), outer first,
/// through nested blocks.
pub fn walk_expr_mut(e: &mut Expr, f: &mut dyn FnMut(&mut Expr)) {
    f(e);
    expr_children(e, &mut |c| walk_child(c, f));
}

/// `walk_expr_mut` over every expression of statement `s`.
pub fn walk_stmt_mut(s: &mut Stmt, f: &mut dyn FnMut(&mut Expr)) {
    stmt_children(s, &mut |c| walk_child(c, f));
}

fn walk_child(c: Child<'_>, f: &mut dyn FnMut(&mut Expr)) {
    match c {
        Child::Expr(x) => walk_expr_mut(x, f),
        Child::Block(b) => {
            for s in &mut b.stmts {
                walk_stmt_mut(s, f);
            }
            if let Some(t) = &mut b.tail {
                walk_expr_mut(t, f);
            }
        }
    }
}
