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

/// This machine's peak `f32` rate in GFLOP/s, from what the processor
/// reports: hardware threads x clock (the `@ x.xxGHz` of the model name,
/// else the current `cpu MHz` of `/proc/cpuinfo`) x two FMA ports x the
/// `f32` lanes of the widest vectors it has (16 with AVX-512, 8 with AVX2
/// and FMA, 4 otherwise) x 2 operations per multiply-add, and a line
/// saying how it was derived. `None` where the clock is not reported.
/// On the 2-core 2.8 GHz AVX-512 Xeon: 2 x 2.8 x 2 x 16 x 2 = 358.4.
#[allow(dead_code)]
pub fn peak_gflops() -> Option<(f64, String)> {
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
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
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
    Some((
        peak,
        format!("{threads} threads x {ghz} GHz x 2 FMA ports x {lanes} f32 lanes ({isa}) x 2 = {peak:.1} GFLOP/s"),
    ))
}
