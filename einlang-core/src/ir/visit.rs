//! Generic traversal of the loop IR, for passes that look at every node:
//! the expressions directly inside an expression or a statement, the
//! variables a node defines, and every variable a node mentions
//! (`visit_var_uses`, `visit_stmt_var_uses`, dimensions included).
//!
//! Children come in one fixed order (operands left to right, where entries
//! before the value they guard, a block's statements before its result), the
//! same for the shared and the mutable visitor, so a position found by one is
//! the same position for the other. Dimensions are not expressions and are
//! not visited as children; the variables they mention are uses.

use crate::base::dim::Dim;
use crate::base::ops::BinOp;
use crate::ir::{CollectStep, Cover, Expr, ExprKind, FmtPart, Literal, Repr, Stmt, VarId, WhereEntry};

/// The body of [`for_each_child`] and [`for_each_child_mut`]: `$e` is `&Expr`
/// or `&mut Expr` and `$stmt` visits the expressions of a statement.
macro_rules! children {
    ($e:expr, $f:ident, $stmt:ident) => {
        match $e {
            ExprKind::Lit(_)
            | ExprKind::Var(_)
            | ExprKind::Dim(_)
            | ExprKind::Len { .. }
            | ExprKind::ShapeOf { .. } => {}
            ExprKind::Unary(_, x) | ExprKind::Cast(x, _) | ExprKind::Field(x, _) => $f(x),
            ExprKind::Binary(_, a, b) => {
                $f(a);
                $f(b);
            }
            ExprKind::Intrinsic(_, xs)
            | ExprKind::Call { args: xs, .. }
            | ExprKind::Tuple(xs)
            | ExprKind::ArrayLit { elems: xs, .. }
            | ExprKind::Print(xs)
            | ExprKind::Fs { args: xs, .. }
            | ExprKind::JaggedLit { rows: xs }
            | ExprKind::Read { indices: xs, .. }
            | ExprKind::View { indices: xs, .. } => {
                for x in xs {
                    $f(x);
                }
            }
            ExprKind::DynMap { inputs, body, .. } => {
                for x in inputs {
                    $f(x);
                }
                $f(body);
            }
            ExprKind::Format(parts) => {
                for p in parts {
                    if let FmtPart::Value(x, _) = p {
                        $f(x);
                    }
                }
            }
            ExprKind::Assert { cond: a, message: b }
            | ExprKind::DynShape { value: a, arg: b, .. }
            | ExprKind::SaveNpy { path: a, value: b } => {
                $f(a);
                $f(b);
            }
            ExprKind::JaggedRow { index: x, .. }
            | ExprKind::LoadNpy { path: x, .. }
            | ExprKind::ShapeCast { value: x, .. } => $f(x),
            ExprKind::Collect { steps, body, .. } => {
                for s in steps {
                    if let CollectStep::Where(WhereEntry::Bind(_, x) | WhereEntry::Guard(x)) = s {
                        $f(x);
                    }
                }
                $f(body);
            }
            ExprKind::Reduce { wheres, body, .. } | ExprKind::Guarded { wheres, body } => {
                for w in wheres {
                    let (WhereEntry::Bind(_, x) | WhereEntry::Guard(x)) = w;
                    $f(x);
                }
                $f(body);
            }
            ExprKind::If { cond, then, els } => {
                $f(cond);
                $f(then);
                $f(els);
            }
            ExprKind::Block { stmts, result } => {
                for s in stmts {
                    $stmt(s, $f);
                }
                $f(result);
            }
        }
    };
}

/// Calls `f` on every expression directly inside `e`.
pub fn for_each_child<'a>(e: &'a Expr, f: &mut dyn FnMut(&'a Expr)) {
    children!(&e.kind, f, for_each_stmt_expr)
}

/// Calls `f` on every expression directly inside `e`, mutably, in the order
/// of [`for_each_child`].
pub fn for_each_child_mut(e: &mut Expr, f: &mut dyn FnMut(&mut Expr)) {
    children!(&mut e.kind, f, for_each_stmt_expr_mut)
}

/// Calls `f` on every expression directly inside statement `s`: a value, a
/// definition's body, a GEMM's reference body, a recurrence's clause bodies,
/// the expressions of a row prelude's statements and then its definition's
/// body.
pub fn for_each_stmt_expr<'a>(s: &'a Stmt, f: &mut dyn FnMut(&'a Expr)) {
    match s {
        Stmt::Let { value, .. } | Stmt::Expr(value) => f(value),
        Stmt::Tensor(def) => f(&def.body),
        Stmt::Gemm(g) => {
            if let Some(e) = &g.scale {
                f(e);
            }
            f(&g.reference.body)
        }
        Stmt::Conv(c) => {
            f(&c.reference.body);
            if let Some(e) = &c.otherwise {
                f(&e.when);
                f(&e.value);
            }
        }
        Stmt::Recurrence(r) => r.clauses.iter().for_each(|c| {
            c.prelude.iter().for_each(|s| for_each_stmt_expr(s, f));
            f(&c.body)
        }),
        Stmt::Rows(rows) => {
            rows.prelude.iter().for_each(|s| for_each_stmt_expr(s, f));
            f(&rows.def.body);
        }
        Stmt::Sweep(w) => {
            for r in [&w.primal, &w.adjoint] {
                r.clauses.iter().for_each(|c| {
                    c.prelude.iter().for_each(|s| for_each_stmt_expr(s, f));
                    f(&c.body)
                });
            }
            w.between.iter().for_each(|s| for_each_stmt_expr(s, f));
            w.sums.iter().for_each(|s| s.prelude.iter().chain([&s.part]).for_each(|s| for_each_stmt_expr(s, f)));
            w.after.iter().for_each(|s| for_each_stmt_expr(s, f));
        }
        Stmt::Extent { .. }
        | Stmt::SameExtent { .. }
        | Stmt::CheckResultDim { .. }
        | Stmt::Reshape { .. }
        | Stmt::Comm(_) => {}
    }
}

/// [`for_each_stmt_expr`], mutably.
pub fn for_each_stmt_expr_mut(s: &mut Stmt, f: &mut dyn FnMut(&mut Expr)) {
    match s {
        Stmt::Let { value, .. } | Stmt::Expr(value) => f(value),
        Stmt::Tensor(def) => f(&mut def.body),
        Stmt::Gemm(g) => {
            if let Some(e) = &mut g.scale {
                f(e);
            }
            f(&mut g.reference.body)
        }
        Stmt::Conv(c) => {
            f(&mut c.reference.body);
            if let Some(e) = &mut c.otherwise {
                f(&mut e.when);
                f(&mut e.value);
            }
        }
        Stmt::Recurrence(r) => r.clauses.iter_mut().for_each(|c| {
            c.prelude.iter_mut().for_each(|s| for_each_stmt_expr_mut(s, f));
            f(&mut c.body)
        }),
        Stmt::Rows(rows) => {
            rows.prelude.iter_mut().for_each(|s| for_each_stmt_expr_mut(s, f));
            f(&mut rows.def.body);
        }
        Stmt::Sweep(w) => {
            for r in [&mut w.primal, &mut w.adjoint] {
                r.clauses.iter_mut().for_each(|c| {
                    c.prelude.iter_mut().for_each(|s| for_each_stmt_expr_mut(s, f));
                    f(&mut c.body)
                });
            }
            w.between.iter_mut().for_each(|s| for_each_stmt_expr_mut(s, f));
            w.sums.iter_mut().for_each(|s| {
                s.prelude.iter_mut().for_each(|s| for_each_stmt_expr_mut(s, f));
                for_each_stmt_expr_mut(&mut s.part, f)
            });
            w.after.iter_mut().for_each(|s| for_each_stmt_expr_mut(s, f));
        }
        Stmt::Extent { .. }
        | Stmt::SameExtent { .. }
        | Stmt::CheckResultDim { .. }
        | Stmt::Reshape { .. }
        | Stmt::Comm(_) => {}
    }
}

/// Calls `f` on every variable that `e` itself defines (loop and reduction
/// variables, where-bindings, the statements of a block), not those of its
/// children.
pub fn for_each_binder(e: &Expr, f: &mut dyn FnMut(VarId)) {
    let wheres = |ws: &[WhereEntry], f: &mut dyn FnMut(VarId)| {
        for w in ws {
            if let WhereEntry::Bind(v, _) = w {
                f(*v);
            }
        }
    };
    match &e.kind {
        ExprKind::Reduce { loops, wheres: ws, .. } => {
            loops.iter().for_each(|l| f(l.index));
            wheres(ws, f);
        }
        ExprKind::Guarded { wheres: ws, .. } => wheres(ws, f),
        ExprKind::Collect { steps, .. } => {
            for s in steps {
                match s {
                    CollectStep::Loop(l) => f(l.index),
                    CollectStep::Where(w) => wheres(std::slice::from_ref(w), f),
                }
            }
        }
        ExprKind::DynMap { elems, .. } => elems.iter().for_each(|v| f(*v)),
        ExprKind::Block { stmts, .. } => stmts.iter().for_each(|s| for_each_stmt_binder(s, f)),
        _ => {}
    }
}

/// Calls `f` on every variable that statement `s` defines: the variable it
/// binds, and the index variables of its own loops (not those inside its
/// expressions).
pub fn for_each_stmt_binder(s: &Stmt, f: &mut dyn FnMut(VarId)) {
    match s {
        Stmt::Let { var, .. } | Stmt::Extent { var, .. } | Stmt::Reshape { var, .. } => f(*var),
        Stmt::Comm(c) => c.defines().into_iter().for_each(f),
        Stmt::Tensor(def) => {
            def.axes.iter().for_each(|a| f(a.index));
            f(def.var);
        }
        Stmt::Gemm(g) => {
            g.reference.axes.iter().for_each(|a| f(a.index));
            f(g.out);
        }
        Stmt::Conv(c) => {
            c.reference.axes.iter().for_each(|a| f(a.index));
            f(c.out);
        }
        Stmt::Rows(rows) => {
            rows.def.axes.iter().for_each(|a| f(a.index));
            rows.prelude.iter().for_each(|s| for_each_stmt_binder(s, f));
            f(rows.def.var);
        }
        Stmt::Recurrence(r) => recurrence_binders(r, f),
        Stmt::Sweep(w) => {
            [w.chunk, w.lo, w.hi].into_iter().for_each(&mut *f);
            recurrence_binders(&w.primal, f);
            w.between.iter().for_each(|s| for_each_stmt_binder(s, f));
            recurrence_binders(&w.adjoint, f);
            for s in &w.sums {
                f(s.time);
                s.prelude.iter().for_each(|s| for_each_stmt_binder(s, f));
                for_each_stmt_binder(&s.part, f);
                f(s.total);
            }
            w.after.iter().for_each(|s| for_each_stmt_binder(s, f));
        }
        Stmt::SameExtent { .. } | Stmt::CheckResultDim { .. } | Stmt::Expr(_) => {}
    }
}

fn recurrence_binders(r: &crate::ir::Recurrence, f: &mut dyn FnMut(VarId)) {
    r.seq.iter().for_each(|(_, l)| f(l.index));
    r.clauses.iter().flat_map(|c| &c.loops).for_each(|l| f(l.index));
    r.clauses.iter().flat_map(|c| &c.prelude).for_each(|s| for_each_stmt_binder(s, f));
    f(r.var);
}

/// Every variable defined anywhere inside `e`, its own binders and those of
/// all expressions below it.
pub fn defined_in(e: &Expr, out: &mut Vec<VarId>) {
    for_each_binder(e, &mut |v| out.push(v));
    for_each_child(e, &mut |x| defined_in(x, out));
}

/// Whether evaluating `e` may return an error: a checked read, a view, a
/// call, an integer division.
pub fn may_fail(e: &Expr) -> bool {
    let int_div = matches!(e.kind, ExprKind::Binary(BinOp::Div | BinOp::Rem, ..))
        && matches!(e.ty, Repr::Scalar(k) if !k.is_float());
    let mut fails = int_div
        || matches!(
            e.kind,
            ExprKind::Read { checked: true, .. }
                | ExprKind::View { .. }
                | ExprKind::Call { .. }
                | ExprKind::Intrinsic(..)
        );
    for_each_child(e, &mut |c| fails |= may_fail(c));
    fails
}

/// Whether `e` is the literal zero (`0`, `0.0`).
pub fn is_zero(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Lit(Literal::Float(t)) => t.parse::<f64>().is_ok_and(|v| v == 0.0),
        ExprKind::Lit(Literal::Int(0)) => true,
        _ => false,
    }
}

/// The conjuncts of `e` (its operands joined by `&&`), left to right.
pub fn conjuncts<'a>(e: &'a Expr, out: &mut Vec<&'a Expr>) {
    match &e.kind {
        ExprKind::Binary(BinOp::And, a, b) => {
            conjuncts(a, out);
            conjuncts(b, out);
        }
        _ => out.push(e),
    }
}

/// Calls `f` for every variable that `e` mentions (values, tensors read or
/// viewed, dimension variables), including inside nested statements.
pub fn visit_var_uses(e: &Expr, f: &mut dyn FnMut(VarId)) {
    let dim = |d: &Dim, f: &mut dyn FnMut(VarId)| d.vars().into_iter().for_each(|v| f(VarId(v.0)));
    let wheres = |ws: &[WhereEntry], f: &mut dyn FnMut(VarId)| {
        for w in ws {
            match w {
                WhereEntry::Bind(_, x) | WhereEntry::Guard(x) => visit_var_uses(x, f),
            }
        }
    };
    match &e.kind {
        ExprKind::Lit(_) => {}
        ExprKind::Var(v) => f(*v),
        ExprKind::Dim(d) => dim(d, f),
        ExprKind::Unary(_, x) | ExprKind::Cast(x, _) | ExprKind::Field(x, _) => visit_var_uses(x, f),
        ExprKind::Binary(_, a, b) => {
            visit_var_uses(a, f);
            visit_var_uses(b, f);
        }
        ExprKind::Intrinsic(_, xs)
        | ExprKind::Call { args: xs, .. }
        | ExprKind::Tuple(xs)
        | ExprKind::ArrayLit { elems: xs, .. }
        | ExprKind::Print(xs)
        | ExprKind::Fs { args: xs, .. } => xs.iter().for_each(|x| visit_var_uses(x, f)),
        ExprKind::DynMap { inputs, body, .. } => {
            inputs.iter().for_each(|x| visit_var_uses(x, f));
            visit_var_uses(body, f);
        }
        ExprKind::Format(parts) => {
            for p in parts {
                if let FmtPart::Value(x, _) = p {
                    visit_var_uses(x, f);
                }
            }
        }
        ExprKind::Assert { cond, message } => {
            visit_var_uses(cond, f);
            visit_var_uses(message, f);
        }
        ExprKind::Len { tensor, .. } | ExprKind::ShapeOf { tensor } => f(*tensor),
        ExprKind::JaggedLit { rows } => rows.iter().for_each(|x| visit_var_uses(x, f)),
        ExprKind::DynShape { value, arg, .. } => {
            visit_var_uses(value, f);
            visit_var_uses(arg, f);
        }
        ExprKind::JaggedRow { jagged, index } => {
            f(*jagged);
            visit_var_uses(index, f);
        }
        ExprKind::LoadNpy { path, extents } => {
            visit_var_uses(path, f);
            extents.iter().flatten().for_each(|d| dim(d, f));
        }
        ExprKind::SaveNpy { path, value } => {
            visit_var_uses(path, f);
            visit_var_uses(value, f);
        }
        ExprKind::ShapeCast { value, extents, .. } => {
            visit_var_uses(value, f);
            extents.iter().flatten().for_each(|d| dim(d, f));
        }
        ExprKind::Collect { steps, body, elem_shape } => {
            elem_shape.iter().for_each(|d| dim(d, f));
            for s in steps {
                match s {
                    CollectStep::Loop(l) => {
                        dim(&l.start, f);
                        dim(&l.end, f);
                    }
                    CollectStep::Where(w) => wheres(std::slice::from_ref(w), f),
                }
            }
            visit_var_uses(body, f);
        }
        ExprKind::Read { tensor, indices, .. } | ExprKind::View { tensor, indices } => {
            f(*tensor);
            indices.iter().for_each(|x| visit_var_uses(x, f));
        }
        ExprKind::Reduce { loops, wheres: ws, body, .. } => {
            for l in loops {
                dim(&l.start, f);
                dim(&l.end, f);
            }
            wheres(ws, f);
            visit_var_uses(body, f);
        }
        ExprKind::Guarded { wheres: ws, body } => {
            wheres(ws, f);
            visit_var_uses(body, f);
        }
        ExprKind::If { cond, then, els } => {
            visit_var_uses(cond, f);
            visit_var_uses(then, f);
            visit_var_uses(els, f);
        }
        ExprKind::Block { stmts, result } => {
            for s in stmts {
                visit_stmt_var_uses(s, f);
            }
            visit_var_uses(result, f);
        }
    }
}

/// Calls `f` for every variable that `s` mentions, like [`visit_var_uses`].
pub fn visit_stmt_var_uses(s: &Stmt, f: &mut dyn FnMut(VarId)) {
    let dim = |d: &Dim, f: &mut dyn FnMut(VarId)| d.vars().into_iter().for_each(|v| f(VarId(v.0)));
    match s {
        Stmt::Let { value, .. } | Stmt::Expr(value) => visit_var_uses(value, f),
        Stmt::Comm(c) => {
            c.reads().into_iter().for_each(&mut *f);
            if let crate::ir::Comm::HaloStart { step, .. } = c {
                visit_var_uses(step, f);
            }
        }
        Stmt::Extent { value, .. } => dim(value, f),
        Stmt::SameExtent { a, b, .. } => {
            dim(a, f);
            dim(b, f);
        }
        Stmt::Tensor(def) => {
            for a in &def.axes {
                dim(&a.start, f);
                dim(&a.extent, f);
            }
            visit_var_uses(&def.body, f);
        }
        Stmt::CheckResultDim { tensor, declared, .. } => {
            f(*tensor);
            dim(declared, f);
        }
        Stmt::Reshape { source, dims, .. } => {
            f(*source);
            dims.iter().for_each(|d| dim(d, f));
        }
        Stmt::Recurrence(r) => {
            for d in &r.extents {
                dim(d, f);
            }
            for (_, l) in &r.seq {
                dim(&l.start, f);
                dim(&l.end, f);
            }
            for c in &r.clauses {
                for cv in &c.cover {
                    if let Cover::Range(a, b) = cv {
                        dim(a, f);
                        dim(b, f);
                    }
                }
                for l in &c.loops {
                    dim(&l.start, f);
                    dim(&l.end, f);
                }
                c.prelude.iter().for_each(|s| visit_stmt_var_uses(s, f));
                visit_var_uses(&c.body, f);
            }
        }
        Stmt::Rows(rows) => {
            for s in &rows.prelude {
                visit_stmt_var_uses(s, f);
            }
            visit_stmt_var_uses(&Stmt::Tensor(rows.def.clone()), f);
        }
        Stmt::Gemm(g) => {
            f(g.a);
            f(g.b);
            if let Some(v) = g.slice {
                f(v);
            }
            for d in g.batch.iter().chain([&g.m, &g.n, &g.k]) {
                dim(d, f);
            }
            visit_stmt_var_uses(&Stmt::Tensor(g.reference.clone()), f);
        }
        Stmt::Conv(c) => {
            f(c.x);
            f(c.k);
            c.bias.into_iter().for_each(&mut *f);
            for d in [&c.pad, &c.stride, &c.dilation] {
                dim(&d.0, f);
                dim(&d.1, f);
            }
            dim(&c.groups, f);
            visit_stmt_var_uses(&Stmt::Tensor(c.reference.clone()), f);
            if let Some(e) = &c.otherwise {
                visit_var_uses(&e.when, f);
                visit_var_uses(&e.value, f);
            }
        }
        Stmt::Sweep(w) => {
            dim(&w.steps, f);
            visit_stmt_var_uses(&Stmt::Recurrence(w.primal.clone()), f);
            w.between.iter().for_each(|s| visit_stmt_var_uses(s, f));
            visit_stmt_var_uses(&Stmt::Recurrence(w.adjoint.clone()), f);
            for s in &w.sums {
                dim(&s.full.0, f);
                dim(&s.full.1, f);
                s.prelude.iter().for_each(|s| visit_stmt_var_uses(s, f));
                visit_stmt_var_uses(&s.part, f);
            }
            w.after.iter().for_each(|s| visit_stmt_var_uses(s, f));
        }
    }
}
