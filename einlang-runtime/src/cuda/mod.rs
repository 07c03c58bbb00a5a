//! The CUDA runtime of `#[device(cuda)]` functions (cargo feature `cuda`).
//!
//! - [`Device`] is one GPU: a cudarc context and its stream, a cache of the
//!   kernels compiled for it (NVRTC, CUBIN for the device's own `sm_XY`,
//!   compiled at first use) and a cuBLAS handle made at first use. Each
//!   call of a device function gets a status word in device memory that
//!   its kernels write when a checked read is out of range or an integer
//!   division fails ([`Status`]).
//! - [`Tensor`] is an array in device memory, always in standard
//!   (row-major) layout.
//! - [`kernels`] lists every kernel compiled into the binary: generated
//!   code registers each one at link time (`inventory`), so
//!   [`compile_check`] can compile all of them with NVRTC on a machine
//!   without a GPU.
//!
//! Nothing here panics on a machine without CUDA: cudarc loads the driver,
//! NVRTC and cuBLAS at run time and panics when a library is missing, so
//! every entry point first checks that the library is there and returns
//! [`Error::NoDevice`] (no driver) or [`Error::Device`] (no NVRTC), and the
//! calls into cudarc run under `catch_unwind` as a second line.
//!
//! Generated code uses the `#[doc(hidden)]` items (`Arg`, `Device::launch`,
//! `Device::gemm`, `Tensor::zeros`, ...); they are not a stable API.

mod nvrtc;

pub mod nccl;
use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::cublas::{CudaBlas, Gemm, GemmConfig, StridedBatchedConfig};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, DevicePtr, DevicePtrMut, DeviceRepr, DriverError, ValidAsZeroBits,
};
use ndarray::{Array, ArrayView, AsArray, Dimension};

pub use crate::Error;
pub use nvrtc::{compile_check, nvrtc_available};

#[doc(hidden)]
pub use inventory;

/// A kernel compiled into this binary: its name (the CUDA `__global__`
/// function), the Einlang function it belongs to, and its whole CUDA C
/// source (one translation unit, no headers needed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelInfo {
    pub name: &'static str,
    pub function: &'static str,
    pub source: &'static str,
}

inventory::collect!(KernelInfo);

/// Every kernel of every `#[device(cuda)]` function linked into this
/// binary, in no particular order.
pub fn kernels() -> Vec<KernelInfo> {
    inventory::iter::<KernelInfo>.into_iter().copied().collect()
}

/// Element types a [`Tensor`] can hold.
pub trait Elem: DeviceRepr + ValidAsZeroBits + Copy + Default + Send + Sync + 'static {}

macro_rules! elems {
    ($($t:ty),*) => { $(impl Elem for $t {})* };
}
elems!(i8, i16, i32, i64, u8, u32, u64, half::f16, half::bf16, f32, f64, bool);

/// One GPU, ready to run `#[device(cuda)]` functions. Cloning is cheap (the
/// clones share the context, the stream and the compiled kernels).
#[derive(Clone)]
pub struct Device {
    inner: Arc<Inner>,
}

struct Inner {
    stream: Arc<CudaStream>,
    ordinal: usize,
    /// `sm_XY`, what NVRTC compiles this device's kernels for.
    arch: String,
    /// Streaming multiprocessors, for sizing grid-stride launches.
    sms: u32,
    /// Compiled kernels, keyed by the addresses of their (static) source
    /// and name.
    functions: Mutex<HashMap<(usize, usize), CudaFunction>>,
    blas: OnceLock<Result<CudaBlas, Error>>,
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Device").field("ordinal", &self.inner.ordinal).field("arch", &self.inner.arch).finish()
    }
}

/// Runs `f`, turning a panic inside cudarc (a missing library or symbol)
/// into an error.
fn guarded<R>(operation: &str, f: impl FnOnce() -> Result<R, Error>) -> Result<R, Error> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => {
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "cudarc panicked".to_string());
            Err(device_error(operation, message))
        }
    }
}

fn device_error(operation: &str, message: impl std::fmt::Display) -> Error {
    Error::Device { operation: operation.to_string(), message: message.to_string() }
}

fn driver(operation: &str) -> impl Fn(DriverError) -> Error + '_ {
    move |e| device_error(operation, e)
}

/// Errors of the driver's initialization that mean "no usable GPU here".
fn no_device_or(operation: &str) -> impl Fn(DriverError) -> Error + '_ {
    use cudarc::driver::sys::CUresult;
    move |e| match e.0 {
        CUresult::CUDA_ERROR_NO_DEVICE
        | CUresult::CUDA_ERROR_INVALID_DEVICE
        | CUresult::CUDA_ERROR_NOT_INITIALIZED
        | CUresult::CUDA_ERROR_STUB_LIBRARY
        | CUresult::CUDA_ERROR_SYSTEM_DRIVER_MISMATCH
        | CUresult::CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE => Error::NoDevice,
        _ => device_error(operation, e),
    }
}

/// Lets the device's stream-ordered memory pool keep what tensors free
/// (by default it gives memory back to the driver at every synchronization,
/// so each call's outputs would be mapped afresh): the next call's tensors
/// reuse it, as a caching allocator would. Best effort: a driver without
/// memory pools allocates synchronously instead.
fn keep_freed_memory(ctx: &CudaContext) {
    use cudarc::driver::sys;
    if !ctx.has_async_alloc() {
        return;
    }
    let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
    let mut threshold = u64::MAX;
    // SAFETY: `pool` is written by the driver for this context's device;
    // the attribute's value is a u64, as the driver expects.
    unsafe {
        if sys::cuDeviceGetDefaultMemPool(&mut pool, ctx.cu_device()) == sys::CUresult::CUDA_SUCCESS {
            let value = (&mut threshold as *mut u64).cast::<std::ffi::c_void>();
            sys::cuMemPoolSetAttribute(pool, sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, value);
        }
    }
}

impl Device {
    /// Opens GPU number `ordinal` (0 for the first). `Err(Error::NoDevice)`
    /// when the CUDA driver library is missing, there is no GPU, or there
    /// is no GPU with that ordinal; never panics.
    pub fn new(ordinal: usize) -> Result<Device, Error> {
        // SAFETY: only tries to open the library with libloading.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return Err(Error::NoDevice);
        }
        guarded("opening the device", || {
            let count = CudaContext::device_count().map_err(no_device_or("counting devices"))?;
            if ordinal >= usize::try_from(count).unwrap_or(0) {
                return Err(Error::NoDevice);
            }
            let ctx = CudaContext::new(ordinal).map_err(no_device_or("opening the device"))?;
            // SAFETY: every allocation, copy, launch and cuBLAS call of this
            // device goes to its one stream, in program order, so the
            // per-slice events cudarc records for synchronizing several
            // streams are never needed (they cost two events per tensor).
            unsafe { ctx.disable_event_tracking() };
            keep_freed_memory(&ctx);
            let (major, minor) = ctx.compute_capability().map_err(driver("reading the compute capability"))?;
            let sms = ctx
                .attribute(cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
                .map_err(driver("reading the number of multiprocessors"))?;
            let stream = ctx.default_stream();
            Ok(Device {
                inner: Arc::new(Inner {
                    stream,
                    ordinal,
                    arch: format!("sm_{major}{minor}"),
                    sms: u32::try_from(sms).unwrap_or(1).max(1),
                    functions: Mutex::new(HashMap::new()),
                    blas: OnceLock::new(),
                }),
            })
        })
    }

    /// The device's ordinal, as given to [`Device::new`].
    pub fn ordinal(&self) -> usize {
        self.inner.ordinal
    }

    /// The architecture its kernels are compiled for (`sm_90`).
    pub fn arch(&self) -> &str {
        &self.inner.arch
    }

    /// Waits until everything queued on the device is done.
    pub fn synchronize(&self) -> Result<(), Error> {
        guarded("synchronizing", || self.inner.stream.synchronize().map_err(driver("synchronizing")))
    }

    /// The compiled `kernel`, compiled and loaded at its first use on this
    /// device.
    fn function(&self, kernel: &KernelInfo) -> Result<CudaFunction, Error> {
        let key = (kernel.source.as_ptr() as usize, kernel.name.as_ptr() as usize);
        let mut functions = self.inner.functions.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = functions.get(&key) {
            return Ok(f.clone());
        }
        let cubin = nvrtc::compile_cubin(kernel, &self.inner.arch)?;
        let operation = format!("loading kernel `{}` of `{}`", kernel.name, kernel.function);
        let module = self
            .inner
            .stream
            .context()
            .load_module(cudarc::nvrtc::Ptx::from_binary(cubin))
            .map_err(|e| device_error(&operation, e))?;
        let f = module.load_function(kernel.name).map_err(|e| device_error(&operation, e))?;
        functions.insert(key, f.clone());
        Ok(f)
    }

    /// The grid (in blocks of `block` threads) for a grid-stride loop over
    /// `points` points: enough blocks to fill the device, no more than the
    /// points need.
    #[doc(hidden)]
    pub fn grid_for(&self, points: u64, block: u32) -> u32 {
        let needed = points.div_ceil(u64::from(block.max(1)));
        let cap = u64::from(self.inner.sms) * 32;
        u32::try_from(needed.clamp(1, cap)).unwrap_or(u32::MAX)
    }

    /// [`team`] on this device, or the team `EINLANG_CUDA_TEAM` names
    /// (`thread`, `warp` or `block:N`, `N` a multiple of 32 up to 1024;
    /// read once): to time the alternatives on a device.
    #[doc(hidden)]
    pub fn team_for(&self, points: u64, longest: i64) -> Team {
        team_named().unwrap_or_else(|| team(self.inner.sms, points, longest))
    }

    /// Launches `kernel` on `grid` blocks of `block` threads with `args`.
    ///
    /// # Safety
    ///
    /// `args` must match the kernel's parameters in number and type, and
    /// every pointer among them must point to device memory of this device
    /// as large as the kernel reads and writes: the compiler that generated
    /// the kernel and its launch guarantees both.
    #[doc(hidden)]
    pub unsafe fn launch(&self, kernel: &KernelInfo, grid: u32, block: u32, args: &[Arg]) -> Result<(), Error> {
        let f = self.function(kernel)?;
        let operation = format!("launching kernel `{}` of `{}`", kernel.name, kernel.function);
        // A block larger than the usual 256 threads only as large as the
        // kernel's registers allow (whole warps; the kernels read their
        // block's size from `blockDim`).
        let block = if block > 256 {
            let most = f.max_threads_per_block().map_err(|e| device_error(&operation, e))?;
            block.min(u32::try_from(most).unwrap_or(256) / 32 * 32).max(32)
        } else {
            block
        };
        guarded(&operation, || {
            let mut values: Vec<u64> = args.iter().map(|a| a.0).collect();
            let mut params: Vec<*mut std::ffi::c_void> =
                values.iter_mut().map(|v| v as *mut u64 as *mut std::ffi::c_void).collect();
            self.inner.stream.context().bind_to_thread().map_err(|e| device_error(&operation, e))?;
            // SAFETY: the caller guarantees the parameters match; each
            // points at a u64 whose low bytes are the value (little-endian).
            unsafe {
                cudarc::driver::result::launch_kernel(
                    f.cu_function(),
                    (grid.max(1), 1, 1),
                    (block.max(1), 1, 1),
                    0,
                    self.inner.stream.cu_stream(),
                    &mut params,
                )
            }
            .map_err(|e| device_error(&operation, e))
        })
    }

    /// A zeroed status word for one call of a device function: its kernels
    /// record their first failure there (each call has its own, so calls on
    /// several threads never see each other's failures).
    #[doc(hidden)]
    ///
    /// A function whose kernels have no checked site passes `false`: it
    /// gets no word (its kernels receive a null pointer they never write)
    /// and its call returns without waiting for the device.
    pub fn status(&self, needed: bool) -> Result<Status, Error> {
        if !needed {
            return Ok(Status { dev: self.clone(), word: None });
        }
        guarded("allocating the status word", || {
            let word = self.inner.stream.alloc_zeros::<u64>(3).map_err(driver("allocating the status word"))?;
            Ok(Status { dev: self.clone(), word: Some(word) })
        })
    }

    fn blas(&self) -> Result<&CudaBlas, Error> {
        self.inner
            .blas
            .get_or_init(|| {
                guarded("creating the cuBLAS handle", || {
                    // SAFETY: only tries to open the library with libloading.
                    if !unsafe { cudarc::cublas::sys::is_culib_present() } {
                        return Err(device_error("creating the cuBLAS handle", "libcublas was not found"));
                    }
                    CudaBlas::new(self.inner.stream.clone())
                        .map_err(|e| device_error("creating the cuBLAS handle", format!("{e:?}")))
                })
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// `c[p, i, j] = sum[k](a[p, i, k] * b[p, k, j])` through cuBLAS, for
    /// operands in device memory whose elements are at
    /// `p * s.0 + i * s.1 + k * s.2` (`a`, with `a_strides`) and
    /// `p * s.0 + k * s.1 + j * s.2` (`b`); `c` is row-major
    /// `[batch, m, n]`. Row-major products are column-major products with
    /// the operands swapped: cuBLAS computes `cᵀ = bᵀ aᵀ`.
    #[doc(hidden)]
    #[allow(clippy::too_many_arguments)]
    pub fn gemm<T: GemmScalar, D: Dimension>(
        &self,
        function: &str,
        c: &mut Tensor<T, D>,
        a: &CudaSlice<T>,
        a_strides: (i64, i64, i64),
        b: &CudaSlice<T>,
        b_strides: (i64, i64, i64),
        dims: (i64, i64, i64, i64),
    ) -> Result<(), Error>
    where
        CudaBlas: Gemm<T>,
    {
        self.gemm_scaled(function, c, a, a_strides, b, b_strides, dims, T::ONE)
    }

    /// [`Device::gemm`] with each element of the product times `alpha`
    /// (cuBLAS's `alpha`, applied to each finished sum: the IR's
    /// `Gemm::scale`).
    #[doc(hidden)]
    #[allow(clippy::too_many_arguments)]
    pub fn gemm_scaled<T: GemmScalar, D: Dimension>(
        &self,
        function: &str,
        c: &mut Tensor<T, D>,
        a: &CudaSlice<T>,
        a_strides: (i64, i64, i64),
        b: &CudaSlice<T>,
        b_strides: (i64, i64, i64),
        (batch, m, n, k): (i64, i64, i64, i64),
        alpha: T,
    ) -> Result<(), Error>
    where
        CudaBlas: Gemm<T>,
    {
        let operation = format!("a cuBLAS matrix product in `{function}`");
        if batch <= 0 || m <= 0 || n <= 0 {
            return Ok(());
        }
        if k <= 0 {
            return guarded(&operation, || {
                self.inner.stream.memset_zeros(&mut c.data).map_err(|e| device_error(&operation, e))
            });
        }
        let int = |v: i64| i32::try_from(v).map_err(|_| device_error(&operation, "a matrix extent exceeds i32"));
        // cuBLAS's first operand is b: column-major `n x k` (b[k, j] at
        // (j, k)); its second is a: column-major `k x m`.
        let (op_b, ldb) = transposition(b_strides.2, b_strides.1, n, k);
        let (op_a, lda) = transposition(a_strides.2, a_strides.1, k, m);
        let gemm = GemmConfig {
            transa: op_b,
            transb: op_a,
            m: int(n)?,
            n: int(m)?,
            k: int(k)?,
            alpha,
            lda: int(ldb)?,
            ldb: int(lda)?,
            beta: T::ZERO,
            ldc: int(n)?,
        };
        let cfg = StridedBatchedConfig {
            gemm,
            batch_size: int(batch)?,
            stride_a: b_strides.0,
            stride_b: a_strides.0,
            stride_c: m * n,
        };
        guarded(&operation, || {
            let blas = self.blas()?;
            // SAFETY: the generated code passes the operands' own strides
            // and extents, which the entry checks proved consistent with
            // their lengths; `c` has `batch * m * n` elements.
            unsafe { blas.gemm_strided_batched(cfg, b, a, &mut c.data) }
                .map_err(|e| device_error(&operation, format!("{e:?}")))
        })
    }
}

/// How cuBLAS reads a column-major `rows x cols` operand whose element
/// `(r, c)` lies at `r * r_stride + c * c_stride`: as is when rows are
/// contiguous, transposed when columns are. Generated code only sends
/// operands with one unit stride.
fn transposition(r_stride: i64, c_stride: i64, rows: i64, cols: i64) -> (cudarc::cublas::sys::cublasOperation_t, i64) {
    use cudarc::cublas::sys::cublasOperation_t::{CUBLAS_OP_N, CUBLAS_OP_T};
    if r_stride == 1 && (c_stride >= rows.max(1) || cols <= 1) {
        (CUBLAS_OP_N, c_stride.max(rows.max(1)))
    } else {
        (CUBLAS_OP_T, r_stride.max(cols.max(1)))
    }
}

/// The scalars cuBLAS multiplies (`f32`, `f64`; `f16` and `bf16` through
/// `cublasGemmEx`, accumulating in `f32`).
#[doc(hidden)]
pub trait GemmScalar: Elem {
    const ONE: Self;
    const ZERO: Self;
}
impl GemmScalar for f32 {
    const ONE: f32 = 1.0;
    const ZERO: f32 = 0.0;
}
impl GemmScalar for f64 {
    const ONE: f64 = 1.0;
    const ZERO: f64 = 0.0;
}
impl GemmScalar for half::f16 {
    const ONE: half::f16 = half::f16::ONE;
    const ZERO: half::f16 = half::f16::ZERO;
}
impl GemmScalar for half::bf16 {
    const ONE: half::bf16 = half::bf16::ONE;
    const ZERO: half::bf16 = half::bf16::ZERO;
}

/// The status word of one call of a device function: `[code, value,
/// len]`, the first failure a kernel recorded (code is the failing site
/// plus one; 0 while none failed).
/// How a kernel's points map to threads (`Device::team_for`).
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Team {
    /// A thread per point.
    Thread,
    /// A warp per point, its lanes sharing the point's reductions.
    Warp,
    /// A block of this many threads per point, its threads sharing the
    /// point's reductions.
    Block(u32),
}

/// Which threads of a kernel share the reductions of each of `points`
/// points (or rows) whose longest reduction (or row) has `longest`
/// elements, on a device of `sms` multiprocessors: a thread does one of
/// under 32 alone; a warp (by shuffles, a point per warp) takes one of up
/// to 1024 when there are at least 8 points per multiprocessor; a block
/// takes the others, of 256 threads when there are at least 8 points per
/// multiprocessor (so that the blocks fill it), else of 1024 (or as many
/// as the kernel's registers allow, see `Device::launch`).
///
/// Measured on an H200 (132 multiprocessors), softmax kernels against the
/// device's copy: rows of 256, 1024 and 512 (65536, 16384 and 2048 rows)
/// ran at 0.79x, 0.66x and 0.81x with a warp per row against 0.32x, 0.51x
/// and 0.67x with a block per row; rows of 2048 and 4096 (8192 and 4096
/// rows) at 0.38x and 0.32x against 0.55x and 0.51x; 1024 and 512 rows of
/// 1024 at 0.71x and 0.65x against 0.75x and 0.82x. 1024 rows of 16384 ran
/// at 0.48x with blocks of 1024 threads and 0.34x with blocks of 256; 4096
/// rows of 4096 at 0.44x and 0.52x.
#[doc(hidden)]
pub fn team(sms: u32, points: u64, longest: i64) -> Team {
    const WARP_MIN: i64 = 32;
    const WARP_MAX: i64 = 1024;
    const POINTS_PER_SM: u64 = 8;
    let many = points >= u64::from(sms) * POINTS_PER_SM;
    if longest < WARP_MIN {
        Team::Thread
    } else if longest <= WARP_MAX && many {
        Team::Warp
    } else if many {
        Team::Block(256)
    } else {
        Team::Block(1024)
    }
}

/// The team `EINLANG_CUDA_TEAM` names, if it names one (see
/// `Device::team_for`).
fn team_named() -> Option<Team> {
    static NAMED: std::sync::OnceLock<Option<Team>> = std::sync::OnceLock::new();
    *NAMED.get_or_init(|| parse_team(&std::env::var("EINLANG_CUDA_TEAM").ok()?))
}

/// `thread`, `warp` or `block:N` (`N` a multiple of 32 in 32..=1024).
fn parse_team(text: &str) -> Option<Team> {
    match text {
        "thread" => Some(Team::Thread),
        "warp" => Some(Team::Warp),
        _ => {
            let n: u32 = text.strip_prefix("block:")?.parse().ok()?;
            (n % 32 == 0 && (32..=1024).contains(&n)).then_some(Team::Block(n))
        }
    }
}

#[doc(hidden)]
pub struct Status {
    dev: Device,
    word: Option<CudaSlice<u64>>,
}

impl Status {
    /// The word, as a kernel argument (null when there is none).
    pub fn arg(&self) -> Arg {
        match &self.word {
            Some(word) => Arg(word.device_ptr(&self.dev.inner.stream).0),
            None => Arg(0),
        }
    }

    /// After the launches of `function`: the first failure its kernels
    /// recorded (`sites[code - 1]` says what failed: a checked read or an
    /// integer operation), as the error the CPU would return.
    pub fn check(&self, function: &str, sites: &[Site]) -> Result<(), Error> {
        let Some(word) = &self.word else {
            return Ok(());
        };
        let operation = format!("running `{function}`");
        let stream = &self.dev.inner.stream;
        let words = guarded(&operation, || {
            let words = stream.clone_dtoh(word).map_err(|e| device_error(&operation, e))?;
            stream.synchronize().map_err(|e| device_error(&operation, e))?;
            Ok(words)
        })?;
        let code = words.first().copied().unwrap_or(0);
        if code == 0 {
            return Ok(());
        }
        let value = words.get(1).copied().unwrap_or(0) as i64;
        let function = function.to_string();
        Err(match usize::try_from(code - 1).ok().and_then(|i| sites.get(i)) {
            Some(Site::Index(tensor, axis)) => Error::Index {
                function,
                tensor: tensor.to_string(),
                axis: *axis,
                index: value,
                len: words.get(2).copied().unwrap_or(0) as usize,
            },
            Some(Site::DivZero) => {
                Error::Arithmetic { function, message: format!("integer division of {value} by zero") }
            }
            Some(Site::RemZero) => {
                Error::Arithmetic { function, message: format!("integer remainder of {value} by zero") }
            }
            Some(Site::NegativePower) => {
                Error::Arithmetic { function, message: format!("integer power with a negative exponent {value}") }
            }
            None => device_error(&operation, format!("a kernel reported the unknown failure {code}")),
        })
    }
}

/// What a kernel's failure code stands for (the code is the index in the
/// function's table plus one).
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub enum Site {
    /// A checked read of a tensor (its name) along an axis.
    Index(&'static str, usize),
    /// An integer division by zero (the dividend is recorded).
    DivZero,
    /// An integer remainder by zero (the dividend is recorded).
    RemZero,
    /// An integer power with a negative exponent (recorded).
    NegativePower,
}

/// The row-major strides (in elements) of a tensor of this shape.
#[doc(hidden)]
pub fn row_major_strides(shape: &[usize]) -> Vec<i64> {
    let mut strides = vec![1i64; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1].saturating_mul(i64::try_from(shape[i + 1]).unwrap_or(i64::MAX));
    }
    strides
}

/// A kernel argument: a scalar's bits (little-endian, in the low bytes) or
/// a device pointer.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct Arg(pub u64);

impl Arg {
    pub fn i8(v: i8) -> Arg {
        Arg(u64::from(v as u8))
    }
    pub fn i16(v: i16) -> Arg {
        Arg(u64::from(v as u16))
    }
    pub fn i32(v: i32) -> Arg {
        Arg(u64::from(v as u32))
    }
    pub fn i64(v: i64) -> Arg {
        Arg(v as u64)
    }
    pub fn u8(v: u8) -> Arg {
        Arg(u64::from(v))
    }
    pub fn u32(v: u32) -> Arg {
        Arg(u64::from(v))
    }
    pub fn u64(v: u64) -> Arg {
        Arg(v)
    }
    pub fn f32(v: f32) -> Arg {
        Arg(u64::from(v.to_bits()))
    }
    pub fn f64(v: f64) -> Arg {
        Arg(v.to_bits())
    }
    pub fn bool(v: bool) -> Arg {
        Arg(u64::from(v))
    }
}

/// An array in a GPU's memory, in standard (row-major) layout.
pub struct Tensor<T: Elem, D: Dimension> {
    dev: Device,
    data: CudaSlice<T>,
    dim: D,
}

impl<T: Elem, D: Dimension> std::fmt::Debug for Tensor<T, D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tensor").field("shape", &self.shape()).field("device", &self.dev).finish()
    }
}

impl<T: Elem, D: Dimension> Tensor<T, D> {
    /// Copies an array (any view or owned array, any strides) to `dev`.
    pub fn from_host<'a>(dev: &Device, a: impl AsArray<'a, T, D>) -> Result<Tensor<T, D>, Error>
    where
        T: 'a,
    {
        let view: ArrayView<'a, T, D> = a.into();
        let standard = view.as_standard_layout();
        let dim = standard.raw_dim();
        let host: &[T] = match standard.as_slice() {
            Some(s) => s,
            None => return Err(device_error("copying to the device", "a standard-layout array has no slice")),
        };
        guarded("copying to the device", || {
            // An empty tensor holds one unused element (the driver rejects
            // allocations of zero bytes).
            let data =
                if host.is_empty() { dev.inner.stream.alloc_zeros::<T>(1) } else { dev.inner.stream.clone_htod(host) }
                    .map_err(driver("copying to the device"))?;
            Ok(Tensor { dev: dev.clone(), data, dim })
        })
    }

    /// Copies the tensor back to host memory. The host array is allocated
    /// fallibly (zeroed pages from the allocator, then overwritten by the
    /// copy): `Err(Error::Alloc)` when there is no room for it.
    pub fn to_host(&self) -> Result<Array<T, D>, Error> {
        const DOING: &str = "copying from the device";
        let mut host = crate::pool::zeros(DOING, "the host copy", self.dim.clone(), T::default())?;
        guarded(DOING, || {
            let len = self.dim.size();
            if len == 0 {
                return Ok(());
            }
            let dst = host.as_slice_mut().ok_or_else(|| device_error(DOING, "a new array has no slice"))?;
            // (The device buffer holds `len.max(1)` elements.)
            self.dev.inner.stream.memcpy_dtoh(&self.data.slice(0..len), dst).map_err(driver(DOING))?;
            // Surfaces the failure of an earlier asynchronous launch too.
            self.dev.inner.stream.synchronize().map_err(driver(DOING))
        })?;
        Ok(host)
    }

    /// The extents of the tensor's axes.
    pub fn shape(&self) -> &[usize] {
        self.dim.slice()
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.dim.size()
    }

    /// Whether the tensor has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The device the tensor lives on.
    pub fn device(&self) -> &Device {
        &self.dev
    }

    /// A zero-filled tensor of shape `dim` on `dev`.
    #[doc(hidden)]
    pub fn zeros(dev: &Device, dim: D) -> Result<Tensor<T, D>, Error> {
        let len = dim.size_checked().ok_or_else(|| device_error("allocating a tensor", "its size overflows"))?;
        guarded("allocating a tensor", || {
            // An empty tensor holds one unused element (see `from_host`).
            let data = dev.inner.stream.alloc_zeros::<T>(len.max(1)).map_err(driver("allocating a tensor"))?;
            Ok(Tensor { dev: dev.clone(), data, dim })
        })
    }

    /// A tensor of shape `dim` on `dev` whose elements are not set.
    ///
    /// # Safety
    ///
    /// Every element must be written on the device before anything reads
    /// it: the generated code uses it only for outputs its kernel (one
    /// thread per element) or cuBLAS (`beta = 0`) writes whole.
    #[doc(hidden)]
    pub unsafe fn uninit(dev: &Device, dim: D) -> Result<Tensor<T, D>, Error> {
        let len = dim.size_checked().ok_or_else(|| device_error("allocating a tensor", "its size overflows"))?;
        guarded("allocating a tensor", || {
            // SAFETY: the caller writes every element before reading it.
            let data = unsafe { dev.inner.stream.alloc::<T>(len.max(1)) }.map_err(driver("allocating a tensor"))?;
            Ok(Tensor { dev: dev.clone(), data, dim })
        })
    }

    /// A copy of the tensor, on the same device.
    #[doc(hidden)]
    pub fn duplicate(&self) -> Result<Tensor<T, D>, Error> {
        guarded("copying a tensor", || {
            let data = self.dev.inner.stream.clone_dtod(&self.data).map_err(driver("copying a tensor"))?;
            Ok(Tensor { dev: self.dev.clone(), data, dim: self.dim.clone() })
        })
    }

    /// The same data with another shape of as many elements.
    #[doc(hidden)]
    pub fn reshape<E: Dimension>(self, dim: E) -> Result<Tensor<T, E>, Error> {
        if dim.size() != self.dim.size() {
            return Err(device_error("reshaping a tensor", "the element counts differ"));
        }
        Ok(Tensor { dev: self.dev, data: self.data, dim })
    }

    /// The data's device pointer, as a kernel argument.
    #[doc(hidden)]
    pub fn arg(&self) -> Arg {
        let (ptr, _sync) = self.data.device_ptr(&self.dev.inner.stream);
        Arg(ptr)
    }

    /// The data's device pointer for writing, as a kernel argument.
    #[doc(hidden)]
    pub fn arg_mut(&mut self) -> Arg {
        let (ptr, _sync) = self.data.device_ptr_mut(&self.dev.inner.stream);
        Arg(ptr)
    }

    /// The data, for cuBLAS.
    #[doc(hidden)]
    pub fn slice(&self) -> &CudaSlice<T> {
        &self.data
    }

    /// Whether `self` lives on `dev`.
    #[doc(hidden)]
    pub fn check_device(&self, function: &str, param: &str, dev: &Device) -> Result<(), Error> {
        if Arc::ptr_eq(&self.dev.inner, &dev.inner) {
            Ok(())
        } else {
            Err(device_error(
                &format!("calling `{function}`"),
                format!("tensor `{param}` lives on another device than the one passed"),
            ))
        }
    }
}

impl<T: Elem> Tensor<T, ndarray::Ix0> {
    /// The one element of a rank-0 tensor, copied to the host.
    #[doc(hidden)]
    pub fn into_scalar(self) -> Result<T, Error> {
        let a = self.to_host()?;
        Ok(a.into_scalar())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn send_sync<T: Send + Sync + 'static>() {}

    #[test]
    fn devices_and_tensors_cross_threads() {
        send_sync::<Device>();
        send_sync::<Tensor<f32, ndarray::Ix2>>();
        send_sync::<KernelInfo>();
    }

    #[test]
    fn no_device_is_an_error_not_a_panic() {
        match Device::new(0) {
            Ok(dev) => assert!(dev.arch().starts_with("sm_")),
            Err(e) => assert_eq!(e, Error::NoDevice),
        }
        assert_eq!(Device::new(usize::MAX).err(), Some(Error::NoDevice));
    }

    #[test]
    fn a_named_team_is_a_team_the_kernels_have() {
        assert_eq!(parse_team("thread"), Some(Team::Thread));
        assert_eq!(parse_team("warp"), Some(Team::Warp));
        assert_eq!(parse_team("block:128"), Some(Team::Block(128)));
        assert_eq!(parse_team("block:1024"), Some(Team::Block(1024)));
        for bad in ["block:0", "block:48", "block:2048", "block:", "blocks:64", "Warp", ""] {
            assert_eq!(parse_team(bad), None, "{bad}");
        }
    }

    #[test]
    fn teams_grow_with_the_reductions_and_shrink_with_the_points() {
        // 132 multiprocessors: warps, and blocks of 256, from 1056 points.
        assert_eq!(team(132, 1_000_000, 31), Team::Thread);
        assert_eq!(team(132, 1055, 32), Team::Block(1024));
        assert_eq!(team(132, 1056, 32), Team::Warp);
        assert_eq!(team(132, 1056, 1024), Team::Warp);
        assert_eq!(team(132, 1056, 1025), Team::Block(256));
        assert_eq!(team(132, 1055, 1 << 20), Team::Block(1024));
        assert_eq!(team(132, u64::MAX, 1024), Team::Warp);
        assert_eq!(team(132, 0, 0), Team::Thread);
    }

    #[test]
    fn row_major_strides_count_elements() {
        assert_eq!(row_major_strides(&[2, 3, 4]), vec![12, 4, 1]);
        assert_eq!(row_major_strides(&[5]), vec![1]);
        assert!(row_major_strides(&[]).is_empty());
    }

    #[test]
    fn kernel_arguments_keep_their_bits_in_the_low_bytes() {
        assert_eq!(Arg::i32(-1).0, 0xffff_ffff);
        assert_eq!(Arg::i8(-2).0, 0xfe);
        assert_eq!(Arg::f32(1.0).0, u64::from(1.0f32.to_bits()));
        assert_eq!(Arg::f64(-0.5).0, (-0.5f64).to_bits());
        assert_eq!(Arg::bool(true).0, 1);
    }

    #[test]
    fn cublas_operands_are_read_as_stored() {
        use cudarc::cublas::sys::cublasOperation_t::{CUBLAS_OP_N, CUBLAS_OP_T};
        // Rows contiguous (b [5, 7] row-major seen as 7 x 5): as is, with
        // the row stride of b as leading dimension.
        assert_eq!(transposition(1, 7, 7, 5), (CUBLAS_OP_N, 7));
        // Columns contiguous (x [4, 9] row-major read transposed, seen as
        // 9 x 4): transposed, leading dimension 9.
        assert_eq!(transposition(9, 1, 4, 9), (CUBLAS_OP_T, 9));
    }
}
