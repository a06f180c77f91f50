//! Owners and borrowers talking (see `ares_ownership::BorrowTable` for the borrower's
//! rules and `PeerMsg` for the messages). Both sides live in every core worker:
//!
//! - as a **borrower**, this process counts the refs it holds to other processes'
//!   objects, registers them with their owners before whatever kept them alive lets go
//!   ([`CoreState::register_borrows`], which the driver runs before a task's reply and
//!   after a `get` decoded refs), reports them gone when dropped, and asks owners where a
//!   value is ([`CoreState::begin_lookup`]: a `get`, or a task taking a borrowed ref as an
//!   argument);
//! - as an **owner**, it answers those questions when the value is ready and counts
//!   borrowers in its [`ares_ownership::OwnershipTable`].
//!
//! Messages go through the raylet of the receiver's node, which says `PeerGone` when
//! the other side's connection ends: a gone owner fails lookups with `OwnerDied`, a gone
//! borrower holds nothing any more.

use std::time::Instant;

use ares_common::wire::{PeerLocation, PeerMsg, RefInValue, ToRaylet};
use ares_common::{NodeId, ObjectId, TaskError, TaskId, WorkerId};
use ares_ownership::{BorrowOutput, Location, Owner, Status};

use crate::lookups::owner_died;

use super::{CoreState, Next, Touched};

/// How an owned object's status reads to a borrower.
fn to_peer(status: Option<&Status>) -> PeerLocation {
    match status {
        Some(Status::Ready(Location::Inline(b))) => PeerLocation::Inline(b.to_vec()),
        Some(Status::Ready(Location::Stored(s))) => PeerLocation::Stored { len: s.len, nodes: s.nodes().collect() },
        Some(Status::Failed(e)) => PeerLocation::Failed((**e).clone()),
        Some(Status::Pending) | None => PeerLocation::Unknown,
    }
}

impl CoreState {
    // ------------------------------------------------------------------ borrower

    /// A borrowed ref to `id`, owned by `owner`, was decoded here: one more handle
    /// family. `addr` is where the owner's node serves other nodes, if it is another.
    pub fn add_borrowed(&mut self, id: ObjectId, owner: Owner, addr: Option<std::net::SocketAddr>) {
        if let Some(addr) = addr {
            self.raylets.learn(owner.node, addr);
        }
        self.borrowed.add_local(id, owner);
    }

    /// One handle family on the borrowed `id` fewer.
    pub fn remove_borrowed(&mut self, id: ObjectId) {
        self.borrowed.remove_local(id);
        self.flush_borrows();
    }

    /// Registers every borrowed ref the owners do not know about yet; returns whether
    /// registrations are outstanding (the caller waits with [`Self::registering`]
    /// before letting go of what kept the refs alive).
    pub fn register_borrows(&mut self) -> bool {
        let me = self.worker_id();
        for (owner, objects) in self.borrowed.take_unregistered() {
            let request = self.request_id();
            let msg = PeerMsg::AddBorrower { request, objects: objects.clone(), borrower: me };
            if self.relay(owner.node, owner.worker, msg) {
                self.registrations.insert(request, (owner, objects));
            } else {
                self.owner_node_gone(owner.node, "its node cannot be reached");
            }
        }
        self.registering()
    }

    /// Whether registrations sent by [`Self::register_borrows`] are unanswered.
    pub fn registering(&self) -> bool {
        !self.registrations.is_empty() && self.stopped.is_none()
    }

    /// A `get` of the borrowed `id` starts: asks its owner where it is (once for all
    /// concurrent readers). Returns false if `id` is not borrowed here.
    pub fn begin_lookup(&mut self, id: ObjectId) -> bool {
        let Some(owner) = self.borrowed.owner(id) else { return false };
        self.hold_lookup(id, owner);
        true
    }

    /// The answer of a lookup, once there is one.
    pub fn lookup_status(&self, id: ObjectId) -> Option<&Status> {
        self.lookups.status(id)
    }

    /// A `get` begun with [`Self::begin_lookup`] is done with the answer.
    pub fn end_lookup(&mut self, id: ObjectId) {
        self.lookups.end(id);
    }

    pub(super) fn hold_lookup(&mut self, id: ObjectId, owner: Owner) {
        if self.lookups.hold(id) {
            return;
        }
        let status = match self.stopped.clone() {
            Some(e) => Status::Failed(Box::new(e)),
            None if self.relay(owner.node, owner.worker, PeerMsg::GetLocation { object: id }) => Status::Pending,
            None => Status::Failed(Box::new(owner_died(id, owner, "its node cannot be reached"))),
        };
        self.lookups.begin(id, owner, status);
    }

    /// `ids` (a task's arguments, an ID may repeat) no longer need their lookups.
    pub(super) fn release_lookups(&mut self, ids: &[ObjectId]) {
        if self.lookups.is_empty() {
            return;
        }
        for id in ids {
            if self.table.status(*id).is_none() {
                self.end_lookup(*id);
            }
        }
    }

    /// A copy of the stored `id` was made on `node`; its owner frees it there too.
    /// A read pulled a copy of the borrowed `id` into this process's node: the copy is
    /// this process's (the pull named it its owner), deleted when it lets the ref go,
    /// and by its raylet if it dies. The owner is not told: it may not know that node,
    /// and would outlive nothing there.
    pub(super) fn borrowed_copy(&mut self, id: ObjectId) {
        if self.borrowed.owner(id).is_some() {
            self.pulled_copies.insert(id);
        }
    }

    /// Reports dropped borrowed refs to their owners (one message per owner).
    pub(super) fn flush_borrows(&mut self) {
        if !self.pulled_copies.is_empty() {
            let dropped: Vec<ObjectId> =
                self.pulled_copies.iter().filter(|id| self.borrowed.owner(**id).is_none()).copied().collect();
            if !dropped.is_empty() {
                for id in &dropped {
                    self.pulled_copies.remove(id);
                }
                self.send_raylet(ToRaylet::DropCopies { object_ids: dropped });
            }
        }
        let mut gone: Vec<(Owner, Vec<ObjectId>)> = Vec::new();
        while let Some(BorrowOutput::Removed { owner, id }) = self.borrowed.poll() {
            match gone.iter_mut().find(|(o, _)| *o == owner) {
                Some((_, ids)) => ids.push(id),
                None => gone.push((owner, vec![id])),
            }
        }
        for (owner, objects) in gone {
            self.relay(owner.node, owner.worker, PeerMsg::RefRemoved { objects });
        }
    }

    fn on_location(&mut self, now: Instant, object: ObjectId, location: PeerLocation) {
        if let Some(answer) = self.lookups.answered(object, location) {
            self.lookup_done(now, object, answer.err());
        }
    }

    /// A lookup was answered: tasks waiting on it go on (or fail with `failed`).
    fn lookup_done(&mut self, now: Instant, object: ObjectId, failed: Option<TaskError>) {
        self.changed = true;
        let waiters = self.tasks.take_waiters(object);
        match failed {
            Some(e) => {
                for tid in waiters {
                    self.fail_task(tid, e.clone());
                }
            }
            None => {
                let mut touched = Touched::default();
                for tid in waiters {
                    self.arg_ready(tid, &mut touched);
                }
                self.dispatch_touched(now, touched);
            }
        }
    }

    /// Owners matching `gone` are gone: their refs are orphaned, lookups of them fail
    /// with `OwnerDied`, their registrations are dropped.
    pub(super) fn owners_gone(&mut self, gone: impl Fn(&Owner) -> bool, why: &str) {
        let orphaned = self.borrowed.orphan(&gone);
        if !orphaned.is_empty() {
            // Copies this process pulled into its node go with their owner (that node
            // may never have known the owner, so would keep them).
            self.send_raylet(ToRaylet::DeleteObjects { object_ids: orphaned });
        }
        self.registrations.retain(|_, (o, _)| !gone(o));
        for (id, e) in self.lookups.owners_gone(&gone, why) {
            for tid in self.tasks.take_waiters(id) {
                self.fail_task(tid, e.clone());
            }
        }
        self.changed = true;
    }

    /// Every owner on `node` is gone (the node died, or its raylet cannot be reached).
    pub(super) fn owner_node_gone(&mut self, node: NodeId, why: &str) {
        self.owners_gone(|o| o.node == node, why);
    }

    // ------------------------------------------------------------------ owner

    /// Answers the borrowers waiting for objects that are no longer pending.
    pub(super) fn answer_locations(&mut self) {
        let ready: Vec<ObjectId> = self
            .location_waiters
            .keys()
            .filter(|id| !matches!(self.table.status(**id), Some(Status::Pending)))
            .copied()
            .collect();
        for object in ready {
            let location = to_peer(self.table.status(object));
            for (worker, via) in self.location_waiters.remove(&object).unwrap_or_default() {
                self.relay(via, worker, PeerMsg::Location { object, location: location.clone() });
            }
        }
    }

    // ------------------------------------------------------------------ both

    /// A message relayed from core worker `from` by the raylet of node `via`.
    pub(super) fn on_relayed(&mut self, now: Instant, via: NodeId, from: WorkerId, msg: PeerMsg) {
        match msg {
            PeerMsg::GetLocation { object } => match self.table.status(object) {
                Some(Status::Pending) => self.location_waiters.entry(object).or_default().push((from, via)),
                status => {
                    let location = to_peer(status);
                    self.relay(via, from, PeerMsg::Location { object, location });
                }
            },
            PeerMsg::AddBorrower { request, objects, borrower } => {
                let missing = objects.into_iter().filter(|id| !self.table.add_borrower(*id, borrower)).collect();
                self.relay(via, from, PeerMsg::BorrowersAdded { request, missing });
            }
            PeerMsg::RefRemoved { objects } => {
                for id in objects {
                    self.table.remove_borrower(id, from);
                }
            }
            PeerMsg::ActorsLent { task, actors } => self.on_actors_lent(from, via, task, actors),
            PeerMsg::ActorsHeld { actors } => self.on_actors_held(from, actors),
            PeerMsg::Location { object, location } => self.on_location(now, object, location),
            PeerMsg::BorrowersAdded { request, missing } => {
                if let Some((_, ids)) = self.registrations.remove(&request) {
                    self.borrowed.registered(&ids, &missing);
                    self.changed = true;
                }
            }
        }
    }

    /// The raylet says core worker `worker` is gone.
    pub(super) fn on_peer_gone(&mut self, worker: WorkerId) {
        // As an owner: a dead borrower holds nothing.
        self.table.remove_borrower_everywhere(worker);
        if !self.lent_actors.is_empty() {
            self.lent_to_gone(worker);
        }
        for waiters in self.location_waiters.values_mut() {
            waiters.retain(|(w, _)| *w != worker);
        }
        self.location_waiters.retain(|_, w| !w.is_empty());
        // As a borrower: its objects cannot be found any more.
        self.owners_gone(|o| o.worker == worker, "its process exited or died");
    }

    /// Sends `msg` to core worker `to` through the raylet of `node`. Returns false if
    /// that node's raylet cannot be reached from here.
    pub(super) fn relay(&mut self, node: NodeId, to: WorkerId, msg: PeerMsg) -> bool {
        let msg = ToRaylet::Relay { to, msg };
        if node == self.node() {
            self.send_raylet(msg);
            return true;
        }
        if !self.raylets.reachable(node) {
            return false;
        }
        self.send_to(Some(node), msg);
        true
    }

    /// The task `tid` no longer waits for one of its arguments.
    pub(super) fn arg_ready(&mut self, tid: TaskId, touched: &mut Touched) {
        match self.tasks.resolved_one(tid) {
            Some(Next::Merge) => self.emit_gathers(tid),
            Some(Next::Queue) => self.enqueue_ready(tid, touched),
            None => {}
        }
    }

    /// Refs inside the value of the owned object `outer` stay alive while it does: owned
    /// ones by its contained-in count, borrowed ones held by this process (registered
    /// with their owners as any borrowed ref).
    pub(super) fn hold_contained(&mut self, outer: ObjectId, refs: &[RefInValue]) {
        let me = self.worker_id();
        let owned: Vec<ObjectId> = refs.iter().filter(|r| r.owner == me).map(|r| r.id).collect();
        if !owned.is_empty() {
            self.table.add_contained(outer, &owned);
        }
        let mut held = Vec::new();
        for r in refs.iter().filter(|r| r.owner != me) {
            if let Some(addr) = r.home {
                self.raylets.learn(r.node, addr);
            }
            self.borrowed.add_contained(r.id, Owner { worker: r.owner, node: r.node });
            held.push(r.id);
        }
        if !held.is_empty() {
            if self.table.tracks(outer) {
                self.contained_borrowed.entry(outer).or_default().extend(held);
            } else {
                for id in held {
                    self.borrowed.remove_contained(id);
                }
            }
        }
    }

    /// Task `tid` returned values holding `refs`: each return object holds them. Their
    /// owners already count this process (the worker saw to it before replying); it
    /// registers too, so that an owner learns of this process's death.
    pub(super) fn hold_returned(&mut self, tid: TaskId, refs: &[RefInValue]) {
        let n = self.tasks.get(&tid).map_or(1, |t| t.num_returns);
        for r in super::returns_of(tid, n) {
            if self.table.tracks(r) {
                self.hold_contained(r, refs);
            }
        }
        self.register_borrows();
    }

    /// This worker's task returns values holding `refs` to `caller`: owners must count
    /// the caller before this task's handles go. Refs this process owns count it at once;
    /// owners of borrowed ones are asked (`AddBorrower` on the caller's behalf). Returns
    /// whether answers are awaited (see [`Self::registering`]).
    pub fn lend(&mut self, caller: WorkerId, refs: &[RefInValue]) -> bool {
        let me = self.worker_id();
        let mut asks: Vec<(Owner, Vec<ObjectId>)> = Vec::new();
        for r in refs.iter().filter(|r| r.owner != caller) {
            if r.owner == me {
                self.table.add_borrower(r.id, caller);
                continue;
            }
            let owner = Owner { worker: r.owner, node: r.node };
            match asks.iter_mut().find(|(o, _)| *o == owner) {
                Some((_, ids)) => ids.push(r.id),
                None => asks.push((owner, vec![r.id])),
            }
        }
        for (owner, objects) in asks {
            let request = self.request_id();
            let msg = PeerMsg::AddBorrower { request, objects: objects.clone(), borrower: caller };
            if self.relay(owner.node, owner.worker, msg) {
                self.registrations.insert(request, (owner, objects));
            }
        }
        self.registering()
    }
}
