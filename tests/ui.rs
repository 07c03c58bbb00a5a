//! Compile-fail tests: one file per diagnostic, under `tests/ui/<area>/`.
//! Diagnostics do not depend on the `checked` feature, so they run once;
//! `tests/ui/cuda/` expects the `cuda` feature off, so they skip it.

#[cfg(not(any(feature = "checked", feature = "cuda")))]
#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*/*.rs");
}
