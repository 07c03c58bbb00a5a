//! Numerical acceptance tests: every kernel is compiled by `einlang!` and
//! compared with a naive Rust loop from `tests/common`.
//!
//! Each group keeps its `einlang!` block next to its tests. Inputs come in
//! standard layout and as non-contiguous views (`.t()`, `slice(s![.., ..;2])`,
//! `permuted_axes`), because generated functions accept any strides.

mod common;

use common::*;
use einlang::einlang;
use einlang::ndarray::{array, s, Array1, Array2, Array3, Array4, Axis};

// ===========================================================================
// Matrix products
// ===========================================================================

einlang! {
    /// Plain matrix product.
    pub fn matmul(a: [f32; M, K], b: [f32; K, N]) -> [f32; M, N] {
        let c[i, j] = sum[k](a[i, k] * b[k, j]);
        c
    }

    /// The same product with every range written out.
    pub fn matmul_ranged(a: [f32; M, K], b: [f32; K, N]) -> [f32; M, N] {
        let c[i in 0..M, j in 0..N] = sum[k in 0..K](a[i, k] * b[k, j]);
        c
    }

    /// Batched product whose second operand is stored transposed.
    pub fn bmm_nt(a: [f32; B, M, K], b: [f32; B, N, K]) -> [f32; B, M, N] {
        let c[bb, i, j] = sum[k](a[bb, i, k] * b[bb, j, k]);
        c
    }

    pub fn matmul_f64(a: [f64; M, K], b: [f64; K, N]) -> [f64; M, N] {
        let c[i, j] = sum[k](a[i, k] * b[k, j]);
        c
    }

    pub fn matmul_i32(a: [i32; M, K], b: [i32; K, N]) -> [i32; M, N] {
        let c[i, j] = sum[k](a[i, k] * b[k, j]);
        c
    }
}

#[test]
fn matmul_small_exact() {
    let a = array![[1.0f32, 2.0], [3.0, 4.0]];
    let b = array![[5.0f32, 6.0], [7.0, 8.0]];
    let c: Array2<f32> = matmul(&a, &b).unwrap();
    assert_eq!(c, array![[19.0, 22.0], [43.0, 50.0]]);
}

#[test]
fn matmul_matches_reference_on_odd_sizes() {
    for (seed, &(m, k, n)) in
        [(7, 5, 3), (1, 1, 1), (13, 17, 11), (1, 9, 1), (16, 1, 16), (2, 3, 64), (33, 7, 2)].iter().enumerate()
    {
        let a = rand2(m, k, 10 + seed as u64);
        let b = rand2(k, n, 100 + seed as u64);
        let c = matmul(&a, &b).unwrap();
        assert_eq!(c.dim(), (m, n), "shape for {m}x{k} * {k}x{n}");
        assert_close(&c, &matmul_ref_f32(a.view(), b.view()), 1e-5);
    }
}

#[test]
fn matmul_accepts_transposed_views() {
    let (m, k, n) = (13, 17, 11);
    let a = rand2(m, k, 1);
    let b = rand2(k, n, 2);
    let expected = matmul_ref_f32(a.view(), b.view());
    // Storage holding the transposes: `.t()` of them are column-major views equal to a and b.
    let at = transposed(&a);
    let bt = transposed(&b);
    assert!(!at.t().is_standard_layout());

    let c1 = matmul(at.t(), &b).unwrap();
    assert_close(&c1, &expected, 1e-5);
    let c2 = matmul(a.view(), bt.t()).unwrap();
    assert_close(&c2, &expected, 1e-5);
    let c3 = matmul(at.t(), bt.t()).unwrap();
    assert_close(&c3, &expected, 1e-5);
    // Results are owned arrays in standard layout whatever the input strides.
    assert!(c3.is_standard_layout());

    // (A B)^T = B^T A^T, computed from transposed views of the original data.
    let ct = matmul(b.t(), a.t()).unwrap();
    assert_close(&ct, &transposed(&expected), 1e-5);
}

#[test]
fn matmul_accepts_column_strided_views() {
    let (m, k, n) = (6, 9, 5);
    let a = rand2(m, k, 3);
    let b = rand2(k, n, 4);
    // Reading a filler element would poison the result with NaN.
    let a_wide = spread_cols(&a, f32::NAN);
    let b_tall = spread_rows(&b, f32::NAN);
    let a_view = a_wide.slice(s![.., ..;2]);
    let b_view = b_tall.slice(s![..;2, ..]);
    assert_eq!(a_view, a);
    assert_eq!(b_view, b);
    let c = matmul(a_view, b_view).unwrap();
    assert_close(&c, &matmul_ref_f32(a.view(), b.view()), 1e-5);
}

#[test]
fn matmul_with_explicit_ranges_agrees() {
    let a = rand2(7, 5, 5);
    let b = rand2(5, 3, 6);
    let c = matmul_ranged(&a, &b).unwrap();
    assert_close(&c, &matmul_ref_f32(a.view(), b.view()), 1e-5);
    let bt = transposed(&b);
    let c2 = matmul_ranged(&a, bt.t()).unwrap();
    assert_close(&c2, &c, 1e-6);
}

#[test]
fn matmul_with_empty_inner_dimension_is_zero() {
    let a = Array2::<f32>::zeros((3, 0));
    let b = Array2::<f32>::zeros((0, 2));
    let c = matmul(&a, &b).unwrap();
    assert_eq!(c, Array2::<f32>::zeros((3, 2)));
}

#[test]
fn batched_matmul_with_transposed_operand() {
    let (nb, m, n, k) = (3, 5, 4, 7);
    let a = rand3(nb, m, k, 11);
    let b = rand3(nb, n, k, 12);
    let c: Array3<f32> = bmm_nt(&a, &b).unwrap();
    assert_eq!(c.dim(), (nb, m, n));
    let expected = bmm_nt_ref(a.view(), b.view());
    assert_close(&c, &expected, 1e-5);

    // Each batch is a @ b^T.
    for bb in 0..nb {
        let slab = matmul_ref_f32(a.index_axis(Axis(0), bb), b.index_axis(Axis(0), bb).t());
        assert_close(&c.index_axis(Axis(0), bb).to_owned(), &slab, 1e-5);
    }
}

#[test]
fn batched_matmul_accepts_permuted_views() {
    let (nb, m, n, k) = (2, 6, 3, 9);
    let a = rand3(nb, m, k, 13);
    let b = rand3(nb, n, k, 14);
    let expected = bmm_nt_ref(a.view(), b.view());
    // b stored as [B, K, N] (the usual layout of a right-hand operand), viewed as [B, N, K].
    let perm = [0, 2, 1];
    let b_store = permuted_storage3(&b, perm);
    let b_view = b_store.view().permuted_axes(inverse_perm3(perm));
    assert_eq!(b_view, b);
    assert!(!b_view.is_standard_layout());
    let c = bmm_nt(&a, b_view).unwrap();
    assert_close(&c, &expected, 1e-5);

    // a stored as [K, M, B].
    let perm_a = [2, 1, 0];
    let a_store = permuted_storage3(&a, perm_a);
    let a_view = a_store.view().permuted_axes(inverse_perm3(perm_a));
    assert_eq!(a_view, a);
    let c2 = bmm_nt(a_view, b_view).unwrap();
    assert_close(&c2, &expected, 1e-5);
}

#[test]
fn matmul_f64_is_accurate() {
    let (m, k, n) = (9, 31, 4);
    let a = rand2_f64(m, k, 21);
    let b = rand2_f64(k, n, 22);
    let c: Array2<f64> = matmul_f64(&a, &b).unwrap();
    assert_close(&c, &matmul_ref(a.view(), b.view()), 1e-12);
    let at = transposed(&a);
    let c2 = matmul_f64(at.t(), &b).unwrap();
    assert_close(&c2, &c, 1e-12);
}

#[test]
fn matmul_i32_is_exact() {
    let (m, k, n) = (8, 13, 5);
    let a = rand2_i32(m, k, 23);
    let b = rand2_i32(k, n, 24);
    let c: Array2<i32> = matmul_i32(&a, &b).unwrap();
    assert_eq!(c, matmul_ref(a.view(), b.view()));
    let bt = transposed(&b);
    assert_eq!(matmul_i32(&a, bt.t()).unwrap(), c);
}

// ===========================================================================
// Convolutions (index equations in `where`, affine reads)
// ===========================================================================

einlang! {
    /// Valid 2-D convolution (cross-correlation) with bias.
    pub fn conv2d(img: [f32; C, H, W], k: [f32; O, C, KH, KW], b: [f32; O]) -> [f32; O, H - KH + 1, W - KW + 1] {
        let out[o, y, x] = sum[c, r, s](img[c, iy, ix] * k[o, c, r, s]) + b[o] where iy = y + r, ix = x + s;
        out
    }

    /// The same without bias, with the affine reads written inline.
    pub fn conv2d_affine(img: [f32; C, H, W], k: [f32; O, C, KH, KW]) -> [f32; O, H - KH + 1, W - KW + 1] {
        let out[o, y, x] = sum[c, r, s](img[c, y + r, x + s] * k[o, c, r, s]);
        out
    }

    pub fn conv1d(x: [f32; L], w: [f32; KW]) -> [f32; L - KW + 1] {
        let y[i] = sum[r](x[i + r] * w[r]);
        y
    }
}

#[test]
fn conv2d_known_values() {
    // One channel, 4x4 image 0..16, kernel [[1, 0], [0, -1]]: every output is
    // img[y, x] - img[y + 1, x + 1] = -5, plus the bias.
    let img = Array3::from_shape_fn((1, 4, 4), |(_, y, x)| (4 * y + x) as f32);
    let k = array![[[[1.0f32, 0.0], [0.0, -1.0]]]];
    let b = array![0.5f32];
    let out = conv2d(&img, &k, &b).unwrap();
    assert_eq!(out, Array3::from_elem((1, 3, 3), -4.5f32));
}

#[test]
fn conv2d_matches_reference() {
    let (c, h, w, o, kh, kw) = (3, 8, 7, 4, 3, 2);
    let img = rand3(c, h, w, 31);
    let k = rand4(o, c, kh, kw, 32);
    let b = rand1(o, 33);
    let out: Array3<f32> = conv2d(&img, &k, &b).unwrap();
    assert_eq!(out.dim(), (o, h - kh + 1, w - kw + 1));
    assert_close(&out, &conv2d_ref(img.view(), k.view(), b.view()), 1e-5);
}

#[test]
fn conv2d_extreme_kernel_sizes() {
    // Kernel as large as the image: a 1x1 output per output channel.
    let img = rand3(2, 5, 4, 34);
    let k = rand4(3, 2, 5, 4, 35);
    let b = rand1(3, 36);
    let out = conv2d(&img, &k, &b).unwrap();
    assert_eq!(out.dim(), (3, 1, 1));
    assert_close(&out, &conv2d_ref(img.view(), k.view(), b.view()), 1e-5);

    // 1x1 kernel: a per-pixel channel mix, output as large as the image.
    let k1 = rand4(3, 2, 1, 1, 37);
    let out1 = conv2d(&img, &k1, &b).unwrap();
    assert_eq!(out1.dim(), (3, 5, 4));
    assert_close(&out1, &conv2d_ref(img.view(), k1.view(), b.view()), 1e-5);
}

#[test]
fn conv2d_accepts_non_contiguous_inputs() {
    let (c, h, w, o, kh, kw) = (3, 9, 6, 2, 2, 3);
    let img = rand3(c, h, w, 38);
    let k = rand4(o, c, kh, kw, 39);
    let b = rand1(o, 40);
    let expected = conv2d_ref(img.view(), k.view(), b.view());

    // Image stored channels-last ([H, W, C]) and viewed as [C, H, W].
    let perm = [1, 2, 0];
    let img_store = permuted_storage3(&img, perm);
    let img_view = img_store.view().permuted_axes(inverse_perm3(perm));
    assert_eq!(img_view, img);
    // Kernel stored as [KH, KW, C, O] and viewed as [O, C, KH, KW].
    let k_store = Array4::from_shape_fn((kh, kw, c, o), |(r, s, ic, oc)| k[[oc, ic, r, s]]);
    let k_view = k_store.view().permuted_axes([3, 2, 0, 1]);
    assert_eq!(k_view, k);
    // Bias read with a stride of 2.
    let b_store = Array1::from_shape_fn(2 * o, |i| if i % 2 == 0 { b[i / 2] } else { f32::NAN });
    let b_view = b_store.slice(s![..;2]);

    let out = conv2d(img_view, k_view, b_view).unwrap();
    assert_close(&out, &expected, 1e-5);
}

#[test]
fn conv2d_affine_reads_agree() {
    let (c, h, w, o, kh, kw) = (2, 7, 7, 3, 3, 3);
    let img = rand3(c, h, w, 41);
    let k = rand4(o, c, kh, kw, 42);
    let zero_bias = Array1::<f32>::zeros(o);
    let out = conv2d_affine(&img, &k).unwrap();
    assert_close(&out, &conv2d_ref(img.view(), k.view(), zero_bias.view()), 1e-5);
    assert_close(&out, &conv2d(&img, &k, &zero_bias).unwrap(), 1e-6);
}

#[test]
fn conv1d_matches_reference() {
    let x = rand1(20, 43);
    let w = rand1(4, 44);
    let y = conv1d(&x, &w).unwrap();
    assert_eq!(y.len(), 17);
    assert_close(&y, &conv1d_ref(x.view(), w.view()), 1e-5);

    let x_store = Array1::from_shape_fn(40, |i| if i % 2 == 0 { x[i / 2] } else { f32::NAN });
    let y2 = conv1d(x_store.slice(s![..;2]), &w).unwrap();
    assert_close(&y2, &y, 1e-6);

    // Moving average of 1..=5 with window 2.
    let ma = conv1d(&array![1.0f32, 2.0, 3.0, 4.0, 5.0], &array![0.5f32, 0.5]).unwrap();
    assert_eq!(ma, array![1.5f32, 2.5, 3.5, 4.5]);
}

// ===========================================================================
// Softmax (max shift, `use std::math::exp`)
// ===========================================================================

einlang! {
    use std::math::exp;

    /// Row-wise softmax, shifted by the row maximum for stability.
    pub fn softmax(x: [f32; N, C]) -> [f32; N, C] {
        let m[n] = max[c](x[n, c]);
        let e[n, c] = exp(x[n, c] - m[n]);
        let y[n, c] = e[n, c] / sum[k](e[n, k]);
        y
    }

    pub fn softmax_f64(x: [f64; N, C]) -> [f64; N, C] {
        let m[n] = max[c](x[n, c]);
        let e[n, c] = exp(x[n, c] - m[n]);
        let y[n, c] = e[n, c] / sum[k](e[n, k]);
        y
    }
}

#[track_caller]
fn assert_rows_sum_to_one(y: &Array2<f32>) {
    for (i, row) in y.outer_iter().enumerate() {
        assert!(row.iter().all(|v| v.is_finite() && *v >= 0.0), "row {i} has a negative or non-finite entry: {row}");
        let total: f32 = row.sum();
        assert!((total - 1.0).abs() < 1e-5, "row {i} sums to {total}");
    }
}

#[test]
fn softmax_matches_reference() {
    let x = rand2(5, 9, 51).mapv(|v| 4.0 * v);
    let y = softmax(&x).unwrap();
    assert_close(&y, &softmax_ref(x.view()), 1e-5);
    assert_rows_sum_to_one(&y);
}

#[test]
fn softmax_is_stable_on_large_values() {
    let x = array![
        [1000.0f32, 1001.0, 1002.0],
        [-1000.0, -1001.0, -1002.0],
        [1000.0, 1000.0, 1000.0],
        [88.0, 0.0, -88.0],
        [1.0e30, 0.0, -1.0e30],
    ];
    let y = softmax(&x).unwrap();
    assert!(y.iter().all(|v| v.is_finite()), "softmax produced inf or NaN: {y}");
    assert_rows_sum_to_one(&y);
    // The first two rows are shifted copies of [0, 1, 2] and [0, -1, -2].
    let e = [1.0f64, (1.0f64).exp(), (2.0f64).exp()];
    let z: f64 = e.iter().sum();
    let first = Array1::from_iter(e.iter().map(|v| (v / z) as f32));
    assert_close(&y.row(0).to_owned(), &first, 1e-6);
    let second = Array1::from_iter(e.iter().map(|v| (v / z) as f32));
    assert_close(&y.row(1).to_owned(), &second.slice(s![..;-1]).to_owned(), 1e-6);
    assert_close(&y.row(2).to_owned(), &Array1::from_elem(3, 1.0f32 / 3.0), 1e-6);
    assert_close(&y, &softmax_ref(x.view()), 1e-6);
    assert_close_scalar(y[[4, 0]], 1.0, 1e-6);
}

#[test]
fn softmax_single_column_is_one() {
    let x = array![[5.0f32], [-1.0e30], [0.0]];
    assert_close(&softmax(&x).unwrap(), &Array2::from_elem((3, 1), 1.0f32), 1e-6);
}

#[test]
fn softmax_accepts_transposed_view() {
    // Softmax over the columns of `x` = transpose of softmax over the rows of `x^T`.
    let x = rand2(6, 4, 52).mapv(|v| 10.0 * v);
    let y = softmax(x.t()).unwrap();
    assert_eq!(y.dim(), (4, 6));
    assert_close(&y, &softmax_ref(x.t()), 1e-5);
    assert_rows_sum_to_one(&y);
}

#[test]
fn softmax_f64_is_accurate() {
    let x = rand2_f64(4, 11, 53).mapv(|v| 30.0 * v + 700.0);
    let y: Array2<f64> = softmax_f64(&x).unwrap();
    assert_close(&y, &softmax_ref_f64(x.view()), 1e-12);
}

// ===========================================================================
// Guards and reductions: where-guards, guarded reductions, max/min/prod,
// all/any, argmax
// ===========================================================================

einlang! {
    /// Upper triangle (diagonal included); 0 below it.
    pub fn upper(m: [f32; N, M]) -> [f32; N, M] {
        let u[i, j] = m[i, j] where i <= j;
        u
    }

    pub fn upper_i32(m: [i32; N, N]) -> [i32; N, N] {
        let u[i, j] = m[i, j] where i <= j;
        u
    }

    /// Sum of the positive entries of each row.
    pub fn positive_row_sum(x: [f32; N, M]) -> [f32; N] {
        let s[i] = sum[j](x[i, j] where x[i, j] > 0.0);
        s
    }

    pub fn row_range(x: [f32; N, M]) -> [f32; N] {
        let r[i] = max[j](x[i, j]) - min[j](x[i, j]);
        r
    }

    pub fn row_argmax(x: [f32; N, M]) -> [i64; N] {
        let a[i] = argmax[j](x[i, j]);
        a
    }

    pub fn row_prod(x: [f32; N, M]) -> [f32; N] {
        let p[i] = prod[j](x[i, j]);
        p
    }

    pub fn row_all_positive(x: [f32; N, M]) -> [bool; N] {
        let p[i] = all[j](x[i, j] > 0.0);
        p
    }

    pub fn row_any_negative(x: [f32; N, M]) -> [bool; N] {
        let p[i] = any[j](x[i, j] < 0.0);
        p
    }
}

#[test]
fn upper_triangle_square_and_rectangular() {
    let m = array![[1.0f32, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]];
    assert_eq!(upper(&m).unwrap(), array![[1.0f32, 2.0, 3.0], [0.0, 5.0, 6.0], [0.0, 0.0, 9.0]]);

    for &(n, mm) in &[(4, 7), (7, 4), (1, 5), (5, 1)] {
        let x = rand2(n, mm, 61 + n as u64);
        assert_eq!(upper(&x).unwrap(), upper_ref(x.view()), "{n}x{mm}");
    }
}

#[test]
fn upper_triangle_of_transposed_view() {
    let x = rand2(5, 8, 62);
    // The guard is on the view's indices, not on the storage's.
    assert_eq!(upper(x.t()).unwrap(), upper_ref(x.t()));
    let xi = rand2_i32(6, 6, 63);
    assert_eq!(upper_i32(xi.t()).unwrap(), upper_ref(xi.t()));
    assert_eq!(upper_i32(&xi).unwrap(), upper_ref(xi.view()));
}

#[test]
fn guarded_reduction_sums_positive_entries() {
    let x = array![[1.0f32, -2.0, 3.0], [-1.0, -2.0, -3.0], [0.0, 0.5, -0.5]];
    assert_eq!(positive_row_sum(&x).unwrap(), array![4.0f32, 0.0, 0.5]);

    let r = rand2(9, 14, 64);
    assert_close(&positive_row_sum(&r).unwrap(), &positive_row_sum_ref(r.view()), 1e-6);

    let wide = spread_cols(&r, f32::NAN);
    assert_close(&positive_row_sum(wide.slice(s![.., ..;2])).unwrap(), &positive_row_sum_ref(r.view()), 1e-6);
}

#[test]
fn row_max_minus_row_min() {
    let x = array![[3.0f32, -1.0, 2.0], [-5.0, -7.0, -6.0], [4.0, 4.0, 4.0]];
    assert_eq!(row_range(&x).unwrap(), array![4.0f32, 2.0, 0.0]);

    let r = rand2(8, 5, 65);
    assert_eq!(row_range(&r).unwrap(), row_range_ref(r.view()));
    assert_eq!(row_range(r.t()).unwrap(), row_range_ref(r.t()));
}

#[test]
fn argmax_per_row_takes_the_first_on_ties() {
    let x = array![
        [3.0f32, 7.0, 7.0, 1.0],
        [5.0, 5.0, 5.0, 5.0],
        [-1.0, -0.5, -0.5, -2.0],
        [0.0, 1.0, 2.0, 9.0],
        [9.0, 1.0, 2.0, 9.0],
    ];
    let a: Array1<i64> = row_argmax(&x).unwrap();
    assert_eq!(a, array![1i64, 0, 1, 3, 0]);
    assert_eq!(a, argmax_rows_ref(x.view()));

    let r = rand2(10, 13, 66);
    assert_eq!(row_argmax(&r).unwrap(), argmax_rows_ref(r.view()));
    assert_eq!(row_argmax(r.t()).unwrap(), argmax_rows_ref(r.t()));
}

#[test]
fn prod_all_any_per_row() {
    let x = array![[1.0f32, 2.0, 3.0], [-1.0, 2.0, 0.5], [0.25, 4.0, -2.0]];
    assert_eq!(row_prod(&x).unwrap(), array![6.0f32, -1.0, -2.0]);
    assert_eq!(row_all_positive(&x).unwrap(), array![true, false, false]);
    assert_eq!(row_any_negative(&x).unwrap(), array![false, true, true]);
    // Columns of x, through a transposed view.
    assert_eq!(row_prod(x.t()).unwrap(), array![-0.25f32, 16.0, -3.0]);
    assert_eq!(row_all_positive(x.t()).unwrap(), array![false, true, false]);
    assert_eq!(row_any_negative(x.t()).unwrap(), array![true, false, true]);
}

// ===========================================================================
// Elementwise: tensor-scalar arithmetic, index values, `if`, blocks, casts,
// array literals, std::math functions
// ===========================================================================

einlang! {
    use std::math::{max, sqrt, tanh};

    pub fn affine(x: [f32; N, M], s: f32) -> [f32; N, M] {
        let z = x * s + 1.0;
        z
    }

    pub fn add(x: [f32; N, M], y: [f32; N, M]) -> [f32; N, M] {
        let z = x + y;
        z
    }

    pub fn double_plus_half(x: [f64; N]) -> [f64; N] {
        let z = x * 2.0 + 0.5;
        z
    }

    pub fn with_index(x: [f32; N, M]) -> [f32; N, M] {
        let y[i, j] = x[i, j] + (i as f32) * 10.0 + (j as f32);
        y
    }

    pub fn leaky_relu(x: [f32; N]) -> [f32; N] {
        let y[i] = if x[i] > 0.0 { x[i] } else { 0.1 * x[i] };
        y
    }

    pub fn twice_plus_one(x: [f32; N]) -> [f32; N] {
        let y[i] = {
            let a = x[i] * 2.0;
            a + 1.0
        };
        y
    }

    pub fn widen_half(x: [f32; N]) -> [f64; N] {
        let y[i] = (x[i] as f64) * 0.5;
        y
    }

    pub fn mix3(x: [f32; N, 3]) -> [f32; N] {
        let w = [0.5, 0.25, 0.25];
        let y[i] = sum[j](x[i, j] * w[j]);
        y
    }

    pub fn clamp_below(x: [f32; N], lo: f32) -> [f32; N] {
        let y[i] = max(x[i], lo);
        y
    }

    pub fn row_norm(x: [f32; N, M]) -> [f32; N] {
        let r[i] = sqrt(sum[j](x[i, j] * x[i, j]));
        r
    }

    pub fn tanh_scaled(x: [f32; N], s: f32) -> [f32; N] {
        let y[i] = tanh(x[i] * s);
        y
    }
}

#[test]
fn tensor_scalar_arithmetic() {
    let x = array![[1.0f32, -2.0, 0.5], [0.0, 4.0, -1.5]];
    assert_eq!(affine(&x, 2.0).unwrap(), array![[3.0f32, -3.0, 2.0], [1.0, 9.0, -2.0]]);
    assert_eq!(affine(&x, 0.0).unwrap(), Array2::from_elem((2, 3), 1.0f32));

    let r = rand2(7, 9, 71);
    assert_close(&affine(&r, -1.5).unwrap(), &r.mapv(|v| v * -1.5 + 1.0), 1e-6);
    assert_close(&affine(r.t(), 3.0).unwrap(), &r.t().mapv(|v| v * 3.0 + 1.0), 1e-6);

    let x64 = array![1.0f64, -0.25, 1.0e10];
    assert_eq!(double_plus_half(&x64).unwrap(), array![2.5f64, 0.0, 2.0e10 + 0.5]);
}

#[test]
fn elementwise_sum_of_equal_shapes() {
    let x = rand2(5, 6, 72);
    let y = rand2(5, 6, 73);
    assert_close(&add(&x, &y).unwrap(), &(&x + &y), 1e-7);
    // Mixed layouts: x as stored, y from a transposed copy.
    let yt = transposed(&y);
    assert_close(&add(&x, yt.t()).unwrap(), &(&x + &y), 1e-7);
    let wide = spread_cols(&x, f32::NAN);
    assert_close(&add(wide.slice(s![.., ..;2]), &y).unwrap(), &(&x + &y), 1e-7);
}

#[test]
fn index_variables_are_values() {
    let x = Array2::<f32>::zeros((3, 4));
    let y = with_index(&x).unwrap();
    assert_eq!(y, Array2::from_shape_fn((3, 4), |(i, j)| (10 * i + j) as f32));
    // Indices are the view's, not the storage's.
    let r = rand2(4, 3, 74);
    let expected = Array2::from_shape_fn((3, 4), |(i, j)| r[[j, i]] + (10 * i + j) as f32);
    assert_close(&with_index(r.t()).unwrap(), &expected, 1e-6);
}

#[test]
fn conditionals_blocks_and_casts() {
    let x = array![2.0f32, -2.0, 0.0, -10.0];
    assert_close(&leaky_relu(&x).unwrap(), &array![2.0f32, -0.2, 0.0, -1.0], 1e-7);
    assert_eq!(twice_plus_one(&x).unwrap(), array![5.0f32, -3.0, 1.0, -19.0]);
    let w: Array1<f64> = widen_half(&x).unwrap();
    assert_eq!(w, array![1.0f64, -1.0, 0.0, -5.0]);

    // Half of the smallest f32 subnormal is 0 in f32 but not in f64: the cast
    // happens before the multiplication.
    let tiny = array![f32::from_bits(1)];
    assert_eq!(widen_half(&tiny).unwrap()[0], f64::from(f32::from_bits(1)) * 0.5);
    assert!(widen_half(&tiny).unwrap()[0] > 0.0);

    let r = rand1(12, 75);
    let store = Array1::from_shape_fn(24, |i| if i % 2 == 0 { r[i / 2] } else { f32::NAN });
    assert_close(&leaky_relu(store.slice(s![..;2])).unwrap(), &r.mapv(|v| if v > 0.0 { v } else { 0.1 * v }), 1e-7);
}

#[test]
fn array_literal_weights() {
    let x = array![[4.0f32, 8.0, 0.0], [2.0, 2.0, 2.0], [-4.0, 0.0, 4.0]];
    assert_eq!(mix3(&x).unwrap(), array![4.0f32, 2.0, -1.0]);
    // [N, 3] from a transposed [3, N] array.
    let r = rand2(3, 5, 76);
    let expected = Array1::from_shape_fn(5, |i| 0.5 * r[[0, i]] + 0.25 * r[[1, i]] + 0.25 * r[[2, i]]);
    assert_close(&mix3(r.t()).unwrap(), &expected, 1e-6);
}

#[test]
fn std_math_functions() {
    let x = array![-1.0f32, 0.5, 2.0, -0.25];
    assert_eq!(clamp_below(&x, 0.0).unwrap(), array![0.0f32, 0.5, 2.0, 0.0]);
    assert_eq!(clamp_below(&x, 1.0).unwrap(), array![1.0f32, 1.0, 2.0, 1.0]);

    let m = array![[3.0f32, 4.0], [0.0, 0.0], [-5.0, 12.0]];
    assert_close(&row_norm(&m).unwrap(), &array![5.0f32, 0.0, 13.0], 1e-6);
    let r = rand2(6, 10, 77);
    let expected = Array1::from_shape_fn(10, |j| r.column(j).iter().map(|v| v * v).sum::<f32>().sqrt());
    assert_close(&row_norm(r.t()).unwrap(), &expected, 1e-5);

    let t = tanh_scaled(&x, 2.0).unwrap();
    assert_close(&t, &x.mapv(|v| (2.0 * v).tanh()), 1e-6);
}

// ===========================================================================
// Functions calling functions: plain calls, calls inside indexed bodies,
// rank-reducing arguments; dense + ReLU written with where-bindings
// ===========================================================================

einlang! {
    /// Dense layer with ReLU, written with where-bindings.
    pub fn dense_relu(x: [f32; B, I], w: [f32; I, O], b: [f32; O]) -> [f32; B, O] {
        let y[n, o] = act where z = sum[i](x[n, i] * w[i, o]) + b[o], act = if z > 0.0 { z } else { 0.0 };
        y
    }

    /// Two dense layers, each a call.
    pub fn mlp2(x: [f32; B, I], w1: [f32; I, H], b1: [f32; H], w2: [f32; H, O], b2: [f32; O]) -> [f32; B, O] {
        let hidden = dense_relu(x, w1, b1);
        let y = dense_relu(hidden, w2, b2);
        y
    }

    pub fn dot(u: [f32; K], v: [f32; K]) -> f32 {
        sum[k](u[k] * v[k])
    }

    /// A call inside an indexed body; `m[i]` is row i (rank 2 -> rank 1).
    pub fn matvec(m: [f32; N, K], v: [f32; K]) -> [f32; N] {
        let y[i] = dot(m[i], v);
        y
    }

    pub fn sum_sq(m: [f32; R, C]) -> f32 {
        let s = sum[i, j](m[i, j] * m[i, j]);
        s
    }

    /// `x[n]` is a rank-2 slab of a rank-3 tensor.
    pub fn batch_sum_sq(x: [f32; B, R, C]) -> [f32; B] {
        let y[n] = sum_sq(x[n]);
        y
    }

    pub fn outer(u: [f32; N], v: [f32; M]) -> [f32; N, M] {
        let o[i, j] = u[i] * v[j];
        o
    }

    /// trace(u v^T) = u . v, through a call.
    pub fn trace_of_outer(u: [f32; N], v: [f32; N]) -> f32 {
        let o = outer(u, v);
        let t = sum[i](o[i, i]);
        t
    }

    /// The same with the outer product defined inline.
    pub fn trace_of_outer_inline(u: [f32; N], v: [f32; N]) -> f32 {
        let o[i, j] = u[i] * v[j];
        let t = sum[i](o[i, i]);
        t
    }
}

#[test]
fn dense_relu_with_where_bindings() {
    let x = array![[1.0f32, 2.0], [-1.0, 0.5]];
    let w = array![[1.0f32, -1.0, 0.5], [1.0, 1.0, -2.0]];
    let b = array![0.0f32, -1.5, 0.25];
    // z = [[3, -0.5, -3.25], [-0.5, 0, -1.25]]: only one entry survives the ReLU.
    assert_eq!(dense_relu(&x, &w, &b).unwrap(), array![[3.0f32, 0.0, 0.0], [0.0, 0.0, 0.0]]);

    let (n, i, o) = (6, 10, 7);
    let x = rand2(n, i, 81);
    let w = rand2(i, o, 82);
    let b = rand1(o, 83);
    let expected = dense_relu_ref(x.view(), w.view(), b.view());
    // The data must exercise both branches of the ReLU.
    assert!(expected.iter().any(|&v| v == 0.0) && expected.iter().any(|&v| v > 0.0));
    let y = dense_relu(&x, &w, &b).unwrap();
    assert_close(&y, &expected, 1e-5);
    assert!(y.iter().all(|&v| v >= 0.0));

    // Weights stored as [O, I] (the PyTorch layout) and passed as a transposed view.
    let wt = transposed(&w);
    assert_close(&dense_relu(&x, wt.t(), &b).unwrap(), &expected, 1e-5);
}

#[test]
fn calls_between_functions() {
    let (n, i, h, o) = (5, 8, 6, 3);
    let x = rand2(n, i, 84);
    let w1 = rand2(i, h, 85);
    let b1 = rand1(h, 86);
    let w2 = rand2(h, o, 87);
    let b2 = rand1(o, 88);
    let hidden = dense_relu_ref(x.view(), w1.view(), b1.view());
    let expected = dense_relu_ref(hidden.view(), w2.view(), b2.view());
    assert_close(&mlp2(&x, &w1, &b1, &w2, &b2).unwrap(), &expected, 1e-5);
}

#[test]
fn call_inside_indexed_body_with_row_access() {
    let m = rand2(7, 9, 89);
    let v = rand1(9, 90);
    let expected = matmul_ref_f32(m.view(), v.view().insert_axis(Axis(1))).remove_axis(Axis(1));
    let y = matvec(&m, &v).unwrap();
    assert_close(&y, &expected, 1e-5);
    // Rows of a transposed view are strided.
    let mt = transposed(&m);
    assert_close(&matvec(mt.t(), &v).unwrap(), &expected, 1e-5);

    assert_close_scalar(dot(&v, &v).unwrap(), v.iter().map(|a| a * a).sum::<f32>(), 1e-5);
}

#[test]
fn call_with_rank_reducing_access() {
    let x = rand3(4, 3, 5, 91);
    let expected = Array1::from_shape_fn(4, |n| x.index_axis(Axis(0), n).iter().map(|v| v * v).sum::<f32>());
    let y: Array1<f32> = batch_sum_sq(&x).unwrap();
    assert_close(&y, &expected, 1e-5);

    // Slabs of a permuted view are strided rank-2 views.
    let perm = [2, 0, 1];
    let store = permuted_storage3(&x, perm);
    let view = store.view().permuted_axes(inverse_perm3(perm));
    assert_eq!(view, x);
    assert_close(&batch_sum_sq(view).unwrap(), &expected, 1e-5);
}

#[test]
fn trace_of_outer_product_is_dot_product() {
    let u = array![1.0f32, 2.0, 3.0];
    let v = array![4.0f32, -5.0, 6.0];
    assert_eq!(outer(&u, &v).unwrap(), outer_ref(u.view(), v.view()));
    assert_eq!(trace_of_outer(&u, &v).unwrap(), 12.0);
    assert_eq!(trace_of_outer_inline(&u, &v).unwrap(), 12.0);

    let u = rand1(17, 92);
    let v = rand1(17, 93);
    let d: f32 = u.iter().zip(v.iter()).map(|(a, b)| a * b).sum();
    assert_close_scalar(trace_of_outer(&u, &v).unwrap(), d, 1e-5);
    assert_close_scalar(trace_of_outer_inline(&u, &v).unwrap(), d, 1e-5);

    // Non-square outer product.
    let w = rand1(4, 94);
    let o = outer(&u, &w).unwrap();
    assert_eq!(o.dim(), (17, 4));
    assert_eq!(o, outer_ref(u.view(), w.view()));
}

// ===========================================================================
// Strided reads: 2x2 max-pool with stride 2
// ===========================================================================

einlang! {
    pub fn maxpool2(x: [f32; H, W]) -> [f32; (H - 2) / 2 + 1, (W - 2) / 2 + 1] {
        let p[i, j] = max[di in 0..2, dj in 0..2](x[2 * i + di, 2 * j + dj]);
        p
    }
}

#[test]
fn maxpool_known_values() {
    let x = Array2::from_shape_fn((4, 4), |(i, j)| (4 * i + j + 1) as f32);
    assert_eq!(maxpool2(&x).unwrap(), array![[6.0f32, 8.0], [14.0, 16.0]]);
    // All negative: the maximum must not start from 0.
    let neg = x.mapv(|v| -v);
    assert_eq!(maxpool2(&neg).unwrap(), array![[-1.0f32, -3.0], [-9.0, -11.0]]);
    assert_eq!(maxpool2(&array![[1.0f32, 5.0], [-2.0, 3.0]]).unwrap(), array![[5.0f32]]);
}

#[test]
fn maxpool_odd_sizes_drop_the_trailing_row_and_column() {
    for &(h, w) in &[(7, 6), (6, 7), (5, 5), (2, 9), (8, 8)] {
        let x = rand2(h, w, 101 + (h * w) as u64);
        let p = maxpool2(&x).unwrap();
        assert_eq!(p.dim(), (h / 2, w / 2), "{h}x{w}");
        assert_eq!(p, maxpool2_ref(x.view()), "{h}x{w}");
    }
}

#[test]
fn maxpool_of_strided_views() {
    let x = rand2(6, 10, 102);
    let wide = spread_cols(&x, f32::NAN);
    assert_eq!(maxpool2(wide.slice(s![.., ..;2])).unwrap(), maxpool2_ref(x.view()));
    assert_eq!(maxpool2(x.t()).unwrap(), maxpool2_ref(x.t()));
}

// ===========================================================================
// Scalar results
// ===========================================================================

einlang! {
    pub fn total(x: [f32; N, M]) -> f32 {
        let s = sum[i, j](x[i, j]);
        s
    }

    pub fn largest(x: [f32; N, M]) -> f32 {
        let m = max[i, j](x[i, j]);
        m
    }

    pub fn count_positive(x: [f32; N]) -> i32 {
        let c = sum[i](if x[i] > 0.0 { 1 } else { 0 });
        c
    }

    pub fn dot_f64(a: [f64; N], b: [f64; N]) -> f64 {
        sum[i](a[i] * b[i])
    }
}

#[test]
fn scalar_results() {
    let x = array![[1.0f32, 2.0, 3.0], [4.0, 5.0, -6.0]];
    let t: f32 = total(&x).unwrap();
    assert_eq!(t, 9.0);
    assert_eq!(largest(&x).unwrap(), 5.0);
    assert_eq!(largest(&x.mapv(|v| v - 100.0)).unwrap(), -95.0);
    assert_eq!(total(x.t()).unwrap(), 9.0);

    let r = rand2(11, 13, 111);
    assert_close_scalar(total(&r).unwrap(), r.iter().map(|&v| f64::from(v)).sum::<f64>() as f32, 1e-4);
    assert_eq!(largest(r.t()).unwrap(), r.iter().cloned().fold(f32::NEG_INFINITY, f32::max));

    let c: i32 = count_positive(&array![1.0f32, -1.0, 0.0, 2.0, 3.0]).unwrap();
    assert_eq!(c, 3);
    let v = rand1(50, 112);
    let store = Array1::from_shape_fn(100, |i| if i % 2 == 0 { v[i / 2] } else { -1.0 });
    assert_eq!(count_positive(store.slice(s![..;2])).unwrap(), v.iter().filter(|&&a| a > 0.0).count() as i32);

    let a = rand1_f64(40, 113);
    let b = rand1_f64(40, 114);
    let d: f64 = dot_f64(&a, &b).unwrap();
    assert_close_scalar(d, a.dot(&b), 1e-12);
}

// ===========================================================================
// Integer kernels
// ===========================================================================

einlang! {
    pub fn int_affine(x: [i32; N, M]) -> [i32; N, M] {
        let y[i, j] = x[i, j] * 3 - 7;
        y
    }

    /// Truncating division and remainder, as in Rust.
    pub fn div_rem(x: [i32; N]) -> [i32; N] {
        let y[i] = x[i] / 4 * 10 + x[i] % 4;
        y
    }

    pub fn col_max_i32(x: [i32; N, M]) -> [i32; M] {
        let m[j] = max[i](x[i, j]);
        m
    }

    /// Index variables are i64, so they add to i64 data without a cast.
    pub fn plus_index(x: [i64; N]) -> [i64; N] {
        let y[i] = x[i] + i;
        y
    }

    pub fn sum_sq_i32(x: [i32; N]) -> i32 {
        let s = sum[i](x[i] * x[i]);
        s
    }
}

#[test]
fn integer_kernels_are_exact() {
    let x = rand2_i32(5, 7, 121);
    assert_eq!(int_affine(&x).unwrap(), x.mapv(|v| v * 3 - 7));
    assert_eq!(int_affine(x.t()).unwrap(), x.t().mapv(|v| v * 3 - 7));

    let d = array![7i32, -7, 8, -8, 3, -3, 0];
    assert_eq!(div_rem(&d).unwrap(), d.mapv(|v| v / 4 * 10 + v % 4));
    assert_eq!(div_rem(&d).unwrap(), array![13i32, -13, 20, -20, 3, -3, 0]);

    let expected = Array1::from_shape_fn(7, |j| *x.column(j).iter().max().unwrap());
    assert_eq!(col_max_i32(&x).unwrap(), expected);
    assert_eq!(col_max_i32(&array![[-5i32, -9], [-6, -8]]).unwrap(), array![-5i32, -8]);

    assert_eq!(plus_index(&array![10i64, 10, 10, -3]).unwrap(), array![10i64, 11, 12, 0]);

    let v = rand1_i32(30, 122);
    assert_eq!(sum_sq_i32(&v).unwrap(), v.iter().map(|a| a * a).sum::<i32>());
    let store = Array1::from_shape_fn(60, |i| if i % 2 == 0 { v[i / 2] } else { 1000 });
    assert_eq!(sum_sq_i32(store.slice(s![..;2])).unwrap(), v.iter().map(|a| a * a).sum::<i32>());
}

mod literal_slots {
    use einlang::einlang;
    use einlang::ndarray::{array, Array2};

    einlang! {
        /// Writes column 1 of an `[N, 2]` result; column 0 stays zero.
        pub fn second_column(a: [f32; N]) -> [f32; N, 2] {
            let y[i, 1] = a[i] * 2.0;
            y
        }
    }

    #[test]
    fn literal_slot_writes_one_position() {
        let a = array![1.0f32, -2.0, 3.5];
        let y = second_column(&a).unwrap();
        let mut expected = Array2::<f32>::zeros((3, 2));
        for i in 0..3 {
            expected[[i, 1]] = 2.0 * a[i];
        }
        assert_eq!(y, expected);
    }
}

mod row_sums {
    use einlang::einlang;
    use einlang::ndarray::Array2;

    einlang! {
        /// Prefix sums along rows: the sum's range depends on the row index.
        pub fn prefix(x: [f64; R, C]) -> [f64; R, C] {
            let y[i, j in 0..C] = sum[k in 0..j + 1](x[i, k]);
            y
        }

        /// A sum plus a term outside it, and a sum minus one.
        pub fn shifted(x: [f64; R, C], w: [f64; C, D], b: [f64; D]) -> ([f64; R, D], [f64; R, D]) {
            let p[i, d] = b[d] + sum[c](x[i, c] * w[c, d] * 0.5);
            let m[i, d] = sum[c](x[i, c] * w[c, d] * 0.5) - b[d];
            (p, m)
        }
    }

    #[test]
    fn prefix_sums_with_a_triangular_range() {
        let x = Array2::from_shape_fn((3, 5), |(i, j)| (i * 5 + j) as f64 - 4.0);
        let y = prefix(&x).unwrap();
        for i in 0..3 {
            for j in 0..5 {
                let want: f64 = (0..=j).map(|k| x[[i, k]]).sum();
                assert_eq!(y[[i, j]], want);
            }
        }
    }

    #[test]
    fn sums_with_terms_outside() {
        let x = Array2::from_shape_fn((4, 3), |(i, j)| (i as f64) * 0.5 - j as f64);
        let w = Array2::from_shape_fn((3, 2), |(i, j)| (i + j) as f64 * 0.25 + 1.0);
        let b = einlang::ndarray::array![0.5, -1.5];
        let (p, m) = shifted(&x, &w, &b).unwrap();
        for i in 0..4 {
            for d in 0..2 {
                let s: f64 = (0..3).map(|c| x[[i, c]] * w[[c, d]] * 0.5).sum();
                assert!((p[[i, d]] - (b[d] + s)).abs() < 1e-12);
                assert!((m[[i, d]] - (s - b[d])).abs() < 1e-12);
            }
        }
    }
}

mod padding {
    use einlang::einlang;
    use einlang::ndarray::Array1;

    einlang! {
        /// A "same" 1-D convolution: reads outside the signal are guarded
        /// by a condition and must not shrink the kernel's range.
        pub fn conv_same(x: [f32; N], w: [f32; K]) -> [f32; N] {
            let y[o in 0..N] = sum[r](if i >= 0 && i < N { x[i] } else { 0.0 } * w[r]) where i = o + r - 1;
            y
        }
    }

    #[test]
    fn guarded_reads_keep_the_full_kernel() {
        let x = Array1::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0]);
        let w = Array1::from_vec(vec![0.5f32, 1.0, -1.0]);
        let y = conv_same(&x, &w).unwrap();
        for o in 0..5i64 {
            let mut want = 0.0f32;
            for r in 0..3i64 {
                let i = o + r - 1;
                if (0..5).contains(&i) {
                    want += x[i as usize] * w[r as usize];
                }
            }
            assert_eq!(y[o as usize], want, "o = {o}");
        }
    }
}

// ===========================================================================
// Prefix reductions whose bounds mention the output index
// ===========================================================================

einlang! {
    /// Running sums with no range for `i`: it comes from the read `x[i - k]`
    /// over `k in 0..i + 1`.
    pub fn running_sum(x: [f64; N]) -> [f64; N] {
        let c[i] = sum[k in 0..i + 1](x[i - k]);
        c
    }

    /// Running maxima along each row of a matrix.
    pub fn running_row_max(m: [i32; R, C]) -> [i32; R, C] {
        let c[i, j] = max[k in 0..j + 1](m[i, j - k]);
        c
    }
}

#[test]
fn prefix_reductions_infer_the_output_range() {
    let x = array![1.0f64, -2.0, 4.5, 0.25, 3.0];
    let mut acc = 0.0;
    let want: Vec<f64> = x
        .iter()
        .map(|v| {
            acc += v;
            acc
        })
        .collect();
    assert_eq!(running_sum(&x).unwrap().to_vec(), want);
    let m = array![[3, 1, 4, 1], [5, 9, 2, 6]];
    let got = running_row_max(&m).unwrap();
    for r in 0..2 {
        let mut best = i32::MIN;
        for c in 0..4 {
            best = best.max(m[[r, c]]);
            assert_eq!(got[[r, c]], best);
        }
    }
}
