//! The node's object→owner directory: which core worker owns each object in this node's
//! store, and which connection each core worker speaks on. A pure module.
//!
//! The owner is told where its objects go (spilled), and when an owner's connection
//! ends its objects are freed: nobody can reach them any more, since the owner's records
//! died with it (Ray frees them on owner death too).
//!
//! It is also the address book of the relay between core workers (owners and borrowers,
//! see `PeerMsg`): which connection reaches a core worker, and which connections
//! exchanged messages with it, so that they hear when it is gone.

use ares_common::ClientId;
use ares_common::det::{DetMap, DetSet};
use ares_common::{ObjectId, WorkerId};

/// Owners of this node's objects.
#[derive(Debug, Default)]
pub struct OwnerDirectory {
    owners: DetMap<ObjectId, WorkerId>,
    clients: DetMap<WorkerId, ClientId>,
    /// Per core worker, the connections that exchanged relayed messages with it.
    watchers: DetMap<WorkerId, DetSet<ClientId>>,
}

/// What a connection's end means for the rest (see [`OwnerDirectory::client_gone`]).
#[derive(Debug, Default)]
pub struct Gone {
    /// Objects its core workers owned here, to free.
    pub orphans: Vec<ObjectId>,
    /// Core workers that spoke on it, each with the connections to tell.
    pub peers: Vec<(WorkerId, Vec<ClientId>)>,
}

impl OwnerDirectory {
    /// An empty directory.
    pub fn new() -> Self {
        Self::default()
    }

    /// The core worker `worker` speaks on connection `client`. The first registration
    /// of a worker ID stands while its connection lasts: a second connection claiming
    /// it cannot take over its relayed messages.
    pub fn register(&mut self, worker: WorkerId, client: ClientId) {
        self.clients.entry(worker).or_insert(client);
    }

    /// The connection that reaches core worker `worker`, if it is connected here.
    pub fn client_of(&self, worker: WorkerId) -> Option<ClientId> {
        self.clients.get(&worker).copied()
    }

    /// `client` exchanged a relayed message with `worker`: it is told when `worker`'s
    /// connection ends. Bounded by connections × core workers connected here.
    pub fn watch(&mut self, worker: WorkerId, client: ClientId) {
        if self.clients.get(&worker) != Some(&client) {
            self.watchers.entry(worker).or_default().insert(client);
        }
    }

    /// `owner` owns the new object `id`.
    pub fn created(&mut self, id: ObjectId, owner: WorkerId) {
        self.owners.insert(id, owner);
    }

    /// The owner recorded for `id` (of its primary, or of the pull that copied it here).
    pub fn owner(&self, id: ObjectId) -> Option<WorkerId> {
        self.owners.get(&id).copied()
    }

    /// `id` left the store.
    pub fn forget(&mut self, id: ObjectId) {
        self.owners.remove(&id);
    }

    /// The connection of `id`'s owner, if it is connected here.
    pub fn owner_client(&self, id: ObjectId) -> Option<ClientId> {
        self.owners.get(&id).and_then(|w| self.clients.get(w)).copied()
    }

    /// Connection `client` ended: returns the objects its core workers owned, which
    /// must be freed, and the connections to tell each of them is gone; forgets both.
    pub fn client_gone(&mut self, client: ClientId) -> Gone {
        let gone: Vec<WorkerId> = self.clients.iter().filter(|(_, c)| **c == client).map(|(w, _)| *w).collect();
        self.clients.retain(|_, c| *c != client);
        for set in self.watchers.values_mut() {
            set.remove(&client);
        }
        self.watchers.retain(|_, set| !set.is_empty());
        if gone.is_empty() {
            return Gone::default();
        }
        let peers = gone
            .iter()
            .map(|w| (*w, self.watchers.remove(w).map(|s| s.into_iter().collect()).unwrap_or_default()))
            .collect();
        let orphans: Vec<ObjectId> = self.owners.iter().filter(|(_, o)| gone.contains(o)).map(|(id, _)| *id).collect();
        for id in &orphans {
            self.owners.remove(id);
        }
        Gone { orphans, peers }
    }

    /// Keeps only the objects for which `keep` holds (the ones still in the store).
    pub fn retain(&mut self, mut keep: impl FnMut(ObjectId) -> bool) {
        self.owners.retain(|id, _| keep(*id));
    }

    /// Objects with a known owner.
    pub fn len(&self) -> usize {
        self.owners.len()
    }

    /// Whether no object has a known owner.
    pub fn is_empty(&self) -> bool {
        self.owners.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ares_common::TaskId;

    fn oid(n: u64) -> ObjectId {
        ObjectId::for_return(TaskId::default().child(n), 0)
    }

    #[test]
    fn a_gone_owner_leaves_its_objects_to_free_and_others_untouched() {
        let mut d = OwnerDirectory::new();
        let (w1, w2) = (WorkerId([1; 16]), WorkerId([2; 16]));
        d.register(w1, ClientId(1));
        d.register(w2, ClientId(2));
        d.created(oid(1), w1);
        d.created(oid(2), w2);
        d.created(oid(3), w1);
        assert_eq!(d.owner_client(oid(2)), Some(ClientId(2)));
        let mut freed = d.client_gone(ClientId(1)).orphans;
        freed.sort();
        let mut want = vec![oid(1), oid(3)];
        want.sort();
        assert_eq!(freed, want);
        assert_eq!(d.owner_client(oid(1)), None);
        assert_eq!(d.owner_client(oid(2)), Some(ClientId(2)));
        assert!(d.client_gone(ClientId(9)).orphans.is_empty(), "a connection that was no core worker frees nothing");
        d.retain(|id| id != oid(2));
        assert!(d.is_empty());
    }

    #[test]
    fn watchers_hear_of_a_gone_worker_once_and_a_claimed_id_is_not_taken_over() {
        let mut d = OwnerDirectory::new();
        let (w1, w2) = (WorkerId([1; 16]), WorkerId([2; 16]));
        d.register(w1, ClientId(1));
        d.register(w2, ClientId(2));
        d.register(w1, ClientId(7));
        assert_eq!(d.client_of(w1), Some(ClientId(1)), "the first registration stands");
        d.watch(w1, ClientId(2));
        d.watch(w1, ClientId(3));
        d.watch(w1, ClientId(1)); // its own connection: not a watcher
        d.watch(w2, ClientId(3));
        // Connection 3 ends first: nobody is told about it, and it is told nothing later.
        let g = d.client_gone(ClientId(3));
        assert!(g.peers.is_empty());
        let g = d.client_gone(ClientId(1));
        assert_eq!(g.peers, vec![(w1, vec![ClientId(2)])]);
        assert_eq!(d.client_of(w1), None);
        let g = d.client_gone(ClientId(2));
        assert_eq!(g.peers, vec![(w2, vec![])]);
        assert!(d.watchers.is_empty());
    }
}
