//! `describe` (exact percentiles found in two passes) and `to_tensor` on a real embedded
//! cluster, against oracles computed in the test from the rows.

mod common;

use ares_dataframe::polars::prelude::{DataFrame as PlFrame, IntoColumn, NamedFrom, Series};
use ares_dataframe::{DataFrame, FrameError, Session, col};
use common::{cluster, f64s, frame, rows_strategy};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

/// numpy's `percentile(sorted, 100 q)` with the default linear method.
fn percentile(sorted: &[f64], q: f64) -> f64 {
    let pos = q * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    let t = pos - lo as f64;
    let (a, b) = (sorted[lo], sorted[hi]);
    if t >= 0.5 { b - (b - a) * (1.0 - t) } else { a + (b - a) * t }
}

/// pandas' describe of present values: count, mean, std, min, percentiles, max (NaN
/// where pandas gives NaN).
fn oracle(values: &[f64], qs: &[f64]) -> Vec<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let nan = f64::NAN;
    let mean = if n > 0 { v.iter().sum::<f64>() / n as f64 } else { nan };
    let std =
        if n > 1 { (v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1) as f64).sqrt() } else { nan };
    let mut out = vec![n as f64, mean, std, v.first().copied().unwrap_or(nan)];
    out.extend(qs.iter().map(|&q| if n > 0 { percentile(&v, q) } else { nan }));
    out.push(v.last().copied().unwrap_or(nan));
    out
}

fn same(got: &[Option<f64>], want: &[f64]) -> bool {
    got.len() == want.len()
        && got.iter().zip(want).all(|(g, w)| {
            let g = g.unwrap_or(f64::NAN);
            (g.is_nan() && w.is_nan()) || (g - w).abs() <= 1e-9 * (1.0 + w.abs())
        })
}

fn statistics(d: &PlFrame) -> Vec<String> {
    d.column("statistic").unwrap().str().unwrap().iter().map(|s| s.unwrap().to_string()).collect()
}

#[test]
fn describe_matches_pandas_on_random_frames_with_missing_values() {
    cluster();
    let s = Session::new();
    TestRunner::new(Config { cases: 16, ..Config::default() })
        .run(&(rows_strategy(), 1usize..60), |(rows, per_chunk)| {
            let df = DataFrame::from_polars(frame(&rows), per_chunk).unwrap();
            let d = s.fetch(&df.describe().unwrap()).unwrap();
            prop_assert_eq!(statistics(&d), ["count", "mean", "std", "min", "25%", "50%", "75%", "max"]);
            let qs = [0.25, 0.5, 0.75];
            let k1: Vec<f64> = rows.iter().filter_map(|r| r.0.map(|k| k as f64)).collect();
            let f: Vec<f64> = rows.iter().filter_map(|r| r.2).collect();
            let i: Vec<f64> = rows.iter().map(|r| r.3 as f64).collect();
            for (name, values) in [("k1", &k1), ("f", &f), ("i", &i)] {
                let (got, want) = (f64s(&d, name), oracle(values, &qs));
                prop_assert!(same(&got, &want), "{}: {:?} against {:?}", name, got, want);
            }
            Ok(())
        })
        .unwrap();
    ares::shutdown();
}

#[test]
fn describe_finds_exact_percentiles_in_chunks_larger_than_their_sketches() {
    cluster();
    let s = Session::new();
    // 300 000 rows in chunks of 37 000 (each far more than the 4096 points a chunk's
    // sketch keeps), many duplicates in `d`, a missing value in every 97th row of `x`.
    let n = 300_000i64;
    let x: Vec<Option<f64>> =
        (0..n).map(|i| (i % 97 != 0).then(|| ((i * 7919) % 100_003) as f64 / 7.0 - 5000.0)).collect();
    let d: Vec<i64> = (0..n).map(|i| (i * 31) % 5).collect();
    let local = PlFrame::new_infer_height(vec![
        Series::new("x".into(), x.clone()).into_column(),
        Series::new("d".into(), d.clone()).into_column(),
        Series::new("word".into(), vec!["a"; n as usize]).into_column(),
    ])
    .unwrap();
    let df = DataFrame::from_polars(local, 37_000).unwrap();
    let qs = [0.01, 0.333, 0.9];
    let got = s.fetch(&df.describe_percentiles(&[0.9, 0.01, 0.333]).unwrap()).unwrap();
    assert_eq!(statistics(&got), ["count", "mean", "std", "min", "1%", "33.3%", "90%", "max"]);
    assert_eq!(got.get_column_names().len(), 3, "the string column is not described");
    let xs: Vec<f64> = x.iter().flatten().copied().collect();
    let ds: Vec<f64> = d.iter().map(|&v| v as f64).collect();
    assert!(same(&f64s(&got, "x"), &oracle(&xs, &qs)), "{:?}", f64s(&got, "x"));
    assert!(same(&f64s(&got, "d"), &oracle(&ds, &qs)), "{:?}", f64s(&got, "d"));

    // A filtered frame is described as its rows (the map runs first).
    let kept = df.filter(col("x").gt(0.0)).unwrap();
    let got = s.fetch(&kept.describe().unwrap()).unwrap();
    let pos: Vec<f64> = xs.iter().copied().filter(|&v| v > 0.0).collect();
    assert!(same(&f64s(&got, "x"), &oracle(&pos, &[0.25, 0.5, 0.75])));

    let e = df.select(&["word"]).unwrap().describe().unwrap_err();
    assert!(matches!(e, FrameError::DType(_)), "{e}");
    let e = df.describe_percentiles(&[1.5]).unwrap_err();
    assert!(e.to_string().contains("between 0 and 1"), "{e}");
    let e = df.describe_percentiles(&[0.2, 0.2]).unwrap_err();
    assert!(e.to_string().contains("duplicates"), "{e}");
    let e = df.rename(&[("d", "statistic")]).unwrap().describe().unwrap_err();
    assert!(e.to_string().contains("rename"), "{e}");
    ares::shutdown();
}

#[test]
fn to_tensor_gives_the_rows_as_a_tensor_of_the_common_dtype() {
    cluster();
    let s = Session::new();
    let ts = ares_tensor::Session::new();
    let n = 1000usize;
    let local = PlFrame::new_infer_height(vec![
        Series::new("i".into(), (0..n as i64).collect::<Vec<_>>()).into_column(),
        Series::new("f".into(), (0..n).map(|v| Some(v as f64 / 4.0).filter(|_| v % 10 != 3)).collect::<Vec<_>>())
            .into_column(),
        Series::new("b".into(), (0..n).map(|v| v % 3 == 0).collect::<Vec<_>>()).into_column(),
        Series::new("w".into(), vec!["x"; n]).into_column(),
    ])
    .unwrap();
    let df = DataFrame::from_polars(local, 130).unwrap();
    let nums = df.select(&["i", "f", "b"]).unwrap();
    let t = s.to_tensor(&nums).unwrap();
    assert_eq!(t.shape(), [n as u64, 3]);
    assert_eq!(t.dtype(), ares_tensor::DType::F64);
    assert_eq!(t.chunks()[0], [130, 130, 130, 130, 130, 130, 130, 90]);
    let a = ts.fetch::<f64>(&t).unwrap();
    for r in 0..n {
        assert_eq!(a[[r, 0]], r as f64);
        if r % 10 == 3 {
            assert!(a[[r, 1]].is_nan(), "a missing float is NaN");
        } else {
            assert_eq!(a[[r, 1]], r as f64 / 4.0);
        }
        assert_eq!(a[[r, 2]], if r % 3 == 0 { 1.0 } else { 0.0 });
    }
    let ints = s.column_to_tensor(&df, "i").unwrap();
    assert_eq!((ints.shape(), ints.dtype()), (&[n as u64][..], ares_tensor::DType::I64));
    // The tensor computes like any other.
    assert_eq!(ts.scalar(&ints.sum()).unwrap(), (n * (n - 1) / 2) as f64);
    let flags = s.column_to_tensor(&df, "b").unwrap();
    assert_eq!(flags.dtype(), ares_tensor::DType::Bool);

    // float32 stays float32 alone, and meets int32 as float64 (numpy's promotion).
    let singles = df.astype(&[("f", ares_dataframe::Dtype::Float32)]).unwrap();
    assert_eq!(s.to_tensor(&singles.select(&["f"]).unwrap()).unwrap().dtype(), ares_tensor::DType::F32);
    let mixed = singles.astype(&[("i", ares_dataframe::Dtype::Int32)]).unwrap().select(&["f", "i"]).unwrap();
    assert_eq!(s.to_tensor(&mixed).unwrap().dtype(), ares_tensor::DType::F64);
    let e = s.to_tensor(&df).unwrap_err();
    assert!(matches!(e, FrameError::DType(_)) && e.to_string().contains("\"w\""), "{e}");
    // An integer tensor cannot hold a missing value: the task says which column.
    let holes = df.assign(&[("j", col("f").cast(ares_dataframe::Dtype::Int64))]).unwrap();
    let e = s.column_to_tensor(&holes, "j").unwrap_err();
    assert!(e.to_string().contains("missing values") && e.to_string().contains("\"j\""), "{e}");
    ares::shutdown();
}

#[test]
fn a_filtered_frames_column_as_a_tensor_and_back_as_a_frame_runs_as_one_graph() {
    cluster();
    let s = Session::new();
    let k = ares_tensor::random::randint(0, 5, &[10_000], &[2500], 1).unwrap();
    let f = ares_tensor::random::rand(&[10_000], &[2500], 2).unwrap();
    let df = DataFrame::from_tensors(&[("k", &k), ("f", &f)]).unwrap();
    let big = df.filter(col("f").gt(0.5)).unwrap();
    // Lazy: the filter, the conversion and the tensor's arithmetic are one graph, whose
    // row chunks are known once the conversions ran.
    let t = &big.column_values("f").unwrap() * 2.0;
    assert!(t.has_unknown_shape());
    let total = s.tensors().scalar(&t.sum()).unwrap();
    let want: f64 = {
        let rows = s.fetch(&big).unwrap();
        rows.column("f").unwrap().as_materialized_series().f64().unwrap().into_no_null_iter().map(|v| 2.0 * v).sum()
    };
    assert!((total - want).abs() <= 1e-9 * want.abs(), "{total} vs {want}");
    // And back: a frame of that tensor, summed as a frame (a new session: nothing cached).
    let back = DataFrame::from_tensors(&[("g", &t)]).unwrap();
    let fresh = Session::new();
    let sum = fresh.fetch(&back.sum().unwrap()).unwrap();
    let got = sum.column("g").unwrap().as_materialized_series().f64().unwrap().get(0).unwrap();
    assert!((got - want).abs() <= 1e-9 * want.abs(), "{got} vs {want}");
    ares::shutdown();
}
