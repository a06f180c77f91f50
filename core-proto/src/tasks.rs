//! A submitted task as its owner keeps it until it finishes (its arguments, resolved or
//! pending, its retries and attempts), and how a ready task becomes a push: its spec
//! built from the current values of its arguments and encoded within the frame limit.
//! [`crate::CoreState`] keeps the table of tasks and decides when each is pushed.
//!
//! **Must not:** hold state of its own beyond a task's record; do IO.

use std::sync::Arc;

use ares_common::codec::Bytes;
use ares_common::frame;
use ares_common::wire::{Outcome, ReturnValue, TaskKind, TaskSpec, ToWorker, WireArg};
use ares_common::{ActorId, NodeId, ObjectId, ResourceSet, Strategy, TaskError, TaskId, WorkerId};
use ares_ownership::{Location, OwnershipTable, Status};

use crate::Combine;
use crate::lookups::Lookups;

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

pub(crate) enum Slot {
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

pub(crate) struct Task {
    pub(crate) function: Arc<str>,
    pub(crate) args: Vec<Slot>,
    pub(crate) arg_ids: Vec<ObjectId>,
    pub(crate) carried: Vec<ObjectId>,
    pub(crate) shape: ResourceSet,
    pub(crate) strategy: Strategy,
    pub(crate) retries_left: u32,
    pub(crate) attempts: u32,
    /// Arguments still pending.
    pub(crate) unresolved: usize,
    /// Gathered arguments not yet merged.
    pub(crate) unmerged: usize,
    pub(crate) target: Target,
    pub(crate) kind: TaskKind,
    pub(crate) keeps: Vec<ActorId>,
    pub(crate) num_returns: u32,
    /// Nodes where earlier attempts ran on workers that were lost: they may have sealed
    /// return values there, which the successful attempt's make stale.
    pub(crate) stale_on: Vec<NodeId>,
}

impl Task {
    pub(crate) fn ready(&self) -> bool {
        self.unresolved == 0 && self.unmerged == 0
    }
}

/// The return objects of `task_id` that `outcome` says are sealed in a store.
pub(crate) fn stored_returns(task_id: TaskId, outcome: &Outcome) -> Vec<ObjectId> {
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

/// The return objects of task `tid` of `n` return values.
pub(crate) fn returns_of(tid: TaskId, n: u32) -> impl Iterator<Item = ObjectId> {
    (0..n.max(1)).map(move |i| ObjectId::for_return(tid, i))
}

/// The values a task's arguments can take: owned objects, and borrowed ones whose
/// owners answered.
pub(crate) struct Values<'a> {
    table: &'a OwnershipTable,
    lookups: &'a Lookups,
}

impl<'a> Values<'a> {
    pub(crate) fn new(table: &'a OwnershipTable, lookups: &'a Lookups) -> Self {
        Values { table, lookups }
    }

    pub(crate) fn status(&self, id: ObjectId) -> Option<&'a Status> {
        self.table.status(id).or_else(|| self.lookups.status(id))
    }

    /// The owner of `id`: `me` for an owned object, else the owner a lookup asked.
    fn owner_of(&self, id: ObjectId, me: WorkerId) -> WorkerId {
        match self.table.status(id) {
            Some(_) => me,
            None => self.lookups.owner(id).map_or(me, |o| o.worker),
        }
    }
}

/// The node other than `here` holding the most bytes of `t`'s stored arguments (`None`
/// when `here` holds the most, or none is stored).
pub(crate) fn args_node(table: &Values<'_>, here: NodeId, t: &Task) -> Option<NodeId> {
    let stored = t.arg_ids.iter().filter_map(|id| match table.status(*id) {
        Some(Status::Ready(Location::Stored(s))) => Some((s.primary, s.len)),
        _ => None,
    });
    ares_raylet_proto::spillback::preferred_node(stored).filter(|n| *n != here)
}

/// Why a queued task cannot be pushed.
pub(crate) enum Unready {
    /// It fails with this error.
    Failed(TaskError),
    /// These arguments were lost after it was queued and are being rebuilt.
    Pending(Vec<ObjectId>),
}

/// Builds the wire spec of a ready task from the current values of its arguments.
pub(crate) fn resolve(table: &Values<'_>, owner: WorkerId, tid: TaskId, task: &Task) -> Result<TaskSpec, Unready> {
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
pub(crate) fn resolve_now(
    table: &Values<'_>,
    owner: WorkerId,
    tid: TaskId,
    task: &Task,
) -> Result<TaskSpec, TaskError> {
    resolve(table, owner, tid, task).map_err(|u| match u {
        Unready::Failed(e) => e,
        Unready::Pending(ids) => TaskError::ObjectLost {
            object: format!("{} (an argument of an actor call, lost with its node; being rebuilt)", ids[0]),
        },
    })
}

/// An encoded push, ready to be framed.
pub(crate) struct Push {
    pub(crate) kind: u16,
    pub(crate) payload: Bytes,
}

impl Push {
    /// Appends the push as one frame to `buf`.
    pub(crate) fn write_to(&self, buf: &mut Vec<u8>) {
        frame::write_frame(buf, self.kind, &self.payload).expect("writing to a Vec cannot fail");
    }
}

/// Encodes a push, refusing one over the frame limit (it would look like a dead worker).
pub(crate) fn encode_push(spec: TaskSpec, max_frame: usize) -> Result<Push, TaskError> {
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
