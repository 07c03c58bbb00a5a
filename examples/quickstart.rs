//! A first look at einlang: a handful of kernels written in Einstein
//! notation, compiled by `einlang!` while `cargo build` runs, and called
//! like ordinary Rust functions on `ndarray` arrays.
//!
//! Run with `cargo run --release --example quickstart`.

use einlang::einlang;
use einlang::ndarray::{array, Array1, Array2, Array3, Array4, Axis};

einlang! {
    use std::math::exp;

    /// Matrix product: `c[i, j] = sum over k of a[i, k] * b[k, j]`.
    pub fn matmul(a: [f32; M, K], b: [f32; K, N]) -> [f32; M, N] {
        let c[i, j] = sum[k](a[i, k] * b[k, j]);
        c
    }

    /// Row-wise softmax, shifted by the row maximum so large inputs stay finite.
    pub fn softmax(x: [f32; N, C]) -> [f32; N, C] {
        let m[n] = max[c](x[n, c]);
        let e[n, c] = exp(x[n, c] - m[n]);
        let y[n, c] = e[n, c] / sum[k](e[n, k]);
        y
    }

    /// Valid 2-D convolution with bias; the output extent is inferred from
    /// the index equations `iy = y + r`, `ix = x + s`.
    pub fn conv2d(img: [f32; C, H, W], k: [f32; O, C, KH, KW], b: [f32; O]) -> [f32; O, H - KH + 1, W - KW + 1] {
        let out[o, y, x] = sum[c, r, s](img[c, iy, ix] * k[o, c, r, s]) + b[o] where iy = y + r, ix = x + s;
        out
    }

    /// 2x2 max-pool with stride 2.
    pub fn maxpool2(x: [f32; H, W]) -> [f32; (H - 2) / 2 + 1, (W - 2) / 2 + 1] {
        let p[i, j] = max[di in 0..2, dj in 0..2](x[2 * i + di, 2 * j + dj]);
        p
    }

    /// Upper triangle: a guarded definition, 0 where the guard is false.
    pub fn upper(m: [f32; N, N]) -> [f32; N, N] {
        let u[i, j] = m[i, j] where i <= j;
        u
    }

    /// Index of the largest entry of each row (the first one on ties).
    pub fn row_argmax(x: [f32; N, C]) -> [i64; N] {
        let a[i] = argmax[j](x[i, j]);
        a
    }
}

fn main() -> Result<(), einlang::Error> {
    println!("== matmul ==");
    let a = array![[1.0f32, 2.0, 3.0], [4.0, 5.0, 6.0]];
    let b = array![[1.0f32, 0.0], [0.0, 1.0], [1.0, -1.0]];
    let c = matmul(&a, &b)?;
    println!("a {:?} x b {:?} -> {:?}", a.shape(), b.shape(), c.shape());
    println!("{c}");
    // Any view works, including transposed (column-major) ones: (a b)^T = b^T a^T.
    let ct = matmul(b.t(), a.t())?;
    println!("b^T a^T from transposed views -> {:?}, equals (a b)^T: {}", ct.shape(), ct == c.t());

    println!("\n== softmax ==");
    let logits = array![[1.0f32, 2.0, 3.0], [1000.0, 1001.0, 1002.0], [-5.0, 0.0, 5.0]];
    let probs = softmax(&logits)?;
    println!("logits {:?} -> probabilities {:?}", logits.shape(), probs.shape());
    println!("{probs:.4}");
    println!("row sums: {:.4}", probs.sum_axis(Axis(1)));

    println!("\n== conv2d ==");
    // A 1-channel 6x6 image, dark on the left and bright on the right, and two
    // 3x3 kernels: a vertical-edge detector and a box blur.
    let img = Array3::from_shape_fn((1, 6, 6), |(_, _, x)| if x >= 3 { 1.0f32 } else { 0.0 });
    let mut kernels = Array4::<f32>::zeros((2, 1, 3, 3));
    for r in 0..3 {
        kernels[[0, 0, r, 0]] = -1.0;
        kernels[[0, 0, r, 2]] = 1.0;
        for s in 0..3 {
            kernels[[1, 0, r, s]] = 1.0 / 9.0;
        }
    }
    let bias = array![0.0f32, 0.0];
    let features = conv2d(&img, &kernels, &bias)?;
    println!("image {:?}, kernels {:?} -> features {:?}", img.shape(), kernels.shape(), features.shape());
    println!("image:\n{}", img.index_axis(Axis(0), 0));
    println!("edges:\n{:.3}", features.index_axis(Axis(0), 0));
    println!("blur:\n{:.3}", features.index_axis(Axis(0), 1));

    println!("\n== 2x2 max-pool ==");
    let x = Array2::from_shape_fn((4, 6), |(i, j)| ((i * 7 + j * 5) % 11) as f32);
    let pooled = maxpool2(&x)?;
    println!("{:?} -> {:?}", x.shape(), pooled.shape());
    println!("{x}\n->\n{pooled}");

    println!("\n== guarded definition (upper triangle) ==");
    let m = Array2::from_shape_fn((4, 4), |(i, j)| (4 * i + j + 1) as f32);
    let u = upper(&m)?;
    println!("{:?} -> {:?}", m.shape(), u.shape());
    println!("{u}");

    println!("\n== argmax per row ==");
    let scores = array![[0.1f32, 0.7, 0.2], [0.5, 0.5, 0.0], [-3.0, -1.0, -2.0]];
    let best: Array1<i64> = row_argmax(&scores)?;
    println!("scores {:?} -> {:?}: {best}", scores.shape(), best.shape());

    println!("\n== shape errors are values, not panics ==");
    match matmul(&a, &a) {
        Ok(c) => println!("unexpected success: {c}"),
        Err(e) => println!("matmul(a, a): {e}"),
    }
    Ok(())
}
