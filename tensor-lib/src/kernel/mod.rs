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

use crate::data::{DType, Scalar};
pub use crate::linalg::LinOp;

mod elementwise;
mod eval;
mod fft;
mod random;
mod reduce;
pub(crate) mod sort;

pub use elementwise::{NEGATIVE_INTEGER_POWER, binary_dtype, binary_types, compute_dtype};
pub use fft::FftKind;
pub use reduce::Partial;

/// Output elements evaluated at a time: a few node buffers of this size stay in L1/L2.
pub const BLOCK: usize = 4096;

pub use ares_tileable::scalar::{BinOp, UnOp};

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
            // numpy: sums and products of integers in the platform's (64-bit) integer,
            // unsigned ones unsigned.
            ReduceOp::Sum | ReduceOp::Prod => match x {
                f if f.is_inexact() => f,
                u if u.is_unsigned() => DType::U64,
                _ => DType::I64,
            },
            ReduceOp::Min | ReduceOp::Max => x,
            ReduceOp::Mean | ReduceOp::Var | ReduceOp::Std => match x {
                DType::F32 => DType::F32,
                // A complex mean is complex; its variance is real.
                DType::C64 if self == ReduceOp::Mean => DType::C64,
                DType::C128 if self == ReduceOp::Mean => DType::C128,
                DType::C64 => DType::F32,
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
    /// Poisson counts of mean `lam` (int64).
    Poisson {
        /// The mean, ≥ 0.
        lam: f64,
    },
    /// Binomial counts of `n` trials of success probability `p` (int64).
    Binomial {
        /// Trials, ≥ 0.
        n: i64,
        /// Success probability in [0, 1].
        p: f64,
    },
    /// Gamma of shape `k` and scale 1 (float64).
    Gamma {
        /// Shape, ≥ 0.
        k: f64,
    },
    /// Failures before the `n`-th success of probability `p` (int64): a Poisson of a
    /// gamma mean, as numpy draws it.
    NegBinomial {
        /// Successes, > 0.
        n: f64,
        /// Success probability in (0, 1].
        p: f64,
    },
}

/// A running (cumulative) operation along an axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub enum ScanOp {
    /// Running sum (`cumsum`).
    Sum,
    /// Running product (`cumprod`).
    Prod,
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
    /// `start + step * (offset + i)` along one dimension, in int64 exactly for integer
    /// `start` and `step`, else in float64.
    Arange {
        /// First value.
        start: Scalar,
        /// Increment.
        step: Scalar,
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
    /// The running `op` of `x` along `axis`, in the node's dtype, starting from `seed`
    /// (`x`'s shape with `axis` of length 1: the running value before this chunk) when
    /// given.
    Scan {
        /// Which.
        op: ScanOp,
        /// Along which dimension.
        axis: u32,
        /// Operand (the node's shape).
        x: u32,
        /// The carry into the first element, if any.
        seed: Option<u32>,
    },
    /// `x` sorted along `axis` (numpy's order, stable), or with `arg` the int64
    /// positions along `axis` that sort it.
    Sort {
        /// Operand (the node's shape).
        x: u32,
        /// Along which dimension.
        axis: u32,
        /// Largest first.
        descending: bool,
        /// Positions instead of values.
        arg: bool,
    },
    /// A discrete Fourier transform of the complex `x` along `axis` (held whole), each
    /// element times `scale`; the node's shape is the output's (a real inverse's lanes
    /// have its own length).
    Fft {
        /// Operand (complex).
        x: u32,
        /// Along which dimension.
        axis: u32,
        /// Which transform.
        kind: FftKind,
        /// The normalization factor.
        scale: f64,
    },
    /// The distinct elements of the sorted 1-d `x`, or with `counts` how many times each
    /// occurs (int64); a 1-d chunk whose length is known only after the run. Only the
    /// root of a program; its declared shape is `x`'s.
    Unique {
        /// Sorted values.
        x: u32,
        /// Counts instead of values.
        counts: bool,
        /// Every NaN one value (numpy's `unique`) rather than each its own.
        equal_nan: bool,
    },
    /// For each element of `v`, how many elements of the sorted 1-d chunks `a` (together
    /// one sorted vector) come before it (`right`: or equal to it): numpy's
    /// `searchsorted`, as int64 of `v`'s shape.
    Search {
        /// The sorted chunks.
        a: Vec<u32>,
        /// The values looked up.
        v: u32,
        /// numpy's `side='right'`.
        right: bool,
    },
    /// Elements of the chunks `parts` (one tensor split along `axis`, in order) picked
    /// along `axis` by the int64 positions `idx` (negative from the end): numpy's `take`
    /// (the result is `pre × idx × post`), or with `along` its `take_along_axis` (`idx`
    /// has the parts' shape but for `axis`).
    Take {
        /// The chunks along the axis.
        parts: Vec<u32>,
        /// Positions.
        idx: u32,
        /// The axis.
        axis: u32,
        /// `take_along_axis` rather than `take`.
        along: bool,
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
    /// A position outside the axis it indexes (numpy's `IndexError`).
    #[error("index {index} is out of bounds for axis {axis} with size {size}")]
    OutOfBounds {
        /// The position.
        index: i64,
        /// The axis.
        axis: u32,
        /// Its length.
        size: u64,
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
