//! Copying HIR with substitution: the one way the transforms (autodiff,
//! tensor elements) write an expression somewhere new. Every name the copy binds (block locals, index and
//! reduction variables, where bindings, pattern bindings) gets a fresh
//! definition, so no `DefId` is bound twice; free names stay as they are
//! unless `subst` replaces them by an expression (copied at each use, so the
//! result shares no node with anything).
//! A `where` binding whose name is substituted is dropped.

use std::collections::HashMap;

use crate::hir::{
    Arm, Block, CompClause, DefId, ExprId, ExprKind, Hir, IndexedDef, InterpPart, Pat, Range, RedVar, Slot, Stmt, Where,
};

#[derive(Default)]
pub(crate) struct Copier {
    /// Free names replaced by (copies of) an expression.
    pub subst: HashMap<DefId, ExprId>,
    /// Names bound inside the copied code, to their fresh copies.
    pub map: HashMap<DefId, DefId>,
    /// Differentials `@p` of a rule's parameters replaced by expressions.
    pub diffs: HashMap<DefId, ExprId>,
    /// Reads of one tensor become reads of another with one axis reversed.
    pub reindex: Option<Reindex>,
    /// Nodes copied as (copies of) another expression.
    pub replace: HashMap<ExprId, ExprId>,
    /// Names read by index that the copy rewrites (see [`ReadAs`]).
    pub reads: HashMap<DefId, ReadAs>,
    /// Set when a name of `reads` is used in a way it cannot rewrite.
    pub failed: bool,
}

/// How a read `d[args]` of a name in `Copier::reads` is copied.
#[derive(Clone)]
pub(crate) enum ReadAs {
    /// `base[prefix.., args..]`: a parameter bound to a (partial) read.
    Prefix { base: DefId, prefix: Vec<ExprId> },
    /// `body` with `slots` replaced by `args`: a definition read at one
    /// of its points.
    Point { slots: Vec<DefId>, body: ExprId },
    /// Not available where the copy goes: any use fails.
    Unavailable,
}

/// `from[.., e, ..]` (e at `axis`) becomes `to[.., last - e, ..]`.
#[derive(Clone, Copy)]
pub(crate) struct Reindex {
    pub from: DefId,
    pub to: DefId,
    pub axis: usize,
    pub last: ExprId,
}

impl Copier {
    pub fn new() -> Copier {
        Copier::default()
    }

    pub fn with(subst: HashMap<DefId, ExprId>) -> Copier {
        Copier { subst, ..Copier::default() }
    }

    /// A fresh definition for a name the copy binds.
    pub fn bind(&mut self, hir: &mut Hir, d: DefId) -> DefId {
        let def = hir.defs[d].clone();
        let n = hir.alloc_def(def.name, def.kind, def.span);
        self.map.insert(d, n);
        n
    }

    fn name(&self, d: DefId) -> DefId {
        self.map.get(&d).copied().unwrap_or(d)
    }

    pub fn range(&mut self, hir: &mut Hir, r: &Range) -> Range {
        Range { start: self.expr(hir, r.start), end: self.expr(hir, r.end), span: r.span }
    }

    fn opt_range(&mut self, hir: &mut Hir, r: &Option<Range>) -> Option<Range> {
        r.as_ref().map(|r| self.range(hir, r))
    }

    /// Where entries.
    pub fn wheres(&mut self, hir: &mut Hir, ws: &[Where]) -> Vec<Where> {
        let mut out = Vec::new();
        for w in ws {
            match w {
                Where::Bind { def, .. } if self.subst.contains_key(def) => {}
                Where::Bind { def, value } => {
                    let value = self.expr(hir, *value);
                    let def = self.bind(hir, *def);
                    out.push(Where::Bind { def, value });
                }
                Where::Guard(g) => out.push(Where::Guard(self.expr(hir, *g))),
            }
        }
        out
    }

    pub fn indexed(&mut self, hir: &mut Hir, d: &IndexedDef, def: DefId) -> IndexedDef {
        let slots = d
            .slots
            .iter()
            .map(|s| match s {
                Slot::Var { def, range } => {
                    let range = self.opt_range(hir, range);
                    Slot::Var { def: self.bind(hir, *def), range }
                }
                other => other.clone(),
            })
            .collect();
        let wheres = self.wheres(hir, &d.wheres);
        let body = self.expr(hir, d.body);
        IndexedDef { def, slots, wheres, body, span: d.span }
    }

    pub fn block(&mut self, hir: &mut Hir, b: &Block) -> Block {
        let mut stmts = Vec::new();
        for s in &b.stmts {
            stmts.push(match s {
                Stmt::Let { def, ty, value, span } => {
                    let value = self.expr(hir, *value);
                    Stmt::Let { def: self.bind(hir, *def), ty: ty.clone(), value, span: *span }
                }
                Stmt::Indexed(d) => {
                    let def = self.bind(hir, d.def);
                    Stmt::Indexed(self.indexed(hir, d, def))
                }
                Stmt::Recurrence(r) => {
                    let def = self.bind(hir, r.def);
                    let clauses = r.clauses.iter().map(|c| self.indexed(hir, c, def)).collect();
                    Stmt::Recurrence(crate::hir::Recurrence { def, clauses, span: r.span })
                }
                Stmt::Expr(e) => Stmt::Expr(self.expr(hir, *e)),
            });
        }
        let tail = b.tail.map(|t| self.expr(hir, t));
        Block { stmts, tail }
    }

    fn pat(&mut self, hir: &mut Hir, p: &Pat) -> Pat {
        match p {
            Pat::Bind(d) => Pat::Bind(self.bind(hir, *d)),
            Pat::Tuple(items) => Pat::Tuple(items.iter().map(|p| self.pat(hir, p)).collect()),
            Pat::Or(alts) => Pat::Or(alts.iter().map(|p| self.pat(hir, p)).collect()),
            Pat::At(d, p) => {
                let d = self.bind(hir, *d);
                Pat::At(d, Box::new(self.pat(hir, p)))
            }
            other => other.clone(),
        }
    }

    /// The copy of a read of a name in `reads`, at the copied `args`.
    fn read_as(&mut self, hir: &mut Hir, how: ReadAs, mut args: Vec<ExprId>, span: crate::base::span::Span) -> ExprId {
        match how {
            ReadAs::Prefix { base, prefix } => {
                let mut all: Vec<ExprId> = prefix.iter().map(|p| self.expr(hir, *p)).collect();
                all.append(&mut args);
                let base = hir.alloc_expr(ExprKind::Def(base), span);
                hir.alloc_expr(ExprKind::Index { base, args: all }, span)
            }
            ReadAs::Point { slots, body } if slots.len() == args.len() => {
                let saved: Vec<_> = slots.iter().zip(&args).map(|(s, a)| (*s, self.subst.insert(*s, *a))).collect();
                let value = self.expr(hir, body);
                for (s, old) in saved {
                    match old {
                        Some(o) => self.subst.insert(s, o),
                        None => self.subst.remove(&s),
                    };
                }
                value
            }
            _ => {
                self.failed = true;
                hir.alloc_expr(ExprKind::Error, span)
            }
        }
    }

    pub fn expr(&mut self, hir: &mut Hir, e: ExprId) -> ExprId {
        if let Some(to) = self.replace.remove(&e) {
            let copy = self.expr(hir, to);
            self.replace.insert(e, to);
            return copy;
        }
        let span = hir.span(e);
        let kind = match hir.exprs[e].kind.clone() {
            ExprKind::Def(d) => {
                if let Some(&to) = self.subst.get(&d) {
                    return self.expr(hir, to);
                }
                self.failed |= self.reads.contains_key(&d);
                ExprKind::Def(self.name(d))
            }
            ExprKind::Differential(d) => {
                if let Some(&to) = self.diffs.get(&d) {
                    return self.expr(hir, to);
                }
                ExprKind::Differential(self.name(d))
            }
            ExprKind::Deriv { target, wrt } => ExprKind::Deriv { target: self.name(target), wrt: self.name(wrt) },
            k @ (ExprKind::Lit(_) | ExprKind::Error | ExprKind::Rest(_)) => k,
            ExprKind::Unary(op, a) => ExprKind::Unary(op, self.expr(hir, a)),
            ExprKind::Binary(op, a, b) => {
                let a = self.expr(hir, a);
                ExprKind::Binary(op, a, self.expr(hir, b))
            }
            ExprKind::Cast(a, k) => ExprKind::Cast(self.expr(hir, a), k),
            ExprKind::Field(a, i) => ExprKind::Field(self.expr(hir, a), i),
            ExprKind::TensorCast(a, t) => ExprKind::TensorCast(self.expr(hir, a), t),
            ExprKind::Call { callee, callee_span, args } => {
                let args = args.iter().map(|a| self.expr(hir, *a)).collect();
                ExprKind::Call { callee, callee_span, args }
            }
            ExprKind::Index { base, args } => {
                let mut args: Vec<ExprId> = args.iter().map(|a| self.expr(hir, *a)).collect();
                if let ExprKind::Def(d) = hir.exprs[base].kind {
                    if let Some(how) = self.reads.get(&d).cloned() {
                        return self.read_as(hir, how, args, span);
                    }
                }
                let base = match (self.reindex, &hir.exprs[base].kind) {
                    (Some(r), ExprKind::Def(d)) if *d == r.from && r.axis < args.len() => {
                        let last = self.expr(hir, r.last);
                        args[r.axis] =
                            hir.alloc_expr(ExprKind::Binary(crate::base::ops::BinOp::Sub, last, args[r.axis]), span);
                        hir.alloc_expr(ExprKind::Def(r.to), span)
                    }
                    _ => self.expr(hir, base),
                };
                ExprKind::Index { base, args }
            }
            ExprKind::Array(xs) => ExprKind::Array(xs.iter().map(|a| self.expr(hir, *a)).collect()),
            ExprKind::Jagged(xs) => ExprKind::Jagged(xs.iter().map(|a| self.expr(hir, *a)).collect()),
            ExprKind::Tuple(xs) => ExprKind::Tuple(xs.iter().map(|a| self.expr(hir, *a)).collect()),
            ExprKind::Builtin(b, xs) => ExprKind::Builtin(b, xs.iter().map(|a| self.expr(hir, *a)).collect()),
            ExprKind::Reduce { op, vars, wheres, body } => {
                // The reduction's variables shadow any substitution of
                // the same names outside it.
                let shadowed: Vec<_> =
                    vars.iter().map(|v| (v.def, self.subst.remove(&v.def), self.map.get(&v.def).copied())).collect();
                let vars = vars
                    .iter()
                    .map(|v| {
                        let range = self.opt_range(hir, &v.range);
                        RedVar { def: self.bind(hir, v.def), range }
                    })
                    .collect();
                let wheres = self.wheres(hir, &wheres);
                let body = self.expr(hir, body);
                for (d, subst, map) in shadowed {
                    if let Some(s) = subst {
                        self.subst.insert(d, s);
                    }
                    match map {
                        Some(m) => self.map.insert(d, m),
                        None => self.map.remove(&d),
                    };
                }
                ExprKind::Reduce { op, vars, wheres, body }
            }
            ExprKind::If { cond, then, els } => {
                let cond = self.expr(hir, cond);
                let then = self.expr(hir, then);
                ExprKind::If { cond, then, els: els.map(|x| self.expr(hir, x)) }
            }
            ExprKind::Block(b) => ExprKind::Block(self.block(hir, &b)),
            ExprKind::Match { scrutinee, arms } => {
                let scrutinee = self.expr(hir, scrutinee);
                let arms = arms
                    .iter()
                    .map(|a| {
                        let pat = self.pat(hir, &a.pat);
                        let guard = a.guard.map(|g| self.expr(hir, g));
                        Arm { pat, guard, body: self.expr(hir, a.body), span: a.span }
                    })
                    .collect();
                ExprKind::Match { scrutinee, arms }
            }
            ExprKind::Interp(parts) => ExprKind::Interp(
                parts
                    .iter()
                    .map(|p| match p {
                        InterpPart::Value(x, prec) => InterpPart::Value(self.expr(hir, *x), *prec),
                        InterpPart::Text(t) => InterpPart::Text(t.clone()),
                    })
                    .collect(),
            ),
            ExprKind::Comprehension { body, clauses, rows } => {
                let clauses = clauses
                    .iter()
                    .map(|c| match c {
                        CompClause::Range { def, range } => {
                            let range = self.range(hir, range);
                            CompClause::Range { def: self.bind(hir, *def), range }
                        }
                        CompClause::Each { def, over } => {
                            let over = self.expr(hir, *over);
                            CompClause::Each { def: self.bind(hir, *def), over }
                        }
                        CompClause::Filter(f) => CompClause::Filter(self.expr(hir, *f)),
                    })
                    .collect();
                ExprKind::Comprehension { body: self.expr(hir, body), clauses, rows }
            }
        };
        hir.alloc_expr(kind, span)
    }
}
