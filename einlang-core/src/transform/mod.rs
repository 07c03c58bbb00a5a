//! HIR → HIR passes. Each takes the HIR (and, for monomorphization, the
//! analyses it drives) and leaves a HIR that `hir::validate` accepts; the
//! pipeline (`crate::driver`) runs the validator after them.
//!
//! - `instantiate`: copies of generic functions with fresh ids, and the
//!   expansion of typed rest indices (`..r`) into plain index variables;
//! - `mono`: monomorphization, which alternates analysis rounds with new
//!   instances until every call of a generic function reaches one, and
//!   settles the types of `let` bindings of unsuffixed literals.
//!
//! - `elements`: indexed definitions whose element is a tensor (`let
//!   h[t in 1..T] = step(h[t - 1], x[t]);`) become definitions over the
//!   element's axes too; run between analysis rounds, like `mono`.
//! - `autodiff`: answers derivative requests (`@y / @x`) with new HIR.
//! - `formulas`: calls of one-expression functions with tensor arguments
//!   written out as the caller's whole-tensor arithmetic, after autodiff,
//!   between analysis rounds.
//!
//! `copy` is the one way these passes write an expression somewhere new.

pub mod autodiff;
mod copy;
pub mod elements;
pub mod formulas;
pub mod instantiate;
pub mod mono;
