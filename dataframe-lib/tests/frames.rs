//! Frames on a real embedded cluster (worker processes, shared-memory store) against
//! oracles computed row by row in the test.

use std::collections::BTreeMap;

mod common;

use ares_dataframe::{Agg, DataFrame, FrameError, Method, Session};
use common::{Row, cluster, f64s, frame, i64s, methods, rows_strategy};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

type Key = (Option<i64>, Option<i64>);

/// pandas' groupby(["k1", "k2"]): missing keys dropped, groups sorted.
fn oracle(rows: &[Row]) -> BTreeMap<Key, (f64, usize, f64, f64, i64)> {
    let mut m: BTreeMap<Key, (f64, usize, f64, f64, i64)> = BTreeMap::new();
    for &(k1, k2, f, i) in rows {
        if k1.is_none() || k2.is_none() {
            continue;
        }
        let e = m.entry((k1, k2)).or_insert((0.0, 0, f64::INFINITY, f64::NEG_INFINITY, 0));
        if let Some(f) = f {
            e.0 += f;
            e.1 += 1;
            e.2 = e.2.min(f);
            e.3 = e.3.max(f);
        }
        e.4 += i;
    }
    m
}

#[test]
fn group_by_aggregations_match_the_oracle_by_tree_and_by_shuffle() {
    cluster();
    let s = Session::new();
    let strategy = (rows_strategy(), 1usize..80, methods());
    let mut runner = TestRunner::new(Config { cases: 24, ..Config::default() });
    runner
        .run(&strategy, |(rows, per_chunk, method)| {
            let df = DataFrame::from_polars(frame(&rows), per_chunk).unwrap();
            let g = df.group_by(&["k1", "k2"]).unwrap().method(method);
            let out = s
                .fetch(
                    &g.agg(&[
                        ("f", Agg::Sum),
                        ("f", Agg::Count),
                        ("f", Agg::Min),
                        ("f", Agg::Max),
                        ("f", Agg::Mean),
                        ("i", Agg::Sum),
                    ])
                    .unwrap(),
                )
                .unwrap();
            let want = oracle(&rows);
            prop_assert_eq!(out.height(), want.len());
            let keys: Vec<Key> = i64s(&out, "k1").into_iter().zip(i64s(&out, "k2")).collect();
            prop_assert_eq!(&keys, &want.keys().copied().collect::<Vec<_>>(), "groups, sorted");
            let (sum, count, min, max, mean, isum) = (
                f64s(&out, "f_sum"),
                i64s(&out, "f_count"),
                f64s(&out, "f_min"),
                f64s(&out, "f_max"),
                f64s(&out, "f_mean"),
                i64s(&out, "i"),
            );
            for (k, (key, w)) in want.iter().enumerate() {
                prop_assert_eq!(sum[k], Some(w.0), "sum of {:?}", key);
                prop_assert_eq!(count[k], Some(w.1 as i64), "count of {:?}", key);
                prop_assert_eq!(isum[k], Some(w.4), "int sum of {:?}", key);
                if w.1 == 0 {
                    // A group whose values are all missing: no min, max or mean.
                    prop_assert!(min[k].is_none() && max[k].is_none(), "min/max of {:?}", key);
                    prop_assert!(mean[k].is_none_or(|m| m.is_nan()), "mean of {:?}", key);
                } else {
                    prop_assert_eq!(min[k], Some(w.2));
                    prop_assert_eq!(max[k], Some(w.3));
                    prop_assert!((mean[k].unwrap() - w.0 / w.1 as f64).abs() < 1e-9);
                }
            }
            Ok(())
        })
        .unwrap();
    ares::shutdown();
}

#[test]
fn float_keys_and_sparse_integer_keys_group_like_dense_ones() {
    cluster();
    let s = Session::new();
    let strategy = (rows_strategy(), 1usize..80, methods());
    let mut runner = TestRunner::new(Config { cases: 12, ..Config::default() });
    runner
        .run(&strategy, |(rows, per_chunk, method)| {
            // Float keys go through polars' group-by; integer keys spread over ~4e9
            // values through the hash map instead of the dense table.
            let spread: Vec<Row> = rows.iter().map(|r| (r.0.map(|k| k * 100_000_007), r.1, r.2, r.3)).collect();
            for (key, data) in [("f", &rows), ("k1", &spread)] {
                let df = DataFrame::from_polars(frame(data), per_chunk).unwrap();
                let g = df.group_by(&[key]).unwrap().method(method).agg(&[("i", Agg::Sum), ("i", Agg::Count)]).unwrap();
                let out = s.fetch(&g).unwrap();
                let mut want: BTreeMap<i64, (i64, i64)> = BTreeMap::new();
                for r in data.iter() {
                    // Float keys are multiples of 0.25: 4× is an exact integer.
                    let k = if key == "f" { r.2.map(|f| (f * 4.0) as i64) } else { r.0 };
                    if let Some(k) = k {
                        let e = want.entry(k).or_insert((0, 0));
                        e.0 += r.3;
                        e.1 += 1;
                    }
                }
                let keys: Vec<i64> = f64s(&out, key)
                    .into_iter()
                    .map(|v| if key == "f" { (v.unwrap() * 4.0) as i64 } else { v.unwrap() as i64 })
                    .collect();
                prop_assert_eq!(&keys, &want.keys().copied().collect::<Vec<_>>());
                let sums: Vec<i64> = i64s(&out, "i_sum").into_iter().map(Option::unwrap).collect();
                let counts: Vec<i64> = i64s(&out, "i_count").into_iter().map(Option::unwrap).collect();
                prop_assert_eq!(sums, want.values().map(|v| v.0).collect::<Vec<_>>());
                prop_assert_eq!(counts, want.values().map(|v| v.1).collect::<Vec<_>>());
            }
            Ok(())
        })
        .unwrap();
    ares::shutdown();
}

#[test]
fn auto_chooses_a_tree_for_few_groups_and_a_shuffle_for_many() {
    cluster();
    let s = Session::new();
    // Over a million groups in all: fewer would go up a tree, whatever their share.
    let n = 1_200_000i64;
    let few: Vec<_> = (0..n).map(|r| (Some(r % 7), Some(0), Some(r as f64), r)).collect();
    let many: Vec<_> = (0..n).map(|r| (Some(r), Some(r % 3), Some(r as f64), r)).collect();
    for (rows, want, groups) in [(few, Method::Tree, 7), (many, Method::Shuffle, n as usize)] {
        let df = DataFrame::from_polars(frame(&rows), 300_000).unwrap();
        let g = df.group_by(&["k1"]).unwrap().select(&["f"]).unwrap().sum().unwrap();
        s.execute(&g).unwrap();
        assert_eq!(s.group_by_method(&g), Some(want));
        let out = s.fetch(&g).unwrap();
        assert_eq!(out.height(), groups);
        let total: f64 = f64s(&out, "f").into_iter().map(|v| v.unwrap()).sum();
        assert_eq!(total, (0..n).sum::<i64>() as f64);
    }
    ares::shutdown();
}

#[test]
fn sort_values_matches_a_stable_sort_with_missing_values_last() {
    cluster();
    let s = Session::new();
    let strategy = (rows_strategy(), 1usize..80, any::<bool>(), any::<bool>(), any::<bool>());
    let mut runner = TestRunner::new(Config { cases: 24, ..Config::default() });
    runner
        .run(&strategy, |(rows, per_chunk, two_keys, asc1, asc2)| {
            let df = DataFrame::from_polars(frame(&rows), per_chunk).unwrap();
            let (by, asc): (Vec<&str>, Vec<bool>) =
                if two_keys { (vec!["k1", "f"], vec![asc1, asc2]) } else { (vec!["f"], vec![asc1]) };
            let out = s.fetch(&df.sort_values(&by, &asc).unwrap()).unwrap();
            prop_assert_eq!(out.height(), rows.len());
            // The oracle: a stable sort of the rows, missing values last in each key.
            let mut want: Vec<usize> = (0..rows.len()).collect();
            let cmp = |a: Option<f64>, b: Option<f64>, ascending: bool| match (a, b) {
                (None, None) => std::cmp::Ordering::Equal,
                (None, _) => std::cmp::Ordering::Greater,
                (_, None) => std::cmp::Ordering::Less,
                (Some(x), Some(y)) => {
                    let o = x.total_cmp(&y);
                    if ascending { o } else { o.reverse() }
                }
            };
            want.sort_by(|&a, &b| {
                let (ra, rb) = (rows[a], rows[b]);
                if two_keys {
                    cmp(ra.0.map(|v| v as f64), rb.0.map(|v| v as f64), asc1).then(cmp(ra.2, rb.2, asc2))
                } else {
                    cmp(ra.2, rb.2, asc1)
                }
            });
            let (got_f, got_i) = (f64s(&out, "f"), i64s(&out, "i"));
            let want_f: Vec<Option<f64>> = want.iter().map(|&r| rows[r].2).collect();
            prop_assert_eq!(got_f, want_f);
            if two_keys {
                let want_k: Vec<Option<i64>> = want.iter().map(|&r| rows[r].0).collect();
                prop_assert_eq!(i64s(&out, "k1"), want_k);
            }
            // The rows travel whole: the multiset of (f, i) pairs is kept.
            let mut a: Vec<(Option<i64>, i64)> = f64s(&out, "f")
                .iter()
                .map(|v| v.map(|x| (x * 4.0) as i64))
                .zip(got_i.iter().map(|v| v.unwrap()))
                .collect();
            let mut b: Vec<(Option<i64>, i64)> = rows.iter().map(|r| (r.2.map(|x| (x * 4.0) as i64), r.3)).collect();
            a.sort();
            b.sort();
            prop_assert_eq!(a, b);
            Ok(())
        })
        .unwrap();
    ares::shutdown();
}

#[test]
fn frames_from_tensors_hold_the_tensors_values() {
    cluster();
    let s = Session::new();
    let ts = ares_tensor::Session::new();
    let k = ares_tensor::random::randint(0, 10, &[1000], &[300], 1).unwrap();
    let f = ares_tensor::random::rand(&[1000], &[300], 2).unwrap();
    let df = DataFrame::from_tensors(&[("k", &k), ("f", &f)]).unwrap();
    let out = s.fetch(&df).unwrap();
    let kf: Vec<i64> = ts.fetch::<i64>(&k).unwrap().iter().copied().collect();
    let ff: Vec<f64> = ts.fetch::<f64>(&f).unwrap().iter().copied().collect();
    assert_eq!(i64s(&out, "k"), kf.into_iter().map(Some).collect::<Vec<_>>());
    assert_eq!(f64s(&out, "f"), ff.into_iter().map(Some).collect::<Vec<_>>());
    let g = s.fetch(&df.group_by(&["k"]).unwrap().sum().unwrap()).unwrap();
    assert_eq!(g.height(), 10);
    ares::shutdown();
}

#[test]
fn bad_frames_are_refused_naming_the_problem() {
    let a = ares_tensor::random::rand(&[100], &[10], 1).unwrap();
    let b = ares_tensor::random::rand(&[100], &[20], 1).unwrap();
    let m = ares_tensor::random::rand(&[10, 10], &[5, 5], 1).unwrap();
    let err = DataFrame::from_tensors(&[("a", &a), ("b", &b)]).unwrap_err();
    assert!(matches!(err, FrameError::ChunkMismatch { .. }) && err.to_string().contains("chunk_size"), "{err}");
    let err = DataFrame::from_tensors(&[("m", &m)]).unwrap_err();
    assert!(matches!(err, FrameError::NotOneDimensional { .. }), "{err}");
    let df = DataFrame::from_tensors(&[("a", &a)]).unwrap();
    let err = df.group_by(&["nope"]).unwrap_err();
    assert!(err.to_string().contains("nope") && err.to_string().contains("\"a\""), "{err}");
    let err = df.sort_values(&["a"], &[true, false]).unwrap_err();
    assert!(err.to_string().contains("ascending"), "{err}");
}
