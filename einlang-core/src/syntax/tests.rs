//! Parser tests: source text in, pretty-printed AST (or rendered
//! diagnostics) out, as expect-test snapshots. Update them with
//! `UPDATE_EXPECT=1 cargo test -p einlang-core syntax`.

use expect_test::{expect, expect_file, Expect};
use quote::quote;

use super::ast::{Expr, ExprKind, Item, Stmt};
use super::pretty::{pretty_expr, pretty_program};
use super::{parse_str, parse_tokens};
use crate::diag::Diagnostic;

fn render_errors(diags: &[Diagnostic]) -> String {
    let mut out = String::new();
    for diag in diags {
        out.push_str(&diag.render_text());
        out.push('\n');
    }
    out
}

/// Parses `src` and compares the pretty-printed program with `expect`.
fn check(src: &str, expect: Expect) {
    match parse_str(src) {
        Ok(program) => expect.assert_eq(&pretty_program(&program)),
        Err(diags) => panic!("unexpected syntax errors in\n{src}\n{}", render_errors(&diags)),
    }
}

/// Parses `src`, which must fail, and compares the rendered diagnostics
/// with `expect`.
fn check_error(src: &str, expect: Expect) {
    match parse_str(src) {
        Ok(program) => panic!("expected syntax errors, parsed\n{}", pretty_program(&program)),
        Err(diags) => expect.assert_eq(&render_errors(&diags)),
    }
}

/// Parses `src` as one statement `let _ = EXPR;` and returns the expression.
fn parse_expr_str(src: &str) -> Expr {
    let program = match parse_str(&format!("let e = {src};")) {
        Ok(program) => program,
        Err(diags) => panic!("syntax errors in `{src}`:\n{}", render_errors(&diags)),
    };
    match program.items.into_iter().next() {
        Some(Item::Stmt(Stmt::Let(stmt))) => stmt.value,
        other => panic!("expected a `let`, found {other:?}"),
    }
}

/// Compares the pretty-printed expressions of several sources, one per line.
fn check_exprs(srcs: &[&str], expect: Expect) {
    let mut out = String::new();
    for src in srcs {
        out.push_str(&format!("{src:<24} => {}\n", pretty_expr(&parse_expr_str(src))));
    }
    expect.assert_eq(&out);
}

// ---------------------------------------------------------------------------
// Einstein notation

#[test]
fn matmul() {
    check(
        "let C[i, j] = sum[k](A[i, k] * B[k, j]);",
        expect![[r#"
            (let C [i j] (sum [k] (* (index A i k) (index B k j))))
        "#]],
    );
}

#[test]
fn convolution() {
    check(
        "
        let Y[n, o, y, x] = sum[c, r, s](X[n, c, y + r, x + s] * W[o, c, r, s]) + b[o];
        let conv[o, y, x] = sum[r, s](img[iy, ix] * k[o, r, s]) where iy = y + r, ix = x + s;
        ",
        expect![[r#"
            (let Y [n o y x] (+ (sum [c r s] (* (index X n c (+ y r) (+ x s)) (index W o c r s))) (index b o)))
            (let conv [o y x] (sum [r s] (* (index img iy ix) (index k o r s))) (where (= iy (+ y r)) (= ix (+ x s))))
        "#]],
    );
}

#[test]
fn softmax() {
    check(
        "
        fn softmax(x: [f32; N]) -> [f32; N] {
            let m = max[i](x[i]);
            let e[i] = exp(x[i] - m);
            let s = sum[i](e[i]);
            let y[i] = e[i] / s;
            y
        }
        ",
        expect![[r#"
            (fn softmax (x: [f32; N]) -> [f32; N] {
              (let m (max [i] (index x i)))
              (let e [i] (call exp (- (index x i) m)))
              (let s (sum [i] (index e i)))
              (let y [i] (/ (index e i) s))
              y
            })
        "#]],
    );
}

#[test]
fn where_guards_and_bindings() {
    check(
        "
        let upper[i, j] = M[i, j] where i <= j;
        let out[i, j] = act
            where z = sum[k](x[i, k] * w[k, j]) + b[j], act = if z > 0.0 { z } else { 0.0 };
        let band[i, j] = M[i, j] where i <= j, j < i + 3, d = j - i,;
        let bad[i] = x[i] where i in 0..N;
        let eq[i] = x[i] where x[i] == 0.0;
        ",
        expect![[r#"
            (let upper [i j] (index M i j) (where (<= i j)))
            (let out [i j] act (where (= z (+ (sum [k] (* (index x i k) (index w k j))) (index b j))) (= act (if (> z 0.0) { z } else { 0.0 }))))
            (let band [i j] (index M i j) (where (<= i j) (< j (+ i 3)) (= d (- j i))))
            (let bad [i] (index x i) (where (in i (.. 0 N))))
            (let eq [i] (index x i) (where (== (index x i) 0.0)))
        "#]],
    );
}

#[test]
fn reductions() {
    check(
        "
        let pos = sum[i](x[i] where x[i] > 0.0);
        let pos2 = sum[i](x[i]) where x[i] > 0.0;
        let t = prod[k in 0..K, j in 1..=N](a[k, j] where k != j, w = k + j);
        let best = argmax[i](scores[i]);
        let worst = argmin[i in 0..n](scores[i]);
        let b = all[i](x[i] > 0) && any[i](x[i] < 0);
        let m = max(a, b);
        let mm = min[i](max[j](x[i, j]));
        let s = sum[i](x[i]) / len(x) as f32;
        ",
        expect![[r#"
            (let pos (sum [i] (index x i) (where (> (index x i) 0.0))))
            (let pos2 (sum [i] (index x i)) (where (> (index x i) 0.0)))
            (let t (prod [(in k (.. 0 K)) (in j (..= 1 N))] (index a k j) (where (!= k j) (= w (+ k j)))))
            (let best (argmax [i] (index scores i)))
            (let worst (argmin [(in i (.. 0 n))] (index scores i)))
            (let b (&& (all [i] (> (index x i) 0)) (any [i] (< (index x i) 0))))
            (let m (call max a b))
            (let mm (min [i] (max [j] (index x i j))))
            (let s (/ (sum [i] (index x i)) (as (call len x) f32)))
        "#]],
    );
}

#[test]
fn reduction_names_without_brackets_and_parens_are_names() {
    check(
        "let a = sum[i]; let b = max; let c = sum(x, y);",
        expect![[r#"
            (let a (index sum i))
            (let b max)
            (let c (call sum x y))
        "#]],
    );
}

#[test]
fn recurrences() {
    check(
        "
        let fib[0] = 0; let fib[1] = 1;
        let fib[n in 2..N] = fib[n - 1] + fib[n - 2];
        let h[0, j] = h0[j];
        let h[t in 1..T, j] = tanh(sum[k](W[j, k] * h[t - 1, k]) + U[j] * x[t]);
        let D[i in 1..=n, j in 1..=m] = min(D[i-1, j] + 1, min(D[i, j-1] + 1, D[i-1, j-1] + cost[i-1, j-1]));
        ",
        expect![[r#"
            (let fib [0] 0)
            (let fib [1] 1)
            (let fib [(in n (.. 2 N))] (+ (index fib (- n 1)) (index fib (- n 2))))
            (let h [0 j] (index h0 j))
            (let h [(in t (.. 1 T)) j] (call tanh (+ (sum [k] (* (index W j k) (index h (- t 1) k))) (* (index U j) (index x t)))))
            (let D [(in i (..= 1 n)) (in j (..= 1 m))] (call min (+ (index D (- i 1) j) 1) (call min (+ (index D i (- j 1)) 1) (+ (index D (- i 1) (- j 1)) (index cost (- i 1) (- j 1))))))
        "#]],
    );
}

#[test]
fn rest_indices() {
    check(
        "let y[..batch, c] = sum[i](x[..batch, i] * w[i, c]);",
        expect![[r#"
            (let y [..batch c] (sum [i] (* (index x ..batch i) (index w i c))))
        "#]],
    );
}

// ---------------------------------------------------------------------------
// Operators

#[test]
fn precedence() {
    check_exprs(
        &[
            "-x ** 2",
            "a as f32 * b",
            "2 ** 3 ** 2",
            "2.0 ** -1",
            "2 ** -x ** 2",
            "-x as f64",
            "x as i64 as f32",
            "!a && b",
            "a || b && c == d",
            "a + b * c - d / e % f",
            "(a + b) * c",
            "a < b + 1",
            "a - -b",
            "x[i] ** 2 * y",
            "f(x) ** g(y)",
            "(B * O) as f32",
            "-(a + b)",
            "!!a",
            "a <= b || a >= c",
            "a != b && !c",
        ],
        expect![[r#"
            -x ** 2                  => (- (** x 2))
            a as f32 * b             => (* (as a f32) b)
            2 ** 3 ** 2              => (** 2 (** 3 2))
            2.0 ** -1                => (** 2.0 (- 1))
            2 ** -x ** 2             => (** 2 (- (** x 2)))
            -x as f64                => (as (- x) f64)
            x as i64 as f32          => (as (as x i64) f32)
            !a && b                  => (&& (! a) b)
            a || b && c == d         => (|| a (&& b (== c d)))
            a + b * c - d / e % f    => (- (+ a (* b c)) (% (/ d e) f))
            (a + b) * c              => (* (+ a b) c)
            a < b + 1                => (< a (+ b 1))
            a - -b                   => (- a (- b))
            x[i] ** 2 * y            => (* (** (index x i) 2) y)
            f(x) ** g(y)             => (** (call f x) (call g y))
            (B * O) as f32           => (as (* B O) f32)
            -(a + b)                 => (- (+ a b))
            !!a                      => (! (! a))
            a <= b || a >= c         => (|| (<= a b) (>= a c))
            a != b && !c             => (&& (!= a b) (! c))
        "#]],
    );
}

#[test]
fn postfix() {
    check_exprs(
        &[
            "t.0",
            "t.0.1",
            "t.1.0.2",
            "f(x).1",
            "x[i][j]",
            "f(a, b,)(c)",
            "m::f(x)[0]",
            "crate::f(x)",
            "super::super::g",
            "self::h",
            "std::math::exp(x)",
            "typeof(x)",
        ],
        expect![[r#"
            t.0                      => (field t 0)
            t.0.1                    => (field (field t 0) 1)
            t.1.0.2                  => (field (field (field t 1) 0) 2)
            f(x).1                   => (field (call f x) 1)
            x[i][j]                  => (index (index x i) j)
            f(a, b,)(c)              => (call (call f a b) c)
            m::f(x)[0]               => (index (call m::f x) 0)
            crate::f(x)              => (call crate::f x)
            super::super::g          => super::super::g
            self::h                  => self::h
            std::math::exp(x)        => (call std::math::exp x)
            typeof(x)                => (call typeof x)
        "#]],
    );
}

#[test]
fn literals() {
    check_exprs(
        &[
            "3",
            "3i64",
            "1.5",
            "2.0f64",
            "1e-3",
            "2.5e10f32",
            "1f32",
            "0xff",
            "1_000",
            "1.",
            "true",
            "false",
            r#""hello""#,
            r#""a \"quoted\"\n""#,
            r#""braces {{}}""#,
        ],
        expect![[r#"
            3                        => 3
            3i64                     => 3i64
            1.5                      => 1.5
            2.0f64                   => 2.0f64
            1e-3                     => 1e-3
            2.5e10f32                => 2.5e10f32
            1f32                     => 1f32
            0xff                     => 255
            1_000                    => 1000
            1.                       => 1.
            true                     => true
            false                    => false
            "hello"                  => "hello"
            "a \"quoted\"\n"         => "a \"quoted\"\n"
            "braces {{}}"            => "braces {}"
        "#]],
    );
}

#[test]
fn interpolated_strings() {
    check_exprs(
        &[
            r#""x = {x}""#,
            r#""{x:.3} and {y}!""#,
            r#""{a + f(b, c)}""#,
            r#""{{{x}}}""#,
            r#""{t.0:.2}""#,
            r#""{std::math::pi}""#,
            r#""{sum[i](v[i])}""#,
        ],
        expect![[r#"
            "x = {x}"                => (interp "x = " {x})
            "{x:.3} and {y}!"        => (interp {x:.3} " and " {y} "!")
            "{a + f(b, c)}"          => (interp {(+ a (call f b c))})
            "{{{x}}}"                => (interp "{" {x} "}")
            "{t.0:.2}"               => (interp {(field t 0):.2})
            "{std::math::pi}"        => (interp {std::math::pi})
            "{sum[i](v[i])}"         => (interp {(sum [i] (index v i))})
        "#]],
    );
}

#[test]
fn compound_expressions() {
    check_exprs(
        &[
            "()",
            "(a,)",
            "(a, b)",
            "((a))",
            "[]",
            "[1, 2, 3,]",
            "[[1.0, 2.0], [3.0, 4.0]]",
            "jagged[[1], [2, 3]]",
            "[x * 2 | x in xs]",
            "[i * j | i in 0..n, j in 0..=m, i != j]",
            "[f(x) | x in xs, x > 0]",
            "|x| x * 2",
            "|x: f32, y| x + y",
            "|| 1",
            "map(xs, |x| x + 1)",
            "@loss / @W",
            "@y",
            "@y / 2",
            "(@loss / @w, loss)",
            "{ let a = 1; a + 1 }",
        ],
        expect![[r#"
            ()                       => (tuple)
            (a,)                     => (tuple a)
            (a, b)                   => (tuple a b)
            ((a))                    => a
            []                       => (array)
            [1, 2, 3,]               => (array 1 2 3)
            [[1.0, 2.0], [3.0, 4.0]] => (array (array 1.0 2.0) (array 3.0 4.0))
            jagged[[1], [2, 3]]      => (jagged (array 1) (array 2 3))
            [x * 2 | x in xs]        => (comp (* x 2) (in x xs))
            [i * j | i in 0..n, j in 0..=m, i != j] => (comp (* i j) (in i (.. 0 n)) (in j (..= 0 m)) (filter (!= i j)))
            [f(x) | x in xs, x > 0]  => (comp (call f x) (in x xs) (filter (> x 0)))
            |x| x * 2                => (lambda (x) (* x 2))
            |x: f32, y| x + y        => (lambda (x: f32, y) (+ x y))
            || 1                     => (lambda () 1)
            map(xs, |x| x + 1)       => (call map xs (lambda (x) (+ x 1)))
            @loss / @W               => (deriv loss W)
            @y                       => (d y)
            @y / 2                   => (/ (d y) 2)
            (@loss / @w, loss)       => (tuple (deriv loss w) loss)
            { let a = 1; a + 1 }     => {
              (let a 1)
              (+ a 1)
            }
        "#]],
    );
}

#[test]
fn if_else_chains() {
    check(
        "
        let sign = if x > 0.0 { 1.0 } else if x < 0.0 { -1.0 } else { 0.0 };
        let y = if c { let t = 2; t * x } else { x };
        if done { print(\"done\"); }
        ",
        expect![[r#"
            (let sign (if (> x 0.0) { 1.0 } else (if (< x 0.0) { (- 1.0) } else { 0.0 })))
            (let y (if c {
              (let t 2)
              (* t x)
            } else { x }))
            (if done {
              (call print "done");
            });
        "#]],
    );
}

#[test]
fn match_expressions() {
    check(
        r#"
        let name = match n {
            0 => "zero",
            1..=9 => "small",
            -5..0 => "negative",
            x if x > 100 => "big",
            y where y < -100 => "very negative",
            _ => { "other" }
        };
        let q = match (a, b) { (0, _) => 0, (x, y) => { x + y } (_, _) => -1.5, };
        let f = match flag { true => 1.0, false => 0.0 };
        let s = match word { "yes" => 1, -1.5..=2.5 => 2, _ => 0 };
        let o = match (n, m) { 1 | 2..=4 => a || b, (0, _) | (_, 0) if c => |x| x, k @ (1, _) => k, _ => 0 };
        "#,
        expect![[r#"
            (let name (match n
              (0 => "zero")
              ((..= 1 9) => "small")
              ((.. -5 0) => "negative")
              (x if (> x 100) => "big")
              (y if (< y (- 100)) => "very negative")
              (_ => { "other" })))
            (let q (match (tuple a b)
              ((tuple 0 _) => 0)
              ((tuple x y) => { (+ x y) })
              ((tuple _ _) => (- 1.5))))
            (let f (match flag
              (true => 1.0)
              (false => 0.0)))
            (let s (match word
              ("yes" => 1)
              ((..= -1.5 2.5) => 2)
              (_ => 0)))
            (let o (match (tuple n m)
              ((or 1 (..= 2 4)) => (|| a b))
              ((or (tuple 0 _) (tuple _ 0)) if c => (lambda (x) x))
              ((@ k (tuple 1 _)) => k)
              (_ => 0)))
        "#]],
    );
}

// ---------------------------------------------------------------------------
// Statements and blocks

#[test]
fn blocks_and_statements() {
    check(
        "
        fn f(c, x) {
            print(1);
            if c { print(2); }
            match x { _ => 0 }
            let y = 3;;
            { y }
        }
        fn g(x) { if x { 1 } else { 2 } }
        fn h() {}
        fn k() { print(1); }
        ",
        expect![[r#"
            (fn f (c, x) {
              (call print 1);
              (if c {
                (call print 2);
              });
              (match x
                (_ => 0));
              (let y 3)
              { y }
            })
            (fn g (x) { (if x { 1 } else { 2 }) })
            (fn h () {})
            (fn k () {
              (call print 1);
            })
        "#]],
    );
}

#[test]
fn let_forms() {
    check(
        "
        let (a, b) = pair;
        let (a, (b, c),) = nested;
        let (single,) = one;
        let _ = f(x);
        let x: f32 = 1.0;
        let y[i]: [f32; N] = x[i];
        let s: str = \"hi\";
        ",
        expect![[r#"
            (let (tuple a b) pair)
            (let (tuple a (tuple b c)) nested)
            (let (tuple single) one)
            (let _ (call f x))
            (let x: f32 1.0)
            (let y [i]: [f32; N] (index x i))
            (let s: str "hi")
        "#]],
    );
}

#[test]
fn top_level_statements() {
    check(
        r#"
        let x = 2;
        print(x);
        assert(x == 2, "x is {x}");
        if x > 1 { print("big"); }
        {
            let y = x;
            print(y);
        }
        "#,
        expect![[r#"
            (let x 2)
            (call print x);
            (call assert (== x 2) (interp "x is " {x}));
            (if (> x 1) {
              (call print "big");
            });
            {
              (let y x)
              (call print y);
            };
        "#]],
    );
}

// ---------------------------------------------------------------------------
// Items

#[test]
fn functions() {
    check(
        "
        /// Dense layer
        /// with ReLU.
        #[device(cuda)]
        pub fn dense(x: [f32; B, I], w: [f32; I, O], b: [f32; O],) -> [f32; B, O] {
            let y[n, o] = relu(sum[i](x[n, i] * w[i, o]) + b[o]);
            y
        }
        fn norm2(x, y) { sqrt(x * x + y * y) }
        #[intrinsic]
        fn exp(x: f64) -> f64;
        #[inline(always, 3, \"s\")]
        fn pair(a, b) -> (f32, i32) { (a, b) }
        pub fn nothing();
        fn outer(x) {
            fn inner(y) { y * 2 }
            use std::math::exp;
            const K = 2;
            mod local { fn id(z) { z } }
            inner(x) + K
        }
        ",
        expect![[r#"
            (pub fn dense (doc " Dense layer") (doc " with ReLU.") (attr device cuda) (x: [f32; B, I], w: [f32; I, O], b: [f32; O]) -> [f32; B, O] {
              (let y [n o] (call relu (+ (sum [i] (* (index x n i) (index w i o))) (index b o))))
              y
            })
            (fn norm2 (x, y) { (call sqrt (+ (* x x) (* y y))) })
            (fn exp (attr intrinsic) (x: f64) -> f64;)
            (fn pair (attr inline always 3 "s") (a, b) -> (f32, i32) { (tuple a b) })
            (pub fn nothing ();)
            (fn outer (x) {
              (fn inner (y) { (* y 2) })
              (use std::math::exp)
              (const K 2)
              (mod local
                (fn id (z) { z }))
              (+ (call inner x) K)
            })
        "#]],
    );
}

#[test]
fn derivative_rules_and_requests() {
    check(
        "
        @fn softplus(x) { ln(1.0 + exp(x)) }
        pub @fn relu(x: f32) -> f32 { if x > 0.0 { x } else { 0.0 } }
        fn dense_grad(x, w, t) -> ([f32; I, O], f32) {
            let loss = sum[n, o]((y[n, o] - t[n, o]) ** 2) / (B * O) as f32;
            (@loss / @w, loss)
        }
        let g = @loss / @W;
        let dy = @y;
        ",
        expect![[r#"
            (@fn softplus (x) { (call ln (+ 1.0 (call exp x))) })
            (pub @fn relu (x: f32) -> f32 { (if (> x 0.0) { x } else { 0.0 }) })
            (fn dense_grad (x, w, t) -> ([f32; I, O], f32) {
              (let loss (/ (sum [n o] (** (- (index y n o) (index t n o)) 2)) (as (* B O) f32)))
              (tuple (deriv loss w) loss)
            })
            (let g (deriv loss W))
            (let dy (d y))
        "#]],
    );
}

#[test]
fn use_trees() {
    check(
        "
        use std::math::{exp, sqrt};
        use std::ml as ml;
        pub use self::a::*;
        use crate::a::{b::{c, d as e}, f::*, self,};
        use super::g;
        use m;
        ",
        expect![[r#"
            (use std::math::{exp, sqrt})
            (use std::ml as ml)
            (pub use self::a::*)
            (use crate::a::{b::{c, d as e}, f::*, self})
            (use super::g)
            (use m)
        "#]],
    );
}

#[test]
fn keywords_after_path_separators_are_names() {
    check(
        "
        use std::ml::where;
        use std::math::{mod, fmod, constants::pi::pi};
        use std::ml::where as select;
        use crate::m::{r#loop, fn::{match as m}};
        let a = std::math::mod(7, 3);
        let w = std::ml::where(c, x, y) where c;
        let v = m::fn::in + std::math::r#mod(1, 2);
        ",
        expect![[r#"
            (use std::ml::where)
            (use std::math::{mod, fmod, constants::pi::pi})
            (use std::ml::where as select)
            (use crate::m::{loop, fn::{match as m}})
            (let a (call std::math::mod 7 3))
            (let w (call std::ml::where c x y) (where c))
            (let v (+ m::fn::in (call std::math::mod 1 2)))
        "#]],
    );
}

#[test]
fn error_keywords_before_path_separators() {
    check_error(
        "
        use mod;
        use where::f;
        use {mod, std::ml::where};
        use std::_;
        let b = std::math::_;
        let c = where(1);
        ",
        expect![[r#"
            error: expected a path, `{` or `*`, found keyword `mod` @2:12
            error: expected a path, `{` or `*`, found keyword `where` @3:12
            error: expected a path, `{` or `*`, found keyword `mod` @4:13
            error: expected a path, `{` or `*`, found keyword `_` @5:17
            error: expected identifier, found keyword `_` @6:27
            error: expected expression, found keyword `where` @7:16
        "#]],
    );
}

#[test]
fn modules_and_constants() {
    check(
        "
        //! Module docs are accepted and dropped.
        const N: i64 = 10;
        pub const EPS = 1e-6;
        /// Docs on a module are dropped too.
        pub mod m {
            //! Inner docs.
            pub fn f(x) { x }
            const K = 3;
            mod inner { use super::f; }
            let top = 1;
        }
        mod empty {}
        ",
        expect![[r#"
            (const N: i64 10)
            (pub const EPS 1e-6)
            (pub mod m
              (pub fn f (x) { x })
              (const K 3)
              (mod inner
                (use super::f))
              (let top 1))
            (mod empty)
        "#]],
    );
}

#[test]
fn types() {
    check(
        "
        fn f(
            a: [f32; H - K + 1, C * H * W],
            b: [f32; *],
            c: [f32],
            d: (f32, i32),
            e: (f32) -> f32,
            g: [i64; ?, 3],
            h: str,
            i: bool,
            j: [f32; (N + 1) / 2, N - (K - 1)],
            k: jagged[f32],
            l: ((f32, f32), i32) -> [u8; 2],
            m: (f64,),
            n: (),
            o: [[f32; 2]; N],
            p: (i8, i16, u32, u64),
        ) -> ((f32, i32), [u8; 2]);
        ",
        expect![[r#"
            (fn f (a: [f32; ((H - K) + 1), ((C * H) * W)], b: [f32; *], c: [f32], d: (f32, i32), e: (f32) -> f32, g: [i64; ?, 3], h: str, i: bool, j: [f32; ((N + 1) / 2), (N - (K - 1))], k: jagged[f32], l: ((f32, f32), i32) -> [u8; 2], m: (f64,), n: (), o: [[f32; 2]; N], p: (i8, i16, u32, u64)) -> ((f32, i32), [u8; 2]);)
        "#]],
    );
}

// ---------------------------------------------------------------------------
// Tokens and text

/// `parse_tokens` on tokens made by `quote!` (which gives `**` as two
/// `Alone` stars and doc comments as `#[doc = r"..."]`) and `parse_str` on
/// the same text give the same tree.
#[test]
fn tokens_and_text_agree() {
    let tokens = quote! {
        use std::math::{exp, sqrt as root};
        /// Softmax over the last axis.
        pub fn softmax(x: [f32; B, N]) -> [f32; B, N] {
            let m[b] = max[i](x[b, i]);
            let e[b, i] = exp(x[b, i] - m[b]);
            let y[b, i] = e[b, i] / sum[j](e[b, j]);
            y
        }
        @fn softplus(x) { ln(1.0 + exp(x)) }
        mod m { const K: i64 = 3; }
        let fib[0] = 0;
        let fib[n in 2..=N] = fib[n - 1] + fib[n - 2];
        let p = -x ** 2 + 2 ** 3 ** 2 + a as f32 * b + t.0.1;
        let c = [i * j | i in 0..n, j in 0..m, i != j];
        let s = match k { 0 => "zero", 1..=9 => "small", _ => "{k:.2}" };
        let g = @loss / @W;
        let f = |x, y: f64| x * y;
        let z = if a <= b && !c { 1 } else if d { 2 } else { 3 };
        print("x = {x}");
    };
    let text = tokens.to_string();
    let from_tokens = parse_tokens(tokens).map(|program| pretty_program(&program));
    let from_text = parse_str(&text).map(|program| pretty_program(&program));
    match (from_tokens, from_text) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a, b);
            expect![[r#"
                (use std::math::{exp, sqrt as root})
                (pub fn softmax (doc " Softmax over the last axis.") (x: [f32; B, N]) -> [f32; B, N] {
                  (let m [b] (max [i] (index x b i)))
                  (let e [b i] (call exp (- (index x b i) (index m b))))
                  (let y [b i] (/ (index e b i) (sum [j] (index e b j))))
                  y
                })
                (@fn softplus (x) { (call ln (+ 1.0 (call exp x))) })
                (mod m
                  (const K: i64 3))
                (let fib [0] 0)
                (let fib [(in n (..= 2 N))] (+ (index fib (- n 1)) (index fib (- n 2))))
                (let p (+ (+ (+ (- (** x 2)) (** 2 (** 3 2))) (* (as a f32) b)) (field (field t 0) 1)))
                (let c (comp (* i j) (in i (.. 0 n)) (in j (.. 0 m)) (filter (!= i j))))
                (let s (match k
                  (0 => "zero")
                  ((..= 1 9) => "small")
                  (_ => (interp {k:.2}))))
                (let g (deriv loss W))
                (let f (lambda (x, y: f64) (* x y)))
                (let z (if (&& (<= a b) (! c)) { 1 } else (if d { 2 } else { 3 })))
                (call print (interp "x = " {x}));
            "#]]
            .assert_eq(&a);
        }
        (a, b) => panic!("parse results differ or fail:\n{a:?}\n{b:?}"),
    }
}

/// Spans run from the first token of a node to its last.
#[test]
fn spans_cover_first_to_last_token() {
    fn show(expr: &Expr) -> String {
        let (lo_line, lo_col) = expr.span.line_col();
        let hi = expr.span.hi().end();
        format!("{lo_line}:{lo_col}-{}:{}", hi.line, hi.column)
    }
    let src = "let a = x[i + 1] * (b + c);\nlet s = sum[k](v[k]) + t.0.1 + \"s\";";
    let program = match parse_str(src) {
        Ok(program) => program,
        Err(diags) => panic!("{}", render_errors(&diags)),
    };
    let mut out = String::new();
    for item in &program.items {
        let Item::Stmt(Stmt::Let(stmt)) = item else { continue };
        let (line, col) = stmt.span.line_col();
        let end = stmt.span.hi().end();
        out.push_str(&format!("let {line}:{col}-{}:{}\n", end.line, end.column));
        let mut stack = vec![&stmt.value];
        while let Some(expr) = stack.pop() {
            out.push_str(&format!("  {} {}\n", show(expr), pretty_expr(expr)));
            match &expr.kind {
                ExprKind::Binary { lhs, rhs, .. } => {
                    stack.push(rhs);
                    stack.push(lhs);
                }
                ExprKind::Field { base, .. } => stack.push(base),
                _ => {}
            }
        }
    }
    expect![[r#"
        let 1:0-1:27
          1:8-1:26 (* (index x (+ i 1)) (+ b c))
          1:8-1:16 (index x (+ i 1))
          1:19-1:26 (+ b c)
          1:20-1:21 b
          1:24-1:25 c
        let 2:0-2:35
          2:8-2:34 (+ (+ (sum [k] (index v k)) (field (field t 0) 1)) "s")
          2:8-2:28 (+ (sum [k] (index v k)) (field (field t 0) 1))
          2:8-2:20 (sum [k] (index v k))
          2:23-2:28 (field (field t 0) 1)
          2:23-2:28 (field t 0)
          2:23-2:24 t
          2:31-2:34 "s"
    "#]]
    .assert_eq(&out);
}

// ---------------------------------------------------------------------------
// Errors

#[test]
fn error_missing_semicolon() {
    check_error(
        "let x = 1\nlet y = 2;",
        expect![[r#"
            error: expected `;`, found keyword `let` @2:0
        "#]],
    );
}

#[test]
fn error_unknown_type() {
    check_error(
        "fn f(x: float) -> f32 { x }",
        expect![[r#"
            error: unknown type `float` @1:8
              = help: use `f32` or `f64`
        "#]],
    );
}

#[test]
fn error_unknown_type_lists_the_types() {
    check_error(
        "fn f(x: Matrix);",
        expect![[r#"
            error: unknown type `Matrix` @1:8
              = note: the types are `i8`, `i16`, `i32`, `i64`, `u8`, `u32`, `u64`, `f32`, `f64`, `bool`, `str`, tensors `[T; d1, d2]` and `jagged[T]`, tuples `(A, B)` and functions `(A) -> B`
        "#]],
    );
}

#[test]
fn error_at_end_of_input_points_at_the_last_token() {
    check_error(
        "let x = 1;\nlet y = x + 1",
        expect![[r#"
            error: expected `;`, found end of input @2:12
        "#]],
    );
}

#[test]
fn error_chained_comparison() {
    check_error(
        "let b = a < b < c;",
        expect![[r#"
            error: comparison operators cannot be chained @1:14
              = help: split the comparison into two and join them with `&&`
        "#]],
    );
}

#[test]
fn error_expression_in_index_slot() {
    check_error(
        "let x[t + 1] = 0;",
        expect![[r#"
            error: expected an index slot, found `+` @1:8
              = help: an index slot is a variable `i`, a ranged variable `i in 0..N`, an integer or a rest `..name`; write expressions such as `t + 1` in the reads on the right-hand side
        "#]],
    );
}

#[test]
fn error_recovery_reports_one_error_per_item() {
    check_error(
        "
        fn f(x: ) { x }
        let a = ;
        let ok = 1;
        let b = if c { 1 } else { 2 } + ;
        fn g() -> { 1 }
        print(ok)
        ",
        expect![[r#"
            error: expected a type, found `)` @2:16
            error: expected expression, found `;` @3:16
            error: expected expression, found `;` @5:40
            error: expected a type, found `{` @6:18
            error: expected `;` after this expression @7:16
        "#]],
    );
}

#[test]
fn error_in_module_items() {
    check_error(
        "
        mod m {
            fn f() { 1 2 }
            fn ok() {}
            const K = ;
        }
        let fine = 1;
        let bad = ,;
        ",
        expect![[r#"
            error: expected `;`, found `2` @3:23
            error: expected expression, found `;` @5:22
            error: expected expression, found `,` @8:18
        "#]],
    );
}

#[test]
fn error_strings() {
    check_error(
        r#"
        print("x = {x");
        print("}");
        print("{x:>8}");
        print("{}");
        print("{x +}");
        "#,
        expect![[r#"
            error: unclosed `{` in string @2:14
              = help: write `{{` for a literal `{`
            error: unmatched `}` in string @3:14
              = help: write `}}` for a literal `}`
            error: unsupported format `:>8` in string @4:14
              = help: only a precision is supported: `{x:.3}`
            error: empty `{}` in string @5:14
              = help: put an expression inside (`{x}`), or write `{{}}` for literal braces
            error: in the interpolation `{x +}`: expected expression, found end of input @6:14
        "#]],
    );
}

#[test]
fn error_misc() {
    check_error(
        "
        x = 3;
        for i in 0..n { print(i); }
        let y = x as f32 ** 2;
        let z = 3usize;
        pub let w = 1;
        #[inline] use a::b;
        let s = sum[](x);
        let f = t.x;
        let w = 1.5i32;
        let r = (a b);
        let q = @(x);
        fn h(type) {}
        let c = 'c';
        let i = if x { 1 } else 2;
        ",
        expect![[r#"
            error: cannot assign to a binding: bindings are immutable @2:10
              = help: shadow it with a new binding instead: `let name = ...;`
            error: einlang has no `for` loops @3:8
              = help: write the computation with index notation (`let y[i] = ...`), a comprehension or a recurrence
            error: `**` cannot follow a cast @4:25
              = help: add parentheses: `(x as T) ** y`
            error: invalid suffix `usize` for integer literal @5:16
              = help: the suffix must be a numeric type: `i8`, `i16`, `i32`, `i64`, `u8`, `u32`, `u64`, `f32` or `f64`
            error: expected `fn`, `use`, `mod` or `const` after `pub`, found keyword `let` @6:12
            error: attributes are not allowed on `use` items @7:8
            error: `sum` needs at least one index to reduce over @8:19
            error: expected a tuple field index, found `x` @9:18
              = help: einlang has no methods or named fields besides `.length`, `.shape` and `.size`; call a function instead: `f(x)`
            error: invalid suffix `i32` for float literal @10:16
            error: expected `,` or `)`, found `b` @11:19
            error: expected identifier, found `(` @12:17
            error: expected identifier, found keyword `type` @13:13
            error: character literals are not supported @14:16
              = help: use a string: `"c"`
            error: expected `{` or `if` after `else`, found `2` @15:32
        "#]],
    );
}

#[test]
fn error_lexing() {
    check_error(
        "let s = \"unterminated;",
        expect![[r#"
            error: invalid token or unbalanced delimiter @1:8
        "#]],
    );
}

#[test]
fn error_unclosed_group_at_end_names_the_delimiter() {
    check_error(
        "fn f() { let x = 1 }",
        expect![[r#"
            error: expected `;`, found `}` @1:19
        "#]],
    );
}

// ---------------------------------------------------------------------------
// Robustness

/// Hostile nesting fails with a diagnostic instead of overflowing the stack.
#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let deep_parens = format!("let x = {}1{};", "(".repeat(5000), ")".repeat(5000));
    let deep_unary = format!("let x = {}1;", "-".repeat(100_000));
    let deep_not = format!("let x = {}1;", "! ".repeat(10_000));
    let deep_pow = format!("let x = 2{};", " ** 2".repeat(10_000));
    let deep_else = format!("let x = if a {{ 1 }}{} else {{ 2 }};", " else if a { 1 }".repeat(10_000));
    let deep_lambda = format!("let f = {}1;", "|x| ".repeat(10_000));
    let deep_fn_type = format!("fn f(x: {}f32) {{}}", "(f32) -> ".repeat(10_000));
    let deep_use = format!("use {}c;", "a::".repeat(10_000));
    let deep_blocks = format!("fn f() {{ {}1{} }}", "{ ".repeat(5000), " }".repeat(5000));
    for src in
        [deep_parens, deep_unary, deep_not, deep_pow, deep_else, deep_lambda, deep_fn_type, deep_use, deep_blocks]
    {
        let result = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || parse_str(&src).map(|_| ()).map_err(|diags| render_errors(&diags)))
            .map(|handle| handle.join());
        match result {
            Ok(Ok(Err(errors))) => assert!(errors.contains("nests too deeply"), "{errors}"),
            other => panic!("expected a nesting error, got {other:?}"),
        }
    }
}

/// Moderately deep code, far deeper than real programs, parses on a
/// thread with a small stack.
#[test]
fn reasonable_nesting_parses() {
    let parens = format!("let x = {}1{};", "(".repeat(40), ")".repeat(40));
    let ifs = format!("fn f() {{ {}1{} }}", "if a { ".repeat(25), " } else { 0 }".repeat(25));
    for src in [parens, ifs] {
        let result = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || parse_str(&src).map(|_| ()).map_err(|diags| render_errors(&diags)))
            .map(|handle| handle.join());
        assert!(matches!(result, Ok(Ok(Ok(())))), "{result:?}");
    }
}

/// The parser never panics: malformed fragments, and every prefix and
/// every one-token deletion of a program that uses most of the grammar.
#[test]
fn malformed_input_never_panics() {
    let fragments = [
        "",
        ";",
        ";;",
        "let",
        "let x",
        "let x =",
        "let x = ;",
        "let [",
        "let x[",
        "let x[]",
        "let x[] = 1;",
        "let x[i in] = 1;",
        "let x[i in 0..] = 1;",
        "let x[..] = 1;",
        "let x[-1] = 1;",
        "fn",
        "fn f",
        "fn f(",
        "fn f()",
        "fn f() ->",
        "fn f() -> ;",
        "fn f(x:) {}",
        "@",
        "@fn",
        "@ 1",
        "@x /",
        "@x / @",
        "use",
        "use ;",
        "use a::",
        "use a::{",
        "use a as;",
        "use {a, b};",
        "mod",
        "mod m",
        "mod m {",
        "const",
        "const X",
        "const X =",
        "#",
        "#[",
        "#[]",
        "#[x = 1] fn f() {}",
        "#[doc] fn f() {}",
        "#[doc = 1] fn f() {}",
        "#!",
        "#![x]",
        "#![doc = \"d\"]",
        "pub",
        "pub pub fn f() {}",
        "sum",
        "sum[",
        "sum[i]",
        "sum[i](",
        "sum[](x)",
        "sum[i](x where)",
        "sum[i](x where i = )",
        "max[i](x) where",
        "if",
        "if x",
        "if x {",
        "if x {} else",
        "if x {} else if",
        "match",
        "match x",
        "match x {",
        "match x { 1 }",
        "match x { 1 => }",
        "match x { 1.. => 2 }",
        "match x { - => 2 }",
        "match x { -\"s\" => 1 }",
        "|",
        "|x",
        "|x|",
        "||",
        "|x y| 1",
        "[",
        "[1 |",
        "[1 | ]",
        "[1 | x in]",
        "jagged[",
        "t.",
        "t.0.",
        "t.1e5",
        "t.0x1",
        "t.999999999999",
        "x as",
        "x as [",
        "x as [f32;",
        "x as [f32; *",
        "x as [f32; 1 +]",
        "x as (f32",
        "x as (f32) ->",
        "x ** ",
        "**",
        "- -",
        "!",
        "a < b < c",
        "a == b == c",
        "1e999999",
        "1.5e",
        "99999999999999999999999999999999999999999",
        "\"{\"",
        "\"}\"",
        "\"{{{\"",
        "\"{x:}\"",
        "\"{x:.}\"",
        "\"{x:.99999999999}\"",
        "\"{:}\"",
        "\"{\\\"}\\\"}\"",
        "\"{(((}\"",
        "\"{'a}\"",
        "b\"bytes\"",
        "'a'",
        "'lifetime",
        "1..2",
        "..",
        "..=",
        "a..=",
        "$",
        "?",
        "x?",
        "{",
        "}",
        "(",
        ")",
        "[]",
        "()",
        "{}",
        "let x = { let y = 1 };",
        "let x = { fn };",
        "let x = x[..];",
        "let x = x[..=a];",
    ];
    // Each fragment as a statement and as a value: the outcome, and for an
    // error its first message and position (a snapshot, so that a change
    // in what the parser says about broken input shows in review).
    let mut table = String::new();
    for src in fragments {
        let bare = outcome(src);
        let value = outcome(&format!("let v = {src};"));
        outcome(&format!("fn f() {{ {src} }}"));
        table.push_str(&format!("{src:?}\n    {bare}\n    let v = ..: {value}\n"));
    }
    expect_file!["malformed_fragments.txt"].assert_eq(&table);

    let program = r#"
        use std::math::{exp, sqrt as s, *};
        /// Docs.
        #[device(cuda)]
        pub fn f(x: [f32; N - 1, *], y: (f32, i32) -> jagged[f32]) -> [f32; ?] {
            let m[i in 0..=N, ..rest, 0] = sum[k in 1..K](x[i, k] ** -2 as f64 where k != i) where z = t.0.1, i < 3;
            let c = [a | a in 0..n, a > 0] + jagged[[1], [2]] + match q { -1..=1 => 0, (a, _) if a => 1, _ => { 2 } };
            let g = @l / @w + @y + |p, q: f32| p * q + (1,) + "v = {m:.3} {{}}";
            if a { 1 } else if b { 2 } else { 3 }
        }
        @fn r(x) { max(x, 0.0) }
        mod m { const K: i64 = 1; }
    "#;
    // Every prefix: no panic, and its errors have messages and positions
    // inside the text (`outcome`).
    for (end, _) in program.char_indices() {
        outcome(&program[..end]);
    }
    let words: Vec<&str> = program.split_whitespace().collect();
    for skip in 0..words.len() {
        let src: Vec<&str> = words.iter().enumerate().filter(|(i, _)| *i != skip).map(|(_, w)| *w).collect();
        outcome(&src.join(" "));
    }
}

/// `"ok"` when `src` parses; otherwise its first error as `line:col:
/// message`, after checking that every error has a message and lies
/// within the source (line and column of a line that exists).
fn outcome(src: &str) -> String {
    let diags = match parse_str(src) {
        Ok(_) => return "ok".to_string(),
        Err(diags) => diags,
    };
    assert!(!diags.is_empty(), "{src:?}: an error without diagnostics");
    let lines: Vec<&str> = src.lines().collect();
    for d in &diags {
        assert!(!d.message.trim().is_empty(), "{src:?}: an error without a message");
        let (line, col) = d.span.line_col();
        if line == 0 {
            // A detached span: the end of the input.
            continue;
        }
        let text = lines.get(line - 1).unwrap_or_else(|| panic!("{src:?}: error at line {line}: {}", d.message));
        // Columns count from 0; the end of a line is a position too.
        assert!(col <= text.chars().count(), "{src:?}: error at {line}:{col} past the line: {}", d.message);
    }
    let (line, col) = diags[0].span.line_col();
    format!("{line}:{}: {}", col + 1, diags[0].message)
}
