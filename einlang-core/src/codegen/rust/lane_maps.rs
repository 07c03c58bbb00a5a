//! Element loops whose value computes an `f32` function with a
//! sixteen-lane form in `vmath::lanes`: `exp(a)` or `sigmoid(a)`, alone or
//! inside arithmetic (`y[i] = 1 / (1 + exp(-x[i]))`, `x[i] *
//! sigmoid(x[i])`).
//!
//! The loop computes a run's sixteen arguments, calls the function's lane
//! form through `__simd` (the module of `vmath::lanes` each CPU form of
//! the generated function binds, `simd_form` in `rust/mod.rs`), then
//! computes and stores the sixteen values with the call replaced by its
//! lane (every occurrence of the same call); the last run of fewer
//! computes the value element by element. The AVX-512 form applies `2^n`
//! with `vscalefps`; every form gives the element function's bits
//! (`vmath::lanes`' tests compare them on every `f32`), so the twins
//! still agree. The call is found only through arithmetic (unary and
//! binary operators but `&&` and `||`, casts, other intrinsics): never
//! under a branch, a where entry or a reduction, so computing its argument
//! for every element computes nothing the loop would not. Not in
//! `checked` mode.

use proc_macro2::{Ident, TokenStream};
use quote::quote;

use super::expr::LANES;
use super::{Bug, FnCx};
use crate::base::intrinsic::Intrinsic;
use crate::base::ops::BinOp;
use crate::base::scalar::ScalarKind;
use crate::ir::{Expr, ExprKind, Repr, TensorDef};

/// What a lane map computes: the function of `vmath::lanes`, the tokens of
/// its argument, and those of the value with the call replaced by the
/// lane's result (all emitted with the definition's value).
pub(crate) struct LaneMap {
    function: Ident,
    arg: TokenStream,
    value: TokenStream,
}

/// The first `exp` or `sigmoid` of `f32` reached from `e` through
/// arithmetic alone, with the name of its lane form.
fn lane_call(e: &Expr) -> Option<(&Expr, &'static str)> {
    let f32 = Repr::Scalar(ScalarKind::F32);
    match &e.kind {
        ExprKind::Intrinsic(i @ (Intrinsic::Exp | Intrinsic::Sigmoid), args)
            if args.len() == 1 && e.ty == f32 && args[0].ty == f32 =>
        {
            Some((e, if *i == Intrinsic::Exp { "exp_f32" } else { "sigmoid_f32" }))
        }
        ExprKind::Unary(_, x) | ExprKind::Cast(x, _) => lane_call(x),
        // (`&&` and `||` may skip their right side.)
        ExprKind::Binary(op, a, b) if !matches!(op, BinOp::And | BinOp::Or) => lane_call(a).or_else(|| lane_call(b)),
        ExprKind::Intrinsic(_, args) => args.iter().find_map(lane_call),
        _ => None,
    }
}

impl FnCx<'_> {
    /// The lane map of `def` when its `f32` value computes `exp(a)` or
    /// `sigmoid(a)` through arithmetic (see the module docs), else None.
    pub(crate) fn lane_map(&mut self, def: &TensorDef) -> Result<Option<LaneMap>, Bug> {
        if LANES != 16 || self.all_checked || def.domain_guards != 0 || def.body.ty != Repr::Scalar(ScalarKind::F32) {
            return Ok(None);
        }
        let Some((call, name)) = lane_call(&def.body) else { return Ok(None) };
        let ExprKind::Intrinsic(_, args) = &call.kind else { return Ok(None) };
        let arg = self.expr(&args[0])?.tokens;
        self.lane_value = Some((call.clone(), quote!(__vals[__lane])));
        let value = self.expr(&def.body);
        self.lane_value = None;
        self.uses_simd = true;
        Ok(Some(LaneMap { function: Ident::new(name, proc_macro2::Span::call_site()), arg, value: value?.tokens }))
    }
}

impl LaneMap {
    /// The loop over `chunk` (uninitialized elements) with `pos` the
    /// element's position in it, `binding` the index variables' bindings
    /// from `pos`, and `body` the element's value (for the last run).
    pub(crate) fn over(&self, chunk: &Ident, pos: &Ident, binding: &TokenStream, body: &TokenStream) -> TokenStream {
        let LaneMap { function, arg, value } = self;
        quote! {
            let __len: usize = #chunk.len();
            let __ptr: *mut f32 = #chunk.as_mut_ptr().cast::<f32>();
            let mut __start: usize = 0;
            while __len - __start >= 16 {
                let mut __args: [f32; 16] = [0.0f32; 16];
                for __lane in 0..16 {
                    let #pos: usize = __start + __lane;
                    #binding
                    __args[__lane] = #arg;
                }
                // SAFETY: the form `__simd` names runs on this processor
                // (it is the function's own form's).
                let __vals: [f32; 16] = unsafe { __simd::#function(__args) };
                // The run's values before any store, so that their reads
                // need not wait on the stores (which LLVM cannot tell
                // apart from them) and vectorize.
                let mut __outs: [f32; 16] = [0.0f32; 16];
                for __lane in 0..16 {
                    let #pos: usize = __start + __lane;
                    #binding
                    __outs[__lane] = #value;
                }
                for __lane in 0..16 {
                    // SAFETY: `__start + __lane < __len`, the chunk's
                    // length; the chunk is not otherwise used meanwhile.
                    unsafe { __ptr.add(__start + __lane).write(__outs[__lane]) };
                }
                __start += 16;
            }
            for #pos in __start..__len {
                #binding
                #chunk[#pos].write(#body);
            }
        }
    }
}
