//! Parquet files as frames. `read_parquet` reads the file's footer in the driver (its
//! columns and row groups); each chunk is one row group, read by a task of its own with
//! only the columns an operation needs (their column chunks alone are read and decoded)
//! and a fused map applied to its rows. `to_parquet` writes one file, a row group per
//! chunk, from this process.

use polars::prelude::*;
use polars_arrow::datatypes::ArrowDataType as A;

use crate::error::FrameError;

/// A file's columns (names and dtypes) and the rows of each of its row groups.
pub(crate) type Layout = (Vec<(String, DataType)>, Vec<u64>);

/// The dtype a frame gives a Parquet column of Arrow type `t`, or `None` for a type
/// frames do not hold. Narrow integers widen to 32 bits and decimals become float64
/// (as the Python layer makes them from numpy); pandas would keep `int8`…, and make
/// decimals `object` columns of exact `Decimal`s.
fn frame_dtype(t: &A) -> Option<DataType> {
    Some(match t {
        A::Boolean => DataType::Boolean,
        A::Int8 | A::Int16 | A::Int32 => DataType::Int32,
        A::Int64 => DataType::Int64,
        A::UInt8 | A::UInt16 | A::UInt32 => DataType::UInt32,
        A::UInt64 => DataType::UInt64,
        A::Float32 => DataType::Float32,
        A::Float64 => DataType::Float64,
        A::Utf8 | A::LargeUtf8 | A::Utf8View => DataType::String,
        A::Date32 => DataType::Date,
        A::Timestamp(unit, None) => DataType::Datetime(unit.into(), None),
        A::Timestamp(unit, Some(tz)) if crate::zone::Zone::parse(tz).is_ok() => {
            crate::zone::with_zone(&DataType::Datetime(unit.into(), None), Some(tz.as_str()))
        }
        A::Decimal(p, _) | A::Decimal32(p, _) | A::Decimal64(p, _) if *p <= 38 => DataType::Float64,
        _ => return None,
    })
}

/// The file's columns and the rows of each row group. Only `columns` (all when `None`)
/// must be of types frames hold; another is refused naming it and its type.
pub(crate) fn layout(path: &str, columns: Option<&[String]>) -> crate::error::Result<Layout> {
    let mut reader = reader(path)?;
    let groups = reader.get_metadata()?.row_groups.iter().map(|rg| rg.num_rows() as u64).collect();
    let arrow = reader.schema()?;
    if let Some(cols) = columns
        && let Some(c) = cols.iter().find(|c| arrow.get(c.as_str()).is_none())
    {
        let have: Vec<String> = arrow.iter().map(|(n, _)| n.to_string()).collect();
        return Err(FrameError::UnknownColumn { name: c.clone(), have });
    }
    let mut schema = Vec::with_capacity(arrow.len());
    for (name, field) in arrow.iter() {
        if columns.is_some_and(|cols| !cols.iter().any(|c| c == name.as_str())) {
            continue;
        }
        match frame_dtype(field.dtype()) {
            Some(d) => schema.push((name.to_string(), d)),
            None => {
                return Err(FrameError::DType(format!(
                    "{path}: column {name:?} is of Parquet/Arrow type {:?}, which frames do not hold \
                     (they hold booleans, integers, floats, strings, dates, timestamps naive or in a \
                     known time zone, and decimals, read as float64): leave it out with columns=[...]",
                    field.dtype()
                )));
            }
        }
    }
    Ok((schema, groups))
}

/// A row group's least and greatest values of a column, when recorded.
pub(crate) type Bounds = Option<(Series, Series)>;

/// Per column of `columns`, each row group's least and greatest values as the frame
/// reads it (one value each, in its frame dtype), where the file records them (`None`:
/// unknown; no groups for a column the file has not, or of a type frames do not hold).
/// The footer is read once.
pub(crate) fn group_bounds(path: &str, columns: &[&str]) -> PolarsResult<Vec<Vec<Bounds>>> {
    let mut reader = reader(path)?;
    let arrow = reader.schema()?;
    let meta = reader.get_metadata()?.clone();
    Ok(columns.iter().map(|c| column_bounds(&meta, arrow.get(c), c)).collect())
}

/// One column's bounds per row group (see [`group_bounds`]).
fn column_bounds(
    meta: &polars::io::parquet::read::FileMetadata,
    field: Option<&polars_arrow::datatypes::Field>,
    column: &str,
) -> Vec<Bounds> {
    use polars::io::parquet::metadata::{ParquetStatistics, deserialize};
    let Some(field) = field else { return Vec::new() };
    let Some(dtype) = frame_dtype(field.dtype()) else { return Vec::new() };
    let mut out = Vec::with_capacity(meta.row_groups.len());
    for rg in &meta.row_groups {
        // INT96 timestamps (old Spark files) have no defined order for their statistics
        // (their physical type is named here: polars does not re-export the enum).
        let int96 = rg
            .columns_under_root_iter(column)
            .is_some_and(|mut cols| cols.any(|c| format!("{:?}", c.physical_type()) == "Int96"));
        if int96 {
            out.push(None);
            continue;
        }
        let stats =
            match rg.columns_under_root_iter(column).map(|mut cols| deserialize(field, &mut cols, &meta.footer_buf)) {
                Some(Ok(Some(ParquetStatistics::Column(c)))) => c.into_arrow().ok(),
                _ => None,
            };
        let bound = |a: Option<Box<dyn polars_arrow::array::Array>>| -> Option<Series> {
            let s = Series::from_arrow(column.into(), a?).ok()?;
            let s = if let DataType::Decimal(_, scale) = s.dtype() {
                decimal_floats(&s, *scale).ok()?
            } else {
                crate::zone::cast(&s.into_column(), &dtype).ok()?.take_materialized_series()
            };
            (s.len() == 1 && s.null_count() == 0).then_some(s)
        };
        out.push(stats.and_then(|st| Some((bound(st.min_value)?, bound(st.max_value)?))));
    }
    out
}

/// A reader of the file at `path` with its footer parsed once per process: each
/// row group's task would parse every group's metadata again (1.5% of TPC-H's samples
/// over lineitem's 53 groups). Keyed by the file's length and modification time, so a
/// rewritten file is parsed afresh.
fn reader(path: &str) -> PolarsResult<ParquetReader<std::fs::File>> {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    type Key = (String, u64, Option<std::time::SystemTime>);
    static FOOTERS: OnceLock<Mutex<HashMap<Key, polars::io::parquet::metadata::FileMetadataRef>>> = OnceLock::new();
    let f = std::fs::File::open(path).map_err(|e| polars_err!(ComputeError: "{path}: {e}"))?;
    let stat = f.metadata().map_err(|e| polars_err!(ComputeError: "{path}: {e}"))?;
    let key = (path.to_string(), stat.len(), stat.modified().ok());
    let footers = FOOTERS.get_or_init(Default::default);
    let known = footers.lock().unwrap_or_else(|e| e.into_inner()).get(&key).cloned();
    let mut reader = ParquetReader::new(f);
    match known {
        Some(meta) => reader.set_metadata(meta),
        None => {
            let meta = reader.get_metadata()?.clone();
            let mut map = footers.lock().unwrap_or_else(|e| e.into_inner());
            // A handful of files at a time are read; a bound, not an eviction policy.
            if map.len() >= 64 {
                map.clear();
            }
            map.insert(key, meta);
        }
    }
    Ok(reader)
}

/// Rows `[offset, offset + len)` (one row group) with the named columns, each of the
/// dtype [`layout`] gave it.
pub(crate) fn read_rows(path: &str, offset: u64, len: u64, columns: &[String]) -> PolarsResult<DataFrame> {
    let mut reader = reader(path)?;
    let arrow = reader.schema()?;
    let mut want = Vec::with_capacity(columns.len());
    for c in columns {
        let Some(field) = arrow.get(c.as_str()) else { polars_bail!(ColumnNotFound: "{path}: no column {c:?}") };
        let Some(d) = frame_dtype(field.dtype()) else {
            polars_bail!(ComputeError: "{path}: column {c:?} is of Arrow type {:?}, which frames do not hold", field.dtype())
        };
        want.push(d);
    }
    let mut df = reader
        .with_columns(Some(columns.to_vec()))
        .with_slice(Some((offset as usize, len as usize)))
        // By row groups: polars then skips the groups outside the slice. Its sequential
        // strategy decodes every earlier group with an empty filter, which made reading
        // the last of n groups cost n groups (the whole file, quadratic, over all tasks).
        .read_parallel(ParallelStrategy::RowGroups)
        .finish()
        .map_err(|e| polars_err!(ComputeError: "{path}, rows {offset}..{}: {e}", offset + len))?;
    for (c, d) in columns.iter().zip(&want) {
        let col = df.column(c)?;
        if col.dtype() != d {
            let cast = match col.dtype() {
                DataType::Decimal(_, scale) => decimal_floats(col.as_materialized_series(), *scale)?.into_column(),
                _ => crate::zone::cast(col, d)?,
            };
            df.with_column(cast)?;
        }
    }
    Ok(df)
}

/// A decimal column's values as float64: each unscaled integer divided by ten to the
/// scale (both exact in a float for the 15-digit decimals warehouses write, so the
/// quotient is correctly rounded). Converted in hardware when every integer of a chunk
/// fits 64 bits: a 128-bit integer's conversion is a software routine (5% of the cycles
/// of TPC-H's 22 queries), and a per-value choice between the two LLVM folds into that
/// routine for all, the results being equal.
fn decimal_floats(s: &Series, scale: usize) -> PolarsResult<Series> {
    use polars_arrow::array::PrimitiveArray;
    let div = 10f64.powi(scale as i32);
    let ints = s.decimal()?.physical();
    let chunks = ints.downcast_iter().map(|arr| {
        let vals = arr.values();
        let floats: Vec<f64> = if vals.iter().all(|&v| v as i64 as i128 == v) {
            vals.iter().map(|&v| v as i64 as f64 / div).collect()
        } else {
            vals.iter().map(|&v| v as f64 / div).collect()
        };
        PrimitiveArray::from_vec(floats).with_validity(arr.validity().cloned())
    });
    Ok(Float64Chunked::from_chunk_iter(s.name().clone(), chunks).into_series())
}
