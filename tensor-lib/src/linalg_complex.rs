//! Factorizations of complex matrices (faer's, in complex128), each of a whole matrix in
//! one chunk task: the real ones are tiled (TSQR, blocked LU and Cholesky), these are not
//! yet, so a complex matrix must fit one worker. Results are packed into one complex
//! matrix per task, which the tensor layer slices apart (see `CLinOp::shape`).

use faer::linalg::solvers::{DenseSolveCore, Solve};
use faer::{Mat, MatRef, Par, Side, c64};

use crate::data::C128;

/// A factorization of a complex matrix, and how its result is packed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
#[rkyv(derive(Debug))]
pub enum CLinOp {
    /// `[sign, logabsdet, det]` of a square matrix, one row (`logabsdet` real).
    SlogDet,
    /// The inverse of a square matrix.
    Inv,
    /// `x` with `a · x = b`, for `[a | b]` with `a` square and `b` of `k` columns.
    Solve {
        /// Columns of `b`.
        k: u32,
    },
    /// The lower Cholesky factor of a Hermitian positive-definite matrix.
    Cholesky,
    /// Reduced QR of an `m × n` matrix: `Q` (`m × k`, `k = min(m, n)`, its columns padded
    /// with zeros to `n`) over `R` (`k × n`).
    Qr,
    /// Thin SVD of an `m × n` matrix: `U` (`m × k`, padded to `n` columns), the singular
    /// values as one row (padded), `Vᴴ` (`k × n`).
    Svd,
    /// Full SVD: `U` (`m × m`), the singular values as one row, `Vᴴ` (`n × n`), each
    /// padded to `max(m, n)` columns.
    SvdFull,
    /// The eigenvalues (ascending, one row) over the eigenvectors (columns) of a
    /// Hermitian matrix read from its lower triangle.
    Eigh,
    /// The eigenvalues (one row) over the eigenvectors (columns, each of unit norm) of a
    /// general square matrix; a real one is decomposed as real (its real eigenvalues
    /// get real eigenvectors, as LAPACK's).
    Eig,
}

impl CLinOp {
    /// The packed result's shape for an `m × n` operand, or why it does not fit.
    pub(crate) fn shape(self, m: u64, n: u64) -> Result<Vec<u64>, String> {
        let square = || if m == n { Ok(()) } else { Err(format!("{m}×{n} is not square")) };
        let k = m.min(n);
        Ok(match self {
            CLinOp::SlogDet => {
                square()?;
                vec![1, 3]
            }
            CLinOp::Inv | CLinOp::Cholesky => {
                square()?;
                vec![m, n]
            }
            CLinOp::Solve { k } => {
                if n != m + k as u64 {
                    return Err(format!("[a | b] of {m}×{n} has no square a beside {k} columns"));
                }
                vec![m, k as u64]
            }
            CLinOp::Qr => vec![m + k, n],
            CLinOp::Svd => vec![m + 1 + k, n],
            CLinOp::SvdFull => vec![m + 1 + n, m.max(n)],
            CLinOp::Eigh | CLinOp::Eig => {
                square()?;
                vec![m + 1, n]
            }
        })
    }

    /// Runs the factorization of the row-major `rows × cols` matrix `v`; the error names
    /// a numeric failure (a singular matrix, one that is not positive definite).
    pub(crate) fn run(self, rows: usize, cols: usize, v: &[C128]) -> Result<Vec<C128>, String> {
        let v: Vec<c64> = v.iter().map(|z| c64::new(z.re, z.im)).collect();
        let a = MatRef::from_column_major_slice(&v, cols, rows).transpose();
        let out = match self {
            CLinOp::SlogDet => slogdet(a),
            CLinOp::Inv => {
                let lu = a.partial_piv_lu();
                singular(lu.U(), "inv")?;
                lu.inverse()
            }
            CLinOp::Solve { k } => {
                let n = rows;
                let (sq, b) = (a.get(.., ..n), a.get(.., n..n + k as usize));
                let lu = sq.partial_piv_lu();
                singular(lu.U(), "solve")?;
                lu.solve(b)
            }
            CLinOp::Cholesky => {
                let llt = a.llt(Side::Lower).map_err(|_| {
                    "cholesky: the matrix is not positive definite (check that it is Hermitian with a positive spectrum)"
                        .to_string()
                })?;
                let mut l = llt.L().to_owned();
                for j in 0..cols {
                    for i in 0..j {
                        l[(i, j)] = c64::new(0.0, 0.0);
                    }
                }
                l
            }
            CLinOp::Qr => {
                let qr = a.qr();
                let (q, r) = (qr.compute_thin_Q(), qr.thin_R().to_owned());
                stack(&[pad(q.as_ref(), cols), r])
            }
            CLinOp::Svd => {
                let svd = a.thin_svd().map_err(|e| format!("svd did not converge: {e:?}"))?;
                let k = rows.min(cols);
                let s =
                    Mat::from_fn(1, cols, |_, j| if j < k { svd.S().column_vector()[j] } else { c64::new(0.0, 0.0) });
                stack(&[pad(svd.U(), cols), s, svd.V().adjoint().to_owned()])
            }
            CLinOp::SvdFull => {
                let svd = a.svd().map_err(|e| format!("svd did not converge: {e:?}"))?;
                let (k, w) = (rows.min(cols), rows.max(cols));
                let s = Mat::from_fn(1, w, |_, j| if j < k { svd.S().column_vector()[j] } else { c64::new(0.0, 0.0) });
                stack(&[pad(svd.U(), w), s, pad(svd.V().adjoint().to_owned().as_ref(), w)])
            }
            CLinOp::Eig => {
                let evd = if v.iter().all(|z| z.im == 0.0) {
                    let re: Vec<f64> = v.iter().map(|z| z.re).collect();
                    MatRef::from_column_major_slice(&re, cols, rows).transpose().eigen()
                } else {
                    a.eigen()
                }
                .map_err(|e| format!("eig did not converge: {e:?}"))?;
                let w = Mat::from_fn(1, cols, |_, j| evd.S().column_vector()[j]);
                let mut vecs = evd.U().to_owned();
                for j in 0..cols {
                    let norm = (0..rows).map(|i| vecs[(i, j)].norm_sqr()).sum::<f64>().sqrt();
                    if norm > 0.0 {
                        for i in 0..rows {
                            vecs[(i, j)] /= norm;
                        }
                    }
                }
                stack(&[w, vecs])
            }
            CLinOp::Eigh => {
                let evd = a.self_adjoint_eigen(Side::Lower).map_err(|e| format!("eigh did not converge: {e:?}"))?;
                let w = Mat::from_fn(1, cols, |_, j| c64::new(evd.S().column_vector()[j].re, 0.0));
                stack(&[w, evd.U().to_owned()])
            }
        };
        let mut packed = Vec::with_capacity(out.nrows() * out.ncols());
        for i in 0..out.nrows() {
            for j in 0..out.ncols() {
                let z = out[(i, j)];
                packed.push(C128::new(z.re, z.im));
            }
        }
        Ok(packed)
    }
}

fn singular(u: MatRef<'_, c64>, op: &str) -> Result<(), String> {
    let n = u.nrows().min(u.ncols());
    if (0..n).any(|i| u[(i, i)] == c64::new(0.0, 0.0) || !(u[(i, i)].re.is_finite() && u[(i, i)].im.is_finite())) {
        return Err(format!("{op}: the matrix is singular"));
    }
    Ok(())
}

/// `m` with zero columns added up to `cols`.
fn pad(m: MatRef<'_, c64>, cols: usize) -> Mat<c64> {
    Mat::from_fn(m.nrows(), cols, |i, j| if j < m.ncols() { m[(i, j)] } else { c64::new(0.0, 0.0) })
}

fn stack(parts: &[Mat<c64>]) -> Mat<c64> {
    let cols = parts[0].ncols();
    let rows = parts.iter().map(|p| p.nrows()).sum();
    let mut out = Mat::zeros(rows, cols);
    let mut at = 0;
    for p in parts {
        out.as_mut().get_mut(at..at + p.nrows(), ..).copy_from(p.as_ref());
        at += p.nrows();
    }
    out
}

/// `[sign, logabsdet, det]` by LU with partial pivoting; a singular matrix gives
/// `[0, -inf, 0]`, as numpy.
fn slogdet(a: MatRef<'_, c64>) -> Mat<c64> {
    use faer::linalg::lu::partial_pivoting::factor as lu;
    let n = a.nrows();
    let mut f = a.to_owned();
    let (mut fwd, mut bwd) = (vec![0usize; n], vec![0usize; n]);
    let scratch = lu::lu_in_place_scratch::<usize, c64>(n, n, Par::Seq, Default::default());
    let mut mem = faer::dyn_stack::MemBuffer::new(scratch);
    let stack = faer::dyn_stack::MemStack::new(&mut mem);
    let (info, _) = lu::lu_in_place(f.as_mut(), &mut fwd, &mut bwd, Par::Seq, stack, Default::default());
    let flip = if info.transposition_count % 2 == 0 { 1.0 } else { -1.0 };
    let (mut sign, mut log, mut det) = (c64::new(flip, 0.0), 0.0, c64::new(flip, 0.0));
    for i in 0..n {
        let d = f[(i, i)];
        let mag = d.norm();
        if mag == 0.0 {
            (sign, log, det) = (c64::new(0.0, 0.0), f64::NEG_INFINITY, c64::new(0.0, 0.0));
            break;
        }
        // Summed as logs, so a determinant beyond f64's range still has one.
        sign *= d / mag;
        log += mag.ln();
        det *= d;
    }
    Mat::from_fn(1, 3, |_, j| [sign, c64::new(log, 0.0), det][j])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(rows: usize, cols: usize) -> Vec<C128> {
        (0..rows * cols)
            .map(|i| {
                C128::new(
                    ((i * 7) % 5) as f64 - 2.0 + if i % (cols + 1) == 0 { 4.0 } else { 0.0 },
                    ((i * 3) % 4) as f64 - 1.5,
                )
            })
            .collect()
    }

    fn mul(a: &[C128], b: &[C128], n: usize, k: usize, p: usize) -> Vec<C128> {
        let mut out = vec![C128::default(); n * p];
        for i in 0..n {
            for j in 0..p {
                let (mut re, mut im) = (0.0, 0.0);
                for l in 0..k {
                    let (x, y) = (a[i * k + l], b[l * p + j]);
                    re += x.re * y.re - x.im * y.im;
                    im += x.re * y.im + x.im * y.re;
                }
                out[i * p + j] = C128::new(re, im);
            }
        }
        out
    }

    fn near(a: &[C128], b: &[C128]) {
        for (x, y) in a.iter().zip(b) {
            assert!((x.re - y.re).abs() < 1e-9 && (x.im - y.im).abs() < 1e-9, "{x:?} vs {y:?}");
        }
    }

    #[test]
    fn inverse_solve_qr_and_svd_reproduce_their_matrix() {
        let n = 4;
        let a = m(n, n);
        let inv = CLinOp::Inv.run(n, n, &a).unwrap();
        let eye: Vec<C128> = (0..n * n).map(|i| C128::new(if i % (n + 1) == 0 { 1.0 } else { 0.0 }, 0.0)).collect();
        near(&mul(&a, &inv, n, n, n), &eye);
        let (w, h) = (5, 3);
        let t = m(w, h);
        let qr = CLinOp::Qr.run(w, h, &t).unwrap();
        let (q, r) = (&qr[..w * h], &qr[w * h..]);
        near(&mul(q, r, w, h, h), &t);
        let svd = CLinOp::Svd.run(w, h, &t).unwrap();
        let (u, s, vh) = (&svd[..w * h], &svd[w * h..w * h + h], &svd[w * h + h..]);
        let us: Vec<C128> = (0..w * h).map(|i| C128::new(u[i].re * s[i % h].re, u[i].im * s[i % h].re)).collect();
        near(&mul(&us, vh, w, h, h), &t);
        let det = CLinOp::SlogDet.run(n, n, &a).unwrap();
        assert!((det[0].re.hypot(det[0].im) - 1.0).abs() < 1e-12, "the sign is a unit: {:?}", det[0]);
        assert!((det[2].re.hypot(det[2].im).ln() - det[1].re).abs() < 1e-9);
        let zero = vec![C128::default(); n * n];
        assert!(CLinOp::Inv.run(n, n, &zero).unwrap_err().contains("singular"));
    }

    #[test]
    fn eigenpairs_of_real_and_complex_matrices_satisfy_a_v_equals_w_v() {
        let n = 4;
        let rotation: Vec<C128> = (0..n * n).map(|i| C128::new(((i * 5) % 7) as f64 - 3.0, 0.0)).collect();
        for a in [m(n, n), rotation] {
            let out = CLinOp::Eig.run(n, n, &a).unwrap();
            let (w, v) = (&out[..n], &out[n..]);
            let av = mul(&a, v, n, n, n);
            for i in 0..n {
                for j in 0..n {
                    let (x, l) = (v[i * n + j], w[j]);
                    let wv = C128::new(x.re * l.re - x.im * l.im, x.re * l.im + x.im * l.re);
                    assert!((av[i * n + j].re - wv.re).abs() < 1e-9 && (av[i * n + j].im - wv.im).abs() < 1e-9);
                }
            }
        }
    }
}
