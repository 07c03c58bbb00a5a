//! Row fusion (`opt::rows`): definitions that feed only the rows of a
//! later definition are computed row by row inside it. The values are
//! those of the definitions as written, checked against plain loops on
//! random shapes, for pipelines that fuse and for ones that must not.

mod common;

use einlang::einlang;
use einlang::ndarray::{Array1, Array2, Array3};
use proptest::prelude::*;

einlang! {
    use std::math::{exp, sqrt};

    /// Layer normalization over the last axis: mean and variance rows.
    pub fn layer_norm(x: [f64; N, C]) -> [f64; N, C] {
        let mean[n] = sum[c](x[n, c]) / (C as f64);
        let var[n] = sum[c]((x[n, c] - mean[n]) * (x[n, c] - mean[n])) / (C as f64);
        let y[n, c] = (x[n, c] - mean[n]) / sqrt(var[n] + 0.00001);
        y
    }

    /// Three consumers of `e`: all join the last one.
    pub fn three(x: [f64; N, C]) -> [f64; N, C] {
        let e[n, c] = exp(x[n, c]);
        let y[n, c] = e[n, c] / sum[k](e[n, k]);
        let z[n, c] = y[n, c] + e[n, c];
        z
    }

    /// `e` is read at another row: it stays a whole tensor.
    pub fn other_row(x: [f64; N, C]) -> [f64; N, C] {
        let e[n, c] = exp(x[n, c]);
        let y[n, c] = e[n, c] - e[0, c] + sum[k](e[n, k]);
        y
    }

    /// `e` is also the result: it stays a whole tensor.
    pub fn returned(x: [f64; N, C]) -> ([f64; N, C], [f64; N, C]) {
        let e[n, c] = exp(x[n, c]);
        let y[n, c] = e[n, c] / sum[k](e[n, k]);
        (y, e)
    }

    /// Softmax over the first axis: column maxima and sums, computed with
    /// the rows' loop outside.
    pub fn column_softmax(x: [f64; N, C]) -> [f64; N, C] {
        let m[c] = max[k](x[k, c]);
        let e[n, c] = exp(x[n, c] - m[c]);
        let y[n, c] = e[n, c] / sum[k](e[k, c]);
        y
    }

    /// Column means, minima and row sums.
    pub fn stats(x: [f64; N, C]) -> ([f64; C], [f64; C], [f64; N]) {
        let mean[c] = sum[k](x[k, c]) / (N as f64);
        let low[c] = min[k](x[k, c]) * 2.0;
        let rows[n] = sum[k](x[n, k]);
        (mean, low, rows)
    }

    /// A reversed copy read once, inside a reduction: read from `x` there
    /// (`opt::inline`), also for an empty axis.
    pub fn reversed_dot(x: [f64; N, C], w: [f64; N, C]) -> [f64; C] {
        let r[i in 0..N, c] = x[N - 1 - i, c];
        let y[c] = sum[i](r[i, c] * w[i, c]) + 1.0;
        y
    }

    /// A softmax row: `e`'s row is computed in `y`'s row, each element of
    /// `y` replacing the `e` it reads (`codegen/rust/in_place.rs`); the
    /// value reads it twice, and `x` besides.
    pub fn in_place(x: [f64; N, C]) -> [f64; N, C] {
        let m[n] = max[c](x[n, c]);
        let e[n, c] = exp(x[n, c] - m[n]);
        let y[n, c] = e[n, c] * e[n, c] / sum[k](e[n, k]) + x[n, c];
        y
    }

    /// `e` read at another position of the row: it keeps its own row
    /// (writing `y`'s row over it would read elements already replaced).
    pub fn reversed_row(x: [f64; N, C]) -> [f64; N, C] {
        let e[n, c] = exp(x[n, c]);
        let y[n, c in 0..C] = e[n, C - 1 - c] / sum[k](e[n, k]);
        y
    }

    /// The README's softmax: the row's sum of exponentials is added up in
    /// the loop that stores them into `y`'s row (`in_place.rs`).
    pub fn softmax32(x: [f32; N, C]) -> [f32; N, C] {
        let m[n] = max[c](x[n, c]);
        let e[n, c] = exp(x[n, c] - m[n]);
        let y[n, c] = e[n, c] / sum[k](e[n, k]);
        y
    }

    pub fn softmax64(x: [f64; N, C]) -> [f64; N, C] {
        let m[n] = max[c](x[n, c]);
        let e[n, c] = exp(x[n, c] - m[n]);
        let y[n, c] = e[n, c] / sum[k](e[n, k]);
        y
    }

    /// A row divided by one value along it: computed in place, divided
    /// through the divisor's reciprocal in the AVX-512 form
    /// (`in_place.rs`, `vmath::lanes::avx512::div_f32_in_place`).
    pub fn divided32(x: [f32; N, C], w: [f32; N]) -> [f32; N, C] {
        let e[n, c] = x[n, c] * 2.0;
        let y[n, c] = e[n, c] / (sum[k](e[n, k]) * w[n]);
        y
    }

    /// Sums whose term is `exp` (`reduce_in_lanes` with the sixteen-lane
    /// `exp`): a row sum, and `log_softmax` (its log-sum-exp in the row's
    /// prelude).
    pub fn exp_sums(x: [f32; N, C]) -> [f32; N] {
        let s[n] = sum[c](exp(x[n, c] - 1.0));
        s
    }

    pub fn log_softmax32(x: [f32; N, C]) -> [f32; N, C] {
        std::ml::log_softmax(x)
    }

    /// Element loops whose value has a sixteen-lane form (`lane_maps.rs`).
    pub fn exp_map(x: [f32; N]) -> [f32; N] {
        let y[i] = exp(x[i] - 1.0);
        y
    }

    pub fn sigmoid_map(x: [f32; N, C]) -> [f32; N, C] {
        let y[n, c] = std::math::sigmoid(x[n, c]);
        y
    }

    /// The lane forms inside arithmetic: the logistic function written
    /// out, SiLU, and `exp` twice with one argument.
    pub fn sigmoid_written(x: [f32; N]) -> [f32; N] {
        let y[i] = 1.0 / (1.0 + exp(-x[i]));
        y
    }

    pub fn silu_rows(x: [f32; N, C]) -> [f32; N, C] {
        let y[n, c] = x[n, c] * std::math::sigmoid(x[n, c]);
        y
    }

    /// A map without a lane form, bound by its arithmetic (`ahead.rs`).
    pub fn tanh_map(x: [f32; N]) -> [f32; N] {
        let y[i] = std::math::tanh(x[i]) * 2.0;
        y
    }

    pub fn tanh_rows(x: [f32; N, C]) -> [f32; N, C] {
        let y[n, c] = std::math::tanh(x[n, c]) * 2.0;
        y
    }

    pub fn exp_ratio(x: [f32; N]) -> [f32; N] {
        let y[i] = exp(x[i]) / (1.0 + exp(x[i])) + 0.5 * x[i];
        y
    }

    /// A sum of exponentials of `a - max(a)` over a row, the maximum a
    /// tensor of its own (the lanes' form for arguments at most zero).
    pub fn exp_below_max(x: [f32; N, C]) -> [f32; N] {
        let m[n] = max[c](x[n, c] * 2.0);
        let s[n] = sum[c](exp(x[n, c] * 2.0 - m[n]));
        s
    }

    /// Rank three: the row is a matrix, its maximum a row tensor.
    pub fn centred3(x: [f32; B, I, J]) -> [f32; B, I, J] {
        let m[b, i] = max[j](x[b, i, j]);
        let y[b, i, j] = exp(x[b, i, j] - m[b, i]);
        y
    }
}

fn matrix(n: usize, c: usize, seed: u64) -> Array2<f64> {
    Array2::from_shape_fn((n, c), |(i, j)| (((i * 31 + j * 17) as u64 * 2654435761 + seed) % 1000) as f64 / 250.0 - 2.0)
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * (1.0 + b.abs())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn fused_pipelines_agree_with_loops(n in 1usize..6, c in 1usize..24, seed in 0u64..1000) {
        let x = matrix(n, c, seed);
        let ln = layer_norm(&x).unwrap();
        let th = three(&x).unwrap();
        let orow = other_row(&x).unwrap();
        let (ret_y, ret_e) = returned(&x).unwrap();
        let cs = column_softmax(&x).unwrap();
        let (mean, low, rows) = stats(&x).unwrap();
        for j in 0..c {
            let col = x.column(j);
            let m = col.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let total: f64 = col.iter().map(|v| (v - m).exp()).sum();
            prop_assert!(close(mean[j], col.sum() / n as f64, 1e-12));
            prop_assert!(close(low[j], col.iter().cloned().fold(f64::INFINITY, f64::min) * 2.0, 1e-12));
            for i in 0..n {
                prop_assert!(close(cs[[i, j]], (x[[i, j]] - m).exp() / total, 1e-12));
            }
        }
        for i in 0..n {
            prop_assert!(close(rows[i], x.row(i).sum(), 1e-12));
        }
        let w = matrix(n, c, seed + 7);
        let rd = reversed_dot(&x, &w).unwrap();
        for j in 0..c {
            let want: f64 = (0..n).map(|i| x[[n - 1 - i, j]] * w[[i, j]]).sum::<f64>() + 1.0;
            prop_assert!(close(rd[j], want, 1e-12));
        }
        let ip = in_place(&x).unwrap();
        let rr = reversed_row(&x).unwrap();
        for i in 0..n {
            let row = x.row(i);
            let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let shifted: f64 = row.iter().map(|v| (v - m).exp()).sum();
            let total: f64 = row.iter().map(|v| v.exp()).sum();
            for j in 0..c {
                let e = (x[[i, j]] - m).exp();
                prop_assert!(close(ip[[i, j]], e * e / shifted + x[[i, j]], 1e-12));
                prop_assert!(close(rr[[i, j]], x[[i, c - 1 - j]].exp() / total, 1e-12));
            }
        }
        for i in 0..n {
            let row = x.row(i);
            let mean = row.sum() / c as f64;
            let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / c as f64;
            let total: f64 = row.iter().map(|v| v.exp()).sum();
            for j in 0..c {
                let v = x[[i, j]];
                prop_assert!(close(ln[[i, j]], (v - mean) / (var + 0.00001).sqrt(), 1e-9));
                prop_assert!(close(th[[i, j]], v.exp() / total + v.exp(), 1e-12));
                prop_assert!(close(orow[[i, j]], v.exp() - x[[0, j]].exp() + total, 1e-12));
                prop_assert!(close(ret_y[[i, j]], v.exp() / total, 1e-12));
                prop_assert!(close(ret_e[[i, j]], v.exp(), 1e-12));
            }
        }
    }

    #[test]
    fn rank_three_rows_agree_with_loops(b in 1usize..4, i in 1usize..6, j in 1usize..9, seed in 0u64..1000) {
        let flat = matrix(b * i, j, seed).mapv(|v| v as f32);
        let x = Array3::from_shape_vec((b, i, j), flat.iter().cloned().collect()).unwrap();
        let got = centred3(&x).unwrap();
        for p in 0..b {
            for q in 0..i {
                let m = (0..j).map(|r| x[[p, q, r]]).fold(f32::NEG_INFINITY, f32::max);
                for r in 0..j {
                    let w = (x[[p, q, r]] - m).exp();
                    prop_assert!((got[[p, q, r]] - w).abs() <= 1e-6 * (1.0 + w.abs()));
                }
            }
        }
    }
}

/// A row divided in place by one value along it gives the bits of the
/// division, element by element (the sum in the reduction's lane order):
/// on ordinary rows, and on rows that take the division's other paths in
/// the AVX-512 form: dividends that are zero, subnormal, huge, infinite or
/// NaN (in some run of sixteen and in the tail), divisors outside `[2^-24,
/// 2^24]`, a zero or NaN divisor; rows of 0 to 40 elements.
#[test]
fn a_row_divided_by_one_value_keeps_the_bits_of_the_division() {
    let specials = [0.0f32, -0.0, 1e-40, -3e-39, 1e38, f32::INFINITY, f32::NAN, 2.0f32.powi(-97), 2.0f32.powi(97)];
    let scales = [1.0f32, 0.37, 1e-30, 3e25, 2.0f32.powi(-24), 0.0, f32::NAN, -1e-7];
    for c in [0usize, 1, 7, 16, 17, 33, 40] {
        let n = 4;
        let base = matrix(n, c, c as u64 + 11).mapv(|v| v as f32);
        // Row 0 ordinary; row 1 with a special value in every position
        // (a different one at each); rows 2 and 3 with one special each.
        let mut x = base.clone();
        for j in 0..c {
            x[[1, j]] = specials[j % specials.len()];
        }
        if c > 0 {
            x[[2, c / 2]] = 1e-44;
            x[[3, c - 1]] = -0.0;
        }
        for &scale in &scales {
            let w = Array1::from_shape_fn(n, |i| scale * (1.0 + i as f32));
            let got = divided32(&x, &w).unwrap();
            for i in 0..n {
                let e: Vec<f32> = x.row(i).iter().map(|v| v * 2.0).collect();
                let d = lane_sum(&e) * w[i];
                for j in 0..c {
                    let want = e[j] / d;
                    let g = got[[i, j]];
                    assert!(
                        g.to_bits() == want.to_bits() || (g.is_nan() && want.is_nan()),
                        "{c} columns, scale {scale:e}, at ({i}, {j}): {g:e} against {want:e}"
                    );
                }
            }
        }
    }
}

/// Maps bound by their arithmetic run each block (one axis) or row (two)
/// in pieces of 64 elements that ask for lines a kilobyte ahead
/// (`codegen/rust/ahead.rs`): at lengths around a piece's and long enough
/// to be split, on 1 to 3 threads (so blocks and pieces start anywhere),
/// every element has the bits of the element function.
#[test]
fn maps_that_ask_ahead_keep_the_element_functions_bits() {
    use einlang::__private::{arith, vmath};
    for threads in 1..=3 {
        common::split_small_loops();
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("pool");
        pool.install(|| {
            for len in [1usize, 63, 64, 65, 129, 1000, 40_001, 100_003] {
                let x = Array1::from_shape_fn(len, |i| ((i * 7919) % 2003) as f32 * 0.013 - 13.0);
                let (e, r, t) = (exp_map(&x).unwrap(), exp_ratio(&x).unwrap(), tanh_map(&x).unwrap());
                let s = sigmoid_written(&x).unwrap();
                for i in 0..len {
                    let v = x[i];
                    let at = format!("{len} elements, {threads} threads, at {i}");
                    assert_eq!(e[i].to_bits(), arith::exp_f32(v - 1.0).to_bits(), "exp, {at}");
                    let ev = arith::exp_f32(v);
                    assert_eq!(r[i].to_bits(), (ev / (1.0 + ev) + 0.5 * v).to_bits(), "exp ratio, {at}");
                    assert_eq!(t[i].to_bits(), (vmath::tanh_f32(v) * 2.0).to_bits(), "tanh, {at}");
                    assert_eq!(s[i].to_bits(), (1.0 / (1.0 + arith::exp_f32(-v))).to_bits(), "sigmoid, {at}");
                }
            }
            // Rows of two-axis maps, in pieces that ask ahead across rows.
            for c in [1usize, 63, 64, 65, 300, 1000] {
                let n = 3 + 70_000 / c;
                let x = Array2::from_shape_fn((n, c), |(i, j)| ((i * 131 + j * 7919) % 2003) as f32 * 0.013 - 13.0);
                let (t, g) = (tanh_rows(&x).unwrap(), sigmoid_map(&x).unwrap());
                for ((i, j), v) in x.indexed_iter() {
                    let at = format!("{n} x {c}, {threads} threads, at ({i}, {j})");
                    assert_eq!(t[[i, j]].to_bits(), (vmath::tanh_f32(*v) * 2.0).to_bits(), "tanh, {at}");
                    assert_eq!(g[[i, j]].to_bits(), vmath::sigmoid_f32(*v).to_bits(), "sigmoid, {at}");
                }
            }
        });
    }
}

/// An element loop of `exp` or `sigmoid`, alone or inside arithmetic (runs
/// of sixteen through `vmath::lanes`, the rest element by element), gives
/// the bits of the element functions' formula at every position: vectors of 0 to 40 elements and
/// rows of 1 to 33, holding the special values (zeros, subnormals, the
/// ends of the exponential's range, infinities, NaN) at every position.
#[test]
fn lane_maps_keep_the_element_functions_bits() {
    use einlang::__private::{arith, vmath};
    let specials = [0.0f32, -0.0, 1e-40, -104.5, -87.4, 88.8, 89.5, 1e30, f32::INFINITY, -f32::INFINITY, f32::NAN];
    // Two NaNs count as the same: Rust leaves the sign and payload of a
    // NaN that arithmetic returns unspecified, and LLVM may swap the
    // operands of `x * sigmoid(x)` (on Zen 3's AVX2 form the product of
    // two NaNs kept the other operand's sign).
    let same = |got: f32, want: f32, what: &str| {
        assert!(got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()), "{what}: {got:e} against {want:e}");
    };
    for len in 0..=40usize {
        let x = Array1::from_shape_fn(len, |i| {
            if i % 5 == 3 {
                specials[(i / 5 + len) % specials.len()]
            } else {
                (i as f32 * 0.77 - 9.0) * 3.1
            }
        });
        let got = exp_map(&x).unwrap();
        let written = sigmoid_written(&x).unwrap();
        let ratio = exp_ratio(&x).unwrap();
        for i in 0..len {
            same(got[i], arith::exp_f32(x[i] - 1.0), &format!("exp, {len} elements, at {i}"));
            same(written[i], 1.0 / (1.0 + arith::exp_f32(-x[i])), &format!("1 / (1 + exp(-x)), at {i}"));
            let e = arith::exp_f32(x[i]);
            same(ratio[i], e / (1.0 + e) + 0.5 * x[i], &format!("exp(x) / (1 + exp(x)) + x / 2, at {i}"));
        }
    }
    for c in [1usize, 15, 16, 17, 33] {
        let x = Array2::from_shape_fn((3, c), |(n, j)| {
            if (n + j) % 4 == 0 {
                specials[(n * c + j) % specials.len()]
            } else {
                j as f32 * 1.3 - 20.0 + n as f32
            }
        });
        let got = sigmoid_map(&x).unwrap();
        let silu = silu_rows(&x).unwrap();
        for ((n, j), g) in got.indexed_iter() {
            let v = x[[n, j]];
            same(*g, vmath::sigmoid_f32(v), &format!("sigmoid, {c} columns, at ({n}, {j})"));
            same(silu[[n, j]], v * vmath::sigmoid_f32(v), &format!("x sigmoid(x), {c} columns, at ({n}, {j})"));
        }
    }
}

/// Empty rows and an empty row axis: nothing to compute, no failure.
#[test]
fn empty_shapes() {
    let x = Array2::<f64>::zeros((0, 3));
    assert_eq!(layer_norm(&x).unwrap().shape(), &[0, 3]);
    let x = Array2::<f64>::zeros((3, 0));
    assert_eq!(three(&x).unwrap().shape(), &[3, 0]);
}

/// The sum of a row in sixteen lanes as a reduction in lanes adds it (the
/// term `k` into lane `k % 16` while a whole run of sixteen remains, the
/// rest into a tail, then the lanes halving, lane `p` plus lane `p + 8`,
/// then `p + 4`, `p + 2`, `p + 1`, plus the tail): the order the fused sum
/// must keep.
fn lane_sum<T: Copy + Default + std::ops::Add<Output = T>>(row: &[T]) -> T {
    let (mut lanes, mut tail) = ([T::default(); 16], T::default());
    let whole = row.len() / 16 * 16;
    for (k, &v) in row[..whole].iter().enumerate() {
        lanes[k % 16] = lanes[k % 16] + v;
    }
    for &v in &row[whole..] {
        tail = tail + v;
    }
    for h in [8, 4, 2, 1] {
        for p in 0..h {
            lanes[p] = lanes[p] + lanes[p + h];
        }
    }
    lanes[0] + tail
}

/// The fused softmax, `f32` and `f64`, on rows of 0 to 2100 elements (runs
/// of sixteen with and without a tail; rows from 512 bytes to 16 KiB ask
/// for the next row as they go, `einlang::__private::prefetch`, longer
/// and shorter ones do not): bit for bit the naive loops with the
/// runtime's `exp` and the sum in the reduction's lane order.
#[test]
fn fused_row_sum_keeps_the_bits_of_the_lanes() {
    use einlang::__private::{arith, vmath};
    for c in [0usize, 1, 7, 15, 16, 17, 31, 32, 33, 100, 128, 301, 2100] {
        for n in [0usize, 1, 3] {
            let x = matrix(n, c, c as u64 * 7 + n as u64) * 3.0;
            let got = softmax64(&x).unwrap();
            let x32 = x.mapv(|v| v as f32);
            let got32 = softmax32(&x32).unwrap();
            for i in 0..n {
                let row = x.row(i);
                let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let e: Vec<f64> = row.iter().map(|v| vmath::exp_f64(v - m)).collect();
                let s = lane_sum(&e);
                let row32 = x32.row(i);
                let m32 = row32.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
                let e32: Vec<f32> = row32.iter().map(|v| arith::exp_f32(v - m32)).collect();
                let s32 = lane_sum(&e32);
                for j in 0..c {
                    assert_eq!(got[[i, j]].to_bits(), (e[j] / s).to_bits(), "f64 {n}x{c} at ({i}, {j})");
                    assert_eq!(got32[[i, j]].to_bits(), (e32[j] / s32).to_bits(), "f32 {n}x{c} at ({i}, {j})");
                }
            }
        }
    }
}

/// A sum of `exp` terms computed sixteen at a time keeps the bits of the
/// runtime's `exp` summed in the reduction's lane order: row sums, and
/// `std::ml::log_softmax` (`x - (m + ln(sum exp(x - m)))`, the maximum
/// in lanes, `ln` the runtime's), on rows of 0 to 100 elements (runs of
/// sixteen with and without a tail), including NaN and infinite terms,
/// on 1 to 3 threads.
#[test]
fn sums_of_exponentials_keep_the_bits_of_the_lanes() {
    use einlang::__private::{arith, vmath};
    for threads in 1..=3 {
        common::split_small_loops();
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("pool");
        pool.install(|| {
            for c in [0usize, 1, 7, 15, 16, 17, 33, 100, 301] {
                let n = 4;
                let mut x = matrix(n, c, c as u64 * 5 + 1).mapv(|v| (v * 9.0) as f32);
                if c > 3 {
                    x[[2, c - 1]] = f32::NAN;
                    x[[3, 2]] = f32::INFINITY;
                    x[[1, 0]] = -200.0;
                }
                let sums = exp_sums(&x).unwrap();
                let logs = log_softmax32(&x).unwrap();
                for i in 0..n {
                    let e: Vec<f32> = x.row(i).iter().map(|v| arith::exp_f32(v - 1.0)).collect();
                    let want = lane_sum(&e);
                    let got = sums[i];
                    assert!(
                        got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                        "{c} columns, row {i}, {threads} threads: {got:e} against {want:e}"
                    );
                    let row: Vec<f32> = x.row(i).to_vec();
                    let whole = row.len() / 16 * 16;
                    let mut lanes = [f32::NEG_INFINITY; 16];
                    for (k, &v) in row[..whole].iter().enumerate() {
                        if v > lanes[k % 16] {
                            lanes[k % 16] = v;
                        }
                    }
                    let mut m = lanes[0];
                    for &l in lanes[1..].iter().chain(&row[whole..]) {
                        if l > m {
                            m = l;
                        }
                    }
                    let e: Vec<f32> = row.iter().map(|v| arith::exp_f32(v - m)).collect();
                    let lse = m + vmath::ln_f32(lane_sum(&e));
                    for j in 0..c {
                        let (got, want) = (logs[[i, j]], row[j] - lse);
                        assert!(
                            got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                            "log_softmax {c} columns at ({i}, {j}), {threads} threads: {got:e} against {want:e}"
                        );
                    }
                }
            }
        });
    }
}

/// Exponentials of `a - max(a)` along a row (the fused softmax, and a sum
/// whose maximum is a tensor of its own) take the lanes' form for
/// arguments at most zero: bit for bit the runtime's `exp` of the same
/// differences, on rows holding NaN, `inf`, both zeros and values far
/// below the maximum, and rows all `-inf` or all NaN (whose differences
/// are NaN), of 5 to 40 elements, on 1 to 3 threads.
#[test]
fn exponentials_below_the_rows_maximum_keep_the_bits() {
    use einlang::__private::arith;
    let same = |got: f32, want: f32, what: &str| {
        assert!(got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()), "{what}: {got:e} against {want:e}");
    };
    for threads in 1..=3 {
        common::split_small_loops();
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("pool");
        pool.install(|| {
            for c in [5usize, 16, 17, 40] {
                let x = Array2::from_shape_fn((5, c), |(i, j)| match (i, j % 5) {
                    (0, 2) => f32::NAN,
                    (1, 3) => f32::INFINITY,
                    (2, _) => f32::NEG_INFINITY,
                    (3, 0) => -0.0,
                    (3, 1) => 0.0,
                    (3, 2) => -1e30,
                    (3, 3) => -200.0,
                    (4, _) => f32::NAN,
                    _ => j as f32 * 0.37 - 3.0 + i as f32,
                });
                let soft = softmax32(&x).unwrap();
                let sums = exp_below_max(&x).unwrap();
                for i in 0..5 {
                    let row: Vec<f32> = x.row(i).to_vec();
                    let m = row.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
                    let e: Vec<f32> = row.iter().map(|v| arith::exp_f32(v - m)).collect();
                    let s = lane_sum(&e);
                    for j in 0..c {
                        same(soft[[i, j]], e[j] / s, &format!("softmax {c} columns at ({i}, {j}), {threads} threads"));
                    }
                    let m2 = row.iter().map(|v| v * 2.0).fold(f32::NEG_INFINITY, f32::max);
                    let e2: Vec<f32> = row.iter().map(|v| arith::exp_f32(v * 2.0 - m2)).collect();
                    same(sums[i], lane_sum(&e2), &format!("sum of exp, {c} columns, row {i}, {threads} threads"));
                }
            }
        });
    }
}
