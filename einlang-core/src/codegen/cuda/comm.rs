//! The communication of a sharded `#[device(cuda)]` function (`ir::Comm`
//! and the entry of `ir::ShardParts`), spelled for the device: tensors
//! all-reduced in place on the device through NCCL
//! (`einlang_runtime::cuda::nccl`), scalars (host values) and the entry's
//! agreement through the `World` (MPI), a definition's halo rows through
//! host memory, `argmax`/`argmin` over the sharded axis through host
//! memory too (a value and an index per point), and a recurrence's halo
//! rows at every step that reads them ([`HostCx::device_halo`]): exactly
//! the rows the neighbours want, packed by a kernel, exchanged through
//! host memory and unpacked into the halos by a kernel.

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

/// A halo exchange outside a recurrence's clauses (or a two-part
/// extension, which `opt::shard` makes for host functions only).
fn halo_unsupported() -> Failure {
    Failure::Bug("a halo exchange outside a recurrence's steps in device code".into())
}

/// The kernel that packs a recurrence's edge rows of one slab into a
/// buffer (`__out`): the `__rows_a` rows from storage row `__first_a`,
/// then the rows from `__first_b`, each row's points in the order of
/// `dist::slab_geometry`.
fn pack_kernel(t: &str) -> String {
    format!(
        "extern \"C\" __global__ void __KERNEL__({t}* __out, const {t}* __u, long long __n_rows, long long __rows_a, \
         long long __first_a, long long __first_b, long long __A, long long __B, long long __C, long long __sA, \
         long long __sB, long long __sR, long long __base, __ein_u64* __status) {{\n    \
         const long long __per = __A * __B * __C;\n    const long long __n = __n_rows * __per;\n    \
         for (long long __p = (long long)blockIdx.x * blockDim.x + threadIdx.x; __p < __n; \
         __p += (long long)gridDim.x * blockDim.x) {{\n        \
         const long long __k = __p / __per, __q = __p % __per;\n        \
         const long long __r = __k < __rows_a ? __first_a + __k : __first_b + (__k - __rows_a);\n        \
         const long long __a = __q / (__B * __C), __b = (__q / __C) % __B, __c = __q % __C;\n        \
         __out[__p] = __u[__base + __a * __sA + __b * __sB + __r * __sR + __c];\n    }}\n}}\n"
    )
}

/// The kernel that writes the rows received into a slab's halos: `__lo`
/// rows before the block of `__local` rows (from `__before`), `__hi`
/// after it (from `__after`).
fn unpack_kernel(t: &str) -> String {
    format!(
        "extern \"C\" __global__ void __KERNEL__({t}* __out, const {t}* __before, const {t}* __after, long long __lo, \
         long long __hi, long long __local, long long __A, long long __B, long long __C, long long __sA, \
         long long __sB, long long __sR, long long __base, __ein_u64* __status) {{\n    \
         const long long __per = __A * __B * __C;\n    const long long __n = (__lo + __hi) * __per;\n    \
         for (long long __p = (long long)blockIdx.x * blockDim.x + threadIdx.x; __p < __n; \
         __p += (long long)gridDim.x * blockDim.x) {{\n        \
         const long long __k = __p / __per, __q = __p % __per;\n        \
         const long long __r = __k < __lo ? __k : __local + __k;\n        \
         const {t} __v = __k < __lo ? __before[__k * __per + __q] : __after[(__k - __lo) * __per + __q];\n        \
         const long long __a = __q / (__B * __C), __b = (__q / __C) % __B, __c = __q % __C;\n        \
         __out[__base + __a * __sA + __b * __sB + __r * __sR + __c] = __v;\n    }}\n}}\n"
    )
}

impl HostCx<'_> {
    /// The entry of a sharded device function: as on the host (the ranks
    /// agree that their entry checks passed, on the extents and on the
    /// scalar parameters), binding the symbol's whole extent and this
    /// rank's offset. A recurrence that exchanges halos in its steps is
    /// refused here, before its clauses are emitted.
    pub(super) fn shard_entry(&mut self, parts: &ShardParts) -> Result<TokenStream, Failure> {
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
            Comm::HaloStart { .. } | Comm::HaloWait { .. } | Comm::ExtendStart { .. } => Err(halo_unsupported()),
        }
    }

    /// A statement of a clause's prelude in the recurrence `r` (stored in
    /// `own`): the halo exchange of the step a [`Comm::HaloStart`] names,
    /// completed there (a [`Comm::HaloWait`] then has nothing left to do).
    /// The rows the neighbours can want (this rank's first `hi` and last
    /// `lo` block rows of the slab) are packed on the device and copied to
    /// the host, exchanged over the `World` (`dist::halo_packed`, which
    /// agrees on the ranks' status first, the packing's included), then
    /// copied to the device and written into the slab's halo rows.
    pub(super) fn device_halo(
        &mut self,
        r: &crate::ir::Recurrence,
        s: &crate::ir::Stmt,
        own: &proc_macro2::Ident,
    ) -> Result<TokenStream, Failure> {
        let (tensor, time, step, axis, lo, hi) = match s {
            crate::ir::Stmt::Comm(Comm::HaloWait { tensor }) if *tensor == r.var => return Ok(TokenStream::new()),
            crate::ir::Stmt::Comm(Comm::HaloStart { tensor, time, step, axis, lo, hi }) if *tensor == r.var => {
                (*tensor, *time, step, *axis, *lo as usize, *hi as usize)
            }
            _ => return Err(Failure::Bug("a recurrence clause with a prelude in device code".into())),
        };
        // The step, an earlier step of the sequential loop (`t - 1`).
        let Some((v, c)) = crate::ir::affine::Affine::of(step, &|_| true).and_then(|a| a.var_plus_const()) else {
            return Err(Failure::Bug("a halo exchange at a step that is not the loop's index plus a constant".into()));
        };
        let (v, c) = (self.ident(v)?, RustLit::i64_unsuffixed(c));
        let slot = match &r.window {
            Some(w) if w.axis == time => {
                let mask = usize_lit(w.slots as usize - 1);
                quote!((((#v + #c) as usize) & #mask))
            }
            _ => quote!(((#v + #c) as usize)),
        };
        let (rt, nd, dev, name) = (self.rt.clone(), self.nd.clone(), self.dev.clone(), self.fn_name.clone());
        let tname = RustLit::string(&self.f.var(tensor).source_name);
        let t = scalar_type(r.elem);
        let ct = super::kernel::c_type(r.elem);
        let (pack, _) = self.add_kernel(pack_kernel(ct), &[]);
        let (unpack, _) = self.add_kernel(unpack_kernel(ct), &[]);
        let check = self.check_status();
        let (time, axis, lo_l, hi_l) = (usize_lit(time), usize_lit(axis), usize_lit(lo), usize_lit(hi));
        // `A, B, C, sA, sB, sR` and where the slab starts.
        let mut geo_args: Vec<TokenStream> =
            [0usize, 1, 2, 3, 4, 6].iter().map(|&k| quote!(#rt::cuda::Arg::i64(__geo[#k]))).collect();
        geo_args.push(quote!(#rt::cuda::Arg::i64(__geo[5] * (#slot as i64))));
        let mut pack_args = vec![
            quote!(#own.arg()),
            quote!(#rt::cuda::Arg::i64(__rows as i64)),
            quote!(#rt::cuda::Arg::i64(__first as i64)),
            quote!(#rt::cuda::Arg::i64(#lo_l as i64)),
            quote!(#rt::cuda::Arg::i64((#lo_l + __local - __last) as i64)),
        ];
        pack_args.extend(geo_args.iter().cloned());
        let pack_launch = self.launch(&pack, quote!(__rows * __per), &quote::format_ident!("__send"), pack_args);
        let mut unpack_args = vec![
            quote!(__from_prev.arg()),
            quote!(__from_next.arg()),
            quote!(#rt::cuda::Arg::i64(#lo_l as i64)),
            quote!(#rt::cuda::Arg::i64(#hi_l as i64)),
            quote!(#rt::cuda::Arg::i64(__local as i64)),
        ];
        unpack_args.extend(geo_args);
        let unpack_launch = self.launch(&unpack, quote!((#lo_l + #hi_l) * __per), own, unpack_args);
        Ok(quote! {
            {
                // Packed on the device and copied back: a failure here is
                // this rank's status in the exchange's agreement.
                let __packed = (|| -> ::core::result::Result<_, #rt::Error> {
                    #check
                    let __geo = #rt::dist::slab_geometry(#name, #own.shape(), #time, #axis)?;
                    let __local = #own.shape()[#axis].saturating_sub(#lo_l + #hi_l);
                    let (__first, __last) = (#hi_l.min(__local), #lo_l.min(__local));
                    let (__rows, __per) = (__first + __last, (__geo[0] * __geo[1] * __geo[2]).max(0) as usize);
                    let mut __send = #rt::cuda::Tensor::<#t, #nd::Ix1>::zeros(#dev, #nd::Ix1(__rows * __per))?;
                    #pack_launch
                    ::core::result::Result::Ok((__send.to_host()?, __geo, __first, __local, __per))
                })();
                let (__prior, __host, __geo, __first, __local, __per) = match __packed {
                    ::core::result::Result::Ok((h, g, f, l, p)) => (::core::result::Result::Ok(()), h, g, f, l, p),
                    ::core::result::Result::Err(e) => (::core::result::Result::Err(e), #nd::Array1::<#t>::zeros(0), [0i64; 7], 0, 0, 0),
                };
                let (__before, __after) = #rt::dist::halo_packed(
                    __world, #name, #tname, __prior, __host.as_slice().unwrap_or(&[]), __first, (#lo_l, #hi_l, __per), &__holds,
                )?;
                let __from_prev = #rt::cuda::Tensor::from_host(#dev, &#nd::Array1::from_vec(__before))?;
                let __from_next = #rt::cuda::Tensor::from_host(#dev, &#nd::Array1::from_vec(__after))?;
                #unpack_launch
            }
        })
    }
}
