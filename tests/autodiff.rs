//! Derivatives (`@y / @x`, LANGUAGE.md §6) against independent references.
//!
//! Every expected value comes from outside the compiler:
//! - central finite differences in f64 of a primal function exported from the
//!   same `einlang!` block (so the reference differentiates exactly the
//!   program the gradient was asked of, through code without `@`);
//! - formulas derived by hand;
//! - backward passes written as plain Rust loops (MLP, convolution layer,
//!   softmax cross-entropy, RNN).
//! The dot-product test checks forward mode against reverse mode:
//! `<J v, u> == <v, J^T u>`.
//!
//! Each group keeps its `einlang!` block in its own `mod`, next to its tests.

//! This file: elementary rules, reductions, control flow, gathers,
//! affine and strided reads, forward mode, composition, `std::ml` and
//! property tests on random shapes. Hand-written backward passes and
//! higher orders are in `autodiff_models.rs`; recurrences, rules, Jacobian
//! rows and `match` in `autodiff_rules.rs`.

mod autodiff_support;
mod common;

#[allow(unused_imports)]
use autodiff_support::*;
#[allow(unused_imports)]
use einlang::ndarray::{Array, Array1, Array2, ArrayD, Dimension, IxDyn, ShapeBuilder};

#[test]
fn finite_differences_agree_with_known_derivatives() {
    // The reference itself, on functions whose derivatives are known: if
    // this fails, every comparison below is meaningless.
    let x = rand(5, 1);
    let g = fd_grad(&x, |x| x.iter().map(|v| v.sin() * v).sum());
    assert_grad("fd of sum x sin x", &g, &x.mapv(|v| v.sin() + v * v.cos()), 1e-8);
    let j = fd_jacobian(&x, |x| x.mapv(f64::exp));
    let want = Array2::from_shape_fn((5, 5), |(i, k)| if i == k { x[i].exp() } else { 0.0 });
    assert_grad("fd jacobian of exp", &j, &want, 1e-8);
    let d = fd_scalar(0.3, |s| x.mapv(|v| (s * v).sin()));
    assert_grad("fd of sin(s x) in s", &d, &x.mapv(|v| v * (0.3 * v).cos()), 1e-8);
    assert_scalar("fd of s^3", fd_scalar_scalar(0.7, |s| s * s * s), 3.0 * 0.49, 1e-8);
}

// ===========================================================================
// Elementary rules: loss = sum_i (expression of x[i], w[i]); gradient in x
// ===========================================================================

mod elementary {
    use super::*;
    use einlang::einlang;

    einlang! {
        use std::math::{abs, cos, exp, floor, ln, log, max, min, round, sigmoid, sin, sqrt, tan, tanh};

        // + - * / and unary minus, differentiated in both operands.
        pub fn p_arith(x: [f64; N], w: [f64; N]) -> f64 {
            sum[i](w[i] * (x[i] + 2.0) * (x[i] - w[i]) / (x[i] * x[i] + 1.0) - (-x[i] * 3.0) + 1.0 / (2.0 + x[i]))
        }
        pub fn g_arith(x: [f64; N], w: [f64; N]) -> ([f64; N], [f64; N]) {
            let loss = sum[i](w[i] * (x[i] + 2.0) * (x[i] - w[i]) / (x[i] * x[i] + 1.0) - (-x[i] * 3.0) + 1.0 / (2.0 + x[i]));
            (@loss / @x, @loss / @w)
        }

        // float ** int.
        pub fn p_powi(x: [f64; N], w: [f64; N]) -> f64 {
            sum[i](w[i] * x[i] ** 3 + x[i] ** 2 - 0.5 * x[i] ** 4)
        }
        pub fn g_powi(x: [f64; N], w: [f64; N]) -> [f64; N] {
            let loss = sum[i](w[i] * x[i] ** 3 + x[i] ** 2 - 0.5 * x[i] ** 4);
            @loss / @x
        }

        // float ** float, with the source in the base, in the exponent and in both.
        pub fn p_powf(x: [f64; N], w: [f64; N]) -> f64 {
            sum[i](w[i] * (x[i] * x[i] + 0.5) ** 1.7 + (1.5 + x[i]) ** (0.5 + w[i] * x[i]) + 2.0 ** x[i])
        }
        pub fn g_powf(x: [f64; N], w: [f64; N]) -> [f64; N] {
            let loss = sum[i](w[i] * (x[i] * x[i] + 0.5) ** 1.7 + (1.5 + x[i]) ** (0.5 + w[i] * x[i]) + 2.0 ** x[i]);
            @loss / @x
        }

        pub fn p_exp(x: [f64; N], w: [f64; N]) -> f64 { sum[i](w[i] * exp(x[i] * w[i]) + exp(-x[i])) }
        pub fn g_exp(x: [f64; N], w: [f64; N]) -> [f64; N] {
            let loss = sum[i](w[i] * exp(x[i] * w[i]) + exp(-x[i]));
            @loss / @x
        }

        pub fn p_log(x: [f64; N], w: [f64; N]) -> f64 { sum[i](w[i] * ln(1.5 + x[i]) + log(2.0 + x[i] * w[i])) }
        pub fn g_log(x: [f64; N], w: [f64; N]) -> [f64; N] {
            let loss = sum[i](w[i] * ln(1.5 + x[i]) + log(2.0 + x[i] * w[i]));
            @loss / @x
        }

        pub fn p_sqrt(x: [f64; N], w: [f64; N]) -> f64 { sum[i](w[i] * sqrt(1.5 + x[i]) + sqrt(x[i] * x[i] + 0.1)) }
        pub fn g_sqrt(x: [f64; N], w: [f64; N]) -> [f64; N] {
            let loss = sum[i](w[i] * sqrt(1.5 + x[i]) + sqrt(x[i] * x[i] + 0.1));
            @loss / @x
        }

        pub fn p_sin(x: [f64; N], w: [f64; N]) -> f64 { sum[i](w[i] * sin(2.0 * x[i]) + sin(x[i]) * x[i]) }
        pub fn g_sin(x: [f64; N], w: [f64; N]) -> [f64; N] {
            let loss = sum[i](w[i] * sin(2.0 * x[i]) + sin(x[i]) * x[i]);
            @loss / @x
        }

        pub fn p_cos(x: [f64; N], w: [f64; N]) -> f64 { sum[i](w[i] * cos(3.0 * x[i] + w[i])) }
        pub fn g_cos(x: [f64; N], w: [f64; N]) -> [f64; N] {
            let loss = sum[i](w[i] * cos(3.0 * x[i] + w[i]));
            @loss / @x
        }

        pub fn p_tan(x: [f64; N], w: [f64; N]) -> f64 { sum[i](w[i] * tan(x[i])) }
        pub fn g_tan(x: [f64; N], w: [f64; N]) -> [f64; N] {
            let loss = sum[i](w[i] * tan(x[i]));
            @loss / @x
        }

        pub fn p_tanh(x: [f64; N], w: [f64; N]) -> f64 { sum[i](w[i] * tanh(2.0 * x[i])) }
        pub fn g_tanh(x: [f64; N], w: [f64; N]) -> [f64; N] {
            let loss = sum[i](w[i] * tanh(2.0 * x[i]));
            @loss / @x
        }

        pub fn p_sigmoid(x: [f64; N], w: [f64; N]) -> f64 { sum[i](w[i] * sigmoid(3.0 * x[i])) }
        pub fn g_sigmoid(x: [f64; N], w: [f64; N]) -> [f64; N] {
            let loss = sum[i](w[i] * sigmoid(3.0 * x[i]));
            @loss / @x
        }

        pub fn p_abs(x: [f64; N], w: [f64; N]) -> f64 { sum[i](w[i] * abs(x[i]) + abs(x[i] - 0.25) * x[i]) }
        pub fn g_abs(x: [f64; N], w: [f64; N]) -> [f64; N] {
            let loss = sum[i](w[i] * abs(x[i]) + abs(x[i] - 0.25) * x[i]);
            @loss / @x
        }

        // max / min of two values: the source on either side, and against a literal.
        pub fn p_maxmin(x: [f64; N], w: [f64; N]) -> f64 {
            sum[i](max(x[i], w[i]) * w[i] + min(-w[i], x[i]) + max(x[i], 0.25) * x[i])
        }
        pub fn g_maxmin(x: [f64; N], w: [f64; N]) -> [f64; N] {
            let loss = sum[i](max(x[i], w[i]) * w[i] + min(-w[i], x[i]) + max(x[i], 0.25) * x[i]);
            @loss / @x
        }

        // floor and round are piecewise constant: derivative zero.
        pub fn p_floor(x: [f64; N], w: [f64; N]) -> f64 {
            sum[i](w[i] * (floor(3.0 * x[i]) + round(2.0 * x[i]) + x[i]))
        }
        pub fn g_floor(x: [f64; N], w: [f64; N]) -> [f64; N] {
            let loss = sum[i](w[i] * (floor(3.0 * x[i]) + round(2.0 * x[i]) + x[i]));
            @loss / @x
        }

        // Casts between floats: f64 -> f32 -> f64, and f32 -> f64 -> f32.
        pub fn g_cast_down(x: [f64; N], w: [f64; N]) -> [f64; N] {
            let loss = sum[i](w[i] * (sin(x[i] as f32) as f64));
            @loss / @x
        }
        pub fn g_cast_up(x: [f32; N], w: [f32; N]) -> [f32; N] {
            let loss = sum[i]((w[i] as f64) * exp(x[i] as f64)) as f32;
            @loss / @x
        }

        // Whole-tensor arithmetic (no indices), and a whole-tensor `let` as the source.
        pub fn p_whole(x: [f64; N], w: [f64; N]) -> f64 {
            let y = x * x + sin(x) * w;
            sum[i](y[i] * y[i])
        }
        pub fn g_whole(x: [f64; N], w: [f64; N]) -> ([f64; N], [f64; N]) {
            let y = x * x + sin(x) * w;
            let loss = sum[i](y[i] * y[i]);
            (@loss / @x, @loss / @y)
        }

        // The source is an earlier indexed binding, not a parameter.
        pub fn g_wrt_h(x: [f64; B, I], w: [f64; O, I]) -> [f64; B, O] {
            let h[n, o] = sum[i](x[n, i] * w[o, i]);
            let loss = sum[n, o](tanh(h[n, o]) ** 2);
            @loss / @h
        }

        // Scalar over scalar.
        pub fn p_scalar(x: f64) -> f64 { x * sin(x) + exp(-x * x) }
        pub fn g_scalar(x: f64) -> f64 {
            let y = x * sin(x) + exp(-x * x);
            @y / @x
        }
    }

    /// Compares `g(x, w)` with finite differences of `p(., w)` at `x`.
    macro_rules! fd_rule {
        ($test:ident, $p:ident, $g:ident, $seed:expr) => {
            #[test]
            fn $test() {
                for (n, seed) in [(7usize, $seed), (1, $seed + 1)] {
                    let x = rand(n, seed);
                    let w = rand(n, seed + 100);
                    let want = fd_grad(&x, |x| $p(x, &w).unwrap());
                    assert_grad(stringify!($g), &$g(&x, &w).unwrap(), &want, FD_TOL);
                }
            }
        };
    }

    fd_rule!(powi_rule, p_powi, g_powi, 10);
    fd_rule!(powf_rule, p_powf, g_powf, 20);
    fd_rule!(exp_rule, p_exp, g_exp, 30);
    fd_rule!(log_rule, p_log, g_log, 40);
    fd_rule!(sqrt_rule, p_sqrt, g_sqrt, 50);
    fd_rule!(sin_rule, p_sin, g_sin, 60);
    fd_rule!(cos_rule, p_cos, g_cos, 70);
    fd_rule!(tan_rule, p_tan, g_tan, 80);
    fd_rule!(tanh_rule, p_tanh, g_tanh, 90);
    fd_rule!(sigmoid_rule, p_sigmoid, g_sigmoid, 100);
    fd_rule!(abs_rule, p_abs, g_abs, 110);
    fd_rule!(max_min_of_two_rule, p_maxmin, g_maxmin, 120);
    fd_rule!(floor_round_rule, p_floor, g_floor, 130);

    #[test]
    fn arithmetic_rules_in_both_operands() {
        let (x, w) = (rand(9, 1), rand(9, 2));
        let (gx, gw) = g_arith(&x, &w).unwrap();
        assert_grad("d/dx", &gx, &fd_grad(&x, |x| p_arith(x, &w).unwrap()), FD_TOL);
        assert_grad("d/dw", &gw, &fd_grad(&w, |w| p_arith(&x, w).unwrap()), FD_TOL);
    }

    #[test]
    fn elementary_rules_match_hand_derivatives() {
        // Independent of finite differences: the textbook derivatives.
        let (x, w) = (rand(6, 3), rand(6, 4));
        let exact = |g: Array1<f64>, f: &dyn Fn(f64, f64) -> f64, what: &str| {
            let want = Array1::from_shape_fn(x.len(), |i| f(x[i], w[i]));
            assert_grad(what, &g, &want, EXACT_TOL);
        };
        exact(g_exp(&x, &w).unwrap(), &|x, w| w * w * (x * w).exp() - (-x).exp(), "exp");
        exact(g_log(&x, &w).unwrap(), &|x, w| w / (1.5 + x) + w / (2.0 + x * w), "ln/log");
        exact(g_tanh(&x, &w).unwrap(), &|x, w| 2.0 * w * (1.0 - (2.0 * x).tanh().powi(2)), "tanh");
        exact(
            g_sigmoid(&x, &w).unwrap(),
            &|x, w| {
                let s = 1.0 / (1.0 + (-3.0 * x).exp());
                3.0 * w * s * (1.0 - s)
            },
            "sigmoid",
        );
        exact(g_tan(&x, &w).unwrap(), &|x, w| w / x.cos().powi(2), "tan");
        exact(g_powi(&x, &w).unwrap(), &|x, w| 3.0 * w * x * x + 2.0 * x - 2.0 * x.powi(3), "powi");
        // floor and round contribute nothing: only the `+ x` term is left.
        exact(g_floor(&x, &w).unwrap(), &|_, w| w, "floor/round");
    }

    #[test]
    fn casts_between_floats_pass_the_derivative_through() {
        let (x, w) = (rand(8, 5), rand(8, 6));
        // sin evaluated in f32: the derivative cos(x) carries f32 rounding.
        let want = Array1::from_shape_fn(8, |i| w[i] * x[i].cos());
        assert_grad("f64 -> f32 -> f64", &g_cast_down(&x, &w).unwrap(), &want, 1e-6);
        let (x32, w32) = (narrow(&x), narrow(&w));
        let want = Array1::from_shape_fn(8, |i| f64::from(w32[i]) * f64::from(x32[i]).exp());
        assert_grad("f32 -> f64 -> f32", &widen(&g_cast_up(&x32, &w32).unwrap()), &want, 1e-6);
    }

    #[test]
    fn whole_tensor_operations_and_a_let_source() {
        let (x, w) = (rand(6, 7), rand(6, 8));
        let (gx, gy) = g_whole(&x, &w).unwrap();
        assert_grad("d/dx", &gx, &fd_grad(&x, |x| p_whole(x, &w).unwrap()), FD_TOL);
        // d/dy of sum y^2 is 2y, with y computed here.
        let y = Array1::from_shape_fn(6, |i| x[i] * x[i] + x[i].sin() * w[i]);
        assert_grad("d/dy", &gy, &(2.0 * &y), EXACT_TOL);
    }

    #[test]
    fn gradient_with_respect_to_an_indexed_binding() {
        let (x, w) = (rand((3, 4), 9), rand((5, 4), 10));
        let h = x.dot(&w.t());
        let want = h.mapv(|v| 2.0 * v.tanh() * (1.0 - v.tanh().powi(2)));
        assert_grad("d/dh", &g_wrt_h(&x, &w).unwrap(), &want, EXACT_TOL);
    }

    #[test]
    fn scalar_over_scalar() {
        for x in [-1.3f64, -0.2, 0.0, 0.4, 2.1] {
            let want = x.sin() + x * x.cos() - 2.0 * x * (-x * x).exp();
            let got = g_scalar(x).unwrap();
            assert_scalar("hand", got, want, EXACT_TOL);
            assert_scalar("fd", got, fd_scalar_scalar(x, |x| p_scalar(x).unwrap()), FD_TOL);
        }
    }
}

// ===========================================================================
// Reductions: sum, max, min, prod over the columns of x [R, C]
// ===========================================================================

mod reductions {
    use super::*;
    use einlang::einlang;
    use einlang::ndarray::array;

    einlang! {
        pub fn p_rsum(x: [f64; R, C], w: [f64; R]) -> f64 {
            let s[r] = sum[c](x[r, c] * x[r, c] + x[r, c]);
            sum[r](w[r] * s[r] * s[r])
        }
        pub fn g_rsum(x: [f64; R, C], w: [f64; R]) -> [f64; R, C] {
            let s[r] = sum[c](x[r, c] * x[r, c] + x[r, c]);
            let loss = sum[r](w[r] * s[r] * s[r]);
            @loss / @x
        }

        pub fn p_rmax(x: [f64; R, C], w: [f64; R]) -> f64 {
            let m[r] = max[c](x[r, c]);
            sum[r](w[r] * m[r] + m[r] * m[r])
        }
        pub fn g_rmax(x: [f64; R, C], w: [f64; R]) -> [f64; R, C] {
            let m[r] = max[c](x[r, c]);
            let loss = sum[r](w[r] * m[r] + m[r] * m[r]);
            @loss / @x
        }

        pub fn p_rmin(x: [f64; R, C], w: [f64; R]) -> f64 {
            let m[r] = min[c](x[r, c]);
            sum[r](w[r] * m[r] + m[r] * m[r])
        }
        pub fn g_rmin(x: [f64; R, C], w: [f64; R]) -> [f64; R, C] {
            let m[r] = min[c](x[r, c]);
            let loss = sum[r](w[r] * m[r] + m[r] * m[r]);
            @loss / @x
        }

        pub fn p_rprod(x: [f64; R, C], w: [f64; R]) -> f64 {
            let p[r] = prod[c](x[r, c]);
            sum[r](w[r] * p[r])
        }
        pub fn g_rprod(x: [f64; R, C], w: [f64; R]) -> [f64; R, C] {
            let p[r] = prod[c](x[r, c]);
            let loss = sum[r](w[r] * p[r]);
            @loss / @x
        }

        // A reduction over two indices at once, nested in another.
        pub fn p_rall(x: [f64; R, C]) -> f64 { max[r, c](x[r, c]) * sum[r, c](x[r, c] * x[r, c]) }
        pub fn g_rall(x: [f64; R, C]) -> [f64; R, C] {
            let loss = max[r, c](x[r, c]) * sum[r, c](x[r, c] * x[r, c]);
            @loss / @x
        }
    }

    macro_rules! fd_reduction {
        ($test:ident, $p:ident, $g:ident, $seed:expr) => {
            #[test]
            fn $test() {
                for (shape, seed) in [((3usize, 5usize), $seed), ((1, 1), $seed + 1), ((4, 1), $seed + 2)] {
                    let x = rand(shape, seed);
                    let w = rand(shape.0, seed + 100);
                    let want = fd_grad(&x, |x| $p(x, &w).unwrap());
                    assert_grad(stringify!($g), &$g(&x, &w).unwrap(), &want, FD_TOL);
                }
            }
        };
    }

    fd_reduction!(sum_rule, p_rsum, g_rsum, 200);
    fd_reduction!(max_rule, p_rmax, g_rmax, 210);
    fd_reduction!(min_rule, p_rmin, g_rmin, 220);
    fd_reduction!(prod_rule, p_rprod, g_rprod, 230);

    #[test]
    fn reduction_over_two_indices() {
        let x = rand((3, 4), 240);
        assert_grad("g_rall", &g_rall(&x).unwrap(), &fd_grad(&x, |x| p_rall(x).unwrap()), FD_TOL);
    }

    #[test]
    fn max_and_min_route_to_the_first_extremum_on_ties() {
        // d loss / d m = w + 2 m, all of it at the first maximal (minimal) entry.
        let w = array![0.5, -2.0];
        let x = array![[1.0, 3.0, 3.0, 2.0], [-1.0, -1.0, -2.0, -5.0]];
        let want = array![[0.0, 0.5 + 6.0, 0.0, 0.0], [-2.0 - 2.0, 0.0, 0.0, 0.0]];
        assert_grad("max with ties", &g_rmax(&x, &w).unwrap(), &want, EXACT_TOL);
        let x = array![[2.0, -1.0, 5.0, -1.0], [4.0, 4.0, 4.0, 4.0]];
        let want = array![[0.0, 0.5 - 2.0, 0.0, 0.0], [-2.0 + 8.0, 0.0, 0.0, 0.0]];
        assert_grad("min with ties", &g_rmin(&x, &w).unwrap(), &want, EXACT_TOL);
    }

    #[test]
    fn max_over_two_indices_routes_to_the_first_extremum_on_ties() {
        // loss = m * S with m = max, S = sum of squares: d/dx = 2 m x, plus S
        // at the first maximal entry in row-major order ([0, 1], not [1, 0]).
        let x = array![[1.0, 3.0], [3.0, 2.0]];
        let want = array![[2.0 * 3.0 * 1.0, 2.0 * 3.0 * 3.0 + 23.0], [2.0 * 3.0 * 3.0, 2.0 * 3.0 * 2.0]];
        assert_grad("max over [r, c] with ties", &g_rall(&x).unwrap(), &want, EXACT_TOL);
    }

    #[test]
    fn prod_is_exact_with_zero_factors() {
        // d prod / d x_j = product of the other entries: with one zero only
        // the zero's own entry is nonzero, with two zeros everything is 0.
        let w = array![2.0, -1.0, 0.5];
        let x = array![[2.0, 0.0, 3.0, -1.5], [0.0, 4.0, 0.0, 2.0], [1.5, -2.0, 0.5, 2.0]];
        let want = array![
            [0.0, 2.0 * (2.0 * 3.0 * -1.5), 0.0, 0.0],
            [0.0, 0.0, 0.0, 0.0],
            [0.5 * (-2.0 * 0.5 * 2.0), 0.5 * (1.5 * 0.5 * 2.0), 0.5 * (1.5 * -2.0 * 2.0), 0.5 * (1.5 * -2.0 * 0.5)]
        ];
        let got = g_rprod(&x, &w).unwrap();
        assert_grad("prod with zeros", &got, &want, EXACT_TOL);
        assert!(got.iter().all(|v| v.is_finite()), "prod gradient is not finite: {got}");
    }
}

// ===========================================================================
// Guards, bindings and conditions
// ===========================================================================

mod control {
    use super::*;
    use einlang::einlang;

    einlang! {
        use std::math::{exp, sin};

        // A `where` guard on an indexed definition: 0 below the diagonal.
        pub fn p_guard(x: [f64; R, C], w: [f64; R]) -> f64 {
            let u[i, j] = x[i, j] * x[i, j] where i <= j;
            sum[i, j](w[i] * u[i, j])
        }
        pub fn g_guard(x: [f64; R, C], w: [f64; R]) -> [f64; R, C] {
            let u[i, j] = x[i, j] * x[i, j] where i <= j;
            let loss = sum[i, j](w[i] * u[i, j]);
            @loss / @x
        }

        // A value guard on a reduction.
        pub fn p_rwhere(x: [f64; R, C], w: [f64; R]) -> f64 {
            sum[r](w[r] * sum[c](x[r, c] * x[r, c] where x[r, c] > 0.0))
        }
        pub fn g_rwhere(x: [f64; R, C], w: [f64; R]) -> [f64; R, C] {
            let loss = sum[r](w[r] * sum[c](x[r, c] * x[r, c] where x[r, c] > 0.0));
            @loss / @x
        }

        // `where` bindings, one of them an `if`.
        pub fn p_wbind(x: [f64; R, C], w: [f64; R]) -> f64 {
            let a[r, c] = act where z = x[r, c] * w[r] + 0.1, act = if z > 0.0 { z * z } else { sin(z) };
            sum[r, c](a[r, c])
        }
        pub fn g_wbind(x: [f64; R, C], w: [f64; R]) -> ([f64; R, C], [f64; R]) {
            let a[r, c] = act where z = x[r, c] * w[r] + 0.1, act = if z > 0.0 { z * z } else { sin(z) };
            let loss = sum[r, c](a[r, c]);
            (@loss / @x, @loss / @w)
        }

        // `if` on a value and on an index.
        pub fn p_if(x: [f64; R, C], w: [f64; R]) -> f64 {
            let a[r, c] = if x[r, c] > 0.0 { exp(x[r, c]) } else { x[r, c] * x[r, c] * w[r] };
            let b[r, c] = if c == 0 { a[r, c] * 2.0 } else { a[r, c] };
            sum[r, c](b[r, c])
        }
        pub fn g_if(x: [f64; R, C], w: [f64; R]) -> [f64; R, C] {
            let a[r, c] = if x[r, c] > 0.0 { exp(x[r, c]) } else { x[r, c] * x[r, c] * w[r] };
            let b[r, c] = if c == 0 { a[r, c] * 2.0 } else { a[r, c] };
            let loss = sum[r, c](b[r, c]);
            @loss / @x
        }

        // Zero padding written as an index condition ("same" convolution).
        pub fn p_pad(x: [f64; L], k: [f64; K]) -> f64 {
            let y[o in 0..L] = sum[r](if i >= 0 && i < L { x[i] } else { 0.0 } * k[r]) where i = o + r - 1;
            sum[o](y[o] * y[o])
        }
        pub fn g_pad(x: [f64; L], k: [f64; K]) -> ([f64; L], [f64; K]) {
            let y[o in 0..L] = sum[r](if i >= 0 && i < L { x[i] } else { 0.0 } * k[r]) where i = o + r - 1;
            let loss = sum[o](y[o] * y[o]);
            (@loss / @x, @loss / @k)
        }
    }

    macro_rules! fd_control {
        ($test:ident, $p:ident, $g:ident, $seed:expr) => {
            #[test]
            fn $test() {
                for (shape, seed) in [((4usize, 5usize), $seed), ((5, 3), $seed + 1), ((1, 2), $seed + 2)] {
                    let x = rand(shape, seed);
                    let w = rand(shape.0, seed + 100);
                    let want = fd_grad(&x, |x| $p(x, &w).unwrap());
                    assert_grad(stringify!($g), &$g(&x, &w).unwrap(), &want, FD_TOL);
                }
            }
        };
    }

    fd_control!(where_guard_on_a_definition, p_guard, g_guard, 300);
    fd_control!(where_guard_on_a_reduction, p_rwhere, g_rwhere, 310);
    fd_control!(if_on_values_and_indices, p_if, g_if, 320);

    #[test]
    fn where_guard_matches_the_hand_derivative() {
        let (x, w) = (rand((4, 3), 330), rand(4, 331));
        let want = Array2::from_shape_fn((4, 3), |(i, j)| if i <= j { 2.0 * w[i] * x[[i, j]] } else { 0.0 });
        assert_grad("guard", &g_guard(&x, &w).unwrap(), &want, EXACT_TOL);
        // Only the positive entries count in the guarded reduction.
        let want = Array2::from_shape_fn((4, 3), |(r, c)| if x[[r, c]] > 0.0 { 2.0 * w[r] * x[[r, c]] } else { 0.0 });
        assert_grad("guarded reduction", &g_rwhere(&x, &w).unwrap(), &want, EXACT_TOL);
    }

    #[test]
    fn where_bindings() {
        for (shape, seed) in [((3usize, 4usize), 340u64), ((2, 1), 341)] {
            let (x, w) = (rand(shape, seed), rand(shape.0, seed + 100));
            let (gx, gw) = g_wbind(&x, &w).unwrap();
            assert_grad("d/dx", &gx, &fd_grad(&x, |x| p_wbind(x, &w).unwrap()), FD_TOL);
            assert_grad("d/dw", &gw, &fd_grad(&w, |w| p_wbind(&x, w).unwrap()), FD_TOL);
        }
    }

    #[test]
    fn padding_by_an_index_condition() {
        for (l, kk, seed) in [(7usize, 3usize, 350u64), (3, 3, 351), (2, 3, 352), (5, 1, 353)] {
            let (x, k) = (rand(l, seed), rand(kk, seed + 100));
            let (gx, gk) = g_pad(&x, &k).unwrap();
            assert_grad("d/dx", &gx, &fd_grad(&x, |x| p_pad(x, &k).unwrap()), FD_TOL);
            assert_grad("d/dk", &gk, &fd_grad(&k, |k| p_pad(&x, k).unwrap()), FD_TOL);
        }
    }
}

// ===========================================================================
// Gathers with integer index tensors
// ===========================================================================

mod gathers {
    use super::*;
    use einlang::einlang;
    use einlang::ndarray::array;

    einlang! {
        use std::math::{exp, tanh};

        pub fn p_gather1(e: [f64; V], labels: [i64; B], w: [f64; B]) -> f64 {
            sum[n](w[n] * e[labels[n]] * e[labels[n]])
        }
        pub fn g_gather1(e: [f64; V], labels: [i64; B], w: [f64; B]) -> [f64; V] {
            let loss = sum[n](w[n] * e[labels[n]] * e[labels[n]]);
            @loss / @e
        }

        pub fn p_gather2(x: [f64; B, C], labels: [i64; B]) -> f64 {
            sum[n](exp(x[n, labels[n]]) + x[n, labels[n]] * x[n, 0])
        }
        pub fn g_gather2(x: [f64; B, C], labels: [i64; B]) -> [f64; B, C] {
            let loss = sum[n](exp(x[n, labels[n]]) + x[n, labels[n]] * x[n, 0]);
            @loss / @x
        }

        // An embedding lookup.
        pub fn p_embed(emb: [f64; V, D], tokens: [i64; T], w: [f64; T, D]) -> f64 {
            let h[t, d] = emb[tokens[t], d];
            sum[t, d](w[t, d] * tanh(h[t, d]))
        }
        pub fn g_embed(emb: [f64; V, D], tokens: [i64; T], w: [f64; T, D]) -> [f64; V, D] {
            let h[t, d] = emb[tokens[t], d];
            let loss = sum[t, d](w[t, d] * tanh(h[t, d]));
            @loss / @emb
        }
    }

    #[test]
    fn gather_accumulates_at_repeated_indices() {
        let e = rand(6, 400);
        // 2 is gathered three times, 4 and 5 never.
        let idx = array![2i64, 0, 2, 3, 1, 2];
        let w = rand(6, 401);
        let got = g_gather1(&e, &idx, &w).unwrap();
        assert_grad("fd", &got, &fd_grad(&e, |e| p_gather1(e, &idx, &w).unwrap()), FD_TOL);
        let mut want = Array1::<f64>::zeros(6);
        for n in 0..6 {
            want[idx[n] as usize] += 2.0 * w[n] * e[idx[n] as usize];
        }
        assert_grad("hand", &got, &want, EXACT_TOL);
        assert_eq!((got[4], got[5]), (0.0, 0.0), "entries never gathered must get exactly 0");
    }

    #[test]
    fn gather_along_the_last_axis() {
        let x = rand((5, 4), 410);
        for idx in [array![0i64, 3, 1, 0, 2], array![3i64, 3, 3, 3, 3]] {
            let got = g_gather2(&x, &idx).unwrap();
            assert_grad("fd", &got, &fd_grad(&x, |x| p_gather2(x, &idx).unwrap()), FD_TOL);
        }
    }

    #[test]
    fn embedding_lookup() {
        let (emb, w) = (rand((5, 3), 420), rand((7, 3), 421));
        let tokens = array![4i64, 0, 4, 2, 2, 4, 1];
        let got = g_embed(&emb, &tokens, &w).unwrap();
        assert_grad("fd", &got, &fd_grad(&emb, |e| p_embed(e, &tokens, &w).unwrap()), FD_TOL);
        let mut want = Array2::<f64>::zeros((5, 3));
        for t in 0..7 {
            for d in 0..3 {
                let h = emb[[tokens[t] as usize, d]];
                want[[tokens[t] as usize, d]] += w[[t, d]] * (1.0 - h.tanh().powi(2));
            }
        }
        assert_grad("hand", &got, &want, EXACT_TOL);
    }
}

// ===========================================================================
// Affine and strided reads: convolutions and pooling
// ===========================================================================

mod affine {
    use super::*;
    use einlang::einlang;

    einlang! {
        use std::math::{sin, tanh};

        pub fn p_conv1d(x: [f64; L], k: [f64; K]) -> f64 {
            let y[i] = sum[r](x[i + r] * k[r]);
            sum[i](y[i] * y[i])
        }
        pub fn g_conv1d(x: [f64; L], k: [f64; K]) -> ([f64; L], [f64; K]) {
            let y[i] = sum[r](x[i + r] * k[r]);
            let loss = sum[i](y[i] * y[i]);
            (@loss / @x, @loss / @k)
        }

        // Index equations in `where`.
        pub fn p_conv2d(x: [f64; C, H, W], k: [f64; O, C, KH, KW], b: [f64; O]) -> f64 {
            let y[o, i, j] = sum[c, r, s](x[c, iy, ix] * k[o, c, r, s]) + b[o] where iy = i + r, ix = j + s;
            sum[o, i, j](tanh(y[o, i, j]))
        }
        pub fn g_conv2d(x: [f64; C, H, W], k: [f64; O, C, KH, KW], b: [f64; O])
            -> ([f64; C, H, W], [f64; O, C, KH, KW], [f64; O]) {
            let y[o, i, j] = sum[c, r, s](x[c, iy, ix] * k[o, c, r, s]) + b[o] where iy = i + r, ix = j + s;
            let loss = sum[o, i, j](tanh(y[o, i, j]));
            (@loss / @x, @loss / @k, @loss / @b)
        }

        // A difference of neighbours (constant offsets only).
        pub fn p_tv(x: [f64; L]) -> f64 {
            let d[i] = x[i + 1] - x[i];
            sum[i](d[i] * d[i] * d[i])
        }
        pub fn g_tv(x: [f64; L]) -> [f64; L] {
            let d[i] = x[i + 1] - x[i];
            let loss = sum[i](d[i] * d[i] * d[i]);
            @loss / @x
        }

        // Stride 2.
        pub fn p_strided(x: [f64; L], k: [f64; K]) -> f64 {
            let y[i] = sum[r](x[2 * i + r] * k[r]);
            sum[i](sin(y[i]))
        }
        pub fn g_strided(x: [f64; L], k: [f64; K]) -> ([f64; L], [f64; K]) {
            let y[i] = sum[r](x[2 * i + r] * k[r]);
            let loss = sum[i](sin(y[i]));
            (@loss / @x, @loss / @k)
        }

        // Window reductions that isolate the parts of the max-pool above:
        // a 2x2 max with stride 1, a 1-D max with stride 2, and a 2x2 sum
        // with stride 2.
        pub fn p_pool_s1(x: [f64; H, W]) -> f64 {
            let p[i, j] = max[di in 0..2, dj in 0..2](x[i + di, j + dj]);
            sum[i, j](p[i, j] ** 3)
        }
        pub fn g_pool_s1(x: [f64; H, W]) -> [f64; H, W] {
            let p[i, j] = max[di in 0..2, dj in 0..2](x[i + di, j + dj]);
            let loss = sum[i, j](p[i, j] ** 3);
            @loss / @x
        }
        pub fn p_pool1d(x: [f64; L]) -> f64 {
            let p[i] = max[d in 0..2](x[2 * i + d]);
            sum[i](p[i] ** 3)
        }
        pub fn g_pool1d(x: [f64; L]) -> [f64; L] {
            let p[i] = max[d in 0..2](x[2 * i + d]);
            let loss = sum[i](p[i] ** 3);
            @loss / @x
        }
        pub fn p_avg_pool(x: [f64; H, W]) -> f64 {
            let p[i, j] = sum[di in 0..2, dj in 0..2](x[2 * i + di, 2 * j + dj]);
            sum[i, j](p[i, j] ** 3)
        }
        pub fn g_avg_pool(x: [f64; H, W]) -> [f64; H, W] {
            let p[i, j] = sum[di in 0..2, dj in 0..2](x[2 * i + di, 2 * j + dj]);
            let loss = sum[i, j](p[i, j] ** 3);
            @loss / @x
        }

        // 2x2 max-pool with stride 2.
        pub fn p_pool(x: [f64; H, W]) -> f64 {
            let p[i, j] = max[di in 0..2, dj in 0..2](x[2 * i + di, 2 * j + dj]);
            sum[i, j](p[i, j] ** 3)
        }
        pub fn g_pool(x: [f64; H, W]) -> [f64; H, W] {
            let p[i, j] = max[di in 0..2, dj in 0..2](x[2 * i + di, 2 * j + dj]);
            let loss = sum[i, j](p[i, j] ** 3);
            @loss / @x
        }
    }

    #[test]
    fn conv1d() {
        for (l, kk, seed) in [(9usize, 3usize, 500u64), (4, 4, 501), (5, 1, 502)] {
            let (x, k) = (rand(l, seed), rand(kk, seed + 100));
            let (gx, gk) = g_conv1d(&x, &k).unwrap();
            assert_grad("d/dx", &gx, &fd_grad(&x, |x| p_conv1d(x, &k).unwrap()), FD_TOL);
            assert_grad("d/dk", &gk, &fd_grad(&k, |k| p_conv1d(&x, k).unwrap()), FD_TOL);
        }
    }

    #[test]
    fn conv2d_with_index_equations() {
        let (x, k, b) = (rand((2, 5, 6), 510), rand((3, 2, 2, 3), 511), rand(3, 512));
        let (gx, gk, gb) = g_conv2d(&x, &k, &b).unwrap();
        assert_grad("d/dx", &gx, &fd_grad(&x, |x| p_conv2d(x, &k, &b).unwrap()), FD_TOL);
        assert_grad("d/dk", &gk, &fd_grad(&k, |k| p_conv2d(&x, k, &b).unwrap()), FD_TOL);
        assert_grad("d/db", &gb, &fd_grad(&b, |b| p_conv2d(&x, &k, b).unwrap()), FD_TOL);
    }

    #[test]
    fn neighbour_differences() {
        for (l, seed) in [(8usize, 520u64), (2, 521)] {
            let x = rand(l, seed);
            let got = g_tv(&x).unwrap();
            assert_grad("fd", &got, &fd_grad(&x, |x| p_tv(x).unwrap()), FD_TOL);
            // d/dx_p = 3 d[p-1]^2 - 3 d[p]^2, each term where it exists.
            let d = |i: usize| x[i + 1] - x[i];
            let want = Array1::from_shape_fn(l, |p| {
                let left = if p >= 1 { 3.0 * d(p - 1).powi(2) } else { 0.0 };
                let right = if p + 1 < l { 3.0 * d(p).powi(2) } else { 0.0 };
                left - right
            });
            assert_grad("hand", &got, &want, EXACT_TOL);
        }
    }

    #[test]
    fn strided_convolution() {
        // Odd and even L - K: with an odd one the last entry is never read.
        for (l, kk, seed) in [(9usize, 3usize, 530u64), (10, 3, 531), (3, 3, 532), (6, 1, 533)] {
            let (x, k) = (rand(l, seed), rand(kk, seed + 100));
            let (gx, gk) = g_strided(&x, &k).unwrap();
            assert_grad("d/dx", &gx, &fd_grad(&x, |x| p_strided(x, &k).unwrap()), FD_TOL);
            assert_grad("d/dk", &gk, &fd_grad(&k, |k| p_strided(&x, k).unwrap()), FD_TOL);
        }
    }

    #[test]
    fn window_max_with_stride_one() {
        for (shape, seed) in [((4usize, 6usize), 545u64), ((3, 2), 546)] {
            let x = rand(shape, seed);
            assert_grad("fd", &g_pool_s1(&x).unwrap(), &fd_grad(&x, |x| p_pool_s1(x).unwrap()), FD_TOL);
        }
    }

    #[test]
    fn max_with_stride_two_in_one_dimension() {
        for (l, seed) in [(8usize, 547u64), (7, 548), (2, 549)] {
            let x = rand(l, seed);
            assert_grad("fd", &g_pool1d(&x).unwrap(), &fd_grad(&x, |x| p_pool1d(x).unwrap()), FD_TOL);
        }
    }

    #[test]
    fn window_sum_with_stride_two() {
        for (shape, seed) in [((4usize, 6usize), 550u64), ((5, 5), 551)] {
            let x = rand(shape, seed);
            assert_grad("fd", &g_avg_pool(&x).unwrap(), &fd_grad(&x, |x| p_avg_pool(x).unwrap()), FD_TOL);
        }
    }

    #[test]
    fn max_pool_with_stride_two() {
        for (shape, seed) in [((4usize, 6usize), 540u64), ((5, 5), 541), ((2, 3), 542)] {
            let x = rand(shape, seed);
            let got = g_pool(&x).unwrap();
            assert_grad("fd", &got, &fd_grad(&x, |x| p_pool(x).unwrap()), FD_TOL);
            // Hand: 3 p^2 at the argmax of each window, nothing elsewhere.
            let mut want = Array2::<f64>::zeros(shape);
            for i in 0..(shape.0 - 2) / 2 + 1 {
                for j in 0..(shape.1 - 2) / 2 + 1 {
                    let mut best = (2 * i, 2 * j);
                    for (di, dj) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
                        if x[[2 * i + di, 2 * j + dj]] > x[best] {
                            best = (2 * i + di, 2 * j + dj);
                        }
                    }
                    want[best] += 3.0 * x[best].powi(2);
                }
            }
            assert_grad("hand", &got, &want, EXACT_TOL);
        }
    }
}

// ===========================================================================
// Forward mode and dense Jacobians; the dot-product test
// ===========================================================================

mod forward {
    use super::*;
    use einlang::einlang;

    einlang! {
        use std::math::{sin, tanh};

        // Scalar source, tensor target.
        pub fn p_fwd(x: [f64; N], s: f64) -> [f64; N] {
            let y[i] = sin(s * x[i]) + s * s * x[i];
            y
        }
        pub fn g_fwd(x: [f64; N], s: f64) -> [f64; N] {
            let y[i] = sin(s * x[i]) + s * s * x[i];
            @y / @s
        }
        // A block local naming a varied tensor is that tensor.
        pub fn g_fwd_alias(x: [f64; N], s: f64) -> [f64; N] {
            let v[i] = s * x[i];
            let y[i] = { let a = v; a[i] * a[i] };
            @y / @s
        }

        // Tensor over tensor: the dense Jacobian [M] ++ [N].
        pub fn p_jac(x: [f64; N], a: [f64; M, N]) -> [f64; M] {
            let y[m] = tanh(sum[n](a[m, n] * x[n])) + sum[n](a[m, n] * x[n] * x[n]);
            y
        }
        pub fn g_jac(x: [f64; N], a: [f64; M, N]) -> [f64; M, N] {
            let y[m] = tanh(sum[n](a[m, n] * x[n])) + sum[n](a[m, n] * x[n] * x[n]);
            @y / @x
        }
        // ... with respect to the matrix: [M] ++ [M, N].
        pub fn g_jac_a(x: [f64; N], a: [f64; M, N]) -> [f64; M, M, N] {
            let y[m] = tanh(sum[n](a[m, n] * x[n])) + sum[n](a[m, n] * x[n] * x[n]);
            @y / @a
        }
        // Forward mode along v: d/dt y(x + t v).
        pub fn jvp(x: [f64; N], a: [f64; M, N], v: [f64; N], t: f64) -> [f64; M] {
            let xt[n] = x[n] + t * v[n];
            let y[m] = tanh(sum[n](a[m, n] * xt[n])) + sum[n](a[m, n] * xt[n] * xt[n]);
            @y / @t
        }
        // Reverse mode: gradient of <u, y>.
        pub fn vjp(x: [f64; N], a: [f64; M, N], u: [f64; M]) -> [f64; N] {
            let y[m] = tanh(sum[n](a[m, n] * x[n])) + sum[n](a[m, n] * x[n] * x[n]);
            let s = sum[m](u[m] * y[m]);
            @s / @x
        }

        // A rank-2 target: [M, P] ++ [N].
        pub fn p_jac3(x: [f64; N], a: [f64; M, N], b: [f64; P]) -> [f64; M, P] {
            let y[m, p] = sin(sum[n](a[m, n] * x[n]) * b[p]);
            y
        }
        pub fn g_jac3(x: [f64; N], a: [f64; M, N], b: [f64; P]) -> [f64; M, P, N] {
            let y[m, p] = sin(sum[n](a[m, n] * x[n]) * b[p]);
            @y / @x
        }

        // A convolution: [L - K + 1] ++ [L], and its JVP / VJP.
        pub fn p_jconv(x: [f64; L], k: [f64; K]) -> [f64; L - K + 1] {
            let y[i] = sum[r](x[i + r] * k[r]) * sum[r](x[i + r] * k[r] * k[r]);
            y
        }
        pub fn g_jconv(x: [f64; L], k: [f64; K]) -> [f64; L - K + 1, L] {
            let y[i] = sum[r](x[i + r] * k[r]) * sum[r](x[i + r] * k[r] * k[r]);
            @y / @x
        }
        pub fn jvp_conv(x: [f64; L], k: [f64; K], v: [f64; L], t: f64) -> [f64; L - K + 1] {
            let xt[q] = x[q] + t * v[q];
            let y[i] = sum[r](xt[i + r] * k[r]) * sum[r](xt[i + r] * k[r] * k[r]);
            @y / @t
        }
        pub fn vjp_conv(x: [f64; L], k: [f64; K], u: [f64; L - K + 1]) -> [f64; L] {
            let y[i] = sum[r](x[i + r] * k[r]) * sum[r](x[i + r] * k[r] * k[r]);
            let s = sum[i](u[i] * y[i]);
            @s / @x
        }
    }

    #[test]
    fn scalar_source_tensor_target() {
        let x = rand(6, 600);
        for s in [0.0, 0.7, -1.2] {
            let got = g_fwd(&x, s).unwrap();
            assert_grad("fd", &got, &fd_scalar(s, |s| p_fwd(&x, s).unwrap()), FD_TOL);
            let want = x.mapv(|v| v * (s * v).cos() + 2.0 * s * v);
            assert_grad("hand", &got, &want, EXACT_TOL);
            // d/ds (s x)^2 = 2 s x^2.
            assert_grad("alias", &g_fwd_alias(&x, s).unwrap(), &x.mapv(|v| 2.0 * s * v * v), EXACT_TOL);
        }
    }

    #[test]
    fn dense_jacobians_against_finite_differences() {
        let (x, a) = (rand(4, 610), rand((3, 4), 611));
        assert_grad("dy/dx", &g_jac(&x, &a).unwrap(), &fd_jacobian(&x, |x| p_jac(x, &a).unwrap()), FD_TOL);
        assert_grad("dy/da", &g_jac_a(&x, &a).unwrap(), &fd_jacobian(&a, |a| p_jac(&x, a).unwrap()), FD_TOL);
        let b = rand(2, 612);
        assert_grad(
            "rank-2 target",
            &g_jac3(&x, &a, &b).unwrap(),
            &fd_jacobian(&x, |x| p_jac3(x, &a, &b).unwrap()),
            FD_TOL,
        );
        let (xc, k) = (rand(7, 613), rand(3, 614));
        assert_grad("conv", &g_jconv(&xc, &k).unwrap(), &fd_jacobian(&xc, |x| p_jconv(x, &k).unwrap()), FD_TOL);
    }

    #[test]
    fn dot_product_test_dense() {
        for (m, n, seed) in [(3usize, 4usize, 620u64), (5, 2, 630), (1, 1, 640)] {
            let (x, a) = (rand(n, seed), rand((m, n), seed + 1));
            let (v, u) = (rand(n, seed + 2), rand(m, seed + 3));
            let jac = g_jac(&x, &a).unwrap();
            let jv = jvp(&x, &a, &v, 0.0).unwrap();
            let jtu = vjp(&x, &a, &u).unwrap();
            // <J v, u> == <v, J^T u>, J v by forward mode, J^T u by reverse mode.
            assert_scalar("<Jv, u> vs <v, J^T u>", jv.dot(&u), v.dot(&jtu), EXACT_TOL);
            // The dense Jacobian agrees with both.
            assert_grad("J v", &jac.dot(&v), &jv, EXACT_TOL);
            assert_grad("J^T u", &jac.t().dot(&u), &jtu, EXACT_TOL);
        }
    }

    #[test]
    fn dot_product_test_convolution() {
        for (l, kk, seed) in [(8usize, 3usize, 650u64), (3, 3, 660)] {
            let (x, k) = (rand(l, seed), rand(kk, seed + 1));
            let (v, u) = (rand(l, seed + 2), rand(l - kk + 1, seed + 3));
            let jv = jvp_conv(&x, &k, &v, 0.0).unwrap();
            let jtu = vjp_conv(&x, &k, &u).unwrap();
            assert_scalar("<Jv, u> vs <v, J^T u>", jv.dot(&u), v.dot(&jtu), EXACT_TOL);
            let jac = g_jconv(&x, &k).unwrap();
            assert_grad("J v", &jac.dot(&v), &jv, EXACT_TOL);
            assert_grad("J^T u", &jac.t().dot(&u), &jtu, EXACT_TOL);
        }
    }
}

// ===========================================================================
// Function calls, requests inside functions and blocks, a gradient-descent
// recurrence
// ===========================================================================

mod composition {
    use super::*;
    use einlang::einlang;

    einlang! {
        use std::math::{exp, sin, tanh};

        fn poly(a, b) { a * a * b + sin(a) }
        fn matvec(m, v) {
            let r[i] = sum[j](m[i, j] * v[j]);
            r
        }
        // A request inside a (generic) function body.
        fn grad_cube(v) {
            let l = sum[i](v[i] * v[i] * v[i]);
            @l / @v
        }

        pub fn p_calls(x: [f64; N], a: [f64; N, N]) -> f64 {
            let y[i] = poly(x[i], 0.5 + x[i]);
            let z = matvec(a, y);
            sum[i](tanh(z[i]))
        }
        pub fn g_calls(x: [f64; N], a: [f64; N, N]) -> ([f64; N], [f64; N, N]) {
            let y[i] = poly(x[i], 0.5 + x[i]);
            let z = matvec(a, y);
            let loss = sum[i](tanh(z[i]));
            (@loss / @x, @loss / @a)
        }

        pub fn g_in_fn(x: [f64; N]) -> [f64; N] { grad_cube(x) }
        pub fn g_in_fn_twice(x: [f64; N]) -> [f64; N] {
            let a = grad_cube(x);
            grad_cube(a)
        }

        // A request inside a block.
        pub fn g_in_block(x: [f64; N], w: [f64; N]) -> [f64; N] {
            let g = {
                let l = sum[i](w[i] * exp(x[i]));
                @l / @x
            };
            let h[i] = g[i] * 2.0;
            h
        }

        // Gradient descent on f(a, b) = (a - 1)^2 + 10 (b - a^2)^2, one step
        // per row; the gradient is requested inside the recurrence body.
        pub fn descend(x0: [f64; 2], lr: f64) -> [f64; 20, 2] {
            let x[0, i] = x0[i];
            let x[k in 1..20, i in 0..2] = {
                let a = x[k - 1, 0];
                let b = x[k - 1, 1];
                let f = (a - 1.0) ** 2 + 10.0 * (b - a * a) ** 2;
                let ga = @f / @a;
                let gb = @f / @b;
                if i == 0 { a - lr * ga } else { b - lr * gb }
            };
            x
        }

        // A call read inside the points of a reduction or a definition, its
        // arguments the same at every point: computed once, and its rule
        // (log_softmax's) transposed.
        pub fn g_call_in_sum(z: [f64; N, C], y: [f64; N, C]) -> [f64; N, C] {
            let l = -sum[n, c](y[n, c] * std::ml::log_softmax(z)[n, c]);
            @l / @z
        }
        pub fn g_call_in_point(z: [f64; N, C], y: [f64; N, C]) -> [f64; N, C] {
            let t[n, c] = y[n, c] * std::ml::log_softmax(z)[n, c];
            let l = -sum[n, c](t[n, c]);
            @l / @z
        }
        // A call under a reduction whose arguments change with the point
        // stays inlined at the point.
        pub fn p_call_per_point(x: [f64; N], w: [f64; N]) -> f64 {
            sum[i](w[i] * poly(x[i], w[i]))
        }
        pub fn g_call_per_point(x: [f64; N], w: [f64; N]) -> [f64; N] {
            let l = sum[i](w[i] * poly(x[i], w[i]));
            @l / @x
        }
        // A block local naming another tensor is that tensor.
        pub fn g_block_alias(x: [f64; N]) -> [f64; N] {
            let l = { let a = x; sum[i](a[i] * a[i] * a[i]) };
            @l / @x
        }
    }

    #[test]
    fn calls_read_inside_points() {
        let (z, y) = (rand((3, 5), 730), rand_in((3, 5), 0.0, 1.0, 731));
        // d/dz of -sum y log softmax(z) = softmax(z) * (row sum of y) - y.
        let p = softmax_rows(&z);
        let want = Array2::from_shape_fn((3, 5), |(n, c)| p[[n, c]] * y.row(n).sum() - y[[n, c]]);
        assert_grad("in a sum", &g_call_in_sum(&z, &y).unwrap(), &want, EXACT_TOL);
        assert_grad("in a point", &g_call_in_point(&z, &y).unwrap(), &want, EXACT_TOL);
        let (x, w) = (rand(6, 732), rand(6, 733));
        let want = fd_grad(&x, |x| p_call_per_point(x, &w).unwrap());
        assert_grad("per point", &g_call_per_point(&x, &w).unwrap(), &want, FD_TOL);
        assert_grad("block alias", &g_block_alias(&x).unwrap(), &x.mapv(|v| 3.0 * v * v), EXACT_TOL);
    }

    #[test]
    fn calls_are_differentiated_through() {
        let (x, a) = (rand(4, 700), rand((4, 4), 701));
        let (gx, ga) = g_calls(&x, &a).unwrap();
        assert_grad("d/dx", &gx, &fd_grad(&x, |x| p_calls(x, &a).unwrap()), FD_TOL);
        assert_grad("d/da", &ga, &fd_grad(&a, |a| p_calls(&x, a).unwrap()), FD_TOL);
    }

    #[test]
    fn requests_inside_function_bodies() {
        let x = rand(5, 710);
        assert_grad("3 x^2", &g_in_fn(&x).unwrap(), &x.mapv(|v| 3.0 * v * v), EXACT_TOL);
        // grad_cube(grad_cube(x)) = 3 (3 x^2)^2 = 27 x^4.
        assert_grad("27 x^4", &g_in_fn_twice(&x).unwrap(), &x.mapv(|v| 27.0 * v.powi(4)), EXACT_TOL);
    }

    #[test]
    fn requests_inside_blocks() {
        let (x, w) = (rand(5, 720), rand(5, 721));
        let want = Array1::from_shape_fn(5, |i| 2.0 * w[i] * x[i].exp());
        assert_grad("2 w e^x", &g_in_block(&x, &w).unwrap(), &want, EXACT_TOL);
    }

    #[test]
    fn gradient_descent_as_a_recurrence() {
        let (x0, lr) = (Array1::from_vec(vec![-0.5, 0.8]), 0.01);
        let got = descend(&x0, lr).unwrap();
        let mut want = Array2::<f64>::zeros((20, 2));
        let (mut a, mut b) = (x0[0], x0[1]);
        want[[0, 0]] = a;
        want[[0, 1]] = b;
        for k in 1..20 {
            let ga = 2.0 * (a - 1.0) - 40.0 * a * (b - a * a);
            let gb = 20.0 * (b - a * a);
            (a, b) = (a - lr * ga, b - lr * gb);
            want[[k, 0]] = a;
            want[[k, 1]] = b;
        }
        assert_grad("iterates", &got, &want, EXACT_TOL);
    }
}

// ===========================================================================
// std::ml functions
// ===========================================================================

mod ml {
    use super::*;
    use einlang::einlang;

    einlang! {
        use std::ml::{
            cosine_similarity, cross_entropy_loss, gelu_tanh, layer_normalization, leaky_relu, linear,
            log_softmax, max_pool2d_stride2, mse_loss, relu, sigmoid, softmax, softplus, sparse_cross_entropy,
        };

        // Five activations, each weighted by w; one loss per activation.
        pub fn p_acts(x: [f64; R, C], w: [f64; R, C]) -> [f64; 5] {
            let a = relu(x);
            let b = sigmoid(x);
            let c = softplus(x);
            let d = gelu_tanh(x);
            let e = leaky_relu(x, 0.1);
            [sum[i, j](w[i, j] * a[i, j]), sum[i, j](w[i, j] * b[i, j]), sum[i, j](w[i, j] * c[i, j]),
             sum[i, j](w[i, j] * d[i, j]), sum[i, j](w[i, j] * e[i, j])]
        }
        pub fn g_acts(x: [f64; R, C], w: [f64; R, C])
            -> ([f64; R, C], [f64; R, C], [f64; R, C], [f64; R, C], [f64; R, C]) {
            let a = relu(x);
            let b = sigmoid(x);
            let c = softplus(x);
            let d = gelu_tanh(x);
            let e = leaky_relu(x, 0.1);
            let la = sum[i, j](w[i, j] * a[i, j]);
            let lb = sum[i, j](w[i, j] * b[i, j]);
            let lc = sum[i, j](w[i, j] * c[i, j]);
            let ld = sum[i, j](w[i, j] * d[i, j]);
            let le = sum[i, j](w[i, j] * e[i, j]);
            (@la / @x, @lb / @x, @lc / @x, @ld / @x, @le / @x)
        }

        pub fn p_softmax(z: [f64; B, C], t: [f64; B, C]) -> f64 {
            let p = softmax(z);
            sum[n, j](t[n, j] * p[n, j] * p[n, j])
        }
        pub fn g_softmax(z: [f64; B, C], t: [f64; B, C]) -> [f64; B, C] {
            let p = softmax(z);
            let loss = sum[n, j](t[n, j] * p[n, j] * p[n, j]);
            @loss / @z
        }

        pub fn p_log_softmax(z: [f64; B, C], t: [f64; B, C]) -> f64 {
            let lp = log_softmax(z);
            sum[n, j](t[n, j] * lp[n, j])
        }
        pub fn g_log_softmax(z: [f64; B, C], t: [f64; B, C]) -> [f64; B, C] {
            let lp = log_softmax(z);
            let loss = sum[n, j](t[n, j] * lp[n, j]);
            @loss / @z
        }

        pub fn ce_soft(z: [f64; B, C], t: [f64; B, C]) -> (f64, [f64; B, C]) {
            let l = cross_entropy_loss(z, t);
            let loss = sum[n](l[n]);
            (loss, @loss / @z)
        }

        pub fn p_sce(z: [f64; B, C], labels: [i64; B]) -> f64 {
            let l = sparse_cross_entropy(z, labels);
            sum[n](l[n]) / (B as f64)
        }
        pub fn ce_sparse(z: [f64; B, C], labels: [i64; B]) -> (f64, [f64; B, C]) {
            let l = sparse_cross_entropy(z, labels);
            let loss = sum[n](l[n]) / (B as f64);
            (loss, @loss / @z)
        }

        pub fn p_linear(x: [f64; B, I], w: [f64; O, I], b: [f64; O]) -> f64 {
            let y = linear(x, w, b);
            sum[n, o](sin_like(y[n, o]))
        }
        pub fn g_linear(x: [f64; B, I], w: [f64; O, I], b: [f64; O]) -> ([f64; B, I], [f64; O, I], [f64; O]) {
            let y = linear(x, w, b);
            let loss = sum[n, o](sin_like(y[n, o]));
            (@loss / @x, @loss / @w, @loss / @b)
        }
        // A non-linear scalar function written in Einlang (a cubic), so that
        // the loss of `linear` is not linear in its inputs.
        fn sin_like(v) { v - v * v * v / 6.0 }

        pub fn g_mse(p: [f64; B, F], t: [f64; B, F]) -> [f64; B, F] {
            let l = mse_loss(p, t);
            let loss = sum[n](l[n]);
            @loss / @p
        }

        pub fn p_cosine(a: [f64; B, F], b: [f64; B, F]) -> f64 {
            let s = cosine_similarity(a, b);
            sum[n](s[n])
        }
        pub fn g_cosine(a: [f64; B, F], b: [f64; B, F]) -> [f64; B, F] {
            let s = cosine_similarity(a, b);
            let loss = sum[n](s[n]);
            @loss / @a
        }

        pub fn p_maxpool(x: [f64; C, H, W]) -> f64 {
            let p = max_pool2d_stride2(x, 2, 2);
            sum[c, i, j](p[c, i, j] * p[c, i, j])
        }
        pub fn g_maxpool(x: [f64; C, H, W]) -> [f64; C, H, W] {
            let p = max_pool2d_stride2(x, 2, 2);
            let loss = sum[c, i, j](p[c, i, j] * p[c, i, j]);
            @loss / @x
        }

        pub fn p_layer_norm(x: [f64; B, D], scale: [f64; D], bias: [f64; D], w: [f64; B, D]) -> f64 {
            let y = layer_normalization(x, scale, bias, 1e-5, -1);
            sum[n, d](w[n, d] * y[n, d])
        }
        pub fn g_layer_norm(x: [f64; B, D], scale: [f64; D], bias: [f64; D], w: [f64; B, D]) -> ([f64; B, D], [f64; D]) {
            let y = layer_normalization(x, scale, bias, 1e-5, -1);
            let loss = sum[n, d](w[n, d] * y[n, d]);
            (@loss / @x, @loss / @scale)
        }
    }

    #[test]
    fn activations() {
        // Values in [-3, 3): both sides of every kink.
        let (x, w) = (rand_in((4, 5), -3.0, 3.0, 800), rand((4, 5), 801));
        let got = g_acts(&x, &w).unwrap();
        let got = [got.0, got.1, got.2, got.3, got.4];
        for (k, name) in ["relu", "sigmoid", "softplus", "gelu_tanh", "leaky_relu"].iter().enumerate() {
            let want = fd_grad(&x, |x| p_acts(x, &w).unwrap()[k]);
            assert_grad(name, &got[k], &want, FD_TOL);
        }
        // Hand derivatives of the piecewise ones.
        assert_grad(
            "relu",
            &got[0],
            &Array2::from_shape_fn((4, 5), |ix| if x[ix] > 0.0 { w[ix] } else { 0.0 }),
            EXACT_TOL,
        );
        let leaky = Array2::from_shape_fn((4, 5), |ix| if x[ix] > 0.0 { w[ix] } else { 0.1 * w[ix] });
        assert_grad("leaky_relu", &got[4], &leaky, EXACT_TOL);
    }

    #[test]
    fn softmax_and_log_softmax() {
        let (z, t) = (rand_in((3, 4), -2.0, 2.0, 810), rand((3, 4), 811));
        assert_grad("softmax", &g_softmax(&z, &t).unwrap(), &fd_grad(&z, |z| p_softmax(z, &t).unwrap()), FD_TOL);
        let got = g_log_softmax(&z, &t).unwrap();
        assert_grad("log_softmax", &got, &fd_grad(&z, |z| p_log_softmax(z, &t).unwrap()), FD_TOL);
        // d/dz_j sum_k t_k (z_k - lse) = t_j - p_j sum_k t_k.
        let p = softmax_rows(&z);
        let want = Array2::from_shape_fn((3, 4), |(n, j)| t[[n, j]] - p[[n, j]] * t.row(n).sum());
        assert_grad("log_softmax hand", &got, &want, EXACT_TOL);
    }

    #[test]
    fn cross_entropy_with_probabilities() {
        let z = rand_in((4, 5), -3.0, 3.0, 820);
        let t = softmax_rows(&rand((4, 5), 821));
        let (loss, got) = ce_soft(&z, &t).unwrap();
        let p = softmax_rows(&z);
        let want_loss: f64 = (0..4).map(|n| -(0..5).map(|j| t[[n, j]] * p[[n, j]].ln()).sum::<f64>()).sum();
        assert_scalar("loss", loss, want_loss, EXACT_TOL);
        // Rows of t sum to 1: the gradient is p - t.
        assert_grad("p - t", &got, &(&p - &t), EXACT_TOL);
    }

    #[test]
    fn cross_entropy_with_class_labels() {
        let z = rand_in((5, 4), -3.0, 3.0, 830);
        let lab = labels(5, 4, 831);
        let (loss, got) = ce_sparse(&z, &lab).unwrap();
        let p = softmax_rows(&z);
        let want_loss = (0..5).map(|n| -p[[n, lab[n] as usize]].ln()).sum::<f64>() / 5.0;
        assert_scalar("loss", loss, want_loss, EXACT_TOL);
        let want =
            Array2::from_shape_fn((5, 4), |(n, j)| (p[[n, j]] - if lab[n] as usize == j { 1.0 } else { 0.0 }) / 5.0);
        assert_grad("(p - onehot) / B", &got, &want, EXACT_TOL);
        assert_grad("fd", &got, &fd_grad(&z, |z| p_sce(z, &lab).unwrap()), FD_TOL);
    }

    #[test]
    fn linear_layer() {
        let (x, w, b) = (rand((3, 4), 840), rand((2, 4), 841), rand(2, 842));
        let (gx, gw, gb) = g_linear(&x, &w, &b).unwrap();
        assert_grad("d/dx", &gx, &fd_grad(&x, |x| p_linear(x, &w, &b).unwrap()), FD_TOL);
        assert_grad("d/dw", &gw, &fd_grad(&w, |w| p_linear(&x, w, &b).unwrap()), FD_TOL);
        assert_grad("d/db", &gb, &fd_grad(&b, |b| p_linear(&x, &w, b).unwrap()), FD_TOL);
    }

    #[test]
    fn mse_loss_gradient() {
        let (p, t) = (rand((3, 5), 850), rand((3, 5), 851));
        assert_grad("2 (p - t) / F", &g_mse(&p, &t).unwrap(), &((&p - &t) * 2.0 / 5.0), EXACT_TOL);
    }

    #[test]
    fn cosine_similarity_gradient() {
        let (a, b) = (rand((3, 4), 860), rand((3, 4), 861));
        let got = g_cosine(&a, &b).unwrap();
        assert_grad("fd", &got, &fd_grad(&a, |a| p_cosine(a, &b).unwrap()), FD_TOL);
        // d cos / d a = b / (|a||b|) - cos * a / |a|^2.
        let want = Array2::from_shape_fn((3, 4), |(n, j)| {
            let (ra, rb) = (a.row(n), b.row(n));
            let (na, nb) = (ra.dot(&ra).sqrt(), rb.dot(&rb).sqrt());
            let c = ra.dot(&rb) / (na * nb);
            rb[j] / (na * nb) - c * ra[j] / (na * na)
        });
        assert_grad("hand", &got, &want, EXACT_TOL);
    }

    #[test]
    fn max_pool_from_the_library() {
        let x = rand((2, 5, 4), 870);
        assert_grad("fd", &g_maxpool(&x).unwrap(), &fd_grad(&x, |x| p_maxpool(x).unwrap()), FD_TOL);
    }

    #[test]
    fn layer_normalization_gradient() {
        let (x, scale, bias, w) = (rand((3, 5), 880), rand(5, 881), rand(5, 882), rand((3, 5), 883));
        let (gx, gs) = g_layer_norm(&x, &scale, &bias, &w).unwrap();
        assert_grad("d/dx", &gx, &fd_grad(&x, |x| p_layer_norm(x, &scale, &bias, &w).unwrap()), FD_TOL);
        assert_grad("d/dscale", &gs, &fd_grad(&scale, |s| p_layer_norm(&x, s, &bias, &w).unwrap()), FD_TOL);
    }
}

// ===========================================================================
// Property tests: random shapes and data, gradients against finite differences
// ===========================================================================

mod props {
    use super::*;
    use proptest::prelude::*;

    const CASES: u32 = 24;

    fn vec1(n: usize) -> impl Strategy<Value = Array1<f64>> {
        prop::collection::vec(-1.0f64..1.0, n).prop_map(Array1::from_vec)
    }

    fn mat(r: usize, c: usize) -> impl Strategy<Value = Array2<f64>> {
        prop::collection::vec(-1.0f64..1.0, r * c).prop_map(move |v| Array2::from_shape_vec((r, c), v).unwrap())
    }

    /// `(x, k)` with the kernel no longer than the signal.
    fn signal_and_kernel() -> impl Strategy<Value = (Array1<f64>, Array1<f64>)> {
        (1usize..=4, 0usize..=8).prop_flat_map(|(k, extra)| (vec1(k + extra), vec1(k)))
    }

    fn linear_case() -> impl Strategy<Value = (Array2<f64>, Array2<f64>, Array1<f64>)> {
        (1usize..=5, 1usize..=5, 1usize..=5).prop_flat_map(|(b, i, o)| (mat(b, i), mat(o, i), vec1(o)))
    }

    fn logits_and_labels() -> impl Strategy<Value = (Array2<f64>, Array1<i64>)> {
        (1usize..=5, 1usize..=6).prop_flat_map(|(b, c)| {
            (mat(b, c).prop_map(|z| z * 3.0), prop::collection::vec(0..c as i64, b).prop_map(Array1::from_vec))
        })
    }

    /// Distinct values (a shuffled grid in [-1, 1), at least 2 / 49 apart),
    /// so that no window has a tie, where finite differences say nothing;
    /// shrinking keeps them distinct.
    fn pool_input() -> impl Strategy<Value = Array2<f64>> {
        (2usize..=7, 2usize..=7).prop_flat_map(|(h, w)| {
            let n = h * w;
            Just((0..n).map(|k| 2.0 * k as f64 / n as f64 - 1.0).collect::<Vec<f64>>())
                .prop_shuffle()
                .prop_map(move |v| Array2::from_shape_vec((h, w), v).unwrap())
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(CASES))]

        #[test]
        fn conv1d_gradients((x, k) in signal_and_kernel()) {
            let (gx, gk) = affine::g_conv1d(&x, &k).unwrap();
            assert_grad("d/dx", &gx, &fd_grad(&x, |x| affine::p_conv1d(x, &k).unwrap()), FD_TOL);
            assert_grad("d/dk", &gk, &fd_grad(&k, |k| affine::p_conv1d(&x, k).unwrap()), FD_TOL);
        }

        #[test]
        fn strided_conv_gradients((x, k) in signal_and_kernel()) {
            let (gx, gk) = affine::g_strided(&x, &k).unwrap();
            assert_grad("d/dx", &gx, &fd_grad(&x, |x| affine::p_strided(x, &k).unwrap()), FD_TOL);
            assert_grad("d/dk", &gk, &fd_grad(&k, |k| affine::p_strided(&x, k).unwrap()), FD_TOL);
        }

        #[test]
        fn linear_gradients((x, w, b) in linear_case()) {
            let (gx, gw, gb) = ml::g_linear(&x, &w, &b).unwrap();
            assert_grad("d/dx", &gx, &fd_grad(&x, |x| ml::p_linear(x, &w, &b).unwrap()), FD_TOL);
            assert_grad("d/dw", &gw, &fd_grad(&w, |w| ml::p_linear(&x, w, &b).unwrap()), FD_TOL);
            assert_grad("d/db", &gb, &fd_grad(&b, |b| ml::p_linear(&x, &w, b).unwrap()), FD_TOL);
        }

        #[test]
        fn sparse_cross_entropy_gradients((z, lab) in logits_and_labels()) {
            let (_, g) = ml::ce_sparse(&z, &lab).unwrap();
            assert_grad("d/dz", &g, &fd_grad(&z, |z| ml::p_sce(z, &lab).unwrap()), FD_TOL);
        }

        #[test]
        fn max_pool_gradients(x in pool_input()) {
            assert_grad("d/dx", &affine::g_pool(&x).unwrap(), &fd_grad(&x, |x| affine::p_pool(x).unwrap()), FD_TOL);
        }

        #[test]
        fn jacobian_dot_product((x, k) in signal_and_kernel(), seed in any::<u64>()) {
            let (v, u) = (rand(x.len(), seed), rand(x.len() - k.len() + 1, seed ^ 1));
            let jv = forward::jvp_conv(&x, &k, &v, 0.0).unwrap();
            let jtu = forward::vjp_conv(&x, &k, &u).unwrap();
            assert_scalar("<Jv, u> vs <v, J^T u>", jv.dot(&u), v.dot(&jtu), EXACT_TOL);
        }
    }
}
