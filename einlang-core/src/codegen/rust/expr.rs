//! Expressions.

use std::collections::{HashMap, HashSet};

use proc_macro2::{Ident, TokenStream};
use quote::quote;

use super::{derived, is_plain, movable, types, Bug, Code, FnCx, Ownership, Prec};
use crate::base::intrinsic::{FsOp, Intrinsic};
use crate::base::ops::{BinOp, RedOp, UnOp};
use crate::base::scalar::ScalarKind;
use crate::ir::equiv::alpha_eq;
use crate::ir::{Expr, ExprKind, FmtPart, Literal, Loop, Repr, Stmt, VarId, WhereEntry};

/// The independent partial results of a float sum or extremum
/// (`reduce_in_lanes`): two 256-bit registers of `f32`, four of `f64`, so
/// that the additions of a streaming sum overlap (with eight, one register
/// of `f32` waited on its own additions: a sum of squares ran at 0.9 of a
/// hand loop with sixteen).
pub(super) const LANES: usize = 16;

impl FnCx<'_> {
    /// An expression as a value to compute with. Tensors come out as views
    /// or arrays (both index the same way), tuples of variables as clones,
    /// strings as `&str` or `String`.
    pub(crate) fn expr(&mut self, e: &Expr) -> Result<Code, Bug> {
        if let Some((call, lane)) = &self.lane_value {
            if call == e {
                return Ok(Code::new(lane.clone(), Prec::Postfix));
            }
        }
        match &e.kind {
            ExprKind::Lit(l) => types::literal(l, &e.ty),
            ExprKind::Var(v) => self.var_value(*v),
            ExprKind::Dim(d) => Ok(Code::new(self.dim(d)?, Prec::Postfix)),
            // Integer negation wraps (`-i32::MIN == i32::MIN`), in every build.
            ExprKind::Unary(UnOp::Neg, x) if matches!(x.ty, Repr::Scalar(k) if k.is_int()) => {
                let x = self.expr(x)?.at_least(Prec::Postfix);
                Ok(Code::new(quote!(#x.wrapping_neg()), Prec::Postfix))
            }
            ExprKind::Unary(op, x) => {
                let x = self.expr(x)?.at_least(Prec::Unary);
                Ok(match op {
                    UnOp::Neg => Code::new(quote!(-#x), Prec::Unary),
                    UnOp::Not => Code::new(quote!(!#x), Prec::Unary),
                })
            }
            ExprKind::Binary(op, a, b) => self.binary(*op, a, b),
            ExprKind::Cast(x, to) => self.cast(x, *to),
            ExprKind::Intrinsic(i, args) => self.intrinsic(*i, args),
            ExprKind::Call { func, args } => {
                let func = self.fn_ident(*func)?;
                let mut args = args.iter().map(|a| self.arg(a)).collect::<Result<Vec<_>, _>>()?;
                match &self.out_call {
                    // The whole result: the callee's body fills this
                    // function's `Out` (`into::forwarded_call`); tensors
                    // go in as the views its body takes.
                    Some((call, out)) if std::ptr::eq(*call, e) => {
                        let body = super::into::body_ident(&func);
                        let out = out.clone();
                        if let ExprKind::Call { args: exprs, .. } = &e.kind {
                            for (a, x) in args.iter_mut().zip(exprs) {
                                if matches!(x.ty, Repr::Tensor(..) | Repr::Dyn(_)) {
                                    *a = quote!(::core::convert::Into::into(#a));
                                }
                            }
                        }
                        let name = &self.fn_name;
                        Ok(Code::new(quote!(#body(#(#args,)* #out.named_by(#name))?), Prec::Postfix))
                    }
                    _ => Ok(Code::new(quote!(#func(#(#args),*)?), Prec::Postfix)),
                }
            }
            ExprKind::Read { tensor, indices, checked } => self.read(*tensor, indices, *checked || self.all_checked),
            ExprKind::View { tensor, indices } => self.view(*tensor, indices),
            ExprKind::Reduce { op, loops, wheres, body } => self.reduce(*op, loops, wheres, body, &e.ty),
            ExprKind::Guarded { wheres, body } => self.guarded(wheres, body, &e.ty),
            ExprKind::If { cond, then, els } => {
                let c = self.expr(cond)?.tokens;
                let none = HashSet::new();
                let (t, f) = (self.branch(then, &none)?, self.branch(els, &none)?);
                Ok(Code::new(quote!(if #c { #t } else { #f }), Prec::Block))
            }
            ExprKind::Block { stmts, result } => {
                if is_plain(&e.ty) {
                    let stmts = self.stmts(stmts)?;
                    if stmts.is_empty() {
                        return self.expr(result);
                    }
                    let r = self.expr(result)?.tail();
                    Ok(Code::new(quote!({ #stmts #r }), Prec::Block))
                } else {
                    self.owned(e, &HashSet::new())
                }
            }
            ExprKind::Tuple(items) => {
                let items = items.iter().map(|x| Ok(self.expr(x)?.tokens)).collect::<Result<Vec<_>, Bug>>()?;
                Ok(Code::new(types::tuple_of(items), Prec::Postfix))
            }
            ExprKind::Field(base, n) => self.field(base, *n, &e.ty),
            ExprKind::Format(parts) => {
                let rt = self.rt.clone();
                let string = crate::codegen::paths::string();
                let mut pieces = Vec::new();
                for p in parts {
                    pieces.push(match p {
                        FmtPart::Text(t) => quote!(__text.push_str(#t);),
                        FmtPart::Value(x, prec) => {
                            let v = self.expr(x)?.tokens;
                            let prec = match prec {
                                Some(p) => {
                                    let p = proc_macro2::Literal::usize_suffixed(*p as usize);
                                    quote!(::core::option::Option::Some(#p))
                                }
                                None => quote!(::core::option::Option::None),
                            };
                            quote!(__text.push_str(&#rt::fmt::interp(&(#v), #prec));)
                        }
                    });
                }
                Ok(Code::new(quote!({ let mut __text = #string::new(); #(#pieces)* __text }), Prec::Block))
            }
            ExprKind::LoadNpy { path, extents } => {
                let Repr::Tensor(k, rank) = e.ty else {
                    return Err(format!("`load_npy` of type `{:?}`", e.ty));
                };
                let (rt, nd, name) = (self.rt.clone(), self.nd.clone(), self.fn_name.clone());
                let p = self.expr(path)?.tokens;
                let t = types::scalar(k);
                let dim = types::dim(rank, &nd);
                let ext = self.declared_extents(extents)?;
                Ok(Code::new(quote!(#rt::io::load_npy::<#t, #dim>(#name, &(#p), &[#(#ext),*])?), Prec::Postfix))
            }
            ExprKind::ShapeCast { value, target, extents } => {
                let (rt, nd, name) = (self.rt.clone(), self.nd.clone(), self.fn_name.clone());
                let (t, dim) = match e.ty {
                    Repr::Tensor(k, rank) => (types::scalar(k), types::dim(rank, &nd)),
                    Repr::Dyn(k) => (types::scalar(k), types::dim_of(None, &nd)),
                    _ => return Err(format!("a conversion to `{:?}`", e.ty)),
                };
                // A view converts to a view of the same data; an owned
                // value to an owned array, without a copy.
                let x = if converts_a_view(e) {
                    self.expr(value)?.tokens
                } else {
                    self.owned(value, &HashSet::new())?.tokens
                };
                let ext = self.declared_extents(extents)?;
                Ok(Code::new(
                    quote!(#rt::shape::cast::<_, _, #t, #dim>(#name, #target, #x, &[#(#ext),*])?),
                    Prec::Postfix,
                ))
            }
            ExprKind::DynMap { inputs, elems, body } => {
                let (rt, name) = (self.rt.clone(), self.fn_name.clone());
                let mut binds = TokenStream::new();
                let mut views = Vec::new();
                for (n, x) in inputs.iter().enumerate() {
                    let held = quote::format_ident!("__in{n}");
                    let view = quote::format_ident!("__view{n}");
                    let x = self.expr(x)?.tokens;
                    binds.extend(quote!(let #held = #x; let #view = #held.view().into_dyn();));
                    views.push(view);
                }
                let Some(first) = views.first() else {
                    return Err("an elementwise map without inputs".to_string());
                };
                // `for ((&e0, &e1), &e2) in v0.iter().zip(v1.iter()).zip(v2.iter())`
                let mut pat = TokenStream::new();
                let mut iter = TokenStream::new();
                for (n, (v, view)) in elems.iter().zip(&views).enumerate() {
                    let id = self.ident(*v)?;
                    if n == 0 {
                        pat = quote!(&#id);
                        iter = quote!(#view.iter());
                    } else {
                        pat = quote!((#pat, &#id));
                        iter = quote!(#iter.zip(#view.iter()));
                    }
                }
                self.no_move += 1;
                let value = self.expr(body);
                self.no_move -= 1;
                let value = value?.tokens;
                Ok(Code::new(
                    quote!({
                        #binds
                        #rt::shape::same_shape(#name, &[#(#views.shape()),*])?;
                        let mut __elems = ::std::vec::Vec::with_capacity(#first.len());
                        for #pat in #iter {
                            __elems.push(#value);
                        }
                        #rt::shape::from_elems(#name, #first.raw_dim(), __elems)?
                    }),
                    Prec::Block,
                ))
            }
            ExprKind::Fs { op: FsOp::ScriptDir, .. } => {
                let string = quote!(::std::string::String);
                Ok(Code::new(
                    match &self.script_dir {
                        Some(dir) => quote!(#string::from(#dir)),
                        None => quote!(#string::from(::core::env!("CARGO_MANIFEST_DIR"))),
                    },
                    Prec::Postfix,
                ))
            }
            ExprKind::Fs { op, args } => {
                let (rt, name) = (self.rt.clone(), self.fn_name.clone());
                let f = Ident::new(op.name(), proc_macro2::Span::call_site());
                let args = args.iter().map(|a| Ok(self.expr(a)?.tokens)).collect::<Result<Vec<_>, Bug>>()?;
                Ok(Code::new(quote!(#rt::fs::#f(#name #(, &(#args))*)?), Prec::Postfix))
            }
            ExprKind::SaveNpy { path, value } => {
                let (rt, name) = (self.rt.clone(), self.fn_name.clone());
                let p = self.expr(path)?.tokens;
                let v = self.expr(value)?.tokens;
                Ok(Code::new(quote!(#rt::io::save_npy(#name, &(#p), &(#v))?), Prec::Postfix))
            }
            ExprKind::JaggedLit { rows } => {
                let rt = self.rt.clone();
                let rows =
                    rows.iter().map(|r| Ok(self.owned(r, &HashSet::new())?.tokens)).collect::<Result<Vec<_>, Bug>>()?;
                Ok(Code::new(quote!(#rt::Jagged::from_rows(::std::vec![#(#rows),*])), Prec::Postfix))
            }
            ExprKind::JaggedRow { jagged, index } => {
                let name = self.fn_name.clone();
                let what = self.info(*jagged)?.source_name.clone();
                let var_ty = self.info(*jagged)?.ty.clone();
                let j = self.var_value(*jagged)?.at_least(Prec::Postfix);
                let i = self.expr(index)?.tokens;
                let rt = self.rt.clone();
                if var_ty == Repr::Str {
                    return Ok(Code::new(quote!(#rt::shape::char_at(#name, #what, &#j, #i)?), Prec::Postfix));
                }
                if var_ty == Repr::Strs {
                    return Ok(Code::new(quote!(#rt::shape::str_item(#name, #what, #j, #i)?), Prec::Postfix));
                }
                Ok(Code::new(quote!(#j.row(#name, #what, #i)?), Prec::Postfix))
            }
            ExprKind::DynShape { op, value, arg } => {
                let (rt, name) = (self.rt.clone(), self.fn_name.clone());
                let f = syn::Ident::new(op.name(), proc_macro2::Span::call_site());
                let x = self.arg(value)?;
                let v = self.expr(arg)?.at_least(Prec::Postfix);
                Ok(Code::new(
                    quote!(#rt::shape::#f(#name, #x, &#v.iter().map(|__v| *__v as i64).collect::<::std::vec::Vec<i64>>())?),
                    Prec::Postfix,
                ))
            }
            ExprKind::ShapeOf { tensor } => {
                let (t, rt) = (self.ident(*tensor)?, self.rt.clone());
                Ok(Code::new(quote!(#rt::shape::shape_of(#t.shape())), Prec::Postfix))
            }
            ExprKind::Len { tensor, axis } => {
                let t = self.ident(*tensor)?;
                let axis_lit = types::usize_lit(*axis);
                let code = match self.info(*tensor)?.ty {
                    // Rows of a jagged array, characters of a string.
                    Repr::Jagged(_) | Repr::Strs => quote!((#t.len() as i64)),
                    Repr::Str => quote!((#t.chars().count() as i64)),
                    // The rank is known only now: a missing axis is an error.
                    Repr::Dyn(_) => {
                        let (rt, name) = (self.rt.clone(), self.fn_name.clone());
                        let what = self.info(*tensor)?.source_name.clone();
                        quote!(#rt::shape::axis_len(#name, #what, #t.shape(), #axis_lit)?)
                    }
                    _ => quote!((#t.shape()[#axis_lit] as i64)),
                };
                Ok(Code::new(code, Prec::Postfix))
            }
            ExprKind::Collect { steps, body, elem_shape } => {
                let text = body.ty == Repr::Str;
                let rows = matches!(e.ty, Repr::Jagged(_));
                let (Repr::Scalar(k) | Repr::Tensor(k, _)) =
                    (if text { Repr::Scalar(ScalarKind::U8) } else { body.ty.clone() })
                else {
                    return Err(format!("a comprehension of `{:?}`", body.ty));
                };
                let (nd, t) = (self.nd.clone(), if text { crate::codegen::paths::string() } else { types::scalar(k) });
                self.no_move += 1;
                let value = self.expr(body);
                let tensor_body = matches!(body.ty, Repr::Tensor(..));
                // Each element is pushed fallibly (`value::push`): the count
                // comes from run-time values.
                let (rt, fname) = (self.rt.clone(), self.fn_name.clone());
                let mut inner = value.map(|v| {
                    let v = v.tokens;
                    if rows {
                        quote!(#rt::value::push(#fname, &mut __items, #rt::value::owned(#v))?;)
                    } else if tensor_body {
                        // Elements in logical (row-major) order, whatever
                        // the layout of the value.
                        quote!(__count += 1; #rt::value::extend(#fname, &mut __items, (#v).iter().cloned())?;)
                    } else if text {
                        quote!(#rt::value::push(#fname, &mut __items, (#v).to_string())?;)
                    } else {
                        quote!(#rt::value::push(#fname, &mut __items, #v)?;)
                    }
                });
                // Steps inside out: loops, bindings and filters.
                for step in steps.iter().rev() {
                    let Ok(code) = inner else { break };
                    inner = match step {
                        crate::ir::CollectStep::Loop(l) => (|| {
                            let (i, start, end) = (self.ident(l.index)?, self.dim(&l.start)?, self.dim(&l.end)?);
                            Ok(quote!(for #i in #start..#end { #code }))
                        })(),
                        crate::ir::CollectStep::Where(WhereEntry::Bind(v, value)) => {
                            self.bind(*v, value).map(|b| quote!({ #b #code }))
                        }
                        crate::ir::CollectStep::Where(WhereEntry::Guard(g)) => self.expr(g).map(|g| {
                            let g = g.tokens;
                            quote!(if #g { #code })
                        }),
                    };
                }
                self.no_move -= 1;
                let inner = inner?;
                // Without a filter, and with loop bounds that no variable
                // of the comprehension moves, the count is known before the first
                // element: reserved at once, so a count too large fails
                // before any element is computed (`value::reserve_loops`).
                let indices: Vec<u32> = steps
                    .iter()
                    .filter_map(|s| match s {
                        crate::ir::CollectStep::Loop(l) => Some(l.index.0),
                        crate::ir::CollectStep::Where(WhereEntry::Bind(v, _)) => Some(v.0),
                        crate::ir::CollectStep::Where(WhereEntry::Guard(_)) => None,
                    })
                    .collect();
                let counted = steps.iter().all(|s| match s {
                    crate::ir::CollectStep::Loop(l) => {
                        l.start.vars().iter().chain(l.end.vars().iter()).all(|v| !indices.contains(&v.0))
                    }
                    crate::ir::CollectStep::Where(WhereEntry::Bind(..)) => true,
                    crate::ir::CollectStep::Where(WhereEntry::Guard(_)) => false,
                });
                let reserve = if counted && !rows && !text {
                    let mut bounds = Vec::new();
                    for s in steps {
                        if let crate::ir::CollectStep::Loop(l) = s {
                            let (start, end) = (self.dim(&l.start)?, self.dim(&l.end)?);
                            bounds.push(quote!((#start, #end)));
                        }
                    }
                    let mut per = Vec::new();
                    if tensor_body {
                        for d in elem_shape {
                            per.push(self.extent_usize(d)?);
                        }
                    }
                    let (rt, fname) = (self.rt.clone(), self.fn_name.clone());
                    quote!(#rt::value::reserve_loops(#fname, &mut __items, &[#(#bounds),*], 1 #(* #per)*)?;)
                } else {
                    TokenStream::new()
                };
                let inner = quote!(#reserve #inner);
                if rows {
                    let rt = self.rt.clone();
                    return Ok(Code::new(
                        quote!({ let mut __items: ::std::vec::Vec<#nd::Array1<#t>> = ::std::vec::Vec::new(); #inner #rt::Jagged::from_rows(__items) }),
                        Prec::Block,
                    ));
                }
                if text {
                    return Ok(Code::new(
                        quote!({ let mut __items: ::std::vec::Vec<#t> = ::std::vec::Vec::new(); #inner __items }),
                        Prec::Block,
                    ));
                }
                if !tensor_body {
                    return Ok(Code::new(
                        quote!({ let mut __items: ::std::vec::Vec<#t> = ::std::vec::Vec::new(); #inner #nd::Array1::from_vec(__items) }),
                        Prec::Block,
                    ));
                }
                // Stacked elements: the shape is the count, then the element
                // shape (checked against the values by `array_lit`).
                let (rt, name) = (self.rt.clone(), self.fn_name.clone());
                let mut lens = vec![quote!(__count)];
                for d in elem_shape {
                    let extent = self.extent_usize(d)?;
                    lens.push(extent);
                }
                let shape = types::shape(&lens, &nd);
                Ok(Code::new(
                    quote!({
                        let mut __items: ::std::vec::Vec<#t> = ::std::vec::Vec::new();
                        let mut __count: usize = 0;
                        #inner
                        #rt::value::array_lit(#name, #shape, __items)?
                    }),
                    Prec::Block,
                ))
            }
            ExprKind::Print(xs) => {
                let rt = self.rt.clone();
                let values = xs.iter().map(|x| Ok(self.expr(x)?.tokens)).collect::<Result<Vec<_>, Bug>>()?;
                Ok(Code::new(quote!(#rt::fmt::print_line(&[#(#rt::fmt::print_arg(&(#values))),*])), Prec::Postfix))
            }
            ExprKind::Assert { cond, message } => {
                let (rt, name) = (self.rt.clone(), self.fn_name.clone());
                let c = self.expr(cond)?;
                // A tensor of conditions holds when every element does.
                let c = match cond.ty {
                    Repr::Tensor(..) => {
                        let c = c.at_least(Prec::Postfix);
                        quote!(#c.iter().all(|__b| *__b))
                    }
                    _ => c.tokens,
                };
                let m = self.expr(message)?.tokens;
                Ok(Code::new(
                    quote!(if !(#c) { return ::core::result::Result::Err(#rt::shape::assert_failed(#name, &(#m))); }),
                    Prec::Block,
                ))
            }
            ExprKind::ArrayLit { elems, .. } if e.ty == Repr::Strs => {
                let elems = elems
                    .iter()
                    .map(|x| {
                        let v = self.expr(x)?.at_least(Prec::Postfix);
                        Ok(quote!(#v.to_string()))
                    })
                    .collect::<Result<Vec<_>, Bug>>()?;
                Ok(Code::new(quote!(::std::vec![#(#elems),*]), Prec::Postfix))
            }
            ExprKind::ArrayLit { shape, elems } => {
                let Repr::Tensor(k, rank) = e.ty else {
                    return Err(format!("an array literal of type `{:?}`", e.ty));
                };
                if rank != shape.len() {
                    return Err(format!("an array literal of shape {shape:?} has rank {rank}"));
                }
                let (rt, nd, name) = (self.rt.clone(), self.nd.clone(), self.fn_name.clone());
                let lens: Vec<TokenStream> = shape
                    .iter()
                    .map(|n| {
                        let lit = proc_macro2::Literal::usize_suffixed(*n);
                        quote!(#lit)
                    })
                    .collect();
                let shape = types::shape(&lens, &nd);
                let elems = elems.iter().map(|x| Ok(self.expr(x)?.tokens)).collect::<Result<Vec<_>, Bug>>()?;
                let vec = crate::codegen::paths::vec();
                // The element type, for an empty literal (`[]`).
                let t = types::scalar(k);
                Ok(Code::new(quote!(#rt::value::array_lit::<#t, _>(#name, #shape, #vec![#(#elems),*])?), Prec::Postfix))
            }
        }
    }

    /// Statements of a block, in order.
    fn stmts(&mut self, stmts: &[Stmt]) -> Result<TokenStream, Bug> {
        let mut out = TokenStream::new();
        for s in stmts {
            out.extend(self.stmt(s)?);
        }
        Ok(out)
    }

    /// `[Some(n), None, ...]`: the extents a conversion or a file read
    /// checks (`None`: taken from the value).
    fn declared_extents(&mut self, extents: &[Option<crate::base::dim::Dim>]) -> Result<Vec<TokenStream>, Bug> {
        extents
            .iter()
            .map(|x| match x {
                Some(d) => {
                    let d = self.dim(d)?;
                    Ok(quote!(::core::option::Option::Some(#d)))
                }
                None => Ok(quote!(::core::option::Option::None)),
            })
            .collect()
    }

    /// A variable used as a value.
    fn var_value(&mut self, v: VarId) -> Result<Code, Bug> {
        let id = self.ident(v)?;
        Ok(match &self.info(v)?.ty {
            Repr::Scalar(_) | Repr::Unit => Code::new(quote!(#id), Prec::Postfix),
            Repr::Tensor(..) | Repr::Dyn(_) => Code::new(quote!(#id.view()), Prec::Postfix),
            Repr::Tuple(_) => Code::new(quote!(#id.clone()), Prec::Postfix),
            Repr::Str => match self.repr.get(&v) {
                Some(Ownership::Owned) => Code::new(quote!(&*#id), Prec::Unary),
                _ => Code::new(quote!(#id), Prec::Postfix),
            },
            Repr::Jagged(_) | Repr::Strs => match self.repr.get(&v) {
                Some(Ownership::Owned) => Code::new(quote!(&#id), Prec::Unary),
                _ => Code::new(quote!(#id), Prec::Postfix),
            },
        })
    }

    /// A call argument: tensors by view, strings as `&str`.
    pub(crate) fn arg(&mut self, a: &Expr) -> Result<TokenStream, Bug> {
        match (&a.ty, &a.kind) {
            (Repr::Tensor(..) | Repr::Dyn(_), ExprKind::Var(_)) => Ok(self.expr(a)?.tokens),
            (Repr::Tensor(..) | Repr::Dyn(_), _) => {
                let x = self.expr(a)?.at_least(Prec::Postfix);
                Ok(quote!(#x.view()))
            }
            (Repr::Str, ExprKind::Lit(_) | ExprKind::Var(_)) | (Repr::Jagged(_) | Repr::Strs, ExprKind::Var(_)) => {
                Ok(self.expr(a)?.tokens)
            }
            (Repr::Jagged(_) | Repr::Strs, _) => {
                let x = self.expr(a)?.at_least(Prec::Unary);
                Ok(quote!(&#x))
            }
            (Repr::Str, _) => {
                let x = self.expr(a)?.at_least(Prec::Unary);
                Ok(quote!(&*#x))
            }
            (Repr::Tuple(_), ExprKind::Tuple(items)) => {
                let items = items.iter().map(|x| self.arg(x)).collect::<Result<Vec<_>, _>>()?;
                Ok(types::tuple_of(items))
            }
            (Repr::Tuple(_), _) => {
                let (rt, x) = (self.rt.clone(), self.expr(a)?.tokens);
                Ok(quote!(#rt::value::as_param(&(#x))))
            }
            _ => Ok(self.expr(a)?.tokens),
        }
    }

    /// An expression as an owned value that leaves its scope: the function
    /// result, a branch of a non-scalar `if`, the value of a non-scalar
    /// block, a tuple-typed `let`. Variables in `movable` are moved.
    pub(crate) fn owned(&mut self, e: &Expr, movable_vars: &HashSet<VarId>) -> Result<Code, Bug> {
        if is_plain(&e.ty) {
            return self.expr(e);
        }
        let rt = self.rt.clone();
        match &e.kind {
            ExprKind::Var(v) => {
                let id = self.ident(*v)?;
                let owned_here = self.repr.get(v) == Some(&Ownership::Owned);
                let code = match (&e.ty, movable_vars.contains(v), owned_here) {
                    (
                        Repr::Tensor(..) | Repr::Dyn(_) | Repr::Tuple(_) | Repr::Str | Repr::Jagged(_) | Repr::Strs,
                        true,
                        true,
                    ) => {
                        quote!(#id)
                    }
                    (Repr::Jagged(_) | Repr::Strs, _, true) => quote!(#rt::value::owned(&#id)),
                    (Repr::Tensor(..) | Repr::Dyn(_), true, false) => quote!(#rt::value::owned(#id)),
                    (Repr::Tensor(..) | Repr::Dyn(_), false, _) => quote!(#rt::value::owned(#id.view())),
                    (Repr::Tuple(_), false, true) => quote!(#id.clone()),
                    // A tuple parameter holds views.
                    (Repr::Tuple(_), true, false) => quote!(#rt::value::owned(#id)),
                    (Repr::Tuple(_), false, false) => quote!(#rt::value::owned(#id.clone())),
                    (Repr::Str, _, true) => quote!(#id.clone()),
                    _ => quote!(#rt::value::owned(#id)),
                };
                Ok(Code::new(code, Prec::Postfix))
            }
            ExprKind::Tuple(items) => {
                let items =
                    items.iter().map(|x| Ok(self.owned(x, movable_vars)?.tokens)).collect::<Result<Vec<_>, Bug>>()?;
                Ok(Code::new(types::tuple_of(items), Prec::Postfix))
            }
            ExprKind::If { cond, then, els } => {
                let c = self.expr(cond)?.tokens;
                let (t, f) = (self.branch(then, movable_vars)?, self.branch(els, movable_vars)?);
                Ok(Code::new(quote!(if #c { #t } else { #f }), Prec::Block))
            }
            ExprKind::Block { stmts, result } => {
                let defined: HashSet<VarId> = stmts.iter().filter_map(defined_by).collect();
                let inner = movable(&defined, result);
                let stmts = self.stmts(stmts)?;
                let r = self.owned(result, &inner)?.tail();
                Ok(Code::new(quote!({ #stmts #r }), Prec::Block))
            }
            ExprKind::Call { .. }
            | ExprKind::ArrayLit { .. }
            | ExprKind::Format(_)
            | ExprKind::Collect { .. }
            | ExprKind::LoadNpy { .. } => self.expr(e),
            ExprKind::ShapeCast { .. } if !converts_a_view(e) => self.expr(e),
            ExprKind::Lit(Literal::Str(_)) => {
                let s = self.expr(e)?.tokens;
                let string = crate::codegen::paths::string();
                Ok(Code::new(quote!(#string::from(#s)), Prec::Postfix))
            }
            _ => {
                let x = self.expr(e)?.tokens;
                Ok(Code::new(quote!(#rt::value::owned(#x)), Prec::Postfix))
            }
        }
    }

    /// The inside of an `if` branch: owned unless scalar, and a block's
    /// statements spliced in rather than nested in another pair of braces.
    fn branch(&mut self, e: &Expr, movable_vars: &HashSet<VarId>) -> Result<TokenStream, Bug> {
        let plain = is_plain(&e.ty);
        match &e.kind {
            ExprKind::Block { stmts, result } => {
                let inner = if plain {
                    HashSet::new()
                } else {
                    let defined: HashSet<VarId> = stmts.iter().filter_map(defined_by).collect();
                    let mut inner = movable(&defined, result);
                    inner.extend(movable_vars.iter().copied());
                    inner
                };
                let stmts = self.stmts(stmts)?;
                let r = if plain { self.expr(result)?.tail() } else { self.owned(result, &inner)?.tail() };
                Ok(quote!(#stmts #r))
            }
            _ if plain => Ok(self.expr(e)?.tail()),
            _ => Ok(self.owned(e, movable_vars)?.tail()),
        }
    }

    /// `t.0`: a field of a tuple variable is read in place; a field of any
    /// other tuple expression is moved out of the computed tuple.
    fn field(&mut self, base: &Expr, n: u32, ty: &Repr) -> Result<Code, Bug> {
        let idx = syn::Index::from(n as usize);
        let Some(place) = self.place(base)? else {
            let b = self.owned(base, &HashSet::new())?.at_least(Prec::Postfix);
            return Ok(Code::new(quote!(#b.#idx), Prec::Postfix));
        };
        Ok(match ty {
            Repr::Scalar(_) | Repr::Unit => Code::new(quote!(#place.#idx), Prec::Postfix),
            Repr::Tensor(..) | Repr::Dyn(_) => Code::new(quote!(#place.#idx.view()), Prec::Postfix),
            Repr::Tuple(_) => Code::new(quote!(#place.#idx.clone()), Prec::Postfix),
            Repr::Str => Code::new(quote!(&*#place.#idx), Prec::Unary),
            Repr::Jagged(_) | Repr::Strs => Code::new(quote!(&#place.#idx), Prec::Unary),
        })
    }

    /// A tuple variable or a field path into one (`t`, `t.1.0`).
    pub(crate) fn place(&mut self, e: &Expr) -> Result<Option<TokenStream>, Bug> {
        match &e.kind {
            ExprKind::Var(v) if matches!(self.info(*v)?.ty, Repr::Tuple(_)) => {
                let id = self.ident(*v)?;
                Ok(Some(quote!(#id)))
            }
            ExprKind::Field(b, n) => {
                let idx = syn::Index::from(*n as usize);
                Ok(self.place(b)?.map(|p| quote!(#p.#idx)))
            }
            _ => Ok(None),
        }
    }

    fn binary(&mut self, op: BinOp, a: &Expr, b: &Expr) -> Result<Code, Bug> {
        if a.ty == Repr::Str && matches!(op, BinOp::Eq | BinOp::Ne) {
            // `&str`, `String` and literals compare with each other.
            let x = self.expr(a)?.at_least(next(Prec::Cmp));
            let y = self.expr(b)?.at_least(next(Prec::Cmp));
            let op = op_tokens(op)?;
            return Ok(Code::new(quote!(#x #op #y), Prec::Cmp));
        }
        if a.ty == Repr::Strs && matches!(op, BinOp::Eq | BinOp::Ne) {
            // As slices: a parameter is `&[String]`, a local `&Vec<String>`.
            let x = self.arg(a)?;
            let y = self.arg(b)?;
            let op = op_tokens(op)?;
            return Ok(Code::new(quote!((&(#x)[..] #op &(#y)[..])), Prec::Postfix));
        }
        let Repr::Scalar(k) = a.ty else {
            return Err(format!("operator `{}` on a value of type `{:?}`", op.symbol(), a.ty));
        };
        let (rt, name) = (self.rt.clone(), self.fn_name.clone());
        let prec = match op {
            BinOp::Or => Prec::Or,
            BinOp::And => Prec::And,
            _ if op.is_comparison() => Prec::Cmp,
            BinOp::Add | BinOp::Sub => Prec::Add,
            BinOp::Mul | BinOp::Div | BinOp::Rem => Prec::Mul,
            _ => Prec::Postfix,
        };
        match op {
            BinOp::Div | BinOp::Rem if k.is_int() => {
                let (x, y) = (self.expr(a)?.tokens, self.expr(b)?.tokens);
                let f = if op == BinOp::Div { quote!(int_div) } else { quote!(int_rem) };
                Ok(Code::new(quote!(#rt::arith::#f(#name, #x, #y)?), Prec::Postfix))
            }
            BinOp::Pow => self.power(a, b),
            // Integer `+ - *` wrap on overflow (two's complement) in debug
            // and release builds alike; in release the methods compile to
            // the same instructions as the operators.
            BinOp::Add | BinOp::Sub | BinOp::Mul if k.is_int() => {
                let x = self.expr(a)?.at_least(Prec::Postfix);
                let y = self.expr(b)?.tokens;
                let m = wrapping_method(op)?;
                Ok(Code::new(quote!(#x.#m(#y)), Prec::Postfix))
            }
            _ if op.is_comparison() => {
                let (x, y) = (cmp_operand(self.expr(a)?), cmp_operand(self.expr(b)?));
                let op = op_tokens(op)?;
                Ok(Code::new(quote!(#x #op #y), prec))
            }
            _ => {
                // Left-associative: the right operand binds strictly tighter.
                let x = self.expr(a)?.at_least(prec);
                let y = self.expr(b)?.at_least(next(prec));
                let op = op_tokens(op)?;
                Ok(Code::new(quote!(#x #op #y), prec))
            }
        }
    }

    /// `a ** b` by operand types (lowering normally produces intrinsics).
    fn power(&mut self, a: &Expr, b: &Expr) -> Result<Code, Bug> {
        let (Repr::Scalar(ka), Repr::Scalar(kb)) = (&a.ty, &b.ty) else {
            return Err("`**` on non-scalars".to_string());
        };
        let i = match (ka.is_float(), kb.is_float()) {
            (true, true) => Intrinsic::Powf,
            (true, false) => Intrinsic::Powi,
            (false, false) => Intrinsic::IntPow,
            (false, true) => return Err("an integer raised to a float power".to_string()),
        };
        self.intrinsic(i, &[a.clone(), b.clone()])
    }

    fn cast(&mut self, x: &Expr, to: ScalarKind) -> Result<Code, Bug> {
        let Repr::Scalar(from) = x.ty else {
            return Err(format!("a cast from `{:?}`", x.ty));
        };
        let t = types::scalar(to);
        if to == ScalarKind::Bool && from != ScalarKind::Bool {
            // Rust has no numeric-to-bool cast: nonzero is true.
            let zero = types::zero(from);
            let v = cmp_operand(self.expr(x)?);
            return Ok(Code::new(quote!(#v != #zero), Prec::Cmp));
        }
        if from.is_half() || to.is_half() {
            return self.half_cast(x, from, to);
        }
        let v = self.expr(x)?.at_least(Prec::Cast);
        if from == ScalarKind::Bool && to.is_float() {
            return Ok(Code::new(quote!(#v as u8 as #t), Prec::Cast));
        }
        Ok(Code::new(quote!(#v as #t), Prec::Cast))
    }

    /// A conversion from or to a half-precision type (not to `bool`):
    /// through the `half` crate's exact widenings and its roundings (to
    /// nearest, ties to even) from `f32` or `f64`.
    fn half_cast(&mut self, x: &Expr, from: ScalarKind, to: ScalarKind) -> Result<Code, Bug> {
        let v = self.expr(x)?;
        let rt = crate::codegen::paths::rt();
        // The value as a wide float: f32 from a half type (exactly, by the
        // runtime's vectorizable conversions) or `f32`, f64 from everything
        // else (integers up to 2^53 exactly).
        let (wide, wide_kind) = match from {
            _ if from.is_half() => {
                let f = quote::format_ident!("{}_to_f32", from.name());
                let v = v.tokens;
                (quote!(#rt::half_bits::#f(#v)), ScalarKind::F32)
            }
            ScalarKind::F32 => (v.tokens, ScalarKind::F32),
            ScalarKind::F64 => (v.tokens, ScalarKind::F64),
            ScalarKind::Bool => {
                let v = v.at_least(Prec::Cast);
                (quote!((#v as u8 as f32)), ScalarKind::F32)
            }
            _ => {
                let v = v.at_least(Prec::Cast);
                (quote!((#v as f64)), ScalarKind::F64)
            }
        };
        if to.is_half() {
            let code = if wide_kind == ScalarKind::F32 {
                let f = quote::format_ident!("{}_from_f32", to.name());
                quote!(#rt::half_bits::#f(#wide))
            } else {
                let t = types::scalar(to);
                quote!(#t::from_f64(#wide))
            };
            return Ok(Code::new(code, Prec::Postfix));
        }
        if to == wide_kind {
            return Ok(Code::new(wide, Prec::Postfix));
        }
        let t = types::scalar(to);
        Ok(Code::new(quote!(#wide as #t), Prec::Cast))
    }

    fn intrinsic(&mut self, i: Intrinsic, args: &[Expr]) -> Result<Code, Bug> {
        use crate::base::intrinsic::Signature;
        if args.len() != i.arity() {
            return Err(format!("`{}` with {} arguments", i.name(), args.len()));
        }
        let Repr::Scalar(k) = args[0].ty else {
            return Err(format!("`{}` of a value of type `{:?}`", i.name(), args[0].ty));
        };
        let (rt, name) = (self.rt.clone(), self.fn_name.clone());
        let x = self.expr(&args[0])?;
        let method = |x: Code, m: &str| {
            let m = proc_macro2::Ident::new(m, proc_macro2::Span::call_site());
            let x = x.at_least(Prec::Postfix);
            Code::new(quote!(#x.#m()), Prec::Postfix)
        };
        let float_only = matches!(i.signature(), Signature::FloatUnary | Signature::FloatBinary);
        if float_only && !k.is_float() {
            return Err(format!("`{}` of `{}`", i.name(), k.name()));
        }
        let int_only = matches!(i.signature(), Signature::IntUnary | Signature::IntBinary);
        if int_only && !k.is_int() {
            return Err(format!("`{}` of `{}`", i.name(), k.name()));
        }
        Ok(match i {
            // Rounding an integer is the identity.
            Intrinsic::Floor | Intrinsic::Ceil | Intrinsic::Round | Intrinsic::Trunc if !k.is_float() => x,
            Intrinsic::Exp => Code::new(exp_of(k, &rt, x), Prec::Postfix),
            // The runtime's branch-free forms, which vectorize (the float
            // methods are a libm call per element).
            _ if vmath_name(i, k).is_some() => {
                let f = proc_macro2::Ident::new(vmath_name(i, k).unwrap_or_default(), proc_macro2::Span::call_site());
                let x = x.tokens;
                if i.arity() == 2 {
                    let y = self.expr(&args[1])?.tokens;
                    Code::new(quote!(#rt::vmath::#f(#x, #y)), Prec::Postfix)
                } else {
                    Code::new(quote!(#rt::vmath::#f(#x)), Prec::Postfix)
                }
            }
            _ if i.float_method().is_some() => method(x, i.float_method().unwrap_or_default()),
            Intrinsic::Gcd => self.arith_call(quote!(gcd), None, x, &args[1])?,
            Intrinsic::Lcm => self.arith_call(quote!(lcm), Some(&name), x, &args[1])?,
            Intrinsic::Factorial => {
                let x = x.tokens;
                Code::new(quote!(#rt::arith::factorial(#name, #x)?), Prec::Postfix)
            }
            Intrinsic::Abs => {
                if k.is_float() {
                    method(x, "abs")
                } else if k.is_signed() {
                    // `i64::MIN.abs()` overflows; the wrapping form never panics.
                    method(x, "wrapping_abs")
                } else {
                    x
                }
            }
            Intrinsic::Min | Intrinsic::Max if !k.is_float() => {
                // A conditional move, not a branch: in a dynamic program
                // (`min(d[i - 1, j] + 1, d[i, j - 1] + 1)`) which side wins
                // follows the data, and LLVM may otherwise turn the select
                // into a branch that mispredicts about every other point.
                let (x, y) = (x.tokens, self.expr(&args[1])?.tokens);
                let op = if i == Intrinsic::Min { quote!(<) } else { quote!(>) };
                Code::new(
                    quote!({ let (__x, __y) = (#x, #y); ::core::hint::select_unpredictable(__x #op __y, __x, __y) }),
                    Prec::Block,
                )
            }
            Intrinsic::Min | Intrinsic::Max => {
                let y = self.expr(&args[1])?.tokens;
                let x = x.at_least(Prec::Postfix);
                let m = if i == Intrinsic::Min { quote!(min) } else { quote!(max) };
                Code::new(quote!(#x.#m(#y)), Prec::Postfix)
            }
            Intrinsic::Powi => {
                // A literal exponent that fits `i32` is `powi` directly (the
                // common `x ** 2`); anything else goes through the runtime,
                // which does not truncate large exponents.
                if let ExprKind::Lit(Literal::Int(n)) = args[1].kind {
                    if let Ok(n) = i32::try_from(n) {
                        let x = x.at_least(Prec::Postfix);
                        let n = proc_macro2::Literal::i32_unsuffixed(n);
                        return Ok(Code::new(quote!(#x.powi(#n)), Prec::Postfix));
                    }
                }
                self.arith_call(quote!(powi), None, x, &args[1])?
            }
            Intrinsic::IntPow => {
                // A literal exponent that fits `u32` cannot be negative:
                // `wrapping_pow` directly (the common `n ** 2`). Anything
                // else goes through the runtime, which reports a negative
                // exponent and wraps as this does.
                if let ExprKind::Lit(Literal::Int(n)) = args[1].kind {
                    if let Ok(n) = u32::try_from(n) {
                        let x = x.at_least(Prec::Postfix);
                        let n = proc_macro2::Literal::u32_suffixed(n);
                        return Ok(Code::new(quote!(#x.wrapping_pow(#n)), Prec::Postfix));
                    }
                }
                self.arith_call(quote!(int_pow), Some(&name), x, &args[1])?
            }
            // Handled by `float_method` above.
            _ => return Err(format!("`{}` of `{}` has no Rust form", i.name(), k.name())),
        })
    }

    /// `__rt::arith::f(x, y)`, or `__rt::arith::f("fn", x, y)?` for the
    /// fallible helpers, which take the function name for their errors.
    fn arith_call(
        &mut self,
        f: TokenStream,
        fallible: Option<&proc_macro2::Literal>,
        x: Code,
        y: &Expr,
    ) -> Result<Code, Bug> {
        let rt = self.rt.clone();
        let (x, y) = (x.tokens, self.expr(y)?.tokens);
        Ok(Code::new(
            match fallible {
                Some(name) => quote!(#rt::arith::#f(#name, #x, #y)?),
                None => quote!(#rt::arith::#f(#x, #y)),
            },
            Prec::Postfix,
        ))
    }

    /// The element type and rank of a tensor variable.
    fn tensor_of(&self, v: VarId, what: &str) -> Result<(ScalarKind, usize), Bug> {
        match self.info(v)?.ty {
            Repr::Tensor(k, rank) => Ok((k, rank)),
            ref other => Err(format!("{what} of `{}`, which has type `{other:?}`", self.info(v)?.name)),
        }
    }

    /// `check_index(...)?` of index `i` of axis `axis` of `tensor`, against
    /// the axis's length (a recurrence's logical extent, not its window).
    pub(crate) fn checked_index(&mut self, tensor: VarId, axis: usize, i: &Expr) -> Result<TokenStream, Bug> {
        let (rt, name) = (self.rt.clone(), self.fn_name.clone());
        let id = self.ident(tensor)?;
        let tname = types::str_lit(&self.info(tensor)?.source_name);
        let value = self.expr(i)?.tokens;
        let a = types::usize_lit(axis);
        // A tensor held with halo rows in a sharded function: position
        // `p` holds the global row `p - lo + offset`, checked against the
        // whole axis (a read past its ends is an error, not a halo row).
        let parts = self.f.shard.as_ref().and_then(|s| s.parts.as_ref());
        if let Some((edge, parts)) =
            parts.and_then(|p| p.edges.iter().find(|e| e.tensor == tensor && e.axis == axis).map(|e| (e, p)))
        {
            let (global, offset) = (self.ident(parts.global)?, self.ident(parts.offset)?);
            let source = types::str_lit(&self.info(edge.source)?.source_name);
            let lo = proc_macro2::Literal::i64_unsuffixed(edge.lo);
            return Ok(quote!({
                let __global: i64 = (#value) - #lo + #offset;
                (#rt::shape::check_index(#name, #source, #a, __global, #global as usize)? as i64 - #offset + #lo) as usize
            }));
        }
        let len = match self.rec_access.get(&tensor) {
            Some(access) => {
                let len = access.lens.get(axis).ok_or("a recurrence read past its rank")?;
                quote!(#len)
            }
            None => quote!(#id.shape()[#a]),
        };
        Ok(quote!(#rt::shape::check_index(#name, #tname, #a, #value, #len)?))
    }

    /// An element read: `unsafe { *t.uget([..]) }` when proven in bounds,
    /// `t[[check_index(..)?, ..]]` otherwise.
    fn read(&mut self, tensor: VarId, indices: &[Expr], checked: bool) -> Result<Code, Bug> {
        let (_, rank) = self.tensor_of(tensor, "an element read")?;
        if indices.len() != rank {
            return Err(format!(
                "a read of `{}` with {} indices, but its rank is {rank}",
                self.info(tensor)?.name,
                indices.len()
            ));
        }
        if let Some(access) = self.rec_access.get(&tensor) {
            let store = access.store.clone();
            let code = self.rec_read(store.as_ref(), tensor, indices, checked)?;
            return Ok(Code::new(code, Prec::Block));
        }
        let id = self.ident(tensor)?;
        if checked {
            let idx = indices
                .iter()
                .enumerate()
                .map(|(axis, i)| self.checked_index(tensor, axis, i))
                .collect::<Result<Vec<_>, _>>()?;
            if rank == 0 {
                return Ok(Code::new(quote!(#id[()]), Prec::Postfix));
            }
            return Ok(Code::new(quote!(#id[[#(#idx),*]]), Prec::Postfix));
        }
        if rank == 0 {
            return Ok(Code::new(quote!(unsafe { *#id.uget(()) }), Prec::Cast));
        }
        // Index expressions that do more than arithmetic (a gather, a call)
        // are computed before the unsafe block, so that the block holds only
        // the access whose bounds the compiler proved.
        let mut hoisted = TokenStream::new();
        let mut idx = Vec::new();
        for (axis, i) in indices.iter().enumerate() {
            let v = self.expr(i)?.at_least(Prec::Cast);
            if is_arithmetic(i) {
                idx.push(quote!(#v as usize));
            } else {
                let tmp = quote::format_ident!("__ix{}", axis);
                hoisted.extend(quote!(let #tmp = #v as usize;));
                idx.push(quote!(#tmp));
            }
        }
        let access = if self.standard.contains(&tensor) {
            // Row-major offset over the tensor's own shape: `i * len1 + j`.
            let mut offset = TokenStream::new();
            for (axis, i) in idx.iter().enumerate() {
                offset = if axis == 0 {
                    quote!(#i)
                } else {
                    let a = types::usize_lit(axis);
                    quote!((#offset) * #id.shape()[#a] + #i)
                };
            }
            quote!(unsafe { *#id.as_ptr().add(#offset) })
        } else {
            quote!(unsafe { *#id.uget([#(#idx),*]) })
        };
        if hoisted.is_empty() {
            Ok(Code::new(access, Prec::Cast))
        } else {
            Ok(Code::new(quote!({ #hoisted #access }), Prec::Block))
        }
    }

    /// A sub-tensor selected by leading indices, each checked.
    pub(crate) fn view(&mut self, tensor: VarId, indices: &[Expr]) -> Result<Code, Bug> {
        let (_, rank) = self.tensor_of(tensor, "a sub-tensor view")?;
        if indices.len() >= rank {
            return Err(format!(
                "a view of `{}` with {} indices, but its rank is {rank}",
                self.info(tensor)?.name,
                indices.len()
            ));
        }
        let id = self.ident(tensor)?;
        let nd = self.nd.clone();
        // A recurrence being filled is read through its store: the array
        // itself is mutably borrowed while the clauses run.
        let mut out = match self.rec_access.get(&tensor).and_then(|a| a.store.clone()) {
            Some(store) => {
                let rank = proc_macro2::Literal::usize_unsuffixed(rank);
                quote!(unsafe { #store.view::<#nd::Dim<[usize; #rank]>>() })
            }
            None => quote!(#id.view()),
        };
        for (axis, i) in indices.iter().enumerate() {
            let checked = self.checked_index(tensor, axis, i)?;
            let checked = self.in_window(tensor, axis, checked);
            out = quote!(#out.index_axis_move(#nd::Axis(0), #checked));
        }
        Ok(Code::new(out, Prec::Postfix))
    }

    /// Where entries inside a reduction loop: bindings are `let`s, a false
    /// guard skips the term.
    pub(crate) fn loop_wheres(&mut self, wheres: &[WhereEntry]) -> Result<TokenStream, Bug> {
        self.where_entries(wheres, &quote!(continue))
    }

    /// Where entries in order: bindings are `let`s, a false guard runs
    /// `on_false` (which leaves the enclosing loop iteration or block).
    fn where_entries(&mut self, wheres: &[WhereEntry], on_false: &TokenStream) -> Result<TokenStream, Bug> {
        let mut out = TokenStream::new();
        for w in wheres {
            match w {
                WhereEntry::Bind(v, value) => out.extend(self.bind(*v, value)?),
                WhereEntry::Guard(g) => {
                    let g = self.expr(g)?.at_least(Prec::Unary);
                    out.extend(quote!(if !#g { #on_false; }));
                }
            }
        }
        Ok(out)
    }

    /// A reduction: an accumulator named after the operation and the first
    /// loop variable (`__sum_k`), nested `for` loops, the accumulator.
    fn reduce(
        &mut self,
        op: RedOp,
        loops: &[Loop],
        wheres: &[WhereEntry],
        body: &Expr,
        ty: &Repr,
    ) -> Result<Code, Bug> {
        let Repr::Scalar(k) = body.ty else {
            return Err(format!("a `{}` of a value of type `{:?}`", op.name(), body.ty));
        };
        if let Some(split) = self.split_reduce(op, loops, wheres, body)? {
            return Ok(Code::new(split, Prec::Postfix));
        }
        // Without loops (a rest index over no axis) the reduction is over
        // one point, which its guards may exclude.
        let tag = match loops.first() {
            Some(first) => self.ident(first.index)?,
            None => Ident::new("point", proc_macro2::Span::call_site()),
        };
        let acc = derived(&format!("{}_", op.name()), &tag, "");
        let t = types::scalar(k);
        self.no_move += 1;
        let wheres = self.loop_wheres(wheres);
        let value = self.expr(body);
        let exp = self.exp_term(op, loops, body);
        self.no_move -= 1;
        let (wheres, value, exp) = (wheres?, value?, exp?);
        let label = matches!(op, RedOp::All | RedOp::Any).then(|| self.label(op.name()));
        if in_lanes(op, loops, wheres.is_empty(), k) {
            return self.reduce_in_lanes(op, loops, &acc, k, value.tokens, exp, None);
        }

        let (init, step, tail) = match op {
            RedOp::Sum | RedOp::Prod => {
                let v = value.tokens;
                let (start, step) = match (op == RedOp::Sum, k.is_int()) {
                    (true, false) => (types::zero(k), quote!(#acc += #v;)),
                    (false, false) => (types::one(k), quote!(#acc *= #v;)),
                    // Integer accumulation wraps, as `+` and `*` do.
                    (true, true) => (types::zero(k), quote!(#acc = #acc.wrapping_add(#v);)),
                    (false, true) => (types::one(k), quote!(#acc = #acc.wrapping_mul(#v);)),
                };
                (quote!(let mut #acc: #t = #start;), step, quote!(#acc))
            }
            RedOp::Max | RedOp::Min => {
                let (start, cmp) = types::extremum(op == RedOp::Max, k);
                let v = value.tokens;
                // NaN compares false, so NaN terms are skipped.
                (
                    quote!(let mut #acc: #t = #start;),
                    quote!(let __v: #t = #v; if __v #cmp #acc { #acc = __v; }),
                    quote!(#acc),
                )
            }
            RedOp::All | RedOp::Any => {
                let label = label.as_ref().ok_or_else(|| "missing label".to_string())?;
                // Stop at the first term that decides the result.
                let (start, cond, set) = if op == RedOp::All {
                    let v = value.at_least(Prec::Unary);
                    (quote!(true), quote!(!#v), quote!(false))
                } else {
                    (quote!(false), value.tokens, quote!(true))
                };
                (quote!(let mut #acc: bool = #start;), quote!(if #cond { #acc = #set; break #label; }), quote!(#acc))
            }
            RedOp::ArgMax | RedOp::ArgMin => {
                if ty != &Repr::Scalar(ScalarKind::I64) {
                    return Err(format!("`{}` of type `{ty:?}`", op.name()));
                }
                let cmp = if op == RedOp::ArgMax { quote!(>) } else { quote!(<) };
                let best = derived("best_", &tag, "");
                let found = derived("found_", &tag, "");
                let v = value.tokens;
                let zero = types::zero(k);
                // One loop: the index value of the first extremum. Several
                // loops: its row-major position in the loop nest.
                let (init, position, at) = if loops.len() == 1 {
                    (
                        quote!(let mut #acc: i64 = -1; let mut #best: #t = #zero; let mut #found = false;),
                        quote!(),
                        quote!(#tag),
                    )
                } else {
                    let pos = derived("seen_", &tag, "");
                    (
                        quote!(let mut #acc: i64 = -1; let mut #best: #t = #zero; let mut #found = false; let mut #pos: i64 = 0;),
                        quote!(let __here: i64 = #pos; #pos += 1;),
                        quote!(__here),
                    )
                };
                (
                    init,
                    quote!(#position #wheres let __v: #t = #v; if !#found || __v #cmp #best { #best = __v; #acc = #at; #found = true; }),
                    quote!(#acc),
                )
            }
        };
        // Argmax/argmin already placed the where entries after the position
        // counter; the others evaluate them first.
        let mut nest = if matches!(op, RedOp::ArgMax | RedOp::ArgMin) { step } else { quote!(#wheres #step) };
        for (n, l) in loops.iter().enumerate().rev() {
            let (i, start, end) = (self.ident(l.index)?, self.dim(&l.start)?, self.dim(&l.end)?);
            let head = match (&label, n) {
                (Some(label), 0) => quote!(#label:),
                _ => quote!(),
            };
            nest = quote!(#head for #i in #start..#end { #nest });
        }
        if loops.is_empty() {
            let head = label.as_ref().map(|l| quote!(#l:));
            nest = quote!(#head for _ in 0..1 { #nest });
        }
        Ok(Code::new(quote!({ #init #nest #tail }), Prec::Block))
    }

    /// A reduction computed once (outside every loop: in a `let`, the
    /// function's result, or arithmetic on them) that `reduce_in_lanes`
    /// applies to, as `par::reduce` over its outermost loop: on large
    /// ranges each thread reduces a part in lanes and the parts combine in
    /// order. None for other reductions.
    fn split_reduce(
        &mut self,
        op: RedOp,
        loops: &[Loop],
        wheres: &[WhereEntry],
        body: &Expr,
    ) -> Result<Option<TokenStream>, Bug> {
        let Repr::Scalar(k) = body.ty else { return Ok(None) };
        if self.no_move > 0 || !in_lanes(op, loops, wheres.is_empty(), k) {
            return Ok(None);
        }
        let rt = self.rt.clone();
        let acc = derived(&format!("{}_", op.name()), &self.ident(loops[0].index)?, "");
        self.no_move += 1;
        let term = self.expr(body).and_then(|term| Ok((term, self.exp_term(op, loops, body)?)));
        let lanes = term.and_then(|(term, exp)| {
            self.reduce_in_lanes(op, loops, &acc, k, term.tokens, exp, Some((quote!(__from), quote!(__to))))
        });
        self.no_move -= 1;
        let lanes = lanes?.tokens;
        let (start, end) = (self.dim(&loops[0].start)?, self.dim(&loops[0].end)?);
        let work = self.term_work(body, &loops[1..])?;
        let t = types::scalar(k);
        let merge = match op {
            RedOp::Sum => quote!(|__a: #t, __b: #t| __a + __b),
            _ => {
                let (_, cmp) = types::extremum(op == RedOp::Max, k);
                quote!(|__a: #t, __b: #t| if __b #cmp __a { __b } else { __a })
            }
        };
        Ok(Some(quote! {
            #rt::par::reduce(
                #start,
                #end,
                #work,
                |__from: i64, __to: i64| -> ::core::result::Result<#t, #rt::Error> { Ok(#lanes) },
                #merge,
            )?
        }))
    }

    /// The work of one term of a reduction's outermost loop, evaluated at
    /// run time (a `usize`): the body's cost times the lengths of the
    /// `inner` loops.
    pub(crate) fn term_work(&self, body: &Expr, inner: &[Loop]) -> Result<TokenStream, Bug> {
        let cost = proc_macro2::Literal::usize_suffixed(crate::ir::cost::expr_cost(body) as usize);
        let mut work = quote!(#cost);
        for l in inner {
            let (s, e) = (self.dim(&l.start)?, self.dim(&l.end)?);
            work = quote!(#work.saturating_mul(((#e) - (#s)).max(0) as usize));
        }
        Ok(work)
    }

    /// A float sum, maximum or minimum without where entries, its innermost
    /// loop in `LANES` independent partial results (the terms `k`, `k +
    /// LANES`, ... go to one of them, in every run of the outer loops), the
    /// terms left at the end of each run in one more, all combined at the
    /// end (a sum's lanes halving, `Self::sum_of_lanes`; an `f64` extremum's in
    /// lane order), then the one more: the partial results need not wait
    /// for each other, and when the terms are contiguous
    /// loads LLVM adds or compares them as one vector (a maximum's chain
    /// of dependent comparisons held a quarter of a softmax's time). An
    /// `f32` extremum keeps four runs of sixteen lanes at a time in the
    /// runtime's `__simd::ExtremumF32`, which combines them halving in
    /// every CPU form alike: softmax rows of 256 then took 0.80-0.85 of
    /// the time (AVX-512; AVX2 0.94), where a single run of sixteen lanes
    /// waited on its previous run's comparisons and the sixteen lanes
    /// were then compared one after another (sixty-four lanes written as
    /// plain loops over arrays, LLVM compared one by one: 1.7x slower). The
    /// order of the operations differs from the loop's (float
    /// reassociation, which the language allows in reductions: an extremum
    /// is the same value, but which of `-0.0` and `0.0` it is may differ).
    /// Extrema skip NaN terms, as the loop does.
    ///
    /// With `first`, the outermost loop runs over that range (the bounds'
    /// tokens) instead of its own. With `exp`, the term is `e^arg` (an
    /// `f32` sum, [`Self::exp_term`]: the argument's tokens and the
    /// `__simd` function that computes sixteen): each run of sixteen
    /// computes its arguments, then their exponentials at once through the
    /// function's `__simd` form (the bits of `arith::exp_f32`), as a
    /// softmax row's exponentials are.
    #[allow(clippy::too_many_arguments)]
    fn reduce_in_lanes(
        &mut self,
        op: RedOp,
        loops: &[Loop],
        acc: &Ident,
        k: ScalarKind,
        term: TokenStream,
        exp: Option<(TokenStream, TokenStream)>,
        first: Option<(TokenStream, TokenStream)>,
    ) -> Result<Code, Bug> {
        let (l, outer) = loops.split_last().ok_or("a reduction in lanes without loops")?;
        // A second pass over the input's rows asks for the next row's
        // lines, one request per run (`ahead`).
        let ahead = if outer.is_empty() { self.take_ahead()? } else { None };
        let mut first = first;
        let mut bounds = |cx: &Self, l: &Loop| -> Result<(TokenStream, TokenStream), Bug> {
            match first.take() {
                Some(range) => Ok(range),
                None => Ok((cx.dim(&l.start)?, cx.dim(&l.end)?)),
            }
        };
        let outer_bounds = outer.iter().map(|l| bounds(self, l)).collect::<Result<Vec<_>, _>>()?;
        let (start, end) = bounds(self, l)?;
        let i = self.ident(l.index)?;
        let tail = derived("tail_", &i, "");
        let t = types::scalar(k);
        let lanes = derived("lanes_", &i, "");
        let (base, last) = (derived("base_", &i, ""), derived("end_", &i, ""));
        let setup = ahead.as_ref().map(|a| a.setup.clone()).unwrap_or_default();
        let request =
            |width: usize| ahead.as_ref().map(|a| a.run(&quote!((#base as usize)), width)).unwrap_or_default();
        let n = types::usize_lit(LANES);
        let n_i64 = types::i64_lit(LANES as i64);
        let lane = |p: usize| {
            let p = types::usize_lit(p);
            quote!(#lanes[#p])
        };
        let (init, update, combined, add) = match op {
            RedOp::Sum => {
                let total = self.sum_of_lanes(&quote!(#lanes), k);
                let zero = types::zero(k);
                (
                    zero,
                    quote!(#lanes[__lane] += #term;),
                    quote!(let mut #acc: #t = #total + #tail;),
                    quote!(#tail += #term;),
                )
            }
            _ => {
                let (start, cmp) = types::extremum(op == RedOp::Max, k);
                let rest: Vec<TokenStream> = (1..LANES).map(lane).collect();
                let first = lane(0);
                (
                    start,
                    quote!(let __v: #t = #term; if __v #cmp #lanes[__lane] { #lanes[__lane] = __v; }),
                    quote! {
                        let mut #acc: #t = #first;
                        #(if #rest #cmp #acc { #acc = #rest; })*
                        if #tail #cmp #acc { #acc = #tail; }
                    },
                    quote!(let __v: #t = #term; if __v #cmp #tail { #tail = __v; }),
                )
            }
        };
        // An `f32` extremum: four runs of sixteen lanes at a time in
        // `__simd::ExtremumF32` (`vmath::lanes`), whose combination is the
        // same in every CPU form.
        let extremum = matches!(op, RedOp::Max | RedOp::Min) && k == ScalarKind::F32 && exp.is_none() && LANES == 16;
        if extremum {
            self.uses_simd = true;
            let max = op == RedOp::Max;
            let state = derived("extremum_", &i, "");
            // Saturating: a range longer than `i64::MAX` cannot overflow
            // the subtraction (its bounds are far apart).
            let run = |width: usize, step: &str| {
                let (w, w_i64) = (types::usize_lit(width), types::i64_lit(width as i64));
                let step = Ident::new(step, proc_macro2::Span::call_site());
                let request = request(width);
                quote! {
                    while #last.saturating_sub(#base) >= #w_i64 {
                        #request
                        let mut __terms: [f32; #w] = [0.0f32; #w];
                        for __lane in 0..#w {
                            let #i: i64 = #base + __lane as i64;
                            __terms[__lane] = #term;
                        }
                        // SAFETY: the form `__simd` names runs on this
                        // processor (it is the function's own form's).
                        unsafe { #state.#step(__terms) };
                        #base += #w_i64;
                    }
                }
            };
            let (run64, run16) = (run(4 * LANES, "step64"), run(LANES, "step16"));
            let mut nest = quote! {
                let #last: i64 = #end;
                let mut #base: i64 = #start;
                #setup
                #run64
                #run16
                for #i in #base..#last {
                    #add
                }
            };
            for (l, (start, end)) in outer.iter().zip(outer_bounds).rev() {
                let i = self.ident(l.index)?;
                nest = quote!(for #i in #start..#end { #nest });
            }
            return Ok(Code::new(
                quote!({
                    // SAFETY: as the steps'.
                    let mut #state = unsafe { __simd::ExtremumF32::<#max>::new() };
                    let mut #tail: f32 = #init;
                    #nest
                    let #acc: f32 = unsafe { #state.finish(#tail) };
                    #acc
                }),
                Prec::Block,
            ));
        }
        let run = match exp {
            Some((arg, exp)) => {
                self.uses_simd = true;
                quote! {
                    let mut __args: [f32; #n] = [0.0f32; #n];
                    for __lane in 0..#n {
                        let #i: i64 = #base + __lane as i64;
                        __args[__lane] = #arg;
                    }
                    // SAFETY: the form `__simd` names runs on this
                    // processor (it is the function's own form's).
                    let __vals: [f32; #n] = unsafe { #exp(__args) };
                    for __lane in 0..#n {
                        #lanes[__lane] += __vals[__lane];
                    }
                }
            }
            None => quote! {
                for __lane in 0..#n {
                    let #i: i64 = #base + __lane as i64;
                    #update
                }
            },
        };
        let request = request(LANES);
        let mut nest = quote! {
            let #last: i64 = #end;
            let mut #base: i64 = #start;
            #setup
            // Saturating: a range longer than `i64::MAX` cannot
            // overflow the subtraction (its bounds are far apart).
            while #last.saturating_sub(#base) >= #n_i64 {
                #request
                #run
                #base += #n_i64;
            }
            for #i in #base..#last {
                #add
            }
        };
        for (l, (start, end)) in outer.iter().zip(outer_bounds).rev() {
            let i = self.ident(l.index)?;
            nest = quote!(for #i in #start..#end { #nest });
        }
        Ok(Code::new(
            quote!({
                let mut #lanes: [#t; #n] = [#init; #n];
                let mut #tail: #t = #init;
                #nest
                #combined
                #acc
            }),
            Prec::Block,
        ))
    }

    /// The argument of a sum's term that is `e^x` in `f32` (`x`'s
    /// tokens) and the `__simd` function that computes sixteen of them
    /// ([`exp_lanes`]), which `reduce_in_lanes` uses; None for any other
    /// reduction or term.
    fn exp_term(&mut self, op: RedOp, loops: &[Loop], body: &Expr) -> Result<Option<(TokenStream, TokenStream)>, Bug> {
        let arg = match exp_f32_argument(body) {
            Some(arg) if op == RedOp::Sum && LANES == 16 => arg,
            _ => return Ok(None),
        };
        let nonpositive = match loops {
            [l] => self.below_its_maximum(arg, l.index, |m| m.start == l.start && m.end == l.end),
            _ => false,
        };
        Ok(Some((self.expr(arg)?.tokens, exp_lanes(nonpositive))))
    }

    /// Whether `arg`, an exponential's argument at each value of `index`,
    /// is `a - m` where `m` is the maximum of `a` over `index`'s range,
    /// without where entries: a scalar `let` (of a row prelude being
    /// emitted, or of the function's top level) whose value is `max[k](a')`,
    /// or a read `m[i..]` of a tensor defined as `m[j..] = max[k](a')` over
    /// all its points, with `a'` being `a` at `k` (and at `i..`) and
    /// `covers` accepting `k`'s loop. Then `a <= m` wherever `a` is a
    /// number (a maximum skips NaN terms), and the argument is at most 0
    /// (`-inf` included) or a NaN that the subtraction made quiet:
    /// softmax's `exp(x - max(x))`, whose exponential needs neither its
    /// upper clamp nor its NaN test ([`exp_lanes`]).
    pub(super) fn below_its_maximum(&self, arg: &Expr, index: VarId, covers: impl Fn(&Loop) -> bool) -> bool {
        let f32 = Repr::Scalar(ScalarKind::F32);
        let ExprKind::Binary(BinOp::Sub, a, m) = &arg.kind else { return false };
        let mut stmts = self.preludes.iter().flatten().chain(&self.f.body);
        // The maximum's value, and its own indices as the read names them.
        let (value, mut names) = match &m.kind {
            ExprKind::Var(m) => {
                let value = stmts.find_map(|s| match s {
                    Stmt::Let { var, value } if var == m => Some(value),
                    _ => None,
                });
                (value, HashMap::new())
            }
            ExprKind::Read { tensor, indices, .. } => {
                let def = stmts.find_map(|s| match s {
                    Stmt::Tensor(def) if def.var == *tensor && def.domain_guards == 0 => Some(def),
                    _ => None,
                });
                let Some(def) = def.filter(|def| def.axes.len() == indices.len()) else { return false };
                let names = def.axes.iter().zip(indices).map(|(axis, i)| match i.kind {
                    ExprKind::Var(v) => Some((axis.index, v)),
                    _ => None,
                });
                let Some(names) = names.collect::<Option<HashMap<_, _>>>() else { return false };
                (Some(&def.body), names)
            }
            _ => return false,
        };
        let Some(Expr { kind: ExprKind::Reduce { op: RedOp::Max, loops, wheres, body }, ty }) = value else {
            return false;
        };
        let [l] = loops.as_slice() else { return false };
        names.insert(l.index, index);
        *ty == f32 && a.ty == f32 && wheres.is_empty() && covers(l) && alpha_eq(body, a, &mut names)
    }

    /// A value under where entries: zero (false) when a guard fails.
    fn guarded(&mut self, wheres: &[WhereEntry], body: &Expr, ty: &Repr) -> Result<Code, Bug> {
        if wheres.is_empty() {
            return self.expr(body);
        }
        let has_guard = wheres.iter().any(|w| matches!(w, WhereEntry::Guard(_)));
        let label = if has_guard { Some(self.label("guard")) } else { None };
        let zero = match ty {
            Repr::Scalar(k) => types::zero(*k),
            _ if !has_guard => TokenStream::new(),
            other => return Err(format!("a guarded value of type `{other:?}`")),
        };
        let on_false = match &label {
            Some(label) => quote!(break #label #zero),
            None => TokenStream::new(),
        };
        let out = self.where_entries(wheres, &on_false)?;
        let v = self.expr(body)?.tail();
        Ok(match label {
            Some(label) => Code::new(quote!(#label: { #out #v }), Prec::Block),
            None => Code::new(quote!({ #out #v }), Prec::Block),
        })
    }
}

/// The variable a statement defines, if any.
fn defined_by(s: &Stmt) -> Option<VarId> {
    match s {
        Stmt::Let { var, .. } | Stmt::Extent { var, .. } => Some(*var),
        Stmt::Tensor(def) => Some(def.var),
        Stmt::Gemm(g) => Some(g.out),
        Stmt::Conv(c) => Some(c.out),
        Stmt::Recurrence(r) => Some(r.var),
        Stmt::Rows(rows) => Some(rows.def.var),
        _ => None,
    }
}

/// Whether an index expression is plain arithmetic on variables and
/// constants (safe to compute inside the unsafe block of a read).
fn is_arithmetic(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Lit(_) | ExprKind::Var(_) | ExprKind::Dim(_) => true,
        ExprKind::Unary(_, x) | ExprKind::Cast(x, _) => is_arithmetic(x),
        ExprKind::Binary(op, a, b) => {
            !matches!(op, BinOp::Div | BinOp::Rem | BinOp::Pow) && is_arithmetic(a) && is_arithmetic(b)
        }
        _ => false,
    }
}

/// A comparison operand: comparisons do not chain, and `x as T < y` parses
/// as generics, so both comparisons and casts are parenthesized.
fn cmp_operand(c: Code) -> TokenStream {
    if c.prec == Prec::Cast {
        let t = c.tokens;
        quote!((#t))
    } else {
        c.at_least(Prec::Add)
    }
}

fn next(p: Prec) -> Prec {
    match p {
        Prec::Block => Prec::Or,
        Prec::Or => Prec::And,
        Prec::And => Prec::Cmp,
        Prec::Cmp => Prec::Add,
        Prec::Add => Prec::Mul,
        Prec::Mul => Prec::Cast,
        Prec::Cast => Prec::Unary,
        Prec::Unary | Prec::Postfix => Prec::Postfix,
    }
}

fn op_tokens(op: BinOp) -> Result<TokenStream, Bug> {
    Ok(match op {
        BinOp::Add => quote!(+),
        BinOp::Sub => quote!(-),
        BinOp::Mul => quote!(*),
        BinOp::Div => quote!(/),
        BinOp::Rem => quote!(%),
        BinOp::Eq => quote!(==),
        BinOp::Ne => quote!(!=),
        BinOp::Lt => quote!(<),
        BinOp::Le => quote!(<=),
        BinOp::Gt => quote!(>),
        BinOp::Ge => quote!(>=),
        BinOp::And => quote!(&&),
        BinOp::Or => quote!(||),
        BinOp::Pow => return Err("`**` has no Rust operator".to_string()),
    })
}

/// The wrapping method of an integer `+ - *`.
fn wrapping_method(op: BinOp) -> Result<Ident, Bug> {
    let name = match op {
        BinOp::Add => "wrapping_add",
        BinOp::Sub => "wrapping_sub",
        BinOp::Mul => "wrapping_mul",
        _ => return Err(format!("`{}` has no wrapping method", op.symbol())),
    };
    Ok(Ident::new(name, proc_macro2::Span::call_site()))
}

/// Whether a conversion (`ShapeCast`) reads a view: its value is a variable
/// or a sub-tensor, so the result borrows it rather than owning its data.
pub(crate) fn converts_a_view(e: &Expr) -> bool {
    matches!(&e.kind, ExprKind::ShapeCast { value, .. } if matches!(value.kind, ExprKind::Var(_) | ExprKind::View { .. }))
}

/// `e^x` of a float of kind `k`: the runtime's exponential, which
/// vectorizes (`f32::exp` is a libm call per element).
fn exp_of(k: ScalarKind, rt: &TokenStream, x: Code) -> TokenStream {
    let x = x.tokens;
    if k == ScalarKind::F32 {
        quote!(#rt::arith::exp_f32(#x))
    } else {
        quote!(#rt::vmath::exp_f64(#x))
    }
}

/// The function of the runtime's `vmath` computing intrinsic `i` on floats
/// of kind `k` without branches or calls, so that loops of it vectorize
/// (within a few ulps, see `vmath`), when it has one. Every float function
/// of `std::math` is either here or a float method
/// (`Intrinsic::float_method`).
pub(super) fn vmath_name(i: Intrinsic, k: ScalarKind) -> Option<&'static str> {
    use Intrinsic as I;
    let f32 = match k {
        ScalarKind::F32 => true,
        ScalarKind::F64 => false,
        _ => return None,
    };
    Some(match (i, f32) {
        (I::Ln, true) => "ln_f32",
        (I::Ln, false) => "ln_f64",
        (I::Log2, true) => "log2_f32",
        (I::Log2, false) => "log2_f64",
        (I::Log10, true) => "log10_f32",
        (I::Log10, false) => "log10_f64",
        (I::Log1p, true) => "log1p_f32",
        (I::Log1p, false) => "log1p_f64",
        (I::Expm1, true) => "expm1_f32",
        (I::Expm1, false) => "expm1_f64",
        (I::Tanh, true) => "tanh_f32",
        (I::Tanh, false) => "tanh_f64",
        (I::Sigmoid, true) => "sigmoid_f32",
        (I::Sigmoid, false) => "sigmoid_f64",
        (I::Sinh, true) => "sinh_f32",
        (I::Sinh, false) => "sinh_f64",
        (I::Cosh, true) => "cosh_f32",
        (I::Cosh, false) => "cosh_f64",
        (I::Asinh, true) => "asinh_f32",
        (I::Asinh, false) => "asinh_f64",
        (I::Acosh, true) => "acosh_f32",
        (I::Acosh, false) => "acosh_f64",
        (I::Atanh, true) => "atanh_f32",
        (I::Atanh, false) => "atanh_f64",
        (I::Atan, true) => "atan_f32",
        (I::Atan, false) => "atan_f64",
        (I::Asin, true) => "asin_f32",
        (I::Asin, false) => "asin_f64",
        (I::Acos, true) => "acos_f32",
        (I::Acos, false) => "acos_f64",
        (I::Atan2, true) => "atan2_f32",
        (I::Atan2, false) => "atan2_f64",
        (I::Sin, true) => "sin_f32",
        (I::Sin, false) => "sin_f64",
        (I::Cos, true) => "cos_f32",
        (I::Cos, false) => "cos_f64",
        (I::Tan, true) => "tan_f32",
        (I::Tan, false) => "tan_f64",
        (I::Erf, true) => "erf_f32",
        (I::Erf, false) => "erf_f64",
        (I::Powf, true) => "pow_f32",
        (I::Powf, false) => "pow_f64",
        _ => return None,
    })
}

/// The argument `x` of a value that is `e^x` in `f32`, which the
/// sixteen-lane `exp` (`vmath::lanes`) computes.
pub(super) fn exp_f32_argument(e: &Expr) -> Option<&Expr> {
    match &e.kind {
        ExprKind::Intrinsic(Intrinsic::Exp, args) if e.ty == Repr::Scalar(ScalarKind::F32) => match args.as_slice() {
            [arg] => Some(arg),
            _ => None,
        },
        _ => None,
    }
}

/// The `__simd` function that computes a run of sixteen `f32`
/// exponentials: `exp_f32_nonpositive` where every argument is at most 0
/// or a quiet NaN ([`FnCx::below_its_maximum`]), `exp_f32` elsewhere (the
/// same bits on those arguments).
pub(super) fn exp_lanes(nonpositive: bool) -> TokenStream {
    if nonpositive {
        quote!(__simd::exp_f32_nonpositive)
    } else {
        quote!(__simd::exp_f32)
    }
}

impl FnCx<'_> {
    /// The `LANES` partial sums of a float sum of `k`s in the array
    /// `lanes` added into one (an expression), halving (four dependent
    /// additions where the lanes in order waited on fifteen), in the same
    /// order in every CPU form of a function: the runtime's
    /// `vmath::lanes::sum16`, a call, or for `f32` the form's own
    /// `__simd::sum16_f32` (in the AVX2 and AVX-512 forms the tree in
    /// vector registers, inlined). A tree of scalar additions inline made
    /// LLVM split the lanes across narrower registers in the loop that
    /// fills them (as a tree of neighbours, `(l0 + l1) + (l2 + l3)`, did: a
    /// sum of squares ran at half its speed); called, the loop keeps them
    /// in whole registers, and a sum of squares over rows of 64 to 1024 took
    /// 0.75-0.95 of the time it took with the lanes added in order. The
    /// vector tree loads the lanes as one register, which keeps them whole
    /// as well, and a softmax over rows of 256 no longer spends 7% of its
    /// samples in the call. (An `f64` extremum keeps its comparisons in
    /// lane order: called the same way, LLVM compared and selected twice
    /// per run of its loop; an `f32` one is combined by `ExtremumF32`, in
    /// registers.)
    pub(super) fn sum_of_lanes(&mut self, lanes: &TokenStream, k: ScalarKind) -> TokenStream {
        const _: () = assert!(LANES == 16, "the runtime adds sixteen lanes");
        if k == ScalarKind::F32 {
            self.uses_simd = true;
            // SAFETY (of the generated block): the form `__simd` names runs
            // on this processor (it is the function's own form's).
            return quote!(unsafe { __simd::sum16_f32(#lanes) });
        }
        let rt = crate::codegen::paths::rt_local();
        quote!(#rt::vmath::lanes::sum16(#lanes))
    }
}

/// Whether a reduction runs in lanes (`reduce_in_lanes`): a float sum,
/// maximum or minimum with loops and without where entries to test
/// (`no_wheres`), whose innermost loop is not known to be shorter than the
/// lanes (a pooling window's maximum stays the plain loop).
pub(super) fn in_lanes(op: RedOp, loops: &[Loop], no_wheres: bool, k: ScalarKind) -> bool {
    let short = loops.last().and_then(|l| l.end.sub(&l.start).as_constant()).is_some_and(|n| n < LANES as i64);
    matches!(op, RedOp::Sum | RedOp::Max | RedOp::Min) && !loops.is_empty() && no_wheres && !k.is_int() && !short
}
