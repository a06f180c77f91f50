//! The executor: the one module that submits chunk tasks (keep it that way: the runtime's
//! API may still change under it).
//!
//! Executing a tensor has three steps, as in Mars:
//!
//! 1. **Resolve** unknown shapes (iterative tiling): a boolean mask's chunks are computed
//!    first, their lengths read from the store, and the tensors built on them re-derive
//!    their shapes and chunks.
//! 2. **Tile** the expression into a chunk graph ([`Plan`]). Element-wise chains, creation
//!    operations, slicing, rechunking, concatenation, reshapes and a trailing reduction
//!    over a whole last axis are fused into one [`Program`] per chunk; reductions become
//!    trees of partial results combined `combine_size` at a time; matrix products become
//!    one GEMM task per output block (chained beyond `GEMM_PAIRS` products).
//! 3. **Run** the graph depth-first: among the chunk tasks whose inputs have been
//!    submitted, the one of the deepest tensor goes first (then the higher level of a
//!    reduction tree, then the smaller output), so consumers run as soon as they can and
//!    intermediate chunks die early. At most `max_in_flight` tasks are submitted and not
//!    finished, which bounds memory by (tasks in flight × chunk size) whatever the tensor's
//!    size. The driver drops its reference to an intermediate chunk as soon as its last
//!    consumer is submitted, so the store frees it once that consumer has run.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use ares::{InPlace, InPlaceList, ObjectRef};
use ares_tileable::{Graph, Output, Progress, ProgressFn, Trees};
use ndarray::{ArrayD, IxDyn};

use crate::data::{Chunk, ChunkRef, DType, Elem, Scalar, numel};
use crate::kernel::{BinOp, LinOp, Node, Partial, Program, ReduceOp};
use crate::tensor::{Factor, Op, Result, Tensor, TensorError, grid_indices, squeeze_chunks};

/// Where tensors are computed, with the scheduling settings. Chunks computed in one
/// session are not seen by another.
#[derive(Clone)]
pub struct Session {
    /// Chunk tasks submitted and not yet finished, at most.
    max_in_flight: usize,
    /// Partials combined by one task of a tree reduction (Mars uses 4).
    combine_size: usize,
    id: u64,
    progress: Option<Arc<ProgressFn>>,
    /// Set from another thread to stop a computation between chunk tasks.
    cancel: Option<Arc<std::sync::atomic::AtomicBool>>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("max_in_flight", &self.max_in_flight)
            .field("combine_size", &self.combine_size)
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl Default for Session {
    fn default() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Session {
            max_in_flight: 8,
            combine_size: 4,
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            progress: None,
            cancel: None,
        }
    }
}

/// How a chunk task reduces its fused result.
#[derive(Clone, Debug, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct ReduceSpec {
    /// The reduction.
    pub op: ReduceOp,
    /// Axes reduced within the chunk; empty means all.
    pub axes: Vec<u32>,
    /// Where the chunk starts in the reduced tensor (positions of argmin/argmax are global).
    pub offset: Vec<u64>,
}

fn run_map(p: Program, inputs: &[ChunkRef<'_>]) -> Chunk {
    ares_tileable::keep_freed_memory();
    p.run(inputs).unwrap_or_else(|e| ares::fail(e.to_string()))
}

fn run_reduce(p: Program, r: ReduceSpec, inputs: &[ChunkRef<'_>]) -> Partial {
    ares_tileable::keep_freed_memory();
    if r.axes.is_empty() {
        return p.run_reduce(r.op, inputs).unwrap_or_else(|e| ares::fail(e.to_string()));
    }
    let chunk = p.run(inputs).unwrap_or_else(|e| ares::fail(e.to_string()));
    let mut part = reduce_axes(&chunk, r.op, &r.axes);
    if let [axis] = r.axes[..] {
        let base = r.offset.get(axis as usize).copied().unwrap_or(0) as i64;
        part.map_idx(|_, i| i + base);
    }
    part
}

/// Reduces `chunk` over `axes`, keeping them as dimensions of 1.
fn reduce_axes(chunk: &Chunk, op: ReduceOp, axes: &[u32]) -> Partial {
    let nd = chunk.shape.len();
    let kept: Vec<usize> = (0..nd).filter(|d| !axes.contains(&(*d as u32))).collect();
    let reduced: Vec<usize> = (0..nd).filter(|d| axes.contains(&(*d as u32))).collect();
    let perm: Vec<usize> = kept.iter().chain(&reduced).copied().collect();
    let shape: Vec<usize> = chunk.shape.iter().map(|&d| d as usize).collect();
    let idx = ArrayD::from_shape_vec(IxDyn(&shape), (0..numel(&chunk.shape)).collect::<Vec<usize>>())
        .expect("shape matches")
        .permuted_axes(IxDyn(&perm));
    let order: Vec<usize> = idx.iter().copied().collect();
    let group: usize = reduced.iter().map(|&d| shape[d]).product();
    let out_shape: Vec<u64> = (0..nd).map(|d| if reduced.contains(&d) { 1 } else { chunk.shape[d] }).collect();
    Partial::of_groups(op, chunk.data.gather(&order), group, out_shape)
}

/// Referenced by [`crate::link_kernels`]: every kernel of this module is registered in
/// the same object file as `map0`.
pub(crate) fn link() {
    std::hint::black_box(map0 as fn(Program) -> Chunk);
}

// Chunk inputs are read in place from the store (`InPlace`): a kernel copies only the
// blocks it works on, not each input whole first.
#[ares::remote]
fn map0(p: Program) -> Chunk {
    run_map(p, &[])
}
#[ares::remote]
fn map1(p: Program, a: InPlace<'_, Chunk>) -> Chunk {
    run_map(p, &[(&*a).into()])
}
#[ares::remote]
fn map2(p: Program, a: InPlace<'_, Chunk>, b: InPlace<'_, Chunk>) -> Chunk {
    run_map(p, &[(&*a).into(), (&*b).into()])
}
#[ares::remote]
fn map3(p: Program, a: InPlace<'_, Chunk>, b: InPlace<'_, Chunk>, c: InPlace<'_, Chunk>) -> Chunk {
    run_map(p, &[(&*a).into(), (&*b).into(), (&*c).into()])
}
#[ares::remote]
fn map4(
    p: Program,
    a: InPlace<'_, Chunk>,
    b: InPlace<'_, Chunk>,
    c: InPlace<'_, Chunk>,
    d: InPlace<'_, Chunk>,
) -> Chunk {
    run_map(p, &[(&*a).into(), (&*b).into(), (&*c).into(), (&*d).into()])
}
#[ares::remote]
fn mapn(p: Program, inputs: InPlaceList<'_, Chunk>) -> Chunk {
    let refs: Vec<ChunkRef<'_>> = inputs.iter().map(|c| ChunkRef::Archived(c)).collect();
    run_map(p, &refs)
}
#[ares::remote]
fn reduce0(p: Program, r: ReduceSpec) -> Partial {
    run_reduce(p, r, &[])
}
#[ares::remote]
fn reduce1(p: Program, r: ReduceSpec, a: InPlace<'_, Chunk>) -> Partial {
    run_reduce(p, r, &[(&*a).into()])
}
#[ares::remote]
fn reduce2(p: Program, r: ReduceSpec, a: InPlace<'_, Chunk>, b: InPlace<'_, Chunk>) -> Partial {
    run_reduce(p, r, &[(&*a).into(), (&*b).into()])
}
#[ares::remote]
fn reducen(p: Program, r: ReduceSpec, inputs: InPlaceList<'_, Chunk>) -> Partial {
    let refs: Vec<ChunkRef<'_>> = inputs.iter().map(|c| ChunkRef::Archived(c)).collect();
    run_reduce(p, r, &refs)
}

/// `Σₖ aₖ · bₖ` of 2-d chunks given as `[acc,] a₀, b₀, a₁, b₁, …` (with an odd count,
/// the first is an accumulator added to the sum), one `flags` per pair (`linalg::TRANS_A`,
/// …). One task sums over several chunks of the shared dimension, so the partial sums
/// between them never go through the store.
#[ares::remote]
fn gemm(operands: InPlaceList<'_, Chunk>, flags: Vec<u8>) -> Chunk {
    ares_tileable::keep_freed_memory();
    let (acc, rest) = match operands.len() % 2 {
        1 => (Some(ChunkRef::Archived(&operands[0])), &operands[1..]),
        _ => (None, &operands[..]),
    };
    assert_eq!(rest.len(), 2 * flags.len(), "gemm takes a pair of chunks per flag");
    let pairs: Vec<_> =
        rest.chunks(2).zip(&flags).map(|(p, &f)| (ChunkRef::Archived(&p[0]), ChunkRef::Archived(&p[1]), f)).collect();
    crate::linalg::gemm(acc, &pairs)
}

/// Combines partials of one output chunk.
#[ares::remote]
fn combine(parts: Vec<Partial>) -> Partial {
    let mut it = parts.into_iter();
    let mut acc = it.next().expect("combine gets at least one partial");
    for p in it {
        acc.combine(&p);
    }
    acc
}

/// Turns a partial into the output chunk, of `shape`.
#[ares::remote]
fn finish(p: Partial, x_dtype: DType, shape: Vec<u64>) -> Chunk {
    let mut c = p.finish(x_dtype);
    c.shape = shape;
    c
}

// ---------------------------------------------------------------------- the chunk graph

/// Products summed by one GEMM task at most. Every task more in a chain costs a partial
/// sum written to the store and read back (for 1000² chunks an 8 MB copy each way plus
/// 2048 page faults, ~12% of the product's time); every product more pins two more
/// input chunks while the task runs.
const GEMM_PAIRS: usize = 8;

/// A chunk task's result.
#[derive(Clone)]
enum Obj {
    Chunk(ObjectRef<Chunk>),
    Part(ObjectRef<Partial>),
}

impl Obj {
    fn chunk(&self) -> &ObjectRef<Chunk> {
        match self {
            Obj::Chunk(r) => r,
            Obj::Part(_) => unreachable!("a partial is only read by combine and finish"),
        }
    }
    fn part(&self) -> &ObjectRef<Partial> {
        match self {
            Obj::Part(r) => r,
            Obj::Chunk(_) => unreachable!("combine and finish read partials"),
        }
    }
}

/// What a chunk operation runs.
enum Task {
    Map(Program),
    Reduce(Program, ReduceSpec),
    Combine,
    Finish(DType, Vec<u64>),
    /// `[acc +] Σ aₖ · bₖ`, one flags byte per pair (see [`gemm`]).
    Gemm(Vec<u8>),
}

/// A chunk of a tiled tensor: the operation producing it, read transposed if `t`.
#[derive(Clone, Copy, Debug)]
struct Src {
    op: usize,
    t: bool,
}

/// The chunk graph of one execution.
struct Plan<'s> {
    session: &'s Session,
    graph: Graph<Task, Obj>,
    /// Tensors tiled into chunk operations, by node address (the graph keeps them alive).
    tiled: HashMap<usize, Arc<Vec<Src>>>,
    depths: HashMap<usize, u32>,
    /// TSQR stages per factored tensor, shared by its `Q`, `R`, `U`, `S` and `Vᵀ`.
    tsqr: HashMap<usize, Tsqr>,
}

/// The shared stages of a TSQR: per row chunk `[Qᵢ; Rᵢ]`, then `[Q₂; R]` of the stacked
/// `Rᵢ`, and (for the SVD) `[U_R; S; Vᵀ]` of `R`.
#[derive(Clone)]
struct Tsqr {
    stacks: Vec<usize>,
    s2: usize,
    svd: Option<usize>,
    rows: Vec<u64>,
    n: u64,
}

fn key(t: &Tensor) -> usize {
    Arc::as_ptr(&t.node) as usize
}

fn chunk_shape(t: &Tensor, g: &[usize]) -> Vec<u64> {
    t.chunks().iter().zip(g).map(|(c, &i)| c[i]).collect()
}

fn chunk_offset(t: &Tensor, g: &[usize]) -> Vec<u64> {
    t.chunks().iter().zip(g).map(|(c, &i)| c[..i].iter().sum()).collect()
}

fn flat_index(t: &Tensor, g: &[usize]) -> usize {
    let mut k = 0;
    for (d, &i) in g.iter().enumerate() {
        k = k * t.chunks()[d].len() + i;
    }
    k
}

/// Whether a reduction is computed inside its consumer's chunk program: over the last
/// axis only, with that axis in one chunk.
fn fusable_reduce(axes: &[usize], x: &Tensor) -> bool {
    x.ndim() > 0 && axes == [x.ndim() - 1] && x.chunks()[x.ndim() - 1].len() == 1
}

fn cached(session: &Session, t: &Tensor) -> Option<Arc<Vec<ObjectRef<Chunk>>>> {
    let g = t.node.result.lock().unwrap_or_else(|p| p.into_inner());
    g.iter().find(|(id, _)| *id == session.id).map(|(_, r)| r.clone())
}

fn cache(session: &Session, t: &Tensor, refs: Arc<Vec<ObjectRef<Chunk>>>) {
    let mut g = t.node.result.lock().unwrap_or_else(|p| p.into_inner());
    g.retain(|(id, _)| *id != session.id);
    g.push((session.id, refs));
}

impl<'s> Plan<'s> {
    fn new(session: &'s Session) -> Self {
        Plan { session, graph: Graph::new(), tiled: HashMap::new(), depths: HashMap::new(), tsqr: HashMap::new() }
    }

    fn add(&mut self, task: Task, inputs: Vec<usize>, depth: u32, level: u32, size: u64) -> usize {
        self.graph.add(task, inputs, depth, level, size)
    }

    fn ready(&mut self, r: ObjectRef<Chunk>) -> usize {
        self.graph.ready(Obj::Chunk(r))
    }

    /// Longest path from a leaf in the tensor graph (computed tensors are leaves).
    fn depth(&mut self, t: &Tensor) -> u32 {
        if let Some(&d) = self.depths.get(&key(t)) {
            return d;
        }
        let d = if cached(self.session, t).is_some() {
            0
        } else if let Some(r) = t.node.rebuilt.get() {
            self.depth(&r.clone())
        } else {
            t.operands().into_iter().map(|x| self.depth(x) + 1).max().unwrap_or(0)
        };
        self.depths.insert(key(t), d);
        d
    }

    /// Tiles `t` into chunk operations (once per plan); returns its chunks, row-major.
    fn tile(&mut self, t: &Tensor) -> Result<Arc<Vec<Src>>> {
        if let Some(s) = self.tiled.get(&key(t)) {
            return Ok(s.clone());
        }
        let srcs = match (cached(self.session, t), t.node.rebuilt.get()) {
            (Some(refs), _) => Arc::new(refs.iter().map(|r| Src { op: self.ready(r.clone()), t: false }).collect()),
            (None, Some(r)) => self.tile(&r.clone())?,
            (None, None) => Arc::new(self.tile_new(t)?),
        };
        self.tiled.insert(key(t), srcs.clone());
        Ok(srcs)
    }

    fn tile_new(&mut self, t: &Tensor) -> Result<Vec<Src>> {
        let depth = self.depth(t);
        match &t.node.op {
            Op::FromChunks(chunks) => {
                let refs = chunks.iter().map(ares::put_ref).collect::<ares::Result<Vec<_>>>()?;
                let refs = Arc::new(refs);
                cache(self.session, t, refs.clone());
                Ok(refs.iter().map(|r| Src { op: self.ready(r.clone()), t: false }).collect())
            }
            Op::Stored(refs) => {
                cache(self.session, t, refs.clone());
                Ok(refs.iter().map(|r| Src { op: self.ready(r.clone()), t: false }).collect())
            }
            Op::Reduce { op, axes, keepdims, x } => self.tile_reduce(t, *op, axes, *keepdims, x, depth),
            Op::MatMul(a, b) => self.tile_matmul(t, a, b, depth),
            Op::Factor(x, f) => self.tile_factor(t, x, *f, depth),
            Op::Solve(a, b) => self.tile_solve(a, b, depth),
            Op::Mask(x, m) => {
                let mut out = Vec::new();
                for g in grid_indices(x.chunks()) {
                    let mut b = Builder::new(self);
                    let xn = b.emit(x, &g)?;
                    let mn = b.emit(m, &g)?;
                    let shape = chunk_shape(x, &g);
                    b.push(Node::Compress { x: xn, m: mn }, shape, t.dtype());
                    let (p, inputs) = b.finish();
                    let size = p.shapes.last().map_or(0, |s| numel(s) as u64);
                    out.push(Src { op: self.add(Task::Map(p), inputs, depth, 0, size), t: false });
                }
                Ok(out)
            }
            _ => {
                let mut out = Vec::new();
                for g in grid_indices(t.chunks()) {
                    let mut b = Builder::new(self);
                    b.emit(t, &g)?;
                    let (p, inputs) = b.finish();
                    let size = numel(&chunk_shape(t, &g)) as u64 * t.dtype().size() as u64;
                    out.push(Src { op: self.add(Task::Map(p), inputs, depth, 0, size), t: false });
                }
                Ok(out)
            }
        }
    }

    fn tile_reduce(
        &mut self,
        t: &Tensor,
        op: ReduceOp,
        axes: &[usize],
        keepdims: bool,
        x: &Tensor,
        depth: u32,
    ) -> Result<Vec<Src>> {
        // The lengths are known now: a mask's result that selected nothing has no minimum.
        let no_identity = matches!(op, ReduceOp::Min | ReduceOp::Max | ReduceOp::ArgMin | ReduceOp::ArgMax);
        if no_identity && axes.iter().any(|&a| x.shape()[a] == 0) {
            return Err(TensorError::EmptyReduction { op: format!("{op:?}") });
        }
        let all = axes.len() == x.ndim() && !op.is_arg();
        let out_grid = grid_indices(t.chunks());
        let mut trees = Trees::new(out_grid.len(), self.session.combine_size);
        for gx in grid_indices(x.chunks()) {
            let mut b = Builder::new(self);
            b.emit(x, &gx)?;
            let (p, inputs) = b.finish();
            let spec = ReduceSpec {
                op,
                axes: if all { Vec::new() } else { axes.iter().map(|&a| a as u32).collect() },
                offset: chunk_offset(x, &gx),
            };
            let leaf = self.add(Task::Reduce(p, spec), inputs, depth, 0, 0);
            // The output chunk this input chunk folds into.
            let go: Vec<usize> = (0..x.ndim())
                .filter_map(|d| if axes.contains(&d) { keepdims.then_some(0) } else { Some(gx[d]) })
                .collect();
            trees.push(&mut self.graph, flat_index(t, &go), leaf, depth, || Task::Combine);
        }
        let mut out = Vec::with_capacity(out_grid.len());
        for (k, go) in out_grid.iter().enumerate() {
            let shape = chunk_shape(t, go);
            let part = trees.root(&mut self.graph, k, depth, || Task::Combine);
            let fin = self.add(Task::Finish(x.dtype(), shape), vec![part], depth, u32::MAX, 0);
            out.push(Src { op: fin, t: false });
        }
        Ok(out)
    }

    /// Blocked matrix product: each output block is a chain of GEMM tasks over the shared
    /// dimension's chunks, [`GEMM_PAIRS`] products per task. `a · aᵀ` computes only the upper block triangle and reads the
    /// lower blocks as transposes of upper ones (numpy uses `syrk` for this case too).
    fn tile_matmul(&mut self, t: &Tensor, a: &Tensor, b: &Tensor, depth: u32) -> Result<Vec<Src>> {
        // A transposed operand is its operand's chunks, read transposed.
        let operand = |plan: &mut Self, x: &Tensor| -> Result<(Arc<Vec<Src>>, bool, Tensor)> {
            match &x.node.op {
                Op::Transpose(y) => Ok((plan.tile(y)?, true, y.clone())),
                _ => Ok((plan.tile(x)?, false, x.clone())),
            }
        };
        let (ra, ta, base_a) = operand(self, a)?;
        let (rb, tb, base_b) = operand(self, b)?;
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
                for ks in (0..kk).collect::<Vec<_>>().chunks(GEMM_PAIRS) {
                    let mut inputs: Vec<usize> = acc.into_iter().collect();
                    let mut flags = Vec::with_capacity(ks.len());
                    for &k in ks {
                        let (x, y) = (at(i, k), bt(k, j));
                        inputs.extend([x.op, y.op]);
                        flags.push(u8::from(x.t) | (u8::from(y.t) << 1) | diag | last(k));
                    }
                    acc = Some(self.add(Task::Gemm(flags), inputs, depth, 0, size));
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

    /// One chunk task whose program `build` writes (its last node is the result).
    fn program(
        &mut self,
        depth: u32,
        level: u32,
        build: impl FnOnce(&mut Builder<'_, 's>) -> Result<u32>,
    ) -> Result<usize> {
        let mut b = Builder::new(self);
        build(&mut b)?;
        let (p, inputs) = b.finish();
        let size = p.shapes.last().map_or(0, |s| numel(s) as u64 * 8);
        Ok(self.add(Task::Map(p), inputs, depth, level, size))
    }

    fn stages(&mut self, x: &Tensor, svd: bool, depth: u32) -> Result<Tsqr> {
        let mut st = match self.tsqr.get(&key(x)) {
            Some(st) => st.clone(),
            None => {
                let (rows, n, dt) = (x.chunks()[0].clone(), x.shape()[1], x.dtype());
                let mut stacks = Vec::with_capacity(rows.len());
                for (i, &m) in rows.iter().enumerate() {
                    stacks.push(self.program(depth, 0, |b| {
                        let xi = b.emit(x, &[i, 0])?;
                        Ok(b.lin(LinOp::QrStack, &[xi], vec![m + n, n], dt))
                    })?);
                }
                let p = rows.len() as u64;
                let s2 = self.program(depth, 1, |b| {
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
            st.svd = Some(self.program(depth, 2, |b| {
                let all = b.input(Src { op: s2, t: false }, vec![p * n + n, n], dt);
                let r = b.rows(all, p * n, p * n + n);
                Ok(b.lin(LinOp::SvdPack, &[r], vec![2 * n + 1, n], dt))
            })?);
        }
        self.tsqr.insert(key(x), st.clone());
        Ok(st)
    }

    /// TSQR (Benson, Gleich and Demmel's tall-skinny QR) and the SVD through it.
    fn tile_factor(&mut self, t: &Tensor, x: &Tensor, f: Factor, depth: u32) -> Result<Vec<Src>> {
        if f == Factor::L {
            return self.tile_cholesky(x, depth);
        }
        let st = self.stages(x, matches!(f, Factor::U | Factor::S | Factor::Vt), depth)?;
        let (n, p, dt) = (st.n, st.rows.len() as u64, t.dtype());
        let src = |op: usize| Src { op, t: false };
        let one = |op: usize| vec![Src { op, t: false }];
        Ok(match f {
            Factor::Q | Factor::U => {
                let mut out = Vec::with_capacity(st.rows.len());
                for (i, (&stack, &m)) in st.stacks.iter().zip(&st.rows).enumerate() {
                    let op = self.program(depth, 3, |b| {
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
            Factor::R => one(self.program(depth, 3, |b| {
                let all = b.input(src(st.s2), vec![p * n + n, n], dt);
                Ok(b.rows(all, p * n, p * n + n))
            })?),
            Factor::S => one(self.program(depth, 3, |b| {
                let svd = b.input(src(st.svd.expect("computed")), vec![2 * n + 1, n], dt);
                let s = b.rows(svd, n, n + 1);
                Ok(b.push(Node::Reshape { x: s }, vec![n], dt))
            })?),
            Factor::Vt => one(self.program(depth, 3, |b| {
                let svd = b.input(src(st.svd.expect("computed")), vec![2 * n + 1, n], dt);
                Ok(b.rows(svd, n + 1, 2 * n + 1))
            })?),
            Factor::L => unreachable!("handled above"),
        })
    }

    /// Right-looking blocked Cholesky over square blocks: factor the diagonal block, solve
    /// the blocks below it, update the trailing lower triangle, repeat.
    fn tile_cholesky(&mut self, x: &Tensor, depth: u32) -> Result<Vec<Src>> {
        let sizes = x.chunks()[0].clone();
        let p = sizes.len();
        let dt = x.dtype();
        let blocks = self.tile(x)?;
        let src = |op: usize| Src { op, t: false };
        // Current value of each lower block (i ≥ j), then its factor.
        let mut a: Vec<Vec<Src>> = (0..p).map(|i| (0..p).map(|j| blocks[i * p + j]).collect()).collect();
        for k in 0..p {
            let level = 2 * k as u32;
            let bk = sizes[k];
            let akk = a[k][k];
            let lkk = self.program(depth, level + 1, |b| {
                let x = b.input(akk, vec![bk, bk], dt);
                Ok(b.lin(LinOp::Cholesky, &[x], vec![bk, bk], dt))
            })?;
            a[k][k] = src(lkk);
            for i in k + 1..p {
                let (aik, bi) = (a[i][k], sizes[i]);
                let lik = self.program(depth, level + 1, |b| {
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
                    let upd = self.program(depth, level + 2, |b| {
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
                    out.push(src(self.program(depth, 0, |b| Ok(b.push(Node::Const(Scalar::F64(0.0)), shape, dt)))?));
                }
            }
        }
        Ok(out)
    }

    /// LU with partial pivoting over column panels of `a` (each panel one task, so the
    /// pivot search sees whole columns), `b` carried along as one more panel, then back
    /// substitution by row blocks.
    fn tile_solve(&mut self, a: &Tensor, b: &Tensor, depth: u32) -> Result<Vec<Src>> {
        let n = a.shape()[0];
        let widths = a.chunks()[1].clone();
        let k = b.shape()[1];
        let dt = DType::promote(a.dtype(), b.dtype());
        let panels = a.rechunk_to(vec![vec![n], widths.clone()]);
        let rhs = b.rechunk_to(vec![vec![n], vec![k]]);
        let mut cur: Vec<(Src, u64)> = self.tile(&panels)?.iter().copied().zip(widths.iter().copied()).collect();
        cur.push((self.tile(&rhs)?[0], k));
        let src = |op: usize| Src { op, t: false };
        let p = widths.len();
        let row0: Vec<u64> = widths.iter().scan(0, |acc, &w| Some(std::mem::replace(acc, *acc + w))).collect();
        let mut fact = Vec::with_capacity(p);
        for s in 0..p {
            let (panel, w) = cur[s];
            let r0 = row0[s];
            let f = self.program(depth, 2 * s as u32 + 1, |bl| {
                let x = bl.input(panel, vec![n, w], dt);
                Ok(bl.lin(LinOp::LuPanel { row0: r0 as u32 }, &[x], vec![n, w + 1], dt))
            })?;
            fact.push((f, w));
            for slot in cur.iter_mut().skip(s + 1) {
                let (pj, wj) = *slot;
                let upd = self.program(depth, 2 * s as u32 + 2, |bl| {
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
            let op = self.program(depth, level0 + (p - s) as u32, |bl| {
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

    /// Runs the graph (see [`Graph::run`]); returns the results of `targets`.
    fn run(&mut self, targets: &[usize]) -> Result<Vec<Obj>> {
        let settings = self.session.settings();
        self.graph.run(targets, &settings, || TensorError::Cancelled, submit)
    }
}

/// Submits one chunk task on the results of its inputs.
fn submit(task: Task, ins: Vec<Obj>, o: ares::TaskOptions) -> Obj {
    let chunks = || ins.iter().map(|o| o.chunk().clone()).collect::<Vec<_>>();
    match task {
        Task::Map(p) => {
            let c = chunks();
            Obj::Chunk(match &c[..] {
                [] => ares::remote(map0).options(o.clone()).call(p),
                [a] => ares::remote(map1).options(o.clone()).call(p, a),
                [a, b] => ares::remote(map2).options(o.clone()).call(p, a, b),
                [a, b, x] => ares::remote(map3).options(o.clone()).call(p, a, b, x),
                [a, b, x, y] => ares::remote(map4).options(o.clone()).call(p, a, b, x, y),
                _ => ares::remote(mapn).options(o.clone()).call(p, c),
            })
        }
        Task::Reduce(p, r) => {
            let c = chunks();
            Obj::Part(match &c[..] {
                [] => ares::remote(reduce0).options(o.clone()).call(p, r),
                [a] => ares::remote(reduce1).options(o.clone()).call(p, r, a),
                [a, b] => ares::remote(reduce2).options(o.clone()).call(p, r, a, b),
                _ => ares::remote(reducen).options(o.clone()).call(p, r, c),
            })
        }
        Task::Combine => {
            let parts: Vec<ObjectRef<Partial>> = ins.iter().map(|o| o.part().clone()).collect();
            Obj::Part(ares::remote(combine).options(o.clone()).call(parts))
        }
        Task::Finish(dtype, shape) => {
            Obj::Chunk(ares::remote(finish).options(o.clone()).call(ins[0].part(), dtype, shape))
        }
        Task::Gemm(flags) => Obj::Chunk(ares::remote(gemm).options(o.clone()).call(chunks(), flags)),
    }
}

impl Output for Obj {
    fn wait(&self) {
        match self {
            Obj::Chunk(r) => Output::wait(r),
            Obj::Part(r) => Output::wait(r),
        }
    }
}

/// Builds the fused program of one chunk.
struct Builder<'p, 's> {
    plan: &'p mut Plan<'s>,
    /// Chunks already emitted (a tensor used twice, as in `x * x`, is computed once).
    emitted: HashMap<(usize, Vec<usize>), u32>,
    nodes: Vec<Node>,
    shapes: Vec<Vec<u64>>,
    dtypes: Vec<DType>,
    inputs: Vec<usize>,
}

impl<'p, 's> Builder<'p, 's> {
    fn new(plan: &'p mut Plan<'s>) -> Self {
        Builder {
            plan,
            emitted: HashMap::new(),
            nodes: Vec::new(),
            shapes: Vec::new(),
            dtypes: Vec::new(),
            inputs: Vec::new(),
        }
    }

    fn push(&mut self, node: Node, shape: Vec<u64>, dtype: DType) -> u32 {
        self.nodes.push(node);
        self.shapes.push(shape);
        self.dtypes.push(dtype);
        (self.nodes.len() - 1) as u32
    }

    /// Reads chunk `src` (of `shape` as the tensor sees it) as an input.
    fn input(&mut self, src: Src, shape: Vec<u64>, dtype: DType) -> u32 {
        let arg = match self.inputs.iter().position(|&x| x == src.op) {
            Some(i) => i,
            None => {
                self.inputs.push(src.op);
                self.inputs.len() - 1
            }
        };
        if !src.t {
            return self.push(Node::Input { arg: arg as u32 }, shape, dtype);
        }
        let stored = vec![shape[1], shape[0]];
        let x = self.push(Node::Input { arg: arg as u32 }, stored, dtype);
        self.push(Node::Transpose { x }, shape, dtype)
    }

    /// Emits chunk `g` of `t` (once); returns its node.
    fn emit(&mut self, t: &Tensor, g: &[usize]) -> Result<u32> {
        let k = (key(t), g.to_vec());
        if let Some(&n) = self.emitted.get(&k) {
            return Ok(n);
        }
        let n = self.emit_new(t, g)?;
        self.emitted.insert(k, n);
        Ok(n)
    }

    /// Chunk `g` of a tensor tiled on its own (not fused).
    fn tiled(&mut self, t: &Tensor, g: &[usize]) -> Result<u32> {
        let srcs = self.plan.tile(t)?;
        Ok(self.input(srcs[flat_index(t, g)], chunk_shape(t, g), t.dtype()))
    }

    fn emit_new(&mut self, t: &Tensor, g: &[usize]) -> Result<u32> {
        if cached(self.plan.session, t).is_some() {
            return self.tiled(t, g);
        }
        if let Some(r) = t.node.rebuilt.get() {
            return self.emit(&r.clone(), g);
        }
        let shape = chunk_shape(t, g);
        let dtype = t.dtype();
        Ok(match &t.node.op {
            Op::Full(s) => self.push(Node::Const(*s), shape, dtype),
            Op::Random { kind, seed } => {
                let node =
                    Node::Random { kind: *kind, seed: *seed, offset: chunk_offset(t, g), full: t.shape().to_vec() };
                self.push(node, shape, dtype)
            }
            Op::Arange { start, step } => {
                // A 1-d range, possibly seen with extra dimensions of 1.
                let off = chunk_offset(t, g);
                let d = t.shape().iter().position(|&n| n != 1).unwrap_or(0);
                let offset = off.get(d).copied().unwrap_or(0);
                self.push(Node::Arange { start: *start, step: *step, offset }, shape, dtype)
            }
            Op::Unary(op, x) => {
                let x = self.emit(x, g)?;
                self.push(Node::Unary { op: *op, x }, shape, dtype)
            }
            Op::Cast(x) => {
                let x = self.emit(x, g)?;
                self.push(Node::Cast { x }, shape, dtype)
            }
            Op::Binary(op, a, b) => {
                let a = self.emit_broadcast(a, t, g)?;
                let b = self.emit_broadcast(b, t, g)?;
                self.push(Node::Binary { op: *op, a, b }, shape, dtype)
            }
            Op::Where(c, a, b) => {
                let c = self.emit_broadcast(c, t, g)?;
                let a = self.emit_broadcast(a, t, g)?;
                let b = self.emit_broadcast(b, t, g)?;
                self.push(Node::Where { c, a, b }, shape, dtype)
            }
            Op::Reduce { op, axes, keepdims, x } if fusable_reduce(axes, x) => {
                let mut gx = g.to_vec();
                if *keepdims {
                    gx.pop();
                }
                gx.push(0);
                let x = self.emit(x, &gx)?;
                self.push(Node::ReduceLast { op: *op, x }, shape, dtype)
            }
            Op::Transpose(x) => {
                let x = self.emit(x, &[g[1], g[0]])?;
                self.push(Node::Transpose { x }, shape, dtype)
            }
            Op::Permute(x, perm) => {
                let mut gx = vec![0; g.len()];
                for (d, &p) in perm.iter().enumerate() {
                    gx[p] = g[d];
                }
                let x = self.emit(x, &gx)?;
                let perm = perm.iter().map(|&p| p as u32).collect();
                self.push(Node::Permute { x, perm }, shape, dtype)
            }
            Op::Slice { x, start, step } => self.emit_slice(t, g, x, start, step)?,
            Op::Rechunk(x, _) => self.emit_rechunk(t, g, x)?,
            Op::Concat(xs, axis) => {
                // Chunk g[axis] of the result is some operand's chunk.
                let mut i = g[*axis];
                for x in xs {
                    let n = x.chunks()[*axis].len();
                    if i < n {
                        let mut gx = g.to_vec();
                        gx[*axis] = i;
                        return self.emit(x, &gx);
                    }
                    i -= n;
                }
                unreachable!("the grid covers the operands")
            }
            Op::Reshape(x, _) => self.emit_reshape(t, g, x)?,
            Op::FromChunks(_)
            | Op::Stored(_)
            | Op::Reduce { .. }
            | Op::MatMul(..)
            | Op::Mask(..)
            | Op::Factor(..)
            | Op::Solve(..) => self.tiled(t, g)?,
        })
    }

    /// Emits the chunk of `child` that chunk `g` of `parent` reads, broadcast to its shape.
    fn emit_broadcast(&mut self, child: &Tensor, parent: &Tensor, g: &[usize]) -> Result<u32> {
        let k = parent.ndim() - child.ndim();
        let gc: Vec<usize> = (0..child.ndim())
            // A dimension the child holds in one chunk reads that chunk (a length-1
            // dimension broadcast, or one split as `[1, 0]` after a mask ran).
            .map(|d| {
                if child.chunks()[d].len() == 1 || (child.shape()[d] == 1 && parent.shape()[d + k] != 1) {
                    0
                } else {
                    g[d + k]
                }
            })
            .collect();
        let node = self.emit(child, &gc)?;
        let want = chunk_shape(parent, g);
        let have = &self.shapes[node as usize];
        if numel(have) == numel(&want) {
            return Ok(node);
        }
        let dtype = child.dtype();
        // A broadcast constant stays a constant (kernels apply it as a scalar).
        if let Node::Const(c) = self.nodes[node as usize] {
            return Ok(self.push(Node::Const(c), want, dtype));
        }
        Ok(self.push(Node::Broadcast { x: node }, want, dtype))
    }

    /// A slice chunk reads one chunk of `x`: the one holding its first element.
    fn emit_slice(&mut self, t: &Tensor, g: &[usize], x: &Tensor, start: &[u64], step: &[i64]) -> Result<u32> {
        let shape = chunk_shape(t, g);
        let off = chunk_offset(t, g);
        let mut gx = Vec::with_capacity(g.len());
        let mut local = Vec::with_capacity(g.len());
        for d in 0..g.len() {
            let pos = (start[d] as i64 + off[d] as i64 * step[d]) as u64;
            let (i, lo) = locate(&x.chunks()[d], pos);
            gx.push(i);
            local.push(pos - lo);
        }
        if shape.contains(&0) {
            return Ok(self.push(Node::Const(Scalar::Bool(false)), shape, t.dtype()));
        }
        let xn = self.emit(x, &gx)?;
        if local.iter().all(|&l| l == 0) && step.iter().all(|&s| s == 1) && self.shapes[xn as usize] == shape {
            return Ok(xn);
        }
        Ok(self.push(Node::View { x: xn, start: local, step: step.to_vec() }, shape, t.dtype()))
    }

    /// A rechunked chunk is assembled from the boxes of `x`'s chunks it overlaps.
    fn emit_rechunk(&mut self, t: &Tensor, g: &[usize], x: &Tensor) -> Result<u32> {
        let shape = chunk_shape(t, g);
        let off = chunk_offset(t, g);
        // Per dimension: (chunk index, start inside it, length, offset in the output).
        let mut pieces: Vec<Vec<(usize, u64, u64, u64)>> = Vec::new();
        for d in 0..g.len() {
            let (lo, hi) = (off[d], off[d] + shape[d]);
            let mut v = Vec::new();
            let mut c0 = 0;
            for (i, &c) in x.chunks()[d].iter().enumerate() {
                let (a, b) = (lo.max(c0), hi.min(c0 + c));
                if a < b || (shape[d] == 0 && i == 0) {
                    v.push((i, a.saturating_sub(c0), b.saturating_sub(a), a.saturating_sub(lo)));
                }
                c0 += c;
            }
            pieces.push(v);
        }
        let mut parts = Vec::new();
        let mut offsets = Vec::new();
        for combo in grid_indices(&pieces.iter().map(|v| vec![0; v.len()]).collect::<Vec<_>>()) {
            let sel: Vec<(usize, u64, u64, u64)> = combo.iter().enumerate().map(|(d, &k)| pieces[d][k]).collect();
            let gx: Vec<usize> = sel.iter().map(|p| p.0).collect();
            let xn = self.emit(x, &gx)?;
            let part_shape: Vec<u64> = sel.iter().map(|p| p.2).collect();
            let part = if self.shapes[xn as usize] == part_shape {
                xn
            } else {
                let start = sel.iter().map(|p| p.1).collect();
                self.push(Node::View { x: xn, start, step: vec![1; g.len()] }, part_shape, x.dtype())
            };
            parts.push(part);
            offsets.push(sel.iter().map(|p| p.3).collect());
        }
        if parts.len() == 1 {
            return Ok(parts[0]);
        }
        Ok(self.push(Node::Assemble { parts, offsets }, shape, t.dtype()))
    }

    /// A reshape that only inserts or removes dimensions of 1 reshapes chunk by chunk;
    /// otherwise `x` is chunked by rows and each output chunk (a run of rows, hence of
    /// the row-major order) is assembled from the runs of the input chunks it overlaps.
    fn emit_reshape(&mut self, t: &Tensor, g: &[usize], x: &Tensor) -> Result<u32> {
        let shape = chunk_shape(t, g);
        if squeeze_chunks(x, t.shape()).as_deref() == Some(t.chunks()) {
            let kept: Vec<usize> = (0..t.ndim()).filter(|&d| t.shape()[d] != 1).collect();
            let mut gx = vec![0; x.ndim()];
            for (k, d) in (0..x.ndim()).filter(|&d| x.shape()[d] != 1).enumerate() {
                gx[d] = g[kept[k]];
            }
            let xn = self.emit(x, &gx)?;
            return Ok(self.push(Node::Reshape { x: xn }, shape, t.dtype()));
        }
        if x.chunks().iter().skip(1).any(|c| c.len() > 1) || t.chunks().iter().skip(1).any(|c| c.len() > 1) {
            return Err(TensorError::UnknownShape { op: "reshape of a tensor split along more than rows".into() });
        }
        let row_out: u64 = t.shape().iter().skip(1).product();
        let row_in: u64 = x.shape().iter().skip(1).product();
        let off = chunk_offset(t, g);
        let (lo, hi) = match t.ndim() {
            0 => (0, 1),
            _ => (off[0] * row_out, (off[0] + shape[0]) * row_out),
        };
        let mut parts = Vec::new();
        let mut offsets = Vec::new();
        let mut c0 = 0u64;
        let x_rows = if x.ndim() == 0 { vec![1] } else { x.chunks()[0].clone() };
        for (i, &rows) in x_rows.iter().enumerate() {
            let (a, b) = (c0 * row_in, (c0 + rows) * row_in);
            c0 += rows;
            let (s, e) = (lo.max(a), hi.min(b));
            if s >= e {
                continue;
            }
            let mut gx = vec![0; x.ndim()];
            if let Some(first) = gx.first_mut() {
                *first = i;
            }
            let xn = self.emit(x, &gx)?;
            let flat = self.push(Node::Reshape { x: xn }, vec![b - a], x.dtype());
            let part = if (s, e) == (a, b) {
                flat
            } else {
                self.push(Node::View { x: flat, start: vec![s - a], step: vec![1] }, vec![e - s], x.dtype())
            };
            parts.push(part);
            offsets.push(vec![s - lo]);
        }
        let joined = match parts.len() {
            0 => self.push(Node::Const(Scalar::Bool(false)), vec![0], t.dtype()),
            1 => parts[0],
            _ => self.push(Node::Assemble { parts, offsets }, vec![hi - lo], x.dtype()),
        };
        Ok(self.push(Node::Reshape { x: joined }, shape, t.dtype()))
    }

    /// A dense operation on whole matrices.
    fn lin(&mut self, op: LinOp, args: &[u32], shape: Vec<u64>, dtype: DType) -> u32 {
        self.push(Node::Linalg { op, args: args.to_vec() }, shape, dtype)
    }

    /// Rows `lo..hi` of the matrix `x`.
    fn rows(&mut self, x: u32, lo: u64, hi: u64) -> u32 {
        let cols = self.shapes[x as usize][1];
        self.block(x, lo, hi, 0, cols)
    }

    /// Rows `r0..r1`, columns `c0..c1` of the matrix `x`.
    fn block(&mut self, x: u32, r0: u64, r1: u64, c0: u64, c1: u64) -> u32 {
        if self.shapes[x as usize] == [r1 - r0, c1 - c0] {
            return x;
        }
        let dtype = self.dtypes[x as usize];
        self.push(Node::View { x, start: vec![r0, c0], step: vec![1, 1] }, vec![r1 - r0, c1 - c0], dtype)
    }

    fn finish(self) -> (Program, Vec<usize>) {
        (Program { nodes: self.nodes, shapes: self.shapes, dtypes: self.dtypes }, self.inputs)
    }
}

/// The chunk holding position `pos` along a dimension, and where that chunk starts.
fn locate(chunks: &[u64], pos: u64) -> (usize, u64) {
    let mut lo = 0;
    for (i, &c) in chunks.iter().enumerate() {
        if pos < lo + c {
            return (i, lo);
        }
        lo += c;
    }
    (chunks.len().saturating_sub(1), lo - chunks.last().copied().unwrap_or(0))
}

/// Resolves unknown shapes under `t` (Mars' iterative tiling): each boolean mask is
/// computed on its own and its chunks' lengths read back, then the tensors built on it
/// derive their shapes and chunks again.
fn resolve(session: &Session, t: &Tensor, seen: &mut HashSet<usize>) -> Result<()> {
    if !seen.insert(key(t)) || cached(session, t).is_some() {
        return Ok(());
    }
    for x in t.operands() {
        resolve(session, x, seen)?;
    }
    if t.node.resolved.get().is_some() || !t.has_unknown_shape() {
        return Ok(());
    }
    // Built again on the resolved operands, with whatever rechunking that needs; tiling
    // uses the rebuilt node from now on.
    let r = t.rebuild()?;
    if !Arc::ptr_eq(&r.node, &t.node) {
        let _ = t.node.rebuilt.set(r.clone());
    }
    let (shape, chunks) = if let Op::Mask(..) = r.node.op {
        let refs = compute(session, &r)?;
        let mut lens = Vec::with_capacity(refs.len());
        for c in refs.iter() {
            let view = ares::get_view(c)?;
            lens.push(view.shape.first().map_or(0, |n| n.to_native()));
        }
        let known = (vec![lens.iter().sum()], vec![lens]);
        let _ = r.node.resolved.set(known.clone());
        known
    } else {
        if r.has_unknown_shape() {
            return Err(TensorError::UnknownShape { op: "resolving a shape".into() });
        }
        (r.shape().to_vec(), r.chunks().to_vec())
    };
    let _ = t.node.resolved.set((shape, chunks));
    Ok(())
}

/// Tiles and runs `t` (whose shapes are known), caching its chunks on it.
fn compute(session: &Session, t: &Tensor) -> Result<Arc<Vec<ObjectRef<Chunk>>>> {
    if let Some(r) = cached(session, t) {
        return Ok(r);
    }
    let mut plan = Plan::new(session);
    let srcs = plan.tile(t)?;
    // A target chunk read transposed is stored transposed.
    let depth = plan.depth(t) + 1;
    let mut targets = Vec::with_capacity(srcs.len());
    for (s, g) in srcs.iter().zip(grid_indices(t.chunks())) {
        targets.push(match s.t {
            false => s.op,
            true => plan.program(depth, 0, |b| Ok(b.input(*s, chunk_shape(t, &g), t.dtype())))?,
        });
    }
    let refs: Vec<ObjectRef<Chunk>> = plan.run(&targets)?.into_iter().map(|o| o.chunk().clone()).collect();
    let refs = Arc::new(refs);
    cache(session, t, refs.clone());
    Ok(refs)
}

/// Computes every chunk of `t` (cached on the tensor for this session); returns their
/// refs, row-major.
pub(crate) fn materialize(session: &Session, t: &Tensor) -> Result<Arc<Vec<ObjectRef<Chunk>>>> {
    resolve(session, t, &mut HashSet::new())?;
    compute(session, t)
}

impl Session {
    /// A session with the default settings (8 chunk tasks in flight, combine 4 at a time).
    pub fn new() -> Self {
        Self::default()
    }

    /// At most `n` chunk tasks submitted and not finished (memory is bounded by about
    /// `n` × the chunk size).
    pub fn max_in_flight(mut self, n: usize) -> Self {
        self.max_in_flight = n.max(1);
        self
    }

    /// Partials combined by one task of a tree reduction (at least 2).
    pub fn combine_size(mut self, n: usize) -> Self {
        self.combine_size = n.max(2);
        self
    }

    /// Calls `f` as chunk tasks finish (for a progress bar). A computation with boolean
    /// masks runs in several rounds, each reported from zero.
    pub fn on_progress(mut self, f: impl Fn(Progress) + Send + Sync + 'static) -> Self {
        self.progress = Some(Arc::new(f));
        self
    }

    /// This session (same results, same settings) watching `flag`: once it is set, a
    /// computation submits no further chunk task, waits for those in flight, frees its
    /// intermediates and fails with [`TensorError::Cancelled`] (Ctrl-C in Python).
    pub fn cancelled_by(&self, flag: Arc<std::sync::atomic::AtomicBool>) -> Session {
        Session { cancel: Some(flag), ..self.clone() }
    }

    /// How this session runs a chunk graph.
    fn settings(&self) -> ares_tileable::Settings {
        ares_tileable::Settings {
            max_in_flight: self.max_in_flight,
            progress: self.progress.clone(),
            cancel: self.cancel.clone(),
        }
    }

    /// Computes `t` and keeps its chunks (in the stores of the nodes that made them)
    /// until `t` is dropped. Intermediate chunks are freed as soon as their consumers
    /// have run.
    pub fn execute(&self, t: &Tensor) -> Result<()> {
        let refs = materialize(self, t)?;
        // Wait for every chunk, where it is; a failed chunk task is this call's error.
        for r in refs.iter() {
            ares::ready(r)?;
        }
        Ok(())
    }

    /// Computes `t` and returns the refs of its chunks, row-major (kept on `t` for this
    /// session): how another library (data frames) reads a tensor's chunks.
    pub fn chunk_refs(&self, t: &Tensor) -> Result<Vec<ObjectRef<Chunk>>> {
        Ok(materialize(self, t)?.as_ref().clone())
    }

    /// The program that makes each chunk of `t` (row-major) from nothing stored, when
    /// `t` is built only of creation and element-wise operations (random numbers,
    /// constants, ranges, arithmetic, casts, `where`) and was not computed in this
    /// session; `None` otherwise. Another library evaluates them in its own chunk tasks
    /// ([`Program::run`] with no inputs) instead of storing `t`'s chunks first: fusion
    /// across libraries, as a data frame made from random tensors is.
    pub fn chunk_programs(&self, t: &Tensor) -> Result<Option<Vec<Program>>> {
        fn standalone(s: &Session, t: &Tensor) -> bool {
            if cached(s, t).is_some() || t.has_unknown_shape() {
                return false;
            }
            match &t.node.op {
                Op::Full(_) | Op::Random { .. } | Op::Arange { .. } => true,
                Op::Unary(_, x) | Op::Cast(x) => standalone(s, x),
                Op::Binary(_, a, b) => standalone(s, a) && standalone(s, b),
                Op::Where(c, a, b) => standalone(s, c) && standalone(s, a) && standalone(s, b),
                _ => false,
            }
        }
        if !standalone(self, t) {
            return Ok(None);
        }
        let mut plan = Plan::new(self);
        let mut out = Vec::new();
        for g in grid_indices(t.chunks()) {
            let mut b = Builder::new(&mut plan);
            b.emit(t, &g)?;
            let (p, inputs) = b.finish();
            if !inputs.is_empty() {
                return Ok(None);
            }
            out.push(p);
        }
        Ok(Some(out))
    }

    /// Computes `t` and assembles it into one ndarray of `T`.
    pub fn fetch<T: Elem>(&self, t: &Tensor) -> Result<ArrayD<T>> {
        let refs = materialize(self, t)?;
        let shape: Vec<usize> = t.shape().iter().map(|&d| d as usize).collect();
        let mut out = ArrayD::<T>::from_elem(IxDyn(&shape), T::from_f64(0.0));
        for (g, r) in grid_indices(t.chunks()).iter().zip(refs.iter()) {
            let chunk = ares::get(r)?;
            let a = chunk.to_array::<T>();
            let mut view = out.view_mut();
            for (d, &i) in g.iter().enumerate() {
                let start: u64 = t.chunks()[d][..i].iter().sum();
                let len = t.chunks()[d][i];
                view.slice_axis_inplace(ndarray::Axis(d), ndarray::Slice::from(start as usize..(start + len) as usize));
            }
            let dim = view.raw_dim();
            view.assign(&a.into_shape_with_order(dim).expect("chunk shape matches its slot"));
        }
        Ok(out)
    }

    /// Computes `t` and, when its result is one chunk, returns a zero-copy view of that
    /// chunk as stored (it keeps the object alive while it lives); `None` for a result of
    /// several chunks, which [`Session::fetch`] assembles.
    pub fn view(&self, t: &Tensor) -> Result<Option<ares::View<Chunk>>> {
        let refs = materialize(self, t)?;
        match &refs[..] {
            [one] => Ok(Some(ares::get_view(one)?)),
            _ => Ok(None),
        }
    }

    /// Computes a 0-d (or single-element) tensor and returns its value as a float64.
    pub fn scalar(&self, t: &Tensor) -> Result<f64> {
        let a = self.fetch::<f64>(t)?;
        Ok(a.iter().next().copied().unwrap_or(f64::NAN))
    }
}

/// A 0-d tensor holding `s` (useful in `where_`).
pub fn scalar(s: Scalar) -> Tensor {
    Tensor::new(Op::Full(s), Vec::new(), s.dtype(), Vec::new())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::random;

    /// Tiling is pure: these plans are built without a cluster and never run.
    #[test]
    fn depth_first_order_combines_each_group_before_starting_the_next() {
        let s = Session::new();
        // 4 × 4 chunks summed along rows: each output chunk folds 4 input chunks.
        let t = random::rand(&[8, 8], &[2, 2], 1).unwrap().reduce(ReduceOp::Sum, Some(&[1]), false).unwrap();
        let mut plan = Plan::new(&s);
        plan.tile(&t).unwrap();
        let order = plan.graph.order();
        assert_eq!(order.len(), plan.graph.len(), "every operation is scheduled once");
        let kinds: Vec<char> = order
            .iter()
            .map(|&i| match plan.graph.task(i) {
                Some(Task::Reduce(..)) => 'r',
                Some(Task::Combine) => 'c',
                Some(Task::Finish(..)) => 'f',
                _ => '?',
            })
            .collect();
        // Each row's partials are combined and finished before the next row starts.
        assert_eq!(kinds.iter().collect::<String>(), "rrrrcf".repeat(4));
        // Inputs always come before their consumers.
        let pos: HashMap<usize, usize> = order.iter().enumerate().map(|(k, &i)| (i, k)).collect();
        for &i in &order {
            assert!(plan.graph.inputs(i).iter().all(|inp| pos[inp] < pos[&i]));
        }
    }

    #[test]
    fn initial_chunks_are_assigned_so_that_each_consumer_reads_one_node() {
        let s = Session::new();
        let t = random::rand(&[12, 8], &[2, 2], 1).unwrap().reduce(ReduceOp::Max, Some(&[1]), false).unwrap();
        let mut plan = Plan::new(&s);
        plan.tile(&t).unwrap();
        let order = plan.graph.order();
        let nodes: Vec<ares::NodeId> = (0..3u8).map(|k| ares::NodeId([k; 16])).collect();
        let placed = plan.graph.assign_initial(&order, &nodes);
        // 24 initial chunks on 3 nodes: 8 each.
        assert_eq!(placed.len(), 24);
        for node in &nodes {
            assert_eq!(placed.values().filter(|n| *n == node).count(), 8);
        }
        // Every combine reads partials of chunks placed on one node.
        for op in (0..plan.graph.len()).filter(|&i| matches!(plan.graph.task(i), Some(Task::Combine))) {
            let homes: HashSet<_> = plan.graph.inputs(op).iter().map(|i| placed[i]).collect();
            assert_eq!(homes.len(), 1, "a combine reads from {} nodes", homes.len());
        }
    }
}
