//! The files of an `include_ein!` program: the included file, read by the
//! macro (`crate::entry::include`), and the files its `use` items import;
//! and where a span of one of them points, for the diagnostic renderer.
//!
//! Imports between files follow the seed implementation: `use name;` or
//! `use name::item;` (also `use crate::name::...`), where `name` is not an
//! item of the importing file, loads the file `name.ein` from the directory
//! of the included file (the crate root of the program) and mounts it as a
//! module `name` of the program, as if written `pub mod name { ... }`.
//! Imported files may import further files; their `use name...` refers to
//! the mounted module (`crate::name`). A file that imports itself through a
//! chain of imports is an error at the `use` that closes the cycle.
//!
//! Spans are those of the fallback lexer (see `crate::entry::include`),
//! which know their line and column; a `Locator` is valid only while the
//! fallback lexer is forced.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use proc_macro2::Span as TokSpan;

use crate::base::span::Span;
use crate::diag::{render, Diagnostic, Locate};
use crate::syntax::ast;

/// The text of the included file and the path to show for it (as the user
/// wrote it, which is shorter than the absolute path and the same on every
/// machine).
pub(crate) struct SourceFile<'a> {
    pub(crate) shown: &'a str,
    pub(crate) src: &'a str,
}

/// A file read for the program: the included one or one it imports.
pub(crate) struct LoadedFile {
    /// The path as the messages show it.
    pub(crate) shown: String,
    pub(crate) src: String,
    /// The absolute path, for rebuild tracking.
    pub(crate) path: PathBuf,
}

/// Renders diagnostics whose spans may lie in any of `files` (each with the
/// anchor span that recognizes it, None when it did not parse).
pub(crate) fn render_all(files: &[LoadedFile], anchors: &[Option<TokSpan>], diags: &[Diagnostic]) -> Vec<String> {
    let sources: Vec<SourceFile<'_>> = files.iter().map(|f| SourceFile { shown: &f.shown, src: &f.src }).collect();
    let Some(file) = sources.first() else { return Vec::new() };
    let others = sources.iter().zip(anchors).skip(1).map(|(f, a)| (f, *a)).collect();
    let locator = Locator { file, anchor: anchors.first().copied().flatten(), others };
    diags
        .iter()
        .map(|d| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| render(d, &locator)))
                .unwrap_or_else(|_| format!("{}: {}", file.shown, d.primary_text()))
        })
        .collect()
}

/// Reads the files a program imports, depth first.
pub(crate) struct Loader {
    pub(crate) files: Vec<LoadedFile>,
    /// A span inside each file (None until it parsed), to tell its spans
    /// from those of other files.
    pub(crate) anchors: Vec<Option<TokSpan>>,
    /// The files being loaded, outermost first (to report cycles).
    stack: Vec<usize>,
    /// The imported files as modules of the program.
    pub(crate) mounted: Vec<ast::Item>,
}

impl Loader {
    /// A loader of the program whose included file is `root`.
    pub(crate) fn new(root: LoadedFile) -> Loader {
        Loader { files: vec![root], anchors: vec![None], stack: Vec::new(), mounted: Vec::new() }
    }

    /// Parses file `i`, loads the files its `use` items import, and returns
    /// its items (imports of loaded files rewritten to `crate::name`).
    pub(crate) fn load(&mut self, i: usize) -> Result<ast::Program, Vec<Diagnostic>> {
        let mut ast = crate::syntax::parse_str(&self.files[i].src)?;
        self.anchors[i] = ast.items.iter().find_map(item_span).map(|s| s.lo());
        self.stack.push(i);
        let own: Vec<String> = ast.items.iter().filter_map(item_name).collect();
        let mut errors = Vec::new();
        // `mod name;`: the module's items come from its file.
        for item in &mut ast.items {
            let ast::Item::Mod(m) = item else { continue };
            if !m.external {
                continue;
            }
            match self.load_module_file(i, &m.name) {
                Ok(items) => {
                    m.items = items;
                    m.external = false;
                }
                Err(mut e) => errors.append(&mut e),
            }
        }
        for item in &mut ast.items {
            let ast::Item::Use(u) = item else { continue };
            let Some(module) = imported_file(&u.tree, &own) else { continue };
            let dir = self.files[0].path.parent().map(Path::to_path_buf).unwrap_or_default();
            // `name.ein`, or a directory module `name/mod.ein`.
            let candidates = [dir.join(format!("{}.ein", module.name)), dir.join(&module.name).join("mod.ein")];
            let Some(path) = candidates.into_iter().find(|p| p.is_file()) else {
                // Not a file: the resolver reports the unresolved import.
                continue;
            };
            match self.files.iter().position(|f| f.path == path) {
                Some(j) if self.stack.contains(&j) => {
                    let chain: Vec<String> = self.stack[self.stack.iter().position(|&k| k == j).unwrap_or(0)..]
                        .iter()
                        .map(|&k| format!("`{}`", self.files[k].shown))
                        .collect();
                    errors.push(
                        Diagnostic::error(module.span, format!("circular import of `{}`", module.name))
                            .note(format!("{} import each other in a cycle", chain.join(", ")))
                            .help("move what the files share into a file that neither imports"),
                    );
                    continue;
                }
                Some(_) => {}
                None => match self.load_new(path, &module) {
                    Ok(program) => self.mounted.push(ast::Item::Mod(ast::ModItem {
                        vis: ast::Visibility::Public,
                        name: module.clone(),
                        items: program.items,
                        external: false,
                        span: u.span,
                    })),
                    Err(mut e) => errors.append(&mut e),
                },
            }
            if i != 0 {
                // Inside a mounted module the file is a sibling module.
                let tree = std::mem::replace(&mut u.tree, ast::UseTree::Glob(u.span));
                let krate = ast::Ident { name: "crate".to_string(), span: module.span };
                u.tree = ast::UseTree::Path { segment: krate, rest: Box::new(tree) };
            }
        }
        self.stack.pop();
        if errors.is_empty() {
            Ok(ast)
        } else {
            Err(errors)
        }
    }
}

impl Loader {
    /// The directory where the modules that file `i` declares live, as in
    /// Rust: next to the root file or to a `mod.ein`, else in a directory
    /// named after the file.
    fn module_dir(&self, i: usize) -> PathBuf {
        let path = &self.files[i].path;
        let parent = path.parent().map(Path::to_path_buf).unwrap_or_default();
        if i == 0 || path.file_name().is_some_and(|n| n == "mod.ein") {
            parent
        } else {
            parent.join(path.file_stem().unwrap_or_default())
        }
    }

    /// Loads the file of `mod name;` in file `i`: `name.ein`, or
    /// `name/mod.ein`, in its module directory.
    fn load_module_file(&mut self, i: usize, name: &ast::Ident) -> Result<Vec<ast::Item>, Vec<Diagnostic>> {
        let dir = self.module_dir(i);
        let candidates = [dir.join(format!("{}.ein", name.name)), dir.join(&name.name).join("mod.ein")];
        let Some(path) = candidates.iter().find(|p| p.is_file()).cloned() else {
            let d = Diagnostic::error(
                name.span,
                format!(
                    "no file for module `{n}`: there is neither `{n}.ein` nor `{n}/mod.ein` in its directory",
                    n = name.name
                ),
            );
            return Err(vec![d]);
        };
        if let Some(j) = self.files.iter().position(|f| f.path == path) {
            if self.stack.contains(&j) {
                return Err(vec![Diagnostic::error(name.span, format!("module `{}` includes itself", name.name))]);
            }
        }
        self.load_new(path, name).map(|p| p.items)
    }

    /// Reads the file at `path`, not loaded yet, that `by` names, and
    /// loads it. Messages show it relative to the root file's path as
    /// written in the macro call.
    fn load_new(&mut self, path: PathBuf, by: &ast::Ident) -> Result<ast::Program, Vec<Diagnostic>> {
        let src = std::fs::read_to_string(&path)
            .map_err(|err| vec![Diagnostic::error(by.span, format!("couldn't read `{}`: {err}", path.display()))])?;
        let base = Path::new(&self.files[0].shown).parent().map(Path::to_path_buf).unwrap_or_default();
        let root_dir = self.files[0].path.parent().map(Path::to_path_buf).unwrap_or_default();
        let shown = base.join(path.strip_prefix(&root_dir).unwrap_or(&path)).to_string_lossy().into_owned();
        self.files.push(LoadedFile { shown, src, path });
        self.anchors.push(None);
        self.load(self.files.len() - 1)
    }
}

/// The name an item defines in its module.
fn item_name(item: &ast::Item) -> Option<String> {
    match item {
        ast::Item::Fn(f) => Some(f.name.name.clone()),
        ast::Item::Mod(m) => Some(m.name.name.clone()),
        ast::Item::Const(c) => Some(c.name.name.clone()),
        _ => None,
    }
}

/// The file a `use` tree imports from, if its first segment (after
/// `crate::`) names no item of the file and is not `std`, `self` or
/// `super`.
fn imported_file(tree: &ast::UseTree, own: &[String]) -> Option<ast::Ident> {
    let first = match tree {
        ast::UseTree::Path { segment, rest } if segment.name == "crate" => match &**rest {
            ast::UseTree::Path { segment, .. } => segment,
            ast::UseTree::Name { name, .. } => name,
            _ => return None,
        },
        ast::UseTree::Path { segment, .. } => segment,
        ast::UseTree::Name { name, .. } => name,
        _ => return None,
    };
    if ["std", "crate", "self", "super"].contains(&first.name.as_str()) || own.contains(&first.name) {
        return None;
    }
    Some(first.clone())
}

/// A span inside `item`, if it has one of its own.
pub(crate) fn item_span(item: &ast::Item) -> Option<Span> {
    match item {
        ast::Item::Fn(f) | ast::Item::DerivRule(f) => Some(f.span),
        ast::Item::Use(u) => Some(u.span),
        ast::Item::Mod(m) => Some(m.span),
        ast::Item::Const(c) => Some(c.span),
        ast::Item::Stmt(ast::Stmt::Let(l)) => Some(l.span),
        ast::Item::Stmt(ast::Stmt::Expr(e)) => Some(e.span),
        ast::Item::Stmt(ast::Stmt::Item(i)) => item_span(i),
    }
}

/// Where a span points, as far as a reader of the file is concerned.
enum Place {
    /// Inside the included file (`which` 0) or an imported one (`which`
    /// k for `others[k - 1]`): 1-based line and column of the start, and
    /// the column where the underline ends on that line (exclusive).
    InFile { which: usize, line: usize, col: usize, end_col: usize },
    /// Inside a standard-library source.
    Stdlib,
    /// No source position (`Span::call_site()`, used for internal errors and
    /// whole-program diagnostics).
    Nowhere,
}

/// Maps fallback spans to places. Only valid inside the fallback region.
pub(crate) struct Locator<'a> {
    file: &'a SourceFile<'a>,
    anchor: Option<TokSpan>,
    /// The files the included one imports, with their anchors.
    others: Vec<(&'a SourceFile<'a>, Option<TokSpan>)>,
}

impl Locate for Locator<'_> {
    /// `path:line:col: message` plus the source line underlined, or a
    /// `path: message` line when the span has no position in the file.
    fn describe(&self, span: Span, message: &str, _primary: bool, out: &mut String) -> usize {
        let shown = self.file.shown;
        match self.place(span) {
            Place::InFile { which, line, col, end_col } => {
                let _ = writeln!(out, "{}:{line}:{col}: {message}", self.source(which).shown);
                self.snippet(self.source(which).src, line, col, end_col, out)
            }
            Place::Stdlib => {
                // The path would be wrong here, and the standard library's
                // text is not the user's to fix, so no snippet either.
                let _ = writeln!(out, "in the einlang standard library: {message}");
                0
            }
            Place::Nowhere => {
                let _ = writeln!(out, "{shown}: {message}");
                0
            }
        }
    }
}

impl Locator<'_> {
    fn place(&self, span: Span) -> Place {
        if span.is_detached() {
            return Place::Stdlib;
        }
        // The fallback source map gives `call_site()` its own empty dummy
        // file, and `join` only succeeds for spans of the same file; that
        // is the one public way to recognize a span without a position.
        if TokSpan::call_site().join(span.lo()).is_some() {
            return Place::Nowhere;
        }
        // Without an anchor a file did not parse (or is empty), so a span
        // with a position that no other file claims came from its parser.
        let anchors = std::iter::once(self.anchor).chain(self.others.iter().map(|(_, a)| *a));
        let claimed = anchors.clone().position(|a| a.is_some_and(|a| a.join(span.lo()).is_some()));
        let unparsed: Vec<usize> = anchors.enumerate().filter(|(_, a)| a.is_none()).map(|(k, _)| k).collect();
        let which = match (claimed, unparsed.as_slice()) {
            (Some(k), _) => k,
            (None, [k]) => *k,
            _ => return Place::Stdlib,
        };
        let src = self.source(which).src;
        let start = span.lo().start();
        let end = span.hi().end();
        let line_len = src.lines().nth(start.line.saturating_sub(1)).map_or(0, |l| l.chars().count());
        let end_col = if end.line == start.line { end.column } else { line_len };
        Place::InFile { which, line: start.line, col: start.column + 1, end_col: end_col.max(start.column + 1) + 1 }
    }

    fn source(&self, which: usize) -> &SourceFile<'_> {
        match which {
            0 => self.file,
            k => self.others.get(k - 1).map_or(self.file, |(f, _)| f),
        }
    }

    /// The source line with a `^^^` underline, rustc-style; returns the
    /// gutter width.
    fn snippet(&self, src: &str, line: usize, col: usize, end_col: usize, out: &mut String) -> usize {
        let Some(text) = src.lines().nth(line.saturating_sub(1)) else { return 0 };
        let gutter = line.to_string();
        let pad = " ".repeat(gutter.len());
        // Tabs are copied into the indentation of the underline so that the
        // carets line up with the text whatever the tab width.
        let indent: String = text.chars().take(col - 1).map(|c| if c == '\t' { '\t' } else { ' ' }).collect();
        let carets = "^".repeat(end_col.saturating_sub(col).max(1));
        let _ = writeln!(out, "{pad} |\n{gutter} | {}\n{pad} | {indent}{carets}", text.trim_end());
        gutter.len()
    }
}

#[cfg(test)]
mod tests {
    use expect_test::expect;

    use super::{item_span, Locator, SourceFile};
    use crate::base::span::Span;
    use crate::diag::{render, Diagnostic};

    #[test]
    fn spans_outside_the_file_have_no_position() {
        // A diagnostic as the pipeline could report it: at a name in the
        // file, with a label in another source (the standard library, lexed
        // later) and one without a position.
        let file = SourceFile { shown: "prog.ein", src: "pub fn f(x: f32) -> f32 {\n    x\n}\n" };
        let ast = crate::syntax::parse_str(file.src).expect("the file parses");
        let other = crate::syntax::parse_str("pub fn exp(x: f32) -> f32 { x }").expect("the other source parses");
        let (Some(in_file), Some(elsewhere)) = (item_span(&ast.items[0]), item_span(&other.items[0])) else {
            panic!("items without spans");
        };
        let locator = Locator { file: &file, anchor: Some(in_file.lo()), others: Vec::new() };
        let diag = Diagnostic::error(in_file, "the primary message")
            .label(elsewhere, "a label in another source")
            .label(Span::call_site(), "a label without a position");
        expect![[r#"
            prog.ein:1:1: the primary message
              |
            1 | pub fn f(x: f32) -> f32 {
              | ^^^^^^^^^^^^^^^^^^^^^^^^^
            in the einlang standard library: a label in another source
            prog.ein: a label without a position
        "#]]
        .assert_eq(&(render(&diag, &locator) + "\n"));
    }
}
