//! Typed identifiers. Each kind of ID has its own type so they cannot be mixed up:
//!
//! ```compile_fail
//! use ares_common::ids::{TaskId, WorkerId};
//! fn takes_worker(_: WorkerId) {}
//! takes_worker(TaskId::root(uuid::Uuid::nil()));
//! ```
//!
//! `TaskId`s are deterministic: a child task's ID is the blake3 hash of its parent's ID and
//! a per-parent counter, so re-executing a parent recreates the same IDs. Only the root
//! task of a driver is random, and the caller passes that randomness in.

use std::fmt;

macro_rules! id_type {
    ($(#[$meta:meta])* $name:ident, $len:expr) => {
        $(#[$meta])*
        #[derive(
            Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord,
            rkyv::Archive, rkyv::Serialize, rkyv::Deserialize,
        )]
        #[rkyv(derive(Hash, PartialEq, Eq, Debug))]
        pub struct $name(pub [u8; $len]);

        impl $name {
            /// The raw bytes of the ID.
            pub fn as_bytes(&self) -> &[u8; $len] {
                &self.0
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({})", stringify!($name), self)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                for b in &self.0[..6] {
                    write!(f, "{b:02x}")?;
                }
                Ok(())
            }
        }
    };
}

id_type!(
    /// Identifies one task invocation (one attempt set: retries keep the ID).
    TaskId, 16
);
id_type!(
    /// Identifies a worker process for its whole life.
    WorkerId, 16
);
id_type!(
    /// Identifies a node (one raylet).
    NodeId, 16
);
id_type!(
    /// Identifies an actor for its whole life, across restarts.
    ActorId, 16
);

impl TaskId {
    /// The root task of a driver or worker process, from caller-supplied randomness.
    pub fn root(random: uuid::Uuid) -> Self {
        TaskId(*random.as_bytes())
    }

    /// The `counter`-th child of `self`: blake3(parent ‖ counter), truncated.
    pub fn child(&self, counter: u64) -> Self {
        let mut h = blake3::Hasher::new();
        h.update(&self.0);
        h.update(&counter.to_le_bytes());
        let mut out = [0u8; 16];
        out.copy_from_slice(&h.finalize().as_bytes()[..16]);
        TaskId(out)
    }
}

impl WorkerId {
    /// A worker ID from caller-supplied randomness.
    pub fn from_uuid(u: uuid::Uuid) -> Self {
        WorkerId(*u.as_bytes())
    }
}

impl ActorId {
    /// An actor ID from caller-supplied randomness.
    pub fn from_uuid(u: uuid::Uuid) -> Self {
        ActorId(*u.as_bytes())
    }
}

impl NodeId {
    /// A node ID from caller-supplied randomness.
    pub fn from_uuid(u: uuid::Uuid) -> Self {
        NodeId(*u.as_bytes())
    }

    /// The resource every node holds one unit of, named after it (Ray's `node:<id>`): a
    /// task that asks for a sliver of it can only run there.
    pub fn resource_name(&self) -> String {
        format!("node:{}", crate::hex::encode(&self.0))
    }
}

/// First index used for objects created by `put` rather than returned by a task.
pub const PUT_INDEX_BASE: u32 = 1 << 31;

/// First index used for the large by-value arguments of a task, stored by its submitter
/// under the task's ID; the puts of the task itself stay below it.
pub const ARG_INDEX_BASE: u32 = 3 << 30;

/// Identifies an object: the task that creates it plus a return index. Objects made by
/// `put` use indices from [`PUT_INDEX_BASE`] up, and a task's stored arguments indices
/// from [`ARG_INDEX_BASE`] up, so none collides with another.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
#[rkyv(derive(Hash, PartialEq, Eq, Debug))]
pub struct ObjectId {
    /// The task that creates the object (for puts: the task that called `put`).
    pub task: TaskId,
    /// Return index, or `PUT_INDEX_BASE + n` for the n-th put of the task.
    pub index: u32,
}

impl ObjectId {
    /// The `index`-th return value of `task`.
    pub fn for_return(task: TaskId, index: u32) -> Self {
        ObjectId { task, index }
    }

    /// The `n`-th object put by `task` (`n` below 2^30: a task's puts are counted).
    pub fn for_put(task: TaskId, n: u32) -> Self {
        debug_assert!(n < ARG_INDEX_BASE - PUT_INDEX_BASE, "put {n} of one task");
        ObjectId { task, index: PUT_INDEX_BASE + n }
    }

    /// Argument `i` of `task`, stored by its submitter because it is too large to travel
    /// inline. Counted as a put: it is never rebuilt.
    pub fn for_arg(task: TaskId, i: u32) -> Self {
        ObjectId { task, index: ARG_INDEX_BASE + i }
    }

    /// Whether this object was created by `put` (or stored as an argument).
    pub fn is_put(&self) -> bool {
        self.index >= PUT_INDEX_BASE
    }
}

impl fmt::Debug for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ObjectId({self})")
    }
}

impl fmt::Display for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.index >= ARG_INDEX_BASE {
            write!(f, "{}:arg{}", self.task, self.index - ARG_INDEX_BASE)
        } else if self.is_put() {
            write!(f, "{}:put{}", self.task, self.index - PUT_INDEX_BASE)
        } else {
            write!(f, "{}:{}", self.task, self.index)
        }
    }
}

/// Identifies one lease of a worker granted by a raylet to an owner.
#[derive(
    Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize,
)]
#[rkyv(derive(Hash, PartialEq, Eq, Debug))]
pub struct LeaseId(pub u64);

/// Names one request and its answer on a connection: a client's to its raylet (or to
/// another node's), a raylet's to the head. Each sender numbers its own. In a core
/// worker two kinds share one raylet connection: its state machine's requests (lease
/// requests, actor calls; answers handled as events) number from 1, the raylet
/// client's blocking calls from [`RequestId::FIRST_CALL`] (answers handed to the
/// waiting caller), so the two never meet.
#[derive(
    Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize,
)]
#[rkyv(derive(Hash, PartialEq, Eq, Debug))]
pub struct RequestId(pub u64);

impl RequestId {
    /// The first ID of a core worker's blocking calls (see above).
    pub const FIRST_CALL: RequestId = RequestId(1 << 63);

    /// The ID after this one.
    pub fn next(self) -> RequestId {
        RequestId(self.0.wrapping_add(1))
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "request {}", self.0)
    }
}

/// Identifies one connection to a raylet (a client of the node: a worker, a driver, an
/// owner on another node, a tool), numbered by the raylet as they connect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClientId(pub u64);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn child_ids_are_deterministic_and_distinct() {
        let root = TaskId::root(uuid::Uuid::from_u128(7));
        assert_eq!(root.child(1), root.child(1));
        assert_ne!(root.child(1), root.child(2));
        assert_ne!(root.child(1).child(1), root.child(1));
    }

    #[test]
    fn put_and_return_ids_never_collide() {
        let t = TaskId::root(uuid::Uuid::from_u128(1));
        assert!(ObjectId::for_put(t, 0).is_put());
        assert!(!ObjectId::for_return(t, 0).is_put());
        assert_ne!(ObjectId::for_put(t, 0), ObjectId::for_return(t, 0));
    }
}
