//! Half precision against `f32` on the CPU, measured in the same run.
//!
//! - matmul 512^2 and 1024^2 in `f16`, `bf16` and `f32` (einlang's GEMM
//!   dispatch: `f16` sums of up to 512 terms to the `gemm` crate's `f16`
//!   kernels, longer ones and `bf16` widened to the `f32` product), and the
//!   `gemm` crate's `f16` product called directly on the same operands;
//! - row-wise softmax, 4096 x 1024, in `f16`, `bf16` and `f32` (every
//!   stored value rounded, arithmetic in `f32`);
//! - 64 Ki `f16` values (in the caches) widened to `f32` and rounded back,
//!   256 times a call, and 16 Mi (from memory) once: the element
//!   conversions generated code uses (`half_bits::f16_to_f32`,
//!   `f16_from_f32`) in a loop compiled for AVX2 as the generated twins
//!   are, against the runtime's slice conversions (F16C where the
//!   processor has it), which the widened products use.
//!
//! Each line is the median of `RUNS` timed calls after one warm-up call;
//! the ratios are against `f32` in the same run. Results are checked
//! against `f32` before anything is timed.
//!
//! ```sh
//! cargo bench --bench half
//! ```

use std::hint::black_box;
use std::time::Instant;

use einlang::half::{bf16, f16};
use einlang::ndarray::Array2;

mod k {
    einlang::einlang! {
        use std::math::exp;

        pub fn mm16(a: [f16; M, K], b: [f16; K, N]) -> [f16; M, N] {
            let c[i, j] = sum[k](a[i, k] * b[k, j]);
            c
        }
        pub fn mmb16(a: [bf16; M, K], b: [bf16; K, N]) -> [bf16; M, N] {
            let c[i, j] = sum[k](a[i, k] * b[k, j]);
            c
        }
        pub fn mm32(a: [f32; M, K], b: [f32; K, N]) -> [f32; M, N] {
            let c[i, j] = sum[k](a[i, k] * b[k, j]);
            c
        }
        pub fn softmax16(x: [f16; N, C]) -> [f16; N, C] {
            let m[i] = max[j](x[i, j]);
            let e[i, j] = exp(x[i, j] - m[i]);
            let s[i] = sum[j](e[i, j]);
            let y[i, j] = e[i, j] / s[i];
            y
        }
        pub fn softmaxb16(x: [bf16; N, C]) -> [bf16; N, C] {
            let m[i] = max[j](x[i, j]);
            let e[i, j] = exp(x[i, j] - m[i]);
            let s[i] = sum[j](e[i, j]);
            let y[i, j] = e[i, j] / s[i];
            y
        }
        pub fn softmax32(x: [f32; N, C]) -> [f32; N, C] {
            let m[i] = max[j](x[i, j]);
            let e[i, j] = exp(x[i, j] - m[i]);
            let s[i] = sum[j](e[i, j]);
            let y[i, j] = e[i, j] / s[i];
            y
        }
    }
}

const RUNS: usize = 9;

fn median_ms(mut f: impl FnMut()) -> f64 {
    f();
    let mut times: Vec<f64> = (0..RUNS)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[RUNS / 2]
}

fn random(r: usize, c: usize, seed: u64) -> Array2<f32> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
    Array2::from_shape_fn((r, c), |_| {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    })
}

/// The largest difference from `want`, relative to its largest magnitude.
fn rel_err(got: impl Iterator<Item = f32>, want: &Array2<f32>) -> f32 {
    let scale = want.iter().fold(0f32, |m, v| m.max(v.abs()));
    got.zip(want.iter()).fold(0f32, |m, (g, w)| m.max((g - w).abs())) / scale
}

/// The `gemm` crate's `f16` product, called directly.
fn gemm_crate_f16(a: &Array2<f16>, b: &Array2<f16>) -> Array2<f16> {
    let (m, k, n) = (a.nrows(), a.ncols(), b.ncols());
    let mut c = Array2::from_elem((m, n), f16::ZERO);
    let threads = rayon::current_num_threads();
    // SAFETY: standard-layout operands and output of the stated shapes.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            c.as_mut_ptr(),
            1,
            n as isize,
            false,
            a.as_ptr(),
            1,
            k as isize,
            b.as_ptr(),
            1,
            n as isize,
            f16::ZERO,
            f16::ONE,
            false,
            false,
            false,
            gemm::Parallelism::Rayon(threads),
        )
    };
    c
}

/// Widens `src` into `wide` and rounds it back into `back`, element by
/// element, in a loop compiled for AVX2 and FMA.
///
/// # Safety
///
/// The processor has AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn elements_avx2(src: &[f16], wide: &mut [f32], back: &mut [f16]) {
    use einlang::__private::half_bits::{f16_from_f32, f16_to_f32};
    for (w, s) in wide.iter_mut().zip(src) {
        *w = f16_to_f32(*s);
    }
    for (b, w) in back.iter_mut().zip(wide.iter()) {
        *b = f16_from_f32(*w);
    }
}

/// The same through the runtime's slice conversions.
fn slices(src: &[f16], wide: &mut [f32], back: &mut [f16]) {
    use einlang::__private::half_bits::{round_f16, widen_f16};
    use std::mem::MaybeUninit;
    // SAFETY: `MaybeUninit<T>` has `T`'s layout; every element is written
    // before it is read.
    let w = unsafe { &mut *(wide as *mut [f32] as *mut [MaybeUninit<f32>]) };
    widen_f16(src, w);
    let b = unsafe { &mut *(back as *mut [f16] as *mut [MaybeUninit<f16>]) };
    round_f16(wide, b);
}

/// The conversion lines (see the module docs); nothing where the processor
/// lacks AVX2.
fn conversions() {
    #[cfg(target_arch = "x86_64")]
    if einlang::cpu::wide() {
        for (n, reps) in [(1 << 16, 256), (1 << 24, 1)] {
            let src: Vec<f16> = random(n >> 10, 1 << 10, 4).iter().map(|v| f16::from_f32(v * 1000.0)).collect();
            let (mut wide, mut back) = (vec![0f32; n], vec![f16::ZERO; n]);
            let (mut wide2, mut back2) = (vec![0f32; n], vec![f16::ZERO; n]);
            // SAFETY: `cpu::wide` says the processor has AVX2 and FMA.
            unsafe { elements_avx2(&src, &mut wide, &mut back) };
            slices(&src, &mut wide2, &mut back2);
            assert!(wide.iter().zip(&wide2).all(|(a, b)| a.to_bits() == b.to_bits()));
            assert!(back.iter().zip(&back2).all(|(a, b)| a.to_bits() == b.to_bits()) && back == src);
            let te = median_ms(|| {
                for _ in 0..reps {
                    // SAFETY: as above.
                    unsafe { elements_avx2(black_box(&src), &mut wide, &mut back) };
                }
            });
            let ts = median_ms(|| {
                for _ in 0..reps {
                    slices(black_box(&src), &mut wide2, &mut back2);
                }
            });
            let what = format!("f16 -> f32 -> f16, {} Ki values x {reps}", n >> 10);
            println!("{what}, element conversions (AVX2) {te:8.2}");
            println!("{what}, slice conversions (F16C) {ts:8.2} {:5.2}x the elements' time", ts / te);
        }
    }
}

fn main() {
    println!("half precision on the CPU ({} threads); median of {RUNS} calls, ms", rayon::current_num_threads());
    for n in [512, 1024] {
        let (a, b) = (random(n, n, 1), random(n, n, 2));
        let (a16, b16) = (a.mapv(f16::from_f32), b.mapv(f16::from_f32));
        let (ab, bb) = (a.mapv(bf16::from_f32), b.mapv(bf16::from_f32));
        let want = k::mm32(&a16.mapv(f16::to_f32), &b16.mapv(f16::to_f32)).unwrap();
        let e16 = rel_err(k::mm16(&a16, &b16).unwrap().iter().map(|v| v.to_f32()), &want);
        let wantb = k::mm32(&ab.mapv(bf16::to_f32), &bb.mapv(bf16::to_f32)).unwrap();
        let eb = rel_err(k::mmb16(&ab, &bb).unwrap().iter().map(|v| v.to_f32()), &wantb);
        let ec = rel_err(gemm_crate_f16(&a16, &b16).iter().map(|v| v.to_f32()), &want);
        assert!(e16 < 1e-3 && eb < 1e-2 && ec < 1e-2, "{e16} {eb} {ec}");
        let t32 = median_ms(|| drop(black_box(k::mm32(&a, &b).unwrap())));
        let t16 = median_ms(|| drop(black_box(k::mm16(&a16, &b16).unwrap())));
        let tb = median_ms(|| drop(black_box(k::mmb16(&ab, &bb).unwrap())));
        let tc = median_ms(|| drop(black_box(gemm_crate_f16(&a16, &b16))));
        let gf = |t: f64| 2.0 * (n as f64).powi(3) / t / 1e6;
        println!("matmul {n}^2  f32 {t32:8.2} ({:5.1} GFLOP/s)", gf(t32));
        println!(
            "matmul {n}^2  f16 {t16:8.2} ({:5.1} GFLOP/s) {:5.2}x f32's time, max rel. error {e16:.1e}",
            gf(t16),
            t16 / t32
        );
        println!(
            "matmul {n}^2 bf16 {tb:8.2} ({:5.1} GFLOP/s) {:5.2}x f32's time, max rel. error {eb:.1e}",
            gf(tb),
            tb / t32
        );
        println!("matmul {n}^2  f16, gemm crate directly {tc:8.2} {:5.2}x f32's time", tc / t32);
    }
    let x = random(4096, 1024, 3).mapv(|v| v * 8.0);
    let (x16, xb) = (x.mapv(f16::from_f32), x.mapv(bf16::from_f32));
    let want = k::softmax32(&x16.mapv(f16::to_f32)).unwrap();
    let e16 = rel_err(k::softmax16(&x16).unwrap().iter().map(|v| v.to_f32()), &want);
    assert!(e16 < 4e-3, "{e16}");
    let t32 = median_ms(|| drop(black_box(k::softmax32(&x).unwrap())));
    let t16 = median_ms(|| drop(black_box(k::softmax16(&x16).unwrap())));
    let tb = median_ms(|| drop(black_box(k::softmaxb16(&xb).unwrap())));
    println!("softmax 4096 x 1024  f32 {t32:8.2}");
    println!("softmax 4096 x 1024  f16 {t16:8.2} {:5.2}x f32's time", t16 / t32);
    println!("softmax 4096 x 1024 bf16 {tb:8.2} {:5.2}x f32's time", tb / t32);
    conversions();
}
