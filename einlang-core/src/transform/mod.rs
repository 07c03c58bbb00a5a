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
//! - `autodiff`: answers derivative requests (`@y / @x`) with new HIR.

pub mod autodiff;
pub mod instantiate;
pub mod mono;
