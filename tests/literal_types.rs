//! Unsuffixed literals bound by `let` take the type a later use needs, as
//! Rust infers it (`let v = [1, 2]; v[0] + k` with `k: i64` makes `v` an
//! `[i64; 2]`); with no such use they stay `i32` / `f32`.

use einlang::einlang;
use einlang::ndarray::array;

einlang! {
    /// An index variable (`i64`) added to an element of a literal vector.
    pub fn offsets(n: i64) -> [i64; ?] {
        let base = [10, 20, 30];
        [base[i % 3] + i | i in 0..n]
    }

    /// Through a reduction: the sum of a literal vector divided by its
    /// length (`i64`).
    pub fn mean_of() -> i64 {
        let data = [3, 5, 7, 9];
        let total = sum[i](data[i]);
        total / len(data)
    }

    /// A float literal vector used with an `f64`, through a definition.
    pub fn scaled(x: f64) -> [f64; 3] {
        let w = [0.5, 1.5, 2.5];
        let y[i] = w[i] * x;
        y
    }

    /// Membership of an `i64` in a literal vector, and a generator over one
    /// next to a range in a row of a comprehension.
    pub fn outside(x: i64) -> bool {
        let excluded = [3, 7, 9];
        !(x in excluded)
    }

    pub fn pairs() -> [i64; 6, 2] {
        let letters = [10, 20, 30];
        [(n, v) | n in 1..3, v in letters]
    }

    /// A literal scalar passed to a typed `i64` parameter.
    pub fn typed_arg(k: i64) -> i64 {
        let n = 4;
        twice(n) + k
    }

    fn twice(n: i64) -> i64 { n * 2 }

    /// A value computed from a typed operand is typed by it: `g` is `f64`
    /// because of `x`, so `alpha` becomes `f64` too.
    pub fn step(x: f64) -> f64 {
        let a = 1.0;
        let alpha = 0.5;
        let g = 2.0 * (a - x);
        x - alpha * g
    }

    /// A literal argument of a generic function takes the type its use in
    /// the body needs: `start` is added to an index, so it is an `i64`.
    fn sequence(start, n) { [start + i | i in 0..n] }

    pub fn from_ten() -> [i64; ?] { sequence(10, 4) }

    /// The declared result type decides: for a literal `let` returned, a
    /// recurrence whose clauses are literals or read only itself, and the
    /// components of a tuple, and an annotated `let` of a literal binding.
    pub fn returned() -> ([i64; 3], f64) {
        let v = [1, 2, 3];
        let w = 0.25;
        (v, w)
    }

    /// Literals written in the result tuple itself, nested too.
    pub fn tuple_of_literals(x: f64) -> (f64, (i64, [u8; 2]), f64) {
        (1.5, (2, [3, 250]), x)
    }

    pub fn fibonacci(n: i64) -> [i64; n] {
        let fib[0] = 0;
        let fib[1] = 1;
        let fib[k in 2..n] = fib[k - 1] + fib[k - 2];
        fib
    }

    pub fn annotated() -> u8 {
        let v = [200, 55];
        let w: [u8; 2] = v;
        w[0] + w[1]
    }

    /// Two literal bindings whose defaults differ (a `let` is `f32`, a
    /// recurrence of literals `f64`): the narrower takes the wider type.
    pub fn mixed_defaults(n: i64) -> bool {
        let a = 1.0;
        let x[0] = 0.5;
        let x[t in 1..n] = x[t - 1] * 0.5;
        a - x[n - 1] > 0.9
    }

    /// No use needs another type: the default `i32` stays.
    pub fn default_i32() -> i32 {
        let v = [1, 2];
        v[0] + v[1]
    }
}

#[test]
fn integer_literal_lets_take_the_type_of_their_use() {
    let want: Vec<i64> = (0..7).map(|i| [10, 20, 30][(i % 3) as usize] + i).collect();
    assert_eq!(offsets(7).unwrap().to_vec(), want);
    assert_eq!(mean_of().unwrap(), (3 + 5 + 7 + 9) / 4);
    assert_eq!(typed_arg(1).unwrap(), 9);
    assert_eq!(default_i32().unwrap(), 3i32);
    assert_eq!(from_ten().unwrap(), array![10i64, 11, 12, 13]);
    assert_eq!(returned().unwrap(), (array![1i64, 2, 3], 0.25f64));
    assert_eq!(tuple_of_literals(-1.0).unwrap(), (1.5f64, (2i64, array![3u8, 250]), -1.0f64));
    let mut want = vec![0i64, 1];
    for k in 2..50 {
        want.push(want[k - 1] + want[k - 2]);
    }
    assert_eq!(fibonacci(50).unwrap().to_vec(), want);
    assert_eq!(annotated().unwrap(), 255u8);
    assert!(mixed_defaults(4).unwrap());
    assert!(!mixed_defaults(2).unwrap());
}

#[test]
fn float_literal_lets_take_the_type_of_their_use() {
    assert_eq!(scaled(2.0).unwrap(), array![1.0f64, 3.0, 5.0]);
    let x = 0.25f64;
    assert_eq!(step(x).unwrap(), x - 0.5 * (2.0 * (1.0 - x)));
}

#[test]
fn membership_and_rows_over_literal_vectors() {
    assert!(outside(4).unwrap());
    assert!(!outside(7).unwrap());
    assert_eq!(pairs().unwrap(), array![[1i64, 10], [1, 20], [1, 30], [2, 10], [2, 20], [2, 30]]);
}

mod integer_literals_in_float_contexts {
    use einlang::einlang;
    use einlang::ndarray::array;

    einlang! {
        /// An operand: `x * 2` with `x: f32` is `x * 2.0`.
        pub fn twice(x: f32) -> f32 { x * 2 + 1 }

        /// An intrinsic's other argument, in a definition: `max(x, 0)`.
        pub fn relu(x: [f64; N]) -> [f64; N] {
            let y[i] = max(x[i], 0);
            y
        }

        /// An annotated `let`, a typed parameter and a declared result.
        pub fn annotated(x: f32) -> f32 {
            let w: f32 = 3;
            scale(x, 2) * w
        }

        fn scale(x: f32, s: f32) -> f32 { x * s }

        /// Elements of one array literal; a declared result type.
        pub fn mixed() -> [f32; 3] { [1, 2.5, -4] }

        /// Conditions, branches and a reduction divided by an integer.
        pub fn clipped_mean(x: [f32; N]) -> f32 {
            let c[i] = if x[i] > 1 { 1 } else { x[i] };
            sum[i](c[i]) / 4
        }

        /// Inside a generic function the literal follows the instance's
        /// type: `f64` for one call, `i64` for the other.
        fn halve_plus_one(v) { v / 2 + 1 }
        pub fn both(x: f64, n: i64) -> (f64, i64) { (halve_plus_one(x), halve_plus_one(n)) }

        /// A literal argument of a generic function: the instance's body
        /// decides (unification): a float where it meets a float, an
        /// integer where it is a count or meets an integer.
        fn mul(a, b) { a * b }
        fn repeat_sum(x, n) { sum[i in 0..n](x) }
        pub fn generic_args(x: f32, k: i32) -> (f32, i32, f32) {
            (mul(x, 3), mul(k, 3), repeat_sum(x, 4))
        }

        /// A standard-library generic with an integer literal slope.
        use std::ml::leaky_relu;
        pub fn leaky(x: [f64; N]) -> [f64; N] {
            let y[i] = leaky_relu(x[i], 2);
            y
        }
    }

    #[test]
    fn take_the_float_type() {
        assert_eq!(twice(1.25).unwrap(), 3.5f32);
        assert_eq!(relu(&array![-1.5f64, 0.0, 2.25]).unwrap(), array![0.0f64, 0.0, 2.25]);
        assert_eq!(annotated(0.5).unwrap(), 0.5f32 * 2.0 * 3.0);
        assert_eq!(mixed().unwrap(), array![1.0f32, 2.5, -4.0]);
        // min(x, 1) summed: 0.5 + 1 + 1 - 2 = 0.5, over 4.
        assert_eq!(clipped_mean(&array![0.5f32, 3.0, 1.0, -2.0]).unwrap(), 0.125f32);
        // 3.0 / 2 + 1 = 2.5; 7 / 2 + 1 = 4 (integer division truncates).
        assert_eq!(both(3.0, 7).unwrap(), (2.5f64, 4i64));
        assert_eq!(generic_args(1.5, 5).unwrap(), (4.5f32, 15i32, 6.0f32));
        // max(x, 0) + 2 * min(x, 0): -3 -> -6, 0.5 -> 0.5.
        assert_eq!(leaky(&array![-3.0f64, 0.5]).unwrap(), array![-6.0f64, 0.5]);
    }
}
