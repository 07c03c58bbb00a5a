//! Indexing a computed value: `f(x)[j]`, `(a + b)[i]`, `[1.0, 2.0][k]`,
//! `pair.0[i]`, `g(x)[i][j]`.
//!
//! Only a name can be read by index after resolution, so the value of a
//! base that is not a name is bound to a temporary local, named after the
//! expression (`f(x)`) so that messages show what the user wrote; reads of
//! it are then reads of a name, with the same range inference and bounds
//! proofs (`f(x)[12]` of a `[f32; 10]` is a compile error, `f(x)[n]` a
//! checked read).
//!
//! The temporary is evaluated once, as far out as its value allows: before
//! the indexed definition whose body reads it, or before the loops of the
//! reduction or comprehension around the read, at the outermost of these
//! places where every local the value mentions is bound. `let y[i] =
//! sum[k](f(x)[k] * w[i, k])` evaluates `f(x)` once before the statement;
//! `let y[i] = sum[k](f(x[i])[k])` once per point `i`, before the loop over
//! `k`. A value that mentions a local bound at none of these places (an
//! index of the innermost reduction, a local of a block inside it), or a
//! read outside them, is evaluated where it is written.

use std::collections::HashMap;

use crate::base::ops::{Lit, UnOp};
use crate::base::span::Span;
use crate::hir::{self, DefId, DefKind, ExprId, ExprKind};
use crate::syntax::ast;

use super::Resolver;

/// A place where temporaries can be evaluated once: before an indexed
/// definition, or before the loops of a reduction or comprehension.
#[derive(Clone, Default)]
pub(super) struct Frame {
    /// Definitions allocated from this index on are bound inside the frame,
    /// so a value that mentions one cannot be evaluated at it.
    first_inner: usize,
    /// A definition bound inside although allocated earlier: the recurrence
    /// whose clause the frame is before.
    inner: Option<DefId>,
    /// The temporaries to evaluate there, in order.
    lets: Vec<hir::Stmt>,
}

impl Resolver {
    /// Opens a frame for the construct about to be resolved; `inner` is a
    /// definition its values may read that is not bound yet before it.
    pub(super) fn open_frame(&mut self, inner: Option<DefId>) {
        self.frames.push(Frame { first_inner: self.hir.defs.len(), inner, lets: Vec::new() });
    }

    /// Closes the innermost frame: the temporaries to evaluate there.
    pub(super) fn close_frame(&mut self) -> Vec<hir::Stmt> {
        let depth = self.frames.len();
        let frame = self.frames.pop().unwrap_or_default();
        self.temp_frame.retain(|_, f| *f + 1 < depth);
        frame.lets
    }

    /// Closes the frame around the reduction or comprehension `e`: `e`
    /// itself, or a block that evaluates the frame's temporaries first.
    pub(super) fn close_frame_around(&mut self, e: ExprId, span: Span) -> ExprId {
        let stmts = self.close_frame();
        if stmts.is_empty() {
            return e;
        }
        self.hir.alloc_expr(ExprKind::Block(hir::Block { stmts, tail: Some(e) }), span)
    }

    /// The frames that a value may be evaluated at, taken away while a
    /// body of another function (a specialization, an inlined call, a
    /// `const`) is resolved.
    pub(super) fn take_frames(&mut self) -> (Vec<Frame>, HashMap<DefId, usize>) {
        (std::mem::take(&mut self.frames), std::mem::take(&mut self.temp_frame))
    }

    pub(super) fn restore_frames(&mut self, saved: (Vec<Frame>, HashMap<DefId, usize>)) {
        (self.frames, self.temp_frame) = saved;
    }

    /// Binds the value `value` of the computed base `base` of a subscript
    /// to a temporary. `first` is the number of definitions before `value`
    /// was resolved (those after it are bound inside it). Returns the
    /// temporary's name and, when no frame can hold it, the `let` to
    /// evaluate right where the subscript is.
    pub(super) fn bind_computed(
        &mut self,
        base: &ast::Expr,
        value: ExprId,
        first: usize,
    ) -> (ExprId, Option<hir::Stmt>) {
        let frame = self.frame_for(value, first);
        let def = self.hir.alloc_def(value_text(base), DefKind::Local, base.span);
        let var = self.hir.alloc_expr(ExprKind::Def(def), base.span);
        let stmt = hir::Stmt::Let { def, ty: None, value, span: base.span };
        match frame {
            Some(k) => {
                self.frames[k].lets.push(stmt);
                self.temp_frame.insert(def, k);
                (var, None)
            }
            None => (var, Some(stmt)),
        }
    }

    /// The outermost open frame where every local `value` mentions is
    /// bound (None when there is none).
    fn frame_for(&self, value: ExprId, first: usize) -> Option<usize> {
        // Frames from `lowest` on are deep enough; the set only shrinks
        // from the outside.
        let mut lowest = 0;
        for e in self.hir.reachable([value]) {
            let (ExprKind::Def(d) | ExprKind::Rest(d)) = self.hir.exprs[e].kind else { continue };
            if let Some(&k) = self.temp_frame.get(&d) {
                // Another temporary: evaluated at its frame or deeper.
                lowest = lowest.max(k);
                continue;
            }
            if d.index() >= first {
                // Bound inside the value itself.
                continue;
            }
            while lowest < self.frames.len() {
                let f = &self.frames[lowest];
                if d.index() < f.first_inner && f.inner != Some(d) {
                    break;
                }
                lowest += 1;
            }
        }
        (lowest < self.frames.len()).then_some(lowest)
    }
}

/// How messages show a computed value: the expression in source syntax
/// (`f(x)`, `(a + b)`, `[1.0, 2.0]`, `pair.0`), long parts elided as `..`.
/// Lowering names the variable `value` (the text is no identifier).
fn value_text(e: &ast::Expr) -> String {
    let text = |depth| match &e.kind {
        ast::ExprKind::Binary { .. } | ast::ExprKind::Unary { .. } | ast::ExprKind::Cast { .. } => {
            format!("({})", expr_text(e, depth))
        }
        _ => expr_text(e, depth),
    };
    (1..=4).rev().map(text).find(|t| t.chars().count() <= 40).unwrap_or_else(|| text(0))
}

/// `e` in source syntax, with compound subexpressions nested deeper than
/// `depth` levels shown as `..` (names and literals are always shown).
fn expr_text(e: &ast::Expr, depth: usize) -> String {
    let list = |xs: &[ast::Expr]| xs.iter().map(|x| sub_text(x, depth)).collect::<Vec<_>>().join(", ");
    match &e.kind {
        ast::ExprKind::Lit(Lit::Int(v, k)) => format!("{v}{}", k.map(|k| k.name()).unwrap_or("")),
        ast::ExprKind::Lit(Lit::Float(v, k)) => format!("{v}{}", k.map(|k| k.name()).unwrap_or("")),
        ast::ExprKind::Lit(Lit::Bool(b)) => b.to_string(),
        ast::ExprKind::Lit(Lit::Str(t)) => format!("{t:?}"),
        ast::ExprKind::Path(p) => p.iter().map(|s| s.name.as_str()).collect::<Vec<_>>().join("::"),
        ast::ExprKind::Unary { op, expr } => {
            let op = match op {
                UnOp::Neg => "-",
                UnOp::Not => "!",
            };
            format!("{op}{}", operand_text(expr, depth))
        }
        ast::ExprKind::Binary { op, lhs, rhs } => {
            format!("{} {} {}", operand_text(lhs, depth), op.symbol(), operand_text(rhs, depth))
        }
        ast::ExprKind::Call { callee, args } => format!("{}({})", operand_text(callee, depth), list(args)),
        ast::ExprKind::Index { base, args } => {
            let args: Vec<String> = args
                .iter()
                .map(|a| match a {
                    ast::IndexArg::Expr(x) => sub_text(x, depth),
                    ast::IndexArg::Rest(r) => format!("..{}", r.name),
                })
                .collect();
            format!("{}[{}]", operand_text(base, depth), args.join(", "))
        }
        ast::ExprKind::Field { base, index, .. } => format!("{}.{index}", operand_text(base, depth)),
        ast::ExprKind::Cast { expr, ty } => {
            let ty = match ty {
                ast::Type::Scalar(k, _) => k.name(),
                _ => "..",
            };
            format!("{} as {ty}", operand_text(expr, depth))
        }
        ast::ExprKind::Array(items) => format!("[{}]", list(items)),
        ast::ExprKind::Tuple(items) => format!("({})", list(items)),
        ast::ExprKind::Reduce { op, vars, .. } => {
            let vars: Vec<String> =
                vars.iter().map(|v| format!("{}{}", if v.rest { ".." } else { "" }, v.var.name)).collect();
            format!("{}[{}](..)", op.name(), vars.join(", "))
        }
        ast::ExprKind::If { .. } => "if .. { .. } else { .. }".to_string(),
        ast::ExprKind::Match { .. } => "match .. { .. }".to_string(),
        ast::ExprKind::Block(_) => "{ .. }".to_string(),
        ast::ExprKind::Comprehension { rows: false, .. } => "[.. | ..]".to_string(),
        ast::ExprKind::Comprehension { rows: true, .. } => "jagged[.. | ..]".to_string(),
        ast::ExprKind::Jagged(_) => "jagged[..]".to_string(),
        _ => "..".to_string(),
    }
}

/// A subexpression one level down: `..` when it is compound and `depth`
/// is spent.
fn sub_text(e: &ast::Expr, depth: usize) -> String {
    match &e.kind {
        ast::ExprKind::Path(_) | ast::ExprKind::Lit(_) => expr_text(e, 0),
        _ if depth == 0 => "..".to_string(),
        _ => expr_text(e, depth - 1),
    }
}

/// An operand of an operator, or the base of a call, subscript or field:
/// parenthesized when it is an operator or a cast itself.
fn operand_text(e: &ast::Expr, depth: usize) -> String {
    let text = sub_text(e, depth);
    match &e.kind {
        ast::ExprKind::Binary { .. } | ast::ExprKind::Unary { .. } | ast::ExprKind::Cast { .. } if depth > 0 => {
            format!("({text})")
        }
        _ => text,
    }
}
