//! Monomorphization: one instance of a generic function per combination of
//! argument element types and ranks (not extents).
//!
//! Analysis records every call of a generic function that has no instance
//! yet (`Tables::mono_requests`). This driver copies the function for each
//! new key (`transform::instantiate`), gives the copy's untyped parameters the
//! argument types (tensor extents become fresh dimension symbols, so one
//! instance serves every size), points the call at it (`analysis::Instances::calls`),
//! and analyzes again, until no request is left. Instances calling generic
//! functions are discovered in the next round.

use std::collections::HashMap;

use super::instantiate::instantiate;
use crate::analysis::{analyze, Instances, Tables, Ty};
use crate::base::scalar::ScalarKind;
use crate::base::span::Span;
use crate::diag::{Diagnostic, Diagnostics};
use crate::hir::{DefId, DefKind, DimAnn, ExprId, FnId, Hir, Skip, TyAnn};

/// More rounds than this means generic functions instantiate each other
/// without end (polymorphic recursion).
const MAX_ROUNDS: usize = 32;
/// A bound on instances, against exponential instantiation.
const MAX_INSTANCES: usize = 512;

/// What an instance is specialized on: element type and rank.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Key {
    Scalar(ScalarKind),
    Tensor(ScalarKind, usize),
    Tuple(Vec<Key>),
    Str,
    Dyn(ScalarKind),
    Jagged(ScalarKind),
    Strs,
}

fn key(t: &Ty) -> Option<Key> {
    Some(match t {
        Ty::Scalar(k) => Key::Scalar(*k),
        Ty::Tensor(k, dims) => Key::Tensor(*k, dims.len()),
        Ty::Tuple(items) => Key::Tuple(items.iter().map(key).collect::<Option<_>>()?),
        Ty::Str => Key::Str,
        Ty::Dyn(k) => Key::Dyn(*k),
        Ty::Jagged(k) => Key::Jagged(*k),
        Ty::Strs(_) => Key::Strs,
        Ty::Error => return None,
    })
}

fn key_text(k: &Key) -> String {
    match k {
        Key::Scalar(s) => s.name().to_string(),
        Key::Tensor(s, r) => format!("{}r{r}", s.name()),
        Key::Tuple(items) => format!("t{}", items.iter().map(key_text).collect::<Vec<_>>().join("")),
        Key::Str => "str".to_string(),
        Key::Dyn(s) => format!("{}rd", s.name()),
        Key::Jagged(s) => format!("{}j", s.name()),
        Key::Strs => "strs".to_string(),
    }
}

/// Analyzes `hir`, instantiating generic functions as calls need them.
pub fn analyze_with_instances(hir: &mut Hir, diags: &mut Diagnostics) -> Tables {
    Mono::default().analyze(hir, diags)
}

/// The instances made so far, kept between analyses of a program that a
/// later pass changes (derivatives inline code that calls generic
/// functions): calls that reached an instance keep it, and new calls with
/// the same key reuse it.
#[derive(Default)]
pub struct Mono {
    cache: HashMap<(FnId, Vec<Key>), FnId>,
    instances: Instances,
}

impl Mono {
    /// Analyzes `hir`, instantiating generic functions as calls need them.
    pub fn analyze(&mut self, hir: &mut Hir, diags: &mut Diagnostics) -> Tables {
        let (tables, instances) = analyze_rounds(hir, &mut self.cache, std::mem::take(&mut self.instances), diags);
        self.instances = instances;
        tables
    }
}

fn analyze_rounds(
    hir: &mut Hir,
    cache: &mut HashMap<(FnId, Vec<Key>), FnId>,
    mut instances: Instances,
    diags: &mut Diagnostics,
) -> (Tables, Instances) {
    // Rounds that decide literal types are not counted: each one decides
    // at least one more `let`, so there are finitely many.
    let mut rounds = 0;
    let mut elements = 0;
    while rounds < MAX_ROUNDS {
        let mut round = Diagnostics::new();
        let tables = analyze(hir, &instances, &mut round);
        if decide_literal_types(hir, &mut instances, &tables) {
            // The argument types of calls may have changed: instances are
            // made again, for the new types.
            for (_, f) in hir.fns.iter_mut() {
                if f.origin.is_some() {
                    f.skip = Some(Skip::Dropped);
                }
            }
            instances.calls.clear();
            cache.clear();
            continue;
        }
        if tables.mono_requests.is_empty() {
            // Tensor-valued elements, once every call is typed: rewritten,
            // then analyzed again (each round removes every one of them).
            let tables = with_calls(tables, &instances);
            if elements < MAX_ROUNDS && super::elements::rewrite(hir, &tables) {
                elements += 1;
                continue;
            }
            diags.extend(round.into_vec());
            return (tables, instances);
        }
        rounds += 1;
        for req in &tables.mono_requests {
            let Some(keys) = req.args.iter().map(key).collect::<Option<Vec<_>>>() else { continue };
            let cache_key = (req.generic, keys);
            let inst = match cache.get(&cache_key) {
                Some(i) => *i,
                None => {
                    if cache.len() >= MAX_INSTANCES {
                        diags.push(Diagnostic::error(
                            req.span,
                            format!("more than {MAX_INSTANCES} instances of generic functions"),
                        ));
                        return (with_calls(tables, &instances), instances);
                    }
                    let (inst, errors) = new_instance(hir, req.generic, &cache_key.1, &req.args);
                    if !errors.is_empty() {
                        let name = hir.name(hir.fns[req.generic].def).to_string();
                        let mut d =
                            Diagnostic::error(req.span, format!("`{name}` cannot be called with these arguments"));
                        for e in errors {
                            d = d.label(e.span, e.message).note_all(e.notes).help_all(e.helps);
                        }
                        diags.push(d);
                        instances.broken.insert(inst);
                    }
                    hir.fns[inst].origin = Some((req.generic, req.span));
                    cache.insert(cache_key, inst);
                    inst
                }
            };
            instances.calls.insert(req.call, inst);
        }
    }
    let mut round = Diagnostics::new();
    let tables = analyze(hir, &instances, &mut round);
    let span = tables.mono_requests.first().map(|r| r.span).unwrap_or_else(Span::call_site);
    diags.push(
        Diagnostic::error(span, "generic functions instantiate each other without end")
            .note("each call of a generic function with new argument types creates a copy; these calls never stop creating new ones"),
    );
    (with_calls(tables, &instances), instances)
}

/// The instance whose parameter `def` is, with the parameter's position.
fn instance_param(hir: &Hir, def: DefId) -> Option<(FnId, usize)> {
    hir.fns
        .iter()
        .filter(|(_, f)| f.origin.is_some())
        .find_map(|(id, f)| f.params.iter().position(|p| p.def == def).map(|i| (id, i)))
}

/// The final tables, with the instance each generic call reaches.
fn with_calls(mut tables: Tables, instances: &Instances) -> Tables {
    tables.instance_calls = instances.calls.clone();
    tables
}

/// Records the literal `let`s a use needs at another number type
/// (`Tables::retypes`); whether there was a new one. A binding asked for at
/// two types keeps the first: the other use is then a type error.
fn decide_literal_types(hir: &Hir, instances: &mut Instances, tables: &Tables) -> bool {
    let mut changed = false;
    for &(def, k, at) in &tables.retypes {
        if k.is_float() {
            if let Some((inst, i)) = instance_param(hir, def) {
                // An integer literal argument used as a float in the body:
                // the calls of this instance pass that float instead.
                let calls: Vec<ExprId> = instances.calls.iter().filter(|(_, f)| **f == inst).map(|(c, _)| *c).collect();
                for c in calls {
                    if let std::collections::hash_map::Entry::Vacant(slot) = instances.literal_args.entry((c, i)) {
                        slot.insert(k);
                        changed = true;
                    }
                }
                continue;
            }
        }
        if let std::collections::hash_map::Entry::Vacant(slot) = instances.literal_types.entry(def) {
            slot.insert((k, at));
            changed = true;
        }
    }
    changed
}

fn new_instance(hir: &mut Hir, generic: FnId, keys: &[Key], args: &[Ty]) -> (FnId, Vec<Diagnostic>) {
    let template = hir.fns[generic].clone();
    let base = hir.name(template.def).to_string();
    let name = format!("{base}_{}", keys.iter().map(key_text).collect::<Vec<_>>().join("_"));
    let mut params = Vec::new();
    for (p, t) in template.params.iter().zip(args) {
        if p.ty.is_some() {
            params.push(None);
            continue;
        }
        let pname = hir.name(p.def).to_uppercase();
        params.push(Some(annotation(hir, t, &pname, p.span)));
    }
    instantiate(hir, generic, &name, params)
}

/// The annotation a parameter gets for an argument of type `t`: the same
/// element type and rank, with fresh dimension symbols (`X0`, `X1`, ...).
fn annotation(hir: &mut Hir, t: &Ty, pname: &str, span: Span) -> TyAnn {
    match t {
        Ty::Scalar(k) => TyAnn::Scalar(*k),
        Ty::Tensor(k, dims) => {
            let dims = (0..dims.len())
                .map(|i| DimAnn::Sym(hir.alloc_def(format!("{pname}{i}"), DefKind::Dim, span), span))
                .collect();
            TyAnn::Tensor { elem: *k, dims, span }
        }
        Ty::Tuple(items) => TyAnn::Tuple(
            items.iter().enumerate().map(|(i, t)| annotation(hir, t, &format!("{pname}_{i}_"), span)).collect(),
        ),
        Ty::Str => TyAnn::Str,
        Ty::Dyn(k) => TyAnn::Dyn { elem: *k, span },
        Ty::Jagged(k) => TyAnn::Jagged { elem: *k, span },
        Ty::Strs(_) => {
            TyAnn::Strs { dim: DimAnn::Sym(hir.alloc_def(format!("{pname}0"), DefKind::Dim, span), span), span }
        }
        Ty::Error => TyAnn::Tuple(Vec::new()),
    }
}
