//! Where Ares processes can be reached. An [`Endpoint`] is a transport address (a Unix
//! socket inside a node, QUIC between nodes); an [`Address`] names a core worker (the
//! owner of objects) by node, worker and endpoint, as Ray's `rpc::Address` does.
//!
//! These are plain data carried in wire messages and ownership records; connecting to
//! them is the business of the transport crate (`ares-net`).

use std::fmt;
use std::net::SocketAddr;

use crate::ids::{NodeId, WorkerId};

/// How to reach a listening process.
#[derive(Clone, Debug, PartialEq, Eq, Hash, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
#[rkyv(derive(Debug))]
pub enum Endpoint {
    /// A Unix domain socket (a path inside a session directory of mode 0700).
    Unix(String),
    /// A QUIC endpoint of another node.
    Quic {
        /// The node listening there.
        node: NodeId,
        /// Its UDP address.
        addr: SocketAddr,
    },
}

impl Endpoint {
    /// The UDP address of a QUIC endpoint.
    pub fn quic_addr(&self) -> Option<SocketAddr> {
        match self {
            Endpoint::Quic { addr, .. } => Some(*addr),
            Endpoint::Unix(_) => None,
        }
    }

    /// The socket path of a Unix endpoint.
    pub fn unix_path(&self) -> Option<&str> {
        match self {
            Endpoint::Unix(p) => Some(p),
            Endpoint::Quic { .. } => None,
        }
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Unix(p) => write!(f, "unix:{p}"),
            Endpoint::Quic { node, addr } => write!(f, "quic:{addr} (node {node})"),
        }
    }
}

/// A core worker: the owner of the objects and actors it created.
#[derive(Clone, Debug, PartialEq, Eq, Hash, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
#[rkyv(derive(Debug))]
pub struct Address {
    /// The node it runs on.
    pub node: NodeId,
    /// The core worker.
    pub worker: WorkerId,
    /// Where it accepts connections from other processes: a worker's task socket.
    /// `None` for a driver, which serves no requests of other processes yet (borrowers
    /// asking an owner come with the distributed ownership protocol).
    pub endpoint: Option<Endpoint>,
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "worker {} on node {}", self.worker, self.node)?;
        if let Some(e) = &self.endpoint {
            write!(f, " at {e}")?;
        }
        Ok(())
    }
}
