//! The loop IR: what lowering produces and code generation consumes.
//!
//! A lowered `Function` is fully explicit: every variable has a unique id and
//! a Rust-ready name, every expression carries its type, every tensor read
//! says whether its bounds were proven (`checked: false`) or must be checked
//! at run time, every loop has its start and extent as symbolic `Dim`s over
//! the function's dimension variables, and every tensor definition says which
//! axis runs in parallel. Back ends only print; they make no decisions that
//! need analysis facts.
//!
//! Invariants (checked by `validate`):
//! - a `VarId` is defined (parameter, dimension binding, `Let`, `Tensor`,
//!   loop or reduction variable, where-binding) before it is used, and
//!   defined once;
//! - a `Dim` mentions only `DimVar(v)` where `v` is the raw id of a variable
//!   of type `i64` that is in scope (a dimension symbol, a scalar `i64`
//!   parameter, or a loop index);
//! - `Read.indices.len()` equals the rank of the tensor read; a `View`
//!   has fewer indices than the rank;
//! - loop and reduction variables are `i64`.
//!
//! Typing: `Expr.ty` is the type of the value. Index expressions are `i64`.
//! Arithmetic `Binary` operands have the same scalar type as each other;
//! comparisons yield `bool`.

pub mod pretty;
pub mod validate;

use crate::analysis::dim::Dim;
use crate::syntax::ast::{BinOp, RedOp, ScalarKind, UnOp};

/// A variable of a lowered function (parameter, local, dimension, index).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VarId(pub u32);

#[derive(Clone, Debug, PartialEq)]
pub struct VarInfo {
    /// A valid, unique Rust identifier for this variable in its function.
    pub name: String,
    /// The name as the user wrote it (for error messages).
    pub source_name: String,
    pub ty: Ty,
}

/// A lowered type. Tensors carry element type and rank; their extents are
/// tracked by `Dim`s where they are needed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ty {
    Scalar(ScalarKind),
    Tensor(ScalarKind, usize),
    Tuple(Vec<Ty>),
    Str,
    Unit,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    pub fns: Vec<Function>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Function {
    /// The Rust name of the function.
    pub name: String,
    pub public: bool,
    pub docs: Vec<String>,
    pub params: Vec<VarId>,
    pub ret: Ty,
    /// Dimension bindings and checks at entry, in order.
    pub entry: Vec<EntryCheck>,
    pub body: Vec<Stmt>,
    pub result: Expr,
    /// Indexed by `VarId.0`.
    pub vars: Vec<VarInfo>,
}

impl Function {
    pub fn var(&self, v: VarId) -> &VarInfo {
        &self.vars[v.0 as usize]
    }
}

/// Entry code: binds dimension symbols from parameter shapes and checks the
/// other uses.
#[derive(Clone, Debug, PartialEq)]
pub enum EntryCheck {
    /// `let dim: i64 = param.shape()[axis] as i64;`
    BindDim { dim: VarId, param: VarId, axis: usize },
    /// `param.shape()[axis] == expected`, else `Error::Shape` naming `symbol`
    /// (the dimension as written in the signature).
    CheckDim { param: VarId, axis: usize, symbol: String, expected: Dim },
}

#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    /// `let var = value;`
    Let { var: VarId, value: Expr },
    /// `let var: i64 = value;` after checking it is non-negative (an extent
    /// such as `H - KH + 1`); `what` is its source text for the error.
    Extent { var: VarId, value: Dim, what: String },
    /// Two extents that one index was bound to must agree at run time.
    SameExtent { index: String, a: Dim, a_what: String, b: Dim, b_what: String },
    /// A tensor defined pointwise.
    Tensor(TensorDef),
    /// A tensor that is a (batched) matrix product, run by a GEMM routine.
    Gemm(Gemm),
    /// A declared result dimension checked against the computed one.
    CheckResultDim { tensor: VarId, axis: usize, symbol: String, declared: Dim },
    /// Evaluate for effect (`assert`, `print`).
    Expr(Expr),
}

/// `let var[axes...] = body;` in row-major, standard layout.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorDef {
    pub var: VarId,
    pub elem: ScalarKind,
    pub axes: Vec<Axis>,
    /// The value at one point, of type `Scalar(elem)`.
    pub body: Expr,
    /// Whether the outermost axis runs in parallel (rayon) when the work
    /// estimate is above the runtime threshold.
    pub parallel: bool,
    /// Estimated scalar operations per output element (for the threshold).
    pub cost_per_point: u64,
}

/// `out[p, i, j] = sum[k < k_len](a[p, i, k] * b[p, k, j])` where `a` and `b`
/// are read through axis permutations: `a_axes` lists which axis of `a` is
/// the batch axis (when `batch` is set), the row axis and the contracted
/// axis, in that order; `b_axes` the batch, contracted and column axes.
/// `reference` is the same definition as a loop nest; back ends use it when
/// every access must be bounds-checked. Every read of the product was proven
/// in bounds, so the operands cover the extents.
#[derive(Clone, Debug, PartialEq)]
pub struct Gemm {
    pub out: VarId,
    pub elem: ScalarKind,
    pub batch: Option<Dim>,
    pub m: Dim,
    pub n: Dim,
    pub k: Dim,
    pub a: VarId,
    pub a_axes: Vec<usize>,
    pub b: VarId,
    pub b_axes: Vec<usize>,
    pub reference: TensorDef,
}

/// One output axis: index variable `index` runs over `start .. start + extent`
/// and the output position along the axis is `index - start`.
#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    pub index: VarId,
    pub start: Dim,
    pub extent: Dim,
}

/// A loop of a reduction: `index` runs over `start .. end`.
#[derive(Clone, Debug, PartialEq)]
pub struct Loop {
    pub index: VarId,
    pub start: Dim,
    pub end: Dim,
}

/// A `where` entry, evaluated in order; a false guard makes the enclosing
/// definition point zero (or skips the reduction term).
#[derive(Clone, Debug, PartialEq)]
pub enum WhereEntry {
    Bind(VarId, Expr),
    Guard(Expr),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub ty: Ty,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Literal {
    Int(i128),
    /// Float text as written (no suffix).
    Float(String),
    Bool(bool),
    Str(String),
}

/// Elementary functions of `std::math` and the arithmetic they need.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Intrinsic {
    Exp,
    Ln,
    Log10,
    Log2,
    Sqrt,
    Sin,
    Cos,
    Tan,
    Tanh,
    Sigmoid,
    Abs,
    Floor,
    Ceil,
    Round,
    Min,
    Max,
    /// float ** float
    Powf,
    /// float ** integer
    Powi,
    /// integer ** integer (non-negative exponent; checked)
    IntPow,
}

impl Intrinsic {
    pub fn name(self) -> &'static str {
        match self {
            Intrinsic::Exp => "exp",
            Intrinsic::Ln => "ln",
            Intrinsic::Log10 => "log10",
            Intrinsic::Log2 => "log2",
            Intrinsic::Sqrt => "sqrt",
            Intrinsic::Sin => "sin",
            Intrinsic::Cos => "cos",
            Intrinsic::Tan => "tan",
            Intrinsic::Tanh => "tanh",
            Intrinsic::Sigmoid => "sigmoid",
            Intrinsic::Abs => "abs",
            Intrinsic::Floor => "floor",
            Intrinsic::Ceil => "ceil",
            Intrinsic::Round => "round",
            Intrinsic::Min => "min",
            Intrinsic::Max => "max",
            Intrinsic::Powf => "powf",
            Intrinsic::Powi => "powi",
            Intrinsic::IntPow => "int_pow",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    Lit(Literal),
    /// A variable's value (scalar, tensor, tuple); tensors are passed by view.
    Var(VarId),
    /// The value of a dimension expression, as `i64`.
    Dim(Dim),
    Unary(UnOp, Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    Cast(Box<Expr>, ScalarKind),
    Intrinsic(Intrinsic, Vec<Expr>),
    /// A call of another lowered function (by Rust name); it returns
    /// `Result`, so the call propagates errors.
    Call { func: String, args: Vec<Expr> },
    /// An element read. `indices` are `i64` expressions; when `checked` each
    /// is bounds-checked and a failure returns `Error::Index`.
    Read { tensor: VarId, indices: Vec<Expr>, checked: bool },
    /// A sub-tensor view selected by leading indices (rank-reducing access);
    /// always checked.
    View { tensor: VarId, indices: Vec<Expr> },
    /// A reduction over a loop nest.
    Reduce { op: RedOp, loops: Vec<Loop>, wheres: Vec<WhereEntry>, body: Box<Expr> },
    /// A value under where entries: if a guard fails the value is zero
    /// (false for bool).
    Guarded { wheres: Vec<WhereEntry>, body: Box<Expr> },
    If { cond: Box<Expr>, then: Box<Expr>, els: Box<Expr> },
    Block { stmts: Vec<Stmt>, result: Box<Expr> },
    Tuple(Vec<Expr>),
    Field(Box<Expr>, u32),
    /// A tensor literal: nested arrays of scalars with the given shape.
    ArrayLit { shape: Vec<usize>, elems: Vec<Expr> },
    /// A `String` built from text and formatted values (interpolation).
    Format(Vec<FmtPart>),
    /// Prints the values on one line; `Unit`.
    Print(Vec<Expr>),
    /// Returns `Error::Assert` with `message` (a `Str`) when `cond` is
    /// false; `Unit`.
    Assert { cond: Box<Expr>, message: Box<Expr> },
}

/// A piece of a `Format`.
#[derive(Clone, Debug, PartialEq)]
pub enum FmtPart {
    Text(String),
    /// A value formatted like the seed implementation prints it, with an
    /// optional number of decimals.
    Value(Expr, Option<u32>),
}
