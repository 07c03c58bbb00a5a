//! Rows whose guard bounds the innermost index.
//!
//! A definition whose value is `if c { v } else { 0 }` (or `v` under `where`
//! guards), where some conjuncts of `c` bound the innermost index `j` from
//! below or above (`iw >= 0 && iw < W` with `iw = j + s - 1`: padding),
//! computes the range of `j` where they hold once per row: zeros before
//! it, `v` inside it without those tests (a contiguous read LLVM
//! vectorizes), zeros after it. Conjuncts that do not mention `j` are
//! tested once per row; any others stay per element. With another `else`
//! value (`if interior { stencil } else { u[i, j] }`, no where-guards) the
//! positions outside the range compute that value instead of zeros.
//!
//! A row that accumulates a sum (`FnCx::accumulate_row`: the sum's loops
//! outside, the row's inside) clips each term the same way when the term's
//! guards bound `j` (`sum[r, s](g[c, r, s, p - r, q - s] where 0 <= q - s,
//! q - s < Q, ..)`, a transposed convolution over unpadded columns): the
//! term is added to its range of the row only, and its tests that do not
//! mention `j` run once per term.
//!
//! The index may be strided (`iw = 2 * j + s - 1`: `a * j + o` with `a` an
//! integer literal, `a >= 1` in all): its bounds on `j` are rounded up.
//!
//! The range is exact under the language's wrapping integer arithmetic:
//! with `x = a * j + o` (`o` mentions no `j`) evaluated wrapping, `x`
//! equals the exact `a * j + o` over the row when both ends fit in `i64`
//! (it is monotone in `j`), which the generated code checks (else the row
//! runs the per-element loop).

use proc_macro2::{Ident, TokenStream};
use quote::quote;

use super::{types, Bug, FnCx};
use crate::base::ops::{BinOp, UnOp};
use crate::base::scalar::ScalarKind;
use crate::ir::affine::Affine;
use crate::ir::visit::visit_var_uses;
use crate::ir::{visit, Axis, Expr, ExprKind, Literal, Repr, TensorDef, VarId, WhereEntry};

/// A conjunct `x >= limit` (`lower`) or `x < limit` with `x = scale * j +
/// off`; `plus_one` for `>` and `<=`, whose limit is one further.
struct Bound {
    lower: bool,
    limit: Expr,
    scale: i64,
    off: Expr,
    plus_one: bool,
}

/// A body split around its bounds on `j`.
pub(crate) struct Clip {
    /// Conjuncts that mention no `j` (nor a value bound per element).
    outer: Vec<Expr>,
    bounds: Vec<Bound>,
    /// The value inside the range, with the bounds' and outer tests gone.
    inside: Expr,
    /// The value outside the range: the `else` of `if c { v } else { w }`
    /// when `w` is not zero (None: zero).
    outside: Option<Expr>,
}

impl Clip {
    /// The value inside the range.
    pub(crate) fn inside(&self) -> &Expr {
        &self.inside
    }
}

fn mentions(e: &Expr, vars: &[VarId]) -> bool {
    let mut found = false;
    visit_var_uses(e, &mut |v| found |= vars.contains(&v));
    found
}

fn and(a: Expr, b: Expr) -> Expr {
    Expr { kind: ExprKind::Binary(BinOp::And, Box::new(a), Box::new(b)), ty: Repr::Scalar(ScalarKind::Bool) }
}

/// Whether `e` is integer arithmetic that cannot fail (`+ - *`, negation,
/// literals, variables, dimensions).
fn arithmetic(e: &Expr) -> bool {
    let leaf_or_op = matches!(
        e.kind,
        ExprKind::Var(_)
            | ExprKind::Dim(_)
            | ExprKind::Lit(Literal::Int(_))
            | ExprKind::Binary(BinOp::Add | BinOp::Sub | BinOp::Mul, ..)
            | ExprKind::Unary(UnOp::Neg, _)
    );
    let mut ok = leaf_or_op && matches!(e.ty, Repr::Scalar(ScalarKind::I64));
    visit::for_each_child(e, &mut |c| ok &= arithmetic(c));
    ok
}

/// Whether the test `c` compares arithmetic (joined by `&&`, `||`, `!`):
/// evaluating it once per row, ahead of the tests it came after, can
/// neither fail nor read anything.
fn pure_test(c: &Expr) -> bool {
    match &c.kind {
        ExprKind::Binary(BinOp::And | BinOp::Or, a, b) => pure_test(a) && pure_test(b),
        ExprKind::Unary(UnOp::Not, a) => pure_test(a),
        ExprKind::Binary(BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge, a, b) => {
            arithmetic(a) && arithmetic(b)
        }
        ExprKind::Lit(Literal::Bool(_)) => true,
        _ => false,
    }
}

/// `e` with the variables of `binds` replaced by their values.
fn substitute(e: &Expr, binds: &[(VarId, Expr)]) -> Expr {
    if let ExprKind::Var(v) = e.kind {
        if let Some((_, value)) = binds.iter().find(|(b, _)| *b == v) {
            return value.clone();
        }
    }
    let mut out = e.clone();
    visit::for_each_child_mut(&mut out, &mut |c| *c = substitute(c, binds));
    out
}

/// `(a, e[j := 0])` when `e` is `a * j` plus terms without `j` (its
/// affine form in `j`), `a` a stride from 1 to 2^16.
fn offset_of(e: &Expr, j: VarId) -> Option<(i64, Expr)> {
    let (scale, _) = Affine::in_var(e, j)?;
    if !(1..=1 << 16).contains(&scale) {
        return None;
    }
    let zero = Expr { kind: ExprKind::Lit(Literal::Int(0)), ty: Repr::Scalar(ScalarKind::I64) };
    Some((scale, substitute(e, &[(j, zero)])))
}

/// `c` as a bound on `j`, if it is one.
fn bound(c: &Expr, j: VarId) -> Option<Bound> {
    let ExprKind::Binary(op, l, r) = &c.kind else { return None };
    if !(arithmetic(l) && arithmetic(r)) {
        return None;
    }
    // (the side with j, the other, lower, plus_one)
    let (x, limit, lower, plus_one) = match op {
        BinOp::Ge => (l, r, true, false),
        BinOp::Gt => (l, r, true, true),
        BinOp::Lt => (l, r, false, false),
        BinOp::Le => (l, r, false, true),
        _ => return None,
    };
    // With `j` on the right, `a <= x` is `x >= a` and `a < x` is `x > a`:
    // the other direction, and the other strictness.
    let (x, limit, lower, plus_one) =
        if mentions(limit, &[j]) { (limit, x, !lower, !plus_one) } else { (x, limit, lower, plus_one) };
    if mentions(limit, &[j]) {
        return None;
    }
    let (scale, off) = offset_of(x, j)?;
    Some(Bound { lower, limit: (**limit).clone(), scale, off, plus_one })
}

/// Splits `body` around its bounds on `j`; None unless at least one
/// conjunct bounds `j`.
fn clip(body: &Expr, j: VarId, elem: ScalarKind) -> Option<Clip> {
    let (wheres, inner) = match &body.kind {
        ExprKind::Guarded { wheres, body } => (wheres.clone(), &**body),
        _ => (Vec::new(), body),
    };
    let (value, cond, outside) = match &inner.kind {
        ExprKind::If { cond, then, els } if visit::is_zero(els) => (&**then, Some(&**cond), None),
        // Another `else` value (`u[i, j]` on a stencil's border) is computed
        // outside the range; where-guards, whose failure gives zero, are not
        // split then.
        ExprKind::If { cond, then, els } if wheres.is_empty() => (&**then, Some(&**cond), Some((**els).clone())),
        _ => (inner, None, None),
    };
    // A binding that may fail (a checked read, a call, an integer
    // division) is evaluated at every point, before the guards: skipping
    // it outside the range could hide its error.
    if wheres.iter().any(|w| matches!(w, WhereEntry::Bind(_, e) if visit::may_fail(e))) {
        return None;
    }
    // Bindings that are arithmetic, substituted into the tests (each in
    // terms of the ones before it); the others are per element.
    let mut arith: Vec<(VarId, Expr)> = Vec::new();
    let mut opaque: Vec<VarId> = vec![j];
    for w in &wheres {
        if let WhereEntry::Bind(v, e) = w {
            if arithmetic(e) && !mentions(e, &opaque[1..]) {
                arith.push((*v, substitute(e, &arith)));
            } else {
                opaque.push(*v);
            }
        }
    }
    let (mut outer, mut bounds) = (Vec::new(), Vec::new());
    // Tests run left to right, each only where those before it held: after
    // a kept test that may fail, later ones stay per element too (moving
    // them out would skip that test, and its error, outside the range).
    let mut failing_before = false;
    // A test: known true inside the range (dropped there), or kept.
    let mut classify = |c: &Expr| -> bool {
        if failing_before {
            return false;
        }
        if visit::may_fail(c) {
            failing_before = true;
            return false;
        }
        let c = substitute(c, &arith);
        if mentions(&c, &opaque) {
            match bound(&c, j).filter(|b| !mentions(&b.limit, &opaque) && !mentions(&b.off, &opaque)) {
                Some(b) => {
                    bounds.push(b);
                    true
                }
                None => false,
            }
        } else if pure_test(&c) {
            outer.push(c);
            true
        } else {
            false
        }
    };
    let mut kept_wheres = Vec::new();
    for w in wheres {
        match w {
            WhereEntry::Guard(g) => {
                let mut cs = Vec::new();
                visit::conjuncts(&g, &mut cs);
                let rest: Vec<Expr> = cs.into_iter().filter(|c| !classify(c)).cloned().collect();
                if let Some(r) = rest.into_iter().reduce(and) {
                    kept_wheres.push(WhereEntry::Guard(r));
                }
            }
            bind => kept_wheres.push(bind),
        }
    }
    let mut value = value.clone();
    if let Some(cond) = cond {
        let mut cs = Vec::new();
        visit::conjuncts(cond, &mut cs);
        let rest: Vec<Expr> = cs.into_iter().filter(|c| !classify(c)).cloned().collect();
        if let Some(r) = rest.into_iter().reduce(and) {
            let els = outside
                .clone()
                .unwrap_or_else(|| Expr { kind: ExprKind::Lit(types_zero_literal(elem)), ty: Repr::Scalar(elem) });
            value = Expr {
                kind: ExprKind::If { cond: Box::new(r), then: Box::new(value), els: Box::new(els) },
                ty: Repr::Scalar(elem),
            };
        }
    }
    if bounds.is_empty() {
        return None;
    }
    let inside = if kept_wheres.is_empty() {
        value
    } else {
        Expr { kind: ExprKind::Guarded { wheres: kept_wheres, body: Box::new(value) }, ty: Repr::Scalar(elem) }
    };
    Some(Clip { outer, bounds, inside, outside })
}

fn types_zero_literal(elem: ScalarKind) -> Literal {
    if elem.is_float() {
        Literal::Float("0.0".into())
    } else {
        Literal::Int(0)
    }
}

/// The tensors `e` reads element by element, each once.
fn reads(e: &Expr, out: &mut Vec<VarId>) {
    if let ExprKind::Read { tensor, .. } = &e.kind {
        if !out.contains(tensor) {
            out.push(*tensor);
        }
    }
    visit::for_each_child(e, &mut |c| reads(c, out));
}

/// A sum's term under its where entries, split around the entries' bounds
/// on the row's index `j` (see [`FnCx::accumulate_row`]); a term that is
/// not zero outside its range is not split.
pub(crate) fn clip_term(wheres: &[WhereEntry], term: &Expr, j: VarId, elem: ScalarKind) -> Option<Clip> {
    let guarded =
        Expr { kind: ExprKind::Guarded { wheres: wheres.to_vec(), body: Box::new(term.clone()) }, ty: term.ty.clone() };
    clip(&guarded, j, elem).filter(|c| c.outside.is_none())
}

/// Code computing the range of a row where a clip's bounds hold.
pub(crate) struct RowRange {
    /// Declares `__first` and `__last` (the row's indices), `__lo..__hi`
    /// (the range) and, unless `exact`, `__exact` (whether `__lo..__hi`
    /// is exact; the per-element loop must run where it is not).
    pub decl: TokenStream,
    /// Whether the range is exact whatever the inputs.
    pub exact: bool,
    /// The tests of the clip that do not mention the row's index.
    pub ok: TokenStream,
    /// The value inside the range.
    pub inside: TokenStream,
    /// The tensors the inside reads as local views: their strides and
    /// data pointers then stay in registers across the row's stores
    /// (behind the captured references, LLVM reloads them per element).
    pub locals: TokenStream,
}

impl RowRange {
    /// Declares `__a..__b`, the range as positions in the row (empty when
    /// the row's other tests fail).
    fn positions(&self) -> TokenStream {
        let ok = &self.ok;
        quote! {
            let (__a, __b) = if (#ok) && __lo < __hi {
                ((__lo - __first) as usize, (__hi - __first) as usize)
            } else {
                (0, 0)
            };
        }
    }

    /// `clipped` after the range's declarations, or `generic` where the
    /// range is not exact.
    fn around(&self, clipped: TokenStream, generic: &TokenStream) -> TokenStream {
        let decl = &self.decl;
        let body = if self.exact { clipped } else { quote!(if __exact { #clipped } else { #generic }) };
        quote! {
            {
                #decl
                #body
            }
        }
    }
}

impl FnCx<'_> {
    /// `e` as code that does not move the tensors it names (it runs once
    /// per element of a row).
    fn unmoved(&mut self, e: &Expr) -> Result<TokenStream, Bug> {
        self.no_move += 1;
        let code = self.expr(e).map(|x| x.tokens);
        self.no_move -= 1;
        code
    }

    /// The range of the row `chunk` (along `axis`) where the bounds of `c`
    /// hold; the module docs say how it is exact.
    pub(crate) fn row_range(&mut self, c: &Clip, axis: &Axis, chunk: &Ident) -> Result<RowRange, Bug> {
        self.row_range_at(c, &axis.start, &quote!(#chunk.len()))
    }

    /// `row_range` for a row whose first index is `start` and whose length
    /// is `len` (an expression of type `usize`).
    fn row_range_at(&mut self, c: &Clip, start: &crate::base::dim::Dim, len: &TokenStream) -> Result<RowRange, Bug> {
        self.no_move += 1;
        let built = (|| {
            let outer = c.outer.iter().map(|e| self.expr(e).map(|x| x.tokens)).collect::<Result<Vec<_>, _>>()?;
            let bounds = c
                .bounds
                .iter()
                .map(|b| Ok((b, self.expr(&b.limit)?.tokens, self.expr(&b.off)?.tokens)))
                .collect::<Result<Vec<_>, Bug>>()?;
            let inside = self.expr(&c.inside)?.tokens;
            Ok::<_, Bug>((outer, bounds, inside))
        })();
        self.no_move -= 1;
        let (outer, bounds, inside) = built?;
        let mut read = Vec::new();
        reads(&c.inside, &mut read);
        let mut locals = TokenStream::new();
        for t in read {
            if self.rec_access.contains_key(&t) || !matches!(self.info(t)?.ty, Repr::Tensor(..)) {
                continue;
            }
            let id = self.ident(t)?;
            locals.extend(quote!(let #id = #id.view();));
        }
        // With a small constant start and small literal offsets, `j + o`
        // cannot leave `i64` (a row holds fewer than 2^61 elements): no
        // check, no per-element fallback.
        let small = |v: Option<i64>| v.is_some_and(|v| v.unsigned_abs() <= 1 << 32);
        let literal = |e: &Expr| match e.kind {
            ExprKind::Lit(Literal::Int(v)) => i64::try_from(v).ok(),
            _ => None,
        };
        let exact = small(start.as_constant()) && c.bounds.iter().all(|b| b.scale == 1 && small(literal(&b.off)));
        let start = self.dim(start)?;
        let ok = outer.into_iter().fold(quote!(true), |acc, c| quote!(#acc && (#c)));
        let limits = bounds.into_iter().map(|(b, limit, off)| {
            let one = if b.plus_one { quote!(+ 1) } else { quote!() };
            let narrow = if b.lower { quote!(__lo = __lo.max(__at)) } else { quote!(__hi = __hi.min(__at)) };
            let scale = b.scale;
            // `scale * j + off >= n` is `j >= ceil((n - off) / scale)`, and
            // `< n` is `j < ceil((n - off) / scale)`.
            let (check, at) = if scale == 1 {
                let check = quote! {
                    __exact &= (__first + __off as i128) >= i64::MIN as i128
                        && (__last + __off as i128) <= i64::MAX as i128;
                };
                (check, quote!(__limit as i128 - __off as i128 #one))
            } else {
                let check = quote! {
                    __exact &= (#scale as i128 * __first + __off as i128) >= i64::MIN as i128
                        && (#scale as i128 * __last + __off as i128) <= i64::MAX as i128;
                };
                let minus_one = if b.plus_one { quote!(-1) } else { quote!() };
                (check, quote!(-((__off as i128 - __limit as i128 #minus_one).div_euclid(#scale as i128))))
            };
            let check = if exact { quote!() } else { check };
            quote! {
                {
                    let __off: i64 = #off;
                    let __limit: i64 = #limit;
                    #check
                    let __at: i128 = #at;
                    #narrow;
                }
            }
        });
        let exact_decl = if exact { quote!() } else { quote!(let mut __exact = true;) };
        let decl = quote! {
            // The row's indices are __first..=__last.
            let __first: i128 = (#start) as i128;
            let __last: i128 = __first + (#len) as i128 - 1;
            let (mut __lo, mut __hi) = (__first, __last + 1);
            #exact_decl
            #(#limits)*
        };
        Ok(RowRange { decl, exact, ok, inside, locals })
    }

    /// When `inside` (the value inside a clip's range, or a row's value)
    /// is a proven read of a tensor in standard layout that walks it along
    /// its last axis as the row's index `j` walks the row (last index
    /// `j + o`, the others without `j`), the loop over the row's positions
    /// `__a..__b` (`row`, a slice of `slot`s) as a loop over two slices:
    /// each slot is written the element it reads (`add`: the element is
    /// added to it). `binding` binds `j` from `pos`. LLVM vectorizes such a
    /// loop for rows of any length with any vector width (per element, the
    /// address arithmetic and the check that the row and the read do not
    /// overlap kept short rows scalar under AVX2).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn slice_loop(
        &mut self,
        inside: &Expr,
        j: VarId,
        pos: &Ident,
        binding: &TokenStream,
        row: &TokenStream,
        slot: &Ident,
        add: bool,
    ) -> Result<Option<TokenStream>, Bug> {
        // Where-bindings of index arithmetic (`iw = j + s - 1`) are
        // substituted into the read's indices.
        let (binds, value) = match &inside.kind {
            ExprKind::Guarded { wheres, body } => (&wheres[..], &**body),
            _ => (&[][..], inside),
        };
        let mut arith: Vec<(VarId, Expr)> = Vec::new();
        for w in binds {
            match w {
                WhereEntry::Bind(v, e) if arithmetic(e) => arith.push((*v, substitute(e, &arith))),
                _ => return Ok(None),
            }
        }
        let ExprKind::Read { tensor, indices, checked: false } = &value.kind else { return Ok(None) };
        let indices: Vec<Expr> = indices.iter().map(|i| substitute(i, &arith)).collect();
        let Some((last, rest)) = indices.split_last() else { return Ok(None) };
        let contiguous = self.standard.contains(tensor)
            && !self.rec_access.contains_key(tensor)
            && offset_of(last, j).is_some_and(|(scale, _)| scale == 1)
            && !rest.iter().any(|i| mentions(i, &[j]))
            && indices.iter().all(arithmetic);
        if !contiguous {
            return Ok(None);
        }
        let id = self.ident(*tensor)?;
        self.no_move += 1;
        let idx: Result<Vec<TokenStream>, Bug> =
            indices.iter().map(|i| self.expr(i).map(|x| x.at_least(super::Prec::Cast))).collect();
        self.no_move -= 1;
        let idx = idx?;
        let mut offset = TokenStream::new();
        for (axis, i) in idx.iter().enumerate() {
            offset = if axis == 0 {
                quote!(#i as usize)
            } else {
                let a = types::usize_lit(axis);
                quote!((#offset) * #id.shape()[#a] + #i as usize)
            };
        }
        // The index at `__a` is computed only when the range holds a
        // position: outside it, the read may be out of bounds.
        let src = quote! {
            if __a < __b {
                let __start: usize = {
                    let #pos = __a;
                    #binding
                    #offset
                };
                // SAFETY: the read is proven in bounds at every position of
                // `__a..__b`, and there it addresses `__b - __a` consecutive
                // elements of a tensor in standard layout from `__start`.
                unsafe { ::core::slice::from_raw_parts(#id.as_ptr().add(__start), __b - __a) }
            } else {
                &[]
            }
        };
        let update = if add { quote!(*#slot += *__v;) } else { quote!(#slot.write(*__v);) };
        Ok(Some(quote! {
            for (#slot, __v) in #row.iter_mut().zip(#src) {
                #update
            }
        }))
    }

    /// The innermost loop of a row (`chunk`, its elements `slot`, written
    /// into uninitialized memory) as three ranges when the definition's
    /// guard bounds the innermost index (see the module docs); `generic` is
    /// the per-element loop, run when the range cannot be computed exactly.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn clipped_row(
        &mut self,
        def: &TensorDef,
        axis: &Axis,
        chunk: &Ident,
        slot: &Ident,
        pos: &Ident,
        binding: &TokenStream,
        generic: &TokenStream,
    ) -> Result<Option<TokenStream>, Bug> {
        if def.elem == ScalarKind::Bool {
            return Ok(None);
        }
        let Some(c) = clip(&def.body, axis.index, def.elem) else { return Ok(None) };
        let range_code = self.row_range(&c, axis, chunk)?;
        let (inside, locals) = (&range_code.inside, &range_code.locals);
        let range = quote!(#chunk[__a..__b]);
        let range_loop = match self.slice_loop(&c.inside, axis.index, pos, binding, &range, slot, false)? {
            Some(copy) => copy,
            None => quote! {
                for (#pos, #slot) in #chunk[__a..__b].iter_mut().enumerate() {
                    let #pos = #pos + __a;
                    #binding
                    #slot.write(#inside);
                }
            },
        };
        // Outside the range: zeros, or the `else` value per element, in
        // the row's order (before, inside, after: the first error an
        // element meets is the one the per-element loop would meet).
        let (before, after) = match &c.outside {
            None => {
                let zero = types::zero(def.elem);
                let fill = |part: TokenStream| quote!(for #slot in #part.iter_mut() { #slot.write(#zero); });
                (fill(quote!(#chunk[..__a])), fill(quote!(#chunk[__b..])))
            }
            Some(w) => {
                let value = self.unmoved(w)?;
                let run = quote!(#chunk[__a..__b]);
                let part = match self.slice_loop(w, axis.index, pos, binding, &run, slot, false)? {
                    Some(copy) => copy,
                    None => quote! {
                        for (#pos, #slot) in #chunk[__a..__b].iter_mut().enumerate() {
                            let #pos = #pos + __a;
                            #binding
                            #slot.write(#value);
                        }
                    },
                };
                let len = quote!(#chunk.len());
                (quote!({ let (__a, __b) = (0usize, __a); #part }), quote!({ let (__a, __b) = (__b, #len); #part }))
            }
        };
        let positions = range_code.positions();
        let clipped = quote! {
            #positions
            #locals
            #before
            #range_loop
            #after
        };
        Ok(Some(range_code.around(clipped, generic)))
    }

    /// A recurrence clause's row `row` (its last axis, the loop `index`
    /// from `start`), whose value `body` is clipped by its guard (see the
    /// module docs), as three calls of `fill(slice, first index, value)`:
    /// the stretch before the range, the range, the stretch after it, in
    /// the row's order; `generic` (the one call over the whole row) runs
    /// when the range cannot be computed exactly.
    pub(crate) fn clipped_fill(
        &mut self,
        body: &Expr,
        elem: ScalarKind,
        index: VarId,
        start: &crate::base::dim::Dim,
        row: &Ident,
        fill: &dyn Fn(TokenStream, TokenStream, TokenStream) -> TokenStream,
        generic: &TokenStream,
    ) -> Result<Option<TokenStream>, Bug> {
        if elem == ScalarKind::Bool {
            return Ok(None);
        }
        let Some(c) = clip(body, index, elem) else { return Ok(None) };
        let range = self.row_range_at(&c, start, &quote!(#row.len()))?;
        let outside = match &c.outside {
            None => types::zero(elem),
            Some(w) => self.unmoved(w)?,
        };
        let first = self.dim(start)?;
        let before = fill(quote!(__before), quote!(#first), outside.clone());
        let within = fill(quote!(__within), quote!((#first) + __a as i64), range.inside.clone());
        let after = fill(quote!(__after), quote!((#first) + __b as i64), outside);
        let (positions, locals) = (range.positions(), &range.locals);
        let clipped = quote! {
            #positions
            #locals
            let (__before, __rest) = #row.split_at_mut(__a);
            let (__within, __after) = __rest.split_at_mut(__b - __a);
            #before
            #within
            #after
        };
        Ok(Some(range.around(clipped, generic)))
    }
}
