//! The HIR validator: the invariants later passes rely on.
//!
//! - every `ExprId` and `DefId` a node mentions exists;
//! - operands precede their users (an expression's operands have smaller
//!   ids), which makes every walk over the arena terminate;
//! - every function's `def` names that function.

use super::{Block, Callee, DefKind, ExprId, ExprKind, Hir, InterpPart, Slot, Stmt, Where};

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
        let mut defs = Vec::new();
        match &e.kind {
            ExprKind::Lit(_) | ExprKind::Error => {}
            ExprKind::Def(d) | ExprKind::Rest(d) => defs.push(*d),
            ExprKind::Unary(_, a) | ExprKind::Cast(a, _) | ExprKind::Field(a, _) | ExprKind::TensorCast(a, _) => {
                ops.push(*a)
            }
            ExprKind::Binary(_, a, b) => ops.extend([*a, *b]),
            ExprKind::Call { callee, args, .. } => {
                if let Callee::Fn(f) = callee {
                    if f.raw() >= n_fns {
                        errors.push(format!("expression {id:?} calls a missing function {f:?}"));
                    }
                }
                ops.extend(args.iter().copied());
            }
            ExprKind::Index { base, args } => {
                ops.push(*base);
                ops.extend(args.iter().copied());
            }
            ExprKind::Reduce { vars, wheres, body, .. } => {
                for v in vars {
                    defs.push(v.def);
                    if let Some(r) = &v.range {
                        ops.extend([r.start, r.end]);
                    }
                }
                for w in wheres {
                    match w {
                        Where::Bind { def, value } => {
                            defs.push(*def);
                            ops.push(*value);
                        }
                        Where::Guard(g) => ops.push(*g),
                    }
                }
                ops.push(*body);
            }
            ExprKind::If { cond, then, els } => {
                ops.extend([*cond, *then]);
                ops.extend(*els);
            }
            ExprKind::Block(b) => block_operands(b, &mut |o| ops.push(o)),
            ExprKind::Array(items) | ExprKind::Tuple(items) | ExprKind::Builtin(_, items) => {
                ops.extend(items.iter().copied())
            }
            ExprKind::Comprehension { body, clauses } => {
                for c in clauses {
                    match c {
                        super::CompClause::Range { def, range } => {
                            defs.push(*def);
                            ops.extend([range.start, range.end]);
                        }
                        super::CompClause::Each { def, over } => {
                            defs.push(*def);
                            ops.push(*over);
                        }
                        super::CompClause::Filter(f) => ops.push(*f),
                    }
                }
                ops.push(*body);
            }
            ExprKind::Match { scrutinee, arms } => {
                ops.push(*scrutinee);
                for a in arms {
                    ops.extend(a.guard);
                    ops.push(a.body);
                }
            }
            ExprKind::Interp(parts) => {
                for p in parts {
                    if let InterpPart::Value(e, _) = p {
                        ops.push(*e);
                    }
                }
            }
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

fn block_operands(b: &Block, operand: &mut dyn FnMut(ExprId)) {
    for s in &b.stmts {
        match s {
            Stmt::Let { value, .. } | Stmt::Expr(value) => operand(*value),
            Stmt::Indexed(d) => {
                for slot in &d.slots {
                    if let Slot::Var { range: Some(r), .. } = slot {
                        operand(r.start);
                        operand(r.end);
                    }
                }
                for w in &d.wheres {
                    match w {
                        Where::Bind { value, .. } => operand(*value),
                        Where::Guard(g) => operand(*g),
                    }
                }
                operand(d.body);
            }
        }
    }
    if let Some(t) = b.tail {
        operand(t);
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
        let hir = crate::resolve::resolve_program(&ast, &mut diags);
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
    fn a_forward_operand_is_reported() {
        let mut hir = resolved("fn f(x: f32) -> f32 { x + x }");
        let last = hir.exprs.iter().last().map(|(id, _)| id).unwrap_or_else(|| panic!("has expressions"));
        // Make the first expression use the last one.
        let first = hir.exprs.iter().next().map(|(id, _)| id).unwrap_or_else(|| panic!("has expressions"));
        hir.exprs[first].kind = ExprKind::Unary(crate::syntax::ast::UnOp::Neg, last);
        let err = validate(&hir).unwrap_err();
        assert!(err.contains("does not precede it"), "{err}");
    }
}
