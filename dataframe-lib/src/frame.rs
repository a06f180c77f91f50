//! The lazy `DataFrame`: a node of the frame graph with a known schema, and the
//! operations that build new nodes. Nothing runs here; a `Session` runs frames.

use std::sync::Arc;

use polars::prelude::DataType;

use crate::error::{FrameError, Result};
use crate::expr::{Dtype, Expr, Scalar, col, fill_dtype};
use crate::spec::{Agg, GroupSpec, How, JoinSpec, MapSpec, MapStep, Method, SortSpec, TopSpec};

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
    /// A sort.
    Sort { input: DataFrame, spec: SortSpec },
    /// Per-chunk steps (projections, filters, new columns), fused into one task.
    Map { input: DataFrame, spec: MapSpec },
    /// First, last or top rows.
    Top { input: DataFrame, spec: TopSpec },
    /// Rows without duplicates of their `subset` values.
    Unique { input: DataFrame, subset: Vec<String>, method: Method },
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
            Op::Sort { .. } => "sort_values".to_string(),
            // Fused steps run as one task per chunk.
            Op::Map { spec, .. } => format!("map of {} fused steps", spec.steps.len()),
            Op::Top { .. } => "head/tail/nlargest".to_string(),
            Op::Unique { .. } => "drop_duplicates".to_string(),
            Op::Join { .. } => "merge".to_string(),
            Op::ReadCsv(src) => format!("read_csv({:?}, {} ranges)", src.path, src.ranges.len()),
            Op::ReadParquet(src) => format!("read_parquet({:?}, {} row groups)", src.path, src.groups.len()),
            Op::Describe { .. } => "describe".to_string(),
            Op::Concat(parts) => format!("concat of {} frames", parts.len()),
        };
        write!(f, "DataFrame({op}, columns {:?})", self.node.schema)
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

fn tensor_dtype(d: ares_tensor::DType) -> DataType {
    use ares_tensor::DType;
    match d {
        DType::Bool => DataType::Boolean,
        DType::I32 => DataType::Int32,
        DType::I64 => DataType::Int64,
        DType::F32 => DataType::Float32,
        DType::F64 => DataType::Float64,
    }
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
            schema.push((name.to_string(), tensor_dtype(t.dtype())));
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
        let abs = absolute_file(path.as_ref())?;
        let (schema, rows) = crate::parquet::layout(&abs)?;
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

    /// Groups rows by `keys` (pandas' `df.groupby(keys)`).
    pub fn group_by(&self, keys: &[&str]) -> Result<GroupBy> {
        if keys.is_empty() {
            return Err(FrameError::Invalid("groupby needs at least one key column".into()));
        }
        for k in keys {
            self.dtype(k)?;
        }
        let keys: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
        let selected = self.columns().into_iter().filter(|c| !keys.contains(c)).collect();
        Ok(GroupBy { frame: self.clone(), keys, selected, method: Method::Auto })
    }

    /// Rows sorted by `by` (pandas' `sort_values`): `ascending` has one flag per key, or
    /// one for all. Missing values go last, as pandas' default `na_position="last"`.
    pub fn sort_values(&self, by: &[&str], ascending: &[bool]) -> Result<DataFrame> {
        if by.is_empty() {
            return Err(FrameError::Invalid("sort_values needs at least one column".into()));
        }
        for k in by {
            let dt = self.dtype(k)?;
            if !(dt.is_primitive_numeric() || dt == &DataType::Boolean || dt == &DataType::String) {
                return Err(FrameError::DType(format!("sorting by column {k:?} of dtype {dt} is not supported yet")));
            }
        }
        let descending: Vec<bool> = match ascending {
            [] => vec![false; by.len()],
            [a] => vec![!a; by.len()],
            many if many.len() == by.len() => many.iter().map(|a| !a).collect(),
            many => {
                return Err(FrameError::Invalid(format!(
                    "ascending has {} flags for {} sort columns: give one, or one per column",
                    many.len(),
                    by.len()
                )));
            }
        };
        let spec = SortSpec { by: by.iter().map(|k| k.to_string()).collect(), descending };
        Ok(DataFrame::new(Op::Sort { input: self.clone(), spec }, self.node.schema.clone()))
    }

    /// A new map node: `self`'s map with more steps when `self` is a map node (so a chain
    /// of per-chunk operations runs as one task), else a map of `self`.
    fn map(&self, add: impl FnOnce(&mut MapSpec, &mut Vec<(String, DataType)>) -> Result<()>) -> Result<DataFrame> {
        let (input, mut spec) = match &self.node.op {
            Op::Map { input, spec } if spec.program.instrs.len() < MAX_FUSED_INSTRS => (input.clone(), spec.clone()),
            _ => (self.clone(), MapSpec::default()),
        };
        let mut schema = self.node.schema.clone();
        add(&mut spec, &mut schema)?;
        Ok(DataFrame::new(Op::Map { input, spec }, schema))
    }

    /// Only `columns`, in this order (pandas' `df[[c1, c2]]`).
    pub fn select(&self, columns: &[&str]) -> Result<DataFrame> {
        let mut schema = Vec::with_capacity(columns.len());
        for c in columns {
            if schema.iter().any(|(n, _): &(String, DataType)| n == c) {
                return Err(FrameError::Invalid(format!("column {c:?} is selected twice")));
            }
            schema.push((c.to_string(), self.dtype(c)?.clone()));
        }
        self.map(|spec, s| {
            spec.steps.push(MapStep::Select(columns.iter().map(|c| c.to_string()).collect()));
            *s = schema;
            Ok(())
        })
    }

    /// Without `columns` (pandas' `drop(columns=..)`).
    pub fn drop(&self, columns: &[&str]) -> Result<DataFrame> {
        for c in columns {
            self.dtype(c)?;
        }
        let keep: Vec<String> = self.columns().into_iter().filter(|c| !columns.contains(&c.as_str())).collect();
        self.select(&keep.iter().map(|c| c.as_str()).collect::<Vec<_>>())
    }

    /// Columns renamed `(from, to)` (pandas' `rename(columns={from: to})`).
    pub fn rename(&self, pairs: &[(&str, &str)]) -> Result<DataFrame> {
        let mut schema = self.node.schema.clone();
        for (from, to) in pairs {
            self.dtype(from)?;
            if from != to && schema.iter().any(|(n, _)| n == to) {
                return Err(FrameError::Invalid(format!(
                    "cannot rename {from:?} to {to:?}: the frame has a column {to:?}"
                )));
            }
            if let Some(e) = schema.iter_mut().find(|(n, _)| n == from) {
                e.0 = to.to_string();
            }
        }
        self.map(|spec, s| {
            spec.steps.push(MapStep::Rename(pairs.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()));
            *s = schema;
            Ok(())
        })
    }

    /// The rows where `mask` is true (pandas' `df[mask]`); a missing value counts as false.
    pub fn filter(&self, mask: Expr) -> Result<DataFrame> {
        let dt = mask.dtype(&self.node.schema)?;
        if dt != DataType::Boolean {
            return Err(FrameError::DType(format!("a filter needs a boolean expression, this one is {dt}")));
        }
        self.map(|spec, _| {
            let at = spec.program.push(&mask);
            spec.steps.push(MapStep::Filter(at));
            Ok(())
        })
    }

    /// Columns set to expressions, in order (pandas' `assign(name=expr)`): an existing
    /// column is replaced where it stands, a new one is appended; each expression sees
    /// the columns the ones before it set.
    pub fn assign(&self, columns: &[(&str, Expr)]) -> Result<DataFrame> {
        self.map(|spec, schema| {
            for (name, e) in columns {
                let dt = e.dtype(schema)?;
                let at = spec.program.push(e);
                spec.steps.push(MapStep::Assign(name.to_string(), at));
                match schema.iter_mut().find(|(n, _)| n == name) {
                    Some(entry) => entry.1 = dt,
                    None => schema.push((name.to_string(), dt)),
                }
            }
            Ok(())
        })
    }

    /// Columns converted to dtypes (pandas' `astype({column: dtype})`).
    pub fn astype(&self, types: &[(&str, Dtype)]) -> Result<DataFrame> {
        let cols: Vec<(&str, Expr)> = types.iter().map(|(c, d)| (*c, col(c).cast(*d))).collect();
        self.assign(&cols)
    }

    /// Missing values replaced by `value` in every column of a matching kind (numbers
    /// for a number, strings for a string, booleans for a boolean): pandas would make
    /// the other columns `object`; they are left as they are here.
    pub fn fillna(&self, value: impl Into<Scalar>) -> Result<DataFrame> {
        self.fillna_in(value, &self.column_names())
    }

    /// [`fillna`](Self::fillna) over `columns` only; the others (index labels, say) are
    /// kept as they are.
    pub fn fillna_in(&self, value: impl Into<Scalar>, columns: &[&str]) -> Result<DataFrame> {
        let v = value.into();
        let mut cols: Vec<(&str, Expr)> = Vec::new();
        for &c in columns {
            if fill_dtype(self.dtype(c)?, &v).is_some() {
                cols.push((c, col(c).fill_na(v.clone())));
            }
        }
        self.assign(&cols)
    }

    /// Missing values replaced per column (pandas' `fillna({column: value})`).
    pub fn fillna_columns(&self, values: &[(&str, Scalar)]) -> Result<DataFrame> {
        let cols: Vec<(&str, Expr)> = values.iter().map(|(c, v)| (*c, col(c).fill_na(v.clone()))).collect();
        self.assign(&cols)
    }

    /// Rows with missing values in `subset` (every column when empty) dropped.
    pub fn dropna(&self, subset: &[&str], how: DropNa) -> Result<DataFrame> {
        let all = self.columns();
        let cols: Vec<&str> =
            if subset.is_empty() { all.iter().map(|c| c.as_str()).collect() } else { subset.to_vec() };
        let mut keep: Option<Expr> = None;
        for c in cols {
            self.dtype(c)?;
            let present = col(c).not_na();
            keep = Some(match (keep, how) {
                (None, _) => present,
                (Some(k), DropNa::Any) => k & present,
                (Some(k), DropNa::All) => k | present,
            });
        }
        match keep {
            Some(k) => self.filter(k),
            None => Ok(self.clone()),
        }
    }

    /// Whether each value is missing (null, or NaN), column by column.
    pub fn isna(&self) -> Result<DataFrame> {
        self.isna_in(&self.column_names())
    }

    /// Whether each value is present.
    pub fn notna(&self) -> Result<DataFrame> {
        self.notna_in(&self.column_names())
    }

    /// [`isna`](Self::isna) of `columns`; the others (index labels, say) are kept as they
    /// are.
    pub fn isna_in(&self, columns: &[&str]) -> Result<DataFrame> {
        self.each_in(columns, Expr::is_na)
    }

    /// [`notna`](Self::notna) of `columns`; the others are kept as they are.
    pub fn notna_in(&self, columns: &[&str]) -> Result<DataFrame> {
        self.each_in(columns, Expr::not_na)
    }

    fn each_in(&self, columns: &[&str], f: impl Fn(Expr) -> Expr) -> Result<DataFrame> {
        let mut cols: Vec<(&str, Expr)> = Vec::with_capacity(columns.len());
        for &c in columns {
            self.dtype(c)?;
            cols.push((c, f(col(c))));
        }
        self.assign(&cols)
    }

    /// Named whole-frame aggregations (pandas' `agg({column: func})`): a frame of one row.
    pub fn agg(&self, aggs: &[(&str, Agg)]) -> Result<DataFrame> {
        GroupBy { frame: self.clone(), keys: Vec::new(), selected: Vec::new(), method: Method::Tree }.agg(aggs)
    }

    /// `agg` applied to every column (only the numeric ones when `numeric_only`), each
    /// result named as its column: pandas' `df.sum()` and the like, as a frame of one row
    /// rather than a Series indexed by column name.
    pub fn reduce(&self, agg: Agg, numeric_only: bool) -> Result<DataFrame> {
        let cols: Vec<(&str, Agg)> = self
            .node
            .schema
            .iter()
            .filter(|(_, d)| !numeric_only || d.is_primitive_numeric() || d == &DataType::Boolean)
            .map(|(n, _)| (n.as_str(), agg))
            .collect();
        self.agg(&cols)
    }

    /// `sum` of every column.
    pub fn sum(&self) -> Result<DataFrame> {
        self.reduce(Agg::Sum, false)
    }

    /// `mean` of every column.
    pub fn mean(&self) -> Result<DataFrame> {
        self.reduce(Agg::Mean, false)
    }

    /// `count` of every column's present values.
    pub fn count(&self) -> Result<DataFrame> {
        self.reduce(Agg::Count, false)
    }

    /// `min` of every column.
    pub fn min(&self) -> Result<DataFrame> {
        self.reduce(Agg::Min, false)
    }

    /// `max` of every column.
    pub fn max(&self) -> Result<DataFrame> {
        self.reduce(Agg::Max, false)
    }

    /// `std` (ddof=1) of every column.
    pub fn std(&self) -> Result<DataFrame> {
        self.reduce(Agg::Std, false)
    }

    /// `var` (ddof=1) of every column.
    pub fn var(&self) -> Result<DataFrame> {
        self.reduce(Agg::Var, false)
    }

    /// Distinct present values of every column (pandas' `nunique`): a frame of one row.
    /// Each column's count is its own duplicate removal and count; the one-row results
    /// are put side by side through a merge on a constant key.
    pub fn nunique(&self) -> Result<DataFrame> {
        const KEY: &str = "__ares_one";
        let mut out: Option<DataFrame> = None;
        for c in self.columns() {
            let one = self
                .select(&[&c])?
                .drop_duplicates(&[&c])?
                .agg(&[(&c, Agg::Count)])?
                .assign(&[(KEY, crate::expr::lit(0i64))])?;
            out = Some(match out {
                None => one,
                Some(acc) => acc.merge(&one, &[KEY], How::Inner)?,
            });
        }
        match out {
            Some(f) => f.drop(&[KEY]),
            None => Err(FrameError::Invalid("nunique of a frame without columns".into())),
        }
    }

    /// pandas' `describe()`: count, mean, std, min, 25%, 50%, 75% and max of every
    /// numeric column (booleans left out, as pandas does), one row each, named in a
    /// first column `statistic` (pandas' index). Percentiles are exact, interpolated as
    /// numpy's `percentile`; missing values are skipped.
    pub fn describe(&self) -> Result<DataFrame> {
        self.describe_percentiles(&[0.25, 0.5, 0.75])
    }

    /// `describe` with other percentiles (fractions in `[0, 1]`, listed in ascending
    /// order; as in pandas 3, only those given: pandas 2 also added the median).
    pub fn describe_percentiles(&self, percentiles: &[f64]) -> Result<DataFrame> {
        let columns: Vec<String> =
            self.node.schema.iter().filter(|(_, d)| d.is_primitive_numeric()).map(|(n, _)| n.clone()).collect();
        if columns.is_empty() {
            return Err(FrameError::DType(
                "describe summarises numeric columns and the frame has none (strings and booleans are not described)"
                    .into(),
            ));
        }
        if columns.iter().any(|c| c == "statistic") {
            return Err(FrameError::Invalid(
                "describe names its rows in a first column \"statistic\", and the frame has a column of that name: \
                 rename it first"
                    .into(),
            ));
        }
        if let Some(q) = percentiles.iter().find(|q| !(0.0..=1.0).contains(*q)) {
            return Err(FrameError::Invalid(format!("percentiles must lie between 0 and 1, got {q}")));
        }
        let mut qs = percentiles.to_vec();
        qs.sort_by(f64::total_cmp);
        if qs.windows(2).any(|w| w[0] == w[1]) {
            return Err(FrameError::Invalid("percentiles cannot contain duplicates".into()));
        }
        let mut schema = vec![("statistic".to_string(), DataType::String)];
        schema.extend(columns.iter().map(|c| (c.clone(), DataType::Float64)));
        Ok(DataFrame::new(Op::Describe { input: self.clone(), columns, percentiles: qs }, schema))
    }

    /// The rows of `frames` one after the other (pandas' `concat`, `axis=0`): every frame
    /// must have the same columns (in any order: the first frame's order is kept); a
    /// column of several numeric dtypes takes numpy's common one (int32 with int64 is
    /// int64, an integer with a float is float64). The result's chunks are the frames'
    /// chunks: nothing is copied.
    pub fn concat(frames: &[DataFrame]) -> Result<DataFrame> {
        let Some(first) = frames.first() else {
            return Err(FrameError::Invalid("concat needs at least one frame".into()));
        };
        let names = first.columns();
        let mut schema = first.node.schema.clone();
        for f in &frames[1..] {
            let mut theirs = f.columns();
            theirs.sort();
            let mut ours = names.clone();
            ours.sort();
            if theirs != ours {
                return Err(FrameError::Invalid(format!(
                    "concat: a frame has columns {:?} where the first has {:?}; give frames with the same columns",
                    f.columns(),
                    names
                )));
            }
            for (name, dt) in schema.iter_mut() {
                let other = f.dtype(name)?;
                if other == dt {
                    continue;
                }
                let num = |d: &DataType| d.is_primitive_numeric();
                *dt = match (num(dt), num(other)) {
                    (true, true) => crate::expr::arithmetic_dtype(crate::expr::BinOp::Add, dt, false, other, false)
                        .unwrap_or(DataType::Float64),
                    _ => {
                        return Err(FrameError::DType(format!(
                            "concat: column {name:?} is {dt} in one frame and {other} in another: astype one of them"
                        )));
                    }
                };
            }
        }
        let order: Vec<&str> = names.iter().map(|n| n.as_str()).collect();
        let mut parts = Vec::with_capacity(frames.len());
        for f in frames {
            let mut part = if f.columns() == names { f.clone() } else { f.select(&order)? };
            let casts: Vec<(&str, Dtype)> = schema
                .iter()
                .filter(|(n, d)| part.dtype(n).is_ok_and(|have| have != d))
                .filter_map(|(n, d)| crate::expr::Dtype::of(d).map(|d| (n.as_str(), d)))
                .collect();
            if !casts.is_empty() {
                part = part.astype(&casts)?;
            }
            parts.push(part);
        }
        Ok(DataFrame::new(Op::Concat(parts), schema))
    }

    fn top(&self, n: usize, tail: bool, order: Option<SortSpec>) -> DataFrame {
        let spec = TopSpec { n: n as u64, tail, order };
        DataFrame::new(Op::Top { input: self.clone(), spec }, self.node.schema.clone())
    }

    /// The first `n` rows.
    pub fn head(&self, n: usize) -> DataFrame {
        self.top(n, false, None)
    }

    /// The last `n` rows.
    pub fn tail(&self, n: usize) -> DataFrame {
        self.top(n, true, None)
    }

    fn order(&self, by: &[&str], descending: bool) -> Result<SortSpec> {
        if by.is_empty() {
            return Err(FrameError::Invalid("give at least one column to order by".into()));
        }
        for k in by {
            let dt = self.dtype(k)?;
            if !(dt.is_primitive_numeric() || dt == &DataType::Boolean) {
                return Err(FrameError::DType(format!("column {k:?} has dtype {dt}, not a number")));
            }
        }
        Ok(SortSpec { by: by.iter().map(|k| k.to_string()).collect(), descending: vec![descending; by.len()] })
    }

    /// The `n` rows with the largest values of `by`, largest first; ties keep the earlier
    /// row (pandas' `nlargest(n, by)`, `keep="first"`).
    pub fn nlargest(&self, n: usize, by: &[&str]) -> Result<DataFrame> {
        Ok(self.top(n, false, Some(self.order(by, true)?)))
    }

    /// The `n` rows with the smallest values of `by`, smallest first.
    pub fn nsmallest(&self, n: usize, by: &[&str]) -> Result<DataFrame> {
        Ok(self.top(n, false, Some(self.order(by, false)?)))
    }

    /// Rows whose `subset` values (every column when empty) appeared in an earlier row
    /// dropped (pandas' `drop_duplicates(keep="first")`). Few distinct rows: combined in
    /// a tree, in the frame's order; many: hash-partitioned, each partition in the
    /// frame's order (as Mars' and Dask's shuffle methods do).
    pub fn drop_duplicates(&self, subset: &[&str]) -> Result<DataFrame> {
        for c in subset {
            self.dtype(c)?;
        }
        let subset = if subset.is_empty() { self.columns() } else { subset.iter().map(|c| c.to_string()).collect() };
        Ok(DataFrame::new(Op::Unique { input: self.clone(), subset, method: Method::Auto }, self.node.schema.clone()))
    }

    /// `drop_duplicates` combined by a chosen method.
    pub fn drop_duplicates_by(&self, subset: &[&str], method: Method) -> Result<DataFrame> {
        let d = self.drop_duplicates(subset)?;
        let Op::Unique { input, subset, .. } = &d.node.op else { unreachable!("drop_duplicates makes a unique node") };
        Ok(DataFrame::new(Op::Unique { input: input.clone(), subset: subset.clone(), method }, d.node.schema.clone()))
    }

    /// How often each value of `column` occurs, most frequent first (pandas'
    /// `df[column].value_counts()`): columns `column` and `count`; missing values are not
    /// counted. Equal counts come in no set order.
    pub fn value_counts(&self, column: &str) -> Result<DataFrame> {
        let counts = self.group_by(&[column])?.agg_named(&[(column, Agg::Size, "count")])?;
        counts.sort_values(&["count"], &[false])
    }

    /// `self` merged with `right` on equal values of the `on` columns (pandas'
    /// `merge(right, on=.., how=..)`): the keys once, then the left's other columns, then
    /// the right's; a name on both sides becomes `name_x` and `name_y`. Missing keys match
    /// each other, as in pandas. A side of one chunk is sent whole to every chunk of the
    /// other (a broadcast join, in the other side's order); otherwise both sides are
    /// hash-partitioned by key (a shuffle join, rows in no set order).
    pub fn merge(&self, right: &DataFrame, on: &[&str], how: How) -> Result<DataFrame> {
        if on.is_empty() {
            return Err(FrameError::Invalid("merge needs at least one key column in `on`".into()));
        }
        let kind = |d: &DataType| {
            if d.is_integer() || d == &DataType::Boolean {
                "integer"
            } else if d.is_float() {
                "float"
            } else {
                "other"
            }
        };
        let mut schema = Vec::new();
        for k in on {
            let (l, r) = (self.dtype(k)?, right.dtype(k)?);
            if l != r && (kind(l) != kind(r) || kind(l) == "other") {
                return Err(FrameError::DType(format!(
                    "merge key {k:?} is {l} on the left and {r} on the right: astype one side to match"
                )));
            }
            let d = if l == r {
                l.clone()
            } else if l.is_float() {
                DataType::Float64
            } else {
                DataType::Int64
            };
            schema.push((k.to_string(), d));
        }
        let on: Vec<String> = on.iter().map(|k| k.to_string()).collect();
        let both: Vec<String> =
            self.columns().into_iter().filter(|c| !on.contains(c) && right.columns().contains(c)).collect();
        for (side, suffix) in [(self, "_x"), (right, "_y")] {
            for (n, d) in &side.node.schema {
                if on.contains(n) {
                    continue;
                }
                let name = if both.contains(n) { format!("{n}{suffix}") } else { n.clone() };
                schema.push((name, d.clone()));
            }
        }
        let spec = JoinSpec { on, how, both };
        Ok(DataFrame::new(Op::Join { left: self.clone(), right: right.clone(), spec }, schema))
    }
}

/// A frame grouped by key columns, and the columns to aggregate.
#[derive(Clone, Debug)]
pub struct GroupBy {
    frame: DataFrame,
    keys: Vec<String>,
    selected: Vec<String>,
    method: Method,
}

impl GroupBy {
    /// Aggregates only `columns` (pandas' `df.groupby(k)[[c1, c2]]`).
    pub fn select(mut self, columns: &[&str]) -> Result<GroupBy> {
        for c in columns {
            self.frame.dtype(c)?;
        }
        self.selected = columns.iter().map(|c| c.to_string()).collect();
        Ok(self)
    }

    /// Combines partials in a tree or by a shuffle (default: chosen from the first
    /// chunk's number of groups).
    pub fn method(mut self, m: Method) -> GroupBy {
        self.method = m;
        self
    }

    /// Each selected column aggregated by `agg`, named as the column.
    pub fn aggregate(&self, agg: Agg) -> Result<DataFrame> {
        let aggs: Vec<(String, Agg)> = self.selected.iter().map(|c| (c.clone(), agg)).collect();
        self.agg(&aggs.iter().map(|(c, a)| (c.as_str(), *a)).collect::<Vec<_>>())
    }

    /// `sum` of each selected column.
    pub fn sum(&self) -> Result<DataFrame> {
        self.aggregate(Agg::Sum)
    }

    /// `mean` of each selected column.
    pub fn mean(&self) -> Result<DataFrame> {
        self.aggregate(Agg::Mean)
    }

    /// `count` of each selected column's non-missing values.
    pub fn count(&self) -> Result<DataFrame> {
        self.aggregate(Agg::Count)
    }

    /// `min` of each selected column.
    pub fn min(&self) -> Result<DataFrame> {
        self.aggregate(Agg::Min)
    }

    /// `max` of each selected column.
    pub fn max(&self) -> Result<DataFrame> {
        self.aggregate(Agg::Max)
    }

    /// `std` (ddof=1) of each selected column.
    pub fn std(&self) -> Result<DataFrame> {
        self.aggregate(Agg::Std)
    }

    /// `var` (ddof=1) of each selected column.
    pub fn var(&self) -> Result<DataFrame> {
        self.aggregate(Agg::Var)
    }

    /// `first` present value of each selected column.
    pub fn first(&self) -> Result<DataFrame> {
        self.aggregate(Agg::First)
    }

    /// `last` present value of each selected column.
    pub fn last(&self) -> Result<DataFrame> {
        self.aggregate(Agg::Last)
    }

    /// Rows per group, in a column named `size` (pandas' `groupby(..).size()`).
    pub fn size(&self) -> Result<DataFrame> {
        self.agg_named(&[(&self.keys[0], Agg::Size, "size")])
    }

    /// Distinct present values of each selected column per group (pandas'
    /// `groupby(..).nunique()`), named as the column.
    pub fn nunique(&self) -> Result<DataFrame> {
        let named: Vec<(&str, &str)> = self.selected.iter().map(|c| (c.as_str(), c.as_str())).collect();
        self.nunique_named(&named)
    }

    /// `nunique` of `(column, output name)` pairs: per column, the rows without
    /// duplicates of (keys, column) counted per group; several columns' results merged on
    /// the keys, and sorted by them as every group-by result is.
    pub fn nunique_named(&self, columns: &[(&str, &str)]) -> Result<DataFrame> {
        if columns.is_empty() {
            return Err(FrameError::Invalid("nunique: no column to count".into()));
        }
        let keys: Vec<&str> = self.keys.iter().map(|k| k.as_str()).collect();
        let mut out: Option<DataFrame> = None;
        for (c, name) in columns {
            let mut cols = keys.clone();
            cols.push(c);
            let distinct = self.frame.select(&cols)?.drop_duplicates(&cols)?;
            let one = distinct.group_by(&keys)?.method(self.method).agg_named(&[(c, Agg::Count, name)])?;
            out = Some(match out {
                None => one,
                Some(acc) => acc.merge(&one, &keys, How::Inner)?,
            });
        }
        let out = out.expect("at least one column");
        if columns.len() > 1 { out.sort_values(&keys, &[true]) } else { Ok(out) }
    }

    /// Named aggregations (pandas' `agg({column: func})`): one output column per pair,
    /// named as the column when it is aggregated once, else `column_func`.
    pub fn agg(&self, aggs: &[(&str, Agg)]) -> Result<DataFrame> {
        let named: Vec<(&str, Agg, String)> = aggs
            .iter()
            .map(|(c, a)| {
                let once = aggs.iter().filter(|(x, _)| x == c).count() == 1;
                (*c, *a, if once { c.to_string() } else { format!("{c}_{}", a.name()) })
            })
            .collect();
        self.agg_named(&named.iter().map(|(c, a, n)| (*c, *a, n.as_str())).collect::<Vec<_>>())
    }

    /// Aggregations with the output column's name (pandas' named aggregation,
    /// `agg(out=(column, func))`).
    pub fn agg_named(&self, aggs: &[(&str, Agg, &str)]) -> Result<DataFrame> {
        if aggs.is_empty() {
            return Err(FrameError::Invalid("no aggregation given".into()));
        }
        let mut schema: Vec<(String, DataType)> = Vec::new();
        for k in &self.keys {
            schema.push((k.clone(), self.frame.dtype(k)?.clone()));
        }
        let mut names = Vec::with_capacity(aggs.len());
        for (c, a, name) in aggs {
            let dt = self.frame.dtype(c)?;
            let number = dt.is_primitive_numeric() || dt == &DataType::Boolean;
            let orderable = number || dt == &DataType::String || crate::expr::is_temporal(dt);
            if (a.numeric() && !number) || (matches!(a, Agg::Min | Agg::Max) && !orderable) {
                return Err(FrameError::DType(format!(
                    "{}: column {c:?} has dtype {dt}; select the numeric columns (or reduce with numeric_only)",
                    a.name()
                )));
            }
            if schema.iter().any(|(n, _)| n == name) {
                return Err(FrameError::Invalid(format!("two output columns would be named {name:?}")));
            }
            let out = match a {
                Agg::Mean | Agg::Std | Agg::Var => DataType::Float64,
                Agg::Count | Agg::Size => DataType::Int64,
                Agg::Sum if dt.is_integer() || dt == &DataType::Boolean => DataType::Int64,
                Agg::Sum => DataType::Float64,
                _ => dt.clone(),
            };
            schema.push((name.to_string(), out));
            names.push(name.to_string());
        }
        let spec = GroupSpec {
            keys: self.keys.clone(),
            aggs: aggs.iter().map(|(c, a, _)| (c.to_string(), *a)).collect(),
            names,
        };
        Ok(DataFrame::new(Op::GroupBy { input: self.frame.clone(), spec, method: self.method }, schema))
    }
}
