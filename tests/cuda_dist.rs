//! `#[shard(B)]` on `#[device(cuda)]` functions (cargo features `cuda`,
//! and `nccl` for worlds of more than one rank): the sharded device
//! functions against their sharded host twins on the same blocks.
//!
//! Without a GPU these tests check that the kernels of the sharded device
//! functions are registered (NVRTC compiles them in `tests/cuda.rs`'s
//! `nvrtc_compiles_every_kernel`, which checks every kernel of its own
//! binary, and here in `nvrtc_compiles_the_sharded_kernels`) and that a
//! missing libnccl is an error rather than a panic; the device
//! comparisons record that they were skipped. On a GPU with
//! `mpirun -np R` (one device per rank) they compare every rank's
//! results with the host twin's.
#![cfg(feature = "cuda")]

use einlang::cuda::{self, Device, Tensor};
use einlang::dist::World;
use einlang::ndarray::{s, Array1, Array2};
use einlang::Error;

mod gpu {
    use einlang::einlang;

    einlang! {
        /// A least-squares step: the gradient of replicated weights and the
        /// loss are all-reduced in place on the device (NCCL).
        #[shard(B)]
        #[device(cuda)]
        pub fn lsq(x: [f32; B, I], w: [f32; I], t: [f32; B]) -> ([f32; I], f32, [f32; B]) {
            let y[n] = sum[i](x[n, i] * w[i]);
            let l = sum[n]((y[n] - t[n]) * (y[n] - t[n])) / (B as f32);
            (@l / @w, l, y)
        }

        /// A same-size convolution of rows: the neighbours' rows through
        /// the host.
        #[shard(H)]
        #[device(cuda)]
        pub fn conv(x: [f32; H, W], k: [f32; 3, 3]) -> [f32; H, W] {
            let y[r in 0..H, s in 0..W] = sum[dr, ds](if iy >= 0 && iy < H && ix >= 0 && ix < W { x[iy, ix] } else { 0.0 } * k[dr, ds]) where iy = r + dr - 1, ix = s + ds - 1;
            y
        }

        /// A read at `i + 1` whose guard reaches past the last row when
        /// `e > 0`: the unsharded `Error::Index`, not a halo row.
        #[shard(N)]
        #[device(cuda)]
        pub fn fwd(v: [f32; N, K], e: i64) -> [f32; N, K] {
            let y[i in 0..N, k in 0..K] = if i + 1 < N + e { v[i + 1, k] - v[i, k] } else { 0.0 };
            y
        }

        /// The heat stencil over time: the halo rows of the step before,
        /// exchanged at every step (packed on the device, through the
        /// host).
        #[shard(N)]
        #[device(cuda)]
        pub fn heat(u0: [f32; N, M], r: f32, steps: i64) -> [f32; N, M] {
            let u[0, i, j] = u0[i, j];
            let u[t in 1..steps, i in 1..N - 1, j in 1..M - 1] = u[t - 1, i, j]
                + r * (u[t - 1, i - 1, j] + u[t - 1, i + 1, j] + u[t - 1, i, j - 1] + u[t - 1, i, j + 1] - 4.0 * u[t - 1, i, j]);
            let last[i, j] = u[steps - 1, i, j];
            last
        }

        /// `argmax`/`argmin` over the sharded axis: a scalar and one per
        /// column.
        #[shard(N)]
        #[device(cuda)]
        pub fn picks(x: [f32; N, K]) -> (i64, [i64; K]) {
            let r[n] = x[n, 0] - x[n, 1];
            let c[k] = argmin[n](x[n, k]);
            (argmax[n](r[n]), c)
        }
    }
}

mod cpu {
    use einlang::einlang;

    einlang! {
        #[shard(B)]
        pub fn lsq(x: [f32; B, I], w: [f32; I], t: [f32; B]) -> ([f32; I], f32, [f32; B]) {
            let y[n] = sum[i](x[n, i] * w[i]);
            let l = sum[n]((y[n] - t[n]) * (y[n] - t[n])) / (B as f32);
            (@l / @w, l, y)
        }

        #[shard(H)]
        pub fn conv(x: [f32; H, W], k: [f32; 3, 3]) -> [f32; H, W] {
            let y[r in 0..H, s in 0..W] = sum[dr, ds](if iy >= 0 && iy < H && ix >= 0 && ix < W { x[iy, ix] } else { 0.0 } * k[dr, ds]) where iy = r + dr - 1, ix = s + ds - 1;
            y
        }

        #[shard(N)]
        pub fn fwd(v: [f32; N, K], e: i64) -> [f32; N, K] {
            let y[i in 0..N, k in 0..K] = if i + 1 < N + e { v[i + 1, k] - v[i, k] } else { 0.0 };
            y
        }

        #[shard(N)]
        pub fn heat(u0: [f32; N, M], r: f32, steps: i64) -> [f32; N, M] {
            let u[0, i, j] = u0[i, j];
            let u[t in 1..steps, i in 1..N - 1, j in 1..M - 1] = u[t - 1, i, j]
                + r * (u[t - 1, i - 1, j] + u[t - 1, i + 1, j] + u[t - 1, i, j - 1] + u[t - 1, i, j + 1] - 4.0 * u[t - 1, i, j]);
            let last[i, j] = u[steps - 1, i, j];
            last
        }

        #[shard(N)]
        pub fn picks(x: [f32; N, K]) -> (i64, [i64; K]) {
            let r[n] = x[n, 0] - x[n, 1];
            let c[k] = argmin[n](x[n, k]);
            (argmax[n](r[n]), c)
        }
    }
}

/// Records a skipped check on stderr and in `.ci/run`'s list of skips.
fn skipped(test: &str, why: &str) {
    use std::io::Write;
    let line = format!("{test}: skipped, {why}");
    eprintln!("{line}");
    let path = concat!(env!("CARGO_TARGET_TMPDIR"), "/cuda_skips.txt");
    if let Ok(mut file) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
        let _ = writeln!(file, "{line}");
    }
}

fn data(n: usize, seed: u32) -> Vec<f32> {
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

fn close(what: &str, a: &[f32], b: &[f32], tol: f32) {
    assert_eq!(a.len(), b.len(), "{what}");
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() <= tol * (1.0 + y.abs()), "{what}: {x} vs {y}");
    }
}

#[test]
fn sharded_device_functions_register_their_kernels() {
    let kernels = cuda::kernels();
    for f in ["lsq", "conv", "fwd", "heat", "picks"] {
        assert!(kernels.iter().any(|k| k.function == f), "{f} has no kernels");
    }
}

#[test]
fn nvrtc_compiles_the_sharded_kernels() {
    if !cuda::nvrtc_available() {
        assert!(std::env::var_os("EINLANG_REQUIRE_NVRTC").is_none(), "libnvrtc is not on the library path");
        skipped("nvrtc_compiles_the_sharded_kernels", "libnvrtc is not on the library path");
        return;
    }
    let arch = Device::new(0).map(|d| d.arch().to_string()).unwrap_or_else(|_| "sm_90".to_string());
    let n = cuda::compile_check(&arch).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(n, cuda::kernels().len());
}

/// Whether libnccl loads is answered without a panic, and without it (or
/// without the feature `nccl`) the answer is an error naming what is
/// missing.
#[test]
fn a_missing_nccl_is_an_error_not_a_panic() {
    let r = std::panic::catch_unwind(|| cuda::nccl::loaded(0)).expect("no panic");
    assert_eq!(r.is_ok(), cuda::nccl::available());
    if let Err(e) = r {
        assert!(matches!(&e, Error::Device { operation, .. } if operation == "loading NCCL"), "{e}");
    }
}

/// Every rank's results against the host twin on the same blocks (a world
/// of one without `mpirun`; with NCCL and one GPU per rank otherwise).
#[test]
fn sharded_device_functions_match_the_host() -> Result<(), Error> {
    let world = World::init()?;
    let dev = match Device::new(world.rank() % 8) {
        Ok(d) => d,
        Err(e) => {
            assert!(std::env::var_os("EINLANG_REQUIRE_GPU").is_none(), "no CUDA device ({e})");
            skipped("sharded_device_functions_match_the_host", &format!("no CUDA device ({e})"));
            return Ok(());
        }
    };
    if world.size() > 1 && !cuda::nccl::available() {
        // Every rank returns the same error rather than hanging.
        let x = Array2::from_shape_vec((4, 3), data(12, 1)).unwrap();
        let (w, t) = (Array1::from(data(3, 2)), Array1::from(data(4, 3)));
        let r = gpu::lsq(
            &dev,
            &world,
            &Tensor::from_host(&dev, &x)?,
            &Tensor::from_host(&dev, &w)?,
            &Tensor::from_host(&dev, &t)?,
        );
        assert!(matches!(r, Err(Error::Device { .. })), "{r:?}");
        return Ok(());
    }
    for n in [1usize, 5, 33] {
        let rows = world.block(n);
        let x = Array2::from_shape_vec((n, 6), data(n * 6, 1 + n as u32)).unwrap();
        let (w, t) = (Array1::from(data(6, 2)), Array1::from(data(n, 3)));
        let (xb, tb) = (x.slice(s![rows.clone(), ..]), t.slice(s![rows.clone()]));
        let (g, l, y) = gpu::lsq(
            &dev,
            &world,
            &Tensor::from_host(&dev, xb)?,
            &Tensor::from_host(&dev, &w)?,
            &Tensor::from_host(&dev, tb)?,
        )?;
        let (g1, l1, y1) = cpu::lsq(&world, xb, &w, tb)?;
        close("gradient", g.to_host()?.as_slice().unwrap(), g1.as_slice().unwrap(), 1e-4);
        close("loss", &[l], &[l1], 1e-4);
        close("fitted values", y.to_host()?.as_slice().unwrap(), y1.as_slice().unwrap(), 1e-4);
        let k = Array2::from_shape_vec((3, 3), data(9, 4)).unwrap();
        let got = gpu::conv(&dev, &world, &Tensor::from_host(&dev, xb)?, &Tensor::from_host(&dev, &k)?)?;
        let want = cpu::conv(&world, xb, &k)?;
        close("convolution", got.to_host()?.as_slice().unwrap(), want.as_slice().unwrap(), 1e-4);
        // Reads past the last row: the host twin's error on every rank.
        for e in [0i64, 1] {
            let got = gpu::fwd(&dev, &world, &Tensor::from_host(&dev, xb)?, e);
            match (got, cpu::fwd(&world, xb, e)) {
                (Ok(a), Ok(b)) => assert_eq!(a.to_host()?, b, "fwd rows"),
                (
                    Err(Error::Index { tensor, axis, index, len, .. }),
                    Err(Error::Index { tensor: t, axis: a, index: i, len: l, .. }),
                ) => {
                    assert_eq!((tensor, axis, index, len), (t, a, i, l), "fwd error")
                }
                (a, b) => panic!("fwd: {a:?} where the host gives {b:?}"),
            }
        }
        // A stencil over time: the halo rows at every step (the same
        // arithmetic in the same order as the host: within rounding).
        for steps in [1i64, 2, 6] {
            let got = gpu::heat(&dev, &world, &Tensor::from_host(&dev, xb)?, 0.2, steps)?;
            let want = cpu::heat(&world, xb, 0.2, steps)?;
            close("heat", got.to_host()?.as_slice().unwrap(), want.as_slice().unwrap(), 1e-5);
        }
        // Ties in the third column (rows of equal values).
        let mut xt = x.clone();
        for (i, mut row) in xt.rows_mut().into_iter().enumerate() {
            row[2] = (i % 3) as f32;
        }
        let xtb = xt.slice(s![rows.clone(), ..]);
        let (a, c) = gpu::picks(&dev, &world, &Tensor::from_host(&dev, xtb)?)?;
        let (a1, c1) = cpu::picks(&world, xtb)?;
        assert_eq!((a, c.to_host()?), (a1, c1), "argmax/argmin");
    }
    Ok(())
}
