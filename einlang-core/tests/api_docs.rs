//! The rustdoc of generated functions: the user's comment, the Einlang
//! signature, the dimensions the arguments must agree on, and an `# Errors`
//! section naming the kinds of `einlang::Error` the function can return,
//! its callees' included. The expected lines are written by hand from the
//! programs.

use einlang_core::{compile_str, Options};

/// The doc lines of the generated public function `name` (not its hidden
/// body, nor its `_into` form).
fn docs_of(src: &str, name: &str) -> Vec<String> {
    let compiled = match compile_str(src, &Options { baseline_only: true, ..Options::default() }) {
        Ok(c) => c,
        Err(diags) => panic!("{}", diags.iter().map(|d| d.render_text()).collect::<Vec<_>>().join("\n")),
    };
    let file: syn::File = syn::parse2(compiled.rust).expect("generated code parses");
    for item in file.items {
        let syn::Item::Fn(f) = item else { continue };
        if f.sig.ident != name {
            continue;
        }
        return f
            .attrs
            .iter()
            .filter(|a| a.path().is_ident("doc"))
            .filter_map(|a| match &a.meta {
                syn::Meta::NameValue(nv) => match &nv.value {
                    syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => Some(s.value()),
                    _ => None,
                },
                _ => None,
            })
            .collect();
    }
    panic!("no function `{name}` was generated");
}

fn errors_section(docs: &[String]) -> Vec<String> {
    let at = docs.iter().position(|d| d == " # Errors").expect("an # Errors section");
    docs[at + 1..]
        .iter()
        .filter(|d| d.starts_with(" - "))
        .map(|d| d[3..].split("`: ").next().unwrap().to_string() + "`")
        .collect()
}

#[test]
fn a_product_documents_its_signature_the_shared_dimension_and_shape_errors() {
    let src = "/// The product of two matrices.\n\
               pub fn mm(a: [f32; N, K], b: [f32; K, M]) -> [f32; N, M] {\n\
                   let c[i, j] = sum[k](a[i, k] * b[k, j]);\n    c\n}\n";
    let docs = docs_of(src, "mm");
    assert_eq!(docs[0], " The product of two matrices.");
    assert!(docs.contains(&" fn mm(a: [f32; N, K], b: [f32; K, M]) -> [f32; N, M]".to_string()), "{docs:#?}");
    assert!(docs.contains(&" - `K`: `a` axis 1, `b` axis 0".to_string()), "{docs:#?}");
    // `N` and `M` are each read from one argument: nothing to agree on.
    assert!(!docs.iter().any(|d| d.starts_with(" - `N`") || d.starts_with(" - `M`")), "{docs:#?}");
    assert_eq!(errors_section(&docs), ["`einlang::Error::Shape`", "`einlang::Error::Alloc`"]);
}

#[test]
fn a_function_without_checks_or_tensors_says_it_cannot_fail() {
    let src = "pub fn scale(x: f32, s: f32) -> f32 {\n    x * s\n}\n";
    let docs = docs_of(src, "scale");
    assert!(docs.contains(&" fn scale(x: f32, s: f32) -> f32".to_string()), "{docs:#?}");
    assert!(errors_section(&docs).is_empty(), "{docs:#?}");
    assert!(docs.iter().any(|d| d.contains("None: every argument")), "{docs:#?}");
    // A tensor sized by its argument may not fit in memory.
    let src = "pub fn twice(x: [f32; N]) -> [f32; N] {\n    let y[i] = x[i] * 2.0;\n    y\n}\n";
    assert_eq!(errors_section(&docs_of(src, "twice")), ["`einlang::Error::Alloc`"]);
}

#[test]
fn gathers_asserts_and_integer_division_are_listed_and_callers_inherit_them() {
    let src = "fn pick(x: [f32; N], idx: [i64; M]) -> [f32; M] {\n\
                   let y[m] = x[idx[m]];\n    y\n}\n\
               pub fn checked_mean(x: [f32; N], idx: [i64; M], d: i64) -> f32 {\n\
                   assert(d != 0, \"d must not be zero\");\n\
                   let y = pick(x, idx);\n\
                   sum[m](y[m]) / ((M / d) as f32)\n}\n";
    let docs = docs_of(src, "checked_mean");
    assert_eq!(
        errors_section(&docs),
        [
            "`einlang::Error::Index`",
            "`einlang::Error::Assert`",
            "`einlang::Error::Arithmetic`",
            "`einlang::Error::Alloc`"
        ],
        "{docs:#?}"
    );
}

#[test]
fn a_constant_extent_is_listed_even_when_one_argument_has_it() {
    let src = "pub fn first3(x: [f32; 3]) -> f32 {\n    x[0] + x[1] + x[2]\n}\n";
    let docs = docs_of(src, "first3");
    assert!(docs.contains(&" - `3`: `x` axis 0".to_string()), "{docs:#?}");
    assert_eq!(errors_section(&docs), ["`einlang::Error::Shape`"]);
}

#[test]
fn an_argument_of_a_size_the_caller_chooses_may_be_copied() {
    // `x` is read in row-major order: a view of other strides is copied,
    // of `N` elements, and that copy can fail. Nothing else can.
    let src = "pub fn total(x: [f32; N]) -> f32 {\n    sum[i](x[i])\n}\n";
    let docs = docs_of(src, "total");
    assert_eq!(errors_section(&docs), ["`einlang::Error::Alloc`"], "{docs:#?}");
}
