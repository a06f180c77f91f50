//! `ares-bench dataframe`: W4 of `../shared/peers/tensor_workloads.py` (5e7 rows in 50
//! chunks; keys `k1`, `k2` uniform in [0, 1000), floats `f1`, `f2`): generation, then
//! `groupby("k1")[["f1","f2"]].sum()`, `groupby(["k1","k2"])[["f1","f2"]].sum()` and
//! `sort_values("f1")`, each timed as its own phase, as the peer script does. Every phase
//! checks its result; one JSON line per repeat, then the median line.
//!
//! After W4's phases (not in its time), the chain `filter(f1 > 0.5) → assign(g = f1 +
//! f2) → groupby(k1)[g].sum() → sort_values(g)` runs as one graph: the line `W4_chain`
//! gives its time, the store's peak use above what it held before, and the sizes of its
//! intermediates, each executed on its own afterwards (what running the operators one
//! by one would have held).

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use ares_dataframe::{DataFrame, Session, col, polars::prelude::DataType};
use ares_tensor::random;
use serde_json::json;

use crate::rss::PeakRss;

/// W4's sizes.
#[derive(Clone, Debug, clap::Args)]
pub(crate) struct Sizes {
    /// Rows.
    #[arg(long, default_value_t = 50_000_000)]
    pub(crate) rows: u64,
    /// Chunks (partitions).
    #[arg(long, default_value_t = 50)]
    pub(crate) parts: u64,
    /// Worker CPUs.
    #[arg(long, default_value_t = 2)]
    pub(crate) num_cpus: u32,
}

fn sum_col(df: &ares_dataframe::polars::prelude::DataFrame, name: &str) -> Result<f64> {
    let s = df.column(name)?.as_materialized_series().cast(&DataType::Float64)?;
    Ok(s.f64()?.into_no_null_iter().sum())
}

/// Checks that `sorted`'s chunks hold `rows` rows in ascending `f1`, chunk after chunk,
/// reading one chunk at a time (not timed).
fn check_sorted(s: &Session, sorted: &DataFrame, rows: u64) -> Result<()> {
    let mut last = f64::NEG_INFINITY;
    let mut n = 0u64;
    for r in s.chunks(sorted)?.iter() {
        let view = ares::get_view(r)?;
        let df = ares_dataframe::decode_archived(&view)?;
        for v in df.column("f1")?.as_materialized_series().f64()?.into_no_null_iter() {
            anyhow::ensure!(v >= last, "sort_values: {v} after {last}");
            last = v;
        }
        n += df.height() as u64;
    }
    anyhow::ensure!(n == rows, "sort_values kept {n} of {rows} rows");
    Ok(())
}

/// The store's peak use while `f` runs, sampled every millisecond.
fn store_peak<T>(f: impl FnOnce() -> T) -> Result<(T, u64)> {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let stop = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(AtomicU64::new(ares::node_stats()?.store_used));
    let sampler = {
        let (stop, peak) = (stop.clone(), peak.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                if let Ok(s) = ares::node_stats() {
                    peak.fetch_max(s.store_used, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };
    let out = f();
    stop.store(true, Ordering::Relaxed);
    let _ = sampler.join();
    Ok((out, peak.load(Ordering::Relaxed)))
}

/// The chain on W4's frame as one graph: its time, the store's peak above its start,
/// and its intermediates' sizes (each executed alone afterwards). Checks the result.
fn chain(s: &Session, df: &DataFrame) -> Result<serde_json::Value> {
    let filtered = df.filter(col("f1").gt(0.5))?;
    let assigned = filtered.assign(&[("g", col("f1") + col("f2"))])?;
    let grouped = assigned.group_by(&["k1"])?.select(&["g"])?.sum()?;
    let sorted = grouped.sort_values(&["g"], &[false])?;
    let before = ares::node_stats()?.store_used;
    let t = Instant::now();
    let (r, peak) = store_peak(|| s.execute(&sorted))?;
    r?;
    let chain_s = t.elapsed().as_secs_f64();
    let out = s.fetch(&sorted)?;
    anyhow::ensure!(out.height() == 1000, "the chain gave {} groups", out.height());
    let g = out.column("g")?.as_materialized_series().f64()?.clone();
    let v: Vec<f64> = g.into_no_null_iter().collect();
    anyhow::ensure!(v.windows(2).all(|w| w[0] >= w[1]), "the chain's groups are not in descending order");
    drop(out);
    drop(sorted);
    // Each intermediate on its own, as a run per operator would have held it.
    let mut sizes = Vec::new();
    // Held bytes: in the pool or spilled.
    let held = || -> Result<u64> {
        let st = ares::node_stats()?;
        Ok(st.store_used + st.store_spilled_bytes)
    };
    for (name, f) in [("filter", &filtered), ("assign", &assigned), ("groupby", &grouped)] {
        let at = held()?;
        s.execute(f)?;
        sizes.push((name, held()?.saturating_sub(at)));
    }
    let total: u64 = sizes.iter().map(|(_, b)| b).sum();
    let peak_above = peak.saturating_sub(before);
    anyhow::ensure!(peak_above < total, "the chain's peak ({peak_above} B) is not below its intermediates ({total} B)");
    Ok(json!({"bench": "W4_chain", "engine": "ares", "value": chain_s, "unit": "s",
              "store_peak_above_start_MB": peak_above as f64 / 1e6,
              "intermediates_MB": sizes.iter().map(|(n, b)| json!({"op": n, "MB": *b as f64 / 1e6})).collect::<Vec<_>>(),
              "intermediates_total_MB": total as f64 / 1e6}))
}

/// One W4 run: phase times (s) and what was checked.
fn once(s: &Session, z: &Sizes) -> Result<(serde_json::Value, serde_json::Value)> {
    let cs = (z.rows / z.parts) as usize;
    let t = Instant::now();
    let k1 = random::randint(0, 1000, &[z.rows], &[cs], 11)?;
    let k2 = random::randint(0, 1000, &[z.rows], &[cs], 12)?;
    let f1 = random::rand(&[z.rows], &[cs], 13)?;
    let f2 = random::rand(&[z.rows], &[cs], 14)?;
    let df = DataFrame::from_tensors(&[("k1", &k1), ("k2", &k2), ("f1", &f1), ("f2", &f2)])?;
    s.execute(&df)?;
    let gen_s = t.elapsed().as_secs_f64();
    drop((k1, k2, f1, f2));

    let t = Instant::now();
    let g1 = df.group_by(&["k1"])?.select(&["f1", "f2"])?.sum()?;
    s.execute(&g1)?;
    let g1_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let g2 = df.group_by(&["k1", "k2"])?.select(&["f1", "f2"])?.sum()?;
    s.execute(&g2)?;
    let g2_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let sorted = df.sort_values(&["f1"], &[true])?;
    s.execute(&sorted)?;
    let sort_s = t.elapsed().as_secs_f64();

    // Checks (not timed): 1000 groups of k1; both group-bys' sums agree; the sort.
    let (r1, r2) = (s.fetch(&g1)?, s.fetch(&g2)?);
    anyhow::ensure!(r1.height() == 1000, "groupby k1 gave {} groups", r1.height());
    let expected_pairs = 1_000_000f64 * (1.0 - (-(z.rows as f64) / 1e6).exp());
    let pairs = r2.height() as f64;
    anyhow::ensure!((pairs - expected_pairs).abs() < 0.01 * expected_pairs, "groupby k1,k2 gave {pairs} groups");
    let (a, b) = (sum_col(&r1, "f1")?, sum_col(&r2, "f1")?);
    anyhow::ensure!((a - b).abs() < 1e-6 * a, "f1 sums differ: {a} and {b}");
    anyhow::ensure!((a / z.rows as f64 - 0.5).abs() < 1e-3, "mean of f1 is {}", a / z.rows as f64);
    check_sorted(s, &sorted, z.rows)?;
    drop((g1, g2, sorted));
    let total = gen_s + g1_s + g2_s + sort_s;
    println!("{}", chain(s, &df)?);
    Ok((
        json!({"gen": gen_s, "groupby_k1": g1_s, "groupby_k1k2": g2_s, "sort": sort_s, "total": total}),
        json!({"groups_k1": r1.height(), "groups_k1k2": r2.height(), "sorted_rows": z.rows}),
    ))
}

/// Runs W4 `repeats` times in this process (one embedded node) and prints JSON lines.
pub(crate) fn run(repeats: usize, z: &Sizes) -> Result<()> {
    ares::init_with(ares::Config::default().num_cpus(z.num_cpus))?;
    let s = Session::new();
    let pid = std::process::id();
    let mut totals = Vec::new();
    let mut last = (json!(null), json!(null));
    let mut peak_all = 0u64;
    for _ in 0..repeats.max(1) {
        let sampler = PeakRss::start(pid, Duration::from_millis(50));
        let r = once(&s, z);
        let peak = sampler.stop();
        let (phases, result) = r?;
        peak_all = peak_all.max(peak);
        totals.push(phases["total"].as_f64().context("total")?);
        println!(
            "{}",
            json!({"bench": "W4_run", "engine": "ares", "phases_s": phases, "result": result,
                              "peak_tree_rss_MB": peak as f64 / 1e6})
        );
        last = (phases, result);
    }
    let mut sorted = totals.clone();
    sorted.sort_by(f64::total_cmp);
    let load: Vec<f64> = std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .filter_map(|x| x.parse().ok())
        .collect();
    println!(
        "{}",
        json!({"bench": "W4", "engine": "ares", "value": sorted[sorted.len() / 2], "unit": "s", "runs": totals,
               "phases_s": last.0, "result": last.1, "peak_tree_rss_MB": peak_all as f64 / 1e6, "loadavg": load})
    );
    ares::shutdown();
    Ok(())
}
