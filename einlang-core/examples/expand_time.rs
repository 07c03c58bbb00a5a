//! Times macro expansion in one process, as rustc runs it for a crate with
//! many `einlang!` calls: `cargo run --release -p einlang-core --example
//! expand_time -- FILE.ein [CALLS]` expands the file's tokens CALLS times
//! (default 20) through `einlang_core::expand` and prints the first call's
//! time, the median of the others and the total. See
//! `benches/expansion/run.sh`.

use std::process::ExitCode;
use std::time::Instant;

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
    let total = Instant::now();
    for _ in 0..calls {
        let start = Instant::now();
        let out = einlang_core::expand(tokens.clone(), &options);
        times.push(start.elapsed().as_secs_f64() * 1e3);
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
    ExitCode::SUCCESS
}
