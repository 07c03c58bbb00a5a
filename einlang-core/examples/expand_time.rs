//! Times macro expansion in one process, as rustc runs it for a crate with
//! many `einlang!` calls: `cargo run --release -p einlang-core --example
//! expand_time -- FILE.ein [CALLS]` expands the file's tokens CALLS times
//! (default 20) through `einlang_core::expand` and prints the first call's
//! time, the median of the others and the total, then each stage's and
//! `opt` pass's time (`einlang_core::base::timing`): the first call's, and
//! the mean of the others. See `benches/expansion/run.sh`.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use einlang_core::base::timing;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: expand_time FILE.ein [CALLS]");
        return ExitCode::FAILURE;
    };
    let calls: usize = match args.get(1).map(|n| n.parse()) {
        None => 20,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            eprintln!("CALLS must be a positive integer");
            return ExitCode::FAILURE;
        }
    };
    let src = match std::fs::read_to_string(path) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{path}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let tokens: proc_macro2::TokenStream = match src.parse() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{path}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let options = einlang_core::Options::default();
    let mut times = Vec::with_capacity(calls);
    // Each stage's time: the first call's, and the sum over the others.
    let mut stages: Vec<(timing::Key, Duration, Duration)> = Vec::new();
    let total = Instant::now();
    for call in 0..calls {
        let start = Instant::now();
        let out = einlang_core::expand(tokens.clone(), &options);
        times.push(start.elapsed().as_secs_f64() * 1e3);
        for (key, d) in timing::take() {
            let at = match stages.iter().position(|(k, _, _)| *k == key) {
                Some(at) => at,
                None => {
                    stages.push((key, Duration::ZERO, Duration::ZERO));
                    stages.len() - 1
                }
            };
            if call == 0 {
                stages[at].1 += d;
            } else {
                stages[at].2 += d;
            }
        }
        if out.to_string().contains("compile_error") {
            eprintln!("{path}: the program has errors; `expand` prints them");
            return ExitCode::FAILURE;
        }
    }
    let total = total.elapsed().as_secs_f64() * 1e3;
    let first = times[0];
    let mut rest = times[1..].to_vec();
    rest.sort_by(f64::total_cmp);
    let median = rest.get(rest.len() / 2).copied().unwrap_or(first);
    println!(
        "{calls} expansions of {path}: first {first:.1} ms, median of the rest {median:.1} ms, total {total:.0} ms"
    );
    // Stages in the order recorded, each one's parts under it.
    let rest_calls = (calls - 1).max(1) as f64;
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!("  {:<24} {:>10} {:>14}", "stage", "first (ms)", "mean rest (ms)");
    let mut order: Vec<&'static str> = Vec::new();
    for ((stage, _), _, _) in &stages {
        if !order.contains(stage) {
            order.push(stage);
        }
    }
    for stage in order {
        let whole = |pick: fn(&(timing::Key, Duration, Duration)) -> Duration| -> Duration {
            match stages.iter().find(|s| s.0 == (stage, "")) {
                Some(s) => pick(s),
                None => stages.iter().filter(|s| s.0 .0 == stage).map(pick).sum(),
            }
        };
        let (first, rest) = (whole(|s| s.1), whole(|s| s.2));
        println!("  {stage:<24} {:>10.3} {:>14.3}", ms(first), ms(rest) / rest_calls);
        for ((s, part), first, rest) in &stages {
            if *s == stage && !part.is_empty() {
                println!("    {part:<22} {:>10.3} {:>14.3}", ms(*first), ms(*rest) / rest_calls);
            }
        }
    }
    ExitCode::SUCCESS
}
