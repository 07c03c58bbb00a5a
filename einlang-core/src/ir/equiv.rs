//! Whether two expressions of the loop IR compute the same value up to the
//! names of their variables (alpha-equivalence): the common
//! subexpressions `opt` shares (`dedup`, `hoist`, `rows`), and the facts a
//! back end proves from a definition it can see (`codegen::rust`'s
//! `FnCx::below_its_maximum`: an exponential's argument against the
//! maximum it is taken below).

use std::collections::HashMap;

use crate::base::dim::Dim;
use crate::ir::{Expr, ExprKind, VarId};

/// Whether `a` and `b` compute the same value, `a`'s variables in `map`
/// standing for `b`'s; the variables of corresponding loops are added to
/// it. Only pure arithmetic is compared (anything else is unequal), and
/// dimensions must be equal and mention no mapped variable.
pub fn alpha_eq(a: &Expr, b: &Expr, map: &mut HashMap<VarId, VarId>) -> bool {
    if a.ty != b.ty {
        return false;
    }
    let dim_ok = |x: &Dim, y: &Dim, map: &HashMap<VarId, VarId>| {
        x == y && x.vars().iter().all(|v| !map.contains_key(&VarId(v.0)) && !map.values().any(|w| w.0 == v.0))
    };
    let all = |xs: &[Expr], ys: &[Expr], map: &mut HashMap<VarId, VarId>| {
        xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| alpha_eq(x, y, map))
    };
    match (&a.kind, &b.kind) {
        (ExprKind::Lit(x), ExprKind::Lit(y)) => x == y,
        (ExprKind::Var(x), ExprKind::Var(y)) => match map.get(x) {
            Some(m) => m == y,
            None => x == y && !map.values().any(|w| w == y),
        },
        (ExprKind::Dim(x), ExprKind::Dim(y)) => dim_ok(x, y, map),
        (ExprKind::Unary(o1, x), ExprKind::Unary(o2, y)) => o1 == o2 && alpha_eq(x, y, map),
        (ExprKind::Binary(o1, x1, x2), ExprKind::Binary(o2, y1, y2)) => {
            o1 == o2 && alpha_eq(x1, y1, map) && alpha_eq(x2, y2, map)
        }
        (ExprKind::Cast(x, k1), ExprKind::Cast(y, k2)) => k1 == k2 && alpha_eq(x, y, map),
        (ExprKind::Intrinsic(i1, xs), ExprKind::Intrinsic(i2, ys)) => i1 == i2 && all(xs, ys, map),
        (
            ExprKind::Read { tensor: t1, indices: xs, checked: c1 },
            ExprKind::Read { tensor: t2, indices: ys, checked: c2 },
        ) => t1 == t2 && c1 == c2 && all(xs, ys, map),
        (
            ExprKind::Reduce { op: o1, loops: l1, wheres: w1, body: x },
            ExprKind::Reduce { op: o2, loops: l2, wheres: w2, body: y },
        ) => {
            if o1 != o2 || l1.len() != l2.len() || !w1.is_empty() || !w2.is_empty() {
                return false;
            }
            for (p, q) in l1.iter().zip(l2) {
                if !dim_ok(&p.start, &q.start, map) || !dim_ok(&p.end, &q.end, map) {
                    return false;
                }
                map.insert(p.index, q.index);
            }
            alpha_eq(x, y, map)
        }
        _ => false,
    }
}
