//! Latency of one synchronous call, as a distribution: 20 000 `get(actor.call(..))` and
//! 20 000 `get(remote(f).call())` on the embedded 2-CPU cluster, one JSON line each with
//! the mean and percentiles in microseconds. Throughput figures of a few thousand calls
//! swing ±15% on shared 2-vCPU machines; the distribution shows whether a change moved
//! the typical call or only the tail.
//!
//! `cargo run --release -p ares-bench --example sync_latency`

use std::time::Instant;

struct Echo;

#[ares::actor]
impl Echo {
    fn new() -> Self {
        Echo
    }
    fn echo(&self, x: u64) -> u64 {
        x
    }
}

#[ares::remote]
fn echo(x: u64) -> u64 {
    x
}

fn main() -> anyhow::Result<()> {
    ares::init_with(ares::Config::default().num_cpus(2))?;
    let actor = ares::actor(Echo::new).spawn();
    for i in 0..200 {
        anyhow::ensure!(ares::get(&actor.call(Echo::echo, i))? == i);
        anyhow::ensure!(ares::get(&ares::remote(echo).call(i))? == i);
    }
    const N: usize = 20_000;
    for name in ["actor_call_sync_us", "task_sync_us"] {
        let mut lat = Vec::with_capacity(N);
        for i in 0..N as u64 {
            let t = Instant::now();
            let got = if name.starts_with("actor") {
                ares::get(&actor.call(Echo::echo, i))?
            } else {
                ares::get(&ares::remote(echo).call(i))?
            };
            lat.push(t.elapsed().as_nanos() as f64 / 1000.0);
            anyhow::ensure!(got == i, "{name}: call {i} returned {got}");
        }
        lat.sort_by(f64::total_cmp);
        let p = |q: f64| lat[((N as f64) * q) as usize];
        let mean = lat.iter().sum::<f64>() / N as f64;
        println!(
            "{}",
            serde_json::json!({"bench": name, "unit": "us", "value": p(0.5), "mean": mean,
                "p10": p(0.1), "p90": p(0.9), "p99": p(0.99), "p999": p(0.999), "calls": N})
        );
    }
    ares::shutdown();
    Ok(())
}
