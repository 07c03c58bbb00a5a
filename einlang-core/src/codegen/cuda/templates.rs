//! CUDA C text the host glue fills in: the grid-stride kernel of a
//! definition and the loops that hand points to threads, warps or
//! blocks (the kernels' bodies come from `kernel`).

use super::launch::{DefKernel, Per};

/// The text of a grid-stride kernel (a thread per point) of `k`.
pub(super) fn grid_stride(params: &str, k: &DefKernel) -> String {
    let (n, decls, value, points) = (&k.n, &k.decls, &k.value, Per::Thread.points_loop());
    format!(
        "extern \"C\" __global__ void __KERNEL__({params}) {{\n    const long long __n = {n};\n    \
         #pragma unroll 4\n    for (long long {points}) {{\n{decls}        __out[__p] = {value};\n    }}\n}}\n"
    )
}

impl Per {
    /// The C text of a loop over the points (or rows) `__p < __n`, each
    /// taken by one thread, warp or block.
    pub(super) fn points_loop(self) -> &'static str {
        match self {
            Per::Thread | Per::Flat => {
                "__p = (long long)blockIdx.x * blockDim.x + threadIdx.x; __p < __n; __p += (long long)gridDim.x * blockDim.x"
            }
            Per::Warp => {
                "__p = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); __p < __n; \
                 __p += (long long)gridDim.x * (blockDim.x >> 5)"
            }
            Per::Block => "__p = blockIdx.x; __p < __n; __p += gridDim.x",
        }
    }
}
