//! The `ares` command: `ares start` runs a node daemon (raylet) as its own process.
//!
//! Every option of the node is a flag named like its `ares::Config` field (and like its
//! `ARES_*` environment variable; flags win over the environment). See
//! `docs/configuration.md`.

use std::path::PathBuf;

use anyhow::{Context, Result};
use ares_common::Config;
use ares_raylet::{Raylet, RayletConfig};
use clap::{Args, Parser, Subcommand};

#[derive(Parser)]
#[command(name = "ares", about = "Ares node daemon and tools")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Start a node daemon and serve until SIGINT or SIGTERM.
    Start(StartArgs),
}

#[derive(Args)]
struct StartArgs {
    /// Start the head node (the only kind until multi-node clusters arrive).
    #[arg(long)]
    head: bool,
    /// Program the node starts as its workers (run with ARES_WORKER=1); drivers that
    /// connect must have their remote functions compiled into it.
    #[arg(long, required = true)]
    worker_program: PathBuf,
    /// CPUs the node offers (default: all).
    #[arg(long)]
    num_cpus: Option<String>,
    /// Custom resources, as NAME=AMOUNT[,NAME=AMOUNT].
    #[arg(long)]
    resources: Option<String>,
    /// Pool size in bytes (suffixes K, M, G allowed).
    #[arg(long)]
    object_store_memory: Option<String>,
    /// Pool size as a fraction of RAM (default 0.3).
    #[arg(long)]
    object_store_memory_fraction: Option<String>,
    /// A spill directory (repeat for several; used round-robin).
    #[arg(long = "spill-dir")]
    spill_dir: Vec<PathBuf>,
    /// Spill once primary copies fill this fraction of the pool (default 0.8).
    #[arg(long)]
    spill_threshold: Option<String>,
    /// Fuse spilled objects into files of at least this size (default 100M).
    #[arg(long)]
    min_spill_size: Option<String>,
    /// At most this many objects per spill file (default 1000).
    #[arg(long)]
    max_spill_file_objects: Option<String>,
    /// How long a create waits for spilling to make room, in ms (default 10000).
    #[arg(long)]
    object_create_timeout_ms: Option<String>,
    /// Where session directories (sockets) are made (default <tmp>/ares).
    #[arg(long)]
    session_root: Option<String>,
}

impl StartArgs {
    fn config(&self) -> Result<Config> {
        let mut cfg = Config::from_env()?;
        let flags = [
            ("num_cpus", &self.num_cpus),
            ("resources", &self.resources),
            ("object_store_memory", &self.object_store_memory),
            ("object_store_memory_fraction", &self.object_store_memory_fraction),
            ("spill_threshold", &self.spill_threshold),
            ("min_spill_size", &self.min_spill_size),
            ("max_spill_file_objects", &self.max_spill_file_objects),
            ("object_create_timeout_ms", &self.object_create_timeout_ms),
            ("session_root", &self.session_root),
        ];
        for (name, value) in flags {
            if let Some(v) = value {
                cfg.set(name, v).map_err(|e| anyhow::anyhow!("--{}: bad value {v:?}: {e}", name.replace('_', "-")))?;
            }
        }
        if !self.spill_dir.is_empty() {
            cfg.spill_dirs = self.spill_dir.clone();
        }
        Ok(cfg)
    }
}

/// Blocks SIGINT and SIGTERM in every thread (call before starting any) and returns a
/// function that waits for one of them.
fn block_stop_signals() -> impl FnOnce() -> i32 {
    // SAFETY: plain libc signal-set manipulation on a local set.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        move || {
            let mut sig = 0;
            libc::sigwait(&set, &mut sig);
            sig
        }
    }
}

fn main() -> Result<()> {
    let filter = tracing_subscriber::EnvFilter::try_from_env("ARES_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).try_init();
    let Cmd::Start(args) = Cli::parse().cmd;
    let _ = args.head;
    let node = args.config()?;
    let wait = block_stop_signals();
    let mut cfg = RayletConfig::embedded(node).context("finding this executable")?;
    let p = &args.worker_program;
    cfg.worker_program = std::fs::canonicalize(p).with_context(|| format!("--worker-program {}", p.display()))?;
    let mut raylet = Raylet::start(cfg).context("starting the node")?;
    println!("{}", raylet.socket_path());
    eprintln!("ares: node started; connect drivers with ARES_ADDRESS={}", raylet.socket_path());
    let sig = wait();
    eprintln!("ares: signal {sig}, shutting down");
    raylet.shutdown();
    Ok(())
}
