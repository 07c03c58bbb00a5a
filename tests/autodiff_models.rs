//! Derivatives against hand-written backward passes (an MLP, a convolution
//! layer, softmax cross-entropy, an f32 dense layer) and beyond first order
//! (recurrence tangents, second derivatives, a Jacobian row, an
//! argmax-selected read); against independent references (see
//! `autodiff.rs`).

mod autodiff_support;
mod common;

#[allow(unused_imports)]
use autodiff_support::*;
#[allow(unused_imports)]
use einlang::ndarray::{Array, Array1, Array2, ArrayD, Dimension, IxDyn, ShapeBuilder};

// ===========================================================================
// Hand-written backward passes: MLPs, a convolution layer
// ===========================================================================

mod backward {
    use super::*;
    use einlang::einlang;

    einlang! {
        use std::math::{exp, ln, tanh};
        use std::ml::{linear, relu, sparse_cross_entropy};

        // Two layers, tanh, softmax cross-entropy written out.
        pub fn mlp_tanh(x: [f64; B, I], w1: [f64; H, I], b1: [f64; H], w2: [f64; C, H], b2: [f64; C], labels: [i64; B])
            -> (f64, [f64; H, I], [f64; H], [f64; C, H], [f64; C]) {
            let h[n, j] = tanh(sum[i](x[n, i] * w1[j, i]) + b1[j]);
            let z[n, c] = sum[j](h[n, j] * w2[c, j]) + b2[c];
            let m[n] = max[c](z[n, c]);
            let lse[n] = m[n] + ln(sum[c](exp(z[n, c] - m[n])));
            let loss = sum[n](lse[n] - z[n, labels[n]]) / (B as f64);
            (loss, @loss / @w1, @loss / @b1, @loss / @w2, @loss / @b2)
        }

        // The same with relu, through std::ml.
        pub fn mlp_relu(x: [f64; B, I], w1: [f64; H, I], b1: [f64; H], w2: [f64; C, H], b2: [f64; C], labels: [i64; B])
            -> (f64, [f64; H, I], [f64; H], [f64; C, H], [f64; C], [f64; B, I]) {
            let h = relu(linear(x, w1, b1));
            let z = linear(h, w2, b2);
            let l = sparse_cross_entropy(z, labels);
            let loss = sum[n](l[n]) / (B as f64);
            (loss, @loss / @w1, @loss / @b1, @loss / @w2, @loss / @b2, @loss / @x)
        }

        // f32, weights stored [I, O], mean squared error (the README's example).
        pub fn dense_grad(x: [f32; B, I], w: [f32; I, O], b: [f32; O], t: [f32; B, O]) -> ([f32; I, O], [f32; O], f32) {
            let y[n, o] = relu(sum[i](x[n, i] * w[i, o]) + b[o]);
            let loss = sum[n, o]((y[n, o] - t[n, o]) ** 2) / (B * O) as f32;
            (@loss / @w, @loss / @b, loss)
        }

        // A batched 2-D convolution layer.
        pub fn conv_layer(x: [f64; N, C, H, W], k: [f64; O, C, KH, KW], b: [f64; O])
            -> (f64, [f64; N, C, H, W], [f64; O, C, KH, KW], [f64; O]) {
            let y[n, o, i, j] = sum[c, r, s](x[n, c, i + r, j + s] * k[o, c, r, s]) + b[o];
            let loss = sum[n, o, i, j](tanh(y[n, o, i, j]));
            (loss, @loss / @x, @loss / @k, @loss / @b)
        }
    }

    /// Gradients of a two-layer MLP with mean softmax cross-entropy, by hand:
    /// `(loss, dW1, db1, dW2, db2, dx)`. `relu` picks the activation (tanh otherwise).
    #[allow(clippy::type_complexity)]
    fn mlp_backward(
        x: &Array2<f64>,
        w1: &Array2<f64>,
        b1: &Array1<f64>,
        w2: &Array2<f64>,
        b2: &Array1<f64>,
        lab: &Array1<i64>,
        relu: bool,
    ) -> (f64, Array2<f64>, Array1<f64>, Array2<f64>, Array1<f64>, Array2<f64>) {
        let (bn, ni) = x.dim();
        let (nh, nc) = (w1.nrows(), w2.nrows());
        // Forward.
        let mut a = Array2::<f64>::zeros((bn, nh));
        for n in 0..bn {
            for j in 0..nh {
                a[[n, j]] = b1[j] + (0..ni).map(|i| x[[n, i]] * w1[[j, i]]).sum::<f64>();
            }
        }
        let h = if relu { a.mapv(|v| v.max(0.0)) } else { a.mapv(f64::tanh) };
        let mut z = Array2::<f64>::zeros((bn, nc));
        for n in 0..bn {
            for c in 0..nc {
                z[[n, c]] = b2[c] + (0..nh).map(|j| h[[n, j]] * w2[[c, j]]).sum::<f64>();
            }
        }
        let p = softmax_rows(&z);
        let loss = (0..bn).map(|n| -p[[n, lab[n] as usize]].ln()).sum::<f64>() / bn as f64;
        // Backward.
        let mut dz = p.clone();
        for n in 0..bn {
            dz[[n, lab[n] as usize]] -= 1.0;
        }
        dz /= bn as f64;
        let mut dw2 = Array2::<f64>::zeros((nc, nh));
        let mut db2 = Array1::<f64>::zeros(nc);
        let mut dh = Array2::<f64>::zeros((bn, nh));
        for n in 0..bn {
            for c in 0..nc {
                db2[c] += dz[[n, c]];
                for j in 0..nh {
                    dw2[[c, j]] += dz[[n, c]] * h[[n, j]];
                    dh[[n, j]] += dz[[n, c]] * w2[[c, j]];
                }
            }
        }
        let da = Array2::from_shape_fn((bn, nh), |(n, j)| {
            let local = if relu {
                if a[[n, j]] > 0.0 {
                    1.0
                } else {
                    0.0
                }
            } else {
                1.0 - h[[n, j]] * h[[n, j]]
            };
            dh[[n, j]] * local
        });
        let mut dw1 = Array2::<f64>::zeros((nh, ni));
        let mut db1 = Array1::<f64>::zeros(nh);
        let mut dx = Array2::<f64>::zeros((bn, ni));
        for n in 0..bn {
            for j in 0..nh {
                db1[j] += da[[n, j]];
                for i in 0..ni {
                    dw1[[j, i]] += da[[n, j]] * x[[n, i]];
                    dx[[n, i]] += da[[n, j]] * w1[[j, i]];
                }
            }
        }
        (loss, dw1, db1, dw2, db2, dx)
    }

    #[test]
    fn mlp_with_tanh_against_a_hand_written_backward_pass() {
        let (bn, ni, nh, nc) = (6, 4, 5, 3);
        let (x, w1, b1) = (rand((bn, ni), 900), rand((nh, ni), 901), rand(nh, 902));
        let (w2, b2, lab) = (rand((nc, nh), 903), rand(nc, 904), labels(bn, nc, 905));
        let (loss, dw1, db1, dw2, db2) = mlp_tanh(&x, &w1, &b1, &w2, &b2, &lab).unwrap();
        let want = mlp_backward(&x, &w1, &b1, &w2, &b2, &lab, false);
        assert_scalar("loss", loss, want.0, EXACT_TOL);
        assert_grad("dW1", &dw1, &want.1, EXACT_TOL);
        assert_grad("db1", &db1, &want.2, EXACT_TOL);
        assert_grad("dW2", &dw2, &want.3, EXACT_TOL);
        assert_grad("db2", &db2, &want.4, EXACT_TOL);
    }

    #[test]
    fn mlp_with_relu_from_std_ml_against_a_hand_written_backward_pass() {
        let (bn, ni, nh, nc) = (7, 3, 6, 4);
        let (x, w1, b1) = (rand((bn, ni), 910), rand((nh, ni), 911), rand(nh, 912));
        let (w2, b2, lab) = (rand((nc, nh), 913), rand(nc, 914), labels(bn, nc, 915));
        let (loss, dw1, db1, dw2, db2, dx) = mlp_relu(&x, &w1, &b1, &w2, &b2, &lab).unwrap();
        let want = mlp_backward(&x, &w1, &b1, &w2, &b2, &lab, true);
        assert_scalar("loss", loss, want.0, EXACT_TOL);
        assert_grad("dW1", &dw1, &want.1, EXACT_TOL);
        assert_grad("db1", &db1, &want.2, EXACT_TOL);
        assert_grad("dW2", &dw2, &want.3, EXACT_TOL);
        assert_grad("db2", &db2, &want.4, EXACT_TOL);
        assert_grad("dx", &dx, &want.5, EXACT_TOL);
    }

    #[test]
    fn dense_relu_mse_in_f32() {
        let (bn, ni, no) = (8, 4, 3);
        let (x, w, b, t) = (rand((bn, ni), 920), rand((ni, no), 921), rand(no, 922), rand((bn, no), 923));
        let (x32, w32, b32, t32) = (narrow(&x), narrow(&w), narrow(&b), narrow(&t));
        let (gw, gb, loss) = dense_grad(&x32, &w32, &b32, &t32).unwrap();
        // Reference in f64 from the f32 inputs.
        let (x, w, b, t) = (widen(&x32), widen(&w32), widen(&b32), widen(&t32));
        let z = x.dot(&w) + &b;
        let y = z.mapv(|v| v.max(0.0));
        let scale = (bn * no) as f64;
        let want_loss = (&y - &t).mapv(|v| v * v).sum() / scale;
        let dz = Array2::from_shape_fn((bn, no), |ix| if z[ix] > 0.0 { 2.0 * (y[ix] - t[ix]) / scale } else { 0.0 });
        assert_scalar("loss", f64::from(loss), want_loss, 1e-5);
        assert_grad("dW", &widen(&gw), &x.t().dot(&dz), 1e-5);
        assert_grad("db", &widen(&gb), &dz.sum_axis(einlang::ndarray::Axis(0)), 1e-5);
    }

    #[test]
    fn convolution_layer_against_a_hand_written_backward_pass() {
        let (nb, nc, hh, ww, no, kh, kw) = (2, 3, 6, 5, 4, 3, 2);
        let (x, k, b) = (rand((nb, nc, hh, ww), 930), rand((no, nc, kh, kw), 931), rand(no, 932));
        let (oh, ow) = (hh - kh + 1, ww - kw + 1);
        // Forward.
        let mut y = Array::<f64, _>::zeros((nb, no, oh, ow));
        for n in 0..nb {
            for o in 0..no {
                for i in 0..oh {
                    for j in 0..ow {
                        let mut acc = b[o];
                        for c in 0..nc {
                            for r in 0..kh {
                                for s in 0..kw {
                                    acc += x[[n, c, i + r, j + s]] * k[[o, c, r, s]];
                                }
                            }
                        }
                        y[[n, o, i, j]] = acc;
                    }
                }
            }
        }
        let want_loss: f64 = y.iter().map(|v: &f64| v.tanh()).sum();
        let dy = y.mapv(|v: f64| 1.0 - v.tanh().powi(2));
        // Backward: scatter dy through every product.
        let mut dx = Array::<f64, _>::zeros(x.raw_dim());
        let mut dk = Array::<f64, _>::zeros(k.raw_dim());
        let mut db = Array1::<f64>::zeros(no);
        for n in 0..nb {
            for o in 0..no {
                for i in 0..oh {
                    for j in 0..ow {
                        let g = dy[[n, o, i, j]];
                        db[o] += g;
                        for c in 0..nc {
                            for r in 0..kh {
                                for s in 0..kw {
                                    dx[[n, c, i + r, j + s]] += g * k[[o, c, r, s]];
                                    dk[[o, c, r, s]] += g * x[[n, c, i + r, j + s]];
                                }
                            }
                        }
                    }
                }
            }
        }
        let (loss, gx, gk, gb) = conv_layer(&x, &k, &b).unwrap();
        assert_scalar("loss", loss, want_loss, EXACT_TOL);
        assert_grad("dx", &gx, &dx, EXACT_TOL);
        assert_grad("dk", &gk, &dk, EXACT_TOL);
        assert_grad("db", &gb, &db, EXACT_TOL);
    }
}

// ===========================================================================
// Beyond first-order requests on plain code: forward mode through a
// recurrence, second derivatives, a row of a lazy Jacobian, a read selected
// by argmax
// ===========================================================================

mod advanced {
    use super::*;

    // -----------------------------------------------------------------------
    // Forward mode through recurrences (a scalar source, the whole history
    // as the target)
    // -----------------------------------------------------------------------

    mod recurrence_tangents {
        use super::*;
        use einlang::einlang;

        einlang! {
            use std::math::sin;

            pub fn p_scan_all(s0: f64, a: [f64; T]) -> [f64; T] {
                let s[0] = s0;
                let s[t in 1..T] = s[t - 1] * a[t] + sin(s[t - 1]);
                s
            }
            pub fn f_scan_all(s0: f64, a: [f64; T]) -> [f64; T] {
                let s[0] = s0;
                let s[t in 1..T] = s[t - 1] * a[t] + sin(s[t - 1]);
                @s / @s0
            }
        }

        #[test]
        fn scalar_recurrence_tangent() {
            for (nt, seed) in [(6usize, 1050u64), (2, 1051), (1, 1052)] {
                let (s0, a) = (0.3, rand(nt, seed));
                let got = f_scan_all(s0, &a).unwrap();
                assert_grad("d s / d s0", &got, &fd_scalar(s0, |s| p_scan_all(s, &a).unwrap()), FD_TOL);
                // By hand: d s[t] = (a[t] + cos s[t-1]) d s[t-1], d s[0] = 1.
                let s = p_scan_all(s0, &a).unwrap();
                let mut want = Array1::<f64>::zeros(nt);
                want[0] = 1.0;
                for t in 1..nt {
                    want[t] = (a[t] + s[t - 1].cos()) * want[t - 1];
                }
                assert_grad("hand", &got, &want, EXACT_TOL);
            }
        }
    }

    // -----------------------------------------------------------------------
    // Second derivatives (a request of a request)
    // -----------------------------------------------------------------------

    mod second {
        use super::*;
        use einlang::einlang;

        einlang! {
            use std::math::{exp, sin};

            pub fn d2_scalar(x: f64) -> f64 {
                let y = x ** 3 * sin(x);
                let d = @y / @x;
                @d / @x
            }
            pub fn hessian(x: [f64; N], a: [f64; N, N]) -> [f64; N, N] {
                let l = sum[i](exp(sum[j](a[i, j] * x[j])));
                let g = @l / @x;
                @g / @x
            }
        }

        #[test]
        fn second_derivative_of_a_scalar() {
            for x in [-1.1f64, 0.0, 0.5, 2.0] {
                let want = 6.0 * x * x.sin() + 6.0 * x * x * x.cos() - x.powi(3) * x.sin();
                assert_scalar("y''", d2_scalar(x).unwrap(), want, EXACT_TOL);
            }
        }

        #[test]
        fn hessian_of_a_sum_of_exponentials() {
            // l = sum exp(A x): H = A^T diag(exp(A x)) A.
            let (x, a) = (rand(3, 1020), rand((3, 3), 1021));
            let e = a.dot(&x).mapv(f64::exp);
            let want =
                Array2::from_shape_fn((3, 3), |(p, q)| (0..3).map(|i| a[[i, p]] * e[i] * a[[i, q]]).sum::<f64>());
            assert_grad("hessian", &hessian(&x, &a).unwrap(), &want, EXACT_TOL);
        }
    }

    // -----------------------------------------------------------------------
    // One row of a lazy Jacobian
    // -----------------------------------------------------------------------

    mod jacobian_row {
        use super::*;
        use einlang::einlang;

        einlang! {
            use std::math::tanh;

            pub fn p_rowjac(x: [f64; N], a: [f64; M, N]) -> [f64; M] {
                let y[m] = tanh(sum[n](a[m, n] * x[n]));
                y
            }
            pub fn jac_row(x: [f64; N], a: [f64; M, N], m: i64) -> [f64; N] {
                let y[q] = tanh(sum[n](a[q, n] * x[n]));
                let jac = @y / @x;
                jac[m]
            }
        }

        #[test]
        fn one_row_of_a_jacobian() {
            let (x, a) = (rand(4, 1040), rand((3, 4), 1041));
            let full = fd_jacobian(&x, |x| p_rowjac(x, &a).unwrap());
            for m in 0..3 {
                let want = full.index_axis(einlang::ndarray::Axis(0), m).to_owned();
                assert_grad("row", &jac_row(&x, &a, m as i64).unwrap(), &want, FD_TOL);
            }
        }
    }

    // -----------------------------------------------------------------------
    // A read selected by argmax
    // -----------------------------------------------------------------------

    mod argmax_read {
        use super::*;
        use einlang::einlang;

        einlang! {
            pub fn g_argmax(x: [f64; N]) -> [f64; N] {
                let k = argmax[i](x[i]);
                let loss = x[k] * x[k];
                @loss / @x
            }
        }

        #[test]
        fn argmax_selected_read() {
            let x = Array1::from_vec(vec![0.5, -2.0, 1.5, 1.5, 0.2]);
            // The first maximum (index 2) is read: 2 x[2] there, 0 elsewhere.
            let want = Array1::from_vec(vec![0.0, 0.0, 3.0, 0.0, 0.0]);
            assert_grad("argmax", &g_argmax(&x).unwrap(), &want, EXACT_TOL);
        }
    }
}
