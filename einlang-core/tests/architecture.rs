//! The import rule of docs/architecture.md: a module of the compiler may
//! import only the modules above it in the stage order, never one below.
//! Read from the source text: every `crate::<module>` path outside comments
//! and outside test code (a `#[cfg(test)]` item to the end of its file, and
//! `tests.rs` / `*_tests.rs` files) must name an earlier stage or its own.

use std::path::{Path, PathBuf};

/// The stages, in order (docs/architecture.md, "Import rules").
const ORDER: &[&str] = &[
    "base",
    "diag",
    "syntax",
    "source",
    "hir",
    "resolve",
    "analysis",
    "transform",
    "ir",
    "lower",
    "opt",
    "codegen",
    "driver",
    "entry",
];

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable source directory") {
        let path = entry.expect("readable entry").path();
        if path.is_dir() {
            files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The stage a source file belongs to: its first path component under
/// `src/` (without `.rs`); None for lib.rs and test support.
fn stage_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?;
    let first = rel.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    ORDER.contains(&name).then(|| name.to_string())
}

/// The `crate::<module>` paths of `text` outside comments and test code.
fn imports(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("#[cfg(test)]") {
            break;
        }
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            rest = &rest[at + "crate::".len()..];
            let module: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            out.push((n + 1, module));
        }
        // `use crate::{a, b::c}` names several modules at once.
        if let Some(group) = code.split("use crate::{").nth(1) {
            for part in group.split(',') {
                let module: String = part.trim().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                out.push((n + 1, module));
            }
        }
    }
    out
}

#[test]
fn no_stage_imports_a_later_one() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &mut all);
    let mut violations = Vec::new();
    let mut checked = 0;
    for file in &all {
        let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name == "tests.rs" || name.ends_with("_tests.rs") || file.components().any(|c| c.as_os_str() == "tests") {
            continue;
        }
        let Some(stage) = stage_of(&src, file) else { continue };
        let rank = ORDER.iter().position(|s| *s == stage).expect("a known stage");
        let text = std::fs::read_to_string(file).expect("readable source file");
        for (line, module) in imports(&text) {
            checked += 1;
            if let Some(r) = ORDER.iter().position(|s| *s == module) {
                if r > rank {
                    violations.push(format!("{}:{line}: `{stage}` imports the later `{module}`", file.display()));
                }
            }
        }
    }
    assert!(checked > 100, "only {checked} imports found: is the scan reading the sources?");
    assert!(violations.is_empty(), "imports against the stage order:\n{}", violations.join("\n"));
}

#[test]
fn the_scan_sees_grouped_imports_and_skips_comments_and_tests() {
    let text = "use crate::{ir, base::span::Span};\n// crate::codegen in a comment\nlet x = crate::opt::run();\n#[cfg(test)]\nmod tests { use crate::entry; }\n";
    let found: Vec<String> = imports(text).into_iter().map(|(_, m)| m).collect();
    assert!(found.contains(&"ir".to_string()) && found.contains(&"base".to_string()));
    assert!(found.contains(&"opt".to_string()));
    assert!(!found.contains(&"codegen".to_string()) && !found.contains(&"entry".to_string()));
}
