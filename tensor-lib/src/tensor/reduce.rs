//! Reductions (sum, mean, var, argmin, …), norms, transposes and matrix products.

use super::{Op, Result, Tensor, TensorError};
use crate::data::DType;
use crate::kernel::{BinOp, ReduceOp, ScanOp, UnOp};

impl Tensor {
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
        if self.dtype().is_complex() && matches!(op, ReduceOp::Var | ReduceOp::Std) {
            // numpy's: the variance of a complex number is its parts' summed (real).
            let part = |u| self.unary_op(u)?.reduce(ReduceOp::Var, Some(&axes), keepdims);
            let var = part(UnOp::Real)?.binary(BinOp::Add, &part(UnOp::Imag)?)?;
            return if op == ReduceOp::Std { var.unary_op(UnOp::Sqrt) } else { Ok(var) };
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

    /// The running `op` along `axis` (numpy's `cumsum` and `cumprod`): the same shape, in
    /// the dtype numpy accumulates in (booleans and narrower integers as int64 or
    /// uint64), integers wrapping. Each chunk runs in parallel from the carry of the
    /// chunks before it along `axis` (their totals combined in a chain of small tasks),
    /// so floats may differ from numpy's one sequential pass in the last bits.
    pub fn cumulative(&self, op: ScanOp, axis: usize) -> Result<Tensor> {
        if axis >= self.ndim() {
            return Err(TensorError::BadAxis { axis, ndim: self.ndim() });
        }
        let like = match op {
            ScanOp::Sum => ReduceOp::Sum,
            ScanOp::Prod => ReduceOp::Prod,
        };
        let x = self.astype(like.out_dtype(self.dtype()));
        let (shape, chunks, dtype) = (x.shape().to_vec(), x.chunks().to_vec(), x.dtype());
        Ok(Tensor::new(Op::Scan { op, axis, x }, shape, dtype, chunks))
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
        if dtype.is_complex() {
            // Four real products: (A + Bi)(C + Di) = (AC - BD) + (AD + BC)i.
            let parts = |t: &Tensor| -> Result<(Tensor, Tensor)> {
                let t = t.astype_if(dtype);
                Ok((t.unary_op(UnOp::Real)?, t.unary_op(UnOp::Imag)?))
            };
            let ((ar, ai), (br, bi)) = (parts(self)?, parts(b)?);
            let re = ar.matmul(&br)?.binary(BinOp::Sub, &ai.matmul(&bi)?)?;
            let im = ar.matmul(&bi)?.binary(BinOp::Add, &ai.matmul(&br)?)?;
            return Tensor::complex(&re, &im);
        }
        let shape = vec![self.shape()[0], b.shape()[1]];
        let chunks = vec![self.chunks()[0].clone(), b.chunks()[1].clone()];
        Ok(Tensor::new(Op::MatMul(self.clone(), b.clone()), shape, dtype, chunks))
    }

    /// Same as [`Tensor::matmul`].
    pub fn dot(&self, b: &Tensor) -> Result<Tensor> {
        self.matmul(b)
    }
}
