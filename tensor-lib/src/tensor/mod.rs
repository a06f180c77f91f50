//! The tileable level: a [`Tensor`] is a lazy expression with a shape, a dtype and a chunk
//! grid. Nothing runs until [`Session::execute`](crate::Session::execute) or
//! [`Tensor::fetch`].

use std::sync::{Arc, OnceLock};

use ares::ObjectRef;

use crate::data::{Chunk, DType, Scalar};
use crate::kernel::{BinOp, RandKind, ReduceOp, ScanOp, UnOp};

mod create;
mod elementwise;
mod fft;
mod gather;
mod linalg;
mod reduce;
mod shape;
mod sort;

pub use create::{
    ChunkSource, arange, arange_int, eye, from_array, from_chunk_refs, from_source, from_view, full, linspace, ones,
    random, scalar, zeros,
};
pub use elementwise::where_;
pub use linalg::{inner, solve, tensordot};
pub(crate) use shape::squeeze_chunks;
pub use shape::{Slice, concatenate, stack};

/// What can go wrong building or running a tensor expression.
#[derive(Debug, thiserror::Error)]
pub enum TensorError {
    /// Operand shapes cannot be broadcast together.
    #[error("shapes {a:?} and {b:?} cannot be broadcast together")]
    ShapeMismatch {
        /// Left shape.
        a: Vec<u64>,
        /// Right shape.
        b: Vec<u64>,
    },
    /// Operands are chunked differently along a dimension they share.
    #[error("operands are chunked differently along dimension {dim} ({a:?} vs {b:?}); rechunk one to match")]
    ChunkMismatch {
        /// The dimension.
        dim: usize,
        /// Left chunk sizes.
        a: Vec<u64>,
        /// Right chunk sizes.
        b: Vec<u64>,
    },
    /// An axis beyond the tensor's rank.
    #[error("axis {axis} is out of range for a tensor of {ndim} dimensions")]
    BadAxis {
        /// The axis.
        axis: usize,
        /// The rank.
        ndim: usize,
    },
    /// A chunk size of zero, or chunk sizes for the wrong number of dimensions.
    #[error("invalid chunk size {chunks:?} for shape {shape:?}: give one positive size per dimension")]
    BadChunks {
        /// The chunk sizes given.
        chunks: Vec<usize>,
        /// The shape.
        shape: Vec<u64>,
    },
    /// The operation does not apply to this dtype (numpy refuses it too).
    #[error("{op} is not supported for {dtype:?}")]
    BadDType {
        /// The operation.
        op: String,
        /// The dtype.
        dtype: DType,
    },
    /// The operation needs a shape that is known only after running (a boolean mask's
    /// result).
    #[error(
        "{op} needs a known shape, but the input has unknown dimensions (a mask's result); call session.execute() on it first"
    )]
    UnknownShape {
        /// The operation.
        op: String,
    },
    /// A reshape to a shape with another number of elements, or with more than one -1.
    #[error("cannot reshape {from:?} into {to:?}")]
    BadReshape {
        /// The shape.
        from: Vec<u64>,
        /// The requested shape (-1: inferred).
        to: Vec<i64>,
    },
    /// A slice or index that numpy would refuse.
    #[error("bad index: {reason}")]
    BadIndex {
        /// What is wrong.
        reason: String,
    },
    /// A distribution (or another function) given a parameter outside its domain.
    #[error("{op}: {reason}")]
    BadParameter {
        /// The function.
        op: String,
        /// What is wrong (numpy's words where it has them).
        reason: String,
    },
    /// A linear-algebra operation given a matrix it does not apply to.
    #[error("{op}: {reason}")]
    BadMatrix {
        /// The operation.
        op: String,
        /// What is wrong, and the fix.
        reason: String,
    },
    /// A reduction without an identity (min, max, argmin, argmax) over an empty axis; a
    /// mask's result that selected nothing is found so when the expression runs.
    #[error("zero-size array to reduction operation {op} which has no identity")]
    EmptyReduction {
        /// The reduction.
        op: String,
    },
    /// The session's cancel flag was set ([`crate::Session::cancelled_by`]).
    #[error("the computation was cancelled")]
    Cancelled,
    /// One chunk task's inputs and output together exceed the object store: found
    /// before anything runs. Fix: smaller chunks, or a larger store.
    #[error(
        "object store full: the chunk task {task} needs {needs} bytes of the object store at once (its inputs and its output), more than the pool's {capacity} bytes; use smaller chunks or raise object_store_memory"
    )]
    StoreFull {
        /// The task.
        task: String,
        /// Bytes its inputs and output take together.
        needs: u64,
        /// The pool's capacity.
        capacity: u64,
    },
    /// The runtime failed (a task failed, or the runtime is not started).
    #[error(transparent)]
    Runtime(#[from] ares::Error),
    /// The library that makes this tensor's chunks (a frame's, for a frame's values)
    /// failed.
    #[error(transparent)]
    Source(Box<dyn std::error::Error + Send + Sync>),
}

impl From<ares_tileable::Error> for TensorError {
    fn from(e: ares_tileable::Error) -> Self {
        match e {
            ares_tileable::Error::Cancelled => TensorError::Cancelled,
            ares_tileable::Error::StoreFull { task, needs, capacity } => {
                TensorError::StoreFull { task, needs, capacity }
            }
            ares_tileable::Error::Runtime(e) => TensorError::Runtime(e),
        }
    }
}

/// `Result` with [`TensorError`].
pub type Result<T, E = TensorError> = std::result::Result<T, E>;

#[derive(Debug)]
pub(crate) enum Op {
    Full(Scalar),
    Random {
        kind: RandKind,
        seed: u64,
    },
    Arange {
        start: Scalar,
        step: Scalar,
    },
    /// Chunks of an ndarray, put into the store when first executed.
    FromChunks(Vec<Chunk>),
    /// Chunks already in the store, made by another library's tasks, row-major.
    Stored(Arc<Vec<ares::ObjectRef<Chunk>>>),
    /// Chunks another library's tasks make in the same graph, split along the first
    /// dimension, whose lengths are known once they ran.
    Source(Arc<dyn ChunkSource>),
    Unary(UnOp, Tensor),
    Binary(BinOp, Tensor, Tensor),
    Where(Tensor, Tensor, Tensor),
    Cast(Tensor),
    Reduce {
        op: ReduceOp,
        axes: Vec<usize>,
        keepdims: bool,
        x: Tensor,
    },
    /// The transpose of a 2-d tensor.
    Transpose(Tensor),
    /// The matrix product of two 2-d tensors.
    MatMul(Tensor, Tensor),
    /// Axes permuted (output dimension `d` is the operand's `perm[d]`).
    Permute(Tensor, Vec<usize>),
    /// A strided box: output index `i` along `d` reads `start[d] + i * step[d]`.
    Slice {
        x: Tensor,
        start: Vec<u64>,
        step: Vec<i64>,
    },
    /// The same elements in new chunks (given as sizes per dimension).
    Rechunk(Tensor, Vec<u64>),
    /// Operands joined along `axis`.
    Concat(Vec<Tensor>, usize),
    /// The same elements (row-major) in a new shape (`spec` as given, -1 inferred).
    Reshape(Tensor, Vec<i64>),
    /// The elements of `x` where `m` is true, in row-major order (1-d, unknown length).
    Mask(Tensor, Tensor),
    /// A factor of a decomposition of a 2-d float tensor.
    Factor(Tensor, Factor),
    /// `x` with `a · x = b` (`a` square, `b` 2-d).
    Solve(Tensor, Tensor),
    /// `x` sorted (or its sorting positions, `arg`) along `axis`, held in one chunk.
    Sort {
        x: Tensor,
        axis: usize,
        descending: bool,
        arg: bool,
    },
    /// A discrete Fourier transform of the complex `x` along `axis`, held in one chunk.
    Fft {
        x: Tensor,
        axis: usize,
        kind: crate::kernel::FftKind,
        scale: f64,
    },
    /// The 1-d `x` in several chunks sorted by a sample sort: one chunk per range, whose
    /// lengths are known once it ran.
    SampleSort {
        x: Tensor,
        descending: bool,
        arg: bool,
    },
    /// The distinct elements (or their counts) of each chunk of the sorted 1-d `x`, whose
    /// ranges never share an element.
    Unique {
        x: Tensor,
        counts: bool,
        equal_nan: bool,
    },
    /// `x`'s elements at the positions `idx` along `axis` (`take`, or `take_along_axis`
    /// with `along`).
    Take {
        x: Tensor,
        idx: Tensor,
        axis: usize,
        along: bool,
    },
    /// Insertion points of `v`'s elements in the sorted 1-d `a`.
    Search {
        a: Tensor,
        v: Tensor,
        right: bool,
    },
    /// The running `op` of `x` (already in the result's dtype) along `axis`.
    Scan {
        op: ScanOp,
        axis: usize,
        x: Tensor,
    },
}

/// Which factor of a decomposition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Factor {
    /// `Q` of a tall-skinny QR (TSQR).
    Q,
    /// `R` of a tall-skinny QR.
    R,
    /// `U` of a tall-skinny SVD.
    U,
    /// The singular values.
    S,
    /// `Vᵀ` of a tall-skinny SVD.
    Vt,
    /// The lower Cholesky factor.
    L,
    /// `[sign, logabsdet, det]` of a square matrix held in one chunk.
    SlogDet,
    /// Eigenvalues over eigenvectors of a symmetric matrix held in one chunk.
    Eigh,
    /// `[U; S; Vᵀ]` of a full SVD of a matrix held in one chunk.
    SvdFull,
    /// The packed result of a factorization of a complex matrix held in one chunk.
    Complex(crate::linalg_complex::CLinOp),
}

#[derive(Debug)]
pub(crate) struct Node {
    pub(crate) op: Op,
    pub(crate) shape: Vec<u64>,
    pub(crate) dtype: DType,
    /// Chunk sizes along each dimension.
    pub(crate) chunks: Vec<Vec<u64>>,
    /// Shape and chunks once known, for a node built with unknown dimensions.
    pub(crate) resolved: OnceLock<(Vec<u64>, Vec<Vec<u64>>)>,
    /// The node built again on its resolved operands (with whatever rechunking that
    /// needs); tiling uses it in place of this one.
    pub(crate) rebuilt: OnceLock<Tensor>,
    /// The computed chunks (row-major over the grid), per session that computed them.
    pub(crate) result: ares_tileable::Results<Chunks>,
}

/// The size of a dimension (and of its chunks) that is known only after running, as for
/// a boolean mask's result (Mars and Dask use NaN).
pub const UNKNOWN: u64 = u64::MAX;

/// A computed tensor's chunks, row-major over its grid.
pub(crate) type Chunks = Arc<Vec<ObjectRef<Chunk>>>;

/// A lazy, chunked n-dimensional array.
#[derive(Clone, Debug)]
pub struct Tensor {
    pub(crate) node: Arc<Node>,
}

pub(crate) fn split(n: u64, size: u64) -> Vec<u64> {
    if n == UNKNOWN {
        return vec![UNKNOWN];
    }
    if n == 0 {
        return vec![0];
    }
    let mut v = vec![size; (n / size) as usize];
    if n % size != 0 {
        v.push(n % size);
    }
    v
}

pub(super) fn grid(shape: &[u64], chunks: &[usize]) -> Result<Vec<Vec<u64>>> {
    if chunks.len() != shape.len() || chunks.contains(&0) {
        return Err(TensorError::BadChunks { chunks: chunks.to_vec(), shape: shape.to_vec() });
    }
    Ok(shape.iter().zip(chunks).map(|(&n, &c)| split(n, c as u64)).collect())
}

impl Tensor {
    pub(crate) fn new(op: Op, shape: Vec<u64>, dtype: DType, chunks: Vec<Vec<u64>>) -> Tensor {
        let node = Node {
            op,
            shape,
            dtype,
            chunks,
            resolved: OnceLock::new(),
            rebuilt: OnceLock::new(),
            result: ares_tileable::Results::default(),
        };
        Tensor { node: Arc::new(node) }
    }

    /// The shape; dimensions known only after running are [`UNKNOWN`].
    pub fn shape(&self) -> &[u64] {
        match self.node.resolved.get() {
            Some((s, _)) => s,
            None => &self.node.shape,
        }
    }

    /// Whether some dimension is known only after running (a mask's result, before it ran).
    pub fn has_unknown_shape(&self) -> bool {
        self.shape().contains(&UNKNOWN) || self.chunks().iter().any(|c| c.contains(&UNKNOWN))
    }

    fn known(&self, op: &str) -> Result<()> {
        if self.has_unknown_shape() {
            return Err(TensorError::UnknownShape { op: op.into() });
        }
        Ok(())
    }

    /// The dtype.
    pub fn dtype(&self) -> DType {
        self.node.dtype
    }

    /// Chunk sizes along each dimension.
    pub fn chunks(&self) -> &[Vec<u64>] {
        match self.node.resolved.get() {
            Some((_, c)) => c,
            None => &self.node.chunks,
        }
    }

    /// Number of dimensions.
    pub fn ndim(&self) -> usize {
        self.node.shape.len()
    }

    /// Number of elements ([`UNKNOWN`] if some dimension is).
    pub fn size(&self) -> u64 {
        if self.shape().contains(&UNKNOWN) {
            return UNKNOWN;
        }
        self.shape().iter().product()
    }
}

impl Tensor {
    /// This node built again from its operands, once they are resolved: the shape and
    /// chunks it has now (Mars' iterative tiling re-runs tiling the same way).
    pub(crate) fn rebuild(&self) -> Result<Tensor> {
        Ok(match &self.node.op {
            Op::Unary(op, x) => x.unary(*op)?,
            Op::Binary(op, a, b) => a.binary(*op, b)?,
            Op::Where(c, a, b) => where_(c, a, b)?,
            Op::Cast(x) => x.astype(self.dtype()),
            Op::Reduce { op, axes, keepdims, x } => x.reduce(*op, Some(axes), *keepdims)?,
            Op::Transpose(x) => x.t()?,
            Op::Permute(x, p) => x.permute(p)?,
            Op::Rechunk(x, sizes) => {
                let sizes: Vec<usize> = sizes.iter().map(|&c| c as usize).collect();
                x.rechunk(&sizes)?
            }
            Op::Concat(xs, axis) => concatenate(xs, *axis)?,
            Op::Reshape(x, spec) => x.reshape(spec)?,
            Op::Slice { x, start, step } => x.strided(start.clone(), step.clone(), self.shape().to_vec()),
            Op::Full(_)
            | Op::Random { .. }
            | Op::Arange { .. }
            | Op::FromChunks(_)
            | Op::Stored(_)
            | Op::Source(_)
            | Op::MatMul(..)
            | Op::Factor(..)
            | Op::Solve(..) => self.clone(),
            Op::Mask(x, m) => x.mask(m)?,
            Op::Scan { op, axis, x } => x.cumulative(*op, *axis)?,
            Op::Sort { x, axis, descending, arg } => x.sorted_again(*axis, *descending, *arg)?,
            Op::SampleSort { x, descending, arg } => x.sorted_again(0, *descending, *arg)?,
            Op::Fft { x, axis, kind, scale } => x.fft(*axis, *kind, *scale)?,
            Op::Unique { x, counts, equal_nan } => x.unique_again(*counts, *equal_nan)?,
            Op::Search { a, v, right } => a.searchsorted(v, *right)?,
            Op::Take { x, idx, axis, along: false } => x.take(idx, *axis)?,
            Op::Take { x, idx, axis, along: true } => x.take_along(idx, *axis)?,
        })
    }

    /// The tensors this one is computed from.
    pub(crate) fn operands(&self) -> Vec<&Tensor> {
        match &self.node.op {
            Op::Full(_) | Op::Random { .. } | Op::Arange { .. } | Op::FromChunks(_) | Op::Stored(_) | Op::Source(_) => {
                Vec::new()
            }
            Op::Unary(_, x)
            | Op::Cast(x)
            | Op::Reduce { x, .. }
            | Op::Transpose(x)
            | Op::Permute(x, _)
            | Op::Slice { x, .. }
            | Op::Rechunk(x, _)
            | Op::Reshape(x, _)
            | Op::Factor(x, _)
            | Op::Scan { x, .. }
            | Op::Sort { x, .. }
            | Op::Fft { x, .. }
            | Op::SampleSort { x, .. }
            | Op::Unique { x, .. } => vec![x],
            Op::Search { a, v, .. } => vec![a, v],
            Op::Take { x, idx, .. } => vec![x, idx],
            Op::Binary(_, a, b) | Op::MatMul(a, b) | Op::Mask(a, b) | Op::Solve(a, b) => vec![a, b],
            Op::Where(c, a, b) => vec![c, a, b],
            Op::Concat(xs, _) => xs.iter().collect(),
        }
    }
}

/// Every grid index, row-major.
pub(crate) fn grid_indices(g: &[Vec<u64>]) -> Vec<Vec<usize>> {
    let mut out = vec![Vec::new()];
    for dim in g {
        out = out.into_iter().flat_map(|p| (0..dim.len()).map(move |i| [p.clone(), vec![i]].concat())).collect();
    }
    out
}
