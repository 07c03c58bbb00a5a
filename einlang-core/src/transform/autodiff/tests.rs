//! What the derivative code looks like, as optimized loop IR: the
//! properties the design promises (gradients are gathers and GEMMs, sweeps
//! are shared, lazy rows stay rows). Numbers are checked against finite
//! differences and hand-written backward passes in `tests/autodiff.rs`.

use crate::ir;

fn ir_of(src: &str) -> String {
    let compiled = crate::compile_str(src, &crate::Options::default())
        .unwrap_or_else(|d| panic!("{}", d.iter().map(|d| d.render_text()).collect::<Vec<_>>().join("\n")));
    ir::pretty::pretty_program(&compiled.ir)
}

fn lines_with(text: &str, pat: &str) -> Vec<String> {
    text.lines().filter(|l| l.contains(pat)).map(str::to_string).collect()
}

#[test]
fn dense_layer_gradients_are_gemms_of_one_shared_sweep() {
    let ir = ir_of(
        "use std::math::tanh;
        pub fn g(x: [f32; B, I], w: [f32; H, I], v: [f32; O, H]) -> ([f32; H, I], [f32; O, H]) {
            let h[n, j] = tanh(sum[i](x[n, i] * w[j, i]));
            let z[n, o] = sum[j](h[n, j] * v[o, j]);
            let l = sum[n, o](z[n, o] * z[n, o]);
            (@l / @w, @l / @v)
        }",
    );
    for grad in ["d_w", "d_v", "d_h"] {
        assert!(!lines_with(&ir, &format!("gemm {grad} =")).is_empty(), "{grad} is not a GEMM:\n{ir}");
    }
    // One backward sweep for both requests (one adjoint of z), and tanh's
    // derivative reads h.
    assert_eq!(lines_with(&ir, "tensor d_z").len(), 1, "{ir}");
    let g = lines_with(&ir, "tensor g[");
    assert!(g.iter().all(|l| !l.contains("tanh") && l.contains("read h[")), "{ir}");
}

#[test]
fn affine_and_strided_reads_become_gathers_with_guards() {
    let ir = ir_of(
        "pub fn g(x: [f32; N], k: [f32; K]) -> [f32; N] {
            let y[i] = sum[r](x[2 * i + r] * k[r]);
            let l = sum[i](y[i] * y[i]);
            @l / @x
        }",
    );
    let dx = lines_with(&ir, "tensor d_x[");
    assert_eq!(dx.len(), 1, "{ir}");
    // The adjoint of x[2 i + r] solves i = (p - r) / 2 where 2 divides p - r.
    assert!(dx[0].contains("/ 2") && dx[0].contains("% 2") && dx[0].contains("== 0"), "{}", dx[0]);
}

#[test]
fn a_jacobian_read_by_rows_is_one_backward_sweep_per_row() {
    let ir = ir_of(
        "use std::math::sin;
        pub fn row(x: [f64; N], w: [f64; N, N], t: i64) -> [f64; N] {
            let y[i] = sin(sum[k](w[i, k] * x[k]));
            let J = @y / @x;
            let r[j] = J[t, j] * 2.0;
            r
        }",
    );
    assert!(lines_with(&ir, "t_y").is_empty(), "a tangent (dense Jacobian) was built:\n{ir}");
    // One vector-Jacobian product: the row's seed, one adjoint of x.
    assert_eq!(lines_with(&ir, "tensor d_y").len(), 1, "{ir}");
    assert_eq!(lines_with(&ir, "tensor d_x").len(), 1, "{ir}");
}

#[test]
fn a_scalar_source_gets_forward_mode() {
    let ir = ir_of(
        "use std::math::sin;
        pub fn f(a: f64, x: [f64; N]) -> [f64; N] {
            let y[i] = sin(a * x[i]);
            @y / @a
        }",
    );
    assert_eq!(lines_with(&ir, "tensor t_y[").len(), 1, "{ir}");
    assert!(lines_with(&ir, "d_").is_empty(), "{ir}");
}

#[test]
fn recurrences_get_a_reversed_adjoint_recurrence() {
    let ir = ir_of(
        "use std::math::tanh;
        pub fn g(w: [f64; H, H], h0: [f64; H], steps: i64) -> [f64; H, H] {
            let h[0, j] = h0[j];
            let h[t in 1..steps, j] = tanh(sum[k](w[j, k] * h[t - 1, k]));
            let l = sum[j](h[steps - 1, j]);
            @l / @w
        }",
    );
    // Once in `g`, once in its checkpointed alternative's sweep.
    let lines = lines_with(&ir, "recurrence r_h[");
    assert_eq!(lines.len(), 2, "{ir}");
    assert_eq!(lines.iter().filter(|l| l.trim_start().starts_with("adjoint recurrence r_h[")).count(), 1, "{ir}");
}

#[test]
fn requests_of_one_target_in_later_statements_share_the_sweep() {
    let ir = ir_of(
        "pub fn g(x: [f32; N], w: [f32; N], b: f32) -> ([f32; N], f32) {
            let z[i] = w[i] * x[i] + b;
            let l = sum[i](z[i] * z[i]);
            let gw = @l / @w;
            let gb = @l / @b;
            (gw, gb)
        }",
    );
    assert_eq!(lines_with(&ir, "tensor d_z").len(), 1, "{ir}");
}

#[test]
fn a_reduction_under_a_nonlinear_call_gets_its_own_tensor() {
    // relu(x w + b): the pre-activation is bound (and stays a GEMM), the
    // derivative reads it, and the bias gradient sums the layer's adjoint.
    let ir = ir_of(
        "use std::ml::relu;
        pub fn g(x: [f32; B, I], w: [f32; I, H], b: [f32; H]) -> ([f32; I, H], [f32; H]) {
            let h[n, j] = relu(sum[i](x[n, i] * w[i, j]) + b[j]);
            let l = sum[n, j](h[n, j] * h[n, j]);
            (@l / @w, @l / @b)
        }",
    );
    assert!(!lines_with(&ir, "gemm h_pre_mm =").is_empty(), "{ir}");
    assert!(!lines_with(&ir, "gemm d_w =").is_empty(), "{ir}");
    let db = lines_with(&ir, "tensor d_b[");
    assert!(db.len() == 1 && !db[0].contains("read x["), "{ir}");
}

#[test]
fn a_jacobian_read_by_columns_is_one_forward_sweep_without_source_axes() {
    let ir = ir_of(
        "use std::math::sin;
        pub fn col(x: [f64; N], w: [f64; N, N], s: i64) -> [f64; N] {
            let y[i] = sin(sum[k](w[i, k] * x[k]));
            let J = @y / @x;
            let c[i] = J[i, s];
            c
        }",
    );
    let t = lines_with(&ir, "tensor t_y[");
    // One axis (no source axis), and the one-hot sum folded to `w[i, s]`.
    assert!(t.len() == 1 && !t[0].contains("q0") && t[0].contains(", s]"), "{ir}");
}

#[test]
fn the_strategy_of_each_request_is_a_compile_fact() {
    let src = "use std::math::{sin, tanh};
        pub fn g(w: [f64; H, H], h0: [f64; H], steps: i64) -> ([f64; H, H], [f64; H]) {
            let h[0, j] = h0[j];
            let h[t in 1..steps, j] = tanh(sum[k](w[j, k] * h[t - 1, k]));
            let l = sum[j](h[steps - 1, j]);
            (@l / @w, @l / @h0)
        }
        pub fn f(a: f64, x: [f64; N]) -> [f64; N] {
            let y[i] = sin(a * x[i]);
            @y / @a
        }";
    let compiled = crate::compile_str(src, &crate::Options::default()).unwrap_or_else(|_| panic!("compiles"));
    let g = compiled.derivatives("g");
    assert_eq!(g.len(), 2, "{g:?}");
    for fact in &g {
        assert_eq!(fact.mode, super::DerivMode::Reverse);
        // Kept, or recomputed from checkpoints when the history is large.
        let [(name, super::History::Checkpointed { steps, state, memory })] = fact.reversed.as_slice() else {
            panic!("{:?}", fact.reversed)
        };
        assert_eq!((name.as_str(), steps.as_str(), state.as_str()), ("h", "max(1, steps)", "H"));
        assert!(memory.contains("K = ceil(sqrt(max(1, steps)))") && memory.contains("* (H) elements"), "{memory}");
    }
    let f = compiled.derivatives("f");
    assert!(f.len() == 1 && f[0].mode == super::DerivMode::Forward && f[0].reversed.is_empty(), "{f:?}");
}

#[test]
fn an_rnn_adjoint_carries_the_pre_activation() {
    let ir = ir_of(
        "use std::math::tanh;
        pub fn g(h0: [f32; B, H], w: [f32; H, H], u: [f32; I, H], x: [f32; T, B, I]) -> ([f32; H, H], [f32; I, H]) {
            let h[0, b, j] = h0[b, j];
            let h[t in 1..T, b, j] = tanh(sum[k](h[t - 1, b, k] * w[k, j]) + sum[i](x[t, b, i] * u[i, j]));
            let l = sum[b, j](h[T - 1, b, j] ** 2);
            (@l / @w, @l / @u)
        }",
    );
    // The recurrent step of the adjoint: a plain product with `w` (one
    // GEMM per step, `opt::steps`), tanh's slope `1 - h^2` once per point
    // outside it.
    let product = lines_with(&ir, "reference tensor r_h_mm[");
    assert!(!product.is_empty() && product.iter().all(|l| l.contains("read r_h_step") && l.contains("read w")), "{ir}");
    let step = lines_with(&ir, "clause [s").into_iter().find(|l| l.contains("read r_h_mm[")).expect("an adjoint step");
    let slope = step.find(" * (if").expect("the slope outside the product");
    assert!(step.find("read r_h_mm[").unwrap() < slope && step[slope..].contains("1.0f32 -"), "{step}");
    // Both parameter gradients read the carried adjoint directly: nothing
    // is bound in between. Each is one GEMM (`opt::pack`, its sum over
    // `t in 1..T` shifted to start at 0), over a packed copy of `d_h`,
    // which reads the adjoint's history in reverse itself (`opt::inline`:
    // no pass copies `d_h` whole).
    assert!(lines_with(&ir, "tensor g[").is_empty(), "{ir}");
    for grad in ["d_w", "d_u"] {
        assert_eq!(lines_with(&ir, &format!("gemm {grad}_prod_m")).len(), 1, "{grad}:\n{ir}");
    }
    let packed = lines_with(&ir, "read r_h[");
    assert!(packed.iter().any(|l| l.contains("tensor d_u_") || l.contains("tensor d_w_")), "{ir}");
    assert!(lines_with(&ir, "tensor d_h[").is_empty(), "{ir}");
}

#[test]
fn reductions_reached_by_one_adjoint_share_its_tensor() {
    let ir = ir_of(
        "pub fn g(h0: [f32; H], w: [f32; H, H], u: [f32; H, I], x: [f32; T, I]) -> ([f32; H, H], [f32; H, I]) {
            let h[0, j] = h0[j];
            let h[t in 1..T, j] = 0.5 * (sum[k](w[j, k] * h[t - 1, k]) + sum[i](u[j, i] * x[t, i]));
            let l = sum[j](h[T - 1, j] ** 2);
            (@l / @w, @l / @u)
        }",
    );
    // `0.5 d_h` reaches both sums: it is bound once, and both gradients
    // read it: their GEMMs share its one packed copy (`opt::dedup`).
    assert_eq!(lines_with(&ir, "tensor g[").len(), 1, "{ir}");
    let packed = lines_with(&ir, "read g[");
    assert_eq!(packed.len(), 1, "{ir}");
    let name = packed[0].trim().strip_prefix("tensor ").and_then(|l| l.split('[').next()).expect("a packed copy");
    for grad in ["d_w", "d_u"] {
        let gemm = lines_with(&ir, &format!("gemm {grad}_prod_m"));
        assert!(gemm.len() == 1 && gemm[0].contains(&format!("{name}_m")), "{grad}:\n{ir}");
    }
}
