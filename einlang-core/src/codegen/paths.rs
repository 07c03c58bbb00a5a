//! The one place that spells the paths generated code uses.
//!
//! Generated code reaches the runtime and ndarray only through the facade
//! crate (`::einlang::__private`), so a user's crate depends on `einlang`
//! alone. Signatures spell the full paths; function bodies first import two
//! short aliases ([`body_prelude`]) so that the code reads well under
//! `cargo expand`.

use proc_macro2::TokenStream;
use quote::quote;

/// The runtime crate, as a full path (for signatures).
pub fn rt() -> TokenStream {
    quote!(::einlang::__private)
}

/// ndarray, as a full path (for signatures).
pub fn nd() -> TokenStream {
    quote!(::einlang::__private::ndarray)
}

/// The `use` items at the top of every generated function body.
pub fn body_prelude() -> TokenStream {
    let (rt, nd) = (rt(), nd());
    quote! {
        use #rt as __rt;
        use #nd as __nd;
    }
}

/// The runtime crate inside a function body (see [`body_prelude`]).
pub fn rt_local() -> TokenStream {
    quote!(__rt)
}

/// ndarray inside a function body (see [`body_prelude`]).
pub fn nd_local() -> TokenStream {
    quote!(__nd)
}

/// The error type, as a full path.
pub fn error() -> TokenStream {
    let rt = rt();
    quote!(#rt::Error)
}

/// `Result`, as a full path (user code may shadow the prelude's).
pub fn result() -> TokenStream {
    quote!(::core::result::Result)
}

/// `Into`, as a full path.
pub fn into() -> TokenStream {
    quote!(::core::convert::Into)
}

/// `String`, as a full path.
pub fn string() -> TokenStream {
    quote!(::std::string::String)
}

/// The `vec!` macro, as a full path.
pub fn vec() -> TokenStream {
    quote!(::std::vec)
}
