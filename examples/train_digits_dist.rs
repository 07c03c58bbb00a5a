//! The digits MLP of `examples/train_digits.rs`, trained data-parallel over
//! MPI ranks: every rank draws the same batches, passes its block of each
//! batch to `sgd_step` (`#[shard(B)]` in
//! `examples/ein/train_digits_dist.ein`), and gets the same updated
//! weights; the gradients' sums over the batch are each rank's part plus
//! one all-reduce, which the compiler inserted.
//!
//! ```sh
//! cargo build --release --features mpi --example train_digits_dist
//! mpirun -np 2 target/release/examples/train_digits_dist
//! RAYON_NUM_THREADS=1 mpirun -np 2 target/release/examples/train_digits_dist
//! ```
//!
//! Prints the loss and accuracy as `train_digits` does, the time per step
//! and the bytes a rank sends per step. With `--check`, after every step
//! the ranks compare their weights (a hash of their bits) and the final
//! test accuracy must be within 2 points of one process training on the
//! same batches; the exit status says whether both held.

#[path = "common/digits.rs"]
mod digits;

mod dist {
    einlang::include_ein!("examples/ein/train_digits_dist.ein");
}

use std::error::Error;
use std::time::Instant;

use digits::{mlp, Params, Rng};
use einlang::dist::World;
use einlang::ndarray::{s, Axis};

const HIDDEN: usize = 64;
const BATCH: usize = 50;
const LR: f32 = 0.3;
const EPOCHS: usize = 30;

/// FNV-1a over the weights' bits.
fn hash(p: &Params) -> i64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for v in p.w1.iter().chain(p.b1.iter()).chain(p.w2.iter()).chain(p.b2.iter()) {
        h = (h ^ u64::from(v.to_bits())).wrapping_mul(0x100000001b3);
    }
    h as i64
}

fn main() -> Result<(), Box<dyn Error>> {
    let check = std::env::args().any(|a| a == "--check");
    let world = World::init()?;
    let (rank, size) = (world.rank(), world.size());
    let (train, test) = digits::load()?;
    let mut rng = Rng::new(2024);
    let mut params = Params::init(HIDDEN, &mut rng);
    let mut alone =
        Params { w1: params.w1.clone(), b1: params.b1.clone(), w2: params.w2.clone(), b2: params.b2.clone() };
    let mine = world.block(BATCH);
    let (mut steps, mut step_time, mut sent) = (0usize, 0.0f64, 0u64);
    for epoch in 1..=EPOCHS {
        let order = rng.permutation(train.y.len());
        let mut total = 0.0;
        for rows in order.chunks_exact(BATCH) {
            let x = train.x.select(Axis(0), rows);
            let y = train.y.select(Axis(0), rows);
            let p = &params;
            let before = world.bytes_sent();
            let start = Instant::now();
            let (w1, b1, w2, b2, loss) = dist::sgd_step(
                &world,
                x.slice(s![mine.clone(), ..]),
                y.slice(s![mine.clone()]),
                &p.w1,
                &p.b1,
                &p.w2,
                &p.b2,
                LR,
            )?;
            step_time += start.elapsed().as_secs_f64();
            sent += world.bytes_sent() - before;
            steps += 1;
            params = Params { w1, b1, w2, b2 };
            total += loss;
            if check {
                let h = hash(&params);
                if world.all_gather_i64(&[h]).iter().any(|&o| o != h) {
                    return Err(format!("rank {rank}: weights differ between ranks after step {steps}").into());
                }
                let q = &alone;
                let (w1, b1, w2, b2, _) = mlp::sgd_step(&x, &y, &q.w1, &q.b1, &q.w2, &q.b2, LR)?;
                alone = Params { w1, b1, w2, b2 };
            }
        }
        if epoch % 5 == 0 && rank == 0 {
            let acc = dist::accuracy(
                &world,
                test.x.slice(s![world.block(test.y.len()), ..]),
                test.y.slice(s![world.block(test.y.len())]),
                &params.w1,
                &params.b1,
                &params.w2,
                &params.b2,
            );
            println!(
                "epoch {epoch:2}: train loss {:.4}, test accuracy {:5.1}%",
                total / (train.y.len() / BATCH) as f32,
                100.0 * acc?
            );
        } else if epoch % 5 == 0 {
            dist::accuracy(
                &world,
                test.x.slice(s![world.block(test.y.len()), ..]),
                test.y.slice(s![world.block(test.y.len())]),
                &params.w1,
                &params.b1,
                &params.w2,
                &params.b2,
            )?;
        }
    }
    let n = test.y.len();
    let rows = world.block(n);
    let acc = dist::accuracy(
        &world,
        test.x.slice(s![rows.clone(), ..]),
        test.y.slice(s![rows]),
        &params.w1,
        &params.b1,
        &params.w2,
        &params.b2,
    )?;
    let per_step_values =
        ((digits::INPUTS * HIDDEN + HIDDEN + HIDDEN * digits::CLASSES + digits::CLASSES + 1) * 4) as u64;
    println!(
        "rank {rank} of {size}: test accuracy {:.1}%, {:.3} ms per step, {} bytes sent per step ({per_step_values} of them gradients and loss), RAYON_NUM_THREADS={}",
        100.0 * acc,
        1e3 * step_time / steps as f64,
        sent / steps as u64,
        std::env::var("RAYON_NUM_THREADS").unwrap_or_else(|_| "(all cores)".into())
    );
    if check {
        let acc1 = alone.accuracy(&test)?;
        println!("rank {rank}: one process on the same batches: test accuracy {:.1}%", 100.0 * acc1);
        if (acc - acc1).abs() > 0.02 {
            return Err(format!("accuracy {acc} differs from one process's {acc1} by more than 2 points").into());
        }
    }
    if acc < 0.9 {
        return Err(format!("test accuracy {:.1}% is below 90%", 100.0 * acc).into());
    }
    Ok(())
}
