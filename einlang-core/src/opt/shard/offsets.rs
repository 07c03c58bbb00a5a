//! Reads along the sharded axis at the point's index plus an offset of
//! known range ([`offset_of`]): the halo widths each side.

use super::*;

/// `(i, c)` when `ix` is `i + c` for an index `i` in `scope` and a
/// constant `c`.
pub(super) fn constant_offset(ix: &Expr, scope: &[VarId]) -> Option<(VarId, i64)> {
    Affine::of(ix, &|_| true)?.var_plus_const().filter(|(i, _)| scope.contains(i))
}

/// Offsets from a point's index known by their range: the indices of
/// reductions with constant ranges (`dr` in `x[r + dr]`), and where-bound
/// variables that hold a point's index plus such an offset (`where iy = r +
/// dr`).
#[derive(Clone, Debug, Default)]
pub(super) struct Ranges {
    /// Reduction indices: their least and greatest value.
    loops: HashMap<VarId, (i64, i64)>,
    /// Where-bound variables: the point's index, and the least and greatest
    /// offset from it.
    binds: HashMap<VarId, (VarId, i64, i64)>,
}

impl Ranges {
    /// These ranges and the axes of constant range among `axes` (a
    /// definition's indices).
    pub(super) fn with_axes(mut self, axes: &[crate::ir::Axis]) -> Ranges {
        for a in axes {
            if let (Some(s), Some(n)) = (a.start.as_constant(), a.extent.as_constant()) {
                self.loops.insert(a.index, (s, s + (n - 1).max(0)));
            }
        }
        self
    }

    pub(super) fn merge(&mut self, o: Ranges) {
        self.loops.extend(o.loops);
        self.binds.extend(o.binds);
    }

    /// The ranges in `e`, whose point's indices are `scope` (variables are
    /// bound once, so one table serves the whole expression).
    pub(super) fn of(e: &Expr, scope: &[VarId]) -> Ranges {
        let mut r = Ranges::default();
        visit_all(e, &mut |x| {
            let wheres = match &x.kind {
                ExprKind::Reduce { loops, wheres, .. } => {
                    for l in loops {
                        if let (Some(a), Some(b)) = (l.start.as_constant(), l.end.as_constant()) {
                            r.loops.insert(l.index, (a, a.max(b - 1)));
                        }
                    }
                    wheres
                }
                ExprKind::Guarded { wheres, .. } => wheres,
                _ => return,
            };
            for w in wheres {
                if let WhereEntry::Bind(v, value) = w {
                    let mut at = None;
                    match (linear(value, scope, &r, &mut at), at) {
                        (Some((lo, hi)), Some((i, _))) => {
                            r.binds.insert(*v, (i, lo, hi));
                        }
                        (Some(range), None) => {
                            r.loops.insert(*v, range);
                        }
                        _ => {}
                    }
                }
            }
        });
        r
    }
}

/// An index along a sharded axis: the point's index `index` plus an offset
/// between `lo` and `hi`, directly or through a where-bound variable
/// (`bound`).
#[derive(Clone, Copy, Debug)]
pub(super) struct Offset {
    pub(super) index: VarId,
    pub(super) lo: i64,
    pub(super) hi: i64,
    pub(super) bound: bool,
}

/// The index `ix` as the point's own index (one of `scope`) plus an offset
/// of known range: sums and differences of constants, reduction indices of
/// constant range and their constant multiples, with the point's index
/// (directly or through a where-bound variable) once, added.
pub(super) fn offset_of(ix: &Expr, scope: &[VarId], ranges: &Ranges) -> Option<Offset> {
    let mut at = None;
    let (lo, hi) = linear(ix, scope, ranges, &mut at)?;
    at.map(|(index, bound)| Offset { index, lo, hi, bound })
}

/// The range of `e`, less the point's index it holds (noted in `at`): `e`
/// in its affine form, the point's index (or a where-bound variable that
/// holds it) added once, every other variable a reduction index or a
/// where-bound variable of known range.
pub(super) fn linear(e: &Expr, scope: &[VarId], ranges: &Ranges, at: &mut Option<(VarId, bool)>) -> Option<(i64, i64)> {
    let known = |v: VarId| scope.contains(&v) || ranges.binds.contains_key(&v) || ranges.loops.contains_key(&v);
    let form = Affine::of(e, &known)?;
    let c = form.rest.as_constant()?;
    let (mut lo, mut hi) = (c, c);
    for &(v, k) in &form.terms {
        let (a, b) = if scope.contains(&v) {
            if k != 1 || at.is_some() {
                return None;
            }
            *at = Some((v, false));
            (0, 0)
        } else if let Some(&(i, a, b)) = ranges.binds.get(&v) {
            if k != 1 || at.is_some() {
                return None;
            }
            *at = Some((i, true));
            (a, b)
        } else {
            let &(a, b) = ranges.loops.get(&v)?;
            let (x, y) = (a.checked_mul(k)?, b.checked_mul(k)?);
            (x.min(y), x.max(y))
        };
        lo = lo.checked_add(a)?;
        hi = hi.checked_add(b)?;
    }
    Some((lo, hi))
}
