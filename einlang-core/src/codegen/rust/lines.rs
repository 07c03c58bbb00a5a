//! Recurrences whose lines run alone (`Recurrence::lines`) along the last
//! axis: blocks of lines across threads, each line running all its steps
//! in order, as a hand-written loop would.
//!
//! A scan along the rows of a matrix,
//!
//! ```text
//! let c[i, 0] = x[i, 0];
//! let c[i, j in 1..M] = c[i, j - 1] + x[i, j];
//! ```
//!
//! ran one step (a column) at a time, its points split across threads: a
//! parallel loop per column, each point a row apart in memory (14x a rayon
//! loop over rows). Each row depends only on itself, so instead blocks of
//! `LINE_BLOCK` rows run in parallel (`rec::line_blocks`), and each row of
//! a block runs its steps along its memory:
//!
//! ```text
//! rec::line_blocks(N, 8, work, |__lines_lo, __lines_hi| {
//!     for __line in __lines_lo..__lines_hi {
//!         let __line_0 = __line >= 0 && __line < N;   // each clause's lines
//!         // runs of steps where no clause's cover starts or ends:
//!         for j in .. {
//!             if __on_0 && __line_0 { c[__line, j] = x[__line, 0] }
//!             if __on_1 && __line_1 { c[__line, j] = carry_or(c[__line, j - 1]) + x[__line, j] }
//!             if nothing was written { c[__line, j] = 0 }
//!         }
//!     }
//! })
//! ```
//!
//! The point before along the row is kept in a register (`Carry`). Every
//! point is written, by a clause or with zero (and the steps before the
//! loop's start with zeros), so the tensor comes uninitialized from the
//! buffer pool. Advancing several rows together (to overlap their
//! dependence chains) was measured and dropped: rows a power of two apart
//! share cache sets, and a 4096 x 2048 scan ran 1.4x to 2.8x slower.
//!
//! Only for a recurrence of rank 2 whose sequential axis is the last (when
//! it is the first, a step is a row, which the default walks along
//! already), with no clause prelude, and not in a checkpointed sweep.

use proc_macro2::{Ident, TokenStream};
use quote::quote;

use super::recur::Carry;
use super::{derived, types, Bug, FnCx};
use crate::ir::{RecIndex, Recurrence};

/// Lines a block runs, one after the other (a task of the parallel loop).
pub(crate) const LINE_BLOCK: usize = 8;

impl FnCx<'_> {
    /// Whether `r` runs as blocks of lines (see the module docs).
    pub(crate) fn runs_as_lines(&self, r: &Recurrence) -> bool {
        matches!(&r.seq[..], [(1, _)])
            && r.lines
            && r.extents.len() == 2
            && r.clauses.iter().all(|c| {
                c.prelude.is_empty()
                    && matches!(
                        (&c.at[..], &c.loops[..]),
                        ([RecIndex::Loop(0), RecIndex::Seq(0)], [_]) | ([RecIndex::Lit(_), RecIndex::Seq(0)], [])
                    )
            })
    }

    /// The steps of `r` as blocks of lines through `store`, or None when
    /// `r` does not run that way (or runs in a checkpointed sweep). Every
    /// point of the lines' steps is written: by the clauses, or with zero
    /// where none covers it, and the steps before the sequential loop's
    /// start with zeros (the tensor may come uninitialized).
    pub(crate) fn line_steps(&mut self, r: &Recurrence, store: &Ident) -> Result<Option<TokenStream>, Bug> {
        let access = self.rec_access.get(&r.var).cloned().ok_or("a recurrence without its access")?;
        let [(_, l)] = &r.seq[..] else { return Ok(None) };
        if !self.runs_as_lines(r) || access.held.is_some() {
            return Ok(None);
        }
        let rt = self.rt.clone();
        let j = self.ident(l.index)?;
        let (start, end) = (self.dim(&l.start)?, self.dim(&l.end)?);
        let (lo, hi, line) = (quote!(__lines_lo), quote!(__lines_hi), quote!(__line));
        // A line runs its steps in order: the point before along the
        // sequential loop, when this line's previous step wrote it, is in a
        // register (see `Carry`), under each clause's own name for the line.
        let name = self.ident(r.var)?;
        let mut carry = Carry {
            tensor: r.var,
            at: vec![r.var, l.index],
            inner: 1,
            value: derived("carry_", &name, ""),
            had: derived("had_", &name, ""),
            have: derived("have_", &name, ""),
        };
        let (value_var, had, have) = (carry.value.clone(), carry.had.clone(), carry.have.clone());
        let slot = self.in_window(r.var, 1, quote!((#j as usize)));
        let flags: Vec<Ident> = (0..r.clauses.len()).map(|n| quote::format_ident!("__on_{}", n)).collect();
        let outer_carry = self.carry.take();
        let mut clauses = TokenStream::new();
        // Whether each clause writes the line, tested once per line.
        let mut on_line = TokenStream::new();
        for (n, (c, flag)) in r.clauses.iter().zip(&flags).enumerate() {
            // A clause writing a literal line reads its own line there, not
            // through a variable: no carry.
            carry.at[0] = c.loops.first().map_or(r.var, |own| own.index);
            self.carry = Some(carry.clone());
            let value = self.expr(&c.body);
            self.carry = None;
            let value = value?.tokens;
            let (test, bind, at) = match (&c.at[0], c.loops.first()) {
                (RecIndex::Loop(_), Some(own)) => {
                    let i = self.ident(own.index)?;
                    let (a, b) = (self.dim(&own.start)?, self.dim(&own.end)?);
                    (quote!(#line >= (#a) && #line < (#b)), quote!(let #i: i64 = #line;), quote!(#line as usize))
                }
                (RecIndex::Lit(n), None) => {
                    let at = types::usize_lit(usize::try_from(*n).map_err(|_| "a negative literal slot")?);
                    (quote!(#line == #n), TokenStream::new(), quote!(#at))
                }
                _ => return Err("a clause that does not write a line".into()),
            };
            let here = quote::format_ident!("__line_{}", n);
            on_line.extend(quote!(let #here: bool = #test;));
            clauses.extend(quote! {
                if #flag && #here {
                    #bind
                    let __value = #value;
                    unsafe { #store.set([#at, #slot], __value) };
                    #value_var = __value;
                    #have = true;
                }
            });
        }
        self.carry = outer_carry;
        let elem = types::scalar(r.elem);
        let zero = quote!(<#elem as ::core::default::Default>::default());
        let point = quote! {
            let #had = ::core::mem::replace(&mut #have, false);
            #clauses
            if !#have {
                unsafe { #store.set([#line as usize, #slot], #zero) };
            }
        };
        let run = self.segmented(r, &flags, &j, start.clone(), end.clone(), point)?;
        // Steps before the loop's start no clause writes: zeros (a window
        // zeroes the slots no step used after the steps).
        let before = if access.window.is_none() {
            quote! {
                for #line in #lo..#hi {
                    for __j in 0..((#start).max(0) as usize) {
                        unsafe { #store.set([#line as usize, __j], #zero) };
                    }
                }
            }
        } else {
            TokenStream::new()
        };
        let locals = self.row_locals(r, store, None)?;
        let lines = self.dim(&r.extents[0])?;
        let cost = r.clauses.iter().map(|c| c.cost_per_point).max().unwrap_or(1).max(1);
        let cost = proc_macro2::Literal::usize_suffixed(cost as usize);
        let block = types::usize_lit(LINE_BLOCK);
        Ok(Some(quote! {
            #rt::rec::line_blocks(
                (#lines),
                #block,
                #cost.saturating_mul(((#end) - (#start)).max(0) as usize),
                |#lo: i64, #hi: i64| {
                    #locals
                    #before
                    for #line in #lo..#hi {
                        #on_line
                        let mut #value_var: #elem = #zero;
                        let mut #have = false;
                        #run
                    }
                    Ok(())
                },
            )?;
        }))
    }
}
