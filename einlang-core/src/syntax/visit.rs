//! Traversal of the AST: the expressions and blocks directly inside an
//! expression or a statement, and pre-order walks built on them, in a
//! shared (`&`) and a mutable (`&mut`) form generated from one definition,
//! so both visit the same parts in the same order. Passes before
//! resolution (`hoist`, the fusion of mutually recursive recurrences, the
//! placement of `where` items in reductions) use them.

use super::ast::{Block, CompClause, Expr, ExprKind, IndexArg, IndexSlot, RangeExpr, Stmt, StrPart, WhereItem};

/// A part directly inside an expression or statement.
pub enum Child<'a> {
    Expr(&'a Expr),
    Block(&'a Block),
}

/// A part directly inside an expression or statement, to rewrite.
pub enum ChildMut<'a> {
    Expr(&'a mut Expr),
    Block(&'a mut Block),
}

macro_rules! visitors {
    ($Child:ident, $stmt_children:ident, $where_children:ident, $range_children:ident, $expr_children:ident,
     $walk_expr:ident, $walk_stmt:ident, $walk_child:ident $(, $m:tt)?) => {
        /// Calls `f` on each expression and block directly inside statement
        /// `s` (its slot ranges, value and `where` entries; nothing of a
        /// nested item).
        pub fn $stmt_children(s: &$($m)? Stmt, f: &mut dyn FnMut($Child<'_>)) {
            match s {
                Stmt::Let(l) => {
                    if let Some(slots) = & $($m)? l.indices {
                        for slot in slots {
                            if let IndexSlot::Ranged { range, .. } = slot {
                                $range_children(range, f);
                            }
                        }
                    }
                    f($Child::Expr(& $($m)? l.value));
                    $where_children(& $($m)? l.where_clause, f);
                }
                Stmt::Expr(e) => f($Child::Expr(e)),
                Stmt::Item(_) => {}
            }
        }

        /// Calls `f` on each expression of the entries of a `where` clause.
        pub fn $where_children(items: &$($m)? [WhereItem], f: &mut dyn FnMut($Child<'_>)) {
            for w in items {
                match w {
                    WhereItem::Bind { value, .. } | WhereItem::Guard(value) => f($Child::Expr(value)),
                    WhereItem::Range { range, .. } => $range_children(range, f),
                }
            }
        }

        fn $range_children(r: &$($m)? RangeExpr, f: &mut dyn FnMut($Child<'_>)) {
            f($Child::Expr(& $($m)? r.start));
            f($Child::Expr(& $($m)? r.end));
        }

        /// Calls `f` on each expression and block directly inside `e`.
        pub fn $expr_children(e: &$($m)? Expr, f: &mut dyn FnMut($Child<'_>)) {
            match & $($m)? e.kind {
                ExprKind::Lit(_) | ExprKind::Path(_) | ExprKind::Deriv { .. } | ExprKind::Differential(_) => {}
                ExprKind::Interp(parts) => {
                    for p in parts {
                        if let StrPart::Interp { expr, .. } = p {
                            f($Child::Expr(expr));
                        }
                    }
                }
                ExprKind::Unary { expr, .. } | ExprKind::Cast { expr, .. } | ExprKind::Field { base: expr, .. } => {
                    f($Child::Expr(expr))
                }
                ExprKind::Binary { lhs, rhs, .. } => {
                    f($Child::Expr(lhs));
                    f($Child::Expr(rhs));
                }
                ExprKind::Call { callee, args } => {
                    f($Child::Expr(callee));
                    for a in args {
                        f($Child::Expr(a));
                    }
                }
                ExprKind::Index { base, args } => {
                    f($Child::Expr(base));
                    for a in args {
                        if let IndexArg::Expr(x) = a {
                            f($Child::Expr(x));
                        }
                    }
                }
                ExprKind::Reduce { vars, body, where_clause, .. } => {
                    for v in vars {
                        if let Some(r) = & $($m)? v.range {
                            $range_children(r, f);
                        }
                    }
                    f($Child::Expr(body));
                    $where_children(where_clause, f);
                }
                ExprKind::If { cond, then, els } => {
                    f($Child::Expr(cond));
                    f($Child::Block(then));
                    if let Some(x) = els {
                        f($Child::Expr(x));
                    }
                }
                ExprKind::Match { scrutinee, arms } => {
                    f($Child::Expr(scrutinee));
                    for a in arms {
                        if let Some(g) = & $($m)? a.guard {
                            f($Child::Expr(g));
                        }
                        f($Child::Expr(& $($m)? a.body));
                    }
                }
                ExprKind::Block(b) => f($Child::Block(b)),
                ExprKind::Array(items) | ExprKind::Jagged(items) | ExprKind::Tuple(items) => {
                    for x in items {
                        f($Child::Expr(x));
                    }
                }
                ExprKind::Comprehension { body, clauses, .. } => {
                    f($Child::Expr(body));
                    for c in clauses {
                        match c {
                            CompClause::Gen { iter: x, .. } | CompClause::Filter(x) => f($Child::Expr(x)),
                        }
                    }
                }
                ExprKind::Lambda { body, .. } => f($Child::Expr(body)),
                ExprKind::Range(r) => $range_children(r, f),
            }
        }

        /// Calls `f` on every expression inside `e` (`e` included), outer
        /// first, through nested blocks.
        pub fn $walk_expr(e: &$($m)? Expr, f: &mut dyn FnMut(&$($m)? Expr)) {
            f(e);
            $expr_children(e, &mut |c| $walk_child(c, f));
        }

        /// The walk over every expression of statement `s`.
        pub fn $walk_stmt(s: &$($m)? Stmt, f: &mut dyn FnMut(&$($m)? Expr)) {
            $stmt_children(s, &mut |c| $walk_child(c, f));
        }

        fn $walk_child(c: $Child<'_>, f: &mut dyn FnMut(&$($m)? Expr)) {
            match c {
                $Child::Expr(x) => $walk_expr(x, f),
                $Child::Block(b) => {
                    for s in & $($m)? b.stmts {
                        $walk_stmt(s, f);
                    }
                    if let Some(t) = & $($m)? b.tail {
                        $walk_expr(t, f);
                    }
                }
            }
        }
    };
}

visitors!(Child, stmt_children, where_children, range_children, expr_children, walk_expr, walk_stmt, walk_child);
visitors!(
    ChildMut,
    stmt_children_mut,
    where_children_mut,
    range_children_mut,
    expr_children_mut,
    walk_expr_mut,
    walk_stmt_mut,
    walk_child_mut,
    mut
);
