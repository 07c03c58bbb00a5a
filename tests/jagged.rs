//! Jagged arrays outside Einstein notation: literals of rows of different
//! lengths, `len` (rows), `j[i]` (one row, a vector whose length only it
//! knows; a missing row is an `Err`), parameters and results
//! (`&einlang::Jagged<T>` in, `Jagged<T>` out), `typeof` and printing.

use einlang::einlang;
use einlang::ndarray::{array, Array1};
use einlang::{Error, Jagged};

einlang! {
    /// Per row: its length and its sum.
    fn row_sum(r: [f64; N]) -> f64 { sum[k](r[k]) }

    pub fn row_stats(j: jagged[f64]) -> ([i64; ?], [f64; ?]) {
        ([len(j[i]) | i in 0..len(j)], [row_sum(j[i]) | i in 0..len(j)])
    }

    /// Rows as comprehension generators: each row is a vector whose length
    /// it knows, usable in a reduction, with a filter on it.
    pub fn over_rows(j: jagged[f64]) -> ([i64; ?], [f64; ?], [f64; ?]) {
        ([len(r) | r in j], [sum[k](r[k] * r[k]) | r in j], [r[len(r) - 1] | r in j, len(r) > 1])
    }

    /// `j[i][k]` (the seed's spelling) reads one element of a row; a
    /// missing row or element is an `Err`.
    pub fn element(j: jagged[i32], i: i64, k: i64) -> (i32, i32) {
        (j[i][k], sum[m in 0..len(j[i])](j[i][m]))
    }

    /// `jagged[row | ...]`: a comprehension whose elements are vectors of
    /// any lengths builds a jagged array.
    pub fn staircase(n: i64) -> jagged[i64] {
        jagged[[10 * i + j | j in 0..i + 1] | i in 0..n]
    }

    pub fn positives(j: jagged[f64]) -> jagged[f64] {
        jagged[[v * 2.0 | v in r, v > 0.0] | r in j]
    }

    /// The longest row's index, by a loop over rows.
    pub fn longest(j: jagged[f64]) -> i64 {
        argmax[i in 0..len(j)](len(j[i]))
    }

    /// One row, copied out, and a value of another.
    pub fn pick(j: jagged[i32], i: i64) -> ([i32; ?], i32) {
        let r = j[i];
        let first = j[0];
        (r, first[0] + r[len(r) - 1])
    }

    /// A jagged result, built from rows of different lengths.
    pub fn triangle(x: f32) -> jagged[f32] {
        let r[k in 0..3] = x * k as f32;
        jagged[[x], [x, 2.0 * x], r]
    }

    pub fn describe(j: jagged[f32]) -> (str, str) {
        (typeof(j), "{j}")
    }

    /// A jagged array passed on to another function.
    pub fn rows_of(j: jagged[f64]) -> i64 {
        let k: jagged[f64] = j;
        len(k) + len(row_stats(k).0)
    }

    /// Jagged values chosen by a condition and returned.
    pub fn either(a: jagged[i32], b: jagged[i32], first: bool) -> jagged[i32] {
        if first { a } else { b }
    }
}

fn rows(j: &Jagged<f64>) -> Vec<Vec<f64>> {
    j.rows().iter().map(|r| r.to_vec()).collect()
}

#[test]
fn rows_have_their_own_lengths() {
    let j = Jagged::from(vec![vec![1.0, 2.0, 3.5], vec![], vec![-4.0], vec![0.5, 0.25]]);
    let (lens, sums) = row_stats(&j).unwrap();
    let want_lens: Vec<i64> = rows(&j).iter().map(|r| r.len() as i64).collect();
    let want_sums: Vec<f64> = rows(&j).iter().map(|r| r.iter().sum()).collect();
    assert_eq!(lens.to_vec(), want_lens);
    assert_eq!(sums.to_vec(), want_sums);
    assert_eq!(longest(&j).unwrap(), 0);
    assert_eq!(rows_of(&j).unwrap(), 8);
}

#[test]
fn jagged_values_flow_through_branches() {
    let a = Jagged::from(vec![vec![1], vec![2, 3]]);
    let b = Jagged::from(vec![vec![4, 5, 6]]);
    assert_eq!(either(&a, &b, true).unwrap(), a);
    assert_eq!(either(&a, &b, false).unwrap(), b);
}

#[test]
fn a_missing_row_is_an_error() {
    let j = Jagged::from(vec![vec![1, 2], vec![3, 4, 5]]);
    assert_eq!(pick(&j, 1).unwrap(), (array![3, 4, 5], 1 + 5));
    assert!(matches!(pick(&j, 2), Err(Error::Index { index: 2, len: 2, .. })));
    assert!(matches!(pick(&j, -1), Err(Error::Index { .. })));
}

#[test]
fn jagged_results_and_printing() {
    let t = triangle(1.5).unwrap();
    let want: Vec<Array1<f32>> = vec![array![1.5], array![1.5, 3.0], array![0.0, 1.5, 3.0]];
    assert_eq!(t.rows(), want.as_slice());
    assert_eq!(describe(&t).unwrap(), ("jagged".to_string(), "[[1.5], [1.5, 3.0], [0.0, 1.5, 3.0]]".to_string()));
}

mod program {
    einlang::einlang! {
        let j = jagged[[1, 2], [3], [4, 5, 6]];
        let last = j[len(j) - 1];
        assert(len(j) == 3 && len(last) == 3 && last[2] == 6, "rows keep their lengths");
        print(j);
    }
}

#[test]
fn top_level_jagged_literals() {
    program::main().unwrap();
}

#[test]
fn rows_as_generators() {
    let rows: Vec<Vec<f64>> = vec![vec![1.0, 2.0, 3.0], vec![4.5], vec![], vec![-1.0, 0.5]];
    let j = Jagged::from(rows.clone());
    let (lens, squares, lasts) = over_rows(&j).unwrap();
    assert_eq!(lens.to_vec(), rows.iter().map(|r| r.len() as i64).collect::<Vec<_>>());
    assert_eq!(squares.to_vec(), rows.iter().map(|r| r.iter().map(|v| v * v).sum::<f64>()).collect::<Vec<_>>());
    assert_eq!(lasts.to_vec(), rows.iter().filter(|r| r.len() > 1).map(|r| r[r.len() - 1]).collect::<Vec<_>>());
}

#[test]
fn elements_of_rows() {
    let j = Jagged::from(vec![vec![1, 2, 3], vec![40], vec![5, 6]]);
    assert_eq!(element(&j, 0, 2).unwrap(), (3, 6));
    assert_eq!(element(&j, 2, 1).unwrap(), (6, 11));
    assert!(matches!(element(&j, 1, 1), Err(Error::Index { index: 1, len: 1, .. })));
    assert!(matches!(element(&j, 3, 0), Err(Error::Index { index: 3, len: 3, .. })));
}

#[test]
fn comprehensions_of_rows() {
    let t = staircase(4).unwrap();
    let want: Vec<Vec<i64>> = (0..4).map(|i| (0..=i).map(|j| 10 * i + j).collect()).collect();
    assert_eq!(t.rows().iter().map(|r| r.to_vec()).collect::<Vec<_>>(), want);
    assert_eq!(staircase(0).unwrap().len(), 0);
    let rows = vec![vec![1.0, -2.0, 3.0], vec![-1.0], vec![0.5, 0.25]];
    let got = positives(&Jagged::from(rows.clone())).unwrap();
    let want: Vec<Vec<f64>> = rows.iter().map(|r| r.iter().filter(|v| **v > 0.0).map(|v| v * 2.0).collect()).collect();
    assert_eq!(got.rows().iter().map(|r| r.to_vec()).collect::<Vec<_>>(), want);
}

mod indexed {
    use einlang::einlang;
    einlang! {
        /// Indexed definitions over the rows of a jagged array: a reduction
        /// whose range is the row's own length, evaluated at each point.
        pub fn per_row(j: jagged[f64]) -> ([i64; ?], [f64; ?], [f64; ?]) {
            let n = len(j);
            let lens[i in 0..n] = len(j[i]);
            let sums[i in 0..n] = sum[k in 0..len(j[i])](j[i][k]);
            let last_two[i in 0..n] = sum[k in len(j[i]) - 2..len(j[i])](j[i][k]);
            (lens, sums, last_two)
        }
        /// Bounds read from a tensor at the point: prefix sums cut at
        /// `cut[m]`, tail sums from `cut[m]`.
        pub fn cuts(x: [f32; N], cut: [i32; M]) -> ([f32; M], [f32; M]) {
            let head[m] = sum[k in 0..cut[m]](x[k]);
            let tail[m] = sum[k in cut[m]..N](x[k]);
            (head, tail)
        }
        /// Nested reductions: the inner bound reads the outer index.
        pub fn triangle(j: jagged[i64]) -> i64 {
            sum[i in 0..len(j)](sum[k in 0..len(j[i])](j[i][k] * (k + 1)))
        }
    }
}

#[test]
fn reductions_over_row_lengths() {
    let j = Jagged::from_rows(vec![array![1.0, 2.0], array![3.0, 4.0, 5.0], array![6.0, 7.0]]);
    let (lens, sums, last_two) = indexed::per_row(&j).unwrap();
    assert_eq!(lens, array![2, 3, 2]);
    assert_eq!(sums, array![3.0, 12.0, 13.0]);
    assert_eq!(last_two, array![3.0, 9.0, 13.0]);
    // A row shorter than 2: the range starts at -1 and the read of j[0][-1]
    // is an `Err`.
    let short = Jagged::from_rows(vec![array![1.0], array![3.0, 4.0]]);
    assert!(matches!(indexed::per_row(&short), Err(Error::Index { .. })));
    // 1*1 + 2*2 + 3*1 + 4*2 + 5*3
    let k = Jagged::from_rows(vec![array![1, 2], array![3, 4, 5], Array1::zeros(0)]);
    assert_eq!(indexed::triangle(&k).unwrap(), 1 + 4 + 3 + 8 + 15);
}

#[test]
fn bounds_read_at_each_point() {
    let x = array![1.0f32, 2.0, 3.0, 4.0];
    let (head, tail) = indexed::cuts(&x, &array![0, 1, 4, 2]).unwrap();
    assert_eq!(head, array![0.0, 1.0, 10.0, 3.0]);
    assert_eq!(tail, array![10.0, 9.0, 0.0, 7.0]);
    // A cut past the end reads x[4]; a negative one x[-1]: `Err`, never a
    // panic.
    assert!(matches!(indexed::cuts(&x, &array![5]), Err(Error::Index { .. })));
    assert!(matches!(indexed::cuts(&x, &array![-1]), Err(Error::Index { .. })));
}
