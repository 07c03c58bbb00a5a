//! The `_into` form of a function whose result holds tensors.
//!
//! ```text
//! #[doc(hidden)]
//! fn __f_body(x: ArrayView<'_, f32, Ix2>, __out0: &mut dest::Out<'_, f32, Ix2>) -> Result<Array<f32, Ix2>, Error> { .. }
//! pub fn f<'__a0>(x: impl Into<ArrayView<'__a0, f32, Ix2>>) -> Result<Array<f32, Ix2>, Error> {
//!     __f_body(x.into(), &mut dest::Out::none())
//! }
//! pub fn f_into<'__a0, '__o0>(x: .., out: impl Into<ArrayViewMut<'__o0, f32, Ix2>>) -> Result<(), Error> {
//!     let mut __out0 = dest::Out::new("out", out.into());
//!     let __value0 = __f_body(x.into(), &mut __out0)?;
//!     __out0.finish("f", __value0)?;
//!     Ok(())
//! }
//! ```
//!
//! One body serves both entry points, so the function's code is emitted
//! once. The body's definition of a result tensor fills its `Out` (see
//! `FnCx::bind_outs` and `FnCx::fill_call`); `finish` copies in any result
//! that was not written there. A tuple result takes one buffer per tensor
//! element (`out0`, `out1`, ...) and `_into` returns its other elements.

use std::collections::{BTreeSet, HashMap, HashSet};

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use super::{types, Bug, FnIdents};
use crate::base::scalar::ScalarKind;
use crate::codegen::paths;
use crate::ir::{Expr, ExprKind, FuncId, Function, Program, Repr, Stmt, VarId};

/// A tensor of a function's result that `_into` takes a buffer for.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ResultTensor {
    /// Its position in a tuple result; None for the whole result.
    pub element: Option<usize>,
    pub elem: ScalarKind,
    /// None for `[T; *]`.
    pub rank: Option<usize>,
}

/// The tensors of the result of `f` (the function `id`) that its `_into`
/// form takes buffers for: the result when it is a tensor, or the tensor
/// elements of a tuple.
/// Empty when `f` has no `_into` form: no tensor in its result, a device
/// function, one that may give up (an `Option` result), or a function of
/// the program already has the name.
pub(crate) fn outs(f: &Function, id: FuncId, fns: &FnIdents) -> Vec<ResultTensor> {
    let tensor = |element: Option<usize>, ty: &Repr| match *ty {
        Repr::Tensor(elem, rank) => Some(ResultTensor { element, elem, rank: Some(rank) }),
        Repr::Dyn(elem) => Some(ResultTensor { element, elem, rank: None }),
        _ => None,
    };
    let taken = fns.get(id).is_some_and(|own| fns.spells(&ident(own)));
    if f.may_give_up() || f.device.is_some() || taken {
        return Vec::new();
    }
    match &f.ret {
        Repr::Tuple(items) => items.iter().enumerate().filter_map(|(i, ty)| tensor(Some(i), ty)).collect(),
        ty => tensor(None, ty).into_iter().collect(),
    }
}

/// The Rust name of the `_into` form of the function spelled `name`.
pub(crate) fn ident(name: &Ident) -> Ident {
    format_ident!("{}_into", name.to_string().trim_start_matches("r#"))
}

/// The Rust name of the hidden body of the function spelled `name`, which
/// takes an `Out` per result tensor after its parameters.
pub(crate) fn body_ident(name: &Ident) -> Ident {
    format_ident!("__{}_body", name.to_string().trim_start_matches("r#"))
}

/// The call of another function of `p` that is the whole result of `f`
/// (the value, or a `let` of the call that the value alone reads: `uses`
/// counts every variable's mentions in `f`) when the callee's body takes
/// one buffer for a result of `f`'s type: `f`'s body then hands the
/// callee its own `Out`, so `f_into` writes where the callee's definition
/// does (straight into the caller's buffer) instead of copying a result
/// the callee allocated. Not for sharded functions, whose bodies take the
/// rank's world first.
pub(crate) fn forwarded_call<'a>(
    f: &'a Function,
    p: &Program,
    fns: &FnIdents,
    bound: &BTreeSet<FuncId>,
    uses: &HashMap<VarId, usize>,
) -> Option<&'a Expr> {
    let call = match &f.result.kind {
        ExprKind::Call { .. } => &f.result,
        ExprKind::Var(v) if uses.get(v) == Some(&1) => f.body.iter().find_map(|s| match s {
            Stmt::Let { var, value } if var == v => Some(value),
            _ => None,
        })?,
        _ => return None,
    };
    let ExprKind::Call { func, .. } = &call.kind else { return None };
    let callee = p.get(*func)?;
    let single = matches!(outs(callee, *func, fns).as_slice(), [ResultTensor { element: None, .. }]);
    // A host function bound to device code is emitted as a CUDA twin,
    // without this body.
    let device = bound.contains(func);
    (single && !device && callee.ret == f.ret && f.shard.is_none() && callee.shard.is_none()).then_some(call)
}

/// What `emit_function` worked out for the plain entry point.
pub(super) struct Entry<'a> {
    pub f: &'a Function,
    pub name: &'a Ident,
    pub vis: &'a TokenStream,
    pub docs: &'a [TokenStream],
    pub allow: &'a TokenStream,
    pub lifetimes: &'a [syn::Lifetime],
    /// The entry points' parameters (conversions into views).
    pub outer_params: &'a [TokenStream],
    /// The body's parameters, the `Out`s last.
    pub inner_params: &'a [TokenStream],
    /// The arguments the entry points pass the body, before the `Out`s.
    pub forwarded: &'a [TokenStream],
    /// `Result<T, Error>` of the plain form.
    pub ret: &'a TokenStream,
}

/// The body as its own hidden function, the plain entry point, and the
/// `_into` one. `out_ids` name the body's `Out` parameters (one per entry
/// of `outs`); `args` are the body's parameter names, for the buffers'
/// names to avoid.
pub(super) fn emit(
    e: &Entry<'_>,
    body: &TokenStream,
    outs: &[ResultTensor],
    out_ids: &[Ident],
    args: &[Ident],
) -> Result<TokenStream, Bug> {
    let (rt, nd, err, result) = (paths::rt(), paths::nd(), paths::error(), paths::result());
    let Entry { f, name, vis, docs, allow, lifetimes, outer_params, inner_params, forwarded, ret } = e;
    let plain = name.to_string().trim_start_matches("r#").to_string();
    let body_fn = body_ident(name);
    let into_name = ident(name);
    let nones = outs.iter().map(|_| quote!(&mut #rt::dest::Out::none()));
    let single = outs.len() == 1 && outs[0].element.is_none();

    // One buffer per tensor: `out` (`out0`, `out1`, ... for a tuple), or
    // with `_` appended while a parameter has that name.
    let taken: HashSet<String> = args.iter().map(|a| a.to_string()).collect();
    let mut params = outer_params.to_vec();
    let mut into_lifetimes = lifetimes.to_vec();
    let mut wraps = Vec::new();
    let mut values = Vec::new();
    for (i, (out, id)) in outs.iter().zip(out_ids).enumerate() {
        let mut param = if single { "out".to_string() } else { format!("out{i}") };
        while taken.contains(&param) {
            param.push('_');
        }
        let param_name = types::str_lit(&param);
        let param = format_ident!("{}", param);
        let lt = syn::Lifetime::new(&format!("'__o{i}"), proc_macro2::Span::call_site());
        let view = types::view_mut(out.elem, out.rank, &lt, &nd);
        params.push(quote!(#param: impl ::core::convert::Into<#view>));
        into_lifetimes.push(lt);
        wraps.push(quote!(let mut #id = #rt::dest::Out::new(#param_name, #param.into());));
        values.push(format_ident!("__value{}", i));
    }

    // The body's value taken apart: the tensors to finish, and the rest,
    // which `_into` returns (nothing, the one value, or a tuple of them).
    let sharded = f.shard.is_some();
    let (pattern, rest_ty, rest) = match &f.ret {
        Repr::Tuple(items) => {
            let mut pattern = Vec::new();
            let (mut rest_tys, mut rest) = (Vec::new(), Vec::new());
            let mut tensors = values.iter();
            for (i, ty) in items.iter().enumerate() {
                if outs.iter().any(|o| o.element == Some(i)) {
                    let value = tensors.next().ok_or("a result tensor without its value")?;
                    pattern.push(quote!(#value));
                } else {
                    let value = format_ident!("__rest{}", i);
                    pattern.push(quote!(#value));
                    rest_tys.push(types::owned(ty, &nd));
                    rest.push(value);
                }
            }
            match (rest_tys.as_slice(), rest.as_slice()) {
                ([ty], [only]) => (quote!((#(#pattern,)*)), ty.clone(), quote!(#only)),
                _ => (quote!((#(#pattern,)*)), quote!((#(#rest_tys,)*)), quote!((#(#rest,)*))),
            }
        }
        _ => {
            let value = values.first().ok_or("a tensor result without its value")?;
            (quote!(#value), quote!(()), quote!(()))
        }
    };
    let fname = types::str_lit(&plain);
    let finish = out_ids.iter().zip(&values).map(|(id, value)| quote!(#id.finish(#fname, #value)?;));

    let what = if single {
        "buffer `out`".to_string()
    } else {
        "buffers `out0`, `out1`, ... (one per tensor of the result, in order)".to_string()
    };
    let into_docs = [
        format!(" Writes the result of `{plain}` into the caller's {what}, of any strides, overwriting it."),
        String::new(),
        " # Errors".to_string(),
        String::new(),
        format!(" As `{plain}`; also `Error::Shape` naming a buffer whose shape is not the result's, before"),
        " anything is written to it.".to_string(),
    ];
    // A sharded function's ranks end the call together (`World::finish`):
    // a buffer of the wrong shape on one rank, found in the body or when
    // the result is copied in, is the same error on every rank.
    let (plain_body, into_body) = if sharded {
        (
            quote! {
                __world.begin();
                __world.finish(#body_fn(#(#forwarded,)* #(#nones),*))
            },
            quote! {
                #(#wraps)*
                __world.begin();
                let __done = (|| -> #result<#rest_ty, #err> {
                    let #pattern = #body_fn(#(#forwarded,)* #(&mut #out_ids),*)?;
                    #(#finish)*
                    Ok(#rest)
                })();
                __world.finish(__done)
            },
        )
    } else {
        (
            quote!(#body_fn(#(#forwarded,)* #(#nones),*)),
            quote! {
                #(#wraps)*
                let #pattern = #body_fn(#(#forwarded,)* #(&mut #out_ids),*)?;
                #(#finish)*
                Ok(#rest)
            },
        )
    };
    Ok(quote! {
        #allow
        #[doc(hidden)]
        fn #body_fn(#(#inner_params),*) -> #ret {
            #body
        }
        #(#docs)*
        #allow
        #vis fn #name<#(#lifetimes),*>(#(#outer_params),*) -> #ret {
            #plain_body
        }
        #(#[doc = #into_docs])*
        #allow
        #vis fn #into_name<#(#into_lifetimes),*>(#(#params),*) -> #result<#rest_ty, #err> {
            #into_body
        }
    })
}
