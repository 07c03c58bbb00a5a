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
              = help: the standard library has it: `use std::math::exp;`"#]],
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

#[test]
fn computed_value_indexed_in_a_definition_is_evaluated_once_before_it() {
    // `f(x)` mentions no index: one temporary before the statement, named
    // after the expression for messages.
    check(
        "fn f(x: [f32; 4]) -> [f32; 4] { x } \
         fn g(x: [f32; 4], w: [f32; 4, 4]) -> [f32; 4] { let y[i] = sum[k](w[i, k] * f(x)[k]); y }",
        expect![[r#"
            fn f(x#0: ) ->  {
                x#0
            }
            fn g(x#1: , w#2: ) ->  {
                let f(x)#3:  = f(x#1);
                let y#6[i#4 in ?]:  = sum[k#5 in ?]((w#2[i#4, k#5] * f(x)#3[k#5]));
                y#6
            }
        "#]],
    );
}

#[test]
fn computed_value_that_reads_the_point_is_evaluated_outside_the_inner_reduction() {
    // `f(x[i])` depends on `i` but not on `k`: once per point, before the
    // loop over `k`; `f(x[k])` depends on `k`: where it is written.
    check(
        "fn f(v: f32) -> [f32; 3] { [v, v, v] } \
         fn g(x: [f32; 3]) -> [f32; 3] { let y[i] = sum[k](f(x[i])[k] + f(x[k])[0]); y }",
        expect![[r#"
            fn f(v#0: ) ->  {
                [v#0, v#0, v#0]
            }
            fn g(x#1: ) ->  {
                let y#6[i#2 in ?]:  = { let f(x[i])#3:  = f(x#1[i#2]); sum[k#4 in ?]((f(x[i])#3[k#4] + { let f(x[k])#5:  = f(x#1[k#4]); f(x[k])#5[0] })) };
                y#6
            }
        "#]],
    );
}

#[test]
fn computed_values_of_every_form_are_bound_to_temporaries() {
    // Parenthesized arithmetic, an array literal, a tuple field, a chained
    // subscript (one read of two indices), a reduction and a comprehension
    // at the statement level, and one under `if` outside any loop (where
    // it is written, so only when the branch is taken).
    check(
        "fn m(x: [f32; 2]) -> [f32; 2, 2] { let r[i, j] = x[i] * x[j]; r } \
         fn g(x: [f32; 2], n: i64) -> f32 { \
             let p = (x, 1.0); \
             let a[i] = (x + x)[i] + [1.0, 2.0][i] + p.0[i] + m(x)[i][1]; \
             let s = argmax[j](m(x)[0][j]); \
             let c = [m(x)[i, i] | i in 0..2]; \
             if n > 0 { m(x)[n][0] } else { a[0] } \
         }",
        expect![[r#"
            fn m(x#0: ) ->  {
                let r#3[i#1 in ?, j#2 in ?]:  = (x#0[i#1] * x#0[j#2]);
                r#3
            }
            fn g(x#4: , n#5: ) ->  {
                let p#6:  = (x#4, 1.0);
                let (x + x)#7:  = (x#4 + x#4);
                let [1.0, 2.0]#8:  = [1.0, 2.0];
                let p.0#9:  = p#6.0;
                let m(x)#10:  = m(x#4);
                let a#12[i#11 in ?]:  = ((((x + x)#7[i#11] + [1.0, 2.0]#8[i#11]) + p.0#9[i#11]) + m(x)#10[i#11, 1]);
                let s#15:  = { let m(x)#13:  = m(x#4); argmax[j#14 in ?](m(x)#13[0, j#14]) };
                let c#18:  = { let m(x)#16:  = m(x#4); [m(x)#16[i#17, i#17] | i#17 in ?] };
                if (n#5 > 0) { { { let m(x)#19:  = m(x#4); m(x)#19[n#5, 0] } } } else { { a#12[0] } }
            }
        "#]],
    );
}

#[test]
fn computed_value_reading_the_recurrence_stays_in_its_clause() {
    // `f(h[t - 1])` reads the tensor being defined: evaluated at the point;
    // `f(x)` reads nothing of the clause: before it.
    check(
        "fn f(v: [f32; 2]) -> [f32; 2] { v } \
         fn g(x: [f32; 2]) -> [f32; 4, 2] { \
             let h[0, j] = x[j]; \
             let h[t in 1..4, j] = f(h[t - 1])[j] + f(x)[j]; \
             h \
         }",
        expect![[r#"
            fn f(v#0: ) ->  {
                v#0
            }
            fn g(x#1: ) ->  {
                let f(x)#2:  = f(x#1);
                recurrence h#3 {
                    let h#3[0, j#4 in ?]:  = x#1[j#4];
                    let h#3[t#5 in ?, j#6 in ?]:  = ({ let f(h[t - 1])#7:  = f(h#3[(t#5 - 1)]); f(h[t - 1])#7[j#6] } + f(x)#2[j#6]);
                }
                h#3
            }
        "#]],
    );
}
