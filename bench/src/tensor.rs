//! `ares-bench tensor`: the workloads W1-W3 of `../shared/peers/tensor_workloads.py` (same sizes
//! and chunks). The parent runs each (workload, repeat) in a fresh child process, samples
//! the summed RSS of the child and all its descendants (the worker processes), and prints
//! one JSON line per workload: `value` is the median wall time in seconds (start-up
//! excluded, as in the peer script), `peak_rss_MB` the largest summed RSS seen.

use std::io::BufRead;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use ares_tensor::kernel::{FftKind, UnOp};
use ares_tensor::{Session, Slice, random};
use serde_json::json;

use crate::rss::PeakRss;

/// Sizes of the workloads (the peer script's defaults).
#[derive(Clone, Debug, clap::Args)]
pub(crate) struct Sizes {
    /// W1 points.
    #[arg(long, default_value_t = 200_000_000)]
    pub(crate) w1_n: u64,
    /// W1 rows per chunk.
    #[arg(long, default_value_t = 10_000_000)]
    pub(crate) w1_chunk: u64,
    /// W2 elements.
    #[arg(long, default_value_t = 400_000_000)]
    pub(crate) w2_n: u64,
    /// W2 elements per chunk.
    #[arg(long, default_value_t = 10_000_000)]
    pub(crate) w2_chunk: u64,
    /// W3 matrix size.
    #[arg(long, default_value_t = 5000)]
    pub(crate) w3_n: u64,
    /// W3 chunk size (square chunks).
    #[arg(long, default_value_t = 1000)]
    pub(crate) w3_chunk: u64,
    /// SORT elements (float64).
    #[arg(long, default_value_t = 400_000_000)]
    pub(crate) sort_n: u64,
    /// SORT elements per chunk.
    #[arg(long, default_value_t = 10_000_000)]
    pub(crate) sort_chunk: u64,
    /// FFT2 matrix size (float64, square).
    #[arg(long, default_value_t = 8192)]
    pub(crate) fft_n: u64,
    /// FFT2 rows per chunk (16 MiB of complex128 per chunk: ares.tensor's automatic
    /// chunk size).
    #[arg(long, default_value_t = 128)]
    pub(crate) fft_chunk: u64,
    /// Reserve the whole store when the node starts (start-up, untimed), so no timed
    /// write meets a fresh page: a diagnostic of how much first use costs.
    #[arg(long)]
    pub(crate) preallocate_store: bool,
    /// The store's size in GiB (default: the node's, 30% of RAM). SORT holds its input,
    /// its pieces and its output at once: 3.2 GB each at the default size.
    #[arg(long)]
    pub(crate) store_gib: Option<u64>,
    /// Worker CPUs.
    #[arg(long, default_value_t = 2)]
    pub(crate) num_cpus: u32,
    /// Chunk tasks in flight.
    #[arg(long, default_value_t = 8)]
    pub(crate) max_in_flight: usize,
}

pub(crate) fn child_args(s: &Sizes, workload: &str) -> Vec<String> {
    vec![
        "tensor-child".into(),
        "--workload".into(),
        workload.into(),
        "--w1-n".into(),
        s.w1_n.to_string(),
        "--w1-chunk".into(),
        s.w1_chunk.to_string(),
        "--w2-n".into(),
        s.w2_n.to_string(),
        "--w2-chunk".into(),
        s.w2_chunk.to_string(),
        "--w3-n".into(),
        s.w3_n.to_string(),
        "--w3-chunk".into(),
        s.w3_chunk.to_string(),
        "--sort-n".into(),
        s.sort_n.to_string(),
        "--sort-chunk".into(),
        s.sort_chunk.to_string(),
        "--fft-n".into(),
        s.fft_n.to_string(),
        "--fft-chunk".into(),
        s.fft_chunk.to_string(),
        "--num-cpus".into(),
        s.num_cpus.to_string(),
        "--max-in-flight".into(),
        s.max_in_flight.to_string(),
    ]
    .into_iter()
    .chain(s.preallocate_store.then(|| "--preallocate-store".to_string()))
    .chain(s.store_gib.into_iter().flat_map(|g| ["--store-gib".to_string(), g.to_string()]))
    .collect()
}

/// Runs one workload in this process and prints `{"wall_s", "result"}`.
pub(crate) fn child(workload: &str, s: &Sizes) -> Result<()> {
    let t = Instant::now();
    // ARES_* settings apply (ARES_SHM_DIR, …), as for `ares::init()`.
    let mut cfg = ares::Config::from_env().map_err(|e| anyhow::anyhow!("{e}"))?.num_cpus(s.num_cpus);
    cfg.preallocate_object_store = s.preallocate_store;
    cfg.object_store_memory = s.store_gib.map(|g| g << 30);
    // `ares-bench cluster` points children at a running node's socket.
    cfg.address = std::env::var("ARES_ADDRESS").ok();
    ares::init_with(cfg)?;
    let startup = t.elapsed().as_secs_f64();
    let session = Session::new().max_in_flight(s.max_in_flight);
    let t = Instant::now();
    let result = match workload {
        "W1" => {
            let a = random::uniform(-1.0, 1.0, &[s.w1_n, 2], &[s.w1_chunk as usize, 2], 1)?;
            let pi = session.scalar(&a.norm(1)?.lt_scalar(1.0).sum())? * 4.0 / s.w1_n as f64;
            // The estimate's standard error is about 1.64 / sqrt(n).
            let tol = 10.0 / (s.w1_n as f64).sqrt();
            anyhow::ensure!((pi - std::f64::consts::PI).abs() < tol, "W1 gave {pi}, expected pi within {tol}");
            pi
        }
        "W2" => {
            let a = random::rand(&[s.w2_n], &[s.w2_chunk as usize], 2)?;
            let sum = session.scalar(&((&a + 1.0) * 2.0).sum())?;
            // Each element is 3 on average with a standard deviation of 1/sqrt(3).
            let (n, want) = (s.w2_n as f64, 3.0 * s.w2_n as f64);
            anyhow::ensure!((sum - want).abs() < 10.0 * n.sqrt() + 1e-9 * want, "W2 gave {sum}, expected about {want}");
            sum
        }
        "W3" => {
            let c = s.w3_chunk as usize;
            let a = random::rand(&[s.w3_n, s.w3_n], &[c, c], 3)?;
            let std = session.scalar(&(a.matmul(&a.t()?)? - a.clone()).std())?;
            // Off-diagonal entries of a·aᵀ have variance 7n/144; the n diagonal ones sit
            // n/12 above them, which adds n/144: about n/18 in all.
            let expected = (s.w3_n as f64 / 18.0).sqrt();
            anyhow::ensure!((std - expected).abs() < 0.05 * expected, "W3 gave {std}, expected about {expected}");
            std
        }
        "W3G" => {
            // W3 without the symmetry of a · aᵀ to exploit (see bench/w3_general.py).
            let c = s.w3_chunk as usize;
            let a = random::rand(&[s.w3_n, s.w3_n], &[c, c], 3)?;
            let b = random::rand(&[s.w3_n, s.w3_n], &[c, c], 4)?;
            let std = session.scalar(&(a.matmul(&b.t()?)? - a.clone()).std())?;
            let expected = (s.w3_n as f64 * 7.0 / 144.0).sqrt();
            anyhow::ensure!((std - expected).abs() < 0.05 * expected, "W3G gave {std}, expected about {expected}");
            std
        }
        "SORT" => {
            // A sample sort of uniform floats, kept in the store (as np.sort's result is
            // kept in memory); checked untimed below.
            // Generation untimed, as np.sort's input is in memory before it starts.
            let a = random::rand(&[s.sort_n], &[s.sort_chunk as usize], 5)?;
            session.execute(&a)?;
            let t = Instant::now();
            let sorted = a.sort(0, false)?;
            session.execute(&sorted)?;
            let wall = t.elapsed().as_secs_f64();
            let n = s.sort_n;
            let tail = sorted.slice(&[ares_tensor::Slice::range(1, n as i64)])?;
            let head = sorted.slice(&[ares_tensor::Slice::range(0, n as i64 - 1)])?;
            let out_of_order = session.scalar(&tail.lt(&head)?.sum())?;
            let (sum_in, sum_out) = (session.scalar(&a.sum())?, session.scalar(&sorted.sum())?);
            anyhow::ensure!(out_of_order == 0.0, "SORT left {out_of_order} neighbours out of order");
            anyhow::ensure!(
                (sum_in - sum_out).abs() <= 1e-9 * sum_in.abs(),
                "SORT changed the sum: {sum_in} vs {sum_out}"
            );
            ares::shutdown();
            println!("{}", json!({"wall_s": wall, "startup_s": startup, "result": sum_out}));
            return Ok(());
        }
        "FFT2" => {
            // The 2-d transform of a computed float64 matrix (np.fft.fft2 of an array in
            // memory): generation untimed, the complex128 result kept in the store.
            let n = s.fft_n;
            let a = random::rand(&[n, n], &[s.fft_chunk as usize, n as usize], 6)?;
            session.execute(&a)?;
            let t = Instant::now();
            let spectrum = a.fft(1, FftKind::Forward, 1.0)?.fft(0, FftKind::Forward, 1.0)?;
            session.execute(&spectrum)?;
            let wall = t.elapsed().as_secs_f64();
            // Checked untimed: X[0, 0] is the sum, and Parseval: Σ|X|² = n² Σ a².
            let dc = session
                .scalar(&spectrum.slice(&[Slice::range(0, 1), Slice::range(0, 1)])?.unary_op(UnOp::Real)?.sum())?;
            let sum = session.scalar(&a.sum())?;
            let energy = session.scalar(&spectrum.unary_op(UnOp::Abs)?.unary_op(UnOp::Square)?.sum())?;
            let want = (n * n) as f64 * session.scalar(&a.unary_op(UnOp::Square)?.sum())?;
            anyhow::ensure!((dc - sum).abs() <= 1e-9 * sum.abs(), "FFT2's X[0,0] is {dc}, the sum is {sum}");
            anyhow::ensure!((energy - want).abs() <= 1e-9 * want, "FFT2 broke Parseval: {energy} vs {want}");
            ares::shutdown();
            println!("{}", json!({"wall_s": wall, "startup_s": startup, "result": dc}));
            return Ok(());
        }
        other => anyhow::bail!("unknown workload {other} (W1, W2, W3, W3G, SORT and FFT2 exist)"),
    };
    let wall = t.elapsed().as_secs_f64();
    ares::shutdown();
    println!("{}", json!({"wall_s": wall, "startup_s": startup, "result": result}));
    Ok(())
}

/// Runs the workloads `repeats` times each in fresh children; prints one line per workload.
pub(crate) fn parent(workloads: &str, repeats: usize, s: &Sizes) -> Result<()> {
    let exe = std::env::current_exe()?;
    for w in workloads.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        let mut walls = Vec::new();
        let mut peak = 0u64;
        let mut result = serde_json::Value::Null;
        for _ in 0..repeats {
            let mut child = Command::new(&exe).args(child_args(s, w)).stdout(Stdio::piped()).spawn()?;
            let sampler = PeakRss::start(child.id(), Duration::from_millis(20));
            let mut line = String::new();
            std::io::BufReader::new(child.stdout.take().context("child stdout")?).read_line(&mut line)?;
            let status = child.wait()?;
            let child_peak = sampler.stop();
            anyhow::ensure!(status.success(), "{w} child failed: {status}");
            let v: serde_json::Value =
                serde_json::from_str(line.trim()).with_context(|| format!("child said {line:?}"))?;
            walls.push(v["wall_s"].as_f64().context("wall_s")?);
            result = v["result"].clone();
            peak = peak.max(child_peak);
        }
        let mut sorted = walls.clone();
        sorted.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let median = sorted[sorted.len() / 2];
        let loadavg = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
        let load: Vec<f64> = loadavg.split_whitespace().take(3).filter_map(|x| x.parse().ok()).collect();
        println!(
            "{}",
            json!({"bench": w, "value": median, "unit": "s", "runs": walls, "engine": "ares",
                   "peak_rss_MB": peak as f64 / 1e6, "result": result, "loadavg": load})
        );
    }
    Ok(())
}

/// Times the chunk GEMM kernel on `n × n` float64 operands in this thread.
pub(crate) fn gemm(n: usize, repeats: usize) -> Result<()> {
    let fill = |salt: u64| -> ares_tensor::Chunk {
        let v: Vec<f64> =
            (0..(n * n) as u64).map(|i| ((i.wrapping_mul(2654435761) ^ salt) % 1000) as f64 / 1000.0).collect();
        ares_tensor::Chunk { shape: vec![n as u64, n as u64], data: ares_tensor::data::Buf::F64(v) }
    };
    let (a, b) = (fill(1), fill(2));
    // One untimed product warms the caches and the allocator.
    let _ = ares_tensor::chunk_matmul(&a, &b);
    let mut runs = Vec::with_capacity(repeats);
    for _ in 0..repeats.max(1) {
        let t = Instant::now();
        let c = ares_tensor::chunk_matmul(&a, &b);
        runs.push(t.elapsed().as_secs_f64());
        std::hint::black_box(c);
    }
    let mut sorted = runs.clone();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2];
    let gflops = 2.0 * (n as f64).powi(3) / median / 1e9;
    println!(
        "{}",
        json!({"bench": "gemm", "engine": "ares", "n": n, "value": median, "unit": "s", "gflops": gflops, "runs": runs})
    );
    Ok(())
}
