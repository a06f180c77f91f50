//! The node's object→owner directory: which core worker owns each object in this node's
//! store, and which connection each core worker speaks on. A pure module.
//!
//! The owner is told where its objects go (spilled), and when an owner's connection
//! ends its objects are freed: nobody can reach them any more, since the owner's records
//! died with it (Ray frees them on owner death too).

use ares_common::det::DetMap;
use ares_common::{ObjectId, WorkerId};
use ares_object_store::ClientId;

/// Owners of this node's objects.
#[derive(Debug, Default)]
pub struct OwnerDirectory {
    owners: DetMap<ObjectId, WorkerId>,
    clients: DetMap<WorkerId, ClientId>,
}

impl OwnerDirectory {
    /// An empty directory.
    pub fn new() -> Self {
        Self::default()
    }

    /// The core worker `worker` speaks on connection `client`.
    pub fn register(&mut self, worker: WorkerId, client: ClientId) {
        self.clients.insert(worker, client);
    }

    /// `owner` owns the new object `id`.
    pub fn created(&mut self, id: ObjectId, owner: WorkerId) {
        self.owners.insert(id, owner);
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
    /// must be freed, and forgets them.
    pub fn client_gone(&mut self, client: ClientId) -> Vec<ObjectId> {
        let gone: Vec<WorkerId> = self.clients.iter().filter(|(_, c)| **c == client).map(|(w, _)| *w).collect();
        self.clients.retain(|_, c| *c != client);
        if gone.is_empty() {
            return Vec::new();
        }
        let orphans: Vec<ObjectId> = self.owners.iter().filter(|(_, o)| gone.contains(o)).map(|(id, _)| *id).collect();
        for id in &orphans {
            self.owners.remove(id);
        }
        orphans
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
        let mut freed = d.client_gone(ClientId(1));
        freed.sort();
        let mut want = vec![oid(1), oid(3)];
        want.sort();
        assert_eq!(freed, want);
        assert_eq!(d.owner_client(oid(1)), None);
        assert_eq!(d.owner_client(oid(2)), Some(ClientId(2)));
        assert!(d.client_gone(ClientId(9)).is_empty(), "a connection that was no core worker frees nothing");
        d.retain(|id| id != oid(2));
        assert!(d.is_empty());
    }
}
