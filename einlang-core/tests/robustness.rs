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

fn must_not_panic(src: &str) {
    let result = catch_unwind(AssertUnwindSafe(|| {
        let _ = compile_str(src, &Options::default());
        let _ = compile_str(src, &Options { checked: true, ..Default::default() });
    }));
    assert!(result.is_ok(), "the compiler panicked on:\n{src}");
}

#[test]
fn mutated_programs_do_not_panic() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/stages");
    let mut sources = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("stage programs exist") {
        let path = entry.expect("readable entry").path();
        if path.extension().is_some_and(|e| e == "ein") {
            sources.push(std::fs::read_to_string(&path).expect("readable program"));
        }
    }
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
    for src in &sources {
        let ws = words(src);
        for (k, &(a, b)) in ws.iter().enumerate() {
            let deleted = format!("{}{}", &src[..a], &src[b..]);
            must_not_panic(&deleted);
            let duplicated = format!("{}{} {}", &src[..b], &src[a..b], &src[b..]);
            must_not_panic(&duplicated);
            let r = REPLACEMENTS[(next() % REPLACEMENTS.len() as u64) as usize];
            let replaced = format!("{}{}{}", &src[..a], r, &src[b..]);
            must_not_panic(&replaced);
            // Swap with another random word.
            let (c, d) = ws[(next() % ws.len() as u64) as usize];
            if (c, d) != (a, b) && k % 2 == 0 {
                let swapped = format!("{}{}{}", &src[..a], &src[c..d], &src[b..]);
                must_not_panic(&swapped);
            }
            tried += 3;
        }
    }
    assert!(tried > 300);
}
