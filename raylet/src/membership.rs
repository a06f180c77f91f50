//! Cluster membership over QUIC, the IO around [`ClusterDirectory`]: the head serves the
//! directory, every other node joins it and reports its load.
//!
//! Head: one thread accepts authenticated QUIC connections, one thread per connection
//! reads (a node's registration and heartbeats, or an `ares status` request), and a
//! ticker samples the head's own load, declares silent nodes dead and broadcasts the view
//! every [`HEARTBEAT`]. Member: one thread sends heartbeats and one reads the views the
//! head broadcasts; when the link is lost, that thread joins again (same node ID) with
//! backoff until it succeeds or the node stops. The decisions are the directory's; this
//! module only moves bytes.

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
    /// The member reached the head again; `rejoined`: the head had declared it dead
    /// meanwhile.
    fn head_rejoined(&self, rejoined: bool);
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
    member: Option<Arc<Member>>,
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
        match (&self.head, &self.member) {
            (Some(h), _) => HeadLink::Local(h.clone()),
            (None, Some(m)) => HeadLink::Remote(m.clone()),
            (None, None) => unreachable!("a membership is the head's or a member's"),
        }
    }

    /// Tells the directory where this node serves its clients and pulls (and again each
    /// time the member rejoins).
    pub fn serving(&self, addr: SocketAddr) -> io::Result<()> {
        if let Some(m) = &self.member {
            *m.serving.lock().unwrap_or_else(|p| p.into_inner()) = Some(addr);
            // Without a link now, the address goes with the next join.
            match m.send(&ToHead::Serving { addr }) {
                Err(e) if e.kind() != io::ErrorKind::NotConnected => return Err(e),
                _ => {}
            }
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
        if let Some(m) = &self.member {
            let link = m.link.lock().unwrap_or_else(|p| p.into_inner()).take();
            if let Some(link) = link {
                leave(&link);
            }
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
    /// The member's connection to the head (none while it is rejoining).
    Remote(Arc<Member>),
}

impl HeadLink {
    /// Sends `msg`; answers come back through [`LocalNode::head_answered`].
    pub fn send(&self, msg: ToHead) -> io::Result<()> {
        match self {
            HeadLink::Remote(m) => m.send(&msg),
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
        member: None,
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

/// Tells the head on `link` that this node stops. The head declares it dead at once on
/// reading it ("stopped"), if it arrives before this process exits: wait for it to be
/// read (briefly).
fn leave(link: &Sender) {
    let _ = link.send(&ToHead::Leaving);
    link.close_flushed_wait(LEAVE_FLUSH);
}

/// A member's side: where and how it joins, and its current link to the head.
pub struct Member {
    head: SocketAddr,
    token: JoinToken,
    me: Me,
    local: Arc<dyn LocalNode>,
    stopping: Arc<AtomicBool>,
    /// The connection to the head; none while the member is rejoining.
    link: Mutex<Option<Sender>>,
    /// Where this node serves, said again on every rejoin.
    serving: Mutex<Option<SocketAddr>>,
}

/// What the head answered a registration.
struct Joined {
    tx: Sender,
    rx: Receiver,
    cert: Vec<u8>,
    key: Vec<u8>,
    rejoined: bool,
    view: Vec<NodeSummary>,
}

/// How long one attempt to reach the head (and each of its answers) may take while
/// rejoining, and the longest pause between attempts (the first is [`HEARTBEAT`], doubling): a healed partition is
/// noticed within about a second and a half.
const REJOIN_CONNECT: Duration = Duration::from_secs(2);
const REJOIN_BACKOFF_MAX: Duration = Duration::from_secs(1);
/// How long a stopping member waits for the head to read that it leaves.
const LEAVE_FLUSH: Duration = Duration::from_secs(1);
/// How often a member that keeps failing to reach its head says so.
const REJOIN_LOG_EVERY: Duration = Duration::from_secs(30);

impl Member {
    fn send(&self, msg: &ToHead) -> io::Result<()> {
        match self.link.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
            Some(tx) => tx.send(msg),
            None => Err(io::Error::new(
                io::ErrorKind::NotConnected,
                format!("the head at {} is unreachable; this node keeps trying to rejoin", self.head),
            )),
        }
    }

    /// Registers with the head on a new connection, says where this node serves, and
    /// takes the view sent right after. With a `limit` (rejoining), the connection and
    /// each answer get that long, so that a stopping node is never held up for long.
    fn join(&self, limit: Option<Duration>) -> io::Result<Joined> {
        let answer_within = limit.unwrap_or(JOIN_TIMEOUT);
        let head = self.head;
        let conn = match limit {
            Some(l) => Connection::connect_quic_within(head, &self.token, l)?,
            None => Connection::connect_quic(head, &self.token)?,
        };
        let (tx, mut rx) = conn.split::<FromHead>(MAX_FRAME, OUTBOX_LIMIT)?;
        let me = &self.me;
        let register = ToHead::RegisterNode {
            node_id: me.node_id,
            pid: std::process::id(),
            host: me.host.clone(),
            addr: None,
            total: me.total.clone(),
        };
        tx.send(&register)?;
        let closed = |e: FrameError| io::Error::other(format!("the head at {head} closed the connection: {e}"));
        let (cert, key, rejoined) = match rx.recv_timeout::<FromHead>(answer_within) {
            Ok(FromHead::Registered { cert, key, rejoined, .. }) => (cert, key, rejoined),
            Ok(FromHead::Refused { reason }) => {
                return Err(io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    format!("the head at {head} refused this node: {reason}"),
                ));
            }
            Ok(other) => {
                return Err(io::Error::other(format!("the head at {head} answered {other:?} to registration")));
            }
            Err(e) => return Err(closed(e)),
        };
        if let Some(addr) = *self.serving.lock().unwrap_or_else(|p| p.into_inner()) {
            tx.send(&ToHead::Serving { addr })?;
        }
        // The head sends its view right after registering a node: take it before
        // serving, so that this node knows the cluster as soon as it does.
        let view = match rx.recv_timeout::<FromHead>(answer_within) {
            Ok(FromHead::View { nodes }) => nodes,
            Ok(FromHead::Refused { reason }) => {
                return Err(io::Error::other(format!("the head at {head} dropped this node: {reason}")));
            }
            Ok(other) => {
                return Err(io::Error::other(format!("the head at {head} sent {other:?} instead of its view")));
            }
            Err(e) => return Err(closed(e)),
        };
        Ok(Joined { tx, rx, cert, key, rejoined, view })
    }

    /// Reads the head's messages until the link is lost; false if the head dropped
    /// this node for good.
    fn read(&self, rx: &mut Receiver) -> bool {
        let l = &self.local;
        loop {
            match rx.recv::<FromHead>() {
                Ok(FromHead::View { nodes }) => l.set_view(nodes),
                Ok(msg @ (FromHead::Kv { .. } | FromHead::ActorName { .. } | FromHead::RestartActor { .. })) => {
                    l.head_answered(msg)
                }
                Ok(FromHead::Refused { reason }) => {
                    tracing::error!("the head dropped this node: {reason}");
                    return false;
                }
                Ok(_) => {}
                Err(e) => {
                    if !self.stopping.load(Ordering::SeqCst) {
                        tracing::error!(
                            "lost the head at {}: {e}; this node keeps serving local work and tries to rejoin",
                            self.head
                        );
                    }
                    return true;
                }
            }
        }
    }

    /// The link is gone: forget the stale view (so nothing is spilled to nodes that may
    /// be gone) and fail requests waiting for the head.
    fn lost(&self) {
        if let Some(tx) = self.link.lock().unwrap_or_else(|p| p.into_inner()).take() {
            tx.close();
        }
        self.local.set_view(Vec::new());
        self.local.head_lost();
    }

    /// Tries to reach the head again, with backoff, until it does or the node stops.
    fn rejoin(&self) -> Option<Receiver> {
        let mut pause = HEARTBEAT;
        let (mut attempts, mut said) = (0u64, None::<Instant>);
        while !self.stopping.load(Ordering::SeqCst) {
            attempts += 1;
            match self.join(Some(REJOIN_CONNECT)) {
                Ok(j) => {
                    {
                        let mut link = self.link.lock().unwrap_or_else(|p| p.into_inner());
                        // Checked under the lock `shutdown` takes the link with.
                        if self.stopping.load(Ordering::SeqCst) {
                            leave(&j.tx);
                            return None;
                        }
                        *link = Some(j.tx);
                    }
                    if j.rejoined {
                        tracing::warn!(head = %self.head, "rejoined the cluster as the same node; it had been declared dead");
                    } else {
                        tracing::info!(head = %self.head, "reached the head again");
                    }
                    self.local.set_view(j.view);
                    self.local.head_rejoined(j.rejoined);
                    return Some(j.rx);
                }
                Err(e) => {
                    if said.is_none_or(|t| t.elapsed() >= REJOIN_LOG_EVERY) {
                        tracing::warn!("cannot reach the head at {} yet ({attempts} tries): {e}", self.head);
                        said = Some(Instant::now());
                    }
                }
            }
            let until = Instant::now() + pause;
            while Instant::now() < until && !self.stopping.load(Ordering::SeqCst) {
                std::thread::sleep(HEARTBEAT.min(until.saturating_duration_since(Instant::now())));
            }
            pause = (pause * 2).min(REJOIN_BACKOFF_MAX);
        }
        None
    }
}

fn start_member(head: SocketAddr, token: &JoinToken, me: Me, local: Arc<dyn LocalNode>) -> io::Result<Membership> {
    let stopping = Arc::new(AtomicBool::new(false));
    let member = Arc::new(Member {
        head,
        token: *token,
        me,
        local,
        stopping: stopping.clone(),
        link: Mutex::new(None),
        serving: Mutex::new(None),
    });
    // The first join fails at once, with the head's reason.
    let j = member.join(None)?;
    tracing::info!("joined the cluster at {head}");
    let creds = Credentials::from_parts(j.cert, j.key, token)?;
    *member.link.lock().unwrap_or_else(|p| p.into_inner()) = Some(j.tx);
    member.local.set_view(j.view);
    let m = member.clone();
    let mut rx = j.rx;
    let reader = spawn("ares-member-view", move || {
        while m.read(&mut rx) {
            m.lost();
            match m.rejoin() {
                Some(next) => rx = next,
                None => return,
            }
        }
        m.lost();
    })?;
    let m = member.clone();
    let beat = spawn("ares-member-beat", move || {
        while !m.stopping.load(Ordering::SeqCst) {
            // While rejoining there is no link: the beats resume with it.
            let _ = m.send(&ToHead::Heartbeat { load: m.local.load() });
            std::thread::sleep(HEARTBEAT);
        }
    })?;
    Ok(Membership { stopping, threads: vec![reader, beat], listener: None, head: None, member: Some(member), creds })
}
