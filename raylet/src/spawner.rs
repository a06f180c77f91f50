//! The thread that starts, watches and reaps worker processes.
//!
//! Workers set `PR_SET_PDEATHSIG = SIGKILL` first thing (see `ares::worker`), which fires
//! when the *thread* that started them exits. So all starts happen on this one
//! long-lived thread, which lives exactly as long as the raylet; if the whole process
//! dies, the workers die with it. No `pre_exec` hook: without one the standard library
//! starts the child with `posix_spawn` (no copy of the parent's page tables), where a
//! `fork` of a driver holding gigabytes would cost milliseconds per worker. The worker
//! checks `ARES_PARENT_PID` against its parent, for a parent that died before the signal
//! was set.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Child, Command};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ares_common::WorkerId;
use ares_common::hex;

/// Requests to the spawner thread.
pub(crate) enum SpawnCmd {
    /// Start a worker with this ID.
    Start(WorkerId),
    /// The worker is gone or unwanted: kill it if alive and reap it.
    Reap(WorkerId),
    /// The worker registered with the raylet: it no longer runs against the clock.
    Registered(WorkerId),
    /// Kill and reap every worker, then exit.
    Shutdown,
}

/// The workers this thread started and has not reaped yet, shared with the raylet so
/// that a kill (`ares::kill`, a dead owner) is signalled before its reply goes out, not
/// whenever this thread next gets to its queue: otherwise a caller told "killed" could
/// still be answered by the actor. Holding a `Child` until it is waited for keeps its
/// pid from being reused, so signalling it through this table is always safe.
#[derive(Clone, Default)]
pub(crate) struct Children(Arc<Mutex<HashMap<WorkerId, Child>>>);

impl Children {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<WorkerId, Child>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sends SIGKILL to the worker now, if it is still ours; reaping stays with the
    /// spawner thread (a `SpawnCmd::Reap` must follow).
    pub(crate) fn kill_now(&self, id: WorkerId) {
        if let Some(c) = self.lock().get_mut(&id) {
            let _ = c.kill();
        }
    }

    /// Takes the worker out of the table, kills and reaps it.
    fn reap(&self, id: WorkerId) {
        let child = self.lock().remove(&id);
        if let Some(mut c) = child {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// How workers are started.
pub(crate) struct SpawnSpec {
    pub(crate) program: PathBuf,
    pub(crate) args: Vec<String>,
    pub(crate) env: Vec<(String, String)>,
    /// The session directory, where workers make their sockets.
    pub(crate) session_dir: PathBuf,
    /// A worker that has not registered this long after its start is killed.
    pub(crate) register_timeout: Duration,
}

/// Notifications back to the raylet.
pub(crate) trait SpawnEvents: Send + 'static {
    /// A worker we started exited (or could not be started) before registering, or after.
    fn exited(&self, worker: WorkerId, status: String);
    /// A worker did not register within the timeout and was killed: the program does not
    /// act as an Ares worker, and trying again would not help.
    fn never_registered(&self, worker: WorkerId, message: String);
}

/// A worker that exited leaves its socket behind; nobody can connect to it any more.
/// The last bytes a worker wrote to stderr, kept to explain a worker that never
/// registered (everything it writes is passed on to this process's stderr as before).
#[derive(Clone, Default)]
struct Tail(std::sync::Arc<(std::sync::Mutex<TailState>, std::sync::Condvar)>);

/// The kept bytes, and whether the stream ended.
type TailState = (std::collections::VecDeque<u8>, bool);

/// Bytes of a worker's stderr kept for its failure message.
const TAIL_BYTES: usize = 2048;

impl Tail {
    /// Passes `stderr` on to ours on a thread of its own, keeping its last bytes.
    fn follow(stderr: std::process::ChildStderr) -> Tail {
        use std::io::{Read, Write};
        let tail = Tail::default();
        let keep = tail.clone();
        let _ = std::thread::Builder::new().name("ares-worker-stderr".into()).spawn(move || {
            let mut stderr = stderr;
            let mut buf = [0u8; 4096];
            // Ends at EOF: the worker (and whatever inherited its stderr) is gone.
            while let Ok(n) = stderr.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let _ = std::io::stderr().write_all(&buf[..n]);
                let mut t = keep.0.0.lock().unwrap_or_else(|p| p.into_inner());
                t.0.extend(&buf[..n]);
                let extra = t.0.len().saturating_sub(TAIL_BYTES);
                t.0.drain(..extra);
            }
            keep.0.0.lock().unwrap_or_else(|p| p.into_inner()).1 = true;
            keep.0.1.notify_all();
        });
        tail
    }

    /// ", its last output: …" when it wrote anything. The worker is gone: waits (at
    /// most a second, in case something it started still holds its stderr) until all of
    /// its output has been read.
    fn describe(&self) -> String {
        let (lock, ended) = &*self.0;
        let t = lock.lock().unwrap_or_else(|p| p.into_inner());
        let (t, _) = ended.wait_timeout_while(t, Duration::from_secs(1), |t| !t.1).unwrap_or_else(|p| p.into_inner());
        let text = String::from_utf8_lossy(&t.0.iter().copied().collect::<Vec<u8>>()).trim().to_string();
        if text.is_empty() { String::new() } else { format!("; its last output: {text}") }
    }
}

fn remove_socket(spec: &SpawnSpec, id: WorkerId) {
    let _ = std::fs::remove_file(ares_net::worker_socket_path(&spec.session_dir, &hex::encode(&id.0)));
}

pub(crate) fn run(spec: SpawnSpec, rx: Receiver<SpawnCmd>, children: Children, events: impl SpawnEvents) {
    // Workers started and not registered yet, with their start time.
    let mut unregistered: HashMap<WorkerId, Instant> = HashMap::new();
    let mut tails: HashMap<WorkerId, Tail> = HashMap::new();
    let parent = rustix::process::getpid();
    loop {
        match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(SpawnCmd::Start(id)) => {
                let mut cmd = Command::new(&spec.program);
                cmd.args(&spec.args)
                    .envs(spec.env.iter().map(|(k, v)| (k, v)))
                    .env("ARES_WORKER_ID", hex::encode(&id.0))
                    .env("ARES_PARENT_PID", parent.as_raw_nonzero().to_string())
                    .stdin(std::process::Stdio::null());
                if std::env::var_os("GLIBC_TUNABLES").is_none() && !spec.env.iter().any(|(k, _)| k == "GLIBC_TUNABLES")
                {
                    // Large buffers of chunk kernels on transparent huge pages where the
                    // kernel grants them on request: a fresh 4 KiB page costs a fault
                    // (1–2 µs in a VM), a 2 MiB page one fault for 512 of them.
                    cmd.env("GLIBC_TUNABLES", "glibc.malloc.hugetlb=1");
                }
                cmd.stderr(std::process::Stdio::piped());
                match cmd.spawn() {
                    Ok(mut child) => {
                        if let Some(e) = child.stderr.take() {
                            tails.insert(id, Tail::follow(e));
                        }
                        children.lock().insert(id, child);
                        unregistered.insert(id, Instant::now());
                    }
                    Err(e) => events.exited(id, format!("could not start {}: {e}", spec.program.display())),
                }
            }
            Ok(SpawnCmd::Registered(id)) => {
                unregistered.remove(&id);
                tails.remove(&id);
            }
            Ok(SpawnCmd::Reap(id)) => {
                unregistered.remove(&id);
                tails.remove(&id);
                children.reap(id);
                remove_socket(&spec, id);
            }
            Ok(SpawnCmd::Shutdown) | Err(RecvTimeoutError::Disconnected) => {
                let all: Vec<Child> = children.lock().drain().map(|(_, c)| c).collect();
                for mut c in all {
                    let _ = c.kill();
                    let _ = c.wait();
                }
                return;
            }
            Err(RecvTimeoutError::Timeout) => {}
        }
        // Reap workers that exited on their own, and tell the raylet. They leave the
        // table in the same critical section that reaps them.
        let exited: Vec<(WorkerId, String)> = {
            let mut table = children.lock();
            let exited: Vec<(WorkerId, String)> = table
                .iter_mut()
                .filter_map(|(id, c)| match c.try_wait() {
                    Ok(Some(status)) => Some((*id, status.to_string())),
                    _ => None,
                })
                .collect();
            for (id, _) in &exited {
                table.remove(id);
            }
            exited
        };
        for (id, status) in exited {
            // A worker that dies before registering says why, if it wrote anything.
            let why = match (unregistered.remove(&id), tails.remove(&id)) {
                (Some(_), Some(tail)) => tail.describe(),
                _ => String::new(),
            };
            remove_socket(&spec, id);
            events.exited(id, format!("{status}{why}"));
        }
        let late: Vec<WorkerId> =
            unregistered.iter().filter(|(_, t)| t.elapsed() >= spec.register_timeout).map(|(id, _)| *id).collect();
        for id in late {
            unregistered.remove(&id);
            children.reap(id);
            remove_socket(&spec, id);
            let output = tails.remove(&id).map(|t| t.describe()).unwrap_or_default();
            let message = format!(
                "the worker program {} did not register within {:?} (it must be an executable that calls \
                 ares::init, or the ares binary){output}",
                spec.program.display(),
                spec.register_timeout
            );
            events.never_registered(id, message);
        }
    }
}
