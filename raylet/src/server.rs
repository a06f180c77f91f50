//! The raylet's IO driver: accepts client connections, decodes their frames, feeds the
//! pure [`Node`], and carries out its outputs (sends, worker starts and reaps, spill
//! jobs). It decides nothing itself.
//!
//! One thread accepts, one thread per active connection reads, one thread spawns and
//! reaps workers, and one writes spill files. A connection quiet for
//! [`ares_net::PARK_AFTER`] (or new and not yet heard from) is parked on one epoll thread
//! ([`ares_net::Parker`]) and gets a thread again when bytes arrive, so idle connections
//! cost no thread. All state sits behind one mutex; replies are
//! whole frames queued on each client's non-blocking sender while it is held, so frames
//! never interleave and a client that stops reading cannot stall the raylet. A
//! connection that sends a malformed or oversized frame is closed with a logged reason;
//! everyone else is unaffected. A create or a restore that lacks space waits on its own
//! connection's thread, as [`SpaceWait`] decides.

use ares_common::RequestId;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Instant;

use ares_common::ClientId;
use ares_common::det::DetMap;
use ares_common::error::{FrameError, TaskError};
use ares_common::wire::{FromRaylet, FromWorker, NodeLoad, NodeSummary, Outcome, TaskSpec, ToHead, ToRaylet, ToWorker};
use ares_common::{ActorId, Config, Endpoint, LeaseId, NodeId, ObjectId, ResourceSet, WorkerId};
use ares_net::{Listener, Receiver};
use ares_object_store::{Pool, Reservations, Reserve, SpillDirs, SpillJob, SpillPolicy};

use crate::membership::{self, LocalNode, Me, Membership, Role};
use crate::node::{Node, NodeConfig, Output, TRANSFER_CLIENT};
use crate::object_manager::{self, TransferHost};
use crate::spawner::{self, Children, SpawnCmd, SpawnEvents, SpawnSpec};
use crate::store_ops::{CopyOp, CopyOutcome, CreateOp, CreateOutcome, Op, OpEvent, OpStep, PinOp, PinOutcome};

/// How to start a raylet.
#[derive(Clone, Debug)]
pub struct RayletConfig {
    /// Node settings (resources, pool size, limits).
    pub node: Config,
    /// The executable started for workers, with `ARES_WORKER=1` in its environment.
    pub worker_program: PathBuf,
    /// Its arguments.
    pub worker_args: Vec<String>,
    /// Extra environment for workers.
    pub worker_env: Vec<(String, String)>,
    /// Where the pool file is made (and unlinked at once); `Config::shm_dir` by default.
    pub shm_dir: PathBuf,
    /// The node's ID (random if not given; tests fix it).
    pub node_id: Option<NodeId>,
    /// Its part in a cluster: `None` for a node on its own (the embedded default).
    pub cluster: Option<Role>,
}

impl RayletConfig {
    /// Workers re-execute the current executable.
    pub fn embedded(node: Config) -> io::Result<Self> {
        let (worker_program, worker_args, worker_env) = match node.worker_command.clone() {
            Some(c) => (c.program, c.args, c.env),
            None => (std::env::current_exe()?, Vec::new(), Vec::new()),
        };
        Ok(RayletConfig {
            shm_dir: node.shm_dir.clone(),
            node,
            worker_program,
            worker_args,
            worker_env,
            node_id: None,
            cluster: None,
        })
    }
}

/// A running raylet. Dropping it shuts it down.
pub struct Raylet {
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
    spawner: Option<JoinHandle<()>>,
    spiller: Option<JoinHandle<()>>,
    membership: Option<Membership>,
    /// The QUIC listener for clients on other nodes, and its accept thread.
    remote: Option<(Arc<Listener>, JoinHandle<()>)>,
    /// The bulk plane's TCP listener (same address and port as the QUIC one).
    bulk: Option<ares_net::BulkListener>,
}

/// Bytes queued for one client before it is considered stuck and disconnected.
const OUTBOX_LIMIT: usize = 256 << 20;

struct State {
    node: Node,
    clients: DetMap<ClientId, ares_net::Sender>,
    next_client: u64,
    /// Which parts of the pool have their pages reserved.
    reserved: Reservations,
}

struct Shared {
    state: Mutex<State>,
    /// Signalled when pool space is freed or a restore ends.
    space: Condvar,
    spill_dirs: SpillDirs,
    spill_tx: Mutex<Sender<SpillJob>>,
    create_timeout: std::time::Duration,
    pool: Pool,
    max_frame: usize,
    spawn: Mutex<Sender<SpawnCmd>>,
    /// The spawner's table of live workers, to signal a kill without waiting for it.
    children: Children,
    stopping: AtomicBool,
    socket_path: String,
    session_dir: PathBuf,
    listener: Listener,
    /// Connections to other nodes for pulls, by address.
    peers: Mutex<hashbrown::HashMap<std::net::SocketAddr, ares_net::QuicPeer>>,
    /// Bulk connections to other nodes, by address; empty without a join token.
    bulk_peers: Mutex<hashbrown::HashMap<std::net::SocketAddr, Arc<ares_net::BulkPeer>>>,
    /// Pulls to start, for the pull dispatcher thread.
    pull_tx: Mutex<Sender<(ObjectId, NodeId, std::net::SocketAddr)>>,
    /// Detached actors to construct, for the construction dispatcher thread.
    construct_tx: Mutex<Sender<Construct>>,
    /// Connections that have not registered yet, with the time by which they must have:
    /// a watchdog closes the late ones (a per-read timeout alone lets a peer that sends
    /// its hello a byte at a time hold a connection for hours).
    hello_deadlines: Mutex<DetMap<ClientId, Instant>>,
    /// Pauses of spilling after a failure, for the timer thread that ends them.
    resume_tx: Mutex<Sender<std::time::Duration>>,
    /// Messages to the head, for the forwarder thread (in a cluster).
    head_tx: Mutex<Option<Sender<ToHead>>>,
    /// How long a new connection may take to register.
    identify_timeout: std::time::Duration,
    /// Connections served at once.
    max_connections: usize,
    /// Holds quiet connections without a thread each.
    parker: ares_net::Parker,
    /// Refused connections, failed accepts and failed page reservations, logged at most
    /// every 10 s.
    refusals: Mutex<RateLog>,
}

/// A warning logged at most once per interval, with the count of the ones held back.
struct RateLog {
    last: Option<Instant>,
    held: u64,
}

impl RateLog {
    fn warn(&mut self, what: std::fmt::Arguments<'_>) {
        let now = Instant::now();
        if self.last.is_some_and(|t| now.duration_since(t) < std::time::Duration::from_secs(10)) {
            self.held += 1;
            return;
        }
        tracing::warn!("{what} ({} more like it since the last report)", self.held);
        self.last = Some(now);
        self.held = 0;
    }
}

impl Raylet {
    /// Creates the session directory and the pool, and starts serving.
    pub fn start(cfg: RayletConfig) -> io::Result<Raylet> {
        cfg.node.validate().map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        ares_net::remove_stale_session_dirs(&cfg.node.session_root);
        let tag = ares_common::hex::encode(&uuid::Uuid::new_v4().as_bytes()[..6]);
        // What a bad option makes fail comes first, before anything is left on disk (the
        // pool file is unlinked at once).
        let pool_size = cfg.node.effective_object_store_memory();
        let pool = Pool::create(&cfg.shm_dir, &tag, pool_size)?;
        let mut reserved = Reservations::new(pool_size);
        if cfg.node.preallocate_object_store {
            if let Reserve::Do(all) = reserved.begin(0, pool_size) {
                pool.reserve(0, pool_size)?;
                reserved.end(&all, true);
            }
        }
        let parker = ares_net::Parker::start("ares-raylet-parker")?;
        let session_dir = ares_net::create_session_dir(&cfg.node.session_root, &tag)?;
        let socket_path = session_dir.join("raylet.sock").to_string_lossy().into_owned();
        // Until the raylet exists (its shutdown removes the directory), a failure does.
        let made = || -> io::Result<(Listener, SpillDirs)> {
            let listener = Listener::bind(&Endpoint::Unix(socket_path.clone()))?;
            Ok((listener, SpillDirs::new(&cfg.node.effective_spill_dirs(), &tag)?))
        };
        let (listener, spill_dirs) = made().inspect_err(|_| {
            let _ = std::fs::remove_dir_all(&session_dir);
        })?;
        let num_cpus = cfg.node.effective_num_cpus();
        let node_id = cfg.node_id.unwrap_or_else(|| NodeId::from_uuid(uuid::Uuid::new_v4()));
        let mut resources = ResourceSet::new().with("CPU", num_cpus as f64);
        for (name, amount) in &cfg.node.resources {
            resources.set(name, *amount);
        }
        let node_cfg = NodeConfig {
            node_id,
            resources,
            max_workers: cfg.node.max_workers.unwrap_or(num_cpus).max(1) as usize,
            pool_size,
            spill: SpillPolicy {
                threshold: cfg.node.spill_threshold,
                min_spill_size: cfg.node.min_spill_size,
                max_file_objects: cfg.node.max_spill_file_objects,
            },
            pool_path: pool.reopen_path(),
            spread_threshold: cfg.node.scheduler_spread_threshold,
        };
        let node = Node::new(node_cfg, Box::new(|| WorkerId::from_uuid(uuid::Uuid::new_v4())));
        let (spawn_tx, spawn_rx) = mpsc::channel();
        let (spill_tx, spill_rx) = mpsc::channel();
        let (pull_tx, pull_rx) = mpsc::channel();
        let (construct_tx, construct_rx) = mpsc::channel::<Construct>();
        let (resume_tx, resume_rx) = mpsc::channel::<std::time::Duration>();
        let shared = Arc::new(Shared {
            state: Mutex::new(State { node, clients: DetMap::default(), next_client: 1, reserved }),
            space: Condvar::new(),
            spill_dirs,
            spill_tx: Mutex::new(spill_tx),
            create_timeout: cfg.node.object_create_timeout,
            pool,
            max_frame: cfg.node.max_frame_bytes,
            spawn: Mutex::new(spawn_tx),
            children: Children::default(),
            stopping: AtomicBool::new(false),
            socket_path: socket_path.clone(),
            session_dir,
            listener,
            peers: Mutex::new(hashbrown::HashMap::new()),
            bulk_peers: Mutex::new(hashbrown::HashMap::new()),
            pull_tx: Mutex::new(pull_tx),
            construct_tx: Mutex::new(construct_tx),
            resume_tx: Mutex::new(resume_tx),
            hello_deadlines: Mutex::new(DetMap::default()),
            head_tx: Mutex::new(None),
            identify_timeout: cfg.node.identify_timeout,
            max_connections: cfg.node.max_connections,
            parker,
            refusals: Mutex::new(RateLog { last: None, held: 0 }),
        });
        let mut raylet = Raylet {
            shared: shared.clone(),
            accept: None,
            spawner: None,
            spiller: None,
            membership: None,
            remote: None,
            bulk: None,
        };
        let mut env = cfg.worker_env.clone();
        if let Some(role) = cfg.cluster.clone() {
            // Join first: workers serve owners on other nodes under the cluster's
            // certificate, so they need it before the first one starts.
            env.extend(raylet.join_cluster(role, &cfg.node)?);
        }
        env.push(("ARES_WORKER".into(), "1".into()));
        env.push(("ARES_RAYLET_SOCKET".into(), socket_path));
        env.push(("ARES_SESSION_DIR".into(), shared.session_dir.to_string_lossy().into_owned()));
        env.push(("ARES_MAX_FRAME_BYTES".into(), cfg.node.max_frame_bytes.to_string()));
        env.push(("ARES_MAX_INLINE_BYTES".into(), cfg.node.max_inline_bytes.to_string()));
        let spec = SpawnSpec {
            program: cfg.worker_program.clone(),
            args: cfg.worker_args.clone(),
            env,
            session_dir: shared.session_dir.clone(),
            register_timeout: cfg.node.worker_register_timeout,
        };
        let events = Events(Arc::downgrade(&shared));
        let children = shared.children.clone();
        raylet.spawner = Some(
            std::thread::Builder::new()
                .name("ares-raylet-spawner".into())
                .spawn(move || spawner::run(spec, spawn_rx, children, events))?,
        );
        {
            let mut st = shared.lock();
            st.node.prestart();
            shared.carry_out(&mut st);
        }
        let weak = Arc::downgrade(&shared);
        raylet.spiller = Some(
            std::thread::Builder::new().name("ares-raylet-spill".into()).spawn(move || spill_loop(weak, spill_rx))?,
        );
        let weak = Arc::downgrade(&shared);
        std::thread::Builder::new().name("ares-raylet-pulls".into()).spawn(move || {
            while let Ok((object, node, addr)) = pull_rx.recv() {
                let Some(sh) = weak.upgrade() else { return };
                start_pull(&sh, object, node, addr);
            }
        })?;
        let weak = Arc::downgrade(&shared);
        let tick = (cfg.node.identify_timeout / 4).max(std::time::Duration::from_millis(20));
        std::thread::Builder::new().name("ares-raylet-hello".into()).spawn(move || {
            loop {
                std::thread::sleep(tick);
                let Some(sh) = weak.upgrade() else { return };
                if sh.stopping.load(Ordering::SeqCst) {
                    return;
                }
                sh.close_late_hellos(Instant::now());
            }
        })?;
        let weak = Arc::downgrade(&shared);
        std::thread::Builder::new().name("ares-raylet-spill-pause".into()).spawn(move || {
            while let Ok(pause) = resume_rx.recv() {
                std::thread::sleep(pause);
                let Some(sh) = weak.upgrade() else { return };
                let mut st = sh.lock();
                st.node.store_side().resume_spill();
                sh.carry_out(&mut st);
            }
        })?;
        let weak = Arc::downgrade(&shared);
        std::thread::Builder::new().name("ares-raylet-construct".into()).spawn(move || {
            while let Ok(c) = construct_rx.recv() {
                let Some(sh) = weak.upgrade() else { return };
                start_construct(&sh, c);
            }
        })?;
        let s = shared.clone();
        raylet.accept =
            Some(std::thread::Builder::new().name("ares-raylet-accept".into()).spawn(move || accept_loop(s, None))?);
        tracing::debug!(socket = %shared.socket_path, pool_size, "raylet started");
        Ok(raylet)
    }

    /// Joins the cluster as `role`, serves clients on other nodes and pulls on a QUIC
    /// port of its own, and returns the environment workers need to serve owners on
    /// other nodes.
    fn join_cluster(&mut self, role: Role, cfg: &Config) -> io::Result<Vec<(String, String)>> {
        let (node_id, total) = {
            let st = self.shared.lock();
            (st.node.node_id(), st.node.total())
        };
        let ip = role.ip();
        let me = Me { node_id, total, host: membership::this_host(), node_timeout: cfg.node_timeout };
        let local = Arc::new(Local(Arc::downgrade(&self.shared)));
        let m = self.membership.insert(Membership::start(role, me, local)?);
        // Mode 0600 in the private session directory; workers read it at start.
        let cred_path = self.shared.session_dir.join("cluster.cred");
        m.creds().save(&cred_path)?;
        let token = m.creds().token();
        // Pulls from other nodes present it (the head never joined anyone).
        ares_net::set_join_token(token);
        self.shared.lock().node.set_cluster_token(token.to_string());
        let weak = Arc::downgrade(&self.shared);
        let on_stream: ares_net::StreamHandler = Arc::new(move |stream| {
            if let Some(sh) = weak.upgrade() {
                object_manager::serve(sh, stream);
            }
        });
        let weak = Arc::downgrade(&self.shared);
        let on_bulk: ares_net::BulkHandler = Arc::new(move |conn| {
            let weak = weak.clone();
            object_manager::serve_bulk(move || weak.upgrade().map(|sh| sh as Arc<dyn TransferHost>), conn);
        });
        let (listener, bulk) = bind_quic_and_bulk(node_id, ip, m.creds(), on_stream, on_bulk)?;
        let listener = Arc::new(listener);
        self.bulk = bulk;
        let addr = listener.endpoint().quic_addr().expect("bind_quic_with gives a QUIC endpoint");
        let (s, l) = (self.shared.clone(), listener.clone());
        let accept =
            std::thread::Builder::new().name("ares-raylet-remote".into()).spawn(move || accept_loop(s, Some(l)))?;
        self.remote = Some((listener, accept));
        m.serving(addr)?;
        tracing::info!(%addr, "serving clients on other nodes");
        // Off the node's lock: the head's own directory answers on this thread.
        let (head_tx, head_rx) = mpsc::channel::<ToHead>();
        let (link, weak) = (m.head_link(), Arc::downgrade(&self.shared));
        std::thread::Builder::new().name("ares-raylet-head".into()).spawn(move || {
            while let Ok(msg) = head_rx.recv() {
                if link.send(msg).is_err() {
                    with_node(&weak, Node::head_lost);
                }
            }
        })?;
        *self.shared.head_tx.lock().unwrap_or_else(|p| p.into_inner()) = Some(head_tx);
        Ok(vec![
            ("ARES_CLUSTER_CRED".into(), cred_path.to_string_lossy().into_owned()),
            ("ARES_NODE_IP".into(), ip.to_string()),
            ("ARES_NODE_ID".into(), ares_common::hex::encode(&node_id.0)),
        ])
    }

    /// Where this node serves clients on other nodes and pulls (QUIC), in a cluster.
    pub fn node_addr(&self) -> Option<std::net::SocketAddr> {
        self.remote.as_ref().and_then(|(l, _)| l.endpoint().quic_addr())
    }

    /// The head's cluster directory port (`None` on a member or a node on its own).
    pub fn cluster_addr(&self) -> Option<std::net::SocketAddr> {
        self.membership.as_ref().and_then(Membership::addr)
    }

    /// The node's ID.
    pub fn node_id(&self) -> NodeId {
        self.shared.lock().node.node_id()
    }

    /// The Unix socket clients connect to.
    pub fn socket_path(&self) -> &str {
        &self.shared.socket_path
    }

    /// The session directory (mode 0700) holding this node's sockets.
    pub fn session_dir(&self) -> &Path {
        &self.shared.session_dir
    }

    /// Stops accepting, kills and reaps every worker, closes every connection and removes
    /// the session directory. The pool file was unlinked at start.
    pub fn shutdown(&mut self) {
        if self.shared.stopping.swap(true, Ordering::SeqCst) {
            return;
        }
        {
            // Clients learn why their calls are about to fail before anything goes.
            let st = self.shared.lock();
            let reason = "the node daemon is stopping (ares stop, SIGTERM, or its driver's shutdown)".to_string();
            for c in st.clients.values() {
                let _ = c.send(&FromRaylet::ShuttingDown { reason: reason.clone() });
            }
        }
        if let Some(mut m) = self.membership.take() {
            m.shutdown();
        }
        // Ends the forwarder to the head.
        *self.shared.head_tx.lock().unwrap_or_else(|p| p.into_inner()) = None;
        self.shared.lock().node.set_stopping();
        self.shared.listener.shutdown();
        if let Some((l, accept)) = self.remote.take() {
            l.shutdown();
            let _ = accept.join();
        }
        if let Some(l) = self.bulk.take() {
            l.shutdown();
        }
        let _ = self.shared.spawn.lock().map(|s| s.send(SpawnCmd::Shutdown));
        if let Some(h) = self.spawner.take() {
            let _ = h.join();
        }
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
        {
            let st = self.shared.lock();
            for c in st.clients.values() {
                c.close();
            }
        }
        // Parked connections come back closed, and their threads clean up.
        self.shared.parker.stop();
        // New channels end the pull and construction dispatchers (what is in flight
        // finishes on its own).
        if let Ok(mut tx) = self.shared.pull_tx.lock() {
            *tx = mpsc::channel().0;
        }
        if let Ok(mut tx) = self.shared.construct_tx.lock() {
            *tx = mpsc::channel().0;
        }
        if let Ok(mut tx) = self.shared.resume_tx.lock() {
            *tx = mpsc::channel().0;
        }
        // Closing the job channel ends the spill thread after its current job.
        let (dead_tx, _) = mpsc::channel();
        if let Ok(mut tx) = self.shared.spill_tx.lock() {
            *tx = dead_tx;
        }
        if let Some(h) = self.spiller.take() {
            let _ = h.join();
        }
        self.shared.spill_dirs.remove_all();
        let _ = std::fs::remove_dir_all(&self.shared.session_dir);
    }
}

impl Drop for Raylet {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The node as membership sees it.
struct Local(std::sync::Weak<Shared>);

impl LocalNode for Local {
    fn load(&self) -> NodeLoad {
        self.0.upgrade().map(|s| s.lock().node.load()).unwrap_or_default()
    }

    fn set_view(&self, nodes: Vec<NodeSummary>) {
        with_node(&self.0, |n| n.set_cluster_view(nodes));
    }

    fn head_answered(&self, msg: ares_common::wire::FromHead) {
        with_node(&self.0, |n| n.head_answered(msg));
    }

    fn head_lost(&self) {
        with_node(&self.0, Node::head_lost);
    }

    fn head_rejoined(&self, rejoined: bool) {
        with_node(&self.0, |n| n.head_rejoined(rejoined));
    }
}

/// Runs `f` on the node, if the raylet still exists, and carries out what it decided.
fn with_node(shared: &std::sync::Weak<Shared>, f: impl FnOnce(&mut Node)) {
    if let Some(sh) = shared.upgrade() {
        let mut st = sh.lock();
        f(&mut st.node);
        sh.carry_out(&mut st);
    }
}

struct Events(std::sync::Weak<Shared>);

impl SpawnEvents for Events {
    fn exited(&self, worker: WorkerId, status: String) {
        with_node(&self.0, |n| n.worker_exited(worker, &status));
    }

    fn never_registered(&self, worker: WorkerId, message: String) {
        with_node(&self.0, |n| n.worker_never_registered(worker, &message));
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Logs a refusal or failure, at most once per interval (see [`RateLog`]).
    fn warn_limited(&self, what: std::fmt::Arguments<'_>) {
        self.refusals.lock().unwrap_or_else(|p| p.into_inner()).warn(what);
    }

    /// Gives `client` the whole hello timeout from now, if it still has a deadline.
    fn rearm_hello_deadline(&self, client: ClientId) {
        let mut d = self.hello_deadlines.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(t) = d.get_mut(&client) {
            *t = Instant::now() + self.identify_timeout;
        }
    }

    /// Closes the connections that have not registered by their deadline.
    fn close_late_hellos(&self, now: Instant) {
        let late: Vec<ClientId> = {
            let mut d = self.hello_deadlines.lock().unwrap_or_else(|p| p.into_inner());
            let late: Vec<ClientId> = d.iter().filter(|(_, t)| **t <= now).map(|(c, _)| *c).collect();
            for c in &late {
                d.remove(c);
            }
            late
        };
        if late.is_empty() {
            return;
        }
        let st = self.lock();
        for c in late {
            tracing::warn!(
                client = c.0,
                "closing a raylet connection: it did not register within {:?}",
                self.identify_timeout
            );
            // Its reader sees the end and cleans up.
            if let Some(s) = st.clients.get(&c) {
                s.close();
            }
        }
    }

    /// Carries out the node's outputs, in order (none of them blocks).
    fn carry_out(&self, st: &mut State) {
        while let Some(o) = st.node.poll() {
            match o {
                Output::Send(client, msg) => {
                    if let Some(c) = st.clients.get(&client) {
                        // On failure the connection is closed and its reader cleans up.
                        let _ = c.send(&msg);
                    }
                }
                Output::Close(client) => {
                    if let Some(c) = st.clients.get(&client) {
                        c.close();
                    }
                }
                Output::StartWorker(id) => {
                    let _ = self.spawn.lock().map(|s| s.send(SpawnCmd::Start(id)));
                }
                Output::ReapWorker(w) => {
                    // Dead before any reply that follows this output can be read.
                    self.children.kill_now(w);
                    let _ = self.spawn.lock().map(|s| s.send(SpawnCmd::Reap(w)));
                }
                Output::Spill(job) => {
                    let tx = self.spill_tx.lock().unwrap_or_else(|p| p.into_inner());
                    if let Err(mpsc::SendError(job)) = tx.send(job) {
                        // Shutting down: the objects stay in memory.
                        st.node.store_side().spill_abandoned(&job);
                    }
                }
                Output::RemoveSpillFile(f) => self.spill_dirs.remove(f),
                Output::ResumeSpillAfter(pause) => {
                    let tx = self.resume_tx.lock().unwrap_or_else(|p| p.into_inner());
                    // Shutting down: spilling stays paused.
                    let _ = tx.send(pause);
                }
                Output::SpaceFreed => self.space.notify_all(),
                Output::ToHead(msg) => {
                    let tx = self.head_tx.lock().unwrap_or_else(|p| p.into_inner());
                    if tx.as_ref().is_none_or(|tx| tx.send(msg).is_err()) {
                        st.node.head_lost();
                    }
                }
                Output::Pull { object, node, addr } => {
                    let tx = self.pull_tx.lock().unwrap_or_else(|p| p.into_inner());
                    if tx.send((object, node, addr)).is_err() {
                        st.node.pull_finished(object, node, Err("the node is shutting down".into()), 0);
                    }
                }
                Output::ConstructActor { actor_id, lease_id, worker, addr, spec } => {
                    let tx = self.construct_tx.lock().unwrap_or_else(|p| p.into_inner());
                    if tx.send(Construct { actor_id, lease_id, worker, addr, spec }).is_err() {
                        let stopping = Err("the node is shutting down".to_string());
                        st.node.actor_constructed(actor_id, lease_id, worker, stopping);
                    }
                }
            }
        }
    }

    /// Carries out a store op (see [`crate::store_ops`]): its waits for room on the `space`
    /// condvar, its page reservations and restore reads with the lock released. Returns
    /// how it ended, with the lock held again.
    fn run_op<'a, O: Op>(&'a self, mut st: MutexGuard<'a, State>, mut op: O) -> (MutexGuard<'a, State>, O::Outcome) {
        let mut event = OpEvent::Go;
        loop {
            // A connection this driver saw close is gone before the node hears of it.
            let closed = st.clients.get(&op.client()).is_some_and(|c| c.peer_closed());
            match op.advance(&mut st.node, Instant::now(), closed, event) {
                OpStep::Wait(d) => {
                    self.carry_out(&mut st);
                    st = self.space.wait_timeout(st, d).unwrap_or_else(|p| p.into_inner()).0;
                    event = OpEvent::Go;
                }
                OpStep::Reserve { offset, len } => {
                    let (g, reserved) = self.reserve_pages(st, offset, len);
                    st = g;
                    event = OpEvent::Reserved(reserved);
                }
                OpStep::Read(job) => {
                    drop(st);
                    let started = Instant::now();
                    let result = self.spill_dirs.read(&self.pool, &job).map_err(|e| e.to_string());
                    let took = started.elapsed();
                    st = self.lock();
                    event = OpEvent::Read { result, took };
                }
                OpStep::Done(outcome) => return (st, outcome),
            }
        }
    }

    /// Reserves the filesystem's pages under `[offset, offset + len)` before the range
    /// is handed to anyone who writes it (see [`ares_object_store::reserve`]), with the
    /// lock released during the IO. The error (`SharedMemoryFull`) names the filesystem
    /// and the fix; the caller takes the allocation back.
    fn reserve_pages<'a>(
        &'a self,
        mut st: MutexGuard<'a, State>,
        offset: u64,
        len: u64,
    ) -> (MutexGuard<'a, State>, Result<(), TaskError>) {
        loop {
            match st.reserved.begin(offset, len) {
                Reserve::Ready => return (st, Ok(())),
                Reserve::Wait => {
                    st = self.space.wait_timeout(st, crate::space::MAX_WAIT_STEP).unwrap_or_else(|p| p.into_inner()).0;
                }
                Reserve::Do(runs) => {
                    drop(st);
                    let done = runs.iter().try_for_each(|&(o, l)| self.pool.reserve(o, l));
                    st = self.lock();
                    st.reserved.end(&runs, done.is_ok());
                    self.space.notify_all();
                    if let Err(e) = done {
                        self.warn_limited(format_args!("{e}"));
                        return (st, Err(TaskError::SharedMemoryFull { requested: len, error: e.to_string() }));
                    }
                }
            }
        }
    }

    /// Answers `CreateObject`: space for the object, once there is room and no other
    /// copy of it is being written (see `StoreIndex::create`).
    fn create(&self, client: ClientId, request_id: RequestId, object_id: ObjectId, size: u64, owner: WorkerId) {
        let op = CreateOp::new(Instant::now(), self.create_timeout, client, object_id, size, owner);
        let (mut st, outcome) = self.run_op(self.lock(), op);
        let reply = match outcome {
            CreateOutcome::Created { offset } => FromRaylet::ObjectCreated { request_id, offset },
            CreateOutcome::Failed(error) => FromRaylet::CreateFailed { request_id, error },
            CreateOutcome::Abandoned => return self.carry_out(&mut st),
        };
        if let Some(c) = st.clients.get(&client) {
            let _ = c.send(&reply);
        }
        self.carry_out(&mut st);
    }

    /// Pins `id` for `client`, restoring it from disk first if needed: its offset and
    /// size.
    fn pin_object(&self, client: ClientId, id: ObjectId) -> (MutexGuard<'_, State>, Result<(u64, u64), TaskError>) {
        let op = PinOp::new(Instant::now(), self.create_timeout, client, id);
        let (st, outcome) = self.run_op(self.lock(), op);
        let result = match outcome {
            PinOutcome::Pinned { offset, size } => Ok((offset, size)),
            PinOutcome::Failed(error) => Err(error),
        };
        (st, result)
    }

    /// Answers `PinObject`.
    fn pin(&self, client: ClientId, request_id: RequestId, id: ObjectId) {
        let (mut st, result) = self.pin_object(client, id);
        let reply = match result {
            Ok((offset, size)) => FromRaylet::Pinned { request_id, offset, size },
            Err(error) => FromRaylet::PinFailed { request_id, error },
        };
        if let Some(c) = st.clients.get(&client) {
            let _ = c.send(&reply);
        }
        self.carry_out(&mut st);
    }

    /// Handles one message of `client`; `remote`: it came from another node.
    fn handle(&self, client: ClientId, msg: ToRaylet, remote: bool) {
        if let ToRaylet::RegisterWorker { worker_id, .. } = &msg {
            let _ = self.spawn.lock().map(|s| s.send(SpawnCmd::Registered(*worker_id)));
        }
        match msg {
            // A client on another node cannot map this node's pool: the node refuses.
            msg @ (ToRaylet::CreateObject { .. } | ToRaylet::PinObject { .. }) if remote => {
                let mut st = self.lock();
                st.node.handle(client, msg);
                self.carry_out(&mut st);
            }
            ToRaylet::CreateObject { request_id, object_id, size, owner } => {
                self.create(client, request_id, object_id, size, owner)
            }
            ToRaylet::PinObject { request_id, object_id } => self.pin(client, request_id, object_id),
            other => {
                let mut st = self.lock();
                st.node.handle(client, other);
                self.carry_out(&mut st);
            }
        }
    }

    fn disconnected(&self, client: ClientId) {
        let mut st = self.lock();
        st.clients.remove(&client);
        st.node.disconnected(client);
        self.carry_out(&mut st);
    }
}

impl TransferHost for Shared {
    fn pool(&self) -> &Pool {
        &self.pool
    }

    fn pin(&self, id: ObjectId) -> Result<(u64, u64), String> {
        let (mut st, r) = self.pin_object(TRANSFER_CLIENT, id);
        self.carry_out(&mut st);
        r.map_err(|e| e.to_string())
    }

    fn release(&self, id: ObjectId, bytes: u64) {
        let mut st = self.lock();
        st.node.release_served(id, bytes);
        self.carry_out(&mut st);
    }

    fn create_copy(&self, id: ObjectId, size: u64) -> Result<Option<u64>, String> {
        let op = CopyOp::new(Instant::now(), self.create_timeout, id, size, None);
        let (mut st, outcome) = self.run_op(self.lock(), op);
        let r = match outcome {
            CopyOutcome::Created { offset } => Ok(Some(offset)),
            CopyOutcome::Exists => Ok(None),
            CopyOutcome::Failed(error) => Err(error.to_string()),
        };
        self.carry_out(&mut st);
        r
    }

    fn finish_copy(&self, id: ObjectId, ok: bool) {
        let mut st = self.lock();
        st.node.finish_copy(id, ok);
        self.carry_out(&mut st);
    }

    fn bulk(&self, addr: std::net::SocketAddr) -> Option<Arc<ares_net::BulkPeer>> {
        let token = ares_net::join_token()?;
        let mut peers = self.bulk_peers.lock().unwrap_or_else(|p| p.into_inner());
        // Nodes come and go (a restarted one has a new port): close what idled out, and
        // forget peers with nothing kept and no pull running.
        peers.retain(|a, p| {
            p.close_expired();
            *a == addr || Arc::strong_count(p) > 1 || p.keeps_any()
        });
        Some(peers.entry(addr).or_insert_with(|| Arc::new(ares_net::BulkPeer::new(addr, token))).clone())
    }

    fn peer(&self, addr: std::net::SocketAddr) -> io::Result<ares_net::QuicPeer> {
        let lock = || self.peers.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = lock().get(&addr).filter(|p| !p.is_closed()) {
            return Ok(p.clone());
        }
        // Connect without the lock: a dead node's connect waits out its timeout, and
        // must not hold up pulls from every other node meanwhile.
        let p = ares_net::QuicPeer::connect(addr)?;
        let mut peers = lock();
        match peers.get(&addr).filter(|q| !q.is_closed()) {
            // Another pull connected first: keep one connection per node.
            Some(q) => Ok(q.clone()),
            None => {
                peers.insert(addr, p.clone());
                Ok(p)
            }
        }
    }
}

/// The node's QUIC listener and, on the same address and port over TCP, its bulk plane's,
/// so that peers need no second address: a free TCP port first, then the same UDP port
/// (another pair if that one is taken). Without a TCP port at all the node runs with QUIC
/// alone, and its objects move over QUIC.
fn bind_quic_and_bulk(
    node_id: NodeId,
    ip: std::net::IpAddr,
    creds: &ares_net::Credentials,
    on_stream: ares_net::StreamHandler,
    on_bulk: ares_net::BulkHandler,
) -> io::Result<(Listener, Option<ares_net::BulkListener>)> {
    let any = std::net::SocketAddr::new(ip, 0);
    for _ in 0..16 {
        let bulk = match ares_net::BulkListener::bind(any, creds, on_bulk.clone()) {
            Ok(b) => b,
            Err(e) => {
                tracing::warn!(%ip, "no bulk data plane (TCP: {e}); objects move over QUIC only");
                return Ok((Listener::bind_quic_with(node_id, any, creds, true, Some(on_stream))?, None));
            }
        };
        match Listener::bind_quic_with(node_id, bulk.local_addr(), creds, true, Some(on_stream.clone())) {
            Ok(l) => return Ok((l, Some(bulk))),
            // Dropping `bulk` closes it; try another pair.
            Err(e) if e.kind() == io::ErrorKind::AddrInUse => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(io::ErrorKind::AddrInUse, format!("no port on {ip} free for both UDP and TCP in 16 tries")))
}

/// A detached actor to construct (see [`Output::ConstructActor`]).
struct Construct {
    actor_id: ActorId,
    lease_id: LeaseId,
    worker: WorkerId,
    addr: Endpoint,
    spec: TaskSpec,
}

/// Constructs a detached actor the head moved here: pushes its construction to the
/// leased worker as an owner would, on a thread of its own, and reports the outcome.
fn start_construct(shared: &Arc<Shared>, c: Construct) {
    let Construct { actor_id, lease_id, worker, addr, spec } = c;
    let weak = Arc::downgrade(shared);
    let max_frame = shared.max_frame;
    let run = move || {
        let result = (|| -> Result<(), String> {
            let conn = ares_net::Connection::connect(&addr).map_err(|e| format!("connecting to its worker: {e}"))?;
            let (tx, mut rx) = conn.split::<FromWorker>(max_frame, max_frame).map_err(|e| e.to_string())?;
            tx.send(&ToWorker::Push(spec)).map_err(|e| format!("sending the construction: {e}"))?;
            // The constructor may take a while; the worker's death ends the wait.
            match rx.recv::<FromWorker>() {
                Ok(FromWorker::Done { outcome: Outcome::Failed(e), .. }) => Err(e.to_string()),
                Ok(FromWorker::Done { .. }) => Ok(()),
                Err(e) => Err(format!("its worker: {e}")),
            }
        })();
        let Some(sh) = weak.upgrade() else { return };
        let mut st = sh.lock();
        st.node.actor_constructed(actor_id, lease_id, worker, result);
        sh.carry_out(&mut st);
    };
    if let Err(e) = std::thread::Builder::new().name("ares-construct".into()).spawn(run) {
        let mut st = shared.lock();
        st.node.actor_constructed(actor_id, lease_id, worker, Err(format!("no thread to construct it: {e}")));
        shared.carry_out(&mut st);
    }
}

/// Runs one pull on a thread of its own and reports its end to the node.
fn start_pull(shared: &Arc<Shared>, object: ObjectId, node: NodeId, addr: std::net::SocketAddr) {
    let weak = Arc::downgrade(shared);
    let run = move || {
        let Some(sh) = weak.upgrade() else { return };
        let result = object_manager::pull(&*sh, object, addr);
        let mut st = sh.lock();
        let bytes = *result.as_ref().unwrap_or(&0);
        st.node.pull_finished(object, node, result.map(|_| ()), bytes);
        sh.carry_out(&mut st);
    };
    if let Err(e) = std::thread::Builder::new().name("ares-pull".into()).spawn(run) {
        let mut st = shared.lock();
        st.node.pull_finished(object, node, Err(format!("no thread for the pull: {e}")), 0);
        shared.carry_out(&mut st);
    }
}

/// Accepts clients: on this node's Unix socket, or (`remote`) owners on other nodes.
fn accept_loop(shared: Arc<Shared>, remote: Option<Arc<Listener>>) {
    let listener = remote.as_deref().unwrap_or(&shared.listener);
    let from_other_node = remote.is_some();
    loop {
        let conn = match listener.accept() {
            Ok(c) => c,
            Err(e) => {
                if shared.stopping.load(Ordering::SeqCst) {
                    return;
                }
                // Out of file descriptors, say: wait a little rather than spin on it.
                shared.warn_limited(format_args!("accept failed: {e}"));
                std::thread::sleep(std::time::Duration::from_millis(50));
                continue;
            }
        };
        if shared.stopping.load(Ordering::SeqCst) {
            return;
        }
        let open = shared.lock().clients.len();
        if open >= shared.max_connections {
            shared.warn_limited(format_args!(
                "refusing a connection: {open} are open, the limit (max_connections, --max-connections) is {}",
                shared.max_connections
            ));
            drop(conn);
            continue;
        }
        // Its first message must be a small registration: a peer that has not said who it
        // is may announce no more than that.
        let hello = ares_common::frame::MAX_HELLO_FRAME;
        let (out, rx) = match conn.split_hello_first::<ToRaylet>(hello, shared.max_frame, OUTBOX_LIMIT) {
            Ok(halves) => halves,
            Err(e) => {
                shared.warn_limited(format_args!("refusing a connection: {e}"));
                continue;
            }
        };
        let id = {
            let mut st = shared.lock();
            let id = ClientId(st.next_client);
            st.next_client += 1;
            st.clients.insert(id, out);
            let deadline = Instant::now() + shared.identify_timeout;
            shared.hello_deadlines.lock().unwrap_or_else(|p| p.into_inner()).insert(id, deadline);
            if from_other_node {
                st.node.connected_remote(id);
            } else {
                st.node.connected(id);
            }
            id
        };
        // It gets a thread once it has something to say.
        if let Some(rx) = park(&shared, id, rx, from_other_node, false) {
            spawn_serve(shared.clone(), id, rx, from_other_node, false);
        }
    }
}

/// Serves `client`'s connection on a thread of its own; `registered`: its hello was read.
fn spawn_serve(shared: Arc<Shared>, client: ClientId, rx: Receiver, remote: bool, registered: bool) {
    let s = shared.clone();
    let spawned = std::thread::Builder::new()
        .name("ares-raylet-conn".into())
        .spawn(move || serve(s, client, rx, remote, registered));
    if let Err(e) = spawned {
        shared.warn_limited(format_args!("closing a connection: no thread for it: {e}"));
        shared.disconnected(client);
    }
}

/// Hands a quiet connection to the parker, which serves it on a new thread once bytes
/// (or its end) arrive. Gives the receiver back if it cannot be parked (QUIC).
fn park(shared: &Arc<Shared>, client: ClientId, rx: Receiver, remote: bool, registered: bool) -> Option<Receiver> {
    let weak = Arc::downgrade(shared);
    let resume: ares_net::Resume = Box::new(move |rx| {
        if let Some(s) = weak.upgrade() {
            if !registered {
                // It has spoken: from now it has the timeout to finish its hello, however
                // long this daemon took to get to it (10 000 clients connecting at once
                // can keep the parker and the scheduler busy for longer than that).
                s.rearm_hello_deadline(client);
            }
            spawn_serve(s, client, rx, remote, registered);
        }
    });
    shared.parker.park(rx, resume).err().map(|(rx, _)| rx)
}

/// Raises this process's soft limit on open files towards what `max_connections` needs
/// (at most to the hard limit), so the cap, not the default of 1024, decides. For the
/// daemon binary (`ares start`): a node embedded in a user's driver leaves that
/// process's limits alone (code there may `select()` on small descriptors).
pub fn raise_fd_limit(max_connections: usize) {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let l = getrlimit(Resource::Nofile);
    let want = (max_connections as u64).saturating_add(1024);
    let (soft, hard) = (l.current.unwrap_or(u64::MAX), l.maximum.unwrap_or(u64::MAX));
    if soft < want {
        let new = want.min(hard);
        if setrlimit(Resource::Nofile, Rlimit { current: Some(new), maximum: l.maximum }).is_err() || new < want {
            tracing::info!(
                soft,
                hard,
                max_connections,
                "the open-file limit holds fewer connections than max_connections"
            );
        }
    }
}

fn serve(shared: Arc<Shared>, client: ClientId, mut rx: Receiver, remote: bool, registered: bool) {
    if !registered && !hello(&shared, client, &mut rx, remote) {
        rx.close();
        shared.disconnected(client);
        return;
    }
    loop {
        // Clients often send their next request at once (pin after create, release after
        // read); polling briefly saves a thread wake-up, which costs ~30 us on a VM. A
        // connection quiet for longer gives its thread up.
        if !rx.spin_until_readable(ares_net::SPIN_BEFORE_BLOCKING) && !rx.wait_readable(ares_net::PARK_AFTER) {
            match park(&shared, client, rx, remote, true) {
                None => return,
                Some(back) => rx = back,
            }
        }
        match rx.recv::<ToRaylet>() {
            Ok(msg) => shared.handle(client, msg, remote),
            Err(FrameError::Closed) => break,
            Err(e) => {
                if !shared.stopping.load(Ordering::SeqCst) {
                    tracing::warn!(client = client.0, "closing raylet connection: {e}");
                }
                break;
            }
        }
    }
    rx.close();
    shared.disconnected(client);
}

/// Reads and handles a new connection's registration; false (with the reason logged)
/// if it is not one.
fn hello(shared: &Shared, client: ClientId, rx: &mut Receiver, remote: bool) -> bool {
    // A client says who it is first, and soon (the watchdog enforces the deadline for
    // the whole hello; this timeout only ends a silent wait early).
    let first = rx.recv_timeout::<ToRaylet>(shared.identify_timeout);
    shared.hello_deadlines.lock().unwrap_or_else(|p| p.into_inner()).remove(&client);
    let why = match first {
        Ok(msg @ (ToRaylet::RegisterDriver { .. } | ToRaylet::RegisterWorker { .. })) => {
            shared.handle(client, msg, remote);
            None
        }
        Ok(_) => Some("its first message was not a registration".to_string()),
        Err(FrameError::Closed) => Some(String::new()),
        Err(e) => Some(format!("it did not register within {:?}: {e}", shared.identify_timeout)),
    };
    match why {
        None => true,
        Some(why) => {
            if !why.is_empty() && !shared.stopping.load(Ordering::SeqCst) {
                tracing::warn!(client = client.0, "closing a raylet connection: {why}");
            }
            false
        }
    }
}

/// The spill thread: writes each job's objects to a new file (no lock held), then
/// reports the outcome to the node.
fn spill_loop(shared: std::sync::Weak<Shared>, jobs: mpsc::Receiver<SpillJob>) {
    while let Ok(job) = jobs.recv() {
        let Some(sh) = shared.upgrade() else { return };
        let started = Instant::now();
        let written = sh.spill_dirs.write(&sh.pool, &job);
        let took = started.elapsed();
        let mut st = sh.lock();
        let path = |f| sh.spill_dirs.path(f).display().to_string();
        st.node.spill_finished(&job, written.as_deref().map_err(|e| e.clone()), took, path);
        sh.carry_out(&mut st);
    }
}
