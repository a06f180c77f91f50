//! The core worker: what every Ares process (driver or worker) runs to own objects and
//! submit tasks. It carries out the ownership table's decisions and drives the lease
//! protocol: per resource shape it asks the raylet for worker leases, pushes tasks
//! straight to leased workers (pipelined up to an adaptive depth), keeps a lease while
//! tasks of its shape are queued, and returns it once idle.
//!
//! Actor calls go through the same task records, but each actor has its own in-order
//! queue and one direct connection to the actor's worker (see [`actors`]).
//!
//! Locks: `tasks` before `table`, never the other way round. IO to workers happens under
//! `tasks` (whole frames, so concurrent writers never interleave); IO to the raylet never
//! happens under `table`.

mod actors;

pub(crate) use actors::ActorSpawn;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use ares_common::Endpoint;
use ares_common::codec::{Bytes, Value};
use ares_common::frame;
use ares_common::wire::{FromRaylet, FromWorker, NodeStats, Outcome, TaskKind, TaskSpec, ToRaylet, ToWorker, WireArg};
use ares_common::{ActorId, LeaseId, ObjectId, ResourceSet, TaskId, WorkerId};
use ares_net::{Connection, Sender};
use ares_object_store::Pool;
use ares_ownership::{Free, Location, SharedTable, Status};
use hashbrown::HashMap;

use crate::error::{Error, Result, TaskError};
use crate::raylet_client::RayletClient;

/// Lease requests outstanding per shape at most (Ray uses 10 per scheduling class).
const MAX_PENDING_LEASE_REQUESTS: usize = 10;
/// Target time of queued work per worker: pipelining deeper than this only unbalances.
const PIPELINE_TARGET: Duration = Duration::from_micros(500);
/// Bytes queued for one worker before it is considered stuck.
const OUTBOX_LIMIT: usize = 1 << 30;
/// How long `get` watches for a result before blocking.
const GET_SPIN: Duration = Duration::from_micros(50);
/// Idle leases are returned after this long (checked by the housekeeping thread).
const IDLE_LEASE_TIMEOUT: Duration = Duration::from_millis(100);

/// Bytes held for reading: shared inline bytes, or a pin in the node's store that is
/// released on drop.
pub(crate) struct Held {
    cw: Arc<CoreWorker>,
    id: ObjectId,
    what: HeldBytes,
}

enum HeldBytes {
    Inline(Arc<Bytes>),
    Pinned { offset: u64, len: u64 },
}

impl Held {
    /// The held bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        match &self.what {
            HeldBytes::Inline(b) => &b[..],
            // SAFETY: pinned: sealed and in memory until the pin is released (on drop).
            HeldBytes::Pinned { offset, len } => unsafe { self.cw.pool.slice(*offset, *len) }.unwrap_or(&[]),
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if matches!(self.what, HeldBytes::Pinned { .. }) {
            self.cw.release(vec![self.id]);
        }
    }
}

/// Where `store_value` put a value.
pub(crate) enum Stored {
    Inline(Arc<Bytes>),
    Shared { offset: u64, len: u64 },
}

/// Merges the encoded elements of a list of refs into one encoded `Vec<T>`.
pub(crate) type Combine = fn(&[&[u8]]) -> std::result::Result<Bytes, String>;

/// How one argument of a call is given (crate-internal; public only as a private type).
pub(crate) enum ArgSpec {
    /// An encoded value.
    Value(Bytes),
    /// A future; its ID and the handle that keeps it alive until submission counted it.
    Ref(ObjectId),
    /// A list of futures passed as one `Vec<T>` argument.
    Gather { ids: Vec<ObjectId>, combine: Combine },
}

enum Slot {
    Inline(Arc<Bytes>),
    Ref(ObjectId),
    Gather { ids: Vec<ObjectId>, combine: Combine },
}

/// Where a task runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Target {
    /// Any leased worker of its resource shape.
    Pool,
    /// A method call on an actor.
    Actor(ActorId),
    /// An actor's construction (kept until the actor dies, to be re-run on restarts).
    Create(ActorId),
}

struct Task {
    function: Arc<str>,
    args: Vec<Slot>,
    arg_ids: Vec<ObjectId>,
    shape: ResourceSet,
    retries_left: u32,
    attempts: u32,
    unresolved: usize,
    target: Target,
    kind: TaskKind,
    /// Actors whose handles were passed in the arguments: held until the task is done.
    keeps: Vec<ActorId>,
}

#[derive(Default)]
struct ShapeState {
    queue: VecDeque<TaskId>,
    leases: Vec<LeaseId>,
    requests: Vec<u64>,
}

struct Lease {
    shape: ResourceSet,
    out: Sender,
    in_flight: VecDeque<(TaskId, Instant)>,
    last_reply: Instant,
    idle_since: Option<Instant>,
}

#[derive(Default)]
struct Tasks {
    tasks: HashMap<TaskId, Task>,
    waiting: HashMap<ObjectId, Vec<TaskId>>,
    shapes: HashMap<ResourceSet, ShapeState>,
    leases: HashMap<LeaseId, Lease>,
    requests: HashMap<u64, ResourceSet>,
    /// Actors this process calls (owned or borrowed).
    callers: HashMap<ActorId, actors::Caller>,
    /// Direct connections to actors' workers.
    conns: HashMap<u64, actors::ActorConn>,
    /// Dedicated lease requests outstanding, per actor.
    actor_requests: HashMap<u64, ActorId>,
    next_conn: u64,
    /// Moving average of the time a worker spends per task, in seconds.
    avg_task_secs: Option<f64>,
}

/// Options of one submission, already in wire terms.
pub(crate) struct Submit {
    pub(crate) function: &'static str,
    pub(crate) shape: ResourceSet,
    pub(crate) max_retries: u32,
    pub(crate) target: Target,
    pub(crate) kind: TaskKind,
    /// Actors whose handles the arguments carry.
    pub(crate) keeps: Vec<ActorId>,
}

/// Queues that may be able to move after some tasks completed.
#[derive(Default)]
struct Touched {
    shapes: Vec<ResourceSet>,
    actors: Vec<ActorId>,
}

/// What a connection's reader thread reports to.
#[derive(Clone, Copy, Debug)]
enum ConnKey {
    Lease(LeaseId),
    Actor(u64),
}

pub(crate) struct CoreWorker {
    pub(crate) table: SharedTable,
    tasks: Mutex<Tasks>,
    raylet: Arc<RayletClient>,
    pub(crate) pool: Pool,
    pub(crate) max_inline: usize,
    max_frame: usize,
    max_in_flight: u32,
    root: TaskId,
    /// This core worker's ID: objects it owns name it as their owner.
    pub(crate) worker_id: WorkerId,
    task_counter: AtomicU64,
    put_counter: AtomicU32,
    stopped: AtomicBool,
    /// Signalled (with `tasks`) when an actor hold finishes registering.
    actor_cv: std::sync::Condvar,
    me: Weak<CoreWorker>,
}

/// Settings a core worker needs.
pub(crate) struct CoreConfig {
    pub(crate) raylet_socket: String,
    pub(crate) max_inline: usize,
    pub(crate) max_frame: usize,
    pub(crate) max_in_flight: u32,
}

impl CoreWorker {
    /// Connects to the raylet with `hello` and starts the background threads.
    /// `on_raylet_lost` runs if the raylet connection ends.
    pub(crate) fn start(
        cfg: CoreConfig,
        worker_id: WorkerId,
        hello: ToRaylet,
        on_raylet_lost: impl FnOnce() + Send + 'static,
    ) -> Result<Arc<Self>> {
        let (raylet, registered, reader) = RayletClient::connect(&cfg.raylet_socket, cfg.max_frame, hello)?;
        let FromRaylet::Registered { pool_path, pool_size, .. } = registered else {
            return Err(Error::RayletUnavailable(format!("unexpected answer to registration: {registered:?}")));
        };
        let pool = Pool::open(&pool_path, pool_size).map_err(Error::Startup)?;
        let cw = Arc::new_cyclic(|me| CoreWorker {
            table: SharedTable::new(),
            tasks: Mutex::new(Tasks::default()),
            raylet: raylet.clone(),
            pool,
            max_inline: cfg.max_inline,
            max_frame: cfg.max_frame,
            max_in_flight: cfg.max_in_flight.max(1),
            root: TaskId::root(uuid::Uuid::new_v4()),
            worker_id,
            task_counter: AtomicU64::new(0),
            put_counter: AtomicU32::new(0),
            stopped: AtomicBool::new(false),
            actor_cv: std::sync::Condvar::new(),
            me: me.clone(),
        });
        let weak = Arc::downgrade(&cw);
        raylet
            .start_reader(
                reader,
                move |msg| {
                    if let Some(cw) = weak.upgrade() {
                        cw.on_raylet_event(msg);
                    }
                },
                on_raylet_lost,
            )
            .map_err(Error::Startup)?;
        let weak = Arc::downgrade(&cw);
        std::thread::Builder::new()
            .name("ares-housekeeping".into())
            .spawn(move || housekeeping(weak))
            .map_err(Error::Startup)?;
        Ok(cw)
    }

    fn lock_tasks(&self) -> MutexGuard<'_, Tasks> {
        self.tasks.lock().unwrap_or_else(|p| p.into_inner())
    }

    // ---------------------------------------------------------------- values

    /// Encodes `value` inline if small, else straight into a new object in the pool.
    pub(crate) fn store_value<T: Value>(&self, id: ObjectId, value: &T, owner: WorkerId) -> Result<Stored> {
        let len = value.encoded_len().map_err(|e| Error::Encode(e.to_string()))?;
        if len <= self.max_inline {
            return Ok(Stored::Inline(Arc::new(value.encode().map_err(|e| Error::Encode(e.to_string()))?)));
        }
        let offset = self.create_shared(id, len as u64, owner)?;
        // SAFETY: a fresh allocation of ours, unsealed: nobody else reads or writes it.
        let dst =
            unsafe { self.pool.slice_mut(offset, len as u64) }.map_err(|e| Error::RayletUnavailable(e.to_string()))?;
        if let Err(e) = value.encode_into_slice(dst) {
            // Seal and delete the half-written object so its space comes back at once.
            let _ = self.seal(id);
            let _ = self.raylet.send(&ToRaylet::DeleteObjects { object_ids: vec![id] });
            return Err(Error::Encode(e.to_string()));
        }
        self.seal(id)?;
        Ok(Stored::Shared { offset, len: len as u64 })
    }

    fn seal(&self, id: ObjectId) -> Result<()> {
        match self.raylet.call(|request_id| ToRaylet::SealObject { request_id, object_id: id })? {
            FromRaylet::Sealed { error: None, .. } => Ok(()),
            FromRaylet::Sealed { error: Some(e), .. } => {
                Err(Error::RayletUnavailable(format!("seal of {id} rejected: {e}")))
            }
            other => Err(Error::RayletUnavailable(format!("unexpected answer to seal: {other:?}"))),
        }
    }

    fn create_shared(&self, id: ObjectId, size: u64, owner: WorkerId) -> Result<u64> {
        match self.raylet.call(|request_id| ToRaylet::CreateObject { request_id, object_id: id, size, owner })? {
            FromRaylet::ObjectCreated { offset, .. } => Ok(offset),
            FromRaylet::CreateFailed { error, .. } => Err(Error::Task(error)),
            other => Err(Error::RayletUnavailable(format!("unexpected answer to create: {other:?}"))),
        }
    }

    /// Stores `value` as a new object owned by this process.
    pub(crate) fn put<T: Value>(&self, value: &T) -> Result<ObjectId> {
        let id = ObjectId::for_put(self.root, self.put_counter.fetch_add(1, Ordering::Relaxed));
        self.put_stored(id, self.store_value(id, value, self.worker_id)?);
        Ok(id)
    }

    fn put_stored(&self, id: ObjectId, stored: Stored) {
        let loc = match stored {
            Stored::Inline(b) => Location::Inline(b),
            Stored::Shared { offset, len } => Location::Shared { offset, len },
        };
        self.table.lock().add_owned(id, Status::Ready(loc));
    }

    /// Blocks until `id` is ready or failed; returns where its value is.
    pub(crate) fn wait_location(&self, id: ObjectId) -> Result<Location> {
        let pending = |t: &ares_ownership::OwnershipTable| matches!(t.status(id), Some(Status::Pending));
        // A short task answers in microseconds, sooner than a blocked thread wakes up:
        // watch the table's version for a moment before blocking.
        let mut g = self.table.lock();
        if pending(&g) {
            let start = Instant::now();
            let mut seen = self.table.version();
            drop(g);
            while start.elapsed() < GET_SPIN {
                std::thread::yield_now();
                let v = self.table.version();
                if v != seen {
                    seen = v;
                    if !pending(&self.table.lock()) {
                        break;
                    }
                }
            }
            g = self.table.lock();
        }
        let g = self.table.wait_while(g, pending);
        match g.status(id) {
            Some(Status::Ready(loc)) => Ok(loc.clone()),
            Some(Status::Failed(e)) => Err(Error::Task(e.clone())),
            Some(Status::Pending) => unreachable!("waited until not pending"),
            None => {
                Err(Error::Decode { object: id.to_string(), reason: "the object is not owned by this process".into() })
            }
        }
    }

    /// Holds the value at `loc` for reading: inline bytes are shared, a value in the
    /// node's store is pinned there (and restored first if it was spilled) until the
    /// returned [`Held`] is dropped.
    pub(crate) fn hold(&self, id: ObjectId, loc: &Location) -> Result<Held> {
        let cw = self.me.upgrade().ok_or(Error::NotInitialized)?;
        match loc {
            Location::Inline(b) => Ok(Held { cw, id, what: HeldBytes::Inline(b.clone()) }),
            Location::Shared { .. } | Location::Spilled { .. } => {
                let (offset, len) = self.pin(id)?;
                Ok(Held { cw, id, what: HeldBytes::Pinned { offset, len } })
            }
        }
    }

    /// Pins `id` in the node's store; returns its current offset and size.
    pub(crate) fn pin(&self, id: ObjectId) -> Result<(u64, u64)> {
        match self.raylet.call(|request_id| ToRaylet::PinObject { request_id, object_id: id })? {
            FromRaylet::Pinned { offset, size, .. } => Ok((offset, size)),
            FromRaylet::PinFailed { error, .. } => Err(Error::Task(error)),
            other => Err(Error::RayletUnavailable(format!("unexpected answer to pin: {other:?}"))),
        }
    }

    /// Releases pins taken with [`CoreWorker::pin`].
    pub(crate) fn release(&self, ids: Vec<ObjectId>) {
        if !ids.is_empty() {
            let _ = self.raylet.send(&ToRaylet::ReleaseObjects { object_ids: ids });
        }
    }
    /// Waits until `num_returns` of `ids` are ready or failed, or `timeout` passes.
    /// Returns the readiness of each ID.
    pub(crate) fn wait_many(&self, ids: &[ObjectId], num_returns: usize, timeout: Option<Duration>) -> Vec<bool> {
        let done = |t: &ares_ownership::OwnershipTable, id: &ObjectId| !matches!(t.status(*id), Some(Status::Pending));
        let enough = |t: &ares_ownership::OwnershipTable| ids.iter().filter(|id| done(t, id)).count() >= num_returns;
        let g = self.table.lock();
        let g = match timeout {
            None => self.table.wait_while(g, |t| !enough(t)),
            Some(d) => self.table.wait_while_timeout(g, d, |t| !enough(t)).0,
        };
        ids.iter().map(|id| done(&g, id)).collect()
    }

    /// One local handle on `id` fewer.
    pub(crate) fn remove_local_ref(&self, id: ObjectId) {
        let free = self.table.lock().remove_local_ref(id);
        self.free(free.into_iter().collect());
    }

    fn free(&self, frees: Vec<Free>) {
        let shared: Vec<ObjectId> =
            frees.into_iter().filter(|f| f.location.as_ref().is_some_and(|l| l.in_store())).map(|f| f.id).collect();
        if !shared.is_empty() {
            // If the raylet is gone, so is the pool: nothing left to free.
            let _ = self.raylet.send(&ToRaylet::DeleteObjects { object_ids: shared });
        }
    }

    /// The node's statistics.
    pub(crate) fn node_stats(&self) -> Result<NodeStats> {
        match self.raylet.call(|request_id| ToRaylet::GetStats { request_id })? {
            FromRaylet::Stats { stats, .. } => Ok(stats),
            other => Err(Error::RayletUnavailable(format!("unexpected answer to stats: {other:?}"))),
        }
    }

    // ---------------------------------------------------------------- submission

    /// Submits a task; returns the ID of its return object (owned, one local handle).
    pub(crate) fn submit(&self, s: Submit, args: Vec<ArgSpec>) -> ObjectId {
        let task_id = self.root.child(self.task_counter.fetch_add(1, Ordering::Relaxed));
        self.submit_as(task_id, s, args)
    }

    fn submit_as(&self, task_id: TaskId, s: Submit, args: Vec<ArgSpec>) -> ObjectId {
        let return_id = ObjectId::for_return(task_id, 0);
        self.table.lock().add_owned(return_id, Status::Pending);
        let mut slots = Vec::with_capacity(args.len());
        let mut arg_ids = Vec::new();
        let mut early_error = None;
        // Large by-value arguments become objects of their own, as in Ray.
        let mut temps = Vec::new();
        for (i, a) in args.into_iter().enumerate() {
            match a {
                ArgSpec::Value(b) if b.len() <= self.max_inline => slots.push(Slot::Inline(Arc::new(b))),
                ArgSpec::Value(b) => {
                    let id = ObjectId::for_put(task_id, i as u32);
                    match self.store_bytes(id, &b) {
                        Ok(stored) => {
                            self.put_stored(id, stored);
                            temps.push(id);
                            arg_ids.push(id);
                            slots.push(Slot::Ref(id));
                        }
                        Err(Error::Task(e)) => early_error = Some(e),
                        Err(e) => {
                            early_error = Some(TaskError::Decode {
                                function: s.function.to_string(),
                                what: format!("argument {i}"),
                                reason: e.to_string(),
                            })
                        }
                    }
                }
                ArgSpec::Ref(id) => {
                    arg_ids.push(id);
                    slots.push(Slot::Ref(id));
                }
                ArgSpec::Gather { ids, combine } => {
                    arg_ids.extend_from_slice(&ids);
                    slots.push(Slot::Gather { ids, combine });
                }
            }
        }
        let mut tasks = self.lock_tasks();
        let mut frees = Vec::new();
        let mut failed: Option<TaskError> = early_error;
        if self.stopped.load(Ordering::SeqCst) {
            failed = Some(TaskError::RuntimeShutdown);
        }
        let mut unresolved = 0;
        {
            let mut table = self.table.lock();
            table.add_submitted(&arg_ids);
            for id in &temps {
                // The task now holds its temporary argument; the handle is not needed.
                frees.extend(table.remove_local_ref(*id));
            }
            for id in &arg_ids {
                match table.status(*id) {
                    Some(Status::Pending) => {
                        unresolved += 1;
                        tasks.waiting.entry(*id).or_default().push(task_id);
                    }
                    Some(Status::Failed(e)) if failed.is_none() => failed = Some(e.clone()),
                    None if failed.is_none() => failed = Some(TaskError::OwnerDied { object: id.to_string() }),
                    _ => {}
                }
            }
        }
        let mut keeps = s.keeps;
        keeps.retain(|a| match tasks.callers.get_mut(a) {
            Some(c) => {
                c.handles += 1;
                true
            }
            None => false,
        });
        let task = Task {
            function: Arc::from(s.function),
            args: slots,
            arg_ids,
            shape: s.shape.clone(),
            retries_left: s.max_retries,
            attempts: 0,
            unresolved,
            target: s.target,
            kind: s.kind,
            keeps,
        };
        tasks.tasks.insert(task_id, task);
        if let Target::Actor(a) = s.target {
            match tasks.callers.get_mut(&a) {
                Some(c) => c.queue.push_back(task_id),
                None => failed = failed.or_else(|| Some(actors::unknown_actor(a))),
            }
        }
        if let Some(e) = failed {
            self.fail_task(&mut tasks, task_id, e, &mut frees);
        } else if unresolved == 0 {
            match s.target {
                Target::Pool => {
                    tasks.shapes.entry(s.shape.clone()).or_default().queue.push_back(task_id);
                    self.dispatch(&mut tasks, &s.shape);
                }
                Target::Actor(a) | Target::Create(a) => self.dispatch_actor(&mut tasks, a, &mut frees),
            }
        }
        drop(tasks);
        self.free(frees);
        return_id
    }

    /// Records a call that failed before submission (its arguments could not be encoded).
    pub(crate) fn submit_failed(&self, error: TaskError) -> ObjectId {
        let task_id = self.root.child(self.task_counter.fetch_add(1, Ordering::Relaxed));
        let return_id = ObjectId::for_return(task_id, 0);
        self.table.lock().add_owned(return_id, Status::Failed(error));
        return_id
    }

    fn store_bytes(&self, id: ObjectId, bytes: &Bytes) -> Result<Stored> {
        let offset = self.create_shared(id, bytes.len() as u64, self.worker_id)?; // SAFETY: a fresh allocation of ours, unsealed.
        let dst = unsafe { self.pool.slice_mut(offset, bytes.len() as u64) }
            .map_err(|e| Error::RayletUnavailable(e.to_string()))?;
        dst.copy_from_slice(bytes);
        self.seal(id)?;
        Ok(Stored::Shared { offset, len: bytes.len() as u64 })
    }

    /// Fails `task_id` for good with `error`, and with it every task waiting on it.
    fn fail_task(&self, tasks: &mut Tasks, task_id: TaskId, error: TaskError, frees: &mut Vec<Free>) {
        let mut stack = vec![task_id];
        let mut failed_creates = Vec::new();
        let mut failed_calls = Vec::new();
        while let Some(tid) = stack.pop() {
            let Some(task) = tasks.tasks.remove(&tid) else {
                continue;
            };
            let rid = ObjectId::for_return(tid, 0);
            {
                let mut table = self.table.lock();
                frees.extend(table.set_failed(rid, error.clone()));
                frees.extend(table.remove_submitted(&task.arg_ids));
                match task.target {
                    Target::Create(a) => {
                        // The actor's record held the construction's result.
                        frees.extend(table.remove_local_ref(rid));
                        failed_creates.push(a);
                    }
                    Target::Actor(a) if !failed_calls.contains(&a) => failed_calls.push(a),
                    _ => {}
                }
            }
            if let Some(waiters) = tasks.waiting.remove(&rid) {
                stack.extend(waiters);
            }
            self.retire(tasks, task, frees);
        }
        self.table.notify();
        // At shutdown the node ends owned actors itself, and detached ones must live on.
        if !self.stopped.load(Ordering::SeqCst) {
            for a in failed_creates {
                self.create_failed(tasks, a, &error, frees);
            }
        }
        // A failed call may have been the last thing keeping this process's hold.
        for a in failed_calls {
            self.maybe_release(tasks, a, frees);
        }
    }

    fn depth(&self, tasks: &Tasks) -> usize {
        match tasks.avg_task_secs {
            None => 1,
            Some(avg) => {
                ((PIPELINE_TARGET.as_secs_f64() / avg.max(1e-7)) as usize).clamp(1, self.max_in_flight as usize)
            }
        }
    }

    /// Pushes queued tasks of `shape` to its leased workers and asks for more leases if
    /// tasks remain queued.
    fn dispatch(&self, tasks: &mut Tasks, shape: &ResourceSet) {
        let depth = self.depth(tasks);
        let mut failures = Vec::new();
        {
            let Tasks { tasks: all, shapes, leases, requests, .. } = &mut *tasks;
            let Some(st) = shapes.get_mut(shape) else {
                return;
            };
            let mut out: HashMap<LeaseId, Vec<u8>> = HashMap::new();
            let now = Instant::now();
            while !st.queue.is_empty() {
                let Some(&lease_id) = st
                    .leases
                    .iter()
                    .filter(|l| leases[*l].in_flight.len() < depth)
                    .min_by_key(|l| leases[*l].in_flight.len())
                else {
                    break;
                };
                let tid = st.queue.pop_front().expect("non-empty");
                let Some(task) = all.get_mut(&tid) else {
                    continue;
                };
                let spec = match self.resolve(tid, task) {
                    Ok(spec) => spec,
                    Err(e) => {
                        failures.push((tid, e));
                        continue;
                    }
                };
                let function = spec.function.clone();
                let payload = frame::encode(&ToWorker::Push(spec));
                if payload.len() > self.max_frame {
                    let reason = format!(
                        "the task's arguments encode to {} bytes, over the frame limit of {} bytes; \
                         pass large values as ObjectRefs",
                        payload.len(),
                        self.max_frame
                    );
                    failures.push((tid, TaskError::Decode { function, what: "arguments".into(), reason }));
                    continue;
                }
                let lease = leases.get_mut(&lease_id).expect("listed lease exists");
                let buf = out.entry(lease_id).or_default();
                frame::write_frame(buf, &payload).expect("writing to a Vec cannot fail");
                lease.in_flight.push_back((tid, now));
                lease.idle_since = None;
            }
            for (lease_id, buf) in out {
                let lease = &leases[&lease_id];
                // Never blocks: a reader thread may be the one dispatching here.
                if let Err(e) = lease.out.send_framed(&buf) {
                    // The lease's reader sees the broken connection and retries its tasks.
                    tracing::debug!("push to worker failed: {e}");
                }
            }
            for l in &st.leases {
                let lease = leases.get_mut(l).expect("listed lease exists");
                if lease.in_flight.is_empty() && lease.idle_since.is_none() {
                    lease.idle_since = Some(now);
                }
            }
            let want = st.queue.len().min(MAX_PENDING_LEASE_REQUESTS);
            while st.requests.len() < want {
                let request_id = self.raylet.next_request_id();
                let request = ToRaylet::RequestLease { request_id, shape: shape.clone(), dedicated: false };
                if self.raylet.send(&request).is_err() {
                    break;
                }
                st.requests.push(request_id);
                requests.insert(request_id, shape.clone());
            }
        }
        if !failures.is_empty() {
            let mut frees = Vec::new();
            for (tid, e) in failures {
                self.fail_task(tasks, tid, e, &mut frees);
            }
            self.free(frees);
        }
    }

    /// Builds the wire spec of a ready task from the current values of its arguments.
    fn resolve(&self, tid: TaskId, task: &mut Task) -> std::result::Result<TaskSpec, TaskError> {
        // Snapshot where every argument is, then let go of the table: pins below are RPCs.
        let locations: HashMap<ObjectId, Location> = {
            let table = self.table.lock();
            let mut m = HashMap::new();
            for id in task.args.iter().flat_map(|slot| match slot {
                Slot::Inline(_) => &[][..],
                Slot::Ref(id) => std::slice::from_ref(id),
                Slot::Gather { ids, .. } => &ids[..],
            }) {
                match table.status(*id) {
                    Some(Status::Ready(l)) => {
                        m.insert(*id, l.clone());
                    }
                    // Submission counted the argument, so it is here and ready.
                    other => unreachable!("argument {id} of a ready task is {other:?}"),
                }
            }
            m
        };
        let wire = |id: &ObjectId| match &locations[id] {
            Location::Inline(b) => WireArg::Inline(b.to_vec()),
            Location::Shared { len, .. } | Location::Spilled { len, .. } => {
                WireArg::Shared { object_id: *id, len: *len }
            }
        };
        let mut args = Vec::with_capacity(task.args.len());
        for (i, slot) in task.args.iter().enumerate() {
            args.push(match slot {
                Slot::Inline(b) => WireArg::Inline(b.to_vec()),
                Slot::Ref(id) => wire(id),
                Slot::Gather { ids, combine } => {
                    // Pins are RPCs to the raylet; its reader thread never takes our locks.
                    let held: std::result::Result<Vec<Held>, Error> =
                        ids.iter().map(|id| self.hold(*id, &locations[id])).collect();
                    let merged = held.map_err(|e| e.to_string()).and_then(|h| {
                        let parts: Vec<&[u8]> = h.iter().map(|h| h.bytes()).collect();
                        // Under `tasks`: actor handles inside are copied, not borrowed.
                        crate::actor::without_borrowing(|| combine(&parts))
                    });
                    match merged {
                        Ok(b) if b.len() + 1024 <= self.max_frame => WireArg::Inline(b.to_vec()),
                        Ok(b) => {
                            return Err(TaskError::Decode {
                                function: task.function.to_string(),
                                what: format!("argument {i}"),
                                reason: format!("a gathered list of {} bytes exceeds the frame limit", b.len()),
                            });
                        }
                        Err(reason) => {
                            return Err(TaskError::Decode {
                                function: task.function.to_string(),
                                what: format!("argument {i}"),
                                reason,
                            });
                        }
                    }
                }
            });
        }
        Ok(TaskSpec {
            task_id: tid,
            function: task.function.to_string(),
            owner: self.worker_id,
            args,
            attempt: task.attempts,
            kind: task.kind.clone(),
        })
    }

    // ---------------------------------------------------------------- events

    fn on_raylet_event(&self, msg: FromRaylet) {
        match msg {
            FromRaylet::LeaseGranted { request_id, lease_id, worker_addr, worker_id } => {
                if self.lock_tasks().actor_requests.contains_key(&request_id) {
                    self.on_actor_lease(request_id, lease_id, worker_id, &worker_addr);
                } else {
                    self.on_lease_granted(request_id, lease_id, &worker_addr)
                }
            }
            FromRaylet::LeaseInfeasible { request_id, error } => {
                let mut tasks = self.lock_tasks();
                if let Some(actor) = tasks.actor_requests.remove(&request_id) {
                    let mut frees = Vec::new();
                    self.actor_infeasible(&mut tasks, actor, error, &mut frees);
                    drop(tasks);
                    self.free(frees);
                    return;
                }
                let Some(shape) = tasks.requests.remove(&request_id) else {
                    return;
                };
                let queued: Vec<TaskId> = match tasks.shapes.get_mut(&shape) {
                    Some(st) => {
                        st.requests.retain(|r| *r != request_id);
                        st.queue.drain(..).collect()
                    }
                    None => Vec::new(),
                };
                let mut frees = Vec::new();
                for tid in queued {
                    self.fail_task(&mut tasks, tid, error.clone(), &mut frees);
                }
                drop(tasks);
                self.free(frees);
            }
            FromRaylet::ObjectsSpilled { objects } => {
                let mut table = self.table.lock();
                for o in objects {
                    let len = match table.status(o.object_id) {
                        Some(Status::Ready(Location::Shared { len, .. } | Location::Spilled { len, .. })) => *len,
                        _ => continue,
                    };
                    table.set_location(o.object_id, Location::Spilled { url: o.url, len });
                }
            }
            other => tracing::debug!("ignoring unsolicited raylet message {other:?}"),
        }
    }

    fn on_lease_granted(&self, request_id: u64, lease_id: LeaseId, worker_addr: &Endpoint) {
        let mut tasks = self.lock_tasks();
        let shape = tasks.requests.remove(&request_id);
        let st = shape.as_ref().and_then(|s| tasks.shapes.get_mut(s));
        let Some(st) = st else {
            drop(tasks);
            let _ = self.raylet.send(&ToRaylet::ReturnLease { lease_id, worker_broken: false });
            return;
        };
        st.requests.retain(|r| *r != request_id);
        if st.queue.is_empty() || self.stopped.load(Ordering::SeqCst) {
            drop(tasks);
            let _ = self.raylet.send(&ToRaylet::ReturnLease { lease_id, worker_broken: false });
            return;
        }
        let shape = shape.expect("checked");
        let connected = Connection::connect(worker_addr).and_then(|c| c.split(self.max_frame, OUTBOX_LIMIT));
        let (out, reader) = match connected {
            Ok(pair) => pair,
            Err(e) => {
                tracing::warn!("could not connect to leased worker at {worker_addr}: {e}");
                let _ = self.raylet.send(&ToRaylet::ReturnLease { lease_id, worker_broken: true });
                self.dispatch(&mut tasks, &shape);
                return;
            }
        };
        if spawn_conn_reader(self.me.clone(), ConnKey::Lease(lease_id), reader).is_err() {
            let _ = self.raylet.send(&ToRaylet::ReturnLease { lease_id, worker_broken: false });
            self.dispatch(&mut tasks, &shape);
            return;
        }
        let now = Instant::now();
        tasks.leases.insert(
            lease_id,
            Lease { shape: shape.clone(), out, in_flight: VecDeque::new(), last_reply: now, idle_since: Some(now) },
        );
        tasks.shapes.get_mut(&shape).expect("present").leases.push(lease_id);
        self.dispatch(&mut tasks, &shape);
    }

    fn on_replies(&self, key: ConnKey, replies: Vec<FromWorker>) {
        match key {
            ConnKey::Lease(lease_id) => self.on_lease_replies(lease_id, replies),
            ConnKey::Actor(conn) => self.on_actor_replies(conn, replies),
        }
    }

    fn on_lease_replies(&self, lease_id: LeaseId, replies: Vec<FromWorker>) {
        let mut tasks = self.lock_tasks();
        let mut frees = Vec::new();
        let mut touched = Touched::default();
        let mut stale = Vec::new();
        let now = Instant::now();
        for FromWorker::Done { task_id, outcome } in replies {
            if let Some(lease) = tasks.leases.get_mut(&lease_id) {
                if let Some(pos) = lease.in_flight.iter().position(|(t, _)| *t == task_id) {
                    let (_, pushed) = lease.in_flight.remove(pos).expect("in range");
                    let secs = now.duration_since(pushed.max(lease.last_reply)).as_secs_f64();
                    lease.last_reply = now;
                    tasks.avg_task_secs = Some(match tasks.avg_task_secs {
                        None => secs,
                        Some(avg) => avg * 0.9 + secs * 0.1,
                    });
                }
            }
            self.complete(&mut tasks, task_id, outcome, &mut frees, &mut stale, &mut touched);
        }
        self.table.notify();
        if let Some(shape) = tasks.leases.get(&lease_id).map(|l| l.shape.clone()) {
            if !touched.shapes.contains(&shape) {
                touched.shapes.push(shape);
            }
        }
        self.dispatch_touched(&mut tasks, touched, &mut frees);
        if let Some(lease) = tasks.leases.get_mut(&lease_id) {
            if lease.in_flight.is_empty() && lease.idle_since.is_none() {
                lease.idle_since = Some(now);
            }
        }
        drop(tasks);
        self.free(frees);
        self.delete_stale(stale);
    }

    /// Records one task's outcome, and makes the tasks waiting on its result ready.
    fn complete(
        &self,
        tasks: &mut Tasks,
        task_id: TaskId,
        outcome: Outcome,
        frees: &mut Vec<Free>,
        stale: &mut Vec<ObjectId>,
        touched: &mut Touched,
    ) {
        let rid = ObjectId::for_return(task_id, 0);
        let Some(task) = tasks.tasks.remove(&task_id) else {
            // Nobody waits for it any more (the runtime stopped): free what it made.
            if matches!(outcome, Outcome::Shared { .. }) {
                stale.push(rid);
            }
            return;
        };
        if task.attempts > 0 && !matches!(outcome, Outcome::Shared { .. }) {
            // An earlier attempt may have sealed a copy before its worker died.
            stale.push(rid);
        }
        let location = match outcome {
            Outcome::Inline(v) => {
                let mut b = Bytes::with_capacity(v.len());
                b.extend_from_slice(&v);
                Location::Inline(Arc::new(b))
            }
            Outcome::Shared { offset, len } => Location::Shared { offset, len },
            Outcome::Failed(e) => {
                // Put the task back so fail_task handles it and its dependents alike.
                tasks.tasks.insert(task_id, task);
                self.fail_task(tasks, task_id, e, frees);
                return;
            }
        };
        {
            let mut table = self.table.lock();
            frees.extend(table.set_ready(rid, location));
            frees.extend(table.remove_submitted(&task.arg_ids));
        }
        self.retire(tasks, task, frees);
        for tid in tasks.waiting.remove(&rid).unwrap_or_default() {
            let Some(t) = tasks.tasks.get_mut(&tid) else {
                continue;
            };
            t.unresolved -= 1;
            if t.unresolved == 0 {
                match t.target {
                    Target::Pool => {
                        let shape = t.shape.clone();
                        tasks.shapes.entry(shape.clone()).or_default().queue.push_back(tid);
                        if !touched.shapes.contains(&shape) {
                            touched.shapes.push(shape);
                        }
                    }
                    Target::Actor(a) | Target::Create(a) => {
                        if !touched.actors.contains(&a) {
                            touched.actors.push(a);
                        }
                    }
                }
            }
        }
    }

    fn dispatch_touched(&self, tasks: &mut Tasks, touched: Touched, frees: &mut Vec<Free>) {
        for shape in &touched.shapes {
            self.dispatch(tasks, shape);
        }
        for a in touched.actors {
            self.dispatch_actor(tasks, a, frees);
        }
    }

    /// Deletes pool copies no owner record points at; deleting an unknown ID is a no-op.
    fn delete_stale(&self, ids: Vec<ObjectId>) {
        if !ids.is_empty() {
            let _ = self.raylet.send(&ToRaylet::DeleteObjects { object_ids: ids });
        }
    }

    fn on_lease_lost(&self, lease_id: LeaseId, reason: String) {
        let mut tasks = self.lock_tasks();
        let Some(lease) = tasks.leases.remove(&lease_id) else {
            return;
        };
        tracing::debug!("lost leased worker: {reason}");
        let _ = self.raylet.send(&ToRaylet::ReturnLease { lease_id, worker_broken: true });
        if let Some(st) = tasks.shapes.get_mut(&lease.shape) {
            st.leases.retain(|l| *l != lease_id);
        }
        let mut frees = Vec::new();
        let mut stale = Vec::new();
        let mut retry = Vec::new();
        for (tid, _) in lease.in_flight {
            let Some(task) = tasks.tasks.get_mut(&tid) else {
                continue;
            };
            task.attempts += 1;
            if task.retries_left > 0 && !self.stopped.load(Ordering::SeqCst) {
                task.retries_left -= 1;
                retry.push(tid);
            } else {
                let error = TaskError::WorkerDied { function: task.function.to_string(), attempts: task.attempts };
                self.fail_task(&mut tasks, tid, error, &mut frees);
                // The dead worker may have sealed a result before dying.
                stale.push(ObjectId::for_return(tid, 0));
            }
        }
        if let Some(st) = tasks.shapes.get_mut(&lease.shape) {
            for tid in retry.into_iter().rev() {
                st.queue.push_front(tid);
            }
        }
        self.dispatch(&mut tasks, &lease.shape);
        drop(tasks);
        self.free(frees);
        self.delete_stale(stale);
    }

    /// Returns leases that stayed idle for [`IDLE_LEASE_TIMEOUT`].
    fn return_idle_leases(&self) {
        let mut tasks = self.lock_tasks();
        let now = Instant::now();
        let idle: Vec<LeaseId> = tasks
            .leases
            .iter()
            .filter(|(_, l)| {
                l.in_flight.is_empty() && l.idle_since.is_some_and(|t| now.duration_since(t) >= IDLE_LEASE_TIMEOUT)
            })
            .map(|(id, _)| *id)
            .collect();
        for id in idle {
            let lease = tasks.leases.remove(&id).expect("listed");
            if let Some(st) = tasks.shapes.get_mut(&lease.shape) {
                st.leases.retain(|l| *l != id);
            }
            lease.out.close();
            let _ = self.raylet.send(&ToRaylet::ReturnLease { lease_id: id, worker_broken: false });
        }
    }

    /// Fails everything pending, returns every lease and closes the raylet connection.
    pub(crate) fn stop(&self) {
        if self.stopped.swap(true, Ordering::SeqCst) {
            return;
        }
        let mut tasks = self.lock_tasks();
        let ids: Vec<TaskId> = tasks.tasks.keys().copied().collect();
        let mut frees = Vec::new();
        for tid in ids {
            self.fail_task(&mut tasks, tid, TaskError::RuntimeShutdown, &mut frees);
        }
        for st in tasks.shapes.values_mut() {
            st.leases.clear();
            st.queue.clear();
        }
        for (id, lease) in tasks.leases.drain() {
            lease.out.close();
            let _ = self.raylet.send(&ToRaylet::ReturnLease { lease_id: id, worker_broken: false });
        }
        self.close_actor_conns(&mut tasks);
        drop(tasks);
        self.free(frees);
        self.raylet.close();
    }
}

fn spawn_conn_reader(cw: Weak<CoreWorker>, key: ConnKey, rx: ares_net::Receiver) -> std::io::Result<()> {
    let on_closed = cw.clone();
    ares_net::spawn_reader::<FromWorker>(
        "ares-conn-reader",
        rx,
        1024,
        move |batch| match cw.upgrade() {
            Some(cw) => {
                cw.on_replies(key, batch);
                true
            }
            None => false,
        },
        move |reason| {
            if let Some(cw) = on_closed.upgrade() {
                match key {
                    ConnKey::Lease(lease_id) => cw.on_lease_lost(lease_id, reason),
                    ConnKey::Actor(conn) => cw.on_actor_conn_lost(conn, reason),
                }
            }
        },
    )
}

fn housekeeping(cw: Weak<CoreWorker>) {
    loop {
        std::thread::sleep(IDLE_LEASE_TIMEOUT / 2);
        let Some(cw) = cw.upgrade() else { return };
        if cw.stopped.load(Ordering::SeqCst) {
            return;
        }
        cw.return_idle_leases();
    }
}
