//! The abstract syntax tree: a plain, short-lived tree that mirrors the tokens.
//!
//! Every node carries the `Span` of the tokens it came from so diagnostics can
//! point at them; the pretty printer ignores spans, so snapshots and equality of
//! printed trees do not depend on where the source came from. Names are still
//! strings here: resolution (`crate::resolve`) turns them into `DefId`s.
//!
//! The AST covers the whole grammar of LANGUAGE.md. Constructs whose meaning
//! arrives in later stages (derivatives, jagged arrays, ...) are represented
//! faithfully; the resolver reports "not supported yet" for them at their
//! span.

pub use crate::base::ops::{BinOp, Lit, RedOp, UnOp};
pub use crate::base::scalar::ScalarKind;
pub use crate::base::span::Span;

/// An identifier with its span.
#[derive(Clone, Debug)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

/// A parsed program: the contents of one `einlang! { ... }` call or one `.ein` file.
#[derive(Clone, Debug)]
pub struct Program {
    pub items: Vec<Item>,
}

/// A top-level or module-level element, in source order.
#[derive(Clone, Debug)]
pub enum Item {
    Fn(FnItem),
    Use(UseItem),
    Mod(ModItem),
    Const(ConstItem),
    /// `@fn name(...) { ... }`: a custom derivative rule.
    DerivRule(FnItem),
    /// A statement at the top level; these become the body of a generated `main`.
    Stmt(Stmt),
}

/// `pub`, or nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Visibility {
    Private,
    Public,
}

/// An attribute `#[name(args...)]` other than a doc comment. Arguments are kept
/// as identifiers and literal tokens only.
#[derive(Clone, Debug)]
pub struct Attr {
    pub name: Ident,
    pub args: Vec<Ident>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct FnItem {
    pub vis: Visibility,
    /// Doc comment lines (`///` becomes `#[doc = "..."]` in tokens).
    pub docs: Vec<String>,
    pub attrs: Vec<Attr>,
    pub name: Ident,
    pub params: Vec<Param>,
    pub ret: Option<Type>,
    /// `None` for a body-less declaration (`fn exp(x);`), only accepted for
    /// `#[intrinsic]` items of the standard library.
    pub body: Option<Block>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct Param {
    pub name: Ident,
    /// `None` for an untyped (generic) parameter.
    pub ty: Option<Type>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct UseItem {
    pub vis: Visibility,
    pub tree: UseTree,
    pub span: Span,
}

/// `a::b::{c, d as e, f::*}`.
#[derive(Clone, Debug)]
pub enum UseTree {
    /// `prefix::rest`
    Path { segment: Ident, rest: Box<UseTree> },
    /// `name` or `name as alias`
    Name { name: Ident, alias: Option<Ident> },
    /// `*`
    Glob(Span),
    /// `{a, b, ...}`
    Group(Vec<UseTree>, Span),
}

#[derive(Clone, Debug)]
pub struct ModItem {
    pub vis: Visibility,
    pub name: Ident,
    pub items: Vec<Item>,
    /// `mod name;`: the items are in the file `name.ein` (or
    /// `name/mod.ein`), which `include_ein!` loads.
    pub external: bool,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct ConstItem {
    pub vis: Visibility,
    pub name: Ident,
    pub ty: Option<Type>,
    pub value: Expr,
    pub span: Span,
}

/// A type as written.
#[derive(Clone, Debug)]
pub enum Type {
    Scalar(ScalarKind, Span),
    Str(Span),
    /// `[T; d1, d2, ...]`; `dims: None` is `[T]` (rank 1, unknown length).
    Tensor {
        elem: Box<Type>,
        dims: Option<Vec<DimExpr>>,
        span: Span,
    },
    /// `[T; *]`: dynamic rank.
    DynRank {
        elem: Box<Type>,
        span: Span,
    },
    /// `jagged[T]` style ragged arrays.
    Jagged {
        elem: Box<Type>,
        span: Span,
    },
    Tuple(Vec<Type>, Span),
    Fn {
        params: Vec<Type>,
        ret: Box<Type>,
        span: Span,
    },
}

impl Type {
    pub fn span(&self) -> Span {
        match self {
            Type::Scalar(_, s) | Type::Str(s) | Type::Tuple(_, s) => *s,
            Type::Tensor { span, .. }
            | Type::DynRank { span, .. }
            | Type::Jagged { span, .. }
            | Type::Fn { span, .. } => *span,
        }
    }
}

/// A dimension in a tensor type: `N`, `3`, `H - K + 1`, `C * H * W`, `?`.
#[derive(Clone, Debug)]
pub enum DimExpr {
    Lit(i64, Span),
    Name(Ident),
    Unknown(Span),
    Binary { op: BinOp, lhs: Box<DimExpr>, rhs: Box<DimExpr>, span: Span },
}

impl DimExpr {
    pub fn span(&self) -> Span {
        match self {
            DimExpr::Lit(_, s) | DimExpr::Unknown(s) => *s,
            DimExpr::Name(i) => i.span,
            DimExpr::Binary { span, .. } => *span,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Block {
    pub stmts: Vec<Stmt>,
    /// The value of the block, if it ends with an expression.
    pub tail: Option<Box<Expr>>,
    pub span: Span,
}

// The AST lives for one compilation and statements are few; boxing `Let`
// would only add indirection.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
pub enum Stmt {
    Let(LetStmt),
    /// An expression followed by `;` (`print(x);`, `assert(c, "m");`).
    Expr(Expr),
    /// An item nested in a block (`fn`, `use`, `const`).
    Item(Box<Item>),
}

#[derive(Clone, Debug)]
pub struct LetStmt {
    pub pat: Pattern,
    /// Index slots of an indexed definition `let C[i, j] = ...`; empty for a plain `let`.
    pub indices: Option<Vec<IndexSlot>>,
    pub ty: Option<Type>,
    pub value: Expr,
    /// A trailing `where ...` clause applying to the whole right-hand side.
    pub where_clause: Vec<WhereItem>,
    pub span: Span,
}

/// A binding pattern on the left of `let` or in a `match` arm / lambda.
#[derive(Clone, Debug)]
pub enum Pattern {
    Name(Ident),
    Wildcard(Span),
    Tuple(Vec<Pattern>, Span),
    /// Literal pattern (match only).
    Lit(Lit, Span),
    /// Inclusive or exclusive range of literals (match only).
    Range {
        lo: Lit,
        hi: Lit,
        inclusive: bool,
        span: Span,
    },
    /// `p | q | ...`: any of the alternatives (match only).
    Or(Vec<Pattern>, Span),
    /// `name @ p`: binds the value `p` matches (match only).
    At(Ident, Box<Pattern>),
}

impl Pattern {
    pub fn span(&self) -> Span {
        match self {
            Pattern::Name(i) => i.span,
            Pattern::At(name, p) => name.span.to(p.span()),
            Pattern::Wildcard(s) | Pattern::Tuple(_, s) | Pattern::Lit(_, s) | Pattern::Or(_, s) => *s,
            Pattern::Range { span, .. } => *span,
        }
    }
}

/// One slot on the left of an indexed definition.
#[derive(Clone, Debug)]
pub enum IndexSlot {
    /// `i`
    Var(Ident),
    /// `i in a..b` / `i in a..=b`
    Ranged { var: Ident, range: RangeExpr },
    /// `0`
    Lit(i64, Span),
    /// `..batch`
    Rest(Ident),
}

impl IndexSlot {
    pub fn span(&self) -> Span {
        match self {
            IndexSlot::Var(i) | IndexSlot::Rest(i) => i.span,
            IndexSlot::Ranged { var, range } => var.span.to(range.span),
            IndexSlot::Lit(_, s) => *s,
        }
    }
}

/// `a..b` or `a..=b`.
#[derive(Clone, Debug)]
pub struct RangeExpr {
    pub start: Box<Expr>,
    pub end: Box<Expr>,
    pub inclusive: bool,
    pub span: Span,
}

/// An index variable of a reduction, with an optional range: `k`, `k in
/// 0..K`, or a named rest index `..r` (every axis it spans).
#[derive(Clone, Debug)]
pub struct RedVar {
    pub var: Ident,
    pub range: Option<RangeExpr>,
    pub rest: bool,
}

/// One entry of a `where` clause.
#[derive(Clone, Debug)]
pub enum WhereItem {
    /// `name = expr`: a local binding or an index equation.
    Bind { name: Ident, value: Expr, span: Span },
    /// A boolean guard.
    Guard(Expr),
    /// `i in a..b`, which is an error (ranges belong in brackets) but parses so
    /// that the error can point at it.
    Range { var: Ident, range: RangeExpr, span: Span },
}

#[derive(Clone, Debug)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

/// One argument of a subscript `x[...]`.
#[derive(Clone, Debug)]
pub enum IndexArg {
    Expr(Expr),
    /// `..batch`
    Rest(Ident),
}

/// A piece of an interpolated string.
#[derive(Clone, Debug)]
pub enum StrPart {
    Text(String),
    /// `{expr}` or `{expr:.3}`.
    Interp {
        expr: Expr,
        precision: Option<u32>,
    },
}

#[derive(Clone, Debug)]
pub struct MatchArm {
    pub pat: Pattern,
    pub guard: Option<Expr>,
    pub body: Expr,
    pub span: Span,
}

/// A generator or filter of a comprehension.
#[derive(Clone, Debug)]
pub enum CompClause {
    /// `i in 0..n` (a range) or `x in xs` (any iterable expression).
    Gen {
        var: Ident,
        iter: Expr,
    },
    Filter(Expr),
}

#[derive(Clone, Debug)]
pub enum ExprKind {
    Lit(Lit),
    /// An interpolated string literal (`"x = {x:.3}"`).
    Interp(Vec<StrPart>),
    /// `a`, `a::b::c`, `crate::f`.
    Path(Vec<Ident>),
    Unary {
        op: UnOp,
        expr: Box<Expr>,
    },
    Binary {
        op: BinOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    /// `x as T`
    Cast {
        expr: Box<Expr>,
        ty: Type,
    },
    /// `f(a, b)`; the callee is usually a path.
    Call {
        callee: Box<Expr>,
        args: Vec<Expr>,
    },
    /// `x[i, j + 1, ..rest]`
    Index {
        base: Box<Expr>,
        args: Vec<IndexArg>,
    },
    /// `t.0`
    Field {
        base: Box<Expr>,
        index: u32,
        index_span: Span,
    },
    /// `sum[k in 0..K](body where ...)`, `argmax[i](x[i])`.
    Reduce {
        op: RedOp,
        op_span: Span,
        vars: Vec<RedVar>,
        body: Box<Expr>,
        where_clause: Vec<WhereItem>,
    },
    If {
        cond: Box<Expr>,
        then: Block,
        els: Option<Box<Expr>>,
    },
    Match {
        scrutinee: Box<Expr>,
        arms: Vec<MatchArm>,
    },
    Block(Block),
    /// `[a, b, c]`
    Array(Vec<Expr>),
    /// `jagged[[1], [2, 3]]`
    Jagged(Vec<Expr>),
    /// `[e | i in 0..n, cond]`; `jagged[e | ...]` (`rows`) collects vectors
    /// of any lengths as the rows of a jagged array.
    Comprehension {
        body: Box<Expr>,
        clauses: Vec<CompClause>,
        rows: bool,
    },
    /// `(a, b)`; `(a)` is just `a`.
    Tuple(Vec<Expr>),
    /// `|x, y| body`
    Lambda {
        params: Vec<Param>,
        body: Box<Expr>,
    },
    /// `@y / @x`
    Deriv {
        target: Ident,
        wrt: Ident,
    },
    /// `@y`
    Differential(Ident),
    /// `a..b` used as a value (an iterable in comprehensions).
    Range(RangeExpr),
}
