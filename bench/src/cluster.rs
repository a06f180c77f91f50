//! `ares-bench cluster`: node daemons on loopback (started with the `ares` binary next to
//! this one, stopped at the end), measuring what crosses nodes.
//!
//! - `tcp_1GB_GBps`: a raw TCP loopback copy of the same size, from a filled buffer into
//!   a pre-faulted one, on one connection: the bar's reference.
//! - `xfer_1GB_GBps`: an object `put` by this process on node A pulled into node B's pool
//!   (request to answer; the copy is deleted between runs). The first run's copy is read
//!   back and checked against the value.

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
fn start(root: &Path, args: &[&str]) -> Result<String> {
    let exe = std::env::current_exe()?;
    let out = Command::new(ares_bin()?)
        .args(["start", "--node-ip-address", "127.0.0.1", "--num-cpus", "1", "--worker-program"])
        .arg(&exe)
        .arg("--session-root")
        .arg(root)
        .args(args)
        .env_remove("ARES_ADDRESS")
        .output()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    ensure!(out.status.success(), "ares start failed:\n{text}");
    Ok(text)
}

fn field(summary: &str, key: &str) -> Result<String> {
    summary
        .lines()
        .find_map(|l| l.trim().strip_prefix(key).map(|v| v.trim().to_string()))
        .ok_or_else(|| anyhow!("no {key} in:\n{summary}"))
}

fn stop(root: &Path) {
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

pub(crate) fn run(repeats: usize, mib: usize) -> Result<()> {
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
        ares::shutdown();
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
