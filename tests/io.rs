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
