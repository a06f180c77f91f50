//! Who is on the other end of each of a node's connections: not yet registered, a
//! driver, or a worker this node started (with the addresses it serves); which clients
//! are owners on other nodes; and the killed-worker fence. A sub-machine of
//! [`crate::node::Node`], which decides what a registration or an end means for leases,
//! actors and objects.
//!
//! **Must not:** send anything or decide about leases, actors or objects; do IO.

use ares_common::det::{DetMap, DetSet};
use ares_common::{ClientId, Endpoint, WorkerId};

/// What a connected client said it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Connected, not registered yet.
    Unregistered,
    /// A driver (its worker ID is its job's).
    Driver(WorkerId),
    /// A worker process of this node's pool.
    Worker(WorkerId),
}

/// A registered worker process.
#[derive(Clone, Debug)]
pub struct WorkerRec {
    /// Its process ID.
    pub pid: u32,
    /// Where this node's own clients reach it.
    pub addr: Endpoint,
    /// Where owners on other nodes reach it (QUIC), in a cluster.
    pub remote_addr: Option<Endpoint>,
}

/// A client whose connection ended.
#[derive(Debug, PartialEq, Eq)]
pub struct Ended {
    /// What it was.
    pub kind: Kind,
    /// Whether it was an owner on another node.
    pub remote: bool,
}

/// Why a worker's registration was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// The connection already registered, or is a client on another node.
    NotFresh,
    /// Another connection registered this worker ID.
    Taken,
}

/// The node's clients (see the module docs).
#[derive(Default)]
pub struct Clients {
    kinds: DetMap<ClientId, Kind>,
    workers: DetMap<WorkerId, WorkerRec>,
    /// Workers that registered at some point: the spawner's exit report for them is not
    /// a start failure.
    registered_ever: DetSet<WorkerId>,
    /// Clients on other nodes (owners that lease workers here over QUIC).
    remote: DetSet<ClientId>,
    /// Connections of workers this node killed, until their end is read.
    fenced: DetSet<ClientId>,
    /// The process ID each driver gave.
    driver_pids: DetMap<ClientId, u32>,
}

impl Clients {
    /// A client connected; `remote`: from another node, over QUIC.
    pub fn connected(&mut self, client: ClientId, remote: bool) {
        self.kinds.insert(client, Kind::Unregistered);
        if remote {
            self.remote.insert(client);
        }
    }

    /// Whether `client` is an owner on another node.
    pub fn is_remote(&self, client: ClientId) -> bool {
        self.remote.contains(&client)
    }

    /// `client` registered as the driver `worker`, in process `pid`.
    pub fn register_driver(&mut self, client: ClientId, worker: WorkerId, pid: u32) {
        if let Some(k) = self.kinds.get_mut(&client) {
            *k = Kind::Driver(worker);
            self.driver_pids.insert(client, pid);
        }
    }

    /// This node's own drivers, with their process IDs (the head's job table).
    pub fn local_drivers(&self) -> Vec<(WorkerId, u32)> {
        self.kinds
            .iter()
            .filter(|(c, _)| !self.remote.contains(*c))
            .filter_map(|(c, k)| match k {
                Kind::Driver(w) => Some((*w, self.driver_pids.get(c).copied().unwrap_or(0))),
                _ => None,
            })
            .collect()
    }

    /// Clients on other nodes.
    pub fn remote_clients(&self) -> Vec<ClientId> {
        self.remote.iter().copied().collect()
    }

    /// `client` registered as the worker `worker`: refused for a connection that is not
    /// a fresh local one, or a worker ID already taken (the driver closes it).
    pub fn register_worker(&mut self, client: ClientId, worker: WorkerId, rec: WorkerRec) -> Result<(), Refused> {
        if self.kinds.get(&client) != Some(&Kind::Unregistered) || self.remote.contains(&client) {
            return Err(Refused::NotFresh);
        }
        if self.workers.contains_key(&worker) {
            return Err(Refused::Taken);
        }
        self.kinds.insert(client, Kind::Worker(worker));
        self.registered_ever.insert(worker);
        self.workers.insert(worker, rec);
        Ok(())
    }

    /// The worker `client` registered as.
    pub fn worker_of(&self, client: ClientId) -> Option<WorkerId> {
        match self.kinds.get(&client) {
            Some(Kind::Worker(w)) => Some(*w),
            _ => None,
        }
    }

    /// The driver or worker `client` registered as.
    pub fn identity(&self, client: ClientId) -> Option<WorkerId> {
        match self.kinds.get(&client) {
            Some(Kind::Driver(w) | Kind::Worker(w)) => Some(*w),
            _ => None,
        }
    }

    /// Where `for_client` reaches worker `w`: its QUIC address for a client on another
    /// node (if it serves one), else its local one.
    pub fn worker_addr(&self, w: WorkerId, for_client: ClientId) -> Option<Endpoint> {
        let rec = self.workers.get(&w)?;
        if self.remote.contains(&for_client) { rec.remote_addr.clone() } else { Some(rec.addr.clone()) }
    }

    /// Whether worker `w` is registered and connected.
    pub fn has_worker(&self, w: WorkerId) -> bool {
        self.workers.contains_key(&w)
    }

    /// Registered, connected workers: ID and process ID.
    pub fn workers(&self) -> impl Iterator<Item = (WorkerId, u32)> + '_ {
        self.workers.iter().map(|(id, w)| (*id, w.pid))
    }

    /// How many workers are registered and connected.
    pub fn worker_count(&self) -> usize {
        self.workers.len()
    }

    /// This node's own registered clients (drivers and workers), the ones to tell of a
    /// node's death.
    pub fn local_registered(&self) -> Vec<ClientId> {
        self.kinds
            .iter()
            .filter(|(c, k)| **k != Kind::Unregistered && !self.remote.contains(*c))
            .map(|(c, _)| *c)
            .collect()
    }

    /// `client`'s connection ended: what it was, if it was known. Its fence is lifted
    /// (nothing more can be read from it).
    pub fn ended(&mut self, client: ClientId) -> Option<Ended> {
        self.fenced.remove(&client);
        let kind = self.kinds.remove(&client)?;
        let remote = self.remote.remove(&client);
        self.driver_pids.remove(&client);
        if let Kind::Worker(w) = kind {
            self.workers.remove(&w);
        }
        Some(Ended { kind, remote })
    }

    /// The spawner reports worker `w` exited: whether it had registered (its
    /// connection's end then handles the death). Asked once per worker.
    pub fn exited_after_registering(&mut self, w: WorkerId) -> bool {
        self.registered_ever.remove(&w)
    }

    /// Raises the killed-worker fence on `client`, until its end is read.
    pub fn fence(&mut self, client: ClientId) {
        self.fenced.insert(client);
    }

    /// Whether `client` is behind the killed-worker fence.
    pub fn fenced(&self, client: ClientId) -> bool {
        self.fenced.contains(&client)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(pid: u32) -> WorkerRec {
        WorkerRec { pid, addr: Endpoint::Unix(format!("/w{pid}")), remote_addr: Some(Endpoint::Unix("quic".into())) }
    }

    #[test]
    fn a_worker_registers_once_from_a_fresh_local_connection() {
        let mut c = Clients::default();
        let (w, other) = (WorkerId([7; 16]), WorkerId([8; 16]));
        c.connected(ClientId(1), false);
        c.connected(ClientId(2), true);
        c.connected(ClientId(3), false);
        assert_eq!(c.register_worker(ClientId(2), w, rec(1)), Err(Refused::NotFresh));
        assert_eq!(c.register_worker(ClientId(1), w, rec(1)), Ok(()));
        assert_eq!(c.register_worker(ClientId(1), other, rec(1)), Err(Refused::NotFresh));
        assert_eq!(c.register_worker(ClientId(3), w, rec(2)), Err(Refused::Taken));
        assert_eq!(c.worker_of(ClientId(1)), Some(w));
        assert_eq!(c.identity(ClientId(3)), None);
        assert_eq!(c.workers().collect::<Vec<_>>(), vec![(w, 1)]);
    }

    #[test]
    fn a_client_on_another_node_is_given_the_quic_address() {
        let mut c = Clients::default();
        let w = WorkerId([7; 16]);
        c.connected(ClientId(1), false);
        c.connected(ClientId(2), true);
        c.register_worker(ClientId(1), w, rec(1)).unwrap();
        assert_eq!(c.worker_addr(w, ClientId(1)), Some(Endpoint::Unix("/w1".into())));
        assert_eq!(c.worker_addr(w, ClientId(2)), Some(Endpoint::Unix("quic".into())));
        assert_eq!(c.local_registered(), vec![ClientId(1)]);
    }

    #[test]
    fn an_end_lifts_the_fence_and_forgets_the_worker_but_not_that_it_registered() {
        let mut c = Clients::default();
        let w = WorkerId([7; 16]);
        c.connected(ClientId(1), false);
        c.register_worker(ClientId(1), w, rec(1)).unwrap();
        c.fence(ClientId(1));
        assert!(c.fenced(ClientId(1)));
        assert_eq!(c.ended(ClientId(1)), Some(Ended { kind: Kind::Worker(w), remote: false }));
        assert!(!c.fenced(ClientId(1)) && !c.has_worker(w));
        assert_eq!(c.ended(ClientId(1)), None);
        assert!(c.exited_after_registering(w));
        assert!(!c.exited_after_registering(w));
    }
}
