//! Resolution tests: names become `DefId`s (printed as `name#id`), and
//! resolution errors carry suggestions.

use expect_test::{expect, Expect};

use crate::test_support::{self, Stage};

fn check(src: &str, expect: Expect) {
    test_support::check(src, Stage::Resolve, expect);
}

fn check_error(src: &str, expect: Expect) {
    test_support::check_error(src, Stage::Resolve, expect);
}

#[test]
fn same_spelling_in_two_statements_gives_two_ids() {
    check(
        "fn f(x: [f32; N]) -> f32 { let a[i] = x[i]; let b[i] = a[i] * 2.0; sum[i](b[i]) }",
        expect![[r#"
            fn f(x#0: ) ->  {
                let a#2[i#1 in ?]:  = x#0[i#1];
                let b#4[i#3 in ?]:  = (a#2[i#3] * 2.0);
                sum[i#5 in ?](b#4[i#5])
            }
        "#]],
    );
}

#[test]
fn shadowing_refers_to_the_earlier_binding() {
    check(
        "fn f(x: f32) -> f32 { let y = x; let y = y * 2.0; y }",
        expect![[r#"
        fn f(x#0: ) ->  {
            let y#1:  = x#0;
            let y#2:  = (y#1 * 2.0);
            y#2
        }
    "#]],
    );
}

#[test]
fn items_are_hoisted_and_std_imports_resolve() {
    check(
        "use std::math::{exp, max as mx}; fn f(x: f32) -> f32 { g(exp(x)) } fn g(y: f32) -> f32 { mx(y, 0.0) }",
        expect![[r#"
            fn f(x#0: ) ->  {
                g(intrinsic::exp(x#0))
            }
            fn g(y#1: ) ->  {
                intrinsic::max(y#1, 0.0)
            }
        "#]],
    );
}

#[test]
fn where_mentioning_a_reduction_index_moves_into_it() {
    check(
        "fn f(x: [f32; N]) -> f32 { let s = sum[i](x[i]) where x[i] > 0.0; s }",
        expect![[r#"
        fn f(x#0: ) ->  {
            let s#2:  = sum[i#1 in ?](x#0[i#1] where (x#0[i#1] > 0.0));
            s#2
        }
    "#]],
    );
}

#[test]
fn unknown_name_suggests_a_close_one() {
    check_error(
        "fn f(weight: f32) -> f32 { wieght * 2.0 }",
        expect![[r#"
        error: cannot find value `wieght` in this scope @1:27
          = help: a name with a similar spelling exists: `weight`"#]],
    );
}

#[test]
fn unknown_function_suggests_an_import() {
    check_error(
        "fn f(x: f32) -> f32 { exp(x) }",
        expect![[r#"
        error: cannot find function `exp` in this scope @1:22
          = help: import it: `use std::math::exp;`"#]],
    );
}

#[test]
fn range_in_where_is_an_error() {
    check_error(
        "fn f(x: [f32; N]) -> f32 { let s = sum[i](x[i]) where i in 0..N; s }",
        expect![[r#"
        error: a range cannot appear in `where`: `i` needs its range in brackets @1:54
          = help: declare it where the index is introduced: `[i in a..b]`"#]],
    );
}

#[test]
fn unresolved_import() {
    check_error(
        "use std::math::exq; fn f(x: f32) -> f32 { x }",
        expect![[r#"
        error: cannot find `exq` in `std::math` @1:15
          = help: a name with a similar spelling exists: `exp`"#]],
    );
}
