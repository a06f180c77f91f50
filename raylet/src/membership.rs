//! Cluster membership over QUIC, the IO around [`ClusterDirectory`]: the head serves the
//! directory, every other node joins it and reports its load.
//!
//! Head: one thread accepts authenticated QUIC connections, one thread per connection
//! reads (a node's registration and heartbeats, or an `ares status` request), and a
//! ticker samples the head's own load, declares silent nodes dead and broadcasts the view
//! every [`HEARTBEAT`]. Member: one thread sends heartbeats and one reads the views the
//! head broadcasts. The decisions are the directory's; this module only moves bytes.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ares_common::det::DetMap;
use ares_common::error::FrameError;
use ares_common::wire::{FromHead, NodeLoad, NodeSummary, ToHead};
use ares_common::{NodeId, ResourceSet};
use ares_net::{Connection, Credentials, JoinToken, Listener, Receiver, Sender};

use crate::cluster::{ClusterDirectory, DirOutput, HEAD_PEER, PeerId, Registration};

/// How often nodes report and the head broadcasts its view.
pub const HEARTBEAT: Duration = Duration::from_millis(100);
/// How long a joining node waits for each answer of the head.
const JOIN_TIMEOUT: Duration = Duration::from_secs(15);
/// Largest frame on a cluster connection (a view of a few thousand nodes fits).
const MAX_FRAME: usize = 16 << 20;
/// Bytes queued for one peer before it is considered stuck.
const OUTBOX_LIMIT: usize = 64 << 20;

/// The local node as membership sees it.
pub trait LocalNode: Send + Sync + 'static {
    /// The node's current load.
    fn load(&self) -> NodeLoad;
    /// The cluster view the head sent.
    fn set_view(&self, nodes: Vec<NodeSummary>);
    /// The head answered a request the node forwarded (key-value operations).
    fn head_answered(&self, msg: FromHead);
    /// The link to the head is gone.
    fn head_lost(&self);
}

/// How this node takes part in a cluster.
#[derive(Clone)]
pub enum Role {
    /// The head: serves the directory at `bind` with `creds`.
    Head {
        /// Where to listen (UDP).
        bind: SocketAddr,
        /// The address other nodes reach this one at.
        ip: std::net::IpAddr,
        /// The cluster's certificate and secret.
        creds: Credentials,
    },
    /// A member joining the head at `head` with `token`.
    Member {
        /// The head's address.
        head: SocketAddr,
        /// The join token.
        token: JoinToken,
        /// The address other nodes reach this one at.
        ip: std::net::IpAddr,
    },
}

impl Role {
    /// The address other nodes reach this one at.
    pub fn ip(&self) -> std::net::IpAddr {
        match self {
            Role::Head { ip, .. } | Role::Member { ip, .. } => *ip,
        }
    }
}

impl std::fmt::Debug for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Role::Head { bind, .. } => write!(f, "Head({bind})"),
            Role::Member { head, ip, .. } => write!(f, "Member({ip}, head {head})"),
        }
    }
}

/// Facts about this node for its registration.
#[derive(Clone, Debug)]
pub struct Me {
    /// The node.
    pub node_id: NodeId,
    /// Its total resources.
    pub total: ResourceSet,
    /// Host name.
    pub host: String,
    /// How long a node may be silent (the head's setting).
    pub node_timeout: Duration,
}

/// A running membership: the head's service or a member's link.
pub struct Membership {
    stopping: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    /// The head's directory port.
    listener: Option<Arc<Listener>>,
    head: Option<Arc<HeadShared>>,
    head_link: Option<Sender>,
    creds: Credentials,
}

impl Membership {
    /// Starts this node's part. A member fails at once (with the head's reason) if the
    /// head cannot be reached or refuses it. The node then serves its clients and pulls
    /// on a port of its own and names it with [`Membership::serving`].
    pub fn start(role: Role, me: Me, local: Arc<dyn LocalNode>) -> io::Result<Membership> {
        match role {
            Role::Head { bind, creds, .. } => start_head(bind, &creds, me, local),
            Role::Member { head, token, ip } => {
                refuse_loopback(ip, head)?;
                start_member(head, &token, me, local)
            }
        }
    }

    /// The head's directory port (`None` on a member).
    pub fn addr(&self) -> Option<SocketAddr> {
        self.listener.as_ref().and_then(|l| l.endpoint().quic_addr())
    }

    /// The cluster's certificate, key and secret: what this node serves QUIC under.
    pub fn creds(&self) -> &Credentials {
        &self.creds
    }

    /// Where this node's own requests to the head (key-value operations, job reports)
    /// go: the link to the head, or the head's directory itself.
    pub fn head_link(&self) -> HeadLink {
        match (&self.head, &self.head_link) {
            (Some(h), _) => HeadLink::Local(h.clone()),
            (None, Some(tx)) => HeadLink::Remote(tx.clone()),
            (None, None) => unreachable!("a membership is the head's or a member's"),
        }
    }

    /// Tells the directory where this node serves its clients and pulls.
    pub fn serving(&self, addr: SocketAddr) -> io::Result<()> {
        if let Some(link) = &self.head_link {
            link.send(&ToHead::Serving { addr })?;
        }
        if let Some(h) = &self.head {
            let now = h.now();
            let mut st = h.lock();
            st.dir.head_serving(now, addr);
            h.carry_out(&mut st);
        }
        Ok(())
    }

    /// Stops: a member tells the head it is leaving; the head stops serving.
    pub fn shutdown(&mut self) {
        if self.stopping.swap(true, Ordering::SeqCst) {
            return;
        }
        if let Some(link) = &self.head_link {
            // Best effort: closing the connection marks the node dead anyway.
            let _ = link.send(&ToHead::Leaving);
            link.close();
        }
        if let Some(l) = &self.listener {
            l.shutdown();
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for Membership {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Where a node's own messages to the head go. See [`Membership::head_link`].
#[derive(Clone)]
pub enum HeadLink {
    /// The head's directory, in this process.
    Local(Arc<HeadShared>),
    /// The connection to the head.
    Remote(Sender),
}

impl HeadLink {
    /// Sends `msg`; answers come back through [`LocalNode::head_answered`].
    pub fn send(&self, msg: ToHead) -> io::Result<()> {
        match self {
            HeadLink::Remote(tx) => tx.send(&msg),
            HeadLink::Local(h) => {
                let now = h.now();
                let mut st = h.lock();
                match msg {
                    // The head's own entry is kept by its driver (see `head_load`).
                    ToHead::RegisterNode { .. } | ToHead::Heartbeat { .. } | ToHead::Serving { .. } => {
                        tracing::warn!("the head's node sent itself {msg:?}; ignored")
                    }
                    msg => st.dir.handle(now, HEAD_PEER, msg),
                }
                h.carry_out(&mut st);
                Ok(())
            }
        }
    }
}

struct Head {
    dir: ClusterDirectory,
    peers: DetMap<PeerId, Sender>,
    next_peer: u64,
}

/// The head's directory and the connections to its peers.
pub struct HeadShared {
    state: Mutex<Head>,
    start: Instant,
    stopping: Arc<AtomicBool>,
    /// The head's own node: answers to its requests go to it.
    local: Arc<dyn LocalNode>,
}

impl HeadShared {
    fn lock(&self) -> MutexGuard<'_, Head> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn now(&self) -> Duration {
        self.start.elapsed()
    }

    fn carry_out(&self, st: &mut Head) {
        for o in st.dir.take_outputs() {
            match o {
                DirOutput::Send(HEAD_PEER, msg) => self.local.head_answered(msg),
                DirOutput::Send(p, msg) => {
                    if let Some(s) = st.peers.get(&p) {
                        let _ = s.send(&msg);
                    }
                }
                DirOutput::Close(p) => {
                    if let Some(s) = st.peers.remove(&p) {
                        s.close();
                    }
                }
                DirOutput::NodeDied(id, reason) => tracing::warn!(node = %id, "node declared dead: {reason}"),
            }
        }
    }
}

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> io::Result<JoinHandle<()>> {
    std::thread::Builder::new().name(name.into()).spawn(f)
}

/// This machine's host name.
pub fn this_host() -> String {
    rustix::system::uname().nodename().to_string_lossy().into_owned()
}

fn start_head(bind: SocketAddr, creds: &Credentials, me: Me, local: Arc<dyn LocalNode>) -> io::Result<Membership> {
    let listener = Arc::new(Listener::bind_quic_with(me.node_id, bind, creds, true, None)?);
    let addr = listener.endpoint().quic_addr().expect("bind_quic gives a QUIC endpoint");
    let stopping = Arc::new(AtomicBool::new(false));
    let (cert, key) = creds.cert_and_key();
    let mut dir = ClusterDirectory::new(me.node_id, me.node_timeout, cert, key);
    let reg = Registration {
        node_id: me.node_id,
        pid: std::process::id(),
        host: me.host.clone(),
        addr: None,
        total: me.total,
    };
    dir.register_head(Duration::ZERO, reg, local.load());
    let shared = Arc::new(HeadShared {
        state: Mutex::new(Head { dir, peers: DetMap::default(), next_peer: 1 }),
        start: Instant::now(),
        stopping: stopping.clone(),
        local: local.clone(),
    });
    let s = shared.clone();
    let l = listener.clone();
    let accept = spawn("ares-head-accept", move || head_accept(s, l))?;
    let s = shared.clone();
    let ticker = spawn("ares-head-tick", move || {
        while !s.stopping.load(Ordering::SeqCst) {
            std::thread::sleep(HEARTBEAT);
            let load = local.load();
            let now = s.now();
            let mut st = s.lock();
            st.dir.head_load(now, load);
            st.dir.tick(now);
            st.dir.broadcast(now);
            let view = st.dir.summaries(now);
            s.carry_out(&mut st);
            drop(st);
            local.set_view(view);
        }
        let mut st = s.lock();
        for (_, p) in std::mem::take(&mut st.peers) {
            p.close();
        }
    })?;
    tracing::info!(%addr, "cluster directory serving");
    Ok(Membership {
        stopping,
        threads: vec![accept, ticker],
        listener: Some(listener),
        head: Some(shared),
        head_link: None,
        creds: creds.clone(),
    })
}

fn head_accept(shared: Arc<HeadShared>, listener: Arc<Listener>) {
    loop {
        let conn = match listener.accept() {
            Ok(c) => c,
            Err(e) => {
                if shared.stopping.load(Ordering::SeqCst) {
                    return;
                }
                // Connections are authenticated before they get here; an error is the
                // process running out of something: pause rather than spin.
                tracing::warn!("cluster accept failed: {e}");
                std::thread::sleep(Duration::from_millis(200));
                continue;
            }
        };
        // A node's first message is its registration (or `ares status`'s request).
        let hello = ares_common::frame::MAX_HELLO_FRAME;
        let from = conn.peer_addr();
        let Ok((tx, rx)) = conn.split_hello_first::<ToHead>(hello, MAX_FRAME, OUTBOX_LIMIT) else { continue };
        let peer = {
            let mut st = shared.lock();
            let p = PeerId(st.next_peer);
            st.next_peer += 1;
            st.peers.insert(p, tx);
            if let Some(from) = from {
                st.dir.connected(p, from.ip());
            }
            p
        };
        let s = shared.clone();
        if spawn("ares-head-conn", move || head_serve(s, peer, rx)).is_err() {
            let mut st = shared.lock();
            st.peers.remove(&peer);
        }
    }
}

fn head_serve(shared: Arc<HeadShared>, peer: PeerId, mut rx: Receiver) {
    loop {
        let msg = match rx.recv::<ToHead>() {
            Ok(m) => m,
            Err(FrameError::Closed) => break,
            Err(e) => {
                if !shared.stopping.load(Ordering::SeqCst) {
                    tracing::warn!(peer = peer.0, "closing cluster connection: {e}");
                }
                break;
            }
        };
        let now = shared.now();
        let mut st = shared.lock();
        st.dir.handle(now, peer, msg);
        shared.carry_out(&mut st);
    }
    rx.close();
    let now = shared.now();
    let mut st = shared.lock();
    st.peers.remove(&peer);
    st.dir.disconnected(now, peer);
    shared.carry_out(&mut st);
}

/// A node that would announce a loopback address while it reaches the head over another
/// one is unreachable for every other node: jobs would hang on it. Refused at start.
fn refuse_loopback(ip: std::net::IpAddr, head: SocketAddr) -> io::Result<()> {
    if ip.is_loopback() && !head.ip().is_loopback() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            ares_raylet_proto::cluster::loopback_reason(ip, head.ip()),
        ));
    }
    Ok(())
}

fn start_member(head: SocketAddr, token: &JoinToken, me: Me, local: Arc<dyn LocalNode>) -> io::Result<Membership> {
    let (tx, mut rx) = Connection::connect_quic(head, token)?.split::<FromHead>(MAX_FRAME, OUTBOX_LIMIT)?;
    let register = ToHead::RegisterNode {
        node_id: me.node_id,
        pid: std::process::id(),
        host: me.host.clone(),
        addr: None,
        total: me.total.clone(),
    };
    tx.send(&register)?;
    let creds = match rx.recv_timeout::<FromHead>(JOIN_TIMEOUT) {
        Ok(FromHead::Registered { head: head_id, cert, key }) => {
            tracing::info!(head = %head_id, "joined the cluster at {head}");
            Credentials::from_parts(cert, key, token)?
        }
        Ok(FromHead::Refused { reason }) => {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("the head at {head} refused this node: {reason}"),
            ));
        }
        Ok(other) => return Err(io::Error::other(format!("the head at {head} answered {other:?} to registration"))),
        Err(e) => return Err(io::Error::other(format!("the head at {head} closed the connection: {e}"))),
    };
    // The head sends its view right after registering a node: take it before returning,
    // so that this node knows the cluster as soon as it serves.
    match rx.recv_timeout::<FromHead>(JOIN_TIMEOUT) {
        Ok(FromHead::View { nodes }) => local.set_view(nodes),
        Ok(other) => return Err(io::Error::other(format!("the head at {head} sent {other:?} instead of its view"))),
        Err(e) => return Err(io::Error::other(format!("the head at {head} closed the connection: {e}"))),
    }
    let stopping = Arc::new(AtomicBool::new(false));
    let l = local.clone();
    let stop = stopping.clone();
    let reader = spawn("ares-member-view", move || {
        loop {
            match rx.recv::<FromHead>() {
                Ok(FromHead::View { nodes }) => l.set_view(nodes),
                Ok(msg @ (FromHead::Kv { .. } | FromHead::ActorName { .. } | FromHead::RestartActor { .. })) => {
                    l.head_answered(msg)
                }
                Ok(FromHead::Refused { reason }) => {
                    tracing::error!("the head dropped this node: {reason}");
                    break;
                }
                Ok(_) => {}
                Err(e) => {
                    if !stop.load(Ordering::SeqCst) {
                        tracing::error!("lost the head at {head}: {e}; this node keeps serving local work");
                    }
                    break;
                }
            }
        }
        // Without a head the view is stale: forget it, so nothing is spilled to nodes
        // that may be gone; requests waiting for the head fail.
        l.set_view(Vec::new());
        l.head_lost();
    })?;
    let stop = stopping.clone();
    let link = tx.clone();
    let beat = spawn("ares-member-beat", move || {
        while !stop.load(Ordering::SeqCst) {
            if link.send(&ToHead::Heartbeat { load: local.load() }).is_err() {
                return;
            }
            std::thread::sleep(HEARTBEAT);
        }
    })?;
    Ok(Membership { stopping, threads: vec![reader, beat], listener: None, head: None, head_link: Some(tx), creds })
}
