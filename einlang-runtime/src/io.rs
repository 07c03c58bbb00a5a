//! `std::io`: `.npy` files, read into the element type and rank the program
//! declares, checked against the declared extents.

use ndarray::{Array, ArrayBase, Data, Dimension};
use ndarray_npy::{ReadableElement, WritableElement};

use crate::Error;

pub(crate) fn io_error(function: &str, path: &str, message: String) -> Error {
    Error::Io { function: function.to_string(), path: path.to_string(), message }
}

/// Reads `path` as an array of `T` with rank `D`, and checks each axis
/// whose extent the program declares (`Some(n)`). A missing file, another
/// element type (dtype), another rank or another extent is an error that
/// names the file.
pub fn load_npy<T, D>(function: &str, path: &str, extents: &[Option<i64>]) -> Result<Array<T, D>, Error>
where
    T: ReadableElement,
    D: Dimension,
{
    let array: Array<T, D> = ndarray_npy::read_npy(path).map_err(|e| io_error(function, path, e.to_string()))?;
    for (axis, (want, got)) in extents.iter().zip(array.shape()).enumerate() {
        if let Some(want) = want {
            if *want < 0 || *want as usize != *got {
                return Err(io_error(
                    function,
                    path,
                    format!("axis {axis} has length {got}, but the program declares {want}"),
                ));
            }
        }
    }
    Ok(array)
}

/// Writes `array` to `path` in `.npy` format.
pub fn save_npy<T, S, D>(function: &str, path: &str, array: &ArrayBase<S, D>) -> Result<(), Error>
where
    T: WritableElement,
    S: Data<Elem = T>,
    D: Dimension,
{
    ndarray_npy::write_npy(path, array).map_err(|e| io_error(function, path, e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{array, Array2, Ix1, Ix2};

    #[test]
    fn round_trip_and_checks() {
        let dir = std::env::temp_dir().join(format!("einlang-io-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let temp = |name: &str| dir.join(name).to_string_lossy().into_owned();
        let path = temp("a.npy");
        let a = array![[1.0f32, 2.0, 3.0], [4.0, 5.0, 6.0]];
        save_npy("f", &path, &a).unwrap();
        let b: Array2<f32> = load_npy::<f32, Ix2>("f", &path, &[Some(2), None]).unwrap();
        assert_eq!(a, b);
        let wrong_extent = load_npy::<f32, Ix2>("f", &path, &[Some(3), None]).unwrap_err();
        assert!(wrong_extent.to_string().contains("a.npy"), "{wrong_extent}");
        assert!(load_npy::<f32, Ix1>("f", &path, &[None]).is_err(), "rank differs");
        assert!(load_npy::<f64, Ix2>("f", &path, &[None, None]).is_err(), "dtype differs");
        let missing = load_npy::<f32, Ix1>("f", &temp("missing.npy"), &[None]).unwrap_err();
        assert!(missing.to_string().contains("missing.npy"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
