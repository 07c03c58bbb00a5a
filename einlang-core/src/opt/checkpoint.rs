//! Checkpointed reverse sweeps: an alternative form of a function whose
//! gradient runs backwards through a recurrence, holding neither history
//! whole.
//!
//! Reverse mode through a recurrence `h` (`transform::autodiff`) leaves,
//! in order: the primal recurrence, statements that read its last steps
//! (the loss), the adjoint recurrence over reversed time reading the primal
//! near its own step, a reversed copy of the adjoint (`d_h[t] =
//! r_h[T - 1 - t]`), and sums over time of products of the two (the
//! parameters' gradients). Kept whole, both histories take memory linear in
//! the sequence. This pass makes a second function, `{name}__ckpt`, with
//! those statements replaced by one [`crate::ir::Sweep`]: the primal runs in
//! chunks of about `sqrt(T)` steps keeping a checkpoint per chunk, then for
//! the chunks from last to first the primal's chunk is recomputed, the
//! adjoint runs over it and the sums take the chunk's terms. Memory: a
//! window of about `2 sqrt(T)` steps of each history and `sqrt(T)`
//! checkpoints; time: one more primal run.
//!
//! The original function keeps its form (and every other pass's choices)
//! and calls the alternative first when the history is larger than the
//! runtime's limit ([`crate::ir::Checkpointing`]); the alternative gives up when a
//! read finds a step its window does not hold, so the structural match here
//! only has to be likely, not proven. It does refuse what would always give
//! up: a statement that reads a history at a time that varies over its
//! loops (other than a sum's time variable).
//!
//! Host functions only: device code keeps the whole history (its memory is
//! the device's).

use std::collections::{HashMap, HashSet};

use super::hoist::substitute_var;
use crate::base::dim::{Dim, DimVar};
use crate::base::ops::{BinOp, RedOp};
use crate::ir::affine::Affine;
use crate::ir::visit;
use crate::ir::{
    Checkpointing, ChunkSum, EntryCheck, Expr, ExprKind, FuncId, Function, Program, Recurrence, Repr, Stmt, Sweep,
    TensorDef, VarId,
};

/// The largest step offset a checkpointed read may have.
const MAX_OFFSET: i64 = 64;

/// Adds the checkpointed alternative of every host function that has a
/// reverse sweep through a recurrence (the first one in its body).
/// `device` says which functions (by id) device code reaches.
pub fn run(program: &mut Program, device: &[bool]) {
    let mut added = Vec::new();
    let mut names: HashSet<String> = program.fns.iter().map(|f| f.name.clone()).collect();
    let first_new = program.fns.len();
    for (id, f) in program.functions_mut() {
        if device.get(id.index()).copied().unwrap_or(false) || f.may_give_up() || f.checkpointed.is_some() {
            continue;
        }
        let Some((range, sweep, mut g)) = find(f) else { continue };
        let mut name = format!("{}__ckpt", f.name);
        while names.contains(&name) {
            name.push('_');
        }
        names.insert(name.clone());
        let primal = f.var(sweep.primal.var).source_name.clone();
        let steps = sweep.steps.clone();
        let state = sweep.primal.extents[1..].iter().fold(Dim::one(), |acc, d| acc.mul(&super::resolve_extents(f, d)));
        // The alternatives are added after every function, in this order.
        let alternative = FuncId((first_new + added.len()) as u32);
        f.checkpointed = Some(Checkpointing { alternative, primal, steps, state, elem: sweep.primal.elem });
        g.name = name;
        g.public = false;
        g.export = None;
        g.docs = Vec::new();
        g.body.splice(range, [Stmt::Sweep(Box::new(sweep))]);
        added.push(g);
    }
    for g in added {
        program.push(g);
    }
}

/// What the pass chose for one function: its checkpointed alternative
/// recomputes the history of the recurrence `primal`, `steps` steps of
/// `state` elements (in the function's dimensions), and holds at most
/// `memory` elements, as a formula in them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    pub function: String,
    pub primal: String,
    pub steps: String,
    pub state: String,
    pub memory: String,
}

/// The decisions `run` made in `program`, one per function with a
/// checkpointed alternative.
///
/// `memory` is what the alternative's [`Sweep`] allocates at run time,
/// written over the function's dimensions: two windows (the primal's and
/// the adjoint's) of `einlang_runtime::ckpt::slots(K, lookback, margin)`
/// steps each, a power of two, and `lookback` steps per checkpoint, with
/// chunks of `K = ckpt::chunk(steps)` steps (`ceil(sqrt(steps))`).
pub fn decisions(program: &Program) -> Vec<Decision> {
    let mut out = Vec::new();
    for f in &program.fns {
        let Some(c) = &f.checkpointed else { continue };
        let text = |d: &Dim| d.display(&|v| f.vars[v.0 as usize].source_name.clone());
        let (steps, state) = (text(&c.steps), text(&c.state));
        let sweep = program.get(c.alternative).into_iter().flat_map(|g| &g.body).find_map(|s| match s {
            Stmt::Sweep(w) => Some((w.lookback, w.margin)),
            _ => None,
        });
        let Some((lookback, margin)) = sweep else { continue };
        let memory = format!(
            "(2 * next_power_of_two(K + {}) + {lookback} * K) * ({state}) elements, K = ceil(sqrt({steps}))",
            lookback + 2 * margin + 1
        );
        out.push(Decision { function: f.name.clone(), primal: c.primal.clone(), steps, state, memory });
    }
    out
}

/// The statements to replace (from the primal to the last reader of either
/// history), the sweep that replaces them, and the function to put it in
/// (a copy of `f` with the sweep's new variables declared).
fn find(f: &Function) -> Option<(std::ops::RangeInclusive<usize>, Sweep, Function)> {
    for (i, s) in f.body.iter().enumerate() {
        let Stmt::Recurrence(p) = s else { continue };
        if let Some(found) = from_primal(f, i, p) {
            return Some(found);
        }
    }
    None
}

fn from_primal(f: &Function, i: usize, p: &Recurrence) -> Option<(std::ops::RangeInclusive<usize>, Sweep, Function)> {
    if !one_forward_sequence(p) || !p.elem.is_float() {
        return None;
    }
    let steps = super::resolve_extents(f, &p.extents[0]);
    // Dimensions bound at entry and integer parameters.
    let mut entry: HashSet<VarId> = f
        .entry
        .iter()
        .filter_map(|c| if let EntryCheck::BindDim { dim, .. } = c { Some(*dim) } else { None })
        .collect();
    entry.extend(
        f.params.iter().copied().filter(|&v| f.var(v).ty == Repr::Scalar(crate::base::scalar::ScalarKind::I64)),
    );
    let at_entry = |d: &Dim| d.vars().iter().all(|v| entry.contains(&VarId(v.0)));
    if !at_entry(&steps) || !p.extents[1..].iter().all(|d| at_entry(&super::resolve_extents(f, d))) {
        return None;
    }
    // The adjoint: the next recurrence of the same length that reads the
    // primal.
    let j = (i + 1..f.body.len())
        .find(|&j| matches!(&f.body[j], Stmt::Recurrence(a) if reads(&Stmt::Recurrence(a.clone()), p.var)))?;
    let Stmt::Recurrence(a) = &f.body[j] else { return None };
    if !one_forward_sequence(a) || super::resolve_extents(f, &a.extents[0]) != steps {
        return None;
    }
    // The adjoint's reversed copies.
    let mut copies: HashMap<VarId, TensorDef> = HashMap::new();
    let mut histories: HashSet<VarId> = [p.var, a.var].into_iter().collect();
    let mut last = j;
    for (k, s) in f.body.iter().enumerate().skip(j + 1) {
        if let Stmt::Tensor(d) = s {
            if matches!(&d.body.kind, ExprKind::Read { tensor, .. } if *tensor == a.var) && d.domain_guards == 0 {
                copies.insert(d.var, d.clone());
                histories.insert(d.var);
                last = k;
                continue;
            }
        }
        if histories.iter().any(|&h| reads(s, h)) {
            last = k;
        }
    }
    let mut result_reads = false;
    visit_reads(&f.result, &mut |v, _| result_reads |= histories.contains(&v));
    if result_reads {
        return None;
    }
    let lookback = lookback(p)?;
    let mut g = f.clone();
    let int = Repr::Scalar(crate::base::scalar::ScalarKind::I64);
    let chunk = g.add_var("ckpt_chunk", int.clone());
    let lo = g.add_var("ckpt_lo", int.clone());
    let hi = g.add_var("ckpt_hi", int.clone());
    let (lo_d, hi_d) = (Dim::var(DimVar(lo.0)), Dim::var(DimVar(hi.0)));
    let mut margin = lookback as i64;
    let mut between = Vec::new();
    for s in &f.body[i + 1..j] {
        if !tail_reads_only(s, p.var) {
            return None;
        }
        between.push(s.clone());
    }
    let mut sums = Vec::new();
    let mut after = Vec::new();
    let mut defined_after: HashSet<VarId> = HashSet::new();
    for s in &f.body[j + 1..=last] {
        if let Stmt::Tensor(d) = s {
            if copies.contains_key(&d.var) {
                continue;
            }
        }
        let mut s = s.clone();
        visit::for_each_stmt_expr_mut(&mut s, &mut |e| through_copies(e, &copies));
        let reads_history = reads(&s, p.var) || reads(&s, a.var);
        let summed = match &s {
            Stmt::Tensor(d) => Some((d.var, &d.body)),
            Stmt::Let { var, value } if matches!(f.var(*var).ty, Repr::Scalar(k) if k.is_float()) => {
                Some((*var, value))
            }
            _ => None,
        };
        if let (true, Some((var, value))) = (reads_history, summed) {
            let sum = linear_sum(&mut value.clone(), &[p.var, a.var]).map(|e| e.clone());
            if let Some((time, offset)) =
                sum.and_then(|e| time_of_sum(&e, p.var, a.var, &steps, &|x| super::resolve_extents(f, x)))
            {
                let mut uses = Vec::new();
                visit::for_each_stmt_expr(&s, &mut |e| crate::ir::visit::visit_var_uses(e, &mut |v| uses.push(v)));
                if uses.iter().any(|v| defined_after.contains(v)) || offset.abs() > MAX_OFFSET {
                    return None;
                }
                margin = margin.max(offset.abs() + lookback as i64);
                let part_var = g.add_var(&format!("{}_part", f.var(var).source_name), f.var(var).ty.clone());
                let mut part = s.clone();
                let body = match &mut part {
                    Stmt::Tensor(d) => {
                        d.var = part_var;
                        &mut d.body
                    }
                    Stmt::Let { var, value } => {
                        *var = part_var;
                        value
                    }
                    _ => return None,
                };
                // The term of one time value: the sum without its time loop.
                let sum = linear_sum(body, &[p.var, a.var])?;
                let ExprKind::Reduce { op, mut loops, wheres, body: term } =
                    std::mem::replace(&mut sum.kind, ExprKind::Tuple(Vec::new()))
                else {
                    return None;
                };
                let time_loop = loops.remove(time);
                let full = (time_loop.start, time_loop.end);
                sum.kind = match (loops.is_empty(), wheres.is_empty()) {
                    (false, _) => ExprKind::Reduce { op, loops, wheres, body: term },
                    (true, true) => term.kind,
                    (true, false) => ExprKind::Guarded { wheres, body: term },
                };
                sums.push(ChunkSum { total: var, time: time_loop.index, prelude: Vec::new(), part, full, offset });
                continue;
            }
        }
        if !tail_reads_only(&s, p.var) || !tail_reads_only(&s, a.var) {
            return None;
        }
        visit::for_each_stmt_binder(&s, &mut |v| {
            defined_after.insert(v);
        });
        after.push(s);
    }
    if sums.is_empty() {
        return None;
    }
    let mut primal = p.clone();
    primal.seq[0].1.start = lo_d.clone();
    primal.seq[0].1.end = hi_d.clone();
    let mut adjoint = a.clone();
    adjoint.seq[0].1.start = steps.sub(&hi_d);
    adjoint.seq[0].1.end = steps.sub(&lo_d);
    let sweep =
        Sweep { steps, chunk, lo, hi, primal, lookback, between, adjoint, sums, after, margin: (margin + 1) as u64 };
    Some((i..=last, sweep, g))
}

/// One sequential loop, along axis 0 from 0, no window.
fn one_forward_sequence(r: &Recurrence) -> bool {
    r.window.is_none() && !r.wavefront && r.seq.len() == 1 && r.seq[0].0 == 0 && r.seq[0].1.start == Dim::zero()
}

/// How far back the primal's clauses read it: the largest `c` of a read at
/// `t - c` along its sequential axis. None when a read is not of that form
/// (a literal step is fine: its window check decides).
fn lookback(p: &Recurrence) -> Option<u64> {
    let t = p.seq[0].1.index;
    let mut lag = 1i64;
    let mut ok = true;
    for c in &p.clauses {
        visit_reads(&c.body, &mut |v, idx| {
            if v != p.var {
                return;
            }
            match idx.first().and_then(|i| Affine::in_var(i, t)).map(|(coeff, rest)| (coeff, rest.as_constant())) {
                Some((1, Some(off))) if off < 0 && -off <= MAX_OFFSET => lag = lag.max(-off),
                // A literal step: its window check decides.
                Some((0, Some(_))) => {}
                _ => ok = false,
            }
        });
    }
    ok.then_some(lag as u64)
}

/// The sum that `e` is linear in: `e` itself, or the sum in `c * s`,
/// `s * c`, `s / c`, `-s` with `c` reading neither history.
fn linear_sum<'e>(e: &'e mut Expr, histories: &[VarId]) -> Option<&'e mut Expr> {
    let free = |x: &Expr| {
        let mut uses = false;
        crate::ir::visit::visit_var_uses(x, &mut |v| uses |= histories.contains(&v));
        !uses
    };
    // The operand to follow at each level: false the left, true the right.
    let mut path = Vec::new();
    let mut at = &*e;
    loop {
        match &at.kind {
            ExprKind::Reduce { op: RedOp::Sum, .. } => break,
            ExprKind::Binary(BinOp::Mul, a, b) if free(a) => {
                path.push(true);
                at = b;
            }
            ExprKind::Binary(BinOp::Mul | BinOp::Div, a, b) if free(b) => {
                path.push(false);
                at = a;
            }
            ExprKind::Unary(crate::base::ops::UnOp::Neg, a) => {
                path.push(false);
                at = a;
            }
            _ => return None,
        }
    }
    let mut e = e;
    for right in path {
        e = match &mut e.kind {
            ExprKind::Binary(_, a, b) => {
                if right {
                    b
                } else {
                    a
                }
            }
            ExprKind::Unary(_, a) => a,
            _ => return None,
        };
    }
    Some(e)
}

/// Calls `f` with the tensor and indices of every element read in `e`.
fn visit_reads(e: &Expr, f: &mut dyn FnMut(VarId, &[Expr])) {
    if let ExprKind::Read { tensor, indices, .. } = &e.kind {
        f(*tensor, indices);
    }
    visit::for_each_child(e, &mut |c| visit_reads(c, f));
}

/// Whether statement `s` mentions `v`.
fn reads(s: &Stmt, v: VarId) -> bool {
    let mut found = false;
    crate::ir::visit::visit_stmt_var_uses(s, &mut |x| found |= x == v);
    found
}

/// Whether every read of `h` in `s` is at a step that does not vary over
/// the statement's loops (one step, such as the last), and `h` is used in
/// no other way.
fn tail_reads_only(s: &Stmt, h: VarId) -> bool {
    let mut bound = HashSet::new();
    visit::for_each_stmt_binder(s, &mut |v| {
        bound.insert(v);
    });
    visit::for_each_stmt_expr(s, &mut |e| {
        let mut inner = Vec::new();
        visit::defined_in(e, &mut inner);
        bound.extend(inner);
    });
    let mut reads_n = 0;
    let mut ok = true;
    visit::for_each_stmt_expr(s, &mut |e| {
        visit_reads(e, &mut |v, idx| {
            if v != h {
                return;
            }
            reads_n += 1;
            let mut uses = Vec::new();
            if let Some(first) = idx.first() {
                crate::ir::visit::visit_var_uses(first, &mut |x| uses.push(x));
            }
            ok &= !uses.iter().any(|x| bound.contains(x));
        })
    });
    let mut mentions = 0;
    crate::ir::visit::visit_stmt_var_uses(s, &mut |x| mentions += usize::from(x == h));
    ok && mentions == reads_n
}

/// Reads of a reversed copy of the adjoint become reads of the adjoint.
fn through_copies(e: &mut Expr, copies: &HashMap<VarId, TensorDef>) {
    if let ExprKind::Read { tensor, indices, checked } = &e.kind {
        if let Some(d) = copies.get(tensor) {
            if let ExprKind::Read { tensor: a, indices: a_idx, checked: a_checked } = &d.body.kind {
                let mut new_idx = a_idx.clone();
                for ix in &mut new_idx {
                    for (axis, at) in d.axes.iter().zip(indices) {
                        let shifted = shift_axis(at, &axis.start);
                        substitute_var(ix, axis.index, &shifted);
                    }
                }
                let mut new_idx2 = Vec::new();
                for mut ix in new_idx {
                    through_copies(&mut ix, copies);
                    new_idx2.push(ix);
                }
                e.kind = ExprKind::Read { tensor: *a, indices: new_idx2, checked: *checked || *a_checked };
                return;
            }
        }
    }
    visit::for_each_child_mut(e, &mut |c| through_copies(c, copies));
}

/// A read at position `at` of an axis starting at `start` is at index
/// `at + start` of its variable.
fn shift_axis(at: &Expr, start: &Dim) -> Expr {
    if *start == Dim::zero() {
        return at.clone();
    }
    Expr {
        kind: ExprKind::Binary(
            BinOp::Add,
            Box::new(at.clone()),
            Box::new(Expr { kind: ExprKind::Dim(start.clone()), ty: at.ty.clone() }),
        ),
        ty: at.ty.clone(),
    }
}

/// For a definition whose value is a sum over a time variable `v` that
/// reads the adjoint at the primal's step `v + offset` (as `steps - 1 -
/// (v + offset)`) or the primal at `v + offset`: the loop of `v` and the
/// offset (the adjoint's if it reads both).
fn time_of_sum(value: &Expr, p: VarId, a: VarId, steps: &Dim, resolve: &dyn Fn(&Dim) -> Dim) -> Option<(usize, i64)> {
    let ExprKind::Reduce { op: RedOp::Sum, loops, body, wheres } = &value.kind else { return None };
    let mut found: Option<(VarId, i64, bool)> = None;
    let mut check = |e: &Expr| {
        visit_reads(e, &mut |v, idx| {
            let Some(first) = idx.first() else { return };
            // The primal at `x + c`; the adjoint at `(steps - 1) - (x + c)`
            // (as the reversed copy's reads become), for a loop's `x`.
            let last = steps.sub(&Dim::one());
            let hit = loops.iter().find_map(|l| match Affine::in_var(first, l.index)? {
                (1, rest) if v == p => Some((l.index, rest.as_constant()?, false)),
                (-1, rest) if v == a => Some((l.index, resolve(&last.sub(&rest)).as_constant()?, true)),
                _ => None,
            });
            if let Some((x, c, adj)) = hit {
                if found.is_none() || (adj && !found.is_some_and(|f| f.2)) {
                    found = Some((x, c, adj));
                }
            }
        })
    };
    check(body);
    for w in wheres {
        match w {
            crate::ir::WhereEntry::Bind(_, e) | crate::ir::WhereEntry::Guard(e) => check(e),
        }
    }
    let (v, c, _) = found?;
    let time = loops.iter().position(|l| l.index == v)?;
    Some((time, c))
}
