//! A global allocator that forwards to the system's and reports the size
//! of every allocation and reallocation to a function of the test
//! (`tests/into_alloc.rs`, `tests/dist_into.rs`).

/// Installs the counting allocator: `$count(bytes)` runs before every
/// allocation and reallocation (it must not allocate unless it guards
/// against reentry).
macro_rules! counting_allocator {
    ($count:path) => {
        struct Counting;

        // SAFETY: forwards to the system allocator.
        unsafe impl std::alloc::GlobalAlloc for Counting {
            unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
                $count(layout.size());
                unsafe { std::alloc::GlobalAlloc::alloc(&std::alloc::System, layout) }
            }

            unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
                unsafe { std::alloc::GlobalAlloc::dealloc(&std::alloc::System, ptr, layout) }
            }

            unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
                $count(new_size);
                unsafe { std::alloc::GlobalAlloc::realloc(&std::alloc::System, ptr, layout, new_size) }
            }
        }

        #[global_allocator]
        static GLOBAL: Counting = Counting;
    };
}
