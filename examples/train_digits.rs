//! Trains a 64-64-10 multilayer perceptron on 8x8 handwritten digits. The
//! forward pass, the loss, the gradients (`@l / @w1`, ...) and the SGD update
//! are one Einlang function, `sgd_step` in `examples/ein/train_digits.ein`;
//! Rust loads the data, draws the initial weights and the batch order, and
//! loops over epochs.
//!
//! ```sh
//! cargo run --release --example train_digits
//! ```
//!
//! Prints the mean training loss and the test accuracy every few epochs,
//! then the final accuracies and the time taken. Exits with an error if the
//! test accuracy stays below 90%.

#[path = "common/digits.rs"]
mod digits;

use std::error::Error;
use std::time::Instant;

use digits::{Params, Rng};

const HIDDEN: usize = 64;
const BATCH: usize = 50;
const LR: f32 = 0.3;
const EPOCHS: usize = 30;
const REPORT_EVERY: usize = 3;

fn main() -> Result<(), Box<dyn Error>> {
    let start = Instant::now();
    let (train, test) = digits::load()?;
    let loaded = start.elapsed();
    println!(
        "digits: {} training and {} test images of {} pixels; {}-{HIDDEN}-{} tanh MLP, batch {BATCH}, lr {LR}",
        train.y.len(),
        test.y.len(),
        digits::INPUTS,
        digits::INPUTS,
        digits::CLASSES
    );

    let mut rng = Rng::new(2024);
    let mut params = Params::init(HIDDEN, &mut rng);
    println!("epoch  0: test loss {:.4}, test accuracy {:5.1}%", params.loss(&test)?, 100.0 * params.accuracy(&test)?);
    let train_start = Instant::now();
    for epoch in 1..=EPOCHS {
        let loss = digits::epoch(&mut params, &train, BATCH, LR, &mut rng)?;
        if epoch % REPORT_EVERY == 0 {
            println!("epoch {epoch:2}: train loss {loss:.4}, test accuracy {:5.1}%", 100.0 * params.accuracy(&test)?);
        }
    }
    let trained = train_start.elapsed();

    let (train_acc, test_acc) = (params.accuracy(&train)?, params.accuracy(&test)?);
    println!("final: train accuracy {:.1}%, test accuracy {:.1}%", 100.0 * train_acc, 100.0 * test_acc);
    println!(
        "time: {:.0} ms training ({EPOCHS} epochs of {} steps, with the evaluations), {:.1} ms loading, {:.0} ms in all",
        trained.as_secs_f64() * 1e3,
        train.y.len() / BATCH,
        loaded.as_secs_f64() * 1e3,
        start.elapsed().as_secs_f64() * 1e3
    );
    if test_acc < 0.9 {
        return Err(format!("test accuracy {:.1}% is below 90%", 100.0 * test_acc).into());
    }
    Ok(())
}
