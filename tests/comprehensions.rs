//! Comprehensions: generators over ranges and over tensors, filters that
//! make the length dynamic, and use of the result afterwards.

use einlang::einlang;
use einlang::ndarray::array;

einlang! {
    /// Tensor elements of one shape stack along a new first axis.
    pub fn triples(n: i64) -> [i64; ?, 3] {
        [[a, b, c] | a in 1..n, b in a..n, c in b..n, a * a + b * b == c * c]
    }

    pub fn doubled(m: [i32; 3, 3]) -> [i32; 3, 3] {
        [[m[i, j] * 2 | j in 0..3] | i in 0..3]
    }

    /// Rows of a matrix, reversed in each row, through a generator over
    /// the matrix.
    pub fn reversed_rows(m: [f32; N, M]) -> [f32; N, M] {
        [[r[M - 1 - j] | j in 0..M] | r in m]
    }

    /// A range that ends before it starts is empty.
    pub fn backwards() -> (i64, i64) {
        let r = [x | x in 6..4];
        (len(r), sum[i](r[i]))
    }

    pub fn squares(n: i64) -> [i64; n] {
        [i * i | i in 0..n]
    }

    pub fn pairs(n: i64, m: i64) -> [i64; n * m] {
        [10 * i + j | i in 0..n, j in 0..m]
    }

    /// Positive elements, doubled; then their sum through an indexed read.
    pub fn positives(v: [f32; N]) -> ([f32; ?], f32) {
        let p = [2.0 * x | x in v, x > 0.0];
        let total = sum[i](p[i]);
        (p, total)
    }

    /// `x in ...` again for a variable an earlier generator binds is a
    /// membership filter (a range or a tensor), not a second generator.
    pub fn members(n: i64, allowed: [i64; K]) -> ([i64; ?], [i64; ?], [i64; ?]) {
        (
            [x | x in 0..n, x in 3..7],
            [x | x in 0..n, x % 2 == 0, x in 2..=8],
            [10 * x + y | x in 0..n, y in 0..2, x in allowed],
        )
    }

    /// Against an array literal: its numbers take the index type.
    pub fn listed(n: i64) -> [i64; ?] {
        [x | x in 0..n, x in [2, 5, 7, 40]]
    }

    /// Filters between generators: j runs only for even i.
    pub fn even_rows(n: i64) -> [i64; ?] {
        [i * 100 + j | i in 0..n, i % 2 == 0, j in 0..2]
    }
}

#[test]
fn range_generators() {
    assert_eq!(squares(5).unwrap(), array![0i64, 1, 4, 9, 16]);
    assert_eq!(pairs(2, 3).unwrap(), array![0i64, 1, 2, 10, 11, 12]);
    assert_eq!(squares(0).unwrap().len(), 0);
    assert_eq!(backwards().unwrap(), (0, 0));
}

#[test]
fn filters_make_the_length_dynamic() {
    let (p, total) = positives(&array![1.0f32, -2.0, 3.5, 0.0, 0.25]).unwrap();
    assert_eq!(p, array![2.0f32, 7.0, 0.5]);
    assert_eq!(total, 9.5);
    assert_eq!(even_rows(5).unwrap(), array![0i64, 1, 200, 201, 400, 401]);
}

einlang! {
    /// A scalar parameter as a dimension of another parameter.
    pub fn first_n(n: i64, x: [f32; n]) -> f32 {
        sum[i](x[i])
    }
}

#[test]
fn scalar_parameter_as_a_dimension() {
    assert_eq!(first_n(3, &array![1.0f32, 2.0, 3.0]).unwrap(), 6.0);
    assert!(matches!(first_n(2, &array![1.0f32, 2.0, 3.0]), Err(einlang::Error::Shape { .. })));
}

#[test]
fn tensor_elements_stack() {
    let mut want = Vec::new();
    for a in 1..20i64 {
        for b in a..20 {
            for c in b..20 {
                if a * a + b * b == c * c {
                    want.extend([a, b, c]);
                }
            }
        }
    }
    let got = triples(20).unwrap();
    assert_eq!(got.shape(), &[want.len() / 3, 3]);
    assert_eq!(got.iter().copied().collect::<Vec<_>>(), want);
    assert_eq!(triples(3).unwrap().shape(), &[0, 3]);

    let m = array![[1, 2, 3], [4, 5, 6], [7, 8, 9]];
    assert_eq!(doubled(&m).unwrap(), m.mapv(|v| v * 2));
    let f = array![[1.0f32, 2.0], [3.0, 4.0], [5.0, 6.0]];
    assert_eq!(reversed_rows(&f.t()).unwrap(), array![[5.0f32, 3.0, 1.0], [6.0, 4.0, 2.0]]);
}

einlang! {
    /// Tuple elements are rows, as in the seed (a numpy array of tuples).
    pub fn upper_pairs(n: i64) -> [i64; ?, 2] {
        [(i, j) | i in 0..n, j in 0..n, i < j]
    }

    pub fn point_rows(xs: [f64; N]) -> [f64; N, 3] {
        [(x, x * x, -x) | x in xs]
    }
}

#[test]
fn tuple_elements_are_rows() {
    let n = 5i64;
    let mut want = Vec::new();
    for i in 0..n {
        for j in 0..n {
            if i < j {
                want.extend([i, j]);
            }
        }
    }
    let got = upper_pairs(n).unwrap();
    assert_eq!(got.shape(), &[want.len() / 2, 2]);
    assert_eq!(got.iter().copied().collect::<Vec<_>>(), want);
    let xs = array![1.5f64, -2.0];
    assert_eq!(point_rows(&xs).unwrap(), array![[1.5, 2.25, -1.5], [-2.0, 4.0, 2.0]]);
}

einlang! {
    /// Branches whose lengths are known only at run time give a value of
    /// such a length.
    pub fn pick(v: [i64; N], evens: bool) -> (i64, i64) {
        let r = if evens { [x | x in v, x % 2 == 0] } else { [x | x in v, x % 2 != 0] };
        (len(r), sum[i](r[i]))
    }
}

#[test]
fn if_between_filtered_comprehensions() {
    let v = array![1i64, 2, 3, 4, 6, 9];
    let evens: Vec<i64> = v.iter().copied().filter(|x| x % 2 == 0).collect();
    let odds: Vec<i64> = v.iter().copied().filter(|x| x % 2 != 0).collect();
    assert_eq!(pick(&v, true).unwrap(), (evens.len() as i64, evens.iter().sum()));
    assert_eq!(pick(&v, false).unwrap(), (odds.len() as i64, odds.iter().sum()));
}

#[test]
fn repeated_generator_variable_is_a_membership_filter() {
    let allowed = array![1i64, 4, 9];
    let (a, b, c) = members(10, &allowed).unwrap();
    let want_a: Vec<i64> = (0..10).filter(|x| (3..7).contains(x)).collect();
    let want_b: Vec<i64> = (0..10).filter(|x| x % 2 == 0 && (2..=8).contains(x)).collect();
    let want_c: Vec<i64> = (0..10)
        .flat_map(|x| (0..2).map(move |y| (x, y)))
        .filter(|(x, _)| allowed.iter().any(|a| a == x))
        .map(|(x, y)| 10 * x + y)
        .collect();
    assert_eq!(a.to_vec(), want_a);
    assert_eq!(b.to_vec(), want_b);
    assert_eq!(c.to_vec(), want_c);
    assert_eq!(listed(10).unwrap().to_vec(), vec![2, 5, 7]);
}
