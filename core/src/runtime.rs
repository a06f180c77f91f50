//! The process's one runtime: the core worker that `init` started (or that worker mode
//! runs), found by every API call and by handles decoded inside values.

use std::sync::{Arc, RwLock};

use crate::core_worker::CoreWorker;
use crate::error::{Error, Result};

pub(crate) struct Runtime {
    pub(crate) cw: Arc<CoreWorker>,
    /// The embedded raylet, if this process runs one.
    pub(crate) raylet: Option<ares_raylet::Raylet>,
    /// The raylet's socket.
    pub(crate) address: String,
}

pub(crate) static RUNTIME: RwLock<Option<Runtime>> = RwLock::new(None);

/// The running core worker.
pub(crate) fn current() -> Result<Arc<CoreWorker>> {
    let g = RUNTIME.read().unwrap_or_else(|p| p.into_inner());
    g.as_ref().map(|r| r.cw.clone()).ok_or(Error::NotInitialized)
}

/// Logs to stderr, filtered by `ARES_LOG` (warnings by default).
pub(crate) fn init_logging() {
    init_logging_at("warn");
}

/// Logs to stderr, filtered by `ARES_LOG`, else by `default` (a level or directives).
pub(crate) fn init_logging_at(default: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("ARES_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    // Workers' stderr is their daemon's log file: colour codes only on a terminal.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_ansi(ansi).with_writer(std::io::stderr).try_init();
}
