//! The chunk tasks: the `#[ares::remote]` functions workers run (thin wrappers around
//! the pure kernels of `kernels`, `relational`, `describe` and the readers), and
//! [`FrameTask`], the graph's task that submits them. The only module that calls
//! `ares::remote`.
//!
//! A task reading frame chunks takes `pre`, the per-chunk steps of a map not run as a
//! task of its own: it applies them to each chunk it reads first (fusion across
//! operators: a filter runs inside the group-by's, join's or shuffle's first task).

use ares::{InPlace, InPlaceList, ObjectRef};
use ares_tensor::{Chunk, ChunkRef};
use ares_tileable::Obj;

use crate::chunk::{FrameChunk, decode};
use crate::describe::{Picked, Sketch};
use crate::spec::{GroupSpec, JoinSpec, MapSpec, ScanSpec, SortSpec, Source, TopSpec};
use crate::{describe, kernels, relational};

/// Rows sampled per chunk to choose a sort's partition bounds.
pub(crate) const SAMPLE_ROWS: u32 = 256;

type Pl = polars::prelude::DataFrame;

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

/// Only `columns` of a chunk task's input (all when `None`), mapped where it lies.
fn read_columns(c: &InPlace<'_, FrameChunk>, columns: Option<&[String]>) -> Pl {
    // SAFETY: every frame made from the input lives in the task's body, which ends before
    // the pinned input is released; results are encoded into new bytes before that.
    unsafe { crate::chunk::map_archived(c, columns) }
        .unwrap_or_else(|e| ares::fail(format!("reading a frame chunk: {e}")))
}

/// A chunk task's input, mapped where it lies in the store (see `chunk::map_archived`).
fn read(c: &InPlace<'_, FrameChunk>) -> Pl {
    read_columns(c, None)
}

fn write(mut df: Pl) -> FrameChunk {
    FrameChunk::encode(&mut df).unwrap_or_else(|e| ares::fail(format!("writing a frame chunk: {e}")))
}

fn or_fail<T>(r: polars::prelude::PolarsResult<T>) -> T {
    r.unwrap_or_else(|e| ares::fail(e.to_string()))
}

/// `df` with a fused map applied when there is one.
fn mapped(pre: &Option<MapSpec>, df: Pl) -> Pl {
    match pre {
        Some(m) => or_fail(crate::eval::map(m, df)),
        None => df,
    }
}

/// A chunk read, with a fused map applied first when there is one.
fn read_mapped(pre: &Option<MapSpec>, c: &InPlace<'_, FrameChunk>) -> Pl {
    mapped(pre, read(c))
}

/// The rows a read gives, its map applied.
fn read_source(src: &Source) -> Pl {
    let (df, pre) = match src {
        Source::Parquet(t, pre) => (crate::parquet::read_rows(&t.path, t.rows.0, t.rows.1, &t.columns), pre),
        Source::Csv(t, pre) => {
            (crate::csv::read_range(&t.path, t.range, true, t.separator, &t.schema, &t.projection), pre)
        }
    };
    mapped(pre, or_fail(df))
}

/// A task's one chunk, with a fused map applied: read from its file here when the read
/// is fused into the task (`src`), else from the store (`input`'s one object).
fn one_chunk(pre: &Option<MapSpec>, src: &Option<Source>, input: &InPlaceList<'_, FrameChunk>) -> Pl {
    let df = match (src, input.iter().next()) {
        (Some(s), _) => read_source(s),
        (None, Some(c)) => read(c),
        (None, None) => ares::fail("a frame chunk task was given no chunk"),
    };
    mapped(pre, df)
}

#[ares::remote]
fn from_tensor_chunks(names: Vec<String>, post: Option<MapSpec>, cols: InPlaceList<'_, Chunk>) -> FrameChunk {
    one_thread();
    let refs: Vec<ChunkRef<'_>> = cols.iter().map(|c| ChunkRef::Archived(c)).collect();
    write(mapped(&post, or_fail(kernels::from_tensor_chunks(&names, &refs))))
}

/// A frame chunk of tensor chunks computed here from their programs (the tensors' chunks
/// are never stored: see `ares_tensor::chunk_programs`).
#[ares::remote]
fn from_tensor_programs(
    names: Vec<String>,
    programs: Vec<ares_tensor::kernel::Program>,
    post: Option<MapSpec>,
) -> FrameChunk {
    one_thread();
    let chunks = programs.iter().map(|p| p.run(&[]).unwrap_or_else(|e| ares::fail(e.to_string()))).collect();
    write(mapped(&post, or_fail(kernels::from_owned_chunks(&names, chunks))))
}

#[ares::remote]
fn map_chunk(spec: MapSpec, input: InPlace<'_, FrameChunk>) -> FrameChunk {
    one_thread();
    write(or_fail(crate::eval::map(&spec, read(&input))))
}

#[ares::remote]
fn gb_partial(
    spec: GroupSpec,
    pre: Option<MapSpec>,
    src: Option<Source>,
    input: InPlaceList<'_, FrameChunk>,
) -> FrameChunk {
    one_thread();
    write(or_fail(kernels::partial(&spec, &one_chunk(&pre, &src, &input))))
}

/// `[rows, groups]` of a chunk: what the `auto` method is chosen from.
#[ares::remote]
fn gb_probe(
    spec: GroupSpec,
    pre: Option<MapSpec>,
    src: Option<Source>,
    input: InPlaceList<'_, FrameChunk>,
) -> Vec<u64> {
    one_thread();
    let df = one_chunk(&pre, &src, &input);
    vec![df.height() as u64, or_fail(kernels::partial(&spec, &df)).height() as u64]
}

#[ares::remote]
fn gb_partial_split(
    spec: GroupSpec,
    pre: Option<MapSpec>,
    parts: u32,
    src: Option<Source>,
    input: InPlaceList<'_, FrameChunk>,
) -> Vec<FrameChunk> {
    one_thread();
    let p = or_fail(kernels::partial(&spec, &one_chunk(&pre, &src, &input)));
    or_fail(kernels::hash_split(&spec.keys, &p, parts as usize)).into_iter().map(write).collect()
}

#[ares::remote]
fn top_rows(spec: TopSpec, pre: Option<MapSpec>, parts: InPlaceList<'_, FrameChunk>) -> FrameChunk {
    one_thread();
    let frames = parts.iter().map(|c| mapped(&pre, read(c))).collect();
    write(or_fail(relational::top(&spec, frames)))
}

#[ares::remote]
fn unique_rows(subset: Vec<String>, pre: Option<MapSpec>, parts: InPlaceList<'_, FrameChunk>) -> FrameChunk {
    one_thread();
    let frames = parts.iter().map(|c| mapped(&pre, read(c))).collect();
    write(or_fail(relational::unique(&subset, frames)))
}

/// `[rows, distinct rows]` of a chunk.
#[ares::remote]
fn unique_probe(subset: Vec<String>, pre: Option<MapSpec>, input: InPlace<'_, FrameChunk>) -> Vec<u64> {
    one_thread();
    let df = read_mapped(&pre, &input);
    vec![df.height() as u64, or_fail(relational::unique(&subset, vec![df])).height() as u64]
}

/// A chunk's rows split by the hash of `keys`, duplicates of `keys` dropped first when
/// `dedup`.
#[ares::remote]
fn key_split(
    keys: Vec<String>,
    parts: u32,
    dedup: bool,
    pre: Option<MapSpec>,
    src: Option<Source>,
    input: InPlaceList<'_, FrameChunk>,
) -> Vec<FrameChunk> {
    one_thread();
    let mut df = one_chunk(&pre, &src, &input);
    if dedup {
        df = or_fail(relational::unique(&keys, vec![df]));
    }
    or_fail(kernels::hash_split(&keys, &df, parts as usize)).into_iter().map(write).collect()
}

/// A chunk with each element of the lists in `column` a row of its own (an empty or
/// missing list: one row, missing).
#[ares::remote]
fn explode_rows(column: String, pre: Option<MapSpec>, input: InPlace<'_, FrameChunk>) -> FrameChunk {
    one_thread();
    let as_pandas = polars::prelude::ExplodeOptions { empty_as_null: true, keep_nulls: true };
    write(or_fail(read_mapped(&pre, &input).explode([column.as_str()], as_pandas)))
}

/// One byte range of a CSV file or row group of a Parquet file, only the projected
/// columns read, and a fused map applied to its rows.
#[ares::remote]
fn read_chunk(src: Source) -> FrameChunk {
    one_thread();
    write(read_source(&src))
}

/// A chunk's rows as CSV text (its header line too when `header`).
#[ares::remote]
fn csv_format(header: bool, separator: u8, pre: Option<MapSpec>, input: InPlace<'_, FrameChunk>) -> Vec<u8> {
    one_thread();
    or_fail(crate::csv::write(&mut read_mapped(&pre, &input), header, separator))
}

/// How a join task's inputs pair up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pairing {
    /// One chunk of each side.
    One,
    /// One chunk of the left with the whole right side (broadcast).
    RightToEach,
    /// The whole left side with one chunk of the right.
    LeftToEach,
    /// Partition `p` of each side's hash split.
    Partition(usize),
}

/// The build of a broadcast side (`right` or left, its chunks `side`, and their map):
/// the same in every task of the join, so each worker process builds its index once (see
/// [`relational::Built`]) and probes it with each task's other chunk. It is named by
/// what it is made of: the objects (immutable, never reused) and what is done to them.
fn build_side(spec: &JoinSpec, right: bool, side: &[Obj], pre: &Option<MapSpec>) -> Built {
    struct Blake(blake3::Hasher);
    impl std::hash::Hasher for Blake {
        fn finish(&self) -> u64 {
            0
        }
        fn write(&mut self, bytes: &[u8]) {
            self.0.update(bytes);
        }
    }
    let mut h = Blake(blake3::Hasher::new());
    for o in side {
        std::hash::Hash::hash(&o.get::<FrameChunk>().id(), &mut h);
    }
    h.0.update(format!("{right} {spec:?} {pre:?}").as_bytes());
    Built { right, key: *h.0.finalize().as_bytes() }
}

/// A join task's broadcast side, built once per worker (see [`build_side`]).
#[derive(Clone, Debug, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub(crate) struct Built {
    /// The right side is built (else the left).
    right: bool,
    key: [u8; 32],
}

/// Bytes of join builds a worker process keeps (each task of a graph's several joins
/// may come in turn); a larger build is kept alone (see `Kept`).
static BUILDS: crate::kept::Kept<Option<relational::Built>> = crate::kept::Kept::new(256 << 20);

/// The built side `b` names, kept by this process or made from `chunks` now. `None`: its
/// keys cannot be indexed (the task joins with polars).
fn built(
    b: &Built,
    spec: &JoinSpec,
    pre: &Option<MapSpec>,
    chunks: &InPlaceList<'_, FrameChunk>,
) -> std::sync::Arc<Option<relational::Built>> {
    or_fail(BUILDS.get_or_make(&b.key, || {
        // Copied out of the store (not mapped as `read` does): a kept build outlives the
        // task, and its inputs' pins.
        let copied = |c: &InPlace<'_, FrameChunk>| Ok(mapped(pre, crate::chunk::decode_archived(c)?));
        let frame = kernels::concat(chunks.iter().map(copied).collect::<polars::prelude::PolarsResult<_>>()?)?;
        let frame = relational::suffixed(frame, &spec.both, if b.right { "_y" } else { "_x" })?;
        let built = relational::Built::new(spec, frame)?;
        let bytes = built.as_ref().map_or(0, relational::Built::bytes);
        Ok((built, bytes))
    }))
}

#[ares::remote]
fn join_rows(
    spec: JoinSpec,
    pre: (Option<MapSpec>, Option<MapSpec>),
    build: Option<Built>,
    src: Option<Source>,
    left: InPlaceList<'_, FrameChunk>,
    right: InPlaceList<'_, FrameChunk>,
) -> FrameChunk {
    one_thread();
    // Each side's frames, read when needed: a built side kept by this process is not read.
    // A left chunk read from its file (`src`) is read once.
    let fused = src.as_ref().map(read_source);
    let lefts = || -> Vec<Pl> {
        match &fused {
            Some(df) => vec![mapped(&pre.0, df.clone())],
            None => left.iter().map(|c| mapped(&pre.0, read(c))).collect(),
        }
    };
    let rights = || -> Vec<Pl> { right.iter().map(|c| mapped(&pre.1, read(c))).collect() };
    if let Some(b) = &build {
        let (side, side_pre) = if b.right { (&right, &pre.1) } else { (&left, &pre.0) };
        if let Some(index) = &*built(b, &spec, side_pre, side) {
            let probe = or_fail(kernels::concat(if b.right { lefts() } else { rights() }));
            if let Some(out) = or_fail(relational::join_built(&spec, index, probe, b.right)) {
                return write(out);
            }
        }
    }
    write(or_fail(relational::join(&spec, lefts(), rights())))
}

/// Submits a group scan's step: `ins` are the chunk and, if any, the prefix before it.
fn scan_step(ins: &[Obj], o: ares::TaskOptions, spec: ScanSpec, tail: bool, pre: Option<MapSpec>) -> Obj {
    let prefix = ins[1..].iter().map(|i| i.get::<FrameChunk>()).collect::<Vec<_>>();
    Obj::new(ares::remote(gb_scan).options(o).call(spec, tail, pre, ins[0].get::<FrameChunk>(), prefix))
}

/// A group scan's chunk (`tail`: the groups' last rows so far, for the next chunk's
/// shift), from the chunk and what the chunks before it left (`prefix`, if any).
#[ares::remote]
fn gb_scan(
    spec: ScanSpec,
    tail: bool,
    pre: Option<MapSpec>,
    input: InPlace<'_, FrameChunk>,
    prefix: InPlaceList<'_, FrameChunk>,
) -> FrameChunk {
    one_thread();
    let prefix = prefix.iter().next().map(read);
    let df = read_mapped(&pre, &input);
    write(or_fail(if tail {
        kernels::group_tail(&spec, &df, prefix.as_ref())
    } else {
        kernels::scan(&spec, df, prefix.as_ref())
    }))
}

#[ares::remote]
fn gb_combine(spec: GroupSpec, parts: InPlaceList<'_, FrameChunk>) -> FrameChunk {
    one_thread();
    write(or_fail(kernels::combine(&spec, parts.iter().map(read).collect())))
}

#[ares::remote]
fn gb_finish(spec: GroupSpec, sort: bool, parts: InPlaceList<'_, FrameChunk>) -> FrameChunk {
    one_thread();
    write(or_fail(kernels::combine_finish(&spec, parts.iter().map(read).collect(), sort)))
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
    pre: Option<MapSpec>,
    input: InPlace<'_, FrameChunk>,
) -> Chunk {
    one_thread();
    or_fail(kernels::to_tensor_chunk(&read_mapped(&pre, &input), &columns, dtype, flat))
}

/// One chunk task of a frame operation. Results are `ObjectRef<FrameChunk>` unless
/// noted; `pre` is a map applied to each frame chunk read first.
pub(crate) enum FrameTask {
    /// Inputs: one tensor chunk per column; `post` applied to the frame made.
    FromTensors(Vec<String>, Option<MapSpec>),
    /// Columns computed in the task from their tensor chunks' programs.
    FromPrograms(Vec<String>, Vec<ares_tensor::kernel::Program>, Option<MapSpec>),
    Map(MapSpec),
    Partial(GroupSpec, Option<MapSpec>),
    /// Result: `ObjectRef<Vec<u64>>` (rows, groups).
    Probe(GroupSpec, Option<MapSpec>),
    /// Result: one part per partition.
    PartialSplit(GroupSpec, Option<MapSpec>, u32),
    Combine(GroupSpec),
    /// A chunk with a running aggregation within groups appended; its second input, if
    /// any, is the combined partials of the chunks before it.
    Scan(ScanSpec, Option<MapSpec>),
    /// The last rows (as many as a shift's periods) of each group of its first input,
    /// after those of its second input (the groups' last rows before it), if any.
    GroupTail(ScanSpec, Option<MapSpec>),
    /// Combines (the partition `pick` of, for a shuffle) its inputs and finishes.
    Finish(GroupSpec, Option<usize>),
    Sample(SortSpec),
    /// Result: one part per range.
    Split(SortSpec, FrameChunk, u32),
    Merge(SortSpec, usize),
    /// Sorts the rows of all its inputs (a sort of one range).
    MergeAll(SortSpec),
    Top(TopSpec, Option<MapSpec>),
    /// Distinct rows of all its inputs (partition `pick` of each, for a shuffle).
    Unique(Vec<String>, Option<usize>, Option<MapSpec>),
    /// Result: `ObjectRef<Vec<u64>>` (rows, distinct rows).
    UniqueProbe(Vec<String>, Option<MapSpec>),
    /// A chunk with each list of a column a row of its own.
    Explode(String, Option<MapSpec>),
    /// Rows split by key hash: keys, partitions, duplicates dropped first. Result: one
    /// part per partition.
    KeySplit(Vec<String>, u32, bool, Option<MapSpec>),
    /// Joins its first `n` inputs (left) with the rest, paired as said (each side's map
    /// first, but for a shuffle's partitions).
    Join(JoinSpec, usize, Pairing, (Option<MapSpec>, Option<MapSpec>)),
    /// A CSV range or a Parquet row group read, its map applied.
    Read(Source),
    /// A consumer of one chunk (see [`FrameTask::may_read_source`]) reading that chunk from its
    /// file itself: the read is never a task, its rows never stored.
    Sourced(Source, Box<FrameTask>),
    /// CSV text of a chunk: header line, separator. Result: `ObjectRef<Vec<u8>>`.
    CsvFormat(bool, u8, Option<MapSpec>),
    /// Columns, sample points per chunk. Result: `ObjectRef<Vec<Sketch>>`.
    DescribeSketch(Vec<String>, u32),
    /// Brackets per column. Result: `ObjectRef<Vec<Vec<Picked>>>`.
    DescribePick(Vec<(String, Vec<(f64, f64)>)>),
    /// Columns, dtype, one column flat. Result: `ObjectRef<Chunk>`.
    ToTensor(Vec<String>, ares_tensor::DType, bool, Option<MapSpec>),
}

impl FrameTask {
    /// Whether the task reads one chunk that it could read from its file itself (a
    /// join: its left chunk, each task of a broadcast right side): see
    /// [`FrameTask::Sourced`].
    pub(crate) fn may_read_source(&self) -> bool {
        matches!(
            self,
            FrameTask::Partial(..)
                | FrameTask::Probe(..)
                | FrameTask::PartialSplit(..)
                | FrameTask::KeySplit(..)
                | FrameTask::Join(_, 1, Pairing::RightToEach, _)
        )
    }

    /// Submits `task`, which reads its one chunk from `src` (see
    /// [`FrameTask::may_read_source`]).
    fn submit_sourced(src: Source, task: FrameTask, ins: Vec<Obj>, o: ares::TaskOptions) -> Obj {
        let frames = || ins.iter().map(|i| i.get::<FrameChunk>()).collect::<Vec<ObjectRef<FrameChunk>>>();
        let src = Some(src);
        match task {
            FrameTask::Partial(spec, pre) => {
                Obj::new(ares::remote(gb_partial).options(o).call(spec, pre, src, frames()))
            }
            FrameTask::Probe(spec, pre) => Obj::new(ares::remote(gb_probe).options(o).call(spec, pre, src, frames())),
            FrameTask::PartialSplit(spec, pre, n) => {
                Obj::parts(ares::remote(gb_partial_split).options(o).num_returns(n).call(spec, pre, n, src, frames()))
            }
            FrameTask::KeySplit(keys, n, dedup, pre) => {
                Obj::parts(ares::remote(key_split).options(o).num_returns(n).call(keys, n, dedup, pre, src, frames()))
            }
            FrameTask::Join(spec, _, _, pre) => {
                let build = Some(build_side(&spec, true, &ins, &pre.1));
                Obj::new(ares::remote(join_rows).options(o).call(spec, pre, build, src, Vec::new(), frames()))
            }
            other => unreachable!(
                "{} cannot read its chunk from a file (see FrameTask::may_read_source)",
                ares_tileable::Task::name(&other)
            ),
        }
    }
}

impl ares_tileable::Task for FrameTask {
    fn submit(self: Box<Self>, ins: Vec<Obj>, o: ares::TaskOptions) -> Obj {
        let frames = || ins.iter().map(|i| i.get::<FrameChunk>()).collect::<Vec<ObjectRef<FrameChunk>>>();
        let parts = |p: usize| ins.iter().map(|i| i.part::<FrameChunk>(p)).collect::<Vec<ObjectRef<FrameChunk>>>();
        let first = || ins[0].get::<FrameChunk>();
        match *self {
            FrameTask::FromTensors(names, post) => {
                let cols: Vec<ObjectRef<Chunk>> = ins.iter().map(|i| i.get::<Chunk>()).collect();
                Obj::new(ares::remote(from_tensor_chunks).options(o).call(names, post, cols))
            }
            FrameTask::FromPrograms(names, programs, post) => {
                Obj::new(ares::remote(from_tensor_programs).options(o).call(names, programs, post))
            }
            FrameTask::Map(spec) => Obj::new(ares::remote(map_chunk).options(o).call(spec, first())),
            FrameTask::Partial(spec, pre) => {
                Obj::new(ares::remote(gb_partial).options(o).call(spec, pre, None, frames()))
            }
            FrameTask::Probe(spec, pre) => Obj::new(ares::remote(gb_probe).options(o).call(spec, pre, None, frames())),
            FrameTask::PartialSplit(spec, pre, n) => {
                Obj::parts(ares::remote(gb_partial_split).options(o).num_returns(n).call(spec, pre, n, None, frames()))
            }
            FrameTask::Sourced(src, task) => FrameTask::submit_sourced(src, *task, ins, o),
            FrameTask::Top(spec, pre) => Obj::new(ares::remote(top_rows).options(o).call(spec, pre, frames())),
            FrameTask::Read(src) => Obj::new(ares::remote(read_chunk).options(o).call(src)),
            FrameTask::CsvFormat(header, sep, pre) => {
                Obj::new(ares::remote(csv_format).options(o).call(header, sep, pre, first()))
            }
            FrameTask::Unique(subset, None, pre) => {
                Obj::new(ares::remote(unique_rows).options(o).call(subset, pre, frames()))
            }
            FrameTask::Unique(subset, Some(p), _) => {
                Obj::new(ares::remote(unique_rows).options(o).call(subset, None, parts(p)))
            }
            FrameTask::Explode(column, pre) => {
                Obj::new(ares::remote(explode_rows).options(o).call(column, pre, first()))
            }
            FrameTask::UniqueProbe(subset, pre) => {
                Obj::new(ares::remote(unique_probe).options(o).call(subset, pre, first()))
            }
            FrameTask::KeySplit(keys, n, dedup, pre) => {
                Obj::parts(ares::remote(key_split).options(o).num_returns(n).call(keys, n, dedup, pre, None, frames()))
            }
            FrameTask::Join(spec, n, pairing, pre) => {
                let side = |v: &[Obj]| match pairing {
                    Pairing::Partition(p) => v.iter().map(|i| i.part::<FrameChunk>(p)).collect::<Vec<_>>(),
                    _ => v.iter().map(|i| i.get::<FrameChunk>()).collect(),
                };
                let (l, r) = (side(&ins[..n]), side(&ins[n..]));
                let pre = if let Pairing::Partition(_) = pairing { (None, None) } else { pre };
                let build = match pairing {
                    Pairing::RightToEach => Some(build_side(&spec, true, &ins[n..], &pre.1)),
                    Pairing::LeftToEach => Some(build_side(&spec, false, &ins[..n], &pre.0)),
                    _ => None,
                };
                Obj::new(ares::remote(join_rows).options(o).call(spec, pre, build, None, l, r))
            }
            FrameTask::Combine(spec) => Obj::new(ares::remote(gb_combine).options(o).call(spec, frames())),
            FrameTask::Scan(spec, pre) => scan_step(&ins, o, spec, false, pre),
            FrameTask::GroupTail(spec, pre) => scan_step(&ins, o, spec, true, pre),
            FrameTask::Finish(spec, None) => Obj::new(ares::remote(gb_finish).options(o).call(spec, true, frames())),
            FrameTask::Finish(spec, Some(p)) => {
                Obj::new(ares::remote(gb_finish).options(o).call(spec, false, parts(p)))
            }
            FrameTask::ToTensor(cols, dtype, flat, pre) => {
                Obj::new(ares::remote(to_tensor_chunk).options(o).call(cols, dtype, flat, pre, first()))
            }
            FrameTask::DescribeSketch(cols, points) => {
                Obj::new(ares::remote(describe_sketch).options(o).call(cols, points, first()))
            }
            FrameTask::DescribePick(brackets) => {
                Obj::new(ares::remote(describe_pick).options(o).call(brackets, first()))
            }
            FrameTask::Sample(spec) => Obj::new(ares::remote(sort_sample).options(o).call(spec, SAMPLE_ROWS, first())),
            FrameTask::Split(spec, bounds, n) => {
                Obj::parts(ares::remote(sort_split).options(o).num_returns(n).call(spec, bounds, first()))
            }
            FrameTask::MergeAll(spec) => Obj::new(ares::remote(sort_merge).options(o).call(spec, frames())),
            FrameTask::Merge(spec, p) => Obj::new(ares::remote(sort_merge).options(o).call(spec, parts(p))),
        }
    }

    fn name(&self) -> String {
        let fused = |pre: &Option<MapSpec>| if pre.is_some() { " (with a fused map)" } else { "" };
        match self {
            FrameTask::FromTensors(..) => "frame from tensor chunks".into(),
            FrameTask::FromPrograms(..) => "frame from tensor programs".into(),
            FrameTask::Map(spec) => format!("frame map of {} steps", spec.steps.len()),
            FrameTask::Partial(_, pre) => format!("group-by partial{}", fused(pre)),
            FrameTask::Probe(..) => "group-by probe".into(),
            FrameTask::PartialSplit(_, pre, _) => format!("group-by shuffle map{}", fused(pre)),
            FrameTask::Combine(_) => "group-by combine".into(),
            FrameTask::Finish(..) => "group-by finish".into(),
            FrameTask::Scan(_, pre) => format!("group-by scan{}", fused(pre)),
            FrameTask::GroupTail(_, pre) => format!("group tail rows{}", fused(pre)),
            FrameTask::Sample(_) => "sort sample".into(),
            FrameTask::Split(..) => "sort split".into(),
            FrameTask::Merge(..) | FrameTask::MergeAll(_) => "sort merge".into(),
            FrameTask::Top(_, pre) => format!("top rows{}", fused(pre)),
            FrameTask::Unique(_, _, pre) => format!("distinct rows{}", fused(pre)),
            FrameTask::UniqueProbe(..) => "distinct rows probe".into(),
            FrameTask::Explode(_, pre) => format!("explode{}", fused(pre)),
            FrameTask::KeySplit(_, _, _, pre) => format!("hash split{}", fused(pre)),
            FrameTask::Join(..) => "join".into(),
            FrameTask::Read(Source::Csv(_, pre)) => format!("read_csv range{}", fused(pre)),
            FrameTask::Read(Source::Parquet(_, pre)) => format!("read_parquet row group{}", fused(pre)),
            FrameTask::Sourced(Source::Parquet(..), task) => format!("{} reading a Parquet row group", task.name()),
            FrameTask::Sourced(Source::Csv(..), task) => format!("{} reading a CSV range", task.name()),
            FrameTask::CsvFormat(..) => "to_csv chunk".into(),
            FrameTask::DescribeSketch(..) => "describe sketch".into(),
            FrameTask::DescribePick(_) => "describe pick".into(),
            FrameTask::ToTensor(..) => "frame to tensor chunk".into(),
        }
    }
}
