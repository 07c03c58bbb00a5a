//! Which functions also get a form compiled for AVX-512 (see the runtime's
//! `cpu` module): those whose loops evaluate the runtime's polynomial math
//! (`exp`, or a function of `std::math` with a form in `vmath`), in
//! themselves or in a function they call, at any depth. Such loops are
//! bound by arithmetic, so sixteen lanes instead of eight nearly halve
//! their time (a `tanh` loop: 2.4 ns to 1.0 ns per element on an AVX-512
//! Xeon); a loop that streams memory gains nothing, and a third copy of it
//! would only cost compile time.

use crate::base::intrinsic::Intrinsic;
use crate::base::scalar::ScalarKind;
use crate::ir::{visit, Expr, ExprKind, Function, Program};

/// Which functions of `p` (by id) get an AVX-512 form: those that evaluate
/// polynomial math themselves or reach one that does (its loop inlines
/// the callee, or calls it per element), through the program's call graph.
pub fn avx512_fns(p: &Program) -> Vec<bool> {
    let own: Vec<bool> = p.fns.iter().map(evaluates_math).collect();
    p.functions()
        .map(|(id, _)| p.calls().reach([id], |_| true).iter().zip(&own).any(|(reached, own)| *reached && *own))
        .collect()
}

/// Whether `f` itself evaluates polynomial math.
fn evaluates_math(f: &Function) -> bool {
    let mut own = false;
    for s in &f.body {
        visit::for_each_stmt_expr(s, &mut |e| own |= calls_math(e));
    }
    own || calls_math(&f.result)
}

/// Whether `e` evaluates polynomial math (an `exp`, a function of
/// `std::math` with a form in `vmath`): a loop computing it is bound by
/// its arithmetic.
pub(crate) fn calls_math(e: &Expr) -> bool {
    let mut own = matches!(&e.kind, ExprKind::Intrinsic(i, _) if costly(*i));
    visit::for_each_child(e, &mut |c| own = own || calls_math(c));
    own
}

/// Whether `i` is computed by the runtime's polynomial forms (in `f32` or
/// `f64`).
fn costly(i: Intrinsic) -> bool {
    matches!(i, Intrinsic::Exp)
        || super::expr::vmath_name(i, ScalarKind::F32).is_some()
        || super::expr::vmath_name(i, ScalarKind::F64).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn heavy_of(src: &str) -> Vec<String> {
        let c = crate::compile_str(src, &crate::Options::default()).expect("compiles");
        let heavy = avx512_fns(&c.ir);
        c.ir.fns.iter().zip(heavy).filter(|(_, h)| *h).map(|(f, _)| f.name.clone()).collect()
    }

    #[test]
    fn math_in_a_loop_or_in_a_callee_gets_the_form_streaming_code_does_not() {
        let heavy = heavy_of(
            "use std::math::tanh;
             fn act(v) { tanh(v) * 0.5 }
             pub fn direct(x: [f32; N]) -> [f32; N] { let y[i] = std::math::exp(x[i]); y }
             pub fn through(x: [f32; N]) -> [f32; N] { let y[i] = act(x[i]); y }
             pub fn outer(x: [f32; N]) -> [f32; N] { through(x) }
             pub fn stream(a: [f32; N], b: [f32; N]) -> [f32; N] { let y[i] = a[i] * b[i] + 1.0; y }
             pub fn root(x: [f64; N]) -> [f64; N] { let y[i] = std::math::sqrt(x[i]); y }",
        );
        for f in ["direct", "through", "outer"] {
            assert!(heavy.iter().any(|h| h.ends_with(f)), "{f} not in {heavy:?}");
        }
        for f in ["stream", "root"] {
            assert!(!heavy.iter().any(|h| h.ends_with(f)), "{f} in {heavy:?}");
        }
    }

    #[test]
    fn only_the_math_function_gets_the_avx512_twin_tested_before_the_avx2_one() {
        let src = "pub fn act(x: [f32; N]) -> [f32; N] { let y[i] = std::math::tanh(x[i]); y }
                   pub fn stream(a: [f32; N], b: [f32; N]) -> [f32; N] { let y[i] = a[i] * b[i]; y }";
        let c = crate::compile_str(src, &crate::Options::default()).expect("compiles");
        let rust: String = c.rust.to_string().split_whitespace().collect();
        let act = rust.find("fn__act_body").expect("act's body");
        let stream = rust.find("fn__stream_body").expect("stream's body");
        let (act, stream) =
            if act < stream { (&rust[act..stream], &rust[stream..]) } else { (&rust[act..], &rust[stream..act]) };
        let w512 = act.find("unsafefn__wide512(").expect("an AVX-512 twin");
        let features = act.find("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma").expect("its features");
        let test512 = act.find("cpu::wide512()").expect("its run-time test");
        let w2 = act.find("unsafefn__wide(").expect("the AVX2 twin");
        assert!(features < w512 && w512 < test512 && test512 < w2, "{act}");
        assert!(!stream.contains("__wide512") && stream.contains("unsafefn__wide("), "{stream}");
        // Checked mode and the baseline-only option have one form.
        for options in [
            crate::Options { checked: true, ..Default::default() },
            crate::Options { baseline_only: true, ..Default::default() },
        ] {
            let c = crate::compile_str(src, &options).expect("compiles");
            assert!(!c.rust.to_string().contains("__wide"));
        }
    }
}
