//! `match`: literal, wildcard, binding, tuple and range patterns,
//! alternatives `p | q`, `name @ p`, string literals, guards, and use inside an indexed
//! definition. Expected values are by hand.

use einlang::einlang;
use einlang::ndarray::array;

einlang! {
    pub fn classify(n: i64) -> i32 {
        match n {
            0 => 0,
            1..=9 => 1,
            k if k < 0 => -1,
            10..100 => 2,
            _ => 3,
        }
    }

    pub fn flag(b: bool) -> f32 {
        match b { true => 1.5, false => -1.5 }
    }

    pub fn quadrant(x: f64, y: f64) -> i32 {
        match (x >= 0.0, y >= 0.0) {
            (true, true) => 1,
            (false, true) => 2,
            (false, false) => 3,
            (_, _) => 4,
        }
    }

    pub fn swap_sum(p: (i32, i32)) -> i32 {
        match p { (a, b) => b * 10 + a }
    }

    /// Buckets every element of a vector.
    pub fn buckets(v: [i64; N]) -> [i32; N] {
        let b[i] = match v[i] { 0 => 0, 1..=9 => 1, _ => 2 };
        b
    }
}

#[test]
fn integer_patterns_in_order() {
    let got: Vec<i32> = [0, 5, 9, -7, 10, 99, 100, 1000].iter().map(|n| classify(*n).unwrap()).collect();
    assert_eq!(got, vec![0, 1, 1, -1, 2, 2, 3, 3]);
}

#[test]
fn bool_and_tuple_patterns() {
    assert_eq!(flag(true).unwrap(), 1.5);
    assert_eq!(flag(false).unwrap(), -1.5);
    assert_eq!(quadrant(1.0, 2.0).unwrap(), 1);
    assert_eq!(quadrant(-1.0, 2.0).unwrap(), 2);
    assert_eq!(quadrant(-1.0, -2.0).unwrap(), 3);
    assert_eq!(quadrant(1.0, -2.0).unwrap(), 4);
    assert_eq!(swap_sum((3, 4)).unwrap(), 43);
}

#[test]
fn match_inside_an_indexed_definition() {
    assert_eq!(buckets(&array![0i64, 3, 12, 9, 0]).unwrap(), array![0, 1, 2, 1, 0]);
}

mod tuple_branches {
    einlang::einlang! {
        /// Tuples from two branches whose vectors have lengths known only
        /// at run time: each element's extent is the running branch's.
        pub fn by_if(v: [f32; N], mode: i64) -> f32 {
            let parts = if mode == 0 { ([x | x in v, x > 0.0], 1) } else { ([x * 2.0 | x in v, x > 1.0, x < 5.0], 2) };
            let a = parts.0;
            sum[i](a[i]) + parts.1 as f32
        }
        pub fn by_match(v: [f32; N], mode: i64) -> f32 {
            let parts = match mode { 0 => (1, [x | x in v, x > 0.0]), _ => (2, [x * 2.0 | x in v]) };
            let a = parts.1;
            sum[i](a[i]) * parts.0 as f32
        }
        /// A matrix or its transpose: `[M, N]` or `[N, M]`, which cannot be
        /// compared when compiling, so the result's extents are the running
        /// branch's; each row sum is weighted by its row number.
        pub fn maybe_transposed(m: [f32; M, N], flip: bool) -> [f32; ?] {
            let t[j, i] = m[i, j];
            let x = if flip { t } else { m };
            let rows[r] = sum[c](x[r, c]) * r as f32;
            rows
        }
    }
}

#[test]
fn branches_of_shapes_unknown_until_run_time() {
    let m = einlang::ndarray::array![[1.0f32, 2.0, 3.0], [4.0, 5.0, 6.0]];
    // Rows of m: 6, 15; rows of its transpose: 5, 7, 9.
    assert_eq!(tuple_branches::maybe_transposed(&m, false).unwrap(), einlang::ndarray::array![0.0f32, 15.0]);
    assert_eq!(tuple_branches::maybe_transposed(&m, true).unwrap(), einlang::ndarray::array![0.0f32, 7.0, 18.0]);
}

#[test]
fn tuples_from_branches_take_the_running_branch_extents() {
    let v = einlang::ndarray::array![1.0f32, -2.0, 3.0, 6.0];
    let positive: f32 = v.iter().filter(|x| **x > 0.0).sum();
    let between: f32 = v.iter().filter(|x| **x > 1.0 && **x < 5.0).map(|x| x * 2.0).sum();
    assert_eq!(tuple_branches::by_if(&v, 0).unwrap(), positive + 1.0);
    assert_eq!(tuple_branches::by_if(&v, 1).unwrap(), between + 2.0);
    assert_eq!(tuple_branches::by_match(&v, 0).unwrap(), positive);
    assert_eq!(tuple_branches::by_match(&v, 3).unwrap(), 2.0 * v.iter().map(|x| x * 2.0).sum::<f32>());
}

mod alternatives {
    einlang::einlang! {
        pub fn size(n: i32) -> str {
            match n { 0 => "zero", 1 | 2 | 3 => "few", 4..=9 | 10 => "some", _ => "many" }
        }
        pub fn either(a: bool, b: bool) -> i32 {
            match (a, b) { (true, true) => 3, (true, _) | (_, true) => 1, _ => 0 }
        }
        /// `true | false` covers `bool`: no wildcard needed.
        pub fn any_flag(b: bool) -> i32 { match b { true | false => 7 } }
        pub fn activation(name: str, x: f32) -> f32 {
            match name { "relu" => max(x, 0.0), "neg" | "minus" => -x, _ => x }
        }
        /// `name @ p` binds what `p` matched, alternatives included.
        pub fn bound(n: i64) -> i64 {
            match n { small @ 0..=9 => small * 10, big @ (100 | 200) => big + 1, other => -other }
        }
        pub fn nested(p: (i64, bool)) -> i64 {
            match p { whole @ (k @ 1..=5, true) => k + (if whole.1 { 100 } else { 0 }), _ => 0 }
        }
        pub fn residues(v: [i64; N]) -> [i32; N] {
            let r[i] = match v[i] % 3 { 0 => 1, 1 | -2 => 2, _ => 3 };
            r
        }
    }
}

#[test]
fn alternatives_and_string_patterns() {
    let sizes: Vec<String> = [0, 2, 5, 10, 11].iter().map(|&n| alternatives::size(n).unwrap()).collect();
    assert_eq!(sizes, ["zero", "few", "some", "some", "many"]);
    assert_eq!(alternatives::either(true, true).unwrap(), 3);
    assert_eq!(alternatives::either(true, false).unwrap(), 1);
    assert_eq!(alternatives::either(false, true).unwrap(), 1);
    assert_eq!(alternatives::either(false, false).unwrap(), 0);
    assert_eq!(alternatives::any_flag(false).unwrap(), 7);
    assert_eq!(alternatives::activation("relu", -2.0).unwrap(), 0.0);
    assert_eq!(alternatives::activation("minus", 2.0).unwrap(), -2.0);
    assert_eq!(alternatives::activation("neg", 1.0).unwrap(), -1.0);
    assert_eq!(alternatives::activation("id", 5.0).unwrap(), 5.0);
    assert_eq!(alternatives::bound(3).unwrap(), 30);
    assert_eq!(alternatives::bound(200).unwrap(), 201);
    assert_eq!(alternatives::bound(100).unwrap(), 101);
    assert_eq!(alternatives::bound(50).unwrap(), -50);
    assert_eq!(alternatives::nested((3, true)).unwrap(), 103);
    assert_eq!(alternatives::nested((3, false)).unwrap(), 0);
    assert_eq!(alternatives::nested((6, true)).unwrap(), 0);
    // Rust's `%`: -1 % 3 is -1 (the wildcard), -2 % 3 is -2.
    assert_eq!(alternatives::residues(&array![0, 1, 2, -1, -2, 3]).unwrap(), array![1, 2, 3, 3, 2, 1]);
}
