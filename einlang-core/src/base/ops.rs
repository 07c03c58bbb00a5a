//! Operators, reductions and literals: the vocabulary of expressions that
//! the AST, the HIR and the loop IR share.

use super::scalar::ScalarKind;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Pow,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
}

impl BinOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::Pow => "**",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::And => "&&",
            BinOp::Or => "||",
        }
    }

    pub fn is_comparison(self) -> bool {
        matches!(self, BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge)
    }

    pub fn is_logical(self) -> bool {
        matches!(self, BinOp::And | BinOp::Or)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnOp {
    Neg,
    Not,
}

/// Reductions `sum prod max min all any`, and `argmax`/`argmin`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RedOp {
    Sum,
    Prod,
    Max,
    Min,
    All,
    Any,
    ArgMax,
    ArgMin,
}

impl RedOp {
    pub fn from_name(name: &str) -> Option<RedOp> {
        Some(match name {
            "sum" => RedOp::Sum,
            "prod" => RedOp::Prod,
            "max" => RedOp::Max,
            "min" => RedOp::Min,
            "all" => RedOp::All,
            "any" => RedOp::Any,
            "argmax" => RedOp::ArgMax,
            "argmin" => RedOp::ArgMin,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            RedOp::Sum => "sum",
            RedOp::Prod => "prod",
            RedOp::Max => "max",
            RedOp::Min => "min",
            RedOp::All => "all",
            RedOp::Any => "any",
            RedOp::ArgMax => "argmax",
            RedOp::ArgMin => "argmin",
        }
    }
}

/// A literal value.
#[derive(Clone, Debug)]
pub enum Lit {
    /// An integer with an optional type suffix (`3`, `3i64`).
    Int(i128, Option<ScalarKind>),
    /// A float with an optional type suffix; kept as text so printing is exact.
    Float(String, Option<ScalarKind>),
    Bool(bool),
    Str(String),
}
