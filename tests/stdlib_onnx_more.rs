//! The ONNX operators of `std::ml` added after the seed's operator files:
//! `math_ops::rsqrt`, `comparison_ops::not`, `utility_ops::{cast, constant,
//! size}`, `transform_ops::{constant_of_shape, depth_to_space,
//! depth_to_space_crd, space_to_depth}`, `ml_ex::image_scaler`,
//! `norm_ops::{lrn, lp_normalization, mean_variance_normalization}`,
//! `pool_ops::{lp_pool, max_roi_pool}`, `indexing_ops::{scatter,
//! scatter_nd}`, `resize_ops::{resize, upsample}` and
//! `selection_ops::topk_1d_helper`. Each is compared with a naive loop
//! written here from the ONNX definition (or with values derived by hand,
//! among them the examples of the ONNX operator documentation), at f32 and
//! f64 and several shapes; bad arguments must give an `Err`.

mod common;

use common::*;
use einlang::einlang;
use einlang::ndarray::{array, Array, Array1, Array2, Array3, Array4, Array5, ArrayD, Dimension, IxDyn};
use einlang::Error;

einlang! {
    use std::ml::*;

    pub fn rsqrt32(x: [f32; N]) -> [f32; N] { std::ml::math_ops::rsqrt(x) }
    pub fn rsqrt64(x: f64) -> f64 { rsqrt(x) }
    pub fn not2(x: [bool; A, B], s: bool) -> ([bool; A, B], bool) { (std::ml::comparison_ops::not(x), not(s)) }

    pub fn cast32(x: [f32; N], to: i32) -> [f32; N] { cast(x, to) }
    pub fn cast64(x: [f64; A, B], to: i64) -> [f32; A, B] { std::ml::utility_ops::cast(x, to) }
    pub fn cast_int(x: [i32; N], to: i32) -> [f32; N] { cast(x, to) }
    pub fn cast_scalar(x: f64, to: i32) -> f32 { cast(x, to) }
    pub fn constants(x: [f64; A, B], s: f32) -> ([f64; A, B], f32) {
        (constant(x), std::ml::utility_ops::constant(s))
    }
    pub fn sizes(a: [f32; A, B, C], v: [i32; N], s: f64, m: [bool; P, Q]) -> (i64, i64, i64, i64) {
        (std::ml::utility_ops::size(a), std::ml::utility_ops::size(v), std::ml::utility_ops::size(s),
         std::ml::utility_ops::size(m))
    }

    pub fn cos2(s: [i64; N], v: f32) -> [f32; ?, ?] { constant_of_shape(s, v) }
    pub fn cos3(s: [i32; 3], v: f64) -> [f64; ?, ?, ?] { std::ml::transform_ops::constant_of_shape(s, v) }
    pub fn cos_dyn(s: [i64; N], v: i32) -> [i32; *] { constant_of_shape(s, v) }

    pub fn d2s(x: [f32; N, C, H, W], b: i64) -> ([f32; N, ?, ?, ?], [f32; N, ?, ?, ?]) {
        (depth_to_space(x, b), std::ml::transform_ops::depth_to_space_crd(x, b))
    }
    pub fn d2s64(x: [f64; N, C, H, W], b: i32) -> [f64; N, ?, ?, ?] { std::ml::transform_ops::depth_to_space(x, b) }
    pub fn s2d(x: [f64; N, C, H, W], b: i32) -> [f64; N, ?, ?, ?] { std::ml::transform_ops::space_to_depth(x, b) }
    pub fn s2d32(x: [f32; N, C, H, W], b: i64) -> [f32; N, ?, ?, ?] { space_to_depth(x, b) }
    /// SpaceToDepth then DepthToSpace with one block size gives the input back.
    pub fn roundtrip(x: [f32; N, C, H, W]) -> [f32; N, C, H, W] { depth_to_space(space_to_depth(x, 2), 2) }

    pub fn scaler(x: [f32; N, C, H, W], s: f32, b: [f32; C]) -> [f32; N, C, H, W] { image_scaler(x, s, b) }
    pub fn scaler3(x: [f64; N, C, L], b: [f64; C]) -> [f64; N, C, L] { std::ml::ml_ex::image_scaler(x, 0.5, b) }

    pub fn lrn32(x: [f32; N, C, H, W], size: i64) -> [f32; N, C, H, W] { lrn(x, size, 0.0001, 0.75, 1.0) }
    pub fn lrn64(x: [f64; N, C, L], size: i32, alpha: f64, beta: f64, bias: f64) -> [f64; N, C, L] {
        std::ml::norm_ops::lrn(x, size, alpha, beta, bias)
    }
    pub fn lrn2(x: [f64; N, C], size: i64) -> [f64; N, C] { lrn(x, size, 0.5, 0.75, 2.0) }

    pub fn lpn2(x: [f32; A, B], axis: i64, p: i64) -> [f32; A, B] { lp_normalization(x, axis, p) }
    pub fn lpn3(x: [f64; A, B, C], axis: i32, p: i32) -> [f64; A, B, C] {
        std::ml::norm_ops::lp_normalization(x, axis, p)
    }
    pub fn lpn1(x: [f64; N]) -> [f64; N] { lp_normalization(x, -1, 2) }

    pub fn mvn32(x: [f32; N, C, H, W], axes: [i64; K]) -> [f32; N, C, H, W] { mean_variance_normalization(x, axes) }
    pub fn mvn64(x: [f64; N, C, H, W], axes: [i32; K]) -> [f64; N, C, H, W] {
        std::ml::norm_ops::mean_variance_normalization(x, axes)
    }
    /// ONNX's default axes.
    pub fn mvn_default(x: [f64; N, C, H, W]) -> [f64; N, C, H, W] { mean_variance_normalization(x, [0, 2, 3]) }
    pub fn mvn_r1(x: [f64; N], axes: [i64; K]) -> [f64; N] { mean_variance_normalization(x, axes) }
    pub fn mvn_r2(x: [f64; A, B], axes: [i32; K]) -> [f64; A, B] { mean_variance_normalization(x, axes) }
    pub fn mvn_r2_32(x: [f32; A, B], axes: [i64; K]) -> [f32; A, B] { mean_variance_normalization(x, axes) }
    pub fn mvn_r3(x: [f64; A, B, C], axes: [i64; K]) -> [f64; A, B, C] {
        std::ml::norm_ops::mean_variance_normalization(x, axes)
    }
    pub fn mvn_r3_32(x: [f32; A, B, C], axes: [i32; K]) -> [f32; A, B, C] { mean_variance_normalization(x, axes) }
    pub fn mvn_r5(x: [f64; A, B, C, D, E], axes: [i64; K]) -> [f64; A, B, C, D, E] {
        mean_variance_normalization(x, axes)
    }
    pub fn mvn_r5_32(x: [f32; A, B, C, D, E], axes: [i64; K]) -> [f32; A, B, C, D, E] {
        mean_variance_normalization(x, axes)
    }
    pub fn mvn_r6(x: [f64; A, B, C, D, E, F], axes: [i64; K]) -> [f64; A, B, C, D, E, F] {
        mean_variance_normalization(x, axes)
    }

    pub fn lpp1(x: [f32; N, C, L], k: [i64; 1], s: [i64; 1], p: i64) -> [f32; N, C, ?] { lp_pool(x, k, s, p) }
    pub fn lpp2(x: [f64; N, C, H, W], k: [i64; 2], s: [i64; 2], p: i64) -> [f64; N, C, ?, ?] {
        std::ml::pool_ops::lp_pool(x, k, s, p)
    }
    /// The seed's spelling: `i32` literal vectors.
    pub fn lpp2_seed(x: [f32; N, C, H, W]) -> [f32; N, C, ?, ?] { lp_pool(x, [2, 2], [2, 1], 2) }
    pub fn lpp3(x: [f32; N, C, D, H, W], k: [i64; 3], s: [i64; 3], p: i64) -> [f32; N, C, ?, ?, ?] {
        lp_pool(x, k, s, p)
    }
    pub fn lpp_kernel1(x: [f32; N, C, H, W], k: [i64; 1], s: [i64; 1]) -> [f32; N, C, H, ?] { lp_pool(x, k, s, 2) }

    pub fn roi32(x: [f32; N, C, H, W], rois: [f32; R, F], ps: [i64; 2], scale: f32) -> [f32; R, C, ?, ?] {
        max_roi_pool(x, rois, ps, scale)
    }
    pub fn roi64(x: [f64; N, C, H, W], rois: [f64; R, 5]) -> [f64; R, C, ?, ?] {
        std::ml::pool_ops::max_roi_pool(x, rois, [2, 3], 0.5)
    }

    pub fn scat(x: [f32; A, B], i: [i32; C, D], u: [f32; C, D], axis: i32) -> [f32; A, B] {
        std::ml::indexing_ops::scatter(x, i, u, axis)
    }
    pub fn snd2(x: [f32; A, B], i: [i64; Q, P], u: [f32; U]) -> [f32; A, B] { scatter_nd(x, i, u) }
    pub fn snd3(x: [f64; A, B, C], i: [i32; Q, P], u: [f64; Q]) -> [f64; A, B, C] {
        std::ml::indexing_ops::scatter_nd(x, i, u)
    }
    pub fn snd4(x: [i32; A, B, C, D], i: [i64; Q, P], u: [i32; Q]) -> [i32; A, B, C, D] { scatter_nd(x, i, u) }
    // Slices: rows of 1, 2 and 3 leading coordinates; a vector's points.
    pub fn snd_rows1(x: [f32; A, B, C], i: [i64; Q, P], u: [f32; R, B, C]) -> [f32; A, B, C] { scatter_nd(x, i, u) }
    pub fn snd_rows2(x: [f64; A, B, C, D], i: [i32; Q, P], u: [f64; R, C, D]) -> [f64; A, B, C, D] {
        scatter_nd(x, i, u)
    }
    pub fn snd_rows3(x: [i32; A, B, C, D], i: [i64; Q, P], u: [i32; R, D]) -> [i32; A, B, C, D] { scatter_nd(x, i, u) }
    pub fn snd_rows2_of_2(x: [i32; A, B], i: [i64; Q, P], u: [i32; Q]) -> [i32; A, B] { scatter_nd(x, i, u) }
    pub fn snd_vector(x: [f32; N], i: [i64; Q, P], u: [f32; R]) -> [f32; N] { scatter_nd(x, i, u) }

    pub fn rs32(x: [f32; N, C, H, W], s: [f32; 2], mode: str) -> ([f32; N, C, ?, ?], [f32; N, C, ?, ?]) {
        (resize(x, s, mode), upsample(x, s, mode))
    }
    pub fn rs64(x: [f64; N, C, H, W], s: [f64; K], mode: str) -> ([f64; N, C, ?, ?], [f64; N, C, ?, ?]) {
        (std::ml::resize_ops::resize(x, s, mode), std::ml::resize_ops::upsample(x, s, mode))
    }
    pub fn rs2(x: [f64; H, W], s: [f64; 2], mode: str) -> ([f64; ?, ?], [f64; ?, ?]) {
        (resize(x, s, mode), upsample(x, s, mode))
    }
    /// The seed's spelling: a literal scale vector.
    pub fn rs_seed(x: [f32; N, C, H, W]) -> [f32; N, C, ?, ?] { resize(x, [2.0, 3.0], "nearest") }

    pub fn top1d(x: [f32; N], k: i64) -> ([f32; ?], [i64; ?]) { std::ml::selection_ops::topk_1d_helper(x, k) }
    pub fn top1d_int(x: [i32; N], k: i32) -> ([i32; ?], [i64; ?]) { topk_1d_helper(x, k) }
    /// `topk` of a matrix has run-time extents on both axes (the axis is a
    /// run-time value).
    pub fn top1d_matrix(x: [f64; A, B]) -> ([f64; ?, ?], [i64; ?, ?]) { topk_1d_helper(x, 1) }
}

// ===========================================================================
// Helpers
// ===========================================================================

fn is_assert<T: std::fmt::Debug>(r: Result<T, Error>) -> bool {
    matches!(r, Err(Error::Assert { .. }))
}

fn rand5(shape: (usize, usize, usize, usize, usize), seed: u64) -> Array5<f32> {
    let mut rng = Rng::new(seed);
    Array5::from_shape_fn(shape, |_| rng.range(-1.0, 1.0) as f32)
}

fn f64_of<D: Dimension>(a: &Array<f32, D>) -> Array<f64, D> {
    a.mapv(f64::from)
}

// ===========================================================================
// Elementwise and utility operators
// ===========================================================================

#[test]
fn rsqrt_and_not() {
    let x = array![4.0f32, 0.25, 2.0, 0.0];
    let got = rsqrt32(&x).unwrap();
    assert_eq!(got.to_vec()[..2], [0.5f32, 2.0]);
    assert_close_scalar(got[2], 1.0 / 2f32.sqrt(), 1e-7);
    assert_eq!(got[3], f32::INFINITY);
    assert_close_scalar(rsqrt64(9.0).unwrap(), 1.0 / 3.0, 1e-15);

    let m = array![[true, false, true], [false, false, true]];
    let (n, s) = not2(&m, true).unwrap();
    assert_eq!(n, m.mapv(|b| !b));
    assert!(!s);
}

#[test]
fn cast_uses_the_seed_type_codes() {
    let x = array![1.75f32, -2.5, 0.0, 3e10, f32::NAN];
    assert_eq!(cast32(&x, 0).unwrap().to_vec()[..4], [1.75f32, -2.5, 0.0, 3e10]);
    // int32: truncated toward zero, saturating.
    assert_eq!(cast32(&x, 1).unwrap().to_vec()[..4], [1.0f32, -2.0, 0.0, i32::MAX as f32]);
    // bool: nonzero (NaN included) is 1.
    assert_eq!(cast32(&x, 2).unwrap().to_vec(), vec![1.0f32, 1.0, 0.0, 1.0, 1.0]);
    assert!(is_assert(cast32(&x, 3)));
    assert!(is_assert(cast32(&x, -1)));

    let m = rand2_f64(3, 4, 1).mapv(|v| v * 10.0);
    for to in 0..3i64 {
        let got = cast64(&m, to).unwrap();
        for ((i, j), v) in m.indexed_iter() {
            let want = match to {
                0 => *v as f32,
                1 => v.trunc() as f32,
                _ => f32::from(u8::from(*v != 0.0)),
            };
            assert_eq!(got[[i, j]], want);
        }
    }
    assert_eq!(cast_int(&array![-3, 0, 7], 2).unwrap(), array![1.0f32, 0.0, 1.0]);
    assert_eq!(cast_int(&array![-3, 0, 7], 0).unwrap(), array![-3.0f32, 0.0, 7.0]);
    assert_eq!(cast_scalar(-7.9, 1).unwrap(), -7.0);
    assert_eq!(cast_scalar(0.0, 2).unwrap(), 0.0);
}

#[test]
fn constant_and_size() {
    let m = rand2_f64(2, 5, 2);
    let (c, s) = constants(&m, 1.5).unwrap();
    assert_eq!((c, s), (m.clone(), 1.5));

    let a = rand3(2, 3, 4, 3);
    let v = array![1, 2, 3, 4, 5];
    let b = Array2::from_elem((2, 3), true);
    assert_eq!(sizes(&a, &v, 2.5, &b).unwrap(), (24, 5, 1, 6));
    let empty = Array3::<f32>::zeros((2, 0, 4));
    assert_eq!(sizes(&empty, &Array1::zeros(0), f64::NAN, &Array2::from_elem((2, 3), false)).unwrap(), (0, 0, 1, 6));
}

#[test]
fn constant_of_shape_fills_any_rank() {
    assert_eq!(cos2(&array![2, 3], 1.5).unwrap(), Array2::from_elem((2, 3), 1.5f32));
    assert_eq!(cos2(&array![0, 3], 1.5).unwrap().shape(), &[0, 3]);
    assert_eq!(cos3(&array![1, 2, 2], -4.0).unwrap(), Array3::from_elem((1, 2, 2), -4.0));
    let d = cos_dyn(&array![4], 7).unwrap();
    assert_eq!(d, ArrayD::from_elem(IxDyn(&[4]), 7));
    let d = cos_dyn(&array![2, 1, 3, 2], 0).unwrap();
    assert_eq!(d.shape(), &[2, 1, 3, 2]);
    assert!(is_assert(cos2(&array![2, -1], 0.0)));
    assert!(matches!(cos2(&array![2, 3, 1], 0.0), Err(Error::Rank { .. })), "three extents for two axes");
}

// ===========================================================================
// DepthToSpace and SpaceToDepth
// ===========================================================================

/// DepthToSpace by the ONNX definition: reshape, transpose, reshape.
fn depth_to_space_ref(x: &Array4<f64>, b: usize, crd: bool) -> Array4<f64> {
    let (n, c, h, w) = x.dim();
    let cc = c / (b * b);
    let xd = x.clone().into_dyn();
    let (shape6, perm): (Vec<usize>, [usize; 6]) =
        if crd { (vec![n, cc, b, b, h, w], [0, 1, 4, 2, 5, 3]) } else { (vec![n, b, b, cc, h, w], [0, 3, 4, 1, 5, 2]) };
    let t = xd.into_shape_with_order(IxDyn(&shape6)).unwrap().permuted_axes(IxDyn(&perm));
    let t = t.as_standard_layout().into_owned();
    t.into_shape_with_order((n, cc, h * b, w * b)).unwrap()
}

/// SpaceToDepth by the ONNX definition.
fn space_to_depth_ref(x: &Array4<f64>, b: usize) -> Array4<f64> {
    let (n, c, h, w) = x.dim();
    let t = x.clone().into_dyn().into_shape_with_order(IxDyn(&[n, c, h / b, b, w / b, b])).unwrap();
    let t = t.permuted_axes(IxDyn(&[0, 3, 5, 1, 2, 4])).as_standard_layout().into_owned();
    t.into_shape_with_order((n, c * b * b, h / b, w / b)).unwrap()
}

#[test]
fn depth_to_space_small_example() {
    // Eight channels of one pixel, blocks of 2 x 2: DCR reads channel
    // (i * 2 + j) * 2 + c, CRD reads channel c * 4 + i * 2 + j.
    let x = Array4::from_shape_fn((1, 8, 1, 1), |(_, c, _, _)| c as f32);
    let (dcr, crd) = d2s(&x, 2).unwrap();
    assert_eq!(dcr, array![[[[0.0f32, 2.0], [4.0, 6.0]], [[1.0, 3.0], [5.0, 7.0]]]]);
    assert_eq!(crd, array![[[[0.0f32, 1.0], [2.0, 3.0]], [[4.0, 5.0], [6.0, 7.0]]]]);
    // And back: SpaceToDepth of the DCR result is the input.
    assert_eq!(s2d32(&dcr, 2).unwrap(), x);
}

#[test]
fn depth_to_space_and_space_to_depth_match_the_definition() {
    for (shape, b) in [((2, 8, 2, 3), 2usize), ((1, 18, 3, 2), 3), ((2, 3, 2, 2), 1), ((1, 12, 1, 4), 2)] {
        let x = rand4(shape.0, shape.1, shape.2, shape.3, 10 + b as u64);
        let (dcr, crd) = d2s(&x, b as i64).unwrap();
        let x64 = f64_of(&x);
        assert_eq!(f64_of(&dcr), depth_to_space_ref(&x64, b, false));
        assert_eq!(f64_of(&crd), depth_to_space_ref(&x64, b, true));
        assert_eq!(d2s64(&x64, b as i32).unwrap(), depth_to_space_ref(&x64, b, false));
    }
    for (shape, b) in [((2, 3, 4, 6), 2usize), ((1, 2, 3, 6), 3), ((1, 1, 4, 4), 4)] {
        let x = f64_of(&rand4(shape.0, shape.1, shape.2, shape.3, 20 + b as u64));
        assert_eq!(s2d(&x, b as i32).unwrap(), space_to_depth_ref(&x, b));
    }
    let x = rand4(2, 3, 4, 6, 30);
    assert_eq!(roundtrip(&x).unwrap(), x);

    assert!(is_assert(d2s(&rand4(1, 6, 2, 2, 31), 2)), "6 channels are not a multiple of 4");
    assert!(is_assert(s2d(&f64_of(&rand4(1, 2, 4, 5, 32)), 2)), "a width of 5 has no 2 x 2 blocks");
    assert!(is_assert(s2d(&f64_of(&rand4(1, 2, 4, 4, 33)), 0)));
}

#[test]
fn image_scaler_scales_and_shifts_channels() {
    let x = rand4(2, 3, 2, 4, 40);
    let b = array![0.5f32, -1.0, 2.0];
    let got = scaler(&x, 1.5, &b).unwrap();
    for ((n, c, i, j), v) in got.indexed_iter() {
        assert_eq!(*v, x[[n, c, i, j]] * 1.5 + b[c]);
    }
    let y = f64_of(&rand3(2, 2, 5, 41));
    let b = array![3.0, -0.25];
    let got = scaler3(&y, &b).unwrap();
    for ((n, c, l), v) in got.indexed_iter() {
        assert_eq!(*v, y[[n, c, l]] * 0.5 + b[c]);
    }
}

// ===========================================================================
// Normalization
// ===========================================================================

/// LRN by its ONNX definition, over axis 1 of a tensor of any rank.
fn lrn_ref(x: &ArrayD<f64>, size: usize, alpha: f64, beta: f64, bias: f64) -> ArrayD<f64> {
    let c = x.shape()[1] as i64;
    let before = ((size - 1) / 2) as i64;
    let after = (size / 2) as i64;
    let mut y = x.clone();
    for (pos, v) in y.indexed_iter_mut() {
        let ch = pos[1] as i64;
        let mut sq = 0.0;
        for cc in (ch - before).max(0)..=(ch + after).min(c - 1) {
            let mut p = pos.clone();
            p[1] = cc as usize;
            sq += x[&p] * x[&p];
        }
        *v = x[&pos] / (bias + alpha / size as f64 * sq).powf(beta);
    }
    y
}

#[test]
fn lrn_sums_squares_over_a_channel_window() {
    let x = rand4(2, 5, 3, 2, 50).mapv(|v| v * 4.0);
    for size in [1i64, 2, 3, 4, 5, 7] {
        let got = lrn32(&x, size).unwrap();
        let want = lrn_ref(&f64_of(&x).into_dyn(), size as usize, 0.0001, 0.75, 1.0);
        assert_close(&f64_of(&got).into_dyn(), &want, 1e-6);
    }
    let y = f64_of(&rand3(2, 6, 4, 51)).mapv(|v| v * 3.0);
    for (size, alpha, beta, bias) in [(3, 0.5, 0.75, 1.0), (4, 2.0, 0.5, 0.5), (6, 1.0, 1.25, 2.0)] {
        let got = lrn64(&y, size, alpha, beta, bias).unwrap();
        assert_close(&got.into_dyn(), &lrn_ref(&y.clone().into_dyn(), size as usize, alpha, beta, bias), 1e-12);
    }
    let z = rand2_f64(3, 4, 52);
    assert_close(&lrn2(&z, 3).unwrap().into_dyn(), &lrn_ref(&z.clone().into_dyn(), 3, 0.5, 0.75, 2.0), 1e-12);
    // One channel, size 1: x / (1 + alpha x^2)^beta by hand.
    let one = array![[2.0]];
    assert_close_scalar(lrn2(&one, 1).unwrap()[[0, 0]], 2.0 / (2.0f64 + 0.5 * 4.0).powf(0.75), 1e-15);
    assert!(is_assert(lrn2(&z, 0)));
}

/// LpNormalization along one axis by loops over the lanes of that axis.
fn lp_norm_ref(x: &ArrayD<f64>, axis: usize, p: i32) -> ArrayD<f64> {
    let mut y = x.clone();
    for mut lane in y.lanes_mut(einlang::ndarray::Axis(axis)) {
        let norm = if p == 1 {
            lane.iter().map(|v| v.abs()).sum::<f64>()
        } else {
            lane.iter().map(|v| v * v).sum::<f64>().sqrt()
        };
        for v in lane.iter_mut() {
            *v = if norm == 0.0 { 0.0 } else { *v / norm };
        }
    }
    y
}

#[test]
fn lp_normalization_along_first_and_last_axes() {
    let x = rand2(3, 5, 60);
    for (axis, ax) in [(-1i64, 1usize), (1, 1), (0, 0), (-2, 0)] {
        for p in [1i64, 2] {
            let got = lpn2(&x, axis, p).unwrap();
            assert_close(&f64_of(&got).into_dyn(), &lp_norm_ref(&f64_of(&x).into_dyn(), ax, p as i32), 1e-6);
        }
    }
    let t = f64_of(&rand3(2, 3, 4, 61));
    for (axis, ax) in [(-1i32, 2usize), (2, 2), (0, 0), (-3, 0)] {
        for p in [1, 2] {
            let got = lpn3(&t, axis, p).unwrap();
            assert_close(&got.into_dyn(), &lp_norm_ref(&t.clone().into_dyn(), ax, p), 1e-12);
        }
    }
    // By hand: (3, 4) has L2 norm 5 and L1 norm 7.
    assert_eq!(lpn1(&array![3.0, -4.0]).unwrap(), array![0.6, -0.8]);
    let m = array![[3.0f32, -4.0], [0.0, 0.0]];
    assert_eq!(lpn2(&m, -1, 1).unwrap(), array![[3.0f32 / 7.0, -4.0 / 7.0], [0.0, 0.0]]);
    assert!(is_assert(lpn2(&x, -1, 3)), "p must be 1 or 2");
    assert!(is_assert(lpn3(&t, 1, 2)), "a middle axis is refused");
    assert!(is_assert(lpn3(&t, 3, 2)));
}

/// MeanVarianceNormalization by its ONNX definition, at any rank: mean and
/// variance of each group of elements that agree on the kept axes.
fn mvn_ref<D: Dimension>(x: &Array<f64, D>, axes: &[usize]) -> Array<f64, D> {
    let key = |p: &[usize]| -> Vec<usize> {
        let mut k = p.to_vec();
        for &a in axes {
            k[a] = 0;
        }
        k
    };
    let x = x.view().into_dyn();
    let mut sums = std::collections::HashMap::<Vec<usize>, (f64, f64)>::new();
    for (p, v) in x.indexed_iter() {
        let e = sums.entry(key(p.slice())).or_insert((0.0, 0.0));
        e.0 += v;
        e.1 += 1.0;
    }
    let mut var = std::collections::HashMap::<Vec<usize>, f64>::new();
    for (p, v) in x.indexed_iter() {
        let k = key(p.slice());
        let mean = sums[&k].0 / sums[&k].1;
        *var.entry(k).or_insert(0.0) += (v - mean) * (v - mean) / sums[&k].1;
    }
    let y = ArrayD::from_shape_fn(x.raw_dim(), |p| {
        let k = key(p.slice());
        (x[&p] - sums[&k].0 / sums[&k].1) / (var[&k].sqrt() + 1e-9)
    });
    y.into_dimensionality::<D>().unwrap()
}

/// Every subset of the axes of a rank, written once with non-negative and
/// once with negative axes: (the argument, the axes it means).
fn axis_subsets(rank: usize) -> Vec<(Vec<i64>, Vec<usize>)> {
    let mut out = Vec::new();
    for mask in 0..1usize << rank {
        let ax: Vec<usize> = (0..rank).filter(|a| mask >> a & 1 == 1).collect();
        out.push((ax.iter().map(|&a| a as i64).collect(), ax.clone()));
        out.push((ax.iter().map(|&a| a as i64 - rank as i64).collect(), ax));
    }
    out
}

#[test]
fn mean_variance_normalization_over_any_axes() {
    let x = f64_of(&rand4(3, 2, 4, 5, 70)).mapv(|v| v * 3.0 + 1.0);
    let cases: [(&[i32], &[usize]); 6] = [
        (&[0, 2, 3], &[0, 2, 3]),
        (&[-1], &[3]),
        (&[1, -2], &[1, 2]),
        (&[0, 1, 2, 3], &[0, 1, 2, 3]),
        (&[2, 2, 0], &[0, 2]),
        (&[], &[]),
    ];
    for (axes, ax) in cases {
        let got = mvn64(&x, &Array1::from_vec(axes.to_vec())).unwrap();
        assert_close(&got, &mvn_ref(&x, ax), 1e-9);
    }
    assert_close(&mvn_default(&x).unwrap(), &mvn_ref(&x, &[0, 2, 3]), 1e-9);
    let x32 = rand4(2, 3, 2, 3, 71);
    let got = mvn32(&x32, &array![0, 2, 3]).unwrap();
    assert_close(&f64_of(&got), &mvn_ref(&f64_of(&x32), &[0, 2, 3]), 1e-4);
    // Each normalized group has mean 0 and variance 1 (up to the 1e-9).
    let got = mvn_default(&x).unwrap();
    for c in 0..2 {
        let g: Vec<f64> = got.index_axis(einlang::ndarray::Axis(1), c).iter().copied().collect();
        let mean = g.iter().sum::<f64>() / g.len() as f64;
        let var = g.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / g.len() as f64;
        assert!(mean.abs() < 1e-12 && (var - 1.0).abs() < 1e-6);
    }
    assert!(is_assert(mvn64(&x, &array![4])));
    assert!(is_assert(mvn64(&x, &array![0, -5])));
}

#[test]
fn mean_variance_normalization_at_ranks_one_to_five() {
    let x1 = rand1_f64(7, 72).mapv(|v| v * 2.0 - 0.5);
    for (axes, ax) in axis_subsets(1) {
        assert_close(&mvn_r1(&x1, &Array1::from_vec(axes)).unwrap(), &mvn_ref(&x1, &ax), 1e-9);
    }
    let x2 = rand2_f64(4, 6, 73).mapv(|v| v * 3.0 + 1.0);
    let x2_32 = rand2(5, 3, 74);
    for (axes, ax) in axis_subsets(2) {
        let axes32: Vec<i32> = axes.iter().map(|&a| a as i32).collect();
        assert_close(&mvn_r2(&x2, &Array1::from_vec(axes32)).unwrap(), &mvn_ref(&x2, &ax), 1e-9);
        let got = mvn_r2_32(&x2_32, &Array1::from_vec(axes)).unwrap();
        assert_close(&f64_of(&got), &mvn_ref(&f64_of(&x2_32), &ax), 1e-4);
    }
    let x3 = f64_of(&rand3(3, 4, 5, 75)).mapv(|v| v * 2.0 + 0.3);
    let x3_32 = rand3(2, 3, 4, 76);
    for (axes, ax) in axis_subsets(3) {
        assert_close(&mvn_r3(&x3, &Array1::from_vec(axes.clone())).unwrap(), &mvn_ref(&x3, &ax), 1e-9);
        let axes32: Vec<i32> = axes.iter().map(|&a| a as i32).collect();
        let got = mvn_r3_32(&x3_32, &Array1::from_vec(axes32)).unwrap();
        assert_close(&f64_of(&got), &mvn_ref(&f64_of(&x3_32), &ax), 1e-4);
    }
    let x5_32 = rand5((2, 3, 2, 4, 3), 77);
    let x5 = f64_of(&x5_32).mapv(|v| v * 4.0 - 1.0);
    for (axes, ax) in axis_subsets(5) {
        assert_close(&mvn_r5(&x5, &Array1::from_vec(axes.clone())).unwrap(), &mvn_ref(&x5, &ax), 1e-9);
        let got = mvn_r5_32(&x5_32, &Array1::from_vec(axes)).unwrap();
        assert_close(&f64_of(&got), &mvn_ref(&f64_of(&x5_32), &ax), 1e-4);
    }
    // Repeated axes count once.
    assert_close(&mvn_r3(&x3, &array![2, -1, 0]).unwrap(), &mvn_ref(&x3, &[0, 2]), 1e-9);
    // Axes outside the rank, and a rank above 5.
    assert!(is_assert(mvn_r1(&x1, &array![1])));
    assert!(is_assert(mvn_r1(&x1, &array![-2])));
    assert!(is_assert(mvn_r2(&x2, &array![2])));
    assert!(is_assert(mvn_r3(&x3, &array![0, -4])));
    assert!(is_assert(mvn_r5(&x5, &array![5])));
    assert!(is_assert(mvn_r5(&x5, &array![-6])));
    let x6 = ArrayD::<f64>::zeros(IxDyn(&[1, 2, 1, 2, 1, 2])).into_dimensionality().unwrap();
    assert!(is_assert(mvn_r6(&x6, &array![0])));
}

// ===========================================================================
// Pooling
// ===========================================================================

/// LpPool without padding over the last `k.len()` axes of `x`.
fn lp_pool_ref(x: &ArrayD<f64>, k: &[usize], s: &[usize], p: i32) -> ArrayD<f64> {
    let r = x.ndim();
    let nd = k.len();
    let mut out_shape = x.shape().to_vec();
    for d in 0..nd {
        out_shape[r - nd + d] = (x.shape()[r - nd + d] - k[d]) / s[d] + 1;
    }
    let mut y = ArrayD::zeros(IxDyn(&out_shape));
    let window: Vec<Vec<usize>> = {
        let mut w = vec![vec![]];
        for &kd in k {
            w = w.into_iter().flat_map(|v| (0..kd).map(move |m| [v.clone(), vec![m]].concat())).collect();
        }
        w
    };
    for (pos, v) in y.indexed_iter_mut() {
        let mut acc = 0.0;
        for off in &window {
            let mut q = pos.slice().to_vec();
            for d in 0..nd {
                q[r - nd + d] = q[r - nd + d] * s[d] + off[d];
            }
            acc += x[IxDyn(&q)].abs().powi(p);
        }
        *v = acc.powf(1.0 / p as f64);
    }
    y
}

#[test]
fn lp_pool_one_two_and_three_spatial_axes() {
    let x = rand3(2, 3, 9, 80);
    for (k, s, p) in [(3usize, 1usize, 2i64), (2, 2, 1), (4, 3, 3), (9, 1, 2)] {
        let got = lpp1(&x, &array![k as i64], &array![s as i64], p).unwrap();
        let want = lp_pool_ref(&f64_of(&x).into_dyn(), &[k], &[s], p as i32);
        assert_close(&f64_of(&got).into_dyn(), &want, 1e-5);
    }
    let x = f64_of(&rand4(2, 2, 7, 6, 81));
    for (k, s, p) in [([2usize, 2usize], [2usize, 2usize], 2i64), ([3, 2], [1, 2], 1), ([3, 3], [2, 3], 3)] {
        let got = lpp2(&x, &array![k[0] as i64, k[1] as i64], &array![s[0] as i64, s[1] as i64], p).unwrap();
        assert_close(&got.into_dyn(), &lp_pool_ref(&x.clone().into_dyn(), &k, &s, p as i32), 1e-12);
    }
    let x32 = rand4(1, 2, 5, 4, 82);
    let want = lp_pool_ref(&f64_of(&x32).into_dyn(), &[2, 2], &[2, 1], 2);
    assert_close(&f64_of(&lpp2_seed(&x32).unwrap()).into_dyn(), &want, 1e-5);
    let v = rand5((1, 2, 4, 5, 3), 83);
    for (k, s, p) in [([2usize, 2, 2], [1usize, 2, 1], 2i64), ([3, 1, 3], [1, 1, 1], 1)] {
        let ka = array![k[0] as i64, k[1] as i64, k[2] as i64];
        let sa = array![s[0] as i64, s[1] as i64, s[2] as i64];
        let got = lpp3(&v, &ka, &sa, p).unwrap();
        assert_close(&f64_of(&got).into_dyn(), &lp_pool_ref(&f64_of(&v).into_dyn(), &k, &s, p as i32), 1e-5);
    }
    // By hand: the L2 norm of the window (3, -4) is 5, its L1 norm 7.
    let h = array![[[3.0f32, -4.0]]];
    assert_eq!(lpp1(&h, &array![2], &array![1], 2).unwrap(), array![[[5.0f32]]]);
    assert_close_scalar(lpp1(&h, &array![2], &array![1], 1).unwrap()[[0, 0, 0]], 7.0, 1e-6);

    let x4 = rand4(1, 1, 4, 4, 84);
    assert!(is_assert(lpp_kernel1(&x4, &array![2], &array![1])), "one kernel entry for two spatial axes");
    assert!(is_assert(lpp1(&rand3(1, 1, 9, 85), &array![10], &array![1], 2)), "a kernel longer than the axis");
    assert!(is_assert(lpp2(&x, &array![2, 2], &array![0, 1], 2)), "a zero stride");
    assert!(is_assert(lpp2(&x, &array![2, 2], &array![1, 1], 0)), "p = 0");
}

/// MaxRoiPool by the ONNX reference's arithmetic, in f64, with corners
/// rounded half away from zero (the reference rounds halves to even; the
/// rois below scale to 1.5 and 4.5, where the two differ only at 4.5).
fn roi_pool_ref(x: &Array4<f64>, rois: &Array2<f64>, ph: usize, pw: usize, scale: f64) -> Array4<f64> {
    let (_, c, h, w) = x.dim();
    let r = rois.nrows();
    let mut y = Array4::zeros((r, c, ph, pw));
    for n in 0..r {
        let b = rois[[n, 0]] as usize;
        let sw = (rois[[n, 1]] * scale).round() as i64;
        let sh = (rois[[n, 2]] * scale).round() as i64;
        let ew = (rois[[n, 3]] * scale).round() as i64;
        let eh = (rois[[n, 4]] * scale).round() as i64;
        let bin_h = (eh - sh + 1).max(1) as f64 / ph as f64;
        let bin_w = (ew - sw + 1).max(1) as f64 / pw as f64;
        for ch in 0..c {
            for i in 0..ph {
                for j in 0..pw {
                    let hs = ((i as f64 * bin_h).floor() as i64 + sh).clamp(0, h as i64);
                    let he = (((i + 1) as f64 * bin_h).ceil() as i64 + sh).clamp(0, h as i64);
                    let ws = ((j as f64 * bin_w).floor() as i64 + sw).clamp(0, w as i64);
                    let we = (((j + 1) as f64 * bin_w).ceil() as i64 + sw).clamp(0, w as i64);
                    if he <= hs || we <= ws {
                        continue;
                    }
                    let mut m = f64::NEG_INFINITY;
                    for u in hs..he {
                        for v in ws..we {
                            m = m.max(x[[b, ch, u as usize, v as usize]]);
                        }
                    }
                    y[[n, ch, i, j]] = m;
                }
            }
        }
    }
    y
}

#[test]
fn max_roi_pool_by_hand() {
    // One 4 x 4 image holding 0..16; the roi (x1, y1, x2, y2) = (0, 0, 3, 3)
    // covers it all and 2 x 2 bins take the maximum of each quadrant.
    let x = Array4::from_shape_fn((1, 1, 4, 4), |(_, _, i, j)| (i * 4 + j) as f32);
    let rois = array![[0.0f32, 0.0, 0.0, 3.0, 3.0], [0.0, 1.0, 2.0, 2.0, 3.0]];
    let got = roi32(&x, &rois, &array![2, 2], 1.0).unwrap();
    // The second roi is columns 1..=2 of rows 2..=3: bins of one element.
    assert_eq!(got, array![[[[5.0f32, 7.0], [13.0, 15.0]]], [[[9.0, 10.0], [13.0, 14.0]]]]);
}

#[test]
fn max_roi_pool_handles_several_rois() {
    let x = rand4(2, 3, 9, 11, 90);
    let rois = array![
        [0.0f32, 0.0, 0.0, 10.0, 8.0],
        [1.0, 2.2, 1.7, 7.9, 6.2],
        [1.0, 4.0, 3.0, 4.0, 3.0],
        [0.0, 8.0, 6.0, 14.0, 12.0],
        [1.0, -3.0, -2.0, 2.0, 1.0],
        [0.0, 6.0, 5.0, 2.0, 1.0],
    ];
    for (ps, scale) in [([2usize, 2usize], 1.0f32), ([3, 4], 1.0), ([2, 3], 0.5), ([4, 1], 0.75)] {
        let got = roi32(&x, &rois, &array![ps[0] as i64, ps[1] as i64], scale).unwrap();
        let want = roi_pool_ref(&f64_of(&x), &f64_of(&rois), ps[0], ps[1], f64::from(scale));
        assert_eq!(f64_of(&got), want);
    }
    let x64 = f64_of(&x);
    let rois64 = f64_of(&rois);
    assert_eq!(roi64(&x64, &rois64).unwrap(), roi_pool_ref(&x64, &rois64, 2, 3, 0.5));

    assert!(is_assert(roi32(&x, &array![[2.0f32, 0.0, 0.0, 1.0, 1.0]], &array![2, 2], 1.0)), "batch 2 of 2");
    assert!(is_assert(roi32(&x, &array![[0.0f32, 0.0, 0.0, 1.0]], &array![2, 2], 1.0)), "four numbers");
    assert!(is_assert(roi32(&x, &rois, &array![0, 2], 1.0)));
}

// ===========================================================================
// Scatter
// ===========================================================================

#[test]
fn scatter_is_scatter_elements() {
    // The ONNX example of Scatter along axis 1.
    let data = array![[1.0f32, 2.0, 3.0, 4.0, 5.0]];
    let got = scat(&data, &array![[1, 3]], &array![[1.1f32, 2.1]], 1).unwrap();
    assert_eq!(got, array![[1.0f32, 1.1, 3.0, 2.1, 5.0]]);
    // Along axis 0, with a repeated index: the later update wins.
    let data = Array2::<f32>::zeros((3, 2));
    let got = scat(&data, &array![[1, 0], [1, 2]], &array![[1.0f32, 2.0], [3.0, 4.0]], 0).unwrap();
    assert_eq!(got, array![[0.0f32, 2.0], [3.0, 0.0], [0.0, 4.0]]);
    // Negative indices count from the end.
    let got = scat(&data, &array![[-1, -3]], &array![[5.0f32, 6.0]], 0).unwrap();
    assert_eq!(got, array![[0.0f32, 6.0], [0.0, 0.0], [5.0, 0.0]]);
    assert!(is_assert(scat(&data, &array![[3, 0]], &array![[1.0f32, 2.0]], 0)), "row 3 of 3");
    assert!(is_assert(scat(&data, &array![[0, -4]], &array![[1.0f32, 2.0]], 0)), "row -4 of 3");
    assert!(is_assert(scat(&data, &array![[0, 2]], &array![[1.0f32, 2.0]], 1)), "column 2 of 2");
}

/// ScatterND of points by its definition: copy, then write in order.
fn scatter_nd_ref<A: Copy, D: Dimension>(data: &Array<A, D>, idx: &Array2<i64>, upd: &[A]) -> ArrayD<A> {
    let upd = Array1::from_vec(upd.to_vec()).into_dyn();
    scatter_slices_ref(data, idx, &upd)
}

/// ScatterND by its definition: copy, then assign row q's update to the
/// slice (or point) its k leading coordinates name, in order.
fn scatter_slices_ref<A: Copy, D: Dimension>(data: &Array<A, D>, idx: &Array2<i64>, upd: &ArrayD<A>) -> ArrayD<A> {
    let mut out = data.clone().into_dyn();
    for (q, row) in idx.rows().into_iter().enumerate() {
        let mut place = out.view_mut();
        for (d, &v) in row.iter().enumerate() {
            let i = if v < 0 { v + data.shape()[d] as i64 } else { v };
            place.index_axis_inplace(einlang::ndarray::Axis(0), i as usize);
        }
        place.assign(&upd.index_axis(einlang::ndarray::Axis(0), q));
    }
    out
}

#[test]
fn scatter_nd_slices_with_rows_shorter_than_the_rank() {
    let mut rng = Rng::new(300);
    // k = 1 into rank 3: whole matrices; row 1 named twice, the last wins.
    let x = Array3::from_shape_fn((4, 2, 3), |(a, b, c)| (a * 100 + b * 10 + c) as f32);
    let idx = array![[1i64], [-1], [1]];
    let upd = Array3::from_shape_fn((3, 2, 3), |(q, b, c)| -((q * 100 + b * 10 + c) as f32) - 1.0);
    let got = snd_rows1(&x, &idx, &upd).unwrap();
    assert_eq!(got.into_dyn(), scatter_slices_ref(&x, &idx, &upd.clone().into_dyn()));
    assert_eq!(got_row(&snd_rows1(&x, &idx, &upd).unwrap(), 1), upd.index_axis(einlang::ndarray::Axis(0), 2));

    // k = 2 into rank 4, random rows with repeats and negative entries.
    let x = Array4::from_shape_fn((3, 4, 2, 3), |(a, b, c, d)| (a * 1000 + b * 100 + c * 10 + d) as f64);
    let idx = Array2::from_shape_fn((7, 2), |(_, d)| rng.int(-[3, 4][d], [3, 4][d] - 1) as i64);
    let upd = Array3::from_shape_fn((7, 2, 3), |(q, c, d)| -((q * 100 + c * 10 + d) as f64));
    let got = snd_rows2(&x, &idx.mapv(|v| v as i32), &upd).unwrap();
    assert_eq!(got.into_dyn(), scatter_slices_ref(&x, &idx, &upd.into_dyn()));

    // k = 3 into rank 4: rows of the last axis.
    let x = Array4::from_shape_fn((2, 3, 2, 4), |(a, b, c, d)| (a * 1000 + b * 100 + c * 10 + d) as i32);
    let idx = Array2::from_shape_fn((5, 3), |(_, d)| rng.int(0, [2, 3, 2][d] - 1) as i64);
    let upd = Array2::from_shape_fn((5, 4), |(q, d)| -((q * 10 + d) as i32) - 1);
    let got = snd_rows3(&x, &idx, &upd).unwrap();
    assert_eq!(got.into_dyn(), scatter_slices_ref(&x, &idx, &upd.into_dyn()));

    // k = 1 into a matrix: its rows.
    let m = Array2::from_shape_fn((3, 2), |(i, j)| (i * 2 + j) as i32);
    let got = snd_rows2_of_2(&m, &array![[2i64, 0], [0, 1]], &array![70, 80]).unwrap();
    assert_eq!(got, array![[0, 80], [2, 3], [70, 5]]);

    // A vector's points (k = 1 = its rank).
    let v = array![1.0f32, 2.0, 3.0, 4.0];
    let got = snd_vector(&v, &array![[3i64], [0], [-1]], &array![9.0f32, 8.0, 7.0]).unwrap();
    assert_eq!(got, array![8.0f32, 2.0, 3.0, 7.0]);

    // Updates of the wrong shape, rows of the wrong length, entries out of range.
    let x = Array3::<f32>::zeros((4, 2, 3));
    // The updates' trailing axes are declared as `x`'s (`B`, `C`): checked at entry.
    assert!(
        matches!(snd_rows1(&x, &array![[0i64]], &Array3::zeros((1, 3, 2))), Err(Error::Shape { .. })),
        "updates [1, 3, 2]"
    );
    assert!(is_assert(snd_rows1(&x, &array![[0i64]], &Array3::zeros((2, 2, 3)))), "two updates, one row");
    assert!(is_assert(snd_rows1(&x, &array![[0i64, 1]], &Array3::zeros((1, 2, 3)))), "rows of 2 for k = 1");
    assert!(is_assert(snd_rows1(&x, &array![[4i64]], &Array3::zeros((1, 2, 3)))), "row 4 of 4");
    assert!(is_assert(snd_vector(&v, &array![[-5i64]], &array![1.0f32])), "entry -5 of 4");
}

fn got_row(x: &Array3<f32>, a: usize) -> Array2<f32> {
    x.index_axis(einlang::ndarray::Axis(0), a).to_owned()
}

#[test]
fn scatter_nd_points_at_ranks_two_to_four() {
    // The seed's case: rank 2, one update per index row.
    let data = Array2::from_shape_fn((3, 4), |(i, j)| (i * 4 + j) as f32);
    let idx = array![[0i64, 1], [2, 3], [1, 0], [0, 1]];
    let upd = array![-1.0f32, -2.0, -3.0, -4.0];
    let got = snd2(&data, &idx, &upd).unwrap();
    assert_eq!(got, array![[0.0f32, -4.0, 2.0, 3.0], [-3.0, 5.0, 6.0, 7.0], [8.0, 9.0, 10.0, -2.0]]);

    let mut rng = Rng::new(100);
    let t = f64_of(&rand3(3, 4, 5, 101));
    let idx = Array2::from_shape_fn((12, 3), |(_, d)| rng.int(-[3, 4, 5][d], [3, 4, 5][d] - 1) as i64);
    let upd: Vec<f64> = (0..12).map(|q| 100.0 + q as f64).collect();
    let got = snd3(&t, &idx.mapv(|v| v as i32), &Array1::from_vec(upd.clone())).unwrap();
    assert_eq!(got.into_dyn(), scatter_nd_ref(&t, &idx, &upd));

    let f = Array4::from_shape_fn((2, 3, 2, 4), |(a, b, c, d)| (a * 1000 + b * 100 + c * 10 + d) as i32);
    let idx = Array2::from_shape_fn((9, 4), |(_, d)| rng.int(0, [2, 3, 2, 4][d] - 1) as i64);
    let upd: Vec<i32> = (0..9).map(|q| -1 - q).collect();
    let got = snd4(&f, &idx, &Array1::from_vec(upd.clone())).unwrap();
    assert_eq!(got.into_dyn(), scatter_nd_ref(&f, &idx, &upd));

    // No updates: the data unchanged.
    let none = Array2::<i64>::zeros((0, 2));
    assert_eq!(snd2(&data, &none, &Array1::zeros(0)).unwrap(), data);

    assert!(is_assert(snd2(&data, &array![[3i64, 0]], &array![1.0f32])), "row 3 of 3");
    assert!(is_assert(snd2(&data, &array![[0i64, -5]], &array![1.0f32])), "column -5 of 4");
    assert!(is_assert(snd2(&data, &array![[0i64, 1, 0]], &array![1.0f32])), "three coordinates for rank 2");
    assert!(is_assert(snd2(&data, &array![[0i64, 1]], &array![1.0f32, 2.0])), "two updates for one row");
}

// ===========================================================================
// Resize and Upsample
// ===========================================================================

/// How a source coordinate becomes source elements.
#[derive(Clone, Copy)]
enum Interp {
    /// Nearest, halves rounded down (ONNX `round_prefer_floor`).
    Nearest,
    /// Rounded down (Upsample's nearest).
    Floor,
    Linear,
}

/// One output element of a 1-D resize, by the ONNX reference's rules: the
/// source coordinate, then the neighbours at its floor and the next
/// position, clamped to the axis.
fn resize_1d(data: &[f64], scale: f64, i: usize, half_pixel: bool, how: Interp) -> f64 {
    let n = data.len() as i64;
    let x = if half_pixel { (i as f64 + 0.5) / scale - 0.5 } else { i as f64 / scale };
    let lo = x.floor();
    let at = |p: i64| data[p.clamp(0, n - 1) as usize];
    let frac = x - lo;
    match how {
        Interp::Floor => at(lo as i64),
        Interp::Nearest => at(if frac > 0.5 { lo as i64 + 1 } else { lo as i64 }),
        Interp::Linear => (1.0 - frac) * at(lo as i64) + frac * at(lo as i64 + 1),
    }
}

/// Resize of the last two axes of a 4-D tensor: along the width first,
/// then along the height, as the reference interpolates one axis at a time.
fn resize_ref(x: &Array4<f64>, sh: f64, sw: f64, half_pixel: bool, how: Interp) -> Array4<f64> {
    let (n, c, h, w) = x.dim();
    let (oh, ow) = ((h as f64 * sh) as usize, (w as f64 * sw) as usize);
    let mut y = Array4::zeros((n, c, oh, ow));
    for a in 0..n {
        for b in 0..c {
            let cols: Vec<Vec<f64>> = (0..h)
                .map(|r| {
                    let row: Vec<f64> = (0..w).map(|q| x[[a, b, r, q]]).collect();
                    (0..ow).map(|j| resize_1d(&row, sw, j, half_pixel, how)).collect()
                })
                .collect();
            for j in 0..ow {
                let col: Vec<f64> = (0..h).map(|r| cols[r][j]).collect();
                for i in 0..oh {
                    y[[a, b, i, j]] = resize_1d(&col, sh, i, half_pixel, how);
                }
            }
        }
    }
    y
}

#[test]
fn resize_examples_of_the_onnx_documentation() {
    let x = array![[[[1.0f32, 2.0], [3.0, 4.0]]]];
    let (r, u) = rs32(&x, &array![2.0, 3.0], "nearest").unwrap();
    let want = array![[[
        [1.0f32, 1.0, 1.0, 2.0, 2.0, 2.0],
        [1.0, 1.0, 1.0, 2.0, 2.0, 2.0],
        [3.0, 3.0, 3.0, 4.0, 4.0, 4.0],
        [3.0, 3.0, 3.0, 4.0, 4.0, 4.0]
    ]]];
    assert_eq!(r, want);
    assert_eq!(u, want);
    assert_eq!(rs_seed(&x).unwrap(), want);

    // resize_upsample_scales_linear (half-pixel).
    let (r, u) = rs32(&x, &array![2.0, 2.0], "linear").unwrap();
    let want =
        array![[[[1.0f32, 1.25, 1.75, 2.0], [1.5, 1.75, 2.25, 2.5], [2.5, 2.75, 3.25, 3.5], [3.0, 3.25, 3.75, 4.0]]]];
    assert_eq!(r, want);
    // Upsample reads i / 2: 0, 0.5, 1, 1.5 (clamped at the far edge).
    let want = array![[[[1.0f32, 1.5, 2.0, 2.0], [2.0, 2.5, 3.0, 3.0], [3.0, 3.5, 4.0, 4.0], [3.0, 3.5, 4.0, 4.0]]]];
    assert_eq!(u, want);

    // resize_downsample_scales_nearest and _linear, scales [1, 1, 0.6, 0.6].
    let x = array![[[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]]]];
    let s = array![1.0, 1.0, 0.6, 0.6];
    assert_eq!(rs64(&x, &s, "nearest").unwrap().0, array![[[[1.0, 3.0]]]]);
    let lin = rs64(&x, &s, "linear").unwrap().0;
    assert_close(&lin, &array![[[[8.0 / 3.0, 13.0 / 3.0]]]], 1e-12);
}

#[test]
fn resize_and_upsample_match_the_reference() {
    let x = f64_of(&rand4(2, 2, 5, 7, 110));
    let scales = [(2.0, 3.0), (1.5, 0.5), (0.6, 1.7), (1.0, 1.0), (3.0, 0.3)];
    for (sh, sw) in scales {
        for (mode, near) in [("nearest", Interp::Nearest), ("linear", Interp::Linear)] {
            let (r, u) = rs64(&x, &array![sh, sw], mode).unwrap();
            assert_close(&r, &resize_ref(&x, sh, sw, true, near), 1e-12);
            let up = if matches!(near, Interp::Nearest) { Interp::Floor } else { Interp::Linear };
            assert_close(&u, &resize_ref(&x, sh, sw, false, up), 1e-12);
        }
    }
    // f32, with scales exact in binary so both sides compute one coordinate.
    let x = rand4(1, 3, 4, 6, 111);
    for (sh, sw) in [(2.0f32, 0.5f32), (0.75, 2.5), (4.0, 1.25)] {
        for (mode, near) in [("nearest", Interp::Nearest), ("linear", Interp::Linear)] {
            let (r, u) = rs32(&x, &array![sh, sw], mode).unwrap();
            let (sh, sw) = (f64::from(sh), f64::from(sw));
            assert_close(&f64_of(&r), &resize_ref(&f64_of(&x), sh, sw, true, near), 1e-6);
            let up = if matches!(near, Interp::Nearest) { Interp::Floor } else { Interp::Linear };
            assert_close(&f64_of(&u), &resize_ref(&f64_of(&x), sh, sw, false, up), 1e-6);
        }
    }
    // A matrix: the last two axes are its only ones.
    let m = rand2_f64(3, 4, 112);
    let (r, u) = rs2(&m, &array![2.0, 1.5], "linear").unwrap();
    let m4 = m.clone().into_shape_with_order((1, 1, 3, 4)).unwrap();
    let want = resize_ref(&m4, 2.0, 1.5, true, Interp::Linear);
    assert_close(
        &r,
        &want.index_axis_move(einlang::ndarray::Axis(0), 0).index_axis_move(einlang::ndarray::Axis(0), 0),
        1e-12,
    );
    let want = resize_ref(&m4, 2.0, 1.5, false, Interp::Linear);
    assert_close(
        &u,
        &want.index_axis_move(einlang::ndarray::Axis(0), 0).index_axis_move(einlang::ndarray::Axis(0), 0),
        1e-12,
    );

    // An axis that shrinks below one element is empty.
    let (r, u) = rs2(&array![[1.0, 2.0, 3.0]], &array![0.5, 1.0], "linear").unwrap();
    assert_eq!((r.shape(), u.shape()), (&[0usize, 3][..], &[0usize, 3][..]));

    let x = rand4(1, 1, 2, 2, 113);
    assert!(is_assert(rs32(&x, &array![2.0, 2.0], "cubic")));
    assert!(is_assert(rs32(&x, &array![0.0, 2.0], "nearest")));
    let x = f64_of(&x);
    assert!(is_assert(rs64(&x, &array![2.0, 1.0, 2.0, 2.0], "nearest")), "the batch axis cannot be scaled");
    assert!(is_assert(rs64(&x, &array![2.0, 2.0, 2.0], "nearest")), "three scales for four axes");
}

// ===========================================================================
// Selection
// ===========================================================================

#[test]
fn topk_1d_helper_largest_first() {
    let x = rand1(9, 120);
    for k in 1..=9 {
        let (v, i) = top1d(&x, k).unwrap();
        assert_eq!((v.to_vec(), i.to_vec()), topk_ref(&x.to_vec(), k as usize));
    }
    let y = array![4, 9, 4, 1, 9];
    let (v, i) = top1d_int(&y, 3).unwrap();
    assert_eq!((v.to_vec(), i.to_vec()), (vec![9, 9, 4], vec![1, 4, 0]));
    assert!(is_assert(top1d(&x, 0)));
    assert!(is_assert(top1d(&x, 10)));
    assert!(is_assert(top1d_matrix(&rand2_f64(2, 3, 121))), "a matrix is not a vector");
}
