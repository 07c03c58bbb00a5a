//! Shape checks emitted at function entry and before loop nests.

use ndarray::{Array, Array1, ArrayBase, ArrayD, ArrayView, Axis, CowArray, Dimension, IxDyn, RawData};

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

/// [`extent`] of a value computed with checked arithmetic: `None` (the
/// expression `what` overflowed `i64`, `reps * N` with a huge `reps`) is an
/// `Error::Extent` that names it and says so, not a wrapped length.
#[inline]
pub fn checked_extent(function: &str, what: &str, value: Option<i64>) -> Result<usize, Error> {
    match value {
        Some(v) => extent(function, what, v),
        None => Err(Error::Extent {
            function: function.to_string(),
            message: format!("the extent `{what}` overflows `i64`"),
        }),
    }
}

/// The number of steps of a loop over `start..end`, from `end - start`
/// computed with checked arithmetic: none when it is negative (a range
/// that ends before it starts is empty, as in Rust), `Error::Extent` naming
/// `what` when the arithmetic overflowed `i64`.
#[inline]
pub fn checked_count(function: &str, what: &str, value: Option<i64>) -> Result<usize, Error> {
    match value {
        Some(v) => Ok(v.max(0) as usize),
        None => checked_extent(function, what, None),
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

fn extent_error(function: &str, message: String) -> Error {
    Error::Extent { function: function.to_string(), message }
}

/// An axis given from the end when negative (`-1` is the last of `rank`).
fn axis_index(function: &str, axis: i64, rank: usize) -> Result<usize, Error> {
    let a = if axis < 0 { axis + rank as i64 } else { axis };
    if a < 0 || a >= rank as i64 {
        return Err(extent_error(function, format!("axis {axis} is out of range for rank {rank}")));
    }
    Ok(a as usize)
}

/// The elements of `x` in row-major order, in a tensor of shape `dims`
/// (which has as many elements).
fn relaid<T: Clone, D: Dimension>(function: &str, x: ArrayView<'_, T, D>, dims: &[usize]) -> Result<ArrayD<T>, Error> {
    from_elems(function, IxDyn(dims), x.iter().cloned().collect())
}

/// `shape` when it holds `len` elements, else an error naming both.
fn reshaped<Sh: ndarray::IntoDimension>(function: &str, len: usize, shape: Sh) -> Result<Sh::Dim, Error> {
    let shape = shape.into_dimension();
    if shape.size_checked() != Some(len) {
        return Err(extent_error(function, format!("cannot reshape {len} elements into {:?}", shape.slice())));
    }
    Ok(shape)
}

/// A copy of `a`'s elements in row-major order as an array of `shape`
/// (which holds as many).
fn row_major<T: Clone, D: Dimension, E: Dimension>(
    function: &str,
    a: ArrayView<'_, T, D>,
    shape: E,
) -> Result<Array<T, E>, Error> {
    Array::from_shape_vec(shape, a.iter().cloned().collect())
        .map_err(|e| extent_error(function, format!("cannot reshape: {e}")))
}

/// `a`'s elements in row-major order as an array of `shape`, reusing its
/// storage when it is in standard layout (a packed operand of a GEMM: see
/// `einlang_core::opt::pack`). A different number of elements is an error.
pub fn reshape_owned<T: Clone, D: Dimension, Sh: ndarray::IntoDimension>(
    function: &str,
    a: Array<T, D>,
    shape: Sh,
) -> Result<Array<T, Sh::Dim>, Error> {
    let shape = reshaped(function, a.len(), shape)?;
    if a.is_standard_layout() {
        return a.into_shape_with_order(shape).map_err(|e| extent_error(function, format!("cannot reshape: {e}")));
    }
    row_major(function, a.view(), shape)
}

/// [`reshape_owned`] of a tensor the caller keeps: a view of the same
/// memory when it is in standard layout, else a copy in row-major order.
pub fn reshape_view<'a, T: Clone, D: Dimension, Sh: ndarray::IntoDimension>(
    function: &str,
    a: ArrayView<'a, T, D>,
    shape: Sh,
) -> Result<CowArray<'a, T, Sh::Dim>, Error> {
    let shape = reshaped(function, a.len(), shape)?;
    if a.is_standard_layout() {
        return a
            .into_shape_with_order(shape)
            .map(CowArray::from)
            .map_err(|e| extent_error(function, format!("cannot reshape: {e}")));
    }
    row_major(function, a, shape).map(CowArray::from)
}

/// The block of `a` from index 0 to `lens` along each axis, as a tensor in
/// standard layout: a view of `a`'s memory when the block is contiguous in
/// row-major order (the whole of a standard-layout parameter), else a
/// copy. A copy of a parameter as it is (a packed operand) then costs
/// nothing.
pub fn leading_block<'a, T: Clone, D: Dimension>(
    function: &str,
    a: ArrayView<'a, T, D>,
    lens: &[usize],
) -> Result<CowArray<'a, T, D>, Error> {
    if lens.len() != a.ndim() || lens.iter().zip(a.shape()).any(|(l, n)| l > n) {
        return Err(extent_error(
            function,
            format!("cannot take a block of extents {lens:?} from a tensor of shape {:?}", a.shape()),
        ));
    }
    let block = leading(a, lens);
    if block.is_standard_layout() {
        return Ok(CowArray::from(block));
    }
    let shape = block.raw_dim();
    row_major(function, block, shape).map(CowArray::from)
}

/// The block of `a` from index 0 to `lens` along each axis (each at most
/// the axis's length).
fn leading<'a, T, D: Dimension>(a: ArrayView<'a, T, D>, lens: &[usize]) -> ArrayView<'a, T, D> {
    let mut block = a;
    for (axis, &len) in lens.iter().enumerate() {
        block.slice_axis_inplace(Axis(axis), ndarray::Slice::from(..len));
    }
    block
}

/// A copy, in standard layout, of the block of `a` from index 0 to `lens`
/// along each axis: a definition that reads a tensor at fixed leading
/// indices and its own indices after them (`last[i, j] = u[steps - 1, i,
/// j]`), with `a` the sub-tensor at the leading indices, which are the
/// first `lead` axes of `tensor`. Where `lens` runs past `a`, the error is
/// the one reading the elements in row-major order would give first: an
/// axis of length 0 at index 0 (the first such axis), else the last axis
/// that runs past, at its length. The copy runs in parallel rows when it
/// is large.
pub fn slab<T: Copy + Send + Sync + 'static, D: Dimension>(
    function: &str,
    tensor: &str,
    lead: usize,
    a: ArrayView<'_, T, D>,
    lens: &[usize],
) -> Result<Array<T, D>, Error> {
    if lens.len() != a.ndim() {
        return Err(extent_error(
            function,
            format!("a block of rank {} from a tensor of rank {}", lens.len(), a.ndim()),
        ));
    }
    let past = |axis: usize, index: usize| Error::Index {
        function: function.to_string(),
        tensor: tensor.to_string(),
        axis: lead + axis,
        index: index as i64,
        len: a.shape()[axis],
    };
    if lens.contains(&0) {
        // No element is read: an empty tensor of shape `lens`.
        let mut dim = a.raw_dim();
        for (axis, &len) in lens.iter().enumerate() {
            dim[axis] = len;
        }
        return Array::from_shape_vec(dim, Vec::new()).map_err(|e| extent_error(function, e.to_string()));
    }
    if let Some(axis) = a.shape().iter().position(|&n| n == 0) {
        return Err(past(axis, 0));
    }
    if let Some(axis) = (0..lens.len()).rev().find(|&axis| lens[axis] > a.shape()[axis]) {
        return Err(past(axis, a.shape()[axis]));
    }
    let block = leading(a, lens);
    // (From the buffer pool: a copy of a window's last step, where a
    // repeated call would fault in fresh pages.)
    let mut out = crate::pool::try_uninit::<T, D>(function, tensor, block.raw_dim())?;
    // Row by row (the runs of the last axis), each a slice copy when the
    // source's run is contiguous.
    ndarray::Zip::from(out.rows_mut()).and(block.rows()).par_for_each(|mut o, x| {
        match (o.as_slice_mut(), x.as_slice()) {
            (Some(o), Some(x)) => o.iter_mut().zip(x).for_each(|(o, &x)| {
                o.write(x);
            }),
            _ => o.iter_mut().zip(x.iter()).for_each(|(o, &x)| {
                o.write(x);
            }),
        }
    });
    // SAFETY: the zip wrote every element of `out`.
    Ok(unsafe { out.assume_init() })
}

/// `reshape(x, shape)`: the elements of `x` in row-major order, in a tensor
/// of shape `shape`, where one entry may be `-1` (the length that makes the
/// element counts agree). A shape whose element count differs is an error.
pub fn reshape<T: Clone, D: Dimension>(
    function: &str,
    x: ArrayView<'_, T, D>,
    shape: &[i64],
) -> Result<ArrayD<T>, Error> {
    let free = shape.iter().filter(|&&n| n == -1).count();
    let bad = || extent_error(function, format!("cannot reshape {} elements into {shape:?}", x.len()));
    if free > 1 || shape.iter().any(|&n| n < -1) {
        return Err(bad());
    }
    // A product of the given extents that overflows cannot match.
    let known = shape.iter().filter(|&&n| n != -1).try_fold(1i64, |p, &n| p.checked_mul(n)).ok_or_else(bad)?;
    let mut dims = Vec::with_capacity(shape.len());
    for &n in shape {
        if n == -1 {
            if known == 0 || x.len() as i64 % known != 0 {
                return Err(bad());
            }
            dims.push((x.len() as i64 / known) as usize);
        } else {
            dims.push(n as usize);
        }
    }
    if dims.iter().product::<usize>() != x.len() {
        return Err(bad());
    }
    relaid(function, x, &dims)
}

/// `squeeze(x, axes)`: `x` without the listed axes (negative from the
/// end), each of which must have length 1; with no axes, without every
/// axis of length 1.
pub fn squeeze<T: Clone, D: Dimension>(
    function: &str,
    x: ArrayView<'_, T, D>,
    axes: &[i64],
) -> Result<ArrayD<T>, Error> {
    let rank = x.ndim();
    let mut drop = vec![false; rank];
    if axes.is_empty() {
        for (a, &n) in x.shape().iter().enumerate() {
            drop[a] = n == 1;
        }
    }
    for &axis in axes {
        let a = axis_index(function, axis, rank)?;
        if x.shape()[a] != 1 {
            return Err(extent_error(function, format!("cannot squeeze axis {axis} of length {}", x.shape()[a])));
        }
        drop[a] = true;
    }
    let dims: Vec<usize> = x.shape().iter().zip(&drop).filter(|(_, d)| !**d).map(|(n, _)| *n).collect();
    relaid(function, x, &dims)
}

/// `unsqueeze(x, axes)`: `x` with axes of length 1 inserted at the listed
/// positions of the result (negative from the end of the result).
pub fn unsqueeze<T: Clone, D: Dimension>(
    function: &str,
    x: ArrayView<'_, T, D>,
    axes: &[i64],
) -> Result<ArrayD<T>, Error> {
    let rank = x.ndim() + axes.len();
    let mut inserted = vec![false; rank];
    for &axis in axes {
        let a = axis_index(function, axis, rank)?;
        if inserted[a] {
            return Err(extent_error(function, format!("axis {axis} is listed twice")));
        }
        inserted[a] = true;
    }
    let mut src = x.shape().iter();
    let dims: Vec<usize> = inserted.iter().map(|&new| if new { 1 } else { *src.next().unwrap_or(&1) }).collect();
    relaid(function, x, &dims)
}

/// `slice(x, params)`, ONNX Slice: `params` holds the vectors `starts`,
/// `ends`, `axes` and `steps`, of one length, one after another. Along each
/// listed axis (negative from the end) the result keeps the entries from
/// `start` towards `end` (exclusive) by `step`; a negative step walks
/// backwards. Negative starts and ends count from the end of the axis, and
/// both are clamped to it as ONNX does. Unlisted axes are kept whole. A
/// step of 0, an axis out of range or listed twice is an error.
pub fn slice<T: Clone, D: Dimension>(
    function: &str,
    x: ArrayView<'_, T, D>,
    params: &[i64],
) -> Result<ArrayD<T>, Error> {
    if !params.len().is_multiple_of(4) {
        return Err(extent_error(function, "starts, ends, axes and steps must have one length".to_string()));
    }
    let n = params.len() / 4;
    let (starts, ends, axes, steps) = (&params[..n], &params[n..2 * n], &params[2 * n..3 * n], &params[3 * n..]);
    let rank = x.ndim();
    let mut out = x.into_dyn().to_owned();
    let mut listed = vec![false; rank];
    for j in 0..n {
        let a = axis_index(function, axes[j], rank)?;
        if std::mem::replace(&mut listed[a], true) {
            return Err(extent_error(function, format!("axis {} is listed twice", axes[j])));
        }
        let step = steps[j];
        if step == 0 {
            return Err(extent_error(function, format!("the step of axis {} is 0", axes[j])));
        }
        let d = out.shape()[a] as i64;
        let from_end = |v: i64| if v < 0 { v.saturating_add(d) } else { v };
        // Where the walk may start and stop: [0, d] forwards, [-1, d - 1]
        // backwards (the start at least 0).
        let (start, end) = if step > 0 {
            (from_end(starts[j]).max(0).min(d), from_end(ends[j]).max(0).min(d))
        } else {
            (from_end(starts[j]).max(0).min(d - 1), from_end(ends[j]).max(-1).min(d - 1))
        };
        let mut picked = Vec::new();
        let mut i = start;
        while (step > 0 && i < end) || (step < 0 && i > end) {
            picked.push(i as usize);
            match i.checked_add(step) {
                Some(next) => i = next,
                None => break,
            }
        }
        out = out.select(Axis(a), &picked);
    }
    Ok(out)
}

/// `gather_nd(x, params)`, ONNX GatherND with no batch axes: `params` is
/// the rank q of the indices, their q extents, then their elements in
/// row-major order. Each row of the last index axis (length k, at most the
/// rank of `x`) names a point (k = rank) or a sub-tensor of `x`, negative
/// entries counting from the end of their axis; the result is the indices'
/// leading extents followed by `x`'s extents after the first k. An entry
/// out of range is `Error::Index`.
pub fn gather_nd<T: Clone, D: Dimension>(
    function: &str,
    x: ArrayView<'_, T, D>,
    params: &[i64],
) -> Result<ArrayD<T>, Error> {
    let bad = || extent_error(function, "malformed index tensor".to_string());
    let q = usize::try_from(*params.first().ok_or_else(bad)?).map_err(|_| bad())?;
    if q == 0 || params.len() < 1 + q || params[1..1 + q].iter().any(|&n| n < 0) {
        return Err(bad());
    }
    let idims: Vec<usize> = params[1..1 + q].iter().map(|&n| n as usize).collect();
    let elems = &params[1 + q..];
    if elems.len() != idims.iter().product::<usize>() {
        return Err(bad());
    }
    let (k, rank) = (idims[q - 1], x.ndim());
    if k > rank {
        return Err(extent_error(function, format!("index rows of length {k} for a tensor of rank {rank}")));
    }
    let x = x.into_dyn();
    let mut dims = idims[..q - 1].to_vec();
    dims.extend_from_slice(&x.shape()[k..]);
    let rows: usize = idims[..q - 1].iter().product();
    // The result's size comes from the index tensor's: reserved fallibly.
    let too_large = || extent_error(function, format!("a tensor of shape {dims:?} is too large to allocate"));
    let len = dims.iter().try_fold(1usize, |acc, &n| acc.checked_mul(n)).ok_or_else(too_large)?;
    let bytes =
        len.checked_mul(std::mem::size_of::<T>()).filter(|&b| b <= isize::MAX as usize).ok_or_else(too_large)?;
    let mut data = Vec::new();
    data.try_reserve_exact(len).map_err(|_| Error::Alloc {
        function: function.to_string(),
        tensor: String::new(),
        bytes,
    })?;
    for row in 0..rows {
        let mut part = x.view();
        for (a, &v) in elems[row * k..(row + 1) * k].iter().enumerate() {
            let len = x.shape()[a];
            let i = if v < 0 { v + len as i64 } else { v };
            if i < 0 || i >= len as i64 {
                let tensor = "data".to_string();
                return Err(Error::Index { function: function.to_string(), tensor, axis: a, index: v, len });
            }
            part.index_axis_inplace(Axis(0), i as usize);
        }
        data.extend(part.iter().cloned());
    }
    from_elems(function, IxDyn(&dims), data)
}

/// Checks that the tensor operands of an elementwise operation with a
/// dynamic-rank operand have one shape.
pub fn same_shape(function: &str, shapes: &[&[usize]]) -> Result<(), Error> {
    match shapes.split_first() {
        Some((first, rest)) => match rest.iter().find(|s| s != &first) {
            Some(other) => Err(extent_error(
                function,
                format!("elementwise operands have shapes {first:?} and {other:?}, which differ"),
            )),
            None => Ok(()),
        },
        None => Ok(()),
    }
}

/// The dynamic-rank tensor of `shape` holding `elems` in row-major order;
/// an error when their numbers differ.
pub fn from_elems<T>(function: &str, shape: IxDyn, elems: Vec<T>) -> Result<ArrayD<T>, Error> {
    let len = elems.len();
    let dims = shape.slice().to_vec();
    ArrayD::from_shape_vec(shape, elems)
        .map_err(|e| extent_error(function, format!("cannot lay out {len} elements as {dims:?}: {e}")))
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

/// Character `index` of `text` as a string of one character; an index
/// past the last character is `Error::Index` (the length counted in
/// characters).
pub fn char_at(function: &str, name: &str, text: &str, index: i64) -> Result<String, Error> {
    let len = text.chars().count();
    let i = check_index(function, name, 0, index, len)?;
    Ok(text.chars().nth(i).map(String::from).unwrap_or_default())
}

/// Element `index` of a vector of strings (a copy); a missing one is
/// `Error::Index`.
pub fn str_item(function: &str, name: &str, items: &[String], index: i64) -> Result<String, Error> {
    let i = check_index(function, name, 0, index, items.len())?;
    Ok(items[i].clone())
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
    fn elementwise_shapes() {
        assert!(same_shape("f", &[&[2, 3], &[2, 3], &[2, 3]]).is_ok());
        assert!(same_shape("f", &[&[2, 3]]).is_ok());
        let err = same_shape("f", &[&[2, 3], &[3, 2]]).unwrap_err();
        assert!(err.to_string().contains("[2, 3] and [3, 2]"), "{err}");
        assert!(same_shape("f", &[&[6], &[2, 3]]).is_err(), "same size, other rank");
        let a = from_elems("f", IxDyn(&[2, 2]), vec![1, 2, 3, 4]).unwrap();
        assert_eq!(a[[1, 0]], 3);
        assert!(from_elems("f", IxDyn(&[3]), vec![1, 2]).is_err());
    }

    #[test]
    fn leading_blocks_are_views_when_contiguous() {
        let a = ndarray::Array::from_shape_vec((3, 2, 4), (0..24).collect::<Vec<i32>>()).unwrap();
        let whole = leading_block("f", a.view(), &[3, 2, 4]).unwrap();
        assert!(whole.is_view() && whole.as_ptr() == a.as_ptr());
        // Fewer rows: still contiguous.
        let rows = leading_block("f", a.view(), &[2, 2, 4]).unwrap();
        assert!(rows.is_view() && rows.len() == 16);
        // Fewer columns: copied, in order.
        let cols = leading_block("f", a.view(), &[3, 2, 3]).unwrap();
        assert!(cols.is_owned() && cols.is_standard_layout());
        let want: Vec<i32> = (0..24).filter(|v| v % 4 != 3).collect();
        assert_eq!(cols.iter().copied().collect::<Vec<_>>(), want);
        // A transposed parameter: copied in the view's row-major order.
        let t = leading_block("f", a.view().reversed_axes(), &[4, 2, 3]).unwrap();
        assert!(t.is_owned());
        assert_eq!(t.iter().copied().collect::<Vec<_>>(), a.view().reversed_axes().iter().copied().collect::<Vec<_>>());
        assert!(leading_block("f", a.view(), &[4, 2, 4]).is_err());
        assert!(leading_block("f", a.view(), &[3, 2]).is_err());
    }

    #[test]
    fn views_reshape_in_place_when_standard() {
        let a = ndarray::Array::from_shape_vec((2, 3, 2), (0..12).collect::<Vec<i32>>()).unwrap();
        let r = reshape_view("f", a.view(), (2, 6)).unwrap();
        assert!(r.is_view() && r.as_ptr() == a.as_ptr());
        assert_eq!(r.row(1).to_vec(), (6..12).collect::<Vec<_>>());
        // Transposed: copied in row-major order of the view.
        let t = a.view().permuted_axes([2, 1, 0]);
        let r = reshape_view("f", t, (2, 6)).unwrap();
        assert!(r.is_owned());
        assert_eq!(r.iter().copied().collect::<Vec<_>>(), t.iter().copied().collect::<Vec<_>>());
        assert!(reshape_view("f", a.view(), (5, 2)).is_err());
    }

    #[test]
    fn reshape_squeeze_unsqueeze() {
        let a = ndarray::Array::from_shape_vec((2, 3), (0..6).collect::<Vec<i32>>()).unwrap();
        let r = reshape("f", a.view(), &[3, -1]).unwrap();
        assert_eq!(r.shape(), &[3, 2]);
        assert_eq!(r.iter().copied().collect::<Vec<_>>(), (0..6).collect::<Vec<_>>());
        // Logical order even for a transposed view.
        let t = reshape("f", a.t(), &[6]).unwrap();
        assert_eq!(t.iter().copied().collect::<Vec<_>>(), vec![0, 3, 1, 4, 2, 5]);
        assert!(matches!(reshape("f", a.view(), &[4, -1]), Err(Error::Extent { .. })));
        assert!(matches!(reshape("f", a.view(), &[-1, -1]), Err(Error::Extent { .. })));
        // Extents whose product overflows `i64` are an error, not a panic.
        assert!(matches!(reshape("f", a.view(), &[i64::MAX, 2, 3]), Err(Error::Extent { .. })));
        assert!(matches!(reshape("f", a.view(), &[i64::MAX, 3, -1]), Err(Error::Extent { .. })));
        let u = unsqueeze("f", a.view(), &[0, -1]).unwrap();
        assert_eq!(u.shape(), &[1, 2, 3, 1]);
        assert_eq!(squeeze("f", u.view(), &[]).unwrap().shape(), &[2, 3]);
        assert_eq!(squeeze("f", u.view(), &[-1]).unwrap().shape(), &[1, 2, 3]);
        assert!(matches!(squeeze("f", u.view(), &[1]), Err(Error::Extent { .. })));
        assert!(matches!(unsqueeze("f", a.view(), &[5]), Err(Error::Extent { .. })));
    }

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
    fn slab_copies_a_leading_block_or_names_the_first_bad_index() {
        let a = ndarray::Array3::from_shape_fn((2, 3, 4), |(i, j, k)| (i * 100 + j * 10 + k) as i32);
        let at1 = a.index_axis(Axis(0), 1);
        let got = slab("f", "u", 1, at1, &[2, 3]).unwrap();
        assert_eq!(got, ndarray::array![[100, 101, 102], [110, 111, 112]]);
        assert!(got.is_standard_layout());
        // Past the last axis comes first in row-major order: (0, 4).
        let e = slab("f", "u", 1, a.index_axis(Axis(0), 0), &[5, 6]).unwrap_err();
        assert_eq!(e, Error::Index { function: "f".into(), tensor: "u".into(), axis: 2, index: 4, len: 4 });
        let e = slab("f", "u", 1, a.index_axis(Axis(0), 0), &[5, 4]).unwrap_err();
        assert_eq!(e, Error::Index { function: "f".into(), tensor: "u".into(), axis: 1, index: 3, len: 3 });
        // An empty source axis fails at the first element; an empty block
        // reads nothing.
        let empty = ndarray::Array2::<i32>::zeros((0, 4));
        let e = slab("f", "u", 1, empty.view(), &[1, 1]).unwrap_err();
        assert_eq!(e, Error::Index { function: "f".into(), tensor: "u".into(), axis: 1, index: 0, len: 0 });
        assert_eq!(slab("f", "u", 1, empty.view(), &[0, 9]).unwrap().shape(), &[0, 9]);
    }

    #[test]
    fn check_index_bounds() {
        assert_eq!(check_index("f", "x", 0, 2, 3), Ok(2));
        assert!(check_index("f", "x", 0, 3, 3).is_err());
        assert!(check_index("f", "x", 0, -1, 3).is_err());
    }
}
