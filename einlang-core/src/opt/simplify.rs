//! Arithmetic that transforms leave behind, written the short way.
//!
//! Reverse mode substitutes one index expression into another: the
//! adjoint of a recurrence runs over reversed time, so the primal's
//! `t - 1` at step `s` reads `(max(1, T) - 1) - ((max(1, T) - 1 - s) + 1)`,
//! which is `s - 1`. Two rewrites, both exact:
//!
//! - An integer sum of terms (`+`, `-`, and products with an integer
//!   literal) is collected into its normal form, `c1 * v1 + .. + D + k`
//!   (variables and other terms with their coefficients, the dimensions
//!   `D` summed, the literals folded), and written back when that is
//!   shorter than the original. Integer `+ - *` wrap, and wrapping
//!   arithmetic is associative and commutative, so every reordering gives
//!   the same value; literals fold with checked arithmetic, and a sum
//!   whose literals overflow is left alone.
//! - A float `let` bound to one (the seed `d_l = 1.0` of a gradient) is
//!   read as the literal, and a float multiplied by one is the float
//!   itself.
//!
//! Runs on every function after the structural passes (their patterns see
//! the IR as the transforms wrote it) and before `cse`.

use std::collections::HashSet;

use crate::base::dim::Dim;
use crate::base::ops::BinOp;
use crate::base::scalar::ScalarKind;
use crate::ir::visit;
use crate::ir::{Expr, ExprKind, Function, Literal, Repr, Stmt, VarId};

/// Simplifies every value of `f`.
pub fn run(f: &mut Function) {
    let mut ones = HashSet::new();
    for s in &f.body {
        collect_ones(s, &mut ones);
    }
    let mut go = |e: &mut Expr| expr(e, &ones);
    for s in &mut f.body {
        visit::for_each_stmt_expr_mut(s, &mut go);
    }
    go(&mut f.result);
}

/// The float `let`s bound to the literal one, at any depth.
fn collect_ones(s: &Stmt, out: &mut HashSet<VarId>) {
    if let Stmt::Let { var, value } = s {
        if is_float_one(value, out) {
            out.insert(*var);
        }
    }
    if let Stmt::Sweep(w) = s {
        w.between.iter().for_each(|s| collect_ones(s, out));
    }
    visit::for_each_stmt_expr(s, &mut |e| lets_in(e, out));
}

fn lets_in(e: &Expr, out: &mut HashSet<VarId>) {
    if let ExprKind::Block { stmts, .. } = &e.kind {
        stmts.iter().for_each(|s| collect_ones(s, out));
    }
    visit::for_each_child(e, &mut |c| lets_in(c, out));
}

fn is_float_one(e: &Expr, ones: &HashSet<VarId>) -> bool {
    if !matches!(e.ty, Repr::Scalar(k) if k.is_float()) {
        return false;
    }
    match &e.kind {
        ExprKind::Lit(Literal::Float(text)) => text.parse::<f64>() == Ok(1.0),
        ExprKind::Var(v) => ones.contains(v),
        _ => false,
    }
}

fn expr(e: &mut Expr, ones: &HashSet<VarId>) {
    if is_int_sum(e) {
        let mut sum = Sum::default();
        if sum.add(e, 1, ones).is_some() {
            if let Some(short) = sum.build(&e.ty).filter(|s| nodes(s) < nodes(e)) {
                *e = short;
                return;
            }
        }
    }
    if let ExprKind::Var(v) = e.kind {
        if ones.contains(&v) {
            e.kind = ExprKind::Lit(Literal::Float("1.0".into()));
            return;
        }
    }
    visit::for_each_child_mut(e, &mut |c| expr(c, ones));
    if let ExprKind::Binary(BinOp::Mul, a, b) = &mut e.kind {
        if e.ty == a.ty && e.ty == b.ty {
            if is_float_one(a, ones) {
                *e = std::mem::replace(&mut **b, Expr::unit());
            } else if is_float_one(b, ones) {
                *e = std::mem::replace(&mut **a, Expr::unit());
            }
        }
    }
}

fn i64_ty() -> Repr {
    Repr::Scalar(ScalarKind::I64)
}

/// An `i64` `+` or `-` (the root of a sum to collect).
fn is_int_sum(e: &Expr) -> bool {
    e.ty == i64_ty() && matches!(e.kind, ExprKind::Binary(BinOp::Add | BinOp::Sub, ..))
}

/// A sum in normal form: terms with their coefficients (in order of first
/// appearance), dimensions, a literal.
#[derive(Default)]
struct Sum {
    terms: Vec<(Expr, i64)>,
    dims: Dim,
    lit: i64,
}

impl Sum {
    /// Adds `sign * e`; `None` when a coefficient or the literal overflows.
    fn add(&mut self, e: &Expr, sign: i64, ones: &HashSet<VarId>) -> Option<()> {
        match &e.kind {
            ExprKind::Binary(op @ (BinOp::Add | BinOp::Sub), a, b) if e.ty == i64_ty() => {
                self.add(a, sign, ones)?;
                self.add(b, if *op == BinOp::Add { sign } else { sign.checked_neg()? }, ones)
            }
            ExprKind::Binary(BinOp::Mul, a, b) if e.ty == i64_ty() => match (int_lit(a), int_lit(b)) {
                (Some(c), _) => self.add(b, sign.checked_mul(c)?, ones),
                (_, Some(c)) => self.add(a, sign.checked_mul(c)?, ones),
                _ => self.term(e, sign, ones),
            },
            ExprKind::Lit(Literal::Int(n)) => {
                self.lit = self.lit.checked_add(sign.checked_mul(i64::try_from(*n).ok()?)?)?;
                Some(())
            }
            ExprKind::Dim(d) => match d.as_constant() {
                Some(c) => {
                    self.lit = self.lit.checked_add(sign.checked_mul(c)?)?;
                    Some(())
                }
                // Dimensions are emitted with plain arithmetic: they join
                // the others only added or subtracted, not scaled.
                None if sign == 1 || sign == -1 => {
                    self.dims = if sign == 1 { self.dims.add(d) } else { self.dims.sub(d) };
                    Some(())
                }
                None => self.term(e, sign, ones),
            },
            _ => self.term(e, sign, ones),
        }
    }

    /// Adds `sign * e` for a term that is not itself a sum (simplified
    /// inside first).
    fn term(&mut self, e: &Expr, sign: i64, ones: &HashSet<VarId>) -> Option<()> {
        let mut e = e.clone();
        visit::for_each_child_mut(&mut e, &mut |c| expr(c, ones));
        match self.terms.iter_mut().find(|(t, _)| *t == e) {
            Some((_, c)) => *c = c.checked_add(sign)?,
            None => self.terms.push((e, sign)),
        }
        Some(())
    }

    /// The sum written out: the terms with positive coefficients, the
    /// dimensions, the negative terms, the literal. `None` when a
    /// coefficient or the literal cannot be written (`i64::MIN`).
    fn build(&self, ty: &Repr) -> Option<Expr> {
        let bin = |op, a: Expr, b: Expr| Expr { kind: ExprKind::Binary(op, Box::new(a), Box::new(b)), ty: ty.clone() };
        let lit_expr = |n: i64| Expr { kind: ExprKind::Lit(Literal::Int(i128::from(n))), ty: ty.clone() };
        let scaled = |t: &Expr, c: i64| if c == 1 { t.clone() } else { bin(BinOp::Mul, lit_expr(c), t.clone()) };
        // A small literal joins the dimensions (`max(1, T) - 1`): their
        // arithmetic is plain, and extents are far from overflowing.
        let (dims, lit) = if self.dims != Dim::zero() && self.lit.unsigned_abs() < 1 << 32 {
            (self.dims.add_const(self.lit), 0)
        } else {
            (self.dims.clone(), self.lit)
        };
        let mut parts: Vec<(Expr, bool)> = Vec::new();
        for (t, c) in self.terms.iter().filter(|(_, c)| *c > 0) {
            parts.push((scaled(t, *c), true));
        }
        if dims != Dim::zero() {
            let (d, positive) =
                if parts.is_empty() && dims_negative(&dims) { (dims.neg(), false) } else { (dims, true) };
            parts.push((Expr { kind: ExprKind::Dim(d), ty: ty.clone() }, positive));
        }
        for (t, c) in self.terms.iter().filter(|(_, c)| *c < 0) {
            parts.push((scaled(t, c.checked_neg()?), false));
        }
        if lit != 0 || parts.is_empty() {
            parts.push((lit_expr(lit.checked_abs()?), lit >= 0));
        }
        let mut parts = parts.into_iter();
        let (first, positive) = parts.next()?;
        let mut acc = if positive { first } else { bin(BinOp::Sub, lit_expr(0), first) };
        for (p, positive) in parts {
            acc = bin(if positive { BinOp::Add } else { BinOp::Sub }, acc, p);
        }
        Some(acc)
    }
}

/// Whether `-d` reads better than `d` (its constant term, or else every
/// term, negative).
fn dims_negative(d: &Dim) -> bool {
    d.neg().display(&|_| String::new()).len() < d.display(&|_| String::new()).len()
}

fn int_lit(e: &Expr) -> Option<i64> {
    match &e.kind {
        ExprKind::Lit(Literal::Int(n)) => i64::try_from(*n).ok(),
        ExprKind::Dim(d) => d.as_constant(),
        _ => None,
    }
}

/// The nodes of `e`.
fn nodes(e: &Expr) -> usize {
    let mut n = 1;
    visit::for_each_child(e, &mut |c| n += nodes(c));
    n
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Integer expressions over three variables, evaluated with wrapping
    /// arithmetic as generated code does.
    #[derive(Clone, Debug)]
    enum T {
        Var(u32),
        Lit(i64),
        Dim(i64),
        Add(Box<T>, Box<T>),
        Sub(Box<T>, Box<T>),
        Mul(Box<T>, Box<T>),
    }

    fn tree() -> impl Strategy<Value = T> {
        let leaf = prop_oneof![
            (0u32..3).prop_map(T::Var),
            prop_oneof![-3i64..4, Just(i64::MAX), Just(i64::MIN)].prop_map(T::Lit),
            (-2i64..3).prop_map(T::Dim),
        ];
        leaf.prop_recursive(5, 40, 2, |inner| {
            prop_oneof![
                (inner.clone(), inner.clone()).prop_map(|(a, b)| T::Add(Box::new(a), Box::new(b))),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| T::Sub(Box::new(a), Box::new(b))),
                (inner.clone(), inner).prop_map(|(a, b)| T::Mul(Box::new(a), Box::new(b))),
            ]
        })
    }

    /// `T::Dim(c)` is the dimension `D + c` (`D` a dimension variable).
    fn to_ir(t: &T) -> Expr {
        let ty = i64_ty();
        let bin = |op, a: &T, b: &T| Expr {
            kind: ExprKind::Binary(op, Box::new(to_ir(a)), Box::new(to_ir(b))),
            ty: ty.clone(),
        };
        match t {
            T::Var(v) => Expr { kind: ExprKind::Var(VarId(*v)), ty },
            T::Lit(n) => Expr { kind: ExprKind::Lit(Literal::Int(i128::from(*n))), ty },
            T::Dim(c) => Expr { kind: ExprKind::Dim(Dim::var(crate::base::dim::DimVar(7)).add_const(*c)), ty },
            T::Add(a, b) => bin(BinOp::Add, a, b),
            T::Sub(a, b) => bin(BinOp::Sub, a, b),
            T::Mul(a, b) => bin(BinOp::Mul, a, b),
        }
    }

    fn eval(e: &Expr, vars: &[i64; 3], d: i64) -> i64 {
        match &e.kind {
            ExprKind::Var(v) => vars[v.0 as usize],
            ExprKind::Lit(Literal::Int(n)) => *n as i64,
            ExprKind::Dim(x) => x.eval(&|_| Some(d)).expect("a dimension of one variable"),
            ExprKind::Binary(op, a, b) => {
                let (a, b) = (eval(a, vars, d), eval(b, vars, d));
                match op {
                    BinOp::Add => a.wrapping_add(b),
                    BinOp::Sub => a.wrapping_sub(b),
                    BinOp::Mul => a.wrapping_mul(b),
                    _ => unreachable!("only + - * are generated"),
                }
            }
            _ => unreachable!("only variables, literals, dimensions and + - * are generated"),
        }
    }

    proptest! {
        /// The rewritten sum has the value of the original, with wrapping
        /// arithmetic, whatever the variables hold (dimensions are small
        /// non-negative numbers, as extents are).
        #[test]
        fn simplified_sums_keep_their_value(t in tree(), vars in proptest::array::uniform3(any::<i64>()), d in 0i64..1000) {
            let original = to_ir(&t);
            let mut simplified = original.clone();
            expr(&mut simplified, &HashSet::new());
            prop_assert!(nodes(&simplified) <= nodes(&original));
            prop_assert_eq!(eval(&simplified, &vars, d), eval(&original, &vars, d), "{:?}", simplified);
        }
    }

    #[test]
    fn a_reversed_step_is_the_step_minus_one() {
        // (D - 1) - (((D - 1) - s) + 1) == s - 1
        let t = T::Sub(
            Box::new(T::Dim(-1)),
            Box::new(T::Add(Box::new(T::Sub(Box::new(T::Dim(-1)), Box::new(T::Var(0)))), Box::new(T::Lit(1)))),
        );
        let mut e = to_ir(&t);
        expr(&mut e, &HashSet::new());
        let s = Expr { kind: ExprKind::Var(VarId(0)), ty: i64_ty() };
        let one = Expr { kind: ExprKind::Lit(Literal::Int(1)), ty: i64_ty() };
        assert_eq!(e.kind, ExprKind::Binary(BinOp::Sub, Box::new(s), Box::new(one)));
    }
}
