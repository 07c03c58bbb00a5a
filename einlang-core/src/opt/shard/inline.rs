//! Calls from a sharded function passing sharded tensors, compiled in its
//! sharded context: the callee's statements inlined over fresh variables
//! ([`rename_all`], [`rename_stmt`]).

use super::*;

impl Cx<'_> {
    /// Calls in a top-level value (outside points and reductions) that pass
    /// a sharded tensor: the callee's statements are compiled here, in the
    /// sharded context, and the call becomes a read of its result.
    pub(super) fn inline_calls(&mut self, e: &mut Expr, out: &mut Vec<Stmt>) -> Result<(), Diagnostic> {
        let descend = arithmetic(e) || matches!(e.kind, ExprKind::Call { .. } | ExprKind::Field(..));
        if !descend {
            return Ok(());
        }
        let mut res = Ok(());
        visit::for_each_child_mut(e, &mut |c| {
            if res.is_ok() {
                res = self.inline_calls(c, out);
            }
        });
        res?;
        let ExprKind::Call { func, args } = &e.kind else { return Ok(()) };
        let passes_sharded = args.iter().any(|a| {
            let mut found = false;
            crate::ir::visit::visit_var_uses(a, &mut |v| {
                found |= self.sharded.contains_key(&v) || self.tuples.contains_key(&v);
            });
            found
        });
        if !passes_sharded {
            return Ok(());
        }
        let Some(g) = self.lowered.get(func.index()) else {
            return Err(Diagnostic::bug(self.span, format!("the called function {} is missing", func.0)));
        };
        let func = g.name.clone();
        if self.inlining >= MAX_INLINE_DEPTH {
            return Err(self
                .error(format!("calls from it inline `{func}` without end (a recursive function?)"))
                .note("a sharded function compiles the functions it calls with sharded tensors in its own context"));
        }
        let g = g.clone();
        let ExprKind::Call { args, .. } = std::mem::replace(&mut e.kind, ExprKind::Tuple(Vec::new())) else {
            unreachable!()
        };
        let (stmts, result) = self.inline_body(&g, args)?;
        // Errors in the callee point into it (its spans, where the source
        // has them), with a label at this call.
        self.calls.push((func, self.site.map(|(s, _)| s)));
        self.inlining += 1;
        let mut r = Ok(());
        for s in stmts {
            r = self.stmt(s, out);
            if r.is_err() {
                break;
            }
        }
        self.inlining -= 1;
        self.calls.pop();
        r?;
        *e = result;
        Ok(())
    }

    /// The statements of `g` with fresh variables, its parameters bound to
    /// `args` and its entry's dimensions to the arguments' extents (the
    /// sharded symbol where an argument's sharded axis gives one); and its
    /// result.
    pub(super) fn inline_body(&mut self, g: &Function, args: Vec<Expr>) -> Result<(Vec<Stmt>, Expr), Diagnostic> {
        let unsupported = g.body.iter().any(|s| {
            !matches!(
                s,
                Stmt::Let { .. }
                    | Stmt::Tensor(_)
                    | Stmt::Expr(_)
                    | Stmt::Extent { .. }
                    | Stmt::SameExtent { .. }
                    | Stmt::CheckResultDim { .. }
                    | Stmt::Recurrence(_)
            )
        }) || g.device.is_some()
            || g.checkpointed.is_some();
        let mut odd = false;
        for s in &g.body {
            if let Stmt::Recurrence(r) = s {
                odd |= r.clauses.iter().any(|c| !c.prelude.is_empty());
            }
            visit::for_each_stmt_expr(s, &mut |x| {
                visit_all(x, &mut |y| {
                    odd |= matches!(
                        y.kind,
                        ExprKind::Collect { .. }
                            | ExprKind::DynMap { .. }
                            | ExprKind::JaggedRow { .. }
                            | ExprKind::ShapeOf { .. }
                    )
                })
            });
        }
        if unsupported || odd || args.len() != g.params.len() {
            return Err(self
                .error(format!("`{}` is called with a sharded tensor, and its body cannot be compiled in the sharded context", g.name))
                .note("a sharded function compiles the functions it passes sharded tensors to as part of itself; this one has a recurrence, a reshape or a construct that needs the whole tensor")
                .help("write that part in the sharded function itself, or call the function on tensors that are not sharded"));
        }
        // Fresh variables for all of `g`'s.
        let mut map: HashMap<VarId, VarId> = HashMap::new();
        for (k, info) in g.vars.iter().enumerate() {
            let fresh = self.f.add_var(&info.source_name, info.ty.clone());
            map.insert(VarId(k as u32), fresh);
        }
        // Its parameters stand for the call's arguments: their values'
        // errors point at the call.
        let inner: HashMap<VarId, VarId> =
            map.iter().filter(|(v, _)| !g.params.contains(v)).map(|(&v, &to)| (v, to)).collect();
        self.f.spans.copy_renamed(&g.spans, &inner);
        let mut stmts = Vec::new();
        let i64t = Repr::Scalar(ScalarKind::I64);
        for (&p, arg) in g.params.iter().zip(args) {
            stmts.push(Stmt::Let { var: map[&p], value: arg });
        }
        // The argument's sharded axes, known before the statements run.
        let arg_axis = |cx: &Self, stmts: &[Stmt], p: VarId| -> Option<usize> {
            stmts.iter().find_map(|s| match s {
                Stmt::Let { var, value } if *var == p => cx.yields_sharded(value),
                _ => None,
            })
        };
        for check in &g.entry {
            match check {
                EntryCheck::BindDim { dim, param, path, axis } => {
                    if !path.is_empty() {
                        return Err(self.error(format!("`{}` takes a tuple of tensors", g.name)));
                    }
                    if arg_axis(self, &stmts, map[param]) == Some(*axis) {
                        // The callee's dimension is the sharded symbol.
                        map.insert(*dim, self.global);
                    } else {
                        let value = Expr { kind: ExprKind::Len { tensor: map[param], axis: *axis }, ty: i64t.clone() };
                        stmts.push(Stmt::Let { var: map[dim], value });
                    }
                }
                EntryCheck::CheckDim { param, path, axis, symbol, expected } => {
                    if !path.is_empty() {
                        return Err(self.error(format!("`{}` takes a tuple of tensors", g.name)));
                    }
                    let held = arg_axis(self, &stmts, map[param]) == Some(*axis);
                    let mut expected = expected.clone();
                    rename_dim(&mut expected, &map);
                    if held {
                        // Blocks of the sharded axis are all this rank's.
                        if expected != dvar(self.global) {
                            return Err(self.error(format!(
                                "`{}` expects an extent other than `{}` where it is passed a sharded tensor",
                                g.name, self.symbol
                            )));
                        }
                        continue;
                    }
                    let len = self.f.add_var(&format!("{symbol}_len"), i64t.clone());
                    let value = Expr { kind: ExprKind::Len { tensor: map[param], axis: *axis }, ty: i64t.clone() };
                    stmts.push(Stmt::Let { var: len, value });
                    stmts.push(Stmt::SameExtent {
                        index: symbol.clone(),
                        a: dvar(len),
                        a_what: format!("axis {axis} of `{}` in `{}`", g.var(*param).source_name, g.name),
                        b: expected,
                        b_what: format!("`{symbol}`"),
                    });
                }
            }
        }
        for s in &g.body {
            let mut s = s.clone();
            rename_stmt(&mut s, &map);
            stmts.push(s);
        }
        let mut result = g.result.clone();
        rename_all(&mut result, &map);
        Ok((stmts, result))
    }
}

/// Renames variables everywhere in `e`: reads, binders, and dimensions.
pub(super) fn rename_all(e: &mut Expr, map: &HashMap<VarId, VarId>) {
    let dim = |d: &mut Dim| {
        *d = d.substitute(&|v: DimVar| map.get(&VarId(v.0)).map(|&to| dvar(to)));
    };
    match &mut e.kind {
        ExprKind::Block { stmts, result } => {
            // Statements rename their binders too; once each.
            stmts.iter_mut().for_each(|s| rename_stmt(s, map));
            rename_all(result, map);
            return;
        }
        ExprKind::Var(v) => {
            if let Some(&to) = map.get(v) {
                *v = to;
            }
        }
        ExprKind::Dim(d) => dim(d),
        ExprKind::Read { tensor, .. } | ExprKind::View { tensor, .. } | ExprKind::Len { tensor, .. } => {
            if let Some(&to) = map.get(tensor) {
                *tensor = to;
            }
        }
        ExprKind::Reduce { loops, wheres, .. } => {
            for l in loops.iter_mut() {
                if let Some(&to) = map.get(&l.index) {
                    l.index = to;
                }
                dim(&mut l.start);
                dim(&mut l.end);
            }
            for w in wheres.iter_mut() {
                if let WhereEntry::Bind(v, _) = w {
                    if let Some(&to) = map.get(v) {
                        *v = to;
                    }
                }
            }
        }
        ExprKind::Guarded { wheres, .. } => {
            for w in wheres.iter_mut() {
                if let WhereEntry::Bind(v, _) = w {
                    if let Some(&to) = map.get(v) {
                        *v = to;
                    }
                }
            }
        }
        _ => {}
    }
    visit::for_each_child_mut(e, &mut |c| rename_all(c, map));
}

pub(super) fn rename_dim(d: &mut Dim, map: &HashMap<VarId, VarId>) {
    *d = d.substitute(&|v: DimVar| map.get(&VarId(v.0)).map(|&to| dvar(to)));
}

/// Renames every variable of a statement (binders, reads, dimensions) by
/// `map`; for the statements an inlined body may hold (`inline_body`).
pub(super) fn rename_stmt(s: &mut Stmt, map: &HashMap<VarId, VarId>) {
    let var = |v: &mut VarId| {
        if let Some(&to) = map.get(v) {
            *v = to;
        }
    };
    match s {
        Stmt::Let { var: v, value } => {
            var(v);
            rename_all(value, map);
        }
        Stmt::Expr(value) => rename_all(value, map),
        Stmt::Tensor(def) => {
            var(&mut def.var);
            for a in &mut def.axes {
                var(&mut a.index);
                rename_dim(&mut a.start, map);
                rename_dim(&mut a.extent, map);
            }
            rename_all(&mut def.body, map);
        }
        Stmt::Extent { var: v, value, .. } => {
            var(v);
            rename_dim(value, map);
        }
        Stmt::SameExtent { a, b, .. } => {
            rename_dim(a, map);
            rename_dim(b, map);
        }
        Stmt::CheckResultDim { tensor, declared, .. } => {
            var(tensor);
            rename_dim(declared, map);
        }
        Stmt::Reshape { var: v, source, dims, .. } => {
            var(v);
            var(source);
            dims.iter_mut().for_each(|d| rename_dim(d, map));
        }
        Stmt::Recurrence(r) => {
            var(&mut r.var);
            r.extents.iter_mut().for_each(|d| rename_dim(d, map));
            for (_, l) in &mut r.seq {
                var(&mut l.index);
                rename_dim(&mut l.start, map);
                rename_dim(&mut l.end, map);
            }
            for c in &mut r.clauses {
                for cv in &mut c.cover {
                    if let crate::ir::Cover::Range(a, b) = cv {
                        rename_dim(a, map);
                        rename_dim(b, map);
                    }
                }
                for l in &mut c.loops {
                    var(&mut l.index);
                    rename_dim(&mut l.start, map);
                    rename_dim(&mut l.end, map);
                }
                c.prelude.iter_mut().for_each(|s| rename_stmt(s, map));
                rename_all(&mut c.body, map);
            }
        }
        Stmt::Gemm(_) | Stmt::Conv(_) | Stmt::Rows(_) | Stmt::Sweep(_) | Stmt::Comm(_) => {}
    }
}
