//! A row's temporary kept in the row it feeds.
//!
//! A row-wise pipeline (`opt::rows`) computes, per row of a rank-2
//! definition, a row tensor that the definition's value reads at its own
//! position; a softmax row is
//!
//! ```text
//! rows of y, once per n:
//!     let m = max[c](x[n, c])
//!     tensor e[c_2 in 0..C] = exp(x[n, c_2] - m)
//!     let s = sum[k](e[k])
//!     tensor y[n, c_3 in 0..C] = e[c_3] / s
//! ```
//!
//! Each row of `y` is the same length as `e` and written after everything
//! that reads `e` but its own value: `e` is computed into the row of `y`
//! itself, and each element of `y` replaces the element of `e` it read.
//! No allocation per row, and the row stays in one place in the cache.
//!
//! It applies when the prelude tensor `e` is of rank 1 over the
//! definition's last axis (same start, same extent), of the definition's
//! element type, without domain guards; the prelude statements after it are
//! scalar `let`s; every mention of `e` there and in the definition's value
//! is a proven element read, and the value reads it only at its own
//! position (`e[c_3]`) and has no reduction or branch (each element is
//! then read once, before it is written). Not in `checked` mode, whose reads
//! index the array.
//!
//! The row is written through one raw pointer taken from the row's slice
//! (and `e` is a raw view of it): nothing else touches the slice until
//! the row is done.
//!
//! When the next prelude statement sums the whole row (`let s =
//! sum[k](e[k])`) and that sum would run in lanes (`expr::in_lanes`), it
//! is added up in the loop that stores the row, in the same lanes and the
//! same order (the same bits), so the row is not read a second time. An
//! `f32` row `e[c] = exp(a)` takes each run's sixteen arguments at once
//! (`__simd::exp_f32`, the function's CPU form's module of
//! `vmath::lanes`: `vscalefps` in the AVX-512 twin, the same bits;
//! `__simd::exp_f32_nonpositive`, without the upper clamp and the NaN
//! test, where `a` is `x - m` with `m` the row's maximum of `x`,
//! `FnCx::below_its_maximum`). An
//! `f32` row whose value is `e[c] / d`, `d` the same along the row (the
//! softmax's division by its sum), computes `d` once and divides the row
//! in place (`__simd::div_f32_in_place`: through `d`'s reciprocal with an
//! exact correction in the AVX-512 twin, the bits of the division).
//!
//! A later sum of a whole top-level definition's rows (`row_sum_of`:
//! `z[i] = sum[j](e[i, j])` after `e[i, j]`, or `z[i] = sum[j](e[h, i, j])`
//! in the prelude of a later row definition over `h`, attention's `z`
//! after the product `e v`) is added up by `e`'s loop nest right after each
//! row is written, while it is in the first-level cache, in `z`'s lanes and
//! order (the same bits); `z` becomes those sums (a row of them in a
//! prelude), and no longer reads `e` from memory.

use proc_macro2::{Ident, TokenStream};
use quote::quote;

use super::expr::{exp_f32_argument, exp_lanes, in_lanes, LANES};
use super::{types, Bug, FnCx, Ownership};
use crate::base::ops::{BinOp, RedOp};
use crate::base::scalar::ScalarKind;
use crate::ir::visit::visit_var_uses;
use crate::ir::{visit, Expr, ExprKind, Repr, Stmt, TensorDef, VarId};

/// The number of proven element reads of `t` in `e` and whether each of
/// them is at `at` alone (when `at` is given).
fn reads_of(e: &Expr, t: VarId, at: Option<VarId>, count: &mut usize, at_own: &mut bool) {
    if let ExprKind::Read { tensor, indices, checked } = &e.kind {
        if *tensor == t {
            *count += 1;
            let own = matches!(indices.as_slice(), [i] if matches!(i.kind, ExprKind::Var(v) if Some(v) == at));
            *at_own &= !*checked && (at.is_none() || own);
        }
    }
    visit::for_each_child(e, &mut |c| reads_of(c, t, at, count, at_own));
}

/// Whether every mention of `t` in `e` is a proven element read (at `at`
/// alone, when given).
fn only_reads(e: &Expr, t: VarId, at: Option<VarId>) -> bool {
    let mut mentions = 0;
    visit_var_uses(e, &mut |v| mentions += usize::from(v == t));
    let (mut reads, mut ok) = (0, true);
    reads_of(e, t, at, &mut reads, &mut ok);
    ok && reads == mentions
}

/// Whether `e` is arithmetic on scalars and element reads (no loops,
/// branches or calls: each read runs once).
fn straight(e: &Expr) -> bool {
    let here = matches!(
        e.kind,
        ExprKind::Lit(_)
            | ExprKind::Var(_)
            | ExprKind::Dim(_)
            | ExprKind::Unary(..)
            | ExprKind::Binary(..)
            | ExprKind::Cast(..)
            | ExprKind::Intrinsic(..)
            | ExprKind::Read { .. }
    );
    let mut ok = here;
    visit::for_each_child(e, &mut |c| ok &= straight(c));
    ok
}

impl FnCx<'_> {
    /// The position in `prelude` of a row tensor of `def` that can live in
    /// `def`'s row (see the module docs).
    pub(crate) fn in_place_row(&self, def: &TensorDef, prelude: &[Stmt]) -> Option<usize> {
        if self.all_checked || def.axes.len() != 2 || !straight(&def.body) {
            return None;
        }
        let last = &def.axes[1];
        let at = prelude.iter().position(|s| {
            matches!(s, Stmt::Tensor(e) if e.axes.len() == 1
                && e.elem == def.elem
                && e.domain_guards == 0
                && e.axes[0].start == last.start
                && e.axes[0].extent == last.extent)
        })?;
        let Stmt::Tensor(e) = &prelude[at] else { return None };
        let later_ok = prelude[at + 1..].iter().all(|s| match s {
            Stmt::Let { value, .. } => matches!(value.ty, Repr::Scalar(_)) && only_reads(value, e.var, None),
            _ => false,
        });
        (later_ok && only_reads(&def.body, e.var, Some(last.index))).then_some(at)
    }

    /// The variable of `next`, the statement after the in-place row tensor
    /// `e`, when it is `let s = sum[k](e[k])` over `e`'s whole axis, a
    /// float sum that runs in lanes: `fill_in_place` computes it.
    pub(crate) fn fused_sum(e: &TensorDef, next: Option<&Stmt>) -> Option<VarId> {
        let Some(Stmt::Let { var, value }) = next else { return None };
        let ExprKind::Reduce { op: RedOp::Sum, loops, wheres, body } = &value.kind else { return None };
        let [l] = loops.as_slice() else { return None };
        let own = matches!(&body.kind, ExprKind::Read { tensor, indices, checked: false }
            if *tensor == e.var
                && matches!(indices.as_slice(), [i] if matches!(i.kind, ExprKind::Var(v) if v == l.index)));
        let whole = l.start == e.axes[0].start && l.end.sub(&l.start) == e.axes[0].extent;
        let lanes = in_lanes(RedOp::Sum, loops, wheres.is_empty(), e.elem);
        (own && whole && lanes && value.ty == Repr::Scalar(e.elem)).then_some(*var)
    }

    /// `e`'s values written into `row` (the definition's row, uninitialized
    /// memory) through the pointer `ptr`, and `e` bound as a raw view of
    /// them; with `sum`, the scalar `let` that sums them (`fused_sum`)
    /// bound too.
    pub(crate) fn fill_in_place(
        &mut self,
        e: &TensorDef,
        row: &Ident,
        ptr: &Ident,
        len: &Ident,
        sum: Option<VarId>,
    ) -> Result<TokenStream, Bug> {
        let name = self.ident(e.var)?;
        // A second pass over the input's row asks for the next row's
        // lines as it goes (`ahead`), in the loop of runs.
        let ahead = if sum.is_some() { self.take_ahead()? } else { None };
        let (pos, binding) = self.position(&e.axes[0], |pos| quote!(#pos))?;
        let body = self.expr(&e.body)?.tokens;
        let t = types::scalar(e.elem);
        let nd = self.nd.clone();
        self.repr.insert(e.var, Ownership::Borrowed);
        self.standard.insert(e.var);
        let fill = match sum {
            None => quote! {
                for #pos in 0..#len {
                    #binding
                    let __v: #t = #body;
                    // SAFETY: `#pos < #len`, the row's length; the row's
                    // slice is not used again until the row is done.
                    unsafe { #ptr.add(#pos).write(__v) };
                }
            },
            Some(s) => {
                let s = self.ident(s)?;
                let (n, zero) = (types::usize_lit(LANES), types::zero(e.elem));
                let combined = self.sum_of_lanes(&quote!(__lanes), e.elem);
                // A run of lanes computes its values before it stores any,
                // so that the reads can be vectorized ahead of the writes.
                // An `f32` exponential takes the run's arguments at once,
                // through the form of `vmath::lanes` the function's CPU
                // form binds as `__simd` (`simd_form` in `rust/mod.rs`).
                let run = match exp_f32_argument(&e.body) {
                    Some(arg) if LANES == 16 => {
                        let axis = &e.axes[0];
                        let nonpositive = self.below_its_maximum(arg, axis.index, |l| {
                            l.start == axis.start && l.end.sub(&l.start) == axis.extent
                        });
                        let exp = exp_lanes(nonpositive);
                        let arg = self.expr(arg)?.tokens;
                        self.uses_simd = true;
                        quote! {
                            let mut __args: [#t; #n] = [#zero; #n];
                            for __lane in 0..#n {
                                let #pos: usize = __start + __lane;
                                #binding
                                __args[__lane] = #arg;
                            }
                            // SAFETY: the form `__simd` names runs on this
                            // processor (it is the function's own form's).
                            __vals = unsafe { #exp(__args) };
                        }
                    }
                    _ => quote! {
                        for __lane in 0..#n {
                            let #pos: usize = __start + __lane;
                            #binding
                            __vals[__lane] = #body;
                        }
                    },
                };
                let (setup, request) = match &ahead {
                    Some(a) => (a.setup.clone(), a.run(&quote!(__start), LANES)),
                    None => (TokenStream::new(), TokenStream::new()),
                };
                quote! {
                    let mut __lanes: [#t; #n] = [#zero; #n];
                    let mut __vals: [#t; #n] = [#zero; #n];
                    let mut __tail: #t = #zero;
                    let mut __start: usize = 0;
                    #setup
                    while #len - __start >= #n {
                        #request
                        #run
                        for __lane in 0..#n {
                            // SAFETY: `__start + __lane < #len`, the row's
                            // length; the row's slice is not used again
                            // until the row is done.
                            unsafe { #ptr.add(__start + __lane).write(__vals[__lane]) };
                            __lanes[__lane] += __vals[__lane];
                        }
                        __start += #n;
                    }
                    for #pos in __start..#len {
                        #binding
                        let __v: #t = #body;
                        // SAFETY: as above.
                        unsafe { #ptr.add(#pos).write(__v) };
                        __tail += __v;
                    }
                    let #s: #t = #combined + __tail;
                }
            }
        };
        Ok(quote! {
            let #len: usize = #row.len();
            let #ptr: *mut #t = #row.as_mut_ptr().cast::<#t>();
            #fill
            // SAFETY: the `#len` elements were just written, and the row
            // is only read through this view until its value is computed.
            let #name = unsafe { #nd::RawArrayView::from_shape_ptr(#len, #ptr as *const #t) };
        })
    }

    /// The loop that writes an `f32` definition's row over its in-place row
    /// tensor `e` when its value is `e[c] / d` with `d` the same along the
    /// row (softmax's division by the row's sum): `d` once, then the row
    /// divided in place by `__simd::div_f32_in_place`, which the AVX-512
    /// form does through `d`'s reciprocal with the bits of the division
    /// (`vmath::lanes`). None for any other value.
    pub(crate) fn divided_row(
        &mut self,
        def: &TensorDef,
        e: VarId,
        ptr: &Ident,
        len: &Ident,
    ) -> Result<Option<TokenStream>, Bug> {
        let f32 = Repr::Scalar(ScalarKind::F32);
        let Some(last) = def.axes.last() else { return Ok(None) };
        let ExprKind::Binary(BinOp::Div, a, d) = &def.body.kind else { return Ok(None) };
        let own = matches!(&a.kind, ExprKind::Read { tensor, indices, checked: false }
            if *tensor == e && matches!(indices.as_slice(), [i] if matches!(i.kind, ExprKind::Var(v) if v == last.index)));
        let mut along = false;
        visit_var_uses(d, &mut |v| along |= v == last.index || v == e);
        if LANES != 16 || def.body.ty != f32 || d.ty != f32 || !own || along {
            return Ok(None);
        }
        let d = self.expr(d)?.tokens;
        self.uses_simd = true;
        Ok(Some(quote! {
            let __d: f32 = #d;
            // SAFETY: the `#len` elements at `#ptr` are the row, written by
            // its row tensor and not otherwise accessed until it is done;
            // the form `__simd` names runs on this processor.
            unsafe { __simd::div_f32_in_place(#ptr, #len, __d) };
        }))
    }
}

/// Where a later sum of a definition's rows is read (`row_sum_of`): a
/// top-level tensor `z[a..] = sum[k](e[a.., k])`, or a tensor of a later
/// row prelude over index `n`, `z[a..] = sum[k](e[n, a.., k])`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum SumAt {
    Top,
    Row(VarId),
}

/// Whether `value` is `sum[k](e[lead.., k])` over `e`'s whole last axis
/// with proven reads, a float sum that runs in lanes, `lead` the variables
/// given.
fn sums_last_axis(value: &Expr, e: &TensorDef, lead: &[VarId]) -> bool {
    let ExprKind::Reduce { op: RedOp::Sum, loops, wheres, body } = &value.kind else { return false };
    let [l] = loops.as_slice() else { return false };
    let Some(last) = e.axes.last() else { return false };
    let ExprKind::Read { tensor, indices, checked: false } = &body.kind else { return false };
    let vars = lead.iter().copied().chain([l.index]);
    let own = *tensor == e.var
        && indices.len() == lead.len() + 1
        && indices.iter().zip(vars).all(|(i, v)| matches!(i.kind, ExprKind::Var(w) if w == v));
    let whole = l.start == last.start && l.end.sub(&l.start) == last.extent;
    own && whole && in_lanes(RedOp::Sum, loops, wheres.is_empty(), e.elem) && value.ty == Repr::Scalar(e.elem)
}

impl FnCx<'_> {
    /// A tensor `z` of rank one of the function's top level (for `e` of
    /// rank 2) or of a later row prelude (for `e` of rank 3), after `e` (a
    /// top-level definition, every axis from 0; or a definition of a row
    /// prelude and `z` later in the same prelude), that sums `e`
    /// over its last axis at each of its points, and where it is defined:
    /// `e`'s loop nest then adds up each row of `e` as it is written (still
    /// in the first-level cache) into a tensor that `z` becomes, in the
    /// lanes and order of `z`'s own reduction (the same bits), so `z` does
    /// not read `e` from memory again (softmax's `z = sum[j](e[h, i, j])`
    /// after the product that also reads `e`). Not in `checked` mode, nor
    /// for tensors that fill the caller's buffers.
    pub(crate) fn row_sum_of(&self, e: &TensorDef) -> Option<(VarId, SumAt)> {
        let rank = e.axes.len();
        if self.all_checked || rank < 2 || e.domain_guards != 0 || !e.elem.is_float() || self.outs.contains_key(&e.var)
        {
            return None;
        }
        if e.axes.iter().any(|a| a.start.as_constant() != Some(0)) {
            return None;
        }
        // The statement list that defines `e`: a row prelude being
        // emitted (the innermost that holds it), else the function's.
        let defines = |s: &Stmt| match s {
            Stmt::Tensor(t) => t.var == e.var,
            Stmt::Rows(r) => r.def.var == e.var,
            _ => false,
        };
        let body: &[Stmt] =
            self.preludes.iter().rev().find(|p| p.iter().any(defines)).map_or(&self.f.body, |p| p.as_slice());
        let at = body.iter().position(defines)?;
        // `z` of rank one: its own points are reductions in lanes (a `z` of
        // higher rank may add up its terms pass by pass over a row of its
        // points, `accumulate_row`, in another order).
        let same_axes = |z: &TensorDef, from: usize| {
            z.axes.len() == 1
                && z.elem == e.elem
                && z.domain_guards == 0
                && z.axes.len() + from == rank - 1
                && z.axes.iter().zip(&e.axes[from..]).all(|(a, b)| a.start == b.start && a.extent == b.extent)
        };
        for s in &body[at + 1..] {
            match s {
                Stmt::Tensor(z) if same_axes(z, 0) => {
                    let lead: Vec<VarId> = z.axes.iter().map(|a| a.index).collect();
                    if sums_last_axis(&z.body, e, &lead) && !self.outs.contains_key(&z.var) {
                        return Some((z.var, SumAt::Top));
                    }
                }
                Stmt::Rows(r) => {
                    let first = &r.def.axes[0];
                    if first.start != e.axes[0].start || first.extent != e.axes[0].extent {
                        continue;
                    }
                    for p in &r.prelude {
                        let Stmt::Tensor(z) = p else { continue };
                        if !same_axes(z, 1) {
                            continue;
                        }
                        let lead: Vec<VarId> =
                            [first.index].into_iter().chain(z.axes.iter().map(|a| a.index)).collect();
                        if sums_last_axis(&z.body, e, &lead) {
                            return Some((z.var, SumAt::Row(first.index)));
                        }
                    }
                }
                _ => {}
            }
        }
        None
    }

    /// The code, after the innermost loop that wrote `chunk` (a row of
    /// `e`, every element initialized), that sums it in lanes and writes
    /// the sum at position `flat` of the sums through `sums` (a
    /// `Sync` wrapper of the pointer).
    pub(crate) fn sum_written_row(
        &mut self,
        elem: crate::base::scalar::ScalarKind,
        chunk: &Ident,
        sums: &Ident,
        flat: &TokenStream,
    ) -> TokenStream {
        let t = types::scalar(elem);
        let (n, zero) = (types::usize_lit(LANES), types::zero(elem));
        let combined = self.sum_of_lanes(&quote!(__lanes), elem);
        quote! {
            {
                // SAFETY: the loop above wrote every element of the row.
                let __r: &[#t] = unsafe { ::core::slice::from_raw_parts(#chunk.as_ptr().cast::<#t>(), #chunk.len()) };
                let mut __lanes: [#t; #n] = [#zero; #n];
                let mut __tail: #t = #zero;
                let mut __runs = __r.chunks_exact(#n);
                for __run in &mut __runs {
                    for __lane in 0..#n {
                        __lanes[__lane] += __run[__lane];
                    }
                }
                for __v in __runs.remainder() {
                    __tail += *__v;
                }
                let __s: #t = #combined + __tail;
                // SAFETY: `#flat` is the row's position among the rows of
                // the definition, the sums' length; each row writes its own.
                unsafe { #sums.write(#flat, __s) };
            }
        }
    }
}
