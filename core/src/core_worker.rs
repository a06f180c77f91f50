//! The core worker's IO driver: it owns the sockets and threads around the sans-IO
//! [`CoreState`] and carries out its effects.
//!
//! - Every event (a user call, replies read from a worker connection, a raylet message,
//!   a timer) runs as `run(|state, now| ..)`: the time is read here, the state is updated
//!   under one lock, and its effects are carried out in order before the lock is let go.
//!   Effects never block: sends go through each connection's non-blocking `Sender`, so a
//!   reader thread dispatching new pushes can never wait on a peer that waits on us.
//!   The effects that may block run after the lock is released or on a thread of their
//!   own, and report back through `run`: merging a gathered argument (it pins objects at
//!   the raylet), and opening a QUIC connection to a worker or to another node's raylet
//!   (a handshake with a peer that does not answer lasts until the idle timeout; the
//!   state's messages to that node queue meanwhile, so one silent node stalls only what
//!   is sent to it).
//! - Waiters (`get`, `wait`, a handle's registration) block on the condition variable
//!   of the [`Shared`] state, after watching its version for a moment.
//! - Threads: one reader per worker connection, the raylet client's reader and event
//!   threads, one housekeeping thread for timers, and one short-lived thread per QUIC
//!   connection being opened.

use std::cell::RefCell;
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::{Duration, Instant};

use ares_common::codec::{Bytes, Value};
use ares_common::det::{DetMap, DetSet};
use ares_common::wire::{FromRaylet, FromWorker, NodeStats, ToRaylet};
use ares_common::{ActorId, Address, NodeId, ObjectId, TaskError, TaskId, WorkerId};
use ares_net::{Connection, Receiver, Sender};
use ares_object_store::Pool;
use ares_ownership::{Location, Owner, Shared, Status};

use crate::error::{Error, Result};
use crate::raylet_client::RayletClient;
use crate::state::{
    ActorSpawn, Arg, Borrow, Combine, ConnId, CoreState, Home, InlineRule, Output, ReadPlan, StateConfig, Submit,
    TaskScope, plan_read,
};
use crate::store_client::{Held, StoreClient, Stored};

/// How `get` watches for a result before blocking.
const GET_SPIN: Duration = Duration::from_micros(50);
/// How `get` of a borrowed object watches for its owner's answer before blocking: a
/// round trip to a process on the same node takes longer than a short task, and a task
/// that says it is blocked makes its raylet start another worker for the CPU it lends.
const BORROW_SPIN: Duration = Duration::from_millis(2);
/// Bytes queued for one worker before it is considered stuck.
const OUTBOX_LIMIT: usize = 1 << 30;
/// The housekeeping thread looks at least this often.
const TICK: Duration = Duration::from_millis(50);

thread_local! {
    /// The task this thread is running, if any: its submissions and puts take IDs from it.
    static SCOPE: RefCell<Option<TaskScope>> = const { RefCell::new(None) };
}

/// While alive, submissions and puts on this thread are children of a running task.
pub(crate) struct ScopeGuard(Option<TaskScope>);

impl Drop for ScopeGuard {
    fn drop(&mut self) {
        let outer = self.0.take();
        SCOPE.with(|s| *s.borrow_mut() = outer);
    }
}

/// Runs the rest of this thread's work (until the guard drops) as task `task`.
pub(crate) fn enter_task(task: TaskId) -> ScopeGuard {
    ScopeGuard(SCOPE.with(|s| s.borrow_mut().replace(TaskScope::new(task))))
}

/// How one argument of a call is given.
pub(crate) enum ArgSpec {
    /// An encoded value.
    Value(Bytes),
    /// A future.
    Ref(ObjectId),
    /// A list of futures passed as one `Vec<T>` argument.
    Gather { ids: Vec<ObjectId>, combine: Combine },
}

impl ArgSpec {
    /// The argument as the state takes it, for a value small enough to travel inline.
    fn into_unstored(self) -> Arg {
        match self {
            ArgSpec::Value(b) => Arg::Inline(b),
            ArgSpec::Ref(id) => Arg::Ref(id),
            ArgSpec::Gather { ids, combine } => Arg::Gather { ids, combine },
        }
    }
}

/// What a spawn asks of the directory and of the owner.
pub(crate) struct SpawnSpec {
    pub(crate) state: ActorSpawn,
    pub(crate) name: Option<String>,
    pub(crate) detached: bool,
    pub(crate) max_restarts: u32,
}

struct Inner {
    state: CoreState,
    conns: DetMap<ConnId, Sender>,
    /// Worker connections being opened off the lock (over QUIC, where a handshake with a
    /// peer that does not answer lasts until the idle timeout).
    opening: DetSet<ConnId>,
    /// Connections to other nodes' raylets (leases spilled there, frees of objects there).
    nodes: DetMap<NodeId, NodeLink>,
    /// Numbers each connection to another node's raylet (see [`NodeLink`]).
    next_link: u64,
}

/// The connection to another node's raylet, or one being made. It is made off the state
/// lock, so that one node that does not answer stalls only what is sent to it; `link`
/// tells this connection from an earlier or a later one to the same node, so that the
/// end of a connection nobody uses any more is not taken for the node's loss.
enum NodeLink {
    Ready {
        client: Arc<RayletClient>,
        link: u64,
    },
    /// What the state sent to the node meanwhile, in order.
    Dialing {
        link: u64,
        queued: Vec<ToRaylet>,
    },
}

impl Inner {
    /// The worker connection `conn` was opened (or failed to): the state hears of it.
    fn opened(&mut self, conn: ConnId, opened: std::io::Result<Sender>) {
        match opened {
            Ok(tx) => {
                self.conns.insert(conn, tx);
                self.state.handle_connected(Instant::now(), conn);
            }
            Err(e) => self.state.handle_connect_failed(Instant::now(), conn, &e.to_string()),
        }
    }
}

/// A merge the state asked for, carried out off the lock.
struct GatherJob {
    task: TaskId,
    slot: usize,
    parts: Vec<(ObjectId, Location)>,
    combine: Combine,
}

pub(crate) struct CoreWorker {
    shared: Shared<Inner>,
    raylet: Arc<RayletClient>,
    pub(crate) store: Arc<StoreClient>,
    max_frame: usize,
    worker_id: WorkerId,
    address: Arc<Address>,
    /// Wakes the housekeeping thread when a timer moved earlier.
    kick: (Mutex<bool>, Condvar),
    /// A worker process (its blocked waits are reported to the raylet).
    in_worker: bool,
    /// Threads of this process blocked in `get` or `wait`.
    blocked: std::sync::atomic::AtomicUsize,
    /// Whether this process's node is part of a cluster.
    in_cluster: bool,
    /// Whether this process ever decoded a borrowed ref (else registering is skipped
    /// without taking the lock).
    ever_borrowed: std::sync::atomic::AtomicBool,
    /// Where this process's node serves QUIC, once known (see [`Self::own_node_addr`]).
    node_addr: Mutex<Option<std::net::SocketAddr>>,
    me: Weak<CoreWorker>,
}

/// Settings a core worker needs.
pub(crate) struct CoreConfig {
    pub(crate) raylet_socket: String,
    pub(crate) max_inline: usize,
    pub(crate) max_frame: usize,
    pub(crate) max_in_flight: u32,
    /// Bytes of lineage kept (see `Config::max_lineage_bytes`).
    pub(crate) max_lineage_bytes: u64,
    /// The process is a worker: it reports its tasks' blocked waits to the raylet.
    pub(crate) in_worker: bool,
}

impl CoreWorker {
    /// Connects to the raylet with `hello`, registering as `worker_id` (whose root task
    /// is `root`) reachable at `address.endpoint`, and starts the background threads.
    /// `on_raylet_lost` runs if the raylet connection ends.
    pub(crate) fn start(
        cfg: CoreConfig,
        worker_id: WorkerId,
        root: TaskId,
        endpoint: Option<ares_common::Endpoint>,
        hello: ToRaylet,
        on_raylet_lost: impl FnOnce() + Send + 'static,
    ) -> Result<Arc<Self>> {
        let (raylet, registered, reader) = RayletClient::connect(&cfg.raylet_socket, cfg.max_frame, hello)?;
        let FromRaylet::Registered { pool_path, pool_size, node_id, cluster_token } = registered else {
            return Err(Error::RayletUnavailable(format!("unexpected answer to registration: {registered:?}")));
        };
        let in_cluster = cluster_token.is_some();
        if let Some(t) = cluster_token {
            // What this process presents to workers and raylets on other nodes.
            let token = t.parse::<ares_net::JoinToken>().map_err(|e| Error::RayletUnavailable(e.to_string()))?;
            ares_net::set_join_token(token);
        }
        let pool = Pool::open(&pool_path, pool_size).map_err(Error::Startup)?;
        let address = Address { node: node_id, worker: worker_id, endpoint };
        let state = CoreState::new(StateConfig {
            address: address.clone(),
            root,
            max_frame: cfg.max_frame,
            max_in_flight: cfg.max_in_flight.max(1),
            max_lineage_bytes: cfg.max_lineage_bytes,
            inline: InlineRule { max_inline: cfg.max_inline },
        });
        let cw = Arc::new_cyclic(|me| CoreWorker {
            shared: Shared::new(Inner {
                state,
                conns: DetMap::default(),
                opening: DetSet::default(),
                nodes: DetMap::default(),
                next_link: 0,
            }),
            raylet: raylet.clone(),
            store: Arc::new(StoreClient::new(raylet.clone(), pool, InlineRule { max_inline: cfg.max_inline })),
            max_frame: cfg.max_frame,
            worker_id,
            address: Arc::new(address),
            kick: (Mutex::new(false), Condvar::new()),
            in_worker: cfg.in_worker,
            blocked: std::sync::atomic::AtomicUsize::new(0),
            in_cluster,
            ever_borrowed: std::sync::atomic::AtomicBool::new(false),
            node_addr: Mutex::new(None),
            me: me.clone(),
        });
        let (weak, lost) = (Arc::downgrade(&cw), Arc::downgrade(&cw));
        let socket = cfg.raylet_socket.clone();
        raylet
            .start_reader(
                reader,
                move |msg| {
                    if let Some(cw) = weak.upgrade() {
                        cw.run(|st, now| st.handle_raylet(now, msg));
                    }
                },
                move |reason: String| {
                    if let Some(cw) = lost.upgrade() {
                        cw.run(|st, _| st.handle_raylet_lost(&socket, &reason));
                    }
                    on_raylet_lost();
                },
            )
            .map_err(Error::Startup)?;
        let weak = Arc::downgrade(&cw);
        std::thread::Builder::new()
            .name("ares-housekeeping".into())
            .spawn(move || housekeeping(weak))
            .map_err(Error::Startup)?;
        Ok(cw)
    }

    /// This core worker's ID: objects it owns name it as their owner.
    pub(crate) fn worker_id(&self) -> WorkerId {
        self.worker_id
    }

    /// The node this process runs on.
    pub(crate) fn node(&self) -> ares_common::NodeId {
        self.address.node
    }

    /// Where this process's node serves other nodes (QUIC), in a cluster: handles to
    /// actors this process owns carry it, so that a process on another node reaches the
    /// actor's directory here.
    pub(crate) fn own_node_addr(&self) -> Option<std::net::SocketAddr> {
        if !self.in_cluster {
            return None;
        }
        let mut known = self.node_addr.lock().unwrap_or_else(|p| p.into_inner());
        if known.is_none() {
            let me = self.node();
            *known = self.nodes().ok().and_then(|v| v.into_iter().find(|n| n.node_id == me)).and_then(|n| n.addr);
        }
        *known
    }

    /// This process as an owner.
    pub(crate) fn address(&self) -> Arc<Address> {
        self.address.clone()
    }

    // ------------------------------------------------------------------ the driver

    /// Runs one event that depends on the time against the state and carries out its
    /// effects.
    fn run<R>(&self, f: impl FnOnce(&mut CoreState, Instant) -> R) -> R {
        let (r, gathers) = self.run_locked(|st| f(st, Instant::now()));
        self.run_gathers(gathers);
        r
    }

    /// Like [`CoreWorker::run`], for events that do not depend on the time (reading the
    /// clock costs more than some of them: a `put` of a small value, a dropped ref).
    fn run_untimed<R>(&self, f: impl FnOnce(&mut CoreState) -> R) -> R {
        let (r, gathers) = self.run_locked(f);
        self.run_gathers(gathers);
        r
    }

    fn run_locked<R>(&self, f: impl FnOnce(&mut CoreState) -> R) -> (R, Vec<GatherJob>) {
        self.run_inner(|g| f(&mut g.state))
    }

    /// Like [`CoreWorker::run`], for events of the driver's own (a connection made or
    /// lost) that change its connection tables too.
    fn run_driver<R>(&self, f: impl FnOnce(&mut Inner) -> R) -> R {
        let (r, gathers) = self.run_inner(f);
        self.run_gathers(gathers);
        r
    }

    fn run_inner<R>(&self, f: impl FnOnce(&mut Inner) -> R) -> (R, Vec<GatherJob>) {
        let mut g = self.shared.lock();
        let r = f(&mut g);
        let mut gathers = Vec::new();
        let early = g.state.take_changed();
        if early {
            self.shared.bump();
        }
        self.carry_out(&mut g, &mut gathers);
        let changed = g.state.take_changed() || early;
        let timer = g.state.take_timer_changed();
        drop(g);
        if changed {
            self.shared.notify();
        }
        if timer {
            let (lock, cv) = &self.kick;
            *lock.lock().unwrap_or_else(|p| p.into_inner()) = true;
            cv.notify_one();
        }
        (r, gathers)
    }

    /// Carries out the state's effects, in order (under the lock: none of them blocks).
    fn carry_out(&self, g: &mut Inner, gathers: &mut Vec<GatherJob>) {
        while let Some(effect) = g.state.poll() {
            match effect {
                Output::Send { conn, bytes } => {
                    if let Some(tx) = g.conns.get(&conn) {
                        // A failed send closes the connection; its reader reports the end.
                        if let Err(e) = tx.send_framed(&bytes) {
                            tracing::debug!("push to worker failed: {e}");
                        }
                    }
                }
                // A local socket answers at once; a QUIC handshake is made off the lock.
                Output::Connect { conn, endpoint: endpoint @ ares_common::Endpoint::Quic { .. } } => {
                    g.opening.insert(conn);
                    if let Err(e) = self.open_in_background(conn, endpoint) {
                        g.opening.remove(&conn);
                        g.state.handle_connect_failed(Instant::now(), conn, &e.to_string());
                    }
                }
                Output::Connect { conn, endpoint } => {
                    g.opened(conn, open(self.me.clone(), self.max_frame, conn, &endpoint))
                }
                Output::Close(conn) => {
                    // One being opened is closed when it is (see `open_in_background`).
                    g.opening.remove(&conn);
                    if let Some(tx) = g.conns.remove(&conn) {
                        tx.close();
                    }
                }
                Output::ToRaylet(msg) => {
                    // If the raylet is gone, so is everything these messages are about.
                    let _ = self.raylet.send(&msg);
                }
                Output::ToNode { node, addr, msg } => match g.nodes.get_mut(&node) {
                    // A failed send closes the connection; its reader reports the end.
                    Some(NodeLink::Ready { client, .. }) => drop(client.send(&msg)),
                    Some(NodeLink::Dialing { queued, .. }) => queued.push(msg),
                    None => {
                        let link = g.next_link;
                        g.next_link += 1;
                        g.nodes.insert(node, NodeLink::Dialing { link, queued: vec![msg] });
                        if let Err(e) = self.dial_in_background(node, addr, link) {
                            g.nodes.remove(&node);
                            g.state.handle_node_lost(Instant::now(), node, &e.to_string());
                        }
                    }
                },
                Output::ForgetNode(node) => {
                    // One being dialled is closed when it is made (see `adopt_node`).
                    if let Some(NodeLink::Ready { client, .. }) = g.nodes.remove(&node) {
                        client.close();
                    }
                }
                Output::Gather { task, slot, parts, combine } => gathers.push(GatherJob { task, slot, parts, combine }),
            }
        }
    }

    /// The connection to `node`'s raylet, made here (off the lock) if there is none.
    fn node_client(&self, node: NodeId, addr: std::net::SocketAddr) -> Result<Arc<RayletClient>> {
        if let Some(NodeLink::Ready { client, .. }) = self.shared.lock().nodes.get(&node) {
            return Ok(client.clone());
        }
        let dialed = dial(self.worker_id, self.max_frame, addr, node);
        self.run_driver(|g| self.adopt_node(g, node, None, dialed))
    }

    /// A blocking request to the actor directory of `home` (`None`: this node's).
    fn dir_call(&self, home: Home, make: impl FnOnce(ares_common::RequestId) -> ToRaylet) -> Result<FromRaylet> {
        match home {
            Some((node, addr)) if node != self.node() => self.node_client(node, addr)?.call(make),
            _ => self.raylet.call(make),
        }
    }

    /// Dials `node` on a thread of its own for the connection `link` (see [`NodeLink`]),
    /// which reports back through [`CoreWorker::adopt_node`].
    fn dial_in_background(&self, node: NodeId, addr: std::net::SocketAddr, link: u64) -> std::io::Result<()> {
        let (me, worker_id, max_frame) = (self.me.clone(), self.worker_id, self.max_frame);
        std::thread::Builder::new().name("ares-dial".into()).spawn(move || {
            let dialed = dial(worker_id, max_frame, addr, node);
            match me.upgrade() {
                Some(cw) => drop(cw.run_driver(|g| cw.adopt_node(g, node, Some(link), dialed))),
                None => {
                    if let Ok((client, _)) = dialed {
                        client.close();
                    }
                }
            }
        })?;
        Ok(())
    }

    /// Takes a dialled connection to `node` into the table: the one dialled for `link`
    /// only if that dial is still wanted (the state may have forgotten the node
    /// meanwhile), one dialled by a caller (`link` `None`) unless a connection is
    /// already made. Messages queued while dialling go first, in order; a failed dial
    /// that was wanted is the node's loss to the state.
    fn adopt_node(
        &self,
        g: &mut Inner,
        node: NodeId,
        link: Option<u64>,
        dialed: Result<(Arc<RayletClient>, Receiver)>,
    ) -> Result<Arc<RayletClient>> {
        let wanted = match (g.nodes.get(&node), link) {
            (Some(NodeLink::Ready { client, .. }), None) => {
                // Another thread connected meanwhile: keep the first.
                if let Ok((ours, _)) = dialed {
                    ours.close();
                }
                return Ok(client.clone());
            }
            (Some(NodeLink::Dialing { link: l, .. }), Some(want)) => *l == want,
            (_, None) => true,
            _ => false,
        };
        let (client, reader) = match dialed {
            Ok(d) if wanted => d,
            Ok((client, _)) => {
                client.close();
                return Err(Error::RayletUnavailable(format!("the connection to node {node} is no longer wanted")));
            }
            Err(e) => {
                if wanted && link.is_some() {
                    g.nodes.remove(&node);
                    g.state.handle_node_lost(Instant::now(), node, &e.to_string());
                }
                return Err(e);
            }
        };
        let link = link.unwrap_or_else(|| {
            g.next_link += 1;
            g.next_link - 1
        });
        let queued = match g.nodes.insert(node, NodeLink::Ready { client: client.clone(), link }) {
            Some(NodeLink::Dialing { queued, .. }) => queued,
            _ => Vec::new(),
        };
        if let Err(e) = self.start_node_reader(node, link, &client, reader) {
            client.close();
            g.nodes.remove(&node);
            g.state.handle_node_lost(Instant::now(), node, &e.to_string());
            return Err(Error::Startup(e));
        }
        for msg in &queued {
            // A failed send closes the connection; its reader reports the end.
            let _ = client.send(msg);
        }
        Ok(client)
    }

    /// Runs the reader of the connection `link` to `node`: its messages go to the state,
    /// and its end is the node's loss if it is still the node's connection.
    fn start_node_reader(
        &self,
        node: NodeId,
        link: u64,
        client: &Arc<RayletClient>,
        reader: Receiver,
    ) -> std::io::Result<()> {
        let (events, lost) = (self.me.clone(), self.me.clone());
        client.start_reader(
            reader,
            move |msg| {
                if let Some(cw) = events.upgrade() {
                    cw.run(|st, now| st.handle_node(now, node, msg));
                }
            },
            move |reason: String| {
                if let Some(cw) = lost.upgrade() {
                    let gone = cw.run_driver(|g| match g.nodes.get(&node) {
                        Some(NodeLink::Ready { link: l, .. }) if *l == link => {
                            let gone = g.nodes.remove(&node);
                            g.state.handle_node_lost(Instant::now(), node, &reason);
                            gone
                        }
                        _ => None,
                    });
                    // Dropped off the lock.
                    drop(gone);
                }
            },
        )
    }

    /// Opens the worker connection `conn` on a thread of its own; the state hears of it
    /// when it is open (or failed), unless it was closed meanwhile.
    fn open_in_background(&self, conn: ConnId, endpoint: ares_common::Endpoint) -> std::io::Result<()> {
        let (me, max_frame) = (self.me.clone(), self.max_frame);
        std::thread::Builder::new().name("ares-open".into()).spawn(move || {
            let opened = open(me.clone(), max_frame, conn, &endpoint);
            let Some(cw) = me.upgrade() else {
                if let Ok(tx) = opened {
                    tx.close();
                }
                return;
            };
            cw.run_driver(|g| {
                if !g.opening.remove(&conn) {
                    // Closed while it was being opened.
                    if let Ok(tx) = opened {
                        tx.close();
                    }
                    return;
                }
                g.opened(conn, opened);
            });
        })?;
        Ok(())
    }

    /// Merges gathered arguments (pinning stored parts) and reports each back.
    fn run_gathers(&self, mut jobs: Vec<GatherJob>) {
        while let Some(job) = jobs.pop() {
            let merged = self.merge(&job.parts, job.combine);
            let ((), more) = self.run_locked(|st| st.handle_gathered(Instant::now(), job.task, job.slot, merged));
            jobs.extend(more);
        }
    }

    fn merge(&self, parts: &[(ObjectId, Location)], combine: Combine) -> std::result::Result<Bytes, String> {
        let held: Vec<Held> =
            parts.iter().map(|(id, loc)| self.hold(*id, loc)).collect::<Result<_>>().map_err(|e| e.to_string())?;
        let bytes: Vec<&[u8]> = held.iter().map(|h| h.bytes()).collect();
        combine(&bytes)
    }

    /// Which thread scope IDs come from: the running task's, else the process root's.
    fn with_scope<R>(f: impl FnOnce(Option<&mut TaskScope>) -> R) -> R {
        SCOPE.with(|s| f(s.borrow_mut().as_mut()))
    }

    // ------------------------------------------------------------------ values

    /// Stores `value` as a new object owned by this process; refs and actor handles
    /// inside it stay alive as long as it does.
    pub(crate) fn put<T: Value>(&self, value: &T) -> Result<ObjectId> {
        let len = value.encoded_len().map_err(|e| Error::Encode(e.to_string()))?;
        if self.store.inline_rule().inline(len) {
            // Small: encoded here, named and recorded in one trip through the state.
            let (encoded, captured) = crate::capture::capture(|| value.encode());
            let location = Location::Inline(Arc::new(encoded.map_err(|e| Error::Encode(e.to_string()))?));
            let (contained, actors) = (captured.refs(), captured.actor_ids());
            return Ok(self.run_untimed(|st| {
                let id = Self::with_scope(|s| st.next_put_id(s));
                st.add_put(id, location, &contained);
                if !actors.is_empty() {
                    st.hold_actors_in(id, &actors);
                }
                id
            }));
        }
        let id = self.run_untimed(|st| Self::with_scope(|s| st.next_put_id(s)));
        let (stored, captured) = crate::capture::capture(|| self.store.store_value(id, value, self.worker_id));
        let stored = stored?;
        let (contained, actors) = (captured.refs(), captured.actor_ids());
        self.run_untimed(|st| {
            let location = match stored {
                Stored::Inline(b) => Location::Inline(Arc::new(b)),
                Stored::Shared { len, .. } => Location::stored(st.node(), len),
            };
            st.add_put(id, location, &contained);
            if !actors.is_empty() {
                st.hold_actors_in(id, &actors);
            }
        });
        Ok(id)
    }

    /// Blocks until `id` is ready or failed; returns where its value is.
    pub(crate) fn wait_location(&self, id: ObjectId) -> Result<Location> {
        let pending = |inner: &Inner| matches!(inner.state.status(id), Some(Status::Pending));
        // A short task answers in microseconds, sooner than a blocked thread wakes up.
        let g = self.spin_while(GET_SPIN, pending);
        let g = if pending(&g) {
            drop(g);
            let _blocked = self.block();
            self.shared.wait_while(self.shared.lock(), pending)
        } else {
            g
        };
        match g.state.status(id) {
            Some(Status::Ready(loc)) => Ok(loc.clone()),
            Some(Status::Failed(e)) => Err(Error::Task((**e).clone())),
            Some(Status::Pending) => unreachable!("waited until not pending"),
            None => Err(Error::Task(TaskError::ObjectLost { object: format!("{id} (not owned by this process)") })),
        }
    }

    /// Waits for the owned object `id` and holds its value. If no node holding a copy
    /// can serve it, the object is lost: it is rebuilt from its lineage when it can be
    /// (the wait starts again) and fails with a typed error otherwise.
    pub(crate) fn hold_owned(&self, id: ObjectId) -> Result<Held> {
        loop {
            let loc = self.wait_location(id)?;
            match self.hold(id, &loc) {
                Err(Error::Task(TaskError::ObjectLost { object })) => {
                    let here = self.address.node;
                    let again = match &loc {
                        Location::Stored(s) => self.run_untimed(|st| st.read_failed(Instant::now(), id, s, here)),
                        Location::Inline(_) => false,
                    };
                    if !again {
                        return Err(Error::Task(TaskError::ObjectLost { object }));
                    }
                }
                other => return other,
            }
        }
    }

    /// The state once `pending` is false, or after watching its version for `spin`
    /// (yielding the CPU meanwhile): what a waiter does before it blocks.
    fn spin_while(&self, spin: Duration, pending: impl Fn(&Inner) -> bool) -> std::sync::MutexGuard<'_, Inner> {
        let g = self.shared.lock();
        if !pending(&g) {
            return g;
        }
        let start = Instant::now();
        let mut seen = self.shared.version();
        drop(g);
        while start.elapsed() < spin {
            std::thread::yield_now();
            let v = self.shared.version();
            if v != seen {
                seen = v;
                if !pending(&self.shared.lock()) {
                    break;
                }
            }
        }
        self.shared.lock()
    }

    /// While the returned guard lives, this process's task is blocked waiting: a worker
    /// tells its raylet (once, however many threads wait), which lends the lease's
    /// resources to other work, so nested tasks cannot deadlock the node.
    fn block(&self) -> BlockGuard<'_> {
        if self.in_worker && self.blocked.fetch_add(1, std::sync::atomic::Ordering::AcqRel) == 0 {
            let _ = self.raylet.send(&ToRaylet::TaskBlocked);
        }
        BlockGuard(self)
    }

    /// Holds the value at `loc` for reading: inline bytes are shared, a value in the
    /// node's store is pinned there (and restored first if it was spilled) until the
    /// returned [`Held`] is dropped.
    pub(crate) fn hold(&self, id: ObjectId, loc: &Location) -> Result<Held> {
        let here = self.address.node;
        match plan_read(loc, here) {
            ReadPlan::Inline(b) => Ok(Held::inline(self.store.clone(), id, b.clone())),
            ReadPlan::Local => self.store.hold(id),
            ReadPlan::Pull(from) => {
                // The copy is this process's: it goes when this process lets the object
                // go, or dies (for an owned object, that is the owner).
                self.store.pull(id, &from, self.worker_id)?;
                self.run_untimed(|st| st.add_copy(id, here));
                self.store.hold(id)
            }
        }
    }

    /// Waits until `num_returns` of `ids` are ready or failed, or `timeout` passes.
    /// Returns the readiness of each ID.
    pub(crate) fn wait_many(&self, ids: &[ObjectId], num_returns: usize, timeout: Option<Duration>) -> Vec<bool> {
        // Borrowed objects are asked of their owners (once each, however often listed).
        let borrows = self.ever_borrowed.load(std::sync::atomic::Ordering::Acquire);
        let asked: Vec<ObjectId> = if !borrows {
            Vec::new()
        } else {
            self.run_untimed(|st| {
                let mut asked: Vec<ObjectId> = Vec::new();
                for id in ids {
                    if st.status(*id).is_none() && !asked.contains(id) && st.begin_lookup(*id) {
                        asked.push(*id);
                    }
                }
                asked
            })
        };
        let done = |inner: &Inner, id: &ObjectId| match inner.state.status(*id) {
            Some(s) => !matches!(s, Status::Pending),
            None => !matches!(inner.state.lookup_status(*id), Some(Status::Pending)),
        };
        let enough = |inner: &Inner| ids.iter().filter(|id| done(inner, id)).count() >= num_returns;
        let g = self.shared.lock();
        let blocked = if enough(&g) { None } else { Some(self.block()) };
        let g = match timeout {
            None => self.shared.wait_while(g, |t| !enough(t)),
            Some(d) => self.shared.wait_while_timeout(g, d, |t| !enough(t)).0,
        };
        let out = ids.iter().map(|id| done(&g, id)).collect();
        drop(g);
        drop(blocked);
        if !asked.is_empty() {
            self.run_untimed(|st| asked.iter().for_each(|id| st.end_lookup(*id)));
        }
        out
    }

    /// One more local handle family on `id`; whether this process owns it.
    pub(crate) fn add_local_ref(&self, id: ObjectId) -> bool {
        self.run_untimed(|st| st.add_local_ref(id))
    }

    /// One local handle family on `id` fewer.
    pub(crate) fn remove_local_ref(&self, id: ObjectId) {
        self.run_untimed(|st| st.remove_local_ref(id));
    }

    /// A borrowed ref to `id`, owned by `owner`, was decoded: count it. `home` is where
    /// the owner's node serves other nodes.
    pub(crate) fn add_borrowed(&self, id: ObjectId, owner: &Address, home: Option<std::net::SocketAddr>) {
        let owner = Owner { worker: owner.worker, node: owner.node };
        self.run_untimed(|st| st.add_borrowed(id, owner, home));
        self.ever_borrowed.store(true, std::sync::atomic::Ordering::Release);
    }

    /// One handle family on the borrowed `id` fewer.
    pub(crate) fn remove_borrowed(&self, id: ObjectId) {
        self.run_untimed(|st| st.remove_borrowed(id));
    }

    /// Registers the borrowed refs the owners do not know about yet and waits for their
    /// answers. Runs before whatever kept those refs alive may let go: before a task's
    /// reply (its caller holds the arguments until then) and after a `get` decoded refs.
    pub(crate) fn register_borrows(&self) {
        if !self.ever_borrowed.load(std::sync::atomic::Ordering::Acquire) {
            return;
        }
        if self.run_untimed(|st| st.register_borrows()) {
            let g = self.shared.lock();
            drop(self.shared.wait_while(g, |inner| inner.state.registering()));
        }
    }

    /// This worker's task returns values holding `refs` to `caller`: waits until their
    /// owners count the caller as a borrower (see `CoreState::lend`).
    pub(crate) fn lend_returned(&self, caller: WorkerId, refs: &[ares_common::wire::RefInValue]) {
        if self.run_untimed(|st| st.lend(caller, refs)) {
            let g = self.shared.lock();
            drop(self.shared.wait_while(g, |inner| inner.state.registering()));
        }
    }

    /// This worker's task `task` returns values holding handles to `actors` to `caller`
    /// (see `CoreState::lend_actors`).
    pub(crate) fn lend_actors(&self, caller: WorkerId, task: TaskId, actors: Vec<ares_common::wire::LentActor>) {
        self.run_untimed(|st| st.lend_actors(caller, task, actors));
    }

    /// Blocks until the owner of the borrowed `id` says where its value is.
    pub(crate) fn wait_borrowed(&self, id: ObjectId, owner: &Address) -> Result<Location> {
        if !self.run(|st, _| st.begin_lookup(id)) {
            return Err(Error::NotOwned { object: id.to_string(), owner: owner.to_string() });
        }
        let pending = |inner: &Inner| matches!(inner.state.lookup_status(id), Some(Status::Pending));
        let mut g = self.spin_while(BORROW_SPIN, pending);
        if pending(&g) {
            drop(g);
            let _blocked = self.block();
            g = self.shared.wait_while(self.shared.lock(), pending);
        }
        let r = match g.state.lookup_status(id) {
            Some(Status::Ready(loc)) => Ok(loc.clone()),
            Some(Status::Failed(e)) => Err(Error::Task((**e).clone())),
            _ => Err(Error::NotOwned { object: id.to_string(), owner: owner.to_string() }),
        };
        drop(g);
        self.run_untimed(|st| st.end_lookup(id));
        r
    }

    /// Where the node's store spilled `id`, as this owner was told.
    pub(crate) fn spill_location(&self, id: ObjectId) -> Option<String> {
        match self.shared.lock().state.status(id) {
            Some(Status::Ready(Location::Stored(s))) => s.spilled.clone(),
            _ => None,
        }
    }

    /// The node's statistics.
    pub(crate) fn node_stats(&self) -> Result<NodeStats> {
        match self.raylet.call(|request_id| ToRaylet::GetStats { request_id })? {
            FromRaylet::Stats { stats, .. } => Ok(stats),
            other => Err(Error::RayletUnavailable(format!("unexpected answer to stats: {other:?}"))),
        }
    }

    /// Runs an operation on the cluster's key-value store.
    pub(crate) fn kv(&self, op: ares_common::wire::KvOp) -> Result<Option<Vec<u8>>> {
        match self.raylet.call(|request_id| ToRaylet::Kv { request_id, op })? {
            FromRaylet::Kv { error: Some(e), .. } => Err(Error::Kv(e)),
            FromRaylet::Kv { value, .. } => Ok(value),
            other => Err(Error::RayletUnavailable(format!("unexpected answer to a key-value request: {other:?}"))),
        }
    }

    /// The cluster's nodes as this node last heard of them.
    pub(crate) fn nodes(&self) -> Result<Vec<ares_common::wire::NodeSummary>> {
        match self.raylet.call(|request_id| ToRaylet::GetNodes { request_id })? {
            FromRaylet::Nodes { nodes, .. } => Ok(nodes),
            other => Err(Error::RayletUnavailable(format!("unexpected answer to nodes: {other:?}"))),
        }
    }

    // ------------------------------------------------------------------ submission

    /// Turns a call's arguments into the state's terms: large by-value arguments become
    /// objects of their own in the node's store first (named after the task, as in Ray).
    fn store_args(&self, task_id: TaskId, function: &str, args: Vec<ArgSpec>) -> (Vec<Arg>, Option<TaskError>) {
        let mut out = Vec::with_capacity(args.len());
        let mut early = None;
        for (i, a) in args.into_iter().enumerate() {
            out.push(match a {
                ArgSpec::Value(b) if self.store.inline_rule().inline(b.len()) => Arg::Inline(b),
                ArgSpec::Value(b) => {
                    let id = ObjectId::for_arg(task_id, i as u32);
                    match self.store.store_bytes(id, &b, self.worker_id) {
                        Ok(len) => Arg::Stored { id, len },
                        Err(e) => {
                            early.get_or_insert(match e {
                                Error::Task(e) => e,
                                e => TaskError::Decode {
                                    function: function.to_string(),
                                    what: format!("argument {i}"),
                                    reason: e.to_string(),
                                },
                            });
                            Arg::Inline(Bytes::new())
                        }
                    }
                }
                other => other.into_unstored(),
            });
        }
        (out, early)
    }

    fn needs_store(&self, args: &[ArgSpec]) -> bool {
        args.iter().any(|a| matches!(a, ArgSpec::Value(b) if !self.store.inline_rule().inline(b.len())))
    }

    /// Submits a task; returns the ID of its return object (owned, one local handle).
    pub(crate) fn submit(&self, s: Submit, args: Vec<ArgSpec>) -> ObjectId {
        self.submit_in_state(s.function, args, |st, now, task_id, args, early| {
            st.submit_with(now, task_id, s, args, early)
        })
    }

    /// Names a new task, turns its arguments into the state's terms and runs `f` with
    /// them (and the error of an argument that could not be stored). Arguments that need
    /// no storing take one trip through the state; otherwise the task is named first, so
    /// its large arguments are stored under its ID.
    fn submit_in_state<R>(
        &self,
        function: &str,
        args: Vec<ArgSpec>,
        f: impl FnOnce(&mut CoreState, Instant, TaskId, Vec<Arg>, Option<TaskError>) -> R,
    ) -> R {
        if !self.needs_store(&args) {
            let args = args.into_iter().map(ArgSpec::into_unstored).collect();
            return self.run(|st, now| {
                let task_id = Self::with_scope(|scope| st.next_task_id(scope));
                f(st, now, task_id, args, None)
            });
        }
        let task_id = self.run_untimed(|st| Self::with_scope(|scope| st.next_task_id(scope)));
        let (args, early) = self.store_args(task_id, function, args);
        self.run(|st, now| f(st, now, task_id, args, early))
    }

    /// Records a call that failed before submission (its arguments could not be encoded).
    pub(crate) fn submit_failed(&self, error: TaskError) -> ObjectId {
        self.submit_failed_n(1, error)
    }

    /// [`CoreWorker::submit_failed`] for a task of `num_returns` return values; returns
    /// the first.
    pub(crate) fn submit_failed_n(&self, num_returns: u32, error: TaskError) -> ObjectId {
        self.run_untimed(|st| {
            let task_id = Self::with_scope(|scope| st.next_task_id(scope));
            st.submit_failed_n(task_id, num_returns, error)
        })
    }

    // ------------------------------------------------------------------ actors

    /// Registers a new actor owned by this process and starts constructing it.
    pub(crate) fn create_actor(
        &self,
        id: ActorId,
        spawn: SpawnSpec,
        args: Vec<ArgSpec>,
        keeps: Vec<ActorId>,
        carried: Vec<ObjectId>,
    ) -> Result<()> {
        if let Some(name) = &spawn.name {
            ares_common::wire::check_actor_name(name)?;
        }
        let answer = self.raylet.call(|request_id| ToRaylet::RegisterActor {
            request_id,
            actor_id: id,
            class: spawn.state.class.to_string(),
            name: spawn.name.clone(),
            detached: spawn.detached,
            max_restarts: spawn.max_restarts,
            max_task_retries: spawn.state.max_task_retries,
        });
        actor_reply(answer)?;
        self.submit_in_state(spawn.state.ctor, args, |st, now, create_tid, args, early| match early {
            Some(e) => {
                st.dead_actor(id, spawn.state.class.clone(), e.clone());
                st.submit_failed(create_tid, e);
            }
            None => st.create_actor(now, id, spawn.state, create_tid, args, keeps, carried),
        });
        Ok(())
    }

    /// Records a handle to an actor that could not be spawned: its calls fail with `error`.
    pub(crate) fn dead_actor(&self, id: ActorId, class: Arc<str>, error: TaskError) {
        self.run_untimed(|st| st.dead_actor(id, class, error));
    }

    /// Submits a method call; returns its return object (owned, one local handle).
    pub(crate) fn submit_actor_call(
        &self,
        actor: ActorId,
        function: &'static str,
        args: Vec<ArgSpec>,
        keeps: Vec<ActorId>,
        carried: Vec<ObjectId>,
    ) -> ObjectId {
        self.submit_in_state(function, args, |st, now, task_id, args, early| match early {
            Some(e) => st.submit_failed(task_id, e),
            None => st.submit_actor_call(now, task_id, actor, function, args, keeps, carried),
        })
    }

    /// A handle family on `id` was decoded in this process; returns once the directory
    /// (on `home`) counts this process as a holder.
    pub(crate) fn actor_borrow(&self, id: ActorId, class: Arc<str>, max_task_retries: u32, home: Home) {
        let home = home.filter(|(n, _)| *n != self.node());
        loop {
            let step = self.run_untimed(|st| st.borrow_actor(id, class.clone(), max_task_retries, home));
            let g = self.shared.lock();
            drop(self.shared.wait_while(g, |inner| inner.state.hold_pending(id) && !inner.state.stopped()));
            if step != Borrow::Busy {
                return;
            }
        }
    }

    /// One handle family (or task carrying a handle) on `id` fewer.
    pub(crate) fn actor_handle_dropped(&self, id: ActorId) {
        self.run_untimed(|st| st.actor_handle_dropped(id));
    }

    /// `ares::kill`: the directory ends the actor; its calls fail from now on.
    pub(crate) fn kill_actor(&self, id: ActorId, home: Home) -> Result<()> {
        let answer = self.dir_call(home, |request_id| ToRaylet::KillActor { request_id, actor_id: id });
        actor_reply(answer)?;
        self.run_untimed(|st| st.actor_killed(id));
        Ok(())
    }

    /// Finds a live actor by name, in the cluster (waits while one on this node is being
    /// constructed or restarted): its ID, type, retry budget and home.
    pub(crate) fn lookup_actor_by_name(&self, name: &str) -> Result<(ActorId, String, u32, Home)> {
        ares_common::wire::check_actor_name(name)?;
        let by = ares_common::wire::ActorKey::Name(name.into());
        match self.raylet.call(|request_id| ToRaylet::LookupActor { request_id, by })? {
            FromRaylet::ActorFound { info, .. } => Ok((info.actor_id, info.class, info.max_task_retries, None)),
            FromRaylet::ActorElsewhere { actor, .. } => {
                let Some(addr) = actor.addr else {
                    return Err(Error::Task(TaskError::ActorDied {
                        actor: actor.actor_id.to_string(),
                        class: actor.class,
                        reason: format!("its node {} serves no address for other nodes", actor.node),
                    }));
                };
                Ok((actor.actor_id, actor.class, actor.max_task_retries, Some((actor.node, addr))))
            }
            FromRaylet::ActorReply { error: Some(e), .. } => Err(Error::Task(e)),
            other => Err(Error::RayletUnavailable(format!("unexpected answer to an actor lookup: {other:?}"))),
        }
    }

    /// Fails everything pending, returns every lease and closes the raylet connection.
    pub(crate) fn stop(&self) {
        self.run_untimed(|st| st.stop());
        // Returned leases reach the other nodes before the goodbye, so their workers
        // go back to the pool rather than being reaped.
        for (_, link) in std::mem::take(&mut self.shared.lock().nodes) {
            if let NodeLink::Ready { client, .. } = link {
                client.close_flushed();
            }
        }
        // Wake waiters (a handle's registration will not be answered any more).
        self.shared.notify();
        self.raylet.close();
        let (lock, cv) = &self.kick;
        *lock.lock().unwrap_or_else(|p| p.into_inner()) = true;
        cv.notify_one();
    }
}

/// Connects to the raylet of another node and registers this process there as an owner
/// (so that node frees this process's objects if it dies). Blocks for the handshake and
/// the registration, each with a deadline: call it off the state lock.
fn dial(
    worker_id: WorkerId,
    max_frame: usize,
    addr: std::net::SocketAddr,
    node: NodeId,
) -> Result<(Arc<RayletClient>, Receiver)> {
    let endpoint = ares_common::Endpoint::Quic { node, addr };
    let hello = ToRaylet::RegisterDriver { pid: std::process::id(), worker_id };
    let (client, registered, reader) = RayletClient::connect_to(&endpoint, max_frame, hello)?;
    if !matches!(registered, FromRaylet::Registered { .. }) {
        client.close();
        return Err(Error::RayletUnavailable(format!("{addr} answered {registered:?} to registration")));
    }
    Ok((client, reader))
}

/// Connects to a worker and starts the reader of its replies, which go to the core
/// worker `me` as events of `conn`.
fn open(
    me: Weak<CoreWorker>,
    max_frame: usize,
    conn: ConnId,
    endpoint: &ares_common::Endpoint,
) -> std::io::Result<Sender> {
    let (tx, rx) = Connection::connect(endpoint)?.split::<FromWorker>(max_frame, OUTBOX_LIMIT)?;
    let on_closed = me.clone();
    ares_net::spawn_reader::<FromWorker>(
        "ares-conn-reader",
        rx,
        1024,
        move |batch| match me.upgrade() {
            Some(cw) => {
                cw.run(|st, now| st.handle_replies(now, conn, batch));
                true
            }
            None => false,
        },
        move |reason| {
            if let Some(cw) = on_closed.upgrade() {
                cw.run(|st, now| st.handle_conn_closed(now, conn, &reason));
            }
        },
    )
    .inspect_err(|_| tx.close())?;
    Ok(tx)
}

/// See [`CoreWorker::block`].
struct BlockGuard<'a>(&'a CoreWorker);

impl Drop for BlockGuard<'_> {
    fn drop(&mut self) {
        let cw = self.0;
        if cw.in_worker && cw.blocked.fetch_sub(1, std::sync::atomic::Ordering::AcqRel) == 1 {
            let _ = cw.raylet.send(&ToRaylet::TaskUnblocked);
        }
    }
}

/// The outcome of a directory request: its error, or the connection's (the daemon gone).
fn actor_reply(r: Result<FromRaylet>) -> Result<()> {
    match r? {
        FromRaylet::ActorReply { error: None, .. } => Ok(()),
        FromRaylet::ActorReply { error: Some(e), .. } => Err(Error::Task(e)),
        other => Err(Error::RayletUnavailable(format!("unexpected answer to an actor request: {other:?}"))),
    }
}

/// Runs the state's timers: sleeps until the next one (at most [`TICK`]) or a kick.
fn housekeeping(cw: Weak<CoreWorker>) {
    loop {
        let wait = {
            let Some(cw) = cw.upgrade() else { return };
            let g = cw.shared.lock();
            if g.state.stopped() {
                return;
            }
            let now = Instant::now();
            g.state.poll_timeout().map_or(TICK, |t| t.saturating_duration_since(now).min(TICK))
        };
        {
            let Some(cw) = cw.upgrade() else { return };
            let (lock, cv) = &cw.kick;
            let kicked = lock.lock().unwrap_or_else(|p| p.into_inner());
            let (mut kicked, _) = cv.wait_timeout_while(kicked, wait, |k| !*k).unwrap_or_else(|p| p.into_inner());
            *kicked = false;
        }
        let Some(cw) = cw.upgrade() else { return };
        cw.run(|st, now| st.handle_timeout(now));
    }
}
