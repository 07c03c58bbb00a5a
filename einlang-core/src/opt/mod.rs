//! Optimization: loop IR to loop IR, the choices every back end reads.
//!
//! Lowering states what the program computes; the passes here choose how
//! it is computed where that choice does not depend on the back end: which
//! definitions are matrix products (`gemm`), which reductions are
//! computed once per point of the axes they depend on or shared with an
//! earlier statement (`hoist`), which definitions read once are computed
//! where they are read (`inline`), and which definitions are computed row
//! by row inside the definition they feed (`rows`). Each pass
//! is small, rewrites one function at a time, and leaves a valid program:
//! `optimize` validates the IR after every pass, and the driver reports a
//! failure as an internal compiler error naming the pass.
//!
//! This stage imports only `ir` and `base`; back ends import it, never the
//! other way round.

pub mod gemm;
pub mod hoist;
pub mod inline;
pub mod rows;

#[cfg(test)]
mod eval_tests;
#[cfg(test)]
mod tests;

use crate::ir;

/// The passes, in the order they run.
const PASSES: &[Pass] = &[("gemm", gemm::run), ("hoist", hoist::run), ("inline", inline::run), ("rows", rows::run)];

/// A pass: its name (for errors) and what it does to one function.
type Pass = (&'static str, fn(&mut ir::Function));

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
    let unit = ir::Expr { kind: ir::ExprKind::Tuple(Vec::new()), ty: ir::Repr::Unit };
    let mut result = std::mem::replace(&mut f.result, unit);
    expr(f, &mut result);
    f.result = result;
}

/// Runs every pass over every function of `program`. The error names the
/// pass after which the program was invalid, and how.
pub fn optimize(mut program: ir::Program) -> Result<ir::Program, String> {
    for (name, pass) in PASSES {
        for f in &mut program.fns {
            pass(f);
        }
        ir::validate::validate(&program).map_err(|e| format!("after the `{name}` pass: {e}"))?;
    }
    Ok(program)
}
