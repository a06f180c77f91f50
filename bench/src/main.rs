//! Ares benchmark programs. Each prints JSON lines `{"bench","value","unit",...}` named
//! like the peer scripts in ../shared/peers, so results can be compared side by side.
//!
//! `ares-bench micro` mirrors `ray_micro.py`: every figure is the median of `--repeats`
//! runs inside one `ares::init()` session.

mod cluster;
mod dataframe;
mod envelope;
mod outofcore;
mod recovery;
mod rss;
mod tensor;

use std::time::Instant;

use anyhow::Result;
use clap::{Parser, Subcommand};
use serde_json::json;

#[derive(Parser)]
#[command(about = "Ares benchmarks (JSON lines on stdout)")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Task, object and transfer micro benchmarks (names as in ray_micro.py).
    Micro {
        /// Runs per benchmark; the median is reported.
        #[arg(long, default_value_t = 5)]
        repeats: usize,
        /// Worker CPUs (Ray's script uses 2).
        #[arg(long, default_value_t = 2)]
        num_cpus: u32,
        #[arg(long, default_value_t = 2000)]
        n_sync: usize,
        #[arg(long, default_value_t = 10_000)]
        n_async: usize,
        #[arg(long, default_value_t = 1000)]
        n_chain: usize,
        #[arg(long, default_value_t = 10_000)]
        n_fanin: usize,
        #[arg(long, default_value_t = 10_000)]
        n_put: usize,
        /// Comma-separated letters of the benchmarks to run (a,b,c,d,e,f,g); all by default.
        #[arg(long, default_value = "a,b,c,d,e,f,g")]
        only: String,
        /// Values up to this size stay in the owner (default: the runtime's 100 KiB). `d`
        /// runs a second time in a child with 0, as `d_put_store` and `d_get_store`.
        #[arg(long)]
        max_inline_bytes: Option<usize>,
    },
    /// The tensor workloads of tensor_workloads.py (W1, W2, W3), each in fresh child processes.
    Tensor {
        /// Comma-separated workloads.
        #[arg(long, default_value = "W1,W2,W3")]
        workloads: String,
        /// Runs per workload; the median is reported.
        #[arg(long, default_value_t = 3)]
        repeats: usize,
        #[command(flatten)]
        sizes: tensor::Sizes,
    },
    /// W4, the data-frame workload (generation, two group-bys, a sort), in this process.
    Dataframe {
        /// Runs; the median total is reported.
        #[arg(long, default_value_t = 3)]
        repeats: usize,
        #[command(flatten)]
        sizes: dataframe::Sizes,
    },
    /// The single-node scale envelope (JSON lines with time and peak RSS).
    Envelope,
    /// The chunk GEMM kernel (one `n × n` float64 product, single-threaded), as chunk
    /// tasks run it; compare with numpy's single-threaded OpenBLAS (bench/compare_gemm.sh).
    Gemm {
        /// Matrix size.
        #[arg(long, default_value_t = 1000)]
        n: usize,
        /// Timed products; the median is reported.
        #[arg(long, default_value_t = 7)]
        repeats: usize,
    },
    /// `(a @ a.T - a).std()` larger than the object store: a small pool with spilling
    /// against a pool that holds everything (each in a child).
    Outofcore {
        #[command(flatten)]
        case: outofcore::Case,
    },
    /// One out-of-core run in this process (used by `outofcore`).
    #[command(hide = true)]
    OutofcoreChild {
        #[command(flatten)]
        case: outofcore::Case,
    },
    /// One tensor workload in this process (used by `tensor`).
    #[command(hide = true)]
    TensorChild {
        #[arg(long)]
        workload: String,
        #[command(flatten)]
        sizes: tensor::Sizes,
    },
    /// Spill and restore throughput beside a plain disk write, and a workload holding
    /// three times the pool.
    Store {
        /// Pool size in MiB.
        #[arg(long, default_value_t = 1024)]
        pool_mib: u64,
        /// Object size in MiB.
        #[arg(long, default_value_t = 64)]
        object_mib: u64,
        /// Data held, as a multiple of the pool.
        #[arg(long, default_value_t = 3)]
        times_pool: u64,
        /// Spill directory (also where the disk figure is measured).
        #[arg(long, default_value = "/tmp/ares-bench-spill")]
        spill_dir: std::path::PathBuf,
    },
    /// Lineage reconstruction on two nodes on loopback: a chain of tasks with and
    /// without one node killed halfway (`recovery_ratio_small`, `recovery_ratio_10MB`).
    Recovery {
        /// Links in the chain.
        #[arg(long, default_value_t = 100)]
        n: usize,
        /// Milliseconds each link's task takes.
        #[arg(long, default_value_t = 100)]
        ms: u64,
    },
    /// Between nodes on loopback (daemons started with the `ares` binary beside this
    /// one): an object pulled from one node into another, beside a raw TCP copy.
    Cluster {
        /// Runs per figure; the median is reported.
        #[arg(long, default_value_t = 5)]
        repeats: usize,
        /// Object size in MiB.
        #[arg(long, default_value_t = 1024)]
        mib: usize,
        /// Only the TCP and transfer figures (for tuning the transport).
        #[arg(long)]
        xfer_only: bool,
    },
}

/// `0..n`, for a task of `n` return values (the envelope's `env_returns_3k`).
#[ares::remote]
fn count_to(n: u32) -> Vec<u32> {
    (0..n).collect()
}

#[ares::remote]
fn noop() -> i64 {
    0
}

/// The actor of `ray_micro.py`: one method returning 0.
struct Actor;

#[ares::actor]
impl Actor {
    fn new() -> Self {
        Actor
    }

    fn call(&self) -> i64 {
        0
    }
}

#[ares::remote]
fn inc(x: i64) -> i64 {
    x + 1
}

/// The node a task ran on.
#[ares::remote]
fn node_of() -> ares::NodeId {
    ares::node_id().unwrap_or_default()
}

#[ares::remote]
fn count_args(xs: Vec<i64>) -> i64 {
    xs.len() as i64
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = v.len();
    if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
}

pub(crate) fn emit(bench: &str, unit: &str, runs: Vec<f64>) {
    let loadavg = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load: Vec<f64> = loadavg.split_whitespace().take(3).filter_map(|x| x.parse().ok()).collect();
    let line = json!({"bench": bench, "value": median(runs.clone()), "unit": unit, "runs": runs,
                      "engine": "ares", "loadavg": load});
    println!("{line}");
}

fn repeat(n: usize, mut f: impl FnMut() -> Result<f64>) -> Result<Vec<f64>> {
    (0..n).map(|_| f()).collect()
}

fn memcpy_gbps(bytes: usize, repeats: usize) -> Vec<f64> {
    let src = vec![1u8; bytes];
    let mut dst = vec![0u8; bytes];
    dst.copy_from_slice(&src); // fault the destination in, as a reused store pool is
    (0..repeats)
        .map(|_| {
            let t = Instant::now();
            dst.copy_from_slice(std::hint::black_box(&src));
            std::hint::black_box(&dst);
            bytes as f64 / 1e9 / t.elapsed().as_secs_f64()
        })
        .collect()
}

struct Micro {
    repeats: usize,
    num_cpus: u32,
    n_sync: usize,
    n_async: usize,
    n_chain: usize,
    n_fanin: usize,
    n_put: usize,
    only: String,
    max_inline_bytes: Option<usize>,
}

fn micro(m: Micro) -> Result<()> {
    let Micro { repeats, num_cpus, n_sync, n_async, n_chain, n_fanin, n_put, only, max_inline_bytes } = m;
    let on = |letter: &str| only.split(',').any(|x| x.trim() == letter);
    let t = Instant::now();
    let mut cfg = ares::Config::default().num_cpus(num_cpus);
    if let Some(n) = max_inline_bytes {
        cfg.max_inline_bytes = n;
    }
    ares::init_with(cfg)?;
    let startup = t.elapsed().as_secs_f64();
    println!(
        "{}",
        json!({"bench": "meta", "engine": "ares", "startup_s": startup, "num_cpus": num_cpus,
                          "repeats": repeats})
    );
    // Warm up as the peer scripts do: workers started, leases taken.
    let warm: Vec<_> = (0..200).map(|_| ares::remote(noop).call()).collect();
    ares::get_all(&warm)?;

    if on("a") {
        emit(
            "a_sync_tasks",
            "tasks/s",
            repeat(repeats, || {
                let t = Instant::now();
                for i in 0..n_sync {
                    anyhow::ensure!(ares::get(&ares::remote(noop).call())? == 0, "task {i} returned a wrong value");
                }
                Ok(n_sync as f64 / t.elapsed().as_secs_f64())
            })?,
        );
    }
    if on("b") {
        emit(
            "b_async_tasks",
            "tasks/s",
            repeat(repeats, || {
                let t = Instant::now();
                let refs: Vec<_> = (0..n_async).map(|_| ares::remote(noop).call()).collect();
                let got = ares::get_all(&refs)?;
                let secs = t.elapsed().as_secs_f64();
                anyhow::ensure!(got.len() == n_async && got.iter().all(|v| *v == 0), "wrong task results");
                Ok(n_async as f64 / secs)
            })?,
        );
    }
    if on("c") {
        // As in ray_micro.py: one actor, created and warmed before timing.
        let actor = ares::actor(Actor::new).spawn();
        ares::get(&actor.call(Actor::call, ()))?;
        emit(
            "c_actor_calls_sync",
            "calls/s",
            repeat(repeats, || {
                let t = Instant::now();
                for i in 0..n_sync {
                    anyhow::ensure!(ares::get(&actor.call(Actor::call, ()))? == 0, "call {i} returned a wrong value");
                }
                Ok(n_sync as f64 / t.elapsed().as_secs_f64())
            })?,
        );
        emit(
            "c_actor_calls_async",
            "calls/s",
            repeat(repeats, || {
                let t = Instant::now();
                let refs: Vec<_> = (0..n_async).map(|_| actor.call(Actor::call, ())).collect();
                let got = ares::get_all(&refs)?;
                let secs = t.elapsed().as_secs_f64();
                anyhow::ensure!(got.len() == n_async && got.iter().all(|v| *v == 0), "wrong call results");
                Ok(n_async as f64 / secs)
            })?,
        );
        ares::kill(&actor)?;
    }
    if on("d") {
        let mut puts = Vec::new();
        let mut gets = Vec::new();
        for _ in 0..repeats {
            let t = Instant::now();
            let refs: Vec<_> = (0..n_put).map(|i| ares::put(i as i64)).collect::<ares::Result<_>>()?;
            puts.push(n_put as f64 / t.elapsed().as_secs_f64());
            let t = Instant::now();
            for (i, r) in refs.iter().enumerate() {
                anyhow::ensure!(std::hint::black_box(ares::get(r)?) == i as i64, "put {i} read back wrong");
            }
            gets.push(n_put as f64 / t.elapsed().as_secs_f64());
        }
        // With nothing inline, every small value goes through the shared-memory store, as
        // Ray's `ray.put` does.
        let store = max_inline_bytes == Some(0);
        emit(if store { "d_put_store" } else { "d_put_small" }, "calls/s", puts);
        emit(if store { "d_get_store" } else { "d_get_small" }, "calls/s", gets);
        if max_inline_bytes.is_none() {
            let out = std::process::Command::new(std::env::current_exe()?)
                .args(["micro", "--only", "d", "--max-inline-bytes", "0"])
                .args(["--repeats", &repeats.to_string(), "--n-put", &n_put.to_string()])
                .output()?;
            anyhow::ensure!(out.status.success(), "the d_*_store child failed: {}", out.status);
            for line in String::from_utf8_lossy(&out.stdout).lines().filter(|l| l.contains("_store\"")) {
                println!("{line}");
            }
        }
    }
    if on("e") {
        for (name, bytes) in [("1MB", 1_000_000usize), ("100MB", 100_000_000), ("1GB", 1_000_000_000)] {
            let value: Vec<f64> = vec![1.0; bytes / 8];
            let mut put_runs = Vec::new();
            let mut get_runs = Vec::new();
            let mut get_us = Vec::new();
            for _ in 0..repeats {
                // Like ray.put(arr): the caller keeps its array, so its free is not timed.
                let t = Instant::now();
                let r = ares::put_ref(std::hint::black_box(&value))?;
                put_runs.push(bytes as f64 / 1e9 / t.elapsed().as_secs_f64());
                let t = Instant::now();
                let view = ares::get_view(&r)?;
                let n = std::hint::black_box(view.len());
                let took = t.elapsed().as_secs_f64();
                get_runs.push(bytes as f64 / 1e9 / took);
                get_us.push(took * 1e6);
                anyhow::ensure!(n == bytes / 8, "view has {n} elements");
                anyhow::ensure!(
                    view.first().map(|v| v.to_native()) == Some(1.0) && view.last().map(|v| v.to_native()) == Some(1.0),
                    "view reads other values"
                );
            }
            if name == "100MB" {
                emit("e_put_100MB", "GB/s", put_runs);
            } else {
                emit(&format!("e_put_{name}"), "GB/s", put_runs);
            }
            emit(&format!("e_get_{name}"), "GB/s", get_runs);
            // A zero-copy get costs a pin and a map, not the bytes: its latency says more.
            emit(&format!("e_get_{name}_us"), "us", get_us);
            emit(&format!("memcpy_{name}"), "GB/s", memcpy_gbps(bytes, repeats));
        }
    }
    if on("f") {
        emit(
            "f_chain_tasks",
            "tasks/s",
            repeat(repeats, || {
                let t = Instant::now();
                let mut r = ares::remote(inc).call(0);
                for _ in 1..n_chain {
                    r = ares::remote(inc).call(r);
                }
                let v = ares::get(&r)?;
                anyhow::ensure!(v == n_chain as i64, "chain gave {v}");
                Ok(n_chain as f64 / t.elapsed().as_secs_f64())
            })?,
        );
    }
    if on("g") {
        emit(
            "g_fanin_tasks",
            "tasks/s",
            repeat(repeats, || {
                let t = Instant::now();
                let refs: Vec<_> = (0..n_fanin).map(|_| ares::remote(noop).call()).collect();
                let v = ares::get(&ares::remote(count_args).call(refs))?;
                anyhow::ensure!(v == n_fanin as i64, "fan-in counted {v}");
                Ok((n_fanin + 1) as f64 / t.elapsed().as_secs_f64())
            })?,
        );
    }
    ares::shutdown();
    Ok(())
}

/// Sequential write of `bytes` into a new file in `dir`, then fsync: GB/s.
fn disk_write_gbps(dir: &std::path::Path, bytes: usize) -> Result<f64> {
    use std::io::Write;
    let path = dir.join(format!("disk-write-{}.bin", std::process::id()));
    let chunk = vec![0x5Au8; 8 << 20];
    let t = Instant::now();
    let mut f = std::fs::File::create(&path)?;
    let mut left = bytes;
    while left > 0 {
        let n = left.min(chunk.len());
        f.write_all(&chunk[..n])?;
        left -= n;
    }
    f.sync_all()?;
    let secs = t.elapsed().as_secs_f64();
    drop(f);
    std::fs::remove_file(&path)?;
    Ok(bytes as f64 / 1e9 / secs)
}

fn store(pool_mib: u64, object_mib: u64, times_pool: u64, spill_dir: std::path::PathBuf) -> Result<()> {
    std::fs::create_dir_all(&spill_dir)?;
    let disk = disk_write_gbps(&spill_dir, 1 << 30)?;
    emit("disk_write_GBps", "GB/s", vec![disk]);
    let mut cfg = ares::Config::default().num_cpus(2).object_store_memory(pool_mib << 20).spill_dir(&spill_dir);
    cfg.object_create_timeout = std::time::Duration::from_secs(120);
    ares::init_with(cfg)?;
    let object = (object_mib << 20) as usize;
    let count = (pool_mib * times_pool / object_mib) as usize;
    let data: Vec<u8> = (0..object).map(|i| (i % 251) as u8).collect();
    // The workload: hold `times_pool` x the pool, then read everything back once.
    let t = Instant::now();
    let refs: Vec<_> = (0..count).map(|_| ares::put_ref(&data)).collect::<ares::Result<_>>()?;
    let put_s = t.elapsed().as_secs_f64();
    let t_read = Instant::now();
    for r in &refs {
        let v = ares::get_view(r)?;
        anyhow::ensure!(v.len() == object && v[object - 1] == ((object - 1) % 251) as u8, "bad read back");
    }
    let read_s = t_read.elapsed().as_secs_f64();
    let s = ares::node_stats()?;
    let spilled = s.store_spilled_bytes_total as f64 / 1e9;
    let restored = s.store_restored_bytes_total as f64 / 1e9;
    emit("spill_GBps", "GB/s", vec![spilled / s.store_spill_seconds.max(1e-9)]);
    emit("restore_GBps", "GB/s", vec![restored / s.store_restore_seconds.max(1e-9)]);
    let workload = put_s + read_s;
    // The least time the disk allows for what had to move: every spilled and restored
    // byte at the measured sequential write speed.
    let disk_bound = (spilled + restored) / disk;
    emit("hold_3x_pool_s", "s", vec![workload]);
    emit("hold_3x_pool_disk_bound_s", "s", vec![disk_bound]);
    emit("hold_3x_pool_vs_disk_bound", "ratio", vec![workload / disk_bound.max(1e-9)]);
    println!(
        "{}",
        json!({"bench": "store_detail", "engine": "ares", "objects": count, "object_bytes": object,
               "put_s": put_s, "read_s": read_s, "spilled_GB": spilled, "restored_GB": restored,
               "spill_s": s.store_spill_seconds, "restore_s": s.store_restore_seconds,
               "spill_files_live": s.store_spill_files})
    );
    drop(refs);
    ares::shutdown();
    Ok(())
}

fn main() -> Result<()> {
    match Cli::parse().cmd {
        Cmd::Cluster { repeats, mib, xfer_only } => cluster::run(repeats, mib, xfer_only),
        Cmd::Store { pool_mib, object_mib, times_pool, spill_dir } => {
            store(pool_mib, object_mib, times_pool, spill_dir)
        }
        Cmd::Micro { repeats, num_cpus, n_sync, n_async, n_chain, n_fanin, n_put, only, max_inline_bytes } => {
            micro(Micro { repeats, num_cpus, n_sync, n_async, n_chain, n_fanin, n_put, only, max_inline_bytes })
        }
        Cmd::Tensor { workloads, repeats, sizes } => tensor::parent(&workloads, repeats, &sizes),
        Cmd::TensorChild { workload, sizes } => tensor::child(&workload, &sizes),
        Cmd::Gemm { n, repeats } => tensor::gemm(n, repeats),
        Cmd::Envelope => envelope::run(),
        Cmd::Outofcore { case } => outofcore::parent(&case),
        Cmd::OutofcoreChild { case } => outofcore::child(&case),
        Cmd::Dataframe { repeats, sizes } => dataframe::run(repeats, &sizes),
        Cmd::Recovery { n, ms } => recovery::run(n, ms),
    }
}
