//! `ares-bench envelope`: the single-node scale envelope, in the spirit of Ray's published
//! one (embedded node, 2 CPUs). Each line has the wall time and the peak RSS of this
//! process (the driver, with the embedded raylet in it) and of the largest worker
//! process, and every result is checked.
//!
//! - `env_queued_1M`: 1 000 000 no-op tasks submitted from one driver, then all got.
//! - `env_args_10k`: one task taking 10 000 `ObjectRef`s (a `Vec<ObjectRef<i64>>` for its
//!   `Vec<i64>` parameter).
//! - `env_returns_3k`: one task with 3 000 return values (`num_returns(3000)`), all got.
//! - `env_get_10k`: one `get_all` of 10 000 objects of 100 KiB (each in the store).
//! - `env_actors_200`: 200 actors started (a process each), called once each, killed.

use std::time::Instant;

use anyhow::{Result, ensure};
use serde_json::json;

/// Peak resident set (VmHWM) of a process, in MB; 0 if it is gone.
fn peak_rss_mb(pid: &str) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.split_whitespace().next().and_then(|kb| kb.parse::<f64>().ok()))
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

fn emit(bench: &str, secs: f64, bar: f64) -> Result<()> {
    let workers = ares::node_stats()?.workers;
    let worker_peak = workers.iter().map(|w| peak_rss_mb(&w.pid.to_string())).fold(0.0, f64::max);
    let line = json!({"bench": bench, "value": secs, "unit": "s", "engine": "ares", "bar_s": bar,
                      "driver_peak_rss_MB": peak_rss_mb("self"), "worker_peak_rss_MB": worker_peak});
    println!("{line}");
    Ok(())
}

#[ares::remote]
fn noop() -> i64 {
    1
}

struct Pinger;

#[ares::actor]
impl Pinger {
    fn new() -> Self {
        Pinger
    }

    fn ping(&self, x: i64) -> i64 {
        x
    }
}

pub(crate) fn run() -> Result<()> {
    ares::init_with(ares::Config::default().num_cpus(2))?;

    let n = 1_000_000;
    let t = Instant::now();
    let refs: Vec<_> = (0..n).map(|_| ares::remote(noop).call()).collect();
    let mut sum = 0i64;
    for chunk in refs.chunks(10_000) {
        sum += ares::get_all(chunk)?.iter().sum::<i64>();
    }
    let secs = t.elapsed().as_secs_f64();
    ensure!(sum == n as i64, "the million tasks summed to {sum}");
    drop(refs);
    emit("env_queued_1M", secs, 20.0)?;

    let args: Vec<_> = (0..10_000i64).map(ares::put).collect::<ares::Result<_>>()?;
    let t = Instant::now();
    let total = ares::get(&ares::remote(crate::count_args).call(args))?;
    let secs = t.elapsed().as_secs_f64();
    ensure!(total == 10_000, "the task saw {total} arguments");
    emit("env_args_10k", secs, 2.0)?;

    let t = Instant::now();
    let returns = ares::remote(crate::count_to).num_returns(3000).call(3000);
    let got = ares::get_all(&returns)?;
    let secs = t.elapsed().as_secs_f64();
    ensure!(got.len() == 3000 && got.iter().enumerate().all(|(i, v)| *v == i as u32), "wrong return values");
    drop(returns);
    emit("env_returns_3k", secs, 2.0)?;

    let objects: Vec<_> =
        (0..10_000u32).map(|i| ares::put(vec![(i % 251) as u8; 100 << 10])).collect::<ares::Result<_>>()?;
    let t = Instant::now();
    let values = ares::get_all(&objects)?;
    let secs = t.elapsed().as_secs_f64();
    ensure!(values.iter().enumerate().all(|(i, v)| v.len() == 100 << 10 && v[0] == (i % 251) as u8), "wrong values");
    drop((values, objects));
    emit("env_get_10k", secs, 2.0)?;

    let t = Instant::now();
    let actors: Vec<_> = (0..200).map(|_| ares::actor(Pinger::new).try_spawn()).collect::<ares::Result<_>>()?;
    let calls: Vec<_> = actors.iter().enumerate().map(|(i, a)| a.call(Pinger::ping, i as i64)).collect();
    let got = ares::get_all(&calls)?;
    ensure!(got.iter().enumerate().all(|(i, v)| *v == i as i64), "an actor answered wrong");
    for a in &actors {
        ares::kill(a)?;
    }
    let secs = t.elapsed().as_secs_f64();
    emit("env_actors_200", secs, 2.0)?;
    drop(actors);
    ares::shutdown();
    Ok(())
}
