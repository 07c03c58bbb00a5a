//! Transposed convolutions as a product, then a shifted sum ("col2im").
//!
//! The gradient of a convolution with respect to its input reads the
//! output gradient shifted backwards by the kernel's offsets:
//!
//! ```text
//! d_x[n, c, p, q] = sum[o, r, s](d_y_pad[n, o, p - r + 2, q - s + 2] * k[o, c, r, s])
//! ```
//!
//! `pack` would copy `d_y_pad` once per kernel offset (`O * KH * KW` rows
//! of `P * Q` columns per image) and multiply that by `k`, a product with
//! only `C` rows: the copy and the GEMM's own packing of it dominate. Here
//! the contraction over `o` is done first, on the unshifted gradient, and
//! the shifts after:
//!
//! ```text
//! d_x_kern[o, c, r, s] = k[o, c, r, s]                    -> [O, C * KH * KW]
//! rows of d_x, once per n:
//!     d_x_src[o, a, b] = d_y_pad[n, o, a, b]              -> [O, A * B]
//!     d_x_g = d_x_kern^T x d_x_src                        -> [C, KH, KW, A, B]
//!     d_x[n, c, p, q] = sum[r, s](d_x_g[c, r, s, p - r + 2, q - s + 2])
//! ```
//!
//! The GEMM has `C * KH * KW` rows and reads the image's gradient as it
//! is; the shifted sum adds whole rows (`codegen`'s row accumulation), one
//! per kernel offset. Both forms do the same multiplications; this one
//! moves `C * KH * KW` numbers per output column where the packed one
//! moves `O * KH * KW`, so it is taken unless the contracted extents are
//! provably smaller than the kernel's output ones.
//!
//! A definition qualifies when it has no domain guards, its axes start at
//! 0, its first axis is read by the shifted operand alone (the image), and
//! its value is one `sum` (no where entries, loops from 0 whose ends
//! mention no axis) of `src[..] * ker[..]` (either order, any float type)
//! where:
//! - `ker`'s indices are distinct plain variables: summed ones and axes
//!   that `src` does not read (the kernel's output channels);
//! - `src`'s indices are the image axis, the summed variables `ker` reads
//!   without a shift partner (contracted), and shifted indices `a - r +
//!   d`: an axis `a` other than the image, a summed variable `r` that
//!   `ker` reads, `d` without either; every axis and summed variable
//!   appears once;
//! - the definition's last axis is shifted at `src`'s last shifted index
//!   (the shifted sum then walks rows contiguously);
//! - `src` is defined by an earlier statement of the same list or is a
//!   parameter whose extents the entry checks name;
//! - both reads are proven in bounds (unchecked): the copies read every
//!   point of their ranges, also where the sum has no terms.
//!
//! When `src` is itself another tensor padded with zeros (`d_y_pad[n, o,
//! y, x] = if 0 <= y - 2 && y - 2 < P && .. { d_y[n, o, y - 2, x - 2] }
//! else { 0 }`, as reverse mode writes a valid convolution's output
//! gradient), the product reads the unpadded tensor and the shifted sum
//! skips the terms that fell on the padding (a guard on each shifted
//! index, `0 <= p - r && p - r < P`, which code generation turns into a
//! range of the row per term): the padding's columns are neither copied
//! nor multiplied. The padded copy qualifies when its guard is exactly the
//! bounds of its read on the shifted axes (so it never reads outside them
//! and never fails); when nothing reads it afterwards it is dropped.
//!
//! Host code only (a row definition with a GEMM in its prelude).

use std::collections::{HashMap, HashSet};

use super::gemm::recost;
use super::hoist::substitute_var;
use super::pack::{gemm_of, product};
use crate::base::dim::Dim;
use crate::base::ops::{BinOp, RedOp};
use crate::base::scalar::ScalarKind;
use crate::ir::affine::Affine;
use crate::ir::{visit, Axis, Expr, ExprKind, Function, Literal, Loop, Repr, Rows, Stmt, TensorDef, VarId, WhereEntry};

/// Rewrites every qualifying definition of `f`, wherever it is, then drops
/// the padded copies nothing reads any more.
pub fn run(f: &mut Function) {
    super::over_function(f, stmts, |f, e| super::in_blocks(f, e, stmts));
    let counts = super::use_counts(f);
    let mut i = 0;
    while i < f.body.len() {
        let unread_padding = match &f.body[i] {
            Stmt::Tensor(d) => !counts.contains_key(&d.var) && padded(f, &f.body[..=i], d.var).is_some(),
            _ => false,
        };
        if unread_padding {
            f.body.remove(i);
        } else {
            i += 1;
        }
    }
}

fn stmts(f: &mut Function, list: &mut Vec<Stmt>) {
    let mut i = 0;
    while i < list.len() {
        let found = match &list[i] {
            Stmt::Tensor(def) => find(f, &list[..i], def).map(|m| (def.clone(), m)),
            _ => None,
        };
        if let Some((def, m)) = found {
            let (before, rows) = rewrite(f, def, m);
            list[i] = Stmt::Rows(rows);
            let n = before.len();
            list.splice(i..i, before);
            i += n;
        }
        i += 1;
    }
}

/// What a qualifying definition reads, by role.
struct Match {
    elem: ScalarKind,
    /// The shifted operand and its indices.
    src: VarId,
    src_idx: Vec<Expr>,
    /// `src`'s extents.
    src_ext: Vec<Dim>,
    /// The kernel and its indices.
    ker: VarId,
    ker_idx: Vec<Expr>,
    /// The contracted loops, and the shifted ones (in `ker`'s order).
    contracted: Vec<Loop>,
    shifts: Vec<Loop>,
    /// The kernel's output axes (in `ker`'s order).
    outs: Vec<Axis>,
    /// `src`'s axes with a shifted index, in order.
    shifted_axes: Vec<usize>,
    /// `src` as a padded copy of another tensor.
    pad: Option<Padded>,
    /// Whether an image's slab of the tensor the product reads is that
    /// tensor's sub-tensor at the image, as it is (no copy).
    slab_view: bool,
}

/// A tensor defined as another one padded with zeros along some axes:
/// `src[.., y, ..] = if 0 <= y - d && y - d < E { inner[.., y - d, ..] }
/// else { 0 }`, the guard exactly the read's bounds on those axes.
struct Padded {
    inner: VarId,
    /// `inner`'s indices, in terms of `axes`.
    idx: Vec<Expr>,
    /// The copy's axis variables.
    axes: Vec<VarId>,
    /// `inner`'s extents.
    ext: Vec<Dim>,
    /// The axes along which it is padded (the others read `inner` at the
    /// same index, over the same extent).
    shifted: Vec<usize>,
}

/// `src` as a padded copy (see [`Padded`]), when an earlier statement of
/// `earlier` defines it as one.
fn padded(f: &Function, earlier: &[Stmt], src: VarId) -> Option<Padded> {
    let at = earlier.iter().rposition(|s| matches!(s, Stmt::Tensor(d) if d.var == src))?;
    let Stmt::Tensor(def) = &earlier[at] else { return None };
    if def.domain_guards > 0 || def.axes.iter().any(|a| a.start.as_constant() != Some(0)) {
        return None;
    }
    let ExprKind::If { cond, then, els } = &def.body.kind else { return None };
    let (inner, idx, _) = read_of(then)?;
    if !visit::is_zero(els) || idx.len() != def.axes.len() {
        return None;
    }
    let ext = extents_of(f, &earlier[..at], inner, idx.len())?;
    let axes: Vec<VarId> = def.axes.iter().map(|a| a.index).collect();
    let free_of_axes = |d: &Dim| d.vars().iter().all(|v| !axes.contains(&VarId(v.0)));
    let same = |a: &Dim, b: &Dim| super::same_extent(earlier, a, b);
    // Per axis: the offset `-d` of a shifted index, None for a plain one.
    let mut offsets = Vec::new();
    for (n, i) in idx.iter().enumerate() {
        match &i.kind {
            ExprKind::Var(v) if *v == axes[n] => {
                if !same(&def.axes[n].extent, &ext[n]) {
                    return None;
                }
                offsets.push(None);
            }
            _ => match Affine::in_var(i, axes[n])? {
                (1, rest) if free_of_axes(&rest) => offsets.push(Some(rest)),
                _ => return None,
            },
        }
    }
    // Every conjunct of the guard bounds a shifted index `y - d` from
    // below by 0 or from above by `inner`'s extent, in any arithmetic form
    // (`y >= 2`, `0 <= y - 2`, `y < P + 2`, `y - 2 <= P - 1`); each shifted
    // index is bounded both ways. A conjunct is `X >= 0` with `X = c * y
    // + e` (`X > 0` is `X - 1 >= 0`): with `c = 1` it is `y - d >= 0` when
    // `e = -d`; with `c = -1` it is `y - d < E` when `e = E + d - 1`.
    let mut lower = vec![false; idx.len()];
    let mut upper = vec![false; idx.len()];
    let mut cs = Vec::new();
    visit::conjuncts(cond, &mut cs);
    for c in cs {
        let ExprKind::Binary(op, l, r) = &c.kind else { return None };
        let (hi, lo, strict) = match op {
            BinOp::Ge => (l, r, false),
            BinOp::Gt => (l, r, true),
            BinOp::Le => (r, l, false),
            BinOp::Lt => (r, l, true),
            _ => return None,
        };
        let classified = (0..idx.len()).find_map(|n| {
            let off = offsets[n].as_ref()?;
            let ((ch, eh), (cl, el)) = (Affine::in_var(hi, axes[n])?, Affine::in_var(lo, axes[n])?);
            let e = eh.sub(&el).sub(&Dim::constant(i64::from(strict)));
            if !free_of_axes(&e) {
                return None;
            }
            match ch.checked_sub(cl)? {
                1 if same(&e, off) => Some((n, true)),
                -1 if same(&e, &ext[n].sub(off).sub(&Dim::constant(1))) => Some((n, false)),
                _ => None,
            }
        });
        match classified? {
            (n, true) => lower[n] = true,
            (n, false) => upper[n] = true,
        }
    }
    let shifted: Vec<usize> = (0..idx.len()).filter(|&n| offsets[n].is_some()).collect();
    if shifted.iter().any(|&n| !lower[n] || !upper[n]) {
        return None;
    }
    Some(Padded { inner, idx: idx.to_vec(), axes, ext, shifted })
}

fn find(f: &Function, earlier: &[Stmt], def: &TensorDef) -> Option<Match> {
    if def.domain_guards > 0 || def.axes.iter().any(|a| a.start.as_constant() != Some(0)) || def.axes.len() < 2 {
        return None;
    }
    let ExprKind::Reduce { op: RedOp::Sum, loops, wheres, body } = &def.body.kind else { return None };
    let Repr::Scalar(elem) = def.body.ty else { return None };
    if def.elem != elem || !elem.is_float() || !wheres.is_empty() {
        return None;
    }
    let axes: Vec<VarId> = def.axes.iter().map(|a| a.index).collect();
    let summed: Vec<VarId> = loops.iter().map(|l| l.index).collect();
    let mentions_axis = |d: &Dim| d.vars().iter().any(|v| axes.contains(&VarId(v.0)));
    if loops.iter().any(|l| l.start.as_constant() != Some(0) || mentions_axis(&l.end)) {
        return None;
    }
    let ExprKind::Binary(BinOp::Mul, x, y) = &body.kind else { return None };
    let (x, y) = (read_of(x)?, read_of(y)?);
    // The kernel is the read with plain indices only.
    let ((src, src_idx, src_checked), (ker, ker_idx, ker_checked)) =
        match (plain_vars(x.1).is_some(), plain_vars(y.1).is_some()) {
            (false, true) => (x, y),
            (true, false) => (y, x),
            _ => return None,
        };
    // Both reads proven in bounds: the copies read every point of their
    // ranges, also where the sum had no terms.
    let ker_vars = plain_vars(ker_idx)?;
    if src_checked || ker_checked || ker_vars.iter().collect::<HashSet<_>>().len() != ker_vars.len() {
        return None;
    }
    // Each index of `src`: the image, a contracted variable, or a shift.
    let image = axes[0];
    let mut seen = HashSet::new();
    let mut shift_of = HashMap::new();
    let mut shifted_axes = Vec::new();
    for (n, i) in src_idx.iter().enumerate() {
        match &i.kind {
            ExprKind::Var(v) if (*v == image || summed.contains(v)) && seen.insert(*v) => {}
            _ => {
                let (a, r) = shift(i, &axes, &summed)?;
                if a == image || !seen.insert(a) || !seen.insert(r) || !ker_vars.contains(&r) {
                    return None;
                }
                shift_of.insert(a, r);
                shifted_axes.push(n);
            }
        }
    }
    if shift_of.is_empty() || !seen.contains(&image) {
        return None;
    }
    // Every summed variable is read by the kernel; every axis by one side.
    if summed.iter().any(|v| !ker_vars.contains(v)) {
        return None;
    }
    for a in &axes {
        if seen.contains(a) == ker_vars.contains(a) {
            return None;
        }
    }
    // The last axis is the innermost shifted one.
    let last = *axes.last()?;
    let innermost = shifted_axes.last().map(|&n| shift(&src_idx[n], &axes, &summed));
    if innermost != Some(Some((last, shift_of[&last]))) {
        return None;
    }
    let shifts: HashSet<VarId> = shift_of.values().copied().collect();
    let by_var = |v: &VarId| loops.iter().find(|l| l.index == *v).cloned();
    let contracted: Vec<Loop> =
        ker_vars.iter().filter(|v| summed.contains(v) && !shifts.contains(v)).filter_map(by_var).collect();
    let shift_loops: Vec<Loop> = ker_vars.iter().filter(|v| shifts.contains(v)).filter_map(by_var).collect();
    let outs: Vec<Axis> = ker_vars.iter().filter_map(|v| def.axes.iter().find(|a| a.index == *v).cloned()).collect();
    if contracted.is_empty() {
        return None;
    }
    // Taken unless it provably moves more than the packed form.
    let k = product(contracted.iter().map(|l| l.end.clone()));
    let c = product(outs.iter().map(|a| a.extent.clone()));
    if k.prove_lt(&c).is_true() {
        return None;
    }
    let src_ext = extents_of(f, earlier, src, src_idx.len())?;
    let pad = padded(f, earlier, src).filter(|p| p.shifted == shifted_axes);
    // The image's slab of the tensor the product reads is that tensor's
    // sub-tensor at the image when it is indexed `[image, contracted..,
    // shifted..]` in that order (the contracted variables in the kernel's
    // order) and the contracted loops cover its axes.
    let slab_ext = pad.as_ref().map_or(&src_ext, |p| &p.ext);
    let in_order = src_idx
        .iter()
        .skip(1)
        .zip(contracted.iter().map(|l| l.index))
        .all(|(i, v)| matches!(i.kind, ExprKind::Var(x) if x == v))
        && shifted_axes.iter().copied().eq(1 + contracted.len()..src_idx.len());
    let whole = contracted.iter().zip(slab_ext.iter().skip(1)).all(|(l, e)| super::same_extent(earlier, &l.end, e));
    let slab_view =
        matches!(src_idx.first().map(|i| &i.kind), Some(ExprKind::Var(v)) if *v == image) && in_order && whole;
    Some(Match {
        elem,
        src,
        src_idx: src_idx.to_vec(),
        src_ext,
        ker,
        ker_idx: ker_idx.to_vec(),
        contracted,
        shifts: shift_loops,
        outs,
        shifted_axes,
        pad,
        slab_view,
    })
}

/// A read of a tensor: the tensor, its indices, whether checked.
fn read_of(e: &Expr) -> Option<(VarId, &[Expr], bool)> {
    match &e.kind {
        ExprKind::Read { tensor, indices, checked } => Some((*tensor, indices.as_slice(), *checked)),
        _ => None,
    }
}

/// The variables of indices that are all plain variables.
fn plain_vars(idx: &[Expr]) -> Option<Vec<VarId>> {
    idx.iter().map(|i| if let ExprKind::Var(v) = i.kind { Some(v) } else { None }).collect()
}

/// `(a, r)` when `i` is `a - r + d`: `a` an axis, `r` a summed variable,
/// `d` free of both sets.
fn shift(i: &Expr, axes: &[VarId], summed: &[VarId]) -> Option<(VarId, VarId)> {
    let form = Affine::of(i, &|v| axes.contains(&v) || summed.contains(&v))?;
    let a = form.terms.iter().find(|&&(v, c)| c == 1 && axes.contains(&v))?.0;
    let r = form.terms.iter().find(|&&(v, c)| c == -1 && summed.contains(&v))?.0;
    (form.terms.len() == 2).then_some((a, r))
}

/// The extents of `tensor` (of rank `rank`): from the earlier statement
/// that defines it, or from the entry checks of a parameter.
fn extents_of(f: &Function, earlier: &[Stmt], tensor: VarId, rank: usize) -> Option<Vec<Dim>> {
    for s in earlier.iter().rev() {
        if let Stmt::Tensor(d) = s {
            if d.var == tensor {
                return (d.axes.len() == rank).then(|| d.axes.iter().map(|a| a.extent.clone()).collect());
            }
        }
    }
    if !f.params.contains(&tensor) {
        return None;
    }
    (0..rank).map(|axis| super::entry_extent(f, tensor, axis)).collect()
}

/// The statements before `def` (the kernel's copy and its matrix) and the
/// row definition replacing it.
fn rewrite(f: &mut Function, mut def: TensorDef, m: Match) -> (Vec<Stmt>, Rows) {
    let (elem, i64t) = (m.elem, Repr::Scalar(ScalarKind::I64));
    let base = f.var(def.var).source_name.clone();
    let fresh = |f: &mut Function, v: VarId| f.add_var(&f.var(v).source_name.clone(), i64t.clone());
    let var = |v: VarId| Expr { kind: ExprKind::Var(v), ty: Repr::Scalar(ScalarKind::I64) };
    let read = |tensor: VarId, indices: Vec<Expr>, checked: bool| Expr {
        kind: ExprKind::Read { tensor, indices, checked },
        ty: Repr::Scalar(elem),
    };

    // The kernel as `[contracted.., outs.., shifts..]`.
    let kern_vars: Vec<(VarId, Dim)> = m
        .contracted
        .iter()
        .map(|l| (l.index, l.end.clone()))
        .chain(m.outs.iter().map(|a| (a.index, a.extent.clone())))
        .chain(m.shifts.iter().map(|l| (l.index, l.end.clone())))
        .collect();
    let to_k: HashMap<VarId, VarId> = kern_vars.iter().map(|(v, _)| (*v, fresh(f, *v))).collect();
    let kern_axes: Vec<Axis> =
        kern_vars.iter().map(|(v, e)| Axis { index: to_k[v], start: Dim::zero(), extent: e.clone() }).collect();
    let kern_body = read(m.ker, m.ker_idx.iter().map(|i| renamed(i, &to_k)).collect(), false);
    let kern = f.add_var(&format!("{base}_kern"), Repr::Tensor(elem, kern_axes.len()));
    let kern_def = TensorDef::new(kern, elem, kern_axes, kern_body);
    let k_ext = product(m.contracted.iter().map(|l| l.end.clone()));
    let outs_ext = product(m.outs.iter().map(|a| a.extent.clone()));
    let shifts_ext = product(m.shifts.iter().map(|l| l.end.clone()));
    let rows_ext = outs_ext.mul(&shifts_ext);
    let kern_m = f.add_var(&format!("{base}_kern_m"), Repr::Tensor(elem, 2));
    let before = vec![
        Stmt::Tensor(kern_def),
        Stmt::Reshape { var: kern_m, source: kern, elem, dims: vec![k_ext.clone(), rows_ext.clone()] },
    ];

    // The image's gradient as `[contracted.., shifted axes..]`.
    // Its other indices are the image (kept) and contracted variables
    // (fresh copies); each shifted one becomes a variable of its own.
    // A padded copy's product reads the tensor it pads.
    let (slab_of, slab_ext) = match &m.pad {
        Some(p) => (p.inner, &p.ext),
        None => (m.src, &m.src_ext),
    };
    let q_ext: Vec<Dim> = m.shifted_axes.iter().map(|&n| slab_ext[n].clone()).collect();
    let mut src_vars: Vec<(VarId, Dim)> = m.contracted.iter().map(|l| (fresh(f, l.index), l.end.clone())).collect();
    let to_src: HashMap<VarId, VarId> = m.contracted.iter().zip(&src_vars).map(|(l, (v, _))| (l.index, *v)).collect();
    let qs: Vec<VarId> = q_ext.iter().map(|_| f.add_var("q", i64t.clone())).collect();
    src_vars.extend(qs.iter().copied().zip(q_ext.iter().cloned()));
    let mut src_idx: Vec<Expr> = m.src_idx.iter().map(|i| renamed(i, &to_src)).collect();
    for (&n, &q) in m.shifted_axes.iter().zip(&qs) {
        if let Some(slot) = src_idx.get_mut(n) {
            *slot = var(q);
        }
    }
    let src_axes: Vec<Axis> =
        src_vars.iter().map(|(v, e)| Axis { index: *v, start: Dim::zero(), extent: e.clone() }).collect();
    let src_body = read(slab_of, src_idx, false);
    let slab = f.add_var(&format!("{base}_src"), Repr::Tensor(elem, src_axes.len()));
    // The slab as it is, a view (`slab_view`), or a copy.
    let image = def.axes[0].index;
    let slab_stmt = if m.slab_view {
        let value = Expr {
            kind: ExprKind::View { tensor: slab_of, indices: vec![var(image)] },
            ty: Repr::Tensor(elem, src_axes.len()),
        };
        Stmt::Let { var: slab, value }
    } else {
        Stmt::Tensor(TensorDef::new(slab, elem, src_axes, src_body))
    };
    let cols_ext = product(q_ext.iter().cloned());
    let slab_m = f.add_var(&format!("{base}_src_m"), Repr::Tensor(elem, 2));
    let g_m = f.add_var(&format!("{base}_g_m"), Repr::Tensor(elem, 2));
    let gemm = gemm_of(
        f,
        elem,
        g_m,
        None,
        [rows_ext.clone(), cols_ext.clone(), k_ext.clone()],
        (kern_m, vec![1, 0]),
        (slab_m, vec![0, 1]),
    );
    let gemm_cost = gemm.reference.cost_per_point;
    let g_dims: Vec<Dim> = m
        .outs
        .iter()
        .map(|a| a.extent.clone())
        .chain(m.shifts.iter().map(|l| l.end.clone()))
        .chain(q_ext.iter().cloned())
        .collect();
    let g = f.add_var(&format!("{base}_g"), Repr::Tensor(elem, g_dims.len()));
    let prelude = vec![
        slab_stmt,
        Stmt::Reshape { var: slab_m, source: slab, elem, dims: vec![k_ext, cols_ext] },
        Stmt::Gemm(gemm),
        Stmt::Reshape { var: g, source: g_m, elem, dims: g_dims },
    ];

    // The definition: the shifted sum over the kernel's offsets. Over a
    // padded copy, `src[.., y, ..]` is `inner[.., y - d, ..]` where that
    // is in bounds, and the term is skipped elsewhere.
    let mut wheres = Vec::new();
    let shifted_idx: Vec<Expr> = match &m.pad {
        None => m.shifted_axes.iter().map(|&n| m.src_idx[n].clone()).collect(),
        Some(p) => m
            .shifted_axes
            .iter()
            .map(|&n| {
                let mut at = p.idx[n].clone();
                substitute_var(&mut at, p.axes[n], &m.src_idx[n]);
                let ext = Expr { kind: ExprKind::Dim(p.ext[n].clone()), ty: i64t.clone() };
                let zero = Expr { kind: ExprKind::Lit(Literal::Int(0)), ty: i64t.clone() };
                wheres.push(WhereEntry::Guard(compare(BinOp::Le, zero, at.clone())));
                wheres.push(WhereEntry::Guard(compare(BinOp::Lt, at.clone(), ext)));
                at
            })
            .collect(),
    };
    let g_idx: Vec<Expr> =
        m.outs.iter().map(|a| var(a.index)).chain(m.shifts.iter().map(|l| var(l.index))).chain(shifted_idx).collect();
    let term = read(g, g_idx, false);
    def.body = Expr {
        kind: ExprKind::Reduce { op: RedOp::Sum, loops: m.shifts, wheres, body: Box::new(term) },
        ty: Repr::Scalar(elem),
    };
    recost(&mut def);
    def.cost_per_point = def.cost_per_point.saturating_add(gemm_cost);
    (before, Rows { def, prelude })
}

/// `a op b`, a test on integers.
fn compare(op: BinOp, a: Expr, b: Expr) -> Expr {
    Expr { kind: ExprKind::Binary(op, Box::new(a), Box::new(b)), ty: Repr::Scalar(ScalarKind::Bool) }
}

/// `e` with the variables of `map` renamed.
fn renamed(e: &Expr, map: &HashMap<VarId, VarId>) -> Expr {
    let mut e = e.clone();
    super::gemm::rename(&mut e, map);
    e
}
