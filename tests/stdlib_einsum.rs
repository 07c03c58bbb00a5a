//! `std::ml::einsum` against a brute-force reference written here: every
//! assignment of values to the equation's letters, the product of the
//! operands' entries added into the output entry the output letters pick.
//! The reference spells `...` out as letters, so it shares no code path with
//! the compiler's expansion of `...` into rest indices.

mod common;

use std::collections::HashMap;

use common::*;
use einlang::einlang;
use einlang::ndarray::{array, Array1, Array2, Array3, Array4, ArrayD, IxDyn};

einlang! {
    use std::ml::einsum;

    pub fn matmul(a: [f32; M, K], b: [f32; K, N]) -> [f32; M, N] { einsum("ij,jk->ik", (a, b)) }
    /// The operands as a list, as the seed passes them.
    pub fn matvec(a: [f32; M, K], v: [f32; K]) -> [f32; M] { einsum("ij,j->i", [a, v]) }
    pub fn matmul_any(a: [f64; M, K], b: [f64; P, N]) -> [f64; M, N] { einsum("ij,jk->ik", a, b) }
    pub fn trace(a: [f64; N, N]) -> f64 { einsum("ii", a) }
    pub fn diagonal(a: [f64; N, N]) -> [f64; N] { std::ml::special_ops::einsum("ii->i", a) }
    pub fn transpose(a: [i32; M, N]) -> [i32; N, M] { einsum("ij->ji", a) }
    /// Implicit output: the letters that occur once, sorted (`ik`).
    pub fn implicit(a: [f64; K, J], b: [f64; J, I]) -> [f64; I, K] { einsum(" kj , ji ", a, b) }
    pub fn bmm3(a: [f64; B, M, K], b: [f64; B, K, N]) -> [f64; B, M, N] { einsum("...ij,...jk->...ik", a, b) }
    pub fn bmm4(a: [f64; C, B, M, K], b: [f64; C, B, K, N]) -> [f64; C, B, M, N] {
        einsum("...ij,...jk->...ik", a, b)
    }
    pub fn batched_dot(a: [f32; B, N], b: [f32; B, N]) -> [f32; B] { einsum("...i,...i->...", a, b) }
    pub fn dot3(a: [f64; N], b: [f64; N], c: [f64; N]) -> f64 { einsum("i,i,i->", a, b, c) }
    pub fn chain(a: [f64; I, J], b: [f64; J, K], c: [f64; K, L]) -> [f64; I, L] { einsum("ij,jk,kl->il", (a, b, c)) }
    pub fn outer(a: [i64; M], b: [i64; N]) -> [i64; M, N] {
        let pair = (a, b);
        einsum("i,j", pair)
    }
    pub fn sums(a: [f64; M, N]) -> (f64, [f64; N], [f64; M]) {
        (einsum("ij->", a), einsum("ij->j", a), einsum("ij->i", a))
    }
    pub fn bilinear(x: [f64; N, K], w: [f64; O, K, L], y: [f64; N, L]) -> [f64; N, O] {
        einsum("ik,jkl,il->ij", x, w, y)
    }
    pub fn scale(s: f64, a: [f64; M, N]) -> [f64; M, N] { einsum(",ij->ij", s, a) }
    /// The same rest letters before the others and after them.
    pub fn move_axis(a: [f64; A, B, C]) -> [f64; B, C, A] { einsum("i...->...i", a) }

    /// `...` left out of the output is summed over.
    pub fn sum_all(a: [f64; M, K]) -> f64 { einsum("...->", a) }
    pub fn sum_leading(a: [f64; A, B, C]) -> [f64; C] { einsum("...i->i", a) }
    /// `...` over no axes, in a generic function used at two ranks.
    fn batched(a, b) { einsum("...ij,...jk->...ik", a, b) }
    pub fn batched2(a: [f64; M, K], b: [f64; K, N]) -> [f64; M, N] { batched(a, b) }
    pub fn batched3(a: [f64; B, M, K], b: [f64; B, K, N]) -> [f64; B, M, N] { batched(a, b) }

    /// One generic function, used at two element types.
    fn gram(x) { einsum("ij,kj->ik", x, x) }
    pub fn gram32(x: [f32; N, D]) -> [f32; N, N] { gram(x) }
    pub fn gram64(x: [f64; N, D]) -> [f64; N, N] { gram(x) }
}

/// The letters of one term, with `...` spelled as `ell` (which must not use
/// letters of the term).
fn spelled(term: &str, ell: &str) -> Vec<char> {
    term.replace("...", ell).chars().filter(|c| !c.is_whitespace()).collect()
}

/// Brute-force einsum with an explicit output: `inputs` and `output` are
/// letter strings; every letter ranges over the extent of an axis it names.
fn einsum_ref(inputs: &[&str], output: &str, ops: &[ArrayD<f64>]) -> ArrayD<f64> {
    let terms: Vec<Vec<char>> = inputs.iter().map(|t| spelled(t, "")).collect();
    let out: Vec<char> = spelled(output, "");
    let mut extent: HashMap<char, usize> = HashMap::new();
    for (t, op) in terms.iter().zip(ops) {
        assert_eq!(t.len(), op.ndim(), "reference: term {t:?} for an operand of rank {}", op.ndim());
        for (c, &n) in t.iter().zip(op.shape()) {
            assert_eq!(*extent.entry(*c).or_insert(n), n, "reference: letter {c} with two extents");
        }
    }
    let mut letters: Vec<char> = extent.keys().copied().collect();
    letters.sort_unstable();
    let out_shape: Vec<usize> = out.iter().map(|c| extent[c]).collect();
    let mut result = ArrayD::<f64>::zeros(IxDyn(&out_shape));
    let total: usize = letters.iter().map(|c| extent[c]).product();
    for flat in 0..total {
        let mut value: HashMap<char, usize> = HashMap::new();
        let mut rest = flat;
        for c in &letters {
            value.insert(*c, rest % extent[c]);
            rest /= extent[c];
        }
        let mut product = 1.0;
        for (t, op) in terms.iter().zip(ops) {
            let at: Vec<usize> = t.iter().map(|c| value[c]).collect();
            product *= op[IxDyn(&at)];
        }
        let at: Vec<usize> = out.iter().map(|c| value[c]).collect();
        result[IxDyn(&at)] += product;
    }
    result
}

fn dyn64<D: einlang::ndarray::Dimension>(a: &einlang::ndarray::Array<f64, D>) -> ArrayD<f64> {
    a.clone().into_dyn()
}

fn rand_f64(shape: &[usize], seed: u64) -> ArrayD<f64> {
    let mut rng = Rng::new(seed);
    ArrayD::from_shape_fn(IxDyn(shape), |_| rng.range(-1.0, 1.0))
}

fn close(actual: &ArrayD<f64>, expected: &ArrayD<f64>) {
    assert_eq!(actual.shape(), expected.shape());
    assert_close(actual, expected, 1e-9);
}

#[test]
fn matrix_products() {
    for (m, k, n, seed) in [(1, 1, 1, 1), (3, 4, 5, 2), (17, 9, 33, 3)] {
        let a = rand2(m, k, seed);
        let b = rand2(k, n, seed + 10);
        assert_close(&matmul(&a, &b).unwrap(), &matmul_ref_f32(a.view(), b.view()), 1e-4);
        // Non-contiguous operands read the same values.
        let at = transposed(&a);
        assert_close(&matmul(&at.t().to_owned(), &b).unwrap(), &matmul_ref_f32(a.view(), b.view()), 1e-4);
        let (a, b) = (rand_f64(&[m, k], seed), rand_f64(&[k, n], seed + 1));
        let got = matmul_any(&a.clone().into_dimensionality().unwrap(), &b.clone().into_dimensionality().unwrap());
        close(&dyn64(&got.unwrap()), &einsum_ref(&["ij", "jk"], "ik", &[a, b]));
    }
}

#[test]
fn operands_in_a_list() {
    let a = rand2(3, 4, 51);
    let v = rand1(4, 52);
    let want: Array1<f32> = (0..3).map(|i| (0..4).map(|k| a[[i, k]] * v[k]).sum()).collect();
    assert_close(&matvec(&a, &v).unwrap(), &want, 1e-5);
}

#[test]
fn disagreeing_extents_are_an_error() {
    let a = Array2::<f64>::ones((2, 3));
    let b = Array2::<f64>::ones((4, 2));
    assert!(matmul_any(&a, &b).is_err());
    let c = Array2::<f64>::ones((3, 2));
    assert_eq!(matmul_any(&a, &c).unwrap(), Array2::from_elem((2, 2), 3.0));
}

#[test]
fn repeated_letters_take_diagonals() {
    let a = array![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]];
    assert_eq!(trace(&a).unwrap(), 15.0);
    assert_eq!(diagonal(&a).unwrap(), array![1.0, 5.0, 9.0]);
    let r = rand_f64(&[6, 6], 7);
    let expected = einsum_ref(&["ii"], "", std::slice::from_ref(&r));
    assert_close_scalar(trace(&r.clone().into_dimensionality().unwrap()).unwrap(), expected[IxDyn(&[])], 1e-12);
}

#[test]
fn permutations_and_implicit_outputs() {
    let a = array![[1, 2, 3], [4, 5, 6]];
    assert_eq!(transpose(&a).unwrap(), array![[1, 4], [2, 5], [3, 6]]);
    let (x, y) = (rand_f64(&[4, 3], 11), rand_f64(&[3, 5], 12));
    let got = implicit(&x.clone().into_dimensionality().unwrap(), &y.clone().into_dimensionality().unwrap());
    close(&dyn64(&got.unwrap()), &einsum_ref(&["kj", "ji"], "ik", &[x, y]));
    let z = rand_f64(&[2, 3, 4], 13);
    let got = move_axis(&z.clone().into_dimensionality().unwrap()).unwrap();
    close(&dyn64(&got), &einsum_ref(&["abc"], "bca", &[z]));
}

#[test]
fn ellipsis_is_any_number_of_leading_axes() {
    let (a, b) = (rand_f64(&[3, 2, 4], 21), rand_f64(&[3, 4, 5], 22));
    let got = bmm3(&a.clone().into_dimensionality().unwrap(), &b.clone().into_dimensionality().unwrap());
    close(&dyn64(&got.unwrap()), &einsum_ref(&["bij", "bjk"], "bik", &[a, b]));
    let (a, b) = (rand_f64(&[2, 3, 2, 4], 23), rand_f64(&[2, 3, 4, 3], 24));
    let got: Array4<f64> =
        bmm4(&a.clone().into_dimensionality().unwrap(), &b.clone().into_dimensionality().unwrap()).unwrap();
    close(&dyn64(&got), &einsum_ref(&["cbij", "cbjk"], "cbik", &[a, b]));
    let (a, b) = (rand2(5, 7, 25), rand2(5, 7, 26));
    let expected: Array1<f32> = (0..5).map(|r| (0..7).map(|i| a[[r, i]] * b[[r, i]]).sum()).collect();
    assert_close(&batched_dot(&a, &b).unwrap(), &expected, 1e-5);
}

#[test]
fn ellipsis_summed_or_over_no_axes() {
    let a = rand_f64(&[3, 4], 61);
    let a2: Array2<f64> = a.clone().into_dimensionality().unwrap();
    assert_close_scalar(sum_all(&a2).unwrap(), einsum_ref(&["ij"], "", std::slice::from_ref(&a))[IxDyn(&[])], 1e-12);
    let c = rand_f64(&[2, 3, 4], 62);
    let got = sum_leading(&c.clone().into_dimensionality().unwrap()).unwrap();
    close(&dyn64(&got), &einsum_ref(&["abi"], "i", &[c]));
    let (x, y) = (rand_f64(&[3, 4], 63), rand_f64(&[4, 2], 64));
    let got = batched2(&x.clone().into_dimensionality().unwrap(), &y.clone().into_dimensionality().unwrap());
    close(&dyn64(&got.unwrap()), &einsum_ref(&["ij", "jk"], "ik", &[x, y]));
    let (x, y) = (rand_f64(&[2, 3, 4], 65), rand_f64(&[2, 4, 2], 66));
    let got = batched3(&x.clone().into_dimensionality().unwrap(), &y.clone().into_dimensionality().unwrap());
    close(&dyn64(&got.unwrap()), &einsum_ref(&["bij", "bjk"], "bik", &[x, y]));
}

#[test]
fn several_operands() {
    let v: Vec<ArrayD<f64>> = (0..3).map(|s| rand_f64(&[6], 30 + s)).collect();
    let one = |x: &ArrayD<f64>| -> Array1<f64> { x.clone().into_dimensionality().unwrap() };
    let got = dot3(&one(&v[0]), &one(&v[1]), &one(&v[2])).unwrap();
    assert_close_scalar(got, einsum_ref(&["i", "i", "i"], "", &v)[IxDyn(&[])], 1e-12);
    let ops = vec![rand_f64(&[2, 3], 33), rand_f64(&[3, 4], 34), rand_f64(&[4, 5], 35)];
    let two = |x: &ArrayD<f64>| -> Array2<f64> { x.clone().into_dimensionality().unwrap() };
    let got = chain(&two(&ops[0]), &two(&ops[1]), &two(&ops[2])).unwrap();
    close(&dyn64(&got), &einsum_ref(&["ij", "jk", "kl"], "il", &ops));
    let ops = vec![rand_f64(&[3, 4], 36), rand_f64(&[2, 4, 5], 37), rand_f64(&[3, 5], 38)];
    let w: Array3<f64> = ops[1].clone().into_dimensionality().unwrap();
    let got = bilinear(&two(&ops[0]), &w, &two(&ops[2])).unwrap();
    close(&dyn64(&got), &einsum_ref(&["ik", "jkl", "il"], "ij", &ops));
}

#[test]
fn operands_in_a_tuple_variable_and_scalars() {
    assert_eq!(outer(&array![1, 2], &array![3, 4, 5]).unwrap(), array![[3, 4, 5], [6, 8, 10]]);
    let a = array![[1.0, 2.0], [3.0, 4.0]];
    assert_eq!(scale(0.5, &a).unwrap(), array![[0.5, 1.0], [1.5, 2.0]]);
}

#[test]
fn sums_over_letters_left_out() {
    let a = array![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]];
    let (total, cols, rows) = sums(&a).unwrap();
    assert_eq!(total, 21.0);
    assert_eq!(cols, array![5.0, 7.0, 9.0]);
    assert_eq!(rows, array![6.0, 15.0]);
}

#[test]
fn one_generic_function_at_two_types() {
    let x = rand2(4, 3, 41);
    let xt = x.t().to_owned();
    assert_close(&gram32(&x).unwrap(), &matmul_ref_f32(x.view(), xt.view()), 1e-5);
    let y = rand_f64(&[5, 2], 42);
    let got = gram64(&y.clone().into_dimensionality().unwrap()).unwrap();
    close(&dyn64(&got), &einsum_ref(&["ij", "kj"], "ik", &[y.clone(), y]));
}
