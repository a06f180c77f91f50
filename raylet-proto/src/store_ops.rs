//! The store side's workflows, one step at a time: a create ([`CreateOp`]), a pin
//! restoring a spilled object first ([`PinOp`]) and a pulled copy's create ([`CopyOp`]).
//! The driver advances each ([`Op::advance`]) with what happened ([`OpEvent`]), and it
//! answers with what to do next ([`OpStep`]): wait for room, reserve the pages of a range
//! with the lock released, read a spilled object back, or finish with the op's own
//! outcome type, so a driver matches only the endings its op can have.
//!
//! ```text
//!  Create: allocate ─Full─▶ (SpaceWait) Wait │ RetryNow │ GiveUp ─▶ Failed
//!             │ ─InProgress (another copy being written), before the deadline─▶ Wait
//!             └─Ok─▶ Reserve ─ok─▶ Created   ─failed─▶ abort the create, Failed
//!  Pin:    pin ─InMemory─▶ Pinned │ ─Busy (a restore in flight)─▶ Wait
//!             └─Spilled─▶ allocate for the restore (as Create) ─▶ Reserve ─▶ Read ─▶ Pinned
//! ```
//!
//! Every wait is bounded (`SpaceWait`'s deadline, the create deadline) and re-checks the
//! killed-worker fence ([`Node::gone`]): nothing is allocated for a process that is
//! gone. The op reads no clock: `now` comes with each event.

use std::time::{Duration, Instant};

use ares_common::error::TaskError;
use ares_common::{ClientId, ObjectId, WorkerId};
use ares_object_store::{Pin, RestoreJob, StoreError};

use crate::node::{Node, TRANSFER_CLIENT};
use crate::space::{MAX_WAIT_STEP, SpaceWait, Step};

/// What a store op is for.
#[derive(Clone, Copy, Debug)]
enum Kind {
    /// `CreateObject` from `client`, for an object owned by `owner`.
    Create { owner: WorkerId },
    /// `PinObject` from `client` (or a transfer serving a pull: [`TRANSFER_CLIENT`]).
    Pin,
    /// Room for a copy being pulled from another node, owned by `owner` if given (else
    /// by the owner named when the pull was asked for).
    Copy { owner: Option<WorkerId> },
}

#[derive(Debug)]
enum Phase {
    /// Allocating (or pinning); `wait` is the current wait for room, if the pool was full.
    Allocate {
        wait: Option<SpaceWait>,
    },
    /// The object is spilled: allocating room to restore it into.
    Restore {
        size: u64,
        wait: Option<SpaceWait>,
    },
    /// The driver is reserving the pages of the allocated range.
    Reserve {
        offset: u64,
    },
    /// The driver is reserving the pages of, then reading, a restore.
    Read {
        job: RestoreJob,
    },
    Done,
}

/// One create, pin or copy in progress: the machine the typed ops share.
#[derive(Debug)]
struct StoreOp {
    kind: Kind,
    client: ClientId,
    id: ObjectId,
    size: u64,
    /// How long one wait for room may last.
    space_timeout: Duration,
    /// Until when a create waits for another copy of the same object to go.
    deadline: Instant,
    phase: Phase,
}

/// What happened since the last step.
#[derive(Debug)]
pub enum OpEvent {
    /// The op starts, or a wait it asked for ended (room may have been freed).
    Go,
    /// The pages of the range asked for by [`OpStep::Reserve`] are reserved, or not.
    Reserved(Result<(), TaskError>),
    /// The restore read asked for by [`OpStep::Read`] ended after `took`.
    Read {
        /// The read's outcome (the error names the file).
        result: Result<(), String>,
        /// How long the read took (for the node's statistics).
        took: Duration,
    },
}

/// What the driver does next; `O` is the op's outcome type.
#[derive(Debug, PartialEq)]
pub enum OpStep<O> {
    /// Carry out the node's outputs (spill jobs), then wait until room is freed or this
    /// long, and advance with [`OpEvent::Go`].
    Wait(Duration),
    /// Reserve the filesystem's pages under `[offset, offset + len)` without the lock,
    /// and advance with [`OpEvent::Reserved`].
    Reserve {
        /// Start of the range in the pool.
        offset: u64,
        /// Its length.
        len: u64,
    },
    /// Read the spilled object into the pool (the pages are reserved) without the lock,
    /// and advance with [`OpEvent::Read`].
    Read(RestoreJob),
    /// The op is over.
    Done(O),
}

impl<O> OpStep<O> {
    fn map<P>(self, f: impl FnOnce(O) -> P) -> OpStep<P> {
        match self {
            OpStep::Wait(d) => OpStep::Wait(d),
            OpStep::Reserve { offset, len } => OpStep::Reserve { offset, len },
            OpStep::Read(job) => OpStep::Read(job),
            OpStep::Done(o) => OpStep::Done(f(o)),
        }
    }
}

/// A store op as its driver sees it.
pub trait Op {
    /// How it ends.
    type Outcome;

    /// Advances the op on `node` at `now`. `closed`: the driver saw the client's
    /// connection close (it is gone even if the node has not been told yet).
    fn advance(&mut self, node: &mut Node, now: Instant, closed: bool, event: OpEvent) -> OpStep<Self::Outcome>;

    /// The client the op runs for ([`TRANSFER_CLIENT`] for a copy).
    fn client(&self) -> ClientId;
}

/// A `CreateObject` in progress.
#[derive(Debug)]
pub struct CreateOp(StoreOp);

/// How a create ends.
#[derive(Debug, PartialEq)]
pub enum CreateOutcome {
    /// Room was made: write the object at `offset`.
    Created {
        /// Where the object goes in the pool.
        offset: u64,
    },
    /// Answer with this error.
    Failed(TaskError),
    /// The client is gone (see [`Node::gone`]): nothing was allocated, nothing is answered.
    Abandoned,
}

/// A `PinObject` (or a transfer's pin of what it serves) in progress.
#[derive(Debug)]
pub struct PinOp(StoreOp);

/// How a pin ends.
#[derive(Debug, PartialEq)]
pub enum PinOutcome {
    /// The object is pinned in memory.
    Pinned {
        /// Where it is in the pool.
        offset: u64,
        /// Its size.
        size: u64,
    },
    /// Answer with this error.
    Failed(TaskError),
}

/// Room for a pulled copy in progress.
#[derive(Debug)]
pub struct CopyOp(StoreOp);

/// How a copy's create ends.
#[derive(Debug, PartialEq)]
pub enum CopyOutcome {
    /// Room was made: write the copy at `offset`.
    Created {
        /// Where the copy goes in the pool.
        offset: u64,
    },
    /// A copy is already here (sealed or being written): nothing to do.
    Exists,
    /// The pull fails with this error.
    Failed(TaskError),
}

/// The error of an ending an op of its kind cannot have: a bug, answered with a typed
/// error rather than a panic of the daemon.
fn out_of_kind(id: ObjectId, o: &Outcome) -> TaskError {
    tracing::error!(object = %id, "a store op ended as {o:?}, which its kind cannot");
    TaskError::ObjectLost { object: format!("{id} (the raylet's store op ended out of kind; a bug)") }
}

impl Op for CreateOp {
    type Outcome = CreateOutcome;

    fn advance(&mut self, node: &mut Node, now: Instant, closed: bool, event: OpEvent) -> OpStep<CreateOutcome> {
        let id = self.0.id;
        self.0.advance(node, now, closed, event).map(|o| match o {
            Outcome::Created { offset } => CreateOutcome::Created { offset },
            Outcome::Failed(e) => CreateOutcome::Failed(e),
            Outcome::Abandoned => CreateOutcome::Abandoned,
            o @ (Outcome::Pinned { .. } | Outcome::Exists) => CreateOutcome::Failed(out_of_kind(id, &o)),
        })
    }

    fn client(&self) -> ClientId {
        self.0.client
    }
}

impl Op for PinOp {
    type Outcome = PinOutcome;

    fn advance(&mut self, node: &mut Node, now: Instant, closed: bool, event: OpEvent) -> OpStep<PinOutcome> {
        let id = self.0.id;
        self.0.advance(node, now, closed, event).map(|o| match o {
            Outcome::Pinned { offset, size } => PinOutcome::Pinned { offset, size },
            Outcome::Failed(e) => PinOutcome::Failed(e),
            o @ (Outcome::Created { .. } | Outcome::Exists | Outcome::Abandoned) => {
                PinOutcome::Failed(out_of_kind(id, &o))
            }
        })
    }

    fn client(&self) -> ClientId {
        self.0.client
    }
}

impl Op for CopyOp {
    type Outcome = CopyOutcome;

    fn advance(&mut self, node: &mut Node, now: Instant, closed: bool, event: OpEvent) -> OpStep<CopyOutcome> {
        let id = self.0.id;
        self.0.advance(node, now, closed, event).map(|o| match o {
            Outcome::Created { offset } => CopyOutcome::Created { offset },
            Outcome::Exists => CopyOutcome::Exists,
            Outcome::Failed(e) => CopyOutcome::Failed(e),
            o @ (Outcome::Pinned { .. } | Outcome::Abandoned) => CopyOutcome::Failed(out_of_kind(id, &o)),
        })
    }

    fn client(&self) -> ClientId {
        self.0.client
    }
}

/// How the shared machine ended, before its op's type narrows it.
#[derive(Debug, PartialEq)]
enum Outcome {
    /// Room was made: write the object at `offset`.
    Created {
        /// Where the object goes in the pool.
        offset: u64,
    },
    /// The object is pinned in memory.
    Pinned {
        /// Where it is in the pool.
        offset: u64,
        /// Its size.
        size: u64,
    },
    /// A copy being pulled is already here (sealed or being written): nothing to do.
    Exists,
    /// The op failed: answer with this error.
    Failed(TaskError),
    /// The client is gone (see [`Node::gone`]): nothing was allocated, nothing is answered.
    Abandoned,
}

impl CreateOp {
    /// A create of `id` (`size` bytes, owned by `owner`) for `client`, started at `now`.
    /// A wait for room lasts at most `timeout`, and so does a wait for another copy of
    /// the same object to be sealed or dropped.
    pub fn new(now: Instant, timeout: Duration, client: ClientId, id: ObjectId, size: u64, owner: WorkerId) -> Self {
        CreateOp(StoreOp::new(Kind::Create { owner }, now, timeout, client, id, size))
    }
}

impl PinOp {
    /// A pin of `id` for `client`, restoring it first if it is spilled.
    pub fn new(now: Instant, timeout: Duration, client: ClientId, id: ObjectId) -> Self {
        PinOp(StoreOp::new(Kind::Pin, now, timeout, client, id, 0))
    }
}

impl CopyOp {
    /// Room for a pulled copy of `id`, owned by `owner` (or, if `None`, by the owner
    /// the pull's request named).
    pub fn new(now: Instant, timeout: Duration, id: ObjectId, size: u64, owner: Option<WorkerId>) -> Self {
        CopyOp(StoreOp::new(Kind::Copy { owner }, now, timeout, TRANSFER_CLIENT, id, size))
    }
}

impl StoreOp {
    fn new(kind: Kind, now: Instant, timeout: Duration, client: ClientId, id: ObjectId, size: u64) -> Self {
        StoreOp {
            kind,
            client,
            id,
            size,
            space_timeout: timeout,
            deadline: now + timeout,
            phase: Phase::Allocate { wait: None },
        }
    }

    /// See [`Op::advance`].
    fn advance(&mut self, node: &mut Node, now: Instant, closed: bool, event: OpEvent) -> OpStep<Outcome> {
        let (fenced, client) = (self.fenced(), self.client);
        let gone = move |node: &Node| fenced && (closed || node.gone(client));
        match (std::mem::replace(&mut self.phase, Phase::Done), event) {
            (Phase::Reserve { offset }, OpEvent::Reserved(r)) => {
                self.phase = Phase::Done;
                match r {
                    Ok(()) => OpStep::Done(Outcome::Created { offset }),
                    Err(error) => {
                        node.abort_create(self.client, self.id);
                        OpStep::Done(Outcome::Failed(error))
                    }
                }
            }
            (Phase::Read { job }, OpEvent::Reserved(Ok(()))) => {
                self.phase = Phase::Read { job: job.clone() };
                OpStep::Read(job)
            }
            (Phase::Read { .. }, OpEvent::Reserved(Err(error))) => {
                let _ = node.store_side().finish_restore(self.id, self.client, false, Duration::ZERO);
                OpStep::Done(Outcome::Failed(error))
            }
            (Phase::Read { .. }, OpEvent::Read { result, took }) => {
                if let Err(e) = &result {
                    tracing::error!(object = %self.id, "restore failed: {e}");
                }
                let lost = |what: String| Outcome::Failed(TaskError::ObjectLost { object: what });
                OpStep::Done(
                    match (node.store_side().finish_restore(self.id, self.client, result.is_ok(), took), result) {
                        (Ok(Pin::InMemory { offset, size }), _) => Outcome::Pinned { offset, size },
                        (_, Err(e)) => lost(format!("{} (restore failed: {e})", self.id)),
                        (_, Ok(())) => lost(self.id.to_string()),
                    },
                )
            }
            (Phase::Allocate { wait }, OpEvent::Go) => {
                let (client, id, size) = (self.client, self.id, self.size);
                match self.kind {
                    Kind::Pin => self.pin_step(node, now, gone(node)),
                    Kind::Create { owner } => {
                        self.allocate(node, now, wait, gone, |n| n.try_create(client, id, size, owner))
                    }
                    Kind::Copy { owner } => {
                        self.allocate(node, now, wait, gone, |n| n.try_create_copy(id, size, owner))
                    }
                }
            }
            (Phase::Restore { size, wait }, OpEvent::Go) => self.restore(node, now, size, wait, gone),
            (phase, event) => {
                // A driver bug, not a peer's: fail the op and say so rather than guess.
                self.phase = Phase::Done;
                tracing::error!(object = %self.id, "store op got {event:?} in {phase:?}");
                let object = format!("{} (the raylet's store op went out of step; a bug)", self.id);
                OpStep::Done(Outcome::Failed(TaskError::ObjectLost { object }))
            }
        }
    }

    /// Whether the killed-worker fence applies: a copy runs for this node itself, and a
    /// pin's answer goes to a client that is either there or not (nothing is allocated
    /// for it but a restore, which serves any later reader too).
    fn fenced(&self) -> bool {
        !matches!(self.kind, Kind::Copy { .. })
    }

    fn pin_step(&mut self, node: &mut Node, now: Instant, gone: bool) -> OpStep<Outcome> {
        match node.store_side().pin(self.id, self.client) {
            Ok(Pin::InMemory { offset, size }) => OpStep::Done(Outcome::Pinned { offset, size }),
            Ok(Pin::Busy) => {
                self.phase = Phase::Allocate { wait: None };
                OpStep::Wait(MAX_WAIT_STEP)
            }
            Ok(Pin::Spilled) => {
                let size = node.store().size_of(self.id).unwrap_or(0);
                self.restore(node, now, size, Some(SpaceWait::new(now, self.space_timeout)), |_| gone)
            }
            Err(_) => OpStep::Done(Outcome::Failed(TaskError::ObjectLost { object: self.id.to_string() })),
        }
    }

    /// Allocates room for a restore of the spilled object, waiting for room as a create does.
    fn restore(
        &mut self,
        node: &mut Node,
        now: Instant,
        size: u64,
        wait: Option<SpaceWait>,
        gone: impl Fn(&Node) -> bool,
    ) -> OpStep<Outcome> {
        let wait = wait.unwrap_or_else(|| SpaceWait::new(now, self.space_timeout));
        let id = self.id;
        match self.with_space(node, now, size, wait, &gone, |n| n.store_side().begin_restore(id)) {
            Room::Got(job) => {
                self.phase = Phase::Read { job: job.clone() };
                OpStep::Reserve { offset: job.pool_offset, len: job.size }
            }
            Room::Wait(d) => {
                self.phase = Phase::Restore { size, wait: Some(wait) };
                OpStep::Wait(d)
            }
            // Another reader restores it: pin again once that ends.
            Room::Failed(StoreError::InProgress(_)) => self.pin_step(node, now, gone(node)),
            Room::Failed(e) => OpStep::Done(Outcome::Failed(node.store_side().no_space(e))),
            Room::Abandoned => OpStep::Done(Outcome::Failed(node.store_side().no_space(StoreError::Abandoned))),
        }
    }

    /// Allocates room for a create or a copy.
    fn allocate(
        &mut self,
        node: &mut Node,
        now: Instant,
        wait: Option<SpaceWait>,
        gone: impl Fn(&Node) -> bool,
        attempt: impl FnMut(&mut Node) -> Result<u64, StoreError>,
    ) -> OpStep<Outcome> {
        let wait = wait.unwrap_or_else(|| SpaceWait::new(now, self.space_timeout));
        let (id, size, kind) = (self.id, self.size, self.kind);
        match self.with_space(node, now, size, wait, &gone, attempt) {
            Room::Got(offset) => {
                self.phase = Phase::Reserve { offset };
                OpStep::Reserve { offset, len: size }
            }
            Room::Wait(d) => {
                self.phase = Phase::Allocate { wait: Some(wait) };
                OpStep::Wait(d)
            }
            Room::Abandoned => {
                tracing::debug!(object = %id, "a create from a client that is gone is dropped");
                OpStep::Done(Outcome::Abandoned)
            }
            Room::Failed(StoreError::Exists { .. }) if matches!(kind, Kind::Copy { .. }) => {
                OpStep::Done(Outcome::Exists)
            }
            // A retried task makes its result again (same ID) while the killed attempt's
            // unsealed copy may still be there: the dead worker's disconnect frees it and
            // wakes this wait. A reader's pin of a deleted copy ends likewise. The wait
            // for room starts afresh after it.
            Room::Failed(StoreError::InProgress(_)) if matches!(kind, Kind::Create { .. }) && now < self.deadline => {
                self.phase = Phase::Allocate { wait: None };
                OpStep::Wait(MAX_WAIT_STEP)
            }
            Room::Failed(e) => OpStep::Done(Outcome::Failed(node.store_side().no_space(e))),
        }
    }

    /// Runs `attempt` while it only lacks room and room can be made at once; otherwise
    /// says whether to wait (spilling asked for) or give up (after one last try).
    fn with_space<T>(
        &self,
        node: &mut Node,
        now: Instant,
        size: u64,
        wait: SpaceWait,
        gone: &impl Fn(&Node) -> bool,
        mut attempt: impl FnMut(&mut Node) -> Result<T, StoreError>,
    ) -> Room<T> {
        loop {
            if gone(node) {
                return Room::Abandoned;
            }
            match attempt(node) {
                Ok(t) => return Room::Got(t),
                Err(StoreError::Full { .. }) => match wait.next(now, node.store_side().progress(size)) {
                    Step::RetryNow => continue,
                    Step::GiveUp if gone(node) => return Room::Abandoned,
                    Step::GiveUp => {
                        tracing::debug!(size, stats = ?node.store().stats(), "giving up waiting for space");
                        return match attempt(node) {
                            Ok(t) => Room::Got(t),
                            Err(e) => Room::Failed(e),
                        };
                    }
                    Step::Wait(d) => return Room::Wait(d),
                },
                Err(e) => return Room::Failed(e),
            }
        }
    }
}

/// Where a wait for room stands.
enum Room<T> {
    Got(T),
    Wait(Duration),
    Failed(StoreError),
    Abandoned,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::tests::{next_spill, node, oid};
    use ares_common::RequestId;
    use ares_common::wire::ToRaylet;

    const T: Duration = Duration::from_secs(5);
    const OWNER: WorkerId = WorkerId([9; 16]);

    fn driver(n: &mut Node, c: ClientId) {
        n.connected(c);
        n.handle(c, ToRaylet::RegisterDriver { pid: 1, worker_id: OWNER });
    }

    /// Creates, reserves and seals `id` for `c` (past the threshold, it gets spilled).
    fn stored(n: &mut Node, t0: Instant, c: ClientId, id: ObjectId, size: u64) {
        let mut op = CreateOp::new(t0, T, c, id, size, OWNER);
        let OpStep::Reserve { offset, .. } = op.advance(n, t0, false, OpEvent::Go) else { panic!() };
        assert_eq!(
            op.advance(n, t0, false, OpEvent::Reserved(Ok(()))),
            OpStep::Done(CreateOutcome::Created { offset })
        );
        n.handle(c, ToRaylet::SealObject { request_id: RequestId(1), object_id: id });
    }

    #[test]
    fn a_create_on_a_full_pool_waits_for_the_spill_then_gets_its_room() {
        let (mut n, c, t0) = (node(), ClientId(1), Instant::now());
        driver(&mut n, c);
        stored(&mut n, t0, c, oid(1), 900 << 10);
        let job = next_spill(&mut n);
        let job = job.expect("past the threshold: a spill");
        let mut op = CreateOp::new(t0, T, c, oid(2), 500 << 10, OWNER);
        assert_eq!(op.advance(&mut n, t0, false, OpEvent::Go), OpStep::Wait(MAX_WAIT_STEP), "a spill is under way");
        let offsets = vec![0u64; job.items.len()];
        n.spill_finished(&job, Ok(&offsets), Duration::ZERO, |_| "f".into());
        let OpStep::Reserve { len, .. } = op.advance(&mut n, t0, false, OpEvent::Go) else { panic!() };
        assert_eq!(len, 500 << 10);
        // The pages cannot be reserved: the create is taken back and its room freed.
        let full = TaskError::SharedMemoryFull { requested: len, error: "no room on /dev/shm".into() };
        assert_eq!(
            op.advance(&mut n, t0, false, OpEvent::Reserved(Err(full.clone()))),
            OpStep::Done(CreateOutcome::Failed(full))
        );
        assert_eq!(n.store().stats().used, 0, "the spilled object left memory, the failed create gave its room back");
    }

    #[test]
    fn a_second_create_of_an_object_being_written_waits_until_the_deadline() {
        let (mut n, t0) = (node(), Instant::now());
        let (a, b) = (ClientId(1), ClientId(2));
        driver(&mut n, a);
        driver(&mut n, b);
        let mut first = CreateOp::new(t0, T, a, oid(1), 100, OWNER);
        assert!(matches!(first.advance(&mut n, t0, false, OpEvent::Go), OpStep::Reserve { .. }));
        let mut second = CreateOp::new(t0, T, b, oid(1), 100, OWNER);
        assert_eq!(second.advance(&mut n, t0, false, OpEvent::Go), OpStep::Wait(MAX_WAIT_STEP));
        let late = t0 + T;
        match second.advance(&mut n, late, false, OpEvent::Go) {
            OpStep::Done(CreateOutcome::Failed(TaskError::ObjectLost { object })) => {
                assert!(object.contains("being created"), "{object}")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_create_for_a_client_that_is_gone_allocates_nothing() {
        let (mut n, c, t0) = (node(), ClientId(1), Instant::now());
        driver(&mut n, c);
        let mut op = CreateOp::new(t0, T, c, oid(1), 100, OWNER);
        assert_eq!(op.advance(&mut n, t0, true, OpEvent::Go), OpStep::Done(CreateOutcome::Abandoned));
        assert_eq!(n.store().stats().used, 0);
        // A copy for this node itself is never fenced.
        let mut copy = CopyOp::new(t0, T, oid(2), 100, None);
        assert!(matches!(copy.advance(&mut n, t0, true, OpEvent::Go), OpStep::Reserve { len: 100, .. }));
    }

    #[test]
    fn a_pin_of_a_spilled_object_restores_it_first() {
        let (mut n, c, t0) = (node(), ClientId(1), Instant::now());
        driver(&mut n, c);
        stored(&mut n, t0, c, oid(1), 900 << 10);
        let job = next_spill(&mut n);
        let job = job.unwrap();
        let offsets = vec![0u64; job.items.len()];
        n.spill_finished(&job, Ok(&offsets), Duration::ZERO, |_| "f".into());
        let mut pin = PinOp::new(t0, T, c, oid(1));
        let OpStep::Reserve { offset, len } = pin.advance(&mut n, t0, false, OpEvent::Go) else { panic!() };
        assert_eq!(len, 900 << 10);
        let OpStep::Read(restore) = pin.advance(&mut n, t0, false, OpEvent::Reserved(Ok(()))) else { panic!() };
        assert_eq!(restore.pool_offset, offset);
        // A second reader meanwhile waits for the restore in flight.
        let mut other = PinOp::new(t0, T, ClientId(1), oid(1));
        assert_eq!(other.advance(&mut n, t0, false, OpEvent::Go), OpStep::Wait(MAX_WAIT_STEP));
        let read = OpEvent::Read { result: Ok(()), took: Duration::from_millis(3) };
        assert_eq!(pin.advance(&mut n, t0, false, read), OpStep::Done(PinOutcome::Pinned { offset, size: 900 << 10 }));
        assert_eq!(
            other.advance(&mut n, t0, false, OpEvent::Go),
            OpStep::Done(PinOutcome::Pinned { offset, size: 900 << 10 })
        );
        assert_eq!(n.stats().store_restore_seconds, 0.003);
    }

    #[test]
    fn an_event_the_op_did_not_ask_for_is_a_typed_error_not_a_panic() {
        let (mut n, c, t0) = (node(), ClientId(1), Instant::now());
        driver(&mut n, c);
        let mut op = PinOp::new(t0, T, c, oid(1));
        let read = OpEvent::Read { result: Ok(()), took: Duration::ZERO };
        match op.advance(&mut n, t0, false, read) {
            OpStep::Done(PinOutcome::Failed(TaskError::ObjectLost { object })) => {
                assert!(object.contains("out of step"))
            }
            other => panic!("{other:?}"),
        }
    }
}
