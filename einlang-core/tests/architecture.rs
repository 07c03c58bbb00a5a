//! The import rule of docs/architecture.md: a module of the compiler may
//! import only the modules above it in the stage order, never one below,
//! and names what it uses through the stage that owns it, never through a
//! re-export of the crate root (which only declares the stages and
//! re-exports: `lib_rs_only_declares_and_reexports`).
//! Read from the source text: every `crate::<module>` path outside comments
//! and outside test code (each `#[cfg(test)]` item, wherever it stands in its
//! file, and `tests.rs` / `*_tests.rs` files) must name an earlier stage or
//! its own.

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
/// A `#[cfg(test)]` item is skipped to its end: a declaration (`mod
/// tests;`, `use ...;`) to its `;`, an item with a body to the line where
/// its braces close; the code after it is read.
fn imports(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((n, line)) = lines.next() {
        if line.trim_start().starts_with("#[cfg(test)]") {
            skip_item(line.trim_start().trim_start_matches("#[cfg(test)]"), &mut lines);
            continue;
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

/// Skips the item that follows a `#[cfg(test)]` (`rest` is what follows
/// the attribute on its line): its other attributes, then up to the `;`
/// that ends a declaration or the line where the item's braces close.
fn skip_item<'a>(rest: &str, lines: &mut impl Iterator<Item = (usize, &'a str)>) {
    let mut depth = 0i64;
    let mut opened = false;
    let mut line = rest.to_string();
    loop {
        let code = line.split("//").next().unwrap_or("").trim().to_string();
        if !code.is_empty() && !code.starts_with("#[") {
            for c in code.chars() {
                match c {
                    '{' => {
                        depth += 1;
                        opened = true;
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
            }
            if (opened && depth <= 0) || (!opened && code.ends_with(';')) {
                return;
            }
        }
        match lines.next() {
            Some((_, next)) => line = next.to_string(),
            None => return,
        }
    }
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
            match ORDER.iter().position(|s| *s == module) {
                Some(r) if r > rank => {
                    violations.push(format!("{}:{line}: `{stage}` imports the later `{module}`", file.display()))
                }
                Some(_) => {}
                // `crate::{self, ...}`'s `self`, a macro's `$crate`-less
                // path end: not a module name.
                None if module.is_empty() || module == "self" => {}
                None => violations.push(format!(
                    "{}:{line}: `{stage}` names the crate root's `{module}`; name it through the stage that owns it",
                    file.display()
                )),
            }
        }
    }
    assert!(checked > 100, "only {checked} imports found: is the scan reading the sources?");
    assert!(violations.is_empty(), "imports against the stage order:\n{}", violations.join("\n"));
}

/// The two back ends share their host side through `codegen::host`; the
/// CUDA back end never reaches into the Rust one (outside its tests).
#[test]
fn the_cuda_back_end_does_not_import_the_rust_one() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/codegen/cuda");
    let mut all = Vec::new();
    files(&dir, &mut all);
    let mut violations = Vec::new();
    for file in &all {
        let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name == "tests.rs" || name.ends_with("_tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(file).expect("readable source file");
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if code.contains("codegen::rust") || code.contains("super::rust") {
                violations.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(all.len() >= 3, "only {} files under codegen/cuda: is the scan reading the sources?", all.len());
    assert!(violations.is_empty(), "codegen/cuda imports codegen/rust:\n{}", violations.join("\n"));
}

/// The crate root declares the stages and re-exports the items the macros
/// and tools use; nothing is defined there.
#[test]
fn lib_rs_only_declares_and_reexports() {
    let lib = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs");
    let text = std::fs::read_to_string(lib).expect("readable lib.rs");
    let mut reexports = 0;
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        let allowed = line.is_empty()
            || line.starts_with("//")
            || line == "#[cfg(test)]"
            || (line.starts_with("pub mod ") || line.starts_with("mod ")) && line.ends_with(';');
        if line.starts_with("pub use ") && line.ends_with(';') {
            reexports += 1;
        } else {
            assert!(allowed, "src/lib.rs:{}: `{line}`: the crate root only declares modules and re-exports", n + 1);
        }
    }
    assert!(reexports > 0, "no re-exports found: is the scan reading lib.rs?");
}

#[test]
fn the_scan_reads_past_test_items_and_flags_root_items() {
    let text = "#[cfg(test)]\nmod tests;\nuse crate::codegen::Options;\n#[cfg(test)]\nmod inline {\n    use crate::entry;\n    fn f() {}\n}\nuse crate::Options;\n#[cfg(test)]\n#[allow(dead_code)]\nuse crate::driver;\nlet x = crate::opt::run();\n";
    let found: Vec<(usize, String)> = imports(text);
    let modules: Vec<&str> = found.iter().map(|(_, m)| m.as_str()).collect();
    assert_eq!(modules, ["codegen", "Options", "opt"], "{found:?}");
    assert_eq!(found[1].0, 9);
}

#[test]
fn the_scan_sees_grouped_imports_and_skips_comments_and_tests() {
    let text = "use crate::{ir, base::span::Span};\n// crate::codegen in a comment\nlet x = crate::opt::run();\n#[cfg(test)]\nmod tests { use crate::entry; }\n";
    let found: Vec<String> = imports(text).into_iter().map(|(_, m)| m).collect();
    assert!(found.contains(&"ir".to_string()) && found.contains(&"base".to_string()));
    assert!(found.contains(&"opt".to_string()));
    assert!(!found.contains(&"codegen".to_string()) && !found.contains(&"entry".to_string()));
}
