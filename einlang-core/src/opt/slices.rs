//! Chains of batched products and row kernels run one batch at a time.
//!
//! Attention, `softmax(q k^T * 0.125) v` over heads `h`, reaches this pass
//! (after `gemm` and `rows`) as
//!
//! ```text
//! gemm s = q x k^T * 0.125 (batch H, ..)
//! rows of e, once per h: m[i] = max[j](s[h, i, j]); e[h, i, j] = exp(s[h, i, j] - m[i])
//! gemm y_mm = e x v (batch H, ..)
//! rows of y, once per h: z[i] = sum[j](e[h, i, j]); y[h, i, d] = y_mm[h, i, d] / z[i]
//! ```
//!
//! and every statement runs over all batches before the next starts, so
//! `s` and `e` go through memory between passes. Here the statements
//! before the last join its rows as a prelude computed per batch `h`:
//! each product becomes batch `h` of itself (`Gemm::slice`: its operands
//! read at `h`), each row group and plain definition its row `h`, and the
//! intermediates are matrices of one batch (in the cache while the chain
//! runs, given back to the runtime's pool after each row). Then the row
//! pass runs again inside that prelude (`m` becomes a scalar per row of
//! `e`, the softmax row form).
//!
//! A statement `p` before a row definition `d` (a `Rows` or a definition
//! of rank two or more without domain guards) joins it when
//! - `p` is a batched `f32`/`f64` product whose batch range is `d`'s first
//!   axis's (from 0), a `Rows` whose first axis has that range and whose
//!   prelude holds only definitions and `let`s, or a definition of rank
//!   two or more that `rows` would take as a member (the same rules);
//! - every use of `p` anywhere in the function is a read by `d` or by
//!   another member, at the reader's own first index (for a product, an
//!   operand whose batch axis is `p`'s first axis).
//!
//! At least one product must join, else the row pass has done all there
//! is. The bits are those of the statements run whole: each member's
//! points are the same expressions, and a product of one batch is the
//! same kernel call as a batch of the batched product run on one thread
//! (`gemm::batched_matmul` runs its batches that way when they divide
//! evenly among the threads; otherwise it splits each batch's rows, and
//! the kernel chosen for a block of rows may differ from the whole
//! batch's). The rows of `d` run in parallel over the batches, each on one
//! thread; with a single batch (or too little work for the threads) they
//! run in turn, and the products and row loops inside use the threads.
//! Host code only; in
//! `checked` mode a product of one batch runs its reference loops, as
//! every product does.

use std::collections::{HashMap, HashSet};

use super::gemm::{recost, rename};
use super::hoist::pure_float;
use super::rows::{self, Uses};
use crate::base::dim::{Dim, DimVar};
use crate::ir::cost::row_prelude_share;
use crate::ir::visit;
use crate::ir::{Axis, Function, Gemm, Repr, Rows, Stmt, TensorDef, VarId};

/// Runs the chains of `f`'s top-level statement list one batch at a time.
pub fn run(f: &mut Function) {
    let uses = uses_of(f);
    let mut body = std::mem::take(&mut f.body);
    let mut i = body.len();
    while i > 0 {
        i -= 1;
        let Some(first) = head_axis(&body[i]) else { continue };
        let members = members(f, &uses, &body, i, &first);
        if members.is_empty() {
            continue;
        }
        let head = body.remove(i);
        let mut taken = Vec::new();
        for &j in members.iter().rev() {
            taken.push(body.remove(j));
        }
        taken.reverse();
        i -= members.len();
        body.insert(i, join(f, head, taken));
    }
    f.body = body;
}

/// The first axis of a statement that can head a chain.
fn head_axis(s: &Stmt) -> Option<Axis> {
    match s {
        Stmt::Rows(r) if r.def.domain_guards == 0 => r.def.axes.first().cloned(),
        Stmt::Tensor(d) if d.axes.len() >= 2 && d.domain_guards == 0 => d.axes.first().cloned(),
        _ => None,
    }
}

fn defined(s: &Stmt) -> Option<VarId> {
    match s {
        Stmt::Tensor(d) => Some(d.var),
        Stmt::Rows(r) => Some(r.def.var),
        Stmt::Gemm(g) => Some(g.out),
        _ => None,
    }
}

/// How every variable of `f` is used (`rows::Uses`), with the reads of
/// row groups (their preludes' included) and of products' operands
/// attributed to the tensor they define when they are at its first index.
fn uses_of(f: &Function) -> Uses {
    let mut uses = Uses::new();
    for s in &f.body {
        stmt_uses(s, &mut uses);
    }
    rows::expr_uses(&f.result, None, &mut uses);
    uses
}

fn stmt_uses(s: &Stmt, uses: &mut Uses) {
    match s {
        Stmt::Rows(r) => {
            let owner = r.def.axes.first().map(|a| (r.def.var, a.index));
            for p in &r.prelude {
                match p {
                    Stmt::Tensor(_) | Stmt::Let { .. } => {
                        visit::for_each_stmt_expr(p, &mut |e| rows::expr_uses(e, owner, uses));
                    }
                    other => stmt_uses(other, uses),
                }
            }
            rows::expr_uses(&r.def.body, owner, uses);
        }
        Stmt::Gemm(g) => {
            for (t, axes) in [(g.a, &g.a_axes), (g.b, &g.b_axes)] {
                let at_batch = g.batch.is_some() && axes.len() == 3 && axes[0] == 0;
                uses.entry(t).or_default().push(at_batch.then_some(g.out));
            }
            if let Some(e) = &g.scale {
                rows::expr_uses(e, None, uses);
            }
            if let Some(v) = g.slice {
                uses.entry(v).or_default().push(None);
            }
        }
        Stmt::Tensor(_) => rows::stmt_uses(s, uses),
        other => {
            rows::stmt_uses(other, uses);
            // Variables named outside expressions too (a reshape's source,
            // a communication's buffers): uses of another kind.
            visit::visit_stmt_var_uses(other, &mut |v| uses.entry(v).or_default().push(None));
        }
    }
}

/// The positions in `body[..at]` of the statements that join the chain
/// headed by `body[at]` (first axis `first`), in order; empty unless a
/// product is among them.
fn members(f: &Function, uses: &Uses, body: &[Stmt], at: usize, first: &Axis) -> Vec<usize> {
    if first.start.as_constant() != Some(0) {
        return Vec::new();
    }
    let same = |d: &Dim| *d == first.extent || super::same_extent(body, d, &first.extent);
    let mut group: HashMap<VarId, usize> = HashMap::new();
    for (j, s) in body[..at].iter().enumerate() {
        let ok = match s {
            Stmt::Gemm(g) => {
                g.slice.is_none()
                    && matches!(g.elem, crate::base::scalar::ScalarKind::F32 | crate::base::scalar::ScalarKind::F64)
                    && g.batch.as_ref().is_some_and(same)
                    && g.reference.axes.len() == 3
                    && matches!(f.var(g.out).ty, Repr::Tensor(_, 3))
            }
            Stmt::Rows(r) => {
                let d = &r.def;
                d.domain_guards == 0
                    && d.elem.is_float()
                    && r.prelude.iter().all(|p| matches!(p, Stmt::Tensor(_) | Stmt::Let { .. }))
                    && d.axes[0].start.as_constant() == Some(0)
                    && same(&d.axes[0].extent)
                    && row_member(f, d, true)
            }
            Stmt::Tensor(d) => {
                d.axes.len() >= 2
                    && d.axes[0].start.as_constant() == Some(0)
                    && same(&d.axes[0].extent)
                    && row_member(f, d, false)
            }
            _ => false,
        };
        if ok {
            if let Some(v) = defined(s) {
                group.insert(v, j);
            }
        }
    }
    let head = defined(&body[at]).unwrap_or(VarId(u32::MAX));
    rows::keep_inner(&mut group, uses, head);
    if !group.values().any(|&j| matches!(body[j], Stmt::Gemm(_))) {
        return Vec::new();
    }
    let mut out: Vec<usize> = group.into_values().collect();
    out.sort_unstable();
    out
}

/// Whether definition `d` may be computed a row at a time, at other times
/// than where it stands (the rules of `rows`: float arithmetic that cannot
/// fail, no domain guards, no dimension that mentions its first index).
/// The body of a row group's definition reads its prelude's variables.
fn row_member(f: &Function, d: &TensorDef, in_group: bool) -> bool {
    let pf = &d.axes[0];
    if d.domain_guards != 0 || !d.elem.is_float() || !matches!(f.var(d.var).ty, Repr::Tensor(..)) {
        return false;
    }
    let n = DimVar(pf.index.0);
    if d.axes[1..].iter().any(|a| a.start.vars().contains(&n) || a.extent.vars().contains(&n)) {
        return false;
    }
    if in_group {
        // The group's prelude was checked when `rows` made it.
        return true;
    }
    let mut reads = HashSet::new();
    pure_float(&d.body, &HashSet::from([pf.index]), &HashSet::new(), &mut reads)
}

/// The chain: `taken` (in order) as the prelude of `head`'s rows, before
/// its own prelude, each a row of itself; then rows fused again inside.
fn join(f: &mut Function, head: Stmt, taken: Vec<Stmt>) -> Stmt {
    let (def, old_prelude) = match head {
        Stmt::Rows(r) => (r.def, r.prelude),
        Stmt::Tensor(d) => (d, Vec::new()),
        other => return other,
    };
    let n = def.axes[0].index;
    let members: HashSet<VarId> = taken.iter().filter_map(defined).collect();
    let mut prelude = Vec::new();
    for s in taken {
        match s {
            Stmt::Gemm(g) => prelude.push(Stmt::Gemm(one_batch(f, g, n, &members))),
            Stmt::Rows(r) => {
                // Its prelude, over its own row index, now over `n`.
                let map = HashMap::from([(r.def.axes[0].index, n)]);
                for mut p in r.prelude {
                    visit::for_each_stmt_expr_mut(&mut p, &mut |e| rename(e, &map));
                    prelude.push(p);
                }
                prelude.push(rows::into_row(f, r.def, n));
            }
            Stmt::Tensor(d) => prelude.push(rows::into_row(f, d, n)),
            other => prelude.push(other),
        }
    }
    prelude.extend(old_prelude);
    let mut def = def;
    for s in &mut prelude {
        visit::for_each_stmt_expr_mut(s, &mut |e| rows::drop_first_index(e, &members));
        match s {
            Stmt::Tensor(t) => recost(t),
            Stmt::Gemm(g) => recost(&mut g.reference),
            _ => {}
        }
    }
    rows::drop_first_index(&mut def.body, &members);
    recost(&mut def);
    // Row groups inside the chain (a maximum per row of `e`); every
    // member's uses are inside it.
    let mut inner = Uses::new();
    for s in &prelude {
        rows::stmt_uses(s, &mut inner);
    }
    rows::expr_uses(&def.body, None, &mut inner);
    rows::rewrite_list(f, &inner, &mut prelude);
    // The prelude's work, once per row, spread over the row's points (as
    // `rows` does) so that the parallel threshold sees it.
    let prelude_cost = row_prelude_share(&prelude, &def.axes[1..]);
    def.cost_per_point = def.cost_per_point.saturating_add(prelude_cost);
    Stmt::Rows(Rows { def, prelude })
}

/// Batch `n` of product `g`: operands that are members lose their batch
/// axis (axis 0, their first), the others are read at `n`.
fn one_batch(f: &mut Function, g: Gemm, n: VarId, members: &HashSet<VarId>) -> Gemm {
    let own = |t: VarId, axes: Vec<usize>| -> Vec<usize> {
        if members.contains(&t) && axes.len() == 3 {
            axes[1..].iter().map(|a| a - 1).collect()
        } else {
            axes
        }
    };
    let a_axes = own(g.a, g.a_axes);
    let b_axes = own(g.b, g.b_axes);
    let reference = match rows::into_row(f, g.reference.clone(), n) {
        Stmt::Tensor(t) => t,
        // Not reached: `members` takes products of three axes only.
        _ => return Gemm { a_axes, b_axes, ..g },
    };
    Gemm { batch: None, a_axes, b_axes, slice: Some(n), reference, ..g }
}
