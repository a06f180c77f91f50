//! What a driver and the core state exchange: the settings it starts with
//! ([`StateConfig`]), the IDs it hands in ([`TaskScope`]), the [`Output`]s it carries
//! out, and the two rules it applies without asking the state (which values travel
//! inline, [`InlineRule`]; how a ready value is read, [`plan_read`]).
//!
//! **Must not:** hold state; do IO.

use std::sync::Arc;

use ares_common::codec::Bytes;
use ares_common::wire::ToRaylet;
use ares_common::{Address, Endpoint, NodeId, ObjectId, TaskId};
use ares_ownership::Location;

/// The node whose actor directory keeps an actor, when it is not this process's own
/// node: its ID and QUIC address.
pub type Home = Option<(NodeId, std::net::SocketAddr)>;

/// The one rule for where a value travels: inline (in messages, and in its owner's
/// memory) up to `max_inline` bytes, else through the node's shared-memory store. Puts,
/// by-value arguments and task returns all follow it; drivers keep a copy (it never
/// changes), so the check takes no lock.
#[derive(Clone, Copy, Debug)]
pub struct InlineRule {
    /// The largest value that travels inline, in bytes.
    pub max_inline: usize,
}

impl InlineRule {
    /// Whether a value of `len` encoded bytes travels inline.
    pub fn inline(self, len: usize) -> bool {
        len <= self.max_inline
    }
}

/// How a process on some node reads a ready value (see [`plan_read`]).
#[derive(Debug)]
pub enum ReadPlan<'a> {
    /// The bytes are here, in the owner's memory.
    Inline(&'a Arc<Bytes>),
    /// A copy is in this node's store: pin it there (never pulled from elsewhere).
    Local,
    /// Only other nodes hold copies: pull one into this node's store, trying them in
    /// this order, record the new copy with the owner, then pin it.
    Pull(Vec<NodeId>),
}

/// How a process on node `here` reads the value at `loc`.
pub fn plan_read(loc: &Location, here: NodeId) -> ReadPlan<'_> {
    match loc {
        Location::Inline(b) => ReadPlan::Inline(b),
        Location::Stored(s) if s.nodes().any(|n| n == here) => ReadPlan::Local,
        Location::Stored(s) => ReadPlan::Pull(s.nodes().collect()),
    }
}

/// Merges the encoded elements of a list of refs into one encoded `Vec<T>`.
pub type Combine = fn(&[&[u8]]) -> std::result::Result<Bytes, String>;

/// One connection to a worker (leased for tasks, or hosting an actor), named by the
/// state; the driver maps it to a socket.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnId(pub u64);

/// What the driver must carry out, in order.
#[derive(Debug)]
pub enum Output {
    /// Open a connection to `endpoint`, known as `conn`, and report its replies with
    /// [`crate::CoreState::handle_replies`]; if connecting fails, call
    /// [`crate::CoreState::handle_conn_closed`]. Sends on it may follow at once.
    Connect { conn: ConnId, endpoint: Endpoint },
    /// Write these bytes (whole frames) to `conn`; never block.
    Send { conn: ConnId, bytes: Vec<u8> },
    /// Close `conn`; the state has forgotten it, so its end is not reported back.
    Close(ConnId),
    /// Send a message to this node's raylet.
    ToRaylet(ToRaylet),
    /// Send a message to the raylet of another node, serving at `addr` (connecting and
    /// registering first if needed). Its messages come back through
    /// [`crate::CoreState::handle_node`]; if the connection fails or ends, call
    /// [`crate::CoreState::handle_node_lost`].
    ToNode { node: NodeId, addr: std::net::SocketAddr, msg: ToRaylet },
    /// Close the connection to `node`'s raylet, if any: the node died.
    ForgetNode(NodeId),
    /// Read the values of `parts` (pinning stored ones), merge them with `combine` and
    /// report the result with [`crate::CoreState::handle_gathered`].
    Gather { task: TaskId, slot: usize, parts: Vec<(ObjectId, Location)>, combine: Combine },
}

/// Where the IDs of the tasks and puts of one running task come from. The driver keeps
/// one per thread that runs a task, and the state keeps the process's root scope for
/// every other thread.
#[derive(Clone, Debug)]
pub struct TaskScope {
    task: TaskId,
    children: u64,
    puts: u32,
}

impl TaskScope {
    /// The scope of `task` (IDs are counted from zero for every run of it).
    pub fn new(task: TaskId) -> Self {
        TaskScope { task, children: 0, puts: 0 }
    }

    /// The ID of the next task this task submits.
    pub fn next_task(&mut self) -> TaskId {
        let id = self.task.child(self.children);
        self.children += 1;
        id
    }

    /// The ID of the next object this task puts.
    pub fn next_put(&mut self) -> ObjectId {
        let id = ObjectId::for_put(self.task, self.puts);
        self.puts += 1;
        id
    }
}

/// Settings of a core worker.
#[derive(Clone, Debug)]
pub struct StateConfig {
    /// This process as an owner.
    pub address: Address,
    /// The root task of this process (random for a driver).
    pub root: TaskId,
    /// Largest frame a worker accepts.
    pub max_frame: usize,
    /// Deepest pipeline per leased worker.
    pub max_in_flight: u32,
    /// Bytes of finished tasks' specs kept to rebuild lost objects (0: none kept).
    pub max_lineage_bytes: u64,
    /// Which values travel inline.
    pub inline: InlineRule,
}

/// The location of an inline value, as the ownership table keeps it.
pub(crate) fn inline_location(v: &[u8]) -> Location {
    let mut b = Bytes::with_capacity(v.len());
    b.extend_from_slice(v);
    Location::Inline(Arc::new(b))
}
