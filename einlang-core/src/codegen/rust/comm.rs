//! Communication between ranks in a sharded function's Rust: each
//! [`Comm`](crate::ir::Comm) spelled as calls of `einlang_runtime::dist`
//! over the `__world` the function takes (the ranks agree on their status
//! before anything is sent).

use proc_macro2::TokenStream;
use quote::quote;

use super::{combine_of, derived, types, Bug, FnCx, Ownership};
use crate::codegen::host;
use crate::ir::Repr;

impl FnCx<'_> {
    /// Communication between ranks: the ranks first agree that none has
    /// failed (otherwise every rank returns the first one's error), then
    /// combine their values, in rank order on every rank.
    pub(super) fn comm(&mut self, c: &crate::ir::Comm) -> Result<TokenStream, Bug> {
        use crate::ir::Comm;
        let (rt, nd) = (self.rt.clone(), self.nd.clone());
        let agree = quote!(__world.agree(::core::result::Result::Ok(()))?;);
        if let Comm::HaloStart { tensor, time, step, axis, lo, hi } = c {
            let access = self.rec_access.get(tensor).cloned().ok_or("a halo exchange outside its recurrence")?;
            let store = access.store.ok_or("a halo exchange outside its recurrence's steps")?;
            let step = self.expr(step)?.tokens;
            let slot = self.in_window(*tensor, *time, quote!(((#step) as usize)));
            let name = self.fn_name.clone();
            let tname = types::str_lit(&self.info(*tensor)?.source_name);
            let (time, axis, lo, hi) = (
                types::usize_lit(*time),
                types::usize_lit(*axis),
                types::usize_lit(*lo as usize),
                types::usize_lit(*hi as usize),
            );
            // `halo_start` agrees on the ranks' status itself, after
            // allocating its buffers and before posting its messages. The
            // exchange in flight lives in the recurrence's handle (declared
            // by `rec_steps`), which waits for it if it is dropped early.
            let handle = derived("halo_", &self.ident(*tensor)?, "");
            return Ok(quote! {
                #handle = ::core::option::Option::Some(
                    unsafe { #rt::dist::halo_start(__world, #name, #tname, &#store, #time, #slot, #axis, #lo, #hi, &__holds) }?,
                );
            });
        }
        if let Comm::HaloWait { tensor } = c {
            if !self.rec_access.contains_key(tensor) {
                // The exchange of an extended copy (`Comm::ExtendStart`).
                let (o, name) = (self.ident(*tensor)?, self.fn_name.clone());
                let handle = derived("ext_", &o, "");
                return Ok(quote!(#handle.complete(#name, &mut *#o)?;));
            }
            let access = self.rec_access.get(tensor).cloned().ok_or("a halo exchange outside its recurrence")?;
            let store = access.store.ok_or("a halo exchange outside its recurrence's steps")?;
            let handle = derived("halo_", &self.ident(*tensor)?, "");
            let name = self.fn_name.clone();
            return Ok(quote! {
                if let ::core::option::Option::Some(__exchange) = #handle.take() {
                    unsafe { __exchange.wait(#name, &#store) }?;
                }
            });
        }
        if let Comm::Extend { out, input, axis, lo, hi, elem }
        | Comm::ExtendStart { out, input, axis, lo, hi, elem, .. } = c
        {
            let (o, i) = (self.ident(*out)?, self.ident(*input)?);
            let rank = match self.info(*out)?.ty {
                Repr::Tensor(_, rank) => rank,
                _ => return Err("an extension of a value that is not a tensor".into()),
            };
            let array = types::array(*elem, Some(rank), &nd);
            let name = self.fn_name.clone();
            let tname = types::str_lit(&self.info(*input)?.source_name);
            let (axis, lo, hi) =
                (types::usize_lit(*axis), types::usize_lit(*lo as usize), types::usize_lit(*hi as usize));
            self.repr.insert(*out, Ownership::Owned);
            self.standard.insert(*out);
            // `extend` agrees on the ranks' status itself, after allocating
            // the copy and its buffers and before sending.
            if let Comm::ExtendStart { edge, .. } = c {
                // The exchange in flight: its `HaloWait` completes it (and
                // it waits for its messages if an early return drops it).
                // The copy (`dist::Extended`, an array by `Deref`) holds
                // the block's edge rows only, and goes back to the world
                // at the end of the call, for the next call to reuse.
                let handle = derived("ext_", &o, "");
                let edge = if *edge == u64::MAX {
                    quote!(::core::primitive::usize::MAX)
                } else {
                    let e = types::usize_lit(*edge as usize);
                    quote!(#e)
                };
                return Ok(quote! {
                    let (mut #o, mut #handle) =
                        #rt::dist::extend_start(__world, #name, #tname, #i.view(), #axis, #lo, #hi, #edge, &__holds)?;
                });
            }
            return Ok(quote! {
                let #o: #array = #rt::dist::extend(__world, #name, #tname, #i.view(), #axis, #lo, #hi, &__holds)?;
            });
        }
        let defined = c.defines().ok_or("a communication that defines nothing")?;
        let out = self.ident(defined)?;
        let out_ty = self.info(defined)?.ty.clone();
        let code = match c {
            Comm::AllReduce { input, op, elem, .. } => {
                let combine = combine_of(*op)?;
                let input = self.ident(*input)?;
                match out_ty {
                    Repr::Scalar(_) => {
                        let t = types::scalar(*elem);
                        quote! {
                            #agree
                            let #out: #t = __world.all_reduce_one(#input, #rt::dist::Combine::#combine);
                        }
                    }
                    Repr::Tensor(_, rank) => {
                        let array = types::array(*elem, Some(rank), &nd);
                        self.repr.insert(defined, Ownership::Owned);
                        self.standard.insert(defined);
                        // The copy is made before the agreement, so that a
                        // copy that fails is this rank's status.
                        let (fname, tname) = (&self.fn_name, self.tensor_name(defined));
                        // The message is allocated fallibly, and the ranks
                        // agree on their status before sending.
                        quote! {
                            let mut #out: #array = #rt::pool::copy(#fname, #tname, #input.view())?;
                            #rt::dist::all_reduce_array(
                                __world, #fname, #tname, ::core::result::Result::Ok(()), &mut #out, #rt::dist::Combine::#combine,
                            )?;
                        }
                    }
                    _ => return Err("an all-reduce of a value that is not a scalar or tensor".into()),
                }
            }
            Comm::AllReduceArg { best, index, skip, max, elem, .. } => {
                let (best, index, skip) = (self.ident(*best)?, self.ident(*index)?, self.ident(*skip)?);
                let t = types::scalar(*elem);
                match out_ty {
                    Repr::Scalar(_) => {
                        let (fname, tname) = (self.fn_name.clone(), self.tensor_name(defined));
                        host::all_reduce_arg_scalar((&fname, &tname), &out, &t, (&best, &index, &skip), *max)
                    }
                    Repr::Tensor(_, rank) => {
                        let (array_t, array_i) = (
                            types::array(*elem, Some(rank), &nd),
                            types::array(crate::base::scalar::ScalarKind::I64, Some(rank), &nd),
                        );
                        self.repr.insert(defined, Ownership::Owned);
                        self.standard.insert(defined);
                        // The copies are made before the agreement, so that
                        // a copy that fails is this rank's status.
                        let (fname, tname) = (&self.fn_name, self.tensor_name(defined));
                        quote! {
                            let mut __best: #array_t = #rt::pool::copy(#fname, #tname, #best.view())?;
                            let mut #out: #array_i = #rt::pool::copy(#fname, #tname, #index.view())?;
                            let __skip: #array_i = #rt::pool::copy(#fname, #tname, #skip.view())?;
                            #rt::dist::all_reduce_arg_arrays(
                                __world, #fname, #tname, ::core::result::Result::Ok(()), &mut __best, &mut #out, &__skip, #max,
                            )?;
                        }
                    }
                    _ => return Err("an all-reduce of a value that is not a scalar or tensor".into()),
                }
            }
            Comm::HaloStart { .. } | Comm::HaloWait { .. } | Comm::Extend { .. } | Comm::ExtendStart { .. } => {
                return Err("a halo exchange".into())
            }
        };
        Ok(code)
    }
}
