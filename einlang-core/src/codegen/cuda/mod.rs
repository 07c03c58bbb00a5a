//! The CUDA back end: `#[device(cuda)]` functions as host glue (Rust
//! tokens) that launches kernels (CUDA C text, see `kernel`).
//!
//! # Shape of the output
//!
//! ```text
//! pub fn dense(dev: &Device, x: &Tensor<f32, Ix2>, ...) -> Result<Tensor<f32, Ix2>, Error> {
//!     use ::einlang::__private as __rt;
//!     const __K0: __rt::cuda::KernelInfo = KernelInfo { name: "dense_k0", function: "dense", source: "..." };
//!     __rt::cuda::inventory::submit! { __K0 }                 // listed by einlang::cuda::kernels()
//!     x.check_device("dense", "x", dev)?;
//!     let B: i64 = x.shape()[0] as i64;                       // entry checks, as on the CPU
//!     let __status = dev.status(true)?;                       // this call's failure word (if it has checks)
//!     let mut __own_y = unsafe { Tensor::<f32, Ix2>::uninit(dev, [..]) }?;  // written whole by the kernel
//!     unsafe { dev.launch(&__K0, grid, 256, &[__own_y.arg_mut(), x.arg(), ..., __status.arg()]) }?;
//!     let y = &__own_y;
//!     __status.check("dense", &[..])?;                       // failed gathers, division by zero
//!     Ok(__own_y)
//! }
//! ```
//!
//! Statements run on the host in order:
//! - a tensor definition is a grid-stride kernel, one thread per point
//!   (`kernel.rs`); when its body has reductions outside every binder, also
//!   kernels with one warp (shuffles) and one block (shuffles, then shared
//!   memory) per point whose threads share each reduction, one of which
//!   the host launches instead by the reductions' length and the number of
//!   points (`Device::team_for`);
//! - a GEMM-shaped contraction of `f32`/`f64` whose operands have a
//!   contiguous matrix axis is one cuBLAS strided batched call (others run
//!   their `reference` definition);
//! - a recurrence is a host loop along its sequential axes that launches
//!   one kernel per clause and step, or, when every step is small
//!   (`PERSISTENT_MAX`), one persistent kernel of one block that walks the
//!   steps itself; a 2-D dynamic program that may run as a wavefront (and
//!   keeps its whole table) is always that kernel, walking anti-diagonals;
//! - a scalar `let` is a kernel of one block (its reductions shared by the
//!   block) whose value is copied back; a scalar `assert` is checked on the
//!   host after it.
//!
//! A call of a function with
//! tensor arguments calls its CUDA version: the user's device function, or
//! a twin `__cuda_name` emitted for a library or private function reached
//! from device code. What this back end cannot run yet is reported at the
//! `#[device(cuda)]` attribute ("does not support X yet"), never compiled
//! into wrong code.

mod comm;
pub mod kernel;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;

use proc_macro2::{Ident, Literal as RustLit, TokenStream};
use quote::{format_ident, quote};

use crate::base::dim::{Dim, DimVar};
use crate::base::scalar::ScalarKind;
use crate::base::span::Span;
use crate::codegen::host::{self, HostCode, VarIdents};
use crate::codegen::paths;
use crate::ir::{
    Cover, Expr, ExprKind, FuncId, Function, Gemm, Literal, Program, RecIndex, Recurrence, Repr, Rows, Stmt, TensorDef,
    VarId,
};
use kernel::{c_type, Input, KernelCx, Site};

/// The C expression of where a recurrence clause writes along one axis:
/// a sequential loop's index, a literal, or one of the clause's own loops.
fn clause_position(
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

/// Why a function has no CUDA version.
#[derive(Debug)]
pub enum Failure {
    /// A construct this back end does not run yet (a user-facing error:
    /// "`#[device(cuda)]` does not support X yet").
    Unsupported(String),
    /// The IR broke an invariant (an internal compiler error).
    Bug(String),
}

/// Threads per block of the grid-stride kernels.
const BLOCK: u32 = 256;

/// The functions that are not `#[device(cuda)]` themselves but are called
/// with tensors from device code (directly or through each other), with the
/// span of a device function that reaches them: each gets a CUDA twin.
/// Read from the program's call graph.
pub fn device_twins(p: &Program) -> BTreeMap<FuncId, Span> {
    let mut twins = BTreeMap::new();
    let mut work: Vec<(FuncId, Span)> = p.functions().filter_map(|(id, f)| f.device.map(|d| (id, d.span))).collect();
    while let Some((f, span)) = work.pop() {
        for c in p.calls().callees(f).iter().filter(|c| c.tensors) {
            if p.func(c.func).device.is_none() && !twins.contains_key(&c.func) {
                twins.insert(c.func, span);
                work.push((c.func, span));
            }
        }
    }
    twins
}

/// The host functions that call a `#[device(cuda)]` function, directly or
/// through other host functions: they cannot run on the host (a device
/// function needs a `Device`), so they exist only as CUDA twins. For each,
/// a device function it reaches and its span. Read from the program's
/// call graph.
pub fn device_bound(p: &Program) -> BTreeMap<FuncId, (FuncId, Span)> {
    let mut bound: BTreeMap<FuncId, (FuncId, Span)> = BTreeMap::new();
    loop {
        let mut changed = false;
        for (id, f) in p.functions() {
            if f.device.is_some() || bound.contains_key(&id) {
                continue;
            }
            let reached = p.calls().callees(id).iter().find_map(|c| match p.func(c.func).device {
                Some(d) => Some((c.func, d.span)),
                None => bound.get(&c.func).copied(),
            });
            if let Some(r) = reached {
                bound.insert(id, r);
                changed = true;
            }
        }
        if !changed {
            return bound;
        }
    }
}

/// The Rust name of the CUDA version of `g`, the function `id`.
fn cuda_ident(g: &Function, id: FuncId, fns: &crate::codegen::host::FnIdents) -> Result<Ident, Failure> {
    let ident = fns.get(id).ok_or_else(|| Failure::Bug(format!("`{}` has no Rust name", g.name)))?;
    if g.device.is_some() {
        Ok(ident.clone())
    } else {
        Ok(format_ident!("__cuda_{}", ident))
    }
}

/// A CUDA function, with its kernels (name and whole source) for tests.
pub struct Emitted {
    pub tokens: TokenStream,
    pub kernels: Vec<(String, String)>,
}

/// Emits the CUDA version of `f`, the function `id` of `p`: under its own
/// name for a `#[device(cuda)]` function, as `__cuda_name` for a twin.
pub fn emit_function(
    f: &Function,
    id: FuncId,
    p: &Program,
    fns: &crate::codegen::host::FnIdents,
    options: &crate::codegen::Options,
) -> Result<Emitted, Failure> {
    let name = cuda_ident(f, id, fns)?;
    let mut cx = HostCx::new(f, p, fns, options, &name)?;
    let body = cx.body()?;
    let (rt, nd, err, result) = (paths::rt(), paths::nd(), paths::error(), paths::result());
    let dev = cx.dev.clone();
    let mut params = vec![quote!(#dev: &#rt::cuda::Device)];
    let sharded = f.shard.is_some();
    if sharded {
        params.push(quote!(__world: &#rt::dist::World));
    }
    for &v in &f.params {
        let id = cx.ident(v)?;
        let ty = host_type(&f.var(v).ty, &rt, &nd, true)?;
        params.push(quote!(#id: #ty));
    }
    let ret = host_type(&f.ret, &rt, &nd, false)?;
    let vis = match (&f.export, f.public, f.device.is_some()) {
        (_, _, false) => quote!(),
        (Some(_), _, true) => quote!(#[doc(hidden)] pub),
        (None, true, true) => quote!(pub),
        (None, false, true) => quote!(),
    };
    let docs = f.docs.iter().map(|d| quote!(#[doc = #d]));
    let allow = super::allow_lints(quote!(unused_unsafe,));
    // A sharded function's ranks end the call together: an error on one
    // rank is the same error on every rank (`dist::World::finish`).
    let body = if sharded {
        quote! {
            __world.begin();
            let __done = (|| -> #result<#ret, #err> { #body })();
            __world.finish(__done)
        }
    } else {
        body
    };
    let tokens = quote! {
        #(#docs)*
        #allow
        #vis fn #name(#(#params),*) -> #result<#ret, #err> {
            #body
        }
    };
    Ok(Emitted { tokens, kernels: cx.kernels.into_iter().map(|k| (k.name, k.source)).collect() })
}

/// The Rust type of a value at the boundary of a CUDA function.
fn host_type(ty: &Repr, rt: &TokenStream, nd: &TokenStream, param: bool) -> Result<TokenStream, Failure> {
    Ok(match ty {
        Repr::Scalar(k) => scalar_type(*k),
        Repr::Tensor(k, rank) => {
            let t = scalar_type(*k);
            let d = dim_type(*rank, nd)?;
            if param {
                quote!(&#rt::cuda::Tensor<#t, #d>)
            } else {
                quote!(#rt::cuda::Tensor<#t, #d>)
            }
        }
        Repr::Tuple(items) if !param && !items.is_empty() => {
            let items = items.iter().map(|t| host_type(t, rt, nd, param)).collect::<Result<Vec<_>, _>>()?;
            quote!((#(#items,)*))
        }
        other => {
            let what = if param { "parameters" } else { "results" };
            return Err(Failure::Unsupported(format!("{what} of type `{}`", kernel::show_repr(other))));
        }
    })
}

fn dim_type(rank: usize, nd: &TokenStream) -> Result<TokenStream, Failure> {
    if rank > 6 {
        return Err(Failure::Unsupported(format!("tensors of rank {rank} (at most 6)")));
    }
    let d = format_ident!("Ix{}", rank);
    Ok(quote!(#nd::#d))
}

fn scalar_type(k: ScalarKind) -> TokenStream {
    let id = format_ident!("{}", k.name());
    if k.is_half() {
        let rt = crate::codegen::paths::rt();
        return quote!(#rt::half::#id);
    }
    quote!(#id)
}

fn usize_lit(n: usize) -> RustLit {
    RustLit::usize_unsuffixed(n)
}

/// Recurrences whose clauses have at most this many points per step run
/// as one persistent kernel of one block.
const PERSISTENT_MAX: i64 = 2048;

/// The emitted pieces of a definition's kernel (see `HostCx::def_kernel`).
struct DefKernel {
    n: String,
    decls: String,
    value: String,
    inputs: std::collections::BTreeSet<Input>,
    callees: Vec<(FuncId, String)>,
    /// Warp and block kernels: the shared reductions, and their loops'
    /// extents.
    prelude: String,
    lens: Vec<Vec<Dim>>,
    /// A four-wide kernel's needs (see `kernel::Wide`).
    wide: Option<kernel::Wide>,
}

/// How a definition's kernel maps its points to threads.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Per {
    /// A thread per point (grid-stride).
    Thread,
    /// A warp per point, its lanes sharing the reductions.
    Warp,
    /// A block per point, its threads sharing the reductions.
    Block,
    /// A thread per flat position, reads by position (`flat_reads`).
    Flat,
}

/// The text of a grid-stride kernel (a thread per point) of `k`.
fn grid_stride(params: &str, k: &DefKernel) -> String {
    let (n, decls, value, points) = (&k.n, &k.decls, &k.value, Per::Thread.points_loop());
    format!(
        "extern \"C\" __global__ void __KERNEL__({params}) {{\n    const long long __n = {n};\n    \
         #pragma unroll 4\n    for (long long {points}) {{\n{decls}        __out[__p] = {value};\n    }}\n}}\n"
    )
}

impl Per {
    /// The team sharing a point's reductions (`None`: a thread alone).
    fn team(self) -> Option<kernel::Team> {
        match self {
            Per::Warp => Some(kernel::Team::Warp),
            Per::Block => Some(kernel::Team::Block),
            Per::Thread | Per::Flat => None,
        }
    }

    /// The C text of a loop over the points (or rows) `__p < __n`, each
    /// taken by one thread, warp or block.
    fn points_loop(self) -> &'static str {
        match self {
            Per::Thread | Per::Flat => {
                "__p = (long long)blockIdx.x * blockDim.x + threadIdx.x; __p < __n; __p += (long long)gridDim.x * blockDim.x"
            }
            Per::Warp => {
                "__p = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); __p < __n; \
                 __p += (long long)gridDim.x * (blockDim.x >> 5)"
            }
            Per::Block => "__p = blockIdx.x; __p < __n; __p += gridDim.x",
        }
    }
}

/// The kernels of a definition (or rows) whose reductions a warp or a
/// block may share, and how long those are (see `HostCx::launch_teams`).
struct Teams {
    warp: Ident,
    block: Ident,
    /// The longest reduction (or row), an `i64` expression.
    longest: TokenStream,
    /// Their four-wide twins (warp, block) and the condition (a `bool`
    /// expression) under which they may run.
    wide: Option<(Ident, Ident, TokenStream)>,
}

/// The kernel of a `Stmt::Rows` (see `HostCx::rows_kernel`).
struct RowsKernel {
    text: String,
    inputs: std::collections::BTreeSet<Input>,
    callees: Vec<(FuncId, String)>,
    /// The extents of the prelude's block reductions' loops.
    lens: Vec<Vec<Dim>>,
    /// A four-wide kernel's needs (see `kernel::Wide`).
    wide: Option<kernel::Wide>,
}

/// One generated kernel.
struct KernelText {
    name: String,
    source: String,
}

/// Where a tensor variable's device memory is held.
#[derive(Clone)]
enum Holder {
    /// A parameter or an alias of one (`&Tensor` already).
    Borrowed,
    /// Owned by the local `__own_*` variable named here.
    Owned(Ident),
}

/// Per-function emission state of the host glue.
struct HostCx<'a> {
    f: &'a Function,
    /// The Rust identifiers of the function's variables.
    idents: VarIdents,
    p: &'a Program,
    fns: &'a crate::codegen::host::FnIdents,
    all_checked: bool,
    /// The function's Rust name, as a string literal for errors.
    fn_name: RustLit,
    /// A C-identifier prefix for kernel names.
    kernel_prefix: String,
    dev: Ident,
    sites: Vec<Site>,
    kernels: Vec<KernelText>,
    holders: HashMap<VarId, Holder>,
    /// `__own_*` variables already moved into the result.
    moved: HashSet<String>,
    /// Tensors being defined by a recurrence: read through their owner.
    in_progress: HashMap<VarId, Ident>,
    /// Tuple variables bound to a tuple of variables: their elements.
    tuples: HashMap<VarId, Vec<Expr>>,
    /// Recurrences kept in a circular buffer (see `KernelCx::windows`).
    windows: HashMap<VarId, (usize, u64, Vec<Dim>)>,
    rt: TokenStream,
    nd: TokenStream,
}

impl HostCode for HostCx<'_> {
    type Error = Failure;

    fn function(&self) -> &Function {
        self.f
    }

    fn runtime(&self) -> &TokenStream {
        &self.rt
    }

    fn function_name(&self) -> &RustLit {
        &self.fn_name
    }

    fn var_ident(&self, v: VarId) -> Result<Ident, String> {
        self.idents.ident(v)
    }

    fn axis_length(&self, _what: &str, var: VarId, path: &[u32], axis: usize) -> Result<TokenStream, Failure> {
        self.axis_len(var, path, axis)
    }
}

impl From<String> for Failure {
    fn from(msg: String) -> Failure {
        Failure::Bug(msg)
    }
}

impl<'a> HostCx<'a> {
    fn new(
        f: &'a Function,
        p: &'a Program,
        fns: &'a crate::codegen::host::FnIdents,
        options: &crate::codegen::Options,
        name: &Ident,
    ) -> Result<HostCx<'a>, Failure> {
        let rust_name = name.to_string();
        let rust_name = rust_name.strip_prefix("r#").unwrap_or(&rust_name).to_string();
        let dev = if f.vars.iter().any(|v| v.name == "dev") { format_ident!("__dev") } else { format_ident!("dev") };
        Ok(HostCx {
            f,
            idents: VarIdents::of(f),
            p,
            fns,
            all_checked: options.checked,
            fn_name: RustLit::string(&f.name),
            kernel_prefix: rust_name,
            dev,
            sites: Vec::new(),
            kernels: Vec::new(),
            holders: HashMap::new(),
            moved: HashSet::new(),
            in_progress: HashMap::new(),
            tuples: HashMap::new(),
            windows: HashMap::new(),
            rt: paths::rt_local(),
            nd: paths::nd_local(),
        })
    }

    /// The Rust identifier of a variable: its name, raw when it is a Rust
    /// keyword.
    fn ident(&self, v: VarId) -> Result<Ident, Failure> {
        self.idents.ident(v).map_err(Failure::Bug)
    }

    fn kind(&self, v: VarId) -> Result<ScalarKind, Failure> {
        match self.f.vars.get(v.0 as usize).map(|i| &i.ty) {
            Some(Repr::Scalar(k)) | Some(Repr::Tensor(k, _)) => Ok(*k),
            Some(other) => Err(Failure::Unsupported(format!("values of type `{}`", kernel::show_repr(other)))),
            None => Err(Failure::Bug(format!("variable {} is not declared", v.0))),
        }
    }

    /// A kernel emission context for this function.
    fn kernel_cx<'s>(&self, sites: &'s mut Vec<Site>) -> KernelCx<'s>
    where
        'a: 's,
    {
        let mut cx = KernelCx::new(self.f, self.p, self.all_checked, sites);
        cx.windows = self.windows.clone();
        cx
    }

    /// A whole tensor leaving the glue (an argument, a result): not one kept
    /// in a circular buffer, which holds only its last steps.
    fn whole_tensor(&self, v: VarId) -> Result<TokenStream, Failure> {
        if self.windows.contains_key(&v) {
            return Err(Failure::Unsupported(format!(
                "using the whole of `{}`, a recurrence kept in a circular buffer",
                self.f.var(v).source_name
            )));
        }
        self.tensor_ref(v)
    }

    /// A `&Tensor` expression for tensor variable `v`.
    fn tensor_ref(&self, v: VarId) -> Result<TokenStream, Failure> {
        if let Some(own) = self.in_progress.get(&v) {
            return Ok(quote!((&#own)));
        }
        let id = self.ident(v)?;
        Ok(quote!(#id))
    }

    /// A dimension as a Rust `i64` expression over host variables.
    fn dim(&self, d: &Dim) -> Result<TokenStream, Failure> {
        host::dim(self, d)
    }

    /// A non-negative extent as `usize` (`Error::Extent` when negative or
    /// when its arithmetic overflows).
    fn extent(&self, d: &Dim) -> Result<TokenStream, Failure> {
        host::extent_of(self, d, &RustLit::string(&host::dim_text(self.f, d)))
    }

    fn body(&mut self) -> Result<TokenStream, Failure> {
        let f = self.f;
        let (rt, name, dev) = (self.rt.clone(), self.fn_name.clone(), self.dev.clone());
        let mut code = TokenStream::new();
        for &p in &f.params {
            if let Repr::Tensor(..) = f.var(p).ty {
                self.holders.insert(p, Holder::Borrowed);
                let id = self.ident(p)?;
                let pname = RustLit::string(&f.var(p).source_name);
                code.extend(quote!(#id.check_device(#name, #pname, #dev)?;));
            }
        }
        for check in &f.entry {
            code.extend(host::entry(self, check)?);
        }
        if let Some(parts) = f.shard.as_ref().and_then(|s| s.parts.as_ref()) {
            code.extend(self.shard_entry(parts)?);
        }
        let mut stmts = TokenStream::new();
        for s in &f.body {
            stmts.extend(self.stmt(s)?);
        }
        let result = self.result(&f.result)?;
        // Without a checked site no kernel writes a status word, and the
        // call need not wait for the device before it returns.
        let needed = !self.sites.is_empty();
        code.extend(quote!(let __status = #dev.status(#needed)?;));
        code.extend(stmts);
        let check = self.check_status();
        // Kernels are items of the function body, registered at link time.
        let mut items = paths::body_prelude();
        for (i, k) in self.kernels.iter().enumerate() {
            let konst = format_ident!("__K{}", i);
            let (kname, source) = (RustLit::string(&k.name), RustLit::string(&k.source));
            items.extend(quote! {
                const #konst: #rt::cuda::KernelInfo =
                    #rt::cuda::KernelInfo { name: #kname, function: #name, source: #source };
                #rt::cuda::inventory::submit! { #konst }
            });
        }
        Ok(quote! {
            #items
            #code
            let __result = #result;
            #check
            Ok(__result)
        })
    }

    /// `__status.check(..)?;`: the failures kernels recorded so far.
    fn check_status(&self) -> TokenStream {
        let (rt, name) = (&self.rt, &self.fn_name);
        let sites = self.sites.iter().map(|s| match s {
            Site::Index { tensor, axis } => {
                let (t, a) = (RustLit::string(tensor), usize_lit(*axis));
                quote!(#rt::cuda::Site::Index(#t, #a))
            }
            Site::DivZero => quote!(#rt::cuda::Site::DivZero),
            Site::RemZero => quote!(#rt::cuda::Site::RemZero),
            Site::NegativePower => quote!(#rt::cuda::Site::NegativePower),
        });
        quote!(__status.check(#name, &[#(#sites),*])?;)
    }

    fn axis_len(&self, var: VarId, path: &[u32], axis: usize) -> Result<TokenStream, Failure> {
        if let Some((&first, rest)) = path.split_first() {
            // A tuple bound to variables: follow the path to one of them.
            return match self.tuples.get(&var).and_then(|items| items.get(first as usize)).map(|e| &e.kind) {
                Some(ExprKind::Var(item)) => self.axis_len(*item, rest, axis),
                _ => Err(Failure::Unsupported("tensors inside tuple parameters and computed tuples".into())),
            };
        }
        match &self.f.var(var).ty {
            Repr::Tensor(_, rank) if axis < *rank => {}
            other => return Err(Failure::Bug(format!("axis {axis} of a value of type `{other:?}`"))),
        }
        let t = self.tensor_ref(var)?;
        let axis = usize_lit(axis);
        Ok(quote!(#t.shape()[#axis]))
    }

    fn stmt(&mut self, s: &Stmt) -> Result<TokenStream, Failure> {
        match s {
            Stmt::Let { var, value } => self.bind(*var, value),
            Stmt::Extent { var, value, what } => host::extent(self, *var, value, what),
            Stmt::SameExtent { index, a, a_what, b, b_what } => {
                host::same_extent(self, index, (a, a_what), (b, b_what))
            }
            Stmt::Tensor(def) => self.tensor_def(def),
            Stmt::Gemm(g) => self.gemm(g),
            Stmt::Recurrence(r) => self.recurrence(r),
            Stmt::Comm(c) => self.comm(c),
            // `opt::checkpoint` runs on host functions only.
            Stmt::Sweep(_) => Err(Failure::Bug("a checkpointed sweep in device code".into())),
            Stmt::CheckResultDim { tensor, path, axis, symbol, declared } => {
                host::check_result_dim(self, (*tensor, path, *axis), symbol, declared)
            }
            Stmt::Reshape { var, source, dims, .. } => {
                // The source's device buffer, under the new extents.
                let Some(Holder::Owned(from)) = self.holders.get(source).cloned() else {
                    return Err(Failure::Bug("a reshape of a tensor the function does not own".into()));
                };
                let own = self.own_ident(*var)?;
                let extents = dims.iter().map(|d| self.extent(d)).collect::<Result<Vec<_>, _>>()?;
                let nd = self.nd.clone();
                let d = dim_type(dims.len(), &nd)?;
                let id = self.ident(*var)?;
                self.holders.insert(*var, Holder::Owned(own.clone()));
                Ok(quote! {
                    let #own = #from.reshape::<#d>(#nd::IntoDimension::into_dimension([#(#extents),*]))?;
                    let #id = &#own;
                })
            }
            // `opt` fuses rows only in host code (see `opt::Targets`).
            Stmt::Rows(rows) => self.rows(rows),
            Stmt::Expr(Expr { kind: ExprKind::Assert { cond, message }, .. }) => self.assert(cond, message),
            Stmt::Expr(e) => Err(Failure::Unsupported(format!("{} in device code", kernel::describe(&e.kind)))),
        }
    }

    /// `assert(cond, "message")` of a scalar condition: evaluated (on the
    /// device when it reads tensors), then `Error::Assert` on the host.
    fn assert(&mut self, cond: &Expr, message: &Expr) -> Result<TokenStream, Failure> {
        let text = match &message.kind {
            ExprKind::Lit(Literal::Str(m)) => m.clone(),
            _ => return Err(Failure::Unsupported("`assert` messages with interpolated values in device code".into())),
        };
        if cond.ty != Repr::Scalar(ScalarKind::Bool) {
            return Err(Failure::Unsupported("`assert` of a tensor of conditions in device code".into()));
        }
        let c = self.scalar(cond, ScalarKind::Bool)?;
        let (rt, name, m) = (&self.rt, &self.fn_name, RustLit::string(&text));
        Ok(quote! {
            if !(#c) {
                return ::core::result::Result::Err(#rt::shape::assert_failed(#name, #m));
            }
        })
    }

    /// Adds a kernel; its constant's identifier.
    fn add_kernel(&mut self, text: String, callees: &[(FuncId, String)]) -> (Ident, String) {
        let i = self.kernels.len();
        let name = format!("{}_k{i}", self.kernel_prefix);
        let body = text.replace("__KERNEL__", &name);
        let source = kernel::translation_unit(&name, &self.f.name, callees, &body);
        self.kernels.push(KernelText { name: name.clone(), source });
        (format_ident!("__K{}", i), name)
    }

    /// The C parameters and the host arguments for a kernel's inputs.
    fn inputs(
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
    fn launch_with(&self, points: TokenStream, out: &Ident, args: Vec<TokenStream>, call: TokenStream) -> TokenStream {
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
    fn per_thread(&self, kernel: TokenStream) -> TokenStream {
        let (dev, block) = (&self.dev, BLOCK);
        quote!(unsafe { #dev.launch(#kernel, #dev.grid_for(__points as u64, #block), #block, &__args) }?;)
    }

    /// A launch of kernel `konst` over `points` (a `usize` expression),
    /// writing through `out` (an `__own_*` tensor).
    fn launch(&self, konst: &Ident, points: TokenStream, out: &Ident, args: Vec<TokenStream>) -> TokenStream {
        let call = self.per_thread(quote!(&#konst));
        self.launch_with(points, out, args, call)
    }

    /// A launch of `konst` (a thread per point), or of `teams`' warp or
    /// block per point, as `Device::team_for` picks (all take the same
    /// arguments).
    fn launch_teams(
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
    fn wide_condition<'k>(
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
    fn longest(&self, lens: &[Vec<Dim>]) -> Result<TokenStream, Failure> {
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
    fn point_loop(cx: &mut KernelCx<'_>, axes: &[(VarId, &Dim, Dim)]) -> Result<(String, String), Failure> {
        Self::points_of(cx, axes, "__p")
    }

    /// The points of `axes` from the flat position `counter`: their number
    /// (C) and the C text declaring the index variables.
    fn points_of(
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

    fn tensor_def(&mut self, def: &TensorDef) -> Result<TokenStream, Failure> {
        let rank = def.axes.len();
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
        // A thread's kernel: the flat one when every tensor it reads by
        // position has the output's shape, else the four-wide one when its
        // extents allow, else the indexed one.
        let mut kernel = quote!(&#konst);
        if let Some(q) = &quads {
            let text = format!(
                "extern \"C\" __global__ void __KERNEL__({params}) {{\n    const long long __n4 = ({}) / 4;\n    \
                 #pragma unroll 4\n    for (long long __p4 = (long long)blockIdx.x * blockDim.x + threadIdx.x; __p4 < __n4; \
                 __p4 += (long long)gridDim.x * blockDim.x) {{\n        const long long __p = __p4 * 4;\n{}        float4 __o;\n{}        \
                 *(float4*)(__out + __p) = __o;\n    }}\n}}\n",
                q.n, q.decls, q.value
            );
            let (qkonst, _) = self.add_kernel(text, &q.callees);
            let cond = self.wide_condition(q.wide.iter(), &own)?;
            kernel = quote!(if #cond { &#qkonst } else { #kernel });
        }
        let launch = match flat {
            Some((k, same)) => {
                let (fkonst, _) = self.add_kernel(grid_stride(&params, &k), &k.callees);
                let mut cond = quote!(true);
                for v in same {
                    let t = self.tensor_ref(v)?;
                    cond = quote!(#cond && #t.shape() == #own.shape());
                }
                let call = self.per_thread(quote!(if #cond { &#fkonst } else { #kernel }));
                self.launch_with(quote!(#own.len()), &own, args, call)
            }
            None if teams.is_none() => {
                let call = self.per_thread(kernel);
                self.launch_with(quote!(#own.len()), &own, args, call)
            }
            None => self.launch_teams(&konst, teams, quote!(#own.len()), &own, args),
        };
        let (rt, nd, dev) = (&self.rt, &self.nd, &self.dev);
        let t = scalar_type(def.elem);
        let d = dim_type(rank, nd)?;
        let id = self.ident(def.var)?;
        self.holders.insert(def.var, Holder::Owned(own.clone()));
        Ok(quote! {
            // SAFETY: the kernel writes every point (one thread each).
            let mut #own = unsafe { #rt::cuda::Tensor::<#t, #d>::uninit(#dev, #nd::IntoDimension::into_dimension([#(#extents),*])) }?;
            #launch
            let #id = &#own;
        })
    }

    /// A row-fused definition: one kernel whose threads (or, for long
    /// rows, whose warps or blocks) each take a row: the prelude's values
    /// (reductions shared by the warp or block), its row tensors as
    /// lambdas recomputed where read, then the row's points.
    fn rows(&mut self, rows: &Rows) -> Result<TokenStream, Failure> {
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
        let (rt, nd, dev) = (&self.rt, &self.nd, &self.dev);
        let t = scalar_type(def.elem);
        let d = dim_type(def.axes.len(), nd)?;
        let id = self.ident(def.var)?;
        self.holders.insert(def.var, Holder::Owned(own.clone()));
        Ok(quote! {
            // SAFETY: the kernel writes every point of every row.
            let mut #own = unsafe { #rt::cuda::Tensor::<#t, #d>::uninit(#dev, #nd::IntoDimension::into_dimension([#(#extents),*])) }?;
            #launch
            let #id = &#own;
        })
    }

    /// The kernel of `rows` (its parameters left as `__PARAMS__`): one
    /// thread, warp or block per row (`per`).
    fn rows_kernel(&mut self, rows: &Rows, per: Per, wide: bool) -> Result<RowsKernel, Failure> {
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
            let text = match (&def.axes[1..], per.team()) {
                // Four consecutive points of a row per thread and step,
                // stored four-wide.
                ([a], Some(team))
                    if cx.wide.is_some() && def.elem == ScalarKind::F32 && a.start.as_constant() == Some(0) =>
                {
                    let points = cx.dim(&a.extent)?;
                    let (rank, size) = team.rank_and_size();
                    let lanes = cx.wide_values(a.index, &a.extent, &def.body)?;
                    format!(
                        "{head}        const long long __m = {points};\n        #pragma unroll 4\n        \
                         for (long long __q4 = {rank}; __q4 < __m / 4; __q4 += {size}) {{\n            \
                         const long long __q = __q4 * 4;\n            float4 __o;\n{lanes}            \
                         *(float4*)(__out + __p * __m + __q) = __o;\n        }}\n    }}\n}}\n"
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
    /// `None` for other definitions, `f64` or integer ones, and in
    /// `checked` mode.
    fn wide_points(&mut self, def: &TensorDef, axes: &[(VarId, &Dim, Dim)]) -> Result<Option<DefKernel>, Failure> {
        let Some(((last, start, extent), outer)) = axes.split_last() else { return Ok(None) };
        if self.all_checked || def.elem != ScalarKind::F32 || start.as_constant() != Some(0) {
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
    fn def_kernel(
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

    fn own_ident(&self, v: VarId) -> Result<Ident, Failure> {
        Ok(format_ident!("__own_{}", self.ident(v)?))
    }

    /// Whether cuBLAS can read `operand` with these axes (batch, then two):
    /// one of the two matrix axes must be the contiguous (last) one.
    fn blas_operand(&self, operand: VarId, axes: &[usize], batch: bool) -> bool {
        let rank = match self.f.var(operand).ty {
            Repr::Tensor(_, r) => r,
            _ => return false,
        };
        // A batched product's operand of rank 2 is shared by every batch.
        let matrix = if batch && rank == 3 { axes.get(1..) } else { Some(axes) };
        axes.len() == rank && matrix.is_some_and(|m| m.len() == 2 && m.contains(&(rank - 1)))
    }

    fn gemm(&mut self, g: &Gemm) -> Result<TokenStream, Failure> {
        let batched = g.batch.is_some();
        // Half-precision products: cuBLAS GemmEx, accumulating in f32.
        let blas = g.elem.is_float()
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
        let (rt, nd, dev, name) = (&self.rt, &self.nd, &self.dev, &self.fn_name);
        let t = scalar_type(g.elem);
        let d = dim_type(g.reference.axes.len(), nd)?;
        let id = self.ident(g.out)?;
        self.holders.insert(g.out, Holder::Owned(own.clone()));
        Ok(quote! {
            // SAFETY: cuBLAS writes every element (`beta = 0`), or zero-fills when `k = 0`.
            let mut #own = unsafe { #rt::cuda::Tensor::<#t, #d>::uninit(#dev, #nd::IntoDimension::into_dimension([#(#extents),*])) }?;
            {
                let #sa = #rt::cuda::row_major_strides(#a.shape());
                let #sb = #rt::cuda::row_major_strides(#b.shape());
                #dev.gemm(#name, &mut #own, #a.slice(), #a_strides, #b.slice(), #b_strides, (#batch, #m, #n, #k))?;
            }
            let #id = &#own;
        })
    }

    fn recurrence(&mut self, r: &Recurrence) -> Result<TokenStream, Failure> {
        // `opt::steps` runs on host functions only.
        if r.clauses.iter().any(|c| !c.prelude.is_empty()) {
            return Err(Failure::Bug("a recurrence clause with a prelude in device code".into()));
        }
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
            // The number of points of the clause's own loops.
            let mut points = quote!(1usize);
            for l in &clause.loops {
                let e = self.extent(&l.end.sub(&l.start))?;
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
            clauses.push(quote!(if true #(&& #conds)* { #launch }));
        }
        let persistent = self.persistent(r, &own)?;
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
    fn persistent(
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
                points = quote!(#points * (#e));
            }
            small = quote!(#small && #points <= #PERSISTENT_MAX);
        }
        Ok(Some((konst, args, small)))
    }

    /// Zeroes the window's slot of the current step (index variable
    /// `step`) before the clauses write it.
    fn clear_slab(
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

    /// `let var = value;` on the host.
    fn bind(&mut self, var: VarId, value: &Expr) -> Result<TokenStream, Failure> {
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
    fn tuple_item(&self, t: &Expr, i: u32) -> Option<Expr> {
        match &t.kind {
            ExprKind::Var(v) => self.tuples.get(v).and_then(|items| items.get(i as usize)).cloned(),
            ExprKind::Tuple(items) => items.get(i as usize).cloned(),
            _ => None,
        }
    }

    /// A call of the CUDA version of `func`, after checking the failures so
    /// far (the callee checks, and clears, the shared status word).
    fn call(&mut self, func: FuncId, args: &[Expr]) -> Result<TokenStream, Failure> {
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
    fn scalar(&mut self, e: &Expr, k: ScalarKind) -> Result<TokenStream, Failure> {
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
    fn result(&mut self, e: &Expr) -> Result<TokenStream, Failure> {
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

/// The tensors `def`'s value reads at its own point (indices its axes in
/// order, unchecked), when its axes start at 0, it has more than one, and
/// it uses its axes nowhere else: over tensors of the output's shape, the
/// point is the flat position. `None` otherwise.
fn flat_reads(def: &TensorDef, f: &Function) -> Option<Vec<VarId>> {
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
