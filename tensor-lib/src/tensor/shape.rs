//! Manipulation: permuting, slicing, rechunking, reshaping, masks, concatenation and
//! stacking, and the chunk grids they give.

use super::{Op, Result, Tensor, TensorError, UNKNOWN, split};
use crate::data::DType;

impl Tensor {
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
        // Chunks of unknown lengths (a sample sort's) are fine while the shape is known.
        if self.shape().contains(&UNKNOWN) {
            return Err(TensorError::UnknownShape { op: "slicing".into() });
        }
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
        Ok(self.strided(start, step, shape))
    }

    /// The strided box of `shape` from `start` by `step` (resolved slice bounds). Output
    /// chunks follow the input's, each reading one input chunk per dimension; along a
    /// dimension whose chunk lengths are not known yet they are found once they are
    /// (the node is built again then).
    pub(crate) fn strided(&self, start: Vec<u64>, step: Vec<i64>, shape: Vec<u64>) -> Tensor {
        let chunks = (0..self.ndim())
            .map(|d| {
                let c = &self.chunks()[d];
                if c.contains(&UNKNOWN) { vec![UNKNOWN] } else { slice_chunks(c, start[d], step[d], shape[d]) }
            })
            .collect();
        Tensor::new(Op::Slice { x: self.clone(), start, step }, shape, self.dtype(), chunks)
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
