//! Tiling of matrix products and decompositions, blocked by the operands' chunks.

use std::sync::Arc;

use ares_tileable::{Cx, Hints};

use super::{Src, Tiled, chunk_shape, program, set_tsqr_memo, tile, tile_all, tsqr_memo};
use crate::data::{DType, Scalar, numel};
use crate::kernel::{BinOp, LinOp, Node};
use crate::tasks::TensorTask;
use crate::tensor::{Factor, Op, Tensor};

/// Products summed by one GEMM task at most. Every task more in a chain costs a partial
/// sum written to the store and read back (for 1000² chunks an 8 MB copy each way plus
/// 2048 page faults, ~12% of the product's time); every product more pins two more
/// input chunks while the task runs.
const GEMM_PAIRS: usize = 8;

/// Products per GEMM task for `a · b` (giving `t`, over `kk` chunks of the shared
/// dimension): [`GEMM_PAIRS`], or fewer when the store is small, so that one task's
/// inputs and output take at most half the share of the store tasks in flight may take
/// (two run side by side; the rest can spill).
fn gemm_pairs(cx: &Cx<'_>, a: &Tensor, b: &Tensor, t: &Tensor, kk: usize) -> usize {
    let Some(capacity) = cx.store_capacity() else { return GEMM_PAIRS };
    let per_task = capacity as f64 * cx.session().settings().store_share / 2.0;
    let block = |x: &Tensor| -> f64 {
        let rows = x.chunks()[0].iter().copied().max().unwrap_or(0);
        let cols = x.chunks()[1].iter().copied().max().unwrap_or(0);
        (rows * cols) as f64 * x.dtype().size() as f64
    };
    let out = block(t);
    // A chain carries an accumulator as one more input.
    let acc = if kk > GEMM_PAIRS { out } else { 0.0 };
    let fit = ((per_task - out - acc) / (block(a) + block(b)).max(1.0)).floor();
    (fit.max(1.0) as usize).min(GEMM_PAIRS)
}

/// Blocked matrix product: each output block is a chain of GEMM tasks over the shared
/// dimension's chunks, [`GEMM_PAIRS`] products per task. `a · aᵀ` computes only the upper block triangle and reads the
/// lower blocks as transposes of upper ones (numpy uses `syrk` for this case too).
pub(crate) fn tile_matmul(cx: &mut Cx<'_>, t: &Tensor, a: &Tensor, b: &Tensor, depth: u32) -> Tiled<Vec<Src>> {
    // A transposed operand is its operand's chunks, read transposed.
    let base = |x: &Tensor| match &x.node.op {
        Op::Transpose(y) => (y.clone(), true),
        _ => (x.clone(), false),
    };
    let ((base_a, ta), (base_b, tb)) = (base(a), base(b));
    let tiled = tile_all(cx, &[&base_a, &base_b])?;
    let (ra, rb) = (tiled[0].clone(), tiled[1].clone());
    let (ca, cb) = (base_a.chunks()[1].len(), base_b.chunks()[1].len());
    let at = |i: usize, k: usize| {
        let s = if ta { ra[k * ca + i] } else { ra[i * ca + k] };
        Src { op: s.op, t: s.t ^ ta }
    };
    let bt = |k: usize, j: usize| {
        let s = if tb { rb[j * cb + k] } else { rb[k * cb + j] };
        Src { op: s.op, t: s.t ^ tb }
    };
    let symmetric = !ta && tb && Arc::ptr_eq(&base_a.node, &base_b.node) && a.chunks()[0] == b.chunks()[1];
    let (m, n, kk) = (t.chunks()[0].len(), t.chunks()[1].len(), a.chunks()[1].len());
    let pairs = gemm_pairs(cx, a, b, t, kk);
    let mut out: Vec<Option<Src>> = vec![None; m * n];
    for i in 0..m {
        for j in 0..n {
            if symmetric && i > j {
                continue;
            }
            // A diagonal block of a · aᵀ is symmetric: half the work (syrk's saving).
            let diag = if symmetric && i == j { crate::linalg::UPPER } else { 0 };
            let last = |k: usize| if diag != 0 && k + 1 == kk { crate::linalg::MIRROR } else { 0 };
            let size = numel(&chunk_shape(t, &[i, j])) as u64 * 8;
            // Groups of the shared dimension's chunks, one task each, chained through
            // an accumulator.
            let mut acc: Option<usize> = None;
            for ks in (0..kk).collect::<Vec<_>>().chunks(pairs) {
                let mut inputs: Vec<usize> = acc.into_iter().collect();
                let mut flags = Vec::with_capacity(ks.len());
                for &k in ks {
                    let (x, y) = (at(i, k), bt(k, j));
                    inputs.extend([x.op, y.op]);
                    flags.push(u8::from(x.t) | (u8::from(y.t) << 1) | diag | last(k));
                }
                acc = Some(cx.add(TensorTask::Gemm(flags), inputs, Hints::new(depth, size).exact()));
            }
            out[i * n + j] = Some(Src { op: acc.expect("the shared dimension has a chunk"), t: false });
        }
    }
    if symmetric {
        for i in 0..m {
            for j in 0..i {
                let upper = out[j * n + i].expect("computed above");
                out[i * n + j] = Some(Src { op: upper.op, t: true });
            }
        }
    }
    Ok(out.into_iter().map(|s| s.expect("every block is computed")).collect())
}

/// The shared stages of a TSQR: per row chunk `[Qᵢ; Rᵢ]`, then `[Q₂; R]` of the stacked
/// `Rᵢ`, and (for the SVD) `[U_R; S; Vᵀ]` of `R`.
#[derive(Clone)]
pub(crate) struct Tsqr {
    stacks: Vec<usize>,
    s2: usize,
    svd: Option<usize>,
    rows: Vec<u64>,
    n: u64,
}

impl Tsqr {
    /// The chunk nodes of its stages.
    pub(crate) fn nodes(&self) -> Vec<usize> {
        let mut v = self.stacks.clone();
        v.push(self.s2);
        v.extend(self.svd);
        v
    }
}

fn stages(cx: &mut Cx<'_>, x: &Tensor, svd: bool, depth: u32) -> Tiled<Tsqr> {
    let mut st = match tsqr_memo(cx, x) {
        Some(st) => Tsqr::clone(&st),
        None => {
            let (rows, n, dt) = (x.chunks()[0].clone(), x.shape()[1], x.dtype());
            let mut stacks = Vec::with_capacity(rows.len());
            for (i, &m) in rows.iter().enumerate() {
                stacks.push(program(cx, depth, 0, |b| {
                    let xi = b.emit(x, &[i, 0])?;
                    Ok(b.lin(LinOp::QrStack, &[xi], vec![m + n, n], dt))
                })?);
            }
            let p = rows.len() as u64;
            let s2 = program(cx, depth, 1, |b| {
                let mut parts = Vec::new();
                let mut offsets = Vec::new();
                for (i, (&op, &m)) in stacks.iter().zip(&rows).enumerate() {
                    let si = b.input(Src { op, t: false }, vec![m + n, n], dt);
                    parts.push(b.rows(si, m, m + n));
                    offsets.push(vec![i as u64 * n, 0]);
                }
                let all = b.push(Node::Assemble { parts, offsets }, vec![p * n, n], dt);
                Ok(b.lin(LinOp::QrStack, &[all], vec![p * n + n, n], dt))
            })?;
            Tsqr { stacks, s2, svd: None, rows, n }
        }
    };
    if svd && st.svd.is_none() {
        let (n, p, dt, s2) = (st.n, st.rows.len() as u64, x.dtype(), st.s2);
        st.svd = Some(program(cx, depth, 2, |b| {
            let all = b.input(Src { op: s2, t: false }, vec![p * n + n, n], dt);
            let r = b.rows(all, p * n, p * n + n);
            Ok(b.lin(LinOp::SvdPack, &[r], vec![2 * n + 1, n], dt))
        })?);
    }
    set_tsqr_memo(cx, x, st.clone());
    Ok(st)
}

/// TSQR (Benson, Gleich and Demmel's tall-skinny QR) and the SVD through it.
pub(crate) fn tile_factor(cx: &mut Cx<'_>, t: &Tensor, x: &Tensor, f: Factor, depth: u32) -> Tiled<Vec<Src>> {
    if f == Factor::L {
        return tile_cholesky(cx, x, depth);
    }
    if let Factor::Complex(c) = f {
        // The whole matrix in one chunk, factored by one task.
        let op = program(cx, depth, 0, |b| {
            let xi = b.emit(x, &[0, 0])?;
            Ok(b.lin(LinOp::Complex(c), &[xi], t.shape().to_vec(), t.dtype()))
        })?;
        return Ok(vec![Src { op, t: false }]);
    }
    if f == Factor::SvdFull {
        let op = program(cx, depth, 0, |b| {
            let xi = b.emit(x, &[0, 0])?;
            Ok(b.lin(LinOp::SvdFull, &[xi], t.shape().to_vec(), t.dtype()))
        })?;
        return Ok(vec![Src { op, t: false }]);
    }
    if matches!(f, Factor::SlogDet | Factor::Eigh) {
        // The whole matrix in one chunk, factored by one task.
        let dt = t.dtype();
        let op = program(cx, depth, 0, |b| {
            let xi = b.emit(x, &[0, 0])?;
            Ok(if f == Factor::SlogDet {
                let row = b.lin(LinOp::SlogDet, &[xi], vec![1, 3], dt);
                b.push(Node::Reshape { x: row }, vec![3], dt)
            } else {
                b.lin(LinOp::EighPack, &[xi], t.shape().to_vec(), dt)
            })
        })?;
        return Ok(vec![Src { op, t: false }]);
    }
    let st = stages(cx, x, matches!(f, Factor::U | Factor::S | Factor::Vt), depth)?;
    let (n, p, dt) = (st.n, st.rows.len() as u64, t.dtype());
    let src = |op: usize| Src { op, t: false };
    let one = |op: usize| vec![Src { op, t: false }];
    Ok(match f {
        Factor::Q | Factor::U => {
            let mut out = Vec::with_capacity(st.rows.len());
            for (i, (&stack, &m)) in st.stacks.iter().zip(&st.rows).enumerate() {
                let op = program(cx, depth, 3, |b| {
                    let si = b.input(src(stack), vec![m + n, n], dt);
                    let qi = b.rows(si, 0, m);
                    let all = b.input(src(st.s2), vec![p * n + n, n], dt);
                    let q2 = b.rows(all, i as u64 * n, (i as u64 + 1) * n);
                    let q = b.lin(LinOp::MatMul { ta: false, tb: false }, &[qi, q2], vec![m, n], dt);
                    if f == Factor::Q {
                        return Ok(q);
                    }
                    let svd = b.input(src(st.svd.expect("computed for U")), vec![2 * n + 1, n], dt);
                    let ur = b.rows(svd, 0, n);
                    Ok(b.lin(LinOp::MatMul { ta: false, tb: false }, &[q, ur], vec![m, n], dt))
                })?;
                out.push(src(op));
            }
            out
        }
        Factor::R => one(program(cx, depth, 3, |b| {
            let all = b.input(src(st.s2), vec![p * n + n, n], dt);
            Ok(b.rows(all, p * n, p * n + n))
        })?),
        Factor::S => one(program(cx, depth, 3, |b| {
            let svd = b.input(src(st.svd.expect("computed")), vec![2 * n + 1, n], dt);
            let s = b.rows(svd, n, n + 1);
            Ok(b.push(Node::Reshape { x: s }, vec![n], dt))
        })?),
        Factor::Vt => one(program(cx, depth, 3, |b| {
            let svd = b.input(src(st.svd.expect("computed")), vec![2 * n + 1, n], dt);
            Ok(b.rows(svd, n + 1, 2 * n + 1))
        })?),
        Factor::L | Factor::SlogDet | Factor::Eigh | Factor::SvdFull | Factor::Complex(_) => {
            unreachable!("handled above")
        }
    })
}

/// Right-looking blocked Cholesky over square blocks: factor the diagonal block, solve
/// the blocks below it, update the trailing lower triangle, repeat.
fn tile_cholesky(cx: &mut Cx<'_>, x: &Tensor, depth: u32) -> Tiled<Vec<Src>> {
    let sizes = x.chunks()[0].clone();
    let p = sizes.len();
    let dt = x.dtype();
    let blocks = tile(cx, x)?;
    let src = |op: usize| Src { op, t: false };
    // Current value of each lower block (i ≥ j), then its factor.
    let mut a: Vec<Vec<Src>> = (0..p).map(|i| (0..p).map(|j| blocks[i * p + j]).collect()).collect();
    for k in 0..p {
        let level = 2 * k as u32;
        let bk = sizes[k];
        let akk = a[k][k];
        let lkk = program(cx, depth, level + 1, |b| {
            let x = b.input(akk, vec![bk, bk], dt);
            Ok(b.lin(LinOp::Cholesky, &[x], vec![bk, bk], dt))
        })?;
        a[k][k] = src(lkk);
        for i in k + 1..p {
            let (aik, bi) = (a[i][k], sizes[i]);
            let lik = program(cx, depth, level + 1, |b| {
                let x = b.input(aik, vec![bi, bk], dt);
                let l = b.input(src(lkk), vec![bk, bk], dt);
                Ok(b.lin(LinOp::SolveLowerT, &[x, l], vec![bi, bk], dt))
            })?;
            a[i][k] = src(lik);
        }
        for i in k + 1..p {
            for j in k + 1..=i {
                let (aij, lik, ljk) = (a[i][j], a[i][k], a[j][k]);
                let (bi, bj) = (sizes[i], sizes[j]);
                let upd = program(cx, depth, level + 2, |b| {
                    let x = b.input(aij, vec![bi, bj], dt);
                    let li = b.input(lik, vec![bi, bk], dt);
                    let lj = b.input(ljk, vec![bj, bk], dt);
                    let prod = b.lin(LinOp::MatMul { ta: false, tb: true }, &[li, lj], vec![bi, bj], dt);
                    Ok(b.push(Node::Binary { op: BinOp::Sub, a: x, b: prod }, vec![bi, bj], dt))
                })?;
                a[i][j] = src(upd);
            }
        }
    }
    let mut out = Vec::with_capacity(p * p);
    for (i, row) in a.iter().enumerate() {
        for (j, &blk) in row.iter().enumerate() {
            if j <= i {
                out.push(blk);
            } else {
                let shape = vec![sizes[i], sizes[j]];
                out.push(src(program(cx, depth, 0, |b| Ok(b.push(Node::Const(Scalar::F64(0.0)), shape, dt)))?));
            }
        }
    }
    Ok(out)
}

/// LU with partial pivoting over column panels of `a` (each panel one task, so the
/// pivot search sees whole columns), `b` carried along as one more panel, then back
/// substitution by row blocks.
pub(crate) fn tile_solve(cx: &mut Cx<'_>, a: &Tensor, b: &Tensor, depth: u32) -> Tiled<Vec<Src>> {
    let n = a.shape()[0];
    let widths = a.chunks()[1].clone();
    let k = b.shape()[1];
    let dt = DType::promote(a.dtype(), b.dtype());
    let panels = a.rechunk_to(vec![vec![n], widths.clone()]);
    let rhs = b.rechunk_to(vec![vec![n], vec![k]]);
    let tiled = tile_all(cx, &[&panels, &rhs])?;
    let mut cur: Vec<(Src, u64)> = tiled[0].iter().copied().zip(widths.iter().copied()).collect();
    cur.push((tiled[1][0], k));
    let src = |op: usize| Src { op, t: false };
    let p = widths.len();
    let row0: Vec<u64> = widths.iter().scan(0, |acc, &w| Some(std::mem::replace(acc, *acc + w))).collect();
    let mut fact = Vec::with_capacity(p);
    for s in 0..p {
        let (panel, w) = cur[s];
        let r0 = row0[s];
        let f = program(cx, depth, 2 * s as u32 + 1, |bl| {
            let x = bl.input(panel, vec![n, w], dt);
            Ok(bl.lin(LinOp::LuPanel { row0: r0 as u32 }, &[x], vec![n, w + 1], dt))
        })?;
        fact.push((f, w));
        for slot in cur.iter_mut().skip(s + 1) {
            let (pj, wj) = *slot;
            let upd = program(cx, depth, 2 * s as u32 + 2, |bl| {
                let fx = bl.input(src(f), vec![n, w + 1], dt);
                let x = bl.input(pj, vec![n, wj], dt);
                Ok(bl.lin(LinOp::LuApply { row0: r0 as u32 }, &[fx, x], vec![n, wj], dt))
            })?;
            *slot = (src(upd), wj);
        }
    }
    let rhs = cur[p].0;
    let mut x: Vec<Option<usize>> = vec![None; p];
    let level0 = 2 * p as u32 + 1;
    for s in (0..p).rev() {
        let (r0, w) = (row0[s], widths[s]);
        let xs = &x;
        let op = program(cx, depth, level0 + (p - s) as u32, |bl| {
            let f = bl.input(src(fact[s].0), vec![n, w + 1], dt);
            let u = bl.block(f, r0, r0 + w, 0, w);
            let bx = bl.input(rhs, vec![n, k], dt);
            let mut acc = bl.rows(bx, r0, r0 + w);
            for j in s + 1..p {
                let wj = widths[j];
                let fj = bl.input(src(fact[j].0), vec![n, wj + 1], dt);
                let ukj = bl.block(fj, r0, r0 + w, 0, wj);
                let xj = bl.input(src(xs[j].expect("solved before")), vec![wj, k], dt);
                let prod = bl.lin(LinOp::MatMul { ta: false, tb: false }, &[ukj, xj], vec![w, k], dt);
                acc = bl.push(Node::Binary { op: BinOp::Sub, a: acc, b: prod }, vec![w, k], dt);
            }
            Ok(bl.lin(LinOp::SolveUpper, &[u, acc], vec![w, k], dt))
        })?;
        x[s] = Some(op);
    }
    Ok(x.into_iter().map(|o| src(o.expect("every block is solved"))).collect())
}
