//! The tensor main job, on the embedded one-node cluster:
//!
//! 1. Monte Carlo π with 10⁹ points: `(norm(uniform(-1, 1, (N, 2)), axis=1) < 1).sum() * 4 / N`,
//!    fused into one kernel per chunk, so no full-size temporary exists;
//! 2. `(a @ a.T - a).std()` for `a` a 10000 × 10000 uniform random tensor in 1000 × 1000
//!    chunks (800 MB of input, a 800 MB product that is never held whole).
//!
//! Each prints its result, the wall time and the peak memory (summed RSS of this process
//! and its worker processes, and the object store's peak), with a progress bar.
//!
//! `cargo run --release -p ares-tensor --example tensor [-- N POINTS]`

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use ares_tensor::{Session, Tensor, random};
use indicatif::{ProgressBar, ProgressStyle};

/// Summed resident memory of `pid` and its descendants, in bytes (Linux `/proc`).
fn tree_rss(pid: u32) -> u64 {
    let mut parent_of = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else { continue };
        let ppid = stat.rsplit_once(')').and_then(|(_, r)| r.split_whitespace().nth(1)?.parse::<u32>().ok());
        if let Some(ppid) = ppid {
            parent_of.push((p, ppid));
        }
    }
    let mut tree = vec![pid];
    let mut i = 0;
    while i < tree.len() {
        let p = tree[i];
        tree.extend(parent_of.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        i += 1;
    }
    tree.iter()
        .filter_map(|p| std::fs::read_to_string(format!("/proc/{p}/statm")).ok())
        .filter_map(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map(|pages| pages * 4096)
        .sum()
}

/// Samples memory while `f` runs; returns its result, the wall time and the peaks.
fn measured<T>(f: impl FnOnce() -> T) -> (T, f64, u64, u64) {
    let stop = Arc::new(AtomicBool::new(false));
    let (rss, store) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let sampler = {
        let (stop, rss, store) = (stop.clone(), rss.clone(), store.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                rss.fetch_max(tree_rss(std::process::id()), Ordering::Relaxed);
                if let Ok(s) = ares::node_stats() {
                    store.fetch_max(s.store_used, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        })
    };
    let start = Instant::now();
    let out = f();
    let wall = start.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let _ = sampler.join();
    (out, wall, rss.load(Ordering::Relaxed), store.load(Ordering::Relaxed))
}

fn run(label: &str, t: &Tensor) -> anyhow::Result<()> {
    let bar = ProgressBar::new(1);
    bar.set_style(
        ProgressStyle::with_template("{msg:28} [{bar:40}] {pos}/{len} tasks {elapsed}")?.progress_chars("=> "),
    );
    bar.set_message(label.to_string());
    let b = bar.clone();
    let session = Session::new().on_progress(move |p| {
        b.set_length(p.total as u64);
        b.set_position(p.done as u64);
    });
    let (value, wall, rss, store) = measured(|| session.scalar(t));
    bar.finish();
    println!(
        "{label} = {:.9}\n  wall time {wall:.2} s, peak memory {:.0} MB (driver and workers), object store peak {:.0} MB",
        value?,
        rss as f64 / 1e6,
        store as f64 / 1e6
    );
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let n: u64 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(10_000);
    let points: u64 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(1_000_000_000);
    ares::init()?;

    let rows = (points as usize).min(10_000_000);
    let xy = random::uniform(-1.0, 1.0, &[points, 2], &[rows, 2], 7)?;
    let pi = xy.norm(1)?.lt_scalar(1.0).sum() * (4.0 / points as f64);
    run(&format!("pi from {points} points"), &pi)?;

    let chunk = (n as usize).min(1000);
    let a = random::rand(&[n, n], &[chunk, chunk], 42)?;
    let std = (a.matmul(&a.t()?)? - &a).std();
    run(&format!("(a @ a.T - a).std(), n={n}"), &std)?;

    ares::shutdown();
    Ok(())
}
