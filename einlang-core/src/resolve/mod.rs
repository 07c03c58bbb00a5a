//! Name resolution: AST to HIR.
//!
//! Items are hoisted: every module's functions and submodules are declared
//! before any body is resolved, so calls may precede definitions. `use`
//! items are resolved next, then bodies, with lexical scopes for parameters,
//! dimension symbols, locals (shadowing allowed), where-bindings and index
//! variables (scoped to their statement). The standard library (parsed once
//! per process by `crate::source::stdlib`) is mounted as the module `std`.
//!
//! Function values (lambdas, closures, functions passed by name) are
//! resolved away here, so the HIR never holds one: see `closures`.
//!
//! Errors are collected; an unresolved name becomes `ExprKind::Error` so later
//! passes stay quiet about it.

mod closures;
mod computed;
mod einsum;
mod globals;
mod mutual;
mod suggest;
#[cfg(test)]
mod tests;

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use crate::base::intrinsic::Intrinsic;
use crate::base::span::{self, Span};
use crate::diag::{Diagnostic, Diagnostics};
use crate::hir::{self, Callee, DefId, DefKind, ExprId, ExprKind, Hir, Slot, TyAnn, Where};
use crate::source::stdlib::Stdlib;
use crate::syntax::{ast, visit};

/// Resolves a parsed program, with the standard library (parsed once per
/// process, see `crate::source::stdlib`) mounted as `std`, into HIR.
///
/// The library never names the program, so it is resolved first, on its
/// own, and that state is kept for the thread (`resolved_stdlib`): every
/// later macro call starts from a copy of it and resolves only its own
/// program.
pub fn resolve_program(program: &ast::Program, stdlib: &Rc<Stdlib>, diags: &mut Diagnostics) -> Hir {
    let (mut r, library_errors) = resolved_stdlib(stdlib);
    diags.extend(library_errors.into_iter().map(|e| Diagnostic::bug(Span::call_site(), e)));
    let first_fn = r.hir.fns.len();
    let root = r.new_module(None);
    r.root = root;
    r.declare_items(root, &program.items, false, diags);
    r.resolve_uses(root, &program.items, diags);
    r.plan_captures(program);
    r.find_fn_values(first_fn);
    r.resolve_bodies(root, &program.items, diags);
    r.resolve_main(program, diags);
    r.attach_captures(diags);
    r.hir.mark_unused_stdlib();
    r.hir
}

/// A copy of the resolver state after the standard library alone, made
/// once per thread for the library `stdlib` (the one `source::stdlib`
/// keeps), with the library's errors as text (there are none unless the
/// library has a bug).
fn resolved_stdlib(stdlib: &Rc<Stdlib>) -> (Resolver, Vec<String>) {
    type Cached = (Rc<Stdlib>, Resolver, Vec<String>);
    thread_local! {
        static RESOLVED: RefCell<Option<Cached>> = const { RefCell::new(None) };
    }
    RESOLVED.with(|cell| {
        let mut cached = cell.borrow_mut();
        if !cached.as_ref().is_some_and(|(lib, _, _)| Rc::ptr_eq(lib, stdlib)) {
            // Every span made here is detached: the state outlives this
            // macro call, and compiler spans do not.
            let (r, errors) = span::detached(|| resolve_stdlib(stdlib));
            *cached = Some((stdlib.clone(), r, errors));
        }
        let (_, r, errors) = cached.as_ref().expect("just filled");
        (r.clone(), errors.clone())
    })
}

/// The resolver state with the standard library mounted as `std` and its
/// bodies resolved; no program yet.
fn resolve_stdlib(stdlib: &Stdlib) -> (Resolver, Vec<String>) {
    let mut diags = Diagnostics::new();
    let mut r = Resolver::new();
    let ids = r.mount_stdlib(stdlib, &mut diags);
    let modules: Vec<(ModId, &ast::Program)> = ids.into_iter().zip(stdlib.modules.iter().map(|m| &m.program)).collect();
    for (m, p) in &modules {
        r.resolve_uses(*m, &p.items, &mut diags);
    }
    r.find_fn_values(0);
    for (m, p) in &modules {
        r.resolve_bodies(*m, &p.items, &mut diags);
    }
    let errors = diags.iter().map(|d| format!("standard library: {}", d.primary_text())).collect();
    (r, errors)
}

type ModId = usize;

#[derive(Clone, Default)]
struct Module {
    parent: Option<ModId>,
    names: HashMap<String, DefId>,
    /// Child modules that share their name with a function or constant of
    /// this module (`std::math::exp`, the function, and `std::math::exp`,
    /// the seed's submodule holding it): paths look here for a segment
    /// that has more segments after it.
    submodules: HashMap<String, DefId>,
}

#[derive(Clone)]
struct Resolver {
    hir: Hir,
    modules: Vec<Module>,
    module_of_def: HashMap<DefId, ModId>,
    root: ModId,
    /// Lexical scopes of the body being resolved, innermost last.
    scopes: Vec<HashMap<String, DefId>>,
    /// The module whose names are visible in the body being resolved.
    current_module: ModId,
    /// The `std` module, once mounted.
    std_def: Option<DefId>,
    /// The function declared for each `fn` item (by address of the item,
    /// which outlives resolution).
    fn_of_item: HashMap<*const ast::FnItem, hir::FnId>,
    /// Per block being resolved (innermost last): for each name whose
    /// indexed `let`s form one recurrence, how many clauses it has.
    clause_counts: Vec<HashMap<String, usize>>,
    /// Recurrences whose last clause has not been seen yet, by name.
    pending: HashMap<String, PendingRecurrence>,
    /// The recurrence whose clause is being resolved (its reads of itself
    /// are allowed).
    in_clause: Option<String>,
    /// Where the temporaries of indexed computed values (`f(x)[j]`) can be
    /// evaluated once, outermost first (see `computed`).
    frames: Vec<computed::Frame>,
    /// The frame each temporary placed in one is evaluated at.
    temp_frame: HashMap<DefId, usize>,
    /// Names a module got from a glob import (an explicit definition or
    /// import of the same name replaces them).
    glob_names: std::collections::HashSet<(ModId, String)>,
    /// Names of inline modules (the root and the standard library's modules
    /// have none here).
    module_names: HashMap<ModId, String>,
    /// Whether named rest indices are allowed: in any function and in
    /// top-level statements (a typed function's and the top level's are
    /// expanded after resolution, see `transform::instantiate::expand_typed_rests`),
    /// not in library code that is not a function.
    in_generic: bool,
    /// `const` items with the module they are defined in.
    consts: HashMap<DefId, (ast::ConstItem, ModId)>,
    /// Consts whose value is being resolved (to report cycles).
    const_stack: Vec<DefId>,
    /// Locals bound to function values (see `closures`).
    fn_values: HashMap<DefId, closures::FnValue>,
    /// The declared type (`(f32, f32) -> f32`) of a parameter bound to a
    /// function value in a specialization: its parameter and result types.
    fn_value_types: HashMap<DefId, (Vec<ast::Type>, ast::Type)>,
    /// The syntax of every function with its module, for specializations
    /// and inlining.
    fn_asts: HashMap<hir::FnId, (std::rc::Rc<ast::FnItem>, ModId)>,
    /// The parameters each function calls, with the span of a call.
    functional: HashMap<hir::FnId, HashMap<String, Span>>,
    /// Functions whose result is a function value (inlined at every call).
    returns_fn: std::collections::HashSet<hir::FnId>,
    /// Specializations of functions for function values, by key.
    specializations: HashMap<String, hir::FnId>,
    /// The function made for each einsum call (by its equation's span and text).
    einsum_fns: HashMap<String, hir::FnId>,
    /// The function whose body is being resolved (None for `main` and
    /// inlined bodies).
    current_fn: Option<hir::FnId>,
    /// The parameters of the derivative rule being resolved (their `@p`
    /// are differentials).
    rule_params: Vec<DefId>,
    /// How many calls of functions returning function values are being
    /// inlined.
    inline_depth: usize,
    /// Set when a function value was used where it cannot be.
    escaped_fn_value: bool,
    /// Locals whose value used a function value where it cannot be.
    poisoned: std::collections::HashSet<DefId>,
    /// For each function, the top-level bindings it reads, each with the
    /// hidden parameter that carries it.
    captures: HashMap<hir::FnId, Vec<(String, DefId)>>,
}

/// The clauses of a recurrence seen so far.
#[derive(Clone)]
struct PendingRecurrence {
    def: DefId,
    clauses: Vec<hir::IndexedDef>,
    remaining: usize,
    first: Span,
}

impl Resolver {
    fn new() -> Resolver {
        Resolver {
            hir: Hir::default(),
            modules: Vec::new(),
            module_of_def: HashMap::new(),
            root: 0,
            scopes: Vec::new(),
            current_module: 0,
            std_def: None,
            fn_of_item: HashMap::new(),
            clause_counts: Vec::new(),
            pending: HashMap::new(),
            in_clause: None,
            frames: Vec::new(),
            temp_frame: HashMap::new(),
            consts: HashMap::new(),
            in_generic: false,
            module_names: HashMap::new(),
            glob_names: Default::default(),
            const_stack: Vec::new(),
            fn_values: HashMap::new(),
            fn_value_types: HashMap::new(),
            fn_asts: HashMap::new(),
            functional: HashMap::new(),
            returns_fn: Default::default(),
            specializations: HashMap::new(),
            einsum_fns: HashMap::new(),
            current_fn: None,
            rule_params: Vec::new(),
            inline_depth: 0,
            escaped_fn_value: false,
            poisoned: Default::default(),
            captures: HashMap::new(),
        }
    }

    /// The child module `name` of `module`, also where a function or
    /// constant has the same name.
    fn child_module(&self, module: ModId, name: &str) -> Option<DefId> {
        let m = &self.modules[module];
        m.submodules.get(name).or_else(|| m.names.get(name)).copied()
    }

    fn new_module(&mut self, parent: Option<ModId>) -> ModId {
        self.modules.push(Module { parent, ..Module::default() });
        self.modules.len() - 1
    }

    /// Mounts the standard library's modules under `std` and declares their
    /// items; returns each module's id, in the order of `stdlib.modules`.
    fn mount_stdlib(&mut self, stdlib: &Stdlib, diags: &mut Diagnostics) -> Vec<ModId> {
        let std_mod = self.new_module(None);
        let std_def = self.hir.alloc_def("std", DefKind::Module, Span::call_site());
        self.module_of_def.insert(std_def, std_mod);
        let mut ids = Vec::new();
        for module in &stdlib.modules {
            let m = self.new_module(Some(std_mod));
            let def = self.hir.alloc_def(module.name, DefKind::Module, Span::call_site());
            self.module_of_def.insert(def, m);
            self.modules[std_mod].names.insert(module.name.to_string(), def);
            self.declare_items(m, &module.program.items, true, diags);
            ids.push(m);
        }
        self.std_def = Some(std_def);
        ids
    }
}

impl Resolver {
    fn declare_items(&mut self, module: ModId, items: &[ast::Item], stdlib: bool, diags: &mut Diagnostics) {
        for item in items {
            match item {
                ast::Item::Fn(f) => {
                    if let Some(attr) = f.attrs.iter().find(|a| a.name.name == "builtin") {
                        if stdlib && attr.args.first().is_some_and(|a| a.name == "einsum") {
                            let def = self.hir.alloc_def(&f.name.name, DefKind::Einsum, f.name.span);
                            self.define_item(module, &f.name, def, diags);
                            continue;
                        }
                        let which = match attr.args.first().and_then(|a| hir::Builtin::declared(&a.name)) {
                            Some(b) if stdlib => b,
                            _ => {
                                diags.push(Diagnostic::error(
                                    attr.span,
                                    "`#[builtin]` is reserved for the standard library",
                                ));
                                continue;
                            }
                        };
                        let def = self.hir.alloc_def(&f.name.name, DefKind::Builtin(which), f.name.span);
                        self.define_item(module, &f.name, def, diags);
                        continue;
                    }
                    if let Some(intr) = f.attrs.iter().find(|a| a.name.name == "intrinsic") {
                        if !stdlib {
                            diags.push(Diagnostic::error(
                                intr.span,
                                "`#[intrinsic]` is reserved for the standard library",
                            ));
                            continue;
                        }
                        let Some(arg) = intr.args.first() else {
                            diags.push(Diagnostic::bug(intr.span, "intrinsic without a name"));
                            continue;
                        };
                        let Some(which) = intrinsic_by_name(&arg.name) else {
                            diags.push(Diagnostic::bug(intr.span, format!("unknown intrinsic `{}`", arg.name)));
                            continue;
                        };
                        let def = self.hir.alloc_def(&f.name.name, DefKind::Intrinsic(which), f.name.span);
                        self.define_item(module, &f.name, def, diags);
                        continue;
                    }
                    let mut device = None;
                    let mut shard = None;
                    for attr in &f.attrs {
                        if attr.name.name == "shard" {
                            match attr.args.as_slice() {
                                [sym] if sym.name.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_') => {
                                    if shard.is_some() {
                                        diags.push(Diagnostic::error(
                                            attr.span,
                                            "a function is sharded along one symbol",
                                        ));
                                    }
                                    shard = Some((sym.name.clone(), attr.span));
                                }
                                _ => diags.push(
                                    Diagnostic::error(attr.span, "`#[shard]` takes one dimension symbol")
                                        .help("name the dimension whose axes are split across ranks: `#[shard(B)]`"),
                                ),
                            }
                        } else if attr.name.name != "device" {
                            diags.push(not_supported(attr.span, "attributes on functions"));
                        } else if attr.args.len() == 1 && attr.args[0].name == "cuda" {
                            device = Some(attr.span);
                        } else {
                            diags.push(
                                Diagnostic::error(attr.span, "unknown device")
                                    .help("the one device target is CUDA: `#[device(cuda)]`"),
                            );
                        }
                    }
                    if f.body.is_none() {
                        diags.push(
                            Diagnostic::error(f.span, format!("function `{}` has no body", f.name.name))
                                .help("add a body: `{ ... }`"),
                        );
                        continue;
                    }
                    let def = self.hir.alloc_def(&f.name.name, DefKind::Local, f.name.span);
                    let fn_id = self.hir.fns.alloc(hir::Function {
                        def,
                        public: f.vis == ast::Visibility::Public,
                        docs: f.docs.clone(),
                        params: Vec::new(),
                        ret: None,
                        body: hir::Block { stmts: Vec::new(), tail: None },
                        is_main: false,
                        stdlib,
                        module_path: self.module_path(module),
                        span: f.span,
                        origin: None,
                        skip: None,
                        device,
                        shard,
                    });
                    self.hir.defs[def].kind = DefKind::Fn(fn_id);
                    self.fn_of_item.insert(f as *const ast::FnItem, fn_id);
                    self.fn_asts.insert(fn_id, (std::rc::Rc::new(f.clone()), module));
                    self.define_item(module, &f.name, def, diags);
                }
                ast::Item::Mod(m) => {
                    if m.external {
                        diags.push(
                            Diagnostic::error(
                                m.span,
                                format!("`mod {};` names a file, which only `include_ein!` loads", m.name.name),
                            )
                            .help(format!("write the module inline: `mod {} {{ ... }}`", m.name.name)),
                        );
                    }
                    let child = self.new_module(Some(module));
                    self.module_names.insert(child, m.name.name.clone());
                    let def = self.hir.alloc_def(&m.name.name, DefKind::Module, m.name.span);
                    self.module_of_def.insert(def, child);
                    self.define_item(module, &m.name, def, diags);
                    self.declare_items(child, &m.items, stdlib, diags);
                }
                ast::Item::Const(c) => {
                    let def = self.hir.alloc_def(&c.name.name, DefKind::Const, c.name.span);
                    self.define_item(module, &c.name, def, diags);
                    self.consts.insert(def, (c.clone(), module));
                }
                ast::Item::DerivRule(_) => {}
                ast::Item::Use(_) | ast::Item::Stmt(_) => {}
            }
        }
    }

    /// The names of the inline modules from the root down to `module`.
    fn module_path(&self, module: ModId) -> Vec<String> {
        let mut path = Vec::new();
        let mut m = Some(module);
        while let Some(id) = m {
            if let Some(name) = self.module_names.get(&id) {
                path.push(name.clone());
            }
            m = self.modules[id].parent;
        }
        path.reverse();
        path
    }

    fn define_item(&mut self, module: ModId, name: &ast::Ident, def: DefId, diags: &mut Diagnostics) {
        // A name brought in by a glob gives way to an explicit one, and
        // importing the same item twice is harmless.
        let from_glob = self.glob_names.remove(&(module, name.name.clone()));
        let is_module = |r: &Self, d: DefId| r.hir.defs[d].kind == DefKind::Module;
        if let Some(&prev) = self.modules[module].names.get(&name.name) {
            if is_module(self, prev) != is_module(self, def) {
                let (m, value) = if is_module(self, def) { (def, prev) } else { (prev, def) };
                self.modules[module].submodules.insert(name.name.clone(), m);
                self.modules[module].names.insert(name.name.clone(), value);
                return;
            }
        }
        if let Some(prev) = self.modules[module].names.insert(name.name.clone(), def) {
            if from_glob || prev == def {
                return;
            }
            let prev_span = self.hir.defs[prev].span;
            diags.push(
                Diagnostic::error(name.span, format!("the name `{}` is defined more than once", name.name))
                    .label(prev_span, format!("previous definition of `{}` here", name.name)),
            );
        }
    }

    fn resolve_uses(&mut self, module: ModId, items: &[ast::Item], diags: &mut Diagnostics) {
        for item in items {
            match item {
                ast::Item::Use(u) => {
                    let mut prefix = Vec::new();
                    self.resolve_use_tree(module, &u.tree, &mut prefix, diags);
                }
                ast::Item::Mod(m) => {
                    if let Some(def) = self.child_module(module, &m.name.name) {
                        if let Some(&child) = self.module_of_def.get(&def) {
                            self.resolve_uses(child, &m.items, diags);
                        }
                    }
                }
                _ => {}
            }
        }
    }

    fn resolve_use_tree(
        &mut self,
        module: ModId,
        tree: &ast::UseTree,
        prefix: &mut Vec<ast::Ident>,
        diags: &mut Diagnostics,
    ) {
        match tree {
            ast::UseTree::Path { segment, rest } => {
                prefix.push(segment.clone());
                self.resolve_use_tree(module, rest, prefix, diags);
                prefix.pop();
            }
            ast::UseTree::Group(trees, _) => {
                for t in trees {
                    self.resolve_use_tree(module, t, prefix, diags);
                }
            }
            ast::UseTree::Name { name, alias } => {
                let mut path = prefix.clone();
                path.push(name.clone());
                let Some(def) = self.resolve_module_path(module, &path, diags) else { return };
                let bind_as = alias.as_ref().unwrap_or(name);
                self.define_item(module, bind_as, def, diags);
            }
            ast::UseTree::Glob(span) => {
                let Some(def) = self.resolve_module_path(module, prefix, diags) else { return };
                let Some(&m) = self.module_of_def.get(&def) else {
                    diags.push(Diagnostic::error(*span, format!("`{}` is not a module", path_text(prefix))));
                    return;
                };
                let names: Vec<(String, DefId)> = self.modules[m].names.iter().map(|(k, v)| (k.clone(), *v)).collect();
                for (name, def) in names {
                    if let std::collections::hash_map::Entry::Vacant(slot) =
                        self.modules[module].names.entry(name.clone())
                    {
                        slot.insert(def);
                        self.glob_names.insert((module, name));
                    }
                }
            }
        }
    }

    /// Resolves an item path (`std::math::exp`, `crate::f`, `super::g`, `m::h`)
    /// starting in `module`.
    fn resolve_module_path(&mut self, module: ModId, path: &[ast::Ident], diags: &mut Diagnostics) -> Option<DefId> {
        let first = path.first()?;
        let (mut current, rest): (ModId, &[ast::Ident]) = match first.name.as_str() {
            "crate" => (self.root, &path[1..]),
            "self" => (module, &path[1..]),
            "super" => match self.modules[module].parent {
                Some(p) => (p, &path[1..]),
                None => {
                    diags.push(Diagnostic::error(first.span, "there is no parent module for `super` to refer to"));
                    return None;
                }
            },
            "std" => {
                let std_def = self.std_def?;
                (*self.module_of_def.get(&std_def)?, &path[1..])
            }
            // A module a block imported (an inline `mod` of the block; see
            // `syntax::hoist`).
            name => match self.lookup_local(name).and_then(|d| self.module_of_def.get(&d)) {
                Some(&m) if path.len() > 1 => (m, &path[1..]),
                _ => (module, path),
            },
        };
        if rest.is_empty() {
            // `use std;` or `use crate;`: refer to the module itself.
            return self.modules[current].names.get(&first.name).copied().or_else(|| {
                diags.push(Diagnostic::error(first.span, format!("`{}` cannot be imported by itself", first.name)));
                None
            });
        }
        for (i, seg) in rest.iter().enumerate() {
            let inner = (i + 1 < rest.len()).then(|| self.modules[current].submodules.get(&seg.name)).flatten();
            let Some(&def) = inner.or_else(|| self.modules[current].names.get(&seg.name)) else {
                let prefix_text = path_text(&path[..path.len() - rest.len() + i]);
                let mut d = Diagnostic::error(
                    seg.span,
                    if prefix_text.is_empty() {
                        format!("cannot find `{}` in this module", seg.name)
                    } else {
                        format!("cannot find `{}` in `{}`", seg.name, prefix_text)
                    },
                );
                let candidates: Vec<&str> = self.modules[current].names.keys().map(|s| s.as_str()).collect();
                if let Some(s) = suggest::closest(&seg.name, candidates) {
                    d = d.help(format!("a name with a similar spelling exists: `{s}`"));
                }
                diags.push(d);
                return None;
            };
            if i + 1 == rest.len() {
                return Some(def);
            }
            match self.module_of_def.get(&def) {
                Some(&m) => current = m,
                None => {
                    diags.push(Diagnostic::error(seg.span, format!("`{}` is not a module", seg.name)));
                    return None;
                }
            }
        }
        None
    }
}

fn not_supported(span: Span, what: &str) -> Diagnostic {
    Diagnostic::error(span, format!("{what} are not supported yet"))
        .note("this part of the language is planned but not implemented in this version of einlang")
}

/// `x[a][b]` is `x[a, b]` (the row `x[a]`, then its element `b`): the
/// innermost base and every subscript, outermost first.
fn flatten_index<'e>(base: &'e ast::Expr, args: &'e [ast::IndexArg]) -> (&'e ast::Expr, Vec<&'e ast::IndexArg>) {
    match &base.kind {
        ast::ExprKind::Index { base: inner, args: first } => {
            let (root, mut all) = flatten_index(inner, first);
            all.extend(args);
            (root, all)
        }
        _ => (base, args.iter().collect()),
    }
}

fn path_text(path: &[ast::Ident]) -> String {
    path.iter().map(|s| s.name.as_str()).collect::<Vec<_>>().join("::")
}

fn intrinsic_by_name(name: &str) -> Option<Intrinsic> {
    Intrinsic::from_name(name)
}

/// Builtins implemented now; a user definition of the same name shadows them.
fn builtin_by_name(name: &str) -> Option<hir::Builtin> {
    Some(match name {
        "print" => hir::Builtin::Print,
        "assert" => hir::Builtin::Assert,
        "len" => hir::Builtin::Len,
        "shape" => hir::Builtin::Shape,
        "typeof" => hir::Builtin::TypeOf,
        _ => return None,
    })
}

/// The extents of a non-empty array literal: its length, then the extents
/// its entries share when they are all array literals of one shape.
fn literal_extents(value: &ast::Expr) -> Vec<usize> {
    let ast::ExprKind::Array(items) = &value.kind else { return Vec::new() };
    if items.is_empty() {
        return Vec::new();
    }
    let inner: Vec<Vec<usize>> = items.iter().map(literal_extents).collect();
    let mut out = vec![items.len()];
    if inner.iter().all(|e| !e.is_empty() && *e == inner[0]) {
        out.extend(&inner[0]);
    }
    out
}

/// The seed's built-in functions that are library functions here, by name
/// and arity: a call of one of these names with no definition in scope
/// calls the library function, without a `use`.
fn prelude_path(name: &str, arity: usize) -> Option<[&'static str; 3]> {
    Some(match (name, arity) {
        ("array_append", 2) => ["std", "array", "array_append"],
        ("sum", 1) => ["std", "array", "sum"],
        ("max", 2) => ["std", "math", "max"],
        ("min", 2) => ["std", "math", "min"],
        _ => return None,
    })
}

impl Resolver {
    fn resolve_bodies(&mut self, module: ModId, items: &[ast::Item], diags: &mut Diagnostics) {
        for item in items {
            match item {
                ast::Item::Fn(f) if f.body.is_some() && f.attrs.iter().all(|a| a.name.name != "intrinsic") => {
                    // Keyed by the item itself, so that a duplicate name does
                    // not resolve the second body into the first function.
                    let Some(&fn_id) = self.fn_of_item.get(&(f as *const ast::FnItem)) else { continue };
                    if self.returns_fn.contains(&fn_id) {
                        // Only ever inlined at its calls (see `closures`).
                        self.hir.fns[fn_id].skip = Some(hir::Skip::Inlined);
                        continue;
                    }
                    self.resolve_fn(fn_id, f, module, diags);
                }
                ast::Item::DerivRule(f) => self.resolve_rule(f, module, diags),
                ast::Item::Mod(m) => {
                    if let Some(def) = self.child_module(module, &m.name.name) {
                        if let Some(&child) = self.module_of_def.get(&def) {
                            self.resolve_bodies(child, &m.items, diags);
                        }
                    }
                }
                _ => {}
            }
        }
    }

    fn resolve_main(&mut self, program: &ast::Program, diags: &mut Diagnostics) {
        let stmts: Vec<&ast::Stmt> =
            program.items.iter().filter_map(|i| if let ast::Item::Stmt(s) = i { Some(s) } else { None }).collect();
        if stmts.is_empty() {
            return;
        }
        if let Some(&existing) = self.modules[self.root].names.get("main") {
            let span = self.hir.defs[existing].span;
            diags.push(
                Diagnostic::error(span, "a function `main` cannot be combined with top-level statements")
                    .note("top-level statements become the body of a generated `main`"),
            );
            return;
        }
        let first = stmt_span(stmts[0]);
        let def = self.hir.alloc_def("main", DefKind::Local, first);
        self.current_module = self.root;
        // Rest indices are expanded right after resolution, with the ranks
        // of the top-level bindings (see `transform::instantiate`).
        self.in_generic = true;
        self.current_fn = None;
        self.scopes = vec![HashMap::new()];
        let mut block = hir::Block { stmts: Vec::new(), tail: None };
        let fused = self.fuse_recurrence_groups(&stmts, Some(None), diags);
        let stmts: Vec<&ast::Stmt> = match &fused {
            Some(f) => f.stmts.iter().collect(),
            None => stmts,
        };
        self.note_clauses(stmts.iter().copied());
        for s in stmts {
            self.resolve_stmt(s, &mut block, diags);
        }
        self.end_clauses();
        self.scopes.clear();
        let fn_id = self.hir.fns.alloc(hir::Function {
            def,
            public: true,
            docs: Vec::new(),
            params: Vec::new(),
            ret: Some(TyAnn::Tuple(Vec::new())),
            body: block,
            is_main: true,
            stdlib: false,
            module_path: Vec::new(),
            span: first,
            origin: None,
            skip: None,
            device: None,
            shard: None,
        });
        self.hir.defs[def].kind = DefKind::Fn(fn_id);
    }

    /// A new private function named `name` (at `name_span`), whose
    /// parameters and body the caller resolves next.
    fn new_private_fn(
        &mut self,
        name: &str,
        name_span: Span,
        stdlib: bool,
        module_path: Vec<String>,
        span: Span,
    ) -> hir::FnId {
        let def = self.hir.alloc_def(name, DefKind::Local, name_span);
        let f = self.hir.fns.alloc(hir::Function {
            def,
            public: false,
            docs: Vec::new(),
            params: Vec::new(),
            ret: None,
            body: hir::Block { stmts: Vec::new(), tail: None },
            is_main: false,
            stdlib,
            module_path,
            span,
            origin: None,
            skip: None,
            device: None,
            shard: None,
        });
        self.hir.defs[def].kind = DefKind::Fn(f);
        f
    }

    /// `@fn name(params) { body }`: checked against the function `name` of
    /// the same module, and kept in `Hir::rules`.
    fn resolve_rule(&mut self, f: &ast::FnItem, module: ModId, diags: &mut Diagnostics) {
        let name = &f.name.name;
        let target = self.modules[module].names.get(name).copied().and_then(|d| match self.hir.defs[d].kind {
            DefKind::Fn(id) => Some(id),
            _ => None,
        });
        let Some(fn_id) = target else {
            diags.push(
                Diagnostic::error(f.name.span, format!("`@fn {name}` gives a derivative rule for no function"))
                    .note(format!("a rule must follow a function `{name}` defined in the same module")),
            );
            return;
        };
        let arity = self.fn_asts.get(&fn_id).map(|(item, _)| item.params.len());
        if let Some(arity) = arity.filter(|&n| n != f.params.len()) {
            let fn_span = self.hir.defs[self.hir.fns[fn_id].def].span;
            let plural = |n: usize| if n == 1 { "" } else { "s" };
            diags.push(
                Diagnostic::error(
                    f.span,
                    format!(
                        "the rule `@fn {name}` has {} parameter{} but `{name}` has {arity} parameter{}",
                        f.params.len(),
                        plural(f.params.len()),
                        plural(arity)
                    ),
                )
                .label(fn_span, format!("`{name}` is defined here"))
                .help(
                    "a rule takes the function's parameters, in order, and says its differential in terms of `@param`",
                ),
            );
            return;
        }
        // A parameter typed in both must have the same type.
        let fn_params = self.fn_asts.get(&fn_id).map(|(item, _)| item.params.clone()).unwrap_or_default();
        for (rp, fp) in f.params.iter().zip(&fn_params) {
            let (Some(rt), Some(ft)) = (&rp.ty, &fp.ty) else { continue };
            let (rs, fs) = (crate::syntax::pretty::pretty_type(rt), crate::syntax::pretty::pretty_type(ft));
            if rs != fs {
                diags.push(
                    Diagnostic::error(
                        rp.span,
                        format!("the rule's parameter `{}` is `{rs}`, but `{name}` takes `{fs}`", rp.name.name),
                    )
                    .label(fp.span, format!("`{name}`'s parameter is declared here"))
                    .help("a rule's parameters have the types of the function's parameters"),
                );
                return;
            }
        }
        if self.hir.rules.contains_key(&fn_id) {
            diags.push(Diagnostic::error(f.name.span, format!("`{name}` has two derivative rules")));
            return;
        }
        self.current_module = module;
        self.current_fn = None;
        self.scopes = vec![HashMap::new()];
        let mut params = Vec::new();
        for p in &f.params {
            let def = self.hir.alloc_def(&p.name.name, DefKind::Param, p.name.span);
            self.scopes[0].insert(p.name.name.clone(), def);
            params.push(def);
        }
        self.rule_params = params.clone();
        let body = match &f.body {
            Some(b) => self.resolve_block(b, diags),
            None => hir::Block { stmts: Vec::new(), tail: None },
        };
        self.rule_params.clear();
        self.scopes.clear();
        self.hir.rules.insert(fn_id, hir::DerivRule { params, body, span: f.span });
    }

    fn resolve_fn(&mut self, fn_id: hir::FnId, f: &ast::FnItem, module: ModId, diags: &mut Diagnostics) {
        self.current_module = module;
        self.in_generic = true;
        self.current_fn = Some(fn_id);
        self.scopes = vec![HashMap::new()];
        let mut params = Vec::new();
        for p in &f.params {
            // An untyped parameter makes the function generic. So does a
            // function-typed one: only specializations for the function
            // values passed to it are emitted.
            let ty = match &p.ty {
                Some(ast::Type::Fn { .. }) | None => None,
                Some(t) => self.resolve_ty(t, true, diags),
            };
            if self.scopes[0].get(&p.name.name).is_some_and(|d| self.hir.defs[*d].kind == DefKind::Param) {
                diags.push(Diagnostic::error(p.name.span, format!("parameter `{}` is declared twice", p.name.name)));
            }
            let def = self.hir.alloc_def(&p.name.name, DefKind::Param, p.name.span);
            self.scopes[0].insert(p.name.name.clone(), def);
            params.push(hir::Param { def, ty, span: p.span });
        }
        let ret = f.ret.as_ref().and_then(|t| self.resolve_ty(t, true, diags));
        let body = match &f.body {
            Some(b) => self.resolve_block(b, diags),
            None => hir::Block { stmts: Vec::new(), tail: None },
        };
        self.scopes.clear();
        let func = &mut self.hir.fns[fn_id];
        func.params = params;
        func.ret = ret;
        func.body = body;
    }

    /// Resolves a type annotation; dimension names are looked up in the
    /// function scope and, when `declare` is set, new ones are declared.
    fn resolve_ty(&mut self, ty: &ast::Type, declare: bool, diags: &mut Diagnostics) -> Option<TyAnn> {
        match ty {
            ast::Type::Scalar(k, _) => Some(TyAnn::Scalar(*k)),
            ast::Type::Str(_) => Some(TyAnn::Str),
            ast::Type::Tensor { elem, dims, span } => {
                let elem = match self.resolve_ty(elem, declare, diags)? {
                    TyAnn::Scalar(k) => k,
                    // `[str; n]` and `[str]`: a vector of strings.
                    TyAnn::Str => {
                        let dim = match dims.as_deref() {
                            None => hir::DimAnn::Unknown(*span),
                            Some([d]) => self.resolve_dim(d, declare),
                            Some(_) => {
                                diags.push(not_supported(*span, "string tensors of rank above 1"));
                                return None;
                            }
                        };
                        return Some(TyAnn::Strs { dim, span: *span });
                    }
                    _ => {
                        diags.push(not_supported(*span, "tensors of non-scalar elements"));
                        return None;
                    }
                };
                // `[T]` is a vector of unknown length, `[T; ?]`.
                let dims = match dims {
                    Some(dims) => dims.iter().map(|d| self.resolve_dim(d, declare)).collect(),
                    None => vec![hir::DimAnn::Unknown(*span)],
                };
                Some(TyAnn::Tensor { elem, dims, span: *span })
            }
            ast::Type::Tuple(items, _) => {
                let items: Option<Vec<TyAnn>> = items.iter().map(|t| self.resolve_ty(t, declare, diags)).collect();
                Some(TyAnn::Tuple(items?))
            }
            ast::Type::DynRank { elem, span } => match self.resolve_ty(elem, declare, diags)? {
                TyAnn::Scalar(elem) => Some(TyAnn::Dyn { elem, span: *span }),
                _ => {
                    diags.push(not_supported(*span, "tensors of non-scalar elements"));
                    None
                }
            },
            ast::Type::Jagged { elem, span } => match self.resolve_ty(elem, declare, diags)? {
                TyAnn::Scalar(elem) => Some(TyAnn::Jagged { elem, span: *span }),
                _ => {
                    diags.push(not_supported(*span, "jagged arrays of non-scalar elements"));
                    None
                }
            },
            ast::Type::Fn { span, .. } => {
                diags.push(
                    Diagnostic::error(*span, "a function type can only declare a parameter that receives a function")
                        .help("pass a lambda such as `|x| x * 2.0` or the name of a function"),
                );
                None
            }
        }
    }

    fn resolve_dim(&mut self, d: &ast::DimExpr, declare: bool) -> hir::DimAnn {
        match d {
            ast::DimExpr::Lit(v, s) => hir::DimAnn::Lit(*v, *s),
            ast::DimExpr::Unknown(s) => hir::DimAnn::Unknown(*s),
            ast::DimExpr::Name(id) => {
                if let Some(&def) = self.scopes[0].get(&id.name) {
                    // A dimension symbol, or a scalar parameter used as one
                    // (`fn f(n: i64) -> [f32; n]`; analysis checks it is `i64`).
                    if matches!(self.hir.defs[def].kind, DefKind::Dim | DefKind::Param) {
                        return hir::DimAnn::Sym(def, id.span);
                    }
                }
                let def = self.hir.alloc_def(&id.name, DefKind::Dim, id.span);
                if declare {
                    self.scopes[0].insert(id.name.clone(), def);
                }
                hir::DimAnn::Sym(def, id.span)
            }
            ast::DimExpr::Binary { op, lhs, rhs, span } => {
                let l = self.resolve_dim(lhs, declare);
                let r = self.resolve_dim(rhs, declare);
                hir::DimAnn::Bin(*op, Box::new(l), Box::new(r), *span)
            }
        }
    }

    /// Finds the recurrences among a block's indexed `let`s: a name defined
    /// by several of them, one with a literal slot or one that reads the
    /// name, and a single one that reads itself without an earlier binding.
    /// Pushes the clause counts for the block (popped by `end_clauses`).
    fn note_clauses<'s>(&mut self, stmts: impl Iterator<Item = &'s ast::Stmt>) {
        #[derive(Default)]
        struct Seen {
            count: usize,
            literal: bool,
            reads_self: bool,
            /// Bound by a plain `let` before its first indexed clause.
            shadowing: bool,
        }
        let mut seen: HashMap<&str, Seen> = HashMap::new();
        for s in stmts {
            let ast::Stmt::Let(l) = s else { continue };
            let ast::Pattern::Name(n) = &l.pat else { continue };
            match &l.indices {
                Some(slots) => {
                    let e = seen.entry(n.name.as_str()).or_default();
                    e.count += 1;
                    e.literal |= slots.iter().any(|s| matches!(s, ast::IndexSlot::Lit(..)));
                    e.reads_self |= mentions_index_of(&l.value, &n.name);
                }
                None => {
                    if let Some(e) = seen.get_mut(n.name.as_str()) {
                        // A plain `let` after clauses ends their group.
                        e.count = e.count.max(1);
                    } else {
                        seen.entry(n.name.as_str()).or_default().shadowing = true;
                    }
                }
            }
        }
        let mut counts = HashMap::new();
        for (name, e) in seen {
            let grouped =
                if e.count > 1 { e.literal || (e.reads_self && !e.shadowing) } else { e.count == 1 && e.reads_self };
            if grouped {
                counts.insert(name.to_string(), e.count);
            }
        }
        self.clause_counts.push(counts);
    }

    /// Ends the block opened by `note_clauses`.
    fn end_clauses(&mut self) {
        self.clause_counts.pop();
    }

    fn resolve_block(&mut self, block: &ast::Block, diags: &mut Diagnostics) -> hir::Block {
        let given: Vec<&ast::Stmt> = block.stmts.iter().collect();
        let fused = self.fuse_recurrence_groups(&given, Some(block.tail.as_deref()), diags);
        let (stmts, tail): (Vec<&ast::Stmt>, Option<&ast::Expr>) = match &fused {
            Some(f) => (f.stmts.iter().collect(), f.tail.as_ref()),
            None => (given, block.tail.as_deref()),
        };
        self.note_clauses(stmts.iter().copied());
        self.scopes.push(HashMap::new());
        // `use` items of the block (a nested `fn` became one, see
        // `syntax::hoist`) name their items in the whole block.
        for s in &stmts {
            if let ast::Stmt::Item(item) = s {
                if let ast::Item::Use(u) = &**item {
                    self.bind_block_use(&u.tree, Vec::new(), diags);
                }
            }
        }
        let mut out = hir::Block { stmts: Vec::new(), tail: None };
        for s in stmts {
            self.resolve_stmt(s, &mut out, diags);
        }
        out.tail = tail.map(|t| self.resolve_expr(t, diags));
        self.scopes.pop();
        self.end_clauses();
        out
    }

    /// Binds the names a block-level `use` imports in the innermost scope.
    fn bind_block_use(&mut self, tree: &ast::UseTree, prefix: Vec<ast::Ident>, diags: &mut Diagnostics) {
        match tree {
            ast::UseTree::Path { segment, rest } => {
                let mut p = prefix;
                p.push(segment.clone());
                self.bind_block_use(rest, p, diags);
            }
            ast::UseTree::Name { name, alias } => {
                let mut path = prefix;
                path.push(name.clone());
                if let Some(def) = self.resolve_module_path(self.current_module, &path, diags) {
                    let local = alias.as_ref().unwrap_or(name);
                    if let Some(scope) = self.scopes.last_mut() {
                        scope.insert(local.name.clone(), def);
                    }
                }
            }
            ast::UseTree::Group(items, _) => {
                for t in items {
                    self.bind_block_use(t, prefix.clone(), diags);
                }
            }
            ast::UseTree::Glob(span) => diags.push(not_supported(*span, "glob imports inside blocks")),
        }
    }

    fn bind_local(&mut self, name: &ast::Ident, kind: DefKind) -> DefId {
        let def = self.hir.alloc_def(&name.name, kind, name.span);
        if let Some(scope) = self.scopes.last_mut() {
            scope.insert(name.name.clone(), def);
        }
        def
    }

    fn lookup_local(&self, name: &str) -> Option<DefId> {
        self.scopes.iter().rev().find_map(|s| s.get(name).copied())
    }

    fn resolve_stmt(&mut self, stmt: &ast::Stmt, out: &mut hir::Block, diags: &mut Diagnostics) {
        match stmt {
            ast::Stmt::Expr(e) => {
                let e = self.resolve_expr(e, diags);
                out.stmts.push(hir::Stmt::Expr(e));
            }
            ast::Stmt::Item(item) if matches!(&**item, ast::Item::Use(_)) => {}
            ast::Stmt::Item(item) => {
                let span = match &**item {
                    ast::Item::Fn(f) | ast::Item::DerivRule(f) => f.span,
                    ast::Item::Use(u) => u.span,
                    ast::Item::Mod(m) => m.span,
                    ast::Item::Const(c) => c.span,
                    ast::Item::Stmt(s) => stmt_span(s),
                };
                diags.push(not_supported(span, "items inside blocks"));
            }
            ast::Stmt::Let(l) => self.resolve_let(l, out, diags),
        }
    }

    fn resolve_let(&mut self, l: &ast::LetStmt, out: &mut hir::Block, diags: &mut Diagnostics) {
        let name = match &l.pat {
            ast::Pattern::Name(n) => n.clone(),
            ast::Pattern::Tuple(..) | ast::Pattern::Wildcard(_) if l.indices.is_none() && l.where_clause.is_empty() => {
                let value = self.resolve_expr(&l.value, diags);
                self.destructure(&l.pat, value, l.span, out, diags);
                return;
            }
            other => {
                diags.push(
                    Diagnostic::error(other.span(), "this pattern cannot be used in `let`")
                        .help("bind a name, `_`, or a tuple of them"),
                );
                return;
            }
        };
        let Some(slots) = &l.indices else {
            if l.where_clause.is_empty() && self.is_fn_value(&l.value) {
                self.bind_fn_value(&name, l, out, diags);
                return;
            }
            let ty = l.ty.as_ref().and_then(|t| self.resolve_ty(t, false, diags));
            // A plain `let` may still carry a `where` for a reduction in its
            // value (`let s = sum[i](x[i]) where x[i] > 0.0;`).
            let (value, stray) = attach_wheres(&l.value, &l.where_clause, &[]);
            for item in &stray {
                self.report_stray_where(item, diags);
            }
            let escaped = std::mem::replace(&mut self.escaped_fn_value, false);
            let value = self.resolve_expr(&value, diags);
            let def = self.bind_local(&name, DefKind::Local);
            if std::mem::replace(&mut self.escaped_fn_value, escaped) {
                // A function value where it cannot be (`if c { f } else
                // { g }`) was reported; calls of `name` are not errors again.
                self.poisoned.insert(def);
            }
            out.stmts.push(hir::Stmt::Let { def, ty, value, span: l.span });
            return;
        };

        let clauses = self.clause_counts.last().and_then(|c| c.get(&name.name)).copied();
        if let Some(count) = clauses {
            self.resolve_clause(l, &name, slots, count, out, diags);
            return;
        }
        self.open_frame(None);
        let clause = self.resolve_indexed(l, slots, diags);
        out.stmts.extend(self.close_frame());
        let Some((hir_slots, wheres, body)) = clause else { return };
        let def = self.bind_local(&name, DefKind::Local);
        if let Some(t) = &l.ty {
            diags.push(not_supported(t.span(), "type annotations on indexed definitions"));
        }
        out.stmts.push(hir::Stmt::Indexed(hir::IndexedDef { def, slots: hir_slots, wheres, body, span: l.span }));
    }

    /// One clause of a recurrence: its reads of `name` are reads of the
    /// binding being defined, which becomes visible after its last clause.
    fn resolve_clause(
        &mut self,
        l: &ast::LetStmt,
        name: &ast::Ident,
        slots: &[ast::IndexSlot],
        count: usize,
        out: &mut hir::Block,
        diags: &mut Diagnostics,
    ) {
        if !self.pending.contains_key(&name.name) {
            let def = self.hir.alloc_def(&name.name, DefKind::Local, name.span);
            let pending = PendingRecurrence { def, clauses: Vec::new(), remaining: count, first: l.span };
            self.pending.insert(name.name.clone(), pending);
        }
        let def = self.pending[&name.name].def;
        if let Some(t) = &l.ty {
            diags.push(not_supported(t.span(), "type annotations on indexed definitions"));
        }
        let outer = self.in_clause.replace(name.name.clone());
        self.scopes.push(HashMap::from([(name.name.clone(), def)]));
        self.open_frame(Some(def));
        let clause = self.resolve_indexed(l, slots, diags);
        out.stmts.extend(self.close_frame());
        self.scopes.pop();
        self.in_clause = outer;
        let Some(p) = self.pending.get_mut(&name.name) else { return };
        if let Some((slots, wheres, body)) = clause {
            p.clauses.push(hir::IndexedDef { def, slots, wheres, body, span: l.span });
        }
        p.remaining -= 1;
        if p.remaining > 0 {
            return;
        }
        let Some(p) = self.pending.remove(&name.name) else { return };
        if let Some(scope) = self.scopes.last_mut() {
            scope.insert(name.name.clone(), def);
        }
        let span = p.first.to(l.span);
        out.stmts.push(hir::Stmt::Recurrence(hir::Recurrence { def, clauses: p.clauses, span }));
    }

    /// The slots, `where` entries and body of an indexed definition.
    fn resolve_indexed(
        &mut self,
        l: &ast::LetStmt,
        slots: &[ast::IndexSlot],
        diags: &mut Diagnostics,
    ) -> Option<(Vec<Slot>, Vec<Where>, ExprId)> {
        // Ranges are resolved outside the statement's index scope.
        enum SlotIn {
            Var(ast::Ident, Option<hir::Range>),
            Lit(i64, Span),
            Rest(ast::Ident),
        }
        let mut order = Vec::new();
        for slot in slots {
            match slot {
                ast::IndexSlot::Var(v) => order.push(SlotIn::Var(v.clone(), None)),
                ast::IndexSlot::Ranged { var, range } => {
                    let r = self.resolve_range(range, diags);
                    order.push(SlotIn::Var(var.clone(), Some(r)));
                }
                ast::IndexSlot::Rest(r) => {
                    if !self.in_generic {
                        diags.push(
                            Diagnostic::error(r.span, "named rest indices are only supported in functions")
                                .help("a function's parameters give the ranks the rest index spans"),
                        );
                        return None;
                    }
                    order.push(SlotIn::Rest(r.clone()));
                }
                ast::IndexSlot::Lit(n, span) => {
                    if *n < 0 {
                        diags.push(Diagnostic::error(*span, "an index slot cannot be negative"));
                        return None;
                    }
                    order.push(SlotIn::Lit(*n, *span));
                }
            }
        }
        let lhs_names: Vec<String> = order
            .iter()
            .filter_map(|s| match s {
                SlotIn::Var(v, _) | SlotIn::Rest(v) => Some(v.name.clone()),
                SlotIn::Lit(..) => None,
            })
            .collect();
        self.scopes.push(HashMap::new());
        let mut hir_slots = Vec::new();
        for slot in order {
            let (var, kind, range) = match slot {
                SlotIn::Lit(n, span) => {
                    hir_slots.push(Slot::Lit(n, span));
                    continue;
                }
                SlotIn::Var(v, range) => (v, DefKind::Index, range),
                SlotIn::Rest(v) => (v, DefKind::Rest, None),
            };
            if self.scopes.last().is_some_and(|s| s.contains_key(&var.name)) {
                diags.push(Diagnostic::error(var.span, format!("index `{}` appears twice on the left", var.name)));
            }
            let def = self.bind_local(&var, kind.clone());
            if kind == DefKind::Rest {
                hir_slots.push(Slot::Rest(def, var.span));
            } else {
                hir_slots.push(Slot::Var { def, range });
            }
        }
        let (value, stmt_wheres) = attach_wheres(&l.value, &l.where_clause, &lhs_names);
        let wheres = self.resolve_wheres(&stmt_wheres, diags);
        // An element that is an array literal (`let rows[i] = [x[i], y[i]];`)
        // adds its axes after the written ones: one index per axis, and the
        // body selects the literal's entry at those indices.
        let mut axes = Vec::new();
        for (axis, n) in literal_extents(&value).into_iter().enumerate() {
            let def = self.hir.alloc_def(format!("elem{axis}"), DefKind::Index, value.span);
            let start = self.hir.alloc_expr(ExprKind::Lit(ast::Lit::Int(0, None)), value.span);
            let end = self.hir.alloc_expr(ExprKind::Lit(ast::Lit::Int(n as i128, None)), value.span);
            hir_slots.push(Slot::Var { def, range: Some(hir::Range { start, end, span: value.span }) });
            axes.push(def);
        }
        let body = self.select_entry(&value, &axes, diags);
        self.scopes.pop();
        Some((hir_slots, wheres, body))
    }

    /// The entry of array literal `value` at index variables `axes` (one per
    /// nesting level, see `literal_extents`): `if e0 == 0 { a } else if e0
    /// == 1 { b } ...`.
    fn select_entry(&mut self, value: &ast::Expr, axes: &[DefId], diags: &mut Diagnostics) -> ExprId {
        let (Some((&axis, inner)), ast::ExprKind::Array(items)) = (axes.split_first(), &value.kind) else {
            return self.resolve_expr(value, diags);
        };
        let entries: Vec<ExprId> = items.iter().map(|x| self.select_entry(x, inner, diags)).collect();
        let mut acc = entries[entries.len() - 1];
        for (k, &entry) in entries.iter().enumerate().rev().skip(1) {
            let span = items[k].span;
            let var = self.hir.alloc_expr(ExprKind::Def(axis), span);
            let at = self.hir.alloc_expr(ExprKind::Lit(ast::Lit::Int(k as i128, None)), span);
            let cond = self.hir.alloc_expr(ExprKind::Binary(ast::BinOp::Eq, var, at), span);
            acc = self.hir.alloc_expr(ExprKind::If { cond, then: entry, els: Some(acc) }, span);
        }
        acc
    }

    /// `let (a, (b, _)) = value;` binds `a = value.0`, `b = value.1.0`.
    fn destructure(
        &mut self,
        pat: &ast::Pattern,
        value: ExprId,
        span: Span,
        out: &mut hir::Block,
        diags: &mut Diagnostics,
    ) {
        match pat {
            ast::Pattern::Name(n) => {
                let def = self.bind_local(n, DefKind::Local);
                out.stmts.push(hir::Stmt::Let { def, ty: None, value, span });
            }
            ast::Pattern::Wildcard(_) => out.stmts.push(hir::Stmt::Expr(value)),
            ast::Pattern::Tuple(items, pspan) => {
                // Evaluate the value once into a hidden local.
                let tmp = self.hir.alloc_def("tuple", DefKind::Local, *pspan);
                out.stmts.push(hir::Stmt::Let { def: tmp, ty: None, value, span });
                for (i, p) in items.iter().enumerate() {
                    let base = self.hir.alloc_expr(ExprKind::Def(tmp), p.span());
                    let field = self.hir.alloc_expr(ExprKind::Field(base, i as u32), p.span());
                    self.destructure(p, field, span, out, diags);
                }
            }
            other => diags.push(
                Diagnostic::error(other.span(), "this pattern cannot be used in `let`")
                    .help("bind a name, `_`, or a tuple of them"),
            ),
        }
    }

    /// Binds a name of a `match` pattern in the arm's scope.
    fn bind_pattern_name(&mut self, n: &ast::Ident, diags: &mut Diagnostics) -> DefId {
        if self.scopes.last().is_some_and(|s| s.contains_key(&n.name)) {
            diags.push(Diagnostic::error(n.span, format!("`{}` is bound more than once in this pattern", n.name)));
        }
        self.bind_local(n, DefKind::Local)
    }

    fn resolve_pat(&mut self, p: &ast::Pattern, diags: &mut Diagnostics) -> hir::Pat {
        match p {
            ast::Pattern::Wildcard(_) => hir::Pat::Wild,
            ast::Pattern::Name(n) => hir::Pat::Bind(self.bind_pattern_name(n, diags)),
            ast::Pattern::Lit(l, span) => hir::Pat::Lit(l.clone(), *span),
            ast::Pattern::Range { lo, hi, inclusive, span } => {
                hir::Pat::Range { lo: lo.clone(), hi: hi.clone(), inclusive: *inclusive, span: *span }
            }
            ast::Pattern::Tuple(items, _) => {
                hir::Pat::Tuple(items.iter().map(|p| self.resolve_pat(p, diags)).collect())
            }
            ast::Pattern::At(n, q) => {
                let inner = self.resolve_pat(q, diags);
                hir::Pat::At(self.bind_pattern_name(n, diags), Box::new(inner))
            }
            ast::Pattern::Or(alts, _) => {
                let mut names = std::collections::HashSet::new();
                globals::pattern_names(p, &mut names);
                if let Some(name) = names.into_iter().min() {
                    diags.push(
                        Diagnostic::error(p.span(), format!("`{name}` is bound inside a `|` pattern"))
                            .note("alternatives separated by `|` cannot bind names")
                            .help("write each alternative as its own arm, or match `_` and test the value in a guard"),
                    );
                    // The first alternative's names stay bound, so that the
                    // arm's uses of them are not reported again.
                    return alts.first().map_or(hir::Pat::Wild, |a| self.resolve_pat(a, diags));
                }
                hir::Pat::Or(alts.iter().map(|p| self.resolve_pat(p, diags)).collect())
            }
        }
    }

    fn report_stray_where(&mut self, item: &ast::WhereItem, diags: &mut Diagnostics) {
        if let ast::WhereItem::Range { .. } = item {
            self.resolve_wheres(std::slice::from_ref(item), diags);
            return;
        }
        let span = match item {
            ast::WhereItem::Bind { span, .. } | ast::WhereItem::Range { span, .. } => *span,
            ast::WhereItem::Guard(e) => e.span,
        };
        diags.push(
            Diagnostic::error(span, "a `where` on a plain `let` must belong to a reduction in its value")
                .help("mention one of the reduction's indices, or write the condition with `if`"),
        );
    }

    fn resolve_range(&mut self, range: &ast::RangeExpr, diags: &mut Diagnostics) -> hir::Range {
        let start = self.resolve_expr(&range.start, diags);
        let mut end = self.resolve_expr(&range.end, diags);
        if range.inclusive {
            let one = self.hir.alloc_expr(ExprKind::Lit(ast::Lit::Int(1, None)), range.end.span);
            end = self.hir.alloc_expr(ExprKind::Binary(ast::BinOp::Add, end, one), range.end.span);
        }
        hir::Range { start, end, span: range.span }
    }

    fn resolve_wheres(&mut self, items: &[ast::WhereItem], diags: &mut Diagnostics) -> Vec<Where> {
        let mut out = Vec::new();
        for item in items {
            match item {
                ast::WhereItem::Bind { name, value, .. } => {
                    let v = self.resolve_expr(value, diags);
                    let def = self.bind_local(name, DefKind::WhereBind);
                    out.push(Where::Bind { def, value: v });
                }
                ast::WhereItem::Guard(e) => {
                    let g = self.resolve_expr(e, diags);
                    out.push(Where::Guard(g));
                }
                ast::WhereItem::Range { var, span, .. } => {
                    diags.push(
                        Diagnostic::error(
                            *span,
                            format!("a range cannot appear in `where`: `{}` needs its range in brackets", var.name),
                        )
                        .help(format!("declare it where the index is introduced: `[{} in a..b]`", var.name)),
                    );
                }
            }
        }
        out
    }

    fn error_expr(&mut self, span: Span) -> ExprId {
        self.hir.alloc_expr(ExprKind::Error, span)
    }

    fn resolve_expr(&mut self, e: &ast::Expr, diags: &mut Diagnostics) -> ExprId {
        let span = e.span;
        let kind = match &e.kind {
            ast::ExprKind::Lit(lit) => ExprKind::Lit(lit.clone()),
            ast::ExprKind::Path(path) => return self.resolve_value_path(path, span, diags),
            ast::ExprKind::Unary { op, expr } => ExprKind::Unary(*op, self.resolve_expr(expr, diags)),
            ast::ExprKind::Binary { op, lhs, rhs } => {
                let l = self.resolve_expr(lhs, diags);
                let r = self.resolve_expr(rhs, diags);
                ExprKind::Binary(*op, l, r)
            }
            ast::ExprKind::Cast { expr, ty } => {
                let inner = self.resolve_expr(expr, diags);
                match ty {
                    ast::Type::Scalar(k, _) => ExprKind::Cast(inner, *k),
                    // `x as [f32]`, as the seed writes it: every element
                    // converted, the shape kept.
                    ast::Type::Tensor { elem, dims: None, span: ty_span } => match **elem {
                        ast::Type::Scalar(k, _) => ExprKind::Cast(inner, k),
                        _ => {
                            diags.push(not_supported(*ty_span, "tensors of non-scalar elements"));
                            return self.error_expr(span);
                        }
                    },
                    t @ (ast::Type::Tensor { .. } | ast::Type::DynRank { .. }) => {
                        match self.resolve_ty(t, false, diags) {
                            Some(ann) => ExprKind::TensorCast(inner, ann),
                            None => return self.error_expr(span),
                        }
                    }
                    other => {
                        diags.push(not_supported(other.span(), "casts to non-scalar types"));
                        return self.error_expr(span);
                    }
                }
            }
            ast::ExprKind::Call { callee, args } => return self.resolve_call(callee, args, span, diags),
            ast::ExprKind::Index { base, args } => {
                let mut pending_let = None;
                let (base, args) = flatten_index(base, args);
                let first = self.hir.defs.len();
                let b = self.resolve_expr(base, diags);
                // A computed value (`f(x)[j]`, `(a + b)[i]`) is bound to a
                // temporary, evaluated once (see `computed`); a constant
                // axis of `shape` stays a dimension.
                let literal_axis =
                    matches!(args.as_slice(), [ast::IndexArg::Expr(a)] if matches!(a.kind, ast::ExprKind::Lit(_)));
                let shape_dim =
                    matches!(self.hir.exprs[b].kind, ExprKind::Builtin(hir::Builtin::Shape, _)) && literal_axis;
                let b = if !shape_dim && !matches!(self.hir.exprs[b].kind, ExprKind::Def(_) | ExprKind::Error) {
                    let (var, here) = self.bind_computed(base, b, first);
                    pending_let = here;
                    var
                } else {
                    b
                };
                let mut out = Vec::new();
                for a in args {
                    match a {
                        ast::IndexArg::Expr(x) => out.push(self.resolve_expr(x, diags)),
                        ast::IndexArg::Rest(r) => match self.lookup_local(&r.name) {
                            Some(d) if self.hir.defs[d].kind == DefKind::Rest => {
                                out.push(self.hir.alloc_expr(ExprKind::Rest(d), r.span))
                            }
                            _ => {
                                diags.push(
                                    Diagnostic::error(
                                        r.span,
                                        format!("`..{}` is not a rest index of this definition", r.name),
                                    )
                                    .help(format!("name it on the left: `let y[..{}, ...] = ...`", r.name)),
                                );
                                return self.error_expr(span);
                            }
                        },
                    }
                }
                let index = ExprKind::Index { base: b, args: out };
                if let Some(stmt) = pending_let {
                    let tail = self.hir.alloc_expr(index, span);
                    ExprKind::Block(hir::Block { stmts: vec![stmt], tail: Some(tail) })
                } else {
                    index
                }
            }
            ast::ExprKind::Field { base, index, .. } => ExprKind::Field(self.resolve_expr(base, diags), *index),
            ast::ExprKind::Reduce { op, vars, body, where_clause, .. } => {
                // A range is evaluated before the reduction's loops, so it
                // cannot read their indices.
                for v in vars {
                    let Some(r) = &v.range else { continue };
                    let mut names = closures::mentioned_names(&r.start);
                    names.extend(closures::mentioned_names(&r.end));
                    let own =
                        vars.iter().find(|w| names.contains(&w.var.name) && self.lookup_local(&w.var.name).is_none());
                    if let Some(w) = own {
                        diags.push(
                            Diagnostic::error(
                                r.span,
                                format!("the range of `{}` reads `{}`, an index of the same reduction", v.var.name, w.var.name),
                            )
                            .help(format!(
                                "nest the reductions, so that `{}` has a value where the range is evaluated: `{}[{}](..{}[{} in ..](..))`",
                                w.var.name,
                                op.name(),
                                w.var.name,
                                op.name(),
                                v.var.name
                            )),
                        );
                        return self.error_expr(span);
                    }
                }
                let ranges: Vec<Option<hir::Range>> =
                    vars.iter().map(|v| v.range.as_ref().map(|r| self.resolve_range(r, diags))).collect();
                self.open_frame(None);
                self.scopes.push(HashMap::new());
                let mut red_vars = Vec::new();
                for (v, range) in vars.iter().zip(ranges) {
                    if self.scopes.last().is_some_and(|s| s.contains_key(&v.var.name)) {
                        diags.push(Diagnostic::error(
                            v.var.span,
                            format!("index `{}` appears twice in this reduction", v.var.name),
                        ));
                    }
                    if v.rest && !self.in_generic {
                        diags.push(
                            Diagnostic::error(v.var.span, "named rest indices are only supported in functions")
                                .help("a function's parameters give the ranks the rest index spans"),
                        );
                        self.scopes.pop();
                        self.close_frame();
                        return self.error_expr(span);
                    }
                    // A rest index (`sum[..r](x[..r])`) stands for the axes
                    // it spans; each instance expands it.
                    let def = self.bind_local(&v.var, if v.rest { DefKind::Rest } else { DefKind::Index });
                    red_vars.push(hir::RedVar { def, range });
                }
                let wheres = self.resolve_wheres(where_clause, diags);
                let b = self.resolve_expr(body, diags);
                self.scopes.pop();
                let reduce = self.hir.alloc_expr(ExprKind::Reduce { op: *op, vars: red_vars, wheres, body: b }, span);
                return self.close_frame_around(reduce, span);
            }
            ast::ExprKind::If { cond, then, els } => {
                let c = self.resolve_expr(cond, diags);
                let t_block = self.resolve_block(then, diags);
                let t = self.hir.alloc_expr(ExprKind::Block(t_block), then.span);
                let e2 = els.as_ref().map(|x| self.resolve_expr(x, diags));
                ExprKind::If { cond: c, then: t, els: e2 }
            }
            ast::ExprKind::Block(b) => ExprKind::Block(self.resolve_block(b, diags)),
            ast::ExprKind::Array(items) => ExprKind::Array(items.iter().map(|x| self.resolve_expr(x, diags)).collect()),
            ast::ExprKind::Tuple(items) => ExprKind::Tuple(items.iter().map(|x| self.resolve_expr(x, diags)).collect()),
            ast::ExprKind::Interp(parts) => ExprKind::Interp(
                parts
                    .iter()
                    .map(|p| match p {
                        ast::StrPart::Text(t) => hir::InterpPart::Text(t.clone()),
                        ast::StrPart::Interp { expr, precision } => {
                            hir::InterpPart::Value(self.resolve_expr(expr, diags), *precision)
                        }
                    })
                    .collect(),
            ),
            ast::ExprKind::Match { scrutinee, arms } => {
                let scrutinee = self.resolve_expr(scrutinee, diags);
                let mut out = Vec::new();
                for arm in arms {
                    self.scopes.push(HashMap::new());
                    let pat = self.resolve_pat(&arm.pat, diags);
                    let guard = arm.guard.as_ref().map(|g| self.resolve_expr(g, diags));
                    let body = self.resolve_expr(&arm.body, diags);
                    self.scopes.pop();
                    out.push(hir::Arm { pat, guard, body, span: arm.span });
                }
                ExprKind::Match { scrutinee, arms: out }
            }
            ast::ExprKind::Jagged(rows) => ExprKind::Jagged(rows.iter().map(|x| self.resolve_expr(x, diags)).collect()),
            ast::ExprKind::Comprehension { body, clauses, rows } => {
                self.open_frame(None);
                self.scopes.push(HashMap::new());
                let mut out = Vec::new();
                for c in clauses {
                    match c {
                        ast::CompClause::Gen { var, iter } => match &iter.kind {
                            ast::ExprKind::Range(r) => {
                                let range = self.resolve_range(r, diags);
                                let def = self.bind_local(var, DefKind::Index);
                                out.push(hir::CompClause::Range { def, range });
                            }
                            _ => {
                                let over = self.resolve_expr(iter, diags);
                                let def = self.bind_local(var, DefKind::Local);
                                out.push(hir::CompClause::Each { def, over });
                            }
                        },
                        ast::CompClause::Filter(f) => out.push(hir::CompClause::Filter(self.resolve_expr(f, diags))),
                    }
                }
                let body = self.resolve_expr(body, diags);
                self.scopes.pop();
                let collect = self.hir.alloc_expr(ExprKind::Comprehension { body, clauses: out, rows: *rows }, span);
                return self.close_frame_around(collect, span);
            }
            ast::ExprKind::Lambda { .. } => {
                diags.push(closures::escaping(span));
                return self.error_expr(span);
            }
            ast::ExprKind::Deriv { target, wrt } => {
                let (Some(target), Some(wrt)) = (self.binding(target, diags), self.binding(wrt, diags)) else {
                    return self.error_expr(span);
                };
                ExprKind::Deriv { target, wrt }
            }
            ast::ExprKind::Differential(name) => {
                if let Some(def) = self.lookup_local(&name.name).filter(|d| self.rule_params.contains(d)) {
                    return self.hir.alloc_expr(ExprKind::Differential(def), span);
                }
                let d = Diagnostic::error(span, "a differential `@y` alone has no value here")
                    .note("`@p` names the differential of a parameter `p` inside a rule `@fn f(p) { ... }`")
                    .help("ask for a derivative with `@y / @x`");
                diags.push(d);
                return self.error_expr(span);
            }
            ast::ExprKind::Range(_) => return self.unsupported(span, "ranges as values", diags),
        };
        self.hir.alloc_expr(kind, span)
    }

    /// The parameter or `let` binding a derivative request names.
    fn binding(&mut self, name: &ast::Ident, diags: &mut Diagnostics) -> Option<DefId> {
        let Some(def) = self.lookup_local(&name.name) else {
            diags.push(Diagnostic::error(name.span, format!("cannot find `{}` in this scope", name.name)));
            return None;
        };
        if matches!(self.hir.defs[def].kind, DefKind::Param | DefKind::Local) {
            return Some(def);
        }
        let d = Diagnostic::error(name.span, format!("`{}` is not a parameter or a `let` binding", name.name))
            .note("a derivative `@y / @x` relates two named values: parameters or bindings");
        diags.push(d);
        None
    }

    fn unsupported(&mut self, span: Span, what: &str, diags: &mut Diagnostics) -> ExprId {
        diags.push(not_supported(span, what));
        self.error_expr(span)
    }

    /// Every name visible from the body being resolved (for suggestions).
    fn visible_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.scopes.iter().flat_map(|s| s.keys().cloned()).collect();
        names.extend(self.modules[self.current_module].names.keys().cloned());
        names
    }

    fn unknown_name(&self, ident: &ast::Ident, what: &str) -> Diagnostic {
        let mut d = Diagnostic::error(ident.span, format!("cannot find {what} `{}` in this scope", ident.name));
        let names = self.visible_names();
        if let Some(s) = suggest::closest(&ident.name, names.iter().map(|s| s.as_str())) {
            d = d.help(format!("a name with a similar spelling exists: `{s}`"));
        } else if let Some(module) = self.stdlib_home(&ident.name) {
            d = d.help(format!("the standard library has it: `use {module}::{};`", ident.name));
        } else if let Some((outer, inner)) = self.nested_in() {
            d = d
                .note(format!(
                    "`{inner}` is nested in `{outer}`: it sees its own parameters and the items around it, not the locals of `{outer}`"
                ))
                .help(format!("pass `{}` to `{inner}` as a parameter", ident.name));
        }
        d
    }

    /// For a function nested in another (hoisted as `outer__inner`, see
    /// `syntax::hoist`) whose body is being resolved: both names.
    fn nested_in(&self) -> Option<(String, String)> {
        let f = self.current_fn?;
        let name = self.hir.name(self.hir.fns[f].def);
        let (outer, inner) = name.rsplit_once("__")?;
        let names = &self.modules[self.current_module].names;
        let is_fn = |n: &str| names.get(n).is_some_and(|d| matches!(self.hir.defs[*d].kind, DefKind::Fn(_)));
        (is_fn(outer) && !outer.is_empty()).then(|| (outer.to_string(), inner.to_string()))
    }

    /// The standard-library module that defines `name` publicly (an
    /// intrinsic is in `std::math`), for the help of an unknown name.
    fn stdlib_home(&self, name: &str) -> Option<String> {
        if intrinsic_by_name(name).is_some() {
            return Some("std::math".to_string());
        }
        let std_mod = *self.module_of_def.get(&self.std_def?)?;
        let mut modules: Vec<(&String, &DefId)> = self.modules[std_mod].names.iter().collect();
        modules.sort();
        modules.into_iter().find_map(|(module, def)| {
            let m = self.module_of_def.get(def)?;
            let found = self.modules[*m].names.get(name)?;
            match self.hir.defs[*found].kind {
                DefKind::Fn(f) if self.hir.fns[f].public => Some(format!("std::{module}")),
                _ => None,
            }
        })
    }

    fn resolve_value_path(&mut self, path: &[ast::Ident], span: Span, diags: &mut Diagnostics) -> ExprId {
        let def = if path.len() == 1 {
            let ident = &path[0];
            if let Some(p) = self.pending.get(&ident.name) {
                if self.in_clause.as_deref() != Some(ident.name.as_str()) {
                    let d = Diagnostic::error(ident.span, format!("`{}` is read before its last clause", ident.name))
                        .label(p.first, format!("the recurrence `{}` starts here", ident.name))
                        .note("the clauses of a recurrence define one tensor; it exists after the last of them")
                        .help("move this statement after the last clause, or give the tensor another name");
                    diags.push(d);
                    return self.error_expr(span);
                }
            }
            match self
                .lookup_local(&ident.name)
                .or_else(|| self.modules[self.current_module].names.get(&ident.name).copied())
                .or_else(|| self.capture_global(ident))
            {
                Some(d) => d,
                None => {
                    let d = self.unknown_name(ident, "value");
                    diags.push(d);
                    return self.error_expr(span);
                }
            }
        } else {
            match self.resolve_module_path(self.current_module, path, diags) {
                Some(d) => d,
                None => return self.error_expr(span),
            }
        };
        if self.fn_values.contains_key(&def) {
            return self.report_fn_value_use(path, span, diags);
        }
        match self.hir.defs[def].kind {
            DefKind::Fn(_) | DefKind::Intrinsic(_) | DefKind::Builtin(_) => self.report_fn_value_use(path, span, diags),
            DefKind::Module => {
                diags.push(Diagnostic::error(span, format!("`{}` is a module, not a value", path_text(path))));
                self.error_expr(span)
            }
            DefKind::Const => self.inline_const(def, span, diags),
            _ => self.hir.alloc_expr(ExprKind::Def(def), span),
        }
    }

    /// A use of a `const`: its value, resolved in the const's own module
    /// with no local scope, and converted to its declared type.
    fn inline_const(&mut self, def: DefId, span: Span, diags: &mut Diagnostics) -> ExprId {
        let Some((item, module)) = self.consts.get(&def).cloned() else {
            diags.push(Diagnostic::bug(span, "a const without a value"));
            return self.error_expr(span);
        };
        if self.const_stack.contains(&def) {
            diags.push(Diagnostic::error(
                item.name.span,
                format!("the value of `{}` depends on itself", item.name.name),
            ));
            return self.error_expr(span);
        }
        self.const_stack.push(def);
        let saved_scopes = std::mem::take(&mut self.scopes);
        let saved_frames = self.take_frames();
        let saved_module = std::mem::replace(&mut self.current_module, module);
        let mut value = self.resolve_expr(&item.value, diags);
        self.restore_frames(saved_frames);
        self.scopes = saved_scopes;
        self.current_module = saved_module;
        self.const_stack.pop();
        match &item.ty {
            Some(ast::Type::Scalar(k, _)) => value = self.hir.alloc_expr(ExprKind::Cast(value, *k), span),
            Some(other) => diags.push(not_supported(other.span(), "non-scalar `const` types")),
            None => {}
        }
        value
    }

    fn resolve_call(&mut self, callee: &ast::Expr, args: &[ast::Expr], span: Span, diags: &mut Diagnostics) -> ExprId {
        let callee_span = callee.span;
        if self.is_value_callee(callee) {
            return self.call_fn_value(callee, args, span, diags);
        }
        let ast::ExprKind::Path(path) = &callee.kind else {
            diags.push(Diagnostic::error(callee.span, "this expression is not a function"));
            return self.error_expr(span);
        };
        if let [one] = path.as_slice() {
            if let Some(d) = self.lookup_local(&one.name) {
                if self.is_fn_placeholder(callee) {
                    return self.error_expr(span);
                }
                if self.fn_values.contains_key(&d) {
                    return self.call_fn_value(callee, args, span, diags);
                }
                if self.poisoned.contains(&d) {
                    return self.error_expr(span);
                }
            }
        }
        if let Some(def) = self.item_of_path(path) {
            if let DefKind::Fn(g) = self.hir.defs[def].kind {
                if self.returns_fn.contains(&g) {
                    diags
                        .push(closures::escaping(span).help("call its result, `f(a)(b)`, or bind it: `let g = f(a);`"));
                    return self.error_expr(span);
                }
                if self.needs_specialization(g, args) {
                    return self.resolve_call_with_fn_values(g, callee_span, args, span, diags);
                }
            }
        }
        let found = if path.len() == 1 {
            let ident = &path[0];
            match self
                .lookup_local(&ident.name)
                .or_else(|| self.modules[self.current_module].names.get(&ident.name).copied())
            {
                Some(d) => Some(d),
                None => {
                    if let Some(b) = builtin_by_name(&ident.name) {
                        let args: Vec<ExprId> = args.iter().map(|a| self.resolve_expr(a, diags)).collect();
                        return self.hir.alloc_expr(ExprKind::Builtin(b, args), span);
                    }
                    match prelude_path(&ident.name, args.len()) {
                        Some(p) => {
                            let path: Vec<ast::Ident> =
                                p.iter().map(|s| ast::Ident { name: s.to_string(), span: ident.span }).collect();
                            self.resolve_module_path(self.current_module, &path, diags)
                        }
                        None => {
                            let d = self.unknown_name(ident, "function");
                            diags.push(d);
                            None
                        }
                    }
                }
            }
        } else {
            self.resolve_module_path(self.current_module, path, diags)
        };
        if found.is_some_and(|d| self.hir.defs[d].kind == DefKind::Einsum) {
            return self.resolve_einsum(args, callee_span, span, diags);
        }
        let mut args: Vec<ExprId> = args.iter().map(|a| self.resolve_expr(a, diags)).collect();
        let Some(def) = found else { return self.error_expr(span) };
        let callee = match self.hir.defs[def].kind {
            DefKind::Fn(f) => {
                let extra = self.capture_args(f, span, diags);
                args.extend(extra);
                Callee::Fn(f)
            }
            DefKind::Intrinsic(i) => Callee::Intrinsic(i),
            DefKind::Builtin(b) => return self.hir.alloc_expr(ExprKind::Builtin(b, args), span),
            // The seed's library writes constants as functions: `pi()` is
            // the constant `pi`.
            DefKind::Const if args.is_empty() => return self.resolve_value_path(path, span, diags),
            _ => {
                diags.push(
                    Diagnostic::error(callee.span, format!("`{}` is not a function", path_text(path)))
                        .label(self.hir.defs[def].span, format!("`{}` is defined here", path_text(path))),
                );
                return self.error_expr(span);
            }
        };
        self.hir.alloc_expr(ExprKind::Call { callee, callee_span, args }, span)
    }
}

fn stmt_span(s: &ast::Stmt) -> Span {
    match s {
        ast::Stmt::Let(l) => l.span,
        ast::Stmt::Expr(e) => e.span,
        ast::Stmt::Item(i) => match &**i {
            ast::Item::Fn(f) | ast::Item::DerivRule(f) => f.span,
            ast::Item::Use(u) => u.span,
            ast::Item::Mod(m) => m.span,
            ast::Item::Const(c) => c.span,
            ast::Item::Stmt(s) => stmt_span(s),
        },
    }
}

/// The standard-library module that defines `name`, for "import it" hints.
/// Whether `e` subscripts the name `name` anywhere (`name[...]`).
fn mentions_index_of(e: &ast::Expr, name: &str) -> bool {
    let mut found = false;
    visit::walk_expr(e, &mut |x| {
        if let ast::ExprKind::Index { base, .. } = &x.kind {
            if let ast::ExprKind::Path(p) = &base.kind {
                if p.len() == 1 && p[0].name == name {
                    found = true;
                }
            }
        }
    });
    found
}

/// Single-segment names an expression mentions.
fn names_in_where(item: &ast::WhereItem) -> Vec<String> {
    let mut names = Vec::new();
    if let ast::WhereItem::Range { var, .. } = item {
        names.push(var.name.clone());
    }
    let mut record = |x: &ast::Expr| {
        if let ast::ExprKind::Path(p) = &x.kind {
            if p.len() == 1 {
                names.push(p[0].name.clone());
            }
        }
    };
    visit::where_children(std::slice::from_ref(item), &mut |c| {
        if let visit::Child::Expr(x) = c {
            visit::walk_expr(x, &mut record);
        }
    });
    names
}

/// Splits a statement's `where` items between the statement and the
/// reductions of `value`: an item that mentions a reduction's index (or a
/// binding already moved into that reduction) belongs to that reduction, the
/// outermost one when several qualify. Returns the rewritten value and the
/// items that stay with the statement.
fn attach_wheres(
    value: &ast::Expr,
    items: &[ast::WhereItem],
    lhs_names: &[String],
) -> (ast::Expr, Vec<ast::WhereItem>) {
    let mut reductions: Vec<Vec<String>> = Vec::new();
    visit::walk_expr(value, &mut |x| {
        if let ast::ExprKind::Reduce { vars, .. } = &x.kind {
            reductions.push(vars.iter().map(|v| v.var.name.clone()).collect());
        }
    });
    let mut stay = Vec::new();
    let mut moved: Vec<Vec<ast::WhereItem>> = vec![Vec::new(); reductions.len()];
    for item in items {
        let names = names_in_where(item);
        let target =
            reductions.iter().position(|vars| names.iter().any(|n| vars.contains(n) && !lhs_names.contains(n)));
        match target {
            Some(k) => {
                if let ast::WhereItem::Bind { name, .. } = item {
                    reductions[k].push(name.name.clone());
                }
                moved[k].push(item.clone());
            }
            None => stay.push(item.clone()),
        }
    }
    // The same walk, so the k-th reduction is the one found above.
    let mut value = value.clone();
    let mut counter = 0usize;
    visit::walk_expr_mut(&mut value, &mut |e| {
        if let ast::ExprKind::Reduce { where_clause, .. } = &mut e.kind {
            if let Some(items) = moved.get_mut(counter) {
                where_clause.append(items);
            }
            counter += 1;
        }
    });
    (value, stay)
}
