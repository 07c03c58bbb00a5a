//! `f64` `sin`, `cos` and `tan` without branches, calls or loads that
//! depend on the argument (see the parent module): an exact reduction by
//! `pi/2` for every finite argument (Payne and Hanek's method, the bits of
//! `2/pi` chosen by masks), Taylor series in double-double where it
//! matters. The `f32` forms reduce in the same way with 96 bits
//! (`reduce_pio2_f32`).

#![allow(clippy::excessive_precision)]

use super::{two_prod, two_sum, PIO2_HI, PIO2_LO};

/// The bits of `2/pi` after the point, 64 to a word, after one word of
/// zeros (as `TWO_OVER_PI`): 1,216 bits, as many as a finite `f64` needs.
const TWO_OVER_PI_64: [u64; 20] = [
    0x0000_0000_0000_0000,
    0xa2f9_836e_4e44_1529,
    0xfc27_57d1_f534_ddc0,
    0xdb62_9599_3c43_9041,
    0xfe51_63ab_debb_c561,
    0xb724_6e3a_424d_d2e0,
    0x0649_2eea_09d1_921c,
    0xfe1d_eb1c_b129_a73e,
    0xe882_35f5_2ebb_4484,
    0xe99c_7026_b45f_7e41,
    0x3991_d639_8353_39f4,
    0x9c84_5f8b_bdf9_283b,
    0x1ff8_97ff_de05_980f,
    0xef2f_118b_5a0a_6d1f,
    0x6d36_7ecf_27cb_09b7,
    0x4f46_3f66_9e5f_ea2d,
    0x7527_bac7_ebe5_f17b,
    0x3d07_39f7_8a52_92ea,
    0x6bfb_5fb1_1f8d_5d08,
    0x5603_3046_fc7b_6bab,
];

/// A `u32` (below 2^52) as an `f64`, exactly, by the bits of `2^52 + u`:
/// an integer `or` and a subtraction, the same on every processor (a
/// 64-bit integer conversion has no SSE2 or AVX2 instruction).
#[inline(always)]
fn u32_to_f64(u: u64) -> f64 {
    f64::from_bits(0x4330_0000_0000_0000 | u) - 4_503_599_627_370_496.0
}

/// `|x| = n pi/2 + r`, `|r| <= pi/4` (a little more at rounding ties), for
/// every finite `f64`, with `r = rh + rl` in double-double: `(rh, rl, n
/// mod 4)`. Below `pi/4`, `r = |x|`. Above, exactly, for every exponent
/// (Payne and Hanek's method, without branches): `|x| = m 2^e` with `m` a
/// 53-bit integer, so `|x| 2/pi mod 4` needs only the bits of `2/pi` from
/// bit `e - 1` on (the earlier ones give multiples of 4). 192 of them,
/// four words of `TWO_OVER_PI_64` chosen by masks from the exponent (no
/// load that depends on the element) and shifted into place, times `m`
/// modulo 2^192 in 32-bit limbs,
/// give `|x| 2/pi mod 4` with more than 120 correct bits after the point;
/// no `f64` lies closer than 2^-62 to a multiple of `pi/2`, so `r` keeps
/// its full precision even there. The two lowest limbs of the product
/// (below 2^-126) are left out; their carry is below 2^-124.
#[inline(always)]
fn reduce_pio2_f64(x: f64) -> (f64, f64, u64) {
    const M32: u64 = 0xffff_ffff;
    const P2M62: f64 = f64::from_bits((1023 - 62) << 52); // 2^-62
    const P2M94: f64 = f64::from_bits((1023 - 94) << 52);
    const P2M126: f64 = f64::from_bits((1023 - 126) << 52);
    let bits = x.to_bits() & 0x7fff_ffff_ffff_ffff;
    let be = (bits >> 52) as i64; // biased exponent: e = be - 1075
    let m = (bits & 0x000f_ffff_ffff_ffff) | 0x0010_0000_0000_0000;
    // Bit i of 2/pi (weight 2^-i) is bit i + 63 of the table (bit 0 =
    // the first word's highest); the window starts at i = e - 1. Only
    // |x| >= pi/4 (be >= 1022, t >= 9) uses it.
    let t = if be < 1013 { 0 } else { (be - 1013) as u64 };
    let (q, s) = ((t >> 6) as usize, (t & 63) as u32);
    // TWO_OVER_PI_64[q + j], j in 0..4, q in 0..=16: the table shifted
    // down by q words, a bit of q at a time (a barrel shifter of masks:
    // 4 + 11 + 7 + 5 + 4 selections, not a load per element).
    let pick = |bit: usize, hi: u64, lo: u64| {
        let m = (((q >> bit) & 1) as u64).wrapping_neg();
        (hi & m) | (lo & !m)
    };
    let t = &TWO_OVER_PI_64;
    let t = [
        pick(4, t[16], t[0]),
        pick(4, t[17], t[1]),
        pick(4, t[18], t[2]),
        pick(4, t[19], t[3]),
        t[4],
        t[5],
        t[6],
        t[7],
        t[8],
        t[9],
        t[10],
        t[11],
        t[12],
        t[13],
        t[14],
        t[15],
        t[16],
        t[17],
        t[18],
    ];
    let t = [
        pick(3, t[8], t[0]),
        pick(3, t[9], t[1]),
        pick(3, t[10], t[2]),
        pick(3, t[11], t[3]),
        pick(3, t[12], t[4]),
        pick(3, t[13], t[5]),
        pick(3, t[14], t[6]),
        pick(3, t[15], t[7]),
        pick(3, t[16], t[8]),
        pick(3, t[17], t[9]),
        pick(3, t[18], t[10]),
    ];
    let t = [
        pick(2, t[4], t[0]),
        pick(2, t[5], t[1]),
        pick(2, t[6], t[2]),
        pick(2, t[7], t[3]),
        pick(2, t[8], t[4]),
        pick(2, t[9], t[5]),
        pick(2, t[10], t[6]),
    ];
    let t = [pick(1, t[2], t[0]), pick(1, t[3], t[1]), pick(1, t[4], t[2]), pick(1, t[5], t[3]), pick(1, t[6], t[4])];
    let w = [pick(0, t[1], t[0]), pick(0, t[2], t[1]), pick(0, t[3], t[2]), pick(0, t[4], t[3])];
    let word = |j: usize| w[j];
    // The 64 bits from bit s of word j on; `>> 1 >> (63 - s)` is
    // `>> (64 - s)` without a shift by 64 at s = 0.
    let window = |j: usize| (word(j) << s) | ((word(j + 1) >> 1) >> (63 - s));
    let (v0, v1, v2) = (window(0), window(1), window(2));
    let (a5, a4, a3, a2, a1, a0) = (v0 >> 32, v0 & M32, v1 >> 32, v1 & M32, v2 >> 32, v2 & M32);
    let (ml, mh) = (m & M32, m >> 32);
    let (l1, l2, l3, l4, l5) = (a1 * ml, a2 * ml, a3 * ml, a4 * ml, a5 * ml);
    let (h0, h1, h2, h3, h4) = (a0 * mh, a1 * mh, a2 * mh, a3 * mh, a4 * mh);
    // Column k: the low halves of products landing at 2^(32k), the high
    // halves of those at 2^(32(k-1)), the carry.
    let c2 = (l2 & M32) + (l1 >> 32) + (h1 & M32) + (h0 >> 32);
    let c3 = (l3 & M32) + (l2 >> 32) + (h2 & M32) + (h1 >> 32) + (c2 >> 32);
    let c4 = (l4 & M32) + (l3 >> 32) + (h3 & M32) + (h2 >> 32) + (c3 >> 32);
    let c5 = (l5 & M32) + (l4 >> 32) + (h4 & M32) + (h3 >> 32) + (c4 >> 32);
    let (d2, d3, d4, d5) = (c2 & M32, c3 & M32, c4 & M32, c5 & M32);
    // d5's top two bits: the quarter turns mod 4; the rest, the fraction,
    // rounded to the nearest quarter turn: signed, in [-1/2, 1/2].
    let up = (d5 >> 29) & 1;
    let n = ((d5 >> 30) + up) & 3;
    // The low 30 bits, minus 2^30 when rounding up.
    let top = u32_to_f64(d5 & 0x3fff_ffff) - u32_to_f64(up) * 1_073_741_824.0;
    let (f, fe) = two_sum(top * (1.0 / 1_073_741_824.0), u32_to_f64(d4) * P2M62);
    let (fh, fl) = two_sum(f, fe + (u32_to_f64(d3) * P2M94 + u32_to_f64(d2) * P2M126));
    // r = (fh + fl) pi/2 in double-double.
    let (ph, pl) = two_prod(fh, PIO2_HI);
    let pl = pl + (fh * PIO2_LO + fl * PIO2_HI);
    let rh = ph + pl;
    let rl = pl - (rh - ph);
    if bits < 0x3fe9_21fb_5444_2d18 {
        (f64::from_bits(bits), 0.0, 0) // |x| < pi/4
    } else {
        (rh, rl, n)
    }
}

/// `(sin r, cos r)` for `r = rh + rl`, `|r| <= pi/4 + ...`, `|rl| <=
/// ulp(rh)`: Taylor series to `r^17` and `r^16` (the first terms left out
/// are below 2^-62 of the result), `rl` through the first derivatives,
/// and `1 - r^2/2` with its rounding error carried (at most 1 ulp each).
#[inline(always)]
fn sincos_dd(rh: f64, rl: f64) -> (f64, f64) {
    let z = rh * rh;
    let mut s = 1.0 / 355_687_428_096_000.0f64; // 1/17!
    s = s * z - 1.0 / 1_307_674_368_000.0;
    s = s * z + 1.0 / 6_227_020_800.0;
    s = s * z - 1.0 / 39_916_800.0;
    s = s * z + 1.0 / 362_880.0;
    s = s * z - 1.0 / 5_040.0;
    s = s * z + 1.0 / 120.0;
    s = s * z - 1.0 / 6.0;
    let hz = 0.5 * z;
    let sin = rh + (rh * z * s + rl * (1.0 - hz));
    let mut c = 1.0 / 20_922_789_888_000.0f64; // 1/16!
    c = c * z - 1.0 / 87_178_291_200.0;
    c = c * z + 1.0 / 479_001_600.0;
    c = c * z - 1.0 / 3_628_800.0;
    c = c * z + 1.0 / 40_320.0;
    c = c * z - 1.0 / 720.0;
    c = c * z + 1.0 / 24.0;
    let w = 1.0 - hz;
    let cos = w + (((1.0 - w) - hz) + (z * z * c - rh * rl));
    (sin, cos)
}

/// `v` negated when `x` is negative (its sign bit).
#[inline(always)]
fn flip_f64(v: f64, x: f64) -> f64 {
    f64::from_bits(v.to_bits() ^ (x.to_bits() & 0x8000_0000_0000_0000))
}

/// Sine (at most 1 ulp, see the tests) over every finite `f64`: the exact
/// reduction of `reduce_pio2_f64`, `sincos_dd`; NaN for NaN and `±inf`.
#[inline(always)]
pub fn sin_f64(x: f64) -> f64 {
    let (rh, rl, n) = reduce_pio2_f64(x);
    let (s, c) = sincos_dd(rh, rl);
    let v = if n & 1 == 0 { s } else { c };
    let v = if n & 2 == 0 { v } else { -v };
    let y = flip_f64(v, x);
    if x.is_finite() {
        y
    } else {
        f64::NAN
    }
}

/// Cosine (as `sin_f64`).
#[inline(always)]
pub fn cos_f64(x: f64) -> f64 {
    let (rh, rl, n) = reduce_pio2_f64(x);
    let (s, c) = sincos_dd(rh, rl);
    let v = if n & 1 == 0 { c } else { -s };
    let v = if n & 2 == 0 { v } else { -v };
    if x.is_finite() {
        v
    } else {
        f64::NAN
    }
}

/// Tangent (as `sin_f64`; at most 2 ulp): `sin r / cos r`, or `-cos r /
/// sin r` in odd quadrants.
#[inline(always)]
pub fn tan_f64(x: f64) -> f64 {
    let (rh, rl, n) = reduce_pio2_f64(x);
    let (s, c) = sincos_dd(rh, rl);
    let v = if n & 1 == 0 { s / c } else { -c / s };
    let y = flip_f64(v, x);
    if x.is_finite() {
        y
    } else {
        f64::NAN
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{err64, sweep64};
    use super::*;
    use std::f64::consts::{FRAC_1_SQRT_2, FRAC_PI_2, FRAC_PI_4, PI};

    /// `sin`, `cos`, `tan` over every exponent (the random bit patterns
    /// reach 1e308), moderate arguments, and the doubles known to lie
    /// closest to a multiple of `pi/2` (where the reduction must keep
    /// about 120 bits), against the platform's libm.
    #[test]
    fn f64_trigonometry() {
        sweep64("sin f64", sin_f64, f64::sin, 1e6, 1.0);
        sweep64("cos f64", cos_f64, f64::cos, 1e6, 1.0);
        sweep64("tan f64", tan_f64, f64::tan, 1e6, 2.0);
        sweep64("sin f64 near zero", sin_f64, f64::sin, 4.0, 1.0);
        sweep64("cos f64 huge", cos_f64, f64::cos, 1e300, 1.0);
        // (x, sin x, cos x, tan x), the values correctly rounded (from a
        // 4000-bit evaluation): near multiples of pi/2 (6381956970095103 *
        // 2^797 lies within 2^-61 of one, where glibc's cos is 8 ulp off
        // and its tan 14), and the ends of the reduction's range.
        let hard = [
            (5.319372648326541e255, 1.0, -4.687165924254628e-19, -2.133485385753704e18),
            (5.176355579349134, -0.8942844888477295, 0.4474988860392339, -1.99840606702499),
            (FRAC_PI_2, 1.0, 6.123233995736766e-17, 1.633123935319537e16),
            (PI, 1.2246467991473532e-16, -1.0, -1.2246467991473532e-16),
            (4.71238898038469, -1.0, -1.8369701987210297e-16, 5443746451065123.0),
            (1e22, -0.8522008497671888, 0.523214785395139, -1.6287782256068988),
            (355.0, -3.014435335948845e-05, -0.999999999545659, 3.0144353373184265e-05),
            (103993.0, -1.9129335778423752e-05, 0.9999999998170342, -1.9129335781923763e-05),
            (f64::MAX, 0.004961954789184062, -0.9999876894265599, -0.004962015874444895),
            // cos of the double below pi/4 rounds one ulp above sin's.
            (FRAC_PI_4, FRAC_1_SQRT_2, f64::from_bits(FRAC_1_SQRT_2.to_bits() + 1), 0.999_999_999_999_999_9),
            (1e-300, 1e-300, 1.0, 1e-300),
        ];
        for (x, s, c, t) in hard {
            for (x, sign) in [(x, 1.0), (-x, -1.0)] {
                let got = [sin_f64(x), cos_f64(x), tan_f64(x)];
                let want = [sign * s, c, sign * t];
                for ((g, w), bound) in got.into_iter().zip(want).zip([1.0, 1.0, 2.0]) {
                    assert!(err64(g, w) <= bound, "{x:e}: {got:?} against {want:?}");
                }
            }
        }
        // Consecutive doubles around multiples of pi/2 up to 2^30: every
        // quadrant boundary the rounding to the nearest quarter turn meets.
        let mut worst = 0.0f64;
        for k in 1..2000u64 {
            let c = (k * k * 271) as f64 * std::f64::consts::FRAC_PI_2;
            let mut x = f64::from_bits(c.to_bits() - 8);
            for _ in 0..16 {
                worst = worst.max(err64(sin_f64(x), x.sin())).max(err64(cos_f64(x), x.cos()));
                x = f64::from_bits(x.to_bits() + 1);
            }
        }
        assert!(worst <= 1.0, "{worst} ulp next to a multiple of pi/2");
    }

    #[test]
    fn special_values() {
        for x in [f64::INFINITY, f64::NEG_INFINITY, f64::NAN, -f64::NAN] {
            assert!(sin_f64(x).is_nan() && cos_f64(x).is_nan() && tan_f64(x).is_nan(), "{x}");
        }
        assert!(sin_f64(-0.0).is_sign_negative() && tan_f64(-0.0).is_sign_negative());
        assert_eq!(sin_f64(0.0).to_bits(), 0);
        assert_eq!(cos_f64(-0.0), 1.0);
        assert_eq!(sin_f64(1e-300), 1e-300);
        assert_eq!(sin_f64(-f64::from_bits(1)), -f64::from_bits(1));
        assert_eq!(tan_f64(1e-200), 1e-200);
    }
}
