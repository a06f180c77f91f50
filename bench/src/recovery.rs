//! `ares-bench recovery`: the Ownership paper's reconstruction experiment. Two node
//! daemons on loopback (started with the `ares` binary beside this one); this process
//! drives from node A. A chain of `n` tasks of `ms` milliseconds each, task `i` taking
//! task `i - 1`'s output, runs once undisturbed and once with node B killed (SIGKILL)
//! when half the chain is done, while B runs a link. In the first half, runs of 10 links
//! prefer node A and B in turn (links 10-19, 30-39, ... on B); in the second half, node A,
//! in both runs: the two runs place the same work
//! alike and differ only by the failure (otherwise the failed run's second half would
//! skip the transfers between nodes the undisturbed run pays, and look cheaper). The
//! driver keeps a ref to every link (the whole trajectory, as an iterative job keeping
//! its history) and checks every link's value afterwards, rebuilt ones included.
//!
//! - `recovery_ratio_small`: links are 8-byte integers, kept inline in the owner: the
//!   kill costs the link running on B (retried) and the time to declare B dead.
//! - `recovery_ratio_10MB`: links are 10 MiB byte vectors in the nodes' stores. A run of
//!   links on B is consumed on B, so only its last link has a copy on A (pulled by the
//!   next link): the others are lost with B and rebuilt by re-running their tasks, each
//!   from its predecessor, from the last link before the run (on A); the link B was
//!   running needs the run it ends rebuilt first.
//!
//! Each figure is the chain's wall time with the failure divided by its wall time
//! without, in the same run. The daemons declare a node dead after 1 s of silence
//! (`--node-timeout-ms 1000`; the default is 10 s), so detection is part of the figure.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Result, anyhow, ensure};

use crate::cluster::{field, start, stop};
use crate::emit;

const BIG: usize = 10 << 20;

/// Link `i` of the small chain.
#[ares::remote]
pub(crate) fn chain_small(prev: u64, ms: u64) -> u64 {
    std::thread::sleep(Duration::from_millis(ms));
    prev.wrapping_mul(31).wrapping_add(7)
}

/// The first link of the big chain: made by a task, so that it can be rebuilt too.
#[ares::remote]
pub(crate) fn chain_big_seed(ms: u64) -> Vec<u8> {
    std::thread::sleep(Duration::from_millis(ms));
    (0..BIG).map(|j| (j % 251) as u8).collect()
}

/// Link `step` of the big chain: the previous one with one byte changed.
#[ares::remote]
pub(crate) fn chain_big(prev: Vec<u8>, step: u64, ms: u64) -> Vec<u8> {
    std::thread::sleep(Duration::from_millis(ms));
    let mut v = prev;
    let k = (step as usize * 4099) % v.len();
    v[k] = v[k].wrapping_add(1);
    v
}

/// Where node B's daemon runs and how to reach the cluster.
struct Nodes {
    a: ares::NodeId,
    b: ares::NodeId,
    b_pid: u32,
}

fn pid_of(summary: &str) -> Result<u32> {
    let line = field(summary, "ares:")?;
    let pid = line.split("(pid ").nth(1).ok_or_else(|| anyhow!("no pid in {line}"))?;
    Ok(pid.trim_end_matches(')').parse()?)
}

/// Starts node A (the head) and node B under `base`, and joins A as the driver.
fn cluster(base: &Path, pool: &str) -> Result<Nodes> {
    let common = ["--num-cpus", "2", "--node-timeout-ms", "1000", "--object-store-memory", pool];
    let mut head_args = vec!["--head", "--port", "0"];
    head_args.extend_from_slice(&common);
    let head = start(&base.join("a"), &head_args)?;
    let (addr, token) = (field(&head, "cluster address:")?, field(&head, "join token:")?);
    let mut member_args = vec!["--address", addr.as_str(), "--token", token.as_str()];
    member_args.extend_from_slice(&common);
    let member = start(&base.join("b"), &member_args)?;
    let mut cfg = ares::Config::default();
    cfg.address = Some(field(&head, "local socket:")?);
    ares::init_with(cfg)?;
    let a = ares::node_id()?;
    let deadline = Instant::now() + Duration::from_secs(30);
    let b = loop {
        if let Some(n) = ares::nodes()?.into_iter().find(|n| n.node_id != a && n.alive && n.addr.is_some()) {
            break n.node_id;
        }
        ensure!(Instant::now() < deadline, "node B never appeared in node A's view");
        std::thread::sleep(Duration::from_millis(20));
    };
    Ok(Nodes { a, b, b_pid: pid_of(&member)? })
}

fn kill(pid: u32) -> Result<()> {
    let pid = rustix::process::Pid::from_raw(pid as i32).ok_or_else(|| anyhow!("bad pid {pid}"))?;
    rustix::process::kill_process(pid, rustix::process::Signal::KILL)?;
    Ok(())
}

/// Runs one chain; if `kill_b`, kills node B once the link before B's last one is ready
/// (so B dies running a link). Returns the wall time and the links.
fn run_chain<T: ares::Value>(
    nodes: &Nodes,
    n: usize,
    kill_b: bool,
    link: impl Fn(Option<&ares::ObjectRef<T>>, usize, ares::TaskOptions) -> ares::ObjectRef<T>,
) -> Result<(f64, Vec<ares::ObjectRef<T>>)> {
    let on_b = |i: usize| i <= n / 2 && (i / 10) % 2 == 1;
    let prefer = |i: usize| ares::TaskOptions::new().node_affinity(if on_b(i) { nodes.b } else { nodes.a }, true);
    let t = Instant::now();
    let mut links: Vec<ares::ObjectRef<T>> = Vec::with_capacity(n);
    for i in 0..n {
        let r = link(links.last(), i, prefer(i));
        links.push(r);
    }
    if kill_b {
        let last_b = (0..n).rev().find(|i| on_b(*i)).ok_or_else(|| anyhow!("no link on B"))?;
        ares::wait(std::slice::from_ref(&links[last_b - 1]), 1, None);
        kill(nodes.b_pid)?;
    }
    ares::wait(std::slice::from_ref(&links[n - 1]), 1, None);
    let secs = t.elapsed().as_secs_f64();
    Ok((secs, links))
}

fn small(nodes: &Nodes, n: usize, ms: u64, kill_b: bool) -> Result<f64> {
    let (secs, links) = run_chain(nodes, n, kill_b, |prev, _, opts| match prev {
        None => ares::remote(chain_small).options(opts).call(1, ms),
        Some(p) => ares::remote(chain_small).options(opts).call(p, ms),
    })?;
    let mut want = 1u64;
    for (i, l) in links.iter().enumerate() {
        want = want.wrapping_mul(31).wrapping_add(7);
        ensure!(ares::get(l)? == want, "small link {i} is wrong");
    }
    Ok(secs)
}

fn big(nodes: &Nodes, n: usize, ms: u64, kill_b: bool) -> Result<f64> {
    let (secs, links) = run_chain(nodes, n, kill_b, |prev, i, opts| match prev {
        None => ares::remote(chain_big_seed).options(opts).call(ms),
        Some(p) => ares::remote(chain_big).options(opts).call(p, i as u64, ms),
    })?;
    let mut want: Vec<u8> = (0..BIG).map(|j| (j % 251) as u8).collect();
    for (i, l) in links.iter().enumerate() {
        if i > 0 {
            let k = (i * 4099) % BIG;
            want[k] = want[k].wrapping_add(1);
        }
        ensure!(ares::get(l)? == want, "10 MiB link {i} is wrong");
    }
    Ok(secs)
}

/// One figure: a fresh two-node cluster, the chain once to warm it (workers started,
/// pool pages touched; not measured), then without and with the failure.
fn ratio(name: &str, n: usize, ms: u64, pool: &str, chain: fn(&Nodes, usize, u64, bool) -> Result<f64>) -> Result<()> {
    let base = std::env::temp_dir().join(format!("ares-bench-recovery-{}-{name}", std::process::id()));
    let result = (|| -> Result<(f64, f64)> {
        let nodes = cluster(&base, pool)?;
        chain(&nodes, n, ms, false)?;
        let plain = chain(&nodes, n, ms, false)?;
        let failed = chain(&nodes, n, ms, true)?;
        Ok((plain, failed))
    })();
    ares::shutdown();
    stop(&base.join("a"));
    stop(&base.join("b"));
    if std::env::var_os("ARES_BENCH_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(&base);
    }
    let (plain, failed) = result?;
    emit(&format!("recovery_{name}_plain_s"), "s", vec![plain]);
    emit(&format!("recovery_{name}_failed_s"), "s", vec![failed]);
    emit(&format!("recovery_ratio_{name}"), "x", vec![failed / plain]);
    Ok(())
}

pub(crate) fn run(n: usize, ms: u64) -> Result<()> {
    ratio("small", n, ms, "256M", small)?;
    // Every link is held: about n × 10 MiB on A once B's links are rebuilt there.
    let pool = format!("{}M", n * 11 + 512);
    ratio("10MB", n, ms, &pool, big)
}
