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
//! the same bits; only the speed differs. Where the runtime's math asks
//! for a fused multiply-add (`f32::mul_add` in the polynomials of `exp`,
//! `expm1` and `erf`, `vmath`), it is rounded once in every form: one FMA
//! instruction in the twins, the C library's `fmaf` (correctly rounded,
//! a call per operation) in the baseline form.
//!
//! Functions whose loops evaluate the runtime's polynomial math (`exp`,
//! `tanh`, `ln`, ..., in themselves or in a function they call: compute
//! bound, where the width pays) have a third form compiled for AVX-512
//! (foundation, byte/word, doubleword/quadword, vector length, with AVX2
//! and FMA), taken when [`wide512`] holds: sixteen `f32` lanes. The same
//! argument gives the same bits (lanes fixed in the source, fused
//! operations rounded once in every form). Memory-bound functions keep two forms (a third would only add
//! compile time).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// Set by [`set_baseline_only`].
static BASELINE_ONLY: AtomicBool = AtomicBool::new(false);

/// Set by [`set_avx2_only`].
static AVX2_ONLY: AtomicBool = AtomicBool::new(false);

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

/// Whether the processor has the AVX-512 subsets of the third form
/// (`avx512f`, `bw`, `dq`, `vl`) and `EINLANG_CPU` is neither `baseline`
/// nor `avx2`: decided once.
fn detected512() -> bool {
    static DETECTED: OnceLock<bool> = OnceLock::new();
    *DETECTED.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            std::env::var_os("EINLANG_CPU").is_none_or(|v| v != "baseline" && v != "avx2")
                && std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512bw")
                && std::arch::is_x86_feature_detected!("avx512dq")
                && std::arch::is_x86_feature_detected!("avx512vl")
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    })
}

/// Whether generated functions that have an AVX-512 form take it: [`wide`]
/// holds, the processor has the AVX-512 subsets (detected once),
/// `EINLANG_CPU` is not `avx2` and [`set_avx2_only`] has not turned the form
/// off.
#[inline]
pub fn wide512() -> bool {
    wide() && !AVX2_ONLY.load(Ordering::Relaxed) && detected512()
}

/// Keeps generated functions off their AVX-512 form (`true`), for the whole
/// process, so that they run the AVX2 one where the processor has it: to
/// compare the two forms, or to time the AVX2 form on an AVX-512 machine.
pub fn set_avx2_only(on: bool) {
    AVX2_ONLY.store(on, Ordering::Relaxed);
}

/// Whether the processor has AVX2 and FMA: decided once (the runtime's
/// own kernels for them, `gemm`'s products of a few rows).
pub fn has_avx2_fma() -> bool {
    static DETECTED: OnceLock<bool> = OnceLock::new();
    *DETECTED.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    })
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

/// Whether the processor executes 512-bit vector operations as two 256-bit
/// halves: AVX-512 with AMD's family 19h (Zen 4), read from `cpuid` once.
/// There 512-bit fused multiply-adds reach the same peak as 256-bit ones,
/// and the runtime's choice of GEMM kernels follows it (see `gemm`).
pub fn splits_512() -> bool {
    static DETECTED: OnceLock<bool> = OnceLock::new();
    *DETECTED.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            has_avx512() && amd_family() == Some(0x19)
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    })
}

/// The processor's family (base plus extended, as AMD numbers them) when
/// its vendor is AMD.
#[cfg(target_arch = "x86_64")]
fn amd_family() -> Option<u32> {
    // (`cpuid` exists on every x86-64 processor; leaves 0 and 1 always do.)
    let (vendor, signature) = (std::arch::x86_64::__cpuid(0), std::arch::x86_64::__cpuid(1));
    let name = [vendor.ebx, vendor.edx, vendor.ecx].map(u32::to_le_bytes).concat();
    if name != b"AuthenticAMD" {
        return None;
    }
    let base = (signature.eax >> 8) & 0xf;
    let extended = (signature.eax >> 20) & 0xff;
    Some(if base == 0xf { base + extended } else { base })
}

/// The size in bytes of one core's level-2 cache when the processor is
/// Intel's (read from `cpuid` leaf 4 once): where results that outgrow
/// the caches are written with non-temporal stores (see `stream`), `None`
/// on other vendors and targets.
pub fn intel_l2_bytes() -> Option<usize> {
    static DETECTED: OnceLock<Option<usize>> = OnceLock::new();
    *DETECTED.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{__cpuid, __cpuid_count};
            let vendor = __cpuid(0);
            let name = [vendor.ebx, vendor.edx, vendor.ecx].map(u32::to_le_bytes).concat();
            if name != b"GenuineIntel" || vendor.eax < 4 {
                return None;
            }
            // Leaf 4 lists the caches one sub-leaf each until a null type.
            (0..16).map(|i| __cpuid_count(4, i)).take_while(|c| c.eax & 0x1f != 0).find_map(|c| {
                let level = (c.eax >> 5) & 0x7;
                let data = matches!(c.eax & 0x1f, 1 | 3);
                let ways = ((c.ebx >> 22) & 0x3ff) as usize + 1;
                let partitions = ((c.ebx >> 12) & 0x3ff) as usize + 1;
                let line = (c.ebx & 0xfff) as usize + 1;
                let sets = c.ecx as usize + 1;
                (level == 2 && data).then_some(ways * partitions * line * sets)
            })
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            None
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

    /// `splits_512` against what Linux reports of the first processor:
    /// its vendor, family and flags.
    #[test]
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    fn a_zen_4_is_known_by_its_vendor_and_family() {
        let Ok(info) = std::fs::read_to_string("/proc/cpuinfo") else { return };
        let field = |name: &str| {
            info.lines()
                .find(|l| l.split(':').next().is_some_and(|k| k.trim() == name))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        };
        let (Some(vendor), Some(family), Some(flags)) = (field("vendor_id"), field("cpu family"), field("flags"))
        else {
            return;
        };
        let zen4 = vendor == "AuthenticAMD" && family == "25" && flags.split(' ').any(|f| f == "avx512f");
        assert_eq!(splits_512(), zen4, "{vendor}, family {family}");
    }

    /// `intel_l2_bytes` against the level-2 cache Linux reports for the
    /// first processor, on Intel's processors; `None` on others.
    #[test]
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    fn an_intel_level_2_cache_is_the_one_linux_reports() {
        let Ok(info) = std::fs::read_to_string("/proc/cpuinfo") else { return };
        let intel = info.lines().any(|l| l.starts_with("vendor_id") && l.ends_with("GenuineIntel"));
        if !intel {
            assert_eq!(intel_l2_bytes(), None);
            return;
        }
        let dir = "/sys/devices/system/cpu/cpu0/cache";
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        let read = |path: std::path::PathBuf, name: &str| std::fs::read_to_string(path.join(name)).unwrap_or_default();
        for entry in entries.flatten() {
            let path = entry.path();
            if read(path.clone(), "level").trim() == "2" && read(path.clone(), "type").trim() != "Instruction" {
                let size = read(path, "size");
                let size = size.trim();
                let (digits, unit) = match size.strip_suffix('K') {
                    Some(d) => (d, 1 << 10),
                    None => (size.strip_suffix('M').unwrap_or(size), 1 << 20),
                };
                let Ok(n) = digits.parse::<usize>() else { return };
                assert_eq!(intel_l2_bytes(), Some(n * unit), "{size}");
                return;
            }
        }
    }

    #[test]
    fn the_baseline_switch_turns_the_wide_form_off() {
        set_baseline_only(true);
        assert!(!wide());
        set_baseline_only(false);
        set_avx2_only(true);
        assert!(!wide512());
        set_avx2_only(false);
        #[cfg(target_arch = "x86_64")]
        if std::env::var_os("EINLANG_CPU").is_none() {
            assert_eq!(
                wide512(),
                wide()
                    && std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx512bw")
                    && std::arch::is_x86_feature_detected!("avx512dq")
                    && std::arch::is_x86_feature_detected!("avx512vl")
            );
        }
        #[cfg(target_arch = "x86_64")]
        if std::env::var_os("EINLANG_CPU").is_none() {
            assert_eq!(
                wide(),
                std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
            );
        }
    }
}
