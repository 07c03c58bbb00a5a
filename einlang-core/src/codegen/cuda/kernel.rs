//! CUDA C text of kernels: one `extern "C" __global__` function per
//! translation unit, after the prelude of helpers (no CUDA headers).
//!
//! A kernel runs a grid-stride loop over the points of a definition (or of
//! a recurrence clause at one step): the linear point index is split into
//! the axes' indices innermost first, so consecutive threads take
//! consecutive elements of the innermost axis (coalesced). Reductions,
//! where-clauses, checked reads and blocks are immediately invoked lambdas,
//! so every IR expression is one C expression.
//!
//! What reaches the kernel from outside is a parameter: a tensor is a
//! pointer and its extents (`__d0_x`, `__d1_x`, ...), a scalar (a dimension,
//! a scalar parameter or `let`, a sequential loop's index) its value. The
//! status word (`__status`) is the last parameter of every kernel.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt::Write;

use super::Failure;
use crate::base::dim::{Dim, DimVar};
use crate::base::intrinsic::Intrinsic;
use crate::base::ops::{BinOp, RedOp, UnOp};
use crate::base::scalar::ScalarKind;
use crate::ir::{Expr, ExprKind, FuncId, Function, Literal, Loop, Program, Repr, Stmt, TensorDef, VarId, WhereEntry};

/// Helpers every kernel may use; `template`s, so only the used ones cost.
pub const PRELUDE: &str = r#"typedef unsigned long long __ein_u64;
typedef unsigned short __ein_f16;
typedef unsigned short __ein_bf16;
#define __ein_f16_bits(b) ((__ein_f16)(b))
#define __ein_bf16_bits(b) ((__ein_bf16)(b))
static __device__ __forceinline__ float __ein_f16_to_f32(__ein_f16 h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
static __device__ __forceinline__ __ein_f16 __ein_f32_to_f16(float f) { __ein_f16 h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
static __device__ __forceinline__ float __ein_bf16_to_f32(__ein_bf16 h) { return __uint_as_float(((unsigned)h) << 16); }
static __device__ __forceinline__ __ein_bf16 __ein_f32_to_bf16(float f) {
    unsigned u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (__ein_bf16)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u); return (__ein_bf16)(u >> 16);
}
static __device__ __forceinline__ long long __ein_min(long long a, long long b) { return a < b ? a : b; }
static __device__ __forceinline__ long long __ein_max(long long a, long long b) { return a > b ? a : b; }
static __device__ __forceinline__ long long __ein_div_euclid(long long a, long long b) {
    long long q = a / b; if (a % b < 0) { q = b > 0 ? q - 1 : q + 1; } return q;
}
static __device__ __forceinline__ long long __ein_split(long long* r, long long e) {
    __ein_u64 a = (__ein_u64)*r, b = (__ein_u64)e;
    if (((a | b) >> 32) == 0ULL) { unsigned q = (unsigned)a / (unsigned)b; *r = q; return (long long)((unsigned)a - q * (unsigned)b); }
    long long q = *r / e, m = *r - q * e; *r = q; return m;
}
template <typename T> static __device__ __forceinline__ T __ein_shfl(T v, int s) { return __shfl_xor_sync(0xffffffffu, v, s); }
template <> __device__ __forceinline__ bool __ein_shfl(bool v, int s) { return __shfl_xor_sync(0xffffffffu, (int)v, s) != 0; }
template <> __device__ __forceinline__ signed char __ein_shfl(signed char v, int s) { return (signed char)__shfl_xor_sync(0xffffffffu, (int)v, s); }
template <> __device__ __forceinline__ unsigned char __ein_shfl(unsigned char v, int s) { return (unsigned char)__shfl_xor_sync(0xffffffffu, (int)v, s); }
template <> __device__ __forceinline__ short __ein_shfl(short v, int s) { return (short)__shfl_xor_sync(0xffffffffu, (int)v, s); }
static __device__ __forceinline__ void __ein_fail(__ein_u64* st, __ein_u64 site, long long v, long long n) {
    if (atomicCAS(st, 0ULL, site) == 0ULL) { st[1] = (__ein_u64)v; st[2] = (__ein_u64)n; }
}
static __device__ __forceinline__ bool __ein_in(long long i, long long n, __ein_u64 site, __ein_u64* st) {
    if (i >= 0 && i < n) return true;
    __ein_fail(st, site, i, n); return false;
}
template <typename T> static __device__ __forceinline__ T __ein_div(T a, T b, __ein_u64 site, __ein_u64* st) {
    if (b == (T)0) { __ein_fail(st, site, (long long)a, 0); return (T)0; }
    if ((T)-1 < (T)0 && b == (T)-1) return (T)(0ULL - (__ein_u64)a);
    return a / b;
}
template <typename T> static __device__ __forceinline__ T __ein_rem(T a, T b, __ein_u64 site, __ein_u64* st) {
    if (b == (T)0) { __ein_fail(st, site, (long long)a, 0); return (T)0; }
    if ((T)-1 < (T)0 && b == (T)-1) return (T)0;
    return a % b;
}
template <typename T, typename E> static __device__ __forceinline__ T __ein_ipow(T b, E e, __ein_u64 site, __ein_u64* st) {
    if (e < (E)0) { __ein_fail(st, site, (long long)e, 0); return (T)0; }
    __ein_u64 r = 1ULL, x = (__ein_u64)b; __ein_u64 n = (__ein_u64)e;
    while (n) { if (n & 1ULL) r *= x; x *= x; n >>= 1; }
    return (T)r;
}
template <typename F> static __device__ __forceinline__ F __ein_powi(F x, long long n) {
    bool inv = n < 0; __ein_u64 m = inv ? 0ULL - (__ein_u64)n : (__ein_u64)n; F r = (F)1;
    while (m) { if (m & 1ULL) r *= x; x *= x; m >>= 1; }
    return inv ? (F)1 / r : r;
}
template <typename I, typename F> static __device__ __forceinline__ I __ein_f2i(F x, I lo, I hi) {
    if (x != x) return (I)0;
    if (x <= (F)lo) return lo;
    if (x >= (F)hi) return hi;
    return (I)x;
}
"#;

/// The C type of a scalar.
pub fn c_type(k: ScalarKind) -> &'static str {
    match k {
        ScalarKind::I8 => "signed char",
        ScalarKind::I16 => "short",
        ScalarKind::I32 => "int",
        ScalarKind::I64 => "long long",
        ScalarKind::U8 => "unsigned char",
        ScalarKind::U32 => "unsigned int",
        ScalarKind::U64 => "unsigned long long",
        ScalarKind::F16 => "__ein_f16",
        ScalarKind::BF16 => "__ein_bf16",
        ScalarKind::F32 => "float",
        ScalarKind::F64 => "double",
        ScalarKind::Bool => "bool",
    }
}

const C_KEYWORDS: &[&str] = &[
    "auto",
    "bool",
    "break",
    "case",
    "catch",
    "char",
    "class",
    "const",
    "constexpr",
    "continue",
    "default",
    "delete",
    "do",
    "double",
    "else",
    "enum",
    "explicit",
    "extern",
    "false",
    "float",
    "for",
    "friend",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "mutable",
    "namespace",
    "new",
    "operator",
    "private",
    "protected",
    "public",
    "register",
    "restrict",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "struct",
    "switch",
    "template",
    "this",
    "throw",
    "true",
    "try",
    "typedef",
    "typeid",
    "typename",
    "union",
    "unsigned",
    "using",
    "virtual",
    "void",
    "volatile",
    "while",
    "and",
    "or",
    "not",
    "xor",
    "asm",
    "export",
    "decltype",
    "noexcept",
    "nullptr",
    "alignas",
    "alignof",
    "static_assert",
    "thread_local",
    "char16_t",
    "char32_t",
    "wchar_t",
    "concept",
    "requires",
    "main",
    "min",
    "max",
];

/// The C spelling of a variable name: the name itself unless it is a C++
/// keyword or starts with `__` (reserved for the back end).
pub fn c_name(name: &str) -> String {
    if C_KEYWORDS.contains(&name) || name.starts_with("__") || name.starts_with("v_") {
        format!("v_{name}")
    } else {
        name.to_string()
    }
}

/// What a kernel needs from outside, in parameter order (by variable id).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Input {
    /// A tensor read in the kernel: pointer and extents.
    Tensor(VarId),
    /// A scalar value.
    Scalar(VarId),
}

/// The check sites of one host function: what a failure code means.
#[derive(Clone, Debug, PartialEq)]
pub enum Site {
    Index { tensor: String, axis: usize },
    DivZero,
    RemZero,
    NegativePower,
}

/// The threads that share a kernel's top-level reductions
/// (`KernelCx::block`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Team {
    /// The whole block: each warp combines its lanes by shuffles, then the
    /// first warp the warps' results through shared memory.
    Block,
    /// One warp (a point or row per warp): shuffles only, no shared memory
    /// and no barrier.
    Warp,
}

impl Team {
    /// The C expressions of a thread's rank in its team and the team's size.
    pub fn rank_and_size(self) -> (&'static str, &'static str) {
        match self {
            Team::Block => ("threadIdx.x", "blockDim.x"),
            Team::Warp => ("(threadIdx.x & 31)", "32"),
        }
    }
}

/// Elements per thread and step of a four-wide team loop (`KernelCx::wide`).
pub const WIDTH: usize = 4;

/// The `float4` (`ushort4`) component of each lane of a four-wide loop.
pub const LANE_FIELDS: [&str; WIDTH] = ["x", "y", "z", "w"];

/// The CUDA vector type that holds four elements of `k` for four-wide
/// loads and stores: `float4` for `f32`, `ushort4` (eight bytes) for the
/// 16-bit formats, stored as their bit patterns; None for other types.
pub fn vec4_type(k: ScalarKind) -> Option<&'static str> {
    match k {
        ScalarKind::F32 => Some("float4"),
        ScalarKind::F16 | ScalarKind::BF16 => Some("ushort4"),
        _ => None,
    }
}

/// What a kernel whose team loops take four consecutive points per thread
/// needs before the host may launch it: every such loop's length, and the
/// last extent of every tensor read there by a four-wide load, a multiple
/// of four (and the tensors 16-byte aligned), so that the loads are
/// aligned and no loop has a remainder. Only reads that every lane makes
/// (under no guard, branch or short-circuit) are loaded four-wide, so the
/// loads read nothing the lanes would not.
#[derive(Clone, Debug, Default)]
pub struct Wide {
    pub lens: Vec<Dim>,
    /// The tensors loaded four-wide, each with the loop (an index into
    /// `lens`) it is loaded in: its last extent must also be at least that
    /// loop's length.
    pub reads: BTreeSet<(VarId, usize)>,
}

impl Wide {
    /// Whether a kernel's four-wide needs (`KernelCx::wide`) include a loop:
    /// without one, its four-wide twin is the plain kernel again.
    pub fn has_loops(wide: Option<&Wide>) -> bool {
        wide.is_some_and(|w| !w.lens.is_empty())
    }
}

/// The four-wide loop whose body is being emitted: its position (`__q`)
/// is a multiple of four and the body is emitted once per lane.
struct WideLoop {
    /// Variables equal to `__q + lane` (the loop's index, and the axes of
    /// row tensors inlined at it).
    vars: HashSet<VarId>,
    lane: usize,
    /// Variables defined before the loop: reads whose other indices
    /// mention only these (or inputs) are hoisted into four-wide loads.
    before: HashSet<VarId>,
    loads: Vec<WideLoad>,
}

/// A four-wide load of a wide loop: the tensor and its indices before the
/// last (C), the load's name and its declaration.
struct WideLoad {
    key: (VarId, Vec<String>),
    name: String,
    decl: String,
}

/// A row tensor of a `Stmt::Rows` prelude (see `KernelCx::row_fn`).
#[derive(Clone)]
pub struct RowFn {
    name: String,
    axes: Vec<(VarId, Dim, Dim)>,
    body: Expr,
}

/// Emission state of one kernel.
pub struct KernelCx<'a> {
    pub f: &'a Function,
    pub p: &'a Program,
    /// Check every read (`Options::checked`).
    pub all_checked: bool,
    pub sites: &'a mut Vec<Site>,
    /// Variables defined inside the kernel.
    local: HashSet<VarId>,
    /// Variables the kernel reads from outside.
    pub inputs: BTreeSet<Input>,
    /// Scalar functions called, emitted as `__device__` functions: id
    /// and text, each after the functions it calls.
    pub callees: Vec<(FuncId, String)>,
    /// Scalar functions being emitted (a call of one is recursion).
    in_progress: HashSet<FuncId>,
    /// Recurrences kept in a circular buffer: their window's axis and
    /// number of slots, and their logical extents (what checked reads
    /// compare with).
    pub windows: HashMap<VarId, (usize, u64, Vec<Dim>)>,
    /// In a kernel whose block works together (`Some`): the statements,
    /// run by every thread of the block, that compute its top-level
    /// reductions as block trees, and the extents of their loops.
    pub block: Option<(String, Vec<Vec<Dim>>)>,
    /// Who shares those reductions: the block, or each warp.
    pub team: Team,
    /// Row tensors of a `Stmt::Rows` prelude, computed where they are read
    /// (a lambda in the kernel, see `row_fn`) rather than stored.
    row_fns: HashMap<VarId, RowFn>,
    /// In a kernel whose team loops take four consecutive points per
    /// thread (`Some`, only `f32` and 16-bit reads are loaded four-wide,
    /// `vec4_type`): what its
    /// launch needs.
    pub wide: Option<Wide>,
    wide_loop: Option<WideLoop>,
    /// How many guards, branches and short-circuit operands enclose the
    /// expression being emitted (a read under one is not hoisted).
    guarded: u32,
    /// In a kernel over a definition's flat positions (`Some(axes)`): reads
    /// whose indices are the axes in order are `tensor[__p]` (the host
    /// launches it only when those tensors have the output's shape).
    pub flat: Option<Vec<VarId>>,
    /// How many binders (reductions, where-clauses, blocks, branches)
    /// enclose the expression being emitted: only a reduction outside all
    /// of them is evaluated by the whole block.
    depth: u32,
    next_tmp: u32,
}

impl<'a> KernelCx<'a> {
    pub fn new(f: &'a Function, p: &'a Program, all_checked: bool, sites: &'a mut Vec<Site>) -> KernelCx<'a> {
        KernelCx {
            f,
            p,
            all_checked,
            sites,
            local: HashSet::new(),
            inputs: BTreeSet::new(),
            callees: Vec::new(),
            in_progress: HashSet::new(),
            windows: HashMap::new(),
            block: None,
            team: Team::Block,
            row_fns: HashMap::new(),
            wide: None,
            wide_loop: None,
            guarded: 0,
            flat: None,
            depth: 0,
            next_tmp: 0,
        }
    }

    fn name(&self, v: VarId) -> Result<String, Failure> {
        match self.f.vars.get(v.0 as usize) {
            Some(info) => Ok(c_name(&info.name)),
            None => Err(Failure::Bug(format!("variable {} is not declared", v.0))),
        }
    }

    fn tmp(&mut self, what: &str) -> String {
        self.next_tmp += 1;
        format!("__{what}{}", self.next_tmp)
    }

    /// Declares `v` as defined inside the kernel.
    pub fn define(&mut self, v: VarId) -> Result<String, Failure> {
        self.local.insert(v);
        self.name(v)
    }

    /// A scalar variable's C name, recording it as an input when it comes
    /// from outside.
    fn scalar_var(&mut self, v: VarId) -> Result<String, Failure> {
        if !self.local.contains(&v) {
            self.inputs.insert(Input::Scalar(v));
        }
        self.name(v)
    }

    /// The C name of extent `axis` of tensor `v` (an input).
    fn extent(&mut self, v: VarId, axis: usize) -> Result<String, Failure> {
        self.inputs.insert(Input::Tensor(v));
        Ok(format!("__d{axis}_{}", self.name(v)?))
    }

    /// A dimension expression as C.
    pub fn dim(&mut self, d: &Dim) -> Result<String, Failure> {
        for v in d.vars() {
            let v = VarId(v.0);
            if self.f.vars.get(v.0 as usize).is_none() {
                return Err(Failure::Bug(format!("dimension mentions undeclared variable {}", v.0)));
            }
            if !self.local.contains(&v) {
                self.inputs.insert(Input::Scalar(v));
            }
        }
        let vars = &self.f.vars;
        Ok(super::dim::c_long_long(d, &|v: DimVar| c_name(&vars[v.0 as usize].name)))
    }

    fn site(&mut self, s: Site) -> usize {
        self.sites.push(s);
        self.sites.len()
    }

    /// The offset of `indices` (C expressions) in the row-major tensor `v`.
    fn offset(&mut self, v: VarId, indices: &[String]) -> Result<String, Failure> {
        let mut off = String::new();
        for (axis, i) in indices.iter().enumerate() {
            if axis == 0 {
                off = i.clone();
            } else {
                let d = self.extent(v, axis)?;
                off = format!("({off}) * {d} + {i}");
            }
        }
        if indices.is_empty() {
            off = "0".to_string();
        }
        Ok(off)
    }

    /// A scalar expression as C.
    pub fn expr(&mut self, e: &Expr) -> Result<String, Failure> {
        let k = match &e.ty {
            Repr::Scalar(k) => *k,
            other => {
                return Err(Failure::Unsupported(format!("values of type `{}` inside a kernel", show_repr(other))))
            }
        };
        let t = c_type(k);
        Ok(match &e.kind {
            ExprKind::Lit(l) => literal(l, k)?,
            ExprKind::Var(v) => self.scalar_var(*v)?,
            ExprKind::Dim(d) => format!("(({t}){})", self.dim(d)?),
            ExprKind::Len { tensor, axis } => format!("(({t}){})", self.extent(*tensor, *axis)?),
            ExprKind::Unary(op, x) => {
                let x = self.expr(x)?;
                match (op, k) {
                    (UnOp::Neg, k) if k.is_float() => format!("(-{x})"),
                    (UnOp::Neg, _) => format!("(({t})(0ULL - (__ein_u64)({x})))"),
                    (UnOp::Not, ScalarKind::Bool) => format!("(!{x})"),
                    (UnOp::Not, _) => format!("(({t})~({x}))"),
                }
            }
            ExprKind::Binary(op, a, b) => self.binary(*op, a, b, k)?,
            ExprKind::Cast(x, to) => {
                let from = match x.ty {
                    Repr::Scalar(from) => from,
                    _ => return Err(Failure::Bug("a cast of a non-scalar".to_string())),
                };
                let x = self.expr(x)?;
                cast(&x, from, *to)
            }
            ExprKind::Intrinsic(i, args) => self.intrinsic(*i, args, k)?,
            ExprKind::Call { func, args } => self.call(*func, args)?,
            ExprKind::Read { tensor, indices, checked } => {
                self.read(*tensor, indices, *checked || self.all_checked, k)?
            }
            ExprKind::Reduce { op, loops, wheres, body } if self.block.is_some() && self.depth == 0 => {
                match self.block_reduce(*op, loops, wheres, body, k)? {
                    Some(name) => name,
                    None => self.nested(|cx| cx.reduce(*op, loops, wheres, body, k))?,
                }
            }
            ExprKind::Reduce { op, loops, wheres, body } => self.nested(|cx| cx.reduce(*op, loops, wheres, body, k))?,
            ExprKind::Guarded { wheres, body } => self.conditional(true, |cx| {
                let mut s = format!("[&]() -> {t} {{ ");
                cx.wheres(wheres, &mut s, &format!("return ({t})0;"))?;
                let v = cx.expr(body)?;
                let _ = write!(s, "return {v}; }}()");
                Ok(s)
            })?,
            ExprKind::If { cond, then, els } => {
                let c = self.expr(cond)?;
                let (a, b) = self.conditional(true, |cx| Ok((cx.expr(then)?, cx.expr(els)?)))?;
                format!("({c} ? {a} : {b})")
            }
            ExprKind::Block { stmts, result } => self.nested(|cx| cx.block_expr(stmts, result, t))?,
            other => return Err(Failure::Unsupported(format!("{} inside a kernel", describe(other)))),
        })
    }

    /// Emits under one more binder (see `depth`).
    fn nested<R>(&mut self, f: impl FnOnce(&mut Self) -> Result<R, Failure>) -> Result<R, Failure> {
        self.depth += 1;
        let r = f(self);
        self.depth -= 1;
        r
    }

    /// `nested`, for code that runs only when a guard, branch or
    /// short-circuit lets it (`when`: whether it is conditional at all).
    fn conditional<R>(&mut self, when: bool, f: impl FnOnce(&mut Self) -> Result<R, Failure>) -> Result<R, Failure> {
        self.guarded += u32::from(when);
        let r = self.nested(f);
        self.guarded -= u32::from(when);
        r
    }

    fn block_expr(&mut self, stmts: &[Stmt], result: &Expr, t: &str) -> Result<String, Failure> {
        let mut s = format!("[&]() -> {t} {{ ");
        for st in stmts {
            let decl = self
                .scalar_let(st)?
                .ok_or_else(|| Failure::Unsupported("statements other than scalar `let` inside a kernel".into()))?;
            let _ = write!(s, "{decl} ");
        }
        let v = self.expr(result)?;
        let _ = write!(s, "return {v}; }}()");
        Ok(s)
    }

    /// `const T name = value;` for a scalar `let`; `None` for any other
    /// statement (kernels hold no other).
    pub fn scalar_let(&mut self, st: &Stmt) -> Result<Option<String>, Failure> {
        let Stmt::Let { var, value } = st else { return Ok(None) };
        let Repr::Scalar(vk) = value.ty else { return Ok(None) };
        let v = self.expr(value)?;
        let name = self.define(*var)?;
        Ok(Some(format!("const {} {name} = {v};", c_type(vk))))
    }

    fn binary(&mut self, op: BinOp, a: &Expr, b: &Expr, k: ScalarKind) -> Result<String, Failure> {
        let operand = scalar_kind(&a.ty)?;
        let x = self.expr(a)?;
        // The right operand of `&&` and `||` runs only sometimes.
        let y =
            if matches!(op, BinOp::And | BinOp::Or) { self.conditional(true, |cx| cx.expr(b))? } else { self.expr(b)? };
        let t = c_type(k);
        let wrapping = operand.is_int() && operand != ScalarKind::Bool;
        Ok(match op {
            BinOp::Add | BinOp::Sub | BinOp::Mul if wrapping => {
                let o = op.symbol();
                format!("(({t})((__ein_u64)({x}) {o} (__ein_u64)({y})))")
            }
            BinOp::Add | BinOp::Sub | BinOp::Mul => format!("({x} {} {y})", op.symbol()),
            BinOp::Div | BinOp::Rem if wrapping => {
                let (f, s) = if op == BinOp::Div { ("__ein_div", Site::DivZero) } else { ("__ein_rem", Site::RemZero) };
                let site = self.site(s);
                format!("{f}<{t}>({x}, {y}, {site}ULL, __status)")
            }
            BinOp::Div => format!("({x} / {y})"),
            BinOp::Rem => format!("{}({x}, {y})", math(operand, "fmod")),
            BinOp::Pow if operand.is_float() => {
                if scalar_kind(&b.ty)?.is_float() {
                    format!("{}({x}, {y})", math(operand, "pow"))
                } else {
                    format!("__ein_powi<{t}>({x}, (long long)({y}))")
                }
            }
            BinOp::Pow => {
                let site = self.site(Site::NegativePower);
                format!("__ein_ipow<{t}, {}>({x}, {y}, {site}ULL, __status)", c_type(scalar_kind(&b.ty)?))
            }
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => {
                format!("({x} {} {y})", op.symbol())
            }
            BinOp::And => format!("({x} && {y})"),
            BinOp::Or => format!("({x} || {y})"),
        })
    }

    fn intrinsic(&mut self, i: Intrinsic, args: &[Expr], k: ScalarKind) -> Result<String, Failure> {
        let mut xs = Vec::new();
        for a in args {
            xs.push(self.expr(a)?);
        }
        let arg =
            |n: usize| xs.get(n).cloned().ok_or_else(|| Failure::Bug(format!("`{}` lacks an argument", i.name())));
        let t = c_type(k);
        let unary_float = |name: &str| -> Result<String, Failure> {
            if !k.is_float() {
                return Err(Failure::Unsupported(format!("`{}` of `{}` inside a kernel", i.name(), k.name())));
            }
            Ok(format!("{}({})", math(k, name), arg(0)?))
        };
        Ok(match i {
            Intrinsic::Exp => unary_float("exp")?,
            Intrinsic::Ln => unary_float("log")?,
            Intrinsic::Log10 => unary_float("log10")?,
            Intrinsic::Log2 => unary_float("log2")?,
            Intrinsic::Log1p => unary_float("log1p")?,
            Intrinsic::Expm1 => unary_float("expm1")?,
            Intrinsic::Sqrt => unary_float("sqrt")?,
            Intrinsic::Sin => unary_float("sin")?,
            Intrinsic::Cos => unary_float("cos")?,
            Intrinsic::Tan => unary_float("tan")?,
            Intrinsic::Asin => unary_float("asin")?,
            Intrinsic::Acos => unary_float("acos")?,
            Intrinsic::Atan => unary_float("atan")?,
            Intrinsic::Sinh => unary_float("sinh")?,
            Intrinsic::Cosh => unary_float("cosh")?,
            Intrinsic::Tanh => unary_float("tanh")?,
            Intrinsic::Asinh => unary_float("asinh")?,
            Intrinsic::Acosh => unary_float("acosh")?,
            Intrinsic::Atanh => unary_float("atanh")?,
            Intrinsic::Erf => unary_float("erf")?,
            Intrinsic::Sigmoid => {
                if !k.is_float() {
                    return Err(Failure::Unsupported(format!("`sigmoid` of `{}` inside a kernel", k.name())));
                }
                format!("(({t})1 / (({t})1 + {}(-{})))", math(k, "exp"), arg(0)?)
            }
            Intrinsic::Abs if k.is_float() => format!("{}({})", math(k, "fabs"), arg(0)?),
            Intrinsic::Abs => {
                let x = arg(0)?;
                format!("({x} < ({t})0 ? ({t})(0ULL - (__ein_u64)({x})) : {x})")
            }
            Intrinsic::Floor | Intrinsic::Ceil | Intrinsic::Round | Intrinsic::Trunc if !k.is_float() => arg(0)?,
            Intrinsic::Floor => unary_float("floor")?,
            Intrinsic::Ceil => unary_float("ceil")?,
            Intrinsic::Round => unary_float("round")?,
            Intrinsic::Trunc => unary_float("trunc")?,
            Intrinsic::Min | Intrinsic::Max if k.is_float() => {
                let f = if i == Intrinsic::Min { "fmin" } else { "fmax" };
                format!("{}({}, {})", math(k, f), arg(0)?, arg(1)?)
            }
            Intrinsic::Min | Intrinsic::Max => {
                let c = if i == Intrinsic::Min { "<" } else { ">" };
                let (x, y) = (arg(0)?, arg(1)?);
                format!(
                    "[&]() -> {t} {{ const {t} __a = {x}; const {t} __b = {y}; return __a {c} __b ? __a : __b; }}()"
                )
            }
            Intrinsic::Atan2 if k.is_float() => format!("{}({}, {})", math(k, "atan2"), arg(0)?, arg(1)?),
            Intrinsic::Powf if k.is_float() => format!("{}({}, {})", math(k, "pow"), arg(0)?, arg(1)?),
            Intrinsic::Powi if k.is_float() => format!("__ein_powi<{t}>({}, (long long)({}))", arg(0)?, arg(1)?),
            Intrinsic::IntPow => {
                let e = args.get(1).map(|a| scalar_kind(&a.ty)).transpose()?.unwrap_or(k);
                let site = self.site(Site::NegativePower);
                format!("__ein_ipow<{t}, {}>({}, {}, {site}ULL, __status)", c_type(e), arg(0)?, arg(1)?)
            }
            other => return Err(Failure::Unsupported(format!("`{}` inside a kernel", other.name()))),
        })
    }

    /// A call of a scalar function: a `__device__` function in the same
    /// translation unit.
    fn call(&mut self, id: FuncId, args: &[Expr]) -> Result<String, Failure> {
        let callee = self.p.get(id).ok_or_else(|| Failure::Bug(format!("call of unknown function {}", id.0)))?;
        let func = &callee.name;
        let scalar_only = callee.params.iter().all(|&p| matches!(callee.var(p).ty, Repr::Scalar(_)))
            && matches!(callee.ret, Repr::Scalar(_));
        if !scalar_only {
            return Err(Failure::Unsupported(format!(
                "calling `{func}` (which takes or returns tensors) inside an elementwise expression"
            )));
        }
        let c_fn = format!("__ein_fn_{}", func);
        if self.in_progress.contains(&id) {
            return Err(Failure::Unsupported(format!("the recursive function `{func}`")));
        }
        if !self.callees.iter().any(|(n, _)| *n == id) {
            self.in_progress.insert(id);
            let text = device_function(callee, &c_fn, self)?;
            self.in_progress.remove(&id);
            self.callees.push((id, text));
        }
        let mut xs = Vec::new();
        for a in args {
            xs.push(self.expr(a)?);
        }
        xs.push("__status".to_string());
        Ok(format!("{c_fn}({})", xs.join(", ")))
    }

    /// Row tensor `t` of a `Stmt::Rows` prelude as a C lambda over its
    /// axes, declared in the kernel (after the prelude values it reads):
    /// on a GPU, recomputing an elementwise row term where it is read
    /// costs less than storing and reloading it.
    pub fn row_fn(&mut self, t: &TensorDef) -> Result<String, Failure> {
        let name = self.define(t.var)?;
        let mut params = Vec::new();
        for a in &t.axes {
            params.push(format!("long long {}", self.define(a.index)?));
        }
        let value = self.nested(|cx| cx.expr(&t.body))?;
        let axes = t.axes.iter().map(|a| (a.index, a.start.clone(), a.extent.clone())).collect();
        self.row_fns.insert(t.var, RowFn { name: name.clone(), axes, body: t.body.clone() });
        Ok(format!("        auto {name} = [&]({}) -> {} {{ return {value}; }};\n", params.join(", "), c_type(t.elem)))
    }

    /// Makes this a kernel whose top-level reductions `team` shares, with
    /// four-wide team loops when `wide`.
    pub fn share(&mut self, team: Team, wide: bool) {
        self.block = Some((String::new(), Vec::new()));
        self.team = team;
        if wide {
            self.wide = Some(Wide::default());
        }
    }

    /// The lanes of a four-wide team loop of length `len` at position `__q`
    /// (a multiple of four): `lane_body` once per lane (given the lane),
    /// with the loop's index `index` defined as `__q + lane`, after the
    /// four-wide loads the lanes share.
    pub fn wide_body(
        &mut self,
        index: VarId,
        len: &Dim,
        mut lane_body: impl FnMut(&mut Self, usize) -> Result<String, Failure>,
    ) -> Result<String, Failure> {
        if let Some(wide) = &mut self.wide {
            wide.lens.push(len.clone());
        }
        // Row tensors' axes are bound again in every lane they are inlined
        // into: no load may be hoisted over them.
        let mut before = self.local.clone();
        for r in self.row_fns.values() {
            for (a, _, _) in &r.axes {
                before.remove(a);
            }
        }
        let name = self.define(index)?;
        self.wide_loop = Some(WideLoop { vars: HashSet::from([index]), lane: 0, before, loads: Vec::new() });
        let mut lanes = String::new();
        let mut built = Ok(());
        for lane in 0..WIDTH {
            if let Some(w) = &mut self.wide_loop {
                w.lane = lane;
            }
            match lane_body(self, lane) {
                Ok(body) => {
                    let _ = writeln!(lanes, "            {{ const long long {name} = __q + {lane}; {body} }}");
                }
                Err(e) => {
                    built = Err(e);
                    break;
                }
            }
        }
        let w = self.wide_loop.take();
        built?;
        let loads: String = w.iter().flat_map(|w| &w.loads).map(|l| format!("            {}\n", l.decl)).collect();
        Ok(loads + &lanes)
    }

    /// The lanes of a four-wide loop (see `wide_body`) that compute `value`
    /// at their points into the four-wide `__o` (`vec4_type`), which the
    /// loop stores.
    pub fn wide_values(&mut self, index: VarId, len: &Dim, value: &Expr) -> Result<String, Failure> {
        self.wide_body(index, len, |cx, lane| Ok(format!("__o.{} = {};", LANE_FIELDS[lane], cx.expr(value)?)))
    }

    /// In a four-wide loop, a read of `tensor` whose last index is the
    /// loop's position and whose others were fixed before the loop: the
    /// lane's component of a four-wide load (`None`: an ordinary read).
    fn wide_read(&mut self, tensor: VarId, indices: &[Expr], k: ScalarKind) -> Result<Option<String>, Failure> {
        let Some(w) = &self.wide_loop else { return Ok(None) };
        let Some((last, others)) = indices.split_last() else { return Ok(None) };
        let at_lane = matches!(last.kind, ExprKind::Var(v) if w.vars.contains(&v));
        let mut mentioned = HashSet::new();
        for i in others {
            crate::ir::visit::visit_var_uses(i, &mut |v| {
                mentioned.insert(v);
            });
        }
        let fixed = mentioned.iter().all(|v| !w.vars.contains(v) && (!self.local.contains(v) || w.before.contains(v)));
        let Some(vec4) = vec4_type(k) else { return Ok(None) };
        if !at_lane || !fixed || self.guarded > 0 || self.windows.contains_key(&tensor) {
            return Ok(None);
        }
        let lane = w.lane;
        let mut idx = Vec::new();
        for i in others {
            idx.push(self.expr(i)?);
        }
        let key = (tensor, idx.clone());
        let name =
            match self.wide_loop.as_ref().and_then(|w| w.loads.iter().find(|l| l.key == key)).map(|l| l.name.clone()) {
                Some(name) => name,
                None => {
                    let name = self.tmp("v");
                    let t = self.name(tensor)?;
                    idx.push("__q".into());
                    let off = self.offset(tensor, &idx)?;
                    self.inputs.insert(Input::Tensor(tensor));
                    if let Some(wide) = &mut self.wide {
                        let at = wide.lens.len().saturating_sub(1);
                        wide.reads.insert((tensor, at));
                    }
                    let decl = format!("const {vec4} {name} = __ldg((const {vec4}*)({t} + ({off})));");
                    if let Some(w) = &mut self.wide_loop {
                        w.loads.push(WideLoad { key, name: name.clone(), decl });
                    }
                    name
                }
            };
        Ok(Some(format!("{name}.{}", LANE_FIELDS[lane])))
    }

    fn read(&mut self, tensor: VarId, indices: &[Expr], checked: bool, k: ScalarKind) -> Result<String, Failure> {
        if let Some(axes) = &self.flat {
            if !checked && is_identity(indices, axes) {
                self.inputs.insert(Input::Tensor(tensor));
                return Ok(format!("{}[__p]", self.name(tensor)?));
            }
        }
        if let Some(RowFn { name, axes, body }) = self.row_fns.get(&tensor).cloned() {
            let mut idx = Vec::new();
            for i in indices {
                idx.push(self.expr(i)?);
            }
            if !checked && self.wide_loop.is_some() {
                // Inlined, so that its reads at the lane are four-wide too.
                let mut s = format!("[&]() -> {} {{ ", c_type(k));
                for ((a, _, _), (i, e)) in axes.iter().zip(idx.iter().zip(indices)) {
                    let _ = write!(s, "const long long {} = {i}; ", self.name(*a)?);
                    if let (Some(w), ExprKind::Var(v)) = (&mut self.wide_loop, &e.kind) {
                        if w.vars.contains(v) {
                            w.vars.insert(*a);
                        }
                    }
                }
                let value = self.nested(|cx| cx.expr(&body))?;
                if let Some(w) = &mut self.wide_loop {
                    for (a, _, _) in &axes {
                        w.vars.remove(a);
                    }
                }
                let _ = write!(s, "return {value}; }}()");
                return Ok(s);
            }
            if !checked {
                return Ok(format!("{name}({})", idx.join(", ")));
            }
            // As a checked read of memory: out of range records the failure
            // and reads zero.
            let t = c_type(k);
            let mut s = format!("[&]() -> {t} {{ ");
            let mut names = Vec::new();
            for (axis, (i, (_, start, extent))) in idx.iter().zip(&axes).enumerate() {
                let (start, extent) = (self.dim(start)?, self.dim(extent)?);
                let source = self.f.var(tensor).source_name.clone();
                let site = self.site(Site::Index { tensor: source, axis });
                let v = self.tmp("i");
                let _ = write!(
                    s,
                    "const long long {v} = {i}; if (!__ein_in({v} - ({start}), {extent}, {site}ULL, __status)) return ({t})0; "
                );
                names.push(v);
            }
            let _ = write!(s, "return {name}({}); }}()", names.join(", "));
            return Ok(s);
        }
        let info =
            self.f.vars.get(tensor.0 as usize).ok_or_else(|| Failure::Bug("read of undeclared tensor".into()))?;
        let rank = match info.ty {
            Repr::Tensor(_, r) => r,
            _ => {
                return Err(Failure::Unsupported(format!(
                    "reading `{}`, which is not a fixed-rank tensor",
                    info.source_name
                )))
            }
        };
        if rank != indices.len() {
            return Err(Failure::Bug(format!("read of `{}` with {} indices", info.name, indices.len())));
        }
        if !checked {
            if let Some(lane) = self.wide_read(tensor, indices, k)? {
                return Ok(lane);
            }
        }
        let source = info.source_name.clone();
        let name = self.name(tensor)?;
        self.inputs.insert(Input::Tensor(tensor));
        let mut idx = Vec::new();
        for i in indices {
            idx.push(self.expr(i)?);
        }
        let window = self.windows.get(&tensor).cloned();
        // A circular buffer keeps the last `slots` steps along its axis.
        let masked = |cx: &mut Self, idx: &[String]| -> Result<String, Failure> {
            let idx: Vec<String> = idx
                .iter()
                .enumerate()
                .map(|(axis, i)| match &window {
                    Some((w, slots, _)) if *w == axis => format!("(({i}) & {}LL)", slots - 1),
                    _ => i.clone(),
                })
                .collect();
            cx.offset(tensor, &idx)
        };
        if !checked {
            let off = masked(self, &idx)?;
            return Ok(format!("{name}[{off}]"));
        }
        let t = c_type(k);
        let mut s = format!("[&]() -> {t} {{ ");
        let mut names = Vec::new();
        // A tensor held with halo rows in a sharded function: its position
        // `p` holds the global row `p - lo + offset`, checked against the
        // whole axis (`ir::ShardParts::edges`).
        let parts = self.f.shard.as_ref().and_then(|s| s.parts.as_ref());
        let edges: Vec<(usize, VarId, i64, VarId, VarId)> = parts
            .map(|p| {
                p.edges
                    .iter()
                    .filter(|e| e.tensor == tensor)
                    .map(|e| (e.axis, e.source, e.lo, p.global, p.offset))
                    .collect()
            })
            .unwrap_or_default();
        for (axis, i) in idx.iter().enumerate() {
            let v = self.tmp("i");
            if let Some(&(_, src, lo, global, offset)) = edges.iter().find(|e| e.0 == axis) {
                let (g, o) = (self.dim(&Dim::var(DimVar(global.0)))?, self.dim(&Dim::var(DimVar(offset.0)))?);
                let site = self.site(Site::Index { tensor: self.f.var(src).source_name.clone(), axis });
                let w = self.tmp("g");
                let _ = write!(
                    s,
                    "const long long {w} = ({i}) - ({lo}LL) + ({o}); if (!__ein_in({w}, {g}, {site}ULL, __status)) return ({t})0; const long long {v} = {w} - ({o}) + ({lo}LL); "
                );
                names.push(v);
                continue;
            }
            let d = match &window {
                Some((_, _, logical)) => {
                    let e = logical.get(axis).ok_or_else(|| Failure::Bug("a window without extents".into()))?;
                    self.dim(e)?
                }
                None => self.extent(tensor, axis)?,
            };
            let site = self.site(Site::Index { tensor: source.clone(), axis });
            let _ =
                write!(s, "const long long {v} = {i}; if (!__ein_in({v}, {d}, {site}ULL, __status)) return ({t})0; ");
            names.push(v);
        }
        let off = masked(self, &names)?;
        let _ = write!(s, "return {name}[{off}]; }}()");
        Ok(s)
    }

    /// Where entries as statements; `on_fail` runs when a guard is false.
    fn wheres(&mut self, wheres: &[WhereEntry], s: &mut String, on_fail: &str) -> Result<(), Failure> {
        for w in wheres {
            match w {
                WhereEntry::Bind(v, e) => {
                    let vk = scalar_kind(&e.ty)?;
                    let value = self.expr(e)?;
                    let name = self.define(*v)?;
                    let _ = write!(s, "const {} {name} = {value}; ", c_type(vk));
                }
                WhereEntry::Guard(e) => {
                    let c = self.expr(e)?;
                    let _ = write!(s, "if (!({c})) {on_fail} ");
                }
            }
        }
        Ok(())
    }

    fn reduce(
        &mut self,
        op: RedOp,
        loops: &[Loop],
        wheres: &[WhereEntry],
        body: &Expr,
        k: ScalarKind,
    ) -> Result<String, Failure> {
        let t = c_type(k);
        let Some((init, combine)) = reduction(op, k) else {
            return self.arg_reduce(op, loops, wheres, body);
        };
        let acc = self.tmp("acc");
        let mut s = format!("[&]() -> {t} {{ {t} {acc} = ({t})({init}); ");
        for l in loops {
            let (start, end) = (self.dim(&l.start)?, self.dim(&l.end)?);
            let i = self.define(l.index)?;
            let _ = write!(s, "for (long long {i} = {start}; {i} < {end}; ++{i}) {{ ");
        }
        self.wheres(wheres, &mut s, "continue;")?;
        let guards = has_guard(wheres);
        let v = self.conditional(guards, |cx| cx.expr(body))?;
        s.push_str(&combine(&acc, &v, t));
        for _ in loops {
            s.push_str(" }");
        }
        let _ = write!(s, " return {acc}; }}()");
        Ok(s)
    }

    /// A reduction outside every binder, in a kernel whose team (block or
    /// warp, `self.team`) works together: each thread reduces a strided
    /// share of the points of the loop nest, then the team combines the
    /// partial results. `None` when the reduction does not fit (an
    /// `argmax`, or loops whose bounds depend on each other).
    fn block_reduce(
        &mut self,
        op: RedOp,
        loops: &[Loop],
        wheres: &[WhereEntry],
        body: &Expr,
        k: ScalarKind,
    ) -> Result<Option<String>, Failure> {
        let Some((init, combine)) = reduction(op, k) else { return Ok(None) };
        let own: HashSet<u32> = loops.iter().map(|l| l.index.0).collect();
        if loops.iter().any(|l| l.start.vars().iter().chain(l.end.vars().iter()).any(|v| own.contains(&v.0))) {
            return Ok(None);
        }
        let t = c_type(k);
        let (red, sh) = (self.tmp("red"), self.tmp("sh"));
        let extents: Vec<Dim> = loops.iter().map(|l| l.end.sub(&l.start)).collect();
        let mut ext = Vec::new();
        for e in &extents {
            ext.push(self.dim(e)?);
        }
        let m = if ext.is_empty() { "1LL".to_string() } else { ext.join(" * ") };
        let (rank, size) = self.team.rank_and_size();
        let shared =
            if self.team == Team::Block { format!("        __shared__ {t} {sh}[32];\n") } else { String::new() };
        let mut s = format!("{shared}        {t} {red};\n        {{\n            {t} __acc = ({t})({init});\n");
        let guards = has_guard(wheres);
        let lane = |cx: &mut Self, _: usize| {
            cx.conditional(guards, |cx| {
                let mut w = String::new();
                cx.wheres(wheres, &mut w, "continue;")?;
                let v = cx.expr(body)?;
                Ok(format!("do {{ {w}{} }} while (false);", combine("__acc", &v, t)))
            })
        };
        match loops {
            // Four consecutive points per thread and step, read by
            // four-wide loads where they can be.
            [l] if self.wide.is_some() && l.start.as_constant() == Some(0) => {
                let lanes = self.wide_body(l.index, &extents[0], lane)?;
                let _ = write!(
                    s,
                    "            #pragma unroll 4\n            for (long long __q4 = {rank}; __q4 < ({m}) / 4; __q4 += {size}) {{\n                \
                     const long long __q = __q4 * 4;\n{lanes}            }}\n"
                );
            }
            _ => {
                let _ = write!(
                    s,
                    "            #pragma unroll 4\n            for (long long __q = {rank}; __q < {m}; __q += {size}) {{\n                long long __r = __q;\n"
                );
                for (i, l) in loops.iter().enumerate().rev() {
                    let start = self.dim(&l.start)?;
                    let name = self.define(l.index)?;
                    if i == 0 {
                        let _ = writeln!(s, "                const long long {name} = {start} + __r;");
                    } else {
                        let _ = writeln!(
                            s,
                            "                const long long {name} = {start} + __ein_split(&__r, {e});",
                            e = ext[i]
                        );
                    }
                }
                let body = lane(self, 0)?;
                let _ = writeln!(s, "                {body}\n            }}");
            }
        }
        // Each warp combines its lanes by shuffles (after which every lane
        // holds the warp's result); in a block, the first warp then combines
        // the warps' results (at most 32) from shared memory.
        let lanes = combine("__acc", "__ein_shfl(__acc, __s)", t);
        let _ = writeln!(s, "            for (int __s = 16; __s > 0; __s >>= 1) {{ {lanes} }}");
        match self.team {
            Team::Warp => {
                let _ = write!(s, "            {red} = __acc;\n        }}\n");
            }
            Team::Block => {
                let _ = write!(
                    s,
                    "            if ((threadIdx.x & 31) == 0) {sh}[threadIdx.x >> 5] = __acc;\n            __syncthreads();\n            \
                     if (threadIdx.x < 32) {{\n                __acc = threadIdx.x < (blockDim.x >> 5) ? {sh}[threadIdx.x] : ({t})({init});\n                \
                     for (int __s = 16; __s > 0; __s >>= 1) {{ {lanes} }}\n                if (threadIdx.x == 0) {sh}[0] = __acc;\n            }}\n            \
                     __syncthreads();\n            {red} = {sh}[0];\n            __syncthreads();\n        }}\n"
                );
            }
        }
        if let Some((prelude, lens)) = &mut self.block {
            prelude.push_str(&s);
            lens.push(extents);
        }
        Ok(Some(red))
    }
}

/// The identity of a reduction and how it adds a term, or `None` for
/// `argmax`/`argmin`.
fn reduction(op: RedOp, k: ScalarKind) -> Option<(String, Combine)> {
    Some(match op {
        RedOp::Sum if k.is_float() => ("0".into(), |acc, v, _| format!("{acc} = {acc} + {v};")),
        RedOp::Sum => ("0".into(), |acc, v, t| format!("{acc} = ({t})((__ein_u64){acc} + (__ein_u64)({v}));")),
        RedOp::Prod if k.is_float() => ("1".into(), |acc, v, _| format!("{acc} = {acc} * {v};")),
        RedOp::Prod => ("1".into(), |acc, v, t| format!("{acc} = ({t})((__ein_u64){acc} * (__ein_u64)({v}));")),
        RedOp::Max => (lowest(k), |acc, v, t| format!("{{ const {t} __v = {v}; if (__v > {acc}) {acc} = __v; }}")),
        RedOp::Min => (highest(k), |acc, v, t| format!("{{ const {t} __v = {v}; if (__v < {acc}) {acc} = __v; }}")),
        RedOp::All => ("true".into(), |acc, v, _| format!("{acc} = {acc} && {v};")),
        RedOp::Any => ("false".into(), |acc, v, _| format!("{acc} = {acc} || {v};")),
        RedOp::ArgMax | RedOp::ArgMin => return None,
    })
}

impl KernelCx<'_> {
    /// `argmax`/`argmin`: the index of the first extremum (one loop) or its
    /// row-major position in the loop nest (several), -1 when no term is
    /// left; as the CPU computes it.
    fn arg_reduce(&mut self, op: RedOp, loops: &[Loop], wheres: &[WhereEntry], body: &Expr) -> Result<String, Failure> {
        let bk = scalar_kind(&body.ty)?;
        let bt = c_type(bk);
        let (acc, best, found, seen) = (self.tmp("acc"), self.tmp("best"), self.tmp("found"), self.tmp("seen"));
        let mut s = format!(
            "[&]() -> long long {{ long long {acc} = -1; {bt} {best} = ({bt})0; bool {found} = false; long long {seen} = 0; "
        );
        let mut index = None;
        for l in loops {
            let (start, end) = (self.dim(&l.start)?, self.dim(&l.end)?);
            let i = self.define(l.index)?;
            let _ = write!(s, "for (long long {i} = {start}; {i} < {end}; ++{i}) {{ ");
            index = Some(i);
        }
        let here = match (loops.len(), index) {
            (1, Some(i)) => i,
            _ => {
                let _ = write!(s, "const long long __here = {seen}++; ");
                "__here".to_string()
            }
        };
        if loops.is_empty() {
            s.push_str("do { ");
        }
        self.wheres(wheres, &mut s, "continue;")?;
        let guards = has_guard(wheres);
        let v = self.conditional(guards, |cx| cx.expr(body))?;
        let cmp = if op == RedOp::ArgMax { ">" } else { "<" };
        let _ = write!(
            s,
            "{{ const {bt} __v = {v}; if (!{found} || __v {cmp} {best}) {{ {best} = __v; {acc} = {here}; {found} = true; }} }}"
        );
        if loops.is_empty() {
            s.push_str(" } while (false);");
        }
        for _ in loops {
            s.push_str(" }");
        }
        let _ = write!(s, " return {acc}; }}()");
        Ok(s)
    }
}

/// Adds a term to a reduction's accumulator: `(acc, term, C type)` to a
/// C statement.
type Combine = fn(&str, &str, &str) -> String;

/// A scalar function as a `__device__` function named `c_fn`; its checks
/// report through the caller's sites.
fn device_function(g: &Function, c_fn: &str, outer: &mut KernelCx<'_>) -> Result<String, Failure> {
    if !g.entry.is_empty() {
        return Err(Failure::Bug(format!("scalar function `{}` has entry checks", g.name)));
    }
    let mut cx = KernelCx::new(g, outer.p, outer.all_checked, outer.sites);
    cx.in_progress = outer.in_progress.clone();
    cx.callees = std::mem::take(&mut outer.callees);
    let mut params = Vec::new();
    for &p in &g.params {
        let k = scalar_kind(&g.var(p).ty)?;
        params.push(format!("{} {}", c_type(k), cx.define(p)?));
    }
    params.push("__ein_u64* __status".to_string());
    let ret = scalar_kind(&g.ret)?;
    let mut body = String::new();
    for s in &g.body {
        let decl = cx.scalar_let(s)?.ok_or_else(|| {
            Failure::Unsupported(format!(
                "the function `{}` inside a kernel (it has statements other than scalar `let`)",
                g.name
            ))
        })?;
        let _ = writeln!(body, "    {decl}");
    }
    let result = cx.expr(&g.result)?;
    if let Some(input) = cx.inputs.iter().next() {
        return Err(Failure::Bug(format!("scalar function `{}` reads {input:?} from outside", g.name)));
    }
    outer.callees = std::mem::take(&mut cx.callees);
    let mut text = String::new();
    let _ = write!(
        text,
        "static __device__ {} {c_fn}({}) {{\n{body}    return {result};\n}}\n",
        c_type(ret),
        params.join(", ")
    );
    Ok(text)
}

pub fn scalar_kind(ty: &Repr) -> Result<ScalarKind, Failure> {
    match ty {
        Repr::Scalar(k) => Ok(*k),
        other => Err(Failure::Unsupported(format!("values of type `{}` inside a kernel", show_repr(other)))),
    }
}

/// A C math function for `k`: `expf` for `f32`, `exp` for `f64`.
fn math(k: ScalarKind, name: &str) -> String {
    if k == ScalarKind::F32 {
        format!("{name}f")
    } else {
        name.to_string()
    }
}

fn literal(l: &Literal, k: ScalarKind) -> Result<String, Failure> {
    if k.is_half() {
        // Stored as bits: the literal's f32 value, rounded.
        let f = literal(l, ScalarKind::F32)?;
        return Ok(cast(&f, ScalarKind::F32, k));
    }
    let t = c_type(k);
    Ok(match l {
        Literal::Bool(b) => b.to_string(),
        Literal::Int(v) if k.is_float() => float_text(&v.to_string(), k),
        Literal::Int(v) => {
            if k == ScalarKind::I64 && *v == i128::from(i64::MIN) {
                "(-9223372036854775807LL - 1LL)".to_string()
            } else if *v < 0 {
                format!("(({t})-{}LL)", v.unsigned_abs())
            } else {
                format!("(({t}){v}ULL)")
            }
        }
        Literal::Float(text) => float_text(text, k),
        Literal::Str(_) => return Err(Failure::Unsupported("strings inside a kernel".into())),
    })
}

fn float_text(text: &str, k: ScalarKind) -> String {
    let mut s = text.replace('_', "");
    if !s.contains(['.', 'e', 'E']) {
        s.push_str(".0");
    }
    if s.ends_with('.') {
        s.push('0');
    }
    if k == ScalarKind::F32 {
        format!("{s}f")
    } else {
        s
    }
}

/// `x as to`: integer conversions wrap, float to integer saturates (NaN is
/// zero), as in Rust.
fn cast(x: &str, from: ScalarKind, to: ScalarKind) -> String {
    // Half-precision values are bits: converted through f32 (exactly from
    // them, rounded to nearest even to them).
    if from.is_half() {
        let f = format!("__ein_{}_to_f32({x})", from.name());
        return if to == ScalarKind::F32 { f } else { cast(&f, ScalarKind::F32, to) };
    }
    if to.is_half() {
        let f = if from == ScalarKind::F32 { x.to_string() } else { cast(x, from, ScalarKind::F32) };
        return format!("__ein_f32_to_{}({f})", to.name());
    }
    let t = c_type(to);
    if from.is_float() && !to.is_float() && to != ScalarKind::Bool {
        let (lo, hi) = (lowest(to), highest(to));
        format!("__ein_f2i<{t}, {}>({x}, ({t})({lo}), ({t})({hi}))", c_type(from))
    } else if to == ScalarKind::Bool {
        format!("({x} != 0)")
    } else {
        format!("(({t})({x}))")
    }
}

/// The identity of `max`: the least value (`-inf` for floats).
fn lowest(k: ScalarKind) -> String {
    match k {
        ScalarKind::F16 => "__ein_f16_bits(0xfc00)".into(),
        ScalarKind::BF16 => "__ein_bf16_bits(0xff80)".into(),
        ScalarKind::F32 => "__int_as_float(0xff800000)".into(),
        ScalarKind::F64 => "__longlong_as_double(0xfff0000000000000LL)".into(),
        ScalarKind::Bool => "false".into(),
        ScalarKind::I8 => "-128".into(),
        ScalarKind::I16 => "-32768".into(),
        ScalarKind::I32 => "(-2147483647 - 1)".into(),
        ScalarKind::I64 => "(-9223372036854775807LL - 1LL)".into(),
        ScalarKind::U8 | ScalarKind::U32 | ScalarKind::U64 => "0".into(),
    }
}

/// The identity of `min`: the greatest value (`inf` for floats).
fn highest(k: ScalarKind) -> String {
    match k {
        ScalarKind::F16 => "__ein_f16_bits(0x7c00)".into(),
        ScalarKind::BF16 => "__ein_bf16_bits(0x7f80)".into(),
        ScalarKind::F32 => "__int_as_float(0x7f800000)".into(),
        ScalarKind::F64 => "__longlong_as_double(0x7ff0000000000000LL)".into(),
        ScalarKind::Bool => "true".into(),
        ScalarKind::I8 => "127".into(),
        ScalarKind::I16 => "32767".into(),
        ScalarKind::I32 => "2147483647".into(),
        ScalarKind::I64 => "9223372036854775807LL".into(),
        ScalarKind::U8 => "255".into(),
        ScalarKind::U32 => "4294967295U".into(),
        ScalarKind::U64 => "18446744073709551615ULL".into(),
    }
}

pub fn show_repr(r: &Repr) -> String {
    match r {
        Repr::Scalar(k) => k.name().to_string(),
        Repr::Tensor(k, n) => format!("[{}; rank {n}]", k.name()),
        Repr::Dyn(k) => format!("[{}; *]", k.name()),
        Repr::Jagged(k) => format!("jagged[{}]", k.name()),
        Repr::Tuple(items) => format!("({})", items.iter().map(show_repr).collect::<Vec<_>>().join(", ")),
        Repr::Str => "str".into(),
        Repr::Strs => "[str]".into(),
        Repr::Unit => "()".into(),
    }
}

/// What an expression is, for "not supported" messages.
pub fn describe(e: &ExprKind) -> &'static str {
    match e {
        ExprKind::View { .. } => "sub-tensor views",
        ExprKind::Tuple(_) | ExprKind::Field(..) => "tuples",
        ExprKind::ArrayLit { .. } => "tensor literals",
        ExprKind::Format(_) => "string formatting",
        ExprKind::Print(_) => "`print`",
        ExprKind::Assert { .. } => "`assert`",
        ExprKind::Collect { .. } => "comprehensions",
        ExprKind::JaggedLit { .. } | ExprKind::JaggedRow { .. } => "jagged arrays",
        ExprKind::DynShape { .. } | ExprKind::ShapeOf { .. } | ExprKind::DynMap { .. } => "dynamic-rank tensors",
        ExprKind::LoadNpy { .. } | ExprKind::SaveNpy { .. } | ExprKind::Fs { .. } => "file input and output",
        ExprKind::ShapeCast { .. } => "tensor conversions (`as [T; ...]`)",
        ExprKind::Call { .. } => "calls",
        ExprKind::Reduce { .. } => "reductions",
        _ => "this expression",
    }
}

/// The whole translation unit of a kernel: prelude, the `__device__`
/// functions it calls, then `body` (the `__global__` function).
pub fn translation_unit(name: &str, function: &str, callees: &[(FuncId, String)], body: &str) -> String {
    let mut s = format!("// einlang: kernel `{name}` of `{function}`\n");
    s.push_str(PRELUDE);
    for (_, c) in callees {
        s.push_str(c);
    }
    s.push_str(body);
    s
}

/// Whether `indices` are the variables `axes`, in order.
pub fn is_identity(indices: &[Expr], axes: &[VarId]) -> bool {
    indices.len() == axes.len() && indices.iter().zip(axes).all(|(i, a)| matches!(i.kind, ExprKind::Var(v) if v == *a))
}

/// Whether `wheres` has a guard (what follows it runs conditionally).
fn has_guard(wheres: &[WhereEntry]) -> bool {
    wheres.iter().any(|w| matches!(w, WhereEntry::Guard(_)))
}
