//! The frame API of a session: executing, fetching and writing frames, and their values
//! as tensors. The session itself (ID, settings, cancel, progress, results) is the
//! engine's ([`ares_tileable::Session`]); every frame expression, with the tensors it is
//! made of or turned into, runs as one graph.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use ares::ObjectRef;
use ares_tensor::{DType, Tensor, TensorError};
use ares_tileable::{Cx, Hints, Obj, TileResult, Tiling};
use polars::prelude::DataType;

use crate::chunk::{FrameChunk, decode_archived};
use crate::error::{FrameError, Result};
use crate::frame::{Computed, DataFrame, Op};
use crate::spec::Method;
use crate::tasks::FrameTask;
use crate::{kernels, tile};

/// Where frames are computed. Chunks computed in one session are kept on the frame
/// while it lives (freed with it), and not seen by another session. A clone is the same
/// session (it sees the same computed chunks), with its own settings. The same session
/// computes tensors ([`Session::tensors`]).
#[derive(Clone, Debug, Default)]
pub struct Session(ares_tileable::Session);

type Chunks = Arc<Vec<ObjectRef<FrameChunk>>>;

impl From<ares_tileable::Session> for Session {
    fn from(s: ares_tileable::Session) -> Self {
        Session(s)
    }
}

impl Session {
    /// A session with the default settings (8 chunk tasks in flight).
    pub fn new() -> Self {
        Self::default()
    }

    /// The engine's session under this one.
    pub fn tileable(&self) -> &ares_tileable::Session {
        &self.0
    }

    /// The same session, computing tensors.
    pub fn tensors(&self) -> ares_tensor::Session {
        ares_tensor::Session::from(self.0.clone())
    }

    /// At most `n` chunk tasks submitted and not finished.
    pub fn max_in_flight(self, n: usize) -> Self {
        Session(self.0.max_in_flight(n))
    }

    /// The same session, stopping between chunk tasks once `flag` is set (an operation
    /// then fails with [`FrameError::Cancelled`]; its objects are freed).
    pub fn cancelled_by(&self, flag: Arc<AtomicBool>) -> Session {
        Session(self.0.cancelled_by(flag))
    }

    /// The same session, calling `f` as chunk tasks finish.
    pub fn on_progress(&self, f: impl Fn(ares_tileable::Progress) + Send + Sync + 'static) -> Session {
        Session(self.0.clone().on_progress(f))
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
        if df.node.computed.get(&self.0).is_none() {
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
        if refs.len() > 1
            && let Some(keys) = group_keys(df)
        {
            out = out.sort(keys.iter().map(|k| k.as_str()), Default::default())?;
        }
        Ok(out)
    }

    /// The method a group-by, drop_duplicates or merge frame was computed with (after
    /// `execute`), as Mars records its `auto` choice in the plan.
    pub fn group_by_method(&self, df: &DataFrame) -> Option<Method> {
        df.node.computed.get(&self.0).and_then(|c| c.method)
    }

    /// The refs of `df`'s chunks, computing them first (and its inputs, in the same
    /// graph) if needed. They are kept on `df` for this session; inputs computed on the
    /// way are not kept (their chunks are freed as soon as their consumers ran), unless
    /// they were executed themselves.
    ///
    /// They are ready when this returns. If a chunk task failed, the error is returned
    /// and nothing is kept: running `df` again recomputes it.
    pub fn chunks(&self, df: &DataFrame) -> Result<Chunks> {
        let chunks = self.compute(df, true)?;
        if let Err(e) = chunks.iter().try_for_each(ares::ready) {
            df.node.computed.remove(&self.0);
            return Err(e.into());
        }
        Ok(chunks)
    }

    /// `df`'s chunks, run as one graph (kept on `df` when `keep`).
    fn compute(&self, df: &DataFrame, keep: bool) -> Result<Chunks> {
        if let Some(c) = df.node.computed.get(&self.0) {
            return Ok(c.chunks);
        }
        let mut method = None;
        let outs = ares_tileable::run::<FrameError>(&self.0, df, |cx| {
            let c = tile::tile_materialized(cx, df, None)?;
            // A merge's or group-by's method, under the selections that order its
            // columns (the Python layer's merges end in one).
            let mut d = df.clone();
            method = loop {
                if let Some(m) = cx.memo::<Method>(tile::key(&d), tile::METHOD) {
                    break Some(*m);
                }
                match d.select_only_input() {
                    Some(input) => d = input,
                    None => break None,
                }
            };
            Ok(c.nodes.clone())
        })?;
        let chunks: Chunks = Arc::new(outs.iter().map(|o| o.get::<FrameChunk>()).collect());
        if keep {
            df.node.computed.set(&self.0, Computed { chunks: chunks.clone(), method });
        }
        Ok(chunks)
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
    /// `to_csv(index=False)`): each chunk's text is made by a task (in the same graph as
    /// `df`, a pending map applied in it), and this process appends them in order.
    pub fn to_csv(&self, df: &DataFrame, path: impl AsRef<std::path::Path>, separator: u8) -> Result<()> {
        use std::io::Write;
        let path = path.as_ref();
        let io = |e: std::io::Error| FrameError::Io { path: path.to_string_lossy().to_string(), source: e };
        let texts = ares_tileable::run::<FrameError>(&self.0, df, |cx| {
            let c = tile::tile(cx, df, None)?;
            let depth = cx.depth(df) + 1;
            Ok(c.nodes
                .iter()
                .enumerate()
                .map(|(i, &n)| {
                    let task = FrameTask::CsvFormat(i == 0, separator, c.pre.clone());
                    cx.add(task, vec![n], Hints::new(depth, c.bytes))
                })
                .collect())
        })?;
        let mut f = std::io::BufWriter::new(std::fs::File::create(path).map_err(io)?);
        for t in &texts {
            f.write_all(ares::get_view(&t.get::<Vec<u8>>())?.as_slice()).map_err(io)?;
        }
        f.flush().map_err(io)
    }

    /// The frame's values as a 2-d tensor, computed now (see [`DataFrame::values`], its
    /// lazy form): a conversion that fails (a missing integer) is this call's error.
    pub fn to_tensor(&self, df: &DataFrame) -> Result<Tensor> {
        let t = df.values()?;
        self.tensors().execute(&t)?;
        Ok(t)
    }

    /// One column as a 1-d tensor, computed now (see [`DataFrame::column_values`]); only
    /// that column is computed.
    pub fn column_to_tensor(&self, df: &DataFrame, column: &str) -> Result<Tensor> {
        let t = df.column_values(column)?;
        self.tensors().execute(&t)?;
        Ok(t)
    }
}

/// The dtype of a tensor holding `columns` of `df`: numpy's promotion of the columns'
/// dtypes (the engine's `result_type`), as pandas' `to_numpy` gives for numbers, except
/// that booleans with numbers count as 0 and 1 where pandas makes an `object` array
/// (tensors have no objects); booleans alone stay booleans.
pub(crate) fn values_dtype(df: &DataFrame, columns: &[String]) -> Result<DType> {
    let mut out: Option<DType> = None;
    for c in columns {
        let dt = df.dtype(c)?;
        let d = match dt {
            DataType::Boolean => DType::Bool,
            DataType::Int8 => DType::I8,
            DataType::Int16 => DType::I16,
            DataType::Int32 => DType::I32,
            DataType::Int64 => DType::I64,
            DataType::UInt8 => DType::U8,
            DataType::UInt16 => DType::U16,
            DataType::UInt32 => DType::U32,
            DataType::UInt64 => DType::U64,
            DataType::Float32 => DType::F32,
            DataType::Float64 => DType::F64,
            _ => {
                return Err(FrameError::DType(format!(
                    "to_tensor: column {c:?} has dtype {dt}; tensors hold booleans, integers and floats (astype it, or leave it out)"
                )));
            }
        };
        out = Some(out.map_or(d, |o| DType::promote(o, d)));
    }
    out.ok_or_else(|| FrameError::Invalid("to_tensor of a frame without columns".into()))
}

/// The chunks of a tensor holding a frame's columns: one conversion task per frame
/// chunk, in the graph of whatever expression reads the tensor.
#[derive(Debug)]
pub(crate) struct FrameValues {
    pub(crate) df: DataFrame,
    pub(crate) columns: Vec<String>,
    pub(crate) dtype: DType,
    /// One column, as a 1-d tensor.
    pub(crate) flat: bool,
}

fn tensor_error(e: Tiling<FrameError>) -> Tiling<TensorError> {
    e.map_err(|e| match e {
        FrameError::Tensor(t) => t,
        FrameError::Runtime(r) => TensorError::Runtime(r),
        FrameError::Cancelled => TensorError::Cancelled,
        other => TensorError::Source(Box::new(other)),
    })
}

impl ares_tensor::ChunkSource for FrameValues {
    fn operand(&self) -> &dyn ares_tileable::Node {
        &self.df
    }

    fn tile(&self, cx: &mut Cx<'_>) -> TileResult<Vec<(usize, u64)>, TensorError> {
        let me = self as *const FrameValues as usize;
        let conv = match cx.take_state::<Vec<usize>>(me, tile::STATE) {
            Some(c) => c,
            None => {
                let c = tile::tile(cx, &self.df, Some(&self.columns)).map_err(tensor_error)?;
                let depth = cx.depth(&self.df) + 1;
                let task = || FrameTask::ToTensor(self.columns.clone(), self.dtype, self.flat, c.pre.clone());
                let mut nodes: Vec<usize> =
                    c.nodes.iter().map(|&n| cx.add(task(), vec![n], Hints::new(depth, c.bytes))).collect();
                if nodes.is_empty() {
                    // No chunks: one empty chunk, as numpy's empty array.
                    let shape = if self.flat { vec![0] } else { vec![0, self.columns.len() as u64] };
                    let empty =
                        ares_tensor::Chunk { shape, data: ares_tensor::data::Buf::with_capacity(self.dtype, 0) };
                    let r = ares::put(empty).map_err(|e| Tiling::Failed(TensorError::Runtime(e)))?;
                    nodes.push(cx.ready(Obj::new(r), 0));
                }
                nodes.iter().for_each(|&n| cx.graph_mut().hold(n));
                nodes
            }
        };
        let mut lens = Vec::with_capacity(conv.len());
        let mut pending = false;
        for &n in &conv {
            match cx.value::<TensorError>(n) {
                Ok(o) => {
                    if !pending {
                        let view = ares::get_view(&o.get::<ares_tensor::Chunk>()).map_err(TensorError::Runtime)?;
                        lens.push(view.shape.first().map_or(0, |d| d.to_native()));
                    }
                }
                Err(Tiling::Pending) => pending = true,
                Err(e) => return Err(e),
            }
        }
        if pending {
            cx.put_state(me, tile::STATE, conv);
            return Err(Tiling::Pending);
        }
        Ok(conv.into_iter().zip(lens).collect())
    }
}

impl DataFrame {
    /// The frame's values as a 2-d tensor (rows × columns), lazily: it is computed in the
    /// same graph as whatever reads it (pandas' `df.values`). Its dtype is the columns'
    /// common one (see `Session::to_tensor`); its row chunks are the frame's, known once
    /// they ran. A missing value is NaN in a float tensor; an integer or boolean one
    /// cannot hold it, so its task fails naming the column and the fix.
    pub fn values(&self) -> Result<Tensor> {
        let columns = self.columns();
        let dtype = values_dtype(self, &columns)?;
        let n = columns.len() as u64;
        let src = FrameValues { df: self.clone(), columns, dtype, flat: false };
        Ok(ares_tensor::from_source(Arc::new(src), dtype, &[n]))
    }

    /// One column as a 1-d tensor, lazily (pandas' `Series.to_numpy`); only that column
    /// is computed.
    pub fn column_values(&self, column: &str) -> Result<Tensor> {
        let df = self.select(&[column])?;
        let columns = vec![column.to_string()];
        let dtype = values_dtype(&df, &columns)?;
        let src = FrameValues { df, columns, dtype, flat: true };
        Ok(ares_tensor::from_source(Arc::new(src), dtype, &[]))
    }
}

/// The key columns, as `df` names them, of the group-by `df` is, or maps over without
/// touching its keys (filters, new columns, renames, selections that keep them): such
/// a frame comes in the group-by's order, sorted per shuffle partition only.
fn group_keys(df: &DataFrame) -> Option<Vec<String>> {
    match &df.node.op {
        Op::GroupBy { spec, .. } => Some(spec.keys.clone()),
        Op::Map { input, spec, .. } => {
            let mut keys = group_keys(input)?;
            for step in &spec.steps {
                match step {
                    crate::spec::MapStep::Filter(_) => {}
                    crate::spec::MapStep::Select(cols) if keys.iter().all(|k| cols.contains(k)) => {}
                    crate::spec::MapStep::Assign(name, _) if !keys.contains(name) => {}
                    crate::spec::MapStep::Rename(pairs) => {
                        for k in keys.iter_mut() {
                            if let Some((_, to)) = pairs.iter().find(|(from, _)| from == k) {
                                *k = to.clone();
                            }
                        }
                    }
                    _ => return None,
                }
            }
            Some(keys)
        }
        _ => None,
    }
}
