//! Scalar element types, shared by every stage from the syntax to the back
//! ends.

/// Scalar element types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScalarKind {
    I8,
    I16,
    I32,
    I64,
    U8,
    U32,
    U64,
    /// IEEE binary16 (`half::f16`): stored in 16 bits, computed in `f32`.
    F16,
    /// bfloat16 (`half::bf16`): stored in 16 bits, computed in `f32`.
    BF16,
    F32,
    F64,
    Bool,
}

impl ScalarKind {
    pub fn from_name(name: &str) -> Option<ScalarKind> {
        Some(match name {
            "i8" => ScalarKind::I8,
            "i16" => ScalarKind::I16,
            "i32" => ScalarKind::I32,
            "i64" => ScalarKind::I64,
            "u8" => ScalarKind::U8,
            "u32" => ScalarKind::U32,
            "u64" => ScalarKind::U64,
            "f16" => ScalarKind::F16,
            "bf16" => ScalarKind::BF16,
            "f32" => ScalarKind::F32,
            "f64" => ScalarKind::F64,
            "bool" => ScalarKind::Bool,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            ScalarKind::I8 => "i8",
            ScalarKind::I16 => "i16",
            ScalarKind::I32 => "i32",
            ScalarKind::I64 => "i64",
            ScalarKind::U8 => "u8",
            ScalarKind::U32 => "u32",
            ScalarKind::U64 => "u64",
            ScalarKind::F16 => "f16",
            ScalarKind::BF16 => "bf16",
            ScalarKind::F32 => "f32",
            ScalarKind::F64 => "f64",
            ScalarKind::Bool => "bool",
        }
    }

    /// The size of one element in bytes.
    pub fn size_bytes(self) -> usize {
        match self {
            ScalarKind::I8 | ScalarKind::U8 | ScalarKind::Bool => 1,
            ScalarKind::I16 | ScalarKind::F16 | ScalarKind::BF16 => 2,
            ScalarKind::I32 | ScalarKind::U32 | ScalarKind::F32 => 4,
            ScalarKind::I64 | ScalarKind::U64 | ScalarKind::F64 => 8,
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, ScalarKind::F16 | ScalarKind::BF16 | ScalarKind::F32 | ScalarKind::F64)
    }

    /// Whether values of this type are stored in half precision and
    /// computed in `f32` (`f16`, `bf16`).
    pub fn is_half(self) -> bool {
        matches!(self, ScalarKind::F16 | ScalarKind::BF16)
    }

    /// The type arithmetic on values of this type computes in: `f32` for
    /// the half-precision types, the type itself otherwise.
    pub fn compute(self) -> ScalarKind {
        if self.is_half() {
            ScalarKind::F32
        } else {
            self
        }
    }

    pub fn is_int(self) -> bool {
        !self.is_float() && self != ScalarKind::Bool
    }

    pub fn is_signed(self) -> bool {
        matches!(
            self,
            ScalarKind::I8
                | ScalarKind::I16
                | ScalarKind::I32
                | ScalarKind::I64
                | ScalarKind::F16
                | ScalarKind::BF16
                | ScalarKind::F32
                | ScalarKind::F64
        )
    }
}

/// Whether the integer `v` is a value of the integer type `k` (false for
/// float and `bool` types).
pub fn int_fits(v: i128, k: ScalarKind) -> bool {
    int_range(k).is_some_and(|(lo, hi)| (lo..=hi).contains(&v))
}

/// The least and greatest values of the integer type `k` (None for float
/// and `bool` types).
pub fn int_range(k: ScalarKind) -> Option<(i128, i128)> {
    Some(match k {
        ScalarKind::I8 => (i8::MIN.into(), i8::MAX.into()),
        ScalarKind::I16 => (i16::MIN.into(), i16::MAX.into()),
        ScalarKind::I32 => (i32::MIN.into(), i32::MAX.into()),
        ScalarKind::I64 => (i64::MIN.into(), i64::MAX.into()),
        ScalarKind::U8 => (0, u8::MAX.into()),
        ScalarKind::U32 => (0, u32::MAX.into()),
        ScalarKind::U64 => (0, u64::MAX.into()),
        _ => return None,
    })
}
