//! Generic functions: untyped parameters are specialized per call by element
//! type and rank. Each result is compared with a hand-computed value or a
//! naive loop.

use approx::assert_abs_diff_eq;
use einlang::einlang;
use einlang::ndarray::{array, Array1, Array2, Array3};

einlang! {
    use std::math::sqrt;

    fn twice(x) { x + x }
    fn square(x) { x * x }
    fn norm2(x, y) { sqrt(square(x) + square(y)) }
    /// Mixed: a typed scale and an untyped tensor of any rank.
    fn scale(x, s: f64) { x * s }
    fn total(v) { sum[i](v[i]) }

    pub fn twice_scalars(a: i32, b: f32, c: f64) -> (i32, f32, f64) {
        (twice(a), twice(b), twice(c))
    }

    pub fn twice_ranks(v: [f32; N], m: [f32; R, C], t: [i32; A, B, D]) -> ([f32; N], [f32; R, C], [i32; A, B, D]) {
        (twice(v), twice(m), twice(t))
    }

    pub fn hypot32(x: f32, y: f32) -> f32 { norm2(x, y) }
    pub fn hypot64(x: f64, y: f64) -> f64 { norm2(x, y) }

    pub fn scaled(m: [f64; R, C], s: f64) -> [f64; R, C] { scale(m, s) }

    /// Literal arithmetic as arguments: each argument is typed as a whole
    /// (`12.0 / 2.0` is a float, `7 + 3` an integer).
    fn mixed(a, b, c) { ((a * b) as f64) + c / 2.0 - ((a % b) as f64) }
    pub fn literal_trees() -> f64 { mixed(7 + 3, 4 - 1, 12.0 / 2.0) + mixed(2 ** 3, 5 % 3, -(3.0 * 4.0)) }

    /// A generic function called inside an indexed body and on rows.
    pub fn row_totals(m: [i64; R, C]) -> [i64; R] {
        let t[r] = total(m[r]);
        t
    }
}

#[test]
fn one_generic_function_at_three_scalar_types() {
    let (a, b, c) = twice_scalars(21, 1.25, -0.5).unwrap();
    assert_eq!(a, 42);
    assert_eq!(b, 2.5);
    assert_eq!(c, -1.0);
}

#[test]
fn one_generic_function_at_ranks_one_to_three() {
    let v = array![1.0f32, -2.0, 3.5];
    let m = Array2::from_shape_fn((2, 3), |(i, j)| (i * 3 + j) as f32 - 1.5);
    let t = Array3::from_shape_fn((2, 2, 3), |(i, j, k)| (i * 6 + j * 3 + k) as i32 - 4);
    let (v2, m2, t2) = twice_ranks(&v, &m, &t).unwrap();
    assert_eq!(v2, v.mapv(|x| 2.0 * x));
    assert_eq!(m2, m.mapv(|x| 2.0 * x));
    assert_eq!(t2, t.mapv(|x| 2 * x));
}

#[test]
fn generic_calls_generic_at_two_float_types() {
    assert_abs_diff_eq!(hypot32(3.0, 4.0).unwrap(), 5.0f32, epsilon = 1e-6);
    assert_abs_diff_eq!(hypot64(5.0, 12.0).unwrap(), 13.0f64, epsilon = 1e-12);
}

#[test]
fn typed_and_untyped_parameters_mix() {
    let m = Array2::from_shape_fn((3, 2), |(i, j)| (i as f64) - (j as f64) * 0.5);
    let got = scaled(&m, -2.0).unwrap();
    assert_eq!(got, m.mapv(|x| -2.0 * x));
}

#[test]
fn literal_arithmetic_arguments_are_typed_as_a_whole() {
    // (10 * 3) + 6 / 2 - 10 % 3, then (8 * 2) + (-12) / 2 - 8 % 2.
    assert_eq!(literal_trees().unwrap(), (30.0 + 3.0 - 1.0) + (16.0 - 6.0 - 0.0));
}

#[test]
fn generic_function_on_rows_inside_an_indexed_body() {
    let m = Array2::from_shape_fn((4, 3), |(i, j)| (i * 10 + j) as i64);
    let got = row_totals(&m).unwrap();
    let want: Array1<i64> = (0..4).map(|i| (0..3).map(|j| (i * 10 + j) as i64).sum()).collect();
    assert_eq!(got, want);
}

/// Two macro calls in one module that instantiate the same generic
/// function at the same types: each call's private instance has its own name.
mod two_calls {
    einlang::einlang! {
        use std::ml::relu;
        pub fn first(x: [f32; N]) -> [f32; N] { relu(x) }
    }

    einlang::einlang! {
        use std::ml::relu;
        use std::math::*;
        use std::math::exp;
        pub fn second(x: [f32; N]) -> [f32; N] { relu(exp(x) - 2.0) }
    }

    #[test]
    fn both_calls_compile_and_run() {
        let x = einlang::ndarray::array![-1.0f32, 0.5, 2.0];
        assert_eq!(first(&x).unwrap(), einlang::ndarray::array![0.0, 0.5, 2.0]);
        let want = x.mapv(|v| (v.exp() - 2.0).max(0.0));
        assert_eq!(second(&x).unwrap(), want);
    }
}

mod recursive {
    einlang::einlang! {
        /// Recursive generic functions without a declared result: the base
        /// case gives the type, and the recursive calls take it.
        fn fact(n) { if n <= 1 { 1 } else { n * fact(n - 1) } }
        fn fib(n) { if n < 2 { n } else { fib(n - 1) + fib(n - 2) } }
        fn sum_tail(values, index, total) {
            if index >= len(values) { total } else { sum_tail(values, index + 1, total + values[index]) }
        }

        pub fn run(n: i64, v: [f64; N]) -> (i64, i32, f64) {
            (fact(n), fib(20), sum_tail(v, 0, 0.0))
        }
    }
}

#[test]
fn recursion_without_declared_results() {
    let v = einlang::ndarray::array![0.5f64, 1.5, -2.0, 4.0];
    let (f, b, s) = recursive::run(15, &v).unwrap();
    assert_eq!(f, (1..=15i64).product::<i64>());
    let mut fib = (0i32, 1i32);
    for _ in 0..20 {
        fib = (fib.1, fib.0 + fib.1);
    }
    assert_eq!(b, fib.0);
    assert_eq!(s, v.sum());
}

mod rank_dispatch {
    einlang::einlang! {
        fn row_sums(m) { let s[i] = sum[j](m[i, j]); s }
        fn plane_sums(t) { let s[i] = sum[j, k](t[i, j, k]); s }
        /// The sum of each leading slice: a vector is its own sums; each
        /// instance keeps only the branch its rank selects (`row_sums` of a
        /// vector would not type).
        fn slice_sums(x) {
            let rank = len(shape(x));
            if rank == 1 {
                x
            } else if len(x.shape) == 2 {
                row_sums(x)
            } else if rank == 3 && !(rank > 3) {
                plane_sums(x)
            } else {
                assert(false, "slice_sums takes ranks 1 to 3");
                let s[i] = sum[..r](x[i, ..r]);
                s
            }
        }

        pub fn sums(v: [f32; A], m: [f64; B, C], t: [i32; D, E, F]) -> ([f32; A], [f64; B], [i32; D]) {
            (slice_sums(v), slice_sums(m), slice_sums(t))
        }
        pub fn sums4(q: [f32; A, B, C, D]) -> [f32; A] { slice_sums(q) }
    }
}

#[test]
fn rank_tests_select_a_branch_per_instance() {
    use einlang::ndarray::{Array, Array1, Array2, Array3, Array4, Axis};
    let v = Array1::from(vec![1.5f32, -2.0, 4.0]);
    let m = Array2::from_shape_fn((2, 3), |(i, j)| (i * 3 + j) as f64 * 0.5);
    let t = Array3::from_shape_fn((2, 2, 3), |(i, j, k)| (i * 6 + j * 3 + k) as i32 - 4);
    let (sv, sm, st) = rank_dispatch::sums(&v, &m, &t).unwrap();
    assert_eq!(sv, v);
    let m_rows: Vec<f64> = m.rows().into_iter().map(|r| r.iter().sum()).collect();
    assert_eq!(sm.to_vec(), m_rows);
    let t_planes: Vec<i32> = t.axis_iter(Axis(0)).map(|p| p.iter().sum()).collect();
    assert_eq!(st.to_vec(), t_planes);
    // Rank 4 takes the last branch, a run-time assertion.
    let q: Array4<f32> = Array::zeros((1, 1, 1, 1));
    assert!(matches!(rank_dispatch::sums4(&q), Err(einlang::Error::Assert { .. })));
}

mod tuple_params {
    use einlang::einlang;
    einlang! {
        /// A generic function whose parameter is a tuple of tensors: the
        /// extents inside it are bound at entry like a tensor parameter's.
        fn weighted(pair) {
            let x = pair.0;
            let w = pair.1;
            let y[i] = sum[j](x[i, j] * w[j]);
            y
        }
        pub fn weighted32(x: [f32; M, N], w: [f32; N]) -> [f32; M] { let p = (x, w); weighted(p) }
        pub fn weighted64(x: [f64; M, N], w: [f64; N]) -> [f64; M] { weighted((x, w)) }

        /// A declared tuple parameter: `N` is bound by `t.0` and checked
        /// against `t.1`.
        pub fn dot(t: ([i64; N], [i64; N])) -> i64 { let a = t.0; let b = t.1; sum[i](a[i] * b[i]) }
        pub fn dot_of(a: [i64; P], b: [i64; Q]) -> i64 { dot((a, b)) }
    }
}

#[test]
fn tuples_of_tensors_as_parameters() {
    let x = array![[1.0f32, 2.0], [3.0, 4.0], [5.0, 6.0]];
    let w = array![10.0f32, 1.0];
    assert_eq!(tuple_params::weighted32(&x, &w).unwrap(), array![12.0f32, 34.0, 56.0]);
    let x64 = x.mapv(f64::from);
    let w64 = w.mapv(f64::from);
    assert_eq!(tuple_params::weighted64(&x64, &w64).unwrap(), array![12.0, 34.0, 56.0]);
    // `[f32; 3, 2]` against a weight vector of 3: the instance's extents
    // disagree, an `Err`, not a panic.
    assert!(tuple_params::weighted32(&x, &array![1.0f32, 2.0, 3.0]).is_err());
    assert_eq!(tuple_params::dot((array![1, 2, 3].view(), array![4, 5, 6].view())).unwrap(), 32);
    assert_eq!(tuple_params::dot_of(&array![1, 2], &array![3, 4]).unwrap(), 11);
    assert!(matches!(tuple_params::dot_of(&array![1, 2], &array![3, 4, 5]), Err(einlang::Error::Shape { .. })));
}
