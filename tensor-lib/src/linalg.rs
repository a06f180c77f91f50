//! Dense kernels run inside chunk tasks. GEMM is faer's, single-threaded: parallelism
//! comes from running many chunk tasks at once.

use faer::{Accum, MatMut, MatRef, Par};

use crate::data::{Buf, Chunk, DType};

/// A row-major `rows × cols` slice as a faer view (a column-major view, transposed).
fn view<T>(v: &[T], rows: usize, cols: usize, transpose: bool) -> MatRef<'_, T> {
    let m = MatRef::from_column_major_slice(v, cols, rows).transpose();
    if transpose { m.transpose() } else { m }
}

fn dims(c: &Chunk, transpose: bool) -> (usize, usize) {
    let (r, k) = (c.shape[0] as usize, c.shape[1] as usize);
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

/// `acc + a · b` (or `a · b` without `acc`), as the flags above say.
/// Panics on chunks that are not 2-d or do not conform (the planner never makes them).
pub(crate) fn gemm(acc: Option<Chunk>, a: Chunk, b: Chunk, flags: u8) -> Chunk {
    let (ta, tb) = (flags & TRANS_A != 0, flags & TRANS_B != 0);
    let (upper, mirror) = (flags & UPPER != 0, flags & MIRROR != 0);
    let (m, k) = dims(&a, ta);
    let (k2, n) = dims(&b, tb);
    assert_eq!(k, k2, "gemm of {:?} and {:?} (flags {flags}) does not conform", a.shape, b.shape);
    let single = a.dtype() == DType::F32 && b.dtype() == DType::F32;
    let shape = vec![m as u64, n as u64];
    let (ar, ac, br, bc) = (a.shape[0] as usize, a.shape[1] as usize, b.shape[0] as usize, b.shape[1] as usize);
    macro_rules! run {
        ($t:ty, $wrap:ident) => {{
            let (Buf::$wrap(av), Buf::$wrap(bv)) = (a.data.cast(DType::$wrap), b.data.cast(DType::$wrap)) else {
                unreachable!("cast above")
            };
            let (mut out, accum) = match acc {
                Some(c) => match c.data.cast(DType::$wrap) {
                    Buf::$wrap(v) => (v, Accum::Add),
                    _ => unreachable!("cast above"),
                },
                None => (vec![0 as $t; m * n], Accum::Replace),
            };
            let dst: MatMut<'_, $t> = MatMut::from_column_major_slice_mut(&mut out, n, m).transpose_mut();
            let (lhs, rhs) = (view(&av, ar, ac, ta), view(&bv, br, bc, tb));
            if upper {
                use faer::linalg::matmul::triangular::{
                    BlockStructure::{Rectangular, TriangularUpper},
                    matmul,
                };
                matmul(dst, TriangularUpper, accum, lhs, Rectangular, rhs, Rectangular, 1.0 as $t, Par::Seq);
                if mirror {
                    for i in 0..m {
                        for j in 0..i {
                            out[i * n + j] = out[j * n + i];
                        }
                    }
                }
            } else {
                faer::linalg::matmul::matmul(dst, accum, lhs, rhs, 1.0 as $t, Par::Seq);
            }
            Chunk { shape, data: Buf::$wrap(out) }
        }};
    }
    if single { run!(f32, F32) } else { run!(f64, F64) }
}
