//! Tiling: a tensor expression into chunk tasks of the run's one graph ([`Cx`]). Pure
//! planning: nothing here submits, so plans are tested without a cluster.
//!
//! Element-wise chains, creation operations, slicing, rechunking, concatenation,
//! reshapes and a trailing reduction over a whole last axis are fused into one
//! [`Program`] per chunk ([`fuse`]); reductions become trees of partial results combined
//! `combine_size` at a time; matrix products and decompositions are blocked by chunks
//! ([`linalg`]). A boolean mask's lengths are known only once its chunks ran: tiling a
//! tensor built on one waits for them ([`Tiling::Pending`]), reads the lengths, builds the
//! tensor again on the known shapes and goes on, in the same graph (Mars' iterative
//! tiling).

mod fuse;
mod linalg;
mod sort;

use std::sync::Arc;

use ares::ObjectRef;
use ares_tileable::{Cx, Hints, Obj, TileResult, Tiling, Trees};

use crate::data::{Chunk, numel};
use crate::kernel::{BinOp, Node, Program, ReduceOp, ScanOp};
use crate::tasks::{ReduceSpec, TensorTask};
use crate::tensor::{Op, Tensor, TensorError, grid_indices};
pub(crate) use fuse::Builder;

/// A tiling step's result.
pub(crate) type Tiled<T> = TileResult<T, TensorError>;

/// A chunk of a tiled tensor: the node producing it, read transposed if `t`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Src {
    pub(crate) op: usize,
    pub(crate) t: bool,
}

/// Memo variants of a tensor node in the [`Cx`].
const CHUNKS: u64 = 0;
const TSQR: u64 = 1;
const RESOLVED: u64 = 2;

pub(crate) fn key(t: &Tensor) -> usize {
    Arc::as_ptr(&t.node) as usize
}

pub(crate) fn chunk_shape(t: &Tensor, g: &[usize]) -> Vec<u64> {
    t.chunks().iter().zip(g).map(|(c, &i)| c[i]).collect()
}

pub(crate) fn chunk_offset(t: &Tensor, g: &[usize]) -> Vec<u64> {
    t.chunks().iter().zip(g).map(|(c, &i)| c[..i].iter().sum()).collect()
}

pub(crate) fn flat_index(t: &Tensor, g: &[usize]) -> usize {
    let mut k = 0;
    for (d, &i) in g.iter().enumerate() {
        k = k * t.chunks()[d].len() + i;
    }
    k
}

/// Whether a reduction is computed inside its consumer's chunk program: over the last
/// axis only, with that axis in one chunk.
pub(crate) fn fusable_reduce(axes: &[usize], x: &Tensor) -> bool {
    x.ndim() > 0 && axes == [x.ndim() - 1] && x.chunks()[x.ndim() - 1].len() == 1
}

/// The chunks `cx`'s session computed for `t`, if it did.
pub(crate) fn cached(cx: &Cx<'_>, t: &Tensor) -> Option<Arc<Vec<ObjectRef<Chunk>>>> {
    t.node.result.get(cx.session())
}

fn runtime(e: ares::Error) -> Tiling<TensorError> {
    Tiling::Failed(TensorError::Runtime(e))
}

/// Ready nodes for chunks that exist already.
fn ready(cx: &mut Cx<'_>, t: &Tensor, refs: &[ObjectRef<Chunk>]) -> Vec<Src> {
    let grid = grid_indices(t.chunks());
    refs.iter()
        .zip(&grid)
        .map(|(r, g)| {
            let bytes = numel(&chunk_shape(t, g)) as u64 * t.dtype().size() as u64;
            Src { op: cx.ready(Obj::new(r.clone()), bytes), t: false }
        })
        .collect()
}

/// Tiles `t` into chunk nodes (once per run); returns its chunks, row-major.
pub(crate) fn tile(cx: &mut Cx<'_>, t: &Tensor) -> Tiled<Arc<Vec<Src>>> {
    if let Some(s) = cx.memo::<Vec<Src>>(key(t), CHUNKS) {
        return Ok(s);
    }
    let srcs = match cached(cx, t) {
        Some(refs) => Arc::new(ready(cx, t, &refs)),
        None => {
            resolve(cx, t)?;
            // Resolving a source tiles its chunks.
            if let Some(s) = cx.memo::<Vec<Src>>(key(t), CHUNKS) {
                cx.finished(t);
                return Ok(s);
            }
            match t.node.rebuilt.get() {
                Some(r) => {
                    let r = r.clone();
                    let s = tile(cx, &r)?;
                    // `t` holds them from now on: `r`, which no count saw, lets go.
                    memoize(cx, t, s.clone());
                    cx.forget(key(&r), CHUNKS);
                    cx.finished(t);
                    return Ok(s);
                }
                None => Arc::new(tile_new(cx, t)?),
            }
        }
    };
    memoize(cx, t, srcs.clone());
    cx.finished(t);
    Ok(srcs)
}

/// Records `t`'s chunks in the run's memo, `t` kept alive for the run.
fn memoize(cx: &mut Cx<'_>, t: &Tensor, srcs: Arc<Vec<Src>>) {
    let nodes: Vec<usize> = srcs.iter().map(|s| s.op).collect();
    cx.retain(t.node.clone());
    cx.set_memo(key(t), CHUNKS, srcs, &nodes);
}

/// Tiles each of `xs`, so that independent operands all get their tasks into the graph
/// before a step that waits returns [`Tiling::Pending`].
fn tile_all(cx: &mut Cx<'_>, xs: &[&Tensor]) -> Tiled<Vec<Arc<Vec<Src>>>> {
    let mut out = Vec::with_capacity(xs.len());
    let mut pending = false;
    for x in xs {
        match tile(cx, x) {
            Ok(s) => out.push(s),
            Err(Tiling::Pending) => pending = true,
            Err(e) => return Err(e),
        }
    }
    if pending { Err(Tiling::Pending) } else { Ok(out) }
}

/// Resolves `t`'s unknown shape (Mars' iterative tiling): its operands first; a mask's
/// chunks are tiled and their lengths read once they ran, then `t` is built again on
/// its resolved operands (with whatever rechunking that needs) and tiling uses that
/// node from now on.
fn resolve(cx: &mut Cx<'_>, t: &Tensor) -> Tiled<()> {
    if cx.memo::<()>(key(t), RESOLVED).is_some() || cached(cx, t).is_some() {
        return Ok(());
    }
    let mut pending = false;
    for x in t.operands() {
        match resolve(cx, x) {
            Ok(()) => {}
            Err(Tiling::Pending) => pending = true,
            Err(e) => return Err(e),
        }
    }
    if pending {
        return Err(Tiling::Pending);
    }
    if t.node.resolved.get().is_none() && t.has_unknown_shape() {
        let known = resolve_node(cx, t)?;
        let _ = t.node.resolved.set(known);
    }
    cx.retain(t.node.clone());
    cx.set_memo(key(t), RESOLVED, Arc::new(()), &[]);
    Ok(())
}

/// The shape and chunks of `t`, whose operands are resolved.
fn resolve_node(cx: &mut Cx<'_>, t: &Tensor) -> Tiled<(Vec<u64>, Vec<Vec<u64>>)> {
    let r = match t.node.rebuilt.get() {
        Some(r) => r.clone(),
        None => {
            let r = t.rebuild()?;
            if !Arc::ptr_eq(&r.node, &t.node) {
                let _ = t.node.rebuilt.set(r.clone());
            }
            r
        }
    };
    if let Op::Source(_) = &r.node.op {
        let lens = source_chunks(cx, &r)?;
        let mut shape = vec![lens.iter().sum()];
        shape.extend_from_slice(&r.node.shape[1..]);
        let mut chunks = vec![lens];
        chunks.extend(r.node.chunks[1..].iter().cloned());
        return Ok((shape, chunks));
    }
    if let Op::Mask(..) | Op::SampleSort { .. } | Op::Unique { .. } = r.node.op {
        let srcs = tile_new_memo(cx, &r)?;
        let mut outs = Vec::with_capacity(srcs.len());
        let mut pending = false;
        for s in srcs.iter() {
            match cx.value::<TensorError>(s.op) {
                Ok(o) => outs.push(o),
                Err(Tiling::Pending) => pending = true,
                Err(e) => return Err(e),
            }
        }
        if pending {
            return Err(Tiling::Pending);
        }
        let refs: Vec<ObjectRef<Chunk>> = outs.iter().map(|o| o.get::<Chunk>()).collect();
        let mut lens = Vec::with_capacity(refs.len());
        for c in &refs {
            let view = ares::get_view(c).map_err(runtime)?;
            lens.push(view.shape.first().map_or(0, |n| n.to_native()));
        }
        let known = (vec![lens.iter().sum()], vec![lens]);
        let _ = r.node.resolved.set(known.clone());
        // A mask's chunks are kept on it for the session: the next step needs them.
        r.node.result.set(cx.session(), Arc::new(refs));
        return Ok(known);
    }
    if r.has_unknown_shape() {
        return Err(TensorError::UnknownShape { op: "resolving a shape".into() }.into());
    }
    Ok((r.shape().to_vec(), r.chunks().to_vec()))
}

/// Tiles a [`Op::Source`] tensor's chunks (memoized); returns their lengths.
fn source_chunks(cx: &mut Cx<'_>, t: &Tensor) -> Tiled<Vec<u64>> {
    let Op::Source(src) = &t.node.op else { unreachable!("called on sources") };
    let parts = src.tile(cx)?;
    let srcs: Vec<Src> = parts.iter().map(|&(op, _)| Src { op, t: false }).collect();
    let nodes: Vec<usize> = srcs.iter().map(|s| s.op).collect();
    memoize(cx, t, Arc::new(srcs));
    // The memo holds them now; the source's holds go.
    nodes.iter().for_each(|&n| cx.graph_mut().release(n));
    Ok(parts.iter().map(|&(_, n)| n).collect())
}

/// Tiles `t` without looking at what it was rebuilt into, memoized (a mask being
/// resolved is tiled before its lengths are known).
fn tile_new_memo(cx: &mut Cx<'_>, t: &Tensor) -> Tiled<Arc<Vec<Src>>> {
    if let Some(s) = cx.memo::<Vec<Src>>(key(t), CHUNKS) {
        return Ok(s);
    }
    let srcs = Arc::new(tile_new(cx, t)?);
    memoize(cx, t, srcs.clone());
    Ok(srcs)
}

fn tile_new(cx: &mut Cx<'_>, t: &Tensor) -> Tiled<Vec<Src>> {
    let depth = cx.depth(t);
    match &t.node.op {
        Op::FromChunks(chunks) => {
            let refs = chunks.iter().map(ares::put_ref).collect::<ares::Result<Vec<_>>>().map_err(runtime)?;
            let refs = Arc::new(refs);
            t.node.result.set(cx.session(), refs.clone());
            Ok(ready(cx, t, &refs))
        }
        Op::Stored(refs) => {
            t.node.result.set(cx.session(), refs.clone());
            Ok(ready(cx, t, refs))
        }
        // Resolved in another session (the lengths are the same).
        Op::Source(_) => {
            source_chunks(cx, t)?;
            Ok(cx.memo::<Vec<Src>>(key(t), CHUNKS).expect("just tiled").as_ref().clone())
        }
        Op::Reduce { op, axes, keepdims, x } => tile_reduce(cx, t, *op, axes, *keepdims, x, depth),
        Op::MatMul(a, b) => linalg::tile_matmul(cx, t, a, b, depth),
        Op::Factor(x, f) => linalg::tile_factor(cx, t, x, *f, depth),
        Op::Solve(a, b) => linalg::tile_solve(cx, a, b, depth),
        Op::Scan { op, axis, x } => tile_scan(cx, t, *op, *axis, x, depth),
        Op::SampleSort { x, descending, arg } => sort::tile_sample_sort(cx, t, x, *descending, *arg, depth),
        Op::Unique { x, counts, equal_nan } => sort::tile_unique(cx, t, x, *counts, *equal_nan, depth),
        Op::Search { a, v, right } => sort::tile_search(cx, t, a, v, *right, depth),
        Op::Take { x, idx, axis, along } => sort::tile_take(cx, t, x, idx, *axis, *along, depth),
        Op::Mask(x, m) => {
            fuse::prepare(cx, &[x, m])?;
            let mut out = Vec::new();
            for g in grid_indices(x.chunks()) {
                let mut b = Builder::new(cx);
                let xn = b.emit(x, &g)?;
                let mn = b.emit(m, &g)?;
                let shape = chunk_shape(x, &g);
                b.push(Node::Compress { x: xn, m: mn }, shape, t.dtype());
                let (p, inputs) = b.finish();
                let bytes = p.shapes.last().map_or(0, |s| numel(s) as u64) * t.dtype().size() as u64;
                out.push(Src { op: cx.add(TensorTask::Map(p), inputs, Hints::new(depth, bytes)), t: false });
            }
            Ok(out)
        }
        _ => {
            fuse::prepare(cx, &[t])?;
            let mut out = Vec::new();
            for g in grid_indices(t.chunks()) {
                let mut b = Builder::new(cx);
                b.emit(t, &g)?;
                let (p, inputs) = b.finish();
                let bytes = numel(&chunk_shape(t, &g)) as u64 * t.dtype().size() as u64;
                out.push(Src { op: cx.add(TensorTask::Map(p), inputs, Hints::new(depth, bytes).exact()), t: false });
            }
            Ok(out)
        }
    }
}

/// A reduction as trees: one task per input chunk returns a partial, partials of the
/// same output chunk are combined `combine_size` at a time, and a final task turns the
/// partial into the output chunk.
fn tile_reduce(
    cx: &mut Cx<'_>,
    t: &Tensor,
    op: ReduceOp,
    axes: &[usize],
    keepdims: bool,
    x: &Tensor,
    depth: u32,
) -> Tiled<Vec<Src>> {
    // The lengths are known now: a mask's result that selected nothing has no minimum.
    let no_identity = matches!(op, ReduceOp::Min | ReduceOp::Max | ReduceOp::ArgMin | ReduceOp::ArgMax);
    if no_identity && axes.iter().any(|&a| x.shape()[a] == 0) {
        return Err(TensorError::EmptyReduction { op: format!("{op:?}") }.into());
    }
    fuse::prepare(cx, &[x])?;
    let all = axes.len() == x.ndim() && !op.is_arg();
    let out_grid = grid_indices(t.chunks());
    let mut trees = Trees::new(out_grid.len(), cx.session().settings().combine_size);
    for gx in grid_indices(x.chunks()) {
        let mut b = Builder::new(cx);
        b.emit(x, &gx)?;
        let (p, inputs) = b.finish();
        let spec = ReduceSpec {
            op,
            axes: if all { Vec::new() } else { axes.iter().map(|&a| a as u32).collect() },
            offset: chunk_offset(x, &gx),
        };
        let leaf = cx.add(TensorTask::Reduce(p, spec), inputs, Hints::new(depth, 0).exact());
        // The output chunk this input chunk folds into.
        let go: Vec<usize> =
            (0..x.ndim()).filter_map(|d| if axes.contains(&d) { keepdims.then_some(0) } else { Some(gx[d]) }).collect();
        trees.push(cx.graph_mut(), flat_index(t, &go), leaf, depth, combine_task);
    }
    let mut out = Vec::with_capacity(out_grid.len());
    for (k, go) in out_grid.iter().enumerate() {
        let shape = chunk_shape(t, go);
        let part = trees.root(cx.graph_mut(), k, depth, combine_task);
        let bytes = numel(&shape) as u64 * t.dtype().size() as u64;
        let fin =
            cx.add(TensorTask::Finish(x.dtype(), shape), vec![part], Hints::new(depth, bytes).level(u32::MAX).exact());
        out.push(Src { op: fin, t: false });
    }
    Ok(out)
}

/// A running operation along `axis`: every chunk is scanned in parallel from the carry
/// into it, and the carries are a chain of small tasks along each lane of chunks (the
/// previous carry combined with the previous chunk's total, the last element of its own
/// scan), as Dask's cumulative reductions.
fn tile_scan(cx: &mut Cx<'_>, t: &Tensor, op: ScanOp, axis: usize, x: &Tensor, depth: u32) -> Tiled<Vec<Src>> {
    fuse::prepare(cx, &[x])?;
    let dtype = t.dtype();
    let nd = t.ndim();
    let combine = match op {
        ScanOp::Sum => BinOp::Add,
        ScanOp::Prod => BinOp::Mul,
    };
    let grid = grid_indices(t.chunks());
    let mut out: Vec<Option<Src>> = vec![None; grid.len()];
    let along = t.chunks()[axis].len();
    for lane in grid.iter().filter(|g| g[axis] == 0) {
        // The carry into the chunk at hand: a node of the chunk's shape with `axis` 1.
        let mut carry: Option<usize> = None;
        for i in 0..along {
            let mut g = lane.clone();
            g[axis] = i;
            let shape = chunk_shape(t, &g);
            let mut edge = shape.clone();
            edge[axis] = 1;
            let into = carry;
            let scanned = program(cx, depth, 0, |b| {
                let xn = b.emit(x, &g)?;
                let seed = into.map(|c| b.input(Src { op: c, t: false }, edge.clone(), dtype));
                Ok(b.push(Node::Scan { op, axis: axis as u32, x: xn, seed }, shape.clone(), dtype))
            })?;
            out[flat_index(t, &g)] = Some(Src { op: scanned, t: false });
            if i + 1 == along || shape[axis] == 0 {
                continue;
            }
            let total = program(cx, depth, 0, |b| {
                let xn = b.emit(x, &g)?;
                let sc = b.push(Node::Scan { op, axis: axis as u32, x: xn, seed: None }, shape.clone(), dtype);
                let mut start = vec![0; nd];
                start[axis] = shape[axis] - 1;
                Ok(b.push(Node::View { x: sc, start, step: vec![1; nd] }, edge.clone(), dtype))
            })?;
            carry = Some(match into {
                None => total,
                Some(c) => program(cx, depth, 0, |b| {
                    let a = b.input(Src { op: c, t: false }, edge.clone(), dtype);
                    let tot = b.input(Src { op: total, t: false }, edge.clone(), dtype);
                    Ok(b.push(Node::Binary { op: combine, a, b: tot }, edge.clone(), dtype))
                })?,
            });
        }
    }
    Ok(out.into_iter().map(|s| s.expect("every chunk is on one lane")).collect())
}

fn combine_task() -> Box<dyn ares_tileable::Task> {
    Box::new(TensorTask::Combine)
}

/// One chunk task whose program `build` writes (its last node is the result).
pub(crate) fn program(
    cx: &mut Cx<'_>,
    depth: u32,
    level: u32,
    build: impl FnOnce(&mut Builder<'_, '_>) -> Tiled<u32>,
) -> Tiled<usize> {
    let mut b = Builder::new(cx);
    build(&mut b)?;
    let (p, inputs) = b.finish();
    let bytes = p.shapes.last().map_or(0, |s| numel(s) as u64) * p.dtypes.last().map_or(8, |d| d.size() as u64);
    Ok(cx.add(TensorTask::Map(p), inputs, Hints::new(depth, bytes).level(level).exact()))
}

/// `t`'s chunk nodes, row-major, each as stored (a chunk read transposed gets a task
/// that stores it so).
pub(crate) fn chunk_nodes(cx: &mut Cx<'_>, t: &Tensor) -> Tiled<Vec<usize>> {
    let srcs = tile(cx, t)?;
    let depth = cx.depth(t) + 1;
    let mut nodes = Vec::with_capacity(srcs.len());
    for (s, g) in srcs.iter().zip(grid_indices(t.chunks())) {
        nodes.push(match s.t {
            false => s.op,
            true => program(cx, depth, 0, |b| Ok(b.input(*s, chunk_shape(t, &g), t.dtype())))?,
        });
    }
    Ok(nodes)
}

/// The program that makes each chunk of `t` (row-major) from nothing stored, when `t` is
/// built only of creation and element-wise operations and was not computed in `cx`'s
/// session; `None` otherwise.
pub(crate) fn standalone_programs(cx: &mut Cx<'_>, t: &Tensor) -> Tiled<Option<Vec<Program>>> {
    fn standalone(cx: &Cx<'_>, t: &Tensor) -> bool {
        if cached(cx, t).is_some() || t.has_unknown_shape() {
            return false;
        }
        match &t.node.op {
            Op::Full(_) | Op::Random { .. } | Op::Arange { .. } => true,
            Op::Unary(_, x) | Op::Cast(x) => standalone(cx, x),
            Op::Binary(_, a, b) => standalone(cx, a) && standalone(cx, b),
            Op::Where(c, a, b) => standalone(cx, c) && standalone(cx, a) && standalone(cx, b),
            _ => false,
        }
    }
    if !standalone(cx, t) {
        return Ok(None);
    }
    let mut out = Vec::new();
    for g in grid_indices(t.chunks()) {
        let mut b = Builder::new(cx);
        b.emit(t, &g)?;
        let (p, inputs) = b.finish();
        if !inputs.is_empty() {
            return Ok(None);
        }
        out.push(p);
    }
    Ok(Some(out))
}

/// Memo of a TSQR's stages, shared by the factors of one tensor.
pub(crate) fn tsqr_memo(cx: &Cx<'_>, x: &Tensor) -> Option<Arc<linalg::Tsqr>> {
    cx.memo::<linalg::Tsqr>(key(x), TSQR)
}

pub(crate) fn set_tsqr_memo(cx: &mut Cx<'_>, x: &Tensor, st: linalg::Tsqr) {
    let nodes = st.nodes();
    cx.retain(x.node.clone());
    cx.set_memo(key(x), TSQR, Arc::new(st), &nodes);
}

impl ares_tileable::Node for Tensor {
    fn key(&self) -> usize {
        key(self)
    }

    fn for_each_operand(&self, f: &mut dyn FnMut(&dyn ares_tileable::Node)) {
        if let Op::Source(src) = &self.node.op {
            f(src.operand());
        }
        for x in self.operands() {
            f(x);
        }
    }

    fn computed(&self, session: &ares_tileable::Session) -> bool {
        self.node.result.get(session).is_some()
    }

    fn transparent(&self) -> bool {
        match &self.node.op {
            Op::FromChunks(_)
            | Op::Stored(_)
            | Op::Source(_)
            | Op::MatMul(..)
            | Op::Mask(..)
            | Op::Factor(..)
            | Op::Solve(..)
            | Op::Scan { .. }
            | Op::SampleSort { .. }
            | Op::Unique { .. }
            | Op::Search { .. }
            | Op::Take { .. } => false,
            Op::Reduce { axes, x, .. } => fusable_reduce(axes, x),
            _ => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{HashMap, HashSet};

    use super::*;
    use crate::random;

    fn kind(cx: &Cx<'_>, i: usize) -> char {
        let Some(t) = cx.graph().task(i) else { return '?' };
        let name = t.name();
        if name.contains("reduction") {
            'r'
        } else if name.contains("combine") {
            'c'
        } else if name.contains("finish") {
            'f'
        } else {
            '?'
        }
    }

    /// Tiling is pure: these plans are built without a cluster and never run.
    #[test]
    fn depth_first_order_combines_each_group_before_starting_the_next() {
        let s = ares_tileable::Session::new();
        // 4 × 4 chunks summed along rows: each output chunk folds 4 input chunks.
        let t = random::rand(&[8, 8], &[2, 2], 1).unwrap().reduce(ReduceOp::Sum, Some(&[1]), false).unwrap();
        let mut cx = Cx::new(&s);
        cx.prepare(&t);
        tile(&mut cx, &t).unwrap();
        let order = cx.graph().order();
        assert_eq!(order.len(), cx.graph().len(), "every operation is scheduled once");
        let kinds: String = order.iter().map(|&i| kind(&cx, i)).collect();
        // Each row's partials are combined and finished before the next row starts.
        assert_eq!(kinds, "rrrrcf".repeat(4));
        // Inputs always come before their consumers.
        let pos: HashMap<usize, usize> = order.iter().enumerate().map(|(k, &i)| (i, k)).collect();
        for &i in &order {
            assert!(cx.graph().inputs(i).iter().all(|inp| pos[inp] < pos[&i]));
        }
    }

    #[test]
    fn initial_chunks_are_assigned_so_that_each_consumer_reads_one_node() {
        let s = ares_tileable::Session::new();
        let t = random::rand(&[12, 8], &[2, 2], 1).unwrap().reduce(ReduceOp::Max, Some(&[1]), false).unwrap();
        let mut cx = Cx::new(&s);
        tile(&mut cx, &t).unwrap();
        let order = cx.graph().order();
        let nodes: Vec<ares::NodeId> = (0..3u8).map(|k| ares::NodeId([k; 16])).collect();
        let placed = cx.graph().assign_initial(&order, &nodes, &mut 0);
        // 24 initial chunks on 3 nodes: 8 each.
        assert_eq!(placed.len(), 24);
        for node in &nodes {
            assert_eq!(placed.values().filter(|n| *n == node).count(), 8);
        }
        // Every combine reads partials of chunks placed on one node.
        for op in (0..cx.graph().len()).filter(|&i| kind(&cx, i) == 'c') {
            let homes: HashSet<_> = cx.graph().inputs(op).iter().map(|i| placed[i]).collect();
            assert_eq!(homes.len(), 1, "a combine reads from {} nodes", homes.len());
        }
    }
}
