//! Source spans.
//!
//! A `Span` is a pair of `proc_macro2::Span`s: the first and the last token of
//! a construct. On stable Rust a proc-macro cannot join two spans into one, but
//! a `compile_error!` whose path carries `lo` and whose braces carry `hi`
//! makes rustc underline everything from `lo` to `hi`; that is how diagnostics
//! point at whole expressions rather than at their first token.

use proc_macro2::Span as TokSpan;

#[derive(Clone, Copy, Debug)]
pub struct Span {
    pub lo: TokSpan,
    pub hi: TokSpan,
}

impl Span {
    /// A span covering exactly one token.
    pub fn token(span: TokSpan) -> Span {
        Span { lo: span, hi: span }
    }

    /// The span of the macro call; used for generated code and as a fallback.
    pub fn call_site() -> Span {
        Span::token(TokSpan::call_site())
    }

    /// From the start of `self` to the end of `other`.
    pub fn to(self, other: Span) -> Span {
        Span { lo: self.lo, hi: other.hi }
    }

    /// `(line, column)` of the start, when locations are known (text sources,
    /// unit tests); `(0, 0)` otherwise.
    pub fn line_col(self) -> (usize, usize) {
        let start = self.lo.start();
        (start.line, start.column)
    }
}

impl From<TokSpan> for Span {
    fn from(span: TokSpan) -> Span {
        Span::token(span)
    }
}
