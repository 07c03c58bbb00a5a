//! Generated elementwise functions over `std::math` (tanh, sigmoid, erf,
//! ln, GELU in both forms, sin, cos, tan, log1p, pow, in `f32` and `f64`) run the
//! runtime's branch-free forms (`einlang::__private::vmath`); here they are
//! compared with naive loops over the standard library's (libm's)
//! functions, computed in `f64` for `f32` results, within the ulp bounds
//! the runtime's own sweeps establish, on lengths 0, 1, 7, 613 and 100 003
//! (several threads' chunks), with the special values mixed in. Both CPU
//! forms (baseline and AVX2+FMA twin) must give the same bits.

use einlang::cpu;
use einlang::einlang;
use einlang::ndarray::Array1;

einlang! {
    use std::math::{abs, cos, erf, ln, log1p, pow, sigmoid, sin, tan, tanh};

    pub fn acts32(x: [f32; N]) -> ([f32; N], [f32; N], [f32; N], [f32; N]) {
        let t[i] = tanh(x[i]);
        let s[i] = sigmoid(x[i]);
        let e[i] = erf(x[i]);
        let l[i] = ln(x[i]);
        (t, s, e, l)
    }

    pub fn more32(x: [f32; N]) -> ([f32; N], [f32; N], [f32; N]) {
        let s[i] = sin(x[i]);
        let l[i] = log1p(x[i]);
        let p[i] = pow(abs(x[i]), 0.75);
        (s, l, p)
    }

    pub fn gelus(x: [f32; N]) -> ([f32; N], [f32; N]) {
        let a[i] = std::ml::gelu_tanh(x[i]);
        let b[i] = std::ml::gelu(x[i]);
        (a, b)
    }

    pub fn acts64(x: [f64; N]) -> ([f64; N], [f64; N], [f64; N], [f64; N]) {
        let t[i] = tanh(x[i]);
        let s[i] = sigmoid(x[i]);
        let l[i] = ln(x[i]);
        let p[i] = log1p(x[i]);
        (t, s, l, p)
    }

    pub fn trig32(x: [f32; N]) -> ([f32; N], [f32; N], [f32; N]) {
        let s[i] = sin(x[i]);
        let c[i] = cos(x[i]);
        let t[i] = tan(x[i]);
        (s, c, t)
    }

    /// `sin` and `cos` inside an expression (GELU-like: the loop around
    /// them carries other arithmetic).
    pub fn rotate32(x: [f32; N], y: [f32; N]) -> [f32; N] {
        let r[i] = x[i] * cos(y[i]) - x[i] * sin(y[i]);
        r
    }

    pub fn trig64(x: [f64; N]) -> ([f64; N], [f64; N], [f64; N]) {
        let s[i] = sin(x[i]);
        let c[i] = cos(x[i]);
        let t[i] = tan(x[i]);
        (s, c, t)
    }
}

/// Units in the last place of an `f32` result from the exact `want`
/// (NaN must meet NaN, an infinite `want` the same infinity).
fn ulps32(got: f32, want: f64) -> f64 {
    if want.is_nan() || got.is_nan() {
        return if want.is_nan() && got.is_nan() { 0.0 } else { f64::INFINITY };
    }
    let w = want as f32;
    if w.is_infinite() || got.is_infinite() {
        return if got == w { 0.0 } else { f64::INFINITY };
    }
    let e = ((want.abs().to_bits() >> 52) as i32 - 1023).max(-126);
    (got as f64 - want).abs() / 2f64.powi(e - 23)
}

/// Units in the last place of an `f64` result from libm's.
fn ulps64(got: f64, want: f64) -> f64 {
    if want.is_nan() || got.is_nan() {
        return if want.is_nan() && got.is_nan() { 0.0 } else { f64::INFINITY };
    }
    if want.is_infinite() || got.is_infinite() {
        return if got == want { 0.0 } else { f64::INFINITY };
    }
    let e = ((want.abs().to_bits() >> 52) as i32 - 1023).max(-1022);
    (got - want).abs() / (2f64.powi(e) * 2f64.powi(-52))
}

/// `n` values: a spread over [-12, 12), magnitudes from 1e-30 to 1e30, and
/// the special values at the start.
fn inputs(n: usize) -> Vec<f64> {
    let specials = [0.0, -0.0, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, -1.0, 1.0, 1e-30, -1e-30, 1e30, -100.0];
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    (0..n)
        .map(|i| {
            if i < specials.len() {
                return specials[i];
            }
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            let u = (s.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64;
            if i % 3 == 0 {
                let sign = if i % 2 == 0 { 1.0 } else { -1.0 };
                sign * 10f64.powf(60.0 * u - 30.0)
            } else {
                24.0 * u - 12.0
            }
        })
        .collect()
}

const LENGTHS: [usize; 5] = [0, 1, 7, 613, 100_003];

/// Runs `f` under the baseline form, the AVX2 form and the widest form
/// (AVX-512 where the processor has it), checks they agree bit for bit,
/// and returns the result.
fn both_forms<T: PartialEq + std::fmt::Debug>(f: impl Fn() -> T) -> T {
    cpu::set_baseline_only(true);
    let base = f();
    cpu::set_baseline_only(false);
    cpu::set_avx2_only(true);
    let avx2 = f();
    cpu::set_avx2_only(false);
    let wide = f();
    assert!(base == avx2, "the AVX2 twin and the baseline form differ");
    assert!(base == wide, "the AVX-512 twin and the baseline form differ");
    wide
}

/// Bits of a result (NaN-safe equality).
fn bits32(a: &Array1<f32>) -> Vec<u32> {
    a.iter().map(|v| v.to_bits()).collect()
}

fn check32(name: &str, got: &Array1<f32>, x: &[f32], reference: impl Fn(f64) -> f64, bound: f64) {
    assert_eq!(got.len(), x.len());
    for (g, &v) in got.iter().zip(x) {
        let e = ulps32(*g, reference(v as f64));
        assert!(e <= bound, "{name}({v:e}) = {g:e}, libm {:e}: {e} ulp", reference(v as f64));
    }
}

fn check64(name: &str, got: &Array1<f64>, x: &[f64], reference: impl Fn(f64) -> f64, bound: f64) {
    assert_eq!(got.len(), x.len());
    for (g, &v) in got.iter().zip(x) {
        let e = ulps64(*g, reference(v));
        assert!(e <= bound, "{name}({v:e}) = {g:e}, libm {:e}: {e} ulp", reference(v));
    }
}

fn sigmoid_libm(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

#[test]
fn f32_activations_match_libm() {
    for n in LENGTHS {
        let x: Vec<f32> = inputs(n).into_iter().map(|v| v as f32).collect();
        let xa = Array1::from_vec(x.clone());
        let (t, s, e, l) = both_forms(|| {
            let (t, s, e, l) = acts32(&xa).unwrap();
            (bits32(&t), bits32(&s), bits32(&e), bits32(&l))
        });
        let back = |b: Vec<u32>| Array1::from_vec(b.into_iter().map(f32::from_bits).collect());
        check32("tanh", &back(t), &x, f64::tanh, 3.0);
        check32("sigmoid", &back(s), &x, sigmoid_libm, 3.0);
        check32("erf", &back(e), &x, einlang_libm_erf, 2.0);
        check32("ln", &back(l), &x, f64::ln, 2.0);
    }
}

/// The error function (Rust's std has none): the runtime's `libm` wrapper
/// for `f64`, which the generated code does not use for `f32`.
fn einlang_libm_erf(x: f64) -> f64 {
    einlang::__private::arith::erf_f64(x)
}

/// `erf` through generated code around its split (0.84375) and the end of
/// its tail form (3.92): every 61st `f32` of `[0.5, 4.5]` of both signs
/// plus the neighbours of both points, the same bits in every CPU form,
/// within 2 ulp of libm's `f64` `erf`.
#[test]
fn f32_erf_split_in_every_form() {
    let near = |v: f32| [f32::from_bits(v.to_bits() - 1), v, f32::from_bits(v.to_bits() + 1)];
    let mut x: Vec<f32> = near(0.843_75).into_iter().chain(near(3.92)).collect();
    x.extend((0.5f32.to_bits()..=4.5f32.to_bits()).step_by(61).map(f32::from_bits));
    let neg: Vec<f32> = x.iter().map(|v| -v).collect();
    x.extend(neg);
    let xa = Array1::from_vec(x.clone());
    let e = both_forms(|| bits32(&acts32(&xa).unwrap().2));
    let e = Array1::from_vec(e.into_iter().map(f32::from_bits).collect());
    check32("erf", &e, &x, einlang_libm_erf, 2.0);
}

#[test]
fn f32_sin_log1p_pow_match_libm() {
    for n in LENGTHS {
        // sin over the whole range the inputs span (up to 1e30): the
        // reduction is exact.
        let x: Vec<f32> = inputs(n).into_iter().map(|v| v as f32).collect();
        let xa = Array1::from_vec(x.clone());
        let (s, l, p) = both_forms(|| {
            let (s, l, p) = more32(&xa).unwrap();
            (bits32(&s), bits32(&l), bits32(&p))
        });
        let back = |b: Vec<u32>| Array1::from_vec(b.into_iter().map(f32::from_bits).collect());
        check32("sin", &back(s), &x, f64::sin, 1.0);
        check32("log1p", &back(l), &x, f64::ln_1p, 2.0);
        check32("pow", &back(p), &x, |v| v.abs().powf(0.75), 1.0);
    }
}

#[test]
fn gelu_forms_match_naive_loops() {
    for n in LENGTHS {
        let x: Vec<f32> = inputs(n).into_iter().map(|v| v as f32).filter(|v| v.abs() < 1e15).collect();
        let xa = Array1::from_vec(x.clone());
        let (a, b) = gelus(&xa).unwrap();
        // The naive loop computes each form in f64 from the f32 input;
        // the generated code's arithmetic around tanh and erf is f32, so
        // the bound is relative to the result plus a term in |x| for the
        // cancellation in `1 + tanh(..)` (`1 + erf(..)`) at negative x,
        // which any f32 evaluation has.
        for (i, &v) in x.iter().enumerate() {
            let v = v as f64;
            let ta = 0.5 * v * (1.0 + (0.797_884_560_802_865_4 * (v + 0.044715 * v * v * v)).tanh());
            let tb = 0.5 * v * (1.0 + einlang_libm_erf(v * std::f64::consts::FRAC_1_SQRT_2));
            for (got, want, name) in [(a[i], ta, "gelu_tanh"), (b[i], tb, "gelu")] {
                let err = (got as f64 - want).abs();
                assert!(
                    err <= 4e-7 * want.abs() + 2e-7 * v.abs() + 1e-38 || (got.is_nan() && want.is_nan()),
                    "{name}({v:e}) = {got:e}, naive {want:e}"
                );
            }
        }
    }
}

#[test]
fn f64_activations_match_libm() {
    for n in LENGTHS {
        let x = inputs(n);
        let xa = Array1::from_vec(x.clone());
        let (t, s, l, p) = both_forms(|| {
            let (t, s, l, p) = acts64(&xa).unwrap();
            let b = |a: Array1<f64>| a.iter().map(|v| v.to_bits()).collect::<Vec<u64>>();
            (b(t), b(s), b(l), b(p))
        });
        let back = |b: Vec<u64>| Array1::from_vec(b.into_iter().map(f64::from_bits).collect());
        check64("tanh", &back(t), &x, f64::tanh, 3.0);
        check64("sigmoid", &back(s), &x, |v| if v >= 0.0 { sigmoid_libm(v) } else { v.exp() / (1.0 + v.exp()) }, 3.0);
        check64("ln", &back(l), &x, f64::ln, 2.0);
        check64("log1p", &back(p), &x, f64::ln_1p, 2.0);
    }
}

/// `f64` `sin`, `cos` and `tan` (the runtime's exact reduction, every
/// exponent: the inputs reach 1e30, and 1e300 below) against libm.
#[test]
fn f64_trigonometry_matches_libm() {
    for n in LENGTHS {
        let mut x = inputs(n);
        if n > 20 {
            x[17] = 1e300;
            x[18] = -f64::MAX;
            x[19] = 1e22;
        }
        let xa = Array1::from_vec(x.clone());
        let (s, c, t) = both_forms(|| {
            let (s, c, t) = trig64(&xa).unwrap();
            let b = |a: Array1<f64>| a.iter().map(|v| v.to_bits()).collect::<Vec<u64>>();
            (b(s), b(c), b(t))
        });
        let back = |b: Vec<u64>| Array1::from_vec(b.into_iter().map(f64::from_bits).collect());
        check64("sin", &back(s), &x, f64::sin, 1.0);
        check64("cos", &back(c), &x, f64::cos, 1.0);
        check64("tan", &back(t), &x, f64::tan, 2.0);
    }
}

/// `f32` `sin`, `cos` and `tan` (the reduction in `f64`, every exponent:
/// the inputs reach 1e30, plus `f32::MAX`, the `f32`s closest to a
/// multiple of `pi/2`, the ends of the reduction's buckets at 2^51, 2^77
/// and 2^103, and consecutive `f32`s around multiples of `pi/2`) against
/// libm in `f64`, in the three CPU forms (bits equal).
#[test]
fn f32_trigonometry_matches_libm() {
    let hard = [
        f32::MAX,
        f32::MIN,
        f32::from_bits(0x6f79_be45),
        f32::from_bits(0x50a3_e87f),
        f32::from_bits(0x437c_e5f1),
        f32::from_bits((127 + 51) << 23),
        f32::from_bits(((127 + 77) << 23) - 1),
        f32::from_bits((127 + 103) << 23),
        f32::from_bits(1),
        -f32::MIN_POSITIVE,
        std::f32::consts::FRAC_PI_2,
        std::f32::consts::PI,
        -3.0 * std::f32::consts::FRAC_PI_2,
    ];
    for n in LENGTHS {
        let mut x: Vec<f32> = inputs(n).into_iter().map(|v| v as f32).collect();
        if n > 100 {
            x[20..20 + hard.len()].copy_from_slice(&hard);
            // Consecutive f32s around k pi/2 for k = 3, 10, 1001, 65537.
            for (j, k) in [3.0f64, 10.0, 1001.0, 65537.0].into_iter().enumerate() {
                let mid = ((k * std::f64::consts::FRAC_PI_2) as f32).to_bits();
                for d in 0..8 {
                    x[40 + 8 * j + d] = f32::from_bits(mid - 4 + d as u32);
                }
            }
        }
        let xa = Array1::from_vec(x.clone());
        let (s, c, t) = both_forms(|| {
            let (s, c, t) = trig32(&xa).unwrap();
            (bits32(&s), bits32(&c), bits32(&t))
        });
        let back = |b: Vec<u32>| Array1::from_vec(b.into_iter().map(f32::from_bits).collect());
        check32("sin", &back(s), &x, f64::sin, 1.0);
        check32("cos", &back(c), &x, f64::cos, 1.0);
        check32("tan", &back(t), &x, f64::tan, 1.0);
        // Signed zeros: sin and tan keep the sign, cos(-0) = 1.
        if n > 1 {
            let z = Array1::from_vec(vec![-0.0f32, 0.0]);
            let (s, c, t) = trig32(&z).unwrap();
            assert_eq!(bits32(&s), [0x8000_0000, 0]);
            assert_eq!(bits32(&t), [0x8000_0000, 0]);
            assert_eq!(c.to_vec(), [1.0, 1.0]);
        }
    }
}

/// `x cos(y) - x sin(y)`: the loop mixes the trigonometric forms with
/// other arithmetic; the three CPU forms agree, and each element is within
/// the bound of an `f32` evaluation of the expression from `f64` libm.
#[test]
fn f32_trigonometry_in_expressions() {
    for n in LENGTHS {
        let y: Vec<f32> = inputs(n).into_iter().map(|v| v as f32).collect();
        let x: Vec<f32> = (0..n).map(|i| 1.0 + (i % 17) as f32 * 0.25).collect();
        let (xa, ya) = (Array1::from_vec(x.clone()), Array1::from_vec(y.clone()));
        let got = both_forms(|| bits32(&rotate32(&xa, &ya).unwrap()));
        for i in 0..n {
            let (xv, yv) = (x[i], y[i] as f64);
            let (c, s) = (yv.cos() as f32, yv.sin() as f32);
            let want = xv * c - xv * s;
            let g = f32::from_bits(got[i]);
            // sin and cos within 1 ulp of the exact value, libm's rounded
            // within half of one, then two products and a difference
            // rounded on each side: under 6 ulp of the larger product.
            let scale = (xv * c).abs().max((xv * s).abs());
            let ok = (g.is_nan() && want.is_nan()) || (g - want).abs() <= 6.0 * f32::EPSILON * scale;
            assert!(ok, "{xv} cos({yv}) - {xv} sin({yv}) = {g}, libm {want}");
        }
    }
}
