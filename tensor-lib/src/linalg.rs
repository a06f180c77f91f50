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

/// `acc + a · b` (or `a · b` without `acc`); `flags` bit 0 transposes `a`, bit 1 `b`.
/// Panics on chunks that are not 2-d or do not conform (the planner never makes them).
pub(crate) fn gemm(acc: Option<Chunk>, a: Chunk, b: Chunk, flags: u8) -> Chunk {
    let (ta, tb) = (flags & 1 != 0, flags & 2 != 0);
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
            faer::linalg::matmul::matmul(dst, accum, view(&av, ar, ac, ta), view(&bv, br, bc, tb), 1.0 as $t, Par::Seq);
            Chunk { shape, data: Buf::$wrap(out) }
        }};
    }
    if single { run!(f32, F32) } else { run!(f64, F64) }
}
