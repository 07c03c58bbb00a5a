//! Shared by `examples/train_digits.rs` and `tests/train_digits.rs`: the
//! digits data set, deterministic initial weights, and the epoch loop around
//! the Einlang training step of `examples/ein/train_digits.ein`.

#![allow(dead_code)]

use std::error::Error;
use std::path::PathBuf;

use einlang::ndarray::{Array1, Array2, Axis};
use ndarray_npy::read_npy;

/// The network: `logits`, `batch_loss`, `sgd_step`, `accuracy`.
pub mod mlp {
    einlang::include_ein!("examples/ein/train_digits.ein");
}

/// Pixels per image (8x8), and classes.
pub const INPUTS: usize = 64;
pub const CLASSES: usize = 10;

/// Images (one row each, pixel counts scaled from 0..16 to 0..1) and labels.
pub struct Split {
    pub x: Array2<f32>,
    pub y: Array1<i64>,
}

/// The training (1500 images) and test (297 images) splits of
/// `examples/data/digits`, found from the crate root so that the example
/// runs from any directory.
pub fn load() -> Result<(Split, Split), Box<dyn Error>> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/data/digits");
    let split = |name: &str| -> Result<Split, Box<dyn Error>> {
        let path = |what: &str| dir.join(format!("{name}_{what}.npy"));
        let x: Array2<f32> = read_npy(path("x")).map_err(|e| format!("{}: {e}", path("x").display()))?;
        let y: Array1<i64> = read_npy(path("y")).map_err(|e| format!("{}: {e}", path("y").display()))?;
        if x.nrows() != y.len() || x.ncols() != INPUTS {
            return Err(format!("{name}: {} labels for images of shape {:?}", y.len(), x.dim()).into());
        }
        Ok(Split { x: x / 16.0, y })
    };
    Ok((split("train")?, split("test")?))
}

/// A small xorshift64* generator, so that runs are reproducible without a
/// random-number dependency.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03 | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `[-1, 1)`.
    pub fn symmetric(&mut self) -> f32 {
        ((self.next_u64() >> 11) as f64 / (1u64 << 52) as f64 - 1.0) as f32
    }

    /// A uniformly random permutation of `0..n` (Fisher-Yates).
    pub fn permutation(&mut self, n: usize) -> Vec<usize> {
        let mut p: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            p.swap(i, (self.next_u64() % (i as u64 + 1)) as usize);
        }
        p
    }
}

/// The network's parameters.
#[derive(Clone)]
pub struct Params {
    pub w1: Array2<f32>,
    pub b1: Array1<f32>,
    pub w2: Array2<f32>,
    pub b2: Array1<f32>,
}

impl Params {
    /// Weights uniform in `[-1, 1) / sqrt(fan_in)`, biases zero.
    pub fn init(hidden: usize, rng: &mut Rng) -> Params {
        let mut uniform = |rows: usize, cols: usize| {
            let scale = 1.0 / (rows as f32).sqrt();
            Array2::from_shape_simple_fn((rows, cols), || rng.symmetric() * scale)
        };
        let w1 = uniform(INPUTS, hidden);
        let w2 = uniform(hidden, CLASSES);
        Params { w1, b1: Array1::zeros(hidden), w2, b2: Array1::zeros(CLASSES) }
    }

    /// The fraction of `data` classified correctly.
    pub fn accuracy(&self, data: &Split) -> Result<f32, einlang::Error> {
        mlp::accuracy(&data.x, &data.y, &self.w1, &self.b1, &self.w2, &self.b2)
    }

    /// The mean cross-entropy over `data`.
    pub fn loss(&self, data: &Split) -> Result<f32, einlang::Error> {
        mlp::batch_loss(&data.x, &data.y, &self.w1, &self.b1, &self.w2, &self.b2)
    }
}

/// One epoch of mini-batch SGD over `data` in an order drawn from `rng`
/// (a last batch smaller than `batch` is dropped). Returns the mean of the
/// batch losses.
pub fn epoch(params: &mut Params, data: &Split, batch: usize, lr: f32, rng: &mut Rng) -> Result<f32, einlang::Error> {
    let order = rng.permutation(data.y.len());
    let mut total = 0.0;
    let batches = order.len() / batch;
    for rows in order.chunks_exact(batch) {
        let x = data.x.select(Axis(0), rows);
        let y = data.y.select(Axis(0), rows);
        let p = &*params;
        let (w1, b1, w2, b2, loss) = mlp::sgd_step(&x, &y, &p.w1, &p.b1, &p.w2, &p.b2, lr)?;
        *params = Params { w1, b1, w2, b2 };
        total += loss;
    }
    Ok(total / batches as f32)
}
