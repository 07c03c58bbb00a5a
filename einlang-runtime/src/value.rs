//! Conversions of values at the boundary of generated functions.
//!
//! Inside a generated function a tensor is either an owned `Array` (computed
//! there) or an `ArrayView` (a parameter, or a sub-tensor of one). What a
//! function returns, and what the branches of a tensor-valued `if` produce,
//! must be owned and in standard layout; [`owned`] makes it so without
//! copying what already is.

use crate::Error;
use ndarray::{Array, ArrayBase, ArrayView, CowArray, Data, Dimension, IntoDimension, Zip};

/// A value that can be turned into its owned, standard-layout form.
pub trait IntoOwned {
    type Owned;
    fn into_owned_value(self) -> Self::Owned;
}

impl<T: Clone + Send + Sync + 'static, D: Dimension> IntoOwned for Array<T, D> {
    type Owned = Array<T, D>;
    #[inline]
    fn into_owned_value(self) -> Self::Owned {
        if self.is_standard_layout() {
            self
        } else {
            copied(self.view())
        }
    }
}

impl<T: Clone + Send + Sync + 'static, D: Dimension> IntoOwned for ArrayView<'_, T, D> {
    type Owned = Array<T, D>;
    #[inline]
    fn into_owned_value(self) -> Self::Owned {
        copied(self)
    }
}

impl<T: Clone + Send + Sync + 'static, D: Dimension> IntoOwned for CowArray<'_, T, D> {
    type Owned = Array<T, D>;
    #[inline]
    fn into_owned_value(self) -> Self::Owned {
        if self.is_view() {
            copied(self.view())
        } else {
            self.into_owned().into_owned_value()
        }
    }
}

/// A copy of `view` in standard layout. From [`crate::par::parallel_work`]
/// elements up, into a buffer from the [pool](crate::pool) (reused, or
/// fresh memory advised into huge pages) written by every thread: a result
/// that is a parameter (`let y[i] = x[i]`, a leading block of one) was
/// copied by ndarray's `to_owned`, one thread writing fresh memory a 4 KiB
/// page fault at a time, 38-48 ms for 16 Mi `f32`. When no buffer can be
/// had, ndarray's copy (which aborts the process on a failed allocation,
/// as it did before).
fn copied<T: Clone + Send + Sync + 'static, D: Dimension>(view: ArrayView<'_, T, D>) -> Array<T, D> {
    if view.len() < crate::par::parallel_work() {
        return view.as_standard_layout().into_owned();
    }
    let Ok(mut out) = crate::pool::try_uninit::<T, D>("", "", view.raw_dim()) else {
        return view.as_standard_layout().into_owned();
    };
    Zip::from(&mut out).and(&view).par_for_each(|o, v| {
        o.write(v.clone());
    });
    // SAFETY: the zip wrote every element of `out`.
    unsafe { out.assume_init() }
}

impl IntoOwned for &str {
    type Owned = String;
    #[inline]
    fn into_owned_value(self) -> String {
        self.to_string()
    }
}

macro_rules! owned_is_self {
    ($($t:ty),*) => {
        $(
            impl IntoOwned for $t {
                type Owned = $t;
                #[inline]
                fn into_owned_value(self) -> $t {
                    self
                }
            }
        )*
    };
}

owned_is_self!(i8, i16, i32, i64, u8, u32, u64, f32, f64, bool, String, ());

macro_rules! owned_tuple {
    ($($name:ident)+) => {
        impl<$($name: IntoOwned),+> IntoOwned for ($($name,)+) {
            type Owned = ($($name::Owned,)+);
            #[inline]
            #[allow(non_snake_case)]
            fn into_owned_value(self) -> Self::Owned {
                let ($($name,)+) = self;
                ($($name.into_owned_value(),)+)
            }
        }
    };
}

owned_tuple!(A);
owned_tuple!(A B);
owned_tuple!(A B C);
owned_tuple!(A B C D);
owned_tuple!(A B C D E);
owned_tuple!(A B C D E F);
owned_tuple!(A B C D E F G);
owned_tuple!(A B C D E F G H);

/// The owned, standard-layout form of `value` (moves owned arrays that
/// already are standard, copies views).
#[inline]
pub fn owned<V: IntoOwned>(value: V) -> V::Owned {
    value.into_owned_value()
}

/// A value as a generated function takes it as a parameter: tensors as
/// views, strings as `&str`, jagged arrays and string vectors by
/// reference, tuples element by element.
pub trait AsParam<'a> {
    type Param;
    fn as_param(&'a self) -> Self::Param;
}

impl<'a, S, D> AsParam<'a> for ArrayBase<S, D>
where
    S: Data,
    S::Elem: 'a,
    D: Dimension,
{
    type Param = ArrayView<'a, S::Elem, D>;
    #[inline]
    fn as_param(&'a self) -> Self::Param {
        self.view()
    }
}

macro_rules! param_is_self {
    ($($t:ty),*) => {
        $(
            impl<'a> AsParam<'a> for $t {
                type Param = $t;
                #[inline]
                fn as_param(&'a self) -> $t {
                    *self
                }
            }
        )*
    };
}

param_is_self!(i8, i16, i32, i64, u8, u32, u64, f32, f64, bool, ());

impl<'a> AsParam<'a> for String {
    type Param = &'a str;
    #[inline]
    fn as_param(&'a self) -> &'a str {
        self
    }
}

impl<'a, 'b: 'a> AsParam<'a> for &'b str {
    type Param = &'a str;
    #[inline]
    fn as_param(&'a self) -> &'a str {
        self
    }
}

impl<'a> AsParam<'a> for Vec<String> {
    type Param = &'a [String];
    #[inline]
    fn as_param(&'a self) -> &'a [String] {
        self
    }
}

impl<'a, 'b: 'a> AsParam<'a> for &'b [String] {
    type Param = &'a [String];
    #[inline]
    fn as_param(&'a self) -> &'a [String] {
        self
    }
}

impl<'a, T: 'a> AsParam<'a> for crate::Jagged<T> {
    type Param = &'a crate::Jagged<T>;
    #[inline]
    fn as_param(&'a self) -> Self::Param {
        self
    }
}

impl<'a, 'b: 'a, T: 'b> AsParam<'a> for &'b crate::Jagged<T> {
    type Param = &'a crate::Jagged<T>;
    #[inline]
    fn as_param(&'a self) -> Self::Param {
        self
    }
}

macro_rules! param_tuple {
    ($($name:ident $n:tt)+) => {
        impl<'a, $($name: AsParam<'a>),+> AsParam<'a> for ($($name,)+) {
            type Param = ($($name::Param,)+);
            #[inline]
            fn as_param(&'a self) -> Self::Param {
                ($(self.$n.as_param(),)+)
            }
        }
    };
}

param_tuple!(A 0);
param_tuple!(A 0 B 1);
param_tuple!(A 0 B 1 C 2);
param_tuple!(A 0 B 1 C 2 D 3);
param_tuple!(A 0 B 1 C 2 D 3 E 4);
param_tuple!(A 0 B 1 C 2 D 3 E 4 F 5);
param_tuple!(A 0 B 1 C 2 D 3 E 4 F 5 G 6);
param_tuple!(A 0 B 1 C 2 D 3 E 4 F 5 G 6 H 7);

/// `value` as a parameter of a generated function (see [`AsParam`]).
#[inline]
pub fn as_param<'a, V: AsParam<'a>>(value: &'a V) -> V::Param {
    value.as_param()
}

/// Reserves, exactly and fallibly, room for the elements of a comprehension
/// whose count is known before its first element: the product of its
/// loops' extents (`end - start` each, empty when negative) times `per`
/// elements per value. `Error::Alloc` when they do not fit in memory (or
/// their count in `usize`), before any element is computed.
pub fn reserve_loops<T>(function: &str, items: &mut Vec<T>, loops: &[(i64, i64)], per: usize) -> Result<(), Error> {
    let count = loops.iter().try_fold(per as u128, |n, &(start, end)| {
        let len = (end as i128 - start as i128).max(0) as u128;
        n.checked_mul(len)
    });
    let size = std::mem::size_of::<T>().max(1) as u128;
    let fail = |count: Option<u128>| Error::Alloc {
        function: function.to_string(),
        tensor: String::new(),
        bytes: count.and_then(|n| n.checked_mul(size)).map_or(usize::MAX, |b| usize::try_from(b).unwrap_or(usize::MAX)),
    };
    let n = count.and_then(|n| usize::try_from(n).ok()).ok_or_else(|| fail(count))?;
    items.try_reserve_exact(n).map_err(|_| fail(count))
}

/// Appends `value` to a comprehension's elements, growing them fallibly:
/// `Error::Alloc` when there is no memory for more (the count of elements
/// comes from run-time values).
pub fn push<T>(function: &str, items: &mut Vec<T>, value: T) -> Result<(), Error> {
    if items.len() == items.capacity() {
        grow(function, items, 1)?;
    }
    items.push(value);
    Ok(())
}

/// Appends `values` (an exact-size iterator: an element's elements) like
/// [`push`].
pub fn extend<T, I>(function: &str, items: &mut Vec<T>, values: I) -> Result<(), Error>
where
    I: ExactSizeIterator<Item = T>,
{
    grow(function, items, values.len())?;
    items.extend(values);
    Ok(())
}

/// Room for `more` elements in `items` (amortized doubling, as `Vec::push`).
fn grow<T>(function: &str, items: &mut Vec<T>, more: usize) -> Result<(), Error> {
    items.try_reserve(more).map_err(|_| Error::Alloc {
        function: function.to_string(),
        tensor: String::new(),
        bytes: items.len().saturating_add(more).saturating_mul(std::mem::size_of::<T>()),
    })
}

/// A tensor literal: `elems` in row-major order for `shape`.
pub fn array_lit<T, Sh>(function: &str, shape: Sh, elems: Vec<T>) -> Result<Array<T, Sh::Dim>, Error>
where
    Sh: IntoDimension,
{
    let dim = shape.into_dimension();
    let want = dim.size_checked();
    let found = elems.len();
    Array::from_shape_vec(dim, elems).map_err(|_| Error::Extent {
        function: function.to_string(),
        message: format!(
            "internal error in einlang: a tensor literal has {found} elements for {} positions",
            want.map_or_else(|| "too many".to_string(), |n| n.to_string())
        ),
    })
}

impl IntoOwned for &[String] {
    type Owned = Vec<String>;
    #[inline]
    fn into_owned_value(self) -> Vec<String> {
        self.to_vec()
    }
}

impl IntoOwned for &Vec<String> {
    type Owned = Vec<String>;
    #[inline]
    fn into_owned_value(self) -> Vec<String> {
        self.clone()
    }
}

impl IntoOwned for Vec<String> {
    type Owned = Vec<String>;
    #[inline]
    fn into_owned_value(self) -> Vec<String> {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{array, Array2};

    #[test]
    fn owned_keeps_standard_arrays_and_copies_views() {
        let a = array![[1, 2], [3, 4]];
        let t = owned(a.t());
        assert!(t.is_standard_layout());
        assert_eq!(t, array![[1, 3], [2, 4]]);
        let (x, s, n): (Array2<i32>, String, f32) = owned((a.clone(), "hi", 2.0f32));
        assert_eq!(x, a);
        assert_eq!(s, "hi");
        assert_eq!(n, 2.0);
    }

    #[test]
    fn tuples_become_parameters_element_by_element() {
        let a = array![[1, 2], [3, 4]];
        let s = String::from("hi");
        let t = (a.clone(), (s, 2.5f64));
        let (v, (text, x)) = as_param(&t);
        assert_eq!(v, a.view());
        assert_eq!((text, x), ("hi", 2.5));
        let views = (a.view(), a.t());
        let (p, q) = as_param(&views);
        assert_eq!(q, p.t());
    }

    #[test]
    fn array_literal_shapes() {
        assert_eq!(array_lit("f", [2, 2], vec![1, 2, 3, 4]).unwrap(), array![[1, 2], [3, 4]]);
        assert!(array_lit("f", [2, 2], vec![1, 2, 3]).is_err());
    }

    #[test]
    fn comprehension_elements_grow_fallibly() {
        let mut items: Vec<u64> = Vec::new();
        push("f", &mut items, 3).unwrap();
        extend("f", &mut items, [4u64, 5].into_iter()).unwrap();
        assert_eq!(items, vec![3, 4, 5]);
        // More elements than any address space: an error, the elements kept.
        let e = extend("f", &mut items, std::iter::repeat_n(0u64, 1 << 59)).unwrap_err();
        assert_eq!(e, Error::Alloc { function: "f".into(), tensor: String::new(), bytes: ((1usize << 59) + 3) * 8 });
        assert_eq!(items, vec![3, 4, 5]);
    }
}
