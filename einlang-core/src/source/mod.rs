//! Loading Einlang source: the standard library (parsed once per process,
//! `stdlib`) and `.ein` files for `include_ein!` with the files they import
//! (`include`). Both hand syntax trees to the same pipeline
//! (`crate::compile`).

pub mod include;
pub mod stdlib;
