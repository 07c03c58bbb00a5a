//! Leading axes merged: a row-wise pipeline whose rows are indexed by
//! several leading axes becomes one over a single row axis, so that
//! `rows` computes each row whole.
//!
//! Softmax over the last axis of a rank-3 tensor,
//!
//! ```text
//! let m[b, n] = max[c](x[b, n, c]);
//! let e[b, n, c] = exp(x[b, n, c] - m[b, n]);
//! let y[b, n, c] = e[b, n, c] / sum[k](e[b, n, k]);
//! ```
//!
//! fuses in `rows` over its first axis only: per `b`, a whole `[N]` of
//! maxima and a whole `[N, C]` of exponentials, then the division as a
//! separate loop (1.6-1.8x the time of the same rows at rank 2). Here `b`
//! and `n` become one axis `r` of extent `B N`:
//!
//! ```text
//! let x_2 = reshape(x, [B N, C]);
//! let m[r] = max[c](x_2[r, c]);
//! let e[r, c] = exp(x_2[r, c] - m[r]);
//! let y_2[r, c] = e[r, c] / sum[k](e[r, k]);
//! let y = reshape(y_2, [B, N, C]);
//! ```
//!
//! which `rows` takes whole (one row of `y_2` per `r`, its exponentials
//! in place, the division through the reciprocal), and the reshapes of
//! row-major tensors move no data (`NAME_into` fills a reshaped view of
//! its buffer).
//!
//! It applies to the definition `d` that is the function's result (host
//! code, not sharded) of rank three or more, float, without domain
//! guards, whose value cannot fail, with members as `rows` would take
//! them (`rows::members`). The `L` leading axes are merged, `L` the least
//! rank among the members (and at most `d`'s rank less one), at least two:
//! - every definition of the group has those axes from zero with `d`'s
//!   extents;
//! - every read of a group tensor in the group has the reader's own `L`
//!   leading indices first;
//! - a read of another tensor that mentions them has them first too, and
//!   the tensor is a parameter whose `L` leading extents are `d`'s (it is
//!   read through its reshaped view);
//! - the leading indices appear nowhere else (no arithmetic on them, no
//!   extent that names them).
//!
//! Each row then holds the same elements in the same order, and each
//! value the same terms: the bits are unchanged.

use std::collections::{HashMap, HashSet};

use super::gemm::recost;
use super::hoist::pure_float;
use super::rows;
use crate::base::dim::Dim;
use crate::base::scalar::ScalarKind;
use crate::ir::{visit, Axis, Expr, ExprKind, Function, Repr, Stmt, VarId};

/// Merges the leading row axes of `f`'s result pipeline (see the module
/// docs).
pub fn run(f: &mut Function) {
    if f.shard.is_some() {
        return;
    }
    if let Some(plan) = plan(f) {
        apply(f, plan);
    }
}

/// What `apply` rewrites.
struct Plan {
    /// Position of the result's definition in `f.body`.
    head: usize,
    /// Positions of the members, in order.
    members: Vec<usize>,
    /// The number of leading axes merged.
    lead: usize,
    /// Parameters read through their reshaped view.
    params: Vec<VarId>,
}

fn plan(f: &Function) -> Option<Plan> {
    let ExprKind::Var(d) = f.result.kind else { return None };
    let head = f.body.iter().position(|s| matches!(s, Stmt::Tensor(t) if t.var == d))?;
    let Stmt::Tensor(def) = &f.body[head] else { return None };
    let rank = def.axes.len();
    if rank < 3 || def.domain_guards != 0 || !def.elem.is_float() {
        return None;
    }
    let uses = rows::uses_of(f);
    let members = rows::members(f, &uses, def, &f.body[..head], false);
    if members.is_empty() {
        return None;
    }
    let mut lead = rank - 1;
    for &j in &members {
        let Stmt::Tensor(p) = &f.body[j] else { return None };
        lead = lead.min(p.axes.len());
    }
    if lead < 2 {
        return None;
    }
    let extents: Vec<&Dim> = def.axes[..lead].iter().map(|a| &a.extent).collect();
    let group: HashSet<VarId> = members
        .iter()
        .filter_map(|&j| match &f.body[j] {
            Stmt::Tensor(p) => Some(p.var),
            _ => None,
        })
        .collect();
    let mut params = Vec::new();
    for &j in members.iter().chain([&head]) {
        let Stmt::Tensor(t) = &f.body[j] else { return None };
        let from_zero = t.axes[..lead].iter().zip(&extents).all(|(a, e)| a.start == Dim::zero() && &a.extent == *e);
        let lead_vars: Vec<VarId> = t.axes[..lead].iter().map(|a| a.index).collect();
        // An extent of a later axis that names a leading index (`c in
        // 0..n`) would lose it.
        let names_lead = t.axes[lead..]
            .iter()
            .any(|a| a.start.vars().iter().chain(a.extent.vars().iter()).any(|d| lead_vars.contains(&VarId(d.0))));
        let mut reads = HashSet::new();
        if t.domain_guards != 0
            || names_lead
            || !from_zero
            || !pure_float(&t.body, &lead_vars.iter().copied().collect(), &HashSet::new(), &mut reads)
        {
            return None;
        }
        if !reads_by_rows(f, &t.body, &lead_vars, &group, &extents, &mut params) {
            return None;
        }
    }
    Some(Plan { head, members, lead, params })
}

/// Whether every mention of `lead` (a definition's leading indices) in
/// `e` is as the leading indices of a read of a group tensor or of a
/// parameter with the leading `extents` (recorded in `params`), and every
/// read of a group tensor is such a read.
fn reads_by_rows(
    f: &Function,
    e: &Expr,
    lead: &[VarId],
    group: &HashSet<VarId>,
    extents: &[&Dim],
    params: &mut Vec<VarId>,
) -> bool {
    match &e.kind {
        ExprKind::Var(v) => return !lead.contains(v),
        ExprKind::Read { tensor, indices, .. } => {
            if !leading(indices, lead) {
                return !group.contains(tensor)
                    && indices.iter().all(|i| reads_by_rows(f, i, lead, group, extents, params));
            }
            if !group.contains(tensor) {
                let known = f.params.contains(tensor)
                    && extents.iter().enumerate().all(|(a, e)| super::entry_extent(f, *tensor, a).as_ref() == Some(*e));
                if !known {
                    return false;
                }
                if !params.contains(tensor) {
                    params.push(*tensor);
                }
            }
            return indices[lead.len()..].iter().all(|i| reads_by_rows(f, i, lead, group, extents, params));
        }
        _ => {}
    }
    let mut ok = true;
    visit::for_each_child(e, &mut |c| ok &= reads_by_rows(f, c, lead, group, extents, params));
    ok
}

/// Whether a read's first indices are the leading indices `lead`, in order.
fn leading(indices: &[Expr], lead: &[VarId]) -> bool {
    indices.len() >= lead.len() && indices.iter().zip(lead).all(|(i, v)| matches!(i.kind, ExprKind::Var(w) if w == *v))
}

fn apply(f: &mut Function, plan: Plan) {
    let Plan { head, members, lead, params } = plan;
    let Stmt::Tensor(def) = &f.body[head] else { return };
    let extents: Vec<Dim> = def.axes.iter().map(|a| a.extent.clone()).collect();
    let merged = extents[..lead].iter().skip(1).fold(extents[0].clone(), |acc, e| acc.mul(e));
    let first = members.first().copied().unwrap_or(head);

    // The parameters' reshaped views, before the group.
    let mut views = HashMap::new();
    let mut view_stmts = Vec::new();
    for p in params {
        let Repr::Tensor(elem, rank) = f.var(p).ty else { return };
        let Some(rest) = (lead..rank).map(|a| super::entry_extent(f, p, a)).collect::<Option<Vec<Dim>>>() else {
            return;
        };
        let name = f.var(p).source_name.clone();
        let v = f.add_var(&name, Repr::Tensor(elem, rank - lead + 1));
        views.insert(p, v);
        let dims = std::iter::once(merged.clone()).chain(rest).collect();
        view_stmts.push(Stmt::Reshape { var: v, source: p, elem, dims });
    }

    let group: HashSet<VarId> = members
        .iter()
        .chain([&head])
        .filter_map(|&j| match &f.body[j] {
            Stmt::Tensor(t) => Some(t.var),
            _ => None,
        })
        .collect();
    for &j in members.iter().chain([&head]) {
        let Stmt::Tensor(t) = &mut f.body[j] else { continue };
        let lead_vars: Vec<VarId> = t.axes[..lead].iter().map(|a| a.index).collect();
        let row_name = f.vars[lead_vars[0].0 as usize].source_name.clone();
        let r = f.add_var(&row_name, Repr::Scalar(ScalarKind::I64));
        let Stmt::Tensor(t) = &mut f.body[j] else { continue };
        merge_reads(&mut t.body, &lead_vars, r, &group, &views);
        let rest = t.axes.split_off(lead);
        t.axes = std::iter::once(Axis { index: r, start: Dim::zero(), extent: merged.clone() }).chain(rest).collect();
        recost(t);
        let (var, elem, new_rank) = (t.var, t.elem, t.axes.len());
        if j == head {
            let name = f.var(var).source_name.clone();
            let rows_var = f.add_var(&name, Repr::Tensor(elem, new_rank));
            let Stmt::Tensor(t) = &mut f.body[j] else { continue };
            t.var = rows_var;
            f.body.insert(head + 1, Stmt::Reshape { var, source: rows_var, elem, dims: extents.clone() });
        } else {
            f.vars[var.0 as usize].ty = Repr::Tensor(elem, new_rank);
        }
    }
    for (k, s) in view_stmts.into_iter().enumerate() {
        f.body.insert(first + k, s);
    }
}

/// Reads at the leading indices `lead` in `e` read row `r` of a group
/// tensor, or of a parameter's view.
fn merge_reads(e: &mut Expr, lead: &[VarId], r: VarId, group: &HashSet<VarId>, views: &HashMap<VarId, VarId>) {
    visit::for_each_child_mut(e, &mut |c| merge_reads(c, lead, r, group, views));
    let ExprKind::Read { tensor, indices, .. } = &mut e.kind else { return };
    if !leading(indices, lead) {
        return;
    }
    if let Some(view) = views.get(tensor) {
        *tensor = *view;
    } else if !group.contains(tensor) {
        return;
    }
    let ty = Repr::Scalar(ScalarKind::I64);
    indices.splice(0..lead.len(), [Expr { kind: ExprKind::Var(r), ty }]);
}

#[cfg(test)]
mod tests {
    use crate::ir::Stmt;
    use crate::test_support::lowered;

    /// The reshapes in public function `f` of `src` after the pass.
    fn reshapes(src: &str) -> usize {
        let mut program = lowered(src);
        for (_, f) in program.functions_mut() {
            if f.name == "f" {
                super::run(f);
            }
        }
        crate::ir::validate::validate(&program).unwrap_or_else(|e| panic!("{e}"));
        let f = program.functions().find(|(_, f)| f.name == "f").map(|(_, f)| f).expect("f");
        f.body.iter().filter(|s| matches!(s, Stmt::Reshape { .. })).count()
    }

    #[test]
    fn rows_over_several_leading_axes_become_one_axis() {
        // The input's view and the result.
        let src = "pub fn f(x: [f32; B, N, C]) -> [f32; B, N, C] {
            let m[b, n] = max[c](x[b, n, c]);
            let y[b, n, c] = std::math::exp(x[b, n, c] - m[b, n]);
            y
        }";
        assert_eq!(reshapes(src), 2);
        // A row's weights read along the last axis alone need no view.
        let src = "pub fn f(x: [f32; B, H, S, C], w: [f32; C]) -> [f32; B, H, S, C] {
            let m[b, h, s] = sum[c](x[b, h, s, c]);
            let y[b, h, s, c] = x[b, h, s, c] * w[c] - m[b, h, s];
            y
        }";
        assert_eq!(reshapes(src), 2);
    }

    #[test]
    fn rows_that_read_a_leading_index_otherwise_keep_their_axes() {
        let cases = [
            // A tensor read at one leading index alone.
            "pub fn f(x: [f32; B, N, C], t: [f32; B]) -> [f32; B, N, C] {
                let m[b, n] = max[c](x[b, n, c]);
                let y[b, n, c] = x[b, n, c] - m[b, n] + t[b];
                y
            }",
            // An index in arithmetic.
            "pub fn f(x: [f32; B, N, C]) -> [f32; B, N, C] {
                let m[b, n] = max[c](x[b, n, c]);
                let y[b, n, c] = x[b, n, c] - m[b, n] + n as f32;
                y
            }",
            // A member of rank one: nothing to merge.
            "pub fn f(x: [f32; B, N, C]) -> [f32; B, N, C] {
                let m[b] = max[n, c](x[b, n, c]);
                let y[b, n, c] = x[b, n, c] - m[b];
                y
            }",
            // Rank two already.
            "pub fn f(x: [f32; N, C]) -> [f32; N, C] {
                let m[n] = max[c](x[n, c]);
                let y[n, c] = x[n, c] - m[n];
                y
            }",
            // No member.
            "pub fn f(x: [f32; B, N, C]) -> [f32; B, N, C] {
                let y[b, n, c] = x[b, n, c] * 2.0;
                y
            }",
            // Reads shifted along a leading axis.
            "pub fn f(x: [f32; B, N, C]) -> [f32; B, N - 1, C] {
                let m[b, n in 0..N - 1] = max[c](x[b, n + 1, c]);
                let y[b, n in 0..N - 1, c] = x[b, n, c] - m[b, n];
                y
            }",
        ];
        for src in cases {
            assert_eq!(reshapes(src), 0, "{src}");
        }
    }
}
