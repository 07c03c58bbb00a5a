//! Writes what the compiler generates for the whole corpus, one file per
//! expansion, so that a restructuring can show that generated code did not
//! change: run it before and after, then `diff -r BEFORE AFTER`.
//!
//! `cargo run -p einlang-core --example dump_corpus -- OUT_DIR [ROOT]`
//!
//! ROOT is the workspace (default: the parent of this crate). The corpus is
//! every `einlang! { ... }` and `include_ein!("...")` call in the `.rs` files
//! under `tests/`, `benches/` and `examples/` (found by walking their tokens,
//! so calls inside functions, modules and `macro_rules!` count), and every
//! `.ein` file under `examples/` and `tests/`, each expanded as
//! `include_ein!` would. Each is expanded with the options of the macro
//! crate's feature sets `default`, `checked` and `cuda` (the C source of
//! each CUDA kernel is a string literal of the `cuda` expansion), through the
//! same entry points as the macros (`einlang_core::expand`,
//! `einlang_core::expand_file`), and written formatted to
//! `OUT_DIR/MODE/PATH.N.rs`, N counting the calls of the file in token order.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use proc_macro2::{TokenStream, TokenTree};

/// One macro call of the corpus.
struct Call {
    /// Where it is: the file's path under ROOT and the call's number in it.
    key: String,
    kind: Kind,
    tokens: TokenStream,
}

enum Kind {
    Einlang,
    Include,
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(out) = args.first().map(PathBuf::from) else {
        eprintln!("usage: dump_corpus OUT_DIR [ROOT]");
        return ExitCode::FAILURE;
    };
    let root = match args.get(1) {
        Some(r) => PathBuf::from(r),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf(),
    };
    let root = root.canonicalize().unwrap_or(root);
    // `include_ein!` reads paths relative to the calling crate, the facade
    // at ROOT for every file of the corpus.
    std::env::set_var("CARGO_MANIFEST_DIR", &root);
    let mut calls = Vec::new();
    for dir in ["tests", "benches", "examples"] {
        let mut files = Vec::new();
        walk(&root.join(dir), &mut files);
        files.sort();
        for file in files {
            let rel = file.strip_prefix(&root).unwrap().to_string_lossy().into_owned();
            if rel.ends_with(".rs") {
                let Ok(src) = std::fs::read_to_string(&file) else { continue };
                // Files that are not Rust tokens (a UI test's broken input)
                // have no calls to find.
                let Ok(tokens) = src.parse::<TokenStream>() else { continue };
                let mut found = Vec::new();
                find_calls(tokens, &mut found);
                for (n, (kind, tokens)) in found.into_iter().enumerate() {
                    calls.push(Call { key: format!("{rel}.{n}"), kind, tokens });
                }
            } else if rel.ends_with(".ein") {
                let lit = proc_macro2::Literal::string(&rel);
                calls.push(Call { key: format!("{rel}.0"), kind: Kind::Include, tokens: TokenTree::from(lit).into() });
            }
        }
    }
    let modes: [(&str, einlang_core::Options); 3] = [
        ("default", einlang_core::Options::default()),
        ("checked", einlang_core::Options { checked: true, ..Default::default() }),
        ("cuda", einlang_core::Options { cuda: true, ..Default::default() }),
    ];
    for (mode, options) in &modes {
        for call in &calls {
            let rust = match call.kind {
                Kind::Einlang => einlang_core::expand(call.tokens.clone(), options),
                Kind::Include => einlang_core::expand_file(call.tokens.clone(), options),
            };
            let text = match syn::parse2::<syn::File>(rust.clone()) {
                Ok(file) => prettyplease::unparse(&file),
                Err(e) => format!("// unparsable: {e}\n{rust}\n"),
            };
            let path = out.join(mode).join(format!("{}.rs", call.key));
            if let Err(e) = std::fs::create_dir_all(path.parent().unwrap()).and_then(|_| std::fs::write(&path, text)) {
                eprintln!("{}: {e}", path.display());
                return ExitCode::FAILURE;
            }
        }
    }
    println!("{} calls, {} modes, written under {}", calls.len(), modes.len(), out.display());
    ExitCode::SUCCESS
}

/// Every file under `dir`.
fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            walk(&path, files);
        } else {
            files.push(path);
        }
    }
}

/// The `einlang! { ... }` and `include_ein!(...)` calls in `tokens`, in
/// token order, nested ones included.
fn find_calls(tokens: TokenStream, found: &mut Vec<(Kind, TokenStream)>) {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    for (i, tree) in trees.iter().enumerate() {
        match tree {
            TokenTree::Ident(id) if id == "einlang" || id == "include_ein" => {
                if let (Some(TokenTree::Punct(p)), Some(TokenTree::Group(g))) = (trees.get(i + 1), trees.get(i + 2)) {
                    if p.as_char() == '!' {
                        let kind = if id == "einlang" { Kind::Einlang } else { Kind::Include };
                        found.push((kind, g.stream()));
                    }
                }
            }
            TokenTree::Group(g) => find_calls(g.stream(), found),
            _ => {}
        }
    }
}
