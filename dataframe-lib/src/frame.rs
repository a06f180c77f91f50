//! The lazy `DataFrame`: a node of the frame graph with a known schema, and the
//! operations that build new nodes. Nothing runs here; a `Session` runs frames.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use polars::prelude::DataType;

use crate::error::{FrameError, Result};
use crate::spec::{Agg, GroupSpec, Method, SortSpec};

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
    pub(crate) computed: Mutex<HashMap<u64, Computed>>,
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
}

impl std::fmt::Debug for DataFrame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let op = match &self.node.op {
            Op::Tensors(_) => "from_tensors",
            Op::Local(_) => "from_polars",
            Op::GroupBy { .. } => "groupby",
            Op::Sort { .. } => "sort_values",
        };
        write!(f, "DataFrame({op}, columns {:?})", self.node.schema)
    }
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
        DataFrame { node: Arc::new(Node { op, schema, computed: Mutex::new(HashMap::new()) }) }
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

    /// The column names.
    pub fn columns(&self) -> Vec<String> {
        self.node.schema.iter().map(|(n, _)| n.clone()).collect()
    }

    /// The columns' dtypes.
    pub fn dtypes(&self) -> Vec<DataType> {
        self.node.schema.iter().map(|(_, d)| d.clone()).collect()
    }

    fn dtype(&self, name: &str) -> Result<&DataType> {
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
                return Err(FrameError::Invalid(format!("sorting by column {k:?} of dtype {dt} is not supported yet")));
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

    /// Named aggregations (pandas' `agg({column: func})`): one output column per pair,
    /// named as the column when it is aggregated once, else `column_func`.
    pub fn agg(&self, aggs: &[(&str, Agg)]) -> Result<DataFrame> {
        if aggs.is_empty() {
            return Err(FrameError::Invalid("no aggregation given".into()));
        }
        let mut schema: Vec<(String, DataType)> = Vec::new();
        for k in &self.keys {
            schema.push((k.clone(), self.frame.dtype(k)?.clone()));
        }
        let mut names = Vec::with_capacity(aggs.len());
        for (c, a) in aggs {
            let dt = self.frame.dtype(c)?;
            if !(dt.is_primitive_numeric() || dt == &DataType::Boolean) && *a != Agg::Count {
                return Err(FrameError::Invalid(format!("{}: column {c:?} has dtype {dt}, not a number", a.name())));
            }
            let once = aggs.iter().filter(|(x, _)| x == c).count() == 1;
            let name = if once { c.to_string() } else { format!("{c}_{}", a.name()) };
            let out = match a {
                Agg::Mean => DataType::Float64,
                Agg::Count => DataType::Int64,
                Agg::Sum if dt.is_integer() || dt == &DataType::Boolean => DataType::Int64,
                _ => dt.clone(),
            };
            schema.push((name.clone(), out));
            names.push(name);
        }
        let spec =
            GroupSpec { keys: self.keys.clone(), aggs: aggs.iter().map(|(c, a)| (c.to_string(), *a)).collect(), names };
        Ok(DataFrame::new(Op::GroupBy { input: self.frame.clone(), spec, method: self.method }, schema))
    }
}
