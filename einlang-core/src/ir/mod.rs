//! The loop IR: what lowering produces and code generation consumes.
//!
//! A lowered `Function` is fully explicit: every variable has a unique id and
//! a unique name, every expression carries its type, every tensor read
//! says whether its bounds were proven (`checked: false`) or must be checked
//! at run time, and every loop has its start and extent as symbolic `Dim`s
//! over the function's dimension variables. Back ends only print; they make
//! no decisions that need analysis facts.
//!
//! The IR says what is independent, reduced or sequential, not how a back
//! end runs it: the points of a `TensorDef` are independent of each other,
//! and so are the points of a recurrence clause's own `loops`; a `Reduce`
//! combines its terms in loop order, and a recurrence's sequential loops run
//! in order. Each definition and clause carries a per-point cost estimate
//! (`cost::expr_cost`) that back ends may weigh against the number of points.
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
//! - loop and reduction variables are `i64`;
//! - function names are unique identifiers; a `Call` names its callee by
//!   `FuncId`, a function of the program, with arguments of its parameters'
//!   types; a `Checkpointing`'s alternative is a function of the program;
//! - the program's call graph (`Program::calls`) is the graph of its
//!   bodies as they are: passes that change which functions a body calls
//!   update it.
//!
//! Typing: `Expr.ty` is the type of the value. Index expressions are `i64`.
//! Arithmetic `Binary` operands have the same scalar type as each other;
//! comparisons yield `bool`.

pub mod affine;
pub mod calls;
pub mod cost;
pub mod equiv;
pub mod pretty;
pub mod validate;
pub mod visit;

use crate::base::dim::Dim;
use crate::base::intrinsic::{DynShapeOp, FsOp, Intrinsic};
use crate::base::ops::{BinOp, RedOp, UnOp};
use crate::base::scalar::ScalarKind;
use crate::base::span::Span;

/// A variable of a lowered function (parameter, local, dimension, index).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VarId(pub u32);

#[derive(Clone, Debug, PartialEq)]
pub struct VarInfo {
    /// A name for this variable, unique in its function: an identifier
    /// (letters, digits and `_`, not starting with a digit), which may be a
    /// keyword of a back end's language; each back end spells it.
    pub name: String,
    /// The name as the user wrote it (for error messages).
    pub source_name: String,
    pub ty: Repr,
}

/// A lowered type. Tensors carry element type and rank; their extents are
/// tracked by `Dim`s where they are needed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Repr {
    Scalar(ScalarKind),
    Tensor(ScalarKind, usize),
    /// `[T; *]`: a tensor whose rank is known only at run time.
    Dyn(ScalarKind),
    /// `jagged[T]`: rows of `T` of different lengths.
    Jagged(ScalarKind),
    Tuple(Vec<Repr>),
    Str,
    /// A vector of strings (`Vec<String>`).
    Strs,
    Unit,
}

/// The type of the element of tuple type `ty` at `path` (`ty` itself for
/// an empty path).
pub fn tuple_element<'a>(ty: &'a Repr, path: &[u32]) -> Option<&'a Repr> {
    path.iter().try_fold(ty, |t, &i| match t {
        Repr::Tuple(items) => items.get(i as usize),
        _ => None,
    })
}

/// A function of a program: its index in `Program::fns`. Functions are
/// only ever added to a program (at the end), so an id stays valid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FuncId(pub u32);

impl FuncId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A lowered program: its functions, and their call graph (see `calls`),
/// built with the program and kept by the methods that change which
/// functions a body calls.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    pub fns: Vec<Function>,
    calls: calls::CallGraph,
}

impl Program {
    /// The program of `fns`, with their call graph.
    pub fn new(fns: Vec<Function>) -> Program {
        let calls = calls::CallGraph::of(&fns);
        Program { fns, calls }
    }

    /// The call graph of the program's functions.
    pub fn calls(&self) -> &calls::CallGraph {
        &self.calls
    }

    /// The function `id`.
    pub fn func(&self, id: FuncId) -> &Function {
        &self.fns[id.index()]
    }

    /// The function `id`, if the program has it.
    pub fn get(&self, id: FuncId) -> Option<&Function> {
        self.fns.get(id.index())
    }

    /// Every function with its id.
    pub fn functions(&self) -> impl Iterator<Item = (FuncId, &Function)> {
        self.fns.iter().enumerate().map(|(i, f)| (FuncId(i as u32), f))
    }

    /// Every function with its id, for a pass that rewrites bodies without
    /// changing which functions they call (`validate` checks that the call
    /// graph still holds; a pass that changes calls says so with
    /// [`Program::calls_changed`]).
    pub fn functions_mut(&mut self) -> impl Iterator<Item = (FuncId, &mut Function)> {
        self.fns.iter_mut().enumerate().map(|(i, f)| (FuncId(i as u32), f))
    }

    /// Adds `f` (and its calls to the graph); its id.
    pub fn push(&mut self, f: Function) -> FuncId {
        let id = FuncId(self.fns.len() as u32);
        self.calls.push(&f);
        self.fns.push(f);
        id
    }

    /// Takes the calls of function `id` into the graph again, after a pass
    /// changed which functions its body calls (`opt::shard` inlines calls).
    pub fn calls_changed(&mut self, id: FuncId) {
        self.calls.set(id, &self.fns[id.index()]);
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Function {
    /// The name of the function, unique in the program and an identifier
    /// like a variable's; each back end spells it.
    pub name: String,
    pub public: bool,
    /// For a public function of an inline Einlang module: the module path
    /// and the Einlang name under which the module exports it (`m::name`);
    /// the function under its own, flat name is then not documented.
    pub export: Option<(Vec<String>, String)>,
    pub docs: Vec<String>,
    /// The function's Einlang signature as the user would write it
    /// (`fn f(x: [f32; T, D]) -> [f32; T, D]`), for its documentation;
    /// `None` for functions the compiler made.
    pub signature: Option<String>,
    pub params: Vec<VarId>,
    pub ret: Repr,
    /// Dimension bindings and checks at entry, in order.
    pub entry: Vec<EntryCheck>,
    pub body: Vec<Stmt>,
    pub result: Expr,
    /// Indexed by `VarId.0`.
    pub vars: Vec<VarInfo>,
    /// `Some` for a `#[device(cuda)]` function, `None` for a host function.
    pub device: Option<Device>,
    /// `Some` for a `#[shard(B)]` function (see [`Shard`]).
    pub shard: Option<Shard>,
    /// Set by `opt::checkpoint` on a function whose reverse sweep through a
    /// recurrence may instead run checkpointed (see [`Checkpointing`]).
    pub checkpointed: Option<Checkpointing>,
    /// Where the source defines its variables and clauses, for passes that
    /// report errors in the user's program (`opt::shard`).
    pub spans: Spans,
}

/// Source spans of a function's definitions, filled by lowering: a
/// parameter, a `let`, a tensor definition or recurrence (its statement),
/// a reduction's index variables (the reduction), and the clauses of a
/// recurrence as lowered (by the recurrence's variable and the clause's
/// position). Variables that passes create have none: a pass reporting an
/// error there falls back to a span of its own (an attribute). Equality
/// ignores spans, as it does everywhere in the IR.
#[derive(Clone, Debug, Default)]
pub struct Spans {
    vars: std::collections::HashMap<VarId, Span>,
    clauses: std::collections::HashMap<(VarId, usize), Span>,
}

impl PartialEq for Spans {
    fn eq(&self, _: &Spans) -> bool {
        true
    }
}

impl Spans {
    /// Where `v` is defined, when the source defines it at a token of the
    /// macro call (not in the standard library, whose spans are detached).
    pub fn var(&self, v: VarId) -> Option<Span> {
        self.vars.get(&v).copied().filter(|s| !s.is_detached())
    }

    /// Clause `k` (as lowered) of the recurrence `v`.
    pub fn clause(&self, v: VarId, k: usize) -> Option<Span> {
        self.clauses.get(&(v, k)).copied().filter(|s| !s.is_detached())
    }

    pub fn set_var(&mut self, v: VarId, span: Span) {
        self.vars.insert(v, span);
    }

    pub fn set_clause(&mut self, v: VarId, k: usize, span: Span) {
        self.clauses.insert((v, k), span);
    }

    /// The spans of another function's variables and clauses, renamed by
    /// `map` (a function inlined over fresh variables).
    pub fn copy_renamed(&mut self, from: &Spans, map: &std::collections::HashMap<VarId, VarId>) {
        for (v, s) in &from.vars {
            if let Some(&to) = map.get(v) {
                self.vars.insert(to, *s);
            }
        }
        for ((v, k), s) in &from.clauses {
            if let Some(&to) = map.get(v) {
                self.clauses.insert((to, *k), *s);
            }
        }
    }
}

/// How a function chooses between keeping a recurrence's whole history and
/// recomputing it from checkpoints. At entry, when the primal's history
/// (`steps` steps of `state` elements of `elem`) is larger than the
/// runtime's limit (`ckpt::history_limit`), the function calls
/// `alternative` with its own parameters: the same function, compiled with
/// a [`Sweep`] in place of the statements from the primal recurrence to the
/// last statement that reads its history. Its result is returned unless it
/// gave up, and then the function runs as written. `steps` and `state`
/// mention only dimensions bound at entry.
#[derive(Clone, Debug, PartialEq)]
pub struct Checkpointing {
    pub alternative: FuncId,
    /// The primal recurrence's name, for the compile facts.
    pub primal: String,
    pub steps: Dim,
    pub state: Dim,
    pub elem: ScalarKind,
}

/// A function split across the ranks of a world along one dimension
/// symbol (`#[shard(B)]`). Lowering records the symbol; `opt::shard`
/// rewrites the function to compute its own block and fills `parts`.
#[derive(Clone, Debug)]
pub struct Shard {
    pub symbol: String,
    pub span: Span,
    pub parts: Option<ShardParts>,
}

impl PartialEq for Shard {
    fn eq(&self, o: &Shard) -> bool {
        self.symbol == o.symbol && self.parts == o.parts
    }
}

/// The variables of a sharded function after `opt::shard`: the entry binds
/// `local` (this rank's extent of the symbol, from its parameters) and the
/// other dimensions in `agreed`; a back end then agrees across ranks on
/// them, binding `global` (the symbol's whole extent, the sum of the
/// ranks' `local`) and `offset` (where this rank's block starts), and
/// returning an error on every rank when an `agreed` dimension differs
/// between ranks. The body's loops over the symbol run over the block
/// `offset .. offset + local` with their index variables global.
#[derive(Clone, Debug, PartialEq)]
pub struct ShardParts {
    pub global: VarId,
    pub local: VarId,
    pub offset: VarId,
    pub agreed: Vec<VarId>,
    /// Whether the function exchanges halos (`Comm::HaloStart`,
    /// `Comm::Extend`): the entry then also learns every rank's block
    /// length.
    pub halo: bool,
    /// The tensors held with halo rows along the sharded axis (extended
    /// copies, recurrences whose steps exchange halos): a checked read of
    /// one along that axis checks the global index against the symbol's
    /// whole extent, so that a read past either end of the whole axis is
    /// the unsharded function's `Error::Index`, not a halo row.
    pub edges: Vec<HaloEdge>,
}

/// A tensor held with halo rows (`ShardParts::edges`): position `p` along
/// `axis` holds the global row `p - lo + offset`; errors name `source`
/// (the tensor of the program that this one holds, or itself).
#[derive(Clone, Debug, PartialEq)]
pub struct HaloEdge {
    pub tensor: VarId,
    pub source: VarId,
    pub axis: usize,
    pub lo: i64,
}

/// Communication between the ranks of a sharded function, stated by what
/// it computes; a back end spells it (MPI for host functions). Every rank
/// runs the same `Comm` statements in the same order.
#[derive(Clone, Debug, PartialEq)]
pub enum Comm {
    /// `out` is `input` (a scalar or a tensor of the same shape on every
    /// rank) combined over the ranks element by element with `op` (`Sum`,
    /// `Prod`, `Max`, `Min`, `All`, `Any`), in rank order.
    AllReduce { out: VarId, input: VarId, op: RedOp, elem: ScalarKind },
    /// `argmax`/`argmin` over the ranks: each rank has its local extremum
    /// `best` (NaN terms lose), its local `argmax`/`argmin` `index` (the
    /// unsharded reduction over its block: -1 when the block had no term,
    /// its first term when that is NaN) and `skip`, the first global index
    /// of `best` among the terms that are not NaN (-1 when none; `index`
    /// itself for integers), scalars or tensors of one shape; `out` is the
    /// index the unsharded reduction gives: the first extremum (lowest
    /// rank wins ties), or the first term when that is NaN.
    AllReduceArg { out: VarId, best: VarId, index: VarId, skip: VarId, max: bool, elem: ScalarKind },
    /// In a clause's prelude of the recurrence `tensor`, whose axis `axis`
    /// holds `lo` halo rows, this rank's block, then `hi` halo rows: the
    /// exchange that copies the neighbouring ranks' rows next to this
    /// rank's block, at the step `step` (an `i64` expression) of the
    /// sequential axis `time`, into the halos starts. The halos hold those
    /// rows once the [`Comm::HaloWait`] of `tensor` that follows (in a
    /// later clause's prelude, at the same step) has run; the clauses in
    /// between read no halo row (`opt::shard` puts there the rows whose
    /// reads stay inside the block, computed while the rows travel). A
    /// back end may complete the exchange at once.
    HaloStart { tensor: VarId, time: usize, step: Expr, axis: usize, lo: u64, hi: u64 },
    /// The halo exchange of `tensor` that the last [`Comm::HaloStart`] (or
    /// [`Comm::ExtendStart`] defining it) started is complete: its halos
    /// hold the neighbours' rows.
    HaloWait { tensor: VarId },
    /// `out` is the sharded tensor `input` (of elements `elem`) with `lo`
    /// rows of the previous rank's block before its own block along
    /// `axis`, and `hi` rows of the next rank's after it (for a definition
    /// that reads `input` at constant offsets along the sharded axis).
    Extend { out: VarId, input: VarId, axis: usize, lo: u64, hi: u64, elem: ScalarKind },
    /// [`Comm::Extend`] in two parts: `out` holds its halo rows once the
    /// [`Comm::HaloWait`] of `out` that follows has run, and of `input`'s
    /// block only the first and the last `edge` rows (all of them when
    /// the block is no longer; `u64::MAX`: the whole block): nothing reads
    /// `out` between the start and the wait (`opt::shard` puts there a
    /// definition's rows whose reads stay inside the block, which read
    /// `input` itself, computed while the rows travel), and what reads it
    /// afterwards reads only those rows (the definition's edge rows). A
    /// back end may complete the exchange at once, and may keep `out`
    /// between calls (its other rows are then unspecified).
    ExtendStart { out: VarId, input: VarId, axis: usize, lo: u64, hi: u64, elem: ScalarKind, edge: u64 },
}

impl Comm {
    /// The variable it defines, if any.
    pub fn defines(&self) -> Option<VarId> {
        match self {
            Comm::AllReduce { out, .. }
            | Comm::AllReduceArg { out, .. }
            | Comm::Extend { out, .. }
            | Comm::ExtendStart { out, .. } => Some(*out),
            Comm::HaloStart { .. } | Comm::HaloWait { .. } => None,
        }
    }

    /// The variables it reads (besides those of a `HaloStart`'s step).
    pub fn reads(&self) -> Vec<VarId> {
        match self {
            Comm::AllReduce { input, .. } | Comm::Extend { input, .. } | Comm::ExtendStart { input, .. } => {
                vec![*input]
            }
            Comm::AllReduceArg { best, index, skip, .. } => vec![*best, *index, *skip],
            Comm::HaloStart { tensor, .. } | Comm::HaloWait { tensor } => vec![*tensor],
        }
    }
}

/// The target of a device function, with the span of its attribute for
/// diagnostics (equality ignores the span, as it ignores spans everywhere).
#[derive(Clone, Copy, Debug)]
pub struct Device {
    pub span: Span,
}

impl PartialEq for Device {
    fn eq(&self, _: &Device) -> bool {
        true
    }
}

impl Function {
    /// Whether the function may give up: a [`Sweep`] among its statements
    /// may find that it needs a step it no longer holds, and its caller then
    /// runs the function it stands for. A back end returns "no result"
    /// rather than an error for it.
    pub fn may_give_up(&self) -> bool {
        self.body.iter().any(|s| matches!(s, Stmt::Sweep(_)))
    }

    pub fn var(&self, v: VarId) -> &VarInfo {
        &self.vars[v.0 as usize]
    }

    /// Declares a new variable named after `source`: `source` itself, or
    /// `source_2`, `source_3`, ... when another variable has that name.
    pub fn add_var(&mut self, source: &str, ty: Repr) -> VarId {
        let taken = |name: &str| self.vars.iter().any(|v| v.name == name);
        let mut name = source.to_string();
        let mut n = 2;
        while taken(&name) {
            name = format!("{source}_{n}");
            n += 1;
        }
        self.vars.push(VarInfo { name, source_name: source.to_string(), ty });
        VarId(self.vars.len() as u32 - 1)
    }
}

/// Entry code: binds dimension symbols from parameter shapes and checks the
/// other uses.
#[derive(Clone, Debug, PartialEq)]
pub enum EntryCheck {
    /// `let dim: i64 = param.shape()[axis] as i64;` (`param.0.1.shape()`
    /// with `path` [0, 1]: a tensor inside a tuple parameter).
    BindDim { dim: VarId, param: VarId, path: Vec<u32>, axis: usize },
    /// `param.shape()[axis] == expected`, else `Error::Shape` naming `symbol`
    /// (the dimension as written in the signature).
    CheckDim { param: VarId, path: Vec<u32>, axis: usize, symbol: String, expected: Dim },
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
    /// A tensor that is a two-dimensional convolution, run by the
    /// runtime's direct kernel (host code only).
    Conv(Conv),
    /// A tensor defined by clauses that read earlier points of itself.
    Recurrence(Recurrence),
    /// A tensor definition with statements computed once per row (per
    /// index of its first axis) before the points of that row.
    Rows(Rows),
    /// `var` holds the elements of `source` in row-major order as a tensor
    /// of extents `dims` (their product is `source`'s element count,
    /// checked at run time). `source` is a tensor that an earlier
    /// statement of the same statement list defines (`Tensor`, `Gemm` or `Reshape`),
    /// and nothing reads it after this statement, so a back end may reuse
    /// its storage.
    Reshape { var: VarId, source: VarId, elem: ScalarKind, dims: Vec<Dim> },
    /// A declared result dimension checked against the computed one: of
    /// `tensor`, or of its tuple element at `path` (`result.1.0`).
    CheckResultDim { tensor: VarId, path: Vec<u32>, axis: usize, symbol: String, declared: Dim },
    /// Evaluate for effect (`assert`, `print`).
    Expr(Expr),
    /// Communication between ranks (a sharded function only).
    Comm(Comm),
    /// A reverse sweep through a recurrence, run in chunks of steps so that
    /// neither the primal's history nor its adjoint's is kept whole (see
    /// [`Sweep`]). Only among a function's own statements (`Function::may_give_up`).
    Sweep(Box<Sweep>),
}

/// Backpropagation through a recurrence with checkpoints.
///
/// The statements it stands for are: `primal` (a recurrence along axis 0
/// over `0..steps`), `between` (statements that may read the primal's last
/// steps), `adjoint` (a recurrence along axis 0 over `0..steps`, step `s`
/// being the primal's step `steps - 1 - s`, reading the primal near that
/// step), `sums` (sums over a time variable of values read from both near
/// one step) and `after` (statements that may read the primal's first
/// steps and the adjoint's last). Run in order, they keep both histories
/// whole.
///
/// Instead, a back end keeps each in a window of slots (a power of two at
/// least `chunk + margin`) and runs:
/// 1. the primal over chunks `[lo, hi)` of `chunk` steps, saving the last
///    `lookback` steps of each chunk (the checkpoints); then `between`;
/// 2. for the chunks from the last to the first: the primal's steps of the
///    chunk again from the checkpoint before it (not for the last chunk,
///    whose steps the window still holds), the adjoint's steps
///    `steps - hi .. steps - lo`, and every sum over the time values of the
///    chunk, added into its total;
/// 3. `after`.
///
/// The primal and adjoint recurrences here have their sequential loop over
/// `lo..hi` and `steps - hi .. steps - lo` respectively (`lo` and `hi` are
/// `i64` variables the back end binds per chunk). Every read of either
/// recurrence is tested at run time against the steps its window holds; a
/// read outside them makes the function give up, so the choice of what
/// runs in chunks is never wrong, at worst wasted.
#[derive(Clone, Debug, PartialEq)]
pub struct Sweep {
    pub steps: Dim,
    /// Bound by the back end: the steps per chunk, and the current chunk.
    pub chunk: VarId,
    pub lo: VarId,
    pub hi: VarId,
    pub primal: Recurrence,
    pub lookback: u64,
    pub between: Vec<Stmt>,
    pub adjoint: Recurrence,
    pub sums: Vec<ChunkSum>,
    pub after: Vec<Stmt>,
    /// How far beyond a chunk (either way) the reads of a chunk's work may
    /// reach.
    pub margin: u64,
}

/// A sum over a time variable, computed one time value at a time: `total`
/// (zeros at first, of `part`'s type) gets `part` added for every value of
/// `time` (an `i64` variable the back end binds): in each chunk, the time
/// values `t` with `t + offset` in the chunk's steps `[lo, hi)`, within
/// `full` (the first chunk from `full`'s start, the last to its end).
/// `part` is a `Tensor` or a scalar `Let`, the term of one time value;
/// `prelude` (slab copies and GEMMs, from `opt::steps`) runs before it.
#[derive(Clone, Debug, PartialEq)]
pub struct ChunkSum {
    pub total: VarId,
    pub time: VarId,
    pub prelude: Vec<Stmt>,
    pub part: Stmt,
    pub full: (Dim, Dim),
    pub offset: i64,
}

/// `let var[axes...] = body;` in row-major, standard layout. Every point
/// is computed independently of the others, in any order.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorDef {
    pub var: VarId,
    pub elem: ScalarKind,
    pub axes: Vec<Axis>,
    /// The value at one point, of type `Scalar(elem)`.
    pub body: Expr,
    /// Estimated scalar operations per output element: `cost::expr_cost`
    /// of `body`.
    pub cost_per_point: u64,
    /// How many of the first where entries of `body` (then a `Guarded`)
    /// are guards that restrict the definition to the points it names (a
    /// literal index, an index range that may start above zero), rather
    /// than its own `where` entries; 0 when it covers every point of its
    /// axes but for those.
    pub domain_guards: usize,
}

impl TensorDef {
    /// A definition over every point of `axes` (no domain guards), its
    /// cost estimated from `body`.
    pub fn new(var: VarId, elem: ScalarKind, axes: Vec<Axis>, body: Expr) -> TensorDef {
        TensorDef { var, elem, axes, cost_per_point: cost::expr_cost(&body), body, domain_guards: 0 }
    }

    /// When the value is a read of one tensor at the definition's own
    /// indices, each once, in any order: the tensor and, for each axis of
    /// the definition, the position in the read of the index naming it
    /// (`[0, 2, 3, 1]` for `y[n, i, j, o] = t[n, o, i, j]`). Whether the
    /// read is checked is the caller's question.
    pub fn permuted_read(&self) -> Option<(VarId, Vec<usize>)> {
        let ExprKind::Read { tensor, indices, .. } = &self.body.kind else { return None };
        if indices.len() != self.axes.len() {
            return None;
        }
        let mut order = vec![usize::MAX; indices.len()];
        for (k, index) in indices.iter().enumerate() {
            let ExprKind::Var(v) = index.kind else { return None };
            let a = self.axes.iter().position(|ax| ax.index == v)?;
            if order[a] != usize::MAX {
                return None;
            }
            order[a] = k;
        }
        Some((*tensor, order))
    }
}

/// `def` (of rank 2 or more), whose rows share work: for every index `n` of
/// its first axis (bound to that axis's index variable), the `prelude`
/// statements run in order, then the points of row `n` are computed. The
/// prelude holds scalar `let`s and tensor definitions (over fewer axes),
/// may read the first axis's index, and defines variables that only the
/// rest of the prelude and `def.body` read. Rows are independent of each
/// other: a back end may run them in any order, each with its own prelude
/// values. The `opt` row fusion pass makes these; lowering never does.
#[derive(Clone, Debug, PartialEq)]
pub struct Rows {
    pub def: TensorDef,
    pub prelude: Vec<Stmt>,
}

/// `out[p, i, j] = sum[k < k_len](a[p, i, k] * b[p, k, j])` where `a` and `b`
/// are read through axis permutations: `a_axes` lists which axis of `a` is
/// the batch axis (when `batch` is set), the row axis and the contracted
/// axis, in that order; `b_axes` the batch, contracted and column axes.
/// With `batch` set, an operand whose axes list has two entries (and whose
/// rank is 2) has no batch axis: the same matrix serves every batch (a
/// convolution's kernel, multiplied into each image's packed columns).
/// `reference` is the same definition as a loop nest; back ends use it when
/// every access must be bounds-checked. Every read of the product was proven
/// in bounds, so the operands cover the extents. Lowering emits loop nests
/// only; the `opt` GEMM pass finds these.
///
/// With `scale`, a scalar of type `elem` that does not depend on the point
/// (a literal, or a variable defined before the statement), every element
/// is the finished sum times `scale`, rounded once more: `out[p, i, j] =
/// (sum[k](..)) * scale`, the same bits as the product followed by that
/// multiplication (`reference` is the definition with the multiplication).
///
/// With `slice`, an index variable bound by an enclosing row group
/// (`Rows`, whose rows are the batches of a chain of products: `opt::
/// slices`), the product is batch `slice` of a batched one: `batch` is
/// `None`, `out` and `reference` have two axes, and an operand whose axes
/// list has three entries is read at `slice` along its first listed axis
/// (its batch axis), the other two as above; an operand with two entries
/// is a matrix used whole.
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
    pub scale: Option<Expr>,
    pub slice: Option<VarId>,
    pub reference: TensorDef,
}

/// `out[n, o, i, j] = bias[o] + sum[c, r, s](x[n, c, i sh + r dh - top,
/// j sw + s dw - left] * k[o, c, r, s])` (`pad = (top, left)`,
/// non-negative; `stride = (sh, sw)` and `dilation = (dh, dw)`, at least
/// 1), where a read outside `x` is zero and `bias`, when there is one, has
/// at least `O` elements: a convolution over the channels-first layouts,
/// valid or padded by guards (`k` read through `k_axes` and `k_flip`);
/// without the axis `n` for a single image (`out[o, i, j]`,
/// `x[c, ..]`). `x` has `out`'s rank, `k` rank 4, the sums run over all of
/// `k`'s extents (which agree with `x`'s channels), and `out`'s extents are
/// those of `reference`'s axes, the same definition as a loop nest (back
/// ends that have no kernel for it run that). The `opt` convolution pass
/// finds these in host code; lowering never makes them.
///
/// With `otherwise`, the convolution is one only at run time (its strides,
/// dilations or pads are run-time values): the kernel runs when
/// `otherwise.when` holds, and `out` is `otherwise.value` when it does not.
#[derive(Clone, Debug, PartialEq)]
pub struct Conv {
    pub out: VarId,
    pub elem: ScalarKind,
    pub x: VarId,
    pub k: VarId,
    pub bias: Option<VarId>,
    pub pad: (Dim, Dim),
    pub stride: (Dim, Dim),
    pub dilation: (Dim, Dim),
    /// The axes of `k` that hold the filter, the channel, the window's row
    /// and its column (`[0, 1, 2, 3]` for `k[o, c, r, s]`).
    pub k_axes: [usize; 4],
    /// Whether the window reads `k` backwards along its row and column
    /// (`k[.., KH - 1 - r, KW - 1 - s]`: an input gradient).
    pub k_flip: bool,
    /// The number of groups `G` (the constant 1 for most convolutions):
    /// `x` has `G C` channels, `O` is a multiple of `G`, and filter `o`
    /// reads the channels `g C + c` of its group `g = o / (O / G)` (ONNX's
    /// `Conv` with `group`). A run-time value is evaluated only where
    /// `otherwise.when` holds.
    pub groups: Dim,
    /// Whether each element is then `max(_, 0)` (a ReLU; NaN gives 0):
    /// the definition is `max(sum + bias, 0.0)` (`reference` has it).
    pub relu: bool,
    /// The kernel's axis (of `[n, o, i, j]`) that each axis of `out` holds:
    /// `[0, 1, 2, 3]`, always for a single image; `[0, 2, 3, 1]` for a
    /// result stored channels last (`out[n, i, j, o]`, which the kernel
    /// writes through a permuted view). `reference` defines `out` in its
    /// own order.
    pub out_order: [usize; 4],
    pub reference: TensorDef,
    pub otherwise: Option<Box<ConvElse>>,
}

/// The run-time branch of a [`Conv`]: `when` (a `bool`) holds when the
/// definition is the convolution (every stride and dilation at least 1,
/// the pads non-negative, the guards' bounds `x`'s extents); `value`, of `out`'s
/// type, is the definition as written over fresh variables (a block that
/// defines it and yields it), which the later passes rewrite like any other
/// (`pack` makes its GEMM).
#[derive(Clone, Debug, PartialEq)]
pub struct ConvElse {
    pub when: Expr,
    pub value: Expr,
}

/// A recurrence: sequential loops over its recurrent axes (outermost
/// first); at every point of them, the clauses that cover it run in source
/// order, each over its own loops (the independent axes). Reads of `var` inside
/// the clause bodies read the points computed so far; after the statement
/// `var` is an ordinary tensor (or, with a `window`, the last `slots` steps
/// of one, read at positions masked by `slots - 1` along the window's axis).
#[derive(Clone, Debug, PartialEq)]
pub struct Recurrence {
    pub var: VarId,
    pub elem: ScalarKind,
    /// The logical extent of every axis.
    pub extents: Vec<Dim>,
    pub window: Option<Window>,
    /// Sequential loops, outermost first, with the axis each runs along.
    pub seq: Vec<(usize, Loop)>,
    /// Whether the window's slab may need zeroing before a step of the
    /// outermost loop (the clauses may not rewrite all of it). A back end
    /// zeroes a slot only when the clauses covering its step differ from
    /// those of the step that last used it: the clauses' loops do not
    /// depend on the step, so the same clauses overwrite the same points.
    pub clear_steps: bool,
    /// Two sequential axes whose reads only look back: may run as a blocked
    /// anti-diagonal wavefront when several threads are available (with a
    /// window, a back end keeps more slots for the steps in flight).
    pub wavefront: bool,
    /// One sequential loop, and the clauses read the tensor only at their
    /// own point's position on the other (non-literal) axes: every point
    /// of those axes runs its sequence independently of the others, so a
    /// back end may run their loops outside the sequential one.
    pub lines: bool,
    pub clauses: Vec<RecClause>,
}

impl Recurrence {
    /// Whether clause `c` writes the current point alone: no loops of its
    /// own, no prelude, and every axis at its sequential loop's variable
    /// (or a literal the loop's cover pins).
    pub fn writes_point(&self, c: &RecClause) -> bool {
        c.loops.is_empty()
            && c.prelude.is_empty()
            && c.at.len() == self.extents.len()
            && c.at.iter().enumerate().all(|(axis, w)| match w {
                RecIndex::Seq(k) => self.seq.get(*k).is_some_and(|(a, _)| *a == axis),
                RecIndex::Lit(n) => self
                    .seq
                    .iter()
                    .position(|(a, _)| *a == axis)
                    .is_some_and(|k| c.cover.get(k) == Some(&Cover::At(*n))),
                RecIndex::Loop(_) => false,
            })
    }
}

/// A circular buffer of `slots` (a power of two) steps along `axis`; a
/// back end may keep more (a larger power of two), masking every access
/// alike.
#[derive(Clone, Debug, PartialEq)]
pub struct Window {
    pub axis: usize,
    pub slots: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct RecClause {
    /// For every sequential loop: the positions of it this clause covers.
    pub cover: Vec<Cover>,
    /// Where the clause writes, per axis of the tensor.
    pub at: Vec<RecIndex>,
    /// The clause's own loops over its independent axes, outermost first:
    /// at one step of the sequential loops, its points may be computed in
    /// any order.
    pub loops: Vec<Loop>,
    /// Estimated scalar operations per point: `cost::expr_cost` of `body`.
    pub cost_per_point: u64,
    /// The value at one point, of type `Scalar(elem)`.
    pub body: Expr,
    /// Statements run at every step the clause covers, before its loops:
    /// they may read the recurrence's earlier steps and define tensors
    /// that `body` reads (the `opt::steps` pass makes them: a copy of an
    /// earlier step and the GEMM that multiplies it, in host code only;
    /// `opt::shard` its halo exchanges, and the parts and all-reduces of
    /// the reductions over the sharded axis in its value; lowering makes
    /// none).
    pub prelude: Vec<Stmt>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Cover {
    At(i64),
    /// `start..end`
    Range(Dim, Dim),
}

#[derive(Clone, Debug, PartialEq)]
pub enum RecIndex {
    /// The index of sequential loop `k`.
    Seq(usize),
    Lit(i64),
    /// The index of the clause's loop `k`.
    Loop(usize),
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
    pub ty: Repr,
}

impl Expr {
    /// `()`: a placeholder while a pass moves an expression out of its place.
    pub fn unit() -> Expr {
        Expr { kind: ExprKind::Tuple(Vec::new()), ty: Repr::Unit }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Literal {
    Int(i128),
    /// Float text as written (no suffix).
    Float(String),
    Bool(bool),
    Str(String),
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
    /// A call of another function of the program; it returns `Result`,
    /// so the call propagates errors.
    Call {
        func: FuncId,
        args: Vec<Expr>,
    },
    /// An element read. `indices` are `i64` expressions; when `checked` each
    /// is bounds-checked and a failure returns `Error::Index`.
    Read {
        tensor: VarId,
        indices: Vec<Expr>,
        checked: bool,
    },
    /// A sub-tensor view selected by leading indices (rank-reducing access);
    /// always checked.
    View {
        tensor: VarId,
        indices: Vec<Expr>,
    },
    /// A reduction over a loop nest.
    Reduce {
        op: RedOp,
        loops: Vec<Loop>,
        wheres: Vec<WhereEntry>,
        body: Box<Expr>,
    },
    /// A value under where entries: if a guard fails the value is zero
    /// (false for bool).
    Guarded {
        wheres: Vec<WhereEntry>,
        body: Box<Expr>,
    },
    If {
        cond: Box<Expr>,
        then: Box<Expr>,
        els: Box<Expr>,
    },
    Block {
        stmts: Vec<Stmt>,
        result: Box<Expr>,
    },
    Tuple(Vec<Expr>),
    Field(Box<Expr>, u32),
    /// A tensor literal: nested arrays of scalars with the given shape.
    ArrayLit {
        shape: Vec<usize>,
        elems: Vec<Expr>,
    },
    /// A `String` built from text and formatted values (interpolation).
    Format(Vec<FmtPart>),
    /// Prints the values on one line; `Unit`.
    Print(Vec<Expr>),
    /// Returns `Error::Assert` with `message` (a `Str`) when `cond` is
    /// false; `Unit`.
    Assert {
        cond: Box<Expr>,
        message: Box<Expr>,
    },
    /// A tensor of `body` for every iteration of the steps (loops,
    /// bindings and guards, outermost first; a false guard skips the rest
    /// of that iteration): rank 1 for a scalar body; for a tensor body of
    /// shape `elem_shape` (the same at every iteration), the elements
    /// stacked along a new first axis.
    Collect {
        steps: Vec<CollectStep>,
        body: Box<Expr>,
        elem_shape: Vec<Dim>,
    },
    /// The length of axis `axis` of a tensor variable, as `i64`.
    Len {
        tensor: VarId,
        axis: usize,
    },
    /// A jagged array of these rows (rank-1 tensors).
    JaggedLit {
        rows: Vec<Expr>,
    },
    /// Row `index` of a jagged array variable, as a rank-1 tensor, or
    /// character `index` of a string variable, as a string; an index
    /// without a row or character is an error.
    JaggedRow {
        jagged: VarId,
        index: Box<Expr>,
    },
    /// `op(value, arg)` with `arg` an integer vector: a dynamic-rank
    /// tensor with the elements of `value` (an error when the extents or
    /// axes do not fit).
    DynShape {
        op: DynShapeOp,
        value: Box<Expr>,
        arg: Box<Expr>,
    },
    /// The shape of a dynamic-rank tensor variable, as an `i64` vector.
    ShapeOf {
        tensor: VarId,
    },
    /// Reads a `.npy` file (`path` is a `Str`) as this expression's tensor
    /// type; each `Some` extent is checked.
    LoadNpy {
        path: Box<Expr>,
        extents: Vec<Option<Dim>>,
    },
    /// A checked conversion of a tensor to this expression's tensor type:
    /// the rank (for a dynamic-rank value) and each `Some` extent are
    /// checked; `target` is the type as written, for the error.
    ShapeCast {
        value: Box<Expr>,
        target: String,
        extents: Vec<Option<Dim>>,
    },
    /// Writes a tensor to a `.npy` file; `Unit`.
    SaveNpy {
        path: Box<Expr>,
        value: Box<Expr>,
    },
    /// Elementwise over tensors whose shape is known only at run time: each
    /// of `inputs` (tensors of dynamic or static rank, checked to have one
    /// shape) is read element by element into the scalar variable of
    /// `elems`, and `body`, a scalar expression of them, gives the element
    /// of the result, a dynamic-rank tensor of `body`'s type.
    DynMap {
        inputs: Vec<Expr>,
        elems: Vec<VarId>,
        body: Box<Expr>,
    },
    /// A file-system or path function (`std::io::read_file`, ...).
    Fs {
        op: FsOp,
        args: Vec<Expr>,
    },
}

/// One step of a `Collect`.
#[derive(Clone, Debug, PartialEq)]
pub enum CollectStep {
    Loop(Loop),
    Where(WhereEntry),
}

/// A piece of a `Format`.
#[derive(Clone, Debug, PartialEq)]
pub enum FmtPart {
    Text(String),
    /// A value formatted like the seed implementation prints it, with an
    /// optional number of decimals.
    Value(Expr, Option<u32>),
}
