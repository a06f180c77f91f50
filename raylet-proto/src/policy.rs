//! The lease policy: resource accounting, the lease queue and the worker pool's size.
//! A pure state machine: events in, [`LeaseOutput`]s out, no IO and no clock.
//!
//! ```text
//!  request ──infeasible──▶ LeaseOutput::Infeasible
//!     │
//!     ▼
//!  queued ──(fits available, idle worker)──▶ leased ──return──▶ worker idle, resources back
//!     │          (fits, no idle worker) ──▶ LeaseOutput::StartWorker (up to max_workers)
//!     └──cancel / client gone──▶ dropped
//! ```
//!
//! A request is *infeasible* when the node's total resources could never hold it; it is
//! answered at once instead of waiting forever. Requests are granted in arrival order
//! among those that fit, so a large request does not block smaller ones behind it.
//!
//! A leased worker whose task blocks in `get` or `wait` gives its resources back until it
//! continues (as Ray's workers do), and the pool may start a worker beyond its size for
//! each blocked one, so a tree of nested tasks deeper than the CPU count completes. When
//! it continues it takes them again even if that oversubscribes the node for a while:
//! what it takes beyond what is free is owed (`debt`) and paid back from the next
//! resources that come free.

use ares_common::RequestId;
use std::collections::VecDeque;

use ares_common::det::{DetMap, DetSet};
use ares_common::error::TaskError;
use ares_common::{LeaseId, ResourceSet, WorkerId};

use ares_common::ClientId;

/// What the driver of the policy must do.
#[derive(Debug, PartialEq)]
pub enum LeaseOutput {
    /// Tell `client` its request was granted.
    Grant {
        /// Who asked.
        client: ClientId,
        /// Their request.
        request_id: RequestId,
        /// The new lease.
        lease_id: LeaseId,
        /// The leased worker.
        worker: WorkerId,
    },
    /// Tell `client` its request can never be granted.
    Infeasible {
        /// Who asked.
        client: ClientId,
        /// Their request.
        request_id: RequestId,
        /// The typed error to deliver.
        error: TaskError,
    },
    /// Start one more worker process.
    StartWorker,
    /// Kill and reap this worker: it may still run work of a client that is gone.
    ReapWorker(WorkerId),
}

/// The holder of detached actors' leases: the node itself, which never disconnects.
pub const NODE_CLIENT: ClientId = ClientId(u64::MAX);

/// Consecutive failed worker starts after which queued requests are failed.
pub const MAX_START_FAILURES: u32 = 5;
#[derive(Debug)]
struct Request {
    client: ClientId,
    request_id: RequestId,
    shape: ResourceSet,
    dedicated: bool,
}

#[derive(Debug)]
struct Lease {
    client: ClientId,
    worker: WorkerId,
    shape: ResourceSet,
    /// Its task waits in `get` or `wait`; its resources are lent out meanwhile.
    blocked: bool,
}

/// The lease policy of one node.
#[derive(Debug)]
pub struct LeasePolicy {
    total: ResourceSet,
    available: ResourceSet,
    queue: VecDeque<Request>,
    leases: DetMap<LeaseId, Lease>,
    idle: VecDeque<WorkerId>,
    /// Workers that left the pool to host an actor; `live` does not count them.
    dedicated: DetSet<WorkerId>,
    live: usize,
    starting: usize,
    max_workers: usize,
    next_lease: u64,
    start_failures: u32,
    /// Leases whose task is blocked: the pool may have that many workers more.
    blocked: usize,
    /// Resources taken back by unblocked tasks beyond what was free.
    debt: ResourceSet,
}

impl LeasePolicy {
    /// A node with `total` resources and at most `max_workers` worker processes.
    pub fn new(total: ResourceSet, max_workers: usize) -> Self {
        LeasePolicy {
            available: total.clone(),
            total,
            queue: VecDeque::new(),
            leases: DetMap::default(),
            idle: VecDeque::new(),
            dedicated: DetSet::default(),
            live: 0,
            starting: 0,
            max_workers: max_workers.max(1),
            next_lease: 1,
            start_failures: 0,
            blocked: 0,
            debt: ResourceSet::new(),
        }
    }

    /// The node's total resources.
    pub fn total(&self) -> &ResourceSet {
        &self.total
    }

    /// Lease requests waiting for resources or a worker.
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    /// The queued requests grouped by shape, most numerous first (ties in order of
    /// arrival), at most `limit` groups.
    pub fn demands(&self, limit: usize) -> Vec<ares_common::wire::Demand> {
        let mut groups: Vec<ares_common::wire::Demand> = Vec::new();
        for r in &self.queue {
            match groups.iter_mut().find(|d| d.shape == r.shape && d.actor == r.dedicated) {
                Some(d) => d.count += 1,
                None => groups.push(ares_common::wire::Demand { shape: r.shape.clone(), actor: r.dedicated, count: 1 }),
            }
        }
        // A stable sort keeps arrival order among equal counts.
        groups.sort_by_key(|d| std::cmp::Reverse(d.count));
        groups.truncate(limit);
        groups
    }

    /// Resources not held by leases.
    pub fn available(&self) -> &ResourceSet {
        &self.available
    }

    /// Whether `worker` is currently leased.
    pub fn is_leased(&self, worker: WorkerId) -> bool {
        self.leases.values().any(|l| l.worker == worker)
    }

    /// Starts the worker pool at its full size, so the first tasks do not wait for
    /// process start-up (Ray prestarts one worker per CPU too).
    pub fn prestart(&mut self) -> Vec<LeaseOutput> {
        let n = self.max_workers.saturating_sub(self.live + self.starting);
        self.starting += n;
        (0..n).map(|_| LeaseOutput::StartWorker).collect()
    }

    /// A client asks for a lease of `shape`; a `dedicated` lease's worker hosts an actor
    /// and leaves the pool for good (a replacement may be started beyond `max_workers`).
    pub fn request(
        &mut self,
        client: ClientId,
        request_id: RequestId,
        shape: ResourceSet,
        dedicated: bool,
    ) -> Vec<LeaseOutput> {
        if !shape.is_subset_of(&self.total) {
            let error = TaskError::Infeasible {
                requested: shape.to_string(),
                available: self.total.to_string(),
                missing: shape.shortfall(&self.total).to_string(),
            };
            return vec![LeaseOutput::Infeasible { client, request_id, error }];
        }
        self.queue.push_back(Request { client, request_id, shape, dedicated });
        self.schedule()
    }

    /// A client withdraws requests it no longer needs.
    pub fn cancel(&mut self, client: ClientId, request_ids: &[RequestId]) {
        self.queue.retain(|r| !(r.client == client && request_ids.contains(&r.request_id)));
    }

    /// `client` gives a lease back; its worker is idle again unless `worker_broken`, in
    /// which case it is reaped. Leases the client does not hold are ignored.
    pub fn return_lease(&mut self, client: ClientId, lease_id: LeaseId, worker_broken: bool) -> Vec<LeaseOutput> {
        if self.leases.get(&lease_id).is_none_or(|l| l.client != client) {
            return Vec::new();
        }
        let lease = self.leases.remove(&lease_id).expect("checked");
        self.release(&lease);
        let mut out = Vec::new();
        if worker_broken || self.dedicated.contains(&lease.worker) {
            out.push(LeaseOutput::ReapWorker(lease.worker));
        } else {
            self.idle.push_back(lease.worker);
        }
        out.extend(self.schedule());
        out
    }

    /// Who holds `lease_id`, on which worker.
    pub fn lease_of(&self, lease_id: LeaseId) -> Option<(ClientId, WorkerId)> {
        self.leases.get(&lease_id).map(|l| (l.client, l.worker))
    }

    /// Hands a detached actor's lease from its owner to the node, so the owner's
    /// disconnection does not reap the worker.
    pub fn detach(&mut self, client: ClientId, lease_id: LeaseId) {
        if let Some(l) = self.leases.get_mut(&lease_id).filter(|l| l.client == client) {
            l.client = NODE_CLIENT;
        }
    }

    /// A worker process we started is ready for leases.
    pub fn worker_registered(&mut self, worker: WorkerId) -> Vec<LeaseOutput> {
        self.starting = self.starting.saturating_sub(1);
        self.start_failures = 0;
        self.live += 1;
        self.idle.push_back(worker);
        self.schedule()
    }

    /// A worker process failed to start (or died before registering). It is started
    /// again while requests wait, up to [`MAX_START_FAILURES`] failures in a row; then
    /// every queued request fails with `message`.
    pub fn worker_start_failed(&mut self, message: &str) -> Vec<LeaseOutput> {
        self.starting = self.starting.saturating_sub(1);
        self.start_failures += 1;
        if self.start_failures < MAX_START_FAILURES {
            return self.schedule();
        }
        self.start_failures = 0;
        let error = TaskError::WorkerStartFailed { message: message.to_string() };
        self.queue
            .drain(..)
            .map(|r| LeaseOutput::Infeasible { client: r.client, request_id: r.request_id, error: error.clone() })
            .collect()
    }

    /// A worker process failed to start in a way a retry would repeat: every queued
    /// request fails with `message` now.
    pub fn worker_start_failed_for_good(&mut self, message: &str) -> Vec<LeaseOutput> {
        self.start_failures = MAX_START_FAILURES - 1;
        self.worker_start_failed(message)
    }

    /// A worker process died; its lease (if any) is released.
    pub fn worker_died(&mut self, worker: WorkerId) -> Vec<LeaseOutput> {
        if !self.dedicated.remove(&worker) {
            self.live = self.live.saturating_sub(1);
        }
        self.idle.retain(|w| *w != worker);
        let held: Vec<LeaseId> = self.leases.iter().filter(|(_, l)| l.worker == worker).map(|(id, _)| *id).collect();
        for id in held {
            let lease = self.leases.remove(&id).expect("present");
            self.release(&lease);
        }
        self.schedule()
    }

    /// A client disconnected: its requests are dropped and its leases returned. Its
    /// leased workers may still be running its tasks, so they are reaped, not reused.
    pub fn client_gone(&mut self, client: ClientId) -> Vec<LeaseOutput> {
        self.queue.retain(|r| r.client != client);
        let held: Vec<LeaseId> = self.leases.iter().filter(|(_, l)| l.client == client).map(|(id, _)| *id).collect();
        let mut out = Vec::new();
        for id in held {
            let lease = self.leases.remove(&id).expect("present");
            self.release(&lease);
            out.push(LeaseOutput::ReapWorker(lease.worker));
        }
        out.extend(self.schedule());
        out
    }

    /// The task on `worker`'s lease blocked in `get` or `wait`: its resources are free
    /// until [`LeasePolicy::unblocked`].
    pub fn blocked(&mut self, worker: WorkerId) -> Vec<LeaseOutput> {
        let Some(lease) = self.leases.values_mut().find(|l| l.worker == worker && !l.blocked) else {
            return Vec::new();
        };
        lease.blocked = true;
        let shape = lease.shape.clone();
        self.blocked += 1;
        self.give_back(&shape);
        self.schedule()
    }

    /// The task on `worker`'s lease continues: it takes its resources again.
    pub fn unblocked(&mut self, worker: WorkerId) {
        let Some(lease) = self.leases.values_mut().find(|l| l.worker == worker && l.blocked) else {
            return;
        };
        lease.blocked = false;
        let shape = lease.shape.clone();
        self.blocked -= 1;
        self.debt.add(&shape.shortfall(&self.available));
        self.available.sub(&shape);
    }

    /// A lease ended: what it held comes back.
    fn release(&mut self, lease: &Lease) {
        if lease.blocked {
            self.blocked -= 1;
        } else {
            self.give_back(&lease.shape);
        }
    }

    /// Resources come free: debts are paid first.
    fn give_back(&mut self, shape: &ResourceSet) {
        self.available.add(shape);
        let pay: Vec<(String, u64)> = self
            .debt
            .iter()
            .map(|(name, owed)| (name.to_string(), owed.min(self.available.get_units(name))))
            .filter(|(_, n)| *n > 0)
            .collect();
        for (name, n) in pay {
            self.available.set_units(&name, self.available.get_units(&name) - n);
            self.debt.set_units(&name, self.debt.get_units(&name) - n);
        }
    }

    fn schedule(&mut self) -> Vec<LeaseOutput> {
        let mut out = Vec::new();
        let mut wanting_worker: usize = 0;
        let mut wanting_dedicated = 0;
        // Dedicated requests first: a worker started for an actor must not be taken by a
        // task request, or the pool would keep growing past `max_workers`.
        for dedicated in [true, false] {
            let mut i = 0;
            while i < self.queue.len() {
                if self.queue[i].dedicated != dedicated || !self.queue[i].shape.is_subset_of(&self.available) {
                    i += 1;
                    continue;
                }
                let Some(worker) = self.idle.pop_front() else {
                    wanting_worker += 1;
                    wanting_dedicated += usize::from(self.queue[i].dedicated);
                    i += 1;
                    continue;
                };
                let req = self.queue.remove(i).expect("in range");
                if req.dedicated {
                    self.dedicated.insert(worker);
                    self.live = self.live.saturating_sub(1);
                }
                self.available.sub(&req.shape);
                let lease_id = LeaseId(self.next_lease);
                self.next_lease += 1;
                self.leases.insert(lease_id, Lease { client: req.client, worker, shape: req.shape, blocked: false });
                out.push(LeaseOutput::Grant { client: req.client, request_id: req.request_id, lease_id, worker });
            }
        }
        // Actors get workers beyond the pool's size: they would otherwise starve tasks; so
        // do requests that use the resources of blocked tasks.
        let room = (self.max_workers + self.blocked).saturating_sub(self.live + self.starting) + wanting_dedicated;
        for _ in 0..wanting_worker.saturating_sub(self.starting).min(room) {
            self.starting += 1;
            out.push(LeaseOutput::StartWorker);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(n: u8) -> WorkerId {
        WorkerId([n; 16])
    }

    fn cpu(n: f64) -> ResourceSet {
        ResourceSet::new().with("CPU", n)
    }

    const C: ClientId = ClientId(1);

    #[test]
    fn grants_up_to_resources_and_starts_workers_lazily() {
        let mut p = LeasePolicy::new(cpu(2.0), 2);
        assert_eq!(p.request(C, RequestId(1), cpu(1.0), false), vec![LeaseOutput::StartWorker]);
        assert_eq!(p.request(C, RequestId(2), cpu(1.0), false), vec![LeaseOutput::StartWorker]);
        assert!(p.request(C, RequestId(3), cpu(1.0), false).is_empty(), "no third worker beyond max_workers");
        let a = p.worker_registered(w(1));
        assert!(matches!(a[..], [LeaseOutput::Grant { request_id: RequestId(1), worker, .. }] if worker == w(1)));
        let a = p.worker_registered(w(2));
        let LeaseOutput::Grant { lease_id, .. } = a[0] else { panic!() };
        assert!(p.available().get_units("CPU") == 0);
        assert!(p.return_lease(ClientId(9), lease_id, false).is_empty(), "only the holder returns a lease");
        let a = p.return_lease(C, lease_id, false);
        assert!(matches!(a[..], [LeaseOutput::Grant { request_id: RequestId(3), worker, .. }] if worker == w(2)));
    }

    #[test]
    fn a_blocked_task_lends_its_cpu_and_takes_it_back_owing_what_was_not_free() {
        let mut p = LeasePolicy::new(cpu(1.0), 1);
        assert_eq!(p.request(C, RequestId(1), cpu(1.0), false), vec![LeaseOutput::StartWorker]);
        let LeaseOutput::Grant { lease_id: first, .. } = p.worker_registered(w(1))[0] else { panic!() };
        // Its task blocks in `get`: the CPU is free and one more worker may start.
        assert!(p.request(C, RequestId(2), cpu(1.0), false).is_empty());
        assert_eq!(p.blocked(w(1)), vec![LeaseOutput::StartWorker]);
        assert_eq!(p.available(), &cpu(1.0));
        let LeaseOutput::Grant { lease_id: second, .. } = p.worker_registered(w(2))[0] else { panic!() };
        assert_eq!(p.available().get_units("CPU"), 0);
        // It continues while the second lease runs: the node is oversubscribed by one CPU.
        p.unblocked(w(1));
        assert_eq!(p.available().get_units("CPU"), 0);
        // The second lease's return pays the debt; the first's frees the CPU.
        assert!(p.return_lease(C, second, false).is_empty());
        assert_eq!(p.available().get_units("CPU"), 0, "the returned CPU paid the debt");
        assert!(p.return_lease(C, first, false).is_empty());
        assert_eq!(p.available(), &cpu(1.0));
        // A lease returned while its task is blocked gives nothing back twice.
        assert!(p.request(C, RequestId(3), cpu(1.0), false).len() == 1);
        let lease = p.leases.keys().copied().next().unwrap();
        p.blocked(p.leases[&lease].worker);
        assert_eq!(p.available(), &cpu(1.0));
        p.return_lease(C, lease, false);
        assert_eq!(p.available(), &cpu(1.0));
    }

    #[test]
    fn prestart_fills_the_pool_once() {
        let mut p = LeasePolicy::new(cpu(2.0), 2);
        assert_eq!(p.prestart(), vec![LeaseOutput::StartWorker, LeaseOutput::StartWorker]);
        assert!(p.prestart().is_empty());
        assert!(p.request(C, RequestId(1), cpu(1.0), false).is_empty(), "a starting worker will serve it");
        assert_eq!(p.worker_registered(w(1)).len(), 1);
    }

    #[test]
    fn infeasible_is_answered_at_once_and_names_what_is_missing() {
        let mut p = LeasePolicy::new(cpu(2.0), 2);
        let a = p.request(C, RequestId(7), cpu(1.0).with("GPU", 1.0), false);
        let [LeaseOutput::Infeasible { request_id: RequestId(7), error, .. }] = &a[..] else { panic!("{a:?}") };
        let msg = error.to_string();
        assert!(msg.contains("GPU: 1") && msg.contains("CPU: 2"), "{msg}");
        assert!(matches!(p.request(C, RequestId(8), cpu(3.0), false)[..], [LeaseOutput::Infeasible { .. }]));
    }

    #[test]
    fn dead_workers_and_gone_clients_release_everything() {
        let mut p = LeasePolicy::new(cpu(2.0), 2);
        p.worker_registered(w(1));
        p.worker_registered(w(2));
        p.request(C, RequestId(1), cpu(1.0), false);
        p.request(ClientId(2), RequestId(2), cpu(1.0), false);
        assert!(p.is_leased(w(1)));
        let a = p.worker_died(w(1));
        assert!(a.is_empty());
        assert_eq!(p.available().get_units("CPU"), 10_000);
        // A new request needs a replacement worker.
        assert_eq!(p.request(C, RequestId(3), cpu(1.0), false), vec![LeaseOutput::StartWorker]);
        assert_eq!(p.client_gone(ClientId(2)), vec![LeaseOutput::ReapWorker(w(2))]);
        p.client_gone(C);
        assert_eq!(p.available(), &cpu(2.0));
    }

    #[test]
    fn failed_starts_are_retried_then_fail_the_queue() {
        let mut p = LeasePolicy::new(cpu(2.0), 1);
        assert_eq!(p.request(C, RequestId(1), cpu(1.0), false), vec![LeaseOutput::StartWorker]);
        for _ in 1..MAX_START_FAILURES {
            assert_eq!(p.worker_start_failed("exec failed"), vec![LeaseOutput::StartWorker]);
        }
        let a = p.worker_start_failed("exec failed");
        let [LeaseOutput::Infeasible { request_id: RequestId(1), error, .. }] = &a[..] else { panic!("{a:?}") };
        assert!(error.to_string().contains("exec failed"));
    }

    #[test]
    fn dedicated_workers_leave_the_pool_and_detached_leases_survive_their_client() {
        let mut p = LeasePolicy::new(cpu(1.0), 1);
        p.worker_registered(w(1));
        let a = p.request(C, RequestId(1), cpu(0.0), true);
        let [LeaseOutput::Grant { lease_id, .. }] = a[..] else { panic!("{a:?}") };
        // The pool is below its size again, so a task gets a fresh worker.
        assert_eq!(p.request(C, RequestId(2), cpu(1.0), false), vec![LeaseOutput::StartWorker]);
        // A second actor may exceed max_workers.
        assert_eq!(p.request(C, RequestId(3), cpu(0.0), true), vec![LeaseOutput::StartWorker]);
        p.detach(C, lease_id);
        let gone = p.client_gone(C);
        assert!(!gone.contains(&LeaseOutput::ReapWorker(w(1))), "{gone:?}");
        assert!(p.worker_died(w(1)).is_empty());
        assert_eq!(p.live, 0);
    }

    #[test]
    fn a_worker_started_for_an_actor_goes_to_the_actor() {
        let mut p = LeasePolicy::new(cpu(4.0), 1);
        p.worker_registered(w(1));
        p.request(C, RequestId(1), cpu(1.0), false);
        // A task request waits behind the pool's size; the actor gets a worker of its own.
        assert!(p.request(C, RequestId(2), cpu(1.0), false).is_empty());
        assert_eq!(p.request(C, RequestId(3), cpu(0.0), true), vec![LeaseOutput::StartWorker]);
        let a = p.worker_registered(w(2));
        assert!(matches!(a[..], [LeaseOutput::Grant { request_id: RequestId(3), .. }]), "{a:?}");
        assert_eq!(p.live, 1);
    }

    #[test]
    fn big_request_does_not_block_small_ones() {
        let mut p = LeasePolicy::new(cpu(2.0), 2);
        p.worker_registered(w(1));
        p.worker_registered(w(2));
        let a = p.request(C, RequestId(1), cpu(1.0), false);
        assert_eq!(a.len(), 1);
        assert!(p.request(C, RequestId(2), cpu(2.0), false).is_empty());
        assert_eq!(p.request(C, RequestId(3), cpu(1.0), false).len(), 1);
        p.cancel(C, &[RequestId(2)]);
        assert!(p.queue.is_empty());
    }
}
