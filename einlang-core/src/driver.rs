//! The pipeline, in order, and nothing else: parse, resolve (with the
//! standard library, loaded once per process), instantiate, monomorphize
//! (which drives the analyses), lower to the loop IR, run the IR passes,
//! print Rust. Every stage reports into one `Diagnostics`; the pipeline stops
//! after the first stage that reported an error, so follow-on errors of a
//! broken program are not shown. Validators run after resolution and
//! instantiation, after monomorphization, after lowering and after every IR
//! pass; a violation is an internal compiler error.

use crate::diag::{Diagnostic, Diagnostics};
use crate::{analysis, base, codegen, hir, ir, lower, opt, resolve, source, syntax, transform, Compiled, Options};

/// Runs the pipeline on parsed input. Errors are all the diagnostics of the
/// first stage that failed.
pub fn compile(ast: syntax::ast::Program, options: &Options) -> Result<Compiled, Vec<Diagnostic>> {
    let Lowered { ast, hir, tables, ir } = lower(ast)?;
    let ir = opt::optimize(ir)
        .map_err(|msg| vec![Diagnostic::bug(base::span::Span::call_site(), format!("invalid loop IR {msg}"))])?;
    let rust = codegen::emit_program(&ir, options);
    let mut hir = hir;
    record_checkpoints(&mut hir, &ir);
    Ok(Compiled { ast, hir, tables, ir, rust })
}

/// The derivative facts learn which reverse sweeps may run checkpointed
/// (`opt::checkpoint` decides on the loop IR).
fn record_checkpoints(hir: &mut hir::Hir, ir: &ir::Program) {
    for f in &ir.fns {
        let Some(c) = &f.checkpointed else { continue };
        let text = |d: &base::dim::Dim| d.display(&|v| f.vars[v.0 as usize].source_name.clone());
        let (steps, state) = (text(&c.steps), text(&c.state));
        // The windows and checkpoints the alternative's sweep keeps.
        let sweep = ir.fns.iter().filter(|g| g.name == c.alternative).flat_map(|g| &g.body).find_map(|s| match s {
            ir::Stmt::Sweep(w) => Some((w.lookback, w.margin)),
            _ => None,
        });
        let Some((lookback, margin)) = sweep else { continue };
        let memory = format!(
            "(2 * next_power_of_two(K + {}) + {lookback} * K) * ({state}) elements, K = ceil(sqrt({steps}))",
            lookback + 2 * margin + 1
        );
        for fact in hir.deriv_facts.iter_mut().filter(|d| d.function == f.name) {
            for (name, history) in &mut fact.reversed {
                if *name == c.primal {
                    *history = hir::History::Checkpointed {
                        steps: steps.clone(),
                        state: state.clone(),
                        memory: memory.clone(),
                    };
                }
            }
        }
    }
}

/// What the pipeline has made when lowering is done.
pub struct Lowered {
    pub ast: syntax::ast::Program,
    pub hir: hir::Hir,
    pub tables: analysis::Tables,
    /// The loop IR as lowering leaves it (valid), before the `opt` passes.
    pub ir: ir::Program,
}

/// The pipeline up to and including lowering.
pub fn lower(mut ast: syntax::ast::Program) -> Result<Lowered, Vec<Diagnostic>> {
    syntax::hoist::hoist_nested_fns(&mut ast);
    let stdlib = source::stdlib::stdlib()?;
    let mut diags = Diagnostics::new();
    let mut hir = resolve::resolve_program(&ast, &stdlib, &mut diags);
    stop_on_errors(&mut diags)?;
    diags.extend(transform::instantiate::expand_typed_rests(&mut hir));
    stop_on_errors(&mut diags)?;
    validate_hir(&hir, "instantiation")?;
    let mut mono = transform::mono::Mono::default();
    let mut tables = mono.analyze(&mut hir, &mut diags);
    stop_on_errors(&mut diags)?;
    validate_hir(&hir, "monomorphization")?;
    // Each derivative step answers (or inlines for) one request per
    // function, from the tables of the program as it is; the new code is
    // analysed before the next step.
    let mut steps = 0;
    while transform::autodiff::has_requests(&hir) {
        steps += 1;
        if steps > MAX_AUTODIFF_STEPS {
            let span = base::span::Span::call_site();
            let d = Diagnostic::error(span, "derivatives inline functions without end (a recursive function?)")
                .note("a derivative inlines every function it passes through");
            return Err(vec![d]);
        }
        transform::autodiff::step(&mut hir, &tables, &mut diags);
        stop_on_errors(&mut diags)?;
        validate_hir(&hir, "autodiff")?;
        tables = mono.analyze(&mut hir, &mut diags);
        stop_on_errors(&mut diags)?;
    }
    let mut ir = lower::lower_program(&hir, &tables, &program_tag(&ast), &mut diags);
    stop_on_errors(&mut diags)?;
    // Sharded functions compute their own block, with the communication
    // they need stated in the IR (before the other IR passes, which then
    // see ordinary functions over local extents).
    diags.extend(opt::shard::run(&mut ir));
    stop_on_errors(&mut diags)?;
    ir::validate::validate(&ir)
        .map_err(|msg| vec![Diagnostic::bug(base::span::Span::call_site(), format!("invalid loop IR: {msg}"))])?;
    Ok(Lowered { ast, hir, tables, ir })
}

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
    hir::validate::validate(hir).map_err(|msg| {
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
    let ast = syntax::parse_str(src)?;
    compile(ast, options)
}
