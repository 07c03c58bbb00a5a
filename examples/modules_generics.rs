//! Modules, imports and generic functions in one `einlang!` block.
//!
//! ```sh
//! cargo run --example modules_generics
//! ```
//!
//! `stats` is an inline module of generic helpers; `norms` uses them through
//! `super::` paths and an alias; the public functions call the same generic
//! code at different element types and ranks, and the compiler specializes
//! it for each.

use einlang::einlang;
use einlang::ndarray::{array, Array2};

einlang! {
    mod stats {
        use std::math::sqrt;

        /// Mean of a vector, any float type.
        pub fn mean(v) { sum[i](v[i]) / len(v) as f64 }
        /// Root mean square, any float type and rank (through `square`).
        pub fn rms(v) { sqrt(mean(square(v))) }
        /// Elementwise square: a scalar, or a tensor of any rank.
        pub fn square(x) { x * x }
    }

    mod norms {
        use super::stats as s;

        /// Scales each row of a matrix to unit root mean square.
        pub fn normalize_rows(m) {
            let r[i] = s::rms(m[i]);
            let y[i, j] = m[i, j] / r[i];
            y
        }
    }

    use stats::{mean, square};

    pub fn summary(v: [f64; N]) -> (f64, f64) {
        (mean(v), stats::rms(v))
    }

    pub fn squares(a: i32, b: f32, m: [f64; R, C]) -> (i32, f32, [f64; R, C]) {
        (square(a), square(b), square(m))
    }

    pub fn normalized(m: [f64; R, C]) -> [f64; R, C] {
        norms::normalize_rows(m)
    }
}

fn main() -> Result<(), einlang::Error> {
    let v = array![1.0, 2.0, 3.0, 4.0];
    let (mean, rms) = summary(&v)?;
    println!("v = {v}\nmean = {mean}, rms = {rms:.4}");

    let m: Array2<f64> = array![[3.0, 4.0], [1.0, -1.0]];
    let (a, b, sq) = squares(7, 1.5, &m)?;
    println!("square(7) = {a}, square(1.5) = {b}, square(m) =\n{sq}");

    let n = normalized(&m)?;
    println!("rows scaled to unit rms =\n{n:.4}");
    Ok(())
}
