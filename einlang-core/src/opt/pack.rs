//! Packing: a sum that contracts two operands but is not a matrix product
//! as written (a convolution `sum[c, r, s](x[n, c, i + r, j + s] * k[o, c,
//! r, s])`, either of its gradients, a contraction over several indices)
//! becomes a GEMM over packed copies of its operands ("im2col").
//!
//! A definition `y[axes] = ... sum[ks](body) where ws ...` qualifies when
//! it has no domain guards, its axes start at 0, and one of its sums (found
//! from the same roots as `gemm`'s: the value or a where-binding, through
//! operators, casts and intrinsics) has
//! - elements of a float type (`f16` and `bf16` in host code only: the
//!   runtime's half products accumulate in `f32`), loops starting at 0
//!   whose ends mention no variable of the definition;
//! - a body `p * q` or `q * p`, possibly as `if c { .. } else { 0 }`;
//! - `p` a read whose indices are distinct variables, each an axis of the
//!   definition or a summed variable, every summed variable among them
//!   (the plain operand: a kernel, an output gradient);
//! - `q`, `c` and `ws` using no variable of the definition other than its
//!   axes (the gathered operand: a shifted, strided or guarded read).
//!
//! A sum over ranges that start above zero (`sum[t in 1..T]`, a weight
//! gradient through time) is first rewritten over `0..T - 1` reading
//! `t + 1` (`shift_sums`), and the plain operand's indices may carry a
//! constant (`h[t - 1, ..]` becomes `h[t, ..]`, `d[t + 1, ..]` stays a
//! shifted read), since its packed copy is computed where the sum read it.
//!
//! The axes `p` reads are the GEMM's columns, unless `q`, `c` or `ws` use
//! them too (then they are batch axes); the others are its rows. The sum
//! becomes
//!
//! ```text
//! y_cols[batch.., rows.., ks..] = q where ws, c     (0 where a guard fails)
//! y_kern[batch.., ks.., cols..] = p
//! y_cols_m = reshape y_cols [B, M, K]; y_kern_m = reshape y_kern [B, K, N]
//! y_prod_m = gemm y_cols_m x y_kern_m                [B, M, N]
//! y_prod = reshape y_prod_m [batch.., rows.., cols..]
//! ```
//!
//! and the definition reads `y_prod[batch.., rows.., cols..]` in its
//! place (a bias or an activation stays an elementwise pass over the
//! result). The packed gathered operand has `K` entries for each of the
//! `M` rows: the kernel's volume times the input for a convolution. It is
//! laid out `[batch.., ks.., rows..]` instead (the GEMM reads it
//! transposed) when its last row looks like the longer innermost run: an
//! output's extent against a kernel's (see `run_length`), or, when the
//! two look alike, the variable of the gathered read's contiguous axis.

use std::collections::{HashMap, HashSet};

use super::gemm::{first_sum, recost, rename, replace_at, sum_factors};
use crate::base::dim::{Dim, DimVar};
use crate::base::ops::{BinOp, RedOp};
use crate::base::scalar::ScalarKind;
use crate::ir::affine::Affine;
use crate::ir::visit;
use crate::ir::visit::visit_var_uses;
use crate::ir::{
    Axis, EntryCheck, Expr, ExprKind, Function, Gemm, Literal, Loop, Repr, Rows, Stmt, TensorDef, VarId, WhereEntry,
};

/// Rewrites every qualifying definition of `f`, wherever it is.
pub fn run(f: &mut Function) {
    super::over_function(f, device_stmts, |f, e| super::in_blocks(f, e, device_stmts));
}

/// `run` for host code: a product per point of a single leading row axis
/// (a convolution's image) packs that point's columns and multiplies them
/// inside a row definition, so the packed copy is small enough to stay in
/// cache between its packing and the product (see `per_row`).
pub fn run_host(f: &mut Function) {
    super::over_function(f, host_stmts, |f, e| super::in_blocks(f, e, host_stmts));
}

fn rewrite_stmts(f: &mut Function, stmts: &mut Vec<Stmt>, host: bool) {
    let mut i = 0;
    while i < stmts.len() {
        let found = match &stmts[i] {
            Stmt::Tensor(def) => find(def, &extents(stmts)).map(|c| (c, None)).or_else(|| {
                // Sums over ranges that start above zero (a gradient's
                // `sum[t in 1..T]`), written over `0..`.
                let mut shifted = def.clone();
                (shift_sums(f, &mut shifted) && shifted.domain_guards == 0)
                    .then(|| find(&shifted, &extents(stmts)).map(|c| (c, Some(shifted))))
                    .flatten()
            }),
            _ => None,
        };
        // Half-precision packed products on the host only: the device's
        // half GEMMs are not checked on packed operands yet.
        let found = found.filter(|(c, _)| host || !c.elem.is_half());
        if let Some((c, Some(shifted))) = &found {
            let _ = c;
            stmts[i] = Stmt::Tensor(shifted.clone());
        }
        if let (Some((c, _)), Stmt::Tensor(def)) = (&found, &mut stmts[i]) {
            if host && c.split {
                // The per-image products go before the definition, which
                // now sums them; look at them (and it) again.
                if let Some(products) = split(f, def, c) {
                    stmts.insert(i, Stmt::Tensor(products));
                    continue;
                }
            }
        }
        if let (Some((c, _)), Stmt::Tensor(def)) = (found, &mut stmts[i]) {
            let (before, prelude) = pack(f, def, c, host);
            if let Some(prelude) = prelude {
                let Stmt::Tensor(def) = std::mem::replace(&mut stmts[i], Stmt::Expr(Expr::unit())) else {
                    unreachable!()
                };
                stmts[i] = Stmt::Rows(Rows { def, prelude });
            }
            let n = before.len();
            stmts.splice(i..i, before);
            i += n;
            if let Some(reshape) = product_is_value(f, &stmts[i - 1], &stmts[i]) {
                // The definition is its product as it is: the product's
                // reshape defines it (no copy).
                stmts[i - 1] = reshape;
                stmts.remove(i);
                continue;
            }
        }
        let inner: fn(&mut Function, &mut Vec<Stmt>) = if host { host_stmts } else { device_stmts };
        visit::for_each_stmt_expr_mut(&mut stmts[i], &mut |e| super::in_blocks(f, e, inner));
        i += 1;
    }
}

fn host_stmts(f: &mut Function, stmts: &mut Vec<Stmt>) {
    rewrite_stmts(f, stmts, true);
}

fn device_stmts(f: &mut Function, stmts: &mut Vec<Stmt>) {
    rewrite_stmts(f, stmts, false);
}

/// A sum that qualifies (see the module docs), where it is in the
/// definition's body, and the roles of its variables.
struct Contraction {
    path: Vec<usize>,
    elem: ScalarKind,
    batch: Vec<Axis>,
    rows: Vec<Axis>,
    cols: Vec<Axis>,
    /// Whether `p` is the left factor.
    p_first: bool,
    /// Whether the packed gathered operand has the summed axes before the
    /// rows (`[batch.., ks.., rows..]`).
    k_outer: bool,
    /// When the definition's axes are `[lead.., cols.., rest..]` (no batch
    /// axes, `lead` and `rest` the rows, `rest` not empty): how many rows
    /// lead. The product is then made in the definition's own order (see
    /// `pack`).
    lead: Option<usize>,
    /// Whether the definition's axes are `[rows.., cols..]` (no batch, two
    /// rows or more) and the packed operand `[rows.., ks..]`: in host code
    /// the product is made per point of the first row, as `[rest, cols]`
    /// (see `per_row`).
    rows_first: bool,
    /// Whether the definition's axes are `[n, batch.., cols.., rest..]`
    /// (a grouped convolution `y[n, g, o, i, j]`, the packed operand
    /// `[batch.., ks.., rows..]`): in host code the product is made per
    /// point of the first row, batched, as `[batch.., cols.., rest..]`.
    batch_lead: bool,
    /// Whether the sum's first variable is read plainly by both operands
    /// (an image of a kernel gradient's batch) while the summed run is
    /// innermost (`k_outer` false): in host code the sum is split into a
    /// product per value of that variable, then a sum of the products
    /// (see `split`).
    split: bool,
    /// When the definition's axes are `[lead.., rows.., rest..]` (no batch
    /// axes, `lead` and `rest` columns, neither empty): how many columns
    /// lead. The plain operand is laid out `[lead.., ks.., rest..]` (a view
    /// of it when it reads in that order) and multiplied per point of
    /// `lead` by the rows' matrix, in one batched product whose result is
    /// already in the definition's order.
    col_lead: Option<usize>,
}

/// The variables of `Stmt::Extent`s among `stmts`: extents computed from
/// others.
fn extents(stmts: &[Stmt]) -> HashSet<VarId> {
    stmts.iter().filter_map(|s| if let Stmt::Extent { var, .. } = s { Some(*var) } else { None }).collect()
}

/// The first sum of `def` that qualifies, if any.
fn find(def: &TensorDef, derived: &HashSet<VarId>) -> Option<Contraction> {
    first_sum(def, |e, inside, path| contraction(def, e, inside, path, derived))
}

fn contraction(
    def: &TensorDef,
    e: &Expr,
    inside: &HashSet<VarId>,
    path: &[usize],
    derived: &HashSet<VarId>,
) -> Option<Contraction> {
    let ExprKind::Reduce { op: RedOp::Sum, loops, wheres, body } = &e.kind else { return None };
    // (Half-precision products go to the runtime's half GEMM, which
    // accumulates in `f32`.)
    let Repr::Scalar(elem) = e.ty else { return None };
    if def.elem != elem || !elem.is_float() {
        return None;
    }
    let ks: HashSet<VarId> = loops.iter().map(|l| l.index).collect();
    for l in loops {
        let bounded_outside = |d: &Dim| d.vars().iter().all(|v| !inside.contains(&VarId(v.0)));
        if l.start.as_constant() != Some(0) || !bounded_outside(&l.end) {
            return None;
        }
    }
    let axes: Vec<VarId> = def.axes.iter().map(|a| a.index).collect();
    let (x, y, cond) = sum_factors(body)?;
    // The plain operand's indices: distinct axes or summed variables, each
    // plus a constant at most (`h[t - 1, ..]`: its packed copy reads it
    // where the sum did), every summed variable among them.
    let plain = |r: &Expr| -> Option<Vec<VarId>> {
        let ExprKind::Read { tensor, indices, .. } = &r.kind else { return None };
        if inside.contains(tensor) {
            return None;
        }
        let vars = indices
            .iter()
            .map(|i| match offset_var(i, inside) {
                Some(v) if axes.contains(&v) || ks.contains(&v) => Some(v),
                _ => None,
            })
            .collect::<Option<Vec<_>>>()?;
        let distinct: HashSet<VarId> = vars.iter().copied().collect();
        (distinct.len() == vars.len() && ks.iter().all(|k| distinct.contains(k))).then_some(vars)
    };
    // The gathered side may use the axes and its own variables, nothing
    // else defined in the definition.
    let mut own: HashSet<VarId> = ks.clone();
    for w in wheres {
        if let WhereEntry::Bind(v, _) = w {
            own.insert(*v);
        }
    }
    let uses = |q: &Expr| -> Option<HashSet<VarId>> {
        let mut mine = Vec::new();
        visit::defined_in(q, &mut mine);
        let mut used = HashSet::new();
        let mut exprs = vec![q];
        exprs.extend(cond);
        for w in wheres {
            match w {
                WhereEntry::Bind(_, v) | WhereEntry::Guard(v) => {
                    exprs.push(v);
                    visit::defined_in(v, &mut mine);
                }
            }
        }
        if let Some(c) = cond {
            visit::defined_in(c, &mut mine);
        }
        for x in exprs {
            visit_var_uses(x, &mut |v| {
                used.insert(v);
            });
        }
        let ok = used.iter().all(|v| !inside.contains(v) || axes.contains(v) || own.contains(v) || mine.contains(v));
        ok.then_some(used)
    };
    // Either factor may be the plain one; when both can, the one that
    // reads the definition's last axis, so the product is read in order.
    let first = plain(x).zip(uses(y)).map(|(pv, used)| (true, pv, used));
    let second = plain(y).zip(uses(x)).map(|(pv, used)| (false, pv, used));
    let last = axes.last().copied();
    let (p_first, p_vars, used) = match (first, second) {
        (Some(a), Some(b)) => {
            if last.is_some_and(|l| b.1.contains(&l) && !a.1.contains(&l)) {
                b
            } else {
                a
            }
        }
        (a, b) => a.or(b)?,
    };
    let (mut batch, mut rows, mut cols) = (Vec::new(), Vec::new(), Vec::new());
    for a in &def.axes {
        match (p_vars.contains(&a.index), used.contains(&a.index)) {
            (true, true) => batch.push(a.clone()),
            (true, false) => cols.push(a.clone()),
            (false, _) => rows.push(a.clone()),
        }
    }
    // A sum that is an elementwise product (no column or no row) gains
    // nothing from a GEMM.
    if rows.is_empty() || cols.is_empty() {
        return None;
    }
    // The longer of the two candidate innermost runs: the last row or the
    // last summed variable (see `run_length`); when they look alike, the
    // one the gathered operand's read has in its last index (its
    // contiguous axis).
    let q = if p_first { y } else { x };
    let k_outer = match (rows.last(), loops.last()) {
        // The gathered read's contiguous axis follows one of the two
        // alone (`x[n, i + r, j + s, c]`, channels last): that one goes
        // innermost, so packing copies runs of memory.
        (Some(r), Some(k)) if last_index_mentions(q, r.index) != last_index_mentions(q, k.index) => {
            last_index_mentions(q, r.index)
        }
        (Some(r), Some(k)) => match run_length(&r.extent, derived).cmp(&run_length(&k.end, derived)) {
            std::cmp::Ordering::Greater => true,
            std::cmp::Ordering::Less => false,
            std::cmp::Ordering::Equal => last_index_mentions(q, r.index),
        },
        _ => true,
    };
    // The definition's order `[lead.., cols.., rest..]`: rows, then every
    // column, then at least one row.
    let lead = def.axes.iter().position(|a| a.index == cols[0].index).unwrap_or(usize::MAX);
    // Only when the packed operand keeps its rows innermost (`k_outer`): a
    // kernel gradient (`k_outer` false: the sum's long run innermost) is
    // a small output better made as `[rows, cols]` and reordered.
    let in_order = batch.is_empty()
        && k_outer
        && lead < rows.len()
        && def.axes.iter().map(|a| a.index).eq(rows[..lead].iter().chain(&cols).chain(&rows[lead..]).map(|a| a.index));
    let plain_in_q = |v: VarId| {
        let mut found = false;
        reads_plainly(q, v, &mut found);
        found
    };
    // With the rows innermost in the packing, only when the variable leads
    // both operands (`dy[n, ..]`, `x[n, ..]`: an image) and the packed
    // copy is an expansion (an index of the gathered read mixes a row and
    // a summed variable, `x[n, i + r, j + s, c]`): a copy per image then
    // stays in cache, where a plain copy (`h[t - 1, b, k]`) is as large as
    // its source anyway and one product over everything is better.
    let image = |v: VarId| {
        p_vars.first() == Some(&v) && first_index_is(q, v) && mixes(q, &rows.iter().map(|a| a.index).collect(), &ks)
    };
    let split =
        batch.is_empty() && loops.len() >= 2 && plain_in_q(loops[0].index) && (!k_outer || image(loops[0].index));
    // The definition's axes are the rows then the columns (`y[n, i, j,
    // o]`, channels last), the summed run innermost in the packing: the
    // product per leading row is made `[rest, cols]`, in that order.
    let batch_lead = !batch.is_empty()
        && k_outer
        && rows.len() >= 2
        && def.axes.iter().map(|a| a.index).eq(rows[..1]
            .iter()
            .chain(&batch)
            .chain(&cols)
            .chain(&rows[1..])
            .map(|a| a.index));
    // The definition's axes are `[lead.., rows.., rest..]` with `lead` and
    // `rest` columns, both not empty (`y[n, o, i, j] = sum[c](k[o, c] *
    // x[n, c, i, j])`, a 1x1 convolution): per point of the leading
    // columns, the rows' matrix (shared) times that point's matrix of the
    // plain operand, one batched product written in the definition's own
    // order (see `pack`).
    let first_row = def.axes.iter().position(|a| a.index == rows[0].index).unwrap_or(0);
    let col_lead = (batch.is_empty()
        && !split
        && (1..cols.len()).contains(&first_row)
        && def.axes.iter().map(|a| a.index).eq(cols[..first_row]
            .iter()
            .chain(&rows)
            .chain(&cols[first_row..])
            .map(|a| a.index)))
    .then_some(first_row);
    let rows_first = batch.is_empty()
        && !k_outer
        && !split
        && rows.len() >= 2
        && def.axes.iter().map(|a| a.index).eq(rows.iter().chain(&cols).map(|a| a.index));
    Some(Contraction {
        path: path.to_vec(),
        elem,
        batch,
        rows,
        cols,
        p_first,
        k_outer,
        lead: in_order.then_some(lead),
        rows_first,
        batch_lead,
        split,
        col_lead,
    })
}

/// `def` reads the product that `reshape` defines at its own point, and
/// nothing else (the sum was its whole value, and the product is made in
/// its own order): the reshape, now defining `def`'s tensor.
fn product_is_value(f: &Function, reshape: &Stmt, def: &Stmt) -> Option<Stmt> {
    let (Stmt::Reshape { var, source, elem, dims }, Stmt::Tensor(def)) = (reshape, def) else { return None };
    let ExprKind::Read { tensor, indices, checked: false } = &def.body.kind else { return None };
    let own_point = indices.len() == def.axes.len()
        && indices.iter().zip(&def.axes).all(|(i, a)| matches!(i.kind, ExprKind::Var(v) if v == a.index));
    let same = *tensor == *var
        && *elem == def.elem
        && f.var(*var).ty == f.var(def.var).ty
        && def.domain_guards == 0
        && def.axes.iter().all(|a| a.start == Dim::zero())
        && dims.iter().eq(def.axes.iter().map(|a| &a.extent));
    (own_point && same).then(|| Stmt::Reshape { var: def.var, source: *source, elem: *elem, dims: dims.clone() })
}

/// Whether a read in `e` has the variable `v` alone as an index.
fn reads_plainly(e: &Expr, v: VarId, found: &mut bool) {
    if let ExprKind::Read { indices, .. } = &e.kind {
        *found |= indices.iter().any(|i| matches!(i.kind, ExprKind::Var(x) if x == v));
    }
    visit::for_each_child(e, &mut |c| reads_plainly(c, v, found));
}

/// The indices of the first read in `e` (depth first), if any.
fn first_read(e: &Expr) -> Option<&[Expr]> {
    if let ExprKind::Read { indices, .. } = &e.kind {
        return Some(indices);
    }
    let mut found = None;
    visit::for_each_child(e, &mut |c| {
        if found.is_none() {
            found = first_read(c);
        }
    });
    found
}

/// Whether the first read in `e` has `v` alone as its first index.
fn first_index_is(e: &Expr, v: VarId) -> bool {
    first_read(e).and_then(|ix| ix.first()).is_some_and(|i| matches!(i.kind, ExprKind::Var(x) if x == v))
}

/// Whether an index of a read in `e` mentions both a variable of `a` and
/// one of `b`.
fn mixes(e: &Expr, a: &HashSet<VarId>, b: &HashSet<VarId>) -> bool {
    if let ExprKind::Read { indices, .. } = &e.kind {
        let mixed = indices.iter().any(|i| {
            let (mut in_a, mut in_b) = (false, false);
            visit_var_uses(i, &mut |v| {
                in_a |= a.contains(&v);
                in_b |= b.contains(&v);
            });
            in_a && in_b
        });
        if mixed {
            return true;
        }
    }
    let mut any = false;
    visit::for_each_child(e, &mut |c| any = any || mixes(c, a, b));
    any
}

/// Whether the last index of the first read in `e` mentions `v`.
fn last_index_mentions(e: &Expr, v: VarId) -> bool {
    let mut found = false;
    if let Some(last) = first_read(e).and_then(|ix| ix.last()) {
        visit_var_uses(last, &mut |u| found |= u == v);
    }
    found
}

/// How long a run of `extent` is likely to be, from its form alone: a
/// constant (a kernel's 3) is short, a dimension symbol (a parameter's
/// length) longer, and an extent computed from others (`H - KH + 1`, or a
/// variable `derived` holds such an extent) the longest: an output's size
/// rather than a kernel's.
fn run_length(extent: &Dim, derived: &HashSet<VarId>) -> u8 {
    if extent.as_constant().is_some() {
        0
    } else if extent.as_var().is_some_and(|v| !derived.contains(&VarId(v.0))) {
        1
    } else {
        2
    }
}

/// The variable `v` of an index `v + c` (`c` free of the variables
/// defined inside the definition).
fn offset_var(i: &Expr, inside: &HashSet<VarId>) -> Option<VarId> {
    match Affine::of(i, &|v| inside.contains(&v))?.terms[..] {
        [(v, 1)] => Some(v),
        _ => None,
    }
}

/// Rewrites the sums reached from `def`'s value through arithmetic whose
/// loops start above zero (`sum[t in 1..T](..)`) over `t' in 0..T - 1`,
/// reading `t' + 1` where they read `t`, and folds the constants of the
/// indices this makes (`t' + 1 - 1` is `t'`). Whether any changed.
fn shift_sums(f: &mut Function, def: &mut TensorDef) -> bool {
    fn visit(f: &mut Function, e: &mut Expr) -> bool {
        match &mut e.kind {
            ExprKind::Reduce { op: RedOp::Sum, loops, wheres, body } if wheres.is_empty() => {
                let mut changed = false;
                for l in loops.iter_mut() {
                    if l.start.as_constant() == Some(0) {
                        continue;
                    }
                    let fresh = f.add_var(&f.var(l.index).source_name.clone(), Repr::Scalar(ScalarKind::I64));
                    let at = Expr {
                        kind: ExprKind::Binary(
                            BinOp::Add,
                            Box::new(var(fresh)),
                            Box::new(Expr { kind: ExprKind::Dim(l.start.clone()), ty: Repr::Scalar(ScalarKind::I64) }),
                        ),
                        ty: Repr::Scalar(ScalarKind::I64),
                    };
                    super::hoist::substitute_var(body, l.index, &at);
                    *l = Loop { index: fresh, start: Dim::zero(), end: Dim::max(&l.end.sub(&l.start), &Dim::zero()) };
                    changed = true;
                }
                if changed {
                    fold_indices(body);
                }
                changed
            }
            ExprKind::Binary(..) | ExprKind::Unary(..) | ExprKind::Cast(..) | ExprKind::Intrinsic(..) => {
                let mut changed = false;
                visit::for_each_child_mut(e, &mut |c| changed |= visit(f, c));
                changed
            }
            _ => false,
        }
    }
    let changed = visit(f, &mut def.body);
    if changed {
        recost(def);
    }
    changed
}

/// Folds each read index of the form `v + c1 - c2 ..` (integer literals and
/// constant dimensions) into `v + c` (or `v`).
fn fold_indices(e: &mut Expr) {
    if let ExprKind::Read { indices, .. } = &mut e.kind {
        for i in indices.iter_mut() {
            if let Some((v, c)) = var_plus_const(i) {
                let i64t = Repr::Scalar(ScalarKind::I64);
                *i = if c == 0 {
                    var(v)
                } else {
                    let lit = Expr { kind: ExprKind::Lit(Literal::Int(i128::from(c).abs())), ty: i64t.clone() };
                    let op = if c > 0 { BinOp::Add } else { BinOp::Sub };
                    Expr { kind: ExprKind::Binary(op, Box::new(var(v)), Box::new(lit)), ty: i64t }
                };
            }
        }
    }
    visit::for_each_child_mut(e, &mut |c| fold_indices(c));
}

/// `Some((v, c))` when `e` is `v` plus a constant.
fn var_plus_const(e: &Expr) -> Option<(VarId, i64)> {
    Affine::of(e, &|_| true)?.var_plus_const()
}

pub(super) fn product(dims: impl Iterator<Item = Dim>) -> Dim {
    dims.fold(Dim::one(), |p, d| p.mul(&d))
}

fn var(v: VarId) -> Expr {
    Expr { kind: ExprKind::Var(v), ty: Repr::Scalar(ScalarKind::I64) }
}

fn read(tensor: VarId, indices: Vec<VarId>, elem: ScalarKind) -> Expr {
    Expr {
        kind: ExprKind::Read { tensor, indices: indices.into_iter().map(var).collect(), checked: false },
        ty: Repr::Scalar(elem),
    }
}

/// Rewrites `def`'s sum as in the module docs; returns the statements that
/// go before `def`.
fn pack(f: &mut Function, def: &mut TensorDef, c: Contraction, host: bool) -> (Vec<Stmt>, Option<Vec<Stmt>>) {
    let i64_ty = Repr::Scalar(ScalarKind::I64);
    let elem = c.elem;
    let base = f.var(def.var).source_name.clone();
    let Some(sum) = replace_at(&mut def.body, &c.path, &mut Some(Expr::unit())) else { return (Vec::new(), None) };
    let ExprKind::Reduce { loops, wheres, body, .. } = sum.kind else { return (Vec::new(), None) };
    let Some((x, y, cond)) = sum_factors(&body).map(|(x, y, c)| (x.clone(), y.clone(), c.cloned())) else {
        return (Vec::new(), None);
    };
    let (p, q) = if c.p_first { (x, y) } else { (y, x) };
    let guarded = cond.is_some() || wheres.iter().any(|w| matches!(w, WhereEntry::Guard(_)));

    let fresh = |f: &mut Function, axes: &[VarId]| -> HashMap<VarId, VarId> {
        axes.iter().map(|&a| (a, f.add_var(&f.var(a).source_name.clone(), i64_ty.clone()))).collect()
    };
    let ks: Vec<VarId> = loops.iter().map(|l| l.index).collect();
    let k_ext: Vec<Dim> = loops.iter().map(|l| l.end.clone()).collect();
    let ids = |axes: &[Axis]| axes.iter().map(|a| a.index).collect::<Vec<_>>();
    let (batch, rows, cols) = (ids(&c.batch), ids(&c.rows), ids(&c.cols));
    let exts = |axes: &[Axis]| axes.iter().map(|a| a.extent.clone()).collect::<Vec<_>>();
    let (b_ext, r_ext, c_ext) = (exts(&c.batch), exts(&c.rows), exts(&c.cols));
    let mk_axes = |vars: Vec<VarId>, exts: Vec<Dim>| -> Vec<Axis> {
        vars.into_iter().zip(exts).map(|(index, extent)| Axis { index, start: Dim::zero(), extent }).collect()
    };

    // The gathered operand, over fresh copies of the definition's axes and
    // the sum's own variables (the sum itself is gone).
    let outer: Vec<VarId> = batch.iter().chain(&rows).copied().collect();
    let to_q = fresh(f, &outer);
    let mut q_body = match cond {
        Some(cond) => {
            // A padded read: the guard keeps it in bounds.
            let mut q = q;
            let ranges: HashMap<VarId, Dim> = c
                .batch
                .iter()
                .chain(&c.rows)
                .map(|a| (a.index, a.extent.clone()))
                .chain(loops.iter().map(|l| (l.index, l.end.clone())))
                .collect();
            uncheck_guarded(f, &ranges, &cond, &mut q);
            let zero = Expr { kind: ExprKind::Lit(Literal::Float("0.0".into())), ty: Repr::Scalar(elem) };
            Expr {
                kind: ExprKind::If { cond: Box::new(cond), then: Box::new(q), els: Box::new(zero) },
                ty: Repr::Scalar(elem),
            }
        }
        None => q,
    };
    // The sum's terms were computed only at points of the definition:
    // an operand that may fail (a checked read, a call) is not computed
    // when the other side has no points.
    let mut q_wheres = wheres;
    if visit::may_fail(&q_body)
        || q_wheres.iter().any(|w| matches!(w, WhereEntry::Bind(_, v) | WhereEntry::Guard(v) if visit::may_fail(v)))
    {
        q_wheres.insert(0, nonempty(c_ext.iter().cloned()));
    }
    if !q_wheres.is_empty() {
        q_body = Expr { kind: ExprKind::Guarded { wheres: q_wheres, body: Box::new(q_body) }, ty: Repr::Scalar(elem) };
    }
    let q_point = q_body.clone();
    rename(&mut q_body, &to_q);
    let q_var = f.add_var(&format!("{base}_cols"), Repr::Tensor(elem, outer.len() + ks.len()));
    // The packed axes: the summed ones first when that puts a longer run
    // innermost (see `k_outer`).
    let k_outer = c.k_outer;
    let q_axes = if k_outer {
        mk_axes(
            batch.iter().map(|v| to_q[v]).chain(ks.iter().copied()).chain(rows.iter().map(|v| to_q[v])).collect(),
            b_ext.iter().chain(&k_ext).chain(&r_ext).cloned().collect(),
        )
    } else {
        mk_axes(
            outer.iter().map(|v| to_q[v]).chain(ks.iter().copied()).collect(),
            b_ext.iter().chain(&r_ext).chain(&k_ext).cloned().collect(),
        )
    };
    let q_def = TensorDef::new(q_var, elem, q_axes, q_body);

    // The plain operand, over fresh variables. When guards kept its read in
    // bounds before, they are no longer around it: each index is checked
    // against the operand's length instead (0 outside).
    let mut p_outer: Vec<VarId> = batch.iter().chain(&ks).chain(&cols).copied().collect();
    // A product per image of a plain operand read `[batch.., cols..,
    // ks..]` (a kernel gradient's `dy[n, o, i, j]`) copies it in that
    // order, contiguously, and the GEMM reads the copy transposed.
    let per_image =
        host && c.lead.is_none() && c.batch.len() == 1 && def.axes.first().map(|a| a.index) == batch.first().copied();
    let cols_first =
        per_image && !c.rows_first && !c.batch_lead && reads_in_order(&p, batch.iter().chain(&cols).chain(&ks));
    if cols_first {
        p_outer = batch.iter().chain(&cols).chain(&ks).copied().collect();
    }
    if let Some(l) = c.col_lead {
        p_outer = cols[..l].iter().chain(&ks).chain(&cols[l..]).copied().collect();
    }
    let to_p = fresh(f, &p_outer);
    let mut p_body = p;
    rename(&mut p_body, &to_p);
    if guarded {
        if let ExprKind::Read { tensor, indices, checked: false } = &p_body.kind {
            let mut guards = Vec::new();
            for (axis, i) in indices.iter().enumerate() {
                let len = Expr { kind: ExprKind::Len { tensor: *tensor, axis }, ty: i64_ty.clone() };
                let zero = Expr { kind: ExprKind::Lit(Literal::Int(0)), ty: i64_ty.clone() };
                let bool_ty = Repr::Scalar(ScalarKind::Bool);
                let lo = Expr {
                    kind: ExprKind::Binary(BinOp::Ge, Box::new(i.clone()), Box::new(zero)),
                    ty: bool_ty.clone(),
                };
                let hi =
                    Expr { kind: ExprKind::Binary(BinOp::Lt, Box::new(i.clone()), Box::new(len)), ty: bool_ty.clone() };
                guards.push(WhereEntry::Guard(Expr {
                    kind: ExprKind::Binary(BinOp::And, Box::new(lo), Box::new(hi)),
                    ty: bool_ty,
                }));
            }
            p_body =
                Expr { kind: ExprKind::Guarded { wheres: guards, body: Box::new(p_body) }, ty: Repr::Scalar(elem) };
        }
    }
    if visit::may_fail(&p_body) {
        p_body = Expr {
            kind: ExprKind::Guarded { wheres: vec![nonempty(r_ext.iter().cloned())], body: Box::new(p_body) },
            ty: Repr::Scalar(elem),
        };
    }
    let p_var = f.add_var(&format!("{base}_kern"), Repr::Tensor(elem, p_outer.len()));
    let p_axes = mk_axes(
        p_outer.iter().map(|v| to_p[v]).collect(),
        if let Some(l) = c.col_lead {
            c_ext[..l].iter().chain(&k_ext).chain(&c_ext[l..]).cloned().collect()
        } else if cols_first {
            b_ext.iter().chain(&c_ext).chain(&k_ext).cloned().collect()
        } else {
            b_ext.iter().chain(&k_ext).chain(&c_ext).cloned().collect()
        },
    );
    let p_def = TensorDef::new(p_var, elem, p_axes, p_body);

    // The matrices, their product, and the product over the axes again.
    let (m, n, k) = (product(r_ext.iter().cloned()), product(c_ext.iter().cloned()), product(k_ext.iter().cloned()));
    if host && (c.lead == Some(1) || c.rows_first) {
        let pm = f.add_var(&format!("{base}_kern_m"), Repr::Tensor(elem, 2));
        let prelude = per_row(f, def, &c, q_point, &loops, Plain::Shared(pm), [&k, &n]);
        let kern = Stmt::Reshape { var: pm, source: p_var, elem, dims: vec![k, n] };
        return (vec![Stmt::Tensor(p_def), kern], Some(prelude));
    }
    if host && c.batch_lead {
        // Per image, a product per group: the kernel's matrices (shared by
        // every image) times the image's packed columns.
        let pm = f.add_var(&format!("{base}_kern_m"), Repr::Tensor(elem, 3));
        let bb = product(b_ext.iter().cloned());
        let prelude = per_row(f, def, &c, q_point, &loops, Plain::Batched(pm, bb.clone()), [&k, &n]);
        let kern = Stmt::Reshape { var: pm, source: p_var, elem, dims: vec![bb, k, n] };
        return (vec![Stmt::Tensor(p_def), kern], Some(prelude));
    }
    if per_image {
        // One batch axis, the definition's first: per row, its packed
        // columns times its own matrix of the plain operand.
        let pm = f.add_var(&format!("{base}_kern_m"), Repr::Tensor(elem, 3));
        let bb = b_ext[0].clone();
        let dims = if cols_first { vec![bb, n.clone(), k.clone()] } else { vec![bb, k.clone(), n.clone()] };
        let prelude = per_row(f, def, &c, q_point, &loops, Plain::PerRow(pm, cols_first), [&k, &n]);
        let kern = Stmt::Reshape { var: pm, source: p_var, elem, dims };
        return (vec![Stmt::Tensor(p_def), kern], Some(prelude));
    }
    let q_dims = |outer: Vec<Dim>, rows: Dim| -> Vec<Dim> {
        let mut d = outer;
        d.extend(if k_outer { [k.clone(), rows] } else { [rows, k.clone()] });
        d
    };
    // Each operand: its shape as a matrix (or a stack of them) and which of
    // its axes are the batch (when it has one), row or column and
    // contracted ones, as `Gemm` lists them; `true` for the packed columns.
    type Operand = (bool, Vec<Dim>, Vec<usize>);
    let (gb, mn, left, right, at): (Option<Dim>, [Dim; 2], Operand, Operand, Vec<VarId>) = match (c.lead, c.col_lead) {
        // `y[lead.., rows.., rest..]`, `lead` and `rest` columns: per point
        // of `lead`, the packed rows (shared: `[rows, ks]`, or `[ks, rows]`
        // with `k_outer`) times that point's `[ks, rest]` matrix of the
        // plain operand (`[lead.., ks.., rest..]`), written in the
        // definition's own order.
        (_, Some(l)) => {
            let gb = product(c_ext[..l].iter().cloned());
            let nr = product(c_ext[l..].iter().cloned());
            let left = (true, q_dims(Vec::new(), m.clone()), if k_outer { vec![1, 0] } else { vec![0, 1] });
            let right = (false, vec![gb.clone(), k.clone(), nr.clone()], vec![0, 1, 2]);
            let at = def.axes.iter().map(|a| a.index).collect();
            (Some(gb), [m.clone(), nr], left, right, at)
        }
        // `y[lead.., cols.., rest..]`: per point of the leading rows, the
        // kernel (shared) times that point's packed columns, written in
        // the definition's own order: no pass reorders the product. The
        // columns keep the `[ks.., rows..]` layout (`k_outer`; so a
        // kernel gradient's packing of the same input is the same tensor),
        // read per lead point as a `[ks, rest]` matrix.
        (Some(lead), None) => {
            let (l_ext, rest_ext) = (r_ext[..lead].to_vec(), r_ext[lead..].to_vec());
            let nr = product(rest_ext.iter().cloned());
            let gb = (lead > 0).then(|| product(l_ext.iter().cloned()));
            let (q_dims, q_axes) = match &gb {
                Some(l) => (vec![k.clone(), l.clone(), nr.clone()], vec![1, 0, 2]),
                None => (vec![k.clone(), nr.clone()], vec![0, 1]),
            };
            let right = (true, q_dims, q_axes);
            let left = (false, vec![k.clone(), n.clone()], vec![1, 0]);
            let at = rows[..lead].iter().chain(&cols).chain(&rows[lead..]).copied().collect();
            (gb, [n.clone(), nr], left, right, at)
        }
        (None, None) => {
            let batched = !batch.is_empty();
            let gb = batched.then(|| product(b_ext.iter().cloned()));
            let outer: Vec<Dim> = gb.iter().cloned().collect();
            let q_axes = match (k_outer, batched) {
                (true, false) => vec![1, 0],
                (true, true) => vec![0, 2, 1],
                (false, false) => vec![0, 1],
                (false, true) => vec![0, 1, 2],
            };
            let left = (true, q_dims(outer.clone(), m.clone()), q_axes);
            let p_dims: Vec<Dim> = outer.into_iter().chain([k.clone(), n.clone()]).collect();
            let right = (false, p_dims, (0..2 + usize::from(batched)).collect());
            let at = batch.iter().chain(&rows).chain(&cols).copied().collect();
            (gb, [m.clone(), n.clone()], left, right, at)
        }
    };
    let (q_dims, p_dims) = if left.0 { (left.1.clone(), right.1.clone()) } else { (right.1.clone(), left.1.clone()) };
    let qm = f.add_var(&format!("{base}_cols_m"), Repr::Tensor(elem, q_dims.len()));
    let pm = f.add_var(&format!("{base}_kern_m"), Repr::Tensor(elem, p_dims.len()));
    let var_of = |o: &Operand| if o.0 { qm } else { pm };
    let (left, right) = ((var_of(&left), left.1, left.2), (var_of(&right), right.1, right.2));
    let batched = gb.is_some();
    let rank = 2 + usize::from(batched);
    let ym = f.add_var(&format!("{base}_prod_m"), Repr::Tensor(elem, rank));
    let yp = f.add_var(&format!("{base}_prod"), Repr::Tensor(elem, at.len()));
    let [gm, gn] = mn;
    let gemm = gemm_of(f, elem, ym, gb, [gm, gn, k.clone()], (left.0, left.2.clone()), (right.0, right.2.clone()));

    // The definition reads the product at its point.
    let ext_of: HashMap<VarId, Dim> =
        c.batch.iter().chain(&c.rows).chain(&c.cols).map(|a| (a.index, a.extent.clone())).collect();
    let yp_dims: Vec<Dim> = at.iter().map(|v| ext_of[v].clone()).collect();
    let mut with = Some(read(yp, at, elem));
    replace_at(&mut def.body, &c.path, &mut with);
    recost(def);

    (
        vec![
            Stmt::Tensor(q_def),
            Stmt::Tensor(p_def),
            Stmt::Reshape { var: qm, source: q_var, elem, dims: q_dims },
            Stmt::Reshape { var: pm, source: p_var, elem, dims: p_dims },
            Stmt::Gemm(gemm),
            Stmt::Reshape { var: yp, source: ym, elem, dims: yp_dims },
        ],
        None,
    )
}

/// Where a row's matrix of the plain operand (`[ks, cols]`) comes from.
enum Plain {
    /// One matrix every row shares (a convolution's kernel).
    Shared(VarId),
    /// A stack of matrices every row shares, `[batch, ks, cols]` with the
    /// batch's extent (a grouped convolution's kernels, a group each).
    Batched(VarId, Dim),
    /// A matrix per row, `pm[b]` of a `[rows, ks, cols]` tensor (a kernel
    /// gradient's output gradient, image `b`), or of a `[rows, cols, ks]`
    /// one when the flag is set (read transposed).
    PerRow(VarId, bool),
}

/// The product of `def` at one point of its first axis, as the prelude of
/// a row definition, which then reads it at its own point:
/// - with a `Shared` plain operand, the first axis leads the rows
///   (`y[n, cols.., rest..]`): the kernel matrix times the point's packed
///   columns, as `[cols.., rest..]`; or, when the definition's axes are
///   `[n, rest.., cols..]` (`rows_first`, channels last), the point's
///   packed columns times the kernel matrix, as `[rest.., cols..]`;
/// - with a `PerRow` one, the first axis is the product's batch axis
///   (both operands read it; a kernel gradient's image, after `split`):
///   the point's packed columns times the point's matrix, as `[rows..,
///   cols..]`.
///
/// The packed columns are `q` over fresh copies of the other rows (the
/// first axis is the row's own index), laid out `[ks.., rows..]` with
/// `k_outer`, else `[rows.., ks..]`. They are one image's (a megabyte for
/// a 32-channel 32x32 image and a 3x3 kernel): still in cache when the
/// product reads them, where the whole batch's went to memory and back.
fn per_row(
    f: &mut Function,
    def: &mut TensorDef,
    c: &Contraction,
    q: Expr,
    loops: &[Loop],
    plain: Plain,
    [k, n]: [&Dim; 2],
) -> Vec<Stmt> {
    let (elem, i64_ty) = (c.elem, Repr::Scalar(ScalarKind::I64));
    let base = f.var(def.var).source_name.clone();
    let shared = matches!(plain, Plain::Shared(_) | Plain::Batched(..));
    let rows = if shared { &c.rows[1..] } else { &c.rows[..] };
    let batch: &[Axis] = if matches!(plain, Plain::Batched(..)) { &c.batch } else { &[] };
    let to_r: HashMap<VarId, VarId> = batch
        .iter()
        .chain(rows)
        .map(|a| (a.index, f.add_var(&f.var(a.index).source_name.clone(), i64_ty.clone())))
        .collect();
    let mut body = q;
    rename(&mut body, &to_r);
    let fresh_axes = |axes: &[Axis]| -> Vec<Axis> {
        axes.iter().map(|a| Axis { index: to_r[&a.index], start: Dim::zero(), extent: a.extent.clone() }).collect()
    };
    let (row_axes, b_axes) = (fresh_axes(rows), fresh_axes(batch));
    let k_axes: Vec<Axis> =
        loops.iter().map(|l| Axis { index: l.index, start: Dim::zero(), extent: l.end.clone() }).collect();
    let m = product(rows.iter().map(|a| a.extent.clone()));
    // The columns' axes as `Gemm` lists a left operand's (row, contracted).
    let (axes, q_dims, q_left): (Vec<Axis>, _, _) = match &plain {
        Plain::Batched(_, bb) => (
            b_axes.into_iter().chain(k_axes).chain(row_axes).collect(),
            vec![bb.clone(), k.clone(), m.clone()],
            vec![0, 2, 1],
        ),
        _ if c.k_outer => (k_axes.into_iter().chain(row_axes).collect(), vec![k.clone(), m.clone()], vec![1, 0]),
        _ => (row_axes.into_iter().chain(k_axes).collect(), vec![m.clone(), k.clone()], vec![0, 1]),
    };
    let qr = f.add_var(&format!("{base}_cols"), Repr::Tensor(elem, axes.len()));
    let q_def = TensorDef::new(qr, elem, axes, body);
    let rank = q_dims.len();
    let qm = f.add_var(&format!("{base}_cols_m"), Repr::Tensor(elem, rank));
    let mut prelude = vec![Stmt::Tensor(q_def), Stmt::Reshape { var: qm, source: qr, elem, dims: q_dims }];
    let pm = match &plain {
        Plain::Shared(pm) | Plain::Batched(pm, _) => *pm,
        Plain::PerRow(all, _) => {
            let pb = f.add_var(&format!("{base}_kern_row"), Repr::Tensor(elem, 2));
            let row = def.axes[0].index;
            let value =
                Expr { kind: ExprKind::View { tensor: *all, indices: vec![var(row)] }, ty: Repr::Tensor(elem, 2) };
            prelude.push(Stmt::Let { var: pb, value });
            pb
        }
    };
    let ym = f.add_var(&format!("{base}_prod_m"), Repr::Tensor(elem, rank));
    let yp = f.add_var(&format!("{base}_prod"), Repr::Tensor(elem, batch.len() + rows.len() + c.cols.len()));
    let (gemm, order): (Gemm, Vec<&Axis>) = if let Plain::Batched(_, bb) = &plain {
        // Per group, the kernel's matrix (transposed) times the columns.
        let g =
            gemm_of(f, elem, ym, Some(bb.clone()), [n.clone(), m, k.clone()], (pm, vec![0, 2, 1]), (qm, vec![0, 1, 2]));
        (g, batch.iter().chain(&c.cols).chain(rows).collect())
    } else if shared && !c.rows_first {
        // As the right operand, the columns' axes swap roles.
        let q_right = q_left.into_iter().rev().collect();
        let g = gemm_of(f, elem, ym, None, [n.clone(), m, k.clone()], (pm, vec![1, 0]), (qm, q_right));
        (g, c.cols.iter().chain(rows).collect())
    } else {
        let p_axes = if matches!(plain, Plain::PerRow(_, true)) { vec![1, 0] } else { vec![0, 1] };
        let g = gemm_of(f, elem, ym, None, [m, n.clone(), k.clone()], (qm, q_left), (pm, p_axes));
        (g, rows.iter().chain(&c.cols).collect())
    };
    let dims = read_row_product(def, c, yp, &order, gemm.reference.cost_per_point);
    prelude.push(Stmt::Gemm(gemm));
    prelude.push(Stmt::Reshape { var: yp, source: ym, elem, dims });
    prelude
}

/// The GEMM `out[b?, m, n] = sum[k](a[..] * b[..])` with its reference
/// loop nest: each operand's `axes` list which of its axes the batch (when
/// it has one: three entries), its row or column, and the contracted index
/// take, as `Gemm` lists them (an operand of a batched product with two
/// entries is shared by every batch).
pub(super) fn gemm_of(
    f: &mut Function,
    elem: ScalarKind,
    out: VarId,
    batch: Option<Dim>,
    [m, n, k]: [Dim; 3],
    (a, a_axes): (VarId, Vec<usize>),
    (b, b_axes): (VarId, Vec<usize>),
) -> Gemm {
    let i64_ty = Repr::Scalar(ScalarKind::I64);
    let bv = batch.as_ref().map(|_| f.add_var("b", i64_ty.clone()));
    let (mv, nv, kv) = (f.add_var("m", i64_ty.clone()), f.add_var("n", i64_ty.clone()), f.add_var("k", i64_ty));
    // The operand read at the reference's point: `axes[r]` is the axis that
    // role `r` indexes.
    let operand = |var: VarId, axes: &[usize], roles: [VarId; 2]| -> Expr {
        let roles: Vec<VarId> = if axes.len() == 3 { bv.into_iter().chain(roles).collect() } else { roles.to_vec() };
        let mut idx = vec![kv; axes.len()];
        for (&axis, role) in axes.iter().zip(roles) {
            idx[axis] = role;
        }
        read(var, idx, elem)
    };
    let mul = Expr {
        kind: ExprKind::Binary(
            BinOp::Mul,
            Box::new(operand(a, &a_axes, [mv, kv])),
            Box::new(operand(b, &b_axes, [kv, nv])),
        ),
        ty: Repr::Scalar(elem),
    };
    let body = Expr {
        kind: ExprKind::Reduce {
            op: RedOp::Sum,
            loops: vec![Loop { index: kv, start: Dim::zero(), end: k.clone() }],
            wheres: Vec::new(),
            body: Box::new(mul),
        },
        ty: Repr::Scalar(elem),
    };
    let axes = bv
        .zip(batch.clone())
        .into_iter()
        .chain([(mv, m.clone()), (nv, n.clone())])
        .map(|(index, extent)| Axis { index, start: Dim::zero(), extent })
        .collect();
    let reference = TensorDef::new(out, elem, axes, body);
    Gemm { out, elem, batch, m, n, k, a, a_axes, b, b_axes, scale: None, slice: None, reference }
}

/// Makes `def` read its row's product `yp` (axes `order`) in place of the
/// sum, with the product's work counted as the definition's, as the sum's
/// was; the product's dimensions.
fn read_row_product(def: &mut TensorDef, c: &Contraction, yp: VarId, order: &[&Axis], cost: u64) -> Vec<Dim> {
    let mut with = Some(read(yp, order.iter().map(|a| a.index).collect(), c.elem));
    replace_at(&mut def.body, &c.path, &mut with);
    recost(def);
    def.cost_per_point = def.cost_per_point.saturating_add(cost);
    order.iter().map(|a| a.extent.clone()).collect()
}

/// Splits the sum of `def` over its first variable `b`, which both
/// operands read plainly (see `Contraction::split`): `def = .. sum[b,
/// ks..](body) ..` becomes `{def}_part[b, axes..] = sum[ks..](body)`
/// (returned, to go before `def`; a product per `b`, which `per_row`
/// makes) and `def = .. sum[b'](part[b', axes..]) ..`. A kernel gradient's
/// sum over the images then multiplies one image's packed columns at a
/// time, where a single product over all of them packed every image first.
fn split(f: &mut Function, def: &mut TensorDef, c: &Contraction) -> Option<TensorDef> {
    let i64_ty = Repr::Scalar(ScalarKind::I64);
    let sum = replace_at(&mut def.body, &c.path, &mut Some(Expr::unit()))?;
    let ExprKind::Reduce { op: RedOp::Sum, loops, wheres, body } = &sum.kind else {
        replace_at(&mut def.body, &c.path, &mut Some(sum));
        return None;
    };
    let Some((first, rest)) = loops.split_first() else {
        replace_at(&mut def.body, &c.path, &mut Some(sum.clone()));
        return None;
    };
    let to_a: HashMap<VarId, VarId> =
        def.axes.iter().map(|a| (a.index, f.add_var(&f.var(a.index).source_name.clone(), i64_ty.clone()))).collect();
    let mut inner = Expr {
        kind: ExprKind::Reduce { op: RedOp::Sum, loops: rest.to_vec(), wheres: wheres.clone(), body: body.clone() },
        ty: sum.ty.clone(),
    };
    rename(&mut inner, &to_a);
    let axes: Vec<Axis> = std::iter::once(Axis { index: first.index, start: Dim::zero(), extent: first.end.clone() })
        .chain(def.axes.iter().map(|a| Axis {
            index: to_a[&a.index],
            start: a.start.clone(),
            extent: a.extent.clone(),
        }))
        .collect();
    let name = format!("{}_part", f.var(def.var).source_name);
    let part = f.add_var(&name, Repr::Tensor(c.elem, axes.len()));
    let part_def = TensorDef::new(part, c.elem, axes, inner);
    let b = f.add_var(&f.var(first.index).source_name.clone(), i64_ty);
    let at: Vec<VarId> = std::iter::once(b).chain(def.axes.iter().map(|a| a.index)).collect();
    let total = Expr {
        kind: ExprKind::Reduce {
            op: RedOp::Sum,
            loops: vec![Loop { index: b, start: Dim::zero(), end: first.end.clone() }],
            wheres: Vec::new(),
            body: Box::new(read(part, at, c.elem)),
        },
        ty: sum.ty.clone(),
    };
    replace_at(&mut def.body, &c.path, &mut Some(total));
    recost(def);
    Some(part_def)
}

/// Marks the checked reads of `e` whose every index `i` is in bounds: the
/// condition `cond` (a conjunction) bounds it by `0 <= i` and `i < n`, or
/// it is a variable of `ranges` (which run from 0) whose extent is `n`,
/// with `n` the axis's length: the tensor's `len`, or a dimension bound to
/// (or checked equal to) that axis of a parameter at entry.
// FIXME: this is the bounds prover's job (`analysis::ranges`), which
// narrows by guards on index variables but not on where-bound indices
// (`ih = i + r - 1`); once it does, the padded read arrives unchecked and
// this goes.
fn uncheck_guarded(f: &Function, ranges: &HashMap<VarId, Dim>, cond: &Expr, e: &mut Expr) {
    let mut facts = Vec::new();
    visit::conjuncts(cond, &mut facts);
    let lower = |i: &Expr| {
        facts.iter().any(|c| match &c.kind {
            ExprKind::Binary(BinOp::Ge, x, z) => **x == *i && is_int_zero(z),
            ExprKind::Binary(BinOp::Le, z, x) => **x == *i && is_int_zero(z),
            _ => false,
        })
    };
    let upper = |i: &Expr, tensor: VarId, axis: usize| {
        facts.iter().any(|c| match &c.kind {
            ExprKind::Binary(BinOp::Lt, x, n) => **x == *i && is_length(f, n, tensor, axis),
            ExprKind::Binary(BinOp::Gt, n, x) => **x == *i && is_length(f, n, tensor, axis),
            _ => false,
        })
    };
    let ranged = |i: &Expr, tensor: VarId, axis: usize| match &i.kind {
        ExprKind::Var(v) => ranges.get(v).is_some_and(|d| {
            let n = Expr { kind: ExprKind::Dim(d.clone()), ty: Repr::Scalar(ScalarKind::I64) };
            is_length(f, &n, tensor, axis)
        }),
        _ => false,
    };
    if let ExprKind::Read { tensor, indices, checked } = &mut e.kind {
        let proven = |(axis, i): (usize, &Expr)| ranged(i, *tensor, axis) || (lower(i) && upper(i, *tensor, axis));
        if *checked && indices.iter().enumerate().all(proven) {
            *checked = false;
        }
        return;
    }
    // Only through expressions that bind nothing, so an index means the
    // same here as in the condition.
    if matches!(e.kind, ExprKind::Binary(..) | ExprKind::Unary(..) | ExprKind::Cast(..) | ExprKind::Intrinsic(..)) {
        visit::for_each_child_mut(e, &mut |c| uncheck_guarded(f, ranges, cond, c));
    }
}

fn is_int_zero(e: &Expr) -> bool {
    matches!(e.kind, ExprKind::Lit(Literal::Int(0)))
}

/// Whether `e` is a read whose indices are exactly the variables `vars`,
/// in order.
fn reads_in_order<'a>(e: &Expr, vars: impl Iterator<Item = &'a VarId>) -> bool {
    let ExprKind::Read { indices, .. } = &e.kind else { return false };
    let vars: Vec<VarId> = vars.copied().collect();
    indices.len() == vars.len() && indices.iter().zip(&vars).all(|(i, v)| matches!(i.kind, ExprKind::Var(x) if x == *v))
}

/// Whether `n` is the length of axis `axis` of `tensor`.
fn is_length(f: &Function, n: &Expr, tensor: VarId, axis: usize) -> bool {
    let d = match &n.kind {
        ExprKind::Len { tensor: t, axis: a } => return *t == tensor && *a == axis,
        ExprKind::Var(v) => Dim::var(DimVar(v.0)),
        ExprKind::Dim(d) => d.clone(),
        _ => return false,
    };
    f.params.contains(&tensor)
        && f.entry.iter().any(|c| match c {
            EntryCheck::BindDim { dim, param, path, axis: a } => {
                *param == tensor && path.is_empty() && *a == axis && d == Dim::var(DimVar(dim.0))
            }
            EntryCheck::CheckDim { param, path, axis: a, expected, .. } => {
                *param == tensor && path.is_empty() && *a == axis && d == *expected
            }
        })
}

/// The guard `0 < product of extents`.
fn nonempty(extents: impl Iterator<Item = Dim>) -> WhereEntry {
    let n = Expr { kind: ExprKind::Dim(product(extents)), ty: Repr::Scalar(ScalarKind::I64) };
    let zero = Expr { kind: ExprKind::Lit(Literal::Int(0)), ty: Repr::Scalar(ScalarKind::I64) };
    WhereEntry::Guard(Expr {
        kind: ExprKind::Binary(BinOp::Gt, Box::new(n), Box::new(zero)),
        ty: Repr::Scalar(ScalarKind::Bool),
    })
}
