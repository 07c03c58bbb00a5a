//! The CUDA back end (cargo feature `cuda`): device functions next to their
//! CPU twins (the same source without `#[device(cuda)]`).
//!
//! Without a GPU these tests check that `Device::new` is `Err(NoDevice)`
//! without panicking and that NVRTC compiles every kernel of this binary
//! (when `libnvrtc` is on the library path, as `.ci/run` arranges); the
//! device tests record that they were skipped (`skipped`: stderr, and a
//! file whose lines `.ci/run` counts and prints). With a GPU every device
//! function is compared with its CPU twin.
#![cfg(feature = "cuda")]
// `cpu_twin!` walks the device source one token tree at a time.
#![recursion_limit = "1024"]

use einlang::cuda::{self, Device, Tensor};
use einlang::ndarray::{array, Array1, Array2, Axis};
use einlang::Error;

/// The device functions, and their CPU twins made from the same tokens with
/// every `#[device(cuda)]` removed (`cpu_twin!`), so the two cannot drift.
macro_rules! with_cpu_twins {
    ($($src:tt)*) => {
        mod gpu {
            use einlang::einlang;

            einlang! { $($src)* }
        }

        mod cpu {
            cpu_twin!([] $($src)*);
        }
    };
}

/// `einlang!` of the tokens after the accumulated ones, without the
/// attributes `#[device(cuda)]` at the top level (where the attribute of an
/// item is).
macro_rules! cpu_twin {
    ([$($done:tt)*]) => {
        einlang::einlang! { $($done)* }
    };
    ([$($done:tt)*] #[device(cuda)] $($rest:tt)*) => {
        cpu_twin!([$($done)*] $($rest)*);
    };
    ([$($done:tt)*] $t:tt $($rest:tt)*) => {
        cpu_twin!([$($done)* $t] $($rest)*);
    };
}

with_cpu_twins! {
    use std::ml::{attention, conv2d_padded, max_pool2d_stride2, relu, softmax};
    use std::math::{exp, min, sqrt, tanh};

    /// A dense layer with ReLU: a cuBLAS product and an epilogue kernel.
    #[device(cuda)]
    pub fn dense(x: [f32; B, I], w: [f32; I, O], b: [f32; O]) -> [f32; B, O] {
        let y[n, o] = relu(sum[i](x[n, i] * w[i, o]) + b[o]);
        y
    }

    #[device(cuda)]
    pub fn probs(x: [f32; B, C]) -> [f32; B, C] {
        softmax(x)
    }

    /// Softmax as a user writes it: the maximum and the sum inside.
    #[device(cuda)]
    pub fn natural(x: [f32; B, C]) -> [f32; B, C] {
        let e[n, c] = exp(x[n, c] - max[k](x[n, k]));
        let y[n, c] = e[n, c] / sum[k](e[n, k]);
        y
    }

    /// A row sum whose other factor reads the previous row only when
    /// there is one: never loaded ahead of its guard.
    #[device(cuda)]
    pub fn shifted(x: [f32; B, C]) -> [f32; B, C] {
        let y[n, c] = x[n, c] / (1.0 + sum[k](x[n, k] * x[n, k] * (if n > 0 { 1.0 + x[n - 1, k] } else { 1.0 })));
        y
    }

    /// Per-row reductions as definitions (a point per thread, warp or
    /// block).
    #[device(cuda)]
    pub fn stats(x: [f32; B, C]) -> ([f32; B], [f32; B]) {
        let s[n] = sum[c](x[n, c] * x[n, c]);
        let m[n] = max[c](x[n, c]) - min[c](x[n, c]);
        (s, m)
    }

    #[device(cuda)]
    pub fn norm(x: [f32; B, C]) -> [f32; B, C] {
        let mu[n] = sum[c](x[n, c]) / (C as f32);
        let d[n, c] = x[n, c] - mu[n];
        let v[n] = sum[c](d[n, c] * d[n, c]) / (C as f32);
        let y[n, c] = d[n, c] / sqrt(v[n] + 1e-5);
        y
    }

    /// Elementwise over tensors of the output's shape (a kernel over
    /// flat positions) and over a taller one (the indexed kernel).
    #[device(cuda)]
    pub fn blend(x: [f32; N, M], z: [f32; N, M], tall: [f32; N + 1, M]) -> ([f32; N, M], [f32; N, M]) {
        let y[i, j] = 2.0 * x[i, j] + z[i, j];
        let w[i in 0..N, j] = x[i, j] - tall[i, j];
        (y, w)
    }

    #[device(cuda)]
    pub fn embed(table: [f32; V, D], ids: [i64; N]) -> [f32; N, D] {
        let g[n, d] = table[ids[n], d];
        g
    }

    #[device(cuda)]
    pub fn ints(a: [i32; N], b: [i32; N]) -> [i32; N] {
        let c[i] = a[i] * b[i] + (a[i] / b[i]) - -a[i];
        c
    }

    #[device(cuda)]
    pub fn quantize(x: [f32; N]) -> [i8; N] {
        let q[i] = (x[i] * 127.0) as i8;
        q
    }

    #[device(cuda)]
    pub fn rnn(x: [f32; T, H], w: [f32; H, H]) -> [f32; T, H] {
        let h[0, j] = tanh(x[0, j]);
        let h[t in 1..T, j] = tanh(x[t, j] + sum[k](h[t - 1, k] * w[k, j]));
        h
    }

    #[device(cuda)]
    pub fn dense_grad(x: [f32; B, I], w: [f32; I, O], b: [f32; O], t: [f32; B, O]) -> ([f32; I, O], f32) {
        let y = dense(x, w, b);
        let loss = sum[n, o]((y[n, o] - t[n, o]) ** 2) / (B * O) as f32;
        (@loss / @w, loss)
    }

    #[device(cuda)]
    pub fn batched(a: [f64; P, M, K], b: [f64; P, K, N]) -> [f64; P, M, N] {
        let c[p, i, j] = sum[k](a[p, i, k] * b[p, k, j]);
        c
    }

    /// A scaled product (`Gemm::scale`): cuBLAS's `alpha`.
    #[device(cuda)]
    pub fn batched_by_4(a: [f64; P, M, K], b: [f64; P, K, N]) -> [f64; P, M, N] {
        let c[p, i, j] = sum[k](a[p, i, k] * b[p, k, j]) / 4.0;
        c
    }

    #[device(cuda)]
    pub fn conv(x: [f32; C, H, W], k: [f32; O, C, 3, 3], b: [f32; O]) -> [f32; O, H, W] {
        conv2d_padded(x, k, b, 1, 1, 1, 1)
    }

    #[device(cuda)]
    pub fn pool(x: [f32; C, H, W]) -> [f32; C, H / 2, W / 2] {
        max_pool2d_stride2(x, 2, 2)
    }

    #[device(cuda)]
    pub fn attend(q: [f32; B, T, D], k: [f32; B, T, D], v: [f32; B, T, D]) -> [f32; B, T, D] {
        attention(q, k, v, 0.125)
    }

    /// Edit distance: a 2-D dynamic program kept in a circular buffer.
    #[device(cuda)]
    pub fn distance(a: [i32; N], b: [i32; M]) -> i32 {
        let d[0, j in 0..M + 1] = j as i32;
        let d[i in 1..N + 1, 0] = i as i32;
        let d[i in 1..N + 1, j in 1..M + 1] =
            min(min(d[i - 1, j] + 1, d[i, j - 1] + 1), d[i - 1, j - 1] + (if a[i - 1] == b[j - 1] { 0 } else { 1 }));
        d[N, M]
    }

    /// The whole edit-distance table: a wavefront of anti-diagonals.
    #[device(cuda)]
    pub fn table(a: [i32; N], b: [i32; M]) -> [i32; N + 1, M + 1] {
        let d[0, j in 0..M + 1] = j as i32;
        let d[i in 1..N + 1, 0] = i as i32;
        let d[i in 1..N + 1, j in 1..M + 1] =
            min(min(d[i - 1, j] + 1, d[i, j - 1] + 1), d[i - 1, j - 1] + (if a[i - 1] == b[j - 1] { 0 } else { 1 }));
        d
    }

    /// A stencil over time whose interior (`i in 1..N - 1`) is empty for
    /// `N` of 1 or 2: the clause then runs no points, as on the host.
    #[device(cuda)]
    pub fn heat(u0: [f32; N, M], r: f32, steps: i64) -> [f32; N, M] {
        let u[0, i, j] = u0[i, j];
        let u[t in 1..steps, i in 1..N - 1, j in 1..M - 1] = u[t - 1, i, j]
            + r * (u[t - 1, i - 1, j] + u[t - 1, i + 1, j] + u[t - 1, i, j - 1] + u[t - 1, i, j + 1] - 4.0 * u[t - 1, i, j]);
        let last[i, j] = u[steps - 1, i, j];
        last
    }

    #[device(cuda)]
    pub fn mean(x: [f32; N]) -> f32 {
        assert(N > 0, "the mean of nothing");
        sum[i](x[i]) / N as f32
    }
}

/// Records that `test` skipped its check: a line on stderr, and one in
/// `SKIPS` (under the target directory), which `.ci/run` counts and prints
/// after the run, so that a test that passed by skipping is visible.
fn skipped(test: &str, why: &str) {
    use std::io::Write;
    let line = format!("{test}: skipped, {why}");
    eprintln!("{line}");
    let file = std::fs::OpenOptions::new().create(true).append(true).open(SKIPS);
    if let Ok(mut file) = file {
        let _ = writeln!(file, "{line}");
    }
}

/// Where `skipped` records skips: `.ci/run` removes it before the run.
const SKIPS: &str = concat!(env!("CARGO_TARGET_TMPDIR"), "/cuda_skips.txt");

/// The first GPU, or `None` (with a message) on a machine without one.
fn device(test: &str) -> Option<Device> {
    match Device::new(0) {
        Ok(dev) => Some(dev),
        Err(e) => {
            // The GPU run sets this, so that a device that fails to open is
            // a failure rather than a skip.
            assert!(std::env::var_os("EINLANG_REQUIRE_GPU").is_none(), "{test}: no CUDA device ({e})");
            skipped(test, &format!("no CUDA device ({e})"));
            None
        }
    }
}

fn close(a: &[f32], b: &[f32], tol: f32) {
    assert_eq!(a.len(), b.len());
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!((x - y).abs() <= tol * (1.0 + y.abs()), "element {i}: {x} vs {y}");
    }
}

/// Deterministic test data in [-1, 1).
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

fn matrix(r: usize, c: usize, seed: u32) -> Array2<f32> {
    Array2::from_shape_vec((r, c), data(r * c, seed)).expect("sizes agree")
}

#[test]
fn a_machine_without_a_gpu_gets_no_device_and_no_panic() {
    match Device::new(0) {
        Ok(dev) => println!("found {dev:?}"),
        Err(e) => assert_eq!(e, Error::NoDevice, "{e}"),
    }
    // No machine has that many GPUs.
    assert_eq!(Device::new(usize::MAX).err(), Some(Error::NoDevice));
}

#[test]
fn every_device_function_registers_its_kernels() {
    let kernels = cuda::kernels();
    // (`batched` is one cuBLAS call and has no kernel of its own.)
    for f in ["dense", "embed", "ints", "quantize", "rnn", "dense_grad", "stats"] {
        assert!(kernels.iter().any(|k| k.function == f), "{f}");
    }
    // `probs` calls the library's softmax, whose CUDA twin has the kernels.
    assert!(kernels.iter().any(|k| k.function.starts_with("softmax")));
    for k in &kernels {
        assert!(k.source.contains(&format!("void {}(", k.name)), "{} has no kernel of its name", k.name);
    }
}

#[test]
fn nvrtc_compiles_every_kernel() {
    if !cuda::nvrtc_available() {
        // CI installs NVRTC and sets this, so that a broken setup fails.
        assert!(std::env::var_os("EINLANG_REQUIRE_NVRTC").is_none(), "libnvrtc is not on the library path");
        skipped("nvrtc_compiles_every_kernel", "libnvrtc is not on the library path");
        return;
    }
    let arch = Device::new(0).map(|d| d.arch().to_string()).unwrap_or_else(|_| "sm_90".to_string());
    let n = cuda::compile_check(&arch).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(n, cuda::kernels().len());
    assert!(n > 0);
    println!("NVRTC compiled {n} kernels for {arch}");
}

#[test]
fn dense_matches_the_cpu() -> Result<(), Error> {
    let Some(dev) = device("dense_matches_the_cpu") else { return Ok(()) };
    let (x, w) = (matrix(33, 20, 1), matrix(20, 7, 2));
    let b = Array1::from(data(7, 3));
    let want = cpu::dense(&x, &w, &b)?;
    // A transposed view goes to the device in standard layout.
    let wt = w.t().to_owned();
    let (xd, wd, bd) = (Tensor::from_host(&dev, &x)?, Tensor::from_host(&dev, wt.t())?, Tensor::from_host(&dev, &b)?);
    let got = gpu::dense(&dev, &xd, &wd, &bd)?.to_host()?;
    assert_eq!(got.shape(), want.shape());
    close(got.as_slice().unwrap(), want.as_slice().unwrap(), 1e-4);
    Ok(())
}

#[test]
fn shapes_are_checked_at_entry() -> Result<(), Error> {
    let Some(dev) = device("shapes_are_checked_at_entry") else { return Ok(()) };
    let (x, w) = (Tensor::from_host(&dev, &matrix(4, 3, 1))?, Tensor::from_host(&dev, &matrix(5, 2, 2))?);
    let b = Tensor::from_host(&dev, &Array1::<f32>::zeros(2))?;
    match gpu::dense(&dev, &x, &w, &b) {
        Err(Error::Shape { param, symbol, expected, found, .. }) => {
            assert_eq!((param.as_str(), symbol.as_str(), expected, found), ("w", "I", 3, 5));
        }
        other => panic!("expected a shape error, got {other:?}"),
    }
    Ok(())
}

#[test]
fn softmax_matches_the_cpu() -> Result<(), Error> {
    let Some(dev) = device("softmax_matches_the_cpu") else { return Ok(()) };
    let x = matrix(17, 300, 4);
    let want = cpu::probs(&x)?;
    let got = gpu::probs(&dev, &Tensor::from_host(&dev, &x)?)?.to_host()?;
    close(got.as_slice().unwrap(), want.as_slice().unwrap(), 1e-5);
    Ok(())
}

#[test]
fn row_pipelines_match_the_cpu() -> Result<(), Error> {
    let Some(dev) = device("row_pipelines_match_the_cpu") else { return Ok(()) };
    // Short rows run a thread per row; rows up to 1024, when there are at
    // least 8 per multiprocessor (1056 on an H100 or H200), a warp per
    // row; others a block per row. Warps and blocks take four points per
    // step when the rows' length is a multiple of four.
    let shapes = [(33, 10), (9, 700), (3, 1), (5, 100), (2200, 300), (4, 5000), (3, 4098), (1200, 1024), (1200, 1022)];
    for (b, c) in shapes.into_iter().chain([(1200, 1025)]) {
        let x = matrix(b, c, 11 + c as u32);
        let xd = Tensor::from_host(&dev, &x)?;
        let want = cpu::natural(&x)?;
        close(gpu::natural(&dev, &xd)?.to_host()?.as_slice().unwrap(), want.as_slice().unwrap(), 1e-5);
        let want = cpu::norm(&x)?;
        close(gpu::norm(&dev, &xd)?.to_host()?.as_slice().unwrap(), want.as_slice().unwrap(), 1e-4);
        let ((s, m), (want_s, want_m)) = (gpu::stats(&dev, &xd)?, cpu::stats(&x)?);
        close(s.to_host()?.as_slice().unwrap(), want_s.as_slice().unwrap(), 1e-4);
        close(m.to_host()?.as_slice().unwrap(), want_m.as_slice().unwrap(), 1e-6);
        let want = cpu::shifted(&x)?;
        close(gpu::shifted(&dev, &xd)?.to_host()?.as_slice().unwrap(), want.as_slice().unwrap(), 1e-4);
    }
    Ok(())
}

#[test]
fn elementwise_by_flat_position_and_by_index_match_the_cpu() -> Result<(), Error> {
    let Some(dev) = device("elementwise_by_flat_position_and_by_index_match_the_cpu") else { return Ok(()) };
    // Rows of 29 by index, rows of 28 four points per thread.
    for m in [29, 28] {
        let (x, z, tall) = (matrix(37, m, 21), matrix(37, m, 22), matrix(38, m, 23));
        let (want_y, want_w) = cpu::blend(&x, &z, &tall)?;
        let (y, w) = gpu::blend(
            &dev,
            &Tensor::from_host(&dev, &x)?,
            &Tensor::from_host(&dev, &z)?,
            &Tensor::from_host(&dev, &tall)?,
        )?;
        close(y.to_host()?.as_slice().unwrap(), want_y.as_slice().unwrap(), 1e-6);
        close(w.to_host()?.as_slice().unwrap(), want_w.as_slice().unwrap(), 1e-6);
    }
    Ok(())
}

#[test]
fn gathers_match_and_bad_indices_are_errors() -> Result<(), Error> {
    let Some(dev) = device("gathers_match_and_bad_indices_are_errors") else { return Ok(()) };
    let table = matrix(10, 4, 5);
    let ids = array![3i64, 0, 9, 3];
    let want = cpu::embed(&table, &ids)?;
    let td = Tensor::from_host(&dev, &table)?;
    let got = gpu::embed(&dev, &td, &Tensor::from_host(&dev, &ids)?)?.to_host()?;
    assert_eq!(got, want);
    let bad = array![1i64, 10];
    let cpu_err = cpu::embed(&table, &bad).unwrap_err();
    let gpu_err = gpu::embed(&dev, &td, &Tensor::from_host(&dev, &bad)?).unwrap_err();
    assert_eq!(gpu_err, cpu_err);
    // The error is reported once; the device works on.
    assert!(gpu::embed(&dev, &td, &Tensor::from_host(&dev, &ids)?).is_ok());
    Ok(())
}

#[test]
fn integers_wrap_and_casts_saturate_as_on_the_cpu() -> Result<(), Error> {
    let Some(dev) = device("integers_wrap_and_casts_saturate_as_on_the_cpu") else { return Ok(()) };
    let a = array![i32::MAX, i32::MIN, 7, -9, 100_000];
    let b = array![2, -1, -2, 4, 100_000];
    let want = cpu::ints(&a, &b)?;
    let got = gpu::ints(&dev, &Tensor::from_host(&dev, &a)?, &Tensor::from_host(&dev, &b)?)?.to_host()?;
    assert_eq!(got, want);
    let zero = array![1, 0, 1, 1, 1];
    let cpu_err = cpu::ints(&a, &zero).unwrap_err();
    let gpu_err = gpu::ints(&dev, &Tensor::from_host(&dev, &a)?, &Tensor::from_host(&dev, &zero)?).unwrap_err();
    assert_eq!(gpu_err, cpu_err);
    let x = array![0.5f32, 3.0, -3.0, f32::NAN, f32::INFINITY, -0.999];
    let want = cpu::quantize(&x)?;
    let got = gpu::quantize(&dev, &Tensor::from_host(&dev, &x)?)?.to_host()?;
    assert_eq!(got, want);
    Ok(())
}

#[test]
fn an_rnn_matches_the_cpu() -> Result<(), Error> {
    let Some(dev) = device("an_rnn_matches_the_cpu") else { return Ok(()) };
    let (x, w) = (matrix(12, 16, 6), matrix(16, 16, 7) * 0.3);
    let want = cpu::rnn(&x, &w)?;
    let got = gpu::rnn(&dev, &Tensor::from_host(&dev, &x)?, &Tensor::from_host(&dev, &w)?)?.to_host()?;
    close(got.as_slice().unwrap(), want.as_slice().unwrap(), 1e-4);
    Ok(())
}

#[test]
fn a_gradient_matches_the_cpu() -> Result<(), Error> {
    let Some(dev) = device("a_gradient_matches_the_cpu") else { return Ok(()) };
    let (x, w, t) = (matrix(8, 5, 8), matrix(5, 3, 9), matrix(8, 3, 10));
    let b = Array1::from(data(3, 11));
    let (dw, loss) = cpu::dense_grad(&x, &w, &b, &t)?;
    let up = |a: &Array2<f32>| Tensor::from_host(&dev, a);
    let (gdw, gloss) = gpu::dense_grad(&dev, &up(&x)?, &up(&w)?, &Tensor::from_host(&dev, &b)?, &up(&t)?)?;
    close(gdw.to_host()?.as_slice().unwrap(), dw.as_slice().unwrap(), 1e-4);
    close(&[gloss], &[loss], 1e-5);
    Ok(())
}

#[test]
fn batched_f64_products_match_the_cpu() -> Result<(), Error> {
    let Some(dev) = device("batched_f64_products_match_the_cpu") else { return Ok(()) };
    let a = matrix(3 * 4, 5, 12).mapv(f64::from).into_shape_with_order((3, 4, 5)).expect("sizes agree");
    let b = matrix(3 * 5, 2, 13).mapv(f64::from).into_shape_with_order((3, 5, 2)).expect("sizes agree");
    let want = cpu::batched(&a, &b)?;
    // A permuted view: the device copy is in standard layout again.
    let bp = b.clone().permuted_axes([0, 2, 1]).as_standard_layout().into_owned();
    let bp = bp.view().permuted_axes([0, 2, 1]);
    let got = gpu::batched(&dev, &Tensor::from_host(&dev, &a)?, &Tensor::from_host(&dev, bp)?)?.to_host()?;
    for (x, y) in got.iter().zip(want.iter()) {
        assert!((x - y).abs() < 1e-12, "{x} vs {y}");
    }
    assert_eq!(got.len_of(Axis(0)), 3);
    let scaled = gpu::batched_by_4(&dev, &Tensor::from_host(&dev, &a)?, &Tensor::from_host(&dev, bp)?)?.to_host()?;
    for (x, y) in scaled.iter().zip(cpu::batched_by_4(&a, &b)?.iter()) {
        assert!((x - y).abs() < 1e-12, "scaled: {x} vs {y}");
    }
    Ok(())
}

fn tensor3(shape: (usize, usize, usize), seed: u32) -> einlang::ndarray::Array3<f32> {
    einlang::ndarray::Array3::from_shape_vec(shape, data(shape.0 * shape.1 * shape.2, seed)).expect("sizes agree")
}

#[test]
fn convolution_and_pooling_match_the_cpu() -> Result<(), Error> {
    let Some(dev) = device("convolution_and_pooling_match_the_cpu") else { return Ok(()) };
    let x = tensor3((3, 10, 12), 14);
    let k = einlang::ndarray::Array4::from_shape_vec((4, 3, 3, 3), data(4 * 27, 15)).expect("sizes agree");
    let b = Array1::from(data(4, 16));
    let want = cpu::conv(&x, &k, &b)?;
    let xd = Tensor::from_host(&dev, &x)?;
    let got = gpu::conv(&dev, &xd, &Tensor::from_host(&dev, &k)?, &Tensor::from_host(&dev, &b)?)?.to_host()?;
    close(got.as_slice().unwrap(), want.as_slice().unwrap(), 1e-4);
    let want = cpu::pool(&x)?;
    let got = gpu::pool(&dev, &xd)?.to_host()?;
    assert_eq!(got, want);
    Ok(())
}

#[test]
fn attention_matches_the_cpu() -> Result<(), Error> {
    let Some(dev) = device("attention_matches_the_cpu") else { return Ok(()) };
    let (q, k, v) = (tensor3((2, 9, 16), 17), tensor3((2, 9, 16), 18), tensor3((2, 9, 16), 19));
    let want = cpu::attend(&q, &k, &v)?;
    let up = |a: &einlang::ndarray::Array3<f32>| Tensor::from_host(&dev, a);
    let got = gpu::attend(&dev, &up(&q)?, &up(&k)?, &up(&v)?)?.to_host()?;
    close(got.as_slice().unwrap(), want.as_slice().unwrap(), 1e-4);
    Ok(())
}

#[test]
fn a_stencil_with_empty_clauses_matches_the_cpu() -> Result<(), Error> {
    let Some(dev) = device("a_stencil_with_empty_clauses_matches_the_cpu") else { return Ok(()) };
    for (n, m) in [(1usize, 6usize), (2, 6), (3, 1), (7, 5), (33, 9)] {
        let u0 = matrix(n, m, 11 + n as u32);
        for steps in [1i64, 2, 5] {
            let want = cpu::heat(&u0, 0.2, steps)?;
            let got = gpu::heat(&dev, &Tensor::from_host(&dev, &u0)?, 0.2, steps)?.to_host()?;
            close(got.as_slice().unwrap(), want.as_slice().unwrap(), 1e-5);
        }
    }
    Ok(())
}

#[test]
fn edit_distance_matches_the_cpu() -> Result<(), Error> {
    let Some(dev) = device("edit_distance_matches_the_cpu") else { return Ok(()) };
    let codes = |s: &str| s.chars().map(|c| c as i32).collect::<Array1<i32>>();
    for (a, b) in [("kitten", "sitting"), ("intention", "execution"), ("", "abc")] {
        let (a, b) = (codes(a), codes(b));
        let want = cpu::distance(&a, &b)?;
        let (ad, bd) = (Tensor::from_host(&dev, &a)?, Tensor::from_host(&dev, &b)?);
        assert_eq!(gpu::distance(&dev, &ad, &bd)?, want);
        assert_eq!(gpu::table(&dev, &ad, &bd)?.to_host()?, cpu::table(&a, &b)?);
    }
    Ok(())
}

#[test]
fn asserts_and_long_reductions_match_the_cpu() -> Result<(), Error> {
    let Some(dev) = device("asserts_and_long_reductions_match_the_cpu") else { return Ok(()) };
    let x = Array1::from(data(100_000, 20));
    let (want, got) = (cpu::mean(&x)?, gpu::mean(&dev, &Tensor::from_host(&dev, &x)?)?);
    assert!((want - got).abs() < 1e-4, "{got} vs {want}");
    let empty = Array1::<f32>::zeros(0);
    assert_eq!(gpu::mean(&dev, &Tensor::from_host(&dev, &empty)?).unwrap_err(), cpu::mean(&empty).unwrap_err());
    Ok(())
}
