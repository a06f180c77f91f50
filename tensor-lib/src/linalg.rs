//! Dense kernels run inside chunk tasks. GEMM is faer's, single-threaded: parallelism
//! comes from running many chunk tasks at once.

use faer::{Accum, MatMut, MatRef, Par};

use crate::data::{Buf, Chunk, ChunkRef, DType};

/// A row-major `rows × cols` slice as a faer view (a column-major view, transposed).
fn view<T>(v: &[T], rows: usize, cols: usize, transpose: bool) -> MatRef<'_, T> {
    let m = MatRef::from_column_major_slice(v, cols, rows).transpose();
    if transpose { m.transpose() } else { m }
}

fn dims(shape: &[u64], transpose: bool) -> (usize, usize) {
    let (r, k) = (shape[0] as usize, shape[1] as usize);
    if transpose { (k, r) } else { (r, k) }
}

/// Flag: transpose the left operand.
pub(crate) const TRANS_A: u8 = 1;
/// Flag: transpose the right operand.
pub(crate) const TRANS_B: u8 = 2;
/// Flag: the result is a diagonal block of a symmetric product: compute its upper half only.
pub(crate) const UPPER: u8 = 4;
/// Flag: with `UPPER`, this is the last step: copy the upper half into the lower one.
pub(crate) const MIRROR: u8 = 8;

/// `acc + Σₖ aₖ · bₖ` (without `acc`, the sum alone) over `pairs`, each pair's operands
/// transposed as its flags say. With `UPPER` (on every pair) only the upper triangle is
/// computed; `MIRROR` on the last pair then copies it into the lower one.
/// The operands are read where they lie; `acc` is copied into the result.
/// Panics on chunks that are not 2-d or do not conform (the planner never makes them).
pub(crate) fn gemm(acc: Option<ChunkRef<'_>>, pairs: &[(ChunkRef<'_>, ChunkRef<'_>, u8)]) -> Chunk {
    let (a0, b0, f0) = pairs.first().copied().expect("a product has at least one pair");
    let (m, _) = dims(&a0.shape(), f0 & TRANS_A != 0);
    let (_, n) = dims(&b0.shape(), f0 & TRANS_B != 0);
    let mut dtype = DType::promote(a0.dtype(), b0.dtype());
    for (a, b, _) in pairs {
        dtype = DType::promote(dtype, DType::promote(a.dtype(), b.dtype()));
    }
    let shape = vec![m as u64, n as u64];
    // Each pair's operands, checked to conform, with their row-major extents.
    let operands = pairs.iter().map(|&(a, b, flags)| {
        let (a_shape, b_shape) = (a.shape(), b.shape());
        let (ta, tb) = (flags & TRANS_A != 0, flags & TRANS_B != 0);
        let ((am, k), (k2, bn)) = (dims(&a_shape, ta), dims(&b_shape, tb));
        assert!(
            k == k2 && am == m && bn == n,
            "gemm of {a_shape:?} and {b_shape:?} (flags {flags}) does not conform to a {m}×{n} result"
        );
        (a, b, flags, [a_shape[0] as usize, a_shape[1] as usize, b_shape[0] as usize, b_shape[1] as usize])
    });
    if !dtype.is_float() {
        return gemm_int(acc, operands, m, n, dtype);
    }
    let mirror = pairs.last().is_some_and(|p| p.2 & UPPER != 0 && p.2 & MIRROR != 0);
    macro_rules! run {
        ($t:ty, $wrap:ident) => {{
            let mut first = true;
            let mut out = match acc {
                Some(c) => {
                    first = false;
                    c.elements::<$t>().into_owned()
                }
                None => vec![0 as $t; m * n],
            };
            for (a, b, flags, [ar, ac, br, bc]) in operands {
                let (av, bv) = (a.elements::<$t>(), b.elements::<$t>());
                let (ta, tb) = (flags & TRANS_A != 0, flags & TRANS_B != 0);
                let accum = if std::mem::take(&mut first) { Accum::Replace } else { Accum::Add };
                let dst: MatMut<'_, $t> = MatMut::from_column_major_slice_mut(&mut out, n, m).transpose_mut();
                let (lhs, rhs) = (view(&av, ar, ac, ta), view(&bv, br, bc, tb));
                if flags & UPPER != 0 {
                    use faer::linalg::matmul::triangular::{
                        BlockStructure::{Rectangular, TriangularUpper},
                        matmul,
                    };
                    matmul(dst, TriangularUpper, accum, lhs, Rectangular, rhs, Rectangular, 1.0 as $t, Par::Seq);
                } else {
                    faer::linalg::matmul::matmul(dst, accum, lhs, rhs, 1.0 as $t, Par::Seq);
                }
            }
            if mirror {
                for i in 0..m {
                    for j in 0..i {
                        out[i * n + j] = out[j * n + i];
                    }
                }
            }
            Chunk { shape, data: Buf::$wrap(out) }
        }};
    }
    if dtype == DType::F32 { run!(f32, F32) } else { run!(f64, F64) }
}

/// [`gemm`] of integer or boolean chunks, as numpy computes them: integers accumulate
/// with wrap-around in the result's width (computing in `i64` and truncating gives the
/// same bits), and a boolean product is true where some `a[i, k] && b[k, j]` is (an
/// accumulated sum that is not zero). Every block is computed in full (the symmetric
/// halving of `UPPER` is a float-speed concern).
fn gemm_int<'c>(
    acc: Option<ChunkRef<'_>>,
    operands: impl Iterator<Item = (ChunkRef<'c>, ChunkRef<'c>, u8, [usize; 4])>,
    m: usize,
    n: usize,
    dtype: DType,
) -> Chunk {
    let mut out = match acc {
        Some(c) => c.elements::<i64>().into_owned(),
        None => vec![0i64; m * n],
    };
    for (a, b, flags, [ar, ac, _, bc]) in operands {
        let (ta, tb) = (flags & TRANS_A != 0, flags & TRANS_B != 0);
        let k = if ta { ar } else { ac };
        let (av, bv) = (a.elements::<i64>(), b.elements::<i64>());
        for i in 0..m {
            for kk in 0..k {
                let x = if ta { av[kk * ac + i] } else { av[i * ac + kk] };
                if x == 0 {
                    continue;
                }
                let row = &mut out[i * n..(i + 1) * n];
                for (j, o) in row.iter_mut().enumerate() {
                    let y = if tb { bv[j * bc + kk] } else { bv[kk * bc + j] };
                    *o = o.wrapping_add(x.wrapping_mul(y));
                }
            }
        }
    }
    let data = match dtype {
        DType::Bool => Buf::Bool(out.iter().map(|v| *v != 0).collect()),
        // Truncated to the result's width: the bits numpy's wrapping accumulation gives.
        other => Buf::I64(out).cast(other),
    };
    Chunk { shape: vec![m as u64, n as u64], data }
}

/// A dense row-major float64 matrix, the operand of the decompositions below.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Dense {
    pub(crate) rows: usize,
    pub(crate) cols: usize,
    pub(crate) v: Vec<f64>,
}

impl Dense {
    pub(crate) fn new(rows: usize, cols: usize, v: Vec<f64>) -> Self {
        debug_assert_eq!(v.len(), rows * cols);
        Dense { rows, cols, v }
    }

    fn mat(&self) -> MatRef<'_, f64> {
        view(&self.v, self.rows, self.cols, false)
    }

    fn from_mat(m: MatRef<'_, f64>) -> Self {
        let (rows, cols) = (m.nrows(), m.ncols());
        let mut v = Vec::with_capacity(rows * cols);
        for i in 0..rows {
            for j in 0..cols {
                v.push(m[(i, j)]);
            }
        }
        Dense { rows, cols, v }
    }

    /// A copy scaled by a power of two to a largest entry in [1, 2) (exact, as LAPACK
    /// scales before factoring), and the map back: faer's QR and SVD lose tiny and
    /// subnormal matrices to underflow. Two factors, as one overflows for subnormals.
    fn scaled(&self) -> (Dense, impl Fn(f64) -> f64) {
        self.scaled_by(self.v.iter().fold(0.0f64, |m, v| m.max(v.abs())))
    }

    /// [`Dense::scaled`] by a given largest entry (of the part a factorization reads);
    /// only outside [2⁻⁴⁰⁰, 2⁴⁰⁰], as LAPACK scales only outside its safe range: scaling
    /// a wide-ranged matrix to 1 would push its smallest entries into underflow.
    fn scaled_by(&self, amax: f64) -> (Dense, impl Fn(f64) -> f64) {
        let safe = (2f64.powi(-400)..=2f64.powi(400)).contains(&amax);
        let e = if amax.is_finite() && amax > 0.0 && !safe { -(amax.log2().floor() as i32) } else { 0 };
        let (s1, s2) = (2f64.powi(e / 2), 2f64.powi(e - e / 2));
        let v = self.v.iter().map(|v| v * s1 * s2).collect();
        (Dense::new(self.rows, self.cols, v), move |v: f64| v / s1 / s2)
    }

    fn owned(&self) -> faer::Mat<f64> {
        self.mat().to_owned()
    }

    fn rows_of(&self, lo: usize, hi: usize) -> Dense {
        Dense::new(hi - lo, self.cols, self.v[lo * self.cols..hi * self.cols].to_vec())
    }

    fn set_rows(&mut self, lo: usize, part: &Dense) {
        self.v[lo * self.cols..lo * self.cols + part.v.len()].copy_from_slice(&part.v);
    }

    /// The leading `cols` columns.
    fn left(&self, cols: usize) -> Dense {
        let v = (0..self.rows).flat_map(|i| self.v[i * self.cols..i * self.cols + cols].iter().copied()).collect();
        Dense::new(self.rows, cols, v)
    }

    /// With zero columns added up to `cols`.
    fn padded(&self, cols: usize) -> Dense {
        let mut v = vec![0.0; self.rows * cols];
        for i in 0..self.rows {
            v[i * cols..i * cols + self.cols].copy_from_slice(&self.v[i * self.cols..(i + 1) * self.cols]);
        }
        Dense::new(self.rows, cols, v)
    }

    fn stack(parts: &[Dense]) -> Dense {
        let cols = parts[0].cols;
        Dense::new(parts.iter().map(|p| p.rows).sum(), cols, parts.iter().flat_map(|p| p.v.iter().copied()).collect())
    }
}

fn product(a: MatRef<'_, f64>, b: MatRef<'_, f64>) -> Dense {
    let mut out = faer::Mat::<f64>::zeros(a.nrows(), b.ncols());
    faer::linalg::matmul::matmul(out.as_mut(), Accum::Replace, a, b, 1.0, Par::Seq);
    Dense::from_mat(out.as_ref())
}

/// A dense operation of a chunk program, on whole operands.
#[derive(Clone, Copy, Debug, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub enum LinOp {
    /// `a · b`, each optionally transposed.
    MatMul {
        /// Transpose `a`.
        ta: bool,
        /// Transpose `b`.
        tb: bool,
    },
    /// The lower Cholesky factor of a symmetric positive-definite `a`.
    Cholesky,
    /// `x` with `x · lᵀ = b`, for `[b, l]` with `l` lower triangular.
    SolveLowerT,
    /// LU with partial pivoting of rows `row0..` of a column panel `[p]` (`n × w`): rows
    /// `row0..row0+w` hold `U` and the unit-lower `L` of the diagonal block, the rows below
    /// the rest of `L`; one more column holds, for each row from `row0`, the panel row
    /// (relative to `row0`) it came from.
    LuPanel {
        /// First row of the factored part.
        row0: u32,
    },
    /// Applies a factored panel `[f, p]` to a panel `p` to its right: permutes rows
    /// `row0..`, solves the diagonal block's rows with `L`, and subtracts `L · U` below.
    LuApply {
        /// First row of the factored part.
        row0: u32,
    },
    /// `x` with `u · x = b`, for `[u, b]` with `u` upper triangular (below ignored).
    SolveUpper,
    /// Thin QR of a tall `a` (`m × n`, `m ≥ n`): `[Q; R]`, `(m + n) × n`.
    QrStack,
    /// Thin SVD of a square `a` (`n × n`): `[U; S as one row; Vᵀ]`, `(2n + 1) × n`.
    SvdPack,
    /// Full SVD of an `m × n` `a`: `[U (m × m); S as one row; Vᵀ (n × n)]`, each padded
    /// with zero columns to `max(m, n)`: `(m + 1 + n) × max(m, n)`.
    SvdFull,
    /// The sign, the natural log of the absolute value and the determinant itself of a
    /// square `a`, as one row `[sign, logabsdet, det]` (numpy's `slogdet` and `det`; a
    /// singular `a` gives `[0, -inf, 0]`).
    SlogDet,
    /// Eigenvalues (ascending, one row) over eigenvectors (columns) of a symmetric `a`
    /// read from its lower triangle (numpy's `eigh`, `UPLO='L'`): `(n + 1) × n`.
    EighPack,
    /// A factorization of a complex matrix (complex128), packed as it says.
    Complex(crate::linalg_complex::CLinOp),
}

impl LinOp {
    /// Shape of the result for operands of `shapes`, or why they do not fit.
    pub(crate) fn shape(&self, shapes: &[&[u64]]) -> Result<Vec<u64>, String> {
        let two = |i: usize| -> Result<(u64, u64), String> {
            match shapes.get(i) {
                Some([r, c]) => Ok((*r, *c)),
                Some(s) => Err(format!("operand {i} of shape {s:?} is not a matrix")),
                None => Err(format!("operand {i} is missing")),
            }
        };
        let want = |n: usize| if shapes.len() == n { Ok(()) } else { Err(format!("takes {n} operands")) };
        Ok(match *self {
            LinOp::MatMul { ta, tb } => {
                want(2)?;
                let (a, b) = (two(0)?, two(1)?);
                let (m, k) = if ta { (a.1, a.0) } else { a };
                let (k2, n) = if tb { (b.1, b.0) } else { b };
                if k != k2 {
                    return Err(format!("{a:?} and {b:?} do not conform"));
                }
                vec![m, n]
            }
            LinOp::Cholesky => {
                want(1)?;
                let (r, c) = two(0)?;
                if r != c {
                    return Err(format!("{r}×{c} is not square"));
                }
                vec![r, c]
            }
            LinOp::SolveLowerT => {
                want(2)?;
                let (b, l) = (two(0)?, two(1)?);
                if l.0 != l.1 || b.1 != l.0 {
                    return Err(format!("{b:?} by {l:?}"));
                }
                vec![b.0, b.1]
            }
            LinOp::LuPanel { row0 } => {
                want(1)?;
                let (n, w) = two(0)?;
                if n < row0 as u64 + w {
                    return Err(format!("panel {n}×{w} has no {w} rows from {row0}"));
                }
                vec![n, w + 1]
            }
            LinOp::LuApply { row0 } => {
                want(2)?;
                let (f, p) = (two(0)?, two(1)?);
                if f.0 != p.0 || f.0 < row0 as u64 + f.1 - 1 {
                    return Err(format!("factored panel {f:?} against {p:?} from row {row0}"));
                }
                vec![p.0, p.1]
            }
            LinOp::SolveUpper => {
                want(2)?;
                let (u, b) = (two(0)?, two(1)?);
                if u.0 != u.1 || b.0 != u.0 {
                    return Err(format!("{u:?} by {b:?}"));
                }
                vec![b.0, b.1]
            }
            LinOp::QrStack => {
                want(1)?;
                let (m, n) = two(0)?;
                if m < n {
                    return Err(format!("{m}×{n} has fewer rows than columns"));
                }
                vec![m + n, n]
            }
            LinOp::SvdPack => {
                want(1)?;
                let (r, c) = two(0)?;
                if r != c {
                    return Err(format!("{r}×{c} is not square"));
                }
                vec![2 * r + 1, c]
            }
            LinOp::Complex(c) => {
                want(1)?;
                let (m, n) = two(0)?;
                c.shape(m, n)?
            }
            LinOp::SvdFull => {
                want(1)?;
                let (m, n) = two(0)?;
                vec![m + 1 + n, m.max(n)]
            }
            LinOp::SlogDet | LinOp::EighPack => {
                want(1)?;
                let (r, c) = two(0)?;
                if r != c {
                    return Err(format!("{r}×{c} is not square"));
                }
                if matches!(self, LinOp::SlogDet) { vec![1, 3] } else { vec![r + 1, r] }
            }
        })
    }

    /// Runs the operation; the error names a numeric failure (a matrix that is singular or
    /// not positive definite).
    pub(crate) fn run(&self, args: &[Dense]) -> Result<Dense, String> {
        use faer::linalg::lu::partial_pivoting::factor as lu;
        use faer::linalg::triangular_solve as tri;
        Ok(match *self {
            LinOp::MatMul { ta, tb } => {
                let (a, b) = (args[0].mat(), args[1].mat());
                product(if ta { a.transpose() } else { a }, if tb { b.transpose() } else { b })
            }
            LinOp::Cholesky => {
                let llt = args[0].mat().llt(faer::Side::Lower).map_err(|_| {
                    "cholesky: the matrix is not positive definite (check that it is symmetric with a positive spectrum)"
                        .to_string()
                })?;
                let l = llt.L();
                let n = l.nrows();
                let mut d = Dense::from_mat(l);
                for i in 0..n {
                    for j in i + 1..n {
                        d.v[i * n + j] = 0.0;
                    }
                }
                d
            }
            LinOp::SolveLowerT => {
                // x · lᵀ = b  ⇔  l · xᵀ = bᵀ.
                let mut rhs = args[0].mat().transpose().to_owned();
                tri::solve_lower_triangular_in_place(args[1].mat(), rhs.as_mut(), Par::Seq);
                Dense::from_mat(rhs.as_ref().transpose())
            }
            LinOp::LuPanel { row0 } => {
                let p = &args[0];
                let (n, w, r0) = (p.rows, p.cols, row0 as usize);
                let sub = p.rows_of(r0, n);
                let lu = sub.mat().partial_piv_lu();
                let (l, u) = (lu.L(), lu.U());
                let fwd = lu.P().arrays().0;
                for k in 0..w {
                    if u[(k, k)] == 0.0 || !u[(k, k)].is_finite() {
                        return Err("solve: the matrix is singular".into());
                    }
                }
                let mut out = Dense::new(n, w + 1, vec![0.0; n * (w + 1)]);
                for i in 0..n {
                    for j in 0..w {
                        out.v[i * (w + 1) + j] = p.v[i * w + j];
                    }
                    out.v[i * (w + 1) + w] = i as f64;
                }
                for i in 0..n - r0 {
                    for j in 0..w {
                        let v = if i <= j && i < w { u[(i, j)] } else { l[(i, j)] };
                        out.v[(r0 + i) * (w + 1) + j] = v;
                    }
                    out.v[(r0 + i) * (w + 1) + w] = fwd[i] as f64;
                }
                out
            }
            LinOp::LuApply { row0 } => {
                let (f, p) = (&args[0], &args[1]);
                let (n, w, r0) = (f.rows, f.cols - 1, row0 as usize);
                let mut out = p.clone();
                for i in r0..n {
                    let src = r0 + f.v[i * f.cols + w] as usize;
                    out.v[i * p.cols..(i + 1) * p.cols].copy_from_slice(&p.v[src * p.cols..(src + 1) * p.cols]);
                }
                let fl = f.left(w);
                let lkk = fl.rows_of(r0, r0 + w);
                let mut top = out.rows_of(r0, r0 + w).owned();
                tri::solve_unit_lower_triangular_in_place(lkk.mat(), top.as_mut(), Par::Seq);
                let top = Dense::from_mat(top.as_ref());
                out.set_rows(r0, &top);
                if r0 + w < n {
                    let below = fl.rows_of(r0 + w, n);
                    let mut rest = out.rows_of(r0 + w, n).owned();
                    faer::linalg::matmul::matmul(rest.as_mut(), Accum::Add, below.mat(), top.mat(), -1.0, Par::Seq);
                    out.set_rows(r0 + w, &Dense::from_mat(rest.as_ref()));
                }
                out
            }
            LinOp::SolveUpper => {
                let u = &args[0];
                if (0..u.rows).any(|i| u.v[i * u.cols + i] == 0.0) {
                    return Err("solve: the matrix is singular".into());
                }
                let mut rhs = args[1].owned();
                tri::solve_upper_triangular_in_place(u.mat(), rhs.as_mut(), Par::Seq);
                Dense::from_mat(rhs.as_ref())
            }
            LinOp::QrStack => {
                let (scaled, unscale) = args[0].scaled();
                let qr = scaled.mat().qr();
                let q = Dense::from_mat(qr.compute_thin_Q().as_ref());
                let mut r = Dense::from_mat(qr.thin_R());
                r.v.iter_mut().for_each(|v| *v = unscale(*v));
                Dense::stack(&[q, r])
            }
            LinOp::SvdPack => {
                let (scaled, unscale) = args[0].scaled();
                let svd = scaled.mat().thin_svd().map_err(|e| format!("svd did not converge: {e:?}"))?;
                let u = Dense::from_mat(svd.U());
                let n = u.cols;
                let s = Dense::new(1, n, (0..n).map(|i| unscale(svd.S().column_vector()[i])).collect());
                let vt = Dense::from_mat(svd.V().transpose());
                Dense::stack(&[u, s, vt])
            }
            LinOp::SlogDet => {
                let n = args[0].rows;
                let mut f = args[0].owned();
                let (mut fwd, mut bwd) = (vec![0usize; n], vec![0usize; n]);
                let scratch = lu::lu_in_place_scratch::<usize, f64>(n, n, Par::Seq, Default::default());
                let mut mem = faer::dyn_stack::MemBuffer::new(scratch);
                let stack = faer::dyn_stack::MemStack::new(&mut mem);
                let (info, _) = lu::lu_in_place(f.as_mut(), &mut fwd, &mut bwd, Par::Seq, stack, Default::default());
                // Summed as logs, so a determinant beyond f64's range still has one.
                let mut sign = if info.transposition_count % 2 == 0 { 1.0 } else { -1.0 };
                let (mut log, mut det) = (0.0, 1.0);
                for i in 0..n {
                    let d = f[(i, i)];
                    if d == 0.0 {
                        // A zero pivot of partial pivoting: the column below is zero too,
                        // so the matrix is singular (and the rest of U is not finite).
                        (sign, log, det) = (0.0, f64::NEG_INFINITY, 0.0);
                        break;
                    }
                    det *= d;
                    sign *= d.signum();
                    log += d.abs().ln();
                }
                let det = if info.transposition_count % 2 == 0 { det } else { -det };
                Dense::new(1, 3, vec![sign, log, det])
            }
            LinOp::EighPack => {
                let n = args[0].rows;
                // Scaled by the largest entry of the lower triangle, the part it reads.
                let a = &args[0];
                let amax = (0..n)
                    .flat_map(|i| (0..=i).map(move |j| (i, j)))
                    .fold(0.0f64, |m, (i, j)| m.max(a.v[i * n + j].abs()));
                let (scaled, unscale) = a.scaled_by(amax);
                let evd = scaled
                    .mat()
                    .self_adjoint_eigen(faer::Side::Lower)
                    .map_err(|e| format!("eigh did not converge: {e:?}"))?;
                let w = Dense::new(1, n, (0..n).map(|i| unscale(evd.S().column_vector()[i])).collect());
                Dense::stack(&[w, Dense::from_mat(evd.U())])
            }
            LinOp::SvdFull => {
                let (m, n) = (args[0].rows, args[0].cols);
                let (w, k) = (m.max(n), m.min(n));
                let (scaled, unscale) = args[0].scaled();
                let svd = scaled.mat().svd().map_err(|e| format!("svd did not converge: {e:?}"))?;
                let s = (0..w).map(|i| if i < k { unscale(svd.S().column_vector()[i]) } else { 0.0 }).collect();
                let u = Dense::from_mat(svd.U()).padded(w);
                let vt = Dense::from_mat(svd.V().transpose()).padded(w);
                Dense::stack(&[u, Dense::new(1, w, s), vt])
            }
            LinOp::Complex(_) => unreachable!("complex factorizations run on complex operands (the evaluator's)"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(rows: usize, cols: usize, f: impl Fn(usize, usize) -> f64) -> Dense {
        Dense::new(rows, cols, (0..rows * cols).map(|k| f(k / cols, k % cols)).collect())
    }

    fn mul(a: &Dense, b: &Dense) -> Dense {
        LinOp::MatMul { ta: false, tb: false }.run(&[a.clone(), b.clone()]).unwrap()
    }

    fn near(a: &Dense, b: &Dense) {
        assert_eq!((a.rows, a.cols), (b.rows, b.cols));
        for (x, y) in a.v.iter().zip(&b.v) {
            assert!((x - y).abs() < 1e-9 * (1.0 + y.abs()), "{x} vs {y}");
        }
    }

    fn pseudo(i: usize, j: usize) -> f64 {
        (((i * 31 + j * 17) * 2654435761) % 1000) as f64 / 500.0 - 1.0
    }

    #[test]
    fn a_full_svd_completes_both_bases_and_reproduces_its_matrix() {
        for (r, c) in [(5, 3), (3, 5), (4, 4)] {
            let a = m(r, c, pseudo);
            let (w, k) = (r.max(c), r.min(c));
            let out = LinOp::SvdFull.run(std::slice::from_ref(&a)).unwrap();
            assert_eq!((out.rows, out.cols), (r + 1 + c, w));
            let (u, s, vt) = (out.rows_of(0, r).left(r), out.rows_of(r, r + 1), out.rows_of(r + 1, r + 1 + c).left(c));
            let eye = |n: usize| m(n, n, |i, j| f64::from(u8::from(i == j)));
            let t = |d: &Dense| m(d.cols, d.rows, |i, j| d.v[j * d.cols + i]);
            near(&mul(&t(&u), &u), &eye(r));
            near(&mul(&vt, &t(&vt)), &eye(c));
            let sigma = m(r, c, |i, j| if i == j && i < k { s.v[i] } else { 0.0 });
            near(&mul(&mul(&u, &sigma), &vt), &a);
        }
    }

    #[test]
    fn a_panel_factored_and_applied_reproduces_the_permuted_matrix() {
        // One panel step of a 6×6 matrix with a 2-wide panel at row 2, and the block to
        // its right: P·A = L·U on rows 2.., column by column.
        let a = m(6, 2, pseudo);
        let f = LinOp::LuPanel { row0: 2 }.run(std::slice::from_ref(&a)).unwrap();
        let rest = m(6, 3, |i, j| pseudo(i + 7, j));
        let applied = LinOp::LuApply { row0: 2 }.run(&[f.clone(), rest.clone()]).unwrap();
        // Rebuild L (4×2 unit lower) and U (2×2) from the packed panel.
        let l = m(4, 2, |i, j| {
            if i == j {
                1.0
            } else if i > j {
                f.v[(2 + i) * 3 + j]
            } else {
                0.0
            }
        });
        let u = m(2, 2, |i, j| if j >= i { f.v[(2 + i) * 3 + j] } else { 0.0 });
        let perm: Vec<usize> = (0..4).map(|i| f.v[(2 + i) * 3 + 2] as usize).collect();
        let pa = m(4, 2, |i, j| a.v[(2 + perm[i]) * 2 + j]);
        near(&mul(&l, &u), &pa);
        // The block to the right: its top rows are L₁₁⁻¹·(P·B)₁, the rest (P·B)₂ − L₂₁·U₁₂.
        let pb = m(4, 3, |i, j| rest.v[(2 + perm[i]) * 3 + j]);
        let u12 = m(2, 3, |i, j| applied.v[(2 + i) * 3 + j]);
        let s = m(2, 3, |i, j| applied.v[(4 + i) * 3 + j]);
        let l_top = m(2, 2, |i, j| l.v[i * 2 + j]);
        let l_bot = m(2, 2, |i, j| l.v[(2 + i) * 2 + j]);
        near(&mul(&l_top, &u12), &m(2, 3, |i, j| pb.v[i * 3 + j]));
        let lu = mul(&l_bot, &u12);
        near(&m(2, 3, |i, j| s.v[i * 3 + j] + lu.v[i * 3 + j]), &m(2, 3, |i, j| pb.v[(2 + i) * 3 + j]));
        // Rows above row0 are untouched.
        assert_eq!(&applied.v[..6], &rest.v[..6]);
    }

    #[test]
    fn qr_svd_cholesky_and_triangular_solves_invert_their_products() {
        let a = m(7, 3, pseudo);
        let qr = LinOp::QrStack.run(std::slice::from_ref(&a)).unwrap();
        let (q, r) = (qr.rows_of(0, 7), qr.rows_of(7, 10));
        near(&mul(&q, &r), &a);
        let sq = m(3, 3, |i, j| pseudo(i, j) + if i == j { 4.0 } else { 0.0 });
        let svd = LinOp::SvdPack.run(std::slice::from_ref(&sq)).unwrap();
        let (u, s, vt) = (svd.rows_of(0, 3), svd.rows_of(3, 4), svd.rows_of(4, 7));
        let us = m(3, 3, |i, j| u.v[i * 3 + j] * s.v[j]);
        near(&mul(&us, &vt), &sq);
        let spd = LinOp::MatMul { ta: false, tb: true }.run(&[sq.clone(), sq.clone()]).unwrap();
        let l = LinOp::Cholesky.run(std::slice::from_ref(&spd)).unwrap();
        near(&LinOp::MatMul { ta: false, tb: true }.run(&[l.clone(), l.clone()]).unwrap(), &spd);
        let b = m(2, 3, |i, j| pseudo(i + 3, j));
        let x = LinOp::SolveLowerT.run(&[b.clone(), l.clone()]).unwrap();
        near(&LinOp::MatMul { ta: false, tb: true }.run(&[x, l.clone()]).unwrap(), &b);
        let rhs = m(3, 2, |i, j| pseudo(j, i + 5));
        let lt = m(3, 3, |i, j| l.v[j * 3 + i]);
        let y = LinOp::SolveUpper.run(&[lt.clone(), rhs.clone()]).unwrap();
        near(&mul(&lt, &y), &rhs);
        let not_pd = m(2, 2, |i, j| if i == j { -1.0 } else { 0.0 });
        assert!(LinOp::Cholesky.run(&[not_pd]).unwrap_err().contains("not positive definite"));
        let singular = m(3, 1, |_, _| 0.0);
        assert!(LinOp::LuPanel { row0: 0 }.run(&[singular]).unwrap_err().contains("singular"));
    }

    #[test]
    fn slogdet_of_singular_matrices_is_zero_not_nan() {
        for a in [m(3, 3, |_, _| 0.0), m(3, 3, |i, j| if j == 1 { 0.0 } else { pseudo(i, j) })] {
            let r = LinOp::SlogDet.run(std::slice::from_ref(&a)).unwrap();
            assert_eq!(r.v, [0.0, f64::NEG_INFINITY, 0.0]);
        }
        let r = LinOp::SlogDet.run(&[m(2, 2, |i, j| [[0.0, 2.0], [3.0, 1.0]][i][j])]).unwrap();
        assert_eq!(r.v[0], -1.0);
        assert!((r.v[2] + 6.0).abs() < 1e-12 && (r.v[1] - 6f64.ln()).abs() < 1e-12, "{:?}", r.v);
    }

    #[test]
    fn svd_of_tiny_and_huge_matrices_keeps_every_singular_value() {
        // [[1, 2], [3, 1]]: singular values (5 ± √5)/2 · … computed at every scale.
        let want = [(15f64 + 125f64.sqrt()) / 2.0, (15f64 - 125f64.sqrt()) / 2.0].map(f64::sqrt);
        for scale in [1e-310, 1e-200, 1e-100, 1.0, 1e100, 1e200] {
            let a = m(2, 2, |i, j| [[1.0, 2.0], [3.0, 1.0]][i][j] * scale);
            let qr = LinOp::QrStack.run(std::slice::from_ref(&a)).unwrap();
            let unscaled = |d: &Dense| Dense::new(d.rows, d.cols, d.v.iter().map(|v| v / scale).collect());
            near(&unscaled(&mul(&qr.rows_of(0, 2), &qr.rows_of(2, 4))), &unscaled(&a));
            let s = LinOp::SvdPack.run(std::slice::from_ref(&a)).unwrap().rows_of(2, 3);
            for (got, want) in s.v.iter().zip(want) {
                assert!((got / scale - want).abs() < 1e-12, "scale {scale}: {:?}", s.v);
            }
        }
    }
}
