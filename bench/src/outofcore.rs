//! `ares-bench outofcore`: `(a @ a.T - a).std()` for `a` an `n × n` uniform random float64
//! tensor in `chunk × chunk` chunks, computed once in a pool that holds everything and
//! once in a pool of `--pool-mib` with a spill directory (each in a fresh child process).
//! It prints each run's wall time, the store's peak use and spilled bytes, and checks that
//! the small pool gives the same answer (relative 1e-9), or, with `--expect-full`, that it
//! fails with `ObjectStoreFull` naming the task.

use std::io::BufRead;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use ares_tensor::{Session, random};
use serde_json::json;

/// One out-of-core case.
#[derive(Clone, Debug, clap::Args)]
pub(crate) struct Case {
    /// Matrix size.
    #[arg(long, default_value_t = 20_000)]
    pub(crate) n: u64,
    /// Chunk size (square chunks).
    #[arg(long, default_value_t = 2000)]
    pub(crate) chunk: u64,
    /// The small pool, in MiB.
    #[arg(long, default_value_t = 1024)]
    pub(crate) pool_mib: u64,
    /// Worker CPUs.
    #[arg(long, default_value_t = 2)]
    pub(crate) num_cpus: u32,
    /// Spill directory.
    #[arg(long, default_value = "/tmp/ares-bench-outofcore")]
    pub(crate) spill_dir: PathBuf,
    /// The small pool is expected to fail with ObjectStoreFull (one task's inputs and
    /// output exceed it); no reference run is made.
    #[arg(long)]
    pub(crate) expect_full: bool,
}

/// Runs the case in this process with a pool of `pool_mib` and prints one JSON line.
pub(crate) fn child(c: &Case) -> Result<()> {
    std::fs::create_dir_all(&c.spill_dir)?;
    let cfg =
        ares::Config::default().num_cpus(c.num_cpus).object_store_memory(c.pool_mib << 20).spill_dir(&c.spill_dir);
    ares::init_with(cfg)?;
    let stop = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(AtomicU64::new(0));
    let sampler = {
        let (stop, peak) = (stop.clone(), peak.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                if let Ok(s) = ares::node_stats() {
                    peak.fetch_max(s.store_used, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    let t = Instant::now();
    let k = c.chunk as usize;
    let result = (|| -> Result<f64> {
        let a = random::rand(&[c.n, c.n], &[k, k], 42)?;
        Ok(Session::new().scalar(&(a.matmul(&a.t()?)? - &a).std())?)
    })();
    let wall = t.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let _ = sampler.join();
    let stats = ares::node_stats()?;
    let (value, error) = match result {
        Ok(v) => (json!(v), json!(null)),
        Err(e) => (json!(null), json!(format!("{e:#}"))),
    };
    println!(
        "{}",
        json!({"wall_s": wall, "result": value, "error": error, "pool_MB": (c.pool_mib << 20) as f64 / 1e6,
               "store_peak_MB": peak.load(Ordering::Relaxed) as f64 / 1e6,
               "spilled_MB": stats.store_spilled_bytes_total as f64 / 1e6,
               "restored_MB": stats.store_restored_bytes_total as f64 / 1e6})
    );
    ares::shutdown();
    Ok(())
}

/// Runs `c` with `pool_mib` in a fresh child; returns its JSON line.
fn run_child(c: &Case, pool_mib: u64) -> Result<serde_json::Value> {
    let exe = std::env::current_exe()?;
    let mut child = Command::new(exe)
        .args([
            "outofcore-child",
            "--n",
            &c.n.to_string(),
            "--chunk",
            &c.chunk.to_string(),
            "--pool-mib",
            &pool_mib.to_string(),
            "--num-cpus",
            &c.num_cpus.to_string(),
            "--spill-dir",
            &c.spill_dir.to_string_lossy(),
        ])
        .stdout(Stdio::piped())
        .spawn()?;
    let out = child.stdout.take().context("child stdout")?;
    let mut line = None;
    for l in std::io::BufReader::new(out).lines() {
        let l = l?;
        if l.starts_with('{') {
            line = Some(serde_json::from_str::<serde_json::Value>(&l)?);
        }
    }
    let status = child.wait()?;
    ensure!(status.success(), "the child with a {pool_mib} MiB pool exited with {status}");
    line.context("the child printed no result")
}

/// The reference run (a pool holding everything), then the small pool; prints both and
/// the comparison.
pub(crate) fn parent(c: &Case) -> Result<()> {
    let small = run_child(c, c.pool_mib)?;
    println!(
        "{}",
        json!({"bench": "outofcore_small_pool", "engine": "ares", "n": c.n, "chunk": c.chunk, "run": small})
    );
    if c.expect_full {
        let err = small["error"].as_str().unwrap_or("");
        ensure!(err.contains("full"), "expected ObjectStoreFull, got {small}");
        println!(
            "{}",
            json!({"bench": "outofcore_full", "engine": "ares", "value": small["wall_s"], "unit": "s", "error": err})
        );
        return Ok(());
    }
    // Everything the product needs, and room to spare.
    let big_mib = ((c.n * c.n * 8 * 2) >> 20) + 512;
    let reference = run_child(c, big_mib)?;
    println!("{}", json!({"bench": "outofcore_reference", "engine": "ares", "n": c.n, "run": reference}));
    let (a, b) = (small["result"].as_f64(), reference["result"].as_f64());
    let (Some(a), Some(b)) = (a, b) else { anyhow::bail!("a run failed: small {small}, reference {reference}") };
    let rel = ((a - b) / b).abs();
    ensure!(rel <= 1e-9, "the small pool gave {a}, the reference {b} (relative {rel})");
    ensure!(small["spilled_MB"].as_f64().unwrap_or(0.0) > 0.0, "nothing was spilled: {small}");
    println!(
        "{}",
        json!({"bench": "outofcore", "engine": "ares", "value": small["wall_s"], "unit": "s",
               "reference_s": reference["wall_s"], "relative_difference": rel,
               "spilled_MB": small["spilled_MB"], "pool_MB": small["pool_MB"]})
    );
    Ok(())
}
