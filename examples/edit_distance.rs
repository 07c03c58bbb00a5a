//! Edit distance as a two-axis recurrence. Reads of `(i-1, j)`, `(i, j-1)`
//! and `(i-1, j-1)` make both axes sequential; the compiler keeps two rows
//! when only the final cell is read, and the whole table when it is
//! returned (then, with several threads, a blocked anti-diagonal wavefront
//! fills it).
//!
//! Run with `cargo run --release --example edit_distance -- kitten sitting`.

use einlang::ndarray::Array1;

#[path = "common/recurrence.rs"]
mod recurrence;

mod program {
    einlang::include_ein!("examples/ein/edit_distance.ein");
}
use program::{distance, table};
const SRC: &str = include_str!("ein/edit_distance.ein");

fn codes(s: &str) -> Array1<i32> {
    s.chars().map(|c| c as i32).collect()
}

fn main() -> Result<(), einlang::Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let pairs: Vec<(String, String)> = if args.len() == 2 {
        vec![(args[0].clone(), args[1].clone())]
    } else {
        vec![
            ("kitten".into(), "sitting".into()),
            ("flaw".into(), "lawn".into()),
            ("intention".into(), "execution".into()),
        ]
    };
    for (a, b) in &pairs {
        println!("distance({a:?}, {b:?}) = {}", distance(&codes(a), &codes(b))?);
    }
    let t = table(&codes("flaw"), &codes("lawn"))?;
    println!("table for flaw -> lawn:\n{t}");

    // A long pair, timed.
    let n = 4096;
    let a: Array1<i32> = (0..n).map(|i| ((i * 7919) % 4) as i32).collect();
    let b: Array1<i32> = (0..n).map(|i| ((i * 104_729 + 3) % 4) as i32).collect();
    let start = std::time::Instant::now();
    let d = distance(&a, &b)?;
    let took = start.elapsed();
    println!("distance of two {n}-symbol strings = {d} ({:.2} ns/cell)", took.as_secs_f64() * 1e9 / (n * n) as f64);

    for func in ["distance", "table"] {
        if let Some(f) = recurrence::facts(SRC, func, "d") {
            println!(
                "{func}: d sequential axes {:?}, wavefront-eligible {}, storage {:?}",
                f.sequential, f.wavefront, f.storage
            );
        }
    }
    Ok(())
}
