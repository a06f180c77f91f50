//! Tiling of sorts, `unique`, `searchsorted` and gathers (`take`): a 1-d tensor in
//! several chunks goes through the engine's sample sort ([`ares_tileable::sample_sort`])
//! with the tensor library's sample, split and merge tasks; a lookup or a gather reads
//! every chunk it may need in place.

use ares_tileable::{Cx, Hints, SampleSort, Tiling};

use super::{Builder, Src, Tiled, chunk_nodes, chunk_offset, chunk_shape, fuse, key, program, tile};
use crate::data::{Chunk, DType, numel};
use crate::kernel::{Node, sort};
use crate::tasks::TensorTask;
use crate::tensor::{Tensor, TensorError, grid_indices};

/// State variants of a sample sort in the [`Cx`]: its samples, and its chunks' local sorts.
const SAMPLES: u64 = 10;
const LOCAL: u64 = 11;

/// A tensor sample sort: samples and bounds are 1-d chunks of the tensor's dtype.
struct TensorSort {
    dtype: DType,
    descending: bool,
    arg: bool,
    samples: u32,
    /// Each chunk's first position in the tensor (for an argsort's positions).
    offsets: Vec<i64>,
}

impl SampleSort for TensorSort {
    type Task = TensorTask;
    type Sample = Chunk;
    type Bounds = Chunk;
    type Error = TensorError;

    fn sample(&self) -> TensorTask {
        TensorTask::SortSample(self.samples)
    }

    fn bounds(&self, samples: Vec<Chunk>, chunks: usize) -> Result<(Chunk, usize), TensorError> {
        if samples.iter().all(|s| s.data.is_empty()) {
            return Ok((Chunk { shape: vec![0], data: crate::data::Buf::with_capacity(self.dtype, 0) }, 1));
        }
        // As many ranges as chunks, whatever the samples (bounds may repeat): the
        // result keeps the input's number of chunks.
        Ok((sort::bounds(&samples, self.dtype, chunks, self.descending), chunks))
    }

    fn split(&self, bounds: &Chunk, ranges: usize, chunk: usize) -> (TensorTask, u32) {
        let ranges = ranges as u32;
        let offset = self.arg.then(|| self.offsets[chunk]);
        let task = TensorTask::SortSplit { bounds: bounds.clone(), descending: self.descending, ranges, offset };
        (task, if self.arg { 2 * ranges } else { ranges })
    }

    fn merge(&self, range: usize, ranges: usize) -> TensorTask {
        let range = Some((range as u32, ranges as u32));
        TensorTask::SortMerge { dtype: self.dtype, descending: self.descending, arg: self.arg, range }
    }

    fn merge_all(&self) -> TensorTask {
        TensorTask::SortMerge { dtype: self.dtype, descending: self.descending, arg: self.arg, range: None }
    }
}

/// A 1-d tensor's sample sort: the engine's, on the tensor's stored chunks (each is
/// sampled and split unsorted; each range is sorted once, when its pieces meet).
pub(super) fn tile_sample_sort(
    cx: &mut Cx<'_>,
    t: &Tensor,
    x: &Tensor,
    descending: bool,
    arg: bool,
    depth: u32,
) -> Tiled<Vec<Src>> {
    let inputs = match cx.take_state::<Vec<Vec<usize>>>(key(t), LOCAL) {
        Some(v) => v,
        None => {
            let nodes = chunk_nodes(cx, x)?;
            // Held until the splits read them (tiling may wait for the samples first).
            nodes.iter().for_each(|&n| cx.graph_mut().hold(n));
            nodes.into_iter().map(|n| vec![n]).collect()
        }
    };
    let bytes = numel(x.shape()) as u64 * t.dtype().size() as u64;
    let chunks = inputs.len() as u32;
    let offsets = grid_indices(x.chunks()).iter().map(|g| chunk_offset(x, g)[0] as i64).collect();
    let s = TensorSort { dtype: x.dtype(), descending, arg, samples: (chunks * 32).clamp(256, 8192), offsets };
    match ares_tileable::sample_sort(cx, key(t), SAMPLES, &inputs, bytes, depth, &s) {
        Err(Tiling::Pending) => {
            cx.put_state(key(t), LOCAL, inputs);
            Err(Tiling::Pending)
        }
        Err(e) => Err(e),
        Ok(nodes) => {
            inputs.iter().flatten().for_each(|&n| cx.graph_mut().release(n));
            Ok(nodes.into_iter().map(|op| Src { op, t: false }).collect())
        }
    }
}

/// Each chunk of a sorted 1-d tensor's distinct elements (or counts): a program whose
/// root is a `Unique`, of a length known once it ran.
pub(super) fn tile_unique(
    cx: &mut Cx<'_>,
    t: &Tensor,
    x: &Tensor,
    counts: bool,
    equal_nan: bool,
    depth: u32,
) -> Tiled<Vec<Src>> {
    fuse::prepare(cx, &[x])?;
    let mut out = Vec::new();
    for g in grid_indices(x.chunks()) {
        let mut b = Builder::new(cx);
        let xn = b.emit(x, &g)?;
        b.push(Node::Unique { x: xn, counts, equal_nan }, chunk_shape(x, &g), t.dtype());
        let (p, inputs) = b.finish();
        let bytes = numel(&chunk_shape(x, &g)) as u64 * t.dtype().size() as u64;
        out.push(Src { op: cx.add(TensorTask::Map(p), inputs, Hints::new(depth, bytes)), t: false });
    }
    Ok(out)
}

/// One program per chunk of `v`, reading every chunk of the sorted `a` (stored once,
/// read in place) and counting by binary search.
pub(super) fn tile_search(
    cx: &mut Cx<'_>,
    t: &Tensor,
    a: &Tensor,
    v: &Tensor,
    right: bool,
    depth: u32,
) -> Tiled<Vec<Src>> {
    let sorted = tile(cx, a)?;
    fuse::prepare(cx, &[v])?;
    let mut out = Vec::new();
    for g in grid_indices(t.chunks()) {
        let shape = chunk_shape(t, &g);
        let op = program(cx, depth, 0, |b| {
            let mut parts = Vec::with_capacity(sorted.len());
            for (i, s) in sorted.iter().enumerate() {
                parts.push(b.input(*s, chunk_shape(a, &[i]), a.dtype()));
            }
            let vn = b.emit(v, &g)?;
            Ok(b.push(Node::Search { a: parts, v: vn, right }, shape.clone(), DType::I64))
        })?;
        out.push(Src { op, t: false });
    }
    Ok(out)
}

/// One program per result chunk, reading its positions and the source's chunks along the
/// axis (the lane the result chunk lies in, off the axis).
#[allow(clippy::too_many_arguments)]
pub(super) fn tile_take(
    cx: &mut Cx<'_>,
    t: &Tensor,
    x: &Tensor,
    idx: &Tensor,
    axis: usize,
    along: bool,
    depth: u32,
) -> Tiled<Vec<Src>> {
    let source = tile(cx, x)?;
    fuse::prepare(cx, &[idx])?;
    let k = idx.ndim();
    let mut out = Vec::new();
    for g in grid_indices(t.chunks()) {
        // The source's chunk coordinates off the axis, and the positions' chunk.
        let (off, gi): (Vec<usize>, Vec<usize>) = if along {
            (g.clone(), g.clone())
        } else {
            let mut off = g[..axis].to_vec();
            off.push(0);
            off.extend_from_slice(&g[axis + k..]);
            (off, g[axis..axis + k].to_vec())
        };
        let shape = chunk_shape(t, &g);
        let op = program(cx, depth, 0, |b| {
            let mut parts = Vec::with_capacity(x.chunks()[axis].len());
            for i in 0..x.chunks()[axis].len() {
                let mut gx = off.clone();
                gx[axis] = i;
                parts.push(b.input(source[super::flat_index(x, &gx)], chunk_shape(x, &gx), x.dtype()));
            }
            let idx_node = b.emit(idx, &gi)?;
            let node = Node::Take { parts, idx: idx_node, axis: axis as u32, along };
            Ok(b.push(node, shape.clone(), t.dtype()))
        })?;
        out.push(Src { op, t: false });
    }
    Ok(out)
}
