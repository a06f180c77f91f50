//! Column operations, reductions, row selections, duplicates and merges on a real
//! embedded cluster, against oracles computed row by row in the test, on random frames
//! with missing values, skewed keys, and one or many chunks.

mod common;

use std::collections::BTreeMap;

use ares_dataframe::polars::prelude::{DataFrame as PlFrame, DataType, IntoColumn, IntoSeries, NamedFrom, Series};
use ares_dataframe::{Agg, DataFrame, DropNa, Dtype, Expr, FrameError, How, Method, Session, col};
use common::{Row, cluster, f64s, frame, i64s, methods, rows_strategy};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

fn runner(cases: u32) -> TestRunner {
    TestRunner::new(Config { cases, ..Config::default() })
}

/// A float as an exact integer key (the test floats are multiples of 0.25).
fn q(f: Option<f64>) -> Option<i64> {
    f.map(|v| (v * 4.0) as i64)
}

#[test]
fn fused_filters_assignments_and_selections_match_row_by_row() {
    cluster();
    let s = Session::new();
    runner(16)
        .run(&(rows_strategy(), 1usize..60), |(rows, per_chunk)| {
            let df = DataFrame::from_polars(frame(&rows), per_chunk).unwrap();
            let out = df
                .filter(col("f").gt(0.0) | col("k1").is_na())
                .unwrap()
                .assign(&[("g", col("i") * 2 + col("f")), ("f", col("f").fill_na(-1.0)), ("neg", -col("i"))])
                .unwrap()
                .rename(&[("neg", "minus_i")])
                .unwrap()
                .select(&["g", "f", "i", "minus_i"])
                .unwrap();
            prop_assert!(format!("{out:?}").contains("map of 6 fused steps"), "{out:?}");
            let got = s.fetch(&out).unwrap();
            let kept: Vec<&Row> = rows.iter().filter(|r| r.2.is_some_and(|f| f > 0.0) || r.0.is_none()).collect();
            prop_assert_eq!(got.height(), kept.len());
            let want_g: Vec<Option<f64>> = kept.iter().map(|r| r.2.map(|f| (r.3 * 2) as f64 + f)).collect();
            let want_f: Vec<Option<f64>> = kept.iter().map(|r| Some(r.2.unwrap_or(-1.0))).collect();
            let want_m: Vec<Option<i64>> = kept.iter().map(|r| Some(-r.3)).collect();
            prop_assert_eq!(f64s(&got, "g"), want_g);
            prop_assert_eq!(f64s(&got, "f"), want_f);
            prop_assert_eq!(i64s(&got, "minus_i"), want_m);
            prop_assert_eq!(got.get_column_names().len(), 4);

            // dropna (any / all), isna, astype.
            let any = s.fetch(&df.dropna(&["k1", "f"], DropNa::Any).unwrap()).unwrap();
            prop_assert_eq!(any.height(), rows.iter().filter(|r| r.0.is_some() && r.2.is_some()).count());
            let all = s.fetch(&df.dropna(&["k1", "f"], DropNa::All).unwrap()).unwrap();
            prop_assert_eq!(all.height(), rows.iter().filter(|r| r.0.is_some() || r.2.is_some()).count());
            let na = s.fetch(&df.isna().unwrap()).unwrap();
            let na_f: Vec<Option<bool>> = na.column("f").unwrap().bool().unwrap().iter().collect();
            prop_assert_eq!(na_f, rows.iter().map(|r| Some(r.2.is_none())).collect::<Vec<_>>());
            // Limited to some columns (the Python layer keeps index labels out this way):
            // the others keep their values and dtypes.
            let some = s.fetch(&df.fillna_in(-1i64, &["k1"]).unwrap().isna_in(&["f"]).unwrap()).unwrap();
            prop_assert_eq!(i64s(&some, "k1"), rows.iter().map(|r| Some(r.0.unwrap_or(-1))).collect::<Vec<_>>());
            prop_assert_eq!(i64s(&some, "k2"), rows.iter().map(|r| r.1).collect::<Vec<_>>());
            prop_assert_eq!(some.column("k2").unwrap().dtype(), &DataType::Int64);
            let some_f: Vec<Option<bool>> = some.column("f").unwrap().bool().unwrap().iter().collect();
            prop_assert_eq!(some_f, rows.iter().map(|r| Some(r.2.is_none())).collect::<Vec<_>>());
            let cast = s.fetch(&df.astype(&[("i", Dtype::Float64)]).unwrap()).unwrap();
            prop_assert_eq!(cast.column("i").unwrap().dtype(), &DataType::Float64);
            prop_assert_eq!(f64s(&cast, "i"), rows.iter().map(|r| Some(r.3 as f64)).collect::<Vec<_>>());
            Ok(())
        })
        .unwrap();
    ares::shutdown();
}

/// pandas' std/var with ddof=1 of the present values.
fn var(v: &[f64]) -> Option<f64> {
    if v.len() < 2 {
        return None;
    }
    let m = v.iter().sum::<f64>() / v.len() as f64;
    Some(v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (v.len() - 1) as f64)
}

fn close(a: Option<f64>, b: Option<f64>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => (a - b).abs() <= 1e-9 * (1.0 + b.abs()),
        _ => false,
    }
}

#[test]
fn whole_frame_reductions_match_the_oracle() {
    cluster();
    let s = Session::new();
    runner(16)
        .run(&(rows_strategy(), 1usize..60), |(rows, per_chunk)| {
            let df = DataFrame::from_polars(frame(&rows), per_chunk).unwrap().select(&["f", "i"]).unwrap();
            let fs: Vec<f64> = rows.iter().filter_map(|r| r.2).collect();
            let is: Vec<i64> = rows.iter().map(|r| r.3).collect();
            let one = |d: DataFrame| s.fetch(&d).unwrap();
            let sum = one(df.sum().unwrap());
            prop_assert_eq!(sum.height(), 1);
            prop_assert_eq!(f64s(&sum, "f")[0], Some(fs.iter().sum::<f64>()));
            prop_assert_eq!(i64s(&sum, "i")[0], Some(is.iter().sum::<i64>()));
            let count = one(df.count().unwrap());
            prop_assert_eq!(i64s(&count, "f")[0], Some(fs.len() as i64));
            let (min, max) = (one(df.min().unwrap()), one(df.max().unwrap()));
            prop_assert_eq!(f64s(&min, "f")[0], fs.iter().copied().reduce(f64::min));
            prop_assert_eq!(i64s(&max, "i")[0], is.iter().copied().max());
            let mean = one(df.mean().unwrap());
            let want_mean = if fs.is_empty() { None } else { Some(fs.iter().sum::<f64>() / fs.len() as f64) };
            let got_mean = f64s(&mean, "f")[0].filter(|m| !m.is_nan());
            prop_assert!(close(got_mean, want_mean), "{:?} {:?}", got_mean, want_mean);
            let (v, sd) = (one(df.var().unwrap()), one(df.std().unwrap()));
            prop_assert!(close(f64s(&v, "f")[0], var(&fs)), "{:?} {:?}", f64s(&v, "f"), var(&fs));
            prop_assert!(close(f64s(&sd, "f")[0], var(&fs).map(f64::sqrt)));
            let ints: Vec<f64> = is.iter().map(|&i| i as f64).collect();
            prop_assert!(close(f64s(&v, "i")[0], var(&ints)));
            Ok(())
        })
        .unwrap();
    ares::shutdown();
}

#[test]
fn group_by_std_var_first_last_and_size_match_the_oracle_by_tree_and_by_shuffle() {
    cluster();
    let s = Session::new();
    let strategy = (rows_strategy(), 1usize..60, methods());
    runner(16)
        .run(&strategy, |(rows, per_chunk, method)| {
            let df = DataFrame::from_polars(frame(&rows), per_chunk).unwrap();
            let g = df.group_by(&["k1"]).unwrap().method(method);
            let out = s
                .fetch(
                    &g.agg_named(&[
                        ("f", Agg::Std, "sd"),
                        ("f", Agg::Var, "v"),
                        ("f", Agg::First, "first"),
                        ("f", Agg::Last, "last"),
                        ("f", Agg::Size, "n"),
                    ])
                    .unwrap(),
                )
                .unwrap();
            let mut want: BTreeMap<i64, Vec<Option<f64>>> = BTreeMap::new();
            for r in &rows {
                if let Some(k) = r.0 {
                    want.entry(k).or_default().push(r.2);
                }
            }
            prop_assert_eq!(i64s(&out, "k1"), want.keys().map(|&k| Some(k)).collect::<Vec<_>>());
            let (sd, v, first, last, n) =
                (f64s(&out, "sd"), f64s(&out, "v"), f64s(&out, "first"), f64s(&out, "last"), i64s(&out, "n"));
            for (g, (k, vals)) in want.iter().enumerate() {
                let present: Vec<f64> = vals.iter().flatten().copied().collect();
                prop_assert!(close(v[g], var(&present)), "var of {}: {:?} {:?}", k, v[g], var(&present));
                prop_assert!(close(sd[g], var(&present).map(f64::sqrt)), "std of {}", k);
                prop_assert_eq!(first[g], present.first().copied(), "first of {}", k);
                prop_assert_eq!(last[g], present.last().copied(), "last of {}", k);
                prop_assert_eq!(n[g], Some(vals.len() as i64), "size of {}", k);
            }
            Ok(())
        })
        .unwrap();
    ares::shutdown();
}

#[test]
fn head_tail_and_top_rows_match_the_oracle() {
    cluster();
    let s = Session::new();
    runner(16)
        .run(&(rows_strategy(), 1usize..40, 0usize..12), |(rows, per_chunk, n)| {
            let df = DataFrame::from_polars(frame(&rows), per_chunk).unwrap();
            let ids = |d: &PlFrame| i64s(d, "i").into_iter().map(Option::unwrap).collect::<Vec<_>>();
            let all: Vec<i64> = rows.iter().map(|r| r.3).collect();
            prop_assert_eq!(ids(&s.fetch(&df.head(n)).unwrap()), all[..n.min(all.len())].to_vec());
            prop_assert_eq!(ids(&s.fetch(&df.tail(n)).unwrap()), all[all.len().saturating_sub(n)..].to_vec());
            // nlargest by i: a stable sort, largest first, ties in row order.
            let mut order: Vec<usize> = (0..rows.len()).collect();
            order.sort_by_key(|&r| std::cmp::Reverse(rows[r].3));
            let top = s.fetch(&df.nlargest(n, &["i"]).unwrap()).unwrap();
            let want: Vec<Option<f64>> = order.iter().take(n).map(|&r| rows[r].2).collect();
            prop_assert_eq!(f64s(&top, "f"), want, "nlargest keeps the first of equal rows");
            // nsmallest by f: rows without f left out.
            let mut present: Vec<&Row> = rows.iter().filter(|r| r.2.is_some()).collect();
            present.sort_by(|a, b| a.2.unwrap().total_cmp(&b.2.unwrap()));
            let low = s.fetch(&df.nsmallest(n, &["f"]).unwrap()).unwrap();
            let want: Vec<i64> = present.iter().take(n).map(|r| r.3).collect();
            prop_assert_eq!(ids(&low), want);
            Ok(())
        })
        .unwrap();
    ares::shutdown();
}

#[test]
fn drop_duplicates_and_value_counts_match_the_oracle() {
    cluster();
    let s = Session::new();
    let strategy = (rows_strategy(), 1usize..60, methods());
    runner(16)
        .run(&strategy, |(rows, per_chunk, method)| {
            let df = DataFrame::from_polars(frame(&rows), per_chunk).unwrap();
            let out = s.fetch(&df.drop_duplicates_by(&["k1", "k2"], method).unwrap()).unwrap();
            // The first row of each (k1, k2), missing values equal to each other.
            let mut seen = std::collections::HashSet::new();
            let want: Vec<i64> = rows.iter().filter(|r| seen.insert((r.0, r.1))).map(|r| r.3).collect();
            let mut got: Vec<(Option<i64>, Option<i64>, i64)> = i64s(&out, "k1")
                .into_iter()
                .zip(i64s(&out, "k2"))
                .zip(i64s(&out, "i"))
                .map(|((a, b), i)| (a, b, i.unwrap()))
                .collect();
            if method == Method::Tree || rows.len() <= per_chunk {
                let got_i: Vec<i64> = got.iter().map(|g| g.2).collect();
                prop_assert_eq!(got_i, want, "a tree keeps the frame's order");
            } else {
                let mut seen = std::collections::HashSet::new();
                let mut w: Vec<(Option<i64>, Option<i64>, i64)> =
                    rows.iter().filter(|r| seen.insert((r.0, r.1))).map(|r| (r.0, r.1, r.3)).collect();
                w.sort();
                got.sort();
                prop_assert_eq!(got, w);
            }

            let vc = s.fetch(&df.value_counts("k2").unwrap()).unwrap();
            let mut want: BTreeMap<i64, i64> = BTreeMap::new();
            for r in &rows {
                if let Some(k) = r.1 {
                    *want.entry(k).or_default() += 1;
                }
            }
            let counts: Vec<i64> = i64s(&vc, "count").into_iter().map(Option::unwrap).collect();
            prop_assert!(counts.windows(2).all(|w| w[0] >= w[1]), "most frequent first: {:?}", counts);
            let got: BTreeMap<i64, i64> = i64s(&vc, "k2").into_iter().map(Option::unwrap).zip(counts).collect();
            prop_assert_eq!(got, want);
            Ok(())
        })
        .unwrap();
    ares::shutdown();
}

/// `(k1, f, j)` rows of a right-hand frame.
type Right = (Option<i64>, Option<f64>, i64);

fn right_frame(rows: &[Right]) -> PlFrame {
    PlFrame::new_infer_height(vec![
        Series::new("k1".into(), rows.iter().map(|r| r.0).collect::<Vec<_>>()).into_column(),
        Series::new("f".into(), rows.iter().map(|r| r.1).collect::<Vec<_>>()).into_column(),
        Series::new("j".into(), rows.iter().map(|r| r.2).collect::<Vec<_>>()).into_column(),
    ])
    .unwrap()
}

/// One merged row: k1, f_x (×4), i, f_y (×4), j.
type Joined = (Option<i64>, Option<i64>, Option<i64>, Option<i64>, Option<i64>);

#[test]
fn merges_match_a_nested_loop_join_broadcast_and_shuffled() {
    cluster();
    let s = Session::new();
    let right_rows = prop::collection::vec(
        (prop_oneof![4 => (0i64..30).prop_map(Some), 1 => Just(None)], prop::option::of(-8i32..8), -9i64..9),
        0..80,
    )
    .prop_map(|v| v.into_iter().map(|(k, f, j)| (k, f.map(|f| f as f64 / 4.0), j)).collect::<Vec<Right>>());
    let how = prop_oneof![Just(How::Inner), Just(How::Left), Just(How::Right), Just(How::Outer)];
    runner(24)
        .run(&(rows_strategy(), right_rows, 1usize..50, 1usize..100, how), |(left, right, lc, rc, how)| {
            let l = DataFrame::from_polars(frame(&left), lc).unwrap();
            let r = DataFrame::from_polars(right_frame(&right), rc).unwrap();
            let m = l.merge(&r, &["k1"], how).unwrap();
            let out = s.fetch(&m).unwrap();
            prop_assert_eq!(
                out.get_column_names().iter().map(|c| c.as_str()).collect::<Vec<_>>(),
                ["k1", "k2", "f_x", "i", "f_y", "j"]
            );
            let mut want: Vec<Joined> = Vec::new();
            let mut right_used = vec![false; right.len()];
            for a in &left {
                let mut matched = false;
                for (ri, b) in right.iter().enumerate() {
                    if a.0 == b.0 {
                        matched = true;
                        right_used[ri] = true;
                        want.push((a.0, q(a.2), Some(a.3), q(b.1), Some(b.2)));
                    }
                }
                if !matched && matches!(how, How::Left | How::Outer) {
                    want.push((a.0, q(a.2), Some(a.3), None, None));
                }
            }
            if matches!(how, How::Right | How::Outer) {
                for (b, used) in right.iter().zip(&right_used) {
                    if !used {
                        want.push((b.0, None, None, q(b.1), Some(b.2)));
                    }
                }
            }
            let mut got: Vec<Joined> = i64s(&out, "k1")
                .into_iter()
                .zip(f64s(&out, "f_x"))
                .zip(i64s(&out, "i"))
                .zip(f64s(&out, "f_y"))
                .zip(i64s(&out, "j"))
                .map(|((((k, fx), i), fy), j)| (k, q(fx), i, q(fy), j))
                .collect();
            // A broadcast inner or left join keeps the left's order exactly, as pandas.
            let broadcast = s.group_by_method(&m) == Some(Method::Broadcast);
            if broadcast && matches!(how, How::Inner | How::Left) && right.len() <= rc {
                prop_assert_eq!(&got, &want, "left order");
            }
            got.sort();
            want.sort();
            prop_assert_eq!(got, want);
            Ok(())
        })
        .unwrap();
    ares::shutdown();
}

#[test]
fn strings_and_dates_filter_and_derive_columns() {
    cluster();
    let s = Session::new();
    // Days since 1970-01-01 and their calendar dates.
    let days: [(i32, (i32, i32, i32)); 6] = [
        (0, (1970, 1, 1)),
        (-1, (1969, 12, 31)),
        (11_016, (2000, 2, 29)),
        (19_723, (2024, 1, 1)),
        (19_998, (2024, 10, 2)),
        (-719_162, (1, 1, 1)),
    ];
    let words = ["apple", "grape", "banana", "date pie", "avocado", "apple tree"];
    let date = Series::new("d".into(), days.iter().map(|d| d.0).collect::<Vec<_>>()).cast(&DataType::Date).unwrap();
    // Microseconds: nanoseconds since 1970 do not reach year 1.
    let us: Vec<i64> = days.iter().map(|d| d.0 as i64 * 86_400_000_000 + 3_600_000_000).collect();
    let stamp = Series::new("t".into(), us)
        .cast(&DataType::Datetime(ares_dataframe::polars::prelude::TimeUnit::Microseconds, None))
        .unwrap();
    let local = PlFrame::new_infer_height(vec![
        Series::new("w".into(), words.to_vec()).into_column(),
        date.into_column(),
        stamp.into_series().into_column(),
    ])
    .unwrap();
    let df = DataFrame::from_polars(local, 2).unwrap();
    let out = df
        .assign(&[
            ("y", col("d").year()),
            ("m", col("d").month()),
            ("day", col("t").day()),
            ("len", col("w").str_len()),
            ("a", col("w").str_starts_with("a")),
        ])
        .unwrap();
    let got = s.fetch(&out).unwrap();
    assert_eq!(i64s(&got, "y"), days.iter().map(|d| Some(d.1.0 as i64)).collect::<Vec<_>>());
    assert_eq!(i64s(&got, "m"), days.iter().map(|d| Some(d.1.1 as i64)).collect::<Vec<_>>());
    assert_eq!(i64s(&got, "day"), days.iter().map(|d| Some(d.1.2 as i64)).collect::<Vec<_>>());
    assert_eq!(i64s(&got, "len"), words.iter().map(|w| Some(w.len() as i64)).collect::<Vec<_>>());
    let matched = s.fetch(&df.filter(col("w").str_contains("^a.*e$")).unwrap()).unwrap();
    let w: Vec<&str> = matched.column("w").unwrap().str().unwrap().iter().flatten().collect();
    assert_eq!(w, ["apple", "apple tree"]);
    let lit = s.fetch(&df.filter(col("w").str_contains_literal("e p")).unwrap()).unwrap();
    assert_eq!(lit.height(), 1);
    let late = s.fetch(&df.filter(col("d").year().ge(2000) & !col("w").str_ends_with("pie")).unwrap()).unwrap();
    assert_eq!(late.height(), 2);
    ares::shutdown();
}

#[test]
fn bad_operations_are_refused_before_anything_runs() {
    let df = DataFrame::from_polars(frame(&[(Some(1), Some(2), Some(0.5), 3)]), 1).unwrap();
    let e = df.filter(col("i") + 1).unwrap_err();
    assert!(e.to_string().contains("boolean"), "{e}");
    let e = df.filter(col("nope").gt(1)).unwrap_err();
    assert!(matches!(e, FrameError::UnknownColumn { .. }), "{e}");
    let e = df.isna_in(&["i", "nope"]).unwrap_err();
    assert!(matches!(e, FrameError::UnknownColumn { .. }), "{e}");
    let e = df.fillna_in(0.0, &["nope"]).unwrap_err();
    assert!(matches!(e, FrameError::UnknownColumn { .. }), "{e}");
    let e = df.assign(&[("x", col("i") & col("f"))]).unwrap_err();
    assert!(e.to_string().contains("boolean operands"), "{e}");
    let e = df.rename(&[("i", "f")]).unwrap_err();
    assert!(e.to_string().contains("has a column \"f\""), "{e}");
    let words = PlFrame::new_infer_height(vec![Series::new("k1".into(), ["a"]).into_column()]).unwrap();
    let words = DataFrame::from_polars(words, 1).unwrap();
    let e = df.merge(&words, &["k1"], How::Inner).unwrap_err();
    assert!(e.to_string().contains("astype"), "{e}");
    let e = words.mean().unwrap_err();
    assert!(e.to_string().contains("numeric"), "{e}");
    let e = df.nlargest(2, &[]).unwrap_err();
    assert!(e.to_string().contains("at least one"), "{e}");
}

#[test]
fn nan_sorts_last_like_a_missing_value_in_both_directions() {
    cluster();
    let s = Session::new();
    let f = [Some(1.0), Some(f64::NAN), None, Some(-3.0), Some(f64::NAN), Some(2.0), Some(0.0)];
    let local = PlFrame::new_infer_height(vec![
        Series::new("f".into(), f.to_vec()).into_column(),
        Series::new("i".into(), (0..f.len() as i64).collect::<Vec<_>>()).into_column(),
    ])
    .unwrap();
    for (per_chunk, ascending) in [(2, true), (2, false), (7, false), (3, true)] {
        let df = DataFrame::from_polars(local.clone(), per_chunk).unwrap();
        let out = s.fetch(&df.sort_values(&["f"], &[ascending]).unwrap()).unwrap();
        let present: Vec<i64> = i64s(&out, "i").into_iter().take(4).map(Option::unwrap).collect();
        assert_eq!(present, if ascending { [3, 6, 0, 5] } else { [5, 0, 6, 3] }, "ascending {ascending}");
        let last: Vec<Option<f64>> = f64s(&out, "f").into_iter().skip(4).collect();
        assert!(last.iter().all(|v| v.is_none_or(f64::is_nan)), "missing values last: {last:?}");
        // The missing rows keep their order (a stable sort).
        let missing: Vec<i64> = i64s(&out, "i").into_iter().skip(4).map(Option::unwrap).collect();
        assert_eq!(missing, [1, 2, 4]);
    }
    ares::shutdown();
}

#[test]
fn nunique_counts_distinct_present_values_per_group_and_per_column() {
    cluster();
    let s = Session::new();
    let strategy = (rows_strategy(), 1usize..60, methods());
    runner(12)
        .run(&strategy, |(rows, per_chunk, method)| {
            let df = DataFrame::from_polars(frame(&rows), per_chunk).unwrap();
            let g = df.group_by(&["k2"]).unwrap().method(method).select(&["k1", "f"]).unwrap();
            let out = s.fetch(&g.nunique().unwrap()).unwrap();
            let mut want: BTreeMap<i64, (std::collections::BTreeSet<i64>, std::collections::BTreeSet<i64>)> =
                BTreeMap::new();
            for r in &rows {
                if let Some(k) = r.1 {
                    let e = want.entry(k).or_default();
                    e.0.extend(r.0);
                    e.1.extend(q(r.2));
                }
            }
            prop_assert_eq!(i64s(&out, "k2"), want.keys().map(|&k| Some(k)).collect::<Vec<_>>());
            prop_assert_eq!(i64s(&out, "k1"), want.values().map(|v| Some(v.0.len() as i64)).collect::<Vec<_>>());
            prop_assert_eq!(i64s(&out, "f"), want.values().map(|v| Some(v.1.len() as i64)).collect::<Vec<_>>());

            let all = s.fetch(&df.nunique().unwrap()).unwrap();
            prop_assert_eq!(all.height(), 1);
            let distinct = |f: &dyn Fn(&Row) -> Option<i64>| {
                rows.iter().filter_map(f).collect::<std::collections::BTreeSet<_>>().len() as i64
            };
            prop_assert_eq!(i64s(&all, "k1")[0], Some(distinct(&|r| r.0)));
            prop_assert_eq!(i64s(&all, "f")[0], Some(distinct(&|r| q(r.2))));
            prop_assert_eq!(i64s(&all, "i")[0], Some(distinct(&|r| Some(r.3))));
            Ok(())
        })
        .unwrap();
    ares::shutdown();
}

/// Python's `//` and `%` of integers (a zero divisor: missing).
fn py_divmod(a: i64, b: i64) -> Option<(i64, i64)> {
    if b == 0 {
        return None;
    }
    let (q, r) = (a.div_euclid(b), a.rem_euclid(b));
    // Euclid's remainder is never negative; Python's has the divisor's sign.
    Some(if r != 0 && b < 0 { (q + 1, r + b) } else { (q, r) })
}

#[test]
fn floor_division_modulo_powers_abs_round_clip_and_concat_match_the_oracle() {
    cluster();
    let s = Session::new();
    runner(12)
        .run(&(rows_strategy(), 1usize..60, rows_strategy()), |(rows, per_chunk, more)| {
            let df = DataFrame::from_polars(frame(&rows), per_chunk).unwrap();
            let out = df
                .assign(&[
                    ("q", col("i").floor_div(col("k2"))),
                    ("r", col("i") % col("k2")),
                    ("fq", col("f").floor_div(0.75)),
                    ("fr", col("f") % -0.75),
                    ("p", col("i").pow(2)),
                    ("a", col("i").abs()),
                    ("rd", (col("f") / 3.0).round(1)),
                    ("c", col("i").clip(Some((-10).into()), Some(10.into()))),
                ])
                .unwrap();
            let got = s.fetch(&out).unwrap();
            let want_q: Vec<Option<i64>> =
                rows.iter().map(|r| r.1.and_then(|k| py_divmod(r.3, k)).map(|d| d.0)).collect();
            let want_r: Vec<Option<i64>> =
                rows.iter().map(|r| r.1.and_then(|k| py_divmod(r.3, k)).map(|d| d.1)).collect();
            prop_assert_eq!(i64s(&got, "q"), want_q);
            prop_assert_eq!(i64s(&got, "r"), want_r);
            // The floats are multiples of 0.25, so these are exact.
            let fq: Vec<Option<f64>> = rows.iter().map(|r| r.2.map(|f| (f / 0.75).floor())).collect();
            prop_assert_eq!(f64s(&got, "fq"), fq);
            let fr: Vec<Option<f64>> = rows.iter().map(|r| r.2.map(|f| f - (f / -0.75).floor() * -0.75)).collect();
            let got_fr = f64s(&got, "fr");
            for (g, w) in got_fr.iter().zip(&fr) {
                prop_assert!(close(*g, *w), "{:?} {:?}", g, w);
            }
            prop_assert_eq!(i64s(&got, "p"), rows.iter().map(|r| Some(r.3 * r.3)).collect::<Vec<_>>());
            prop_assert_eq!(i64s(&got, "a"), rows.iter().map(|r| Some(r.3.abs())).collect::<Vec<_>>());
            let rd: Vec<Option<f64>> =
                rows.iter().map(|r| r.2.map(|f| ((f / 3.0) * 10.0).round_ties_even() / 10.0)).collect();
            prop_assert_eq!(f64s(&got, "rd"), rd);
            prop_assert_eq!(i64s(&got, "c"), rows.iter().map(|r| Some(r.3.clamp(-10, 10))).collect::<Vec<_>>());

            // concat: the rows of both, in order, the second's columns reordered and
            // its ints widened to floats where the first has floats.
            let other = DataFrame::from_polars(frame(&more), per_chunk)
                .unwrap()
                .select(&["i", "f", "k1", "k2"])
                .unwrap()
                .astype(&[("f", Dtype::Float32)])
                .unwrap();
            let both = DataFrame::concat(&[df.clone(), other]).unwrap();
            prop_assert_eq!(both.columns(), ["k1", "k2", "f", "i"]);
            let got = s.fetch(&both).unwrap();
            let all: Vec<&Row> = rows.iter().chain(more.iter()).collect();
            prop_assert_eq!(i64s(&got, "i"), all.iter().map(|r| Some(r.3)).collect::<Vec<_>>());
            prop_assert_eq!(f64s(&got, "f"), all.iter().map(|r| r.2).collect::<Vec<_>>());
            prop_assert_eq!(got.column("f").unwrap().dtype(), &DataType::Float64);
            // Operations on a concatenation see every part's rows.
            let sums = s.fetch(&both.group_by(&["k2"]).unwrap().select(&["i"]).unwrap().count().unwrap()).unwrap();
            let counted: i64 = i64s(&sums, "i").iter().flatten().sum();
            prop_assert_eq!(counted as usize, all.iter().filter(|r| r.1.is_some()).count());
            Ok(())
        })
        .unwrap();
    let e = DataFrame::concat(&[]).unwrap_err();
    assert!(e.to_string().contains("at least one"), "{e}");
    ares::shutdown();
}

#[test]
fn a_python_integer_an_integer_column_cannot_hold_is_refused_as_numpy_2_refuses_it() {
    let local = PlFrame::new_infer_height(vec![Series::new("u".into(), [1u32, 2, 3]).into_column()]).unwrap();
    let df = DataFrame::from_polars(local, 2).unwrap();
    let e = df.assign(&[("v", col("u") + (-1))]).unwrap_err();
    assert!(e.to_string().contains("out of bounds for u32") && e.to_string().contains("astype"), "{e}");
    let ok = df.assign(&[("v", col("u") + 1)]).unwrap();
    assert_eq!(ok.dtypes()[1], DataType::UInt32);
}

#[test]
fn lazy_scalars_in_filters_and_assignments_are_computed_first() {
    cluster();
    let s = Session::new();
    runner(12)
        .run(&(rows_strategy(), 1usize..40), |(rows, per_chunk)| {
            let df = DataFrame::from_polars(frame(&rows), per_chunk).unwrap();
            let max_i = df.select(&["i"]).unwrap().reduce(Agg::Max, false).unwrap().as_value().unwrap();
            let mean_f = df.agg(&[("f", Agg::Mean)]).unwrap().as_value().unwrap();
            let out = df
                .filter(col("i").eq(Expr::Value(max_i.clone())) | col("f").gt(Expr::Value(mean_f.clone())))
                .unwrap()
                .assign(&[("d", col("i") - Expr::Value(max_i)), ("e", col("f") - Expr::Value(mean_f))])
                .unwrap()
                .select(&["d", "e"])
                .unwrap();
            let got = s.fetch(&out).unwrap();
            let max = rows.iter().map(|r| r.3).max();
            let present: Vec<f64> = rows.iter().filter_map(|r| r.2).collect();
            let mean = (!present.is_empty()).then(|| present.iter().sum::<f64>() / present.len() as f64);
            let kept: Vec<&Row> = rows
                .iter()
                .filter(|r| Some(r.3) == max || matches!((r.2, mean), (Some(f), Some(m)) if f > m))
                .collect();
            prop_assert_eq!(got.height(), kept.len());
            let want_d: Vec<Option<i64>> = kept.iter().map(|r| max.map(|m| r.3 - m)).collect();
            prop_assert_eq!(i64s(&got, "d"), want_d);
            let got_e = f64s(&got, "e");
            for (g, r) in got_e.iter().zip(&kept) {
                let want = r.2.zip(mean).map(|(f, m)| f - m);
                prop_assert!(g.zip(want).is_none_or(|(g, w)| (g - w).abs() <= 1e-9 * (1.0 + w.abs())));
                prop_assert_eq!(g.is_some(), want.is_some());
            }
            Ok(())
        })
        .unwrap();
    ares::shutdown();
}

#[test]
fn a_lazy_scalar_must_be_one_column() {
    let df = DataFrame::from_polars(
        PlFrame::new(
            2,
            vec![Series::new("a".into(), [1i64, 2]).into_column(), Series::new("b".into(), [1i64, 2]).into_column()],
        )
        .unwrap(),
        1,
    )
    .unwrap();
    let e = df.as_value().unwrap_err().to_string();
    assert!(e.contains("one column") && e.contains("\"a\""), "{e}");
}

#[test]
fn isin_another_frames_column_is_a_semi_join_and_its_negation_an_anti_join() {
    cluster();
    let s = Session::new();
    runner(12)
        .run(&(rows_strategy(), rows_strategy(), 1usize..30), |(rows, others, per_chunk)| {
            let df = DataFrame::from_polars(frame(&rows), per_chunk).unwrap();
            let other = DataFrame::from_polars(frame(&others), per_chunk).unwrap();
            // Another frame's keys (k1, with missing values) and, as floats, its f.
            let set = other.select(&["k1"]).unwrap().drop_duplicates(&["k1"]).unwrap().as_value().unwrap();
            let fset = other.select(&["f"]).unwrap().as_value().unwrap();
            let out = df
                .assign(&[
                    ("semi", Expr::IsIn(Box::new(col("k2")), set.clone())),
                    ("anti", !Expr::IsIn(Box::new(col("k1")), set)),
                    ("num", Expr::IsIn(Box::new(col("i")), fset)),
                ])
                .unwrap()
                .select(&["semi", "anti", "num"])
                .unwrap();
            let got = s.fetch(&out).unwrap();
            let bools = |c: &str| -> Vec<Option<bool>> { got.column(c).unwrap().bool().unwrap().iter().collect() };
            let keys: Vec<Option<i64>> = others.iter().map(|r| r.0).collect();
            let floats: Vec<Option<f64>> = others.iter().map(|r| r.2).collect();
            // A missing value is in the set when the set has one (pandas' isin).
            let semi: Vec<Option<bool>> = rows.iter().map(|r| Some(keys.contains(&r.1))).collect();
            let anti: Vec<Option<bool>> = rows.iter().map(|r| Some(!keys.contains(&r.0))).collect();
            let num: Vec<Option<bool>> = rows.iter().map(|r| Some(floats.contains(&Some(r.3 as f64)))).collect();
            prop_assert_eq!(bools("semi"), semi);
            prop_assert_eq!(bools("anti"), anti);
            prop_assert_eq!(bools("num"), num);
            Ok(())
        })
        .unwrap();
    ares::shutdown();
}
