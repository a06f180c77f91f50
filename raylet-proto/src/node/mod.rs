//! One node's raylet decisions as a state machine: it takes clients' messages and the
//! spill thread's and spawner's reports, and queues [`Output`]s for its driver
//! (`ares_raylet::server` for a real node, the `ares-sim` harness for simulated ones).
//!
//! It glues the pure parts together: the lease [`LeasePolicy`], the [`ActorDirectory`],
//! the store side ([`StoreSide`]: the store index and spilling) and the
//! [`OwnerDirectory`]. It does no IO, reads no clock, and iterates in a fixed order. The
//! two requests that may have to wait for pool space (create, and pin of a spilled
//! object) are split into attempts ([`Node::try_create`], [`Node::try_pin`]) that a
//! [`crate::store_ops`] op runs for the driver.

use ares_common::RequestId;
use std::collections::VecDeque;
use std::time::Duration;

use ares_common::ClientId;
use ares_common::det::DetMap;
use ares_common::error::TaskError;
use ares_common::wire::{
    ActorKey, DetachedActor, FromHead, FromRaylet, NamedActor, NodeLoad, NodeStats, NodeSummary, RestartSpec,
    SpilledObject, TaskSpec, ToHead, ToRaylet, WorkerInfo,
};
use ares_common::{ActorId, Endpoint, LeaseId, NodeId, ObjectId, ResourceSet, WorkerId};
use ares_object_store::{FileId, SpillJob, SpillPolicy, StoreError, StoreIndex};

use crate::actors::{ActorDirectory, ActorOutput, NewActor};
use crate::clients::{Clients, Ended, Kind, WorkerRec};
use crate::head_link::{Forwarded, ForwardedOp, HeadLink};
use crate::owners::OwnerDirectory;
use crate::policy::{LeaseOutput, LeasePolicy, NODE_CLIENT};
use crate::pulls::{PullManager, PullOutput};
use crate::spillback::Decision;
use crate::store_side::{StoreOutput, StoreSide};
use crate::view::{ClusterView, Here};

/// What the driver must carry out, in order.
#[derive(Debug)]
pub enum Output {
    /// Send `msg` to `client` (never blocking).
    Send(ClientId, FromRaylet),
    /// Close `client`'s connection (it broke the protocol).
    Close(ClientId),
    /// Start a worker process with this ID.
    StartWorker(WorkerId),
    /// Kill and reap this worker process.
    ReapWorker(WorkerId),
    /// Write these objects to a spill file (off the lock), then report with
    /// [`Node::spill_finished`].
    Spill(SpillJob),
    /// Close this spill file: its last object is gone.
    RemoveSpillFile(FileId),
    /// Pool space was freed or a restore ended: wake waiters.
    SpaceFreed,
    /// Send this to the head's directory (key-value operations, job reports).
    ToHead(ToHead),
    /// Copy `object` from the node serving at `addr` into this node's store, then report
    /// with [`Node::pull_finished`].
    Pull {
        /// The object.
        object: ObjectId,
        /// The source node.
        node: NodeId,
        /// Where it serves pulls.
        addr: std::net::SocketAddr,
    },
    /// Spilling failed and is paused: call [`Node::resume_spill`] after this long.
    ResumeSpillAfter(Duration),
    /// Push `spec` (a detached actor's construction) to `worker` at `addr`, wait for its
    /// answer, and report with [`Node::actor_constructed`].
    ConstructActor {
        /// The actor.
        actor_id: ActorId,
        /// The lease the node holds for it.
        lease_id: LeaseId,
        /// The worker.
        worker: WorkerId,
        /// Where the worker listens.
        addr: Endpoint,
        /// The construction.
        spec: TaskSpec,
    },
}

impl From<StoreOutput> for Output {
    fn from(o: StoreOutput) -> Self {
        match o {
            StoreOutput::Spill(job) => Output::Spill(job),
            StoreOutput::RemoveSpillFile(f) => Output::RemoveSpillFile(f),
            StoreOutput::SpaceFreed => Output::SpaceFreed,
            StoreOutput::ResumeSpillAfter(d) => Output::ResumeSpillAfter(d),
        }
    }
}

/// The store client that object transfers use: it pins objects served to other nodes
/// and creates the copies pulled from them.
pub const TRANSFER_CLIENT: ClientId = ClientId(u64::MAX - 1);

/// How to set a node up.
#[derive(Clone, Debug)]
pub struct NodeConfig {
    /// The node's ID.
    pub node_id: NodeId,
    /// Its resources (its `node:<id>` resource is added).
    pub resources: ResourceSet,
    /// Worker processes in the pool at most.
    pub max_workers: usize,
    /// Pool size in bytes.
    pub pool_size: u64,
    /// When and how to spill.
    pub spill: SpillPolicy,
    /// What registration answers: the path that opens the pool.
    pub pool_path: String,
    /// Utilisation under which lease requests stay on this node (spillback's threshold).
    pub spread_threshold: f64,
}

/// The raylet's state for one node. See the module docs.
pub struct Node {
    cfg: NodeConfig,
    policy: LeasePolicy,
    actors: ActorDirectory,
    store: StoreSide,
    owners: OwnerDirectory,
    /// Who is on each connection, and the killed-worker fence.
    clients: Clients,
    /// IDs for the next workers to start, handed in by the driver (randomness).
    worker_ids: Box<dyn FnMut() -> WorkerId + Send>,
    view: ClusterView,
    /// Owners of objects being pulled here, as the requests named them.
    copy_owners: DetMap<ObjectId, WorkerId>,
    /// The link to the head: in a cluster or not, requests forwarded, actors adopted.
    head: HeadLink,
    /// Clients from other nodes connected when the link to the head was lost: the ones
    /// to close if the head declared this node dead meanwhile.
    remote_at_head_loss: Option<Vec<ClientId>>,
    /// The key-value store of a node on its own (in a cluster the head keeps it).
    kv: crate::kv::KvStore,
    /// Leases granted since start.
    leases_granted: u64,
    /// Lease requests refused as infeasible since start.
    infeasible_total: u32,
    pulls: PullManager,
    pulled_bytes: u64,
    served_bytes: u64,
    out: VecDeque<Output>,
}

impl Node {
    /// A node with `cfg`; `worker_ids` names the workers it starts.
    pub fn new(cfg: NodeConfig, worker_ids: Box<dyn FnMut() -> WorkerId + Send>) -> Self {
        let mut total = cfg.resources.clone();
        // Hard node affinity is a request for a sliver of this resource.
        total.set(&cfg.node_id.resource_name(), 1.0);
        Node {
            policy: LeasePolicy::new(total, cfg.max_workers),
            actors: ActorDirectory::new(),
            store: StoreSide::new(cfg.pool_size, cfg.spill.clone()),
            owners: OwnerDirectory::new(),
            clients: Clients::default(),
            worker_ids,
            view: ClusterView::new(cfg.spread_threshold),
            copy_owners: DetMap::default(),
            head: HeadLink::default(),
            remote_at_head_loss: None,
            kv: crate::kv::KvStore::new(),
            leases_granted: 0,
            infeasible_total: 0,
            pulls: PullManager::new(),
            pulled_bytes: 0,
            served_bytes: 0,
            out: VecDeque::new(),
            cfg,
        }
    }

    /// The next output to carry out.
    pub fn poll(&mut self) -> Option<Output> {
        self.out.pop_front().or_else(|| self.store.poll().map(Output::from))
    }

    /// The node's ID.
    pub fn node_id(&self) -> NodeId {
        self.cfg.node_id
    }

    /// The store index (read only).
    pub fn store(&self) -> &StoreIndex {
        self.store.index()
    }

    /// The store side: pins, restores, waits for room and spilling. (Creates go through
    /// [`Node::try_create`], which records the owner.)
    pub fn store_side(&mut self) -> &mut StoreSide {
        &mut self.store
    }

    /// Live actors.
    pub fn live_actors(&self) -> usize {
        self.actors.len()
    }

    /// The node is shutting down: no more waiting for space, no more decisions on
    /// disconnections.
    pub fn set_stopping(&mut self) {
        self.store.set_stopping();
    }

    /// Starts the worker pool at its full size.
    pub fn prestart(&mut self) {
        let actions = self.policy.prestart();
        self.apply(actions);
    }

    fn send(&mut self, client: ClientId, msg: FromRaylet) {
        self.out.push_back(Output::Send(client, msg));
    }

    /// Kills worker `w`: from now until its connection's end is read, what it sent
    /// before the kill and is read after it is not carried out (see [`Node::gone`]).
    fn reap(&mut self, w: WorkerId) {
        if let Some(c) = self.worker_client(w) {
            self.clients.fence(c);
        }
        self.out.push_back(Output::ReapWorker(w));
    }

    /// Whether `client` is a worker this node killed (the killed-worker fence): a create
    /// or a wait for space on its behalf is dropped. The driver checks it under its lock
    /// before each store change, so a task's retry, which starts only once its owner saw
    /// the death (or returned the lease as broken, which kills it here), is always
    /// decided after it; read late, the dead attempt's create would otherwise take the
    /// retry's copy. (A client whose connection the driver saw close is gone too; the
    /// driver adds that.)
    pub fn gone(&self, client: ClientId) -> bool {
        self.clients.fenced(client)
    }

    fn apply(&mut self, actions: Vec<LeaseOutput>) {
        for a in actions {
            match a {
                LeaseOutput::Grant { client: NODE_CLIENT, request_id, lease_id, worker } => {
                    self.leases_granted += 1;
                    let addr = self.clients.worker_addr(worker, NODE_CLIENT);
                    match (self.head.adopted(request_id), addr) {
                        (Some((actor_id, spec)), Some(addr)) => {
                            self.out.push_back(Output::ConstructActor { actor_id, lease_id, worker, addr, spec })
                        }
                        (adopted, _) => {
                            let actions = self.policy.return_lease(NODE_CLIENT, lease_id, true);
                            self.apply(actions);
                            if let Some((actor_id, _)) = adopted {
                                let actions = self.actors.adoption_failed(actor_id, "its worker is gone".into());
                                self.apply_actors(actions);
                            }
                        }
                    }
                }
                LeaseOutput::Infeasible { client: NODE_CLIENT, request_id, error } => {
                    if let Some((actor_id, _)) = self.head.adopted(request_id) {
                        let actions = self.actors.adoption_failed(actor_id, error.to_string());
                        self.apply_actors(actions);
                    }
                }
                LeaseOutput::Grant { client, request_id, lease_id, worker } => {
                    self.leases_granted += 1;
                    // A granted worker is registered; an empty path would fail the owner's
                    // connect. An owner on another node reaches it over QUIC.
                    let worker_addr =
                        self.clients.worker_addr(worker, client).unwrap_or_else(|| Endpoint::Unix(String::new()));
                    self.send(
                        client,
                        FromRaylet::LeaseGranted { request_id, lease_id, worker_id: worker, worker_addr },
                    );
                }
                LeaseOutput::Infeasible { client, request_id, error } => {
                    self.infeasible_total = self.infeasible_total.saturating_add(1);
                    self.send(client, FromRaylet::LeaseInfeasible { request_id, error });
                }
                LeaseOutput::StartWorker => {
                    let id = (self.worker_ids)();
                    self.out.push_back(Output::StartWorker(id));
                }
                LeaseOutput::ReapWorker(w) => {
                    tracing::debug!(worker = %w, "reaping a worker");
                    self.reap(w);
                }
            }
        }
    }

    fn registered(&self) -> FromRaylet {
        FromRaylet::Registered {
            node_id: self.cfg.node_id,
            pool_path: self.cfg.pool_path.clone(),
            pool_size: self.cfg.pool_size,
            cluster_token: self.head.token().cloned(),
        }
    }

    /// Sends `msg` to the head for `client`'s request; the answer comes to
    /// [`Self::head_answered`] under the ID it went with.
    fn forward(
        &mut self,
        client: ClientId,
        request_id: RequestId,
        what: ForwardedOp,
        msg: impl FnOnce(RequestId) -> ToHead,
    ) {
        let msg = self.head.forward(client, request_id, what, msg);
        self.out.push_back(Output::ToHead(msg));
    }

    /// The node joined a cluster with this token (registration hands it to clients).
    pub fn set_cluster_token(&mut self, token: String) {
        self.head.set_token(token);
    }

    // ------------------------------------------------------------------ connections

    /// A client connected.
    pub fn connected(&mut self, client: ClientId) {
        self.clients.connected(client, false);
    }

    /// A client on another node connected (over QUIC): an owner leasing workers here.
    /// Its leases name the workers' QUIC addresses; it cannot map this node's pool.
    pub fn connected_remote(&mut self, client: ClientId) {
        self.clients.connected(client, true);
    }

    /// A client's connection ended: its pins, leases, requests, holds and (if it was a
    /// core worker) owned objects go; a worker's death reaches the policy and actors.
    pub fn disconnected(&mut self, client: ClientId) {
        let Some(Ended { kind, remote }) = self.clients.ended(client) else { return };
        tracing::debug!(client = client.0, ?kind, "client disconnected");
        if let (Kind::Driver(job), false, true) = (&kind, remote, self.head.in_cluster()) {
            self.out.push_back(Output::ToHead(ToHead::JobFinished { job: *job }));
        }
        // The head may reserve a name before it reads the release; its answer is dropped.
        let release = self.head.client_gone(client);
        self.out.extend(release.into_iter().map(Output::ToHead));
        self.store.client_gone(client);
        let gone = self.owners.client_gone(client);
        self.store.delete(gone.orphans);
        for (worker, watchers) in gone.peers {
            for c in watchers {
                self.send(c, FromRaylet::PeerGone { worker });
            }
        }
        let store = self.store.index();
        self.owners.retain(|id| store.contains(id));
        self.pulls.client_gone(client);
        let mut actions = self.policy.client_gone(client);
        let mut actor_actions = self.actors.client_gone(client);
        if let Kind::Worker(w) = kind {
            actor_actions.extend(self.actors.worker_died(w));
            actions.extend(self.policy.worker_died(w));
            actions.push(LeaseOutput::ReapWorker(w));
        }
        if !self.store.stopping() {
            self.apply(actions);
            self.apply_actors(actor_actions);
        }
    }

    /// A worker process this node started exited (reported by the spawner).
    pub fn worker_exited(&mut self, worker: WorkerId, status: &str) {
        if self.clients.exited_after_registering(worker) {
            // Registered: its connection's end handles the death.
            return;
        }
        if self.store.stopping() {
            // Workers still starting when the node stops exit without registering.
            return;
        }
        tracing::warn!(%worker, %status, "worker exited before registering");
        let actions = self.policy.worker_start_failed(&format!("worker exited before registering: {status}"));
        self.apply(actions);
    }

    /// A worker this node started was killed for not registering in time: waiting
    /// requests fail at once with `message` (another start would fare no better).
    pub fn worker_never_registered(&mut self, worker: WorkerId, message: &str) {
        tracing::error!(%worker, "{message}");
        let actions = self.policy.worker_start_failed_for_good(message);
        self.apply(actions);
    }

    // ------------------------------------------------------------------ messages

    /// Handles every message but `CreateObject` and `PinObject` (see [`Node::try_create`]
    /// and [`Node::try_pin`]).
    pub fn handle(&mut self, client: ClientId, msg: ToRaylet) {
        match msg {
            ToRaylet::RegisterDriver { pid, worker_id } => {
                tracing::debug!(pid, "driver registered");
                self.clients.register_driver(client, worker_id, pid);
                if self.head.in_cluster() && !self.clients.is_remote(client) {
                    self.out.push_back(Output::ToHead(ToHead::JobStarted { job: worker_id, pid }));
                }
                self.owners.register(worker_id, client);
                let r = self.registered();
                self.send(client, r);
            }
            ToRaylet::RegisterWorker { worker_id, pid, listen_addr, remote_addr } => {
                let rec = WorkerRec { pid, addr: listen_addr, remote_addr };
                if let Err(why) = self.clients.register_worker(client, worker_id, rec) {
                    tracing::warn!(%worker_id, ?why, "rejecting a worker registration; closing the connection");
                    self.out.push_back(Output::Close(client));
                    return;
                }
                self.owners.register(worker_id, client);
                let r = self.registered();
                self.send(client, r);
                let actions = self.policy.worker_registered(worker_id);
                self.apply(actions);
            }
            ToRaylet::RequestLease { request_id, shape, dedicated, strategy, spilled } => {
                let here =
                    Here { id: self.cfg.node_id, total: self.policy.total(), available: self.policy.available() };
                match self.view.place(here, &shape, &strategy, dedicated, spilled) {
                    Decision::Local => {
                        let actions = self.policy.request(client, request_id, shape, dedicated);
                        self.apply(actions);
                    }
                    Decision::Spill(node) => {
                        match self.view.reserve(node, &shape) {
                            Some(addr) => self.send(client, FromRaylet::LeaseSpillback { request_id, node, addr }),
                            // `place` only names nodes that serve.
                            None => {
                                let actions = self.policy.request(client, request_id, shape, dedicated);
                                self.apply(actions);
                            }
                        }
                    }
                    Decision::Infeasible => {
                        self.infeasible_total = self.infeasible_total.saturating_add(1);
                        let error = self.view.infeasible(&shape, &strategy, &self.total());
                        self.send(client, FromRaylet::LeaseInfeasible { request_id, error });
                    }
                }
            }
            ToRaylet::CancelLeaseRequests { request_ids } => self.policy.cancel(client, &request_ids),
            ToRaylet::PullObject { request_id, object_id, from, owner } => {
                let local = self.store.index().contains(object_id);
                if !local {
                    self.copy_owners.insert(object_id, owner);
                }
                let actions = self.pulls.request(client, request_id, object_id, from, local);
                self.apply_pulls(actions);
            }
            ToRaylet::ReturnLease { lease_id, worker_broken } => {
                tracing::debug!(client = client.0, lease = lease_id.0, worker_broken, "lease returned");
                // A broken lease's worker is reaped: the owner lost it, make sure it is gone.
                let actions = self.policy.return_lease(client, lease_id, worker_broken);
                self.apply(actions);
            }
            ToRaylet::RegisterActor { request_id, actor_id, class, name, detached, max_restarts, max_task_retries } => {
                let a = NewActor { actor_id, class, name, detached, max_restarts, max_task_retries };
                self.register_actor(client, request_id, a);
            }
            ToRaylet::ActorStarted { actor_id, lease_id, worker_id, addr, restart } => {
                self.actor_started(client, actor_id, lease_id, worker_id, addr, restart);
            }
            ToRaylet::ActorCreateFailed { actor_id, error } => {
                let actions = self.actors.create_failed(client, actor_id, &error);
                self.apply_actors(actions);
            }
            ToRaylet::ActorWorkerLost { request_id, actor_id } => {
                let actions = self.actors.worker_lost(client, request_id, actor_id);
                self.apply_actors(actions);
            }
            ToRaylet::AddActorHold { request_id, actor_id } => {
                let actions = self.actors.add_hold(client, request_id, actor_id);
                self.apply_actors(actions);
            }
            ToRaylet::ReleaseActorHold { actor_id } => {
                let actions = self.actors.release_hold(client, actor_id);
                self.apply_actors(actions);
            }
            ToRaylet::KillActor { request_id, actor_id } => {
                let actions = self.actors.kill_request(client, request_id, actor_id);
                self.apply_actors(actions);
            }
            ToRaylet::LookupActor { request_id, by } => self.lookup_actor(client, request_id, by),
            ToRaylet::ReleaseObjects { object_ids } => self.store.release(object_ids, client),
            ToRaylet::SealObject { request_id, object_id } => {
                let error = self.store.seal(object_id, client).err().map(|e| e.to_string());
                if let Some(e) = &error {
                    tracing::warn!(%object_id, "seal rejected: {e}");
                }
                self.send(client, FromRaylet::Sealed { request_id, error });
            }
            ToRaylet::DeleteObjects { object_ids } => {
                for &id in &object_ids {
                    self.owners.forget(id);
                }
                self.store.delete(object_ids);
            }
            ToRaylet::DropCopies { object_ids } => {
                let Some(me) = self.clients.identity(client) else { return };
                let mine: Vec<ObjectId> = object_ids
                    .into_iter()
                    .filter(|&id| self.owners.owner(id) == Some(me) && self.store.index().is_secondary(id))
                    .collect();
                for &id in &mine {
                    self.owners.forget(id);
                }
                self.store.delete(mine);
            }
            ToRaylet::GetStats { request_id } => {
                let stats = self.stats();
                self.send(client, FromRaylet::Stats { request_id, stats });
            }
            ToRaylet::Kv { request_id, op } => {
                if self.head.in_cluster() {
                    self.forward(client, request_id, ForwardedOp::Kv, |id| ToHead::Kv { request_id: id, op });
                } else {
                    let (value, error) = match self.kv.apply(op) {
                        Ok(v) => (v, None),
                        Err(e) => (None, Some(e)),
                    };
                    self.send(client, FromRaylet::Kv { request_id, value, error });
                }
            }
            ToRaylet::Relay { to, msg } => {
                let Some(from) = self.clients.identity(client) else {
                    tracing::warn!(client = client.0, "relay from an unregistered client; closing the connection");
                    self.out.push_back(Output::Close(client));
                    return;
                };
                match self.owners.client_of(to) {
                    Some(dest) => {
                        // Each side hears when the other's connection ends.
                        self.owners.watch(to, client);
                        self.owners.watch(from, dest);
                        self.send(dest, FromRaylet::Relayed { from, msg });
                    }
                    None => self.send(client, FromRaylet::PeerGone { worker: to }),
                }
            }
            ToRaylet::TaskBlocked => {
                if let Some(w) = self.clients.worker_of(client) {
                    let actions = self.policy.blocked(w);
                    self.apply(actions);
                }
            }
            ToRaylet::TaskUnblocked => {
                if let Some(w) = self.clients.worker_of(client) {
                    self.policy.unblocked(w);
                }
            }
            ToRaylet::GetNodes { request_id } => {
                let nodes = if self.view.is_empty() { vec![self.summary()] } else { self.view.nodes().to_vec() };
                self.send(client, FromRaylet::Nodes { request_id, nodes });
            }
            // The driver routes local clients' creates and pins to try_create / try_pin;
            // a client on another node cannot map this pool, so it gets an answer naming
            // that rather than an allocation it could never use.
            ToRaylet::CreateObject { request_id, object_id, .. } => {
                let error = TaskError::ObjectLost {
                    object: format!("{object_id} (objects are created on the creator's own node)"),
                };
                self.send(client, FromRaylet::CreateFailed { request_id, error });
            }
            ToRaylet::PinObject { request_id, object_id } => {
                let error = TaskError::ObjectLost {
                    object: format!("{object_id} (a node's objects are pinned by its own clients; pull it first)"),
                };
                self.send(client, FromRaylet::PinFailed { request_id, error });
            }
        }
    }

    fn apply_pulls(&mut self, actions: Vec<PullOutput>) {
        let mut queue: VecDeque<PullOutput> = actions.into();
        while let Some(a) = queue.pop_front() {
            match a {
                PullOutput::Start { object, node } => match self.view.pull_addr(node) {
                    Some(addr) => self.out.push_back(Output::Pull { object, node, addr }),
                    None => {
                        let why = "not a live node of the cluster serving pulls".to_string();
                        queue.extend(self.pulls.finished(object, node, Err(why)));
                    }
                },
                PullOutput::Done { client, request_id, error } => {
                    self.send(client, FromRaylet::Pulled { request_id, error })
                }
            }
        }
    }

    /// The transfer of `object` from `node` ended, having moved `bytes`.
    pub fn pull_finished(&mut self, object: ObjectId, node: NodeId, result: Result<(), String>, bytes: u64) {
        if result.is_err() && !self.pulls.in_progress(object) {
            self.copy_owners.remove(&object);
        }
        self.pulled_bytes += bytes;
        if let Err(e) = &result {
            tracing::warn!(%object, %node, "pull failed: {e}");
        }
        let actions = self.pulls.finished(object, node, result);
        self.apply_pulls(actions);
    }

    /// Allocates a secondary (evictable, never spilled) copy of a pulled object. It is
    /// deleted when its owner's connection here ends, as primaries are; `owner` names it
    /// when the pull was not asked for here (else the request said).
    pub fn try_create_copy(&mut self, id: ObjectId, size: u64, owner: Option<WorkerId>) -> Result<u64, StoreError> {
        let offset = match self.store.create(id, size, TRANSFER_CLIENT, false) {
            Err(e @ StoreError::Exists { .. }) => {
                self.copy_owners.remove(&id);
                return Err(e);
            }
            other => other?,
        };
        if let Some(o) = owner.or_else(|| self.copy_owners.remove(&id)) {
            self.owners.created(id, o);
        }
        Ok(offset)
    }

    /// Seals a pulled copy, or drops it if its transfer failed.
    pub fn finish_copy(&mut self, id: ObjectId, ok: bool) {
        if ok {
            let _ = self.store.seal_copy(id, TRANSFER_CLIENT);
        } else {
            self.store.delete([id]);
        }
    }

    /// Releases a transfer's pin on an object it served, counting the bytes sent.
    pub fn release_served(&mut self, id: ObjectId, bytes: u64) {
        self.served_bytes += bytes;
        self.store.release([id], TRANSFER_CLIENT);
    }

    /// What this node reports to the head with each heartbeat.
    pub fn load(&self) -> NodeLoad {
        let s = self.store.index().stats();
        let mut available = self.policy.available().clone();
        available.set(&self.cfg.node_id.resource_name(), 0.0);
        NodeLoad {
            available,
            store_used: s.used,
            store_capacity: s.capacity,
            store_spilled: s.spilled_bytes,
            pending_leases: self.policy.queued() as u32,
            infeasible_leases: self.infeasible_total,
            actors: self.actors.counts(),
            demands: self.policy.demands(ares_common::wire::MAX_DEMANDS),
            workers: self.clients.worker_count() as u32,
            leases_granted: self.leases_granted,
        }
    }

    /// This node alone, as a cluster view would show it.
    fn summary(&self) -> NodeSummary {
        NodeSummary {
            node_id: self.cfg.node_id,
            pid: 0,
            host: String::new(),
            addr: None,
            head: true,
            alive: true,
            total: self.total(),
            load: self.load(),
            silent_ms: 0,
            died: None,
        }
    }

    /// The node's total resources, without its `node:<id>` resource.
    pub fn total(&self) -> ResourceSet {
        let mut t = self.policy.total().clone();
        t.set(&self.cfg.node_id.resource_name(), 0.0);
        t
    }

    /// The cluster as the head last described it (empty on a node that is not part of
    /// one). The spillback policy reads it.
    /// A node that was alive in the last view and is dead in this one is reported to this
    /// node's own clients, so owners give up its workers at once.
    pub fn set_cluster_view(&mut self, nodes: Vec<NodeSummary>) {
        let died = self.view.set(nodes);
        for node in &died {
            let actions = self.pulls.node_died(*node);
            self.apply_pulls(actions);
        }
        for node in died {
            for c in self.clients.local_registered() {
                self.send(c, FromRaylet::NodeDied { node });
            }
        }
    }

    /// The cluster as the head last described it.
    pub fn cluster_view(&self) -> &[NodeSummary] {
        self.view.nodes()
    }

    /// The node's statistics.
    pub fn stats(&self) -> NodeStats {
        let s = self.store.index().stats();
        let mut workers: Vec<WorkerInfo> = self
            .clients
            .workers()
            .map(|(id, pid)| WorkerInfo {
                worker_id: id,
                pid,
                leased: self.policy.is_leased(id),
                actor: self.actors.hosted_by(id),
            })
            .collect();
        workers.sort_by_key(|w| w.pid);
        NodeStats {
            store_capacity: s.capacity,
            store_used: s.used,
            store_objects: s.objects,
            store_pinned_bytes: s.pinned_bytes,
            store_pinned_objects: s.pinned_objects,
            store_spilled_bytes: s.spilled_bytes,
            store_spilled_objects: s.spilled_objects,
            store_spilled_bytes_total: s.spilled_bytes_total,
            store_restored_bytes_total: s.restored_bytes_total,
            store_restored_objects_total: s.restored_objects_total,
            store_spill_files: s.spill_files,
            store_spill_seconds: self.store.spill_time().as_secs_f64(),
            store_restore_seconds: self.store.restore_time().as_secs_f64(),
            store_spill_error: self.store.spill_error().map(str::to_string),
            workers,
            pulls_started: self.pulls.started(),
            pulled_bytes: self.pulled_bytes,
            served_bytes: self.served_bytes,
            node_id: self.cfg.node_id,
            total: self.policy.total().clone(),
            available: self.policy.available().clone(),
        }
    }

    // ------------------------------------------------------------------ store space
    // The store side decides, and drivers reach it through `store_side`; these add what
    // only the node knows: owners, and the clients to tell.

    /// The connection of worker `w`, if it registered here and is connected.
    pub fn worker_client(&self, w: WorkerId) -> Option<ClientId> {
        self.owners.client_of(w)
    }

    /// Allocates `size` bytes for `id`, owned by `owner`; returns the offset.
    pub fn try_create(
        &mut self,
        client: ClientId,
        id: ObjectId,
        size: u64,
        owner: WorkerId,
    ) -> Result<u64, StoreError> {
        let offset = self.store.create(id, size, client, true)?;
        self.owners.created(id, owner);
        Ok(offset)
    }

    /// Takes back `client`'s unsealed `id` (a create whose pages could not be reserved;
    /// `client` is [`TRANSFER_CLIENT`] for a pulled copy).
    pub fn abort_create(&mut self, client: ClientId, id: ObjectId) {
        if self.store.abort_create(id, client) {
            // A pull tries its next source: the copy made then belongs to the same owner.
            if client == TRANSFER_CLIENT
                && let Some(o) = self.owners.owner(id)
            {
                self.copy_owners.insert(id, o);
            }
            self.owners.forget(id);
        }
    }

    /// The spill thread wrote (or failed to write) a job in `took`: records where each
    /// object went, tells owners, and plans the next round if still over the threshold.
    /// `path` renders a spill file's path for the owners' URLs.
    pub fn spill_finished(
        &mut self,
        job: &SpillJob,
        written: Result<&[u64], String>,
        took: Duration,
        path: impl Fn(FileId) -> String,
    ) {
        let spilled = self.store.spill_finished(job, written, took);
        let mut by_owner: DetMap<ClientId, Vec<SpilledObject>> = DetMap::default();
        for (id, file, offset) in spilled {
            let size = self.store.index().size_of(id).unwrap_or(0);
            let url = format!("file://{}?offset={offset}&size={size}", path(file));
            if let Some(c) = self.owners.owner_client(id) {
                by_owner.entry(c).or_default().push(SpilledObject { object_id: id, url });
            }
        }
        for (c, objects) in by_owner {
            self.send(c, FromRaylet::ObjectsSpilled { objects });
        }
    }
}

mod actor_glue;
#[cfg(test)]
pub(crate) mod tests;
