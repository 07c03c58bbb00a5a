//! The affine form of an index: an `i64` expression read as a sum of
//! integer multiples of variables plus a rest, `Σ c·v + rest`.
//!
//! A read's index along an axis is most often a variable plus a constant
//! (`t - 1`, an earlier step of a recurrence; `i + r`, a convolution's
//! window), a multiple of one plus a constant (`2 * j + s - 1`, a strided
//! window), or a sum of such terms. Every pass and back end that reasons
//! about such an index (how far back a recurrence reads, which reads
//! `opt::col2im` and `opt::pack` can move, the halo widths of `opt::shard`,
//! the Rust back end's clipped rows and lanes) takes it in this one form
//! rather than walking the expression tree itself.
//!
//! The form is a function of the index expression as it stands, not a
//! field stored beside it: passes rewrite indices (`opt::shard` makes them
//! global, `opt::pack` shifts sums, `opt::simplify` normalizes them), and a
//! stored form would have to be kept true by each of them. It is exact:
//! the expression (`+`, `-`, `*`, negation, integer literals, variables,
//! dimensions) is read as a polynomial ([`index_dim`]), a variable of the
//! polynomial is a term only where its coefficient is an integer, and
//! evaluated in the language's wrapping arithmetic the expression equals
//! the form modulo 2^64. Anything else (a division, a read, a call, `min`)
//! has no form.

use crate::base::dim::{Dim, DimVar};
use crate::base::ops::{BinOp, UnOp};
use crate::ir::{Expr, ExprKind, Literal, VarId};

/// An index as `Σ c·v + rest` over the variables asked for.
#[derive(Clone, Debug, PartialEq)]
pub struct Affine {
    /// The variables asked for that the index mentions, by id, each with
    /// its non-zero coefficient.
    pub terms: Vec<(VarId, i64)>,
    /// What is left: constants, dimensions and the other variables (a
    /// variable `v` as the dimension variable `DimVar(v.0)`, as everywhere
    /// in the IR), free of every variable asked for.
    pub rest: Dim,
}

impl Affine {
    /// `e` in the variables `of` selects: `None` when `e` is not a
    /// polynomial ([`index_dim`]) or a selected variable in it has no
    /// integer coefficient (`i * j`, `i * N`).
    pub fn of(e: &Expr, of: &dyn Fn(VarId) -> bool) -> Option<Affine> {
        let mut rest = index_dim(e)?;
        let mut terms = Vec::new();
        for v in rest.vars() {
            let var = VarId(v.0);
            if !of(var) {
                continue;
            }
            let (c, r) = rest.linear_in(v)?;
            rest = r;
            if c != 0 {
                terms.push((var, c));
            }
        }
        Some(Affine { terms, rest })
    }

    /// `e` in the one variable `v`: `(c, rest)` with `e = c * v + rest`
    /// (`c` is 0 when `e` does not mention `v`).
    pub fn in_var(e: &Expr, v: VarId) -> Option<(i64, Dim)> {
        let a = Affine::of(e, &|x| x == v)?;
        Some((a.coeff(v), a.rest))
    }

    /// `c` when `e` is `v + c` for a constant `c` (`t - 1`, `i + 2`,
    /// `(t + 1) - 1`).
    pub fn offset_from(e: &Expr, v: VarId) -> Option<i64> {
        match Affine::in_var(e, v)? {
            (1, rest) => rest.as_constant(),
            _ => None,
        }
    }

    /// `(v, c)` when the form is `v + c`: one variable, added once, and a
    /// constant.
    pub fn var_plus_const(&self) -> Option<(VarId, i64)> {
        match self.terms[..] {
            [(v, 1)] => Some((v, self.rest.as_constant()?)),
            _ => None,
        }
    }

    /// The coefficient of `v` (0 when the index does not mention it).
    pub fn coeff(&self, v: VarId) -> i64 {
        self.terms.iter().find(|(x, _)| *x == v).map_or(0, |(_, c)| *c)
    }
}

/// `e` as a polynomial over the IR's variables (`v` as `DimVar(v.0)`): an
/// `i64` expression of integer literals, variables and dimensions under
/// `+`, `-`, `*` and negation; `None` for anything else.
pub fn index_dim(e: &Expr) -> Option<Dim> {
    match &e.kind {
        ExprKind::Var(v) => Some(Dim::var(DimVar(v.0))),
        ExprKind::Dim(d) => Some(d.clone()),
        ExprKind::Lit(Literal::Int(c)) => Some(Dim::constant(i64::try_from(*c).ok()?)),
        ExprKind::Unary(UnOp::Neg, a) => Some(index_dim(a)?.neg()),
        ExprKind::Binary(BinOp::Add, a, b) => Some(index_dim(a)?.add(&index_dim(b)?)),
        ExprKind::Binary(BinOp::Sub, a, b) => Some(index_dim(a)?.sub(&index_dim(b)?)),
        ExprKind::Binary(BinOp::Mul, a, b) => Some(index_dim(a)?.mul(&index_dim(b)?)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::scalar::ScalarKind;
    use crate::ir::Repr;

    fn int(e: ExprKind) -> Expr {
        Expr { kind: e, ty: Repr::Scalar(ScalarKind::I64) }
    }
    fn var(v: u32) -> Expr {
        int(ExprKind::Var(VarId(v)))
    }
    fn lit(c: i128) -> Expr {
        int(ExprKind::Lit(Literal::Int(c)))
    }
    fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
        int(ExprKind::Binary(op, Box::new(a), Box::new(b)))
    }
    fn d(v: u32) -> Dim {
        Dim::var(DimVar(v))
    }

    #[test]
    fn offsets_in_any_arithmetic_form() {
        let (t, n) = (VarId(0), 1);
        // t - 1, t + 2, (t + 1) - 1, 3 + t
        assert_eq!(Affine::offset_from(&bin(BinOp::Sub, var(0), lit(1)), t), Some(-1));
        assert_eq!(Affine::offset_from(&bin(BinOp::Add, var(0), lit(2)), t), Some(2));
        assert_eq!(Affine::offset_from(&bin(BinOp::Sub, bin(BinOp::Add, var(0), lit(1)), lit(1)), t), Some(0));
        assert_eq!(Affine::offset_from(&bin(BinOp::Add, lit(3), var(0)), t), Some(3));
        assert_eq!(Affine::offset_from(&int(ExprKind::Unary(UnOp::Neg, Box::new(lit(-2)))), t), None);
        // Not an offset: another variable, a scale, a negated variable.
        assert_eq!(Affine::offset_from(&bin(BinOp::Add, var(0), var(n)), t), None);
        assert_eq!(Affine::offset_from(&bin(BinOp::Mul, lit(2), var(0)), t), None);
        assert_eq!(Affine::offset_from(&bin(BinOp::Sub, lit(5), var(0)), t), None);
    }

    #[test]
    fn strided_sums_over_the_variables_asked_for() {
        // 2 * j + s - 1 + N * M, in j and s; N (2), M (3) stay in the rest.
        let e = bin(
            BinOp::Add,
            bin(BinOp::Sub, bin(BinOp::Add, bin(BinOp::Mul, lit(2), var(0)), var(1)), lit(1)),
            bin(BinOp::Mul, var(2), int(ExprKind::Dim(d(3)))),
        );
        let a = Affine::of(&e, &|v| v.0 < 2).unwrap();
        assert_eq!(a.terms, vec![(VarId(0), 2), (VarId(1), 1)]);
        assert_eq!(a.rest, d(2).mul(&d(3)).add_const(-1));
        assert_eq!(Affine::in_var(&e, VarId(0)), Some((2, d(1).add(&d(2).mul(&d(3))).add_const(-1))));
        // `(T - 1) - ((T - 1 - s) + 1)` is `s - 1`.
        let t = || int(ExprKind::Dim(d(5).add_const(-1)));
        let e = bin(BinOp::Sub, t(), bin(BinOp::Add, bin(BinOp::Sub, t(), var(1)), lit(1)));
        assert_eq!(Affine::in_var(&e, VarId(1)), Some((1, Dim::constant(-1))));
        // A dimension that mentions the variable counts it.
        let e = bin(BinOp::Add, var(0), int(ExprKind::Dim(d(0).add_const(4))));
        assert_eq!(Affine::in_var(&e, VarId(0)), Some((2, Dim::constant(4))));
    }

    #[test]
    fn no_form_for_products_of_selected_variables_or_other_operations() {
        let ij = bin(BinOp::Mul, var(0), var(1));
        assert_eq!(Affine::of(&ij, &|v| v.0 == 0), None);
        // Not selected, the product is part of the rest.
        assert_eq!(Affine::of(&ij, &|v| v.0 == 2).map(|a| a.rest), Some(d(0).mul(&d(1))));
        assert_eq!(Affine::in_var(&bin(BinOp::Div, var(0), lit(2)), VarId(0)), None);
        assert_eq!(Affine::in_var(&bin(BinOp::Mul, var(0), var(0)), VarId(0)), None);
        // A literal beyond i64 has no form.
        assert_eq!(index_dim(&lit(i128::from(i64::MAX) + 1)), None);
    }
}
