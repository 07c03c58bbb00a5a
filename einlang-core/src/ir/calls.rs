//! The call graph of a loop IR program, by function: for each function (its
//! index in `Program::fns`), the functions its body calls, each once in the
//! order of its first call, and whether any of those calls passes or
//! returns more than scalars. Built in one walk of the bodies
//! (`Program::call_graph`); `opt` (which functions device code reaches) and
//! the CUDA back end (which host functions get a CUDA twin, which are bound
//! to device code) read it instead of walking bodies and finding callees by
//! name. A call that names no function of the program (the validator's
//! error) is not an edge.

use std::collections::HashMap;

use crate::ir::{visit, Expr, ExprKind, Program, Repr};

/// One callee of a function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Callee {
    /// The callee's index in `Program::fns`.
    pub func: usize,
    /// Whether some call of it takes or returns something other than
    /// scalars.
    pub tensors: bool,
}

/// The callees of every function of a program.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CallGraph {
    callees: Vec<Vec<Callee>>,
}

impl CallGraph {
    /// The call graph of `p`.
    pub fn of(p: &Program) -> CallGraph {
        let index: HashMap<&str, usize> = p.fns.iter().enumerate().map(|(i, f)| (f.name.as_str(), i)).collect();
        let callees = p
            .fns
            .iter()
            .map(|f| {
                let mut out: Vec<Callee> = Vec::new();
                let mut add = |e: &Expr| {
                    let ExprKind::Call { func, args } = &e.kind else { return };
                    let Some(&g) = index.get(func.as_str()) else { return };
                    let tensors =
                        !(matches!(e.ty, Repr::Scalar(_)) && args.iter().all(|a| matches!(a.ty, Repr::Scalar(_))));
                    match out.iter_mut().find(|c| c.func == g) {
                        Some(c) => c.tensors |= tensors,
                        None => out.push(Callee { func: g, tensors }),
                    }
                };
                for s in &f.body {
                    visit::for_each_stmt_expr(s, &mut |e| walk(e, &mut add));
                }
                walk(&f.result, &mut add);
                out
            })
            .collect();
        CallGraph { callees }
    }

    /// The functions `f` calls.
    pub fn callees(&self, f: usize) -> &[Callee] {
        self.callees.get(f).map(Vec::as_slice).unwrap_or(&[])
    }

    /// Which functions `roots` reach (themselves included) through the
    /// calls `follow` accepts, by index.
    pub fn reach(&self, roots: impl IntoIterator<Item = usize>, follow: impl Fn(&Callee) -> bool) -> Vec<bool> {
        let mut reached = vec![false; self.callees.len()];
        let mut work: Vec<usize> = Vec::new();
        for r in roots {
            if r < reached.len() && !reached[r] {
                reached[r] = true;
                work.push(r);
            }
        }
        while let Some(f) = work.pop() {
            for c in self.callees(f) {
                if follow(c) && !reached[c.func] {
                    reached[c.func] = true;
                    work.push(c.func);
                }
            }
        }
        reached
    }
}

/// Calls `visit` on `e` and every expression inside it, statements of
/// blocks included.
fn walk(e: &Expr, visit: &mut dyn FnMut(&Expr)) {
    visit(e);
    visit::for_each_child(e, &mut |c| walk(c, visit));
}

impl Program {
    /// The program's call graph, built from its bodies as they are.
    pub fn call_graph(&self) -> CallGraph {
        CallGraph::of(self)
    }
}
