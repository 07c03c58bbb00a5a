//! Optimization: loop IR to loop IR, the choices every back end reads.
//!
//! Lowering states what the program computes; the passes here choose how
//! it is computed: which values nothing reads are not computed at all
//! (`dead`), which recurrence clauses branching on their own indices are
//! one clause per piece of their domain (`split`), which sums over a prefix
//! of a definition's own index are running values (`scan`, host only),
//! which reductions in a
//! recurrence's steps are computed
//! for all steps before it (`invariant`) and which tensors the steps read
//! get a contiguous copy (`invariant::layout`, host only), which
//! definitions are matrix products (`gemm`), which stride-1 convolutions
//! run the runtime's direct kernel (`conv`, host only), which recurrence steps
//! multiply their previous step by a matrix (`steps`), or contractions packed for one
//! (`pack`, after `groups` splits a sum per group when its gathered operand
//! reads an output axis only through a quotient), which definitions duplicate an earlier one (`dedup`), which
//! reductions are computed once per point of the axes they depend on or
//! shared with an earlier statement (`hoist`), which definitions read once
//! are computed where they are read, or take the definition reading them
//! into their rows (`inline`, `inline::run_rows`), which leading axes of a
//! result's rows are one row axis (`lead`), and which definitions are
//! computed row by row inside the definition they feed (`rows`, with a
//! variant for device code), which guards of a sum are tested once
//! rather than per term (`guards`), which index arithmetic and products
//! by one a transform left behind are written the short way (`simplify`),
//! and which costly subexpressions a value
//! computes once (`cse`). Before them, `checkpoint` adds the checkpointed
//! alternative of a function with a long reverse sweep, and `calls`
//! computes the calls of scalar formulas (`std::ml::sigmoid`) in place.
//! Each pass is small, rewrites one function at a time (`calls`, the
//! program), and leaves a valid program:
//! `optimize` validates the IR after every pass, and the driver reports a
//! failure as an internal compiler error naming the pass.
//!
//! This stage imports only `ir` and `base`; back ends import it, never the
//! other way round.

pub mod calls;
pub mod checkpoint;
pub mod col2im;
pub mod conv;
pub mod conv_layout;
pub mod cse;
pub mod dead;
pub mod dedup;
pub mod gemm;
pub mod groups;
pub mod guards;
pub mod half;
pub mod hoist;
pub mod inline;
pub mod invariant;
pub mod lead;
pub mod pack;
pub mod rows;
pub mod scan;
pub mod shard;
pub mod simplify;
pub mod slices;
pub mod split;
pub mod steps;

#[cfg(test)]
mod eval_tests;
#[cfg(test)]
mod groups_tests;
#[cfg(test)]
mod half_tests;
#[cfg(test)]
mod slices_tests;
#[cfg(test)]
mod split_tests;
#[cfg(test)]
mod tests;

use crate::base::dim::{Dim, DimVar};
use crate::base::timing::{self, time_part};
use crate::ir;

/// The passes, in the order they run.
const PASSES: &[Pass] = &[
    // First: no pass spends its work on values nothing reads.
    ("dead", dead::run, Targets::All),
    // Before the passes that read a recurrence's clauses: each sees the
    // clauses a boundary in branches stands for.
    ("split", split::run, Targets::All),
    // Before `hoist`, which would see a prefix sum as a reduction of each
    // point.
    ("scan", scan::run, Targets::Host),
    ("invariant", invariant::run, Targets::All),
    ("layout", invariant::layout, Targets::Host),
    ("gemm", gemm::run, Targets::All),
    // Before `pack`: a convolution (any stride and dilation, or a layer's
    // input gradient) runs the runtime's direct kernel rather than im2col and a GEMM.
    // Just before `conv`: a convolution in another layout (channels
    // last, filters or result in another order) runs it on permuted copies.
    ("conv layout", conv_layout::run, Targets::Host),
    ("conv", conv::run, Targets::Host),
    // Before `pack`: a transposed convolution is not packed.
    ("col2im", col2im::run, Targets::Host),
    // Before `pack`: a contraction per group is packed, one per output
    // channel would not be.
    ("groups", groups::run, Targets::Host),
    ("pack", pack::run_host, Targets::Host),
    ("pack", pack::run, Targets::Device),
    ("dedup", dedup::run, Targets::All),
    ("hoist", hoist::run, Targets::All),
    ("inline", inline::run, Targets::All),
    // Just before `rows`: a pipeline over rows indexed by several
    // leading axes is one over a single row axis.
    ("lead", lead::run, Targets::Host),
    ("rows", rows::run, Targets::Host),
    ("rows", rows::run_device, Targets::Device),
    // After `rows`: its groups join the chains of batched products run
    // one batch at a time.
    ("slices", slices::run, Targets::Host),
    // The passes above look for sums with their guards inside.
    ("guards", guards::run, Targets::All),
    // After `guards`: a step's product may sit under the test of a guard.
    ("steps", steps::run, Targets::Host),
    // After the structural passes: their patterns see the IR as written.
    ("simplify", simplify::run, Targets::All),
    // Again: reads `simplify` replaced by literals (a gradient's seed).
    ("dead", dead::run, Targets::All),
    // After them: a derivative's value reads its row definition alone.
    ("inline rows", inline::run_rows, Targets::Host),
    // After the structural passes, which see half-precision arithmetic as
    // written; before `cse`, whose shared values then stay in f32.
    ("half", half::run, Targets::All),
    // Last: blocks of shared values hide nothing from a pattern above.
    ("cse", cse::run, Targets::Host),
];

/// A pass: its name (for errors), what it does to one function, and which
/// functions it runs on.
type Pass = (&'static str, fn(&mut ir::Function), Targets);

/// The functions a pass runs on.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Targets {
    All,
    /// Not on device functions, nor on functions they call.
    Host,
    /// Only on those.
    Device,
}

/// Which functions, by id, are device functions or called by one,
/// directly or through each other (the program's call graph). A function
/// past the end (one `checkpoint` added) is not.
fn device_reachable(program: &ir::Program) -> Vec<bool> {
    let roots = program.functions().filter(|(_, f)| f.device.is_some()).map(|(id, _)| id);
    program.calls().reach(roots, |_| true)
}

/// Runs a pass's rewrites over `f`: `stmts` on the function's body, `expr`
/// on its result (for the blocks inside it). The function is at hand for
/// the new variables a rewrite makes.
fn over_function(
    f: &mut ir::Function,
    stmts: fn(&mut ir::Function, &mut Vec<ir::Stmt>),
    expr: fn(&mut ir::Function, &mut ir::Expr),
) {
    let mut body = std::mem::take(&mut f.body);
    stmts(f, &mut body);
    f.body = body;
    let unit = ir::Expr::unit();
    let mut result = std::mem::replace(&mut f.result, unit);
    expr(f, &mut result);
    f.result = result;
}

/// Runs `stmts` on the statements of every block inside `e` (a pass whose
/// `stmts` walks the expressions of the statements it is given, down to
/// their blocks in turn).
fn in_blocks(f: &mut ir::Function, e: &mut ir::Expr, stmts: fn(&mut ir::Function, &mut Vec<ir::Stmt>)) {
    if let ir::ExprKind::Block { stmts: list, result } = &mut e.kind {
        stmts(f, list);
        in_blocks(f, result, stmts);
    } else {
        ir::visit::for_each_child_mut(e, &mut |x| in_blocks(f, x, stmts));
    }
}

/// How many times each variable is mentioned in `f`'s body and result
/// (a variable that is not a key is read by nothing).
fn use_counts(f: &ir::Function) -> std::collections::HashMap<ir::VarId, usize> {
    let mut counts = std::collections::HashMap::new();
    for s in &f.body {
        ir::visit::visit_stmt_var_uses(s, &mut |v| *counts.entry(v).or_default() += 1);
    }
    ir::visit::visit_var_uses(&f.result, &mut |v| *counts.entry(v).or_default() += 1);
    counts
}

/// `d` with the extents that `f`'s statements define (at the top level, or
/// before a sweep's adjoint) replaced by their values, so that two
/// extents of the same value compare equal.
fn resolve_extents(f: &ir::Function, d: &Dim) -> Dim {
    resolve_extents_in(&f.body, d)
}

/// `d` with the extents that `list` defines (directly, or before a
/// sweep's adjoint) replaced by their values: [`resolve_extents`] for a
/// pass that holds the function's statements while it runs.
fn resolve_extents_in(list: &[ir::Stmt], d: &Dim) -> Dim {
    let mut extents = std::collections::HashMap::new();
    for s in list {
        let list: &[ir::Stmt] = match s {
            ir::Stmt::Sweep(w) => &w.between,
            other => std::slice::from_ref(other),
        };
        for s in list {
            if let ir::Stmt::Extent { var, value, .. } = s {
                extents.insert(var.0, value.clone());
            }
        }
    }
    let mut d = d.clone();
    // Extents may be defined in terms of earlier ones.
    for _ in 0..8 {
        let next = d.substitute(&|v| extents.get(&v.0).cloned());
        if next == d {
            break;
        }
        d = next;
    }
    d
}

/// Whether extents `a` and `b` provably have the same value once the
/// extents `list` defines are replaced by theirs (a gradient's `p2_len`
/// and the primal's `oy_len` are both `H - KH + 1`): for a pass that holds
/// the function's statements while it runs.
fn same_extent(list: &[ir::Stmt], a: &Dim, b: &Dim) -> bool {
    resolve_extents_in(list, a).prove_eq(&resolve_extents_in(list, b)).is_true()
}

/// The extent of axis `axis` of parameter `param` as its entry checks
/// name it (a dimension bound from it, or the one it is checked against).
fn entry_extent(f: &ir::Function, param: ir::VarId, axis: usize) -> Option<Dim> {
    f.entry.iter().find_map(|c| match c {
        ir::EntryCheck::BindDim { dim, param: p, path, axis: a } if *p == param && path.is_empty() && *a == axis => {
            Some(Dim::var(DimVar(dim.0)))
        }
        ir::EntryCheck::CheckDim { param: p, path, axis: a, expected, .. }
            if *p == param && path.is_empty() && *a == axis =>
        {
            Some(expected.clone())
        }
        _ => None,
    })
}

/// Runs every pass over every function of `program`. The error names the
/// pass after which the program was invalid, and how.
pub fn optimize(mut program: ir::Program) -> Result<ir::Program, String> {
    let device = device_reachable(&program);
    // First, on the IR as lowered: the sweep's parts are kept in that form.
    time_part("opt", "checkpoint", || checkpoint::run(&mut program, &device));
    time_part("opt", "validate", || ir::validate::validate(&program))
        .map_err(|e| format!("after the `checkpoint` pass: {e}"))?;
    // Then every pass sees the arithmetic of the scalar functions a value
    // calls (`std::ml::sigmoid`) instead of their calls.
    time_part("opt", "calls", || calls::run(&mut program, &device));
    time_part("opt", "validate", || ir::validate::validate(&program))
        .map_err(|e| format!("after the `calls` pass: {e}"))?;
    for (name, pass, targets) in PASSES {
        let start = std::time::Instant::now();
        for (id, f) in program.functions_mut() {
            let on_device = device.get(id.index()).copied().unwrap_or(false);
            if (*targets == Targets::Host && on_device) || (*targets == Targets::Device && !on_device) {
                continue;
            }
            pass(f);
        }
        timing::add(("opt", name), start.elapsed());
        time_part("opt", "validate", || ir::validate::validate(&program))
            .map_err(|e| format!("after the `{name}` pass: {e}"))?;
    }
    Ok(program)
}
