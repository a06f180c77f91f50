//! Ares: distributed futures for Rust on Ray's ownership design.
//!
//! ```no_run
//! #[ares::remote]
//! fn add(a: i64, b: i64) -> i64 { a + b }
//!
//! fn main() -> anyhow::Result<()> {
//!     ares::init()?; // embedded one-node cluster; in a worker process this never returns
//!     let x = ares::remote(add).call(1, 2);
//!     let y = ares::remote(add).call(x.clone(), 10);
//!     assert_eq!(ares::get(&y)?, 13);
//!     ares::shutdown();
//!     Ok(())
//! }
//! ```
//!
//! Actors (`#[ares::actor]`, `ares::actor(T::new).spawn(..)`, `handle.call(T::m, ..)`) are
//! in the [`ActorHandle`] docs.
//!
//! This crate owns the public API and the core worker (ownership bookkeeping, task and
//! actor-call submission over worker leases, the in-process store). Workers are the driver's own
//! executable re-executed with `ARES_WORKER=1`; an `.init_array` entry enters worker mode
//! before `main` or a test harness runs. See `docs/architecture.md` for the whole picture.
#![warn(missing_docs)]

mod actor;
mod capture;
mod core_worker;
mod error;
mod object_ref;
mod raylet_client;
mod registry;
mod remote;
mod runtime;
/// The core worker's sans-IO state machine, public for the deterministic simulation
/// (`ares-sim`); not a stable API.
#[doc(hidden)]
pub use ares_core_proto as state;
mod store_client;
mod worker;

use std::time::Duration;

pub use actor::{ActorBuilder, ActorCtor, ActorHandle, ActorMethod, ByMut, ByRef, IntoArgs, actor, get_actor, kill};
pub use ares_common::codec::Value;
pub use ares_common::wire::{NodeLoad, NodeStats, NodeSummary, WorkerInfo};
pub use ares_common::{ActorId, NodeId};
pub use ares_common::{Config, WorkerCommand};
pub use ares_macros::{actor, remote};
pub use error::{Error, Result, TaskError, Unrecoverable};
pub use object_ref::{InPlace, InPlaceList, ObjectRef, View};
pub use remote::{IntoArg, MultiFn, PreparedArg, RemoteFn, RemoteFunc, TaskOptions, remote};

use core_worker::{CoreConfig, CoreWorker};
use runtime::{RUNTIME, Runtime, current, init_logging};

/// What `#[ares::remote]` expands to. Not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use crate::registry::{
        ACTOR_CONSTRUCTORS, ACTOR_METHODS, ActorConstructor, ActorInstance, ActorMethodEntry, FinishEach, FinishWhole,
        Invoker, Probe, REMOTE_FUNCTIONS, RemoteFunction, Returns, TaskContext, WrapSend, WrapSync, with_mut, with_ref,
    };
    pub use ares_common::wire::Outcome;
    pub use linkme;

    /// Logging as drivers and workers set it up (`ARES_LOG`, no colour codes off a
    /// terminal), with `default` when `ARES_LOG` is unset: for the `ares` binary.
    pub fn init_logging(default: &str) {
        crate::runtime::init_logging_at(default);
    }

    /// Keeps worker mode in a program that never calls `init` (the `ares` binary, whose
    /// workers run the built-in kernels).
    pub fn link_worker_mode() {
        crate::worker::ensure_linked();
    }

    /// Enters worker mode now (never returns), for a worker started with
    /// `ARES_WORKER_DEFERRED=1` whose program loads this code after it starts.
    pub fn worker_main() -> ! {
        crate::worker::main()
    }
}

/// Fails the running task with `message` (its callers get `TaskError::Application`),
/// for errors a task expects, such as a singular matrix or data that does not parse:
/// unlike a panic, a worker prints no panic report or backtrace for it. Outside a task it
/// is an ordinary panic with that message.
pub fn fail(message: impl Into<String>) -> ! {
    let message = message.into();
    if !worker::is_worker() {
        panic!("{message}");
    }
    std::panic::panic_any(TaskFailure(message))
}

/// The payload [`fail`] unwinds with.
#[derive(Debug)]
pub struct TaskFailure(pub String);

/// Starts the runtime with the defaults, overridden by `ARES_*` environment variables
/// (`docs/guide/configuration.md`): an embedded one-node cluster (a raylet on threads of this
/// process and one worker process per CPU), or, with `ARES_ADDRESS` set, a connection to
/// a running `ares start` daemon. In a worker process, returns at once.
pub fn init() -> Result<()> {
    if worker::is_worker() {
        return Ok(());
    }
    init_with(Config::from_env().map_err(|e| Error::Startup(std::io::Error::new(std::io::ErrorKind::InvalidInput, e)))?)
}

/// Starts an embedded one-node cluster with `config`.
pub fn init_with(config: Config) -> Result<()> {
    if worker::is_worker() {
        return Ok(());
    }
    worker::ensure_linked();
    let mut g = RUNTIME.write().unwrap_or_else(|p| p.into_inner());
    if g.is_some() {
        return Err(Error::AlreadyInitialized);
    }
    init_logging();
    config.validate().map_err(|e| Error::Startup(std::io::Error::new(std::io::ErrorKind::InvalidInput, e)))?;
    let raylet = match &config.address {
        Some(_) => None,
        None => {
            let raylet_cfg = ares_raylet::RayletConfig::embedded(config.clone()).map_err(Error::Startup)?;
            Some(ares_raylet::Raylet::start(raylet_cfg).map_err(Error::Startup)?)
        }
    };
    let socket = match (&raylet, &config.address) {
        (Some(r), _) => r.socket_path().to_string(),
        (None, Some(a)) => ares_net::resolve_driver_address(a, &config.session_root).map_err(Error::Startup)?,
        (None, None) => unreachable!("one of the two is set"),
    };
    let cfg = CoreConfig {
        raylet_socket: socket.clone(),
        max_inline: config.max_inline_bytes,
        max_frame: config.max_frame_bytes,
        max_in_flight: config.max_tasks_in_flight_per_worker,
        max_lineage_bytes: config.max_lineage_bytes,
        in_worker: false,
    };
    let worker_id = ares_common::WorkerId::from_uuid(uuid::Uuid::new_v4());
    let root = ares_common::TaskId::root(uuid::Uuid::new_v4());
    let hello = ares_common::wire::ToRaylet::RegisterDriver { pid: std::process::id(), worker_id };
    let cw = CoreWorker::start(cfg, worker_id, root, None, hello, || {})?;
    *g = Some(Runtime { cw, raylet, address: socket });
    Ok(())
}

/// Whether `init` has run in this process (and `shutdown` has not).
pub fn is_initialized() -> bool {
    RUNTIME.read().unwrap_or_else(|p| p.into_inner()).is_some()
}

/// Stops the runtime: pending tasks fail with `RuntimeShutdown`, workers are killed and
/// reaped, and the session directory is removed. Safe to call twice.
pub fn shutdown() {
    let rt = RUNTIME.write().unwrap_or_else(|p| p.into_inner()).take();
    if let Some(mut rt) = rt {
        rt.cw.stop();
        // Other nodes learn at once that this owner is gone (and free its leases and
        // objects) rather than at their idle timeout.
        ares_net::drain_outgoing(std::time::Duration::from_millis(500));
        if let Some(r) = rt.raylet.as_mut() {
            r.shutdown();
        }
    }
}

/// Stores `value` as an object owned by this process. Values over `max_inline_bytes`
/// go to the node's shared-memory store (written once, in place).
pub fn put<T: Value>(value: T) -> Result<ObjectRef<T>> {
    put_ref(&value)
}

/// Like [`put`], but leaves `value` with the caller (it is copied into the store), so a
/// large value the caller keeps is not freed inside the call.
pub fn put_ref<T: Value>(value: &T) -> Result<ObjectRef<T>> {
    let cw = current()?;
    let id = cw.put(value)?;
    Ok(ObjectRef::new(id, cw))
}

/// Waits for the object and returns a copy of its value.
pub fn get<T: Value>(r: &ObjectRef<T>) -> Result<T> {
    let held = hold(r)?;
    let before = capture::borrowed_decoded();
    let value =
        T::decode(held.bytes()).map_err(|e| Error::Decode { object: r.id().to_string(), reason: e.to_string() })?;
    if capture::borrowed_decoded() != before {
        // Refs inside the value are borrowed from their owners: registered before the
        // outer object (which keeps them alive until then) can go.
        r.inner.cw.register_borrows();
    }
    Ok(value)
}

/// Waits for the object and holds its bytes for reading. A borrowed ref asks its owner
/// where the value is.
fn hold<T>(r: &ObjectRef<T>) -> Result<store_client::Held> {
    let cw = &r.inner.cw;
    if r.inner.owned() {
        return cw.hold_owned(r.id());
    }
    let loc = cw.wait_borrowed(r.id(), r.owner())?;
    cw.hold(r.id(), &loc)
}

/// Waits until the object's value exists, or fails with the error of the task that
/// was to make it, without reading the value (a value stored on another node stays
/// there). A borrowed ref asks its owner.
pub fn ready<T>(r: &ObjectRef<T>) -> Result<()> {
    let cw = &r.inner.cw;
    if r.inner.owned() {
        cw.wait_location(r.id())?;
    } else {
        cw.wait_borrowed(r.id(), r.owner())?;
    }
    Ok(())
}

/// Waits for every object and returns their values in order; the first failure wins.
pub fn get_all<T: Value>(refs: &[ObjectRef<T>]) -> Result<Vec<T>> {
    refs.iter().map(get).collect()
}

/// Waits for the object and returns a zero-copy view of its archived value: for a value
/// in the shared-memory store, the pool is read in place.
pub fn get_view<T: Value>(r: &ObjectRef<T>) -> Result<View<T>> {
    View::new(r.clone(), hold(r)?)
}

/// Waits until `num_returns` of `refs` are ready (or failed) or `timeout` passes, and
/// splits them into `(ready, pending)`, each in the original order.
pub fn wait<T>(
    refs: &[ObjectRef<T>],
    num_returns: usize,
    timeout: Option<Duration>,
) -> (Vec<ObjectRef<T>>, Vec<ObjectRef<T>>) {
    let Some(first) = refs.first() else {
        return (Vec::new(), Vec::new());
    };
    let ids: Vec<_> = refs.iter().map(|r| r.id()).collect();
    let done = first.inner.cw.wait_many(&ids, num_returns.min(refs.len()), timeout);
    let mut ready = Vec::new();
    let mut pending = Vec::new();
    for (r, d) in refs.iter().zip(done) {
        if d { ready.push(r.clone()) } else { pending.push(r.clone()) }
    }
    (ready, pending)
}

/// The Unix socket of this process's raylet (inside the session directory).
pub fn raylet_address() -> Result<String> {
    let g = RUNTIME.read().unwrap_or_else(|p| p.into_inner());
    g.as_ref().map(|r| r.address.clone()).ok_or(Error::NotInitialized)
}

/// Where the node's store spilled the object, as its owner was told
/// (`file://<path>?offset=<n>&size=<n>`), or `None` if it is in memory or inline.
/// Reading a spilled object restores it transparently; this is for inspection.
pub fn spill_location<T>(r: &ObjectRef<T>) -> Option<String> {
    r.inner.cw.spill_location(r.id())
}

/// Statistics of this process's node: store usage, workers and resources.
pub fn node_stats() -> Result<NodeStats> {
    current()?.node_stats()
}

/// The cluster's nodes, alive and dead, as this process's node last heard of them from
/// the head (about every 100 ms), like Ray's `ray.nodes()`. A node on its own lists
/// itself.
pub fn nodes() -> Result<Vec<NodeSummary>> {
    current()?.nodes()
}

/// Stores `value` under `key` in the cluster's small key-value store (kept by the head;
/// by the node itself when it is on its own), replacing any value there. For metadata
/// that processes share by name: keys up to 1 KiB, values up to 1 MiB (larger values
/// belong in [`put`]); the store refuses past 64 MiB in all, with [`Error::Kv`] naming
/// the bound.
pub fn kv_put(key: &str, value: &[u8]) -> Result<()> {
    let op = ares_common::wire::KvOp::Put { key: key.into(), value: value.to_vec(), overwrite: true };
    current()?.kv(op).map(drop)
}

/// The value under `key` in the cluster's key-value store, if any.
pub fn kv_get(key: &str) -> Result<Option<Vec<u8>>> {
    current()?.kv(ares_common::wire::KvOp::Get { key: key.into() })
}

/// Removes `key` from the cluster's key-value store; whether it was there.
pub fn kv_delete(key: &str) -> Result<bool> {
    Ok(current()?.kv(ares_common::wire::KvOp::Delete { key: key.into() })?.is_some())
}

/// The node this process runs on.
pub fn node_id() -> Result<NodeId> {
    Ok(node_stats()?.node_id)
}
