//! Operators: binary operators, elementwise broadcasting and powers.

use super::literal::is_float_lit;
use crate::analysis::cx::Cx;
use crate::analysis::Ty;
use crate::base::dim::{Dim, Truth};
use crate::base::intrinsic::Intrinsic;
use crate::base::ops::{BinOp, Lit};
use crate::base::scalar::ScalarKind;
use crate::base::span::Span;
use crate::diag::Diagnostic;
use crate::hir::{ExprId, ExprKind};

impl<'a> Cx<'a> {
    pub(super) fn infer_binary(
        &mut self,
        e: ExprId,
        op: BinOp,
        a: ExprId,
        b: ExprId,
        expect: Option<ScalarKind>,
    ) -> Ty {
        let span = self.hir.span(e);
        if op.is_logical() {
            let ta = self.infer(a, Some(ScalarKind::Bool));
            let tb = self.infer(b, Some(ScalarKind::Bool));
            if ta.is_error() || tb.is_error() {
                return Ty::Error;
            }
            let tensor = |t: &Ty| matches!(t, Ty::Tensor(..) | Ty::Dyn(_));
            if (tensor(&ta) || tensor(&tb)) && [&ta, &tb].iter().all(|t| ew_elem(t) == Some(ScalarKind::Bool)) {
                // Element by element, as arithmetic is (both operands are
                // evaluated).
                return match self.broadcast(span, &ta, &tb) {
                    Some(shape) => shape.ty(ScalarKind::Bool),
                    None => Ty::Error,
                };
            }
            if ta != Ty::BOOL || tb != Ty::BOOL {
                let d = Diagnostic::error(
                    span,
                    format!(
                        "`{}` needs `bool` operands, found `{}` and `{}`",
                        op.symbol(),
                        self.t.show_ty(&ta),
                        self.t.show_ty(&tb)
                    ),
                );
                self.err(d);
                return Ty::Error;
            }
            return Ty::BOOL;
        }
        // The operand whose type is fixed goes first, so that a literal on
        // the other side takes its type.
        let operand_expect = if op.is_comparison() { None } else { expect };
        let (ta, tb) = if op == BinOp::Pow {
            let ta = self.infer(a, expect);
            // An integer literal exponent (or a vector of them) stays an
            // integer: `x ** 2` is powi.
            let int_lit = matches!(
                &self.hir.exprs[b].kind,
                ExprKind::Lit(Lit::Int(..)) | ExprKind::Unary(..) | ExprKind::Array(..)
            ) && self.literal_value(b)
                && !is_float_lit(self.hir, b);
            let tb_expect = if int_lit { Some(ScalarKind::I32) } else { ew_elem(&ta) };
            let tb = self.infer(b, tb_expect);
            (ta, tb)
        } else if self.flexible(a) && !self.flexible(b) {
            let tb = self.infer(b, operand_expect);
            let ta = self.infer(a, ew_elem(&tb));
            (ta, tb)
        } else {
            let ta = self.infer(a, operand_expect);
            let tb = self.infer(b, ew_elem(&ta));
            (ta, tb)
        };
        if ta.is_error() || tb.is_error() {
            return Ty::Error;
        }
        if op == BinOp::Pow {
            return self.infer_pow(e, &ta, &tb);
        }
        if matches!(op, BinOp::Eq | BinOp::Ne) && matches!((&ta, &tb), (Ty::Strs(_), Ty::Strs(_))) {
            // Two vectors of strings are equal when they have the same
            // strings in the same order.
            return Ty::BOOL;
        }
        if ta == Ty::Str || tb == Ty::Str {
            if ta == tb && matches!(op, BinOp::Eq | BinOp::Ne) {
                return Ty::BOOL;
            }
            // `a + b` of two strings is their concatenation.
            if ta == tb && op == BinOp::Add {
                return Ty::Str;
            }
            let d = Diagnostic::error(
                span,
                format!("cannot apply `{}` to `{}` and `{}`", op.symbol(), self.t.show_ty(&ta), self.t.show_ty(&tb)),
            )
            .note("strings can be compared with `==` and `!=`, and joined with `+`");
            self.err(d);
            return Ty::Error;
        }
        let (ka, kb) = match (ew_elem(&ta), ew_elem(&tb)) {
            (Some(x), Some(y)) => (x, y),
            _ => {
                let d = Diagnostic::error(
                    span,
                    format!(
                        "cannot apply `{}` to `{}` and `{}`",
                        op.symbol(),
                        self.t.show_ty(&ta),
                        self.t.show_ty(&tb)
                    ),
                );
                self.err(d);
                return Ty::Error;
            }
        };
        if ka != kb {
            self.retype_to_match(a, ka, b, kb, span);
            let d =
                Diagnostic::error(span, format!("mismatched types: `{}` {} `{}`", ka.name(), op.symbol(), kb.name()))
                    .label(self.hir.span(a), format!("this is `{}`", ka.name()))
                    .label(self.hir.span(b), format!("this is `{}`", kb.name()));
            let d = self
                .explain_literal_types(d, &[a, b])
                .note("einlang never converts numbers implicitly")
                .help(format!("convert one side with `as`, for example `(...) as {}`", ka.name()));
            self.err(d);
            return Ty::Error;
        }
        let arithmetic = matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Rem);
        if arithmetic && ka == ScalarKind::Bool {
            self.err(Diagnostic::error(span, format!("cannot apply `{}` to `bool`", op.symbol())));
            return Ty::Error;
        }
        let shape = match self.broadcast(span, &ta, &tb) {
            Some(s) => s,
            None => return Ty::Error,
        };
        let k = if op.is_comparison() { ScalarKind::Bool } else { ka };
        shape.ty(k)
    }

    /// Broadcasting: scalar with scalar, tensor with scalar, or two tensors
    /// of the same shape. A dynamic-rank tensor combines with a scalar or a
    /// tensor whose shape is then checked at run time. Returns the shape of
    /// the result.
    pub(super) fn broadcast(&mut self, span: Span, a: &Ty, b: &Ty) -> Option<Bcast> {
        match (a, b) {
            (Ty::Scalar(_), Ty::Scalar(_)) => Some(Bcast::Scalar),
            (Ty::Tensor(_, d), Ty::Scalar(_)) | (Ty::Scalar(_), Ty::Tensor(_, d)) => Some(Bcast::Tensor(d.clone())),
            (Ty::Dyn(_), Ty::Scalar(_) | Ty::Tensor(..) | Ty::Dyn(_))
            | (Ty::Scalar(_) | Ty::Tensor(..), Ty::Dyn(_)) => Some(Bcast::Dyn),
            (Ty::Tensor(_, d1), Ty::Tensor(_, d2)) => {
                if d1.len() != d2.len() || d1.iter().zip(d2).any(|(x, y)| x.prove_eq(y) == Truth::False) {
                    let d = Diagnostic::error(
                        span,
                        format!(
                            "cannot combine tensors of shapes `{}` and `{}` without indices",
                            self.t.show_ty(a),
                            self.t.show_ty(b)
                        ),
                    )
                    .note("without indices, only tensors of the same shape, or a tensor and a scalar, combine")
                    .help("write the operation with indices, e.g. `let z[i, j] = x[i, j] + y[j];`");
                    self.err(d);
                    return None;
                }
                Some(Bcast::Tensor(d1.clone()))
            }
            _ => {
                self.err(Diagnostic::error(
                    span,
                    format!("cannot combine `{}` and `{}`", self.t.show_ty(a), self.t.show_ty(b)),
                ));
                None
            }
        }
    }

    pub(super) fn infer_pow(&mut self, e: ExprId, ta: &Ty, tb: &Ty) -> Ty {
        let span = self.hir.span(e);
        let (Some(ka), Some(kb)) = (ta.scalar(), tb.scalar()) else {
            if let (Some(ka), Some(kb)) = (ew_elem(ta), ew_elem(tb)) {
                // With a tensor operand, elementwise, under the broadcasting
                // rule of the other operators: a tensor and a scalar, or two
                // tensors of one shape.
                if let Some(i) = pow_kind(ka, kb) {
                    let Some(shape) = self.broadcast(span, ta, tb) else { return Ty::Error };
                    self.t.intrinsic.insert(e, i);
                    return shape.ty(ka);
                }
            }
            let d =
                Diagnostic::error(span, format!("cannot raise `{}` to `{}`", self.t.show_ty(ta), self.t.show_ty(tb)));
            self.err(d);
            return Ty::Error;
        };
        match pow_kind(ka, kb) {
            Some(i) => {
                self.t.intrinsic.insert(e, i);
                Ty::Scalar(ka)
            }
            None => {
                let d = Diagnostic::error(span, format!("cannot raise `{}` to a `{}` power", ka.name(), kb.name()))
                    .help("`**` takes float ** float, float ** integer, or integer ** integer of the same type");
                self.err(d);
                Ty::Error
            }
        }
    }
}

fn pow_kind(base: ScalarKind, exp: ScalarKind) -> Option<Intrinsic> {
    match (base.is_float(), exp.is_float()) {
        (true, true) if base == exp => Some(Intrinsic::Powf),
        (true, false) if exp.is_int() => Some(Intrinsic::Powi),
        (false, false) if base.is_int() && base == exp => Some(Intrinsic::IntPow),
        _ => None,
    }
}

/// The shape of an elementwise result.
pub(super) enum Bcast {
    Scalar,
    Tensor(Vec<Dim>),
    /// Known only at run time: a dynamic-rank operand.
    Dyn,
}

impl Bcast {
    pub(super) fn ty(self, k: ScalarKind) -> Ty {
        match self {
            Bcast::Scalar => Ty::Scalar(k),
            Bcast::Tensor(dims) => Ty::Tensor(k, dims),
            Bcast::Dyn => Ty::Dyn(k),
        }
    }
}

/// The element type of a value that elementwise operators take: a scalar,
/// a tensor or a dynamic-rank tensor.
pub(super) fn ew_elem(t: &Ty) -> Option<ScalarKind> {
    match t {
        Ty::Dyn(k) => Some(*k),
        _ => t.elem(),
    }
}
