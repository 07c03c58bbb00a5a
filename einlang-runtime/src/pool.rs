//! A cache of tensor buffers, reused from one call to the next.
//!
//! A generated function allocates its temporaries afresh at every call and
//! frees them when it returns. For buffers of megabytes the allocator maps
//! fresh pages from the kernel each time (and unmaps them on free), so
//! every call pays a page fault per 4 KiB touched: a convolution gradient
//! with 20 MiB of temporaries ran at 2.5x the time of the same code with
//! its memory kept mapped. Generated code therefore takes its outputs from
//! this pool ([`try_uninit`]) and gives back, when it returns (or when a row
//! of a parallel loop ends), the temporaries that are not part of its
//! result ([`recycle`]). A loop of calls whose results go into the
//! caller's buffers (`NAME_into`) then takes no memory from the allocator
//! after its first call.
//!
//! Buffers of at least [`MIN_BYTES`] go to one pool shared by all threads
//! (at most [`MAX_BUFFERS`] buffers and [`MAX_BYTES`] bytes, the oldest
//! freed first); smaller ones to a cache of the thread that recycles them
//! (at most [`SMALL_BUFFERS`] buffers and [`SMALL_BYTES`] bytes a thread,
//! no lock), which the next row of a loop on that thread reuses. A buffer
//! is taken only for a request of the same element type and at least half
//! its capacity.

use std::alloc::Layout;
use std::any::TypeId;
use std::cell::RefCell;
use std::mem::MaybeUninit;
use std::sync::Mutex;

use ndarray::{Array, ArrayView, CowArray, Dimension, IntoDimension};

use crate::Error;

/// Buffers smaller than this (in bytes) are cached by their thread.
pub const MIN_BYTES: usize = 1 << 18;

/// The most bytes the shared pool holds.
pub const MAX_BYTES: usize = 1 << 30;

/// The most buffers the shared pool holds.
pub const MAX_BUFFERS: usize = 64;

/// The most small buffers one thread's cache holds.
pub const SMALL_BUFFERS: usize = 32;

/// The most bytes one thread's cache holds.
pub const SMALL_BYTES: usize = 4 << 20;

/// A cached allocation: what a `Vec<T>` of capacity `capacity` allocated,
/// for `T` of type id `elem`, owned by the cache until taken or freed.
struct Buffer {
    elem: TypeId,
    /// Capacity in elements.
    capacity: usize,
    ptr: std::ptr::NonNull<u8>,
    layout: Layout,
}

// SAFETY: a `Buffer` is uniquely owned memory (no `T` lives in it).
unsafe impl Send for Buffer {}

impl Buffer {
    /// The allocation of `vec` (whose elements need no drop), or None when
    /// it has none.
    fn of<T: 'static>(vec: Vec<T>) -> Option<Buffer> {
        let capacity = vec.capacity();
        let layout = Layout::array::<T>(capacity).ok()?;
        if layout.size() == 0 {
            return None;
        }
        let mut vec = std::mem::ManuallyDrop::new(vec);
        let ptr = std::ptr::NonNull::new(vec.as_mut_ptr().cast::<u8>())?;
        Some(Buffer { elem: TypeId::of::<T>(), capacity, ptr, layout })
    }

    /// Whether a request for `len` elements of type `elem` may take this.
    fn fits(&self, elem: TypeId, len: usize) -> bool {
        self.elem == elem && self.capacity >= len && self.capacity / 2 <= len
    }

    /// The buffer as a vector of `len` uninitialized elements.
    ///
    /// # Safety
    ///
    /// `T` is the element type the buffer was made of (`fits` with
    /// `TypeId::of::<T>()`) and `len <= capacity`.
    unsafe fn into_vec<T>(self, len: usize) -> Vec<MaybeUninit<T>> {
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: the pointer, capacity and layout are those of a
        // `Vec<T>`'s allocation; `MaybeUninit<T>` has `T`'s layout and any
        // contents are valid for it.
        unsafe { Vec::from_raw_parts(this.ptr.as_ptr().cast::<MaybeUninit<T>>(), len, this.capacity) }
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        // SAFETY: the allocation was made with this layout by the global
        // allocator (through a `Vec`), and the cache owns it.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

static POOL: Mutex<Vec<Buffer>> = Mutex::new(Vec::new());

thread_local! {
    static SMALL: RefCell<Vec<Buffer>> = const { RefCell::new(Vec::new()) };
}

/// Removes from `buffers` the smallest that fits a request.
fn take_from(buffers: &mut Vec<Buffer>, elem: TypeId, len: usize) -> Option<Buffer> {
    let best = buffers
        .iter()
        .enumerate()
        .filter(|(_, b)| b.fits(elem, len))
        .min_by_key(|(_, b)| b.capacity)
        .map(|(i, _)| i)?;
    Some(buffers.swap_remove(best))
}

/// Adds `buffer` to `buffers`, freeing the oldest first while there would
/// be more than `max_buffers` of them or `max_bytes` in all.
fn keep_in(buffers: &mut Vec<Buffer>, buffer: Buffer, max_buffers: usize, max_bytes: usize) {
    let bytes = buffer.layout.size();
    if bytes > max_bytes {
        return;
    }
    let mut held: usize = buffers.iter().map(|b| b.layout.size()).sum();
    while !buffers.is_empty() && (buffers.len() >= max_buffers || held + bytes > max_bytes) {
        held -= buffers.remove(0).layout.size();
    }
    // (The vector's own capacity stops growing at `max_buffers`.)
    buffers.push(buffer);
}

/// An uninitialized array of shape `dim`, reusing a cached buffer when one
/// fits; `Err(Error::Alloc)` naming `function` and `tensor` when the
/// allocator has no room for it, and `Error::Extent` when its size in bytes
/// overflows `isize`. Never aborts the process: every tensor whose size
/// comes from run-time values is allocated through here or [`zeros`].
pub fn try_uninit<T: Send + 'static, D: Dimension>(
    function: &str,
    tensor: &str,
    dim: D,
) -> Result<Array<MaybeUninit<T>, D>, Error> {
    crate::par::check_size::<T, D>(function, &dim)?;
    let len = dim.size();
    // (`check_size` bounds the product.)
    let bytes = len * std::mem::size_of::<T>();
    if bytes == 0 {
        return Ok(Array::uninit(dim));
    }
    let elem = TypeId::of::<T>();
    let found = if bytes < MIN_BYTES {
        SMALL
            .try_with(|small| small.try_borrow_mut().ok().and_then(|mut s| take_from(&mut s, elem, len)))
            .ok()
            .flatten()
    } else {
        POOL.lock().ok().and_then(|mut pool| take_from(&mut pool, elem, len))
    };
    let vec = match found {
        // SAFETY: the buffer fits `T` and `len` (`take_from`).
        Some(buffer) => unsafe { buffer.into_vec::<T>(len) },
        None => {
            let mut vec: Vec<MaybeUninit<T>> = Vec::new();
            vec.try_reserve_exact(len).map_err(|_| alloc_error(function, tensor, bytes))?;
            // SAFETY: the capacity is at least `len`, and uninitialized
            // memory is a valid `MaybeUninit`.
            unsafe { vec.set_len(len) };
            advise_fresh(vec.as_mut_ptr() as usize, bytes);
            vec
        }
    };
    Array::from_shape_vec(dim, vec).map_err(|e| Error::Extent {
        function: function.to_string(),
        message: format!("internal error in einlang: a new buffer's length: {e}"),
    })
}

/// An array of shape `dim` with every element `zero`, which must be the
/// element type's zero: fallible as [`try_uninit`]. For the number types
/// whose zero is all-zero bytes, the memory comes zeroed from the allocator
/// (as `Array::zeros` takes it: large blocks are fresh pages, not written
/// twice); other types are written.
pub fn zeros<T: Copy + Send + 'static, D: Dimension, Sh: IntoDimension<Dim = D>>(
    function: &str,
    tensor: &str,
    shape: Sh,
    zero: T,
) -> Result<Array<T, D>, Error> {
    let dim = shape.into_dimension();
    crate::par::check_size::<T, D>(function, &dim)?;
    let len = dim.size();
    let bytes = len * std::mem::size_of::<T>();
    if bytes == 0 {
        return Ok(Array::from_elem(dim, zero));
    }
    if !zero_is_all_zero_bytes::<T>() {
        let mut out = try_uninit::<T, D>(function, tensor, dim)?;
        out.iter_mut().for_each(|e| {
            e.write(zero);
        });
        // SAFETY: every element was just written.
        return Ok(unsafe { out.assume_init() });
    }
    let layout = Layout::array::<T>(len).map_err(|_| alloc_error(function, tensor, bytes))?;
    // SAFETY: the layout's size is not zero.
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<T>();
    if ptr.is_null() {
        return Err(alloc_error(function, tensor, bytes));
    }
    // SAFETY: `ptr` was allocated by the global allocator with the layout of
    // a `[T; len]`, which a `Vec<T>` of capacity `len` frees with; every
    // element is all-zero bytes, a valid `T` (its zero) for the types
    // `zero_is_all_zero_bytes` accepts.
    let vec = unsafe { Vec::from_raw_parts(ptr, len, len) };
    Array::from_shape_vec(dim, vec).map_err(|e| Error::Extent {
        function: function.to_string(),
        message: format!("internal error in einlang: a new buffer's length: {e}"),
    })
}

/// A copy of `view` in standard (row-major) layout, in a buffer from this
/// pool: the identity [`crate::permute::permute`] (blocked, parallel). A
/// buffer that cannot be had is `Error::Alloc` naming `function` and
/// `tensor` (ndarray's `to_owned` would abort the process instead).
pub fn copy<T: Copy + Send + Sync + 'static, D: Dimension>(
    function: &str,
    tensor: &str,
    view: ArrayView<'_, T, D>,
) -> Result<Array<T, D>, Error> {
    let axes: Vec<usize> = (0..view.ndim()).collect();
    let dim = view.raw_dim();
    named(tensor, crate::permute::permute(function, view, &axes, dim))
}

/// `view` in standard (row-major) layout: itself, borrowed, when it is in
/// that layout already, else a [`copy`].
pub fn standard<'a, T: Copy + Send + Sync + 'static, D: Dimension>(
    function: &str,
    tensor: &str,
    view: ArrayView<'a, T, D>,
) -> Result<CowArray<'a, T, D>, Error> {
    if view.is_standard_layout() {
        Ok(CowArray::from(view))
    } else {
        copy(function, tensor, view).map(CowArray::from)
    }
}

/// `elems` all set to `value`: one `memset` when `value` is all-zero bytes
/// of a primitive type (a `fill` loop of the generic code stores 16 bytes
/// at a time in a build for baseline x86-64), a loop otherwise.
pub(crate) fn fill<T: Copy + 'static>(elems: &mut [T], value: T) {
    if zero_is_all_zero_bytes::<T>() {
        // SAFETY: `T` is a primitive type: no padding, every byte of
        // `value` is initialized.
        let bytes = unsafe { std::slice::from_raw_parts((&value as *const T).cast::<u8>(), std::mem::size_of::<T>()) };
        if bytes.iter().all(|&b| b == 0) {
            // SAFETY: `elems` is `elems.len()` writable `T`s, and all-zero
            // bytes are `value` itself, a valid `T`.
            unsafe { std::ptr::write_bytes(elems.as_mut_ptr(), 0, elems.len()) };
            return;
        }
    }
    elems.fill(value);
}

/// Whether `T` is a primitive number type (or `bool`), whose zero (and
/// `false`) is all-zero bytes.
fn zero_is_all_zero_bytes<T: 'static>() -> bool {
    let t = TypeId::of::<T>();
    [
        TypeId::of::<f32>(),
        TypeId::of::<f64>(),
        TypeId::of::<i8>(),
        TypeId::of::<i16>(),
        TypeId::of::<i32>(),
        TypeId::of::<i64>(),
        TypeId::of::<u8>(),
        TypeId::of::<u16>(),
        TypeId::of::<u32>(),
        TypeId::of::<u64>(),
        TypeId::of::<usize>(),
        TypeId::of::<isize>(),
        TypeId::of::<bool>(),
    ]
    .contains(&t)
}

/// The `Error::Alloc` of a failed request.
pub(crate) fn alloc_error(function: &str, tensor: &str, bytes: usize) -> Error {
    Error::Alloc { function: function.to_string(), tensor: tensor.to_string(), bytes }
}

/// `result`, with `tensor` named in an `Error::Alloc` raised by a runtime
/// function that allocated the tensor without knowing its name (generated
/// code wraps the calls that allocate a definition's tensor in this).
pub fn named<T>(tensor: &str, result: Result<T, Error>) -> Result<T, Error> {
    result.map_err(|e| match e {
        Error::Alloc { function, tensor: t, bytes } if t.is_empty() => {
            Error::Alloc { function, tensor: tensor.to_string(), bytes }
        }
        e => e,
    })
}

/// Fresh buffers of at least this many bytes are backed by huge pages
/// where the system allows it (see `advise_fresh`).
pub const HUGE_BYTES: usize = 4 << 20;

/// The size of a huge page (x86-64, aarch64 with 4 KiB base pages).
const HUGE_PAGE: usize = 2 << 20;

/// Advises a new buffer of `bytes` bytes at `start`, fresh from the
/// allocator, to transparent huge pages when it is large (a result the
/// caller keeps, so the pool never sees it again). The allocator maps such
/// a buffer fresh from the kernel, and writing 64 MiB through 4 KiB pages
/// took 16384 page faults, as long as computing a `tanh` into it; with
/// 2 MiB pages, 32 (a 16 Mi `f32` fill: 65-78 ms fresh against 33-38 ms
/// with the advice and 18-45 ms into a reused buffer, on the shared 2-core
/// Xeon). Only the whole huge pages inside the buffer are advised, and the
/// advice changes no contents, so a refusal (no huge pages, another
/// allocator) costs nothing but the call.
fn advise_fresh(start: usize, bytes: usize) {
    if bytes >= HUGE_BYTES {
        if let Some((from, len)) = whole_huge_pages(start, bytes) {
            advise_huge(from, len);
        }
    }
}

/// The start and length of the whole huge pages inside `[start, start +
/// bytes)`, or None when there are none.
fn whole_huge_pages(start: usize, bytes: usize) -> Option<(usize, usize)> {
    let from = start.checked_add(HUGE_PAGE - 1)? & !(HUGE_PAGE - 1);
    let to = start.checked_add(bytes)? & !(HUGE_PAGE - 1);
    (to > from).then(|| (from, to - from))
}

/// `madvise(MADV_HUGEPAGE)` on Linux; nothing elsewhere.
#[cfg(target_os = "linux")]
fn advise_huge(from: usize, len: usize) {
    extern "C" {
        fn madvise(addr: *mut std::ffi::c_void, len: usize, advice: std::ffi::c_int) -> std::ffi::c_int;
    }
    const MADV_HUGEPAGE: std::ffi::c_int = 14;
    // SAFETY: `[from, from + len)` lies inside an allocation this thread
    // owns and nothing reads yet; the advice only changes how the kernel
    // backs the pages, never their contents, and its failure is ignored.
    unsafe {
        madvise(from as *mut std::ffi::c_void, len, MADV_HUGEPAGE);
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge(_from: usize, _len: usize) {}

/// Gives `a`'s buffer to the cache (or frees it, when it is too large, or
/// its elements need dropping).
pub fn recycle<T: Send + 'static, D: Dimension>(a: Array<T, D>) {
    // The elements need no drop (generated tensors hold plain scalars), and
    // the buffer comes back as uninitialized memory.
    if std::mem::needs_drop::<T>() {
        return;
    }
    let (mut vec, _) = a.into_raw_vec_and_offset();
    // SAFETY: length 0 drops nothing (and the elements need no drop).
    unsafe { vec.set_len(0) };
    let Some(buffer) = Buffer::of(vec) else { return };
    if buffer.layout.size() < MIN_BYTES {
        // (At thread exit, or while the cache is in use, the buffer is freed.)
        let _ = SMALL.try_with(|small| {
            if let Ok(mut small) = small.try_borrow_mut() {
                keep_in(&mut small, buffer, SMALL_BUFFERS, SMALL_BYTES);
            }
        });
    } else if let Ok(mut pool) = POOL.lock() {
        keep_in(&mut pool, buffer, MAX_BUFFERS, MAX_BYTES);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array2;

    /// Element types no other code uses, so that tests running at the same
    /// time never take each other's buffers.
    #[derive(Clone, Copy, Debug, PartialEq)]
    struct ProbeA([u8; 12]);
    #[derive(Clone, Copy, Debug, PartialEq)]
    struct ProbeB([u8; 12]);
    #[derive(Clone, Copy, Debug, PartialEq)]
    struct ProbeC([u8; 12]);

    #[test]
    fn fill_sets_every_element_to_the_value_zero_or_not() {
        let mut f = vec![1.5f64; 1000];
        fill(&mut f, 0.0);
        assert!(f.iter().all(|x| x.to_bits() == 0));
        // Negative zero is not all-zero bytes: the loop keeps its sign.
        fill(&mut f, -0.0);
        assert!(f.iter().all(|x| x.to_bits() == (-0.0f64).to_bits()));
        let mut i = vec![3i32; 17];
        fill(&mut i, 0);
        assert_eq!(i, vec![0; 17]);
        fill(&mut i, -7);
        assert_eq!(i, vec![-7; 17]);
        let mut p = vec![ProbeC([9; 12]); 5];
        fill(&mut p, ProbeC([0; 12]));
        assert_eq!(p, vec![ProbeC([0; 12]); 5]);
        let mut e: Vec<f32> = Vec::new();
        fill(&mut e, 0.0);
        assert!(e.is_empty());
    }

    #[test]
    fn the_advised_range_is_the_whole_huge_pages_inside_the_buffer() {
        let mb = 1 << 20;
        assert_eq!(whole_huge_pages(0, 8 * mb), Some((0, 8 * mb)));
        assert_eq!(whole_huge_pages(4096, 8 * mb), Some((2 * mb, 6 * mb)));
        assert_eq!(whole_huge_pages(4096, 4 * mb), Some((2 * mb, 2 * mb)));
        assert_eq!(whole_huge_pages(4096, 4 * mb - 8192), None);
        assert_eq!(whole_huge_pages(3 * mb, mb), None);
        assert_eq!(whole_huge_pages(usize::MAX - 4096, 8 * mb), None);
    }

    #[test]
    fn a_large_fresh_buffer_holds_what_is_written() {
        // 6 MiB of u32, fresh (a type no other test takes from the pool).
        let n = (6 << 20) / 4;
        let mut a = try_uninit::<u32, _>("t", "", ndarray::Ix1(n)).unwrap();
        for (i, v) in a.iter_mut().enumerate() {
            v.write(i as u32 ^ 0x5a5a);
        }
        // SAFETY: every element was written.
        let a = unsafe { a.assume_init() };
        assert!(a.iter().enumerate().all(|(i, &v)| v == i as u32 ^ 0x5a5a));
    }

    #[test]
    fn a_recycled_buffer_is_reused_for_the_next_request_of_its_size() {
        // Both tests share the global pool: use sizes no other test uses.
        let a = Array2::from_elem((300, 301), ProbeA([1; 12]));
        let ptr = a.as_ptr() as usize;
        recycle(a);
        let b = try_uninit::<ProbeA, _>("t", "", ndarray::Ix2(301, 300)).unwrap();
        assert_eq!(b.as_ptr() as usize, ptr, "the cached buffer was not reused");
        assert_eq!(b.shape(), &[301, 300]);
        // Another element type of the same size never gets it.
        recycle(unsafe { b.assume_init() });
        let c = try_uninit::<ProbeB, _>("t", "", ndarray::Ix2(301, 300)).unwrap();
        assert_ne!(c.as_ptr() as usize, ptr);
    }

    #[test]
    fn much_smaller_requests_do_not_take_a_large_buffer() {
        let a = Array2::from_elem((700, 100), ProbeC([2; 12]));
        let ptr = a.as_ptr() as usize;
        recycle(a);
        // A quarter of the buffer would waste the rest: not taken.
        let small = try_uninit::<ProbeC, _>("t", "", ndarray::Ix2(175, 100)).unwrap();
        assert_ne!(small.as_ptr() as usize, ptr);
        recycle(Array2::from_elem((10, 10), ProbeC([3; 12])));
        let filled = try_uninit::<ProbeC, _>("t", "", ndarray::Ix2(700, 100)).unwrap();
        assert_eq!(filled.as_ptr() as usize, ptr);
    }

    #[test]
    fn small_buffers_are_reused_by_their_own_thread_only() {
        #[derive(Clone, Copy, Debug, PartialEq)]
        struct ProbeD([u8; 4]);
        let a = Array2::from_elem((10, 10), ProbeD([4; 4]));
        let ptr = a.as_ptr() as usize;
        recycle(a);
        let elsewhere =
            std::thread::spawn(|| try_uninit::<ProbeD, _>("t", "", ndarray::Ix2(10, 10)).unwrap().as_ptr() as usize);
        assert_ne!(elsewhere.join().unwrap(), ptr);
        let b = try_uninit::<ProbeD, _>("t", "", ndarray::Ix1(90)).unwrap();
        assert_eq!(b.as_ptr() as usize, ptr);
        // The thread keeps at most `SMALL_BUFFERS`; each comes back once.
        let many: Vec<_> = (0..SMALL_BUFFERS + 3).map(|_| Array2::from_elem((4, 4), ProbeD([5; 4]))).collect();
        let ptrs: std::collections::HashSet<usize> = many.iter().map(|a| a.as_ptr() as usize).collect();
        many.into_iter().for_each(recycle);
        assert_eq!(SMALL.with(|s| s.borrow().len()), SMALL_BUFFERS);
        let again: Vec<_> =
            (0..SMALL_BUFFERS + 3).map(|_| try_uninit::<ProbeD, _>("t", "", ndarray::Ix2(4, 4)).unwrap()).collect();
        // (The allocator may hand out the freed ones' addresses again.)
        let reused = again.iter().filter(|a| ptrs.contains(&(a.as_ptr() as usize))).count();
        assert!(reused >= SMALL_BUFFERS);
        assert_eq!(SMALL.with(|s| s.borrow().len()), 0);
    }

    #[test]
    fn a_view_is_borrowed_in_standard_layout_and_copied_in_any_other() {
        let a = Array2::from_shape_fn((3, 5), |(i, j)| (10 * i + j) as i64);
        let same = standard("f", "a", a.view()).unwrap();
        assert!(same.is_view());
        assert_eq!(same.as_ptr(), a.as_ptr());
        let t = a.t();
        let copied = standard("f", "a", t).unwrap();
        assert!(copied.is_standard_layout() && copied.is_owned());
        for i in 0..5 {
            for j in 0..3 {
                assert_eq!(copied[[i, j]], (10 * j + i) as i64);
            }
        }
        let every_other = a.slice(ndarray::s![.., ..;2]);
        assert_eq!(
            copy("f", "a", every_other).unwrap().into_raw_vec_and_offset().0,
            vec![0, 2, 4, 10, 12, 14, 20, 22, 24]
        );
    }

    #[test]
    fn a_copy_that_cannot_be_had_is_an_alloc_error() {
        // One element seen 2^50 times (stride 0): a copy of 8 PiB.
        let one = ndarray::Array0::from_elem((), 1.5f64);
        let wide = one.broadcast((1usize << 25, 1usize << 25)).unwrap();
        let e = standard("f", "x", wide).unwrap_err();
        assert_eq!(e, Error::Alloc { function: "f".into(), tensor: "x".into(), bytes: 1 << 53 });
    }

    #[test]
    fn a_request_past_the_address_space_is_an_alloc_error() {
        // 2^50 elements of 8 bytes: 8 PiB, past any address space.
        let e = try_uninit::<f64, _>("f", "t", ndarray::Ix2(1 << 25, 1 << 25)).unwrap_err();
        assert_eq!(e, Error::Alloc { function: "f".into(), tensor: "t".into(), bytes: 1 << 53 });
        let e = zeros::<f64, _, _>("f", "z", (1usize << 25, 1usize << 25), 0.0).unwrap_err();
        assert_eq!(e, Error::Alloc { function: "f".into(), tensor: "z".into(), bytes: 1 << 53 });
        // Bytes past `isize`: an extent error, before the allocator.
        assert!(matches!(try_uninit::<f64, _>("f", "t", ndarray::Ix1(1 << 62)), Err(Error::Extent { .. })));
        // And the next request works.
        assert_eq!(zeros::<f64, _, _>("f", "z", [2usize, 3], 0.0).unwrap(), Array2::<f64>::zeros((2, 3)));
    }

    #[test]
    fn zeros_of_other_types_are_written() {
        #[derive(Clone, Copy, Debug, PartialEq)]
        struct Pair(u8, u8);
        let z = zeros::<Pair, _, _>("f", "p", [3usize], Pair(0, 0)).unwrap();
        assert_eq!(z.to_vec(), vec![Pair(0, 0); 3]);
        let z = zeros::<i64, _, _>("f", "i", [4usize, 0], 0).unwrap();
        assert_eq!(z.shape(), &[4, 0]);
    }

    #[test]
    fn named_fills_in_an_unnamed_tensor_only() {
        let unnamed: Result<(), Error> = Err(Error::Alloc { function: "f".into(), tensor: String::new(), bytes: 8 });
        assert_eq!(named("y", unnamed), Err(Error::Alloc { function: "f".into(), tensor: "y".into(), bytes: 8 }));
        let other: Result<(), Error> = Err(Error::Alloc { function: "f".into(), tensor: "w".into(), bytes: 8 });
        assert_eq!(named("y", other.clone()), other);
        let shape: Result<(), Error> = Err(Error::Assert { function: "f".into(), message: "m".into() });
        assert_eq!(named("y", shape.clone()), shape);
    }
}
