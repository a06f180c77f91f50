//! Lineage reconstruction, the owner's side: the specs of finished tasks kept to re-run
//! them, and what happens when every copy of an owned object is lost.
//!
//! - A finished pool task is *kept* (its spec, with inline and merged arguments) while
//!   any of its return objects is tracked, within `max_lineage_bytes`, oldest dropped
//!   first. A kept spec holds a lineage reference on each argument it takes by ref, so
//!   that argument's entry stays (released, value freed) and can be rebuilt in turn.
//! - An object is *lost* when the node holding its only copies dies (`NodeDied`), or when
//!   no holder could serve a copy (a worker's pull or this process's `get` failed at
//!   every node). A lost object made by a kept task is rebuilt by running the task again
//!   under the same ID (IDs are deterministic, so its own submissions and puts are named
//!   as before), first rebuilding any released argument, recursively; waiting `get`s and
//!   tasks just see it pending again. Each re-run spends one of the task's retries.
//! - A lost object that cannot be rebuilt fails: `ObjectLost` for a `put`,
//!   `ObjectUnrecoverable` (lineage evicted, retries spent, task not kept) otherwise.

use std::collections::VecDeque;
use std::time::Instant;

use ares_common::det::DetMap;
use ares_common::{NodeId, ObjectId, TaskError, TaskId, Unrecoverable};
use ares_ownership::{Lineage, Location, Status, Stored};

use super::CoreState;
use super::Touched;
use crate::tasks::{Slot, Target, Task, returns_of};

/// The objects `task` takes by ref (gathered lists are kept merged, so their parts are
/// not needed to re-run it).
fn ref_args(task: &Task) -> Vec<ObjectId> {
    task.args
        .iter()
        .filter_map(|s| match s {
            Slot::Ref(id) => Some(*id),
            _ => None,
        })
        .collect()
}

/// The memory a kept spec holds, counted against `max_lineage_bytes` so that the budget
/// bounds memory: its map slot (twice, for the table's slack) and place in the eviction
/// order, the boxed `Task`, the vectors it owns, its resource names and its inline
/// argument bytes. (The function name is shared by every task of that function.)
pub(super) fn spec_bytes(task: &Task) -> u64 {
    use std::mem::size_of;
    let slot = size_of::<TaskId>() + size_of::<Box<Task>>();
    let fixed = 2 * slot + size_of::<TaskId>() + size_of::<Task>();
    let vecs = task.args.capacity() * size_of::<Slot>()
        + (task.arg_ids.capacity() + task.carried.capacity()) * size_of::<ObjectId>()
        + task.keeps.capacity() * size_of::<ares_common::ActorId>()
        + task.stale_on.capacity() * size_of::<ares_common::NodeId>();
    let inline: usize = task
        .args
        .iter()
        .map(|s| match s {
            Slot::Inline(b) => b.len(),
            Slot::Gather { merged: Some(b), .. } => b.len(),
            _ => 0,
        })
        .sum();
    (fixed + vecs + inline + task.shape.heap_bytes()) as u64
}

/// The specs of finished tasks kept to rebuild their lost outputs, within a byte budget,
/// oldest dropped first. It only keeps and counts; what a kept spec holds in the
/// ownership table (lineage references on its arguments) is the state's to take and
/// release, around [`KeptSpecs::keep`] and [`KeptSpecs::take`].
pub(super) struct KeptSpecs {
    specs: DetMap<TaskId, Box<Task>>,
    /// Kept specs, oldest first (may name specs already dropped).
    order: VecDeque<TaskId>,
    /// What the kept specs count against `budget`.
    bytes: u64,
    budget: u64,
}

impl KeptSpecs {
    pub(super) fn new(budget: u64) -> KeptSpecs {
        KeptSpecs { specs: DetMap::default(), order: VecDeque::new(), bytes: 0, budget }
    }

    /// Whether specs are kept at all (a budget of 0 keeps none).
    pub(super) fn enabled(&self) -> bool {
        self.budget > 0
    }

    /// Keeps `task`'s spec; returns the specs dropped to stay within the budget, oldest
    /// first.
    pub(super) fn keep(&mut self, tid: TaskId, task: Task) -> Vec<(TaskId, Box<Task>)> {
        self.bytes += spec_bytes(&task);
        self.specs.insert(tid, Box::new(task));
        self.order.push_back(tid);
        let mut dropped = Vec::new();
        while self.bytes > self.budget
            && let Some(old) = self.order.pop_front()
        {
            if let Some(t) = self.specs.remove(&old) {
                self.bytes -= spec_bytes(&t);
                dropped.push((old, t));
            }
        }
        // The order keeps IDs of specs already dropped; compact it now and then.
        if self.order.len() > 2 * self.specs.len() + 64 {
            let specs = &self.specs;
            self.order.retain(|t| specs.contains_key(t));
        }
        dropped
    }

    pub(super) fn get(&self, tid: &TaskId) -> Option<&Task> {
        self.specs.get(tid).map(|t| &**t)
    }

    /// Stops keeping `tid`'s spec and hands it back.
    pub(super) fn take(&mut self, tid: &TaskId) -> Option<Box<Task>> {
        let t = self.specs.remove(tid)?;
        self.bytes -= spec_bytes(&t);
        Some(t)
    }

    pub(super) fn is_empty(&self) -> bool {
        self.specs.is_empty()
    }

    /// Specs kept and the bytes they count.
    pub(super) fn kept(&self) -> (usize, u64) {
        (self.specs.len(), self.bytes)
    }

    pub(super) fn clear(&mut self) {
        self.specs.clear();
        self.order.clear();
        self.bytes = 0;
    }
}

impl CoreState {
    /// Whether a finished task's spec is worth keeping: a pool task (an actor call's
    /// result depends on the actor's state) that may run again.
    pub(super) fn keeps_lineage(&self, task: &Task) -> bool {
        self.lineage.enabled() && matches!(task.target, Target::Pool) && task.retries_left > 0
    }

    /// Takes lineage references on the arguments of a task about to be kept (before its
    /// submitted counts are released, so its arguments stay tracked).
    pub(super) fn hold_lineage_args(&mut self, task: &Task) {
        self.table.add_lineage_refs(&ref_args(task));
    }

    /// Keeps the spec of the finished task `tid` (whose arguments' lineage references
    /// [`CoreState::hold_lineage_args`] took), unless none of its return objects is
    /// tracked any more.
    pub(super) fn keep_lineage(&mut self, tid: TaskId, mut task: Task) {
        if !returns_of(tid, task.num_returns).any(|r| self.table.tracks(r)) {
            self.table.remove_lineage_refs(&ref_args(&task));
            return;
        }
        task.unresolved = 0;
        for v in [&mut task.arg_ids, &mut task.carried] {
            v.shrink_to_fit();
        }
        task.args.shrink_to_fit();
        for (old, t) in self.lineage.keep(tid, task) {
            for r in returns_of(old, t.num_returns) {
                self.table.evict_lineage(r);
            }
            self.table.remove_lineage_refs(&ref_args(&t));
        }
    }

    /// `id` left the table (or was released): drops its task's spec once none of the
    /// task's return objects is tracked. Called for every `Free` the table yields.
    pub(super) fn lineage_freed(&mut self, id: ObjectId) {
        if id.is_put() || self.lineage.is_empty() {
            return;
        }
        let Some(t) = self.lineage.get(&id.task) else {
            return;
        };
        if returns_of(id.task, t.num_returns).any(|r| self.table.tracks(r)) {
            return;
        }
        let t = self.lineage.take(&id.task).expect("present");
        self.table.remove_lineage_refs(&ref_args(&t));
    }

    /// Specs kept and the bytes they count (for tests and statistics).
    pub fn lineage_kept(&self) -> (usize, u64) {
        self.lineage.kept()
    }

    /// `node` died: the owned objects whose only copies it held are lost.
    pub(super) fn lose_node_copies(&mut self, now: Instant, node: NodeId) {
        let lost = self.table.take_lost(node);
        if !lost.is_empty() {
            tracing::info!(%node, objects = lost.len(), "objects lost with their node; rebuilding them");
            self.recover(now, lost);
        }
    }

    /// A read of the owned object `id` at `seen` (where it was stored when the read
    /// began) found no copy it could use, from node `here`. Returns whether to wait for
    /// the object and read again: it is being rebuilt, it failed for good (the wait says
    /// why), or a copy appeared elsewhere meanwhile. `false`: nothing changed, the read
    /// fails as lost.
    pub fn read_failed(&mut self, now: Instant, id: ObjectId, seen: &Stored, here: NodeId) -> bool {
        let tried = seen.tried_from(here);
        if self.table.copies_unreachable(id, &tried) {
            tracing::info!(object = %id, "no node holding the object could serve it; rebuilding it");
            self.recover(now, vec![id]);
        }
        self.flush_frees();
        match self.table.status(id) {
            Some(Status::Ready(Location::Stored(s))) => !s.nodes().eq(seen.nodes()),
            _ => true,
        }
    }

    /// Rebuilds the lost objects `lost` (and the released arguments their tasks need),
    /// or fails those that cannot be rebuilt, with their dependents.
    pub(super) fn recover(&mut self, now: Instant, lost: Vec<ObjectId>) {
        let mut work = lost;
        let mut touched = Touched::default();
        while let Some(id) = work.pop() {
            if !self.table.tracks(id) {
                continue;
            }
            if let Err(e) = self.rebuild(id, &mut work, &mut touched) {
                tracing::warn!(object = %id, "a lost object cannot be rebuilt: {e}");
                self.fail_object(id, e);
            }
        }
        self.changed = true;
        self.dispatch_touched(now, touched);
    }

    /// Runs the task that made `id` again, unless it is already running. Released
    /// arguments it needs are made pending and pushed on `work` to be rebuilt in turn.
    fn rebuild(&mut self, id: ObjectId, work: &mut Vec<ObjectId>, touched: &mut Touched) -> Result<(), TaskError> {
        let tid = id.task;
        if self.tasks.contains(&tid) {
            // Its task is already running again (rebuilt for a sibling return value).
            self.table.restart(id);
            return Ok(());
        }
        let unrecoverable = |reason| TaskError::ObjectUnrecoverable { object: id.to_string(), reason };
        match self.table.lineage(id) {
            Some(Lineage::Put) => {
                return Err(TaskError::ObjectLost {
                    object: format!("{id}, made by put, whose every copy was lost (a put object cannot be rebuilt)"),
                });
            }
            Some(Lineage::Evicted) => return Err(unrecoverable(Unrecoverable::LineageEvicted)),
            _ => {}
        }
        match self.lineage.get(&tid) {
            None => return Err(unrecoverable(Unrecoverable::NotRetriable)),
            Some(t) if t.retries_left == 0 => return Err(unrecoverable(Unrecoverable::RetriesExhausted)),
            Some(_) => {}
        }
        let mut task = *self.lineage.take(&tid).expect("present above");
        task.retries_left -= 1;
        task.attempts += 1;
        tracing::debug!(task = %tid, function = %task.function, "re-running a task to rebuild its lost output");
        for r in returns_of(tid, task.num_returns) {
            // Copies of other return values that survived are deleted (the re-run, a
            // later attempt, replaces any it finds still there).
            if let Some(Some(Location::Stored(s))) = self.table.restart(r) {
                self.delete_copies(r, &s);
            }
        }
        let deps = ref_args(&task);
        for d in &deps {
            if self.table.is_released(*d) {
                self.table.restart(*d);
                work.push(*d);
            }
        }
        // The re-run holds its arguments as a submitted task does; the spec's lineage
        // references move to it (and come back when it is kept again).
        self.table.add_submitted(&deps);
        self.table.remove_lineage_refs(&deps);
        let mut missing = None;
        let mut unresolved = 0;
        for d in &deps {
            match self.table.status(*d) {
                Some(Status::Pending) => {
                    unresolved += 1;
                    self.tasks.wait_for(*d, tid);
                }
                Some(Status::Failed(e)) => missing = Some((**e).clone()),
                Some(Status::Ready(_)) => {}
                None => {
                    missing = Some(TaskError::ObjectLost {
                        object: format!(
                            "{id}: rebuilding it needs argument {d}, which is gone (a put object, or one \
                             whose lineage was dropped)"
                        ),
                    })
                }
            }
        }
        task.unresolved = unresolved;
        task.arg_ids = deps;
        self.tasks.insert(tid, task);
        if let Some(e) = missing {
            self.fail_task(tid, e);
        } else if unresolved == 0 {
            self.enqueue_ready(tid, touched);
        }
        Ok(())
    }

    /// Deletes the copies of `id` that `s` names (the ones confirmed and the ones that
    /// may exist) from their nodes' stores: its value is being replaced or dropped.
    fn delete_copies(&mut self, id: ObjectId, s: &ares_ownership::Stored) {
        let nodes: Vec<NodeId> = s.nodes().chain(s.maybe.iter().copied()).collect();
        for n in nodes {
            self.send_to(Some(n), ares_common::wire::ToRaylet::DeleteObjects { object_ids: vec![id] });
        }
    }

    /// Fails the owned object `id` with `error`, and every task waiting on it. Copies it
    /// may still have (on nodes that were not the lost ones) are deleted.
    fn fail_object(&mut self, id: ObjectId, error: TaskError) {
        if let Some(Status::Ready(Location::Stored(s))) = self.table.status(id) {
            let s = (**s).clone();
            self.delete_copies(id, &s);
        }
        self.table.set_failed(id, error.clone());
        for tid in self.tasks.take_waiters(id) {
            self.fail_task(tid, error.clone());
        }
        self.changed = true;
    }

    /// A worker could not read argument `index` of `task` from the copies on `tried`. If
    /// it is an owned stored object, those copies are dropped (rebuilding it if none is
    /// left) and the task waits for it again, spending a retry; returns the task back
    /// otherwise, to fail as it did.
    pub(super) fn argument_unavailable(
        &mut self,
        now: Instant,
        tid: TaskId,
        mut task: Task,
        index: u32,
        tried: &[NodeId],
        touched: &mut Touched,
    ) -> Option<Task> {
        let Some(Slot::Ref(id)) = task.args.get(index as usize) else {
            return Some(task);
        };
        let id = *id;
        if task.retries_left == 0 {
            return Some(task);
        }
        match self.table.status(id) {
            Some(Status::Ready(Location::Stored(_))) => {
                if self.table.copies_unreachable(id, tried) {
                    tracing::info!(object = %id, "a worker could not read the argument anywhere; rebuilding it");
                    self.recover(now, vec![id]);
                }
            }
            // Already being rebuilt (its node was declared dead meanwhile).
            Some(Status::Pending) => {}
            _ => return Some(task),
        }
        task.retries_left -= 1;
        task.attempts += 1;
        match self.table.status(id) {
            Some(Status::Pending) => {
                task.unresolved += 1;
                self.tasks.wait_for(id, tid);
                self.tasks.insert(tid, task);
            }
            Some(Status::Ready(_)) => {
                self.tasks.insert(tid, task);
                self.enqueue_ready(tid, touched);
            }
            _ => return Some(task),
        }
        None
    }
}
