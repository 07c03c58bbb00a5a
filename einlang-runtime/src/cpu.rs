//! Which instruction set generated code runs with.
//!
//! A user's crate is compiled for its target's baseline (SSE2 on x86-64)
//! unless it asks for more, and so is the code `einlang!` emits there. On
//! x86-64 every generated host function is emitted twice: as written, and
//! inside a `#[target_feature(enable = "avx2,fma")]` function whose loops
//! LLVM compiles with 256-bit vectors (closures take the features of the
//! function they are written in; those marked `#[inline(always)]` do not,
//! and are inlined into the helper that calls them, itself inlined into a
//! closure that has them). The function calls the
//! second form when [`wide`] says the processor has both features. Rust
//! never fuses a multiplication and an addition on its own, and generated
//! reductions fix their order in the source (lanes), so both forms compute
//! the same bits; only the speed differs.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// Set by [`set_baseline_only`].
static BASELINE_ONLY: AtomicBool = AtomicBool::new(false);

/// Whether the processor has AVX2 and FMA and `EINLANG_CPU` is not
/// `baseline`: decided once.
fn detected() -> bool {
    static DETECTED: OnceLock<bool> = OnceLock::new();
    *DETECTED.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            std::env::var_os("EINLANG_CPU").is_none_or(|v| v != "baseline")
                && std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    })
}

/// Whether generated functions take their AVX2 + FMA form: the processor
/// has both (detected once), `EINLANG_CPU` is not `baseline` and
/// [`set_baseline_only`] has not turned the form off.
#[inline]
pub fn wide() -> bool {
    !BASELINE_ONLY.load(Ordering::Relaxed) && detected()
}

/// Whether the processor has AVX-512 (foundation): decided once. The
/// runtime's choice of GEMM library follows it (see `gemm`).
pub fn has_avx512() -> bool {
    static DETECTED: OnceLock<bool> = OnceLock::new();
    *DETECTED.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            std::arch::is_x86_feature_detected!("avx512f")
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    })
}

/// Makes every generated function run its baseline form (`true`) or the
/// fastest form the processor has (`false`, the default), for the whole
/// process: to compare the two, or to time the baseline.
pub fn set_baseline_only(on: bool) {
    BASELINE_ONLY.store(on, Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_baseline_switch_turns_the_wide_form_off() {
        set_baseline_only(true);
        assert!(!wide());
        set_baseline_only(false);
        #[cfg(target_arch = "x86_64")]
        if std::env::var_os("EINLANG_CPU").is_none() {
            assert_eq!(
                wide(),
                std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
            );
        }
    }
}
