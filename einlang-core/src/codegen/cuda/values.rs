//! Host values of the glue: `let` bindings, calls of other functions'
//! CUDA versions, scalars computed by one-block kernels and copied back,
//! and the function's result.

use proc_macro2::{Literal as RustLit, TokenStream};
use quote::{format_ident, quote};

use super::kernel::{self, c_type};
use super::{cuda_ident, scalar_type, Failure, Holder, HostCx};
use crate::base::scalar::ScalarKind;
use crate::ir::{Expr, ExprKind, FuncId, Literal, Repr, VarId};

impl<'a> HostCx<'a> {
    /// `let var = value;` on the host.
    pub(super) fn bind(&mut self, var: VarId, value: &Expr) -> Result<TokenStream, Failure> {
        let id = self.ident(var)?;
        match (&self.f.var(var).ty, &value.kind) {
            // Statements of a block run before the binding (names are
            // unique in a function, so nothing is shadowed).
            (_, ExprKind::Block { stmts, result }) => {
                let mut out = TokenStream::new();
                for s in stmts {
                    out.extend(self.stmt(s)?);
                }
                out.extend(self.bind(var, result)?);
                Ok(out)
            }
            (Repr::Tuple(_), ExprKind::Tuple(items)) if items.iter().all(|i| matches!(i.kind, ExprKind::Var(_))) => {
                self.tuples.insert(var, items.clone());
                Ok(TokenStream::new())
            }
            (_, ExprKind::Field(t, i)) => match (&t.kind, self.tuple_item(t, *i)) {
                (_, Some(item)) => self.bind(var, &item),
                (kind, None) => Err(Failure::Unsupported(format!("reading an element of {}", kernel::describe(kind)))),
            },
            (Repr::Tensor(..), ExprKind::Var(x)) => {
                let x_ref = self.tensor_ref(*x)?;
                let holder = self.holders.get(x).cloned().unwrap_or(Holder::Borrowed);
                self.holders.insert(var, holder);
                if let Some(w) = self.windows.get(x).cloned() {
                    self.windows.insert(var, w);
                }
                Ok(quote!(let #id = #x_ref;))
            }
            (Repr::Tensor(..), ExprKind::Call { func, args }) => {
                let call = self.call(*func, args)?;
                let own = self.own_ident(var)?;
                self.holders.insert(var, Holder::Owned(own.clone()));
                Ok(quote! {
                    let #own = #call;
                    let #id = &#own;
                })
            }
            (Repr::Scalar(k), _) => {
                let v = self.scalar(value, *k)?;
                let t = scalar_type(*k);
                Ok(quote!(let #id: #t = #v;))
            }
            (ty, kind) => Err(Failure::Unsupported(format!(
                "binding {} of type `{}` in device code",
                kernel::describe(kind),
                kernel::show_repr(ty)
            ))),
        }
    }

    /// Element `i` of a tuple bound to variables.
    pub(super) fn tuple_item(&self, t: &Expr, i: u32) -> Option<Expr> {
        match &t.kind {
            ExprKind::Var(v) => self.tuples.get(v).and_then(|items| items.get(i as usize)).cloned(),
            ExprKind::Tuple(items) => items.get(i as usize).cloned(),
            _ => None,
        }
    }

    /// A call of the CUDA version of `func`, after checking the failures so
    /// far (the callee checks, and clears, the shared status word).
    pub(super) fn call(&mut self, func: FuncId, args: &[Expr]) -> Result<TokenStream, Failure> {
        let g = self.p.get(func).ok_or_else(|| Failure::Bug(format!("call of unknown function {}", func.0)))?;
        let callee = cuda_ident(g, func, self.fns)?;
        let mut xs = Vec::new();
        for a in args {
            xs.push(match (&a.ty, &a.kind) {
                (Repr::Tensor(..), ExprKind::Var(v)) => self.whole_tensor(*v)?,
                (Repr::Scalar(k), _) => self.scalar(a, *k)?,
                (ty, kind) => {
                    return Err(Failure::Unsupported(format!(
                        "passing {} of type `{}` to a function in device code",
                        kernel::describe(kind),
                        kernel::show_repr(ty)
                    )))
                }
            });
        }
        let dev = &self.dev;
        Ok(quote!(#callee(#dev, #(#xs),*)?))
    }

    /// A scalar value on the host: a variable, literal or dimension as is,
    /// anything else computed by a one-thread kernel and copied back.
    pub(super) fn scalar(&mut self, e: &Expr, k: ScalarKind) -> Result<TokenStream, Failure> {
        match &e.kind {
            ExprKind::Var(v) => {
                let id = self.ident(*v)?;
                return Ok(quote!(#id));
            }
            ExprKind::Lit(Literal::Bool(b)) => return Ok(quote!(#b)),
            ExprKind::Lit(Literal::Int(v)) if !k.is_float() => {
                let t = scalar_type(k);
                let lit = RustLit::i128_unsuffixed(*v);
                return Ok(quote!((#lit as #t)));
            }
            ExprKind::Lit(Literal::Float(text)) if k == ScalarKind::F32 => {
                if let Ok(v) = text.replace('_', "").parse::<f32>() {
                    let lit = RustLit::f32_suffixed(v);
                    return Ok(quote!(#lit));
                }
            }
            ExprKind::Lit(Literal::Float(text)) if k == ScalarKind::F64 => {
                if let Ok(v) = text.replace('_', "").parse::<f64>() {
                    let lit = RustLit::f64_suffixed(v);
                    return Ok(quote!(#lit));
                }
            }
            ExprKind::Dim(d) if k == ScalarKind::I64 => return self.dim(d),
            // `N as f32` and the like: Rust's `as` converts as the kernels do
            // (integers wrap, floats saturate).
            ExprKind::Cast(x, to) if *to == k && k != ScalarKind::Bool && !k.is_half() => {
                if let Repr::Scalar(from) = x.ty {
                    let simple = matches!(x.kind, ExprKind::Var(_) | ExprKind::Dim(_))
                        || matches!(x.kind, ExprKind::Lit(Literal::Int(_))) && !from.is_float();
                    if simple && from != ScalarKind::Bool && !from.is_half() {
                        let (x, t) = (self.scalar(x, from)?, scalar_type(k));
                        return Ok(quote!((#x as #t)));
                    }
                }
            }
            ExprKind::Call { func, args }
                if args.iter().any(|a| !matches!(a.ty, Repr::Scalar(_)))
                    || self.p.get(*func).is_some_and(|g| g.device.is_some()) =>
            {
                return self.call(*func, args);
            }
            _ => {}
        }
        // One block: its threads share the reductions, thread 0 combines.
        let mut sites = std::mem::take(&mut self.sites);
        let mut cx = self.kernel_cx(&mut sites);
        cx.share(kernel::Team::Block, false);
        let value = cx.expr(e);
        let inputs = cx.inputs.clone();
        let callees = std::mem::take(&mut cx.callees);
        let (prelude, _) = cx.block.take().unwrap_or_default();
        drop(cx);
        self.sites = sites;
        let value = value?;
        let (mut params, args) = self.inputs(&inputs, true)?;
        params.insert(0, format!("{}* __restrict__ __out", c_type(k)));
        params.push("__ein_u64* __status".into());
        let text = format!(
            "extern \"C\" __global__ void __KERNEL__({}) {{\n{prelude}    if (blockIdx.x == 0 && threadIdx.x == 0) {{\n        \
             __out[0] = {value};\n    }}\n}}\n",
            params.join(", ")
        );
        let (konst, _) = self.add_kernel(text, &callees);
        let own = format_ident!("__scalar");
        let launch = self.launch(&konst, quote!(1usize), &own, args);
        let check = self.check_status();
        let (rt, nd, dev) = (&self.rt, &self.nd, &self.dev);
        let t = scalar_type(k);
        Ok(quote!({
            let mut #own = #rt::cuda::Tensor::<#t, #nd::Ix0>::zeros(#dev, #nd::Ix0())?;
            #launch
            #check
            #own.into_scalar()?
        }))
    }

    /// The function's result, moved out of the tensors it owns.
    pub(super) fn result(&mut self, e: &Expr) -> Result<TokenStream, Failure> {
        match (&e.ty, &e.kind) {
            (Repr::Tensor(..), ExprKind::Var(v)) if self.windows.contains_key(v) => self.whole_tensor(*v),
            (Repr::Tensor(..), ExprKind::Var(v)) => match self.holders.get(v).cloned() {
                Some(Holder::Owned(own)) if self.moved.insert(own.to_string()) => Ok(quote!(#own)),
                _ => {
                    let t = self.tensor_ref(*v)?;
                    Ok(quote!(#t.duplicate()?))
                }
            },
            (Repr::Tensor(..), ExprKind::Call { func, args }) => self.call(*func, args),
            (_, ExprKind::Block { stmts, result }) => {
                let mut out = TokenStream::new();
                for s in stmts {
                    out.extend(self.stmt(s)?);
                }
                let value = self.result(result)?;
                Ok(quote!({ #out #value }))
            }
            (Repr::Tuple(_), ExprKind::Var(v)) if self.tuples.contains_key(v) => {
                let items = self.tuples.get(v).cloned().unwrap_or_default();
                let items = items.iter().map(|i| self.result(i)).collect::<Result<Vec<_>, _>>()?;
                Ok(quote!((#(#items,)*)))
            }
            (_, ExprKind::Field(t, i)) if self.tuple_item(t, *i).is_some() => {
                let item = self.tuple_item(t, *i).ok_or_else(|| Failure::Bug("a tuple element vanished".into()))?;
                self.result(&item)
            }
            (Repr::Tuple(_), ExprKind::Tuple(items)) if !items.is_empty() => {
                let items = items.iter().map(|i| self.result(i)).collect::<Result<Vec<_>, _>>()?;
                Ok(quote!((#(#items,)*)))
            }
            (Repr::Scalar(k), _) => self.scalar(e, *k),
            (ty, kind) => Err(Failure::Unsupported(format!(
                "returning {} of type `{}` from device code",
                kernel::describe(kind),
                kernel::show_repr(ty)
            ))),
        }
    }
}
