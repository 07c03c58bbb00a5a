//! Local derivative rules: the partial derivative of each differentiable
//! operation with respect to each operand, as an expression of the
//! operands. Forward mode multiplies them by tangents, reverse mode by
//! adjoints, so a new elementary function needs one rule here, not two.
//!
//! Piecewise-constant functions (`floor`, `ceil`, `round`, `trunc`) and
//! integer operations have no partials (zero, as in JAX). `min` / `max`
//! route to the first operand on ties.

use super::build::Build;
use crate::base::intrinsic::Intrinsic;
use crate::base::ops::BinOp;
use crate::base::scalar::ScalarKind;
use crate::hir::ExprId;

/// One partial derivative.
#[derive(Clone, Copy)]
pub(super) enum Partial {
    /// Multiply by this expression.
    Scale(ExprId),
    /// One where the condition holds, zero elsewhere.
    Select(ExprId),
}

/// The partials of `f(args)`, whose value is the expression `value`, one per
/// argument (`None`: zero). `k` is the float kind of the result.
pub(super) fn intrinsic(
    b: &mut Build,
    f: Intrinsic,
    args: &[ExprId],
    value: ExprId,
    k: ScalarKind,
) -> Vec<Option<Partial>> {
    use Intrinsic as I;
    let a = args[0];
    let one = |b: &mut Build| b.float(1.0, k);
    let square = |b: &mut Build, x: ExprId| b.bin(BinOp::Mul, x, x);
    let scale = |e: ExprId| vec![Some(Partial::Scale(e))];
    match f {
        I::Exp => scale(value),
        I::Expm1 => scale(b.call(I::Exp, vec![a])),
        I::Ln => {
            let o = one(b);
            scale(b.div(o, a))
        }
        I::Log10 | I::Log2 => {
            let base = if f == I::Log10 { std::f64::consts::LN_10 } else { std::f64::consts::LN_2 };
            let c = b.float(base, k);
            let den = b.bin(BinOp::Mul, a, c);
            let o = one(b);
            scale(b.div(o, den))
        }
        I::Log1p => {
            let o = one(b);
            let den = b.bin(BinOp::Add, o, a);
            let o = one(b);
            scale(b.div(o, den))
        }
        I::Sqrt => {
            let h = b.float(0.5, k);
            scale(b.div(h, value))
        }
        I::Sin => scale(b.call(I::Cos, vec![a])),
        I::Cos => {
            let s = b.call(I::Sin, vec![a]);
            scale(b.neg(s))
        }
        I::Tan => {
            let o = one(b);
            let v2 = square(b, value);
            scale(b.bin(BinOp::Add, o, v2))
        }
        I::Asin | I::Acos => {
            let o = one(b);
            let a2 = square(b, a);
            let d = b.sub(o, a2);
            let r = b.call(I::Sqrt, vec![d]);
            let o = one(b);
            let q = b.div(o, r);
            scale(if f == I::Acos { b.neg(q) } else { q })
        }
        I::Atan => {
            let o = one(b);
            let a2 = square(b, a);
            let d = b.bin(BinOp::Add, o, a2);
            let o = one(b);
            scale(b.div(o, d))
        }
        I::Sinh => scale(b.call(I::Cosh, vec![a])),
        I::Cosh => scale(b.call(I::Sinh, vec![a])),
        I::Tanh => {
            let o = one(b);
            let v2 = square(b, value);
            scale(b.sub(o, v2))
        }
        I::Asinh | I::Acosh => {
            let a2 = square(b, a);
            let o = one(b);
            let d = if f == I::Asinh { b.bin(BinOp::Add, a2, o) } else { b.sub(a2, o) };
            let r = b.call(I::Sqrt, vec![d]);
            let o = one(b);
            scale(b.div(o, r))
        }
        I::Atanh => {
            let o = one(b);
            let a2 = square(b, a);
            let d = b.sub(o, a2);
            let o = one(b);
            scale(b.div(o, d))
        }
        I::Erf => {
            let c = b.float(std::f64::consts::FRAC_2_SQRT_PI, k);
            let a2 = square(b, a);
            let n = b.neg(a2);
            let e = b.call(I::Exp, vec![n]);
            scale(b.bin(BinOp::Mul, c, e))
        }
        I::Sigmoid => {
            let o = one(b);
            let m = b.sub(o, value);
            scale(b.bin(BinOp::Mul, value, m))
        }
        I::Abs => {
            // sign(a): 0 at 0.
            let zero = b.float(0.0, k);
            let pos = b.bin(BinOp::Gt, a, zero);
            let zero = b.float(0.0, k);
            let neg = b.bin(BinOp::Lt, a, zero);
            let m1 = b.float(-1.0, k);
            let inner = b.select(neg, m1, k);
            let o = one(b);
            let e = b.e(crate::hir::ExprKind::If { cond: pos, then: o, els: Some(inner) });
            scale(e)
        }
        I::Floor | I::Ceil | I::Round | I::Trunc => vec![None],
        I::Max | I::Min => {
            let (x, y) = (args[0], args[1]);
            let first = b.bin(if f == I::Max { BinOp::Ge } else { BinOp::Le }, x, y);
            let second = b.bin(if f == I::Max { BinOp::Lt } else { BinOp::Gt }, x, y);
            vec![Some(Partial::Select(first)), Some(Partial::Select(second))]
        }
        I::Atan2 => {
            let (y, x) = (args[0], args[1]);
            let x2 = square(b, x);
            let y2 = square(b, y);
            let r = b.bin(BinOp::Add, x2, y2);
            let dy = b.div(x, r);
            let ny = b.neg(y);
            let dx = b.div(ny, r);
            vec![Some(Partial::Scale(dy)), Some(Partial::Scale(dx))]
        }
        I::Powf => {
            let (x, y) = (args[0], args[1]);
            let o = one(b);
            let ym1 = b.sub(y, o);
            let p = b.call(I::Powf, vec![x, ym1]);
            let dx = b.bin(BinOp::Mul, y, p);
            let l = b.call(I::Ln, vec![x]);
            let dy = b.bin(BinOp::Mul, l, value);
            vec![Some(Partial::Scale(dx)), Some(Partial::Scale(dy))]
        }
        I::Powi => {
            let (x, n) = (args[0], args[1]);
            // A literal exponent: n x^(n-1) with n - 1 folded (2 x for a square).
            if let crate::hir::ExprKind::Lit(crate::base::ops::Lit::Int(lit, _)) = b.hir.exprs[n].kind {
                let c = b.float(lit as f64, k);
                let p = match lit - 1 {
                    0 => b.float(1.0, k),
                    1 => x,
                    m => {
                        let e = b.e(crate::hir::ExprKind::Lit(crate::base::ops::Lit::Int(m, Some(ScalarKind::I32))));
                        b.call(I::Powi, vec![x, e])
                    }
                };
                return vec![Some(Partial::Scale(b.mul(c, p))), None];
            }
            let one_i = b.e(crate::hir::ExprKind::Lit(crate::base::ops::Lit::Int(1, None)));
            let nm1 = b.sub(n, one_i);
            let p = b.call(I::Powi, vec![x, nm1]);
            let nf = b.cast(n, k);
            vec![Some(Partial::Scale(b.bin(BinOp::Mul, nf, p))), None]
        }
        I::Gcd | I::Lcm | I::Factorial | I::IntPow => vec![None; args.len()],
    }
}
