//! Wrong shapes at the boundary of generated functions return
//! `Err(einlang::Error)`, never a panic, and the error says what was wrong.
//!
//! Symbolic dimensions are bound from the first parameter that mentions them
//! and checked against every later use at entry (DESIGN.md, "Public Rust
//! API"), which fixes the `param`, `axis`, `expected` and `found` fields.

mod common;

use common::*;
use einlang::einlang;
use einlang::ndarray::{array, s, Array1, Array2, Array3, Array4};
use einlang::Error;

einlang! {
    /// A binding nobody reads still fails when its read would: it is not
    /// dropped (`opt::dead` keeps what may fail).
    pub fn unread_binding(x: [f32; N], j: i64) -> f32 {
        let unused = x[j];
        1.0
    }

    pub fn matmul(a: [f32; M, K], b: [f32; K, N]) -> [f32; M, N] {
        let c[i, j] = sum[k](a[i, k] * b[k, j]);
        c
    }

    pub fn bmm_nt(a: [f32; B, M, K], b: [f32; B, N, K]) -> [f32; B, M, N] {
        let c[bb, i, j] = sum[k](a[bb, i, k] * b[bb, j, k]);
        c
    }

    pub fn conv2d(img: [f32; C, H, W], k: [f32; O, C, KH, KW], b: [f32; O]) -> [f32; O, H - KH + 1, W - KW + 1] {
        let out[o, y, x] = sum[c, r, s](img[c, iy, ix] * k[o, c, r, s]) + b[o] where iy = y + r, ix = x + s;
        out
    }

    /// A literal dimension.
    pub fn luma(rgb: [f32; 3]) -> f32 {
        let w = [0.25, 0.5, 0.25];
        let y = sum[c](rgb[c] * w[c]);
        y
    }

    /// A literal dimension after a symbolic one.
    pub fn luma_rows(px: [f32; N, 3]) -> [f32; N] {
        let w = [0.25, 0.5, 0.25];
        let y[i] = sum[c](px[i, c] * w[c]);
        y
    }

    pub fn add(x: [f32; N, M], y: [f32; N, M]) -> [f32; N, M] {
        let z = x + y;
        z
    }

    /// One symbol on two axes of one parameter.
    pub fn diag_sum(m: [f32; N, N]) -> f32 {
        let t = sum[i](m[i, i]);
        t
    }

    /// A range wider than the data unless `M >= 2`: checked at run time.
    pub fn first_two_cols(x: [f32; N, M]) -> [f32; N, 2] {
        let y[i, j in 0..2] = x[i, j];
        y
    }

    /// The mismatch is only visible inside the call to `matmul`.
    pub fn chain(a: [f32; M, K], b: [f32; P, N]) -> [f32; M, N] {
        let c = matmul(a, b);
        c
    }
}

/// The fields of an `Error::Shape` and its `Display` text; fails the test on
/// `Ok` and on any other error.
#[track_caller]
fn shape_error<T: std::fmt::Debug>(r: Result<T, Error>) -> (String, String, usize, String, usize, usize, String) {
    let e = match r {
        Ok(v) => panic!("expected Err(Error::Shape {{ .. }}), got Ok({v:?})"),
        Err(e) => e,
    };
    let text = e.to_string();
    match e {
        Error::Shape { function, param, axis, symbol, expected, found } => {
            (function, param, axis, symbol, expected, found, text)
        }
        other => panic!("expected Error::Shape, got {other:?} ({text})"),
    }
}

#[test]
fn matmul_with_mismatched_inner_dimension_is_a_shape_error() {
    let a = Array2::<f32>::ones((3, 4));
    let b = Array2::<f32>::ones((5, 2));
    let (function, param, axis, symbol, expected, found, text) = shape_error(matmul(&a, &b));
    assert_eq!(function, "matmul");
    assert_eq!(param, "b");
    assert_eq!(axis, 0);
    assert_eq!(symbol, "K");
    assert_eq!((expected, found), (4, 5));
    for part in ["matmul", "`b`", "`K`", "4", "5"] {
        assert!(text.contains(part), "error message {text:?} does not mention {part}");
    }
}

#[test]
fn matmul_mismatch_through_transposed_view() {
    // a.t() is 4x3, so K = 3 while b has 4 rows.
    let a = Array2::<f32>::ones((3, 4));
    let b = Array2::<f32>::ones((4, 2));
    let (function, param, axis, symbol, expected, found, _) = shape_error(matmul(a.t(), &b));
    assert_eq!((function.as_str(), param.as_str(), axis, symbol.as_str()), ("matmul", "b", 0, "K"));
    assert_eq!((expected, found), (3, 4));
    // The same operands the right way round are fine.
    assert_eq!(matmul(&a, &b).unwrap(), Array2::from_elem((3, 2), 4.0f32));
}

#[test]
fn batched_matmul_mismatches() {
    let a = Array3::<f32>::ones((2, 3, 4));
    // Batch differs.
    let (_, param, axis, symbol, expected, found, text) = shape_error(bmm_nt(&a, &Array3::<f32>::ones((3, 5, 4))));
    assert_eq!((param.as_str(), axis, symbol.as_str(), expected, found), ("b", 0, "B", 2, 3));
    assert!(text.contains("bmm_nt") && text.contains("`B`"), "{text}");
    // Inner dimension differs.
    let (_, param, axis, symbol, expected, found, _) = shape_error(bmm_nt(&a, &Array3::<f32>::ones((2, 5, 6))));
    assert_eq!((param.as_str(), axis, symbol.as_str(), expected, found), ("b", 2, "K", 4, 6));
}

#[test]
fn conv_with_kernel_larger_than_image_is_an_error() {
    let img = Array3::<f32>::ones((1, 3, 3));
    let b = Array1::<f32>::zeros(1);
    // H - KH + 1 or W - KW + 1 is negative.
    for (kh, kw) in [(5, 5), (5, 2), (2, 6), (9, 1)] {
        let k = Array4::<f32>::ones((1, 1, kh, kw));
        match conv2d(&img, &k, &b) {
            Err(e @ (Error::Extent { .. } | Error::Shape { .. })) => {
                let text = e.to_string();
                assert!(text.contains("conv2d"), "message {text:?} does not name the function");
            }
            other => panic!("{kh}x{kw} kernel on a 3x3 image: expected an extent error, got {other:?}"),
        }
    }
    // One larger than the image: the extent is 0, which is an empty result, not an error.
    let k = Array4::<f32>::ones((1, 1, 4, 2));
    assert_eq!(conv2d(&img, &k, &b).unwrap().dim(), (1, 0, 2));
    // Kernel exactly as large as the image is fine.
    let k = Array4::<f32>::ones((1, 1, 3, 3));
    assert_eq!(conv2d(&img, &k, &b).unwrap(), Array3::from_elem((1, 1, 1), 9.0f32));
}

#[test]
fn conv_channel_and_bias_mismatches() {
    let img = Array3::<f32>::ones((2, 5, 5));
    let k = Array4::<f32>::ones((4, 3, 3, 3));
    let (function, param, axis, symbol, expected, found, _) = shape_error(conv2d(&img, &k, &Array1::zeros(4)));
    assert_eq!(
        (function.as_str(), param.as_str(), axis, symbol.as_str(), expected, found),
        ("conv2d", "k", 1, "C", 2, 3)
    );

    let k = Array4::<f32>::ones((4, 2, 3, 3));
    let (_, param, axis, symbol, expected, found, text) = shape_error(conv2d(&img, &k, &Array1::zeros(5)));
    assert_eq!((param.as_str(), axis, symbol.as_str(), expected, found), ("b", 0, "O", 4, 5));
    assert!(text.contains("`b`") && text.contains("`O`"), "{text}");
}

#[test]
fn literal_dimension_given_the_wrong_length() {
    let (function, param, axis, symbol, expected, found, text) = shape_error(luma(&array![1.0f32, 2.0, 3.0, 4.0]));
    assert_eq!((function.as_str(), param.as_str(), axis), ("luma", "rgb", 0));
    assert_eq!(symbol, "3");
    assert_eq!((expected, found), (3, 4));
    assert!(text.contains("luma") && text.contains("`rgb`"), "{text}");
    assert!(luma(&Array1::<f32>::zeros(2)).is_err());
    assert!(luma(&Array1::<f32>::zeros(0)).is_err());
    assert_eq!(luma(&array![4.0f32, 2.0, 8.0]).unwrap(), 4.0);

    let (_, param, axis, symbol, expected, found, _) = shape_error(luma_rows(&Array2::<f32>::zeros((5, 4))));
    assert_eq!((param.as_str(), axis, symbol.as_str(), expected, found), ("px", 1, "3", 3, 4));
    // A strided view of the right length is fine.
    let wide = Array2::from_shape_fn((2, 6), |(i, j)| if j % 2 == 0 { (i + j) as f32 } else { f32::NAN });
    assert_eq!(luma_rows(wide.slice(s![.., ..;2])).unwrap(), array![2.0f32, 3.0]);
}

#[test]
fn elementwise_operands_of_different_shapes() {
    let x = Array2::<f32>::zeros((3, 4));
    let (_, param, axis, symbol, expected, found, _) = shape_error(add(&x, &Array2::zeros((3, 5))));
    assert_eq!((param.as_str(), axis, symbol.as_str(), expected, found), ("y", 1, "M", 4, 5));
    let (_, param, axis, symbol, expected, found, _) = shape_error(add(&x, &Array2::zeros((2, 4))));
    assert_eq!((param.as_str(), axis, symbol.as_str(), expected, found), ("y", 0, "N", 3, 2));
    // The transpose has the other shape.
    assert!(add(&x, x.t()).is_err());
}

#[test]
fn one_symbol_on_two_axes() {
    let (_, param, axis, symbol, expected, found, _) = shape_error(diag_sum(&Array2::<f32>::ones((3, 4))));
    assert_eq!((param.as_str(), axis, symbol.as_str(), expected, found), ("m", 1, "N", 3, 4));
    assert_eq!(diag_sum(&Array2::<f32>::ones((4, 4))).unwrap(), 4.0);
}

#[test]
fn range_wider_than_the_data_is_an_error() {
    let x = array![[1.0f32, 2.0, 3.0], [4.0, 5.0, 6.0]];
    assert_eq!(first_two_cols(&x).unwrap(), array![[1.0f32, 2.0], [4.0, 5.0]]);
    assert_eq!(first_two_cols(x.slice(s![.., 1..])).unwrap(), array![[2.0f32, 3.0], [5.0, 6.0]]);
    // Only one column: reading column 1 would be out of bounds.
    let r = first_two_cols(&array![[1.0f32], [2.0]]);
    assert!(
        matches!(r, Err(Error::Index { .. } | Error::Extent { .. } | Error::Shape { .. })),
        "expected an error, got {r:?}"
    );
    assert!(first_two_cols(&Array2::<f32>::zeros((3, 0))).is_err());
}

#[test]
fn mismatch_inside_a_nested_call_is_an_error() {
    let a = Array2::<f32>::ones((2, 3));
    assert_eq!(chain(&a, &Array2::<f32>::ones((3, 4))).unwrap(), Array2::from_elem((2, 4), 3.0f32));
    let r = chain(&a, &Array2::<f32>::ones((5, 4)));
    assert!(r.is_err(), "K = 3 against P = 5 must fail, got {r:?}");
}

#[test]
fn empty_inputs_are_not_errors() {
    let c = matmul(&Array2::<f32>::zeros((0, 3)), &Array2::<f32>::zeros((3, 2))).unwrap();
    assert_eq!(c.dim(), (0, 2));
    let c = matmul(&Array2::<f32>::zeros((2, 3)), &Array2::<f32>::zeros((3, 0))).unwrap();
    assert_eq!(c.dim(), (2, 0));
    assert_eq!(add(&Array2::<f32>::zeros((0, 0)), &Array2::<f32>::zeros((0, 0))).unwrap().dim(), (0, 0));
}

#[test]
fn errors_are_std_errors_usable_with_question_mark() {
    fn assert_traits<E: std::error::Error + Send + Sync + 'static>(_: &E) {}

    fn run(a: &Array2<f32>, b: &Array2<f32>) -> Result<Array2<f32>, Box<dyn std::error::Error + Send + Sync>> {
        let c = matmul(a, b)?;
        Ok(c)
    }

    let e = matmul(&Array2::<f32>::ones((2, 2)), &Array2::<f32>::ones((3, 2))).unwrap_err();
    assert_traits(&e);
    assert!(!e.to_string().is_empty());
    let boxed = run(&Array2::ones((2, 2)), &Array2::ones((3, 2))).unwrap_err();
    assert!(boxed.to_string().contains("matmul"));
    assert!(run(&Array2::ones((2, 3)), &Array2::ones((3, 2))).is_ok());
}

#[test]
fn random_wrong_shapes_never_panic() {
    // Every (M, K1) x (K2, N) with K1 != K2 is an error naming K; equal K is Ok.
    let mut rng = Rng::new(7);
    for _ in 0..50 {
        let dims: Vec<usize> = (0..4).map(|_| rng.int(1, 6) as usize).collect();
        let (m, k1, k2, n) = (dims[0], dims[1], dims[2], dims[3]);
        let a = rand2(m, k1, rng.next_u64());
        let b = rand2(k2, n, rng.next_u64());
        let r = matmul(&a, &b);
        if k1 == k2 {
            assert_close(&r.unwrap(), &matmul_ref_f32(a.view(), b.view()), 1e-5);
        } else {
            let (_, param, _, symbol, expected, found, _) = shape_error(r);
            assert_eq!((param.as_str(), symbol.as_str(), expected, found), ("b", "K", k1, k2));
        }
    }
}

mod results {
    einlang::einlang! {
        /// A `let` bound to `len(x)` or `shape(x)[d]` is that extent, so
        /// these results are proven to have the declared extents.
        pub fn scaled_and_total(x: [f32; N]) -> ([f32; N], f32) {
            let n = len(x);
            let y[i in 0..n] = x[i] * 2.0;
            (y, sum[i](x[i]))
        }

        pub fn first_row(x: [f32; R, C]) -> [f32; C] {
            let c = shape(x)[1];
            let last = c - 1;
            let y[j in 0..last + 1] = x[0, j];
            y
        }

        /// The kept elements are known only at run time: the declared `N`
        /// of the tuple's first element is checked when the function
        /// returns.
        pub fn kept(x: [f32; N], floor: f32) -> (i64, ([f32; N], [f32; ?])) {
            let k = [v | v in x, v >= floor];
            (len(k), (k, x))
        }
    }
}

#[test]
fn declared_extents_of_tuple_elements_are_checked_when_returning() {
    let x = array![1.0f32, -2.0, 3.0];
    let (y, total) = results::scaled_and_total(&x).unwrap();
    assert_eq!((y, total), (array![2.0f32, -4.0, 6.0], 2.0));
    assert_eq!(results::first_row(&array![[1.0f32, 2.0], [3.0, 4.0]]).unwrap(), array![1.0f32, 2.0]);
    // Every element kept: the extents agree.
    let (n, (k, same)) = results::kept(&x, -5.0).unwrap();
    assert_eq!((n, k, same), (3, x.clone(), x.clone()));
    // One dropped: two elements where `N` = 3 was declared.
    match results::kept(&x, 0.0) {
        Err(Error::Extent { function, message }) => {
            assert_eq!(function, "kept");
            assert!(message.contains("`N`") && message.contains("length 2"), "{message}");
        }
        other => panic!("expected an extent error, got {other:?}"),
    }
}

mod signed_values {
    einlang::einlang! {
        /// `c` is any `i64`: the reads are checked, not assumed in bounds
        /// because `c` would be an extent.
        pub fn from(x: [f32; N], c: i64) -> f32 { sum[k in c..N](x[k]) }
        pub fn shifted(x: [f32; N], c: i64) -> f32 { sum[k in 0..2](x[k - c]) }
        /// Integer division truncates toward zero, also for a negative `c`.
        pub fn halved(x: [f32; N], c: i64) -> f32 { let y[k in 0..1] = x[k + c / 2]; y[0] }
        /// A bound read from data, evaluated before the statement.
        pub fn from_data(x: [f32; N], c: [i64; 1]) -> f32 { let c0 = c[0]; sum[k in c0..N](x[k]) }
    }
}

#[test]
fn negative_run_time_values_in_ranges_are_errors_not_panics() {
    let x = array![1.0f32, 2.0, 3.0];
    assert_eq!(signed_values::from(&x, 1).unwrap(), 5.0);
    assert!(matches!(signed_values::from(&x, -1), Err(Error::Index { index: -1, .. })));
    assert_eq!(signed_values::shifted(&x, 0).unwrap(), 3.0);
    assert_eq!(signed_values::shifted(&x, -1).unwrap(), 5.0);
    assert!(matches!(signed_values::shifted(&x, -2), Err(Error::Index { index: 3, .. })));
    assert!(matches!(signed_values::shifted(&x, 1), Err(Error::Index { index: -1, .. })));
    // -1 / 2 is 0 and 3 / 2 is 1, as in Rust; -3 / 2 is -1.
    assert_eq!(signed_values::halved(&x, -1).unwrap(), 1.0);
    assert_eq!(signed_values::halved(&x, 3).unwrap(), 2.0);
    assert!(matches!(signed_values::halved(&x, -3), Err(Error::Index { index: -1, .. })));
    assert!(matches!(signed_values::from_data(&x, &array![-2]), Err(Error::Index { index: -2, .. })));
    assert_eq!(signed_values::from_data(&x, &array![2]).unwrap(), 3.0);
}

#[test]
fn an_unread_binding_that_fails_is_an_error() {
    let x = array![1.0f32, 2.0, 3.0];
    assert_eq!(unread_binding(&x, 2).unwrap(), 1.0);
    assert!(unread_binding(&x, 3).is_err());
    assert!(unread_binding(&x, -1).is_err());
}
