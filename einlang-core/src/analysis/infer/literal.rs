//! Unsuffixed literals: which expressions take their number type from
//! context, which literal `let` decides the type of a value, and the
//! retyping of those `let`s when a use needs another type of the same kind
//! (see `Tables::retypes`).

use crate::analysis::cx::{Cx, FnState};
use crate::analysis::Ty;
use crate::base::ops::{BinOp, Lit, RedOp, UnOp};
use crate::base::scalar::ScalarKind;
use crate::base::span::Span;
use crate::diag::Diagnostic;
use crate::hir::{Callee, DefId, DefKind, ExprId, ExprKind, Hir};

impl<'a> Cx<'a> {
    /// Whether `e` is an unsuffixed literal (possibly negated or combined
    /// with other such literals) whose type comes from context.
    pub(crate) fn flexible(&self, e: ExprId) -> bool {
        match &self.hir.exprs[e].kind {
            ExprKind::Lit(Lit::Int(_, None)) | ExprKind::Lit(Lit::Float(_, None)) => true,
            ExprKind::Unary(UnOp::Neg, x) => self.flexible(*x),
            ExprKind::Binary(op, a, b) if !op.is_comparison() && !op.is_logical() => {
                self.flexible(*a) && self.flexible(*b)
            }
            // A recursive call whose result type is a guess takes the type
            // its use needs (see `infer_call`).
            ExprKind::Call { callee: Callee::Fn(g), .. } => {
                let g = self.inst.calls.get(&e).copied().unwrap_or(*g);
                self.rec_guess.contains_key(&g) && self.fn_state[g.index()] == FnState::InProgress
            }
            // An entry of an array-literal element (`let p[0] = [1.0, 0.0];`).
            ExprKind::If { then, els: Some(els), .. } => self.flexible_tail(*then) && self.flexible_tail(*els),
            _ => false,
        }
    }

    /// Whether `e` is made only of unsuffixed literals: a literal tree or
    /// an array literal of them.
    pub(crate) fn literal_value(&self, e: ExprId) -> bool {
        match &self.hir.exprs[e].kind {
            ExprKind::Array(items) => !items.is_empty() && items.iter().all(|x| self.literal_value(*x)),
            _ => self.flexible(e),
        }
    }

    /// The literal `let` (one of `flex_lets`) whose type decides the
    /// element type of `e`, if any.
    pub(crate) fn origin(&self, e: ExprId) -> Option<DefId> {
        match &self.hir.exprs[e].kind {
            ExprKind::Def(d) if self.flex_lets.contains(d) => Some(*d),
            ExprKind::Def(d) => self.literal_origin.get(d).copied(),
            ExprKind::Index { base, .. } => self.origin(*base),
            ExprKind::Unary(UnOp::Neg, x) => self.origin(*x),
            // Only when the other operand is literal-made too: a typed
            // operand fixes the type itself.
            ExprKind::Binary(op, a, b) if !op.is_comparison() && !op.is_logical() => self.joint_origin(*a, Some(*b)),
            ExprKind::Reduce { op, body, .. }
                if !matches!(op, RedOp::Any | RedOp::All | RedOp::ArgMax | RedOp::ArgMin) =>
            {
                self.origin(*body)
            }
            ExprKind::Block(b) => b.tail.and_then(|t| self.origin(t)),
            ExprKind::If { then, els, .. } => self.joint_origin(*then, *els),
            _ => None,
        }
    }

    /// The origin of a value made of `a` and `b` of one type: one of theirs,
    /// when each is literal-made (an origin, or a literal itself).
    fn joint_origin(&self, a: ExprId, b: Option<ExprId>) -> Option<DefId> {
        let (oa, ob) = (self.origin(a), b.and_then(|b| self.origin(b)));
        let literal = |x: ExprId, o: Option<DefId>| o.is_some() || self.flexible_tail(x);
        if !literal(a, oa) || b.is_some_and(|b| !literal(b, ob)) {
            return None;
        }
        oa.or(ob)
    }

    /// Two operands of different number types `ka` and `kb` of one kind:
    /// when exactly one of them takes its type from a literal `let`, that
    /// `let` gets the other's type in the next round (as Rust infers it).
    pub(super) fn retype_to_match(&mut self, a: ExprId, ka: ScalarKind, b: ExprId, kb: ScalarKind, at: Span) {
        if ka.is_int() != kb.is_int() || ka.is_float() != kb.is_float() {
            self.float_literal_argument(a, ka, b, kb, at);
            return;
        }
        let decided = |d: DefId| self.inst.literal_types.contains_key(&d);
        match (self.origin(a), self.origin(b)) {
            (Some(d), None) => self.t.retypes.push((d, kb, at)),
            (None, Some(d)) => self.t.retypes.push((d, ka, at)),
            // A binding whose type a use already decided fixes the other.
            (Some(da), Some(db)) if !decided(da) && decided(db) => self.t.retypes.push((da, kb, at)),
            (Some(da), Some(db)) if decided(da) && !decided(db) => self.t.retypes.push((db, ka, at)),
            // Both still open (their defaults differ, `f32` for a `let` and
            // `f64` for a recurrence): the narrower takes the wider type.
            (Some(da), Some(db)) if !decided(da) && !decided(db) && da != db => {
                if width(ka) < width(kb) {
                    self.t.retypes.push((da, kb, at));
                } else {
                    self.t.retypes.push((db, ka, at));
                }
            }
            _ => {}
        }
    }

    /// An integer operand and a float one: when the integer is a parameter
    /// of an instance (`b` in `fn g(a, b) { a * b }` instantiated at `(f32,
    /// i32)`), an unsuffixed integer literal argument that gave it its type
    /// is that float (an integer literal in a float context is that float).
    /// Recorded for the instance's parameter; monomorphization passes it on
    /// to the calls of that instance whose argument is such a literal
    /// (`Instances::literal_args`), which take the float in the next round.
    /// A literal `let` never changes kind.
    fn float_literal_argument(&mut self, a: ExprId, ka: ScalarKind, b: ExprId, kb: ScalarKind, at: Span) {
        let (int_side, float) = match (ka.is_int(), kb.is_int()) {
            (true, false) if kb.is_float() => (a, kb),
            (false, true) if ka.is_float() => (b, ka),
            _ => return,
        };
        let ExprKind::Def(p) = self.hir.exprs[int_side].kind else { return };
        if self.hir.defs[p].kind == DefKind::Param && self.literal_origin.contains_key(&p) {
            self.t.retypes.push((p, float, at));
        }
    }

    /// A value of type `found` where `wanted` is needed (a declared result,
    /// an annotated `let`): the literal bindings it comes from take the
    /// wanted number types (component-wise for a tuple written in place).
    pub(crate) fn retype_to(&mut self, e: ExprId, found: &Ty, wanted: &Ty, at: Span) {
        match (&self.hir.exprs[e].kind, found, wanted) {
            (ExprKind::Tuple(items), Ty::Tuple(fs), Ty::Tuple(ws))
                if items.len() == fs.len() && fs.len() == ws.len() =>
            {
                for ((x, f), w) in items.clone().iter().zip(fs).zip(ws) {
                    self.retype_to(*x, f, w, at);
                }
            }
            _ => {
                let (Some(kf), Some(kw)) = (found.elem(), wanted.elem()) else { return };
                if kf != kw && kf.is_int() == kw.is_int() && kf.is_float() == kw.is_float() {
                    if let Some(d) = self.origin(e) {
                        self.t.retypes.push((d, kw, at));
                    }
                }
            }
        }
    }

    /// For the fused tensor of recurrences that read each other (see
    /// `resolve::mutual`): why its members must share an element type.
    pub(crate) fn fused_group_note(&self, def: DefId) -> Option<String> {
        let members = self.hir.fused_groups.get(self.name(def))?;
        let names: Vec<String> = members.iter().map(|m| format!("`{m}`")).collect();
        Some(format!(
            "{} read each other, so they are computed together as one recurrence `{}`, and must have one element \
             type",
            names.join(" and "),
            self.name(def)
        ))
    }

    /// Points a type mismatch at the uses that decided the type of the
    /// literal `let`s its operands come from.
    pub(super) fn explain_literal_types(&self, mut d: Diagnostic, operands: &[ExprId]) -> Diagnostic {
        for &x in operands {
            let Some(def) = self.origin(x) else { continue };
            if let Some(&(k, at)) = self.inst.literal_types.get(&def) {
                d = d.label(at, format!("`{}` is `{}` because of this use", self.name(def), k.name()));
            }
            if let Some(note) = self.fused_group_note(def) {
                d = d.note(note);
            }
        }
        d
    }

    /// Whether the value of block-like `e` is a flexible literal.
    pub(super) fn flexible_tail(&self, e: ExprId) -> bool {
        match &self.hir.exprs[e].kind {
            ExprKind::Block(b) => b.stmts.is_empty() && b.tail.is_some_and(|t| self.flexible_tail(t)),
            _ => self.flexible(e),
        }
    }

    /// Re-infers a flexible literal tail with the type of the other branch.
    pub(super) fn retype_literal_tail(&mut self, e: ExprId, other: &Ty) -> Option<Ty> {
        let k = other.scalar()?;
        match &self.hir.exprs[e].kind {
            ExprKind::Block(b) => {
                let t = b.tail?;
                let ty = self.retype_literal_tail(t, other)?;
                Some(self.set(e, ty))
            }
            _ => Some(self.infer(e, Some(k))),
        }
    }
}

/// The size in bytes of a number type (for picking the wider of two).
fn width(k: ScalarKind) -> u32 {
    match k {
        ScalarKind::Bool | ScalarKind::I8 | ScalarKind::U8 => 1,
        ScalarKind::I16 | ScalarKind::F16 | ScalarKind::BF16 => 2,
        ScalarKind::I32 | ScalarKind::U32 | ScalarKind::F32 => 4,
        ScalarKind::I64 | ScalarKind::U64 | ScalarKind::F64 => 8,
    }
}

/// Whether a literal tree (`2.0`, `-1.5`, `12.0 / 2.0`, `2.0 ** 3`,
/// `[1.0, 2.0]`) is of the float class: a power has its base's class, other
/// operators and array literals have a float operand's.
pub(super) fn is_float_lit(hir: &Hir, e: ExprId) -> bool {
    match &hir.exprs[e].kind {
        ExprKind::Lit(Lit::Float(..)) => true,
        ExprKind::Unary(_, x) => is_float_lit(hir, *x),
        ExprKind::Binary(BinOp::Pow, a, _) => is_float_lit(hir, *a),
        ExprKind::Binary(_, a, b) => is_float_lit(hir, *a) || is_float_lit(hir, *b),
        ExprKind::Array(items) => items.iter().any(|x| is_float_lit(hir, *x)),
        _ => false,
    }
}
