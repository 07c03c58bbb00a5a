//! The macros' entry points: `einlang!` (`expand`) and `include_ein!`
//! (`include::expand_file`). Each turns the macro's tokens into the
//! pipeline's input, runs `crate::driver::compile`, and turns its result or
//! its diagnostics into tokens. Neither ever panics: a panic inside the
//! compiler becomes an internal-compiler-error diagnostic (`catch_ice`).
//! Each prints its stage times to stderr when `EINLANG_TIME_PASSES` is set
//! (`report_times`).

pub mod include;

use std::time::Instant;

use proc_macro2::{TokenStream, TokenTree};

use crate::base;
use crate::base::timing;
use crate::codegen::Options;
use crate::diag::Diagnostic;
use crate::{driver, syntax};

/// Compiles the tokens of one `einlang! { ... }` call into Rust items.
///
/// Never panics: a panic inside the compiler is caught and reported as an
/// internal compiler error at the macro call.
pub fn expand(input: TokenStream, options: &Options) -> TokenStream {
    let start = Instant::now();
    let what = match first_fn_name(&input) {
        Some(name) => format!("einlang! {{ fn {name} .. }}"),
        None => "einlang! { .. }".to_string(),
    };
    let result = catch_ice(|| {
        let ast = timing::time("parse", || syntax::parse_tokens(input))?;
        driver::compile(ast, options).map(|c| c.rust)
    });
    report_times(&what, start);
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

/// When `EINLANG_TIME_PASSES` is set, takes the stage times the expansion
/// that began at `start` recorded (`base::timing`) and prints them to
/// stderr, headed by `what` and the expansion's whole time. Otherwise the
/// record stays for a tool to take (it holds one sum per stage and pass,
/// so it does not grow with the number of expansions).
pub(crate) fn report_times(what: &str, start: Instant) {
    if timing::enabled() {
        let total = start.elapsed();
        eprint!("{}", timing::render(what, &timing::take(), total));
    }
}

/// The name of the first function a macro's tokens define, to tell
/// expansions apart in the time report.
fn first_fn_name(input: &TokenStream) -> Option<String> {
    let mut trees = input.clone().into_iter();
    while let Some(tree) = trees.next() {
        if matches!(&tree, TokenTree::Ident(i) if i == "fn") {
            if let Some(TokenTree::Ident(name)) = trees.next() {
                return Some(name.to_string());
            }
        }
    }
    None
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
