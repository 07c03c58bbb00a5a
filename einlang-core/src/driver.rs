//! The pipeline, in order, and nothing else: parse, resolve (with the
//! standard library, loaded once per process), instantiate, monomorphize
//! (which drives the analyses), lower to the loop IR, run the IR passes,
//! print Rust. Every stage reports into one `Diagnostics`; the pipeline stops
//! after the first stage that reported an error, so follow-on errors of a
//! broken program are not shown. Validators run after resolution and
//! instantiation, after monomorphization, after lowering and after every IR
//! pass; a violation is an internal compiler error. Each stage's time is
//! recorded in `base::timing` (`EINLANG_TIME_PASSES`).

use crate::base::timing::time;
use crate::diag::{Diagnostic, Diagnostics};
use proc_macro2::TokenStream;

use crate::codegen::Options;
use crate::transform::autodiff::{DerivFact, History};
use crate::{analysis, base, codegen, hir, ir, lower, opt, resolve, source, syntax, transform};

/// Runs the pipeline on parsed input. Errors are all the diagnostics of the
/// first stage that failed.
pub fn compile(ast: syntax::ast::Program, options: &Options) -> Result<Compiled, Vec<Diagnostic>> {
    let Lowered { ast, hir, tables, ir, derivatives } = lower(ast, options)?;
    let ir = time("opt", || opt::optimize(ir))
        .map_err(|msg| vec![Diagnostic::bug(base::span::Span::call_site(), format!("invalid loop IR {msg}"))])?;
    let rust = time("codegen", || codegen::emit_program(&ir, options));
    let derivatives = with_checkpoints(derivatives, &opt::checkpoint::decisions(&ir));
    Ok(Compiled { ast, hir, tables, ir, rust, derivatives })
}

/// Everything the pipeline produced, for tests and tools.
pub struct Compiled {
    pub ast: syntax::ast::Program,
    pub hir: hir::Hir,
    pub tables: analysis::Tables,
    pub ir: ir::Program,
    pub rust: TokenStream,
    /// How each derivative request was answered (`derivatives`).
    pub derivatives: Vec<DerivFact>,
}

impl Compiled {
    /// What the compiler decided for the recurrence `name` of the Einlang
    /// function `function` (`"main"` for top-level statements): its
    /// recurrent and parallel axes, offsets, order and storage.
    pub fn recurrence(&self, function: &str, name: &str) -> Option<&analysis::recur::RecurrenceFacts> {
        self.recurrences().into_iter().find(|f| f.function == function && f.name == name)
    }

    /// How each derivative request of the Einlang function `function` was
    /// answered: its mode and, for recurrences differentiated in reverse
    /// mode, how the primal's history is had.
    pub fn derivatives(&self, function: &str) -> Vec<&DerivFact> {
        self.derivatives.iter().filter(|f| f.function == function).collect()
    }

    /// Every recurrence's facts, in no particular order.
    pub fn recurrences(&self) -> Vec<&analysis::recur::RecurrenceFacts> {
        self.tables.recurrences.values().collect()
    }
}

/// The derivative facts, with the reverse sweeps `opt::checkpoint` made a
/// checkpointed alternative for reported as such.
fn with_checkpoints(mut facts: Vec<DerivFact>, decisions: &[opt::checkpoint::Decision]) -> Vec<DerivFact> {
    for c in decisions {
        for fact in facts.iter_mut().filter(|d| d.function == c.function) {
            for (name, history) in &mut fact.reversed {
                if *name == c.primal {
                    *history = History::Checkpointed {
                        steps: c.steps.clone(),
                        state: c.state.clone(),
                        memory: c.memory.clone(),
                    };
                }
            }
        }
    }
    facts
}

/// What the pipeline has made when lowering is done.
pub struct Lowered {
    pub ast: syntax::ast::Program,
    pub hir: hir::Hir,
    pub tables: analysis::Tables,
    /// The loop IR as lowering leaves it (valid), before the `opt` passes.
    pub ir: ir::Program,
    /// How each derivative request was answered (`transform::autodiff`).
    pub derivatives: Vec<DerivFact>,
}

/// The pipeline up to and including lowering (`options` say whether device
/// functions are compiled, which decides the placement errors).
pub fn lower(mut ast: syntax::ast::Program, options: &Options) -> Result<Lowered, Vec<Diagnostic>> {
    time("nested fns", || syntax::hoist::hoist_nested_fns(&mut ast));
    let stdlib = time("stdlib", source::stdlib::stdlib)?;
    let mut diags = Diagnostics::new();
    let mut hir = time("resolve", || resolve::resolve_program(&ast, &stdlib, &mut diags));
    stop_on_errors(&mut diags)?;
    diags.extend(time("instantiate", || transform::instantiate::expand_typed_rests(&mut hir)));
    stop_on_errors(&mut diags)?;
    validate_hir(&hir, "instantiation")?;
    let mut mono = transform::mono::Mono::default();
    let mut tables = time("analysis", || mono.analyze(&mut hir, &mut diags));
    stop_on_errors(&mut diags)?;
    validate_hir(&hir, "monomorphization")?;
    // Each derivative step answers (or inlines for) one request per
    // function, from the tables of the program as it is; the new code is
    // analysed before the next step.
    let mut steps = 0;
    let mut derivatives = Vec::new();
    while transform::autodiff::has_requests(&hir) {
        steps += 1;
        if steps > MAX_AUTODIFF_STEPS {
            let span = base::span::Span::call_site();
            let d = Diagnostic::error(span, "derivatives inline functions without end (a recursive function?)")
                .note("a derivative inlines every function it passes through");
            return Err(vec![d]);
        }
        derivatives.extend(time("autodiff", || transform::autodiff::step(&mut hir, &tables, &mut diags)));
        stop_on_errors(&mut diags)?;
        validate_hir(&hir, "autodiff")?;
        tables = time("analysis", || mono.analyze(&mut hir, &mut diags));
        stop_on_errors(&mut diags)?;
    }
    // Formulas applied to tensors, written out one level per round, each
    // round's copies typed by the next analysis.
    for _ in 0..MAX_FORMULA_ROUNDS {
        if !time("formulas", || transform::formulas::rewrite(&mut hir, &tables)) {
            break;
        }
        validate_hir(&hir, "formulas")?;
        tables = time("analysis", || mono.analyze(&mut hir, &mut diags));
        stop_on_errors(&mut diags)?;
    }
    // Placement errors of device functions, with spans, before lowering.
    time("analysis", || analysis::device::check(&hir, &tables, options.cuda, &mut diags));
    stop_on_errors(&mut diags)?;
    let mut ir = time("lower", || lower::lower_program(&hir, &tables, &program_tag(&ast), &mut diags));
    stop_on_errors(&mut diags)?;
    // Sharded functions compute their own block, with the communication
    // they need stated in the IR (before the other IR passes, which then
    // see ordinary functions over local extents).
    diags.extend(time("shard", || opt::shard::run(&mut ir)));
    stop_on_errors(&mut diags)?;
    time("validate", || ir::validate::validate(&ir))
        .map_err(|msg| vec![Diagnostic::bug(base::span::Span::call_site(), format!("invalid loop IR: {msg}"))])?;
    Ok(Lowered { ast, hir, tables, ir, derivatives })
}

/// How deep calls of formulas inside formulas are written out
/// (`gelu_tanh` calls `sigmoid`: two rounds).
const MAX_FORMULA_ROUNDS: usize = 4;

/// More derivative steps than this means a recursive function on a
/// derivative's path (every step inlines a call or answers a request).
const MAX_AUTODIFF_STEPS: usize = 2000;

/// All diagnostics so far, if one of them is an error.
fn stop_on_errors(diags: &mut Diagnostics) -> Result<(), Vec<Diagnostic>> {
    if diags.has_errors() {
        Err(std::mem::take(diags).into_vec())
    } else {
        Ok(())
    }
}

/// Runs the HIR validator after the pass `after`; a violation is an
/// internal compiler error.
fn validate_hir(hir: &hir::Hir, after: &str) -> Result<(), Vec<Diagnostic>> {
    time("validate", || hir::validate::validate(hir)).map_err(|msg| {
        vec![Diagnostic::bug(base::span::Span::call_site(), format!("invalid HIR after {after}: {msg}"))]
    })
}

/// A short tag that differs between macro calls with different programs,
/// for the names of their private functions (two `einlang!` calls in one
/// Rust module may both instantiate `relu` at `f32`). Deterministic: the
/// same program always gets the same tag.
fn program_tag(ast: &syntax::ast::Program) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    syntax::pretty::pretty_program(ast).hash(&mut h);
    format!("{:08x}", h.finish() as u32)
}

/// Compiles source text (a `.ein` file or a test program).
pub fn compile_str(src: &str, options: &Options) -> Result<Compiled, Vec<Diagnostic>> {
    let ast = time("parse", || syntax::parse_str(src))?;
    compile(ast, options)
}

#[cfg(test)]
mod tests {
    use crate::base::timing;

    #[test]
    fn every_stage_and_opt_pass_records_its_time() {
        timing::take();
        let src = "pub fn f(a: [f32; N, K], b: [f32; K, M]) -> [f32; N, M] {\n    let c[i, j] = sum[k](a[i, k] * b[k, j]);\n    c\n}\n";
        assert!(super::compile_str(src, &crate::codegen::Options::default()).is_ok());
        let keys: Vec<timing::Key> = timing::take().into_iter().map(|(k, _)| k).collect();
        for stage in [
            "parse",
            "nested fns",
            "stdlib",
            "resolve",
            "instantiate",
            "analysis",
            "lower",
            "validate",
            "opt",
            "codegen",
        ] {
            assert!(keys.contains(&(stage, "")), "no time for stage `{stage}` in {keys:?}");
        }
        for pass in ["checkpoint", "validate", "dead", "split", "gemm", "hoist", "inline", "rows", "simplify", "cse"] {
            assert!(keys.contains(&("opt", pass)), "no time for opt pass `{pass}` in {keys:?}");
        }
        // A second compilation starts a fresh record.
        assert!(timing::take().is_empty());
    }
}
