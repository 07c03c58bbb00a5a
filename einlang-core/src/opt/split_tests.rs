//! `split` against the clause it splits, on random clauses: every point of
//! the clause is computed by exactly one piece, with the value the clause's
//! branches give there, for every value of the symbolic extents; no piece
//! writes a point the clause did not.
//!
//! The clause runs over `t` (a sequential loop over `0..T`, covered from
//! `a` to `b`) and `i` (its own loop from `lo` to `hi`), the ends
//! mentioning `T` and `N`. Its value is a tree of `if`s whose conditions
//! are comparisons of `t` and `i` (coefficient 1 or -1, offsets, bounds in
//! `N` and `T`, or both indices at once, which do not split), under `!`,
//! `&&` and `||`; its leaves are distinct numbers, some plus a sum over a
//! loop of their own (which a duplicated piece must rename).

use std::collections::HashMap;

use proptest::prelude::*;

use crate::base::dim::{Dim, DimVar};
use crate::base::ops::{BinOp, RedOp, UnOp};
use crate::base::scalar::ScalarKind;
use crate::ir::{
    Cover, EntryCheck, Expr, ExprKind, Function, Literal, Loop, Program, RecClause, RecIndex, Recurrence, Repr, Stmt,
    VarId, VarInfo,
};

const T: VarId = VarId(0);
const N: VarId = VarId(1);
const TV: VarId = VarId(2);
const IV: VarId = VarId(3);
const X: VarId = VarId(4);
/// A parameter whose shape binds `T` and `N` (extents: never negative).
const SHAPE: VarId = VarId(5);

fn int() -> Repr {
    Repr::Scalar(ScalarKind::I64)
}

fn lit(n: i64) -> Expr {
    Expr { kind: ExprKind::Lit(Literal::Int(n.into())), ty: int() }
}

fn var(v: VarId) -> Expr {
    Expr { kind: ExprKind::Var(v), ty: int() }
}

fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
    let ty = if op.is_comparison() || matches!(op, BinOp::And | BinOp::Or) {
        Repr::Scalar(ScalarKind::Bool)
    } else {
        a.ty.clone()
    };
    Expr { kind: ExprKind::Binary(op, Box::new(a), Box::new(b)), ty }
}

fn sym(v: VarId) -> Dim {
    Dim::var(DimVar(v.0))
}

/// A symbolic end: `base + c` with `base` one of 0, `T`, `N`.
#[derive(Clone, Copy, Debug)]
struct End(u8, i64);

impl End {
    fn dim(self) -> Dim {
        match self.0 {
            0 => Dim::constant(self.1),
            1 => sym(T).add_const(self.1),
            _ => sym(N).add_const(self.1),
        }
    }
}

fn end() -> impl Strategy<Value = End> {
    (0u8..3, -2i64..3).prop_map(|(b, c)| End(b, c))
}

/// One side of a comparison: `coef * index + c` or a bound.
#[derive(Clone, Debug)]
enum Cond {
    /// `side(index, negated, offset) op end`, or swapped.
    Cmp {
        index: bool,
        negated: bool,
        offset: i64,
        op: BinOp,
        bound: End,
        swapped: bool,
    },
    /// `t op i`: both indices, no split.
    Both(BinOp),
    Not(Box<Cond>),
    And(Box<Cond>, Box<Cond>),
    Or(Box<Cond>, Box<Cond>),
}

fn comparison() -> impl Strategy<Value = BinOp> {
    prop_oneof![Just(BinOp::Lt), Just(BinOp::Le), Just(BinOp::Gt), Just(BinOp::Ge), Just(BinOp::Eq), Just(BinOp::Ne)]
}

fn cond() -> impl Strategy<Value = Cond> {
    let leaf = prop_oneof![
        6 => (any::<bool>(), any::<bool>(), -2i64..3, comparison(), end(), any::<bool>()).prop_map(
            |(index, negated, offset, op, bound, swapped)| Cond::Cmp { index, negated, offset, op, bound, swapped }
        ),
        1 => comparison().prop_map(Cond::Both),
    ];
    leaf.prop_recursive(2, 6, 2, |inner| {
        prop_oneof![
            inner.clone().prop_map(|c| Cond::Not(Box::new(c))),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Cond::And(Box::new(a), Box::new(b))),
            (inner.clone(), inner).prop_map(|(a, b)| Cond::Or(Box::new(a), Box::new(b))),
        ]
    })
}

#[derive(Clone, Debug)]
enum Body {
    /// A number, with a sum over its own loop when `true`.
    Leaf(bool),
    If(Cond, Box<Body>, Box<Body>),
}

fn body() -> impl Strategy<Value = Body> {
    any::<bool>().prop_map(Body::Leaf).prop_recursive(3, 8, 2, |inner| {
        (cond(), inner.clone(), inner).prop_map(|(c, a, b)| Body::If(c, Box::new(a), Box::new(b)))
    })
}

struct Build {
    vars: Vec<VarInfo>,
    leaves: i64,
}

impl Build {
    fn new_var(&mut self, name: &str, ty: Repr) -> VarId {
        self.vars.push(VarInfo { name: name.to_string(), source_name: name.to_string(), ty });
        VarId(self.vars.len() as u32 - 1)
    }

    fn cond(&self, c: &Cond) -> Expr {
        match c {
            Cond::Cmp { index, negated, offset, op, bound, swapped } => {
                let v = var(if *index { IV } else { TV });
                let side = if *negated { bin(BinOp::Sub, lit(*offset), v) } else { bin(BinOp::Add, v, lit(*offset)) };
                let bound = Expr { kind: ExprKind::Dim(bound.dim()), ty: int() };
                if *swapped {
                    bin(*op, bound, side)
                } else {
                    bin(*op, side, bound)
                }
            }
            Cond::Both(op) => bin(*op, var(TV), var(IV)),
            Cond::Not(c) => {
                Expr { kind: ExprKind::Unary(UnOp::Not, Box::new(self.cond(c))), ty: Repr::Scalar(ScalarKind::Bool) }
            }
            Cond::And(a, b) => bin(BinOp::And, self.cond(a), self.cond(b)),
            Cond::Or(a, b) => bin(BinOp::Or, self.cond(a), self.cond(b)),
        }
    }

    fn body(&mut self, b: &Body) -> Expr {
        match b {
            Body::Leaf(sum) => {
                self.leaves += 1;
                let n = lit(1000 * self.leaves);
                if !sum {
                    return n;
                }
                let k = self.new_var(&format!("k{}", self.leaves), int());
                let term = bin(BinOp::Add, var(k), var(IV));
                let loops = vec![Loop { index: k, start: Dim::zero(), end: Dim::constant(3) }];
                let red = Expr {
                    kind: ExprKind::Reduce { op: RedOp::Sum, loops, wheres: Vec::new(), body: Box::new(term) },
                    ty: int(),
                };
                bin(BinOp::Add, n, red)
            }
            Body::If(c, a, b) => {
                let cond = self.cond(c);
                let (a, b) = (self.body(a), self.body(b));
                Expr { kind: ExprKind::If { cond: Box::new(cond), then: Box::new(a), els: Box::new(b) }, ty: int() }
            }
        }
    }
}

fn function(cover: (End, End), lo: End, hi: End, b: &Body) -> Function {
    let mut build = Build { vars: Vec::new(), leaves: 0 };
    let tensor = Repr::Tensor(ScalarKind::I64, 2);
    for (name, ty) in [("T", int()), ("N", int()), ("t", int()), ("i", int()), ("x", tensor.clone()), ("shape", tensor)]
    {
        build.new_var(name, ty);
    }
    let body = build.body(b);
    let clause = RecClause {
        cover: vec![Cover::Range(cover.0.dim(), cover.1.dim())],
        at: vec![RecIndex::Seq(0), RecIndex::Loop(0)],
        loops: vec![Loop { index: IV, start: lo.dim(), end: hi.dim() }],
        cost_per_point: crate::ir::cost::expr_cost(&body),
        body,
        prelude: Vec::new(),
    };
    let r = Recurrence {
        var: X,
        elem: ScalarKind::I64,
        extents: vec![sym(T), sym(N)],
        window: None,
        seq: vec![(0, Loop { index: TV, start: Dim::zero(), end: sym(T) })],
        clear_steps: false,
        wavefront: false,
        lines: false,
        clauses: vec![clause],
    };
    Function {
        name: "f".into(),
        public: true,
        export: None,
        docs: Vec::new(),
        signature: None,
        params: vec![SHAPE],
        ret: Repr::Tensor(ScalarKind::I64, 2),
        entry: vec![
            EntryCheck::BindDim { dim: T, param: SHAPE, path: Vec::new(), axis: 0 },
            EntryCheck::BindDim { dim: N, param: SHAPE, path: Vec::new(), axis: 1 },
        ],
        body: vec![Stmt::Recurrence(r)],
        result: Expr { kind: ExprKind::Var(X), ty: Repr::Tensor(ScalarKind::I64, 2) },
        vars: build.vars,
        device: None,
        shard: None,
        checkpointed: None,
        spans: Default::default(),
    }
}

/// The value of an integer or boolean expression (booleans as 0 and 1).
fn eval(e: &Expr, env: &mut HashMap<VarId, i64>) -> i64 {
    match &e.kind {
        ExprKind::Lit(Literal::Int(n)) => i64::try_from(*n).expect("a small literal"),
        ExprKind::Var(v) => env[v],
        ExprKind::Dim(d) => dim(d, env),
        ExprKind::Unary(UnOp::Not, x) => 1 - eval(x, env),
        ExprKind::Binary(op, a, b) => {
            let (a, b) = (eval(a, env), eval(b, env));
            match op {
                BinOp::Add => a + b,
                BinOp::Sub => a - b,
                BinOp::Lt => i64::from(a < b),
                BinOp::Le => i64::from(a <= b),
                BinOp::Gt => i64::from(a > b),
                BinOp::Ge => i64::from(a >= b),
                BinOp::Eq => i64::from(a == b),
                BinOp::Ne => i64::from(a != b),
                BinOp::And => a & b,
                BinOp::Or => a | b,
                other => panic!("no {other:?} in these clauses"),
            }
        }
        ExprKind::If { cond, then, els } => {
            if eval(cond, env) != 0 {
                eval(then, env)
            } else {
                eval(els, env)
            }
        }
        ExprKind::Reduce { op: RedOp::Sum, loops, body, .. } => {
            let [l] = &loops[..] else { panic!("one loop") };
            let mut acc = 0;
            for k in dim(&l.start, env)..dim(&l.end, env) {
                env.insert(l.index, k);
                acc += eval(body, env);
            }
            acc
        }
        other => panic!("no {other:?} in these clauses"),
    }
}

fn dim(d: &Dim, env: &HashMap<VarId, i64>) -> i64 {
    d.eval(&|v| env.get(&VarId(v.0)).copied()).expect("known variables")
}

/// Every point the recurrence's clauses write at `T`, `N`, with its value;
/// an error when two clauses write one point.
fn points(f: &Function, t_len: i64, n_len: i64) -> Result<HashMap<(i64, i64), i64>, String> {
    let Stmt::Recurrence(r) = &f.body[0] else { panic!("a recurrence") };
    let mut env = HashMap::from([(T, t_len), (N, n_len)]);
    let mut out = HashMap::new();
    for t in 0..t_len {
        env.insert(TV, t);
        for c in &r.clauses {
            let covered = match &c.cover[0] {
                Cover::At(n) => t == *n,
                Cover::Range(a, b) => dim(a, &env) <= t && t < dim(b, &env),
            };
            if !covered {
                continue;
            }
            let l = &c.loops[0];
            for i in dim(&l.start, &env)..dim(&l.end, &env) {
                env.insert(l.index, i);
                let value = eval(&c.body, &mut env);
                if out.insert((t, i), value).is_some() {
                    return Err(format!("({t}, {i}) written twice at T = {t_len}, N = {n_len}"));
                }
            }
        }
    }
    Ok(out)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn pieces_compute_what_the_clause_computes(
        cover in (end(), end()),
        lo in end(),
        hi in end(),
        b in body(),
    ) {
        let before = function(cover, lo, hi, &b);
        let mut after = before.clone();
        super::split::run(&mut after);
        let program = Program::new(vec![after.clone()]);
        if let Err(e) = crate::ir::validate::validate(&program) {
            panic!("invalid after split: {e}\n{}", crate::ir::pretty::pretty_program(&program));
        }
        for t_len in 0..6 {
            for n_len in 0..6 {
                let want = points(&before, t_len, n_len).expect("one clause");
                let got = points(&after, t_len, n_len);
                prop_assert_eq!(got, Ok(want), "T = {}, N = {}\n{}", t_len, n_len, crate::ir::pretty::pretty_program(&program));
            }
        }
    }
}

/// The clauses a split makes, for a border in `||` and a first step: a
/// stripe per side, clamped where the extent may be small (`N` may be 0 or
/// 1), and the interior; the first step, in a range that is never empty,
/// is a point.
#[test]
fn a_border_and_a_first_step_become_stripes_and_an_interior() {
    let ge = |op, bound| Cond::Cmp { index: true, negated: false, offset: 0, op, bound, swapped: false };
    let border = Cond::Or(Box::new(ge(BinOp::Eq, End(0, 0))), Box::new(ge(BinOp::Eq, End(2, -1))));
    let first = Cond::Cmp { index: false, negated: false, offset: 0, op: BinOp::Eq, bound: End(0, 0), swapped: false };
    let b = Body::If(
        first,
        Box::new(Body::Leaf(false)),
        Box::new(Body::If(border, Box::new(Body::Leaf(false)), Box::new(Body::Leaf(true)))),
    );
    let mut f = function((End(0, 0), End(1, 1)), End(0, 0), End(2, 0), &b);
    super::split::run(&mut f);
    let Stmt::Recurrence(r) = &f.body[0] else { panic!("a recurrence") };
    let text: Vec<String> = r
        .clauses
        .iter()
        .map(|c| {
            let show = |d: &Dim| d.display(&|v| f.vars[v.0 as usize].name.clone());
            let cover = match &c.cover[0] {
                Cover::At(n) => format!("t = {n}"),
                Cover::Range(a, b) => format!("t in {}..{}", show(a), show(b)),
            };
            let l = &c.loops[0];
            format!("{cover}, i in {}..{}", show(&l.start), show(&l.end))
        })
        .collect();
    assert_eq!(
        text,
        [
            "t = 0, i in 0..N",
            "t in 1..T + 1, i in 0..min(1, N)",
            "t in 1..T + 1, i in min(1, N)..max(N - 1, min(1, N))",
            "t in 1..T + 1, i in max(N - 1, min(1, N))..N",
        ]
    );
    assert!(r.clauses.iter().all(|c| !matches!(c.body.kind, ExprKind::If { .. })));
}

/// Edit distance written as one clause with its boundary in branches
/// compiles to the same loop IR as the three clauses written out.
#[test]
fn one_clause_with_branches_is_the_clauses_written_out() {
    let optimized = |src: &str| {
        let program = super::optimize(crate::test_support::lowered(src)).expect("valid IR");
        crate::ir::pretty::pretty_program(&program)
    };
    let branches = optimized(
        "use std::math::min;
        pub fn d(a: [i32; N], b: [i32; M]) -> i32 {
            let d[i in 0..N + 1, j in 0..M + 1] = if i == 0 { j as i32 } else if j == 0 { i as i32 } else {
                min(min(d[i - 1, j] + 1, d[i, j - 1] + 1), d[i - 1, j - 1] + (if a[i - 1] == b[j - 1] { 0 } else { 1 }))
            };
            d[N, M]
        }",
    );
    let clauses = optimized(
        "use std::math::min;
        pub fn d(a: [i32; N], b: [i32; M]) -> i32 {
            let d[0, j in 0..M + 1] = j as i32;
            let d[i in 1..N + 1, 0] = i as i32;
            let d[i in 1..N + 1, j in 1..M + 1] =
                min(min(d[i - 1, j] + 1, d[i, j - 1] + 1), d[i - 1, j - 1] + (if a[i - 1] == b[j - 1] { 0 } else { 1 }));
            d[N, M]
        }",
    );
    assert_eq!(branches, clauses);
}
