//! A cache of large tensor buffers, reused from one call to the next.
//!
//! A generated function allocates its temporaries afresh at every call and
//! frees them when it returns. For buffers of megabytes the allocator maps
//! fresh pages from the kernel each time (and unmaps them on free), so
//! every call pays a page fault per 4 KiB touched: a convolution gradient
//! with 20 MiB of temporaries ran at 2.5x the time of the same code with
//! its memory kept mapped. Generated code therefore takes its large
//! outputs from this pool ([`uninit`]) and gives back, when it returns,
//! the temporaries that are not part of its result ([`recycle`]).
//!
//! The pool keeps at most [`MAX_BUFFERS`] buffers and [`MAX_BYTES`] bytes;
//! buffers under [`MIN_BYTES`] are left to the allocator, which reuses
//! small blocks well. A buffer is taken only for a request of at least half
//! its capacity.

use std::any::{Any, TypeId};
use std::mem::MaybeUninit;
use std::sync::Mutex;

use ndarray::{Array, Dimension};

/// Buffers smaller than this (in bytes) are not cached.
pub const MIN_BYTES: usize = 1 << 18;

/// The most bytes the pool holds.
pub const MAX_BYTES: usize = 1 << 30;

/// The most buffers the pool holds.
pub const MAX_BUFFERS: usize = 64;

struct Buffer {
    elem: TypeId,
    /// Capacity in elements.
    capacity: usize,
    bytes: usize,
    /// A `Vec<MaybeUninit<T>>` of length 0 for `T` = `elem`.
    vec: Box<dyn Any + Send>,
}

static POOL: Mutex<Vec<Buffer>> = Mutex::new(Vec::new());

/// An uninitialized array of shape `dim`, reusing a cached buffer when one
/// fits.
pub fn uninit<T: Send + 'static, D: Dimension>(dim: D) -> Array<MaybeUninit<T>, D> {
    let len = dim.size();
    let bytes = len.saturating_mul(std::mem::size_of::<T>());
    if bytes < MIN_BYTES {
        return Array::uninit(dim);
    }
    let found = POOL.lock().ok().and_then(|mut pool| {
        let elem = TypeId::of::<T>();
        // The smallest cached buffer that holds `len` without wasting half.
        let best = pool
            .iter()
            .enumerate()
            .filter(|(_, b)| b.elem == elem && b.capacity >= len && b.capacity / 2 <= len)
            .min_by_key(|(_, b)| b.capacity)
            .map(|(i, _)| i)?;
        Some(pool.swap_remove(best))
    });
    let Some(buffer) = found else { return Array::uninit(dim) };
    match buffer.vec.downcast::<Vec<MaybeUninit<T>>>() {
        Ok(mut vec) => {
            // SAFETY: the capacity is at least `len` and the elements are
            // `MaybeUninit`, for which any contents are valid.
            unsafe { vec.set_len(len) };
            // (`from_shape_vec` fails only when the length differs from the
            // shape's size, which it was just set to.)
            Array::from_shape_vec(dim.clone(), *vec).unwrap_or_else(|_| Array::uninit(dim))
        }
        Err(_) => Array::uninit(dim),
    }
}

/// Gives `a`'s buffer to the pool (or frees it, when it is small, or the
/// pool is full).
pub fn recycle<T: Send + 'static, D: Dimension>(a: Array<T, D>) {
    let (mut vec, _) = a.into_raw_vec_and_offset();
    let capacity = vec.capacity();
    let bytes = capacity.saturating_mul(std::mem::size_of::<T>());
    if !(MIN_BYTES..=MAX_BYTES).contains(&bytes) {
        return;
    }
    // The elements need no drop (generated tensors hold plain scalars), and
    // the buffer comes back as uninitialized memory.
    if std::mem::needs_drop::<T>() {
        return;
    }
    // SAFETY: length 0 drops nothing; the capacity stays allocated.
    unsafe { vec.set_len(0) };
    // SAFETY: `MaybeUninit<T>` has `T`'s size and alignment, so the
    // allocation's layout is unchanged.
    let vec: Vec<MaybeUninit<T>> = unsafe {
        let mut vec = std::mem::ManuallyDrop::new(vec);
        Vec::from_raw_parts(vec.as_mut_ptr().cast::<MaybeUninit<T>>(), 0, capacity)
    };
    let Ok(mut pool) = POOL.lock() else { return };
    let mut held: usize = pool.iter().map(|b| b.bytes).sum();
    // Oldest buffers go first.
    while !pool.is_empty() && (pool.len() >= MAX_BUFFERS || held + bytes > MAX_BYTES) {
        held -= pool.remove(0).bytes;
    }
    pool.push(Buffer { elem: TypeId::of::<T>(), capacity, bytes, vec: Box::new(vec) });
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
    fn a_recycled_buffer_is_reused_for_the_next_request_of_its_size() {
        // Both tests share the global pool: use sizes no other test uses.
        let a = Array2::from_elem((300, 301), ProbeA([1; 12]));
        let ptr = a.as_ptr() as usize;
        recycle(a);
        let b = uninit::<ProbeA, _>(ndarray::Ix2(301, 300));
        assert_eq!(b.as_ptr() as usize, ptr, "the cached buffer was not reused");
        assert_eq!(b.shape(), &[301, 300]);
        // Another element type of the same size never gets it.
        recycle(unsafe { b.assume_init() });
        let c = uninit::<ProbeB, _>(ndarray::Ix2(301, 300));
        assert_ne!(c.as_ptr() as usize, ptr);
    }

    #[test]
    fn small_and_much_smaller_requests_are_left_to_the_allocator() {
        let a = Array2::from_elem((700, 100), ProbeC([2; 12]));
        let ptr = a.as_ptr() as usize;
        recycle(a);
        // A quarter of the buffer would waste the rest: not taken.
        let small = uninit::<ProbeC, _>(ndarray::Ix2(175, 100));
        assert_ne!(small.as_ptr() as usize, ptr);
        recycle(Array2::from_elem((10, 10), ProbeC([3; 12])));
        let filled = uninit::<ProbeC, _>(ndarray::Ix2(700, 100));
        assert_eq!(filled.as_ptr() as usize, ptr);
    }
}
