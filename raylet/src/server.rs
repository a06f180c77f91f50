//! The raylet's IO driver: accepts client connections, decodes their frames, feeds the
//! [`LeasePolicy`] and the [`StoreIndex`], and carries out their decisions.
//!
//! One thread accepts, one thread per connection reads, and one thread spawns and reaps
//! workers. All state sits behind one mutex; replies are whole frames written while it is
//! held, so frames from different threads never interleave. A connection that sends a
//! malformed or oversized frame is closed with a logged reason; everyone else is unaffected.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use ares_common::error::{FrameError, TaskError};
use ares_common::wire::{FromRaylet, NodeStats, SpilledObject, ToRaylet, WorkerInfo};
use ares_common::{Config, Endpoint, NodeId, ObjectId, ResourceSet, WorkerId};
use ares_net::{Listener, Receiver};
use ares_object_store::{ClientId, Pin, Pool, SpillDirs, SpillJob, SpillPolicy, StoreError, StoreIndex};
use hashbrown::HashMap;

use crate::actors::{ActorAction, ActorDirectory, NewActor};
use crate::policy::{Action, LeasePolicy};
use crate::spawner::{self, SpawnCmd, SpawnEvents, SpawnSpec};

/// How to start a raylet.
#[derive(Clone, Debug)]
pub struct RayletConfig {
    /// Node settings (resources, pool size, limits).
    pub node: Config,
    /// The executable started for workers, with `ARES_WORKER=1` in its environment.
    pub worker_program: PathBuf,
    /// Extra environment for workers.
    pub worker_env: Vec<(String, String)>,
    /// Where the pool file is made (and unlinked at once).
    pub shm_dir: PathBuf,
}

impl RayletConfig {
    /// Workers re-execute the current executable.
    pub fn embedded(node: Config) -> io::Result<Self> {
        Ok(RayletConfig {
            node,
            worker_program: std::env::current_exe()?,
            worker_env: Vec::new(),
            shm_dir: PathBuf::from("/dev/shm"),
        })
    }
}

/// A running raylet. Dropping it shuts it down.
pub struct Raylet {
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
    spawner: Option<JoinHandle<()>>,
    spiller: Option<JoinHandle<()>>,
}
enum Kind {
    Unregistered,
    Driver,
    Worker(WorkerId),
}

struct Client {
    out: ares_net::Sender,
    kind: Kind,
}

/// Bytes queued for one client before it is considered stuck and disconnected.
const OUTBOX_LIMIT: usize = 256 << 20;
struct WorkerRec {
    pid: u32,
    addr: Endpoint,
}

struct State {
    policy: LeasePolicy,
    actors: ActorDirectory,
    store: StoreIndex,
    /// The owner (core worker) of every object in the store, told when it is spilled.
    owners: HashMap<ObjectId, WorkerId>,
    /// The connection of every registered core worker (drivers and workers).
    core_workers: HashMap<WorkerId, ClientId>,
    /// The last spill failure, until a spill succeeds.
    spill_error: Option<String>,
    /// Time spent in spill writes and restore reads.
    spill_time: std::time::Duration,
    restore_time: std::time::Duration,
    clients: HashMap<ClientId, Client>,
    workers: HashMap<WorkerId, WorkerRec>,
    /// Workers that registered at some point; the spawner's exit report for them is
    /// not a start failure.
    registered_ever: hashbrown::HashSet<WorkerId>,
    next_client: u64,
}

struct Shared {
    state: Mutex<State>,
    /// Signalled when pool space is freed or a restore ends.
    space: Condvar,
    spill_dirs: SpillDirs,
    spill_tx: Mutex<Sender<SpillJob>>,
    create_timeout: std::time::Duration,
    node_id: NodeId,
    pool: Pool,
    max_frame: usize,
    spawn: Mutex<Sender<SpawnCmd>>,
    stopping: AtomicBool,
    socket_path: String,
    session_dir: PathBuf,
    listener: Listener,
}

impl Raylet {
    /// Creates the session directory and the pool, and starts serving.
    pub fn start(cfg: RayletConfig) -> io::Result<Raylet> {
        ares_net::remove_stale_session_dirs(&cfg.node.session_root);
        let tag = spawner::hex(&uuid::Uuid::new_v4().as_bytes()[..6]);
        let session_dir = ares_net::create_session_dir(&cfg.node.session_root, &tag)?;
        let socket_path = session_dir.join("raylet.sock").to_string_lossy().into_owned();
        let listener = Listener::bind(&Endpoint::Unix(socket_path.clone()))?;
        let pool_size = cfg.node.effective_object_store_memory();
        let pool = Pool::create(&cfg.shm_dir, &tag, pool_size)?;
        let num_cpus = cfg.node.effective_num_cpus();
        let node_id = NodeId::from_uuid(uuid::Uuid::new_v4());
        let mut total = ResourceSet::new().with("CPU", num_cpus as f64);
        for (name, amount) in &cfg.node.resources {
            total.set(name, *amount);
        }
        // Hard node affinity is a request for a sliver of this resource.
        total.set(&node_id.resource_name(), 1.0);
        let max_workers = cfg.node.max_workers.unwrap_or(num_cpus).max(1) as usize;
        let (spawn_tx, spawn_rx) = mpsc::channel();
        let (spill_tx, spill_rx) = mpsc::channel();
        let spill_dirs = SpillDirs::new(&cfg.node.effective_spill_dirs(), &tag)?;
        let spill_policy = SpillPolicy {
            threshold: cfg.node.spill_threshold,
            min_spill_size: cfg.node.min_spill_size,
            max_file_objects: cfg.node.max_spill_file_objects,
        };
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                policy: LeasePolicy::new(total, max_workers),
                actors: ActorDirectory::new(),
                store: StoreIndex::with_policy(pool_size, spill_policy),
                owners: HashMap::new(),
                core_workers: HashMap::new(),
                spill_error: None,
                spill_time: Default::default(),
                restore_time: Default::default(),
                clients: HashMap::new(),
                workers: HashMap::new(),
                registered_ever: Default::default(),
                next_client: 1,
            }),
            node_id,
            space: Condvar::new(),
            spill_dirs,
            spill_tx: Mutex::new(spill_tx),
            create_timeout: cfg.node.object_create_timeout,
            pool,
            max_frame: cfg.node.max_frame_bytes,
            spawn: Mutex::new(spawn_tx),
            stopping: AtomicBool::new(false),
            socket_path: socket_path.clone(),
            session_dir,
            listener,
        });
        let mut env = cfg.worker_env.clone();
        env.push(("ARES_WORKER".into(), "1".into()));
        env.push(("ARES_RAYLET_SOCKET".into(), socket_path));
        env.push(("ARES_SESSION_DIR".into(), shared.session_dir.to_string_lossy().into_owned()));
        env.push(("ARES_MAX_FRAME_BYTES".into(), cfg.node.max_frame_bytes.to_string()));
        env.push(("ARES_MAX_INLINE_BYTES".into(), cfg.node.max_inline_bytes.to_string()));
        let spec = SpawnSpec { program: cfg.worker_program.clone(), env };
        let events = Events(Arc::downgrade(&shared));
        let spawner = std::thread::Builder::new()
            .name("ares-raylet-spawner".into())
            .spawn(move || spawner::run(spec, spawn_rx, events))?;
        {
            let mut st = shared.lock();
            let actions = st.policy.prestart();
            shared.apply(&mut st, actions);
        }
        let weak = Arc::downgrade(&shared);
        let spiller =
            std::thread::Builder::new().name("ares-raylet-spill".into()).spawn(move || spill_loop(weak, spill_rx))?;
        let s = shared.clone();
        let accept = std::thread::Builder::new().name("ares-raylet-accept".into()).spawn(move || accept_loop(s))?;
        tracing::debug!(socket = %shared.socket_path, pool_size, "raylet started");
        Ok(Raylet { shared, accept: Some(accept), spawner: Some(spawner), spiller: Some(spiller) })
    }

    /// The Unix socket clients connect to.
    pub fn socket_path(&self) -> &str {
        &self.shared.socket_path
    }

    /// The session directory (mode 0700) holding this node's sockets.
    pub fn session_dir(&self) -> &Path {
        &self.shared.session_dir
    }

    /// Stops accepting, kills and reaps every worker, closes every connection and removes
    /// the session directory. The pool file was unlinked at start.
    pub fn shutdown(&mut self) {
        if self.shared.stopping.swap(true, Ordering::SeqCst) {
            return;
        }
        self.shared.listener.shutdown();
        let _ = self.shared.spawn.lock().map(|s| s.send(SpawnCmd::Shutdown));
        if let Some(h) = self.spawner.take() {
            let _ = h.join();
        }
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
        {
            let st = self.shared.lock();
            for c in st.clients.values() {
                c.out.close();
            }
        }
        // Closing the job channel ends the spill thread after its current job.
        let (dead_tx, _) = mpsc::channel();
        if let Ok(mut tx) = self.shared.spill_tx.lock() {
            *tx = dead_tx;
        }
        if let Some(h) = self.spiller.take() {
            let _ = h.join();
        }
        self.shared.spill_dirs.remove_all();
        let _ = std::fs::remove_dir_all(&self.shared.session_dir);
    }
}

impl Drop for Raylet {
    fn drop(&mut self) {
        self.shutdown();
    }
}

struct Events(std::sync::Weak<Shared>);

impl SpawnEvents for Events {
    fn exited(&self, worker: WorkerId, status: String) {
        let Some(shared) = self.0.upgrade() else {
            return;
        };
        let mut st = shared.lock();
        if st.registered_ever.remove(&worker) {
            // Registered: its connection's end handles the death.
            return;
        }
        tracing::warn!(%worker, %status, "worker exited before registering");
        let actions = st.policy.worker_start_failed(&format!("worker exited before registering: {status}"));
        shared.apply(&mut st, actions);
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn send(&self, st: &mut State, client: ClientId, msg: &FromRaylet) {
        let Some(c) = st.clients.get_mut(&client) else { return };
        // Never blocks (a client that stops reading cannot stall the raylet); on failure
        // the connection is closed and its reader thread cleans up.
        let _ = c.out.send(msg);
    }

    fn apply(&self, st: &mut State, actions: Vec<Action>) {
        for a in actions {
            match a {
                Action::Grant { client, request_id, lease_id, worker } => {
                    // A granted worker is registered; an empty path would fail the owner's connect.
                    let worker_addr =
                        st.workers.get(&worker).map_or_else(|| Endpoint::Unix(String::new()), |w| w.addr.clone());
                    self.send(
                        st,
                        client,
                        &FromRaylet::LeaseGranted { request_id, lease_id, worker_id: worker, worker_addr },
                    );
                }
                Action::Infeasible { client, request_id, error } => {
                    self.send(st, client, &FromRaylet::LeaseInfeasible { request_id, error });
                }
                Action::StartWorker => {
                    let id = WorkerId::from_uuid(uuid::Uuid::new_v4());
                    let _ = self.spawn.lock().map(|s| s.send(SpawnCmd::Start(id)));
                }
                Action::ReapWorker(w) => {
                    let _ = self.spawn.lock().map(|s| s.send(SpawnCmd::Reap(w)));
                }
            }
        }
    }

    fn apply_actors(&self, st: &mut State, actions: Vec<ActorAction>) {
        for a in actions {
            match a {
                ActorAction::Reply { client, request_id, error } => {
                    self.send(st, client, &FromRaylet::ActorReply { request_id, error });
                }
                ActorAction::Found { client, request_id, info } => {
                    self.send(st, client, &FromRaylet::ActorFound { request_id, info });
                }
                ActorAction::KillWorker(w) => {
                    let _ = self.spawn.lock().map(|s| s.send(SpawnCmd::Reap(w)));
                }
                ActorAction::DetachLease { client, lease_id } => st.policy.detach(client, lease_id),
            }
        }
    }

    fn registered(&self) -> FromRaylet {
        FromRaylet::Registered {
            node_id: self.node_id,
            pool_path: self.pool.reopen_path(),
            pool_size: self.pool.size(),
        }
    }

    /// Sends spill jobs if primaries pass the threshold or `need` bytes did not fit.
    /// Returns whether anything was done (jobs sent, or memory freed at once).
    fn maybe_spill(&self, st: &mut State, need: u64) -> bool {
        let jobs = st.store.plan_spill(need);
        let dropped = st.store.freed_by_last_plan() > 0;
        if jobs.is_empty() {
            return dropped;
        }
        let tx = self.spill_tx.lock().unwrap_or_else(|p| p.into_inner());
        let mut sent = false;
        for job in jobs {
            match tx.send(job) {
                Ok(()) => sent = true,
                // Shutting down: put the objects back.
                Err(mpsc::SendError(job)) => {
                    st.store.finish_spill(&job, Err("the raylet is shutting down".into()));
                }
            }
        }
        self.close_dead_files(st);
        sent || dropped
    }

    /// Closes spill files whose last object is gone.
    fn close_dead_files(&self, st: &mut State) {
        for f in st.store.take_dead_files() {
            self.spill_dirs.remove(f);
        }
    }

    /// The error for a create or restore of `size` bytes that cannot get space.
    fn no_space(st: &State, e: StoreError) -> TaskError {
        match (e, &st.spill_error) {
            (StoreError::TooLarge { size, capacity }, _) => TaskError::ObjectTooLarge { size, capacity },
            (StoreError::Full { requested, capacity, used }, Some(err)) => {
                TaskError::SpillFailed { requested, capacity, used, error: err.clone() }
            }
            (StoreError::Full { requested, capacity, used }, None) => {
                TaskError::ObjectStoreFull { requested, capacity, used }
            }
            (other, _) => TaskError::ObjectLost { object: other.to_string() },
        }
    }

    /// Runs `attempt` until it succeeds or fails for good; while it only lacks space,
    /// asks for spilling and waits (bounded by `create_timeout`) for room.
    fn with_space<'a, T>(
        &'a self,
        mut st: MutexGuard<'a, State>,
        size: u64,
        mut attempt: impl FnMut(&mut State) -> Result<T, StoreError>,
    ) -> (MutexGuard<'a, State>, Result<T, StoreError>) {
        let deadline = std::time::Instant::now() + self.create_timeout;
        loop {
            match attempt(&mut st) {
                Err(StoreError::Full { .. }) => {
                    let stopping = self.stopping.load(Ordering::SeqCst);
                    if !stopping && self.maybe_spill(&mut st, size) && !st.store.spilling() {
                        continue; // memory was freed at once: try again now
                    }
                    let now = std::time::Instant::now();
                    // Only wait while something can still free space.
                    let hope = st.store.spilling() || st.store.stats().pinned_objects > 0;
                    if !hope || now >= deadline || self.stopping.load(Ordering::SeqCst) {
                        tracing::debug!(size, hope, stats = ?st.store.stats(), "giving up waiting for space");
                        let last = attempt(&mut st);
                        return (st, last);
                    }
                    let step = (deadline - now).min(std::time::Duration::from_millis(100));
                    st = self.space.wait_timeout(st, step).unwrap_or_else(|p| p.into_inner()).0;
                }
                other => return (st, other),
            }
        }
    }

    fn create(&self, client: ClientId, request_id: u64, object_id: ObjectId, size: u64, owner: WorkerId) {
        let st = self.lock();
        let (mut st, res) = self.with_space(st, size, |st| st.store.create(object_id, size, client, true));
        let reply = match res {
            Ok(offset) => {
                st.owners.insert(object_id, owner);
                FromRaylet::ObjectCreated { request_id, offset }
            }
            Err(e) => FromRaylet::CreateFailed { request_id, error: Self::no_space(&st, e) },
        };
        self.send(&mut st, client, &reply);
    }

    /// Pins for `client`, restoring from disk first if needed. Restore IO runs on this
    /// connection's thread with the lock released, so nobody else waits for it.
    fn pin(&self, client: ClientId, request_id: u64, id: ObjectId) {
        let mut st = self.lock();
        let reply = loop {
            match st.store.pin(id, client) {
                Ok(Pin::InMemory { offset, size }) => break FromRaylet::Pinned { request_id, offset, size },
                Ok(Pin::Busy) => {
                    st = self
                        .space
                        .wait_timeout(st, std::time::Duration::from_millis(100))
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                }
                Ok(Pin::Spilled) => {
                    let size = st.store.size_of(id).unwrap_or(0);
                    let (g, job) = self.with_space(st, size, |st| st.store.begin_restore(id));
                    st = g;
                    let job = match job {
                        Ok(job) => job,
                        Err(StoreError::InProgress(_)) => continue,
                        Err(e) => break FromRaylet::PinFailed { request_id, error: Self::no_space(&st, e) },
                    };
                    drop(st);
                    let started = std::time::Instant::now();
                    let read = self.spill_dirs.read(&self.pool, &job);
                    let took = started.elapsed();
                    st = self.lock();
                    st.restore_time += took;
                    if let Err(e) = &read {
                        tracing::error!(object = %id, "restore failed: {e}");
                    }
                    let pinned = st.store.finish_restore(id, client, read.is_ok());
                    self.space.notify_all();
                    break match (pinned, read) {
                        (Ok(Pin::InMemory { offset, size }), _) => FromRaylet::Pinned { request_id, offset, size },
                        (_, Err(e)) => FromRaylet::PinFailed {
                            request_id,
                            error: TaskError::ObjectLost { object: format!("{id} (restore failed: {e})") },
                        },
                        (_, Ok(())) => FromRaylet::PinFailed {
                            request_id,
                            error: TaskError::ObjectLost { object: id.to_string() },
                        },
                    };
                }
                Err(_) => {
                    break FromRaylet::PinFailed {
                        request_id,
                        error: TaskError::ObjectLost { object: id.to_string() },
                    };
                }
            }
        };
        self.send(&mut st, client, &reply);
    }

    fn handle(&self, client: ClientId, msg: ToRaylet) {
        match msg {
            ToRaylet::CreateObject { request_id, object_id, size, owner } => {
                return self.create(client, request_id, object_id, size, owner);
            }
            ToRaylet::PinObject { request_id, object_id } => return self.pin(client, request_id, object_id),
            _ => {}
        }
        let mut st = self.lock();
        let st = &mut *st;
        match msg {
            ToRaylet::RegisterDriver { pid, worker_id } => {
                tracing::debug!(pid, "driver registered");
                if let Some(c) = st.clients.get_mut(&client) {
                    c.kind = Kind::Driver;
                }
                st.core_workers.insert(worker_id, client);
                self.send(st, client, &self.registered());
            }
            ToRaylet::RegisterWorker { worker_id, pid, listen_addr } => {
                let fresh = st.clients.get(&client).is_some_and(|c| matches!(c.kind, Kind::Unregistered));
                if !fresh || st.workers.contains_key(&worker_id) {
                    tracing::warn!(%worker_id, "rejecting a repeated worker registration; closing the connection");
                    if let Some(c) = st.clients.get(&client) {
                        c.out.close();
                    }
                    return;
                }
                if let Some(c) = st.clients.get_mut(&client) {
                    c.kind = Kind::Worker(worker_id);
                }
                st.registered_ever.insert(worker_id);
                st.core_workers.insert(worker_id, client);
                st.workers.insert(worker_id, WorkerRec { pid, addr: listen_addr });
                self.send(st, client, &self.registered());
                let actions = st.policy.worker_registered(worker_id);
                self.apply(st, actions);
            }
            ToRaylet::RequestLease { request_id, shape, dedicated } => {
                let actions = st.policy.request(client, request_id, shape, dedicated);
                self.apply(st, actions);
            }
            ToRaylet::RegisterActor { request_id, actor_id, class, name, detached, max_restarts, max_task_retries } => {
                let a = NewActor { actor_id, class, name, detached, max_restarts, max_task_retries };
                let actions = st.actors.register(client, request_id, a);
                self.apply_actors(st, actions);
            }
            ToRaylet::ActorStarted { actor_id, lease_id, worker_id, addr } => {
                if !st.workers.contains_key(&worker_id) && st.policy.lease_of(lease_id).is_none() {
                    // The worker died before this report arrived (another connection).
                    let actions = st.actors.started_on_dead_worker(client, actor_id);
                    self.apply_actors(st, actions);
                    return;
                }
                if st.policy.lease_of(lease_id) != Some((client, worker_id)) {
                    tracing::warn!(client = client.0, %actor_id, "ActorStarted names a lease the client does not hold");
                    let error = TaskError::ActorDied {
                        actor: actor_id.to_string(),
                        class: "?".into(),
                        reason: "its owner reported it running under a lease it does not hold".into(),
                    };
                    let actions = st.actors.create_failed(client, actor_id, &error);
                    self.apply_actors(st, actions);
                    return;
                }
                let actions = st.actors.started(client, actor_id, lease_id, worker_id, addr);
                self.apply_actors(st, actions);
            }
            ToRaylet::ActorCreateFailed { actor_id, error } => {
                let actions = st.actors.create_failed(client, actor_id, &error);
                self.apply_actors(st, actions);
            }
            ToRaylet::ActorWorkerLost { request_id, actor_id } => {
                let actions = st.actors.worker_lost(client, request_id, actor_id);
                self.apply_actors(st, actions);
            }
            ToRaylet::AddActorHold { request_id, actor_id } => {
                let actions = st.actors.add_hold(client, request_id, actor_id);
                self.apply_actors(st, actions);
            }
            ToRaylet::ReleaseActorHold { actor_id } => {
                let actions = st.actors.release_hold(client, actor_id);
                self.apply_actors(st, actions);
            }
            ToRaylet::KillActor { request_id, actor_id } => {
                let actions = st.actors.kill_request(client, request_id, actor_id);
                self.apply_actors(st, actions);
            }
            ToRaylet::LookupActor { request_id, by } => {
                let actions = st.actors.lookup(client, request_id, &by);
                self.apply_actors(st, actions);
            }
            ToRaylet::CancelLeaseRequests { request_ids } => st.policy.cancel(client, &request_ids),
            ToRaylet::ReturnLease { lease_id, worker_broken } => {
                // A broken lease's worker is reaped: the owner lost it, make sure it is gone.
                let actions = st.policy.return_lease(client, lease_id, worker_broken);
                self.apply(st, actions);
            }
            ToRaylet::CreateObject { .. } | ToRaylet::PinObject { .. } => {
                unreachable!("handled by handle_blocking")
            }
            ToRaylet::ReleaseObjects { object_ids } => {
                for id in object_ids {
                    st.store.release(id, client);
                }
                self.close_dead_files(st);
                self.space.notify_all();
            }
            ToRaylet::SealObject { request_id, object_id } => {
                let error = st.store.seal(object_id, client).err().map(|e| e.to_string());
                if let Some(e) = &error {
                    tracing::warn!(%object_id, "seal rejected: {e}");
                }
                self.send(st, client, &FromRaylet::Sealed { request_id, error });
                let _ = self.maybe_spill(st, 0);
            }
            ToRaylet::DeleteObjects { object_ids } => {
                for id in object_ids {
                    st.owners.remove(&id);
                    st.store.delete(id);
                }
                self.close_dead_files(st);
                self.space.notify_all();
            }
            ToRaylet::GetStats { request_id } => {
                let s = st.store.stats();
                let mut workers: Vec<WorkerInfo> = st
                    .workers
                    .iter()
                    .map(|(id, w)| WorkerInfo {
                        worker_id: *id,
                        pid: w.pid,
                        leased: st.policy.is_leased(*id),
                        actor: st.actors.hosted_by(*id),
                    })
                    .collect();
                workers.sort_by_key(|w| w.pid);
                let stats = NodeStats {
                    store_capacity: s.capacity,
                    store_used: s.used,
                    store_objects: s.objects,
                    store_pinned_bytes: s.pinned_bytes,
                    store_pinned_objects: s.pinned_objects,
                    store_spilled_bytes: s.spilled_bytes,
                    store_spilled_objects: s.spilled_objects,
                    store_spilled_bytes_total: s.spilled_bytes_total,
                    store_restored_bytes_total: s.restored_bytes_total,
                    store_restored_objects_total: s.restored_objects_total,
                    store_spill_files: s.spill_files,
                    store_spill_seconds: st.spill_time.as_secs_f64(),
                    store_restore_seconds: st.restore_time.as_secs_f64(),
                    store_spill_error: st.spill_error.clone(),
                    workers,
                    node_id: self.node_id,
                    total: st.policy.total().clone(),
                    available: st.policy.available().clone(),
                };
                self.send(st, client, &FromRaylet::Stats { request_id, stats });
            }
        }
    }

    fn disconnected(&self, client: ClientId) {
        let mut st = self.lock();
        let st = &mut *st;
        let Some(c) = st.clients.remove(&client) else { return };
        st.store.client_gone(client);
        // Objects owned by a core worker that is gone can never be read again (their
        // owner's records died with it): free them, as Ray does on owner death.
        let gone: Vec<WorkerId> = st.core_workers.iter().filter(|(_, c)| **c == client).map(|(w, _)| *w).collect();
        st.core_workers.retain(|_, c| *c != client);
        if !gone.is_empty() {
            let orphans: Vec<ObjectId> =
                st.owners.iter().filter(|(_, o)| gone.contains(o)).map(|(id, _)| *id).collect();
            for id in orphans {
                st.owners.remove(&id);
                st.store.delete(id);
            }
        }
        let store = &st.store;
        st.owners.retain(|id, _| store.contains(*id));
        self.close_dead_files(st);
        self.space.notify_all();
        let mut actions = st.policy.client_gone(client);
        let mut actor_actions = st.actors.client_gone(client);
        if let Kind::Worker(w) = c.kind {
            st.workers.remove(&w);
            actor_actions.extend(st.actors.worker_died(w));
            actions.extend(st.policy.worker_died(w));
            actions.push(Action::ReapWorker(w));
        }
        if !self.stopping.load(Ordering::SeqCst) {
            self.apply(st, actions);
            self.apply_actors(st, actor_actions);
        }
    }
}

fn accept_loop(shared: Arc<Shared>) {
    loop {
        let conn = match shared.listener.accept() {
            Ok(c) => c,
            Err(e) => {
                if shared.stopping.load(Ordering::SeqCst) {
                    return;
                }
                tracing::warn!("accept failed: {e}");
                continue;
            }
        };
        if shared.stopping.load(Ordering::SeqCst) {
            return;
        }
        let Ok((out, rx)) = conn.split(shared.max_frame, OUTBOX_LIMIT) else { continue };
        let id = {
            let mut st = shared.lock();
            let id = ClientId(st.next_client);
            st.next_client += 1;
            st.clients.insert(id, Client { out, kind: Kind::Unregistered });
            id
        };
        let s = shared.clone();
        let spawned = std::thread::Builder::new().name("ares-raylet-conn".into()).spawn(move || serve(s, id, rx));
        if spawned.is_err() {
            shared.disconnected(id);
        }
    }
}

fn serve(shared: Arc<Shared>, client: ClientId, mut rx: Receiver) {
    loop {
        // Clients often send their next request at once (pin after create, release after
        // read); polling briefly saves a thread wake-up, which costs ~30 us on a VM.
        rx.spin_until_readable(ares_net::SPIN_BEFORE_BLOCKING);
        match rx.recv::<ToRaylet>() {
            Ok(msg) => shared.handle(client, msg),
            Err(FrameError::Closed) => break,
            Err(e) => {
                if !shared.stopping.load(Ordering::SeqCst) {
                    tracing::warn!(client = client.0, "closing raylet connection: {e}");
                }
                break;
            }
        }
    }
    rx.close();
    shared.disconnected(client);
}

/// The spill thread: writes each job's objects to a new file (no lock held), then
/// records the outcome, tells owners where their objects went and wakes waiters.
fn spill_loop(shared: std::sync::Weak<Shared>, jobs: mpsc::Receiver<SpillJob>) {
    while let Ok(job) = jobs.recv() {
        let Some(sh) = shared.upgrade() else { return };
        let started = std::time::Instant::now();
        let written = sh.spill_dirs.write(&sh.pool, &job);
        let took = started.elapsed();
        let mut st = sh.lock();
        st.spill_time += took;
        let outcome = st.store.finish_spill(&job, written.as_deref().map_err(|e| e.clone()));
        match &written {
            Ok(_) => st.spill_error = None,
            Err(e) => {
                tracing::error!("{e}");
                st.spill_error = Some(e.clone());
            }
        }
        let mut by_owner: HashMap<ClientId, Vec<SpilledObject>> = HashMap::new();
        for (id, file, offset) in outcome.spilled {
            let size = st.store.size_of(id).unwrap_or(0);
            let url = format!("file://{}?offset={offset}&size={size}", sh.spill_dirs.path(file).display());
            let owner = st.owners.get(&id).and_then(|w| st.core_workers.get(w)).copied();
            if let Some(c) = owner {
                by_owner.entry(c).or_default().push(SpilledObject { object_id: id, url });
            }
        }
        for (c, objects) in by_owner {
            sh.send(&mut st, c, &FromRaylet::ObjectsSpilled { objects });
        }
        for f in outcome.dead_files {
            sh.spill_dirs.remove(f);
        }
        sh.close_dead_files(&mut st);
        // Still over the threshold (objects kept arriving)? Plan the next round.
        if written.is_ok() {
            let _ = sh.maybe_spill(&mut st, 0);
        }
        drop(st);
        sh.space.notify_all();
    }
}
