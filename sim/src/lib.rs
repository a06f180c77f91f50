//! Deterministic simulation of Ares in one process.
//!
//! [`Sim`] runs the real sans-IO state machines (the core worker's [`CoreState`] for
//! drivers and workers, the raylet's [`Node`] for each node) and plays the part of every
//! driver around them: the network, the clock, worker processes and their executors, the
//! store's bytes. Everything comes from one seed: message order (at each step one
//! connection with pending messages is picked at random and its oldest message
//! delivered, so every connection stays FIFO as Unix sockets and QUIC streams are),
//! message delays (the virtual clock advances to each delivery), worker IDs, and the
//! programs of [`program`]. A failing seed replays exactly.
//!
//! Several nodes form a cluster around a head: node 0 runs the real `ClusterDirectory`,
//! every node reports its load to it whenever time advances, and it sends each node its
//! view (each node's fake QUIC address, resources and load), so lease requests spill back
//! between them; messages a node sends the head (jobs, the KV store, actor names) are
//! handled by it at once. A process's messages to another node's raylet travel on a
//! connection of their own, as QUIC connections do; workers read arguments stored on
//! other nodes by copying them (a pull); and a killed node's connection to the head ends,
//! so the head declares it dead and the other raylets tell their processes
//! (`NodeDied`). The head's node is never killed (a head restart is not modelled).
//!
//! Stores spill: with a small pool (see `SimConfig::spill_threshold`) the index plans
//! spills, which the sim writes at once, and reads restore through the same
//! store-op steps as a real raylet's. A worker's stored return value goes through the
//! raylet's create op one step per event (see `store::Write`): other messages come
//! between its steps (another attempt's create of the same object, the owner's delete,
//! the worker's death), and the worker's later tasks wait until it replied. Reads, pulls
//! and puts run their ops to the end at once.
//!
//! Actors run as a real process's do: a driver registers one with its node's directory
//! ([`Sim::spawn_actor`]), its `CoreState` leases a dedicated worker and pushes the
//! construction, and calls ([`Sim::call_actor`]) go on the actor's connection; the
//! simulated worker keeps a counter per hosted actor, so calls run in order return
//! 1, 2, 3… for each life. Deaths, restarts and kills are the directory's decisions, as
//! on a real node.
//!
//! Faults: [`Sim::kill_process`], [`Sim::kill_node`], [`Sim::cut`] and
//! [`Sim::partition`] (connections between processes break and do not reconnect until
//! [`Sim::heal`]), a probability of breaking a task connection on any message
//! ([`SimConfig::break_prob`]), and delays ([`SimConfig::max_delay_us`]).
//!
//! **Must not:** do real IO (no sockets, no threads, no clock but its own).

mod borrowers;
pub mod program;
mod store;
mod worker;

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use ares_common::ClientId;
use ares_common::codec::{Bytes, Value};
use ares_common::det::{DetMap, DetSet};
use ares_common::frame::FrameReader;
use ares_common::wire::{
    FromHead, FromRaylet, FromWorker, NodeLoad, Outcome, TaskKind, TaskSpec, ToHead, ToRaylet, ToWorker, WireArg,
};
use ares_common::{ActorId, Address, Endpoint, NodeId, ObjectId, ResourceSet, TaskError, TaskId, WorkerId};
use ares_core_proto::{
    ActorSpawn, Arg, ArgFailure, ArgStore, Combine, ConnId, CoreState, InlineRule, Output as CoreOutput, ReadPlan,
    StateConfig, Submit, Target, TaskScope, pin_args, plan_read,
};
use ares_object_store::slot::SlotState;
use ares_object_store::{FileId, SpillPolicy};
use ares_ownership::{Location, Status};
use ares_raylet_proto::cluster::{ClusterDirectory, DirOutput, HEAD_PEER, PeerId, Registration};
use ares_raylet_proto::node::{Node, NodeConfig, Output, TRANSFER_CLIENT};
use ares_raylet_proto::store_ops::{
    CopyOp, CopyOutcome, CreateOp, CreateOutcome, Op, OpEvent, OpStep, PinOp, PinOutcome,
};

/// How long the head waits for a silent node before declaring it dead (the default).
const NODE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a simulated create or pin waits for room (the raylet's default).
const STORE_TIMEOUT: Duration = Duration::from_secs(10);

/// A small, fast, seeded generator (splitmix64): the sim's only source of randomness.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x005E_ED0F_A7E5)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }

    fn bytes16(&mut self) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&self.next_u64().to_le_bytes());
        b[8..].copy_from_slice(&self.next_u64().to_le_bytes());
        b
    }
}

/// How to set a simulation up.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// Everything random comes from this.
    pub seed: u64,
    /// Nodes (each with its own raylet, workers and store).
    pub nodes: usize,
    /// CPUs (and workers) per node.
    pub cpus_per_node: u32,
    /// Each message is delivered up to this long after it was sent.
    pub max_delay_us: u64,
    /// Probability that delivering a task or reply breaks its connection instead.
    pub break_prob: f64,
    /// Pool size of each node.
    pub pool_size: u64,
    /// Values up to this size travel inline.
    pub max_inline: usize,
    /// Spill primaries past this fraction of the pool (1.0: never, unless a create
    /// lacks room).
    pub spill_threshold: f64,
}

impl SimConfig {
    /// One node of 2 CPUs, small delays, no breaks.
    pub fn new(seed: u64) -> Self {
        SimConfig {
            seed,
            nodes: 1,
            cpus_per_node: 2,
            max_delay_us: 50,
            break_prob: 0.0,
            pool_size: 64 << 20,
            max_inline: 1024,
            spill_threshold: 1.0,
        }
    }
}

/// A simulated process.
pub type ProcId = usize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Chan {
    /// Process → its raylet.
    ToNode(ProcId),
    /// Raylet → process.
    FromNode(ProcId),
    /// Owner → worker on task connection `n`.
    Push(usize),
    /// Worker → owner on task connection `n`.
    Reply(usize),
    /// Process → the raylet of another node.
    ToRemote(ProcId, usize),
    /// The raylet of another node → process.
    FromRemote(ProcId, usize),
}

enum Msg {
    ToRaylet(ToRaylet),
    Disconnect,
    FromRaylet(FromRaylet),
    Push(Vec<u8>),
    Replies(Vec<FromWorker>),
    Closed,
}

struct Proc {
    node: usize,
    client: ClientId,
    state: CoreState,
    alive: bool,
    /// A worker's ID and the endpoint owners connect to.
    worker: Option<(WorkerId, Endpoint)>,
    /// Where owners on other nodes connect to the worker.
    remote_endpoint: Option<Endpoint>,
    /// Its connections to other nodes' raylets: node index → its client there.
    remote: DetMap<usize, ClientId>,
    /// The actors this worker hosts: each a counter of the calls it ran.
    actors: DetMap<ActorId, i64>,
    /// Pushed tasks the worker has not started (it runs one at a time), with the task
    /// connection each came on.
    inbox: VecDeque<(usize, TaskSpec)>,
}

/// A task connection between an owner and a worker.
struct TaskConn {
    owner: ProcId,
    conn: ConnId,
    worker: ProcId,
    open: bool,
}

struct SimNode {
    node: Node,
    alive: bool,
    /// Where it "serves QUIC" (only a name: the sim routes by it).
    addr: std::net::SocketAddr,
    /// The bytes of stored objects (the pool's content).
    data: DetMap<ObjectId, Vec<u8>>,
}

/// The simulated cluster. See the crate docs.
pub struct Sim {
    cfg: SimConfig,
    rng: Rng,
    base: Instant,
    tick: Duration,
    nodes: Vec<SimNode>,
    /// The head's cluster directory (node 0 is the head), with two or more nodes.
    head: Option<ClusterDirectory>,
    procs: Vec<Proc>,
    by_client: DetMap<(usize, ClientId), ProcId>,
    /// Connections of processes to other nodes' raylets, by (node, client).
    by_remote: DetMap<(usize, ClientId), ProcId>,
    next_client: u64,
    task_conns: Vec<TaskConn>,
    by_conn: DetMap<(ProcId, ConnId), usize>,
    queues: DetMap<Chan, VecDeque<(Duration, Msg)>>,
    blocked: DetSet<(ProcId, ProcId)>,
    /// Return values being written, by worker (see [`store::Write`]).
    writes: DetMap<ProcId, store::Write>,
    /// Messages delivered so far.
    pub delivered: u64,
    /// Worker processes killed so far (by faults or reaped by a raylet).
    pub kills: u32,
    /// Task connections broken so far (cuts, partitions, random breaks).
    pub breaks: u32,
    /// Nodes killed so far.
    pub node_kills: u32,
    /// Writes of a return value begun while another of the same object was in flight.
    pub create_races: u32,
}

/// Functions the simulated workers run, by name: every value is an rkyv `i64`, `Vec<u8>`
/// or `Vec<i64>`.
pub mod functions {
    /// `add(a, b, ..) -> i64`: the sum of its `i64` arguments.
    pub const ADD: &str = "add";
    /// `big(n) -> Vec<u8>`: [`super::BIG`] bytes of `n as u8` (stored, not inline).
    pub const BIG: &str = "big";
    /// `measure(bytes) -> i64`: length plus the first byte.
    pub const MEASURE: &str = "measure";
    /// `sum_list(list) -> i64`: the sum of a gathered `Vec<i64>`.
    pub const SUM_LIST: &str = "sum_list";
    /// `fail(n)`: fails with the application error "boom n".
    pub const FAIL: &str = "fail";
    /// `spawn(n) -> i64`: submits `add(n)` from the worker, drops its ref, returns `n`.
    pub const SPAWN: &str = "spawn";
    /// `make_refs(n) -> Vec<ObjectId>`: the worker puts `n` values (`big(n + i)`) and
    /// returns refs to them (its own objects, held for the caller).
    pub const MAKE_REFS: &str = "make_refs";
    /// The constructor of a counter actor (its state: the calls it ran, from 0).
    pub const COUNTER: &str = "Counter::new";
    /// `Counter::next() -> i64`: counts this call and returns the count, so calls run
    /// in submission order return 1, 2, 3… for each life of the actor.
    pub const NEXT: &str = "Counter::next";
}

/// The size of a `big` value.
pub const BIG: usize = 4096;

/// Merges gathered `i64` parts into a `Vec<i64>`.
pub fn combine_i64(parts: &[&[u8]]) -> Result<Bytes, String> {
    let v: Result<Vec<i64>, _> = parts.iter().map(|p| i64::decode(p)).collect();
    v.map_err(|e| e.to_string())?.encode().map_err(|e| e.to_string())
}

/// An argument of a simulated submission.
#[derive(Clone, Debug)]
pub enum SimArg {
    /// A literal `i64`.
    Int(i64),
    /// A future.
    Ref(ObjectId),
    /// Futures of `i64`s passed as one `Vec<i64>`.
    List(Vec<ObjectId>),
}

impl Sim {
    /// A simulation with `cfg.nodes` nodes, each prestarting its workers.
    pub fn new(cfg: SimConfig) -> Self {
        let mut rng = Rng::new(cfg.seed);
        let mut sim = Sim {
            base: Instant::now(),
            tick: Duration::ZERO,
            nodes: Vec::new(),
            head: None,
            procs: Vec::new(),
            by_client: DetMap::default(),
            by_remote: DetMap::default(),
            next_client: 1,
            task_conns: Vec::new(),
            by_conn: DetMap::default(),
            queues: DetMap::default(),
            blocked: DetSet::default(),
            writes: DetMap::default(),
            delivered: 0,
            kills: 0,
            breaks: 0,
            node_kills: 0,
            create_races: 0,
            rng: Rng::new(0),
            cfg: cfg.clone(),
        };
        for n in 0..cfg.nodes {
            let node_cfg = NodeConfig {
                node_id: NodeId(rng.bytes16()),
                resources: ResourceSet::new().with("CPU", cfg.cpus_per_node as f64),
                max_workers: cfg.cpus_per_node as usize,
                pool_size: cfg.pool_size,
                spill: SpillPolicy { threshold: cfg.spill_threshold, min_spill_size: 0, ..SpillPolicy::default() },
                pool_path: format!("sim-pool-{n}"),
                spread_threshold: 0.5,
            };
            let mut ids = Rng::new(rng.next_u64());
            let node = Node::new(node_cfg, Box::new(move || WorkerId(ids.bytes16())));
            let addr = std::net::SocketAddr::from(([10, 0, 0, n as u8 + 1], 7000));
            sim.nodes.push(SimNode { node, alive: true, addr, data: DetMap::default() });
        }
        sim.rng = rng;
        if cfg.nodes >= 2 {
            sim.start_head();
        }
        sim.publish_view();
        for n in 0..cfg.nodes {
            sim.nodes[n].node.prestart();
            sim.pump_node(n);
        }
        sim
    }

    /// The virtual time.
    pub fn now(&self) -> Instant {
        self.base + self.tick
    }

    /// The random generator (programs draw their operations from it too).
    pub fn rng(&mut self) -> &mut Rng {
        &mut self.rng
    }

    /// Adds a driver on `node`.
    pub fn add_driver(&mut self, node: usize) -> ProcId {
        let worker = WorkerId(self.rng.bytes16());
        let root = TaskId::root(uuid_from(self.rng.bytes16()));
        let p = self.add_proc(node, worker, root, None);
        self.send_to_node(p, ToRaylet::RegisterDriver { pid: p as u32, worker_id: worker });
        // A real driver waits for the answer before it does anything.
        self.flush(Chan::ToNode(p));
        p
    }

    fn add_proc(&mut self, node: usize, worker: WorkerId, root: TaskId, endpoint: Option<Endpoint>) -> ProcId {
        let client = ClientId(self.next_client);
        self.next_client += 1;
        let address = Address { node: self.nodes[node].node.node_id(), worker, endpoint: endpoint.clone() };
        let state = CoreState::new(StateConfig {
            address,
            root,
            max_frame: 64 << 20,
            max_in_flight: 64,
            max_lineage_bytes: 1 << 20,
            inline: InlineRule { max_inline: self.cfg.max_inline },
        });
        let p = self.procs.len();
        self.procs.push(Proc {
            node,
            client,
            state,
            alive: true,
            worker: endpoint.map(|e| (worker, e)),
            remote_endpoint: None,
            remote: DetMap::default(),
            actors: DetMap::default(),
            inbox: VecDeque::new(),
        });
        self.by_client.insert((node, client), p);
        self.nodes[node].node.connected(client);
        p
    }

    /// The ID of node `n`.
    pub fn node_id(&self, n: usize) -> NodeId {
        self.nodes[n].node.node_id()
    }

    /// The cluster as node `n`'s raylet last heard it from the head.
    pub fn view(&self, n: usize) -> &[ares_common::wire::NodeSummary] {
        self.nodes[n].node.cluster_view()
    }

    /// The jobs (drivers) the head knows of: (job, running).
    pub fn head_jobs(&self) -> Vec<(WorkerId, bool)> {
        self.head.as_ref().map_or_else(Vec::new, |d| d.jobs().iter().map(|j| (j.job, j.running)).collect())
    }

    /// The state of process `p`.
    pub fn state(&self, p: ProcId) -> &CoreState {
        &self.procs[p].state
    }

    /// Whether process `p` is alive.
    pub fn alive(&self, p: ProcId) -> bool {
        self.procs[p].alive
    }

    /// Every process ever started.
    pub fn procs(&self) -> usize {
        self.procs.len()
    }

    /// The live worker processes of `node`.
    pub fn workers(&self, node: usize) -> Vec<ProcId> {
        (0..self.procs.len())
            .filter(|p| self.procs[*p].node == node && self.procs[*p].alive && self.procs[*p].worker.is_some())
            .collect()
    }

    // ------------------------------------------------------------------ driver ops

    /// Driver `p` submits `function(args)` with `max_retries`; returns its return object.
    pub fn submit(&mut self, p: ProcId, function: &'static str, args: Vec<SimArg>, max_retries: u32) -> ObjectId {
        self.submit_on(p, function, args, max_retries, ares_common::Strategy::Default)
    }

    /// [`Sim::submit`] with a placement strategy.
    pub fn submit_on(
        &mut self,
        p: ProcId,
        function: &'static str,
        args: Vec<SimArg>,
        max_retries: u32,
        strategy: ares_common::Strategy,
    ) -> ObjectId {
        let now = self.now();
        let args = args
            .into_iter()
            .map(|a| match a {
                SimArg::Int(v) => Arg::Inline(v.encode().expect("i64 encodes")),
                SimArg::Ref(id) => Arg::Ref(id),
                SimArg::List(ids) => Arg::Gather { ids, combine: combine_i64 as Combine },
            })
            .collect();
        let s = Submit {
            function,
            shape: ResourceSet::new().with("CPU", 1.0),
            strategy,
            max_retries,
            target: Target::Pool,
            kind: TaskKind::Normal,
            keeps: Vec::new(),
            carried: Vec::new(),
            num_returns: 1,
        };
        let st = &mut self.procs[p].state;
        let tid = st.next_task_id(None);
        let id = st.submit(now, tid, s, args);
        self.pump(p);
        id
    }

    /// Driver `p` spawns a counter actor that may be restarted `max_restarts` times:
    /// registers it with the directory (waiting for the answer, as a real driver does),
    /// then leases its worker and constructs it there.
    pub fn spawn_actor(&mut self, p: ProcId, max_restarts: u32) -> ActorId {
        let id = ActorId(self.rng.bytes16());
        let register = ToRaylet::RegisterActor {
            request_id: ares_common::RequestId::FIRST_CALL,
            actor_id: id,
            class: "Counter".into(),
            name: None,
            detached: false,
            max_restarts,
            max_task_retries: 0,
        };
        self.send_to_node(p, register);
        self.flush(Chan::ToNode(p));
        let spawn = ActorSpawn {
            ctor: functions::COUNTER,
            class: "Counter".into(),
            shape: ResourceSet::new(),
            max_task_retries: 0,
            max_concurrency: 1,
            detached: false,
        };
        let now = self.now();
        let st = &mut self.procs[p].state;
        let create = st.next_task_id(None);
        st.create_actor(now, id, spawn, create, Vec::new(), Vec::new(), Vec::new());
        self.pump(p);
        id
    }

    /// Driver `p` calls `actor`'s `next`; returns the call's return object.
    pub fn call_actor(&mut self, p: ProcId, actor: ActorId) -> ObjectId {
        let now = self.now();
        let st = &mut self.procs[p].state;
        let tid = st.next_task_id(None);
        let id = st.submit_actor_call(now, tid, actor, functions::NEXT, Vec::new(), Vec::new(), Vec::new());
        self.pump(p);
        id
    }

    /// Driver `p` drops its handle on `actor` (its queued calls still run).
    pub fn drop_actor(&mut self, p: ProcId, actor: ActorId) {
        self.procs[p].state.actor_handle_dropped(actor);
        self.pump(p);
    }

    /// Driver `p` kills `actor` (as `ares::kill`: the directory ends it, and the driver
    /// fails its calls once it answers).
    pub fn kill_actor(&mut self, p: ProcId, actor: ActorId) {
        let request_id = ares_common::RequestId::FIRST_CALL.next();
        self.send_to_node(p, ToRaylet::KillActor { request_id, actor_id: actor });
        self.flush(Chan::ToNode(p));
        self.procs[p].state.actor_killed(actor);
        self.pump(p);
    }

    /// The live worker hosting `actor`, if one does.
    pub fn actor_worker(&self, actor: ActorId) -> Option<ProcId> {
        (0..self.procs.len()).find(|w| self.procs[*w].alive && self.procs[*w].actors.contains_key(&actor))
    }

    /// Driver `p` puts `value`: inline if small, else into its node's store.
    pub fn put(&mut self, p: ProcId, value: &[u8]) -> Result<ObjectId, TaskError> {
        let id = self.procs[p].state.next_put_id(None);
        let location = if self.procs[p].state.inline_rule().inline(value.len()) {
            let mut b = Bytes::with_capacity(value.len());
            b.extend_from_slice(value);
            Location::Inline(std::sync::Arc::new(b))
        } else {
            let owner = self.procs[p].state.worker_id();
            self.store_sync(p, id, value, owner)?;
            Location::stored(self.nodes[self.procs[p].node].node.node_id(), value.len() as u64)
        };
        self.procs[p].state.add_put(id, location, &[]);
        self.pump(p);
        Ok(id)
    }

    /// Driver `p` drops its handle on `id`.
    pub fn drop_ref(&mut self, p: ProcId, id: ObjectId) {
        self.procs[p].state.remove_local_ref(id);
        self.pump(p);
    }

    /// Where `id` stands in its owner `p`: `None` if `p` does not track it.
    pub fn status(&self, p: ProcId, id: ObjectId) -> Option<Status> {
        self.procs[p].state.status(id).cloned()
    }

    /// The bytes of a ready object owned by `p`.
    pub fn read(&self, p: ProcId, id: ObjectId) -> Result<Vec<u8>, String> {
        match self.procs[p].state.status(id) {
            Some(Status::Ready(Location::Inline(b))) => Ok(b.to_vec()),
            Some(Status::Ready(Location::Stored(s))) => {
                // Read where a copy is, as a pull would (checks do not copy it here).
                let n = s
                    .nodes()
                    .filter_map(|node| self.node_index(node))
                    .find(|n| self.nodes[*n].alive && self.nodes[*n].node.store().contains(id))
                    .ok_or_else(|| format!("{id} is ready but no live node's store holds it"))?;
                self.nodes[n].data.get(&id).cloned().ok_or_else(|| format!("{id} has no bytes"))
            }
            other => Err(format!("{id} is not ready: {other:?}")),
        }
    }

    // ------------------------------------------------------------------ faults

    /// Kills process `p` (as kill -9): its connections end, its raylet sees it go.
    pub fn kill_process(&mut self, p: ProcId) {
        if !self.procs[p].alive {
            return;
        }
        self.procs[p].alive = false;
        // Tasks it had not started die with it; a create it began runs on in its raylet.
        self.procs[p].inbox.clear();
        if self.procs[p].worker.is_some() {
            self.kills += 1;
        }
        self.push(Chan::ToNode(p), Msg::Disconnect);
        // Its connections to other nodes' raylets end too.
        let remote: Vec<usize> = self.procs[p].remote.keys().copied().collect();
        for n in remote {
            self.push(Chan::ToRemote(p, n), Msg::Disconnect);
        }
        for c in 0..self.task_conns.len() {
            let tc = &self.task_conns[c];
            if tc.open && (tc.worker == p || tc.owner == p) {
                self.break_conn(c);
            }
        }
    }

    /// Kills node `n` and every process on it. Processes connected to its raylet see
    /// the connection end, and the other raylets publish it dead.
    pub fn kill_node(&mut self, n: usize) {
        for p in 0..self.procs.len() {
            if self.procs[p].node == n {
                self.kill_process(p);
            }
        }
        self.nodes[n].alive = false;
        self.writes.retain(|_, w| w.node != n);
        self.node_kills += 1;
        // Its connection to the head ends: the head declares it dead at once.
        if let Some(dir) = self.head.as_mut() {
            dir.disconnected(self.tick, PeerId(n as u64));
        }
        self.carry_out_head();
        self.queues.retain(|c, _| !matches!(c, Chan::ToRemote(_, m) | Chan::FromRemote(_, m) if *m == n));
        let node = self.nodes[n].node.node_id();
        for p in 0..self.procs.len() {
            if self.procs[p].alive && self.procs[p].remote.remove(&n).is_some() {
                let now = self.now();
                self.procs[p].state.handle_node_lost(now, node, "the connection closed");
                self.pump(p);
            }
        }
        self.publish_view();
    }

    /// Node 0 becomes the head: its directory registers it and every other node, as
    /// `ares start --head` and members joining it do, and every node gets the cluster's
    /// token (so named actors, the KV store and jobs go through the head).
    fn start_head(&mut self) {
        let now = self.tick;
        let reg = |i: usize, n: &SimNode| Registration {
            node_id: n.node.node_id(),
            pid: i as u32,
            host: format!("sim{i}"),
            addr: Some(n.addr),
            total: n.node.total(),
        };
        let mut dir = ClusterDirectory::new(self.nodes[0].node.node_id(), NODE_TIMEOUT, Vec::new(), Vec::new());
        dir.register_head(now, reg(0, &self.nodes[0]), self.nodes[0].node.load());
        dir.head_serving(now, self.nodes[0].addr);
        for (i, n) in self.nodes.iter().enumerate().skip(1) {
            dir.register(now, PeerId(i as u64), reg(i, n));
        }
        self.head = Some(dir);
        for n in &mut self.nodes {
            n.node.set_cluster_token("sim".into());
        }
        self.carry_out_head();
    }

    /// Every live node reports its load to the head, which declares silent nodes dead
    /// and sends everyone its view (the head's own node takes it directly), as the
    /// head's ticker does every 100 ms.
    fn publish_view(&mut self) {
        let now = self.tick;
        let loads: Vec<(usize, NodeLoad)> =
            self.nodes.iter().enumerate().filter(|(_, n)| n.alive).map(|(i, n)| (i, n.node.load())).collect();
        let Some(dir) = self.head.as_mut() else { return };
        for (i, load) in loads {
            match i {
                0 => dir.head_load(now, load),
                i => dir.heartbeat(now, PeerId(i as u64), load),
            }
        }
        dir.tick(now);
        dir.broadcast(now);
        let view = dir.summaries(now);
        self.nodes[0].node.set_cluster_view(view);
        self.pump_node(0);
        self.carry_out_head();
    }

    /// Node `n`'s message to the head, handled at once (the head's own node talks to it
    /// as `HEAD_PEER`). Without a head, requests that need one fail.
    fn deliver_to_head(&mut self, n: usize, msg: ToHead) {
        let now = self.tick;
        let Some(dir) = self.head.as_mut() else {
            self.nodes[n].node.head_lost();
            return;
        };
        let peer = if n == 0 { HEAD_PEER } else { PeerId(n as u64) };
        dir.handle(now, peer, msg);
        self.carry_out_head();
    }

    /// Carries out the head directory's outputs: views and answers to the nodes.
    fn carry_out_head(&mut self) {
        let outs = self.head.as_mut().map(|d| d.take_outputs()).unwrap_or_default();
        for o in outs {
            let DirOutput::Send(peer, msg) = o else { continue };
            let n = peer.0 as usize;
            if !self.nodes.get(n).is_some_and(|n| n.alive) {
                continue;
            }
            match msg {
                FromHead::View { nodes } => self.nodes[n].node.set_cluster_view(nodes),
                msg @ (FromHead::Kv { .. } | FromHead::ActorName { .. } | FromHead::RestartActor { .. }) => {
                    self.nodes[n].node.head_answered(msg)
                }
                // Registration and status answers: the sim joins nodes itself.
                _ => continue,
            }
            self.pump_node(n);
        }
    }

    fn node_index(&self, id: NodeId) -> Option<usize> {
        self.nodes.iter().position(|n| n.node.node_id() == id)
    }

    /// Breaks every task connection between `a` and `b`.
    pub fn cut(&mut self, a: ProcId, b: ProcId) {
        for c in 0..self.task_conns.len() {
            let tc = &self.task_conns[c];
            if tc.open && ((tc.owner == a && tc.worker == b) || (tc.owner == b && tc.worker == a)) {
                self.break_conn(c);
            }
        }
    }

    /// Cuts every pair between `left` and `right`, and refuses new connections between
    /// them until [`Sim::heal`].
    pub fn partition(&mut self, left: &[ProcId], right: &[ProcId]) {
        for &a in left {
            for &b in right {
                self.blocked.insert((a.min(b), a.max(b)));
                self.cut(a, b);
            }
        }
    }

    /// Lifts every partition.
    pub fn heal(&mut self) {
        self.blocked.clear();
    }

    fn break_conn(&mut self, c: usize) {
        if !self.task_conns[c].open {
            return;
        }
        self.task_conns[c].open = false;
        self.breaks += 1;
        // The owner learns after the replies already on their way.
        self.push(Chan::Reply(c), Msg::Closed);
    }

    // ------------------------------------------------------------------ the network

    fn push(&mut self, chan: Chan, msg: Msg) {
        let delay = Duration::from_micros(self.rng.below(self.cfg.max_delay_us + 1));
        let at = self.tick + delay;
        let q = self.queues.entry(chan).or_default();
        // FIFO: never before the message ahead of it.
        let at = q.back().map_or(at, |(t, _)| at.max(*t));
        q.push_back((at, msg));
    }

    fn send_to_node(&mut self, p: ProcId, msg: ToRaylet) {
        self.push(Chan::ToNode(p), Msg::ToRaylet(msg));
    }

    /// Delivers one message, picked at random among the connections that have one.
    /// Returns whether there was one.
    pub fn step(&mut self) -> bool {
        // A raylet runs a connection's messages in order: the ones after a create wait
        // for it to end.
        let writes = &self.writes;
        let mut ready: Vec<Chan> = self
            .queues
            .iter()
            .filter(|(c, q)| !q.is_empty() && !matches!(c, Chan::ToNode(p) if writes.contains_key(p)))
            .map(|(c, _)| *c)
            .collect();
        let mut writing: Vec<ProcId> = writes.keys().copied().collect();
        if ready.is_empty() && writing.is_empty() {
            return false;
        }
        ready.sort();
        writing.sort();
        let i = self.rng.below((ready.len() + writing.len()) as u64) as usize;
        match ready.get(i) {
            Some(chan) => self.deliver_head(*chan),
            None => self.step_write(writing[i - ready.len()]),
        }
        true
    }

    fn deliver_head(&mut self, chan: Chan) {
        let Some((at, msg)) = self.queues.get_mut(&chan).and_then(|q| q.pop_front()) else { return };
        self.tick = self.tick.max(at);
        self.delivered += 1;
        self.deliver(chan, msg);
    }

    /// Delivers everything queued on `chan` (a synchronous call must find the earlier
    /// messages of the same connection already handled).
    fn flush(&mut self, chan: Chan) {
        while self.queues.get(&chan).is_some_and(|q| !q.is_empty()) {
            self.deliver_head(chan);
        }
    }

    fn deliver(&mut self, chan: Chan, msg: Msg) {
        let now = self.now();
        match (chan, msg) {
            (Chan::ToNode(p), Msg::ToRaylet(m)) => {
                let n = self.procs[p].node;
                if self.nodes[n].alive {
                    let client = self.procs[p].client;
                    self.nodes[n].node.handle(client, m);
                    self.pump_node(n);
                }
            }
            (Chan::ToNode(p), Msg::Disconnect) => {
                let n = self.procs[p].node;
                if self.nodes[n].alive {
                    let client = self.procs[p].client;
                    self.nodes[n].node.disconnected(client);
                    self.pump_node(n);
                }
            }
            (Chan::FromNode(p), Msg::FromRaylet(m)) => {
                if !self.procs[p].alive {
                    return;
                }
                match m {
                    // Answers to the synchronous calls the sim makes itself.
                    FromRaylet::Registered { .. } | FromRaylet::Sealed { .. } => {}
                    m => {
                        self.procs[p].state.handle_raylet(now, m);
                        self.pump(p);
                    }
                }
            }
            (Chan::Push(c), Msg::Push(bytes)) => {
                let tc = &self.task_conns[c];
                if !tc.open || !self.procs[tc.worker].alive {
                    return;
                }
                if self.cfg.break_prob > 0.0 && self.rng.chance(self.cfg.break_prob) {
                    return self.break_conn(c);
                }
                let worker = tc.worker;
                let mut r = FrameReader::new(std::io::Cursor::new(bytes), 64 << 20);
                while let Ok(ToWorker::Push(spec)) = r.read::<ToWorker>() {
                    self.procs[worker].inbox.push_back((c, spec));
                }
                self.run_inbox(worker);
            }
            (Chan::Reply(c), Msg::Replies(replies)) => {
                let tc = &self.task_conns[c];
                let (owner, conn) = (tc.owner, tc.conn);
                if !self.procs[owner].alive || !self.by_conn.contains_key(&(owner, conn)) {
                    return;
                }
                if tc.open && self.cfg.break_prob > 0.0 && self.rng.chance(self.cfg.break_prob) {
                    // The replies are lost with the connection.
                    self.break_conn(c);
                    return;
                }
                self.procs[owner].state.handle_replies(now, conn, replies);
                self.pump(owner);
            }
            (Chan::ToRemote(p, n), Msg::ToRaylet(m)) => {
                if let Some(&client) = self.procs[p].remote.get(&n).filter(|_| self.nodes[n].alive) {
                    self.nodes[n].node.handle(client, m);
                    self.pump_node(n);
                }
            }
            (Chan::ToRemote(p, n), Msg::Disconnect) => {
                if let Some(client) = self.procs[p].remote.remove(&n).filter(|_| self.nodes[n].alive) {
                    self.by_remote.remove(&(n, client));
                    self.nodes[n].node.disconnected(client);
                    self.pump_node(n);
                }
            }
            (Chan::FromRemote(p, n), Msg::FromRaylet(m)) => {
                if !self.procs[p].alive || !self.procs[p].remote.contains_key(&n) {
                    return;
                }
                if !matches!(m, FromRaylet::Registered { .. }) {
                    let node = self.nodes[n].node.node_id();
                    self.procs[p].state.handle_node(now, node, m);
                    self.pump(p);
                }
            }
            (Chan::Reply(c), Msg::Closed) => {
                let (owner, conn) = (self.task_conns[c].owner, self.task_conns[c].conn);
                if self.by_conn.remove(&(owner, conn)).is_some() && self.procs[owner].alive {
                    self.procs[owner].state.handle_conn_closed(now, conn, "connection closed");
                    self.pump(owner);
                }
            }
            _ => unreachable!("message on the wrong kind of connection"),
        }
    }

    /// Carries out process `p`'s effects.
    fn pump(&mut self, p: ProcId) {
        while let Some(effect) = self.procs[p].state.poll() {
            let now = self.now();
            match effect {
                CoreOutput::Connect { conn, endpoint } => {
                    let target = (0..self.procs.len()).find(|w| {
                        let pr = &self.procs[*w];
                        pr.alive
                            && (pr.worker.as_ref().is_some_and(|(_, e)| *e == endpoint)
                                || pr.remote_endpoint.as_ref() == Some(&endpoint))
                    });
                    match target.filter(|w| !self.blocked.contains(&(p.min(*w), p.max(*w)))) {
                        Some(worker) => {
                            let c = self.task_conns.len();
                            self.task_conns.push(TaskConn { owner: p, conn, worker, open: true });
                            self.by_conn.insert((p, conn), c);
                            self.procs[p].state.handle_connected(now, conn);
                        }
                        None => self.procs[p].state.handle_connect_failed(now, conn, "connection refused"),
                    }
                }
                CoreOutput::Send { conn, bytes } => {
                    if let Some(&c) = self.by_conn.get(&(p, conn))
                        && self.task_conns[c].open
                    {
                        self.push(Chan::Push(c), Msg::Push(bytes));
                    }
                }
                CoreOutput::Close(conn) => {
                    if let Some(c) = self.by_conn.remove(&(p, conn)) {
                        self.task_conns[c].open = false;
                    }
                }
                CoreOutput::ToRaylet(msg) => self.send_to_node(p, msg),
                CoreOutput::ToNode { node, msg, .. } => match self.node_index(node).filter(|n| self.nodes[*n].alive) {
                    Some(n) => {
                        if !self.procs[p].remote.contains_key(&n) {
                            let client = ClientId(self.next_client);
                            self.next_client += 1;
                            self.nodes[n].node.connected_remote(client);
                            self.procs[p].remote.insert(n, client);
                            self.by_remote.insert((n, client), p);
                            let worker_id = self.procs[p].state.worker_id();
                            let hello = ToRaylet::RegisterDriver { pid: p as u32, worker_id };
                            self.push(Chan::ToRemote(p, n), Msg::ToRaylet(hello));
                        }
                        self.push(Chan::ToRemote(p, n), Msg::ToRaylet(msg));
                    }
                    None => self.procs[p].state.handle_node_lost(now, node, "connection refused"),
                },
                CoreOutput::ForgetNode(node) => {
                    if let Some(n) = self.node_index(node)
                        && self.procs[p].remote.contains_key(&n)
                    {
                        self.push(Chan::ToRemote(p, n), Msg::Disconnect);
                    }
                }
                CoreOutput::Gather { task, slot, parts, combine } => {
                    let merged = self.merge(p, &parts, combine);
                    self.procs[p].state.handle_gathered(now, task, slot, merged);
                }
            }
        }
    }

    fn merge(&mut self, p: ProcId, parts: &[(ObjectId, Location)], combine: Combine) -> Result<Bytes, String> {
        // As the real core worker's `hold`: read here, or pull a copy first.
        let mut held = Vec::new();
        for (id, loc) in parts {
            let (me, here) = (self.procs[p].state.worker_id(), self.procs[p].state.node());
            held.push(match plan_read(loc, here) {
                ReadPlan::Inline(b) => b.to_vec(),
                ReadPlan::Local => self.read_pinned(p, *id).map_err(|e| e.to_string())?,
                ReadPlan::Pull(from) => {
                    self.pull_arg(p, *id, &from, me)?;
                    self.procs[p].state.add_copy(*id, here);
                    self.read_pinned(p, *id).map_err(|e| e.to_string())?
                }
            });
        }
        combine(&held.iter().map(|b| &b[..]).collect::<Vec<_>>())
    }

    /// Carries out node `n`'s outputs.
    fn pump_node(&mut self, n: usize) {
        while let Some(o) = self.nodes[n].node.poll() {
            match o {
                Output::Send(client, msg) => {
                    if let Some(&p) = self.by_client.get(&(n, client)) {
                        self.push(Chan::FromNode(p), Msg::FromRaylet(msg));
                    } else if let Some(&p) = self.by_remote.get(&(n, client)) {
                        self.push(Chan::FromRemote(p, n), Msg::FromRaylet(msg));
                    }
                }
                Output::Close(client) => {
                    if let Some(&p) = self.by_client.get(&(n, client)) {
                        self.kill_process(p);
                    } else if let Some(p) = self.by_remote.remove(&(n, client)) {
                        self.procs[p].remote.remove(&n);
                        self.nodes[n].node.disconnected(client);
                        let (now, node) = (self.now(), self.nodes[n].node.node_id());
                        self.procs[p].state.handle_node_lost(now, node, "the raylet closed the connection");
                        self.pump(p);
                    }
                }
                Output::StartWorker(id) => self.start_worker(n, id),
                Output::ReapWorker(w) => {
                    let p = (0..self.procs.len()).find(|p| {
                        self.procs[*p].node == n && self.procs[*p].worker.as_ref().is_some_and(|(i, _)| *i == w)
                    });
                    if let Some(p) = p {
                        self.kill_process(p);
                    }
                }
                // A spill is written at once. The sim's bytes stay in `data` whether in
                // the pool or "on disk"; the index alone says which, as it does for a
                // real node (a restore pins through it).
                Output::Spill(job) => {
                    let mut pos = 0;
                    let offsets: Vec<u64> = job
                        .items
                        .iter()
                        .map(|item| {
                            let at = pos;
                            if item.slot.state() == SlotState::Spilling {
                                pos += item.size;
                            }
                            at
                        })
                        .collect();
                    let file = |f: FileId| format!("sim-spill-{}", f.0);
                    self.nodes[n].node.spill_finished(&job, Ok(&offsets), Duration::ZERO, file);
                }
                Output::RemoveSpillFile(_) | Output::SpaceFreed => {}
                // No spill fails here; resume at once if asked.
                Output::ResumeSpillAfter(_) => self.nodes[n].node.store_side().resume_spill(),
                Output::ToHead(msg) => self.deliver_to_head(n, msg),
                // A transfer: the bytes are copied from the source node, if it lives.
                Output::Pull { object, node, .. } => {
                    let result = self.copy_object(object, node, n, None);
                    let bytes = self.nodes[n].data.get(&object).map_or(0, |d| d.len() as u64);
                    self.nodes[n].node.pull_finished(object, node, result, bytes)
                }
                // Only a head moves detached actors to a node, and there is none here.
                Output::ConstructActor { actor_id, lease_id, worker, .. } => {
                    let no = Err("the simulation has no head to restart actors".to_string());
                    self.nodes[n].node.actor_constructed(actor_id, lease_id, worker, no)
                }
            }
        }
    }

    fn start_worker(&mut self, n: usize, id: WorkerId) {
        let endpoint = Endpoint::Unix(format!("sim/node{n}/worker-{id}"));
        let root = TaskId::root(uuid_from(self.rng.bytes16()));
        let p = self.add_proc(n, id, root, Some(endpoint.clone()));
        let port = 20_000 + p as u16;
        let remote = Endpoint::Quic {
            node: self.nodes[n].node.node_id(),
            addr: std::net::SocketAddr::from(([10, 0, 0, n as u8 + 1], port)),
        };
        self.procs[p].remote_endpoint = Some(remote.clone());
        self.send_to_node(
            p,
            ToRaylet::RegisterWorker { worker_id: id, pid: p as u32, listen_addr: endpoint, remote_addr: Some(remote) },
        );
    }

    // ------------------------------------------------------------------ running

    /// Delivers messages and fires timers until nothing is left to happen, or fails
    /// after `max_steps` (something keeps itself busy forever).
    pub fn run_until_quiescent(&mut self, max_steps: u64) -> Result<(), String> {
        for _ in 0..max_steps {
            if !self.step() && !self.fire_next_timer() {
                return Ok(());
            }
        }
        Err(format!("not quiescent after {max_steps} steps"))
    }

    /// Moves the clock to the earliest timer of a live process and fires the timers due
    /// then. Returns false if no process waits for time.
    pub(crate) fn fire_next_timer(&mut self) -> bool {
        let next = (0..self.procs.len())
            .filter(|p| self.procs[*p].alive)
            .filter_map(|p| self.procs[p].state.poll_timeout())
            .min();
        let Some(at) = next else { return false };
        self.tick = self.tick.max(at.saturating_duration_since(self.base));
        self.fire_timers();
        true
    }

    /// Moves the clock on by `d` and fires the timers that came due.
    pub fn advance(&mut self, d: Duration) {
        self.tick += d;
        self.publish_view();
        self.fire_timers();
    }

    /// Runs the timers of every live process that came due.
    fn fire_timers(&mut self) {
        let now = self.now();
        for p in 0..self.procs.len() {
            if self.procs[p].alive && self.procs[p].state.poll_timeout().is_some_and(|t| t <= now) {
                self.procs[p].state.handle_timeout(now);
                self.pump(p);
            }
        }
    }

    /// Bytes spilled and objects restored so far, over every node (dead ones included).
    pub fn spills_and_restores(&self) -> (u64, u64) {
        self.nodes.iter().fold((0, 0), |(s, r), n| {
            let st = n.node.store().stats();
            (s + st.spilled_bytes_total, r + st.restored_objects_total)
        })
    }

    /// After quiescence with every handle dropped: no process tracks an object or a task
    /// or holds a connection, no store holds an object or a pin, and every lease is back.
    pub fn check_clean(&self) -> Result<(), String> {
        for (i, p) in self.procs.iter().enumerate().filter(|(_, p)| p.alive) {
            let st = &p.state;
            if st.owned_len() > 0 || st.pending_tasks() > 0 || st.open_conns() > 0 || st.borrowed_len() > 0 {
                return Err(format!(
                    "process {i} still tracks {} objects, {} tasks, {} connections, {} borrowed refs",
                    st.owned_len(),
                    st.pending_tasks(),
                    st.open_conns(),
                    st.borrowed_len()
                ));
            }
        }
        for (i, n) in self.nodes.iter().enumerate().filter(|(_, n)| n.alive) {
            let s = n.node.stats();
            if s.store_objects > 0 || s.store_used > 0 || s.store_pinned_objects > 0 {
                let ids: Vec<String> =
                    n.data.keys().filter(|id| n.node.store().contains(**id)).map(|id| id.to_string()).collect();

                return Err(format!(
                    "node {i} store still holds {} objects ({} bytes, {} pinned): {}",
                    s.store_objects,
                    s.store_used,
                    s.store_pinned_objects,
                    ids.join(", ")
                ));
            }
            if s.available != s.total {
                return Err(format!("node {i} has resources leased: {} of {}", s.available, s.total));
            }
        }
        Ok(())
    }
}

/// The sim's root task IDs come from its generator, through the same constructor as a
/// driver's random root.
fn uuid_from(b: [u8; 16]) -> uuid::Uuid {
    uuid::Uuid::from_bytes(b)
}
