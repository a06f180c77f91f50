//! `ares-bench cluster`: node daemons on loopback (started with the `ares` binary next to
//! this one, stopped at the end), measuring what crosses nodes.
//!
//! - `tcp_1GB_GBps`: a raw TCP loopback copy of the same size, from a filled buffer into
//!   a pre-faulted one, on one connection: the bar's reference.
//! - `xfer_1GB_GBps`: an object `put` by this process on node A pulled into node B's pool
//!   (request to answer; the copy is deleted between runs). The first run's copy is read
//!   back and checked against the value.
//! - `a_sync_tasks_remote`, `b_async_tasks_remote`: see [`remote_tasks`].
//! - `w2_2nodes_ratio`: see [`w2_ratio`].

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, anyhow, ensure};
use ares_common::codec::Value;
use ares_raylet::tool_client::ToolClient;

use crate::emit;

fn ares_bin() -> Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let bin = exe.with_file_name("ares");
    ensure!(bin.exists(), "{} is missing: cargo build --release -p ares-cli --bin ares", bin.display());
    Ok(bin)
}

/// Starts a daemon; returns its summary.
pub(crate) fn start(root: &Path, args: &[&str]) -> Result<String> {
    let exe = std::env::current_exe()?;
    let cpus: &[&str] = if args.contains(&"--num-cpus") { &[] } else { &["--num-cpus", "1"] };
    let out = Command::new(ares_bin()?)
        .args(["start", "--node-ip-address", "127.0.0.1", "--worker-program"])
        .arg(&exe)
        .args(cpus)
        .arg("--session-root")
        .arg(root)
        .args(args)
        .env_remove("ARES_ADDRESS")
        .output()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    ensure!(out.status.success(), "ares start failed:\n{text}");
    Ok(text)
}

pub(crate) fn field(summary: &str, key: &str) -> Result<String> {
    summary
        .lines()
        .find_map(|l| l.trim().strip_prefix(key).map(|v| v.trim().to_string()))
        .ok_or_else(|| anyhow!("no {key} in:\n{summary}"))
}

pub(crate) fn stop(root: &Path) {
    if let Ok(bin) = ares_bin() {
        let _ = Command::new(bin).args(["stop", "--session-root"]).arg(root).stdout(Stdio::null()).status();
    }
}

fn tcp_gbps(bytes: usize) -> Result<f64> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let src = vec![7u8; bytes];
    let receiver = std::thread::spawn(move || -> Result<Vec<u8>> {
        let mut dst = vec![1u8; bytes]; // faulted in before the clock starts
        let (mut s, _) = listener.accept()?;
        s.write_all(b"go")?;
        s.read_exact(&mut dst)?;
        Ok(dst)
    });
    let mut s = std::net::TcpStream::connect(addr)?;
    let mut go = [0u8; 2];
    s.read_exact(&mut go)?;
    let t = Instant::now();
    s.write_all(&src)?;
    let dst = receiver.join().map_err(|_| anyhow!("receiver panicked"))??;
    let secs = t.elapsed().as_secs_f64();
    ensure!(dst[0] == 7 && dst[bytes - 1] == 7, "the TCP copy lost bytes");
    Ok(bytes as f64 / secs / 1e9)
}

/// `a_sync_tasks_remote` and `b_async_tasks_remote`: Ray's `a` and `b` micro benchmarks
/// (a no-op task, waited for one at a time, or 10 000 submitted and then waited for)
/// with the driver on node A and every task held to node B: each lease request is
/// spilled back from A to B, and pushes and replies cross QUIC. Every result is checked.
fn remote_tasks(repeats: usize, node_a: ares::NodeId) -> Result<()> {
    let deadline = Instant::now() + std::time::Duration::from_secs(30);
    let node_b = loop {
        let other = ares::nodes()?.into_iter().find(|n| n.node_id != node_a && n.alive && n.addr.is_some());
        if let Some(n) = other {
            break n.node_id;
        }
        ensure!(Instant::now() < deadline, "node B never appeared in node A's view");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let on_b = || ares::TaskOptions::new().node_affinity(node_b, false);
    let where_ = ares::get(&ares::remote(crate::node_of).options(on_b()).call())?;
    ensure!(where_ == node_b, "a task held to node B ran on {where_}");
    let (n_sync, n_async) = (2000, 10_000);
    let runs = (0..repeats)
        .map(|_| {
            let t = Instant::now();
            for i in 0..n_sync {
                let r = ares::get(&ares::remote(crate::inc).options(on_b()).call(i))?;
                ensure!(r == i + 1, "inc({i}) gave {r}");
            }
            Ok(n_sync as f64 / t.elapsed().as_secs_f64())
        })
        .collect::<Result<_>>()?;
    emit("a_sync_tasks_remote", "tasks/s", runs);
    let runs = (0..repeats)
        .map(|_| {
            let t = Instant::now();
            let refs: Vec<_> = (0..n_async).map(|i| ares::remote(crate::inc).options(on_b()).call(i)).collect();
            let got = ares::get_all(&refs)?;
            let secs = t.elapsed().as_secs_f64();
            ensure!(got.iter().enumerate().all(|(i, r)| *r == i as i64 + 1), "wrong results");
            Ok(n_async as f64 / secs)
        })
        .collect::<Result<_>>()?;
    emit("b_async_tasks_remote", "tasks/s", runs);
    Ok(())
}

/// W2 of the tensor workloads in a child process driving the node at `socket`; its
/// wall time (start-up excluded), checked against the expected sum.
fn w2_wall(socket: &str) -> Result<f64> {
    let sizes = crate::tensor::Sizes {
        w1_n: 0,
        w1_chunk: 1,
        w2_n: 400_000_000,
        w2_chunk: 10_000_000,
        w3_n: 0,
        w3_chunk: 1,
        sort_n: 0,
        sort_chunk: 1,
        fft_n: 0,
        fft_chunk: 1,
        preallocate_store: false,
        store_gib: None,
        num_cpus: 2,
        max_in_flight: 8,
    };
    let out = Command::new(std::env::current_exe()?)
        .args(crate::tensor::child_args(&sizes, "W2"))
        .env("ARES_ADDRESS", socket)
        .stderr(Stdio::inherit())
        .output()?;
    ensure!(out.status.success(), "the W2 child failed: {}", out.status);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).context("the W2 child's line")?;
    let result = v["result"].as_f64().context("result")?;
    // sum((a + 1) * 2) over uniform [0, 1): about 3 * n, within a few standard deviations.
    let want = 3.0 * sizes.w2_n as f64;
    ensure!((result - want).abs() < want * 1e-3, "W2 gave {result}, expected about {want}");
    v["wall_s"].as_f64().context("wall_s")
}

/// `w2_1node_s`, `w2_2nodes_s` and `w2_2nodes_ratio`: W2 on one node of 2 CPUs, then on
/// the two 1-CPU nodes whose socket of node A is `socket_a`.
fn w2_ratio(repeats: usize, base: &Path, socket_a: &str) -> Result<()> {
    let one = base.join("one");
    let single = (|| -> Result<Vec<f64>> {
        let head = start(&one, &["--head", "--port", "0", "--num-cpus", "2", "--object-store-memory", "3G"])?;
        let socket = field(&head, "local socket:")?;
        (0..repeats).map(|_| w2_wall(&socket)).collect()
    })();
    stop(&one);
    let single = single?;
    let two: Vec<f64> = (0..repeats).map(|_| w2_wall(socket_a)).collect::<Result<_>>()?;
    let median = |v: &[f64]| {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let ratio = median(&two) / median(&single);
    emit("w2_1node_s", "s", single);
    emit("w2_2nodes_s", "s", two);
    emit("w2_2nodes_ratio", "ratio", vec![ratio]);
    Ok(())
}

pub(crate) fn run(repeats: usize, mib: usize, xfer_only: bool) -> Result<()> {
    let bytes = mib << 20;
    let runs: Vec<f64> = (0..repeats).map(|_| tcp_gbps(bytes)).collect::<Result<_>>()?;
    emit("tcp_1GB_GBps", "GB/s", runs);

    let base = std::env::temp_dir().join(format!("ares-bench-cluster-{}", std::process::id()));
    let (ra, rb) = (base.join("a"), base.join("b"));
    let pool = format!("{}M", mib + mib / 2 + 64);
    let result = (|| -> Result<Vec<f64>> {
        let head = start(&ra, &["--head", "--port", "0", "--object-store-memory", &pool])?;
        let (addr, token) = (field(&head, "cluster address:")?, field(&head, "join token:")?);
        let member = start(&rb, &["--address", &addr, "--token", &token, "--object-store-memory", &pool])?;
        let socket_b = field(&member, "local socket:")?;
        let mut cfg = ares::Config::default();
        cfg.address = Some(field(&head, "local socket:")?);
        ares::init_with(cfg)?;
        let value: Vec<u8> = (0..bytes).map(|i| (i % 251) as u8).collect();
        let want = blake3::hash(&value);
        let r = ares::put(value)?;
        let node_a = ares::node_stats()?.node_id;
        let mut b = ToolClient::connect(&socket_b).context("connecting to node B")?;
        let mut runs = Vec::new();
        for i in 0..repeats {
            let t = Instant::now();
            b.pull(r.id(), &[node_a], 1)?;
            runs.push(bytes as f64 / t.elapsed().as_secs_f64() / 1e9);
            if i == 0 {
                let (offset, size) = b.pin(r.id())?;
                let pool = b.pool()?;
                // SAFETY: pinned above until the release below.
                let got = unsafe { pool.slice(offset, size)? };
                let v = <Vec<u8> as Value>::access(got).map_err(|e| anyhow!("{e}"))?;
                ensure!(blake3::hash(v.as_slice()) == want, "the pulled copy differs from the value");
                b.release(r.id())?;
            }
            b.delete(r.id())?;
            let _ = b.stats()?; // the delete is processed before the next pull
        }
        drop(r);
        if !xfer_only {
            remote_tasks(repeats, node_a)?;
        }
        ares::shutdown();
        if !xfer_only {
            w2_ratio(repeats, &base, &field(&head, "local socket:")?)?;
        }
        Ok(runs)
    })();
    stop(&ra);
    stop(&rb);
    // ARES_BENCH_KEEP=1 keeps the daemons' logs under <tmp>/ares-bench-cluster-<pid>.
    if std::env::var_os("ARES_BENCH_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(&base);
    }
    emit("xfer_1GB_GBps", "GB/s", result?);
    Ok(())
}
