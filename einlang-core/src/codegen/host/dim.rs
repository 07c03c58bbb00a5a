//! Dimensions as Rust: the `i64` value of a [`Dim`] over the function's
//! variables, plainly or with every step checked, spelled from its terms
//! (`Dim::terms`; `base::dim` holds the algebra only).

use proc_macro2::{Literal, TokenStream};
use quote::quote;

use crate::base::dim::{Dim, DimVar, Factor, Term};

/// Rust tokens computing `d` as an `i64`, with `var` giving an `i64`
/// expression for each variable (wrapped in parentheses here unless it is
/// a single token tree): `(H - KH + 1i64)`.
///
/// Compound results are parenthesized so they can be used as operands.
/// Floor division is spelled `n.div_euclid(d)`, which is floor division
/// only for positive divisors: constant divisors always are (see the
/// normal form), and the caller must have checked symbolic ones (for
/// example with `Dim::zero().prove_lt(d)` or a run-time check). `min`/`max`
/// become `::core::cmp::min`/`max`. The arithmetic is plain `i64`
/// arithmetic (neither checked nor wrapping).
pub fn rust_i64(d: &Dim, var: &dyn Fn(DimVar) -> TokenStream) -> TokenStream {
    let sum = sum(d, var);
    if d.is_primary() {
        sum
    } else {
        quote!((#sum))
    }
}

fn sum(d: &Dim, var: &dyn Fn(DimVar) -> TokenStream) -> TokenStream {
    let terms = d.terms();
    if terms.is_empty() {
        return quote!(0i64);
    }
    let mut out = TokenStream::new();
    for (i, t) in terms.iter().enumerate() {
        let (negative, tokens) = term(t, var);
        match (i == 0, negative) {
            (true, false) => {}
            (_, true) => out.extend(quote!(-)),
            (false, false) => out.extend(quote!(+)),
        }
        out.extend(tokens);
    }
    out
}

/// The tokens of `|c| * m` and whether the term is subtracted. A coefficient
/// of `i64::MIN` has no positive literal, so it is added as `i64::MIN`.
fn term(t: &Term<'_>, var: &dyn Fn(DimVar) -> TokenStream) -> (bool, TokenStream) {
    let c = t.coeff;
    let coef = match c.checked_abs() {
        Some(abs) => {
            let lit = Literal::i64_suffixed(abs);
            quote!(#lit)
        }
        None => quote!(::core::primitive::i64::MIN),
    };
    let negative = c < 0 && c != i64::MIN;
    if t.factors.is_empty() {
        return (negative, coef);
    }
    let mut factors = Vec::new();
    if c.unsigned_abs() != 1 {
        factors.push(coef);
    }
    for (f, pow) in &t.factors {
        let factor = factor(f, var);
        for _ in 0..*pow {
            factors.push(factor.clone());
        }
    }
    let mut out = TokenStream::new();
    for (i, factor) in factors.into_iter().enumerate() {
        if i > 0 {
            out.extend(quote!(*));
        }
        out.extend(factor);
    }
    (negative, out)
}

/// A factor as an operand-safe expression (a method call binds tighter
/// than both unary minus and `*`).
fn factor(f: &Factor<'_>, var: &dyn Fn(DimVar) -> TokenStream) -> TokenStream {
    match f {
        Factor::Var(v) => {
            let tokens = var(*v);
            let mut trees = tokens.clone().into_iter();
            match (trees.next(), trees.next()) {
                (Some(_), None) => tokens,
                _ => quote!((#tokens)),
            }
        }
        Factor::FloorDiv(a, b) => {
            let (a, b) = (rust_i64(a, var), sum(b, var));
            quote!(#a.div_euclid(#b))
        }
        Factor::Min(ops) => call(quote!(::core::cmp::min), ops, var),
        Factor::Max(ops) => call(quote!(::core::cmp::max), ops, var),
        Factor::Sum(a, b) => {
            let (a, b) = (rust_i64(a, var), rust_i64(b, var));
            quote!((#a + #b))
        }
        Factor::Product(a, b) => {
            let (a, b) = (rust_i64(a, var), rust_i64(b, var));
            quote!((#a * #b))
        }
    }
}

/// `f(a, f(b, c))` with `f` a two-argument function path.
fn call(f: TokenStream, ops: &[Dim], var: &dyn Fn(DimVar) -> TokenStream) -> TokenStream {
    let mut rev = ops.iter().rev();
    let Some(last) = rev.next() else { return quote!(0i64) };
    let mut acc = sum(last, var);
    for op in rev {
        let op = sum(op, var);
        acc = quote!(#f(#op, #acc));
    }
    acc
}

/// Rust tokens computing `d` as an `Option<i64>`: `None` when any step
/// overflows `i64` (or divides by zero), where [`rust_i64`] would wrap (or
/// panic). For extents, whose overflow must be an error naming the
/// expression, not a wrapped length.
pub fn rust_checked(d: &Dim, var: &dyn Fn(DimVar) -> TokenStream) -> TokenStream {
    let value = checked_value(d, var);
    quote!((|| -> ::core::option::Option<i64> { ::core::option::Option::Some(#value) })())
}

/// An `i64` expression in which every operation is checked, with `?` on
/// each (valid inside a closure returning `Option`).
fn checked_value(d: &Dim, var: &dyn Fn(DimVar) -> TokenStream) -> TokenStream {
    let mut acc: Option<TokenStream> = None;
    for t in d.terms() {
        let c = t.coeff;
        let constant = t.factors.is_empty();
        // After the first term, a negative one is subtracted.
        let subtract = acc.is_some() && c < 0 && c != i64::MIN;
        let c = if subtract { -c } else { c };
        let mut factors: Vec<TokenStream> = Vec::new();
        if constant || (c != 1 && c != -1) {
            factors.push(if c == i64::MIN {
                quote!(::core::primitive::i64::MIN)
            } else {
                let lit = Literal::i64_suffixed(c);
                quote!((#lit))
            });
        }
        for (f, pow) in &t.factors {
            let factor = checked_factor(f, var);
            factors.extend(std::iter::repeat_n(factor, *pow as usize));
        }
        let mut term = TokenStream::new();
        for (i, f) in factors.into_iter().enumerate() {
            term = if i == 0 { f } else { quote!(#term.checked_mul(#f)?) };
        }
        if c == -1 && !constant {
            term = quote!((#term).checked_neg()?);
        }
        acc = Some(match acc {
            None => term,
            Some(a) if subtract => quote!(#a.checked_sub(#term)?),
            Some(a) => quote!(#a.checked_add(#term)?),
        });
    }
    acc.unwrap_or_else(|| quote!(0i64))
}

fn checked_factor(f: &Factor<'_>, var: &dyn Fn(DimVar) -> TokenStream) -> TokenStream {
    let pair = |f: TokenStream, ops: &[Dim]| {
        let mut rev = ops.iter().rev();
        let Some(last) = rev.next() else { return quote!(0i64) };
        let mut acc = checked_value(last, var);
        for op in rev {
            let op = checked_value(op, var);
            acc = quote!(#f(#op, #acc));
        }
        acc
    };
    match f {
        Factor::Var(v) => {
            let tokens = var(*v);
            quote!((#tokens))
        }
        Factor::FloorDiv(a, b) => {
            let (a, b) = (checked_value(a, var), checked_value(b, var));
            quote!((#a).checked_div_euclid(#b)?)
        }
        Factor::Min(ops) => pair(quote!(::core::cmp::min), ops),
        Factor::Max(ops) => pair(quote!(::core::cmp::max), ops),
        Factor::Sum(a, b) => {
            let (a, b) = (checked_value(a, var), checked_value(b, var));
            quote!((#a).checked_add(#b)?)
        }
        Factor::Product(a, b) => {
            let (a, b) = (checked_value(a, var), checked_value(b, var));
            quote!((#a).checked_mul(#b)?)
        }
    }
}

#[cfg(test)]
mod tests {
    use expect_test::{expect, Expect};
    use proc_macro2::{Ident, Span, TokenStream};
    use quote::quote;

    use super::*;

    const NAMES: [&str; 4] = ["N", "M", "H", "KH"];

    fn named(s: &str) -> Dim {
        Dim::var(DimVar(NAMES.iter().position(|n| *n == s).expect("test variable") as u32))
    }

    fn c(k: i64) -> Dim {
        Dim::constant(k)
    }

    fn div(a: &Dim, b: &Dim) -> Dim {
        a.floor_div(b).expect("representable quotient")
    }

    fn ident(v: DimVar) -> TokenStream {
        let ident = Ident::new(NAMES[v.0 as usize], Span::call_site());
        quote!(#ident)
    }

    fn check(d: &Dim, expect: Expect) {
        expect.assert_eq(&rust_i64(d, &ident).to_string());
    }

    #[test]
    fn rust_computes_i64() {
        let (n, m, h, kh) = (named("N"), named("M"), named("H"), named("KH"));
        check(&h.sub(&kh).add_const(1), expect![["(H - KH + 1i64)"]]);
        check(&n, expect![["N"]]);
        check(&c(7), expect![["7i64"]]);
        check(&c(-3), expect![["(- 3i64)"]]);
        check(&Dim::zero(), expect![["0i64"]]);
        check(&c(2).mul(&n).mul(&m), expect![["(2i64 * N * M)"]]);
        check(&n.mul(&n).neg().add_const(3), expect![["(3i64 - N * N)"]]);
        check(&div(&h.add_const(-3), &c(2)).add_const(1), expect![["((H + 1i64) . div_euclid (2i64) - 1i64)"]]);
        check(&div(&n, &c(2)).neg(), expect![["(- N . div_euclid (2i64))"]]);
        check(&Dim::min(&n, &m), expect![[":: core :: cmp :: min (N , M)"]]);
        check(
            &Dim::max(&n, &Dim::max(&m, &kh)).add_const(1),
            expect![["(:: core :: cmp :: max (N , :: core :: cmp :: max (M , KH)) + 1i64)"]],
        );
        check(&c(i64::MIN).mul(&n), expect![["(:: core :: primitive :: i64 :: MIN * N)"]]);
        let field: TokenStream = rust_i64(&n, &|_| quote!(self.n));
        assert_eq!(field.to_string(), "(self . n)");
    }

    #[test]
    fn checked_rust_checks_every_step() {
        let (n, h, kh) = (named("N"), named("H"), named("KH"));
        expect!["(|| -> :: core :: option :: Option < i64 > { :: core :: option :: Option :: Some ((H) . checked_sub ((KH)) ? . checked_add ((1i64)) ?) }) ()"]
            .assert_eq(&rust_checked(&h.sub(&kh).add_const(1), &ident).to_string());
        expect!["(|| -> :: core :: option :: Option < i64 > { :: core :: option :: Option :: Some ((2i64) . checked_mul ((N)) ? . checked_mul ((N)) ?) }) ()"]
            .assert_eq(&rust_checked(&c(2).mul(&n).mul(&n), &ident).to_string());
    }
}
