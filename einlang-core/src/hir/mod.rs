//! The resolved IR (HIR).
//!
//! Produced by `crate::resolve` from the AST. Every name is a `DefId`: after
//! resolution no pass compares names, and the same spelling in two statements
//! (two index variables `i`, say) gives two different ids. Expressions live in
//! one arena and are addressed by `ExprId`; operands are allocated before the
//! expressions that use them. Spans are kept in side tables (`Hir::expr_spans`,
//! `Def::span`), never inside nodes, so printed HIR does not depend on them.
//!
//! Meaning of the nodes (typing rules are in `crate::analysis`):
//! - `Stmt::Let` binds a value to a fresh local.
//! - `Stmt::Indexed` defines a tensor pointwise over its slots' index
//!   variables; `wheres` are evaluated in order for every point, a false
//!   guard makes the point zero.
//! - `Stmt::Recurrence` groups the clauses of a tensor that reads earlier
//!   points of itself; `crate::analysis::recur` decides their order.
//! - `ExprKind::Reduce` folds `body` over the product of its variables'
//!   ranges, skipping points whose guards are false.
//! - `ExprKind::Index` with fewer arguments than the base's rank selects a
//!   sub-tensor.

pub mod validate;

use crate::base::arena::{Arena, Idx};
use crate::base::ops::{BinOp, Lit, RedOp, UnOp};
use crate::base::scalar::ScalarKind;
use crate::base::span::Span;

pub type DefId = Idx<Def>;
pub type ExprId = Idx<Expr>;
pub type FnId = Idx<Function>;

/// Something with a name: a function, parameter, local, index variable,
/// dimension symbol, where-binding or standard-library intrinsic.
#[derive(Clone, Debug)]
pub struct Def {
    pub name: String,
    pub kind: DefKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DefKind {
    Fn(FnId),
    Intrinsic(crate::base::intrinsic::Intrinsic),
    /// A builtin declared by the standard library (`std::io::load_npy`).
    Builtin(Builtin),
    /// `std::ml::einsum`: each call becomes a call of a function written
    /// from its equation (see `resolve::einsum`).
    Einsum,
    Param,
    Local,
    /// An index variable of an indexed definition or a reduction.
    Index,
    /// A `where` binding (a local value or an index equation).
    WhereBind,
    /// A dimension symbol introduced by a parameter type (`N` in `[f32; N]`).
    Dim,
    /// A module of the standard library or an inline `mod`.
    Module,
    /// A `const` item; every use is replaced by its value.
    Const,
    /// A named rest index `..name`: stands for as many index variables as
    /// the accesses it appears in leave over. Only in generic functions;
    /// instantiation replaces it by plain index variables.
    Rest,
}

/// The whole resolved program.
#[derive(Clone, Debug, Default)]
pub struct Hir {
    pub defs: Arena<Def>,
    pub exprs: Arena<Expr>,
    pub expr_spans: Vec<Span>,
    pub fns: Arena<Function>,
    /// The recurrences that read each other, fused into one (`a__b`; see
    /// `resolve::mutual`), by fused name: the members, for diagnostics.
    pub fused_groups: std::collections::HashMap<String, Vec<String>>,
    /// Custom derivative rules (`@fn name(params) { body }`), by the
    /// function they differentiate.
    pub rules: std::collections::HashMap<FnId, DerivRule>,
    /// Derivative requests answered at one point of the source only (a
    /// column of a Jacobian read with the source's indices fixed, made by
    /// `transform::autodiff`): the request and the point's indices.
    pub deriv_points: std::collections::HashMap<ExprId, Vec<ExprId>>,
}

/// `@fn f(params) { body }`: the differential of `f` in terms of its
/// parameters (`params`, bound in `body`) and their differentials
/// (`ExprKind::Differential` of a parameter). The body is linear in the
/// differentials.
#[derive(Clone, Debug)]
pub struct DerivRule {
    pub params: Vec<DefId>,
    pub body: Block,
    pub span: Span,
}

impl Function {
    /// A generic function has an untyped parameter; it is never analyzed or
    /// emitted itself, only its instances are.
    pub fn is_generic(&self) -> bool {
        self.params.iter().any(|p| p.ty.is_none())
    }
}

impl Hir {
    /// `shape(x)[d]` with a literal `d`, as the tensor expression `x` and
    /// the axis `d`.
    pub fn shape_index(&self, base: ExprId, args: &[ExprId]) -> Option<(ExprId, usize)> {
        let ExprKind::Builtin(Builtin::Shape, sargs) = &self.exprs[base].kind else { return None };
        let [arg] = args else { return None };
        let ExprKind::Lit(Lit::Int(d, _)) = self.exprs[*arg].kind else { return None };
        Some((*sargs.first()?, usize::try_from(d).ok()?))
    }

    pub fn alloc_def(&mut self, name: impl Into<String>, kind: DefKind, span: Span) -> DefId {
        self.defs.alloc(Def { name: name.into(), kind, span })
    }

    pub fn alloc_expr(&mut self, kind: ExprKind, span: Span) -> ExprId {
        self.expr_spans.push(span);
        self.exprs.alloc(Expr { kind })
    }

    /// Every expression reachable from `roots` through `operands`, each
    /// once, a parent before its operands and operands in source order.
    pub fn reachable(&self, roots: impl IntoIterator<Item = ExprId>) -> Vec<ExprId> {
        let mut stack: Vec<ExprId> = roots.into_iter().collect();
        stack.reverse();
        let mut seen = std::collections::HashSet::new();
        let (mut out, mut ops) = (Vec::new(), Vec::new());
        while let Some(e) = stack.pop() {
            if !seen.insert(e) {
                continue;
            }
            out.push(e);
            ops.clear();
            operands(&self.exprs[e].kind, &mut ops);
            stack.extend(ops.iter().rev());
        }
        out
    }

    /// Whether `f` is left out of analysis and code generation (see
    /// `Skip`).
    pub fn skipped(&self, f: FnId) -> bool {
        self.fns[f].skip.is_some()
    }

    /// Marks the standard-library functions that the program's own
    /// functions cannot reach through calls or function values.
    pub fn mark_unused_stdlib(&mut self) {
        let mut live: std::collections::HashSet<FnId> =
            self.fns.iter().filter(|(_, f)| !f.stdlib).map(|(id, _)| id).collect();
        let mut work: Vec<FnId> = live.iter().copied().collect();
        let mut roots = Vec::new();
        while let Some(f) = work.pop() {
            roots.clear();
            self.fns[f].body.stmts.iter().for_each(|s| stmt_operands(s, &mut roots));
            roots.extend(self.fns[f].body.tail);
            for e in self.reachable(roots.iter().copied()) {
                let callee = match &self.exprs[e].kind {
                    ExprKind::Call { callee: Callee::Fn(g), .. } => *g,
                    ExprKind::Def(d) => match self.defs[*d].kind {
                        DefKind::Fn(g) => g,
                        _ => continue,
                    },
                    _ => continue,
                };
                if live.insert(callee) {
                    work.push(callee);
                }
            }
        }
        for (id, f) in self.fns.iter_mut() {
            if !live.contains(&id) && f.skip.is_none() {
                f.skip = Some(Skip::Unreached);
            }
        }
    }

    pub fn span(&self, e: ExprId) -> Span {
        self.expr_spans[e.index()]
    }

    pub fn name(&self, d: DefId) -> &str {
        &self.defs[d].name
    }
}

#[derive(Clone, Debug)]
pub struct Function {
    pub def: DefId,
    pub public: bool,
    pub docs: Vec<String>,
    pub params: Vec<Param>,
    pub ret: Option<TyAnn>,
    pub body: Block,
    /// True for the `main` generated from top-level statements.
    pub is_main: bool,
    /// True for functions of the standard library (and their instances).
    pub stdlib: bool,
    /// The inline modules the function is defined in, outermost first
    /// (empty at the top level).
    pub module_path: Vec<String>,
    pub span: Span,
    /// For a copy of another function (an instance of a generic function,
    /// or a specialization for function values): that function and the
    /// call that asked for the copy.
    pub origin: Option<(FnId, Span)>,
    /// Why the function is neither analyzed nor emitted, if it is not.
    pub skip: Option<Skip>,
    /// For a `#[device(cuda)]` function: the attribute's span.
    pub device: Option<Span>,
    /// For a `#[shard(B)]` function: the symbol's name and the attribute's
    /// span.
    pub shard: Option<(String, Span)>,
}

/// Why a function is left out of analysis and code generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Skip {
    /// It returns function values: resolution inlines every call of it.
    Inlined,
    /// A typed library function that no function of the program reaches
    /// through calls or function values, so a macro call pays only for the
    /// library it uses.
    Unreached,
    /// An instance no call reaches any more (made before a literal's type
    /// was decided), or a scratch copy.
    Dropped,
}

#[derive(Clone, Debug)]
pub struct Param {
    pub def: DefId,
    pub ty: Option<TyAnn>,
    pub span: Span,
}

/// A type annotation with its dimension symbols resolved.
#[derive(Clone, Debug)]
pub enum TyAnn {
    Scalar(ScalarKind),
    Str,
    Tensor {
        elem: ScalarKind,
        dims: Vec<DimAnn>,
        span: Span,
    },
    /// `[T; *]`: a tensor whose rank is known only at run time.
    Dyn {
        elem: ScalarKind,
        span: Span,
    },
    /// `jagged[T]`: rows of `T` of different lengths.
    Jagged {
        elem: ScalarKind,
        span: Span,
    },
    /// `[str; n]` or `[str]`: a vector of strings.
    Strs {
        dim: DimAnn,
        span: Span,
    },
    Tuple(Vec<TyAnn>),
}

#[derive(Clone, Debug)]
pub enum DimAnn {
    Lit(i64, Span),
    Sym(DefId, Span),
    /// `?`
    Unknown(Span),
    Bin(BinOp, Box<DimAnn>, Box<DimAnn>, Span),
}

impl DimAnn {
    pub fn span(&self) -> Span {
        match self {
            DimAnn::Lit(_, s) | DimAnn::Sym(_, s) | DimAnn::Unknown(s) | DimAnn::Bin(_, _, _, s) => *s,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Block {
    pub stmts: Vec<Stmt>,
    pub tail: Option<ExprId>,
}

#[derive(Clone, Debug)]
pub enum Stmt {
    Let {
        def: DefId,
        ty: Option<TyAnn>,
        value: ExprId,
        span: Span,
    },
    Indexed(IndexedDef),
    /// A tensor defined by several clauses that may read earlier points of
    /// itself (a recurrence). Placed where its last clause was written.
    Recurrence(Recurrence),
    Expr(ExprId),
}

/// The clauses of one recurrent binding, in source order. Every clause's
/// `def` is the binding's `def`; reads of it inside clause bodies are reads
/// of the tensor being defined.
#[derive(Clone, Debug)]
pub struct Recurrence {
    pub def: DefId,
    pub clauses: Vec<IndexedDef>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct IndexedDef {
    pub def: DefId,
    pub slots: Vec<Slot>,
    pub wheres: Vec<Where>,
    pub body: ExprId,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub enum Slot {
    Var {
        def: DefId,
        range: Option<Range>,
    },
    Lit(i64, Span),
    /// `..name` (generic functions only; see `DefKind::Rest`).
    Rest(DefId, Span),
}

/// `start..end` (end exclusive; `a..=b` is lowered to `a..b + 1`).
#[derive(Clone, Debug)]
pub struct Range {
    pub start: ExprId,
    pub end: ExprId,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub enum Where {
    Bind { def: DefId, value: ExprId },
    Guard(ExprId),
}

#[derive(Clone, Debug)]
pub struct RedVar {
    pub def: DefId,
    pub range: Option<Range>,
}

#[derive(Clone, Debug)]
pub struct Expr {
    pub kind: ExprKind,
}

/// A generator or filter of a comprehension.
#[derive(Clone, Debug)]
pub enum CompClause {
    /// `i in a..b`
    Range { def: DefId, range: Range },
    /// `x in xs`: the elements of the tensor `xs` along its first axis.
    Each { def: DefId, over: ExprId },
    /// A condition; the combinations for which it is false are skipped.
    Filter(ExprId),
}

/// One arm of a `match`.
#[derive(Clone, Debug)]
pub struct Arm {
    pub pat: Pat,
    pub guard: Option<ExprId>,
    pub body: ExprId,
    pub span: Span,
}

/// A pattern; `Bind` introduces a local bound to the matched part.
#[derive(Clone, Debug)]
pub enum Pat {
    Wild,
    Bind(DefId),
    Lit(Lit, Span),
    Range {
        lo: Lit,
        hi: Lit,
        inclusive: bool,
        span: Span,
    },
    Tuple(Vec<Pat>),
    /// Any of the alternatives; they bind nothing.
    Or(Vec<Pat>),
    /// `name @ p`: what `p` matches, bound to `name`.
    At(DefId, Box<Pat>),
}

/// A piece of an interpolated string.
#[derive(Clone, Debug)]
pub enum InterpPart {
    Text(String),
    /// `{expr}` or `{expr:.precision}`.
    Value(ExprId, Option<u32>),
}

/// Builtins of the language (not library functions).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Builtin {
    /// Prints its arguments on one line; its value is `()`.
    Print,
    /// `assert(cond, message)`: an `Err` when `cond` is false; `()`.
    Assert,
    /// The length of a tensor's first axis, `i64`.
    Len,
    /// The extents of a tensor, `[i64; rank]`.
    Shape,
    /// `std::io::load_npy(path)`, only under a tensor cast that gives its type.
    LoadNpy,
    /// `std::io::save_npy(path, x)`; `()`.
    SaveNpy,
    /// `typeof(x)`: the name of `x`'s type as a string, known at compile
    /// time (`"f32"`; `"rectangular"` for tensors, as the seed names them).
    TypeOf,
    /// `std::ml::{reshape, squeeze, unsqueeze}(x, v)`: a shape operation
    /// whose axes or extents come at run time (`v`, an integer vector);
    /// the result has dynamic rank.
    Reshape(DynShapeOp),
    /// A file-system or path function of `std::io`.
    Fs(FsOp),
}

pub use crate::base::intrinsic::{DynShapeOp, FsOp};

impl Builtin {
    /// The builtin a library declaration `#[builtin(name)]` stands for.
    pub fn declared(name: &str) -> Option<Builtin> {
        match name {
            "load_npy" => Some(Builtin::LoadNpy),
            "save_npy" => Some(Builtin::SaveNpy),
            "shape" => Some(Builtin::Shape),
            _ => DynShapeOp::ALL
                .into_iter()
                .find(|op| op.name() == name)
                .map(Builtin::Reshape)
                .or_else(|| FsOp::ALL.into_iter().find(|op| op.name() == name).map(Builtin::Fs)),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Builtin::Print => "print",
            Builtin::Assert => "assert",
            Builtin::Len => "len",
            Builtin::Shape => "shape",
            Builtin::LoadNpy => "load_npy",
            Builtin::SaveNpy => "save_npy",
            Builtin::TypeOf => "typeof",
            Builtin::Reshape(op) => op.name(),
            Builtin::Fs(op) => op.name(),
        }
    }
}

#[derive(Clone, Debug)]
pub enum Callee {
    Fn(FnId),
    Intrinsic(crate::base::intrinsic::Intrinsic),
}

#[derive(Clone, Debug)]
pub enum ExprKind {
    Lit(Lit),
    /// A parameter, local, index variable, where-binding or dimension symbol.
    Def(DefId),
    Unary(UnOp, ExprId),
    Binary(BinOp, ExprId, ExprId),
    Cast(ExprId, ScalarKind),
    Call {
        callee: Callee,
        callee_span: Span,
        args: Vec<ExprId>,
    },
    Index {
        base: ExprId,
        args: Vec<ExprId>,
    },
    Field(ExprId, u32),
    Reduce {
        op: RedOp,
        vars: Vec<RedVar>,
        wheres: Vec<Where>,
        body: ExprId,
    },
    If {
        cond: ExprId,
        then: ExprId,
        els: Option<ExprId>,
    },
    Block(Block),
    Array(Vec<ExprId>),
    /// `jagged[row, ...]`: rows (vectors) of different lengths.
    Jagged(Vec<ExprId>),
    Tuple(Vec<ExprId>),
    /// An interpolated string: text pieces and formatted values.
    Interp(Vec<InterpPart>),
    /// `print(...)`, `assert(cond, msg)`, `len(x)`, `shape(x)`.
    Builtin(Builtin, Vec<ExprId>),
    /// `[body | clauses]`: a rank-1 tensor of `body` for every combination
    /// of the generators that passes the filters, in order.
    Comprehension {
        body: ExprId,
        clauses: Vec<CompClause>,
        /// `jagged[body | clauses]`: the vectors are the rows of a jagged
        /// array.
        rows: bool,
    },
    /// A named rest index used in a subscript (`x[..batch, i]`); expanded
    /// away by instantiation.
    Rest(DefId),
    /// `x as [T; d1, ...]`: a value of unknown shape (`load_npy`) given its
    /// element type and shape, checked at run time.
    TensorCast(ExprId, TyAnn),
    /// `match scrutinee { pat [if guard] => body, ... }`: the first arm whose
    /// pattern matches and whose guard holds.
    Match {
        scrutinee: ExprId,
        arms: Vec<Arm>,
    },
    /// `@y / @x`: the derivative of the binding `target` with respect to the
    /// binding or parameter `wrt`, of shape `shape(target) ++ shape(wrt)`.
    /// Analysis types it; `transform::autodiff` replaces every one by code
    /// that computes it, so lowering never sees one.
    Deriv {
        target: DefId,
        wrt: DefId,
    },
    /// `@p` in the body of a derivative rule: the differential of its
    /// parameter `p`. Never in a function body.
    Differential(DefId),
    /// A placeholder left where resolution failed; analyses skip it so one
    /// error does not cascade.
    Error,
}

/// The operand visitors, written once for shared and for mutable access:
/// every expression a node (statement, indexed definition) uses directly,
/// in source order: operands, range bounds, where entries, and the
/// expressions of nested statements.
macro_rules! operand_visitors {
    ($expr:ident, $stmt:ident, $indexed:ident, $wheres:ident, $range:ident $(, $m:ident)?) => {
        fn $wheres(wheres: &$($m)? [Where], f: &mut impl FnMut(&$($m)? ExprId)) {
            for w in wheres {
                match w {
                    Where::Bind { value, .. } => f(value),
                    Where::Guard(g) => f(g),
                }
            }
        }

        fn $range(r: &$($m)? Range, f: &mut impl FnMut(&$($m)? ExprId)) {
            f(&$($m)? r.start);
            f(&$($m)? r.end);
        }

        /// Calls `f` on every expression `kind` uses directly.
        pub fn $expr(kind: &$($m)? ExprKind, f: &mut impl FnMut(&$($m)? ExprId)) {
            match kind {
                ExprKind::Lit(_)
                | ExprKind::Error
                | ExprKind::Def(_)
                | ExprKind::Rest(_)
                | ExprKind::Deriv { .. }
                | ExprKind::Differential(_) => {}
                ExprKind::Unary(_, a) | ExprKind::Cast(a, _) | ExprKind::Field(a, _) | ExprKind::TensorCast(a, _) => f(a),
                ExprKind::Binary(_, a, b) => {
                    f(a);
                    f(b);
                }
                ExprKind::Call { args, .. }
                | ExprKind::Array(args)
                | ExprKind::Jagged(args)
                | ExprKind::Tuple(args)
                | ExprKind::Builtin(_, args) => {
                    for a in args {
                        f(a);
                    }
                }
                ExprKind::Index { base, args } => {
                    f(base);
                    for a in args {
                        f(a);
                    }
                }
                ExprKind::Reduce { vars, wheres, body, .. } => {
                    for v in vars {
                        if let Some(r) = &$($m)? v.range {
                            $range(r, f);
                        }
                    }
                    $wheres(wheres, f);
                    f(body);
                }
                ExprKind::If { cond, then, els } => {
                    f(cond);
                    f(then);
                    if let Some(e) = els {
                        f(e);
                    }
                }
                ExprKind::Block(b) => {
                    for s in &$($m)? b.stmts {
                        $stmt(s, f);
                    }
                    if let Some(t) = &$($m)? b.tail {
                        f(t);
                    }
                }
                ExprKind::Match { scrutinee, arms } => {
                    f(scrutinee);
                    for a in arms {
                        if let Some(g) = &$($m)? a.guard {
                            f(g);
                        }
                        f(&$($m)? a.body);
                    }
                }
                ExprKind::Interp(parts) => {
                    for p in parts {
                        if let InterpPart::Value(e, _) = p {
                            f(e);
                        }
                    }
                }
                ExprKind::Comprehension { body, clauses, .. } => {
                    for c in clauses {
                        match c {
                            CompClause::Range { range, .. } => $range(range, f),
                            CompClause::Each { over, .. } => f(over),
                            CompClause::Filter(e) => f(e),
                        }
                    }
                    f(body);
                }
            }
        }

        /// Calls `f` on every expression a statement uses directly: its
        /// value, or its clauses' range bounds, where entries and bodies.
        pub fn $stmt(s: &$($m)? Stmt, f: &mut impl FnMut(&$($m)? ExprId)) {
            match s {
                Stmt::Let { value, .. } | Stmt::Expr(value) => f(value),
                Stmt::Indexed(d) => $indexed(d, f),
                Stmt::Recurrence(r) => {
                    for d in &$($m)? r.clauses {
                        $indexed(d, f);
                    }
                }
            }
        }

        /// Calls `f` on the range bounds, where entries and body of one
        /// indexed definition.
        pub fn $indexed(d: &$($m)? IndexedDef, f: &mut impl FnMut(&$($m)? ExprId)) {
            for slot in &$($m)? d.slots {
                if let Slot::Var { range: Some(r), .. } = slot {
                    $range(r, f);
                }
            }
            $wheres(&$($m)? d.wheres, f);
            f(&$($m)? d.body);
        }
    };
}

operand_visitors!(
    visit_operands,
    visit_stmt_operands,
    visit_indexed_operands,
    visit_where_operands,
    visit_range_operands
);
operand_visitors!(operands_mut, stmt_operands_mut, indexed_operands_mut, where_operands_mut, range_operands_mut, mut);

/// Every expression `kind` uses directly: operands, range bounds, where
/// entries, and the expressions of nested statements.
pub fn operands(kind: &ExprKind, out: &mut Vec<ExprId>) {
    visit_operands(kind, &mut |e| out.push(*e));
}

/// Every expression a statement uses directly: its value, or its clauses'
/// range bounds, where entries and bodies.
pub fn stmt_operands(s: &Stmt, out: &mut Vec<ExprId>) {
    visit_stmt_operands(s, &mut |e| out.push(*e));
}

/// The range bounds, where entries and body of one indexed definition.
pub fn indexed_operands(d: &IndexedDef, out: &mut Vec<ExprId>) {
    visit_indexed_operands(d, &mut |e| out.push(*e));
}
