//! The single-threaded table. See the crate docs for the protocol.
//!
//! ```text
//!  add_owned ──▶ Pending ──set_ready──▶ Ready ──(counts reach 0)──▶ freed
//!                   │    ──set_failed─▶ Failed ─(counts reach 0)──▶ freed
//!                   └─(counts reach 0)─▶ Pending, out of scope ──set_ready/failed──▶ freed
//! ```

use std::sync::Arc;

use ares_common::ObjectId;
use ares_common::codec::Bytes;
use ares_common::error::TaskError;
use hashbrown::HashMap;

/// Where a ready value is.
#[derive(Clone, Debug)]
pub enum Location {
    /// In this process's memory (small values).
    Inline(Arc<Bytes>),
    /// In the node's shared-memory pool (readers pin it by ID; the offset is a hint).
    Shared {
        /// Offset in the pool when it was stored.
        offset: u64,
        /// Length in bytes.
        len: u64,
    },
    /// Spilled by the node's store to disk; a pin restores it.
    Spilled {
        /// Where it went (`file://…`).
        url: String,
        /// Length in bytes.
        len: u64,
    },
}

impl Location {
    /// Whether the value is held by the node's store (in memory or on disk).
    pub fn in_store(&self) -> bool {
        !matches!(self, Location::Inline(_))
    }
}
/// The state of an owned object.
#[derive(Clone, Debug)]
pub enum Status {
    /// Its task has not reported yet.
    Pending,
    /// Its value is available.
    Ready(Location),
    /// Its task failed for good.
    Failed(TaskError),
}

/// A decision to free an object's value. `location` is where it must be deleted from
/// (`None` when there is no stored value: the task failed).
#[derive(Debug)]
pub struct Free {
    /// The object.
    pub id: ObjectId,
    /// Where its value was.
    pub location: Option<Location>,
}

#[derive(Debug)]
struct Entry {
    local: u32,
    submitted: u32,
    status: Status,
}

impl Entry {
    fn in_scope(&self) -> bool {
        self.local > 0 || self.submitted > 0
    }
}

/// The objects one process owns.
#[derive(Debug, Default)]
pub struct OwnershipTable {
    objects: HashMap<ObjectId, Entry>,
}

impl OwnershipTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records a new object with one local reference (the handle returned to the user).
    pub fn add_owned(&mut self, id: ObjectId, status: Status) {
        self.objects.insert(id, Entry { local: 1, submitted: 0, status });
    }

    /// One more local handle.
    pub fn add_local_ref(&mut self, id: ObjectId) {
        if let Some(e) = self.objects.get_mut(&id) {
            e.local += 1;
        }
    }

    /// One local handle fewer; may free the object.
    pub fn remove_local_ref(&mut self, id: ObjectId) -> Option<Free> {
        let e = self.objects.get_mut(&id)?;
        e.local = e.local.saturating_sub(1);
        self.maybe_free(id)
    }

    /// A submitted task takes these objects as arguments (an ID may repeat).
    pub fn add_submitted(&mut self, ids: &[ObjectId]) {
        for id in ids {
            if let Some(e) = self.objects.get_mut(id) {
                e.submitted += 1;
            }
        }
    }

    /// A task that took these arguments finished or failed for good.
    pub fn remove_submitted(&mut self, ids: &[ObjectId]) -> Vec<Free> {
        let mut out = Vec::new();
        for id in ids {
            if let Some(e) = self.objects.get_mut(id) {
                e.submitted = e.submitted.saturating_sub(1);
                out.extend(self.maybe_free(*id));
            }
        }
        out
    }

    /// The object's value is available. Returns a `Free` if nobody refers to it anymore.
    pub fn set_ready(&mut self, id: ObjectId, location: Location) -> Option<Free> {
        match self.objects.get_mut(&id) {
            Some(e) => {
                e.status = Status::Ready(location);
                self.maybe_free(id)
            }
            // Unknown: already freed (or never ours); the value must not leak.
            None => Some(Free { id, location: Some(location) }),
        }
    }

    /// The node's store moved a ready object (spilled or restored it).
    pub fn set_location(&mut self, id: ObjectId, location: Location) {
        if let Some(Entry { status: Status::Ready(l), .. }) = self.objects.get_mut(&id) {
            *l = location;
        }
    }

    /// The object's task failed for good.
    pub fn set_failed(&mut self, id: ObjectId, error: TaskError) -> Option<Free> {
        let e = self.objects.get_mut(&id)?;
        e.status = Status::Failed(error);
        self.maybe_free(id)
    }

    /// The object's status, if this process owns it and it is in scope.
    pub fn status(&self, id: ObjectId) -> Option<&Status> {
        self.objects.get(&id).map(|e| &e.status)
    }

    /// Number of objects tracked.
    pub fn len(&self) -> usize {
        self.objects.len()
    }

    /// Whether no object is tracked.
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    /// Forgets everything (at shutdown) and returns what must be freed.
    pub fn drain(&mut self) -> Vec<Free> {
        self.objects
            .drain()
            .map(|(id, e)| Free { id, location: if let Status::Ready(l) = e.status { Some(l) } else { None } })
            .collect()
    }

    fn maybe_free(&mut self, id: ObjectId) -> Option<Free> {
        let e = self.objects.get(&id)?;
        if e.in_scope() {
            return None;
        }
        match e.status {
            // Keep the record until the producing task reports, so its value is freed then.
            Status::Pending => None,
            Status::Ready(_) | Status::Failed(_) => {
                let e = self.objects.remove(&id).expect("present");
                Some(Free { id, location: if let Status::Ready(l) = e.status { Some(l) } else { None } })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ares_common::TaskId;

    fn oid(n: u64) -> ObjectId {
        ObjectId::for_return(TaskId::root(Default::default()).child(n), 0)
    }
    fn shared() -> Location {
        Location::Shared { offset: 64, len: 10 }
    }

    #[test]
    fn freed_when_last_local_ref_goes() {
        let mut t = OwnershipTable::new();
        t.add_owned(oid(1), Status::Ready(shared()));
        t.add_local_ref(oid(1));
        assert!(t.remove_local_ref(oid(1)).is_none());
        let f = t.remove_local_ref(oid(1)).expect("freed");
        assert!(matches!(f.location, Some(Location::Shared { offset: 64, .. })));
        assert!(t.is_empty());
        assert!(t.remove_local_ref(oid(1)).is_none(), "double drop is harmless");
    }

    #[test]
    fn submitted_task_holds_its_arguments() {
        let mut t = OwnershipTable::new();
        t.add_owned(oid(1), Status::Ready(shared()));
        t.add_submitted(&[oid(1), oid(1)]);
        assert!(t.remove_local_ref(oid(1)).is_none());
        assert!(t.remove_submitted(&[oid(1)]).is_empty());
        assert_eq!(t.remove_submitted(&[oid(1)]).len(), 1);
        assert!(t.is_empty());
    }

    #[test]
    fn out_of_scope_pending_object_is_freed_when_it_arrives() {
        let mut t = OwnershipTable::new();
        t.add_owned(oid(1), Status::Pending);
        assert!(t.remove_local_ref(oid(1)).is_none());
        assert_eq!(t.len(), 1);
        assert!(t.set_ready(oid(1), shared()).is_some());
        assert!(t.is_empty());
        // A late result for an object nobody tracks is freed too.
        assert!(t.set_ready(oid(2), shared()).is_some());
    }

    #[test]
    fn failed_objects_free_without_location() {
        let mut t = OwnershipTable::new();
        t.add_owned(oid(1), Status::Pending);
        assert!(t.set_failed(oid(1), TaskError::RuntimeShutdown).is_none());
        assert!(matches!(t.status(oid(1)), Some(Status::Failed(_))));
        let f = t.remove_local_ref(oid(1)).unwrap();
        assert!(f.location.is_none());
    }
}
