//! Recurrences on the device: a host loop along the sequential axes that
//! launches a kernel per clause and step, or one persistent kernel that
//! walks the steps itself (`PERSISTENT_MAX`, wavefronts).

use std::collections::HashSet;

use proc_macro2::{Ident, TokenStream};
use quote::quote;

use super::kernel::{c_type, KernelCx};
use super::{dim_type, scalar_type, usize_lit, Failure, Holder, HostCx};
use crate::base::dim::{Dim, DimVar};
use crate::ir::{Cover, RecIndex, Recurrence, VarId};

/// Recurrences whose clauses have at most this many points per step run
/// as one persistent kernel of one block.
pub(super) const PERSISTENT_MAX: i64 = 2048;

/// The C expression of where a recurrence clause writes along one axis:
/// a sequential loop's index, a literal, or one of the clause's own loops.
pub(super) fn clause_position(
    cx: &mut KernelCx<'_>,
    r: &Recurrence,
    clause: &crate::ir::RecClause,
    at: &RecIndex,
) -> Result<String, Failure> {
    let missing = || Failure::Bug("a clause names a missing loop".into());
    let index = match at {
        RecIndex::Lit(v) => return Ok(format!("{v}LL")),
        RecIndex::Seq(k) => r.seq.get(*k).ok_or_else(missing)?.1.index,
        RecIndex::Loop(k) => clause.loops.get(*k).ok_or_else(missing)?.index,
    };
    cx.dim(&Dim::var(DimVar(index.0)))
}

impl<'a> HostCx<'a> {
    pub(super) fn recurrence(&mut self, r: &Recurrence) -> Result<TokenStream, Failure> {
        // `opt::steps` runs on host functions only: a prelude in device
        // code is a sharded recurrence's halo exchange (`comm.rs`).
        let halo = r.clauses.iter().any(|c| !c.prelude.is_empty());
        let own = self.own_ident(r.var)?;
        if let Some(w) = &r.window {
            if w.axis >= r.extents.len() || !w.slots.is_power_of_two() {
                return Err(Failure::Bug("a window that does not fit its recurrence".into()));
            }
            self.windows.insert(r.var, (w.axis, w.slots, r.extents.clone()));
        }
        self.in_progress.insert(r.var, own.clone());
        let rank = r.extents.len();
        let mut clauses = Vec::new();
        for clause in &r.clauses {
            if clause.cover.len() != r.seq.len() || clause.at.len() != rank {
                return Err(Failure::Bug("a recurrence clause does not match its loops".into()));
            }
            let mut sites = std::mem::take(&mut self.sites);
            let mut cx = self.kernel_cx(&mut sites);
            let axes: Vec<(VarId, &Dim, Dim)> =
                clause.loops.iter().map(|l| (l.index, &l.start, l.end.sub(&l.start))).collect();
            let built = (|| {
                let (n, decls) = Self::point_loop(&mut cx, &axes)?;
                let at =
                    clause.at.iter().map(|i| clause_position(&mut cx, r, clause, i)).collect::<Result<Vec<_>, _>>()?;
                let value = cx.expr(&clause.body)?;
                // The write position, in the recurrence's own extents.
                let mut off = String::new();
                for (axis, i) in at.iter().enumerate() {
                    let i = match &r.window {
                        Some(w) if w.axis == axis => format!("(({i}) & {}LL)", w.slots - 1),
                        _ => i.clone(),
                    };
                    off = if axis == 0 { i } else { format!("({off}) * __x{axis} + {i}") };
                }
                Ok::<_, Failure>((n, decls, value, off))
            })();
            let inputs = cx.inputs.clone();
            let callees = std::mem::take(&mut cx.callees);
            drop(cx);
            self.sites = sites;
            let (n, decls, value, off) = built?;
            let (mut params, mut args) = self.inputs(&inputs, false)?;
            params.insert(0, format!("{}* __out", c_type(r.elem)));
            for axis in 1..rank {
                params.push(format!("long long __x{axis}"));
                let a = usize_lit(axis);
                let rt = &self.rt;
                args.push(quote!(#rt::cuda::Arg::i64(#own.shape()[#a] as i64)));
            }
            params.push("__ein_u64* __status".into());
            let text = format!(
                "extern \"C\" __global__ void __KERNEL__({}) {{\n    const long long __n = {n};\n    \
                 for (long long __p = (long long)blockIdx.x * blockDim.x + threadIdx.x; __p < __n; \
                 __p += (long long)gridDim.x * blockDim.x) {{\n{decls}        __out[{off}] = {value};\n    }}\n}}\n",
                params.join(", ")
            );
            let (konst, _) = self.add_kernel(text, &callees);
            // The number of points of the clause's own loops (a range that
            // ends before it starts is empty, as on the host: a clause `i
            // in 1..N - 1` with `N = 1`, or a rank's part of it).
            let mut points = quote!(1usize);
            for l in &clause.loops {
                let e = self.count(&l.end.sub(&l.start))?;
                points = quote!(#points * #e);
            }
            let launch = self.launch(&konst, points, &own, args);
            let mut conds = Vec::new();
            for (c, (_, l)) in clause.cover.iter().zip(&r.seq) {
                let i = self.ident(l.index)?;
                conds.push(match c {
                    Cover::At(v) => quote!(#i == #v),
                    Cover::Range(a, b) => {
                        let (a, b) = (self.dim(a)?, self.dim(b)?);
                        quote!((#a) <= #i && #i < (#b))
                    }
                });
            }
            let mut prelude = TokenStream::new();
            for s in &clause.prelude {
                prelude.extend(self.device_halo(r, s, &own)?);
            }
            clauses.push(quote!(if true #(&& #conds)* { #prelude #launch }));
        }
        // Steps that exchange halos run from the host, one at a time.
        let persistent = if halo { None } else { self.persistent(r, &own)? };
        self.in_progress.remove(&r.var);
        let clear = match (&r.window, r.clear_steps, r.seq.first()) {
            (Some(w), true, Some((_, l0))) => Some(self.clear_slab(r, w.axis, w.slots, l0.index, &own)?),
            _ => None,
        };
        let mut body = quote!(#(#clauses)*);
        for (k, (_, l)) in r.seq.iter().enumerate().rev() {
            let i = self.ident(l.index)?;
            let (start, end) = (self.dim(&l.start)?, self.dim(&l.end)?);
            let clear = if k == 0 { clear.clone() } else { None };
            body = quote! {
                let mut #i: i64 = #start;
                let __end = #end;
                while #i < __end {
                    #clear
                    #body
                    #i += 1;
                }
            };
        }
        let mut extents = Vec::new();
        for (axis, e) in r.extents.iter().enumerate() {
            extents.push(match &r.window {
                Some(w) if w.axis == axis => {
                    let slots = usize_lit(w.slots as usize);
                    quote!(#slots)
                }
                _ => self.extent(e)?,
            });
        }
        let (rt, nd, dev) = (&self.rt, &self.nd, &self.dev);
        let t = scalar_type(r.elem);
        let d = dim_type(rank, nd)?;
        let id = self.ident(r.var)?;
        self.holders.insert(r.var, Holder::Owned(own.clone()));
        let run = match persistent {
            Some((konst, args, small)) => {
                let launch = self.launch(&konst, quote!(1usize), &own, args);
                quote!(if #small { #launch } else { #body })
            }
            None => body,
        };
        Ok(quote! {
            let mut #own = #rt::cuda::Tensor::<#t, #d>::zeros(#dev, #nd::IntoDimension::into_dimension([#(#extents),*]))?;
            { #run }
            let #id = &#own;
        })
    }

    /// The whole recurrence as one kernel of one block, for steps small
    /// enough that a launch per step would cost more than the step: the
    /// block walks the sequential loops, its threads share each clause's
    /// points, and `__syncthreads()` orders the steps. The kernel, its
    /// arguments, and the host condition (every clause has at most
    /// `PERSISTENT_MAX` points); `None` when the clauses' extents depend on
    /// the sequential loops or the window is cleared each step. A 2-D
    /// dynamic program that may run as a wavefront walks anti-diagonals
    /// instead, a cell per thread, whatever its size.
    pub(super) fn persistent(
        &mut self,
        r: &Recurrence,
        own: &Ident,
    ) -> Result<Option<(Ident, Vec<TokenStream>, TokenStream)>, Failure> {
        let seq_vars: HashSet<u32> = r.seq.iter().map(|(_, l)| l.index.0).collect();
        let depends = |d: &Dim| d.vars().iter().any(|v| seq_vars.contains(&v.0));
        if r.clear_steps || r.clauses.iter().any(|c| c.loops.iter().any(|l| depends(&l.start) || depends(&l.end))) {
            return Ok(None);
        }
        let rank = r.extents.len();
        // A 2-D dynamic program whose reads only look back: the block walks
        // its anti-diagonals, each cell of one diagonal on its own thread
        // (not with a circular buffer, whose slots cells of one diagonal
        // may share).
        let wavefront = r.wavefront
            && r.window.is_none()
            && r.seq.len() == 2
            && !depends(&r.seq[1].1.start)
            && !depends(&r.seq[1].1.end)
            && !depends(&r.seq[0].1.start)
            && !depends(&r.seq[0].1.end);
        let mut sites = std::mem::take(&mut self.sites);
        let mut cx = self.kernel_cx(&mut sites);
        let built = (|| {
            let mut text = String::new();
            let mut indent = String::from("    ");
            if wavefront {
                let (l0, l1) = (&r.seq[0].1, &r.seq[1].1);
                let (s0, e0, s1, e1) = (cx.dim(&l0.start)?, cx.dim(&l0.end)?, cx.dim(&l1.start)?, cx.dim(&l1.end)?);
                let (i, j) = (cx.define(l0.index)?, cx.define(l1.index)?);
                text.push_str(&format!(
                    "    const long long __n0 = {e0} - {s0}, __n1 = {e1} - {s1};\n    \
                     for (long long __d = 0; __n0 > 0 && __n1 > 0 && __d < __n0 + __n1 - 1; ++__d) {{\n        \
                     const long long __lo = __d - (__n1 - 1) > 0 ? __d - (__n1 - 1) : 0;\n        \
                     const long long __hi = __d < __n0 - 1 ? __d : __n0 - 1;\n        \
                     for (long long __c = __lo + threadIdx.x; __c <= __hi; __c += blockDim.x) {{\n            \
                     const long long {i} = {s0} + __c;\n            const long long {j} = {s1} + (__d - __c);\n"
                ));
                indent = "            ".to_string();
            } else {
                for (_, l) in &r.seq {
                    let (start, end) = (cx.dim(&l.start)?, cx.dim(&l.end)?);
                    let i = cx.define(l.index)?;
                    text.push_str(&format!("{indent}for (long long {i} = {start}; {i} < {end}; ++{i}) {{\n"));
                    indent.push_str("    ");
                }
            }
            for clause in &r.clauses {
                let mut conds = Vec::new();
                for (c, (_, l)) in clause.cover.iter().zip(&r.seq) {
                    let i = cx.dim(&Dim::var(DimVar(l.index.0)))?;
                    conds.push(match c {
                        Cover::At(v) => format!("{i} == {v}LL"),
                        Cover::Range(a, b) => format!("{} <= {i} && {i} < {}", cx.dim(a)?, cx.dim(b)?),
                    });
                }
                let axes: Vec<(VarId, &Dim, Dim)> =
                    clause.loops.iter().map(|l| (l.index, &l.start, l.end.sub(&l.start))).collect();
                let (n, decls) = Self::point_loop(&mut cx, &axes)?;
                let mut off = String::new();
                for (axis, i) in clause.at.iter().enumerate() {
                    let i = clause_position(&mut cx, r, clause, i)?;
                    let i = match &r.window {
                        Some(w) if w.axis == axis => format!("(({i}) & {}LL)", w.slots - 1),
                        _ => i,
                    };
                    off = if axis == 0 { i } else { format!("({off}) * __x{axis} + {i}") };
                }
                let value = cx.expr(&clause.body)?;
                let decls: String = decls.lines().map(|l| format!("{indent}        {}\n", l.trim_start())).collect();
                let cond = if conds.is_empty() { "true".to_string() } else { conds.join(" && ") };
                if wavefront {
                    // One cell per thread: the clause's own points in order.
                    text.push_str(&format!(
                        "{indent}if ({cond}) {{\n{indent}    for (long long __p = 0; __p < {n}; ++__p) {{\n\
                         {decls}{indent}        __out[{off}] = {value};\n{indent}    }}\n{indent}}}\n"
                    ));
                } else {
                    text.push_str(&format!(
                        "{indent}if ({cond}) {{\n{indent}    for (long long __p = threadIdx.x; __p < {n}; __p += blockDim.x) {{\n\
                         {decls}{indent}        __out[{off}] = {value};\n{indent}    }}\n{indent}    __syncthreads();\n{indent}}}\n"
                    ));
                }
            }
            if wavefront {
                text.push_str("        }\n        __syncthreads();\n    }\n");
            } else {
                for _ in &r.seq {
                    indent.truncate(indent.len() - 4);
                    text.push_str(&format!("{indent}}}\n"));
                }
            }
            Ok::<_, Failure>(text)
        })();
        let inputs = cx.inputs.clone();
        let callees = std::mem::take(&mut cx.callees);
        drop(cx);
        self.sites = sites;
        let text = built?;
        let (mut params, mut args) = self.inputs(&inputs, false)?;
        params.insert(0, format!("{}* __out", c_type(r.elem)));
        for axis in 1..rank {
            params.push(format!("long long __x{axis}"));
            let (a, rt) = (usize_lit(axis), &self.rt);
            args.push(quote!(#rt::cuda::Arg::i64(#own.shape()[#a] as i64)));
        }
        params.push("__ein_u64* __status".into());
        let text = format!("extern \"C\" __global__ void __KERNEL__({}) {{\n{text}}}\n", params.join(", "));
        let (konst, _) = self.add_kernel(text, &callees);
        let mut small = quote!(true);
        for clause in r.clauses.iter().filter(|_| !wavefront) {
            let mut points = quote!(1i64);
            for l in &clause.loops {
                let e = self.dim(&l.end.sub(&l.start))?;
                points = quote!(#points * (#e).max(0));
            }
            small = quote!(#small && #points <= #PERSISTENT_MAX);
        }
        Ok(Some((konst, args, small)))
    }

    /// Zeroes the window's slot of the current step (index variable
    /// `step`) before the clauses write it.
    pub(super) fn clear_slab(
        &mut self,
        r: &Recurrence,
        axis: usize,
        slots: u64,
        step: VarId,
        own: &Ident,
    ) -> Result<TokenStream, Failure> {
        let t = c_type(r.elem);
        let text = format!(
            "extern \"C\" __global__ void __KERNEL__({t}* __out, long long __outer, long long __along, long long __inner, \
             long long __slot, __ein_u64* __status) {{\n    const long long __n = __outer * __inner;\n    \
             for (long long __p = (long long)blockIdx.x * blockDim.x + threadIdx.x; __p < __n; \
             __p += (long long)gridDim.x * blockDim.x) {{\n        \
             __out[((__p / __inner) * __along + __slot) * __inner + __p % __inner] = ({t})0;\n    }}\n}}\n"
        );
        let (konst, _) = self.add_kernel(text, &[]);
        let rt = &self.rt;
        let i = self.ident(step)?;
        let a = usize_lit(axis);
        let mask = slots as i64 - 1;
        let args = vec![
            quote!(#rt::cuda::Arg::i64(#own.shape()[..#a].iter().product::<usize>() as i64)),
            quote!(#rt::cuda::Arg::i64(#own.shape()[#a] as i64)),
            quote!(#rt::cuda::Arg::i64(#own.shape()[#a + 1..].iter().product::<usize>() as i64)),
            quote!(#rt::cuda::Arg::i64(#i & #mask)),
        ];
        let points = quote!(#own.len() / #own.shape()[#a].max(1));
        Ok(self.launch(&konst, points, own, args))
    }
}
