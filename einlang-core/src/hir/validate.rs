//! The HIR validator: the invariants later passes rely on.
//!
//! - every `ExprId` and `DefId` a node mentions exists;
//! - operands precede their users (an expression's operands have smaller
//!   ids), which makes every walk over the arena terminate;
//! - every function's `def` names that function.

use super::{Callee, DefKind, ExprId, ExprKind, Hir, Where};

/// Checks `hir`; the error lists every violation, one per line.
pub fn validate(hir: &Hir) -> Result<(), String> {
    let mut errors = Vec::new();
    if hir.expr_spans.len() != hir.exprs.len() {
        errors.push(format!("{} expressions but {} spans", hir.exprs.len(), hir.expr_spans.len()));
    }
    let n_defs = hir.defs.len() as u32;
    let n_fns = hir.fns.len() as u32;
    for (id, e) in hir.exprs.iter() {
        let mut ops: Vec<ExprId> = Vec::new();
        super::operands(&e.kind, &mut ops);
        let mut defs = Vec::new();
        match &e.kind {
            ExprKind::Def(d) | ExprKind::Rest(d) => defs.push(*d),
            ExprKind::Call { callee: Callee::Fn(f), .. } if f.raw() >= n_fns => {
                errors.push(format!("expression {id:?} calls a missing function {f:?}"));
            }
            ExprKind::Reduce { vars, wheres, .. } => {
                defs.extend(vars.iter().map(|v| v.def));
                defs.extend(
                    wheres.iter().filter_map(|w| if let Where::Bind { def, .. } = w { Some(*def) } else { None }),
                );
            }
            ExprKind::Comprehension { clauses, .. } => {
                for c in clauses {
                    if let super::CompClause::Range { def, .. } | super::CompClause::Each { def, .. } = c {
                        defs.push(*def);
                    }
                }
            }
            _ => {}
        }
        for o in ops {
            if o.raw() >= id.raw() {
                errors.push(format!("expression {id:?} uses {o:?}, which does not precede it"));
            }
        }
        for d in defs {
            if d.raw() >= n_defs {
                errors.push(format!("expression {id:?} names a missing definition {d:?}"));
            }
        }
    }
    for (req, point) in &hir.deriv_points {
        let n = hir.exprs.len() as u32;
        if req.raw() >= n || !matches!(hir.exprs[*req].kind, ExprKind::Deriv { .. } | ExprKind::Def(_)) {
            errors.push(format!("a derivative point names {req:?}, which is not a request"));
        }
        if point.iter().any(|e| e.raw() >= n) {
            errors.push(format!("the derivative point of {req:?} names a missing expression"));
        }
    }
    for (f, func) in hir.fns.iter() {
        if func.def.raw() >= n_defs || hir.defs[func.def].kind != DefKind::Fn(f) {
            errors.push(format!("function {f:?} is not named by its definition"));
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::validate;
    use crate::diag::Diagnostics;
    use crate::hir::ExprKind;

    fn resolved(src: &str) -> crate::hir::Hir {
        let ast = crate::syntax::parse_str(src).unwrap_or_else(|_| panic!("parses"));
        let mut diags = Diagnostics::new();
        let hir = crate::resolve::resolve_program(
            &ast,
            &crate::source::stdlib::stdlib().expect("the standard library parses"),
            &mut diags,
        );
        assert!(!diags.has_errors());
        hir
    }

    #[test]
    fn resolved_programs_are_valid() {
        let hir = resolved(
            "use std::math::exp; fn f(x: [f32; N, K], w: [f32; K]) -> [f32; N] {
                let y[n] = exp(sum[k](x[n, k] * w[k] where k > 0)) where z = 1.0, n >= 0;
                if true { y } else { y }
            }",
        );
        assert_eq!(validate(&hir), Ok(()));
    }

    #[test]
    fn programs_with_instances_are_valid_after_monomorphization() {
        // Generic functions (library and user) called at two element types
        // and two ranks: every instance is a copy appended to the arenas.
        let src = "use std::ml::relu;
            fn double(x) { x + x }
            fn f(a: [f32; N], b: [i64; M, K]) -> ([f32; N], [i64; M, K]) {
                let r[i] = relu(a[i]);
                (double(r), double(b))
            }";
        let ast = crate::syntax::parse_str(src).unwrap_or_else(|_| panic!("parses"));
        let compiled = crate::compile(ast, &crate::Options::default()).unwrap_or_else(|d| panic!("{}", d[0].message));
        assert!(
            compiled.hir.fns.iter().filter(|(_, f)| f.origin.is_some()).count() >= 3,
            "expected instances of relu and double"
        );
        assert_eq!(validate(&compiled.hir), Ok(()));
    }

    #[test]
    fn a_forward_operand_is_reported() {
        let mut hir = resolved("fn f(x: f32) -> f32 { x + x }");
        let last = hir.exprs.iter().last().map(|(id, _)| id).unwrap_or_else(|| panic!("has expressions"));
        // Make the first expression use the last one.
        let first = hir.exprs.iter().next().map(|(id, _)| id).unwrap_or_else(|| panic!("has expressions"));
        hir.exprs[first].kind = ExprKind::Unary(crate::base::ops::UnOp::Neg, last);
        let err = validate(&hir).unwrap_err();
        assert!(err.contains("does not precede it"), "{err}");
    }
}
