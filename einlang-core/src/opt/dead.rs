//! Values nothing reads: a function's `let`s and definitions that no later
//! statement and not the result mention are not computed.
//!
//! A gradient function binds its target (`let l = loss(x, k);` before
//! `@l / @k`) and reverse mode needs the primal's intermediate values, not
//! the target's own: the loss's final sum (a pass over the whole output)
//! was computed and dropped at every call. The same holds for a binding
//! a user left unused.
//!
//! A statement goes only when evaluating it can neither fail nor have an
//! effect (`hoist::pure_float`: literals, variables, proven reads,
//! arithmetic that cannot fail, reductions of those; no calls, checked
//! reads, prints or files), so dropping it changes no result and no error.
//! Removing one may leave the values it read unread in turn: the pass
//! repeats until nothing changes. Only the function's own statement list.

use std::collections::HashSet;

use super::hoist::pure_float;
use crate::ir::{Function, Stmt, VarId};

/// Drops the unread, pure `let`s and definitions of `f`'s body.
pub fn run(f: &mut Function) {
    loop {
        let uses = super::use_counts(f);
        let unread = |v: &VarId| !uses.contains_key(v);
        let pure = |e: &crate::ir::Expr| pure_float(e, &HashSet::new(), &HashSet::new(), &mut HashSet::new());
        let before = f.body.len();
        f.body.retain(|s| match s {
            Stmt::Let { var, value } => !(unread(var) && pure(value)),
            Stmt::Tensor(d) => !(unread(&d.var) && d.domain_guards == 0 && pure(&d.body)),
            _ => true,
        });
        if f.body.len() == before {
            return;
        }
    }
}
