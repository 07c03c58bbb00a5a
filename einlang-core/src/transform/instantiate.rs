//! Copies of generic functions, one per instantiation.
//!
//! Monomorphization (`crate::transform::mono`) specializes a generic function
//! (one with untyped parameters) by copying its HIR with fresh ids for every
//! local definition, giving the copy's parameters concrete types. The copy is
//! appended to the arenas (operands still precede users), so existing ids
//! stay valid and the template itself is never analyzed.

use std::collections::HashMap;

use crate::base::span::Span;
use crate::diag::Diagnostic;
use crate::hir::{
    Block, DefId, DefKind, ExprId, ExprKind, FnId, Function, Hir, IndexedDef, Param, Skip, Slot, Stmt, TyAnn, Where,
};
use crate::transform::copy::Copier;

/// A body and the values and guards of its where-clause.
pub(crate) fn roots_of(body: ExprId, wheres: &[Where]) -> Vec<ExprId> {
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
    let mut cx = Copier::instance(Instance { keep_defs, ..Instance::default() });
    let mut new_params = Vec::new();
    for (p, given) in template.params.iter().zip(params) {
        let ty = match given {
            Some(t) => Some(t),
            None => p.ty.as_ref().map(|t| cx.ty(hir, t)),
        };
        let rank = match &ty {
            Some(TyAnn::Tensor { dims, .. }) => Some(dims.len()),
            Some(TyAnn::Scalar(_)) => Some(0),
            Some(TyAnn::Strs { .. }) => Some(1),
            _ => None,
        };
        if let (Some(r), Some(i)) = (rank, &mut cx.instance) {
            i.ranks.insert(p.def, r);
        }
        new_params.push(Param { def: cx.bind(hir, p.def), ty, span: p.span });
    }
    let ret = template.ret.as_ref().map(|t| cx.ty(hir, t));
    let body = cx.block(hir, &template.body);
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
    let errors = cx.take_errors();
    let id = hir.fns.alloc(func);
    hir.defs[def].kind = DefKind::Fn(id);
    (id, errors)
}

/// What a copy of a function for an instance knows of the template as it
/// goes (`transform::copy::Copier::instance`): the ranks of its tensors, for
/// expanding rest indices and deciding tests of ranks.
#[derive(Default)]
pub(crate) struct Instance {
    /// Ranks of tensors of the template (parameters, indexed definitions,
    /// `let`s) known so far.
    pub ranks: HashMap<DefId, usize>,
    /// Each rest index of the template and the index variables it became.
    pub rests: HashMap<DefId, Vec<DefId>>,
    pub errors: Vec<Diagnostic>,
    /// Subscripts already reported as ambiguous.
    reported: std::collections::HashSet<ExprId>,
    /// Locals of the template bound to a rank (`let rank = len(shape(x));`).
    static_locals: HashMap<DefId, i128>,
    /// Copy definitions as themselves (see `copy_fn`).
    keep_defs: bool,
}

impl Instance {
    /// Whether the copy gives `d` a fresh definition: every function-local
    /// definition, unless the copy keeps them; global ones (functions,
    /// intrinsics, modules) are shared.
    pub fn fresh(&self, hir: &Hir, d: DefId) -> bool {
        !self.keep_defs
            && matches!(
                hir.defs[d].kind,
                DefKind::Param | DefKind::Local | DefKind::Index | DefKind::WhereBind | DefKind::Dim
            )
    }

    /// Records what a template's `let def: ty = value` tells: its rank, and
    /// its value when that is a rank.
    pub fn note_let(&mut self, hir: &Hir, def: DefId, ty: Option<&TyAnn>, value: ExprId) {
        if let Some(v) = self.static_int(hir, value) {
            self.static_locals.insert(def, v);
        }
        if let Some(r) = ty.and_then(ann_rank).or_else(|| self.rank_of(hir, value)) {
            self.ranks.insert(def, r);
        }
    }

    /// The index variables rest index `rest` of definition `d` stands for:
    /// as many as the rank of a tensor it subscripts leaves after that
    /// subscript's other indices.
    pub fn expand_rest(&mut self, hir: &mut Hir, d: &IndexedDef, rest: DefId, span: Span) -> Vec<DefId> {
        self.expand_rest_in(hir, roots_of(d.body, &d.wheres), rest, span)
    }

    /// `expand_rest` for the subscripts under `roots` (a definition's body
    /// and where-clauses, or a reduction's).
    pub fn expand_rest_in(&mut self, hir: &mut Hir, mut roots: Vec<ExprId>, rest: DefId, span: Span) -> Vec<DefId> {
        let name = hir.defs[rest].name.clone();
        let mut count = None;
        while let Some(e) = roots.pop() {
            let kind = hir.exprs[e].kind.clone();
            if let ExprKind::Index { base, args } = &kind {
                let rests = args.iter().filter(|a| matches!(hir.exprs[**a].kind, ExprKind::Rest(_))).count();
                let has_this = args.iter().any(|a| matches!(hir.exprs[*a].kind, ExprKind::Rest(r) if r == rest));
                if has_this && rests > 1 {
                    if !self.reported.insert(e) {
                        return Vec::new();
                    }
                    self.errors.push(
                        Diagnostic::error(hir.span(e), "ambiguous rest indices: two rest indices share one subscript")
                            .help("a subscript may use one rest index; name the other axes"),
                    );
                    return Vec::new();
                }
                if has_this && count.is_none() {
                    if let ExprKind::Def(t) = hir.exprs[*base].kind {
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
        let vars: Vec<DefId> = (0..k).map(|i| hir.alloc_def(format!("{name}{i}"), DefKind::Index, span)).collect();
        self.rests.insert(rest, vars.clone());
        vars
    }

    /// The value of a condition on ranks alone, known in this instance:
    /// comparisons of ranks (`len(shape(x))`, `len(x.shape)` with `x` of
    /// known rank) and integer literals, joined by `&&`, `||` and `!`.
    pub fn static_bool(&self, hir: &Hir, e: ExprId) -> Option<bool> {
        use crate::base::ops::{BinOp, UnOp};
        match &hir.exprs[e].kind {
            ExprKind::Unary(UnOp::Not, a) => self.static_bool(hir, *a).map(|b| !b),
            ExprKind::Binary(BinOp::And, a, b) => Some(self.static_bool(hir, *a)? && self.static_bool(hir, *b)?),
            ExprKind::Binary(BinOp::Or, a, b) => Some(self.static_bool(hir, *a)? || self.static_bool(hir, *b)?),
            ExprKind::Binary(op, a, b) => {
                let (a, b) = (self.static_int(hir, *a)?, self.static_int(hir, *b)?);
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
            ExprKind::Block(Block { stmts, tail: Some(t) }) if stmts.is_empty() => self.static_bool(hir, *t),
            _ => None,
        }
    }

    /// The rank of a value, where the template tells it: a literal, an
    /// array literal, a named value of known rank, a conversion `as [T;
    /// ...]`, a call of a function with a declared result, and operators
    /// of those (elementwise: a tensor operand gives its rank).
    fn rank_of(&self, hir: &Hir, e: ExprId) -> Option<usize> {
        match &hir.exprs[e].kind {
            ExprKind::Lit(_) => Some(0),
            ExprKind::Def(d) => self.ranks.get(d).copied(),
            ExprKind::Array(items) => Some(1 + self.rank_of(hir, *items.first()?)?),
            ExprKind::TensorCast(_, ann) => ann_rank(ann),
            ExprKind::Cast(x, _) | ExprKind::Unary(_, x) => self.rank_of(hir, *x),
            ExprKind::Binary(_, a, b) => match (self.rank_of(hir, *a), self.rank_of(hir, *b)) {
                (Some(x), Some(y)) => Some(x.max(y)),
                (Some(x), None) | (None, Some(x)) if x > 0 => Some(x),
                _ => None,
            },
            ExprKind::Call { callee: crate::hir::Callee::Fn(f), .. } => hir.fns[*f].ret.as_ref().and_then(ann_rank),
            ExprKind::Block(Block { tail: Some(t), .. }) => self.rank_of(hir, *t),
            _ => None,
        }
    }

    /// An integer literal, or the rank of a tensor of known rank.
    fn static_int(&self, hir: &Hir, e: ExprId) -> Option<i128> {
        match &hir.exprs[e].kind {
            ExprKind::Lit(crate::base::ops::Lit::Int(n, _)) => Some(*n),
            ExprKind::Def(d) => self.static_locals.get(d).copied(),
            ExprKind::Builtin(crate::hir::Builtin::Len, args) => {
                let [x] = args.as_slice() else { return None };
                let ExprKind::Builtin(crate::hir::Builtin::Shape, inner) = &hir.exprs[*x].kind else {
                    return None;
                };
                let [t] = inner.as_slice() else { return None };
                let ExprKind::Def(d) = hir.exprs[*t].kind else { return None };
                self.ranks.get(&d).map(|r| *r as i128)
            }
            ExprKind::Binary(op, a, b) => {
                use crate::base::ops::BinOp;
                let (a, b) = (self.static_int(hir, *a)?, self.static_int(hir, *b)?);
                match op {
                    BinOp::Add => a.checked_add(b),
                    BinOp::Sub => a.checked_sub(b),
                    BinOp::Mul => a.checked_mul(b),
                    _ => None,
                }
            }
            ExprKind::Unary(crate::base::ops::UnOp::Neg, a) => self.static_int(hir, *a)?.checked_neg(),
            ExprKind::Block(Block { stmts, tail: Some(t) }) if stmts.is_empty() => self.static_int(hir, *t),
            _ => None,
        }
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
