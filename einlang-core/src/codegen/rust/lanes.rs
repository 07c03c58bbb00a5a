//! Rows of a two-axis recurrence computed in lanes (see `rec::skewed`):
//! a group of `LANES` rows advances along an anti-diagonal, lane `r`
//! computing the point `(i0 + r, s - r)` at step `s`. A clause that reads
//! its tensor only a few points up and to the left (`d[i - 1, j]`,
//! `d[i, j - 1]`, `d[i - 1, j - 1]`: a dynamic program) then has a step's
//! lanes independent of each other, and LLVM computes them with vector
//! instructions, where a row at a time waits on the point to its left.
//!
//! ```text
//! for s in s0..s1 {
//!     let __lane_d1_0 = [row above at (i0 - 1, s), then __lane_h1[0..7]];  // d[i - 1, j]
//!     let __lane_d0_1 = __lane_h1;                                          // d[i, j - 1]
//!     for r in 0..8 { let i = i0 + r; let j = s - r; __lane_new[r] = <clause body> }
//!     (store every lane's point; shift the history: h2 = h1, h1 = new)
//! }
//! ```
//!
//! What the lanes read from each other is kept in a history of the last
//! steps' lanes (`__lane_h1` the step before, `__lane_h2` the one before
//! that, ...); a lane that reads a row above the group reads the store.
//! The rest of each row (before its lane starts, after it ends, other
//! clauses' points) runs row by row, as without lanes. In a window whose
//! every read looks back only so far, a group stores only what is read
//! later (`LanePlan::sparse`): storing a step's eight points one by one
//! cost more than computing them.

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use super::{types, Bug, FnCx};
use crate::ir::affine::Affine;
use crate::ir::{Cover, Expr, ExprKind, Recurrence, VarId};

/// Rows in a group (lanes of a step). Eight `i32`s fill an AVX2 register;
/// wider elements take two.
pub(crate) const LANES: i64 = 8;

/// Lanes read at most this far back (rows plus columns): the history
/// kept in registers.
const MAX_DEPTH: i64 = 4;

/// While a clause's value is emitted for the lanes: the lanes' array each
/// read of the recurrence's tensor names.
#[derive(Clone)]
pub(crate) struct Lanes {
    pub tensor: VarId,
    /// The variables of the row and column loops, and the tensor's axis
    /// each runs along.
    at: [(VarId, usize); 2],
    /// Each read's look-back (rows, columns).
    reads: Vec<(i64, i64)>,
}

/// A clause a recurrence computes in lanes, and how.
pub(crate) struct LanePlan {
    clause: usize,
    lanes: Lanes,
    /// The history kept: the largest look-back (rows plus columns) of
    /// this clause, or of any clause when the lanes store sparsely.
    depth: i64,
    /// When the recurrence keeps a window of its rows and every clause
    /// reads it only a few points back (`lane_reads`): the rows the next
    /// group reads (its largest look-back along the rows). A group that
    /// no read after the recurrence can see then stores only those rows
    /// and its last `depth` steps, which is all anything reads of it.
    sparse: Option<i64>,
}

impl Lanes {
    /// The look-back of a read at `indices`, when it is one of the lanes'.
    pub(crate) fn offset(&self, indices: &[Expr]) -> Option<(i64, i64)> {
        let back = |axis: usize, v: VarId| look_back(indices.get(axis)?, v);
        let (di, dj) = (back(self.at[0].1, self.at[0].0)?, back(self.at[1].1, self.at[1].0)?);
        self.reads.contains(&(di, dj)).then_some((di, dj))
    }

    /// The array of the lanes' values read at `offset`, indexed by lane.
    pub(crate) fn array(offset: (i64, i64)) -> Ident {
        format_ident!("__lane_d{}_{}", offset.0 as u64, offset.1 as u64)
    }
}

/// `n` when `e` is `v - n` for a constant `n >= 0` (`v` itself: 0).
fn look_back(e: &Expr, v: VarId) -> Option<i64> {
    Affine::offset_from(e, v).filter(|c| *c <= 0)?.checked_neg()
}

/// The look-back of every read of `tensor` in `e` (unchecked reads of
/// points up and to the left of the current one, within `MAX_DEPTH`), or
/// `None` when any mention of `tensor` is something else.
fn lane_reads(e: &Expr, tensor: VarId, at: [(VarId, usize); 2]) -> Option<Vec<(i64, i64)>> {
    fn walk(e: &Expr, tensor: VarId, at: [(VarId, usize); 2], out: &mut Vec<(i64, i64)>, found: &mut usize) {
        if let ExprKind::Read { tensor: t, indices, checked: false } = &e.kind {
            if *t == tensor && indices.len() == 2 {
                let back = |axis: usize, v: VarId| look_back(&indices[axis], v);
                if let (Some(di), Some(dj)) = (back(at[0].1, at[0].0), back(at[1].1, at[1].0)) {
                    if di + dj >= 1 && di + dj <= MAX_DEPTH && di < LANES {
                        *found += 1;
                        if !out.contains(&(di, dj)) {
                            out.push((di, dj));
                        }
                    }
                }
            }
        }
        crate::ir::visit::for_each_child(e, &mut |x| walk(x, tensor, at, out, found));
    }
    let (mut reads, mut found, mut mentions) = (Vec::new(), 0usize, 0usize);
    walk(e, tensor, at, &mut reads, &mut found);
    crate::ir::visit::visit_var_uses(e, &mut |v| mentions += usize::from(v == tensor));
    (found == mentions).then_some(reads)
}

impl FnCx<'_> {
    /// The clauses of `r` to compute in lanes (none, mostly): `r` has two
    /// sequential axes that may run as a wavefront, every clause writes
    /// the current point alone (`Recurrence::writes_point`), and each of these covers
    /// a range of both axes and reads the tensor only as `lane_reads`
    /// allows. Not in a checkpointed sweep.
    pub(crate) fn lane_plans(&self, r: &Recurrence) -> Vec<LanePlan> {
        if !r.wavefront
            || r.seq.len() != 2
            || r.extents.len() != 2
            || self.rec_access.get(&r.var).is_some_and(|a| a.held.is_some())
            || !r.clauses.iter().all(|c| r.writes_point(c))
        {
            return Vec::new();
        }
        let at = [(r.seq[0].1.index, r.seq[0].0), (r.seq[1].1.index, r.seq[1].0)];
        // What every clause reads back (when each reads only so).
        let all: Option<Vec<(i64, i64)>> =
            r.clauses.iter().map(|c| lane_reads(&c.body, r.var, at)).collect::<Option<Vec<_>>>().map(|v| v.concat());
        let windowed = r.window.as_ref().is_some_and(|w| w.axis == at[0].1);
        let sparse = all.as_ref().filter(|_| windowed).map(|all| {
            let rows = all.iter().map(|&(di, _)| di).max().unwrap_or(0);
            let depth = all.iter().map(|&(di, dj)| di + dj).max().unwrap_or(0);
            (rows, depth)
        });
        r.clauses
            .iter()
            .enumerate()
            .filter_map(|(n, c)| {
                if !matches!(&c.cover[..], [Cover::Range(..), Cover::Range(..)]) {
                    return None;
                }
                let reads = lane_reads(&c.body, r.var, at)?;
                let own = reads.iter().map(|(di, dj)| di + dj).max()?;
                let depth = sparse.map_or(own, |(_, all)| own.max(all));
                let lanes = Lanes { tensor: r.var, at, reads };
                Some(LanePlan { clause: n, lanes, depth, sparse: sparse.map(|(rows, _)| rows) })
            })
            .collect()
    }

    /// A closure `|i_lo, i_hi, j_lo, j_hi|` running those rows and columns
    /// of `r` (a wavefront's tile, or a group of rows of the whole width):
    /// groups of `LANES` rows in lanes where a planned clause alone covers
    /// enough of them, every other row by `row` (`|i, j_lo, j_hi|`, the
    /// clauses along a run of one row).
    pub(crate) fn lane_band(
        &mut self,
        r: &Recurrence,
        plans: &[LanePlan],
        store: &Ident,
        row: &Ident,
        locals: &TokenStream,
    ) -> Result<TokenStream, Bug> {
        let rt = self.rt.clone();
        let lanes = types::i64_lit(LANES);
        let mut groups = TokenStream::new();
        for plan in plans {
            let columns = self.lane_columns(r, plan)?;
            let steps = self.lane_steps(r, plan, store, locals)?;
            groups.extend(quote! {
                let (__jl, __jh) = #columns;
                if __jh - __jl >= 2 * #lanes {
                    #rt::rec::skewed(#lanes, __i0, (__j_lo, __j_hi), (__jl, __jh), &#row, #steps)?;
                    __i0 += #lanes;
                    continue;
                }
            });
        }
        if plans.is_empty() {
            return Ok(quote! {
                |__i_lo: i64, __i_hi: i64, __j_lo: i64, __j_hi: i64| {
                    for __i in __i_lo..__i_hi {
                        #row(__i, __j_lo, __j_hi)?;
                    }
                    Ok(())
                }
            });
        }
        Ok(quote! {
            |__i_lo: i64, __i_hi: i64, __j_lo: i64, __j_hi: i64| {
                let mut __i0 = __i_lo;
                while __i0 < __i_hi {
                    if __i_hi - __i0 >= #lanes {
                        #groups
                    }
                    #row(__i0, __j_lo, __j_hi)?;
                    __i0 += 1;
                }
                Ok(())
            }
        })
    }

    /// The columns `(jl, jh)` of `__j_lo..__j_hi` where the plan's clause
    /// alone covers the rows `__i0..__i0 + LANES` (empty when it does not
    /// cover them all): its range of columns, less the columns of every
    /// other clause covering any of the rows (the larger side of them when
    /// they are in the middle: the rest runs row by row).
    fn lane_columns(&mut self, r: &Recurrence, plan: &LanePlan) -> Result<TokenStream, Bug> {
        let lanes = types::i64_lit(LANES);
        let interval = |cx: &mut Self, cover: &Cover| -> Result<(TokenStream, TokenStream), Bug> {
            Ok(match cover {
                Cover::At(n) => {
                    let (a, b) = (types::i64_lit(*n), types::i64_lit(n.saturating_add(1)));
                    (quote!(#a), quote!(#b))
                }
                Cover::Range(a, b) => (cx.dim(a)?, cx.dim(b)?),
            })
        };
        let c = &r.clauses[plan.clause];
        let ((ra, rb), (ca, cb)) = (interval(self, &c.cover[0])?, interval(self, &c.cover[1])?);
        let mut out = quote! {
            let (mut __jl, mut __jh) = (__j_lo.max(#ca), __j_hi.min(#cb));
            if !(__i0 >= (#ra) && __i0 + #lanes <= (#rb)) {
                __jh = __jl;
            }
        };
        for (n, o) in r.clauses.iter().enumerate() {
            if n == plan.clause {
                continue;
            }
            let ((oa, ob), (pa, pb)) = (interval(self, &o.cover[0])?, interval(self, &o.cover[1])?);
            out.extend(quote! {
                if (#oa) < __i0 + #lanes && (#ob) > __i0 {
                    let (__oa, __ob) = ((#pa), (#pb));
                    if __oa < __jh && __ob > __jl {
                        if __oa - __jl >= __jh - __ob {
                            __jh = __oa;
                        } else {
                            __jl = __ob;
                        }
                    }
                }
            });
        }
        Ok(quote!({ #out (__jl, __jh.max(__jl)) }))
    }

    /// The closure `|s0, s1|` running the steps `s0..s1` of the lanes of
    /// rows `__i0..__i0 + LANES` (see the module docs).
    fn lane_steps(
        &mut self,
        r: &Recurrence,
        plan: &LanePlan,
        store: &Ident,
        locals: &TokenStream,
    ) -> Result<TokenStream, Bug> {
        let n = types::usize_lit(LANES as usize);
        let t = types::scalar(r.elem);
        let zero = types::zero(r.elem);
        let [(i_var, i_axis), (j_var, j_axis)] = plan.lanes.at;
        let (i, j) = (self.ident(i_var)?, self.ident(j_var)?);
        // The store's index of the point at row `a`, column `b` (`i64`s
        // inside the tensor).
        let point = |cx: &Self, a: TokenStream, b: TokenStream| {
            let mut idx = vec![TokenStream::new(), TokenStream::new()];
            idx[i_axis] = cx.in_window(r.var, i_axis, quote!(((#a) as usize)));
            idx[j_axis] = cx.in_window(r.var, j_axis, quote!(((#b) as usize)));
            quote!([#(#idx),*])
        };
        let history: Vec<Ident> = (1..=plan.depth).map(|k| format_ident!("__lane_h{}", k as u64)).collect();
        // At the first step, the history holds the points the lanes read
        // back: computed before the lanes (columns left of a tensor's
        // start are never read; they hold zero).
        let mut init = TokenStream::new();
        for (k, h) in (1..=plan.depth).zip(&history) {
            let at = point(self, quote!(__i0 + __r as i64), quote!(__c));
            init.extend(quote! {
                let mut #h: [#t; #n] = ::core::array::from_fn(|__r| {
                    let __c = __s0 - #k - __r as i64;
                    if __c >= 0 { unsafe { #store.get(#at) } } else { #zero }
                });
            });
        }
        // Each read's array: lanes below the read's rows from the history,
        // the first `di` lanes from the rows above the group.
        let mut reads = TokenStream::new();
        for &(di, dj) in &plan.lanes.reads {
            let name = Lanes::array((di, dj));
            let h = &history[(di + dj - 1) as usize];
            if di == 0 {
                reads.extend(quote!(let #name: [#t; #n] = #h;));
                continue;
            }
            let (di_lit, dj_lit, kept) =
                (types::i64_lit(di), types::i64_lit(dj), types::usize_lit((LANES - di) as usize));
            let first = types::usize_lit(di as usize);
            let at = point(self, quote!(__i0 + __r as i64 - #di_lit), quote!(__s - __r as i64 - #dj_lit));
            reads.extend(quote! {
                let #name: [#t; #n] = {
                    let mut __a: [#t; #n] = [#zero; #n];
                    for __r in 0..#first {
                        __a[__r] = unsafe { #store.get(#at) };
                    }
                    __a[#first..].copy_from_slice(&#h[..#kept]);
                    __a
                };
            });
        }
        let outer_lanes = self.lanes.replace(plan.lanes.clone());
        let outer_carry = self.carry.take();
        let value = self.expr(&r.clauses[plan.clause].body);
        self.lanes = outer_lanes;
        self.carry = outer_carry;
        let value = value?.tokens;
        let write = point(self, quote!(__i0 + __r as i64), quote!(__s - __r as i64));
        let mut shift = TokenStream::new();
        for k in (1..history.len()).rev() {
            let (to, from) = (&history[k], &history[k - 1]);
            shift.extend(quote!(#to = #from;));
        }
        let h1 = &history[0];
        // Sparse: the rows the next group reads at every step, the rest
        // from the history at the end (the last `depth` steps). The
        // window's last rows, read after the recurrence, are kept whole.
        let all = quote!(for __r in 0..#n { unsafe { #store.set(#write, __lane_new[__r]) }; });
        let (keep, store_step, store_last) = match (plan.sparse, &r.window) {
            (Some(rows), Some(w)) => {
                let (end, slots) = (self.dim(&r.seq[0].1.end)?, types::i64_lit(w.slots as i64));
                let (lanes, below) = (types::i64_lit(LANES), types::usize_lit((LANES - rows.min(LANES)) as usize));
                let mut last = TokenStream::new();
                for (k, h) in (1..=plan.depth).zip(&history) {
                    let k = types::i64_lit(k);
                    let at = point(self, quote!(__i0 + __r as i64), quote!(__s1 - #k - __r as i64));
                    last.extend(quote! {
                        if __s1 - #k >= __s0 {
                            for __r in 0..#n { unsafe { #store.set(#at, #h[__r]) }; }
                        }
                    });
                }
                (
                    quote!(let __keep: bool = __i0 + #lanes + #slots > (#end);),
                    quote! {
                        if __keep {
                            #all
                        } else {
                            for __r in #below..#n { unsafe { #store.set(#write, __lane_new[__r]) }; }
                        }
                    },
                    quote!(if !__keep { #last }),
                )
            }
            _ => (TokenStream::new(), all, TokenStream::new()),
        };
        Ok(quote! {
            |__s0: i64, __s1: i64| {
                // Copies: behind the captured references, LLVM would
                // reload them after every write through the store.
                let __i0: i64 = __i0;
                #locals
                #keep
                #init
                for __s in __s0..__s1 {
                    #reads
                    let mut __lane_new: [#t; #n] = [#zero; #n];
                    for __r in 0..#n {
                        let #i: i64 = __i0 + __r as i64;
                        let #j: i64 = __s - __r as i64;
                        __lane_new[__r] = #value;
                    }
                    #store_step
                    #shift
                    #h1 = __lane_new;
                }
                #store_last
                Ok(())
            }
        })
    }
}
