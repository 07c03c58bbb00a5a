//! The rustdoc of a public generated function: the user's comment, then its
//! Einlang signature, the dimensions its arguments must agree on, and an
//! `# Errors` section (the Rust API guidelines' convention) listing what
//! makes it return `Err`.
//!
//! The errors come from the lowered function itself and, through calls, from
//! every function it reaches: an entry check is a possible `Error::Shape`, a
//! checked read a possible `Error::Index`, and so on. A kind is listed when
//! some statement of the function may raise it, so the section is a promise
//! about the kinds that can occur, not a claim that each will.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::base::intrinsic::Intrinsic;
use crate::base::ops::BinOp;
use crate::ir::visit::{for_each_child, for_each_stmt_expr};
use crate::ir::{EntryCheck, Expr, ExprKind, FuncId, Function, Program, Repr, Stmt};

/// A kind of `einlang::Error` a function may return, in the order the
/// `# Errors` section lists them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Shape,
    Extent,
    Rank,
    Index,
    Assert,
    Arithmetic,
    Alloc,
    Io,
    Dist,
    Device,
}

impl Kind {
    /// The bullet of the `# Errors` section.
    fn line(self) -> &'static str {
        match self {
            Kind::Shape => {
                "`einlang::Error::Shape`: a tensor argument's length along an axis differs from \
                 what the signature and the other arguments say (see above), or a result's \
                 computed extent differs from the declared one."
            }
            Kind::Extent => {
                "`einlang::Error::Extent`: an extent computed from the arguments' lengths is \
                 negative, or one index is bound to two different lengths."
            }
            Kind::Rank => {
                "`einlang::Error::Rank`: a tensor of run-time rank, or a checked conversion to a \
                 tensor type, has the wrong rank or extents."
            }
            Kind::Index => {
                "`einlang::Error::Index`: an index computed from data falls outside the tensor it \
                 reads."
            }
            Kind::Assert => "`einlang::Error::Assert`: an `assert` of the body fails.",
            Kind::Arithmetic => {
                "`einlang::Error::Arithmetic`: an integer division or remainder by zero, an \
                 integer power with a negative exponent, or a `lcm` or `factorial` that does not fit."
            }
            Kind::Alloc => {
                "`einlang::Error::Alloc`: a tensor whose size comes from the arguments (a result, a \
                 temporary, or the row-major copy of an argument passed with other strides) \
                 cannot be allocated (the process is not taken down)."
            }
            Kind::Io => "`einlang::Error::Io`: reading or writing a file fails, or its contents do not match.",
            Kind::Dist => {
                "`einlang::Error::Dist`: the ranks of the world disagree (an extent other than the \
                 sharded one differs), or communication fails. Every rank returns the same kind \
                 of error."
            }
            Kind::Device => {
                "`einlang::Error::NoDevice` or `einlang::Error::Device`: no CUDA device, or the \
                 driver, NVRTC or cuBLAS fails."
            }
        }
    }
}

/// The complete documentation of every public function of `p` that was
/// lowered from the user's source (one with a signature), by id: what
/// `f.docs` holds, followed by the generated sections.
pub fn api_docs(p: &Program) -> HashMap<FuncId, Vec<String>> {
    let kinds = error_kinds(p);
    p.functions()
        .filter(|(_, f)| f.public && f.signature.is_some())
        .map(|(id, f)| (id, document(f, &kinds[id.index()])))
        .collect()
}

/// `f`'s documentation given the kinds of error it may return.
fn document(f: &Function, kinds: &BTreeSet<Kind>) -> Vec<String> {
    let mut out = f.docs.clone();
    let para = |out: &mut Vec<String>| {
        if !out.is_empty() {
            out.push(String::new());
        }
    };
    if let Some(sig) = &f.signature {
        para(&mut out);
        out.push(" # Einlang signature".to_string());
        out.push(String::new());
        out.push(" ```text".to_string());
        out.push(format!(" {sig}"));
        out.push(" ```".to_string());
        let agree = agreements(f);
        if !agree.is_empty() {
            out.push(String::new());
            out.push(" The lengths the arguments must agree on (every axis listed has that length):".to_string());
            out.push(String::new());
            out.extend(agree.iter().map(|a| format!(" - {a}")));
        }
    }
    if f.shard.is_some() {
        para(&mut out);
        out.push(
            " Sharded: the first argument is the world of ranks; each rank passes its own \
             block of the sharded axes, and every rank returns the same status."
                .to_string(),
        );
    }
    para(&mut out);
    out.push(" # Errors".to_string());
    out.push(String::new());
    if kinds.is_empty() {
        out.push(" None: every argument the types admit gives `Ok`.".to_string());
    } else {
        out.push(" Returns `Err` in these cases:".to_string());
        out.push(String::new());
        out.extend(kinds.iter().map(|k| format!(" - {}", k.line())));
    }
    out
}

/// One line per dimension that two or more parameter axes must share:
/// ``"`D`: `x` axis 1, `w` axis 0"``, from the entry's bindings and checks.
fn agreements(f: &Function) -> Vec<String> {
    let mut axes: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    let mut add = |symbol: String, at: String| {
        if !axes.contains_key(&symbol) {
            order.push(symbol.clone());
        }
        axes.entry(symbol).or_default().push(at);
    };
    let place = |param, path: &[u32], axis| {
        let name = &f.var(param).source_name;
        let path: String = path.iter().map(|i| format!(".{i}")).collect();
        format!("`{name}{path}` axis {axis}")
    };
    for e in &f.entry {
        match e {
            EntryCheck::BindDim { dim, param, path, axis } => {
                add(f.var(*dim).source_name.clone(), place(*param, path, *axis))
            }
            EntryCheck::CheckDim { param, path, axis, symbol, .. } => add(symbol.clone(), place(*param, path, *axis)),
        }
    }
    order
        .into_iter()
        .filter_map(|symbol| {
            let at = &axes[&symbol];
            let literal = symbol.chars().all(|c| c.is_ascii_digit());
            if at.len() < 2 && !literal {
                return None;
            }
            Some(format!("`{symbol}`: {}", at.join(", ")))
        })
        .collect()
}

/// The kinds of error each function may return (by id), its callees'
/// included: those of every function it reaches in the call graph.
fn error_kinds(p: &Program) -> Vec<BTreeSet<Kind>> {
    let own: Vec<BTreeSet<Kind>> = p
        .fns
        .iter()
        .map(|f| {
            let mut scan = Scan { kinds: BTreeSet::new() };
            if f.entry.iter().any(|e| matches!(e, EntryCheck::CheckDim { .. })) {
                scan.kinds.insert(Kind::Shape);
            }
            if f.params.iter().any(|&v| matches!(f.var(v).ty, Repr::Dyn(_))) {
                scan.kinds.insert(Kind::Rank);
            }
            // A host function copies a tensor argument that is not in
            // standard layout (see `codegen/rust`'s entry): of a size the
            // caller chooses where an axis is not a constant.
            let sized_by_caller = |v| {
                f.entry.iter().any(|e| match e {
                    EntryCheck::BindDim { param, path, .. } => *param == v && path.is_empty(),
                    EntryCheck::CheckDim { param, path, expected, .. } => {
                        *param == v && path.is_empty() && expected.as_constant().is_none()
                    }
                })
            };
            let copied = |v| matches!(f.var(v).ty, Repr::Tensor(_, r) if r > 0) && sized_by_caller(v);
            if f.device.is_none() && f.params.iter().any(|&v| copied(v)) {
                scan.kinds.insert(Kind::Alloc);
            }
            if f.shard.is_some() {
                scan.kinds.insert(Kind::Dist);
            }
            if f.device.is_some() {
                scan.kinds.insert(Kind::Device);
            }
            for s in &f.body {
                scan.stmt(s);
            }
            scan.expr(&f.result);
            scan.kinds
        })
        .collect();
    p.functions()
        .map(|(id, _)| {
            let reached = p.calls().reach([id], |_| true);
            own.iter().zip(reached).filter(|(_, r)| *r).flat_map(|(k, _)| k.iter().copied()).collect()
        })
        .collect()
}

/// The kinds of error found so far in one function.
struct Scan {
    kinds: BTreeSet<Kind>,
}

impl Scan {
    fn stmt(&mut self, s: &Stmt) {
        match s {
            Stmt::Extent { .. } | Stmt::SameExtent { .. } | Stmt::Reshape { .. } => {
                self.kinds.insert(Kind::Extent);
            }
            Stmt::CheckResultDim { .. } => {
                self.kinds.insert(Kind::Shape);
            }
            Stmt::Tensor(_) | Stmt::Gemm(_) | Stmt::Recurrence(_) | Stmt::Rows(_) | Stmt::Sweep(_) => {
                self.kinds.insert(Kind::Alloc);
            }
            _ => {}
        }
        for_each_stmt_expr(s, &mut |e| self.expr(e));
    }

    fn expr(&mut self, e: &Expr) {
        let int = matches!(e.ty, Repr::Scalar(k) if k.is_int());
        let kind = match &e.kind {
            ExprKind::Read { checked: true, .. } | ExprKind::View { .. } | ExprKind::JaggedRow { .. } => {
                Some(Kind::Index)
            }
            ExprKind::Assert { .. } => Some(Kind::Assert),
            ExprKind::Binary(op, ..) if int && matches!(op, BinOp::Div | BinOp::Rem) => Some(Kind::Arithmetic),
            ExprKind::Intrinsic(Intrinsic::IntPow | Intrinsic::Lcm | Intrinsic::Factorial, _) => Some(Kind::Arithmetic),
            ExprKind::LoadNpy { .. } | ExprKind::SaveNpy { .. } | ExprKind::Fs { .. } => Some(Kind::Io),
            ExprKind::Collect { .. } => Some(Kind::Alloc),
            ExprKind::ShapeCast { .. } | ExprKind::DynShape { .. } | ExprKind::DynMap { .. } => Some(Kind::Rank),
            ExprKind::Block { stmts, .. } => {
                for s in stmts {
                    self.stmt(s);
                }
                None
            }
            _ => None,
        };
        self.kinds.extend(kind);
        if !matches!(e.kind, ExprKind::Block { .. }) {
            for_each_child(e, &mut |c| self.expr(c));
        } else if let ExprKind::Block { result, .. } = &e.kind {
            self.expr(result);
        }
    }
}
