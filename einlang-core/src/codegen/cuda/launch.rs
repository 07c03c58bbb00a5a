//! How the host launches a definition's kernels: a thread, warp or
//! block per point (`Per`, chosen at run time by `Device::team_for`),
//! four-wide twins and the conditions under which they run, row kernels,
//! and cuBLAS for GEMM-shaped contractions.

use std::collections::HashSet;
use std::fmt::Write as _;

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use super::kernel::{self, c_type, Input, KernelCx};
use super::templates::grid_stride;
use super::{dim_type, scalar_type, usize_lit, Failure, Holder, HostCx, KernelText};
use crate::base::dim::Dim;
use crate::base::scalar::ScalarKind;
use crate::ir::{Expr, ExprKind, FuncId, Function, Gemm, Repr, Rows, Stmt, TensorDef, VarId};

/// Threads per block of the grid-stride kernels.
pub(super) const BLOCK: u32 = 256;

/// The emitted pieces of a definition's kernel (see `HostCx::def_kernel`).
pub(super) struct DefKernel {
    pub(super) n: String,
    pub(super) decls: String,
    pub(super) value: String,
    pub(super) inputs: std::collections::BTreeSet<Input>,
    pub(super) callees: Vec<(FuncId, String)>,
    /// Warp and block kernels: the shared reductions, and their loops'
    /// extents.
    pub(super) prelude: String,
    pub(super) lens: Vec<Vec<Dim>>,
    /// A four-wide kernel's needs (see `kernel::Wide`).
    pub(super) wide: Option<kernel::Wide>,
}

/// How a definition's kernel maps its points to threads.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Per {
    /// A thread per point (grid-stride).
    Thread,
    /// A warp per point, its lanes sharing the reductions.
    Warp,
    /// A block per point, its threads sharing the reductions.
    Block,
    /// A thread per flat position, reads by position (`flat_reads`).
    Flat,
}

impl Per {
    /// The team sharing a point's reductions (`None`: a thread alone).
    pub(super) fn team(self) -> Option<kernel::Team> {
        match self {
            Per::Warp => Some(kernel::Team::Warp),
            Per::Block => Some(kernel::Team::Block),
            Per::Thread | Per::Flat => None,
        }
    }
}

/// The kernels of a definition (or rows) whose reductions a warp or a
/// block may share, and how long those are (see `HostCx::launch_teams`).
pub(super) struct Teams {
    pub(super) warp: Ident,
    pub(super) block: Ident,
    /// The longest reduction (or row), an `i64` expression.
    pub(super) longest: TokenStream,
    /// Their four-wide twins (warp, block) and the condition (a `bool`
    /// expression) under which they may run.
    pub(super) wide: Option<(Ident, Ident, TokenStream)>,
}

/// The kernel of a `Stmt::Rows` (see `HostCx::rows_kernel`).
pub(super) struct RowsKernel {
    pub(super) text: String,
    pub(super) inputs: std::collections::BTreeSet<Input>,
    pub(super) callees: Vec<(FuncId, String)>,
    /// The extents of the prelude's block reductions' loops.
    pub(super) lens: Vec<Vec<Dim>>,
    /// A four-wide kernel's needs (see `kernel::Wide`).
    pub(super) wide: Option<kernel::Wide>,
}

impl<'a> HostCx<'a> {
    /// Adds a kernel; its constant's identifier.
    pub(super) fn add_kernel(&mut self, text: String, callees: &[(FuncId, String)]) -> (Ident, String) {
        let i = self.kernels.len();
        let name = format!("{}_k{i}", self.kernel_prefix);
        let body = text.replace("__KERNEL__", &name);
        let source = kernel::translation_unit(&name, &self.f.name, callees, &body);
        self.kernels.push(KernelText { name: name.clone(), source });
        (format_ident!("__K{}", i), name)
    }

    /// The C parameters and the host arguments for a kernel's inputs.
    pub(super) fn inputs(
        &self,
        inputs: &std::collections::BTreeSet<Input>,
        restrict: bool,
    ) -> Result<(Vec<String>, Vec<TokenStream>), Failure> {
        let rt = &self.rt;
        let mut params = Vec::new();
        let mut args = Vec::new();
        for input in inputs {
            match input {
                Input::Tensor(v) => {
                    let (k, rank) = match self.f.var(*v).ty {
                        Repr::Tensor(k, rank) => (k, rank),
                        _ => return Err(Failure::Bug("a tensor input of scalar type".into())),
                    };
                    let c = kernel::c_name(&self.f.var(*v).name);
                    let r = if restrict { " __restrict__" } else { "" };
                    params.push(format!("const {}*{r} {c}", c_type(k)));
                    let t = self.tensor_ref(*v)?;
                    args.push(quote!(#t.arg()));
                    for axis in 0..rank {
                        params.push(format!("long long __d{axis}_{c}"));
                        let a = usize_lit(axis);
                        args.push(quote!(#rt::cuda::Arg::i64(#t.shape()[#a] as i64)));
                    }
                }
                Input::Scalar(v) => {
                    let k = self.kind(*v)?;
                    params.push(format!("{} {}", c_type(k), kernel::c_name(&self.f.var(*v).name)));
                    let (id, m) = (self.ident(*v)?, format_ident!("{}", k.name()));
                    args.push(quote!(#rt::cuda::Arg::#m(#id)));
                }
            }
        }
        Ok((params, args))
    }

    /// Sets up a launch over `points` (a `usize` expression) writing through
    /// `out` (an `__own_*` tensor), then runs `call` (which reads
    /// `__points` and `__args`) when there are points.
    pub(super) fn launch_with(
        &self,
        points: TokenStream,
        out: &Ident,
        args: Vec<TokenStream>,
        call: TokenStream,
    ) -> TokenStream {
        quote! {
            let __points: usize = #points;
            if __points > 0 {
                let __out = #out.arg_mut();
                let __args = [__out, #(#args,)* __status.arg()];
                // SAFETY: the kernels were generated with these parameters;
                // the extents passed are the tensors' own.
                #call
            }
        }
    }

    /// Launching `kernel` (a `&KernelInfo` expression) with a thread per
    /// point.
    pub(super) fn per_thread(&self, kernel: TokenStream) -> TokenStream {
        let (dev, block) = (&self.dev, BLOCK);
        quote!(unsafe { #dev.launch(#kernel, #dev.grid_for(__points as u64, #block), #block, &__args) }?;)
    }

    /// A launch of kernel `konst` over `points` (a `usize` expression),
    /// writing through `out` (an `__own_*` tensor).
    pub(super) fn launch(
        &self,
        konst: &Ident,
        points: TokenStream,
        out: &Ident,
        args: Vec<TokenStream>,
    ) -> TokenStream {
        let call = self.per_thread(quote!(&#konst));
        self.launch_with(points, out, args, call)
    }

    /// A launch of `konst` (a thread per point), or of `teams`' warp or
    /// block per point, as `Device::team_for` picks (all take the same
    /// arguments).
    pub(super) fn launch_teams(
        &self,
        konst: &Ident,
        teams: Option<Teams>,
        points: TokenStream,
        out: &Ident,
        args: Vec<TokenStream>,
    ) -> TokenStream {
        let Some(Teams { warp, block: bkonst, longest, wide }) = teams else {
            return self.launch(konst, points, out, args);
        };
        let (rt, dev, block) = (&self.rt, &self.dev, BLOCK);
        let threads = self.per_thread(quote!(&#konst));
        let (warp, bkonst) = match wide {
            Some((wwarp, wblock, cond)) => {
                (quote!(if #cond { &#wwarp } else { &#warp }), quote!(if #cond { &#wblock } else { &#bkonst }))
            }
            None => (quote!(&#warp), quote!(&#bkonst)),
        };
        let call = quote! {
            match #dev.team_for(__points as u64, #longest) {
                #rt::cuda::Team::Block(__threads) => {
                    unsafe { #dev.launch(#bkonst, #dev.grid_for(__points as u64 * __threads as u64, __threads), __threads, &__args) }?;
                }
                #rt::cuda::Team::Warp => {
                    unsafe { #dev.launch(#warp, #dev.grid_for(__points as u64 * 32, #block), #block, &__args) }?;
                }
                #rt::cuda::Team::Thread => {
                    #threads
                }
            }
        };
        self.launch_with(points, out, args, call)
    }

    /// When four-wide kernels with these needs may run (a `bool`
    /// expression): every four-wide loop's length and every tensor read
    /// four-wide's last extent a multiple of four, that extent at least the
    /// loop's length, those tensors and the output (`out`) 16-byte aligned.
    pub(super) fn wide_condition<'k>(
        &self,
        needs: impl Iterator<Item = &'k kernel::Wide>,
        out: &Ident,
    ) -> Result<TokenStream, Failure> {
        let mut cond = quote!(#out.arg().0 % 16 == 0);
        for w in needs {
            for d in &w.lens {
                let d = self.dim(d)?;
                cond = quote!(#cond && (#d) % 4 == 0);
            }
            for (v, at) in &w.reads {
                let t = self.tensor_ref(*v)?;
                let len =
                    self.dim(w.lens.get(*at).ok_or_else(|| Failure::Bug("a four-wide read outside its loop".into()))?)?;
                cond = quote!(#cond && #t.shape().last().is_some_and(|&n| n % 4 == 0 && n as i64 >= #len) && #t.arg().0 % 16 == 0);
            }
        }
        Ok(cond)
    }

    /// The longest of the loop nests whose extents are `lens` (an `i64`
    /// expression).
    pub(super) fn longest(&self, lens: &[Vec<Dim>]) -> Result<TokenStream, Failure> {
        let mut longest = quote!(0i64);
        for lens in lens {
            let mut len = quote!(1i64);
            for d in lens {
                let d = self.dim(d)?;
                len = quote!(#len * (#d));
            }
            longest = quote!(::core::cmp::max(#longest, #len));
        }
        Ok(longest)
    }

    /// A grid-stride loop over the points of `axes` (index variable, start,
    /// extent), innermost last: the C text declaring the index variables.
    pub(super) fn point_loop(cx: &mut KernelCx<'_>, axes: &[(VarId, &Dim, Dim)]) -> Result<(String, String), Failure> {
        Self::points_of(cx, axes, "__p")
    }

    /// The points of `axes` from the flat position `counter`: their number
    /// (C) and the C text declaring the index variables.
    pub(super) fn points_of(
        cx: &mut KernelCx<'_>,
        axes: &[(VarId, &Dim, Dim)],
        counter: &str,
    ) -> Result<(String, String), Failure> {
        let mut extents = Vec::new();
        for (_, _, extent) in axes {
            extents.push(cx.dim(extent)?);
        }
        let n = if extents.is_empty() { "1LL".to_string() } else { extents.join(" * ") };
        let mut decls = String::new();
        if !axes.is_empty() {
            decls.push_str(&format!("        long long __r = {counter};\n"));
        }
        for (i, (index, start, _)) in axes.iter().enumerate().rev() {
            let start = cx.dim(start)?;
            let name = cx.define(*index)?;
            if i == 0 {
                decls.push_str(&format!("        const long long {name} = {start} + __r;\n"));
            } else {
                let e = &extents[i];
                decls.push_str(&format!("        const long long {name} = {start} + __ein_split(&__r, {e});\n"));
            }
        }
        Ok((n, decls))
    }

    pub(super) fn tensor_def(&mut self, def: &TensorDef) -> Result<TokenStream, Failure> {
        let axes: Vec<(VarId, &Dim, Dim)> = def.axes.iter().map(|a| (a.index, &a.start, a.extent.clone())).collect();
        // One thread per point, and (when the body has reductions outside
        // every binder) one warp and one block per point, whose threads
        // share each reduction; the host picks by the reductions' length
        // and the number of points (`Device::team_for`).
        let threads = self.def_kernel(def, &axes, Per::Thread, false)?;
        let axis_vars: HashSet<u32> = def.axes.iter().map(|a| a.index.0).collect();
        let shares = |k: &DefKernel| {
            !k.lens.is_empty() && k.lens.iter().flatten().all(|d| d.vars().iter().all(|v| !axis_vars.contains(&v.0)))
        };
        let blocks = self.def_kernel(def, &axes, Per::Block, false)?.filter(|k| shares(k));
        let warps = match blocks {
            Some(_) => self.def_kernel(def, &axes, Per::Warp, false)?,
            None => None,
        };
        // Their four-wide twins (not in `checked` mode), when they have a
        // four-wide loop.
        let has_loops = |k: &DefKernel| kernel::Wide::has_loops(k.wide.as_ref());
        let wide = match (&warps, &blocks) {
            (Some(_), Some(_)) if !self.all_checked => {
                let w = self.def_kernel(def, &axes, Per::Warp, true)?.filter(|k| has_loops(k));
                let b = self.def_kernel(def, &axes, Per::Block, true)?.filter(|k| has_loops(k));
                w.zip(b)
            }
            _ => None,
        };
        // Without shared reductions, a thread per four consecutive points of
        // the innermost axis (four-wide loads and a four-wide store).
        let quads = match blocks {
            None => self.wide_points(def, &axes)?,
            Some(_) => None,
        };
        let mut inputs = threads.as_ref().map(|k| k.inputs.clone()).unwrap_or_default();
        for k in blocks.iter().chain(&warps).chain(wide.iter().flat_map(|(w, b)| [w, b])).chain(&quads) {
            inputs.extend(k.inputs.iter().cloned());
        }
        // Elementwise over tensors of the output's shape: a kernel over flat
        // positions (no index arithmetic), chosen when the shapes agree.
        // (Not in `checked` mode, where every read is checked by index.)
        let flat = match (&blocks, flat_reads(def, self.f)) {
            (None, Some(same)) if !self.all_checked => {
                self.def_kernel(def, &axes, Per::Flat, false)?.map(|k| (k, same))
            }
            _ => None,
        };
        if let Some((k, _)) = &flat {
            inputs.extend(k.inputs.iter().cloned());
        }
        let threads = threads.ok_or_else(|| Failure::Bug("a definition without a kernel".into()))?;
        let (mut params, args) = self.inputs(&inputs, true)?;
        params.insert(0, format!("{}* __restrict__ __out", c_type(def.elem)));
        params.push("__ein_u64* __status".into());
        let params = params.join(", ");
        let (konst, _) = self.add_kernel(grid_stride(&params, &threads), &threads.callees);
        let own = self.own_ident(def.var)?;
        let teams = match (warps, blocks) {
            (Some(w), Some(b)) => {
                let mut shared = |k: &DefKernel, per: Per, team: kernel::Team| {
                    let (n, decls, prelude, value) = (&k.n, &k.decls, &k.prelude, &k.value);
                    let (points, writer) = (per.points_loop(), team.rank_and_size().0);
                    let text = format!(
                        "extern \"C\" __global__ void __KERNEL__({params}) {{\n    const long long __n = {n};\n    \
                         for (long long {points}) {{\n{decls}{prelude}        \
                         if ({writer} == 0) {{\n            __out[__p] = {value};\n        }}\n    }}\n}}\n"
                    );
                    self.add_kernel(text, &k.callees).0
                };
                let (warp, block) =
                    (shared(&w, Per::Warp, kernel::Team::Warp), shared(&b, Per::Block, kernel::Team::Block));
                let wide = match &wide {
                    Some((ww, wb)) => {
                        let (wwarp, wblock) =
                            (shared(ww, Per::Warp, kernel::Team::Warp), shared(wb, Per::Block, kernel::Team::Block));
                        let needs = [ww, wb].into_iter().filter_map(|k| k.wide.as_ref());
                        Some((wwarp, wblock, self.wide_condition(needs, &own)?))
                    }
                    None => None,
                };
                Some(Teams { warp, block, longest: self.longest(&b.lens)?, wide })
            }
            _ => None,
        };
        let extents = def.axes.iter().map(|a| self.extent(&a.extent)).collect::<Result<Vec<_>, _>>()?;
        // A thread's kernel: the first of these whose condition holds, else
        // the indexed one: the flat kernel when every tensor it reads by
        // position has the output's shape, the four-wide one when its
        // extents allow. A thread of the flat kernel moves one element of
        // each tensor: four bytes for `f32`, near the copy bandwidth, but
        // two for the 16-bit formats (0.61x of it on an H200, `2x + 1` in
        // `f16`), whose four-wide kernel (eight-byte loads and stores)
        // goes first.
        // (The four-wide kernel is added first, so that the kernels keep
        // their numbers.)
        let mut candidates = Vec::new();
        if let (Some(q), Some(vec4)) = (&quads, kernel::vec4_type(def.elem)) {
            let text = format!(
                "extern \"C\" __global__ void __KERNEL__({params}) {{\n    const long long __n4 = ({}) / 4;\n    \
                 #pragma unroll 4\n    for (long long __p4 = (long long)blockIdx.x * blockDim.x + threadIdx.x; __p4 < __n4; \
                 __p4 += (long long)gridDim.x * blockDim.x) {{\n        const long long __p = __p4 * 4;\n{}        {vec4} __o;\n{}        \
                 *({vec4}*)(__out + __p) = __o;\n    }}\n}}\n",
                q.n, q.decls, q.value
            );
            let (qkonst, _) = self.add_kernel(text, &q.callees);
            candidates.push((qkonst, self.wide_condition(q.wide.iter(), &own)?));
        }
        if let Some((k, same)) = flat {
            let (fkonst, _) = self.add_kernel(grid_stride(&params, &k), &k.callees);
            let mut cond = quote!(true);
            for v in same {
                let t = self.tensor_ref(v)?;
                cond = quote!(#cond && #t.shape() == #own.shape());
            }
            let first = if def.elem == ScalarKind::F32 { 0 } else { candidates.len() };
            candidates.insert(first, (fkonst, cond));
        }
        let launch = if teams.is_none() {
            let mut kernel = quote!(&#konst);
            for (k, cond) in candidates.iter().rev() {
                kernel = quote!(if #cond { &#k } else { #kernel });
            }
            let call = self.per_thread(kernel);
            self.launch_with(quote!(#own.len()), &own, args, call)
        } else {
            self.launch_teams(&konst, teams, quote!(#own.len()), &own, args)
        };
        self.owned_output(def, &own, &extents, launch)
    }

    /// A row-fused definition: one kernel whose threads (or, for long
    /// rows, whose warps or blocks) each take a row: the prelude's values
    /// (reductions shared by the warp or block), its row tensors as
    /// lambdas recomputed where read, then the row's points.
    pub(super) fn rows(&mut self, rows: &Rows) -> Result<TokenStream, Failure> {
        let def = &rows.def;
        let threads = self.rows_kernel(rows, Per::Thread, false)?;
        let warps = self.rows_kernel(rows, Per::Warp, false)?;
        let blocks = self.rows_kernel(rows, Per::Block, false)?;
        // Their four-wide twins (not in `checked` mode, where every read is
        // checked), when they have a four-wide loop.
        let (wide_warps, wide_blocks) = if self.all_checked {
            (None, None)
        } else {
            let w = self.rows_kernel(rows, Per::Warp, true)?;
            let b = self.rows_kernel(rows, Per::Block, true)?;
            if kernel::Wide::has_loops(w.wide.as_ref()) && kernel::Wide::has_loops(b.wide.as_ref()) {
                (Some(w), Some(b))
            } else {
                (None, None)
            }
        };
        let mut inputs = threads.inputs.clone();
        for k in [&warps, &blocks].into_iter().chain(&wide_warps).chain(&wide_blocks) {
            inputs.extend(k.inputs.iter().cloned());
        }
        let (mut params, args) = self.inputs(&inputs, true)?;
        params.insert(0, format!("{}* __restrict__ __out", c_type(def.elem)));
        params.push("__ein_u64* __status".into());
        let params = params.join(", ");
        let mut add = |k: &RowsKernel| self.add_kernel(k.text.replace("__PARAMS__", &params), &k.callees).0;
        let (konst, warp, block) = (add(&threads), add(&warps), add(&blocks));
        let wide = match (&wide_warps, &wide_blocks) {
            (Some(w), Some(b)) => Some((add(w), add(b))),
            _ => None,
        };
        // A warp or a block per row by the length of the row and of the
        // prelude's reductions.
        let row: Vec<Dim> = def.axes[1..].iter().map(|a| a.extent.clone()).collect();
        let longest = self.longest(&[blocks.lens.as_slice(), &[row]].concat())?;
        let own = self.own_ident(def.var)?;
        let wide = match wide {
            Some((warp, block)) => {
                let needs = wide_warps.iter().chain(&wide_blocks).filter_map(|k| k.wide.as_ref());
                Some((warp, block, self.wide_condition(needs, &own)?))
            }
            None => None,
        };
        let extents = def.axes.iter().map(|a| self.extent(&a.extent)).collect::<Result<Vec<_>, _>>()?;
        let first = self.dim(&def.axes[0].extent)?;
        let teams = Teams { warp, block, longest, wide };
        let launch = self.launch_teams(&konst, Some(teams), quote!((#first) as usize), &own, args);
        self.owned_output(def, &own, &extents, launch)
    }

    /// `def`'s fresh device tensor `own` of `extents`, `launch` (kernels
    /// that write every one of its points), and `def`'s variable bound to
    /// it.
    fn owned_output(
        &mut self,
        def: &TensorDef,
        own: &Ident,
        extents: &[TokenStream],
        launch: TokenStream,
    ) -> Result<TokenStream, Failure> {
        let (rt, nd, dev) = (&self.rt, &self.nd, &self.dev);
        let t = scalar_type(def.elem);
        let d = dim_type(def.axes.len(), nd)?;
        let id = self.ident(def.var)?;
        self.holders.insert(def.var, Holder::Owned(own.clone()));
        Ok(quote! {
            // SAFETY: the launched kernels write every point.
            let mut #own = unsafe { #rt::cuda::Tensor::<#t, #d>::uninit(#dev, #nd::IntoDimension::into_dimension([#(#extents),*])) }?;
            #launch
            let #id = &#own;
        })
    }

    /// The kernel of `rows` (its parameters left as `__PARAMS__`): one
    /// thread, warp or block per row (`per`).
    pub(super) fn rows_kernel(&mut self, rows: &Rows, per: Per, wide: bool) -> Result<RowsKernel, Failure> {
        let def = &rows.def;
        let mut sites = std::mem::take(&mut self.sites);
        let mut cx = self.kernel_cx(&mut sites);
        if let Some(team) = per.team() {
            cx.share(team, wide);
        }
        let built = (|| {
            let first = &def.axes[0];
            let n_rows = cx.dim(&first.extent)?;
            let start = cx.dim(&first.start)?;
            let n = cx.define(first.index)?;
            let mut prelude = format!("        const long long {n} = {start} + __p;\n");
            let mut lens = Vec::new();
            for s in &rows.prelude {
                match s {
                    Stmt::Let { var, value } => {
                        let v = cx.expr(value)?;
                        if let Some((shared, l)) = &mut cx.block {
                            prelude.push_str(&std::mem::take(shared));
                            lens.append(l);
                        }
                        let name = cx.define(*var)?;
                        let _ = writeln!(
                            prelude,
                            "        const {} {name} = {v};",
                            c_type(kernel::scalar_kind(&value.ty)?)
                        );
                    }
                    Stmt::Tensor(t) => prelude.push_str(&cx.row_fn(t)?),
                    _ => return Err(Failure::Bug("a row prelude statement other than `let` or a definition".into())),
                }
            }
            // The row's points, each computed by one thread.
            cx.block = None;
            let rows_loop = per.points_loop();
            let head = format!(
                "extern \"C\" __global__ void __KERNEL__(__PARAMS__) {{\n    const long long __n = {n_rows};\n    \
                 for (long long {rows_loop}) {{\n{prelude}"
            );
            let text = match (&def.axes[1..], per.team(), kernel::vec4_type(def.elem)) {
                // Four consecutive points of a row per thread and step,
                // stored four-wide.
                ([a], Some(team), Some(vec4)) if cx.wide.is_some() && a.start.as_constant() == Some(0) => {
                    let points = cx.dim(&a.extent)?;
                    let (rank, size) = team.rank_and_size();
                    let lanes = cx.wide_values(a.index, &a.extent, &def.body)?;
                    format!(
                        "{head}        const long long __m = {points};\n        #pragma unroll 4\n        \
                         for (long long __q4 = {rank}; __q4 < __m / 4; __q4 += {size}) {{\n            \
                         const long long __q = __q4 * 4;\n            {vec4} __o;\n{lanes}            \
                         *({vec4}*)(__out + __p * __m + __q) = __o;\n        }}\n    }}\n}}\n"
                    )
                }
                _ => {
                    let inner: Vec<(VarId, &Dim, Dim)> =
                        def.axes[1..].iter().map(|a| (a.index, &a.start, a.extent.clone())).collect();
                    let (points, decls) = Self::points_of(&mut cx, &inner, "__q")?;
                    let decls: String = decls.lines().map(|l| format!("    {l}\n")).collect();
                    let value = cx.expr(&def.body)?;
                    let points_loop = match per.team().map(kernel::Team::rank_and_size) {
                        Some((rank, size)) => format!("__q = {rank}; __q < __m; __q += {size}"),
                        None => "__q = 0; __q < __m; ++__q".to_string(),
                    };
                    format!(
                        "{head}        const long long __m = {points};\n        \
                         #pragma unroll 4\n        for (long long {points_loop}) {{\n{decls}            __out[__p * __m + __q] = {value};\n        }}\n    }}\n}}\n"
                    )
                }
            };
            Ok::<_, Failure>((text, lens))
        })();
        let inputs = cx.inputs.clone();
        let callees = std::mem::take(&mut cx.callees);
        let wide = cx.wide.take();
        drop(cx);
        self.sites = sites;
        let (text, lens) = built?;
        Ok(RowsKernel { text, inputs, callees, lens, wide })
    }

    /// The pieces of a definition's four-wide kernel, whose threads each
    /// take four consecutive points of its innermost axis (a multiple of
    /// four long, starting at 0): `decls` the position's other indices and
    /// the lanes' base `__q` from `__p4`, `value` the lanes setting `__o`.
    /// `None` for other definitions, those of `f64` or integers (`f32`
    /// and the 16-bit formats have one, `kernel::vec4_type`), and in
    /// `checked` mode.
    pub(super) fn wide_points(
        &mut self,
        def: &TensorDef,
        axes: &[(VarId, &Dim, Dim)],
    ) -> Result<Option<DefKernel>, Failure> {
        let Some(((last, start, extent), outer)) = axes.split_last() else { return Ok(None) };
        if self.all_checked || kernel::vec4_type(def.elem).is_none() || start.as_constant() != Some(0) {
            return Ok(None);
        }
        let mut sites = std::mem::take(&mut self.sites);
        let mut cx = self.kernel_cx(&mut sites);
        cx.wide = Some(kernel::Wide::default());
        let built = (|| {
            let m = cx.dim(extent)?;
            let (n_outer, outer_decls) = Self::points_of(&mut cx, outer, "__rr")?;
            let decls = format!("        long long __rr = __p4;\n        const long long __q = __ein_split(&__rr, ({m}) / 4) * 4;\n{outer_decls}");
            let lanes = cx.wide_values(*last, extent, &def.body)?;
            Ok::<_, Failure>((format!("({n_outer}) * ({m})"), decls, lanes))
        })();
        let inputs = cx.inputs.clone();
        let callees = std::mem::take(&mut cx.callees);
        let wide = cx.wide.take();
        drop(cx);
        self.sites = sites;
        let (n, decls, value) = built?;
        Ok(Some(DefKernel { n, decls, value, inputs, callees, prelude: String::new(), lens: Vec::new(), wide }))
    }

    /// The pieces of a definition's kernel: one thread per point, one block
    /// per point (`None` when the body has no reduction the block can
    /// share), or one thread per flat position (see `flat_reads`).
    pub(super) fn def_kernel(
        &mut self,
        def: &TensorDef,
        axes: &[(VarId, &Dim, Dim)],
        per: Per,
        wide: bool,
    ) -> Result<Option<DefKernel>, Failure> {
        let mut sites = std::mem::take(&mut self.sites);
        let mut cx = self.kernel_cx(&mut sites);
        if let Some(team) = per.team() {
            cx.share(team, wide);
        }
        if per == Per::Flat {
            cx.flat = Some(axes.iter().map(|a| a.0).collect());
        }
        let built = (|| {
            let (n, decls) = Self::point_loop(&mut cx, axes)?;
            let value = cx.expr(&def.body)?;
            Ok::<_, Failure>((n, decls, value))
        })();
        let inputs = cx.inputs.clone();
        let callees = std::mem::take(&mut cx.callees);
        let (prelude, lens) = cx.block.take().unwrap_or_default();
        let wide = cx.wide.take();
        drop(cx);
        self.sites = sites;
        let (n, decls, value) = built?;
        if per.team().is_some() && prelude.is_empty() {
            // Nothing to share (the sites it registered stay unused).
            return Ok(None);
        }
        // A flat kernel reads by position: it needs no index variables.
        let decls = if per == Per::Flat { String::new() } else { decls };
        Ok(Some(DefKernel { n, decls, value, inputs, callees, prelude, lens, wide }))
    }

    /// Whether cuBLAS can read `operand` with these axes (batch, then two):
    /// one of the two matrix axes must be the contiguous (last) one.
    pub(super) fn blas_operand(&self, operand: VarId, axes: &[usize], batch: bool) -> bool {
        let rank = match self.f.var(operand).ty {
            Repr::Tensor(_, r) => r,
            _ => return false,
        };
        // A batched product's operand of rank 2 is shared by every batch.
        let matrix = if batch && rank == 3 { axes.get(1..) } else { Some(axes) };
        axes.len() == rank && matrix.is_some_and(|m| m.len() == 2 && m.contains(&(rank - 1)))
    }

    pub(super) fn gemm(&mut self, g: &Gemm) -> Result<TokenStream, Failure> {
        let batched = g.batch.is_some();
        // Half-precision products: cuBLAS GemmEx, accumulating in f32.
        // One batch of a product (`Gemm::slice`, host code only) runs
        // its reference loops.
        let blas = g.elem.is_float()
            && g.slice.is_none()
            && self.blas_operand(g.a, &g.a_axes, batched)
            && self.blas_operand(g.b, &g.b_axes, batched)
            && g.reference.var == g.out
            && g.reference.axes.len() == 2 + usize::from(batched);
        if !blas {
            return self.tensor_def(&g.reference);
        }
        let own = self.own_ident(g.out)?;
        let extents = g.reference.axes.iter().map(|a| self.extent(&a.extent)).collect::<Result<Vec<_>, _>>()?;
        let (a, b) = (self.tensor_ref(g.a)?, self.tensor_ref(g.b)?);
        let strides = |axes: &[usize], s: &Ident| -> TokenStream {
            let picks = axes.iter().map(|&i| usize_lit(i));
            let picks: Vec<_> = picks.map(|i| quote!(#s[#i])).collect();
            // No batch axis (an unbatched product, or an operand every
            // batch shares): a batch stride of 0.
            if axes.len() == 3 {
                quote!((#(#picks),*))
            } else {
                quote!((0i64, #(#picks),*))
            }
        };
        let (sa, sb) = (format_ident!("__sa"), format_ident!("__sb"));
        let (a_strides, b_strides) = (strides(&g.a_axes, &sa), strides(&g.b_axes, &sb));
        let batch = match &g.batch {
            Some(d) => self.dim(d)?,
            None => quote!(1i64),
        };
        let (m, n, k) = (self.dim(&g.m)?, self.dim(&g.n)?, self.dim(&g.k)?);
        let scale = match &g.scale {
            Some(e) => Some(self.scalar(e, g.elem)?),
            None => None,
        };
        let (rt, nd, dev, name) = (&self.rt, &self.nd, &self.dev, &self.fn_name);
        let t = scalar_type(g.elem);
        let d = dim_type(g.reference.axes.len(), nd)?;
        let id = self.ident(g.out)?;
        // A scaled product: cuBLAS's `alpha` (`Gemm::scale`).
        let call = match scale {
            Some(s) => {
                quote!(#dev.gemm_scaled(#name, &mut #own, #a.slice(), #a_strides, #b.slice(), #b_strides, (#batch, #m, #n, #k), #s))
            }
            None => {
                quote!(#dev.gemm(#name, &mut #own, #a.slice(), #a_strides, #b.slice(), #b_strides, (#batch, #m, #n, #k)))
            }
        };
        self.holders.insert(g.out, Holder::Owned(own.clone()));
        Ok(quote! {
            // SAFETY: cuBLAS writes every element (`beta = 0`), or zero-fills when `k = 0`.
            let mut #own = unsafe { #rt::cuda::Tensor::<#t, #d>::uninit(#dev, #nd::IntoDimension::into_dimension([#(#extents),*])) }?;
            {
                let #sa = #rt::cuda::row_major_strides(#a.shape());
                let #sb = #rt::cuda::row_major_strides(#b.shape());
                #call?;
            }
            let #id = &#own;
        })
    }
}

/// The tensors `def`'s value reads at its own point (indices its axes in
/// order, unchecked), when its axes start at 0, it has more than one, and
/// it uses its axes nowhere else: over tensors of the output's shape, the
/// point is the flat position. `None` otherwise.
pub(super) fn flat_reads(def: &TensorDef, f: &Function) -> Option<Vec<VarId>> {
    let axes: Vec<VarId> = def.axes.iter().map(|a| a.index).collect();
    if axes.len() < 2 || def.domain_guards != 0 || def.axes.iter().any(|a| a.start != Dim::zero()) {
        return None;
    }
    fn walk(e: &Expr, axes: &[VarId], f: &Function, out: &mut Vec<VarId>) -> bool {
        match &e.kind {
            ExprKind::Read { tensor, indices, checked: false } if kernel::is_identity(indices, axes) => {
                if !matches!(f.var(*tensor).ty, Repr::Tensor(_, r) if r == axes.len()) {
                    return false;
                }
                if !out.contains(tensor) {
                    out.push(*tensor);
                }
                true
            }
            ExprKind::Var(v) if axes.contains(v) => false,
            ExprKind::Dim(d) if d.vars().iter().any(|v| axes.iter().any(|a| a.0 == v.0)) => false,
            _ => {
                let mut ok = true;
                crate::ir::visit::for_each_child(e, &mut |c| ok &= walk(c, axes, f, out));
                ok
            }
        }
    }
    let mut out = Vec::new();
    (walk(&def.body, &axes, f, &mut out) && !out.is_empty()).then_some(out)
}
