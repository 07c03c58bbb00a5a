//! The `einlang!` and `include_ein!` macros. All of the work happens in
//! `einlang-core`.

use proc_macro::TokenStream;

/// The options both macros compile with; they come from this crate's features.
fn options() -> einlang_core::Options {
    einlang_core::Options {
        checked: cfg!(feature = "checked"),
        cuda: cfg!(feature = "cuda"),
        baseline_only: cfg!(feature = "baseline-only"),
        ..Default::default()
    }
}

/// Compiles Einlang source into Rust functions. See the `einlang` crate.
#[proc_macro]
pub fn einlang(input: TokenStream) -> TokenStream {
    einlang_core::expand(input.into(), &options()).into()
}

/// Compiles an Einlang file, relative to `CARGO_MANIFEST_DIR`, into Rust
/// functions. See the `einlang` crate.
#[proc_macro]
pub fn include_ein(input: TokenStream) -> TokenStream {
    einlang_core::expand_file(input.into(), &options()).into()
}
