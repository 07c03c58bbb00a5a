//! Compound values: comprehensions, `match` (patterns, exhaustiveness and
//! the join of branches), array literals and jagged arrays.

use super::literal_fits;
use crate::analysis::cx::Cx;
use crate::analysis::{dim_var, Ty, HIDDEN_DIM_BASE};
use crate::base::dim::{Dim, DimVar, Truth};
use crate::base::ops::Lit;
use crate::base::scalar::ScalarKind;
use crate::base::span::Span;
use crate::diag::Diagnostic;
use crate::hir::ExprId;

impl<'a> Cx<'a> {
    pub(super) fn infer_comprehension(
        &mut self,
        body: ExprId,
        clauses: &[crate::hir::CompClause],
        rows: bool,
        expect: Option<ScalarKind>,
    ) -> Ty {
        use crate::hir::CompClause;
        let mut len = Dim::one();
        let mut filtered = false;
        let mut failed = false;
        for c in clauses {
            match c {
                CompClause::Range { def, range } => {
                    self.env.insert(*def, Ty::I64);
                    self.t.def_ty.insert(*def, Ty::I64);
                    match self.explicit_range(range, false) {
                        Some(r) => {
                            // A range that ends before it starts is empty.
                            let n = r.end.sub(&r.start);
                            let n = if n.as_constant().is_some_and(|c| c < 0) { Dim::zero() } else { n };
                            len = len.mul(&n);
                            self.t.ranges.insert(*def, r);
                        }
                        None => failed = true,
                    }
                }
                CompClause::Each { def, over } => {
                    if let Some(o) = self.origin(*over) {
                        self.literal_origin.insert(*def, o);
                    }
                    let t = self.infer(*over, None);
                    let elem = match &t {
                        Ty::Tensor(k, dims) if !dims.is_empty() => {
                            len = len.mul(&dims[0]);
                            if dims.len() == 1 {
                                Ty::Scalar(*k)
                            } else {
                                Ty::Tensor(*k, dims[1..].to_vec())
                            }
                        }
                        // The rows of a jagged array: vectors whose length
                        // only each row knows.
                        Ty::Jagged(k) => {
                            let (n, r) = (self.fresh_hidden(), self.fresh_hidden());
                            self.t.dim_names.insert(n, "?".to_string());
                            self.t.dim_names.insert(r, "?".to_string());
                            len = len.mul(&Dim::var(n));
                            Ty::Tensor(*k, vec![Dim::var(r)])
                        }
                        Ty::Strs(d) => {
                            len = len.mul(d);
                            Ty::Str
                        }
                        Ty::Error => Ty::Error,
                        other => {
                            let d = Diagnostic::error(
                                self.hir.span(*over),
                                format!(
                                    "a comprehension iterates over a tensor, a jagged array or a range, found `{}`",
                                    self.t.show_ty(other)
                                ),
                            );
                            self.err(d);
                            Ty::Error
                        }
                    };
                    failed |= elem.is_error();
                    self.env.insert(*def, elem.clone());
                    self.t.def_ty.insert(*def, elem);
                }
                CompClause::Filter(f) => {
                    filtered = true;
                    let ft = self.infer(*f, Some(ScalarKind::Bool));
                    self.expect_bool(*f, &ft, "a comprehension filter");
                }
            }
        }
        if filtered {
            self.cond_depth += 1;
        }
        let bt = self.infer(body, expect);
        if filtered {
            self.cond_depth -= 1;
        }
        if failed || bt.is_error() {
            return Ty::Error;
        }
        // Tensor elements stack along a new first axis when every element
        // has one shape: extents that are constants or dimensions of the
        // function, not of the generators or known only per element.
        let generators: Vec<DimVar> = clauses
            .iter()
            .filter_map(|c| match c {
                CompClause::Range { def, .. } | CompClause::Each { def, .. } => Some(dim_var(*def)),
                CompClause::Filter(_) => None,
            })
            .collect();
        if rows {
            // `jagged[row | ...]`: vectors of any lengths are the rows.
            return match bt {
                Ty::Tensor(k, dims) if dims.len() == 1 => Ty::Jagged(k),
                other => {
                    let d = Diagnostic::error(
                        self.hir.span(body),
                        format!("a row of a jagged array must be a vector, found `{}`", self.t.show_ty(&other)),
                    )
                    .note("`jagged[row | ...]` collects vectors of any lengths");
                    self.err(d);
                    Ty::Error
                }
            };
        }
        if bt == Ty::Str {
            // Strings collect into a vector of strings.
            if filtered {
                let v = self.fresh_hidden();
                self.t.dim_names.insert(v, "len".to_string());
                len = Dim::var(v);
            }
            return Ty::Strs(len);
        }
        let (k, elem_dims) = match bt {
            Ty::Scalar(k) => (k, Vec::new()),
            Ty::Tensor(k, dims)
                if dims.iter().all(|d| d.vars().iter().all(|v| v.0 < HIDDEN_DIM_BASE && !generators.contains(v))) =>
            {
                (k, dims)
            }
            other => {
                let d = Diagnostic::error(
                    self.hir.span(body),
                    format!(
                        "the elements of a comprehension must be scalars or tensors of one shape, found `{}`",
                        self.t.show_ty(&other)
                    ),
                );
                let d = match other {
                    Ty::Tensor(..) => d
                        .note("a tensor whose length changes from element to element makes rows of different lengths")
                        .help("collect such rows in a jagged array instead: `jagged[row | ...]`"),
                    t if t == Ty::unit() => d
                        .note("an element with no value (`assert(..)`, `print(..)`) cannot be collected")
                        .help("check every element with `assert(all[i](...), msg)` instead"),
                    _ => d,
                };
                self.err(d);
                return Ty::Error;
            }
        };
        if filtered {
            let v = self.fresh_hidden();
            self.t.dim_names.insert(v, "len".to_string());
            len = Dim::var(v);
        }
        let mut dims = vec![len];
        dims.extend(elem_dims);
        Ty::Tensor(k, dims)
    }

    pub(super) fn infer_match(
        &mut self,
        e: ExprId,
        scrutinee: ExprId,
        arms: &[crate::hir::Arm],
        expect: Option<ScalarKind>,
    ) -> Ty {
        let st = self.infer(scrutinee, None);
        let mut result: Option<Ty> = None;
        let mut failed = st.is_error();
        for arm in arms {
            if !st.is_error() && !self.check_pat(&arm.pat, &st) {
                failed = true;
            }
            if let Some(g) = arm.guard {
                let gt = self.infer(g, Some(ScalarKind::Bool));
                self.expect_bool(g, &gt, "a match guard");
            }
            self.cond_depth += 1;
            let hint = result.as_ref().and_then(|t| t.elem()).or(expect);
            let bt = self.infer(arm.body, hint);
            self.cond_depth -= 1;
            match (&result, &bt) {
                (_, Ty::Error) => failed = true,
                (None, _) => result = Some(bt),
                (Some(r), _) => match self.join_branches(r, &bt) {
                    Ok(t) => result = Some(t),
                    Err(Join::Differ) => {
                        let d =
                            Diagnostic::error(self.hir.span(arm.body), "match arms give tensors of different shapes")
                                .note("the value of a `match` must have one shape whichever arm runs");
                        self.err(d);
                        failed = true;
                    }
                    Err(Join::Mismatch) => {
                        let d = Diagnostic::error(
                            self.hir.span(arm.body),
                            format!(
                                "match arms have different types: `{}` and `{}`",
                                self.t.show_ty(r),
                                self.t.show_ty(&bt)
                            ),
                        );
                        self.err(d);
                        failed = true;
                    }
                },
            }
        }
        if failed {
            return Ty::Error;
        }
        if let Some(missing) = self.missing_cases(&st, arms) {
            let d = Diagnostic::error(self.hir.span(scrutinee), format!("non-exhaustive match: {missing}"))
                .label(self.hir.span(e), "in this `match`")
                .help("add the missing arms, or a wildcard arm `_ => ...`");
            self.err(d);
            return Ty::Error;
        }
        result.unwrap_or(Ty::Error)
    }

    /// The type of a value that is either `a` or `b` (two branches of an
    /// `if`, two arms of a `match`), which code after it relies on:
    /// tensors of one element type and rank whose extents are proven equal,
    /// or become a run-time extent (`?`) where either side has one; tuples
    /// element by element; vectors of strings of any lengths.
    pub(super) fn join_branches(&mut self, a: &Ty, b: &Ty) -> Result<Ty, Join> {
        match (a, b) {
            _ if a == b => Ok(a.clone()),
            (Ty::Tensor(k1, d1), Ty::Tensor(k2, d2)) if k1 == k2 && d1.len() == d2.len() => {
                let hidden = |d: &Dim| d.vars().iter().any(|v| v.0 >= HIDDEN_DIM_BASE);
                let mut dims = Vec::new();
                for (x, y) in d1.iter().zip(d2) {
                    match x.prove_eq(y) {
                        Truth::True => dims.push(x.clone()),
                        Truth::False if !hidden(x) && !hidden(y) => return Err(Join::Differ),
                        // Which extent it is depends on the branch taken:
                        // known when it runs.
                        _ => dims.push(self.run_time_dim()),
                    }
                }
                Ok(Ty::Tensor(*k1, dims))
            }
            (Ty::Tuple(xs), Ty::Tuple(ys)) if xs.len() == ys.len() => {
                xs.iter().zip(ys).map(|(x, y)| self.join_branches(x, y)).collect::<Result<Vec<_>, _>>().map(Ty::Tuple)
            }
            (Ty::Strs(x), Ty::Strs(y)) => {
                Ok(if x.prove_eq(y) == Truth::True { Ty::Strs(x.clone()) } else { Ty::Strs(self.run_time_dim()) })
            }
            _ if same_kind_and_rank(a, b) => Ok(a.clone()),
            _ => Err(Join::Mismatch),
        }
    }

    /// What an exhaustive match over `t` would still need, if anything.
    /// Booleans are checked exactly; other types need an irrefutable arm
    /// (guarded arms never count).
    fn missing_cases(&self, t: &Ty, arms: &[crate::hir::Arm]) -> Option<String> {
        use crate::hir::Pat;
        let unguarded: Vec<&Pat> = arms.iter().filter(|a| a.guard.is_none()).map(|a| &a.pat).collect();
        fn irrefutable(p: &Pat) -> bool {
            match p {
                Pat::Wild | Pat::Bind(_) => true,
                Pat::Tuple(items) => items.iter().all(irrefutable),
                Pat::Or(alts) => alts.iter().any(irrefutable),
                Pat::At(_, p) => irrefutable(p),
                _ => false,
            }
        }
        fn matches_bool(p: &Pat, b: bool) -> bool {
            match p {
                Pat::Lit(Lit::Bool(x), _) => *x == b,
                Pat::Or(alts) => alts.iter().any(|q| matches_bool(q, b)),
                Pat::At(_, p) => matches_bool(p, b),
                _ => false,
            }
        }
        if unguarded.iter().any(|p| irrefutable(p)) {
            return None;
        }
        match t {
            Ty::Scalar(ScalarKind::Bool) => {
                let has = |b: bool| unguarded.iter().any(|p| matches_bool(p, b));
                match (has(true), has(false)) {
                    (true, true) => None,
                    (true, false) => Some("`false` not covered".to_string()),
                    (false, true) => Some("`true` not covered".to_string()),
                    (false, false) => Some("`true` and `false` not covered".to_string()),
                }
            }
            Ty::Scalar(k) if k.is_int() => Some(format!(
                "patterns of `{}` need a wildcard arm; integer ranges are not checked for coverage",
                k.name()
            )),
            other => Some(format!("values of type `{}` need a wildcard arm", self.t.show_ty(other))),
        }
    }

    /// Checks pattern `p` against type `t` and gives its bindings types.
    fn check_pat(&mut self, p: &crate::hir::Pat, t: &Ty) -> bool {
        use crate::hir::Pat;
        let lit_ok = |l: &Lit, k: ScalarKind| match l {
            Lit::Int(v, suffix) => k.is_int() && suffix.is_none_or(|s| s == k) && literal_fits(*v, k),
            Lit::Float(_, suffix) => k.is_float() && suffix.is_none_or(|s| s == k),
            Lit::Bool(_) => k == ScalarKind::Bool,
            Lit::Str(_) => false,
        };
        match (p, t) {
            (Pat::Wild, _) => true,
            (Pat::Or(alts), _) => {
                let mut ok = true;
                for q in alts {
                    ok &= self.check_pat(q, t);
                }
                ok
            }
            (Pat::Lit(Lit::Str(_), _), Ty::Str) => true,
            (Pat::At(d, q), _) => {
                self.env.insert(*d, t.clone());
                self.t.def_ty.insert(*d, t.clone());
                self.check_pat(q, t)
            }
            (Pat::Bind(d), _) => {
                self.env.insert(*d, t.clone());
                self.t.def_ty.insert(*d, t.clone());
                true
            }
            (Pat::Lit(l, span), Ty::Scalar(k)) => {
                if lit_ok(l, *k) {
                    return true;
                }
                self.err(Diagnostic::error(*span, format!("this pattern cannot match a value of type `{}`", k.name())));
                false
            }
            (Pat::Range { lo, hi, span, .. }, Ty::Scalar(k)) => {
                if lit_ok(lo, *k) && lit_ok(hi, *k) && *k != ScalarKind::Bool {
                    return true;
                }
                self.err(Diagnostic::error(
                    *span,
                    format!("this range pattern cannot match a value of type `{}`", k.name()),
                ));
                false
            }
            (Pat::Tuple(items), Ty::Tuple(tys)) if items.len() == tys.len() => {
                let mut ok = true;
                for (p, t) in items.iter().zip(tys) {
                    ok &= self.check_pat(p, t);
                }
                ok
            }
            (_, other) => {
                let span = match p {
                    Pat::Lit(_, s) | Pat::Range { span: s, .. } => *s,
                    _ => Span::call_site(),
                };
                self.err(Diagnostic::error(
                    span,
                    format!("this pattern cannot match a value of type `{}`", self.t.show_ty(other)),
                ));
                false
            }
        }
    }

    /// `jagged[row, ...]`: every row a vector of one element type, of any
    /// length.
    pub(super) fn infer_jagged(&mut self, e: ExprId, rows: &[ExprId], expect: Option<ScalarKind>) -> Ty {
        let lead = rows.iter().position(|x| !self.flexible(*x)).unwrap_or(0);
        let Some(&lead_row) = rows.get(lead) else {
            self.err(Diagnostic::error(self.hir.span(e), "an empty jagged array has no element type"));
            return Ty::Error;
        };
        let lead_k = self.infer(lead_row, expect).elem().or(expect);
        let mut elem = None;
        for (i, &row) in rows.iter().enumerate() {
            let t = if i == lead { self.t.ty(row).clone() } else { self.infer(row, lead_k) };
            match t {
                Ty::Error => return Ty::Error,
                Ty::Tensor(k, dims) if dims.len() == 1 && elem.is_none_or(|e| e == k) => elem = Some(k),
                other => {
                    let d = Diagnostic::error(
                        self.hir.span(row),
                        format!("a row of a jagged array must be a vector, found `{}`", self.t.show_ty(&other)),
                    )
                    .note("rows are vectors of one element type, of any lengths: `jagged[[1, 2], [3]]`");
                    self.err(d);
                    return Ty::Error;
                }
            }
        }
        elem.map(Ty::Jagged).unwrap_or(Ty::Error)
    }

    pub(super) fn infer_array(&mut self, e: ExprId, items: &[ExprId], expect: Option<ScalarKind>) -> Ty {
        let span = self.hir.span(e);
        if items.is_empty() {
            // `[]`: no elements, of the type the context wants (else f32,
            // as for a float literal).
            return Ty::Tensor(expect.unwrap_or(ScalarKind::F32), vec![Dim::zero()]);
        }
        let mut first: Option<Ty> = None;
        let mut tys = Vec::new();
        // A typed element first (one with a value that is not a literal,
        // at any depth), so literals take its type. With none, the type
        // comes from every element and the context, not from the first
        // alone: one float literal makes every integer one a float
        // (`[1, 2.5]` is `[1.0, 2.5]`), `f32` unless the context says.
        let lead = items.iter().position(|x| !self.literal_value(*x)).unwrap_or(0);
        let all_literal = !items.iter().any(|x| !self.literal_value(*x));
        let expect = match expect {
            None if all_literal && items.iter().any(|x| super::literal::is_float_lit(self.hir, *x)) => {
                Some(ScalarKind::F32)
            }
            other => other,
        };
        let lead_ty = self.infer(items[lead], expect);
        let lead_k = lead_ty.elem().or(expect);
        for (i, x) in items.iter().enumerate() {
            let t = if i == lead { lead_ty.clone() } else { self.infer(*x, lead_k) };
            tys.push(t);
        }
        for (x, t) in items.iter().zip(&tys) {
            if t.is_error() {
                return Ty::Error;
            }
            match &first {
                None => first = Some(t.clone()),
                Some(f) if f != t => {
                    if let (Some(kf), Some(kt)) = (f.elem(), t.elem()) {
                        self.retype_to_match(items[lead], kf, *x, kt, span);
                    }
                    let d = Diagnostic::error(
                        self.hir.span(*x),
                        format!("array elements differ: `{}` and `{}`", self.t.show_ty(f), self.t.show_ty(t)),
                    )
                    .note("array literals are rectangular; ragged arrays must be declared `jagged[...]`");
                    self.err(d);
                    return Ty::Error;
                }
                _ => {}
            }
        }
        match first {
            Some(Ty::Scalar(k)) => Ty::Tensor(k, vec![Dim::constant(items.len() as i64)]),
            Some(Ty::Str) => Ty::Strs(Dim::constant(items.len() as i64)),
            Some(Ty::Tensor(k, mut dims)) => {
                if dims.iter().any(|d| d.as_constant().is_none()) {
                    self.err(Diagnostic::error(span, "array literals can only nest arrays of known size"));
                    return Ty::Error;
                }
                dims.insert(0, Dim::constant(items.len() as i64));
                Ty::Tensor(k, dims)
            }
            Some(Ty::Strs(_)) => {
                let d = Diagnostic::error(span, "tensors of strings of rank 2 or more are not supported yet")
                    .note("strings form vectors (`[\"a\", \"b\"]`); a jagged array holds numbers only")
                    .help("keep the rows in separate vectors, or index one vector (`names[i * cols + j]`)");
                self.err(d);
                Ty::Error
            }
            _ => {
                self.err(Diagnostic::error(span, "array elements must be numbers or arrays"));
                Ty::Error
            }
        }
    }
}

/// Why two branches have no common type.
pub(super) enum Join {
    /// Tensors whose extents provably differ.
    Differ,
    /// Different kinds of value.
    Mismatch,
}

pub(crate) fn same_kind_and_rank(a: &Ty, b: &Ty) -> bool {
    match (a, b) {
        (Ty::Scalar(x), Ty::Scalar(y)) => x == y,
        (Ty::Tensor(x, d1), Ty::Tensor(y, d2)) => x == y && d1.len() == d2.len(),
        (Ty::Dyn(x), Ty::Dyn(y)) | (Ty::Jagged(x), Ty::Jagged(y)) => x == y,
        (Ty::Tuple(x), Ty::Tuple(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_kind_and_rank(p, q)),
        (Ty::Str, Ty::Str) | (Ty::Strs(_), Ty::Strs(_)) => true,
        _ => false,
    }
}
