//! Dimensions as C: the value of a [`Dim`] as a `long long` expression in
//! a kernel, with `__ein_div_euclid`, `__ein_min` and `__ein_max` from the
//! kernel prelude, spelled from its terms (`Dim::terms`).

use crate::base::dim::{Dim, DimVar, Factor};

/// The value of `d` as a parenthesized C expression of type `long long`;
/// `var` spells a variable.
pub fn c_long_long(d: &Dim, var: &dyn Fn(DimVar) -> String) -> String {
    let terms = d.terms();
    if terms.is_empty() {
        return "0LL".to_string();
    }
    let mut out = String::from("(");
    for (i, t) in terms.iter().enumerate() {
        let c = t.coeff;
        let coef = if c == i64::MIN { "(-9223372036854775807LL - 1LL)".to_string() } else { format!("{}LL", c.abs()) };
        let negative = c < 0 && c != i64::MIN;
        if negative {
            out.push_str(if i == 0 { "-" } else { " - " });
        } else if i > 0 {
            out.push_str(" + ");
        }
        let mut factors = Vec::new();
        if t.factors.is_empty() || c.unsigned_abs() != 1 {
            factors.push(coef);
        }
        for (f, pow) in &t.factors {
            let factor = factor(f, var);
            factors.extend(std::iter::repeat_n(factor, *pow as usize));
        }
        out.push_str(&factors.join(" * "));
    }
    out.push(')');
    out
}

fn factor(f: &Factor<'_>, var: &dyn Fn(DimVar) -> String) -> String {
    let call = |name: &str, ops: &[Dim]| {
        let mut rev = ops.iter().rev();
        let Some(last) = rev.next() else { return "0LL".to_string() };
        rev.fold(c_long_long(last, var), |acc, op| format!("{name}({}, {acc})", c_long_long(op, var)))
    };
    match f {
        Factor::Var(v) => var(*v),
        Factor::FloorDiv(a, b) => format!("__ein_div_euclid({}, {})", c_long_long(a, var), c_long_long(b, var)),
        Factor::Min(ops) => call("__ein_min", ops),
        Factor::Max(ops) => call("__ein_max", ops),
        Factor::Sum(a, b) => format!("({} + {})", c_long_long(a, var), c_long_long(b, var)),
        Factor::Product(a, b) => format!("({} * {})", c_long_long(a, var), c_long_long(b, var)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(v: DimVar) -> String {
        ["N", "M", "H"][v.0 as usize].to_string()
    }

    #[test]
    fn c_computes_long_long() {
        let (n, m, h) = (Dim::var(DimVar(0)), Dim::var(DimVar(1)), Dim::var(DimVar(2)));
        let two = Dim::constant(2);
        assert_eq!(c_long_long(&h.sub(&m).add_const(1), &name), "(H - M + 1LL)");
        assert_eq!(c_long_long(&Dim::zero(), &name), "0LL");
        assert_eq!(c_long_long(&two.mul(&n).mul(&n), &name), "(2LL * N * N)");
        let half = h.add_const(-3).floor_div(&two).expect("a quotient").add_const(1);
        assert_eq!(c_long_long(&half, &name), "(__ein_div_euclid((H + 1LL), (2LL)) - 1LL)");
        assert_eq!(c_long_long(&Dim::min(&n, &m), &name), "(__ein_min((N), (M)))");
        assert_eq!(c_long_long(&Dim::constant(i64::MIN), &name), "((-9223372036854775807LL - 1LL))");
    }
}
