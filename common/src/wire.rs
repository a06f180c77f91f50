//! Wire messages. Every message is an rkyv archive inside one frame (see [`crate::frame`]).
//!
//! Two conversations exist inside a node:
//! - a client (driver or worker) and its raylet: registration, leases, object creation;
//! - an owner and a worker it leased: task pushes and their replies.

use crate::address::Endpoint;
use crate::error::TaskError;
use crate::frame::{Bound, Message};
use crate::ids::{ActorId, LeaseId, NodeId, ObjectId, RequestId, TaskId, WorkerId};
use crate::resources::ResourceSet;

/// A client's request to its raylet.
#[derive(Debug, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub enum ToRaylet {
    /// First message of a driver connection.
    RegisterDriver {
        /// The driver's process ID.
        pid: u32,
        /// The driver's core-worker ID (objects it owns name it as their owner).
        worker_id: WorkerId,
    },
    /// First message of a worker connection, sent once its task socket is listening.
    RegisterWorker {
        /// The worker's ID, given to it by the raylet at spawn.
        worker_id: WorkerId,
        /// The worker's process ID.
        pid: u32,
        /// Where owners on this node connect to push tasks.
        listen_addr: Endpoint,
        /// Where owners on other nodes connect (QUIC), on a node that is part of a
        /// cluster.
        remote_addr: Option<Endpoint>,
    },
    /// Asks for a worker lease for one resource shape.
    RequestLease {
        /// Correlates the answer.
        request_id: RequestId,
        /// Resources the leased worker holds while leased.
        shape: ResourceSet,
        /// The worker will host an actor: it leaves the task pool for good, so the pool
        /// may start a replacement beyond `max_workers`.
        dedicated: bool,
        /// Where in the cluster the owner wants it placed.
        strategy: crate::Strategy,
        /// Another node sent the owner here (spillback): grant it whenever this node has
        /// room rather than sending it on again.
        spilled: bool,
    },
    /// Withdraws lease requests that are no longer needed.
    CancelLeaseRequests {
        /// The requests to withdraw; unknown or already granted ones are ignored.
        request_ids: Vec<RequestId>,
    },
    /// Gives a lease back.
    ReturnLease {
        /// The lease.
        lease_id: LeaseId,
        /// The owner lost its connection to the worker.
        worker_broken: bool,
    },
    /// Allocates space for an object in the node's shared-memory pool.
    CreateObject {
        /// Correlates the answer.
        request_id: RequestId,
        /// The object.
        object_id: ObjectId,
        /// Exact size in bytes.
        size: u64,
        /// The core worker that owns the object (told if it is spilled).
        owner: WorkerId,
    },
    /// Pins an object for reading, restoring it from disk first if it was spilled.
    PinObject {
        /// Correlates the answer.
        request_id: RequestId,
        /// The object.
        object_id: ObjectId,
    },
    /// Makes a copy of an object stored on other nodes in this node's store (a secondary
    /// copy, evictable), pulling it from the first of `from` that has it. Answered with
    /// `Pulled` once it can be pinned here; concurrent requests share one pull.
    PullObject {
        /// Correlates the answer.
        request_id: RequestId,
        /// The object.
        object_id: ObjectId,
        /// Nodes holding a copy, in the order to try them.
        from: Vec<NodeId>,
        /// The object's owner: the copy goes when the owner does, as the primary.
        owner: WorkerId,
    },
    /// Releases pins taken with `PinObject` (one per listed ID).
    ReleaseObjects {
        /// The objects.
        object_ids: Vec<ObjectId>,
    },
    /// Marks an object's bytes as complete and immutable. Answered with `Sealed`, so
    /// the creator reports the object to its owner only once the store knows it.
    SealObject {
        /// Correlates the answer.
        request_id: RequestId,
        /// The object.
        object_id: ObjectId,
    },
    /// Frees objects whose owner no longer references them.
    DeleteObjects {
        /// The objects.
        object_ids: Vec<ObjectId>,
    },
    /// The sending worker's task waits in `get` or `wait`: the node may lend its lease's
    /// resources to other work until `TaskUnblocked`.
    TaskBlocked,
    /// The sending worker's task continues after `TaskBlocked`.
    TaskUnblocked,
    /// Asks for the node's statistics.
    GetStats {
        /// Correlates the answer.
        request_id: RequestId,
    },
    /// Asks for the cluster's nodes as this node last heard of them.
    GetNodes {
        /// Correlates the answer.
        request_id: RequestId,
    },
    /// An operation on the cluster's key-value store (answered with `Kv`).
    Kv {
        /// Correlates the answer.
        request_id: RequestId,
        /// What to do.
        op: KvOp,
    },
    /// Enters a new actor, owned by the sender, in the node's directory (answered with
    /// `ActorReply`). The sender holds it until `ReleaseActorHold`.
    RegisterActor {
        /// Correlates the answer.
        request_id: RequestId,
        /// The actor.
        actor_id: ActorId,
        /// Its Rust type.
        class: String,
        /// A name other drivers can find it by.
        name: Option<String>,
        /// Whether it outlives its owner and its handles.
        detached: bool,
        /// How often it may be restarted after its process dies (`u32::MAX`: always).
        max_restarts: u32,
        /// How often a call interrupted by its process's death is re-run.
        max_task_retries: u32,
    },
    /// The owner created the actor on a leased worker; callers may connect to it.
    ActorStarted {
        /// The actor.
        actor_id: ActorId,
        /// The dedicated lease it runs under.
        lease_id: LeaseId,
        /// The worker hosting it.
        worker_id: WorkerId,
        /// Where callers push its method calls.
        addr: Endpoint,
        /// For a detached actor whose constructor arguments are all inline: its
        /// construction, which the head runs again on another node if this one dies.
        restart: Option<RestartSpec>,
    },
    /// The actor's constructor failed; the actor is dead.
    ActorCreateFailed {
        /// The actor.
        actor_id: ActorId,
        /// The constructor's error.
        error: TaskError,
    },
    /// The owner lost the actor's process and asks whether to restart it (answered with
    /// `ActorReply`: no error means restart).
    ActorWorkerLost {
        /// Correlates the answer.
        request_id: RequestId,
        /// The actor.
        actor_id: ActorId,
    },
    /// The sender now holds handles to the actor (answered with `ActorReply`).
    AddActorHold {
        /// Correlates the answer.
        request_id: RequestId,
        /// The actor.
        actor_id: ActorId,
    },
    /// The sender dropped its last handle to the actor.
    ReleaseActorHold {
        /// The actor.
        actor_id: ActorId,
    },
    /// Kills the actor for good (answered with `ActorReply`).
    KillActor {
        /// Correlates the answer.
        request_id: RequestId,
        /// The actor.
        actor_id: ActorId,
    },
    /// Finds a live actor by ID or name; answered with `ActorFound` once it is running,
    /// or `ActorReply` with the error if it is dead or unknown.
    LookupActor {
        /// Correlates the answer.
        request_id: RequestId,
        /// Which actor.
        by: ActorKey,
    },
    /// Deliver `msg` to the core worker `to`, connected to this raylet (the owner or
    /// borrower of an object). Answered with `PeerGone` if `to` is not connected here.
    Relay {
        /// The receiving core worker.
        to: WorkerId,
        /// The message.
        msg: PeerMsg,
    },
    /// Deletes the copies of these objects that the sender's reads pulled here, where
    /// they still are such copies (not, say, a primary a re-run task made since).
    DropCopies {
        /// The objects.
        object_ids: Vec<ObjectId>,
    },
}

/// A message between two core workers (an owner and a borrower of objects), relayed by
/// the raylet of the node both are connected to: the receiver's own node. The raylet
/// tells each side when the other's connection ends (`PeerGone`), which is how a
/// borrower learns its owner died.
#[derive(Clone, Debug, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub enum PeerMsg {
    /// Borrower → owner: answer with `Location` once `object` is ready or failed (at
    /// once if it is, or if the owner does not have it).
    GetLocation {
        /// The object.
        object: ObjectId,
    },
    /// Owner → borrower: where `object`'s value is.
    Location {
        /// The object.
        object: ObjectId,
        /// Its value or where it is.
        location: PeerLocation,
    },
    /// Borrower → owner: count `borrower` (the sender, or the caller a task returned the
    /// refs to) as a borrower of `objects` until it sends `RefRemoved`. Answered by
    /// `BorrowersAdded`.
    AddBorrower {
        /// Correlates the answer.
        request: RequestId,
        /// The objects.
        objects: Vec<ObjectId>,
        /// The borrowing core worker.
        borrower: WorkerId,
    },
    /// Owner → borrower: the objects of the request the owner no longer has (freed or
    /// never its own); the others are now held for the borrower.
    BorrowersAdded {
        /// The request answered.
        request: RequestId,
        /// Objects not held.
        missing: Vec<ObjectId>,
    },
    /// Borrower → owner: the sender no longer holds `objects`.
    RefRemoved {
        /// The objects.
        objects: Vec<ObjectId>,
    },
    /// Worker → the caller of its task: the task's return values hold handles to these
    /// actors; the worker keeps holding them until the caller answers `ActorsHeld` (or
    /// is gone). The caller holds them while the return objects live.
    ActorsLent {
        /// The task whose return values hold them.
        task: TaskId,
        /// The actors, as their handles encode them.
        actors: Vec<LentActor>,
    },
    /// Caller → worker: its own holds on these actors are counted; the worker's lent
    /// holds can go.
    ActorsHeld {
        /// The actors.
        actors: Vec<ActorId>,
    },
}

/// An actor whose handle a value holds, as the handle encodes it.
#[derive(Clone, Debug, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct LentActor {
    /// The actor.
    pub id: ActorId,
    /// Its type.
    pub class: String,
    /// Its calls' retry budget.
    pub max_task_retries: u32,
    /// The node whose directory keeps it.
    pub home_node: NodeId,
    /// Where that node serves QUIC, in a cluster.
    pub home_addr: Option<std::net::SocketAddr>,
}

/// Where a borrowed object's value is, as its owner answers.
#[derive(Clone, Debug, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub enum PeerLocation {
    /// Small: the encoded value itself.
    Inline(Vec<u8>),
    /// In the shared-memory stores of these nodes, the primary first.
    Stored {
        /// Length in bytes.
        len: u64,
        /// The nodes holding a copy.
        nodes: Vec<NodeId>,
    },
    /// Its task failed for good.
    Failed(TaskError),
    /// The owner does not have it (freed, or not its object).
    Unknown,
}

/// An operation on the cluster's key-value store.
#[derive(Clone, Debug, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub enum KvOp {
    /// Stores `value` under `key`; an existing key is replaced only with `overwrite`.
    Put {
        /// The key.
        key: String,
        /// The value.
        value: Vec<u8>,
        /// Whether an existing value may be replaced.
        overwrite: bool,
    },
    /// Reads the value under `key`.
    Get {
        /// The key.
        key: String,
    },
    /// Removes `key`.
    Delete {
        /// The key.
        key: String,
    },
}

/// One driver (job) as the head's job table shows it.
#[derive(Clone, Debug, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct JobSummary {
    /// The driver's core-worker ID.
    pub job: WorkerId,
    /// The node it connected through.
    pub node: NodeId,
    /// Its process ID (on that node's machine).
    pub pid: u32,
    /// Whether it is still connected.
    pub running: bool,
}

/// How an actor is looked up.
#[derive(Clone, Debug, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub enum ActorKey {
    /// By ID.
    Id(ActorId),
    /// By the name it was registered under.
    Name(String),
}

/// A running actor, as the directory knows it.
#[derive(Clone, Debug, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct ActorInfo {
    /// The actor.
    pub actor_id: ActorId,
    /// Its Rust type.
    pub class: String,
    /// Where to push its method calls.
    pub addr: Endpoint,
    /// How often a call interrupted by its process's death is re-run.
    pub max_task_retries: u32,
}

/// How to construct an actor again: the construction task as it was pushed (every
/// argument inline) and the resources the actor holds.
#[derive(Clone, Debug, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct RestartSpec {
    /// The construction.
    pub spec: TaskSpec,
    /// The resources its worker holds.
    pub shape: ResourceSet,
}

/// A detached actor the head can restart elsewhere when its node dies.
#[derive(Clone, Debug, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct DetachedActor {
    /// The actor, and the node it runs on now.
    pub actor: NamedActor,
    /// Its name, if any.
    pub name: Option<String>,
    /// Its restart budget (`u32::MAX`: unlimited).
    pub max_restarts: u32,
    /// Restarts used so far.
    pub restarts: u32,
    /// How to construct it.
    pub restart: RestartSpec,
}

/// A named actor as the head's name table knows it: which actor, and the node whose
/// actor directory keeps it (its owner's node).
#[derive(Clone, Debug, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct NamedActor {
    /// The actor.
    pub actor_id: ActorId,
    /// Its Rust type.
    pub class: String,
    /// How often a call interrupted by its process's death is re-run.
    pub max_task_retries: u32,
    /// The node whose directory keeps it.
    pub node: NodeId,
    /// Where that node serves QUIC (filled in by the head when it answers).
    pub addr: Option<std::net::SocketAddr>,
}

/// A raylet's message to a client.
#[derive(Debug, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub enum FromRaylet {
    /// Answer to registration.
    Registered {
        /// The node.
        node_id: NodeId,
        /// Path that opens the node's shared-memory pool.
        pool_path: String,
        /// Pool size in bytes.
        pool_size: u64,
        /// The cluster's join token (64 hex digits) when the node is part of one: what
        /// this client presents to workers and raylets on other nodes.
        cluster_token: Option<String>,
    },
    /// A lease was granted.
    LeaseGranted {
        /// The request answered.
        request_id: RequestId,
        /// The lease.
        lease_id: LeaseId,
        /// The leased worker.
        worker_id: WorkerId,
        /// Where to push tasks to it.
        worker_addr: Endpoint,
    },
    /// Ask another node instead (spillback): this one is busy, or the request's
    /// strategy names another node.
    LeaseSpillback {
        /// The request answered.
        request_id: RequestId,
        /// The node to ask.
        node: NodeId,
        /// Where it serves its clients (QUIC).
        addr: std::net::SocketAddr,
    },
    /// A lease request can never be granted.
    LeaseInfeasible {
        /// The request answered.
        request_id: RequestId,
        /// Always [`TaskError::Infeasible`].
        error: TaskError,
    },
    /// Space was allocated.
    ObjectCreated {
        /// The request answered.
        request_id: RequestId,
        /// Offset of the object in the pool.
        offset: u64,
    },
    /// Space could not be allocated.
    CreateFailed {
        /// The request answered.
        request_id: RequestId,
        /// Why (for example [`TaskError::ObjectStoreFull`]).
        error: TaskError,
    },
    /// The object is pinned for the requester and in memory.
    Pinned {
        /// The request answered.
        request_id: RequestId,
        /// Its offset in the pool.
        offset: u64,
        /// Its size.
        size: u64,
    },
    /// The object could not be pinned.
    PinFailed {
        /// The request answered.
        request_id: RequestId,
        /// Why.
        error: TaskError,
    },
    /// Objects this client owns were spilled to disk.
    ObjectsSpilled {
        /// Where each went.
        objects: Vec<SpilledObject>,
    },
    /// The seal was processed.
    Sealed {
        /// The request answered.
        request_id: RequestId,
        /// Why the seal was rejected, if it was.
        error: Option<String>,
    },
    /// Answer to an actor request: `None` is success.
    ActorReply {
        /// The request answered.
        request_id: RequestId,
        /// Why it failed.
        error: Option<TaskError>,
    },
    /// Answer to `LookupActor`.
    ActorFound {
        /// The request answered.
        request_id: RequestId,
        /// The actor.
        info: ActorInfo,
    },
    /// Answer to `LookupActor` by name when the actor's directory entry is on another
    /// node: ask that node's raylet (its lookups, holds and kills go there).
    ActorElsewhere {
        /// The request answered.
        request_id: RequestId,
        /// The actor and its node.
        actor: NamedActor,
    },
    /// Answer to `PullObject`: `None` when the object is now in this node's store.
    Pulled {
        /// The request answered.
        request_id: RequestId,
        /// Why no copy could be made (every source tried).
        error: Option<TaskError>,
    },
    /// Answer to `Kv`: the value read, replaced or removed, or why the store refused.
    Kv {
        /// The request answered.
        request_id: RequestId,
        /// The value (a get), or the one a put replaced or a delete removed.
        value: Option<Vec<u8>>,
        /// Why the operation was refused.
        error: Option<String>,
    },
    /// The node daemon is stopping (sent to every client before it closes their
    /// connections): why, for the errors the clients' calls then fail with.
    ShuttingDown {
        /// Why.
        reason: String,
    },
    /// A node of the cluster was declared dead (sent to this node's drivers and workers):
    /// its workers and stored objects are gone.
    NodeDied {
        /// The node.
        node: NodeId,
    },
    /// Answer to `GetNodes`: every node the head knows (dead ones included); only this
    /// node on a node that is not part of a cluster.
    Nodes {
        /// The request answered.
        request_id: RequestId,
        /// The nodes.
        nodes: Vec<NodeSummary>,
    },
    /// A message relayed from the core worker `from` (see [`PeerMsg`]).
    Relayed {
        /// The sending core worker.
        from: WorkerId,
        /// The message.
        msg: PeerMsg,
    },
    /// The core worker `worker`, which this client exchanged relayed messages with (or
    /// tried to), is not connected to this raylet: it exited, died, or never was.
    PeerGone {
        /// The core worker.
        worker: WorkerId,
    },
    /// Node statistics.
    Stats {
        /// The request answered.
        request_id: RequestId,
        /// The figures.
        stats: NodeStats,
    },
}

/// Where a spilled object went.
#[derive(Clone, Debug, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct SpilledObject {
    /// The object.
    pub object_id: ObjectId,
    /// `file://<path>?offset=<n>&size=<n>`.
    pub url: String,
}

/// A snapshot of one node.
#[derive(Clone, Debug, Default, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct NodeStats {
    /// Pool capacity in bytes.
    pub store_capacity: u64,
    /// Bytes of pool memory allocated to objects.
    pub store_used: u64,
    /// Objects known to the store (in memory or spilled).
    pub store_objects: u64,
    /// Bytes of objects pinned by readers right now.
    pub store_pinned_bytes: u64,
    /// Objects pinned by readers right now.
    pub store_pinned_objects: u64,
    /// Bytes of objects that are on disk only.
    pub store_spilled_bytes: u64,
    /// Objects that are on disk only.
    pub store_spilled_objects: u64,
    /// Bytes written to spill files since start.
    pub store_spilled_bytes_total: u64,
    /// Bytes restored from spill files since start.
    pub store_restored_bytes_total: u64,
    /// Objects restored since start.
    pub store_restored_objects_total: u64,
    /// Spill files on disk.
    pub store_spill_files: u64,
    /// Seconds the spill thread spent writing spill files since start.
    pub store_spill_seconds: f64,
    /// Seconds spent reading objects back from spill files since start.
    pub store_restore_seconds: f64,
    /// The last spill failure, if the most recent spill failed.
    pub store_spill_error: Option<String>,
    /// Pulls from other nodes started since start (concurrent requests share one).
    pub pulls_started: u64,
    /// Bytes pulled from other nodes since start.
    pub pulled_bytes: u64,
    /// Bytes sent to other nodes' pulls since start.
    pub served_bytes: u64,
    /// Live worker processes.
    pub workers: Vec<WorkerInfo>,
    /// The node.
    pub node_id: NodeId,
    /// Total resources of the node (its `node:<id>` resource included).
    pub total: ResourceSet,
    /// Resources not held by a lease.
    pub available: ResourceSet,
}

/// One worker process.
#[derive(Clone, Debug, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct WorkerInfo {
    /// Its ID.
    pub worker_id: WorkerId,
    /// Its process ID.
    pub pid: u32,
    /// Whether an owner holds a lease on it.
    pub leased: bool,
    /// The actor it hosts, if any.
    pub actor: Option<ActorId>,
}

/// An owner's message to a leased worker.
#[derive(Debug, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub enum ToWorker {
    /// Run a task.
    Push(TaskSpec),
}

/// What a worker needs to run one task.
#[derive(Clone, Debug, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct TaskSpec {
    /// The task; its return object is `ObjectId::for_return(task_id, 0)`.
    pub task_id: TaskId,
    /// Registered name of the function.
    pub function: String,
    /// The core worker that owns the task's return object.
    pub owner: WorkerId,
    /// Resolved arguments, in order.
    pub args: Vec<WireArg>,
    /// Attempt number, from 0.
    pub attempt: u32,
    /// A plain task, an actor's construction, or a method call on it.
    pub kind: TaskKind,
    /// How many return values: the function's `Vec` result is split into this many
    /// objects, `ObjectId::for_return(task_id, 0..num_returns)` (1: the result is one).
    pub num_returns: u32,
}

/// What a task spec asks the worker to do.
#[derive(Clone, Debug, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub enum TaskKind {
    /// Run a remote function.
    Normal,
    /// Construct the actor this worker is dedicated to; `function` is the constructor.
    ActorCreate {
        /// The actor.
        actor_id: ActorId,
        /// How many of its calls may run at once.
        max_concurrency: u32,
    },
    /// Call a method of the hosted actor; `function` is the method.
    ActorCall {
        /// The actor.
        actor_id: ActorId,
    },
}

/// A resolved argument.
#[derive(Clone, Debug, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub enum WireArg {
    /// The encoded value itself.
    Inline(Vec<u8>),
    /// The encoded value lives in a node's store; pin it by ID to read it, pulling it
    /// into this node's store first if it is elsewhere.
    Shared {
        /// The object.
        object_id: ObjectId,
        /// Length in bytes.
        len: u64,
        /// The nodes holding a copy, the primary first (the order to pull from).
        nodes: Vec<NodeId>,
        /// The object's owner (a copy pulled for the task goes when the owner does).
        owner: WorkerId,
    },
}

/// A worker's message to the owner that pushed it tasks.
#[derive(Debug, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub enum FromWorker {
    /// A task finished.
    Done {
        /// The task.
        task_id: TaskId,
        /// Its result.
        outcome: Outcome,
        /// Stored arguments the worker's node pulled for it: the owner records the new
        /// copies (to read from them, and to free them).
        copies: Vec<ObjectId>,
        /// Refs inside the return values: the caller holds them while the return objects
        /// live (their owners already count the caller as a borrower).
        contained: Vec<RefInValue>,
    },
}

/// A ref inside a value, as whoever holds the value must know it.
#[derive(Clone, Debug, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct RefInValue {
    /// The object.
    pub id: ObjectId,
    /// Its owner.
    pub owner: WorkerId,
    /// The owner's node.
    pub node: NodeId,
    /// Where the owner's node serves QUIC, in a cluster.
    pub home: Option<std::net::SocketAddr>,
}

/// The result of one task.
#[derive(Debug, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub enum Outcome {
    /// Small result, encoded inline.
    Inline(Vec<u8>),
    /// Large result, sealed in the node's pool.
    Shared {
        /// Offset in the pool.
        offset: u64,
        /// Length in bytes.
        len: u64,
    },
    /// The task failed.
    Failed(TaskError),
    /// A task of several return values (`num_returns`): one per return, in order.
    Returns(Vec<ReturnValue>),
}

/// One of several return values of a task.
#[derive(Debug, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub enum ReturnValue {
    /// Small, encoded inline.
    Inline(Vec<u8>),
    /// Large, sealed in the node's pool as `ObjectId::for_return(task, index)`.
    Shared {
        /// Offset in the pool.
        offset: u64,
        /// Length in bytes.
        len: u64,
    },
}

/// Lease request shapes a node reports at most (the rest are summed into the count).
pub const MAX_DEMANDS: usize = 16;

/// Actors of a node by state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct ActorCounts {
    /// Registered, not yet constructed.
    pub pending: u32,
    /// Running.
    pub alive: u32,
    /// Their process died; restarting, or waiting for the owner to decide.
    pub restarting: u32,
}

/// Lease requests of one shape waiting on a node.
#[derive(Clone, Debug, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct Demand {
    /// What each request asks for.
    pub shape: ResourceSet,
    /// Whether they are for actors (a dedicated worker each).
    pub actor: bool,
    /// How many wait.
    pub count: u32,
}

/// What a node reports about itself with every heartbeat: what the head's resource view
/// and `ares status` show.
#[derive(Clone, Debug, Default, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct NodeLoad {
    /// Resources not held by leases.
    pub available: ResourceSet,
    /// Pool bytes allocated to objects.
    pub store_used: u64,
    /// Pool capacity in bytes.
    pub store_capacity: u64,
    /// Bytes of objects on disk only.
    pub store_spilled: u64,
    /// Lease requests waiting for resources.
    pub pending_leases: u32,
    /// Lease requests refused as infeasible since the node started (no node could ever
    /// hold them; they are answered at once, so none waits).
    pub infeasible_leases: u32,
    /// Actors registered on this node, by state.
    pub actors: ActorCounts,
    /// The shapes of the lease requests waiting here, most requested first (at most
    /// [`MAX_DEMANDS`]).
    pub demands: Vec<Demand>,
    /// Live worker processes.
    pub workers: u32,
    /// Leases granted since the node started (tasks' and actors' workers).
    pub leases_granted: u64,
}

/// One node as the head's directory shows it.
#[derive(Clone, Debug, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct NodeSummary {
    /// The node.
    pub node_id: NodeId,
    /// Its daemon's process ID (on its own machine).
    pub pid: u32,
    /// The host it runs on, as it names itself.
    pub host: String,
    /// Where it serves QUIC, if it does.
    pub addr: Option<std::net::SocketAddr>,
    /// Whether it is the head.
    pub head: bool,
    /// Whether the head considers it alive.
    pub alive: bool,
    /// Its total resources.
    pub total: ResourceSet,
    /// Its last reported load.
    pub load: NodeLoad,
    /// Milliseconds since the head last heard from it.
    pub silent_ms: u64,
    /// Why the head declared it dead (`None` while alive).
    pub died: Option<String>,
}

/// Messages to the head's cluster directory, over QUIC.
#[derive(Debug, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub enum ToHead {
    /// First message of a node's connection.
    RegisterNode {
        /// The node.
        node_id: NodeId,
        /// Its daemon's process ID.
        pid: u32,
        /// Its host name.
        host: String,
        /// Where it serves QUIC, if it does.
        addr: Option<std::net::SocketAddr>,
        /// Its total resources.
        total: ResourceSet,
    },
    /// A node is alive, with its current load (about every 100 ms).
    Heartbeat {
        /// Its load.
        load: NodeLoad,
    },
    /// Where the node serves object pulls (QUIC), once it listens.
    Serving {
        /// Its address.
        addr: std::net::SocketAddr,
    },
    /// A node is stopping cleanly: mark it dead now rather than after the timeout.
    Leaving,
    /// Asks for the cluster's state (`ares status`).
    GetStatus {
        /// Correlates the answer.
        request_id: RequestId,
    },
    /// An operation on the cluster's key-value store, for a client of the sending node.
    Kv {
        /// Correlates the answer.
        request_id: RequestId,
        /// What to do.
        op: KvOp,
    },
    /// A driver connected to the sending node.
    JobStarted {
        /// The driver's core-worker ID.
        job: WorkerId,
        /// Its process ID.
        pid: u32,
    },
    /// A driver of the sending node disconnected.
    JobFinished {
        /// The driver's core-worker ID.
        job: WorkerId,
    },
    /// Reserves a name for an actor registered on the sending node (names are unique
    /// in the cluster); answered with `ActorName`.
    ReserveActorName {
        /// Correlates the answer.
        request_id: RequestId,
        /// The name.
        name: String,
        /// The actor (its `node` is the sender's; `addr` is ignored).
        actor: NamedActor,
    },
    /// The actor holding `name` died: the name is free again.
    ReleaseActorName {
        /// The name.
        name: String,
        /// The actor that held it (a stale release of a reused name does nothing).
        actor_id: ActorId,
    },
    /// A detached actor runs on the sending node: the head restarts it elsewhere if the
    /// node dies (within its budget).
    DetachedStarted {
        /// The actor (its `actor.node` is the sender's).
        actor: Box<DetachedActor>,
    },
    /// A detached actor of the sending node ended for good (killed, or out of restarts).
    DetachedGone {
        /// The actor.
        actor_id: ActorId,
    },
    /// Finds the actor named `name`; answered with `ActorName`.
    LookupActorName {
        /// Correlates the answer.
        request_id: RequestId,
        /// The name.
        name: String,
    },
}

/// Messages from the head's cluster directory.
#[derive(Debug, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub enum FromHead {
    /// The node is a member now.
    Registered {
        /// The head's node ID.
        head: NodeId,
        /// The cluster certificate (DER), which the node serves QUIC under.
        cert: Vec<u8>,
        /// Its private key (DER, PKCS#8). Only nodes that proved the join secret get it.
        key: Vec<u8>,
        /// The node had been declared dead and is taken back: what it held for other
        /// nodes' owners, the cluster has given up on.
        rejoined: bool,
    },
    /// The cluster's resource view (broadcast about every 100 ms).
    View {
        /// Every node the head knows, dead ones included.
        nodes: Vec<NodeSummary>,
    },
    /// Answers `GetStatus`.
    Status {
        /// The request.
        request_id: RequestId,
        /// Every node the head knows, dead ones included.
        nodes: Vec<NodeSummary>,
        /// How long a node may be silent before it is declared dead, in ms.
        node_timeout_ms: u64,
        /// Drivers, running first (the most recent finished ones kept too).
        jobs: Vec<JobSummary>,
        /// Detached actors the head would restart if their node died.
        detached: u32,
    },
    /// Answers `Kv`.
    Kv {
        /// The request.
        request_id: RequestId,
        /// The value (a get), or the one a put replaced or a delete removed.
        value: Option<Vec<u8>>,
        /// Why the operation was refused.
        error: Option<String>,
    },
    /// Answers `ReserveActorName` (`error`: the name is taken) and `LookupActorName`
    /// (`actor`, or `error`: no live actor has that name).
    ActorName {
        /// The request.
        request_id: RequestId,
        /// The actor found.
        actor: Option<NamedActor>,
        /// Why it was refused.
        error: Option<TaskError>,
    },
    /// Construct this detached actor here: its node died.
    RestartActor {
        /// The actor (`restarts` already counts this restart).
        actor: Box<DetachedActor>,
    },
    /// The connection broke the protocol (the reason), and is closed.
    Refused {
        /// Why.
        reason: String,
    },
}

/// Longest actor name, in bytes: names travel in control messages (at most
/// [`crate::frame::CONTROL_FRAME`]).
pub const MAX_ACTOR_NAME: usize = 1024;

/// Refuses an actor name over [`MAX_ACTOR_NAME`] bytes.
pub fn check_actor_name(name: &str) -> Result<(), TaskError> {
    if name.len() > MAX_ACTOR_NAME {
        return Err(TaskError::ActorNameTooLong { len: name.len() as u64, max: MAX_ACTOR_NAME as u64 });
    }
    Ok(())
}

/// Implements [`Message`] for a wire enum: a variant's type number is its position in
/// the list, and the match over the enum is exhaustive, so a new variant must be listed
/// here (with its bound) before anything compiles.
macro_rules! message_kinds {
    ($enum:ident { $($variant:ident => $bound:ident),+ $(,)? }) => {
        impl Message for $enum {
            const FAMILY: &'static str = stringify!($enum);

            fn kind(&self) -> u16 {
                #[allow(dead_code)]
                #[repr(u16)]
                enum Kind {
                    $($variant),+
                }
                match self {
                    $($enum::$variant { .. } => Kind::$variant as u16,)+
                }
            }

            fn describe(kind: u16) -> Option<(&'static str, Bound)> {
                const TABLE: &[(&str, Bound)] = &[$((stringify!($variant), Bound::$bound)),+];
                TABLE.get(kind as usize).copied()
            }
        }
    };
}

// Control: fixed-size fields, IDs, endpoints and short names. Bulk: values, lists of
// IDs, error reports (a task's error can quote its panic message at length), tables.
message_kinds!(ToRaylet {
    RegisterDriver => Control,
    RegisterWorker => Control,
    RequestLease => Control,
    CancelLeaseRequests => Bulk,
    ReturnLease => Control,
    CreateObject => Control,
    PinObject => Control,
    PullObject => Bulk,
    ReleaseObjects => Bulk,
    SealObject => Control,
    DeleteObjects => Bulk,
    TaskBlocked => Control,
    TaskUnblocked => Control,
    GetStats => Control,
    GetNodes => Control,
    Kv => Bulk,
    RegisterActor => Control,
    ActorStarted => Bulk,
    ActorCreateFailed => Bulk,
    ActorWorkerLost => Control,
    AddActorHold => Control,
    ReleaseActorHold => Control,
    KillActor => Control,
    LookupActor => Control,
    Relay => Bulk,
    DropCopies => Bulk,
});

message_kinds!(FromRaylet {
    Registered => Control,
    LeaseGranted => Control,
    LeaseSpillback => Control,
    LeaseInfeasible => Bulk,
    ObjectCreated => Control,
    CreateFailed => Bulk,
    Pinned => Control,
    PinFailed => Bulk,
    ObjectsSpilled => Bulk,
    Sealed => Bulk,
    ActorReply => Bulk,
    ActorFound => Control,
    ActorElsewhere => Control,
    Pulled => Bulk,
    Kv => Bulk,
    ShuttingDown => Control,
    NodeDied => Control,
    Nodes => Bulk,
    Relayed => Bulk,
    PeerGone => Control,
    Stats => Bulk,
});

message_kinds!(ToWorker { Push => Bulk });

message_kinds!(FromWorker { Done => Bulk });

message_kinds!(ToHead {
    RegisterNode => Control,
    Heartbeat => Bulk,
    Serving => Control,
    Leaving => Control,
    GetStatus => Control,
    Kv => Bulk,
    JobStarted => Control,
    JobFinished => Control,
    ReserveActorName => Control,
    ReleaseActorName => Control,
    DetachedStarted => Bulk,
    DetachedGone => Control,
    LookupActorName => Control,
});

message_kinds!(FromHead {
    Registered => Control,
    View => Bulk,
    Status => Bulk,
    Kv => Bulk,
    ActorName => Bulk,
    RestartActor => Bulk,
    Refused => Control,
});
