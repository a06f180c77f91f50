//! Fused chunk kernels. A [`Program`] is the element-wise expression one chunk task
//! evaluates: creation leaves (constants, random numbers, ranges), input chunks, unary and
//! binary operations, casts, broadcasts, and reductions over the last axis. It is evaluated
//! over blocks of [`BLOCK`] output elements (numexpr-style), so a chain of operations never
//! materializes a full-size temporary; a trailing reduction folds each block into a
//! [`Partial`] at once.
//!
//! Random numbers are counter-based: element `i` (its flat index in the whole tensor) of a
//! tensor drawn with seed `s` is a pure function of `(s, i)`, so results are reproducible
//! for a seed whatever the chunking and evaluation order.

use crate::data::{Buf, Chunk, ChunkRef, DType, Elem, Scalar, numel};
pub use crate::linalg::LinOp;
use crate::with_buf;

/// Output elements evaluated at a time: a few node buffers of this size stay in L1/L2.
pub const BLOCK: usize = 4096;

/// A unary operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub enum UnOp {
    /// `-x`
    Neg,
    /// `|x|`
    Abs,
    /// `sqrt(x)`
    Sqrt,
    /// `exp(x)`
    Exp,
    /// `ln(x)`
    Log,
    /// `sin(x)`
    Sin,
    /// `cos(x)`
    Cos,
    /// logical not
    Not,
}

/// A binary operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub enum BinOp {
    /// `a + b`
    Add,
    /// `a - b`
    Sub,
    /// `a * b`
    Mul,
    /// `a / b` (true division)
    Div,
    /// `a ** b`
    Pow,
    /// `a < b`
    Lt,
    /// `a <= b`
    Le,
    /// `a > b`
    Gt,
    /// `a >= b`
    Ge,
    /// `a == b`
    Eq,
    /// `a != b`
    Ne,
    /// logical and
    And,
    /// logical or
    Or,
    /// element-wise maximum
    Maximum,
    /// element-wise minimum
    Minimum,
}

impl BinOp {
    /// Whether the result is a bool array.
    pub fn is_comparison(self) -> bool {
        matches!(self, BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::Eq | BinOp::Ne)
    }
}

/// A reduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub enum ReduceOp {
    /// sum
    Sum,
    /// product
    Prod,
    /// minimum
    Min,
    /// maximum
    Max,
    /// mean
    Mean,
    /// variance (population, numpy's default `ddof=0`)
    Var,
    /// standard deviation (`ddof=0`)
    Std,
    /// any non-zero
    Any,
    /// all non-zero
    All,
    /// index of the minimum (the first one; the first NaN if any)
    ArgMin,
    /// index of the maximum (the first one; the first NaN if any)
    ArgMax,
}

impl ReduceOp {
    /// The dtype of the reduction of `x`, as numpy computes it.
    pub fn out_dtype(self, x: DType) -> DType {
        match self {
            ReduceOp::Sum | ReduceOp::Prod => match x {
                DType::Bool | DType::I32 | DType::I64 => DType::I64,
                f => f,
            },
            ReduceOp::Min | ReduceOp::Max => x,
            ReduceOp::Mean | ReduceOp::Var | ReduceOp::Std => match x {
                DType::F32 => DType::F32,
                _ => DType::F64,
            },
            ReduceOp::Any | ReduceOp::All => DType::Bool,
            ReduceOp::ArgMin | ReduceOp::ArgMax => DType::I64,
        }
    }

    /// Whether the reduction yields indices (and takes one axis at most).
    pub fn is_arg(self) -> bool {
        matches!(self, ReduceOp::ArgMin | ReduceOp::ArgMax)
    }
}

/// Which random distribution.
#[derive(Clone, Copy, Debug, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub enum RandKind {
    /// Uniform on `[low, high)`.
    Uniform {
        /// Lower bound.
        low: f64,
        /// Upper bound.
        high: f64,
    },
    /// Standard normal.
    Normal,
    /// Integers uniform on `[low, high)`.
    Int {
        /// Lower bound.
        low: i64,
        /// Upper bound (exclusive).
        high: i64,
    },
}

/// One node of a program; operands are indices of earlier nodes.
#[derive(Clone, Debug, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub enum Node {
    /// The task's `arg`-th input chunk.
    Input {
        /// Which input.
        arg: u32,
    },
    /// A constant.
    Const(Scalar),
    /// Random numbers: this chunk is the region at `offset` of a tensor of shape `full`.
    Random {
        /// The distribution.
        kind: RandKind,
        /// The tensor's seed.
        seed: u64,
        /// Where this chunk starts in the tensor.
        offset: Vec<u64>,
        /// The tensor's shape.
        full: Vec<u64>,
    },
    /// `start + step * (offset + i)` along one dimension.
    Arange {
        /// First value.
        start: f64,
        /// Increment.
        step: f64,
        /// This chunk's first index.
        offset: u64,
    },
    /// A unary operation.
    Unary {
        /// Which.
        op: UnOp,
        /// Operand.
        x: u32,
    },
    /// A binary operation (operands already of the same shape).
    Binary {
        /// Which.
        op: BinOp,
        /// Left operand.
        a: u32,
        /// Right operand.
        b: u32,
    },
    /// `c ? a : b`.
    Where {
        /// Condition.
        c: u32,
        /// Value where true.
        a: u32,
        /// Value where false.
        b: u32,
    },
    /// A cast.
    Cast {
        /// Operand.
        x: u32,
    },
    /// Broadcast of `x` (whose shape is the node's with some dimensions 1) to the node's shape.
    Broadcast {
        /// Operand.
        x: u32,
    },
    /// The transpose of the 2-d value `x`.
    Transpose {
        /// Operand.
        x: u32,
    },
    /// Axes of `x` permuted: output dimension `d` is `x`'s dimension `perm[d]`.
    Permute {
        /// Operand.
        x: u32,
        /// The permutation.
        perm: Vec<u32>,
    },
    /// A strided box of `x`: output index `i` (per dimension) reads `start + i * step`.
    View {
        /// Operand.
        x: u32,
        /// First index per dimension.
        start: Vec<u64>,
        /// Stride per dimension (not 0; negative walks backwards).
        step: Vec<i64>,
    },
    /// Parts placed at offsets of the output (concatenation, rechunking); together they
    /// cover it.
    Assemble {
        /// The parts.
        parts: Vec<u32>,
        /// Where each part starts in the output.
        offsets: Vec<Vec<u64>>,
    },
    /// The same elements in the same order, seen with the node's shape.
    Reshape {
        /// Operand.
        x: u32,
    },
    /// The elements of `x` where `m` is true, as a 1-d chunk whose length is known only
    /// after the run. Only the root of a program; its declared shape is `x`'s.
    Compress {
        /// Values.
        x: u32,
        /// Mask (same shape).
        m: u32,
    },
    /// A dense linear-algebra operation on whole matrices (float64 inside).
    Linalg {
        /// Which.
        op: LinOp,
        /// Operands.
        args: Vec<u32>,
    },
    /// Reduction of `x` over its last axis.
    ReduceLast {
        /// Which.
        op: ReduceOp,
        /// Operand.
        x: u32,
    },
}

/// What one chunk task evaluates; the last node is the result.
#[derive(Clone, Debug, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct Program {
    /// The nodes, operands first.
    pub nodes: Vec<Node>,
    /// The shape each node produces for this chunk.
    pub shapes: Vec<Vec<u64>>,
    /// The dtype each node produces.
    pub dtypes: Vec<DType>,
}

/// Errors of evaluating a program (a malformed program, or inputs that do not match it).
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum KernelError {
    /// The program refers to an input the task did not get, or one of another shape.
    #[error("input {arg}: {reason}")]
    BadInput {
        /// Which input.
        arg: u32,
        /// What is wrong.
        reason: String,
    },
    /// A numeric failure (a singular matrix, one that is not positive definite).
    #[error("{reason}")]
    Numeric {
        /// What failed, and the fix.
        reason: String,
    },
    /// A node refers to a later node or has an impossible shape.
    #[error("malformed program at node {node}: {reason}")]
    Malformed {
        /// Which node.
        node: usize,
        /// What is wrong.
        reason: String,
    },
}

#[inline(always)]
fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[inline(always)]
fn rand_bits(seed: u64, i: u64) -> u64 {
    splitmix(seed.wrapping_mul(0xD1B5_4A32_D192_ED03) ^ i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

#[inline(always)]
fn unit(bits: u64) -> f64 {
    (bits >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// Appends the uniform stream's elements `g..g + n` (`low + span · unit(rand_bits)`) to
/// `out`. On a CPU with AVX-512 the same arithmetic runs eight lanes at a time (7× faster
/// here); the bits are the same, as neither path fuses the multiply-add.
fn uniform_run(seed: u64, g: u64, n: usize, low: f64, span: f64, out: &mut Vec<f64>) {
    let start = out.len();
    out.resize(start + n, 0.0);
    let dst = &mut out[start..];
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("avx512dq") {
        // SAFETY: the CPU has the features the function is compiled for (checked above).
        unsafe { uniform_fill_avx512(seed, g, low, span, dst) };
        return;
    }
    uniform_fill(seed, g, low, span, dst);
}

#[inline(always)]
fn uniform_fill(seed: u64, g: u64, low: f64, span: f64, dst: &mut [f64]) {
    for (k, o) in dst.iter_mut().enumerate() {
        *o = low + span * unit(rand_bits(seed, g + k as u64));
    }
}

/// [`uniform_fill`] compiled for AVX-512 (64-bit lane multiplies and conversions).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx512vl")]
fn uniform_fill_avx512(seed: u64, g: u64, low: f64, span: f64, dst: &mut [f64]) {
    uniform_fill(seed, g, low, span, dst)
}

/// Flat indices in the whole tensor of elements `s..e` of a chunk at `offset`.
fn global_indices(shape: &[u64], offset: &[u64], full: &[u64], s: usize, e: usize, out: &mut Vec<u64>) {
    out.clear();
    let nd = shape.len();
    if nd == 0 {
        out.extend((s..e).map(|_| 0));
        return;
    }
    // Elements are contiguous in the tensor when the chunk spans every dimension but the first.
    if (1..nd).all(|d| shape[d] == full[d]) {
        let row: u64 = full[1..].iter().product();
        let base = offset[0] * row;
        out.extend((s as u64..e as u64).map(|k| base + k));
        return;
    }
    let mut idx = vec![0u64; nd];
    let mut rem = s as u64;
    for d in (0..nd).rev() {
        idx[d] = rem % shape[d];
        rem /= shape[d];
    }
    for _ in s..e {
        let mut g = 0u64;
        for d in 0..nd {
            g = g * full[d] + offset[d] + idx[d];
        }
        out.push(g);
        for d in (0..nd).rev() {
            idx[d] += 1;
            if idx[d] < shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

fn random(kind: RandKind, seed: u64, global: &[u64], dtype: DType) -> Buf {
    match kind {
        RandKind::Uniform { low, high } => {
            let span = high - low;
            let v: Vec<f64> = global.iter().map(|&i| low + span * unit(rand_bits(seed, i))).collect();
            Buf::F64(v).cast(dtype)
        }
        RandKind::Normal => {
            let v: Vec<f64> = global
                .iter()
                .map(|&i| {
                    let u1 = 1.0 - unit(rand_bits(seed ^ 0x5555_5555_5555_5555, i));
                    let u2 = unit(rand_bits(seed ^ 0xAAAA_AAAA_AAAA_AAAA, i));
                    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
                })
                .collect();
            Buf::F64(v).cast(dtype)
        }
        RandKind::Int { low, high } => {
            let span = (high - low).max(1) as u64;
            let v: Vec<i64> = global.iter().map(|&i| low + (rand_bits(seed, i) % span) as i64).collect();
            Buf::I64(v).cast(dtype)
        }
    }
}

macro_rules! float_unary {
    ($v:expr, $f:expr) => {{
        let f = $f;
        $v.iter().map(|&x| f(x)).collect()
    }};
}

fn unary(op: UnOp, x: Buf, out: DType) -> Buf {
    let x = match op {
        UnOp::Sqrt | UnOp::Exp | UnOp::Log | UnOp::Sin | UnOp::Cos => x.cast(out),
        UnOp::Not => x.cast(DType::Bool),
        UnOp::Neg | UnOp::Abs => x,
    };
    match (op, x) {
        (UnOp::Not, Buf::Bool(v)) => Buf::Bool(v.iter().map(|b| !b).collect()),
        (UnOp::Neg, Buf::Bool(v)) => Buf::Bool(v.iter().map(|b| !b).collect()),
        (UnOp::Abs, Buf::Bool(v)) => Buf::Bool(v),
        (UnOp::Neg, Buf::I32(v)) => Buf::I32(v.iter().map(|x| x.wrapping_neg()).collect()),
        (UnOp::Neg, Buf::I64(v)) => Buf::I64(v.iter().map(|x| x.wrapping_neg()).collect()),
        (UnOp::Abs, Buf::I32(v)) => Buf::I32(v.iter().map(|x| x.wrapping_abs()).collect()),
        (UnOp::Abs, Buf::I64(v)) => Buf::I64(v.iter().map(|x| x.wrapping_abs()).collect()),
        (op, Buf::F32(v)) => Buf::F32(match op {
            UnOp::Neg => float_unary!(v, |x: f32| -x),
            UnOp::Abs => float_unary!(v, f32::abs),
            UnOp::Sqrt => float_unary!(v, f32::sqrt),
            UnOp::Exp => float_unary!(v, f32::exp),
            UnOp::Log => float_unary!(v, f32::ln),
            UnOp::Sin => float_unary!(v, f32::sin),
            UnOp::Cos => float_unary!(v, f32::cos),
            UnOp::Not => unreachable!("cast to bool above"),
        }),
        (op, Buf::F64(v)) => Buf::F64(match op {
            UnOp::Neg => float_unary!(v, |x: f64| -x),
            UnOp::Abs => float_unary!(v, f64::abs),
            UnOp::Sqrt => float_unary!(v, f64::sqrt),
            UnOp::Exp => float_unary!(v, f64::exp),
            UnOp::Log => float_unary!(v, f64::ln),
            UnOp::Sin => float_unary!(v, f64::sin),
            UnOp::Cos => float_unary!(v, f64::cos),
            UnOp::Not => unreachable!("cast to bool above"),
        }),
        (op, x) => unreachable!("{op:?} on {:?} is rejected when the expression is built", x.dtype()),
    }
}

/// Integer powers that wrap as numpy's do, for any exponent (`wrapping_pow` takes a
/// `u32`, and truncating a larger one gives other numbers).
trait PowWrapping: Sized {
    fn pow_wrapping(self, exp: u64) -> Self;
}

macro_rules! pow_wrapping {
    ($t:ty) => {
        impl PowWrapping for $t {
            fn pow_wrapping(self, mut exp: u64) -> $t {
                let (mut base, mut acc): ($t, $t) = (self, 1);
                while exp > 0 {
                    if exp & 1 == 1 {
                        acc = acc.wrapping_mul(base);
                    }
                    base = base.wrapping_mul(base);
                    exp >>= 1;
                }
                acc
            }
        }
    };
}
pow_wrapping!(i32);
pow_wrapping!(i64);

/// Whether an integer buffer holds a negative value.
fn any_negative(b: &Buf) -> bool {
    match b {
        Buf::I32(v) => v.iter().any(|&x| x < 0),
        Buf::I64(v) => v.iter().any(|&x| x < 0),
        _ => false,
    }
}

/// numpy's refusal of an integer raised to a negative integer power (it has no integer
/// answer); the message is numpy's, with the fix.
pub const NEGATIVE_INTEGER_POWER: &str =
    "Integers to negative integer powers are not allowed (cast the base to float first)";

fn zip<T: Copy, R>(a: &[T], b: &[T], f: impl Fn(T, T) -> R) -> Vec<R> {
    a.iter().zip(b).map(|(&x, &y)| f(x, y)).collect()
}

macro_rules! arith {
    ($a:expr, $b:expr, $op:expr, $wrap:ident, int) => {
        match $op {
            BinOp::Add => Buf::$wrap(zip($a, $b, |x, y| x.wrapping_add(y))),
            BinOp::Sub => Buf::$wrap(zip($a, $b, |x, y| x.wrapping_sub(y))),
            BinOp::Mul => Buf::$wrap(zip($a, $b, |x, y| x.wrapping_mul(y))),
            // Negative exponents are refused before this (numpy's rule).
            BinOp::Pow => Buf::$wrap(zip($a, $b, |x, y| x.pow_wrapping(y.max(0) as u64))),
            BinOp::Maximum => Buf::$wrap(zip($a, $b, |x, y| if x >= y { x } else { y })),
            BinOp::Minimum => Buf::$wrap(zip($a, $b, |x, y| if x <= y { x } else { y })),
            other => arith!(@cmp $a, $b, other),
        }
    };
    ($a:expr, $b:expr, $op:expr, $wrap:ident, float) => {
        match $op {
            BinOp::Add => Buf::$wrap(zip($a, $b, |x, y| x + y)),
            BinOp::Sub => Buf::$wrap(zip($a, $b, |x, y| x - y)),
            BinOp::Mul => Buf::$wrap(zip($a, $b, |x, y| x * y)),
            BinOp::Div => Buf::$wrap(zip($a, $b, |x, y| x / y)),
            BinOp::Pow => Buf::$wrap(zip($a, $b, |x, y| x.powf(y))),
            // numpy's maximum/minimum propagate NaN.
            BinOp::Maximum => Buf::$wrap(zip($a, $b, |x, y| if x.is_nan() || x >= y { x } else { y })),
            BinOp::Minimum => Buf::$wrap(zip($a, $b, |x, y| if x.is_nan() || x <= y { x } else { y })),
            other => arith!(@cmp $a, $b, other),
        }
    };
    (@cmp $a:expr, $b:expr, $op:expr) => {
        match $op {
            BinOp::Lt => Buf::Bool(zip($a, $b, |x, y| x < y)),
            BinOp::Le => Buf::Bool(zip($a, $b, |x, y| x <= y)),
            BinOp::Gt => Buf::Bool(zip($a, $b, |x, y| x > y)),
            BinOp::Ge => Buf::Bool(zip($a, $b, |x, y| x >= y)),
            BinOp::Eq => Buf::Bool(zip($a, $b, |x, y| x == y)),
            BinOp::Ne => Buf::Bool(zip($a, $b, |x, y| x != y)),
            other => unreachable!("{other:?} is rejected for this dtype when the expression is built"),
        }
    };
}

/// The dtype a binary operation computes in.
pub fn compute_dtype(op: BinOp, a: DType, b: DType) -> DType {
    match op {
        BinOp::Div => DType::true_div(a, b),
        BinOp::And | BinOp::Or => DType::Bool,
        _ => DType::promote(a, b),
    }
}

/// The dtype a binary operation returns.
pub fn binary_dtype(op: BinOp, a: DType, b: DType) -> DType {
    if op.is_comparison() { DType::Bool } else { compute_dtype(op, a, b) }
}

/// Whether `binary` takes a one-element right operand as a scalar for `op` computed in
/// `t` (the float64 fast paths below); every other case needs it full length.
fn scalar_rhs(op: BinOp, t: DType) -> bool {
    t == DType::F64 && (matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div) || op.is_comparison())
}

fn binary(op: BinOp, a: Buf, b: Buf) -> Buf {
    let t = compute_dtype(op, a.dtype(), b.dtype());
    let (a, b) = (a.cast(t), b.cast(t));
    debug_assert!(b.len() == a.len() || (b.len() == 1 && scalar_rhs(op, t)), "operands of {op:?} differ in length");
    match (a, b) {
        // The common float case reuses the left operand's buffer; a one-element right
        // operand is a scalar (a constant), applied without a filled buffer.
        (Buf::F64(mut x), Buf::F64(y)) if matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div) => {
            let f = |a: f64, b: f64| match op {
                BinOp::Add => a + b,
                BinOp::Sub => a - b,
                BinOp::Mul => a * b,
                _ => a / b,
            };
            if y.len() == 1 && x.len() != 1 {
                let c = y[0];
                x.iter_mut().for_each(|v| *v = f(*v, c));
            } else {
                x.iter_mut().zip(&y).for_each(|(v, &w)| *v = f(*v, w));
            }
            Buf::F64(x)
        }
        (Buf::F64(x), Buf::F64(y)) if y.len() == 1 && x.len() != 1 && op.is_comparison() => {
            let c = y[0];
            Buf::Bool(match op {
                BinOp::Lt => x.iter().map(|&v| v < c).collect(),
                BinOp::Le => x.iter().map(|&v| v <= c).collect(),
                BinOp::Gt => x.iter().map(|&v| v > c).collect(),
                BinOp::Ge => x.iter().map(|&v| v >= c).collect(),
                BinOp::Eq => x.iter().map(|&v| v == c).collect(),
                _ => x.iter().map(|&v| v != c).collect(),
            })
        }
        (Buf::Bool(a), Buf::Bool(b)) => match op {
            BinOp::And | BinOp::Mul | BinOp::Minimum => Buf::Bool(zip(&a, &b, |x, y| x & y)),
            BinOp::Or | BinOp::Add | BinOp::Maximum => Buf::Bool(zip(&a, &b, |x, y| x | y)),
            other => arith!(@cmp &a, &b, other),
        },
        (Buf::I32(a), Buf::I32(b)) => arith!(&a, &b, op, I32, int),
        (Buf::I64(a), Buf::I64(b)) => arith!(&a, &b, op, I64, int),
        (Buf::F32(a), Buf::F32(b)) => arith!(&a, &b, op, F32, float),
        (Buf::F64(a), Buf::F64(b)) => arith!(&a, &b, op, F64, float),
        _ => unreachable!("both cast to {t:?}"),
    }
}

fn select(c: Buf, a: Buf, b: Buf, out: DType) -> Buf {
    let Buf::Bool(c) = c.cast(DType::Bool) else { unreachable!("cast to bool") };
    let (a, b) = (a.cast(out), b.cast(out));
    fn pick<T: Copy>(c: &[bool], a: &[T], b: &[T]) -> Vec<T> {
        c.iter().zip(a.iter().zip(b)).map(|(&c, (&x, &y))| if c { x } else { y }).collect()
    }
    match (a, b) {
        (Buf::Bool(a), Buf::Bool(b)) => Buf::Bool(pick(&c, &a, &b)),
        (Buf::I32(a), Buf::I32(b)) => Buf::I32(pick(&c, &a, &b)),
        (Buf::I64(a), Buf::I64(b)) => Buf::I64(pick(&c, &a, &b)),
        (Buf::F32(a), Buf::F32(b)) => Buf::F32(pick(&c, &a, &b)),
        (Buf::F64(a), Buf::F64(b)) => Buf::F64(pick(&c, &a, &b)),
        _ => unreachable!("both cast to {out:?}"),
    }
}

/// A reduction in progress: enough state to combine with others and to finish.
#[derive(Clone, Debug, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct Partial {
    /// The reduction.
    pub op: ReduceOp,
    /// Shape of the (kept) result elements.
    pub shape: Vec<u64>,
    /// Elements folded into each result element.
    pub count: u64,
    /// Sum, product, min, max, any or all; the running mean for var/std.
    pub acc: Buf,
    /// Sum of squared deviations from the mean (var/std only).
    pub m2: Option<Vec<f64>>,
    /// Where each extreme was found (argmin/argmax only).
    pub idx: Option<Vec<i64>>,
}

fn acc_dtype(op: ReduceOp, x: DType) -> DType {
    match op {
        ReduceOp::Mean | ReduceOp::Var | ReduceOp::Std => DType::F64,
        ReduceOp::Any | ReduceOp::All => DType::Bool,
        ReduceOp::Min | ReduceOp::Max | ReduceOp::ArgMin | ReduceOp::ArgMax => x,
        ReduceOp::Sum | ReduceOp::Prod => op.out_dtype(x),
    }
}

fn identity(op: ReduceOp, dtype: DType) -> Scalar {
    match (op, dtype) {
        (ReduceOp::Prod, DType::I64) => Scalar::I64(1),
        (ReduceOp::Prod, DType::F32) => Scalar::F32(1.0),
        (ReduceOp::Prod, _) => Scalar::F64(1.0),
        (ReduceOp::All, _) => Scalar::Bool(true),
        (ReduceOp::Any, _) => Scalar::Bool(false),
        (_, DType::I64) => Scalar::I64(0),
        (_, DType::F32) => Scalar::F32(0.0),
        (_, DType::Bool) => Scalar::Bool(false),
        (_, DType::I32) => Scalar::I32(0),
        (_, DType::F64) => Scalar::F64(0.0),
    }
}

impl Partial {
    /// Reduces `x` (elements of groups of `group` consecutive values, one group per result
    /// element) into a partial of `shape`.
    pub fn of_groups(op: ReduceOp, x: Buf, group: usize, shape: Vec<u64>) -> Partial {
        if group == 0 {
            // Groups of nothing (an empty axis): every result element is empty.
            return Partial::empty(op, x.dtype(), shape);
        }
        let n = x.len() / group;
        let count = group as u64;
        if let (ReduceOp::Sum, Buf::Bool(v)) = (op, &x) {
            let acc = (0..n).map(|i| v[i * group..(i + 1) * group].iter().filter(|b| **b).count() as i64).collect();
            return Partial { op, shape, count, acc: Buf::I64(acc), m2: None, idx: None };
        }
        match op {
            ReduceOp::ArgMin | ReduceOp::ArgMax => {
                let max = op == ReduceOp::ArgMax;
                let mut idx = Vec::with_capacity(n);
                let acc = with_buf!(&x, v => {
                    let mut best = Vec::with_capacity(n);
                    for g in 0..n {
                        let run = &v[g * group..(g + 1) * group];
                        let mut k = 0;
                        for (i, &y) in run.iter().enumerate().skip(1) {
                            if better(y, run[k], max) {
                                k = i;
                            }
                        }
                        idx.push(k as i64);
                        best.push(run[k]);
                    }
                    Elem::wrap(best)
                });
                Partial { op, shape, count, acc, m2: None, idx: Some(idx) }
            }
            ReduceOp::Mean | ReduceOp::Var | ReduceOp::Std => {
                let Buf::F64(v) = x.cast(DType::F64) else { unreachable!() };
                let mut mean = Vec::with_capacity(n);
                let mut m2 = Vec::with_capacity(n);
                for g in v.chunks(group.max(1)).take(n) {
                    let m = g.iter().sum::<f64>() / group as f64;
                    mean.push(m);
                    if op != ReduceOp::Mean {
                        m2.push(g.iter().map(|x| (x - m) * (x - m)).sum());
                    }
                }
                let m2 = (op != ReduceOp::Mean).then_some(m2);
                Partial { op, shape, count, acc: Buf::F64(mean), m2, idx: None }
            }
            _ => {
                let t = acc_dtype(op, x.dtype());
                let x = x.cast(t);
                let acc = fold_groups(op, &x, group, n);
                Partial { op, shape, count, acc, m2: None, idx: None }
            }
        }
    }

    /// An empty partial of `shape` (combining with it changes nothing).
    pub fn empty(op: ReduceOp, dtype: DType, shape: Vec<u64>) -> Partial {
        let n = numel(&shape);
        let t = acc_dtype(op, dtype);
        let m2 = matches!(op, ReduceOp::Var | ReduceOp::Std).then(|| vec![0.0; n]);
        let idx = op.is_arg().then(|| vec![0; n]);
        Partial { op, shape, count: 0, acc: Buf::filled(identity(op, t), n), m2, idx }
    }

    /// Rewrites the found positions (argmin/argmax), e.g. from chunk-local to global.
    pub fn map_idx(&mut self, f: impl Fn(usize, i64) -> i64) {
        if let Some(idx) = self.idx.as_mut() {
            for (g, i) in idx.iter_mut().enumerate() {
                *i = f(g, *i);
            }
        }
    }

    /// Folds `other` (same op and shape) into `self`.
    pub fn combine(&mut self, other: &Partial) {
        if other.count == 0 {
            return;
        }
        if self.count == 0 {
            *self = other.clone();
            return;
        }
        match self.op {
            ReduceOp::Mean | ReduceOp::Var | ReduceOp::Std => {
                let (Buf::F64(ma), Buf::F64(mb)) = (&mut self.acc, &other.acc) else { unreachable!() };
                let (na, nb) = (self.count as f64, other.count as f64);
                let n = na + nb;
                for i in 0..ma.len() {
                    let delta = mb[i] - ma[i];
                    if let (Some(m2a), Some(m2b)) = (self.m2.as_mut(), other.m2.as_ref()) {
                        m2a[i] += m2b[i] + delta * delta * na * nb / n;
                    }
                    ma[i] += delta * nb / n;
                }
            }
            ReduceOp::ArgMin | ReduceOp::ArgMax => {
                let max = self.op == ReduceOp::ArgMax;
                let (Some(ia), Some(ib)) = (self.idx.as_mut(), other.idx.as_ref()) else {
                    unreachable!("arg partials keep positions")
                };
                fn pick<T: Elem>(a: &mut [T], b: &[T], ia: &mut [i64], ib: &[i64], max: bool) {
                    for i in 0..a.len() {
                        let take = if better(b[i], a[i], max) {
                            true
                        } else {
                            // Equal (or both NaN): the first position wins, as in numpy.
                            !better(a[i], b[i], max) && ib[i] < ia[i]
                        };
                        if take {
                            a[i] = b[i];
                            ia[i] = ib[i];
                        }
                    }
                }
                match (&mut self.acc, &other.acc) {
                    (Buf::Bool(a), Buf::Bool(b)) => pick(a, b, ia, ib, max),
                    (Buf::I32(a), Buf::I32(b)) => pick(a, b, ia, ib, max),
                    (Buf::I64(a), Buf::I64(b)) => pick(a, b, ia, ib, max),
                    (Buf::F32(a), Buf::F32(b)) => pick(a, b, ia, ib, max),
                    (Buf::F64(a), Buf::F64(b)) => pick(a, b, ia, ib, max),
                    (a, b) => unreachable!("arg partials of {:?} and {:?}", a.dtype(), b.dtype()),
                }
            }
            op => {
                let both = {
                    let mut joined = self.acc.clone();
                    joined.extend(&other.acc);
                    joined
                };
                // Interleave: element i of each side forms a group of two.
                let n = self.acc.len();
                let idx: Vec<usize> = (0..n).flat_map(|i| [i, i + n]).collect();
                self.acc = fold_groups(op, &both.gather(&idx), 2, n);
            }
        }
        self.count += other.count;
    }

    /// The reduction's result, as a chunk of `shape`.
    pub fn finish(&self, x_dtype: DType) -> Chunk {
        let out = self.op.out_dtype(x_dtype);
        let data = match self.op {
            ReduceOp::Mean => {
                let Buf::F64(m) = &self.acc else { unreachable!() };
                let v = if self.count == 0 { vec![f64::NAN; m.len()] } else { m.clone() };
                Buf::F64(v).cast(out)
            }
            ReduceOp::Var | ReduceOp::Std => {
                let m2 = self.m2.as_ref().expect("var keeps m2");
                let v: Vec<f64> = m2
                    .iter()
                    .map(|s| {
                        let var = s / self.count as f64;
                        if self.op == ReduceOp::Std { var.sqrt() } else { var }
                    })
                    .collect();
                Buf::F64(v).cast(out)
            }
            ReduceOp::ArgMin | ReduceOp::ArgMax => Buf::I64(self.idx.clone().expect("arg partials keep positions")),
            _ => self.acc.clone().cast(out),
        };
        Chunk { shape: self.shape.clone(), data }
    }
}

fn fold_groups(op: ReduceOp, x: &Buf, group: usize, n: usize) -> Buf {
    fn fold<T: Copy>(v: &[T], group: usize, n: usize, init: T, f: impl Fn(T, T) -> T) -> Vec<T> {
        (0..n).map(|i| v[i * group..(i + 1) * group].iter().fold(init, |a, &b| f(a, b))).collect()
    }
    match (op, x) {
        (ReduceOp::Any, Buf::Bool(v)) => Buf::Bool(fold(v, group, n, false, |a, b| a | b)),
        (ReduceOp::All, Buf::Bool(v)) => Buf::Bool(fold(v, group, n, true, |a, b| a & b)),
        (ReduceOp::Min | ReduceOp::Max, Buf::Bool(v)) => {
            let max = op == ReduceOp::Max;
            Buf::Bool((0..n).map(|i| fold_minmax(&v[i * group..(i + 1) * group], max)).collect())
        }
        (ReduceOp::Sum, Buf::I64(v)) => Buf::I64(fold(v, group, n, 0, |a, b| a.wrapping_add(b))),
        (ReduceOp::Prod, Buf::I64(v)) => Buf::I64(fold(v, group, n, 1, |a, b| a.wrapping_mul(b))),
        (ReduceOp::Sum, Buf::F32(v)) => {
            Buf::F32((0..n).map(|i| pairwise_f32(&v[i * group..(i + 1) * group])).collect())
        }
        (ReduceOp::Sum, Buf::F64(v)) => Buf::F64((0..n).map(|i| pairwise(&v[i * group..(i + 1) * group])).collect()),
        (ReduceOp::Prod, Buf::F32(v)) => Buf::F32(fold(v, group, n, 1.0, |a, b| a * b)),
        (ReduceOp::Prod, Buf::F64(v)) => Buf::F64(fold(v, group, n, 1.0, |a, b| a * b)),
        (ReduceOp::Min | ReduceOp::Max, x) => {
            let max = op == ReduceOp::Max;
            with_buf!(x, v => Elem::wrap((0..n).map(|i| fold_minmax(&v[i * group..(i + 1) * group], max)).collect()))
        }
        (op, x) => unreachable!("{op:?} accumulates in another type than {:?}", x.dtype()),
    }
}

/// Whether `y` beats the current extreme `x` (NaN beats everything but NaN, as numpy's
/// argmax returns the first NaN).
fn better<T: Elem>(y: T, x: T, max: bool) -> bool {
    #[allow(clippy::eq_op)]
    let (y_nan, x_nan) = (y != y, x != x);
    if x_nan {
        return false;
    }
    y_nan || (max && y > x) || (!max && y < x)
}

/// Min or max propagating NaN, as numpy does.
fn fold_minmax<T: Elem>(v: &[T], max: bool) -> T {
    let mut best = v[0];
    for &x in &v[1..] {
        #[allow(clippy::eq_op)]
        let x_nan = x != x;
        #[allow(clippy::eq_op)]
        let best_nan = best != best;
        if best_nan {
            break;
        }
        if x_nan || (max && x > best) || (!max && x < best) {
            best = x;
        }
    }
    best
}

/// Pairwise summation (numpy's, for accuracy on long runs).
fn pairwise(v: &[f64]) -> f64 {
    if v.len() <= 128 {
        let mut acc = [0.0f64; 8];
        let mut chunks = v.chunks_exact(8);
        for c in &mut chunks {
            for k in 0..8 {
                acc[k] += c[k];
            }
        }
        acc.iter().sum::<f64>() + chunks.remainder().iter().sum::<f64>()
    } else {
        let mid = v.len() / 2;
        pairwise(&v[..mid]) + pairwise(&v[mid..])
    }
}

fn pairwise_f32(v: &[f32]) -> f32 {
    if v.len() <= 128 {
        v.iter().sum()
    } else {
        let mid = v.len() / 2;
        pairwise_f32(&v[..mid]) + pairwise_f32(&v[mid..])
    }
}

struct Eval<'a> {
    p: &'a Program,
    inputs: &'a [ChunkRef<'a>],
    /// Whole values of broadcast operands, evaluated once.
    whole: Vec<Option<Buf>>,
    scratch: Vec<u64>,
    /// Nodes read by more than one operation (`x * x`): their current block is kept.
    shared: Vec<bool>,
    memo: Vec<Option<(usize, usize, Buf)>>,
}

impl<'a> Eval<'a> {
    fn new(p: &'a Program, inputs: &'a [ChunkRef<'a>]) -> Self {
        let mut uses = vec![0u32; p.nodes.len()];
        for node in &p.nodes {
            let ops: &[u32] = match node {
                Node::Unary { x, .. }
                | Node::Cast { x }
                | Node::Broadcast { x }
                | Node::Transpose { x }
                | Node::Permute { x, .. }
                | Node::View { x, .. }
                | Node::Reshape { x }
                | Node::ReduceLast { x, .. } => std::slice::from_ref(x),
                Node::Assemble { parts, .. } => parts,
                Node::Linalg { args, .. } => args,
                Node::Compress { x, m } => &[*x, *m],
                Node::Binary { a, b, .. } => &[*a, *b],
                Node::Where { c, a, b } => &[*c, *a, *b],
                _ => &[],
            };
            for &o in ops {
                if let Some(u) = uses.get_mut(o as usize) {
                    *u += 1;
                }
            }
        }
        Eval {
            p,
            inputs,
            whole: vec![None; p.nodes.len()],
            scratch: Vec::new(),
            shared: uses.iter().map(|&u| u > 1).collect(),
            memo: vec![None; p.nodes.len()],
        }
    }

    fn eval(&mut self, n: usize, s: usize, e: usize) -> Result<Buf, KernelError> {
        if !self.shared[n] {
            return self.eval_node(n, s, e);
        }
        if let Some((ms, me, b)) = &self.memo[n] {
            if (*ms, *me) == (s, e) {
                return Ok(b.clone());
            }
        }
        let b = self.eval_node(n, s, e)?;
        self.memo[n] = Some((s, e, b.clone()));
        Ok(b)
    }

    fn eval_node(&mut self, n: usize, s: usize, e: usize) -> Result<Buf, KernelError> {
        let shape = &self.p.shapes[n];
        let dtype = self.p.dtypes[n];
        let check = |x: u32| -> Result<usize, KernelError> {
            let x = x as usize;
            if x >= n {
                return Err(KernelError::Malformed { node: n, reason: format!("operand {x} is not an earlier node") });
            }
            Ok(x)
        };
        Ok(match &self.p.nodes[n] {
            Node::Input { arg } => {
                let c = self.inputs.get(*arg as usize).ok_or_else(|| KernelError::BadInput {
                    arg: *arg,
                    reason: format!("the task got {} inputs", self.inputs.len()),
                })?;
                if !c.shape_is(shape) {
                    return Err(KernelError::BadInput {
                        arg: *arg,
                        reason: format!("shape {:?}, expected {:?}", c.shape(), shape),
                    });
                }
                c.slice(s, e).cast(dtype)
            }
            Node::Const(v) => Buf::filled(*v, e - s).cast(dtype),
            Node::Random { kind, seed, offset, full } => {
                if offset.len() != shape.len() || full.len() != shape.len() {
                    return Err(KernelError::Malformed { node: n, reason: "random region of another rank".into() });
                }
                let nd = shape.len();
                if let (RandKind::Uniform { low, high }, DType::F64, true) = (kind, dtype, nd > 0) {
                    let span = high - low;
                    if (1..nd).all(|d| shape[d] == full[d]) {
                        // The chunk is one contiguous run of the tensor.
                        let base = offset[0] * full[1..].iter().product::<u64>();
                        let mut v = Vec::with_capacity(e - s);
                        uniform_run(*seed, base + s as u64, e - s, *low, span, &mut v);
                        return Ok(Buf::F64(v));
                    }
                    // Otherwise each row of the chunk is a contiguous run: walk them.
                    let last = shape[nd - 1] as usize;
                    let mut v = Vec::with_capacity(e - s);
                    let mut k = s;
                    while k < e {
                        let (row, col) = (k / last, k % last);
                        let run = (last - col).min(e - k);
                        let mut g = 0u64;
                        let mut rem = row as u64;
                        let mut idx = vec![0u64; nd];
                        for d in (0..nd - 1).rev() {
                            idx[d] = rem % shape[d];
                            rem /= shape[d];
                        }
                        idx[nd - 1] = col as u64;
                        for d in 0..nd {
                            g = g * full[d] + offset[d] + idx[d];
                        }
                        uniform_run(*seed, g, run, *low, span, &mut v);
                        k += run;
                    }
                    return Ok(Buf::F64(v));
                }
                let mut g = std::mem::take(&mut self.scratch);
                global_indices(shape, offset, full, s, e, &mut g);
                let out = random(*kind, *seed, &g, dtype);
                self.scratch = g;
                out
            }
            Node::Arange { start, step, offset } => {
                let v: Vec<f64> = (s..e).map(|i| start + step * (*offset + i as u64) as f64).collect();
                Buf::F64(v).cast(dtype)
            }
            Node::Unary { op, x } => {
                let x = check(*x)?;
                let v = self.eval(x, s, e)?;
                unary(*op, v, dtype)
            }
            Node::Binary { op, a, b } => {
                let (a, b) = (check(*a)?, check(*b)?);
                let va = self.eval(a, s, e)?;
                // A constant right operand stays one element where `binary` takes a scalar.
                let t = compute_dtype(*op, self.p.dtypes[a], self.p.dtypes[b]);
                let vb = match &self.p.nodes[b] {
                    Node::Const(c) if e - s > 1 && scalar_rhs(*op, t) => Buf::filled(*c, 1).cast(self.p.dtypes[b]),
                    _ => self.eval(b, s, e)?,
                };
                if *op == BinOp::Pow && matches!(t, DType::I32 | DType::I64) && any_negative(&vb) {
                    return Err(KernelError::Numeric { reason: NEGATIVE_INTEGER_POWER.into() });
                }
                binary(*op, va, vb).cast(dtype)
            }
            Node::Where { c, a, b } => {
                let (c, a, b) = (check(*c)?, check(*a)?, check(*b)?);
                let vc = self.eval(c, s, e)?;
                let va = self.eval(a, s, e)?;
                let vb = self.eval(b, s, e)?;
                select(vc, va, vb, dtype)
            }
            Node::Cast { x } => {
                let x = check(*x)?;
                self.eval(x, s, e)?.cast(dtype)
            }
            Node::Broadcast { x } => {
                let x = check(*x)?;
                // Missing leading dimensions broadcast like dimensions of 1.
                let src = &self.p.shapes[x];
                let mut from = vec![1u64; shape.len().saturating_sub(src.len())];
                from.extend_from_slice(src);
                if from.len() != shape.len() || from.iter().zip(shape).any(|(f, t)| *f != *t && *f != 1) {
                    return Err(KernelError::Malformed {
                        node: n,
                        reason: format!("cannot broadcast {from:?} to {shape:?}"),
                    });
                }
                let whole = self.whole_of(x)?;
                if whole.len() == 1 {
                    return Ok(whole.repeat_first(e - s).cast(dtype));
                }
                let idx = broadcast_indices(&from, shape, s, e);
                whole.gather(&idx).cast(dtype)
            }
            Node::Transpose { x } => {
                let x = check(*x)?;
                let from = self.p.shapes[x].clone();
                if from.len() != 2 || shape.len() != 2 || from[0] != shape[1] || from[1] != shape[0] {
                    return Err(KernelError::Malformed {
                        node: n,
                        reason: format!("cannot transpose {from:?} into {shape:?}"),
                    });
                }
                let whole = self.whole_of(x)?;
                let (rows, cols) = (shape[0] as usize, shape[1] as usize);
                let idx: Vec<usize> = (s..e).map(|k| (k % cols) * rows + k / cols).collect();
                whole.gather(&idx).cast(dtype)
            }
            Node::Permute { x, perm } => {
                let x = check(*x)?;
                let from = self.p.shapes[x].clone();
                let nd = from.len();
                let mut seen = vec![false; nd];
                let valid = perm.len() == nd
                    && shape.len() == nd
                    && perm.iter().enumerate().all(|(d, &p)| {
                        let p = p as usize;
                        p < nd && !std::mem::replace(&mut seen[p], true) && from[p] == shape[d]
                    });
                if !valid {
                    return Err(KernelError::Malformed {
                        node: n,
                        reason: format!("permutation {perm:?} does not take {from:?} to {shape:?}"),
                    });
                }
                let whole = self.whole_of(x)?;
                let in_strides = strides(&from);
                let st: Vec<i64> = perm.iter().map(|&p| in_strides[p as usize] as i64).collect();
                whole.gather(&strided_indices(shape, 0, &st, s, e)).cast(dtype)
            }
            Node::View { x, start, step } => {
                let x = check(*x)?;
                let from = self.p.shapes[x].clone();
                let nd = from.len();
                let valid = start.len() == nd
                    && step.len() == nd
                    && shape.len() == nd
                    && (0..nd).all(|d| {
                        let last = start[d] as i64 + (shape[d] as i64 - 1) * step[d];
                        step[d] != 0 && (shape[d] == 0 || (start[d] < from[d] && last >= 0 && (last as u64) < from[d]))
                    });
                if !valid {
                    return Err(KernelError::Malformed {
                        node: n,
                        reason: format!("view {start:?} step {step:?} of {shape:?} is outside {from:?}"),
                    });
                }
                let whole = self.whole_of(x)?;
                let in_strides = strides(&from);
                let base: i64 = (0..nd).map(|d| (start[d] * in_strides[d]) as i64).sum();
                let st: Vec<i64> = (0..nd).map(|d| step[d] * in_strides[d] as i64).collect();
                whole.gather(&strided_indices(shape, base, &st, s, e)).cast(dtype)
            }
            Node::Assemble { parts, offsets } => {
                if self.whole[n].is_none() {
                    let all = self.assemble(n, shape, dtype, parts, offsets)?;
                    self.whole[n] = Some(all);
                }
                self.whole[n].as_ref().expect("just set").slice(s, e)
            }
            Node::Reshape { x } => {
                let x = check(*x)?;
                if numel(&self.p.shapes[x]) != numel(shape) {
                    return Err(KernelError::Malformed {
                        node: n,
                        reason: format!("cannot reshape {:?} into {shape:?}", self.p.shapes[x]),
                    });
                }
                self.eval(x, s, e)?.cast(dtype)
            }
            Node::Linalg { op, args } => {
                if self.whole[n].is_none() {
                    let mut dense = Vec::with_capacity(args.len());
                    for &a in args {
                        let a = check(a)?;
                        let sh = self.p.shapes[a].clone();
                        let Buf::F64(v) = self.whole_of(a)?.clone().cast(DType::F64) else { unreachable!("cast") };
                        let (rows, cols) = match sh[..] {
                            [r, c] => (r as usize, c as usize),
                            _ => {
                                return Err(KernelError::Malformed {
                                    node: n,
                                    reason: format!("{sh:?} is not a matrix"),
                                });
                            }
                        };
                        dense.push(crate::linalg::Dense::new(rows, cols, v));
                    }
                    let shapes: Vec<&[u64]> = args.iter().map(|&a| &self.p.shapes[a as usize][..]).collect();
                    let want = op.shape(&shapes).map_err(|reason| KernelError::Malformed { node: n, reason })?;
                    if &want != shape {
                        return Err(KernelError::Malformed {
                            node: n,
                            reason: format!("{op:?} makes {want:?}, not {shape:?}"),
                        });
                    }
                    let out = op.run(&dense).map_err(|reason| KernelError::Numeric { reason })?;
                    self.whole[n] = Some(Buf::F64(out.v).cast(dtype));
                }
                self.whole[n].as_ref().expect("just set").slice(s, e)
            }
            Node::Compress { .. } => {
                return Err(KernelError::Malformed { node: n, reason: "a compress must be the program's root".into() });
            }
            Node::ReduceLast { op, x } => {
                let x = check(*x)?;
                let len = *self.p.shapes[x].last().unwrap_or(&1) as usize;
                let v = self.eval(x, s * len, e * len)?;
                if let (ReduceOp::Sum, Buf::F64(v), DType::F64) = (op, &v, dtype) {
                    if len > 0 && len <= 16 {
                        return Ok(Buf::F64(v.chunks_exact(len).map(|g| g.iter().sum()).collect()));
                    }
                }
                let p = Partial::of_groups(*op, v, len, vec![(e - s) as u64]);
                p.finish(self.p.dtypes[x]).data.cast(dtype)
            }
        })
    }
}

impl Eval<'_> {
    /// The whole value of node `x` (evaluated once).
    fn whole_of(&mut self, x: usize) -> Result<&Buf, KernelError> {
        if self.whole[x].is_none() {
            let all = self.eval(x, 0, numel(&self.p.shapes[x]))?;
            self.whole[x] = Some(all);
        }
        Ok(self.whole[x].as_ref().expect("just set"))
    }

    fn assemble(
        &mut self,
        n: usize,
        shape: &[u64],
        dtype: DType,
        parts: &[u32],
        offsets: &[Vec<u64>],
    ) -> Result<Buf, KernelError> {
        let bad = |reason: String| KernelError::Malformed { node: n, reason };
        if parts.len() != offsets.len() {
            return Err(bad("one offset per part".into()));
        }
        let total = numel(shape);
        let mut out: Option<Buf> = None;
        let mut covered = 0usize;
        let out_strides = strides(shape);
        for (&part, off) in parts.iter().zip(offsets) {
            let part = part as usize;
            if part >= n {
                return Err(bad(format!("operand {part} is not an earlier node")));
            }
            let ps = self.p.shapes[part].clone();
            if ps.len() != shape.len() || off.len() != shape.len() || (0..ps.len()).any(|d| off[d] + ps[d] > shape[d]) {
                return Err(bad(format!("part of {ps:?} at {off:?} is outside {shape:?}")));
            }
            let v = self.eval(part, 0, numel(&ps))?.cast(dtype);
            let base: i64 = (0..ps.len()).map(|d| (off[d] * out_strides[d]) as i64).sum();
            let st: Vec<i64> = out_strides.iter().map(|&x| x as i64).collect();
            let dst = strided_indices(&ps, base, &st, 0, v.len());
            let o = out.get_or_insert_with(|| Buf::filled(Scalar::Bool(false), total).cast(dtype));
            o.scatter(&dst, &v);
            covered += v.len();
        }
        if covered != total {
            return Err(bad(format!("parts cover {covered} of {total} elements")));
        }
        Ok(out.unwrap_or_else(|| Buf::with_capacity(dtype, 0)))
    }
}

/// Row-major strides (in elements) of `shape`.
fn strides(shape: &[u64]) -> Vec<u64> {
    let mut st = vec![0u64; shape.len()];
    let mut acc = 1u64;
    for d in (0..shape.len()).rev() {
        st[d] = acc;
        acc *= shape[d];
    }
    st
}

/// For flat indices `s..e` of a box of `shape`, the source positions `base + Σ i_d·st_d`.
fn strided_indices(shape: &[u64], base: i64, st: &[i64], s: usize, e: usize) -> Vec<usize> {
    let nd = shape.len();
    let mut out = Vec::with_capacity(e - s);
    if s >= e {
        return out;
    }
    let mut idx = vec![0u64; nd];
    let mut rem = s as u64;
    for d in (0..nd).rev() {
        idx[d] = rem % shape[d];
        rem /= shape[d];
    }
    let mut pos: i64 = base + (0..nd).map(|d| idx[d] as i64 * st[d]).sum::<i64>();
    for _ in s..e {
        out.push(pos as usize);
        // Increment the multi-index, carrying.
        let mut d = nd;
        while d > 0 {
            d -= 1;
            idx[d] += 1;
            pos += st[d];
            if idx[d] < shape[d] {
                break;
            }
            pos -= st[d] * shape[d] as i64;
            idx[d] = 0;
        }
    }
    out
}

fn broadcast_indices(from: &[u64], to: &[u64], s: usize, e: usize) -> Vec<usize> {
    let nd = to.len();
    let mut strides = vec![0usize; nd];
    let mut acc = 1usize;
    for d in (0..nd).rev() {
        strides[d] = if from[d] == 1 { 0 } else { acc };
        acc *= from[d] as usize;
    }
    (s..e)
        .map(|k| {
            let mut rem = k;
            let mut src = 0;
            for d in (0..nd).rev() {
                let i = rem % to[d] as usize;
                rem /= to[d] as usize;
                src += i * strides[d];
            }
            src
        })
        .collect()
}

impl Program {
    fn root(&self) -> Result<usize, KernelError> {
        if self.nodes.is_empty() || self.shapes.len() != self.nodes.len() || self.dtypes.len() != self.nodes.len() {
            return Err(KernelError::Malformed {
                node: 0,
                reason: "empty, or shapes/dtypes do not match nodes".into(),
            });
        }
        Ok(self.nodes.len() - 1)
    }

    /// Evaluates the program into a whole chunk.
    pub fn run(&self, inputs: &[ChunkRef<'_>]) -> Result<Chunk, KernelError> {
        let root = self.root()?;
        let n = numel(&self.shapes[root]);
        let mut ev = Eval::new(self, inputs);
        if let Node::Compress { x, m } = self.nodes[root] {
            let (x, m) = (x as usize, m as usize);
            if x >= root || m >= root || numel(&self.shapes[x]) != n || numel(&self.shapes[m]) != n {
                return Err(KernelError::Malformed { node: root, reason: "compress of mismatched operands".into() });
            }
            let mut out = Buf::with_capacity(self.dtypes[root], 0);
            let mut s = 0;
            while s < n {
                let e = (s + BLOCK).min(n);
                let Buf::Bool(keep) = ev.eval(m, s, e)?.cast(DType::Bool) else { unreachable!("cast to bool") };
                let idx: Vec<usize> = keep.iter().enumerate().filter_map(|(i, &k)| k.then_some(i)).collect();
                out.extend(&ev.eval(x, s, e)?.gather(&idx).cast(self.dtypes[root]));
                s = e;
            }
            return Ok(Chunk { shape: vec![out.len() as u64], data: out });
        }
        let mut out = Buf::with_capacity(self.dtypes[root], n);
        let mut s = 0;
        while s < n {
            let e = (s + BLOCK).min(n);
            out.extend(&ev.eval(root, s, e)?);
            s = e;
        }
        Ok(Chunk { shape: self.shapes[root].clone(), data: out })
    }

    /// Evaluates the program and reduces its result over every axis, block by block.
    pub fn run_reduce(&self, op: ReduceOp, inputs: &[ChunkRef<'_>]) -> Result<Partial, KernelError> {
        let root = self.root()?;
        let n = numel(&self.shapes[root]);
        let mut ev = Eval::new(self, inputs);
        let mut acc = Partial::empty(op, self.dtypes[root], Vec::new());
        let mut s = 0;
        while s < n {
            let e = (s + BLOCK).min(n);
            let block = ev.eval(root, s, e)?;
            let mut part = Partial::of_groups(op, block, e - s, Vec::new());
            part.map_idx(|_, i| i + s as i64);
            acc.combine(&part);
            s = e;
        }
        Ok(acc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_vector_uniform_stream_has_the_scalar_streams_bits() {
        // Lengths around the vector width, and offsets that are not lane-aligned.
        for (g, n) in [(0u64, 1usize), (3, 7), (1 << 40, 17), (12_345, 4096)] {
            let mut scalar = vec![0.0; n];
            uniform_fill(9, g, -1.0, 2.0, &mut scalar);
            let mut dispatched = Vec::new();
            uniform_run(9, g, n, -1.0, 2.0, &mut dispatched);
            assert_eq!(dispatched, scalar, "at {g}+{n}");
            #[cfg(target_arch = "x86_64")]
            if std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("avx512dq") {
                let mut vector = vec![0.0; n];
                // SAFETY: the CPU has the features (checked above).
                unsafe { uniform_fill_avx512(9, g, -1.0, 2.0, &mut vector) };
                let same = vector.iter().zip(&scalar).all(|(a, b)| a.to_bits() == b.to_bits());
                assert!(same, "AVX-512 stream differs at {g}+{n}");
            }
        }
    }

    #[test]
    fn integer_powers_take_exponents_past_32_bits() {
        // Against repeated wrapping multiplication (the ring mod 2^64 gives one answer).
        let slow = |b: i64, e: u64| (0..e).fold(1i64, |acc, _| acc.wrapping_mul(b));
        for (b, e) in [(3i64, 0u64), (3, 1), (-3, 5), (2, 63), (2, 64), (7, 1000), (-5, 4097)] {
            assert_eq!(b.pow_wrapping(e), slow(b, e), "{b}^{e}");
        }
        // numpy's 3 ** 2**32 in int64; a u32 cast of the exponent would give 3^0 = 1.
        assert_eq!(3i64.pow_wrapping(1 << 32), 2_491_309_678_558_969_857);
        assert_eq!((-1i32).pow_wrapping((1 << 32) + 1), -1);
        assert!(any_negative(&Buf::I32(vec![1, -1])) && !any_negative(&Buf::I64(vec![0, 5])));
    }
}
