//! Results written into the caller's buffers: the `NAME_into` form of a
//! generated function.
//!
//! `NAME_into(args.., out)` runs the same body as `NAME`, handing it one
//! [`Out`] per tensor of its result (`NAME` hands it [`Out::none`]). The
//! definition that computes such a tensor, when it is a fill (every element
//! computed by the loop nest of one definition, the common case), writes
//! straight into the caller's view if the view is in standard layout
//! ([`fill_uninit_into`], [`fill_uninit_rows_into`], [`fill_into`]), and
//! leaves an empty placeholder as the body's value; a convolution run by
//! the direct kernel writes into a view of any strides ([`conv_into`]); a
//! sharded definition computed in interior and edge rows writes both into
//! a view in standard layout ([`rec_into`]); a result that is the
//! row-major reshape of such a definition (leading axes merged) has the
//! definition fill the view seen in its shape ([`Out::reshaped`]). Any
//! other result (a
//! product, a recurrence, a view of a parameter), or a view of other
//! strides, is computed as `NAME` computes it and copied in by
//! [`Out::finish`], its buffer going back to the [pool](crate::pool): a
//! loop of calls takes no fresh memory for its results after the first.
//!
//! A view whose shape is not the result's is an [`Error::Shape`] naming
//! the `out` parameter, raised before anything is written to it. An error
//! raised while the result is being computed (a bad gather, a failed
//! assertion) may leave the view partly written.

use std::mem::MaybeUninit;

use ndarray::{
    Array, Array2, Array3, ArrayView, ArrayView2, ArrayViewMut, Dimension, IntoDimension, Ix2, Ix3, LinalgScalar,
};
use rayon::prelude::*;

use crate::par::{check_size, fill_slice, fill_slice_uninit, parallel_work};
use crate::Error;

/// Where one tensor of a result goes: nowhere (the result is returned), or
/// a caller's view.
pub struct Out<'a, T, D: Dimension> {
    /// The Rust parameter the view came in (`out`, `out0`, ...).
    param: &'static str,
    view: Option<ArrayViewMut<'a, T, D>>,
    /// Whether the definition of the result wrote its elements into `view`.
    written: bool,
    /// The function whose `NAME_into` the caller called, when its body
    /// handed this buffer on to another function's (a result that is a
    /// call, `Out::named_by`): errors about the buffer name it.
    function: Option<&'static str>,
}

impl<'a, T, D> Out<'a, T, D>
where
    T: Copy + Send + Sync + 'static,
    D: Dimension,
{
    /// No buffer: the result is returned as a new array.
    pub fn none() -> Out<'a, T, D> {
        Out { param: "", view: None, written: false, function: None }
    }

    /// The caller's `view`, passed as the parameter `param`.
    pub fn new(param: &'static str, view: ArrayViewMut<'a, T, D>) -> Out<'a, T, D> {
        Out { param, view: Some(view), written: false, function: None }
    }

    /// The buffer, to be handed on to the body of another function whose
    /// result is `function`'s (`function`'s value is a call of it): its
    /// errors name `function`, the one the caller called (the outermost,
    /// when calls hand it on in turn).
    pub fn named_by(&mut self, function: &'static str) -> &mut Out<'a, T, D> {
        self.function.get_or_insert(function);
        self
    }

    /// The buffer seen with the shape `shape` of the definition whose
    /// row-major reshape is the result (`opt::lead` merges a result's
    /// leading axes): an `Error::Shape` first unless the buffer has the
    /// result's shape `full`; no view (the definition's array is then
    /// reshaped and copied in, [`Out::adopt`]) unless the buffer is in
    /// standard layout.
    pub fn reshaped<E: Dimension>(
        &mut self,
        function: &str,
        full: &[usize],
        shape: impl IntoDimension<Dim = E>,
    ) -> Result<Out<'_, T, E>, Error> {
        self.check(function, full)?;
        let view = self
            .view
            .as_mut()
            .filter(|v| v.is_standard_layout())
            .and_then(|v| v.view_mut().into_shape_with_order(shape.into_dimension()).ok());
        Ok(Out { param: self.param, view, written: false, function: self.function })
    }

    /// Whether the definition of the result wrote into the view.
    pub fn wrote(&self) -> bool {
        self.written
    }

    /// The value of the result whose definition's value is `value`, filled
    /// into this buffer's reshaped view when `wrote` (the placeholder then),
    /// else `value` reshaped to `shape`.
    pub fn adopt<E: Dimension>(
        &mut self,
        function: &str,
        wrote: bool,
        value: Array<T, E>,
        shape: impl IntoDimension<Dim = D>,
    ) -> Result<Array<T, D>, Error> {
        let shape = shape.into_dimension();
        if wrote {
            return self.written(function, shape.ndim());
        }
        crate::shape::reshape_owned(function, value, shape)
    }

    /// An `Error::Shape` naming the parameter unless the view (if any) has
    /// the result's `shape` (`Error::Rank` for a dynamic-rank buffer of
    /// another rank).
    fn check(&self, function: &str, shape: &[usize]) -> Result<(), Error> {
        let Some(view) = &self.view else { return Ok(()) };
        let function = self.function.unwrap_or(function);
        // (Only a `[T; *]` result's buffer can differ in rank.)
        if view.ndim() != shape.len() {
            return Err(Error::Rank {
                function: function.to_string(),
                target: format!("the result's shape {shape:?} (`{}`)", self.param),
                expected: shape.len(),
                found: view.ndim(),
            });
        }
        match shape.iter().zip(view.shape()).position(|(want, have)| want != have) {
            None => Ok(()),
            Some(axis) => Err(Error::Shape {
                function: function.to_string(),
                param: self.param.to_string(),
                axis,
                symbol: format!("result[{axis}]"),
                expected: shape[axis],
                found: view.shape()[axis],
            }),
        }
    }

    /// The caller's elements in memory order, when there is a view, it has
    /// the shape `dim` (an error otherwise) and it is in standard layout.
    /// Never for rank 0, whose placeholder could not be empty.
    fn target(&mut self, function: &str, dim: &D) -> Result<Option<&mut [T]>, Error> {
        self.check(function, dim.slice())?;
        if dim.ndim() == 0 {
            return Ok(None);
        }
        Ok(self.view.as_mut().and_then(|v| v.as_slice_mut()))
    }

    /// [`Out::target`] as memory to write whole values into.
    fn target_uninit(&mut self, function: &str, dim: &D) -> Result<Option<&mut [MaybeUninit<T>]>, Error> {
        Ok(self.target(function, dim)?.map(|elems| {
            let len = elems.len();
            // SAFETY: `MaybeUninit<T>` has the layout of `T`; every caller
            // writes whole values only, so the elements stay initialized.
            unsafe { std::slice::from_raw_parts_mut(elems.as_mut_ptr().cast::<MaybeUninit<T>>(), len) }
        }))
    }

    /// The value the body returns for a result written into the view: an
    /// empty array of the result's rank, which allocates nothing.
    fn written(&mut self, function: &str, ndim: usize) -> Result<Array<T, D>, Error> {
        self.written = true;
        Array::from_shape_vec(D::zeros(ndim), Vec::new()).map_err(|e| Error::Extent {
            function: function.to_string(),
            message: format!("internal error in einlang: an empty result placeholder: {e}"),
        })
    }

    /// Ends a `NAME_into` call for this tensor: nothing to do when its
    /// definition wrote into the view; otherwise `value` (the result as
    /// `NAME` computes it) is checked against the view's shape, copied in,
    /// and its buffer goes back to the pool.
    pub fn finish(self, function: &str, value: Array<T, D>) -> Result<(), Error> {
        if self.written {
            return Ok(());
        }
        self.check(function, value.shape())?;
        let Some(mut view) = self.view else {
            return Err(Error::Extent {
                function: function.to_string(),
                message: "internal error in einlang: a result into no buffer".to_string(),
            });
        };
        match (view.as_slice_mut(), value.as_slice()) {
            (Some(to), Some(from)) if to.len() >= parallel_work() => {
                const CHUNK: usize = 1 << 14;
                to.par_chunks_mut(CHUNK).zip(from.par_chunks(CHUNK)).for_each(|(t, f)| t.copy_from_slice(f));
            }
            (Some(to), Some(from)) => to.copy_from_slice(from),
            _ => view.assign(&value),
        }
        crate::pool::recycle(value);
        Ok(())
    }
}

/// The tensor of a recurrence without sequential axes that is a result
/// (a sharded definition computed in its interior rows while the halo
/// rows travel, then its edge rows: `opt::shard`), and the store its
/// clauses write through: with a view of `out` in standard layout, an
/// empty placeholder and a store over the caller's elements, set to `zero`
/// first (the clauses need not write every point); otherwise
/// [`crate::pool::zeros`] of `shape` and no store (the caller makes one
/// over the array). A view of another shape is an error before anything
/// is written.
#[allow(clippy::type_complexity)]
pub fn rec_into<'s, T, D, Sh, const N: usize>(
    function: &str,
    tensor: &str,
    shape: Sh,
    zero: T,
    out: &'s mut Out<'_, T, D>,
) -> Result<(Array<T, D>, Option<crate::rec::Store<'s, T, N>>), Error>
where
    T: Copy + Default + Send + Sync + 'static,
    D: Dimension,
    Sh: IntoDimension<Dim = D>,
{
    let dim = shape.into_dimension();
    check_size::<T, D>(function, &dim)?;
    if dim.ndim() == N {
        let mut lens = [0usize; N];
        lens.copy_from_slice(dim.slice());
        if let Some(elems) = out.target(function, &dim)? {
            crate::pool::fill(elems, zero);
            let ptr = elems.as_mut_ptr();
            // The placeholder is made before the store, which holds the
            // borrow of the caller's elements from here on.
            out.written = true;
            let placeholder = Array::from_shape_vec(D::zeros(dim.ndim()), Vec::new()).map_err(|e| Error::Extent {
                function: function.to_string(),
                message: format!("internal error in einlang: an empty result placeholder: {e}"),
            })?;
            // SAFETY: `ptr` points at the view's `dim.size()` elements in
            // standard layout, borrowed from `out` for `'s`.
            let store = unsafe { crate::rec::Store::from_raw(ptr, lens) };
            return Ok((placeholder, Some(store)));
        }
    }
    Ok((crate::pool::zeros(function, tensor, dim, zero)?, None))
}

/// [`crate::par::fill_uninit_rows`] into `out`'s view when it has one in
/// standard layout (the returned array is then an empty placeholder);
/// otherwise the same as `fill_uninit_rows`. A view of another shape is an
/// error before `body` runs.
///
/// # Safety
///
/// As for `fill_uninit_rows`: when `body` returns `Ok(())` for a chunk, it
/// has initialized every element of that chunk; and it only writes whole
/// values into the chunk (never `MaybeUninit::uninit()`), since the chunk
/// may be the caller's initialized elements.
pub unsafe fn fill_uninit_rows_into<T, D, Sh, F>(
    function: &str,
    shape: Sh,
    cost_per_point: u64,
    rows: usize,
    body: F,
    out: &mut Out<'_, T, D>,
) -> Result<Array<T, D>, Error>
where
    T: Copy + Send + Sync + 'static,
    D: Dimension,
    Sh: IntoDimension<Dim = D>,
    F: Fn(usize, &mut [MaybeUninit<T>]) -> Result<(), Error> + Sync + Send,
{
    let dim = shape.into_dimension();
    check_size::<T, D>(function, &dim)?;
    // (By the caller's promise `body` writes whole values only.)
    if let Some(elems) = out.target_uninit(function, &dim)? {
        // SAFETY: the caller's promise.
        unsafe { fill_slice_uninit(elems, dim.slice(), cost_per_point, rows.max(1), body) }?;
        return out.written(function, dim.ndim());
    }
    // SAFETY: the caller's promise.
    unsafe { crate::par::fill_uninit_rows(function, dim, cost_per_point, rows, body) }
}

/// [`crate::par::fill_uninit`] into `out`'s view: [`fill_uninit_rows_into`]
/// with one row a chunk.
///
/// # Safety
///
/// As for [`fill_uninit_rows_into`].
pub unsafe fn fill_uninit_into<T, D, Sh, F>(
    function: &str,
    shape: Sh,
    cost_per_point: u64,
    body: F,
    out: &mut Out<'_, T, D>,
) -> Result<Array<T, D>, Error>
where
    T: Copy + Send + Sync + 'static,
    D: Dimension,
    Sh: IntoDimension<Dim = D>,
    F: Fn(usize, &mut [MaybeUninit<T>]) -> Result<(), Error> + Sync + Send,
{
    // SAFETY: the caller's promise.
    unsafe { fill_uninit_rows_into(function, shape, cost_per_point, 1, body, out) }
}

/// [`crate::par::fill`] into `out`'s view when it has one in standard
/// layout: its elements are reset to `T::default()` first, as `fill`
/// starts from them.
pub fn fill_into<T, D, Sh, F>(
    function: &str,
    shape: Sh,
    cost_per_point: u64,
    body: F,
    out: &mut Out<'_, T, D>,
) -> Result<Array<T, D>, Error>
where
    T: Copy + Default + Send + Sync + 'static,
    D: Dimension,
    Sh: IntoDimension<Dim = D>,
    F: Fn(usize, &mut [T]) -> Result<(), Error> + Sync + Send,
{
    let dim = shape.into_dimension();
    check_size::<T, D>(function, &dim)?;
    if let Some(elems) = out.target(function, &dim)? {
        elems.fill(T::default());
        fill_slice(elems, dim.slice(), cost_per_point, 1, body)?;
        return out.written(function, dim.ndim());
    }
    crate::par::fill(function, dim, cost_per_point, body)
}

/// [`crate::gemm::matmul`] (`a[..m, ..k] · b[..k, ..n]`) into `out`'s view
/// when it has one in standard layout.
pub fn product_into<T>(
    function: &str,
    m: i64,
    n: i64,
    k: i64,
    a: ArrayView2<'_, T>,
    b: ArrayView2<'_, T>,
    out: &mut Out<'_, T, Ix2>,
) -> Result<Array2<T>, Error>
where
    T: LinalgScalar + Copy + Send + Sync + 'static,
{
    product_into_with(function, [m, n, k], a, b, None, out)
}

/// [`product_into`] with each element of the product times `scale`
/// ([`crate::gemm::matmul_scaled`]).
#[allow(clippy::too_many_arguments)]
pub fn scaled_product_into<T>(
    function: &str,
    m: i64,
    n: i64,
    k: i64,
    a: ArrayView2<'_, T>,
    b: ArrayView2<'_, T>,
    scale: T,
    out: &mut Out<'_, T, Ix2>,
) -> Result<Array2<T>, Error>
where
    T: LinalgScalar + Copy + Send + Sync + 'static,
{
    product_into_with(function, [m, n, k], a, b, Some(scale), out)
}

fn product_into_with<T>(
    function: &str,
    [m, n, k]: [i64; 3],
    a: ArrayView2<'_, T>,
    b: ArrayView2<'_, T>,
    scale: Option<T>,
    out: &mut Out<'_, T, Ix2>,
) -> Result<Array2<T>, Error>
where
    T: LinalgScalar + Copy + Send + Sync + 'static,
{
    // (Negative extents are the product's own error.)
    if let (Ok(rows), Ok(cols)) = (usize::try_from(m), usize::try_from(n)) {
        if let Some(elems) = out.target_uninit(function, &Ix2(rows, cols))? {
            crate::gemm::matmul_into_with(function, [m, n, k], a, b, scale, elems)?;
            return out.written(function, 2);
        }
    }
    match scale {
        Some(s) => crate::gemm::matmul_scaled(function, m, n, k, a, b, s),
        None => crate::gemm::matmul(function, m, n, k, a, b),
    }
}

/// [`crate::gemm::batched_matmul`] (each element times `scale` when there
/// is one, as [`crate::gemm::batched_matmul_scaled`]) into `out`'s view
/// when it has one in standard layout: a `NAME_into` whose result is the
/// batch of products, or a reshape of it (a 1x1 convolution's `[n, o, h,
/// w]` seen as `[n, o, h * w]`), gets no copy of a fresh product.
#[allow(clippy::too_many_arguments)]
pub fn batched_product_into<'a, 'b, T>(
    function: &str,
    batch: i64,
    m: i64,
    n: i64,
    k: i64,
    a: impl Into<crate::gemm::Batched<'a, T>>,
    b: impl Into<crate::gemm::Batched<'b, T>>,
    scale: Option<T>,
    out: &mut Out<'_, T, Ix3>,
) -> Result<Array3<T>, Error>
where
    T: LinalgScalar + Copy + Send + Sync + 'static,
{
    let (a, b) = (a.into(), b.into());
    // (Negative extents are the product's own error.)
    if let (Ok(count), Ok(rows), Ok(cols)) = (usize::try_from(batch), usize::try_from(m), usize::try_from(n)) {
        if let Some(elems) = out.target_uninit(function, &Ix3(count, rows, cols))? {
            crate::gemm::batched_into_with(function, [batch, m, n, k], a, b, scale, elems)?;
            return out.written(function, 3);
        }
    }
    match scale {
        Some(s) => crate::gemm::batched_matmul_scaled(function, batch, m, n, k, a, b, s),
        None => crate::gemm::batched_matmul(function, batch, m, n, k, a, b),
    }
}

/// [`crate::conv::conv2d`] (no activation, over `window`: a
/// [`crate::conv::Window`] or the pads of a stride-1 convolution) into
/// `out`'s view, of any strides, when it has one (after checking its shape against `shape`);
/// otherwise into a new array of `shape`, named `tensor` in errors.
#[allow(clippy::too_many_arguments)]
pub fn conv_into<T: crate::conv::ConvElem>(
    function: &str,
    tensor: &str,
    x: ndarray::ArrayView4<'_, T>,
    k: ndarray::ArrayView4<'_, T>,
    bias: Option<ndarray::ArrayView1<'_, T>>,
    window: impl Into<crate::conv::Window>,
    relu: bool,
    shape: [usize; 4],
    order: [usize; 4],
    out: &mut Out<'_, T, ndarray::Ix4>,
) -> Result<ndarray::Array4<T>, Error> {
    out.check(function, &shape)?;
    let window = window.into();
    let inv = crate::conv::inverse_order(function, order)?;
    if let Some(view) = out.view.as_mut() {
        crate::conv::conv2d(function, x, k, bias, window, relu, view.view_mut().permuted_axes(inv))?;
        return out.written(function, 4);
    }
    let mut y = crate::pool::zeros(function, tensor, shape, T::default())?;
    crate::conv::conv2d(function, x, k, bias, window, relu, y.view_mut().permuted_axes(inv))?;
    Ok(y)
}

/// [`crate::permute::permute`] into `out`'s view when it has one in
/// standard layout.
pub fn permute_into<T, D, Sh>(
    function: &str,
    x: ArrayView<'_, T, D>,
    axes: &[usize],
    shape: Sh,
    out: &mut Out<'_, T, D>,
) -> Result<Array<T, D>, Error>
where
    T: Copy + Send + Sync + 'static,
    D: Dimension,
    Sh: IntoDimension<Dim = D>,
{
    let dim = shape.into_dimension();
    check_size::<T, D>(function, &dim)?;
    if let Some(elems) = out.target_uninit(function, &dim)? {
        crate::permute::permute_to(function, x, axes, dim.slice(), elems)?;
        return out.written(function, dim.ndim());
    }
    crate::permute::permute(function, x, axes, dim)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::ShapeBuilder;

    fn square(first: usize, row: &mut [MaybeUninit<f32>]) -> Result<(), Error> {
        for (j, e) in row.iter_mut().enumerate() {
            e.write((first * 10 + j) as f32);
        }
        Ok(())
    }

    fn expected(rows: usize, cols: usize) -> Array2<f32> {
        Array2::from_shape_fn((rows, cols), |(i, j)| (i * 10 + j) as f32)
    }

    #[test]
    fn a_standard_view_is_written_in_place_and_the_value_is_empty() {
        let mut buf = Array2::<f32>::from_elem((3, 4), -1.0);
        let ptr = buf.as_ptr();
        let mut out = Out::new("out", buf.view_mut());
        let value = unsafe { fill_uninit_into("f", (3, 4), 1, square, &mut out) }.unwrap();
        assert_eq!(value.len(), 0);
        out.finish("f", value).unwrap();
        assert_eq!(buf, expected(3, 4));
        assert_eq!(buf.as_ptr(), ptr);
    }

    #[test]
    fn a_transposed_view_gets_a_copy_of_the_same_values() {
        let mut buf = Array2::<f32>::from_elem((4, 3).f(), -1.0);
        let mut out = Out::new("out", buf.view_mut());
        let value = unsafe { fill_uninit_into("f", (4, 3), 1, |first, row| square(first, row), &mut out) }.unwrap();
        assert_eq!(value.dim(), (4, 3));
        out.finish("f", value).unwrap();
        assert_eq!(buf, expected(4, 3));
    }

    #[test]
    fn a_wrong_shape_names_the_parameter_and_leaves_the_view_alone() {
        let mut buf = Array2::<f32>::from_elem((3, 5), -1.0);
        let mut out = Out::new("out1", buf.view_mut());
        let err = unsafe { fill_uninit_into("f", (3, 4), 1, square, &mut out) }.unwrap_err();
        match err {
            Error::Shape { function, param, axis, expected, found, .. } => {
                assert_eq!((function.as_str(), param.as_str(), axis, expected, found), ("f", "out1", 1, 4, 5));
            }
            other => panic!("{other:?}"),
        }
        assert!(buf.iter().all(|&v| v == -1.0));
        // The copy path checks too.
        let out = Out::<f32, Ix2>::new("out", buf.view_mut());
        assert!(matches!(out.finish("f", expected(2, 5)), Err(Error::Shape { axis: 0, .. })));
        assert!(buf.iter().all(|&v| v == -1.0));
    }

    #[test]
    fn without_a_view_the_result_is_a_new_array() {
        let mut out = Out::<f32, Ix2>::none();
        let value = unsafe { fill_uninit_into("f", (2, 3), 1, square, &mut out) }.unwrap();
        assert_eq!(value, expected(2, 3));
    }

    #[test]
    fn fill_into_starts_from_the_default_and_empty_shapes_work() {
        let mut buf = Array2::<i64>::from_elem((2, 2), 7);
        let mut out = Out::new("out", buf.view_mut());
        let value = fill_into(
            "f",
            (2, 2),
            1,
            |first, row: &mut [i64]| {
                row[first] += 5;
                Ok(())
            },
            &mut out,
        )
        .unwrap();
        out.finish("f", value).unwrap();
        assert_eq!(buf, ndarray::array![[5, 0], [0, 5]]);
        let mut empty = Array2::<f32>::zeros((0, 3));
        let mut out = Out::new("out", empty.view_mut());
        let value = unsafe { fill_uninit_into("f", (0, 3), 1, square, &mut out) }.unwrap();
        out.finish("f", value).unwrap();
    }

    #[test]
    fn a_product_is_written_in_place_or_copied() {
        let a = Array2::from_shape_fn((3, 5), |(i, j)| (i * 5 + j) as f64);
        let b = Array2::from_shape_fn((5, 2), |(i, j)| (i as f64) - (j as f64) * 2.0);
        let naive = Array2::from_shape_fn((3, 2), |(i, j)| (0..5).map(|p| a[[i, p]] * b[[p, j]]).sum::<f64>());
        let mut c = Array2::<f64>::zeros((3, 2));
        let mut out = Out::new("out", c.view_mut());
        let value = product_into("f", 3, 2, 5, a.view(), b.view(), &mut out).unwrap();
        out.finish("f", value).unwrap();
        assert_eq!(c, naive);
        let mut t = Array2::<f64>::zeros((2, 3));
        let mut out = Out::new("out", t.view_mut().reversed_axes());
        let value = product_into("f", 3, 2, 5, a.view(), b.view(), &mut out).unwrap();
        out.finish("f", value).unwrap();
        assert_eq!(t.t(), naive);
    }

    #[test]
    fn a_large_copy_runs_over_several_chunks() {
        let n = 3 * parallel_work() + 5;
        let mut buf = ndarray::Array1::<f32>::zeros(n);
        let value = ndarray::Array1::from_shape_fn(n, |i| i as f32);
        Out::new("out", buf.view_mut()).finish("f", value.clone()).unwrap();
        assert_eq!(buf, value);
    }
}
