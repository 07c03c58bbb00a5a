//! Compiling kernels with NVRTC, to CUBIN for one `sm_XY`.
//!
//! NVRTC runs without a GPU (it ships as a pip wheel,
//! `nvidia-cuda-nvrtc-cu12`), so [`compile_check`] lets a CI machine
//! without a GPU prove that every kernel of a binary compiles. CUBIN, not
//! PTX: PTX from an NVRTC newer than the driver fails to load.

use std::ffi::{CStr, CString};

use super::{device_error, guarded, kernels, KernelInfo};
use crate::Error;

/// Whether the NVRTC library can be loaded (`libnvrtc.so.12` on the
/// library path).
pub fn nvrtc_available() -> bool {
    // SAFETY: only tries to open the library with libloading.
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

/// Compiles every kernel of [`kernels`] with NVRTC for `arch` (`"sm_90"`),
/// without a GPU: the number of kernels compiled, or the first failure,
/// naming the kernel, its function and NVRTC's log.
pub fn compile_check(arch: &str) -> Result<usize, Error> {
    let mut all = kernels();
    all.sort_by_key(|k| (k.function, k.name));
    for k in &all {
        compile_cubin(k, arch)?;
    }
    Ok(all.len())
}

/// The CUBIN of `kernel` for `arch`.
pub(super) fn compile_cubin(kernel: &KernelInfo, arch: &str) -> Result<Vec<u8>, Error> {
    let operation = format!("compiling kernel `{}` of `{}` for `{arch}`", kernel.name, kernel.function);
    if !nvrtc_available() {
        return Err(device_error(&operation, "the NVRTC library (libnvrtc) was not found"));
    }
    let bad = |what: &str| device_error(&operation, format!("{what} contains a NUL byte"));
    let source = CString::new(kernel.source).map_err(|_| bad("the source"))?;
    let name = CString::new(format!("{}.cu", kernel.name)).map_err(|_| bad("the name"))?;
    let options = [format!("--gpu-architecture={arch}"), "--fmad=false".to_string()];
    if options.iter().any(|o| o.contains('\0')) {
        return Err(bad("the architecture"));
    }
    guarded(&operation, || {
        use cudarc::nvrtc::{result, sys};
        let prog = result::create_program(&source, Some(&name)).map_err(|e| device_error(&operation, e))?;
        // SAFETY: `prog` was just created and is destroyed once, below;
        // `source` and `name` outlive it.
        let out = unsafe {
            match result::compile_program(prog, &options) {
                Err(e) => {
                    let log = result::get_program_log(prog)
                        .map(|raw| CStr::from_ptr(raw.as_ptr()).to_string_lossy().into_owned())
                        .unwrap_or_default();
                    Err(device_error(&operation, format!("{e:?}\n{log}")))
                }
                Ok(()) => {
                    let mut size = 0usize;
                    match sys::nvrtcGetCUBINSize(prog, &mut size).result() {
                        Err(e) => Err(device_error(&operation, format!("{e:?} (is `{arch}` a real `sm_XY`?)"))),
                        Ok(()) => {
                            let mut cubin = vec![0u8; size];
                            sys::nvrtcGetCUBIN(prog, cubin.as_mut_ptr().cast())
                                .result()
                                .map(|()| cubin)
                                .map_err(|e| device_error(&operation, e))
                        }
                    }
                }
            }
        };
        // SAFETY: created above, destroyed once.
        let _ = unsafe { result::destroy_program(prog) };
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: KernelInfo = KernelInfo {
        name: "twice",
        function: "test",
        source: "extern \"C\" __global__ void twice(float* x, long long n) {\n\
                 for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;\n\
                 i += (long long)gridDim.x * blockDim.x) x[i] = 2.0f * x[i];\n}\n",
    };

    const BAD: KernelInfo = KernelInfo { name: "broken", function: "test", source: "__global__ void broken( {" };

    #[test]
    fn compiles_to_cubin_or_says_nvrtc_is_missing() {
        match compile_cubin(&GOOD, "sm_90") {
            Ok(cubin) => {
                assert!(nvrtc_available());
                // An ELF image, not PTX text.
                assert_eq!(&cubin[..4], b"\x7fELF");
            }
            Err(Error::Device { operation, message }) => {
                assert!(!nvrtc_available(), "{operation}: {message}");
                assert!(std::env::var_os("EINLANG_REQUIRE_NVRTC").is_none(), "NVRTC is required: {message}");
                assert!(message.contains("NVRTC"), "{message}");
            }
            Err(e) => panic!("unexpected error {e}"),
        }
    }

    #[test]
    fn a_failure_names_the_kernel() {
        match compile_cubin(&BAD, "sm_90") {
            Err(Error::Device { operation, message }) => {
                assert!(operation.contains("`broken`") && operation.contains("`test`"), "{operation}");
                if nvrtc_available() {
                    assert!(message.contains("error"), "{message}");
                }
            }
            other => panic!("expected a compile error, got {other:?}"),
        }
    }
}
