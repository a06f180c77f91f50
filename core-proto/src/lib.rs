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
//!   return of leases idle for [`IDLE_LEASE_TIMEOUT`] or past their [`LEASE_TENURE`];
//! - actors (see [`actors`]): per-actor in-order queues, construction, restarts and
//!   holds, on the same connections as leased workers;
//! - borrowing (see [`borrow`]): refs to other processes' objects, asked of and
//!   registered with their owners, and the owner's answers to its borrowers.
//!
//! It is composed of sub-machines, each a struct of its own with its own tests: `pending`
//! (unfinished tasks and which objects each waits for), `leases` (queues, lease requests,
//! leased workers' pipelines: where a task's push goes), `raylets` (other nodes'
//! raylets), `callers` (actors' call queues and connections). `CoreState` decides what a
//! push carries and what an answer means; its `impl` is split by concern: `submit`
//! (arguments, queuing, pushes, failing), `complete` (replies, retries), `actors`,
//! `borrow`, `lineage`.
//!
//! Task IDs are given to it (see [`TaskScope`]): a nested task's ID derives from the
//! running task's ID and its submission counter, so re-running a task makes the same IDs.

mod actors;
mod borrow;
mod callers;
mod complete;
mod interface;
mod leases;
mod lineage;
mod lookups;
mod pending;
mod raylets;
mod submit;
mod tasks;
#[cfg(test)]
mod tests;
mod worker_args;

pub use actors::{ActorSpawn, Borrow};
use callers::Callers;
use interface::inline_location;
pub use interface::{Combine, ConnId, Home, InlineRule, Output, ReadPlan, StateConfig, TaskScope, plan_read};
pub use leases::{IDLE_LEASE_TIMEOUT, LEASE_TENURE, MAX_PENDING_LEASE_REQUESTS, SchedKey};
use leases::{Leases, Spillback};
use lookups::Lookups;
use pending::{Next, Pending};
use raylets::Raylets;
pub use raylets::UNREACHABLE_HOLD;
pub use tasks::{Arg, Submit, Target};
use tasks::{Slot, Task, Unready, Values, args_node, encode_push, resolve, resolve_now, returns_of, stored_returns};
pub use worker_args::{ArgFailure, ArgStore, PinnedArgs, pin_args};

use ares_common::RequestId;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ares_common::codec::Bytes;
use ares_common::det::DetMap;
use ares_common::wire::{FromRaylet, FromWorker, Outcome, RefInValue, ReturnValue, TaskKind, ToRaylet, WireArg};
use ares_common::{ActorId, Endpoint, LeaseId, NodeId, ObjectId, ResourceSet, Strategy, TaskError, TaskId, WorkerId};
use ares_ownership::{BorrowTable, Location, Output as OwnershipOutput, Owner, OwnershipTable, Status};

/// A raylet request this state sent and awaits the answer to.
/// (Lease requests for queues are [`Leases`]'.)
enum Request {
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

/// The state of one core worker. See the module docs.
pub struct CoreState {
    cfg: StateConfig,
    table: OwnershipTable,
    root: TaskScope,
    /// Tasks submitted and not finished, and what each waits for.
    tasks: Pending,
    /// Queues of ready tasks and the workers leased for them.
    leases: Leases,
    /// This node's raylet and the other nodes' this process talks to.
    raylets: Raylets,
    requests: DetMap<RequestId, Request>,
    /// Actors this process calls (owned or borrowed), and the connections to them.
    callers: Callers,
    /// Refs this process holds to objects other processes own.
    borrowed: BorrowTable,
    /// Borrowed objects whose location was asked of their owners.
    lookups: Lookups,
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
        let (max_in_flight, here) = (cfg.max_in_flight, cfg.address.node);
        CoreState {
            root: TaskScope::new(cfg.root),
            cfg,
            table: OwnershipTable::new(),
            tasks: Pending::default(),
            leases: Leases::new(max_in_flight),
            raylets: Raylets::new(here),
            requests: DetMap::default(),
            callers: Callers::default(),
            borrowed: BorrowTable::new(),
            lookups: Lookups::default(),
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
        let retries = self.callers.next_retry();
        retries.into_iter().chain(self.leases.next_timer()).min()
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
        self.callers.conn_count() + self.leases.len()
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
        self.raylets.lost(node, now);
        self.actor_home_lost(node, reason);
        self.owner_node_gone(node, reason);
        for key in self.leases.forget_requests_at(node) {
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
        for conn in self.leases.conns_on(node) {
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
        self.raylets.send(node, msg, &mut self.out);
    }

    fn on_raylet(&mut self, now: Instant, from: Option<NodeId>, msg: FromRaylet) {
        match msg {
            FromRaylet::LeaseGranted { request_id, lease_id, worker_addr, worker_id } => {
                if let Some(shape) = self.leases.take_request(request_id) {
                    self.on_lease_granted(now, shape, from, lease_id, worker_addr);
                } else {
                    match self.requests.remove(&request_id) {
                        Some(Request::ActorLease(a)) if from.is_none() => {
                            self.on_actor_lease(a, lease_id, worker_id, worker_addr)
                        }
                        // Withdrawn after the grant was sent (or granted after a stop):
                        // nothing was pushed to the worker, so it goes back to the pool.
                        _ => self.send_to(from, ToRaylet::ReturnLease { lease_id, worker_broken: false }),
                    }
                }
            }
            FromRaylet::LeaseSpillback { request_id, node, addr } => {
                let unreachable = self.raylets.recently_unreachable(node, now);
                match self.leases.spillback(request_id, node, unreachable, now) {
                    Spillback::Unknown => return,
                    // Sent to a node we just failed to reach: its queue asks again later.
                    Spillback::HeldBack => {
                        self.timer_changed = true;
                        return;
                    }
                    Spillback::Ask(msg) => {
                        self.raylets.set(node, addr);
                        self.send_to(Some(node), *msg);
                    }
                }
            }
            FromRaylet::LeaseInfeasible { request_id, error } => {
                if let Some(shape) = self.leases.take_request(request_id) {
                    for tid in self.leases.drain_queue(&shape) {
                        self.fail_task(tid, error.clone());
                    }
                } else if let Some(Request::ActorLease(a)) = self.requests.remove(&request_id) {
                    self.actor_infeasible(a, error);
                }
            }
            FromRaylet::ObjectsSpilled { objects } => self.on_spilled(objects),
            FromRaylet::NodeDied { node } => self.on_node_died(now, node),
            FromRaylet::ShuttingDown { reason } if from.is_none() => self.raylets.said_goodbye(reason),
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
        shape: SchedKey,
        node: Option<NodeId>,
        lease_id: LeaseId,
        endpoint: Endpoint,
    ) {
        if !self.leases.wants_worker(&shape) || self.stopped.is_some() {
            self.send_to(node, ToRaylet::ReturnLease { lease_id, worker_broken: false });
            return;
        }
        let conn = self.conn_id();
        self.out.push_back(Output::Connect { conn, endpoint: endpoint.clone() });
        self.leases.add(conn, shape, node, lease_id, endpoint, now);
    }

    /// The driver opened `conn` (see [`Output::Connect`]): pushes may go.
    pub fn handle_connected(&mut self, now: Instant, conn: ConnId) {
        if let Some(shape) = self.leases.connected(conn, now) {
            self.dispatch(now, &shape);
        } else if let Some(c) = self.callers.conn_mut(conn) {
            c.connected = true;
            let (a, owned_lease) = (c.actor, c.lease.is_some());
            self.actor_connected(now, a, conn, owned_lease);
        }
        self.flush_frees();
    }

    /// The driver could not open `conn`; nothing was sent on it.
    pub fn handle_connect_failed(&mut self, now: Instant, conn: ConnId, reason: &str) {
        if let Some(endpoint) = self.leases.endpoint(conn) {
            tracing::debug!("could not connect to {endpoint}: {reason}");
            // Nothing was pushed on it, so losing it costs no task an attempt.
            self.on_lease_lost(now, conn, reason);
        } else if let Some(c) = self.callers.remove_conn(conn) {
            tracing::debug!("could not connect to {}: {reason}", c.endpoint);
            self.actor_connect_failed(now, c.actor, c.lease, &c.endpoint, reason)
        }
        self.flush_frees();
    }

    /// Replies arrived on `conn`.
    pub fn handle_replies(&mut self, now: Instant, conn: ConnId, replies: Vec<FromWorker>) {
        if self.leases.has(conn) {
            self.on_lease_replies(now, conn, replies);
        } else if self.callers.conn(conn).is_some() {
            self.on_actor_replies(now, conn, replies);
        } else {
            // Forgotten (closed by us, or its actor died): large results it made are in
            // the store and nobody will read them (copies of this attempt on other nodes
            // go with the task's `stale_on`).
            let ids = replies
                .into_iter()
                .flat_map(|FromWorker::Done { task_id, outcome, .. }| self.unheld_returns(task_id, &outcome, None))
                .collect();
            self.delete_stale(ids);
        }
        self.flush_frees();
    }

    /// `conn` ended (its worker died or could not be reached).
    pub fn handle_conn_closed(&mut self, now: Instant, conn: ConnId, reason: &str) {
        if self.leases.has(conn) {
            self.on_lease_lost(now, conn, reason);
        } else {
            self.on_actor_conn_lost(now, conn, reason);
        }
        self.flush_frees();
    }

    /// Returns leases idle for [`IDLE_LEASE_TIMEOUT`] and runs due actor lookups.
    pub fn handle_timeout(&mut self, now: Instant) {
        for (id, ended) in self.leases.expire_idle(now) {
            self.give_back(now, id, ended);
        }
        self.run_due_lookups(now);
        for key in self.leases.due_backoffs(now) {
            self.dispatch(now, &key);
        }
        self.raylets.expire(now);
        self.flush_frees();
    }

    /// Closes and returns an idle lease; tasks still queued for its key (after a tenure
    /// ended, say) ask again.
    pub(crate) fn give_back(&mut self, now: Instant, id: ConnId, ended: leases::Ended) {
        self.out.push_back(Output::Close(id));
        self.send_to(ended.node, ToRaylet::ReturnLease { lease_id: ended.lease_id, worker_broken: false });
        self.dispatch(now, &ended.key);
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
        let mut waiting = self.leases.withdraw_requests();
        let actor_leases = self.requests.iter().filter(|(_, r)| matches!(r, Request::ActorLease(_))).map(|(id, _)| *id);
        match waiting.iter_mut().find(|(n, _)| n.is_none()) {
            Some((_, ids)) => ids.extend(actor_leases),
            None => waiting.push((None, actor_leases.collect())),
        }
        waiting.retain(|(_, ids)| !ids.is_empty());
        for (node, request_ids) in waiting {
            self.send_to(node, ToRaylet::CancelLeaseRequests { request_ids });
        }
        for tid in self.tasks.ids() {
            self.fail_task(tid, error.clone());
        }
        for (id, lease_id, node) in self.leases.stop() {
            self.out.push_back(Output::Close(id));
            self.send_to(node, ToRaylet::ReturnLease { lease_id, worker_broken: false });
        }
        for id in self.callers.clear() {
            self.out.push_back(Output::Close(id));
        }
        self.requests.clear();
        self.registrations.clear();
        self.lookups.fail_pending(&error);
        self.location_waiters.clear();
        self.lineage.clear();
        self.flush_frees();
    }
}
