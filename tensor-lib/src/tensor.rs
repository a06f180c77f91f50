//! The tileable level: a [`Tensor`] is a lazy expression with a shape, a dtype and a chunk
//! grid. Nothing runs until [`Session::execute`](crate::Session::execute) or
//! [`Tensor::fetch`].

use std::sync::{Arc, OnceLock};

use ares::ObjectRef;
use ndarray::ArrayD;

use crate::data::{Chunk, DType, Elem, Scalar};
use crate::kernel::{BinOp, RandKind, ReduceOp, UnOp, binary_dtype};

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
        start: f64,
        step: f64,
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

fn grid(shape: &[u64], chunks: &[usize]) -> Result<Vec<Vec<u64>>> {
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

    // ------------------------------------------------------------------ element-wise

    fn unary(&self, op: UnOp) -> Result<Tensor> {
        let d = self.dtype();
        if op == UnOp::Neg && d == DType::Bool {
            return Err(TensorError::BadDType { op: "negation of booleans (use `not`)".into(), dtype: d });
        }
        let out = match op {
            UnOp::Sqrt | UnOp::Exp | UnOp::Log | UnOp::Sin | UnOp::Cos => {
                if d == DType::F32 {
                    DType::F32
                } else {
                    DType::F64
                }
            }
            UnOp::Not => DType::Bool,
            UnOp::Neg | UnOp::Abs => d,
        };
        Ok(Tensor::new(Op::Unary(op, self.clone()), self.shape().to_vec(), out, self.chunks().to_vec()))
    }

    /// Element-wise `a op b` with numpy broadcasting and type promotion.
    pub fn binary(&self, op: BinOp, other: &Tensor) -> Result<Tensor> {
        if self.dtype() == DType::Bool && other.dtype() == DType::Bool {
            // numpy refuses the first and gives int8 (not a dtype here) for the second;
            // the kernels have no boolean form of either.
            match op {
                BinOp::Sub => {
                    return Err(TensorError::BadDType { op: "subtraction of booleans".into(), dtype: DType::Bool });
                }
                BinOp::Pow => {
                    return Err(TensorError::BadDType { op: "power of booleans".into(), dtype: DType::Bool });
                }
                _ => {}
            }
        }
        let (a, b) = unify(self, other)?;
        let (shape, chunks) = broadcast(&a, &b)?;
        let dtype = binary_dtype(op, a.dtype(), b.dtype());
        Ok(Tensor::new(Op::Binary(op, a, b), shape, dtype, chunks))
    }

    /// Element-wise with a scalar.
    pub fn binary_scalar(&self, op: BinOp, s: Scalar) -> Result<Tensor> {
        self.binary(op, &full_like_scalar(self.python_scalar(s), self))
    }

    /// `s op x` for a Python scalar `s` on the left (`2 - x`), with the same value-based
    /// casting as [`Tensor::binary_scalar`].
    pub fn rbinary_scalar(&self, op: BinOp, s: Scalar) -> Result<Tensor> {
        full_like_scalar(self.python_scalar(s), self).binary(op, self)
    }

    /// A Python scalar in an expression with this tensor: Python scalars do not upcast
    /// arrays (numpy's value-based casting), so it takes the array's kind unless it is a
    /// float and the array is not.
    fn python_scalar(&self, s: Scalar) -> Scalar {
        match (s, self.dtype()) {
            (Scalar::F64(v), DType::F32) => Scalar::F32(v as f32),
            // An int that does not fit int32 stays int64 (numpy 2 refuses it; wrapping
            // would compare and compute with another number).
            (Scalar::I64(v), DType::I32) => i32::try_from(v).map_or(Scalar::I64(v), Scalar::I32),
            (Scalar::I64(v), DType::F32) => Scalar::F32(v as f32),
            (Scalar::I64(v), DType::F64) => Scalar::F64(v as f64),
            (s, _) => s,
        }
    }

    /// `sqrt(x)`.
    pub fn sqrt(&self) -> Tensor {
        self.unary(UnOp::Sqrt).expect("unary ops accept every dtype")
    }
    /// `exp(x)`.
    pub fn exp(&self) -> Tensor {
        self.unary(UnOp::Exp).expect("unary ops accept every dtype")
    }
    /// `ln(x)`.
    pub fn log(&self) -> Tensor {
        self.unary(UnOp::Log).expect("unary ops accept every dtype")
    }
    /// `sin(x)`.
    pub fn sin(&self) -> Tensor {
        self.unary(UnOp::Sin).expect("unary ops accept every dtype")
    }
    /// `cos(x)`.
    pub fn cos(&self) -> Tensor {
        self.unary(UnOp::Cos).expect("unary ops accept every dtype")
    }
    /// `|x|`.
    pub fn abs(&self) -> Tensor {
        self.unary(UnOp::Abs).expect("unary ops accept every dtype")
    }
    /// Logical not.
    pub fn not(&self) -> Tensor {
        self.unary(UnOp::Not).expect("unary ops accept every dtype")
    }
    /// `x ** p`.
    pub fn pow(&self, p: &Tensor) -> Result<Tensor> {
        self.binary(BinOp::Pow, p)
    }
    /// `x < y`.
    pub fn lt(&self, y: &Tensor) -> Result<Tensor> {
        self.binary(BinOp::Lt, y)
    }
    /// `x <= y`.
    pub fn le(&self, y: &Tensor) -> Result<Tensor> {
        self.binary(BinOp::Le, y)
    }
    /// `x > y`.
    pub fn gt(&self, y: &Tensor) -> Result<Tensor> {
        self.binary(BinOp::Gt, y)
    }
    /// `x >= y`.
    pub fn ge(&self, y: &Tensor) -> Result<Tensor> {
        self.binary(BinOp::Ge, y)
    }
    /// `x == y`.
    pub fn equal(&self, y: &Tensor) -> Result<Tensor> {
        self.binary(BinOp::Eq, y)
    }
    /// `x != y`.
    pub fn not_equal(&self, y: &Tensor) -> Result<Tensor> {
        self.binary(BinOp::Ne, y)
    }
    /// Logical and.
    pub fn and(&self, y: &Tensor) -> Result<Tensor> {
        self.binary(BinOp::And, y)
    }
    /// Logical or.
    pub fn or(&self, y: &Tensor) -> Result<Tensor> {
        self.binary(BinOp::Or, y)
    }
    /// Element-wise maximum.
    pub fn maximum(&self, y: &Tensor) -> Result<Tensor> {
        self.binary(BinOp::Maximum, y)
    }
    /// Element-wise minimum.
    pub fn minimum(&self, y: &Tensor) -> Result<Tensor> {
        self.binary(BinOp::Minimum, y)
    }
    /// `x < s` for a scalar.
    pub fn lt_scalar(&self, s: f64) -> Tensor {
        self.binary_scalar(BinOp::Lt, Scalar::F64(s)).expect("a scalar broadcasts to anything")
    }
    /// `x > s` for a scalar.
    pub fn gt_scalar(&self, s: f64) -> Tensor {
        self.binary_scalar(BinOp::Gt, Scalar::F64(s)).expect("a scalar broadcasts to anything")
    }
    /// `x >= s` for a scalar.
    pub fn ge_scalar(&self, s: f64) -> Tensor {
        self.binary_scalar(BinOp::Ge, Scalar::F64(s)).expect("a scalar broadcasts to anything")
    }
    /// `x <= s` for a scalar.
    pub fn le_scalar(&self, s: f64) -> Tensor {
        self.binary_scalar(BinOp::Le, Scalar::F64(s)).expect("a scalar broadcasts to anything")
    }
    /// `x == s` for a scalar.
    pub fn eq_scalar(&self, s: f64) -> Tensor {
        self.binary_scalar(BinOp::Eq, Scalar::F64(s)).expect("a scalar broadcasts to anything")
    }
    /// Clips to `[lo, hi]`.
    pub fn clip(&self, lo: f64, hi: f64) -> Tensor {
        let lo_t = self.binary_scalar(BinOp::Maximum, Scalar::F64(lo)).expect("scalar");
        lo_t.binary_scalar(BinOp::Minimum, Scalar::F64(hi)).expect("scalar")
    }
    fn astype_if(&self, dtype: DType) -> Tensor {
        if self.dtype() == dtype { self.clone() } else { self.astype(dtype) }
    }

    /// Cast to `dtype` (numpy `astype`).
    pub fn astype(&self, dtype: DType) -> Tensor {
        Tensor::new(Op::Cast(self.clone()), self.shape().to_vec(), dtype, self.chunks().to_vec())
    }

    // ------------------------------------------------------------------ reductions

    /// Reduces over `axes` (all if `None`), keeping reduced dimensions as 1 if `keepdims`.
    pub fn reduce(&self, op: ReduceOp, axes: Option<&[usize]>, keepdims: bool) -> Result<Tensor> {
        let nd = self.ndim();
        let mut axes: Vec<usize> = match axes {
            None => (0..nd).collect(),
            Some(a) => a.to_vec(),
        };
        axes.sort_unstable();
        axes.dedup();
        if let Some(&axis) = axes.iter().find(|&&a| a >= nd) {
            return Err(TensorError::BadAxis { axis, ndim: nd });
        }
        let no_identity = matches!(op, ReduceOp::Min | ReduceOp::Max | ReduceOp::ArgMin | ReduceOp::ArgMax);
        if no_identity && axes.iter().any(|&a| self.shape()[a] == 0) {
            return Err(TensorError::EmptyReduction { op: format!("{op:?}") });
        }
        if op.is_arg() && axes.len() > 1 && axes.len() < nd {
            return Err(TensorError::BadIndex { reason: format!("{op:?} takes one axis or none, not {axes:?}") });
        }
        if op.is_arg() && axes.len() == nd && nd > 1 {
            // numpy's argmax without an axis indexes the flattened array.
            let flat = self.reshape(&[-1])?;
            let r = flat.reduce(op, Some(&[0]), false)?;
            return if keepdims { r.reshape(&vec![1; nd]) } else { Ok(r) };
        }
        if axes.is_empty() && nd > 0 {
            // Reducing over no axis leaves every element alone (numpy's `axis=()`).
            let same = match op {
                ReduceOp::Var | ReduceOp::Std => self.binary(BinOp::Sub, self)?,
                _ => self.clone(),
            };
            return Ok(same.astype(op.out_dtype(self.dtype())));
        }
        let mut shape = Vec::new();
        let mut chunks = Vec::new();
        for d in 0..nd {
            if axes.contains(&d) {
                if keepdims {
                    shape.push(1);
                    chunks.push(vec![1]);
                }
            } else {
                shape.push(self.shape()[d]);
                chunks.push(self.chunks()[d].clone());
            }
        }
        let dtype = op.out_dtype(self.dtype());
        Ok(Tensor::new(Op::Reduce { op, axes, keepdims, x: self.clone() }, shape, dtype, chunks))
    }

    /// Sum of all elements.
    pub fn sum(&self) -> Tensor {
        self.reduce(ReduceOp::Sum, None, false).expect("all axes exist")
    }
    /// Mean of all elements.
    pub fn mean(&self) -> Tensor {
        self.reduce(ReduceOp::Mean, None, false).expect("all axes exist")
    }
    /// Population standard deviation of all elements.
    pub fn std(&self) -> Tensor {
        self.reduce(ReduceOp::Std, None, false).expect("all axes exist")
    }
    /// Population variance of all elements.
    pub fn var(&self) -> Tensor {
        self.reduce(ReduceOp::Var, None, false).expect("all axes exist")
    }
    /// Minimum of all elements.
    pub fn min(&self) -> Tensor {
        self.reduce(ReduceOp::Min, None, false).expect("all axes exist")
    }
    /// Maximum of all elements.
    pub fn max(&self) -> Tensor {
        self.reduce(ReduceOp::Max, None, false).expect("all axes exist")
    }
    /// Index of the minimum (flattened), numpy's `argmin()`.
    pub fn argmin(&self) -> Tensor {
        self.reduce(ReduceOp::ArgMin, None, false).expect("all axes exist")
    }
    /// Index of the maximum (flattened), numpy's `argmax()`.
    pub fn argmax(&self) -> Tensor {
        self.reduce(ReduceOp::ArgMax, None, false).expect("all axes exist")
    }
    /// Product of all elements.
    pub fn prod(&self) -> Tensor {
        self.reduce(ReduceOp::Prod, None, false).expect("all axes exist")
    }
    /// Whether any element is non-zero.
    pub fn any(&self) -> Tensor {
        self.reduce(ReduceOp::Any, None, false).expect("all axes exist")
    }
    /// Whether every element is non-zero.
    pub fn all(&self) -> Tensor {
        self.reduce(ReduceOp::All, None, false).expect("all axes exist")
    }

    /// Euclidean norm along `axis` (numpy `linalg.norm(x, axis=axis)`).
    pub fn norm(&self, axis: usize) -> Result<Tensor> {
        Ok(self.binary(BinOp::Mul, self)?.reduce(ReduceOp::Sum, Some(&[axis]), false)?.sqrt())
    }

    /// The transpose of a 2-d tensor (numpy's `a.T`).
    pub fn t(&self) -> Result<Tensor> {
        if self.ndim() != 2 {
            return Err(TensorError::BadAxis { axis: 1, ndim: self.ndim() });
        }
        let shape = vec![self.shape()[1], self.shape()[0]];
        let chunks = vec![self.chunks()[1].clone(), self.chunks()[0].clone()];
        Ok(Tensor::new(Op::Transpose(self.clone()), shape, self.dtype(), chunks))
    }

    /// The matrix product of two 2-d float tensors, blocked by their chunks (numpy's
    /// `a.dot(b)` / `a @ b`). `self`'s column chunks must match `b`'s row chunks.
    pub fn matmul(&self, b: &Tensor) -> Result<Tensor> {
        self.known("matmul")?;
        b.known("matmul")?;
        if self.ndim() != 2 || b.ndim() != 2 || self.shape()[1] != b.shape()[0] {
            return Err(TensorError::ShapeMismatch { a: self.shape().to_vec(), b: b.shape().to_vec() });
        }
        if self.chunks()[1] != b.chunks()[0] {
            return Err(TensorError::ChunkMismatch { dim: 1, a: self.chunks()[1].clone(), b: b.chunks()[0].clone() });
        }
        // Integers and booleans multiply as numpy's do (see `linalg::gemm`).
        let dtype = DType::promote(self.dtype(), b.dtype());
        let shape = vec![self.shape()[0], b.shape()[1]];
        let chunks = vec![self.chunks()[0].clone(), b.chunks()[1].clone()];
        Ok(Tensor::new(Op::MatMul(self.clone(), b.clone()), shape, dtype, chunks))
    }

    /// Same as [`Tensor::matmul`].
    pub fn dot(&self, b: &Tensor) -> Result<Tensor> {
        self.matmul(b)
    }

    // ------------------------------------------------------------------ manipulation

    /// Axes permuted: output dimension `d` is this tensor's `axes[d]` (numpy's
    /// `transpose(axes)`).
    pub fn permute(&self, axes: &[usize]) -> Result<Tensor> {
        let nd = self.ndim();
        let mut seen = vec![false; nd];
        for &a in axes {
            if a >= nd || std::mem::replace(&mut seen[a], true) {
                return Err(TensorError::BadIndex { reason: format!("{axes:?} is not a permutation of {nd} axes") });
            }
        }
        if axes.len() != nd {
            return Err(TensorError::BadIndex { reason: format!("{axes:?} is not a permutation of {nd} axes") });
        }
        if nd == 2 && axes == [1, 0] {
            return self.t();
        }
        let shape = axes.iter().map(|&a| self.shape()[a]).collect();
        let chunks = axes.iter().map(|&a| self.chunks()[a].clone()).collect();
        Ok(Tensor::new(Op::Permute(self.clone(), axes.to_vec()), shape, self.dtype(), chunks))
    }

    /// Basic slicing, one [`Slice`] per leading dimension (numpy's `a[1:5, ::2]`); the
    /// dimensions not given are taken whole.
    pub fn slice(&self, index: &[Slice]) -> Result<Tensor> {
        self.known("slicing")?;
        let nd = self.ndim();
        if index.len() > nd {
            return Err(TensorError::BadIndex { reason: format!("{} indices for {nd} dimensions", index.len()) });
        }
        let (mut start, mut step, mut shape) = (Vec::new(), Vec::new(), Vec::new());
        for d in 0..nd {
            let sl = index.get(d).copied().unwrap_or_default();
            let (b, st, len) = sl.resolve(self.shape()[d])?;
            start.push(b);
            step.push(st);
            shape.push(len);
        }
        // Output chunks follow the input's: each reads one input chunk per dimension.
        let chunks = (0..nd).map(|d| slice_chunks(&self.chunks()[d], start[d], step[d], shape[d])).collect();
        Ok(Tensor::new(Op::Slice { x: self.clone(), start, step }, shape, self.dtype(), chunks))
    }

    /// The same elements in chunks of `chunks` per dimension.
    pub fn rechunk(&self, chunks: &[usize]) -> Result<Tensor> {
        if chunks.len() != self.ndim() || chunks.contains(&0) {
            return Err(TensorError::BadChunks { chunks: chunks.to_vec(), shape: self.shape().to_vec() });
        }
        let g: Vec<Vec<u64>> = self.shape().iter().zip(chunks).map(|(&n, &c)| split(n, c as u64)).collect();
        // An unknown length may turn out to need several chunks: keep the node.
        if g == self.chunks() && !self.has_unknown_shape() {
            return Ok(self.clone());
        }
        let sizes = chunks.iter().map(|&c| c as u64).collect();
        Ok(Tensor::new(Op::Rechunk(self.clone(), sizes), self.shape().to_vec(), self.dtype(), g))
    }

    /// Chunked along the first dimension only (each chunk holds whole rows), so chunks in
    /// grid order are runs of the row-major order.
    pub(crate) fn row_chunked(&self) -> Result<Tensor> {
        if self.chunks().iter().skip(1).all(|c| c.len() == 1) {
            return Ok(self.clone());
        }
        let mut want: Vec<usize> = self.shape().iter().map(|&n| n.clamp(1, UNKNOWN - 1) as usize).collect();
        if let Some(first) = want.first_mut() {
            *first = self.chunks()[0].first().copied().unwrap_or(1).clamp(1, UNKNOWN - 1) as usize;
        }
        self.rechunk(&want)
    }

    /// The same elements in row-major order with shape `spec`; one entry may be -1
    /// (inferred), as in numpy.
    pub fn reshape(&self, spec: &[i64]) -> Result<Tensor> {
        let bad = || TensorError::BadReshape { from: self.shape().to_vec(), to: spec.to_vec() };
        if spec.iter().filter(|&&d| d == -1).count() > 1 || spec.iter().any(|&d| d < -1) {
            return Err(bad());
        }
        let known: u64 = spec.iter().filter(|&&d| d >= 0).map(|&d| d as u64).product();
        let shape: Vec<u64> = if self.size() == UNKNOWN {
            let infer = if spec.contains(&-1) { UNKNOWN } else { known };
            spec.iter().map(|&d| if d == -1 { infer } else { d as u64 }).collect()
        } else {
            let n = self.size();
            let inferred = if spec.contains(&-1) {
                if known == 0 || n % known != 0 {
                    return Err(bad());
                }
                n / known
            } else {
                if known != n {
                    return Err(bad());
                }
                0
            };
            spec.iter().map(|&d| if d == -1 { inferred } else { d as u64 }).collect()
        };
        if shape == self.shape() {
            return Ok(self.clone());
        }
        if self.has_unknown_shape() {
            // Chunks are decided once the input's are known.
            let chunks = shape.iter().map(|_| vec![UNKNOWN]).collect();
            return Ok(Tensor::new(Op::Reshape(self.clone(), spec.to_vec()), shape, self.dtype(), chunks));
        }
        // Unless only dimensions of 1 change, output chunks are runs of rows assembled
        // from runs of the input's rows.
        let x = if squeeze_chunks(self, &shape).is_some() { self.clone() } else { self.row_chunked()? };
        let chunks = reshape_chunks(&x, &shape);
        Ok(Tensor::new(Op::Reshape(x, spec.to_vec()), shape, self.dtype(), chunks))
    }

    /// The elements where the boolean `mask` (of the same shape) is true, as a 1-d tensor
    /// in row-major order (numpy's `a[mask]`). Its length is known once it has run.
    pub fn mask(&self, mask: &Tensor) -> Result<Tensor> {
        if mask.dtype() != DType::Bool {
            return Err(TensorError::BadDType { op: "indexing with a non-boolean mask".into(), dtype: mask.dtype() });
        }
        // Unknown lengths are checked when the mask is built again on known ones.
        let unknown = self.has_unknown_shape() || mask.has_unknown_shape();
        if mask.ndim() != self.ndim() || (!unknown && mask.shape() != self.shape()) {
            return Err(TensorError::ShapeMismatch { a: self.shape().to_vec(), b: mask.shape().to_vec() });
        }
        let x = self.row_chunked()?;
        let m = if mask.chunks() == x.chunks() || x.has_unknown_shape() || mask.has_unknown_shape() {
            // Unknown chunks are aligned when the mask is built again on known ones.
            mask.clone()
        } else {
            mask.rechunk_to(x.chunks().to_vec())
        };
        if m.chunks() != x.chunks() && !m.has_unknown_shape() {
            return Err(TensorError::ChunkMismatch { dim: 0, a: x.chunks()[0].clone(), b: m.chunks()[0].clone() });
        }
        let n = x.chunks().iter().map(|c| c.len()).product::<usize>().max(1);
        let dtype = x.dtype();
        Ok(Tensor::new(Op::Mask(x, m), vec![UNKNOWN], dtype, vec![vec![UNKNOWN; n]]))
    }

    // ------------------------------------------------------------------ linear algebra

    /// A 2-d float tensor (integers and bools cast to float64) with known shape, for `op`.
    fn matrix(&self, op: &str) -> Result<Tensor> {
        self.known(op)?;
        if self.ndim() != 2 {
            return Err(TensorError::BadMatrix {
                op: op.into(),
                reason: format!("needs a 2-d tensor, not {:?}", self.shape()),
            });
        }
        Ok(if self.dtype().is_float() { self.clone() } else { self.astype(DType::F64) })
    }

    /// The same elements in the given chunks (possibly irregular). Only for known shapes:
    /// the sizes kept for a rebuild are each dimension's first, and known shapes are never
    /// rebuilt.
    pub(crate) fn rechunk_to(&self, chunks: Vec<Vec<u64>>) -> Tensor {
        debug_assert!(!self.has_unknown_shape(), "rechunk_to needs known chunks");
        if chunks == self.chunks() {
            return self.clone();
        }
        let sizes = chunks.iter().map(|c| c[0].max(1)).collect();
        Tensor::new(Op::Rechunk(self.clone(), sizes), self.shape().to_vec(), self.dtype(), chunks)
    }

    fn factor(x: &Tensor, f: Factor, shape: Vec<u64>, chunks: Vec<Vec<u64>>) -> Tensor {
        Tensor::new(Op::Factor(x.clone(), f), shape, x.dtype(), chunks)
    }

    /// For TSQR: whole columns, and row chunks of at least as many rows as columns.
    fn tall_skinny(&self, op: &str) -> Result<Tensor> {
        let x = self.matrix(op)?;
        let (m, n) = (x.shape()[0], x.shape()[1]);
        if m < n || n == 0 {
            return Err(TensorError::BadMatrix {
                op: op.into(),
                reason: format!("TSQR needs a tall-skinny matrix (rows ≥ columns > 0), not {m}×{n}"),
            });
        }
        let rows = x.chunks()[0][0].max(n);
        let mut sizes = split(m, rows);
        if sizes.len() > 1 && *sizes.last().expect("non-empty") < n {
            let tail = sizes.pop().expect("non-empty");
            *sizes.last_mut().expect("non-empty") += tail;
        }
        Ok(x.rechunk_to(vec![sizes, vec![n]]))
    }

    /// QR of a tall-skinny matrix by TSQR (each row chunk factored on its own, then the
    /// stacked `R`s): `(Q, R)` with `Q` `m × n` (orthonormal columns) and `R` `n × n`
    /// upper triangular, numpy's `linalg.qr(a)` (`mode="reduced"`).
    pub fn qr(&self) -> Result<(Tensor, Tensor)> {
        let w = self.matrix("qr")?;
        let (m, n) = (w.shape()[0], w.shape()[1]);
        if m > 0 && m < n {
            // Wide (numpy's reduced form: `Q` `m × m`, `R` `m × n`): factor the leading
            // square block, `A[:, :m] = Q·R₁`; the rest of `R` is `Qᵀ·A[:, m:]`.
            let left = w.slice(&[Slice::all(), Slice::range(0, m as i64)])?;
            let right = w.slice(&[Slice::all(), Slice::range(m as i64, n as i64)])?;
            let (q, r1) = left.qr()?;
            let right = right.rechunk_to(vec![q.chunks()[0].clone(), right.chunks()[1].clone()]);
            let r2 = q.t()?.matmul(&right)?;
            let r2 = r2.rechunk_to(vec![r1.chunks()[0].clone(), r2.chunks()[1].clone()]);
            return Ok((q, concatenate(&[r1, r2], 1)?));
        }
        let x = self.tall_skinny("qr")?;
        let n = x.shape()[1];
        let q = Tensor::factor(&x, Factor::Q, x.shape().to_vec(), x.chunks().to_vec());
        let r = Tensor::factor(&x, Factor::R, vec![n, n], vec![vec![n], vec![n]]);
        Ok((q, r))
    }

    /// SVD of a tall-skinny matrix through TSQR: `(U, S, Vᵀ)` with `U` `m × n`, `S` the `n`
    /// singular values in decreasing order, `Vᵀ` `n × n`; numpy's
    /// `linalg.svd(a, full_matrices=False)`.
    pub fn svd(&self) -> Result<(Tensor, Tensor, Tensor)> {
        let x = self.tall_skinny("svd")?;
        let n = x.shape()[1];
        let u = Tensor::factor(&x, Factor::U, x.shape().to_vec(), x.chunks().to_vec());
        let s = Tensor::factor(&x, Factor::S, vec![n], vec![vec![n]]);
        let vt = Tensor::factor(&x, Factor::Vt, vec![n, n], vec![vec![n], vec![n]]);
        Ok((u, s, vt))
    }

    /// The lower Cholesky factor `L` (`a = L · Lᵀ`) of a symmetric positive-definite
    /// matrix, blocked over square chunks (rechunked to square if they are not).
    pub fn cholesky(&self) -> Result<Tensor> {
        let x = self.matrix("cholesky")?;
        let n = x.shape()[0];
        if x.shape()[1] != n {
            return Err(TensorError::BadMatrix {
                op: "cholesky".into(),
                reason: format!("{:?} is not square", x.shape()),
            });
        }
        let b = x.chunks()[0][0].max(1);
        let x = x.rechunk_to(vec![split(n, b), split(n, b)]);
        Ok(Tensor::factor(&x, Factor::L, x.shape().to_vec(), x.chunks().to_vec()))
    }

    /// The inverse of a square matrix (numpy's `linalg.inv`), by [`solve`] against the
    /// identity.
    pub fn inv(&self) -> Result<Tensor> {
        let x = self.matrix("inv")?;
        let b = x.chunks()[1][0] as usize;
        solve(&x, &eye(x.shape()[0], b.max(1))?)
    }

    /// Inserts a dimension of 1 at `axis` (numpy's `expand_dims`).
    pub fn expand_dims(&self, axis: usize) -> Result<Tensor> {
        if axis > self.ndim() {
            return Err(TensorError::BadAxis { axis, ndim: self.ndim() + 1 });
        }
        let mut spec: Vec<i64> = self.shape().iter().map(|&d| if d == UNKNOWN { -1 } else { d as i64 }).collect();
        spec.insert(axis, 1);
        self.reshape(&spec)
    }

    /// Computes the tensor in `session` and keeps its chunks until it is dropped (Mars'
    /// `t.execute(session)`).
    pub fn execute(&self, session: &crate::Session) -> Result<()> {
        session.execute(self)
    }

    /// Computes the tensor in `session` and returns it as an ndarray of `T` (cast if needed).
    pub fn fetch<T: Elem>(&self, session: &crate::Session) -> Result<ArrayD<T>> {
        session.fetch(self)
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
            Op::Full(_)
            | Op::Random { .. }
            | Op::Arange { .. }
            | Op::FromChunks(_)
            | Op::Stored(_)
            | Op::Source(_)
            | Op::MatMul(..)
            | Op::Slice { .. }
            | Op::Factor(..)
            | Op::Solve(..) => self.clone(),
            Op::Mask(x, m) => x.mask(m)?,
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
            | Op::Factor(x, _) => vec![x],
            Op::Binary(_, a, b) | Op::MatMul(a, b) | Op::Mask(a, b) | Op::Solve(a, b) => vec![a, b],
            Op::Where(c, a, b) => vec![c, a, b],
            Op::Concat(xs, _) => xs.iter().collect(),
        }
    }
}

fn full_like_scalar(s: Scalar, like: &Tensor) -> Tensor {
    // A 0-d tensor broadcasts to anything.
    let _ = like;
    Tensor::new(Op::Full(s), Vec::new(), s.dtype(), Vec::new())
}

/// Operands chunked differently along a dimension of the same length (`x[1:] - x[:-1]`,
/// a reversed view plus the original, a mask combined with another tensor) are rechunked
/// alike, as Dask does: the cheaper side, the operand with fewer elements, takes the
/// other's chunk boundaries (irregular ones included). Returns the operands unchanged
/// when they already line up, or while a length is not known yet (they are unified again
/// when the expression is rebuilt on known lengths).
fn unify(a: &Tensor, b: &Tensor) -> Result<(Tensor, Tensor)> {
    let (sa, sb) = (a.shape(), b.shape());
    let k = sa.len().min(sb.len());
    let aligned = (1..=k).all(|i| {
        let (da, db) = (sa.len() - i, sb.len() - i);
        sa[da] != sb[db] || a.chunks()[da] == b.chunks()[db]
    });
    if aligned || a.has_unknown_shape() || b.has_unknown_shape() {
        return Ok((a.clone(), b.clone()));
    }
    let swapped = (sb.len(), b.size()) > (sa.len(), a.size());
    let (big, small) = if swapped { (b, a) } else { (a, b) };
    let off = big.ndim() - small.ndim();
    let grid: Vec<Vec<u64>> = (0..small.ndim())
        .map(|d| {
            let same = small.shape()[d] == big.shape()[d + off];
            if same { big.chunks()[d + off].clone() } else { small.chunks()[d].clone() }
        })
        .collect();
    let small = small.rechunk_to(grid);
    Ok(if swapped { (small, big.clone()) } else { (big.clone(), small) })
}

/// numpy broadcasting of two operands' shapes and chunk grids.
fn broadcast(a: &Tensor, b: &Tensor) -> Result<(Vec<u64>, Vec<Vec<u64>>)> {
    let nd = a.ndim().max(b.ndim());
    let pad = |t: &Tensor| -> (Vec<u64>, Vec<Vec<u64>>) {
        let k = nd - t.ndim();
        let mut s = vec![1; k];
        s.extend_from_slice(t.shape());
        let mut c = vec![vec![1]; k];
        c.extend_from_slice(t.chunks());
        (s, c)
    };
    let (sa, ca) = pad(a);
    let (sb, cb) = pad(b);
    let mut shape = Vec::with_capacity(nd);
    let mut chunks = Vec::with_capacity(nd);
    for d in 0..nd {
        match (sa[d], sb[d]) {
            (x, y) if (x == UNKNOWN) != (y == UNKNOWN) && x != 1 && y != 1 => {
                return Err(TensorError::UnknownShape { op: "broadcasting against a known length".into() });
            }
            // Length 1 in one chunk broadcasts against any split of length 1 (a mask's
            // result can come out as `[1, 0]`).
            (1, 1) if ca[d] != cb[d] && (ca[d].len() == 1 || cb[d].len() == 1) => {
                shape.push(1);
                chunks.push(if ca[d].len() == 1 { cb[d].clone() } else { ca[d].clone() });
            }
            (x, y) if x == y => {
                // Two unknown lengths (two masks' results) are lined up, or found to
                // differ, when the expression is rebuilt on the known ones.
                if ca[d] != cb[d] && x != UNKNOWN {
                    return Err(TensorError::ChunkMismatch { dim: d, a: ca[d].clone(), b: cb[d].clone() });
                }
                shape.push(x);
                chunks.push(ca[d].clone());
            }
            (1, y) => {
                shape.push(y);
                chunks.push(cb[d].clone());
            }
            (x, 1) => {
                shape.push(x);
                chunks.push(ca[d].clone());
            }
            _ => return Err(TensorError::ShapeMismatch { a: a.shape().to_vec(), b: b.shape().to_vec() }),
        }
    }
    Ok((shape, chunks))
}

macro_rules! ops {
    ($trait:ident, $method:ident, $op:expr) => {
        impl std::ops::$trait<&Tensor> for &Tensor {
            type Output = Tensor;
            /// Panics if the operands cannot be broadcast; use [`Tensor::binary`] for a `Result`.
            fn $method(self, rhs: &Tensor) -> Tensor {
                self.binary($op, rhs).unwrap_or_else(|e| panic!("{e}"))
            }
        }
        impl std::ops::$trait<Tensor> for Tensor {
            type Output = Tensor;
            fn $method(self, rhs: Tensor) -> Tensor {
                (&self).$method(&rhs)
            }
        }
        impl std::ops::$trait<&Tensor> for Tensor {
            type Output = Tensor;
            fn $method(self, rhs: &Tensor) -> Tensor {
                (&self).$method(rhs)
            }
        }
        impl std::ops::$trait<Tensor> for &Tensor {
            type Output = Tensor;
            fn $method(self, rhs: Tensor) -> Tensor {
                self.$method(&rhs)
            }
        }
        impl std::ops::$trait<f64> for &Tensor {
            type Output = Tensor;
            fn $method(self, rhs: f64) -> Tensor {
                self.binary_scalar($op, Scalar::F64(rhs)).unwrap_or_else(|e| panic!("{e}"))
            }
        }
        impl std::ops::$trait<f64> for Tensor {
            type Output = Tensor;
            fn $method(self, rhs: f64) -> Tensor {
                (&self).$method(rhs)
            }
        }
    };
}
ops!(Add, add, BinOp::Add);
ops!(Sub, sub, BinOp::Sub);
ops!(Mul, mul, BinOp::Mul);
ops!(Div, div, BinOp::Div);

impl std::ops::Neg for &Tensor {
    type Output = Tensor;
    /// Panics for a boolean tensor, as numpy refuses it; use [`Tensor::negate`] for a `Result`.
    fn neg(self) -> Tensor {
        self.negate().unwrap_or_else(|e| panic!("{e}"))
    }
}

impl Tensor {
    /// `-x` (numpy refuses booleans).
    pub fn negate(&self) -> Result<Tensor> {
        self.unary(UnOp::Neg)
    }
}

/// Tensors joined along `axis` (numpy's `concatenate`); the other dimensions must agree.
/// Operands chunked differently along them are rechunked like the first.
pub fn concatenate(xs: &[Tensor], axis: usize) -> Result<Tensor> {
    let first =
        xs.first().ok_or_else(|| TensorError::BadIndex { reason: "concatenate needs at least one tensor".into() })?;
    let nd = first.ndim();
    if axis >= nd {
        return Err(TensorError::BadAxis { axis, ndim: nd });
    }
    let dtype = xs.iter().map(|x| x.dtype()).reduce(DType::promote).expect("non-empty");
    let mut parts = Vec::with_capacity(xs.len());
    for x in xs {
        let same = x.ndim() == nd && (0..nd).all(|d| d == axis || x.shape()[d] == first.shape()[d]);
        if !same {
            return Err(TensorError::ShapeMismatch { a: first.shape().to_vec(), b: x.shape().to_vec() });
        }
        let aligned = (0..nd).all(|d| d == axis || x.chunks()[d] == first.chunks()[d]);
        let x = if aligned {
            x.clone()
        } else {
            x.known("concatenate of differently chunked tensors")?;
            first.known("concatenate of differently chunked tensors")?;
            let want = (0..nd).map(|d| if d == axis { x.chunks()[d].clone() } else { first.chunks()[d].clone() });
            x.rechunk_to(want.collect())
        };
        parts.push(if x.dtype() == dtype { x } else { x.astype(dtype) });
    }
    let mut shape = first.shape().to_vec();
    let lens: Vec<u64> = parts.iter().map(|x| x.shape()[axis]).collect();
    shape[axis] = if lens.contains(&UNKNOWN) { UNKNOWN } else { lens.iter().sum() };
    let mut chunks = first.chunks().to_vec();
    chunks[axis] = parts.iter().flat_map(|x| x.chunks()[axis].clone()).collect();
    Ok(Tensor::new(Op::Concat(parts, axis), shape, dtype, chunks))
}

/// `x` with `a · x = b` for a square `a` and `b` of `n` or `n × k` (numpy's
/// `linalg.solve`): blocked LU with partial pivoting over column panels of `a` (each panel
/// is one task, so pivots are chosen over whole columns), then blocked back substitution.
/// A singular `a` fails the computation with a message that says so.
pub fn solve(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let a = a.matrix("solve")?;
    let n = a.shape()[0];
    if a.shape()[1] != n {
        return Err(TensorError::BadMatrix { op: "solve".into(), reason: format!("{:?} is not square", a.shape()) });
    }
    b.known("solve")?;
    let vector = b.ndim() == 1;
    let b2 = if vector { b.reshape(&[-1, 1])? } else { b.clone() };
    if b2.ndim() != 2 || b2.shape()[0] != n {
        return Err(TensorError::ShapeMismatch { a: a.shape().to_vec(), b: b.shape().to_vec() });
    }
    let b2 = if b2.dtype().is_float() { b2 } else { b2.astype(DType::F64) };
    let dtype = DType::promote(a.dtype(), b2.dtype());
    let (a, b2) = (a.astype_if(dtype), b2.astype_if(dtype));
    let k = b2.shape()[1];
    let x = Tensor::new(Op::Solve(a.clone(), b2), vec![n, k], dtype, vec![a.chunks()[1].clone(), vec![k]]);
    if vector { x.reshape(&[n as i64]) } else { Ok(x) }
}

/// Sum of products over the last axis of `a` and the last axis of `b` (numpy's `inner`):
/// for 1-d operands their dot product, for 2-d `a · bᵀ`.
pub fn inner(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let (na, nb) = (a.ndim(), b.ndim());
    if na == 0 || nb == 0 {
        return a.binary(BinOp::Mul, b);
    }
    tensordot(a, b, &[na - 1], &[nb - 1])
}

/// Sum of products over `axes_a` of `a` and `axes_b` of `b` (numpy's
/// `tensordot(a, b, axes=(axes_a, axes_b))`): the result has `a`'s other axes, then
/// `b`'s. Computed as a blocked matrix product of the operands permuted and reshaped to
/// matrices.
pub fn tensordot(a: &Tensor, b: &Tensor, axes_a: &[usize], axes_b: &[usize]) -> Result<Tensor> {
    a.known("tensordot")?;
    b.known("tensordot")?;
    if axes_a.len() != axes_b.len() {
        return Err(TensorError::BadIndex { reason: format!("axes {axes_a:?} and {axes_b:?} differ in number") });
    }
    for (&x, &y) in axes_a.iter().zip(axes_b) {
        if x >= a.ndim() || y >= b.ndim() {
            return Err(TensorError::BadAxis { axis: x.max(y), ndim: a.ndim().min(b.ndim()) });
        }
        if a.shape()[x] != b.shape()[y] {
            return Err(TensorError::ShapeMismatch { a: a.shape().to_vec(), b: b.shape().to_vec() });
        }
    }
    let free_a: Vec<usize> = (0..a.ndim()).filter(|d| !axes_a.contains(d)).collect();
    let free_b: Vec<usize> = (0..b.ndim()).filter(|d| !axes_b.contains(d)).collect();
    let pa: Vec<usize> = free_a.iter().chain(axes_a).copied().collect();
    let pb: Vec<usize> = axes_b.iter().chain(&free_b).copied().collect();
    let (m, k, n) = (
        free_a.iter().map(|&d| a.shape()[d]).product::<u64>(),
        axes_a.iter().map(|&d| a.shape()[d]).product::<u64>(),
        free_b.iter().map(|&d| b.shape()[d]).product::<u64>(),
    );
    let am = a.permute(&pa)?.reshape(&[m as i64, k as i64])?;
    let bm = b.permute(&pb)?.reshape(&[k as i64, n as i64])?;
    // The shared dimension must be chunked alike: use b's row chunks for both.
    let am = am.rechunk_to(vec![am.chunks()[0].clone(), bm.chunks()[0].clone()]);
    let prod = am.matmul(&bm)?;
    let shape: Vec<i64> =
        free_a.iter().map(|&d| a.shape()[d] as i64).chain(free_b.iter().map(|&d| b.shape()[d] as i64)).collect();
    prod.reshape(&shape)
}

/// Tensors of one shape stacked along a new `axis` (numpy's `stack`).
pub fn stack(xs: &[Tensor], axis: usize) -> Result<Tensor> {
    let expanded = xs.iter().map(|x| x.expand_dims(axis)).collect::<Result<Vec<_>>>()?;
    concatenate(&expanded, axis)
}

/// One dimension of a basic slice, numpy's `start:stop:step` (negative positions count
/// from the end; `None` is the default end).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slice {
    /// First position.
    pub start: Option<i64>,
    /// Position after the last.
    pub stop: Option<i64>,
    /// Stride (not 0; negative walks backwards).
    pub step: i64,
}

impl Default for Slice {
    fn default() -> Self {
        Slice { start: None, stop: None, step: 1 }
    }
}

impl Slice {
    /// `start:stop:step`.
    pub fn new(start: Option<i64>, stop: Option<i64>, step: i64) -> Self {
        Slice { start, stop, step }
    }
    /// `start:stop`.
    pub fn range(start: i64, stop: i64) -> Self {
        Slice { start: Some(start), stop: Some(stop), step: 1 }
    }
    /// `:` (the whole dimension).
    pub fn all() -> Self {
        Slice::default()
    }

    /// First position, stride and length along a dimension of `n` (Python's
    /// `slice.indices`).
    fn resolve(self, n: u64) -> Result<(u64, i64, u64)> {
        if self.step == 0 {
            return Err(TensorError::BadIndex { reason: "slice step cannot be zero".into() });
        }
        let n = n as i64;
        let clamp = |v: Option<i64>, default: i64, lo: i64, hi: i64| match v {
            None => default,
            Some(v) if v < 0 => (v + n).max(lo),
            Some(v) => v.min(hi),
        };
        let (start, stop) = if self.step > 0 {
            (clamp(self.start, 0, 0, n), clamp(self.stop, n, 0, n))
        } else {
            (clamp(self.start, n - 1, -1, n - 1), clamp(self.stop, -1, -1, n - 1))
        };
        let len = if self.step > 0 {
            if stop > start { (stop - start + self.step - 1) / self.step } else { 0 }
        } else if start > stop {
            (start - stop - self.step - 1) / -self.step
        } else {
            0
        };
        Ok((if len == 0 { 0 } else { start as u64 }, self.step, len as u64))
    }
}

/// Chunk sizes of a slice along one dimension: the selected elements of each input chunk
/// (visited in the slice's direction), empty ones dropped.
fn slice_chunks(chunks: &[u64], start: u64, step: i64, len: u64) -> Vec<u64> {
    let mut out = Vec::new();
    if len == 0 {
        return vec![0];
    }
    let bounds: Vec<(u64, u64)> = chunks
        .iter()
        .scan(0u64, |acc, &c| {
            let b = (*acc, *acc + c);
            *acc += c;
            Some(b)
        })
        .collect();
    let mut i = 0u64;
    while i < len {
        let pos = (start as i64 + i as i64 * step) as u64;
        let (lo, hi) = *bounds.iter().find(|(lo, hi)| pos >= *lo && pos < *hi).expect("inside");
        // Elements of the slice that stay in [lo, hi).
        let room = if step > 0 { (hi - 1 - pos) / step as u64 + 1 } else { (pos - lo) / (-step) as u64 + 1 };
        let take = room.min(len - i);
        out.push(take);
        i += take;
    }
    out
}

/// Output chunks of a reshape: unchanged when only dimensions of 1 are inserted or
/// removed; otherwise split along the first dimension only, about as many elements per
/// chunk as the input's first chunk.
pub(crate) fn reshape_chunks(x: &Tensor, shape: &[u64]) -> Vec<Vec<u64>> {
    if let Some(c) = squeeze_chunks(x, shape) {
        return c;
    }
    if shape.is_empty() {
        return Vec::new();
    }
    let per_chunk: u64 = x.chunks().iter().map(|c| c.first().copied().unwrap_or(1)).product::<u64>().max(1);
    let row: u64 = shape[1..].iter().product::<u64>().max(1);
    let rows = (per_chunk / row).max(1);
    let mut out = vec![split(shape[0], rows)];
    out.extend(shape[1..].iter().map(|&n| vec![n]));
    out
}

/// The chunks of `x` with dimensions of 1 inserted or removed, if that is all the
/// reshape to `shape` does.
pub(crate) fn squeeze_chunks(x: &Tensor, shape: &[u64]) -> Option<Vec<Vec<u64>>> {
    let (a, b): (Vec<usize>, Vec<usize>) =
        ((0..x.ndim()).filter(|&d| x.shape()[d] != 1).collect(), (0..shape.len()).filter(|&d| shape[d] != 1).collect());
    if a.len() != b.len() || a.iter().zip(&b).any(|(&i, &j)| x.shape()[i] != shape[j]) {
        return None;
    }
    let mut out: Vec<Vec<u64>> = shape.iter().map(|_| vec![1]).collect();
    for (&i, &j) in a.iter().zip(&b) {
        out[j] = x.chunks()[i].clone();
    }
    Some(out)
}

/// `c ? a : b`, element-wise with broadcasting.
pub fn where_(c: &Tensor, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    // Every operand follows the largest one's chunks (see `unify`).
    let (a, b) = unify(a, b)?;
    let (c, a) = unify(c, &a)?;
    let (c, b) = unify(&c, &b)?;
    let (a, b) = (&a, &b);
    let c = &c;
    let ab = a.binary(BinOp::Add, b)?;
    let probe = Tensor::new(Op::Full(Scalar::Bool(false)), ab.shape().to_vec(), DType::Bool, ab.chunks().to_vec());
    let (shape, chunks) = broadcast(c, &probe)?;
    let dtype = DType::promote(a.dtype(), b.dtype());
    Ok(Tensor::new(Op::Where(c.clone(), a.clone(), b.clone()), shape, dtype, chunks))
}

// ---------------------------------------------------------------------- creation

/// A 0-d tensor holding `s` (useful in `where_`).
pub fn scalar(s: Scalar) -> Tensor {
    Tensor::new(Op::Full(s), Vec::new(), s.dtype(), Vec::new())
}

/// A tensor of `shape` filled with `value`, in chunks of `chunks` per dimension.
pub fn full(shape: &[u64], value: Scalar, chunks: &[usize]) -> Result<Tensor> {
    Ok(Tensor::new(Op::Full(value), shape.to_vec(), value.dtype(), grid(shape, chunks)?))
}

/// Ones (float64).
pub fn ones(shape: &[u64], chunks: &[usize]) -> Result<Tensor> {
    full(shape, Scalar::F64(1.0), chunks)
}

/// Zeros (float64).
pub fn zeros(shape: &[u64], chunks: &[usize]) -> Result<Tensor> {
    full(shape, Scalar::F64(0.0), chunks)
}

/// `start, start + step, ...` below `stop` (float64), like `numpy.arange`.
pub fn arange(start: f64, stop: f64, step: f64, chunk: usize) -> Result<Tensor> {
    let len = ((stop - start) / step).ceil().max(0.0);
    if step == 0.0 || !len.is_finite() || len >= (1u64 << 53) as f64 {
        return Err(TensorError::BadIndex { reason: format!("arange({start}, {stop}, {step}) has no finite length") });
    }
    let n = len as u64;
    Ok(Tensor::new(Op::Arange { start, step }, vec![n], DType::F64, grid(&[n], &[chunk])?))
}

/// `num` evenly spaced values from `start` to `stop` inclusive, like `numpy.linspace`.
pub fn linspace(start: f64, stop: f64, num: u64, chunk: usize) -> Result<Tensor> {
    let step = if num > 1 { (stop - start) / (num - 1) as f64 } else { 0.0 };
    Ok(Tensor::new(Op::Arange { start, step }, vec![num], DType::F64, grid(&[num], &[chunk])?))
}

/// The identity matrix of size `n` (float64).
pub fn eye(n: u64, chunk: usize) -> Result<Tensor> {
    let i = arange(0.0, n as f64, 1.0, chunk)?;
    let row = reshape_col(&i);
    let col = reshape_row(&i);
    Ok(row.binary(BinOp::Eq, &col)?.astype(DType::F64))
}

fn reshape_col(t: &Tensor) -> Tensor {
    let mut shape = t.shape().to_vec();
    shape.push(1);
    let mut chunks = t.chunks().to_vec();
    chunks.push(vec![1]);
    view(t, shape, chunks)
}

fn reshape_row(t: &Tensor) -> Tensor {
    let mut shape = vec![1];
    shape.extend_from_slice(t.shape());
    let mut chunks = vec![vec![1]];
    chunks.extend_from_slice(t.chunks());
    view(t, shape, chunks)
}

/// A 1-d creation tensor seen with an extra dimension of 1 (same elements, same order).
fn view(t: &Tensor, shape: Vec<u64>, chunks: Vec<Vec<u64>>) -> Tensor {
    match &t.node.op {
        Op::Arange { start, step } => Tensor::new(Op::Arange { start: *start, step: *step }, shape, t.dtype(), chunks),
        _ => unreachable!("only used on aranges"),
    }
}

/// A tensor holding `a`, split into chunks of `chunks` per dimension.
pub fn from_array<T: Elem>(a: &ArrayD<T>, chunks: &[usize]) -> Result<Tensor> {
    from_view(a.view(), chunks)
}

/// A tensor holding a copy of the viewed elements (any strides), split into chunks of
/// `chunks` per dimension: each chunk is copied once, straight from the view.
pub fn from_view<T: Elem>(a: ndarray::ArrayViewD<'_, T>, chunks: &[usize]) -> Result<Tensor> {
    let shape: Vec<u64> = a.shape().iter().map(|&d| d as u64).collect();
    let g = grid(&shape, chunks)?;
    let mut out = Vec::new();
    for idx in grid_indices(&g) {
        let mut view = a.view();
        for (d, &i) in idx.iter().enumerate() {
            let start: u64 = g[d][..i].iter().sum();
            let len = g[d][i];
            view.slice_axis_inplace(ndarray::Axis(d), ndarray::Slice::from(start as usize..(start + len) as usize));
        }
        out.push(Chunk::from_array(&view.to_owned()));
    }
    Ok(Tensor::new(Op::FromChunks(out), shape, T::DTYPE, g))
}

/// Chunks that another library's tasks make (a frame's columns, say), in the graph of
/// whatever expression reads them: the engine's half of [`from_source`].
pub trait ChunkSource: Send + Sync + std::fmt::Debug + 'static {
    /// The other library's tileable the chunks are made from (for the engine's
    /// bookkeeping: depth and when its chunks may be let go).
    fn operand(&self) -> &dyn ares_tileable::Node;
    /// Tiles the chunks into `cx`: each chunk's node (its result an `ObjectRef<Chunk>` of
    /// the tensor's dtype, holding a run of rows) and its length along the first
    /// dimension. The lengths are often known only once the chunks ran: then it waits
    /// ([`ares_tileable::Tiling::Pending`]) and is called again. Each node returned
    /// carries one hold ([`ares_tileable::Graph::hold`]) that the tensor takes over.
    fn tile(&self, cx: &mut ares_tileable::Cx<'_>) -> ares_tileable::TileResult<Vec<(usize, u64)>, TensorError>;
}

/// A tensor of `dtype` whose chunks `source` makes, split along the first dimension, of
/// `trailing` further dimensions (`[]` for 1-d): its length is unknown until it runs, as
/// a mask's result is, and it is computed in the same graph as the expression reading it.
pub fn from_source(source: Arc<dyn ChunkSource>, dtype: DType, trailing: &[u64]) -> Tensor {
    let mut shape = vec![UNKNOWN];
    shape.extend_from_slice(trailing);
    let mut chunks = vec![vec![UNKNOWN]];
    chunks.extend(trailing.iter().map(|&d| vec![d]));
    Tensor::new(Op::Source(source), shape, dtype, chunks)
}

/// A tensor of chunks already in the object store: `chunks` gives the chunk sizes along
/// each dimension, and `refs` the chunks in row-major grid order. This is how another
/// library hands its results to tensors (a data frame's `to_tensor`). Each ref must hold
/// a chunk of `dtype` and of its grid cell's shape: a task given another fails.
pub fn from_chunk_refs(dtype: DType, chunks: Vec<Vec<u64>>, refs: Vec<ares::ObjectRef<Chunk>>) -> Result<Tensor> {
    let cells: usize = chunks.iter().map(Vec::len).product();
    if chunks.is_empty() || chunks.iter().any(Vec::is_empty) || cells != refs.len() {
        return Err(TensorError::BadIndex {
            reason: format!("{} chunk refs for a grid of {chunks:?} chunk sizes ({cells} chunks)", refs.len()),
        });
    }
    let shape = chunks.iter().map(|d| d.iter().sum()).collect();
    Ok(Tensor::new(Op::Stored(Arc::new(refs)), shape, dtype, chunks))
}

/// Every grid index, row-major.
pub(crate) fn grid_indices(g: &[Vec<u64>]) -> Vec<Vec<usize>> {
    let mut out = vec![Vec::new()];
    for dim in g {
        out = out.into_iter().flat_map(|p| (0..dim.len()).map(move |i| [p.clone(), vec![i]].concat())).collect();
    }
    out
}

/// Random tensors, reproducible for a seed whatever the chunking.
pub mod random {
    use super::*;

    fn make(kind: RandKind, dtype: DType, shape: &[u64], chunks: &[usize], seed: u64) -> Result<Tensor> {
        Ok(Tensor::new(Op::Random { kind, seed }, shape.to_vec(), dtype, grid(shape, chunks)?))
    }

    /// Uniform on `[low, high)` (float64).
    pub fn uniform(low: f64, high: f64, shape: &[u64], chunks: &[usize], seed: u64) -> Result<Tensor> {
        make(RandKind::Uniform { low, high }, DType::F64, shape, chunks, seed)
    }
    /// Uniform on `[0, 1)` (float64), like `numpy.random.rand`.
    pub fn rand(shape: &[u64], chunks: &[usize], seed: u64) -> Result<Tensor> {
        uniform(0.0, 1.0, shape, chunks, seed)
    }
    /// Standard normal (float64), like `numpy.random.randn`.
    pub fn randn(shape: &[u64], chunks: &[usize], seed: u64) -> Result<Tensor> {
        make(RandKind::Normal, DType::F64, shape, chunks, seed)
    }
    /// Integers on `[low, high)` (int64), like `numpy.random.randint`.
    pub fn randint(low: i64, high: i64, shape: &[u64], chunks: &[usize], seed: u64) -> Result<Tensor> {
        make(RandKind::Int { low, high }, DType::I64, shape, chunks, seed)
    }
}
