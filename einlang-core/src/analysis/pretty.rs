//! HIR pretty printer with analysis facts, for snapshot tests.
//!
//! Names print with a number per definition (`x#3`, numbered in order of
//! first appearance, so snapshots do not depend on how many definitions the
//! standard library has) so that two variables of the same spelling are
//! visibly different; each binding shows its inferred type and
//! each index variable its range.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt::Write;

use super::Tables;
use crate::base::ops::{Lit, UnOp};
use crate::hir::{Block, Callee, DefId, ExprId, ExprKind, Hir, Slot, Stmt, Where};

pub fn pretty_hir(hir: &Hir, t: &Tables) -> String {
    let mut p = Printer { hir, t, out: String::new(), numbers: RefCell::new(HashMap::new()) };
    for (f, func) in hir.fns.iter() {
        // The standard library's templates are not part of the program.
        if func.stdlib && func.is_generic() || hir.skipped(f) {
            continue;
        }
        let params: Vec<String> = func
            .params
            .iter()
            .map(|prm| {
                format!("{}: {}", p.def(prm.def), t.def_ty.get(&prm.def).map(|ty| t.show_ty(ty)).unwrap_or_default())
            })
            .collect();
        let ret = t.sigs.get(f.index()).and_then(|s| s.as_ref()).map(|s| t.show_ty(&s.ret)).unwrap_or_default();
        let _ = writeln!(p.out, "fn {}({}) -> {} {{", hir.name(func.def), params.join(", "), ret);
        p.block(&func.body, 1);
        p.out.push_str("}\n");
    }
    p.out
}

struct Printer<'a> {
    hir: &'a Hir,
    t: &'a Tables,
    out: String,
    /// Display numbers of definitions, in order of first appearance.
    numbers: RefCell<HashMap<DefId, usize>>,
}

impl Printer<'_> {
    /// Expressions joined by `, `.
    fn list(&mut self, items: &[ExprId]) -> String {
        items.iter().map(|x| self.expr(*x)).collect::<Vec<_>>().join(", ")
    }

    fn def(&self, d: DefId) -> String {
        let mut numbers = self.numbers.borrow_mut();
        let next = numbers.len();
        let n = *numbers.entry(d).or_insert(next);
        format!("{}#{n}", self.hir.name(d))
    }

    fn indent(&mut self, depth: usize) {
        for _ in 0..depth {
            self.out.push_str("    ");
        }
    }

    fn range(&self, d: DefId) -> String {
        match self.t.ranges.get(&d) {
            Some(r) => format!("{} in {}..{}", self.def(d), self.t.show_dim(&r.start), self.t.show_dim(&r.end)),
            None => format!("{} in ?", self.def(d)),
        }
    }

    fn indexed(&mut self, d: &crate::hir::IndexedDef) {
        let slots: Vec<String> = d
            .slots
            .iter()
            .map(|s| match s {
                Slot::Var { def, .. } => self.range(*def),
                Slot::Lit(n, _) => n.to_string(),
                Slot::Rest(d, _) => format!("..{}", self.def(*d)),
            })
            .collect();
        let ty = self.t.def_ty.get(&d.def).map(|t| self.t.show_ty(t)).unwrap_or_default();
        let body = self.expr(d.body);
        let wheres = self.wheres(&d.wheres);
        let _ = writeln!(self.out, "let {}[{}]: {} = {}{};", self.def(d.def), slots.join(", "), ty, body, wheres);
    }

    fn block(&mut self, b: &Block, depth: usize) {
        for s in &b.stmts {
            self.indent(depth);
            match s {
                Stmt::Let { def, value, .. } => {
                    let ty = self.t.def_ty.get(def).map(|t| self.t.show_ty(t)).unwrap_or_default();
                    let v = self.expr(*value);
                    let _ = writeln!(self.out, "let {}: {} = {};", self.def(*def), ty, v);
                }
                Stmt::Indexed(d) => self.indexed(d),
                Stmt::Recurrence(r) => {
                    let _ = writeln!(self.out, "recurrence {} {{", self.def(r.def));
                    for d in &r.clauses {
                        self.indent(depth + 1);
                        self.indexed(d);
                    }
                    self.indent(depth);
                    let _ = writeln!(self.out, "}}");
                }
                Stmt::Expr(e) => {
                    let e = self.expr(*e);
                    let _ = writeln!(self.out, "{e};");
                }
            }
        }
        if let Some(t) = b.tail {
            self.indent(depth);
            let e = self.expr(t);
            let _ = writeln!(self.out, "{e}");
        }
    }

    fn wheres(&mut self, ws: &[Where]) -> String {
        if ws.is_empty() {
            return String::new();
        }
        let items: Vec<String> = ws
            .iter()
            .map(|w| match w {
                Where::Bind { def, value } => format!("{} = {}", self.def(*def), self.expr(*value)),
                Where::Guard(g) => self.expr(*g),
            })
            .collect();
        format!(" where {}", items.join(", "))
    }

    fn pat(&self, p: &crate::hir::Pat) -> String {
        let lit = |l: &Lit| match l {
            Lit::Int(v, _) => v.to_string(),
            Lit::Float(s, _) => s.clone(),
            Lit::Bool(b) => b.to_string(),
            Lit::Str(s) => format!("{s:?}"),
        };
        match p {
            crate::hir::Pat::Wild => "_".to_string(),
            crate::hir::Pat::Bind(d) => self.def(*d),
            crate::hir::Pat::Lit(l, _) => lit(l),
            crate::hir::Pat::Range { lo, hi, inclusive, .. } => {
                format!("{}{}{}", lit(lo), if *inclusive { "..=" } else { ".." }, lit(hi))
            }
            crate::hir::Pat::Tuple(items) => {
                format!("({})", items.iter().map(|p| self.pat(p)).collect::<Vec<_>>().join(", "))
            }
            crate::hir::Pat::Or(alts) => alts.iter().map(|p| self.pat(p)).collect::<Vec<_>>().join(" | "),
            crate::hir::Pat::At(d, p) => format!("{} @ {}", self.def(*d), self.pat(p)),
        }
    }

    fn expr(&mut self, e: ExprId) -> String {
        match &self.hir.exprs[e].kind {
            ExprKind::Error => "{error}".to_string(),
            ExprKind::Lit(l) => match l {
                Lit::Int(v, _) => v.to_string(),
                Lit::Float(s, _) => s.clone(),
                Lit::Bool(b) => b.to_string(),
                Lit::Str(s) => format!("{s:?}"),
            },
            ExprKind::Def(d) => self.def(*d),
            ExprKind::Rest(d) => format!("..{}", self.def(*d)),
            ExprKind::Deriv { target, wrt } => format!("@{} / @{}", self.def(*target), self.def(*wrt)),
            ExprKind::Comprehension { body, clauses, .. } => {
                let clauses: Vec<String> = clauses
                    .iter()
                    .map(|c| match c {
                        crate::hir::CompClause::Range { def, .. } => self.range(*def),
                        crate::hir::CompClause::Each { def, over } => {
                            format!("{} in {}", self.def(*def), self.expr(*over))
                        }
                        crate::hir::CompClause::Filter(f) => self.expr(*f),
                    })
                    .collect();
                format!("[{} | {}]", self.expr(*body), clauses.join(", "))
            }
            ExprKind::Unary(op, x) => format!("{}{}", if *op == UnOp::Neg { "-" } else { "!" }, self.expr(*x)),
            ExprKind::Binary(op, a, b) => format!("({} {} {})", self.expr(*a), op.symbol(), self.expr(*b)),
            ExprKind::Cast(x, k) => format!("({} as {})", self.expr(*x), k.name()),
            ExprKind::TensorCast(x, _) => format!("({} as tensor)", self.expr(*x)),
            ExprKind::Call { callee, args, .. } => {
                let name = match callee {
                    Callee::Fn(f) => self.hir.name(self.hir.fns[*f].def).to_string(),
                    Callee::Intrinsic(i) => format!("intrinsic::{}", i.name()),
                };
                format!("{name}({})", self.list(args))
            }
            ExprKind::Index { base, args } => {
                let args: Vec<String> = args.iter().map(|a| self.expr(*a)).collect();
                let proven = match self.t.read_proven.get(&e) {
                    Some(true) => "",
                    Some(false) => "?",
                    None => "",
                };
                format!("{}[{}]{proven}", self.expr(*base), args.join(", "))
            }
            ExprKind::Field(x, i) => format!("{}.{i}", self.expr(*x)),
            ExprKind::Reduce { op, vars, wheres, body } => {
                let vars: Vec<String> = vars.iter().map(|v| self.range(v.def)).collect();
                let body = self.expr(*body);
                let wheres = self.wheres(wheres);
                format!("{}[{}]({body}{wheres})", op.name(), vars.join(", "))
            }
            ExprKind::If { cond, then, els } => {
                let c = self.expr(*cond);
                let t = self.expr(*then);
                let e2 = els.map(|x| self.expr(x)).unwrap_or_default();
                format!("if {c} {{ {t} }} else {{ {e2} }}")
            }
            ExprKind::Block(b) => {
                let saved = std::mem::take(&mut self.out);
                self.block(b, 0);
                let inner = std::mem::replace(&mut self.out, saved);
                format!("{{ {} }}", inner.trim().replace('\n', " "))
            }
            ExprKind::Match { scrutinee, arms } => {
                let s = self.expr(*scrutinee);
                let arms: Vec<String> = arms
                    .iter()
                    .map(|a| {
                        let guard = a.guard.map(|g| format!(" if {}", self.expr(g))).unwrap_or_default();
                        format!("{}{guard} => {}", self.pat(&a.pat), self.expr(a.body))
                    })
                    .collect();
                format!("match {s} {{ {} }}", arms.join(", "))
            }
            ExprKind::Builtin(b, args) => {
                format!("{}({})", b.name(), self.list(args))
            }
            ExprKind::Interp(parts) => {
                let mut text = String::from("f\"");
                for p in parts {
                    match p {
                        crate::hir::InterpPart::Text(t) => text.push_str(t),
                        crate::hir::InterpPart::Value(e, prec) => {
                            let v = self.expr(*e);
                            match prec {
                                Some(p) => text.push_str(&format!("{{{v}:.{p}}}")),
                                None => text.push_str(&format!("{{{v}}}")),
                            }
                        }
                    }
                }
                text.push('"');
                text
            }
            ExprKind::Array(items) => format!("[{}]", self.list(items)),
            ExprKind::Jagged(items) => format!("jagged[{}]", self.list(items)),
            ExprKind::Tuple(items) => format!("({})", self.list(items)),
        }
    }
}
