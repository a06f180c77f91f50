//! The tileable level: a [`Tensor`] is a lazy expression with a shape, a dtype and a chunk
//! grid. Nothing runs until [`Session::execute`](crate::Session::execute) or
//! [`Tensor::fetch`].

use std::sync::{Arc, Mutex};

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
    /// A fused chunk operation would need more input chunks than a task takes.
    #[error("a fused chunk operation needs {n} input chunks; at most {max} are supported")]
    TooManyInputs {
        /// Needed.
        n: usize,
        /// Supported.
        max: usize,
    },
    /// The runtime failed (a task failed, or the runtime is not started).
    #[error(transparent)]
    Runtime(#[from] ares::Error),
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
}

#[derive(Debug)]
pub(crate) struct Node {
    pub(crate) op: Op,
    pub(crate) shape: Vec<u64>,
    pub(crate) dtype: DType,
    /// Chunk sizes along each dimension.
    pub(crate) chunks: Vec<Vec<u64>>,
    /// The computed chunks (row-major over the grid), once executed.
    pub(crate) result: Mutex<Option<Arc<Vec<ObjectRef<Chunk>>>>>,
}

/// A lazy, chunked n-dimensional array.
#[derive(Clone, Debug)]
pub struct Tensor {
    pub(crate) node: Arc<Node>,
}

pub(crate) fn split(n: u64, size: u64) -> Vec<u64> {
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
        Tensor { node: Arc::new(Node { op, shape, dtype, chunks, result: Mutex::new(None) }) }
    }

    /// The shape.
    pub fn shape(&self) -> &[u64] {
        &self.node.shape
    }

    /// The dtype.
    pub fn dtype(&self) -> DType {
        self.node.dtype
    }

    /// Chunk sizes along each dimension.
    pub fn chunks(&self) -> &[Vec<u64>] {
        &self.node.chunks
    }

    /// Number of dimensions.
    pub fn ndim(&self) -> usize {
        self.node.shape.len()
    }

    /// Number of elements.
    pub fn size(&self) -> u64 {
        self.node.shape.iter().product()
    }

    // ------------------------------------------------------------------ element-wise

    fn unary(&self, op: UnOp) -> Result<Tensor> {
        let d = self.dtype();
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
        if matches!(op, BinOp::Sub) && self.dtype() == DType::Bool && other.dtype() == DType::Bool {
            return Err(TensorError::BadDType { op: "subtraction of booleans".into(), dtype: DType::Bool });
        }
        let (shape, chunks) = broadcast(self, other)?;
        let dtype = binary_dtype(op, self.dtype(), other.dtype());
        Ok(Tensor::new(Op::Binary(op, self.clone(), other.clone()), shape, dtype, chunks))
    }

    /// Element-wise with a scalar.
    pub fn binary_scalar(&self, op: BinOp, s: Scalar) -> Result<Tensor> {
        // Python scalars do not upcast arrays (numpy's value-based casting): keep the
        // array's kind unless the scalar is a float and the array is not.
        let s = match (s, self.dtype()) {
            (Scalar::F64(v), DType::F32) => Scalar::F32(v as f32),
            (Scalar::I64(v), DType::I32) => Scalar::I32(v as i32),
            (Scalar::I64(v), DType::F32) => Scalar::F32(v as f32),
            (Scalar::I64(v), DType::F64) => Scalar::F64(v as f64),
            (s, _) => s,
        };
        self.binary(op, &full_like_scalar(s, self))
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
    /// Clips to `[lo, hi]`.
    pub fn clip(&self, lo: f64, hi: f64) -> Tensor {
        let lo_t = self.binary_scalar(BinOp::Maximum, Scalar::F64(lo)).expect("scalar");
        lo_t.binary_scalar(BinOp::Minimum, Scalar::F64(hi)).expect("scalar")
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
        if self.ndim() != 2 || b.ndim() != 2 || self.shape()[1] != b.shape()[0] {
            return Err(TensorError::ShapeMismatch { a: self.shape().to_vec(), b: b.shape().to_vec() });
        }
        if self.chunks()[1] != b.chunks()[0] {
            return Err(TensorError::ChunkMismatch { dim: 1, a: self.chunks()[1].clone(), b: b.chunks()[0].clone() });
        }
        let dtype = DType::promote(self.dtype(), b.dtype());
        if !dtype.is_float() {
            return Err(TensorError::BadDType { op: "matmul (cast to a float type first)".into(), dtype });
        }
        let shape = vec![self.shape()[0], b.shape()[1]];
        let chunks = vec![self.chunks()[0].clone(), b.chunks()[1].clone()];
        Ok(Tensor::new(Op::MatMul(self.clone(), b.clone()), shape, dtype, chunks))
    }

    /// Same as [`Tensor::matmul`].
    pub fn dot(&self, b: &Tensor) -> Result<Tensor> {
        self.matmul(b)
    }

    /// Computes the tensor in `session` and returns it as an ndarray of `T` (cast if needed).
    pub fn fetch<T: Elem>(&self, session: &crate::Session) -> Result<ArrayD<T>> {
        session.fetch(self)
    }
}

fn full_like_scalar(s: Scalar, like: &Tensor) -> Tensor {
    // A 0-d tensor broadcasts to anything.
    let _ = like;
    Tensor::new(Op::Full(s), Vec::new(), s.dtype(), Vec::new())
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
            (x, y) if x == y => {
                if ca[d] != cb[d] {
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
    fn neg(self) -> Tensor {
        self.unary(UnOp::Neg).expect("unary ops accept every dtype")
    }
}

/// `c ? a : b`, element-wise with broadcasting.
pub fn where_(c: &Tensor, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let ab = a.binary(BinOp::Add, b)?;
    let probe = Tensor::new(Op::Full(Scalar::Bool(false)), ab.shape().to_vec(), DType::Bool, ab.chunks().to_vec());
    let (shape, chunks) = broadcast(c, &probe)?;
    let dtype = DType::promote(a.dtype(), b.dtype());
    Ok(Tensor::new(Op::Where(c.clone(), a.clone(), b.clone()), shape, dtype, chunks))
}

// ---------------------------------------------------------------------- creation

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
    let n = ((stop - start) / step).ceil().max(0.0) as u64;
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
