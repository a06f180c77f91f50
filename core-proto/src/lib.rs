//! The core worker as a state machine: what every Ares process (driver or worker) does
//! to own objects and submit tasks, with no IO. The `ares` crate's core worker drives it
//! for real processes, the `ares-sim` harness for simulated ones.
//!
//! **Must not:** do IO, read the clock, spawn threads, or depend on an async runtime, a
//! network crate or a data library (`cargo tree -p ares-core-proto` shows no tokio,
//! quinn, rustls, polars or pyo3; CI checks it).
//!
//! In the manner of quinn-proto's `Connection`: events come in through `handle_*` methods
//! with the time passed in (`now`), and what must happen goes out as [`Output`]s that the
//! driver (the `ares` crate's `core_worker`) takes with [`CoreState::poll`] and carries out: send these
//! frames on that connection, open a connection, ask the raylet for a lease, free these
//! objects, merge a gathered argument. This module reads no clock, spawns no thread, does
//! no IO and iterates its maps in a fixed order, so the same events always give the same
//! effects (the unit tests below and the `ares-sim` harness rely on it).
//!
//! What it decides:
//! - ownership: the [`OwnershipTable`] of every object this process owns;
//! - submission: dependency resolution, per resource shape queues, leases (up to
//!   [`MAX_PENDING_LEASE_REQUESTS`] outstanding per shape), pipelined pushes to the least
//!   loaded leased worker up to an adaptive depth, retries when a worker dies, and the
//!   return of leases idle for [`IDLE_LEASE_TIMEOUT`];
//! - actors (see [`actors`]): per-actor in-order queues, construction, restarts and
//!   holds, on the same connections as leased workers;
//! - borrowing (see [`borrow`]): refs to other processes' objects, asked of and
//!   registered with their owners, and the owner's answers to its borrowers.
//!
//! Task IDs are given to it (see [`TaskScope`]): a nested task's ID derives from the
//! running task's ID and its submission counter, so re-running a task makes the same IDs.

mod actors;
mod borrow;
mod lineage;
#[cfg(test)]
mod tests;

pub use actors::{ActorSpawn, Borrow};

use ares_common::RequestId;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ares_common::codec::Bytes;
use ares_common::det::DetMap;
use ares_common::frame;
use ares_common::wire::{
    FromRaylet, FromWorker, Outcome, RefInValue, ReturnValue, TaskKind, TaskSpec, ToRaylet, ToWorker, WireArg,
};
use ares_common::{
    ActorId, Address, Endpoint, LeaseId, NodeId, ObjectId, ResourceSet, Strategy, TaskError, TaskId, WorkerId,
};
use ares_ownership::{BorrowTable, Location, Output as OwnershipOutput, Owner, OwnershipTable, Status};

/// Lease requests outstanding per shape at most (Ray uses 10 per scheduling class).
pub const MAX_PENDING_LEASE_REQUESTS: usize = 10;
/// Target time of queued work per worker: pipelining deeper than this only unbalances.
const PIPELINE_TARGET: Duration = Duration::from_micros(500);
/// Idle leases are returned after this long.
pub const IDLE_LEASE_TIMEOUT: Duration = Duration::from_millis(100);
/// A node whose raylet could not be reached is not asked again for this long; lease
/// requests spilled to it wait this long, until the cluster view says it is dead.
pub const UNREACHABLE_HOLD: Duration = Duration::from_millis(500);

/// The node whose actor directory keeps an actor, when it is not this process's own
/// node: its ID and QUIC address.
pub type Home = Option<(NodeId, std::net::SocketAddr)>;

/// The one rule for where a value travels: inline (in messages, and in its owner's
/// memory) up to `max_inline` bytes, else through the node's shared-memory store. Puts,
/// by-value arguments and task returns all follow it; drivers keep a copy (it never
/// changes), so the check takes no lock.
#[derive(Clone, Copy, Debug)]
pub struct InlineRule {
    /// The largest value that travels inline, in bytes.
    pub max_inline: usize,
}

impl InlineRule {
    /// Whether a value of `len` encoded bytes travels inline.
    pub fn inline(self, len: usize) -> bool {
        len <= self.max_inline
    }
}

/// How a process on some node reads a ready value (see [`plan_read`]).
#[derive(Debug)]
pub enum ReadPlan<'a> {
    /// The bytes are here, in the owner's memory.
    Inline(&'a Arc<Bytes>),
    /// A copy is in this node's store: pin it there (never pulled from elsewhere).
    Local,
    /// Only other nodes hold copies: pull one into this node's store, trying them in
    /// this order, record the new copy with the owner, then pin it.
    Pull(Vec<NodeId>),
}

/// How a process on node `here` reads the value at `loc`.
pub fn plan_read(loc: &Location, here: NodeId) -> ReadPlan<'_> {
    match loc {
        Location::Inline(b) => ReadPlan::Inline(b),
        Location::Stored(s) if s.nodes().any(|n| n == here) => ReadPlan::Local,
        Location::Stored(s) => ReadPlan::Pull(s.nodes().collect()),
    }
}

/// Merges the encoded elements of a list of refs into one encoded `Vec<T>`.
pub type Combine = fn(&[&[u8]]) -> std::result::Result<Bytes, String>;

/// One connection to a worker (leased for tasks, or hosting an actor), named by the
/// state; the driver maps it to a socket.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnId(pub u64);

/// What the driver must carry out, in order.
#[derive(Debug)]
pub enum Output {
    /// Open a connection to `endpoint`, known as `conn`, and report its replies with
    /// [`CoreState::handle_replies`]; if connecting fails, call
    /// [`CoreState::handle_conn_closed`]. Sends on it may follow at once.
    Connect { conn: ConnId, endpoint: Endpoint },
    /// Write these bytes (whole frames) to `conn`; never block.
    Send { conn: ConnId, bytes: Vec<u8> },
    /// Close `conn`; the state has forgotten it, so its end is not reported back.
    Close(ConnId),
    /// Send a message to this node's raylet.
    ToRaylet(ToRaylet),
    /// Send a message to the raylet of another node, serving at `addr` (connecting and
    /// registering first if needed). Its messages come back through
    /// [`CoreState::handle_node`]; if the connection fails or ends, call
    /// [`CoreState::handle_node_lost`].
    ToNode { node: NodeId, addr: std::net::SocketAddr, msg: ToRaylet },
    /// Close the connection to `node`'s raylet, if any: the node died.
    ForgetNode(NodeId),
    /// Read the values of `parts` (pinning stored ones), merge them with `combine` and
    /// report the result with [`CoreState::handle_gathered`].
    Gather { task: TaskId, slot: usize, parts: Vec<(ObjectId, Location)>, combine: Combine },
}

/// Where the IDs of the tasks and puts of one running task come from. The driver keeps
/// one per thread that runs a task, and the state keeps the process's root scope for
/// every other thread.
#[derive(Clone, Debug)]
pub struct TaskScope {
    task: TaskId,
    children: u64,
    puts: u32,
}

impl TaskScope {
    /// The scope of `task` (IDs are counted from zero for every run of it).
    pub fn new(task: TaskId) -> Self {
        TaskScope { task, children: 0, puts: 0 }
    }

    /// The ID of the next task this task submits.
    pub fn next_task(&mut self) -> TaskId {
        let id = self.task.child(self.children);
        self.children += 1;
        id
    }

    /// The ID of the next object this task puts.
    pub fn next_put(&mut self) -> ObjectId {
        let id = ObjectId::for_put(self.task, self.puts);
        self.puts += 1;
        id
    }
}

/// One argument of a submission.
pub enum Arg {
    /// An encoded value, small enough to travel in the push.
    Inline(Bytes),
    /// A large by-value argument the driver already stored as the owned object `id`
    /// (one local reference, which the task takes over).
    Stored { id: ObjectId, len: u64 },
    /// A future.
    Ref(ObjectId),
    /// A list of futures passed as one `Vec<T>` argument.
    Gather { ids: Vec<ObjectId>, combine: Combine },
}

enum Slot {
    Inline(Arc<Bytes>),
    Ref(ObjectId),
    Gather { ids: Vec<ObjectId>, combine: Combine, merged: Option<Arc<Bytes>> },
}

/// Where a task runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Target {
    /// Any leased worker of its resource shape.
    Pool,
    /// A method call on an actor.
    Actor(ActorId),
    /// An actor's construction (kept until the actor dies, to be re-run on restarts).
    Create(ActorId),
}

/// The queue a task waits in for a leased worker: its resources and where it may run.
/// Leases serve one key.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SchedKey {
    pub shape: ResourceSet,
    pub strategy: Strategy,
}

/// Options of one submission, already in wire terms.
pub struct Submit {
    pub function: &'static str,
    pub shape: ResourceSet,
    /// Where in the cluster it should run (tasks; actors stay on this node).
    pub strategy: Strategy,
    pub max_retries: u32,
    pub target: Target,
    pub kind: TaskKind,
    /// Actors whose handles the arguments carry: held until the task is done.
    pub keeps: Vec<ActorId>,
    /// Refs (owned or borrowed) encoded inside argument values: kept in scope until the
    /// task is done.
    pub carried: Vec<ObjectId>,
    /// Return values (at least 1): `ObjectId::for_return(task, 0..num_returns)`.
    pub num_returns: u32,
}

struct Task {
    function: Arc<str>,
    args: Vec<Slot>,
    arg_ids: Vec<ObjectId>,
    carried: Vec<ObjectId>,
    shape: ResourceSet,
    strategy: Strategy,
    retries_left: u32,
    attempts: u32,
    /// Arguments still pending.
    unresolved: usize,
    /// Gathered arguments not yet merged.
    unmerged: usize,
    target: Target,
    kind: TaskKind,
    keeps: Vec<ActorId>,
    num_returns: u32,
    /// Nodes where earlier attempts ran on workers that were lost: they may have sealed
    /// return values there, which the successful attempt's make stale.
    stale_on: Vec<NodeId>,
}

impl Task {
    fn ready(&self) -> bool {
        self.unresolved == 0 && self.unmerged == 0
    }
}

/// The return objects of `task_id` that `outcome` says are sealed in a store.
fn stored_returns(task_id: TaskId, outcome: &Outcome) -> Vec<ObjectId> {
    match outcome {
        Outcome::Shared { .. } => vec![ObjectId::for_return(task_id, 0)],
        Outcome::Returns(v) => v
            .iter()
            .enumerate()
            .filter(|(_, r)| matches!(r, ReturnValue::Shared { .. }))
            .map(|(i, _)| ObjectId::for_return(task_id, i as u32))
            .collect(),
        Outcome::Inline(_) | Outcome::Failed(_) => Vec::new(),
    }
}

fn inline_location(v: &[u8]) -> Location {
    let mut b = Bytes::with_capacity(v.len());
    b.extend_from_slice(v);
    Location::Inline(Arc::new(b))
}

/// The return objects of task `tid` of `n` return values.
fn returns_of(tid: TaskId, n: u32) -> impl Iterator<Item = ObjectId> {
    (0..n.max(1)).map(move |i| ObjectId::for_return(tid, i))
}

#[derive(Default)]
struct ShapeState {
    queue: VecDeque<TaskId>,
    leases: Vec<ConnId>,
    requests: Vec<RequestId>,
}

enum Role {
    /// A worker leased for tasks of one key, from the raylet of `node` (`None`: this
    /// node's).
    Lease { lease_id: LeaseId, shape: SchedKey, node: Option<NodeId>, last_reply: Instant, idle_since: Option<Instant> },
    /// The worker hosting an actor; the owner also holds its dedicated lease.
    Actor { actor: ActorId, lease: Option<(LeaseId, WorkerId)> },
}

struct Conn {
    endpoint: Endpoint,
    /// The driver reported the connection open; nothing is pushed before.
    connected: bool,
    /// Replies arrived on it (a borrower's lookup found a working address).
    answered: bool,
    in_flight: VecDeque<(TaskId, Instant)>,
    role: Role,
}

impl Conn {
    fn new(endpoint: Endpoint, role: Role) -> Self {
        Conn { endpoint, connected: false, answered: false, in_flight: VecDeque::new(), role }
    }
}

/// A raylet request this state sent and awaits the answer to.
enum Request {
    /// A lease for a queue, asked of `node`'s raylet (`None`: this node's).
    Lease(SchedKey, Option<NodeId>),
    ActorLease(ActorId),
    AddHold(ActorId),
    WorkerLost(ActorId),
    Lookup(ActorId),
}

/// Queues that may be able to move after some tasks completed.
#[derive(Default)]
struct Touched {
    shapes: Vec<SchedKey>,
    actors: Vec<ActorId>,
}

/// Settings of a core worker.
#[derive(Clone, Debug)]
pub struct StateConfig {
    /// This process as an owner.
    pub address: Address,
    /// The root task of this process (random for a driver).
    pub root: TaskId,
    /// Largest frame a worker accepts.
    pub max_frame: usize,
    /// Deepest pipeline per leased worker.
    pub max_in_flight: u32,
    /// Bytes of finished tasks' specs kept to rebuild lost objects (0: none kept).
    pub max_lineage_bytes: u64,
    /// Which values travel inline.
    pub inline: InlineRule,
}

/// The state of one core worker. See the module docs.
pub struct CoreState {
    cfg: StateConfig,
    table: OwnershipTable,
    root: TaskScope,
    tasks: DetMap<TaskId, Task>,
    waiting: DetMap<ObjectId, Vec<TaskId>>,
    shapes: DetMap<SchedKey, ShapeState>,
    /// Where other nodes' raylets serve, as spillback named them.
    nodes: DetMap<NodeId, std::net::SocketAddr>,
    /// Nodes whose raylet connection failed, and when.
    unreachable: DetMap<NodeId, Instant>,
    /// Why this node's daemon said it is stopping, if it did.
    raylet_goodbye: Option<String>,
    /// Queues that ask for no lease before this time (they were sent to an unreachable
    /// node).
    backoff: DetMap<SchedKey, Instant>,
    conns: DetMap<ConnId, Conn>,
    requests: DetMap<RequestId, Request>,
    /// Actors this process calls (owned or borrowed).
    callers: DetMap<ActorId, actors::Caller>,
    /// Refs this process holds to objects other processes own.
    borrowed: BorrowTable,
    /// Borrowed objects whose location was asked of their owners.
    lookups: DetMap<ObjectId, borrow::Lookup>,
    /// Borrower registrations sent and not yet answered, by request ID.
    registrations: DetMap<RequestId, (Owner, Vec<ObjectId>)>,
    /// Borrowed refs held by the values of owned objects, by object (released when its
    /// value is freed).
    contained_borrowed: DetMap<ObjectId, Vec<ObjectId>>,
    /// Actors whose handles the values of owned objects hold, by object (held until its
    /// value is freed).
    actors_in_values: DetMap<ObjectId, Vec<ActorId>>,
    /// Copies of borrowed objects this process's reads pulled into its node.
    pulled_copies: ares_common::det::DetSet<ObjectId>,
    /// Holds this worker keeps for callers its tasks returned handles to, until each
    /// caller says it holds them (`ActorsHeld`) or is gone.
    lent_actors: DetMap<WorkerId, Vec<ActorId>>,
    /// Workers to tell `ActorsHeld` once this process's hold on the actor is counted:
    /// who, and through which node's raylet.
    hold_acks: DetMap<ActorId, Vec<(WorkerId, NodeId)>>,
    /// Borrowers waiting for owned objects to be ready: who, and through which node's
    /// raylet to answer.
    location_waiters: DetMap<ObjectId, Vec<(WorkerId, NodeId)>>,
    /// Specs of finished tasks kept to rebuild their lost outputs (see [`lineage`]).
    lineage: lineage::KeptSpecs,
    next_conn: u64,
    next_request: RequestId,
    /// Moving average of the time a worker spends per task, in seconds.
    avg_task_secs: Option<f64>,
    /// Why the state stopped (shutdown, or the raylet is gone): every pending and later
    /// task fails with it.
    stopped: Option<TaskError>,
    out: VecDeque<Output>,
    /// Statuses changed since the driver last looked: wake waiters.
    changed: bool,
    /// A timer earlier than any before was set since the driver last looked.
    timer_changed: bool,
}

impl CoreState {
    pub fn new(cfg: StateConfig) -> Self {
        let max_lineage_bytes = cfg.max_lineage_bytes;
        CoreState {
            root: TaskScope::new(cfg.root),
            cfg,
            table: OwnershipTable::new(),
            tasks: DetMap::default(),
            waiting: DetMap::default(),
            shapes: DetMap::default(),
            nodes: DetMap::default(),
            unreachable: DetMap::default(),
            raylet_goodbye: None,
            backoff: DetMap::default(),
            conns: DetMap::default(),
            requests: DetMap::default(),
            callers: DetMap::default(),
            borrowed: BorrowTable::new(),
            lookups: DetMap::default(),
            registrations: DetMap::default(),
            location_waiters: DetMap::default(),
            contained_borrowed: DetMap::default(),
            actors_in_values: DetMap::default(),
            pulled_copies: Default::default(),
            lent_actors: DetMap::default(),
            hold_acks: DetMap::default(),
            lineage: lineage::KeptSpecs::new(max_lineage_bytes),
            next_conn: 1,
            next_request: RequestId(1),
            avg_task_secs: None,
            stopped: None,
            out: VecDeque::new(),
            changed: false,
            timer_changed: false,
        }
    }

    // ------------------------------------------------------------------ driver API

    /// The next effect to carry out.
    pub fn poll(&mut self) -> Option<Output> {
        self.out.pop_front()
    }

    /// Whether statuses changed since the last call (waiters should re-check).
    pub fn take_changed(&mut self) -> bool {
        std::mem::take(&mut self.changed)
    }

    /// Whether a timer earlier than the ones before was set since the last call.
    pub fn take_timer_changed(&mut self) -> bool {
        std::mem::take(&mut self.timer_changed)
    }

    /// When [`CoreState::handle_timeout`] should next run, if anything waits for time.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let idle = self.conns.values().filter_map(|c| match c.role {
            Role::Lease { idle_since: Some(t), .. } if c.in_flight.is_empty() => Some(t + IDLE_LEASE_TIMEOUT),
            _ => None,
        });
        let retries = self.callers.values().filter_map(|c| c.retry_at());
        idle.chain(retries).chain(self.backoff.values().copied()).min()
    }

    /// Which values travel inline.
    pub fn inline_rule(&self) -> InlineRule {
        self.cfg.inline
    }

    /// This core worker's ID (owned objects name it as their owner).
    pub fn worker_id(&self) -> WorkerId {
        self.cfg.address.worker
    }

    /// The node this process runs on.
    pub fn node(&self) -> NodeId {
        self.cfg.address.node
    }

    /// The status of an owned object (`None`: not owned here, or already freed).
    pub fn status(&self, id: ObjectId) -> Option<&Status> {
        self.table.status(id)
    }

    /// Objects this process owns and tracks.
    pub fn owned_len(&self) -> usize {
        self.table.len()
    }

    /// Refs to other processes' objects this process holds.
    pub fn borrowed_len(&self) -> usize {
        self.borrowed.len()
    }

    /// Tasks submitted and not yet finished.
    pub fn pending_tasks(&self) -> usize {
        self.tasks.len()
    }

    /// Open connections to workers.
    pub fn open_conns(&self) -> usize {
        self.conns.len()
    }

    /// Whether `stop` ran.
    pub fn stopped(&self) -> bool {
        self.stopped.is_some()
    }

    /// The next ID for a task submitted from `scope` (the root scope if `None`).
    pub fn next_task_id(&mut self, scope: Option<&mut TaskScope>) -> TaskId {
        scope.unwrap_or(&mut self.root).next_task()
    }

    /// The next ID for an object put from `scope` (the root scope if `None`).
    pub fn next_put_id(&mut self, scope: Option<&mut TaskScope>) -> ObjectId {
        scope.unwrap_or(&mut self.root).next_put()
    }

    fn request_id(&mut self) -> RequestId {
        let id = self.next_request;
        self.next_request = self.next_request.next();
        id
    }

    fn conn_id(&mut self) -> ConnId {
        let id = ConnId(self.next_conn);
        self.next_conn += 1;
        id
    }

    fn send_raylet(&mut self, msg: ToRaylet) {
        self.out.push_back(Output::ToRaylet(msg));
    }

    /// Turns the table's effects into raylet messages: every value held by the store is
    /// deleted there (one message for the batch). Called at the end of every event.
    fn flush_frees(&mut self) {
        let mut ids = Vec::new();
        let mut remote: Vec<(NodeId, Vec<ObjectId>)> = Vec::new();
        while let Some(e) = self.table.poll() {
            let OwnershipOutput::Free { id, .. } = &e;
            self.lineage_freed(*id);
            if !self.contained_borrowed.is_empty()
                && let Some(inner) = self.contained_borrowed.remove(id)
            {
                for i in inner {
                    self.borrowed.remove_contained(i);
                }
            }
            if !self.actors_in_values.is_empty()
                && let Some(actors) = self.actors_in_values.remove(id)
            {
                for a in actors {
                    self.drop_handle(a);
                }
            }
            match e {
                OwnershipOutput::Free { id, location: Some(Location::Stored(s)) } => {
                    // This node may hold a copy pulled for a `get` even when the primary
                    // is elsewhere; deleting an absent ID is a no-op.
                    ids.push(id);
                    for node in s.nodes().chain(s.maybe.iter().copied()).filter(|n| *n != self.node()) {
                        match remote.iter_mut().find(|(n, _)| *n == node) {
                            Some((_, v)) => v.push(id),
                            None => remote.push((node, vec![id])),
                        }
                    }
                }
                OwnershipOutput::Free { .. } => {}
            }
        }
        if !ids.is_empty() {
            self.send_raylet(ToRaylet::DeleteObjects { object_ids: ids });
        }
        for (node, ids) in remote {
            self.send_to(Some(node), ToRaylet::DeleteObjects { object_ids: ids });
        }
        self.flush_borrows();
        if !self.location_waiters.is_empty() {
            self.answer_locations();
        }
    }

    // ------------------------------------------------------------------ references

    /// Records an object this process just put (one local handle); `contained` are the
    /// refs inside its value, kept alive while it is.
    pub fn add_put(&mut self, id: ObjectId, location: Location, contained: &[RefInValue]) {
        self.table.add_owned(id, Status::Ready(location));
        if !contained.is_empty() {
            self.hold_contained(id, contained);
        }
    }

    /// `node` (this process's) now holds a copy of the stored object `id`: a `get`
    /// pulled it there. An owned object's copy is freed with it; a borrowed one's when
    /// this process lets the ref go.
    pub fn add_copy(&mut self, id: ObjectId, node: NodeId) {
        if self.table.status(id).is_some() {
            self.table.add_copy(id, node);
        } else {
            self.borrowed_copy(id);
        }
    }

    /// One more local handle family on `id`; whether this process tracks it.
    pub fn add_local_ref(&mut self, id: ObjectId) -> bool {
        self.table.add_local_ref(id)
    }

    /// One local handle family on `id` fewer.
    pub fn remove_local_ref(&mut self, id: ObjectId) {
        self.table.remove_local_ref(id);
        self.flush_frees();
    }

    /// A location hint from the node's store: the objects were spilled.
    fn on_spilled(&mut self, objects: Vec<ares_common::wire::SpilledObject>) {
        for o in objects {
            self.table.set_spilled(o.object_id, o.url);
        }
    }

    // ------------------------------------------------------------------ submission

    /// Submits a task as `task_id`; returns its return object (owned, one local handle).
    pub fn submit(&mut self, now: Instant, task_id: TaskId, s: Submit, args: Vec<Arg>) -> ObjectId {
        self.submit_with(now, task_id, s, args, None)
    }

    /// Like [`CoreState::submit`], failing the task at once with `early` if given (an
    /// argument could not be stored).
    pub fn submit_with(
        &mut self,
        now: Instant,
        task_id: TaskId,
        s: Submit,
        args: Vec<Arg>,
        early: Option<TaskError>,
    ) -> ObjectId {
        let return_id = ObjectId::for_return(task_id, 0);
        let num_returns = s.num_returns.max(1);
        for rid in returns_of(task_id, num_returns) {
            self.table.add_owned(rid, Status::Pending);
        }
        let mut slots = Vec::with_capacity(args.len());
        let mut arg_ids = Vec::new();
        let mut temps = Vec::new();
        let mut unmerged = 0;
        for a in args {
            match a {
                Arg::Inline(b) => slots.push(Slot::Inline(Arc::new(b))),
                Arg::Stored { id, len } => {
                    // A large by-value argument became an object of its own, as in Ray.
                    self.table.add_owned(id, Status::Ready(Location::stored(self.node(), len)));
                    temps.push(id);
                    arg_ids.push(id);
                    slots.push(Slot::Ref(id));
                }
                Arg::Ref(id) => {
                    arg_ids.push(id);
                    slots.push(Slot::Ref(id));
                }
                Arg::Gather { ids, combine } => {
                    arg_ids.extend_from_slice(&ids);
                    unmerged += 1;
                    slots.push(Slot::Gather { ids, combine, merged: None });
                }
            }
        }
        let mut failed = early;
        if let Some(e) = &self.stopped {
            failed = Some(e.clone());
        }
        self.table.add_submitted(&arg_ids);
        self.table.add_submitted(&s.carried);
        self.borrowed.add_submitted(&arg_ids);
        self.borrowed.add_submitted(&s.carried);
        let borrowing = !self.borrowed.is_empty();
        for id in arg_ids.iter().filter(|_| borrowing) {
            // A borrowed argument: its owner says where the value is.
            if self.table.status(*id).is_none()
                && let Some(owner) = self.borrowed.owner(*id)
            {
                self.hold_lookup(*id, owner);
            }
        }
        for id in &temps {
            // The task now holds its temporary argument; the handle is not needed.
            self.table.remove_local_ref(*id);
        }
        let mut unresolved = 0;
        for id in &arg_ids {
            match Values::new(&self.table, &self.lookups).status(*id) {
                Some(Status::Pending) => {
                    unresolved += 1;
                    self.waiting.entry(*id).or_default().push(task_id);
                }
                Some(Status::Failed(e)) if failed.is_none() => failed = Some((**e).clone()),
                None if failed.is_none() => {
                    failed = Some(TaskError::OwnerDied {
                        object: id.to_string(),
                        owner: "a runtime of this process that was shut down".into(),
                    })
                }
                _ => {}
            }
        }
        let mut keeps = s.keeps;
        keeps.retain(|a| match self.callers.get_mut(a) {
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
            carried: s.carried,
            shape: s.shape.clone(),
            strategy: s.strategy,
            retries_left: s.max_retries,
            attempts: 0,
            unresolved,
            unmerged,
            target: s.target,
            kind: s.kind,
            keeps,
            num_returns,
            stale_on: Vec::new(),
        };
        self.tasks.insert(task_id, task);
        if let Target::Actor(a) = s.target {
            match self.callers.get_mut(&a) {
                Some(c) => c.queue.push_back(task_id),
                None => failed = failed.or_else(|| Some(actors::unknown_actor(a))),
            }
        }
        if let Some(e) = failed {
            self.fail_task(task_id, e);
        } else if unresolved == 0 {
            self.args_resolved(now, task_id);
        }
        self.flush_frees();
        return_id
    }

    /// Records a call that failed before submission (its arguments could not be encoded).
    pub fn submit_failed(&mut self, task_id: TaskId, error: TaskError) -> ObjectId {
        self.submit_failed_n(task_id, 1, error)
    }

    /// [`CoreState::submit_failed`] for a task of `num_returns` return values; returns
    /// the first.
    pub fn submit_failed_n(&mut self, task_id: TaskId, num_returns: u32, error: TaskError) -> ObjectId {
        for rid in returns_of(task_id, num_returns) {
            self.table.add_owned(rid, Status::Failed(Box::new(error.clone())));
        }
        ObjectId::for_return(task_id, 0)
    }

    /// Every argument of `tid` is ready: merge its gathered lists, or queue it.
    fn args_resolved(&mut self, now: Instant, tid: TaskId) {
        let Some(task) = self.tasks.get(&tid) else {
            return;
        };
        if task.unmerged > 0 {
            self.emit_gathers(tid);
            return;
        }
        let mut touched = Touched::default();
        self.enqueue_ready(tid, &mut touched);
        self.dispatch_touched(now, touched);
    }

    /// Asks the driver to merge the gathered lists of `tid`, whose parts are all ready;
    /// the task is queued once the merges are back.
    fn emit_gathers(&mut self, tid: TaskId) {
        let Some(task) = self.tasks.get(&tid) else {
            return;
        };
        for (slot, s) in task.args.iter().enumerate() {
            if let Slot::Gather { ids, combine, merged: None } = s {
                let parts = ids
                    .iter()
                    .map(|id| match Values::new(&self.table, &self.lookups).status(*id) {
                        Some(Status::Ready(l)) => (*id, l.clone()),
                        // Submission counted the argument, so it is here and ready.
                        other => unreachable!("argument {id} of a resolved task is {other:?}"),
                    })
                    .collect();
                self.out.push_back(Output::Gather { task: tid, slot, parts, combine: *combine });
            }
        }
    }

    /// Puts a ready task where it will be pushed from, and notes which queue moved.
    fn enqueue_ready(&mut self, tid: TaskId, touched: &mut Touched) {
        let Some(t) = self.tasks.get(&tid) else {
            return;
        };
        match t.target {
            Target::Pool => {
                let shape = SchedKey { shape: t.shape.clone(), strategy: t.strategy.clone() };
                self.shapes.entry(shape.clone()).or_default().queue.push_back(tid);
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

    /// The driver merged gathered argument `slot` of `task` (or failed to).
    pub fn handle_gathered(
        &mut self,
        now: Instant,
        task: TaskId,
        slot: usize,
        merged: std::result::Result<Bytes, String>,
    ) {
        let Some(t) = self.tasks.get_mut(&task) else {
            return;
        };
        let error = match merged {
            Ok(b) if b.len() + 1024 <= self.cfg.max_frame => {
                if let Some(Slot::Gather { merged: m @ None, .. }) = t.args.get_mut(slot) {
                    *m = Some(Arc::new(b));
                    t.unmerged -= 1;
                }
                None
            }
            Ok(b) => Some(format!("a gathered list of {} bytes exceeds the frame limit", b.len())),
            Err(reason) => Some(reason),
        };
        match error {
            Some(reason) => {
                let e =
                    TaskError::Decode { function: t.function.to_string(), what: format!("argument {slot}"), reason };
                self.fail_task(task, e);
            }
            None if t.ready() => {
                let mut touched = Touched::default();
                self.enqueue_ready(task, &mut touched);
                self.dispatch_touched(now, touched);
            }
            None => {}
        }
        self.flush_frees();
    }

    /// Fails `task_id` for good with `error`, and with it every task waiting on it.
    fn fail_task(&mut self, task_id: TaskId, error: TaskError) {
        let mut stack = vec![task_id];
        let mut failed_creates = Vec::new();
        let mut failed_calls = Vec::new();
        while let Some(tid) = stack.pop() {
            let Some(task) = self.tasks.remove(&tid) else {
                continue;
            };
            let rid = ObjectId::for_return(tid, 0);
            for r in returns_of(tid, task.num_returns) {
                self.table.set_failed(r, error.clone());
                if let Some(waiters) = self.waiting.remove(&r) {
                    stack.extend(waiters);
                }
            }
            self.release_args(&task.arg_ids);
            match task.target {
                Target::Create(a) => {
                    // The actor's record held the construction's result.
                    self.table.remove_local_ref(rid);
                    failed_creates.push(a);
                }
                Target::Actor(a) if !failed_calls.contains(&a) => failed_calls.push(a),
                _ => {}
            }
            self.retire(&mut { task });
        }
        self.changed = true;
        // At shutdown the node ends owned actors itself, and detached ones must live on.
        if self.stopped.is_none() {
            for a in failed_creates {
                self.create_failed(a, &error);
            }
        }
        // A failed call may have been the last thing keeping this process's hold.
        for a in failed_calls {
            self.maybe_release(a);
        }
    }

    /// Drops what a finished task kept alive: the refs and actor handles its arguments
    /// carried.
    fn retire(&mut self, task: &mut Task) {
        let carried = std::mem::take(&mut task.carried);
        self.table.remove_submitted(&carried);
        self.borrowed.remove_submitted(&carried);
        for a in std::mem::take(&mut task.keeps) {
            self.drop_handle(a);
        }
    }

    fn depth(&self) -> usize {
        match self.avg_task_secs {
            None => 1,
            Some(avg) => {
                ((PIPELINE_TARGET.as_secs_f64() / avg.max(1e-7)) as usize).clamp(1, self.cfg.max_in_flight as usize)
            }
        }
    }

    fn dispatch_touched(&mut self, now: Instant, touched: Touched) {
        for shape in &touched.shapes {
            self.dispatch(now, shape);
        }
        for a in touched.actors {
            self.dispatch_actor(now, a);
        }
    }

    /// Pushes queued tasks of `shape` to its leased workers and asks for more leases if
    /// tasks remain queued.
    fn dispatch(&mut self, now: Instant, shape: &SchedKey) {
        let depth = self.depth();
        let mut failures = Vec::new();
        // Tasks that may run anywhere also use idle workers leased for the same resources
        // under another strategy, rather than wait for a CPU those leases hold (a small
        // combine behind a node's stream of placed chunks). Looked for only when none of
        // the queue's own leases can take more.
        let anywhere = matches!(shape.strategy, Strategy::Default);
        let borrowable = |c: &Conn| match &c.role {
            Role::Lease { shape: k, .. } => {
                k != shape && k.shape == shape.shape && c.connected && c.in_flight.is_empty()
            }
            Role::Actor { .. } => false,
        };
        let Some(st) = self.shapes.get_mut(shape) else {
            return;
        };
        let mut out: Vec<(ConnId, Vec<u8>)> = Vec::new();
        let mut unready: Vec<(TaskId, Vec<ObjectId>)> = Vec::new();
        while !st.queue.is_empty() {
            let conns = &self.conns;
            let own = st
                .leases
                .iter()
                .filter(|c| conns[*c].connected && conns[*c].in_flight.len() < depth)
                .min_by_key(|c| conns[*c].in_flight.len());
            let idle = || anywhere.then(|| conns.iter().find(|(_, c)| borrowable(c)).map(|(id, _)| id)).flatten();
            let Some(&conn_id) = own.or_else(idle) else {
                break;
            };
            let tid = st.queue.pop_front().expect("non-empty");
            let Some(task) = self.tasks.get(&tid) else {
                continue;
            };
            let payload = match resolve(&Values::new(&self.table, &self.lookups), self.cfg.address.worker, tid, task)
                .and_then(|spec| encode_push(spec, self.cfg.max_frame).map_err(Unready::Failed))
            {
                Ok(p) => p,
                Err(Unready::Failed(e)) => {
                    failures.push((tid, e));
                    continue;
                }
                Err(Unready::Pending(ids)) => {
                    // An argument was lost since the task was queued and is being rebuilt.
                    unready.push((tid, ids));
                    continue;
                }
            };
            let buf = match out.iter_mut().find(|(c, _)| *c == conn_id) {
                Some((_, b)) => b,
                None => {
                    out.push((conn_id, Vec::new()));
                    &mut out.last_mut().expect("just pushed").1
                }
            };
            payload.write_to(buf);
            let conn = self.conns.get_mut(&conn_id).expect("listed lease exists");
            conn.in_flight.push_back((tid, now));
            if let Role::Lease { idle_since, .. } = &mut conn.role {
                *idle_since = None;
            }
        }
        for (conn, bytes) in out {
            // The driver never blocks on this: a reader thread may be dispatching here.
            self.out.push_back(Output::Send { conn, bytes });
        }
        for c in &st.leases {
            let conn = self.conns.get_mut(c).expect("listed lease exists");
            if let Role::Lease { idle_since, .. } = &mut conn.role
                && conn.in_flight.is_empty()
                && idle_since.is_none()
            {
                *idle_since = Some(now);
            }
        }
        let held = self.backoff.get(shape).is_some_and(|t| now < *t);
        let want = if held { 0 } else { st.queue.len().min(MAX_PENDING_LEASE_REQUESTS) };
        // A soft preference (given, or the node holding the arguments) is asked of that
        // node directly, which queues it while it can ever hold it: the tasks wait for
        // their data's node rather than run elsewhere on a stale view of free CPUs. A
        // node whose address is not known yet is reached through this node's spillback.
        let (to, spilled) = match &shape.strategy {
            Strategy::NodeAffinity { node, soft: true } if *node == self.cfg.address.node => (None, true),
            Strategy::NodeAffinity { node, soft: true } => match self.nodes.get(node) {
                Some(addr) => (Some((*node, *addr)), true),
                None => (None, false),
            },
            // Locality (Ray's): ask first the node holding most of the first queued
            // task's argument bytes, which grants it or spills it back on its own
            // current figures.
            Strategy::Default if st.requests.len() < want => {
                let head = st.queue.front().and_then(|t| self.tasks.get(t));
                let node =
                    head.and_then(|t| args_node(&Values::new(&self.table, &self.lookups), self.cfg.address.node, t));
                (node.and_then(|n| self.nodes.get(&n).map(|a| (n, *a))), false)
            }
            _ => (None, false),
        };
        while st.requests.len() < want {
            let request_id = self.next_request;
            self.next_request = self.next_request.next();
            st.requests.push(request_id);
            self.requests.insert(request_id, Request::Lease(shape.clone(), to.map(|(n, _)| n)));
            let msg = ToRaylet::RequestLease {
                request_id,
                shape: shape.shape.clone(),
                dedicated: false,
                strategy: shape.strategy.clone(),
                spilled,
            };
            self.out.push_back(match to {
                Some((node, addr)) => Output::ToNode { node, addr, msg },
                None => Output::ToRaylet(msg),
            });
        }
        for (tid, ids) in unready {
            if let Some(t) = self.tasks.get_mut(&tid) {
                t.unresolved += ids.len();
                for id in ids {
                    self.waiting.entry(id).or_default().push(tid);
                }
            }
        }
        for (tid, e) in failures {
            self.fail_task(tid, e);
        }
    }

    // ------------------------------------------------------------------ events

    /// A message from the raylet that no caller of a blocking call waits for.
    pub fn handle_raylet(&mut self, now: Instant, msg: FromRaylet) {
        self.on_raylet(now, None, msg);
    }

    /// A message from the raylet of another node (see [`Output::ToNode`]).
    pub fn handle_node(&mut self, now: Instant, node: NodeId, msg: FromRaylet) {
        self.on_raylet(now, Some(node), msg);
    }

    /// The connection to `node`'s raylet failed or ended: lease requests waiting there
    /// are asked again here (the view will not send them back to a dead node); leases
    /// held there end when their workers' connections do.
    pub fn handle_node_lost(&mut self, now: Instant, node: NodeId, reason: &str) {
        tracing::debug!(%node, "lost the raylet of another node: {reason}");
        self.nodes.remove(&node);
        self.unreachable.insert(node, now);
        self.actor_home_lost(node, reason);
        self.owner_node_gone(node, reason);
        let lost: Vec<(RequestId, SchedKey)> = self
            .requests
            .iter()
            .filter_map(|(id, r)| match r {
                Request::Lease(key, Some(n)) if *n == node => Some((*id, key.clone())),
                _ => None,
            })
            .collect();
        let mut keys: Vec<SchedKey> = Vec::new();
        for (id, key) in lost {
            self.requests.remove(&id);
            if let Some(st) = self.shapes.get_mut(&key) {
                st.requests.retain(|r| *r != id);
            }
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
        for key in keys {
            self.dispatch(now, &key);
        }
        self.flush_frees();
    }

    /// The head declared `node` dead: workers leased there are lost (their tasks retried
    /// as for any dead worker) without waiting for their connections to time out.
    fn on_node_died(&mut self, now: Instant, node: NodeId) {
        // Forget the node first, so the retries below are not asked of it.
        self.out.push_back(Output::ForgetNode(node));
        self.handle_node_lost(now, node, "the node died");
        let lost: Vec<ConnId> = self
            .conns
            .iter()
            .filter(|(_, c)| matches!(c.role, Role::Lease { node: Some(n), .. } if n == node))
            .map(|(id, _)| *id)
            .collect();
        for conn in lost {
            self.out.push_back(Output::Close(conn));
            self.on_lease_lost(now, conn, "its node died");
        }
        // After its leases are gone, so that nothing rebuilt is pushed there.
        self.lose_node_copies(now, node);
        self.flush_frees();
    }

    /// Sends `msg` to the raylet of `node` (`None`: this node's). A node whose
    /// connection was lost is not written to: what the message was about died with it.
    fn send_to(&mut self, node: Option<NodeId>, msg: ToRaylet) {
        match node {
            Some(n) if n != self.node() => {
                if let Some(addr) = self.nodes.get(&n) {
                    self.out.push_back(Output::ToNode { node: n, addr: *addr, msg });
                }
            }
            _ => self.send_raylet(msg),
        }
    }

    fn on_raylet(&mut self, now: Instant, from: Option<NodeId>, msg: FromRaylet) {
        match msg {
            FromRaylet::LeaseGranted { request_id, lease_id, worker_addr, worker_id } => {
                match self.requests.remove(&request_id) {
                    Some(Request::Lease(shape, _)) => {
                        self.on_lease_granted(now, request_id, &shape, from, lease_id, worker_addr)
                    }
                    Some(Request::ActorLease(a)) if from.is_none() => {
                        self.on_actor_lease(a, lease_id, worker_id, worker_addr)
                    }
                    // Withdrawn after the grant was sent (or granted after a stop): nothing
                    // was pushed to the worker, so it goes back to the pool.
                    _ => self.send_to(from, ToRaylet::ReturnLease { lease_id, worker_broken: false }),
                }
            }
            FromRaylet::LeaseSpillback { request_id, node, addr } => {
                let Some(Request::Lease(key, at)) = self.requests.get_mut(&request_id) else {
                    return;
                };
                if self.unreachable.get(&node).is_some_and(|t| now.saturating_duration_since(*t) < UNREACHABLE_HOLD) {
                    // Sent to a node we just failed to reach: wait a moment and ask again
                    // (by then the view may say it is dead) rather than spin.
                    let key = key.clone();
                    self.requests.remove(&request_id);
                    if let Some(st) = self.shapes.get_mut(&key) {
                        st.requests.retain(|r| *r != request_id);
                    }
                    self.backoff.insert(key, now + UNREACHABLE_HOLD);
                    self.timer_changed = true;
                    return;
                }
                // The raylet that answered names a better node: ask it instead, once.
                *at = Some(node);
                let msg = ToRaylet::RequestLease {
                    request_id,
                    shape: key.shape.clone(),
                    dedicated: false,
                    strategy: key.strategy.clone(),
                    spilled: true,
                };
                if node != self.node() {
                    self.nodes.insert(node, addr);
                }
                self.send_to(Some(node), msg);
            }
            FromRaylet::LeaseInfeasible { request_id, error } => match self.requests.remove(&request_id) {
                Some(Request::Lease(shape, _)) => {
                    let queued: Vec<TaskId> = match self.shapes.get_mut(&shape) {
                        Some(st) => {
                            st.requests.retain(|r| *r != request_id);
                            st.queue.drain(..).collect()
                        }
                        None => Vec::new(),
                    };
                    for tid in queued {
                        self.fail_task(tid, error.clone());
                    }
                }
                Some(Request::ActorLease(a)) => self.actor_infeasible(a, error),
                _ => {}
            },
            FromRaylet::ObjectsSpilled { objects } => self.on_spilled(objects),
            FromRaylet::NodeDied { node } => self.on_node_died(now, node),
            FromRaylet::ShuttingDown { reason } if from.is_none() => self.raylet_goodbye = Some(reason),
            FromRaylet::ActorReply { request_id, error } => match self.requests.remove(&request_id) {
                Some(Request::AddHold(a)) => self.on_hold_added(a, error),
                Some(Request::WorkerLost(a)) => self.on_restart_decided(now, a, error),
                Some(Request::Lookup(a)) => {
                    let e = error.unwrap_or_else(|| actors::died(a, "?", "the lookup found nothing"));
                    self.resolve_failed(a, e);
                }
                _ => {}
            },
            FromRaylet::ActorFound { request_id, info } => {
                if let Some(Request::Lookup(a)) = self.requests.remove(&request_id) {
                    self.on_actor_found(a, info);
                }
            }
            FromRaylet::Relayed { from: peer, msg } => {
                let via = from.unwrap_or(self.node());
                self.on_relayed(now, via, peer, msg);
            }
            FromRaylet::PeerGone { worker } => self.on_peer_gone(worker),
            other => tracing::debug!("ignoring unsolicited raylet message {other:?}"),
        }
        self.flush_frees();
    }

    fn on_lease_granted(
        &mut self,
        now: Instant,
        request_id: RequestId,
        shape: &SchedKey,
        node: Option<NodeId>,
        lease_id: LeaseId,
        endpoint: Endpoint,
    ) {
        let Some(st) = self.shapes.get_mut(shape) else {
            self.send_to(node, ToRaylet::ReturnLease { lease_id, worker_broken: false });
            return;
        };
        st.requests.retain(|r| *r != request_id);
        if st.queue.is_empty() || self.stopped.is_some() {
            self.send_to(node, ToRaylet::ReturnLease { lease_id, worker_broken: false });
            return;
        }
        let conn = self.conn_id();
        self.out.push_back(Output::Connect { conn, endpoint: endpoint.clone() });
        let role = Role::Lease { lease_id, shape: shape.clone(), node, last_reply: now, idle_since: Some(now) };
        self.conns.insert(conn, Conn::new(endpoint, role));
        self.shapes.get_mut(shape).expect("present").leases.push(conn);
    }

    /// The driver opened `conn` (see [`Output::Connect`]): pushes may go.
    pub fn handle_connected(&mut self, now: Instant, conn: ConnId) {
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        c.connected = true;
        match &c.role {
            Role::Lease { shape, .. } => {
                let shape = shape.clone();
                self.dispatch(now, &shape);
            }
            Role::Actor { actor, lease } => {
                let (a, owned_lease) = (*actor, lease.is_some());
                self.actor_connected(now, a, conn, owned_lease);
            }
        }
        self.flush_frees();
    }

    /// The driver could not open `conn`; nothing was sent on it.
    pub fn handle_connect_failed(&mut self, now: Instant, conn: ConnId, reason: &str) {
        let Some(c) = self.conns.get(&conn) else {
            return;
        };
        tracing::debug!("could not connect to {}: {reason}", c.endpoint);
        match c.role {
            // Nothing was pushed on it, so losing it costs no task an attempt.
            Role::Lease { .. } => self.on_lease_lost(now, conn, reason),
            Role::Actor { actor, lease } => {
                let c = self.conns.remove(&conn).expect("present");
                self.actor_connect_failed(now, actor, conn, lease, &c.endpoint, reason)
            }
        }
        self.flush_frees();
    }

    /// Replies arrived on `conn`.
    pub fn handle_replies(&mut self, now: Instant, conn: ConnId, replies: Vec<FromWorker>) {
        match self.conns.get(&conn).map(|c| &c.role) {
            Some(Role::Lease { .. }) => self.on_lease_replies(now, conn, replies),
            Some(Role::Actor { .. }) => self.on_actor_replies(now, conn, replies),
            // Forgotten (closed by us, or its actor died): large results it made are in
            // the store and nobody will read them (copies of this attempt on other nodes
            // go with the task's `stale_on`).
            None => {
                let ids = replies
                    .into_iter()
                    .flat_map(|FromWorker::Done { task_id, outcome, .. }| self.unheld_returns(task_id, &outcome, None))
                    .collect();
                self.delete_stale(ids);
            }
        }
        self.flush_frees();
    }

    fn on_lease_replies(&mut self, now: Instant, conn_id: ConnId, replies: Vec<FromWorker>) {
        let lease_node = match self.conns.get(&conn_id).map(|c| &c.role) {
            Some(Role::Lease { node, .. }) => *node,
            _ => None,
        };
        let node = lease_node.unwrap_or(self.node());
        let mut stale = Vec::new();
        let mut touched = Touched::default();
        for FromWorker::Done { task_id, outcome, copies, contained } in replies {
            for id in copies {
                // A copy of a value that failed or went meanwhile (its node died, say)
                // belongs to nobody: delete it.
                if matches!(self.table.status(id), Some(Status::Failed(_)) | None) && self.borrowed.owner(id).is_none()
                {
                    stale.push(id);
                } else {
                    self.table.add_copy(id, node);
                }
            }
            if !contained.is_empty() {
                self.hold_returned(task_id, &contained);
            }
            if let Some(conn) = self.conns.get_mut(&conn_id)
                && let Some(pos) = conn.in_flight.iter().position(|(t, _)| *t == task_id)
            {
                let (_, pushed) = conn.in_flight.remove(pos).expect("in range");
                if let Role::Lease { last_reply, .. } = &mut conn.role {
                    let secs = now.saturating_duration_since(pushed.max(*last_reply)).as_secs_f64();
                    *last_reply = now;
                    self.avg_task_secs = Some(match self.avg_task_secs {
                        None => secs,
                        Some(avg) => avg * 0.9 + secs * 0.1,
                    });
                }
            }
            self.complete(now, task_id, outcome, node, &mut stale, &mut touched);
        }
        self.changed = true;
        if let Some(Role::Lease { shape, .. }) = self.conns.get(&conn_id).map(|c| &c.role) {
            // Its own queue first, then tasks that may borrow it (see `dispatch`).
            let anywhere = SchedKey { shape: shape.shape.clone(), strategy: Strategy::Default };
            for k in [shape.clone(), anywhere] {
                if !touched.shapes.contains(&k) && self.shapes.contains_key(&k) {
                    touched.shapes.push(k);
                }
            }
        }
        self.dispatch_touched(now, touched);
        if let Some(conn) = self.conns.get_mut(&conn_id)
            && let Role::Lease { idle_since, .. } = &mut conn.role
            && conn.in_flight.is_empty()
            && idle_since.is_none()
        {
            *idle_since = Some(now);
        }
        self.delete_stale_at(lease_node, stale);
    }

    /// Records one task's outcome (a stored result is on `node`), and makes the tasks
    /// waiting on its result ready.
    fn complete(
        &mut self,
        now: Instant,
        task_id: TaskId,
        outcome: Outcome,
        node: NodeId,
        stale: &mut Vec<ObjectId>,
        touched: &mut Touched,
    ) {
        let Some(task) = self.tasks.remove(&task_id) else {
            // Nobody waits for it any more (the runtime stopped, or another attempt
            // finished first): free what it made.
            stale.extend(self.unheld_returns(task_id, &outcome, Some(node)));
            return;
        };
        // One location per return value, or the task's failure.
        let attempts = task.attempts;
        match outcome {
            Outcome::Failed(TaskError::ArgumentUnavailable { index, function, object, reason, tried }) => {
                // A lost argument of ours is rebuilt and the task runs again.
                if let Some(task) = self.argument_unavailable(now, task_id, task, index, &tried, touched) {
                    if task.num_returns > 1 {
                        stale.extend(returns_of(task_id, task.num_returns));
                    }
                    self.tasks.insert(task_id, task);
                    let e = TaskError::ArgumentUnavailable { index, function, object, reason, tried };
                    self.fail_task(task_id, e);
                }
                return;
            }
            Outcome::Failed(e) => {
                if task.num_returns > 1 {
                    // The worker may have stored some return values before one failed.
                    stale.extend(returns_of(task_id, task.num_returns));
                }
                // Put the task back so fail_task handles it and its dependents alike.
                self.tasks.insert(task_id, task);
                self.fail_task(task_id, e);
                return;
            }
            Outcome::Returns(v) if v.len() != task.num_returns as usize || task.num_returns < 2 => {
                let e = TaskError::Decode {
                    function: task.function.to_string(),
                    what: "the return values".into(),
                    reason: format!("the worker sent {} return values for a task of {}", v.len(), task.num_returns),
                };
                stale.extend(stored_returns(task_id, &Outcome::Returns(v)));
                self.tasks.insert(task_id, task);
                self.fail_task(task_id, e);
                return;
            }
            Outcome::Inline(_) | Outcome::Shared { .. } if task.num_returns > 1 => {
                stale.extend(stored_returns(task_id, &outcome));
                let e = TaskError::Decode {
                    function: task.function.to_string(),
                    what: "the return values".into(),
                    reason: format!("the worker sent one return value for a task of {}", task.num_returns),
                };
                self.tasks.insert(task_id, task);
                self.fail_task(task_id, e);
                return;
            }
            // The common case: one return value, no allocation beyond its bytes.
            Outcome::Inline(v) => self.set_return(task_id, 0, inline_location(&v), attempts, stale, touched),
            Outcome::Shared { len, .. } => {
                self.set_return(task_id, 0, Location::stored(node, len), attempts, stale, touched)
            }
            Outcome::Returns(v) => {
                for (i, r) in v.into_iter().enumerate() {
                    let location = match r {
                        ReturnValue::Inline(b) => inline_location(&b),
                        ReturnValue::Shared { len, .. } => Location::stored(node, len),
                    };
                    self.set_return(task_id, i as u32, location, attempts, stale, touched);
                }
            }
        }
        for n in task.stale_on.iter().filter(|n| **n != node) {
            // An earlier attempt's copies on another node are not this value's.
            let ids: Vec<ObjectId> = returns_of(task_id, task.num_returns).collect();
            self.send_to(Some(*n), ToRaylet::DeleteObjects { object_ids: ids });
        }
        let keep = self.keeps_lineage(&task);
        if keep {
            self.hold_lineage_args(&task);
        }
        self.release_args(&task.arg_ids);
        let mut task = task;
        self.retire(&mut task);
        if keep {
            self.keep_lineage(task_id, task);
        }
    }

    /// The return values an attempt of `task_id` stored (on `node`, if known) that are
    /// not the values the owner holds. Two attempts store the same ID in the same node's
    /// store, the later in place of the earlier, so deleting a late attempt's result
    /// there would delete the live value (an attempt counted lost, its connection
    /// closed, may still have replied).
    fn unheld_returns(&self, task_id: TaskId, outcome: &Outcome, node: Option<NodeId>) -> Vec<ObjectId> {
        stored_returns(task_id, outcome)
            .into_iter()
            .filter(|id| {
                !matches!(self.table.status(*id),
                    Some(Status::Ready(Location::Stored(s))) if node.is_none_or(|n| s.nodes().any(|m| m == n)))
            })
            .collect()
    }

    /// A task that took these arguments finished or failed for good.
    fn release_args(&mut self, ids: &[ObjectId]) {
        self.release_lookups(ids);
        self.table.remove_submitted(ids);
        self.borrowed.remove_submitted(ids);
    }

    /// Return value `index` of `task_id` is at `location`: record it and make the tasks
    /// waiting on it ready.
    fn set_return(
        &mut self,
        task_id: TaskId,
        index: u32,
        location: Location,
        attempts: u32,
        stale: &mut Vec<ObjectId>,
        touched: &mut Touched,
    ) {
        let rid = ObjectId::for_return(task_id, index);
        if attempts > 0 && matches!(location, Location::Inline(_)) {
            // An earlier attempt may have sealed a copy before its worker died.
            stale.push(rid);
        }
        self.table.set_ready(rid, location);
        for tid in self.waiting.remove(&rid).unwrap_or_default() {
            self.arg_ready(tid, touched);
        }
    }

    /// Deletes store copies no owner record points at; deleting an unknown ID is a no-op.
    fn delete_stale(&mut self, ids: Vec<ObjectId>) {
        self.delete_stale_at(None, ids);
    }

    /// Like [`CoreState::delete_stale`], in the store of `node` (`None`: this node's).
    fn delete_stale_at(&mut self, node: Option<NodeId>, ids: Vec<ObjectId>) {
        if !ids.is_empty() {
            self.send_to(node, ToRaylet::DeleteObjects { object_ids: ids });
        }
    }

    /// `conn` ended (its worker died or could not be reached).
    pub fn handle_conn_closed(&mut self, now: Instant, conn: ConnId, reason: &str) {
        match self.conns.get(&conn).map(|c| &c.role) {
            Some(Role::Lease { .. }) => self.on_lease_lost(now, conn, reason),
            Some(Role::Actor { .. }) => self.on_actor_conn_lost(now, conn, reason),
            None => {}
        }
        self.flush_frees();
    }

    fn on_lease_lost(&mut self, now: Instant, conn_id: ConnId, reason: &str) {
        let Some(conn) = self.conns.remove(&conn_id) else {
            return;
        };
        let Role::Lease { lease_id, shape, node, .. } = conn.role else {
            return;
        };
        tracing::debug!("lost leased worker: {reason}");
        self.send_to(node, ToRaylet::ReturnLease { lease_id, worker_broken: true });
        if let Some(st) = self.shapes.get_mut(&shape) {
            st.leases.retain(|l| *l != conn_id);
        }
        let in_flight: Vec<TaskId> = conn.in_flight.into_iter().map(|(t, _)| t).collect();
        let lost_on = node.unwrap_or(self.node());
        for t in &in_flight {
            if let Some(task) = self.tasks.get_mut(t) {
                if !task.stale_on.contains(&lost_on) {
                    task.stale_on.push(lost_on);
                }
                // Its worker may have pulled stored arguments there before it was lost.
                for id in &task.arg_ids {
                    self.table.add_maybe_copy(*id, lost_on);
                }
            }
        }
        let (retry, failed) = self.retry_or_fail(in_flight, |task| TaskError::WorkerDied {
            function: task.function.to_string(),
            attempts: task.attempts,
        });
        // The dead worker may have sealed results before dying.
        let stale = failed;
        if let Some(st) = self.shapes.get_mut(&shape) {
            for tid in retry.into_iter().rev() {
                st.queue.push_front(tid);
            }
        }
        self.dispatch(now, &shape);
        self.delete_stale_at(node, stale);
    }

    /// Counts an attempt for each task that was in flight on a lost connection: those
    /// with retries left are returned (in order) to be queued again, the others fail with
    /// `error(task)` and their return objects are returned second.
    fn retry_or_fail(
        &mut self,
        in_flight: impl IntoIterator<Item = TaskId>,
        error: impl Fn(&Task) -> TaskError,
    ) -> (Vec<TaskId>, Vec<ObjectId>) {
        let (mut retry, mut failed) = (Vec::new(), Vec::new());
        for tid in in_flight {
            let Some(task) = self.tasks.get_mut(&tid) else {
                continue;
            };
            task.attempts += 1;
            if task.retries_left > 0 && self.stopped.is_none() {
                task.retries_left -= 1;
                retry.push(tid);
            } else {
                let e = error(task);
                failed.extend(returns_of(tid, task.num_returns));
                self.fail_task(tid, e);
            }
        }
        (retry, failed)
    }

    /// Returns leases idle for [`IDLE_LEASE_TIMEOUT`] and runs due actor lookups.
    pub fn handle_timeout(&mut self, now: Instant) {
        let idle: Vec<ConnId> = self
            .conns
            .iter()
            .filter(|(_, c)| match c.role {
                Role::Lease { idle_since: Some(t), .. } => {
                    c.in_flight.is_empty() && now.saturating_duration_since(t) >= IDLE_LEASE_TIMEOUT
                }
                _ => false,
            })
            .map(|(id, _)| *id)
            .collect();
        for id in idle {
            let conn = self.conns.remove(&id).expect("listed");
            let Role::Lease { lease_id, shape, node, .. } = conn.role else { continue };
            if let Some(st) = self.shapes.get_mut(&shape) {
                st.leases.retain(|l| *l != id);
            }
            self.out.push_back(Output::Close(id));
            self.send_to(node, ToRaylet::ReturnLease { lease_id, worker_broken: false });
        }
        self.run_due_lookups(now);
        let due: Vec<SchedKey> = self.backoff.iter().filter(|(_, t)| **t <= now).map(|(k, _)| k.clone()).collect();
        for key in due {
            self.backoff.remove(&key);
            self.dispatch(now, &key);
        }
        self.unreachable.retain(|_, t| now.saturating_duration_since(*t) < UNREACHABLE_HOLD);
        self.flush_frees();
    }

    /// Fails everything pending, returns every lease and closes every connection.
    pub fn stop(&mut self) {
        self.stop_with(TaskError::RuntimeShutdown);
    }

    /// Stops with `error`: every pending task fails with it, and so does every later one.
    pub(crate) fn stop_with(&mut self, error: TaskError) {
        if self.stopped.is_some() {
            return;
        }
        self.stopped = Some(error.clone());
        // Withdraw waiting lease requests before the leases go back: a request granted
        // after this process left would cost its raylet the worker (reaped as possibly
        // still running our work).
        let mut waiting: Vec<(Option<NodeId>, Vec<RequestId>)> = Vec::new();
        for (id, r) in self.requests.iter() {
            let node = match r {
                Request::Lease(_, node) => *node,
                Request::ActorLease(_) => None,
                _ => continue,
            };
            match waiting.iter_mut().find(|(n, _)| *n == node) {
                Some((_, ids)) => ids.push(*id),
                None => waiting.push((node, vec![*id])),
            }
        }
        for (node, request_ids) in waiting {
            self.send_to(node, ToRaylet::CancelLeaseRequests { request_ids });
        }
        let ids: Vec<TaskId> = self.tasks.keys().copied().collect();
        for tid in ids {
            self.fail_task(tid, error.clone());
        }
        for st in self.shapes.values_mut() {
            st.leases.clear();
            st.queue.clear();
        }
        let conns: Vec<(ConnId, Conn)> = self.conns.drain().collect();
        for (id, conn) in conns {
            self.out.push_back(Output::Close(id));
            if let Role::Lease { lease_id, node, .. } = conn.role {
                self.send_to(node, ToRaylet::ReturnLease { lease_id, worker_broken: false });
            }
        }
        self.callers.clear();
        self.requests.clear();
        self.registrations.clear();
        for l in self.lookups.values_mut() {
            if matches!(l.status, Status::Pending) {
                l.status = Status::Failed(Box::new(error.clone()));
            }
        }
        self.location_waiters.clear();
        self.lineage.clear();
        self.flush_frees();
    }
}

/// The node other than `here` holding the most bytes of `t`'s stored arguments (`None`
/// when `here` holds the most, or none is stored).
/// The values a task's arguments can take: owned objects, and borrowed ones whose
/// owners answered.
struct Values<'a> {
    table: &'a OwnershipTable,
    lookups: &'a DetMap<ObjectId, borrow::Lookup>,
}

impl<'a> Values<'a> {
    fn new(table: &'a OwnershipTable, lookups: &'a DetMap<ObjectId, borrow::Lookup>) -> Self {
        Values { table, lookups }
    }

    fn status(&self, id: ObjectId) -> Option<&'a Status> {
        self.table.status(id).or_else(|| self.lookups.get(&id).map(|l| &l.status))
    }

    /// The owner of `id`: `me` for an owned object, else the owner a lookup asked.
    fn owner_of(&self, id: ObjectId, me: WorkerId) -> WorkerId {
        match self.table.status(id) {
            Some(_) => me,
            None => self.lookups.get(&id).map_or(me, |l| l.owner().worker),
        }
    }
}

fn args_node(table: &Values<'_>, here: NodeId, t: &Task) -> Option<NodeId> {
    let stored = t.arg_ids.iter().filter_map(|id| match table.status(*id) {
        Some(Status::Ready(Location::Stored(s))) => Some((s.primary, s.len)),
        _ => None,
    });
    ares_raylet_proto::spillback::preferred_node(stored).filter(|n| *n != here)
}

/// Why a queued task cannot be pushed.
enum Unready {
    /// It fails with this error.
    Failed(TaskError),
    /// These arguments were lost after it was queued and are being rebuilt.
    Pending(Vec<ObjectId>),
}

/// Builds the wire spec of a ready task from the current values of its arguments.
fn resolve(table: &Values<'_>, owner: WorkerId, tid: TaskId, task: &Task) -> Result<TaskSpec, Unready> {
    let mut pending = Vec::new();
    let mut failed = None;
    let mut wire = |id: &ObjectId| match table.status(*id) {
        Some(Status::Ready(Location::Inline(b))) => WireArg::Inline(b.to_vec()),
        Some(Status::Ready(Location::Stored(s))) => WireArg::Shared {
            object_id: *id,
            len: s.len,
            nodes: s.nodes().collect(),
            owner: table.owner_of(*id, owner),
        },
        // Submission saw it ready; it was lost since (rebuilding), or rebuilding failed.
        Some(Status::Pending) => {
            pending.push(*id);
            WireArg::Inline(Vec::new())
        }
        Some(Status::Failed(e)) => {
            failed = Some((**e).clone());
            WireArg::Inline(Vec::new())
        }
        None => {
            failed = Some(TaskError::ObjectLost { object: format!("{id} (an argument, freed or lost)") });
            WireArg::Inline(Vec::new())
        }
    };
    let mut args = Vec::with_capacity(task.args.len());
    for slot in &task.args {
        args.push(match slot {
            Slot::Inline(b) => WireArg::Inline(b.to_vec()),
            Slot::Ref(id) => wire(id),
            Slot::Gather { merged: Some(b), .. } => WireArg::Inline(b.to_vec()),
            Slot::Gather { merged: None, .. } => unreachable!("a ready task's lists are merged"),
        });
    }
    if let Some(e) = failed {
        return Err(Unready::Failed(e));
    }
    if !pending.is_empty() {
        return Err(Unready::Pending(pending));
    }
    Ok(TaskSpec {
        task_id: tid,
        function: task.function.to_string(),
        owner,
        args,
        attempt: task.attempts,
        kind: task.kind.clone(),
        num_returns: task.num_returns,
    })
}

/// [`resolve`] for actor calls and constructions, which do not wait for rebuilt
/// arguments (they would reorder an actor's calls): a lost argument fails the call.
fn resolve_now(table: &Values<'_>, owner: WorkerId, tid: TaskId, task: &Task) -> Result<TaskSpec, TaskError> {
    resolve(table, owner, tid, task).map_err(|u| match u {
        Unready::Failed(e) => e,
        Unready::Pending(ids) => TaskError::ObjectLost {
            object: format!("{} (an argument of an actor call, lost with its node; being rebuilt)", ids[0]),
        },
    })
}

/// An encoded push, ready to be framed.
pub(crate) struct Push {
    kind: u16,
    payload: Bytes,
}

impl Push {
    /// Appends the push as one frame to `buf`.
    pub(crate) fn write_to(&self, buf: &mut Vec<u8>) {
        frame::write_frame(buf, self.kind, &self.payload).expect("writing to a Vec cannot fail");
    }
}

/// Encodes a push, refusing one over the frame limit (it would look like a dead worker).
fn encode_push(spec: TaskSpec, max_frame: usize) -> Result<Push, TaskError> {
    let function = spec.function.clone();
    let push = ToWorker::Push(spec);
    let (kind, payload) = (frame::Message::kind(&push), frame::encode(&push));
    if payload.len() > max_frame {
        let reason = format!(
            "the task's arguments encode to {} bytes, over the frame limit of {} bytes; \
             pass large values as ObjectRefs",
            payload.len(),
            max_frame
        );
        return Err(TaskError::Decode { function, what: "arguments".into(), reason });
    }
    Ok(Push { kind, payload })
}
