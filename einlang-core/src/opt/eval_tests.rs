//! Optimized against unoptimized loop IR on random programs: a small
//! interpreter of the float subset of the IR runs both on random inputs.
//!
//! The programs are row pipelines over `x: [f64; N, C]`: definitions over
//! `[n, c]` and `[n]` built from earlier ones, row reductions (`sum`,
//! `max`, `min`) whose bodies hold further reductions (invariant in their
//! loops or not), repeated terms, reads at another row, and definitions
//! read once or several times, so that `hoist` (motion and sharing),
//! `inline` and `rows` (members, shared terms) all fire. The passes move
//! and share computations but never reorder a reduction's terms, so the
//! results must be identical.

use std::collections::HashMap;

use proptest::prelude::*;

use crate::base::ops::{BinOp, RedOp, UnOp};
use crate::ir::{EntryCheck, Expr, ExprKind, Function, Literal, Stmt, TensorDef, VarId, WhereEntry};
use crate::test_support::lowered;

/// A row-major tensor of `f64`.
#[derive(Clone, Debug, PartialEq)]
struct Tensor {
    shape: Vec<usize>,
    data: Vec<f64>,
}

#[derive(Clone, Debug, PartialEq)]
enum Val {
    S(f64),
    T(Tensor),
}

struct Interp<'a> {
    f: &'a Function,
    env: HashMap<VarId, Val>,
}

impl Interp<'_> {
    fn scalar(&self, v: VarId) -> f64 {
        match self.env.get(&v) {
            Some(Val::S(x)) => *x,
            other => panic!("{} is {other:?}", self.f.var(v).name),
        }
    }

    fn dim(&self, d: &crate::base::dim::Dim) -> i64 {
        d.eval(&|v| Some(self.scalar(VarId(v.0)) as i64)).expect("a dimension of known variables")
    }

    fn stmts(&mut self, stmts: &[Stmt]) {
        for s in stmts {
            match s {
                Stmt::Let { var, value } => {
                    let v = self.expr(value);
                    self.env.insert(*var, Val::S(v));
                }
                Stmt::Tensor(def) => {
                    let t = self.tensor(def, &[]);
                    self.env.insert(def.var, Val::T(t));
                }
                Stmt::Rows(rows) => {
                    let t = self.tensor(&rows.def, &rows.prelude);
                    self.env.insert(rows.def.var, Val::T(t));
                }
                // A GEMM by its reference loops; a reshape keeps the data.
                Stmt::Gemm(g) => {
                    let t = self.tensor(&g.reference, &[]);
                    self.env.insert(g.out, Val::T(t));
                }
                Stmt::Reshape { var, source, dims, .. } => {
                    let Some(Val::T(t)) = self.env.get(source).cloned() else { panic!("reshape of a non-tensor") };
                    let shape: Vec<usize> = dims.iter().map(|d| self.dim(d).max(0) as usize).collect();
                    assert_eq!(shape.iter().product::<usize>(), t.data.len(), "reshape to {shape:?}");
                    self.env.insert(*var, Val::T(Tensor { shape, data: t.data }));
                }
                other => panic!("statement {other:?} outside the tested subset"),
            }
        }
    }

    /// The points of `def` in row-major order; `prelude` runs after each
    /// index of the first axis is bound.
    fn tensor(&mut self, def: &TensorDef, prelude: &[Stmt]) -> Tensor {
        let ranges: Vec<(i64, i64)> = def.axes.iter().map(|a| (self.dim(&a.start), self.dim(&a.extent))).collect();
        let shape: Vec<usize> = ranges.iter().map(|r| r.1.max(0) as usize).collect();
        let len: usize = shape.iter().product();
        let mut data = Vec::with_capacity(len);
        let mut point = vec![0usize; shape.len()];
        for flat in 0..len {
            let mut rest = flat;
            for a in (0..shape.len()).rev() {
                point[a] = rest % shape[a];
                rest /= shape[a];
            }
            for (a, axis) in def.axes.iter().enumerate() {
                self.env.insert(axis.index, Val::S((ranges[a].0 + point[a] as i64) as f64));
            }
            if !prelude.is_empty() && point[1..].iter().all(|&p| p == 0) {
                self.stmts(prelude);
            }
            data.push(self.expr(&def.body));
        }
        Tensor { shape, data }
    }

    fn expr(&mut self, e: &Expr) -> f64 {
        match &e.kind {
            ExprKind::Lit(Literal::Float(s)) => s.parse().expect("a float literal"),
            ExprKind::Lit(Literal::Int(i)) => *i as f64,
            ExprKind::Lit(Literal::Bool(b)) => f64::from(u8::from(*b)),
            ExprKind::Var(v) => self.scalar(*v),
            ExprKind::Dim(d) => self.dim(d) as f64,
            ExprKind::Cast(x, _) => self.expr(x),
            ExprKind::Unary(UnOp::Neg, x) => -self.expr(x),
            ExprKind::Binary(op, a, b) => {
                let (a, b) = (self.expr(a), self.expr(b));
                match op {
                    BinOp::Add => a + b,
                    BinOp::Sub => a - b,
                    BinOp::Mul => a * b,
                    BinOp::Div => a / b,
                    BinOp::Lt => f64::from(u8::from(a < b)),
                    BinOp::Gt => f64::from(u8::from(a > b)),
                    other => panic!("operator {other:?} outside the tested subset"),
                }
            }
            ExprKind::Intrinsic(i, args) => {
                let xs: Vec<f64> = args.iter().map(|a| self.expr(a)).collect();
                match (i.name(), xs.as_slice()) {
                    ("exp", [x]) => x.exp(),
                    ("tanh", [x]) => x.tanh(),
                    ("max", [x, y]) => x.max(*y),
                    ("min", [x, y]) => x.min(*y),
                    other => panic!("intrinsic {other:?} outside the tested subset"),
                }
            }
            ExprKind::Read { tensor, indices, .. } => {
                let idx: Vec<usize> = indices.iter().map(|i| self.expr(i) as usize).collect();
                let Some(Val::T(t)) = self.env.get(tensor) else {
                    panic!("{} is not a tensor", self.f.var(*tensor).name)
                };
                let mut flat = 0;
                for (a, i) in idx.iter().enumerate() {
                    assert!(*i < t.shape[a], "read out of bounds");
                    flat = flat * t.shape[a] + i;
                }
                t.data[flat]
            }
            ExprKind::Reduce { op, loops, wheres, body } => {
                assert!(wheres.is_empty(), "reductions with where entries are outside the tested subset");
                let mut acc = match op {
                    RedOp::Sum => 0.0,
                    RedOp::Max => f64::NEG_INFINITY,
                    RedOp::Min => f64::INFINITY,
                    other => panic!("reduction {other:?} outside the tested subset"),
                };
                self.reduce(*op, loops, body, &mut acc);
                acc
            }
            ExprKind::Guarded { wheres, body } => {
                for w in wheres {
                    match w {
                        WhereEntry::Bind(v, x) => {
                            let x = self.expr(x);
                            self.env.insert(*v, Val::S(x));
                        }
                        WhereEntry::Guard(g) => {
                            if self.expr(g) == 0.0 {
                                return 0.0;
                            }
                        }
                    }
                }
                self.expr(body)
            }
            // Shared values (`opt::cse`): scalar lets, then the result.
            ExprKind::Block { stmts, result } => {
                for st in stmts {
                    let Stmt::Let { var, value } = st else { panic!("statement {st:?} outside the tested subset") };
                    let x = self.expr(value);
                    self.env.insert(*var, Val::S(x));
                }
                self.expr(result)
            }
            other => panic!("expression {other:?} outside the tested subset"),
        }
    }

    /// Adds the terms of the loop nest `loops` over `body` to `acc`, in
    /// loop order.
    fn reduce(&mut self, op: RedOp, loops: &[crate::ir::Loop], body: &Expr, acc: &mut f64) {
        let Some((l, rest)) = loops.split_first() else {
            let v = self.expr(body);
            *acc = match op {
                RedOp::Sum => *acc + v,
                RedOp::Max if v > *acc => v,
                RedOp::Min if v < *acc => v,
                _ => *acc,
            };
            return;
        };
        for i in self.dim(&l.start)..self.dim(&l.end) {
            self.env.insert(l.index, Val::S(i as f64));
            self.reduce(op, rest, body, acc);
        }
    }
}

/// Runs the function `name` of `p` on the matrix `x`.
fn run(p: &crate::ir::Program, x: &Tensor) -> Val {
    let f = &p.fns[0];
    let mut it = Interp { f, env: HashMap::new() };
    it.env.insert(f.params[0], Val::T(x.clone()));
    for e in &f.entry {
        if let EntryCheck::BindDim { dim, axis, .. } = e {
            it.env.insert(*dim, Val::S(x.shape[*axis] as f64));
        }
    }
    it.stmts(&f.body);
    match &f.result.kind {
        ExprKind::Var(v) => it.env[v].clone(),
        other => panic!("result {other:?}"),
    }
}

/// A small deterministic generator (xorshift64*).
struct Gen(u64);

impl Gen {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

/// A random expression at point `(n, col)` over the earlier matrices
/// `mats` and row vectors `vecs`; `loops` counts the reduction variables
/// in use (named `k0`, `k1`, ...).
fn expr(g: &mut Gen, depth: u32, col: &str, mats: &[String], vecs: &[String], loops: usize) -> String {
    if depth == 0 || g.below(3) == 0 {
        return match g.below(6) {
            0 => format!("{}.5f64", g.below(3)),
            1 | 2 => {
                let m = g.below(mats.len() as u64 + 1) as usize;
                let t = if m == mats.len() { "x" } else { &mats[m] };
                // Now and then a read at another row.
                if g.below(8) == 0 {
                    format!("{t}[0, {col}]")
                } else {
                    format!("{t}[n, {col}]")
                }
            }
            3 if !vecs.is_empty() => format!("{}[n]", vecs[g.below(vecs.len() as u64) as usize]),
            _ => format!("x[n, {col}]"),
        };
    }
    match g.below(7) {
        0 => {
            format!("({} + {})", expr(g, depth - 1, col, mats, vecs, loops), expr(g, depth - 1, col, mats, vecs, loops))
        }
        1 => {
            format!("({} - {})", expr(g, depth - 1, col, mats, vecs, loops), expr(g, depth - 1, col, mats, vecs, loops))
        }
        2 => {
            format!("({} * {})", expr(g, depth - 1, col, mats, vecs, loops), expr(g, depth - 1, col, mats, vecs, loops))
        }
        3 => format!("std::math::tanh({})", expr(g, depth - 1, col, mats, vecs, loops)),
        4 => format!("std::math::exp(std::math::tanh({}))", expr(g, depth - 1, col, mats, vecs, loops)),
        _ => {
            // A row reduction; its body reads the row at its own variable,
            // or (invariant) at the enclosing column.
            let k = format!("k{loops}");
            let op = ["sum", "max", "min"][g.below(3) as usize];
            let at = if g.below(4) == 0 { col.to_string() } else { k.clone() };
            format!("{op}[{k} in 0..C]({})", expr(g, depth - 1, &at, mats, vecs, loops + 1))
        }
    }
}

/// A random program of `count` definitions; the last is a matrix and the
/// result.
fn program(seed: u64, count: usize) -> String {
    let mut g = Gen(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let (mut mats, mut vecs) = (Vec::new(), Vec::new());
    let mut body = String::new();
    for d in 0..count {
        let last = d + 1 == count;
        if !last && g.below(3) == 0 {
            let op = ["sum", "max", "min"][g.below(3) as usize];
            let e = expr(&mut g, 3, "k", &mats, &vecs, 1);
            body.push_str(&format!("    let v{d}[n] = {op}[k in 0..C](x[n, k] + {e});\n"));
            vecs.push(format!("v{d}"));
        } else if g.below(3) == 0 {
            // Where-bindings, the second reading the first (through a
            // reduction or not), used once or twice.
            let (e0, e1) = (expr(&mut g, 3, "c", &mats, &vecs, 0), expr(&mut g, 3, "k0", &mats, &vecs, 1));
            let op = ["sum", "max", "min"][g.below(3) as usize];
            let value = ["w0 * w1", "w1 + w0 * w0", "w1"][g.below(3) as usize];
            body.push_str(&format!(
                "    let m{d}[n, c] = x[n, c] + {value} where w0 = {e0}, w1 = {op}[k0 in 0..C](w0 + {e1});\n"
            ));
            mats.push(format!("m{d}"));
        } else {
            let e = expr(&mut g, 4, "c", &mats, &vecs, 0);
            body.push_str(&format!("    let m{d}[n, c] = x[n, c] + {e};\n"));
            mats.push(format!("m{d}"));
        }
    }
    let result = mats.last().cloned().unwrap_or_else(|| "x".to_string());
    format!("pub fn p(x: [f64; N, C]) -> [f64; N, C] {{\n{body}    {result}\n}}")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn optimized_programs_compute_the_same_values(seed in 0u64..1_000_000, count in 1usize..6, n in 1usize..4, c in 1usize..5) {
        let src = program(seed, count);
        let before = lowered(&src);
        let after = match super::optimize(before.clone()) {
            Ok(p) => p,
            Err(e) => panic!("{e}\n{src}"),
        };
        let mut g = Gen(seed | 1);
        let data = (0..n * c).map(|_| g.below(2000) as f64 / 1000.0 - 1.0).collect();
        let x = Tensor { shape: vec![n, c], data };
        let (want, got) = (run(&before, &x), run(&after, &x));
        prop_assert_eq!(
            &got,
            &want,
            "{}\nbefore:\n{}\nafter:\n{}",
            src,
            crate::ir::pretty::pretty_program(&before),
            crate::ir::pretty::pretty_program(&after)
        );
    }
}

/// The generator exercises every pass: over a few hundred programs, some
/// are changed by each of `hoist` (temporaries, shared reductions),
/// `inline` and `rows` (row preludes, shared terms).
#[test]
fn random_programs_exercise_every_pass() {
    let (mut hoisted, mut inlined, mut fused, mut shared) = (0, 0, 0, 0);
    for seed in 0..300 {
        let src = program(seed, 1 + (seed % 5) as usize);
        let before = crate::ir::pretty::pretty_program(&lowered(&src));
        let after = |pass: fn(&mut Function)| {
            let mut p = lowered(&src);
            p.fns.iter_mut().for_each(pass);
            crate::ir::pretty::pretty_program(&p)
        };
        hoisted += usize::from(after(super::hoist::run).contains("_red"));
        inlined += usize::from(after(super::inline::run) != before);
        let all = crate::ir::pretty::pretty_program(&super::optimize(lowered(&src)).expect("valid"));
        fused += usize::from(all.contains("rows of"));
        shared += usize::from(all.contains("_term"));
    }
    assert!(hoisted > 10 && inlined > 10 && fused > 10 && shared > 0, "{hoisted} {inlined} {fused} {shared}");
}
