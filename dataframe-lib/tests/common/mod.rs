//! What the frame tests share: a real embedded cluster, random frames with missing
//! values and skewed keys, and column readers.

#![allow(dead_code)]

use ares_dataframe::Method;
use ares_dataframe::polars::prelude::{Column, DataFrame as PlFrame, DataType, IntoColumn, NamedFrom, Series};
use proptest::prelude::*;

pub(crate) fn cluster() {
    ares::init_with(ares::Config::default().num_cpus(2)).expect("init");
}

/// One row: `k1`, `k2`, `f`, `i`.
pub(crate) type Row = (Option<i64>, Option<i64>, Option<f64>, i64);

/// A frame of `n` rows: keys `k1` in [0, groups) and `k2` in [0, 3) (some missing),
/// floats `f` (some missing) and ints `i`.
pub(crate) fn frame(rows: &[Row]) -> PlFrame {
    let col = |name: &str, s: Series| -> Column { s.with_name(name.into()).into_column() };
    PlFrame::new_infer_height(vec![
        col("k1", Series::new("".into(), rows.iter().map(|r| r.0).collect::<Vec<_>>())),
        col("k2", Series::new("".into(), rows.iter().map(|r| r.1).collect::<Vec<_>>())),
        col("f", Series::new("".into(), rows.iter().map(|r| r.2).collect::<Vec<_>>())),
        col("i", Series::new("".into(), rows.iter().map(|r| r.3).collect::<Vec<_>>())),
    ])
    .unwrap()
}

pub(crate) fn rows_strategy() -> impl Strategy<Value = Vec<Row>> {
    // Skewed keys: half the rows share key 0.
    let key = prop_oneof![Just(Some(0i64)), (0i64..40).prop_map(Some), Just(None)];
    let k2 = prop_oneof![4 => (0i64..3).prop_map(Some), 1 => Just(None)];
    let f = prop_oneof![4 => (-100i32..100).prop_map(|v| Some(v as f64 / 4.0)), 1 => Just(None)];
    prop::collection::vec((key, k2, f, -50i64..50), 0..300)
}

pub(crate) fn f64s(df: &PlFrame, name: &str) -> Vec<Option<f64>> {
    let s = df.column(name).unwrap().as_materialized_series().cast(&DataType::Float64).unwrap();
    s.f64().unwrap().iter().collect()
}

pub(crate) fn i64s(df: &PlFrame, name: &str) -> Vec<Option<i64>> {
    let s = df.column(name).unwrap().as_materialized_series().cast(&DataType::Int64).unwrap();
    s.i64().unwrap().iter().collect()
}

/// A tree or a shuffle, for the operations that combine chunks either way.
pub(crate) fn methods() -> impl Strategy<Value = Method> {
    prop_oneof![Just(Method::Tree), Just(Method::Shuffle)]
}
