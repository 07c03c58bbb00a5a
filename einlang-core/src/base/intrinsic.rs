//! Elementary functions, file-system operations and run-time shape
//! operations: the built-in operations the standard library declares
//! (`#[intrinsic(exp)]`, `#[builtin(...)]`). Resolution binds them to names,
//! analysis types them by `Signature`, and every back end implements each
//! one.

/// Elementary functions of `std::math` and the arithmetic they need.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Intrinsic {
    Exp,
    Ln,
    Log10,
    Log2,
    Log1p,
    Expm1,
    Sqrt,
    Sin,
    Cos,
    Tan,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Tanh,
    Asinh,
    Acosh,
    Atanh,
    Erf,
    Sigmoid,
    Abs,
    Floor,
    Ceil,
    Round,
    Trunc,
    Min,
    Max,
    /// `atan2(y, x)`
    Atan2,
    Gcd,
    Lcm,
    Factorial,
    /// float ** float
    Powf,
    /// float ** integer
    Powi,
    /// integer ** integer (a negative exponent is an `Err`; overflow wraps)
    IntPow,
}

/// What an intrinsic accepts; the result has the type of the arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signature {
    /// One float.
    FloatUnary,
    /// One signed number (`abs`).
    SignedUnary,
    /// One number; the identity on integers (`floor`, `round`, ...).
    NumUnary,
    /// Two numbers of one type.
    NumBinary,
    /// Two floats of one type.
    FloatBinary,
    /// One integer.
    IntUnary,
    /// Two integers of one type.
    IntBinary,
    /// `pow` / `**`: resolved to `Powf`, `Powi` or `IntPow` by the types.
    Pow,
}

impl Intrinsic {
    pub fn name(self) -> &'static str {
        match self {
            Intrinsic::Exp => "exp",
            Intrinsic::Ln => "ln",
            Intrinsic::Log10 => "log10",
            Intrinsic::Log2 => "log2",
            Intrinsic::Log1p => "log1p",
            Intrinsic::Expm1 => "expm1",
            Intrinsic::Sqrt => "sqrt",
            Intrinsic::Sin => "sin",
            Intrinsic::Cos => "cos",
            Intrinsic::Tan => "tan",
            Intrinsic::Asin => "asin",
            Intrinsic::Acos => "acos",
            Intrinsic::Atan => "atan",
            Intrinsic::Sinh => "sinh",
            Intrinsic::Cosh => "cosh",
            Intrinsic::Tanh => "tanh",
            Intrinsic::Asinh => "asinh",
            Intrinsic::Acosh => "acosh",
            Intrinsic::Atanh => "atanh",
            Intrinsic::Erf => "erf",
            Intrinsic::Sigmoid => "sigmoid",
            Intrinsic::Abs => "abs",
            Intrinsic::Floor => "floor",
            Intrinsic::Ceil => "ceil",
            Intrinsic::Round => "round",
            Intrinsic::Trunc => "trunc",
            Intrinsic::Min => "min",
            Intrinsic::Max => "max",
            Intrinsic::Atan2 => "atan2",
            Intrinsic::Gcd => "gcd",
            Intrinsic::Lcm => "lcm",
            Intrinsic::Factorial => "factorial",
            Intrinsic::Powf => "powf",
            Intrinsic::Powi => "powi",
            Intrinsic::IntPow => "int_pow",
        }
    }

    /// The intrinsic a `#[intrinsic(name)]` declaration of the standard
    /// library names.
    pub fn from_name(name: &str) -> Option<Intrinsic> {
        const ALL: &[Intrinsic] = &[
            Intrinsic::Exp,
            Intrinsic::Ln,
            Intrinsic::Log10,
            Intrinsic::Log2,
            Intrinsic::Log1p,
            Intrinsic::Expm1,
            Intrinsic::Sqrt,
            Intrinsic::Sin,
            Intrinsic::Cos,
            Intrinsic::Tan,
            Intrinsic::Asin,
            Intrinsic::Acos,
            Intrinsic::Atan,
            Intrinsic::Sinh,
            Intrinsic::Cosh,
            Intrinsic::Tanh,
            Intrinsic::Asinh,
            Intrinsic::Acosh,
            Intrinsic::Atanh,
            Intrinsic::Erf,
            Intrinsic::Sigmoid,
            Intrinsic::Abs,
            Intrinsic::Floor,
            Intrinsic::Ceil,
            Intrinsic::Round,
            Intrinsic::Trunc,
            Intrinsic::Min,
            Intrinsic::Max,
            Intrinsic::Atan2,
            Intrinsic::Gcd,
            Intrinsic::Lcm,
            Intrinsic::Factorial,
        ];
        if name == "pow" {
            return Some(Intrinsic::Powf);
        }
        ALL.iter().copied().find(|i| i.name() == name)
    }

    pub fn signature(self) -> Signature {
        match self {
            Intrinsic::Abs => Signature::SignedUnary,
            Intrinsic::Floor | Intrinsic::Ceil | Intrinsic::Round | Intrinsic::Trunc => Signature::NumUnary,
            Intrinsic::Min | Intrinsic::Max => Signature::NumBinary,
            Intrinsic::Atan2 => Signature::FloatBinary,
            Intrinsic::Gcd | Intrinsic::Lcm => Signature::IntBinary,
            Intrinsic::Factorial => Signature::IntUnary,
            Intrinsic::Powf | Intrinsic::Powi | Intrinsic::IntPow => Signature::Pow,
            _ => Signature::FloatUnary,
        }
    }

    pub fn arity(self) -> usize {
        match self.signature() {
            Signature::NumBinary | Signature::FloatBinary | Signature::IntBinary | Signature::Pow => 2,
            _ => 1,
        }
    }

    /// The Rust float method computing a `FloatUnary` or `NumUnary`
    /// intrinsic, when there is one.
    pub fn float_method(self) -> Option<&'static str> {
        Some(match self {
            Intrinsic::Log1p => "ln_1p",
            Intrinsic::Expm1 => "exp_m1",
            Intrinsic::Erf | Intrinsic::Sigmoid => return None,
            i if matches!(i.signature(), Signature::FloatUnary | Signature::NumUnary) => i.name(),
            _ => return None,
        })
    }
}

/// A file-system or path function of `std::io` (the seed's `os`/`shutil`
/// hooks). Every argument is a string, except `join_path`'s vector of
/// parts; `ScriptDir` is the directory of the program's source, known when
/// it is compiled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FsOp {
    CurrentDir,
    ScriptDir,
    IsAbsolute,
    ListDir,
    FileExists,
    IsFile,
    IsDir,
    ReadFile,
    WriteFile,
    AppendFile,
    DeleteFile,
    CreateDir,
    RemoveDir,
    CopyFile,
    MoveFile,
    FileSize,
    JoinPath,
    SplitPath,
    Basename,
    Dirname,
    AbsolutePath,
    RelativePath,
}

/// What an `FsOp` argument or result is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FsValue {
    Str,
    Strs,
    Bool,
    I64,
    /// `(str, str)`
    StrPair,
}

impl FsOp {
    pub const ALL: [FsOp; 22] = [
        FsOp::CurrentDir,
        FsOp::ScriptDir,
        FsOp::IsAbsolute,
        FsOp::ListDir,
        FsOp::FileExists,
        FsOp::IsFile,
        FsOp::IsDir,
        FsOp::ReadFile,
        FsOp::WriteFile,
        FsOp::AppendFile,
        FsOp::DeleteFile,
        FsOp::CreateDir,
        FsOp::RemoveDir,
        FsOp::CopyFile,
        FsOp::MoveFile,
        FsOp::FileSize,
        FsOp::JoinPath,
        FsOp::SplitPath,
        FsOp::Basename,
        FsOp::Dirname,
        FsOp::AbsolutePath,
        FsOp::RelativePath,
    ];

    /// The library name, which is also the runtime function's name.
    pub fn name(self) -> &'static str {
        match self {
            FsOp::CurrentDir => "current_dir",
            FsOp::ScriptDir => "script_dir",
            FsOp::IsAbsolute => "is_absolute",
            FsOp::ListDir => "list_dir",
            FsOp::FileExists => "file_exists",
            FsOp::IsFile => "is_file",
            FsOp::IsDir => "is_dir",
            FsOp::ReadFile => "read_file",
            FsOp::WriteFile => "write_file",
            FsOp::AppendFile => "append_file",
            FsOp::DeleteFile => "delete_file",
            FsOp::CreateDir => "create_dir",
            FsOp::RemoveDir => "remove_dir",
            FsOp::CopyFile => "copy_file",
            FsOp::MoveFile => "move_file",
            FsOp::FileSize => "file_size",
            FsOp::JoinPath => "join_path",
            FsOp::SplitPath => "split_path",
            FsOp::Basename => "basename",
            FsOp::Dirname => "dirname",
            FsOp::AbsolutePath => "absolute_path",
            FsOp::RelativePath => "relative_path",
        }
    }

    pub fn params(self) -> &'static [FsValue] {
        use FsValue::*;
        match self {
            FsOp::CurrentDir | FsOp::ScriptDir => &[],
            FsOp::JoinPath => &[Strs],
            FsOp::WriteFile | FsOp::AppendFile | FsOp::CopyFile | FsOp::MoveFile | FsOp::RelativePath => &[Str, Str],
            _ => &[Str],
        }
    }

    pub fn result(self) -> FsValue {
        match self {
            FsOp::ListDir => FsValue::Strs,
            FsOp::FileSize => FsValue::I64,
            FsOp::SplitPath => FsValue::StrPair,
            FsOp::CurrentDir
            | FsOp::ScriptDir
            | FsOp::ReadFile
            | FsOp::JoinPath
            | FsOp::Basename
            | FsOp::Dirname
            | FsOp::AbsolutePath
            | FsOp::RelativePath => FsValue::Str,
            _ => FsValue::Bool,
        }
    }
}

/// A shape operation whose axes or extents are known at run time
/// (`std::ml::reshape`, `squeeze`, `unsqueeze`, and `slice`, whose integer
/// vector is its starts, ends, axes and steps one after another, and
/// `gather_nd`, whose vector is the indices' rank, extents and elements).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DynShapeOp {
    Reshape,
    Squeeze,
    Unsqueeze,
    Slice,
    GatherNd,
}

impl DynShapeOp {
    pub const ALL: [DynShapeOp; 5] =
        [DynShapeOp::Reshape, DynShapeOp::Squeeze, DynShapeOp::Unsqueeze, DynShapeOp::Slice, DynShapeOp::GatherNd];

    pub fn name(self) -> &'static str {
        match self {
            DynShapeOp::Reshape => "reshape",
            DynShapeOp::Squeeze => "squeeze",
            DynShapeOp::Unsqueeze => "unsqueeze",
            DynShapeOp::Slice => "slice",
            DynShapeOp::GatherNd => "gather_nd",
        }
    }
}
