//! Linear algebra (decompositions, solves, inverses, `tensordot`) and executing from
//! the tensor.

use super::{Factor, Op, Result, Slice, Tensor, TensorError, UNKNOWN, concatenate, eye, split};
use crate::data::DType;
use crate::kernel::{BinOp, UnOp};
use crate::linalg_complex::CLinOp;

impl Tensor {
    /// A 2-d float tensor (integers and bools cast to float64) with known shape, for `op`.
    fn matrix(&self, op: &str) -> Result<Tensor> {
        self.known(op)?;
        if self.ndim() != 2 {
            return Err(TensorError::BadMatrix {
                op: op.into(),
                reason: format!("needs a 2-d tensor, not {:?}", self.shape()),
            });
        }
        if self.dtype().is_complex() {
            // The complex factorizations go through `complex_pack`, not the tiled ones.
            return Err(TensorError::BadDType { op: format!("{op} (tiled, of real matrices)"), dtype: self.dtype() });
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

    /// The packed result of `op` on this complex matrix, factored whole in one task
    /// (complex128; see [`CLinOp`] for each packing). Decision: not tiled yet, so the
    /// matrix must fit one worker.
    fn complex_pack(&self, op: CLinOp, what: &str) -> Result<Tensor> {
        self.known(what)?;
        if self.ndim() != 2 {
            return Err(TensorError::BadMatrix {
                op: what.into(),
                reason: format!("needs a 2-d tensor, not {:?}", self.shape()),
            });
        }
        let (m, n) = (self.shape()[0], self.shape()[1]);
        let shape = op.shape(m, n).map_err(|reason| TensorError::BadMatrix { op: what.into(), reason })?;
        let x = self.astype_if(DType::C128).rechunk_to(vec![vec![m], vec![n]]);
        let chunks = shape.iter().map(|&d| vec![d]).collect();
        Ok(Tensor::factor(&x, Factor::Complex(op), shape, chunks))
    }

    /// A block `rows × cols` of a packed result, in `like`'s precision (complex64 stays
    /// complex64, as numpy), or its real part with `real`.
    fn unpack(pack: &Tensor, rows: (u64, u64), cols: (u64, u64), like: DType, real: bool) -> Result<Tensor> {
        let r = |(a, b): (u64, u64)| Slice::range(a as i64, b as i64);
        let block = pack.slice(&[r(rows), r(cols)])?;
        let block = if real { block.unary_op(UnOp::Real)? } else { block };
        let want = if real { like.real() } else { like };
        Ok(block.astype_if(if want.is_inexact() { want } else { DType::F64 }))
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
        if self.dtype().is_complex() {
            let pack = self.complex_pack(CLinOp::Qr, "qr")?;
            let (m, n, d) = (self.shape()[0], self.shape()[1], self.dtype());
            let k = m.min(n);
            return Ok((
                Tensor::unpack(&pack, (0, m), (0, k), d, false)?,
                Tensor::unpack(&pack, (m, m + k), (0, n), d, false)?,
            ));
        }
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
        if self.dtype().is_complex() {
            let pack = self.complex_pack(CLinOp::Svd, "svd")?;
            let (m, n, d) = (self.shape()[0], self.shape()[1], self.dtype());
            let k = m.min(n);
            let u = Tensor::unpack(&pack, (0, m), (0, k), d, false)?;
            let s = Tensor::unpack(&pack, (m, m + 1), (0, k), d, true)?.reshape(&[k as i64])?;
            return Ok((u, s, Tensor::unpack(&pack, (m + 1, m + 1 + k), (0, n), d, false)?));
        }
        let x = self.tall_skinny("svd")?;
        let n = x.shape()[1];
        let u = Tensor::factor(&x, Factor::U, x.shape().to_vec(), x.chunks().to_vec());
        let s = Tensor::factor(&x, Factor::S, vec![n], vec![vec![n]]);
        let vt = Tensor::factor(&x, Factor::Vt, vec![n, n], vec![vec![n], vec![n]]);
        Ok((u, s, vt))
    }

    /// The full SVD (numpy's `linalg.svd(a)`, `full_matrices=True`): `(U, S, Vᵀ)` with `U`
    /// `m × m` and `Vᵀ` `n × n` (orthonormal bases completed), `S` the `min(m, n)`
    /// singular values. Decision: the matrix is decomposed whole in one task (completing a
    /// basis is not a tall-skinny operation), so it must fit one worker.
    pub fn svd_full(&self) -> Result<(Tensor, Tensor, Tensor)> {
        let (m, n) = match self.shape() {
            &[m, n] => (m, n),
            s => {
                return Err(TensorError::BadMatrix {
                    op: "svd".into(),
                    reason: format!("needs a 2-d tensor, not {s:?}"),
                });
            }
        };
        let (k, w, d) = (m.min(n), m.max(n), self.dtype());
        let pack = if d.is_complex() {
            self.complex_pack(CLinOp::SvdFull, "svd")?
        } else {
            let x = self.matrix("svd")?.rechunk_to(vec![vec![m], vec![n]]);
            Tensor::factor(&x, Factor::SvdFull, vec![m + 1 + n, w], vec![vec![m + 1 + n], vec![w]])
        };
        let u = Tensor::unpack(&pack, (0, m), (0, m), d, false)?;
        let s = Tensor::unpack(&pack, (m, m + 1), (0, k), d, true)?.reshape(&[k as i64])?;
        Ok((u, s, Tensor::unpack(&pack, (m + 1, m + 1 + n), (0, n), d, false)?))
    }

    /// A square float matrix in one chunk, for the factorizations that need it whole.
    fn whole_square(&self, op: &str) -> Result<Tensor> {
        let x = self.matrix(op)?;
        let n = x.shape()[0];
        if x.shape()[1] != n {
            return Err(TensorError::BadMatrix { op: op.into(), reason: format!("{:?} is not square", x.shape()) });
        }
        Ok(x.rechunk_to(vec![vec![n], vec![n]]))
    }

    /// `(sign, logabsdet, det)` of a square matrix as 0-d tensors (numpy's `slogdet`,
    /// and `det`): one LU with partial pivoting of the whole matrix in one task
    /// (decision: a determinant is one number, so there is no parallel work to tile
    /// for; the matrix must fit one worker). Singular gives `(0, -inf, 0)`.
    pub fn slogdet(&self) -> Result<(Tensor, Tensor, Tensor)> {
        if self.dtype().is_complex() {
            // numpy's: a complex sign and determinant, a real log of |det|.
            let pack = self.complex_pack(CLinOp::SlogDet, "slogdet")?;
            let d = self.dtype();
            let at = |j: u64, real: bool| Tensor::unpack(&pack, (0, 1), (j, j + 1), d, real)?.reshape(&[]);
            return Ok((at(0, false)?, at(1, true)?, at(2, false)?));
        }
        let x = self.whole_square("slogdet")?;
        let pack = Tensor::factor(&x, Factor::SlogDet, vec![3], vec![vec![3]]);
        let at = |i: i64| -> Result<Tensor> { pack.slice(&[Slice::range(i, i + 1)])?.reshape(&[]) };
        Ok((at(0)?, at(1)?, at(2)?))
    }

    /// `(w, v)`: the eigenvalues in ascending order and the eigenvectors (columns) of a
    /// symmetric matrix, read from its lower triangle (numpy's `eigh`), the matrix
    /// decomposed whole in one task (as [`Tensor::slogdet`]).
    pub fn eigh(&self) -> Result<(Tensor, Tensor)> {
        if self.dtype().is_complex() {
            // Of a Hermitian matrix: real eigenvalues, complex eigenvectors.
            let pack = self.complex_pack(CLinOp::Eigh, "eigh")?;
            let (n, d) = (self.shape()[0], self.dtype());
            let w = Tensor::unpack(&pack, (0, 1), (0, n), d, true)?.reshape(&[n as i64])?;
            return Ok((w, Tensor::unpack(&pack, (1, n + 1), (0, n), d, false)?));
        }
        let x = self.whole_square("eigh")?;
        let n = x.shape()[0];
        let pack = Tensor::factor(&x, Factor::Eigh, vec![n + 1, n], vec![vec![n + 1], vec![n]]);
        let w = pack.slice(&[Slice::range(0, 1)])?.reshape(&[n as i64])?;
        let v = pack.slice(&[Slice::range(1, n as i64 + 1)])?;
        Ok((w, v))
    }

    /// `(w, v)`: the eigenvalues and the eigenvectors (columns of unit norm) of a general
    /// square matrix (numpy's `eig`), always complex (the Array API's rule: complex64 for
    /// float32 and complex64, else complex128; numpy gives real arrays when every
    /// eigenvalue happens to be real, a dtype known only after computing). Decomposed
    /// whole in one task.
    pub fn eig(&self) -> Result<(Tensor, Tensor)> {
        let pack = self.complex_pack(CLinOp::Eig, "eig")?;
        let (n, d) = (self.shape()[0], self.dtype().complex());
        let w = Tensor::unpack(&pack, (0, 1), (0, n), d, false)?.reshape(&[n as i64])?;
        Ok((w, Tensor::unpack(&pack, (1, n + 1), (0, n), d, false)?))
    }

    /// The lower Cholesky factor `L` (`a = L · Lᵀ`) of a symmetric positive-definite
    /// matrix, blocked over square chunks (rechunked to square if they are not).
    pub fn cholesky(&self) -> Result<Tensor> {
        if self.dtype().is_complex() {
            let n = self.shape().first().copied().unwrap_or(0);
            return Tensor::unpack(
                &self.complex_pack(CLinOp::Cholesky, "cholesky")?,
                (0, n),
                (0, n),
                self.dtype(),
                false,
            );
        }
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
        if self.dtype().is_complex() {
            let n = self.shape().first().copied().unwrap_or(0);
            return Tensor::unpack(&self.complex_pack(CLinOp::Inv, "inv")?, (0, n), (0, n), self.dtype(), false);
        }
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
}

/// `x` with `a · x = b` for a square `a` and `b` of `n` or `n × k` (numpy's
/// `linalg.solve`): blocked LU with partial pivoting over column panels of `a` (each panel
/// is one task, so pivots are chosen over whole columns), then blocked back substitution.
/// A singular `a` fails the computation with a message that says so.
pub fn solve(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    if a.dtype().is_complex() || b.dtype().is_complex() {
        return solve_complex(a, b);
    }
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

/// [`solve`] with a complex operand: `[a | b]` factored whole in one task.
fn solve_complex(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    a.known("solve")?;
    b.known("solve")?;
    let n = a.shape().first().copied().unwrap_or(0);
    if a.ndim() != 2 || a.shape()[1] != n {
        return Err(TensorError::BadMatrix { op: "solve".into(), reason: format!("{:?} is not square", a.shape()) });
    }
    let vector = b.ndim() == 1;
    let b2 = if vector { b.reshape(&[-1, 1])? } else { b.clone() };
    if b2.ndim() != 2 || b2.shape()[0] != n {
        return Err(TensorError::ShapeMismatch { a: a.shape().to_vec(), b: b.shape().to_vec() });
    }
    let k = b2.shape()[1];
    let dtype = DType::promote(a.dtype(), b2.dtype());
    let whole = |t: &Tensor| t.astype_if(DType::C128).rechunk_to(vec![vec![n], vec![t.shape()[1]]]);
    let both = concatenate(&[whole(a), whole(&b2)], 1)?;
    let k32 = u32::try_from(k)
        .map_err(|_| TensorError::BadMatrix { op: "solve".into(), reason: format!("{k} right-hand sides") })?;
    let pack = both.complex_pack(CLinOp::Solve { k: k32 }, "solve")?;
    let x = Tensor::unpack(&pack, (0, n), (0, k), dtype, false)?;
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
