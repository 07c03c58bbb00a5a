//! Source spans.
//!
//! A `Span` is a pair of `proc_macro2::Span`s: the first and the last token of
//! a construct. On stable Rust a proc-macro cannot join two spans into one, but
//! a `compile_error!` whose path carries `lo` and whose braces carry `hi`
//! makes rustc underline everything from `lo` to `hi`; that is how diagnostics
//! point at whole expressions rather than at their first token.
//!
//! A span may also be *detached*: it points at no token. The standard library
//! is parsed once per compiler process (`crate::source::stdlib`) and its syntax
//! tree outlives the macro call that parsed it, while a compiler token span is
//! valid only inside the call that made it; so the library is parsed inside
//! `detached(...)`, where every span made is detached. A detached span reads
//! as the current macro call (`lo()`, `hi()`), which is where diagnostics
//! about library code have always pointed.

use std::cell::Cell;

use proc_macro2::Span as TokSpan;

#[derive(Clone, Copy, Debug)]
pub struct Span {
    /// The first and last token; None for a detached span.
    tokens: Option<(TokSpan, TokSpan)>,
}

thread_local! {
    /// Whether spans made now are detached (see `detached`).
    static DETACHED: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with every span it makes detached from the tokens they are made
/// from, so that what it builds may be kept after the current macro call.
/// Restores the previous mode even when `f` panics.
pub fn detached<T>(f: impl FnOnce() -> T) -> T {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            DETACHED.with(|d| d.set(self.0));
        }
    }
    let _restore = Restore(DETACHED.with(|d| d.replace(true)));
    f()
}

impl Span {
    /// The span from token `lo` to token `hi`.
    pub fn new(lo: TokSpan, hi: TokSpan) -> Span {
        if DETACHED.with(Cell::get) {
            Span::DETACHED
        } else {
            Span { tokens: Some((lo, hi)) }
        }
    }

    /// A span that points at no token (see the module docs).
    pub const DETACHED: Span = Span { tokens: None };

    /// A span covering exactly one token.
    pub fn token(span: TokSpan) -> Span {
        Span::new(span, span)
    }

    /// The span of the macro call; used for generated code and as a fallback.
    pub fn call_site() -> Span {
        Span::token(TokSpan::call_site())
    }

    /// Whether the span points at no token (see the module docs).
    pub fn is_detached(self) -> bool {
        self.tokens.is_none()
    }

    /// The first token (the macro call for a detached span).
    pub fn lo(self) -> TokSpan {
        self.tokens.map_or_else(TokSpan::call_site, |(lo, _)| lo)
    }

    /// The last token (the macro call for a detached span).
    pub fn hi(self) -> TokSpan {
        self.tokens.map_or_else(TokSpan::call_site, |(_, hi)| hi)
    }

    /// From the start of `self` to the end of `other`; a detached end takes
    /// the other end's token.
    pub fn to(self, other: Span) -> Span {
        match (self.tokens, other.tokens) {
            (Some((lo, _)), Some((_, hi))) => Span { tokens: Some((lo, hi)) },
            (Some(_), None) => self,
            (None, _) => other,
        }
    }

    /// `(line, column)` of the start, when locations are known (text sources,
    /// unit tests); `(0, 0)` otherwise.
    pub fn line_col(self) -> (usize, usize) {
        match self.tokens {
            Some((lo, _)) => {
                let start = lo.start();
                (start.line, start.column)
            }
            None => (0, 0),
        }
    }
}

impl From<TokSpan> for Span {
    fn from(span: TokSpan) -> Span {
        Span::token(span)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_made_while_detached_point_at_no_token() {
        let tok = TokSpan::call_site();
        assert!(Span::token(tok).tokens.is_some());
        let inner = detached(|| (Span::token(tok), Span::new(tok, tok)));
        assert!(inner.0.tokens.is_none() && inner.1.tokens.is_none());
        assert_eq!(inner.0.line_col(), (0, 0));
        // The mode ends with the call, also when it panics.
        assert!(Span::token(tok).tokens.is_some());
        let _ = std::panic::catch_unwind(|| detached(|| panic!("inside")));
        assert!(Span::token(tok).tokens.is_some());
    }

    #[test]
    fn joining_keeps_the_attached_end() {
        let tok = TokSpan::call_site();
        let attached = Span::token(tok);
        assert!(attached.to(Span::DETACHED).tokens.is_some());
        assert!(Span::DETACHED.to(attached).tokens.is_some());
        assert!(Span::DETACHED.to(Span::DETACHED).tokens.is_none());
    }
}
