//! `std::numerics` against hand-written loops: ODE steppers for exponential
//! decay, gradient descent on a 2-D quadratic, and the dynamic-programming
//! helpers.

mod common;

use approx::assert_relative_eq;
use common::*;
use einlang::ndarray::{array, Array1, Array2};

mod num {
    #![allow(non_snake_case)]
    use einlang::einlang;

    einlang! {
        use std::numerics::ode::*;
        use std::numerics::optim::*;
        use std::numerics::dp::*;

        pub fn steps(u: f64, k: f64, dt: f64) -> (f64, f64, f64) {
            (euler_decay_step(u, k, dt), midpoint_decay_step(u, k, dt), rk4_decay_step(u, k, dt))
        }
        pub fn trajectories(u0: f64, k: f64, dt: f64, n: i64) -> ([f64; ?], [f64; ?], [f64; ?]) {
            (euler_decay(u0, k, dt, n), midpoint_decay(u0, k, dt, n), rk4_decay(u0, k, dt, n))
        }
        pub fn quad(x: [f64; 2], A: [f64; 2, 2], b: [f64; 2], alpha: f64) -> (f64, [f64; 2], [f64; 2], f64) {
            (quadratic_value_2d(x, A, b), quadratic_gradient_2d(x, A, b), gradient_descent_step_2d(x, A, b, alpha),
             quadratic_residual_norm_2d(x, A, b))
        }
        pub fn descent(x0: [f64; 2], A: [f64; 2, 2], b: [f64; 2], alpha: f64, n: i64) -> ([f64; ?, 2], [f64; ?, 2]) {
            (gradient_descent_2d_from(x0, A, b, alpha, n), gradient_descent_2d(A, b, alpha, n))
        }
        pub fn dp_all(V: [f64; S], r: [f64; S], P: [f64; S, S], beta: f64, n: i64, states: i64)
            -> (f64, [f64; states], [f64; ?, states], f64) {
            (expected_value_at_state(V, P, 1, states), bellman_step(V, r, P, beta, states),
             value_iteration(r, P, beta, states, n), bellman_residual(V, r, P, beta, states))
        }
        pub fn linear(u0: [f64; N], A: [f64; N, N], dt: f64, steps: i64, n: i64) -> ([f64; n], [f64; ?, n]) {
            (euler_linear_step(u0, A, dt, n), euler_linear(u0, A, dt, steps, n))
        }
        pub fn fit(x: [f64; N], y: [f64; N], n: i64) -> [f64; 2] {
            least_squares_slope_intercept(x, y, n)
        }
        pub fn discounted(rewards: [f64; T], beta: f64, n: i64) -> f64 {
            discounted_return(rewards, beta, n)
        }
    }
}

#[test]
fn decay_steppers_and_trajectories() {
    let (u, k, dt) = (2.0f64, 0.7, 0.1);
    let (e, m, r) = num::steps(u, k, dt).unwrap();
    assert_relative_eq!(e, u * (1.0 - k * dt), epsilon = 1e-14);
    assert_relative_eq!(m, u * (1.0 - k * dt + 0.5 * (k * dt).powi(2)), epsilon = 1e-14);
    // RK4 on a linear equation is the fourth-order Taylor polynomial of exp.
    let z = -k * dt;
    assert_relative_eq!(r, u * (1.0 + z + z * z / 2.0 + z.powi(3) / 6.0 + z.powi(4) / 24.0), epsilon = 1e-14);
    let n = 50;
    let (te, tm, tr) = num::trajectories(1.0, k, dt, n).unwrap();
    assert_eq!(te.len(), n as usize + 1);
    let (mut a, mut b, mut c) = (1.0f64, 1.0f64, 1.0f64);
    for t in 0..=n as usize {
        assert_relative_eq!(te[t], a, epsilon = 1e-13);
        assert_relative_eq!(tm[t], b, epsilon = 1e-13);
        assert_relative_eq!(tr[t], c, epsilon = 1e-13);
        a *= 1.0 - k * dt;
        b *= 1.0 - k * dt + 0.5 * (k * dt).powi(2);
        c *= 1.0 + z + z * z / 2.0 + z.powi(3) / 6.0 + z.powi(4) / 24.0;
    }
    // RK4 is close to the exact solution.
    assert_relative_eq!(tr[n as usize], (-k * dt * n as f64).exp(), epsilon = 1e-7);
}

#[test]
fn gradient_descent_on_a_quadratic() {
    let a = array![[3.0, 1.0], [1.0, 2.0]];
    let b = array![1.0, -1.0];
    let x = array![0.5, -0.25];
    let (v, g, step, norm) = num::quad(&x, &a, &b, 0.1).unwrap();
    let ax = a.dot(&x);
    assert_relative_eq!(v, 0.5 * x.dot(&ax) - b.dot(&x), epsilon = 1e-14);
    assert_close(&g, &(&ax - &b), 1e-14);
    assert_close(&step, &(&x - &((&ax - &b) * 0.1)), 1e-14);
    assert_relative_eq!(norm, (&ax - &b).mapv(|r| r * r).sum().sqrt(), epsilon = 1e-14);

    let n = 200;
    let (from, origin) = num::descent(&x, &a, &b, 0.2, n).unwrap();
    for (start, traj) in [(x.clone(), from), (Array1::zeros(2), origin)] {
        assert_eq!(traj.dim(), (n as usize + 1, 2));
        let mut cur = start;
        for s in 0..=n as usize {
            assert_close(&traj.row(s).to_owned(), &cur, 1e-12);
            cur = &cur - &((&a.dot(&cur) - &b) * 0.2);
        }
    }
}

#[test]
fn dynamic_programming_helpers() {
    let s_n = 5;
    let r = rand1_f64(s_n, 1);
    // Columns are "from" states and sum to one.
    let mut p = rand2_f64(s_n, s_n, 2).mapv(|v| v.abs() + 0.05);
    for s in 0..s_n {
        let total: f64 = p.column(s).sum();
        p.column_mut(s).mapv_inplace(|v| v / total);
    }
    let v = rand1_f64(s_n, 3);
    let beta = 0.9;
    let ev = |vv: &Array1<f64>, s: usize| (0..s_n).map(|s2| p[[s2, s]] * vv[s2]).sum::<f64>();
    let (e1, step, iters, resid) = num::dp_all(&v, &r, &p, beta, 30, s_n as i64).unwrap();
    assert_relative_eq!(e1, ev(&v, 1), epsilon = 1e-14);
    let want_step: Array1<f64> = (0..s_n).map(|s| r[s] + beta * ev(&v, s)).collect();
    assert_close(&step, &want_step, 1e-14);
    let want_resid = (0..s_n).map(|s| (want_step[s] - v[s]).abs()).fold(0.0, f64::max);
    assert_relative_eq!(resid, want_resid, epsilon = 1e-14);
    let mut cur = Array1::<f64>::zeros(s_n);
    let mut want_iters = Array2::<f64>::zeros((31, s_n));
    for k in 1..=30 {
        cur = (0..s_n).map(|s| r[s] + beta * ev(&cur, s)).collect();
        want_iters.row_mut(k).assign(&cur);
    }
    assert_close(&iters, &want_iters, 1e-12);

    // The first three states only: a sub-problem of its own.
    let (e3, step3, iters3, _) = num::dp_all(&v, &r, &p, beta, 2, 3).unwrap();
    assert_relative_eq!(e3, (0..3).map(|s2| p[[s2, 1]] * v[s2]).sum::<f64>(), epsilon = 1e-14);
    assert_eq!((step3.len(), iters3.dim()), (3, (3, 3)));
    assert!(num::dp_all(&v, &r, &p, beta, 2, 6).is_err());

    let rewards = array![1.0, 2.0, 3.0, 4.0];
    assert_relative_eq!(num::discounted(&rewards, 0.5, 3).unwrap(), 1.0 + 2.0 * 0.5 + 3.0 * 0.25, epsilon = 1e-14);
}

#[test]
fn linear_euler_and_least_squares() {
    let a = array![[-0.5, 0.2, 0.0], [0.1, -0.3, 0.4], [0.0, 0.0, -1.0]];
    let u0 = array![1.0, 2.0, -1.0];
    let (dt, steps) = (0.05, 20);
    let (one, traj) = num::linear(&u0, &a, dt, steps, 3).unwrap();
    let step = |u: &Array1<f64>| u + &(a.dot(u) * dt);
    assert_close(&one, &step(&u0), 1e-14);
    assert_eq!(traj.dim(), (steps as usize + 1, 3));
    let mut cur = u0.clone();
    for t in 0..=steps as usize {
        assert_close(&traj.row(t).to_owned(), &cur, 1e-12);
        cur = step(&cur);
    }
    // The first two components only: a 2x2 system.
    let (two, _) = num::linear(&u0, &a, dt, 1, 2).unwrap();
    assert_relative_eq!(two[0], 1.0 + dt * (-0.5 * 1.0 + 0.2 * 2.0), epsilon = 1e-14);

    // Points on y = 3 x - 2 with one outlier after the first five.
    let x = array![0.0, 1.0, 2.0, 3.0, 4.0, 5.0];
    let y = array![-2.0, 1.0, 4.0, 7.0, 10.0, 100.0];
    let coef = num::fit(&x, &y, 5).unwrap();
    assert_relative_eq!(coef[0], 3.0, epsilon = 1e-12);
    assert_relative_eq!(coef[1], -2.0, epsilon = 1e-12);
}
