//! Worker mode. The raylet starts workers by re-executing the driver's executable with
//! `ARES_WORKER=1`; an `.init_array` entry below sees that before `main` (or a test
//! harness) runs, and turns the process into a worker that never returns to `main`.
//!
//! A worker registers with its raylet, listens on a socket in the session directory for
//! owners that lease it, runs their tasks one at a time in arrival order, and exits when
//! its raylet connection closes (and, through `PR_SET_PDEATHSIG`, when its raylet dies).
//!
//! A worker leased for an actor constructs it once and keeps it for the rest of its life
//! (the process is dedicated to it). Each caller's connection is served by its own
//! thread, in order; with `max_concurrency > 1` calls go to a pool of that many threads.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, mpsc};

use ares_common::codec::Bytes;
use ares_common::error::FrameError;
use ares_common::wire::{FromWorker, Outcome, RefInValue, TaskKind, TaskSpec, ToRaylet, ToWorker, WireArg};
use ares_common::{ActorId, Endpoint, ObjectId, WorkerId};
use ares_core_proto::{ArgFailure, ArgStore};
use ares_net::{BufferedWriter, Connection, Listener, SPIN_BEFORE_BLOCKING};

use crate::core_worker::{CoreConfig, CoreWorker};
use crate::error::TaskError;
use crate::registry::{self, ActorInstance, TaskContext};

type Job = Box<dyn FnOnce() + Send>;

/// The actor this worker is dedicated to, once constructed.
struct Hosted {
    actor_id: ActorId,
    instance: ActorInstance,
    /// Threads running calls when `max_concurrency > 1`.
    pool: Option<Mutex<mpsc::Sender<Job>>>,
    /// Otherwise calls run one at a time across all callers' connections (each connection
    /// has its own thread, and a `Sync` actor is kept behind an `RwLock`).
    gate: Mutex<()>,
}

static HOSTED: OnceLock<Hosted> = OnceLock::new();

/// Starts `n` threads that run jobs from one queue.
fn start_pool(n: u32) -> Option<Mutex<mpsc::Sender<Job>>> {
    let (tx, rx) = mpsc::channel::<Job>();
    let rx = Arc::new(Mutex::new(rx));
    for _ in 0..n {
        let rx = rx.clone();
        let spawned = std::thread::Builder::new().name("ares-actor-call".into()).spawn(move || {
            loop {
                let job = rx.lock().unwrap_or_else(|p| p.into_inner()).recv();
                match job {
                    Ok(job) => job(),
                    Err(_) => return,
                }
            }
        });
        if spawned.is_err() {
            return None;
        }
    }
    Some(Mutex::new(tx))
}

/// Where a worker's replies go: a buffered writer on a local owner's Unix socket, or
/// frames gathered for one send on a QUIC stream to an owner on another node.
enum ReplyWriter {
    Unix(BufferedWriter),
    Quic { tx: ares_net::Sender, buf: Vec<u8> },
}

impl ReplyWriter {
    fn write(&mut self, msg: &FromWorker) -> std::io::Result<()> {
        match self {
            ReplyWriter::Unix(w) => w.write(msg),
            ReplyWriter::Quic { buf, .. } => ares_common::frame::write_msg(buf, msg),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            ReplyWriter::Unix(w) => w.flush(),
            ReplyWriter::Quic { tx, buf } if !buf.is_empty() => {
                let r = tx.send_framed(buf);
                buf.clear();
                r
            }
            ReplyWriter::Quic { .. } => Ok(()),
        }
    }
}

type Writer = Arc<Mutex<ReplyWriter>>;

thread_local! {
    /// Stored arguments this thread's current task pulled into the node (see `reply`).
    static PULLED: std::cell::RefCell<Vec<ObjectId>> = const { std::cell::RefCell::new(Vec::new()) };
    /// Refs inside the return values of this thread's current task (see `execute`).
    static RETURNED: std::cell::RefCell<Vec<RefInValue>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Replies for the task this thread just ran, naming the copies its arguments made.
fn reply(writer: &Writer, task_id: ares_common::TaskId, outcome: Outcome, flush: bool) -> bool {
    let copies = PULLED.with(|p| std::mem::take(&mut *p.borrow_mut()));
    let contained = RETURNED.with(|r| std::mem::take(&mut *r.borrow_mut()));
    let mut w = writer.lock().unwrap_or_else(|p| p.into_inner());
    w.write(&FromWorker::Done { task_id, outcome, copies, contained }).is_ok() && (!flush || w.flush().is_ok())
}

static IS_WORKER: AtomicBool = AtomicBool::new(false);

/// Whether this process is a worker.
pub(crate) fn is_worker() -> bool {
    IS_WORKER.load(Ordering::Relaxed)
}

extern "C" fn worker_entry() {
    // A worker whose program enters worker mode itself, by calling [`main`] once loaded
    // (a Python interpreter loading the extension module), must not enter it here: this
    // runs inside `dlopen`, holding the loader's lock.
    if std::env::var_os("ARES_WORKER").is_some() && std::env::var_os("ARES_WORKER_DEFERRED").is_none() {
        main();
    }
}

/// Runs before `main`. Referenced from [`ensure_linked`] so the linker always keeps it.
#[used]
#[unsafe(link_section = ".init_array")]
static WORKER_ENTRY: extern "C" fn() = worker_entry;

/// Keeps the object file holding [`WORKER_ENTRY`] in every executable that calls `init`.
pub(crate) fn ensure_linked() {
    std::hint::black_box(&WORKER_ENTRY);
}

pub(crate) fn main() -> ! {
    IS_WORKER.store(true, Ordering::Relaxed);
    // Die with the raylet's spawner thread, and not outlive a raylet that died before
    // this took effect (the raylet starts workers without a fork hook, see its spawner).
    let _ = rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL));
    let parent = std::env::var("ARES_PARENT_PID").ok().and_then(|p| p.parse::<i32>().ok());
    if parent.is_some() && rustix::process::getppid().map(|p| p.as_raw_nonzero().get()) != parent {
        std::process::exit(1);
    }
    // Before `main` Rust has not yet ignored SIGPIPE; a dead owner must be an EPIPE.
    // SAFETY: setting a signal disposition to SIG_IGN has no preconditions.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
    crate::runtime::init_logging();
    // `ares::fail` is a task's expected failure, reported to its caller: no panic report.
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if info.payload().downcast_ref::<crate::TaskFailure>().is_none() {
            report(info)
        }
    }));
    let code = match run() {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("ares worker {}: {e}", std::process::id());
            1
        }
    };
    std::process::exit(code)
}

fn env(name: &str) -> Result<String, String> {
    std::env::var(name).map_err(|_| format!("{name} is not set"))
}

fn run() -> Result<(), String> {
    let raylet_socket = env("ARES_RAYLET_SOCKET")?;
    let session_dir = env("ARES_SESSION_DIR")?;
    let id_hex = env("ARES_WORKER_ID")?;
    let max_frame: usize = env("ARES_MAX_FRAME_BYTES")?.parse().map_err(|e| format!("ARES_MAX_FRAME_BYTES: {e}"))?;
    let max_inline: usize = env("ARES_MAX_INLINE_BYTES")?.parse().map_err(|e| format!("ARES_MAX_INLINE_BYTES: {e}"))?;
    let worker_id = WorkerId(ares_common::hex::decode_array(&id_hex).ok_or("bad ARES_WORKER_ID")?);
    let path = ares_net::worker_socket_path(std::path::Path::new(&session_dir), &id_hex);
    let listen_addr = Endpoint::Unix(path.to_string_lossy().into_owned());
    let listener = Listener::bind(&listen_addr).map_err(|e| format!("bind {listen_addr}: {e}"))?;
    let remote = remote_listener()?;
    let remote_addr = remote.as_ref().map(|l| l.endpoint().clone());
    let cfg = CoreConfig {
        raylet_socket,
        max_inline,
        max_frame,
        max_in_flight: 64,
        max_lineage_bytes: ares_common::config::DEFAULT_MAX_LINEAGE_BYTES,
        in_worker: true,
    };
    let hello =
        ToRaylet::RegisterWorker { worker_id, pid: std::process::id(), listen_addr: listen_addr.clone(), remote_addr };
    // Submissions outside any task (threads a task started) take IDs from a random root.
    let root = ares_common::TaskId::root(uuid::Uuid::new_v4());
    // The raylet is gone: so is our reason to exist.
    let cw = match CoreWorker::start(cfg, worker_id, root, Some(listen_addr), hello, || std::process::exit(0)) {
        Ok(cw) => cw,
        // The raylet shut down while this worker was starting (a quick init and
        // shutdown): the normal end of a worker, nothing to report.
        Err(crate::Error::RayletUnavailable(_)) => std::process::exit(0),
        Err(e) => return Err(e.to_string()),
    };
    let address = std::env::var("ARES_RAYLET_SOCKET").unwrap_or_default();
    *crate::runtime::RUNTIME.write().unwrap_or_else(|p| p.into_inner()) =
        Some(crate::runtime::Runtime { cw: cw.clone(), raylet: None, address });
    if let Some(remote) = remote {
        let cw = cw.clone();
        std::thread::Builder::new()
            .name("ares-worker-remote".into())
            .spawn(move || {
                // Ends when the listener is gone (the process is exiting).
                while let Ok(conn) = remote.accept() {
                    let cw = cw.clone();
                    let _ = std::thread::Builder::new()
                        .name("ares-worker-exec".into())
                        .spawn(move || serve_owner(cw, conn, max_frame));
                }
            })
            .map_err(|e| format!("starting the remote accept thread: {e}"))?;
    }
    let mut last_warning: Option<std::time::Instant> = None;
    loop {
        let conn = match listener.accept() {
            Ok(c) => c,
            Err(e) => {
                // Out of descriptors, say: log at most every 10 s and pause rather than spin.
                if last_warning.is_none_or(|t| t.elapsed() >= std::time::Duration::from_secs(10)) {
                    tracing::warn!("worker accept failed: {e}");
                    last_warning = Some(std::time::Instant::now());
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
                continue;
            }
        };
        let cw = cw.clone();
        let _ =
            std::thread::Builder::new().name("ares-worker-exec".into()).spawn(move || serve_owner(cw, conn, max_frame));
    }
}

/// In a cluster (the raylet passed its credentials), a QUIC listener for owners on other
/// nodes, under the cluster's certificate.
fn remote_listener() -> Result<Option<Listener>, String> {
    let Ok(path) = std::env::var("ARES_CLUSTER_CRED") else { return Ok(None) };
    let creds = ares_net::Credentials::load(std::path::Path::new(&path)).map_err(|e| format!("{path}: {e}"))?;
    let ip: std::net::IpAddr = env("ARES_NODE_IP")?.parse().map_err(|e| format!("ARES_NODE_IP: {e}"))?;
    let node = ares_common::NodeId(ares_common::hex::decode_array(&env("ARES_NODE_ID")?).ok_or("bad ARES_NODE_ID")?);
    let addr = std::net::SocketAddr::new(ip, 0);
    Listener::bind_quic_with(node, addr, &creds, true, None).map(Some).map_err(|e| format!("bind QUIC {addr}: {e}"))
}

/// Runs the tasks one owner pushes, replying in order; replies are flushed when no
/// further task is already buffered, so a pipelined batch costs one write.
fn serve_owner(cw: Arc<CoreWorker>, conn: Connection, max_frame: usize) {
    let (w, mut reader) = if conn.is_quic() {
        let Ok((tx, rx)) = conn.split::<ToWorker>(max_frame, 1 << 30) else { return };
        (ReplyWriter::Quic { tx, buf: Vec::new() }, rx)
    } else {
        let Ok((w, rx)) = conn.split_buffered::<ToWorker>(max_frame) else { return };
        (ReplyWriter::Unix(w), rx)
    };
    let writer: Writer = Arc::new(Mutex::new(w));
    loop {
        // An owner that waits on each result sends its next task within microseconds;
        // polling briefly saves the wake-up of a blocked read.
        reader.spin_until_readable(SPIN_BEFORE_BLOCKING);
        let spec = match reader.recv::<ToWorker>() {
            Ok(ToWorker::Push(spec)) => spec,
            Err(FrameError::Closed) => break,
            Err(e) => {
                tracing::warn!("closing owner connection: {e}");
                break;
            }
        };
        let task_id = spec.task_id;
        let pool = HOSTED.get().and_then(|h| h.pool.as_ref());
        if let (TaskKind::ActorCall { .. }, Some(pool)) = (&spec.kind, pool) {
            let (cw, out) = (cw.clone(), writer.clone());
            let job: Job = Box::new(move || {
                let outcome = execute(&cw, spec);
                let _ = reply(&out, task_id, outcome, true);
            });
            if pool.lock().unwrap_or_else(|p| p.into_inner()).send(job).is_err() {
                break;
            }
            // Earlier replies (say, the construction's) must not wait for a pool job.
            if !reader.has_buffered() && writer.lock().unwrap_or_else(|p| p.into_inner()).flush().is_err() {
                break;
            }
            continue;
        }
        let outcome = execute(&cw, spec);
        if !reply(&writer, task_id, outcome, !reader.has_buffered()) {
            break;
        }
    }
    let _ = writer.lock().unwrap_or_else(|p| p.into_inner()).flush();
}

fn execute(cw: &CoreWorker, spec: TaskSpec) -> Outcome {
    let caller = spec.owner;
    let task_id = spec.task_id;
    // What the return values encode is captured (nested submissions and puts capture
    // their own values apart).
    let (outcome, returned) = crate::capture::capture(|| execute_in_scope(cw, spec));
    if !returned.actors.is_empty() && !matches!(outcome, Outcome::Failed(_)) {
        // Handles in the return values: this process keeps holding their actors until
        // the caller says it holds them.
        cw.lend_actors(caller, task_id, returned.lent_actors());
    }
    if !returned.objects.is_empty() && !matches!(outcome, Outcome::Failed(_)) {
        // The caller will hold the refs the return values carry: their owners count it
        // as a borrower before this task's own handles can go.
        let refs = returned.refs();
        cw.lend_returned(caller, &refs);
        RETURNED.with(|r| *r.borrow_mut() = refs);
    }
    drop(returned);
    // Refs the task kept (in an actor's state, say) are borrowed: their owners learn of
    // it before the reply lets the caller release the task's arguments.
    cw.register_borrows();
    outcome
}

fn execute_in_scope(cw: &CoreWorker, spec: TaskSpec) -> Outcome {
    // What the task submits and puts is named after it, the same in every attempt.
    let _scope = crate::core_worker::enter_task(spec.task_id);
    let not_found = |name: &str| Outcome::Failed(TaskError::FunctionNotFound { name: name.to_string() });
    match spec.kind {
        TaskKind::Normal => {
            let Some(invoke) = registry::lookup(&spec.function) else {
                return not_found(&spec.function);
            };
            with_args(cw, &spec, invoke)
        }
        TaskKind::ActorCreate { actor_id, max_concurrency } => {
            let Some(construct) = registry::lookup_constructor(&spec.function) else {
                return not_found(&spec.function);
            };
            if HOSTED.get().is_some() {
                return actor_died(actor_id, "its worker already hosts another actor");
            }
            with_args(cw, &spec, |ctx, args| match construct(ctx, args) {
                Ok(instance) => {
                    let pool =
                        if max_concurrency > 1 && instance.parallel() { start_pool(max_concurrency) } else { None };
                    if HOSTED.set(Hosted { actor_id, instance, pool, gate: Mutex::new(()) }).is_err() {
                        return actor_died(actor_id, "its worker already hosts another actor");
                    }
                    ctx.finish(Ok(()))
                }
                Err(outcome) => outcome,
            })
        }
        TaskKind::ActorCall { actor_id } => {
            let Some(hosted) = HOSTED.get().filter(|h| h.actor_id == actor_id) else {
                return actor_died(actor_id, "the worker it was sent to does not host it");
            };
            let Some(invoke) = registry::lookup_method(&spec.function) else {
                return not_found(&spec.function);
            };
            let _one_at_a_time = match hosted.pool {
                None => Some(hosted.gate.lock().unwrap_or_else(|p| p.into_inner())),
                Some(_) => None,
            };
            with_args(cw, &spec, |ctx, args| invoke(ctx, &hosted.instance, args))
        }
    }
}

fn actor_died(actor_id: ActorId, reason: &str) -> Outcome {
    Outcome::Failed(TaskError::ActorDied { actor: actor_id.to_string(), class: "?".into(), reason: reason.into() })
}

/// Pins the task's shared arguments, runs `invoke` on its arguments' bytes, unpins.
fn with_args(cw: &CoreWorker, spec: &TaskSpec, invoke: impl FnOnce(&TaskContext<'_>, &[&[u8]]) -> Outcome) -> Outcome {
    // Shared arguments are pinned for the task's duration (restored first if spilled);
    // which copy is read, and what an unreadable one fails with, is `pin_args`'s.
    let mut pulled = Vec::new();
    let got = ares_core_proto::pin_args(&mut WorkerStore(cw), spec, cw.node(), &mut pulled);
    if !pulled.is_empty() {
        PULLED.with(|p| p.borrow_mut().extend(pulled));
    }
    match got {
        Ok(args) => {
            let outcome = invoke_with_args(cw, spec, invoke, &args.pins);
            cw.store.release(args.ids);
            outcome
        }
        Err(ArgFailure::Unavailable(e)) => Outcome::Failed(e),
        Err(ArgFailure::Other { index, error }) => {
            Outcome::Failed(registry::task_error(error, &spec.function, format!("argument {index}")))
        }
    }
}

/// The node's store as a worker reads its task's arguments from it.
struct WorkerStore<'a>(&'a CoreWorker);

impl ArgStore for WorkerStore<'_> {
    type Pin = (u64, u64);
    type Error = crate::Error;

    fn pull(&mut self, id: ObjectId, nodes: &[ares_common::NodeId], owner: WorkerId) -> Result<(), Self::Error> {
        self.0.store.pull(id, nodes, owner)
    }

    fn pin(&mut self, id: ObjectId) -> Result<(u64, u64), Self::Error> {
        self.0.store.pin(id)
    }

    fn release(&mut self, ids: Vec<ObjectId>) {
        self.0.store.release(ids)
    }

    fn lost(e: &Self::Error) -> Option<String> {
        match e {
            crate::Error::Task(TaskError::ObjectLost { object }) => Some(object.clone()),
            _ => None,
        }
    }
}

/// Decodes nothing itself: hands the invoker aligned copies of inline arguments and
/// in-place slices of pinned shared ones.
fn invoke_with_args(
    cw: &CoreWorker,
    spec: &TaskSpec,
    invoke: impl FnOnce(&TaskContext<'_>, &[&[u8]]) -> Outcome,
    located: &[(u64, u64)],
) -> Outcome {
    let owned: Vec<Bytes> = spec
        .args
        .iter()
        .filter_map(|a| match a {
            WireArg::Inline(v) => {
                let mut b = Bytes::with_capacity(v.len());
                b.extend_from_slice(v);
                Some(b)
            }
            WireArg::Shared { .. } => None,
        })
        .collect();
    let (mut inline, mut shared) = (owned.iter(), located.iter());
    let mut slices: Vec<&[u8]> = Vec::with_capacity(spec.args.len());
    for (i, a) in spec.args.iter().enumerate() {
        match a {
            WireArg::Inline(_) => slices.push(&inline.next().expect("one per inline arg")[..]),
            WireArg::Shared { .. } => {
                let (offset, len) = *shared.next().expect("one pin per shared arg");
                // SAFETY: pinned by `execute` until this task is done.
                match unsafe { cw.store.pool().slice(offset, len) } {
                    Ok(s) => slices.push(s),
                    Err(e) => {
                        return Outcome::Failed(TaskError::Decode {
                            function: spec.function.clone(),
                            what: format!("argument {i}"),
                            reason: e.to_string(),
                        });
                    }
                }
            }
        }
    }
    let ctx = TaskContext {
        cw,
        task_id: spec.task_id,
        function: &spec.function,
        owner: spec.owner,
        num_returns: spec.num_returns,
    };
    invoke(&ctx, &slices)
}
