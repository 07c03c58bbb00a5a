//! Shape checks emitted at function entry and before loop nests.

use ndarray::{Array1, ArrayBase, Dimension, RawData};

use crate::Error;

/// Checks that `param`'s axis `axis` has length `expected` (the value of
/// dimension `symbol`).
#[inline]
pub fn check_dim(
    function: &str,
    param: &str,
    axis: usize,
    symbol: &str,
    expected: i64,
    found: usize,
) -> Result<(), Error> {
    if expected >= 0 && expected as usize == found {
        Ok(())
    } else {
        Err(Error::Shape {
            function: function.to_string(),
            param: param.to_string(),
            axis,
            symbol: symbol.to_string(),
            expected: expected.max(0) as usize,
            found,
        })
    }
}

/// Converts an extent computed from dimensions to a length, failing when it
/// is negative (`H - KH + 1` with `KH > H`).
#[inline]
pub fn extent(function: &str, what: &str, value: i64) -> Result<usize, Error> {
    if value >= 0 {
        Ok(value as usize)
    } else {
        Err(Error::Extent {
            function: function.to_string(),
            message: format!("{what} evaluates to {value}, which is negative"),
        })
    }
}

/// Checks that two lengths an index was bound to agree.
#[inline]
pub fn check_same_extent(function: &str, index: &str, a: i64, a_what: &str, b: i64, b_what: &str) -> Result<(), Error> {
    if a == b {
        Ok(())
    } else {
        Err(Error::Extent {
            function: function.to_string(),
            message: format!("index `{index}` ranges over {a_what} = {a} and over {b_what} = {b}"),
        })
    }
}

/// Checks that a declared result dimension matches the computed one.
#[inline]
pub fn check_result_dim(function: &str, axis: usize, symbol: &str, declared: i64, found: usize) -> Result<(), Error> {
    if declared >= 0 && declared as usize == found {
        Ok(())
    } else {
        Err(Error::Extent {
            function: function.to_string(),
            message: format!(
                "result axis {axis} has length {found}, but the declared dimension `{symbol}` is {declared}"
            ),
        })
    }
}

/// A checked tensor conversion `x as [T; ...]`: `x` (a view or an owned
/// array), of any rank, as the same kind of array of rank `D`, after checking the rank (unless `D` is dynamic)
/// and every extent the target declares (`Some(n)`). A mismatch is
/// `Error::Rank` or `Error::Shape` naming `target`, the type as written.
pub fn cast<S, D0, T, D>(
    function: &str,
    target: &str,
    x: ArrayBase<S, D0>,
    extents: &[Option<i64>],
) -> Result<ArrayBase<S, D>, Error>
where
    S: RawData<Elem = T>,
    D0: Dimension,
    D: Dimension,
{
    let x = x.into_dyn();
    if let Some(rank) = D::NDIM {
        if x.ndim() != rank {
            return Err(Error::Rank {
                function: function.to_string(),
                target: target.to_string(),
                expected: rank,
                found: x.ndim(),
            });
        }
    }
    for (axis, (want, got)) in extents.iter().zip(x.shape()).enumerate() {
        if let Some(want) = *want {
            check_dim(function, target, axis, &want.to_string(), want, *got)?;
        }
    }
    // The rank was checked above (or `D` is dynamic), so this cannot fail;
    // it is still an error rather than a panic.
    x.into_dimensionality::<D>().map_err(|e| Error::Extent { function: function.to_string(), message: e.to_string() })
}

/// The length of axis `axis` of a dynamic-rank tensor `what` with shape
/// `shape`: an error when it has no such axis.
pub fn axis_len(function: &str, what: &str, shape: &[usize], axis: usize) -> Result<i64, Error> {
    match shape.get(axis) {
        Some(n) => Ok(*n as i64),
        None => Err(Error::Extent {
            function: function.to_string(),
            message: format!("`{what}` has rank {}, so it has no axis {axis}", shape.len()),
        }),
    }
}

/// The shape of a dynamic-rank tensor as an `i64` vector.
pub fn shape_of(shape: &[usize]) -> Array1<i64> {
    shape.iter().map(|n| *n as i64).collect()
}

/// Bounds check of one index of a read the compiler could not prove in range.
#[inline]
pub fn check_index(function: &str, tensor: &str, axis: usize, index: i64, len: usize) -> Result<usize, Error> {
    if index >= 0 && (index as u64) < len as u64 {
        Ok(index as usize)
    } else {
        Err(Error::Index { function: function.to_string(), tensor: tensor.to_string(), axis, index, len })
    }
}

/// A failed `assert`.
#[cold]
pub fn assert_failed(function: &str, message: &str) -> Error {
    Error::Assert { function: function.to_string(), message: message.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cast_checks_rank_and_declared_extents() {
        let a = ndarray::Array::from_shape_vec((2, 3), (0..6).collect::<Vec<i32>>()).unwrap().into_dyn();
        let v: ndarray::ArrayView<'_, i32, ndarray::Ix2> =
            cast("f", "[i32; 2, 3]", a.view(), &[Some(2), Some(3)]).unwrap();
        assert_eq!(v[[1, 2]], 5);
        let e = cast::<_, _, i32, ndarray::Ix3>("f", "[i32; 2, 3, 1]", a.view(), &[None, None, None]).unwrap_err();
        assert_eq!(e, Error::Rank { function: "f".into(), target: "[i32; 2, 3, 1]".into(), expected: 3, found: 2 });
        let e = cast::<_, _, i32, ndarray::Ix2>("f", "[i32; 2, 4]", a.view(), &[None, Some(4)]).unwrap_err();
        assert!(matches!(e, Error::Shape { axis: 1, expected: 4, found: 3, .. }), "{e:?}");
        let d: ndarray::ArrayView<'_, i32, ndarray::IxDyn> = cast("f", "[i32; *]", v, &[]).unwrap();
        assert_eq!(d.shape(), &[2, 3]);
        let owned: ndarray::Array<i32, ndarray::Ix2> = cast("f", "[i32; 2, 3]", a.clone(), &[None, None]).unwrap();
        assert_eq!(owned[[0, 1]], 1);
        assert_eq!(axis_len("f", "x", d.shape(), 1), Ok(3));
        assert!(matches!(axis_len("f", "x", d.shape(), 2), Err(Error::Extent { .. })));
        assert_eq!(shape_of(d.shape()).to_vec(), vec![2, 3]);
    }

    #[test]
    fn check_dim_accepts_equal_and_rejects_other() {
        assert!(check_dim("f", "x", 0, "N", 3, 3).is_ok());
        assert!(matches!(check_dim("f", "x", 1, "N", 3, 4), Err(Error::Shape { axis: 1, expected: 3, found: 4, .. })));
        assert!(check_dim("f", "x", 0, "N", -1, 0).is_err());
    }

    #[test]
    fn negative_extent_is_an_error() {
        assert_eq!(extent("f", "H - KH + 1", 2), Ok(2));
        assert!(extent("f", "H - KH + 1", -2).is_err());
    }

    #[test]
    fn check_index_bounds() {
        assert_eq!(check_index("f", "x", 0, 2, 3), Ok(2));
        assert!(check_index("f", "x", 0, 3, 3).is_err());
        assert!(check_index("f", "x", 0, -1, 3).is_err());
    }
}
