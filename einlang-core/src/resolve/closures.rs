//! Function values: lambdas, closures and functions named as values.
//!
//! Function values exist only at compile time; resolution removes them, so
//! the HIR never holds one and later stages never see a function value:
//!
//! - `let f = |x| x * k;` binds `f` to the lambda (its syntax, the names it
//!   can see and its module) instead of emitting a statement;
//! - a call `f(a)` of a function value is beta-reduced: the arguments are
//!   bound to fresh locals and the lambda's body is resolved again in the
//!   lambda's own scope, `{ let x = a; x * k }`, so captured names keep
//!   meaning what they meant where the lambda was written;
//! - a call `apply(f, v)` that passes function values to a function gets a
//!   specialization of `apply` per function value: the parameter is bound
//!   to the value, and the locals the value captures become extra untyped
//!   parameters of the copy (lambda lifting), passed at the call. The key of
//!   a specialization is the function, the text of each lambda and what its
//!   captured names are, so one lambda passed twice shares one copy;
//! - a function whose result is a function value (`fn scaler(k) { |x| x * k
//!   }`) is inlined at each call: its parameters and statements become
//!   statements of the caller, and its tail is the value. Such functions are
//!   never emitted (`hir::Skip::Inlined`).
//!
//! A function value anywhere else (printed, stored in a tuple, chosen by an
//! `if`) is an error: it cannot be resolved statically.

use std::collections::HashMap;
use std::rc::Rc;

use super::{ModId, Resolver};
use crate::base::span::Span;
use crate::diag::{Diagnostic, Diagnostics};
use crate::hir::{self, Callee, DefId, DefKind, ExprId, ExprKind, FnId};
use crate::syntax::ast;

/// More nested inlining than this means functions returning function values
/// call each other without end.
const MAX_INLINE_DEPTH: usize = 32;
/// A bound on specializations for function values.
const MAX_SPECIALIZATIONS: usize = 512;

/// A function value known at compile time.
#[derive(Clone, Debug)]
pub(super) enum FnValue {
    /// A lambda (the whole `|..| body` expression), the local names visible
    /// where it was written, and the module it was written in.
    Lambda { expr: Rc<ast::Expr>, env: Rc<HashMap<String, DefId>>, module: ModId },
    /// A function or intrinsic named as a value (`apply(square, x)`).
    Named(DefId),
}

/// The resolver's state for one body, saved while another body (a lambda's,
/// an inlined function's, a specialization's) is resolved.
pub(super) struct Saved {
    scopes: Vec<HashMap<String, DefId>>,
    frames: (Vec<super::computed::Frame>, HashMap<DefId, usize>),
    module: ModId,
    in_generic: bool,
    current_fn: Option<FnId>,
}

fn lambda_parts(e: &ast::Expr) -> Option<(&[ast::Param], &ast::Expr)> {
    match &e.kind {
        ast::ExprKind::Lambda { params, body } => Some((params, body)),
        _ => None,
    }
}

/// `e` as written with `Path`s of one segment: the names it mentions.
pub(super) fn mentioned_names(e: &ast::Expr) -> Vec<String> {
    let mut names = Vec::new();
    crate::syntax::visit::walk_expr(e, &mut |x| {
        if let ast::ExprKind::Path(p) = &x.kind {
            if let [one] = p.as_slice() {
                names.push(one.name.clone());
            }
        }
    });
    names.sort();
    names.dedup();
    names
}

/// The value of a block-bodied function: its tail, looking through blocks.
fn tail_of(b: &ast::Block) -> Option<&ast::Expr> {
    let t = b.tail.as_deref()?;
    match &t.kind {
        ast::ExprKind::Block(inner) if inner.stmts.is_empty() => tail_of(inner),
        _ => Some(t),
    }
}

pub(super) fn escaping(span: Span) -> Diagnostic {
    Diagnostic::error(span, "a function value cannot be used here")
        .note("function values are resolved at compile time: they can be called, bound with `let`, passed to a function or returned from one")
        .help("to choose a function at run time, choose between calls: `if c { f(x) } else { g(x) }`")
}

impl Resolver {
    pub(super) fn enter(&mut self, module: ModId, scopes: Vec<HashMap<String, DefId>>) -> Saved {
        Saved {
            scopes: std::mem::replace(&mut self.scopes, scopes),
            frames: self.take_frames(),
            module: std::mem::replace(&mut self.current_module, module),
            in_generic: self.in_generic,
            current_fn: self.current_fn,
        }
    }

    pub(super) fn leave(&mut self, s: Saved) {
        self.scopes = s.scopes;
        self.restore_frames(s.frames);
        self.current_module = s.module;
        self.in_generic = s.in_generic;
        self.current_fn = s.current_fn;
    }

    /// Which parameters each function calls (directly, or by passing them
    /// to a parameter another function calls), and which functions return
    /// a function value. Runs after `use` items are resolved and before any
    /// body, from the syntax of the bodies, for the functions from `first`
    /// on (the earlier ones, the library's, never call later ones).
    pub(super) fn find_fn_values(&mut self, first: usize) {
        let mut ids: Vec<FnId> = self.fn_asts.keys().copied().filter(|f| f.index() >= first).collect();
        ids.sort_by_key(|f| f.raw());
        for &f in &ids {
            let item = self.fn_asts[&f].0.clone();
            let params: Vec<&str> = item.params.iter().map(|p| p.name.name.as_str()).collect();
            let mut called = HashMap::new();
            if let Some(body) = &item.body {
                walk_block(body, &mut |x| {
                    if let ast::ExprKind::Call { callee, .. } = &x.kind {
                        if let ast::ExprKind::Path(p) = &callee.kind {
                            if let [one] = p.as_slice() {
                                if params.contains(&one.name.as_str()) {
                                    called.entry(one.name.clone()).or_insert(callee.span);
                                }
                            }
                        }
                    }
                });
            }
            if !called.is_empty() {
                self.functional.insert(f, called);
            }
        }
        loop {
            let mut changed = false;
            for &f in &ids {
                let (item, module) = self.fn_asts[&f].clone();
                let Some(body) = &item.body else { continue };
                let params: Vec<&str> = item.params.iter().map(|p| p.name.name.as_str()).collect();
                let mut calls = Vec::new();
                walk_block(body, &mut |x| {
                    if let ast::ExprKind::Call { callee, args } = &x.kind {
                        if let ast::ExprKind::Path(p) = &callee.kind {
                            calls.push((p.clone(), args.clone()));
                        }
                    }
                });
                for (path, args) in calls {
                    let Some(g) = self.quiet_fn(module, &path) else { continue };
                    let Some(g_functional) = self.functional.get(&g).cloned() else { continue };
                    let Some((g_item, _)) = self.fn_asts.get(&g) else { continue };
                    let g_params: Vec<String> = g_item.params.iter().map(|p| p.name.name.clone()).collect();
                    for (j, a) in args.iter().enumerate() {
                        let ast::ExprKind::Path(p) = &a.kind else { continue };
                        let [one] = p.as_slice() else { continue };
                        if !params.contains(&one.name.as_str())
                            || !g_params.get(j).is_some_and(|n| g_functional.contains_key(n))
                        {
                            continue;
                        }
                        let entry = self.functional.entry(f).or_default();
                        if !entry.contains_key(&one.name) {
                            entry.insert(one.name.clone(), a.span);
                            changed = true;
                        }
                    }
                }
                if !self.returns_fn.contains(&f) && self.block_returns_fn(body, module) {
                    self.returns_fn.insert(f);
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
    }

    /// Whether the value of `body` is syntactically a function value: a
    /// lambda, a local bound to one, or a call of a function that returns
    /// one.
    fn block_returns_fn(&mut self, body: &ast::Block, module: ModId) -> bool {
        let Some(tail) = tail_of(body) else { return false };
        match &tail.kind {
            ast::ExprKind::Lambda { .. } => true,
            ast::ExprKind::Path(p) => {
                let [one] = p.as_slice() else { return false };
                let bound = body.stmts.iter().rev().find_map(|s| match s {
                    ast::Stmt::Let(ast::LetStmt { pat: ast::Pattern::Name(n), indices: None, value, .. })
                        if n.name == one.name =>
                    {
                        Some(value)
                    }
                    _ => None,
                });
                bound.is_some_and(|v| match &v.kind {
                    ast::ExprKind::Lambda { .. } => true,
                    ast::ExprKind::Call { callee, .. } => self.calls_fn_returning(callee, module),
                    _ => false,
                })
            }
            ast::ExprKind::Call { callee, .. } => self.calls_fn_returning(callee, module),
            _ => false,
        }
    }

    fn calls_fn_returning(&mut self, callee: &ast::Expr, module: ModId) -> bool {
        let ast::ExprKind::Path(p) = &callee.kind else { return false };
        self.quiet_fn(module, p).is_some_and(|g| self.returns_fn.contains(&g))
    }

    /// The function an item path names in `module`, without reporting.
    fn quiet_fn(&mut self, module: ModId, path: &[ast::Ident]) -> Option<FnId> {
        let def = self.quiet_item(module, path)?;
        match self.hir.defs[def].kind {
            DefKind::Fn(f) => Some(f),
            _ => None,
        }
    }

    fn quiet_item(&mut self, module: ModId, path: &[ast::Ident]) -> Option<DefId> {
        if let [one] = path {
            return self.modules[module].names.get(&one.name).copied();
        }
        let mut scratch = Diagnostics::new();
        self.resolve_module_path(module, path, &mut scratch)
    }

    /// The item a path in the body being resolved names, unless a local
    /// shadows it.
    pub(super) fn item_of_path(&mut self, path: &[ast::Ident]) -> Option<DefId> {
        if let [one] = path {
            if self.lookup_local(&one.name).is_some() {
                return None;
            }
        }
        self.quiet_item(self.current_module, path)
    }

    /// The function value a path names, if it names one.
    fn path_fn_value(&mut self, path: &[ast::Ident]) -> Option<FnValue> {
        if let [one] = path {
            if let Some(d) = self.lookup_local(&one.name) {
                return self.fn_values.get(&d).cloned();
            }
        }
        let def = self.item_of_path(path)?;
        match self.hir.defs[def].kind {
            DefKind::Fn(f) if !self.returns_fn.contains(&f) && !self.functional.contains_key(&f) => {
                Some(FnValue::Named(def))
            }
            DefKind::Intrinsic(_) => Some(FnValue::Named(def)),
            _ => None,
        }
    }

    /// Whether `e` is a function value. Reports nothing and allocates
    /// nothing, so it can be asked of any expression.
    pub(super) fn is_fn_value(&mut self, e: &ast::Expr) -> bool {
        match &e.kind {
            ast::ExprKind::Lambda { .. } => true,
            ast::ExprKind::Path(p) => self.path_fn_value(p).is_some(),
            ast::ExprKind::Block(b) if b.stmts.is_empty() => b.tail.as_deref().is_some_and(|t| self.is_fn_value(t)),
            ast::ExprKind::Call { callee, .. } => match &callee.kind {
                ast::ExprKind::Path(p) => {
                    if let Some(def) = self.item_of_path(p) {
                        return matches!(self.hir.defs[def].kind, DefKind::Fn(f) if self.returns_fn.contains(&f));
                    }
                    // A local lambda whose body is a lambda (`|a| |b| a + b`).
                    matches!(self.path_fn_value(p), Some(FnValue::Lambda { expr, .. })
                        if lambda_parts(&expr).is_some_and(|(_, body)| matches!(body.kind, ast::ExprKind::Lambda { .. })))
                }
                ast::ExprKind::Lambda { body, .. } => matches!(body.kind, ast::ExprKind::Lambda { .. }),
                _ => false,
            },
            _ => false,
        }
    }

    /// Whether `callee` should be called as a function value rather than as
    /// a named function: a local bound to a function value, a lambda, or an
    /// expression that makes one.
    pub(super) fn is_value_callee(&mut self, callee: &ast::Expr) -> bool {
        if let ast::ExprKind::Path(p) = &callee.kind {
            if self.item_of_path(p).is_some() {
                return false;
            }
        }
        self.is_fn_value(callee)
    }

    /// The local names of the body being resolved, innermost binding first.
    fn flat_env(&self) -> HashMap<String, DefId> {
        let mut env = HashMap::new();
        for scope in &self.scopes {
            for (k, v) in scope {
                env.insert(k.clone(), *v);
            }
        }
        env
    }

    /// Evaluates function-valued `e` (`is_fn_value(e)` holds): the
    /// statements that must run first (parameters of inlined calls) and the
    /// value. None after an error was reported.
    pub(super) fn fn_value_of(&mut self, e: &ast::Expr, diags: &mut Diagnostics) -> Option<(Vec<hir::Stmt>, FnValue)> {
        match &e.kind {
            ast::ExprKind::Lambda { .. } => Some((
                Vec::new(),
                FnValue::Lambda {
                    expr: Rc::new(e.clone()),
                    env: Rc::new(self.flat_env()),
                    module: self.current_module,
                },
            )),
            ast::ExprKind::Path(p) => self.path_fn_value(p).map(|v| (Vec::new(), v)),
            ast::ExprKind::Block(b) => self.fn_value_of(b.tail.as_deref()?, diags),
            ast::ExprKind::Call { callee, args } => {
                if let ast::ExprKind::Path(p) = &callee.kind {
                    if let Some(def) = self.item_of_path(p) {
                        let DefKind::Fn(g) = self.hir.defs[def].kind else { return None };
                        return self.inline_fn_call(g, args, e.span, diags);
                    }
                }
                let (mut pre, f) = self.fn_value_of(callee, diags)?;
                let FnValue::Lambda { expr, env, module } = f else { return None };
                let (params, body) = lambda_parts(&expr)?;
                if !self.check_lambda_arity(params.len(), args.len(), &expr, e.span, diags) {
                    return None;
                }
                let (stmts, bindings) = self.bind_args(params, args, diags)?;
                pre.extend(stmts);
                let saved = self.enter(module, vec![(*env).clone(), bindings]);
                let value = self.fn_value_of(body, diags);
                self.leave(saved);
                let (more, v) = value?;
                pre.extend(more);
                Some((pre, v))
            }
            _ => None,
        }
    }

    /// Binds a function value to `name` for `let name = value;`.
    pub(super) fn bind_fn_value(
        &mut self,
        name: &ast::Ident,
        l: &ast::LetStmt,
        out: &mut hir::Block,
        diags: &mut Diagnostics,
    ) {
        if let Some(t) = &l.ty {
            diags.push(super::not_supported(t.span(), "type annotations on function values"));
        }
        let Some((pre, v)) = self.fn_value_of(&l.value, diags) else { return };
        out.stmts.extend(pre);
        let def = self.bind_local(name, DefKind::Local);
        self.fn_values.insert(def, v);
    }

    /// Resolves the arguments of a lambda or inlined function in the current
    /// scope: plain values become `let`s of fresh locals named after the
    /// parameters, function values are bound directly. Returns the
    /// statements and the parameters' names.
    fn bind_args(
        &mut self,
        params: &[ast::Param],
        args: &[ast::Expr],
        diags: &mut Diagnostics,
    ) -> Option<(Vec<hir::Stmt>, HashMap<String, DefId>)> {
        let mut stmts = Vec::new();
        let mut bindings = HashMap::new();
        for (p, a) in params.iter().zip(args) {
            if self.is_fn_value(a) {
                let (pre, v) = self.fn_value_of(a, diags)?;
                stmts.extend(pre);
                let def = self.hir.alloc_def(&p.name.name, DefKind::Local, p.name.span);
                self.fn_values.insert(def, v);
                bindings.insert(p.name.name.clone(), def);
                continue;
            }
            // A local passed as it is: the parameter names the same
            // definition, so an index variable stays one (`term(i)` with
            // `term = |i| w[i]` still infers `i`'s range from `w`).
            if let ast::ExprKind::Path(path) = &a.kind {
                if let [one] = path.as_slice() {
                    if let Some(d) = self.lookup_local(&one.name) {
                        if p.ty.is_none() && self.hir.defs[d].kind != DefKind::Const {
                            bindings.insert(p.name.name.clone(), d);
                            continue;
                        }
                    }
                }
            }
            // A literal stays a literal at each use, so it takes the type
            // its use needs, as an unsuffixed literal does.
            if is_literal(a) {
                let def = self.hir.alloc_def(&p.name.name, DefKind::Const, p.name.span);
                let item = ast::ConstItem {
                    vis: ast::Visibility::Private,
                    name: p.name.clone(),
                    ty: p.ty.clone(),
                    value: a.clone(),
                    span: a.span,
                };
                self.consts.insert(def, (item, self.current_module));
                bindings.insert(p.name.name.clone(), def);
                continue;
            }
            let value = self.resolve_expr(a, diags);
            let ty = p.ty.as_ref().and_then(|t| self.resolve_ty(t, false, diags));
            let def = self.hir.alloc_def(&p.name.name, DefKind::Local, p.name.span);
            stmts.push(hir::Stmt::Let { def, ty, value, span: a.span });
            bindings.insert(p.name.name.clone(), def);
        }
        Some((stmts, bindings))
    }

    fn check_lambda_arity(
        &mut self,
        params: usize,
        args: usize,
        lambda: &ast::Expr,
        span: Span,
        diags: &mut Diagnostics,
    ) -> bool {
        if params == args {
            return true;
        }
        let plural = |n: usize| if n == 1 { "argument" } else { "arguments" };
        let verb = if args == 1 { "was" } else { "were" };
        diags.push(
            Diagnostic::error(
                span,
                format!("this lambda takes {params} {} but {args} {} {verb} supplied", plural(params), plural(args)),
            )
            .label(lambda.span, "the lambda is defined here"),
        );
        false
    }

    /// `callee(args)` where the callee is a function value.
    pub(super) fn call_fn_value(
        &mut self,
        callee: &ast::Expr,
        args: &[ast::Expr],
        span: Span,
        diags: &mut Diagnostics,
    ) -> ExprId {
        let Some((pre, f)) = self.fn_value_of(callee, diags) else { return self.error_expr(span) };
        // A parameter declared `(A, B) -> R`: the lambda's untyped
        // parameters take the types `A, B`, and the value must be an `R`.
        let declared = match &callee.kind {
            ast::ExprKind::Path(p) if p.len() == 1 => {
                self.lookup_local(&p[0].name).and_then(|d| self.fn_value_types.get(&d).cloned())
            }
            _ => None,
        };
        let call =
            self.apply_fn_value(f, args, declared.as_ref().map(|(ps, _)| ps.as_slice()), span, callee.span, diags);
        let call = match declared {
            Some((_, ret)) => match self.resolve_ty(&ret, false, diags) {
                Some(ty) => {
                    let def = self.hir.alloc_def("result", DefKind::Local, span);
                    let tail = self.hir.alloc_expr(ExprKind::Def(def), span);
                    let stmts = vec![hir::Stmt::Let { def, ty: Some(ty), value: call, span }];
                    self.hir.alloc_expr(ExprKind::Block(hir::Block { stmts, tail: Some(tail) }), span)
                }
                None => self.error_expr(span),
            },
            None => call,
        };
        self.wrap(pre, call, span)
    }

    fn wrap(&mut self, pre: Vec<hir::Stmt>, value: ExprId, span: Span) -> ExprId {
        if pre.is_empty() {
            return value;
        }
        self.hir.alloc_expr(ExprKind::Block(hir::Block { stmts: pre, tail: Some(value) }), span)
    }

    /// Beta reduction: `f(args)` as `{ let x = arg; body }` for a lambda, as
    /// a plain call for a named function.
    fn apply_fn_value(
        &mut self,
        f: FnValue,
        args: &[ast::Expr],
        param_types: Option<&[ast::Type]>,
        span: Span,
        callee_span: Span,
        diags: &mut Diagnostics,
    ) -> ExprId {
        match f {
            FnValue::Named(def) => {
                let callee = match self.hir.defs[def].kind {
                    DefKind::Fn(g) => {
                        if args.iter().any(|a| self.is_fn_value(a)) {
                            return self.resolve_call_with_fn_values(g, callee_span, args, span, diags);
                        }
                        Callee::Fn(g)
                    }
                    DefKind::Intrinsic(i) => Callee::Intrinsic(i),
                    _ => return self.error_expr(span),
                };
                let args = args.iter().map(|a| self.resolve_expr(a, diags)).collect();
                self.hir.alloc_expr(ExprKind::Call { callee, callee_span, args }, span)
            }
            FnValue::Lambda { expr, env, module } => {
                let Some((params, body)) = lambda_parts(&expr) else { return self.error_expr(span) };
                if !self.check_lambda_arity(params.len(), args.len(), &expr, span, diags) {
                    return self.error_expr(span);
                }
                let mut params = params.to_vec();
                for (p, t) in params.iter_mut().zip(param_types.unwrap_or_default()) {
                    if p.ty.is_none() {
                        p.ty = Some(t.clone());
                    }
                }
                let Some((stmts, bindings)) = self.bind_args(&params, args, diags) else {
                    return self.error_expr(span);
                };
                let saved = self.enter(module, vec![(*env).clone(), bindings]);
                let body = if self.is_fn_value(body) {
                    diags.push(escaping(body.span).help("call the lambda's result: `f(a)(b)`"));
                    self.error_expr(body.span)
                } else {
                    self.resolve_expr(body, diags)
                };
                self.leave(saved);
                self.wrap(stmts, body, span)
            }
        }
    }

    /// Inlines a call of `g`, a function that returns a function value:
    /// its parameters and statements become statements of the caller, and
    /// its tail is the value.
    fn inline_fn_call(
        &mut self,
        g: FnId,
        args: &[ast::Expr],
        span: Span,
        diags: &mut Diagnostics,
    ) -> Option<(Vec<hir::Stmt>, FnValue)> {
        let (item, module) = self.fn_asts.get(&g)?.clone();
        if !self.returns_fn.contains(&g) {
            return None;
        }
        if item.params.len() != args.len() {
            diags.push(
                Diagnostic::arity(span, item.params.len(), args.len())
                    .label(item.name.span, format!("`{}` is defined here", item.name.name)),
            );
            return None;
        }
        if self.inline_depth >= MAX_INLINE_DEPTH {
            diags.push(Diagnostic::error(span, "functions that return function values call each other without end"));
            return None;
        }
        let (mut stmts, bindings) = self.bind_args(&item.params, args, diags)?;
        let body = item.body.as_ref()?;
        self.inline_depth += 1;
        let saved = self.enter(module, vec![bindings]);
        self.current_fn = None;
        let given: Vec<&ast::Stmt> = body.stmts.iter().collect();
        // The tail is read below as written: members it reads keep a copy.
        let fused = self.fuse_recurrence_groups(&given, None, diags);
        let body_stmts: Vec<&ast::Stmt> = match &fused {
            Some(f) => f.stmts.iter().collect(),
            None => given,
        };
        self.note_clauses(body_stmts.iter().copied());
        self.scopes.push(HashMap::new());
        let mut block = hir::Block { stmts: Vec::new(), tail: None };
        for s in body_stmts {
            self.resolve_stmt(s, &mut block, diags);
        }
        let value = match tail_of(body) {
            Some(t) if self.is_fn_value(t) => self.fn_value_of(t, diags),
            _ => {
                diags.push(Diagnostic::bug(span, format!("`{}` does not return a function value", item.name.name)));
                None
            }
        };
        self.leave(saved);
        self.inline_depth -= 1;
        let (pre, v) = value?;
        stmts.extend(block.stmts);
        stmts.extend(pre);
        Some((stmts, v))
    }

    /// Whether a call of `g` with `args` passes function values, so that it
    /// needs a specialization.
    pub(super) fn needs_specialization(&mut self, g: FnId, args: &[ast::Expr]) -> bool {
        self.functional.contains_key(&g) || args.iter().any(|a| self.is_fn_value(a))
    }

    /// A parameter of the generic function being resolved that it calls:
    /// its calls stay unresolved in the template, which is only ever used
    /// through specializations.
    pub(super) fn is_fn_placeholder(&self, e: &ast::Expr) -> bool {
        let ast::ExprKind::Path(p) = &e.kind else { return false };
        let [one] = p.as_slice() else { return false };
        let Some(f) = self.current_fn else { return false };
        self.lookup_local(&one.name).is_some_and(|d| self.hir.defs[d].kind == DefKind::Param)
            && self.functional.get(&f).is_some_and(|m| m.contains_key(&one.name))
    }

    /// `g(args)` where some arguments are function values (or `g` calls a
    /// parameter): a call of the specialization of `g` for those values,
    /// with the locals they capture as extra arguments.
    pub(super) fn resolve_call_with_fn_values(
        &mut self,
        g: FnId,
        callee_span: Span,
        args: &[ast::Expr],
        span: Span,
        diags: &mut Diagnostics,
    ) -> ExprId {
        let Some((item, _)) = self.fn_asts.get(&g).cloned() else { return self.error_expr(span) };
        if item.params.len() != args.len() {
            diags.push(
                Diagnostic::arity(span, item.params.len(), args.len())
                    .label(item.name.span, format!("`{}` is defined here", item.name.name)),
            );
            return self.error_expr(span);
        }
        let functional = self.functional.get(&g).cloned().unwrap_or_default();
        let mut pre = Vec::new();
        let mut values = Vec::new();
        let mut plain = Vec::new();
        for (p, a) in item.params.iter().zip(args) {
            if self.is_fn_value(a) {
                let Some((s, v)) = self.fn_value_of(a, diags) else { return self.error_expr(span) };
                pre.extend(s);
                values.push(Some(v));
            } else if let Some(called_at) = functional.get(&p.name.name) {
                if self.is_fn_placeholder(a) {
                    return self.error_expr(span);
                }
                diags.push(
                    Diagnostic::error(
                        a.span,
                        format!(
                            "`{}` calls its parameter `{}`, so this argument must be a function",
                            item.name.name, p.name.name
                        ),
                    )
                    .label(*called_at, format!("`{}` is called here", p.name.name))
                    .help("pass a lambda such as `|x| x * 2.0` or the name of a function"),
                );
                return self.error_expr(span);
            } else {
                values.push(None);
                plain.push(self.resolve_expr(a, diags));
            }
        }
        let Some((spec, captures)) = self.specialize(g, &values, span, diags) else { return self.error_expr(span) };
        for c in captures {
            plain.push(self.hir.alloc_expr(ExprKind::Def(c), callee_span));
        }
        let call = self.hir.alloc_expr(ExprKind::Call { callee: Callee::Fn(spec), callee_span, args: plain }, span);
        self.wrap(pre, call, span)
    }

    /// The names a lambda captures: those its body mentions that are local
    /// where it was written (other than its parameters).
    fn captured_names(expr: &ast::Expr, env: &HashMap<String, DefId>) -> Vec<String> {
        let Some((params, body)) = lambda_parts(expr) else { return Vec::new() };
        mentioned_names(body)
            .into_iter()
            .filter(|n| env.contains_key(n) && !params.iter().any(|p| &p.name.name == n))
            .collect()
    }

    /// The run-time locals `v` captures, through the function values it
    /// captures, in a deterministic order, without repeats.
    fn collect_captures(&self, v: &FnValue, out: &mut Vec<(String, DefId)>) {
        let FnValue::Lambda { expr, env, .. } = v else { return };
        for name in Self::captured_names(expr, env) {
            let d = env[&name];
            // A constant (a literal argument of an inlined call) is its
            // value wherever it is read: nothing to pass.
            if self.hir.defs[d].kind == DefKind::Const {
                continue;
            }
            match self.fn_values.get(&d) {
                Some(inner) => self.collect_captures(inner, out),
                None if !out.iter().any(|(_, o)| *o == d) => out.push((name, d)),
                None => {}
            }
        }
    }

    /// What identifies a function value for specialization: the lambda's
    /// text and module, and which of its names are function values.
    fn fn_value_key(&self, v: &FnValue) -> String {
        match v {
            FnValue::Named(d) => format!("fn{}", d.raw()),
            FnValue::Lambda { expr, env, module } => {
                let caps: Vec<String> = Self::captured_names(expr, env)
                    .into_iter()
                    .map(|n| match self.fn_values.get(&env[&n]) {
                        Some(inner) => format!("{n}={}", self.fn_value_key(inner)),
                        // A constant is part of the code, not an argument.
                        None if self.hir.defs[env[&n]].kind == DefKind::Const => format!("{n}=c{}", env[&n].raw()),
                        None => n,
                    })
                    .collect();
                format!("m{module}:{}[{}]", crate::syntax::pretty::pretty_expr(expr), caps.join(","))
            }
        }
    }

    /// `v` with each captured run-time local replaced by its parameter in a
    /// specialization.
    fn remap(&mut self, v: &FnValue, mapping: &HashMap<DefId, DefId>) -> FnValue {
        let FnValue::Lambda { expr, env, module } = v else { return v.clone() };
        let mut new_env = HashMap::new();
        for name in Self::captured_names(expr, env) {
            let d = env[&name];
            let new = match self.fn_values.get(&d).cloned() {
                Some(inner) => {
                    let inner = self.remap(&inner, mapping);
                    let span = self.hir.defs[d].span;
                    let nd = self.hir.alloc_def(&name, DefKind::Local, span);
                    self.fn_values.insert(nd, inner);
                    nd
                }
                None => mapping.get(&d).copied().unwrap_or(d),
            };
            new_env.insert(name, new);
        }
        FnValue::Lambda { expr: expr.clone(), env: Rc::new(new_env), module: *module }
    }

    /// The specialization of `g` for the function values `values` (by
    /// parameter; None for the parameters that stay), and the locals to
    /// pass for what the values capture.
    fn specialize(
        &mut self,
        g: FnId,
        values: &[Option<FnValue>],
        span: Span,
        diags: &mut Diagnostics,
    ) -> Option<(FnId, Vec<DefId>)> {
        let (item, module) = self.fn_asts.get(&g)?.clone();
        let mut captures = Vec::new();
        for v in values.iter().flatten() {
            self.collect_captures(v, &mut captures);
        }
        let key = format!(
            "{}|{}",
            g.raw(),
            values
                .iter()
                .map(|v| v.as_ref().map(|v| self.fn_value_key(v)).unwrap_or_default())
                .collect::<Vec<_>>()
                .join(";")
        );
        let capture_defs: Vec<DefId> = captures.iter().map(|(_, d)| *d).collect();
        if let Some(&spec) = self.specializations.get(&key) {
            return Some((spec, capture_defs));
        }
        if self.specializations.len() >= MAX_SPECIALIZATIONS {
            diags.push(Diagnostic::error(
                span,
                format!("more than {MAX_SPECIALIZATIONS} specializations of functions for function values"),
            ));
            return None;
        }
        let template = self.hir.fns[g].clone();
        let spec = self.new_private_fn(
            &item.name.name,
            item.name.span,
            template.stdlib,
            template.module_path.clone(),
            template.span,
        );
        self.hir.fns[spec].origin = Some((g, span));
        self.specializations.insert(key, spec);

        let mut mapping = HashMap::new();
        for (name, d) in &captures {
            let span = self.hir.defs[*d].span;
            mapping.insert(*d, self.hir.alloc_def(name, DefKind::Param, span));
        }
        let saved = self.enter(module, vec![HashMap::new()]);
        self.current_fn = Some(spec);
        let mut params = Vec::new();
        for (p, v) in item.params.iter().zip(values) {
            match v {
                Some(v) => {
                    let v = self.remap(v, &mapping);
                    let d = self.hir.alloc_def(&p.name.name, DefKind::Local, p.name.span);
                    self.fn_values.insert(d, v);
                    if let Some(ast::Type::Fn { params, ret, .. }) = &p.ty {
                        self.fn_value_types.insert(d, (params.clone(), (**ret).clone()));
                    }
                    self.scopes[0].insert(p.name.name.clone(), d);
                }
                None => {
                    let ty = p.ty.as_ref().and_then(|t| self.resolve_ty(t, true, diags));
                    let d = self.hir.alloc_def(&p.name.name, DefKind::Param, p.name.span);
                    self.scopes[0].insert(p.name.name.clone(), d);
                    params.push(hir::Param { def: d, ty, span: p.span });
                }
            }
        }
        for (_, d) in &captures {
            let span = self.hir.defs[*d].span;
            params.push(hir::Param { def: mapping[d], ty: None, span });
        }
        self.in_generic = true;
        let ret = item.ret.as_ref().and_then(|t| self.resolve_ty(t, true, diags));
        let body = match &item.body {
            Some(b) => self.resolve_block(b, diags),
            None => hir::Block { stmts: Vec::new(), tail: None },
        };
        self.leave(saved);
        let func = &mut self.hir.fns[spec];
        func.params = params;
        func.ret = ret;
        func.body = body;
        Some((spec, capture_defs))
    }

    /// A use of a name bound to a function value, or of a function that
    /// returns one, where a plain value is needed.
    pub(super) fn report_fn_value_use(&mut self, path: &[ast::Ident], span: Span, diags: &mut Diagnostics) -> ExprId {
        let _ = path;
        diags.push(escaping(span));
        self.escaped_fn_value = true;
        self.error_expr(span)
    }
}

/// Calls `f` on every expression of a block.
fn walk_block(b: &ast::Block, f: &mut dyn FnMut(&ast::Expr)) {
    let e = ast::Expr { kind: ast::ExprKind::Block(b.clone()), span: b.span };
    crate::syntax::visit::walk_expr(&e, f);
}

/// A numeric or boolean literal, possibly negated.
fn is_literal(e: &ast::Expr) -> bool {
    match &e.kind {
        ast::ExprKind::Lit(l) => !matches!(l, ast::Lit::Str(_)),
        ast::ExprKind::Unary { op: ast::UnOp::Neg, expr } => is_literal(expr),
        _ => false,
    }
}
