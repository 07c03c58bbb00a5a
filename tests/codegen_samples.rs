//! Generated Rust that no macro call in the suite produces, compiled here
//! by rustc: the code the back end prints for the hand-built IR of its
//! snapshot tests (`einlang-core/src/codegen/tests.rs`), and for a mutant
//! of each stage program that still compiles (`einlang-core/tests/
//! robustness.rs`). Those tests keep each one in
//! `einlang-core/tests/codegen_samples/`; they show that the code parses,
//! this shows that it type-checks against the runtime it calls.
#![allow(dead_code, unconditional_recursion, clippy::all)]

mod argmax_view_guarded_sum_and_tuple_result {
    include!("../einlang-core/tests/codegen_samples/argmax_view_guarded_sum_and_tuple_result.rs");
}

mod guarded_definition_with_where_binding {
    include!("../einlang-core/tests/codegen_samples/guarded_definition_with_where_binding.rs");
}

mod keyword_names_are_escaped {
    include!("../einlang-core/tests/codegen_samples/keyword_names_are_escaped.rs");
}

mod matmul_all_checked {
    include!("../einlang-core/tests/codegen_samples/matmul_all_checked.rs");
}

mod matmul_with_reduction {
    include!("../einlang-core/tests/codegen_samples/matmul_with_reduction.rs");
}

mod mutant_conv2d {
    include!("../einlang-core/tests/codegen_samples/mutant_conv2d.rs");
}

mod mutant_dense_relu {
    include!("../einlang-core/tests/codegen_samples/mutant_dense_relu.rs");
}

mod mutant_matmul {
    include!("../einlang-core/tests/codegen_samples/mutant_matmul.rs");
}

mod mutant_maxpool {
    include!("../einlang-core/tests/codegen_samples/mutant_maxpool.rs");
}

mod mutant_softmax {
    include!("../einlang-core/tests/codegen_samples/mutant_softmax.rs");
}

mod rank_one_with_runtime_extent {
    include!("../einlang-core/tests/codegen_samples/rank_one_with_runtime_extent.rs");
}

mod rank_three_with_offset_axis {
    include!("../einlang-core/tests/codegen_samples/rank_three_with_offset_axis.rs");
}

mod scalar_operations_and_literals {
    include!("../einlang-core/tests/codegen_samples/scalar_operations_and_literals.rs");
}

mod scalar_result_with_call {
    include!("../einlang-core/tests/codegen_samples/scalar_result_with_call.rs");
}

mod strided_checked_read {
    include!("../einlang-core/tests/codegen_samples/strided_checked_read.rs");
}

mod values_are_borrowed_moved_or_copied {
    include!("../einlang-core/tests/codegen_samples/values_are_borrowed_moved_or_copied.rs");
}

/// Every sample of the directory, and nothing else, is compiled above.
const SAMPLES: &[&str] = &[
    "argmax_view_guarded_sum_and_tuple_result",
    "guarded_definition_with_where_binding",
    "keyword_names_are_escaped",
    "matmul_all_checked",
    "matmul_with_reduction",
    "mutant_conv2d",
    "mutant_dense_relu",
    "mutant_matmul",
    "mutant_maxpool",
    "mutant_softmax",
    "rank_one_with_runtime_extent",
    "rank_three_with_offset_axis",
    "scalar_operations_and_literals",
    "scalar_result_with_call",
    "strided_checked_read",
    "values_are_borrowed_moved_or_copied",
];

#[test]
fn every_sample_is_compiled() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("einlang-core/tests/codegen_samples");
    let mut found: Vec<String> = std::fs::read_dir(&dir)
        .expect("the samples directory exists")
        .map(|e| e.expect("a readable entry").file_name().to_string_lossy().into_owned())
        .filter_map(|f| f.strip_suffix(".rs").map(str::to_string))
        .collect();
    found.sort();
    assert_eq!(found, SAMPLES, "add a `mod` and a `SAMPLES` line for each new sample");
}

#[test]
fn a_sample_runs() {
    // The plain product of `matmul_with_reduction`, against a hand loop.
    let a = einlang::ndarray::array![[1.0f32, 2.0, 3.0], [4.0, 5.0, 6.0]];
    let b = einlang::ndarray::array![[1.0f32, 0.0], [0.0, 1.0], [2.0, -1.0]];
    let c = matmul_with_reduction::matmul(&a, &b).expect("shapes agree");
    assert_eq!(c, einlang::ndarray::array![[7.0, -1.0], [16.0, -1.0]]);
}
