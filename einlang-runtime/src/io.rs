//! `std::io`: `.npy` files, read into the element type and rank the program
//! declares, checked against the declared extents.
//!
//! Every element type of the language but `bf16` has a numpy dtype: the
//! primitive types through `ndarray-npy`, `f16` as numpy's `float16`
//! (`<f2`, read in either byte order). numpy has no `bfloat16` (the
//! `ml_dtypes` package's extension type is saved as raw two-byte records),
//! so loading or saving a `bf16` tensor is an `Error::Io` that says so.

use std::io::Read;

use half::{bf16, f16};
use ndarray::{Array, ArrayBase, Data, Dimension, ShapeBuilder};
use ndarray_npy::{ReadDataError, ReadableElement, WritableElement, WriteDataError};
use py_literal::Value as PyValue;

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
    T: NpyElement,
    D: Dimension,
{
    let array: Array<T, D> = T::read(function, path)?;
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
    T: NpyElement,
    S: Data<Elem = T>,
    D: Dimension,
{
    T::write(function, path, array)
}

/// An element type of `.npy` files: how [`load_npy`] reads and
/// [`save_npy`] writes tensors of it.
pub trait NpyElement: Sized {
    /// The array in the file at `path` (any element type or rank other
    /// than `Self`'s and `D`'s is an error naming the file).
    fn read<D: Dimension>(function: &str, path: &str) -> Result<Array<Self, D>, Error>;

    /// Writes `array` to `path`.
    fn write<S: Data<Elem = Self>, D: Dimension>(
        function: &str,
        path: &str,
        array: &ArrayBase<S, D>,
    ) -> Result<(), Error>;
}

macro_rules! npy_primitive {
    ($($t:ty),*) => {$(
        impl NpyElement for $t {
            fn read<D: Dimension>(function: &str, path: &str) -> Result<Array<Self, D>, Error> {
                ndarray_npy::read_npy(path).map_err(|e| io_error(function, path, e.to_string()))
            }

            fn write<S: Data<Elem = Self>, D: Dimension>(
                function: &str,
                path: &str,
                array: &ArrayBase<S, D>,
            ) -> Result<(), Error> {
                ndarray_npy::write_npy(path, array).map_err(|e| io_error(function, path, e.to_string()))
            }
        }
    )*};
}

npy_primitive!(i8, i16, i32, i64, u8, u16, u32, u64, f32, f64, bool);

/// numpy's `float16` as `.npy` files hold it: an `f16` that `ndarray-npy`
/// reads and writes (its traits cannot be implemented for `half::f16`
/// itself here).
#[repr(transparent)]
#[derive(Clone, Copy)]
struct NpyF16(f16);

/// The little-endian descriptor numpy writes for `float16`, and the
/// big-endian one.
const F2_LITTLE: &str = "<f2";
const F2_BIG: &str = ">f2";

impl ReadableElement for NpyF16 {
    fn read_to_end_exact_vec<R: Read>(mut reader: R, desc: &PyValue, len: usize) -> Result<Vec<Self>, ReadDataError> {
        let little = match desc {
            PyValue::String(s) if s == F2_LITTLE => true,
            PyValue::String(s) if s == F2_BIG => false,
            other => return Err(ReadDataError::WrongDescriptor(other.clone())),
        };
        // A header may promise more than the file holds: the buffer is
        // reserved fallibly, and a short file is `MissingData`.
        let bytes = len.checked_mul(2).ok_or(ReadDataError::MissingData)?;
        let mut raw: Vec<u8> = Vec::new();
        raw.try_reserve_exact(bytes).map_err(|e| ReadDataError::ParseData(Box::new(e)))?;
        (&mut reader).take(bytes as u64).read_to_end(&mut raw)?;
        if raw.len() < bytes {
            return Err(ReadDataError::MissingData);
        }
        let extra = reader.read_to_end(&mut Vec::new())?;
        if extra > 0 {
            return Err(ReadDataError::ExtraBytes(extra));
        }
        let mut out: Vec<NpyF16> = Vec::new();
        out.try_reserve_exact(len).map_err(|e| ReadDataError::ParseData(Box::new(e)))?;
        out.extend(raw.chunks_exact(2).map(|b| {
            let b = [b[0], b[1]];
            NpyF16(f16::from_bits(if little { u16::from_le_bytes(b) } else { u16::from_be_bytes(b) }))
        }));
        Ok(out)
    }
}

impl WritableElement for NpyF16 {
    fn type_descriptor() -> PyValue {
        PyValue::String(F2_LITTLE.to_string())
    }

    fn write<W: std::io::Write>(&self, mut writer: W) -> Result<(), WriteDataError> {
        writer.write_all(&self.0.to_bits().to_le_bytes())?;
        Ok(())
    }

    fn write_slice<W: std::io::Write>(slice: &[Self], mut writer: W) -> Result<(), WriteDataError> {
        for chunk in slice.chunks(4096) {
            let mut bytes = [0u8; 8192];
            for (b, v) in bytes.chunks_exact_mut(2).zip(chunk) {
                b.copy_from_slice(&v.0.to_bits().to_le_bytes());
            }
            writer.write_all(&bytes[..2 * chunk.len()])?;
        }
        Ok(())
    }
}

impl NpyElement for f16 {
    fn read<D: Dimension>(function: &str, path: &str) -> Result<Array<Self, D>, Error> {
        let a: Array<NpyF16, D> = ndarray_npy::read_npy(path).map_err(|e| io_error(function, path, e.to_string()))?;
        // `ndarray-npy` lays a file out in row-major or column-major order
        // (numpy's `fortran_order`), contiguous from its first element.
        let standard = a.is_standard_layout();
        let dim = a.raw_dim();
        let (vec, _) = a.into_raw_vec_and_offset();
        let mut vec = std::mem::ManuallyDrop::new(vec);
        // SAFETY: `NpyF16` is a transparent `f16`: the same size, alignment
        // and values; the allocation moves over whole.
        let vec = unsafe { Vec::from_raw_parts(vec.as_mut_ptr().cast::<f16>(), vec.len(), vec.capacity()) };
        let shape = if standard { dim.into_shape_with_order() } else { dim.f() };
        Array::from_shape_vec(shape, vec)
            .map_err(|e| io_error(function, path, format!("internal error in einlang: an f16 array's layout: {e}")))
    }

    fn write<S: Data<Elem = Self>, D: Dimension>(
        function: &str,
        path: &str,
        array: &ArrayBase<S, D>,
    ) -> Result<(), Error> {
        // SAFETY: `NpyF16` is a transparent `f16` (same size and
        // alignment); the view reads the same elements with the same
        // strides, while `array` is borrowed.
        let view = unsafe { array.raw_view().cast::<NpyF16>().deref_into_view() };
        ndarray_npy::write_npy(path, &view).map_err(|e| io_error(function, path, e.to_string()))
    }
}

/// The error of a `bf16` tensor in a `.npy` file.
fn no_bf16(function: &str, path: &str) -> Error {
    io_error(
        function,
        path,
        "`.npy` files have no `bf16`: numpy has no bfloat16 dtype; convert to `f32` (exact) or `f16` first".to_string(),
    )
}

impl NpyElement for bf16 {
    fn read<D: Dimension>(function: &str, path: &str) -> Result<Array<Self, D>, Error> {
        Err(no_bf16(function, path))
    }

    fn write<S: Data<Elem = Self>, D: Dimension>(
        function: &str,
        path: &str,
        _array: &ArrayBase<S, D>,
    ) -> Result<(), Error> {
        Err(no_bf16(function, path))
    }
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

    /// A `.npy` file of format 1.0 as numpy writes it: the header `dict`
    /// padded with spaces to a multiple of 64 bytes, then `data`.
    fn npy(dict: &str, data: &[u8]) -> Vec<u8> {
        let mut header = dict.to_string();
        while (10 + header.len() + 1) % 64 != 0 {
            header.push(' ');
        }
        header.push('\n');
        [&b"\x93NUMPY\x01\x00"[..], &(header.len() as u16).to_le_bytes(), header.as_bytes(), data].concat()
    }

    /// `f16` tensors are numpy's `float16`: files numpy wrote (these bytes
    /// are `np.save` of the array below, row-major, column-major and
    /// big-endian, as numpy 2.4 writes them) load bit for bit; a saved
    /// tensor is the data numpy writes, and reads back whole (NaN
    /// payloads, a transposed view). Other dtypes, short files and headers
    /// that promise more than the file holds are errors naming the file.
    #[test]
    fn f16_files_are_numpys_float16() {
        let dir = std::env::temp_dir().join(format!("einlang-io-f16-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let temp = |name: &str| dir.join(name).to_string_lossy().into_owned();
        let bits = [[0x3c00u16, 0xc000, 0x3800], [0x7bff, 0x7c00, 0x0001]];
        let want = Array2::from_shape_fn((2, 3), |(i, j)| f16::from_bits(bits[i][j]));
        assert_eq!(want[[1, 0]].to_f32(), 65504.0);
        assert_eq!(want[[1, 2]].to_f32(), 2f32.powi(-24));
        let row = |big: bool, fortran: bool| -> Vec<u8> {
            let order: Vec<u16> = if fortran {
                (0..3).flat_map(|j| (0..2).map(move |i| bits[i][j])).collect()
            } else {
                bits.iter().flatten().copied().collect()
            };
            order.iter().flat_map(|b| if big { b.to_be_bytes() } else { b.to_le_bytes() }).collect()
        };
        let numpy = npy("{'descr': '<f2', 'fortran_order': False, 'shape': (2, 3), }", &row(false, false));
        assert_eq!(numpy.len(), 140);
        let cases = [
            ("c.npy", numpy.clone()),
            ("f.npy", npy("{'descr': '<f2', 'fortran_order': True, 'shape': (2, 3), }", &row(false, true))),
            ("be.npy", npy("{'descr': '>f2', 'fortran_order': False, 'shape': (2, 3), }", &row(true, false))),
        ];
        for (name, bytes) in cases {
            std::fs::write(temp(name), bytes).unwrap();
            let got = load_npy::<f16, Ix2>("f", &temp(name), &[Some(2), Some(3)]).unwrap();
            assert_eq!(got.mapv(f16::to_bits), want.mapv(f16::to_bits), "{name}");
        }
        // Saved: numpy's own data after a header of the same length (which
        // differs only in the comma numpy leaves after the last entry).
        save_npy("f", &temp("out.npy"), &want).unwrap();
        let saved = std::fs::read(temp("out.npy")).unwrap();
        assert_eq!((saved.len(), &saved[128..]), (140, &numpy[128..]));
        let header = |b: &[u8]| String::from_utf8_lossy(&b[10..128]).replace(", }", "}").trim_end().to_string();
        assert_eq!(header(&saved), header(&numpy));
        // A transposed view and NaN payloads round-trip bit for bit.
        let odd =
            Array2::from_shape_fn((4, 5), |(i, j)| f16::from_bits([0x7e01, 0xfd55, 0x8000, 0x0400][i] + j as u16));
        save_npy("f", &temp("t.npy"), &odd.t()).unwrap();
        let back = load_npy::<f16, Ix2>("f", &temp("t.npy"), &[Some(5), None]).unwrap();
        assert_eq!(back.mapv(f16::to_bits), odd.t().mapv(f16::to_bits));
        // Other dtypes either way, a short file, a header past the data.
        save_npy("f", &temp("f32.npy"), &want.mapv(f16::to_f32)).unwrap();
        assert!(load_npy::<f16, Ix2>("f", &temp("f32.npy"), &[None, None]).is_err());
        assert!(load_npy::<f32, Ix2>("f", &temp("c.npy"), &[None, None]).is_err());
        assert!(load_npy::<f16, Ix1>("f", &temp("c.npy"), &[None]).is_err(), "rank differs");
        std::fs::write(temp("short.npy"), &numpy[..139]).unwrap();
        let short = load_npy::<f16, Ix2>("f", &temp("short.npy"), &[None, None]).unwrap_err();
        assert!(short.to_string().contains("short.npy"), "{short}");
        let huge = npy("{'descr': '<f2', 'fortran_order': False, 'shape': (1099511627776, 1048576), }", &[0; 4]);
        std::fs::write(temp("huge.npy"), huge).unwrap();
        assert!(load_npy::<f16, Ix2>("f", &temp("huge.npy"), &[None, None]).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// numpy has no `bf16`: loading or saving one is an `Error::Io` that
    /// says so and names the file, and writes nothing.
    #[test]
    fn bf16_files_are_errors_that_say_why() {
        let path = std::env::temp_dir().join(format!("einlang-io-bf16-{}.npy", std::process::id()));
        let path = path.to_string_lossy().into_owned();
        let a = Array2::from_elem((2, 2), bf16::ONE);
        for e in [save_npy("f", &path, &a).unwrap_err(), load_npy::<bf16, Ix2>("f", &path, &[None, None]).unwrap_err()]
        {
            let Error::Io { function, path: p, message } = &e else { panic!("{e:?}") };
            assert_eq!((function.as_str(), p.as_str()), ("f", path.as_str()));
            assert!(message.contains("bf16") && message.contains("numpy"), "{message}");
        }
        assert!(!std::path::Path::new(&path).exists());
    }
}
