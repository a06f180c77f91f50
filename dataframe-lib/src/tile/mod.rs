//! Tiling: a frame expression into chunk tasks of the run's one graph ([`Cx`]). Pure
//! planning apart from reading the results a step waits for (a group-by's probe, a
//! sort's samples).
//!
//! A frame tiles into [`Chunks`]: chunk nodes, and the per-chunk steps of a map still to
//! apply to each (`pre`). A map is not a task of its own when its consumer can run it:
//! every task that reads frame chunks applies `pre` first, so a filter → assign chain
//! runs inside the group-by's first task, the shuffle's map side, a join's or a
//! conversion's task, and over a file source inside the reading task. Each operator
//! asks its input only for the columns it reads (`needed`), down to the readers.

mod group;
mod order;

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use ares_tensor::TensorError;
use ares_tileable::{Cx, Hints, Obj, TileResult, Tiling};

use crate::chunk::FrameChunk;
use crate::error::FrameError;
use crate::expr::Value;
use crate::frame::{CsvSource, DataFrame, Op, ParquetSource};
use crate::spec::{CsvTask, MapSpec, ParquetTask, Source};
use crate::tasks::FrameTask;

/// A tiling step's result.
pub(crate) type Tiled<T> = TileResult<T, FrameError>;

/// A frame tiled into chunk nodes (results `ObjectRef<FrameChunk>`), row order kept.
#[derive(Clone, Debug)]
pub(crate) struct Chunks {
    pub(crate) nodes: Vec<usize>,
    /// Per-chunk steps every reader applies first (a map fused into its consumers).
    pub(crate) pre: Option<MapSpec>,
    /// About how many bytes a chunk holds (for the store bound).
    pub(crate) bytes: u64,
    /// When each chunk's task only reads a file: those reads, which a consumer may do
    /// in its own tasks (see [`fused`]). The read tasks are then added lazily: submitted
    /// only if a consumer reads their results after all.
    pub(crate) sources: Option<Arc<Vec<Source>>>,
}

impl Chunks {
    /// About how many bytes all the chunks hold (0: unknown).
    pub(crate) fn total(&self) -> u64 {
        self.bytes.saturating_mul(self.nodes.len() as u64)
    }
}

/// Memo variants of a frame node beyond its chunks per set of needed columns.
pub(crate) const METHOD: u64 = u64::MAX;
const MATERIALIZED: u64 = 1 << 63;
pub(crate) const STATE: u64 = u64::MAX - 1;
/// A map's state while it waits for its lazy scalars: their chunk nodes.
const VALUES: u64 = u64::MAX - 2;

pub(crate) fn key(df: &DataFrame) -> usize {
    Arc::as_ptr(&df.node) as usize
}

/// The memo variant of tiling with `needed` columns (all: `None`).
fn variant(needed: Option<&[String]>) -> u64 {
    match needed {
        None => 0,
        Some(cols) => {
            let mut v: Vec<&String> = cols.iter().collect();
            v.sort();
            v.dedup();
            let mut h = DefaultHasher::new();
            v.hash(&mut h);
            // Never 0 (all columns) or the reserved variants.
            (h.finish() >> 2) | 1
        }
    }
}

pub(crate) fn runtime(e: ares::Error) -> Tiling<FrameError> {
    Tiling::Failed(FrameError::Runtime(e))
}

fn tensor<T>(r: TileResult<T, TensorError>) -> Tiled<T> {
    r.map_err(|e| e.map_err(FrameError::from))
}

/// Whether `df`'s tiling depends on the columns its consumer reads (sources read only
/// those; a map, a concat or a merge asks its inputs for them). Every other operator
/// reads what it reads whatever its consumer needs, and is tiled once.
fn column_dependent(df: &DataFrame) -> bool {
    matches!(
        df.node.op,
        Op::Tensors(_)
            | Op::Local(_)
            | Op::ReadCsv(_)
            | Op::ReadParquet(_)
            | Op::Map { .. }
            | Op::Concat(_)
            | Op::Join { .. }
            | Op::Sort { .. }
            | Op::Top { .. }
            | Op::Explode { .. }
    )
}

/// What an operator that passes its input's rows through (a sort, the top rows, an
/// explode) asks its input for: the columns its consumer reads and those it `uses`
/// itself, in the input's order (all when its consumer reads all). The second is the
/// selection of the consumer's columns its readers apply when it `uses` others, so its
/// chunks hold exactly what was asked of it (the parts of a concat must agree).
fn through(input: &DataFrame, needed: Option<&[String]>, uses: &[String]) -> (Option<Vec<String>>, Option<MapSpec>) {
    let Some(needed) = needed else { return (None, None) };
    let cols: Vec<String> = input.columns().into_iter().filter(|c| needed.contains(c) || uses.contains(c)).collect();
    let out: Vec<String> = cols.iter().filter(|c| needed.contains(c)).cloned().collect();
    let pre = (out.len() < cols.len()).then(|| MapSpec::select(out));
    (Some(cols), pre)
}

/// The memo slot of an operator's state between tiling steps, per set of columns its
/// consumer reads: distinct from every memo variant (those are 0, odd, or ≥ 2⁶³).
pub(crate) fn state_slot(needed: Option<&[String]>) -> u64 {
    match needed {
        None => STATE,
        Some(_) => variant(needed) << 1,
    }
}

/// Tiles `df` (only the `needed` columns from sources, all when `None`); memoized per
/// set of needed columns where that matters, and a tiling of every column serves any.
pub(crate) fn tile(cx: &mut Cx<'_>, df: &DataFrame, needed: Option<&[String]>) -> Tiled<Arc<Chunks>> {
    let v = if column_dependent(df) { variant(needed) } else { 0 };
    if let Some(c) = cx.memo::<Chunks>(key(df), v).or_else(|| cx.memo::<Chunks>(key(df), 0)) {
        return Ok(c);
    }
    let chunks = Arc::new(match df.node.computed.get(cx.session()) {
        Some(c) => {
            let nodes = c.chunks.iter().map(|r| cx.ready(Obj::new(r.clone()), 0)).collect();
            Chunks { sources: None, nodes, pre: None, bytes: 0 }
        }
        None => tile_new(cx, df, needed)?,
    });
    cx.retain(df.node.clone());
    cx.set_memo(key(df), v, chunks.clone(), &chunks.nodes);
    cx.finished(df);
    Ok(chunks)
}

/// `c` with its pending steps run as tasks of their own (for consumers that read each
/// chunk more than once); memoized as a variant of `df`'s.
pub(crate) fn materialize(cx: &mut Cx<'_>, df: &DataFrame, needed: Option<&[String]>, c: &Arc<Chunks>) -> Arc<Chunks> {
    let Some(pre) = &c.pre else { return c.clone() };
    // The tiling of every column may have served this set of columns: one map for both.
    let all = cx.memo::<Chunks>(key(df), 0).is_some_and(|m| Arc::ptr_eq(&m, c));
    let v = if all { 0 } else { variant(needed) } | MATERIALIZED;
    if let Some(m) = cx.memo::<Chunks>(key(df), v) {
        return m;
    }
    let depth = cx.depth(df);
    let nodes =
        c.nodes.iter().map(|&n| cx.add(FrameTask::Map(pre.clone()), vec![n], Hints::new(depth, c.bytes))).collect();
    let m = Arc::new(Chunks { sources: None, nodes, pre: None, bytes: c.bytes });
    cx.set_memo(key(df), v, m.clone(), &m.nodes);
    m
}

/// Bytes of distinct values an `isin` sends to each task at most.
const MAX_ISIN_SET: usize = 256 << 20;

/// `spec` with its lazy frames in place (scalars as constants, `isin` sets as their
/// values): the frames are tiled and run first (tiling waits for them here), then read.
fn resolve_values(cx: &mut Cx<'_>, df: &DataFrame, spec: &MapSpec, values: &[Value]) -> Tiled<MapSpec> {
    if values.is_empty() {
        return Ok(spec.clone());
    }
    let nodes = match cx.take_state::<Vec<Vec<usize>>>(key(df), VALUES) {
        Some(nodes) => nodes,
        None => {
            // A set's distinct values are found by the workers (in a tree or a shuffle),
            // so that only those come to the driver.
            let sets: Vec<usize> = spec
                .program
                .instrs
                .iter()
                .filter_map(|i| if let crate::expr::Instr::IsIn(_, k) = i { Some(*k as usize) } else { None })
                .collect();
            let mut nodes = Vec::with_capacity(values.len());
            for (k, v) in values.iter().enumerate() {
                let mut frame = DataFrame::of_value(v);
                if sets.contains(&k) {
                    frame = frame.drop_duplicates(&[frame.node.schema[0].0.as_str()]).map_err(Tiling::Failed)?;
                }
                nodes.push(tile_materialized(cx, &frame, None)?.nodes.clone());
            }
            // Held until their values are read below (tiling may wait for them first).
            nodes.iter().flatten().for_each(|&n| cx.graph_mut().hold(n));
            nodes
        }
    };
    let mut pending = false;
    for &n in nodes.iter().flatten() {
        match cx.value::<FrameError>(n) {
            Ok(_) => {}
            Err(Tiling::Pending) => pending = true,
            Err(e) => return Err(e),
        }
    }
    if pending {
        cx.put_state(key(df), VALUES, nodes);
        return Err(Tiling::Pending);
    }
    let mut frames = Vec::with_capacity(values.len());
    for (chunks, v) in nodes.iter().zip(values) {
        use polars::prelude::{IntoColumn, Series};
        let frame = DataFrame::of_value(v);
        let (name, dtype) = &frame.node.schema[0];
        let empty = Series::new_empty(name.into(), dtype).into_column();
        let mut all = polars::prelude::DataFrame::new(0, vec![empty]).map_err(FrameError::from)?;
        for &n in chunks {
            let obj = cx.value::<FrameError>(n)?;
            let chunk = ares::get(&obj.get::<FrameChunk>()).map_err(runtime)?;
            let part = crate::chunk::decode(&chunk.ipc).map_err(FrameError::from)?;
            // As the schema names and types it, whatever the chunk's file says.
            let col =
                part.columns().first().map(|c| crate::zone::cast(c, dtype)).transpose().map_err(FrameError::from)?;
            if let Some(c) = col {
                let c = c.with_name(name.into());
                all.vstack_mut(&polars::prelude::DataFrame::new(c.len(), vec![c]).map_err(FrameError::from)?)
                    .map_err(FrameError::from)?;
            }
            cx.graph_mut().release(n);
        }
        frames.push(all);
    }
    let dtypes: Vec<_> = values.iter().map(Value::dtype).collect();
    let optional: Vec<bool> = values.iter().map(|v| v.optional).collect();
    spec.with_values(&mut frames, &dtypes, &optional, MAX_ISIN_SET).map_err(Tiling::Failed)
}

/// Tiles `df` and runs whatever steps are still pending: chunk nodes holding its rows.
pub(crate) fn tile_materialized(cx: &mut Cx<'_>, df: &DataFrame, needed: Option<&[String]>) -> Tiled<Arc<Chunks>> {
    let c = tile(cx, df, needed)?;
    Ok(materialize(cx, df, needed, &c))
}

fn tile_new(cx: &mut Cx<'_>, df: &DataFrame, needed: Option<&[String]>) -> Tiled<Chunks> {
    let wanted = |name: &String| needed.is_none_or(|n| n.contains(name));
    let depth = cx.depth(df);
    Ok(match &df.node.op {
        Op::Tensors(cols) => {
            let cols: Vec<_> = cols.iter().filter(|(n, _)| wanted(n)).cloned().collect();
            tensor_columns(cx, &cols, None, depth)?
        }
        Op::Local(frames) => {
            let names: Vec<String> = df.columns().into_iter().filter(wanted).collect();
            let mut nodes = Vec::with_capacity(frames.len());
            let mut bytes = 0;
            for f in frames {
                let mut part = f.select(names.iter().map(|n| n.as_str())).map_err(FrameError::from)?;
                let chunk = FrameChunk::encode(&mut part).map_err(FrameError::from)?;
                bytes = bytes.max(chunk.ipc.len() as u64);
                let r = ares::put(chunk).map_err(runtime)?;
                nodes.push(cx.ready(Obj::new(r), chunk_bytes_hint(&part)));
            }
            Chunks { sources: None, nodes, pre: None, bytes }
        }
        Op::ReadCsv(src) => read_csv(cx, src, needed, None, depth),
        Op::ReadParquet(src) => read_parquet(cx, src, &df.columns(), needed, None, depth),
        Op::Map { input, spec, values } => {
            let resolved = resolve_values(cx, df, spec, values)?;
            // Pruned even when every output column is read: a fused map's earlier
            // selections may name columns no later step uses.
            let all = df.columns();
            let spec = &resolved.pruned(needed.unwrap_or(&all));
            let inner = spec.needed(needed.unwrap_or(&all));
            let fused_source = input.node.computed.get(cx.session()).is_none();
            match &input.node.op {
                // Read and mapped in one task: the filter runs in the reader.
                Op::ReadCsv(src) if fused_source => read_csv(cx, src, Some(&inner), Some(spec.clone()), depth),
                Op::ReadParquet(src) if fused_source => {
                    read_parquet(cx, src, &input.columns(), Some(&inner), Some(spec.clone()), depth)
                }
                // Made and mapped in one task.
                Op::Tensors(cols) if fused_source => {
                    let cols: Vec<_> = cols.iter().filter(|(n, _)| inner.contains(n)).cloned().collect();
                    tensor_columns(cx, &cols, Some(spec.clone()), depth)?
                }
                _ => {
                    let c = tile(cx, input, Some(&inner))?;
                    let c = materialize(cx, input, Some(&inner), &c);
                    Chunks { sources: None, nodes: c.nodes.clone(), pre: Some(spec.clone()), bytes: c.bytes }
                }
            }
        }
        Op::Concat(parts) => {
            let mut nodes = Vec::new();
            let mut bytes = 0;
            let mut pending = false;
            for part in parts {
                match tile_materialized(cx, part, needed) {
                    Ok(c) => {
                        nodes.extend(c.nodes.iter().copied());
                        bytes = bytes.max(c.bytes);
                    }
                    Err(Tiling::Pending) => pending = true,
                    Err(e) => return Err(e),
                }
            }
            if pending {
                return Err(Tiling::Pending);
            }
            Chunks { sources: None, nodes, pre: None, bytes }
        }
        Op::GroupBy { input, spec, method } => group::group_by(cx, df, input, spec, *method, depth)?,
        Op::GroupScan { input, spec } => group::scan(cx, input, spec, depth)?,
        Op::Top { input, spec } => group::top(cx, input, spec, needed, depth)?,
        Op::Unique { input, subset, method } => group::unique(cx, df, input, subset, *method, depth)?,
        Op::Explode { input, column } => {
            let (cols, pre) = through(input, needed, std::slice::from_ref(column));
            let c = tile(cx, input, cols.as_deref())?;
            let nodes = c
                .nodes
                .iter()
                .map(|&n| {
                    cx.add(FrameTask::Explode(column.clone(), c.pre.clone()), vec![n], Hints::new(depth, c.bytes))
                })
                .collect();
            Chunks { sources: None, nodes, pre, bytes: c.bytes }
        }
        Op::Join { left, right, spec } => group::join(cx, df, left, right, spec, needed, depth)?,
        Op::Sort { input, spec } => order::sort(cx, df, input, spec, needed, depth)?,
        Op::Describe { input, columns, percentiles } => order::describe(cx, df, input, columns, percentiles)?,
    })
}

/// About the bytes a chunk of `df`'s shape takes.
fn chunk_bytes_hint(df: &polars::prelude::DataFrame) -> u64 {
    df.estimated_size() as u64
}

/// Frame chunks made of 1-d tensors' chunks, `post` applied in the same tasks. Columns
/// made only of creation and element-wise operations (random numbers, ranges, arithmetic
/// on them) are computed inside the frame's own chunk tasks: their chunks are never
/// stored, then read and copied.
fn tensor_columns(
    cx: &mut Cx<'_>,
    cols: &[(String, ares_tensor::Tensor)],
    post: Option<MapSpec>,
    depth: u32,
) -> Tiled<Chunks> {
    let names: Vec<String> = cols.iter().map(|(n, _)| n.clone()).collect();
    let rows = cols.first().map_or(0, |(_, t)| t.chunks()[0].iter().copied().max().unwrap_or(0));
    let bytes = rows * 8 * cols.len() as u64;
    let mut programs = Vec::with_capacity(cols.len());
    for (_, t) in cols {
        match tensor(ares_tensor::chunk_programs(cx, t))? {
            Some(p) => programs.push(p),
            None => break,
        }
    }
    if programs.len() == cols.len() && !cols.is_empty() {
        let nodes = (0..programs[0].len())
            .map(|i| {
                let task = FrameTask::FromPrograms(
                    names.clone(),
                    programs.iter().map(|p| p[i].clone()).collect(),
                    post.clone(),
                );
                cx.add(task, Vec::new(), Hints::new(depth, bytes))
            })
            .collect();
        return Ok(Chunks { sources: None, nodes, pre: None, bytes });
    }
    let mut per_col = Vec::with_capacity(cols.len());
    let mut pending = false;
    for (_, t) in cols {
        match tensor(ares_tensor::tile_chunks(cx, t)) {
            Ok(n) => per_col.push(n),
            Err(Tiling::Pending) => pending = true,
            Err(e) => return Err(e),
        }
    }
    if pending {
        return Err(Tiling::Pending);
    }
    let n = per_col.first().map_or(0, Vec::len);
    let nodes = (0..n)
        .map(|i| {
            let inputs = per_col.iter().map(|c| c[i]).collect();
            cx.add(FrameTask::FromTensors(names.clone(), post.clone()), inputs, Hints::new(depth, bytes))
        })
        .collect();
    Ok(Chunks { sources: None, nodes, pre: None, bytes })
}

/// A CSV file's ranges, one task each: only the `needed` columns parsed (all when
/// `None`), and `pre` applied to the rows in the same task.
fn read_csv(cx: &mut Cx<'_>, src: &CsvSource, needed: Option<&[String]>, pre: Option<MapSpec>, depth: u32) -> Chunks {
    let projection: Vec<u32> = (0..src.schema.len() as u32)
        .filter(|&i| needed.is_none_or(|n| n.contains(&src.schema[i as usize].0)))
        .collect();
    let bytes = src.ranges.iter().map(|&(s, e)| e - s).max().unwrap_or(0);
    let mut sources = Vec::with_capacity(src.ranges.len());
    let nodes = src
        .ranges
        .iter()
        .map(|&range| {
            let t = CsvTask {
                path: src.path.clone(),
                range,
                separator: src.separator,
                schema: src.schema.clone(),
                projection: projection.clone(),
            };
            let src = Source::Csv(t, pre.clone());
            sources.push(src.clone());
            cx.add_lazy(FrameTask::Read(src), Vec::new(), Hints::new(depth, range.1 - range.0))
        })
        .collect();
    Chunks { sources: Some(Arc::new(sources)), nodes, pre: None, bytes }
}

/// A Parquet file's row groups, one task each: only the `needed` columns of `all` read
/// (every one when `None`), and `pre` applied to the rows in the same task.
fn read_parquet(
    cx: &mut Cx<'_>,
    src: &ParquetSource,
    all: &[String],
    needed: Option<&[String]>,
    pre: Option<MapSpec>,
    depth: u32,
) -> Chunks {
    let columns: Vec<String> = all.iter().filter(|c| needed.is_none_or(|n| n.contains(c))).cloned().collect();
    let per_row = 8 * columns.len().max(1) as u64;
    let bytes = src.groups.iter().map(|&(_, n)| n * per_row).max().unwrap_or(0);
    let kept = pre.as_ref().map(|m| crate::prune::row_groups(&src.path, src.groups.len(), m));
    let mut groups: Vec<(u64, u64)> =
        src.groups.iter().enumerate().filter(|(i, _)| kept.as_ref().is_none_or(|k| k[*i])).map(|(_, g)| *g).collect();
    if groups.is_empty() {
        // No group can hold a row the filter keeps: one still runs (and keeps none), so
        // that the frame has a chunk of its columns.
        groups.extend(src.groups.first().copied());
    }
    let mut sources = Vec::with_capacity(groups.len());
    let nodes = groups
        .iter()
        .map(|&rows| {
            let t = ParquetTask { path: src.path.clone(), rows, columns: columns.clone() };
            let src = Source::Parquet(t, pre.clone());
            sources.push(src.clone());
            cx.add_lazy(FrameTask::Read(src), Vec::new(), Hints::new(depth, rows.1 * per_row))
        })
        .collect();
    Chunks { sources: Some(Arc::new(sources)), nodes, pre: None, bytes }
}

/// Chunk `k` of `c` (tiled from `input`) as what `task` of `df` reads: its node, or,
/// when the chunk's task only reads a file and `task` can read it itself, nothing, with
/// `task` reading the file (its rows never stored). Only when `df` is `input`'s one
/// consumer and is tiled once: a second reader would read the file again.
pub(crate) fn fused(
    cx: &Cx<'_>,
    df: &DataFrame,
    input: &DataFrame,
    c: &Chunks,
    k: usize,
    task: FrameTask,
) -> (FrameTask, Vec<usize>) {
    // A frame tiled once per set of columns its consumers read may be tiled twice.
    let once = !column_dependent(df) || cx.readers(key(df)) <= 1;
    let src = c.sources.as_ref().filter(|_| once && cx.readers(key(input)) == 1).map(|s| &s[k]);
    match src {
        Some(src) if task.may_read_source() => (FrameTask::Sourced(src.clone(), Box::new(task)), Vec::new()),
        _ => (task, vec![c.nodes[k]]),
    }
}

/// The result of a finished task `i`, which tiling held while it waited.
pub(crate) fn take_value<T: ares::Value + 'static>(cx: &mut Cx<'_>, i: usize) -> Tiled<Option<T>> {
    match cx.value::<FrameError>(i) {
        Ok(obj) => {
            let v = ares::get(&obj.get::<T>()).map_err(runtime)?;
            cx.graph_mut().release(i);
            Ok(Some(v))
        }
        Err(Tiling::Pending) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Adds a task tiling waits for: held until [`take_value`] reads it.
pub(crate) fn probe(cx: &mut Cx<'_>, task: FrameTask, inputs: Vec<usize>, depth: u32) -> usize {
    let p = cx.add(task, inputs, Hints::new(depth, 64));
    cx.graph_mut().hold(p);
    p
}

impl ares_tileable::Node for DataFrame {
    fn key(&self) -> usize {
        key(self)
    }

    fn for_each_operand(&self, f: &mut dyn FnMut(&dyn ares_tileable::Node)) {
        match &self.node.op {
            Op::Tensors(cols) => cols.iter().for_each(|(_, t)| f(t)),
            _ => self.inputs().iter().for_each(|d| f(d)),
        }
    }

    fn computed(&self, session: &ares_tileable::Session) -> bool {
        self.node.computed.get(session).is_some()
    }

    /// A frame whose tiling depends on the columns its consumers read is tiled once per
    /// set of columns: its inputs stay held until every consumer has asked.
    fn transparent(&self) -> bool {
        column_dependent(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::col;
    use crate::spec::Method;

    /// Tiling is pure until a step waits for data: these graphs are built without a
    /// cluster and never run.
    fn kinds(cx: &Cx<'_>) -> Vec<String> {
        (0..cx.graph().len()).filter_map(|i| cx.graph().task(i).map(|t| t.name())).collect()
    }

    fn frame() -> DataFrame {
        let k = ares_tensor::random::randint(0, 10, &[4000], &[1000], 1).unwrap();
        let f = ares_tensor::random::rand(&[4000], &[1000], 2).unwrap();
        DataFrame::from_tensors(&[("k", &k), ("f", &f)]).unwrap()
    }

    #[test]
    fn a_filter_assign_group_by_top_chain_is_one_graph_with_the_map_fused_into_the_source() {
        let df = frame();
        let chain = df
            .filter(col("f").gt(0.5))
            .unwrap()
            .assign(&[("g", col("f") * 2.0)])
            .unwrap()
            .group_by(&["k"])
            .unwrap()
            .method(Method::Tree)
            .select(&["g"])
            .unwrap()
            .sum()
            .unwrap()
            .head(3);
        let s = ares_tileable::Session::new();
        let mut cx = Cx::new(&s);
        cx.prepare(&chain);
        let c = tile_materialized(&mut cx, &chain, None).unwrap();
        assert_eq!(c.nodes.len(), 1);
        let k = kinds(&cx);
        // Four chunks made with the filter and the assignment in the same task, their
        // partials, a combine, the finish and the top rows: one graph, no map task.
        assert_eq!(k.iter().filter(|n| *n == "frame from tensor programs").count(), 4, "{k:?}");
        assert_eq!(k.iter().filter(|n| n.starts_with("group-by partial")).count(), 4, "{k:?}");
        assert!(k.iter().any(|n| n == "group-by combine") && k.iter().any(|n| n == "group-by finish"), "{k:?}");
        assert!(k.iter().any(|n| n.starts_with("top rows")), "{k:?}");
        assert!(!k.iter().any(|n| n.starts_with("frame map")), "the map is fused: {k:?}");
        // Every input comes before its consumer, and the order covers the whole chain.
        assert_eq!(cx.graph().order().len(), k.len());
    }

    /// A Parquet file of four row groups: `k` (ten keys), `f`. Removed on drop.
    struct File(std::path::PathBuf);

    impl Drop for File {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    fn parquet(name: &str) -> File {
        use polars::prelude::{NamedFrom, ParquetWriter, Series};
        let path = std::env::temp_dir().join(format!("ares-tile-{name}-{}.parquet", std::process::id()));
        let k = Series::new("k".into(), (0..4000i64).map(|i| i % 10).collect::<Vec<_>>());
        let f = Series::new("f".into(), (0..4000).map(f64::from).collect::<Vec<_>>());
        let mut df = polars::prelude::DataFrame::new_infer_height(vec![k.into(), f.into()]).unwrap();
        let out = std::fs::File::create(&path).unwrap();
        ParquetWriter::new(out).with_row_group_size(Some(1000)).finish(&mut df).unwrap();
        File(path)
    }

    fn names_in_order(cx: &Cx<'_>) -> Vec<String> {
        cx.graph().order().iter().filter_map(|&i| cx.graph().task(i).map(|t| t.name())).collect()
    }

    #[test]
    fn a_file_with_one_consumer_is_read_inside_its_tasks_and_else_by_read_tasks() {
        let file = parquet("fused");
        let df = DataFrame::read_parquet(&file.0).unwrap();
        let sum =
            |df: &DataFrame| df.group_by(&["k"]).unwrap().method(Method::Tree).select(&["f"]).unwrap().sum().unwrap();
        let s = ares_tileable::Session::new();
        let one = sum(&df);
        let mut cx = Cx::new(&s);
        cx.prepare(&one);
        tile_materialized(&mut cx, &one, None).unwrap();
        let names = names_in_order(&cx);
        // The read tasks exist, lazily: nothing reads their results, so none runs.
        assert!(!names.iter().any(|n| n.starts_with("read_parquet")), "{names:?}");
        assert_eq!(names.iter().filter(|n| n.ends_with("reading a Parquet row group")).count(), 4, "{names:?}");

        // Two consumers of one frame: each row group is read once, by a task (the filter
        // in it), and both read its rows.
        let filtered = df.filter(col("f").gt(10.0)).unwrap();
        let two = sum(&filtered).merge(&sum(&filtered), &["k"], crate::spec::How::Inner).unwrap();
        let mut cx = Cx::new(&s);
        cx.prepare(&two);
        tile_materialized(&mut cx, &two, None).unwrap();
        let names = names_in_order(&cx);
        assert_eq!(names.iter().filter(|n| n.starts_with("read_parquet")).count(), 4, "{names:?}");
        assert!(!names.iter().any(|n| n.contains("reading a Parquet")), "{names:?}");
    }

    #[test]
    fn an_operator_read_for_different_columns_is_tiled_once() {
        let g = frame().group_by(&["k"]).unwrap().method(Method::Tree).select(&["f"]).unwrap().sum().unwrap();
        // The merge reads `g` whole on one side and only `k` (through a selection) on
        // the other.
        let root = g.select(&["k"]).unwrap().merge(&g, &["k"], crate::spec::How::Inner).unwrap();
        let s = ares_tileable::Session::new();
        let mut cx = Cx::new(&s);
        cx.prepare(&root);
        tile_materialized(&mut cx, &root, None).unwrap();
        let k = kinds(&cx);
        assert_eq!(k.iter().filter(|n| *n == "group-by finish").count(), 1, "{k:?}");
        assert_eq!(k.iter().filter(|n| *n == "frame from tensor programs").count(), 4, "{k:?}");
    }

    #[test]
    fn a_sort_after_a_group_by_waits_for_its_samples_inside_the_same_graph() {
        let df = frame();
        let chain = df
            .filter(col("f").gt(0.5))
            .unwrap()
            .group_by(&["k"])
            .unwrap()
            .method(Method::Shuffle)
            .select(&["f"])
            .unwrap()
            .sum()
            .unwrap()
            .sort_values(&["f"], &[false])
            .unwrap();
        let s = ares_tileable::Session::new();
        let mut cx = Cx::new(&s);
        cx.prepare(&chain);
        assert!(matches!(tile_materialized(&mut cx, &chain, None), Err(Tiling::Pending)));
        let k = kinds(&cx);
        let samples: Vec<usize> =
            (0..cx.graph().len()).filter(|&i| cx.graph().task(i).is_some_and(|t| t.name() == "sort sample")).collect();
        // The shuffle's partitions, each sampled; tiling waits for the samples. Two: the
        // data is small, and tiling alone counts one CPU (at least two per CPU).
        let finishes = k.iter().filter(|n| n.starts_with("group-by finish")).count();
        assert_eq!((samples.len(), finishes), (2, 2), "{k:?}");
        assert!(samples.iter().all(|&i| cx.waits_for(i)));
        assert_eq!(k.iter().filter(|n| n.starts_with("group-by shuffle map")).count(), 4, "{k:?}");
        assert!(!k.iter().any(|n| n.starts_with("frame map")), "the filter is fused: {k:?}");
        assert!(!k.iter().any(|n| n.starts_with("sort split")), "the split waits for the bounds: {k:?}");
    }
}
