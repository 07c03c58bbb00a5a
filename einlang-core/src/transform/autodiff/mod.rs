//! Derivatives: every request `@y / @x` becomes ordinary HIR that computes
//! it, inserted before the statement holding the request, which then reads
//! the result. The new code goes through the same analysis, lowering, `opt`
//! passes and code generation as the user's own.
//!
//! One request is answered per function per call of `step`; the driver
//! analyses again in between, because the answer is built from the types and
//! ranges of the code around it (and inlining makes new code to analyse).
//! For a request:
//!
//! 1. the *tape* is every statement before the request in its block and the
//!    blocks around it;
//! 2. *activity*: the bindings that depend on `x` (varied) and that `y`
//!    depends on (useful); a `y` that does not depend on `x` is an error;
//! 3. the tape is prepared one change per step (`inline`): a call of an
//!    Einlang function on the active path is inlined, or a reduction under
//!    a call is bound to a tensor of its own, and the step ends;
//! 4. with nothing left to prepare, `reverse` (a scalar `y`: one backward
//!    sweep whose reads of adjoints are gathers, shared by the requests of
//!    `y` that can share it) or `forward` (a tensor `y`: tangents carrying
//!    the axes of `x`, so a scalar `x` costs one sweep and a tensor `x`
//!    gives the dense Jacobian) writes the statements.
//!
//! Before all that, a Jacobian read only by rows or columns is rewritten
//! into one request per read (`lazy`).

// Every step of a derivative can fail with a diagnostic for the user; it
// is the error of those results, made rarely, so it is not boxed.
#![allow(clippy::result_large_err)]

mod build;
mod forward;
mod inline;
mod lazy;
mod reverse;
mod rules;
#[cfg(test)]
mod tests;

use std::collections::{HashMap, HashSet};

use crate::analysis::{Tables, Ty};
use crate::base::span::Span;
use crate::diag::{Diagnostic, Diagnostics};
use crate::hir::{self, DefId, ExprId, ExprKind, FnId, Hir, Stmt};

/// Where a block lives: a function's body, or a block expression.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BlockLoc {
    Body,
    Expr(ExprId),
}

/// A statement position: the block and the index of the statement (the
/// block's length for its tail).
#[derive(Clone, Copy, Debug)]
struct Level {
    block: BlockLoc,
    stmt: usize,
}

/// How one derivative request was answered: `step` returns one per request
/// it answers, and the driver reports them (`driver::Compiled::derivatives`),
/// with the histories `opt::checkpoint` chose to checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DerivFact {
    /// The Einlang function (`"main"` for top-level statements), target and
    /// source.
    pub function: String,
    pub target: String,
    pub source: String,
    pub mode: DerivMode,
    /// Recurrences differentiated in reverse mode: their names and how the
    /// primal's history is had (kept whole: memory of the whole primal,
    /// `T x` the state; the adjoint is a recurrence over reversed time).
    pub reversed: Vec<(String, History)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DerivMode {
    /// One backward sweep (a scalar target; requests of the same target
    /// share it).
    Reverse,
    /// Tangents over the source's axes (a tensor target).
    Forward,
    /// One forward sweep at a fixed point of the source (a Jacobian column).
    ForwardAtPoint,
}

/// Where reverse mode through a recurrence gets the primal's states.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum History {
    /// Every step is stored by the primal (its storage is the whole tensor).
    Kept,
    /// Kept while the history (`steps` steps of `state` elements) is within
    /// the runtime's limit (`einlang::checkpoint::history_limit`, 256 MiB
    /// unless set); above it, recomputed from checkpoints: the primal runs
    /// in chunks of `ceil(sqrt(steps))` steps keeping the steps before each
    /// chunk, then backwards chunk by chunk it is recomputed from them while
    /// the adjoint runs over the chunk. Memory: windows of about two chunks
    /// of the primal and of the adjoint plus one checkpoint per chunk, so
    /// about `4 sqrt(steps)` states instead of `2 steps`; time: one more run
    /// of the primal. The expressions are the compiler's, in the
    /// function's dimensions; `memory` is the bound on what the
    /// checkpointed sweep holds, as a formula in them.
    Checkpointed { steps: String, state: String, memory: String },
}

/// A request and where it is.
struct Found {
    req: ExprId,
    target: DefId,
    wrt: DefId,
    levels: Vec<Level>,
}

/// Whether any function that is analysed still holds a request.
pub fn has_requests(hir: &Hir) -> bool {
    hir.fns.iter().any(|(f, func)| !hir.skipped(f) && !func.is_generic() && find(hir, f).is_some())
}

/// Answers (or prepares, by inlining) one request in each function that has
/// one, and returns how each request answered was answered. Errors go to
/// `diags`.
pub fn step(hir: &mut Hir, tables: &Tables, diags: &mut Diagnostics) -> Vec<DerivFact> {
    let mut facts = Vec::new();
    let fns: Vec<FnId> = hir.fns.iter().map(|(f, _)| f).collect();
    for f in fns {
        if hir.skipped(f) || hir.fns[f].is_generic() {
            continue;
        }
        let Some(found) = find(hir, f) else { continue };
        if lazy::rows(hir, tables, f, &found) {
            continue;
        }
        if let Err(d) = answer(hir, tables, f, &found, &mut facts) {
            diags.push(d);
            // The request is answered with nothing; it will not be found again.
            hir.exprs[found.req].kind = ExprKind::Error;
        }
    }
    facts
}

fn answer(
    hir: &mut Hir,
    tables: &Tables,
    f: FnId,
    found: &Found,
    facts: &mut Vec<DerivFact>,
) -> Result<(), Diagnostic> {
    let span = hir.span(found.req);
    let tape = tape(hir, f, &found.levels);
    let ty = |d: DefId| tables.def_ty.get(&d).cloned().unwrap_or(Ty::Error);
    // Requests of the same scalar target share one backward sweep.
    let siblings: Vec<(ExprId, DefId)> =
        if matches!(ty(found.target), Ty::Scalar(_)) && !hir.deriv_points.contains_key(&found.req) {
            same_target(hir, f, found, &tape)
        } else {
            vec![(found.req, found.wrt)]
        };
    let sources: Vec<DefId> = siblings.iter().map(|s| s.1).collect();
    // Every source must reach the target: a derivative of an unrelated
    // value is an error, never a silent zero.
    for &(req, x) in &siblings {
        let alone = Activity::of(hir, tables, &tape, found.target, &[x]);
        if found.target != x && !alone.varied.contains(&found.target) {
            let (y, x) = (hir.name(found.target).to_string(), hir.name(x).to_string());
            return Err(Diagnostic::error(hir.span(req), format!("`{y}` does not depend on `{x}`"))
                .note(format!("no computation leads from `{x}` to `{y}`, so this derivative is zero everywhere"))
                .help("check the names; a derivative of an unrelated value is an error rather than a silent zero"));
        }
    }
    let act = Activity::of(hir, tables, &tape, found.target, &sources);
    let point = hir.deriv_points.get(&found.req).cloned();
    let forward = point.is_some() || !matches!(ty(found.target), Ty::Scalar(_));
    if inline::one(hir, tables, f, &tape, &act, span, forward)? {
        return Ok(());
    }
    if !forward && inline::split_one(hir, f, &tape, &act, span) {
        return Ok(());
    }
    let (ty_y, ty_x) = (ty(found.target), ty(found.wrt));
    let cx = Cx { tables, tape: &tape, act: &act, span, y: found.target, x: found.wrt, xs: &sources };
    let (stmts, results) = match ty_y {
        Ty::Scalar(_) | Ty::Tensor(..) if forward => {
            let (stmts, r) = forward::run(hir, &cx, &ty_x, point.as_deref())?;
            (stmts, vec![r])
        }
        Ty::Scalar(_) => reverse::run(hir, &cx)?,
        _ => return Err(Diagnostic::bug(span, "a derivative of a value that is not a float")),
    };
    for ((req, _), result) in siblings.iter().zip(results) {
        hir.exprs[*req].kind = ExprKind::Def(result);
    }
    let mode = match (point.is_some(), forward) {
        (true, _) => DerivMode::ForwardAtPoint,
        (false, true) => DerivMode::Forward,
        (false, false) => DerivMode::Reverse,
    };
    // Recurrences on the active path in reverse mode were reversed.
    let reversed: Vec<(String, History)> = if mode == DerivMode::Reverse {
        tape.iter()
            .filter_map(|t| match &t.stmt {
                Stmt::Recurrence(r) if act.active.contains(&r.def) => {
                    Some((hir.name(r.def).to_string(), History::Kept))
                }
                _ => None,
            })
            .collect()
    } else {
        Vec::new()
    };
    let function = hir.name(hir.fns[f].def).to_string();
    for (_, source) in &siblings {
        let fact = DerivFact {
            function: function.clone(),
            target: hir.name(found.target).to_string(),
            source: hir.name(*source).to_string(),
            mode,
            reversed: reversed.clone(),
        };
        facts.push(fact);
    }
    let last = *found.levels.last().ok_or_else(|| Diagnostic::bug(span, "a request outside any block"))?;
    edit_block(hir, f, last.block, |_, b| {
        let at = last.stmt.min(b.stmts.len());
        b.stmts.splice(at..at, stmts);
    });
    Ok(())
}

/// What every generator reads: the tables, the tape, activity, the request.
pub(super) struct Cx<'a> {
    pub tables: &'a Tables,
    pub tape: &'a [TapeStmt],
    pub act: &'a Activity,
    pub span: Span,
    pub y: DefId,
    pub x: DefId,
    /// Every source answered by this sweep (`x` first).
    pub xs: &'a [DefId],
}

impl Cx<'_> {
    /// The float kind of an expression of the analysed program.
    pub fn float_kind(&self, e: ExprId) -> Option<crate::base::scalar::ScalarKind> {
        self.tables.expr_ty.get(e.index()).and_then(Ty::elem).filter(|k| k.is_float())
    }

    pub fn def_ty(&self, d: DefId) -> Ty {
        self.tables.def_ty.get(&d).cloned().unwrap_or(Ty::Error)
    }
}

/// One statement before the request, with where it is.
#[derive(Clone)]
pub(super) struct TapeStmt {
    pub level: usize,
    pub index: usize,
    pub stmt: Stmt,
}

/// The derivative rule of `f`, or of the generic function it is an
/// instance of.
fn rule_of(hir: &Hir, f: FnId) -> Option<&hir::DerivRule> {
    hir.rules.get(&f).or_else(|| hir.fns[f].origin.and_then(|(g, _)| hir.rules.get(&g)))
}

/// Whether a rule works point by point (no reduction, no indexing, no
/// tensor definition): reverse mode then transposes it by taking each
/// differential's coefficient. Other rules serve forward mode; reverse
/// mode differentiates the function's own body instead.
fn rule_is_elementwise(hir: &Hir, rule: &hir::DerivRule) -> bool {
    let mut roots = Vec::new();
    rule.body.stmts.iter().for_each(|s| hir::stmt_operands(s, &mut roots));
    roots.extend(rule.body.tail);
    rule.body.stmts.iter().all(|s| matches!(s, Stmt::Let { .. }))
        && hir.reachable(roots).into_iter().all(|e| {
            !matches!(
                hir.exprs[e].kind,
                ExprKind::Reduce { .. } | ExprKind::Index { .. } | ExprKind::Comprehension { .. }
            )
        })
}

/// Whether a call of `f` keeps its rule (is not inlined) for a derivative
/// in the given mode.
fn uses_rule(hir: &Hir, f: FnId, forward: bool) -> bool {
    rule_of(hir, f).is_some_and(|r| forward || rule_is_elementwise(hir, r))
}

/// The rule's body for a call with arguments `args` (expressions, copied
/// at each use) and differentials `diffs` (one per parameter; None: zero
/// of the given kind).
fn apply_rule(
    b: &mut build::Build,
    rule: &hir::DerivRule,
    args: &[ExprId],
    diffs: &[Result<ExprId, crate::base::scalar::ScalarKind>],
) -> ExprId {
    let block = rule_block(b, rule, args, diffs);
    match (block.stmts.is_empty(), block.tail) {
        (true, Some(t)) => t,
        _ => b.e(ExprKind::Block(block)),
    }
}

/// `apply_rule` as statements and a value.
fn rule_block(
    b: &mut build::Build,
    rule: &hir::DerivRule,
    args: &[ExprId],
    diffs: &[Result<ExprId, crate::base::scalar::ScalarKind>],
) -> hir::Block {
    let mut c = crate::transform::copy::Copier::new();
    for ((&p, &a), d) in rule.params.iter().zip(args).zip(diffs) {
        c.subst.insert(p, a);
        let d = match *d {
            Ok(e) => e,
            Err(k) => b.float(0.0, k),
        };
        c.diffs.insert(p, d);
    }
    c.block(b.hir, &rule.body)
}

/// A call `f(u, ...)` that is the whole value of a `let`, of a function
/// whose rule is not a point rule, with plain names as arguments: reverse
/// mode transposes the rule (`reverse::Rev::tensor_rule`) instead of
/// inlining `f`. The callee and its rule.
fn tensor_rule_call<'h>(
    hir: &'h Hir,
    tables: &Tables,
    value: ExprId,
) -> Option<(FnId, &'h hir::DerivRule, Vec<ExprId>)> {
    let ExprKind::Call { callee: hir::Callee::Fn(g), args, .. } = &hir.exprs[value].kind else { return None };
    let g = tables.instance_calls.get(&value).copied().unwrap_or(*g);
    let rule = rule_of(hir, g)?;
    if rule_is_elementwise(hir, rule)
        || !args.iter().all(|&a| matches!(hir.exprs[a].kind, ExprKind::Def(_) | ExprKind::Lit(_)))
    {
        return None;
    }
    Some((g, rule, args.clone()))
}

/// A name for a binding derived from `d` (`d_w`, `t_h`, `w_pad`): `d`'s
/// name when it is an identifier, `value` for the temporaries resolution
/// names after their expression text.
pub(super) fn base_name(hir: &Hir, d: DefId) -> &str {
    let name = hir.name(d);
    let ident = name.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_alphanumeric() || c == '_');
    if ident {
        name
    } else {
        "value"
    }
}

/// The binding a statement defines.
pub(super) fn defined(s: &Stmt) -> Option<DefId> {
    match s {
        Stmt::Let { def, .. } => Some(*def),
        Stmt::Indexed(d) => Some(d.def),
        Stmt::Recurrence(r) => Some(r.def),
        Stmt::Expr(_) => None,
    }
}

/// Every name a statement reads.
pub(super) fn reads(hir: &Hir, s: &Stmt) -> HashSet<DefId> {
    let mut roots = Vec::new();
    hir::stmt_operands(s, &mut roots);
    hir.reachable(roots)
        .into_iter()
        .filter_map(|e| match hir.exprs[e].kind {
            ExprKind::Def(d) => Some(d),
            _ => None,
        })
        .collect()
}

fn tape(hir: &Hir, f: FnId, levels: &[Level]) -> Vec<TapeStmt> {
    let mut out = Vec::new();
    for (level, l) in levels.iter().enumerate() {
        let stmts = match l.block {
            BlockLoc::Body => &hir.fns[f].body.stmts,
            BlockLoc::Expr(e) => match &hir.exprs[e].kind {
                ExprKind::Block(b) => &b.stmts,
                _ => continue,
            },
        };
        for (index, s) in stmts.iter().enumerate().take(l.stmt) {
            out.push(TapeStmt { level, index, stmt: s.clone() });
        }
    }
    out
}

/// Which bindings lie on a path from `x` to `y`.
pub(super) struct Activity {
    pub varied: HashSet<DefId>,
    /// Varied and useful: the bindings whose derivatives are needed.
    pub active: HashSet<DefId>,
}

impl Activity {
    fn of(hir: &Hir, tables: &Tables, tape: &[TapeStmt], y: DefId, xs: &[DefId]) -> Activity {
        let float = |d: DefId| tables.def_ty.get(&d).and_then(Ty::elem).is_some_and(|k| k.is_float());
        let mut varied: HashSet<DefId> = xs.iter().copied().collect();
        let reads: Vec<HashSet<DefId>> = tape.iter().map(|t| reads(hir, &t.stmt)).collect();
        for (t, r) in tape.iter().zip(&reads) {
            if let Some(v) = defined(&t.stmt) {
                if !xs.contains(&v) && float(v) && r.iter().any(|d| varied.contains(d)) {
                    varied.insert(v);
                }
            }
        }
        let mut useful = HashSet::from([y]);
        for (t, r) in tape.iter().zip(&reads).rev() {
            if let Some(v) = defined(&t.stmt) {
                if useful.contains(&v) {
                    useful.extend(r.iter().copied());
                }
            }
        }
        let active = varied.intersection(&useful).copied().collect();
        Activity { varied, active }
    }
}

/// The request `found` and the other requests of its target in the same
/// statement or later ones of the same block whose sources are already
/// visible (`let gw = @l / @w; let gb = @l / @b;`), with their sources
/// (distinct).
fn same_target(hir: &Hir, f: FnId, found: &Found, tape: &[TapeStmt]) -> Vec<(ExprId, DefId)> {
    let mut out = vec![(found.req, found.wrt)];
    let Some(last) = found.levels.last() else { return out };
    let (stmts, tail) = match last.block {
        BlockLoc::Body => (&hir.fns[f].body.stmts, hir.fns[f].body.tail),
        BlockLoc::Expr(e) => match &hir.exprs[e].kind {
            ExprKind::Block(b) => (&b.stmts, b.tail),
            _ => return out,
        },
    };
    // Sources visible at the first request: parameters and the tape's
    // bindings.
    let mut visible: HashSet<DefId> = hir.fns[f].params.iter().map(|p| p.def).collect();
    visible.extend(tape.iter().filter_map(|t| defined(&t.stmt)));
    let mut roots = Vec::new();
    for s in stmts.iter().skip(last.stmt) {
        hir::stmt_operands(s, &mut roots);
    }
    roots.extend(tail);
    for e in hir.reachable(roots) {
        if let ExprKind::Deriv { target, wrt } = hir.exprs[e].kind {
            if e != found.req && target == found.target && visible.contains(&wrt) && !out.iter().any(|o| o.1 == wrt) {
                out.push((e, wrt));
            }
        }
    }
    out
}

/// The first request in `f`, in source order.
fn find(hir: &Hir, f: FnId) -> Option<Found> {
    let (req, levels) = find_expr(hir, f, &|e| matches!(hir.exprs[e].kind, ExprKind::Deriv { .. }))?;
    let ExprKind::Deriv { target, wrt } = hir.exprs[req].kind else { return None };
    Some(Found { req, target, wrt, levels })
}

/// The first expression of `f` (in source order) that `pred` accepts, with
/// the statement positions around it.
fn find_expr(hir: &Hir, f: FnId, pred: &dyn Fn(ExprId) -> bool) -> Option<(ExprId, Vec<Level>)> {
    let body = &hir.fns[f].body;
    let mut levels = Vec::new();
    find_in_block(hir, BlockLoc::Body, &body.stmts, body.tail, &mut levels, pred)
}

fn find_in_block(
    hir: &Hir,
    loc: BlockLoc,
    stmts: &[Stmt],
    tail: Option<ExprId>,
    levels: &mut Vec<Level>,
    pred: &dyn Fn(ExprId) -> bool,
) -> Option<(ExprId, Vec<Level>)> {
    let mut roots = Vec::new();
    for (i, s) in stmts.iter().enumerate() {
        roots.clear();
        hir::stmt_operands(s, &mut roots);
        levels.push(Level { block: loc, stmt: i });
        for &r in &roots {
            if let Some(found) = find_in_expr(hir, r, levels, pred) {
                return Some(found);
            }
        }
        levels.pop();
    }
    levels.push(Level { block: loc, stmt: stmts.len() });
    if let Some(found) = tail.and_then(|t| find_in_expr(hir, t, levels, pred)) {
        return Some(found);
    }
    levels.pop();
    None
}

fn find_in_expr(
    hir: &Hir,
    e: ExprId,
    levels: &mut Vec<Level>,
    pred: &dyn Fn(ExprId) -> bool,
) -> Option<(ExprId, Vec<Level>)> {
    if pred(e) {
        return Some((e, levels.clone()));
    }
    match &hir.exprs[e].kind {
        ExprKind::Block(b) => find_in_block(hir, BlockLoc::Expr(e), &b.stmts, b.tail, levels, pred),
        kind => {
            let mut ops = Vec::new();
            hir::operands(kind, &mut ops);
            ops.into_iter().find_map(|o| find_in_expr(hir, o, levels, pred))
        }
    }
}

/// Applies `edit` to a block of `f`. A block expression is rebuilt as a new
/// node, and so is every expression around it, so that operands still
/// precede their users.
fn edit_block(hir: &mut Hir, f: FnId, loc: BlockLoc, edit: impl FnOnce(&mut Hir, &mut hir::Block)) {
    match loc {
        BlockLoc::Body => {
            let mut body = std::mem::replace(&mut hir.fns[f].body, hir::Block { stmts: Vec::new(), tail: None });
            edit(hir, &mut body);
            hir.fns[f].body = body;
        }
        BlockLoc::Expr(e) => {
            let ExprKind::Block(mut b) = hir.exprs[e].kind.clone() else { return };
            edit(hir, &mut b);
            let span = hir.span(e);
            let new = hir.alloc_expr(ExprKind::Block(b), span);
            replace_expr(hir, f, e, new);
        }
    }
}

/// Makes every user of `old` in `f` use `new`, rebuilding the users.
fn replace_expr(hir: &mut Hir, f: FnId, old: ExprId, new: ExprId) {
    let mut roots = Vec::new();
    hir.fns[f].body.stmts.iter().for_each(|s| hir::stmt_operands(s, &mut roots));
    roots.extend(hir.fns[f].body.tail);
    let mut parent: HashMap<ExprId, ExprId> = HashMap::new();
    let mut ops = Vec::new();
    for e in hir.reachable(roots) {
        ops.clear();
        hir::operands(&hir.exprs[e].kind, &mut ops);
        for &o in &ops {
            parent.entry(o).or_insert(e);
        }
    }
    let (mut old, mut new) = (old, new);
    while let Some(&p) = parent.get(&old) {
        let mut kind = hir.exprs[p].kind.clone();
        hir::operands_mut(&mut kind, &mut |o| {
            if *o == old {
                *o = new;
            }
        });
        let span = hir.span(p);
        new = hir.alloc_expr(kind, span);
        old = p;
    }
    let body = &mut hir.fns[f].body;
    for s in &mut body.stmts {
        hir::stmt_operands_mut(s, &mut |o| {
            if *o == old {
                *o = new;
            }
        });
    }
    if body.tail == Some(old) {
        body.tail = Some(new);
    }
}
