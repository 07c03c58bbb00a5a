//! einlang: Einstein-notation tensor kernels compiled to Rust at build time.
//!
//! ```
//! use einlang::einlang;
//! use einlang::ndarray::array;
//!
//! einlang! {
//!     pub fn matmul(a: [f32; M, K], b: [f32; K, N]) -> [f32; M, N] {
//!         let c[i, j] = sum[k](a[i, k] * b[k, j]);
//!         c
//!     }
//! }
//!
//! let a = array![[1.0f32, 2.0], [3.0, 4.0]];
//! let b = array![[5.0f32, 6.0], [7.0, 8.0]];
//! let c = matmul(&a, &b).unwrap();
//! assert_eq!(c, array![[19.0, 22.0], [43.0, 50.0]]);
//! ```
//!
//! See the README and `LANGUAGE.md` for the language.

pub use einlang_macros::einlang;
pub use einlang_runtime::Error;
pub use einlang_runtime::__ndarray as ndarray;

/// Paths used by generated code. Not part of the public API.
#[doc(hidden)]
pub mod __private {
    pub use einlang_runtime::*;
    pub use einlang_runtime::__ndarray as ndarray;
}

// The README's example is compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
