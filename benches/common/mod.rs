//! Shared by the benchmarks: deterministic input data, hand-written
//! baselines in the generated code's two forms, paired timing.

/// Deterministic values in `[-1, 1)` (xorshift64*).
pub fn data(len: usize, seed: u64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            let u = (s.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64;
            2.0 * u - 1.0
        })
        .collect()
}

/// A baseline function with the same two forms as generated code (the
/// runtime's `cpu` module): on x86-64 its body is also compiled for AVX2
/// and FMA, and that form runs when the processor has both and
/// `EINLANG_CPU` is not `baseline`. Hand-written loops are timed as a
/// careful Rust programmer would ship them, with the same instructions as
/// the einlang code they are compared with.
#[allow(unused_macros)]
macro_rules! twin {
    ($(#[$m:meta])* fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty $body:block) => {
        $(#[$m])*
        fn $name($($arg: $ty),*) -> $ret {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx2,fma")]
                unsafe fn wide($($arg: $ty),*) -> $ret $body
                if einlang::cpu::wide() {
                    // SAFETY: the processor has AVX2 and FMA (`cpu::wide`).
                    return unsafe { wide($($arg),*) };
                }
            }
            $body
        }
    };
}
#[allow(unused_imports)]
pub(crate) use twin;

/// The median times of `a` and `b` (seconds) over `runs` rounds that call
/// each once in turn, after one untimed call of each: a slow stretch of
/// the machine then falls on both alike, where timing all of one side
/// first and then the other let it fall on one (the ratio of a 2-D
/// stencil moved between 1.06x and 1.11x from run to run that way).
#[allow(dead_code)]
pub fn paired(runs: usize, mut a: impl FnMut(), mut b: impl FnMut()) -> (f64, f64) {
    a();
    b();
    let time = |f: &mut dyn FnMut()| {
        let start = std::time::Instant::now();
        f();
        start.elapsed().as_secs_f64()
    };
    let (mut ta, mut tb) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
    for _ in 0..runs {
        ta.push(time(&mut a));
        tb.push(time(&mut b));
    }
    ta.sort_by(f64::total_cmp);
    tb.sort_by(f64::total_cmp);
    (ta[runs / 2], tb[runs / 2])
}

/// This machine's peak `f32` rate in GFLOP/s and a line saying how it
/// was found: measured, every hardware thread at once running twelve
/// independent chains of fused multiply-adds of the widest vectors the
/// processor has (`fma_rate`), beside the nominal figure from what it
/// reports (threads x clock, the `@ x.xxGHz` of the model name or else
/// the `cpu MHz` of `/proc/cpuinfo`, x two FMA ports x the `f32` lanes of
/// its widest vectors x 2). The measured one is returned: the reported
/// clock can be the base clock (2.6 GHz on the 2-core Zen 4, which ran
/// products at 209 GFLOP/s), and a processor that splits 512-bit
/// operations in two (Zen 4) has the peak of its 256-bit ones. On the
/// 2-core 2.8 GHz AVX-512 Xeon the nominal figure was 2 x 2.8 x 2 x 16 x 2
/// = 358.4.
#[allow(dead_code)]
pub fn peak_gflops() -> Option<(f64, String)> {
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let nominal = nominal_gflops(threads);
    let nominal_text = nominal.as_ref().map(|(_, how)| format!("; nominal {how}")).unwrap_or_default();
    match fma_rate(threads) {
        Some((rate, how)) => {
            Some((rate, format!("measured {rate:.1} GFLOP/s ({threads} threads, {how}){nominal_text}")))
        }
        None => nominal.map(|(peak, how)| (peak, format!("nominal {how}"))),
    }
}

/// The nominal peak from the reported clock and vector width (see
/// [`peak_gflops`]); `None` where the clock is not reported.
#[allow(dead_code)]
fn nominal_gflops(threads: usize) -> Option<(f64, String)> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let model = info.lines().find(|l| l.starts_with("model name")).unwrap_or("");
    let ghz = model
        .rsplit('@')
        .next()
        .and_then(|s| s.trim().strip_suffix("GHz"))
        .and_then(|s| s.trim().parse::<f64>().ok())
        .or_else(|| {
            let mhz = info.lines().find(|l| l.starts_with("cpu MHz"))?;
            Some(mhz.split(':').nth(1)?.trim().parse::<f64>().ok()? / 1e3)
        })?;
    #[cfg(target_arch = "x86_64")]
    let (lanes, isa) = if std::arch::is_x86_feature_detected!("avx512f") {
        (16.0, "AVX-512")
    } else if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        (8.0, "AVX2")
    } else {
        (4.0, "SSE")
    };
    #[cfg(not(target_arch = "x86_64"))]
    let (lanes, isa) = (4.0, "128-bit");
    let peak = threads as f64 * ghz * 2.0 * lanes * 2.0;
    Some((peak, format!("{threads} x {ghz} GHz x 2 FMA ports x {lanes} f32 lanes ({isa}) x 2 = {peak:.1} GFLOP/s")))
}

/// The `f32` rate of fused multiply-adds on `threads` threads at once, in
/// GFLOP/s, for the widest vectors the processor has (the better of
/// 512-bit and 256-bit ones where it has both), and which; `None` without
/// FMA.
#[cfg(target_arch = "x86_64")]
#[allow(dead_code)]
fn fma_rate(threads: usize) -> Option<(f64, &'static str)> {
    use std::arch::x86_64::*;
    const CHAINS: usize = 12;
    const ITERS: usize = 2_000_000;

    // `$name(iters)`: `CHAINS` independent chains of `iters` fused
    // multiply-adds of `$v` vectors (`$lanes` `f32`), from values the
    // compiler cannot see, and the sum of every lane, so that nothing is
    // computed away.
    macro_rules! chains {
        ($name:ident, $feature:literal, $v:ty, $lanes:literal, $set1:ident, $fmadd:ident) => {
            #[target_feature(enable = $feature)]
            unsafe fn $name(iters: usize) -> f32 {
                let (a, b) = ($set1(std::hint::black_box(0.999_999_9)), $set1(std::hint::black_box(1e-7)));
                let mut acc: [$v; CHAINS] = std::array::from_fn(|i| $set1(std::hint::black_box(1.0 + i as f32)));
                for _ in 0..iters {
                    for v in &mut acc {
                        *v = $fmadd(*v, a, b);
                    }
                }
                // SAFETY: a vector of `$lanes` `f32` is that array.
                acc.iter().map(|v| unsafe { std::mem::transmute::<$v, [f32; $lanes]>(*v) }.iter().sum::<f32>()).sum()
            }
        };
    }
    chains!(chains256, "avx2,fma", __m256, 8, _mm256_set1_ps, _mm256_fmadd_ps);
    chains!(chains512, "avx512f", __m512, 16, _mm512_set1_ps, _mm512_fmadd_ps);

    // The best of three timings of every thread running `f` at once.
    let rate = |f: fn(usize) -> f32, lanes: usize| {
        f(ITERS / 16);
        (0..3)
            .map(|_| {
                let start = std::time::Instant::now();
                std::thread::scope(|s| {
                    for _ in 0..threads {
                        s.spawn(|| std::hint::black_box(f(std::hint::black_box(ITERS))));
                    }
                });
                (threads * ITERS * CHAINS * lanes * 2) as f64 / start.elapsed().as_secs_f64() / 1e9
            })
            .fold(0.0, f64::max)
    };
    if !(std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")) {
        return None;
    }
    // SAFETY: AVX2 and FMA detected just above.
    let ymm = rate(|n| unsafe { chains256(n) }, 8);
    if std::arch::is_x86_feature_detected!("avx512f") {
        // SAFETY: AVX-512F detected.
        let zmm = rate(|n| unsafe { chains512(n) }, 16);
        if zmm > ymm {
            return Some((zmm, "512-bit FMA chains"));
        }
        return Some((ymm, "256-bit FMA chains, no slower than 512-bit ones here"));
    }
    Some((ymm, "256-bit FMA chains"))
}

#[cfg(not(target_arch = "x86_64"))]
#[allow(dead_code)]
fn fma_rate(_threads: usize) -> Option<(f64, &'static str)> {
    None
}
