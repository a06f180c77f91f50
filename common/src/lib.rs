//! Shared vocabulary of every Ares process: typed IDs, configuration, error types,
//! wire messages (rkyv), length-delimited framing and the addresses of processes.
//!
//! This crate owns *how bytes move and what they mean on the wire*. It must not know
//! what a task does, how objects are counted, or how leases are granted: those live in
//! `ares-ownership`, `ares-raylet` and `ares` and only use the types defined here.
#![warn(missing_docs)]

// rkyv generates undocumented archived twins of these types.
#[allow(missing_docs)]
pub mod address;
pub mod codec;
pub mod config;
pub mod det;
// rkyv generates undocumented archived twins of these types.
#[allow(missing_docs)]
pub mod error;
pub mod frame;
pub mod hex;
pub mod ids;
pub mod resources;
// rkyv generates undocumented archived twins of these types.
#[allow(missing_docs)]
pub mod strategy;
#[allow(missing_docs)]
pub mod wire;

pub use address::{Address, Endpoint};
pub use config::{Config, ConfigError, WorkerCommand};
pub use error::{FrameError, TaskError, Unrecoverable};
pub use ids::{ActorId, ClientId, LeaseId, NodeId, ObjectId, RequestId, TaskId, WorkerId};
pub use resources::ResourceSet;
pub use strategy::Strategy;

/// Whether `pid` exists and is not a zombie (a killed process its parent has not
/// reaped yet is dead for every purpose here).
pub fn process_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name.
        Ok(s) => !matches!(s.rsplit_once(')').and_then(|(_, r)| r.trim_start().chars().next()), Some('Z' | 'X') | None),
        Err(_) => false,
    }
}
