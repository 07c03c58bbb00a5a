//! `include_ein!("path/file.ein")`: compiles an Einlang file into Rust items.
//!
//! The macro's only argument is a string literal, a path relative to the
//! directory of the calling crate's `Cargo.toml` (`CARGO_MANIFEST_DIR`, which
//! Cargo sets while it compiles the crate). The file is read, parsed with the
//! same parser as `einlang!` (`syntax::parse_str`), and sent through the same
//! pipeline (`crate::driver::compile`), so top-level statements become
//! `pub fn main() -> Result<(), einlang::Error>` as they do in `einlang!`.
//!
//! Rebuild tracking: rustc records every file read by `include_bytes!` in the
//! crate's dep-info, and Cargo rebuilds the crate when one of them changes.
//! So the expansion ends with one `const _: &[u8] = include_bytes!("/abs/path");`
//! per file the compilation read: the included file and every file it
//! imports.
//!
//! The included file and the files it imports are loaded by
//! `crate::source::include`.
//!
//! Spans: inside a real proc macro, text lexed by `proc_macro2` gets the span
//! of the macro call, so positions inside the file would be lost. To keep
//! them, the file is lexed, compiled and its diagnostics rendered while
//! `proc_macro2::fallback::force()` is in effect: the fallback lexer records
//! line and column for every token. Fallback tokens must never be mixed with
//! the compiler's, and rustc cannot point into a `.ein` file anyway, so:
//! - diagnostics are rendered to text inside the fallback region, each
//!   prefixed with `path:line:col: ` and followed by the source line, then
//!   emitted as `compile_error!` at the string literal of the macro call;
//! - the generated Rust is rebuilt token by token with compiler tokens at
//!   `Span::call_site()` after the fallback region ends (which is also the
//!   span `einlang!`'s generated code has).
//!
//! `force()` flips a process-wide switch of this proc macro's copy of
//! `proc_macro2`. rustc expands macros one at a time, so no other expansion
//! of this proc macro can observe the switch; the guard restores it even
//! when the compiler panics.
//!
//! Never panics on user input: a missing or malformed argument, a missing
//! `CARGO_MANIFEST_DIR` and an unreadable file are `compile_error!`s at the
//! literal (or the macro call), and a panic inside the compiler is an
//! internal compiler error, as in `einlang!`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use proc_macro2::{Group, Ident, Literal, Punct, Span as TokSpan, TokenStream, TokenTree};
use quote::quote_spanned;
use syn::parse::{ParseStream, Parser};

use crate::base::span::Span;
use crate::codegen::Options;
use crate::diag::Diagnostic;
use crate::source::include::{render_all, LoadedFile, Loader};

/// Expands `include_ein!(...)`. `input` is the macro's argument tokens.
///
/// Reads `CARGO_MANIFEST_DIR` from the environment (the proc macro runs
/// inside rustc, which Cargo started with the calling crate's variables).
pub fn expand_file(input: TokenStream, options: &Options) -> TokenStream {
    expand_file_in(input, std::env::var_os("CARGO_MANIFEST_DIR"), options)
}

/// `expand_file` with the manifest directory passed in, so tests do not
/// have to change the process environment.
fn expand_file_in(input: TokenStream, manifest_dir: Option<OsString>, options: &Options) -> TokenStream {
    let arg = match parse_argument(input) {
        Ok(arg) => arg,
        Err(err) => return err.to_compile_error(),
    };
    let at = arg.span();
    let shown = arg.value();
    let Some(manifest_dir) = manifest_dir else {
        return error_at(
            at,
            "environment variable `CARGO_MANIFEST_DIR` is not set\n \
             = note: `include_ein!` reads paths relative to the directory of the crate's `Cargo.toml`, \
             which Cargo passes in `CARGO_MANIFEST_DIR`; build the crate with Cargo",
        );
    };
    let path = absolute_path(&PathBuf::from(manifest_dir), &shown);
    let src = match std::fs::read_to_string(&path) {
        Ok(src) => src,
        Err(err) => {
            return error_at(
                at,
                &format!(
                    "couldn't read `{shown}`: {err}\n \
                     = note: the path is relative to the directory of the crate's `Cargo.toml` (`CARGO_MANIFEST_DIR`)"
                ),
            );
        }
    };
    let root = LoadedFile { shown: shown.clone(), src, path: path.clone() };
    let options = Options { script_dir: path.parent().and_then(|d| d.to_str()).map(str::to_string), ..options.clone() };
    let start = std::time::Instant::now();
    let (compiled, tracked) = {
        let _fallback = FallbackLexer::force();
        compile_file(root, &options)
    };
    super::report_times(&format!("include_ein!(\"{shown}\")"), start);
    let mut out = match compiled {
        Ok(rust) => match super::catch_ice(|| respan_to_call_site(rust)) {
            Ok(tokens) => tokens,
            Err(diags) => diags.iter().map(|d| error_at(at, &d.primary_text())).collect(),
        },
        Err(messages) => messages.iter().map(|m| error_at(at, m)).collect(),
    };
    // Also tracked when the file has errors, so that the expansion names the
    // file in both cases (Cargo recompiles after a failed build anyway).
    out.extend(track_files(&tracked, at));
    out
}

/// Parses the argument: one string literal, optionally followed by a comma
/// (as `include_str!` allows).
fn parse_argument(input: TokenStream) -> syn::Result<syn::LitStr> {
    const EXPECTED: &str = "expected a string literal with the path of an Einlang file, \
                            e.g. `include_ein!(\"src/kernels.ein\")`";
    let parser = |input: ParseStream| {
        if input.is_empty() {
            return Err(input.error(EXPECTED));
        }
        let lit = match input.parse::<syn::Lit>() {
            Ok(syn::Lit::Str(lit)) => lit,
            Ok(other) => return Err(syn::Error::new(other.span(), EXPECTED)),
            Err(err) => return Err(syn::Error::new(err.span(), EXPECTED)),
        };
        if input.peek(syn::Token![,]) {
            input.parse::<syn::Token![,]>()?;
        }
        if !input.is_empty() {
            return Err(input.error("`include_ein!` takes one argument, the path of an Einlang file"));
        }
        Ok(lit)
    };
    parser.parse2(input)
}

/// `manifest_dir/relative`, made absolute so that `include_bytes!` (which
/// resolves relative paths against the calling source file) finds the same
/// file. An absolute `relative` stays as it is.
fn absolute_path(manifest_dir: &Path, relative: &str) -> PathBuf {
    let joined = manifest_dir.join(relative);
    std::path::absolute(&joined).unwrap_or(joined)
}

/// One `const _: &[u8] = include_bytes!("...");` per file, so that rustc
/// lists the files in the crate's dep-info and Cargo rebuilds the crate when
/// one of them changes.
fn track_files(paths: &[PathBuf], at: TokSpan) -> TokenStream {
    let mut out = TokenStream::new();
    for path in paths {
        let Some(text) = path.to_str() else {
            // `include_bytes!` takes a string literal; a path that is not
            // UTF-8 cannot be written as one.
            out.extend(error_at(
                at,
                &format!("the path `{}` is not valid UTF-8, so changes to it cannot be tracked", path.display()),
            ));
            continue;
        };
        let mut lit = Literal::string(text);
        lit.set_span(at);
        out.extend(quote_spanned!(at=> const _: &[u8] = ::core::include_bytes!(#lit);));
    }
    out
}

/// `::core::compile_error! { "message" }` at `at`.
fn error_at(at: TokSpan, message: &str) -> TokenStream {
    let mut lit = Literal::string(message);
    lit.set_span(at);
    quote_spanned!(at=> ::core::compile_error! { #lit })
}

// ---------------------------------------------------------------------------
// The fallback region

/// Keeps `proc_macro2` on its fallback implementation (which knows line and
/// column of lexed text) while alive; restores the compiler's implementation
/// when dropped, also during unwinding.
struct FallbackLexer;

impl FallbackLexer {
    fn force() -> FallbackLexer {
        proc_macro2::fallback::force();
        FallbackLexer
    }
}

impl Drop for FallbackLexer {
    fn drop(&mut self) {
        proc_macro2::fallback::unforce();
    }
}

/// Parses and compiles the file and the files it imports. Must run with the
/// fallback lexer forced: the Rust it returns consists of fallback tokens,
/// and the errors are already rendered to text, so that no fallback span is
/// needed afterwards. Also returns the absolute paths of every file read.
fn compile_file(root: LoadedFile, options: &Options) -> (Result<TokenStream, Vec<String>>, Vec<PathBuf>) {
    let mut loader = Loader::new(root);
    let result = super::catch_ice(|| {
        let mut ast = crate::base::timing::time("parse", || loader.load(0))?;
        ast.items.append(&mut loader.mounted);
        crate::driver::compile(ast, options).map(|c| c.rust)
    });
    let tracked = loader.files.iter().map(|f| f.path.clone()).collect();
    (result.map_err(|diags| render_all(&loader.files, &loader.anchors, &diags)), tracked)
}

/// Rebuilds `tokens` (fallback tokens from the fallback region) out of
/// tokens of the current implementation, every one at `Span::call_site()`.
/// Must run after the fallback region: inside a proc macro the result then
/// consists of compiler tokens that rustc accepts. Invisible groups
/// (`Delimiter::None`) are kept, so the rebuilt stream groups exactly as the
/// generated one (printing and re-lexing it would lose them).
fn respan_to_call_site(tokens: TokenStream) -> Result<TokenStream, Vec<Diagnostic>> {
    let call_site = TokSpan::call_site();
    let mut out = Vec::new();
    for tree in tokens {
        out.push(match tree {
            TokenTree::Group(g) => {
                let mut group = Group::new(g.delimiter(), respan_to_call_site(g.stream())?);
                group.set_span(call_site);
                TokenTree::Group(group)
            }
            TokenTree::Ident(ident) => {
                let name = ident.to_string();
                match name.strip_prefix("r#") {
                    Some(raw) => TokenTree::Ident(Ident::new_raw(raw, call_site)),
                    None => TokenTree::Ident(Ident::new(&name, call_site)),
                }
            }
            TokenTree::Punct(p) => {
                let mut punct = Punct::new(p.as_char(), p.spacing());
                punct.set_span(call_site);
                TokenTree::Punct(punct)
            }
            TokenTree::Literal(lit) => {
                // A literal can only be rebuilt from its source text.
                let text = lit.to_string();
                let Ok(mut lit) = text.parse::<Literal>() else {
                    let msg = format!("generated literal `{text}` does not lex");
                    return Err(vec![Diagnostic::bug(Span::call_site(), msg)]);
                };
                lit.set_span(call_site);
                TokenTree::Literal(lit)
            }
        });
    }
    Ok(out.into_iter().collect())
}

// The tests stay in this file rather than in `file/tests.rs` because the
// module is one file; they drive `expand_file_in` on files written to a
// temporary directory (or on the repository's fixtures) and compare the
// messages of the `compile_error!`s it emits. Update the snapshots with
// `UPDATE_EXPECT=1 cargo test -p einlang-core file`.

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use expect_test::{expect, Expect};
    use proc_macro2::{TokenStream, TokenTree};
    use quote::quote;

    use super::expand_file_in;
    use crate::Options;

    /// A fresh directory under the system's temporary directory, removed
    /// when dropped; it plays the crate root (`CARGO_MANIFEST_DIR`).
    struct TempCrate(PathBuf);

    impl TempCrate {
        fn with_file(name: &str, src: &str) -> TempCrate {
            static NEXT: AtomicUsize = AtomicUsize::new(0);
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let dir = std::env::temp_dir().join(format!("einlang-include-{}-{n}", std::process::id()));
            std::fs::create_dir_all(&dir).expect("create a temporary directory");
            std::fs::write(dir.join(name), src).expect("write a temporary file");
            TempCrate(dir)
        }
    }

    impl Drop for TempCrate {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// The messages of every `compile_error!` in `tokens`, in order.
    fn compile_errors(tokens: TokenStream) -> Vec<String> {
        let trees: Vec<TokenTree> = tokens.into_iter().collect();
        let mut messages = Vec::new();
        for (i, tree) in trees.iter().enumerate() {
            match tree {
                TokenTree::Ident(ident) if ident == "compile_error" => {
                    if let Some(TokenTree::Group(group)) = trees.get(i + 2) {
                        let lit: syn::LitStr = syn::parse2(group.stream()).expect("a string literal");
                        messages.push(lit.value());
                    }
                }
                TokenTree::Group(group) => messages.extend(compile_errors(group.stream())),
                _ => {}
            }
        }
        messages
    }

    fn joined(messages: Vec<String>) -> String {
        messages.iter().map(|m| format!("{m}\n")).collect::<Vec<_>>().join("---\n")
    }

    /// Expands `include_ein!("prog.ein")` with `src` as the file's text.
    fn expand_src(src: &str) -> TokenStream {
        let krate = TempCrate::with_file("prog.ein", src);
        expand_file_in(quote!("prog.ein"), Some(krate.0.clone().into_os_string()), &Options::default())
    }

    /// Expands `src`, which must fail, and compares the error messages.
    fn check_errors(src: &str, expect: Expect) {
        let messages = compile_errors(expand_src(src));
        assert!(!messages.is_empty(), "expected errors in\n{src}");
        expect.assert_eq(&joined(messages));
    }

    /// Expands `input` as the macro's argument tokens, with the workspace
    /// root as the crate root, and compares the error messages.
    fn check_argument(input: TokenStream, expect: Expect) {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
        let out = expand_file_in(input, Some(root.into()), &Options::default());
        expect.assert_eq(&joined(compile_errors(out)));
    }

    #[test]
    fn syntax_error_shows_the_file_position_and_line() {
        check_errors(
            "pub fn f(x: [f32; N]) -> [f32; N] {\n    let y[i] = x[i] * 2.0\n    y\n}\n",
            expect![[r#"
                prog.ein:3:5: expected `;`, found `y`
                  |
                3 |     y
                  |     ^
            "#]],
        );
    }

    #[test]
    fn unbalanced_delimiter_is_reported_at_its_position() {
        check_errors(
            "pub fn f(x: f32) -> f32 {\n    (x\n}\n",
            expect![[r#"
                prog.ein:3:1: invalid token or unbalanced delimiter
                  |
                3 | }
                  | ^
            "#]],
        );
    }

    #[test]
    fn resolve_error_keeps_its_help_and_underlines_the_name() {
        check_errors(
            "pub fn f(value: f32) -> f32 {\n\tvalue * valeu\n}\n",
            expect![[r#"
                prog.ein:2:10: cannot find value `valeu` in this scope
                  |
                2 | 	value * valeu
                  | 	        ^^^^^
            "#]],
        );
    }

    #[test]
    fn every_error_of_the_file_is_reported() {
        check_errors(
            "pub fn f(x: f32) -> f32 { x * y }\npub fn g(x: f32) -> f32 { x * z }\n",
            expect![[r#"
                prog.ein:1:31: cannot find value `y` in this scope
                  |
                1 | pub fn f(x: f32) -> f32 { x * y }
                  |                               ^
                  = help: a name with a similar spelling exists: `f`
                ---
                prog.ein:2:31: cannot find value `z` in this scope
                  |
                2 | pub fn g(x: f32) -> f32 { x * z }
                  |                               ^
                  = help: a name with a similar spelling exists: `f`
            "#]],
        );
    }

    #[test]
    fn secondary_labels_get_their_own_positions() {
        check_errors(
            "pub fn g(x: f32) -> f32 { x }\n\npub fn f(x: f32) -> f32 {\n    g(x, x)\n}\n",
            expect![[r#"
                prog.ein:4:5: this function takes 1 argument but 2 arguments were supplied
                  |
                4 |     g(x, x)
                  |     ^^^^^^^
                prog.ein:1:8: `g` is defined here
                  |
                1 | pub fn g(x: f32) -> f32 { x }
                  |        ^
            "#]],
        );
    }

    #[test]
    fn labels_in_the_standard_library_are_not_given_file_positions() {
        check_errors(
            "use std::math::pi;\n\npub fn f(x: f32) -> f32 {\n    pi(x)\n}\n",
            expect![[r#"
                prog.ein:4:5: `pi` is not a function
                  |
                4 |     pi(x)
                  |     ^^
                in the einlang standard library: `pi` is defined here
            "#]],
        );
        check_errors(
            "use std::math::reciprocal;\n\npub fn f(x: i32) -> i32 {\n    reciprocal(x)\n}\n",
            expect![[r#"
                prog.ein:4:5: `reciprocal` cannot be called with these arguments
                  |
                4 |     reciprocal(x)
                  |     ^^^^^^^^^^^^^
                  = note: a float literal never becomes an integer
                  = note: `reciprocal` is generic; its body is checked for each combination of argument types, here `x: i32`
                  = help: convert the integer side to a float, for example `(...) as f32`
                in the einlang standard library: in the body of `reciprocal`: mismatched types: expected `i32`, found a float literal
            "#]],
        );
    }

    #[test]
    fn lines_are_counted_inside_multi_line_expressions() {
        check_errors(
            "pub fn f(x: [i32; N]) -> i32 {\n    let s = sum[i](x[i]\n        * 2.5);\n    s\n}\n",
            expect![[r#"
                prog.ein:3:11: mismatched types: expected `i32`, found a float literal
                  |
                3 |         * 2.5);
                  |           ^^^
                  = note: a float literal never becomes an integer
                  = help: convert the integer side to a float, for example `(...) as f32`
            "#]],
        );
    }

    #[test]
    fn missing_file_names_the_path_as_written() {
        check_argument(
            quote!("tests/ein/no_such_file.ein"),
            expect![[r#"
                couldn't read `tests/ein/no_such_file.ein`: No such file or directory (os error 2)
                 = note: the path is relative to the directory of the crate's `Cargo.toml` (`CARGO_MANIFEST_DIR`)
            "#]],
        );
    }

    #[test]
    fn missing_manifest_dir_is_an_error() {
        let out = expand_file_in(quote!("prog.ein"), None, &Options::default());
        expect![[r#"
            environment variable `CARGO_MANIFEST_DIR` is not set
             = note: `include_ein!` reads paths relative to the directory of the crate's `Cargo.toml`, which Cargo passes in `CARGO_MANIFEST_DIR`; build the crate with Cargo
        "#]]
        .assert_eq(&joined(compile_errors(out)));
    }

    #[test]
    fn argument_must_be_one_string_literal() {
        check_argument(
            quote!(),
            expect![[r#"
                unexpected end of input, expected a string literal with the path of an Einlang file, e.g. `include_ein!("src/kernels.ein")`
            "#]],
        );
        check_argument(
            quote!(42),
            expect![[r#"
                expected a string literal with the path of an Einlang file, e.g. `include_ein!("src/kernels.ein")`
            "#]],
        );
        check_argument(
            quote!(tests / ein / kernels.ein),
            expect![[r#"
                expected a string literal with the path of an Einlang file, e.g. `include_ein!("src/kernels.ein")`
            "#]],
        );
        check_argument(
            quote!("a.ein", "b.ein"),
            expect![[r#"
                `include_ein!` takes one argument, the path of an Einlang file
            "#]],
        );
    }

    #[test]
    fn trailing_comma_is_accepted() {
        check_argument(quote!("tests/ein/kernels.ein",), expect![""]);
    }

    #[test]
    fn fixture_compiles_and_its_file_is_tracked() {
        let root = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
        let out = expand_file_in(quote!("tests/ein/kernels.ein"), Some(root.clone().into()), &Options::default());
        assert!(compile_errors(out.clone()).is_empty(), "{out}");
        let text = out.to_string();
        assert!(text.contains("pub fn matmul"), "{text}");
        assert!(text.contains("pub fn softmax"), "{text}");
        let tracked = std::path::absolute(root.join("tests/ein/kernels.ein")).expect("an absolute path");
        let include =
            format!("const _ : & [u8] = :: core :: include_bytes ! ({:?}) ;", tracked.to_str().expect("a UTF-8 path"));
        assert!(text.ends_with(&include), "{text}");
    }

    #[test]
    fn top_level_statements_become_main() {
        let out = expand_src("let a = [1.0, 2.0];\nlet b[i] = a[i] * 2.0;\n");
        assert!(compile_errors(out.clone()).is_empty(), "{out}");
        assert!(out.to_string().contains("pub fn main ()"), "{out}");
    }

    /// Expands `include_ein!("main.ein")` in a crate with the files `files`.
    fn expand_files(files: &[(&str, &str)]) -> TokenStream {
        let krate = TempCrate::with_file(files[0].0, files[0].1);
        for (name, src) in &files[1..] {
            std::fs::write(krate.0.join(name), src).expect("write a temporary file");
        }
        expand_file_in(quote!("main.ein"), Some(krate.0.clone().into_os_string()), &Options::default())
    }

    #[test]
    fn imported_files_are_compiled_and_tracked() {
        let out = expand_files(&[
            ("main.ein", "use helper::twice;\npub fn f(x: f32) -> f32 { twice(x) }\n"),
            ("helper.ein", "use more;\npub fn twice(x) { more::add(x, x) }\n"),
            ("more.ein", "pub fn add(a, b) { a + b }\n"),
        ]);
        assert!(compile_errors(out.clone()).is_empty(), "{out}");
        let text = out.to_string();
        for name in ["main.ein", "helper.ein", "more.ein"] {
            assert!(text.contains(&format!("{name}\") ;")), "{name} is not tracked in {text}");
        }
    }

    #[test]
    fn circular_import_is_reported_at_the_use() {
        let out = expand_files(&[
            ("main.ein", "use a::f;\npub fn g(x: f32) -> f32 { f(x) }\n"),
            ("a.ein", "use b::h;\npub fn f(x: f32) -> f32 { h(x) }\n"),
            ("b.ein", "use a;\npub fn h(x: f32) -> f32 { x }\n"),
        ]);
        expect![[r#"
            b.ein:1:5: circular import of `a`
              |
            1 | use a;
              |     ^
              = note: `a.ein`, `b.ein` import each other in a cycle
              = help: move what the files share into a file that neither imports
        "#]]
        .assert_eq(&joined(compile_errors(out)));
    }

    #[test]
    fn errors_in_an_imported_file_show_its_path() {
        let out = expand_files(&[
            ("main.ein", "use helper::twice;\npub fn f(x: f32) -> f32 { twice(x) }\n"),
            ("helper.ein", "pub fn twice(x: f32) -> f32 {\n    x * y\n}\n"),
        ]);
        expect![[r#"
            helper.ein:2:9: cannot find value `y` in this scope
              |
            2 |     x * y
              |         ^
              = help: a name with a similar spelling exists: `x`
        "#]]
        .assert_eq(&joined(compile_errors(out)));
    }

    #[test]
    fn a_file_with_errors_is_still_tracked() {
        let out = expand_src("pub fn f(x: f32) -> f32 { x * y }\n");
        assert!(out.to_string().contains("include_bytes"), "{out}");
    }
}
