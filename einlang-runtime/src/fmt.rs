//! Text for `print(..)` and string interpolation, exactly as the seed
//! (Python) implementation of Einlang writes it, so that program outputs
//! can be compared line by line.
//!
//! The seed has two different paths, and so do we:
//!
//! - `print(a, b)` converts every argument with numpy's `tolist()` (tuples
//!   with `list()`) and hands the results to Python's `print`, which joins
//!   them with one space. Arrays therefore look like Python lists
//!   (`[[19, 22], [43, 50]]`), `f32` elements are widened to Python floats
//!   first (`0.10000000149011612`), strings inside lists are quoted
//!   (`['a', 'b']`) and booleans are `True` / `False`. This is [`Style::Print`].
//! - `"x = {x}"` splices in Python's `str(x)`: numbers as above but `f32`
//!   as a numpy float32 with its own shortest digits (`0.1`), arrays in
//!   numpy's layout (`[[1.5 2. ]\n [3.  4. ]]`), tuples as `(1, 2)`. This
//!   is [`Style::Interp`]. Where numpy versions differ, numpy >= 2.3 is
//!   followed (float32 switches to exponents from 1e6, not 1e16 / 1e8).
//!
//! The seed's runtime types cannot always be recovered from ours: a scalar
//! computed from literals is a Python float there (f64 arithmetic, `repr`
//! digits), while an `f32` here is treated as the numpy float32 the seed has
//! for values read from arrays. Elements of a printed tuple are shown like
//! list elements (numpy 2 would write `np.float32(0.5)` for numpy scalars,
//! and `array([..])` for arrays inside tuples).
//!
//! `{x:.N}`: the seed's reference documents `"{pi:.4f}"` as `3.1416`, but
//! its implementation drops the spec. We implement the documented meaning:
//! N digits after the point for floating-point values (scalars and array
//! elements, which then use numpy's `floatmode='fixed'` layout); integers,
//! booleans and strings are unaffected.

use std::io::Write;

use ndarray::{ArrayBase, ArrayViewD, Data, Dimension, IxDyn};

/// Where a value is shown, which decides the seed's conversion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// An argument of `print(..)`: Python's `print` of `v.tolist()`.
    Print,
    /// An interpolation `{v}` or `{v:.N}`: Python's `str(v)`; the payload
    /// is N.
    Interp(Option<usize>),
}

/// One element of an array that numpy lays out: numpy sizes columns and
/// picks the float notation from all elements together, so the layout needs
/// the values, not finished text.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    /// Any integer type.
    Int(i128),
    /// An `f32`, which numpy formats with `f32` digits.
    F32(f32),
    /// An `f64`.
    F64(f64),
    /// A boolean.
    Bool(bool),
    /// Anything else, already as numpy shows the element (strings quoted).
    Text(String),
}

/// A value `print` and interpolation can show.
pub trait Show {
    /// Appends the value as the seed shows it in `style`. `item` is true for
    /// an element of a list or tuple, which Python shows with `repr`:
    /// strings quoted, tuples in parentheses.
    fn show(&self, out: &mut String, style: Style, item: bool);

    /// The value as one element of an array shown in numpy's layout.
    fn cell(&self) -> Cell;
}

/// The text of one `print` argument.
pub fn print_arg<T: Show + ?Sized>(value: &T) -> String {
    let mut out = String::new();
    value.show(&mut out, Style::Print, false);
    out
}

/// The text an interpolation `{value}` (`precision: None`) or
/// `{value:.N}` (`Some(N)`) splices into its string.
pub fn interp<T: Show + ?Sized>(value: &T, precision: Option<usize>) -> String {
    let mut out = String::new();
    value.show(&mut out, Style::Interp(precision), false);
    out
}

/// `print(a, b, c)`: the arguments (from [`print_arg`]) joined by one space,
/// then a newline, on stdout; `print()` prints an empty line.
pub fn print_line(parts: &[String]) {
    // One write of the whole line keeps lines from concurrent prints whole.
    // A failed write (closed pipe) is ignored: output is a side channel and
    // must not abort the computation (and `println!` would panic).
    let _ = std::io::stdout().lock().write_all(line(parts).as_bytes());
}

/// The text [`print_line`] writes: Python's `print` joins with `" "`.
fn line(parts: &[String]) -> String {
    let mut text = parts.join(" ");
    text.push('\n');
    text
}

// ---------------------------------------------------------------------------
// Scalars

macro_rules! show_int {
    ($($t:ty),*) => {$(
        impl Show for $t {
            // Python's int str/repr is plain decimal in both styles; a
            // precision does not apply to integers.
            fn show(&self, out: &mut String, _style: Style, _item: bool) {
                out.push_str(&self.to_string());
            }

            fn cell(&self) -> Cell {
                Cell::Int(i128::from(*self))
            }
        }
    )*};
}

show_int!(i8, i16, i32, i64, u8, u16, u32, u64);

impl Show for usize {
    fn show(&self, out: &mut String, _style: Style, _item: bool) {
        out.push_str(&self.to_string());
    }

    fn cell(&self) -> Cell {
        // usize is at most 64 bits on every supported target.
        i128::try_from(*self).map_or_else(|_| Cell::Text(self.to_string()), Cell::Int)
    }
}

impl Show for isize {
    fn show(&self, out: &mut String, _style: Style, _item: bool) {
        out.push_str(&self.to_string());
    }

    fn cell(&self) -> Cell {
        i128::try_from(*self).map_or_else(|_| Cell::Text(self.to_string()), Cell::Int)
    }
}

impl Show for f64 {
    fn show(&self, out: &mut String, style: Style, _item: bool) {
        match style {
            // Python floats are f64: `print` and `str` both give `repr`.
            Style::Print | Style::Interp(None) => python_float(out, *self),
            Style::Interp(Some(precision)) => fixed(out, *self, precision),
        }
    }

    fn cell(&self) -> Cell {
        Cell::F64(*self)
    }
}

impl Show for f32 {
    fn show(&self, out: &mut String, style: Style, _item: bool) {
        match style {
            // `tolist()` turns a numpy float32 into a Python float: the
            // widened value with f64 digits (`0.10000000149011612`).
            Style::Print => python_float(out, f64::from(*self)),
            // The seed's f32 scalars that come out of arrays are numpy
            // float32 values, whose `str` uses the f32's own digits.
            Style::Interp(None) => numpy_f32_str(out, *self),
            Style::Interp(Some(precision)) => fixed(out, f64::from(*self), precision),
        }
    }

    fn cell(&self) -> Cell {
        Cell::F32(*self)
    }
}

/// The `f32` of the shortest decimal that reads back as `v` in a half
/// format (`back` rounds to it and widens), so that numpy's digits of a
/// `float16` (`0.1`, not the `f32` digits `0.099975586`) come out of the
/// `f32` formatting.
fn half_digits(v: f32, back: impl Fn(f64) -> f32) -> f32 {
    if !v.is_finite() {
        return v;
    }
    for digits in 0..9 {
        let text = format!("{v:.digits$e}");
        if text.parse::<f64>().is_ok_and(|x| back(x) == v) {
            return text.parse::<f32>().unwrap_or(v);
        }
    }
    v
}

macro_rules! show_half {
    ($($t:ty),*) => {$(
        impl Show for $t {
            fn show(&self, out: &mut String, style: Style, _item: bool) {
                let v = self.to_f32();
                match style {
                    // `tolist()` widens to a Python float.
                    Style::Print => python_float(out, f64::from(v)),
                    Style::Interp(None) => numpy_f32_str(out, half_digits(v, |x| <$t>::from_f64(x).to_f32())),
                    Style::Interp(Some(precision)) => fixed(out, f64::from(v), precision),
                }
            }

            fn cell(&self) -> Cell {
                Cell::F32(half_digits(self.to_f32(), |x| <$t>::from_f64(x).to_f32()))
            }
        }
    )*};
}

show_half!(half::f16, half::bf16);

impl Show for bool {
    fn show(&self, out: &mut String, _style: Style, _item: bool) {
        out.push_str(if *self { "True" } else { "False" });
    }

    fn cell(&self) -> Cell {
        Cell::Bool(*self)
    }
}

impl Show for str {
    fn show(&self, out: &mut String, _style: Style, item: bool) {
        // Python's `print` and `str` show a string's text; inside a list or
        // tuple it goes through `repr`.
        if item {
            python_str_repr(out, self);
        } else {
            out.push_str(self);
        }
    }

    fn cell(&self) -> Cell {
        // numpy shows each element of a string array with `repr`.
        let mut text = String::new();
        python_str_repr(&mut text, self);
        Cell::Text(text)
    }
}

impl Show for String {
    fn show(&self, out: &mut String, style: Style, item: bool) {
        self.as_str().show(out, style, item);
    }

    fn cell(&self) -> Cell {
        self.as_str().cell()
    }
}

impl<T: Show + ?Sized> Show for &T {
    fn show(&self, out: &mut String, style: Style, item: bool) {
        (**self).show(out, style, item);
    }

    fn cell(&self) -> Cell {
        (**self).cell()
    }
}

// ---------------------------------------------------------------------------
// Tuples

macro_rules! show_tuple {
    ($(($($name:ident),+))*) => {$(
        impl<$($name: Show),+> Show for ($($name,)+) {
            #[allow(non_snake_case)]
            fn show(&self, out: &mut String, style: Style, item: bool) {
                let ($($name,)+) = self;
                let elements: &[&dyn Show] = &[$($name),+];
                show_tuple(out, elements, style, item);
            }

            fn cell(&self) -> Cell {
                let mut text = String::new();
                self.show(&mut text, Style::Interp(None), true);
                Cell::Text(text)
            }
        }
    )*};
}

show_tuple! {
    (A)
    (A, B)
    (A, B, C)
    (A, B, C, D)
    (A, B, C, D, E)
    (A, B, C, D, E, F)
}

/// A tuple at the top of `print` went through `list(t)`, so it prints as a
/// list; everywhere else (nested, or in `str(t)`) Python shows a tuple, with
/// the trailing comma of a 1-tuple. Elements are shown with `repr`.
fn show_tuple(out: &mut String, elements: &[&dyn Show], style: Style, item: bool) {
    let as_list = style == Style::Print && !item;
    out.push(if as_list { '[' } else { '(' });
    for (i, element) in elements.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        element.show(out, style, true);
    }
    if as_list {
        out.push(']');
    } else {
        if elements.len() == 1 {
            out.push(',');
        }
        out.push(')');
    }
}

// ---------------------------------------------------------------------------
// Arrays

impl<S, D> Show for ArrayBase<S, D>
where
    S: Data,
    S::Elem: Show,
    D: Dimension,
{
    fn show(&self, out: &mut String, style: Style, item: bool) {
        let view = self.view().into_dyn();
        match style {
            Style::Print => show_list(out, &view, item),
            Style::Interp(precision) => {
                if view.ndim() == 0 {
                    // `str` of a 0-d array is `str` of its element.
                    if let Some(element) = view.iter().next() {
                        element.show(out, style, item);
                    }
                } else {
                    show_numpy(out, &view, precision);
                }
            }
        }
    }

    fn cell(&self) -> Cell {
        let mut text = String::new();
        self.show(&mut text, Style::Interp(None), true);
        Cell::Text(text)
    }
}

/// `print` shows `a.tolist()`: nested Python lists, `", "` between elements,
/// each element by `repr`; a 0-d array becomes its bare element.
fn show_list<A: Show>(out: &mut String, view: &ArrayViewD<'_, A>, item: bool) {
    if view.ndim() == 0 {
        if let Some(element) = view.iter().next() {
            element.show(out, Style::Print, item);
        }
        return;
    }
    out.push('[');
    for (i, sub) in view.outer_iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        show_list(out, &sub, true);
    }
    out.push(']');
}

/// numpy's default print options, which the seed never changes.
const LINE_WIDTH: usize = 75;
const THRESHOLD: usize = 1000;
const EDGE_ITEMS: usize = 3;
const MAX_PRECISION: usize = 8;

/// `str(a)` for an array of rank >= 1, in numpy's layout: elements padded
/// to a common width, `" "` between them, lines wrapped at 75 columns, rows
/// on new lines indented under their bracket, a blank line per extra rank
/// between blocks, and arrays over 1000 elements summarized with `...`
/// after three leading and before three trailing entries of each long axis.
fn show_numpy<A: Show>(out: &mut String, view: &ArrayViewD<'_, A>, precision: Option<usize>) {
    if view.is_empty() {
        out.push_str("[]");
        return;
    }
    let summarize = view.len() > THRESHOLD;
    // Per axis, the indices that are shown; numpy also computes widths from
    // the shown elements only.
    let kept: Vec<Vec<usize>> = view
        .shape()
        .iter()
        .map(|&len| {
            if summarize && len > 2 * EDGE_ITEMS {
                (0..EDGE_ITEMS).chain(len - EDGE_ITEMS..len).collect()
            } else {
                (0..len).collect()
            }
        })
        .collect();
    let cells: Vec<Cell> = if summarize {
        let mut cells = Vec::new();
        let mut index = vec![0; kept.len()];
        collect_kept(view, &kept, 0, &mut index, &mut cells);
        cells
    } else {
        view.iter().map(Show::cell).collect()
    };
    let texts = format_cells(&cells, precision);
    let layout = Layout {
        shape: kept.iter().map(Vec::len).collect(),
        summarized: view.shape().iter().map(|&len| summarize && len > 2 * EDGE_ITEMS).collect(),
        texts: &texts,
    };
    out.push_str(&layout.render(0, 0, " ", LINE_WIDTH));
}

/// The cells of the kept elements in row-major order of the kept indices.
fn collect_kept<A: Show>(
    view: &ArrayViewD<'_, A>,
    kept: &[Vec<usize>],
    axis: usize,
    index: &mut Vec<usize>,
    cells: &mut Vec<Cell>,
) {
    let Some(indices) = kept.get(axis) else {
        if let Some(element) = view.get(IxDyn(index)) {
            cells.push(element.cell());
        }
        return;
    };
    for &i in indices {
        index[axis] = i;
        collect_kept(view, kept, axis + 1, index, cells);
    }
}

/// The shown part of an array: finished element texts in row-major order of
/// `shape`, and which axes have a `...` after their leading edge items.
struct Layout<'a> {
    shape: Vec<usize>,
    summarized: Vec<bool>,
    texts: &'a [String],
}

impl Layout<'_> {
    /// The bracketed text of the sub-array at `axis` starting at text
    /// `offset`. `indent` is what continuation lines start with and `width`
    /// the columns left at this depth (one less per enclosing bracket).
    fn render(&self, axis: usize, offset: usize, indent: &str, width: usize) -> String {
        let Some(&len) = self.shape.get(axis) else {
            return self.texts.get(offset).cloned().unwrap_or_default();
        };
        let stride: usize = self.shape[axis + 1..].iter().product();
        let summarized = self.summarized.get(axis).copied().unwrap_or(false);
        let inner_indent = format!("{indent} ");
        let inner_width = width.saturating_sub(1);
        // Entries of this axis in order; `None` is the `...` marker.
        let entries: Vec<Option<usize>> = (0..len)
            .flat_map(|i| {
                let marker = (summarized && i == EDGE_ITEMS).then_some(None);
                marker.into_iter().chain(std::iter::once(Some(i)))
            })
            .collect();
        let word = |entry: Option<usize>| match entry {
            Some(i) => self.render(axis + 1, offset + i * stride, &inner_indent, inner_width),
            None => "...".to_string(),
        };
        let mut text = String::new();
        if axis + 1 == self.shape.len() {
            // Elements fill lines; room is kept for the closing bracket.
            let line_width = width.saturating_sub(1);
            let mut line = indent.to_string();
            for (i, &entry) in entries.iter().enumerate() {
                if i > 0 {
                    line.push(' ');
                }
                extend_line(&mut text, &mut line, &word(entry), line_width, indent);
            }
            text.push_str(&line);
        } else {
            // Sub-arrays go one per line, blocks of rank r separated by
            // r - 1 blank lines.
            let separator = "\n".repeat(self.shape.len() - axis - 1);
            for (i, &entry) in entries.iter().enumerate() {
                if i > 0 {
                    text.push_str(&separator);
                }
                text.push_str(indent);
                text.push_str(&word(entry));
            }
        }
        // The first line's indent becomes the opening bracket.
        let body = text.get(indent.len()..).unwrap_or_default();
        format!("[{body}]")
    }
}

/// Appends `word` to `line`, first moving `line` into `text` and starting a
/// fresh indented line when the word would pass `width` (unless the line
/// holds nothing but its indent, where wrapping would not help).
fn extend_line(text: &mut String, line: &mut String, word: &str, width: usize, indent: &str) {
    let line_len = line.chars().count();
    if line_len + word.chars().count() > width && line_len > indent.chars().count() {
        text.push_str(line.trim_end());
        text.push('\n');
        line.clear();
        line.push_str(indent);
    }
    line.push_str(word);
}

/// Element texts as numpy's formatter for the array's type makes them: one
/// width for all integers (right-aligned), booleans as `" True"` / `"False"`,
/// floats by [`float_texts`], anything else as is.
fn format_cells(cells: &[Cell], precision: Option<usize>) -> Vec<String> {
    let f32s: Option<Vec<f64>> = cells
        .iter()
        .map(|cell| match cell {
            Cell::F32(v) => Some(f64::from(*v)),
            _ => None,
        })
        .collect();
    if let Some(values) = f32s {
        return float_texts(&values, true, precision);
    }
    let f64s: Option<Vec<f64>> = cells
        .iter()
        .map(|cell| match cell {
            Cell::F64(v) => Some(*v),
            _ => None,
        })
        .collect();
    if let Some(values) = f64s {
        return float_texts(&values, false, precision);
    }
    if cells.iter().all(|cell| matches!(cell, Cell::Int(_))) {
        let texts: Vec<String> = cells
            .iter()
            .map(|cell| match cell {
                Cell::Int(v) => v.to_string(),
                _ => String::new(),
            })
            .collect();
        let width = texts.iter().map(String::len).max().unwrap_or(0);
        return texts.into_iter().map(|text| format!("{text:>width$}")).collect();
    }
    cells
        .iter()
        .map(|cell| match cell {
            // numpy gives every boolean element of an array 5 columns.
            Cell::Bool(true) => " True".to_string(),
            Cell::Bool(false) => "False".to_string(),
            Cell::Int(v) => v.to_string(),
            Cell::F32(v) => interp(v, precision),
            Cell::F64(v) => interp(v, precision),
            Cell::Text(text) => text.clone(),
        })
        .collect()
}

/// numpy's `FloatingFormat` with default options (`floatmode='maxprec'`,
/// precision 8) or, for `{a:.N}`, `floatmode='fixed'` with precision N.
///
/// Scientific notation is used for all elements when a finite non-zero
/// magnitude is >= 1e8 (f32: 1e6) or < 1e-4, or the largest is over 1000
/// times the smallest (compared in the element type, as numpy 2 does).
/// Positional elements share the integer-part width (left padding) and the
/// fraction width (right padding with spaces; `2.` keeps its point);
/// scientific ones share the mantissa digit count and exponent digits.
/// `values` holds f32 elements widened when `single`.
fn float_texts(values: &[f64], single: bool, precision: Option<usize>) -> Vec<String> {
    let fixed_mode = precision.is_some();
    let precision = precision.unwrap_or(MAX_PRECISION);
    let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    let magnitudes = finite.iter().map(|v| v.abs()).filter(|&v| v != 0.0);
    let (min, max) = magnitudes.fold((f64::INFINITY, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    // numpy >= 2.3 caps positional output at 10**min(8, decimal precision
    // of the type): 1e8 for f64, 1e6 for f32.
    let exp_format = max > 0.0
        && if single {
            // Narrowing is exact: these are f32 values.
            let (min, max) = (min as f32, max as f32);
            max >= 1e6 || min < 1e-4 || max / min > 1000.0
        } else {
            max >= 1e8 || min < 1e-4 || max / min > 1000.0
        };

    // (integer part with sign, fraction digits, exponent) per finite value.
    let parts: Vec<(String, String, i32)> = if exp_format {
        // numpy first finds the mantissa width: the shortest digits, at most
        // `precision` of them after the point (fixed mode: exactly that).
        // It then prints every element with that many digits, generating
        // them from the exact value (its `min_digits`), not padding zeros:
        // f32 69.33328 shows as 6.9333282e+01 next to a longer neighbour.
        let width = if fixed_mode {
            precision
        } else {
            finite
                .iter()
                .map(|&v| {
                    let shortest = shortest_of(v, single).digits.len().saturating_sub(1);
                    if shortest <= precision {
                        shortest
                    } else {
                        // Rounding may leave trailing zeros, which numpy
                        // trims before measuring (1.00000000 is `1.`).
                        exact_scientific(v, precision).1.trim_end_matches('0').len()
                    }
                })
                .max()
                .unwrap_or(0)
        };
        finite
            .iter()
            .map(|&v| {
                let (mantissa, frac, exp) = exact_scientific(v, width);
                (signed(v, mantissa), frac, exp)
            })
            .collect()
    } else {
        finite
            .iter()
            .map(|&v| {
                let (int, frac) = if fixed_mode {
                    exact_positional(v, precision)
                } else {
                    // Shortest digits, cut to `precision` after the point by
                    // rounding the exact value; no trailing zeros either way.
                    let (int, frac) = positional_parts(&shortest_of(v, single));
                    if frac.len() > precision {
                        let (int, frac) = exact_positional(v, precision);
                        (int, frac.trim_end_matches('0').to_string())
                    } else {
                        (int, frac)
                    }
                };
                (signed(v, int), frac, 0)
            })
            .collect()
    };

    let mut pad_left = parts.iter().map(|(int, _, _)| int.len()).max().unwrap_or(0);
    let frac_width = parts.iter().map(|(_, frac, _)| frac.len()).max().unwrap_or(0);
    let exp_digits = parts.iter().map(|(_, _, exp)| exp.unsigned_abs().to_string().len().max(2)).max().unwrap_or(2);
    let pad_right = if exp_format && !parts.is_empty() { exp_digits + 2 + frac_width } else { frac_width };
    if finite.len() != values.len() {
        // Room for "nan", "inf" or "-inf" right-aligned in the full width.
        let neg_inf = values.contains(&f64::NEG_INFINITY);
        let offset = pad_right + 1;
        pad_left = pad_left.max(3usize.saturating_sub(offset)).max((3 + usize::from(neg_inf)).saturating_sub(offset));
    }

    let mut parts = parts.into_iter();
    values
        .iter()
        .map(|&v| {
            if !v.is_finite() {
                let word = non_finite(v);
                let width = pad_left + pad_right + 1;
                return format!("{word:>width$}");
            }
            let Some((int, frac, exp)) = parts.next() else {
                return String::new();
            };
            if exp_format {
                let sign = if exp < 0 { '-' } else { '+' };
                let exp = exp.unsigned_abs();
                format!("{int:>pad_left$}.{frac:0<frac_width$}e{sign}{exp:0>exp_digits$}")
            } else {
                format!("{int:>pad_left$}.{frac:<frac_width$}")
            }
        })
        .collect()
}

// ---------------------------------------------------------------------------
// Float digits

/// A finite float as its sign, decimal digits without leading zeros (`"0"`
/// for zero), and the power of ten of the first digit:
/// `1.25e3` is `digits "125", exp 3`.
#[derive(Debug, PartialEq)]
struct Digits {
    negative: bool,
    digits: String,
    exp: i32,
}

/// Digits from Rust's `{:e}` text of a finite magnitude, which holds the
/// shortest digits that read back as the same value of its type.
fn parse_exp_form(negative: bool, text: &str) -> Digits {
    let (mantissa, exp) = text.split_once('e').unwrap_or((text, "0"));
    Digits { negative, digits: mantissa.chars().filter(char::is_ascii_digit).collect(), exp: exp.parse().unwrap_or(0) }
}

/// Shortest round-trip digits of a finite f64.
fn shortest_f64(v: f64) -> Digits {
    let magnitude = v.abs();
    let text = nearest_shortest(
        format!("{magnitude:e}"),
        |digits| format!("{magnitude:.digits$e}"),
        |text| text.parse::<f64>() == Ok(magnitude),
    );
    parse_exp_form(v.is_sign_negative(), &text)
}

/// Shortest round-trip digits of a finite f32 (fewer than its widened f64).
fn shortest_f32(v: f32) -> Digits {
    let magnitude = v.abs();
    let text = nearest_shortest(
        format!("{magnitude:e}"),
        |digits| format!("{magnitude:.digits$e}"),
        |text| text.parse::<f32>() == Ok(magnitude),
    );
    parse_exp_form(v.is_sign_negative(), &text)
}

/// Among the shortest digit strings that read back as the value, Python's
/// `repr` and numpy's Dragon4 take the one nearest the exact value, ties to
/// the even digit. Rust's `{:e}` gives a shortest string but may take the
/// other side of an exact tie (`69.33328247070313` where Python prints
/// `...12`), which is common for widened f32 values. The exact value
/// rounded to the same length (Rust's `{:.N$e}` rounds ties to even) is the
/// nearest such string, so it wins whenever it reads back.
fn nearest_shortest(
    shortest: String,
    rounded: impl FnOnce(usize) -> String,
    reads_back: impl FnOnce(&str) -> bool,
) -> String {
    let mantissa = shortest.split_once('e').map_or(shortest.as_str(), |(m, _)| m);
    let fraction_digits = mantissa.split_once('.').map_or(0, |(_, f)| f.len());
    if fraction_digits == 0 {
        return shortest;
    }
    let candidate = rounded(fraction_digits);
    if reads_back(&candidate) {
        candidate
    } else {
        shortest
    }
}

/// Shortest digits for the element type of an array (`single`: f32).
fn shortest_of(v: f64, single: bool) -> Digits {
    if single {
        // Exact: the value came from an f32.
        shortest_f32(v as f32)
    } else {
        shortest_f64(v)
    }
}

/// Python's float `repr` (also `str`, and numpy's `str` of a float scalar)
/// for the given digits: positional when the first digit's power of ten is
/// in -4..16, with `.0` for whole numbers (`2.0`, `0.0001`,
/// `1000000000000000.0`); otherwise scientific with the point dropped when
/// there is one digit and at least two exponent digits (`1e-05`, `1e+16`,
/// `1.5e+20`). Non-finite digits never reach here; see [`non_finite`].
fn python_repr(out: &mut String, d: &Digits) {
    if d.digits.is_empty() {
        return;
    }
    if (-4..16).contains(&d.exp) {
        if d.negative {
            out.push('-');
        }
        let (int, frac) = positional_parts(d);
        out.push_str(&int);
        out.push('.');
        out.push_str(if frac.is_empty() { "0" } else { &frac });
    } else {
        scientific(out, d);
    }
}

/// Python's and numpy's short scientific form of `d` including its sign:
/// no point after a single digit, at least two exponent digits (`1e+20`,
/// `-1.5e-05`).
fn scientific(out: &mut String, d: &Digits) {
    if d.negative {
        out.push('-');
    }
    out.push_str(&d.digits[..1]);
    if d.digits.len() > 1 {
        out.push('.');
        out.push_str(&d.digits[1..]);
    }
    let sign = if d.exp < 0 { '-' } else { '+' };
    out.push_str(&format!("e{sign}{:02}", d.exp.unsigned_abs()));
}

/// `str(np.float32(v))` in numpy >= 2.3: the f32's own shortest digits,
/// positional (`2.0`, `0.1`, `999999.9`) for zero and magnitudes in
/// [1e-4, 1e6) compared on the exact value, scientific otherwise (`1e+06`,
/// `1.5e-05`, and `1e-04` for f32(1e-4), which lies just below 1e-4).
fn numpy_f32_str(out: &mut String, v: f32) {
    if !v.is_finite() {
        out.push_str(non_finite(f64::from(v)));
        return;
    }
    let magnitude = f64::from(v.abs());
    let d = shortest_f32(v);
    if magnitude == 0.0 || (1e-4..1e6).contains(&magnitude) {
        if d.negative {
            out.push('-');
        }
        let (int, frac) = positional_parts(&d);
        out.push_str(&int);
        out.push('.');
        out.push_str(if frac.is_empty() { "0" } else { &frac });
    } else {
        scientific(out, &d);
    }
}

/// Integer and fraction digits of `d` written without exponent (no sign).
fn positional_parts(d: &Digits) -> (String, String) {
    if d.exp >= 0 {
        let int_len = usize::try_from(d.exp).unwrap_or(0) + 1;
        if d.digits.len() <= int_len {
            (format!("{:0<int_len$}", d.digits), String::new())
        } else {
            (d.digits[..int_len].to_string(), d.digits[int_len..].to_string())
        }
    } else {
        let zeros = usize::try_from(-d.exp - 1).unwrap_or(0);
        ("0".to_string(), format!("{}{}", "0".repeat(zeros), d.digits))
    }
}

/// `|v|` correctly rounded (ties to even, like Python's `%.Nf` and numpy's
/// Dragon4) to `precision` fraction digits, as integer and fraction digits.
fn exact_positional(v: f64, precision: usize) -> (String, String) {
    let text = format!("{:.precision$}", v.abs());
    match text.split_once('.') {
        Some((int, frac)) => (int.to_string(), frac.to_string()),
        None => (text, String::new()),
    }
}

/// `|v|` correctly rounded to `precision` digits after the mantissa point:
/// mantissa digit, fraction digits, exponent.
fn exact_scientific(v: f64, precision: usize) -> (String, String, i32) {
    let text = format!("{:.precision$e}", v.abs());
    let (mantissa, exp) = text.split_once('e').unwrap_or((&text, "0"));
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    (int.to_string(), frac.to_string(), exp.parse().unwrap_or(0))
}

/// Prefixes a minus when `v` is negative (including -0.0).
fn signed(v: f64, magnitude: String) -> String {
    if v.is_sign_negative() {
        format!("-{magnitude}")
    } else {
        magnitude
    }
}

/// Python and numpy spell these `nan`, `inf`, `-inf` (no sign on nan).
fn non_finite(v: f64) -> &'static str {
    if v.is_nan() {
        "nan"
    } else if v > 0.0 {
        "inf"
    } else {
        "-inf"
    }
}

/// `{v:.N}`: Python's `format(v, '.Nf')`, which Rust's `{:.N}` matches for
/// finite values (exact value, ties to even, sign kept on -0.0).
fn fixed(out: &mut String, v: f64, precision: usize) {
    if v.is_finite() {
        out.push_str(&format!("{v:.precision$}"));
    } else {
        out.push_str(non_finite(v));
    }
}

/// Python's `repr` of a float, `nan` and `inf` included.
fn python_float(out: &mut String, v: f64) {
    if v.is_finite() {
        python_repr(out, &shortest_f64(v));
    } else {
        out.push_str(non_finite(v));
    }
}

// ---------------------------------------------------------------------------
// Strings

/// Python's `repr` of a string: single quotes unless the text has a single
/// quote and no double quote; backslash, the quote, `\t \n \r` escaped; other
/// characters Python does not consider printable as `\xNN`, `\uNNNN` or
/// `\UNNNNNNNN`.
fn python_str_repr(out: &mut String, text: &str) {
    let quote = if text.contains('\'') && !text.contains('"') { '"' } else { '\'' };
    out.push(quote);
    for ch in text.chars() {
        match ch {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            _ if ch == quote => {
                out.push('\\');
                out.push(ch);
            }
            _ if !python_printable(ch) => {
                let code = u32::from(ch);
                let escaped = if code <= 0xff {
                    format!("\\x{code:02x}")
                } else if code <= 0xffff {
                    format!("\\u{code:04x}")
                } else {
                    format!("\\U{code:08x}")
                };
                out.push_str(&escaped);
            }
            _ => out.push(ch),
        }
    }
    out.push(quote);
}

/// `str.isprintable` for one character. Python consults the Unicode
/// database (categories Cc, Cf, Cs, Co, Cn, Zl, Zp and Zs other than the
/// space are not printable). This list agrees with Python 3.11 (Unicode 14)
/// on every assigned code point; unassigned ones (Cn), which would need
/// the full table, count as printable here.
fn python_printable(ch: char) -> bool {
    !matches!(
        u32::from(ch),
        0x00..=0x1f
            | 0x7f..=0xa0
            | 0xad
            | 0x600..=0x605
            | 0x61c
            | 0x6dd
            | 0x70f
            | 0x890..=0x891
            | 0x8e2
            | 0x1680
            | 0x180e
            | 0x2000..=0x200f
            | 0x2028..=0x202f
            | 0x205f..=0x2064
            | 0x2066..=0x206f
            | 0x3000
            | 0xe000..=0xf8ff
            | 0xfeff
            | 0xfff9..=0xfffb
            | 0x110bd
            | 0x110cd
            | 0x13430..=0x1343f
            | 0x1bca0..=0x1bca3
            | 0x1d173..=0x1d17a
            | 0xe0001
            | 0xe0020..=0xe007f
            | 0xf0000..=0x10ffff
    )
}

#[cfg(test)]
mod tests {
    //! Expected strings come from the seed (`einlang/einlang`, run as
    //! `python3 -m einlang -c ...` with numpy 2.4) and from the Python and
    //! numpy behaviour its code relies on:
    //! - `print`: `builtin_print` in `src/einlang/backends/numpy_helpers.py`
    //!   prints `a.tolist()` (or `list(a)` for tuples) with Python's `print`.
    //! - interpolation: `visit_interpolated_string` in
    //!   `src/einlang/backends/numpy_expressions.py` joins `str(part)`.
    use ndarray::{arr0, arr1, arr2, arr3, Array1, Array2, Array3};

    use super::*;

    fn p<T: Show + ?Sized>(v: &T) -> String {
        print_arg(v)
    }

    fn s<T: Show + ?Sized>(v: &T) -> String {
        interp(v, None)
    }

    // --- print of scalars ---------------------------------------------------

    #[test]
    fn print_integers_and_bools() {
        // Seed: `let x = 7 / 2; print(x);` -> `3`; `print(true)` -> `True`.
        assert_eq!(p(&3i32), "3");
        assert_eq!(p(&-42i64), "-42");
        assert_eq!(p(&255u8), "255");
        assert_eq!(p(&u64::MAX), "18446744073709551615");
        assert_eq!(p(&true), "True");
        assert_eq!(p(&false), "False");
    }

    #[test]
    fn print_f64_is_python_repr() {
        // Seed: `print(2.0)` -> `2.0`, `print(0.1 + 0.2)` ->
        // `0.30000000000000004`, `print(1e20)` -> `1e+20`, `print(0.00001)` ->
        // `1e-05`, `print(-0.0)` -> `-0.0`, `print(1.0 / 0.0)` -> `inf`.
        assert_eq!(p(&2.0f64), "2.0");
        assert_eq!(p(&0.1f64), "0.1");
        assert_eq!(p(&(0.1f64 + 0.2)), "0.30000000000000004");
        assert_eq!(p(&1e20f64), "1e+20");
        assert_eq!(p(&1e-5f64), "1e-05");
        assert_eq!(p(&1.5e-5f64), "1.5e-05");
        assert_eq!(p(&-0.0f64), "-0.0");
        assert_eq!(p(&f64::INFINITY), "inf");
        assert_eq!(p(&f64::NEG_INFINITY), "-inf");
        assert_eq!(p(&f64::NAN), "nan");
        // Python switches to exponents below 1e-4 and from 1e16 on.
        assert_eq!(p(&0.0001f64), "0.0001");
        assert_eq!(p(&1e15f64), "1000000000000000.0");
        assert_eq!(p(&1e16f64), "1e+16");
        assert_eq!(p(&123456789.0f64), "123456789.0");
        assert_eq!(p(&1e100f64), "1e+100");
        assert_eq!(p(&-2.5e-300f64), "-2.5e-300");
        assert_eq!(p(&5e-324f64), "5e-324");
        assert_eq!(p(&0.0f64), "0.0");
    }

    #[test]
    fn print_f32_widens_like_tolist() {
        // Seed: `let x = [0.1, 0.2, 2.0]; print(x[0]);` ->
        // `0.10000000149011612`; `print(sum[i](x[i]))` -> `2.299999952316284`;
        // `print(42 as f32)` -> `42.0`.
        assert_eq!(p(&0.1f32), "0.10000000149011612");
        assert_eq!(p(&(0.1f32 + 0.2 + 2.0)), "2.299999952316284");
        assert_eq!(p(&42.0f32), "42.0");
        assert_eq!(p(&1e20f32), "1.0000000200408773e+20");
        assert_eq!(p(&1e-5f32), "9.999999747378752e-06");
        assert_eq!(p(&f32::NAN), "nan");
        assert_eq!(p(&f32::NEG_INFINITY), "-inf");
        assert_eq!(p(&-0.0f32), "-0.0");
    }

    #[test]
    fn print_strings_are_bare() {
        // Seed: `print("a", 1, 2.5, "b")` -> `a 1 2.5 b`.
        assert_eq!(p("it's"), "it's");
        assert_eq!(p(&String::from("x y")), "x y");
        assert_eq!(p(&&&"ref"), "ref");
    }

    #[test]
    fn print_line_joins_with_spaces() {
        // Seed: `print("a", 1, 2.5, "b");` -> `a 1 2.5 b`; `print();` -> empty line.
        let parts = [p("a"), p(&1i32), p(&2.5f64), p("b")];
        assert_eq!(line(&parts), "a 1 2.5 b\n");
        assert_eq!(line(&[]), "\n");
    }

    // --- print of arrays and tuples ------------------------------------------

    #[test]
    fn print_arrays_as_python_lists() {
        // Seed README: the 2x2 matmul prints `[[19, 22], [43, 50]]`; examples
        // mnist expects `[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]`.
        assert_eq!(p(&arr2(&[[19, 22], [43, 50]])), "[[19, 22], [43, 50]]");
        assert_eq!(p(&Array1::from_iter(0i64..10)), "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]");
        // Seed: `print([0.1, 0.2, 2.0])` -> `[0.10000000149011612, 0.20000000298023224, 2.0]`.
        assert_eq!(p(&arr1(&[0.1f32, 0.2, 2.0])), "[0.10000000149011612, 0.20000000298023224, 2.0]");
        // Seed: `print([1e20, 0.00001])` (f32) -> widened values.
        assert_eq!(p(&arr1(&[1e20f32, 1e-5])), "[1.0000000200408773e+20, 9.999999747378752e-06]");
        // Seed: `print([1, 2] as [f64; 2])` -> `[1.0, 2.0]`; `[true, false]` -> `[True, False]`.
        assert_eq!(p(&arr1(&[1.0f64, 2.0])), "[1.0, 2.0]");
        assert_eq!(p(&arr1(&[true, false])), "[True, False]");
        assert_eq!(p(&arr3(&[[[1u8], [2]], [[3], [4]]])), "[[[1], [2]], [[3], [4]]]");
        // A transposed view prints in logical order.
        assert_eq!(p(&arr2(&[[1, 2], [3, 4]]).t()), "[[1, 3], [2, 4]]");
    }

    #[test]
    fn print_strings_inside_arrays_are_quoted() {
        // examples/deit_tiny expects `['Egyptian Mau', 'Golden Retriever', 'strawberry']`;
        // seed: `print(["a", "b"])` -> `['a', 'b']`. Python's repr picks
        // double quotes for text with a single quote only.
        let names = arr1(&["Egyptian Mau", "Golden Retriever", "strawberry"]);
        assert_eq!(p(&names), "['Egyptian Mau', 'Golden Retriever', 'strawberry']");
        assert_eq!(p(&arr1(&["it's", "a\"b", "x'y\"z"])), r#"["it's", 'a"b', 'x\'y"z']"#);
        assert_eq!(p(&arr1(&["a\nb\\", "é\u{a0}\u{200b}\u{7f}\u{85}"])), r"['a\nb\\', 'é\xa0\u200b\x7f\x85']");
    }

    #[test]
    fn print_empty_and_zero_dim_arrays() {
        // `tolist()` of shape (0,), (0, 3), (2, 0) gives [], [], [[], []];
        // of a 0-d array the bare element.
        assert_eq!(p(&Array1::<i32>::zeros(0)), "[]");
        assert_eq!(p(&Array2::<f32>::zeros((0, 3))), "[]");
        assert_eq!(p(&Array2::<f32>::zeros((2, 0))), "[[], []]");
        assert_eq!(p(&arr0(0.5f32)), "0.5");
        assert_eq!(p(&arr0(0.1f32)), "0.10000000149011612");
    }

    #[test]
    fn print_tuples_as_lists() {
        // Seed: `print((1, 2.5))` -> `[1, 2.5]` (`list(t)`), `print((1, (2, 3)))`
        // -> `[1, (2, 3)]`: only the outer tuple becomes a list.
        assert_eq!(p(&(1i32, 2.5f64)), "[1, 2.5]");
        assert_eq!(p(&(1i32, (2i32, 3i32))), "[1, (2, 3)]");
        assert_eq!(p(&(1i32, (2i32,))), "[1, (2,)]");
        assert_eq!(p(&("a", true)), "['a', True]");
        assert_eq!(p(&(1i32, arr1(&[1i32, 2]))), "[1, [1, 2]]");
        assert_eq!(p(&(1u8, 2i16, 3i32, 4i64, 5u32, 6u64)), "[1, 2, 3, 4, 5, 6]");
    }

    // --- interpolation of scalars ------------------------------------------------

    #[test]
    fn interp_scalars_are_python_str() {
        // Seed: `"pi = {x}"` with x = 3.14159 -> `pi = 3.14159`; `"b = {x}"`
        // -> `b = True`; `"s = {x}"` with "hi" -> `s = hi`; `{s}` with
        // s = x[0] of an f32 array -> `0.1` (numpy float32 str: own digits).
        assert_eq!(s(&3.14159f64), "3.14159");
        assert_eq!(s(&true), "True");
        assert_eq!(s("hi"), "hi");
        assert_eq!(s(&7i32), "7");
        assert_eq!(s(&0.1f32), "0.1");
        assert_eq!(s(&2.0f32), "2.0");
        assert_eq!(s(&1e20f32), "1e+20");
        assert_eq!(s(&1.5e-5f32), "1.5e-05");
        assert_eq!(s(&3.4e38f32), "3.4e+38");
        // numpy >= 2.3 writes float32 scalars positionally only in [1e-4, 1e6):
        // str(np.float32(1e6)) -> '1e+06', str(np.float32(1e-4)) -> '1e-04'.
        assert_eq!(s(&999999.9f32), "999999.9");
        assert_eq!(s(&1e6f32), "1e+06");
        assert_eq!(s(&123456789.0f32), "1.2345679e+08");
        assert_eq!(s(&1e-4f32), "1e-04");
        assert_eq!(s(&1e-3f32), "0.001");
        assert_eq!(s(&-0.0f32), "-0.0");
        assert_eq!(s(&f32::INFINITY), "inf");
        assert_eq!(s(&(0.1f64 + 0.2)), "0.30000000000000004");
    }

    #[test]
    fn interp_precision_is_fixed_decimals() {
        // The seed's docs/reference.md: `"pi = {pi:.4f}"` -> `pi = 3.1416`
        // (its implementation drops the spec; see the module comment).
        // Python's '.Nf' rounds the exact binary value, ties to even.
        assert_eq!(interp(&3.14159265f64, Some(4)), "3.1416");
        assert_eq!(interp(&3.14159265f32, Some(3)), "3.142");
        assert_eq!(interp(&0.125f64, Some(2)), "0.12");
        assert_eq!(interp(&0.375f64, Some(2)), "0.38");
        assert_eq!(interp(&2.5f64, Some(0)), "2");
        assert_eq!(interp(&-0.001f64, Some(2)), "-0.00");
        assert_eq!(interp(&1e20f64, Some(1)), "100000000000000000000.0");
        assert_eq!(interp(&f64::NAN, Some(1)), "nan");
        assert_eq!(interp(&f32::NEG_INFINITY, Some(1)), "-inf");
        // Precision applies to floats only.
        assert_eq!(interp(&42i32, Some(3)), "42");
        assert_eq!(interp("hello", Some(2)), "hello");
        assert_eq!(interp(&true, Some(2)), "True");
    }

    #[test]
    fn interp_tuples_are_python_tuples() {
        // Seed: `"t = {x}"` with x = (1, 2) -> `t = (1, 2)`.
        assert_eq!(s(&(1i32, 2i32)), "(1, 2)");
        assert_eq!(s(&(7i32,)), "(7,)");
        assert_eq!(s(&("a", 0.5f32, false)), "('a', 0.5, False)");
        assert_eq!(interp(&(1i32, 2.0f64), Some(2)), "(1, 2.00)");
    }

    // --- interpolation of arrays: numpy's str ------------------------------

    #[test]
    fn interp_int_and_bool_arrays() {
        // Seed: `"x = {x}"` with [1, 2, 3] -> `x = [1 2 3]`. numpy pads
        // integers to the widest and booleans to five columns.
        assert_eq!(s(&arr1(&[1, 2, 3])), "[1 2 3]");
        assert_eq!(s(&arr1(&[-1i64, 100])), "[ -1 100]");
        assert_eq!(s(&arr1(&[true, false])), "[ True False]");
        assert_eq!(s(&arr1(&[true])), "[ True]");
        assert_eq!(s(&arr2(&[[19, 22], [43, 50]])), "[[19 22]\n [43 50]]");
        assert_eq!(
            s(&Array3::from_shape_vec((2, 3, 4), (0..24).collect()).unwrap_or_default()),
            "[[[ 0  1  2  3]\n  [ 4  5  6  7]\n  [ 8  9 10 11]]\n\n [[12 13 14 15]\n  [16 17 18 19]\n  [20 21 22 23]]]"
        );
    }

    #[test]
    fn interp_float_arrays_positional() {
        // Seed: `"x = {x}"` with [[1.5, 2.0], [3.0, 4.0]] -> `[[1.5 2. ]\n [3.  4. ]]`.
        assert_eq!(s(&arr2(&[[1.5f32, 2.0], [3.0, 4.0]])), "[[1.5 2. ]\n [3.  4. ]]");
        // numpy: str(np.array([0.1, 0.2, 2.0], dtype=float32)) -> '[0.1 0.2 2. ]'.
        assert_eq!(s(&arr1(&[0.1f32, 0.2, 2.0])), "[0.1 0.2 2. ]");
        // At most 8 fraction digits, rounded; f32 uses its own digits.
        assert_eq!(s(&arr1(&[0.123456789123f64, 1.0])), "[0.12345679 1.        ]");
        assert_eq!(s(&arr1(&[1.0f64 / 3.0, 2.0 / 3.0])), "[0.33333333 0.66666667]");
        assert_eq!(s(&arr1(&[1.0f32 / 3.0, 2.0 / 3.0])), "[0.33333334 0.6666667 ]");
        assert_eq!(s(&arr1(&[123.456f64, -0.5])), "[123.456  -0.5  ]");
        assert_eq!(s(&arr1(&[-0.0f64, 1.0])), "[-0.  1.]");
        assert_eq!(s(&arr1(&[0.0f64, 0.0])), "[0. 0.]");
        // For f32 the 1e-4 bound is compared in f32, so f32(1e-4) stays positional.
        assert_eq!(s(&arr1(&[1e-4f32, 0.001])), "[0.0001 0.001 ]");
        assert_eq!(s(&arr1(&[0.001f32, 1.0])), "[0.001 1.   ]");
    }

    #[test]
    fn interp_float_arrays_scientific() {
        // numpy: magnitudes >= 1e8, < 1e-4, or a ratio over 1000 switch the
        // whole array to exponents with a common mantissa width.
        assert_eq!(s(&arr1(&[1e20f64, 1e-5])), "[1.e+20 1.e-05]");
        assert_eq!(s(&arr1(&[1.5e20f64, 1e-5])), "[1.5e+20 1.0e-05]");
        assert_eq!(s(&arr1(&[1e100f64, 1.0])), "[1.e+100 1.e+000]");
        assert_eq!(s(&arr1(&[0.001f64, 1.0001])), "[1.0000e-03 1.0001e+00]");
        assert_eq!(s(&arr1(&[0.001f32, 1.0000001])), "[1.0000000e-03 1.0000001e+00]");
        assert_eq!(s(&arr1(&[1e8f32, 1.0])), "[1.e+08 1.e+00]");
        assert_eq!(s(&arr1(&[-1.5e20f64, 2.0])), "[-1.5e+20  2.0e+00]");
        assert_eq!(s(&arr1(&[0.999999999999f64, 1e7])), "[1.e+00 1.e+07]");
    }

    #[test]
    fn interp_float_arrays_non_finite() {
        // numpy right-aligns nan/inf in the common width.
        assert_eq!(s(&arr1(&[f64::INFINITY, 1.0, f64::NAN])), "[inf  1. nan]");
        assert_eq!(s(&arr1(&[f64::NEG_INFINITY, 1.5])), "[-inf  1.5]");
        assert_eq!(s(&arr1(&[f64::NAN])), "[nan]");
        assert_eq!(s(&arr1(&[f64::INFINITY, f64::NEG_INFINITY])), "[ inf -inf]");
        assert_eq!(s(&arr1(&[f64::NAN, 1e20])), "[   nan 1.e+20]");
        assert_eq!(s(&arr1(&[f64::NEG_INFINITY, 1e-20])), "[  -inf 1.e-20]");
    }

    #[test]
    fn interp_float_arrays_with_precision() {
        // `{a:.N}` on an array: numpy's floatmode='fixed' with precision N,
        // e.g. np.array2string([0.125, 0.375], precision=2, floatmode='fixed').
        assert_eq!(interp(&arr1(&[0.125f64, 0.375]), Some(2)), "[0.12 0.38]");
        assert_eq!(interp(&arr1(&[1.0f64, 2.5]), Some(0)), "[1. 2.]");
        assert_eq!(interp(&arr1(&[1e20f64, 2.5]), Some(2)), "[1.00e+20 2.50e+00]");
        assert_eq!(interp(&arr1(&[1.5f32, -2.0]), Some(3)), "[ 1.500 -2.000]");
        assert_eq!(interp(&arr1(&[1i32, 20]), Some(3)), "[ 1 20]");
    }

    #[test]
    fn interp_string_and_empty_arrays() {
        // numpy shows string elements with repr and no padding.
        assert_eq!(s(&arr1(&["a", "bcd"])), "['a' 'bcd']");
        assert_eq!(s(&arr1(&["it's", "x"])), "[\"it's\" 'x']");
        // Any array with no elements is `[]`; a 0-d array is its element's str.
        assert_eq!(s(&Array2::<f64>::zeros((2, 0))), "[]");
        assert_eq!(s(&Array1::<i32>::zeros(0)), "[]");
        assert_eq!(s(&arr0(0.1f32)), "0.1");
        assert_eq!(s(&arr0(5i32)), "5");
    }

    #[test]
    fn interp_arrays_wrap_at_75_columns() {
        // numpy: str(np.arange(30) * 1000).
        let a = Array1::from_iter((0..30).map(|i| i * 1000));
        assert_eq!(
            s(&a),
            "[    0  1000  2000  3000  4000  5000  6000  7000  8000  9000 10000 11000\n \
             12000 13000 14000 15000 16000 17000 18000 19000 20000 21000 22000 23000\n \
             24000 25000 26000 27000 28000 29000]"
        );
    }

    #[test]
    fn interp_large_arrays_are_summarized() {
        // numpy: str(np.arange(2000)) and str(np.arange(1200).reshape(2, 600)).
        assert_eq!(s(&Array1::from_iter(0..2000)), "[   0    1    2 ... 1997 1998 1999]");
        let a = Array2::from_shape_vec((2, 600), (0..1200).collect()).unwrap_or_default();
        assert_eq!(s(&a), "[[   0    1    2 ...  597  598  599]\n [ 600  601  602 ... 1197 1198 1199]]");
        // Axes of rank > 1 get a `...` line; blocks keep their blank lines.
        let b = Array3::from_shape_vec((10, 2, 60), (0..1200).collect()).unwrap_or_default();
        let text = s(&b);
        assert!(text
            .starts_with("[[[   0    1    2 ...   57   58   59]\n  [  60   61   62 ...  117  118  119]]\n\n [[ 120"));
        assert!(text.contains("]]\n\n ...\n\n [[ 840"));
        assert!(text.ends_with("[1140 1141 1142 ... 1197 1198 1199]]]"));
    }

    #[test]
    fn interp_inside_text() {
        // A codegen-style use: text parts around interpolations.
        let x = arr2(&[[1.5f32, 2.0], [3.0, 4.0]]);
        let text = format!("x = {}", interp(&x, None));
        assert_eq!(text, "x = [[1.5 2. ]\n [3.  4. ]]");
    }

    #[test]
    fn digits_parse() {
        assert_eq!(shortest_f64(1250.0), Digits { negative: false, digits: "125".into(), exp: 3 });
        assert_eq!(shortest_f32(-0.1), Digits { negative: true, digits: "1".into(), exp: -1 });
        assert_eq!(shortest_f64(0.0), Digits { negative: false, digits: "0".into(), exp: 0 });
    }
}

/// A vector of strings shows as the seed shows a string array: a list of
/// quoted strings for `print` (`['a', 'b']`), numpy's layout in
/// interpolation.
impl Show for [String] {
    fn show(&self, out: &mut String, style: Style, item: bool) {
        ndarray::ArrayView1::from(self).show(out, style, item);
    }

    fn cell(&self) -> Cell {
        let mut text = String::new();
        self.show(&mut text, Style::Print, true);
        Cell::Text(text)
    }
}

impl Show for Vec<String> {
    fn show(&self, out: &mut String, style: Style, item: bool) {
        self.as_slice().show(out, style, item);
    }

    fn cell(&self) -> Cell {
        self.as_slice().cell()
    }
}
