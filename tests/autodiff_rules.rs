//! Derivatives through recurrences (BPTT and tangents), custom rules
//! (`@fn`, on scalars and tensors), lazy Jacobian rows and columns, array
//! literals and `match`; against independent references (see
//! `autodiff.rs`).

mod autodiff_support;
mod common;

#[allow(unused_imports)]
use autodiff_support::*;
#[allow(unused_imports)]
use einlang::ndarray::{Array, Array1, Array2, ArrayD, Dimension, IxDyn, ShapeBuilder};

// ===========================================================================
// Reverse mode through recurrences (BPTT), forward mode through a recurrence
// with a vector state, custom rules (`@fn`).
// ===========================================================================

mod recurrences_and_rules {
    use super::*;

    // -----------------------------------------------------------------------
    // Reverse mode through recurrences
    // -----------------------------------------------------------------------

    mod bptt {
        use super::*;
        use einlang::einlang;

        einlang! {
            use std::math::{sin, tanh};

            // An RNN: loss over every state and the last one.
            pub fn p_rnn(h0: [f64; H], w: [f64; H, H], u: [f64; H, I], x: [f64; T, I], c: [f64; H]) -> f64 {
                let h[0, j] = h0[j];
                let h[t in 1..T, j] = tanh(sum[k](w[j, k] * h[t - 1, k]) + sum[i](u[j, i] * x[t, i]));
                0.5 * sum[t, j](h[t, j] * h[t, j]) + sum[j](c[j] * h[T - 1, j])
            }
            pub fn g_rnn(h0: [f64; H], w: [f64; H, H], u: [f64; H, I], x: [f64; T, I], c: [f64; H])
                -> ([f64; H], [f64; H, H], [f64; H, I], [f64; T, I]) {
                let h[0, j] = h0[j];
                let h[t in 1..T, j] = tanh(sum[k](w[j, k] * h[t - 1, k]) + sum[i](u[j, i] * x[t, i]));
                let loss = 0.5 * sum[t, j](h[t, j] * h[t, j]) + sum[j](c[j] * h[T - 1, j]);
                (@loss / @h0, @loss / @w, @loss / @u, @loss / @x)
            }

            // A scalar recurrence observed only at its last step.
            pub fn p_scan(s0: f64, a: [f64; T]) -> f64 {
                let s[0] = s0;
                let s[t in 1..T] = s[t - 1] * a[t] + sin(s[t - 1]);
                s[T - 1]
            }
            pub fn g_scan(s0: f64, a: [f64; T]) -> (f64, [f64; T]) {
                let s[0] = s0;
                let s[t in 1..T] = s[t - 1] * a[t] + sin(s[t - 1]);
                let last = s[T - 1];
                (@last / @s0, @last / @a)
            }
        }

        /// Hand-written BPTT for [`p_rnn`]: `(dh0, dW, dU, dx)`.
        fn rnn_backward(
            h0: &Array1<f64>,
            w: &Array2<f64>,
            u: &Array2<f64>,
            x: &Array2<f64>,
            c: &Array1<f64>,
        ) -> (Array1<f64>, Array2<f64>, Array2<f64>, Array2<f64>) {
            let (nt, ni) = x.dim();
            let nh = h0.len();
            let mut h = Array2::<f64>::zeros((nt, nh));
            h.row_mut(0).assign(h0);
            for t in 1..nt {
                for j in 0..nh {
                    let a: f64 = (0..nh).map(|k| w[[j, k]] * h[[t - 1, k]]).sum::<f64>()
                        + (0..ni).map(|i| u[[j, i]] * x[[t, i]]).sum::<f64>();
                    h[[t, j]] = a.tanh();
                }
            }
            let mut dw = Array2::<f64>::zeros((nh, nh));
            let mut du = Array2::<f64>::zeros((nh, ni));
            let mut dx = Array2::<f64>::zeros((nt, ni));
            // carry = d loss / d h[t] through the later steps.
            let mut carry = Array1::<f64>::zeros(nh);
            for t in (1..nt).rev() {
                let mut dh = &h.row(t) + &carry;
                if t == nt - 1 {
                    dh += c;
                }
                let da = Array1::from_shape_fn(nh, |j| dh[j] * (1.0 - h[[t, j]] * h[[t, j]]));
                carry = Array1::<f64>::zeros(nh);
                for j in 0..nh {
                    for k in 0..nh {
                        dw[[j, k]] += da[j] * h[[t - 1, k]];
                        carry[k] += w[[j, k]] * da[j];
                    }
                    for i in 0..ni {
                        du[[j, i]] += da[j] * x[[t, i]];
                        dx[[t, i]] += u[[j, i]] * da[j];
                    }
                }
            }
            let mut dh0 = &h.row(0) + &carry;
            if nt == 1 {
                dh0 += c;
            }
            (dh0, dw, du, dx)
        }

        #[test]
        fn rnn_against_hand_written_bptt() {
            let (nh, ni, nt) = (3, 2, 5);
            let (h0, w, u) = (rand(nh, 1000), rand((nh, nh), 1001), rand((nh, ni), 1002));
            let (x, c) = (rand((nt, ni), 1003), rand(nh, 1004));
            let want = rnn_backward(&h0, &w, &u, &x, &c);
            // The hand pass itself against finite differences.
            assert_grad("fd dW", &want.1, &fd_grad(&w, |w| p_rnn(&h0, w, &u, &x, &c).unwrap()), FD_TOL);
            assert_grad("fd dx", &want.3, &fd_grad(&x, |x| p_rnn(&h0, &w, &u, x, &c).unwrap()), FD_TOL);
            let (gh0, gw, gu, gx) = g_rnn(&h0, &w, &u, &x, &c).unwrap();
            assert_grad("dh0", &gh0, &want.0, EXACT_TOL);
            assert_grad("dW", &gw, &want.1, EXACT_TOL);
            assert_grad("dU", &gu, &want.2, EXACT_TOL);
            assert_grad("dx", &gx, &want.3, EXACT_TOL);
        }

        #[test]
        fn scalar_recurrence() {
            for (nt, seed) in [(6usize, 1010u64), (2, 1011), (1, 1012)] {
                let (s0, a) = (0.3, rand(nt, seed));
                let (gs0, ga) = g_scan(s0, &a).unwrap();
                assert_scalar("d/ds0", gs0, fd_scalar_scalar(s0, |s| p_scan(s, &a).unwrap()), FD_TOL);
                assert_grad("d/da", &ga, &fd_grad(&a, |a| p_scan(s0, a).unwrap()), FD_TOL);
            }
        }
    }

    // -----------------------------------------------------------------------
    // Forward mode through a recurrence with a vector state
    // -----------------------------------------------------------------------

    mod second_order_recurrence {
        use super::*;
        use einlang::einlang;

        einlang! {
            use std::math::{sin, tanh};

            // Two boundary steps, a lag of two, every step read by the loss:
            // the adjoint carries tanh's argument at the recurrent steps and
            // the state itself at the boundary ones.
            pub fn p_lag2(x: [f64; T], a: f64, b: f64) -> f64 {
                let v[0] = sin(x[0]);
                let v[1] = x[1] * a;
                let v[t in 2..T] = tanh(a * v[t - 1] + b * v[t - 2] * v[t - 1] + x[t]);
                sum[t](v[t] * (1.0 + 0.1 * t as f64))
            }
            pub fn g_lag2(x: [f64; T], a: f64, b: f64) -> ([f64; T], f64, f64) {
                let v[0] = sin(x[0]);
                let v[1] = x[1] * a;
                let v[t in 2..T] = tanh(a * v[t - 1] + b * v[t - 2] * v[t - 1] + x[t]);
                let l = sum[t](v[t] * (1.0 + 0.1 * t as f64));
                (@l / @x, @l / @a, @l / @b)
            }
        }

        #[test]
        fn lag_two_with_two_boundary_steps() {
            let x = rand(7, 1070);
            let (a, b) = (0.7, -0.4);
            let (gx, ga, gb) = g_lag2(&x, a, b).unwrap();
            assert_grad("d/dx", &gx, &fd_grad(&x, |x| p_lag2(x, a, b).unwrap()), FD_TOL);
            assert_scalar("d/da", ga, fd_scalar_scalar(a, |a| p_lag2(&x, a, b).unwrap()), FD_TOL);
            assert_scalar("d/db", gb, fd_scalar_scalar(b, |b| p_lag2(&x, a, b).unwrap()), FD_TOL);
        }
    }

    mod rnn_tangents {
        use super::*;
        use einlang::einlang;

        einlang! {
            use std::math::tanh;

            // Every state of an RNN with respect to a gain on its recurrent weights.
            pub fn p_rnn_gain(h0: [f64; H], w: [f64; H, H], x: [f64; T, H], g: f64) -> [f64; T, H] {
                let h[0, j] = h0[j];
                let h[t in 1..T, j] = tanh(g * sum[k](w[j, k] * h[t - 1, k]) + x[t, j]);
                h
            }
            pub fn f_rnn_gain(h0: [f64; H], w: [f64; H, H], x: [f64; T, H], g: f64) -> [f64; T, H] {
                let h[0, j] = h0[j];
                let h[t in 1..T, j] = tanh(g * sum[k](w[j, k] * h[t - 1, k]) + x[t, j]);
                @h / @g
            }
        }

        #[test]
        fn rnn_tangent_in_a_gain() {
            let (h0, w, x) = (rand(3, 1060), rand((3, 3), 1061), rand((5, 3), 1062));
            for g in [0.0, 0.8, -1.5] {
                let got = f_rnn_gain(&h0, &w, &x, g).unwrap();
                assert_grad("d h / d g", &got, &fd_scalar(g, |g| p_rnn_gain(&h0, &w, &x, g).unwrap()), FD_TOL);
            }
        }
    }

    // -----------------------------------------------------------------------
    // Custom derivative rules (`@fn`)
    // -----------------------------------------------------------------------

    mod rules {
        use super::*;
        use einlang::einlang;

        einlang! {
            use std::math::{exp, round};

            // A straight-through estimator (the rule deliberately differs from
            // the true derivative, 0, so using it is observable) and a
            // logistic written out.
            fn ste_round(v) { round(v) }
            @fn ste_round(v) { @v }
            fn logistic(v) { 1.0 / (1.0 + exp(-v)) }
            @fn logistic(v) { logistic(v) * (1.0 - logistic(v)) * @v }

            pub fn g_ste(x: [f64; N], w: [f64; N]) -> [f64; N] {
                let loss = sum[i](w[i] * ste_round(3.0 * x[i]));
                @loss / @x
            }
            pub fn f_ste(x: [f64; N], s: f64) -> [f64; N] {
                let y[i] = ste_round(s * x[i]);
                @y / @s
            }
            pub fn p_logistic(x: [f64; N], w: [f64; N]) -> f64 { sum[i](w[i] * logistic(x[i])) }
            pub fn g_logistic(x: [f64; N], w: [f64; N]) -> [f64; N] {
                let loss = sum[i](w[i] * logistic(x[i]));
                @loss / @x
            }
        }

        #[test]
        fn custom_rules_are_used() {
            let (x, w) = (rand(6, 1030), rand(6, 1031));
            // The straight-through rule: d/dx w * ste_round(3 x) = 3 w, not 0.
            assert_grad("reverse", &g_ste(&x, &w).unwrap(), &(&w * 3.0), EXACT_TOL);
            assert_grad("forward", &f_ste(&x, 0.7).unwrap(), &x, EXACT_TOL);
            let got = g_logistic(&x, &w).unwrap();
            assert_grad("logistic", &got, &fd_grad(&x, |x| p_logistic(x, &w).unwrap()), FD_TOL);
        }
    }
}

// ===========================================================================
// Whole-tensor values built from array literals, and lazy Jacobian rows
// ===========================================================================

mod literals_and_rows {
    use super::*;
    use einlang::einlang;

    einlang! {
        use std::math::sin;

        pub fn g_literal(x: [f64; N]) -> [f64; N] {
            let y = [x[0] * 2.0, x[1]];
            let l = y[0] * y[1] + y[1];
            @l / @x
        }
        pub fn p_rows(x: [f64; N], w: [f64; N, N]) -> [f64; N] {
            let y[i] = sin(sum[k](w[i, k] * x[k]));
            y
        }
        pub fn g_column(x: [f64; N], w: [f64; N, N], s: i64) -> [f64; N] {
            let y[i] = sin(sum[k](w[i, k] * x[k]));
            let jac = @y / @x;
            let c[i] = jac[i, s];
            c
        }
        pub fn g_row_element(x: [f64; N], w: [f64; N, N], t: i64) -> [f64; N] {
            let y[i] = sin(sum[k](w[i, k] * x[k]));
            let jac = @y / @x;
            let r[j] = jac[t, j] * 2.0;
            r
        }
    }

    #[test]
    fn an_array_literal_passes_its_elements_adjoints_on() {
        let x = rand(4, 1201);
        // l = 2 x0 x1 + x1: d/dx0 = 2 x1, d/dx1 = 2 x0 + 1, zero elsewhere.
        let want = einlang::ndarray::array![2.0 * x[1], 2.0 * x[0] + 1.0, 0.0, 0.0];
        assert_grad("literal", &g_literal(&x).unwrap(), &want, EXACT_TOL);
    }

    #[test]
    fn a_column_read_of_a_jacobian_is_a_forward_sweep() {
        let (x, w) = (rand(5, 1204), rand((5, 5), 1205));
        let full = fd_jacobian(&x, |x| p_rows(x, &w).unwrap());
        for s in 0..5 {
            let want = full.index_axis(einlang::ndarray::Axis(1), s).to_owned();
            assert_grad("column", &g_column(&x, &w, s as i64).unwrap(), &want, FD_TOL);
        }
    }

    #[test]
    fn an_element_read_of_a_jacobian_row_is_a_backward_sweep() {
        let (x, w) = (rand(5, 1202), rand((5, 5), 1203));
        let full = fd_jacobian(&x, |x| p_rows(x, &w).unwrap());
        for t in 0..5 {
            let want = full.index_axis(einlang::ndarray::Axis(0), t).to_owned() * 2.0;
            assert_grad("row", &g_row_element(&x, &w, t as i64).unwrap(), &want, FD_TOL);
        }
    }
}

// ===========================================================================
// `match`: the taken arm
// ===========================================================================

mod matching {
    use super::*;
    use einlang::einlang;

    einlang! {
        use std::math::sin;

        pub fn p_match(x: [f64; N]) -> f64 {
            sum[i](match i % 3 {
                0 => x[i] * x[i],
                1 | 2 if x[i] > 0.0 => sin(x[i]),
                k => x[i] * (k as f64),
            })
        }
        pub fn g_match(x: [f64; N]) -> [f64; N] {
            let l = sum[i](match i % 3 {
                0 => x[i] * x[i],
                1 | 2 if x[i] > 0.0 => sin(x[i]),
                k => x[i] * (k as f64),
            });
            @l / @x
        }
        pub fn t_match(x: [f64; N], a: f64) -> [f64; N] {
            let y[i] = match i % 2 { 0 => a * x[i], _ => a * a };
            @y / @a
        }
    }

    #[test]
    fn reverse_mode_follows_the_taken_arm() {
        let x = einlang::ndarray::array![0.3, -0.4, 0.5, 0.7, 0.2, -0.9, 1.1];
        assert_grad("match", &g_match(&x).unwrap(), &fd_grad(&x, |x| p_match(x).unwrap()), FD_TOL);
    }

    #[test]
    fn forward_mode_follows_the_taken_arm() {
        let x = rand(5, 1301);
        // d/da: x[i] on even i, 2 a on odd i.
        let want = einlang::ndarray::Array1::from_shape_fn(5, |i| if i % 2 == 0 { x[i] } else { 2.0 * 0.6 });
        assert_grad("match", &t_match(&x, 0.6).unwrap(), &want, EXACT_TOL);
    }
}

// ===========================================================================
// Rules on tensors: reverse mode transposes them
// ===========================================================================

mod tensor_rules {
    use super::*;
    use einlang::einlang;

    einlang! {
        use std::math::exp;

        // Row softmax with its rule, and a function whose rule is twice its
        // true derivative (so that using the rule is observable).
        fn sm(x) {
            let m[n] = max[j](x[n, j]);
            let e[n, j] = exp(x[n, j] - m[n]);
            let y[n, j] = e[n, j] / sum[k](e[n, k]);
            y
        }
        @fn sm(x) {
            let y = sm(x);
            let d[n, j] = y[n, j] * (@x[n, j] - sum[k](y[n, k] * @x[n, k]));
            d
        }
        fn rowsum(x) {
            let s[n, j] = sum[k](x[n, k]) + 0.0 * x[n, j];
            s
        }
        @fn rowsum(x) {
            let d[n, j] = 2.0 * sum[k](@x[n, k]) + 0.0 * @x[n, j];
            d
        }

        pub fn p_sm(x: [f64; B, C], t: [f64; B, C]) -> f64 {
            let s = sm(x);
            sum[n, j](s[n, j] * t[n, j])
        }
        pub fn g_sm(x: [f64; B, C], t: [f64; B, C]) -> [f64; B, C] {
            let s = sm(x);
            let l = sum[n, j](s[n, j] * t[n, j]);
            @l / @x
        }
        pub fn f_sm(x: [f64; B, C], a: f64) -> [f64; B, C] {
            let z[n, j] = a * x[n, j];
            let s = sm(z);
            @s / @a
        }
        pub fn p_sm_scaled(x: [f64; B, C], a: f64) -> [f64; B, C] {
            let z[n, j] = a * x[n, j];
            sm(z)
        }
        pub fn g_rowsum(x: [f64; B, C], t: [f64; B, C]) -> [f64; B, C] {
            let s = rowsum(x);
            let l = sum[n, j](s[n, j] * t[n, j]);
            @l / @x
        }
    }

    #[test]
    fn reverse_mode_transposes_a_tensor_rule() {
        let (x, t) = (rand((3, 4), 1401) * 3.0, rand((3, 4), 1402));
        assert_grad("softmax rule", &g_sm(&x, &t).unwrap(), &fd_grad(&x, |x| p_sm(x, &t).unwrap()), FD_TOL);
    }

    #[test]
    fn forward_mode_applies_a_tensor_rule() {
        let x = rand((3, 4), 1403);
        let a = 0.8;
        let h = 1e-6;
        let want = (p_sm_scaled(&x, a + h).unwrap() - p_sm_scaled(&x, a - h).unwrap()) / (2.0 * h);
        assert_grad("softmax rule", &f_sm(&x, a).unwrap(), &want, FD_TOL);
    }

    #[test]
    fn the_rule_is_what_reverse_mode_uses() {
        // rowsum's true derivative gives d l / d x[n, k] = sum_j t[n, j];
        // its rule says twice that.
        let (x, t) = (rand((3, 4), 1404), rand((3, 4), 1405));
        let want = Array2::from_shape_fn((3, 4), |(n, _)| 2.0 * t.row(n).sum());
        assert_grad("rule", &g_rowsum(&x, &t).unwrap(), &want, EXACT_TOL);
    }
}
