//! The type of a derivative request `@y / @x`: `y`'s element type, shape
//! `shape(y) ++ shape(x)` (`shape(y)` at a fixed source point). Both must be floats; what the request means is
//! built later (`transform::autodiff`).

use super::super::cx::Cx;
use super::super::Ty;
use crate::diag::Diagnostic;
use crate::hir::{DefId, ExprId};

impl Cx<'_> {
    pub(super) fn infer_deriv(&mut self, e: ExprId, target: DefId, wrt: DefId) -> Ty {
        let span = self.hir.span(e);
        let (Some(ty), Some(tx)) = (self.env.get(&target).cloned(), self.env.get(&wrt).cloned()) else {
            self.err(Diagnostic::bug(span, "a derivative names a value with no type"));
            return Ty::Error;
        };
        if ty.is_error() || tx.is_error() {
            return Ty::Error;
        }
        let mut bad = None;
        for (d, t, role) in [(target, &ty, "target"), (wrt, &tx, "source")] {
            let float = matches!(t, Ty::Scalar(k) | Ty::Tensor(k, _) if k.is_float());
            if !float && bad.is_none() {
                bad = Some((d, t.clone(), role));
            }
        }
        if let Some((d, t, role)) = bad {
            let name = self.name(d).to_string();
            let what = match t.elem() {
                Some(k) if !k.is_float() => format!("`{name}` is `{}`, an integer or boolean type", self.t.show_ty(&t)),
                _ => format!("`{name}` is `{}`, which is not a float scalar or tensor", self.t.show_ty(&t)),
            };
            let d = Diagnostic::error(span, format!("cannot differentiate: the {role} {what}"))
                .note("derivatives exist only between float (f32, f64) values; integers carry no derivative")
                .help(format!("if `{name}` should be continuous, compute it as a float (`as f32`)"));
            self.err(d);
            return Ty::Error;
        }
        let (Ty::Scalar(k) | Ty::Tensor(k, _)) = ty else { return Ty::Error };
        let mut dims = match &ty {
            Ty::Tensor(_, d) => d.clone(),
            _ => Vec::new(),
        };
        // At a fixed point of the source (a Jacobian column), the source
        // adds no axes.
        if let (Ty::Tensor(_, d), false) = (&tx, self.hir.deriv_points.contains_key(&e)) {
            dims.extend(d.iter().cloned());
        }
        if dims.is_empty() {
            Ty::Scalar(k)
        } else {
            Ty::Tensor(k, dims)
        }
    }
}
