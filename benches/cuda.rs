//! The CUDA back end against baselines on the same device, in the same run
//! (feature `cuda`):
//!
//! - matmul 1024^2 and 4096^2 (`f32`): the `#[device(cuda)]` function
//!   against one cuBLAS `sgemm` on preallocated buffers (goal: at least 0.9x);
//! - elementwise `2x + 1`, a scale and shift per column,
//!   the library's softmax, softmax written out and
//!   a layer norm written out, rows of 4096 x 4096: against a
//!   device-to-device copy of the input, the device's copy bandwidth (goal:
//!   at least 0.8x of its bytes per second); then softmax and the layer
//!   norm over the same number of elements in rows of 256 to 65536.
//!
//! - half precision: matmul 4096^2 in `f16` and `bf16` against one cuBLAS
//!   `GemmEx` call on the same buffers (tensor cores, `f32` accumulation),
//!   and `2x + 1` and softmax over 4096 x 4096 `f16` against the copy
//!   bandwidth of the same 32 MiB.
//!
//! Each result is checked against the CPU version first; every timing is
//! the median of several synchronized runs. Without a GPU it says so and
//! exits successfully.
//!
//! ```sh
//! cargo bench --features cuda --bench cuda
//! ```

use std::time::Instant;

use einlang::cuda::{Device, Tensor};
use einlang::half::{bf16, f16};
use einlang::ndarray::{Array2, Ix2};
use einlang::Error;

mod gpu {
    einlang::einlang! {
        use std::ml::softmax;
        use std::math::{exp, sqrt};

        #[device(cuda)]
        pub fn matmul(a: [f32; M, K], b: [f32; K, N]) -> [f32; M, N] {
            let c[i, j] = sum[k](a[i, k] * b[k, j]);
            c
        }

        #[device(cuda)]
        pub fn affine(x: [f32; R, C]) -> [f32; R, C] {
            let y[i, j] = 2.0 * x[i, j] + 1.0;
            y
        }

        /// Scale and shift per column: reads broadcast along the rows.
        #[device(cuda)]
        pub fn scale_shift(x: [f32; R, C], g: [f32; C], b: [f32; C]) -> [f32; R, C] {
            let y[i, j] = x[i, j] * g[j] + b[j];
            y
        }

        #[device(cuda)]
        pub fn probs(x: [f32; R, C]) -> [f32; R, C] {
            softmax(x)
        }

        #[device(cuda)]
        pub fn natural(x: [f32; R, C]) -> [f32; R, C] {
            let e[i, j] = exp(x[i, j] - max[k](x[i, k]));
            let y[i, j] = e[i, j] / sum[k](e[i, k]);
            y
        }

        #[device(cuda)]
        pub fn norm(x: [f32; R, C]) -> [f32; R, C] {
            let mu[i] = sum[j](x[i, j]) / (C as f32);
            let d[i, j] = x[i, j] - mu[i];
            let v[i] = sum[j](d[i, j] * d[i, j]) / (C as f32);
            let y[i, j] = d[i, j] / sqrt(v[i] + 1e-5);
            y
        }

        #[device(cuda)]
        pub fn matmul_h(a: [f16; M, K], b: [f16; K, N]) -> [f16; M, N] {
            let c[i, j] = sum[k](a[i, k] * b[k, j]);
            c
        }

        #[device(cuda)]
        pub fn matmul_bf(a: [bf16; M, K], b: [bf16; K, N]) -> [bf16; M, N] {
            let c[i, j] = sum[k](a[i, k] * b[k, j]);
            c
        }

        #[device(cuda)]
        pub fn affine_h(x: [f16; R, C]) -> [f16; R, C] {
            let y[i, j] = 2.0 * x[i, j] + 1.0;
            y
        }

        #[device(cuda)]
        pub fn natural_h(x: [f16; R, C]) -> [f16; R, C] {
            let e[i, j] = exp(x[i, j] - max[k](x[i, k]));
            let y[i, j] = e[i, j] / sum[k](e[i, k]);
            y
        }
    }
}

mod cpu {
    einlang::einlang! {
        use std::ml::softmax;
        use std::math::{exp, sqrt};

        pub fn affine(x: [f32; R, C]) -> [f32; R, C] {
            let y[i, j] = 2.0 * x[i, j] + 1.0;
            y
        }

        /// Scale and shift per column: reads broadcast along the rows.
        pub fn scale_shift(x: [f32; R, C], g: [f32; C], b: [f32; C]) -> [f32; R, C] {
            let y[i, j] = x[i, j] * g[j] + b[j];
            y
        }

        pub fn probs(x: [f32; R, C]) -> [f32; R, C] {
            softmax(x)
        }

        pub fn natural(x: [f32; R, C]) -> [f32; R, C] {
            let e[i, j] = exp(x[i, j] - max[k](x[i, k]));
            let y[i, j] = e[i, j] / sum[k](e[i, k]);
            y
        }

        pub fn norm(x: [f32; R, C]) -> [f32; R, C] {
            let mu[i] = sum[j](x[i, j]) / (C as f32);
            let d[i, j] = x[i, j] - mu[i];
            let v[i] = sum[j](d[i, j] * d[i, j]) / (C as f32);
            let y[i, j] = d[i, j] / sqrt(v[i] + 1e-5);
            y
        }

        pub fn natural_h(x: [f16; R, C]) -> [f16; R, C] {
            let e[i, j] = exp(x[i, j] - max[k](x[i, k]));
            let y[i, j] = e[i, j] / sum[k](e[i, k]);
            y
        }
    }
}

/// The median time in seconds of `runs` synchronized calls (after one
/// warm-up call).
fn median(dev: &Device, runs: usize, mut f: impl FnMut() -> Result<(), Error>) -> Result<f64, Error> {
    f()?;
    dev.synchronize()?;
    let mut times = Vec::new();
    for _ in 0..runs {
        let start = Instant::now();
        f()?;
        dev.synchronize()?;
        times.push(start.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

fn matrix(r: usize, c: usize) -> Array2<f32> {
    Array2::from_shape_fn((r, c), |(i, j)| ((i * 31 + j * 17) % 97) as f32 / 97.0 - 0.5)
}

fn check(name: &str, got: &Array2<f32>, want: &Array2<f32>, tol: f32) -> Result<(), Box<dyn std::error::Error>> {
    let worst = got.iter().zip(want).map(|(a, b)| (a - b).abs() / (1.0 + b.abs())).fold(0.0f32, f32::max);
    if worst > tol {
        return Err(format!("{name}: the device result differs from the CPU's by {worst}").into());
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dev = match Device::new(0) {
        Ok(dev) => dev,
        Err(e) => {
            println!("cuda bench: no GPU here ({e}); nothing to measure.");
            return Ok(());
        }
    };
    println!("device {} ({})", dev.ordinal(), dev.arch());

    for n in [1024usize, 4096] {
        let (a, b) = (matrix(n, n), matrix(n, n));
        let (ad, bd) = (Tensor::from_host(&dev, &a)?, Tensor::from_host(&dev, &b)?);
        let small = a.slice(einlang::ndarray::s![..64, ..]).dot(&b);
        let got = gpu::matmul(&dev, &ad, &bd)?.to_host()?;
        check("matmul", &got.slice(einlang::ndarray::s![..64, ..]).to_owned(), &small, 1e-3)?;
        let ours = median(&dev, 10, || gpu::matmul(&dev, &ad, &bd).map(drop))?;
        let mut c = Tensor::<f32, Ix2>::zeros(&dev, Ix2(n, n))?;
        let nn = n as i64;
        let direct = median(&dev, 10, || {
            dev.gemm("bench", &mut c, ad.slice(), (0, nn, 1), bd.slice(), (0, nn, 1), (1, nn, nn, nn))
        })?;
        let flops = 2.0 * (n as f64).powi(3);
        println!(
            "matmul {n}^2: einlang {:.3} ms ({:.0} GFLOP/s), cuBLAS sgemm {:.3} ms ({:.0} GFLOP/s): {:.2}x of cuBLAS",
            ours * 1e3,
            flops / ours / 1e9,
            direct * 1e3,
            flops / direct / 1e9,
            direct / ours
        );
    }

    let x = matrix(4096, 4096);
    let xd = Tensor::from_host(&dev, &x)?;
    let bytes = 2.0 * (x.len() * 4) as f64;
    let copy = median(&dev, 20, || xd.duplicate().map(drop))?;
    println!("copy 4096^2 f32: {:.3} ms ({:.0} GB/s read + write)", copy * 1e3, bytes / copy / 1e9);

    check("affine", &gpu::affine(&dev, &xd)?.to_host()?, &cpu::affine(&x)?, 1e-6)?;
    let t = median(&dev, 20, || gpu::affine(&dev, &xd).map(drop))?;
    println!("elementwise 2x + 1: {:.3} ms ({:.0} GB/s): {:.2}x of copy bandwidth", t * 1e3, bytes / t / 1e9, copy / t);
    let (g, b) =
        (einlang::ndarray::Array1::linspace(0.5, 1.5, 4096), einlang::ndarray::Array1::linspace(-1.0, 1.0, 4096));
    let (gd, bd) = (Tensor::from_host(&dev, &g)?, Tensor::from_host(&dev, &b)?);
    check("scale_shift", &gpu::scale_shift(&dev, &xd, &gd, &bd)?.to_host()?, &cpu::scale_shift(&x, &g, &b)?, 1e-6)?;
    let t = median(&dev, 20, || gpu::scale_shift(&dev, &xd, &gd, &bd).map(drop))?;
    println!(
        "scale and shift per column: {:.3} ms ({:.0} GB/s): {:.2}x of copy bandwidth",
        t * 1e3,
        bytes / t / 1e9,
        copy / t
    );

    check("softmax", &gpu::probs(&dev, &xd)?.to_host()?, &cpu::probs(&x)?, 1e-5)?;
    let t = median(&dev, 20, || gpu::probs(&dev, &xd).map(drop))?;
    println!(
        "softmax rows of 4096: {:.3} ms ({:.0} GB/s of input + output): {:.2}x of copy bandwidth",
        t * 1e3,
        bytes / t / 1e9,
        copy / t
    );
    for (name, gpu_f, cpu_f) in [
        ("softmax written out (max and sum inside)", gpu::natural as GpuFn, (|x| cpu::natural(x)) as CpuFn),
        ("layer norm written out", gpu::norm, |x| cpu::norm(x)),
    ] {
        check(name, &gpu_f(&dev, &xd)?.to_host()?, &cpu_f(&x)?, 1e-4)?;
        let t = median(&dev, 20, || gpu_f(&dev, &xd).map(drop))?;
        println!(
            "{name}, rows of 4096: {:.3} ms ({:.0} GB/s): {:.2}x of copy bandwidth",
            t * 1e3,
            bytes / t / 1e9,
            copy / t
        );
    }
    // The same 16 Mi elements in other row lengths: a warp per row up to
    // 1024, a block per row beyond.
    for (r, c) in [(65536, 256), (16384, 1024), (1024, 16384), (256, 65536)] {
        let x = matrix(r, c);
        let xd = Tensor::from_host(&dev, &x)?;
        let copy = median(&dev, 20, || xd.duplicate().map(drop))?;
        check("softmax", &gpu::probs(&dev, &xd)?.to_host()?, &cpu::probs(&x)?, 1e-5)?;
        let soft = median(&dev, 20, || gpu::probs(&dev, &xd).map(drop))?;
        check("layer norm", &gpu::norm(&dev, &xd)?.to_host()?, &cpu::norm(&x)?, 1e-4)?;
        let norm = median(&dev, 20, || gpu::norm(&dev, &xd).map(drop))?;
        println!(
            "{r} rows of {c}: copy {:.3} ms, softmax {:.3} ms ({:.2}x of copy bandwidth), layer norm {:.3} ms ({:.2}x)",
            copy * 1e3,
            soft * 1e3,
            copy / soft,
            norm * 1e3,
            copy / norm
        );
    }
    half(&dev)
}

/// One `n x n` product in a 16-bit format `$t` (`from_f32`, `f32::from`):
/// `$ours` against one cuBLAS `GemmEx` call on the same buffers (a macro:
/// `Device::gemm` is bounded by cudarc's own traits). The reference
/// multiplies the rounded inputs in `f32`: the device sums in `f32` too, so
/// the two differ by the order of the sums and the result's one rounding to
/// 16 bits.
macro_rules! half_product {
    ($dev:expr, $name:expr, $n:expr, $t:ty, $ours:path) => {{
        let (dev, n): (&Device, usize) = ($dev, $n);
        let (a, b) = (matrix(n, n).mapv(<$t>::from_f32), matrix(n, n).mapv(<$t>::from_f32));
        let want = a.mapv(f32::from).slice(einlang::ndarray::s![..64, ..]).dot(&b.mapv(f32::from));
        let (ad, bd) = (Tensor::from_host(dev, &a)?, Tensor::from_host(dev, &b)?);
        let got = $ours(dev, &ad, &bd)?.to_host()?.mapv(f32::from);
        check(concat!("matmul ", $name), &got.slice(einlang::ndarray::s![..64, ..]).to_owned(), &want, 2e-2)?;
        let t = median(dev, 10, || $ours(dev, &ad, &bd).map(drop))?;
        let mut c = Tensor::<$t, Ix2>::zeros(dev, Ix2(n, n))?;
        let nn = n as i64;
        let direct = median(dev, 10, || {
            dev.gemm("bench", &mut c, ad.slice(), (0, nn, 1), bd.slice(), (0, nn, 1), (1, nn, nn, nn))
        })?;
        let flops = 2.0 * (n as f64).powi(3);
        println!(
            "matmul {} {n}^2: einlang {:.3} ms ({:.0} GFLOP/s), cuBLAS GemmEx {:.3} ms ({:.0} GFLOP/s): {:.2}x of cuBLAS",
            $name,
            t * 1e3,
            flops / t / 1e9,
            direct * 1e3,
            flops / direct / 1e9,
            direct / t
        );
    }};
}

/// The half-precision cases: products on tensor cores against cuBLAS's
/// own `GemmEx`, elementwise and row kernels against the copy bandwidth
/// of the 16-bit tensor.
fn half(dev: &Device) -> Result<(), Box<dyn std::error::Error>> {
    let n = 4096usize;
    half_product!(dev, "f16", n, f16, gpu::matmul_h);
    half_product!(dev, "bf16", n, bf16, gpu::matmul_bf);

    let xh = matrix(n, n).mapv(f16::from_f32);
    let xd = Tensor::from_host(dev, &xh)?;
    let bytes = 2.0 * (xh.len() * 2) as f64;
    let copy = median(dev, 20, || xd.duplicate().map(drop))?;
    println!("copy 4096^2 f16: {:.3} ms ({:.0} GB/s read + write)", copy * 1e3, bytes / copy / 1e9);
    let want = xh.mapv(|v| f16::from_f32(2.0 * f32::from(v) + 1.0)).mapv(f32::from);
    check("affine f16", &gpu::affine_h(dev, &xd)?.to_host()?.mapv(f32::from), &want, 1e-3)?;
    let t = median(dev, 20, || gpu::affine_h(dev, &xd).map(drop))?;
    println!("f16 2x + 1: {:.3} ms ({:.0} GB/s): {:.2}x of copy bandwidth", t * 1e3, bytes / t / 1e9, copy / t);
    let want = cpu::natural_h(&xh)?.mapv(f32::from);
    check("softmax f16", &gpu::natural_h(dev, &xd)?.to_host()?.mapv(f32::from), &want, 2e-3)?;
    let t = median(dev, 20, || gpu::natural_h(dev, &xd).map(drop))?;
    println!(
        "f16 softmax written out, rows of 4096: {:.3} ms ({:.0} GB/s): {:.2}x of copy bandwidth",
        t * 1e3,
        bytes / t / 1e9,
        copy / t
    );
    Ok(())
}

type GpuFn = fn(&Device, &Tensor<f32, Ix2>) -> Result<Tensor<f32, Ix2>, Error>;
type CpuFn = fn(&Array2<f32>) -> Result<Array2<f32>, Error>;
