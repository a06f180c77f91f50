//! The lazy `DataFrame`: a node of the frame graph with a known schema, and the
//! operations that build new nodes. Nothing runs here; a `Session` runs frames.

use std::sync::Arc;

use polars::prelude::DataType;

use crate::error::{FrameError, Result};
use crate::expr::{Dtype, Expr, Value};
use crate::spec::{GroupSpec, JoinSpec, MapSpec, Method, ScanSpec, SortSpec, TopSpec};

mod columns;
mod group;
mod rows;

pub use group::GroupBy;

/// Expressions fused into one map task at most; a longer chain starts a new task.
const MAX_FUSED_INSTRS: usize = 256;

/// A lazy, chunked data frame. Cloning is cheap (a shared node).
#[derive(Clone)]
pub struct DataFrame {
    pub(crate) node: Arc<Node>,
}

pub(crate) struct Node {
    pub(crate) op: Op,
    /// Column names and dtypes, in order.
    pub(crate) schema: Vec<(String, DataType)>,
    /// The chunks computed for it, per session id: held by the frame, so they are freed
    /// when the frame goes (as a tensor keeps its chunks).
    pub(crate) computed: ares_tileable::Results<Computed>,
}

/// What one session computed for a frame.
#[derive(Clone)]
pub(crate) struct Computed {
    pub(crate) chunks: Arc<Vec<ares::ObjectRef<crate::chunk::FrameChunk>>>,
    /// The method a group-by used.
    pub(crate) method: Option<Method>,
}

pub(crate) enum Op {
    /// Columns from 1-d tensors chunked alike: chunk `i` holds their chunks `i`.
    Tensors(Vec<(String, ares_tensor::Tensor)>),
    /// A frame from the driver, split into chunks (put when run).
    Local(Vec<polars::prelude::DataFrame>),
    /// A group-by aggregation.
    GroupBy { input: DataFrame, spec: GroupSpec, method: Method },
    /// The input's rows and chunks with a running aggregation within groups appended.
    GroupScan { input: DataFrame, spec: ScanSpec },
    /// A sort.
    Sort { input: DataFrame, spec: SortSpec },
    /// Per-chunk steps (projections, filters, new columns), fused into one task; the
    /// lazy scalars its expressions use are computed first (see `Expr::Value`).
    Map { input: DataFrame, spec: MapSpec, values: Vec<Value> },
    /// First, last or top rows.
    Top { input: DataFrame, spec: TopSpec },
    /// Rows without duplicates of their `subset` values.
    Unique { input: DataFrame, subset: Vec<String>, method: Method },
    /// Each list of `column` a row of its own (pandas' `explode`), per chunk.
    Explode { input: DataFrame, column: String },
    /// A merge of two frames.
    Join { left: DataFrame, right: DataFrame, spec: JoinSpec },
    /// A CSV file, one chunk per byte range.
    ReadCsv(CsvSource),
    /// A Parquet file, one chunk per row group.
    ReadParquet(ParquetSource),
    /// pandas' `describe` of the numeric `columns`, with these percentiles (sorted).
    Describe { input: DataFrame, columns: Vec<String>, percentiles: Vec<f64> },
    /// The rows of several frames of the same columns (in the same order and dtypes),
    /// one after the other: their chunks, in order.
    Concat(Vec<DataFrame>),
}

/// A Parquet file to read: its row groups `(first row, rows)`.
#[derive(Clone, Debug)]
pub(crate) struct ParquetSource {
    pub(crate) path: String,
    pub(crate) groups: Vec<(u64, u64)>,
}

/// A CSV file to read: its byte ranges and the columns inferred from its head.
#[derive(Clone, Debug)]
pub(crate) struct CsvSource {
    pub(crate) path: String,
    pub(crate) separator: u8,
    pub(crate) ranges: Vec<(u64, u64)>,
    pub(crate) schema: Vec<(String, Dtype)>,
}

/// How `read_csv` reads a file.
#[derive(Clone, Debug)]
pub struct CsvOptions {
    /// Bytes of the file per chunk (default 64 MiB).
    pub chunk_bytes: u64,
    /// The field separator (default `,`).
    pub separator: u8,
    /// Columns whose dtype is given rather than inferred from the file's first lines.
    pub dtypes: Vec<(String, Dtype)>,
}

impl Default for CsvOptions {
    fn default() -> Self {
        CsvOptions { chunk_bytes: 64 << 20, separator: b',', dtypes: Vec::new() }
    }
}

/// Which rows `dropna` drops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropNa {
    /// Rows with any missing value (pandas' `how="any"`).
    Any,
    /// Rows whose values are all missing (`how="all"`).
    All,
}

impl std::fmt::Debug for DataFrame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let op = match &self.node.op {
            Op::Tensors(_) => "from_tensors".to_string(),
            Op::Local(_) => "from_polars".to_string(),
            Op::GroupBy { .. } => "groupby".to_string(),
            Op::GroupScan { .. } => "groupby scan".to_string(),
            Op::Sort { .. } => "sort_values".to_string(),
            // Fused steps run as one task per chunk.
            Op::Map { spec, .. } => format!("map of {} fused steps", spec.steps.len()),
            Op::Top { .. } => "head/tail/nlargest".to_string(),
            Op::Unique { .. } => "drop_duplicates".to_string(),
            Op::Explode { column, .. } => format!("explode({column:?})"),
            Op::Join { .. } => "merge".to_string(),
            Op::ReadCsv(src) => format!("read_csv({:?}, {} ranges)", src.path, src.ranges.len()),
            Op::ReadParquet(src) => format!("read_parquet({:?}, {} row groups)", src.path, src.groups.len()),
            Op::Describe { .. } => "describe".to_string(),
            Op::Concat(parts) => format!("concat of {} frames", parts.len()),
        };
        write!(f, "DataFrame({op}, columns {:?})", self.node.schema)
    }
}

impl DataFrame {
    /// The plan as it will be tiled, one operator a line, inputs indented below it (as
    /// polars' `explain`): after the rewrites made as the frame was built (filters moved
    /// below merges, merges reordered, group-bys cut). An operator two others read is
    /// shown once, then named by its number.
    pub fn explain(&self) -> String {
        let mut out = String::new();
        let mut seen = Vec::new();
        self.explain_into(0, &mut seen, &mut out);
        out
    }

    fn explain_into(&self, depth: usize, seen: &mut Vec<*const Node>, out: &mut String) {
        use std::fmt::Write;
        let pad = "  ".repeat(depth);
        let ptr = std::sync::Arc::as_ptr(&self.node);
        if let Some(n) = seen.iter().position(|&p| p == ptr) {
            let _ = writeln!(out, "{pad}#{n} (above)");
            return;
        }
        seen.push(ptr);
        let n = seen.len() - 1;
        let line = match &self.node.op {
            Op::GroupBy { spec, .. } => format!("groupby {:?} {:?}", spec.keys, spec.aggs),
            Op::Map { spec, .. } => {
                let steps: Vec<String> = spec
                    .steps
                    .iter()
                    .map(|s| match s {
                        crate::spec::MapStep::Select(c) => format!("select {c:?}"),
                        crate::spec::MapStep::Filter(_) => "filter".to_string(),
                        crate::spec::MapStep::Assign(c, _) => format!("assign {c:?}"),
                        crate::spec::MapStep::Rename(p) => format!("rename {p:?}"),
                    })
                    .collect();
                format!("map [{}]", steps.join(", "))
            }
            Op::Join { spec, .. } => format!("merge {:?} on {:?}", spec.how, spec.on),
            _ => format!("{self:?}"),
        };
        let _ = writeln!(out, "{pad}#{n} {line}");
        for i in self.inputs() {
            i.explain_into(depth + 1, seen, out);
        }
    }

    /// The input of a map that only selects columns.
    pub(crate) fn select_only_input(&self) -> Option<DataFrame> {
        match &self.node.op {
            Op::Map { input, spec, values }
                if values.is_empty() && spec.steps.iter().all(|s| matches!(s, crate::spec::MapStep::Select(_))) =>
            {
                Some(input.clone())
            }
            _ => None,
        }
    }

    /// The frames this one is computed from (a map's lazy scalars and sets too).
    pub(crate) fn inputs(&self) -> Vec<DataFrame> {
        match &self.node.op {
            Op::Tensors(_) | Op::Local(_) | Op::ReadCsv(_) | Op::ReadParquet(_) => Vec::new(),
            Op::GroupBy { input, .. }
            | Op::GroupScan { input, .. }
            | Op::Sort { input, .. }
            | Op::Top { input, .. }
            | Op::Unique { input, .. }
            | Op::Explode { input, .. }
            | Op::Describe { input, .. } => vec![input.clone()],
            Op::Map { input, values, .. } => {
                std::iter::once(input.clone()).chain(values.iter().map(DataFrame::of_value)).collect()
            }
            Op::Join { left, right, .. } => vec![left.clone(), right.clone()],
            Op::Concat(parts) => parts.clone(),
        }
    }
}

/// The absolute path of an existing file: workers open it themselves, so it must not
/// depend on the driver's working directory.
fn absolute_file(path: &std::path::Path) -> Result<String> {
    let name = path.to_string_lossy().to_string();
    let io = |e: std::io::Error| FrameError::Io { path: name.clone(), source: e };
    if !std::fs::metadata(path).map_err(io)?.is_file() {
        return Err(FrameError::Invalid(format!("{name} is not a file")));
    }
    Ok(std::fs::canonicalize(path).map_err(io)?.to_string_lossy().to_string())
}

/// A frame column's dtype for a tensor's. Decision: 8- and 16-bit integers widen to
/// int32 (frames are built without polars' small integer types). Complex tensors have
/// no column type (`None`).
fn tensor_dtype(d: ares_tensor::DType) -> Option<DataType> {
    use ares_tensor::DType;
    Some(match d {
        DType::Bool => DataType::Boolean,
        DType::I8 | DType::I16 | DType::U8 | DType::U16 | DType::I32 => DataType::Int32,
        DType::I64 => DataType::Int64,
        DType::U32 => DataType::UInt32,
        DType::U64 => DataType::UInt64,
        DType::F32 => DataType::Float32,
        DType::F64 => DataType::Float64,
        DType::C64 | DType::C128 => return None,
    })
}

impl DataFrame {
    fn new(op: Op, schema: Vec<(String, DataType)>) -> DataFrame {
        DataFrame { node: Arc::new(Node { op, schema, computed: ares_tileable::Results::default() }) }
    }

    /// A frame whose columns are 1-d tensors of one length and one chunking (pandas'
    /// `DataFrame({name: array})`; Mars builds frames from tensors the same way).
    pub fn from_tensors(columns: &[(&str, &ares_tensor::Tensor)]) -> Result<DataFrame> {
        let Some((first, t0)) = columns.first() else {
            return Err(FrameError::Invalid("a frame needs at least one column".into()));
        };
        let mut schema = Vec::with_capacity(columns.len());
        for (name, t) in columns {
            if t.ndim() != 1 {
                return Err(FrameError::NotOneDimensional { name: name.to_string(), shape: t.shape().to_vec() });
            }
            if t.chunks()[0] != t0.chunks()[0] {
                return Err(FrameError::ChunkMismatch {
                    name: name.to_string(),
                    got: t.chunks()[0].clone(),
                    first: first.to_string(),
                    want: t0.chunks()[0].clone(),
                });
            }
            if schema.iter().any(|(n, _)| n == name) {
                return Err(FrameError::Invalid(format!("column {name:?} is given twice")));
            }
            let dtype = tensor_dtype(t.dtype()).ok_or_else(|| {
                FrameError::Invalid(format!(
                    "column {name:?} is {}: frames have no complex columns (pass its real and imag parts as two)",
                    t.dtype().name()
                ))
            })?;
            schema.push((name.to_string(), dtype));
        }
        let cols = columns.iter().map(|(n, t)| (n.to_string(), (*t).clone())).collect();
        Ok(DataFrame::new(Op::Tensors(cols), schema))
    }

    /// A CSV file with a header line (pandas' `read_csv`): the columns and their dtypes
    /// are inferred from its first 10 000 lines (or given in `options.dtypes`), missing
    /// values are pandas' default NA strings, and each chunk is a byte range of the file
    /// read by a task of its own. Only the columns an operation needs are parsed, and a
    /// filter (or any per-chunk step) on the frame runs in the reading task.
    pub fn read_csv(path: impl AsRef<std::path::Path>, options: &CsvOptions) -> Result<DataFrame> {
        let abs = absolute_file(path.as_ref())?;
        let mut schema: Vec<(String, Dtype)> = crate::csv::infer(&abs, options.separator)?
            .iter()
            .map(|(n, d)| (n.clone(), crate::csv::dtype_of(d)))
            .collect();
        for (c, d) in &options.dtypes {
            match schema.iter_mut().find(|(n, _)| n == c) {
                Some(e) => e.1 = *d,
                None => {
                    return Err(FrameError::UnknownColumn {
                        name: c.clone(),
                        have: schema.iter().map(|(n, _)| n.clone()).collect(),
                    });
                }
            }
        }
        let ranges = crate::csv::ranges(&abs, options.chunk_bytes)
            .map_err(|e| FrameError::Io { path: abs.clone(), source: e })?;
        let src = CsvSource { path: abs, separator: options.separator, ranges, schema: schema.clone() };
        let schema = schema.iter().map(|(n, d)| (n.clone(), d.to_polars())).collect();
        Ok(DataFrame::new(Op::ReadCsv(src), schema))
    }

    /// A Parquet file (pandas' `read_parquet`): a chunk per row group, each read by a
    /// task of its own. Only the columns an operation needs are read (their column chunks
    /// alone), and a filter (or any per-chunk step) on the frame runs in the reading task.
    pub fn read_parquet(path: impl AsRef<std::path::Path>) -> Result<DataFrame> {
        Self::read_parquet_columns(path, None)
    }

    /// Only `columns` of a Parquet file (all when `None`): a column of a type frames do
    /// not hold is refused only when it is asked for.
    pub fn read_parquet_columns(path: impl AsRef<std::path::Path>, columns: Option<&[String]>) -> Result<DataFrame> {
        let abs = absolute_file(path.as_ref())?;
        let (schema, rows) = crate::parquet::layout(&abs, columns)?;
        let mut groups = Vec::with_capacity(rows.len().max(1));
        let mut first = 0;
        for n in rows {
            groups.push((first, n));
            first += n;
        }
        if groups.is_empty() {
            groups.push((0, 0));
        }
        Ok(DataFrame::new(Op::ReadParquet(ParquetSource { path: abs, groups }), schema))
    }

    /// A frame from a polars frame in this process, `rows_per_chunk` rows per chunk.
    pub fn from_polars(df: polars::prelude::DataFrame, rows_per_chunk: usize) -> Result<DataFrame> {
        if rows_per_chunk == 0 {
            return Err(FrameError::Invalid("rows_per_chunk must be at least 1".into()));
        }
        let schema = df.columns().iter().map(|c| (c.name().to_string(), c.dtype().clone())).collect();
        let h = df.height();
        let chunks = if h == 0 {
            vec![df]
        } else {
            (0..h).step_by(rows_per_chunk).map(|s| df.slice(s as i64, rows_per_chunk.min(h - s))).collect()
        };
        Ok(DataFrame::new(Op::Local(chunks), schema))
    }

    /// This one-column frame as a value an expression uses, computed first: its one
    /// value (`Expr::Value`, a lazy scalar) or its values (`Expr::IsIn`).
    pub fn as_value(&self) -> Result<Value> {
        let schema = &self.node.schema;
        if schema.len() != 1 {
            return Err(FrameError::Invalid(format!(
                "a lazy scalar or set is a frame of one column, this one has {} ({:?})",
                schema.len(),
                self.columns()
            )));
        }
        if Dtype::of(&crate::zone::naive(&schema[0].1)).is_none() {
            return Err(FrameError::DType(format!("a lazy scalar or set of dtype {} is not supported", schema[0].1)));
        }
        Ok(Value::new(self.node.clone(), schema[0].1.clone()))
    }

    /// The frame a [`Value`] was made from.
    pub(crate) fn of_value(v: &Value) -> DataFrame {
        DataFrame { node: v.node.clone().downcast::<Node>().unwrap_or_else(|_| unreachable!("a Value holds a frame")) }
    }

    /// The dtype `e` has over this frame's columns, or why it cannot be computed here.
    pub fn dtype_of(&self, e: &Expr) -> Result<DataType> {
        e.dtype(&self.node.schema)
    }

    /// The column names.
    pub fn columns(&self) -> Vec<String> {
        self.node.schema.iter().map(|(n, _)| n.clone()).collect()
    }

    /// The column names, borrowed.
    fn column_names(&self) -> Vec<&str> {
        self.node.schema.iter().map(|(n, _)| n.as_str()).collect()
    }

    /// The columns' dtypes.
    pub fn dtypes(&self) -> Vec<DataType> {
        self.node.schema.iter().map(|(_, d)| d.clone()).collect()
    }

    pub(crate) fn dtype(&self, name: &str) -> Result<&DataType> {
        self.node
            .schema
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, d)| d)
            .ok_or_else(|| FrameError::UnknownColumn { name: name.to_string(), have: self.columns() })
    }
}
