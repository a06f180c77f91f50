//! Parquet files as frames. `read_parquet` reads the file's footer in the driver (its
//! columns and row groups); each chunk is one row group, read by a task of its own with
//! only the columns an operation needs (their column chunks alone are read and decoded)
//! and a fused map applied to its rows. `to_parquet` writes one file, a row group per
//! chunk, from this process.

use polars::prelude::*;

/// A file's columns (names and dtypes) and the rows of each of its row groups.
pub(crate) type Layout = (Vec<(String, DataType)>, Vec<u64>);

/// The file's columns and the rows of each row group.
pub(crate) fn layout(path: &str) -> PolarsResult<Layout> {
    let open = || std::fs::File::open(path).map_err(|e| polars_err!(ComputeError: "{path}: {e}"));
    let mut reader = ParquetReader::new(open()?);
    let groups = reader.get_metadata()?.row_groups.iter().map(|rg| rg.num_rows() as u64).collect();
    let empty = ParquetReader::new(open()?).with_slice(Some((0, 0))).finish()?;
    let schema = empty.columns().iter().map(|c| (c.name().to_string(), c.dtype().clone())).collect();
    Ok((schema, groups))
}

/// Rows `[offset, offset + len)` (one row group) with the named columns.
pub(crate) fn read_rows(path: &str, offset: u64, len: u64, columns: &[String]) -> PolarsResult<DataFrame> {
    let f = std::fs::File::open(path).map_err(|e| polars_err!(ComputeError: "{path}: {e}"))?;
    ParquetReader::new(f)
        .with_columns(Some(columns.to_vec()))
        .with_slice(Some((offset as usize, len as usize)))
        .read_parallel(ParallelStrategy::None)
        .finish()
        .map_err(|e| polars_err!(ComputeError: "{path}, rows {offset}..{}: {e}", offset + len))
}
