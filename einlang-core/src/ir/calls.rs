//! The call graph of a loop IR program, by function id: for each function,
//! the functions its body calls, each once in the order of its first call,
//! and whether any of those calls passes or returns more than scalars.
//!
//! The graph is built here and nowhere else: with the program
//! (`Program::new`, when lowering builds it), for a function added to it
//! (`Program::push`), and again for one function whose calls a pass changed
//! (`Program::calls_changed`). `validate` checks that it is the graph of the
//! bodies as they are. `opt` (which functions device code reaches, the
//! calls `shard` inlines) and the back ends (which host functions get a
//! CUDA twin, which are bound to device code, which get an AVX-512 form)
//! read it instead of walking bodies. A call of an id the program does not
//! have (the validator's error) is not an edge.

use crate::ir::{visit, Expr, ExprKind, FuncId, Function, Repr};

/// One callee of a function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Callee {
    pub func: FuncId,
    /// Whether some call of it takes or returns something other than
    /// scalars.
    pub tensors: bool,
}

/// The callees of every function of a program, by id.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CallGraph {
    callees: Vec<Vec<Callee>>,
}

impl CallGraph {
    /// The call graph of the functions `fns` (ids are their indices).
    pub fn of(fns: &[Function]) -> CallGraph {
        let n = fns.len();
        CallGraph { callees: fns.iter().map(|f| edges(f, n)).collect() }
    }

    /// Adds function `f` as the next id.
    pub(super) fn push(&mut self, f: &Function) {
        let n = self.callees.len() + 1;
        self.callees.push(edges(f, n));
    }

    /// Takes the calls of `f`, the function `id`, again.
    pub(super) fn set(&mut self, id: FuncId, f: &Function) {
        let n = self.callees.len();
        if let Some(slot) = self.callees.get_mut(id.index()) {
            *slot = edges(f, n);
        }
    }

    /// How many functions the graph has.
    pub fn len(&self) -> usize {
        self.callees.len()
    }

    pub fn is_empty(&self) -> bool {
        self.callees.is_empty()
    }

    /// The functions `f` calls.
    pub fn callees(&self, f: FuncId) -> &[Callee] {
        self.callees.get(f.index()).map(Vec::as_slice).unwrap_or(&[])
    }

    /// Which functions `roots` reach (themselves included) through the
    /// calls `follow` accepts, indexed by id.
    pub fn reach(&self, roots: impl IntoIterator<Item = FuncId>, follow: impl Fn(&Callee) -> bool) -> Vec<bool> {
        let mut reached = vec![false; self.callees.len()];
        let mut work: Vec<FuncId> = Vec::new();
        for r in roots {
            if r.index() < reached.len() && !reached[r.index()] {
                reached[r.index()] = true;
                work.push(r);
            }
        }
        while let Some(f) = work.pop() {
            for c in self.callees(f) {
                if follow(c) && !reached[c.func.index()] {
                    reached[c.func.index()] = true;
                    work.push(c.func);
                }
            }
        }
        reached
    }
}

/// The callees of `f` in a program of `n` functions.
fn edges(f: &Function, n: usize) -> Vec<Callee> {
    let mut out: Vec<Callee> = Vec::new();
    let mut add = |e: &Expr| {
        let ExprKind::Call { func, args } = &e.kind else { return };
        if func.index() >= n {
            return;
        }
        let tensors = !(matches!(e.ty, Repr::Scalar(_)) && args.iter().all(|a| matches!(a.ty, Repr::Scalar(_))));
        match out.iter_mut().find(|c| c.func == *func) {
            Some(c) => c.tensors |= tensors,
            None => out.push(Callee { func: *func, tensors }),
        }
    };
    for s in &f.body {
        visit::for_each_stmt_expr(s, &mut |e| walk(e, &mut add));
    }
    walk(&f.result, &mut add);
    out
}

/// Calls `visit` on `e` and every expression inside it, statements of
/// blocks included.
fn walk(e: &Expr, visit: &mut dyn FnMut(&Expr)) {
    visit(e);
    visit::for_each_child(e, &mut |c| walk(c, visit));
}
