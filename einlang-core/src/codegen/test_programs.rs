//! Hand-built loop IR for the code generation snapshots (`tests`): the
//! builders (`Vars`, `expr`, `read`, `tensor`, ...) and the programs they
//! make, each a function the snapshots print and compile.
//!
//! Only `crate::` paths are used here, so the builders can be reused by
//! out-of-tree harnesses that compile and run the generated code.

use crate::base::dim::{Dim, DimVar};
use crate::base::intrinsic::Intrinsic;
use crate::base::ops::{BinOp, RedOp, UnOp};
use crate::base::scalar::ScalarKind;
use crate::ir::{
    Axis, EntryCheck, Expr, ExprKind, FuncId, Function, Literal, Loop, Program, Repr, Stmt, TensorDef, VarId, VarInfo,
    WhereEntry,
};

// ----- IR builders ---------------------------------------------------------

/// Keeps `rust`, the code printed for the running test's program, as a
/// file of `einlang-core/tests/codegen_samples/` named after the test: the facade's `tests/codegen_samples.rs` compiles every
/// one with rustc, so a snapshot that parses but would not type-check
/// fails there.
pub(super) fn compilable_sample(rust: &str) {
    let thread = std::thread::current();
    let test = thread.name().and_then(|n| n.rsplit("::").next()).unwrap_or("main");
    let path = format!("../../tests/codegen_samples/{test}.rs");
    expect_test::expect_file![path].assert_eq(rust);
}

pub(super) const F32: ScalarKind = ScalarKind::F32;
pub(super) const I64: ScalarKind = ScalarKind::I64;

/// Declares the variables of one function.
#[derive(Default)]
pub(crate) struct Vars {
    vars: Vec<VarInfo>,
}

impl Vars {
    pub(super) fn var(&mut self, name: &str, ty: Repr) -> VarId {
        self.vars.push(VarInfo { name: name.to_string(), source_name: name.to_string(), ty });
        VarId(self.vars.len() as u32 - 1)
    }

    pub(super) fn tensor(&mut self, name: &str, k: ScalarKind, rank: usize) -> VarId {
        self.var(name, Repr::Tensor(k, rank))
    }

    /// An `i64` variable: a dimension, an index, an extent.
    pub(super) fn int(&mut self, name: &str) -> VarId {
        self.var(name, Repr::Scalar(I64))
    }

    pub(super) fn get(&self, v: VarId) -> Expr {
        expr(ExprKind::Var(v), self.vars[v.0 as usize].ty.clone())
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn finish(
        self,
        name: &str,
        params: Vec<VarId>,
        ret: Repr,
        entry: Vec<EntryCheck>,
        body: Vec<Stmt>,
        result: Expr,
    ) -> Function {
        Function {
            export: None,
            name: name.to_string(),
            public: true,
            docs: Vec::new(),
            signature: None,
            params,
            ret,
            entry,
            body,
            result,
            vars: self.vars,
            device: None,
            shard: None,
            checkpointed: None,
            spans: Default::default(),
        }
    }
}

pub(super) fn expr(kind: ExprKind, ty: Repr) -> Expr {
    Expr { kind, ty }
}

pub(super) fn dim(v: VarId) -> Dim {
    Dim::var(DimVar(v.0))
}

pub(super) fn konst(n: i64) -> Dim {
    Dim::constant(n)
}

pub(super) fn ix(v: VarId) -> Expr {
    expr(ExprKind::Var(v), Repr::Scalar(I64))
}

pub(super) fn int(v: i128, k: ScalarKind) -> Expr {
    expr(ExprKind::Lit(Literal::Int(v)), Repr::Scalar(k))
}

pub(super) fn float(text: &str, k: ScalarKind) -> Expr {
    expr(ExprKind::Lit(Literal::Float(text.to_string())), Repr::Scalar(k))
}

pub(super) fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
    let ty = if op.is_comparison() || op.is_logical() { Repr::Scalar(ScalarKind::Bool) } else { a.ty.clone() };
    expr(ExprKind::Binary(op, Box::new(a), Box::new(b)), ty)
}

pub(super) fn read(t: VarId, k: ScalarKind, indices: Vec<Expr>, checked: bool) -> Expr {
    expr(ExprKind::Read { tensor: t, indices, checked }, Repr::Scalar(k))
}

pub(super) fn intrinsic(i: Intrinsic, args: Vec<Expr>) -> Expr {
    let ty = args[0].ty.clone();
    expr(ExprKind::Intrinsic(i, args), ty)
}

pub(super) fn reduce(op: RedOp, loops: Vec<Loop>, wheres: Vec<WhereEntry>, body: Expr) -> Expr {
    let ty = match op {
        RedOp::ArgMax | RedOp::ArgMin => Repr::Scalar(I64),
        RedOp::All | RedOp::Any => Repr::Scalar(ScalarKind::Bool),
        _ => body.ty.clone(),
    };
    expr(ExprKind::Reduce { op, loops, wheres, body: Box::new(body) }, ty)
}

pub(super) fn range(index: VarId, start: Dim, end: Dim) -> Loop {
    Loop { index, start, end }
}

pub(super) fn axis(index: VarId, start: Dim, extent: Dim) -> Axis {
    Axis { index, start, extent }
}

pub(super) fn tensor(var: VarId, elem: ScalarKind, axes: Vec<Axis>, body: Expr, cost_per_point: u64) -> Stmt {
    Stmt::Tensor(TensorDef { var, elem, axes, body, cost_per_point, domain_guards: 0 })
}

pub(super) fn bind(dim: VarId, param: VarId, axis: usize) -> EntryCheck {
    EntryCheck::BindDim { dim, param, path: Vec::new(), axis }
}

pub(super) fn check_dim(param: VarId, axis: usize, symbol: &str, expected: Dim) -> EntryCheck {
    EntryCheck::CheckDim { param, path: Vec::new(), axis, symbol: symbol.to_string(), expected }
}

// ----- programs ------------------------------------------------------------

/// `matmul(a: [f32; M, K], b: [f32; K, N]) -> [f32; M, N]`
pub(crate) fn matmul() -> Program {
    let mut v = Vars::default();
    let (a, b) = (v.tensor("a", F32, 2), v.tensor("b", F32, 2));
    let (m, k_dim, n) = (v.int("M"), v.int("K"), v.int("N"));
    let (c, i, j, k) = (v.tensor("c", F32, 2), v.int("i"), v.int("j"), v.int("k"));
    let body = reduce(
        RedOp::Sum,
        vec![range(k, konst(0), dim(k_dim))],
        vec![],
        bin(BinOp::Mul, read(a, F32, vec![ix(i), ix(k)], false), read(b, F32, vec![ix(k), ix(j)], false)),
    );
    let result = v.get(c);
    let mut f = v.finish(
        "matmul",
        vec![a, b],
        Repr::Tensor(F32, 2),
        vec![bind(m, a, 0), bind(k_dim, a, 1), bind(n, b, 1), check_dim(b, 0, "K", dim(k_dim))],
        vec![tensor(c, F32, vec![axis(i, konst(0), dim(m)), axis(j, konst(0), dim(n))], body, 3)],
        result,
    );
    f.docs = vec![" Plain matrix product.".to_string()];
    Program::new(vec![f])
}

/// `upper_relu(m: [f32; N, N]) -> [f32; N, N]`:
/// `u[i, j] = max(z, 0.0) where z = m[i, j], i <= j`
pub(crate) fn upper_relu() -> Program {
    let mut v = Vars::default();
    let mat = v.tensor("m", F32, 2);
    let n = v.int("N");
    let (u, i, j, z) = (v.tensor("u", F32, 2), v.int("i"), v.int("j"), v.var("z", Repr::Scalar(F32)));
    let body = expr(
        ExprKind::Guarded {
            wheres: vec![
                WhereEntry::Bind(z, read(mat, F32, vec![ix(i), ix(j)], false)),
                WhereEntry::Guard(bin(BinOp::Le, ix(i), ix(j))),
            ],
            body: Box::new(intrinsic(Intrinsic::Max, vec![v.get(z), float("0.0", F32)])),
        },
        Repr::Scalar(F32),
    );
    let result = v.get(u);
    let f = v.finish(
        "upper_relu",
        vec![mat],
        Repr::Tensor(F32, 2),
        vec![bind(n, mat, 0), check_dim(mat, 1, "N", dim(n))],
        vec![tensor(u, F32, vec![axis(i, konst(0), dim(n)), axis(j, konst(0), dim(n))], body, 2)],
        result,
    );
    Program::new(vec![f])
}

/// `sum_sq(x: [f32; N]) -> f32` and `norm(x: [f32; N]) -> f32`, which
/// calls it: a scalar result, a call, integer division, a cast.
pub(crate) fn norm() -> Program {
    let sum_sq = {
        let mut v = Vars::default();
        let x = v.tensor("x", F32, 1);
        let n = v.int("N");
        let i = v.int("i");
        let sq = intrinsic(Intrinsic::Powi, vec![read(x, F32, vec![ix(i)], false), int(2, ScalarKind::I32)]);
        let result = reduce(RedOp::Sum, vec![range(i, konst(0), dim(n))], vec![], sq);
        v.finish("sum_sq", vec![x], Repr::Scalar(F32), vec![bind(n, x, 0)], vec![], result)
    };
    let norm = {
        let mut v = Vars::default();
        let x = v.tensor("x", F32, 1);
        let n = v.int("N");
        let (s, half) = (v.var("s", Repr::Scalar(F32)), v.int("half"));
        let call = expr(ExprKind::Call { func: FuncId(0), args: vec![v.get(x)] }, Repr::Scalar(F32));
        let halved = bin(BinOp::Div, expr(ExprKind::Dim(dim(n)), Repr::Scalar(I64)), int(2, I64));
        let scale = expr(ExprKind::Cast(Box::new(v.get(half)), F32), Repr::Scalar(F32));
        let result = bin(BinOp::Div, intrinsic(Intrinsic::Sqrt, vec![v.get(s)]), scale);
        let mut f = v.finish(
            "norm",
            vec![x],
            Repr::Scalar(F32),
            vec![bind(n, x, 0)],
            vec![Stmt::Let { var: s, value: call }, Stmt::Let { var: half, value: halved }],
            result,
        );
        f.public = false;
        f
    };
    Program::new(vec![sum_sq, norm])
}

/// `every_other(x: [f32; N], m: i64) -> [f32; m]`: `y[i in 0..m] = x[2 * i]`,
/// a read the compiler could not prove in bounds, over an extent given by a
/// parameter (checked non-negative at run time).
pub(crate) fn every_other() -> Program {
    let mut v = Vars::default();
    let (x, m) = (v.tensor("x", F32, 1), v.int("m"));
    let n = v.int("N");
    let (y, i) = (v.tensor("y", F32, 1), v.int("i"));
    let body = read(x, F32, vec![bin(BinOp::Mul, int(2, I64), ix(i))], true);
    let result = v.get(y);
    let f = v.finish(
        "every_other",
        vec![x, m],
        Repr::Tensor(F32, 1),
        vec![bind(n, x, 0)],
        vec![tensor(y, F32, vec![axis(i, konst(0), dim(m))], body, 1)],
        result,
    );
    Program::new(vec![f])
}

/// `conv1d(x: [f32; N], w: [f32; K]) -> [f32; N - K + 1]`: an extent checked
/// at run time, a rank-1 parallel definition, affine reads.
pub(crate) fn conv1d() -> Program {
    let mut v = Vars::default();
    let (x, w) = (v.tensor("x", F32, 1), v.tensor("w", F32, 1));
    let (n, k) = (v.int("N"), v.int("K"));
    let len = v.int("len_t");
    let (y, t, r) = (v.tensor("y", F32, 1), v.int("t"), v.int("r"));
    let body = reduce(
        RedOp::Sum,
        vec![range(r, konst(0), dim(k))],
        vec![],
        bin(BinOp::Mul, read(x, F32, vec![bin(BinOp::Add, ix(t), ix(r))], false), read(w, F32, vec![ix(r)], false)),
    );
    let result = v.get(y);
    let f = v.finish(
        "conv1d",
        vec![x, w],
        Repr::Tensor(F32, 1),
        vec![bind(n, x, 0), bind(k, w, 0)],
        vec![
            Stmt::Extent { var: len, value: dim(n).sub(&dim(k)).add_const(1), what: "N - K + 1".to_string() },
            tensor(y, F32, vec![axis(t, konst(0), dim(len))], body, 2),
            Stmt::CheckResultDim {
                tensor: y,
                path: Vec::new(),
                axis: 0,
                symbol: "N - K + 1".to_string(),
                declared: dim(n).sub(&dim(k)).add_const(1),
            },
        ],
        result,
    );
    Program::new(vec![f])
}

/// `shift3(x: [f64; B, M, N]) -> [f64; B, M - 1, N]`: rank 3 (chunked rows)
/// with a non-zero start on the middle axis.
pub(crate) fn shift3() -> Program {
    let mut v = Vars::default();
    let x = v.tensor("x", ScalarKind::F64, 3);
    let (b_dim, m, n) = (v.int("B"), v.int("M"), v.int("N"));
    let (y, b, i, j) = (v.tensor("y", ScalarKind::F64, 3), v.int("b"), v.int("i"), v.int("j"));
    let prev = read(x, ScalarKind::F64, vec![ix(b), bin(BinOp::Sub, ix(i), int(1, I64)), ix(j)], false);
    let here = read(x, ScalarKind::F64, vec![ix(b), ix(i), ix(j)], false);
    let body = bin(BinOp::Sub, here, prev);
    let result = v.get(y);
    let f = v.finish(
        "shift3",
        vec![x],
        Repr::Tensor(ScalarKind::F64, 3),
        vec![bind(b_dim, x, 0), bind(m, x, 1), bind(n, x, 2)],
        vec![tensor(
            y,
            ScalarKind::F64,
            vec![axis(b, konst(0), dim(b_dim)), axis(i, konst(1), dim(m).add_const(-1)), axis(j, konst(0), dim(n))],
            body,
            2,
        )],
        result,
    );
    Program::new(vec![f])
}

/// `stats(x: [f32; B, N]) -> ([i64; B], [f32; N], f32, bool)`: argmax,
/// a sub-tensor view, a guarded reduction over two loops, `all`, a tuple
/// result mixing owned tensors, views and scalars.
pub(crate) fn stats() -> Program {
    let mut v = Vars::default();
    let x = v.tensor("x", F32, 2);
    let (b_dim, n_dim) = (v.int("B"), v.int("N"));
    let (am, b, n) = (v.tensor("am", I64, 1), v.int("b"), v.int("n"));
    let row = v.tensor("first_row", F32, 1);
    let (total, b2, n2) = (v.var("total", Repr::Scalar(F32)), v.int("b2"), v.int("n2"));
    let (finite, b3, n3) = (v.var("finite", Repr::Scalar(ScalarKind::Bool)), v.int("b3"), v.int("n3"));
    let argmax =
        reduce(RedOp::ArgMax, vec![range(n, konst(0), dim(n_dim))], vec![], read(x, F32, vec![ix(b), ix(n)], false));
    let positive = bin(BinOp::Gt, read(x, F32, vec![ix(b2), ix(n2)], false), float("0.0", F32));
    let total_value = reduce(
        RedOp::Sum,
        vec![range(b2, konst(0), dim(b_dim)), range(n2, konst(0), dim(n_dim))],
        vec![WhereEntry::Guard(positive)],
        read(x, F32, vec![ix(b2), ix(n2)], false),
    );
    let small =
        bin(BinOp::Lt, intrinsic(Intrinsic::Abs, vec![read(x, F32, vec![ix(b3), ix(n3)], false)]), float("1e30", F32));
    let finite_value =
        reduce(RedOp::All, vec![range(b3, konst(0), dim(b_dim)), range(n3, konst(0), dim(n_dim))], vec![], small);
    let view = expr(ExprKind::View { tensor: x, indices: vec![int(0, I64)] }, Repr::Tensor(F32, 1));
    let ret = Repr::Tuple(vec![
        Repr::Tensor(I64, 1),
        Repr::Tensor(F32, 1),
        Repr::Scalar(F32),
        Repr::Scalar(ScalarKind::Bool),
    ]);
    let result = expr(ExprKind::Tuple(vec![v.get(am), v.get(row), v.get(total), v.get(finite)]), ret.clone());
    let f = v.finish(
        "stats",
        vec![x],
        ret,
        vec![bind(b_dim, x, 0), bind(n_dim, x, 1)],
        vec![
            tensor(am, I64, vec![axis(b, konst(0), dim(b_dim))], argmax, 1),
            Stmt::Let { var: row, value: view },
            Stmt::Let { var: total, value: total_value },
            Stmt::Let { var: finite, value: finite_value },
        ],
        result,
    );
    Program::new(vec![f])
}

/// `scalars(p: i32, q: i32, s: f64) -> (i32, f64, bool)`: integer power and
/// remainder, float literals, casts to and from `bool`, `if`, a block,
/// negation, sigmoid, a rank-0 tensor and a tensor literal.
pub(crate) fn scalars() -> Program {
    let mut v = Vars::default();
    let i32_ = ScalarKind::I32;
    let f64_ = ScalarKind::F64;
    let (p, q, s) = (v.var("p", Repr::Scalar(i32_)), v.var("q", Repr::Scalar(i32_)), v.var("s", Repr::Scalar(f64_)));
    let (r, t) = (v.var("r", Repr::Scalar(i32_)), v.var("t", Repr::Scalar(f64_)));
    let (flag, zero_d, lit) =
        (v.var("flag", Repr::Scalar(ScalarKind::Bool)), v.tensor("zero_d", f64_, 0), v.tensor("table", f64_, 2));
    let power = expr(ExprKind::Intrinsic(Intrinsic::IntPow, vec![v.get(p), int(3, i32_)]), Repr::Scalar(i32_));
    let rem = bin(BinOp::Rem, power, v.get(q));
    let neg = expr(ExprKind::Unary(UnOp::Neg, Box::new(v.get(s))), Repr::Scalar(f64_));
    let scaled = bin(BinOp::Mul, neg, float("1e-3", f64_));
    let sig = intrinsic(Intrinsic::Sigmoid, vec![scaled]);
    let big = bin(BinOp::Gt, v.get(s), float("2.5", f64_));
    let choice = expr(
        ExprKind::If { cond: Box::new(big), then: Box::new(sig), els: Box::new(float("-0.5", f64_)) },
        Repr::Scalar(f64_),
    );
    let as_bool = expr(ExprKind::Cast(Box::new(v.get(r)), ScalarKind::Bool), Repr::Scalar(ScalarKind::Bool));
    let block = expr(
        ExprKind::Block {
            stmts: vec![tensor(zero_d, f64_, vec![], v.get(t), 1)],
            result: Box::new(bin(
                BinOp::Add,
                read(zero_d, f64_, vec![], false),
                read(lit, f64_, vec![int(1, I64), int(0, I64)], false),
            )),
        },
        Repr::Scalar(f64_),
    );
    let table = expr(
        ExprKind::ArrayLit {
            shape: vec![2, 2],
            elems: vec![float("1", f64_), float("2", f64_), float("3", f64_), float("4", f64_)],
        },
        Repr::Tensor(f64_, 2),
    );
    let back = expr(ExprKind::Cast(Box::new(v.get(flag)), f64_), Repr::Scalar(f64_));
    let ret = Repr::Tuple(vec![Repr::Scalar(i32_), Repr::Scalar(f64_), Repr::Scalar(ScalarKind::Bool)]);
    let result = expr(ExprKind::Tuple(vec![v.get(r), bin(BinOp::Add, block, back), v.get(flag)]), ret.clone());
    let f = v.finish(
        "scalars",
        vec![p, q, s],
        ret,
        vec![],
        vec![
            Stmt::Let { var: r, value: rem },
            Stmt::Let { var: t, value: choice },
            Stmt::Let { var: flag, value: as_bool },
            Stmt::Let { var: lit, value: table },
        ],
        result,
    );
    Program::new(vec![f])
}

/// `pair(x: [f32; N]) -> ([f32; N], f32)`, `pick(x: [f32; N], c: bool) ->
/// [f32; N]` and `greet(s: str) -> str`: how values are borrowed, moved and
/// copied across lets, tuple fields, a tensor-valued `if` and block, calls
/// and results.
pub(crate) fn values() -> Program {
    let pair_ty = Repr::Tuple(vec![Repr::Tensor(F32, 1), Repr::Scalar(F32)]);
    let pair = {
        let mut v = Vars::default();
        let x = v.tensor("x", F32, 1);
        let result = expr(ExprKind::Tuple(vec![v.get(x), float("1.0", F32)]), pair_ty.clone());
        v.finish("pair", vec![x], pair_ty.clone(), vec![], vec![], result)
    };
    let pick = {
        let mut v = Vars::default();
        let (x, c) = (v.tensor("x", F32, 1), v.var("c", Repr::Scalar(ScalarKind::Bool)));
        let (p, q, r, z, w) = (
            v.var("p", pair_ty.clone()),
            v.tensor("q", F32, 1),
            v.tensor("r", F32, 1),
            v.tensor("z", F32, 1),
            v.tensor("w", F32, 1),
        );
        let call = expr(ExprKind::Call { func: FuncId(0), args: vec![v.get(x)] }, pair_ty.clone());
        let field_of_call = expr(ExprKind::Field(Box::new(call.clone()), 0), Repr::Tensor(F32, 1));
        let block = expr(
            ExprKind::Block { stmts: vec![Stmt::Let { var: z, value: field_of_call }], result: Box::new(v.get(z)) },
            Repr::Tensor(F32, 1),
        );
        let choice = expr(
            ExprKind::If { cond: Box::new(v.get(c)), then: Box::new(v.get(q)), els: Box::new(block) },
            Repr::Tensor(F32, 1),
        );
        let body = vec![
            Stmt::Let { var: p, value: call },
            Stmt::Let { var: q, value: expr(ExprKind::Field(Box::new(v.get(p)), 0), Repr::Tensor(F32, 1)) },
            Stmt::Let { var: r, value: choice },
            Stmt::Let { var: w, value: v.get(r) },
        ];
        let result = v.get(w);
        v.finish("pick", vec![x, c], Repr::Tensor(F32, 1), vec![], body, result)
    };
    let greet = {
        let mut v = Vars::default();
        let (s, t) = (v.var("s", Repr::Str), v.var("t", Repr::Str));
        let call = expr(ExprKind::Call { func: FuncId(2), args: vec![v.get(s)] }, Repr::Str);
        let hello = expr(ExprKind::Lit(Literal::Str("hello".to_string())), Repr::Str);
        let cond = bin(BinOp::Gt, int(1, I64), int(2, I64));
        let result =
            expr(ExprKind::If { cond: Box::new(cond), then: Box::new(v.get(t)), els: Box::new(hello) }, Repr::Str);
        v.finish("greet", vec![s], Repr::Str, vec![], vec![Stmt::Let { var: t, value: call }], result)
    };
    Program::new(vec![pair, pick, greet])
}

/// `loop(type: f32) -> f32` and `match(self: [f32; N]) -> f32`, which calls
/// it: IR names that are Rust keywords, prelude names (`Ok`) or start with
/// `__`, next to a name (`type_`) that their escaped spelling would take.
pub(crate) fn keyword_names() -> Program {
    let callee = {
        let mut v = Vars::default();
        let t = v.var("type", Repr::Scalar(F32));
        let result = bin(BinOp::Mul, v.get(t), float("2.0", F32));
        let mut f = v.finish("loop", vec![t], Repr::Scalar(F32), vec![], vec![], result);
        f.public = false;
        f
    };
    let caller = {
        let mut v = Vars::default();
        let x = v.tensor("self", F32, 1);
        let n = v.int("N");
        let (ok, hidden, plain, kw) = (
            v.var("Ok", Repr::Scalar(F32)),
            v.var("__x", Repr::Scalar(F32)),
            v.var("type_", Repr::Scalar(F32)),
            v.var("type", Repr::Scalar(F32)),
        );
        let call = expr(
            ExprKind::Call { func: FuncId(0), args: vec![read(x, F32, vec![int(0, I64)], true)] },
            Repr::Scalar(F32),
        );
        let body = vec![
            Stmt::Let { var: ok, value: call },
            Stmt::Let { var: hidden, value: v.get(ok) },
            Stmt::Let { var: plain, value: v.get(hidden) },
            Stmt::Let { var: kw, value: bin(BinOp::Add, v.get(plain), v.get(hidden)) },
        ];
        let result = v.get(kw);
        v.finish("match", vec![x], Repr::Scalar(F32), vec![bind(n, x, 0)], body, result)
    };
    Program::new(vec![callee, caller])
}
