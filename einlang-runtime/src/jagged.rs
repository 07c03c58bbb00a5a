//! Jagged (ragged) arrays: a sequence of rows of different lengths.
//!
//! `jagged[[1, 2], [3], [4, 5, 6]]` in Einlang is a `Jagged<i32>` in Rust.
//! Outside Einstein notation a program can count its rows (`len(j)`), take
//! one row as a vector (`j[i]`, checked), pass it around and print it.

use ndarray::{Array1, ArrayView1};

use crate::fmt::{Cell, Show, Style};
use crate::value::IntoOwned;
use crate::Error;

/// Rows of `T` of possibly different lengths.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Jagged<T> {
    rows: Vec<Array1<T>>,
}

impl<T> Jagged<T> {
    /// A jagged array with these rows.
    pub fn from_rows(rows: Vec<Array1<T>>) -> Jagged<T> {
        Jagged { rows }
    }

    /// The rows.
    pub fn rows(&self) -> &[Array1<T>] {
        &self.rows
    }

    /// The number of rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Row `index` (an Einlang `i64`): `Error::Index` when there is none.
    pub fn row(&self, function: &str, tensor: &str, index: i64) -> Result<ArrayView1<'_, T>, Error> {
        let i = crate::shape::check_index(function, tensor, 0, index, self.rows.len())?;
        Ok(self.rows[i].view())
    }
}

impl<T: Clone> From<Vec<Vec<T>>> for Jagged<T> {
    fn from(rows: Vec<Vec<T>>) -> Jagged<T> {
        Jagged { rows: rows.into_iter().map(Array1::from).collect() }
    }
}

/// `print` and interpolation show a jagged array as the seed does, as a
/// list of lists: `[[1, 2], [3]]`.
impl<T: Show> Show for Jagged<T> {
    fn show(&self, out: &mut String, _style: Style, _item: bool) {
        out.push('[');
        for (i, row) in self.rows.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            row.show(out, Style::Print, true);
        }
        out.push(']');
    }

    fn cell(&self) -> Cell {
        let mut text = String::new();
        self.show(&mut text, Style::Print, true);
        Cell::Text(text)
    }
}

impl<T: Clone> IntoOwned for Jagged<T> {
    type Owned = Jagged<T>;
    #[inline]
    fn into_owned_value(self) -> Jagged<T> {
        self
    }
}

impl<T: Clone> IntoOwned for &Jagged<T> {
    type Owned = Jagged<T>;
    #[inline]
    fn into_owned_value(self) -> Jagged<T> {
        self.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_checked_and_printed_as_lists() {
        let j = Jagged::from(vec![vec![1, 2], vec![], vec![3]]);
        assert_eq!(j.len(), 3);
        assert_eq!(j.row("f", "j", 2).unwrap().to_vec(), vec![3]);
        assert!(matches!(j.row("f", "j", 3), Err(Error::Index { index: 3, len: 3, .. })));
        assert!(matches!(j.row("f", "j", -1), Err(Error::Index { .. })));
        assert_eq!(crate::fmt::print_arg(&j), "[[1, 2], [], [3]]");
    }
}
