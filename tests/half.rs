//! Half precision (`f16`, `bf16`; LANGUAGE.md §2) against `f32` references.

use einlang::half::{bf16, f16};
use einlang::ndarray::{Array1, Array2};

mod basic {
    einlang::einlang! {
        pub fn scale(x: [f16; N]) -> [f16; N] {
            let y[i] = x[i] * 2 + 0.5;
            y
        }
        pub fn total(x: [f16; N]) -> f16 {
            sum[i](x[i])
        }
        pub fn mm(a: [f16; M, K], b: [f16; K, N]) -> [f16; M, N] {
            let c[i, j] = sum[k](a[i, k] * b[k, j]);
            c
        }
    }
}

#[test]
fn smoke() {
    let x = Array1::from_elem(4096, f16::ONE);
    let y = basic::scale(&x).unwrap();
    assert_eq!(y[0], f16::from_f32(2.5));
    assert_eq!(basic::total(&x).unwrap(), f16::from_f32(4096.0));
    let a = Array2::from_elem((3, 4), f16::ONE);
    let b = Array2::from_elem((4, 5), f16::from_f32(0.5));
    let c = basic::mm(&a, &b).unwrap();
    assert_eq!(c[[2, 4]], f16::from_f32(2.0));
    let _ = bf16::ONE;
}
