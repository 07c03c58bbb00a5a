//! Type inference of expressions: the `infer` dispatcher over expression
//! kinds and the typing of literals. The larger kinds are inferred in the
//! submodules.

mod builtin;
mod call;
mod compound;
mod deriv;
mod index;
mod literal;
mod ops;

pub(super) use self::compound::same_kind_and_rank;
use self::compound::Join;
use self::literal::is_float_lit;
use super::cx::Cx;
use super::Ty;
use crate::base::ops::{Lit, UnOp};
use crate::base::scalar::{int_fits, ScalarKind};
use crate::diag::Diagnostic;
use crate::hir::{DefKind, ExprId, ExprKind};

impl<'a> Cx<'a> {
    pub(super) fn infer(&mut self, e: ExprId, expect: Option<ScalarKind>) -> Ty {
        let span = self.hir.span(e);
        let t = match &self.hir.exprs[e].kind {
            ExprKind::Error => Ty::Error,
            ExprKind::Differential(_) => {
                self.err(Diagnostic::bug(span, "a differential outside a derivative rule"));
                Ty::Error
            }
            ExprKind::Deriv { target, wrt } => {
                let (target, wrt) = (*target, *wrt);
                self.infer_deriv(e, target, wrt)
            }
            ExprKind::Rest(_) => {
                self.err(Diagnostic::bug(span, "a rest index reached analysis"));
                Ty::Error
            }
            ExprKind::Lit(lit) => self.infer_lit(e, lit, expect),
            ExprKind::Def(d) => match self.env.get(d) {
                Some(t) => t.clone(),
                None => match self.hir.defs[*d].kind {
                    DefKind::Dim => Ty::I64,
                    _ => {
                        let name = self.name(*d).to_string();
                        self.err(Diagnostic::bug(span, format!("`{name}` has no type")));
                        Ty::Error
                    }
                },
            },
            ExprKind::Unary(op, x) => {
                let t = self.infer(*x, expect);
                match (op, &t) {
                    (_, Ty::Error) => Ty::Error,
                    (UnOp::Neg, Ty::Scalar(k) | Ty::Tensor(k, _) | Ty::Dyn(k))
                        if *k != ScalarKind::Bool && k.is_signed() =>
                    {
                        t.clone()
                    }
                    (
                        UnOp::Not,
                        Ty::Scalar(ScalarKind::Bool) | Ty::Tensor(ScalarKind::Bool, _) | Ty::Dyn(ScalarKind::Bool),
                    ) => t.clone(),
                    _ => {
                        let sym = if *op == UnOp::Neg { "-" } else { "!" };
                        self.err(Diagnostic::error(
                            span,
                            format!("cannot apply unary `{sym}` to `{}`", self.t.show_ty(&t)),
                        ));
                        Ty::Error
                    }
                }
            }
            ExprKind::Binary(op, a, b) => self.infer_binary(e, *op, *a, *b, expect),
            ExprKind::Cast(x, k) => {
                // `3.14159265358979 as f64`: a literal of the same kind as
                // the target takes the target type, as in Rust.
                let same_class = |lit_float: bool| lit_float == k.is_float() && *k != ScalarKind::Bool;
                let hint = if self.flexible(*x) && same_class(is_float_lit(self.hir, *x)) { Some(*k) } else { None };
                let t = self.infer(*x, hint);
                match t {
                    Ty::Error => Ty::Error,
                    Ty::Scalar(_) => Ty::Scalar(*k),
                    Ty::Tensor(_, dims) => Ty::Tensor(*k, dims),
                    Ty::Dyn(_) => Ty::Dyn(*k),
                    other => {
                        self.err(Diagnostic::error(
                            span,
                            format!("cannot cast `{}` to `{}`", self.t.show_ty(&other), k.name()),
                        ));
                        Ty::Error
                    }
                }
            }
            ExprKind::Call { callee, callee_span, args } => {
                let (callee, callee_span, args) = (callee.clone(), *callee_span, args.clone());
                self.infer_call(e, &callee, callee_span, &args, expect)
            }
            ExprKind::Index { base, args } => {
                let (base, args) = (*base, args.clone());
                self.infer_index(e, base, &args)
            }
            ExprKind::Field(x, i) => {
                let t = self.infer(*x, None);
                match t {
                    Ty::Error => Ty::Error,
                    Ty::Tuple(items) if (*i as usize) < items.len() => items[*i as usize].clone(),
                    other => {
                        self.err(Diagnostic::error(
                            span,
                            format!("no field `{i}` on a value of type `{}`", self.t.show_ty(&other)),
                        ));
                        Ty::Error
                    }
                }
            }
            ExprKind::Reduce { op, vars, wheres, body } => {
                let (op, vars, wheres, body) = (*op, vars.clone(), wheres.clone(), *body);
                self.infer_reduce(e, op, &vars, &wheres, body, expect)
            }
            ExprKind::If { cond, then, els } => {
                let (cond, then, els) = (*cond, *then, *els);
                let ct = self.infer(cond, Some(ScalarKind::Bool));
                self.expect_bool(cond, &ct, "the condition of `if`");
                let ns = self.narrowings_of(cond);
                let n = ns.len();
                self.narrow.extend(ns);
                self.cond_depth += 1;
                let tt = self.infer(then, expect);
                let keep = self.narrow.len() - n;
                self.narrow.truncate(keep);
                let et = match els {
                    Some(x) => {
                        let ex = if self.flexible_tail(then) { expect } else { tt.elem().or(expect) };
                        // The `else` knows the condition failed: `if i == 0
                        // { .. } else { x[i - 1] }` reads inside.
                        let ns = self.negated_narrowings_of(cond);
                        let n = ns.len();
                        self.narrow.extend(ns);
                        let et = self.infer(x, ex);
                        let keep = self.narrow.len() - n;
                        self.narrow.truncate(keep);
                        et
                    }
                    None => {
                        self.err(
                            Diagnostic::error(span, "an `if` without `else` has no value").help("add an `else` branch"),
                        );
                        Ty::Error
                    }
                };
                self.cond_depth -= 1;
                // A flexible literal in the first branch takes the second's type.
                let tt = if self.flexible_tail(then) && !et.is_error() {
                    self.retype_literal_tail(then, &et).unwrap_or(tt)
                } else {
                    tt
                };
                match (&tt, &et) {
                    // A recursive call whose type is not known yet: the
                    // other branch (the base case) gives the type.
                    (Ty::Error, Ty::Error) => Ty::Error,
                    (Ty::Error, t) | (t, Ty::Error) if !self.recursing.is_empty() => t.clone(),
                    (Ty::Error, _) | (_, Ty::Error) => Ty::Error,
                    _ => match self.join_branches(&tt, &et) {
                        Ok(t) => t,
                        Err(Join::Differ) => {
                            let d = Diagnostic::error(
                                span,
                                format!(
                                    "`if` and `else` give tensors of shapes `{}` and `{}`, which differ",
                                    self.t.show_ty(&tt),
                                    self.t.show_ty(&et)
                                ),
                            )
                            .note("the value of an `if` must have one shape whichever branch runs");
                            self.err(d);
                            Ty::Error
                        }
                        Err(Join::Mismatch) => {
                            let d = Diagnostic::error(
                                span,
                                format!(
                                    "`if` and `else` have different types: `{}` and `{}`",
                                    self.t.show_ty(&tt),
                                    self.t.show_ty(&et)
                                ),
                            );
                            self.err(d);
                            Ty::Error
                        }
                    },
                }
            }
            ExprKind::Block(b) => {
                let b = b.clone();
                self.infer_block_stmts(&b.stmts);
                match b.tail {
                    Some(t) => self.infer(t, expect),
                    None => Ty::unit(),
                }
            }
            ExprKind::Array(items) => {
                let items = items.clone();
                self.infer_array(e, &items, expect)
            }
            ExprKind::Jagged(rows) => {
                let rows = rows.clone();
                self.infer_jagged(e, &rows, expect)
            }
            ExprKind::Interp(parts) => {
                let parts = parts.clone();
                for p in parts {
                    if let crate::hir::InterpPart::Value(x, _) = p {
                        self.infer(x, None);
                    }
                }
                Ty::Str
            }
            ExprKind::Builtin(b, args) => {
                let (b, args) = (*b, args.clone());
                self.infer_builtin(e, b, &args)
            }
            ExprKind::Match { scrutinee, arms } => {
                let (scrutinee, arms) = (*scrutinee, arms.clone());
                self.infer_match(e, scrutinee, &arms, expect)
            }
            ExprKind::Comprehension { body, clauses, rows } => {
                let (body, clauses, rows) = (*body, clauses.clone(), *rows);
                self.infer_comprehension(body, &clauses, rows, expect)
            }
            ExprKind::TensorCast(x, ann) => {
                let (x, ann) = (*x, ann.clone());
                self.infer_tensor_cast(e, x, &ann)
            }
            ExprKind::Tuple(items) => {
                let items = items.clone();
                let tys: Vec<Ty> = items.iter().map(|x| self.infer(*x, None)).collect();
                if tys.iter().any(|t| t.is_error()) {
                    Ty::Error
                } else {
                    Ty::Tuple(tys)
                }
            }
        };
        self.set(e, t)
    }

    fn infer_lit(&mut self, e: ExprId, lit: &Lit, expect: Option<ScalarKind>) -> Ty {
        let span = self.hir.span(e);
        match lit {
            Lit::Bool(_) => Ty::BOOL,
            Lit::Str(_) => Ty::Str,
            Lit::Int(v, suffix) => {
                let k = match (suffix, expect) {
                    (Some(k), _) => *k,
                    // An unsuffixed integer literal in a float context is
                    // that float (`x * 2`, `let w: f32 = 1;`).
                    (None, Some(k)) if k.is_int() || k.is_float() => k,
                    _ => ScalarKind::I32,
                };
                if !literal_fits(*v, k) {
                    self.err(Diagnostic::error(span, format!("literal `{v}` does not fit in `{}`", k.name())));
                    return Ty::Error;
                }
                Ty::Scalar(k)
            }
            Lit::Float(_, suffix) => {
                let k = match (suffix, expect) {
                    (Some(k), _) => *k,
                    (None, Some(k)) if k.is_float() => k,
                    (None, Some(k)) if k.is_int() || k == ScalarKind::Bool => {
                        let mut d = Diagnostic::error(
                            span,
                            format!("mismatched types: expected `{}`, found a float literal", k.name()),
                        )
                        .note("a float literal never becomes an integer");
                        if k.is_int() {
                            d = d.help("convert the integer side to a float, for example `(...) as f32`");
                        }
                        self.err(d);
                        return Ty::Error;
                    }
                    _ => ScalarKind::F32,
                };
                Ty::Scalar(k)
            }
        }
    }
}

/// Whether the literal `v` is a value of type `k`: a literal is unsigned in
/// the source (`-128i8` is `-(128)`), so the magnitude of the most negative
/// value is allowed too. Always true for float and `bool` types.
fn literal_fits(v: i128, k: ScalarKind) -> bool {
    !k.is_int() || int_fits(v, k) || (v > 0 && int_fits(-v, k))
}
