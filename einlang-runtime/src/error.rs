use std::fmt;

/// The error every generated function can return.
///
/// Generated code never panics on bad input: wrong shapes, out-of-range
/// data-dependent indices and failed assertions all become an `Error`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// A tensor argument's length along an axis disagrees with a dimension
    /// symbol (or literal) bound earlier.
    Shape {
        /// The Einlang function whose entry check failed.
        function: String,
        /// The parameter whose shape is wrong.
        param: String,
        /// The axis of that parameter.
        axis: usize,
        /// The dimension as written in the signature (`K`, `3`, `H - KH + 1`).
        symbol: String,
        /// The length the dimension was bound to (or evaluates to).
        expected: usize,
        /// The length the argument has.
        found: usize,
    },
    /// A dimension or range extent that came out negative or inconsistent at
    /// run time (an inferred extent such as `H - KH + 1` with `KH > H`, or two
    /// reads that bind one index to different lengths).
    Extent { function: String, message: String },
    /// A checked tensor conversion (`x as [f32; 8, 1, 5, 5]`) of a value
    /// whose rank differs from the target type's.
    Rank {
        /// The Einlang function doing the conversion.
        function: String,
        /// The target type as written.
        target: String,
        /// The target's rank.
        expected: usize,
        /// The value's rank.
        found: usize,
    },
    /// A read outside a tensor that the compiler could not prove in bounds.
    Index { function: String, tensor: String, axis: usize, index: i64, len: usize },
    /// A failed `assert(cond, msg)`.
    Assert { function: String, message: String },
    /// Integer arithmetic without a result: division or remainder by zero,
    /// an integer power with a negative exponent, a `lcm` or `factorial`
    /// that does not fit. (`+ - *`, negation and `**` wrap instead.)
    Arithmetic { function: String, message: String },
    /// Reading or writing a file failed, or its contents do not match the
    /// declared type; `path` names the file.
    Io { function: String, path: String, message: String },
    /// No CUDA device could be opened: the driver library is missing, there
    /// is no GPU, or the ordinal is past the last device.
    NoDevice,
    /// The CUDA driver, NVRTC or cuBLAS failed (`operation` says what was
    /// being done: a launch, a kernel's compilation, an allocation).
    Device { operation: String, message: String },
    /// Memory for a tensor could not be reserved: its size comes from
    /// run-time values (an extent computed from an argument, the lengths
    /// of the arguments) and the allocator has no room for it. Nothing is
    /// leaked, and later calls work as before.
    Alloc {
        /// The Einlang function that needed the tensor.
        function: String,
        /// The tensor (as named in the source; empty when the runtime
        /// allocated a buffer of its own).
        tensor: String,
        /// The size requested, in bytes.
        bytes: usize,
    },
    /// Ranks of a sharded function disagree (an extent that differs across
    /// ranks), or communication failed.
    Dist { message: String },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Shape { function, param, axis, symbol, expected, found } => write!(
                f,
                "shape mismatch in `{function}`: parameter `{param}` axis {axis} has length {found}, \
                 but dimension `{symbol}` is {expected}"
            ),
            Error::Extent { function, message } => write!(f, "in `{function}`: {message}"),
            Error::Rank { function, target, expected, found } => write!(
                f,
                "rank mismatch in `{function}`: a tensor of rank {found} cannot be converted to `{target}`, of rank {expected}"
            ),
            Error::Index { function, tensor, axis, index, len } => write!(
                f,
                "index out of bounds in `{function}`: `{tensor}` axis {axis} has length {len}, index is {index}"
            ),
            Error::Assert { function, message } => write!(f, "assertion failed in `{function}`: {message}"),
            Error::Arithmetic { function, message } => write!(f, "arithmetic error in `{function}`: {message}"),
            Error::Io { function, path, message } => write!(f, "in `{function}`: `{path}`: {message}"),
            Error::NoDevice => write!(f, "no CUDA device: no driver library, no GPU, or no GPU with that ordinal"),
            Error::Device { operation, message } => write!(f, "CUDA error in {operation}: {message}"),
            Error::Dist { message } => write!(f, "across ranks: {message}"),
            Error::Alloc { function, tensor, bytes } => {
                let what = if tensor.is_empty() { "a tensor".to_string() } else { format!("`{tensor}`") };
                write!(f, "out of memory in `{function}`: cannot allocate {bytes} bytes ({}) for {what}", human_bytes(*bytes))
            }
        }
    }
}

impl std::error::Error for Error {}

/// `bytes` in the largest binary unit that keeps it at least 1 (`8 PiB`,
/// `1.5 GiB`).
fn human_bytes(bytes: usize) -> String {
    const UNITS: [&str; 7] = ["bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} bytes")
    } else if value.fract() == 0.0 {
        format!("{value} {}", UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::Error;

    fn assert_error_traits<E: std::error::Error + Send + Sync + 'static>() {}

    #[test]
    fn error_is_a_std_error_and_thread_safe() {
        assert_error_traits::<Error>();
    }

    #[test]
    fn alloc_message_names_the_function_tensor_and_size() {
        let e = Error::Alloc { function: "ramp".into(), tensor: "r".into(), bytes: 1 << 53 };
        assert_eq!(e.to_string(), "out of memory in `ramp`: cannot allocate 9007199254740992 bytes (8 PiB) for `r`");
        let e = Error::Alloc { function: "f".into(), tensor: String::new(), bytes: 3 << 29 };
        assert_eq!(e.to_string(), "out of memory in `f`: cannot allocate 1610612736 bytes (1.5 GiB) for a tensor");
        assert_eq!(super::human_bytes(12), "12 bytes");
    }

    #[test]
    fn shape_message_names_everything() {
        let e = Error::Shape {
            function: "matmul".into(),
            param: "b".into(),
            axis: 0,
            symbol: "K".into(),
            expected: 3,
            found: 4,
        };
        let text = e.to_string();
        for part in ["matmul", "`b`", "axis 0", "`K`", "3", "4"] {
            assert!(text.contains(part), "{text} lacks {part}");
        }
    }
}
