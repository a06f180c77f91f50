//! CSV files as frames. `read_csv` infers the columns from the file's head in the driver
//! and splits the file into byte ranges, one chunk task each; a task reads only its range
//! (from the first line that starts in it to the end of the last one), parses only the
//! columns asked for (projection), and can apply a fused map to its rows (predicate
//! pushdown). `to_csv` has each chunk task format its rows and the driver append them
//! to one file in order.
//!
//! A quoted field holding a newline can straddle a range boundary; such files are not
//! split correctly (Dask's `read_csv` has the same limit), so they must be read as one
//! range (`rows_per_chunk`-free `chunk_bytes` larger than the file).

use std::io::{Cursor, Read, Seek, SeekFrom};
use std::sync::Arc;

use polars::prelude::*;

use crate::expr::Dtype;

/// pandas' default strings for a missing value.
const NA_VALUES: [&str; 19] = [
    "", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN", "<NA>", "N/A", "NA",
    "NULL", "NaN", "None", "n/a", "nan", "null",
];

/// Lines of the file's head the column dtypes are inferred from.
const INFER_LINES: usize = 10_000;

/// A column dtype a CSV column is parsed as.
pub(crate) fn dtype_of(d: &DataType) -> Dtype {
    match d {
        DataType::Boolean => Dtype::Bool,
        DataType::Int32 => Dtype::Int32,
        DataType::Int64 | DataType::Int8 | DataType::Int16 | DataType::UInt8 | DataType::UInt16 => Dtype::Int64,
        DataType::UInt32 => Dtype::UInt32,
        DataType::UInt64 => Dtype::UInt64,
        DataType::Float32 => Dtype::Float32,
        DataType::Float64 => Dtype::Float64,
        DataType::Date => Dtype::Date,
        DataType::Datetime(..) => Dtype::Datetime,
        _ => Dtype::String,
    }
}

fn options(separator: u8) -> CsvReadOptions {
    let na: Vec<PlSmallStr> = NA_VALUES.iter().map(|s| PlSmallStr::from(*s)).collect();
    CsvReadOptions::default().with_n_threads(Some(1)).with_rechunk(false).map_parse_options(|p| {
        p.with_separator(separator)
            .with_null_values(Some(NullValues::AllColumns(na.clone())))
            .with_missing_is_null(true)
    })
}

/// The columns (names and dtypes) of a CSV file with a header line, inferred from its
/// first lines, as pandas does from the whole file.
pub(crate) fn infer(path: &str, separator: u8) -> PolarsResult<Vec<(String, DataType)>> {
    // Only the head is parsed (polars would parse further than `n_rows`, and fail on a
    // later line that does not fit the inferred dtype: that is the tasks' to report).
    let err = |e: std::io::Error| polars_err!(ComputeError: "{path}: {e}");
    let mut head = Vec::new();
    let mut r = std::io::BufReader::new(std::fs::File::open(path).map_err(err)?);
    for _ in 0..=INFER_LINES {
        if std::io::BufRead::read_until(&mut r, b'\n', &mut head).map_err(err)? == 0 {
            break;
        }
    }
    let df = options(separator)
        .with_has_header(true)
        .with_infer_schema_length(Some(INFER_LINES))
        .into_reader_with_file_handle(Cursor::new(head))
        .finish()?;
    Ok(df.columns().iter().map(|c| (c.name().to_string(), dtype_of(c.dtype()).to_polars())).collect())
}

/// Byte ranges of about `chunk_bytes` covering the file (at least one).
pub(crate) fn ranges(path: &str, chunk_bytes: u64) -> std::io::Result<Vec<(u64, u64)>> {
    let len = std::fs::metadata(path)?.len();
    let step = chunk_bytes.max(1);
    let mut out: Vec<(u64, u64)> = (0..len.div_ceil(step)).map(|i| (i * step, ((i + 1) * step).min(len))).collect();
    if out.is_empty() {
        out.push((0, 0));
    }
    Ok(out)
}

/// The bytes of the lines that start in `[start, end)` of the file (the header line
/// left out when `header`).
fn lines(path: &str, start: u64, end: u64, header: bool) -> std::io::Result<Vec<u8>> {
    let mut f = std::fs::File::open(path)?;
    // A line starts at 0 or after a newline: from `start - 1`, skip to the first newline.
    let from = start.saturating_sub(1);
    f.seek(SeekFrom::Start(from))?;
    let mut buf = Vec::with_capacity((end - from) as usize + (64 << 10));
    (&mut f).take(end - from).read_to_end(&mut buf)?;
    // Finish the last line, which may run past `end`.
    if buf.last().is_some_and(|&b| b != b'\n') {
        let mut rest = std::io::BufReader::new(&mut f);
        let mut tail = Vec::new();
        std::io::BufRead::read_until(&mut rest, b'\n', &mut tail)?;
        buf.extend_from_slice(&tail);
    }
    let mut skip = 0;
    if start > 0 {
        // Byte `start - 1` is in the buffer: the first line begins after its newline.
        skip = buf.iter().position(|&b| b == b'\n').map_or(buf.len(), |p| p + 1);
    }
    if header && start == 0 {
        skip = buf.iter().position(|&b| b == b'\n').map_or(buf.len(), |p| p + 1);
    }
    // A range whose first line started before it holds nothing of its own when that
    // line also ends after it.
    if start > 0 && from + skip as u64 >= end {
        return Ok(Vec::new());
    }
    buf.drain(..skip);
    Ok(buf)
}

/// The rows of one range, with the columns at `projection` (indices into `schema`).
pub(crate) fn read_range(
    path: &str,
    range: (u64, u64),
    header: bool,
    separator: u8,
    schema: &[(String, Dtype)],
    projection: &[u32],
) -> PolarsResult<DataFrame> {
    let bytes = lines(path, range.0, range.1, header).map_err(|e| polars_err!(ComputeError: "{path}: {e}"))?;
    let full: Schema = schema.iter().map(|(n, d)| Field::new(n.as_str().into(), d.to_polars())).collect();
    if bytes.is_empty() {
        let cols: Vec<Column> = projection
            .iter()
            .map(|&i| {
                let (n, d) = &schema[i as usize];
                Column::new_empty(n.as_str().into(), &d.to_polars())
            })
            .collect();
        return DataFrame::new(0, cols);
    }
    options(separator)
        .with_has_header(false)
        .with_schema(Some(Arc::new(full)))
        .with_projection(Some(Arc::new(projection.iter().map(|&i| i as usize).collect())))
        .into_reader_with_file_handle(Cursor::new(bytes))
        .finish()
        .map_err(|e| {
            let cols: Vec<&str> = projection.iter().map(|&i| schema[i as usize].0.as_str()).collect();
            polars_err!(ComputeError: "{path}, bytes {}..{}, columns {cols:?}: {e} (if a column's dtype was inferred wrongly from the file's first lines, give it in dtype=)", range.0, range.1)
        })
}

/// `df`'s rows as CSV text, with the header line when `header`.
pub(crate) fn write(df: &mut DataFrame, header: bool, separator: u8) -> PolarsResult<Vec<u8>> {
    // Datetimes as pandas writes them: `2024-01-31 12:00:00`, an aware one's offset after.
    let times: Vec<usize> =
        (0..df.width()).filter(|&i| matches!(df.columns()[i].dtype(), DataType::Datetime(..))).collect();
    for i in times {
        let text = crate::temporal::datetime_text(df.columns()[i].as_materialized_series())?;
        df.replace_column(i, text.into_column())?;
    }
    let mut out = Vec::with_capacity(df.estimated_size());
    CsvWriter::new(&mut out).include_header(header).with_separator(separator).finish(df)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads `text` written to a file of its own with `read`, then removes the file.
    fn with_file<T>(text: &str, read: impl FnOnce(&str) -> T) -> T {
        let dir = std::env::temp_dir().join(format!("ares-csv-unit-{}-{}", std::process::id(), text.len()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.csv");
        std::fs::write(&path, text).unwrap();
        let out = read(path.to_str().unwrap());
        std::fs::remove_dir_all(&dir).unwrap();
        out
    }

    #[test]
    fn ranges_hold_each_line_once_whatever_the_split() {
        let mut text = String::from("a,b\n");
        for i in 0..200 {
            text.push_str(&format!("{i},{}\n", "x".repeat(i % 7)));
        }
        let schema = vec![("a".to_string(), Dtype::Int64), ("b".to_string(), Dtype::String)];
        with_file(&text, |p| {
            for step in [1u64, 2, 3, 7, 64, 1000, 10_000] {
                let mut seen = Vec::new();
                for r in ranges(p, step).unwrap() {
                    let df = read_range(p, r, true, b',', &schema, &[0]).unwrap();
                    seen.extend(df.column("a").unwrap().i64().unwrap().into_no_null_iter());
                }
                assert_eq!(seen, (0..200).collect::<Vec<i64>>(), "ranges of {step} bytes");
            }
        });
    }

    #[test]
    fn a_column_left_out_is_not_parsed() {
        let schema = vec![("a".to_string(), Dtype::Int64), ("b".to_string(), Dtype::Int64)];
        let df = with_file("a,b\n1,2\n3,oops\n5,6\n", |p| read_range(p, (0, 100), true, b',', &schema, &[0])).unwrap();
        assert_eq!(df.column("a").unwrap().i64().unwrap().into_no_null_iter().collect::<Vec<_>>(), [1, 3, 5]);
    }
}
