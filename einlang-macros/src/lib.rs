//! The `einlang!` macro. All of the work happens in `einlang-core`.

use proc_macro::TokenStream;

/// Compiles Einlang source into Rust functions. See the `einlang` crate.
#[proc_macro]
pub fn einlang(input: TokenStream) -> TokenStream {
    let options = einlang_core::Options { checked: cfg!(feature = "checked") };
    einlang_core::expand(input.into(), &options).into()
}
