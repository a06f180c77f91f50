//! CSV files read in byte ranges by worker tasks, with the columns an operation does not
//! need never parsed and filters run in the reading task, and frames written back.

mod common;

use std::path::PathBuf;

use ares_dataframe::polars::prelude::{
    Column, CsvWriter, DataFrame as PlFrame, IntoColumn, NamedFrom, ParquetReader, ParquetWriter, SerReader, SerWriter,
    Series,
};
use ares_dataframe::{Agg, CsvOptions, DataFrame, Dtype, FrameError, Session, col};
use common::{cluster, f64s, i64s};

struct Dir(PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const ROWS: usize = 20_000;

/// `a` (ints), `f` (floats, some missing), `s` (strings, some missing), and `bad`: ints
/// in the first 10 000 lines the dtypes are inferred from, then a word.
fn written(dir: &Dir) -> (PathBuf, PlFrame) {
    let f: Vec<Option<f64>> = (0..ROWS).map(|i| (i % 7 != 3).then_some(i as f64 / 8.0)).collect();
    let s: Vec<Option<String>> = (0..ROWS).map(|i| (i % 5 != 1).then(|| format!("w{}", i % 13))).collect();
    let bad: Vec<String> = (0..ROWS).map(|i| if i == 15_000 { "oops".into() } else { i.to_string() }).collect();
    let cols: Vec<Column> = vec![
        Series::new("a".into(), (0..ROWS as i64).collect::<Vec<_>>()).into_column(),
        Series::new("f".into(), f).into_column(),
        Series::new("s".into(), s).into_column(),
        Series::new("bad".into(), bad).into_column(),
    ];
    let mut df = PlFrame::new_infer_height(cols).unwrap();
    let path = dir.0.join("in.csv");
    let mut file = std::fs::File::create(&path).unwrap();
    CsvWriter::new(&mut file).include_header(true).finish(&mut df).unwrap();
    (path, df)
}

fn dir(name: &str) -> Dir {
    let d = Dir(std::env::temp_dir().join(format!("ares-csv-{name}-{}", std::process::id())));
    let _ = std::fs::remove_dir_all(&d.0);
    std::fs::create_dir_all(&d.0).unwrap();
    d
}

#[test]
fn a_csv_read_in_ranges_holds_every_row_and_pruned_columns_are_never_parsed() {
    cluster();
    let d = dir("read");
    let (path, local) = written(&d);
    let s = Session::new();
    let small = CsvOptions { chunk_bytes: 16 << 10, ..CsvOptions::default() };

    // Reading every column fails: `bad` was inferred as integers from the head.
    let all = DataFrame::read_csv(&path, &small).unwrap();
    let err = s.fetch(&all).unwrap_err().to_string();
    assert!(err.contains("dtype="), "{err}");

    // Without `bad`, nothing parses it: a projection, a filter in the reading task, and a
    // group-by over them all work.
    let picked = all.filter(col("a").ge(100) & col("f").not_na()).unwrap().select(&["a", "f", "s"]).unwrap();
    let got = s.fetch(&picked).unwrap();
    let want: Vec<usize> = (100..ROWS).filter(|i| i % 7 != 3).collect();
    assert_eq!(i64s(&got, "a"), want.iter().map(|&i| Some(i as i64)).collect::<Vec<_>>());
    assert_eq!(f64s(&got, "f"), want.iter().map(|&i| Some(i as f64 / 8.0)).collect::<Vec<_>>());
    let g = all.filter(col("a").lt(700)).unwrap().group_by(&["s"]).unwrap().agg(&[("a", Agg::Count)]).unwrap();
    let counts = s.fetch(&g).unwrap();
    let total: i64 = i64s(&counts, "a").into_iter().map(Option::unwrap).sum();
    assert_eq!(total as usize, (0..700).filter(|i| i % 5 != 1).count(), "rows with a present key");

    // Given its dtype, `bad` reads, and the whole file equals what was written.
    let opts = CsvOptions { dtypes: vec![("bad".into(), Dtype::String)], ..small };
    let whole = s.fetch(&DataFrame::read_csv(&path, &opts).unwrap()).unwrap();
    assert!(whole.equals_missing(&local), "{whole:?} vs {local:?}");
    ares::shutdown();
}

#[test]
fn frames_written_as_csv_read_back_the_same() {
    cluster();
    let d = dir("write");
    let (path, _) = written(&d);
    let s = Session::new();
    let opts =
        CsvOptions { chunk_bytes: 32 << 10, dtypes: vec![("bad".into(), Dtype::String)], ..CsvOptions::default() };
    let df = DataFrame::read_csv(&path, &opts).unwrap();
    let sorted = df.sort_values(&["f"], &[false]).unwrap();
    let out = d.0.join("out.csv");
    s.to_csv(&sorted, &out, b',').unwrap();
    let again = s.fetch(&DataFrame::read_csv(&out, &opts).unwrap()).unwrap();
    assert!(again.equals_missing(&s.fetch(&sorted).unwrap()));
    let text = std::fs::read_to_string(&out).unwrap();
    assert_eq!(text.lines().next(), Some("a,f,s,bad"), "one header line");
    assert_eq!(text.lines().count(), ROWS + 1);

    let err = DataFrame::read_csv(d.0.join("missing.csv"), &opts).unwrap_err();
    assert!(matches!(err, FrameError::Io { .. }) && err.to_string().contains("missing.csv"), "{err}");
    ares::shutdown();
}

/// `written`'s frame as a Parquet file of row groups of about 3000 rows, and the frame.
fn parquet_in(d: &Dir) -> (PathBuf, PlFrame) {
    let (_, mut local) = written(d);
    let path = d.0.join("in.parquet");
    ParquetWriter::new(std::fs::File::create(&path).unwrap())
        .with_row_group_size(Some(3000))
        .finish(&mut local)
        .unwrap();
    (path, local)
}

/// A copy of the Parquet file at `path`, as `broken.parquet` in `d`, with garbage over
/// the column chunks `garbled(first row of the group, column)` names.
fn garbled(d: &Dir, path: &PathBuf, garbled: impl Fn(i64, &str) -> bool) -> PathBuf {
    let mut bytes = std::fs::read(path).unwrap();
    let meta = ParquetReader::new(std::fs::File::open(path).unwrap()).get_metadata().unwrap().clone();
    let mut first_row = 0;
    for rg in &meta.row_groups {
        for name in ["a", "f", "s", "bad"].into_iter().filter(|name| garbled(first_row, name)) {
            for c in rg.columns_under_root_iter(name).unwrap() {
                let r = c.byte_range();
                bytes[r.start as usize..r.end as usize].fill(0xA5);
            }
        }
        first_row += rg.num_rows() as i64;
    }
    let broken = d.0.join("broken.parquet");
    std::fs::write(&broken, bytes).unwrap();
    broken
}

/// A filter read with the file skips the row groups whose recorded least and greatest
/// values rule it out: they are never read (their bytes are garbage here), and a filter
/// on a column a map step changed first is not checked against the file's values.
#[test]
fn row_groups_a_filter_rules_out_by_their_statistics_are_never_read() {
    cluster();
    let d = dir("parquet-stats");
    let (path, _) = parquet_in(&d);
    let s = Session::new();
    let changed = DataFrame::read_parquet(&path)
        .unwrap()
        .assign(&[("a", col("a") + 100_000i64)])
        .unwrap()
        .filter(col("a").gt(100_000i64))
        .unwrap();
    assert_eq!(s.fetch(&changed).unwrap().height(), ROWS - 1, "every group read: the filter is on a new a");

    // Every column chunk of the groups whose `a` are all 6000 or more made garbage.
    let broken = garbled(&d, &path, |first_row, _| first_row >= 6000);
    let df = DataFrame::read_parquet(&broken).unwrap();
    assert!(s.fetch(&df).is_err(), "the garbage groups are read when nothing rules them out");
    let low = df.filter(col("a").lt(5000i64) & col("f").gt(-1.0)).unwrap().select(&["a", "s"]).unwrap();
    let got = s.fetch(&low).unwrap();
    let want: Vec<Option<i64>> = (0..5000).filter(|i| i % 7 != 3).map(Some).collect();
    assert_eq!(i64s(&got, "a"), want);
    // The constant on the left, and a group-by above the read.
    let g = df.filter(ares_dataframe::lit(3000i64).ge(col("a"))).unwrap().group_by(&["s"]).unwrap();
    let n = s.fetch(&g.agg(&[("a", Agg::Count)]).unwrap()).unwrap();
    let keyed = (0..=3000).filter(|i| i % 5 != 1).count() as i64;
    assert_eq!(i64s(&n, "a").into_iter().map(Option::unwrap).sum::<i64>(), keyed, "rows with an s");
    // Nothing kept: one group is still read, and no row comes back.
    let none = df.filter(col("a").lt(-1i64)).unwrap().select(&["a"]).unwrap();
    assert_eq!(s.fetch(&none).unwrap().height(), 0);
    ares::shutdown();
}

#[test]
fn a_parquet_file_is_read_by_row_group_and_pruned_columns_are_never_read() {
    cluster();
    let d = dir("parquet");
    let (path, local) = parquet_in(&d);
    let s = Session::new();

    let df = DataFrame::read_parquet(&path).unwrap();
    let groups = ParquetReader::new(std::fs::File::open(&path).unwrap()).get_metadata().unwrap().row_groups.len();
    assert!(groups > 1 && format!("{df:?}").contains(&format!("{groups} row groups")), "{df:?}");
    assert!(s.fetch(&df).unwrap().equals_missing(&local), "every row and column read back");

    // Overwrite every column chunk of `bad` with garbage: reading it now fails, and a
    // projection, a filter in the reading task and a group-by that do not use it work.
    let broken = garbled(&d, &path, |_, name| name == "bad");
    let df = DataFrame::read_parquet(&broken).unwrap();
    assert!(s.fetch(&df).is_err(), "the corrupt column is read when asked for");
    let picked = df.filter(col("a").lt(5000)).unwrap().select(&["a", "s"]).unwrap();
    let got = s.fetch(&picked).unwrap();
    assert_eq!(i64s(&got, "a"), (0..5000).map(Some).collect::<Vec<_>>());
    let g = df.group_by(&["s"]).unwrap().agg(&[("f", Agg::Count)]).unwrap();
    let total: i64 = i64s(&s.fetch(&g).unwrap(), "f").into_iter().map(Option::unwrap).sum();
    let want = (0..ROWS).filter(|i| i % 5 != 1 && i % 7 != 3).count();
    assert_eq!(total as usize, want);

    // Written back as one file, a row group per chunk.
    let out = d.0.join("out.parquet");
    let sorted = DataFrame::read_parquet(&path).unwrap().sort_values(&["f"], &[true]).unwrap();
    s.to_parquet(&sorted, &out).unwrap();
    let again = ParquetReader::new(std::fs::File::open(&out).unwrap()).finish().unwrap();
    assert!(again.equals_missing(&s.fetch(&sorted).unwrap()));
    ares::shutdown();
}
