//! The macros' entry points: `einlang!` (`expand`) and `include_ein!`
//! (`include::expand_file`). Each turns the macro's tokens into the
//! pipeline's input, runs `crate::driver::compile`, and turns its result or
//! its diagnostics into tokens. Neither ever panics: a panic inside the
//! compiler becomes an internal-compiler-error diagnostic (`catch_ice`).

pub mod include;

use proc_macro2::TokenStream;

use crate::base;
use crate::diag::Diagnostic;
use crate::{driver, syntax, Options};

/// Compiles the tokens of one `einlang! { ... }` call into Rust items.
///
/// Never panics: a panic inside the compiler is caught and reported as an
/// internal compiler error at the macro call.
pub fn expand(input: TokenStream, options: &Options) -> TokenStream {
    let result = catch_ice(|| {
        let ast = syntax::parse_tokens(input)?;
        driver::compile(ast, options).map(|c| c.rust)
    });
    match result {
        Ok(tokens) => tokens,
        Err(diags) => {
            let mut out = TokenStream::new();
            for d in diags {
                out.extend(d.to_compile_errors());
            }
            out
        }
    }
}

/// Runs `f`, turning a panic inside it into an internal-compiler-error
/// diagnostic at the call site, so that both macros (`einlang!` and
/// `include_ein!`) report compiler bugs the same way instead of aborting
/// rustc's macro expansion.
pub(crate) fn catch_ice<T>(f: impl FnOnce() -> Result<T, Vec<Diagnostic>>) -> Result<T, Vec<Diagnostic>> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(result) => result,
        Err(payload) => {
            let msg = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_string());
            Err(vec![Diagnostic::bug(base::span::Span::call_site(), msg)])
        }
    }
}
