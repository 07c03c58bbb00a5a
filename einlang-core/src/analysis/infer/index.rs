//! Indexing and reductions, which record the tensor reads that ranges are
//! inferred from, and integer expressions as symbolic dimensions.

use crate::analysis::cx::{Cx, Read};
use crate::analysis::{dim_var, Ty, HIDDEN_DIM_BASE};
use crate::base::dim::{Dim, Truth};
use crate::base::ops::{BinOp, Lit, RedOp, UnOp};
use crate::base::scalar::ScalarKind;
use crate::diag::Diagnostic;
use crate::hir::{DefId, DefKind, ExprId, ExprKind, Where};

impl<'a> Cx<'a> {
    /// The extent of axis `axis` of the tensor `x` (for `len`, `shape`).
    fn axis_dim(&self, x: ExprId, axis: usize) -> Option<Dim> {
        match self.t.ty(x) {
            // An extent known only at run time is a dimension only for a
            // named value (bound when the value is); of a computed value
            // (`len(j[i])`) it is evaluated as a run-time bound instead.
            Ty::Tensor(_, dims) => dims.get(axis).cloned().filter(|d| {
                matches!(self.hir.exprs[x].kind, ExprKind::Def(_)) || d.vars().iter().all(|v| v.0 < HIDDEN_DIM_BASE)
            }),
            _ => None,
        }
    }

    pub(super) fn infer_index(&mut self, e: ExprId, base: ExprId, args: &[ExprId]) -> Ty {
        let span = self.hir.span(e);
        let bt = self.infer(base, None);
        let arg_tys: Vec<Ty> = args.iter().map(|a| self.infer(*a, Some(ScalarKind::I64))).collect();
        if bt.is_error() || arg_tys.iter().any(|t| t.is_error()) {
            return Ty::Error;
        }
        if let Some((x, axis)) = self.hir.shape_index(base, args) {
            let has_axis = matches!(self.t.ty(x), Ty::Tensor(_, dims) if axis < dims.len());
            if has_axis || matches!(self.t.ty(x), Ty::Dyn(_)) {
                return Ty::I64;
            }
            let d = Diagnostic::error(
                span,
                format!("axis {axis} is out of range for `shape` of a `{}`", self.t.show_ty(self.t.ty(x))),
            );
            self.err(d);
            return Ty::Error;
        }
        let ExprKind::Def(tensor_def) = self.hir.exprs[base].kind else {
            // Resolution binds a computed base to a temporary (see
            // `resolve::computed`).
            self.err(Diagnostic::bug(self.hir.span(base), "indexing of a computed value reached analysis"));
            return Ty::Error;
        };
        let tensor = self.name(tensor_def).to_string();
        if bt == Ty::Str {
            // One character, as a string (the seed's `s[i]`).
            if args.len() != 1 || arg_tys[0].scalar().is_none_or(|k| !k.is_int()) {
                self.err(Diagnostic::error(
                    span,
                    format!("a character of string `{tensor}` is taken with one integer index"),
                ));
                return Ty::Error;
            }
            return Ty::Str;
        }
        if let Ty::Jagged(k) = bt {
            // One row, as a vector whose length only the row knows; with a
            // second index (`j[i][k]`, `j[i, k]`), one element of it.
            if args.len() > 2 || arg_tys.iter().any(|t| t.scalar().is_none_or(|k| !k.is_int())) {
                let d = Diagnostic::error(
                    span,
                    format!("a row of jagged array `{tensor}` is taken with one integer index"),
                )
                .help(format!("index the row with a second one: `{tensor}[i][j]`"));
                self.err(d);
                return Ty::Error;
            }
            if args.len() == 2 {
                return Ty::Scalar(k);
            }
            return Ty::Tensor(k, vec![self.run_time_dim()]);
        }
        // A vector of strings reads like a vector (its reads bound index
        // ranges), and gives a string.
        let strs = matches!(bt, Ty::Strs(_));
        let bt = match bt {
            Ty::Strs(d) => Ty::Tensor(ScalarKind::U8, vec![d]),
            other => other,
        };
        let Ty::Tensor(k, dims) = bt else {
            let d = match bt {
                Ty::Dyn(k) => Diagnostic::error(
                    span,
                    format!("`{tensor}` has dynamic rank (`[{}; *]`), so it cannot be indexed", k.name()),
                )
                .help(format!("convert it to a rank first: `let m = {tensor} as [{}; N, M];`", k.name())),
                _ => Diagnostic::error(
                    span,
                    format!("`{tensor}` is not a tensor; it has type `{}`", self.t.show_ty(&bt)),
                ),
            };
            self.err(d);
            return Ty::Error;
        };
        for (a, t) in args.iter().zip(&arg_tys) {
            if !t.scalar().is_some_and(|k| k.is_int()) {
                let d = Diagnostic::error(
                    self.hir.span(*a),
                    format!("an index must be an integer, found `{}`", self.t.show_ty(t)),
                );
                self.err(d);
                return Ty::Error;
            }
        }
        if args.len() > dims.len() {
            let d = Diagnostic::error(
                span,
                format!("rank mismatch: `{tensor}` has rank {} but is indexed with {} indices", dims.len(), args.len()),
            )
            .label(
                self.hir.defs[tensor_def].span,
                format!("`{tensor}` has type `{}`", self.t.show_ty(&Ty::Tensor(k, dims.clone()))),
            )
            .help(match dims.len() {
                0 => format!("`{tensor}` is a scalar: use it without indices"),
                1 => format!("index `{tensor}` with one index, or declare it with {} axes", args.len()),
                n => format!("index `{tensor}` with at most {n} indices, or declare it with {} axes", args.len()),
            });
            self.err(d);
            return Ty::Error;
        }
        let axes = args.iter().zip(&dims).map(|(a, d)| (d.clone(), self.to_dim(*a), *a)).collect();
        let read = Read {
            expr: e,
            tensor,
            span,
            axes,
            conditional: self.cond_depth > 0,
            narrow: self.narrow.clone(),
            partial: args.len() < dims.len(),
            own: self.recs.iter().any(|r| r.def == tensor_def).then_some(tensor_def),
        };
        if let Some(u) = self.units.last_mut() {
            u.reads.push(read);
        }
        if strs {
            Ty::Str
        } else if args.len() == dims.len() {
            Ty::Scalar(k)
        } else {
            Ty::Tensor(k, dims[args.len()..].to_vec())
        }
    }

    pub(super) fn infer_reduce(
        &mut self,
        e: ExprId,
        op: RedOp,
        vars: &[crate::hir::RedVar],
        wheres: &[Where],
        body: ExprId,
        expect: Option<ScalarKind>,
    ) -> Ty {
        let span = self.hir.span(e);
        for v in vars {
            self.env.insert(v.def, Ty::I64);
            self.t.def_ty.insert(v.def, Ty::I64);
            let range = v.range.as_ref().and_then(|r| self.explicit_range(r, true));
            if let Some(u) = self.units.last_mut() {
                u.vars.push(v.def);
                if let Some(r) = range {
                    u.explicit.insert(v.def, r);
                }
            }
        }
        let guarded = self.infer_wheres(wheres);
        if guarded {
            self.cond_depth += 1;
        }
        let body_expect = match op {
            RedOp::All | RedOp::Any => Some(ScalarKind::Bool),
            RedOp::ArgMax | RedOp::ArgMin => None,
            _ => expect,
        };
        let bt = self.infer(body, body_expect);
        if guarded {
            self.cond_depth -= 1;
        }
        self.pop_narrowings(wheres);
        let k = match bt {
            Ty::Error => return Ty::Error,
            Ty::Scalar(k) => k,
            other => {
                let d = Diagnostic::error(
                    self.hir.span(body),
                    format!("the body of `{}` must be a scalar, found `{}`", op.name(), self.t.show_ty(&other)),
                )
                .help("index the tensor inside the reduction");
                self.err(d);
                return Ty::Error;
            }
        };
        match op {
            RedOp::All | RedOp::Any if k != ScalarKind::Bool => {
                self.err(Diagnostic::error(span, format!("`{}` needs a `bool` body, found `{}`", op.name(), k.name())));
                Ty::Error
            }
            RedOp::Sum | RedOp::Prod | RedOp::Max | RedOp::Min | RedOp::ArgMax | RedOp::ArgMin
                if k == ScalarKind::Bool =>
            {
                self.err(Diagnostic::error(span, format!("`{}` needs a numeric body, found `bool`", op.name())));
                Ty::Error
            }
            RedOp::ArgMax | RedOp::ArgMin => Ty::I64,
            _ => Ty::Scalar(k),
        }
    }

    /// The value of an integer expression as a `Dim`, when it is a function
    /// of dimension symbols, `i64` parameters, index variables and literals.
    pub(crate) fn to_dim(&self, e: ExprId) -> Option<Dim> {
        match &self.hir.exprs[e].kind {
            ExprKind::Lit(Lit::Int(v, _)) => i64::try_from(*v).ok().map(Dim::constant),
            ExprKind::Def(d) => match self.hir.defs[*d].kind {
                DefKind::Dim | DefKind::Index => Some(Dim::var(dim_var(*d))),
                DefKind::Param if self.t.def_ty.get(d) == Some(&Ty::I64) => Some(Dim::var(dim_var(*d))),
                DefKind::WhereBind => self.where_value(*d).and_then(|v| self.to_dim(v)),
                DefKind::Local => self.let_values.get(d).and_then(|v| self.to_dim(*v)),
                _ => None,
            },
            ExprKind::Unary(UnOp::Neg, x) => self.to_dim(*x).map(|d| d.neg()),
            ExprKind::Binary(op, a, b) => {
                let (a, b) = (self.to_dim(*a)?, self.to_dim(*b)?);
                match op {
                    BinOp::Add => Some(a.add(&b)),
                    BinOp::Sub => Some(a.sub(&b)),
                    BinOp::Mul => Some(a.mul(&b)),
                    // Integer division truncates; it equals floor division
                    // only for a non-negative numerator and positive divisor.
                    BinOp::Div
                        if self.proven_nonneg(&a) == Truth::True
                            && self.proven_nonneg(&b.add_const(-1)) == Truth::True =>
                    {
                        a.floor_div(&b)
                    }
                    _ => None,
                }
            }
            ExprKind::Cast(x, ScalarKind::I64) => self.to_dim(*x),
            ExprKind::Builtin(crate::hir::Builtin::Len, args) => self.axis_dim(*args.first()?, 0),
            ExprKind::Index { base, args } => {
                let (x, axis) = self.hir.shape_index(*base, args)?;
                self.axis_dim(x, axis)
            }
            ExprKind::Block(b) if b.stmts.is_empty() => b.tail.and_then(|t| self.to_dim(t)),
            _ => None,
        }
    }

    fn where_value(&self, def: DefId) -> Option<ExprId> {
        self.where_values.get(&def).copied()
    }
}
