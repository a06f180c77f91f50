//! Discrete Fourier transforms along one axis (numpy's `fft`): the axis is gathered
//! whole into each chunk first, as Mars and Dask rechunk, then each chunk's lanes are
//! transformed by the chunk kernel (fused with what surrounds it).

use super::{Op, Result, Tensor, TensorError};
use crate::data::DType;
use crate::kernel::FftKind;

impl Tensor {
    /// The transform `kind` of `self` along `axis`, every element times `scale` (numpy's
    /// `norm`: `1/n` for `"backward"` inverses, `1/√n` for `"ortho"`). The input is cast
    /// to complex (complex64 for float32 and complex64, as numpy 2; complex128 for the
    /// rest). A real inverse (`irfft`) takes the `n/2 + 1` coefficients of a half
    /// spectrum along `axis` and gives `n` real elements (float32 or float64).
    pub fn fft(&self, axis: usize, kind: FftKind, scale: f64) -> Result<Tensor> {
        let nd = self.ndim();
        if axis >= nd {
            return Err(TensorError::BadAxis { axis, ndim: nd });
        }
        let complex = match self.dtype() {
            DType::F32 | DType::C64 => DType::C64,
            _ => DType::C128,
        };
        let x = self.whole_along(axis, "an FFT")?.astype_if(complex);
        let len = x.shape()[axis];
        let (out_len, dtype) = match kind {
            FftKind::RealInverse { n } => {
                if len != n / 2 + 1 {
                    return Err(TensorError::BadIndex {
                        reason: format!(
                            "irfft to {n} elements takes {} coefficients along axis {axis}, not {len}",
                            n / 2 + 1
                        ),
                    });
                }
                (n, complex.real())
            }
            _ => (len, complex),
        };
        let mut shape = x.shape().to_vec();
        shape[axis] = out_len;
        let mut chunks = x.chunks().to_vec();
        chunks[axis] = vec![out_len];
        Ok(Tensor::new(Op::Fft { x, axis, kind, scale }, shape, dtype, chunks))
    }
}
