//! Snapshot tests of every stage: each program in `tests/stages/*.ein` is
//! compiled and its pretty-printed AST, HIR (with types and ranges), loop IR
//! and generated Rust (formatted with prettyplease) are compared with the
//! files next to it (`NAME.ast`, `NAME.hir`, `NAME.ir`, `NAME.rs.txt`).
//! The Rust is shown in one form (`Options::baseline_only`: without the
//! AVX2 twin of each function, which repeats the same code).
//! Regenerate with `UPDATE_EXPECT=1 cargo test -p einlang-core --test stages`.

use std::path::PathBuf;

use einlang_core::{compile_str, Options};
use expect_test::expect_file;

fn check(name: &str) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/stages");
    let src = std::fs::read_to_string(dir.join(format!("{name}.ein"))).expect("stage program exists");
    let compiled = match compile_str(&src, &Options { baseline_only: true, ..Options::default() }) {
        Ok(c) => c,
        Err(diags) => {
            panic!("{name} failed:\n{}", diags.iter().map(|d| d.render_text()).collect::<Vec<_>>().join("\n"))
        }
    };
    expect_file![dir.join(format!("{name}.ast"))]
        .assert_eq(&einlang_core::syntax::pretty::pretty_program(&compiled.ast));
    expect_file![dir.join(format!("{name}.hir"))]
        .assert_eq(&einlang_core::analysis::pretty::pretty_hir(&compiled.hir, &compiled.tables));
    expect_file![dir.join(format!("{name}.ir"))].assert_eq(&einlang_core::ir::pretty::pretty_program(&compiled.ir));
    let file: syn::File = syn::parse2(compiled.rust.clone()).expect("generated code parses as a Rust file");
    expect_file![dir.join(format!("{name}.rs.txt"))].assert_eq(&prettyplease::unparse(&file));
}

#[test]
fn matmul() {
    check("matmul");
}

#[test]
fn conv2d() {
    check("conv2d");
}

#[test]
fn softmax() {
    check("softmax");
}

#[test]
fn dense_relu() {
    check("dense_relu");
}

#[test]
fn maxpool() {
    check("maxpool");
}
