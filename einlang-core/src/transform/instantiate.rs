//! Copies of generic functions, one per instantiation.
//!
//! Monomorphization (`crate::transform::mono`) specializes a generic function
//! (one with untyped parameters) by copying its HIR with fresh ids for every
//! local definition, giving the copy's parameters concrete types. The copy is
//! appended to the arenas (operands still precede users), so existing ids
//! stay valid and the template itself is never analyzed.

use std::collections::HashMap;

use crate::base::ops::RedOp;
use crate::base::span::Span;
use crate::diag::Diagnostic;

use crate::hir::{
    Arm, Block, CompClause, Def, DefId, DefKind, DimAnn, ExprId, ExprKind, FnId, Function, Hir, IndexedDef, InterpPart,
    Param, Pat, Range, Recurrence, RedVar, Skip, Slot, Stmt, TyAnn, Where,
};

/// A body and the values and guards of its where-clause.
fn roots_of(body: ExprId, wheres: &[Where]) -> Vec<ExprId> {
    let mut roots = vec![body];
    for w in wheres {
        match w {
            Where::Bind { value, .. } => roots.push(*value),
            Where::Guard(g) => roots.push(*g),
        }
    }
    roots
}

/// Appends a copy of `f` named `name` whose parameters have the types
/// `params` (`None` keeps the template's annotation). Named rest indices
/// are expanded into as many index variables as the ranks of the accesses
/// they appear in require; a rest index whose extent cannot be told is an
/// error, returned with the copy.
pub fn instantiate(hir: &mut Hir, f: FnId, name: &str, params: Vec<Option<TyAnn>>) -> (FnId, Vec<Diagnostic>) {
    copy_fn(hir, f, name, params, false)
}

/// `instantiate`; with `keep_defs` the copy keeps the template's
/// definitions (for a body that replaces the template's own: the top
/// level's bindings are read by functions by their ids).
fn copy_fn(hir: &mut Hir, f: FnId, name: &str, params: Vec<Option<TyAnn>>, keep_defs: bool) -> (FnId, Vec<Diagnostic>) {
    let template = hir.fns[f].clone();
    let span = hir.defs[template.def].span;
    let def = hir.alloc_def(name, DefKind::Local, span);
    let mut cx = Cloner {
        hir,
        defs: HashMap::new(),
        ranks: HashMap::new(),
        rests: HashMap::new(),
        errors: Vec::new(),
        reported: Default::default(),
        static_locals: HashMap::new(),
        keep_defs,
    };
    let mut new_params = Vec::new();
    for (p, given) in template.params.iter().zip(params) {
        let ty = match given {
            Some(t) => Some(t),
            None => p.ty.as_ref().map(|t| cx.ty(t)),
        };
        match &ty {
            Some(TyAnn::Tensor { dims, .. }) => {
                cx.ranks.insert(p.def, dims.len());
            }
            Some(TyAnn::Scalar(_)) => {
                cx.ranks.insert(p.def, 0);
            }
            Some(TyAnn::Strs { .. }) => {
                cx.ranks.insert(p.def, 1);
            }
            _ => {}
        }
        new_params.push(Param { def: cx.def(p.def), ty, span: p.span });
    }
    let ret = template.ret.as_ref().map(|t| cx.ty(t));
    let body = cx.block(&template.body);
    let func = Function {
        def,
        public: false,
        docs: template.docs.clone(),
        params: new_params,
        ret,
        body,
        is_main: false,
        stdlib: template.stdlib,
        module_path: template.module_path.clone(),
        span: template.span,
        origin: None,
        skip: None,
        device: template.device,
        shard: template.shard.clone(),
    };
    let errors = std::mem::take(&mut cx.errors);
    let id = hir.fns.alloc(func);
    hir.defs[def].kind = DefKind::Fn(id);
    (id, errors)
}

struct Cloner<'a> {
    hir: &'a mut Hir,
    defs: HashMap<DefId, DefId>,
    /// Ranks of tensors of the template (parameters, indexed definitions)
    /// known so far, for expanding rest indices.
    ranks: HashMap<DefId, usize>,
    /// Each rest index of the template and the index variables it became.
    rests: HashMap<DefId, Vec<DefId>>,
    errors: Vec<Diagnostic>,
    /// Subscripts already reported as ambiguous.
    reported: std::collections::HashSet<ExprId>,
    /// Locals of the template bound to a rank (`let rank = len(shape(x));`).
    static_locals: HashMap<DefId, i128>,
    /// Copy definitions as themselves (see `copy_fn`).
    keep_defs: bool,
}

impl Cloner<'_> {
    /// The copy of a function-local definition; global ones (functions,
    /// intrinsics, modules) are shared.
    fn def(&mut self, d: DefId) -> DefId {
        let Def { name, kind, span } = self.hir.defs[d].clone();
        if self.keep_defs
            || !matches!(kind, DefKind::Param | DefKind::Local | DefKind::Index | DefKind::WhereBind | DefKind::Dim)
        {
            return d;
        }
        if let Some(&n) = self.defs.get(&d) {
            return n;
        }
        let n = self.hir.alloc_def(name, kind, span);
        self.defs.insert(d, n);
        n
    }

    fn ty(&mut self, t: &TyAnn) -> TyAnn {
        match t {
            TyAnn::Scalar(k) => TyAnn::Scalar(*k),
            TyAnn::Str => TyAnn::Str,
            TyAnn::Dyn { elem, span } => TyAnn::Dyn { elem: *elem, span: *span },
            TyAnn::Jagged { elem, span } => TyAnn::Jagged { elem: *elem, span: *span },
            TyAnn::Strs { dim, span } => TyAnn::Strs { dim: self.dim(dim), span: *span },
            TyAnn::Tuple(items) => TyAnn::Tuple(items.iter().map(|t| self.ty(t)).collect()),
            TyAnn::Tensor { elem, dims, span } => {
                TyAnn::Tensor { elem: *elem, dims: dims.iter().map(|d| self.dim(d)).collect(), span: *span }
            }
        }
    }

    fn dim(&mut self, d: &DimAnn) -> DimAnn {
        match d {
            DimAnn::Sym(s, span) => DimAnn::Sym(self.def(*s), *span),
            DimAnn::Bin(op, a, b, span) => DimAnn::Bin(*op, Box::new(self.dim(a)), Box::new(self.dim(b)), *span),
            other => other.clone(),
        }
    }

    fn pat(&mut self, p: &Pat) -> Pat {
        match p {
            Pat::Bind(d) => Pat::Bind(self.def(*d)),
            Pat::Tuple(items) => Pat::Tuple(items.iter().map(|p| self.pat(p)).collect()),
            Pat::Or(alts) => Pat::Or(alts.iter().map(|p| self.pat(p)).collect()),
            Pat::At(d, p) => Pat::At(self.def(*d), Box::new(self.pat(p))),
            other => other.clone(),
        }
    }

    /// The index variables rest index `rest` of definition `d` stands for:
    /// as many as the rank of a tensor it subscripts leaves after that
    /// subscript's other indices.
    fn expand_rest(&mut self, d: &IndexedDef, rest: DefId, span: Span) -> Vec<DefId> {
        self.expand_rest_in(roots_of(d.body, &d.wheres), rest, span)
    }

    /// `expand_rest` for the subscripts under `roots` (a definition's body
    /// and where-clauses, or a reduction's).
    fn expand_rest_in(&mut self, mut roots: Vec<ExprId>, rest: DefId, span: Span) -> Vec<DefId> {
        let name = self.hir.defs[rest].name.clone();
        let mut count = None;
        while let Some(e) = roots.pop() {
            let kind = self.hir.exprs[e].kind.clone();
            if let ExprKind::Index { base, args } = &kind {
                let rests = args.iter().filter(|a| matches!(self.hir.exprs[**a].kind, ExprKind::Rest(_))).count();
                let has_this = args.iter().any(|a| matches!(self.hir.exprs[*a].kind, ExprKind::Rest(r) if r == rest));
                if has_this && rests > 1 {
                    if !self.reported.insert(e) {
                        return Vec::new();
                    }
                    self.errors.push(
                        Diagnostic::error(
                            self.hir.span(e),
                            "ambiguous rest indices: two rest indices share one subscript",
                        )
                        .help("a subscript may use one rest index; name the other axes"),
                    );
                    return Vec::new();
                }
                if has_this && count.is_none() {
                    if let ExprKind::Def(t) = self.hir.exprs[*base].kind {
                        if let Some(rank) = self.ranks.get(&t) {
                            count = Some(rank.saturating_sub(args.len() - 1));
                        }
                    }
                }
            }
            crate::hir::operands(&kind, &mut roots);
        }
        let Some(k) = count else {
            self.errors.push(Diagnostic::error(span, format!("cannot tell how many axes `..{name}` spans")).note(
                format!(
                    "`..{name}` must subscript a value whose rank is known before types are inferred: a parameter, \
                     an earlier indexed definition, or a `let` of a literal, a conversion `as [T; ...]` or a call \
                     of a function with a declared result"
                ),
            ));
            return Vec::new();
        };
        let vars: Vec<DefId> = (0..k).map(|i| self.hir.alloc_def(format!("{name}{i}"), DefKind::Index, span)).collect();
        self.rests.insert(rest, vars.clone());
        vars
    }

    fn range(&mut self, r: &Range) -> Range {
        Range { start: self.expr(r.start), end: self.expr(r.end), span: r.span }
    }

    fn wheres(&mut self, ws: &[Where]) -> Vec<Where> {
        ws.iter()
            .map(|w| match w {
                Where::Bind { def, value } => {
                    let value = self.expr(*value);
                    Where::Bind { def: self.def(*def), value }
                }
                Where::Guard(g) => Where::Guard(self.expr(*g)),
            })
            .collect()
    }

    fn block(&mut self, b: &Block) -> Block {
        let mut stmts = Vec::new();
        for s in &b.stmts {
            stmts.push(match s {
                Stmt::Let { def, ty, value, span } => {
                    if let Some(v) = self.static_int(*value) {
                        self.static_locals.insert(*def, v);
                    }
                    if let Some(r) = ty.as_ref().and_then(ann_rank).or_else(|| self.rank_of(*value)) {
                        self.ranks.insert(*def, r);
                    }
                    let value = self.expr(*value);
                    let ty = ty.as_ref().map(|t| self.ty(t));
                    Stmt::Let { def: self.def(*def), ty, value, span: *span }
                }
                Stmt::Indexed(d) => {
                    let copy = self.indexed(d);
                    if copy.slots.is_empty() && d.slots.iter().any(|s| matches!(s, Slot::Rest(..))) {
                        // `let r[..b] = ...` whose rest index expands to no
                        // axis defines a scalar (a reduction of a vector).
                        let value = if copy.wheres.is_empty() {
                            copy.body
                        } else {
                            let kind = ExprKind::Reduce {
                                op: RedOp::Sum,
                                vars: Vec::new(),
                                wheres: copy.wheres,
                                body: copy.body,
                            };
                            self.hir.alloc_expr(kind, copy.span)
                        };
                        Stmt::Let { def: copy.def, ty: None, value, span: copy.span }
                    } else {
                        Stmt::Indexed(copy)
                    }
                }
                Stmt::Recurrence(r) => Stmt::Recurrence(Recurrence {
                    def: self.def(r.def),
                    clauses: r.clauses.iter().map(|d| self.indexed(d)).collect(),
                    span: r.span,
                }),
                Stmt::Expr(e) => Stmt::Expr(self.expr(*e)),
            });
        }
        let tail = b.tail.map(|t| self.expr(t));
        Block { stmts, tail }
    }

    fn indexed(&mut self, d: &IndexedDef) -> IndexedDef {
        let mut slots = Vec::new();
        for s in &d.slots {
            match s {
                Slot::Var { def, range } => {
                    let range = range.as_ref().map(|r| self.range(r));
                    slots.push(Slot::Var { def: self.def(*def), range });
                }
                Slot::Lit(n, span) => slots.push(Slot::Lit(*n, *span)),
                Slot::Rest(rest, span) => {
                    for v in self.expand_rest(d, *rest, *span) {
                        slots.push(Slot::Var { def: v, range: None });
                    }
                }
            }
        }
        self.ranks.insert(d.def, slots.len());
        let wheres = self.wheres(&d.wheres);
        let body = self.expr(d.body);
        IndexedDef { def: self.def(d.def), slots, wheres, body, span: d.span }
    }

    /// The value of a condition on ranks alone, known in this instance:
    /// comparisons of ranks (`len(shape(x))`, `len(x.shape)` with `x` of
    /// known rank) and integer literals, joined by `&&`, `||` and `!`.
    fn static_bool(&self, e: ExprId) -> Option<bool> {
        use crate::base::ops::{BinOp, UnOp};
        match &self.hir.exprs[e].kind {
            ExprKind::Unary(UnOp::Not, a) => self.static_bool(*a).map(|b| !b),
            ExprKind::Binary(BinOp::And, a, b) => Some(self.static_bool(*a)? && self.static_bool(*b)?),
            ExprKind::Binary(BinOp::Or, a, b) => Some(self.static_bool(*a)? || self.static_bool(*b)?),
            ExprKind::Binary(op, a, b) => {
                let (a, b) = (self.static_int(*a)?, self.static_int(*b)?);
                match op {
                    BinOp::Eq => Some(a == b),
                    BinOp::Ne => Some(a != b),
                    BinOp::Lt => Some(a < b),
                    BinOp::Le => Some(a <= b),
                    BinOp::Gt => Some(a > b),
                    BinOp::Ge => Some(a >= b),
                    _ => None,
                }
            }
            ExprKind::Block(Block { stmts, tail: Some(t) }) if stmts.is_empty() => self.static_bool(*t),
            _ => None,
        }
    }

    /// The rank of a value, where the template tells it: a literal, an
    /// array literal, a named value of known rank, a conversion `as [T;
    /// ...]`, a call of a function with a declared result, and operators
    /// of those (elementwise: a tensor operand gives its rank).
    fn rank_of(&self, e: ExprId) -> Option<usize> {
        match &self.hir.exprs[e].kind {
            ExprKind::Lit(_) => Some(0),
            ExprKind::Def(d) => self.ranks.get(d).copied(),
            ExprKind::Array(items) => Some(1 + self.rank_of(*items.first()?)?),
            ExprKind::TensorCast(_, ann) => ann_rank(ann),
            ExprKind::Cast(x, _) | ExprKind::Unary(_, x) => self.rank_of(*x),
            ExprKind::Binary(_, a, b) => match (self.rank_of(*a), self.rank_of(*b)) {
                (Some(x), Some(y)) => Some(x.max(y)),
                (Some(x), None) | (None, Some(x)) if x > 0 => Some(x),
                _ => None,
            },
            ExprKind::Call { callee: crate::hir::Callee::Fn(f), .. } => {
                self.hir.fns[*f].ret.as_ref().and_then(ann_rank)
            }
            ExprKind::Block(Block { tail: Some(t), .. }) => self.rank_of(*t),
            _ => None,
        }
    }

    /// An integer literal, or the rank of a tensor of known rank.
    fn static_int(&self, e: ExprId) -> Option<i128> {
        match &self.hir.exprs[e].kind {
            ExprKind::Lit(crate::base::ops::Lit::Int(n, _)) => Some(*n),
            ExprKind::Def(d) => self.static_locals.get(d).copied(),
            ExprKind::Builtin(crate::hir::Builtin::Len, args) => {
                let [x] = args.as_slice() else { return None };
                let ExprKind::Builtin(crate::hir::Builtin::Shape, inner) = &self.hir.exprs[*x].kind else {
                    return None;
                };
                let [t] = inner.as_slice() else { return None };
                let ExprKind::Def(d) = self.hir.exprs[*t].kind else { return None };
                self.ranks.get(&d).map(|r| *r as i128)
            }
            ExprKind::Binary(op, a, b) => {
                use crate::base::ops::BinOp;
                let (a, b) = (self.static_int(*a)?, self.static_int(*b)?);
                match op {
                    BinOp::Add => a.checked_add(b),
                    BinOp::Sub => a.checked_sub(b),
                    BinOp::Mul => a.checked_mul(b),
                    _ => None,
                }
            }
            ExprKind::Unary(crate::base::ops::UnOp::Neg, a) => self.static_int(*a)?.checked_neg(),
            ExprKind::Block(Block { stmts, tail: Some(t) }) if stmts.is_empty() => self.static_int(*t),
            _ => None,
        }
    }

    /// Copies `e`, operands first, so the copy keeps operands before users.
    fn expr(&mut self, e: ExprId) -> ExprId {
        let span = self.hir.span(e);
        let kind = match self.hir.exprs[e].kind.clone() {
            ExprKind::Lit(l) => ExprKind::Lit(l),
            ExprKind::Error => ExprKind::Error,
            ExprKind::Def(d) => ExprKind::Def(self.def(d)),
            ExprKind::Differential(d) => ExprKind::Differential(self.def(d)),
            ExprKind::Deriv { target, wrt } => ExprKind::Deriv { target: self.def(target), wrt: self.def(wrt) },
            ExprKind::Unary(op, a) => ExprKind::Unary(op, self.expr(a)),
            ExprKind::Binary(op, a, b) => {
                let a = self.expr(a);
                ExprKind::Binary(op, a, self.expr(b))
            }
            ExprKind::Cast(a, k) => ExprKind::Cast(self.expr(a), k),
            ExprKind::Call { callee, callee_span, args } => {
                let args = args.iter().map(|a| self.expr(*a)).collect();
                ExprKind::Call { callee, callee_span, args }
            }
            ExprKind::Index { base, args } => {
                let base = self.expr(base);
                let mut new_args = Vec::new();
                for a in &args {
                    match self.hir.exprs[*a].kind {
                        // A rest index becomes its index variables.
                        ExprKind::Rest(r) => {
                            let vars = self.rests.get(&r).cloned().unwrap_or_default();
                            let span = self.hir.span(*a);
                            for v in vars {
                                new_args.push(self.hir.alloc_expr(ExprKind::Def(v), span));
                            }
                        }
                        _ => new_args.push(self.expr(*a)),
                    }
                }
                // Rest indices that expand to nothing read a scalar.
                if new_args.is_empty() {
                    return base;
                }
                ExprKind::Index { base, args: new_args }
            }
            ExprKind::TensorCast(x, ann) => {
                let x = self.expr(x);
                ExprKind::TensorCast(x, self.ty(&ann))
            }
            ExprKind::Comprehension { body, clauses, rows } => {
                let clauses = clauses
                    .iter()
                    .map(|c| match c {
                        CompClause::Range { def, range } => {
                            let range = self.range(range);
                            CompClause::Range { def: self.def(*def), range }
                        }
                        CompClause::Each { def, over } => {
                            let over = self.expr(*over);
                            CompClause::Each { def: self.def(*def), over }
                        }
                        CompClause::Filter(f) => CompClause::Filter(self.expr(*f)),
                    })
                    .collect();
                ExprKind::Comprehension { body: self.expr(body), clauses, rows }
            }
            ExprKind::Rest(_) => {
                self.errors.push(Diagnostic::error(span, "a rest index can only appear in a subscript"));
                ExprKind::Error
            }
            ExprKind::Field(a, i) => ExprKind::Field(self.expr(a), i),
            ExprKind::Reduce { op, vars, wheres, body } => {
                let mut new_vars = Vec::new();
                for v in &vars {
                    if self.hir.defs[v.def].kind == DefKind::Rest {
                        // `sum[..r](x[..r])`: one variable per axis `..r` spans.
                        let span = self.hir.defs[v.def].span;
                        for d in self.expand_rest_in(roots_of(body, &wheres), v.def, span) {
                            new_vars.push(RedVar { def: d, range: None });
                        }
                    } else {
                        let range = v.range.as_ref().map(|r| self.range(r));
                        new_vars.push(RedVar { def: self.def(v.def), range });
                    }
                }
                let vars = new_vars;
                if vars.is_empty()
                    && wheres.is_empty()
                    && matches!(op, RedOp::Sum | RedOp::Prod | RedOp::Max | RedOp::Min | RedOp::All | RedOp::Any)
                {
                    // Rest indices that span no axis: a reduction over one
                    // point is that point.
                    return self.expr(body);
                }
                let wheres = self.wheres(&wheres);
                ExprKind::Reduce { op, vars, wheres, body: self.expr(body) }
            }
            ExprKind::If { cond, then, els } => {
                // A test of ranks, which this instance fixes, keeps only
                // the branch it selects: the other may not type at these
                // ranks (`conv` of a 1-D input calls the 1-D kernel).
                match (self.static_bool(cond), els) {
                    (Some(true), _) => return self.expr(then),
                    (Some(false), Some(els)) => return self.expr(els),
                    _ => {}
                }
                let cond = self.expr(cond);
                let then = self.expr(then);
                ExprKind::If { cond, then, els: els.map(|x| self.expr(x)) }
            }
            ExprKind::Block(b) => ExprKind::Block(self.block(&b)),
            ExprKind::Array(items) => ExprKind::Array(items.iter().map(|a| self.expr(*a)).collect()),
            ExprKind::Jagged(items) => ExprKind::Jagged(items.iter().map(|a| self.expr(*a)).collect()),
            ExprKind::Tuple(items) => ExprKind::Tuple(items.iter().map(|a| self.expr(*a)).collect()),
            ExprKind::Builtin(b, args) => ExprKind::Builtin(b, args.iter().map(|a| self.expr(*a)).collect()),
            ExprKind::Match { scrutinee, arms } => {
                let scrutinee = self.expr(scrutinee);
                let arms = arms
                    .iter()
                    .map(|a| {
                        let pat = self.pat(&a.pat);
                        let guard = a.guard.map(|g| self.expr(g));
                        Arm { pat, guard, body: self.expr(a.body), span: a.span }
                    })
                    .collect();
                ExprKind::Match { scrutinee, arms }
            }
            ExprKind::Interp(parts) => ExprKind::Interp(
                parts
                    .iter()
                    .map(|p| match p {
                        InterpPart::Text(t) => InterpPart::Text(t.clone()),
                        InterpPart::Value(e, prec) => InterpPart::Value(self.expr(*e), *prec),
                    })
                    .collect(),
            ),
        };
        self.hir.alloc_expr(kind, span)
    }
}

/// The rank a type annotation gives (none for dynamic rank).
fn ann_rank(t: &TyAnn) -> Option<usize> {
    match t {
        TyAnn::Tensor { dims, .. } => Some(dims.len()),
        TyAnn::Scalar(_) => Some(0),
        TyAnn::Strs { .. } => Some(1),
        _ => None,
    }
}

/// Expands the named rest indices of functions whose parameters are all
/// typed (their ranks are known now): each such function's body is
/// replaced by a copy with the rest indices expanded. Generic functions
/// keep theirs until each instance is made.
pub fn expand_typed_rests(hir: &mut Hir) -> Vec<Diagnostic> {
    let mut errors = Vec::new();
    let ids: Vec<FnId> = hir.fns.iter().map(|(id, _)| id).collect();
    for f in ids {
        let func = &hir.fns[f];
        if func.is_generic() || hir.skipped(f) || !uses_rest(hir, func) {
            continue;
        }
        let name = hir.name(func.def).to_string();
        let keep = vec![None; func.params.len()];
        let (copy, errs) = copy_fn(hir, f, &name, keep, func.is_main);
        errors.extend(errs);
        let c = hir.fns[copy].clone();
        let func = &mut hir.fns[f];
        func.params = c.params;
        func.ret = c.ret;
        func.body = c.body;
        hir.fns[copy].skip = Some(Skip::Dropped);
    }
    errors
}

/// Whether a rest index appears in `func`'s body.
fn uses_rest(hir: &Hir, func: &Function) -> bool {
    let mut roots = Vec::new();
    let mut slots = false;
    collect_block(&func.body, &mut roots, &mut slots);
    slots
        || hir.reachable(roots).into_iter().any(|e| match &hir.exprs[e].kind {
            ExprKind::Rest(_) => true,
            ExprKind::Reduce { vars, .. } => vars.iter().any(|v| hir.defs[v.def].kind == DefKind::Rest),
            ExprKind::Block(b) => {
                let mut inner = false;
                collect_block(b, &mut Vec::new(), &mut inner);
                inner
            }
            _ => false,
        })
}

/// The expressions of a block's statements, and whether a definition has a
/// rest slot.
fn collect_block(b: &Block, roots: &mut Vec<ExprId>, slots: &mut bool) {
    let mut defs = Vec::new();
    for s in &b.stmts {
        match s {
            Stmt::Let { value, .. } => roots.push(*value),
            Stmt::Expr(e) => roots.push(*e),
            Stmt::Indexed(d) => defs.push(d),
            Stmt::Recurrence(r) => defs.extend(r.clauses.iter()),
        }
    }
    for d in defs {
        *slots |= d.slots.iter().any(|s| matches!(s, Slot::Rest(..)));
        roots.extend(roots_of(d.body, &d.wheres));
    }
    roots.extend(b.tail);
}
