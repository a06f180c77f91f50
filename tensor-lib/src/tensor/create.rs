//! Creation: constants, ranges, identity matrices, arrays from the driver, chunks another
//! library makes, and random numbers.

use std::sync::Arc;

use ndarray::ArrayD;

use super::{Op, Result, Tensor, TensorError, UNKNOWN, grid, grid_indices};
use crate::data::{Chunk, DType, Elem, Scalar};
use crate::kernel::{BinOp, RandKind};

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
    let (start, step) = (Scalar::F64(start), Scalar::F64(step));
    Ok(Tensor::new(Op::Arange { start, step }, vec![n], DType::F64, grid(&[n], &[chunk])?))
}

/// Integers `start, start + step, …` below `stop` (above it for a negative step), as
/// `numpy.arange` of integers: int64, computed exactly (no float64 on the way).
pub fn arange_int(start: i64, stop: i64, step: i64, chunk: usize) -> Result<Tensor> {
    if step == 0 {
        return Err(TensorError::BadIndex { reason: "arange: step cannot be zero".into() });
    }
    let span = i128::from(stop) - i128::from(start);
    let n = (span + i128::from(step) - i128::from(step.signum())) / i128::from(step);
    let n = n.max(0) as u64;
    let (start, step) = (Scalar::I64(start), Scalar::I64(step));
    Ok(Tensor::new(Op::Arange { start, step }, vec![n], DType::I64, grid(&[n], &[chunk])?))
}

/// `num` evenly spaced values from `start` to `stop` inclusive, like `numpy.linspace`.
pub fn linspace(start: f64, stop: f64, num: u64, chunk: usize) -> Result<Tensor> {
    let step = if num > 1 { (stop - start) / (num - 1) as f64 } else { 0.0 };
    let (start, step) = (Scalar::F64(start), Scalar::F64(step));
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
    /// A parameter check: `ok`, else numpy's message for `op`.
    fn need(ok: bool, op: &str, reason: &str) -> Result<()> {
        if ok { Ok(()) } else { Err(TensorError::BadParameter { op: op.into(), reason: reason.into() }) }
    }

    /// The largest Poisson mean whose sampler stays exact (numpy's limit is near it).
    const POISSON_LAM_MAX: f64 = 4_611_686_018_427_387_904.0; // 2^62

    /// Poisson counts of mean `lam` (int64), like `numpy.random.poisson`.
    pub fn poisson(lam: f64, shape: &[u64], chunks: &[usize], seed: u64) -> Result<Tensor> {
        need(lam >= 0.0, "poisson", "lam < 0 or lam is NaN")?;
        need(lam < POISSON_LAM_MAX, "poisson", "lam value too large")?;
        make(RandKind::Poisson { lam }, DType::I64, shape, chunks, seed)
    }
    /// Successes in `n` trials of probability `p` (int64), like `numpy.random.binomial`.
    pub fn binomial(n: i64, p: f64, shape: &[u64], chunks: &[usize], seed: u64) -> Result<Tensor> {
        need(n >= 0, "binomial", "n < 0")?;
        need((0.0..=1.0).contains(&p), "binomial", "p < 0, p > 1 or p is NaN")?;
        make(RandKind::Binomial { n, p }, DType::I64, shape, chunks, seed)
    }
    /// Gamma of shape `k` and scale 1 (float64), like `numpy.random.standard_gamma` (a NaN
    /// shape gives NaN, as numpy's).
    pub fn standard_gamma(k: f64, shape: &[u64], chunks: &[usize], seed: u64) -> Result<Tensor> {
        need(k >= 0.0 || k.is_nan(), "standard_gamma", "shape < 0")?;
        make(RandKind::Gamma { k }, DType::F64, shape, chunks, seed)
    }
    /// Failures before the `n`-th success of probability `p` (int64), like
    /// `numpy.random.negative_binomial`.
    pub fn negative_binomial(n: f64, p: f64, shape: &[u64], chunks: &[usize], seed: u64) -> Result<Tensor> {
        need(n > 0.0, "negative_binomial", "n <= 0")?;
        need(p > 0.0 && p <= 1.0, "negative_binomial", "p <= 0, p > 1 or p is NaN")?;
        need(
            (1.0 - p) / p * (n + 10.0 * n.sqrt()) < POISSON_LAM_MAX,
            "negative_binomial",
            "n too large or p too small",
        )?;
        make(RandKind::NegBinomial { n, p }, DType::I64, shape, chunks, seed)
    }
}
