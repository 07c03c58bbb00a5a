//! Property test of derivatives over random programs (see
//! `support/random_program.rs`): every generated program with a request
//! compiles through the whole pipeline, autodiff included, with no
//! diagnostic at all (no internal compiler error, no rejected derivative
//! code: the new code is analysed, lowered and validated like user code).
//! Their numbers are checked against finite differences by
//! `tests/autodiff_random.rs` in the facade crate, generated from the same
//! generator (`cargo run -p einlang-core --example random_programs`).

#[path = "support/random_program.rs"]
mod random_program;

use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn random_programs_differentiate(seed in any::<u64>()) {
        let src = random_program::block(seed, 1);
        let out = einlang_core::compile_str(&src, &einlang_core::Options::default());
        if let Err(diags) = out {
            let text: Vec<String> = diags.iter().map(|d| d.render_text()).collect();
            prop_assert!(false, "{}\n---\n{}", src, text.join("\n"));
        }
    }
}
