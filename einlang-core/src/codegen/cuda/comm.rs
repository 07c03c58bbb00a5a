//! The communication of a sharded `#[device(cuda)]` function (`ir::Comm`
//! and the entry of `ir::ShardParts`), spelled for the device: tensors
//! all-reduced in place on the device through NCCL
//! (`einlang_runtime::cuda::nccl`), scalars (host values) and the entry's
//! agreement through the `World` (MPI), a definition's halo rows through
//! host memory, `argmax`/`argmin` over the sharded axis through host
//! memory too (a value and an index per point). A recurrence's halo
//! exchange is not built for the device: it is an error that says so.

use proc_macro2::{Literal as RustLit, TokenStream};
use quote::quote;

use super::{scalar_type, usize_lit, Failure, Holder, HostCx};
use crate::base::ops::RedOp;
use crate::base::scalar::ScalarKind;
use crate::codegen::host;
use crate::ir::{Comm, Repr, ShardParts};

/// The runtime's `dist::Combine` for a reduction.
fn combine(op: RedOp) -> Result<TokenStream, Failure> {
    Ok(match op {
        RedOp::Sum => quote!(Sum),
        RedOp::Prod => quote!(Prod),
        RedOp::Max => quote!(Max),
        RedOp::Min => quote!(Min),
        RedOp::All => quote!(And),
        RedOp::Any => quote!(Or),
        RedOp::ArgMax | RedOp::ArgMin => return Err(Failure::Bug("an all-reduce of an argmax".into())),
    })
}

/// The halo exchange of a recurrence's steps: not built for the device.
fn halo_unsupported() -> Failure {
    Failure::Unsupported(
        "halo exchanges of a recurrence in a sharded function (shard a host function for stencils over time)".into(),
    )
}

impl HostCx<'_> {
    /// The entry of a sharded device function: as on the host (the ranks
    /// agree that their entry checks passed, on the extents and on the
    /// scalar parameters), binding the symbol's whole extent and this
    /// rank's offset. A recurrence that exchanges halos in its steps is
    /// refused here, before its clauses are emitted.
    pub(super) fn shard_entry(&mut self, parts: &ShardParts) -> Result<TokenStream, Failure> {
        let halo_in_steps = self.f.body.iter().any(|s| {
            matches!(s, crate::ir::Stmt::Recurrence(r) if r.clauses.iter().any(|c| {
                c.prelude.iter().any(|p| matches!(p, crate::ir::Stmt::Comm(Comm::HaloStart { .. } | Comm::HaloWait { .. })))
            }))
        });
        if halo_in_steps {
            return Err(halo_unsupported());
        }
        let (rt, name) = (self.rt.clone(), self.fn_name.clone());
        let (global, local, offset) = (self.ident(parts.global)?, self.ident(parts.local)?, self.ident(parts.offset)?);
        let mut values = vec![quote!(#local)];
        let mut names = vec![RustLit::string(&self.f.var(parts.global).source_name)];
        for &d in &parts.agreed {
            let id = self.ident(d)?;
            values.push(quote!(#id));
            names.push(RustLit::string(&self.f.var(d).source_name));
        }
        let (mut scalars, mut scalar_names) = (Vec::new(), Vec::new());
        for &p in &self.f.params {
            let Repr::Scalar(k) = self.f.var(p).ty else { continue };
            let id = self.ident(p)?;
            scalars.push(match k {
                ScalarKind::F32 | ScalarKind::F64 => quote!(#rt::dist::Scalar::Float(#id as f64)),
                ScalarKind::Bool => quote!(#rt::dist::Scalar::Bool(#id)),
                ScalarKind::I8
                | ScalarKind::I16
                | ScalarKind::I32
                | ScalarKind::I64
                | ScalarKind::U8
                | ScalarKind::U32
                | ScalarKind::U64 => quote!(#rt::dist::Scalar::Int(#id as i64)),
                #[allow(unreachable_patterns)]
                _ => continue,
            });
            scalar_names.push(RustLit::string(&self.f.var(p).source_name));
        }
        let holds = if parts.halo { quote!(__holds) } else { quote!(_) };
        let want = parts.halo;
        Ok(quote! {
            let (#global, #offset, #holds): (i64, i64, ::std::vec::Vec<i64>) = #rt::dist::agree_entry(
                __world, #name, &[#(#values),*], &[#(#names),*], &[#(#scalars),*], &[#(#scalar_names),*], #want,
            )?;
        })
    }

    /// One `ir::Comm`. Before each, the device's recorded failures are
    /// checked and the ranks agree on their status, so that a rank that
    /// failed does not leave the others waiting.
    pub(super) fn comm(&mut self, c: &Comm) -> Result<TokenStream, Failure> {
        let (rt, nd, dev, name) = (self.rt.clone(), self.nd.clone(), self.dev.clone(), self.fn_name.clone());
        let check = self.check_status();
        let agree = quote! {
            #check
            __world.agree(::core::result::Result::Ok(()))?;
        };
        match c {
            Comm::AllReduce { out, input, op, elem } => {
                let op = combine(*op)?;
                let o = self.ident(*out)?;
                match self.f.var(*out).ty {
                    Repr::Scalar(_) => {
                        let (i, t) = (self.ident(*input)?, scalar_type(*elem));
                        Ok(quote! {
                            #agree
                            let #o: #t = __world.all_reduce_one(#i, #rt::dist::Combine::#op);
                        })
                    }
                    Repr::Tensor(..) => {
                        let i = self.tensor_ref(*input)?;
                        let own = self.own_ident(*out)?;
                        let tname = RustLit::string(&self.f.var(*out).source_name);
                        self.holders.insert(*out, Holder::Owned(own.clone()));
                        Ok(quote! {
                            #agree
                            let mut #own = #i.duplicate()?;
                            #rt::cuda::nccl::all_reduce(__world, (#name, #tname), &mut #own, #rt::dist::Combine::#op)?;
                            let #o = &#own;
                        })
                    }
                    _ => Err(Failure::Bug("an all-reduce of a value that is not a scalar or tensor".into())),
                }
            }
            Comm::Extend { out, input, axis, lo, hi, .. } => {
                // Rows of the neighbours: through host memory, once per
                // definition that reads at offsets.
                // `extend` agrees on the ranks' status itself (after the
                // copy to the host and its allocations, before sending); a
                // failure here before it is agreed at the function's end,
                // which meets that agreement.
                let (i, o, own) = (self.tensor_ref(*input)?, self.ident(*out)?, self.own_ident(*out)?);
                let tname = RustLit::string(&self.f.var(*input).source_name);
                let (axis, lo, hi) = (usize_lit(*axis), usize_lit(*lo as usize), usize_lit(*hi as usize));
                self.holders.insert(*out, Holder::Owned(own.clone()));
                let _ = nd;
                Ok(quote! {
                    #check
                    let #own = {
                        let __host = #i.to_host()?;
                        let __rows = #rt::dist::extend(__world, #name, #tname, __host.view(), #axis, #lo, #hi, &__holds)?;
                        #rt::cuda::Tensor::from_host(#dev, &__rows)?
                    };
                    let #o = &#own;
                })
            }
            Comm::AllReduceArg { out, best, index, skip, max, elem } => {
                // Scalars are host values; tensors of extrema and indices
                // go through host memory (a value and an index per point,
                // combined in rank order as on the host).
                let o = self.ident(*out)?;
                match self.f.var(*out).ty {
                    Repr::Scalar(_) => {
                        let (b, i, t) = (self.ident(*best)?, self.ident(*index)?, scalar_type(*elem));
                        let j = self.ident(*skip)?;
                        let tname = RustLit::string(&self.f.var(*out).source_name);
                        let reduce = host::all_reduce_arg_scalar((&name, &tname), &o, &t, (&b, &i, &j), *max);
                        Ok(quote! {
                            #check
                            #reduce
                        })
                    }
                    Repr::Tensor(..) => {
                        let (b, i, j) = (self.tensor_ref(*best)?, self.tensor_ref(*index)?, self.tensor_ref(*skip)?);
                        let own = self.own_ident(*out)?;
                        let tname = RustLit::string(&self.f.var(*out).source_name);
                        self.holders.insert(*out, Holder::Owned(own.clone()));
                        // The copies to the host come first: one that fails
                        // returns, and is agreed at the function's end, which
                        // meets the agreement `all_reduce_arg_arrays` makes
                        // (after allocating its message, before sending).
                        Ok(quote! {
                            #check
                            let #own = {
                                let mut __best = #b.to_host()?;
                                let mut __index = #i.to_host()?;
                                let __skip = #j.to_host()?;
                                #rt::dist::all_reduce_arg_arrays(
                                    __world, #name, #tname, ::core::result::Result::Ok(()), &mut __best, &mut __index, &__skip, #max,
                                )?;
                                #rt::cuda::Tensor::from_host(#dev, &__index)?
                            };
                            let #o = &#own;
                        })
                    }
                    _ => Err(Failure::Bug("an argmax across ranks of a value that is not a scalar or tensor".into())),
                }
            }
            Comm::HaloStart { .. } | Comm::HaloWait { .. } => Err(halo_unsupported()),
        }
    }
}
