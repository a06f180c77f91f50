//! Error types that cross process boundaries or belong to this crate's own machinery.

/// Why a task produced no value. This is the structured wire error a worker or raylet
/// sends back to the owner, and what `ares::get` surfaces; each variant tells the owner
/// what happened and, where one exists, what to do about it.
#[derive(Clone, Debug, PartialEq, thiserror::Error, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub enum TaskError {
    /// The task's function panicked or called `ares::fail`; its message is carried
    /// verbatim.
    #[error("task `{function}` failed: {message}")]
    Application {
        /// Registered name of the function.
        function: String,
        /// The panic payload (or `ares::fail`'s message), rendered as text.
        message: String,
    },
    /// The worker process running the task died, and the retry budget is spent.
    #[error(
        "the worker running `{function}` died {attempts} time(s) and max_retries is exhausted; \
         raise max_retries with .options(..) if the task is safe to re-run"
    )]
    WorkerDied {
        /// Registered name of the function.
        function: String,
        /// How many attempts were made.
        attempts: u32,
    },
    /// No function of that name is registered in the worker's executable.
    #[error(
        "function `{name}` is not registered in the worker; mark it with #[ares::remote] \
         (workers run the driver's own executable, so it must be compiled into it)"
    )]
    FunctionNotFound {
        /// The name that was looked up.
        name: String,
    },
    /// No node in the cluster could ever satisfy the task's resource request.
    #[error(
        "infeasible resource request {requested}: the cluster's largest node has {available}; \
         missing {missing}"
    )]
    Infeasible {
        /// The requested shape, rendered.
        requested: String,
        /// The best node's total resources, rendered.
        available: String,
        /// The part of the request no node has, rendered.
        missing: String,
    },
    /// The node's shared-memory store could not hold the task's result or argument.
    #[error(
        "object store full: needed {requested} bytes, pool capacity {capacity} bytes, \
         {used} bytes in use; free objects or raise object_store_memory"
    )]
    ObjectStoreFull {
        /// Bytes requested.
        requested: u64,
        /// Pool capacity in bytes.
        capacity: u64,
        /// Bytes in use when the request failed.
        used: u64,
    },
    /// The value is larger than the node's whole pool, so it could never be stored.
    #[error(
        "object of {size} bytes is larger than the whole object store ({capacity} bytes); raise object_store_memory"
    )]
    ObjectTooLarge {
        /// Bytes requested.
        size: u64,
        /// Pool capacity.
        capacity: u64,
    },
    /// The pool is full and spilling to make room failed.
    #[error(
        "object store full: needed {requested} bytes, pool capacity {capacity} bytes, {used} bytes in use, \
         and spilling failed: {error}; check the spill directories (spill_dirs)"
    )]
    SpillFailed {
        /// Bytes requested.
        requested: u64,
        /// Pool capacity.
        capacity: u64,
        /// Bytes in use.
        used: u64,
        /// The spill error.
        error: String,
    },
    /// The object is not in the node's store any more (it was freed).
    #[error("object {object} is not in the object store")]
    ObjectLost {
        /// The object, rendered.
        object: String,
    },
    /// An argument or return value could not be decoded as the declared type.
    #[error("task `{function}`: could not decode {what}: {reason}")]
    Decode {
        /// Registered name of the function.
        function: String,
        /// Which value failed (for example "argument 2").
        what: String,
        /// The decoder's message.
        reason: String,
    },
    /// A task's argument failed, so the task never ran.
    #[error("an argument of `{function}` failed: {cause}")]
    DependencyFailed {
        /// Registered name of the function that was not run.
        function: String,
        /// The argument's own error, rendered.
        cause: String,
    },
    /// The object's owner is gone (its process died or shut down, or its node died),
    /// and with it the record of where the value is.
    #[error(
        "the owner of object {object} ({owner}) is gone; an object does not outlive the process that \
         created it, so keep that process (the driver, or the task that made it) alive while others use it"
    )]
    OwnerDied {
        /// The object, rendered.
        object: String,
        /// The owner, rendered.
        owner: String,
    },
    /// The node could not start worker processes for the task.
    #[error("could not start a worker process: {message}")]
    WorkerStartFailed {
        /// What the last failed start reported.
        message: String,
    },
    /// The actor is dead: killed, out of scope, its owner died, its constructor failed,
    /// or its process died with no restarts left. `reason` says which.
    #[error("actor {actor} ({class}) is dead: {reason}")]
    ActorDied {
        /// The actor, rendered.
        actor: String,
        /// The actor's type.
        class: String,
        /// Why it died.
        reason: String,
    },
    /// Another live actor already has this name on the node.
    #[error("an actor named `{name}` already exists; pick another name or get it with ares::get_actor")]
    ActorNameTaken {
        /// The name.
        name: String,
    },
    /// No live actor has this name.
    #[error("no live actor is named `{name}`; it was never created, or it died")]
    ActorNotFound {
        /// The name.
        name: String,
    },
    /// The named actor exists but is of another type than the one asked for.
    #[error("actor `{name}` is a `{actual}`, not a `{requested}`")]
    ActorTypeMismatch {
        /// The name.
        name: String,
        /// Its real type.
        actual: String,
        /// The type the caller asked for.
        requested: String,
    },
    /// The runtime shut down before the task finished.
    #[error("the runtime shut down before the task finished")]
    RuntimeShutdown,
    /// The node could not reach the cluster's head for something only the head keeps
    /// (actor names, the key-value store).
    #[error(
        "the cluster's head is unreachable ({reason}): actor names and the key-value store are kept there. \
         Check that the head's daemon runs (`ares status`)"
    )]
    HeadUnavailable {
        /// What failed.
        reason: String,
    },
    /// The connection to this process's node daemon ended: nothing can be scheduled,
    /// stored or read through it any more.
    #[error(
        "the node daemon at {socket} is gone ({reason}); its workers and stored objects went with it. \
         Start it again (`ares start`) and restart this program"
    )]
    RayletUnavailable {
        /// The daemon's socket.
        socket: String,
        /// How the connection ended.
        reason: String,
    },
    /// A stored argument could not be copied to the worker's node: no node holding a
    /// copy could serve it (they died). The owner rebuilds it when it can and runs the
    /// task again; this reaches the caller only when it cannot.
    #[error("task `{function}`: argument {index} ({object}) could not be read: {reason}")]
    ArgumentUnavailable {
        /// Registered name of the function.
        function: String,
        /// The argument's position.
        index: u32,
        /// The object, rendered.
        object: String,
        /// Why no copy could be read.
        reason: String,
        /// The nodes whose copies were tried: the reader's own, or every one it pulled
        /// from (the owner drops exactly these from the object's copies).
        tried: Vec<crate::NodeId>,
    },
    /// Every copy of the object was lost (the nodes holding it died) and it cannot be
    /// rebuilt from its lineage; `reason` says why.
    #[error("object {object} was lost with the node(s) holding it and cannot be rebuilt: {reason}")]
    ObjectUnrecoverable {
        /// The object, rendered.
        object: String,
        /// Why it cannot be rebuilt.
        reason: Unrecoverable,
    },
    /// An actor name longer than [`crate::wire::MAX_ACTOR_NAME`] bytes.
    #[error("an actor name of {len} bytes is over the limit of {max} bytes; use a shorter name")]
    ActorNameTooLong {
        /// The name's length in bytes.
        len: u64,
        /// The limit.
        max: u64,
    },
    /// The shared-memory filesystem holding the pool ran out of room (other programs'
    /// files filled it), so the pages for the object could not be reserved.
    #[error("could not store an object of {requested} bytes: {error}")]
    SharedMemoryFull {
        /// Bytes requested.
        requested: u64,
        /// The reservation's error, naming the filesystem and the fix.
        error: String,
    },
}

/// Why a lost object cannot be rebuilt by running its task again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub enum Unrecoverable {
    /// The owner dropped the task's spec to stay within its lineage budget.
    #[error(
        "the spec of the task that made it was dropped to stay within the lineage budget; \
         raise max_lineage_bytes (ARES_MAX_LINEAGE_BYTES)"
    )]
    LineageEvicted,
    /// The task was run again as often as its `max_retries` allows.
    #[error("its task was already re-run max_retries times; raise max_retries with .options(..)")]
    RetriesExhausted,
    /// The task is not kept for re-running: it has `max_retries` 0 or is an actor call.
    #[error(
        "its task is not kept for re-running (max_retries is 0, or it is an actor call, whose state a \
         re-run would not reproduce)"
    )]
    NotRetriable,
}

/// Errors of the framing layer. Any of these closes the connection it happened on.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The peer announced a frame larger than its message type's bound.
    #[error("{what} frame of {len} bytes exceeds the limit of {max} bytes")]
    TooLarge {
        /// The message type announced (for example `ToRaylet::PinObject`).
        what: String,
        /// Announced length.
        len: u64,
        /// Configured limit.
        max: u64,
    },
    /// The frame's bytes are not a valid message of the expected type.
    #[error("malformed frame ({len} bytes): {reason}")]
    Malformed {
        /// Frame length.
        len: usize,
        /// Validator's message.
        reason: String,
    },
    /// The peer closed the connection cleanly between frames.
    #[error("connection closed by peer")]
    Closed,
    /// Socket IO failed.
    #[error("io error: {0}")]
    Io(#[from] std::io::Error),
}
