//! Element loops whose value is one `f32` function with a sixteen-lane
//! form in `vmath::lanes`: `y[i] = exp(a)`, `y[i] = sigmoid(a)`.
//!
//! The loop computes a run's sixteen arguments, then calls the function's
//! lane form through `__simd` (the module of `vmath::lanes` each CPU form
//! of the generated function binds, `simd_form` in `rust/mod.rs`), then
//! stores the sixteen values; the last run of fewer calls the element
//! function. The AVX-512 form applies `2^n` with `vscalefps`; every form
//! gives the element function's bits (`vmath::lanes`' tests compare them
//! on every `f32`), so the twins still agree. Not in `checked` mode.

use proc_macro2::{Ident, TokenStream};
use quote::quote;

use super::expr::LANES;
use super::{Bug, FnCx};
use crate::base::intrinsic::Intrinsic;
use crate::base::scalar::ScalarKind;
use crate::ir::{ExprKind, Repr, TensorDef};

/// What a lane map calls: the function of `vmath::lanes` and the tokens of
/// its argument (emitted with the definition's value).
pub(crate) struct LaneMap {
    function: Ident,
    arg: TokenStream,
}

impl FnCx<'_> {
    /// The lane map of `def` when its value is `exp(a)` or `sigmoid(a)` of
    /// `f32` (see the module docs), else None.
    pub(crate) fn lane_map(&mut self, def: &TensorDef) -> Result<Option<LaneMap>, Bug> {
        let f32 = Repr::Scalar(ScalarKind::F32);
        if LANES != 16 || self.all_checked || def.domain_guards != 0 || def.body.ty != f32 {
            return Ok(None);
        }
        let (name, arg) = match &def.body.kind {
            ExprKind::Intrinsic(Intrinsic::Exp, args) if args.len() == 1 => ("exp_f32", &args[0]),
            ExprKind::Intrinsic(Intrinsic::Sigmoid, args) if args.len() == 1 => ("sigmoid_f32", &args[0]),
            _ => return Ok(None),
        };
        if arg.ty != f32 {
            return Ok(None);
        }
        let arg = self.expr(arg)?.tokens;
        self.uses_simd = true;
        Ok(Some(LaneMap { function: Ident::new(name, proc_macro2::Span::call_site()), arg }))
    }
}

impl LaneMap {
    /// The loop over `chunk` (uninitialized elements) with `pos` the
    /// element's position in it, `binding` the index variables' bindings
    /// from `pos`, and `body` the element's value (for the last run).
    pub(crate) fn over(&self, chunk: &Ident, pos: &Ident, binding: &TokenStream, body: &TokenStream) -> TokenStream {
        let LaneMap { function, arg } = self;
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
                for __lane in 0..16 {
                    // SAFETY: `__start + __lane < __len`, the chunk's
                    // length; the chunk is not otherwise used meanwhile.
                    unsafe { __ptr.add(__start + __lane).write(__vals[__lane]) };
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
