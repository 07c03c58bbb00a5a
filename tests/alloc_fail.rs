//! Sizes that come from run-time values never take the process down: a
//! tensor the allocator has no room for is `Err(Error::Alloc)` naming the
//! function, the tensor and the bytes; an extent whose arithmetic overflows
//! `i64` is `Err(Error::Extent)` naming the expression. Nothing is left
//! behind: the next call works.
//!
//! Requests past any address space (petabytes) fail on every platform, and
//! run here directly. The rest runs in a child process (this binary again)
//! under a lowered address-space limit (`ulimit -v`, Linux only), where a
//! request of tens of gigabytes fails whatever the machine's memory and
//! overcommit policy.

use einlang::einlang;
use einlang::ndarray::{Array1, Array2};
use einlang::Error;

einlang! {
    /// `0, 1, .., n - 1`: the extent is the parameter.
    pub fn ramp(n: i64) -> [f64; ?] {
        let r[i in 0..n] = i as f64;
        r
    }

    /// The outer product of two vectors.
    pub fn outer(a: [f32; N], b: [f32; M]) -> [f32; N, M] {
        let o[i, j] = a[i] * b[j];
        o
    }

    /// `x` repeated `reps` times: the extent `reps * N` overflows `i64` for
    /// a large `reps`.
    pub fn tile(x: [f32; N], reps: i64) -> [f32; ?] {
        let y[i in 0..reps * N] = x[i % N];
        y
    }

    /// A recurrence stored whole (its tensor starts as zeros), of a
    /// run-time length.
    pub fn running(n: i64) -> [f64; ?] {
        let s[0] = 1.0;
        let s[i in 1..n] = s[i - 1] * 0.5 + 1.0;
        s
    }

    /// Twice `x`.
    pub fn double(x: [f64; N, M]) -> [f64; N, M] {
        let y[i, j] = 2.0 * x[i, j];
        y
    }
}

/// The variable that makes a run of this binary the child.
const CHILD: &str = "EINLANG_ALLOC_FAIL_CHILD";

/// The child's address-space limit: 32 GiB (in KiB, as `ulimit -v` takes
/// it). Far above what the tests use (rayon's threads and the allocator's
/// arenas reserve address space too), far below what they request.
const LIMIT_KIB: u64 = 32 << 20;

fn alloc(function: &str, tensor: &str, bytes: usize) -> Error {
    Error::Alloc { function: function.into(), tensor: tensor.into(), bytes }
}

fn ramp_ok() {
    assert_eq!(ramp(5).unwrap(), Array1::from(vec![0.0, 1.0, 2.0, 3.0, 4.0]));
}

#[test]
fn a_tensor_past_any_address_space_is_an_error_and_the_next_call_works() {
    for _ in 0..3 {
        assert_eq!(ramp(1 << 50).unwrap_err(), alloc("ramp", "r", 1 << 53));
        ramp_ok();
    }
    let e = ramp(1 << 50).unwrap_err();
    assert_eq!(e.to_string(), "out of memory in `ramp`: cannot allocate 9007199254740992 bytes (8 PiB) for `r`");
    // A recurrence's tensor, allocated as zeros.
    assert_eq!(running(1 << 50).unwrap_err(), alloc("running", "s", 1 << 53));
    let s = running(4).unwrap();
    assert_eq!(s, Array1::from(vec![1.0, 1.5, 1.75, 1.875]));
}

#[test]
fn a_strided_argument_too_large_to_copy_is_an_error() {
    // One element seen 2^50 times (strides 0): the argument's copy in
    // standard layout would take 8 PiB, and so would the result. (Under
    // `checked`, arguments are read through their strides: the result is
    // the first request.)
    let one = einlang::ndarray::Array0::from_elem((), 1.5f64);
    let wide = one.broadcast((1usize << 25, 1usize << 25)).unwrap();
    let first = if cfg!(feature = "checked") { "y" } else { "x" };
    assert_eq!(double(wide).unwrap_err(), alloc("double", first, 1 << 53));
    // A small strided argument is copied and read correctly.
    let x = Array2::from_shape_fn((3, 4), |(i, j)| (i * 4 + j) as f64);
    let y = double(x.t()).unwrap();
    assert_eq!(y, Array2::from_shape_fn((4, 3), |(i, j)| (2 * (j * 4 + i)) as f64));
}

#[test]
fn a_size_past_isize_is_an_error() {
    // 2^62 elements of 8 bytes: the byte count overflows.
    match ramp(1 << 62).unwrap_err() {
        Error::Extent { function, message } => {
            assert_eq!(function, "ramp");
            assert!(message.contains("too large"), "{message}");
        }
        e => panic!("{e:?}"),
    }
    ramp_ok();
}

#[test]
fn an_overflowing_extent_names_the_expression() {
    let x = Array1::from(vec![1.0f32, 2.0, 3.0, 4.0]);
    let e = tile(&x, 1 << 62).unwrap_err();
    assert_eq!(e, Error::Extent { function: "tile".into(), message: "the extent `reps * N` overflows `i64`".into() });
    assert!(e.to_string().contains("`reps * N` overflows"), "{e}");
    // Below the overflow, a negative product is the negative-extent error.
    assert!(matches!(tile(&x, -1).unwrap_err(), Error::Extent { .. }));
    assert_eq!(tile(&x, 2).unwrap(), Array1::from(vec![1.0, 2.0, 3.0, 4.0, 1.0, 2.0, 3.0, 4.0]));
}

/// Runs in the child only (see [`under_a_lowered_address_space_limit`]).
#[test]
#[ignore = "run by under_a_lowered_address_space_limit, in a child process under a memory limit"]
fn limited_child() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    // 64 GiB: past the limit, though a machine might hold it.
    for _ in 0..3 {
        assert_eq!(ramp(1 << 33).unwrap_err(), alloc("ramp", "r", 1 << 36));
        ramp_ok();
    }
    // The outer product of two vectors of 2^20: 4 TiB.
    let a = Array1::from_iter((0..1 << 20).map(|v| v as f32));
    let b = Array1::from_iter((0..1 << 20).map(|v| 1.0 - v as f32));
    assert_eq!(outer(&a, &b).unwrap_err(), alloc("outer", "o", 4 << 40));
    let small = outer(&a.slice(einlang::ndarray::s![..3]), &b.slice(einlang::ndarray::s![..2])).unwrap();
    assert_eq!(small, Array2::from_shape_vec((3, 2), vec![0.0, 0.0, 1.0, 0.0, 2.0, 0.0]).unwrap());
    // And a recurrence's zeros of 64 GiB.
    assert_eq!(running(1 << 33).unwrap_err(), alloc("running", "s", 1 << 36));
    assert_eq!(running(2).unwrap(), Array1::from(vec![1.0, 1.5]));
    ramp_ok();
}

#[test]
#[cfg(target_os = "linux")]
fn under_a_lowered_address_space_limit() {
    if std::env::var_os(CHILD).is_some() {
        return;
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    // `sh` lowers the limit and becomes the child; 77 when it cannot.
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {LIMIT_KIB} 2>/dev/null || exit 77; exec \"$0\" \"$@\""))
        .arg(&exe)
        .args(["limited_child", "--exact", "--ignored", "--test-threads=1", "--nocapture"])
        .env(CHILD, "1")
        .status();
    match status {
        Ok(s) if s.code() == Some(77) => eprintln!("skipped: `ulimit -v` is not available here"),
        Ok(s) => assert!(s.success(), "the child under the limit failed: {s}"),
        Err(e) => eprintln!("skipped: no `sh` to lower the limit with: {e}"),
    }
}
