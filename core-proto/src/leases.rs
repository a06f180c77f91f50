//! The workers a core worker leases for its tasks: one queue of ready tasks per
//! [`SchedKey`], the lease requests out for it, the leased workers' connections with
//! what is pipelined on each, and how deep to pipeline. A sub-machine of
//! [`crate::CoreState`], in the manner of quinn-proto's stream state under its
//! `Connection`: the core state decides *what* a push carries (it keeps the tasks and
//! their arguments' values); this decides *where* it goes and when to ask for workers.
//!
//! **Must not:** read task records or argument values (callers pass what it needs);
//! do IO.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use ares_common::det::DetMap;
use ares_common::wire::ToRaylet;
use ares_common::{Endpoint, LeaseId, NodeId, RequestId, ResourceSet, Strategy, TaskId};

use crate::raylets::Raylets;
use crate::{ConnId, Output};

/// Lease requests outstanding per shape at most (Ray uses 10 per scheduling class).
pub const MAX_PENDING_LEASE_REQUESTS: usize = 10;
/// Target time of queued work per worker: pipelining deeper than this only unbalances.
const PIPELINE_TARGET: Duration = Duration::from_micros(500);
/// Idle leases are returned after this long.
pub const IDLE_LEASE_TIMEOUT: Duration = Duration::from_millis(100);
/// A lease held this long takes no new tasks and goes back once those it has are done:
/// an owner that keeps its queue full must not keep a worker others wait for forever.
/// (Ray gives a lease back whenever its owner's queue runs dry; the idle timeout above
/// keeps it across short gaps, so a lease is retired by age instead.) Its key asks for a
/// new one at once, behind the requests already waiting.
pub const LEASE_TENURE: Duration = Duration::from_secs(1);

/// The queue a task waits in for a leased worker: its resources and where it may run.
/// Leases serve one key.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SchedKey {
    pub shape: ResourceSet,
    pub strategy: Strategy,
}

#[derive(Default)]
struct Queue {
    tasks: VecDeque<TaskId>,
    leases: Vec<ConnId>,
    requests: Vec<RequestId>,
}

/// A connection to a worker leased for one key.
struct LeaseConn {
    endpoint: Endpoint,
    /// The driver reported it open; nothing is pushed before.
    connected: bool,
    in_flight: VecDeque<(TaskId, Instant)>,
    lease_id: LeaseId,
    key: SchedKey,
    /// The node whose raylet granted it (`None`: this node's).
    node: Option<NodeId>,
    last_reply: Instant,
    /// Since when it is open with nothing pipelined (`None`: busy, or still connecting).
    idle_since: Option<Instant>,
    /// When it opened (see [`LEASE_TENURE`]; a slow handshake does not count).
    opened: Instant,
}

impl LeaseConn {
    /// Starts its idle time at `now` if it is open and nothing is pipelined on it. Never
    /// while it connects: a handshake that takes longer than the idle timeout (a lost
    /// packet costs a second) must not hand the lease back with tasks queued for it.
    fn settle(&mut self, now: Instant) {
        if self.connected && self.in_flight.is_empty() && self.idle_since.is_none() {
            self.idle_since = Some(now);
        }
    }

    /// When its tenure ends: [`LEASE_TENURE`] after it opened, plus up to a quarter of it
    /// by its lease ID, so that leases granted together do not all retire together.
    fn tenure_ends(&self) -> Instant {
        let spread = LEASE_TENURE / 4;
        let jitter =
            Duration::from_micros(self.lease_id.0.wrapping_mul(0x9E37_79B9_7F4A_7C15) % spread.as_micros() as u64);
        self.opened + LEASE_TENURE + jitter
    }

    /// Whether it is past its tenure: it takes no new tasks.
    fn retiring(&self, now: Instant) -> bool {
        self.connected && now >= self.tenure_ends()
    }

    /// When it is due back: idle for the timeout, or idle past its tenure.
    fn due(&self) -> Option<Instant> {
        let idle = self.idle_since.filter(|_| self.in_flight.is_empty())?;
        Some((idle + IDLE_LEASE_TIMEOUT).min(self.tenure_ends()))
    }
}

/// A lease that ended: what to return, and the tasks that were in flight on it.
pub(crate) struct Ended {
    pub(crate) lease_id: LeaseId,
    pub(crate) key: SchedKey,
    pub(crate) node: Option<NodeId>,
    pub(crate) in_flight: Vec<TaskId>,
}

/// What a raylet's spillback of a lease request comes to.
pub(crate) enum Spillback {
    /// Not a lease request of this state (withdrawn, or an actor's).
    Unknown,
    /// The named node could not be reached lately: the request is dropped and its queue
    /// asks again once the hold is over.
    HeldBack,
    /// Ask the named node instead, with this message.
    Ask(Box<ToRaylet>),
}

/// The leased workers of a core worker (see the module docs).
pub(crate) struct Leases {
    queues: DetMap<SchedKey, Queue>,
    conns: DetMap<ConnId, LeaseConn>,
    /// Lease requests out: for which key, asked of which node (`None`: this node's).
    requests: DetMap<RequestId, (SchedKey, Option<NodeId>)>,
    /// Queues that ask for no lease before this time (they were sent to an unreachable
    /// node).
    backoff: DetMap<SchedKey, Instant>,
    /// Moving average of the time a worker spends per task, in seconds.
    avg_task_secs: Option<f64>,
    max_in_flight: u32,
}

impl Leases {
    /// No leases; pipelines at most `max_in_flight` deep per worker.
    pub(crate) fn new(max_in_flight: u32) -> Self {
        Leases {
            queues: DetMap::default(),
            conns: DetMap::default(),
            requests: DetMap::default(),
            backoff: DetMap::default(),
            avg_task_secs: None,
            max_in_flight,
        }
    }

    /// Queues ready task `tid` under `key`.
    pub(crate) fn enqueue(&mut self, key: &SchedKey, tid: TaskId) {
        match self.queues.get_mut(key) {
            Some(q) => q.tasks.push_back(tid),
            None => self.queues.entry(key.clone()).or_default().tasks.push_back(tid),
        }
    }

    /// Whether `key` has a queue (it had tasks once).
    pub(crate) fn has_queue(&self, key: &SchedKey) -> bool {
        self.queues.contains_key(key)
    }

    /// Puts tasks back at the front of `key`'s queue, in order (retries).
    pub(crate) fn requeue_front(&mut self, key: &SchedKey, tids: Vec<TaskId>) {
        if let Some(q) = self.queues.get_mut(key) {
            for tid in tids.into_iter().rev() {
                q.tasks.push_front(tid);
            }
        }
    }

    /// Empties `key`'s queue (its tasks cannot run).
    pub(crate) fn drain_queue(&mut self, key: &SchedKey) -> Vec<TaskId> {
        self.queues.get_mut(key).map(|q| q.tasks.drain(..).collect()).unwrap_or_default()
    }

    /// How many tasks to pipeline per worker: about [`PIPELINE_TARGET`] of work.
    fn depth(&self) -> usize {
        match self.avg_task_secs {
            None => 1,
            Some(avg) => {
                ((PIPELINE_TARGET.as_secs_f64() / avg.max(1e-7)) as usize).clamp(1, self.max_in_flight as usize)
            }
        }
    }

    /// Takes queued tasks of `key` while a leased worker can take more and hands each,
    /// with the connection it goes to, to `push`, which says whether it was pushed (a
    /// task it skips is out of the queue all the same). Tasks that may run anywhere also
    /// use idle workers leased for the same resources under another strategy, rather
    /// than wait for a CPU those leases hold (a small combine behind a node's stream of
    /// placed chunks); those are looked for only when none of the queue's own leases
    /// can take more.
    pub(crate) fn push_queued(&mut self, key: &SchedKey, now: Instant, mut push: impl FnMut(ConnId, TaskId) -> bool) {
        let depth = self.depth();
        let anywhere = matches!(key.strategy, Strategy::Default);
        let Some(q) = self.queues.get_mut(key) else {
            return;
        };
        while !q.tasks.is_empty() {
            let conns = &self.conns;
            let own = q
                .leases
                .iter()
                .filter(|c| conns[*c].connected && conns[*c].in_flight.len() < depth && !conns[*c].retiring(now))
                .min_by_key(|c| conns[*c].in_flight.len());
            let borrowable = |c: &LeaseConn| {
                c.key != *key && c.key.shape == key.shape && c.connected && c.in_flight.is_empty() && !c.retiring(now)
            };
            let idle = || anywhere.then(|| conns.iter().find(|(_, c)| borrowable(c)).map(|(id, _)| id)).flatten();
            let Some(&conn_id) = own.or_else(idle) else {
                break;
            };
            let tid = q.tasks.pop_front().expect("non-empty");
            if push(conn_id, tid) {
                let conn = self.conns.get_mut(&conn_id).expect("listed lease exists");
                conn.in_flight.push_back((tid, now));
                conn.idle_since = None;
            }
        }
        for c in &q.leases {
            self.conns.get_mut(c).expect("listed lease exists").settle(now);
        }
    }

    /// Asks for leases while `key` has more queued tasks than requests out (up to
    /// [`MAX_PENDING_LEASE_REQUESTS`]), unless it is held back. A soft preference (given,
    /// or `arg_node`: the node holding most of the first queued task's argument bytes,
    /// as Ray's locality does) is asked of that node directly, which queues it while it
    /// can ever hold it: the tasks wait for their data's node rather than run elsewhere
    /// on a stale view of free CPUs. A node whose address is not known yet is reached
    /// through this node's spillback.
    pub(crate) fn request_leases(
        &mut self,
        key: &SchedKey,
        now: Instant,
        raylets: &Raylets,
        arg_node: impl FnOnce(TaskId) -> Option<NodeId>,
        next_request: &mut RequestId,
        out: &mut VecDeque<Output>,
    ) {
        let Some(q) = self.queues.get_mut(key) else {
            return;
        };
        let here = raylets.here();
        let held = self.backoff.get(key).is_some_and(|t| now < *t);
        let want = if held { 0 } else { q.tasks.len().min(MAX_PENDING_LEASE_REQUESTS) };
        if q.requests.len() >= want {
            return;
        }
        let (to, spilled) = match &key.strategy {
            Strategy::NodeAffinity { node, soft: true } if *node == here => (None, true),
            Strategy::NodeAffinity { node, soft: true } => match raylets.addr(*node) {
                Some(addr) => (Some((*node, addr)), true),
                None => (None, false),
            },
            Strategy::Default => {
                let node = q.tasks.front().and_then(|t| arg_node(*t));
                (node.and_then(|n| raylets.addr(n).map(|a| (n, a))), false)
            }
            _ => (None, false),
        };
        while q.requests.len() < want {
            let request_id = *next_request;
            *next_request = next_request.next();
            q.requests.push(request_id);
            self.requests.insert(request_id, (key.clone(), to.map(|(n, _)| n)));
            let msg = ToRaylet::RequestLease {
                request_id,
                shape: key.shape.clone(),
                dedicated: false,
                strategy: key.strategy.clone(),
                spilled,
            };
            out.push_back(match to {
                Some((node, addr)) => Output::ToNode { node, addr, msg },
                None => Output::ToRaylet(msg),
            });
        }
    }

    /// Whether `id` is a lease request of this state that is still out.
    #[cfg(test)]
    pub(crate) fn is_request(&self, id: RequestId) -> bool {
        self.requests.contains_key(&id)
    }

    /// Lease request `id` was answered: for which key it was.
    pub(crate) fn take_request(&mut self, id: RequestId) -> Option<SchedKey> {
        let (key, _) = self.requests.remove(&id)?;
        if let Some(q) = self.queues.get_mut(&key) {
            q.requests.retain(|r| *r != id);
        }
        Some(key)
    }

    /// A raylet spilled request `id` back to `node`; `unreachable`: that node could not
    /// be reached lately.
    pub(crate) fn spillback(&mut self, id: RequestId, node: NodeId, unreachable: bool, now: Instant) -> Spillback {
        let Some((key, at)) = self.requests.get_mut(&id) else {
            return Spillback::Unknown;
        };
        if unreachable {
            // Wait a moment and ask again (by then the view may say it is dead) rather
            // than spin.
            let key = key.clone();
            self.take_request(id);
            self.backoff.insert(key, now + crate::raylets::UNREACHABLE_HOLD);
            return Spillback::HeldBack;
        }
        // The raylet that answered names a better node: ask it instead, once.
        *at = Some(node);
        Spillback::Ask(Box::new(ToRaylet::RequestLease {
            request_id: id,
            shape: key.shape.clone(),
            dedicated: false,
            strategy: key.strategy.clone(),
            spilled: true,
        }))
    }

    /// The connection to `node`'s raylet is gone: the requests out there are dropped.
    /// Returns the keys that had one, to ask again here.
    pub(crate) fn forget_requests_at(&mut self, node: NodeId) -> Vec<SchedKey> {
        let lost: Vec<RequestId> =
            self.requests.iter().filter(|(_, (_, n))| *n == Some(node)).map(|(id, _)| *id).collect();
        let mut keys: Vec<SchedKey> = Vec::new();
        for id in lost {
            if let Some(key) = self.take_request(id)
                && !keys.contains(&key)
            {
                keys.push(key);
            }
        }
        keys
    }

    /// Every request out, by the node it was asked of (`None`: this node's), and none
    /// is out any more.
    pub(crate) fn withdraw_requests(&mut self) -> Vec<(Option<NodeId>, Vec<RequestId>)> {
        let mut by_node: Vec<(Option<NodeId>, Vec<RequestId>)> = Vec::new();
        for (id, (_, node)) in self.requests.drain() {
            match by_node.iter_mut().find(|(n, _)| *n == node) {
                Some((_, ids)) => ids.push(id),
                None => by_node.push((node, vec![id])),
            }
        }
        for q in self.queues.values_mut() {
            q.requests.clear();
        }
        by_node
    }

    /// Whether a lease granted for `key` would find work.
    pub(crate) fn wants_worker(&self, key: &SchedKey) -> bool {
        self.queues.get(key).is_some_and(|q| !q.tasks.is_empty())
    }

    /// A lease granted for `key` by `node`'s raylet, to be reached on `conn`.
    pub(crate) fn add(
        &mut self,
        conn: ConnId,
        key: SchedKey,
        node: Option<NodeId>,
        lease_id: LeaseId,
        endpoint: Endpoint,
        now: Instant,
    ) {
        if let Some(q) = self.queues.get_mut(&key) {
            q.leases.push(conn);
        }
        let c = LeaseConn {
            endpoint,
            connected: false,
            in_flight: VecDeque::new(),
            lease_id,
            key,
            node,
            last_reply: now,
            // Not idle while it connects (see `LeaseConn::settle`); the connect has its
            // own deadline.
            idle_since: None,
            opened: now,
        };
        self.conns.insert(conn, c);
    }

    /// Whether `conn` is a leased worker's connection.
    pub(crate) fn has(&self, conn: ConnId) -> bool {
        self.conns.contains_key(&conn)
    }

    /// Where `conn` reaches its worker.
    pub(crate) fn endpoint(&self, conn: ConnId) -> Option<&Endpoint> {
        self.conns.get(&conn).map(|c| &c.endpoint)
    }

    /// The driver opened `conn`: the key whose tasks may now go to it.
    pub(crate) fn connected(&mut self, conn: ConnId, now: Instant) -> Option<SchedKey> {
        let c = self.conns.get_mut(&conn)?;
        c.connected = true;
        c.opened = now;
        // Idle from now unless the dispatch that follows pushes to it.
        c.settle(now);
        Some(c.key.clone())
    }

    /// The lease on `conn`: its key and the node that granted it (`None`: this one).
    pub(crate) fn lease_of(&self, conn: ConnId) -> Option<(&SchedKey, Option<NodeId>)> {
        self.conns.get(&conn).map(|c| (&c.key, c.node))
    }

    /// `conn` answered `tid` at `now`: it leaves the pipeline, and the time it took
    /// counts toward the pipelining depth.
    pub(crate) fn replied(&mut self, conn: ConnId, tid: TaskId, now: Instant) {
        let Some(c) = self.conns.get_mut(&conn) else { return };
        let Some(pos) = c.in_flight.iter().position(|(t, _)| *t == tid) else { return };
        let (_, pushed) = c.in_flight.remove(pos).expect("in range");
        let secs = now.saturating_duration_since(pushed.max(c.last_reply)).as_secs_f64();
        c.last_reply = now;
        self.avg_task_secs = Some(match self.avg_task_secs {
            None => secs,
            Some(avg) => avg * 0.9 + secs * 0.1,
        });
    }

    /// Marks `conn` idle from `now` if nothing is pipelined on it.
    pub(crate) fn settle(&mut self, conn: ConnId, now: Instant) {
        if let Some(c) = self.conns.get_mut(&conn) {
            c.settle(now);
        }
    }

    /// The lease on `conn` ended (its worker died, could not be reached, or its node
    /// died).
    pub(crate) fn remove(&mut self, conn: ConnId) -> Option<Ended> {
        let c = self.conns.remove(&conn)?;
        if let Some(q) = self.queues.get_mut(&c.key) {
            q.leases.retain(|l| *l != conn);
        }
        let in_flight = c.in_flight.into_iter().map(|(t, _)| t).collect();
        Some(Ended { lease_id: c.lease_id, key: c.key, node: c.node, in_flight })
    }

    /// The connections of leases granted by `node`'s raylet.
    pub(crate) fn conns_on(&self, node: NodeId) -> Vec<ConnId> {
        self.conns.iter().filter(|(_, c)| c.node == Some(node)).map(|(id, _)| *id).collect()
    }

    /// The lease on `conn`, removed if it is due back at `now` (a retiring lease that just
    /// drained goes back at once, not at the next timer).
    pub(crate) fn take_if_due(&mut self, conn: ConnId, now: Instant) -> Option<Ended> {
        if self.conns.get(&conn)?.due().is_some_and(|t| t <= now) { self.remove(conn) } else { None }
    }

    /// Leases idle for [`IDLE_LEASE_TIMEOUT`], or idle past their [`LEASE_TENURE`], at
    /// `now`, removed: to close and return.
    pub(crate) fn expire_idle(&mut self, now: Instant) -> Vec<(ConnId, Ended)> {
        let idle: Vec<ConnId> =
            self.conns.iter().filter(|(_, c)| c.due().is_some_and(|t| t <= now)).map(|(id, _)| *id).collect();
        idle.into_iter().filter_map(|id| Some((id, self.remove(id)?))).collect()
    }

    /// Keys whose hold is over at `now`: they may ask for leases again.
    pub(crate) fn due_backoffs(&mut self, now: Instant) -> Vec<SchedKey> {
        let due: Vec<SchedKey> = self.backoff.iter().filter(|(_, t)| **t <= now).map(|(k, _)| k.clone()).collect();
        for k in &due {
            self.backoff.remove(k);
        }
        due
    }

    /// The earliest time an idle lease is due back or a hold ends.
    pub(crate) fn next_timer(&self) -> Option<Instant> {
        let idle = self.conns.values().filter_map(LeaseConn::due);
        idle.chain(self.backoff.values().copied()).min()
    }

    /// Open lease connections.
    pub(crate) fn len(&self) -> usize {
        self.conns.len()
    }

    /// Ends everything: queues empty, and every lease is handed back to be closed and
    /// returned.
    pub(crate) fn stop(&mut self) -> Vec<(ConnId, LeaseId, Option<NodeId>)> {
        for q in self.queues.values_mut() {
            q.leases.clear();
            q.tasks.clear();
        }
        self.conns.drain().map(|(id, c)| (id, c.lease_id, c.node)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> SchedKey {
        SchedKey { shape: ResourceSet::new().with("CPU", 1.0), strategy: Strategy::Default }
    }

    fn tid(i: u64) -> TaskId {
        TaskId::default().child(i)
    }

    fn lease(l: &mut Leases, conn: u64, key: &SchedKey, now: Instant) -> ConnId {
        let c = ConnId(conn);
        l.add(c, key.clone(), None, LeaseId(conn), Endpoint::Unix(format!("/w{conn}")), now);
        l.connected(c, now);
        c
    }

    #[test]
    fn tasks_go_to_the_least_loaded_connected_lease_up_to_the_depth() {
        let mut l = Leases::new(4);
        let (k, t0) = (key(), Instant::now());
        for i in 0..5 {
            l.enqueue(&k, tid(i));
        }
        let a = lease(&mut l, 1, &k, t0);
        let mut pushed = Vec::new();
        l.push_queued(&k, t0, |c, t| {
            pushed.push((c, t));
            true
        });
        // No timing yet: one task per worker.
        assert_eq!(pushed, vec![(a, tid(0))]);
        l.replied(a, tid(0), t0 + Duration::from_micros(100));
        let b = lease(&mut l, 2, &k, t0);
        pushed.clear();
        l.push_queued(&k, t0, |c, t| {
            pushed.push((c, t));
            true
        });
        // 100 µs a task: 4 deep (the cap), spread over both.
        assert_eq!(pushed.len(), 4);
        assert_eq!(pushed.iter().filter(|(c, _)| *c == a).count(), 2);
        assert_eq!(pushed.iter().filter(|(c, _)| *c == b).count(), 2);
    }

    #[test]
    fn an_idle_lease_of_the_same_shape_takes_tasks_that_may_run_anywhere() {
        let mut l = Leases::new(4);
        let t0 = Instant::now();
        let placed = SchedKey { strategy: Strategy::Spread, ..key() };
        let other = lease(&mut l, 1, &placed, t0);
        l.enqueue(&placed, tid(9));
        l.enqueue(&key(), tid(0));
        let mut pushed = Vec::new();
        l.push_queued(&key(), t0, |c, t| {
            pushed.push((c, t));
            true
        });
        assert_eq!(pushed, vec![(other, tid(0))]);
        // Not the other way round: a placed task waits for its own leases.
        let mut l = Leases::new(4);
        lease(&mut l, 1, &key(), t0);
        l.enqueue(&placed, tid(1));
        l.push_queued(&placed, t0, |_, _| panic!("a placed task borrowed a lease"));
    }

    #[test]
    fn requests_follow_the_queue_and_a_held_back_key_asks_again_after_the_hold() {
        let here = NodeId([1; 16]);
        let (mut l, raylets, t0) = (Leases::new(4), Raylets::new(here), Instant::now());
        let k = key();
        for i in 0..3 {
            l.enqueue(&k, tid(i));
        }
        let (mut next, mut out) = (RequestId(1), VecDeque::new());
        l.request_leases(&k, t0, &raylets, |_| None, &mut next, &mut out);
        assert_eq!(out.len(), 3);
        l.request_leases(&k, t0, &raylets, |_| None, &mut next, &mut out);
        assert_eq!(out.len(), 3, "no more than one request per queued task");
        let far = NodeId([2; 16]);
        assert!(matches!(l.spillback(RequestId(1), far, true, t0), Spillback::HeldBack));
        assert!(!l.is_request(RequestId(1)));
        assert_eq!(l.next_timer(), Some(t0 + crate::raylets::UNREACHABLE_HOLD));
        l.request_leases(&k, t0, &raylets, |_| None, &mut next, &mut out);
        assert_eq!(out.len(), 3, "held back");
        assert_eq!(l.due_backoffs(t0 + crate::raylets::UNREACHABLE_HOLD), vec![k.clone()]);
        l.request_leases(&k, t0, &raylets, |_| None, &mut next, &mut out);
        assert_eq!(out.len(), 4);
        let withdrawn = l.withdraw_requests();
        assert_eq!(withdrawn.len(), 1);
        assert_eq!(withdrawn[0].1.len(), 3);
    }

    #[test]
    fn an_ended_lease_gives_back_its_pipeline_and_an_idle_one_expires() {
        let mut l = Leases::new(4);
        let (k, t0) = (key(), Instant::now());
        l.enqueue(&k, tid(0));
        let a = lease(&mut l, 1, &k, t0);
        let b = lease(&mut l, 2, &k, t0);
        l.push_queued(&k, t0, |_, _| true);
        assert_eq!(l.remove(a).map(|e| e.in_flight), Some(vec![tid(0)]));
        assert!(l.expire_idle(t0 + IDLE_LEASE_TIMEOUT / 2).is_empty());
        let expired = l.expire_idle(t0 + IDLE_LEASE_TIMEOUT);
        assert_eq!(expired.len(), 1);
        assert_eq!(expired[0].0, b);
        assert_eq!(l.len(), 0);
    }

    #[test]
    fn a_lease_past_its_tenure_takes_no_new_task_and_goes_back_once_drained() {
        let mut l = Leases::new(4);
        let (k, t0) = (key(), Instant::now());
        l.enqueue(&k, tid(0));
        let a = lease(&mut l, 1, &k, t0);
        // Kept busy: every task is pushed as the one before is answered.
        let ends = l.conns[&a].tenure_ends();
        assert!(ends >= t0 + LEASE_TENURE && ends < t0 + LEASE_TENURE * 5 / 4, "jittered by at most a quarter");
        let (mut t, step) = (t0, Duration::from_millis(10));
        let mut n = 0;
        while t + step < ends {
            if n > 0 {
                l.enqueue(&k, tid(n));
            }
            l.push_queued(&k, t, |c, _| c == a);
            t += step;
            l.replied(a, tid(n), t);
            l.settle(a, t);
            assert!(l.expire_idle(t).is_empty(), "never idle for the timeout (task {n}, {:?})", t - t0);
            n += 1;
        }
        // Past its tenure it takes nothing more: the next task waits for a new lease.
        t = ends;
        l.enqueue(&k, tid(n));
        let mut pushed = false;
        l.push_queued(&k, t, |_, _| {
            pushed = true;
            true
        });
        assert!(!pushed, "a retiring lease took a task");
        assert_eq!(l.next_timer(), Some(ends));
        assert_eq!(l.take_if_due(a, t).map(|e| e.lease_id), Some(LeaseId(1)));
        // A new lease opens its own tenure, and the waiting task goes to it.
        let b = lease(&mut l, 2, &k, t);
        l.push_queued(&k, t, |c, _| c == b);
        assert!(l.expire_idle(t + Duration::from_millis(1)).is_empty());
        assert!(!l.wants_worker(&k));
    }
}
