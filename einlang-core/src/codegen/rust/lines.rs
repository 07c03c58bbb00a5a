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
//! With more axes (a batch of matrices), the points of all axes but the
//! last are one list of lines. Only for a recurrence whose sequential axis
//! is the last (when it is the first, a step is a row, which the default
//! walks along already), whose clauses write each other axis at their own
//! loop (in order) or a literal, with no clause prelude, and not in a
//! checkpointed sweep.

use proc_macro2::{Ident, TokenStream};
use quote::quote;

use super::recur::Carry;
use super::{types, Bug, FnCx};
use crate::base::dim::Dim;
use crate::ir::{RecIndex, Recurrence};

/// Lines a block runs, one after the other (a task of the parallel loop).
pub(crate) const LINE_BLOCK: usize = 8;

impl FnCx<'_> {
    /// Whether `r` runs as blocks of lines (see the module docs).
    pub(crate) fn runs_as_lines(&self, r: &Recurrence) -> bool {
        let rank = r.extents.len();
        rank >= 2
            && r.lines
            && matches!(&r.seq[..], [(a, _)] if *a == rank - 1)
            && r.clauses.iter().all(|c| {
                // Each axis but the last at the clause's next loop, in
                // order, or at a literal.
                let mut loops = 0;
                let ordered = c.at[..rank - 1].iter().all(|at| match at {
                    RecIndex::Loop(k) if *k == loops => {
                        loops += 1;
                        true
                    }
                    RecIndex::Lit(_) => true,
                    _ => false,
                });
                c.prelude.is_empty() && ordered && c.loops.len() == loops && c.at[rank - 1] == RecIndex::Seq(0)
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
        let at = (0..r.extents.len()).map(|a| if a + 1 == r.extents.len() { l.index } else { r.var }).collect();
        let mut carry = Carry::new(r.var, &name, at, r.extents.len() - 1);
        let (value_var, have, take) = (carry.value.clone(), carry.have.clone(), carry.take());
        let slot = self.in_window(r.var, r.extents.len() - 1, quote!((#j as usize)));
        let flags: Vec<Ident> = (0..r.clauses.len()).map(|n| quote::format_ident!("__on_{}", n)).collect();
        let outer_carry = self.carry.take();
        let mut clauses = TokenStream::new();
        // The line's position on each axis but the last.
        let rank = r.extents.len();
        let coords: Vec<Ident> = (0..rank - 1).map(|a| quote::format_ident!("__at{}", a)).collect();
        let mut locate = quote!(let mut __rest: i64 = #line;);
        for a in (0..rank - 1).rev() {
            let (c, n) = (&coords[a], self.dim(&r.extents[a])?);
            locate.extend(if a == 0 {
                quote!(let #c: i64 = __rest;)
            } else {
                quote! {
                    let #c: i64 = __rest % (#n);
                    __rest /= #n;
                }
            });
        }
        let point_at = quote!([#(#coords as usize,)* #slot]);
        // Whether each clause writes the line, tested once per line.
        let mut on_line = TokenStream::new();
        for (n, (c, flag)) in r.clauses.iter().zip(&flags).enumerate() {
            let (mut tests, mut bind) = (Vec::new(), TokenStream::new());
            for (at, coord) in c.at.iter().zip(&coords) {
                match at {
                    RecIndex::Loop(k) => {
                        let own = c.loops.get(*k).ok_or("a clause writes a missing loop")?;
                        let i = self.ident(own.index)?;
                        let (a, b) = (self.dim(&own.start)?, self.dim(&own.end)?);
                        tests.push(quote!(#coord >= (#a) && #coord < (#b)));
                        bind.extend(quote!(let #i: i64 = #coord;));
                    }
                    RecIndex::Lit(v) => {
                        let v = types::i64_lit(*v);
                        tests.push(quote!(#coord == #v));
                    }
                    RecIndex::Seq(_) => return Err("a line's clause writes a sequential axis early".into()),
                }
            }
            // A read of the point before names the clause's loops on the
            // axes they write; a literal axis is never a variable (no
            // carry there).
            for (a, at) in c.at[..rank - 1].iter().enumerate() {
                carry.at[a] = match at {
                    RecIndex::Loop(k) => c.loops[*k].index,
                    _ => r.var,
                };
            }
            self.carry = Some(carry.clone());
            let value = self.expr(&c.body);
            self.carry = None;
            let value = value?.tokens;
            let here = quote::format_ident!("__line_{}", n);
            on_line.extend(quote!(let #here: bool = true #(&& #tests)*;));
            clauses.extend(quote! {
                if #flag && #here {
                    #bind
                    let __value = #value;
                    unsafe { #store.set(#point_at, __value) };
                    #value_var = __value;
                    #have = true;
                }
            });
        }
        self.carry = outer_carry;
        let elem = types::scalar(r.elem);
        let zero = quote!(<#elem as ::core::default::Default>::default());
        let point = quote! {
            #take
            #clauses
            if !#have {
                unsafe { #store.set(#point_at, #zero) };
            }
        };
        let run = self.segmented(r, &flags, &j, start.clone(), end.clone(), point)?;
        // Steps before the loop's start no clause writes: zeros (a window
        // zeroes the slots no step used after the steps).
        let before = if access.window.is_none() {
            quote! {
                for #line in #lo..#hi {
                    #locate
                    for __j in 0..((#start).max(0) as usize) {
                        unsafe { #store.set([#(#coords as usize,)* __j], #zero) };
                    }
                }
            }
        } else {
            TokenStream::new()
        };
        let locals = self.row_locals(r, store, None)?;
        let lines = r.extents[..rank - 1].iter().fold(Dim::one(), |acc, e| acc.mul(e));
        let lines = self.dim(&lines)?;
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
                        #locate
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
