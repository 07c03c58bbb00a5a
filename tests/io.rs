//! `std::io`: `.npy` files read with a declared type and written back.

use einlang::einlang;
use einlang::ndarray::{array, Array2};

einlang! {
    use std::io::{load_npy, save_npy};

    /// The sum of a 2 x ? matrix stored in `path`.
    pub fn total(path: str) -> f32 {
        let w = load_npy(path) as [f32; 2, C];
        sum[i, j](w[i, j])
    }

    /// Reads an int8 matrix of the same shape as `like`, doubles it into i32
    /// and writes it to `out`.
    pub fn double_to(path: str, out: str, like: [f32; R, C]) -> [i32; R, C] {
        let q = load_npy(path) as [i8; R, C];
        let d[r, c] = q[r, c] as i32 * 2;
        save_npy(out, d);
        d
    }

    /// Reads an `f16` vector (numpy's `float16`), writes it doubled to
    /// `out` and returns its `f32` sum.
    pub fn half_to(path: str, out: str) -> f32 {
        let h = load_npy(path) as [f16; N];
        let d[i] = h[i] * 2;
        save_npy(out, d);
        sum[i](h[i] as f32)
    }

    /// Saves a `bf16` vector (numpy has no such dtype).
    pub fn save_bf16(out: str, x: [bf16; N]) {
        save_npy(out, x);
    }

    /// Loads a `bf16` vector.
    pub fn load_bf16(path: str) -> [bf16; 3] {
        load_npy(path) as [bf16; 3]
    }
}

/// A directory of this test's own, removed when it goes out of scope.
struct Scratch(std::path::PathBuf);

impl Scratch {
    fn new(test: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("einlang-io-test-{test}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn file(&self, name: &str) -> String {
        self.0.join(name).to_string_lossy().into_owned()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn load_with_a_declared_type() {
    let dir = Scratch::new("load");
    let path = dir.file("m.npy");
    ndarray_npy::write_npy(&path, &array![[1.0f32, 2.0, 3.0], [4.0, 5.0, 6.5]]).unwrap();
    assert_eq!(total(&path).unwrap(), 21.5);
}

#[test]
fn mismatches_and_missing_files_are_errors_naming_the_file() {
    let dir = Scratch::new("mismatches");
    let path = dir.file("three_rows.npy");
    ndarray_npy::write_npy(&path, &Array2::<f32>::zeros((3, 2))).unwrap();
    let e = total(&path).unwrap_err();
    assert!(matches!(e, einlang::Error::Io { .. }), "{e}");
    assert!(e.to_string().contains("three_rows.npy"), "{e}");
    let dtype = dir.file("f64.npy");
    ndarray_npy::write_npy(&dtype, &Array2::<f64>::zeros((2, 2))).unwrap();
    assert!(total(&dtype).is_err());
    let missing = total(&dir.file("nope.npy")).unwrap_err();
    assert!(missing.to_string().contains("nope.npy"), "{missing}");
}

#[test]
fn save_round_trips() {
    let dir = Scratch::new("save");
    let (src, out) = (dir.file("q.npy"), dir.file("d.npy"));
    ndarray_npy::write_npy(&src, &array![[1i8, -2], [3, 127]]).unwrap();
    let d = double_to(&src, &out, &Array2::<f32>::zeros((2, 2))).unwrap();
    assert_eq!(d, array![[2, -4], [6, 254]]);
    let back: Array2<i32> = ndarray_npy::read_npy(&out).unwrap();
    assert_eq!(back, d);
    // The declared shape comes from `like`: another shape is an error.
    assert!(double_to(&src, &out, &Array2::<f32>::zeros((3, 2))).is_err());
}

/// `f16` tensors read and write numpy's `float16` (`<f2`); `bf16`, which
/// numpy has no dtype for, is an `Error::Io` that says so.
#[test]
fn half_precision_files() {
    use einlang::half::{bf16, f16};
    let dir = Scratch::new("half");
    let (src, out) = (dir.file("h.npy"), dir.file("d.npy"));
    // `np.save` of `np.array([1.5, -0.25, 65504], dtype=np.float16)`.
    let mut bytes = b"\x93NUMPY\x01\x00\x76\x00{'descr': '<f2', 'fortran_order': False, 'shape': (3,), }".to_vec();
    bytes.resize(127, b' ');
    bytes.push(b'\n');
    bytes.extend([0x00, 0x3e, 0x00, 0xb4, 0xff, 0x7b]);
    std::fs::write(&src, &bytes).unwrap();
    assert_eq!(half_to(&src, &out).unwrap(), 1.5 - 0.25 + 65504.0);
    let back = load_f16(&out);
    assert_eq!(back, vec![f16::from_f32(3.0), f16::from_f32(-0.5), f16::INFINITY]);
    // An f32 file is not an f16 one.
    ndarray_npy::write_npy(&src, &array![1.0f32, 2.0, 3.0]).unwrap();
    assert!(matches!(half_to(&src, &out), Err(einlang::Error::Io { .. })));
    let x = einlang::ndarray::Array1::from_elem(3, bf16::ONE);
    for e in [save_bf16(&out, &x).unwrap_err(), load_bf16(&out).unwrap_err()] {
        assert!(matches!(e, einlang::Error::Io { .. }), "{e}");
        assert!(e.to_string().contains("bf16") && e.to_string().contains("numpy"), "{e}");
    }
}

/// The elements of a one-dimensional `<f2` file, read by hand.
fn load_f16(path: &str) -> Vec<einlang::half::f16> {
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(&bytes[..10], b"\x93NUMPY\x01\x00\x76\x00");
    assert!(String::from_utf8_lossy(&bytes[10..128]).contains("'descr': '<f2'"));
    bytes[128..].chunks(2).map(|b| einlang::half::f16::from_bits(u16::from_le_bytes([b[0], b[1]]))).collect()
}
