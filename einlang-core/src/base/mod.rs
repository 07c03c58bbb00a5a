//! Vocabulary every stage may use, and that imports no stage.
//!
//! - `arena`: typed arenas and indices, for the HIR;
//! - `span`: source spans (kept in side tables from the HIR on);
//! - `dim`: symbolic dimensions, the algebra of shapes and bounds;
//! - `scalar`: element types;
//! - `ops`: operators, reductions and literals;
//! - `intrinsic`: the built-in operations the standard library declares;
//! - `timing`: each stage's and pass's compile time (`EINLANG_TIME_PASSES`).
//!
//! Anything here is data and pure functions over it (`timing` keeps a
//! per-thread record of times, written by the stages and read by `entry`).
//! A module that needs a stage's types (HIR, analysis tables, loop IR)
//! belongs to that stage.

pub mod arena;
pub mod dim;
pub mod intrinsic;
pub mod ops;
pub mod scalar;
pub mod span;
pub mod timing;
