//! Compile-fail tests: one file per diagnostic, under `tests/ui/<area>/`.
//! Diagnostics do not depend on the `checked` feature, so they run once;
//! `tests/ui/` expects the `cuda` feature off (`tests/ui/cuda/` and
//! `tests/ui/include/device_needs_the_cuda_feature.rs` are the errors of
//! device code without it), and `tests/ui_cuda/` the feature on.

#[cfg(not(any(feature = "checked", feature = "cuda")))]
#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*/*.rs");
}

#[cfg(all(feature = "cuda", not(feature = "checked")))]
#[test]
fn ui_cuda() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui_cuda/*.rs");
}
