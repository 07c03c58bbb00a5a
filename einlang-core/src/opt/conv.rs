//! Convolutions: a definition whose sum is a two-dimensional convolution
//! (any strides and dilations) over the channels-first layouts becomes a call of the
//! runtime's direct kernel (`Stmt::Conv`), which keeps the output tile in
//! registers and builds no im2col columns (host code only; device code and
//! every other form keep `pack`'s GEMM).
//!
//! A definition `y[n, o, i, j]`, or `y[o, i, j]` of a single image (`f32`,
//! axes from 0, no domain guards) qualifies when one of its sums (found as `gemm`'s are: the value, or a
//! `where` binding, through elementwise operations) is
//!
//! ```text
//! sum[c, r, s](x[n, c, i * sh + r * dh - top, j * sw + s * dw - left] * k[o, c, r, s])
//! ```
//!
//! in any order of the loops and of the factors, with
//! - the loops from 0 over exactly `k`'s extents (`c` also over `x`'s
//!   channels), `y`'s first two extents those of `x`'s images and `k`'s
//!   filters, `top` and `left` non-negative constants, the strides `sh`,
//!   `sw` and dilations `dh`, `dw` constants of at least 1 (each index
//!   read as a linear form of the output and window variables; any of
//!   them may be run-time values, below);
//! - `x` (without `n` for a single image) and `k` parameters or
//!   definitions of the same statement list, of the definition's rank and
//!   rank 4; the read of `k` unchecked (proven in bounds);
//! - either no guard and an unchecked read of `x` (a valid convolution), or
//!   the guards, in the sum's `where` entries or as `if g { .. } else { 0 }`,
//!   exactly `ih >= 0`, `ih < H`, `iw >= 0`, `iw < W` for the read's two
//!   spatial indices (bound in `where` entries or written out) and `x`'s
//!   extents `H`, `W`: padding by zeros, which is what the kernel reads
//!   outside the image.
//!
//! A definition that is the sum alone, or the sum plus `b[o]` (a rank-1
//! tensor read unchecked at the filter), or `max` of either and `0.0` in
//! either order (a ReLU), becomes the `Conv` with the bias and the ReLU as
//! its epilogue (`Conv::relu`); otherwise the sum moves into a temporary
//! `y_conv` defined by the `Conv`, and the definition reads it (another
//! activation stays an elementwise pass, which later passes may fuse).
//!
//! A read `x[n, c, i * sh + r * dh - ph, j * sw + s * dw - pw]` whose
//! strides, dilations or pads are run-time values (`std::ml::conv2d`
//! writes them so), with guards whose upper bounds may be run-time values
//! too, is the convolution where at run time the strides and dilations are
//! at least 1, the pads non-negative and the bounds `x`'s extents: the `Conv` then
//! has a run-time branch (`Conv::otherwise`) holding that condition and the
//! definition as written over fresh variables, which `pack` makes its
//! product like any other. `SameExtent` checks before the definition count
//! as equalities of extents.
//!
//! A channel computed from the filter, `x[n, (o / F) * C + c, ..]` (the
//! terms and factors in either order; `std::ml::conv`'s form, `F` and `C`
//! any values from outside the definition), is the convolution in `O / F`
//! groups (`Conv::groups`) where at run time `F >= 1`, `F` divides `O`,
//! `C` is `k`'s channels and `x` has `O / F` times as many (then every
//! channel read is inside `x`); the branch for other values is the
//! definition as written, which `opt::groups` makes per-group products.
//! Without guards, its rows and columns must be proven inside `x` (its
//! read is checked for the channel alone).
//!
//! Channels-last layouts, other output orders, integer and half types,
//! `f64` and the kernel gradient are left to `pack` (a stride-1 input
//! gradient is below).

use std::collections::{HashMap, HashSet};

use super::gemm::{first_sum, hoist_part, sum_factors};
use crate::base::dim::{Dim, DimVar, Truth};
use crate::base::intrinsic::Intrinsic;
use crate::base::ops::{BinOp, RedOp};
use crate::base::scalar::ScalarKind;
use crate::ir::affine::index_dim;
use crate::ir::visit;
use crate::ir::{Conv, ConvElse, Expr, ExprKind, Function, Literal, Loop, Repr, Stmt, TensorDef, VarId, WhereEntry};

/// Rewrites every qualifying definition of `f`, wherever it is.
pub fn run(f: &mut Function) {
    super::over_function(f, stmts, |f, e| super::in_blocks(f, e, stmts));
}

fn stmts(f: &mut Function, list: &mut Vec<Stmt>) {
    let mut i = 0;
    while i < list.len() {
        let found = match &list[i] {
            // The statements before it: their checks hold at the definition.
            Stmt::Tensor(def) => find(f, &list[..i], def),
            _ => None,
        };
        if let Some(m) = found {
            let Stmt::Tensor(mut def) = std::mem::replace(&mut list[i], Stmt::Expr(Expr::unit())) else {
                unreachable!("the statement was matched as a tensor definition")
            };
            if let Some(bias) = m.whole {
                let otherwise = branch(f, &def, &m.when);
                let Window { x, k, pad, stride, dilation, k_axes, k_flip, groups } = m.window;
                let (out, elem, relu) = (def.var, def.elem, m.relu);
                let reference = def;
                let conv = Conv {
                    out,
                    elem,
                    x,
                    k,
                    bias,
                    pad,
                    stride,
                    dilation,
                    k_axes,
                    k_flip,
                    groups,
                    relu,
                    out_order: [0, 1, 2, 3],
                    reference,
                    otherwise,
                };
                list[i] = Stmt::Conv(conv);
                fold_permuted_result(f, list, i);
            } else {
                let mut conv = hoist(f, &mut def, &m);
                conv.otherwise = branch(f, &conv.reference, &m.when);
                list[i] = Stmt::Tensor(def);
                list.insert(i, Stmt::Conv(conv));
                i += 1;
            }
        }
        // A convolution's branch keeps the definition as written.
        if !matches!(list[i], Stmt::Conv(_)) {
            visit::for_each_stmt_expr_mut(&mut list[i], &mut |e| super::in_blocks(f, e, stmts));
        }
        i += 1;
    }
}

/// When the convolution at `list[i]` is read only by the next statement,
/// a definition that copies it with its axes permuted (`y[n, i, j, o] =
/// t[n, o, i, j]`: `opt::conv_layout`'s channels-last result), the kernel
/// writes that definition's tensor through a permuted view instead
/// (`Conv::out_order`), and the copy goes.
fn fold_permuted_result(f: &Function, list: &mut Vec<Stmt>, i: usize) {
    let (Some(Stmt::Conv(c)), Some(Stmt::Tensor(y))) = (list.get(i), list.get(i + 1)) else { return };
    if c.reference.axes.len() != 4 || c.otherwise.is_some() || y.axes.len() != 4 || y.domain_guards != 0 {
        return;
    }
    // `order[a]`: the kernel's axis that `y`'s axis `a` indexes.
    let Some((tensor, order)) = y.permuted_read() else { return };
    let Ok(order) = <[usize; 4]>::try_from(order) else { return };
    let unchecked = matches!(y.body.kind, ExprKind::Read { checked: false, .. });
    if tensor != c.out || !unchecked || y.axes.iter().any(|a| a.start != Dim::zero()) {
        return;
    }
    let mut uses = 0;
    for s in &list[i + 1..] {
        visit::visit_stmt_var_uses(s, &mut |v| uses += usize::from(v == c.out));
    }
    visit::visit_var_uses(&f.result, &mut |v| uses += usize::from(v == c.out));
    if uses != 1 {
        return;
    }
    let Some(Stmt::Tensor(y)) = list.get(i + 1).cloned() else { return };
    list.remove(i + 1);
    let Stmt::Conv(c) = &mut list[i] else { return };
    let renamed: HashMap<VarId, VarId> =
        order.iter().enumerate().map(|(a, &k)| (c.reference.axes[k].index, y.axes[a].index)).collect();
    let mut body = std::mem::replace(&mut c.reference.body, Expr::unit());
    super::gemm::rename(&mut body, &renamed);
    c.reference = TensorDef::new(y.var, y.elem, y.axes, body);
    c.out = y.var;
    c.out_order = order;
}

/// The operands and the window of a convolution.
struct Window {
    x: VarId,
    k: VarId,
    pad: (Dim, Dim),
    stride: (Dim, Dim),
    dilation: (Dim, Dim),
    /// `Conv::k_axes` and `Conv::k_flip`.
    k_axes: [usize; 4],
    k_flip: bool,
    /// `Conv::groups`.
    groups: Dim,
}

/// A convolution found in a definition.
struct Match {
    /// Where the sum is in the definition's body.
    path: Vec<usize>,
    window: Window,
    /// What must hold at run time for the sum to be the convolution (every
    /// term true): empty when it always is.
    when: Vec<Expr>,
    /// `Some(bias)` when the whole definition is the sum (plus the bias),
    /// or `max` of that and `0.0` (`relu`).
    whole: Option<Option<VarId>>,
    relu: bool,
}

/// Whether `def`, after the statements `list`, is a convolution this pass
/// turns into the kernel (`opt::conv_layout` asks before it rewrites).
pub(super) fn recognises(f: &Function, list: &[Stmt], def: &TensorDef) -> bool {
    find(f, list, def).is_some()
}

fn find(f: &Function, list: &[Stmt], def: &TensorDef) -> Option<Match> {
    if def.elem != ScalarKind::F32 || !(3..=4).contains(&def.axes.len()) {
        return None;
    }
    let axes: Vec<VarId> = def.axes.iter().map(|a| a.index).collect();
    // The definition's own bindings (`sum[..](x[n, c, iy, ix] * ..) where
    // iy = i + r, ..`), when its where entries are index bindings alone:
    // the sum may read them, and then only the whole definition can be the
    // convolution (a temporary could not read them).
    let (outer, value, prefix) = match &def.body.kind {
        ExprKind::Guarded { wheres, body } => {
            let mut outer = HashMap::new();
            for w in wheres {
                let WhereEntry::Bind(v, e) = w else { return None };
                index_dim(e)?;
                outer.insert(*v, e);
            }
            (outer, &**body, vec![wheres.len()])
        }
        _ => (HashMap::new(), &def.body, Vec::new()),
    };
    // The input gradient's form: the whole definition, no bindings.
    if let (true, Some(window)) = (outer.is_empty(), grad_sum(f, list, def, &axes, &def.body)) {
        return Some(Match { path: Vec::new(), window, when: Vec::new(), whole: Some(None), relu: false });
    }
    let ((window, when), path) =
        first_sum(def, |sum, _, path| conv_sum(f, list, def, &axes, &outer, sum).map(|m| (m, path.to_vec())))?;
    let rest = path.strip_prefix(prefix.as_slice())?;
    // `max(v, 0.0)` or `max(0.0, v)` of the sum (plus the bias): the
    // kernel's ReLU.
    let relu_of = match (&value.kind, rest.first()) {
        (ExprKind::Intrinsic(Intrinsic::Max, args), Some(&side)) if args.len() == 2 && side < 2 => {
            let zero = matches!(&args[1 - side].kind, ExprKind::Lit(Literal::Float(z)) if z.parse::<f64>() == Ok(0.0));
            zero.then(|| (&args[side], &rest[1..]))
        }
        _ => None,
    };
    let (value, rest, relu) = match relu_of {
        Some((inner, rest)) => (inner, rest, true),
        None => (value, rest, false),
    };
    let whole = if rest.is_empty() {
        Some(None)
    } else if let (ExprKind::Binary(BinOp::Add, a, b), [side]) = (&value.kind, rest) {
        let other = if *side == 0 { b } else { a };
        bias_read(f, other, axes[axes.len() - 3]).map(Some)
    } else {
        None
    };
    // An activation without the whole sum (plus the bias) under it is an
    // elementwise pass after the kernel.
    let relu = relu && whole.is_some();
    if whole.is_none() && !outer.is_empty() {
        return None;
    }
    Some(Match { path, window, when, whole, relu })
}

/// The tensor of `e` when it is `b[o]`, an unchecked read of a rank-1
/// `f32` tensor at the filter index.
fn bias_read(f: &Function, e: &Expr, o: VarId) -> Option<VarId> {
    match &e.kind {
        ExprKind::Read { tensor, indices, checked: false }
            if indices.len() == 1
                && matches!(indices[0].kind, ExprKind::Var(v) if v == o)
                && f.vars.get(tensor.0 as usize)?.ty == Repr::Tensor(ScalarKind::F32, 1) =>
        {
            Some(*tensor)
        }
        _ => None,
    }
}

/// The convolution's operands and window, and `when`, when `sum` is the
/// convolution of the module's pattern for the definition's axes `[n, o, i, j]` or `[o, i, j]`
/// wherever `when` holds at run time (the conditions on run-time strides,
/// dilations, pads and bounds that the pattern needs).
fn conv_sum<'a>(
    f: &Function,
    list: &[Stmt],
    def: &TensorDef,
    axes: &[VarId],
    outer: &HashMap<VarId, &'a Expr>,
    sum: &'a Expr,
) -> Option<(Window, Vec<Expr>)> {
    let ExprKind::Reduce { op: RedOp::Sum, loops, wheres, body } = &sum.kind else { return None };
    if loops.len() != 3 || loops.iter().any(|l| l.start.as_constant() != Some(0)) {
        return None;
    }
    // `lead` is 1 with an image axis `n`, 0 for a single image.
    let lead = axes.len() - 3;
    let (o, i, j) = (axes[lead], axes[lead + 1], axes[lead + 2]);
    let loop_vars: Vec<VarId> = loops.iter().map(|l| l.index).collect();
    let (p, q, cond) = sum_factors(body)?;
    let as_kernel = |e: &Expr| -> Option<(VarId, [VarId; 3])> {
        let ExprKind::Read { tensor, indices, checked: false } = &e.kind else { return None };
        let vars: Vec<VarId> = indices
            .iter()
            .map(|x| match x.kind {
                ExprKind::Var(v) => Some(v),
                _ => None,
            })
            .collect::<Option<_>>()?;
        let [first, c, r, s] = vars[..] else { return None };
        let distinct = c != r && r != s && c != s;
        (first == o && distinct && [c, r, s].iter().all(|v| loop_vars.contains(v))).then_some((*tensor, [c, r, s]))
    };
    let ((k, [c, r, s]), xe) = as_kernel(p).map(|m| (m, q)).or_else(|| as_kernel(q).map(|m| (m, p)))?;
    let ExprKind::Read { tensor: x, indices: xi, checked: x_checked } = &xe.kind else { return None };
    if xi.len() != axes.len() || (lead == 1 && !is_var(&xi[0], axes[0])) {
        return None;
    }
    // The channel: `c`, or `(o / F) * C + c` in groups of `F` filters.
    let group = if is_var(&xi[lead], c) { None } else { Some(grouped_channel(&xi[lead], o, c)?) };
    // The sum's bindings, each an index expression.
    let mut binds: HashMap<VarId, &'a Expr> = outer.clone();
    let mut guards: Vec<&Expr> = Vec::new();
    for w in wheres {
        match w {
            WhereEntry::Bind(v, e) => {
                index_dim(e)?;
                binds.insert(*v, e);
            }
            WhereEntry::Guard(g) => conjuncts(g, &mut guards),
        }
    }
    if let Some(cond) = cond {
        conjuncts(cond, &mut guards);
    }
    let resolve = |e: &'_ Expr| -> Option<Dim> {
        match &e.kind {
            ExprKind::Var(v) if binds.contains_key(v) => index_dim(binds[v]),
            _ => index_dim(e),
        }
    };
    // What must hold at run time.
    let mut when = Vec::new();
    // The variables bound here, which a stride, dilation or pad may not
    // mention.
    let bound: HashSet<VarId> = axes.iter().chain(&loop_vars).chain(binds.keys()).copied().collect();
    let free = |d: &Dim| d.vars().iter().all(|v| !bound.contains(&VarId(v.0)));
    // An index `a * stride + b * dilation - pad`: the stride and the
    // dilation at least 1, the pad not negative (at run time where they
    // are not constants).
    let mut shift = |e: &Expr, a: VarId, b: VarId| -> Option<(Dim, Dim, Dim)> {
        let d = resolve(e)?;
        let (stride, rest) = linear(&d, a)?;
        let (dilation, rest) = linear(&rest, b)?;
        let pad = rest.neg();
        if !free(&stride) || !free(&dilation) || !free(&pad) {
            return None;
        }
        for step in [&stride, &dilation] {
            match step.as_constant() {
                Some(v) if v >= 1 => {}
                Some(_) => return None,
                None => when.push(compare(BinOp::Ge, step, &Dim::one())),
            }
        }
        match pad.as_constant() {
            Some(p) if p >= 0 => {}
            Some(_) => return None,
            None => when.push(compare(BinOp::Ge, &pad, &Dim::zero())),
        }
        Some((pad, stride, dilation))
    };
    let (top, sh, dh) = shift(&xi[lead + 1], i, r)?;
    let (left, sw, dw) = shift(&xi[lead + 2], j, s)?;
    let mut window = Window {
        x: *x,
        k,
        pad: (top, left),
        stride: (sh, sw),
        dilation: (dh, dw),
        k_axes: [0, 1, 2, 3],
        k_flip: false,
        groups: Dim::one(),
    };
    // Extents: the loops over all of `k`, `c` over `x`'s channels too, the
    // output's images and filters those of `x` and `k`.
    let tensor_ok =
        |t: VarId, rank: usize| f.vars.get(t.0 as usize).is_some_and(|v| v.ty == Repr::Tensor(ScalarKind::F32, rank));
    if !tensor_ok(*x, axes.len()) || !tensor_ok(k, 4) {
        return None;
    }
    let xext = |axis| extent_of(f, list, *x, axis);
    let kext = |axis| extent_of(f, list, k, axis);
    let end = |v: VarId| loops.iter().find(|l: &&Loop| l.index == v).map(|l| l.end.clone());
    // A window of one pixel is a matrix product: `pack` makes it one.
    if end(r).and_then(|d| d.as_constant()) == Some(1) && end(s).and_then(|d| d.as_constant()) == Some(1) {
        return None;
    }
    let same = |a: Option<Dim>, b: Option<Dim>| match (a, b) {
        (Some(a), Some(b)) => super::same_extent(list, &a, &b) || checked_same(list, &a, &b),
        _ => false,
    };
    let extents_ok = (group.is_some() || same(end(c), xext(lead)))
        && same(end(c), kext(1))
        && same(end(r), kext(2))
        && same(end(s), kext(3))
        && (lead == 0 || same(Some(def.axes[0].extent.clone()), xext(0)))
        && same(Some(def.axes[lead].extent.clone()), kext(0));
    if !extents_ok {
        return None;
    }
    if let Some((fpg, cpg)) = &group {
        // `G = O / F` groups of `F` filters, each reading `C` channels
        // from `g C`: the kernel's grouping where `F >= 1`, `F` divides
        // `O`, `C` is the loop's (and `k`'s) channels and `x` has `G C`
        // channels (then every read of the channel is inside `x`). In
        // that order: the quotients divide by `F >= 1` only.
        if !free(fpg) || !free(cpg) {
            return None;
        }
        let filters = def.axes[lead].extent.clone();
        let (channels, xc) = (end(c)?, xext(lead)?);
        let groups = filters.floor_div(fpg)?;
        let conds = [
            (BinOp::Ge, fpg.clone(), Dim::one()),
            (BinOp::Eq, groups.mul(fpg), filters),
            (BinOp::Eq, cpg.clone(), channels.clone()),
            (BinOp::Eq, groups.mul(&channels), xc),
        ];
        for (op, a, b) in conds {
            match (op, a.as_constant(), b.as_constant()) {
                (BinOp::Ge, Some(a), Some(b)) if a >= b => {}
                (BinOp::Ge, Some(_), Some(_)) => return None,
                (BinOp::Eq, _, _) if a == b => {}
                (BinOp::Eq, Some(_), Some(_)) => return None,
                _ => when.push(compare(op, &a, &b)),
            }
        }
        window.groups = groups;
    }
    if guards.is_empty() {
        // Without guards a run-time branch would not be equivalent: the
        // definition's reads are checked, the kernel's are not. A grouped
        // read is checked for its channel, which `when` covers: its rows
        // and columns must be proven inside `x`.
        if group.is_some() {
            let inside = |axis: usize, pad: &Dim, st: &Dim, dil: &Dim, k: Option<Dim>| -> bool {
                let (Some(k), Some(ext)) = (k, xext(lead + axis)) else { return false };
                // The output's extent as the statements before define it.
                let out = def.axes[lead + axis].extent.substitute(&|v| {
                    list.iter().find_map(|s| match s {
                        Stmt::Extent { var, value, .. } if var.0 == v.0 => Some(value.clone()),
                        _ => None,
                    })
                });
                let last = out.sub(&Dim::one()).mul(st).add(&k.sub(&Dim::one()).mul(dil));
                pad.as_constant() == Some(0) && last.prove_le(&ext.sub(&Dim::one())).is_true()
            };
            let rows = inside(1, &window.pad.0, &window.stride.0, &window.dilation.0, end(r));
            let cols = inside(2, &window.pad.1, &window.stride.1, &window.dilation.1, end(s));
            return (rows && cols).then_some((window, when));
        }
        return (!x_checked && when.is_empty()).then_some((window, when));
    }
    // Exactly the four bounds of the two spatial reads.
    if guards.len() != 4 {
        return None;
    }
    let (hi, wi) = (resolve(&xi[lead + 1])?, resolve(&xi[lead + 2])?);
    let (h, w) = (xext(lead + 1)?, xext(lead + 2)?);
    let mut seen = HashSet::new();
    for g in guards {
        let (index, bound) = bound_of(g, &resolve)?;
        let which = if index == hi {
            0
        } else if index == wi {
            1
        } else {
            return None;
        };
        let ok = match &bound {
            Bound::Lower(0) => seen.insert((which, 0)),
            Bound::Upper(b) => {
                // The image's extent, or (when not known to be) checked at
                // run time.
                let extent = if which == 0 { &h } else { &w };
                if !super::same_extent(list, b, extent) {
                    if !free(b) || b.prove_eq(extent) == Truth::False {
                        return None;
                    }
                    when.push(compare(BinOp::Eq, b, extent));
                }
                seen.insert((which, 1))
            }
            Bound::Lower(_) => false,
        };
        if !ok {
            return None;
        }
    }
    (seen.len() == 4).then_some((window, when))
}

/// The input gradient of a stride-1 convolution as reverse mode writes it,
/// `sum` defining `d_x[n, c, p, q]`:
///
/// ```text
/// sum[o, i, j, r, s](d_y[n, o, i, j] * k[o, c, r, s])
///     where i + r * dh - top == p, j + s * dw - left == q, (bounds)
/// ```
///
/// (the loops from 0 in any order, the factors either way, `k`'s indices
/// in any order, the equalities either way round; `(bounds)` guards that
/// hold wherever the equalities do: `p` and `q` within `d_x`'s extents,
/// as `if (equalities) { bounds } else { false }` or alone). Each `(p, q)`
/// sums the terms with `i = p - r dh + top` inside `d_y` (the loop over
/// `i` is exactly `d_y`'s rows): the convolution of `d_y` by `k` with
/// filters and channels swapped, read backwards along the window, over the
/// pads `dh (KH - 1) - top` and `dw (KW - 1) - left` (both not negative),
/// stride 1 and the same dilations.
fn grad_sum(f: &Function, list: &[Stmt], def: &TensorDef, axes: &[VarId], sum: &Expr) -> Option<Window> {
    let ExprKind::Reduce { op: RedOp::Sum, loops, wheres, body } = &sum.kind else { return None };
    if def.elem != ScalarKind::F32
        || axes.len() != 4
        || loops.len() != 5
        || loops.iter().any(|l| l.start.as_constant() != Some(0))
    {
        return None;
    }
    let (n, c, p, q) = (axes[0], axes[1], axes[2], axes[3]);
    let loop_vars: Vec<VarId> = loops.iter().map(|l| l.index).collect();
    let (a, b, None) = sum_factors(body)? else { return None };
    // An unchecked read at plain variables.
    let plain = |e: &Expr| -> Option<(VarId, Vec<VarId>)> {
        let ExprKind::Read { tensor, indices, checked: false } = &e.kind else { return None };
        let vars = indices
            .iter()
            .map(|x| match x.kind {
                ExprKind::Var(v) => Some(v),
                _ => None,
            })
            .collect::<Option<Vec<_>>>()?;
        Some((*tensor, vars))
    };
    let ((dy, yi), (k, ki)) = match (plain(a)?, plain(b)?) {
        (ya, kb) if ya.1.first() == Some(&n) => (ya, kb),
        (ka, yb) => (yb, ka),
    };
    let [yn, o, i, j] = yi[..] else { return None };
    if yn != n || ki.len() != 4 {
        return None;
    }
    let summed = |v: VarId| loop_vars.contains(&v);
    if !(summed(o) && summed(i) && summed(j)) || o == i || i == j || o == j {
        return None;
    }
    // The window's variables: the two loops `d_y` does not read.
    let rest: Vec<VarId> = loop_vars.iter().copied().filter(|v| ![o, i, j].contains(v)).collect();
    let [r0, r1] = rest[..] else { return None };
    // Each equality `i + r * dh - top == p` (or the other way round).
    let bound: HashSet<VarId> = axes.iter().chain(&loop_vars).copied().collect();
    let free = |x: &Dim| x.vars().iter().all(|v| !bound.contains(&VarId(v.0)));
    let equality = |l: &Expr, rr: &Expr| -> Option<(VarId, VarId, VarId, Dim, Dim)> {
        let d = index_dim(l)?.sub(&index_dim(rr)?);
        // The output axis it solves for, with the coefficient 1 or -1.
        let (axis, coef) = [p, q].into_iter().find_map(|ax| {
            let (a, _) = linear(&d, ax)?;
            let a = a.as_constant()?;
            (a == 1 || a == -1).then_some((ax, a))
        })?;
        // `i + r * dh - top` (the axis moved to the other side).
        let d = if coef == 1 { d.neg() } else { d }.add(&Dim::var(DimVar(axis.0)));
        let (row, other) = if axis == p { (i, j) } else { (j, i) };
        let (ci, d) = linear(&d, row)?;
        let wv = [r0, r1].into_iter().find(|&v| linear(&d, v).is_some_and(|(a, _)| a != Dim::zero()))?;
        let (dil, rest) = linear(&d, wv)?;
        let top = rest.neg();
        let (other_w, other_ax) = ([r0, r1].into_iter().find(|&v| v != wv)?, if axis == p { q } else { p });
        let absent = [other, other_w, other_ax, o, n, c].iter().all(|v| !top.vars().contains(&DimVar(v.0)));
        let ok = ci.as_constant() == Some(1) && dil.as_constant().is_some_and(|x| x >= 1) && free(&top) && absent;
        ok.then_some((axis, row, wv, dil, top))
    };
    let mut eqs: Vec<(VarId, VarId, VarId, Dim, Dim)> = Vec::new();
    let mut eq_exprs: Vec<&Expr> = Vec::new();
    let mut others = Vec::new();
    for w in wheres {
        let WhereEntry::Guard(g) = w else { return None };
        match &g.kind {
            ExprKind::Binary(BinOp::Eq, l, rr) => {
                eqs.push(equality(l, rr)?);
                eq_exprs.push(g);
            }
            _ => others.push(g),
        }
    }
    let on = |axis: VarId| eqs.iter().find(|e| e.0 == axis);
    let (Some(row_eq), Some(col_eq), 2) = (on(p), on(q), eqs.len()) else { return None };
    let (r, s) = (row_eq.2, col_eq.2);
    if r == s {
        return None;
    }
    // `k`'s indices: a permutation of `[o, c, r, s]`.
    let pos = |v: VarId| ki.iter().position(|&x| x == v);
    let k_axes = [pos(c)?, pos(o)?, pos(r)?, pos(s)?];
    let mut sorted = k_axes;
    sorted.sort_unstable();
    if sorted != [0, 1, 2, 3] {
        return None;
    }
    // Extents: `d_y`'s images, filters, rows and columns are the loops and
    // the definition's images; `k`'s the loops and the definition's channels.
    let tensor_ok = |t: VarId| f.vars.get(t.0 as usize).is_some_and(|v| v.ty == Repr::Tensor(ScalarKind::F32, 4));
    if !tensor_ok(dy) || !tensor_ok(k) {
        return None;
    }
    let end = |v: VarId| loops.iter().find(|l: &&Loop| l.index == v).map(|l| l.end.clone());
    let same = |a: Option<Dim>, b: Option<Dim>| match (a, b) {
        (Some(a), Some(b)) => super::same_extent(list, &a, &b) || checked_same(list, &a, &b),
        _ => false,
    };
    let yext = |axis| extent_of(f, list, dy, axis);
    let kext = |axis: usize| extent_of(f, list, k, k_axes[axis]);
    let ok = same(Some(def.axes[0].extent.clone()), yext(0))
        && same(end(o), yext(1))
        && same(end(i), yext(2))
        && same(end(j), yext(3))
        && same(end(o), kext(1))
        && same(Some(def.axes[1].extent.clone()), kext(0))
        && same(end(r), kext(2))
        && same(end(s), kext(3));
    if !ok {
        return None;
    }
    // The other guards hold wherever the equalities do.
    let eq_index = |axis: usize| {
        let (_, row, wv, dil, top) = if axis == 2 { row_eq } else { col_eq };
        Dim::var(DimVar(row.0)).add(&Dim::var(DimVar(wv.0)).mul(dil)).sub(top)
    };
    let implied = |g: &Expr| -> bool {
        // `if (equalities) { bounds } else { false }`: the condition's
        // terms each one of the equality guards.
        let g = match &g.kind {
            ExprKind::If { cond, then, els } if matches!(els.kind, ExprKind::Lit(crate::ir::Literal::Bool(false))) => {
                let mut terms = Vec::new();
                conjuncts(cond, &mut terms);
                if !terms.iter().all(|t| eq_exprs.contains(t)) {
                    return false;
                }
                then
            }
            _ => g,
        };
        let mut terms = Vec::new();
        conjuncts(g, &mut terms);
        terms.iter().all(|t| {
            let Some((index, bound)) = bound_of(t, &|e| index_dim(e)) else { return false };
            let axis = if index == eq_index(2) {
                2
            } else if index == eq_index(3) {
                3
            } else {
                return false;
            };
            match bound {
                Bound::Lower(lo) => lo <= 0,
                Bound::Upper(hi) => super::same_extent(list, &hi, &def.axes[axis].extent),
            }
        })
    };
    if !others.iter().all(|g| implied(g)) {
        return None;
    }
    // The pads of the flipped window: `dh (KH - 1) - top`, constants not
    // negative.
    let pad = |dil: &Dim, top: &Dim, ext: Option<Dim>| -> Option<Dim> {
        let kx = ext?.as_constant()?;
        let v = dil.as_constant()? * (kx - 1) - top.as_constant()?;
        (v >= 0).then(|| Dim::constant(v))
    };
    let ph = pad(&row_eq.3, &row_eq.4, end(r))?;
    let pw = pad(&col_eq.3, &col_eq.4, end(s))?;
    Some(Window {
        x: dy,
        k,
        pad: (ph, pw),
        stride: (Dim::one(), Dim::one()),
        dilation: (row_eq.3.clone(), col_eq.3.clone()),
        k_axes,
        k_flip: true,
        groups: Dim::one(),
    })
}

/// Whether a statement of `list` checked that `a` and `b` agree (a
/// `SameExtent`, which stops the function where they do not).
fn checked_same(list: &[Stmt], a: &Dim, b: &Dim) -> bool {
    list.iter().any(|s| matches!(s, Stmt::SameExtent { a: x, b: y, .. } if (x == a && y == b) || (x == b && y == a)))
}

/// `d` as `v * a + b` with `a` and `b` free of `v`.
fn linear(d: &Dim, v: VarId) -> Option<(Dim, Dim)> {
    let dv = DimVar(v.0);
    let b = d.substitute(&|x| (x == dv).then(Dim::zero));
    let a = d.substitute(&|x| (x == dv).then(Dim::one)).sub(&b);
    (!a.vars().contains(&dv) && Dim::var(dv).mul(&a).add(&b) == *d).then_some((a, b))
}

/// The `bool` expression `a op b` of two dimensions.
fn compare(op: BinOp, a: &Dim, b: &Dim) -> Expr {
    Expr {
        kind: ExprKind::Binary(op, Box::new(dim_expr(a)), Box::new(dim_expr(b))),
        ty: Repr::Scalar(ScalarKind::Bool),
    }
}

/// The run-time branch of a convolution defined by `reference` that is one
/// where every condition of `when` holds: `None` when it always is (or
/// when the definition binds variables in a form that cannot be copied).
fn branch(f: &mut Function, reference: &TensorDef, when: &[Expr]) -> Option<Box<ConvElse>> {
    let (first, rest) = when.split_first()?;
    let cond = rest.iter().fold(first.clone(), |acc, c| Expr {
        kind: ExprKind::Binary(BinOp::And, Box::new(acc), Box::new(c.clone())),
        ty: Repr::Scalar(ScalarKind::Bool),
    });
    // The definition over fresh variables.
    let mut def = reference.clone();
    let mut defined = def.axes.iter().map(|a| a.index).collect::<Vec<_>>();
    visit::defined_in(&def.body, &mut defined);
    let mut map = HashMap::new();
    for v in defined.into_iter().chain([def.var]) {
        let info = f.var(v).clone();
        map.insert(v, f.add_var(&info.source_name, info.ty));
    }
    super::split::rename(&mut def.body, &map)?;
    def.var = map[&def.var];
    for a in &mut def.axes {
        a.index = map[&a.index];
    }
    let ty = Repr::Tensor(def.elem, def.axes.len());
    let result = Expr { kind: ExprKind::Var(def.var), ty: ty.clone() };
    let value = Expr { kind: ExprKind::Block { stmts: vec![Stmt::Tensor(def)], result: Box::new(result) }, ty };
    Some(Box::new(ConvElse { when: cond, value }))
}

/// A guard's bound on an index.
enum Bound {
    /// `index >= c`
    Lower(i64),
    /// `index < b`
    Upper(Dim),
}

/// The index a guard bounds (as a dimension) and how: `e >= c`, `c <= e`,
/// `e < b`, `b > e`.
fn bound_of(g: &Expr, resolve: &dyn Fn(&Expr) -> Option<Dim>) -> Option<(Dim, Bound)> {
    let ExprKind::Binary(op, a, b) = &g.kind else { return None };
    match op {
        BinOp::Ge => Some((resolve(a)?, Bound::Lower(index_dim(b)?.as_constant()?))),
        BinOp::Le => Some((resolve(b)?, Bound::Lower(index_dim(a)?.as_constant()?))),
        BinOp::Lt => Some((resolve(a)?, Bound::Upper(index_dim(b)?))),
        BinOp::Gt => Some((resolve(b)?, Bound::Upper(index_dim(a)?))),
        _ => None,
    }
}

/// The terms of a conjunction `a && b && ...`.
fn conjuncts<'a>(e: &'a Expr, out: &mut Vec<&'a Expr>) {
    match &e.kind {
        ExprKind::Binary(BinOp::And, a, b) => {
            conjuncts(a, out);
            conjuncts(b, out);
        }
        _ => out.push(e),
    }
}

/// `(o / F) * C + c`, the terms and factors in either order: `(F, C)`.
fn grouped_channel(e: &Expr, o: VarId, c: VarId) -> Option<(Dim, Dim)> {
    let ExprKind::Binary(BinOp::Add, a, b) = &e.kind else { return None };
    let product = if is_var(b, c) {
        a
    } else if is_var(a, c) {
        b
    } else {
        return None;
    };
    let ExprKind::Binary(BinOp::Mul, p, q) = &product.kind else { return None };
    let quotient = |e: &Expr| match &e.kind {
        ExprKind::Binary(BinOp::Div, n, d) if is_var(n, o) => index_dim(d),
        _ => None,
    };
    match (quotient(p), quotient(q)) {
        (Some(f), _) => Some((f, index_dim(q)?)),
        (None, Some(f)) => Some((f, index_dim(p)?)),
        _ => None,
    }
}

fn is_var(e: &Expr, v: VarId) -> bool {
    matches!(e.kind, ExprKind::Var(x) if x == v)
}

/// `d` as an `i64` expression (for `Affine::of`).
fn dim_expr(d: &Dim) -> Expr {
    Expr { kind: ExprKind::Dim(d.clone()), ty: Repr::Scalar(ScalarKind::I64) }
}

/// The extent of axis `axis` of tensor `t`: a parameter's (from the entry
/// checks) or that of a definition in `list`.
pub(super) fn extent_of(f: &Function, list: &[Stmt], t: VarId, axis: usize) -> Option<Dim> {
    if f.params.contains(&t) {
        return super::entry_extent(f, t, axis);
    }
    list.iter().find_map(|s| match s {
        Stmt::Tensor(d) if d.var == t => d.axes.get(axis).map(|a| a.extent.clone()),
        Stmt::Conv(c) if c.out == t => c.reference.axes.get(axis).map(|a| a.extent.clone()),
        _ => None,
    })
}

/// Moves the sum out of `def` into a temporary defined by the returned
/// convolution; `def` reads the temporary at its point.
fn hoist(f: &mut Function, def: &mut TensorDef, m: &Match) -> Conv {
    let (tmp, reference) = hoist_part(f, def, &m.path, def.elem, "conv");
    let Window { x, k, pad, stride, dilation, k_axes, k_flip, groups } = &m.window;
    Conv {
        groups: groups.clone(),
        k_axes: *k_axes,
        k_flip: *k_flip,
        out: tmp,
        elem: def.elem,
        x: *x,
        k: *k,
        bias: None,
        relu: false,
        out_order: [0, 1, 2, 3],
        pad: pad.clone(),
        stride: stride.clone(),
        dilation: dilation.clone(),
        reference,
        otherwise: None,
    }
}

#[cfg(test)]
mod tests {
    use crate::ir;
    use crate::test_support::lowered;

    /// The program after the passes up to and including this one.
    fn converted(src: &str) -> String {
        let mut p = lowered(src);
        for f in &mut p.fns {
            super::super::gemm::run(f);
            super::run(f);
        }
        if let Err(e) = ir::validate::validate(&p) {
            panic!("invalid after the pass: {e}\n{}", ir::pretty::pretty_program(&p));
        }
        ir::pretty::pretty_program(&p)
    }

    fn fires(src: &str) -> String {
        let out = converted(src);
        assert!(out.contains("conv "), "{out}");
        out
    }

    fn leaves(src: &str) {
        let out = converted(src);
        assert!(!out.contains("conv "), "{out}");
    }

    #[test]
    fn a_valid_convolution_with_a_bias_is_one_conv() {
        let out = fires(
            "pub fn conv(x: [f32; N, C, H, W], k: [f32; O, C, KH, KW], b: [f32; O]) -> [f32; N, O, H - KH + 1, W - KW + 1] {
                let y[n, o, i, j] = sum[c, r, s](x[n, c, i + r, j + s] * k[o, c, r, s]) + b[o];
                y
            }",
        );
        assert!(out.contains("conv y = x * k + b (pad 0, 0): f32"), "{out}");
    }

    #[test]
    fn the_forms_users_write_are_found() {
        // Factors swapped, loops in another order.
        let out = fires(
            "pub fn conv(x: [f32; N, C, H, W], k: [f32; O, C, 3, 3]) -> [f32; N, O, H - 2, W - 2] {
                let y[n, o, i, j] = sum[s, r, c](k[o, c, r, s] * x[n, c, i + r, j + s]);
                y
            }",
        );
        assert!(out.contains("conv y = x * k (pad 0, 0): f32"), "{out}");
        // Padded by a guard on bound indices.
        let out = fires(
            "pub fn conv(x: [f32; N, C, H, W], k: [f32; O, C, 3, 3]) -> [f32; N, O, H, W] {
                let y[n, o, i in 0..H, j in 0..W] = sum[c, r, s](
                    if ih >= 0 && ih < H && iw >= 0 && iw < W { x[n, c, ih, iw] * k[o, c, r, s] } else { 0.0 }
                    where ih = i + r - 1, iw = j + s - 1
                );
                y
            }",
        );
        assert!(out.contains("conv y = x * k (pad 1, 1): f32"), "{out}");
        // A ReLU after the bias: the kernel's epilogue.
        let out = fires(
            "pub fn conv(x: [f32; N, C, H, W], k: [f32; O, C, 3, 3], b: [f32; O]) -> [f32; N, O, H - 2, W - 2] {
                let y[n, o, i, j] = max(sum[c, r, s](x[n, c, i + r, j + s] * k[o, c, r, s]) + b[o], 0.0);
                y
            }",
        );
        assert!(out.contains("conv y = x * k + b (pad 0, 0, relu): f32"), "{out}");
        // Another activation: the sum moves into a temporary.
        for value in [
            "max(sum[c, r, s](x[n, c, i + r, j + s] * k[o, c, r, s]) + b[o], 0.5)",
            "std::math::tanh(sum[c, r, s](x[n, c, i + r, j + s] * k[o, c, r, s]) + b[o])",
            "max(sum[c, r, s](x[n, c, i + r, j + s] * k[o, c, r, s]) * 2.0, 0.0)",
        ] {
            let out = fires(&format!(
                "pub fn conv(x: [f32; N, C, H, W], k: [f32; O, C, 3, 3], b: [f32; O]) -> [f32; N, O, H - 2, W - 2] {{
                    let y[n, o, i, j] = {value};
                    y
                }}"
            ));
            assert!(out.contains("conv y_conv = x * k (pad 0, 0): f32"), "{out}");
            assert!(out.contains("read y_conv[n, o, i, j] unchecked"), "{out}");
        }
        // Indices bound in the definition's own where entries.
        let out = fires(
            "pub fn conv(x: [f32; N, C, H, W], k: [f32; O, C, KH, KW], b: [f32; O]) -> [f32; N, O, H - KH + 1, W - KW + 1] {
                let y[n, o, i, j] = sum[c, r, s](x[n, c, iy, ix] * k[o, c, r, s]) + b[o] where iy = i + r, ix = j + s;
                y
            }",
        );
        assert!(out.contains("conv y = x * k + b (pad 0, 0): f32"), "{out}");
        // The same under a ReLU: lowering gives the bindings to the sum,
        // and the ReLU is the kernel's.
        let out = fires(
            "pub fn conv(x: [f32; N, C, H, W], k: [f32; O, C, KH, KW]) -> [f32; N, O, H - KH + 1, W - KW + 1] {
                let y[n, o, i, j] = max(sum[c, r, s](x[n, c, iy, ix] * k[o, c, r, s]), 0.0) where iy = i + r, ix = j + s;
                y
            }",
        );
        assert!(out.contains("conv y = x * k (pad 0, 0, relu): f32"), "{out}");
    }

    /// `std::ml::conv2d` writes its strides, pads and dilations as run-time
    /// values: the kernel runs where they are positive, non-negative and
    /// positive and the
    /// guards' bounds are the image's, and the branch for the other values
    /// keeps the definition, which `pack` then makes a product.
    #[test]
    fn run_time_strides_branch_to_the_packed_product() {
        let p = crate::test_support::lowered(
            "pub fn f(x: [f32; N, C, H, W], k: [f32; O, C, KH, KW], b: [f32; O], s: i64, p: i64, d: i64) -> [f32; N, O, ?, ?] {
                std::ml::conv2d(x, k, b, s, s, p, p, d, d)
            }",
        );
        let p = crate::opt::optimize(p).unwrap_or_else(|e| panic!("{e}"));
        let out = ir::pretty::pretty_program(&p);
        let conv = out
            .find("conv y = x * k + bias (pad ph, pw, stride sh, sw, dilation dh, dw): f32")
            .unwrap_or_else(|| panic!("{out}"));
        let rest = &out[conv..];
        let when = rest.find("when ").unwrap_or_else(|| panic!("{out}"));
        let cond = &rest[when..rest[when..].find('\n').map_or(rest.len(), |e| when + e)];
        for part in ["sh >= 1", "sw >= 1", "dh >= 1", "dw >= 1", "ph >= 0", "pw >= 0", "h == X2", "w == X3"] {
            assert!(cond.contains(part), "{part} in {cond}");
        }
        let els = &rest[rest.find("else ").unwrap_or_else(|| panic!("{out}"))..];
        assert!(els.contains("gemm "), "{out}");
    }

    #[test]
    fn literal_strides_and_dilations_are_the_window_of_the_conv() {
        // Stride 2, padded by a guard (the read's coefficient of the output
        // axis is the stride).
        let out = fires(
            "pub fn conv(x: [f32; N, C, H, W], k: [f32; O, C, 3, 3], b: [f32; O]) -> [f32; N, O, H / 2, W / 2] {
                let y[n, o, i in 0..H / 2, j in 0..W / 2] = sum[c, r, s](
                    if ih >= 0 && ih < H && iw >= 0 && iw < W { x[n, c, ih, iw] * k[o, c, r, s] } else { 0.0 }
                    where ih = 2 * i + r - 1, iw = 2 * j + s - 1
                ) + b[o];
                y
            }",
        );
        assert!(out.contains("conv y = x * k + b (pad 1, 1, stride 2, 2): f32"), "{out}");
        // Mixed strides written out in the read, valid.
        let out = fires(
            "pub fn conv(x: [f32; N, C, H, W], k: [f32; O, C, 3, 3]) -> [f32; N, O, (H - 3) / 3 + 1, (W - 3) / 2 + 1] {
                let y[n, o, i, j] = sum[c, r, s](x[n, c, 3 * i + r, j * 2 + s] * k[o, c, r, s]);
                y
            }",
        );
        assert!(out.contains("conv y = x * k (pad 0, 0, stride 3, 2): f32"), "{out}");
        // A dilation (the coefficient of the window's variable).
        let out = fires(
            "pub fn conv(x: [f32; N, C, H, W], k: [f32; O, C, 3, 3]) -> [f32; N, O, H - 4, W - 4] {
                let y[n, o, i, j] = sum[c, r, s](x[n, c, i + 2 * r, j + 2 * s] * k[o, c, r, s]);
                y
            }",
        );
        assert!(out.contains("conv y = x * k (pad 0, 0, dilation 2, 2): f32"), "{out}");
        // A stride of 0 (every pixel reads the same window) stays a loop
        // nest: the kernel's window has strides of at least 1.
        leaves(
            "pub fn conv(x: [f32; N, C, H, W], k: [f32; O, C, 3, 3]) -> [f32; N, O, H, W] {
                let y[n, o, i in 0..H, j in 0..W] = sum[c, r, s](
                    if ih >= 0 && ih < H && iw >= 0 && iw < W { x[n, c, ih, iw] * k[o, c, r, s] } else { 0.0 }
                    where ih = 0 * i + r - 1, iw = j + s - 1
                );
                y
            }",
        );
    }

    /// Reverse mode writes a layer's input gradient as a sum over the
    /// output gradient's pixels and the window, filtered by equalities:
    /// the convolution of the output gradient by the kernel with filters
    /// and channels swapped, read backwards along the window.
    #[test]
    fn input_gradients_are_flipped_convolutions() {
        let p = crate::test_support::lowered(
            "pub fn g(x: [f32; N, C, H, W], k: [f32; O, C, 3, 3]) -> [f32; N, C, H, W] {
                let y[n, o, i in 0..H, j in 0..W] = sum[c, r, s](
                    if ih >= 0 && ih < H && iw >= 0 && iw < W { x[n, c, ih, iw] * k[o, c, r, s] } else { 0.0 }
                    where ih = i + r - 1, iw = j + s - 1
                );
                let loss = sum[n, o, i, j](y[n, o, i, j] * y[n, o, i, j]);
                @loss / @x
            }",
        );
        let out = ir::pretty::pretty_program(&crate::opt::optimize(p).unwrap_or_else(|e| panic!("{e}")));
        assert!(out.contains("conv d_x = d_y * k (pad 1, 1, k axes [1, 0, 2, 3], k flipped): f32"), "{out}");
        // Other pads (the flipped window's are `dh (KH - 1) - top`) and a
        // dilation.
        for (ih, iw, pads) in
            [("i + r - 2", "j + s", "pad 0, 2"), ("i + 2 * r - 2", "j + s - 1", "pad 2, 1, dilation 2, 1")]
        {
            let src = format!(
                "pub fn g(x: [f32; N, C, H, W], k: [f32; O, C, 3, 3]) -> [f32; N, C, H, W] {{
                    let y[n, o, i in 0..H, j in 0..W] = sum[c, r, s](
                        if ih >= 0 && ih < H && iw >= 0 && iw < W {{ x[n, c, ih, iw] * k[o, c, r, s] }} else {{ 0.0 }}
                        where ih = {ih}, iw = {iw}
                    );
                    let loss = sum[n, o, i, j](y[n, o, i, j] * y[n, o, i, j]);
                    @loss / @x
                }}"
            );
            let p = crate::test_support::lowered(&src);
            let out = ir::pretty::pretty_program(&crate::opt::optimize(p).unwrap_or_else(|e| panic!("{e}")));
            let want = format!("conv d_x = d_y * k ({pads}, k axes [1, 0, 2, 3], k flipped): f32");
            assert!(out.contains(&want), "{want} in {out}");
        }
        // A strided layer's input gradient is not a convolution of stride 1.
        let p = crate::test_support::lowered(
            "pub fn g(x: [f32; N, C, H, W], k: [f32; O, C, 3, 3]) -> [f32; N, C, H, W] {
                let y[n, o, i in 0..(H - 3) / 2 + 1, j in 0..(W - 3) / 2 + 1] = sum[c, r, s](x[n, c, 2 * i + r, 2 * j + s] * k[o, c, r, s]);
                let loss = sum[n, o, i, j](y[n, o, i, j] * y[n, o, i, j]);
                @loss / @x
            }",
        );
        let out = ir::pretty::pretty_program(&crate::opt::optimize(p).unwrap_or_else(|e| panic!("{e}")));
        assert!(!out.contains("conv d_x"), "{out}");
    }

    /// `std::ml::conv` reads the channel as `(o / fpg) * cpg + c` with a
    /// run-time group: the kernel runs per group where the group's
    /// filters divide the filters, its channels are the weights' and the
    /// image's are all the groups', and the branch for other values is
    /// the per-group product of `opt::groups`.
    #[test]
    fn grouped_convolutions_run_the_kernel_per_group() {
        let p = crate::test_support::lowered(
            "pub fn f(x: [f32; N, C, H, W], k: [f32; O, CG, KH, KW], b: [f32; O], s: i64, p: i64, d: i64, g: i64) -> [f32; N, O, ?, ?] {
                std::ml::conv(x, k, b, [s, s], [p, p, p, p], [d, d], g)
            }",
        );
        let out = ir::pretty::pretty_program(&crate::opt::optimize(p).unwrap_or_else(|e| panic!("{e}")));
        let conv = out
            .find("conv y = x * w + b (pad ph, pw, stride sh, sw, dilation dh, dw, groups W0 / fpg): f32")
            .unwrap_or_else(|| panic!("{out}"));
        let rest = &out[conv..];
        let when = rest.find("when ").unwrap_or_else(|| panic!("{out}"));
        let cond = &rest[when..rest[when..].find('\n').map_or(rest.len(), |e| when + e)];
        for part in
            ["sh >= 1", "ph >= 0", "(fpg >= 1)) && ((fpg * (W0 / fpg)) == W0)", "cpg == W1", "(W1 * (W0 / fpg)) == X1"]
        {
            assert!(cond.contains(part), "{part} in {cond}");
        }
        let els = &rest[rest.find("else ").unwrap_or_else(|| panic!("{out}"))..];
        assert!(els.contains("w_grp") && els.contains("gemm "), "{out}");
        // The literal form without guards: the rows and columns are proven
        // inside the image, the channel is checked by the branch.
        let out = fires(
            "pub fn conv(x: [f32; N, C, H, W], k: [f32; O, CG, KH, KW], fpg: i64) -> [f32; N, O, H - KH + 1, W - KW + 1] {
                let y[n, o, i, j] = sum[c, r, s](x[n, (o / fpg) * CG + c, i + r, j + s] * k[o, c, r, s]);
                y
            }",
        );
        assert!(out.contains("conv y = x * k (pad 0, 0, groups O / fpg): f32"), "{out}");
        assert!(out.contains("when ((fpg >= 1) && ((fpg * (O / fpg)) == O)) && ((CG * (O / fpg)) == C)"), "{out}");
        // Literal groups that agree with the extents need no branch.
        let out = fires(
            "pub fn conv(x: [f32; N, 8, H, W], k: [f32; 6, 4, 3, 3]) -> [f32; N, 6, H - 2, W - 2] {
                let y[n, o in 0..6, i, j] = sum[r, c, s](k[o, c, r, s] * x[n, 4 * (o / 3) + c, i + r, j + s]);
                y
            }",
        );
        assert!(out.contains("conv y = x * k (pad 0, 0, groups 2): f32") && !out.contains("when "), "{out}");
        // Literal groups that do not (3 channels apart, 4 read) and reads
        // of `o` in other forms stay with `opt::groups`.
        for read in [
            "x[n, 3 * (o / 3) + c, i + r, j + s]",
            "x[n, (o / 3) * 4 + c + o, i + r, j + s]",
            "x[n, (o / 3) * 4 + 2 * c, i + r, j + s]",
            "x[n, (o / (c + 1)) * 4, i + r, j + s]",
        ] {
            leaves(&format!(
                "pub fn conv(x: [f32; N, 8, H, W], k: [f32; 6, 4, 3, 3]) -> [f32; N, 6, H - 2, W - 2] {{
                    let y[n, o in 0..6, i, j] = sum[c, r, s]({read} * k[o, c, r, s]);
                    y
                }}"
            ));
        }
        // A window that reads past the image's rows without a guard.
        leaves(
            "pub fn conv(x: [f32; N, C, H, W], k: [f32; O, CG, 3, 3], fpg: i64) -> [f32; N, O, H, W - 2] {
                let y[n, o, i in 0..H, j] = sum[c, r, s](x[n, (o / fpg) * CG + c, i + r, j + s] * k[o, c, r, s]);
                y
            }",
        );
    }

    #[test]
    fn other_forms_keep_their_path() {
        // A guard that is not the image's bounds.
        leaves(
            "pub fn conv(x: [f32; N, C, H, W], k: [f32; O, C, 3, 3]) -> [f32; N, O, H, W] {
                let y[n, o, i in 0..H, j in 0..W] = sum[c, r, s](
                    if ih >= 0 && ih < H - 1 && iw >= 0 && iw < W { x[n, c, ih, iw] * k[o, c, r, s] } else { 0.0 }
                    where ih = i + r - 1, iw = j + s - 1
                );
                y
            }",
        );
        // A single image.
        let out = fires(
            "pub fn conv(x: [f32; C, H, W], k: [f32; O, C, 3, 3], b: [f32; O]) -> [f32; O, H - 2, W - 2] {
                let y[o, i, j] = sum[c, r, s](x[c, i + r, j + s] * k[o, c, r, s]) + b[o];
                y
            }",
        );
        assert!(out.contains("conv y = x * k + b (pad 0, 0): f32"), "{out}");
        // A window of one pixel (a matrix product).
        leaves(
            "pub fn conv(x: [f32; N, C, H, W], k: [f32; O, C, 1, 1]) -> [f32; N, O, H, W] {
                let y[n, o, i, j] = sum[c, r, s](x[n, c, i + r, j + s] * k[o, c, r, s]);
                y
            }",
        );
        // f64, channels last, a sum over fewer channels.
        leaves(
            "pub fn conv(x: [f64; N, C, H, W], k: [f64; O, C, 3, 3]) -> [f64; N, O, H - 2, W - 2] {
                let y[n, o, i, j] = sum[c, r, s](x[n, c, i + r, j + s] * k[o, c, r, s]);
                y
            }",
        );
        leaves(
            "pub fn conv(x: [f32; N, H, W, C], k: [f32; 3, 3, C, O]) -> [f32; N, H - 2, W - 2, O] {
                let y[n, i, j, o] = sum[r, s, c](x[n, i + r, j + s, c] * k[r, s, c, o]);
                y
            }",
        );
        leaves(
            "pub fn conv(x: [f32; N, C, H, W], k: [f32; O, D, 3, 3]) -> [f32; N, O, H - 2, W - 2] {
                let y[n, o, i, j] = sum[c in 0..min(C, D), r, s](x[n, c, i + r, j + s] * k[o, c, r, s]);
                y
            }",
        );
    }
}
