//! Readable, deterministic text of the loop IR, for snapshot tests.
//!
//! ```text
//! /// Plain matrix product.
//! pub fn matmul(a: tensor<f32, 2>, b: tensor<f32, 2>) -> tensor<f32, 2> {
//!     bind M = a.shape[0]
//!     bind K = a.shape[1]
//!     bind N = b.shape[1]
//!     check b.shape[0] == K ("K")
//!     tensor c[i in 0..M, j in 0..N]: f32 (cost 3) = sum[k in 0..K] (read a[i, k] unchecked) * (read b[k, j] unchecked)
//!     result c
//! }
//! ```
//!
//! Variables print by their IR name; dimensions as the user would write
//! them. Operands that are not atoms are parenthesized, so the tree is
//! unambiguous without precedence rules. Blocks span several lines.

use std::fmt::Write as _;

use crate::base::dim::{Dim, DimVar};
use crate::ir::{
    Cover, EntryCheck, Expr, ExprKind, FmtPart, Function, Literal, Loop, Program, RecIndex, Recurrence, Repr, Stmt,
    TensorDef, VarId, WhereEntry,
};

/// Every function of `p`, separated by blank lines.
pub fn pretty_program(p: &Program) -> String {
    p.fns.iter().map(|f| pretty_function(p, f)).collect::<Vec<_>>().join("\n")
}

/// Function `f` of `p` (a call shows its callee's name).
pub fn pretty_function(p: &Program, f: &Function) -> String {
    let pp = Printer { p, f };
    let mut out = String::new();
    for d in &f.docs {
        let _ = writeln!(out, "///{d}");
    }
    let params: Vec<String> = f.params.iter().map(|p| format!("{}: {}", pp.var(*p), ty(pp.ty(*p)))).collect();
    let vis = if f.public { "pub " } else { "" };
    let _ = writeln!(out, "{vis}fn {}({}) -> {} {{", f.name, params.join(", "), ty(&f.ret));
    for check in &f.entry {
        let line = match check {
            EntryCheck::BindDim { dim, param, path, axis } => {
                format!("bind {} = {}{}.shape[{axis}]", pp.var(*dim), pp.var(*param), fields(path))
            }
            EntryCheck::CheckDim { param, path, axis, symbol, expected } => {
                format!("check {}{}.shape[{axis}] == {} ({symbol:?})", pp.var(*param), fields(path), pp.dim(expected))
            }
        };
        let _ = writeln!(out, "    {line}");
    }
    for s in &f.body {
        pp.stmt(&mut out, s, 1);
    }
    let _ = writeln!(out, "    result {}", pp.expr(&f.result, 1));
    out.push_str("}\n");
    out
}

/// A type: `f32`, `tensor<f32, 2>`, `(A, B)`, `str`, `()`.
pub fn ty(t: &Repr) -> String {
    match t {
        Repr::Scalar(k) => k.name().to_string(),
        Repr::Tensor(k, rank) => format!("tensor<{}, {rank}>", k.name()),
        Repr::Dyn(k) => format!("tensor<{}, *>", k.name()),
        Repr::Jagged(k) => format!("jagged<{}>", k.name()),
        Repr::Strs => "strs".to_string(),
        Repr::Tuple(items) => {
            let items: Vec<String> = items.iter().map(ty).collect();
            if items.len() == 1 {
                format!("({},)", items[0])
            } else {
                format!("({})", items.join(", "))
            }
        }
        Repr::Str => "str".to_string(),
        Repr::Unit => "()".to_string(),
    }
}

struct Printer<'a> {
    p: &'a Program,
    f: &'a Function,
}

fn indent(level: usize) -> String {
    "    ".repeat(level)
}

impl Printer<'_> {
    fn var(&self, v: VarId) -> String {
        match self.f.vars.get(v.0 as usize) {
            Some(info) => info.name.clone(),
            None => format!("?{}", v.0),
        }
    }

    fn ty(&self, v: VarId) -> &Repr {
        match self.f.vars.get(v.0 as usize) {
            Some(info) => &info.ty,
            None => &Repr::Unit,
        }
    }

    fn dim(&self, d: &Dim) -> String {
        d.display(&|v: DimVar| self.var(VarId(v.0)))
    }

    fn stmt(&self, out: &mut String, s: &Stmt, level: usize) {
        let pad = indent(level);
        let line = match s {
            Stmt::Let { var, value } => {
                format!("let {}: {} = {}", self.var(*var), ty(self.ty(*var)), self.expr(value, level))
            }
            Stmt::Extent { var, value, what } => format!("extent {} = {} ({what:?})", self.var(*var), self.dim(value)),
            Stmt::SameExtent { index, a, a_what, b, b_what } => {
                format!("same_extent {index}: {} ({a_what:?}) == {} ({b_what:?})", self.dim(a), self.dim(b))
            }
            Stmt::Tensor(def) => self.tensor(def, level),
            Stmt::Conv(c) => {
                let bias = c.bias.map(|b| format!(" + {}", self.var(b))).unwrap_or_default();
                let otherwise = match &c.otherwise {
                    Some(e) => format!(
                        "\n{pad}  when {}\n{pad}  else {}",
                        self.expr(&e.when, level + 1),
                        self.expr(&e.value, level + 1)
                    ),
                    None => String::new(),
                };
                // Strides and dilations are written when one is not 1.
                let mut window = String::new();
                for (what, (a, b)) in [("stride", &c.stride), ("dilation", &c.dilation)] {
                    if a.as_constant() != Some(1) || b.as_constant() != Some(1) {
                        window += &format!(", {what} {}, {}", self.dim(a), self.dim(b));
                    }
                }
                if c.k_axes != [0, 1, 2, 3] {
                    window += &format!(", k axes {:?}", c.k_axes);
                }
                if c.k_flip {
                    window += ", k flipped";
                }
                if c.groups.as_constant() != Some(1) {
                    window += &format!(", groups {}", self.dim(&c.groups));
                }
                if c.relu {
                    window += ", relu";
                }
                if c.out_order != [0, 1, 2, 3] {
                    window += &format!(", out order {:?}", c.out_order);
                }
                format!(
                    "conv {} = {} * {}{bias} (pad {}, {}{window}): {}\n{}  reference {}{otherwise}",
                    self.var(c.out),
                    self.var(c.x),
                    self.var(c.k),
                    self.dim(&c.pad.0),
                    self.dim(&c.pad.1),
                    c.elem.name(),
                    pad,
                    self.tensor(&c.reference, level + 1)
                )
            }
            Stmt::Gemm(g) => {
                let batch = g.batch.as_ref().map(|b| format!("batch {}, ", self.dim(b))).unwrap_or_default();
                let batch = match g.slice {
                    Some(v) => format!("{batch}one batch {}, ", self.var(v)),
                    None => batch,
                };
                let scale = g.scale.as_ref().map(|e| format!(" * {}", self.expr(e, level))).unwrap_or_default();
                format!(
                    "gemm {} = {}{:?} x {}{:?}{scale} ({batch}m {}, n {}, k {}): {}\n{}  reference {}",
                    self.var(g.out),
                    self.var(g.a),
                    g.a_axes,
                    self.var(g.b),
                    g.b_axes,
                    self.dim(&g.m),
                    self.dim(&g.n),
                    self.dim(&g.k),
                    g.elem.name(),
                    pad,
                    self.tensor(&g.reference, level + 1)
                )
            }
            Stmt::Recurrence(r) => self.recurrence(r, level),
            Stmt::Rows(rows) => {
                let first = rows.def.axes.first().map(|a| self.var(a.index)).unwrap_or_default();
                let mut text = format!("rows of {}, once per {first}:\n", self.var(rows.def.var));
                for s in &rows.prelude {
                    self.stmt(&mut text, s, level + 1);
                }
                let _ = write!(text, "{}{}", indent(level + 1), self.tensor(&rows.def, level + 1));
                text
            }
            Stmt::CheckResultDim { tensor, path, axis, symbol, declared } => {
                format!(
                    "check_result {}{}.shape[{axis}] == {} ({symbol:?})",
                    self.var(*tensor),
                    fields(path),
                    self.dim(declared)
                )
            }
            Stmt::Reshape { var, source, elem, dims } => {
                let dims: Vec<String> = dims.iter().map(|d| self.dim(d)).collect();
                format!("reshape {} = {} as [{}]: {}", self.var(*var), self.var(*source), dims.join(", "), elem.name())
            }
            Stmt::Expr(e) => format!("eval {}", self.expr(e, level)),
            Stmt::Comm(crate::ir::Comm::AllReduce { out, input, op, elem }) => {
                format!(
                    "all-reduce {} = {}({}) over ranks: {}",
                    self.var(*out),
                    op.name(),
                    self.var(*input),
                    elem.name()
                )
            }
            Stmt::Comm(crate::ir::Comm::Extend { out, input, axis, lo, hi, elem }) => format!(
                "extend {} = {} with the neighbours' rows along axis {axis}: {lo} below, {hi} above: {}",
                self.var(*out),
                self.var(*input),
                elem.name()
            ),
            Stmt::Comm(crate::ir::Comm::ExtendStart { out, input, axis, lo, hi, elem, edge }) => format!(
                "start extend {} = {} with the neighbours' rows along axis {axis}: {lo} below, {hi} above: {}, {}",
                self.var(*out),
                self.var(*input),
                elem.name(),
                if *edge == u64::MAX {
                    "the whole block".to_string()
                } else {
                    format!("{edge} block rows at either end")
                }
            ),
            Stmt::Comm(crate::ir::Comm::HaloStart { tensor, time, step, axis, lo, hi }) => format!(
                "start halo exchange of {} at axis {time} = {}, axis {axis}: {lo} rows below, {hi} above",
                self.var(*tensor),
                self.expr(step, level)
            ),
            Stmt::Comm(crate::ir::Comm::HaloWait { tensor }) => {
                format!("wait for the halo exchange of {}", self.var(*tensor))
            }
            Stmt::Comm(crate::ir::Comm::AllReduceArg { out, best, index, skip, max, elem }) => format!(
                "all-reduce {} = {}({}, {}, {}) over ranks: {}",
                self.var(*out),
                if *max { "argmax" } else { "argmin" },
                self.var(*best),
                self.var(*index),
                self.var(*skip),
                elem.name()
            ),
            Stmt::Sweep(w) => {
                let mut text = format!(
                    "sweep over {} steps in chunks of {} ({} in {}..{}), lookback {}, margin {}:\n",
                    self.dim(&w.steps),
                    self.var(w.chunk),
                    self.var(w.lo),
                    self.var(w.lo),
                    self.var(w.hi),
                    w.lookback,
                    w.margin
                );
                let _ = write!(text, "{}primal ", indent(level + 1));
                text.push_str(self.recurrence(&w.primal, level + 1).trim_end());
                text.push('\n');
                for s in &w.between {
                    self.stmt(&mut text, s, level + 1);
                }
                let _ = write!(text, "{}adjoint ", indent(level + 1));
                text.push_str(self.recurrence(&w.adjoint, level + 1).trim_end());
                text.push('\n');
                for s in &w.sums {
                    let _ = writeln!(
                        text,
                        "{}into {} per time value {} of the chunk (at offset {} within {}..{}):",
                        indent(level + 1),
                        self.var(s.total),
                        self.var(s.time),
                        s.offset,
                        self.dim(&s.full.0),
                        self.dim(&s.full.1),
                    );
                    for p in s.prelude.iter().chain([&s.part]) {
                        self.stmt(&mut text, p, level + 2);
                    }
                }
                for s in &w.after {
                    self.stmt(&mut text, s, level + 1);
                }
                text.trim_end().to_string()
            }
        };
        let _ = writeln!(out, "{pad}{line}");
    }

    fn tensor(&self, def: &TensorDef, level: usize) -> String {
        let axes: Vec<String> = def
            .axes
            .iter()
            .map(|a| format!("{} in {}..{}", self.var(a.index), self.dim(&a.start), self.dim(&a.start.add(&a.extent))))
            .collect();
        let domain = match def.domain_guards {
            0 => String::new(),
            n => format!(", domain guards {n}"),
        };
        format!(
            "tensor {}[{}]: {} (cost {}{domain}) = {}",
            self.var(def.var),
            axes.join(", "),
            def.elem.name(),
            def.cost_per_point,
            self.expr(&def.body, level)
        )
    }

    fn recurrence(&self, r: &Recurrence, level: usize) -> String {
        let pad = indent(level + 1);
        let extents: Vec<String> = r.extents.iter().map(|d| self.dim(d)).collect();
        let window =
            r.window.as_ref().map(|w| format!(" window axis {} slots {}", w.axis, w.slots)).unwrap_or_default();
        let flags = format!(
            "{}{}{}",
            if r.clear_steps { " clear_steps" } else { "" },
            if r.wavefront { " wavefront" } else { "" },
            if r.lines { " lines" } else { "" }
        );
        let seq: Vec<String> = r
            .seq
            .iter()
            .map(|(a, l)| format!("axis {a}: {} in {}..{}", self.var(l.index), self.dim(&l.start), self.dim(&l.end)))
            .collect();
        let mut text = format!(
            "recurrence {}[{}]: {}{window}{flags}\n{pad}sequential {}",
            self.var(r.var),
            extents.join(", "),
            r.elem.name(),
            seq.join(", ")
        );
        for c in &r.clauses {
            let cover: Vec<String> = c
                .cover
                .iter()
                .map(|cv| match cv {
                    Cover::At(n) => format!("= {n}"),
                    Cover::Range(a, b) => format!("in {}..{}", self.dim(a), self.dim(b)),
                })
                .collect();
            let at: Vec<String> =
                c.at.iter()
                    .map(|a| match a {
                        RecIndex::Seq(k) => self.var(r.seq[*k].1.index),
                        RecIndex::Lit(n) => n.to_string(),
                        RecIndex::Loop(k) => self.var(c.loops[*k].index),
                    })
                    .collect();
            if !c.prelude.is_empty() {
                let mut pre = String::new();
                for s in &c.prelude {
                    self.stmt(&mut pre, s, level + 2);
                }
                text.push_str(&format!("\n{pad}at each step of the next clause:\n{}", pre.trim_end()));
            }
            text.push_str(&format!(
                "\n{pad}clause [{}] when [{}] over [{}] (cost {}) = {}",
                at.join(", "),
                cover.join(", "),
                self.loops(&c.loops),
                c.cost_per_point,
                self.expr(&c.body, level + 1)
            ));
        }
        text
    }

    fn loops(&self, loops: &[Loop]) -> String {
        let loops: Vec<String> = loops
            .iter()
            .map(|l| format!("{} in {}..{}", self.var(l.index), self.dim(&l.start), self.dim(&l.end)))
            .collect();
        loops.join(", ")
    }

    fn wheres(&self, wheres: &[WhereEntry], level: usize) -> String {
        let items: Vec<String> = wheres
            .iter()
            .map(|w| match w {
                WhereEntry::Bind(v, e) => format!("{} = {}", self.var(*v), self.expr(e, level)),
                WhereEntry::Guard(g) => self.expr(g, level),
            })
            .collect();
        items.join(", ")
    }

    /// An expression as an operand: atoms as they are, anything else in
    /// parentheses.
    fn operand(&self, e: &Expr, level: usize) -> String {
        let atomic = match &e.kind {
            ExprKind::Lit(Literal::Int(v)) => *v >= 0,
            ExprKind::Lit(Literal::Float(t)) => !t.starts_with('-'),
            ExprKind::Lit(_) | ExprKind::Var(_) | ExprKind::Call { .. } | ExprKind::Intrinsic(..) => true,
            ExprKind::Tuple(_) | ExprKind::Field(..) | ExprKind::ArrayLit { .. } => true,
            ExprKind::Dim(d) => !self.dim(d).contains(' '),
            _ => false,
        };
        let text = self.expr(e, level);
        if atomic {
            text
        } else {
            format!("({text})")
        }
    }

    fn list(&self, items: &[Expr], level: usize) -> String {
        items.iter().map(|x| self.expr(x, level)).collect::<Vec<_>>().join(", ")
    }

    fn expr(&self, e: &Expr, level: usize) -> String {
        match &e.kind {
            ExprKind::Lit(l) => lit(l, &e.ty),
            ExprKind::Var(v) => self.var(*v),
            ExprKind::Dim(d) => self.dim(d),
            ExprKind::Unary(op, x) => {
                let op = match op {
                    crate::base::ops::UnOp::Neg => "-",
                    crate::base::ops::UnOp::Not => "!",
                };
                format!("{op}{}", self.operand(x, level))
            }
            ExprKind::Binary(op, a, b) => {
                format!("{} {} {}", self.operand(a, level), op.symbol(), self.operand(b, level))
            }
            ExprKind::Cast(x, k) => format!("{} as {}", self.operand(x, level), k.name()),
            ExprKind::Intrinsic(i, args) => format!("{}({})", i.name(), self.list(args, level)),
            ExprKind::Call { func, args } => {
                let name = self.p.get(*func).map_or_else(|| format!("<function {}>", func.0), |g| g.name.clone());
                format!("{name}({})", self.list(args, level))
            }
            ExprKind::Read { tensor, indices, checked } => {
                let how = if *checked { "checked" } else { "unchecked" };
                format!("read {}[{}] {how}", self.var(*tensor), self.list(indices, level))
            }
            ExprKind::View { tensor, indices } => format!("view {}[{}]", self.var(*tensor), self.list(indices, level)),
            ExprKind::Reduce { op, loops, wheres, body } => {
                let mut text = format!("{}[{}] {}", op.name(), self.loops(loops), self.expr(body, level));
                if !wheres.is_empty() {
                    let _ = write!(text, " where {}", self.wheres(wheres, level));
                }
                text
            }
            ExprKind::Guarded { wheres, body } => {
                format!("{} where {}", self.operand(body, level), self.wheres(wheres, level))
            }
            ExprKind::If { cond, then, els } => {
                format!(
                    "if {} {{ {} }} else {{ {} }}",
                    self.expr(cond, level),
                    self.expr(then, level),
                    self.expr(els, level)
                )
            }
            ExprKind::Block { stmts, result } => {
                let mut text = String::from("{\n");
                for s in stmts {
                    self.stmt(&mut text, s, level + 1);
                }
                let _ = writeln!(text, "{}{}", indent(level + 1), self.expr(result, level + 1));
                let _ = write!(text, "{}}}", indent(level));
                text
            }
            ExprKind::Tuple(items) => {
                if items.len() == 1 {
                    format!("({},)", self.expr(&items[0], level))
                } else {
                    format!("({})", self.list(items, level))
                }
            }
            ExprKind::Field(base, n) => format!("{}.{n}", self.operand(base, level)),
            ExprKind::ArrayLit { shape, elems } => {
                let shape: Vec<String> = shape.iter().map(|n| n.to_string()).collect();
                format!("array[{}] [{}]", shape.join(", "), self.list(elems, level))
            }
            ExprKind::Format(parts) => {
                let mut text = String::from("format \"");
                for p in parts {
                    match p {
                        FmtPart::Text(t) => text.push_str(&t.escape_debug().to_string()),
                        FmtPart::Value(x, None) => text.push_str(&format!("{{{}}}", self.expr(x, level))),
                        FmtPart::Value(x, Some(p)) => text.push_str(&format!("{{{}:.{p}}}", self.expr(x, level))),
                    }
                }
                text.push('"');
                text
            }
            ExprKind::Print(xs) => format!("print({})", self.list(xs, level)),
            ExprKind::Fs { op, args } => format!("{}({})", op.name(), self.list(args, level)),
            ExprKind::DynMap { inputs, elems, body } => {
                let binds: Vec<String> = elems
                    .iter()
                    .zip(inputs)
                    .map(|(v, x)| format!("{} in {}", self.var(*v), self.expr(x, level)))
                    .collect();
                format!("map[{}]({})", binds.join(", "), self.expr(body, level))
            }
            ExprKind::Len { tensor, axis } => format!("{}.shape[{axis}]", self.var(*tensor)),
            ExprKind::ShapeOf { tensor } => format!("{}.shape", self.var(*tensor)),
            ExprKind::DynShape { op, value, arg } => {
                format!("{}({}, {})", op.name(), self.expr(value, level), self.expr(arg, level))
            }
            ExprKind::JaggedLit { rows } => format!("jagged[{}]", self.list(rows, level)),
            ExprKind::JaggedRow { jagged, index } => format!("{}.row({})", self.var(*jagged), self.expr(index, level)),
            ExprKind::LoadNpy { path, extents } => {
                let ext: Vec<String> = extents
                    .iter()
                    .map(|d| d.as_ref().map(|d| self.dim(d)).unwrap_or_else(|| "?".to_string()))
                    .collect();
                format!("load_npy({}) as [{}]", self.expr(path, level), ext.join(", "))
            }
            ExprKind::ShapeCast { value, target, extents } => {
                let ext: Vec<String> = extents
                    .iter()
                    .map(|d| d.as_ref().map(|d| self.dim(d)).unwrap_or_else(|| "_".to_string()))
                    .collect();
                format!("({} as {target} checking [{}])", self.expr(value, level), ext.join(", "))
            }
            ExprKind::SaveNpy { path, value } => {
                format!("save_npy({}, {})", self.expr(path, level), self.expr(value, level))
            }
            ExprKind::Collect { steps, body, .. } => {
                let steps: Vec<String> = steps
                    .iter()
                    .map(|s| match s {
                        crate::ir::CollectStep::Loop(l) => self.loops(std::slice::from_ref(l)),
                        crate::ir::CollectStep::Where(w) => {
                            self.wheres(std::slice::from_ref(w), level).trim_start_matches(" where ").to_string()
                        }
                    })
                    .collect();
                format!("collect[{}] {}", steps.join(", "), self.expr(body, level))
            }
            ExprKind::Assert { cond, message } => {
                format!("assert({}, {})", self.expr(cond, level), self.expr(message, level))
            }
        }
    }
}

/// A literal with the suffix of its type: `3i64`, `1e-3f32`, `true`, `"s"`.
fn lit(l: &Literal, t: &Repr) -> String {
    let suffix = match t {
        Repr::Scalar(k) => k.name(),
        _ => "",
    };
    match l {
        Literal::Int(v) => format!("{v}{suffix}"),
        Literal::Float(text) => format!("{text}{suffix}"),
        Literal::Bool(b) => b.to_string(),
        Literal::Str(s) => format!("{s:?}"),
    }
}

/// `.0.1` for the tuple path [0, 1].
fn fields(path: &[u32]) -> String {
    path.iter().map(|i| format!(".{i}")).collect()
}
