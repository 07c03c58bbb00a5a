//! The compiler never panics on user input: programs mutated at random
//! places (a word deleted, duplicated, or replaced by another word or by a
//! literal) must compile or produce diagnostics, never panic.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

use einlang_core::{compile_str, Options};

const REPLACEMENTS: &[&str] = &[
    "x",
    "0",
    "-1",
    "99999999999999999999",
    "1.5",
    "true",
    "sum",
    "[",
    "]",
    "(",
    ")",
    "where",
    "let",
    ";",
    ",",
    "..",
    "**",
    "@",
    "as f64",
    "N",
];

/// Splits into words and single punctuation characters, keeping offsets.
fn words(src: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let bytes = src.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_alphanumeric() || c == b'_' || c == b'.' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_' || bytes[i] == b'.') {
                i += 1;
            }
            out.push((start, i));
        } else {
            out.push((i, i + 1));
            i += 1;
        }
    }
    out
}

/// Compiles `src` in both modes; the Rust of the default mode when the
/// program compiled.
fn must_not_panic(src: &str) -> Option<String> {
    let result = catch_unwind(AssertUnwindSafe(|| {
        let rust = compile_str(src, &Options { baseline_only: true, ..Default::default() }).ok().map(|c| c.rust);
        let _ = compile_str(src, &Options { checked: true, ..Default::default() });
        rust
    }));
    match result {
        Ok(rust) => rust.map(|tokens| {
            let file: syn::File = syn::parse2(tokens).expect("generated code parses as a Rust file");
            prettyplease::unparse(&file)
        }),
        Err(_) => panic!("the compiler panicked on:\n{src}"),
    }
}

/// `rust` without its doc comments, and without `pub`.
fn code(rust: &str) -> Vec<String> {
    rust.lines().filter(|l| !l.trim_start().starts_with("///")).map(|l| l.replace("pub ", "")).collect()
}

/// `text` as `//` comment lines.
fn comment(text: &str) -> String {
    text.lines().map(|l| format!("// {l}").trim_end().to_string()).collect::<Vec<_>>().join("\n")
}

#[test]
fn mutated_programs_do_not_panic() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/stages");
    let mut sources = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("stage programs exist") {
        let path = entry.expect("readable entry").path();
        if path.extension().is_some_and(|e| e == "ein") {
            let name = path.file_stem().expect("a file name").to_string_lossy().into_owned();
            sources.push((name, std::fs::read_to_string(&path).expect("readable program")));
        }
    }
    sources.sort();
    assert!(!sources.is_empty());
    // A deterministic generator keeps failures reproducible.
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut tried = 0;
    for (name, src) in &sources {
        let original = must_not_panic(src).expect("the stage program compiles");
        // The first mutant in the body (past the first third of the words:
        // not the docs, visibility or name) that compiles to other code is
        // kept as a sample that the facade's
        // `tests/codegen_samples.rs` compiles with rustc.
        let mut sample = None;
        let ws = words(src);
        for (k, &(a, b)) in ws.iter().enumerate() {
            let deleted = format!("{}{}", &src[..a], &src[b..]);
            let duplicated = format!("{}{} {}", &src[..b], &src[a..b], &src[b..]);
            let r = REPLACEMENTS[(next() % REPLACEMENTS.len() as u64) as usize];
            let replaced = format!("{}{}{}", &src[..a], r, &src[b..]);
            let mut mutants = vec![deleted, duplicated, replaced];
            // Swap with another random word.
            let (c, d) = ws[(next() % ws.len() as u64) as usize];
            if (c, d) != (a, b) && k % 2 == 0 {
                mutants.push(format!("{}{}{}", &src[..a], &src[c..d], &src[b..]));
            }
            for m in &mutants {
                let rust = must_not_panic(m);
                if sample.is_none() && k >= ws.len() / 3 {
                    sample = rust
                        .filter(|r| {
                            code(r) != code(&original)
                                && r.matches("pub fn").count() == original.matches("pub fn").count()
                        })
                        .map(|r| (m.clone(), r));
                }
            }
            tried += 3;
        }
        let (mutant, rust) = sample.expect("some mutant compiles to other code");
        let text = format!("// The Rust of a mutant of tests/stages/{name}.ein:\n{}\n{rust}", comment(&mutant));
        expect_test::expect_file![dir.join(format!("../codegen_samples/mutant_{name}.rs"))].assert_eq(&text);
    }
    assert!(tried > 300);
}
