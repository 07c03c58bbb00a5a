//! The host side both back ends share: how the generated Rust spells the
//! program's identifiers, and the host code of the checks every function
//! makes whichever back end computes its body.
//!
//! - Identifiers (`names`): functions and variables are spelled once per
//!   scope, with one set of rules (keywords, prelude names and the `__`
//!   prefix the back ends keep for their own temporaries are escaped;
//!   escaped names are kept apart). [`FnIdents`] spells the program's
//!   functions by id, [`VarIdents`] a function's variables.
//! - Checks: a function's entry (dimensions bound from its parameters and
//!   checked against each other, `entry`), extents computed from them
//!   (`extent`, `same_extent`) and its result's declared dimensions
//!   (`check_result_dim`) are the same calls into the runtime's `shape`
//!   module from both back ends; each back end supplies what differs (how it
//!   reads a tensor's length along an axis) through `HostCode`.
//!
//! Scalar and dimension types are spelled once ([`scalar_type`],
//! [`static_dim`]). Dimensions are spelled as Rust `i64` expressions over the function's
//! variables (`dim`, `checked_dim`; the spelling itself is `dim.rs`).

pub mod dim;
pub(crate) mod names;

use proc_macro2::{Ident, Literal, TokenStream};
use quote::{format_ident, quote};

use crate::base::dim::{Dim, DimVar};
use crate::base::scalar::ScalarKind;
use crate::ir::{EntryCheck, FuncId, Function, Program, VarId};

/// The largest rank with a static `ndarray` dimension type (`Ix6`).
pub const MAX_STATIC_RANK: usize = 6;

/// The Rust type of a scalar of element type `k`: `f32`, `i64`, ...; the
/// `half` crate's types through the facade.
pub fn scalar_type(k: ScalarKind) -> TokenStream {
    let id = format_ident!("{}", k.name());
    if k.is_half() {
        let rt = crate::codegen::paths::rt();
        return quote!(#rt::half::#id);
    }
    quote!(#id)
}

/// `nd::Ix2`: the static dimension type of `rank`, `None` above
/// [`MAX_STATIC_RANK`].
pub fn static_dim(rank: usize, nd: &TokenStream) -> Option<TokenStream> {
    (rank <= MAX_STATIC_RANK).then(|| {
        let id = format_ident!("Ix{}", rank);
        quote!(#nd::#id)
    })
}

/// The Rust identifiers of a program's functions, by id (see `names`); a
/// function whose name has none has no identifier.
pub struct FnIdents {
    names: Vec<String>,
    idents: Vec<Option<Ident>>,
}

impl FnIdents {
    /// The Rust identifiers of every function of `p`.
    pub fn of(p: &Program) -> FnIdents {
        let idents = names::rust_idents(p.fns.iter().map(|f| f.name.as_str()));
        FnIdents { names: p.fns.iter().map(|f| f.name.clone()).collect(), idents }
    }

    /// The Rust identifier of function `id`, if it has one.
    pub fn get(&self, id: FuncId) -> Option<&Ident> {
        self.idents.get(id.index()).and_then(Option::as_ref)
    }

    /// The Rust identifier of function `id`, or the internal error that
    /// says why it has none.
    pub fn ident(&self, id: FuncId) -> Result<Ident, String> {
        match (self.get(id), self.names.get(id.index())) {
            (Some(ident), _) => Ok(ident.clone()),
            (None, Some(name)) => Err(format!("`{name}` is not a valid Rust identifier")),
            (None, None) => Err(format!("function {} is not a function of the program", id.0)),
        }
    }

    /// Whether some function of the program is spelled `ident`.
    pub fn spells(&self, ident: &Ident) -> bool {
        self.idents.iter().flatten().any(|other| other == ident)
    }

    /// The name run-time errors of function `id` give, whichever back end
    /// runs it: its Rust spelling (the IR name when it has none).
    pub fn error_name(&self, id: FuncId) -> Literal {
        match (self.get(id), self.names.get(id.index())) {
            (Some(ident), _) => Literal::string(&ident.to_string()),
            (None, name) => Literal::string(name.map_or("", String::as_str)),
        }
    }
}

/// The Rust identifiers of a function's variables, by id. Names are
/// spelled once here; a bad one is reported when it is used, so that an
/// unused malformed variable does not matter.
pub struct VarIdents {
    names: Vec<String>,
    idents: Vec<Option<Ident>>,
}

impl VarIdents {
    pub fn of(f: &Function) -> VarIdents {
        let idents = names::rust_idents(f.vars.iter().map(|v| v.name.as_str()));
        VarIdents { names: f.vars.iter().map(|v| v.name.clone()).collect(), idents }
    }

    /// The Rust identifier of variable `v`, or the internal error that says
    /// why it has none.
    pub fn ident(&self, v: VarId) -> Result<Ident, String> {
        match self.idents.get(v.0 as usize) {
            Some(Some(id)) => Ok(id.clone()),
            Some(None) => Err(format!("`{}` is not a valid Rust identifier", self.names[v.0 as usize])),
            None => Err(format!("variable {} is not declared", v.0)),
        }
    }

    /// Whether some variable is spelled `name`.
    pub fn spells(&self, name: &str) -> bool {
        self.idents.iter().flatten().any(|id| id == name)
    }
}

/// What a back end's host code supplies to the checks written here.
pub(crate) trait HostCode {
    /// The back end's error (an internal error converts from a message).
    type Error: From<String>;
    /// The function being emitted.
    fn function(&self) -> &Function;
    /// The runtime's path.
    fn runtime(&self) -> &TokenStream;
    /// The function's name, as a string literal for run-time errors.
    fn function_name(&self) -> &Literal;
    /// The Rust identifier of variable `v`.
    fn var_ident(&self, v: VarId) -> Result<Ident, String>;
    /// The length (a `usize`) of axis `axis` of the tensor `var` (the
    /// element at `path` of a tuple), for the check `what`.
    fn axis_length(&self, what: &str, var: VarId, path: &[u32], axis: usize) -> Result<TokenStream, Self::Error>;
}

/// The `i64` value of dimension `d` over the function's variables.
pub(crate) fn dim<H: HostCode + ?Sized>(h: &H, d: &Dim) -> Result<TokenStream, H::Error> {
    spell(h, d, dim::rust_i64)
}

/// The value of dimension `d` as an `Option<i64>`, `None` where its
/// arithmetic overflows.
pub(crate) fn checked_dim<H: HostCode + ?Sized>(h: &H, d: &Dim) -> Result<TokenStream, H::Error> {
    spell(h, d, dim::rust_checked)
}

fn spell<H: HostCode + ?Sized>(
    h: &H,
    d: &Dim,
    emit: fn(&Dim, &dyn Fn(DimVar) -> TokenStream) -> TokenStream,
) -> Result<TokenStream, H::Error> {
    let missing = std::cell::Cell::new(None);
    let tokens = emit(d, &|v: DimVar| match h.var_ident(VarId(v.0)) {
        Ok(id) => quote!(#id),
        Err(e) => {
            missing.set(Some(e));
            quote!(__missing)
        }
    });
    match missing.into_inner() {
        Some(e) => Err(format!("in dimension `{d}`: {e}").into()),
        None => Ok(tokens),
    }
}

/// A dimension as the user would write it, for error messages.
pub(crate) fn dim_text(f: &Function, d: &Dim) -> String {
    d.display(&|v: DimVar| match f.vars.get(v.0 as usize) {
        Some(info) => info.source_name.clone(),
        None => format!("d{}", v.0),
    })
}

/// `d` as a `usize` length, `what` naming it in errors: negative is
/// `Error::Extent`, and so is arithmetic that overflows `i64`
/// (`shape::checked_extent`; a constant or a variable has none).
pub(crate) fn extent_of<H: HostCode + ?Sized>(h: &H, d: &Dim, what: &Literal) -> Result<TokenStream, H::Error> {
    let (rt, name) = (h.runtime(), h.function_name());
    if d.as_constant().is_some() || d.as_var().is_some() {
        let value = dim(h, d)?;
        return Ok(quote!(#rt::shape::extent(#name, #what, #value)?));
    }
    let value = checked_dim(h, d)?;
    Ok(quote!(#rt::shape::checked_extent(#name, #what, #value)?))
}

/// The number of steps of a loop whose range has length `d` (`end -
/// start`): negative is none, as the host's loops have it; arithmetic that
/// overflows `i64` is `Error::Extent` naming `what` (`shape::checked_count`).
pub(crate) fn count_of<H: HostCode + ?Sized>(h: &H, d: &Dim, what: &Literal) -> Result<TokenStream, H::Error> {
    if d.as_constant().is_some() || d.as_var().is_some() {
        let value = dim(h, d)?;
        return Ok(quote!(((#value).max(0) as usize)));
    }
    let (rt, name) = (h.runtime(), h.function_name());
    let value = checked_dim(h, d)?;
    Ok(quote!(#rt::shape::checked_count(#name, #what, #value)?))
}

/// An entry check: a dimension bound from a parameter's length, or a
/// parameter's length checked against the dimension it must have.
pub(crate) fn entry<H: HostCode + ?Sized>(h: &H, check: &EntryCheck) -> Result<TokenStream, H::Error> {
    match check {
        EntryCheck::BindDim { dim, param, path, axis } => {
            let len = h.axis_length("entry check", *param, path, *axis)?;
            let id = h.var_ident(*dim)?;
            Ok(quote!(let #id: i64 = #len as i64;))
        }
        EntryCheck::CheckDim { param, path, axis, symbol, expected } => {
            let len = h.axis_length("entry check", *param, path, *axis)?;
            let (rt, name) = (h.runtime(), h.function_name());
            let info = h.function().vars.get(param.0 as usize);
            let pname =
                Literal::string(&info.ok_or_else(|| format!("variable {} is not declared", param.0))?.source_name);
            let (axis, symbol, expected) =
                (Literal::usize_unsuffixed(*axis), Literal::string(symbol), dim(h, expected)?);
            Ok(quote!(#rt::shape::check_dim(#name, #pname, #axis, #symbol, #expected, #len)?;))
        }
    }
}

/// `Stmt::Extent`: `var` is the extent `value` (`what` names it in errors).
pub(crate) fn extent<H: HostCode + ?Sized>(
    h: &H,
    var: VarId,
    value: &Dim,
    what: &str,
) -> Result<TokenStream, H::Error> {
    let id = h.var_ident(var)?;
    let extent = extent_of(h, value, &Literal::string(what))?;
    Ok(quote!(let #id: i64 = #extent as i64;))
}

/// `Stmt::SameExtent`: the index `index` runs over two ranges that must
/// have the same length.
pub(crate) fn same_extent<H: HostCode + ?Sized>(
    h: &H,
    index: &str,
    (a, a_what): (&Dim, &str),
    (b, b_what): (&Dim, &str),
) -> Result<TokenStream, H::Error> {
    let (rt, name) = (h.runtime(), h.function_name());
    let (index, a_what, b_what) = (Literal::string(index), Literal::string(a_what), Literal::string(b_what));
    let (a, b) = (dim(h, a)?, dim(h, b)?);
    Ok(quote!(#rt::shape::check_same_extent(#name, #index, #a, #a_what, #b, #b_what)?;))
}

/// `Stmt::CheckResultDim`: the result's length along an axis is the
/// dimension it was declared with.
pub(crate) fn check_result_dim<H: HostCode + ?Sized>(
    h: &H,
    (tensor, path, axis): (VarId, &[u32], usize),
    symbol: &str,
    declared: &Dim,
) -> Result<TokenStream, H::Error> {
    let len = h.axis_length("result check", tensor, path, axis)?;
    let (rt, name) = (h.runtime(), h.function_name());
    let (axis, symbol, declared) = (Literal::usize_unsuffixed(axis), Literal::string(symbol), dim(h, declared)?);
    Ok(quote!(#rt::shape::check_result_dim(#name, #axis, #symbol, #declared, #len)?;))
}

/// `let out: i64 = ..;`: the position of the extremum over every rank's
/// block (`Comm::AllReduceArg` of a scalar), from this rank's extremum
/// `best` at `index` and the first position `skip` of its extremum among
/// the terms that are not NaN, combined in rank order as the unsharded
/// scan would (`max` for argmax). `t` is the element type; `function`
/// and `tensor` name the site in an error. The ranks agree on their
/// status inside the call, before sending.
pub(crate) fn all_reduce_arg_scalar(
    (function, tensor): (&Literal, &Literal),
    out: &Ident,
    t: &TokenStream,
    (best, index, skip): (&Ident, &Ident, &Ident),
    max: bool,
) -> TokenStream {
    quote! {
        let #out: i64 = {
            let mut __best: [#t; 1] = [#best];
            let mut __index: [i64; 1] = [#index];
            __world.all_reduce_arg_skip(
                #function, #tensor, ::core::result::Result::Ok(()), &mut __best, &mut __index, &[#skip], #max,
            )?;
            __index[0]
        };
    }
}
