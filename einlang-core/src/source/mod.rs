//! Loading Einlang source: the standard library (parsed once per process,
//! `stdlib`) and `.ein` files for `include_ein!` with the files they import
//! (`include`), and where a span of a loaded file points. What they load
//! goes to the one pipeline, `crate::driver`.

pub mod include;
pub mod stdlib;
