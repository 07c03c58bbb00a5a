//! Half precision on the CUDA back end (cargo feature `cuda`): device
//! functions of `f16` and `bf16` next to their CPU twins (the same source
//! without `#[device(cuda)]`).
//!
//! Without a GPU, NVRTC compiles every kernel of this binary (when
//! `libnvrtc` is on the library path, as `.ci/run` arranges: the kernels'
//! own conversions between the 16-bit formats and `f32` need no CUDA
//! header); the device comparisons skip themselves. With a GPU each device
//! function is compared with its CPU twin, within the formats' precision.
#![cfg(feature = "cuda")]

use einlang::cuda::{self, Device, Tensor};
use einlang::half::{bf16, f16};
use einlang::ndarray::{Array1, Array2};
use einlang::Error;

macro_rules! programs {
    ($($attr:tt)*) => {
        einlang::einlang! {
            use std::math::{exp, tanh};

            $($attr)*
            pub fn dense(x: [f16; B, I], w: [f16; I, O], b: [f16; O]) -> [f16; B, O] {
                let y[n, o] = max(sum[i](x[n, i] * w[i, o]) + b[o], 0);
                y
            }

            $($attr)*
            pub fn dense_bf(x: [bf16; B, I], w: [bf16; I, O]) -> [bf16; B, O] {
                let y[n, o] = tanh(sum[i](x[n, i] * w[i, o]));
                y
            }

            $($attr)*
            pub fn softmax(x: [f16; B, C]) -> [f16; B, C] {
                let e[n, c] = exp(x[n, c] - max[k](x[n, k]));
                let y[n, c] = e[n, c] / sum[k](e[n, k]);
                y
            }

            $($attr)*
            pub fn casts(x: [bf16; N], k: [i32; N]) -> ([f32; N], [f16; N], [bf16; N], [i32; N]) {
                let a[i] = x[i] as f32;
                let b[i] = x[i] as f16;
                let c[i] = k[i] as bf16 * 0.5;
                let d[i] = x[i] as i32;
                (a, b, c, d)
            }

            $($attr)*
            pub fn scale_shift(x: [f16; R, C], g: [f16; C], b: [bf16; C]) -> [f16; R, C] {
                let y[i, j] = x[i, j] * g[j] + b[j] as f16;
                y
            }

            $($attr)*
            pub fn affine_bf(x: [bf16; R, C]) -> [bf16; R, C] {
                let y[i, j] = 2.0 * x[i, j] + 1.0;
                y
            }

            $($attr)*
            pub fn total(x: [bf16; B, C]) -> [bf16; B] {
                let s[n] = sum[c](x[n, c]);
                s
            }

            $($attr)*
            pub fn grad(w: [f16; I, O], x: [f16; B, I]) -> [f16; I, O] {
                let y[n, o] = tanh(sum[i](x[n, i] * w[i, o]));
                let l = sum[n, o](y[n, o] * y[n, o]) / 2;
                @l / @w
            }
        }
    };
}

mod gpu {
    programs!(#[device(cuda)]);
}

mod cpu {
    programs!();
}

#[test]
fn nvrtc_compiles_the_half_precision_kernels() {
    let kernels = cuda::kernels();
    for f in ["dense_bf", "softmax", "casts", "total", "grad"] {
        assert!(kernels.iter().any(|k| k.function.starts_with(f)), "{f} has no kernel");
    }
    // Values are stored as 16-bit patterns and computed with in f32.
    let softmax: Vec<_> = kernels.iter().filter(|k| k.function.starts_with("softmax")).collect();
    assert!(softmax.iter().any(|k| k.source.contains("__ein_f32_to_f16(")), "softmax never rounds to f16");
    assert!(softmax.iter().any(|k| k.source.contains("__ein_f16_to_f32(")), "softmax never reads f16");
    if !cuda::nvrtc_available() {
        assert!(std::env::var_os("EINLANG_REQUIRE_NVRTC").is_none(), "libnvrtc is not on the library path");
        eprintln!("nvrtc_compiles_the_half_precision_kernels: skipped, libnvrtc is not on the library path");
        return;
    }
    let arch = Device::new(0).map(|d| d.arch().to_string()).unwrap_or_else(|_| "sm_80".to_string());
    let n = cuda::compile_check(&arch).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(n, kernels.len());
    // An architecture without bf16 instructions, the oldest that both
    // NVRTC 12 and 13 target (13 dropped Maxwell, Pascal and Volta): the
    // f16 conversions are PTX instructions every architecture has, bf16's
    // are bit operations.
    cuda::compile_check("sm_75").unwrap_or_else(|e| panic!("{e}"));
}

fn device(test: &str) -> Option<Device> {
    match Device::new(0) {
        Ok(dev) => Some(dev),
        Err(e) => {
            assert!(std::env::var_os("EINLANG_REQUIRE_GPU").is_none(), "{test}: no CUDA device ({e})");
            eprintln!("{test}: skipped, no CUDA device ({e})");
            None
        }
    }
}

fn values(n: usize, seed: u32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(2654435761).wrapping_add(1);
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            (s % 2000) as f32 / 1000.0 - 1.0
        })
        .collect()
}

fn h2(r: usize, c: usize, seed: u32) -> Array2<f16> {
    Array2::from_shape_vec((r, c), values(r * c, seed).into_iter().map(f16::from_f32).collect()).unwrap()
}

fn b2(r: usize, c: usize, seed: u32) -> Array2<bf16> {
    Array2::from_shape_vec((r, c), values(r * c, seed).into_iter().map(bf16::from_f32).collect()).unwrap()
}

/// Within `units` of the format's precision `eps` of the larger magnitude
/// (sums in another order, math functions' last bits, each result
/// rounded once on either side).
fn close(what: &str, got: &[f32], want: &[f32], eps: f32, units: f32) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= units * eps * (1.0 + w.abs()), "{what}[{i}]: {g} vs {w}");
    }
}

#[test]
fn device_matches_the_cpu_in_half_precision() -> Result<(), Error> {
    let Some(dev) = device("device_matches_the_cpu_in_half_precision") else { return Ok(()) };
    const F16_EPS: f32 = 1.0 / 1024.0;
    const BF16_EPS: f32 = 1.0 / 128.0;
    let (x, w) = (h2(33, 64, 1), h2(64, 20, 2));
    let b = Array1::from(values(20, 3).into_iter().map(f16::from_f32).collect::<Vec<_>>());
    let want = cpu::dense(&x, &w, &b)?;
    let got =
        gpu::dense(&dev, &Tensor::from_host(&dev, &x)?, &Tensor::from_host(&dev, &w)?, &Tensor::from_host(&dev, &b)?)?
            .to_host()?;
    let f = |a: &Array2<f16>| a.iter().map(|v| v.to_f32()).collect::<Vec<_>>();
    close("dense", &f(&got), &f(&want), F16_EPS, 4.0);

    let (xb, wb) = (b2(17, 300, 4), b2(300, 9, 5));
    let want = cpu::dense_bf(&xb, &wb)?;
    let got = gpu::dense_bf(&dev, &Tensor::from_host(&dev, &xb)?, &Tensor::from_host(&dev, &wb)?)?.to_host()?;
    let g = |a: &Array2<bf16>| a.iter().map(|v| v.to_f32()).collect::<Vec<_>>();
    close("dense_bf", &g(&got), &g(&want), BF16_EPS, 4.0);

    let s = h2(40, 100, 6).mapv(|v| f16::from_f32(v.to_f32() * 6.0));
    let want = cpu::softmax(&s)?;
    let got = gpu::softmax(&dev, &Tensor::from_host(&dev, &s)?)?.to_host()?;
    close("softmax", &f(&got), &f(&want), F16_EPS, 4.0);

    let t = b2(5, 4096, 7).mapv(|_| bf16::ONE);
    let got = gpu::total(&dev, &Tensor::from_host(&dev, &t)?)?.to_host()?;
    assert!(got.iter().all(|v| *v == bf16::from_f32(4096.0)), "{got:?}");

    let xs = Array1::from(values(64, 8).into_iter().map(|v| bf16::from_f32(v * 300.0)).collect::<Vec<_>>());
    let ks = Array1::from((0..64).map(|i| i * 997 - 30000).collect::<Vec<i32>>());
    let want = cpu::casts(&xs, &ks)?;
    let got = gpu::casts(&dev, &Tensor::from_host(&dev, &xs)?, &Tensor::from_host(&dev, &ks)?)?;
    assert_eq!(got.0.to_host()?, want.0);
    assert_eq!(got.1.to_host()?, want.1);
    assert_eq!(got.2.to_host()?, want.2);
    assert_eq!(got.3.to_host()?, want.3);

    // Elementwise definitions four elements a thread (eight-byte loads
    // and stores) where the last extent is a multiple of four, one
    // element a thread elsewhere; softmax rows four-wide or not.
    for (r, c) in [(8usize, 12usize), (5, 7), (3, 4096), (1, 1), (0, 4), (4, 0), (64, 36)] {
        let (x, gain) = (h2(r, c, 11), h2(1, c, 12).into_shape_with_order(c).unwrap());
        let bb = b2(1, c, 13).into_shape_with_order(c).unwrap();
        let want = cpu::scale_shift(&x, &gain, &bb)?;
        let args = (Tensor::from_host(&dev, &x)?, Tensor::from_host(&dev, &gain)?, Tensor::from_host(&dev, &bb)?);
        let got = gpu::scale_shift(&dev, &args.0, &args.1, &args.2)?.to_host()?;
        close("scale_shift", &f(&got), &f(&want), F16_EPS, 2.0);
        let xb = b2(r, c, 14);
        let got = gpu::affine_bf(&dev, &Tensor::from_host(&dev, &xb)?)?.to_host()?;
        close("affine_bf", &g(&got), &g(&cpu::affine_bf(&xb)?), BF16_EPS, 1.0);
        if r > 0 && c > 0 {
            let got = gpu::softmax(&dev, &Tensor::from_host(&dev, &x)?)?.to_host()?;
            close("softmax", &f(&got), &f(&cpu::softmax(&x)?), F16_EPS, 4.0);
        }
    }

    let (wg, xg) = (h2(12, 6, 9), h2(10, 12, 10));
    let want = cpu::grad(&wg, &xg)?;
    let got = gpu::grad(&dev, &Tensor::from_host(&dev, &wg)?, &Tensor::from_host(&dev, &xg)?)?.to_host()?;
    close("grad", &f(&got), &f(&want), F16_EPS, 8.0);
    Ok(())
}
