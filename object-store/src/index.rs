//! The store index: which object occupies which part of the pool, and in which state.
//! A plain state machine (no IO, no clock), driven by the raylet.
//!
//! ```text
//!   create ──▶ Created ──seal──▶ Sealed ──delete──▶ (freed)
//!                 │                 ▲
//!                 │ delete          │
//!                 ▼                 │
//!           Created+doomed ──seal───┘ (freed at once)
//!
//!   creator gone while Created ─▶ (freed)
//! ```
//!
//! A `create` for an ID that already exists replaces the old object: that only happens
//! when a task is retried after its worker died before reporting, so nobody knows the
//! old copy.

use ares_common::ObjectId;
use hashbrown::HashMap;
use offset_allocator::{Allocation, Allocator};

/// Granularity and alignment of allocations in the pool.
pub const BLOCK: u64 = 64;

/// Identifies a connected client of the store (one per connection).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ClientId(pub u64);

/// Store failures.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StoreError {
    /// Not enough contiguous free space.
    #[error("object store full: needed {requested} bytes, pool capacity {capacity} bytes, {used} bytes in use")]
    Full {
        /// Bytes requested.
        requested: u64,
        /// Pool capacity.
        capacity: u64,
        /// Bytes in use.
        used: u64,
    },
    /// The object is not in the store.
    #[error("object {0} is not in the store")]
    NotFound(ObjectId),
    /// Only the creating client may seal an object.
    #[error("object {0} was not created by this client")]
    NotCreator(ObjectId),
    /// Another client is still writing an object of that ID.
    #[error("object {0} is being created by another client")]
    InProgress(ObjectId),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum State {
    Created { creator: ClientId, doomed: bool },
    Sealed,
}

struct Entry {
    alloc: Allocation,
    offset: u64,
    size: u64,
    state: State,
}

/// Usage figures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// Capacity in bytes.
    pub capacity: u64,
    /// Bytes held by objects (rounded up to blocks).
    pub used: u64,
    /// Number of objects.
    pub objects: u64,
}

/// The index of one node's pool.
pub struct StoreIndex {
    alloc: Allocator,
    capacity: u64,
    used: u64,
    objects: HashMap<ObjectId, Entry>,
}

fn blocks(size: u64) -> u64 {
    size.div_ceil(BLOCK).max(1)
}

impl StoreIndex {
    /// An empty index for a pool of `capacity` bytes.
    pub fn new(capacity: u64) -> Self {
        let units = (capacity / BLOCK).min(u32::MAX as u64) as u32;
        StoreIndex {
            alloc: Allocator::with_max_allocs(units, 1 << 20),
            capacity: units as u64 * BLOCK,
            used: 0,
            objects: HashMap::new(),
        }
    }

    /// Allocates `size` bytes for `id` on behalf of `client`; returns the offset.
    pub fn create(&mut self, id: ObjectId, size: u64, client: ClientId) -> Result<u64, StoreError> {
        match self.objects.get(&id).map(|e| e.state) {
            Some(State::Created { creator, .. }) if creator != client => return Err(StoreError::InProgress(id)),
            Some(_) => {
                let old = self.objects.remove(&id).expect("present");
                self.release(old);
            }
            None => {}
        }
        let full = |s: &Self| StoreError::Full { requested: size, capacity: s.capacity, used: s.used };
        let n = blocks(size);
        if n > u32::MAX as u64 || self.objects.len() >= (1 << 20) - 2 {
            return Err(full(self));
        }
        let Some(alloc) = self.alloc.allocate(n as u32) else {
            return Err(full(self));
        };
        let offset = alloc.offset as u64 * BLOCK;
        self.used += n * BLOCK;
        self.objects
            .insert(id, Entry { alloc, offset, size, state: State::Created { creator: client, doomed: false } });
        Ok(offset)
    }

    /// Marks `id` complete. Returns true if the object was freed at once because its
    /// owner had already deleted it.
    pub fn seal(&mut self, id: ObjectId, client: ClientId) -> Result<bool, StoreError> {
        let e = self.objects.get_mut(&id).ok_or(StoreError::NotFound(id))?;
        match e.state {
            State::Created { creator, .. } if creator != client => Err(StoreError::NotCreator(id)),
            State::Created { doomed: true, .. } => {
                let e = self.objects.remove(&id).expect("present");
                self.release(e);
                Ok(true)
            }
            State::Created { doomed: false, .. } => {
                e.state = State::Sealed;
                Ok(false)
            }
            State::Sealed => Ok(false),
        }
    }

    /// Frees `id` (at once if sealed, at seal time if still being written).
    /// Unknown IDs are ignored: deletes are idempotent.
    pub fn delete(&mut self, id: ObjectId) {
        let Some(e) = self.objects.get_mut(&id) else {
            return;
        };
        match &mut e.state {
            State::Sealed => {
                let e = self.objects.remove(&id).expect("present");
                self.release(e);
            }
            State::Created { doomed, .. } => *doomed = true,
        }
    }

    /// Reclaims every object `client` created but never sealed. Returns how many.
    pub fn client_gone(&mut self, client: ClientId) -> usize {
        let dead: Vec<ObjectId> = self
            .objects
            .iter()
            .filter(|(_, e)| matches!(e.state, State::Created { creator, .. } if creator == client))
            .map(|(id, _)| *id)
            .collect();
        for id in &dead {
            let e = self.objects.remove(id).expect("present");
            self.release(e);
        }
        dead.len()
    }

    /// Offset and size of a sealed object.
    pub fn lookup(&self, id: ObjectId) -> Option<(u64, u64)> {
        self.objects.get(&id).filter(|e| e.state == State::Sealed).map(|e| (e.offset, e.size))
    }

    /// Usage figures.
    pub fn stats(&self) -> StoreStats {
        StoreStats { capacity: self.capacity, used: self.used, objects: self.objects.len() as u64 }
    }

    fn release(&mut self, e: Entry) {
        self.used -= blocks(e.size) * BLOCK;
        self.alloc.free(e.alloc);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ares_common::TaskId;

    fn oid(n: u32) -> ObjectId {
        ObjectId::for_return(TaskId::root(uuid_like(n)), 0)
    }

    fn uuid_like(n: u32) -> uuid::Uuid {
        uuid::Uuid::from_u128(n as u128 + 1)
    }

    #[test]
    fn create_seal_delete_returns_to_empty() {
        let mut s = StoreIndex::new(1 << 20);
        let c = ClientId(1);
        let a = s.create(oid(1), 1000, c).unwrap();
        let b = s.create(oid(2), 1000, c).unwrap();
        assert_ne!(a, b);
        assert_eq!(a % BLOCK, 0);
        assert!(s.lookup(oid(1)).is_none(), "unsealed objects are invisible");
        assert!(!s.seal(oid(1), c).unwrap());
        assert_eq!(s.lookup(oid(1)), Some((a, 1000)));
        s.delete(oid(1));
        s.delete(oid(1));
        s.seal(oid(2), c).unwrap();
        s.delete(oid(2));
        assert_eq!(s.stats().used, 0);
        assert_eq!(s.stats().objects, 0);
    }

    #[test]
    fn full_pool_is_a_typed_error_with_sizes() {
        let mut s = StoreIndex::new(1 << 20);
        let err = s.create(oid(1), 2 << 20, ClientId(1)).unwrap_err();
        assert_eq!(err, StoreError::Full { requested: 2 << 20, capacity: 1 << 20, used: 0 });
        assert!(err.to_string().contains("2097152"));
    }

    #[test]
    fn delete_before_seal_frees_at_seal_and_dead_creators_are_reclaimed() {
        let mut s = StoreIndex::new(1 << 20);
        s.create(oid(1), 100, ClientId(1)).unwrap();
        s.delete(oid(1));
        assert_eq!(s.seal(oid(1), ClientId(2)), Err(StoreError::NotCreator(oid(1))));
        assert!(s.seal(oid(1), ClientId(1)).unwrap());
        s.create(oid(2), 100, ClientId(3)).unwrap();
        s.create(oid(3), 100, ClientId(3)).unwrap();
        s.seal(oid(3), ClientId(3)).unwrap();
        assert_eq!(s.client_gone(ClientId(3)), 1);
        assert_eq!(s.stats().objects, 1);
    }

    #[test]
    fn recreate_replaces_sealed_but_not_in_progress_objects() {
        let mut s = StoreIndex::new(1 << 20);
        s.create(oid(1), 100, ClientId(1)).unwrap();
        assert_eq!(s.create(oid(1), 100, ClientId(2)), Err(StoreError::InProgress(oid(1))));
        s.seal(oid(1), ClientId(1)).unwrap();
        s.create(oid(1), 200, ClientId(2)).unwrap();
        assert_eq!(s.stats().objects, 1);
        assert_eq!(s.stats().used, 256);
    }
}
