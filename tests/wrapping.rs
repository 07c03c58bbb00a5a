//! Integer overflow wraps (two's complement) in every build: `+ - *`,
//! negation, `**`, the accumulation of `sum` and `prod`, and recurrences.
//! Integration tests run in debug mode, where Rust's own operators panic on
//! overflow, so each test here would panic if generated code used them.
//! Division and remainder by zero are an `Err`; `MIN / -1` wraps to `MIN`
//! and `MIN % -1` is 0.
//!
//! Every expected value comes from Rust's `wrapping_*` methods in a plain
//! loop, or is derived by hand in a comment.

use einlang::einlang;
use einlang::ndarray::{array, Array1, Array2};
use einlang::Error;

einlang! {
    use std::math::pow;

    // ----- hashes and checksums --------------------------------------------

    /// DJB2 over bytes: `h = h * 33 + byte`, from 5381, in `u32`.
    pub fn djb2(x: [u8; N]) -> u32 {
        let h[0] = 5381u32 * 33 + x[0] as u32;
        let h[t in 1..N] = h[t - 1] * 33 + x[t] as u32;
        h[N - 1]
    }

    /// An FNV-style 64-bit hash: the FNV offset basis and prime, with `+`
    /// where FNV-1a has `xor` (the language has no bitwise operators):
    /// `h = (h + x) * prime`.
    pub fn fnv_add(x: [u64; N]) -> u64 {
        let h[0] = (14695981039346656037u64 + x[0]) * 1099511628211;
        let h[t in 1..N] = (h[t - 1] + x[t]) * 1099511628211;
        h[N - 1]
    }

    /// The same hash over `i64`: the same bits, read as signed.
    pub fn fnv_add_signed(x: [i64; N]) -> i64 {
        let h[0] = (-3750763034362895579i64 + x[0]) * 1099511628211;
        let h[t in 1..N] = (h[t - 1] + x[t]) * 1099511628211;
        h[N - 1]
    }

    /// Java's `hashCode` of an `i32` array as a sum of powers:
    /// `sum x[i] * 31^(N - 1 - i)`, every step in `i32`.
    pub fn poly_hash(x: [i32; N]) -> i32 {
        sum[i](x[i] * 31i32 ** ((N - 1 - i) as i32))
    }

    /// The same hash as a recurrence, Horner's rule: `h = 31 * h + x`.
    pub fn poly_hash_horner(x: [i32; N]) -> i32 {
        let h[0] = x[0];
        let h[t in 1..N] = 31 * h[t - 1] + x[t];
        h[N - 1]
    }

    // ----- operators ---------------------------------------------------------

    pub fn ops_i8(a: i8, b: i8) -> (i8, i8, i8) { (a + b, a - b, a * b) }
    pub fn ops_i16(a: i16, b: i16) -> (i16, i16, i16) { (a + b, a - b, a * b) }
    pub fn ops_i32(a: i32, b: i32) -> (i32, i32, i32) { (a + b, a - b, a * b) }
    pub fn ops_i64(a: i64, b: i64) -> (i64, i64, i64) { (a + b, a - b, a * b) }
    pub fn ops_u8(a: u8, b: u8) -> (u8, u8, u8) { (a + b, a - b, a * b) }
    pub fn ops_u32(a: u32, b: u32) -> (u32, u32, u32) { (a + b, a - b, a * b) }
    pub fn ops_u64(a: u64, b: u64) -> (u64, u64, u64) { (a + b, a - b, a * b) }

    /// Operators with literals, which take the operand's type.
    pub fn affine_u8(a: u8) -> u8 { a * 200 + 100 - 7 }
    pub fn affine_i32(a: i32) -> i32 { a * 1000000 + 2000000000 }

    /// Whole-tensor and indexed arithmetic on `u8` elements.
    pub fn scale_u8(x: [u8; N], k: u8) -> [u8; N] { x * k + 1 }
    pub fn square_minus_u8(x: [u8; N], k: u8) -> [u8; N] {
        let y[i] = x[i] * x[i] - k;
        y
    }

    pub fn neg_i8(a: i8) -> i8 { -a }
    pub fn neg_i32(a: i32) -> i32 { -a }
    pub fn neg_i64(a: i64) -> i64 { -a }
    pub fn neg_tensor(x: [i32; N]) -> [i32; N] { -x }
    pub fn neg_indexed(x: [i64; N]) -> [i64; N] {
        let y[i] = -x[i];
        y
    }

    // ----- powers -------------------------------------------------------------

    pub fn pow_i32(a: i32, e: i32) -> i32 { a ** e }
    pub fn pow_i64(a: i64, e: i64) -> i64 { a ** e }
    pub fn pow_u8(a: u8, e: u8) -> u8 { a ** e }
    pub fn cube_i32(a: i32) -> i32 { a ** 3 }
    pub fn pow41_i64(a: i64) -> i64 { pow(a, 41) }
    pub fn pow_tensor(x: [u32; N], e: u32) -> [u32; N] { x ** e }

    // ----- reductions ---------------------------------------------------------

    pub fn total_i32(x: [i32; N]) -> i32 { sum[i](x[i]) }
    pub fn total_u8(x: [u8; N]) -> u8 { sum[i](x[i]) }
    pub fn product_i64(x: [i64; N]) -> i64 { prod[i](x[i]) }
    pub fn dot_i32(a: [i32; N], b: [i32; N]) -> i32 { sum[i](a[i] * b[i]) }
    pub fn row_products(m: [u32; R, C]) -> [u32; R] {
        let p[r] = prod[c](m[r, c]);
        p
    }
    pub fn matmul_i32(a: [i32; M, K], b: [i32; K, N]) -> [i32; M, N] {
        let c[i, j] = sum[k](a[i, k] * b[k, j]);
        c
    }

    // ----- recurrences --------------------------------------------------------

    /// The C standard's example generator, every state kept.
    pub fn lcg_u32(seed: u32, steps: i64) -> [u32; ?] {
        let s[0] = seed;
        let s[t in 1..steps] = s[t - 1] * 1103515245 + 12345;
        s
    }

    /// The same in `i32`, only the last state observed (a circular buffer).
    pub fn lcg_i32_last(seed: i32, steps: i64) -> i32 {
        let s[0] = seed;
        let s[t in 1..steps] = s[t - 1] * 1103515245 + 12345;
        s[steps - 1]
    }

    /// A running sum (a scan) of bytes, in `u8`.
    pub fn running_sum_u8(x: [u8; N]) -> [u8; N] {
        let c[0] = x[0];
        let c[t in 1..N] = c[t - 1] + x[t];
        c
    }

    /// Fibonacci past `F(46)`, the last that fits an `i32`.
    pub fn fib_i32(n: i64) -> i32 {
        let f[0] = 0i32;
        let f[1] = 1;
        let f[i in 2..n] = f[i - 1] + f[i - 2];
        f[n - 1]
    }

    // ----- division -------------------------------------------------------------

    pub fn div_i32(a: i32, b: i32) -> i32 { a / b }
    pub fn rem_i32(a: i32, b: i32) -> i32 { a % b }
    pub fn div_i64(a: i64, b: i64) -> (i64, i64) { (a / b, a % b) }
    pub fn div_i8(a: i8, b: i8) -> (i8, i8) { (a / b, a % b) }
    pub fn div_u8(a: u8, b: u8) -> (u8, u8) { (a / b, a % b) }
    pub fn ratios(x: [i32; N], d: [i32; N]) -> [i32; N] {
        let y[i] = x[i] / d[i];
        y
    }
}

/// Edge values and a few ordinary ones of an integer type.
macro_rules! samples {
    ($t:ty) => {{
        let mut v: Vec<$t> = vec![<$t>::MIN, <$t>::MIN + 1, <$t>::MAX, <$t>::MAX - 1, 0, 1, 2, 3, 7, 100];
        v.push(<$t>::MAX / 2);
        v.push(<$t>::MAX / 2 + 1);
        v.push((<$t>::MAX as u64 / 3) as $t);
        v
    }};
}

/// `ops(a, b) == (a.wrapping_add(b), a.wrapping_sub(b), a.wrapping_mul(b))`
/// for every pair of samples.
macro_rules! check_ops {
    ($f:ident, $values:expr) => {{
        let values = $values;
        for &a in &values {
            for &b in &values {
                let want = (a.wrapping_add(b), a.wrapping_sub(b), a.wrapping_mul(b));
                assert_eq!($f(a, b).unwrap(), want, "{}({a}, {b})", stringify!($f));
            }
        }
    }};
}

// ---------------------------------------------------------------------------
// Hashes
// ---------------------------------------------------------------------------

#[test]
fn djb2_hash_matches_a_wrapping_loop() {
    let text = b"The quick brown fox jumps over the lazy dog, 0123456789 times over.";
    let mut want = 5381u32;
    for &b in text {
        want = want.wrapping_mul(33).wrapping_add(b as u32);
    }
    let x = Array1::from(text.to_vec());
    assert_eq!(djb2(&x).unwrap(), want);
    // DJB2("a") = 5381 * 33 + 97 = 177670, no overflow yet.
    assert_eq!(djb2(&array![b'a']).unwrap(), 177_670);
}

#[test]
fn fnv_style_hash_matches_a_wrapping_loop_in_u64_and_i64() {
    let data: Vec<u64> = (0..200u64).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (i << 7)).collect();
    let mut want = 0xcbf2_9ce4_8422_2325u64;
    for &x in &data {
        want = want.wrapping_add(x).wrapping_mul(0x0000_0100_0000_01b3);
    }
    assert_eq!(fnv_add(&Array1::from(data.clone())).unwrap(), want);
    // The signed version computes the same bits.
    let signed: Vec<i64> = data.iter().map(|&x| x as i64).collect();
    assert_eq!(fnv_add_signed(&Array1::from(signed)).unwrap(), want as i64);
}

#[test]
fn polynomial_hash_as_a_sum_and_as_a_recurrence() {
    let data: Vec<i32> = (0..50).map(|i: i32| i.wrapping_mul(0x2545_F491).wrapping_sub(i * 977)).collect();
    // Java's `Arrays.hashCode` without the leading 1: h = 31 * h + x.
    let mut want = 0i32;
    for &x in &data {
        want = want.wrapping_mul(31).wrapping_add(x);
    }
    let x = Array1::from(data);
    assert_eq!(poly_hash_horner(&x).unwrap(), want);
    assert_eq!(poly_hash(&x).unwrap(), want);
    // Short enough not to overflow: 1 * 31^2 + 2 * 31 + 3 = 1026.
    assert_eq!(poly_hash(&array![1, 2, 3]).unwrap(), 1026);
}

// ---------------------------------------------------------------------------
// Operators
// ---------------------------------------------------------------------------

#[test]
fn add_sub_mul_wrap_exhaustively_for_i8_and_u8() {
    check_ops!(ops_i8, (i8::MIN..=i8::MAX).collect::<Vec<i8>>());
    check_ops!(ops_u8, (u8::MIN..=u8::MAX).collect::<Vec<u8>>());
}

#[test]
fn add_sub_mul_wrap_at_the_edges_of_every_type() {
    check_ops!(ops_i16, samples!(i16));
    check_ops!(ops_i32, samples!(i32));
    check_ops!(ops_i64, samples!(i64));
    check_ops!(ops_u32, samples!(u32));
    check_ops!(ops_u64, samples!(u64));
    // By hand: i32::MAX + 1 == i32::MIN, 0u8 - 1 == 255, 16u8 * 16 == 0.
    assert_eq!(ops_i32(i32::MAX, 1).unwrap().0, i32::MIN);
    assert_eq!(ops_u8(0, 1).unwrap().1, 255);
    assert_eq!(ops_u8(16, 16).unwrap().2, 0);
}

#[test]
fn literal_operands_wrap_in_the_operand_type() {
    for a in u8::MIN..=u8::MAX {
        assert_eq!(affine_u8(a).unwrap(), a.wrapping_mul(200).wrapping_add(100).wrapping_sub(7), "a = {a}");
    }
    for a in samples!(i32) {
        assert_eq!(affine_i32(a).unwrap(), a.wrapping_mul(1_000_000).wrapping_add(2_000_000_000), "a = {a}");
    }
    // 3 * 1e6 + 2e9 = 2_003_000_000 fits; 148 * 1e6 + 2e9 wraps to
    // 2_148_000_000 - 2^32 = -2_146_967_296.
    assert_eq!(affine_i32(3).unwrap(), 2_003_000_000);
    assert_eq!(affine_i32(148).unwrap(), -2_146_967_296);
}

#[test]
fn tensor_arithmetic_wraps_elementwise() {
    let x: Array1<u8> = (0..=255u8).collect();
    let want: Array1<u8> = x.mapv(|v| v.wrapping_mul(7).wrapping_add(1));
    assert_eq!(scale_u8(&x, 7).unwrap(), want);
    let want: Array1<u8> = x.mapv(|v| v.wrapping_mul(v).wrapping_sub(200));
    assert_eq!(square_minus_u8(&x, 200).unwrap(), want);
}

#[test]
fn negation_of_min_wraps_to_min() {
    assert_eq!(neg_i8(i8::MIN).unwrap(), i8::MIN);
    assert_eq!(neg_i8(-127).unwrap(), 127);
    assert_eq!(neg_i32(i32::MIN).unwrap(), i32::MIN);
    assert_eq!(neg_i32(5).unwrap(), -5);
    assert_eq!(neg_i64(i64::MIN).unwrap(), i64::MIN);
    assert_eq!(neg_i64(i64::MAX).unwrap(), i64::MIN + 1);
    assert_eq!(neg_tensor(&array![i32::MIN, -1, 0, i32::MAX]).unwrap(), array![i32::MIN, 1, 0, -i32::MAX]);
    assert_eq!(neg_indexed(&array![i64::MIN, 3]).unwrap(), array![i64::MIN, -3]);
}

// ---------------------------------------------------------------------------
// Powers
// ---------------------------------------------------------------------------

#[test]
fn integer_powers_wrap() {
    // 2^31 is i32::MIN's bit pattern; 2^32 leaves only zero bits.
    assert_eq!(pow_i32(2, 31).unwrap(), i32::MIN);
    assert_eq!(pow_i32(2, 32).unwrap(), 0);
    assert_eq!(pow_i32(2, 30).unwrap(), 1 << 30);
    for (a, e) in [(3i32, 20), (-7, 13), (10, 10), (i32::MAX, 2), (i32::MIN, 3), (12345, 0)] {
        assert_eq!(pow_i32(a, e).unwrap(), a.wrapping_pow(e as u32), "{a} ** {e}");
    }
    for a in [3i32, -5, 1291, i32::MAX, i32::MIN] {
        assert_eq!(cube_i32(a).unwrap(), a.wrapping_mul(a).wrapping_mul(a), "{a} ** 3");
    }
    // 3^6 = 729 = 2 * 256 + 217.
    assert_eq!(pow_u8(3, 6).unwrap(), 217);
    for a in 0..=255u8 {
        assert_eq!(pow_u8(a, 5).unwrap(), (0..5).fold(1u8, |p, _| p.wrapping_mul(a)), "{a} ** 5");
    }
    for a in [3i64, -3, 10, 123_456_789] {
        assert_eq!(pow41_i64(a).unwrap(), (0..41).fold(1i64, |p, _| p.wrapping_mul(a)), "pow({a}, 41)");
        assert_eq!(pow_i64(a, 41).unwrap(), pow41_i64(a).unwrap());
    }
    // Exponents past u32: 3 has order 2^62 modulo 2^64, so
    // 3^(2^62 + 5) == 3^5 == 243; 2^(2^40) has no bits left.
    assert_eq!(pow_i64(3, (1 << 62) + 5).unwrap(), 243);
    assert_eq!(pow_i64(2, 1 << 40).unwrap(), 0);
    assert_eq!(pow_i64(-1, i64::MAX).unwrap(), -1);
    let x = array![2u32, 3, 65536, 7];
    assert_eq!(pow_tensor(&x, 3).unwrap(), x.mapv(|v| v.wrapping_pow(3)));
}

#[test]
fn a_negative_integer_exponent_is_an_error() {
    assert!(matches!(pow_i32(2, -1), Err(Error::Arithmetic { .. })));
    assert!(matches!(pow_i64(1, -5), Err(Error::Arithmetic { .. })));
}

// ---------------------------------------------------------------------------
// Reductions
// ---------------------------------------------------------------------------

#[test]
fn sum_and_prod_accumulate_with_wrapping() {
    let x = array![i32::MAX, 1, 1, i32::MAX, -5];
    assert_eq!(total_i32(&x).unwrap(), x.iter().fold(0i32, |s, &v| s.wrapping_add(v)));
    // MAX + 1 is MIN, + 1 + MAX = 0, - 5 = -5.
    assert_eq!(total_i32(&x).unwrap(), -5);

    let bytes: Array1<u8> = (0..=255u8).collect();
    // 0 + 1 + ... + 255 = 32640 = 127 * 256 + 128.
    assert_eq!(total_u8(&bytes).unwrap(), 128);

    let factors: Array1<i64> = (1..=30i64).collect();
    assert_eq!(product_i64(&factors).unwrap(), (1..=30i64).fold(1i64, |p, v| p.wrapping_mul(v)));

    let a: Array1<i32> = (0..64).map(|i: i32| i.wrapping_mul(0x3C6E_F372)).collect();
    let b: Array1<i32> = (0..64).map(|i: i32| 0x7FFF_0000 - i * 31).collect();
    let want = a.iter().zip(&b).fold(0i32, |s, (&p, &q)| s.wrapping_add(p.wrapping_mul(q)));
    assert_eq!(dot_i32(&a, &b).unwrap(), want);

    let m = Array2::from_shape_fn((3, 40), |(r, c)| {
        ((r * 40 + c) as u32).wrapping_mul(2_654_435_761).wrapping_add(c as u32)
    });
    let want: Array1<u32> = m.rows().into_iter().map(|row| row.iter().fold(1u32, |p, &v| p.wrapping_mul(v))).collect();
    assert_eq!(row_products(&m).unwrap(), want);
}

#[test]
fn integer_matrix_product_wraps() {
    let a = Array2::from_shape_fn((4, 9), |(i, k)| (i as i32 + 1) * 0x1234_5678 - k as i32 * 0x0101_0101);
    let b = Array2::from_shape_fn((9, 5), |(k, j)| i32::MAX - (k * 5 + j) as i32 * 7919);
    let want = Array2::from_shape_fn((4, 5), |(i, j)| {
        (0..9).fold(0i32, |s, k| s.wrapping_add(a[[i, k]].wrapping_mul(b[[k, j]])))
    });
    assert_eq!(matmul_i32(&a, &b).unwrap(), want);
}

// ---------------------------------------------------------------------------
// Recurrences
// ---------------------------------------------------------------------------

#[test]
fn linear_congruential_generator_wraps() {
    for seed in [0u32, 1, 42, u32::MAX] {
        let mut want = vec![seed];
        for t in 1..100 {
            let prev: u32 = want[t - 1];
            want.push(prev.wrapping_mul(1_103_515_245).wrapping_add(12_345));
        }
        assert_eq!(lcg_u32(seed, 100).unwrap(), Array1::from(want.clone()), "seed {seed}");
        // The i32 version computes the same bits.
        assert_eq!(lcg_i32_last(seed as i32, 100).unwrap(), want[99] as i32, "seed {seed}");
    }
    // By hand: 1 * 1103515245 + 12345 = 1103527590, which fits; the next
    // step overflows.
    assert_eq!(lcg_u32(1, 2).unwrap(), array![1, 1_103_527_590]);
}

#[test]
fn scans_and_fibonacci_wrap() {
    let x: Array1<u8> = (0..100u8).map(|i| i.wrapping_mul(37)).collect();
    let mut acc = 0u8;
    let want: Array1<u8> = x
        .iter()
        .map(|&v| {
            acc = acc.wrapping_add(v);
            acc
        })
        .collect();
    assert_eq!(running_sum_u8(&x).unwrap(), want);

    let mut f = vec![0i32, 1];
    while f.len() < 60 {
        let k = f.len();
        f.push(f[k - 1].wrapping_add(f[k - 2]));
    }
    // F(46) = 1836311903 is the last Fibonacci number that fits an i32.
    assert_eq!(fib_i32(47).unwrap(), 1_836_311_903);
    assert_eq!(fib_i32(60).unwrap(), f[59]);
}

// ---------------------------------------------------------------------------
// Division
// ---------------------------------------------------------------------------

#[test]
fn division_and_remainder_by_zero_are_errors() {
    assert!(matches!(div_i32(1, 0), Err(Error::Arithmetic { .. })));
    assert!(matches!(rem_i32(1, 0), Err(Error::Arithmetic { .. })));
    assert!(matches!(div_i32(0, 0), Err(Error::Arithmetic { .. })));
    assert!(matches!(div_i64(i64::MIN, 0), Err(Error::Arithmetic { .. })));
    assert!(matches!(div_i8(-1, 0), Err(Error::Arithmetic { .. })));
    assert!(matches!(div_u8(200, 0), Err(Error::Arithmetic { .. })));
    // Inside a tensor definition the first zero divisor ends the function.
    assert!(matches!(ratios(&array![4, 6, 8], &array![2, 0, 4]), Err(Error::Arithmetic { .. })));
    assert_eq!(ratios(&array![4, -7, 8], &array![2, 2, -4]).unwrap(), array![2, -3, -2]);
    let message = div_i32(7, 0).unwrap_err().to_string();
    assert!(message.contains("div_i32") && message.contains("zero"), "{message}");
}

#[test]
fn min_divided_by_minus_one_wraps() {
    assert_eq!(div_i32(i32::MIN, -1).unwrap(), i32::MIN);
    assert_eq!(rem_i32(i32::MIN, -1).unwrap(), 0);
    assert_eq!(div_i64(i64::MIN, -1).unwrap(), (i64::MIN, 0));
    assert_eq!(div_i8(i8::MIN, -1).unwrap(), (i8::MIN, 0));
    // Truncation toward zero and the dividend's sign, as in Rust.
    assert_eq!(div_i64(-7, 2).unwrap(), (-3, -1));
    assert_eq!(div_u8(255, 16).unwrap(), (15, 15));
    for a in i8::MIN..=i8::MAX {
        for b in (i8::MIN..=i8::MAX).filter(|b| *b != 0) {
            assert_eq!(div_i8(a, b).unwrap(), (a.wrapping_div(b), a.wrapping_rem(b)), "{a} / {b}");
        }
    }
}
