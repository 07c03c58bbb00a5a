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
//!
//! # Files
//!
//! - `mod.rs`: the host glue of one function (`HostCx`: its entry, which
//!   is `codegen::host`'s, its statements in order, status checks);
//! - `values.rs`: host values (`let`s, calls of CUDA versions, scalars
//!   computed on the device, the result);
//! - `launch.rs`: launch strategy (a thread, warp or block per point,
//!   four-wide twins, row kernels, cuBLAS);
//! - `recur.rs`: recurrences (host loops of launches, persistent kernels);
//! - `templates.rs`: the CUDA C text the glue fills in;
//! - `kernel.rs`: CUDA C of kernel bodies (`dim.rs`: dimensions as C);
//!   `comm.rs`: collectives;
//! - `calls.rs`: what the back end reads from the program's call graph
//!   (device twins, functions bound to device code).

mod calls;
mod comm;
mod dim;
pub mod kernel;
mod launch;
mod recur;
mod templates;
mod values;

#[cfg(test)]
mod tests;

use std::collections::{HashMap, HashSet};

use proc_macro2::{Ident, Literal as RustLit, TokenStream};
use quote::{format_ident, quote};

use crate::base::dim::Dim;
use crate::base::scalar::ScalarKind;
use crate::codegen::host::{self, HostCode, VarIdents};
use crate::codegen::paths;
use crate::ir::{Expr, ExprKind, FuncId, Function, Literal, Program, Repr, Stmt, VarId};
pub use calls::{device_bound, device_twins};
use kernel::{KernelCx, Site};

/// Why a function has no CUDA version.
#[derive(Debug)]
pub enum Failure {
    /// A construct this back end does not run yet (a user-facing error:
    /// "`#[device(cuda)]` does not support X yet").
    Unsupported(String),
    /// The IR broke an invariant (an internal compiler error).
    Bug(String),
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
    let mut cx = HostCx::new((f, id), p, fns, options, &name)?;
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
    host::static_dim(rank, nd).ok_or_else(|| Failure::Unsupported(format!("tensors of rank {rank} (at most 6)")))
}

fn scalar_type(k: ScalarKind) -> TokenStream {
    host::scalar_type(k)
}

fn usize_lit(n: usize) -> RustLit {
    RustLit::usize_unsuffixed(n)
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
        (f, id): (&'a Function, FuncId),
        p: &'a Program,
        fns: &'a crate::codegen::host::FnIdents,
        options: &crate::codegen::Options,
        name: &Ident,
    ) -> Result<HostCx<'a>, Failure> {
        let rust_name = name.to_string();
        let idents = VarIdents::of(f);
        let dev = if idents.spells("dev") { format_ident!("__dev") } else { format_ident!("dev") };
        Ok(HostCx {
            f,
            idents,
            p,
            fns,
            all_checked: options.checked,
            fn_name: fns.error_name(id),
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

    /// The number of steps of a loop whose range has length `d`: none when
    /// it is negative (`Error::Extent` when its arithmetic overflows).
    fn count(&self, d: &Dim) -> Result<TokenStream, Failure> {
        host::count_of(self, d, &RustLit::string(&host::dim_text(self.f, d)))
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
            // `opt::conv` runs on host functions only; the loop nest is
            // the same definition.
            Stmt::Conv(c) => self.tensor_def(&c.reference),
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

    fn own_ident(&self, v: VarId) -> Result<Ident, Failure> {
        Ok(format_ident!("__own_{}", self.ident(v)?))
    }
}
