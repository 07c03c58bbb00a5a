//! Compile-fail tests: one file per diagnostic, under `tests/ui/<area>/`.
//! Diagnostics do not depend on the `checked` feature, so they run once.

#[cfg(not(feature = "checked"))]
#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*/*.rs");
}
