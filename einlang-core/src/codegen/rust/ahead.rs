//! A row pipeline's second pass over a row asks for the next row.
//!
//! A definition with a row prelude (`opt::rows`: a softmax's maximum,
//! exponentials and sum, once per row `n`) reads the rows `x[n, ..]` of
//! its input in several passes. The first pass takes the row from memory;
//! the second finds it in the cache and spends its time on arithmetic.
//! That second pass asks, one line per run of its lanes, for the same
//! line of the next row (`x[n + 1, c]` beside `x[n, c]`), so the next
//! row's first pass finds it cached (the runtime's `prefetch` module has
//! the figures and the row lengths where it applies). Where no prelude
//! statement writes the output's row (`log_softmax`: its maximum and
//! log-sum-exp are scalars, the row is written after them), the same pass
//! asks for this row of the output too, so that the final loop's stores
//! find their lines instead of waiting on each: `log_softmax` over 16384
//! x 256 `f32` on two threads of an AVX-512 Xeon took 0.72-0.74 ms instead
//! of 0.84-0.90 (4096 x 1024: 0.59-0.62 instead of 0.65-0.67; the AVX2
//! form 0.99 instead of 1.13-1.16), alternated in one binary. Where the
//! prelude writes the row (a softmax's exponentials), its stores overlap
//! that pass's arithmetic, and asking for the row in the maximum's pass
//! instead cost 5-10%.
//!
//! The passes are found on the IR: a prelude statement is a pass over
//! `x`'s rows when its one loop (a reduction's, or a row tensor's axis)
//! reads `x[n, i]` with `i` that loop's index, and the statement is the
//! second pass when an earlier one already read row `n` of `x`. Loops
//! emitted in lanes take the request (`reduce_in_lanes`, `fill_in_place`);
//! any other form of the pass simply makes none.
//!
//! An element map of one or two axes bound by its arithmetic
//! (`tanh(x[i])`: one that evaluates the runtime's polynomial math, as
//! `width::calls_math` tells, the functions that get an AVX-512 form) runs
//! its blocks (or rows) in pieces of [`PIECE`] elements, each asking for
//! the lines a kilobyte ahead of it in every tensor it reads at its own
//! position and in its own output (`map_ahead`, `row_ahead`; a row's
//! requests run on into the next row's lines): the loads, and the reads
//! of the lines the stores go to, then overlap the arithmetic instead of
//! adding to it. On the AVX-512 Xeon, into a buffer of 16 Mi `f32` on two
//! threads, `tanh` took 3.7-4.2 ms instead of 5.3-6.2, alternated in one
//! binary (`docs/performance-onnx.md`, session of 2026-12-02 15:46 UTC).

use std::collections::HashSet;

use proc_macro2::{Ident, TokenStream};
use quote::quote;

use super::{derived, Bug, FnCx};
use crate::base::scalar::ScalarKind;
use crate::ir::{visit, Expr, ExprKind, Repr, Stmt, TensorDef, VarId};

/// The elements of a map's piece: its requests cover the piece's lines.
const PIECE: usize = 64;

/// How far ahead of a piece a map asks for lines, in bytes.
const MAP_AHEAD_BYTES: usize = 1024;

/// The tensors whose next row the loop being emitted asks for, and the
/// row's index variable; with `out`, this row of the output as well,
/// which the definition writes only after its prelude.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Ahead {
    pub(crate) row: VarId,
    pub(crate) tensors: Vec<VarId>,
    pub(crate) out: Option<OutRow>,
}

/// The row of a definition's output being computed: the slice it is
/// written to, the definition's name and its element type.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct OutRow {
    pub(crate) slice: Ident,
    pub(crate) name: Ident,
    pub(crate) elem: ScalarKind,
}

/// For each statement of a prelude run once per `row`: what it asks for
/// (see the module docs), None for most.
pub(crate) fn second_passes(prelude: &[Stmt], row: VarId) -> Vec<Option<Ahead>> {
    let mut seen: HashSet<VarId> = HashSet::new();
    let mut done: HashSet<VarId> = HashSet::new();
    prelude
        .iter()
        .map(|s| {
            let mut tensors = Vec::new();
            for t in pass_reads(s, row) {
                if seen.contains(&t) && !done.contains(&t) && !tensors.contains(&t) {
                    tensors.push(t);
                }
            }
            done.extend(tensors.iter().copied());
            visit::for_each_stmt_expr(s, &mut |e| rows_read(e, row, &mut seen));
            (!tensors.is_empty()).then_some(Ahead { row, tensors, out: None })
        })
        .collect()
}

/// The tensors `s` reads as `t[row, i]` along its one loop `i`: a scalar
/// `let` holding one reduction over one loop, or a row tensor of one
/// axis, with no reduction inside either's body.
fn pass_reads(s: &Stmt, row: VarId) -> Vec<VarId> {
    let (body, along) = match s {
        Stmt::Let { value, .. } => {
            let mut reductions = Vec::new();
            reductions_in(value, &mut reductions);
            match reductions.as_slice() {
                [Expr { kind: ExprKind::Reduce { loops, body, .. }, .. }] if loops.len() == 1 => {
                    (&**body, loops[0].index)
                }
                _ => return Vec::new(),
            }
        }
        Stmt::Tensor(e) if e.axes.len() == 1 => (&e.body, e.axes[0].index),
        _ => return Vec::new(),
    };
    let mut inner = Vec::new();
    reductions_in(body, &mut inner);
    let mut reads = Vec::new();
    if inner.is_empty() {
        reads_at(body, &[row, along], &mut reads);
    }
    reads
}

/// Every reduction in `e`, outermost only.
fn reductions_in<'a>(e: &'a Expr, out: &mut Vec<&'a Expr>) {
    if matches!(e.kind, ExprKind::Reduce { .. }) {
        out.push(e);
        return;
    }
    visit::for_each_child(e, &mut |c| reductions_in(c, out));
}

/// The tensors read in `e` exactly as `t[at..]` (every index the
/// variable of its place in `at`).
fn reads_at(e: &Expr, at: &[VarId], out: &mut Vec<VarId>) {
    if let ExprKind::Read { tensor, indices, checked: false } = &e.kind {
        let own = indices.len() == at.len()
            && indices.iter().zip(at).all(|(i, a)| matches!(i.kind, ExprKind::Var(v) if v == *a));
        if own {
            out.push(*tensor);
        }
    }
    visit::for_each_child(e, &mut |c| reads_at(c, at, out));
}

/// Adds the tensors read in `e` at row `row` (first index `row`).
fn rows_read(e: &Expr, row: VarId, out: &mut HashSet<VarId>) {
    if let ExprKind::Read { tensor, indices, .. } = &e.kind {
        if matches!(indices.first().map(|i| &i.kind), Some(ExprKind::Var(v)) if *v == row) {
            out.insert(*tensor);
        }
    }
    visit::for_each_child(e, &mut |c| rows_read(c, row, out));
}

impl FnCx<'_> {
    /// `each`, the loop over a block of a map of one axis (`block`, its
    /// first position `first`), run in pieces that ask for their lines
    /// ahead (see the module docs); `each` itself when the map is cheap
    /// or reads no row-major tensor along its axis.
    pub(crate) fn map_ahead(
        &mut self,
        def: &TensorDef,
        first: &Ident,
        block: &Ident,
        each: TokenStream,
    ) -> Result<TokenStream, Bug> {
        let Some(lines) = self.map_requests(def, &quote!(#first), block)? else { return Ok(each) };
        let piece = super::types::usize_lit(PIECE);
        Ok(quote! {
            for (__piece, #block) in #block.chunks_mut(#piece).enumerate() {
                let #first: usize = #first + __piece * #piece;
                #lines
                #each
            }
        })
    }

    /// A row of a map of two axes (`row`, the slice of the output's row
    /// `def.axes[0]`) run in pieces that ask ahead, as [`Self::map_ahead`]:
    /// `each(binding)` is the loop over a piece (the slice `row` shadowed),
    /// `binding` binding the last axis's index from the position in the
    /// piece. None when the map is cheap or reads no row-major matrix at
    /// its own position.
    pub(crate) fn row_ahead(
        &mut self,
        def: &TensorDef,
        row: &Ident,
        each: impl FnOnce(&TokenStream) -> TokenStream,
    ) -> Result<Option<TokenStream>, Bug> {
        let at = quote!(__at);
        let Some(last) = def.axes.last() else { return Ok(None) };
        let Some(lines) = self.map_requests(def, &at, row)? else { return Ok(None) };
        let (_, binding) = self.position(last, |pos| quote!((#at + #pos)))?;
        let each = each(&binding);
        let piece = super::types::usize_lit(PIECE);
        Ok(Some(quote! {
            for (__piece, #row) in #row.chunks_mut(#piece).enumerate() {
                let #at: usize = __piece * #piece;
                #lines
                #each
            }
        }))
    }

    /// The requests of a piece of a map of one or two axes, bound by its
    /// arithmetic, whose output piece is `out` (a slice) and whose first
    /// position along the last axis is `at`: a kilobyte ahead in each
    /// row-major tensor the value reads at the definition's own position,
    /// and in `out`. None when there is nothing to ask for.
    fn map_requests(&mut self, def: &TensorDef, at: &TokenStream, out: &Ident) -> Result<Option<TokenStream>, Bug> {
        // Maps of plain arithmetic are bound by memory, whose streams the
        // processor's own prefetchers follow.
        if !super::width::calls_math(&def.body) || def.axes.is_empty() || def.axes.len() > 2 {
            return Ok(None);
        }
        let axes: Vec<VarId> = def.axes.iter().map(|a| a.index).collect();
        let mut read = Vec::new();
        reads_at(&def.body, &axes, &mut read);
        // The row's first element in a matrix: `n * len1`.
        let row_start = |cx: &Self, t: &Ident| -> Result<TokenStream, Bug> {
            Ok(match axes.as_slice() {
                [n, _] => {
                    let n = cx.ident(*n)?;
                    quote!((#n as usize).wrapping_mul(#t.shape()[1]).wrapping_add(#at))
                }
                _ => quote!(#at),
            })
        };
        let mut lines = Vec::new();
        let mut seen = HashSet::new();
        for t in read {
            if !seen.insert(t) || !self.standard.contains(&t) {
                continue;
            }
            if let Repr::Tensor(k, rank) = self.info(t)?.ty {
                if rank == axes.len() {
                    let id = self.ident(t)?;
                    let start = row_start(self, &id)?;
                    lines.extend(self.piece_lines(quote!(#id.as_ptr().wrapping_add(#start)), k));
                }
            }
        }
        if lines.is_empty() {
            return Ok(None);
        }
        lines.extend(self.piece_lines(quote!(#out.as_ptr()), def.elem));
        Ok(Some(quote!(#(#lines)*)))
    }

    /// One request per line of a piece of `k`s a kilobyte past `ptr`.
    fn piece_lines(&self, ptr: TokenStream, k: ScalarKind) -> Vec<TokenStream> {
        let rt = &self.rt;
        let size = k.size_bytes().max(1);
        let per_line = (64 / size).max(1);
        (0..PIECE.div_ceil(per_line))
            .map(|l| {
                let off = super::types::usize_lit(MAP_AHEAD_BYTES / size + l * per_line);
                quote!(#rt::prefetch::line(#ptr.wrapping_add(#off));)
            })
            .collect()
    }

    /// The request of the statement being emitted, taken by the loop
    /// that makes it ([`RowsAhead`]: the code before the loop, and each
    /// run's). None when there is no request or no tensor it names is a
    /// row-major matrix here.
    pub(crate) fn take_ahead(&mut self) -> Result<Option<RowsAhead>, Bug> {
        let Some(ahead) = self.ahead.take() else { return Ok(None) };
        let row = self.ident(ahead.row)?;
        let mut tensors = Vec::new();
        for t in ahead.tensors {
            if let Repr::Tensor(k, 2) = self.info(t)?.ty {
                if self.standard.contains(&t) {
                    tensors.push((self.ident(t)?, k));
                }
            }
        }
        if tensors.is_empty() {
            return Ok(None);
        }
        let rt = self.rt.clone();
        let mut setup: Vec<TokenStream> = tensors
            .iter()
            .map(|(t, k)| {
                let (on, next) = (derived("ahead_", t, ""), derived("next_", t, ""));
                let size = super::types::usize_lit(k.size_bytes());
                quote! {
                    let #on: bool = #rt::prefetch::rows_of(#t.shape()[1].saturating_mul(#size));
                    let #next = #t.as_ptr().wrapping_add((#row as usize).wrapping_add(1).wrapping_mul(#t.shape()[1]));
                }
            })
            .collect();
        // The output's row: this row's own lines, asked for before the
        // definition writes them.
        let mut rows = tensors
            .into_iter()
            .map(|(t, k)| (derived("next_", &t, ""), derived("ahead_", &t, ""), k))
            .collect::<Vec<_>>();
        if let Some(OutRow { slice, name, elem }) = ahead.out {
            let (on, start) = (derived("asked_", &name, ""), derived("own_row_", &name, ""));
            let size = super::types::usize_lit(elem.size_bytes());
            setup.push(quote! {
                let #on: bool = #rt::prefetch::rows_of(#slice.len().saturating_mul(#size));
                let #start = #slice.as_ptr();
            });
            rows.push((start, on, elem));
        }
        let setup = quote!(#(#setup)*);
        Ok(Some(RowsAhead { setup, rows, rt }))
    }
}

/// A taken request (`take_ahead`): its setup, and for each row asked for,
/// the pointer to its first element, the flag that says whether rows of
/// its length are asked for (`prefetch::rows_of`) and its element type.
pub(crate) struct RowsAhead {
    pub(crate) setup: TokenStream,
    rows: Vec<(Ident, Ident, ScalarKind)>,
    rt: TokenStream,
}

impl RowsAhead {
    /// The requests of a run of `lanes` elements starting at column `at`
    /// (a `usize` expression): one per line of each row asked for.
    pub(crate) fn run(&self, at: &TokenStream, lanes: usize) -> TokenStream {
        let rt = &self.rt;
        let code = self.rows.iter().map(|(start, on, k)| {
            let per_line = (64 / k.size_bytes().max(1)).max(1);
            let lines = (0..lanes.div_ceil(per_line)).map(|l| {
                let col = match l * per_line {
                    0 => quote!(#at),
                    off => {
                        let off = super::types::usize_lit(off);
                        quote!((#at) + #off)
                    }
                };
                quote!(#rt::prefetch::line(#start.wrapping_add(#col));)
            });
            quote!(if #on { #(#lines)* })
        });
        quote!(#(#code)*)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What each prelude statement of the first row pipeline in `src`
    /// asks for: the statement's position and the names of the tensors.
    fn requests(src: &str) -> Vec<(usize, Vec<String>)> {
        let c = crate::compile_str(src, &crate::Options::default()).expect("compiles");
        let f = c.ir.fns.iter().find(|f| f.body.iter().any(|s| matches!(s, Stmt::Rows(_)))).expect("a row pipeline");
        let Some(Stmt::Rows(r)) = f.body.iter().find(|s| matches!(s, Stmt::Rows(_))) else { unreachable!() };
        second_passes(&r.prelude, r.def.axes[0].index)
            .into_iter()
            .enumerate()
            .filter_map(|(i, a)| a.map(|a| (i, a.tensors.iter().map(|t| f.var(*t).name.clone()).collect())))
            .collect()
    }

    #[test]
    fn the_second_pass_over_the_rows_asks_for_the_next_row_the_first_does_not() {
        // The maximum reads the row first; the exponentials read it again.
        let softmax = requests(
            "pub fn softmax(x: [f32; N, C]) -> [f32; N, C] {
                 let m[n] = max[c](x[n, c]);
                 let e[n, c] = std::math::exp(x[n, c] - m[n]);
                 let y[n, c] = e[n, c] / sum[k](e[n, k]);
                 y
             }",
        );
        assert_eq!(softmax.len(), 1, "{softmax:?}");
        assert_eq!(softmax[0].1, ["x"]);
        assert_ne!(softmax[0].0, 0);
        // The log-sum-exp is the second pass of `log_softmax`.
        let log = requests("pub fn f(x: [f32; N, C]) -> [f32; N, C] { std::ml::log_softmax(x) }");
        assert_eq!(log.len(), 1, "{log:?}");
        assert_eq!(log[0].1, ["x"]);
    }

    #[test]
    fn the_output_row_is_asked_for_where_the_prelude_does_not_write_it() {
        let src = "pub fn log(x: [f32; N, C]) -> [f32; N, C] { std::ml::log_softmax(x) }
                   pub fn soft(x: [f32; N, C]) -> [f32; N, C] {
                       let m[n] = max[c](x[n, c]);
                       let e[n, c] = std::math::exp(x[n, c] - m[n]);
                       let y[n, c] = e[n, c] / sum[k](e[n, k]);
                       y
                   }";
        let c = crate::compile_str(src, &crate::Options::default()).expect("compiles");
        let rust: String = c.rust.to_string().split_whitespace().collect();
        // `log`'s body is the library function's.
        let (log, soft) = (rust.find("fn__log_softmax_").expect("log"), rust.find("fn__soft_body(").expect("soft"));
        let (log, soft) = if log < soft { (&rust[log..soft], &rust[soft..]) } else { (&rust[log..], &rust[soft..log]) };
        // `log_softmax` writes its row after the log-sum-exp, whose pass
        // asks for the row's lines (once per run of 16 `f32`, a line), in
        // each of the three forms; the softmax writes its exponentials
        // into the row in the pass that would ask.
        assert_eq!(log.matches("prefetch::line(__own_row_").count(), 3, "{log}");
        assert_eq!(log.matches("prefetch::line(__next_x").count(), 3, "{log}");
        assert!(!soft.contains("__own_row_"), "{soft}");
        assert_eq!(soft.matches("prefetch::line(__next_x").count(), 3, "{soft}");
    }

    #[test]
    fn maps_bound_by_arithmetic_ask_ahead_maps_bound_by_memory_do_not() {
        let src = "pub fn heavy(x: [f32; N]) -> [f32; N] { let y[i] = std::math::tanh(x[i]); y }
                   pub fn light(a: [f32; N], b: [f32; N]) -> [f32; N] { let y[i] = a[i] * b[i] + 1.0; y }
                   pub fn shifted(x: [f32; N]) -> [f32; N - 1] { let y[i in 0..N - 1] = std::math::tanh(x[i + 1]); y }
                   pub fn rows(x: [f32; N, C]) -> [f32; N, C] { let y[n, c] = std::math::tanh(x[n, c]); y }
                   pub fn across(x: [f32; N, C]) -> [f32; C, N] { let y[c, n] = std::math::tanh(x[n, c]); y }";
        let c = crate::compile_str(src, &crate::Options::default()).expect("compiles");
        let rust: String = c.rust.to_string().split_whitespace().collect();
        let starts: Vec<usize> = ["heavy", "light", "shifted", "rows", "across"]
            .iter()
            .map(|n| rust.find(&format!("fn__{n}_body(")).expect("the body"))
            .collect();
        let body = |name: &str| {
            let at = rust.find(&format!("fn__{name}_body(")).expect("the body");
            let end = starts.iter().copied().filter(|&s| s > at).min().unwrap_or(rust.len());
            rust[at..end].to_string()
        };
        let heavy = body("heavy");
        // Four lines of `x` and four of the output per piece of 64, in
        // each of the three forms.
        assert_eq!(heavy.matches("prefetch::line(").count(), 24, "{heavy}");
        assert!(heavy.contains("chunks_mut(64)") && heavy.contains("wrapping_add(256)"), "{heavy}");
        assert!(!body("light").contains("prefetch"));
        // A read beside the position is not one of the reads along it.
        assert!(!body("shifted").contains("prefetch"));
        // A row of two axes asks from its own row on; a transposing read
        // is not at the definition's position.
        let rows = body("rows");
        assert_eq!(rows.matches("prefetch::line(").count(), 24, "{rows}");
        assert!(rows.contains("(nasusize).wrapping_mul(x.shape()[1]).wrapping_add(__at)"), "{rows}");
        assert!(!body("across").contains("prefetch"));
    }

    #[test]
    fn a_pass_read_elsewhere_than_its_own_position_asks_for_nothing() {
        // The second pass reads `x[n, c]` along `j`: not one row walked in
        // order, so no request.
        let shifted = requests(
            "pub fn f(x: [f32; N, C]) -> [f32; N, C] {
                 let y[n, c] = x[n, c] / max[j](x[n, j]) - sum[k in 0..C](x[n, C - 1 - k]);
                 y
             }",
        );
        assert!(shifted.is_empty(), "{shifted:?}");
    }
}
