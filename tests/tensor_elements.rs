//! Indexed definitions whose element is an array literal (LANGUAGE.md §3:
//! `let rows[i] = [x[i], y[i]];` has shape `[N, 2]`), in plain definitions
//! and in recurrences with a vector state. Compared with naive loops.

use einlang::einlang;
use einlang::ndarray::{array, Array1, Array2};

einlang! {
    pub fn rows(x: [f32; N], y: [f32; N]) -> [f32; N, 2] {
        let r[i] = [x[i], y[i]];
        r
    }

    /// Nested literals add one axis per level; where-bindings are shared.
    pub fn blocks(x: [f64; N]) -> [f64; N, 2, 2] {
        let b[i] = [[v, 0.0], [1.0, -v]] where v = x[i] * 2.0;
        b
    }

    /// A literal element after written axes, and a guard.
    pub fn pairs(m: [i32; R, C]) -> [i32; R, C, 2] {
        let p[i, j] = [m[i, j], i as i32 * 10 + j as i32] where m[i, j] > 0;
        p
    }

    /// A rotation applied `steps - 1` times to a point: the state of the
    /// recurrence is a vector of two.
    pub fn orbit(steps: i64, c: f64, s: f64) -> [f64; steps, 2] {
        let p[0] = [1.0, 0.0];
        let p[t in 1..steps] = [c * p[t - 1, 0] - s * p[t - 1, 1], s * p[t - 1, 0] + c * p[t - 1, 1]];
        p
    }
}

#[test]
fn literal_elements_add_axes() {
    let x = array![1.0f32, 2.0, 3.0];
    let y = array![-1.0f32, 0.5, 4.0];
    let got = rows(&x, &y).unwrap();
    assert_eq!(got, Array2::from_shape_fn((3, 2), |(i, k)| if k == 0 { x[i] } else { y[i] }));

    let v = Array1::from_vec(vec![0.5f64, -1.5]);
    let b = blocks(&v).unwrap();
    for i in 0..2 {
        let w = v[i] * 2.0;
        assert_eq!(b.slice(einlang::ndarray::s![i, .., ..]), array![[w, 0.0], [1.0, -w]]);
    }

    let m = array![[3, -1], [0, 7]];
    let p = pairs(&m).unwrap();
    for i in 0..2 {
        for j in 0..2 {
            let want = if m[[i, j]] > 0 { [m[[i, j]], (i * 10 + j) as i32] } else { [0, 0] };
            assert_eq!([p[[i, j, 0]], p[[i, j, 1]]], want);
        }
    }
}

#[test]
fn vector_state_recurrence() {
    let (c, s) = (0.6f64, 0.8f64);
    let got = orbit(5, c, s).unwrap();
    let (mut a, mut b) = (1.0f64, 0.0f64);
    for t in 0..5 {
        if t > 0 {
            let (na, nb) = (c * a - s * b, s * a + c * b);
            a = na;
            b = nb;
        }
        assert!((got[[t, 0]] - a).abs() < 1e-12 && (got[[t, 1]] - b).abs() < 1e-12, "step {t}");
    }
}
