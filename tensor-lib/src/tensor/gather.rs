//! Integer-array indexing: numpy's `take` and `take_along_axis`, the gathers under fancy
//! indexing, `choice` and `permutation`.
//!
//! A result chunk reads its positions' chunk and every chunk of the source along the
//! axis (in place from the store); only the chunks its positions hit are copied.

use super::{Op, Result, Tensor, TensorError, UNKNOWN};

impl Tensor {
    /// The elements at the integer positions `idx` along `axis` (negative from the end):
    /// numpy's `take`, of shape `shape[..axis] + idx.shape + shape[axis+1..]`. A position
    /// out of bounds fails the computation with numpy's `IndexError` message.
    pub fn take(&self, idx: &Tensor, axis: usize) -> Result<Tensor> {
        self.check_take(idx, axis)?;
        let nd = self.ndim();
        if (0..nd).any(|d| d != axis && (self.shape()[d] == UNKNOWN || self.chunks()[d].contains(&UNKNOWN))) {
            return Err(TensorError::UnknownShape { op: "take from a tensor of unknown lengths off the axis".into() });
        }
        let mut shape = self.shape()[..axis].to_vec();
        shape.extend_from_slice(idx.shape());
        shape.extend_from_slice(&self.shape()[axis + 1..]);
        let mut chunks = self.chunks()[..axis].to_vec();
        chunks.extend_from_slice(idx.chunks());
        chunks.extend_from_slice(&self.chunks()[axis + 1..]);
        let op = Op::Take { x: self.clone(), idx: idx.clone(), axis, along: false };
        Ok(Tensor::new(op, shape, self.dtype(), chunks))
    }

    /// numpy's `take_along_axis`: `out[.., j, ..] = self[.., idx[.., j, ..], ..]` along
    /// `axis`, `idx` of `self`'s shape but for `axis` (as `argsort` gives).
    pub fn take_along(&self, idx: &Tensor, axis: usize) -> Result<Tensor> {
        self.check_take(idx, axis)?;
        let nd = self.ndim();
        if idx.ndim() != nd {
            return Err(TensorError::ShapeMismatch { a: self.shape().to_vec(), b: idx.shape().to_vec() });
        }
        // Lengths along the axis may be unknown (a sample sort's chunks); off it, the
        // positions must line up with the source's chunks.
        let unknown = |t: &Tensor, d: usize| t.shape()[d] == UNKNOWN || t.chunks()[d].contains(&UNKNOWN);
        if (0..nd).any(|d| d != axis && (unknown(self, d) || unknown(idx, d))) {
            return Err(TensorError::UnknownShape { op: "take_along_axis off the axis".into() });
        }
        if (0..nd).any(|d| d != axis && self.shape()[d] != idx.shape()[d]) {
            return Err(TensorError::ShapeMismatch { a: self.shape().to_vec(), b: idx.shape().to_vec() });
        }
        // The positions chunked as the source off the axis: each result chunk reads one
        // lane of source chunks.
        let grid: Vec<Vec<u64>> =
            (0..nd).map(|d| if d == axis { idx.chunks()[d].clone() } else { self.chunks()[d].clone() }).collect();
        let idx = if idx.chunks() == grid {
            idx.clone()
        } else if idx.has_unknown_shape() {
            return Err(TensorError::UnknownShape {
                op: "take_along_axis with positions chunked unlike the source".into(),
            });
        } else {
            idx.rechunk_to(grid.clone())
        };
        let op = Op::Take { x: self.clone(), idx: idx.clone(), axis, along: true };
        Ok(Tensor::new(op, idx.shape().to_vec(), self.dtype(), grid))
    }

    fn check_take(&self, idx: &Tensor, axis: usize) -> Result<()> {
        if axis >= self.ndim() {
            return Err(TensorError::BadAxis { axis, ndim: self.ndim() });
        }
        if !idx.dtype().is_integer() {
            return Err(TensorError::BadDType {
                op: "indexing with positions that are not integers".into(),
                dtype: idx.dtype(),
            });
        }
        Ok(())
    }
}
