//! Recurrences: sequential loops over the recurrent axes, the clauses that
//! cover each step, and their (parallel) loops over the other axes.
//!
//! ```text
//! let __len_x_0: usize = T as usize;                    // logical extents
//! let mut x: Array<f64, Ix1> = __nd::Array::zeros([4usize]);   // a window of 4 slots
//! {
//!     let __store_x = __rt::rec::Store::<f64, 1>::new(&mut x);
//!     for t in 0i64..T {
//!         if t == 0i64 { let __value_x = 1.0; unsafe { __store_x.set([(t as usize) & 3usize], __value_x) }; }
//!         if t >= 1i64 && t < T { ... __store_x.get([((t - 1) as usize) & 3usize]) ... }
//!     }
//! }
//! ```
//!
//! While the clauses run, reads of the tensor go through the store; after
//! the statement the tensor is an ordinary array, except that a windowed one
//! is read at positions masked along the window's axis. Checked reads compare
//! with the logical extents, not the window.

use proc_macro2::{Ident, TokenStream};
use quote::quote;

use super::{derived, types, Bug, FnCx, Ownership};
use crate::ir::affine::Affine;
use crate::ir::{Cover, Expr, ExprKind, RecClause, RecIndex, Recurrence, Repr, VarId};

/// How reads of a recurrence's tensor are emitted.
#[derive(Clone)]
pub(crate) struct RecAccess {
    /// The store, while the clauses run.
    pub store: Option<Ident>,
    /// The window's axis and slot mask.
    pub window: Option<(usize, TokenStream)>,
    /// The logical extent of every axis, as `usize` variables.
    pub lens: Vec<Ident>,
    /// In a checkpointed sweep (see `sweep`): the steps the window holds,
    /// against which every read is tested.
    pub held: Option<Held>,
    /// The window was allocated uninitialized (from the buffer pool): each
    /// slot is prepared at its first use (`first_use`), and the slots no
    /// step used are zeroed after the steps.
    pub uninit: bool,
}

/// A value passed from one point of the innermost sequential loop to the
/// next (see [`FnCx::carry_of`]): while the clauses are emitted, a read of
/// `tensor` at the point before the current one along `inner` (`d[i, j -
/// 1]`) is `prev` when the previous iteration wrote it (`had`), and every
/// write sets `value` and `have`; each point starts by taking `had` and
/// `prev` from them, so a clause that reads after another clause wrote
/// the same point still reads the point before. The dependence from one
/// point to the next then stays in a register instead of a store and a
/// load.
#[derive(Clone)]
pub(crate) struct Carry {
    pub tensor: VarId,
    /// The variable of the sequential loop along each axis.
    pub at: Vec<VarId>,
    pub inner: usize,
    pub value: Ident,
    pub prev: Ident,
    pub had: Ident,
    pub have: Ident,
}

impl Carry {
    /// The carry of `tensor` (named `name` in the code) at the points of
    /// the loops `at`, along axis `inner`.
    pub(crate) fn new(tensor: VarId, name: &Ident, at: Vec<VarId>, inner: usize) -> Carry {
        Carry {
            tensor,
            at,
            inner,
            value: derived("carry_", name, ""),
            prev: derived("prev_", name, ""),
            had: derived("had_", name, ""),
            have: derived("have_", name, ""),
        }
    }

    /// The start of a point: what the point before left.
    pub(crate) fn take(&self) -> TokenStream {
        let (value, prev, had, have) = (&self.value, &self.prev, &self.had, &self.have);
        quote! {
            let #had = ::core::mem::replace(&mut #have, false);
            let #prev = #value;
        }
    }
}

/// The steps `lo..hi` (`i64` variables) that a checkpointed sweep's window
/// holds, and the `ckpt::Miss` flag a read of any other step raises.
#[derive(Clone)]
pub(crate) struct Held {
    pub lo: Ident,
    pub hi: Ident,
    pub miss: Ident,
}

impl FnCx<'_> {
    pub(crate) fn recurrence(&mut self, r: &Recurrence) -> Result<TokenStream, Bug> {
        let rank = r.extents.len();
        let info = self.info(r.var)?;
        if info.ty != Repr::Tensor(r.elem, rank) {
            return Err(format!("recurrence `{}` of type `{:?}` has {rank} axes", info.name, info.ty));
        }
        let name = self.ident(r.var)?;
        let (rt, nd) = (self.rt.clone(), self.nd.clone());
        let mut out = TokenStream::new();
        let mut alloc = Vec::new();
        // A windowed wavefront keeps a super-band of steps in flight: its
        // window has `rec::WAVE_SLOTS` slots when it runs as one (decided
        // at run time), so the mask is a variable.
        let wave = match self.windowed_wavefront(r)? {
            Some((wave, decl)) => {
                out.extend(decl);
                Some(wave)
            }
            None => None,
        };
        let window = match (&r.window, &wave) {
            (Some(w), None) => {
                let mask = types::usize_lit(w.slots as usize - 1);
                Some((w.axis, quote!(#mask)))
            }
            (Some(w), Some(use_it)) => {
                let mask = derived("mask_", &name, "");
                // Rows in lanes without a wavefront keep a group of rows
                // and what it reads back (`rec::bands`).
                let lanes = if self.lane_plans(r).is_empty() { 0 } else { 2 * super::lanes::LANES as u64 };
                let slots = types::usize_lit(w.slots.max(lanes) as usize);
                out.extend(quote! {
                    let #mask: usize = (if #use_it { #rt::rec::WAVE_SLOTS.max(#slots) } else { #slots }) - 1;
                });
                Some((w.axis, quote!(#mask)))
            }
            (None, _) => None,
        };
        let (decl, lens) = self.rec_lens(r)?;
        out.extend(decl);
        for (axis, len) in lens.iter().enumerate() {
            match &window {
                Some((w, mask)) if *w == axis => alloc.push(quote!((#mask + 1))),
                _ => alloc.push(quote!(#len)),
            }
        }
        let array = types::array(r.elem, Some(rank), &nd);
        let shape = types::shape(&alloc, &nd);
        // A window over one sequential axis comes from the buffer pool,
        // uninitialized: a slot's first step zeroes only what its clause
        // does not write (a stencil's border), where zeros cost a pass over
        // the whole window and fresh pages at every call. (Two sequential
        // axes keep zeros: their clauses write parts of rows.)
        // So does a recurrence whose lines run alone: they write every
        // point (see `lines`).
        let uninit = (r.window.is_some() && r.seq.len() == 1) || self.runs_as_lines(r);
        let access = RecAccess { store: None, window, lens, held: None, uninit };
        // A result that `NAME_into` hands a buffer for (no sequential
        // axis, no window: `bind_outs`): the clauses write into the
        // caller's elements when the buffer is in standard layout.
        let into = match self.outs.get(&r.var) {
            Some(out) if r.seq.is_empty() && r.window.is_none() && !uninit => {
                Some((out.clone(), derived("into_", &name, "")))
            }
            _ => None,
        };
        self.into_store = into.as_ref().map(|(_, store)| (r.var, store.clone()));
        let steps = self.stored_steps(r, access, wave.as_ref());
        self.into_store = None;
        let steps = steps?;
        self.repr.insert(r.var, Ownership::Owned);
        let t = types::scalar(r.elem);
        let (fname, tname) = (&self.fn_name, self.tensor_name(r.var));
        let alloc = if let Some((out, store)) = &into {
            let (zero, n) = (types::zero(r.elem), types::usize_lit(rank));
            quote! {
                let (mut #name, mut #store): (#array, _) =
                    #rt::dest::rec_into::<#t, _, _, #n>(#fname, #tname, #shape, #zero, &mut *#out)?;
            }
        } else if uninit {
            let dim = types::dim(rank, &nd);
            quote! {
                let mut #name: #nd::Array<::core::mem::MaybeUninit<#t>, #dim> =
                    #rt::pool::try_uninit(#fname, #tname, #nd::IntoDimension::into_dimension(#shape))?;
            }
        } else {
            let zero = types::zero(r.elem);
            quote!(let mut #name: #array = #rt::pool::zeros(#fname, #tname, #shape, #zero)?;)
        };
        out.extend(quote! {
            #alloc
            #steps
        });
        Ok(out)
    }

    /// Declares the logical extent of every axis of `r` as a `usize`
    /// variable (`__len_h_0`, ...), returned in axis order.
    pub(crate) fn rec_lens(&self, r: &Recurrence) -> Result<(TokenStream, Vec<Ident>), Bug> {
        let name = self.ident(r.var)?;
        let mut out = TokenStream::new();
        let mut lens = Vec::new();
        for (axis, e) in r.extents.iter().enumerate() {
            let len = derived("len_", &name, &format!("_{axis}"));
            let value = self.extent_usize(e)?;
            out.extend(quote!(let #len: usize = #value;));
            lens.push(len);
        }
        Ok((out, lens))
    }

    /// `r`'s steps writing through a store of its (allocated) tensor, in a
    /// block; reads go through the store while they run and as `access`
    /// says after.
    pub(crate) fn stored_steps(
        &mut self,
        r: &Recurrence,
        access: RecAccess,
        wave: Option<&Ident>,
    ) -> Result<TokenStream, Bug> {
        let rt = self.rt.clone();
        let name = self.ident(r.var)?;
        let store = derived("store_", &name, "");
        self.rec_access.insert(r.var, RecAccess { store: Some(store.clone()), ..access.clone() });
        self.no_move += 1;
        let steps = self.rec_steps(r, &store, wave);
        self.no_move -= 1;
        self.rec_access.insert(r.var, RecAccess { store: None, ..access });
        let steps = steps?;
        let (t, rank) = (types::scalar(r.elem), types::usize_lit(r.extents.len()));
        if !access.uninit {
            // Over the caller's buffer when `recurrence` got one.
            let make = match &self.into_store {
                Some((v, into)) if *v == r.var => quote! {
                    match #into.take() {
                        ::core::option::Option::Some(__s) => __s,
                        ::core::option::Option::None => #rt::rec::Store::<#t, #rank>::new(&mut #name),
                    }
                },
                _ => quote!(#rt::rec::Store::<#t, #rank>::new(&mut #name)),
            };
            return Ok(quote! {
                {
                    let #store = #make;
                    #steps
                }
            });
        }
        // A whole tensor comes uninitialized only for lines, which write
        // every point.
        let unused = if r.window.is_some() { self.unused_slots(r, &store)? } else { TokenStream::new() };
        Ok(quote! {
            {
                let #store = #rt::rec::Store::<#t, #rank>::new_uninit(&mut #name);
                #steps
                #unused
            }
            // SAFETY: every slot was written or zeroed: at its first step
            // (`first_use`), or after the steps when no step used it; a
            // recurrence run as lines writes every point (see `lines`).
            let mut #name = unsafe { #name.assume_init() };
        })
    }

    /// The sequential loops with the clauses inside; a wavefront variant
    /// when the recurrence allows one.
    pub(crate) fn rec_steps(
        &mut self,
        r: &Recurrence,
        store: &Ident,
        wave: Option<&Ident>,
    ) -> Result<TokenStream, Bug> {
        if let Some(lines) = self.line_steps(r, store)? {
            return Ok(lines);
        }
        let rt = self.rt.clone();
        let carry = self.carry_of(r)?;
        let outer_carry = std::mem::replace(&mut self.carry, carry.clone());
        let mut clauses = TokenStream::new();
        // Each clause's test on the innermost loop is a flag, set once per
        // run of it where no clause starts or ends (see `segmented`).
        let flags: Vec<Ident> = (0..r.clauses.len()).map(|n| quote::format_ident!("__on_{}", n)).collect();
        let emitted = r.clauses.iter().zip(&flags).try_for_each(|(c, flag)| {
            clauses.extend(self.rec_clause(r, c, store, flag)?);
            Ok::<_, Bug>(())
        });
        self.carry = outer_carry;
        emitted?;
        // The innermost loop's body: with a carry, the value the previous
        // point wrote (if it wrote one) is read from a register.
        let (carry_decl, clauses) = match &carry {
            Some(c @ Carry { value, have, .. }) => {
                let t = types::scalar(r.elem);
                let take = c.take();
                (
                    quote! {
                        let mut #value: #t = <#t as ::core::default::Default>::default();
                        let mut #have = false;
                    },
                    quote! {
                        #take
                        #clauses
                    },
                )
            }
            None => (TokenStream::new(), clauses),
        };
        let mut nest = clauses.clone();
        let mut clear_first = TokenStream::new();
        // A sharded recurrence's halo exchange in flight between its start
        // and its wait (`Comm::HaloStart`, `Comm::HaloWait`): dropped on an
        // early return, it waits for its messages.
        let halo = r
            .clauses
            .iter()
            .any(|c| c.prelude.iter().any(|s| matches!(s, crate::ir::Stmt::Comm(crate::ir::Comm::HaloStart { .. }))));
        let halo_decl = if halo {
            let handle = derived("halo_", &self.ident(r.var)?, "");
            quote!(let mut #handle: ::core::option::Option<#rt::dist::HaloExchange> = ::core::option::Option::None;)
        } else {
            TokenStream::new()
        };
        for (k, (axis, l)) in r.seq.iter().enumerate().rev() {
            let i = self.ident(l.index)?;
            let (start, end) = (self.dim(&l.start)?, self.dim(&l.end)?);
            let clear = if k == 0 && r.clear_steps {
                let (a, slot) = (types::usize_lit(*axis), self.in_window(r.var, *axis, quote!((#i as usize))));
                let needed = self.clear_needed(r, &i, &start)?;
                let later = quote!(if #needed { unsafe { #store.clear_slab(#a, #slot) }; });
                match self.first_use(r, &i, &start, store)? {
                    Some(first) => quote!(#first else #later),
                    None => later,
                }
            } else {
                TokenStream::new()
            };
            if k == 0 {
                clear_first = clear.clone();
            }
            nest = if k + 1 == r.seq.len() {
                let run = self.segmented(r, &flags, &i, start, end, quote!(#clear #nest))?;
                quote!(#carry_decl #run)
            } else {
                quote! {
                    for #i in (#start)..(#end) {
                        #clear
                        #nest
                    }
                }
            };
        }
        if !(r.wavefront && r.seq.len() == 2) {
            return Ok(quote!(#halo_decl #nest));
        }
        if halo {
            return Err("a halo exchange in the steps of a wavefront".into());
        }
        let (l0, l1) = (&r.seq[0].1, &r.seq[1].1);
        let (i, j) = (self.ident(l0.index)?, self.ident(l1.index)?);
        let (s0, e0, s1, e1) = (self.dim(&l0.start)?, self.dim(&l0.end)?, self.dim(&l1.start)?, self.dim(&l1.end)?);
        // The runtime hands over a tile at a time, which runs a run of a
        // row at a time or rows in lanes (see `lanes`). What the clauses
        // read from outside is copied into locals first (behind the
        // closure's captured references, LLVM reloads it at every point,
        // as the store's writes might change it).
        let locals = self.row_locals(r, store, wave)?;
        let run = self.segmented(r, &flags, &j, quote!(__j_lo), quote!(__j_hi), clauses)?;
        let row = quote! {
            |#i: i64, __j_lo: i64, __j_hi: i64| {
                #locals
                #carry_decl
                #run
                Ok(())
            }
        };
        let plans = self.lane_plans(r);
        let band = self.lane_band(r, &plans, store, &quote::format_ident!("__row"), &locals)?;
        let tiles = quote! {
            let __row = #row;
            let __band = #band;
        };
        // Without a wavefront, rows in lanes still pay: a group of rows at
        // a time over the whole width (the window keeps enough slots, see
        // `recurrence`).
        let serial = match plans.first() {
            Some(_) => {
                let group = types::i64_lit(super::lanes::LANES);
                quote! {
                    #rt::rec::bands(((#s0), (#e0)), ((#s1), (#e1)), #group, |#i: i64| {
                        #clear_first
                        Ok(())
                    }, &__band)?;
                }
            }
            None => nest,
        };
        let Some(use_it) = wave else {
            return Ok(quote! {
                #tiles
                if #rt::rec::use_wavefront((#e0) - (#s0), (#e1) - (#s1)) {
                    #rt::rec::wavefront(((#s0), (#e0)), ((#s1), (#e1)), &__band)?;
                } else {
                    #serial
                }
            });
        };
        // Windowed: a super-band of steps at a time, each step's slot
        // prepared (cleared if need be) before its band starts.
        Ok(quote! {
            #tiles
            if #use_it {
                #rt::rec::wavefront_banded(
                    ((#s0), (#e0)),
                    ((#s1), (#e1)),
                    |#i: i64| {
                        #clear_first
                        Ok(())
                    },
                    &__band,
                )?;
            } else {
                #serial
            }
        })
    }

    /// For a windowed recurrence that may run as a wavefront, a variable
    /// saying whether it does, and its declaration.
    fn windowed_wavefront(&mut self, r: &Recurrence) -> Result<Option<(Ident, TokenStream)>, Bug> {
        let ([(_, l0), (_, l1)], Some(_)) = (&r.seq[..], &r.window) else { return Ok(None) };
        if !r.wavefront {
            return Ok(None);
        }
        let rt = self.rt.clone();
        let (s0, e0, s1, e1) = (self.dim(&l0.start)?, self.dim(&l0.end)?, self.dim(&l1.start)?, self.dim(&l1.end)?);
        let wave = derived("wave_", &self.ident(r.var)?, "");
        let decl = quote!(let #wave: bool = #rt::rec::use_wavefront((#e0) - (#s0), (#e1) - (#s1)););
        Ok(Some((wave, decl)))
    }

    /// For a window allocated uninitialized: `if` step `i` is its slot's
    /// first use, prepare the slot: when one clause alone covers the step,
    /// zero the points outside its box (nothing, when it writes the whole
    /// slot), else zero the slot. Its clause then writes the rest before
    /// anything reads it. `None` for a window of zeros.
    fn first_use(
        &mut self,
        r: &Recurrence,
        i: &Ident,
        start: &TokenStream,
        store: &Ident,
    ) -> Result<Option<TokenStream>, Bug> {
        let access = self.rec_access.get(&r.var).cloned();
        let Some(RecAccess { uninit: true, window: Some((axis, mask)), .. }) = access else { return Ok(None) };
        let rt_axis = types::usize_lit(axis);
        let slot = self.in_window(r.var, axis, quote!((#i as usize)));
        let whole = quote!(unsafe { #store.clear_slab(#rt_axis, #slot) };);
        let mut prepare = whole.clone();
        if r.clauses.len() <= 64 {
            let bits = self.clause_bits(r, &quote!(#i))?;
            let mut alone = TokenStream::new();
            for (n, c) in r.clauses.iter().enumerate() {
                let bit = proc_macro2::Literal::u32_suffixed(n as u32);
                let (mut lo, mut hi) = (Vec::new(), Vec::new());
                for at in &c.at {
                    let (l, h) = match at {
                        RecIndex::Seq(_) => (quote!(0usize), quote!(0usize)),
                        RecIndex::Loop(k) => {
                            let l = c.loops.get(*k).ok_or("a clause writes a missing loop")?;
                            let (start, end) = (self.dim(&l.start)?, self.dim(&l.end)?);
                            (quote!(((#start).max(0) as usize)), quote!(((#end).max(0) as usize)))
                        }
                        RecIndex::Lit(n) => {
                            let n = usize::try_from(*n).map_err(|_| "a negative literal slot")?;
                            let (a, b) = (types::usize_lit(n), types::usize_lit(n + 1));
                            (quote!(#a), quote!(#b))
                        }
                    };
                    lo.push(l);
                    hi.push(h);
                }
                alone.extend(quote! {
                    if __active == (1u64 << #bit) {
                        unsafe { #store.clear_outside(#rt_axis, #slot, [#(#lo),*], [#(#hi),*]) };
                    } else
                });
            }
            prepare = quote! {
                let __active: u64 = 0u64 #(| #bits)*;
                #alone { #whole }
            };
        }
        Ok(Some(quote! {
            if #i - (#start) < ((#mask) as i64 + 1) {
                #prepare
            }
        }))
    }

    /// For each clause of `r`, bit `n` set when clause `n` covers step `x`
    /// of the outermost loop (`x` within the loop's range), to be or-ed
    /// into a `u64` (at most 64 clauses).
    fn clause_bits(&mut self, r: &Recurrence, x: &TokenStream) -> Result<Vec<TokenStream>, Bug> {
        let outer = &r.seq.first().ok_or("a recurrence without sequential loops")?.1;
        let mut bits = Vec::new();
        for (n, c) in r.clauses.iter().enumerate() {
            let cover = c.cover.first().ok_or("a clause without a cover of the outermost loop")?;
            let on = self.covers(cover, outer, x)?;
            let n = proc_macro2::Literal::u32_suffixed(n as u32);
            bits.push(quote!((((#on) as u64) << #n)));
        }
        Ok(bits)
    }

    /// For a window allocated uninitialized: zeroes the slots no step of
    /// the outermost loop used (fewer steps than slots).
    fn unused_slots(&mut self, r: &Recurrence, store: &Ident) -> Result<TokenStream, Bug> {
        let Some((axis, mask)) = self.rec_access.get(&r.var).and_then(|a| a.window.clone()) else {
            return Err("an uninitialized recurrence without a window".into());
        };
        let outer = &r.seq.first().ok_or("a recurrence without sequential loops")?.1;
        let (start, end) = (self.dim(&outer.start)?, self.dim(&outer.end)?);
        let rt_axis = types::usize_lit(axis);
        Ok(quote! {
            let __ran: i64 = ((#end) - (#start)).max(0);
            for __k in __ran..((#mask) as i64 + 1) {
                unsafe { #store.clear_slab(#rt_axis, (((#start) + __k) as usize) & (#mask)) };
            }
        })
    }

    /// Whether the window's slot for step `i` of the outermost loop must be
    /// zeroed before the step: not in the first `slots` steps (their slots
    /// are fresh zeros), and not when the same clauses cover this step as
    /// the step that last used the slot. The points a step writes are the
    /// loops of its clauses, whose ranges do not depend on the step, so
    /// the same clauses write the same points and overwrite every point the
    /// slot's previous step left (a heat stencil's border stays zero
    /// without a clear per step).
    fn clear_needed(&mut self, r: &Recurrence, i: &Ident, start: &TokenStream) -> Result<TokenStream, Bug> {
        // A sweep's window is refilled chunk by chunk: every step clears.
        let sweep = self.rec_access.get(&r.var).is_some_and(|a| a.held.is_some());
        if r.clauses.len() > 64 || sweep {
            return Ok(quote!(true));
        }
        let slots = match self.rec_access.get(&r.var).and_then(|a| a.window.as_ref()) {
            Some((_, mask)) => quote!(((#mask) as i64 + 1)),
            None => return Ok(quote!(true)),
        };
        // The earlier step is within the loop: its range's own bounds need
        // no test.
        let x = quote!(__step);
        let bits = self.clause_bits(r, &x)?;
        Ok(quote! {
            (#i - (#start) >= #slots && {
                let __clauses = |#x: i64| -> u64 { 0u64 #(| #bits)* };
                __clauses(#i) != __clauses(#i - #slots)
            })
        })
    }

    /// The innermost sequential loop of `r` over `start..end` (`j`), cut
    /// into runs where no clause's cover starts or ends: at the start of
    /// each run, `flags[n]` says whether clause `n` covers it, and `body`
    /// (whose clauses test their flags) runs over the run. The tests of the
    /// innermost loop are then out of it (LLVM unswitches the flags), and a
    /// clause writing one end of a row (`d[i, 0]`) costs nothing inside.
    pub(super) fn segmented(
        &mut self,
        r: &Recurrence,
        flags: &[Ident],
        j: &Ident,
        start: TokenStream,
        end: TokenStream,
        body: TokenStream,
    ) -> Result<TokenStream, Bug> {
        let Some((_, l)) = r.seq.last() else { return Err("a recurrence without sequential loops".into()) };
        let k = r.seq.len() - 1;
        let at = quote!(__seg_lo);
        let (mut cuts, mut ons) = (Vec::new(), Vec::new());
        for (c, flag) in r.clauses.iter().zip(flags) {
            let cover = c.cover.get(k).ok_or("a clause without a cover of the innermost loop")?;
            let on = self.covers(cover, l, &at)?;
            ons.push(quote!(let #flag: bool = #on;));
            match cover {
                Cover::At(n) => {
                    let (n, m) = (types::i64_lit(*n), types::i64_lit(n + 1));
                    cuts.extend([quote!(#n), quote!(#m)]);
                }
                Cover::Range(a, b) => {
                    if *a != l.start {
                        let a = self.dim(a)?;
                        cuts.push(quote!((#a)));
                    }
                    if *b != l.end {
                        let b = self.dim(b)?;
                        cuts.push(quote!((#b)));
                    }
                }
            }
        }
        Ok(quote! {
            let mut __seg_lo: i64 = #start;
            let __seg_end: i64 = #end;
            while __seg_lo < __seg_end {
                let mut __seg_hi: i64 = __seg_end;
                #(
                    let __cut: i64 = #cuts;
                    if __cut > __seg_lo && __cut < __seg_hi {
                        __seg_hi = __cut;
                    }
                )*
                #(#ons)*
                for #j in __seg_lo..__seg_hi {
                    #body
                }
                __seg_lo = __seg_hi;
            }
        })
    }

    /// `cover_tests` joined by `&&` (`true` when there is none).
    pub(super) fn covers(&mut self, cover: &Cover, l: &crate::ir::Loop, x: &TokenStream) -> Result<TokenStream, Bug> {
        let tests = self.cover_tests(cover, l, x)?;
        Ok(if tests.is_empty() { quote!(true) } else { quote!(#(#tests)&&*) })
    }

    /// The tests that `x` (a value of `l`'s variable) is in `cover`, less
    /// those the loop's own range implies.
    fn cover_tests(&mut self, cover: &Cover, l: &crate::ir::Loop, x: &TokenStream) -> Result<Vec<TokenStream>, Bug> {
        let mut conds = Vec::new();
        match cover {
            Cover::At(n) => {
                let n = types::i64_lit(*n);
                conds.push(quote!(#x == #n));
            }
            Cover::Range(a, b) => {
                // The loop already starts at the smallest start and ends
                // at the extent; test only what can differ.
                if *a != l.start {
                    let a = self.dim(a)?;
                    conds.push(quote!(#x >= (#a)));
                }
                if *b != l.end {
                    let b = self.dim(b)?;
                    conds.push(quote!(#x < (#b)));
                }
            }
        }
        Ok(conds)
    }

    /// One clause at one point of the sequential loops: the cover test
    /// (the innermost loop's as `flag`, see `segmented`), then its own
    /// loops writing through the store.
    fn rec_clause(&mut self, r: &Recurrence, c: &RecClause, store: &Ident, flag: &Ident) -> Result<TokenStream, Bug> {
        let rt = self.rt.clone();
        let mut conds = Vec::new();
        let inner = r.seq.len().saturating_sub(1);
        for (k, (cover, (_, l))) in c.cover.iter().zip(&r.seq).enumerate() {
            if k == inner {
                conds.push(quote!(#flag));
                continue;
            }
            let i = self.ident(l.index)?;
            conds.extend(self.cover_tests(cover, l, &quote!(#i))?);
        }
        let mut idx = Vec::new();
        for (axis, at) in c.at.iter().enumerate() {
            let value = match at {
                RecIndex::Seq(k) => {
                    let i = self.ident(r.seq.get(*k).ok_or("a clause writes a missing loop")?.1.index)?;
                    quote!(#i as usize)
                }
                RecIndex::Loop(k) => {
                    let i = self.ident(c.loops.get(*k).ok_or("a clause writes a missing loop")?.index)?;
                    quote!(#i as usize)
                }
                RecIndex::Lit(n) => {
                    let n = types::usize_lit(usize::try_from(*n).map_err(|_| "a negative literal slot")?);
                    quote!(#n)
                }
            };
            idx.push(self.in_window(r.var, axis, value));
        }
        // The clause's prelude (a product of an earlier step) runs once per
        // step, before the loops; emitted first, as the body reads it.
        let mut prelude = TokenStream::new();
        let mut k = 0;
        while k < c.prelude.len() {
            // A sharded function's all-reduces of one step, adjacent,
            // travel in one message (as in a function's body).
            let run = c.prelude[k..]
                .iter()
                .take_while(|s| matches!(s, crate::ir::Stmt::Comm(crate::ir::Comm::AllReduce { .. })))
                .count();
            if run > 1 {
                prelude.extend(self.all_reduces(&c.prelude[k..k + run])?);
                k += run;
                continue;
            }
            prelude.extend(self.stmt(&c.prelude[k])?);
            k += 1;
        }
        let value = self.expr(&c.body)?.tokens;
        let (rank, n_loops) = (c.at.len(), c.loops.len());
        let elem = types::scalar(r.elem);
        let work = self.rec_work(c)?;
        // The innermost loop writes a row of the last axis: fill it as a
        // slice (see `rec::fill_row`).
        let row_loop = n_loops > 0 && c.at.last() == Some(&RecIndex::Loop(n_loops - 1));
        let mut body = if row_loop {
            let l = &c.loops[n_loops - 1];
            let i = self.ident(l.index)?;
            let (start, end) = (self.dim(&l.start)?, self.dim(&l.end)?);
            let mut first = idx.clone();
            first[rank - 1] = quote!((#start) as usize);
            // The row is split across threads only when its loop is the
            // clause's outermost one; otherwise the outermost loop is.
            let parallel = n_loops == 1;
            let fill = |row: TokenStream, from: TokenStream, value: TokenStream| {
                quote! {
                    #rt::rec::fill_row(#row, #from, #work, #parallel, #[inline(always)] |#i: i64| -> ::core::result::Result<#elem, _> {
                        ::core::result::Result::Ok(#value)
                    })?;
                }
            };
            let generic = fill(quote!(__row), quote!((#start)), value.clone());
            // A guard bounding the row's index: the stretches outside and
            // inside its range filled apart, without a test per element.
            let row = quote::format_ident!("__row");
            let filled = match self.clipped_fill(&c.body, r.elem, l.index, &l.start, &row, &fill, &generic)? {
                Some(clipped) => clipped,
                None => generic,
            };
            quote! {
                let __row = unsafe { #store.row_mut([#(#first),*], ((#end) - (#start)).max(0) as usize) };
                #filled
            }
        } else {
            let carried = match self.carry.as_ref().filter(|c| c.tensor == r.var) {
                Some(Carry { value, have, .. }) => quote!(#value = __value; #have = true;),
                None => TokenStream::new(),
            };
            quote! {
                let __value = #value;
                unsafe { #store.set([#(#idx),*], __value) };
                #carried
            }
        };
        let outer_loops = if row_loop { n_loops - 1 } else { n_loops };
        for (k, l) in c.loops[..outer_loops].iter().enumerate().rev() {
            let i = self.ident(l.index)?;
            let (start, end) = (self.dim(&l.start)?, self.dim(&l.end)?);
            if k == 0 {
                // The clause's loops are independent: the runtime splits the
                // outermost across threads when the work pays for it.
                body = quote! {
                    #rt::rec::each((#start), (#end), #work, |#i: i64| {
                        let #store = #store;
                        #body
                        Ok(())
                    })?;
                };
            } else {
                body = quote! {
                    for #i in (#start)..(#end) {
                        #body
                    }
                };
            }
        }
        if conds.is_empty() {
            Ok(quote!({ #prelude #body }))
        } else {
            Ok(quote!(if #(#conds)&&* { #prelude #body }))
        }
    }

    /// Local copies of what `r`'s clauses read from outside a wavefront's
    /// row closure: the store, the window's mask, the scalars (dimensions,
    /// parameters) and views of the tensors they mention.
    pub(super) fn row_locals(
        &mut self,
        r: &Recurrence,
        store: &Ident,
        wave: Option<&Ident>,
    ) -> Result<TokenStream, Bug> {
        let mut out = quote!(let #store = #store;);
        if wave.is_some() {
            let mask = derived("mask_", &self.ident(r.var)?, "");
            out.extend(quote!(let #mask = #mask;));
        }
        let mut inside: Vec<VarId> = r.seq.iter().map(|(_, l)| l.index).collect();
        let mut used = Vec::new();
        for c in &r.clauses {
            inside.extend(c.loops.iter().map(|l| l.index));
            // What a clause's prelude defines is defined inside too.
            for st in &c.prelude {
                crate::ir::visit::for_each_stmt_binder(st, &mut |v| inside.push(v));
            }
            crate::ir::visit::defined_in(&c.body, &mut inside);
            crate::ir::visit::visit_var_uses(&c.body, &mut |v| used.push(v));
            for cover in &c.cover {
                if let Cover::Range(a, b) = cover {
                    used.extend(a.vars().into_iter().chain(b.vars()).map(|v| VarId(v.0)));
                }
            }
        }
        let mut seen = std::collections::HashSet::new();
        for v in used {
            if v == r.var || inside.contains(&v) || self.rec_access.contains_key(&v) || !seen.insert(v) {
                continue;
            }
            let id = self.ident(v)?;
            match self.info(v)?.ty {
                Repr::Scalar(_) => out.extend(quote!(let #id = #id;)),
                Repr::Tensor(..) => out.extend(quote!(let #id = #id.view();)),
                _ => {}
            }
        }
        Ok(out)
    }

    /// The carry of `r` (see [`Carry`]), when every axis is sequential,
    /// every clause writes the current point alone (no loops of its own,
    /// no prelude) and some clause reads the point before it along the
    /// innermost loop. Not in a checkpointed sweep, whose reads are tested
    /// against the steps its window holds.
    fn carry_of(&mut self, r: &Recurrence) -> Result<Option<Carry>, Bug> {
        let rank = r.extents.len();
        let Some(&(inner, _)) = r.seq.last() else { return Ok(None) };
        if r.seq.len() != rank || self.rec_access.get(&r.var).is_some_and(|a| a.held.is_some()) {
            return Ok(None);
        }
        let mut at = vec![None; rank];
        for (axis, l) in &r.seq {
            match at.get_mut(*axis) {
                Some(slot @ None) => *slot = Some(l.index),
                _ => return Ok(None),
            }
        }
        let Some(at) = at.into_iter().collect::<Option<Vec<VarId>>>() else { return Ok(None) };
        if !r.clauses.iter().all(|c| r.writes_point(c)) {
            return Ok(None);
        }
        let name = self.ident(r.var)?;
        let carry = Carry::new(r.var, &name, at, inner);
        fn reads_previous(e: &Expr, c: &Carry) -> bool {
            let here =
                matches!(&e.kind, ExprKind::Read { tensor, indices, .. } if *tensor == c.tensor && c.previous(indices));
            let mut any = here;
            crate::ir::visit::for_each_child(e, &mut |x| any = any || reads_previous(x, c));
            any
        }
        let used = r.clauses.iter().any(|c| reads_previous(&c.body, &carry));
        Ok(used.then_some(carry))
    }

    /// Estimated scalar operations of one step of a clause (for the
    /// parallel threshold).
    fn rec_work(&self, c: &RecClause) -> Result<TokenStream, Bug> {
        let cost = proc_macro2::Literal::usize_suffixed(c.cost_per_point.max(1) as usize);
        let mut work = quote!(#cost);
        for l in &c.loops {
            let (start, end) = (self.dim(&l.start)?, self.dim(&l.end)?);
            work = quote!(#work.saturating_mul(((#end) - (#start)).max(0) as usize));
        }
        Ok(work)
    }

    /// A `usize` position along `axis` of `tensor`, masked into the
    /// tensor's window when the axis has one.
    pub(crate) fn in_window(&self, tensor: crate::ir::VarId, axis: usize, at: TokenStream) -> TokenStream {
        match self.rec_access.get(&tensor).and_then(|a| a.window.as_ref()) {
            Some((w, mask)) if *w == axis => quote!((#at & #mask)),
            _ => at,
        }
    }

    /// A read of a recurrence's tensor (see [`RecAccess`]): indices checked
    /// against the logical extents (or converted, when proven), masked into
    /// the window, then read through the store or the finished array.
    pub(crate) fn rec_read(
        &mut self,
        store: Option<&Ident>,
        tensor: crate::ir::VarId,
        indices: &[Expr],
        checked: bool,
    ) -> Result<TokenStream, Bug> {
        if let Some(lanes) = self.lanes.as_ref().filter(|l| l.tensor == tensor && store.is_some()) {
            if let Some(offset) = lanes.offset(indices) {
                let array = super::lanes::Lanes::array(offset);
                return Ok(quote!(#array[__r]));
            }
        }
        if let Some(c) = self.carry.clone().filter(|c| c.tensor == tensor && store.is_some() && c.previous(indices)) {
            // Written by the previous point when `had`, so in bounds.
            let read = self.stored_read(store, tensor, indices, checked)?;
            let (prev, had) = (&c.prev, &c.had);
            return Ok(quote!((if #had { #prev } else { #read })));
        }
        self.stored_read(store, tensor, indices, checked)
    }

    fn stored_read(
        &mut self,
        store: Option<&Ident>,
        tensor: crate::ir::VarId,
        indices: &[Expr],
        checked: bool,
    ) -> Result<TokenStream, Bug> {
        let mut hoisted = TokenStream::new();
        let mut idx = Vec::new();
        for (axis, i) in indices.iter().enumerate() {
            let value = if checked {
                self.checked_index(tensor, axis, i)?
            } else {
                let v = self.expr(i)?.at_least(super::Prec::Cast);
                quote!(#v as usize)
            };
            let tmp = quote::format_ident!("__ix{}", axis);
            hoisted.extend(quote!(let #tmp: usize = #value;));
            if axis == 0 {
                if let Some(Held { lo, hi, miss }) = self.rec_access.get(&tensor).and_then(|a| a.held.as_ref()) {
                    hoisted.extend(quote!(#miss.check(#tmp as i64, #lo, #hi);));
                }
            }
            idx.push(self.in_window(tensor, axis, quote!(#tmp)));
        }
        let id = self.ident(tensor)?;
        let access = match store {
            Some(store) => quote!(unsafe { #store.get([#(#idx),*]) }),
            None => quote!(unsafe { *#id.uget([#(#idx),*]) }),
        };
        Ok(quote!({ #hoisted #access }))
    }
}

impl Carry {
    /// Whether `indices` are the point before the current one along the
    /// innermost loop: its variable minus one there, the loops' variables
    /// elsewhere.
    fn previous(&self, indices: &[Expr]) -> bool {
        indices.len() == self.at.len()
            && indices.iter().zip(&self.at).enumerate().all(|(axis, (i, v))| {
                if axis != self.inner {
                    return matches!(i.kind, ExprKind::Var(x) if x == *v);
                }
                Affine::offset_from(i, *v) == Some(-1)
            })
    }
}
