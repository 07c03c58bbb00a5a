//! `NAME_into`: results written into the caller's buffers, of any strides,
//! against naive loops and against the plain form.

mod common;

use einlang::einlang;
use einlang::ndarray::{Array1, Array2, Array3, Array4, ArrayD, IxDyn, ShapeBuilder};
use einlang::Error;

einlang! {
    use std::math::exp;

    pub fn fma(a: [f32; N], b: [f32; N], c: [f32; N]) -> [f32; N] {
        let y[i] = a[i] * b[i] + c[i];
        y
    }

    pub fn softmax(x: [f32; N, C]) -> [f32; N, C] {
        let m[n] = max[c](x[n, c]);
        let e[n, c] = exp(x[n, c] - m[n]);
        let y[n, c] = e[n, c] / sum[k](e[n, k]);
        y
    }

    pub fn matmul(a: [f64; M, K], b: [f64; K, N]) -> [f64; M, N] {
        let c[i, j] = sum[k](a[i, k] * b[k, j]);
        c
    }

    pub fn row_sums(x: [i64; R, C]) -> [i64; R] {
        let s[r] = sum[c](x[r, c]);
        s
    }

    /// A tuple: the gradient of a squared error and the loss itself.
    pub fn grad_and_loss(x: [f32; B, I], w: [f32; I], t: [f32; B]) -> ([f32; I], f32, [f32; B]) {
        let y[n] = sum[i](x[n, i] * w[i]);
        let loss = sum[n]((y[n] - t[n]) ** 2);
        (@loss / @w, loss, y)
    }

    pub fn scaled(x: [f32; *], s: f32) -> [f32; *] {
        let v = x as [f32; N];
        let y[i] = v[i] * s;
        y
    }

    /// A parameter returned as it is: copied into the buffer.
    pub fn same(x: [u8; N, M]) -> [u8; N, M] {
        x
    }

    pub fn outer3(a: [f32; I], b: [f32; J], c: [f32; K]) -> [f32; I, J, K] {
        let y[i, j, k] = a[i] * b[j] + c[k];
        y
    }

    /// A definition that is its parameter, element for element (held as a
    /// view of it): copied into the buffer in parallel.
    pub fn copied(x: [f32; N]) -> [f32; N] {
        let y[i] = x[i];
        y
    }

    pub fn copied3(x: [f64; A, B, C]) -> [f64; A, B, C] {
        let y[i, j, k] = x[i, j, k];
        y
    }

    /// A parameter called `out`: the buffer is `out_`.
    pub fn shifted(out: [f32; N], by: f32) -> [f32; N] {
        let y[i] = out[i] + by;
        y
    }

    /// Results that are calls of another function: its body fills the
    /// buffer (directly, in a `let`, through two calls, from the standard
    /// library).
    pub fn through(x: [f32; N, C]) -> [f32; N, C] {
        softmax(x)
    }

    pub fn through_let(x: [f32; N, C]) -> [f32; N, C] {
        let y = softmax(x);
        y
    }

    pub fn through_twice(x: [f32; N, C]) -> [f32; N, C] {
        through(x)
    }

    pub fn through_std(x: [f32; N, C]) -> [f32; N, C] {
        std::ml::softmax(x)
    }

    pub fn through_product(a: [f64; M, K], b: [f64; K, N]) -> [f64; M, N] {
        matmul(a, b)
    }

    /// A batch of products, and one scaled (attention's scores).
    pub fn bmm(a: [f32; B, M, K], b: [f32; B, K, N]) -> [f32; B, M, N] {
        let c[p, i, j] = sum[k](a[p, i, k] * b[p, k, j]);
        c
    }

    pub fn scores(q: [f32; B, M, D], k: [f32; B, N, D]) -> [f32; B, M, N] {
        let s[p, i, j] = sum[d](q[p, i, d] * k[p, j, d]) * 0.125;
        s
    }

    /// A 1x1 convolution: a batch of products seen as `[n, o, h, w]`.
    pub fn conv1x1(x: [f32; N, C, H, W], k: [f32; O, C]) -> [f32; N, O, H, W] {
        let y[n, o, h, w] = sum[c](k[o, c] * x[n, c, h, w]);
        y
    }

    mod nn {
        pub fn relu(x: [f32; N]) -> [f32; N] {
            let y[i] = if x[i] > 0.0 { x[i] } else { 0.0 };
            y
        }
    }
}

fn ramp(n: usize, scale: f32) -> Array1<f32> {
    Array1::from_shape_fn(n, |i| ((i * 37 % 101) as f32 - 50.0) * scale)
}

#[test]
fn an_elementwise_result_is_written_into_the_buffer_and_reused() -> Result<(), Error> {
    for n in [0usize, 1, 7, 4099, 100_003] {
        let (a, b, c) = (ramp(n, 0.1), ramp(n, -0.03), ramp(n, 0.5));
        let mut out = Array1::<f32>::from_elem(n, f32::NAN);
        let ptr = out.as_ptr();
        for _ in 0..3 {
            fma_into(&a, &b, &c, &mut out)?;
            for i in 0..n {
                assert_eq!(out[i].to_bits(), (a[i] * b[i] + c[i]).to_bits(), "n = {n}, i = {i}");
            }
        }
        assert_eq!(out.as_ptr(), ptr, "the buffer is written in place");
        assert_eq!(out, fma(&a, &b, &c)?);
    }
    Ok(())
}

/// Softmax of each row by loops over the row (max, exponentials, sum,
/// division).
fn naive_softmax(x: &Array2<f32>) -> Array2<f32> {
    let mut y = x.clone();
    for mut row in y.rows_mut() {
        let m = row.fold(f32::NEG_INFINITY, |a, &b| a.max(b));
        row.mapv_inplace(|v| (v - m).exp());
        let s: f32 = row.sum();
        row.mapv_inplace(|v| v / s);
    }
    y
}

#[test]
fn views_of_any_strides_receive_the_same_values() -> Result<(), Error> {
    let x = Array2::from_shape_fn((5, 9), |(i, j)| ((i * 9 + j) % 7) as f32 * 0.25 - 1.0);
    let plain = softmax(&x)?;
    approx::assert_abs_diff_eq!(plain, naive_softmax(&x), epsilon = 1e-6);
    // Column-major storage.
    let mut f = Array2::<f32>::zeros((5, 9).f());
    softmax_into(&x, &mut f)?;
    assert_eq!(f, plain);
    // A transposed view.
    let mut t = Array2::<f32>::zeros((9, 5));
    softmax_into(&x, t.view_mut().reversed_axes())?;
    assert_eq!(t.t(), plain);
    // A column of a larger matrix, for a rank-1 result.
    let ints = Array2::from_shape_fn((4, 6), |(i, j)| (i as i64 - 2) * 1000 + j as i64);
    let mut m = Array2::<i64>::from_elem((4, 3), -7);
    row_sums_into(&ints, m.column_mut(1))?;
    for r in 0..4 {
        let naive: i64 = (0..6).map(|c| ints[[r, c]]).sum();
        assert_eq!(m[[r, 1]], naive);
        assert_eq!((m[[r, 0]], m[[r, 2]]), (-7, -7), "the other columns are untouched");
    }
    Ok(())
}

#[test]
fn products_and_returned_parameters_are_copied_in() -> Result<(), Error> {
    let (m, k, n) = (13, 17, 11);
    let a = Array2::from_shape_fn((m, k), |(i, j)| (i as f64 - j as f64 * 0.5).sin());
    let b = Array2::from_shape_fn((k, n), |(i, j)| (i as f64 * 0.3 + j as f64).cos());
    let mut out = Array2::<f64>::zeros((m, n).f());
    matmul_into(&a, &b, &mut out)?;
    for i in 0..m {
        for j in 0..n {
            let naive: f64 = (0..k).map(|p| a[[i, p]] * b[[p, j]]).sum();
            assert!((out[[i, j]] - naive).abs() < 1e-12, "({i}, {j})");
        }
    }
    let x = Array2::from_shape_fn((3, 4), |(i, j)| (i * 4 + j) as u8);
    let mut y = Array2::<u8>::zeros((3, 4));
    same_into(&x, &mut y)?;
    assert_eq!(y, x);
    let (ai, bj, ck) = (ramp(3, 1.0), ramp(5, 0.5), ramp(2, 2.0));
    let mut o = Array3::<f32>::zeros((3, 5, 2));
    outer3_into(&ai, &bj, &ck, o.view_mut())?;
    for ((i, j, kk), v) in o.indexed_iter() {
        assert_eq!(*v, ai[i] * bj[j] + ck[kk]);
    }
    Ok(())
}

/// Batched products and a 1x1 convolution written into the buffer (the
/// product's own kernels write into it: no fresh product copied in), into
/// a buffer of other strides (copied in), on odd shapes and on shapes our
/// packed kernels take, on one to three threads: against `f64` loops.
#[test]
fn batched_products_and_pointwise_convolutions_fill_the_buffer() -> Result<(), Error> {
    let value = |seed: usize, i: usize| ((i * 7919 + seed * 104_729) % 211) as f32 / 105.5 - 1.0;
    let near = |got: f32, want: f64, terms: usize| {
        (f64::from(got) - want).abs() <= 1e-5 * (terms as f64).sqrt() * (1.0 + want.abs())
    };
    for threads in 1..=3 {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| -> Result<(), Error> {
            for [bt, m, k, n] in [[3, 7, 5, 13], [2, 64, 48, 80], [1, 1, 1, 1], [4, 33, 1, 40], [2, 0, 3, 4]] {
                let a = Array3::from_shape_fn((bt, m, k), |(p, i, j)| value(1, (p * m + i) * k + j));
                let b = Array3::from_shape_fn((bt, k, n), |(p, i, j)| value(2, (p * k + i) * n + j));
                let want = |p: usize, i: usize, j: usize| {
                    (0..k).map(|q| f64::from(a[[p, i, q]]) * f64::from(b[[p, q, j]])).sum::<f64>()
                };
                let mut out = Array3::<f32>::from_elem((bt, m, n), f32::NAN);
                bmm_into(&a, &b, &mut out)?;
                let mut other = Array3::<f32>::from_elem((bt, m, n).f(), f32::NAN);
                bmm_into(&a, &b, &mut other)?;
                for ((p, i, j), v) in out.indexed_iter() {
                    assert!(near(*v, want(p, i, j), k), "{bt}x{m}x{k}x{n} ({p}, {i}, {j}) on {threads}: {v}");
                    assert_eq!(v.to_bits(), other[[p, i, j]].to_bits());
                }
                // `k` as keys by features: `q k^T / 8`.
                let kk = Array3::from_shape_fn((bt, n, k), |(p, i, j)| value(3, (p * n + i) * k + j));
                let mut s = Array3::<f32>::from_elem((bt, m, n), f32::NAN);
                scores_into(&a, &kk, &mut s)?;
                for ((p, i, j), v) in s.indexed_iter() {
                    let w = (0..k).map(|q| f64::from(a[[p, i, q]]) * f64::from(kk[[p, j, q]])).sum::<f64>() * 0.125;
                    assert!(near(*v, w, k), "scores ({p}, {i}, {j}): {v} against {w}");
                }
            }
            for [nb, c, h, w, o] in [[2, 5, 3, 7, 11], [2, 32, 9, 9, 40], [1, 1, 1, 1, 1]] {
                let x = Array4::from_shape_fn((nb, c, h, w), |(p, q, i, j)| value(4, ((p * c + q) * h + i) * w + j));
                let kern = Array2::from_shape_fn((o, c), |(i, j)| value(5, i * c + j));
                let mut y = Array4::<f32>::from_elem((nb, o, h, w), f32::NAN);
                conv1x1_into(&x, &kern, &mut y)?;
                let mut other = Array4::<f32>::from_elem((nb, o, h, w).f(), f32::NAN);
                conv1x1_into(&x, &kern, &mut other)?;
                for ((p, q, i, j), v) in y.indexed_iter() {
                    let want = (0..c).map(|r| f64::from(kern[[q, r]]) * f64::from(x[[p, r, i, j]])).sum::<f64>();
                    assert!(near(*v, want, c), "conv ({p}, {q}, {i}, {j}) on {threads}: {v} against {want}");
                    assert_eq!(v.to_bits(), other[[p, q, i, j]].to_bits());
                }
            }
            Ok(())
        })?;
    }
    // A buffer of the wrong shape: an error naming it, nothing written.
    let x = Array4::<f32>::ones((2, 3, 4, 5));
    let kern = Array2::<f32>::ones((6, 3));
    let mut wrong = Array4::<f32>::from_elem((2, 6, 4, 4), 9.0);
    assert!(
        matches!(conv1x1_into(&x, &kern, &mut wrong), Err(Error::Shape { ref param, axis: 3, .. }) if param == "out")
    );
    assert!(wrong.iter().all(|&v| v == 9.0));
    let mut short = Array3::<f32>::from_elem((2, 3, 3), 9.0);
    let a = Array3::<f32>::ones((2, 3, 5));
    let b = Array3::<f32>::ones((2, 5, 4));
    assert!(matches!(bmm_into(&a, &b, &mut short), Err(Error::Shape { ref param, axis: 2, .. }) if param == "out"));
    assert!(short.iter().all(|&v| v == 9.0));
    Ok(())
}

#[test]
fn a_buffer_of_the_wrong_shape_is_an_error_naming_it_and_stays_untouched() {
    let (a, b, c) = (ramp(8, 1.0), ramp(8, 1.0), ramp(8, 1.0));
    let mut short = Array1::<f32>::from_elem(7, 3.5);
    match fma_into(&a, &b, &c, &mut short) {
        Err(Error::Shape { function, param, axis, expected, found, .. }) => {
            assert_eq!((function.as_str(), param.as_str(), axis, expected, found), ("fma", "out", 0, 8, 7));
        }
        other => panic!("expected a shape error, got {other:?}"),
    }
    assert!(short.iter().all(|&v| v == 3.5));
    // Through the copying path (a product) too.
    let a2 = Array2::<f64>::ones((2, 3));
    let b2 = Array2::<f64>::ones((3, 4));
    let mut wrong = Array2::<f64>::from_elem((2, 5), 9.0);
    assert!(
        matches!(matmul_into(&a2, &b2, &mut wrong), Err(Error::Shape { ref param, axis: 1, .. }) if param == "out")
    );
    assert!(wrong.iter().all(|&v| v == 9.0));
    // The inputs' own errors come first, as from the plain form.
    let mut ok = Array1::<f32>::zeros(8);
    assert!(matches!(fma_into(&a, &ramp(5, 1.0), &c, &mut ok), Err(Error::Shape { ref param, .. }) if param == "b"));
}

#[test]
fn a_tuple_takes_one_buffer_per_tensor_and_returns_the_rest() -> Result<(), Error> {
    let (bn, i_n) = (6, 4);
    let x = Array2::from_shape_fn((bn, i_n), |(n, i)| (n as f32 - i as f32) * 0.2);
    let w = ramp(i_n, 0.1);
    let t = ramp(bn, 0.05);
    let (g, loss, y) = grad_and_loss(&x, &w, &t)?;
    let mut gi = Array1::<f32>::zeros(i_n);
    let mut yi = Array1::<f32>::zeros(bn);
    let loss_into: f32 = grad_and_loss_into(&x, &w, &t, &mut gi, &mut yi)?;
    assert_eq!((gi.clone(), loss_into.to_bits(), yi.clone()), (g, loss.to_bits(), y));
    // Against the hand-derived gradient 2 * sum_n (y_n - t_n) x[n, i].
    for i in 0..i_n {
        let naive: f32 = (0..bn)
            .map(|n| {
                let yn: f32 = (0..i_n).map(|k| x[[n, k]] * w[k]).sum();
                2.0 * (yn - t[n]) * x[[n, i]]
            })
            .sum();
        assert!((gi[i] - naive).abs() < 1e-5, "{i}: {} vs {naive}", gi[i]);
    }
    Ok(())
}

#[test]
fn dynamic_rank_and_module_functions_have_into_forms() -> Result<(), Error> {
    let x = ArrayD::from_shape_fn(IxDyn(&[7]), |d| d[0] as f32 - 3.0);
    let mut out = ArrayD::<f32>::zeros(IxDyn(&[7]));
    scaled_into(&x, 0.5, &mut out)?;
    assert_eq!(out, x.mapv(|v| v * 0.5));
    let mut wrong = ArrayD::<f32>::zeros(IxDyn(&[6]));
    assert!(matches!(scaled_into(&x, 0.5, &mut wrong), Err(Error::Shape { axis: 0, .. })));
    let mut other_rank = ArrayD::<f32>::from_elem(IxDyn(&[7, 1]), 4.0);
    assert!(matches!(scaled_into(&x, 0.5, &mut other_rank), Err(Error::Rank { expected: 1, found: 2, .. })));
    assert!(other_rank.iter().all(|&v| v == 4.0));
    let v = ramp(9, 1.0);
    let mut r = Array1::<f32>::from_elem(9, -1.0);
    nn::relu_into(&v, &mut r)?;
    assert_eq!(r, v.mapv(|e| e.max(0.0)));
    Ok(())
}

#[test]
fn a_parameter_named_out_leaves_the_buffer_another_name() -> Result<(), Error> {
    let v = ramp(5, 1.0);
    let mut buf = Array1::<f32>::zeros(5);
    shifted_into(&v, 2.0, &mut buf)?;
    assert_eq!(buf, v.mapv(|e| e + 2.0));
    let mut wrong = Array1::<f32>::zeros(4);
    assert!(matches!(shifted_into(&v, 2.0, &mut wrong), Err(Error::Shape { ref param, .. }) if param == "out_"));
    Ok(())
}

/// A result that is a call of another function: the callee's body writes
/// into the buffer (or its result is copied in, for a view of other
/// strides or a product), with the values of the plain form, and a buffer
/// of the wrong shape is an error naming the function called and `out`.
#[test]
fn a_result_that_is_a_call_fills_the_buffer() -> Result<(), Error> {
    let x = Array2::from_shape_fn((6, 11), |(i, j)| ((i * 11 + j) % 9) as f32 * 0.5 - 2.0);
    let plain = softmax(&x)?;
    approx::assert_abs_diff_eq!(plain, naive_softmax(&x), epsilon = 1e-6);
    type Into = fn(&Array2<f32>, einlang::ndarray::ArrayViewMut2<'_, f32>) -> Result<(), Error>;
    let forms: [(&str, Into); 4] = [
        ("through", |x, o| through_into(x, o)),
        ("through_let", |x, o| through_let_into(x, o)),
        ("through_twice", |x, o| through_twice_into(x, o)),
        ("through_std", |x, o| through_std_into(x, o)),
    ];
    for (name, into) in forms {
        let mut y = Array2::<f32>::from_elem((6, 11), f32::NAN);
        into(&x, y.view_mut())?;
        assert_eq!(y, plain, "{name}");
        let mut f = Array2::<f32>::from_elem((6, 11).f(), f32::NAN);
        into(&x, f.view_mut())?;
        assert_eq!(f, plain, "{name}, column-major");
        let mut t = Array2::<f32>::from_elem((11, 6), f32::NAN);
        into(&x, t.view_mut().reversed_axes())?;
        assert_eq!(t.t(), plain, "{name}, transposed");
        let mut wrong = Array2::<f32>::from_elem((6, 10), 4.5);
        match into(&x, wrong.view_mut()) {
            Err(Error::Shape { function, param, axis, expected, found, .. }) => {
                assert_eq!((function.as_str(), param.as_str(), axis, expected, found), (name, "out", 1, 11, 10));
            }
            other => panic!("{name}: expected a shape error, got {other:?}"),
        }
        assert!(wrong.iter().all(|&v| v == 4.5), "{name}: the buffer is untouched");
    }
    let a = Array2::from_shape_fn((5, 3), |(i, j)| i as f64 - 2.0 * j as f64);
    let b = Array2::from_shape_fn((3, 4), |(i, j)| (i * 4 + j) as f64 * 0.25);
    let mut c = Array2::<f64>::zeros((5, 4));
    through_product_into(&a, &b, &mut c)?;
    for ((i, j), v) in c.indexed_iter() {
        let naive: f64 = (0..3).map(|k| a[[i, k]] * b[[k, j]]).sum();
        assert!((v - naive).abs() < 1e-12, "({i}, {j})");
    }
    Ok(())
}

/// A result that is a view of a parameter (`let y[i] = x[i]`), large
/// enough to be copied by every thread: fresh, into a buffer in standard
/// layout, into a buffer of other strides, on 1 to 3 threads, against the
/// parameter itself; and a buffer of the wrong shape is an error that
/// leaves it untouched.
#[test]
fn a_result_that_is_its_parameter_is_copied_in() -> Result<(), Error> {
    for threads in 1..=3 {
        common::split_small_loops();
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("pool");
        pool.install(|| -> Result<(), Error> {
            for n in [0, 1, 7, 40_009, 100_003] {
                let x = Array1::from_shape_fn(n, |i| (i as f32 * 0.37).sin());
                assert_eq!(copied(&x)?, x, "{n}, {threads} threads");
                let mut out = Array1::<f32>::from_elem(n, 9.0);
                copied_into(&x, &mut out)?;
                assert_eq!(out, x, "{n}, {threads} threads, into");
                // Every other element of a longer buffer.
                let mut wide = Array1::<f32>::from_elem(2 * n, 9.0);
                copied_into(&x, wide.slice_mut(einlang::ndarray::s![..;2]))?;
                for i in 0..n {
                    assert_eq!((wide[2 * i], wide[2 * i + 1]), (x[i], 9.0), "{n}, {threads} threads, strided at {i}");
                }
            }
            let x = Array3::from_shape_fn((37, 41, 29), |(i, j, k)| (i * 10_000 + j * 100 + k) as f64);
            assert_eq!(copied3(&x)?, x);
            let mut out = Array3::<f64>::zeros((37, 41, 29).f());
            copied3_into(&x, &mut out)?;
            assert_eq!(out, x, "{threads} threads, column-major buffer");
            let mut bad = Array3::<f64>::from_elem((37, 41, 28), 5.0);
            assert!(matches!(copied3_into(&x, &mut bad), Err(Error::Shape { .. })));
            assert!(bad.iter().all(|&v| v == 5.0));
            Ok(())
        })?;
    }
    Ok(())
}
