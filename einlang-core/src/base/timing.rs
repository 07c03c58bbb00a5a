//! Where compile time goes: each stage and each `opt` pass records its wall
//! time here, and the macros' entry points print the table to stderr when
//! the environment variable `EINLANG_TIME_PASSES` is set (to anything but
//! `0` or the empty string), once per expansion.
//!
//! The record is per thread (a proc macro's expansions run one at a time on
//! one thread), always on (an `Instant::now()` per stage and pass, a few
//! dozen per expansion), and taken by `take`: with `EINLANG_TIME_PASSES`
//! set, the entry points take it after each expansion, so that each
//! expansion reports its own times; tools (the expansion bench) take it
//! themselves. Its size is one entry per stage and pass, however many
//! expansions add to it.
//!
//! A stage records under its name (`"lower"`), a part of a stage under the
//! stage's name and its own (`("opt", "hoist")`); a name recorded twice (a
//! pass that runs twice, validation after each pass) sums.

use std::cell::RefCell;
use std::time::{Duration, Instant};

/// A stage's name and, for a part of it, the part's (`""` for the stage).
pub type Key = (&'static str, &'static str);

thread_local! {
    static RECORD: RefCell<Vec<(Key, Duration)>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f`, adding its wall time to the stage `stage`.
pub fn time<T>(stage: &'static str, f: impl FnOnce() -> T) -> T {
    time_part(stage, "", f)
}

/// Runs `f`, adding its wall time to the part `part` of the stage `stage`.
pub fn time_part<T>(stage: &'static str, part: &'static str, f: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let out = f();
    add((stage, part), start.elapsed());
    out
}

/// Adds `elapsed` to `key`'s time; a new key goes after those recorded.
pub fn add(key: Key, elapsed: Duration) {
    RECORD.with(|r| {
        let mut r = r.borrow_mut();
        match r.iter_mut().find(|(k, _)| *k == key) {
            Some((_, d)) => *d += elapsed,
            None => r.push((key, elapsed)),
        }
    });
}

/// The times recorded on this thread since the last `take`, in the order
/// their keys were first recorded; clears the record.
pub fn take() -> Vec<(Key, Duration)> {
    RECORD.with(|r| std::mem::take(&mut *r.borrow_mut()))
}

/// Whether `EINLANG_TIME_PASSES` asks for the table.
pub fn enabled() -> bool {
    std::env::var_os("EINLANG_TIME_PASSES").is_some_and(|v| !v.is_empty() && v != "0")
}

/// The table for `times`, headed by `what` (the expansion it is for) and
/// `total`: one line per stage, in the order recorded, with milliseconds
/// and share of `total`, each stage's parts indented under it.
pub fn render(what: &str, times: &[(Key, Duration)], total: Duration) -> String {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let share = |d: Duration| if total.is_zero() { 0.0 } else { 100.0 * d.as_secs_f64() / total.as_secs_f64() };
    let mut out = format!("einlang: {what}: {:.2} ms\n", ms(total));
    let mut line = |label: String, d: Duration| {
        out.push_str(&format!("  {label:<24} {:>9.3} ms {:>5.1}%\n", ms(d), share(d)));
    };
    let stages: Vec<&'static str> = {
        let mut v: Vec<&'static str> = Vec::new();
        for ((stage, _), _) in times {
            if !v.contains(stage) {
                v.push(stage);
            }
        }
        v
    };
    for stage in stages {
        // A stage whose parts alone were timed shows their sum.
        let whole = match times.iter().find(|(k, _)| *k == (stage, "")) {
            Some((_, d)) => *d,
            None => times.iter().filter(|((s, _), _)| *s == stage).map(|(_, d)| *d).sum(),
        };
        line(stage.to_string(), whole);
        for ((s, part), d) in times {
            if *s == stage && !part.is_empty() {
                line(format!("  {part}"), *d);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_repeated_keys_and_puts_parts_under_their_stage() {
        take();
        let ms = Duration::from_millis;
        add(("parse", ""), ms(2));
        add(("opt", "dead"), ms(3));
        add(("opt", "hoist"), ms(1));
        add(("opt", "dead"), ms(4));
        add(("opt", ""), ms(8));
        let t = take();
        assert_eq!(
            t,
            vec![(("parse", ""), ms(2)), (("opt", "dead"), ms(7)), (("opt", "hoist"), ms(1)), (("opt", ""), ms(8))]
        );
        assert!(take().is_empty());
        let text = render("x", &t, ms(10));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "einlang: x: 10.00 ms");
        assert!(lines[1].trim_start().starts_with("parse") && lines[1].ends_with("20.0%"), "{text}");
        assert!(lines[2].trim_start().starts_with("opt ") && lines[2].ends_with("80.0%"), "{text}");
        assert!(lines[3].starts_with("    dead") && lines[3].ends_with("70.0%"), "{text}");
        assert!(lines[4].starts_with("    hoist") && lines[4].ends_with("10.0%"), "{text}");
        assert_eq!(lines.len(), 5);
    }
}
