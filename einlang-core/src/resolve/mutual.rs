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

use super::globals::pattern_names;
use super::Resolver;
use crate::base::span::Span;
use crate::diag::{Diagnostic, Diagnostics};
use crate::syntax::ast;
use crate::syntax::visit::{walk_expr, walk_expr_mut, walk_stmt, walk_stmt_mut};

/// A block's statements and tail after fusion.
pub(super) struct Fused {
    pub stmts: Vec<ast::Stmt>,
    /// The rewritten tail, when the caller passed one.
    pub tail: Option<ast::Expr>,
}

/// Where the members of a group live in the fused tensor: member `k` is
/// field `k`; a member with fewer indices than the most any member has is
/// padded with trailing axes it writes and reads at 0.
struct Layout {
    name: String,
    /// Each member's name and number of indices.
    members: Vec<(String, usize)>,
    /// The most indices of any member.
    rank: usize,
}

impl Layout {
    fn field(&self, m: &str) -> Option<(usize, usize)> {
        self.members.iter().position(|(n, _)| n == m).map(|k| (k, self.members[k].1))
    }

    /// Rewrites `m[e..]`, a read of member `m` (of any member when `only`
    /// is `None`), to `name[k, e.., 0..]`. `Err(m)` for a read with fewer
    /// indices than a padded member has (it is left as it is).
    fn redirect(&self, e: &mut ast::Expr, only: Option<&str>) -> Result<(), String> {
        let ast::ExprKind::Index { base, args } = &mut e.kind else { return Ok(()) };
        let ast::ExprKind::Path(path) = &mut base.kind else { return Ok(()) };
        let [one] = path.as_mut_slice() else { return Ok(()) };
        if only.is_some_and(|m| m != one.name) {
            return Ok(());
        }
        let Some((k, rank)) = self.field(&one.name) else { return Ok(()) };
        if rank < self.rank && args.len() != rank {
            return Err(one.name.clone());
        }
        let span = one.span;
        one.name = self.name.clone();
        args.insert(0, ast::IndexArg::Expr(int_lit(k as i64, span)));
        for _ in rank..self.rank {
            args.push(ast::IndexArg::Expr(int_lit(0, span)));
        }
        Ok(())
    }
}

/// Whether the statements after a group, and the block's tail, read member
/// `m` only at points (`m[t - 1]`, with `arity` indices if given), and
/// nothing there binds the name `m` (then each read can go to the fused
/// tensor).
fn only_points_read(later: &[&ast::Stmt], tail: Option<&ast::Expr>, m: &str, arity: Option<usize>) -> bool {
    let mut ok = !later.iter().any(|s| binds_in_stmt(s, m));
    // Mentions of `m`, and those that are the base of a read `m[..]`.
    let (mut mentions, mut points) = (0usize, 0usize);
    let mut check = |e: &ast::Expr| {
        ok &= !binds_in_expr(e, m);
        match &e.kind {
            ast::ExprKind::Index { base, args } if is_name(base, m) => {
                points += 1;
                // A padded member must be read with all its indices.
                ok &= arity.is_none_or(|r| args.len() == r);
            }
            _ if is_name(e, m) => mentions += 1,
            _ => {}
        }
    };
    for s in later {
        walk_stmt(s, &mut check);
    }
    if let Some(t) = tail {
        walk_expr(t, &mut check);
    }
    ok && mentions == points
}

/// Whether `e` is the single-segment name `m`.
fn is_name(e: &ast::Expr, m: &str) -> bool {
    matches!(&e.kind, ast::ExprKind::Path(p) if p.len() == 1 && p[0].name == m)
}

fn pattern_binds(p: &ast::Pattern, m: &str) -> bool {
    let mut names = HashSet::new();
    pattern_names(p, &mut names);
    names.contains(m)
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

/// The names a statement reads at points (`x[..]`), and every
/// single-segment name it mentions.
fn reads_of(s: &ast::Stmt) -> (HashSet<String>, HashSet<String>) {
    let (mut indexed, mut mentioned) = (HashSet::new(), HashSet::new());
    walk_stmt(s, &mut |e| match &e.kind {
        ast::ExprKind::Index { base, .. } => {
            if let ast::ExprKind::Path(p) = &base.kind {
                if let [one] = p.as_slice() {
                    indexed.insert(one.name.clone());
                }
            }
        }
        ast::ExprKind::Path(p) => {
            if let [one] = p.as_slice() {
                mentioned.insert(one.name.clone());
            }
        }
        _ => {}
    });
    (indexed, mentioned)
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
        &mut self,
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
                    let mut names = HashSet::new();
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
        // Groups that read another group come after it (the groups form no
        // cycle: each is a strongly connected component); otherwise in
        // source order. A group's fused clauses go after its last clause,
        // and after the fused clauses of any group its members read.
        groups.sort_by_key(|g| clauses[&g[0]][0]);
        let reads = |a: &Vec<String>, b: &Vec<String>| {
            a.iter().any(|m| edges.get(m.as_str()).is_some_and(|e| b.iter().any(|n| e.contains(n.as_str()))))
        };
        let mut ordered: Vec<Vec<String>> = Vec::new();
        while !groups.is_empty() {
            let i = (0..groups.len()).find(|&i| !groups.iter().any(|g| g != &groups[i] && reads(&groups[i], g)))?;
            ordered.push(groups.remove(i));
        }
        let groups = ordered;
        // Every group's clauses leave their places (for its fused clauses).
        let grouped: HashSet<usize> = groups.iter().flatten().flat_map(|m| clauses[m].iter().copied()).collect();
        let mut place: Vec<usize> = Vec::new();
        for (a, g) in groups.iter().enumerate() {
            let own = g.iter().filter_map(|m| clauses[m].last().copied()).max()?;
            let after = (0..a).filter(|&b| reads(g, &groups[b])).map(|b| place[b]).max().unwrap_or(0);
            place.push(own.max(after));
        }
        let mut out: Vec<ast::Stmt> = Vec::new();
        // Fused statements by the position they follow.
        let mut fused: Vec<(usize, Vec<ast::Stmt>)> = Vec::new();
        let mut skip: HashSet<usize> = HashSet::new();
        // Members whose later reads are all points: those reads go to the
        // fused tensor (keeping its storage window) instead of a copy.
        let mut redirect: Vec<(usize, String, std::rc::Rc<Layout>)> = Vec::new();
        for (members, &at) in groups.iter().zip(&place) {
            let positions: Vec<usize> = {
                let mut v: Vec<usize> = members.iter().flat_map(|m| clauses[m].iter().copied()).collect();
                v.sort();
                v
            };
            let layout = std::rc::Rc::new(self.layout(members, &clauses, stmts, diags)?);
            self.hir.fused_groups.insert(layout.name.clone(), members.to_vec());
            // What runs after the fused clauses: the statements after them,
            // and the clauses of the groups placed after this one (those of
            // earlier groups do not read its members).
            let later: Vec<&ast::Stmt> = (0..stmts.len())
                .filter(|&p| p > at || (grouped.contains(&p) && !positions.contains(&p)))
                .map(|p| stmts[p])
                .collect();
            let points_only = |m: &str| {
                let arity = layout.field(m).and_then(|(_, r)| (r < layout.rank).then_some(r));
                tail.is_some_and(|t| only_points_read(&later, t, m, arity))
            };
            let (mut fused_stmts, moved) =
                self.fuse_group(&layout, &positions, at, stmts, &grouped, &others, &points_only, diags)?;
            skip.extend(positions.iter().copied());
            for p in moved {
                skip.insert(p);
                fused_stmts.push(stmts[p].clone());
            }
            fused.push((at, fused_stmts));
            for m in members {
                if points_only(m) {
                    redirect.push((at, m.clone(), layout.clone()));
                }
            }
        }
        let redirect_all = |e: &mut ast::Expr, p: Option<usize>| {
            for (after, m, layout) in &redirect {
                if p.is_none_or(|p| p > *after) {
                    // Checked by `only_points_read`: never an error here.
                    let _ = layout.redirect(e, Some(m));
                }
            }
        };
        for (p, s) in stmts.iter().enumerate() {
            if !skip.contains(&p) {
                let mut s = (*s).clone();
                walk_stmt_mut(&mut s, &mut |e| redirect_all(e, Some(p)));
                out.push(s);
            }
            for (at, f) in &mut fused {
                if *at == p {
                    // Fused clauses read the members of earlier groups.
                    for s in f.iter_mut() {
                        walk_stmt_mut(s, &mut |e| redirect_all(e, None));
                    }
                    out.append(f);
                }
            }
        }
        let tail = tail.flatten().map(|t| {
            let mut t = t.clone();
            walk_expr_mut(&mut t, &mut |e| redirect_all(e, None));
            t
        });
        Some(Fused { stmts: out, tail })
    }

    /// The layout of a group in its fused tensor. Rest indices are an
    /// error, and so are clauses of one member with different numbers of
    /// indices.
    fn layout(
        &self,
        members: &[String],
        clauses: &HashMap<String, Vec<usize>>,
        stmts: &[&ast::Stmt],
        diags: &mut Diagnostics,
    ) -> Option<Layout> {
        let mut out = Vec::new();
        for m in members {
            let mut rank = None;
            for &p in &clauses[m] {
                let ast::Stmt::Let(l) = stmts[p] else { return None };
                let slots = l.indices.as_ref()?;
                if slots.iter().any(|s| matches!(s, ast::IndexSlot::Rest(_))) || rank.is_some_and(|r| r != slots.len())
                {
                    diags.push(Diagnostic::error(
                        l.span,
                        format!(
                            "the clauses of `{m}`, which reads other recurrences that read it, must have one \
                             number of indices and no rest index `..r`"
                        ),
                    ));
                }
                rank.get_or_insert(slots.len());
            }
            out.push((m.clone(), rank?));
        }
        let rank = out.iter().map(|(_, r)| *r).max()?;
        Some(Layout { name: members.join("__"), members: out, rank })
    }

    /// The fused clauses of one group (placed after statement `at`) and the
    /// statements that take its members from their fields, and the
    /// positions of the statements before `at` that read a member (an
    /// error: they are moved after the group, so that nothing else is
    /// reported about them).
    #[allow(clippy::too_many_arguments)]
    fn fuse_group(
        &self,
        layout: &Layout,
        positions: &[usize],
        at: usize,
        stmts: &[&ast::Stmt],
        grouped: &HashSet<usize>,
        others: &HashMap<String, Vec<usize>>,
        points_only: &dyn Fn(&str) -> bool,
        diags: &mut Diagnostics,
    ) -> Option<(Vec<ast::Stmt>, Vec<usize>)> {
        let first = positions[0];
        let list = layout.members.iter().map(|(m, _)| format!("`{m}`")).collect::<Vec<_>>().join(", ");
        let clause = |p: usize| match stmts[p] {
            ast::Stmt::Let(l) => Some(l),
            _ => None,
        };
        // Nothing before the fused clauses binds or reads a member.
        let mut moved = Vec::new();
        for (p, &stmt) in stmts.iter().enumerate().take(at + 1).skip(first) {
            if grouped.contains(&p) {
                continue;
            }
            let (_, mentioned) = reads_of(stmt);
            for (m, _) in &layout.members {
                if others.get(m).is_some_and(|o| o.contains(&p)) {
                    diags.push(Diagnostic::error(
                        super::stmt_span(stmt),
                        format!("`{m}` is bound again between the clauses of the recurrences {list}"),
                    ));
                } else if mentioned.contains(m) && !moved.contains(&p) {
                    diags.push(
                        Diagnostic::error(
                            super::stmt_span(stmt),
                            format!("`{m}` is read before the last clause of the recurrences {list}"),
                        )
                        .note("recurrences that read each other exist after the last of their clauses")
                        .help("move this statement after the last clause"),
                    );
                    moved.push(p);
                }
            }
        }
        let mut out = Vec::new();
        for &p in positions {
            let mut l = clause(p)?.clone();
            let ast::Pattern::Name(n) = &l.pat else { return None };
            let ((k, rank), span) = (layout.field(&n.name)?, n.span);
            l.pat = ast::Pattern::Name(ast::Ident { name: layout.name.clone(), span });
            let slots = l.indices.as_mut()?;
            slots.insert(0, ast::IndexSlot::Lit(k as i64, span));
            for _ in rank..layout.rank {
                slots.push(ast::IndexSlot::Lit(0, span));
            }
            let mut s = ast::Stmt::Let(l);
            let mut whole = None;
            let mut partial = None;
            walk_stmt_mut(&mut s, &mut |e| {
                if let Err(m) = layout.redirect(e, None) {
                    partial.get_or_insert((m, e.span));
                }
                if let ast::ExprKind::Path(path) = &mut e.kind {
                    if let [one] = path.as_mut_slice() {
                        if layout.field(&one.name).is_some() {
                            // An error (below); the name is replaced so
                            // that nothing else is reported about it.
                            whole.get_or_insert((one.name.clone(), e.span));
                            one.name = layout.name.clone();
                        }
                    }
                }
            });
            if let Some((m, span)) = whole.or(partial) {
                diags.push(
                    Diagnostic::error(
                        span,
                        format!("`{m}` is read here as a whole or in part, inside the clauses that define it"),
                    )
                    .note("a clause reads points of the recurrences it defines (`m[t - 1, i]`)"),
                );
            }
            out.push(s);
        }
        // Each member read as a whole later: its field of the fused tensor.
        for (m, rank) in &layout.members {
            if points_only(m) {
                continue;
            }
            let span = match stmts[*clauses_last(positions, stmts, m)?] {
                ast::Stmt::Let(l) => l.span,
                _ => return None,
            };
            let vars: Vec<ast::Ident> = (0..*rank).map(|i| ast::Ident { name: format!("k{i}"), span }).collect();
            let args = vars
                .iter()
                .map(|v| ast::IndexArg::Expr(ast::Expr { kind: ast::ExprKind::Path(vec![v.clone()]), span }))
                .collect();
            let base = ast::Expr { kind: ast::ExprKind::Path(vec![ast::Ident { name: m.clone(), span }]), span };
            let mut value = ast::Expr { kind: ast::ExprKind::Index { base: Box::new(base), args }, span };
            layout.redirect(&mut value, Some(m)).ok()?;
            out.push(ast::Stmt::Let(ast::LetStmt {
                pat: ast::Pattern::Name(ast::Ident { name: m.clone(), span }),
                indices: Some(vars.into_iter().map(ast::IndexSlot::Var).collect()),
                ty: None,
                value,
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
