//! Diagnostics: collected by every phase, rendered together at the end.
//!
//! A `Diagnostic` has a primary span and message, optional secondary labels,
//! and `note:` / `help:` lines. Rendering turns the primary label into one
//! `compile_error!` at its span (with the notes appended as `= note:` lines)
//! and every secondary label into another `compile_error!` at its own span,
//! so rustc shows each piece at the tokens it is about.

use crate::base::span::Span;
use proc_macro2::{Delimiter, Group, Ident, Literal, Punct, Spacing, TokenStream, TokenTree};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Error,
    /// An internal compiler error: a bug in einlang, not in the user's code.
    Bug,
}

#[derive(Clone, Debug)]
pub struct Label {
    pub span: Span,
    pub message: String,
}

#[derive(Clone, Debug)]
pub struct Diagnostic {
    pub level: Level,
    pub message: String,
    pub span: Span,
    pub labels: Vec<Label>,
    pub notes: Vec<String>,
    pub helps: Vec<String>,
}

impl Diagnostic {
    pub fn error(span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            level: Level::Error,
            message: message.into(),
            span,
            labels: Vec::new(),
            notes: Vec::new(),
            helps: Vec::new(),
        }
    }

    /// An internal compiler error at `span`.
    pub fn bug(span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            level: Level::Bug,
            message: format!("internal compiler error in einlang: {}", message.into()),
            span,
            labels: Vec::new(),
            notes: vec!["this is a bug in einlang, not in your code; please report it".to_string()],
            helps: Vec::new(),
        }
    }

    /// "this function takes 2 arguments but 1 argument was supplied".
    pub fn arity(span: Span, params: usize, args: usize) -> Diagnostic {
        let plural = |n: usize| if n == 1 { "argument" } else { "arguments" };
        let verb = if args == 1 { "was" } else { "were" };
        Diagnostic::error(
            span,
            format!("this function takes {params} {} but {args} {} {verb} supplied", plural(params), plural(args)),
        )
    }

    pub fn label(mut self, span: Span, message: impl Into<String>) -> Diagnostic {
        self.labels.push(Label { span, message: message.into() });
        self
    }

    pub fn note(mut self, note: impl Into<String>) -> Diagnostic {
        self.notes.push(note.into());
        self
    }

    pub fn note_all(mut self, notes: Vec<String>) -> Diagnostic {
        self.notes.extend(notes);
        self
    }

    pub fn help_all(mut self, helps: Vec<String>) -> Diagnostic {
        self.helps.extend(helps);
        self
    }

    pub fn help(mut self, help: impl Into<String>) -> Diagnostic {
        self.helps.push(help.into());
        self
    }

    /// The full text of the primary message with its notes and helps, as
    /// shown in the primary `compile_error!`.
    pub fn primary_text(&self) -> String {
        let mut text = self.message.clone();
        for note in &self.notes {
            text.push_str("\n = note: ");
            text.push_str(note);
        }
        for help in &self.helps {
            text.push_str("\n = help: ");
            text.push_str(help);
        }
        text
    }

    /// Renders as `compile_error!` invocations.
    pub fn to_compile_errors(&self) -> TokenStream {
        let mut out = compile_error_at(self.span, &self.primary_text());
        for label in &self.labels {
            out.extend(compile_error_at(label.span, &label.message));
        }
        out
    }

    /// Plain-text rendering for unit tests and `.ein` tooling: line and
    /// column only (`render` with `LineCol`).
    pub fn render_text(&self) -> String {
        render(self, &LineCol)
    }
}

/// Where spans are, as the reader of a rendered diagnostic sees them. The
/// one renderer (`render`) asks it for the line that introduces each
/// message; `LineCol` gives line and column, `source::include` gives the
/// file, position and source line of `.ein` files.
pub trait Locate {
    /// Writes the line(s) introducing `message` at `span` (`primary`: the
    /// diagnostic's own message, otherwise a label's) and returns the width
    /// of the gutter it drew, so that `= note:` lines line up with it.
    fn describe(&self, span: Span, message: &str, primary: bool, out: &mut String) -> usize;
}

/// Renders one diagnostic as text: the primary message where `locate` puts
/// it, its notes and helps, then every label with its own position.
pub fn render(diag: &Diagnostic, locate: &dyn Locate) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let pad = " ".repeat(locate.describe(diag.span, &diag.message, true, &mut out));
    for note in &diag.notes {
        let _ = writeln!(out, "{pad} = note: {note}");
    }
    for help in &diag.helps {
        let _ = writeln!(out, "{pad} = help: {help}");
    }
    for label in &diag.labels {
        locate.describe(label.span, &label.message, false, &mut out);
    }
    out.truncate(out.trim_end().len());
    out
}

/// Positions as `@line:col` (when the span has one), for text sources and
/// unit tests.
pub struct LineCol;

impl Locate for LineCol {
    fn describe(&self, span: Span, message: &str, primary: bool, out: &mut String) -> usize {
        use std::fmt::Write as _;
        let (line, col) = span.line_col();
        if !primary {
            let _ = writeln!(out, "  label @{line}:{col}: {message}");
        } else if line > 0 {
            let _ = writeln!(out, "error: {message} @{line}:{col}");
        } else {
            let _ = writeln!(out, "error: {message}");
        }
        1
    }
}

/// `::core::compile_error! { "message" }` with the path at `span.lo()` and the
/// braces at `span.hi()`, so rustc underlines the whole range.
fn compile_error_at(span: Span, message: &str) -> TokenStream {
    let lo = span.lo();
    let mut colon1 = Punct::new(':', Spacing::Joint);
    colon1.set_span(lo);
    let mut colon2 = Punct::new(':', Spacing::Alone);
    colon2.set_span(lo);
    let mut colon3 = Punct::new(':', Spacing::Joint);
    colon3.set_span(lo);
    let mut colon4 = Punct::new(':', Spacing::Alone);
    colon4.set_span(lo);
    let mut bang = Punct::new('!', Spacing::Alone);
    bang.set_span(lo);
    let mut lit = Literal::string(message);
    lit.set_span(span.hi());
    let mut group = Group::new(Delimiter::Brace, TokenStream::from(TokenTree::Literal(lit)));
    group.set_span(span.hi());
    let tokens: Vec<TokenTree> = vec![
        colon1.into(),
        colon2.into(),
        Ident::new("core", lo).into(),
        colon3.into(),
        colon4.into(),
        Ident::new("compile_error", lo).into(),
        bang.into(),
        group.into(),
    ];
    tokens.into_iter().collect()
}

/// The diagnostics of one compilation, in the order they were reported.
#[derive(Default, Debug)]
pub struct Diagnostics {
    list: Vec<Diagnostic>,
}

impl Diagnostics {
    pub fn new() -> Diagnostics {
        Diagnostics::default()
    }

    pub fn push(&mut self, diag: Diagnostic) {
        self.list.push(diag);
    }

    pub fn extend(&mut self, diags: impl IntoIterator<Item = Diagnostic>) {
        self.list.extend(diags);
    }

    pub fn has_errors(&self) -> bool {
        !self.list.is_empty()
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Diagnostic> {
        self.list.iter()
    }

    /// Removes and returns the diagnostics reported after the first `at`.
    pub fn split_off(&mut self, at: usize) -> Vec<Diagnostic> {
        if at >= self.list.len() {
            return Vec::new();
        }
        self.list.split_off(at)
    }

    pub fn into_vec(self) -> Vec<Diagnostic> {
        self.list
    }

    pub fn to_compile_errors(&self) -> TokenStream {
        let mut out = TokenStream::new();
        for d in &self.list {
            out.extend(d.to_compile_errors());
        }
        out
    }
}
