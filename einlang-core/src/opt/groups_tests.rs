//! `opt::groups` tests: which sums are made per group (printed as IR), and
//! which are left alone.

use expect_test::expect;

use crate::ir;
use crate::test_support::lowered;

fn optimized(src: &str) -> String {
    match super::optimize(lowered(src)) {
        Ok(p) => ir::pretty::pretty_program(&p),
        Err(e) => panic!("{e}"),
    }
}

/// `opt::conv` runs first: the kernel per group where the divisor allows
/// it, and this pass's per-group product in the branch for other values.
#[test]
fn a_channel_computed_from_the_output_channel_is_split_into_groups() {
    let out = optimized(
        "pub fn conv(x: [f32; N, C, H, W], k: [f32; O, CG, 3, 3], fpg: i64) -> [f32; N, O, H - 2, W - 2] {
            let y[n, o, i, j] = sum[c, r, s](x[n, (o / fpg) * CG + c, i + r, j + s] * k[o, c, r, s]);
            y
        }",
    );
    expect![[r#"
        pub fn conv(x: tensor<f32, 4>, k: tensor<f32, 4>, fpg: i64) -> tensor<f32, 4> {
            bind N = x.shape[0]
            bind C = x.shape[1]
            bind H = x.shape[2]
            bind W = x.shape[3]
            bind O = k.shape[0]
            bind CG = k.shape[1]
            check k.shape[2] == 3 ("3")
            check k.shape[3] == 3 ("3")
            extent i_len = H - 2 ("H - 2")
            extent j_len = W - 2 ("W - 2")
            conv y = x * k (pad 0, 0, groups O / fpg): f32
              reference tensor y[n in 0..N, o in 0..O, i in 0..i_len, j in 0..j_len]: f32 (cost 12673) = sum[c in 0..CG, r in 0..3, s in 0..3] (read x[n, ((o / fpg) * CG) + c, i + r, j + s] checked) * (read k[o, c, r, s] unchecked)
              when ((fpg >= 1) && ((fpg * (O / fpg)) == O)) && ((CG * (O / fpg)) == C)
              else {
                    let y_d: i64 = if fpg > 0i64 { fpg } else { 0i64 }
                    let y_n: i64 = if y_d > 0i64 { (y_d + (O - 1)) / y_d } else { 0i64 }
                    let x_in_range: bool = all[g in 0..y_n, c_3 in 0..CG] (((g * CG) + c_3) >= 0i64) && (((g * CG) + c_3) < (x.shape[1]))
                    let y_f: i64 = if (y_d > 0i64) && x_in_range { y_d } else { 0i64 }
                    let y_g: i64 = if (y_d > 0i64) && x_in_range { y_n } else { 0i64 }
                    tensor k_grp[g_2 in 0..y_g, o_3 in 0..y_f, c_4 in 0..CG, r_3 in 0..3, s_3 in 0..3]: f32 (cost 17) = if ((g_2 * y_f) + o_3) < O { read k[(g_2 * y_f) + o_3, c_4, r_3, s_3] unchecked } else { 0.0f32 }
                    tensor y_grp_kern[g_5 in 0..y_g, c_6 in 0..CG, r_5 in 0..3, s_5 in 0..3, o_5 in 0..y_f]: f32 (cost 6) = read k_grp[g_5, o_5, c_6, r_5, s_5] unchecked
                    reshape y_grp_kern_m = y_grp_kern as [y_g, 9 * CG, y_f]: f32
                    rows of y_grp, once per n_3:
                        tensor y_grp_cols_2[g_6 in 0..y_g, c_5 in 0..CG, r_4 in 0..3, s_4 in 0..3, i_5 in 0..i_len, j_5 in 0..j_len]: f32 (cost 17) = (read x[n_3, (g_6 * CG) + c_5, i_5 + r_4, j_5 + s_4] checked) where y_f > 0i64
                        reshape y_grp_cols_m = y_grp_cols_2 as [y_g, 9 * CG, i_len * j_len]: f32
                        gemm y_grp_prod_m = y_grp_kern_m[0, 2, 1] x y_grp_cols_m[0, 1, 2] (batch y_g, m y_f, n i_len * j_len, k 9 * CG): f32
                          reference tensor y_grp_prod_m[b in 0..y_g, m in 0..y_f, n_5 in 0..i_len * j_len]: f32 (cost 641) = sum[k_2 in 0..9 * CG] (read y_grp_kern_m[b, k_2, m] unchecked) * (read y_grp_cols_m[b, k_2, n_5] unchecked)
                        reshape y_grp_prod = y_grp_prod_m as [y_g, y_f, i_len, j_len]: f32
                        tensor y_grp[n_3 in 0..N, g_3 in 0..y_g, o_4 in 0..y_f, i_3 in 0..i_len, j_3 in 0..j_len]: f32 (cost 646) = read y_grp_prod[g_3, o_4, i_3, j_3] unchecked
                    tensor y_2[n_2 in 0..N, o_2 in 0..O, i_2 in 0..i_len, j_2 in 0..j_len]: f32 (cost 12677) = if y_f > 0i64 { read y_grp[n_2, o_2 / y_f, o_2 % y_f, i_2, j_2] unchecked } else { sum[c_2 in 0..CG, r_2 in 0..3, s_2 in 0..3] (read x[n_2, ((o_2 / fpg) * CG) + c_2, i_2 + r_2, j_2 + s_2] checked) * (read k[o_2, c_2, r_2, s_2] unchecked) }
                    y_2
                }
            result y
        }
    "#]]
    .assert_eq(&out);
}

/// `o` read other than through `o / F` (here `o / F + o`), two different
/// divisors, or a divisor that the sum defines: no groups.
#[test]
fn other_uses_of_the_output_channel_are_left_alone() {
    for read in [
        "x[n, (o / fpg) * CG + c + o, i + r, j + s]",
        "x[n, (o / fpg) * CG + (o / 2) * c, i + r, j + s]",
        "x[n, (o / (c + 1)) * CG, i + r, j + s]",
    ] {
        let out = optimized(&format!(
            "pub fn conv(x: [f32; N, C, H, W], k: [f32; O, CG, 3, 3], fpg: i64) -> [f32; N, O, H - 2, W - 2] {{
                let y[n, o, i, j] = sum[c, r, s]({read} * k[o, c, r, s]);
                y
            }}"
        ));
        assert!(!out.contains("_grp") && !out.contains("gemm"), "{read}:\n{out}");
    }
}
