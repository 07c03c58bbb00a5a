//! Mutually recursive recurrences: two or more tensors whose clauses read
//! each other (an LSTM's `h` and `c`, a position and a velocity).
//!
//! ```text
//! let a[0] = 1.0;                let a__b[0, 0] = 1.0;
//! let b[0] = 0.0;                let a__b[1, 0] = 0.0;
//! let a[t in 1..T] = a[t - 1]    let a__b[0, t in 1..T] = a__b[0, t - 1]
//!     + b[t - 1];          =>        + a__b[1, t - 1];
//! let b[t in 1..T] = a[t]        let a__b[1, t in 1..T] = a__b[0, t]
//!     - b[t - 1];                    - a__b[1, t - 1];
//!                                let a[k0] = a__b[0, k0];
//!                                let b[k0] = a__b[1, k0];
//! ```
//!
//! Before a block is resolved, such a group becomes one recurrence with a
//! leading *field* axis (member `m` is field `m`), the form the seed's own
//! programs write by hand (`state[t, 0]`, `state[t, 1]`); recurrence
//! analysis already orders clauses that read a point written earlier in
//! the same step, and rejects reads of later points. Each member is then
//! an ordinary tensor taken from its field, right after the last clause.
//!
//! A group is recognized from the source: a clause of `a` reads `b`
//! (indexed) before `b`'s last clause, where no earlier binding of `b` is
//! in scope, and `b`'s clauses read `a` in turn (directly or through other
//! recurrences of the block). Members must have one rank and one element
//! type; their extents are the largest over all the clauses, as for one
//! recurrence. The fused clauses take the place of the group's last
//! clause; statements between the clauses may not read the members.

use std::collections::{HashMap, HashSet};

use super::Resolver;
use crate::diag::{Diagnostic, Diagnostics};
use crate::span::Span;
use crate::syntax::ast;
use crate::syntax::visit::{walk_expr_mut, walk_stmt_mut};

/// A block's statements and tail after fusion.
pub(super) struct Fused {
    pub stmts: Vec<ast::Stmt>,
    /// The rewritten tail, when the caller passed one.
    pub tail: Option<ast::Expr>,
}

/// `m[e..]` becomes `name[k, e..]`.
fn redirect_read(e: &mut ast::Expr, m: &str, name: &str, k: usize) {
    let ast::ExprKind::Index { base, args } = &mut e.kind else { return };
    let ast::ExprKind::Path(path) = &mut base.kind else { return };
    let [one] = path.as_mut_slice() else { return };
    if one.name == m {
        one.name = name.to_string();
        args.insert(0, ast::IndexArg::Expr(int_lit(k as i64, one.span)));
    }
}

/// Whether the statements after a group, and the block's tail, read member
/// `m` only at points (`m[t - 1]`), and nothing there binds the name `m`
/// (then each read can go to the fused tensor).
fn only_points_read(later: &[&ast::Stmt], tail: Option<&ast::Expr>, m: &str) -> bool {
    let mut ok = !later.iter().any(|s| binds_in_stmt(s, m));
    let mut check = |e: &mut ast::Expr| {
        ok &= !binds_in_expr(e, m);
        if let ast::ExprKind::Index { base, .. } = &mut e.kind {
            // `m[..]` is a point read: its base is not a whole use.
            if matches!(&base.kind, ast::ExprKind::Path(p) if p.len() == 1 && p[0].name == m) {
                base.kind = ast::ExprKind::Lit(ast::Lit::Bool(false));
            }
        }
        if let ast::ExprKind::Path(p) = &e.kind {
            ok &= !(p.len() == 1 && p[0].name == m);
        }
    };
    for s in later {
        walk_stmt_mut(&mut (*s).clone(), &mut check);
    }
    if let Some(t) = tail {
        walk_expr_mut(&mut t.clone(), &mut check);
    }
    ok
}

fn pattern_binds(p: &ast::Pattern, m: &str) -> bool {
    match p {
        ast::Pattern::Name(id) => id.name == m,
        ast::Pattern::Tuple(items, _) => items.iter().any(|q| pattern_binds(q, m)),
        _ => false,
    }
}

fn where_binds(items: &[ast::WhereItem], m: &str) -> bool {
    items.iter().any(|w| match w {
        ast::WhereItem::Bind { name, .. } | ast::WhereItem::Range { var: name, .. } => name.name == m,
        ast::WhereItem::Guard(_) => false,
    })
}

/// Whether statement `s` itself binds `m` (its pattern, index slots or
/// `where` bindings; nested expressions are checked by `binds_in_expr`).
fn binds_in_stmt(s: &ast::Stmt, m: &str) -> bool {
    match s {
        ast::Stmt::Let(l) => {
            pattern_binds(&l.pat, m)
                || l.indices.iter().flatten().any(|slot| match slot {
                    ast::IndexSlot::Var(v) | ast::IndexSlot::Rest(v) | ast::IndexSlot::Ranged { var: v, .. } => {
                        v.name == m
                    }
                    ast::IndexSlot::Lit(..) => false,
                })
                || where_binds(&l.where_clause, m)
        }
        ast::Stmt::Expr(_) => false,
        ast::Stmt::Item(item) => match &**item {
            ast::Item::Fn(f) | ast::Item::DerivRule(f) => f.name.name == m,
            ast::Item::Const(c) => c.name.name == m,
            _ => true,
        },
    }
}

/// Whether expression `e` (not what is nested in it) binds `m`.
fn binds_in_expr(e: &ast::Expr, m: &str) -> bool {
    let block_binds = |b: &ast::Block| b.stmts.iter().any(|s| binds_in_stmt(s, m));
    match &e.kind {
        ast::ExprKind::Lambda { params, .. } => params.iter().any(|p| p.name.name == m),
        ast::ExprKind::Comprehension { clauses, .. } => {
            clauses.iter().any(|c| matches!(c, ast::CompClause::Gen { var, .. } if var.name == m))
        }
        ast::ExprKind::Match { arms, .. } => arms.iter().any(|a| pattern_binds(&a.pat, m)),
        ast::ExprKind::Reduce { vars, where_clause, .. } => {
            vars.iter().any(|v| v.var.name == m) || where_binds(where_clause, m)
        }
        ast::ExprKind::Block(b) => block_binds(b),
        ast::ExprKind::If { then, .. } => block_binds(then),
        _ => false,
    }
}

/// The names of a statement's indexed reads (`x[..]`) and of its bare
/// single-segment reads.
fn reads_of(s: &ast::Stmt) -> (HashSet<String>, HashSet<String>) {
    let (mut indexed, mut bare) = (HashSet::new(), HashSet::new());
    let mut s = s.clone();
    walk_stmt_mut(&mut s, &mut |e| match &e.kind {
        ast::ExprKind::Index { base, .. } => {
            if let ast::ExprKind::Path(p) = &base.kind {
                if let [one] = p.as_slice() {
                    indexed.insert(one.name.clone());
                }
            }
        }
        ast::ExprKind::Path(p) => {
            if let [one] = p.as_slice() {
                bare.insert(one.name.clone());
            }
        }
        _ => {}
    });
    (indexed, bare)
}

fn pattern_names(p: &ast::Pattern, out: &mut Vec<String>) {
    match p {
        ast::Pattern::Name(id) => out.push(id.name.clone()),
        ast::Pattern::Tuple(items, _) => items.iter().for_each(|q| pattern_names(q, out)),
        _ => {}
    }
}

fn int_lit(v: i64, span: Span) -> ast::Expr {
    ast::Expr { kind: ast::ExprKind::Lit(ast::Lit::Int(v as i128, None)), span }
}

impl Resolver {
    /// The statements of a block with each group of mutually recursive
    /// recurrences fused (see the module documentation), and the block's
    /// tail rewritten to match; `None` when the block has none. `tail` is
    /// `None` when the caller does not let it be rewritten (a block without
    /// a tail passes `Some(None)`).
    pub(super) fn fuse_recurrence_groups(
        &self,
        stmts: &[&ast::Stmt],
        tail: Option<Option<&ast::Expr>>,
        diags: &mut Diagnostics,
    ) -> Option<Fused> {
        // The positions of each name's indexed clauses, and of its other
        // bindings.
        let mut clauses: HashMap<String, Vec<usize>> = HashMap::new();
        let mut others: HashMap<String, Vec<usize>> = HashMap::new();
        for (p, s) in stmts.iter().enumerate() {
            let ast::Stmt::Let(l) = s else { continue };
            match (&l.pat, &l.indices) {
                (ast::Pattern::Name(n), Some(_)) => clauses.entry(n.name.clone()).or_default().push(p),
                (pat, _) => {
                    let mut names = Vec::new();
                    pattern_names(pat, &mut names);
                    for n in names {
                        others.entry(n).or_default().push(p);
                    }
                }
            }
        }
        if clauses.len() < 2 {
            return None;
        }
        let bound_outside = |name: &str| {
            self.lookup_local(name).is_some() || self.modules[self.current_module].names.contains_key(name)
        };
        // Edges between recurrence names; forward ones read a name whose
        // clauses are not finished, with nothing else of that name in scope.
        let mut edges: HashMap<&str, HashSet<&str>> = HashMap::new();
        let mut forward = Vec::new();
        for (r, ps) in &clauses {
            for &p in ps {
                let (indexed, _) = reads_of(stmts[p]);
                for (s, sps) in &clauses {
                    if s == r || !indexed.contains(s) {
                        continue;
                    }
                    edges.entry(r).or_default().insert(s);
                    let unfinished = sps.last().is_some_and(|&q| q > p);
                    let shadowed = others.get(s).is_some_and(|o| o.iter().any(|&q| q < p)) || bound_outside(s);
                    if unfinished && !shadowed {
                        forward.push((r.as_str(), s.as_str()));
                    }
                }
            }
        }
        let reach = |from: &str| {
            let mut seen: HashSet<&str> = HashSet::new();
            let mut stack = vec![from];
            while let Some(x) = stack.pop() {
                for &y in edges.get(x).into_iter().flatten() {
                    if seen.insert(y) {
                        stack.push(y);
                    }
                }
            }
            seen
        };
        let mut groups: Vec<Vec<String>> = Vec::new();
        for (r, s) in forward {
            if groups.iter().any(|g| g.iter().any(|m| m == r)) {
                continue;
            }
            let from_r = reach(r);
            if !from_r.contains(r) || !reach(s).contains(r) {
                continue;
            }
            // The strongly connected component of `r`.
            let mut members: Vec<String> =
                from_r.iter().filter(|&&m| reach(m).contains(r)).map(|m| m.to_string()).collect();
            members.sort_by_key(|m| clauses[m][0]);
            groups.push(members);
        }
        if groups.is_empty() {
            return None;
        }
        groups.sort_by_key(|g| clauses[&g[0]][0]);
        let mut out: Vec<ast::Stmt> = Vec::new();
        let mut fused: HashMap<usize, Vec<ast::Stmt>> = HashMap::new();
        let mut skip: HashSet<usize> = HashSet::new();
        // Members whose later reads are all points: the reads go to the
        // fused tensor (keeping its storage window) instead of a copy.
        let mut redirect: Vec<(usize, String, String, usize)> = Vec::new();
        for members in &groups {
            let positions: Vec<usize> = {
                let mut v: Vec<usize> = members.iter().flat_map(|m| clauses[m].iter().copied()).collect();
                v.sort();
                v
            };
            let last = *positions.last()?;
            let later: Vec<&ast::Stmt> = stmts[last + 1..].to_vec();
            let points_only = |m: &str| tail.is_some_and(|t| only_points_read(&later, t, m));
            let (mut fused_stmts, moved) = self.fuse_group(members, &positions, stmts, &others, &points_only, diags)?;
            skip.extend(positions.iter().copied());
            for p in moved {
                skip.insert(p);
                fused_stmts.push(stmts[p].clone());
            }
            fused.insert(last, fused_stmts);
            let fused_name = members.join("__");
            for (k, m) in members.iter().enumerate() {
                if points_only(m) {
                    redirect.push((last, m.clone(), fused_name.clone(), k));
                }
            }
        }
        for (p, s) in stmts.iter().enumerate() {
            if let Some(f) = fused.remove(&p) {
                out.extend(f);
            } else if !skip.contains(&p) {
                let mut s = (*s).clone();
                for (after, m, name, k) in &redirect {
                    if p > *after {
                        walk_stmt_mut(&mut s, &mut |e| redirect_read(e, m, name, *k));
                    }
                }
                out.push(s);
            }
        }
        let tail = tail.flatten().map(|t| {
            let mut t = t.clone();
            for (_, m, name, k) in &redirect {
                walk_expr_mut(&mut t, &mut |e| redirect_read(e, m, name, *k));
            }
            t
        });
        Some(Fused { stmts: out, tail })
    }

    /// The fused clauses of one group and the statements that take its
    /// members from their fields, and the positions of the statements
    /// between the clauses that read a member (an error: they are moved
    /// after the group, so that nothing else is reported about them).
    fn fuse_group(
        &self,
        members: &[String],
        positions: &[usize],
        stmts: &[&ast::Stmt],
        others: &HashMap<String, Vec<usize>>,
        points_only: &dyn Fn(&str) -> bool,
        diags: &mut Diagnostics,
    ) -> Option<(Vec<ast::Stmt>, Vec<usize>)> {
        let (first, last) = (positions[0], *positions.last()?);
        let list = members.iter().map(|m| format!("`{m}`")).collect::<Vec<_>>().join(", ");
        let clause = |p: usize| match stmts[p] {
            ast::Stmt::Let(l) => Some(l),
            _ => None,
        };
        // One rank, and no rest index.
        let rank = clause(first)?.indices.as_ref()?.len();
        for &p in positions {
            let l = clause(p)?;
            let slots = l.indices.as_ref()?;
            if slots.len() != rank || slots.iter().any(|s| matches!(s, ast::IndexSlot::Rest(_))) {
                diags.push(
                    Diagnostic::error(
                        l.span,
                        format!("the recurrences {list} read each other, so they must have one number of indices"),
                    )
                    .note(format!(
                        "their first clause has {rank} {} (named rest indices `..r` are not allowed)",
                        if rank == 1 { "index" } else { "indices" }
                    )),
                );
            }
        }
        // Nothing between the clauses binds or reads a member.
        let mut moved = Vec::new();
        for p in first..=last {
            if positions.contains(&p) {
                continue;
            }
            let (indexed, bare) = reads_of(stmts[p]);
            for m in members {
                if others.get(m).is_some_and(|o| o.contains(&p)) {
                    diags.push(Diagnostic::error(
                        super::stmt_span(stmts[p]),
                        format!("`{m}` is bound again between the clauses of the recurrences {list}"),
                    ));
                } else if (indexed.contains(m) || bare.contains(m)) && !moved.contains(&p) {
                    diags.push(
                        Diagnostic::error(
                            super::stmt_span(stmts[p]),
                            format!("`{m}` is read before the last clause of the recurrences {list}"),
                        )
                        .note("recurrences that read each other exist after the last of their clauses")
                        .help("move this statement after the last clause"),
                    );
                    moved.push(p);
                }
            }
        }
        let field = |name: &str| members.iter().position(|m| m == name);
        let fused_name = members.join("__");
        let mut out = Vec::new();
        for &p in positions {
            let mut l = clause(p)?.clone();
            let ast::Pattern::Name(n) = &l.pat else { return None };
            let (k, span) = (field(&n.name)?, n.span);
            l.pat = ast::Pattern::Name(ast::Ident { name: fused_name.clone(), span });
            l.indices.as_mut()?.insert(0, ast::IndexSlot::Lit(k as i64, span));
            let mut s = ast::Stmt::Let(l);
            let mut whole = None;
            walk_stmt_mut(&mut s, &mut |e| match &mut e.kind {
                ast::ExprKind::Index { base, args } => {
                    let ast::ExprKind::Path(path) = &mut base.kind else { return };
                    let [one] = path.as_mut_slice() else { return };
                    let Some(k) = field(&one.name) else { return };
                    one.name = fused_name.clone();
                    args.insert(0, ast::IndexArg::Expr(int_lit(k as i64, one.span)));
                }
                ast::ExprKind::Path(path) => {
                    if let [one] = path.as_mut_slice() {
                        if field(&one.name).is_some() {
                            // An error (below); the name is replaced so
                            // that nothing else is reported about it.
                            whole.get_or_insert((one.name.clone(), e.span));
                            one.name = fused_name.clone();
                        }
                    }
                }
                _ => {}
            });
            if let Some((m, span)) = whole {
                diags.push(
                    Diagnostic::error(span, format!("`{m}` is read as a whole inside the clauses that define it"))
                        .note("a clause reads points of the recurrences it defines (`m[t - 1]`)"),
                );
            }
            out.push(s);
        }
        // Each member read as a whole later: its field of the fused tensor.
        for (k, m) in members.iter().enumerate() {
            if points_only(m) {
                continue;
            }
            let span = match stmts[*clauses_last(positions, stmts, m)?] {
                ast::Stmt::Let(l) => l.span,
                _ => return None,
            };
            let vars: Vec<ast::Ident> = (0..rank).map(|i| ast::Ident { name: format!("k{i}"), span }).collect();
            let mut args = vec![ast::IndexArg::Expr(int_lit(k as i64, span))];
            args.extend(
                vars.iter()
                    .map(|v| ast::IndexArg::Expr(ast::Expr { kind: ast::ExprKind::Path(vec![v.clone()]), span })),
            );
            let base =
                ast::Expr { kind: ast::ExprKind::Path(vec![ast::Ident { name: fused_name.clone(), span }]), span };
            out.push(ast::Stmt::Let(ast::LetStmt {
                pat: ast::Pattern::Name(ast::Ident { name: m.clone(), span }),
                indices: Some(vars.into_iter().map(ast::IndexSlot::Var).collect()),
                ty: None,
                value: ast::Expr { kind: ast::ExprKind::Index { base: Box::new(base), args }, span },
                where_clause: Vec::new(),
                span,
            }));
        }
        Some((out, moved))
    }
}

/// The position of member `m`'s last clause among `positions`.
fn clauses_last<'p>(positions: &'p [usize], stmts: &[&ast::Stmt], m: &str) -> Option<&'p usize> {
    positions
        .iter()
        .rev()
        .find(|&&p| matches!(stmts[p], ast::Stmt::Let(l) if matches!(&l.pat, ast::Pattern::Name(n) if n.name == m)))
}
