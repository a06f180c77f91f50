//! The `ares` command: `ares start` runs a node daemon (raylet) as its own process, the
//! head of a cluster or a node joining one; `ares status` shows the cluster; `ares stop`
//! stops this machine's daemons.
//!
//! It is also the default worker program of the daemons it starts: started with
//! `ARES_WORKER=1` it becomes a worker before `main` runs (see `ares`'s worker mode) and
//! executes the built-in tensor and data frame kernels, so tensor, data frame and Python
//! programs need no executable of their own on the nodes.
//!
//! **Must not:** decide anything the raylet's pure modules decide; it only parses flags,
//! starts and finds daemons, and prints.
//!
//! Every option of the node is a flag named like its `ares::Config` field (and like its
//! `ARES_*` environment variable; flags win over the environment). See
//! `docs/guide/configuration.md` and `docs/guide/cluster.md`.

mod cli;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use cli::{StartArgs, StatusArgs, StopArgs};

#[derive(Parser)]
#[command(name = "ares", about = "Ares node daemon and tools")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Start a node daemon: the head of a new cluster (--head) or a node joining one
    /// (--address). It runs in the background unless --block is given.
    Start(Box<StartArgs>),
    /// Show the cluster's nodes, resources, store and lease requests.
    Status(StatusArgs),
    /// Stop this machine's node daemons (and their workers) cleanly.
    Stop(StopArgs),
}

fn main() -> ExitCode {
    // Worker mode and the kernels must be linked in for the daemon's workers (which run
    // this binary) even though `main` never uses them.
    ares::__private::link_worker_mode();
    ares_tensor::link_kernels();
    ares_dataframe::link_kernels();
    ares_net::install_crypto_provider();
    // A daemon in the background logs to a file: no colour codes there.
    ares::__private::init_logging("info");
    let result = match Cli::parse().cmd {
        Cmd::Start(args) => cli::start(*args),
        Cmd::Status(args) => cli::status(args),
        Cmd::Stop(args) => cli::stop(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // One line an operator can act on (each cause after a colon); the chain
            // with its backtrace only when asked for.
            if tracing::enabled!(tracing::Level::DEBUG) {
                eprintln!("ares: {e:?}");
            } else {
                eprintln!("ares: {e:#}");
            }
            ExitCode::FAILURE
        }
    }
}
