//! The 2-D heat equation as a recurrence with boundary clauses: time runs
//! sequentially, the grid in parallel, and only the last two time steps are
//! stored because only the final field is read.
//!
//! Run with `cargo run --release --example heat`.

use einlang::ndarray::Array2;

#[path = "common/recurrence.rs"]
mod recurrence;

mod program {
    einlang::include_ein!("examples/ein/heat.ein");
}
use program::heat;
const SRC: &str = include_str!("ein/heat.ein");

fn main() -> Result<(), einlang::Error> {
    let n = 48;
    // A hot square in the middle of a cold plate.
    let u0 =
        Array2::from_shape_fn((n, n), |(i, j)| if (18..30).contains(&i) && (18..30).contains(&j) { 1.0 } else { 0.0 });
    for steps in [1, 50, 400] {
        let u = heat(&u0, 0.2, steps)?;
        println!("after {steps:>3} steps: total heat {:.4}, centre {:.4}", u.sum(), u[[n / 2, n / 2]]);
    }
    let u = heat(&u0, 0.2, 400)?;
    // A coarse picture of the field.
    for i in (0..n).step_by(4) {
        let row: String = (0..n)
            .step_by(2)
            .map(|j| {
                let v = u[[i, j]];
                [' ', '.', ':', '-', '=', '+', '*', '#'][((v * 40.0).clamp(0.0, 7.0)) as usize]
            })
            .collect();
        println!("|{row}|");
    }
    if let Some(f) = recurrence::facts(SRC, "heat", "u") {
        println!("u: sequential axes {:?}, parallel axes {:?}, storage {:?}", f.sequential, f.parallel, f.storage);
    }
    Ok(())
}
