#![doc = include_str!("../docs/guide.md")]

pub use einlang_macros::einlang;

/// Compiles an Einlang file into Rust items, as `einlang!` compiles its
/// tokens.
///
/// The path is relative to the directory of the calling crate's
/// `Cargo.toml` (`CARGO_MANIFEST_DIR`). Cargo rebuilds the crate when the
/// file changes. Errors in the file are reported at the string literal, each
/// message starting with `path:line:column:` and showing the source line.
/// Top-level statements of the file become
/// `pub fn main() -> Result<(), einlang::Error>`. Wrapping the call in a
/// module keeps the file's functions in their own namespace:
///
/// ```
/// mod kernels {
///     einlang::include_ein!("tests/ein/kernels.ein");
/// }
///
/// use einlang::ndarray::array;
///
/// let a = array![[1.0f32, 2.0], [3.0, 4.0]];
/// let b = array![[5.0f32, 6.0], [7.0, 8.0]];
/// assert_eq!(kernels::matmul(&a, &b)?, array![[19.0, 22.0], [43.0, 50.0]]);
/// # Ok::<(), einlang::Error>(())
/// ```
pub use einlang_macros::include_ein;
pub use einlang_runtime::__ndarray as ndarray;
/// The `half` crate, whose `f16` and `bf16` are Einlang's `f16` and `bf16`
/// (`[f16; N]` takes an `ArrayView1<einlang::half::f16>`).
pub use einlang_runtime::half;
pub use einlang_runtime::Error;
pub use einlang_runtime::Jagged;

/// Gradients through long recurrences: a reverse sweep recomputes the
/// primal's history from checkpoints (about `sqrt(T)` of them) instead of
/// keeping all `T` steps when the history is larger than
/// [`checkpoint::history_limit`] (256 MiB by default, or the bytes in the
/// environment variable `EINLANG_HISTORY_LIMIT`).
/// [`checkpoint::set_history_limit`] changes the limit for the process.
pub mod checkpoint {
    pub use einlang_runtime::ckpt::{history_limit, set_history_limit, DEFAULT_HISTORY_LIMIT};
}

/// Which instruction set generated functions run with. On x86-64 each
/// generated host function also has a form compiled for AVX2 and FMA, taken
/// when the processor has both; it computes the same bits as the baseline
/// form. A function whose loops evaluate `exp`, `tanh`, `ln` and the other
/// polynomial math also has a form compiled for AVX-512, taken when the
/// processor has it ([`cpu::wide512`]), with the same bits again.
/// [`cpu::set_baseline_only`] (or `EINLANG_CPU=baseline` in the environment)
/// keeps every function on the baseline form, for example to time it;
/// [`cpu::set_avx2_only`] (or `EINLANG_CPU=avx2`) keeps them off AVX-512.
/// On Intel's processors a result of many times the level-2 caches is
/// written with non-temporal stores ([`cpu::Streaming`]);
/// [`cpu::set_streaming`] (or `EINLANG_STREAM=never` / `always`) turns
/// that off or on everywhere, with the same bits either way. A loop nest
/// runs on several threads from [`cpu::parallel_work`] scalar operations
/// on ([`cpu::DEFAULT_PARALLEL_WORK`]); [`cpu::set_parallel_work`] (or
/// `EINLANG_PAR_WORK`) moves that bar, with the same bits either way.
pub mod cpu {
    pub use einlang_runtime::cpu::{set_avx2_only, set_baseline_only, wide, wide512};
    pub use einlang_runtime::par::{parallel_work, set_parallel_work, DEFAULT_PARALLEL_WORK};
    pub use einlang_runtime::stream::{set_streaming, streaming, Streaming};
}

/// Processes working together on `#[shard(B)]` functions: the [`dist::World`]
/// of ranks (MPI with the cargo feature `mpi` under `mpirun` or `srun`, a
/// world of one otherwise), [`dist::block`], and what a rank has sent.
pub mod dist {
    pub use einlang_runtime::dist::{block, World};
}

/// GPUs, device tensors and the kernels of `#[device(cuda)]` functions
/// (cargo feature `cuda`).
#[cfg(feature = "cuda")]
pub use einlang_runtime::cuda;

/// Paths used by generated code. Not part of the public API.
#[doc(hidden)]
pub mod __private {
    pub use einlang_runtime::__ndarray as ndarray;
    pub use einlang_runtime::*;
}

/// The language reference: what `einlang!` accepts and what it means.
#[doc = include_str!("../docs/reference.md")]
pub mod reference {}

/// This compiler's decisions, construct by construct: what each feature
/// does where the reference is brief, what is not supported yet, and why.
#[doc = include_str!("../docs/language.md")]
pub mod notes {}

// The README's example is compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
