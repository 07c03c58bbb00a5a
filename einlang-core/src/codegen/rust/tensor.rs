//! Pointwise tensor definitions: a loop nest writing a fresh array.
//!
//! ```text
//! let c: Array<f32, Ix2> = __rt::par::fill("f", [M as usize, N as usize], 3, |__pos_i, __row_c| {
//!     let i: i64 = __pos_i as i64;
//!     for (__pos_j, __slot_c) in __row_c.iter_mut().enumerate() {
//!         let j: i64 = __pos_j as i64;
//!         *__slot_c = <body>;
//!     }
//!     Ok(())
//! })?;
//! ```
//!
//! Temporaries are named `__<category>_<variable>` (`__pos_j`, `__row_c`,
//! `__chunk_c_i`): the categories differ in their first letters, and the
//! Rust spellings of IR names never start with `__` (see `names`), so no
//! two temporaries in scope, nor a temporary and an IR variable, can share a
//! name.
//!
//! `fill` allocates the array in standard layout and hands out one row per
//! index of the outermost axis, on rayon threads when the work estimate is
//! above the runtime's threshold (see "Threads" in the module above). Inside, inner axes walk the row with
//! `chunks_exact_mut` and the innermost axis with `iter_mut`, so writes have
//! no bounds checks and the innermost loop runs over contiguous memory. A
//! rank-1 tensor is handed out in blocks of consecutive elements instead;
//! rank 0 is a single value (`arr0`).

use std::collections::HashSet;

use proc_macro2::{Ident, TokenStream};
use quote::quote;

use super::{ahead, derived, in_place, types, Bug, FnCx, Ownership};
use crate::ir::{Axis, Conv, ExprKind, Gemm, Repr, Rows, Stmt, TensorDef, VarId};

impl FnCx<'_> {
    /// A GEMM-shaped definition: one call of the runtime's matrix product
    /// on permuted views of the operands (no copies). In `checked` mode the
    /// reference loop nest runs instead, so every access is checked.
    pub(crate) fn gemm(&mut self, g: &Gemm) -> Result<TokenStream, Bug> {
        if self.all_checked {
            return self.tensor_def(&g.reference);
        }
        let info = self.info(g.out)?;
        let rank = if g.batch.is_some() { 3 } else { 2 };
        if info.ty != Repr::Tensor(g.elem, rank) {
            return Err(format!("gemm result `{}` has type `{:?}`", info.name, info.ty));
        }
        let (rt, nd, fname) = (self.rt.clone(), self.nd.clone(), self.fn_name.clone());
        let out = self.ident(g.out)?;
        let [m, n, k, a, b] = self.gemm_args(g)?;
        let array = types::array(g.elem, Some(rank), &nd);
        // A scaled product: each finished sum times the scale, by the
        // runtime's kernels (`Gemm::scale`).
        let scale = match &g.scale {
            Some(e) => Some(self.expr(e)?.tokens),
            None => None,
        };
        let call = match (&g.batch, self.outs.get(&g.out), scale) {
            (None, Some(dest), None) => quote!(#rt::dest::product_into(#fname, #m, #n, #k, #a, #b, &mut *#dest)),
            (None, Some(dest), Some(s)) => {
                quote!(#rt::dest::scaled_product_into(#fname, #m, #n, #k, #a, #b, #s, &mut *#dest))
            }
            (None, None, None) => quote!(#rt::gemm::matmul(#fname, #m, #n, #k, #a, #b)),
            (None, None, Some(s)) => quote!(#rt::gemm::matmul_scaled(#fname, #m, #n, #k, #a, #b, #s)),
            // An operand with two axes is one matrix shared by every batch.
            (Some(batch), Some(dest), scale) => {
                let batch = self.dim(batch)?;
                let scale = match scale {
                    Some(s) => quote!(::core::option::Option::Some(#s)),
                    None => quote!(::core::option::Option::None),
                };
                quote!(#rt::dest::batched_product_into(#fname, #batch, #m, #n, #k, #a, #b, #scale, &mut *#dest))
            }
            (Some(batch), None, scale) => {
                let batch = self.dim(batch)?;
                match scale {
                    None => quote!(#rt::gemm::batched_matmul(#fname, #batch, #m, #n, #k, #a, #b)),
                    Some(s) => quote!(#rt::gemm::batched_matmul_scaled(#fname, #batch, #m, #n, #k, #a, #b, #s)),
                }
            }
        };
        let call = self.naming(g.out, call);
        let call = quote!(#call?);
        self.repr.insert(g.out, Ownership::Owned);
        // The runtime's products return fresh standard-layout arrays.
        self.standard.insert(g.out);
        Ok(quote!(let #out: #array = #call;))
    }

    /// A convolution: one call of the runtime's direct kernel
    /// (`conv::conv2d`) on views of the operands, into a fresh zeroed
    /// array of the reference's extents. In `checked` mode the reference
    /// loop nest runs instead, so every access is checked.
    pub(crate) fn conv(&mut self, c: &Conv) -> Result<TokenStream, Bug> {
        if self.all_checked {
            return self.tensor_def(&c.reference);
        }
        let info = self.info(c.out)?;
        let rank = c.reference.axes.len();
        if info.ty != Repr::Tensor(c.elem, rank) || !(3..=4).contains(&rank) {
            return Err(format!("conv result `{}` has type `{:?}`", info.name, info.ty));
        }
        let (rt, nd, fname) = (self.rt.clone(), self.nd.clone(), self.fn_name.clone());
        let out = self.ident(c.out)?;
        let (x, k) = (self.ident(c.x)?, self.ident(c.k)?);
        // The kernel as `[filter, channel, row, column]`, backwards along
        // the window for an input gradient.
        let k_axes = c.k_axes.iter().map(|a| types::usize_lit(*a));
        let kv = match (c.k_axes == [0, 1, 2, 3], c.k_flip) {
            (true, false) => quote!(#k.view()),
            (_, flip) => {
                let view = quote!(#k.view().permuted_axes([#(#k_axes),*]));
                if flip {
                    quote!(#view.slice_move(#nd::s![.., .., ..;-1, ..;-1]))
                } else {
                    view
                }
            }
        };
        let bias = match c.bias {
            Some(b) => {
                let b = self.ident(b)?;
                quote!(::core::option::Option::Some(#b.view()))
            }
            None => quote!(::core::option::Option::None),
        };
        let lens = c.reference.axes.iter().map(|a| self.extent_usize(&a.extent)).collect::<Result<Vec<_>, _>>()?;
        // A pad, stride or dilation is a constant, or an `i64` that
        // `otherwise.when` checks is not negative (at least 1) before the
        // kernel runs.
        let pad = |d: &crate::base::dim::Dim| -> Result<TokenStream, Bug> {
            match d.as_constant().and_then(|p| usize::try_from(p).ok()) {
                Some(p) => {
                    let p = types::usize_lit(p);
                    Ok(quote!(#p))
                }
                None => {
                    let d = self.dim(d)?;
                    Ok(quote!((#d) as usize))
                }
            }
        };
        let (top, left) = (pad(&c.pad.0)?, pad(&c.pad.1)?);
        // The pads alone for a stride-1 window, else the whole window.
        let unit = |d: &(crate::base::dim::Dim, crate::base::dim::Dim)| {
            d.0.as_constant() == Some(1) && d.1.as_constant() == Some(1)
        };
        let window = if unit(&c.stride) && unit(&c.dilation) {
            quote!((#top, #left))
        } else {
            let (sh, sw) = (pad(&c.stride.0)?, pad(&c.stride.1)?);
            let (dh, dw) = (pad(&c.dilation.0)?, pad(&c.dilation.1)?);
            quote!(#rt::conv::Window { pad: (#top, #left), stride: (#sh, #sw), dilation: (#dh, #dw) })
        };
        let tensor = self.tensor_name(c.out);
        let array = types::array(c.elem, Some(rank), &nd);
        let elem = types::scalar(c.elem);
        let y = derived("out_", &out, "");
        // A single image is a batch of one.
        let (xv, yv) = if rank == 3 {
            (quote!(#x.view().insert_axis(#nd::Axis(0))), quote!(#y.view_mut().insert_axis(#nd::Axis(0))))
        } else {
            (quote!(#x.view()), quote!(#y.view_mut()))
        };
        // The definition as written where it is not the convolution at
        // run time (its strides, dilations or pads).
        let otherwise = match &c.otherwise {
            Some(e) => {
                let when = self.expr(&e.when)?.tokens;
                let value = self.owned(&e.value, &HashSet::new())?.tokens;
                Some((when, value))
            }
            None => None,
        };
        self.repr.insert(c.out, Ownership::Owned);
        self.standard.insert(c.out);
        // The kernel into a fresh array; in groups, the number of groups
        // (a run-time value only under `otherwise.when`, which checks it).
        // Each element `max(_, 0)` after the bias when the definition is a
        // ReLU of the sum.
        let relu = c.relu;
        // The kernel's axis each axis of the result holds (a result
        // stored channels last is written through a permuted view).
        let order: Vec<proc_macro2::Literal> = c.out_order.iter().map(|a| types::usize_lit(*a)).collect();
        if rank == 3 && c.out_order != [0, 1, 2, 3] {
            return Err(format!("a single image's conv with the result order {:?}", c.out_order));
        }
        let grouped = c.groups.as_constant() != Some(1);
        let call = if grouped {
            let groups = self.dim(&c.groups)?;
            quote!(#rt::conv::conv2d_grouped(#fname, #xv, #kv, #bias, #window, (#groups) as usize, #relu, #yv)?;)
        } else {
            quote!(#rt::conv::conv2d(#fname, #xv, #kv, #bias, #window, #relu, #yv)?;)
        };
        let fresh = if rank == 4 {
            // A batch: into a new array that the kernel writes whole (not
            // zeroed first).
            let groups = if grouped { self.dim(&c.groups)? } else { quote!(1) };
            quote! {{
                let #y: #array = #rt::conv::conv2d_grouped_new(
                    #fname, #tensor, [#(#lens),*], [#(#order),*], #xv, #kv, #bias, #window, (#groups) as usize, #relu,
                )?;
                #y
            }}
        } else {
            quote! {{
                let mut #y: #array = #rt::pool::zeros(#fname, #tensor, [#(#lens),*], <#elem>::default())?;
                #call
                #y
            }}
        };
        if let Some((when, value)) = otherwise {
            return Ok(quote!(let #out: #array = if #when #fresh else { #value };));
        }
        if let (4, false, Some(dest)) = (rank, grouped, self.outs.get(&c.out)) {
            // The caller's buffer, of any strides (`NAME_into`).
            return Ok(quote! {
                let #out: #array = #rt::dest::conv_into(
                    #fname, #tensor, #xv, #kv, #bias, #window, #relu, [#(#lens),*], [#(#order),*], &mut *#dest,
                )?;
            });
        }
        Ok(quote!(let #out: #array = #fresh;))
    }

    /// A product's extents and its operands as permuted views.
    fn gemm_args(&mut self, g: &Gemm) -> Result<[TokenStream; 5], Bug> {
        let (m, n, k) = (self.dim(&g.m)?, self.dim(&g.n)?, self.dim(&g.k)?);
        let a = self.gemm_operand(g, g.a, &g.a_axes)?;
        let b = self.gemm_operand(g, g.b, &g.b_axes)?;
        Ok([m, n, k, a, b])
    }

    /// An operand of `g` as a permuted view; of one batch of a product
    /// (`Gemm::slice`), an operand with a batch axis is its matrix at the
    /// batch index (`gemm::batch_of`), its other two axes in their order.
    fn gemm_operand(&mut self, g: &Gemm, t: VarId, axes: &[usize]) -> Result<TokenStream, Bug> {
        let name = self.ident(t)?;
        match (g.slice, axes) {
            (Some(index), [batch, rest @ ..]) if axes.len() == 3 => {
                let (rt, fname) = (self.rt.clone(), self.fn_name.clone());
                let index = self.ident(index)?;
                let at = types::usize_lit(*batch);
                // The two axes left, numbered after the batch axis is gone.
                let rest = rest.iter().map(|x| types::usize_lit(if x > batch { x - 1 } else { *x }));
                Ok(quote!(#rt::gemm::batch_of(#fname, #name.view(), #at, #index)?.permuted_axes([#(#rest),*])))
            }
            _ => {
                let axes = axes.iter().map(|x| types::usize_lit(*x));
                Ok(quote!(#name.view().permuted_axes([#(#axes),*])))
            }
        }
    }

    /// A definition's extents (as `usize`), the name of its shape array,
    /// the binding of that array (rank 3 and up) and the shape to allocate.
    fn shape_of(
        &self,
        def: &TensorDef,
        name: &Ident,
    ) -> Result<(Vec<TokenStream>, Ident, TokenStream, TokenStream), Bug> {
        let (rank, nd) = (def.axes.len(), &self.nd);
        let lens = def.axes.iter().map(|a| self.extent_usize(&a.extent)).collect::<Result<Vec<_>, _>>()?;
        let shape_var = derived("shape_", name, "");
        let (shape_binding, shape) = if rank <= 2 {
            (TokenStream::new(), types::shape(&lens, nd))
        } else {
            let r = types::usize_lit(rank);
            let value =
                if rank <= types::MAX_STATIC_RANK { quote!(#shape_var) } else { quote!(#nd::IxDyn(&#shape_var)) };
            (quote!(let #shape_var: [usize; #r] = [#(#lens),*];), value)
        };
        Ok((lens, shape_var, shape_binding, shape))
    }

    /// A row definition whose rows are its prelude's product itself (`y[n,
    /// o, i, j] = y_prod[o, i, j]`, a convolution without bias): the
    /// product is written straight into the row (`gemm::matmul_into`),
    /// not into a fresh array that the row then copies. None for others.
    fn product_rows(&mut self, rows: &Rows) -> Result<Option<TokenStream>, Bug> {
        let def = &rows.def;
        let [before @ .., Stmt::Gemm(g), Stmt::Reshape { var: yp, source, dims, .. }] = rows.prelude.as_slice() else {
            return Ok(None);
        };
        let ExprKind::Read { tensor, indices, checked: false } = &def.body.kind else { return Ok(None) };
        let own_point = indices.len() + 1 == def.axes.len()
            && indices.iter().zip(&def.axes[1..]).all(|(i, a)| matches!(i.kind, ExprKind::Var(v) if v == a.index));
        let same_shape =
            dims.len() + 1 == def.axes.len() && dims.iter().zip(&def.axes[1..]).all(|(d, a)| *d == a.extent);
        if self.all_checked
            || *tensor != *yp
            || *source != g.out
            || g.batch.is_some()
            || g.scale.is_some()
            || !own_point
            || !same_shape
        {
            return Ok(None);
        }
        self.row_written_by(def, before, |cx, row| {
            let [m, n, k, a, b] = cx.gemm_args(g)?;
            let (rt, fname) = (&cx.rt, &cx.fn_name);
            Ok(quote!(#rt::gemm::matmul_into(#fname, #m, #n, #k, #a, #b, #row)?;))
        })
        .map(Some)
    }

    /// A row definition whose rows one runtime call writes whole after the
    /// prelude `before` (`product_rows`' `matmul_into`, `attention_rows`'
    /// `attention_into`): the fill of the rows, then the result. `call`
    /// gives the call's statement for the row named `row`, translated, as
    /// the prelude is, without moving the prelude's values.
    fn row_written_by(
        &mut self,
        def: &TensorDef,
        before: &[Stmt],
        call: impl FnOnce(&mut Self, &Ident) -> Result<TokenStream, Bug>,
    ) -> Result<TokenStream, Bug> {
        let rank = def.axes.len();
        let name = self.ident(def.var)?;
        let (rt, nd, fname) = (self.rt.clone(), self.nd.clone(), self.fn_name.clone());
        let (_, _, shape_binding, shape) = self.shape_of(def, &name)?;
        let row = derived("row_", &name, "");
        self.no_move += 1;
        let prelude = before.iter().map(|s| self.stmt(s)).collect::<Result<Vec<_>, _>>();
        let call = call(self, &row);
        self.no_move -= 1;
        let (prelude, call) = (prelude?, call?);
        let (pos, binding) = self.position(&def.axes[0], |pos| quote!(#pos))?;
        let recycle = self.recycle_prelude(before)?;
        let elem_ty = types::scalar(def.elem);
        let array = types::array(def.elem, Some(rank), &nd);
        let fill = derived("fill_", &name, "");
        let cost = proc_macro2::Literal::u64_unsuffixed(def.cost_per_point);
        self.repr.insert(def.var, Ownership::Owned);
        self.standard.insert(def.var);
        let fill_call = self.fill_call(def.var, "par", "fill_uninit", quote!(#fname, #shape, #cost, #fill));
        Ok(quote! {
            #shape_binding
            let #fill = |#pos: usize, #row: &mut [::core::mem::MaybeUninit<#elem_ty>]| -> ::core::result::Result<(), #rt::Error> {
                #binding
                #(#prelude)*
                #call
                #recycle
                Ok(())
            };
            // SAFETY: the call writes every element of the row it is given
            // before it returns `Ok`.
            let #name: #array = unsafe { #fill_call }?;
        })
    }

    /// A row definition that is one batch of attention (`opt::slices`'
    /// chain): its prelude ends in a product `s` of the row's batch
    /// (scaled or not), a row group `e[i, j] = exp(s[i, j] - m)` after
    /// `let m = max[j](s[i, j])`, a product `y_mm = e · v` of the same
    /// batch and `z[i] = sum[j](e[i, j])`, and its rows are `y_mm[i, c] /
    /// z[i]`, every index an axis from zero over the extents the products
    /// name, all in `f32`. The four statements and the division become one
    /// call of the runtime's `gemm::attention_into` per row, which writes
    /// the row with the chain's bits (fused on our AVX-512 kernels). Those
    /// names are read nowhere else: each is defined after the statements
    /// before it and read only by the pattern's own reads. None for
    /// others, and in `checked` mode.
    fn attention_rows(&mut self, rows: &Rows) -> Result<Option<TokenStream>, Bug> {
        use crate::base::dim::Dim;
        use crate::base::intrinsic::Intrinsic;
        use crate::base::ops::{BinOp, RedOp};
        use crate::base::scalar::ScalarKind;
        use crate::ir::Expr;
        let def = &rows.def;
        let [before @ .., Stmt::Gemm(g1), Stmt::Rows(er), Stmt::Gemm(g2), Stmt::Tensor(z)] = rows.prelude.as_slice()
        else {
            return Ok(None);
        };
        if self.all_checked || def.elem != ScalarKind::F32 || def.axes.len() != 3 || def.domain_guards != 0 {
            return Ok(None);
        }
        let zero = Dim::zero();
        let from_zero = |axes: &[crate::ir::Axis]| axes.iter().all(|a| a.start == zero);
        // `read t[v0, v1, ..]` unchecked at exactly these index variables.
        let reads = |e: &Expr, t: VarId, at: &[VarId]| match &e.kind {
            ExprKind::Read { tensor, indices, checked: false } => {
                *tensor == t
                    && indices.len() == at.len()
                    && indices.iter().zip(at).all(|(i, v)| matches!(i.kind, ExprKind::Var(x) if x == *v))
            }
            _ => false,
        };
        let (s, e, ymm) = (g1.out, er.def.var, g2.out);
        let (i, c) = (def.axes[1].index, def.axes[2].index);
        // The rows: y_mm[i, c] / z[i].
        let ExprKind::Binary(BinOp::Div, num, den) = &def.body.kind else { return Ok(None) };
        if !from_zero(&def.axes)
            || !reads(num, ymm, &[i, c])
            || !reads(den, z.var, &[i])
            || def.axes[1].extent != g1.m
            || def.axes[2].extent != g2.n
        {
            return Ok(None);
        }
        // The products: one batch each, at the same index, `f32`; the
        // second's left operand is `e` as it is, unscaled.
        let same_batch = g1.slice.is_some() && g1.slice == g2.slice && g1.batch.is_none() && g2.batch.is_none();
        if !same_batch
            || g1.elem != ScalarKind::F32
            || g2.elem != ScalarKind::F32
            || g2.a != e
            || g2.a_axes != [0, 1]
            || g2.scale.is_some()
            || [g1.a, g1.b, g2.b].iter().any(|t| [s, e, ymm, z.var].contains(t))
            || g2.m != g1.m
            || g2.k != g1.n
        {
            return Ok(None);
        }
        // e[i2, j2] = exp(s[i2, j2] - m) after m = max[j3](s[i2, j3]).
        let ed = &er.def;
        let [Stmt::Let { var: m, value: mv }] = er.prelude.as_slice() else { return Ok(None) };
        if ed.elem != ScalarKind::F32 || ed.axes.len() != 2 || !from_zero(&ed.axes) || ed.domain_guards != 0 {
            return Ok(None);
        }
        let (i2, j2) = (ed.axes[0].index, ed.axes[1].index);
        if ed.axes[0].extent != g1.m || ed.axes[1].extent != g1.n {
            return Ok(None);
        }
        let ExprKind::Reduce { op: RedOp::Max, loops, wheres, body } = &mv.kind else { return Ok(None) };
        let [l] = loops.as_slice() else { return Ok(None) };
        if !wheres.is_empty() || l.start != zero || l.end != g1.n || !reads(body, s, &[i2, l.index]) {
            return Ok(None);
        }
        let ExprKind::Intrinsic(Intrinsic::Exp, args) = &ed.body.kind else { return Ok(None) };
        let [arg] = args.as_slice() else { return Ok(None) };
        let ExprKind::Binary(BinOp::Sub, x, mm) = &arg.kind else { return Ok(None) };
        if !reads(x, s, &[i2, j2]) || !matches!(mm.kind, ExprKind::Var(v) if v == *m) {
            return Ok(None);
        }
        // z[i3] = sum[j4](e[i3, j4]).
        if z.elem != ScalarKind::F32 || z.axes.len() != 1 || !from_zero(&z.axes) || z.domain_guards != 0 {
            return Ok(None);
        }
        let ExprKind::Reduce { op: RedOp::Sum, loops, wheres, body } = &z.body.kind else { return Ok(None) };
        let [l] = loops.as_slice() else { return Ok(None) };
        if z.axes[0].extent != g1.m
            || !wheres.is_empty()
            || l.start != zero
            || l.end != g1.n
            || !reads(body, e, &[z.axes[0].index, l.index])
        {
            return Ok(None);
        }
        self.row_written_by(def, before, |cx, row| {
            let [m, nk, d, q, kt] = cx.gemm_args(g1)?;
            let value = cx.gemm_operand(g2, g2.b, &g2.b_axes)?;
            let dv = cx.dim(&g2.n)?;
            let scale = match &g1.scale {
                Some(x) => {
                    let x = cx.expr(x)?.tokens;
                    quote!(::core::option::Option::Some(#x))
                }
                None => quote!(::core::option::Option::None),
            };
            let (rt, fname) = (&cx.rt, &cx.fn_name);
            Ok(quote!(#rt::gemm::attention_into(#fname, [#m, #nk, #d, #dv], #q, #kt, #value, #scale, #row)?;))
        })
        .map(Some)
    }

    pub(crate) fn tensor_def(&mut self, def: &TensorDef) -> Result<TokenStream, Bug> {
        if let Some((sums, at)) = self.summed.remove(&def.var) {
            // Summed as the rows it adds up were written (`in_place`).
            let name = self.ident(def.var)?;
            let nd = self.nd.clone();
            let array = types::array(def.elem, Some(def.axes.len()), &nd);
            return Ok(match at {
                in_place::SumAt::Top => {
                    self.repr.insert(def.var, Ownership::Owned);
                    self.standard.insert(def.var);
                    quote!(let #name: #array = #sums;)
                }
                in_place::SumAt::Row(n) => {
                    let n = self.ident(n)?;
                    self.repr.insert(def.var, Ownership::Borrowed);
                    self.standard.insert(def.var);
                    quote!(let #name = #sums.index_axis(#nd::Axis(0), #n as usize);)
                }
            });
        }
        self.tensor_with_prelude(def, &[])
    }

    /// A definition with a row prelude: the prelude's statements run inside
    /// the closure that computes one row, after its index is bound.
    pub(crate) fn rows(&mut self, rows: &Rows) -> Result<TokenStream, Bug> {
        if rows.def.axes.len() < 2 {
            return Err(format!("rows of a tensor of rank {}", rows.def.axes.len()));
        }
        if let Some(code) = self.product_rows(rows)? {
            return Ok(code);
        }
        if let Some(code) = self.attention_rows(rows)? {
            return Ok(code);
        }
        self.tensor_with_prelude(&rows.def, &rows.prelude)
    }

    /// Gives the tensors a row's prelude owns back to the runtime's pool
    /// when the row is done: the next row, on this thread or another,
    /// reuses them instead of mapping fresh pages (a convolution's packed
    /// columns, a megabyte per image).
    fn recycle_prelude(&self, prelude: &[Stmt]) -> Result<TokenStream, Bug> {
        let rt = &self.rt;
        let temps = self.temporaries(prelude, None, false)?;
        Ok(quote!(#(#rt::pool::recycle(#temps);)*))
    }

    fn tensor_with_prelude(&mut self, def: &TensorDef, prelude: &[Stmt]) -> Result<TokenStream, Bug> {
        let rank = def.axes.len();
        let info = self.info(def.var)?;
        if info.ty != Repr::Tensor(def.elem, rank) {
            return Err(format!(
                "tensor `{}` of type `{:?}` is defined with {rank} axes of `{}`",
                info.name,
                info.ty,
                def.elem.name()
            ));
        }
        if def.body.ty != Repr::Scalar(def.elem) {
            return Err(format!("the body of tensor `{}` has type `{:?}`", info.name, def.body.ty));
        }
        let name = self.ident(def.var)?;
        let (rt, nd, fname) = (self.rt.clone(), self.nd.clone(), self.fn_name.clone());
        let array = types::array(def.elem, Some(rank), &nd);

        if rank == 0 {
            let body = self.expr(&def.body)?.tokens;
            self.repr.insert(def.var, Ownership::Owned);
            return Ok(quote!(let #name: #array = #nd::arr0(#body);));
        }

        let (lens, shape_var, shape_binding, shape) = self.shape_of(def, &name)?;
        if let Some(source) = prelude.is_empty().then(|| self.copied_view(def)).flatten() {
            // A block of a borrowed tensor, or of a temporary, as it is (a
            // packed operand that is a parameter or an output gradient): a
            // view when it is contiguous.
            let src = self.ident(source)?;
            if matches!(self.repr.get(&source), Some(Ownership::Owned)) || self.owned_views.contains(&source) {
                self.owned_views.push(def.var);
            }
            self.repr.insert(def.var, Ownership::Borrowed);
            self.standard.insert(def.var);
            return Ok(quote!(let #name = #rt::shape::leading_block(#fname, #src.view(), &[#(#lens),*])?;));
        }
        if let Some(copy) = prelude.is_empty().then(|| self.slab_copy(def, &lens)).transpose()?.flatten() {
            self.repr.insert(def.var, Ownership::Owned);
            self.standard.insert(def.var);
            let (zero, tname) = (types::zero(def.elem), self.tensor_name(def.var));
            let nonempty =
                lens.iter().map(|l| quote!((#l) > 0usize)).reduce(|a, b| quote!(#a && #b)).unwrap_or(quote!(true));
            return Ok(quote! {
                #shape_binding
                let #name: #array = if #nonempty { #copy } else { #rt::pool::zeros(#fname, #tname, #shape, #zero)? };
            });
        }

        if let Some((source, axes)) = prelude.is_empty().then(|| self.permuted_copy(def)).flatten() {
            let src = self.ident(source)?;
            let axes = axes.into_iter().map(types::usize_lit);
            let call =
                self.fill_call(def.var, "permute", "permute", quote!(#fname, #src.view(), &[#(#axes),*], #shape));
            self.repr.insert(def.var, Ownership::Owned);
            self.standard.insert(def.var);
            return Ok(quote! {
                #shape_binding
                let #name: #array = #call?;
            });
        }

        let slot = derived("slot_", &name, "");
        let sums_ptr = derived("sums_ptr_", &name, "");
        let mut row_sums: Option<(VarId, in_place::SumAt)> = None;
        // A row tensor the value reads at its own position is computed in
        // the row itself (`in_place`).
        let in_place = if prelude.is_empty() { None } else { self.in_place_row(def, prelude) };
        // ... and a sum of that whole row is added up as it is stored.
        let fused = in_place.and_then(|at| match &prelude[at] {
            Stmt::Tensor(e) => Self::fused_sum(e, prelude.get(at + 1)).map(|s| (at + 1, s)),
            _ => None,
        });
        let (row, row_ptr, row_len) =
            (derived("row_", &name, ""), derived("ptr_", &name, ""), derived("len_", &name, ""));
        self.no_move += 1;
        self.preludes.push(prelude.to_vec());
        // A second pass over the input's rows asks for the next row, and
        // for the output's row where the prelude does not write it.
        let mut ahead = match def.axes.as_slice() {
            [row, _] => ahead::second_passes(prelude, row.index),
            _ => Vec::new(),
        };
        if in_place.is_none() {
            for a in ahead.iter_mut().flatten() {
                a.out = Some(ahead::OutRow { slice: row.clone(), name: name.clone(), elem: def.elem });
            }
        }
        // The prelude is emitted first: the body reads what it defines.
        let prelude_code = prelude
            .iter()
            .enumerate()
            .map(|(i, s)| {
                self.ahead = ahead.get_mut(i).and_then(Option::take);
                let code = match s {
                    Stmt::Tensor(e) if in_place == Some(i) => {
                        self.fill_in_place(e, &row, &row_ptr, &row_len, fused.map(|(_, s)| s))
                    }
                    _ if fused.is_some_and(|(at, _)| at == i) => Ok(TokenStream::new()),
                    _ => self.stmt(s),
                };
                self.ahead = None;
                code
            })
            .collect::<Result<Vec<_>, _>>();
        self.preludes.pop();
        let body = self.expr(&def.body);
        // A value with a sixteen-lane form, `exp(a)` or `sigmoid(a)`
        // (`lane_maps`): its argument emitted beside the value.
        let lane_map = if prelude.is_empty() && rank >= 1 { self.lane_map(def) } else { Ok(None) };
        self.no_move -= 1;
        let (prelude_code, body, lane_map) = (prelude_code?, body?.tokens, lane_map?);
        // Every element is written once, into uninitialized memory, unless
        // the row accumulates (it starts from zero then).
        let mut uninit = true;
        let mut nest = quote!(#slot.write(#body););
        let elem_ty = types::scalar(def.elem);
        let chunk_ty = quote!(&mut [::core::mem::MaybeUninit<#elem_ty>]);
        let result_ty = quote!(::core::result::Result<(), #rt::Error>);
        if rank == 2 && prelude.is_empty() && reads_across_rows(&def.body, def.axes[0].index) {
            return self.row_blocks(def, &name, &lens, body);
        }
        let closure = if rank == 1 {
            let axis = &def.axes[0];
            let (first, block) = (derived("first_", &name, ""), derived("block_", &name, ""));
            let (pos, binding) = self.position(axis, |pos| quote!((#first + #pos)))?;
            let along = reads_along_axis(&def.body, axis.index);
            match along.then(|| self.accumulate_row(def, &block, &slot, &pos, &binding)).transpose()?.flatten() {
                // A vector accumulating a reduction's terms pass by pass:
                // the runtime splits the reduction, or the vector into wide
                // blocks, across threads.
                Some(acc) => {
                    let Accumulation { start, locals, outer, inner, epilogue, merge, term_work } = acc;
                    let (k, k_start, k_end) = outer;
                    let len = &lens[0];
                    self.repr.insert(def.var, Ownership::Owned);
                    self.standard.insert(def.var);
                    let tname = self.tensor_name(def.var);
                    return Ok(quote! {
                        let #name: #array = #rt::pool::named(#tname, #rt::par::fill_reduced(
                            #fname,
                            #len,
                            (#k_start, #k_end),
                            #term_work,
                            #start,
                            |#first: usize, __from: i64, __to: i64, #block: &mut [#elem_ty]| -> #result_ty {
                                #locals
                                for #k in __from..__to { #inner }
                                Ok(())
                            },
                            #merge,
                            |#first: usize, #block: &mut [#elem_ty]| -> #result_ty {
                                #epilogue
                                Ok(())
                            },
                        ))?;
                    });
                }
                None => {
                    let each = match &lane_map {
                        Some(map) => map.over(&block, &pos, &binding, &body),
                        None => quote! {
                            for (#pos, #slot) in #block.iter_mut().enumerate() {
                                #binding
                                #nest
                            }
                        },
                    };
                    // Bound by its arithmetic: pieces that ask ahead.
                    let each = self.map_ahead(def, &first, &block, each)?;
                    quote! {
                        |#first: usize, #block: #chunk_ty| -> #result_ty {
                            #each
                            Ok(())
                        }
                    }
                }
            }
        } else {
            // Innermost axis: the elements of the innermost chunk.
            let mut chunk_of_axis: Vec<Ident> = vec![row.clone()];
            for axis in &def.axes[1..rank - 1] {
                let index = self.ident(axis.index)?;
                let index = index.to_string();
                chunk_of_axis.push(derived(
                    "chunk_",
                    &name,
                    &format!("_{}", index.strip_prefix("r#").unwrap_or(&index)),
                ));
            }
            let last = &def.axes[rank - 1];
            let (pos, binding) = self.position(last, |pos| quote!(#pos))?;
            let chunk = &chunk_of_axis[rank - 2];
            let accumulated = if in_place.is_some() {
                None
            } else {
                self.accumulate_row(def, chunk, &slot, &pos, &binding)?.map(|a| a.row(chunk, &slot))
            };
            // A later sum of each row (`in_place::row_sum_of`), added up
            // as the row is written.
            if let Some((z, at)) = self.row_sum_of(def) {
                self.summed.remove(&z);
                if in_place.is_none() && accumulated.is_none() {
                    row_sums = Some((z, at));
                }
            }
            // An `f32` row divided by one value along it: in place.
            let divided = match in_place.map(|at| &prelude[at]) {
                Some(Stmt::Tensor(e)) if accumulated.is_none() => self.divided_row(def, e.var, &row_ptr, &row_len)?,
                _ => None,
            };
            nest = match (accumulated, divided) {
                (None, Some(code)) => code,
                // Each element replaces the row tensor's element it reads.
                (None, None) if in_place.is_some() => quote! {
                    for #pos in 0..#row_len {
                        #binding
                        let __v: #elem_ty = #body;
                        // SAFETY: `#pos < #row_len`; the row is written
                        // through the pointer its row tensor was.
                        unsafe { #row_ptr.add(#pos).write(__v) };
                    }
                },
                (Some(code), _) => {
                    uninit = false;
                    code
                }
                (None, None) if lane_map.is_some() => {
                    let over = |binding: &TokenStream| {
                        lane_map.as_ref().map(|map| map.over(chunk, &pos, binding, &body)).unwrap_or_default()
                    };
                    // Bound by its arithmetic: pieces that ask ahead.
                    let ahead = if rank == 2 && prelude.is_empty() { self.row_ahead(def, chunk, over)? } else { None };
                    ahead.unwrap_or_else(|| over(&binding))
                }
                (None, None) => {
                    let generic = quote! {
                        for (#pos, #slot) in #chunk.iter_mut().enumerate() {
                            #binding
                            #nest
                        }
                    };
                    match self.clipped_row(def, last, chunk, &slot, &pos, &binding, &generic)? {
                        Some(clipped) => clipped,
                        // A row that copies a run of a tensor: one slice.
                        None => {
                            let range = quote!(#chunk[__a..__b]);
                            match self.slice_loop(&def.body, last.index, &pos, &binding, &range, &slot, false)? {
                                Some(copy) => quote! {
                                    let (__a, __b) = (0usize, #chunk.len());
                                    #copy
                                },
                                // Bound by its arithmetic: pieces that ask
                                // ahead.
                                None if rank == 2 && prelude.is_empty() => self
                                    .row_ahead(def, chunk, |binding| {
                                        quote! {
                                            for (#pos, #slot) in #chunk.iter_mut().enumerate() {
                                                #binding
                                                #nest
                                            }
                                        }
                                    })?
                                    .unwrap_or(generic),
                                None => generic,
                            }
                        }
                    }
                }
            };
            if row_sums.is_some() {
                let mut flat = {
                    let p = derived("pos_", &self.ident(def.axes[0].index)?, "");
                    quote!(#p)
                };
                for (a, axis) in def.axes.iter().enumerate().take(rank - 1).skip(1) {
                    let p = derived("pos_", &self.ident(axis.index)?, "");
                    let a = types::usize_lit(a);
                    flat = quote!((#flat) * #shape_var[#a] + #p);
                }
                let code = self.sum_written_row(def.elem, chunk, &sums_ptr, &flat);
                nest = quote!(#nest #code);
            }
            // Middle axes, inside out: chunks of the enclosing chunk.
            for a in (1..rank - 1).rev() {
                let (pos, binding) = self.position(&def.axes[a], |pos| quote!(#pos))?;
                let (outer, inner) = (&chunk_of_axis[a - 1], &chunk_of_axis[a]);
                let sizes: Vec<TokenStream> = (a + 1..rank)
                    .map(|b| {
                        let b = types::usize_lit(b);
                        quote!(#shape_var[#b])
                    })
                    .collect();
                let size = sizes.into_iter().reduce(|acc, s| quote!(#acc * #s)).unwrap_or_else(|| quote!(1usize));
                nest = quote! {
                    for (#pos, #inner) in #outer.chunks_exact_mut(#size).enumerate() {
                        #binding
                        #nest
                    }
                };
            }
            let (pos, binding) = self.position(&def.axes[0], |pos| quote!(#pos))?;
            let row = &chunk_of_axis[0];
            let params = if uninit { quote!(#pos: usize, #row: #chunk_ty) } else { quote!(#pos, #row) };
            let recycle = self.recycle_prelude(prelude)?;
            quote! {
                |#params| -> #result_ty {
                    #binding
                    #(#prelude_code)*
                    #nest
                    #recycle
                    Ok(())
                }
            }
        };
        self.repr.insert(def.var, Ownership::Owned);
        self.standard.insert(def.var);
        let cost = proc_macro2::Literal::u64_unsuffixed(def.cost_per_point);
        // The points of a definition are independent: the runtime splits
        // its outermost axis across threads when the work pays for it.
        if !uninit {
            let fill_call = self.fill_call(def.var, "par", "fill", quote!(#fname, #shape, #cost, #closure));
            return Ok(quote! {
                #shape_binding
                let #name: #array = #fill_call?;
            });
        }
        let fill = derived("fill_", &name, "");
        let fill_call = self.fill_call(def.var, "par", "fill_uninit", quote!(#fname, #shape, #cost, #fill));
        let Some((z, at)) = row_sums else {
            return Ok(quote! {
                #shape_binding
                let #fill = #closure;
                // SAFETY: the loop nest of `fill_` writes every element of each
                // chunk it is given before it returns `Ok`.
                let #name: #array = unsafe { #fill_call }?;
            });
        };
        // The sums of the rows, one per point of the leading axes, written
        // by the rows through a pointer that the threads share.
        let sums = derived("sums_", &name, "");
        let sums_array = types::array(def.elem, Some(rank - 1), &nd);
        let zero = types::zero(def.elem);
        let lead = &lens[..rank - 1];
        self.summed.insert(z, (sums.clone(), at));
        Ok(quote! {
            #shape_binding
            let mut #sums: #sums_array = #nd::Array::from_elem([#(#lead),*], #zero);
            // Each row writes its own element of the sums, which are not
            // read until every row is done.
            let #sums_ptr = #rt::par::Shared(#sums.as_mut_ptr());
            let #fill = #closure;
            // SAFETY: the loop nest of `fill_` writes every element of each
            // chunk it is given before it returns `Ok`.
            let #name: #array = unsafe { #fill_call }?;
        })
    }

    /// The borrowed tensor (a parameter, or a view of one), or the
    /// temporary that lives to the function's end (`unmoved`), that `def`
    /// copies as it is: its value is a proven read of that tensor at its
    /// axes in order, from 0, of the same element type and rank.
    fn copied_view(&self, def: &TensorDef) -> Option<VarId> {
        let ExprKind::Read { tensor, indices, checked: false } = &def.body.kind else { return None };
        let plain = indices.len() == def.axes.len()
            && indices
                .iter()
                .zip(&def.axes)
                .all(|(i, a)| matches!(i.kind, ExprKind::Var(v) if v == a.index) && a.start.as_constant() == Some(0));
        let borrowed = match self.repr.get(tensor) {
            Some(Ownership::Borrowed) => true,
            Some(Ownership::Owned) => self.unmoved.contains(tensor) && self.unmoved_but_reshaped.contains(&def.var),
            None => false,
        } && !self.rec_access.contains_key(tensor);
        let same = self.info(*tensor).ok().is_some_and(|i| i.ty == Repr::Tensor(def.elem, def.axes.len()));
        (plain && borrowed && same && def.domain_guards == 0).then_some(*tensor)
    }

    /// A definition that permutes the axes of a tensor as it is (`y[j, i]
    /// = x[i, j]`, any rank and order but the identity): its value is a
    /// proven read of a tensor of its element type and rank at its own
    /// indices in another order, every axis from 0, without guards. The
    /// source and, for each axis of the definition, the source's axis it
    /// runs along: the runtime copies it in tiles (`permute::permute`).
    fn permuted_copy(&self, def: &TensorDef) -> Option<(VarId, Vec<usize>)> {
        let rank = def.axes.len();
        if rank < 2 || def.domain_guards != 0 || !matches!(def.body.kind, ExprKind::Read { checked: false, .. }) {
            return None;
        }
        // `axes[k]`: the source axis that the definition's axis `k` indexes.
        let (tensor, axes) = def.permuted_read()?;
        let from_zero = def.axes.iter().all(|a| a.start.as_constant() == Some(0));
        let identity = axes.iter().enumerate().all(|(k, &a)| k == a);
        let readable = self.repr.contains_key(&tensor) && !self.rec_access.contains_key(&tensor);
        let same = self.info(tensor).ok().is_some_and(|i| i.ty == Repr::Tensor(def.elem, rank));
        (from_zero && !identity && readable && same).then_some((tensor, axes))
    }

    /// A definition that copies a block of a tensor at leading indices
    /// that do not depend on its own (`last[i, j] = u[steps - 1, i, j]`, a
    /// recurrence's last step): the leading indices checked once and the
    /// block copied (`shape::slab`), where the loop nest checked every
    /// element's indices (the read is checked: `steps` may be 0) and did
    /// not vectorize. The copy for a non-empty definition; None for other
    /// definitions.
    fn slab_copy(&mut self, def: &TensorDef, lens: &[TokenStream]) -> Result<Option<TokenStream>, Bug> {
        let ExprKind::Read { tensor, indices, .. } = &def.body.kind else { return Ok(None) };
        let rank = def.axes.len();
        let Some(lead) = indices.len().checked_sub(rank).filter(|&k| k > 0) else { return Ok(None) };
        let own = indices[lead..]
            .iter()
            .zip(&def.axes)
            .all(|(i, a)| matches!(i.kind, ExprKind::Var(v) if v == a.index) && a.start.as_constant() == Some(0));
        let mut uses_axis = false;
        for i in &indices[..lead] {
            crate::ir::visit::visit_var_uses(i, &mut |v| uses_axis |= def.axes.iter().any(|a| a.index == v));
        }
        let same = self.info(*tensor)?.ty == Repr::Tensor(def.elem, indices.len());
        // A recurrence's tensor once its steps are done, its window (if
        // any) on a leading axis.
        let finished = self
            .rec_access
            .get(tensor)
            .is_none_or(|a| a.store.is_none() && a.held.is_none() && a.window.as_ref().is_none_or(|(w, _)| *w < lead));
        if !own || uses_axis || !same || !finished || def.domain_guards > 0 {
            return Ok(None);
        }
        let (rt, fname) = (self.rt.clone(), self.fn_name.clone());
        let view = self.view(*tensor, &indices[..lead])?.tokens;
        let (tname, lead) = (types::str_lit(&self.info(*tensor)?.source_name), types::usize_lit(lead));
        Ok(Some(quote!(#rt::shape::slab(#fname, #tname, #lead, #view, &[#(#lens),*])?)))
    }

    /// A definition whose value is a sum (`sum[c, r, s](..)`, optionally plus
    /// or minus a term outside the sum, like a bias) computes a whole row of
    /// its innermost axis at once: the row starts at zero, the sum's loops
    /// run outside and the row's loop inside, adding one term to every
    /// element; the outside term is applied in a last pass. Loads that do
    /// not depend on the row's index (weights) are then loop-invariant, and
    /// the inner loop walks the row contiguously. A sum's guards that bound
    /// the row's index limit each term to a range of the row (`clip`).
    /// Returns None for other definitions. The parts come apart
    /// ([`Accumulation`]) so that a vector's reduction can run split across
    /// threads; [`Accumulation::row`] puts them together.
    fn accumulate_row(
        &mut self,
        def: &TensorDef,
        chunk: &Ident,
        slot: &Ident,
        pos: &Ident,
        binding: &TokenStream,
    ) -> Result<Option<Accumulation>, Bug> {
        use crate::base::ops::{BinOp, RedOp};
        use crate::ir::ExprKind;
        let is_sum =
            |e: &crate::ir::Expr| matches!(&e.kind, ExprKind::Reduce { op: RedOp::Sum | RedOp::Max | RedOp::Min, .. });
        // (the reduction, the outside term, how it combines, whether the reduction is on the left)
        let (sum, outside, combine, sum_left) = match &def.body.kind {
            _ if is_sum(&def.body) => (&def.body, None, BinOp::Add, true),
            ExprKind::Binary(op @ (BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div), a, b) if is_sum(a) => {
                (&**a, Some(&**b), *op, true)
            }
            ExprKind::Binary(op @ (BinOp::Add | BinOp::Mul), a, b) if is_sum(b) => (&**b, Some(&**a), *op, false),
            _ => return Ok(None),
        };
        let ExprKind::Reduce { op, loops, body, wheres } = &sum.kind else { return Ok(None) };
        if !def.elem.is_float() || loops.is_empty() {
            return Ok(None);
        }
        // A maximum or minimum moves its loops out only when its reads walk
        // memory along the row (a sum always does, as it did before them).
        if *op != RedOp::Sum && !def.axes.last().is_some_and(|a| reads_along_axis(body, a.index)) {
            return Ok(None);
        }
        // The sum's loops move outside the row's loop, so their bounds must
        // not depend on the row's index (`sum[k in 0..j]`).
        let Some(row_axis) = def.axes.last() else { return Ok(None) };
        let row_var = crate::base::dim::DimVar(row_axis.index.0);
        if loops.iter().any(|l| l.start.vars().contains(&row_var) || l.end.vars().contains(&row_var)) {
            return Ok(None);
        }
        let k = def.elem;
        let (start, step) = match op {
            RedOp::Max | RedOp::Min => types::extremum(*op == RedOp::Max, k),
            _ => (types::zero(k), quote!()),
        };
        self.no_move += 1;
        // Where entries of the sum may depend on the row's index, so they
        // stay inside the row's loop; a false guard skips that element's
        // term (`continue`).
        let tests = self.loop_wheres(wheres);
        let term = self.expr(body);
        let outside = outside.map(|o| self.expr(o)).transpose();
        self.no_move -= 1;
        let (tests, term, outside) = (tests?, term?.tokens, outside?.map(|c| c.tokens));
        // NaN compares false: a maximum or minimum skips NaN terms, as the
        // reduction's own loop does.
        let update = if *op == RedOp::Sum {
            quote!(*#slot += #term;)
        } else {
            let t = types::scalar(k);
            quote!(let __v: #t = #term; if __v #step *#slot { *#slot = __v; })
        };
        let mut nest = quote! {
            for (#pos, #slot) in #chunk.iter_mut().enumerate() {
                #binding
                #tests
                #update
            }
        };
        // A sum whose guards (where entries, or an `if` around the term
        // with a zero `else`) bound the row's index (a transposed
        // convolution's `0 <= p - r && p - r < P`) adds each term to the
        // range of the row where they hold, without a test per element;
        // its other tests run once per term.
        let mut locals = quote!();
        if let Some(c) = (*op == RedOp::Sum).then(|| super::clip::clip_term(wheres, body, row_axis.index, k)).flatten()
        {
            let range = self.row_range(&c, row_axis, chunk)?;
            let (decl, ok, inside) = (&range.decl, &range.ok, &range.inside);
            let run = quote!(#chunk[__a..__b]);
            let range_loop = match self.slice_loop(c.inside(), row_axis.index, pos, binding, &run, slot, true)? {
                Some(add) => add,
                None => quote! {
                    for (#pos, #slot) in #chunk[__a..__b].iter_mut().enumerate() {
                        let #pos = #pos + __a;
                        #binding
                        *#slot += #inside;
                    }
                },
            };
            let clipped = quote! {
                if (#ok) && __lo < __hi {
                    let (__a, __b) = ((__lo - __first) as usize, (__hi - __first) as usize);
                    #range_loop
                }
            };
            nest = if range.exact {
                quote!({ #decl #clipped })
            } else {
                quote!({ #decl if __exact { #clipped } else { #nest } })
            };
            locals = range.locals;
        }
        for l in loops[1..].iter().rev() {
            let (i, start, end) = (self.ident(l.index)?, self.dim(&l.start)?, self.dim(&l.end)?);
            nest = quote!(for #i in #start..#end { #nest });
        }
        let outer = (self.ident(loops[0].index)?, self.dim(&loops[0].start)?, self.dim(&loops[0].end)?);
        let term_work = self.term_work(body, &loops[1..])?;
        let t = types::scalar(k);
        let merge = match op {
            RedOp::Max | RedOp::Min => quote!(|__acc: &mut #t, __part: #t| if __part #step *__acc { *__acc = __part; }),
            _ => quote!(|__acc: &mut #t, __part: #t| *__acc += __part),
        };
        let epilogue = match outside {
            None => quote!(),
            Some(o) => {
                let value = match (combine, sum_left) {
                    (BinOp::Sub, _) => quote!(__acc - (#o)),
                    (BinOp::Mul, true) => quote!(__acc * (#o)),
                    (BinOp::Mul, false) => quote!((#o) * __acc),
                    (BinOp::Div, _) => quote!(__acc / (#o)),
                    (_, true) => quote!(__acc + (#o)),
                    (_, false) => quote!((#o) + __acc),
                };
                quote! {
                    for (#pos, #slot) in #chunk.iter_mut().enumerate() {
                        #binding
                        let __acc = *#slot;
                        *#slot = #value;
                    }
                }
            }
        };
        Ok(Some(Accumulation { start, locals, outer, inner: nest, epilogue, merge, term_work }))
    }

    /// A rank-2 definition that reads a tensor across its rows (see
    /// `reads_across_rows`) written `ROW_BLOCK` rows at a time, the column
    /// loop outside the rows' loop: the source's rows are then walked along
    /// (a line loaded serves a block of outputs) where one output row at a
    /// time walked a column of the source.
    fn row_blocks(
        &mut self,
        def: &TensorDef,
        name: &Ident,
        lens: &[TokenStream],
        body: TokenStream,
    ) -> Result<TokenStream, Bug> {
        let (rt, nd, fname) = (self.rt.clone(), self.nd.clone(), self.fn_name.clone());
        let (first, rows, b) = (derived("first_", name, ""), derived("rows_", name, ""), derived("b_", name, ""));
        let (_, bind0) = self.position(&def.axes[0], |_| quote!((#first + #b)))?;
        let (pos1, bind1) = self.position(&def.axes[1], |pos| quote!(#pos))?;
        let elem_ty = types::scalar(def.elem);
        let array = types::array(def.elem, Some(2), &nd);
        let shape = types::shape(lens, &nd);
        let cols = &lens[1];
        let cost = proc_macro2::Literal::u64_unsuffixed(def.cost_per_point);
        let block = types::usize_lit(ROW_BLOCK);
        let zero = types::zero(def.elem);
        let fill = derived("fill_", name, "");
        // The tensors read, as views local to the closure: their pointer
        // and shape are then values the loops keep in registers. Read
        // through the captured tensors, they were loaded again for every
        // element (LLVM could not tell the stores from them), 1.2x slower.
        let mut read = Vec::new();
        collect_reads(&def.body, &mut read);
        let mut views = TokenStream::new();
        for v in read {
            if !self.rec_access.contains_key(&v) && self.repr.contains_key(&v) {
                let id = self.ident(v)?;
                views.extend(quote!(let #id = #id.view();));
            }
        }
        self.repr.insert(def.var, Ownership::Owned);
        self.standard.insert(def.var);
        let fill_call =
            self.fill_call(def.var, "par", "fill_uninit_rows", quote!(#fname, #shape, #cost, #block, #fill));
        Ok(quote! {
            let #fill = |#first: usize, #rows: &mut [::core::mem::MaybeUninit<#elem_ty>]| -> ::core::result::Result<(), #rt::Error> {
                #views
                let __cols: usize = #cols;
                let __n: usize = #rows.len() / __cols.max(1);
                // Columns `ROW_BLOCK` at a time through a tile: the
                // values of a column of the block (a source row's line)
                // go to a row of the tile, then each output row's piece
                // is stored whole.
                let mut __tile: [[#elem_ty; #block]; #block] = [[#zero; #block]; #block];
                let mut __c0: usize = 0;
                while __c0 < __cols {
                    let __w: usize = (__cols - __c0).min(#block);
                    for __c in 0..__w {
                        let #pos1: usize = __c0 + __c;
                        #bind1
                        for #b in 0..__n {
                            #bind0
                            __tile[__c][#b] = #body;
                        }
                    }
                    for #b in 0..__n {
                        let __row = &mut #rows[#b * __cols + __c0..#b * __cols + __c0 + __w];
                        for (__c, __e) in __row.iter_mut().enumerate() {
                            __e.write(__tile[__c][#b]);
                        }
                    }
                    __c0 += #block;
                }
                Ok(())
            };
            // SAFETY: for every chunk of rows, the loops write each of its
            // `__n * __cols` elements once.
            let #name: #array = unsafe { #fill_call }?;
        })
    }

    /// The position variable of an axis (`__pos_j`, a `usize`) and the
    /// binding of its index variable: `let j: i64 = start + __pos_j as i64;`, where
    /// `offset` turns the position into the offset along the axis.
    pub(crate) fn position(
        &self,
        axis: &Axis,
        offset: impl Fn(&Ident) -> TokenStream,
    ) -> Result<(Ident, TokenStream), Bug> {
        let index = self.ident(axis.index)?;
        if self.info(axis.index)?.ty != Repr::Scalar(crate::base::scalar::ScalarKind::I64) {
            return Err(format!("axis index `{index}` is not `i64`"));
        }
        let pos = derived("pos_", &index, "");
        let offset = offset(&pos);
        let binding = match axis.start.as_constant() {
            Some(0) => quote!(let #index: i64 = #offset as i64;),
            _ => {
                let start = self.dim(&axis.start)?;
                quote!(let #index: i64 = #start + #offset as i64;)
            }
        };
        Ok((pos, binding))
    }
}

/// Rows written together by `row_blocks` (16 `f32`: one cache line of a
/// source row).
const ROW_BLOCK: usize = 16;

/// A row accumulating a reduction's terms pass by pass (`accumulate_row`):
/// every element set to `start`, then `locals`, then the reduction's
/// outermost loop `outer` (index, start, end) around `inner`, then the
/// `epilogue` (the term outside the reduction); `merge` combines two
/// partial results of the reduction (a closure); `term_work` is the work
/// of one term of the outer loop for one element (a `usize` at run time).
struct Accumulation {
    start: TokenStream,
    locals: TokenStream,
    outer: (Ident, TokenStream, TokenStream),
    inner: TokenStream,
    epilogue: TokenStream,
    merge: TokenStream,
    term_work: TokenStream,
}

impl Accumulation {
    /// The whole loop nest over `chunk`, its elements named `slot`.
    fn row(self, chunk: &Ident, slot: &Ident) -> TokenStream {
        let Accumulation { start, locals, outer: (k, k_start, k_end), inner, epilogue, .. } = self;
        quote! {
            for #slot in #chunk.iter_mut() {
                *#slot = #start;
            }
            #locals
            for #k in #k_start..#k_end { #inner }
            #epilogue
        }
    }
}

/// The tensors `e` reads elements of, each once.
fn collect_reads(e: &crate::ir::Expr, out: &mut Vec<crate::ir::VarId>) {
    if let crate::ir::ExprKind::Read { tensor, .. } = &e.kind {
        if !out.contains(tensor) {
            out.push(*tensor);
        }
    }
    crate::ir::visit::for_each_child(e, &mut |c| collect_reads(c, out));
}

/// Whether `e` (a definition's value) reads a tensor across rows: some
/// read has the definition's first axis `row` alone as its last index (a
/// transposed operand, `x[i, j]` in `y[j, i]`), and `e` has no reduction
/// (whose own loops would run once per element either way).
fn reads_across_rows(e: &crate::ir::Expr, row: crate::ir::VarId) -> bool {
    use crate::ir::ExprKind;
    fn walk(e: &crate::ir::Expr, row: crate::ir::VarId, across: &mut bool) -> bool {
        match &e.kind {
            ExprKind::Reduce { .. } => return false,
            ExprKind::Read { indices, .. } => {
                *across |= indices.len() >= 2
                    && matches!(indices.last().map(|i| &i.kind), Some(ExprKind::Var(v)) if *v == row);
            }
            _ => {}
        }
        let mut ok = true;
        crate::ir::visit::for_each_child(e, &mut |c| ok = ok && walk(c, row, across));
        ok
    }
    let mut across = false;
    walk(e, row, &mut across) && across
}

/// Whether the reads of `e` walk memory along the axis with index `axis`:
/// at least one read has it as its last index, and no other read that
/// depends on the axis has anything else that varies inside `e` (a loop
/// variable) as its last index. A reduction over such a definition runs
/// best with the axis innermost; the reads that do not depend on the axis
/// (`v[k]` in `y[j] = sum[k](v[k] * a[k, j])`) are then loop-invariant.
fn reads_along_axis(e: &crate::ir::Expr, axis: crate::ir::VarId) -> bool {
    use crate::ir::ExprKind;
    fn walk(e: &crate::ir::Expr, axis: crate::ir::VarId, loops: &mut Vec<crate::ir::VarId>, along: &mut usize) -> bool {
        if let ExprKind::Reduce { loops: ls, .. } = &e.kind {
            loops.extend(ls.iter().map(|l| l.index));
        }
        if let ExprKind::Read { indices, .. } = &e.kind {
            if let Some(last) = indices.last() {
                match &last.kind {
                    ExprKind::Var(v) if *v == axis => *along += 1,
                    _ => {
                        let mut vars = Vec::new();
                        for i in indices {
                            crate::ir::visit::visit_var_uses(i, &mut |v| vars.push(v));
                        }
                        let mut last_vars = Vec::new();
                        crate::ir::visit::visit_var_uses(last, &mut |v| last_vars.push(v));
                        if vars.contains(&axis) && last_vars.iter().any(|v| loops.contains(v)) {
                            return false;
                        }
                    }
                }
            }
        }
        let mut ok = true;
        crate::ir::visit::for_each_child(e, &mut |c| ok &= walk(c, axis, loops, along));
        ok
    }
    let mut along = 0;
    walk(e, axis, &mut Vec::new(), &mut along) && along > 0
}
