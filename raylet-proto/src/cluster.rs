//! The head's cluster directory (Ray's GCS role): the node table with heartbeats and
//! failure detection, and the resource view every node's spillback policy reads.
//! A pure state machine: the driver passes the time in and carries out [`DirOutput`]s.
//!
//! A node registers on its connection, then reports its load about every 100 ms. A node
//! silent for longer than `node_timeout`, or whose connection ends, is declared dead and
//! every member is told (through the next view, sent at once). The same daemon (same
//! node ID, process and host) that registers again, after a partition or a lost
//! connection, is taken back as the same node: alive again, on its new connection. If it
//! had been declared dead meanwhile, its answer says so (`rejoined`): the cluster has
//! retried its tasks, failed its objects and restarted its detached actors elsewhere, so
//! the node drops what it held for others before it serves them again. Another daemon
//! under a node ID already known is refused.
//!
//! It also keeps the cluster's key-value store ([`KvStore`]), the job table (drivers
//! that connected to any node, running or recently finished) and the names of actors:
//! a name is unique in the cluster, and maps to the actor and the node whose actor
//! directory keeps it (its owner's node, see [`crate::actors`]). A dead node's names are
//! freed with it. Detached actors are registered here once they run (with their
//! construction, when its arguments are all inline): when their node dies, the head picks
//! a live node that can hold them and has it construct them again, within their
//! `max_restarts`; their name moves with them. The head's own node talks
//! to it as the pseudo-peer [`HEAD_PEER`].

use ares_common::RequestId;
use std::time::Duration;

use ares_common::det::DetMap;
use ares_common::error::TaskError;
use ares_common::wire::{DetachedActor, FromHead, JobSummary, KvOp, NamedActor, NodeLoad, NodeSummary};
use ares_common::{ActorId, NodeId, ResourceSet, WorkerId};

use crate::kv::KvStore;

use crate::spillback::NodeView;

/// A connection to the head, numbered by its driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PeerId(pub u64);

/// The head's own node, as a peer of its directory (real peers are numbered from 1).
pub const HEAD_PEER: PeerId = PeerId(0);

/// Finished jobs the table keeps, most recent last.
const FINISHED_JOBS_KEPT: usize = 100;

/// What the driver must carry out.
#[derive(Debug)]
pub enum DirOutput {
    /// Send to one peer.
    Send(PeerId, FromHead),
    /// Close a peer's connection.
    Close(PeerId),
    /// A node was declared dead (the driver logs it; members learn it from the view).
    NodeDied(NodeId, String),
}

#[derive(Debug)]
struct Entry {
    summary: NodeSummary,
    peer: Option<PeerId>,
    last_seen: Duration,
}

/// The node table. See the module docs.
#[derive(Debug)]
pub struct ClusterDirectory {
    head: NodeId,
    /// The cluster certificate and key, handed to nodes that join.
    cert: Vec<u8>,
    key: Vec<u8>,
    node_timeout: Duration,
    nodes: DetMap<NodeId, Entry>,
    peers: DetMap<PeerId, NodeId>,
    kv: KvStore,
    /// Every job, in the order they started.
    jobs: Vec<JobSummary>,
    /// Named actors: name → the actor and its node.
    names: DetMap<String, NamedActor>,
    /// Detached actors, with the node each runs on.
    detached: DetMap<ActorId, DetachedActor>,
    /// The address each connection came from, as the driver saw it.
    reached_from: DetMap<PeerId, std::net::IpAddr>,
    out: Vec<DirOutput>,
}

/// Registration facts of a node.
#[derive(Clone, Debug)]
pub struct Registration {
    /// The node.
    pub node_id: NodeId,
    /// Its daemon's process ID.
    pub pid: u32,
    /// Its host name.
    pub host: String,
    /// Where it serves QUIC.
    pub addr: Option<std::net::SocketAddr>,
    /// Its total resources.
    pub total: ResourceSet,
}

impl ClusterDirectory {
    /// The directory of a cluster whose head is `head` (registered with
    /// [`Self::register_head`]); joining nodes get `cert` and `key` to serve QUIC under.
    pub fn new(head: NodeId, node_timeout: Duration, cert: Vec<u8>, key: Vec<u8>) -> Self {
        let (nodes, peers) = (DetMap::default(), DetMap::default());
        let mut peers = peers;
        peers.insert(HEAD_PEER, head);
        let (kv, jobs, out) = (KvStore::new(), Vec::new(), Vec::new());
        let (names, detached) = (DetMap::default(), DetMap::default());
        let reached_from = DetMap::default();
        ClusterDirectory { head, cert, key, node_timeout, nodes, peers, kv, jobs, names, detached, reached_from, out }
    }

    /// Takes the outputs queued so far.
    pub fn take_outputs(&mut self) -> Vec<DirOutput> {
        std::mem::take(&mut self.out)
    }

    /// The head's own entry: it has no connection and is alive while the directory is.
    pub fn register_head(&mut self, now: Duration, reg: Registration, load: NodeLoad) {
        let summary = summary(reg, true, load);
        self.nodes.insert(summary.node_id, Entry { summary, peer: None, last_seen: now });
    }

    /// Where the head node serves its clients and pulls.
    pub fn head_serving(&mut self, now: Duration, addr: std::net::SocketAddr) {
        if let Some(e) = self.nodes.get_mut(&self.head) {
            e.summary.addr = Some(addr);
        }
        self.broadcast(now);
    }

    /// The head's own load, sampled by its driver.
    pub fn head_load(&mut self, now: Duration, load: NodeLoad) {
        if let Some(e) = self.nodes.get_mut(&self.head) {
            e.summary.load = load;
            e.last_seen = now;
        }
    }

    /// A node registers on connection `peer`.
    pub fn register(&mut self, now: Duration, peer: PeerId, reg: Registration) {
        let id = reg.node_id;
        let known = self.nodes.get(&id);
        let same_daemon = known.is_some_and(|e| e.summary.pid == reg.pid && e.summary.host == reg.host);
        let refuse = match known {
            _ if id == self.head => Some("that node ID is the head's".to_string()),
            Some(e) if !same_daemon && !e.summary.alive => {
                Some(format!("node {id} was declared dead; start it again to rejoin"))
            }
            Some(_) if !same_daemon => Some(format!("node {id} is already registered")),
            _ => None,
        };
        if let Some(reason) = refuse {
            self.out.push(DirOutput::Send(peer, FromHead::Refused { reason }));
            self.out.push(DirOutput::Close(peer));
            return;
        }
        let rejoined = known.is_some_and(|e| !e.summary.alive);
        // The same daemon on a new connection: the old one is stale (its end, when it
        // comes, is no death).
        if let Some(old) = self.nodes.get(&id).and_then(|e| e.peer).filter(|old| *old != peer) {
            self.peers.remove(&old);
            self.out.push(DirOutput::Close(old));
        }
        // Where it serves, it says again on this connection.
        let load = NodeLoad { available: reg.total.clone(), ..NodeLoad::default() };
        let summary = summary(reg, false, load);
        self.nodes.insert(id, Entry { summary, peer: Some(peer), last_seen: now });
        self.peers.insert(peer, id);
        let (cert, key) = (self.cert.clone(), self.key.clone());
        self.out.push(DirOutput::Send(peer, FromHead::Registered { head: self.head, cert, key, rejoined }));
        self.broadcast(now);
    }

    /// A message from `peer` (the head's own node is [`HEAD_PEER`]).
    pub fn handle(&mut self, now: Duration, peer: PeerId, msg: ares_common::wire::ToHead) {
        use ares_common::wire::ToHead;
        match msg {
            ToHead::RegisterNode { node_id, pid, host, addr, total } => {
                tracing::info!(node = %node_id, %host, pid, %total, "node joined");
                self.register(now, peer, Registration { node_id, pid, host, addr, total })
            }
            ToHead::Heartbeat { load } => self.heartbeat(now, peer, load),
            ToHead::Serving { addr } => self.serving(now, peer, addr),
            ToHead::Leaving => self.leaving(now, peer),
            ToHead::GetStatus { request_id } => self.status(now, peer, request_id),
            ToHead::Kv { request_id, op } => self.kv(peer, request_id, op),
            ToHead::JobStarted { job, pid } => self.job_started(peer, job, pid),
            ToHead::JobFinished { job } => self.job_finished(peer, job),
            ToHead::ReserveActorName { request_id, name, actor } => {
                self.reserve_actor_name(peer, request_id, name, actor)
            }
            ToHead::ReleaseActorName { name, actor_id } => self.release_actor_name(peer, &name, actor_id),
            ToHead::LookupActorName { request_id, name } => self.lookup_actor_name(peer, request_id, name),
            ToHead::DetachedStarted { actor } => self.detached_started(peer, *actor),
            ToHead::DetachedGone { actor_id } => self.detached_gone(peer, actor_id),
        }
    }

    /// A heartbeat from the node on `peer`. Messages from an unregistered peer break the
    /// protocol.
    pub fn heartbeat(&mut self, now: Duration, peer: PeerId, load: NodeLoad) {
        let Some(id) = self.peers.get(&peer) else {
            self.refuse(peer, "heartbeat before registration");
            return;
        };
        if let Some(e) = self.nodes.get_mut(id) {
            e.summary.load = load;
            e.last_seen = now;
        }
    }

    /// A connection `peer` opened, from `from`.
    pub fn connected(&mut self, peer: PeerId, from: std::net::IpAddr) {
        self.reached_from.insert(peer, from);
    }

    /// The node on `peer` serves pulls at `addr` now. A loopback address from a node
    /// that reached the head over another one would be unreachable for the others: it
    /// is refused.
    pub fn serving(&mut self, now: Duration, peer: PeerId, addr: std::net::SocketAddr) {
        let Some(id) = self.peers.get(&peer) else {
            self.refuse(peer, "address before registration");
            return;
        };
        if let Some(from) = self.reached_from.get(&peer).copied()
            && addr.ip().is_loopback()
            && !from.is_loopback()
        {
            self.refuse(peer, &loopback_reason(addr.ip(), from));
            return;
        }
        if let Some(e) = self.nodes.get_mut(id) {
            e.summary.addr = Some(addr);
        }
        self.broadcast(now);
    }

    fn refuse(&mut self, peer: PeerId, reason: &str) {
        self.out.push(DirOutput::Send(peer, FromHead::Refused { reason: reason.to_string() }));
        self.out.push(DirOutput::Close(peer));
    }

    /// The node on `peer` is stopping cleanly.
    pub fn leaving(&mut self, now: Duration, peer: PeerId) {
        if let Some(id) = self.peers.remove(&peer) {
            self.declare_dead(now, id, "stopped".into());
        }
    }

    /// A connection ended. A node's connection ending is its death: its daemon is gone
    /// or cut off, and QUIC's own keep-alives already gave it the idle timeout.
    pub fn disconnected(&mut self, now: Duration, peer: PeerId) {
        self.reached_from.remove(&peer);
        if let Some(id) = self.peers.remove(&peer) {
            self.declare_dead(now, id, "its connection to the head closed".into());
        }
    }

    /// Declares nodes silent for longer than the timeout dead. Call periodically.
    pub fn tick(&mut self, now: Duration) {
        let late: Vec<NodeId> = self
            .nodes
            .iter()
            .filter(|(id, e)| {
                **id != self.head && e.summary.alive && now.saturating_sub(e.last_seen) > self.node_timeout
            })
            .map(|(id, _)| *id)
            .collect();
        for id in late {
            // Its connection is closed too: a node that comes back registers anew, and
            // learns that it was declared dead.
            if let Some(peer) = self.nodes.get_mut(&id).and_then(|e| e.peer.take()) {
                self.peers.remove(&peer);
                self.out.push(DirOutput::Close(peer));
            }
            let reason = format!("no heartbeat for over {} ms", self.node_timeout.as_millis());
            self.declare_dead(now, id, reason);
        }
    }

    fn declare_dead(&mut self, now: Duration, id: NodeId, reason: String) {
        let Some(e) = self.nodes.get_mut(&id) else { return };
        if !e.summary.alive {
            return;
        }
        e.summary.alive = false;
        e.summary.died = Some(reason.clone());
        e.peer = None;
        e.summary.load.available = ResourceSet::new();
        // Its drivers, and the actors its directory kept, went with it; its detached
        // actors start again elsewhere (their names move with them).
        for j in self.jobs.iter_mut().filter(|j| j.node == id) {
            j.running = false;
        }
        let mut lost: Vec<ActorId> =
            self.detached.iter().filter(|(_, d)| d.actor.node == id).map(|(a, _)| *a).collect();
        lost.sort(); // in ID order, so which actor gets the room left is reproducible
        for a in lost {
            self.restart_detached(a);
        }
        self.names.retain(|_, a| a.node != id);
        self.out.push(DirOutput::NodeDied(id, reason));
        self.broadcast(now);
    }

    /// Sends the current view to every connected node (the driver calls this about every
    /// 100 ms; deaths and joins send it at once).
    pub fn broadcast(&mut self, now: Duration) {
        let nodes = self.summaries(now);
        let peers: Vec<PeerId> = self.nodes.values().filter_map(|e| e.peer).collect();
        for p in peers {
            self.out.push(DirOutput::Send(p, FromHead::View { nodes: nodes.clone() }));
        }
    }

    /// Answers `ares status` on `peer`.
    pub fn status(&mut self, now: Duration, peer: PeerId, request_id: RequestId) {
        let nodes = self.summaries(now);
        let node_timeout_ms = self.node_timeout.as_millis() as u64;
        let mut jobs = self.jobs.clone();
        jobs.sort_by_key(|j| !j.running);
        let detached = self.detached.len() as u32;
        self.out.push(DirOutput::Send(peer, FromHead::Status { request_id, nodes, node_timeout_ms, jobs, detached }));
    }

    /// A key-value operation for a client of the node on `peer`.
    pub fn kv(&mut self, peer: PeerId, request_id: RequestId, op: KvOp) {
        if !self.peers.contains_key(&peer) {
            self.refuse(peer, "key-value request before registration");
            return;
        }
        let (value, error) = match self.kv.apply(op) {
            Ok(v) => (v, None),
            Err(e) => (None, Some(e)),
        };
        self.out.push(DirOutput::Send(peer, FromHead::Kv { request_id, value, error }));
    }

    /// The node on `peer` registers an actor named `name`: the name is reserved unless
    /// another live actor holds it.
    pub fn reserve_actor_name(&mut self, peer: PeerId, request_id: RequestId, name: String, mut actor: NamedActor) {
        let Some(node) = self.peers.get(&peer).copied() else {
            self.refuse(peer, "actor name before registration");
            return;
        };
        actor.node = node;
        actor.addr = None;
        let error = match self.names.get(&name) {
            Some(held) if held.actor_id != actor.actor_id => Some(TaskError::ActorNameTaken { name }),
            _ => {
                self.names.insert(name, actor);
                None
            }
        };
        self.out.push(DirOutput::Send(peer, FromHead::ActorName { request_id, actor: None, error }));
    }

    /// The actor `actor_id` no longer holds `name`.
    pub fn release_actor_name(&mut self, peer: PeerId, name: &str, actor_id: ActorId) {
        let Some(node) = self.peers.get(&peer).copied() else { return };
        if self.names.get(name).is_some_and(|a| a.actor_id == actor_id && a.node == node) {
            self.names.remove(name);
        }
    }

    /// A detached actor runs on the node on `peer`.
    pub fn detached_started(&mut self, peer: PeerId, mut actor: DetachedActor) {
        let Some(node) = self.peers.get(&peer).copied() else {
            self.refuse(peer, "actor report before registration");
            return;
        };
        actor.actor.node = node;
        actor.actor.addr = None;
        self.detached.insert(actor.actor.actor_id, actor);
    }

    /// A detached actor of the node on `peer` ended for good.
    pub fn detached_gone(&mut self, peer: PeerId, actor_id: ActorId) {
        let Some(node) = self.peers.get(&peer).copied() else { return };
        if self.detached.get(&actor_id).is_some_and(|d| d.actor.node == node) {
            self.detached.remove(&actor_id);
        }
    }

    /// Detached actors the head would restart.
    pub fn detached_len(&self) -> usize {
        self.detached.len()
    }

    /// The node of detached actor `a` died: construct it on the live node with the most
    /// CPUs free among those that can hold it (ties to the lower ID), if its budget lasts.
    fn restart_detached(&mut self, a: ActorId) {
        let Some(mut d) = self.detached.remove(&a) else { return };
        if d.restarts >= d.max_restarts {
            tracing::warn!(actor = %a, restarts = d.restarts, "a detached actor's node died and its restart budget is spent");
            return;
        }
        let fits = |e: &&Entry| e.summary.alive && d.restart.shape.is_subset_of(&e.summary.total);
        let free_cpu = |e: &Entry| e.summary.load.available.get_units("CPU");
        let target = self
            .nodes
            .values()
            .filter(fits)
            .max_by(|x, y| free_cpu(x).cmp(&free_cpu(y)).then(y.summary.node_id.cmp(&x.summary.node_id)))
            .map(|e| (e.summary.node_id, e.peer));
        let Some((node, peer)) = target else {
            tracing::warn!(actor = %a, shape = %d.restart.shape, "no live node can hold a detached actor whose node died");
            return;
        };
        let peer = match peer {
            Some(p) => p,
            None if node == self.head => HEAD_PEER,
            None => return,
        };
        d.restarts += 1;
        d.actor.node = node;
        if let Some(name) = &d.name {
            self.names.insert(name.clone(), d.actor.clone());
        }
        tracing::info!(actor = %a, %node, restarts = d.restarts, "restarting a detached actor whose node died");
        self.out.push(DirOutput::Send(peer, FromHead::RestartActor { actor: Box::new(d.clone()) }));
        self.detached.insert(a, d);
    }

    /// Finds the actor named `name` for a client of the node on `peer`.
    pub fn lookup_actor_name(&mut self, peer: PeerId, request_id: RequestId, name: String) {
        if !self.peers.contains_key(&peer) {
            self.refuse(peer, "actor lookup before registration");
            return;
        }
        let found = self.names.get(&name).cloned().map(|mut a| {
            a.addr = self.nodes.get(&a.node).and_then(|e| e.summary.addr);
            a
        });
        let (actor, error) = match found {
            Some(a) => (Some(a), None),
            None => (None, Some(TaskError::ActorNotFound { name })),
        };
        self.out.push(DirOutput::Send(peer, FromHead::ActorName { request_id, actor, error }));
    }

    /// A driver connected to the node on `peer`.
    pub fn job_started(&mut self, peer: PeerId, job: WorkerId, pid: u32) {
        let Some(node) = self.peers.get(&peer).copied() else {
            self.refuse(peer, "job report before registration");
            return;
        };
        // A node that rejoins after being declared dead reports its drivers again.
        match self.jobs.iter_mut().find(|j| j.job == job) {
            Some(j) => j.running = true,
            None => self.jobs.push(JobSummary { job, node, pid, running: true }),
        }
    }

    /// A driver of the node on `peer` disconnected.
    pub fn job_finished(&mut self, peer: PeerId, job: WorkerId) {
        let Some(node) = self.peers.get(&peer).copied() else { return };
        if let Some(j) = self.jobs.iter_mut().find(|j| j.job == job && j.node == node) {
            j.running = false;
        }
        self.forget_finished();
    }

    fn forget_finished(&mut self) {
        let finished = self.jobs.iter().filter(|j| !j.running).count();
        let mut extra = finished.saturating_sub(FINISHED_JOBS_KEPT);
        self.jobs.retain(|j| {
            let drop = extra > 0 && !j.running;
            extra -= drop as usize;
            !drop
        });
    }

    /// Jobs, in the order they started.
    pub fn jobs(&self) -> &[JobSummary] {
        &self.jobs
    }

    /// Every node, head first, then by ID.
    pub fn summaries(&self, now: Duration) -> Vec<NodeSummary> {
        let mut v: Vec<NodeSummary> = self
            .nodes
            .values()
            .map(|e| NodeSummary { silent_ms: now.saturating_sub(e.last_seen).as_millis() as u64, ..e.summary.clone() })
            .collect();
        v.sort_by_key(|n| (!n.head, n.node_id));
        v
    }

    /// The resource view the spillback policy reads.
    pub fn view(&self) -> Vec<NodeView> {
        view_of(self.nodes.values().map(|e| &e.summary))
    }

    /// Whether `node` is known and alive.
    pub fn is_alive(&self, node: NodeId) -> bool {
        self.nodes.get(&node).is_some_and(|e| e.summary.alive)
    }
}

/// The policy's view of nodes as the head summarised them.
pub fn view_of<'a>(nodes: impl IntoIterator<Item = &'a NodeSummary>) -> Vec<NodeView> {
    let mut v: Vec<NodeView> = nodes
        .into_iter()
        .map(|s| {
            let mut total = s.total.clone();
            total.set(&s.node_id.resource_name(), 1.0);
            let mut available = s.load.available.clone();
            if s.alive {
                available.set(&s.node_id.resource_name(), 1.0);
            }
            NodeView { id: s.node_id, alive: s.alive, total, available }
        })
        .collect();
    v.sort_by_key(|n| n.id);
    v
}

fn summary(reg: Registration, head: bool, load: NodeLoad) -> NodeSummary {
    NodeSummary {
        node_id: reg.node_id,
        pid: reg.pid,
        host: reg.host,
        addr: reg.addr,
        head,
        alive: true,
        total: reg.total,
        load,
        silent_ms: 0,
        died: None,
    }
}

/// What a node announcing the loopback address `ip` is told, when it reached the head
/// from (or at) `via`.
pub fn loopback_reason(ip: std::net::IpAddr, via: std::net::IpAddr) -> String {
    format!(
        "this node would announce {ip}, a loopback address, but reaches the head over {via}: other nodes \
         could not reach it; start it with --node-ip-address <its address on the cluster's network>"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reg(n: u8) -> Registration {
        Registration {
            node_id: NodeId([n; 16]),
            pid: n as u32,
            host: "h".into(),
            addr: None,
            total: ResourceSet::new().with("CPU", 2.0),
        }
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn dir() -> ClusterDirectory {
        let mut d = ClusterDirectory::new(NodeId([0; 16]), ms(1000), vec![1], vec![2]);
        d.register_head(ms(0), reg(0), NodeLoad::default());
        d
    }

    #[test]
    fn a_silent_node_is_declared_dead_after_the_timeout_and_members_are_told() {
        let mut d = dir();
        d.register(ms(0), PeerId(1), reg(1));
        d.register(ms(0), PeerId(2), reg(2));
        d.take_outputs();
        for t in (100..=1000).step_by(100) {
            d.heartbeat(ms(t), PeerId(1), NodeLoad::default());
            d.tick(ms(t));
        }
        assert!(d.take_outputs().is_empty(), "nobody is late yet");
        d.heartbeat(ms(1100), PeerId(1), NodeLoad::default());
        d.tick(ms(1100));
        let out = d.take_outputs();
        assert!(
            out.iter()
                .any(|o| matches!(o, DirOutput::NodeDied(id, r) if *id == NodeId([2; 16]) && r.contains("1000 ms"))),
            "{out:?}"
        );
        // The survivor gets a view that shows the death; the dead node's connection closes.
        let view = out.iter().find_map(|o| match o {
            DirOutput::Send(PeerId(1), FromHead::View { nodes }) => Some(nodes.clone()),
            _ => None,
        });
        let view = view.expect("a view went to the survivor");
        assert_eq!(view.iter().map(|n| n.alive).collect::<Vec<_>>(), vec![true, true, false]);
        assert_eq!(view[2].died.as_deref(), Some("no heartbeat for over 1000 ms"));
        assert!(view[..2].iter().all(|n| n.died.is_none()));
        assert!(out.iter().any(|o| matches!(o, DirOutput::Close(PeerId(2)))));
        assert!(!d.is_alive(NodeId([2; 16])) && d.is_alive(NodeId([1; 16])));
        assert!(!d.view().iter().find(|v| v.id == NodeId([2; 16])).unwrap().alive);
    }

    #[test]
    fn a_loopback_address_from_a_node_that_reached_the_head_over_another_is_refused() {
        let mut d = dir();
        let (remote, local) = ([198, 18, 0, 2].into(), [127, 0, 0, 1].into());
        d.connected(PeerId(1), remote);
        d.register(ms(0), PeerId(1), reg(1));
        // Over loopback, a loopback address is right (every node is on this machine).
        d.connected(PeerId(2), local);
        d.register(ms(0), PeerId(2), reg(2));
        d.take_outputs();
        d.serving(ms(1), PeerId(2), ([127, 0, 0, 1], 7000).into());
        assert!(!d.take_outputs().iter().any(|o| matches!(o, DirOutput::Close(_))));
        d.serving(ms(1), PeerId(1), ([127, 0, 0, 1], 7001).into());
        let out = d.take_outputs();
        let refused = out.iter().any(|o| {
            matches!(o, DirOutput::Send(PeerId(1), FromHead::Refused { reason })
                if reason.contains("--node-ip-address") && reason.contains("198.18.0.2"))
        });
        assert!(refused && out.iter().any(|o| matches!(o, DirOutput::Close(PeerId(1)))), "{out:?}");
        // Its own address is taken.
        d.connected(PeerId(3), remote);
        d.register(ms(2), PeerId(3), reg(3));
        d.serving(ms(2), PeerId(3), ([198, 18, 0, 2], 7002).into());
        assert!(!d.take_outputs().iter().any(|o| matches!(o, DirOutput::Close(_))));
    }

    fn named(n: u8) -> NamedActor {
        NamedActor {
            actor_id: ActorId([n; 16]),
            class: "C".into(),
            max_task_retries: 2,
            node: NodeId([99; 16]),
            addr: None,
        }
    }

    fn name_answer(d: &mut ClusterDirectory) -> (Option<NamedActor>, Option<TaskError>) {
        match d.take_outputs().pop() {
            Some(DirOutput::Send(_, FromHead::ActorName { actor, error, .. })) => (actor, error),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn actor_names_are_unique_in_the_cluster_and_die_with_their_node() {
        let mut d = dir();
        let mut r1 = reg(1);
        r1.addr = Some("127.0.0.1:7001".parse().unwrap());
        d.register(ms(0), PeerId(1), r1);
        d.register(ms(0), PeerId(2), reg(2));
        d.take_outputs();
        d.reserve_actor_name(PeerId(1), RequestId(1), "a".into(), named(1));
        assert_eq!(name_answer(&mut d), (None, None));
        d.reserve_actor_name(PeerId(1), RequestId(2), "a".into(), named(1));
        assert_eq!(name_answer(&mut d).1, None, "the same actor again is no conflict");
        d.reserve_actor_name(PeerId(2), RequestId(3), "a".into(), named(2));
        assert!(matches!(name_answer(&mut d).1, Some(TaskError::ActorNameTaken { .. })));
        // Found from any node, with the node the sender really is (not what it claimed).
        d.lookup_actor_name(PeerId(2), RequestId(4), "a".into());
        let found = name_answer(&mut d).0.unwrap();
        assert_eq!((found.actor_id, found.node), (ActorId([1; 16]), NodeId([1; 16])));
        assert_eq!(found.addr, Some("127.0.0.1:7001".parse().unwrap()));
        // A release by another node, or of another actor, does nothing.
        d.release_actor_name(PeerId(2), "a", ActorId([1; 16]));
        d.release_actor_name(PeerId(1), "a", ActorId([2; 16]));
        d.lookup_actor_name(PeerId(2), RequestId(5), "a".into());
        assert!(name_answer(&mut d).0.is_some());
        d.release_actor_name(PeerId(1), "a", ActorId([1; 16]));
        d.lookup_actor_name(PeerId(2), RequestId(6), "a".into());
        assert!(matches!(name_answer(&mut d).1, Some(TaskError::ActorNotFound { .. })));
        // A node's names go when it dies.
        d.reserve_actor_name(PeerId(2), RequestId(7), "b".into(), named(3));
        name_answer(&mut d);
        d.disconnected(ms(10), PeerId(2));
        d.take_outputs();
        d.lookup_actor_name(PeerId(1), RequestId(8), "b".into());
        assert!(matches!(name_answer(&mut d).1, Some(TaskError::ActorNotFound { .. })));
        d.reserve_actor_name(PeerId(1), RequestId(9), "b".into(), named(4));
        assert_eq!(name_answer(&mut d).1, None);
    }

    fn detached(n: u8, cpus: f64, max_restarts: u32) -> DetachedActor {
        use ares_common::wire::{RestartSpec, TaskKind, TaskSpec};
        let actor_id = ActorId([n; 16]);
        DetachedActor {
            actor: NamedActor { node: NodeId([99; 16]), ..named(n) },
            name: Some(format!("d{n}")),
            max_restarts,
            restarts: 0,
            restart: RestartSpec {
                spec: TaskSpec {
                    task_id: ares_common::TaskId([n; 16]),
                    function: "C::new".into(),
                    owner: WorkerId([1; 16]),
                    args: Vec::new(),
                    attempt: 0,
                    kind: TaskKind::ActorCreate { actor_id, max_concurrency: 1 },
                    num_returns: 1,
                },
                shape: ResourceSet::new().with("CPU", cpus),
            },
        }
    }

    fn restarts(out: &[DirOutput]) -> Vec<(PeerId, ActorId, u32)> {
        out.iter()
            .filter_map(|o| match o {
                DirOutput::Send(p, FromHead::RestartActor { actor }) => {
                    Some((*p, actor.actor.actor_id, actor.restarts))
                }
                _ => None,
            })
            .collect()
    }

    #[test]
    fn detached_actors_of_a_dead_node_restart_where_they_fit_within_their_budget() {
        let mut d = dir(); // the head has 2 CPUs
        d.register(ms(0), PeerId(1), reg(1));
        let mut big = reg(2);
        big.total = ResourceSet::new().with("CPU", 8.0);
        d.register(ms(0), PeerId(2), big);
        d.take_outputs();
        d.detached_started(PeerId(1), detached(1, 1.0, 1)); // fits anywhere: most free CPUs wins
        d.detached_started(PeerId(1), detached(2, 4.0, 5)); // fits node 2 only
        d.detached_started(PeerId(1), detached(3, 1.0, 0)); // no restarts allowed
        d.detached_started(PeerId(1), detached(4, 64.0, 5)); // fits nowhere
        d.detached_started(PeerId(1), detached(5, 1.0, 5));
        d.detached_gone(PeerId(1), ActorId([5; 16])); // killed before the node died
        assert_eq!(d.detached_len(), 4);
        d.heartbeat(
            ms(1),
            PeerId(2),
            NodeLoad { available: ResourceSet::new().with("CPU", 8.0), ..NodeLoad::default() },
        );
        d.disconnected(ms(10), PeerId(1));
        let out = d.take_outputs();
        assert_eq!(restarts(&out), vec![(PeerId(2), ActorId([1; 16]), 1), (PeerId(2), ActorId([2; 16]), 1)]);
        // Their names moved with them; the others' names went with the node.
        d.lookup_actor_name(PeerId(2), RequestId(1), "d1".into());
        assert_eq!(name_answer(&mut d).0.map(|a| a.node), Some(NodeId([2; 16])));
        d.lookup_actor_name(PeerId(2), RequestId(2), "d3".into());
        assert!(name_answer(&mut d).1.is_some());
        assert_eq!(d.detached_len(), 2);
        // Node 2 dies too: actor 1 spent its single restart; actor 2 goes to the head.
        d.disconnected(ms(20), PeerId(2));
        let out = d.take_outputs();
        assert!(restarts(&out).is_empty(), "actor 2 needs 4 CPUs, the head has 2: {out:?}");
        assert_eq!(d.detached_len(), 0);
        d.register(ms(30), PeerId(3), reg(3));
        d.detached_started(PeerId(3), detached(6, 1.0, 3));
        d.disconnected(ms(40), PeerId(3));
        assert_eq!(restarts(&d.take_outputs()), vec![(HEAD_PEER, ActorId([6; 16]), 1)], "the head's own node");
    }

    #[test]
    fn a_dead_node_rejoins_as_itself_and_others_under_its_id_and_strangers_are_refused() {
        let mut d = dir();
        d.register(ms(0), PeerId(1), reg(1));
        d.disconnected(ms(5), PeerId(1));
        d.take_outputs();
        assert!(!d.is_alive(NodeId([1; 16])));
        // Another daemon under a dead node's ID is refused.
        d.register(ms(10), PeerId(2), Registration { pid: 99, ..reg(1) });
        let out = d.take_outputs();
        assert!(
            matches!(&out[0], DirOutput::Send(_, FromHead::Refused { reason }) if reason.contains("declared dead"))
        );
        // The same daemon comes back: alive again, told that it had been declared dead.
        d.register(ms(20), PeerId(5), reg(1));
        let out = d.take_outputs();
        assert!(matches!(&out[0], DirOutput::Send(PeerId(5), FromHead::Registered { rejoined: true, .. })), "{out:?}");
        assert!(d.is_alive(NodeId([1; 16])));
        let s = d.summaries(ms(20));
        assert!(s.iter().all(|n| n.alive && n.died.is_none()), "{s:?}");
        // Once more on a new connection while the old one looks alive: the old is closed,
        // its end is no death, and the node was never dead, so it keeps what it holds.
        d.register(ms(30), PeerId(6), reg(1));
        let out = d.take_outputs();
        assert!(matches!(&out[0], DirOutput::Close(PeerId(5))), "{out:?}");
        assert!(matches!(&out[1], DirOutput::Send(PeerId(6), FromHead::Registered { rejoined: false, .. })), "{out:?}");
        d.disconnected(ms(31), PeerId(5));
        assert!(d.is_alive(NodeId([1; 16])));
        d.register(ms(32), PeerId(7), Registration { pid: 99, ..reg(1) });
        let out = d.take_outputs();
        assert!(
            matches!(&out[0], DirOutput::Send(_, FromHead::Refused { reason }) if reason.contains("already registered"))
        );
        d.heartbeat(ms(10), PeerId(3), NodeLoad::default());
        let out = d.take_outputs();
        assert!(matches!(&out[1], DirOutput::Close(PeerId(3))), "{out:?}");
        d.register(ms(10), PeerId(4), reg(0));
        assert!(matches!(&d.take_outputs()[0], DirOutput::Send(_, FromHead::Refused { .. })));
    }

    #[test]
    fn a_leaving_node_is_dead_at_once_and_status_lists_every_node_head_first() {
        let mut d = dir();
        d.register(ms(0), PeerId(1), reg(1));
        d.leaving(ms(1), PeerId(1));
        d.status(ms(2), PeerId(9), RequestId(7));
        let out = d.take_outputs();
        let status = out.iter().find_map(|o| match o {
            DirOutput::Send(
                PeerId(9),
                FromHead::Status { request_id: RequestId(7), nodes, node_timeout_ms: 1000, .. },
            ) => Some(nodes),
            _ => None,
        });
        let nodes = status.expect("status answered");
        assert!(nodes[0].head && nodes[0].alive);
        assert!(!nodes[1].alive && !nodes[1].head);
        assert_eq!(nodes[1].died.as_deref(), Some("stopped"));
    }
}
