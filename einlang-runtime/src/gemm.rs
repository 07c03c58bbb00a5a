//! Matrix products for contractions the compiler recognized as GEMM-shaped.
//!
//! The operands arrive as views already permuted to `[batch, m, k]` and
//! `[batch, k, n]` (any strides, including transposed and reversed ones),
//! handed to the kernels with their strides, so a transposed operand is
//! never copied. Outputs are written whole and are not zeroed first.
//!
//! `f32`/`f64` products go to one of three kernels (`Kernel`), chosen
//! once per process from the processor: with AVX-512, `f32` products go
//! to our own packed kernels (`gemm_packed.rs`: a 12 x 32 micro-tile, the
//! right operand packed once per block of the sum and shared by the
//! threads; 1.2x to 1.7x faster than matrixmultiply on 1000 x 777 x 1029
//! and 1024^3 on a 2-core Intel Xeon, where matrixmultiply, split into
//! blocks of rows or columns across rayon's threads, had been 1.1x to 1.6x
//! faster than the `gemm` crate for square and tall shapes; products
//! whose rows fill the 12-row tiles badly, such as a grouped
//! convolution's 16 filters, and `f64` products stay on matrixmultiply;
//! where the processor splits 512-bit operations in two, AMD's Zen 4, the
//! `f32` products of 32 Mi multiply-adds or more go to the `gemm` crate,
//! 1.1x to 1.3x faster there: `large_to_gemm_crate`);
//! without it (a 2-core AMD EPYC, Zen 3, AVX2), the `gemm` crate had
//! been as fast or faster than matrixmultiply on most shapes, up to 1.2x
//! with 32 to 64 columns or 300 rows; there our packed kernels run 6 x 16
//! tiles and take the `f32` products below 32 Mi multiply-adds (attention
//! heads, fused), the crate the larger ones and the `f64` ones. Skinny
//! products (fewer than `SKINNY_ROWS` rows or `SKINNY_COLS` columns) go
//! to the `gemm` crate on either (1.2x to 16x faster than matrixmultiply
//! with 1 to 12 rows, 1.1x to 1.4x with 8 or 16 columns) but three: 1 to
//! 15 rows times a matrix stored by columns and 1 to 7 rows (13 to 15 too
//! with AVX-512) times one stored by rows, in place (`gemm_dots.rs`:
//! 1.0-1.2x the crate's speed with one row times 1024 x 1024 on a Zen 5,
//! 2-5x with more: `by_rows_takes`), and 8 to 12 rows times one stored by
//! rows (`packed::skinny`). `EINLANG_GEMM=gemm`,
//! `=matrixmultiply` or `=packed` overrides the choice (to compare the two
//! on one machine). With the cargo feature `blas`, products that are not
//! skinny go to the system's OpenBLAS instead (`crate::blas`; one thread
//! per call, split across rayon's threads like matrixmultiply's; an
//! operand layout CBLAS cannot read goes to matrixmultiply), unless
//! `EINLANG_GEMM` names another library. `f16` and `bf16` products
//! accumulate in `f32` and round once (`half_product`). Integer products
//! run ndarray's loops. Batches run in parallel through rayon.

use std::any::TypeId;
use std::mem::MaybeUninit;

use ndarray::linalg::general_mat_mul;
use ndarray::{s, Array2, Array3, ArrayView2, ArrayView3, ArrayViewMut2, Axis, LinalgScalar, ShapeBuilder};
use rayon::prelude::*;

use crate::Error;

#[cfg(target_arch = "x86_64")]
#[path = "gemm_packed.rs"]
mod packed;

#[cfg(target_arch = "x86_64")]
#[path = "gemm_dots.rs"]
mod dots;

#[path = "gemm_attention.rs"]
mod attention;
pub use attention::attention_into;
use attention::softmax_row;

/// Extents as `usize`, refusing negative ones.
fn extents<const N: usize>(function: &str, dims: [i64; N]) -> Result<[usize; N], Error> {
    let mut out = [0usize; N];
    for (o, d) in out.iter_mut().zip(dims) {
        *o = crate::shape::extent(function, "a matrix product extent", d)?;
    }
    Ok(out)
}

/// Checks that a view covers the `rows x cols` corner the product reads.
fn covers<T>(function: &str, v: &ArrayView2<'_, T>, rows: usize, cols: usize) -> Result<(), Error> {
    if v.nrows() >= rows && v.ncols() >= cols {
        Ok(())
    } else {
        Err(Error::Extent {
            function: function.to_string(),
            message: format!("a matrix product operand of shape {:?} is smaller than {rows}x{cols}", v.shape()),
        })
    }
}

/// The library a product that is not skinny goes to (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kernel {
    MatrixMultiply,
    GemmCrate,
    /// Our own packed `f32` kernels (`packed`) where the processor has
    /// AVX-512F or AVX2; `f64` products go to matrixmultiply (to the
    /// `gemm` crate without AVX-512), and so do other processors'.
    Packed,
    /// The system's OpenBLAS (cargo feature `blas`), one thread per call.
    #[cfg(feature = "blas")]
    Blas,
}

/// The library for products that are not skinny in this process: from
/// `EINLANG_GEMM` when it names one, else from the processor.
fn large_kernel() -> Kernel {
    chosen().0
}

/// `large_kernel`, and whether `EINLANG_GEMM` named it.
fn chosen() -> (Kernel, bool) {
    static CHOSEN: std::sync::OnceLock<(Kernel, bool)> = std::sync::OnceLock::new();
    *CHOSEN.get_or_init(|| match std::env::var("EINLANG_GEMM").as_deref() {
        Ok("gemm") => (Kernel::GemmCrate, true),
        Ok("matrixmultiply") => (Kernel::MatrixMultiply, true),
        Ok("packed") => (Kernel::Packed, true),
        #[cfg(feature = "blas")]
        _ => (Kernel::Blas, false),
        #[cfg(not(feature = "blas"))]
        _ if crate::cpu::has_avx512() || crate::cpu::has_avx2_fma() => (Kernel::Packed, false),
        #[cfg(not(feature = "blas"))]
        _ => (Kernel::GemmCrate, false),
    })
}

/// Whether an `f32` product of `m x k` times `k x n` in the packed
/// kernels' process goes to the `gemm` crate instead: on a processor that
/// splits 512-bit operations in two (`cpu::splits_512`, AMD's Zen 4),
/// unless `EINLANG_GEMM` named the packed kernels, a product of at least
/// `CRATE_MACS` multiply-adds. There a 512-bit FMA takes the issue slots
/// of two 256-bit ones, so our 12 x 32 tile has no more peak than the
/// crate's AVX2 kernels, which ran ahead of it on large products: 1000 x
/// 777 x 1029 in 7.76-8.22 ms against 8.66-9.32 (four of five
/// alternations), a dense layer 256 x 1024 -> 1024 in 2.71-3.02 against
/// 3.30-4.24 (`cargo bench --bench products`, `EINLANG_GEMM=packed` and
/// the crate alternated, 2 threads). A head of attention (256 or 512 rows
/// and keys, 64 features: 4 to 17 million) keeps our kernels, fused: the
/// chain of the crate's products and the softmax between them took
/// 1.1x-1.2x its time. Batched products of that size ran as fast either
/// way. The products of a few rows (`dots`, `packed::skinny`) keep our
/// kernels too, which stay ahead there.
///
/// The same holds without AVX-512 (AMD's Zen 3), where our kernels run
/// 6 x 16 tiles: in the cache they ran ahead of the crate (144 x 256 x
/// 64, one thread: 85-89 GFLOP/s against 63-65 in two of three runs),
/// and attention's heads fused gained most (16 heads of 256 x 64: 2.55
/// ms against 3.5-3.7 through the crate's chain), but on products that
/// stream their operands from memory the crate stayed ahead (1000 x 777
/// x 1029 on one thread: 42-60 GFLOP/s against 62-85).
#[cfg(target_arch = "x86_64")]
fn large_to_gemm_crate(kernel: Kernel, m: usize, n: usize, k: usize) -> bool {
    kernel == Kernel::Packed
        && !chosen().1
        && (crate::cpu::splits_512() || !crate::cpu::has_avx512())
        && m.saturating_mul(n).saturating_mul(k) >= CRATE_MACS
}

/// The fewest multiply-adds of a product that `large_to_gemm_crate` gives
/// to the `gemm` crate (32 Mi: between attention's heads and a 1x1
/// convolution's image, 256 x 784 x 256).
#[cfg(target_arch = "x86_64")]
const CRATE_MACS: usize = 1 << 25;

/// The instruction set of `dots` for products of a few rows times a
/// matrix stored by columns, if any: AVX-512 with our packed kernels,
/// AVX2 where the processor has no AVX-512 and the packed kernels (the
/// default there) or the `gemm` crate are the choice; matrixmultiply and
/// OpenBLAS, when chosen, take every product.
#[cfg(target_arch = "x86_64")]
fn dots_isa(kernel: Kernel) -> Option<packed::Isa> {
    match kernel {
        Kernel::Packed if crate::cpu::has_avx512() => Some(packed::Isa::Avx512),
        Kernel::Packed | Kernel::GemmCrate if !crate::cpu::has_avx512() && crate::cpu::has_avx2_fma() => {
            Some(packed::Isa::Avx2)
        }
        _ => None,
    }
}

/// Products with fewer rows, or fewer columns, than these go to the `gemm`
/// crate.
const SKINNY_ROWS: usize = 16;
const SKINNY_COLS: usize = 32;

/// The fewest rows `packed::skinny` takes: its tile computes twelve rows
/// whatever the product has, and with 1 and 4 rows times 1024 x 1024 it
/// ran at 0.43-0.50 ms against 0.14-0.43 ms through the `gemm` crate (8
/// rows: 0.44-0.66 ms against 0.64-0.89 ms; against onnxruntime in
/// alternated rounds, `benches/python/compare_onnx.py --only products`).
#[cfg(target_arch = "x86_64")]
const SKINNY_OWN_ROWS: usize = 8;

/// Whether `m` rows fill `isa`'s tiles of `MR` rows (`packed::sgemm`)
/// well enough for it: its last panel computes `MR` rows whatever it
/// holds, so with 16 rows (a grouped convolution's filters per group) a
/// third of the AVX-512 kernel's work was thrown away, and such products
/// ran 1.6x slower than through matrixmultiply (`cargo bench --bench
/// conv`, the grouped cases, with `EINLANG_GEMM=packed` and
/// `=matrixmultiply` alternated). At most an eighth of the rows computed
/// may be padding.
#[cfg(target_arch = "x86_64")]
fn rows_fill_tiles(isa: packed::Isa, m: usize) -> bool {
    // AVX2's tiles come in 2, 4 and 6 rows: at most one row of padding.
    let step = match isa {
        packed::Isa::Avx512 => isa.mr(),
        packed::Isa::Avx2 => 2,
    };
    m.div_ceil(step) * step * 8 <= m * 9
}

/// The instruction set of our packed kernels (`packed::sgemm`) in a
/// process whose products go to `kernel`: the processor's widest, when
/// the kernel is `Packed`.
#[cfg(target_arch = "x86_64")]
fn packed_isa(kernel: Kernel) -> Option<packed::Isa> {
    packed::Isa::detected().filter(|_| kernel == Kernel::Packed)
}

/// Whether an `f32` product of `m` rows and `n` columns (a sum of `k`
/// terms, not empty) goes to our packed kernel (`packed::sgemm`): the
/// kernel chosen for the process, a processor with AVX-512 or AVX2, not a
/// product for the crate (`large_to_gemm_crate`), not skinny, rows that
/// fill the tiles.
/// `product_kernel` and `attention_into` decide by it, so that fused
/// attention gives the bits of the products it fuses.
#[cfg(target_arch = "x86_64")]
fn packed_takes(kernel: Kernel, m: usize, n: usize, k: usize) -> bool {
    packed_isa(kernel).is_some_and(|isa| rows_fill_tiles(isa, m))
        && !large_to_gemm_crate(kernel, m, n, k)
        && m >= SKINNY_ROWS
        && n >= SKINNY_COLS
}

/// Whether `dots::by_rows` takes a product of `m` rows times a row-major
/// matrix: 1 to 7 rows, and with AVX-512 13 to 15 too (8 to 12 are
/// `packed::skinny`'s). Against the `gemm` crate, which packs the matrix
/// first (a 2-core Zen 5, AVX-512, two threads, alternated three times,
/// ms): 1 x 1024 x 1024 0.036-0.060 against 0.044-0.045, 4 rows
/// 0.038-0.069 against 0.115-0.118, 7 rows 0.080-0.109 against
/// 0.366-0.402, 13 rows 0.155-0.162 against 0.458-0.476, 15 x 300 x 4000
/// 0.117-0.140 against 0.179-0.207. The AVX2 form (blocks of two rows)
/// is not timed against the crate above 7 rows, which keeps them there.
#[cfg(target_arch = "x86_64")]
fn by_rows_takes(isa: packed::Isa, m: usize) -> bool {
    m < SKINNY_OWN_ROWS || (isa == packed::Isa::Avx512 && m > isa.mr() && m < SKINNY_ROWS)
}

/// Elements of the right operand above which a product of a few rows
/// (`packed::skinny`) runs on several threads.
#[cfg(target_arch = "x86_64")]
const SKINNY_PARALLEL: usize = 1 << 16;

/// Multiply-adds above which a product is split across threads. Rayon's
/// fork and join of two tasks costs 12-17 us on the 2-core virtual
/// machines this project is measured on (the other thread's wake-up), as
/// much as 2-4 Mi multiply-adds on one core. One thread against two
/// (AVX-512 Xeon): 256 x 64 x 256 61 against 102 us, 128 x 512 x 128 125
/// against 134, 144 x 256 x 256 130 against 135-152, 256^3 220-234
/// against 188-190.
const PARALLEL_WORK: usize = 12 << 20;

/// The fewest rows (or columns) of a block of a split product.
const BLOCK_MIN: usize = 32;

/// Where a product's output goes: `rows x cols` elements from `ptr` with
/// these strides (in elements), possibly uninitialized.
#[derive(Clone, Copy)]
struct Out<T> {
    ptr: *mut T,
    rs: isize,
    cs: isize,
}

// SAFETY: the blocks handed to different threads never overlap.
unsafe impl<T: Send> Send for Out<T> {}
unsafe impl<T: Send> Sync for Out<T> {}

impl<T> Out<T> {
    /// The output from `offset` elements on.
    ///
    /// # Safety
    ///
    /// The offset stays inside the output.
    unsafe fn from(self, offset: isize) -> Out<T> {
        Out { ptr: unsafe { self.ptr.offset(offset) }, ..self }
    }
}

/// `out = a · b` for `a: m x k` and `b: k x n` (views of exactly those
/// shapes), on up to `threads` threads. Only a half-precision product
/// allocates (its operands widened to `f32`): `Err(Error::Alloc)` naming
/// `function` when the allocator has no room for them, `out` then
/// partly written or not at all.
///
/// # Safety
///
/// `out` must be valid for writes of the `m x n` elements its strides
/// address, which nothing else accesses meanwhile.
unsafe fn product_into<T>(
    function: &str,
    a: ArrayView2<'_, T>,
    b: ArrayView2<'_, T>,
    out: Out<T>,
    threads: usize,
    scale: Option<T>,
) -> Result<(), Error>
where
    T: LinalgScalar + Send + Sync,
{
    unsafe { product_with(function, large_kernel(), a, b, out, threads, scale) }
}

/// `product_into` with `kernel` for products that are not skinny, each
/// finished element times `scale` when there is one (rounded once more:
/// the same bits as the product and then the multiplication).
///
/// # Safety
///
/// As `product_into`.
unsafe fn product_with<T>(
    function: &str,
    kernel: Kernel,
    a: ArrayView2<'_, T>,
    b: ArrayView2<'_, T>,
    out: Out<T>,
    threads: usize,
    scale: Option<T>,
) -> Result<(), Error>
where
    T: LinalgScalar + Send + Sync,
{
    let scaled = unsafe { product_kernel(function, kernel, a, b, out, threads, scale)? };
    if let (Some(s), false) = (scale, scaled) {
        // SAFETY: as the caller vouches for `out`, written whole above.
        unsafe { scale_out(a.nrows(), b.ncols(), out, s) };
    }
    Ok(())
}

/// Multiplies each of the `m x n` elements of `out` by `s` (a product's
/// scale, after a kernel without one).
///
/// # Safety
///
/// `out` addresses `m x n` initialized elements that nothing else
/// accesses meanwhile.
unsafe fn scale_out<T: LinalgScalar>(m: usize, n: usize, out: Out<T>, s: T) {
    for i in 0..m {
        // SAFETY: row i of the output, as the caller vouches.
        unsafe {
            let row = out.ptr.offset(i as isize * out.rs);
            if out.cs == 1 {
                for v in std::slice::from_raw_parts_mut(row, n) {
                    *v = *v * s;
                }
            } else {
                for j in 0..n {
                    let p = row.offset(j as isize * out.cs);
                    *p = *p * s;
                }
            }
        }
    }
}

/// The product of `product_with` by `kernel`; `Ok(true)` when the kernel
/// applied `scale` itself (our packed kernels, after the last block of
/// the sum), `Ok(false)` when it is still to be applied.
///
/// # Safety
///
/// As `product_into`.
unsafe fn product_kernel<T>(
    function: &str,
    kernel: Kernel,
    a: ArrayView2<'_, T>,
    b: ArrayView2<'_, T>,
    out: Out<T>,
    threads: usize,
    scale: Option<T>,
) -> Result<bool, Error>
where
    T: LinalgScalar + Send + Sync,
{
    let (m, k, n) = (a.nrows(), a.ncols(), b.ncols());
    if m == 0 || n == 0 {
        return Ok(true);
    }
    let half = TypeId::of::<T>() == TypeId::of::<half::f16>() || TypeId::of::<T>() == TypeId::of::<half::bf16>();
    if half && k > 0 {
        return unsafe { half_product(function, kernel, a, b, out, threads) }.map(|()| false);
    }
    let float = TypeId::of::<T>() == TypeId::of::<f32>() || TypeId::of::<T>() == TypeId::of::<f64>();
    if !float || k == 0 {
        // Zero, then ndarray's product (its loops for integers).
        for i in 0..m {
            for j in 0..n {
                unsafe { out.ptr.offset(i as isize * out.rs + j as isize * out.cs).write(T::zero()) };
            }
        }
        if k > 0 {
            let mut c =
                unsafe { ArrayViewMut2::from_shape_ptr((m, n).strides((out.rs as usize, out.cs as usize)), out.ptr) };
            general_mat_mul(T::one(), &a, &b, T::zero(), &mut c);
        }
        return Ok(false);
    }
    // The scale as `f32` for our kernels (`T` is `f32` on their paths).
    #[cfg(target_arch = "x86_64")]
    let scale32 = scale.filter(|_| TypeId::of::<T>() == TypeId::of::<f32>()).map(|s| {
        // SAFETY: `T` is `f32` (filtered just above).
        unsafe { std::mem::transmute_copy::<T, f32>(&s) }
    });
    #[cfg(not(target_arch = "x86_64"))]
    let _ = scale;
    let work = m.saturating_mul(n).saturating_mul(k);
    let parallel = threads > 1 && work >= PARALLEL_WORK;
    // The operands and the output of an `f32` product for our own kernels;
    // `own` with their instruction set when the process chose the packed
    // ones and the processor has AVX-512F or AVX2.
    #[cfg(target_arch = "x86_64")]
    let f32_mats = (TypeId::of::<T>() == TypeId::of::<f32>()).then(|| {
        let mat = |v: &ArrayView2<'_, T>| packed::Mat {
            ptr: v.as_ptr().cast::<f32>().cast_mut(),
            rs: v.strides()[0],
            cs: v.strides()[1],
        };
        (mat(&a), mat(&b), packed::Mat { ptr: out.ptr.cast::<f32>(), rs: out.rs, cs: out.cs })
    });
    #[cfg(target_arch = "x86_64")]
    let own = packed_isa(kernel).zip(f32_mats);
    // A product of a few rows reads its right operand once: on two
    // threads once that is a few hundred kilobytes.
    #[cfg(target_arch = "x86_64")]
    let few_threads = if k.saturating_mul(n) >= SKINNY_PARALLEL { threads } else { 1 };
    #[cfg(target_arch = "x86_64")]
    if let Some((isa, (am, bm, c))) = dots_isa(kernel).zip(f32_mats) {
        if m <= dots::MAX_ROWS.min(SKINNY_ROWS - 1) && (k == 1 || (am.cs == 1 && bm.rs == 1)) {
            // A few rows times a matrix stored by columns (an `[out, in]`
            // weight): dot products over `b` in place (`dots`), which the
            // packed kernels and the `gemm` crate would copy first.
            // SAFETY: `T` is f32, the processor has `isa`, 0 < m <=
            // MAX_ROWS, k > 0; rows of `a` and columns of `b` contiguous
            // (or one term long); views of their extents, `out` as the
            // caller vouches.
            unsafe { dots::dots(isa, m, k, n, am, bm, c, few_threads, scale32) };
            return Ok(true);
        }
    }
    #[cfg(target_arch = "x86_64")]
    if let Some((isa, (am, bm, c))) = own.filter(|(_, (_, bm, _))| n >= SKINNY_COLS && bm.cs == 1) {
        // A few rows times a row-major matrix (`x · w` with an `[in, out]`
        // weight), in place.
        if by_rows_takes(isa, m) {
            // `w` streamed by rows, the outputs in registers.
            // SAFETY: `T` is f32, the processor has `isa`, 0 < m, k > 0,
            // `b` has unit column stride; views of their extents, `out` as
            // the caller vouches.
            unsafe { dots::by_rows(isa, m, k, n, am, bm, c, few_threads, scale32) };
            return Ok(true);
        }
        if (SKINNY_OWN_ROWS..=isa.mr()).contains(&m) && bm.rs >= n as isize {
            // Eight to twelve rows (AVX-512's tiles): the matrix streamed
            // once through the micro-kernel (`packed::skinny`).
            // SAFETY: `T` is f32, the processor has `isa`, k > 0, m <= MR,
            // `b` has unit column stride; views of their extents, `out` as
            // the caller vouches.
            unsafe { packed::skinny(isa, m, k, n, am, bm, c, few_threads, scale32) };
            return Ok(true);
        }
    }
    #[cfg(target_arch = "x86_64")]
    let crate_takes_large = own.is_some() && large_to_gemm_crate(kernel, m, n, k);
    #[cfg(not(target_arch = "x86_64"))]
    let crate_takes_large = false;
    if m < SKINNY_ROWS || n < SKINNY_COLS || kernel == Kernel::GemmCrate || crate_takes_large {
        // The crate decides itself how many threads a product is worth
        // (a skinny product reading megabytes pays off on two threads well
        // below `PARALLEL_WORK`).
        // SAFETY: `T` is f32 or f64 (checked above).
        unsafe { gemm_crate(a, b, out, threads) };
        return Ok(false);
    }
    #[cfg(target_arch = "x86_64")]
    if let Some((isa, (am, bm, c))) = own.filter(|_| packed_takes(kernel, m, n, k)) {
        // SAFETY: `T` is f32, the processor has `isa`, k > 0; the operands
        // are views of their extents, `out` as the caller vouches.
        let threads = if parallel { threads } else { 1 };
        unsafe { packed::sgemm(isa, m, k, n, am, bm, c, threads, scale32) };
        return Ok(true);
    }
    if kernel == Kernel::Packed && !crate::cpu::has_avx512() {
        // Without AVX-512 the products our AVX2 kernels leave (`f64`) go
        // to the `gemm` crate, as fast or faster than matrixmultiply
        // there (module docs).
        // SAFETY: `T` is f32 or f64 (checked above).
        unsafe { gemm_crate(a, b, out, threads) };
        return Ok(false);
    }
    if !parallel {
        unsafe { blocked(kernel, a, b, out) };
    } else if m >= n.min(threads * BLOCK_MIN) {
        // One matrixmultiply (or OpenBLAS) call runs on one thread: blocks
        // of rows (or of columns, when there are few rows), one per thread.
        let rows = m.div_ceil(threads).max(BLOCK_MIN);
        (0..m.div_ceil(rows)).into_par_iter().for_each(|i| {
            let lo = i * rows;
            let hi = (lo + rows).min(m);
            let o = unsafe { out.from(lo as isize * out.rs) };
            unsafe { blocked(kernel, a.slice(s![lo..hi, ..]), b, o) };
        });
    } else {
        let cols = n.div_ceil(threads).max(BLOCK_MIN);
        (0..n.div_ceil(cols)).into_par_iter().for_each(|j| {
            let lo = j * cols;
            let hi = (lo + cols).min(n);
            let o = unsafe { out.from(lo as isize * out.cs) };
            unsafe { blocked(kernel, a, b.slice(s![.., lo..hi]), o) };
        });
    }
    Ok(false)
}

/// `out = a · b` through the `gemm` crate on up to `threads` threads
/// (the crate decides itself how many a product is worth).
///
/// # Safety
///
/// As `product_into`, and `T` is a type the crate multiplies (`f32`,
/// `f64`, `half::f16`).
unsafe fn gemm_crate<T: LinalgScalar>(a: ArrayView2<'_, T>, b: ArrayView2<'_, T>, out: Out<T>, threads: usize) {
    let (m, k, n) = (a.nrows(), a.ncols(), b.ncols());
    let parallelism = if threads > 1 { gemm::Parallelism::Rayon(threads) } else { gemm::Parallelism::None };
    let (sa, sb) = (a.strides(), b.strides());
    // SAFETY: the operands' strides are their own; dst := 0 * dst + 1 * a b,
    // dst not read; the caller vouches for `T` and `out`.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            out.ptr,
            out.cs,
            out.rs,
            false,
            a.as_ptr(),
            sa[1],
            sa[0],
            b.as_ptr(),
            sb[1],
            sb[0],
            T::zero(),
            T::one(),
            false,
            false,
            false,
            parallelism,
        )
    };
}

/// The longest sum an `f16` product leaves to the `gemm` crate: its `f16`
/// kernels accumulate in `f32` over blocks of at least 512 terms of the
/// sum and round the output to `f16` between blocks, so up to 512 terms
/// are one `f32` sum rounded once.
const HALF_GEMM_MAX_K: usize = 512;

/// `out = a · b` for half-precision `T` (`half::f16` or `half::bf16`),
/// accumulated in `f32` and rounded once: `f16` products with sums of at
/// most `HALF_GEMM_MAX_K` terms go to the `gemm` crate's `f16` kernels;
/// longer ones, and `bf16` products, are converted to `f32` (buffers from
/// the pool, given back after), multiplied by the `f32` product and
/// rounded. A buffer the allocator has no room for is `Err(Error::Alloc)`
/// naming `function` (and no tensor: the caller's definition names it).
///
/// # Safety
///
/// As `product_into`, and `T` is `half::f16` or `half::bf16`.
unsafe fn half_product<T>(
    function: &str,
    kernel: Kernel,
    a: ArrayView2<'_, T>,
    b: ArrayView2<'_, T>,
    out: Out<T>,
    threads: usize,
) -> Result<(), Error>
where
    T: LinalgScalar + Send + Sync,
{
    let (m, k, n) = (a.nrows(), a.ncols(), b.ncols());
    let f16 = TypeId::of::<T>() == TypeId::of::<half::f16>();
    if f16 && k <= HALF_GEMM_MAX_K {
        // SAFETY: `T` is `half::f16`, the `gemm` crate's `f16`.
        unsafe { gemm_crate(a, b, out, threads) };
        return Ok(());
    }
    // SAFETY (both conversions): `T` is `half::f16` when `f16`, else
    // `half::bf16`; both are 16-bit `Copy` types.
    use crate::half_bits::{bf16_from_f32, bf16_to_f32, f16_from_f32, f16_to_f32};
    let widen = |v: &T| -> f32 {
        if f16 {
            f16_to_f32(unsafe { std::mem::transmute_copy::<T, half::f16>(v) })
        } else {
            bf16_to_f32(unsafe { std::mem::transmute_copy::<T, half::bf16>(v) })
        }
    };
    let round = |v: f32| -> T {
        if f16 {
            unsafe { std::mem::transmute_copy::<half::f16, T>(&f16_from_f32(v)) }
        } else {
            unsafe { std::mem::transmute_copy::<half::bf16, T>(&bf16_from_f32(v)) }
        }
    };
    let a32 = widened(function, a, f16, widen)?;
    let b32 = match widened(function, b, f16, widen) {
        Ok(b32) => b32,
        Err(e) => {
            crate::pool::recycle(a32);
            return Err(e);
        }
    };
    let mut c32 = match crate::pool::try_uninit::<f32, _>(function, "", ndarray::Ix2(m, n)) {
        Ok(c) => c,
        Err(e) => {
            crate::pool::recycle(a32);
            crate::pool::recycle(b32);
            return Err(e);
        }
    };
    let o = Out { ptr: c32.as_mut_ptr().cast::<f32>(), rs: n as isize, cs: 1 };
    // SAFETY: `c32` is `m x n`, standard layout, owned here; an `f32`
    // product allocates nothing and writes every element (k > 0).
    let done = unsafe { product_with(function, kernel, a32.view(), b32.view(), o, threads, None) };
    crate::pool::recycle(a32);
    crate::pool::recycle(b32);
    done?;
    // SAFETY: written whole just above.
    let c32 = unsafe { c32.assume_init() };
    for (i, row) in c32.outer_iter().enumerate() {
        let (Some(src), 1) = (row.to_slice(), out.cs) else {
            for (j, v) in row.iter().enumerate() {
                // SAFETY: (i, j) is inside the `m x n` output.
                unsafe { out.ptr.offset(i as isize * out.rs + j as isize * out.cs).write(round(*v)) };
            }
            continue;
        };
        // SAFETY: with unit column stride, row i of the output is `n`
        // consecutive elements, written only here; `T` is `half::f16`
        // when `f16`, else `half::bf16`.
        unsafe {
            let row = out.ptr.offset(i as isize * out.rs);
            if f16 {
                let dst = std::slice::from_raw_parts_mut(row.cast::<MaybeUninit<half::f16>>(), n);
                crate::half_bits::round_f16(src, dst);
            } else {
                let dst = std::slice::from_raw_parts_mut(row.cast::<MaybeUninit<half::bf16>>(), n);
                crate::half_bits::round_bf16(src, dst);
            }
        }
    }
    crate::pool::recycle(c32);
    Ok(())
}

/// `v` widened to `f32` into a buffer from the pool (`T` is `half::f16`
/// when `f16`, else `half::bf16`): contiguous rows whole (eight at a time
/// through F16C where the processor has it, see `half_bits`), others by
/// `widen`, element by element. A column-major operand (a transposed one)
/// is widened as its transpose and comes back transposed (the `f32`
/// product reads any strides). `Err(Error::Alloc)` naming `function` when
/// there is no room for it (a broadcast operand of a few bytes may widen
/// to petabytes).
fn widened<T>(
    function: &str,
    v: ArrayView2<'_, T>,
    f16: bool,
    widen: impl Fn(&T) -> f32,
) -> Result<Array2<f32>, Error> {
    let transposed = v.strides()[1] != 1 && v.strides()[0] == 1;
    let v = if transposed { v.reversed_axes() } else { v };
    let mut w = crate::pool::try_uninit::<f32, _>(function, "", v.raw_dim())?;
    for (src, mut dst) in v.outer_iter().zip(w.outer_iter_mut()) {
        match (src.to_slice(), dst.as_slice_mut()) {
            // SAFETY: `T` is `half::f16` when `f16`, else `half::bf16`.
            (Some(src), Some(dst)) => unsafe {
                if f16 {
                    let src = std::slice::from_raw_parts(src.as_ptr().cast::<half::f16>(), src.len());
                    crate::half_bits::widen_f16(src, dst);
                } else {
                    let src = std::slice::from_raw_parts(src.as_ptr().cast::<half::bf16>(), src.len());
                    crate::half_bits::widen_bf16(src, dst);
                }
            },
            _ => ndarray::Zip::from(&mut dst).and(&src).for_each(|o, x| {
                o.write(widen(x));
            }),
        }
    }
    // SAFETY: every row was written whole (the slices have its length).
    let w = unsafe { w.assume_init() };
    Ok(if transposed { w.reversed_axes() } else { w })
}

/// One call of `kernel`'s library on this thread (`T` is f32 or f64):
/// `out = a · b`, out not read. OpenBLAS takes the product when it can
/// read the operands' layouts, else matrixmultiply (any strides) does.
///
/// # Safety
///
/// As `product_into`.
unsafe fn blocked<T: LinalgScalar>(kernel: Kernel, a: ArrayView2<'_, T>, b: ArrayView2<'_, T>, out: Out<T>) {
    #[cfg(feature = "blas")]
    if kernel == Kernel::Blas && unsafe { crate::blas::product(a.view(), b.view(), out.ptr, out.rs, out.cs) } {
        return;
    }
    let _ = kernel;
    let (m, k, n) = (a.nrows(), a.ncols(), b.ncols());
    let (sa, sb) = (a.strides(), b.strides());
    if TypeId::of::<T>() == TypeId::of::<f32>() {
        let (a, b, c) = (a.as_ptr().cast::<f32>(), b.as_ptr().cast::<f32>(), out.ptr.cast::<f32>());
        unsafe { matrixmultiply::sgemm(m, k, n, 1.0, a, sa[0], sa[1], b, sb[0], sb[1], 0.0, c, out.rs, out.cs) };
    } else {
        let (a, b, c) = (a.as_ptr().cast::<f64>(), b.as_ptr().cast::<f64>(), out.ptr.cast::<f64>());
        unsafe { matrixmultiply::dgemm(m, k, n, 1.0, a, sa[0], sa[1], b, sb[0], sb[1], 0.0, c, out.rs, out.cs) };
    }
}

/// The threads a product may split across: one inside a row of a parallel
/// loop (a product per row of a definition, whose rows keep the threads
/// busy), else rayon's.
fn available_threads() -> usize {
    if crate::par::in_parallel_rows() {
        1
    } else {
        rayon::current_num_threads()
    }
}

/// `m` and `n` as `usize`, and the `m x k` and `k x n` corners of the
/// operands, checked to be there.
#[allow(clippy::type_complexity)]
fn corners<'a, 'b, T>(
    function: &str,
    dims: [i64; 3],
    a: ArrayView2<'a, T>,
    b: ArrayView2<'b, T>,
) -> Result<([usize; 2], ArrayView2<'a, T>, ArrayView2<'b, T>), Error> {
    let [m, n, k] = extents(function, dims)?;
    covers(function, &a, m, k)?;
    covers(function, &b, k, n)?;
    Ok(([m, n], a.slice_move(s![..m, ..k]), b.slice_move(s![..k, ..n])))
}

/// `a[..m, ..k] · b[..k, ..n]` into a new standard-layout `m x n` array.
pub fn matmul<T>(
    function: &str,
    m: i64,
    n: i64,
    k: i64,
    a: ArrayView2<'_, T>,
    b: ArrayView2<'_, T>,
) -> Result<Array2<T>, Error>
where
    T: LinalgScalar + Send + Sync + 'static,
{
    matmul_with(function, [m, n, k], a, b, None)
}

/// [`matmul`] with each element of the product times `scale`, rounded
/// once more: the same bits as `matmul` followed by that multiplication,
/// without a pass of its own on the processors whose kernels apply it
/// (`Gemm::scale` of the IR: `sum[d](q[i, d] * k[j, d]) * 0.125`).
pub fn matmul_scaled<T>(
    function: &str,
    m: i64,
    n: i64,
    k: i64,
    a: ArrayView2<'_, T>,
    b: ArrayView2<'_, T>,
    scale: T,
) -> Result<Array2<T>, Error>
where
    T: LinalgScalar + Send + Sync + 'static,
{
    matmul_with(function, [m, n, k], a, b, Some(scale))
}

fn matmul_with<T>(
    function: &str,
    [m, n, k]: [i64; 3],
    a: ArrayView2<'_, T>,
    b: ArrayView2<'_, T>,
    scale: Option<T>,
) -> Result<Array2<T>, Error>
where
    T: LinalgScalar + Send + Sync + 'static,
{
    let [rows, cols] = extents(function, [m, n])?;
    let mut out = crate::pool::try_uninit::<T, _>(function, "", ndarray::Ix2(rows, cols))?;
    let slots = out.as_slice_mut().ok_or_else(|| Error::Extent {
        function: function.to_string(),
        message: "a fresh product array is not contiguous".to_string(),
    })?;
    matmul_into_with(function, [m, n, k], a, b, scale, slots)?;
    // SAFETY: `matmul_into_with` returned `Ok`: it wrote every element.
    Ok(unsafe { out.assume_init() })
}

/// `a[..m, ..k] · b[..k, ..n]` written row-major into `out`, which holds
/// exactly `m x n` elements, possibly uninitialized (a row of a
/// definition that is the product itself: no copy of a fresh product).
/// Every element is written when it returns `Ok`.
pub fn matmul_into<T>(
    function: &str,
    m: i64,
    n: i64,
    k: i64,
    a: ArrayView2<'_, T>,
    b: ArrayView2<'_, T>,
    out: &mut [std::mem::MaybeUninit<T>],
) -> Result<(), Error>
where
    T: LinalgScalar + Send + Sync + 'static,
{
    matmul_into_with(function, [m, n, k], a, b, None, out)
}

/// [`matmul_into`], each element times `scale` when there is one (as
/// [`matmul_scaled`]).
pub(crate) fn matmul_into_with<T>(
    function: &str,
    [m, n, k]: [i64; 3],
    a: ArrayView2<'_, T>,
    b: ArrayView2<'_, T>,
    scale: Option<T>,
    out: &mut [std::mem::MaybeUninit<T>],
) -> Result<(), Error>
where
    T: LinalgScalar + Send + Sync + 'static,
{
    let ([m, n], a, b) = corners(function, [m, n, k], a, b)?;
    if m.checked_mul(n) != Some(out.len()) {
        return Err(Error::Extent {
            function: function.to_string(),
            message: format!("a {m}x{n} product written into {} elements", out.len()),
        });
    }
    let o = Out { ptr: out.as_mut_ptr().cast::<T>(), rs: n as isize, cs: 1 };
    // SAFETY: `out` holds exactly m x n elements, borrowed mutably here;
    // the product writes every one.
    unsafe { product_into(function, a, b, o, available_threads(), scale) }
}

/// Batch `index` of a batched product's operand `v`, whose batch axis is
/// `axis`: the matrix of the other two axes, in their order. A product
/// computed one batch at a time (`Gemm::slice` of the IR: a chain of
/// batched products and row kernels run per batch) reads its operands
/// through this; an index outside the batch axis is `Err(Error::Extent)`
/// naming `function`, never a panic.
pub fn batch_of<'a, T>(
    function: &str,
    v: ArrayView3<'a, T>,
    axis: usize,
    index: i64,
) -> Result<ArrayView2<'a, T>, Error> {
    let len = if axis < 3 { v.len_of(Axis(axis)) } else { 0 };
    match usize::try_from(index) {
        Ok(i) if i < len => Ok(v.index_axis_move(Axis(axis), i)),
        _ => Err(Error::Extent {
            function: function.to_string(),
            message: format!("batch {index} of a product operand of shape {:?} along axis {axis}", v.shape()),
        }),
    }
}

/// An operand of a batched product: a matrix per batch, or one matrix
/// that every batch shares.
pub enum Batched<'a, T> {
    Each(ArrayView3<'a, T>),
    Shared(ArrayView2<'a, T>),
}

impl<'a, T> From<ArrayView3<'a, T>> for Batched<'a, T> {
    fn from(v: ArrayView3<'a, T>) -> Self {
        Batched::Each(v)
    }
}

impl<'a, T> From<ArrayView2<'a, T>> for Batched<'a, T> {
    fn from(v: ArrayView2<'a, T>) -> Self {
        Batched::Shared(v)
    }
}

impl<'a, T> Batched<'a, T> {
    /// Batch `p`'s matrix.
    fn at(&self, p: usize) -> ArrayView2<'_, T> {
        match self {
            Batched::Each(v) => v.index_axis(Axis(0), p),
            Batched::Shared(v) => v.view(),
        }
    }

    fn batches(&self) -> Option<usize> {
        match self {
            Batched::Each(v) => Some(v.len_of(Axis(0))),
            Batched::Shared(_) => None,
        }
    }
}

/// Into how many blocks of rows each product of a batch is split: one,
/// unless there are several batches and threads, the batches do not
/// divide evenly among the threads, and each product is worth splitting
/// (`PARALLEL_WORK` multiply-adds, `BLOCK_MIN` rows a block). Then enough
/// blocks that the tasks (a batch's block each) divide evenly: three
/// batches on two threads are six tasks, three a thread, where three whole
/// products kept one thread idle for the last (1.33x the time).
fn batch_blocks(batch: usize, threads: usize, m: usize, n: usize, k: usize) -> usize {
    fn gcd(a: usize, b: usize) -> usize {
        if b == 0 {
            a
        } else {
            gcd(b, a % b)
        }
    }
    let big = m.saturating_mul(n).saturating_mul(k) >= PARALLEL_WORK;
    if batch <= 1 || threads <= 1 || batch.is_multiple_of(threads) || !big {
        return 1;
    }
    (threads / gcd(batch, threads)).min(m / BLOCK_MIN).max(1)
}

/// Batched product: `out[p] = a[p, ..m, ..k] · b[p, ..k, ..n]` for `p < batch`
/// (an operand given as one matrix is the same for every `p`).
pub fn batched_matmul<'a, 'b, T>(
    function: &str,
    batch: i64,
    m: i64,
    n: i64,
    k: i64,
    a: impl Into<Batched<'a, T>>,
    b: impl Into<Batched<'b, T>>,
) -> Result<Array3<T>, Error>
where
    T: LinalgScalar + Send + Sync + 'static,
{
    batched_with(function, [batch, m, n, k], a.into(), b.into(), None)
}

/// [`batched_matmul`] with each element times `scale` (as
/// [`matmul_scaled`]: attention's scores `q k^T / 8`).
#[allow(clippy::too_many_arguments)]
pub fn batched_matmul_scaled<'a, 'b, T>(
    function: &str,
    batch: i64,
    m: i64,
    n: i64,
    k: i64,
    a: impl Into<Batched<'a, T>>,
    b: impl Into<Batched<'b, T>>,
    scale: T,
) -> Result<Array3<T>, Error>
where
    T: LinalgScalar + Send + Sync + 'static,
{
    batched_with(function, [batch, m, n, k], a.into(), b.into(), Some(scale))
}

fn batched_with<T>(
    function: &str,
    [batch, m, n, k]: [i64; 4],
    a: Batched<'_, T>,
    b: Batched<'_, T>,
    scale: Option<T>,
) -> Result<Array3<T>, Error>
where
    T: LinalgScalar + Send + Sync + 'static,
{
    let [rows, cols, count] = extents(function, [m, n, batch])?;
    let mut out = crate::pool::try_uninit::<T, _>(function, "", ndarray::Ix3(count, rows, cols))?;
    let slots = out.as_slice_mut().ok_or_else(|| Error::Extent {
        function: function.to_string(),
        message: "a fresh product array is not contiguous".to_string(),
    })?;
    batched_into_with(function, [batch, m, n, k], a, b, scale, slots)?;
    // SAFETY: `batched_into_with` returned `Ok`: it wrote every element.
    Ok(unsafe { out.assume_init() })
}

/// Batched product (as [`batched_matmul`], each element times `scale`
/// when there is one) written row-major into `out`, which holds exactly
/// `batch x m x n` elements, possibly uninitialized: the caller's buffer
/// of a `NAME_into` call, or a fresh array. Every element is written when
/// it returns `Ok`; on an error (fewer batches than `batch`, operands
/// smaller than the extents, an `out` of another length) nothing is.
pub(crate) fn batched_into_with<T>(
    function: &str,
    [batch, m, n, k]: [i64; 4],
    a: Batched<'_, T>,
    b: Batched<'_, T>,
    scale: Option<T>,
    out: &mut [std::mem::MaybeUninit<T>],
) -> Result<(), Error>
where
    T: LinalgScalar + Send + Sync + 'static,
{
    let [batch, m, n, k] = extents(function, [batch, m, n, k])?;
    if a.batches().is_some_and(|x| x < batch) || b.batches().is_some_and(|x| x < batch) {
        return Err(Error::Extent {
            function: function.to_string(),
            message: format!("a batched product has fewer than {batch} batches"),
        });
    }
    for p in 0..batch {
        covers(function, &a.at(p), m, k)?;
        covers(function, &b.at(p), k, n)?;
    }
    if batch.checked_mul(m).and_then(|x| x.checked_mul(n)) != Some(out.len()) {
        return Err(Error::Extent {
            function: function.to_string(),
            message: format!("a batch of {batch} {m}x{n} products written into {} elements", out.len()),
        });
    }
    let base = Out { ptr: out.as_mut_ptr().cast::<T>(), rs: n as isize, cs: 1 };
    // Batches in parallel, each product on one thread (or, with a single
    // batch, on all of them); each product split into blocks of rows when
    // the batches alone would leave threads idle at the end.
    let pool = rayon::current_num_threads();
    let blocks = batch_blocks(batch, pool, m, n, k);
    let threads = if batch > 1 { 1 } else { pool };
    let rows = m.div_ceil(blocks).max(1);
    (0..batch * blocks).into_par_iter().try_for_each(|task| {
        let (p, lo) = (task / blocks, (task % blocks) * rows);
        let hi = (lo + rows).min(m);
        if lo >= hi {
            return Ok(());
        }
        let (ap, bp) = (a.at(p), b.at(p));
        let o = unsafe { base.from((p * m * n + lo * n) as isize) };
        // SAFETY: rows lo..hi of batch p's m x n block of `out` (no other
        // task's), written whole when it returns `Ok`.
        unsafe { product_into(function, ap.slice(s![lo..hi, ..k]), bp.slice(s![..k, ..n]), o, threads, scale) }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array;

    /// A view as our kernels' operand.
    #[cfg(target_arch = "x86_64")]
    fn own(v: ArrayView2<'_, f32>) -> packed::Mat {
        packed::Mat { ptr: v.as_ptr().cast_mut(), rs: v.strides()[0], cs: v.strides()[1] }
    }

    /// An `m x n` product written by `write` into an output row-major or
    /// `transposed` (column-major; NaN before), returned row-major.
    #[cfg(target_arch = "x86_64")]
    fn out_in_layout(m: usize, n: usize, transposed: bool, write: impl FnOnce(packed::Mat)) -> Array2<f32> {
        let mut out = Array2::<f32>::from_elem(if transposed { (n, m) } else { (m, n) }, f32::NAN);
        let (rs, cs) = if transposed { (1, m as isize) } else { (n as isize, 1) };
        write(packed::Mat { ptr: out.as_mut_ptr(), rs, cs });
        if transposed {
            out.t().to_owned()
        } else {
            out
        }
    }

    fn naive(a: &ArrayView2<'_, f64>, b: &ArrayView2<'_, f64>, m: usize, n: usize, k: usize) -> Array2<f64> {
        Array2::from_shape_fn((m, n), |(i, j)| (0..k).map(|p| a[[i, p]] * b[[p, j]]).sum())
    }

    /// Every library a product can go to in this build.
    const KERNELS: &[Kernel] = &[
        Kernel::MatrixMultiply,
        Kernel::GemmCrate,
        Kernel::Packed,
        #[cfg(feature = "blas")]
        Kernel::Blas,
    ];

    /// `a · b` through `kernel` on the current pool's threads.
    fn with<T: LinalgScalar + Send + Sync>(kernel: Kernel, a: ArrayView2<'_, T>, b: ArrayView2<'_, T>) -> Array2<T> {
        let (m, n) = (a.nrows(), b.ncols());
        let mut out = Array2::<T>::zeros((m, n));
        let o = Out { ptr: out.as_mut_ptr(), rs: n as isize, cs: 1 };
        // SAFETY: a fresh m x n standard-layout array.
        unsafe { product_with("f", kernel, a, b, o, rayon::current_num_threads(), None) }.unwrap();
        out
    }

    #[test]
    fn matmul_matches_loops_with_transposed_and_oversized_operands() {
        let a = Array::from_shape_fn((7, 5), |(i, j)| (i * 5 + j) as f64 * 0.25 - 3.0);
        let bt = Array::from_shape_fn((4, 6), |(i, j)| (i as f64) - (j as f64) * 0.5);
        let b = bt.t();
        // Only the 6x5 corner of `a` and the 5x4 corner of `b^T` take part.
        let got = matmul("f", 6, 4, 5, a.view(), b).unwrap();
        assert_eq!(got, naive(&a.view(), &b, 6, 4, 5));
        assert!(got.is_standard_layout());
        let both_transposed = matmul("f", 4, 6, 5, b.t(), a.t()).unwrap();
        assert!(both_transposed.is_standard_layout());
        assert_eq!(both_transposed, naive(&a.view(), &b, 6, 4, 5).t());
    }

    #[test]
    fn one_batch_of_an_operand_along_any_axis() {
        let v = Array::from_shape_fn((2, 3, 4), |(a, b, c)| (a * 100 + b * 10 + c) as f64);
        for axis in 0..3 {
            for index in 0..v.shape()[axis] {
                let got = batch_of("f", v.view(), axis, index as i64).unwrap();
                assert_eq!(got, v.index_axis(Axis(axis), index));
            }
            // Past the end, negative, or along an axis that is not there:
            // an error naming the function, not a panic.
            for index in [v.shape()[axis] as i64, -1, i64::MAX] {
                match batch_of("f", v.view(), axis, index) {
                    Err(Error::Extent { function, .. }) => assert_eq!(function, "f"),
                    other => panic!("{other:?}"),
                }
            }
        }
        assert!(batch_of("f", v.view(), 3, 0).is_err());
    }

    #[test]
    fn a_product_written_into_a_slice_matches_loops() {
        let a = Array::from_shape_fn((5, 3), |(i, j)| (i * 3 + j) as f64 - 4.0);
        let b = Array::from_shape_fn((3, 4), |(i, j)| (i as f64) * 0.5 - j as f64);
        let mut out = vec![std::mem::MaybeUninit::<f64>::uninit(); 20];
        matmul_into("f", 5, 4, 3, a.view(), b.view(), &mut out).unwrap();
        // SAFETY: `matmul_into` returned `Ok`, so it wrote all 20.
        let got: Vec<f64> = out.iter().map(|v| unsafe { v.assume_init() }).collect();
        assert_eq!(Array2::from_shape_vec((5, 4), got).unwrap(), naive(&a.view(), &b.view(), 5, 4, 3));
        // A slice of the wrong length is an error, not a write past it.
        let mut short = vec![std::mem::MaybeUninit::<f64>::uninit(); 19];
        assert!(matmul_into("f", 5, 4, 3, a.view(), b.view(), &mut short).is_err());
    }

    #[test]
    fn a_large_product_split_across_threads_matches_loops() {
        // Tall (split by rows) and wide (split by columns), one operand
        // transposed, on four threads.
        let pool = rayon::ThreadPoolBuilder::new().num_threads(4).build().unwrap();
        for (m, n, k) in [(301, 40, 190), (40, 333, 200)] {
            let a = Array::from_shape_fn((m, k), |(i, j)| ((i * 7 + j * 3) % 11) as f64 - 5.0);
            let bt = Array::from_shape_fn((n, k), |(i, j)| ((i * 5 + j) % 13) as f64 * 0.5);
            let got = pool.install(|| matmul("f", m as i64, n as i64, k as i64, a.view(), bt.t()).unwrap());
            assert!(got.is_standard_layout());
            let want = naive(&a.view(), &bt.t(), m, n, k);
            assert_eq!(got, want);
            for &kernel in KERNELS {
                assert_eq!(pool.install(|| with(kernel, a.view(), bt.t())), want, "{kernel:?}");
            }
        }
    }

    /// OpenBLAS takes products in the layouts CBLAS reads (a column-major
    /// output through the transposed product, rows of one element), and
    /// hands the others (a broadcast row, stride 0) to matrixmultiply.
    #[cfg(feature = "blas")]
    #[test]
    fn blas_reads_every_layout_it_can_and_hands_on_the_others() {
        for (m, n, k) in [(37, 41, 29), (64, 1, 50), (1, 70, 33), (100, 90, 3)] {
            let a = Array::from_shape_fn((m, k), |(i, j)| ((i * 7 + j * 3) % 11) as f64 - 5.0);
            let b = Array::from_shape_fn((k, n), |(i, j)| ((i * 5 + j) % 13) as f64 * 0.5);
            let want = naive(&a.view(), &b.view(), m, n, k);
            for (rs, cs) in [(n as isize, 1), (1, m as isize)] {
                let mut out = vec![f64::NAN; m * n];
                let o = Out { ptr: out.as_mut_ptr(), rs, cs };
                // SAFETY: m x n elements at those strides, in `out`.
                unsafe { product_with("f", Kernel::Blas, a.view(), b.view(), o, 2, None) }.unwrap();
                let got = Array2::from_shape_fn((m, n), |(i, j)| out[i * rs as usize + j * cs as usize]);
                assert_eq!(got, want, "{m}x{n}x{k} rs {rs} cs {cs}");
            }
            let row = Array::from_shape_fn(k, |j| j as f32 * 0.5 - 2.0);
            let broadcast = row.broadcast((m, k)).unwrap();
            let b32 = b.mapv(|x| x as f32);
            let want32 = Array2::from_shape_fn((m, n), |(_, j)| (0..k).map(|p| row[p] * b32[[p, j]]).sum::<f32>());
            let got = with(Kernel::Blas, broadcast, b32.view());
            for (g, w) in got.iter().zip(want32.iter()) {
                assert!((g - w).abs() <= 1e-4 * w.abs().max(1.0), "{g} vs {w}");
            }
        }
    }

    #[test]
    fn every_kernel_matches_loops_on_every_layout() {
        // Skinny (the gemm crate), square and tall (either library;
        // matrixmultiply split across threads when large), with transposed
        // and reversed operands.
        let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        for (m, n, k) in
            [(1, 300, 200), (5, 64, 700), (64, 7, 300), (40, 40, 40), (200, 150, 120), (3, 3, 0), (0, 4, 4)]
        {
            let a = Array::from_shape_fn((m, k), |(i, j)| ((i * 7 + j * 3) % 11) as f64 - 5.0);
            let bt = Array::from_shape_fn((n, k), |(i, j)| ((i * 5 + j) % 13) as f64 * 0.5);
            let want = naive(&a.view(), &bt.t(), m, n, k);
            let reversed = a.slice(s![.., ..;-1]);
            let b_reversed = bt.slice(s![.., ..;-1]);
            let want_reversed = naive(&reversed, &b_reversed.t(), m, n, k);
            pool.install(|| {
                assert_eq!(matmul("f", m as i64, n as i64, k as i64, a.view(), bt.t()).unwrap(), want);
                for &kernel in KERNELS {
                    assert_eq!(with(kernel, a.view(), bt.t()), want, "{kernel:?}");
                    assert_eq!(with(kernel, reversed, b_reversed.t()), want_reversed, "{kernel:?}");
                    let a32 = a.mapv(|x| x as f32);
                    let b32 = bt.mapv(|x| x as f32);
                    assert_eq!(with(kernel, a32.view(), b32.t()), want.mapv(|x| x as f32), "{kernel:?}");
                }
            });
        }
    }

    /// A half-precision product whose widened operands the allocator has
    /// no room for (broadcast views of one element, petabytes in `f32`)
    /// is `Err(Error::Alloc)` naming the function and the bytes, in a
    /// batch too; the next product works and is `f32`-accumulated.
    #[test]
    fn half_products_that_cannot_widen_are_errors_and_the_next_works() {
        use half::{bf16, f16};
        let k = 1usize << 48;
        let alloc = |bytes: usize| Error::Alloc { function: "f".into(), tensor: String::new(), bytes };
        let one = Array::from_elem((1, 1), f16::ONE);
        let (a, b) = (one.broadcast((1, k)).unwrap(), one.broadcast((k, 1)).unwrap());
        assert_eq!(matmul("f", 1, 1, k as i64, a, b).unwrap_err(), alloc(k * 4));
        let one = Array::from_elem((1, 1), bf16::ONE);
        let (a, b) = (one.broadcast((1, k)).unwrap(), one.broadcast((k, 1)).unwrap());
        assert_eq!(matmul("f", 1, 1, k as i64, a, b).unwrap_err(), alloc(k * 4));
        // In a batch (the error of any batch's product).
        let a3 = one.broadcast((2, 1, k)).unwrap();
        let got = batched_matmul("f", 2, 1, 1, k as i64, a3, one.broadcast((k, 1)).unwrap());
        assert_eq!(got.unwrap_err(), alloc(k * 4));
        // Sums longer than the `f16` kernels take, and `bf16`, widened:
        // 1000 terms of 0.25 * 3 in `f32` are 750 exactly (an `f16` sum
        // would stop at 512 + ...: the spacing there is 0.5).
        let a = Array::from_elem((3, 1000), f16::from_f32(0.25));
        let b = Array::from_elem((1000, 2), f16::from_f32(3.0));
        assert_eq!(
            matmul("f", 3, 2, 1000, a.view(), b.view()).unwrap(),
            Array::from_elem((3, 2), f16::from_f32(750.0))
        );
        let a = a.mapv(|x| bf16::from_f32(x.to_f32()));
        let b = b.mapv(|x| bf16::from_f32(x.to_f32()));
        let a3 = a.broadcast((2, 3, 1000)).unwrap();
        let got = batched_matmul("f", 2, 3, 2, 1000, a3, b.view()).unwrap();
        assert_eq!(got, Array::from_elem((2, 3, 2), bf16::from_f32(750.0)));
    }

    /// Widened half-precision products on every layout (standard,
    /// transposed, reversed, an output written column by column) give the
    /// exact sum rounded once: small integers, whose `f32` sums are exact.
    #[test]
    fn widened_half_products_on_every_layout_round_the_exact_sum() {
        use half::{bf16, f16};
        let (m, k, n) = (13, 700, 21);
        let a = Array::from_shape_fn((m, k), |(i, j)| ((i * 7 + j * 3) % 5) as f32 - 2.0);
        let bt = Array::from_shape_fn((n, k), |(i, j)| ((i * 5 + j) % 3) as f32 - 1.0);
        let exact = Array2::from_shape_fn((m, n), |(i, j)| (0..k).map(|p| a[[i, p]] * bt[[j, p]]).sum::<f32>());
        let rev =
            Array2::from_shape_fn((m, n), |(i, j)| (0..k).map(|p| a[[i, k - 1 - p]] * bt[[j, k - 1 - p]]).sum::<f32>());
        fn check<T: LinalgScalar + Send + Sync + PartialEq + std::fmt::Debug>(
            a: Array2<T>,
            bt: Array2<T>,
            want: &Array2<f32>,
            want_rev: &Array2<f32>,
            round: impl Fn(f32) -> T,
        ) {
            let (m, n) = (a.nrows(), bt.nrows());
            let want = want.mapv(&round);
            assert_eq!(with(Kernel::GemmCrate, a.view(), bt.t()), want);
            assert_eq!(with(Kernel::MatrixMultiply, a.view(), bt.t().as_standard_layout().view()), want);
            let (ra, rb) = (a.slice(s![.., ..;-1]), bt.slice(s![.., ..;-1]));
            assert_eq!(with(Kernel::GemmCrate, ra, rb.t()), want_rev.mapv(&round));
            let mut out = vec![round(f32::NAN); m * n];
            let o = Out { ptr: out.as_mut_ptr(), rs: 1, cs: m as isize };
            // SAFETY: m x n elements, column by column, in `out`.
            unsafe { product_with("f", Kernel::GemmCrate, a.view(), bt.t(), o, 2, None) }.unwrap();
            assert_eq!(Array2::from_shape_fn((m, n), |(i, j)| out[i + j * m]), want);
        }
        check(a.mapv(f16::from_f32), bt.mapv(f16::from_f32), &exact, &rev, f16::from_f32);
        check(a.mapv(bf16::from_f32), bt.mapv(bf16::from_f32), &exact, &rev, bf16::from_f32);
    }

    #[test]
    fn integer_products_match_loops() {
        let a = Array::from_shape_fn((9, 6), |(i, j)| (i as i64 * 3 - j as i64) % 7);
        let b = Array::from_shape_fn((6, 40), |(i, j)| (i as i64 + 2 * j as i64) % 5 - 2);
        let want = Array2::from_shape_fn((9, 40), |(i, j)| (0..6).map(|p| a[[i, p]] * b[[p, j]]).sum::<i64>());
        assert_eq!(matmul("f", 9, 40, 6, a.view(), b.view()).unwrap(), want);
        let a3 = a.clone().into_shape_with_order((1, 9, 6)).unwrap();
        let b3 = b.clone().into_shape_with_order((1, 6, 40)).unwrap();
        assert_eq!(batched_matmul("f", 1, 9, 40, 6, a3.view(), b3.view()).unwrap().index_axis(Axis(0), 0), want);
    }

    #[test]
    fn matmul_rejects_negative_and_oversized_extents() {
        let a = Array2::<f32>::zeros((2, 2));
        assert!(matmul("f", -1, 2, 2, a.view(), a.view()).is_err());
        assert!(matmul("f", 3, 2, 2, a.view(), a.view()).is_err());
    }

    #[test]
    fn batched_matmul_matches_loops() {
        // Small batches (the gemm crate) and one large batch (matrixmultiply
        // on every thread).
        for (batch, m, n, k) in [(3, 4, 5, 2), (1, 150, 140, 130), (2, 40, 33, 50)] {
            let a = Array::from_shape_fn((batch, m, k), |(p, i, j)| ((p + i * 2 + j) % 9) as f64);
            let b = Array::from_shape_fn((batch, n, k), |(p, i, j)| (p * 3) as f64 - ((i + j) % 7) as f64);
            let bt = b.view().permuted_axes([0, 2, 1]);
            let got = batched_matmul("f", batch as i64, m as i64, n as i64, k as i64, a.view(), bt).unwrap();
            for p in 0..batch {
                let want = naive(&a.index_axis(Axis(0), p), &bt.index_axis(Axis(0), p), m, n, k);
                assert_eq!(got.index_axis(Axis(0), p), want);
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn packed_kernels_take_products_whose_rows_fill_their_tiles() {
        // Rows computed (whole panels of 12) against 9/8 of the rows
        // wanted, by hand: 13, 16 and 20 -> 24 are more; 22 -> 24 (24.75),
        // 24 -> 24, 64 -> 72 (exactly 72), 100 -> 108 and 1000 -> 1008
        // are not.
        for (m, fills) in
            [(13, false), (16, false), (20, false), (22, true), (24, true), (64, true), (100, true), (1000, true)]
        {
            assert_eq!(rows_fill_tiles(packed::Isa::Avx512, m), fills, "{m} rows");
        }
        // AVX2's tiles of 2, 4 and 6 rows: an odd count computes one more
        // row, too many below 8 rows (7 -> 8 > 7.875), not from 9 (10 <=
        // 10.125).
        for (m, fills) in [(5, false), (7, false), (8, true), (9, true), (16, true), (17, true), (1001, true)] {
            assert_eq!(rows_fill_tiles(packed::Isa::Avx2, m), fills, "{m} rows");
        }
    }

    /// The instruction sets of the packed kernels this processor has.
    #[cfg(target_arch = "x86_64")]
    fn packed_isas() -> Vec<packed::Isa> {
        [(packed::Isa::Avx512, crate::cpu::has_avx512()), (packed::Isa::Avx2, crate::cpu::has_avx2_fma())]
            .into_iter()
            .filter(|i| i.1)
            .map(|i| i.0)
            .collect()
    }

    /// Products of several `KC` blocks on two and three threads (every
    /// block of the right operand packed first, then a row block per task
    /// through all of them) give the bits of one thread (block by block),
    /// with and without a scale, a transposed right operand included.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_packed_kernels_give_one_threads_bits_on_several_threads_and_on_either_isa() {
        // (200 x 600 and 40 x 2000 outputs: two row blocks or one, the
        // threads splitting the panels; 700 x 400: many row blocks, not
        // many more rows than columns, the threads splitting the panels;
        // 1300 x 100: many more rows, row blocks split, joined per block
        // of the sum.)
        for (m, k, n) in [
            (64, 4096, 64),
            (13, 257, 33),
            (97, 600, 131),
            (36, 1031, 512),
            (300, 513, 67),
            (200, 300, 600),
            (40, 520, 2000),
            (700, 300, 400),
            (1300, 260, 100),
        ] {
            let a = Array::from_shape_fn((m, k), |(i, j)| ((i * 7 + j * 3) % 11) as f32 * 0.37 - 1.3);
            let b = Array::from_shape_fn((k, n), |(i, j)| ((i * 5 + j) % 13) as f32 * 0.29 - 1.7);
            let bt = b.t().to_owned();
            let product = Array2::from_shape_fn((m, n), |(i, j)| {
                (0..k).map(|p| a[[i, p]] as f64 * b[[p, j]] as f64).sum::<f64>()
            });
            for scale in [None, Some(0.125f32), Some(-3.3)] {
                for bv in [b.view(), bt.t()] {
                    let run = |isa: packed::Isa, threads: usize| {
                        let mut out = Array2::<f32>::from_elem((m, n), f32::NAN);
                        let c = packed::Mat { ptr: out.as_mut_ptr(), rs: n as isize, cs: 1 };
                        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
                        // SAFETY: the processor has `isa`; views of their
                        // extents; `out` holds the m x n elements.
                        pool.install(|| unsafe {
                            packed::sgemm(isa, m, k, n, own(a.view()), own(bv), c, threads, scale)
                        });
                        out
                    };
                    let mut first: Option<Array2<f32>> = None;
                    for isa in packed_isas() {
                        let one = run(isa, 1);
                        let want = product.mapv(|v| v * scale.unwrap_or(1.0) as f64);
                        for (g, w) in one.iter().zip(want.iter()) {
                            assert!((*g as f64 - w).abs() <= 1e-3 * (1.0 + w.abs()), "{m}x{k}x{n}: {g} against {w}");
                        }
                        for threads in [2, 3] {
                            let got = run(isa, threads);
                            assert!(
                                got.iter().zip(one.iter()).all(|(g, o)| g.to_bits() == o.to_bits()),
                                "{isa:?} {m}x{k}x{n} on {threads} threads, scale {scale:?}"
                            );
                        }
                        // Both instruction sets, where the processor has
                        // both: the same bits.
                        if let Some(first) = &first {
                            assert!(
                                first.iter().zip(one.iter()).all(|(f, o)| f.to_bits() == o.to_bits()),
                                "{isa:?} {m}x{k}x{n} against AVX-512, scale {scale:?}"
                            );
                        }
                        first.get_or_insert(one);
                    }
                }
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_packed_kernels_match_loops_on_odd_shapes_and_layouts() {
        // Tiles cut at every edge, sums of one to several `KC` blocks, row
        // blocks on 1 to 3 threads; operands row-major, transposed and
        // reversed; the output row-major and transposed. Last panels of
        // every size class (`packed_tile`: 1 to 4, 5 to 8, 9 to 12 rows
        // with AVX-512, 1 to 2, 3 to 4, 5 to 6 with AVX2; 256 rows end in a
        // panel of 4), on every instruction set the processor has.
        let shapes = [
            (1, 1, 1),
            (7, 3, 5),
            (13, 257, 33),
            (12, 256, 32),
            (97, 600, 131),
            (300, 513, 67),
            (16, 40, 35),
            (20, 9, 33),
            (22, 70, 64),
            (5, 64, 40),
            (256, 64, 256),
            (150, 70, 700),
        ];
        for threads in 1..=3 {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            for (m, k, n) in shapes {
                let a = Array::from_shape_fn((m, k), |(i, j)| ((i * 7 + j * 3) % 11) as f32 * 0.25 - 1.0);
                let bt = Array::from_shape_fn((n, k), |(i, j)| ((i * 5 + j) % 13) as f32 * 0.5 - 3.0);
                let want = Array2::from_shape_fn((m, n), |(i, j)| {
                    (0..k).map(|p| a[[i, p]] as f64 * bt[[j, p]] as f64).sum::<f64>()
                });
                let mut ar = a.clone();
                ar.invert_axis(Axis(1));
                let (acm, b_rows) = (a.t().to_owned(), bt.t().to_owned());
                let layouts = [(a.view(), bt.t()), (acm.t(), b_rows.view())];
                for ((av, bv), transposed, isa) in layouts
                    .into_iter()
                    .flat_map(|l| [false, true].map(|t| (l, t)))
                    .flat_map(|(l, t)| packed_isas().into_iter().map(move |isa| (l, t, isa)))
                {
                    {
                        let mut out = Array2::<f32>::from_elem(if transposed { (n, m) } else { (m, n) }, f32::NAN);
                        let (rs, cs) = if transposed { (1, m as isize) } else { (n as isize, 1) };
                        let c = packed::Mat { ptr: out.as_mut_ptr(), rs, cs };
                        // SAFETY: the processor has `isa`; views of their
                        // extents; `out` holds the m x n elements these
                        // strides address.
                        pool.install(|| unsafe { packed::sgemm(isa, m, k, n, own(av), own(bv), c, threads, None) });
                        let got = if transposed { out.t().to_owned() } else { out };
                        for (g, w) in got.iter().zip(want.iter()) {
                            assert!((*g as f64 - w).abs() <= 1e-4 * (1.0 + w.abs()), "{m}x{k}x{n}: {g} against {w}");
                        }
                    }
                }
                // A reversed left operand, through the dispatch.
                let got = pool.install(|| with(Kernel::Packed, ar.slice(s![.., ..;-1]), bt.t()));
                for (g, w) in got.iter().zip(want.iter()) {
                    assert!((*g as f64 - w).abs() <= 1e-4 * (1.0 + w.abs()), "reversed {m}x{k}x{n}");
                }
            }
        }
    }

    #[test]
    fn products_of_a_few_rows_match_loops() {
        // 1 to 12 rows through the dispatch (8 to 12 to `packed::skinny`
        // where the processor has AVX-512F, others to the `gemm` crate) and
        // through `packed::skinny` directly (up to a tile's rows);
        // columns cut inside a panel, a right operand of rows with
        // padding, on 1 to 3 threads.
        for threads in 1..=3 {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            for (m, k, n) in [(1, 1, 32), (1, 1024, 1024), (4, 37, 67), (8, 300, 257), (12, 1, 45), (7, 513, 33)] {
                let a = Array::from_shape_fn((m, k), |(i, j)| ((i * 7 + j * 3) % 11) as f32 * 0.25 - 1.0);
                let wide = Array::from_shape_fn((k, n + 3), |(i, j)| ((i * 5 + j) % 13) as f32 * 0.5 - 3.0);
                let b = wide.slice(s![.., ..n]);
                let want = naive(&a.mapv(f64::from).view(), &b.mapv(f64::from).view(), m, n, k);
                let got = pool.install(|| with(Kernel::Packed, a.view(), b));
                let via = pool.install(|| matmul("f", m as i64, n as i64, k as i64, a.view(), b)).unwrap();
                let mut direct = Array2::<f32>::from_elem((m, n), f32::NAN);
                #[cfg(target_arch = "x86_64")]
                if let Some(isa) = packed::Isa::detected().filter(|isa| m <= isa.mr()) {
                    let c = packed::Mat { ptr: direct.as_mut_ptr(), rs: n as isize, cs: 1 };
                    // SAFETY: the processor has `isa`; m <= MR, `b` has unit
                    // column stride; `direct` is m x n, row-major.
                    pool.install(|| unsafe { packed::skinny(isa, m, k, n, own(a.view()), own(b), c, threads, None) });
                } else {
                    direct.assign(&via);
                }
                #[cfg(not(target_arch = "x86_64"))]
                direct.assign(&via);
                for got in [&got, &via, &direct] {
                    for (g, w) in got.iter().zip(want.iter()) {
                        assert!((*g as f64 - w).abs() <= 1e-4 * (1.0 + w.abs()), "{m}x{k}x{n}: {g} against {w}");
                    }
                }
            }
        }
    }

    #[test]
    fn products_of_a_few_rows_by_columns_match_loops() {
        // 1 to 15 rows times a matrix stored by columns (`b = w^T`, `w`'s
        // rows padded), through the dispatch and through `dots` directly:
        // sums of one term, of a few, of whole and cut steps of sixteen;
        // column blocks cut at every edge; the output row-major and
        // transposed; with and without a scale (the unscaled bits times
        // it); on 1 to 3 threads.
        let shapes =
            [(1, 1, 1), (1, 17, 9), (2, 16, 8), (3, 7, 33), (4, 300, 67), (5, 1031, 7), (8, 33, 40), (15, 64, 5)];
        for threads in 1..=3 {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            for (m, k, n) in shapes {
                let a = Array::from_shape_fn((m, k), |(i, p)| ((i * 7 + p * 3) % 11) as f32 * 0.25 - 1.0);
                let w = Array::from_shape_fn((n, k + 3), |(j, p)| ((j * 5 + p) % 13) as f32 * 0.5 - 3.0);
                let b = w.slice(s![.., ..k]).reversed_axes();
                let want = naive(&a.mapv(f64::from).view(), &b.mapv(f64::from).view(), m, n, k);
                let close = |got: &Array2<f32>, scale: f64, what: &str| {
                    for ((i, j), g) in got.indexed_iter() {
                        let w = want[[i, j]] * scale;
                        assert!((*g as f64 - w).abs() <= 1e-4 * (1.0 + w.abs()), "{what} {m}x{k}x{n}: {g} against {w}");
                    }
                };
                close(&pool.install(|| with(Kernel::Packed, a.view(), b)), 1.0, "dispatch");
                // Both instruction sets of `dots` the processor has.
                #[cfg(target_arch = "x86_64")]
                for isa in packed_isas() {
                    let run = |transposed: bool, scale: Option<f32>| {
                        out_in_layout(m, n, transposed, |c| {
                            // SAFETY: the processor has `isa`; 1 <= m <=
                            // MAX_ROWS, k > 0, rows of `a` and columns of
                            // `b` contiguous; `c` addresses m x n elements.
                            pool.install(|| unsafe {
                                dots::dots(isa, m, k, n, own(a.view()), own(b), c, threads, scale)
                            })
                        })
                    };
                    for transposed in [false, true] {
                        let plain = run(transposed, None);
                        close(&plain, 1.0, &format!("dots {isa:?}"));
                        let scaled = run(transposed, Some(-0.3));
                        close(&scaled, -0.3f32 as f64, &format!("scaled dots {isa:?}"));
                        for (g, p) in scaled.iter().zip(plain.iter()) {
                            assert_eq!(g.to_bits(), (p * -0.3f32).to_bits());
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn products_of_a_few_rows_by_rows_are_chains_of_fused_multiply_adds() {
        // 1 to 7, 13 and 15 rows times a matrix stored by rows (`b` a slice
        // of a wider one), through the dispatch where it takes them and
        // through `by_rows` directly, in both instruction sets the
        // processor has: each output is the chain `fma(a[i, p], b[p, j],
        // .)` over p in order from zero, to the bit (a scalar loop in
        // `f32`), and close to the `f64` loop;
        // columns cut at every edge of a block (1 to 16 lanes, whole
        // blocks of 128); `a` read with a column stride; the output
        // row-major and transposed; with a scale (the chain's bits times
        // it); on 1 to 3 threads.
        let shapes = [
            (1, 1, 1),
            (1, 17, 9),
            (2, 16, 33),
            (3, 7, 64),
            (4, 300, 67),
            (5, 1031, 7),
            (6, 33, 129),
            (7, 64, 300),
            (1, 1024, 1024),
            (2, 129, 257),
            (13, 70, 200),
            (15, 300, 33),
        ];
        for threads in 1..=3 {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            for (m, k, n) in shapes {
                let wide = Array::from_shape_fn((m, 2 * k), |(i, p)| ((i * 7 + p * 3) % 11) as f32 * 0.37 - 1.9);
                let a = wide.slice(s![.., ..;2]);
                let whole = Array::from_shape_fn((k, n + 5), |(p, j)| ((j * 5 + p * 3) % 13) as f32 * 0.61 - 3.7);
                let b = whole.slice(s![.., 2..n + 2]);
                let chain = Array2::from_shape_fn((m, n), |(i, j)| {
                    (0..k).fold(0.0f32, |acc, p| a[[i, p]].mul_add(b[[p, j]], acc))
                });
                let want = naive(&a.mapv(f64::from).view(), &b.mapv(f64::from).view(), m, n, k);
                let check = |got: &Array2<f32>, scale: Option<f32>, what: &str| {
                    for ((i, j), g) in got.indexed_iter() {
                        let bits = scale.map_or(chain[[i, j]], |s| chain[[i, j]] * s);
                        assert_eq!(g.to_bits(), bits.to_bits(), "{what} {m}x{k}x{n} at ({i}, {j})");
                        let w = want[[i, j]] * scale.map_or(1.0, f64::from);
                        assert!((*g as f64 - w).abs() <= 1e-4 * (1.0 + w.abs()), "{what} {m}x{k}x{n}: {g} against {w}");
                    }
                };
                #[cfg(target_arch = "x86_64")]
                if n >= SKINNY_COLS && packed::Isa::detected().is_some_and(|isa| by_rows_takes(isa, m)) {
                    check(&pool.install(|| with(Kernel::Packed, a, b)), None, "dispatch");
                }
                #[cfg(target_arch = "x86_64")]
                for isa in packed_isas() {
                    let run = |transposed: bool, scale: Option<f32>| {
                        out_in_layout(m, n, transposed, |c| {
                            // SAFETY: the processor has `isa`; m >= 1, k > 0,
                            // `b` has unit column stride; `c` addresses m x n
                            // elements.
                            pool.install(|| unsafe { dots::by_rows(isa, m, k, n, own(a), own(b), c, threads, scale) })
                        })
                    };
                    for transposed in [false, true] {
                        check(&run(transposed, None), None, &format!("by_rows {isa:?}"));
                        check(&run(transposed, Some(-0.3)), Some(-0.3), &format!("scaled by_rows {isa:?}"));
                    }
                }
            }
        }
    }

    #[test]
    fn batches_split_into_blocks_of_rows_match_loops() {
        // Batches that do not divide among the threads, each product large
        // enough to split (`batch_blocks`), a shared left operand among
        // them, on 1 to 3 threads; rows that do not divide into the blocks.
        assert_eq!(batch_blocks(3, 2, 101, 350, 400), 2);
        assert_eq!(batch_blocks(4, 3, 101, 350, 400), 3);
        assert_eq!(batch_blocks(4, 2, 101, 350, 400), 1);
        assert_eq!(batch_blocks(3, 2, 40, 550, 600), 1);
        assert_eq!(batch_blocks(3, 2, 101, 150, 200), 1);
        assert_eq!(batch_blocks(3, 2, 8, 15, 20), 1);
        for threads in 1..=3 {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            for (batch, m, n, k) in [(3, 101, 350, 400), (2, 67, 431, 441), (5, 97, 267, 503)] {
                let a = Array::from_shape_fn((batch, m, k), |(p, i, j)| ((p + i * 2 + j) % 9) as f64 - 4.0);
                let b = Array::from_shape_fn((batch, n, k), |(p, i, j)| (p * 3) as f64 - ((i + j) % 7) as f64);
                let bt = b.view().permuted_axes([0, 2, 1]);
                let got = pool
                    .install(|| batched_matmul("f", batch as i64, m as i64, n as i64, k as i64, a.view(), bt))
                    .unwrap();
                let shared = a.index_axis(Axis(0), 0);
                let got_shared = pool
                    .install(|| batched_matmul("f", batch as i64, m as i64, n as i64, k as i64, shared, bt))
                    .unwrap();
                for p in 0..batch {
                    let bp = bt.index_axis(Axis(0), p);
                    assert_eq!(got.index_axis(Axis(0), p), naive(&a.index_axis(Axis(0), p), &bp, m, n, k));
                    assert_eq!(got_shared.index_axis(Axis(0), p), naive(&shared, &bp, m, n, k));
                }
            }
        }
    }

    #[test]
    fn a_shared_operand_serves_every_batch() {
        // A transposed kernel shared by 3 batches of columns, and a shared
        // right operand; batches are checked against loops one by one.
        let (batch, m, n, k) = (3, 20, 45, 7);
        let kt = Array::from_shape_fn((k, m), |(i, j)| ((i * 5 + j) % 11) as f64 - 4.0);
        let cols = Array::from_shape_fn((batch, k, n), |(p, i, j)| ((p * 7 + i * 3 + j) % 13) as f64 * 0.5);
        let got = batched_matmul("f", batch as i64, m as i64, n as i64, k as i64, kt.t(), cols.view()).unwrap();
        for p in 0..batch {
            assert_eq!(got.index_axis(Axis(0), p), naive(&kt.t(), &cols.index_axis(Axis(0), p), m, n, k));
        }
        let rows = Array::from_shape_fn((batch, m, k), |(p, i, j)| ((p + i * 2 + j) % 9) as f64);
        let got = batched_matmul("f", batch as i64, m as i64, m as i64, k as i64, rows.view(), kt.view()).unwrap();
        for p in 0..batch {
            assert_eq!(got.index_axis(Axis(0), p), naive(&rows.index_axis(Axis(0), p), &kt.view(), m, m, k));
        }
        assert!(batched_matmul("f", 4, m as i64, n as i64, k as i64, kt.t(), cols.view()).is_err());
    }

    /// `kernel`'s product of `a` and `b` on `threads` threads, times
    /// `scale` when there is one, written with a transposed output when
    /// `transposed`.
    fn scaled_with<T: LinalgScalar + Send + Sync>(
        kernel: Kernel,
        a: ArrayView2<'_, T>,
        b: ArrayView2<'_, T>,
        threads: usize,
        scale: Option<T>,
        transposed: bool,
    ) -> Array2<T> {
        let (m, n) = (a.nrows(), b.ncols());
        let mut out = Array2::<T>::zeros(if transposed { (n, m) } else { (m, n) });
        let (rs, cs) = if transposed { (1, m as isize) } else { (n as isize, 1) };
        let o = Out { ptr: out.as_mut_ptr(), rs, cs };
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        // SAFETY: a fresh array holding the m x n elements these strides address.
        pool.install(|| unsafe { product_with("f", kernel, a, b, o, threads, scale) }).unwrap();
        if transposed {
            out.reversed_axes()
        } else {
            out
        }
    }

    #[test]
    fn scaled_products_are_the_product_then_the_multiplication_in_every_bit() {
        // Every kernel, `f32` and `f64`, scales that are and are not powers
        // of two; odd shapes (1, 7, primes, tiles cut at every edge, 8 to
        // 12 rows, sums of one to three blocks of 256 terms), row-major and
        // transposed operands, a transposed output, 1 to 3 threads. Each
        // element is the same kernel's unscaled product times the scale,
        // rounded once (the same bits), and near loops in `f64`.
        fn check<T>(to: fn(T) -> f64, from: fn(f64) -> T, scales: [f64; 3])
        where
            T: LinalgScalar + Send + Sync + PartialEq + std::fmt::Debug,
        {
            let shapes = [
                (1, 1, 1),
                (7, 13, 5),
                (13, 300, 33),
                (25, 513, 64),
                (24, 64, 37),
                (12, 7, 40),
                (9, 257, 64),
                (36, 1, 97),
            ];
            for (m, k, n) in shapes {
                let a = Array::from_shape_fn((m, k), |(i, p)| from(((i * 7 + p * 3) % 23) as f64 / 7.0 - 1.5));
                let b = Array::from_shape_fn((k, n), |(p, j)| from(((p * 5 + j * 11) % 19) as f64 / 5.0 - 1.7));
                let (at, bt) = (a.t().to_owned(), b.t().to_owned());
                let layouts = [(a.view(), b.view()), (at.t(), bt.t())];
                for &kernel in KERNELS {
                    for (av, bv) in &layouts {
                        for threads in 1..=3 {
                            for scale in scales {
                                let s = from(scale);
                                let transposed = threads == 2;
                                let plain = scaled_with(kernel, av.view(), bv.view(), threads, None, transposed);
                                let got = scaled_with(kernel, av.view(), bv.view(), threads, Some(s), transposed);
                                for ((i, j), g) in got.indexed_iter() {
                                    let want = plain[[i, j]] * s;
                                    assert_eq!(*g, want, "{kernel:?} {m}x{k}x{n} scale {scale} at ({i}, {j})");
                                    let exact = (0..k).map(|p| to(a[[i, p]]) * to(b[[p, j]])).sum::<f64>() * scale;
                                    let tol = 1e-4 * (1.0 + exact.abs()) * (k as f64).sqrt();
                                    assert!(
                                        (to(*g) - exact).abs() <= tol,
                                        "{kernel:?} {m}x{k}x{n}: {g:?} against {exact}"
                                    );
                                }
                            }
                        }
                    }
                }
            }
        }
        check::<f32>(|v| v as f64, |v| v as f32, [0.125, 0.3, -3.7]);
        check::<f64>(|v| v, |v| v, [0.125, 0.3, -3.7]);
    }

    #[test]
    fn scaled_public_products_match_the_unscaled_ones_times_the_scale() {
        // `matmul_scaled` (oversized operands, cut to their corners),
        // `matmul_into_with`, `batched_matmul_scaled` (an operand every
        // batch shares, batches that split into blocks of rows), an empty
        // sum (zeros times a negative scale: negative zeros, as the
        // multiplication gives) and empty extents.
        let a = Array::from_shape_fn((9, 70), |(i, p)| ((i * 3 + p) % 11) as f32 * 0.37 - 1.0);
        let b = Array::from_shape_fn((70, 41), |(p, j)| ((p + j * 5) % 13) as f32 * 0.21 - 1.3);
        let plain = matmul("f", 7, 40, 69, a.view(), b.view()).unwrap();
        let got = matmul_scaled("f", 7, 40, 69, a.view(), b.view(), 0.3f32).unwrap();
        assert_eq!(got, plain.mapv(|v| v * 0.3));
        let mut slots = vec![std::mem::MaybeUninit::new(f32::NAN); 7 * 40];
        matmul_into_with("f", [7, 40, 69], a.view(), b.view(), Some(0.3f32), &mut slots).unwrap();
        let into: Vec<f32> = slots.iter().map(|v| unsafe { v.assume_init() }).collect();
        assert_eq!(into, got.iter().copied().collect::<Vec<_>>());
        for batch in [1, 3, 4] {
            let q = Array::from_shape_fn((batch, 131, 17), |(h, i, d)| ((h + i * 3 + d * 7) % 29) as f32 / 13.0 - 1.0);
            let kk = Array::from_shape_fn((batch, 97, 17), |(h, j, d)| ((h * 5 + j + d * 2) % 31) as f32 / 17.0 - 0.9);
            let kt = kk.view().permuted_axes([0, 2, 1]);
            let plain = batched_matmul("f", batch as i64, 131, 97, 17, q.view(), kt).unwrap();
            let got = batched_matmul_scaled("f", batch as i64, 131, 97, 17, q.view(), kt, 0.125f32).unwrap();
            assert_eq!(got, plain.mapv(|v| v * 0.125));
            let shared = kk.index_axis(Axis(0), 0).reversed_axes();
            let plain = batched_matmul("f", batch as i64, 131, 97, 17, q.view(), shared).unwrap();
            let got = batched_matmul_scaled("f", batch as i64, 131, 97, 17, q.view(), shared, 3.1f32).unwrap();
            assert_eq!(got, plain.mapv(|v| v * 3.1));
        }
        let empty_sum = matmul_scaled("f", 3, 2, 0, a.view(), b.view(), -1.5f32).unwrap();
        assert!(empty_sum.iter().all(|v| *v == 0.0 && v.is_sign_negative()));
        assert_eq!(matmul_scaled("f", 0, 5, 3, a.view(), b.view(), 0.5f32).unwrap().shape(), &[0, 5]);
        assert_eq!(matmul_scaled("f", 4, 0, 3, a.view(), b.view(), 0.5f32).unwrap().shape(), &[4, 0]);
    }
}
