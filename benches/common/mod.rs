//! Shared by the benchmarks: deterministic input data.

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
