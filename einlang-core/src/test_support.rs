//! Drivers shared by the stage tests: run the pipeline up to a stage on a
//! source text and print the HIR, or the diagnostics of the first stage
//! that reported any; the lowered IR before optimization; the whole
//! pipeline on macro tokens.

use expect_test::Expect;

use crate::diag::{Diagnostic, Diagnostics};

/// How far `run` takes a program.
#[derive(Clone, Copy)]
pub(crate) enum Stage {
    Resolve,
    Analyze,
}

fn render<'a>(diags: impl IntoIterator<Item = &'a Diagnostic>) -> String {
    diags.into_iter().map(|d| d.render_text()).collect::<Vec<_>>().join("\n")
}

/// The printed HIR (with types and ranges after analysis), or the errors.
pub(crate) fn run(src: &str, stage: Stage) -> Result<String, String> {
    let ast = crate::syntax::parse_str(src).map_err(|d| render(&d))?;
    let mut diags = Diagnostics::new();
    let hir = crate::resolve::resolve_program(
        &ast,
        &crate::source::stdlib::stdlib().expect("the standard library parses"),
        &mut diags,
    );
    if diags.has_errors() {
        return Err(render(diags.iter()));
    }
    let tables = match stage {
        Stage::Resolve => crate::analysis::Tables::default(),
        Stage::Analyze => crate::analysis::analyze(&hir, &crate::analysis::Instances::default(), &mut diags),
    };
    if diags.has_errors() {
        return Err(render(diags.iter()));
    }
    Ok(crate::analysis::pretty::pretty_hir(&hir, &tables))
}

/// `src` compiles up to `stage` and prints as `expect`.
pub(crate) fn check(src: &str, stage: Stage, expect: Expect) {
    match run(src, stage) {
        Ok(text) => expect.assert_eq(&text),
        Err(e) => panic!("unexpected errors:\n{e}"),
    }
}

/// `src` fails by `stage` with the diagnostics `expect`.
pub(crate) fn check_error(src: &str, stage: Stage, expect: Expect) {
    match run(src, stage) {
        Ok(text) => panic!("expected an error, got:\n{text}"),
        Err(e) => expect.assert_eq(&e),
    }
}

/// The loop IR of `src` as lowering leaves it, before the `opt` passes
/// (device functions compiled, as with the feature `cuda`).
pub(crate) fn lowered(src: &str) -> crate::ir::Program {
    let ast = crate::syntax::parse_str(src).unwrap_or_else(|d| panic!("unexpected errors:\n{}", render(&d)));
    let options = crate::codegen::Options { cuda: true, ..Default::default() };
    match crate::driver::lower(ast, &options) {
        Ok(lowered) => lowered.ir,
        Err(d) => panic!("unexpected errors:\n{}", render(&d)),
    }
}

/// How many calls of program functions the body and value of `p`'s
/// function `name` hold (for the passes that write calls out).
pub(crate) fn calls_in(p: &crate::ir::Program, name: &str) -> usize {
    use crate::ir::{visit, Expr, ExprKind};
    fn count(e: &Expr, n: &mut usize) {
        *n += usize::from(matches!(e.kind, ExprKind::Call { .. }));
        visit::for_each_child(e, &mut |c| count(c, n));
    }
    let (_, f) = p.functions().find(|(_, f)| f.name == name).expect("the function");
    let mut n = 0;
    f.body.iter().for_each(|s| visit::for_each_stmt_expr(s, &mut |e| count(e, &mut n)));
    count(&f.result, &mut n);
    n
}

/// The whole pipeline on the tokens of an `einlang! { ... }` call.
pub(crate) fn compile_tokens(tokens: proc_macro2::TokenStream) -> crate::Compiled {
    match crate::syntax::parse_tokens(tokens).and_then(|ast| crate::compile(ast, &crate::Options::default())) {
        Ok(c) => c,
        Err(d) => panic!("unexpected errors:\n{}", render(&d)),
    }
}
