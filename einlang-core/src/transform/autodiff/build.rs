//! Building derivative expressions: small constructors over the HIR arena
//! that fold the trivial cases (a product with one, a sum with zero), so
//! generated code carries no `x * 1.0` or `0.0 + y`. Zero itself is `None`
//! wherever a derivative may vanish: it never becomes a node.

use crate::base::intrinsic::Intrinsic;
use crate::base::ops::{BinOp, Lit, RedOp, UnOp};
use crate::base::scalar::ScalarKind;
use crate::base::span::Span;
use crate::hir::{Builtin, Callee, DefId, ExprId, ExprKind, Hir, Range, RedVar, Slot, Where};

pub(super) struct Build<'h> {
    pub hir: &'h mut Hir,
    pub span: Span,
}

impl Build<'_> {
    pub fn e(&mut self, kind: ExprKind) -> ExprId {
        self.hir.alloc_expr(kind, self.span)
    }

    pub fn float(&mut self, v: f64, k: ScalarKind) -> ExprId {
        let text = if v.fract() == 0.0 && v.abs() < 1e15 { format!("{v:.1}") } else { format!("{v}") };
        self.e(ExprKind::Lit(Lit::Float(text, Some(k))))
    }

    pub fn int(&mut self, v: i64) -> ExprId {
        self.e(ExprKind::Lit(Lit::Int(i128::from(v), Some(ScalarKind::I64))))
    }

    pub fn def(&mut self, d: DefId) -> ExprId {
        self.e(ExprKind::Def(d))
    }

    pub fn float_value(&self, e: ExprId) -> Option<f64> {
        match &self.hir.exprs[e].kind {
            ExprKind::Lit(Lit::Float(s, _)) => s.parse().ok(),
            _ => None,
        }
    }

    pub fn bin(&mut self, op: BinOp, a: ExprId, b: ExprId) -> ExprId {
        self.e(ExprKind::Binary(op, a, b))
    }

    pub fn mul(&mut self, a: ExprId, b: ExprId) -> ExprId {
        match (self.float_value(a), self.float_value(b)) {
            (Some(1.0), _) => b,
            (_, Some(1.0)) => a,
            (Some(-1.0), _) => self.neg(b),
            (_, Some(-1.0)) => self.neg(a),
            _ => self.bin(BinOp::Mul, a, b),
        }
    }

    pub fn div(&mut self, a: ExprId, b: ExprId) -> ExprId {
        match self.float_value(b) {
            Some(1.0) => a,
            _ => self.bin(BinOp::Div, a, b),
        }
    }

    pub fn sub(&mut self, a: ExprId, b: ExprId) -> ExprId {
        self.bin(BinOp::Sub, a, b)
    }

    pub fn neg(&mut self, a: ExprId) -> ExprId {
        if let ExprKind::Unary(UnOp::Neg, x) = self.hir.exprs[a].kind {
            return x;
        }
        self.e(ExprKind::Unary(UnOp::Neg, a))
    }

    /// `a + b` where either may be zero (`None`).
    pub fn add_opt(&mut self, a: Option<ExprId>, b: Option<ExprId>) -> Option<ExprId> {
        match (a, b) {
            (Some(a), Some(b)) => Some(self.bin(BinOp::Add, a, b)),
            (a, None) => a,
            (None, b) => b,
        }
    }

    /// `a * b` where `a` may be zero.
    pub fn mul_opt(&mut self, a: Option<ExprId>, b: ExprId) -> Option<ExprId> {
        a.map(|a| self.mul(a, b))
    }

    pub fn call(&mut self, f: Intrinsic, args: Vec<ExprId>) -> ExprId {
        let span = self.span;
        self.e(ExprKind::Call { callee: Callee::Intrinsic(f), callee_span: span, args })
    }

    pub fn cast(&mut self, a: ExprId, k: ScalarKind) -> ExprId {
        self.e(ExprKind::Cast(a, k))
    }

    pub fn index(&mut self, base: DefId, args: Vec<ExprId>) -> ExprId {
        if args.is_empty() {
            return self.def(base);
        }
        let base = self.def(base);
        self.e(ExprKind::Index { base, args })
    }

    /// `shape(x)[axis]`.
    pub fn extent(&mut self, x: DefId, axis: usize) -> ExprId {
        let x = self.def(x);
        let shape = self.e(ExprKind::Builtin(Builtin::Shape, vec![x]));
        let axis = self.int(axis as i64);
        self.e(ExprKind::Index { base: shape, args: vec![axis] })
    }

    pub fn range(&mut self, start: ExprId, end: ExprId) -> Range {
        Range { start, end, span: self.span }
    }

    /// Slots `v in 0..shape(t)[a]`, one per variable, over `t`'s axes.
    pub fn slots_over(&mut self, t: DefId, vars: &[DefId]) -> Vec<Slot> {
        vars.iter()
            .enumerate()
            .map(|(a, &def)| {
                let zero = self.int(0);
                let hi = self.extent(t, a);
                Slot::Var { def, range: Some(self.range(zero, hi)) }
            })
            .collect()
    }

    /// `a && b && ...`, or None for no condition.
    pub fn all(&mut self, conds: &[ExprId]) -> Option<ExprId> {
        let mut it = conds.iter().copied();
        let first = it.next()?;
        Some(it.fold(first, |acc, c| self.bin(BinOp::And, acc, c)))
    }

    /// `if cond { v } else { 0 }` of float kind `k`.
    pub fn select(&mut self, cond: ExprId, v: ExprId, k: ScalarKind) -> ExprId {
        let zero = self.float(0.0, k);
        self.e(ExprKind::If { cond, then: v, els: Some(zero) })
    }

    /// `sum[vars](body where guards)`, or the guarded body with no variables.
    pub fn sum(&mut self, vars: Vec<RedVar>, guards: Vec<ExprId>, body: ExprId, k: ScalarKind) -> ExprId {
        if vars.is_empty() {
            return match self.all(&guards) {
                Some(c) => self.select(c, body, k),
                None => body,
            };
        }
        let wheres = guards.into_iter().map(Where::Guard).collect();
        self.e(ExprKind::Reduce { op: RedOp::Sum, vars, wheres, body })
    }
}
