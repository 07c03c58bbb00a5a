//! Builtins (`print`, `assert`, `len`, `shape`, and `.length`/`.shape`), strings and interpolation,
//! tuple destructuring, `const` items, and top-level statements as `main`.

use einlang::einlang;
use einlang::ndarray::{array, Array2};

einlang! {
    const SCALE: f64 = 0.5;
    const LIMIT = 3;

    pub fn describe(x: f32, n: i32) -> str {
        "x = {x:.2}, n = {n}"
    }

    pub fn show_matrix(m: [i32; R, C]) -> str {
        "m = {m}"
    }

    pub fn checked_sqrt(x: f64) -> f64 {
        assert(x >= 0.0, "sqrt of a negative number");
        x * SCALE
    }

    pub fn sizes(m: [f32; R, C]) -> (i64, i64, i64) {
        let s = shape(m);
        (len(m), s[1], shape(m)[0] * shape(m)[1])
    }

    fn min_max(v: [i64; N]) -> (i64, i64) {
        (min[i](v[i]), max[i](v[i]))
    }

    pub fn spread(v: [i64; N]) -> i64 {
        let (lo, hi) = min_max(v);
        let (_, (a, b)) = (0, (hi, lo));
        a - b + LIMIT as i64 - 3
    }

    /// `.length` and `.shape`, as the seed writes `len` and `shape`.
    pub fn sizes_as_members(m: [f32; R, C]) -> (i64, i64, i64) {
        (m.length, m.shape[1], m[0].length)
    }

    /// `.size`: the number of elements, of any rank (`std::array::size`).
    pub fn element_counts(m: [f32; R, C], t: [i32; A, B, D], v: [f64; *]) -> (i64, i64, i64, i64) {
        (m.size, t.size, m[0].size, v.size)
    }

    /// A string's length is its number of characters (`len(s)`, `s.length`).
    fn longer_than(s, n: i64) -> bool { len(s) > n }

    pub fn text_lengths(s: str) -> (i64, i64, i64, bool) {
        (len(s), s.length, len("{s}{s}"), longer_than(s, 3))
    }

    /// `assert` of a tensor of conditions holds when all of them do.
    pub fn all_positive(v: [f32; N]) -> f32 {
        assert(v > 0.0, "every element must be positive");
        sum[i](v[i])
    }

    /// Array literals stack tensors of known size.
    pub fn stack(x: [f32; 3], y: [f32; 3]) -> [f32; 2, 2, 3] {
        let m = [x, y];
        [m, [[1, 2, 3], [4, 5, 6]] as [f32]]
    }

    /// Range bounds computed at run time: a local, and a value that is not
    /// a dimension. Reads they cannot prove in bounds are checked.
    pub fn prefix_sums(v: [f64; N], k: i64) -> [f64; ?] {
        let n = if k < len(v) { k } else { len(v) };
        let y[i in 0..n] = sum[j in 0..i + 1](v[j]);
        y
    }

    pub fn first_k(v: [f64; N], k: i32) -> f64 {
        sum[i in 0..k](v[i])
    }

    /// Membership, as the seed writes it (`std::array::contains`).
    pub fn membership(v: [i32; N], x: i32) -> (bool, bool, bool) {
        (x in v, !(x in v) || x == 0, x + 1 in [1, 2, 3] && true)
    }

    /// Row membership: `r in m` finds a row of `m` equal to `r`.
    pub fn row_member(m: [i32; R, C], r: [i32; C]) -> bool {
        r in m
    }

    pub fn pair_member(m: [i32; R, 2]) -> (bool, bool) {
        ([3, 4] in m, [4, 3] in m)
    }

    /// Range membership: `x in a..b` is `a <= x < b` (`..=` includes `b`).
    pub fn in_ranges(x: i32) -> (bool, bool, bool) {
        (x in 0..3, x in 1..=3 || x == 7, false || x * 2 in -4..0)
    }

    /// The seed's built-ins that are library functions here, called
    /// without a `use`: `array_append`, `sum` of a vector, and `max`/`min`
    /// of two values.
    pub fn seed_builtins(v: [i32; N], x: i32) -> ([i32; N + 1], i32, i32, f32) {
        let w = array_append(v, x);
        (w, sum(w), max(x, 2) - min(x, 2), min(2.5, max(0.5, 1.0)))
    }

    /// Strings join with `+`; `s[i]` is one character, as a string.
    pub fn text(s: str, i: i64) -> (str, str, i64) {
        let joined = s + ", " + "café";
        (joined, joined[i], len(joined))
    }

    /// A computed value indexed directly: `shape(x)` at a run-time axis, a
    /// call's result, an expression's.
    pub fn computed(x: [f32; A, B, C], m: [f32; N, M]) -> (i64, f32, f32) {
        let r = len(shape(x));
        (shape(x)[r - 2], double_rows(m)[1, 0], (m * 3.0)[0, M - 1])
    }

    fn double_rows(m: [f32; N, M]) -> [f32; N, M] {
        m * 2.0
    }

    /// `x[a][b]` is `x[a, b]`, as the seed writes it.
    pub fn chained(m: [i32; R, C], k: i64) -> (i32, [i32; R]) {
        (m[k][1], [m[i][0] * 10 + m[i, C - 1] | i in 0..R])
    }

    /// The last row's sum, with a range given by `len`.
    pub fn last_row_sum(m: [f32; R, C]) -> f32 {
        sum[j in 0..len(m[0])](m[len(m) - 1, j])
    }
}

mod program {
    einlang::einlang! {
        let a = [[1, 2], [3, 4]];
        let b[i, j] = sum[k](a[i, k] * a[k, j]);
        print(b);
        print("b[0, 0] = {b[0, 0]}");
        assert(b[1, 1] == 22, "b[1, 1] is 3 * 2 + 4 * 4");
    }
}

#[test]
fn interpolation_formats_values() {
    assert_eq!(describe(1.5, 42).unwrap(), "x = 1.50, n = 42");
    // Interpolation shows arrays as numpy's `str` does (`print` shows them
    // as Python lists); numpy writes a 2x2 integer matrix this way.
    assert_eq!(show_matrix(&array![[19, 22], [43, 50]]).unwrap(), "m = [[19 22]\n [43 50]]");
}

#[test]
fn assert_returns_an_error_with_the_message() {
    assert_eq!(checked_sqrt(4.0).unwrap(), 2.0);
    let err = checked_sqrt(-1.0).unwrap_err();
    assert!(matches!(err, einlang::Error::Assert { .. }));
    assert!(err.to_string().contains("sqrt of a negative number"), "{err}");
}

#[test]
fn len_and_shape_give_extents() {
    let m = Array2::<f32>::zeros((3, 5));
    assert_eq!(sizes(&m).unwrap(), (3, 5, 15));
    let m = Array2::from_shape_fn((4, 2), |(i, j)| (i * 2 + j) as f32);
    assert_eq!(last_row_sum(&m).unwrap(), 6.0 + 7.0);
}

#[test]
fn member_lengths_and_tensor_asserts() {
    let m = Array2::<f32>::zeros((3, 5));
    assert_eq!(sizes_as_members(&m).unwrap(), (3, 5, 5));
    assert_eq!(all_positive(&array![1.0f32, 2.0, 0.5]).unwrap(), 3.5);
    let err = all_positive(&array![1.0f32, -2.0, 0.5]).unwrap_err();
    assert!(matches!(err, einlang::Error::Assert { .. }), "{err}");
}

#[test]
fn array_literals_stack_tensors() {
    let got = stack(&array![0.5f32, 1.5, 2.5], &array![-1.0f32, -2.0, -3.0]).unwrap();
    let want = array![[[0.5f32, 1.5, 2.5], [-1.0, -2.0, -3.0]], [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]];
    assert_eq!(got, want);
}

#[test]
fn range_bounds_known_at_run_time() {
    let v = array![1.0, 2.0, 3.0, 4.0];
    assert_eq!(prefix_sums(&v, 3).unwrap().to_vec(), vec![1.0, 3.0, 6.0]);
    assert_eq!(prefix_sums(&v, 9).unwrap().to_vec(), vec![1.0, 3.0, 6.0, 10.0]);
    assert_eq!(first_k(&v, 2).unwrap(), 3.0);
    assert!(matches!(first_k(&v, 5), Err(einlang::Error::Index { index: 4, len: 4, .. })));
}

#[test]
fn membership_tests_any_element() {
    let v = array![4, -1, 9];
    for x in [-1, 0, 3, 4, 9, 10] {
        let found = v.iter().any(|&e| e == x);
        let small = [1, 2, 3].contains(&(x + 1));
        assert_eq!(membership(&v, x).unwrap(), (found, !found || x == 0, small), "x = {x}");
    }
}

#[test]
fn range_membership() {
    for x in -3..9 {
        let want = ((0..3).contains(&x), (1..=3).contains(&x) || x == 7, (-4..0).contains(&(x * 2)));
        assert_eq!(in_ranges(x).unwrap(), want, "x = {x}");
    }
}

#[test]
fn sizes_count_elements() {
    let m = Array2::<f32>::zeros((3, 5));
    let t = einlang::ndarray::Array3::<i32>::zeros((2, 3, 4));
    let v = einlang::ndarray::ArrayD::<f64>::zeros(einlang::ndarray::IxDyn(&[2, 7]));
    assert_eq!(element_counts(&m, &t, v.view()).unwrap(), (15, 24, 5, 14));
}

#[test]
fn string_lengths_count_characters() {
    for s in ["", "abc", "héllo, wörld"] {
        let n = s.chars().count() as i64;
        assert_eq!(text_lengths(s).unwrap(), (n, n, 2 * n, n > 3), "{s:?}");
    }
}

#[test]
fn tuples_destructure_and_consts_inline() {
    assert_eq!(spread(&array![4i64, -2, 9, 0]).unwrap(), 11);
}

#[test]
fn top_level_statements_become_main() {
    assert!(program::main().is_ok());
}

mod empty_arrays {
    einlang::einlang! {
        /// `[]` has no elements; its element type comes from the context
        /// (else f32).
        pub fn empties() -> ([f32; ?], [f32; 3, 0], i64, [f64; ?]) {
            let e = [];
            let nested = [[], [], []];
            let from_none = [x * 2.0 | x in [], x > 0.0];
            let d: [f64; ?] = [];
            (e, nested, len(from_none), d)
        }
    }
}

#[test]
fn empty_array_literals() {
    let (e, nested, n, f) = empty_arrays::empties().unwrap();
    assert_eq!(e.len(), 0);
    assert_eq!(nested.shape(), &[3, 0]);
    assert_eq!(n, 0);
    assert_eq!(f.len(), 0);
}

#[test]
fn seed_builtins_reach_the_library() {
    let v = array![4, -1, 7];
    let (w, total, spread, clamped) = seed_builtins(&v, 5).unwrap();
    let mut want = v.to_vec();
    want.push(5);
    assert_eq!(w.to_vec(), want);
    assert_eq!(total, want.iter().sum::<i32>());
    assert_eq!(spread, 3);
    assert_eq!(clamped, 1.0);
    let (w, total, _, _) = seed_builtins(&array![], -2).unwrap();
    assert_eq!((w.to_vec(), total), (vec![-2], -2));
}

#[test]
fn chained_subscripts_index_one_tensor() {
    let m = array![[1, 2, 3], [4, 5, 6]];
    let (x, rows) = chained(&m, 1).unwrap();
    assert_eq!(x, m[[1, 1]]);
    let want: Vec<i32> = m.rows().into_iter().map(|r| r[0] * 10 + r[2]).collect();
    assert_eq!(rows.to_vec(), want);
    assert!(matches!(chained(&m, 2), Err(einlang::Error::Index { .. })));
}

#[test]
fn string_concatenation_and_characters() {
    let (joined, c, n) = text("Hi", 7).unwrap();
    assert_eq!(joined, "Hi, café");
    assert_eq!(c, "é");
    assert_eq!(n, "Hi, café".chars().count() as i64);
    assert_eq!(text("Hi", 0).unwrap().1, "H");
    assert!(matches!(text("Hi", 8), Err(einlang::Error::Index { index: 8, len: 8, .. })));
    assert!(matches!(text("Hi", -1), Err(einlang::Error::Index { .. })));
}

#[test]
fn row_membership() {
    let m = array![[1, 2, 3], [4, 5, 6], [7, 8, 9]];
    for r in [[4, 5, 6], [4, 5, 7], [7, 8, 9], [0, 0, 0]] {
        let want = m.rows().into_iter().any(|row| row.iter().zip(&r).all(|(a, b)| a == b));
        assert_eq!(row_member(&m, &array![r[0], r[1], r[2]]).unwrap(), want, "{r:?}");
    }
    assert_eq!(pair_member(&array![[1, 2], [3, 4]]).unwrap(), (true, false));
}

#[test]
fn computed_values_can_be_indexed() {
    let x = einlang::ndarray::Array3::<f32>::zeros((2, 5, 3));
    let m = array![[1.0f32, 2.0], [3.0, 4.0]];
    assert_eq!(computed(&x, &m).unwrap(), (5, 6.0, 6.0));
    let short = array![[1.0f32, 2.0]];
    assert!(matches!(computed(&x, &short), Err(einlang::Error::Index { .. })));
}
