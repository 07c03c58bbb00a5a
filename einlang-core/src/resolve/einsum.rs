//! `std::ml::einsum(equation, inputs)`: numpy's and ONNX's Einstein
//! summation, with the equation known when compiling.
//!
//! The equation is a string literal. Each call becomes a call of a generic
//! function written in Einstein notation from it, so
//! `einsum("ij,jk->ik", (A, B))` runs exactly as
//!
//! ```text
//! fn einsum(A, B) { let result[i, k] = sum[j](A[i, j] * B[j, k]); result }
//! ```
//!
//! would: ranges come from the operands' extents (disagreeing extents are
//! an `Err` at run time, as for any indexed definition), element types and
//! ranks are those of the call site's instance. `...` becomes a named rest
//! index (summed over when the output leaves it out). Without `->` the
//! output is numpy's: the letters that occur once,
//! in alphabetical order, after `...` when there is one. One function is
//! made per call (its errors point at that call's equation), and
//! instantiated like any generic function.

use std::collections::HashMap;

use super::Resolver;
use crate::base::span::Span;
use crate::diag::{Diagnostic, Diagnostics};
use crate::hir::{Callee, ExprId, ExprKind};
use crate::syntax::ast;

/// One subscript of an operand or of the output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sub {
    Letter(char),
    Ellipsis,
}

/// A parsed equation: the subscripts of each operand and of the output.
#[derive(Debug, PartialEq, Eq)]
struct Equation {
    inputs: Vec<Vec<Sub>>,
    output: Vec<Sub>,
}

impl Equation {
    /// Whether `name` is one of the equation's subscripts.
    fn has_letter(&self, name: &str) -> bool {
        let mut chars = name.chars();
        match (chars.next(), chars.next()) {
            (Some(c), None) => self.inputs.iter().flatten().any(|s| *s == Sub::Letter(c)),
            _ => false,
        }
    }
}

/// The subscripts of one term (`ij`, `...ij`, `i...`, or nothing).
fn parse_term(term: &str) -> Result<Vec<Sub>, String> {
    let mut subs = Vec::new();
    let mut rest = term;
    while let Some(c) = rest.chars().next() {
        if let Some(after) = rest.strip_prefix("...") {
            if subs.contains(&Sub::Ellipsis) {
                return Err(format!("`{term}` has `...` twice"));
            }
            subs.push(Sub::Ellipsis);
            rest = after;
        } else if c.is_ascii_alphabetic() {
            subs.push(Sub::Letter(c));
            rest = &rest[1..];
        } else if c == '.' {
            return Err(format!("`{term}` has a `.` that is not part of `...`"));
        } else {
            return Err(format!("`{c}` is not a subscript: subscripts are the letters a-z and A-Z, and `...`"));
        }
    }
    Ok(subs)
}

fn parse_equation(text: &str) -> Result<Equation, String> {
    let text: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    let (lhs, rhs) = match text.split_once("->") {
        Some((l, r)) => (l, Some(r)),
        None => (text.as_str(), None),
    };
    let inputs = lhs.split(',').map(parse_term).collect::<Result<Vec<_>, _>>()?;
    let mut counts: HashMap<char, usize> = HashMap::new();
    for s in inputs.iter().flatten() {
        if let Sub::Letter(c) = s {
            *counts.entry(*c).or_default() += 1;
        }
    }
    let has_ellipsis = inputs.iter().any(|t| t.contains(&Sub::Ellipsis));
    let output = match rhs {
        Some(r) => {
            if r.contains("->") {
                return Err("the equation has `->` twice".into());
            }
            let out = parse_term(r)?;
            for (i, s) in out.iter().enumerate() {
                match s {
                    Sub::Letter(c) if !counts.contains_key(c) => {
                        return Err(format!("the output's `{c}` is not a subscript of any input"));
                    }
                    Sub::Letter(c) if out[..i].contains(s) => {
                        return Err(format!("the output has `{c}` twice"));
                    }
                    Sub::Ellipsis if !has_ellipsis => {
                        return Err("the output has `...` but no input has".into());
                    }
                    _ => {}
                }
            }
            out
        }
        None => {
            let mut once: Vec<char> = counts.iter().filter(|(_, n)| **n == 1).map(|(c, _)| *c).collect();
            once.sort_unstable();
            has_ellipsis.then_some(Sub::Ellipsis).into_iter().chain(once.into_iter().map(Sub::Letter)).collect()
        }
    };
    Ok(Equation { inputs, output })
}

/// How the call passes its operands: one argument each, or one tuple that
/// holds them all (read as `t.0`, `t.1`, ...).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Form {
    Each,
    Tuple,
}

/// The name the rest index `...` takes in the generated function: longer
/// than one letter, so no subscript can be it.
const REST: &str = "batch";

/// The generic function that computes `eq`, every node at `span`. The
/// operands are named `names` (none of them a subscript, which would
/// shadow it, nor `result`, `operands` or `batch`), the tuple of them
/// `operands`.
fn einsum_fn(eq: &Equation, form: Form, names: &[String], span: Span) -> ast::FnItem {
    let ident = |name: &str| ast::Ident { name: name.to_string(), span };
    let expr = |kind: ast::ExprKind| ast::Expr { kind, span };
    let path = |name: &str| expr(ast::ExprKind::Path(vec![ident(name)]));
    let params: Vec<ast::Param> = match form {
        Form::Each => names.to_vec(),
        Form::Tuple => vec!["operands".to_string()],
    }
    .iter()
    .map(|n| ast::Param { name: ident(n), ty: None, span })
    .collect();
    // Only named tensors can be indexed: the elements of a tuple are bound
    // to names first.
    let mut stmts: Vec<ast::Stmt> = match form {
        Form::Each => Vec::new(),
        Form::Tuple => (0..eq.inputs.len())
            .map(|k| {
                let field =
                    ast::ExprKind::Field { base: Box::new(path("operands")), index: k as u32, index_span: span };
                ast::Stmt::Let(ast::LetStmt {
                    pat: ast::Pattern::Name(ident(&names[k])),
                    indices: None,
                    ty: None,
                    value: expr(field),
                    where_clause: Vec::new(),
                    span,
                })
            })
            .collect(),
    };
    let operand = |k: usize| path(&names[k]);
    let reads = eq.inputs.iter().enumerate().map(|(k, subs)| {
        if subs.is_empty() {
            return operand(k);
        }
        let args = subs
            .iter()
            .map(|s| match s {
                Sub::Letter(c) => ast::IndexArg::Expr(path(&c.to_string())),
                Sub::Ellipsis => ast::IndexArg::Rest(ident(REST)),
            })
            .collect();
        expr(ast::ExprKind::Index { base: Box::new(operand(k)), args })
    });
    // `reads` is never empty: an equation has at least one operand term.
    let product = reads
        .reduce(|lhs, rhs| expr(ast::ExprKind::Binary { op: ast::BinOp::Mul, lhs: Box::new(lhs), rhs: Box::new(rhs) }))
        .unwrap_or_else(|| operand(0));
    // Letters (and `...`) of the inputs that the output leaves out are
    // summed over.
    let mut summed: Vec<Sub> = Vec::new();
    for s in eq.inputs.iter().flatten() {
        if !eq.output.contains(s) && !summed.contains(s) {
            summed.push(*s);
        }
    }
    let value = if summed.is_empty() {
        product
    } else {
        expr(ast::ExprKind::Reduce {
            op: ast::RedOp::Sum,
            op_span: span,
            vars: summed
                .iter()
                .map(|s| match s {
                    Sub::Letter(c) => ast::RedVar { var: ident(&c.to_string()), range: None, rest: false },
                    Sub::Ellipsis => ast::RedVar { var: ident(REST), range: None, rest: true },
                })
                .collect(),
            body: Box::new(product),
            where_clause: Vec::new(),
        })
    };
    let indices = (!eq.output.is_empty()).then(|| {
        eq.output
            .iter()
            .map(|s| match s {
                Sub::Letter(c) => ast::IndexSlot::Var(ident(&c.to_string())),
                Sub::Ellipsis => ast::IndexSlot::Rest(ident(REST)),
            })
            .collect()
    });
    stmts.push(ast::Stmt::Let(ast::LetStmt {
        pat: ast::Pattern::Name(ident("result")),
        indices,
        ty: None,
        value,
        where_clause: Vec::new(),
        span,
    }));
    ast::FnItem {
        vis: ast::Visibility::Private,
        docs: Vec::new(),
        attrs: Vec::new(),
        name: ident("einsum"),
        params,
        ret: None,
        body: Some(ast::Block { stmts, tail: Some(Box::new(path("result"))), span }),
        span,
    }
}

impl Resolver {
    /// A call of `std::ml::einsum`: `args` are the equation and the
    /// operands, either one argument each or one tuple of them.
    pub(super) fn resolve_einsum(
        &mut self,
        args: &[ast::Expr],
        callee_span: Span,
        span: Span,
        diags: &mut Diagnostics,
    ) -> ExprId {
        let Some((equation, operands)) = args.split_first() else {
            diags.push(
                Diagnostic::error(span, "`einsum` takes an equation and its operands")
                    .help("write `einsum(\"ij,jk->ik\", (a, b))`"),
            );
            return self.error_expr(span);
        };
        let ast::ExprKind::Lit(ast::Lit::Str(text)) = &equation.kind else {
            diags.push(
                Diagnostic::error(equation.span, "`einsum`'s equation must be a string literal")
                    .note("the equation is compiled into Einstein notation, so it must be known when compiling"),
            );
            return self.error_expr(span);
        };
        let eq = match parse_equation(text) {
            Ok(eq) => eq,
            Err(msg) => {
                diags.push(Diagnostic::error(equation.span, format!("invalid einsum equation: {msg}")));
                return self.error_expr(span);
            }
        };
        let n = eq.inputs.len();
        let (form, operands): (Form, &[ast::Expr]) = match operands {
            // A tuple or list literal of the operands (the seed passes a
            // list), or a tuple value.
            [one] if n > 1 => match &one.kind {
                ast::ExprKind::Tuple(items) | ast::ExprKind::Array(items) => (Form::Each, items.as_slice()),
                _ => (Form::Tuple, operands),
            },
            _ => (Form::Each, operands),
        };
        if form == Form::Each && operands.len() != n {
            let terms = if n == 1 { "1 operand".to_string() } else { format!("{n} operands") };
            diags.push(
                Diagnostic::error(span, format!("this einsum equation has {terms}, but {} are given", operands.len()))
                    .label(equation.span, format!("{terms} here")),
            );
            return self.error_expr(span);
        }
        // Operands are named as the caller wrote them where that is a
        // name, so that errors in the body speak of `a` and `b` (`b_` when
        // `b` is a subscript, which would shadow it).
        let mut names: Vec<String> = Vec::new();
        for k in 0..n {
            let mut name = match operands.get(k).map(|a| &a.kind) {
                Some(ast::ExprKind::Path(p)) if form == Form::Each && p.len() == 1 => p[0].name.clone(),
                _ => format!("operand{k}"),
            };
            while eq.has_letter(&name) || [REST, "result", "operands"].contains(&name.as_str()) || names.contains(&name)
            {
                name.push('_');
            }
            names.push(name);
        }
        let key = format!("{:?}|{eq:?}|{form:?}|{names:?}", equation.span);
        let f = match self.einsum_fns.get(&key) {
            Some(&f) => f,
            None => {
                let item = einsum_fn(&eq, form, &names, equation.span);
                let f = self.new_private_fn("einsum", equation.span, true, Vec::new(), equation.span);
                self.einsum_fns.insert(key, f);
                let module = self.current_module;
                let saved = self.enter(module, Vec::new());
                self.resolve_fn(f, &item, module, diags);
                self.leave(saved);
                f
            }
        };
        let args = operands.iter().map(|a| self.resolve_expr(a, diags)).collect();
        self.hir.alloc_expr(ExprKind::Call { callee: Callee::Fn(f), callee_span, args }, span)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn letters(s: &str) -> Vec<Sub> {
        s.chars().map(|c| if c == '_' { Sub::Ellipsis } else { Sub::Letter(c) }).collect()
    }

    #[test]
    fn explicit_and_implicit_outputs() {
        let eq = parse_equation("ij, jk -> ik").unwrap();
        assert_eq!(eq, Equation { inputs: vec![letters("ij"), letters("jk")], output: letters("ik") });
        // numpy: the letters that occur once, sorted; `...` first.
        assert_eq!(parse_equation("kj,ji").unwrap().output, letters("ik"));
        assert_eq!(parse_equation("ii").unwrap().output, letters(""));
        assert_eq!(parse_equation("...ij,...jk").unwrap().output, letters("_ik"));
        assert_eq!(parse_equation("i...->...i").unwrap().inputs, vec![letters("i_")]);
        assert_eq!(parse_equation(",i->i").unwrap().inputs, vec![letters(""), letters("i")]);
    }

    #[test]
    fn malformed_equations() {
        for (text, msg) in [
            ("ij,jk->il", "the output's `l` is not a subscript of any input"),
            ("ij->ii", "the output has `i` twice"),
            ("ij->...i", "the output has `...` but no input has"),
            ("i..j->i", "`i..j` has a `.` that is not part of `...`"),
            ("i1->i", "`1` is not a subscript"),
            ("i->i->i", "the equation has `->` twice"),
            ("......i->...i", "has `...` twice"),
        ] {
            let err = parse_equation(text).unwrap_err();
            assert!(err.contains(msg), "{text}: {err}");
        }
    }

    /// The instances of an einsum of products of two operands are the
    /// definitions the compiler turns into matrix products.
    #[test]
    fn products_dispatch_to_gemm() {
        let src = r#"
            use std::ml::einsum;
            pub fn mm(a: [f32; M, K], b: [f32; K, N]) -> [f32; M, N] { einsum("ij,jk->ik", (a, b)) }
            pub fn bmm(a: [f64; B, M, K], b: [f64; B, N, K]) -> [f64; B, M, N] { einsum("bij,bkj->bik", a, b) }
        "#;
        let compiled = match crate::compile_str(src, &crate::Options::default()) {
            Ok(c) => c,
            Err(d) => panic!("{d:?}"),
        };
        let ir = crate::ir::pretty::pretty_program(&compiled.ir);
        assert_eq!(ir.matches("gemm ").count(), 2, "{ir}");
        assert!(ir.contains("batch "), "{ir}");
    }
}
