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
