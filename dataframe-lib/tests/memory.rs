//! A frame three times the object store's size goes through a shuffled group-by, a sort
//! and a shuffle join, spilling through the store, and the store returns to empty
//! afterwards.

use std::path::{Path, PathBuf};

use ares_dataframe::polars::prelude::{DataFrame as PlFrame, DataType, IntoColumn, NamedFrom, Series};
use ares_dataframe::{DataFrame, How, Method, Session};

const MIB: u64 = 1 << 20;

struct Dir(PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn files_under(dir: &Path) -> usize {
    let Ok(rd) = std::fs::read_dir(dir) else { return 0 };
    rd.flatten().map(|e| if e.path().is_dir() { files_under(&e.path()) } else { 1 }).sum()
}

#[test]
fn a_frame_three_times_the_store_groups_sorts_and_joins_and_the_store_empties_after() {
    let spill = Dir(std::env::temp_dir().join(format!("ares-frames-3x-{}", std::process::id())));
    let _ = std::fs::remove_dir_all(&spill.0);
    std::fs::create_dir_all(&spill.0).unwrap();
    let pool = 64 * MIB;
    let mut cfg = ares::Config::default().num_cpus(2).object_store_memory(pool).spill_dir(&spill.0);
    cfg.min_spill_size = MIB;
    ares::init_with(cfg).unwrap();

    // 6.5M rows of 32 bytes: 208 MB, in 52 chunks of 4 MB.
    let n = 6_500_000usize;
    let key = |i: usize, m: usize| ((i.wrapping_mul(2654435761) >> 7) % m) as i64;
    let cols = vec![
        Series::new("k1".into(), (0..n).map(|i| key(i, 1000)).collect::<Vec<_>>()).into_column(),
        Series::new("k2".into(), (0..n).map(|i| key(i + 7, 999)).collect::<Vec<_>>()).into_column(),
        Series::new("f".into(), (0..n).map(|i| ((i * 7919) % 100_003) as f64).collect::<Vec<_>>()).into_column(),
        Series::new("i".into(), (0..n).map(|i| i as i64).collect::<Vec<_>>()).into_column(),
    ];
    let local = PlFrame::new_infer_height(cols).unwrap();
    let want_f: f64 = (0..n).map(|i| ((i * 7919) % 100_003) as f64).sum();
    let s = Session::new();
    {
        let df = DataFrame::from_polars(local, 125_000).unwrap();
        s.execute(&df).unwrap();
        let stats = ares::node_stats().unwrap();
        assert!(stats.store_spilled_objects > 0, "the frame should not fit the store: {stats:?}");

        let g = df.group_by(&["k1", "k2"]).unwrap().method(Method::Shuffle).select(&["f"]).unwrap().sum().unwrap();
        let out = s.fetch(&g).unwrap();
        let total: f64 = out.column("f").unwrap().as_materialized_series().f64().unwrap().into_no_null_iter().sum();
        assert_eq!(total, want_f, "the group sums add up to the column's sum");

        let sorted = df.sort_values(&["f"], &[false]).unwrap();
        s.execute(&sorted).unwrap();
        let mut last = f64::INFINITY;
        let mut rows = 0;
        for r in s.chunks(&sorted).unwrap().iter() {
            let c = ares_dataframe::decode_archived(&ares::get_view(r).unwrap()).unwrap();
            let f = c.column("f").unwrap().as_materialized_series().cast(&DataType::Float64).unwrap();
            for v in f.f64().unwrap().into_no_null_iter() {
                assert!(v <= last, "descending order broken: {v} after {last}");
                last = v;
            }
            rows += c.height();
        }
        assert_eq!(rows, n);
        drop(sorted);

        // Every row meets the one row of `other` with its `i`: a shuffle join, as both
        // sides have many chunks.
        let other = PlFrame::new_infer_height(vec![
            Series::new("i".into(), (0..n as i64).rev().collect::<Vec<_>>()).into_column(),
            Series::new("g".into(), (0..n as i64).rev().map(|i| 2 * i).collect::<Vec<_>>()).into_column(),
        ])
        .unwrap();
        let other = DataFrame::from_polars(other, 250_000).unwrap();
        let joined = df.select(&["i", "f"]).unwrap().merge(&other, &["i"], How::Inner).unwrap();
        s.execute(&joined).unwrap();
        assert_eq!(s.group_by_method(&joined), Some(Method::Shuffle));
        let (mut rows, mut sum) = (0usize, 0i64);
        for r in s.chunks(&joined).unwrap().iter() {
            let c = ares_dataframe::decode_archived(&ares::get_view(r).unwrap()).unwrap();
            let (i, g) = (c.column("i").unwrap().i64().unwrap(), c.column("g").unwrap().i64().unwrap());
            for (i, g) in i.into_no_null_iter().zip(g.into_no_null_iter()) {
                assert_eq!(g, 2 * i, "row {i} met the wrong row");
                sum += i;
            }
            rows += c.height();
        }
        assert_eq!((rows, sum), (n, (0..n as i64).sum::<i64>()));
    }
    // Every frame is gone: so are their chunks, in memory and on disk.
    let stats = ares::node_stats().unwrap();
    assert_eq!((stats.store_used, stats.store_objects, stats.store_spill_files), (0, 0, 0), "{stats:?}");
    assert_eq!(files_under(&spill.0), 0, "spill files left behind");
    ares::shutdown();
}
