//! Built-in functions and intrinsics, and conversions to tensor types
//! (`x as [T; dims]`, `load_npy(path) as [T; dims]`).

use super::ops::ew_elem;
use crate::analysis::cx::Cx;
use crate::analysis::{dim_var, Ty};
use crate::base::dim::{Dim, Truth};
use crate::base::intrinsic::Intrinsic;
use crate::base::scalar::ScalarKind;
use crate::base::span::Span;
use crate::diag::Diagnostic;
use crate::hir::{DimAnn, ExprId, ExprKind, TyAnn};

impl<'a> Cx<'a> {
    /// `[body | clauses]`: a rank-1 tensor. Its length is the product of the
    /// generators' extents, or, with a filter, a fresh dimension known only
    /// at run time.
    /// `load_npy(path) as [T; d1, ...]`: literal extents and dimensions the
    /// function knows are checked when the file is read; other names (and
    /// `?`) take the file's extent.
    /// `x as [T; dims]` and `x as [T; *]`: a checked conversion between
    /// tensor types, converting elements to `T` as a scalar `as` does
    /// (except to dynamic rank). From `load_npy(path)` it reads the
    /// file; from a dynamic-rank tensor it checks the rank and the declared
    /// extents at run time; from a tensor of known rank it checks the
    /// declared extents that are not proven equal (and rejects the ones
    /// proven different). Extents the target leaves open (`?`, a new name)
    /// come from the value.
    pub(super) fn infer_tensor_cast(&mut self, e: ExprId, x: ExprId, ann: &TyAnn) -> Ty {
        let span = self.hir.span(e);
        let from = match &self.hir.exprs[x].kind {
            ExprKind::Builtin(crate::hir::Builtin::LoadNpy, args) => {
                let Some(&path) = args.first().filter(|_| args.len() == 1) else {
                    self.err(Diagnostic::error(self.hir.span(x), "`load_npy` takes 1 argument, the path"));
                    return Ty::Error;
                };
                let pt = self.infer(path, None);
                if !matches!(pt, Ty::Str | Ty::Error) {
                    let d = Diagnostic::error(
                        self.hir.span(path),
                        format!("the path of `load_npy` must be a string, found `{}`", self.t.show_ty(&pt)),
                    );
                    self.err(d);
                    return Ty::Error;
                }
                self.set(x, Ty::Str);
                None
            }
            _ => Some(self.infer(x, None)),
        };
        let (elem, dims) = match ann {
            TyAnn::Tensor { elem, dims, .. } => (*elem, Some(dims)),
            TyAnn::Dyn { elem, .. } => (*elem, None),
            _ => return Ty::Error,
        };
        let target = self.ann_text(ann);
        let from_dims = match &from {
            None => None,
            Some(Ty::Error) => return Ty::Error,
            Some(t @ (Ty::Tensor(k, _) | Ty::Dyn(k))) if *k != elem && dims.is_none() => {
                let d = Diagnostic::error(
                    span,
                    format!(
                        "cannot convert `{}` to `{target}`: a conversion to dynamic rank keeps the element type",
                        self.t.show_ty(t)
                    ),
                )
                .help(format!("convert the elements first: `x as [{}]`", elem.name()));
                self.err(d);
                return Ty::Error;
            }
            // Elements of another type are converted, as by a scalar `as`.
            Some(Ty::Tensor(_, ds)) => Some(ds.clone()),
            Some(Ty::Dyn(_)) => None,
            Some(t) => {
                let d = Diagnostic::error(
                    span,
                    format!("cannot convert `{}` to the tensor type `{target}`", self.t.show_ty(t)),
                )
                .note("`as` with a tensor type converts a tensor (or `load_npy(...)`) to a checked shape");
                self.err(d);
                return Ty::Error;
            }
        };
        let Some(dims) = dims else {
            // To `[T; *]`: nothing to check.
            self.t.cast_extents.insert(e, (target, Vec::new()));
            return Ty::Dyn(elem);
        };
        if let Some(fd) = &from_dims {
            if fd.len() != dims.len() {
                let d = Diagnostic::error(
                    span,
                    format!(
                        "cannot convert `{}` to `{target}`: the ranks differ ({} and {})",
                        self.t.show_ty(from.as_ref().unwrap_or(&Ty::Error)),
                        fd.len(),
                        dims.len()
                    ),
                )
                .note("a conversion checks a shape; it does not reshape")
                .help("to change the rank, define the new tensor with indices: `let y[i, j] = x[i * 3 + j]`");
                self.err(d);
                return Ty::Error;
            }
        }
        let mut shape = Vec::new();
        let mut checks = Vec::new();
        for (axis, d) in dims.iter().enumerate() {
            let known = match d {
                DimAnn::Lit(..) | DimAnn::Bin(..) => self.dim_ann(d),
                DimAnn::Sym(def, _) if self.bound_dims.contains(&dim_var(*def)) => self.dim_ann(d),
                _ => None,
            };
            let have = from_dims.as_ref().map(|fd| fd[axis].clone());
            match (known, have) {
                (Some(k), Some(h)) => match k.prove_eq(&h) {
                    Truth::True => {
                        shape.push(h);
                        checks.push(None);
                    }
                    Truth::False => {
                        let d = Diagnostic::error(
                            d.span(),
                            format!(
                                "cannot convert to `{target}`: axis {axis} has length `{}`, not `{}`",
                                self.t.show_dim(&h),
                                self.t.show_dim(&k)
                            ),
                        );
                        self.err(d);
                        return Ty::Error;
                    }
                    Truth::Unknown => {
                        shape.push(k.clone());
                        checks.push(Some(k));
                    }
                },
                (Some(k), None) => {
                    shape.push(k.clone());
                    checks.push(Some(k));
                }
                (None, Some(h)) => {
                    shape.push(h);
                    checks.push(None);
                }
                (None, None) => {
                    let v = self.fresh_hidden();
                    let name = match d {
                        DimAnn::Sym(def, _) => self.name(*def).to_string(),
                        _ => "?".to_string(),
                    };
                    self.t.dim_names.insert(v, name);
                    shape.push(Dim::var(v));
                    checks.push(None);
                }
            }
        }
        self.t.cast_extents.insert(e, (target, checks));
        Ty::Tensor(elem, shape)
    }

    /// A tensor type annotation as the user wrote it (`[f32; N, 3]`).
    fn ann_text(&mut self, ann: &TyAnn) -> String {
        match ann {
            TyAnn::Dyn { elem, .. } => format!("[{}; *]", elem.name()),
            TyAnn::Tensor { elem, dims, .. } => {
                let dims: Vec<String> = dims.iter().map(|d| self.dim_ann_text(d)).collect();
                format!("[{}; {}]", elem.name(), dims.join(", "))
            }
            other => {
                let t = self.ann_to_ty(other);
                self.t.show_ty(&t)
            }
        }
    }

    fn dim_ann_text(&self, d: &DimAnn) -> String {
        match d {
            DimAnn::Lit(v, _) => v.to_string(),
            DimAnn::Sym(def, _) => self.name(*def).to_string(),
            DimAnn::Unknown(_) => "?".to_string(),
            DimAnn::Bin(op, l, r, _) => format!("{} {} {}", self.dim_ann_text(l), op.symbol(), self.dim_ann_text(r)),
        }
    }

    pub(super) fn infer_builtin(&mut self, e: ExprId, b: crate::hir::Builtin, args: &[ExprId]) -> Ty {
        use crate::hir::Builtin;
        let span = self.hir.span(e);
        let arity_ok = match b {
            Builtin::Print => true,
            Builtin::Assert => matches!(args.len(), 1 | 2),
            Builtin::Len | Builtin::Shape | Builtin::LoadNpy | Builtin::TypeOf => args.len() == 1,
            Builtin::SaveNpy | Builtin::Reshape(_) => args.len() == 2,
            Builtin::Fs(op) => args.len() == op.params().len(),
        };
        if !arity_ok {
            let want = match b {
                Builtin::Assert => "1 or 2 arguments (a condition and a message)",
                Builtin::SaveNpy => "2 arguments (a path and a tensor)",
                Builtin::Reshape(_) => "2 arguments (a tensor and an integer vector)",
                Builtin::Fs(op) => match op.params() {
                    [] => "no arguments",
                    [crate::base::intrinsic::FsValue::Strs] => "1 argument (a vector of strings)",
                    [_] => "1 argument (a string)",
                    _ => "2 arguments (two strings)",
                },
                _ => "1 argument",
            };
            self.err(Diagnostic::error(
                span,
                format!(
                    "`{}` takes {want}, but {} {} supplied",
                    b.name(),
                    args.len(),
                    if args.len() == 1 { "was" } else { "were" }
                ),
            ));
            return Ty::Error;
        }
        match b {
            Builtin::Print => {
                for a in args {
                    self.infer(*a, None);
                }
                Ty::unit()
            }
            Builtin::Assert => {
                let c = self.infer(args[0], Some(ScalarKind::Bool));
                // As in the seed, a tensor of conditions asserts them all.
                if !matches!(c, Ty::Tensor(ScalarKind::Bool, _)) {
                    self.expect_bool(args[0], &c, "the condition of `assert`");
                }
                if let Some(m) = args.get(1) {
                    let t = self.infer(*m, None);
                    if !matches!(t, Ty::Str | Ty::Error) {
                        let d = Diagnostic::error(
                            self.hir.span(*m),
                            format!("the message of `assert` must be a string, found `{}`", self.t.show_ty(&t)),
                        );
                        self.err(d);
                    }
                }
                Ty::unit()
            }
            Builtin::LoadNpy => {
                self.infer(args[0], None);
                let d = Diagnostic::error(span, "`load_npy` needs the type of what it reads")
                    .help("give it with `as`: `load_npy(path) as [f32; 8, 5]`");
                self.err(d);
                Ty::Error
            }
            Builtin::SaveNpy => {
                let p = self.infer(args[0], None);
                let x = self.infer(args[1], None);
                if !matches!(p, Ty::Str | Ty::Error) {
                    let d = Diagnostic::error(
                        self.hir.span(args[0]),
                        format!("the path of `save_npy` must be a string, found `{}`", self.t.show_ty(&p)),
                    );
                    self.err(d);
                }
                if !matches!(x, Ty::Tensor(..) | Ty::Error) {
                    let d = Diagnostic::error(
                        self.hir.span(args[1]),
                        format!("`save_npy` writes a tensor, found `{}`", self.t.show_ty(&x)),
                    );
                    self.err(d);
                }
                Ty::unit()
            }
            Builtin::TypeOf => {
                self.infer(args[0], None);
                Ty::Str
            }
            Builtin::Fs(op) => {
                use crate::base::intrinsic::FsValue;
                for (a, want) in args.iter().zip(op.params()) {
                    let t = self.infer(*a, None);
                    let fits = match want {
                        FsValue::Strs => matches!(t, Ty::Strs(_) | Ty::Error),
                        _ => matches!(t, Ty::Str | Ty::Error),
                    };
                    if !fits {
                        let what = if *want == FsValue::Strs { "a vector of strings" } else { "a string" };
                        let d = Diagnostic::error(
                            self.hir.span(*a),
                            format!("`{}` takes {what}, found `{}`", op.name(), self.t.show_ty(&t)),
                        );
                        self.err(d);
                    }
                }
                match op.result() {
                    FsValue::Str => Ty::Str,
                    FsValue::Bool => Ty::BOOL,
                    FsValue::I64 => Ty::I64,
                    FsValue::StrPair => Ty::Tuple(vec![Ty::Str, Ty::Str]),
                    FsValue::Strs => Ty::Strs(self.run_time_dim()),
                }
            }
            Builtin::Reshape(op) => {
                let x = self.infer(args[0], None);
                let v = self.infer(args[1], Some(ScalarKind::I64));
                let k = match x {
                    Ty::Error => return Ty::Error,
                    Ty::Tensor(k, _) | Ty::Dyn(k) => k,
                    other => {
                        let d = Diagnostic::error(
                            self.hir.span(args[0]),
                            format!("`{}` takes a tensor, found `{}`", op.name(), self.t.show_ty(&other)),
                        );
                        self.err(d);
                        return Ty::Error;
                    }
                };
                match v {
                    Ty::Error => Ty::Error,
                    Ty::Tensor(i, dims) if i.is_int() && dims.len() == 1 => Ty::Dyn(k),
                    other => {
                        let d = Diagnostic::error(
                            self.hir.span(args[1]),
                            format!("`{}` takes an integer vector, found `{}`", op.name(), self.t.show_ty(&other)),
                        );
                        self.err(d);
                        Ty::Error
                    }
                }
            }
            Builtin::Len | Builtin::Shape => {
                let t = self.infer(args[0], None);
                match t {
                    Ty::Error => Ty::Error,
                    Ty::Tensor(_, dims) if b == Builtin::Len && !dims.is_empty() => Ty::I64,
                    Ty::Tensor(_, dims) if b == Builtin::Shape => {
                        Ty::Tensor(ScalarKind::I64, vec![Dim::constant(dims.len() as i64)])
                    }
                    // A dynamic-rank tensor's axes are read at run time (`len`
                    // of a rank-0 value is an error then); a jagged array's
                    // length is its number of rows.
                    // A string's length is its number of characters.
                    Ty::Dyn(_) | Ty::Jagged(_) | Ty::Str | Ty::Strs(_) if b == Builtin::Len => Ty::I64,
                    Ty::Dyn(_) => Ty::Tensor(ScalarKind::I64, vec![self.run_time_dim()]),
                    other => {
                        let d = Diagnostic::error(
                            self.hir.span(args[0]),
                            format!("`{}` takes a tensor, found `{}`", b.name(), self.t.show_ty(&other)),
                        );
                        self.err(d);
                        Ty::Error
                    }
                }
            }
        }
    }

    pub(super) fn infer_intrinsic(
        &mut self,
        e: ExprId,
        i: Intrinsic,
        callee_span: Span,
        args: &[ExprId],
        expect: Option<ScalarKind>,
    ) -> Ty {
        use crate::base::intrinsic::Signature;
        let span = self.hir.span(e);
        let sig = i.signature();
        let arity = i.arity();
        let name = if i == Intrinsic::Powf { "pow" } else { i.name() };
        if args.len() != arity {
            let d = Diagnostic::arity(span, arity, args.len())
                .label(callee_span, format!("`std::math::{name}` takes {arity}"));
            self.err(d);
            args.iter().for_each(|a| {
                self.infer(*a, None);
            });
            return Ty::Error;
        }
        let accepts = |k: ScalarKind| match sig {
            Signature::FloatUnary | Signature::FloatBinary => k.is_float(),
            Signature::SignedUnary => k.is_signed(),
            Signature::NumUnary | Signature::NumBinary | Signature::Pow => k != ScalarKind::Bool,
            Signature::IntUnary | Signature::IntBinary => k.is_int(),
        };
        let wanted = match sig {
            Signature::FloatUnary | Signature::FloatBinary => "a float",
            Signature::SignedUnary => "a signed number",
            Signature::IntUnary | Signature::IntBinary => "an integer",
            _ => "a number",
        };
        let expect = expect.filter(|k| accepts(*k));
        if arity == 2 {
            let (a, b) = (args[0], args[1]);
            let (ta, tb) = if self.flexible(a) && !self.flexible(b) {
                let tb = self.infer(b, expect);
                (self.infer(a, ew_elem(&tb)), tb)
            } else {
                let ta = self.infer(a, expect);
                (ta.clone(), self.infer(b, ew_elem(&ta)))
            };
            if ta.is_error() || tb.is_error() {
                return Ty::Error;
            }
            if sig == Signature::Pow {
                return self.infer_pow(e, &ta, &tb);
            }
            let (Some(ka), Some(kb)) = (ew_elem(&ta), ew_elem(&tb)) else {
                self.err(Diagnostic::error(span, format!("`{name}` takes numbers")));
                return Ty::Error;
            };
            if ka != kb || !accepts(ka) {
                let d = Diagnostic::error(
                    span,
                    format!("mismatched types: `{name}` of `{}` and `{}`", ka.name(), kb.name()),
                )
                .help(format!("both arguments must be {wanted} of the same type"));
                self.err(d);
                return Ty::Error;
            }
            return match self.broadcast(span, &ta, &tb) {
                Some(shape) => shape.ty(ka),
                None => Ty::Error,
            };
        }
        let t = self.infer(args[0], expect);
        let Some(k) = ew_elem(&t) else {
            if !t.is_error() {
                self.err(Diagnostic::error(span, format!("`{name}` takes a number, found `{}`", self.t.show_ty(&t))));
            }
            return Ty::Error;
        };
        if !accepts(k) {
            let d = Diagnostic::error(self.hir.span(args[0]), format!("`{name}` takes {wanted}, found `{}`", k.name()));
            let d = if k.is_int() && sig == Signature::FloatUnary {
                d.help(format!("convert it first: `{name}(x as f32)`"))
            } else {
                d
            };
            self.err(d);
            return Ty::Error;
        }
        t
    }
}
