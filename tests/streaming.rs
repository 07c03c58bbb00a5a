//! Results written with non-temporal stores (`einlang::cpu::Streaming`):
//! a fill whose body writes every element computes each piece of the
//! result into a buffer on the stack and streams its lines out. Each
//! function runs with streaming forced on (`Always`, whatever the size
//! and processor) and off (`Never`), into fresh results and into the
//! caller's buffers, on one to three threads; the results must have the
//! same bits and match a plain loop. One test sets the process-wide mode,
//! so the cases run in order inside it.

mod common;

use einlang::cpu::{set_streaming, Streaming};
use einlang::einlang;
use einlang::ndarray::{s, Array1, Array2, Array3};

einlang! {
    pub fn tanh_map(x: [f32; N]) -> [f32; N] {
        let y[i] = std::math::tanh(x[i]) * 2.0 + x[i];
        y
    }

    pub fn square_f64(x: [f64; N]) -> [f64; N] {
        let y[i] = x[i] * x[i] - 0.5;
        y
    }

    pub fn softmax(x: [f32; R, C]) -> [f32; R, C] {
        let m[r] = max[c](x[r, c]);
        let e[r, c] = std::math::exp(x[r, c] - m[r]);
        let y[r, c] = e[r, c] / sum[k](e[r, k]);
        y
    }

    pub fn transpose(x: [f32; R, C]) -> [f32; C, R] {
        let y[j, i] = x[i, j];
        y
    }

    pub fn shift3(x: [i32; A, B, C]) -> [i32; A, B, C] {
        let y[a, b, c] = x[a, b, c] * 3 + (a as i32) - (c as i32);
        y
    }
}

fn value(i: usize) -> f32 {
    ((i * 7919) % 1013) as f32 * 0.01 - 5.0
}

/// `f` with streaming forced on and off, on one to three threads: all the
/// results equal (bit for bit, as `PartialEq` on the bits' vectors).
fn same_either_way<T: PartialEq + std::fmt::Debug + Send>(label: &str, f: impl Fn() -> T + Sync) -> T {
    let mut first: Option<T> = None;
    for threads in [1, 2, 3] {
        common::split_small_loops();
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("pool");
        for mode in [Streaming::Never, Streaming::Always] {
            set_streaming(mode);
            let got = pool.install(&f);
            match &first {
                None => first = Some(got),
                Some(want) => assert_eq!(&got, want, "{label}: {mode:?} on {threads} threads"),
            }
        }
    }
    set_streaming(Streaming::Auto);
    first.expect("at least one run")
}

fn bits32(v: impl IntoIterator<Item = f32>) -> Vec<u32> {
    v.into_iter().map(f32::to_bits).collect()
}

#[test]
fn streamed_results_have_the_bits_of_plain_stores() {
    // Rank 1: empty, one, odd, past a piece of the stack buffer, prime.
    for n in [0usize, 1, 7, 4099, 100_003] {
        let x = Array1::from_shape_fn(n, value);
        let fresh = same_either_way("tanh fresh", || bits32(tanh_map(&x).unwrap()));
        let into = same_either_way("tanh into", || {
            let mut out = Array1::from_elem(n, f32::NAN);
            tanh_map_into(&x, &mut out).unwrap();
            bits32(out)
        });
        assert_eq!(fresh, into);
        // Into a view that starts one element into its buffer: lines of
        // the view's memory are not the stack buffer's.
        let shifted = same_either_way("tanh into a shifted view", || {
            let mut whole = Array1::from_elem(n + 1, f32::NAN);
            tanh_map_into(&x, whole.slice_mut(s![1..])).unwrap();
            assert!(whole[0].is_nan(), "the element before the view was written");
            bits32(whole.slice(s![1..]).iter().copied())
        });
        assert_eq!(fresh, shifted);
        for (i, (&got, &v)) in fresh.iter().zip(x.iter()).enumerate() {
            let want = v.tanh() * 2.0 + v;
            let got = f32::from_bits(got);
            assert!((got - want).abs() <= 4e-6 * (1.0 + want.abs()), "tanh {n}: [{i}] {got} vs {want}");
        }
        let x64 = x.mapv(f64::from);
        let sq = same_either_way("square f64", || square_f64(&x64).unwrap().mapv(f64::to_bits).to_vec());
        for (&got, &v) in sq.iter().zip(x64.iter()) {
            assert_eq!(f64::from_bits(got), v * v - 0.5);
        }
    }
    // Rank 2: rows of every length around the stack buffer's (4096 `f32`),
    // whose rows then go out plainly.
    for (r, c) in [(0usize, 5usize), (1, 1), (7, 13), (257, 31), (33, 1024), (5, 4096), (3, 5003)] {
        let x = Array2::from_shape_fn((r, c), |(i, j)| value(i * c + j));
        let sm = same_either_way("softmax", || {
            let mut out = Array2::from_elem((r, c), f32::NAN);
            softmax_into(&x, &mut out).unwrap();
            bits32(out)
        });
        assert_eq!(sm, same_either_way("softmax fresh", || bits32(softmax(&x).unwrap())));
        for i in 0..r {
            let row = x.row(i);
            let m = row.fold(f32::NEG_INFINITY, |a, &b| a.max(b));
            let z: f64 = row.iter().map(|&v| f64::from((v - m).exp())).sum();
            for j in 0..c {
                let want = f64::from((x[[i, j]] - m).exp()) / z;
                let got = f64::from(f32::from_bits(sm[i * c + j]));
                assert!((got - want).abs() <= 3e-5 * (want + 1e-6), "softmax {r}x{c}: [{i}, {j}] {got} vs {want}");
            }
        }
        let t = same_either_way("transpose", || bits32(transpose(&x).unwrap()));
        for i in 0..r {
            for j in 0..c {
                assert_eq!(f32::from_bits(t[j * r + i]), x[[i, j]], "transpose {r}x{c}");
            }
        }
    }
    // Rank 3, integers.
    for (a, b, c) in [(1usize, 1usize, 1usize), (3, 7, 11), (17, 64, 129)] {
        let x = Array3::from_shape_fn((a, b, c), |(i, j, k)| (i * 1000 + j * 31 + k) as i32 - 500);
        let y = same_either_way("shift3", || shift3(&x).unwrap().into_raw_vec_and_offset().0);
        for ((i, j, k), &v) in x.indexed_iter() {
            assert_eq!(y[(i * b + j) * c + k], v * 3 + i as i32 - k as i32);
        }
    }
}
