//! Shared by the recurrence examples: compile a program with `einlang!`,
//! keep its text, and ask `einlang-core` what it decided for a recurrence.

/// Compiles the tokens with `einlang!` and keeps them as text in `SRC`
/// (examples whose program is a `.ein` file use `include_str!` instead).
#[allow(unused_macros)]
macro_rules! program {
    ($($src:tt)*) => {
        einlang::einlang! { $($src)* }
        const SRC: &str = stringify!($($src)*);
    };
}

/// The compiler's decisions for recurrence `name` of function `func` in
/// the program text `src`.
pub fn facts(src: &str, func: &str, name: &str) -> Option<einlang_core::analysis::recur::RecurrenceFacts> {
    let compiled = einlang_core::compile_str(src, &einlang_core::Options::default()).ok()?;
    compiled.recurrence(func, name).cloned()
}
