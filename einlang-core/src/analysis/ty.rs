//! Analysis-level types: element type plus symbolic shape.

use std::fmt;

use crate::base::dim::{Dim, DimVar};
use crate::base::scalar::ScalarKind;

/// The type of a value, with tensor extents as normalized symbolic `Dim`s.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ty {
    Scalar(ScalarKind),
    Tensor(ScalarKind, Vec<Dim>),
    Tuple(Vec<Ty>),
    Str,
    /// `[T; *]`: a tensor whose rank is known only at run time. It can be
    /// passed on, returned, printed and converted (`x as [T; 2, 3]`); it
    /// cannot be indexed.
    Dyn(ScalarKind),
    /// `jagged[T]`: rows of `T` of different lengths. Rows are taken out
    /// as vectors (`j[i]`); a jagged array is not used in indexed
    /// definitions itself.
    Jagged(ScalarKind),
    /// `[str; N]`: a vector of strings, outside Einstein notation except
    /// for element reads (`words[i]`).
    Strs(Dim),
    /// The type of an expression that already produced an error; anything
    /// built from it is silently `Error` too, so errors do not cascade.
    Error,
}

impl Ty {
    pub const I64: Ty = Ty::Scalar(ScalarKind::I64);
    pub const BOOL: Ty = Ty::Scalar(ScalarKind::Bool);

    pub fn unit() -> Ty {
        Ty::Tuple(Vec::new())
    }

    pub fn scalar(&self) -> Option<ScalarKind> {
        match self {
            Ty::Scalar(k) => Some(*k),
            _ => None,
        }
    }

    /// The element type of a scalar or tensor.
    pub fn elem(&self) -> Option<ScalarKind> {
        match self {
            Ty::Scalar(k) | Ty::Tensor(k, _) => Some(*k),
            _ => None,
        }
    }

    pub fn is_error(&self) -> bool {
        matches!(self, Ty::Error)
    }

    pub fn rank(&self) -> usize {
        match self {
            Ty::Tensor(_, dims) => dims.len(),
            _ => 0,
        }
    }

    /// User-facing text, e.g. `[f32; M, N]`, with `names` for dimension variables.
    pub fn display(&self, names: &dyn Fn(DimVar) -> String) -> String {
        match self {
            Ty::Scalar(k) => k.name().to_string(),
            Ty::Tensor(k, dims) => {
                let dims: Vec<String> = dims.iter().map(|d| d.display(names)).collect();
                format!("[{}; {}]", k.name(), dims.join(", "))
            }
            Ty::Tuple(items) => {
                let items: Vec<String> = items.iter().map(|t| t.display(names)).collect();
                if items.len() == 1 {
                    format!("({},)", items[0])
                } else {
                    format!("({})", items.join(", "))
                }
            }
            Ty::Str => "str".to_string(),
            Ty::Dyn(k) => format!("[{}; *]", k.name()),
            Ty::Jagged(k) => format!("jagged[{}]", k.name()),
            Ty::Strs(d) => format!("[str; {}]", d.display(names)),
            Ty::Error => "{error}".to_string(),
        }
    }
}

impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.display(&|v| format!("d{}", v.0)))
    }
}
