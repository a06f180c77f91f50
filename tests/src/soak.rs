//! `ares-soak [--seconds N] [--seed S]`: random mixed workloads on an embedded node for N
//! seconds (default 60) while worker processes are killed with SIGKILL at random, then
//! checks that every result was right and that the store, the session directory and the
//! process table are back to their baseline. Prints one JSON line; exits non-zero on any
//! failure. `scripts/soak` runs it; CI runs it for 60 s.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};

/// A value a task computes from its input; the driver checks it against the same formula.
fn expected(x: u64) -> u64 {
    x.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17) ^ x
}

#[ares::remote]
fn compute(x: u64) -> u64 {
    expected(x)
}

#[ares::remote]
fn add_up(xs: Vec<u64>) -> u64 {
    xs.iter().fold(0u64, |a, &b| a.wrapping_add(b))
}

#[ares::remote]
fn blob(seed: u64, len: u64) -> Vec<u8> {
    bytes(seed, len as usize)
}

#[ares::remote]
fn digest(v: Vec<u8>) -> [u8; 32] {
    *blake3::hash(&v).as_bytes()
}

fn bytes(seed: u64, len: usize) -> Vec<u8> {
    (0..len).map(|i| (expected(seed ^ i as u64) & 0xff) as u8).collect()
}

/// xorshift64*: reproducible for a seed, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// The value after `--name`, if given; a value that is not a number is an error naming it.
fn arg(name: &str) -> Result<Option<u64>> {
    let args: Vec<String> = std::env::args().collect();
    for a in &args[1..] {
        if a.starts_with("--") && a != "--seconds" && a != "--seed" {
            bail!("unknown option {a} (usage: ares-soak [--seconds N] [--seed S])");
        }
    }
    let Some(i) = args.iter().position(|a| a == name) else { return Ok(None) };
    let v = args.get(i + 1).with_context(|| format!("{name} needs a value"))?;
    v.parse().map(Some).with_context(|| format!("{name} {v:?}: expected a non-negative integer"))
}

fn retrying() -> ares::TaskOptions {
    // The computations are deterministic, so a task killed any number of times is simply
    // run again; a bound would only turn bad luck into a failure.
    ares::TaskOptions::new().max_retries(u32::MAX)
}

/// Kills a random worker with SIGKILL every 50-250 ms until `stop` is set, counting kills.
fn killer(seed: u64, stop: &std::sync::atomic::AtomicBool, kills: &std::sync::atomic::AtomicU64) {
    use std::sync::atomic::Ordering;
    let mut rng = Rng(seed);
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(50 + rng.below(200)));
        let Ok(stats) = ares::node_stats() else { continue };
        if let Some(w) = stats.workers.get(rng.below(stats.workers.len() as u64) as usize) {
            if let Some(pid) = rustix::process::Pid::from_raw(w.pid as i32) {
                if rustix::process::kill_process(pid, rustix::process::Signal::KILL).is_ok() {
                    kills.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }
}

/// Children of this process (the node's workers).
fn children() -> HashSet<u32> {
    let me = std::process::id();
    let mut out = HashSet::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else { continue };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        // fields[0] is the state, fields[1] the parent; zombies are not running.
        if fields.len() > 1 && fields[1] == me.to_string() && fields[0] != "Z" {
            out.insert(pid);
        }
    }
    out
}

/// Waits (bounded) until `cond` holds; false if it never did.
fn eventually(limit: Duration, mut cond: impl FnMut() -> Result<bool>) -> Result<bool> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if cond()? {
            return Ok(true);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    cond()
}

struct Counts {
    tasks: u64,
    puts: u64,
    blobs: u64,
    fan_ins: u64,
}

fn round(rng: &mut Rng, c: &mut Counts) -> Result<()> {
    match rng.below(5) {
        0 => {
            // A batch of tasks, all results checked.
            let n = 1 + rng.below(500);
            let base = rng.next();
            let refs: Vec<_> =
                (0..n).map(|i| ares::remote(compute).options(retrying()).call(base.wrapping_add(i))).collect();
            for (i, v) in ares::get_all(&refs)?.into_iter().enumerate() {
                ensure!(v == expected(base.wrapping_add(i as u64)), "task {i} of a batch computed {v}");
            }
            c.tasks += n;
        }
        1 => {
            // A put of up to 4 MiB (inline or in shared memory), read back and hashed by a task.
            let len = 1 + rng.below(4 << 20) as usize;
            let seed = rng.next();
            let v = bytes(seed, len);
            let want = *blake3::hash(&v).as_bytes();
            let r = ares::put(v)?;
            let got = ares::get(&ares::remote(digest).options(retrying()).call(&r))?;
            ensure!(got == want, "a put of {len} bytes hashed differently in a task");
            ensure!(ares::get(&r)?.len() == len, "a put of {len} bytes read back with another length");
            c.puts += 1;
        }
        2 => {
            // A large task result, consumed by another task and by the driver.
            let len = 1 + rng.below(2 << 20);
            let seed = rng.next();
            let b = ares::remote(blob).options(retrying()).call(seed, len);
            let want = *blake3::hash(&bytes(seed, len as usize)).as_bytes();
            let got =
                ares::get(&ares::remote(digest).options(retrying()).call(&b)).context("a task's digest of a blob")?;
            ensure!(got == want, "a blob's digest differs");
            let got =
                ares::get(&b).with_context(|| format!("the driver's read of a blob of {len} bytes ({})", b.id()))?;
            ensure!(blake3::hash(&got).as_bytes() == &want, "a blob read by the driver differs");
            c.blobs += 1;
        }
        3 => {
            // A fan-in of task results.
            let n = 1 + rng.below(200);
            let base = rng.next();
            let refs: Vec<_> =
                (0..n).map(|i| ares::remote(compute).options(retrying()).call(base.wrapping_add(i))).collect();
            let total = ares::get(&ares::remote(add_up).options(retrying()).call(refs))?;
            let want = (0..n).fold(0u64, |a, i| a.wrapping_add(expected(base.wrapping_add(i))));
            ensure!(total == want, "a fan-in of {n} added up to {total}, not {want}");
            c.fan_ins += 1;
        }
        _ => {
            // A chain: each task's input is the previous one's result.
            let n = 1 + rng.below(50);
            let x = rng.next();
            let mut r = ares::remote(compute).options(retrying()).call(x);
            let mut want = expected(x);
            for _ in 0..n {
                r = ares::remote(compute).options(retrying()).call(&r);
                want = expected(want);
            }
            let got = ares::get(&r)?;
            ensure!(got == want, "a chain of {} tasks ended at {got}, not {want}", n + 1);
            c.tasks += n + 1;
        }
    }
    Ok(())
}

fn main() -> Result<()> {
    let seconds = arg("--seconds")?.unwrap_or(60);
    let seed = arg("--seed")?.unwrap_or(0x5eed) | 1;
    ares::init_with(ares::Config::default().num_cpus(2).object_store_memory(256 << 20)).context("init")?;
    let session_dir = std::path::PathBuf::from(ares::raylet_address()?)
        .parent()
        .context("the raylet socket is inside the session directory")?
        .to_path_buf();
    let base = ares::node_stats()?;
    let mut rng = Rng(seed);
    let mut c = Counts { tasks: 0, puts: 0, blobs: 0, fan_ins: 0 };
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let mut rounds = 0u64;
    let stop = std::sync::atomic::AtomicBool::new(false);
    let kills = std::sync::atomic::AtomicU64::new(0);
    let worked = std::thread::scope(|s| {
        s.spawn(|| killer(seed.rotate_left(7), &stop, &kills));
        let mut run = || -> Result<()> {
            while Instant::now() < deadline {
                round(&mut rng, &mut c).with_context(|| format!("round {rounds} (seed {seed})"))?;
                rounds += 1;
            }
            Ok(())
        };
        let r = run();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        r
    });
    worked?;
    let kills = kills.load(std::sync::atomic::Ordering::Relaxed);

    // Back to the baseline: every object freed, the pool's bytes returned.
    let settled = eventually(Duration::from_secs(20), || {
        let s = ares::node_stats()?;
        Ok(s.store_objects == base.store_objects && s.store_used == base.store_used)
    })?;
    let end = ares::node_stats()?;
    if !settled {
        bail!(
            "the store did not return to its baseline: {} objects / {} bytes, was {} / {}",
            end.store_objects,
            end.store_used,
            base.store_objects,
            base.store_used
        );
    }
    // No worker socket of a dead worker is left in the session directory (a worker that
    // just started has its socket before it registers: look again until it has).
    let tidy = eventually(Duration::from_secs(10), || {
        let live: HashSet<String> =
            ares::node_stats()?.workers.iter().map(|w| ares_common::hex::encode(&w.worker_id.0)).collect();
        let stale: Vec<String> = std::fs::read_dir(&session_dir)?
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("worker-") && !live.iter().any(|w| n.contains(&w[..12])))
            .collect();
        Ok(stale.is_empty())
    })?;
    ensure!(tidy, "sockets of dead workers are left in {}", session_dir.display());

    ares::shutdown();
    // Nothing left: no worker process, no pool file, no session directory.
    let gone = eventually(Duration::from_secs(10), || Ok(children().is_empty()))?;
    ensure!(gone, "worker processes outlived shutdown: {:?}", children());
    // Threads of this process that served the node unmap the pool as they end, just
    // after shutdown returns.
    let unmapped = eventually(Duration::from_secs(10), || Ok(ares_tests::shm_files_of(std::process::id()).is_empty()))?;
    ensure!(unmapped, "shared-memory files left: {:?}", ares_tests::shm_files_of(std::process::id()));
    ensure!(!session_dir.exists(), "the session directory {} is left", session_dir.display());
    println!(
        "{{\"soak_seconds\":{seconds},\"seed\":{seed},\"rounds\":{rounds},\"tasks\":{},\"puts\":{},\"blobs\":{},\"fan_ins\":{},\"kills\":{},\"ok\":true}}",
        c.tasks, c.puts, c.blobs, c.fan_ins, kills
    );
    Ok(())
}
