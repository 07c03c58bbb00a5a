//! Row fusion: definitions that only feed one row of a later definition
//! are computed row by row inside it, so they never make a whole tensor.
//!
//! A row-wise pipeline such as softmax,
//!
//! ```text
//! let m[n] = max[c](x[n, c]);
//! let e[n, c] = exp(x[n, c] - m[n]);
//! let s[n] = sum[k](e[n, k]);
//! let y[n, c] = e[n, c] / s[n];
//! ```
//!
//! becomes one `Stmt::Rows` for `y`: per index `n`, a scalar `m`, a row
//! `e[c]` (rank one), a scalar `s`, then the points of row `n` of `y`. Each
//! row of `e` is written and read while it is in cache, and `x` is read
//! from memory once per pass over a row, not once per tensor.
//!
//! Definition `d` (rank two or more, without domain guards) takes in the
//! earlier definitions `p` of the same statement list (its members) when:
//! - `p`'s first axis has the range of `d`'s first axis, `p` has no domain
//!   guards, and its value is float arithmetic that cannot fail
//!   (`hoist::pure_float`) with no dimension that mentions its first
//!   axis's index: computing it at other times, or not at all when `d`
//!   has no points, cannot change what the program does;
//! - every use of `p` anywhere in the function is a read inside the value
//!   of `d` or of another member, whose first index is that reader's own
//!   first axis index: each row of `d` needs exactly row `n` of `p`.
//!
//! Members keep their order; a member of rank one becomes a scalar `let`,
//! the others definitions over their remaining axes, and their reads lose
//! the first index. Definitions are looked at from the last statement
//! back, so a pipeline joins the definition at its end.

use std::collections::{HashMap, HashSet};

use super::gemm::{recost, rename};
use super::hoist::pure_float;
use crate::ir::cost::{expr_cost, row_prelude_share};
use crate::ir::visit;
use crate::ir::{Expr, ExprKind, Function, Repr, Rows, Stmt, TensorDef, VarId};

/// Fuses the row-wise producers of every definition of `f` (nested blocks
/// included).
pub fn run(f: &mut Function) {
    fuse(f, false);
}

/// Row fusion for device code (functions the CUDA back end compiles): a
/// row tensor of the prelude is recomputed wherever it is read (a GPU has
/// arithmetic to spare and no per-row cache to keep it in), so a member
/// of rank two or more must be cheap to recompute: no reduction in its
/// value, no read of another such member. Terms are not shared into row
/// tensors for the same reason.
pub fn run_device(f: &mut Function) {
    fuse(f, true);
}

fn fuse(f: &mut Function, device: bool) {
    // Uses are counted over the whole function: a member may not be read
    // anywhere but inside its group.
    let uses = uses_of(f);
    let mut body = std::mem::take(&mut f.body);
    rewrite_stmts(f, &uses, &mut body, device);
    f.body = body;
    let unit = Expr::unit();
    let mut result = std::mem::replace(&mut f.result, unit);
    rewrite_expr(f, &uses, &mut result, device);
    f.result = result;
}

/// How a variable is used: by a read inside the value of tensor `owner`
/// whose first index is `owner`'s first axis index (`Some(owner)`), or in
/// any other way (`None`).
pub(super) type Uses = HashMap<VarId, Vec<Option<VarId>>>;

pub(super) fn uses_of(f: &Function) -> Uses {
    let mut uses = Uses::new();
    for s in &f.body {
        stmt_uses(s, &mut uses);
    }
    expr_uses(&f.result, None, &mut uses);
    uses
}

pub(super) fn stmt_uses(s: &Stmt, uses: &mut Uses) {
    match s {
        Stmt::Tensor(def) => {
            let owner = def.axes.first().map(|a| (def.var, a.index));
            expr_uses(&def.body, owner, uses);
        }
        other => visit::for_each_stmt_expr(other, &mut |e| expr_uses(e, None, uses)),
    }
    // Tensors named in statements outside expressions (result checks) are
    // uses of another kind.
    if let Stmt::CheckResultDim { tensor, .. } = s {
        uses.entry(*tensor).or_default().push(None);
    }
}

/// Records the uses inside `e`, part of the value of `owner` (the tensor
/// and its first axis index) when there is one.
pub(super) fn expr_uses(e: &Expr, owner: Option<(VarId, VarId)>, uses: &mut Uses) {
    match &e.kind {
        ExprKind::Read { tensor, indices, .. } => {
            let row = match (owner, indices.first()) {
                (Some((t, n)), Some(Expr { kind: ExprKind::Var(v), .. })) if *v == n => Some(t),
                _ => None,
            };
            uses.entry(*tensor).or_default().push(row);
        }
        ExprKind::Var(v) | ExprKind::Len { tensor: v, .. } | ExprKind::ShapeOf { tensor: v } => {
            uses.entry(*v).or_default().push(None)
        }
        ExprKind::View { tensor, .. } => uses.entry(*tensor).or_default().push(None),
        ExprKind::JaggedRow { jagged, .. } => uses.entry(*jagged).or_default().push(None),
        ExprKind::Block { stmts, result } => {
            // Statements inside a value belong to the value (a definition
            // in a block is computed per point of the owner).
            for s in stmts {
                visit::for_each_stmt_expr(s, &mut |x| expr_uses(x, owner, uses));
                if let Stmt::CheckResultDim { tensor, .. } = s {
                    uses.entry(*tensor).or_default().push(None);
                }
            }
            expr_uses(result, owner, uses);
            return;
        }
        _ => {}
    }
    visit::for_each_child(e, &mut |c| expr_uses(c, owner, uses));
}

fn rewrite_stmts(f: &mut Function, uses: &Uses, stmts: &mut Vec<Stmt>, device: bool) {
    for s in stmts.iter_mut() {
        visit::for_each_stmt_expr_mut(s, &mut |e| rewrite_expr(f, uses, e, device));
    }
    let mut i = stmts.len();
    while i > 0 {
        i -= 1;
        let members = match &stmts[i] {
            Stmt::Tensor(d) if d.axes.len() >= 2 && d.domain_guards == 0 && !permutes(d) => {
                members(f, uses, d, &stmts[..i], device)
            }
            _ => Vec::new(),
        };
        if members.is_empty() {
            continue;
        }
        let Stmt::Tensor(mut def) = stmts.remove(i) else { continue };
        let n = def.axes[0].index;
        let member_vars: HashSet<VarId> = members.iter().map(|&j| defined_var(&stmts[j])).collect();
        let mut prelude = Vec::new();
        for &j in members.iter().rev() {
            let Stmt::Tensor(p) = stmts.remove(j) else { continue };
            prelude.push(into_row(f, p, n));
        }
        prelude.reverse();
        for s in &mut prelude {
            visit::for_each_stmt_expr_mut(s, &mut |e| drop_first_index(e, &member_vars));
            if let Stmt::Tensor(t) = s {
                recost(t);
            }
        }
        drop_first_index(&mut def.body, &member_vars);
        recost(&mut def);
        i -= members.len();
        let mut rows = Rows { def, prelude };
        if !device {
            share_row_terms(f, &mut rows);
        }
        // The prelude's work, once per row, spread over the row's points so
        // that the parallel threshold sees it.
        let prelude_cost = row_prelude_share(&rows.prelude, &rows.def.axes[1..]);
        rows.def.cost_per_point = rows.def.cost_per_point.saturating_add(prelude_cost);
        stmts.insert(i, Stmt::Rows(rows));
    }
}

/// Row fusion (host code) on one statement list whose members' uses are
/// all in `uses`: the prelude of a chain run per batch (`opt::slices`).
pub(super) fn rewrite_list(f: &mut Function, uses: &Uses, stmts: &mut Vec<Stmt>) {
    rewrite_stmts(f, uses, stmts, false);
}

fn rewrite_expr(f: &mut Function, uses: &Uses, e: &mut Expr, device: bool) {
    if let ExprKind::Block { stmts, .. } = &mut e.kind {
        rewrite_stmts(f, uses, stmts, device);
    }
    visit::for_each_child_mut(e, &mut |c| rewrite_expr(f, uses, c, device));
}

/// Whether `d`'s value is a read of one tensor at its own indices in
/// another order (`y[n, i, j, o] = t[n, o, i, j]`): a permuted copy,
/// which back ends run as a blocked copy of the whole tensor; as rows, its
/// every element would be a gather from the row of `t`.
fn permutes(d: &TensorDef) -> bool {
    d.permuted_read().is_some_and(|(_, order)| order.iter().enumerate().any(|(a, &k)| a != k))
}

fn defined_var(s: &Stmt) -> VarId {
    match s {
        Stmt::Tensor(t) => t.var,
        _ => VarId(u32::MAX),
    }
}

/// The positions in `earlier` of the members of `d`'s rows (see the
/// module docs), in order.
pub(super) fn members(f: &Function, uses: &Uses, d: &TensorDef, earlier: &[Stmt], device: bool) -> Vec<usize> {
    let first = &d.axes[0];
    let mut group: HashMap<VarId, usize> = HashMap::new();
    for (j, s) in earlier.iter().enumerate() {
        let Stmt::Tensor(p) = s else { continue };
        let Some(pf) = p.axes.first() else { continue };
        if p.domain_guards != 0 || !p.elem.is_float() || pf.start != first.start || pf.extent != first.extent {
            continue;
        }
        if !matches!(f.var(p.var).ty, Repr::Tensor(..)) {
            continue;
        }
        let n = crate::base::dim::DimVar(pf.index.0);
        if p.axes[1..].iter().any(|a| a.start.vars().contains(&n) || a.extent.vars().contains(&n)) {
            continue;
        }
        let mut reads = HashSet::new();
        let none = HashSet::new();
        // Dimensions in the value must not mention the first axis either:
        // its index is renamed in expressions only.
        if !pure_float(&p.body, &HashSet::from([pf.index]), &none, &mut reads) {
            continue;
        }
        if device && p.axes.len() >= 2 && has_reduction(&p.body) {
            continue;
        }
        group.insert(p.var, j);
    }
    if device {
        // A row tensor reading another would be recomputed inside it.
        let rows: HashSet<VarId> = group
            .iter()
            .filter(|(_, &j)| matches!(&earlier[j], Stmt::Tensor(p) if p.axes.len() >= 2))
            .map(|(v, _)| *v)
            .collect();
        group.retain(|_, j| {
            let Stmt::Tensor(p) = &earlier[*j] else { return false };
            p.axes.len() < 2 || !reads_any(&p.body, &rows)
        });
    }
    keep_inner(&mut group, uses, d.var);
    let mut out: Vec<usize> = group.into_values().collect();
    out.sort_unstable();
    out
}

/// Takes out of `group` (members by variable, with their positions) each
/// member used elsewhere than by `head` or another member, until every use
/// of what is left is inside the group.
pub(super) fn keep_inner(group: &mut HashMap<VarId, usize>, uses: &Uses, head: VarId) {
    loop {
        let outside: Vec<VarId> = group
            .keys()
            .copied()
            .filter(|v| {
                uses.get(v).is_none_or(|us| {
                    us.is_empty() || us.iter().any(|u| !matches!(u, Some(o) if *o == head || group.contains_key(o)))
                })
            })
            .collect();
        if outside.is_empty() {
            break;
        }
        for v in outside {
            group.remove(&v);
        }
    }
}

/// Member `p` as a statement of the prelude of rows over index `n`.
pub(super) fn into_row(f: &mut Function, p: TensorDef, n: VarId) -> Stmt {
    let mut body = p.body;
    rename(&mut body, &HashMap::from([(p.axes[0].index, n)]));
    if p.axes.len() == 1 {
        f.vars[p.var.0 as usize].ty = Repr::Scalar(p.elem);
        return Stmt::Let { var: p.var, value: body };
    }
    f.vars[p.var.0 as usize].ty = Repr::Tensor(p.elem, p.axes.len() - 1);
    let axes = p.axes[1..].to_vec();
    Stmt::Tensor(TensorDef::new(p.var, p.elem, axes, body))
}

/// A term of the row's value that a reduction of the prelude also computes
/// at every point of the row (`exp(x[n, c] - m)` in the value,
/// `sum[k](exp(x[n, k] - m))` before it) is computed once per point, into
/// a row tensor of the prelude that both read. Only a term that costs at
/// least `SHARED_COST` (an intrinsic call, a reduction) is worth the
/// stores: it is reached through arithmetic from the value and from the
/// reduction's body, it cannot fail (`hoist::pure_float`), the
/// reduction's loops run over the row's axes (same ranges, same order),
/// and the term reads nothing the prelude defines at or after the
/// reduction's statement.
fn share_row_terms(f: &mut Function, rows: &mut Rows) {
    let inner: Vec<crate::ir::Axis> = rows.def.axes[1..].to_vec();
    let mut p = 0;
    while p < rows.prelude.len() {
        let later: HashSet<VarId> = rows.prelude[p..].iter().map(prelude_var).collect();
        let Some((def_path, red_path, loops)) = find_shared(&rows.def.body, &rows.prelude[p], &inner, &later) else {
            p += 1;
            continue;
        };
        let Some(term) = super::hoist::at_path(&rows.def.body, &def_path).cloned() else { break };
        let elem = match term.ty {
            Repr::Scalar(k) => k,
            _ => break,
        };
        let owner = f.var(rows.def.var).source_name.clone();
        let t = f.add_var(&format!("{owner}_term"), Repr::Tensor(elem, inner.len()));
        let mut renamed = HashMap::new();
        let mut axes = Vec::new();
        for a in &inner {
            let source = f.var(a.index).source_name.clone();
            let v = f.add_var(&source, Repr::Scalar(crate::base::scalar::ScalarKind::I64));
            renamed.insert(a.index, v);
            axes.push(crate::ir::Axis { index: v, start: a.start.clone(), extent: a.extent.clone() });
        }
        let mut body = term;
        rename(&mut body, &renamed);
        let read = |vars: &[VarId]| Expr {
            kind: ExprKind::Read {
                tensor: t,
                indices: vars
                    .iter()
                    .map(|v| Expr { kind: ExprKind::Var(*v), ty: Repr::Scalar(crate::base::scalar::ScalarKind::I64) })
                    .collect(),
                checked: false,
            },
            ty: Repr::Scalar(elem),
        };
        let inner_vars: Vec<VarId> = inner.iter().map(|a| a.index).collect();
        super::gemm::replace_at(&mut rows.def.body, &def_path, &mut Some(read(&inner_vars)));
        visit::for_each_stmt_expr_mut(&mut rows.prelude[p], &mut |e| {
            super::gemm::replace_at(e, &red_path, &mut Some(read(&loops)));
        });
        let cost_per_point = expr_cost(&body);
        rows.prelude.insert(p, Stmt::Tensor(TensorDef { var: t, elem, axes, body, cost_per_point, domain_guards: 0 }));
        p += 2;
    }
    recost(&mut rows.def);
}

/// The least cost of a term worth a row tensor of its own.
const SHARED_COST: u64 = 6;

fn prelude_var(s: &Stmt) -> VarId {
    match s {
        Stmt::Let { var, .. } => *var,
        Stmt::Tensor(t) => t.var,
        _ => VarId(u32::MAX),
    }
}

/// A term of `value` (its path) equal to a term inside a reduction of
/// statement `s` over the row's axes `inner` (its path in `s`'s value, and
/// the reduction's loop variables), reading none of `later`.
fn find_shared(
    value: &Expr,
    s: &Stmt,
    inner: &[crate::ir::Axis],
    later: &HashSet<VarId>,
) -> Option<(Vec<usize>, Vec<usize>, Vec<VarId>)> {
    let Stmt::Let { value: lv, .. } = s else { return None };
    // The reductions of the statement over the row's axes.
    let mut reductions = Vec::new();
    arithmetic_nodes(lv, &mut Vec::new(), &mut |e, path| {
        if let ExprKind::Reduce { loops, wheres, .. } = &e.kind {
            let over_row = loops.len() == inner.len()
                && loops.iter().zip(inner).all(|(l, a)| l.start == a.start && l.end == a.start.add(&a.extent));
            if over_row && wheres.is_empty() {
                reductions.push((path.to_vec(), loops.iter().map(|l| l.index).collect::<Vec<_>>()));
            }
        }
    });
    let mut found = None;
    arithmetic_nodes(value, &mut Vec::new(), &mut |term, path| {
        if found.is_some() || expr_cost(term) < SHARED_COST || !matches!(term.ty, Repr::Scalar(k) if k.is_float()) {
            return;
        }
        let mut reads = HashSet::new();
        if !pure_float(term, &HashSet::new(), &HashSet::new(), &mut reads) || reads.iter().any(|v| later.contains(v)) {
            return;
        }
        for (rpath, loops) in &reductions {
            let Some(ExprKind::Reduce { body, .. }) = super::hoist::at_path(lv, rpath).map(|r| &r.kind) else {
                continue;
            };
            let mut hit = None;
            arithmetic_nodes(body, &mut Vec::new(), &mut |other, opath| {
                if hit.is_none() {
                    let mut map: HashMap<VarId, VarId> =
                        inner.iter().map(|a| a.index).zip(loops.iter().copied()).collect();
                    if crate::ir::equiv::alpha_eq(term, other, &mut map) {
                        hit = Some(opath.to_vec());
                    }
                }
            });
            if let Some(opath) = hit {
                // The reduction's body is its child 0 (it has no where entries).
                let mut full = rpath.clone();
                full.push(0);
                full.extend(opath);
                found = Some((path.to_vec(), full, loops.clone()));
                return;
            }
        }
    });
    found
}

/// Calls `f` on `e` and on every node reached from it through arithmetic
/// (operators, casts, intrinsics), outermost first, with its path.
pub(super) fn arithmetic_nodes(e: &Expr, path: &mut Vec<usize>, f: &mut dyn FnMut(&Expr, &[usize])) {
    f(e, path);
    if matches!(e.kind, ExprKind::Unary(..) | ExprKind::Binary(..) | ExprKind::Cast(..) | ExprKind::Intrinsic(..)) {
        let mut i = 0;
        visit::for_each_child(e, &mut |c| {
            path.push(i);
            arithmetic_nodes(c, path, f);
            path.pop();
            i += 1;
        });
    }
}

/// Reads of the tensors in `rows` lose their first index (a row of rank
/// one is read as a scalar variable).
pub(super) fn drop_first_index(e: &mut Expr, rows: &HashSet<VarId>) {
    visit::for_each_child_mut(e, &mut |c| drop_first_index(c, rows));
    if let ExprKind::Read { tensor, indices, .. } = &mut e.kind {
        if rows.contains(tensor) && !indices.is_empty() {
            indices.remove(0);
            if indices.is_empty() {
                e.kind = ExprKind::Var(*tensor);
            }
        }
    }
}

fn has_reduction(e: &Expr) -> bool {
    let mut found = matches!(e.kind, ExprKind::Reduce { .. });
    visit::for_each_child(e, &mut |c| found |= has_reduction(c));
    found
}

/// Whether `e` reads any tensor of `vars`.
pub(super) fn reads_any(e: &Expr, vars: &HashSet<VarId>) -> bool {
    let mut found = matches!(&e.kind, ExprKind::Read { tensor, .. } if vars.contains(tensor));
    visit::for_each_child(e, &mut |c| found |= reads_any(c, vars));
    found
}
