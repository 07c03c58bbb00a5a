//! Checkpointed reverse sweeps (`ir::Sweep`): the primal and its adjoint
//! each in a window of `slots` steps, the primal run forwards in chunks
//! saving checkpoints, then chunk by chunk backwards: the primal's chunk
//! recomputed from its checkpoint, the adjoint's steps over it, the sums'
//! terms of the chunk's time values, one at a time.
//!
//! ```text
//! let ckpt_chunk = __rt::ckpt::chunk(steps);          // ceil(sqrt(steps))
//! let mut h = zeros([slots, ..]);  let mut __ck_h = Checkpoints::new(..);
//! for c in 0..chunks { run h's steps lo..hi; __ck_h.save(.., c + 1, hi) }
//! <between>
//! let mut r_h = zeros([slots, ..]);  let mut d_w = zeros(..);
//! for c in (0..chunks).rev() {
//!     if not the last chunk { __ck_h.restore(.., c, lo); run h's steps lo..hi }
//!     run r_h's steps (steps - hi)..(steps - lo)
//!     for t in <the chunk's time values> { <prelude>; let d_w_part = <term at t>; d_w += d_w_part }
//! }
//! <after>
//! if __miss.missed() { return Ok(None) }
//! ```
//!
//! Every read of either window tests its step against the steps the window
//! holds (`__held_lo_h..__held_hi_h`); a miss makes the function give up
//! (its caller then runs the form that keeps the whole history).

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::recur::{Held, RecAccess};
use super::{derived, types, Bug, FnCx, Ownership};
use crate::ir::{Recurrence, Repr, Stmt, Sweep};

impl FnCx<'_> {
    pub(crate) fn sweep(&mut self, w: &Sweep) -> Result<TokenStream, Bug> {
        let (rt, nd) = (self.rt.clone(), self.nd.clone());
        let steps = self.dim(&w.steps)?;
        let (chunk, lo, hi) = (self.ident(w.chunk)?, self.ident(w.lo)?, self.ident(w.hi)?);
        let lookback = w.lookback as i64;
        let (lookback_lit, margin) = (proc_macro2::Literal::u64_suffixed(w.lookback), w.margin);
        let mut out = quote! {
            let __steps: i64 = (#steps).max(0);
            let #chunk: i64 = #rt::ckpt::chunk(__steps);
            let __chunks: i64 = (__steps + #chunk - 1) / #chunk;
            let __slots: usize = #rt::ckpt::slots(#chunk, #lookback_lit, #margin);
            let __mask: usize = __slots - 1;
            let __miss = #rt::ckpt::Miss::new();
        };
        let miss = format_ident!("__miss");
        let p = self.ident(w.primal.var)?;
        let (p_lo, p_hi) = (derived("held_lo_", &p, ""), derived("held_hi_", &p, ""));
        out.extend(self.window(&w.primal, Held { lo: p_lo.clone(), hi: p_hi.clone(), miss: miss.clone() })?);
        let ck = derived("ck_", &p, "");
        let elem = types::scalar(w.primal.elem);
        let run_primal = self.window_steps(&w.primal)?;
        let lookback_i = types::i64_lit(lookback);
        let (fname, pname) = (&self.fn_name, self.tensor_name(w.primal.var));
        out.extend(quote! {
            let mut #ck = #rt::ckpt::Checkpoints::<#elem>::new(#fname, #pname, &#p, #lookback_lit, __chunks)?;
            for __c in 0..__chunks {
                let #lo: i64 = __c * #chunk;
                let #hi: i64 = (#lo + #chunk).min(__steps);
                #p_lo = #p_lo.max(#hi - __slots as i64);
                #p_hi = #hi;
                #run_primal
                #ck.save(&#p, __mask, __c + 1, #hi);
            }
        });
        for s in &w.between {
            out.extend(self.stmt(s)?);
        }
        let a = self.ident(w.adjoint.var)?;
        let (a_lo, a_hi) = (derived("held_lo_", &a, ""), derived("held_hi_", &a, ""));
        out.extend(self.window(&w.adjoint, Held { lo: a_lo.clone(), hi: a_hi.clone(), miss: miss.clone() })?);
        let run_adjoint = self.window_steps(&w.adjoint)?;
        let run_primal = self.window_steps(&w.primal)?;
        let mut sums = TokenStream::new();
        for s in &w.sums {
            let total = self.ident(s.total)?;
            let add = match &s.part {
                Stmt::Tensor(d) => {
                    let part = self.ident(d.var)?;
                    let array = types::array(d.elem, Some(d.axes.len()), &nd);
                    let mut lens = Vec::new();
                    for axis in &d.axes {
                        let len = self.extent_usize(&axis.extent)?;
                        lens.push(quote!(#len));
                    }
                    let shape = types::shape(&lens, &nd);
                    let (fname, tname, zero) = (&self.fn_name, self.tensor_name(s.total), types::zero(d.elem));
                    out.extend(quote!(let mut #total: #array = #rt::pool::zeros(#fname, #tname, #shape, #zero)?;));
                    self.repr.insert(s.total, Ownership::Owned);
                    quote!(#rt::ckpt::add_into(&mut #total, &#part);)
                }
                Stmt::Let { var, .. } => {
                    let part = self.ident(*var)?;
                    let Repr::Scalar(k) = self.info(*var)?.ty else { return Err("a chunk sum of a non-scalar".into()) };
                    let t = types::scalar(k);
                    out.extend(quote!(let mut #total: #t = 0 as #t;));
                    quote!(#total += #part;)
                }
                _ => return Err("a chunk sum that is neither a tensor nor a scalar".into()),
            };
            let time = self.ident(s.time)?;
            // Run once per time value: nothing from outside is moved.
            self.no_move += 1;
            let mut prelude: Result<TokenStream, Bug> = Ok(TokenStream::new());
            for p in &s.prelude {
                prelude = prelude.and_then(|mut t| {
                    t.extend(self.stmt(p)?);
                    Ok(t)
                });
            }
            let def = self.stmt(&s.part);
            self.no_move -= 1;
            let (prelude, def) = (prelude?, def?);
            let (full_start, full_end) = (self.dim(&s.full.0)?, self.dim(&s.full.1)?);
            let offset = types::i64_lit(s.offset);
            sums.extend(quote! {
                let __start: i64 = if __c == 0 { #full_start } else { (#full_start).max(#lo - #offset) };
                let __end: i64 = if __c + 1 == __chunks { #full_end } else { (#full_end).min(#hi - #offset) };
                for #time in __start..__end {
                    #prelude
                    #def
                    #add
                }
            });
        }
        out.extend(quote! {
            for __c in (0..__chunks).rev() {
                let #lo: i64 = __c * #chunk;
                let #hi: i64 = (#lo + #chunk).min(__steps);
                if __c + 1 < __chunks {
                    #ck.restore(&mut #p, __mask, __c, #lo);
                    #p_hi = #p_hi.min(#lo - #lookback_i + __slots as i64).max(#hi);
                    #p_lo = #lo - #lookback_i;
                    #run_primal
                }
                #a_lo = #a_lo.max(__steps - #lo - __slots as i64);
                #a_hi = __steps - #lo;
                #run_adjoint
                #sums
                if __miss.missed() {
                    return Ok(None);
                }
            }
        });
        for s in &w.after {
            out.extend(self.stmt(s)?);
        }
        out.extend(quote! {
            if __miss.missed() {
                return Ok(None);
            }
        });
        Ok(out)
    }

    /// Declares recurrence `r`'s window (`__slots` steps along axis 0, its
    /// logical extents, and the steps it holds, none yet) and registers
    /// its reads.
    fn window(&mut self, r: &Recurrence, held: Held) -> Result<TokenStream, Bug> {
        let nd = self.nd.clone();
        let name = self.ident(r.var)?;
        let (mut out, lens) = self.rec_lens(r)?;
        let alloc: Vec<TokenStream> =
            std::iter::once(quote!(__slots)).chain(lens.iter().skip(1).map(|len| quote!(#len))).collect();
        let array = types::array(r.elem, Some(r.extents.len()), &nd);
        let shape = types::shape(&alloc, &nd);
        let (lo, hi) = (&held.lo, &held.hi);
        let (rt, fname, tname, zero) = (&self.rt, &self.fn_name, self.tensor_name(r.var), types::zero(r.elem));
        out.extend(quote! {
            let mut #name: #array = #rt::pool::zeros(#fname, #tname, #shape, #zero)?;
            let mut #lo: i64 = 0;
            let mut #hi: i64 = 0;
        });
        let access =
            RecAccess { store: None, window: Some((0, quote!(__mask))), lens, held: Some(held), uninit: false };
        self.rec_access.insert(r.var, access);
        self.repr.insert(r.var, Ownership::Owned);
        Ok(out)
    }

    /// The steps of `r`'s sequential loop (over the current chunk), writing
    /// into its window.
    fn window_steps(&mut self, r: &Recurrence) -> Result<TokenStream, Bug> {
        let mut r = r.clone();
        r.clear_steps = true;
        let access = self.rec_access.get(&r.var).cloned().ok_or("a sweep's window is not declared")?;
        self.stored_steps(&r, access, None)
    }
}
