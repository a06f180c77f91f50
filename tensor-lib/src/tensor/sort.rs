//! Sorting, `unique` and `searchsorted`.
//!
//! Along an axis held in one chunk, a sort is a chunk-wise kernel (fused with what
//! surrounds it). A 1-d tensor in several chunks is sorted by the engine's sample sort:
//! its chunks' lengths are known once it ran, as a mask's. Along a chunked axis of a
//! tensor with more dimensions, the axis is gathered into one chunk first (the other
//! axes split further to keep chunks near their size).

use super::{Op, Result, Tensor, TensorError, UNKNOWN};
use crate::data::DType;

impl Tensor {
    /// `self` sorted along `axis` (numpy's order: NaN last; stable), largest first with
    /// `descending`.
    pub fn sort(&self, axis: usize, descending: bool) -> Result<Tensor> {
        self.sorted(axis, descending, false)
    }

    /// The int64 positions along `axis` that sort `self` (stable: equal elements keep
    /// their order), as numpy's `argsort(kind="stable")`; positions are global for a
    /// 1-d tensor in several chunks.
    pub fn argsort(&self, axis: usize, descending: bool) -> Result<Tensor> {
        self.sorted(axis, descending, true)
    }

    fn sorted(&self, axis: usize, descending: bool, arg: bool) -> Result<Tensor> {
        let nd = self.ndim();
        if axis >= nd {
            return Err(TensorError::BadAxis { axis, ndim: nd });
        }
        let dtype = if arg { DType::I64 } else { self.dtype() };
        if self.chunks()[axis].len() <= 1 && !self.has_unknown_shape() {
            let op = Op::Sort { x: self.clone(), axis, descending, arg };
            return Ok(Tensor::new(op, self.shape().to_vec(), dtype, self.chunks().to_vec()));
        }
        if nd == 1 {
            let n = self.chunks()[0].len();
            let op = Op::SampleSort { x: self.clone(), descending, arg };
            return Ok(Tensor::new(op, self.shape().to_vec(), dtype, vec![vec![UNKNOWN; n]]));
        }
        self.whole_along(axis, "sorting")?.sorted(axis, descending, arg)
    }

    /// The same elements with `axis` whole in each chunk; the other axes split further
    /// so chunks keep about their size (what a sort or an FFT along a chunked axis
    /// reads first, as Mars and Dask rechunk).
    pub(super) fn whole_along(&self, axis: usize, what: &str) -> Result<Tensor> {
        if self.has_unknown_shape() {
            return Err(TensorError::UnknownShape { op: format!("{what} along an axis of unknown length") });
        }
        if self.chunks()[axis].len() <= 1 {
            return Ok(self.clone());
        }
        let mut spread = self.chunks()[axis].len() as u64;
        let mut sizes: Vec<usize> =
            self.chunks().iter().map(|c| c.first().copied().unwrap_or(1).max(1) as usize).collect();
        sizes[axis] = self.shape()[axis].max(1) as usize;
        for (d, s) in sizes.iter_mut().enumerate() {
            if d != axis && spread > 1 && *s > 1 {
                let k = spread.min(*s as u64);
                *s = s.div_ceil(k as usize);
                spread /= k;
            }
        }
        self.rechunk(&sizes)
    }

    /// The distinct elements of a 1-d tensor in order, or with `counts` how many times
    /// each occurs (int64). With `equal_nan` every NaN is one element (numpy's `unique`),
    /// without each NaN is its own (the Array API's `unique_values`). Its length is known
    /// once it ran.
    pub fn unique(&self, counts: bool, equal_nan: bool) -> Result<Tensor> {
        if self.ndim() != 1 {
            return Err(TensorError::BadIndex {
                reason: format!("unique of a {}-d tensor; flatten it first", self.ndim()),
            });
        }
        self.sort(0, false)?.unique_again(counts, equal_nan)
    }

    /// For each element of `v`, its insertion point in the sorted 1-d `self` (numpy's
    /// `searchsorted`: before equal elements, after them with `right`), as int64 of
    /// `v`'s shape and chunks. `self` must be sorted in numpy's order (NaN last); it is
    /// not checked.
    pub fn searchsorted(&self, v: &Tensor, right: bool) -> Result<Tensor> {
        if self.ndim() != 1 {
            return Err(TensorError::BadIndex {
                reason: format!("searchsorted in a {}-d tensor: give a 1-d one", self.ndim()),
            });
        }
        let op = Op::Search { a: self.clone(), v: v.clone(), right };
        Ok(Tensor::new(op, v.shape().to_vec(), DType::I64, v.chunks().to_vec()))
    }
}

impl Tensor {
    /// A sort built again on its resolved operand.
    pub(crate) fn sorted_again(&self, axis: usize, descending: bool, arg: bool) -> Result<Tensor> {
        self.sorted(axis, descending, arg)
    }

    /// A unique built again on its resolved, sorted operand.
    pub(crate) fn unique_again(&self, counts: bool, equal_nan: bool) -> Result<Tensor> {
        let n = self.chunks()[0].len().max(1);
        let dtype = if counts { DType::I64 } else { self.dtype() };
        Ok(Tensor::new(Op::Unique { x: self.clone(), counts, equal_nan }, vec![UNKNOWN], dtype, vec![vec![UNKNOWN; n]]))
    }
}
