//! Shape checks emitted at function entry and before loop nests.

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
