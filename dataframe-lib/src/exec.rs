//! Running frames: the chunk tasks (remote functions around `kernels`), tiling each
//! operation into an `ares_tileable::Graph`, and the `Session` that runs and fetches.
//!
//! Each operation is run once its input's chunks exist (one graph per operation): a
//! group-by's method and a sort's partition bounds are chosen from what the input's
//! first chunks hold, as Mars' iterative tiling does.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use ares::{InPlace, InPlaceList, ObjectRef};
use ares_tensor::{Chunk, ChunkRef};
use ares_tileable::{Graph, Output, Settings, Trees};

use crate::chunk::{FrameChunk, decode, decode_archived};
use crate::describe::{Picked, Sketch};
use crate::error::{FrameError, Result};
use crate::frame::{Computed, CsvSource, DataFrame, Op, ParquetSource};
use crate::spec::{CsvTask, GroupSpec, How, JoinSpec, MapSpec, Method, ParquetTask, SortSpec, TopSpec};
use crate::{describe, kernels, relational};

/// Partials combined by one task of a group-by tree.
const COMBINE: usize = 4;
/// Rows sampled per chunk to choose a sort's partition bounds.
const SAMPLE_ROWS: u32 = 256;
/// A group-by (or a drop_duplicates) shuffles when the first chunk has more groups
/// (distinct rows) than this share of its rows: a tree would then carry nearly every row
/// up to one task.
const SHUFFLE_GROUPS_PER_ROW: f64 = 0.125;

/// polars runs each kernel on one thread: parallelism comes from running many chunk
/// tasks at once, one per worker, as the tensor kernels do.
fn one_thread() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: runs before polars first reads its settings (its thread pool is made
        // on first use), in a worker whose other threads do not read the environment.
        unsafe { std::env::set_var("POLARS_MAX_THREADS", "1") };
    });
    ares_tileable::keep_freed_memory();
}

/// Referenced by [`crate::link_kernels`]: every kernel of this module is registered in
/// the same object file as `map_chunk`.
pub(crate) fn link() {
    std::hint::black_box(map_chunk as for<'a> fn(MapSpec, InPlace<'a, FrameChunk>) -> FrameChunk);
}

/// A chunk task's input, mapped where it lies in the store (see `chunk::map_archived`).
fn read(c: &InPlace<'_, FrameChunk>) -> polars::prelude::DataFrame {
    read_columns(c, None)
}

/// Only `columns` of a chunk task's input (all when `None`), mapped where it lies.
fn read_columns(c: &InPlace<'_, FrameChunk>, columns: Option<&[String]>) -> polars::prelude::DataFrame {
    // SAFETY: every frame made from the input lives in the task's body, which ends before
    // the pinned input is released; results are encoded into new bytes before that.
    unsafe { crate::chunk::map_archived(c, columns) }
        .unwrap_or_else(|e| ares::fail(format!("reading a frame chunk: {e}")))
}

fn write(mut df: polars::prelude::DataFrame) -> FrameChunk {
    FrameChunk::encode(&mut df).unwrap_or_else(|e| ares::fail(format!("writing a frame chunk: {e}")))
}

fn or_fail<T>(r: polars::prelude::PolarsResult<T>) -> T {
    r.unwrap_or_else(|e| ares::fail(e.to_string()))
}

#[ares::remote]
fn from_tensor_chunks(names: Vec<String>, cols: InPlaceList<'_, Chunk>) -> FrameChunk {
    one_thread();
    let refs: Vec<ChunkRef<'_>> = cols.iter().map(|c| ChunkRef::Archived(c)).collect();
    write(or_fail(kernels::from_tensor_chunks(&names, &refs)))
}

/// A frame chunk of tensor chunks computed here from their programs (the tensors' chunks
/// are never stored: see `ares_tensor::Session::chunk_programs`).
#[ares::remote]
fn from_tensor_programs(names: Vec<String>, programs: Vec<ares_tensor::kernel::Program>) -> FrameChunk {
    one_thread();
    let chunks = programs.iter().map(|p| p.run(&[]).unwrap_or_else(|e| ares::fail(e.to_string()))).collect();
    write(or_fail(kernels::from_owned_chunks(&names, chunks)))
}

/// `df` with a fused map applied when there is one.
fn mapped(pre: &Option<MapSpec>, df: polars::prelude::DataFrame) -> polars::prelude::DataFrame {
    match pre {
        Some(m) => or_fail(crate::eval::map(m, df)),
        None => df,
    }
}

/// A chunk read, with a fused map applied first when there is one.
fn read_mapped(pre: &Option<MapSpec>, c: &InPlace<'_, FrameChunk>) -> polars::prelude::DataFrame {
    mapped(pre, read(c))
}

#[ares::remote]
fn map_chunk(spec: MapSpec, input: InPlace<'_, FrameChunk>) -> FrameChunk {
    one_thread();
    write(or_fail(crate::eval::map(&spec, read(&input))))
}

#[ares::remote]
fn gb_partial(spec: GroupSpec, pre: Option<MapSpec>, input: InPlace<'_, FrameChunk>) -> FrameChunk {
    one_thread();
    write(or_fail(kernels::partial(&spec, &read_mapped(&pre, &input))))
}

/// `[rows, groups]` of a chunk: what the `auto` method is chosen from.
#[ares::remote]
fn gb_probe(spec: GroupSpec, pre: Option<MapSpec>, input: InPlace<'_, FrameChunk>) -> Vec<u64> {
    one_thread();
    let df = read_mapped(&pre, &input);
    vec![df.height() as u64, or_fail(kernels::partial(&spec, &df)).height() as u64]
}

#[ares::remote]
fn gb_partial_split(
    spec: GroupSpec,
    pre: Option<MapSpec>,
    parts: u32,
    input: InPlace<'_, FrameChunk>,
) -> Vec<FrameChunk> {
    one_thread();
    let p = or_fail(kernels::partial(&spec, &read_mapped(&pre, &input)));
    or_fail(kernels::hash_split(&spec.keys, &p, parts as usize)).into_iter().map(write).collect()
}

#[ares::remote]
fn top_rows(spec: TopSpec, parts: InPlaceList<'_, FrameChunk>) -> FrameChunk {
    one_thread();
    write(or_fail(relational::top(&spec, parts.iter().map(read).collect())))
}

#[ares::remote]
fn unique_rows(subset: Vec<String>, parts: InPlaceList<'_, FrameChunk>) -> FrameChunk {
    one_thread();
    write(or_fail(relational::unique(&subset, parts.iter().map(read).collect())))
}

/// `[rows, distinct rows]` of a chunk.
#[ares::remote]
fn unique_probe(subset: Vec<String>, input: InPlace<'_, FrameChunk>) -> Vec<u64> {
    one_thread();
    let df = read(&input);
    vec![df.height() as u64, or_fail(relational::unique(&subset, vec![df])).height() as u64]
}

/// A chunk's rows split by the hash of `keys`, duplicates of `keys` dropped first when
/// `dedup`.
#[ares::remote]
fn key_split(keys: Vec<String>, parts: u32, dedup: bool, input: InPlace<'_, FrameChunk>) -> Vec<FrameChunk> {
    one_thread();
    let mut df = read(&input);
    if dedup {
        df = or_fail(relational::unique(&keys, vec![df]));
    }
    or_fail(kernels::hash_split(&keys, &df, parts as usize)).into_iter().map(write).collect()
}

/// One byte range of a CSV file, only the projected columns parsed, and a fused map
/// applied to its rows.
#[ares::remote]
fn csv_read(t: CsvTask, pre: Option<MapSpec>) -> FrameChunk {
    one_thread();
    write(mapped(&pre, or_fail(crate::csv::read_range(&t.path, t.range, true, t.separator, &t.schema, &t.projection))))
}

/// One row group of a Parquet file, only the named columns read, and a fused map applied
/// to its rows.
#[ares::remote]
fn parquet_read(t: ParquetTask, pre: Option<MapSpec>) -> FrameChunk {
    one_thread();
    write(mapped(&pre, or_fail(crate::parquet::read_rows(&t.path, t.rows.0, t.rows.1, &t.columns))))
}

/// A chunk's rows as CSV text (its header line too when `header`).
#[ares::remote]
fn csv_format(header: bool, separator: u8, input: InPlace<'_, FrameChunk>) -> Vec<u8> {
    one_thread();
    or_fail(crate::csv::write(&mut read(&input), header, separator))
}

#[ares::remote]
fn join_rows(spec: JoinSpec, left: InPlaceList<'_, FrameChunk>, right: InPlaceList<'_, FrameChunk>) -> FrameChunk {
    one_thread();
    write(or_fail(relational::join(&spec, left.iter().map(read).collect(), right.iter().map(read).collect())))
}

#[ares::remote]
fn gb_combine(spec: GroupSpec, parts: InPlaceList<'_, FrameChunk>) -> FrameChunk {
    one_thread();
    write(or_fail(kernels::combine(&spec, parts.iter().map(read).collect())))
}

#[ares::remote]
fn gb_finish(spec: GroupSpec, sort: bool, parts: InPlaceList<'_, FrameChunk>) -> FrameChunk {
    one_thread();
    let combined = or_fail(kernels::combine(&spec, parts.iter().map(read).collect()));
    write(or_fail(kernels::finish(&spec, &combined, sort)))
}

#[ares::remote]
fn sort_sample(spec: SortSpec, n: u32, input: InPlace<'_, FrameChunk>) -> FrameChunk {
    one_thread();
    write(or_fail(kernels::sample(&spec, &read_columns(&input, Some(&spec.by[..1])), n as usize)))
}

#[ares::remote]
fn sort_split(spec: SortSpec, bounds: FrameChunk, input: InPlace<'_, FrameChunk>) -> Vec<FrameChunk> {
    one_thread();
    let b = or_fail(decode(&bounds.ipc));
    or_fail(kernels::range_split(&spec, &read(&input), &b)).into_iter().map(write).collect()
}

#[ares::remote]
fn sort_merge(spec: SortSpec, pieces: InPlaceList<'_, FrameChunk>) -> FrameChunk {
    one_thread();
    write(or_fail(kernels::sort_range(&spec, pieces.iter().map(read).collect())))
}

/// Each column's sketch of a chunk (`describe`'s first pass).
#[ares::remote]
fn describe_sketch(columns: Vec<String>, points: u32, input: InPlace<'_, FrameChunk>) -> Vec<Sketch> {
    one_thread();
    let df = read_columns(&input, Some(&columns));
    columns
        .iter()
        .map(|c| describe::sketch(&describe::sorted_values(or_fail(describe::floats(&df, c)).into_iter()), points))
        .collect()
}

/// What a chunk holds of each column's brackets (`describe`'s second pass).
#[ares::remote]
fn describe_pick(brackets: Vec<(String, Vec<(f64, f64)>)>, input: InPlace<'_, FrameChunk>) -> Vec<Vec<Picked>> {
    one_thread();
    let names: Vec<String> = brackets.iter().map(|(c, _)| c.clone()).collect();
    let df = read_columns(&input, Some(&names));
    brackets
        .iter()
        .map(|(c, bs)| {
            let v = or_fail(describe::floats(&df, c));
            let v: Vec<f64> = v.into_iter().flatten().collect();
            bs.iter().map(|&(lo, hi)| describe::pick(&v, lo, hi)).collect()
        })
        .collect()
}

/// A chunk's columns as a tensor chunk.
#[ares::remote]
fn to_tensor_chunk(
    columns: Vec<String>,
    dtype: ares_tensor::DType,
    flat: bool,
    input: InPlace<'_, FrameChunk>,
) -> Chunk {
    one_thread();
    or_fail(kernels::to_tensor_chunk(&read(&input), &columns, dtype, flat))
}

/// A chunk task's result.
#[derive(Clone)]
enum Out {
    Tensor(ObjectRef<Chunk>),
    Bytes(ObjectRef<Vec<u8>>),
    Frame(ObjectRef<FrameChunk>),
    /// One result per partition (a task with several return values).
    Parts(Vec<ObjectRef<FrameChunk>>),
    Sketches(ObjectRef<Vec<Sketch>>),
    Picked(ObjectRef<Vec<Vec<Picked>>>),
}

impl Output for Out {
    fn wait(&self) {
        match self {
            Out::Tensor(r) => Output::wait(r),
            Out::Bytes(r) => Output::wait(r),
            Out::Frame(r) => Output::wait(r),
            Out::Parts(v) => v.iter().for_each(Output::wait),
            Out::Sketches(r) => Output::wait(r),
            Out::Picked(r) => Output::wait(r),
        }
    }
}

impl Out {
    fn frame(&self) -> ObjectRef<FrameChunk> {
        match self {
            Out::Frame(r) => r.clone(),
            _ => unreachable!("a frame task reads frame chunks"),
        }
    }
    fn part(&self, p: usize) -> ObjectRef<FrameChunk> {
        match self {
            Out::Parts(v) => v[p].clone(),
            _ => unreachable!("a reducer reads partitions"),
        }
    }
}

/// One chunk task of a frame operation.
enum Task {
    FromTensors(Vec<String>),
    /// Columns computed in the task from their tensor chunks' programs.
    FromPrograms(Vec<String>, Vec<ares_tensor::kernel::Program>),
    Map(MapSpec),
    Partial(GroupSpec, Option<MapSpec>),
    PartialSplit(GroupSpec, Option<MapSpec>, u32),
    Combine(GroupSpec),
    /// Combines (the partition `pick` of, for a shuffle) its inputs and finishes.
    Finish(GroupSpec, Option<usize>),
    Sample(SortSpec),
    Split(SortSpec, FrameChunk, u32),
    Merge(SortSpec, usize),
    /// Sorts the rows of all its inputs (a sort of one range).
    MergeAll(SortSpec),
    Top(TopSpec),
    /// Distinct rows of all its inputs (partition `pick` of each, for a shuffle).
    Unique(Vec<String>, Option<usize>),
    /// Rows split by key hash: keys, partitions, duplicates dropped first.
    KeySplit(Vec<String>, u32, bool),
    /// Joins its first `n` inputs (left) with the rest (partition `pick` of each, for a
    /// shuffle).
    Join(JoinSpec, usize, Option<usize>),
    CsvRead(CsvTask, Option<MapSpec>),
    ParquetRead(ParquetTask, Option<MapSpec>),
    /// CSV text of a chunk: header line, separator.
    CsvFormat(bool, u8),
    /// Columns, sample points per chunk.
    DescribeSketch(Vec<String>, u32),
    /// Columns, dtype, one column flat.
    ToTensor(Vec<String>, ares_tensor::DType, bool),
    /// Brackets per column.
    DescribePick(Vec<(String, Vec<(f64, f64)>)>),
}

fn submit(task: Task, ins: Vec<Out>, o: ares::TaskOptions) -> Out {
    let frames = || ins.iter().map(Out::frame).collect::<Vec<_>>();
    match task {
        Task::FromTensors(names) => {
            let cols: Vec<ObjectRef<Chunk>> = ins
                .iter()
                .map(|i| match i {
                    Out::Tensor(r) => r.clone(),
                    _ => unreachable!("columns are tensor chunks"),
                })
                .collect();
            Out::Frame(ares::remote(from_tensor_chunks).options(o).call(names, cols))
        }
        Task::FromPrograms(names, programs) => {
            Out::Frame(ares::remote(from_tensor_programs).options(o).call(names, programs))
        }
        Task::Map(spec) => Out::Frame(ares::remote(map_chunk).options(o).call(spec, ins[0].frame())),
        Task::Partial(spec, pre) => Out::Frame(ares::remote(gb_partial).options(o).call(spec, pre, ins[0].frame())),
        Task::PartialSplit(spec, pre, parts) => Out::Parts(
            ares::remote(gb_partial_split).options(o).num_returns(parts).call(spec, pre, parts, ins[0].frame()),
        ),
        Task::Top(spec) => Out::Frame(ares::remote(top_rows).options(o).call(spec, frames())),
        Task::CsvRead(t, pre) => Out::Frame(ares::remote(csv_read).options(o).call(t, pre)),
        Task::ParquetRead(t, pre) => Out::Frame(ares::remote(parquet_read).options(o).call(t, pre)),
        Task::CsvFormat(header, sep) => {
            Out::Bytes(ares::remote(csv_format).options(o).call(header, sep, ins[0].frame()))
        }
        Task::Unique(subset, None) => Out::Frame(ares::remote(unique_rows).options(o).call(subset, frames())),
        Task::Unique(subset, Some(p)) => {
            let parts = ins.iter().map(|i| i.part(p)).collect::<Vec<_>>();
            Out::Frame(ares::remote(unique_rows).options(o).call(subset, parts))
        }
        Task::KeySplit(keys, parts, dedup) => {
            Out::Parts(ares::remote(key_split).options(o).num_returns(parts).call(keys, parts, dedup, ins[0].frame()))
        }
        Task::Join(spec, n, pick) => {
            let side = |v: &[Out]| match pick {
                Some(p) => v.iter().map(|i| i.part(p)).collect::<Vec<_>>(),
                None => v.iter().map(Out::frame).collect(),
            };
            let (l, r) = (side(&ins[..n]), side(&ins[n..]));
            Out::Frame(ares::remote(join_rows).options(o).call(spec, l, r))
        }
        Task::Combine(spec) => Out::Frame(ares::remote(gb_combine).options(o).call(spec, frames())),
        Task::Finish(spec, None) => Out::Frame(ares::remote(gb_finish).options(o).call(spec, true, frames())),
        Task::Finish(spec, Some(p)) => {
            let parts = ins.iter().map(|i| i.part(p)).collect::<Vec<_>>();
            Out::Frame(ares::remote(gb_finish).options(o).call(spec, false, parts))
        }
        Task::ToTensor(cols, dtype, flat) => {
            Out::Tensor(ares::remote(to_tensor_chunk).options(o).call(cols, dtype, flat, ins[0].frame()))
        }
        Task::DescribeSketch(cols, points) => {
            Out::Sketches(ares::remote(describe_sketch).options(o).call(cols, points, ins[0].frame()))
        }
        Task::DescribePick(brackets) => {
            Out::Picked(ares::remote(describe_pick).options(o).call(brackets, ins[0].frame()))
        }
        Task::Sample(spec) => Out::Frame(ares::remote(sort_sample).options(o).call(spec, SAMPLE_ROWS, ins[0].frame())),
        Task::Split(spec, bounds, parts) => {
            Out::Parts(ares::remote(sort_split).options(o).num_returns(parts).call(spec, bounds, ins[0].frame()))
        }
        Task::MergeAll(spec) => Out::Frame(ares::remote(sort_merge).options(o).call(spec, frames())),
        Task::Merge(spec, p) => {
            let parts = ins.iter().map(|i| i.part(p)).collect::<Vec<_>>();
            Out::Frame(ares::remote(sort_merge).options(o).call(spec, parts))
        }
    }
}

/// Where frames are computed. Chunks computed in one session are kept on the frame
/// while it lives (freed with it), and not seen by another session. A clone is the same
/// session (it sees the same computed chunks), with its own settings.
#[derive(Clone)]
pub struct Session {
    tensors: ares_tensor::Session,
    settings: Settings,
    id: u64,
}

type Chunks = Arc<Vec<ObjectRef<FrameChunk>>>;

impl Default for Session {
    fn default() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Session {
            tensors: ares_tensor::Session::new(),
            settings: Settings::default(),
            id: NEXT.fetch_add(1, Ordering::Relaxed),
        }
    }
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").field("max_in_flight", &self.settings.max_in_flight).finish_non_exhaustive()
    }
}

impl Session {
    /// A session with the default settings (8 chunk tasks in flight).
    pub fn new() -> Self {
        Self::default()
    }

    /// At most `n` chunk tasks submitted and not finished.
    pub fn max_in_flight(mut self, n: usize) -> Self {
        self.settings.max_in_flight = n.max(1);
        self.tensors = self.tensors.clone().max_in_flight(n);
        self
    }

    /// The same session, stopping between chunk tasks once `flag` is set (an operation
    /// then fails with [`FrameError::Cancelled`]; its objects are freed).
    pub fn cancelled_by(&self, flag: Arc<std::sync::atomic::AtomicBool>) -> Session {
        let mut s = self.clone();
        s.tensors = s.tensors.cancelled_by(flag.clone());
        s.settings.cancel = Some(flag);
        s
    }

    /// The same session, calling `f` as chunk tasks finish.
    pub fn on_progress(&self, f: impl Fn(ares_tileable::Progress) + Send + Sync + 'static) -> Session {
        let mut s = self.clone();
        s.settings.progress = Some(Arc::new(f));
        s
    }

    /// The number of rows of `df` (computing it first if needed).
    pub fn rows(&self, df: &DataFrame) -> Result<u64> {
        let mut n = 0;
        for r in self.chunks(df)?.iter() {
            n += ares::get_view(r)?.rows.to_native();
        }
        Ok(n)
    }

    /// The rows of `df` if it was computed in this session, without computing anything.
    pub fn rows_if_computed(&self, df: &DataFrame) -> Result<Option<u64>> {
        if self.cached(df).is_none() {
            return Ok(None);
        }
        self.rows(df).map(Some)
    }

    /// Computes `df`, keeping its chunks in the store while `df` lives.
    pub fn execute(&self, df: &DataFrame) -> Result<()> {
        self.chunks(df).map(|_| ())
    }

    /// Computes `df` and assembles it into one polars frame in this process.
    pub fn fetch(&self, df: &DataFrame) -> Result<polars::prelude::DataFrame> {
        let refs = self.chunks(df)?;
        let mut frames = Vec::with_capacity(refs.len());
        for r in refs.iter() {
            frames.push(decode_archived(&*ares::get_view(r)?)?);
        }
        let mut out = kernels::concat(frames)?;
        // A shuffled group-by's partitions each hold sorted keys; pandas sorts them all.
        if let (Op::GroupBy { spec, .. }, true) = (&df.node.op, refs.len() > 1) {
            out = out.sort(spec.keys.iter().map(|k| k.as_str()), Default::default())?;
        }
        Ok(out)
    }

    /// The method a group-by, drop_duplicates or merge frame was computed with (after
    /// `execute`), as Mars records its `auto` choice in the plan.
    pub fn group_by_method(&self, df: &DataFrame) -> Option<Method> {
        self.cached(df).and_then(|c| c.method)
    }

    /// The refs of `df`'s chunks, computing them first (and its inputs) if needed. They
    /// are kept on `df` for this session; inputs computed on the way are not kept (their
    /// chunks are freed once `df`'s are made), unless they were executed themselves.
    ///
    /// They are ready when this returns. If a chunk task failed, the error is returned
    /// and nothing is kept: running `df` again recomputes it.
    pub fn chunks(&self, df: &DataFrame) -> Result<Chunks> {
        let chunks = self.compute(df, true)?;
        if let Err(e) = chunks.iter().try_for_each(ares::ready) {
            df.node.computed.lock().unwrap_or_else(|p| p.into_inner()).remove(&self.id);
            return Err(e.into());
        }
        Ok(chunks)
    }

    fn compute(&self, df: &DataFrame, keep: bool) -> Result<Chunks> {
        self.compute_columns(df, keep, None)
    }

    /// `compute`, reading only the columns `needed` (all when `None`) from a frame made
    /// from tensors or a local frame: the columns nobody reads are never made into chunks
    /// (column pruning into the readers).
    fn compute_columns(&self, df: &DataFrame, keep: bool, needed: Option<&[String]>) -> Result<Chunks> {
        if let Some(c) = self.cached(df) {
            return Ok(c.chunks);
        }
        let wanted = |name: &String| needed.is_none_or(|n| n.contains(name));
        let mut used_method = None;
        let out = match &df.node.op {
            Op::Tensors(cols) => {
                let cols: Vec<_> = cols.iter().filter(|(n, _)| wanted(n)).cloned().collect();
                self.tensor_columns(&cols)?
            }
            Op::Local(frames) => {
                let mut refs = Vec::with_capacity(frames.len());
                let names: Vec<String> = df.columns().into_iter().filter(wanted).collect();
                for f in frames {
                    refs.push(ares::put(FrameChunk::encode(&mut f.select(names.iter().map(|n| n.as_str()))?)?)?);
                }
                refs
            }
            Op::GroupBy { input, spec, method } => {
                let mut needed: Vec<String> = spec.keys.clone();
                needed.extend(spec.aggs.iter().map(|(c, _)| c.clone()));
                let (inputs, pre) = self.fused(input, &needed)?;
                let (refs, used) = self.group_by(&inputs, spec, pre, *method)?;
                used_method = Some(used);
                refs
            }
            Op::Sort { input, spec } => {
                let inputs = self.compute(input, false)?;
                self.sort(&inputs, spec)?
            }
            Op::Map { input, spec } => {
                let needed = spec.needed(&df.columns());
                // Read and mapped in one task: the filter runs in the reader.
                match self.read_file(input, Some(&needed), Some(spec.clone())) {
                    Some(read) => read?,
                    None => {
                        let inputs = self.compute_columns(input, false, Some(&needed))?;
                        self.map_chunks(&inputs, spec)?
                    }
                }
            }
            Op::ReadCsv(_) | Op::ReadParquet(_) => {
                self.read_file(df, needed, None).expect("a file source not computed yet")?
            }
            Op::Top { input, spec } => {
                let inputs = self.compute(input, false)?;
                self.top(&inputs, spec)?
            }
            Op::Unique { input, subset, method } => {
                let inputs = self.compute(input, false)?;
                let (refs, used) = self.unique(&inputs, subset, *method)?;
                used_method = Some(used);
                refs
            }
            Op::Join { left, right, spec } => {
                let (l, r) = (self.compute(left, false)?, self.compute(right, false)?);
                let (refs, used) = self.join(&l, &r, spec)?;
                used_method = Some(used);
                refs
            }
            Op::Concat(parts) => {
                let mut refs = Vec::new();
                for part in parts {
                    refs.extend(self.compute_columns(part, false, needed)?.iter().cloned());
                }
                refs
            }
            Op::Describe { input, columns, percentiles } => {
                let inputs = self.compute_columns(input, false, Some(columns))?;
                let mut out = self.describe(&inputs, columns, percentiles)?;
                vec![ares::put(FrameChunk::encode(&mut out)?)?]
            }
        };
        let chunks = Arc::new(out);
        if keep {
            let computed = Computed { chunks: chunks.clone(), method: used_method };
            df.node.computed.lock().unwrap_or_else(|p| p.into_inner()).insert(self.id, computed);
        }
        Ok(chunks)
    }

    fn cached(&self, df: &DataFrame) -> Option<Computed> {
        df.node.computed.lock().unwrap_or_else(|p| p.into_inner()).get(&self.id).cloned()
    }

    fn run(&self, g: &mut Graph<Task, Out>, targets: &[usize]) -> Result<Vec<Out>> {
        g.run(targets, &self.settings, || FrameError::Cancelled, submit)
    }

    fn frames(outs: Vec<Out>) -> Vec<ObjectRef<FrameChunk>> {
        outs.iter().map(Out::frame).collect()
    }

    fn tensor_columns(&self, cols: &[(String, ares_tensor::Tensor)]) -> Result<Vec<ObjectRef<FrameChunk>>> {
        let names: Vec<String> = cols.iter().map(|(n, _)| n.clone()).collect();
        // Columns made only of creation and element-wise operations (random numbers,
        // ranges, arithmetic on them) are computed inside the frame's own chunk tasks:
        // their chunks are never stored, then read and copied.
        let mut programs = Vec::with_capacity(cols.len());
        for (_, t) in cols {
            match self.tensors.chunk_programs(t)? {
                Some(p) => programs.push(p),
                None => break,
            }
        }
        if programs.len() == cols.len() && !cols.is_empty() {
            let mut g = Graph::new();
            let targets: Vec<usize> = (0..programs[0].len())
                .map(|i| {
                    let task = Task::FromPrograms(names.clone(), programs.iter().map(|p| p[i].clone()).collect());
                    g.add(task, Vec::new(), 1, 0, 0)
                })
                .collect();
            return Ok(Self::frames(self.run(&mut g, &targets)?));
        }
        let per_col: Vec<Vec<ObjectRef<Chunk>>> =
            cols.iter().map(|(_, t)| self.tensors.chunk_refs(t)).collect::<std::result::Result<_, _>>()?;
        let mut g = Graph::new();
        let targets: Vec<usize> = (0..per_col[0].len())
            .map(|i| {
                let inputs = per_col.iter().map(|c| g.ready(Out::Tensor(c[i].clone()))).collect();
                g.add(Task::FromTensors(names.clone()), inputs, 1, 0, 0)
            })
            .collect();
        Ok(Self::frames(self.run(&mut g, &targets)?))
    }

    fn group_by(
        &self,
        inputs: &[ObjectRef<FrameChunk>],
        spec: &GroupSpec,
        pre: Option<MapSpec>,
        method: Method,
    ) -> Result<(Vec<ObjectRef<FrameChunk>>, Method)> {
        // One chunk has nothing to shuffle (and a task of one return value could not
        // split its list: see `RemoteFn::num_returns`); no keys make one group.
        let method = match method {
            _ if inputs.len() < 2 || spec.keys.is_empty() => Method::Tree,
            Method::Auto | Method::Broadcast => self.choose(inputs, spec, &pre)?,
            m => m,
        };
        let mut g = Graph::new();
        let ready: Vec<usize> = inputs.iter().map(|r| g.ready(Out::Frame(r.clone()))).collect();
        let targets = match method {
            Method::Shuffle => {
                let parts = inputs.len() as u32;
                let maps: Vec<usize> = ready
                    .iter()
                    .map(|&r| g.add(Task::PartialSplit(spec.clone(), pre.clone(), parts), vec![r], 1, 0, 0))
                    .collect();
                (0..parts as usize).map(|p| g.add(Task::Finish(spec.clone(), Some(p)), maps.clone(), 1, 1, 0)).collect()
            }
            _ => {
                let mut trees = Trees::new(1, COMBINE);
                for &r in &ready {
                    let leaf = g.add(Task::Partial(spec.clone(), pre.clone()), vec![r], 1, 0, 0);
                    trees.push(&mut g, 0, leaf, 1, || Task::Combine(spec.clone()));
                }
                let root = trees.root(&mut g, 0, 1, || Task::Combine(spec.clone()));
                vec![g.add(Task::Finish(spec.clone(), None), vec![root], 1, u32::MAX, 0)]
            }
        };
        Ok((Self::frames(self.run(&mut g, &targets)?), method))
    }

    /// Mars' `auto`: a tree when the first chunk's partial has few groups for its rows.
    fn choose(&self, inputs: &[ObjectRef<FrameChunk>], spec: &GroupSpec, pre: &Option<MapSpec>) -> Result<Method> {
        Self::by_share(ares::get(&ares::remote(gb_probe).call(spec.clone(), pre.clone(), &inputs[0]))?)
    }

    /// A shuffle when `[rows, groups]` has many groups for its rows, else a tree.
    fn by_share(counts: Vec<u64>) -> Result<Method> {
        let (rows, groups) = (counts.first().copied().unwrap_or(0).max(1), counts.get(1).copied().unwrap_or(0));
        Ok(if groups as f64 > SHUFFLE_GROUPS_PER_ROW * rows as f64 { Method::Shuffle } else { Method::Tree })
    }

    /// The chunks an operation reads from `input` (only the `needed` columns from a
    /// reader), and the map to apply to them first when `input` is a map not computed
    /// yet: fused into the operation's first task instead of a task of its own.
    fn fused(&self, input: &DataFrame, needed: &[String]) -> Result<(Chunks, Option<MapSpec>)> {
        if let (Op::Map { input: inner, spec }, None) = (&input.node.op, self.cached(input)) {
            let inner_needed = spec.needed(needed);
            if let Some(read) = self.read_file(inner, Some(&inner_needed), Some(spec.clone())) {
                return Ok((Arc::new(read?), None));
            }
            let chunks = self.compute_columns(inner, false, Some(&inner_needed))?;
            return Ok((chunks, Some(spec.clone())));
        }
        Ok((self.compute_columns(input, false, Some(needed))?, None))
    }

    /// The chunks of a file source not computed yet in this session (`None` for any
    /// other frame): only the `needed` columns read, and `pre` applied in the same tasks.
    fn read_file(
        &self,
        df: &DataFrame,
        needed: Option<&[String]>,
        pre: Option<MapSpec>,
    ) -> Option<Result<Vec<ObjectRef<FrameChunk>>>> {
        if self.cached(df).is_some() {
            return None;
        }
        match &df.node.op {
            Op::ReadCsv(src) => Some(self.read_csv(src, needed, pre)),
            Op::ReadParquet(src) => Some(self.read_parquet(src, &df.columns(), needed, pre)),
            _ => None,
        }
    }

    /// A CSV file's ranges, one task each: only the `needed` columns parsed (all when
    /// `None`), and `pre` applied to the rows in the same task.
    fn read_csv(
        &self,
        src: &CsvSource,
        needed: Option<&[String]>,
        pre: Option<MapSpec>,
    ) -> Result<Vec<ObjectRef<FrameChunk>>> {
        let projection: Vec<u32> = (0..src.schema.len() as u32)
            .filter(|&i| needed.is_none_or(|n| n.contains(&src.schema[i as usize].0)))
            .collect();
        let mut g = Graph::new();
        let targets: Vec<usize> = src
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
                g.add(Task::CsvRead(t, pre.clone()), Vec::new(), 1, 0, 0)
            })
            .collect();
        Ok(Self::frames(self.run(&mut g, &targets)?))
    }

    /// A Parquet file's row groups, one task each: only the `needed` columns of `all`
    /// read (every one when `None`), and `pre` applied to the rows in the same task.
    fn read_parquet(
        &self,
        src: &ParquetSource,
        all: &[String],
        needed: Option<&[String]>,
        pre: Option<MapSpec>,
    ) -> Result<Vec<ObjectRef<FrameChunk>>> {
        let columns: Vec<String> = all.iter().filter(|c| needed.is_none_or(|n| n.contains(c))).cloned().collect();
        let mut g = Graph::new();
        let targets: Vec<usize> = src
            .groups
            .iter()
            .map(|&rows| {
                let t = ParquetTask { path: src.path.clone(), rows, columns: columns.clone() };
                g.add(Task::ParquetRead(t, pre.clone()), Vec::new(), 1, 0, 0)
            })
            .collect();
        Ok(Self::frames(self.run(&mut g, &targets)?))
    }

    /// Writes `df` to `path` as one Parquet file, a row group per chunk (polars' default
    /// compression), decoding the chunks in this process one at a time.
    pub fn to_parquet(&self, df: &DataFrame, path: impl AsRef<std::path::Path>) -> Result<()> {
        use polars::prelude::{ParquetWriter, Schema};
        let path = path.as_ref();
        let io = |e: std::io::Error| FrameError::Io { path: path.to_string_lossy().to_string(), source: e };
        let chunks = self.compute(df, false)?;
        let file = std::fs::File::create(path).map_err(io)?;
        let schema: Schema =
            df.node.schema.iter().map(|(n, d)| polars::prelude::Field::new(n.as_str().into(), d.clone())).collect();
        let mut w = ParquetWriter::new(file).batched(&schema)?;
        for r in chunks.iter() {
            w.write_batch(&decode_archived(&*ares::get_view(r)?)?)?;
        }
        w.finish()?;
        Ok(())
    }

    /// Writes `df` to `path` as one CSV file with a header line (pandas'
    /// `to_csv(index=False)`): each chunk's text is made by a task, and this process
    /// appends them in order.
    pub fn to_csv(&self, df: &DataFrame, path: impl AsRef<std::path::Path>, separator: u8) -> Result<()> {
        use std::io::Write;
        let path = path.as_ref();
        let io = |e: std::io::Error| FrameError::Io { path: path.to_string_lossy().to_string(), source: e };
        let chunks = self.compute(df, false)?;
        let mut g = Graph::new();
        let targets: Vec<usize> = chunks
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let input = g.ready(Out::Frame(r.clone()));
                g.add(Task::CsvFormat(i == 0, separator), vec![input], 1, 0, 0)
            })
            .collect();
        let texts = self.run(&mut g, &targets)?;
        let mut f = std::io::BufWriter::new(std::fs::File::create(path).map_err(io)?);
        for t in &texts {
            let Out::Bytes(r) = t else { unreachable!("a CSV task makes bytes") };
            f.write_all(ares::get_view(r)?.as_slice()).map_err(io)?;
        }
        f.flush().map_err(io)
    }

    fn map_chunks(&self, inputs: &[ObjectRef<FrameChunk>], spec: &MapSpec) -> Result<Vec<ObjectRef<FrameChunk>>> {
        let mut g = Graph::new();
        let targets: Vec<usize> = inputs
            .iter()
            .map(|r| {
                let i = g.ready(Out::Frame(r.clone()));
                g.add(Task::Map(spec.clone()), vec![i], 1, 0, 0)
            })
            .collect();
        Ok(Self::frames(self.run(&mut g, &targets)?))
    }

    /// First, last or top rows: each chunk's, then the survivors' in a tree.
    fn top(&self, inputs: &[ObjectRef<FrameChunk>], spec: &TopSpec) -> Result<Vec<ObjectRef<FrameChunk>>> {
        let mut g = Graph::new();
        let mut trees = Trees::new(1, COMBINE);
        for r in inputs {
            let i = g.ready(Out::Frame(r.clone()));
            let leaf = g.add(Task::Top(spec.clone()), vec![i], 1, 0, 0);
            trees.push(&mut g, 0, leaf, 1, || Task::Top(spec.clone()));
        }
        let root = trees.root(&mut g, 0, 1, || Task::Top(spec.clone()));
        Ok(Self::frames(self.run(&mut g, &[root])?))
    }

    /// Distinct rows: in a tree (few), or hash-partitioned (many).
    fn unique(
        &self,
        inputs: &[ObjectRef<FrameChunk>],
        subset: &[String],
        method: Method,
    ) -> Result<(Vec<ObjectRef<FrameChunk>>, Method)> {
        let method = match method {
            _ if inputs.len() < 2 => Method::Tree,
            Method::Auto | Method::Broadcast => {
                Self::by_share(ares::get(&ares::remote(unique_probe).call(subset.to_vec(), &inputs[0]))?)?
            }
            m => m,
        };
        let mut g = Graph::new();
        let ready: Vec<usize> = inputs.iter().map(|r| g.ready(Out::Frame(r.clone()))).collect();
        let targets = if method == Method::Shuffle {
            let parts = inputs.len() as u32;
            let maps: Vec<usize> =
                ready.iter().map(|&r| g.add(Task::KeySplit(subset.to_vec(), parts, true), vec![r], 1, 0, 0)).collect();
            (0..parts as usize).map(|p| g.add(Task::Unique(subset.to_vec(), Some(p)), maps.clone(), 1, 1, 0)).collect()
        } else {
            let mut trees = Trees::new(1, COMBINE);
            for &r in &ready {
                let leaf = g.add(Task::Unique(subset.to_vec(), None), vec![r], 1, 0, 0);
                trees.push(&mut g, 0, leaf, 1, || Task::Unique(subset.to_vec(), None));
            }
            vec![trees.root(&mut g, 0, 1, || Task::Unique(subset.to_vec(), None))]
        };
        Ok((Self::frames(self.run(&mut g, &targets)?), method))
    }

    /// A merge: a side of one chunk is broadcast to every chunk of the other (when that
    /// keeps the other side's unmatched rows right), else both sides are shuffled by key.
    fn join(
        &self,
        left: &[ObjectRef<FrameChunk>],
        right: &[ObjectRef<FrameChunk>],
        spec: &JoinSpec,
    ) -> Result<(Vec<ObjectRef<FrameChunk>>, Method)> {
        let mut g = Graph::new();
        let l: Vec<usize> = left.iter().map(|r| g.ready(Out::Frame(r.clone()))).collect();
        let r: Vec<usize> = right.iter().map(|x| g.ready(Out::Frame(x.clone()))).collect();
        let task = |pick| Task::Join(spec.clone(), 1, pick);
        let (targets, method) = if l.len() == 1 && r.len() == 1 {
            (vec![g.add(task(None), vec![l[0], r[0]], 1, 0, 0)], Method::Broadcast)
        } else if r.len() == 1 && matches!(spec.how, How::Inner | How::Left) {
            (l.iter().map(|&li| g.add(task(None), vec![li, r[0]], 1, 0, 0)).collect(), Method::Broadcast)
        } else if l.len() == 1 && matches!(spec.how, How::Inner | How::Right) {
            (r.iter().map(|&ri| g.add(task(None), vec![l[0], ri], 1, 0, 0)).collect(), Method::Broadcast)
        } else {
            let parts = l.len().max(r.len()) as u32;
            let split = |g: &mut Graph<Task, Out>, i: usize| {
                g.add(Task::KeySplit(spec.on.clone(), parts, false), vec![i], 1, 0, 0)
            };
            let ls: Vec<usize> = l.iter().map(|&i| split(&mut g, i)).collect();
            let rs: Vec<usize> = r.iter().map(|&i| split(&mut g, i)).collect();
            let targets = (0..parts as usize)
                .map(|p| {
                    let ins = ls.iter().chain(&rs).copied().collect();
                    g.add(Task::Join(spec.clone(), ls.len(), Some(p)), ins, 1, 1, 0)
                })
                .collect();
            (targets, Method::Shuffle)
        };
        Ok((Self::frames(self.run(&mut g, &targets)?), method))
    }

    /// The frame's values as a 2-d tensor (rows × columns) of the columns' common dtype:
    /// numpy's promotion of the columns' dtypes, as pandas' `to_numpy` gives for numbers
    /// (any float makes floats: float32 when the others are float32 or integers of at
    /// most 16 bits, float64 otherwise), except that booleans with numbers count as 0 and
    /// 1 where pandas makes an `object` array (tensors have no objects); booleans alone
    /// stay booleans. Its row chunks are the frame's. The frame is computed first and its
    /// chunks converted now: their row counts make the tensor's chunks, as Dask's
    /// `to_dask_array(lengths=True)` computes them.
    pub fn to_tensor(&self, df: &DataFrame) -> Result<ares_tensor::Tensor> {
        self.tensor_of(df, &df.columns(), false)
    }

    /// One column as a 1-d tensor (pandas' `Series.to_numpy`), as `to_tensor` makes it;
    /// only that column is computed.
    pub fn column_to_tensor(&self, df: &DataFrame, column: &str) -> Result<ares_tensor::Tensor> {
        self.tensor_of(&df.select(&[column])?, &[column.to_string()], true)
    }

    fn tensor_of(&self, df: &DataFrame, columns: &[String], flat: bool) -> Result<ares_tensor::Tensor> {
        use ares_tensor::DType;
        use polars::prelude::DataType;
        let mut kinds = Vec::new();
        // Whether every integer column fits float32 exactly (numpy keeps float32 then).
        let mut small_ints = true;
        for c in columns {
            let dt = df.dtype(c)?;
            small_ints &= !matches!(dt, DataType::Int32 | DataType::Int64 | DataType::UInt32 | DataType::UInt64);
            kinds.push(match dt {
                DataType::Boolean => DType::Bool,
                DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::UInt8 | DataType::UInt16 => DType::I32,
                DataType::Int64 | DataType::UInt32 => DType::I64,
                DataType::Float32 => DType::F32,
                DataType::Float64 => DType::F64,
                _ => {
                    return Err(FrameError::DType(format!(
                        "to_tensor: column {c:?} has dtype {dt}; tensors hold booleans, int32/int64 and float32/float64 (astype it, or leave it out)"
                    )));
                }
            });
        }
        if kinds.is_empty() {
            return Err(FrameError::Invalid("to_tensor of a frame without columns".into()));
        }
        let numbers: Vec<DType> = kinds.iter().copied().filter(|&k| k != DType::Bool).collect();
        let dtype = if numbers.is_empty() {
            DType::Bool
        } else if numbers.iter().any(|k| k.is_float()) {
            if small_ints && !numbers.contains(&DType::F64) { DType::F32 } else { DType::F64 }
        } else if numbers.iter().all(|&k| k == DType::I32) {
            DType::I32
        } else {
            DType::I64
        };
        let chunks = self.chunks(df)?;
        if chunks.is_empty() {
            let shape: Vec<u64> = if flat { vec![0] } else { vec![0, columns.len() as u64] };
            let chunk = ares_tensor::Chunk { shape, data: ares_tensor::data::Buf::with_capacity(dtype, 0) };
            let grid = if flat { vec![vec![0]] } else { vec![vec![0], vec![columns.len() as u64]] };
            return Ok(ares_tensor::from_chunk_refs(dtype, grid, vec![ares::put(chunk)?])?);
        }
        let mut rows = Vec::with_capacity(chunks.len());
        for r in chunks.iter() {
            rows.push(ares::get_view(r)?.rows.to_native());
        }
        let task = || Task::ToTensor(columns.to_vec(), dtype, flat);
        let refs: Vec<ObjectRef<Chunk>> = self
            .per_chunk(&chunks, task)?
            .into_iter()
            .map(|o| match o {
                Out::Tensor(r) => r,
                _ => unreachable!("a conversion makes tensor chunks"),
            })
            .collect();
        // A conversion that failed (a missing integer) is this call's error, not a later one's.
        refs.iter().try_for_each(ares::ready)?;
        let grid = if flat { vec![rows] } else { vec![rows, vec![columns.len() as u64]] };
        Ok(ares_tensor::from_chunk_refs(dtype, grid, refs)?)
    }

    /// One task per chunk of `inputs`, each made by `task`; their results.
    fn per_chunk(&self, inputs: &[ObjectRef<FrameChunk>], task: impl Fn() -> Task) -> Result<Vec<Out>> {
        let mut g = Graph::new();
        let targets: Vec<usize> = inputs
            .iter()
            .map(|r| {
                let i = g.ready(Out::Frame(r.clone()));
                g.add(task(), vec![i], 1, 0, 0)
            })
            .collect();
        self.run(&mut g, &targets)
    }

    /// `describe` of `columns` (see `crate::describe`): moments and sketches from every
    /// chunk, then, for the ranks the percentiles read that the sketches did not pin
    /// down, what each chunk holds of their brackets.
    fn describe(
        &self,
        inputs: &[ObjectRef<FrameChunk>],
        columns: &[String],
        percentiles: &[f64],
    ) -> Result<polars::prelude::DataFrame> {
        use polars::prelude::{Column, IntoColumn, NamedFrom, Series};
        let mut sketches: Vec<Vec<Sketch>> = Vec::with_capacity(inputs.len());
        let points = describe::sketch_points(inputs.len());
        for out in self.per_chunk(inputs, || Task::DescribeSketch(columns.to_vec(), points))? {
            let Out::Sketches(r) = out else { unreachable!("a sketch task makes sketches") };
            sketches.push(ares::get(&r)?);
        }
        let of = |c: usize| sketches.iter().map(|s| &s[c]).collect::<Vec<&Sketch>>();
        // The ranks each column needs, and a bracket for those not known yet.
        let mut values: Vec<std::collections::BTreeMap<u64, f64>> = vec![Default::default(); columns.len()];
        let mut brackets: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
        let mut wanted: Vec<(usize, u64, f64, f64)> = Vec::new();
        for (c, name) in columns.iter().enumerate() {
            let found = describe::Brackets::new(of(c));
            let n: u64 = of(c).iter().map(|s| s.count).sum();
            let mut bs = Vec::new();
            for &q in percentiles.iter().filter(|_| n > 0) {
                let (lo, hi, _) = describe::percentile_ranks(q, n);
                for r in [lo, hi] {
                    if values[c].contains_key(&r) || wanted.iter().any(|w| w.0 == c && w.1 == r) {
                        continue;
                    }
                    let (blo, bhi) = found.bracket(r).expect("a rank below the count");
                    if blo == bhi {
                        values[c].insert(r, blo);
                    } else {
                        wanted.push((c, r, blo, bhi));
                        bs.push((blo, bhi));
                    }
                }
            }
            if !bs.is_empty() {
                brackets.push((name.clone(), bs));
            }
        }
        if !brackets.is_empty() {
            let mut picked: Vec<Vec<Vec<Picked>>> = Vec::with_capacity(inputs.len());
            for out in self.per_chunk(inputs, || Task::DescribePick(brackets.clone()))? {
                let Out::Picked(r) = out else { unreachable!("a pick task makes picks") };
                picked.push(ares::get(&r)?);
            }
            // `brackets` lists the columns with brackets in order, each's in `wanted` order.
            let mut slot: Vec<(usize, usize)> = Vec::new();
            for (b, (_, bs)) in brackets.iter().enumerate() {
                slot.extend((0..bs.len()).map(|i| (b, i)));
            }
            for (&(c, r, lo, hi), &(b, i)) in wanted.iter().zip(&slot) {
                let parts: Vec<&Picked> = picked.iter().map(|p| &p[b][i]).collect();
                let v = describe::select(&parts, lo, hi, r).ok_or_else(|| {
                    FrameError::Invalid(format!("describe: rank {r} of {:?} was not in its bracket", columns[c]))
                })?;
                values[c].insert(r, v);
            }
        }
        let names = describe::percentile_names(percentiles);
        let mut stats: Vec<String> = ["count", "mean", "std", "min"].iter().map(|s| s.to_string()).collect();
        stats.extend(names);
        stats.push("max".into());
        let mut cols = vec![Column::new("statistic".into(), stats)];
        for (c, name) in columns.iter().enumerate() {
            let per = of(c);
            let (n, mean, m2) = describe::moments(&per);
            let present = || per.iter().filter(|s| s.count > 0);
            let min = present().map(|s| s.values[0]).fold(f64::NAN, f64::min);
            let max = present().map(|s| s.values[s.values.len() - 1]).fold(f64::NAN, f64::max);
            let nan_unless = |ok: bool, v: f64| if ok { v } else { f64::NAN };
            let mut col =
                vec![n as f64, nan_unless(n > 0, mean), nan_unless(n > 1, (m2 / (n as f64 - 1.0)).sqrt()), min];
            for &q in percentiles {
                col.push(if n == 0 {
                    f64::NAN
                } else {
                    let (lo, hi, t) = describe::percentile_ranks(q, n);
                    describe::lerp(values[c][&lo], values[c][&hi], t)
                });
            }
            col.push(max);
            cols.push(Series::new(name.as_str().into(), col).into_column());
        }
        Ok(polars::prelude::DataFrame::new_infer_height(cols)?)
    }

    /// Sample sort: bounds from each chunk's sample of the first key, each chunk split
    /// into ranges, each range's pieces concatenated and sorted.
    fn sort(&self, inputs: &[ObjectRef<FrameChunk>], spec: &SortSpec) -> Result<Vec<ObjectRef<FrameChunk>>> {
        let mut g = Graph::new();
        let ready: Vec<usize> = inputs.iter().map(|r| g.ready(Out::Frame(r.clone()))).collect();
        let samples: Vec<usize> = ready.iter().map(|&r| g.add(Task::Sample(spec.clone()), vec![r], 1, 0, 0)).collect();
        let mut gathered = Vec::with_capacity(samples.len());
        for r in Self::frames(self.run(&mut g, &samples)?) {
            gathered.push(decode_archived(&*ares::get_view(&r)?)?);
        }
        let parts = inputs.len();
        let mut bounds = kernels::bounds(spec, gathered, parts)?;
        let nparts = bounds.height() + 1;
        let bounds = FrameChunk::encode(&mut bounds)?;
        let mut g = Graph::new();
        let ready: Vec<usize> = inputs.iter().map(|r| g.ready(Out::Frame(r.clone()))).collect();
        if nparts < 2 {
            // One range: the rows sorted in one task.
            let one = g.add(Task::MergeAll(spec.clone()), ready, 1, 1, 0);
            return Ok(Self::frames(self.run(&mut g, &[one])?));
        }
        let splits: Vec<usize> = ready
            .iter()
            .map(|&r| g.add(Task::Split(spec.clone(), bounds.clone(), nparts as u32), vec![r], 1, 0, 0))
            .collect();
        let targets: Vec<usize> =
            (0..nparts).map(|p| g.add(Task::Merge(spec.clone(), p), splits.clone(), 1, 1, 0)).collect();
        Ok(Self::frames(self.run(&mut g, &targets)?))
    }
}
