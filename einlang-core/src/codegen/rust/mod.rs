//! The Rust back end: one `fn` per IR function, loops over ndarray data.
//!
//! # Shape of the output
//!
//! ```text
//! #[doc = "..."]
//! #[allow(non_snake_case, ...)]
//! pub fn matmul<'__a0, '__a1>(a: impl Into<ArrayView<'__a0, f32, Ix2>>, b: ...)
//!     -> Result<Array<f32, Ix2>, Error>
//! {
//!     fn __body(a: ArrayView<'_, f32, Ix2>, b: ...) -> Result<Array<f32, Ix2>, Error> {
//!         use ::einlang::__private as __rt;
//!         use ::einlang::__private::ndarray as __nd;
//!         let M: i64 = a.shape()[0] as i64;                       // entry checks
//!         __rt::shape::check_dim("matmul", "b", 0, "K", K, b.shape()[0])?;
//!         let c: __nd::Array<f32, __nd::Ix2> = __rt::par::fill(...)?;  // statements
//!         Ok(c)
//!     }
//!     __body(a.into(), b.into())
//! }
//! ```
//!
//! The generic outer function only converts its arguments; the body is a
//! concrete inner function, so it is compiled once however many argument
//! types callers use. Functions without tensor parameters have no shim.
//!
//! On x86-64 the body starts with its own twin (`wide_twin`): the same
//! statements inside `#[target_feature(enable = "avx2,fma")] unsafe fn
//! __wide`, called when `__rt::cpu::wide()` holds, so that every loop of
//! the function is compiled eight `f32` lanes wide where the processor has
//! them. Not in `checked` mode, nor with `Options::baseline_only`. A
//! function whose loops evaluate polynomial math (`width`) also has an
//! AVX-512 twin, `__wide512`, taken first when `__rt::cpu::wide512()`
//! holds.
//!
//! # Values
//!
//! A tensor variable holds either an owned `Array` (computed in the
//! function: a `Tensor` statement, a call, a literal) or an `ArrayView` (a
//! parameter or a sub-tensor of one); both read the same way. Tuple-typed
//! variables always hold owned values. A tensor used as a call argument is
//! passed as `.view()`; a value that leaves a scope (the function result, the
//! branches of a tensor-valued `if`) goes through `__rt::value::owned`, which
//! moves standard-layout arrays and copies views, unless it is a variable
//! defined in that scope and used once there, which is moved as is.
//!
//! # Threads
//!
//! The IR says which loops are independent (the axes of a tensor definition,
//! a recurrence clause's own loops); this back end runs the outermost of them
//! through the runtime's rayon helpers (`par::fill`, `rec::each`,
//! `rec::fill_row`) and passes the work estimate, the IR's per-point cost
//! times the number of points. The runtime compares it with its threshold
//! (`par::parallel_work`) at run time, when the extents are known, and stays on
//! the calling thread below it.
//!
//! # Never panicking
//!
//! Reads proven in bounds are `unsafe { *t.uget([..]) }`; every other read,
//! integer division, remainder and power, negative extents and allocation
//! sizes go through runtime functions that return `Err`. Entry and extent
//! checks run before any loop that depends on them. Integer arithmetic on
//! values (`+ - *`, negation, `**`, the accumulation of `sum` and `prod`)
//! is written with `wrapping_*` methods, so it wraps in debug and release
//! builds alike, as the language defines it (in release they are the same
//! instructions as the operators). The back end's own addressing (positions,
//! offsets, extents) keeps plain operators.

mod ahead;
mod clip;
mod comm;
mod expr;
mod in_place;
mod into;
mod lane_maps;
mod lanes;
mod lines;
mod recur;
mod sweep;
mod tensor;
mod types;
mod width;

pub use width::avx512_fns;

use std::collections::{HashMap, HashSet};

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use crate::base::dim::Dim;
use crate::base::ops::RedOp;
use crate::codegen::host::{self, FnIdents, HostCode, VarIdents};
use crate::codegen::paths;
use crate::ir::{EntryCheck, Expr, ExprKind, FuncId, Function, Program, Repr, Stmt, VarId, VarInfo};

/// An internal error: the IR broke an invariant the emitter relies on.
pub type Bug = String;

/// How tightly an emitted expression binds, to parenthesize only where Rust
/// needs it (and where it helps the reader: blocks as operands).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Prec {
    /// Blocks, `if`, labeled blocks: parenthesized as any operand.
    Block,
    Or,
    And,
    Cmp,
    Add,
    Mul,
    Cast,
    Unary,
    /// Paths, literals, calls, method calls, indexing, parenthesized.
    Postfix,
}

/// An emitted expression with its precedence.
pub(crate) struct Code {
    pub tokens: TokenStream,
    pub prec: Prec,
}

impl Code {
    pub fn new(tokens: TokenStream, prec: Prec) -> Code {
        Code { tokens, prec }
    }

    /// The tokens for the tail of a block. An operator expression whose
    /// left operand is block-like (`unsafe { .. } + x`) would parse as a
    /// statement followed by garbage there, so it is parenthesized.
    pub fn tail(self) -> TokenStream {
        let block_like = match self.tokens.clone().into_iter().next() {
            Some(proc_macro2::TokenTree::Group(g)) => g.delimiter() == proc_macro2::Delimiter::Brace,
            Some(proc_macro2::TokenTree::Ident(id)) => {
                ["unsafe", "if", "match", "loop", "for", "while"].iter().any(|k| id == k)
            }
            Some(proc_macro2::TokenTree::Punct(p)) => p.as_char() == '\'',
            _ => false,
        };
        if block_like && self.prec != Prec::Block && self.prec != Prec::Postfix {
            let tokens = self.tokens;
            quote!((#tokens))
        } else {
            self.tokens
        }
    }

    /// The tokens, parenthesized unless they bind at least as tightly as
    /// `prec`.
    pub fn at_least(self, prec: Prec) -> TokenStream {
        if self.prec >= prec {
            self.tokens
        } else {
            let tokens = self.tokens;
            quote!((#tokens))
        }
    }
}

/// What a variable of non-scalar type holds at run time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ownership {
    /// An owned value (`Array`, `String`, a tuple of owned values).
    Owned,
    /// A borrowed value (`ArrayView`, `&str`).
    Borrowed,
}

/// Whether `f`, the function `id`, has an `_into` form (see `into`).
pub fn has_into(f: &Function, id: FuncId, fns: &FnIdents) -> bool {
    !into::outs(f, id, fns).is_empty()
}

/// The Rust name of the `_into` form of the function spelled `name`.
pub fn into_ident(name: &Ident) -> Ident {
    into::ident(name)
}

/// Emits one lowered function of program `p` as a Rust item; `fns` spells
/// the functions of `p`, `bound` names those bound to device code (emitted
/// as CUDA twins, without a host body). A function whose result holds tensors also gets its
/// `_into` form (see `into`): both call one body, which takes an `Out` per
/// tensor (`dest::Out::none()` from the plain form). `avx512`: whether its
/// twins include the AVX-512 one (`avx512_fns`).
pub fn emit_function(
    f: &Function,
    id: FuncId,
    p: &Program,
    bound: &std::collections::BTreeSet<FuncId>,
    fns: &FnIdents,
    options: &crate::codegen::Options,
    avx512: bool,
) -> Result<TokenStream, Bug> {
    let mut cx = FnCx::new(f, id, fns, options)?;
    let name = fns.ident(id)?;
    // A module's public function is re-exported by its module under its
    // Einlang name; the flat item itself stays out of the documentation.
    let vis = match (&f.export, f.public) {
        (Some(_), _) => quote!(#[doc(hidden)] pub),
        (None, true) => quote!(pub),
        (None, false) => quote!(),
    };
    let docs: Vec<TokenStream> = f.docs.iter().map(|d| quote!(#[doc = #d])).collect();
    let (nd_full, rt_full, err, result) = (paths::nd(), paths::rt(), paths::error(), paths::result());
    let ret = types::owned(&f.ret, &nd_full);
    // A function that may give up returns no result instead.
    let ret = if f.may_give_up() { quote!(::core::option::Option<#ret>) } else { ret };
    let outs = into::outs(f, id, fns);
    let out_ids: Vec<Ident> = (0..outs.len()).map(|i| format_ident!("__out{}", i)).collect();
    cx.bind_outs(&outs, &out_ids, p, bound)?;
    let body = cx.body()?;
    let allow = super::allow_lints(TokenStream::new());

    let mut lifetimes = Vec::new();
    let mut outer_params = Vec::new();
    let mut inner_params = Vec::new();
    let mut forwarded = Vec::new();
    for &p in &f.params {
        let info = cx.info(p)?;
        let id = cx.ident(p)?;
        match &info.ty {
            Repr::Tensor(..) | Repr::Dyn(_) => {
                let (k, rank) = match info.ty {
                    Repr::Tensor(k, rank) => (k, Some(rank)),
                    Repr::Dyn(k) => (k, None),
                    _ => return Err("a tensor parameter changed type".to_string()),
                };
                let lt = syn::Lifetime::new(&format!("'__a{}", lifetimes.len()), proc_macro2::Span::call_site());
                let view = types::view(k, rank, Some(&lt), &nd_full);
                let into = paths::into();
                outer_params.push(quote!(#id: impl #into<#view>));
                forwarded.push(quote!(#id.into()));
                lifetimes.push(lt);
            }
            other => {
                let ty = types::param(other, &nd_full)?;
                outer_params.push(quote!(#id: #ty));
                forwarded.push(quote!(#id));
            }
        }
        let inner_ty = types::param(&info.ty, &nd_full)?;
        inner_params.push(quote!(#id: #inner_ty));
    }

    let mut inner_args: Vec<Ident> = f.params.iter().map(|&p| cx.ident(p)).collect::<Result<_, _>>()?;
    for (&into::ResultTensor { elem, rank, .. }, id) in outs.iter().zip(&out_ids) {
        let (elem, dim) = (types::scalar(elem), types::dim_of(rank, &nd_full));
        inner_params.push(quote!(#id: &mut #rt_full::dest::Out<'_, #elem, #dim>));
        inner_args.push(id.clone());
    }
    let sharded = f.shard.is_some();
    if sharded {
        let world = quote!(__world: &::einlang::__private::dist::World);
        outer_params.insert(0, world.clone());
        inner_params.insert(0, world);
        forwarded.insert(0, quote!(__world));
        inner_args.insert(0, Ident::new("__world", proc_macro2::Span::call_site()));
    }
    // A function of scalars to a scalar (an activation a definition calls
    // per element, `std::ml::gelu_tanh`) has no twin of its own: its test
    // of `cpu::wide()` on every call kept the caller's loop scalar (GELU
    // over 16 Mi f32 ran 362 ms, its tanh alone 54 ms). It is inlined,
    // so inside a caller's twin it is compiled with the caller's
    // instructions (the same bits either way).
    let scalar = matches!(f.ret, Repr::Scalar(_))
        && !sharded
        && f.params.iter().all(|&p| cx.info(p).is_ok_and(|i| matches!(i.ty, Repr::Scalar(_))))
        && loop_free(f);
    let body = if options.checked || options.baseline_only || scalar {
        simd_form(&body, cx.uses_simd, Form::Portable)
    } else {
        wide_twin(&body, cx.uses_simd, &inner_params, &inner_args, &quote!(#result<#ret, #err>), avx512)
    };
    // `#[inline(always)]`: with a plain `#[inline]`, LLVM left `std::ml::gelu`
    // (erf and its exponential) out of the AVX-512 twin's loop, a call per
    // element into the baseline's scalar code (16 Mi f32: 471 ms against
    // 36 ms for `gelu_tanh`, which it did inline). Such a function has no
    // loops, so inlining it everywhere costs little code.
    let inline = if scalar { quote!(#[inline(always)]) } else { TokenStream::new() };
    if !outs.is_empty() {
        let entry = into::Entry {
            f,
            name: &name,
            vis: &vis,
            docs: &docs,
            allow: &allow,
            lifetimes: &lifetimes,
            outer_params: &outer_params,
            inner_params: &inner_params,
            forwarded: &forwarded,
            ret: &quote!(#result<#ret, #err>),
        };
        return into::emit(&entry, &body, &outs, &out_ids, &inner_args);
    }
    if sharded {
        // Every rank ends the call together: an error on one rank becomes
        // the same error on every rank (`dist::World::finish`).
        let generics = if lifetimes.is_empty() { quote!() } else { quote!(<#(#lifetimes),*>) };
        Ok(quote! {
            #(#docs)*
            #allow
            #vis fn #name #generics(#(#outer_params),*) -> #result<#ret, #err> {
                fn __body(#(#inner_params),*) -> #result<#ret, #err> {
                    #body
                }
                __world.begin();
                __world.finish(__body(#(#forwarded),*))
            }
        })
    } else if lifetimes.is_empty() {
        Ok(quote! {
            #(#docs)*
            #allow
            #inline
            #vis fn #name(#(#outer_params),*) -> #result<#ret, #err> {
                #body
            }
        })
    } else {
        Ok(quote! {
            #(#docs)*
            #allow
            #vis fn #name<#(#lifetimes),*>(#(#outer_params),*) -> #result<#ret, #err> {
                fn __body(#(#inner_params),*) -> #result<#ret, #err> {
                    #body
                }
                __body(#(#forwarded),*)
            }
        })
    }
}

/// Whether `f` runs no loop: its statements are `let`s and expressions,
/// and no expression reduces or holds statements of its own.
fn loop_free(f: &Function) -> bool {
    fn plain(e: &crate::ir::Expr) -> bool {
        let mut ok = !matches!(e.kind, ExprKind::Reduce { .. } | ExprKind::Block { .. });
        crate::ir::visit::for_each_child(e, &mut |c| ok = ok && plain(c));
        ok
    }
    let stmts_plain = f.body.iter().all(|s| match s {
        Stmt::Let { value, .. } | Stmt::Expr(value) => plain(value),
        _ => false,
    });
    stmts_plain && plain(&f.result)
}

/// `body`, preceded on x86-64 by a call of its twin compiled for AVX2 and
/// FMA when the processor has them (the runtime's `cpu` module says why
/// both compute the same bits). The twin is the same tokens inside a
/// `#[target_feature]` function, so every loop and closure in it is
/// compiled with the wider vectors; `params` are the body's parameters as
/// it reads them, `args` their names. With `avx512`, a third form compiled
/// for AVX-512 comes first, taken when `cpu::wide512` holds.
fn wide_twin(
    body: &TokenStream,
    simd: bool,
    params: &[TokenStream],
    args: &[Ident],
    ret: &TokenStream,
    avx512: bool,
) -> TokenStream {
    let rt = paths::rt();
    let allow = super::allow_lints(quote!(unused_unsafe, unsafe_op_in_unsafe_fn,));
    let body512 = simd_form(body, simd, Form::Avx512);
    let body2 = simd_form(body, simd, Form::Avx2);
    let body = simd_form(body, simd, Form::Portable);
    let widest = if avx512 {
        quote! {
            #allow
            #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")]
            unsafe fn __wide512(#(#params),*) -> #ret {
                #body512
            }
            if #rt::cpu::wide512() {
                // SAFETY: the processor has these AVX-512 subsets, AVX2 and
                // FMA (`cpu::wide512`).
                return unsafe { __wide512(#(#args),*) };
            }
        }
    } else {
        TokenStream::new()
    };
    quote! {
        #[cfg(target_arch = "x86_64")]
        {
            #widest
            #allow
            #[target_feature(enable = "avx2,fma")]
            unsafe fn __wide(#(#params),*) -> #ret {
                #body2
            }
            if #rt::cpu::wide() {
                // SAFETY: the processor has AVX2 and FMA (`cpu::wide`).
                return unsafe { __wide(#(#args),*) };
            }
        }
        #body
    }
}

/// The instruction set a CPU form of a generated function is compiled for,
/// which names its module of `vmath::lanes`.
#[derive(Clone, Copy)]
enum Form {
    Portable,
    Avx2,
    Avx512,
}

/// `body` with `__simd` bound to the module of `vmath::lanes` its CPU form
/// runs (`avx512` in the AVX-512 twin, `avx2` in the AVX2 twin, `portable`
/// in the others) when it calls it (`simd`: the runs of lanes of
/// `in_place.rs`, the extrema of `reduce_in_lanes`): the forms share their
/// tokens.
fn simd_form(body: &TokenStream, simd: bool, form: Form) -> TokenStream {
    if !simd {
        return body.clone();
    }
    let rt = paths::rt();
    let form = match form {
        Form::Portable => quote!(portable),
        Form::Avx2 => quote!(avx2),
        Form::Avx512 => quote!(avx512),
    };
    quote! {
        #[allow(unused_imports)]
        use #rt::vmath::lanes::#form as __simd;
        #body
    }
}

/// Per-function emission state.
pub(crate) struct FnCx<'a> {
    f: &'a Function,
    /// The Rust identifiers of the program's functions.
    fns: &'a FnIdents,
    /// Emit every read checked (`Options::checked`).
    all_checked: bool,
    /// `Options::script_dir`.
    script_dir: Option<String>,
    /// The function name, as a string literal for runtime errors.
    fn_name: proc_macro2::Literal,
    /// The Rust identifier of every variable (see `names`).
    idents: VarIdents,
    repr: HashMap<VarId, Ownership>,
    /// Tensors in standard layout: those this function allocates
    /// (`par::fill`, products, reshapes) and its tensor parameters, which
    /// the body reads through a standard-layout copy when they are not:
    /// their proven reads address memory directly, row-major from their
    /// shape, so the last axis has unit stride and inner loops vectorize.
    standard: HashSet<VarId>,
    /// How reads of each recurrence's tensor are emitted (see `recur`).
    rec_access: HashMap<VarId, recur::RecAccess>,
    /// What the function's top level defines that nothing moves: an owned
    /// tensor among them (a temporary) lives until the end, so a copy of
    /// one as it is may be a view of it (`TensorDef` emission).
    unmoved: HashSet<VarId>,
    /// What it defines that nothing but a reshape takes (a view of a
    /// temporary among them can be dropped at the end).
    unmoved_but_reshaped: HashSet<VarId>,
    /// Top-level views of such tensors: dropped before the temporaries go
    /// back to the pool.
    owned_views: Vec<VarId>,
    /// While a recurrence's clauses are emitted: the value passed from one
    /// point of its innermost loop to the next (see `recur::Carry`).
    carry: Option<recur::Carry>,
    /// While a clause's value is emitted for rows in lanes: the lanes'
    /// arrays its reads of the recurrence name (see `lanes`).
    lanes: Option<lanes::Lanes>,
    /// Variables known to be non-negative: dimensions bound from shapes and
    /// checked extents. Their `usize` conversion needs no check.
    nonneg: HashSet<VarId>,
    next_label: u32,
    /// How many times each variable is mentioned in the whole function.
    uses: HashMap<VarId, usize>,
    /// Greater than zero while emitting code that may run more than once or
    /// inside a closure (a `fill` body, a reduction loop), where a variable
    /// from outside cannot be moved.
    no_move: u32,
    /// The result tensors that `NAME_into` hands in: their definitions
    /// fill the caller's buffer when it has one (`fill_call`).
    outs: HashMap<VarId, Ident>,
    /// The call of another function that is the whole result, and the
    /// `Out` it is handed (`into::forwarded_call`): the callee's body
    /// fills the caller's buffer.
    out_call: Option<(&'a Expr, Ident)>,
    /// The `Out` of a result that is one tensor: a result that is a view
    /// (of a parameter, a block of one) is copied straight into it
    /// (`result_view`).
    out_whole: Option<Ident>,
    /// The results that are a reshape of a definition (`opt::lead`), by
    /// the result's variable.
    out_reshapes: HashMap<VarId, ReshapedOut>,
    /// While a result recurrence's steps are emitted (`recurrence`): the
    /// variable holding the store over the caller's buffer, if it got one
    /// (`dest::rec_into`).
    into_store: Option<(VarId, Ident)>,
    /// Sums of a definition's rows computed as it was written
    /// (`in_place::row_sum_of`): the tensor that sums them, the array that
    /// holds them and where the sum is defined.
    summed: HashMap<VarId, (Ident, in_place::SumAt)>,
    /// The row preludes being emitted, innermost last: a definition of one
    /// and a later sum of its rows in the same prelude (a chain run per
    /// batch, `opt::slices`) are found there by `row_sum_of`.
    preludes: Vec<Vec<Stmt>>,
    /// While a row prelude's second pass over its input's rows is
    /// emitted: the next rows its loop asks for (`ahead`).
    ahead: Option<ahead::Ahead>,
    /// Whether the body calls `__simd` (`simd_form` binds it then).
    uses_simd: bool,
    /// While a lane map's value is emitted (`lane_maps`): its function
    /// call and the tokens of the lane's value that replace it.
    lane_value: Option<(Expr, TokenStream)>,
    rt: TokenStream,
    nd: TokenStream,
}

impl HostCode for FnCx<'_> {
    type Error = Bug;

    fn function(&self) -> &Function {
        self.f
    }

    fn runtime(&self) -> &TokenStream {
        &self.rt
    }

    fn function_name(&self) -> &proc_macro2::Literal {
        &self.fn_name
    }

    fn var_ident(&self, v: VarId) -> Result<Ident, String> {
        self.idents.ident(v)
    }

    fn axis_length(&self, what: &str, var: VarId, path: &[u32], axis: usize) -> Result<TokenStream, Bug> {
        self.axis_len(what, var, path, axis)
    }
}

impl<'a> FnCx<'a> {
    fn new(f: &'a Function, id: FuncId, fns: &'a FnIdents, options: &crate::codegen::Options) -> Result<FnCx<'a>, Bug> {
        let idents = VarIdents::of(f);
        let mut uses: HashMap<VarId, usize> = HashMap::new();
        let mut count = |v: VarId| *uses.entry(v).or_default() += 1;
        for s in &f.body {
            crate::ir::visit::visit_stmt_var_uses(s, &mut count);
        }
        crate::ir::visit::visit_var_uses(&f.result, &mut count);
        Ok(FnCx {
            f,
            fns,
            all_checked: options.checked,
            script_dir: options.script_dir.clone(),
            fn_name: fns.error_name(id),
            idents,
            repr: HashMap::new(),
            standard: HashSet::new(),
            rec_access: HashMap::new(),
            unmoved: HashSet::new(),
            unmoved_but_reshaped: HashSet::new(),
            owned_views: Vec::new(),
            carry: None,
            lanes: None,
            nonneg: HashSet::new(),
            next_label: 0,
            uses,
            no_move: 0,
            outs: HashMap::new(),
            out_call: None,
            out_whole: None,
            out_reshapes: HashMap::new(),
            into_store: None,
            summed: HashMap::new(),
            preludes: Vec::new(),
            ahead: None,
            uses_simd: false,
            lane_value: None,
            rt: paths::rt_local(),
            nd: paths::nd_local(),
        })
    }

    /// Records which result tensors fill an `Out` (`ids`, one per entry of
    /// `outs`, see `into::outs`): a variable that is the result (or a
    /// tuple element of it), defined by a definition (a fill, an unbatched
    /// product) among the function's own statements or those of a block
    /// that is the value, and read nowhere else. The others are copied
    /// into their buffer after the body (`dest::Out::finish`).
    fn bind_outs(
        &mut self,
        outs: &[into::ResultTensor],
        ids: &[Ident],
        p: &Program,
        bound: &std::collections::BTreeSet<FuncId>,
    ) -> Result<(), Bug> {
        let f = self.f;
        if let ([into::ResultTensor { element: None, .. }], [id]) = (outs, ids) {
            self.out_whole = Some(id.clone());
            if let Some(call) = into::forwarded_call(f, p, self.fns, bound, &self.uses) {
                self.out_call = Some((call, id.clone()));
                return Ok(());
            }
        }
        for (&into::ResultTensor { element, .. }, id) in outs.iter().zip(ids) {
            let value = match (element, &f.result.kind) {
                (None, _) => &f.result,
                (Some(i), ExprKind::Tuple(items)) => match items.get(i) {
                    Some(item) => item,
                    None => return Err("a tuple result shorter than its type".to_string()),
                },
                (Some(_), _) => continue,
            };
            // The definition is among the function's statements, or those
            // of a block that is the value (`{ let t[i] = ..; t }`).
            let (stmts, value) = match &value.kind {
                ExprKind::Block { stmts, result } => (stmts.as_slice(), result.as_ref()),
                _ => (f.body.as_slice(), value),
            };
            let ExprKind::Var(v) = value.kind else { continue };
            if let Some((source, source_dims, dims)) = reshaped_definition(stmts, v) {
                if self.uses.get(&v) == Some(&1) && self.uses.get(&source) == Some(&1) && !self.outs.contains_key(&v) {
                    let view = format_ident!("{}_reshaped", id);
                    self.outs.insert(source, view.clone());
                    let reshaped = ReshapedOut { source, out: id.clone(), view, source_dims, dims };
                    self.out_reshapes.insert(v, reshaped);
                }
                continue;
            }
            let defined_here = stmts.iter().any(|s| match s {
                Stmt::Tensor(def) => def.var == v,
                Stmt::Rows(rows) => rows.def.var == v,
                // A definition split into rows computed apart (a sharded
                // one's interior and edges, `opt::shard`).
                Stmt::Recurrence(r) => r.var == v && r.seq.is_empty() && r.window.is_none(),
                Stmt::Gemm(g) => g.out == v,
                Stmt::Conv(c) => c.out == v && c.reference.axes.len() == 4 && c.otherwise.is_none(),
                _ => false,
            });
            if defined_here && self.uses.get(&v) == Some(&1) && !self.outs.contains_key(&v) {
                self.outs.insert(v, id.clone());
            }
        }
        Ok(())
    }

    /// The runtime call that allocates the tensor `var` and fills it,
    /// `MODULE::FILL(args)` (`par::fill_uninit`, `permute::permute`), or,
    /// when `var` is a result that `NAME_into` may hand a buffer for,
    /// `dest::FILL_into(args, out)`, which fills the buffer instead when
    /// there is one.
    /// A failed allocation inside it is an `Error::Alloc` naming `var`.
    fn fill_call(&self, var: VarId, module: &str, fill: &str, args: TokenStream) -> TokenStream {
        let rt = &self.rt;
        let (module, fill) = (format_ident!("{}", module), format_ident!("{}", fill));
        let call = match self.outs.get(&var) {
            Some(out) => {
                let fill = format_ident!("{}_into", fill);
                quote!(#rt::dest::#fill(#args, &mut *#out))
            }
            None => quote!(#rt::#module::#fill(#args)),
        };
        self.naming(var, call)
    }

    /// `call`, a runtime call that allocates the tensor `var` and returns
    /// a `Result`, with `var`'s name in the `Error::Alloc` it may return.
    fn naming(&self, var: VarId, call: TokenStream) -> TokenStream {
        let (rt, tensor) = (&self.rt, self.tensor_name(var));
        quote!(#rt::pool::named(#tensor, #call))
    }

    /// The source name of the tensor `var`, as a string literal (for
    /// errors).
    fn tensor_name(&self, var: VarId) -> proc_macro2::Literal {
        types::str_lit(self.f.vars.get(var.0 as usize).map_or("", |info| info.source_name.as_str()))
    }

    fn info(&self, v: VarId) -> Result<&'a VarInfo, Bug> {
        self.f.vars.get(v.0 as usize).ok_or_else(|| format!("variable {} is not declared", v.0))
    }

    fn ident(&self, v: VarId) -> Result<Ident, Bug> {
        self.idents.ident(v)
    }

    /// The Rust identifier of the program's function `id`.
    fn fn_ident(&self, id: FuncId) -> Result<Ident, Bug> {
        self.fns.ident(id)
    }

    /// A fresh block label, `'__guard0`, `'__guard1`, ...
    fn label(&mut self, what: &str) -> syn::Lifetime {
        let n = self.next_label;
        self.next_label += 1;
        syn::Lifetime::new(&format!("'__{what}{n}"), proc_macro2::Span::call_site())
    }

    /// The `i64` value of a dimension expression.
    fn dim(&self, d: &Dim) -> Result<TokenStream, Bug> {
        host::dim(self, d)
    }

    /// A dimension as the user would write it, for error messages.
    fn dim_text(&self, d: &Dim) -> String {
        host::dim_text(self.f, d)
    }

    /// An extent as a `usize` length: literal for constants, a plain
    /// conversion for variables known to be non-negative, and a checked
    /// conversion (`Error::Extent` when negative) otherwise.
    fn extent_usize(&self, d: &Dim) -> Result<TokenStream, Bug> {
        if let Some(c) = d.as_constant().and_then(|c| usize::try_from(c).ok()) {
            let lit = proc_macro2::Literal::usize_suffixed(c);
            return Ok(quote!(#lit));
        }
        if let Some(v) = d.as_var().map(|v| VarId(v.0)).filter(|v| self.nonneg.contains(v)) {
            let id = self.ident(v)?;
            return Ok(quote!(#id as usize));
        }
        let text = types::str_lit(&self.dim_text(d));
        self.extent_of(d, &text)
    }

    /// `d` as a `usize` length, `what` naming it in errors (see
    /// `host::extent_of`).
    fn extent_of(&self, d: &Dim, what: &proc_macro2::Literal) -> Result<TokenStream, Bug> {
        host::extent_of(self, d, what)
    }

    /// The whole body of the (inner) function.
    fn body(&mut self) -> Result<TokenStream, Bug> {
        let f = self.f;
        for &p in &f.params {
            if matches!(self.info(p)?.ty, Repr::Tensor(..) | Repr::Dyn(_) | Repr::Jagged(_) | Repr::Strs | Repr::Str) {
                self.repr.insert(p, Ownership::Borrowed);
            }
        }
        self.unmoved = self.unmoved_defs(&f.body, Some(&f.result), true, true).into_iter().collect();
        self.unmoved_but_reshaped = self.unmoved_defs(&f.body, Some(&f.result), true, false).into_iter().collect();
        let mut out = paths::body_prelude();
        for check in &f.entry {
            out.extend(self.entry(check)?);
        }
        if let Some(parts) = f.shard.as_ref().and_then(|s| s.parts.as_ref()) {
            out.extend(self.shard_entry(parts)?);
        }
        // Tensor parameters are read in standard layout: a view of any
        // strides is copied once (`pool::standard`; a standard one is
        // borrowed as it is, and a copy that cannot be allocated is
        // `Error::Alloc`), so that every read is a row-major offset whose
        // innermost axis LLVM knows to be contiguous.
        for &p in &f.params {
            if let Repr::Tensor(_, rank) = self.info(p)?.ty {
                if rank > 0 && !self.all_checked {
                    let id = self.ident(p)?;
                    let held = format_ident!("__standard_{}", id.to_string().trim_start_matches("r#"));
                    let (rt, fname, tname) = (&self.rt, &self.fn_name, self.tensor_name(p));
                    out.extend(quote! {
                        let #held = #rt::pool::standard(#fname, #tname, #id.view())?;
                        let #id = #held.view();
                    });
                    self.standard.insert(p);
                }
            }
        }
        if let Some(c) = &f.checkpointed {
            out.extend(self.checkpointed(c)?);
        }
        let mut k = 0;
        while k < f.body.len() {
            // Consecutive all-reduces of a sharded function travel in one
            // message.
            let run =
                f.body[k..].iter().take_while(|s| matches!(s, Stmt::Comm(crate::ir::Comm::AllReduce { .. }))).count();
            if run > 1 {
                out.extend(self.all_reduces(&f.body[k..k + run])?);
                k += run;
                continue;
            }
            out.extend(self.stmt(&f.body[k])?);
            k += 1;
        }
        let result = if is_plain(&f.result.ty) {
            self.expr(&f.result)?.tokens
        } else if let Some(copy) = self.result_view()? {
            copy
        } else {
            let all: HashSet<VarId> = (0..f.vars.len() as u32).map(VarId).collect();
            self.owned(&f.result, &movable(&all, &f.result))?.tokens
        };
        let mut temps: Vec<TokenStream> =
            self.temporaries(&self.f.body, Some(&self.f.result), true)?.into_iter().map(|t| quote!(#t)).collect();
        temps.extend(self.dead_lets()?);
        let result = if f.may_give_up() { quote!(::core::option::Option::Some(#result)) } else { result };
        if temps.is_empty() {
            out.extend(quote!(Ok(#result)));
        } else {
            // Large temporaries go back to the runtime's pool, so that the
            // next call does not map their pages afresh; the views of them
            // that nothing moved end first.
            let rt = &self.rt;
            let mut views = Vec::new();
            // (Latest first: a reshape's view borrows the view it reshaped.)
            for v in self.owned_views.iter().rev().filter(|v| self.unmoved_but_reshaped.contains(v)) {
                views.push(self.ident(*v)?);
            }
            out.extend(quote! {
                let __result = #result;
                #(::core::mem::drop(#views);)*
                #(#rt::pool::recycle(#temps);)*
                Ok(__result)
            });
        }
        Ok(out)
    }

    /// The function's result when it is one tensor held as a view (a
    /// parameter, a block of one: `let y[i] = x[i]; y`): copied in
    /// parallel (`dest::permute_into` with the axes in order, a blocked
    /// copy) into the caller's buffer when `NAME_into` has one, else into a
    /// buffer from the pool. (`value::owned` copies it too, but
    /// `NAME_into` then copied that copy into the buffer again.)
    fn result_view(&self) -> Result<Option<TokenStream>, Bug> {
        let (Some(out), ExprKind::Var(v)) = (&self.out_whole, &self.f.result.kind) else { return Ok(None) };
        let Repr::Tensor(_, rank) = self.info(*v)?.ty else { return Ok(None) };
        // (A definition that fills the buffer holds an owned placeholder.)
        if self.repr.get(v) != Some(&Ownership::Borrowed) {
            return Ok(None);
        }
        let (rt, fname, id) = (&self.rt, &self.fn_name, self.ident(*v)?);
        let axes = (0..rank).map(types::usize_lit);
        Ok(Some(quote!(#rt::dest::permute_into(#fname, #id.view(), &[#(#axes),*], #id.raw_dim(), &mut *#out)?)))
    }

    /// The tensors that `stmts` (a function's top-level statements, a row's
    /// prelude) define and own that neither `result` nor, when `stmts` may
    /// move values (not in a row, whose code moves nothing), a `let`
    /// mentions and no reshape took: dead once the result is computed.
    fn temporaries(&self, stmts: &[Stmt], result: Option<&crate::ir::Expr>, moves: bool) -> Result<Vec<Ident>, Bug> {
        let mut temps = Vec::new();
        for v in self.unmoved_defs(stmts, result, moves, true) {
            let owned = matches!(self.repr.get(&v), Some(Ownership::Owned));
            if owned && matches!(self.info(v)?.ty, Repr::Tensor(..)) {
                temps.push(self.ident(v)?);
            }
        }
        Ok(temps)
    }

    /// The tensors that the function's top-level `let`s own (moved in,
    /// as `let a = t;`, or a tuple of them, as a tuple of gradients) and
    /// that nothing takes after: not the result, nor a later statement
    /// that may move or keep a borrow of them (a reshape, an expression
    /// statement, a `let` of a tensor or tuple other than a plain view or
    /// field of one). Each is spelled as the place to recycle: `a`, `t.0`.
    fn dead_lets(&self) -> Result<Vec<TokenStream>, Bug> {
        let f = self.f;
        let mut taken = HashSet::new();
        crate::ir::visit::visit_var_uses(&f.result, &mut |v| {
            taken.insert(v);
        });
        let mut owning = Vec::new();
        for s in &f.body {
            let keeps = match s {
                Stmt::Let { var, value } => {
                    let plain_borrow = self.repr.get(var) == Some(&Ownership::Borrowed)
                        && matches!(value.kind, ExprKind::Var(_) | ExprKind::Field(..) | ExprKind::View { .. });
                    if self.repr.get(var) == Some(&Ownership::Owned) {
                        owning.push(*var);
                    }
                    // (A scalar's value reads tensors; it moves none,
                    // unless a block inside it has statements of its own.)
                    !plain_borrow && !(is_plain(&value.ty) && !has_block(value))
                }
                Stmt::Reshape { .. } | Stmt::Expr(_) | Stmt::Sweep(_) => true,
                _ => false,
            };
            if keeps {
                crate::ir::visit::visit_stmt_var_uses(s, &mut |v| {
                    taken.insert(v);
                });
            }
        }
        let mut places = Vec::new();
        for v in owning.into_iter().filter(|v| !taken.contains(v)) {
            let id = self.ident(v)?;
            match &self.info(v)?.ty {
                Repr::Tensor(..) => places.push(quote!(#id)),
                Repr::Tuple(items) => {
                    for (i, item) in items.iter().enumerate() {
                        if matches!(item, Repr::Tensor(..)) {
                            let i = syn::Index::from(i);
                            places.push(quote!(#id.#i));
                        }
                    }
                }
                _ => {}
            }
        }
        Ok(places)
    }

    /// What `stmts` define that neither `result` nor (when `moves`) a
    /// `let` of a non-scalar or an expression statement mentions and (when
    /// `reshapes`) no reshape took.
    fn unmoved_defs(
        &self,
        stmts: &[Stmt],
        result: Option<&crate::ir::Expr>,
        moves: bool,
        reshapes: bool,
    ) -> Vec<VarId> {
        let mut mentioned = HashSet::new();
        if let Some(result) = result {
            crate::ir::visit::visit_var_uses(result, &mut |v| {
                mentioned.insert(v);
            });
        }
        let mut defined = Vec::new();
        for s in stmts {
            match s {
                Stmt::Tensor(d) => defined.push(d.var),
                Stmt::Rows(r) => defined.push(r.def.var),
                Stmt::Gemm(g) => defined.push(g.out),
                Stmt::Conv(c) => defined.push(c.out),
                // A recurrence's tensor (a window, or a whole tensor such
                // as the running values `opt::scan` makes) that nothing
                // mentioned below moves: a temporary, back to the pool at
                // the end.
                Stmt::Recurrence(r) => defined.push(r.var),
                Stmt::Reshape { var, source, .. } => {
                    defined.push(*var);
                    if reshapes {
                        mentioned.insert(*source);
                    }
                }
                // A `let` of a scalar reads tensors; it moves none (unless
                // a block inside it has statements of its own).
                Stmt::Let { value, .. } if is_plain(&value.ty) && !has_block(value) => {}
                // Another `let` or an expression statement may move a tensor.
                Stmt::Let { .. } | Stmt::Expr(_) if moves => crate::ir::visit::visit_stmt_var_uses(s, &mut |v| {
                    mentioned.insert(v);
                }),
                _ => {}
            }
        }
        defined.retain(|v| !mentioned.contains(v));
        defined
    }

    /// Entry code of a function with a checkpointed alternative: when the
    /// history is over the runtime's limit, the alternative's result, unless
    /// it gave up.
    fn checkpointed(&mut self, c: &crate::ir::Checkpointing) -> Result<TokenStream, Bug> {
        let rt = self.rt.clone();
        let (steps, state) = (self.dim(&c.steps)?, self.dim(&c.state)?);
        let bytes = proc_macro2::Literal::usize_suffixed(c.elem.size_bytes());
        let alt = self.fn_ident(c.alternative)?;
        let mut args = Vec::new();
        for &p in &self.f.params {
            let e = crate::ir::Expr { kind: ExprKind::Var(p), ty: self.info(p)?.ty.clone() };
            args.push(self.arg(&e)?);
        }
        Ok(quote! {
            if #rt::ckpt::use_checkpoints(#steps, #state, #bytes) {
                if let ::core::option::Option::Some(__r) = #alt(#(#args),*)? {
                    return Ok(__r);
                }
            }
        })
    }

    /// The length of axis `axis` of tensor `var`, or of the tensor at
    /// `path` in a tuple `var`; `what` names the check for the error.
    fn axis_len(&self, what: &str, var: VarId, path: &[u32], axis: usize) -> Result<TokenStream, Bug> {
        let info = self.info(var)?;
        let id = self.ident(var)?;
        let fields = path.iter().map(|i| syn::Index::from(*i as usize));
        let value = quote!(#id #(.#fields)*);
        match crate::ir::tuple_element(&info.ty, path) {
            Some(Repr::Tensor(_, rank)) if axis < *rank => {}
            Some(Repr::Strs) if axis == 0 => return Ok(quote!(#value.len())),
            _ => {
                return Err(format!("{what} of axis {axis} of `{}`{path:?}, which has type `{:?}`", info.name, info.ty))
            }
        }
        let axis = types::usize_lit(axis);
        Ok(quote!(#value.shape()[#axis]))
    }

    fn entry(&mut self, check: &EntryCheck) -> Result<TokenStream, Bug> {
        if let EntryCheck::BindDim { dim, .. } = check {
            // A length.
            self.nonneg.insert(*dim);
        }
        host::entry(self, check)
    }

    pub(crate) fn stmt(&mut self, s: &Stmt) -> Result<TokenStream, Bug> {
        let defined = match s {
            Stmt::Tensor(def) => Some(def.var),
            Stmt::Rows(rows) => Some(rows.def.var),
            Stmt::Gemm(g) => Some(g.out),
            _ => None,
        };
        let reshaped = self.out_reshapes.values().find(|r| Some(r.source) == defined).cloned();
        let code = self.stmt_code(s)?;
        let Some(ReshapedOut { out, view, source_dims, dims, .. }) = reshaped else { return Ok(code) };
        // The result's buffer seen in the shape of the definition that
        // fills it (checked against the result's shape first).
        let (rt, name) = (self.rt.clone(), self.fn_name.clone());
        let (full, shape) = (self.usize_dims(&dims)?, self.usize_dims(&source_dims)?);
        Ok(quote! {
            let #view = &mut #rt::dest::Out::reshaped(&mut *#out, #name, &[#(#full),*], [#(#shape),*])?;
            #code
        })
    }

    /// Extents as `usize` values (a negative one as zero).
    fn usize_dims(&mut self, dims: &[Dim]) -> Result<Vec<TokenStream>, Bug> {
        dims.iter()
            .map(|d| {
                let d = self.dim(d)?;
                Ok(quote!((#d).max(0) as usize))
            })
            .collect()
    }

    fn stmt_code(&mut self, s: &Stmt) -> Result<TokenStream, Bug> {
        let (rt, name) = (self.rt.clone(), self.fn_name.clone());
        match s {
            Stmt::Let { var, value } => self.bind(*var, value),
            Stmt::Extent { var, value, what } => {
                self.nonneg.insert(*var);
                host::extent(self, *var, value, what)
            }
            Stmt::SameExtent { index, a, a_what, b, b_what } => {
                host::same_extent(self, index, (a, a_what), (b, b_what))
            }
            Stmt::Tensor(def) => self.tensor_def(def),
            Stmt::Rows(rows) => self.rows(rows),
            Stmt::Gemm(g) => self.gemm(g),
            Stmt::Conv(c) => self.conv(c),
            Stmt::Recurrence(r) => self.recurrence(r),
            Stmt::Sweep(w) => self.sweep(w),
            Stmt::CheckResultDim { tensor, path, axis, symbol, declared } => {
                host::check_result_dim(self, (*tensor, path, *axis), symbol, declared)
            }
            Stmt::Reshape { var, source, elem, dims } => {
                let (id, src) = (self.ident(*var)?, self.ident(*source)?);
                let nd = self.nd.clone();
                let lens = self.usize_dims(dims)?;
                let (array, shape) = (types::array(*elem, Some(dims.len()), &nd), types::shape(&lens, &nd));
                // Both return standard layout.
                self.standard.insert(*var);
                if let Some(ReshapedOut { out, view, .. }) = self.out_reshapes.get(var) {
                    // The definition filled the reshaped view of the
                    // result's buffer, or returned the array to reshape
                    // (a view of another tensor as an array of its own).
                    let value = match self.repr.get(source) {
                        Some(Ownership::Owned) => quote!(#src),
                        _ => quote!(#src.to_owned()),
                    };
                    self.repr.insert(*var, Ownership::Owned);
                    return Ok(quote! {
                        let __wrote = #view.wrote();
                        let #id: #array = #out.adopt(#name, __wrote, #value, #shape)?;
                    });
                }
                // A borrowed tensor (a parameter) is viewed, or copied
                // when it is not in standard layout.
                if matches!(self.repr.get(source), Some(Ownership::Borrowed)) {
                    self.repr.insert(*var, Ownership::Borrowed);
                    if self.owned_views.contains(source) {
                        self.owned_views.push(*var);
                    }
                    return Ok(quote!(let #id = #rt::shape::reshape_view(#name, #src.view(), #shape)?;));
                }
                self.repr.insert(*var, Ownership::Owned);
                Ok(quote!(let #id: #array = #rt::shape::reshape_owned(#name, #src, #shape)?;))
            }
            Stmt::Comm(c) => self.comm(c),
            Stmt::Expr(e) => {
                let statement_like =
                    matches!(e.kind, ExprKind::Call { .. } | ExprKind::If { .. } | ExprKind::Block { .. });
                let code = self.expr(e)?.tokens;
                if statement_like {
                    Ok(quote!(#code;))
                } else {
                    Ok(quote!(let _ = #code;))
                }
            }
        }
    }

    /// The entry of a sharded function: the ranks agree that their entry
    /// checks passed, on the extents and on the scalar parameters, binding
    /// the symbol's whole extent and this rank's offset (`ir::ShardParts`).
    fn shard_entry(&mut self, parts: &crate::ir::ShardParts) -> Result<TokenStream, Bug> {
        use crate::base::scalar::ScalarKind as K;
        let (rt, name) = (self.rt.clone(), self.fn_name.clone());
        let (global, local, offset) = (self.ident(parts.global)?, self.ident(parts.local)?, self.ident(parts.offset)?);
        let mut values = vec![quote!(#local)];
        let mut names = vec![types::str_lit(&self.info(parts.global)?.source_name)];
        for &d in &parts.agreed {
            let id = self.ident(d)?;
            values.push(quote!(#id));
            names.push(types::str_lit(&self.info(d)?.source_name));
        }
        // Scalar parameters must be the same on every rank (a step count
        // that differs would pair different collectives).
        let (mut scalars, mut scalar_names) = (Vec::new(), Vec::new());
        for &p in &self.f.params {
            let Repr::Scalar(k) = self.info(p)?.ty else { continue };
            let id = self.ident(p)?;
            scalars.push(match k {
                K::F32 | K::F64 => quote!(#rt::dist::Scalar::Float(#id as f64)),
                K::Bool => quote!(#rt::dist::Scalar::Bool(#id)),
                K::I8 | K::I16 | K::I32 | K::I64 | K::U8 | K::U32 | K::U64 => {
                    quote!(#rt::dist::Scalar::Int(#id as i64))
                }
                #[allow(unreachable_patterns)]
                _ => continue,
            });
            scalar_names.push(types::str_lit(&self.info(p)?.source_name));
        }
        self.nonneg.insert(parts.global);
        self.nonneg.insert(parts.offset);
        self.nonneg.insert(parts.local);
        let holds = if parts.halo { quote!(__holds) } else { quote!(_) };
        let want = parts.halo;
        Ok(quote! {
            let (#global, #offset, #holds): (i64, i64, ::std::vec::Vec<i64>) = #rt::dist::agree_entry(
                __world, #name, &[#(#values),*], &[#(#names),*], &[#(#scalars),*], &[#(#scalar_names),*], #want,
            )?;
        })
    }

    /// Several all-reduces (`Comm::AllReduce` statements) in one message.
    fn all_reduces(&mut self, stmts: &[Stmt]) -> Result<TokenStream, Bug> {
        let (rt, nd) = (self.rt.clone(), self.nd.clone());
        let mut prepare = TokenStream::new();
        let mut parts = Vec::new();
        let mut finish = TokenStream::new();
        let mut names = Vec::new();
        for s in stmts {
            let Stmt::Comm(crate::ir::Comm::AllReduce { out, input, op, elem }) = s else {
                return Err("not an all-reduce".into());
            };
            let combine = combine_of(*op)?;
            let (o, i) = (self.ident(*out)?, self.ident(*input)?);
            let t = types::scalar(*elem);
            names.push(self.info(*out)?.source_name.clone());
            match self.info(*out)?.ty {
                Repr::Scalar(_) => {
                    let held = quote::format_ident!("__one_{}", o.to_string().trim_start_matches("r#"));
                    prepare.extend(quote!(let mut #held: [#t; 1] = [#i];));
                    parts.push(quote!(&mut #rt::dist::Values { values: &mut #held[..], op: #rt::dist::Combine::#combine } as &mut dyn #rt::dist::Part));
                    finish.extend(quote!(let #o: #t = #held[0];));
                }
                Repr::Tensor(_, rank) => {
                    let array = types::array(*elem, Some(rank), &nd);
                    self.repr.insert(*out, Ownership::Owned);
                    self.standard.insert(*out);
                    // (Before the agreement below: a copy that fails is
                    // this rank's status.)
                    let (fname, tname) = (&self.fn_name, self.tensor_name(*out));
                    prepare.extend(quote!(let mut #o: #array = #rt::pool::copy(#fname, #tname, #i.view())?;));
                    parts.push(quote!(&mut #rt::dist::Values { values: #o.as_slice_mut().unwrap_or(&mut []), op: #rt::dist::Combine::#combine } as &mut dyn #rt::dist::Part));
                }
                _ => return Err("an all-reduce of a value that is not a scalar or tensor".into()),
            }
        }
        // `all_reduce_parts` allocates its message fallibly, then agrees
        // on the ranks' status before sending.
        let (fname, tnames) = (&self.fn_name, types::str_lit(&names.join(", ")));
        Ok(quote! {
            #prepare
            __world.all_reduce_parts(#fname, #tnames, ::core::result::Result::Ok(()), &mut [#(#parts),*])?;
            #finish
        })
    }

    /// `let var = value;` (also where-bindings). Scalars get their type
    /// written out; a tensor bound to a variable or a sub-tensor is a view,
    /// anything else non-scalar is owned.
    fn bind(&mut self, var: VarId, value: &crate::ir::Expr) -> Result<TokenStream, Bug> {
        let id = self.ident(var)?;
        let ty = &self.info(var)?.ty;
        match ty {
            Repr::Scalar(k) => {
                let (t, v) = (types::scalar(*k), self.expr(value)?.tokens);
                Ok(quote!(let #id: #t = #v;))
            }
            Repr::Unit => {
                let v = self.expr(value)?.tokens;
                Ok(quote!(let #id: () = #v;))
            }
            Repr::Tensor(..) | Repr::Dyn(_) | Repr::Jagged(_) | Repr::Strs | Repr::Str | Repr::Tuple(_) => {
                // An owned variable mentioned only here moves into the new
                // one (`let out = c;`), unless this code runs repeatedly.
                if let ExprKind::Var(x) = value.kind {
                    if self.no_move == 0
                        && self.repr.get(&x) == Some(&Ownership::Owned)
                        && self.uses.get(&x) == Some(&1)
                    {
                        let x_id = self.ident(x)?;
                        self.repr.insert(var, Ownership::Owned);
                        return Ok(quote!(let #id = #x_id;));
                    }
                }
                let borrowed = !matches!(ty, Repr::Tuple(_))
                    && (matches!(value.kind, ExprKind::Var(_) | ExprKind::View { .. } | ExprKind::Lit(_))
                        || expr::converts_a_view(value)
                        || self.place(value)?.is_some());
                // Owned tensors mentioned only here move into the value
                // (a tuple of gradients) instead of being copied.
                let only_here = if self.no_move == 0 {
                    let once: HashSet<VarId> = self.uses.iter().filter(|(_, n)| **n == 1).map(|(v, _)| *v).collect();
                    movable(&once, value)
                } else {
                    HashSet::new()
                };
                let v = if borrowed { self.expr(value)?.tokens } else { self.owned(value, &only_here)?.tokens };
                self.repr.insert(var, if borrowed { Ownership::Borrowed } else { Ownership::Owned });
                Ok(quote!(let #id = #v;))
            }
        }
    }
}

/// Scalars and unit: values that are copied, never borrowed or moved.
fn is_plain(ty: &Repr) -> bool {
    matches!(ty, Repr::Scalar(_) | Repr::Unit)
}

/// The runtime's name (`dist::Combine`) for how an all-reduce combines.
fn combine_of(op: RedOp) -> Result<TokenStream, Bug> {
    Ok(match op {
        RedOp::Sum => quote!(Sum),
        RedOp::Prod => quote!(Prod),
        RedOp::Max => quote!(Max),
        RedOp::Min => quote!(Min),
        RedOp::All => quote!(And),
        RedOp::Any => quote!(Or),
        RedOp::ArgMax | RedOp::ArgMin => return Err("an all-reduce of an argmax".into()),
    })
}

/// Whether `e` holds a block (whose statements may move a tensor).
fn has_block(e: &crate::ir::Expr) -> bool {
    if matches!(e.kind, ExprKind::Block { .. }) {
        return true;
    }
    let mut found = false;
    crate::ir::visit::for_each_child(e, &mut |c| found = found || has_block(c));
    found
}

/// The variables of `scope` that `e` mentions exactly once: those can be
/// moved out when `e` is the last use of the scope.
fn movable(scope: &HashSet<VarId>, e: &crate::ir::Expr) -> HashSet<VarId> {
    let mut counts: HashMap<VarId, usize> = HashMap::new();
    crate::ir::visit::visit_var_uses(e, &mut |v| *counts.entry(v).or_default() += 1);
    counts.into_iter().filter(|(v, n)| *n == 1 && scope.contains(v)).map(|(v, _)| v).collect()
}

/// A name derived from a variable's identifier, for emitter temporaries:
/// `__{prefix}{name}{suffix}`, where `prefix` is a category such as `pos_`,
/// `row_`, `sum_` (see `tensor.rs` for why these cannot collide).
fn derived(prefix: &str, id: &Ident, suffix: &str) -> Ident {
    let name = id.to_string();
    let name = name.strip_prefix("r#").unwrap_or(&name);
    format_ident!("__{}{}{}", prefix, name, suffix)
}

/// A result that is a reshape of a definition (`opt::lead`) and its
/// `NAME_into` buffer: the definition fills `view`, the buffer `out` seen
/// in the definition's shape (`dest::Out::reshaped`).
#[derive(Clone)]
struct ReshapedOut {
    /// The definition's variable.
    source: VarId,
    out: Ident,
    view: Ident,
    /// The definition's extents and the result's.
    source_dims: Vec<Dim>,
    dims: Vec<Dim>,
}

/// The definition (a fill, rows, or a product: a 1x1 convolution's batch
/// of products seen as `[n, o, h, w]`) in `stmts` whose reshape is `v`,
/// with its extents and `v`'s.
fn reshaped_definition(stmts: &[Stmt], v: VarId) -> Option<(VarId, Vec<Dim>, Vec<Dim>)> {
    let (source, dims) = stmts.iter().find_map(|s| match s {
        Stmt::Reshape { var, source, dims, .. } if *var == v => Some((*source, dims.clone())),
        _ => None,
    })?;
    let extents = stmts.iter().find_map(|s| match s {
        Stmt::Tensor(d) if d.var == source => Some(d.axes.iter().map(|a| a.extent.clone()).collect()),
        Stmt::Rows(r) if r.def.var == source => Some(r.def.axes.iter().map(|a| a.extent.clone()).collect()),
        Stmt::Gemm(g) if g.out == source && g.slice.is_none() => {
            Some(g.batch.iter().cloned().chain([g.m.clone(), g.n.clone()]).collect())
        }
        _ => None,
    })?;
    Some((source, extents, dims))
}
