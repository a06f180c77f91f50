//! The per-node shared-memory object store: one pool file per node, mapped once by every
//! process on the node, with space handed out by `offset-allocator`; objects tracked
//! through create → seal → pin/release → delete by the index; cold objects spilled to
//! files and restored on demand; the pool's pages reserved in the filesystem before any
//! allocation over them is handed out.
//!
//! This crate owns *where bytes live on a node*. It must not know about tasks, owners or
//! reference counts: it is told what to create, seal and delete. The server half (the
//! [`StoreIndex`]) is driven by the raylet; the client half is just a [`Pool`] mapping
//! plus offsets received in messages.
#![warn(missing_docs)]

pub mod index;
pub mod pool;
pub mod reserve;
pub mod slot;
pub mod spill;

pub use index::{FileId, Pin, RestoreJob, SpillJob, SpillPolicy, StoreError, StoreIndex, StoreStats};
pub use pool::Pool;
pub use reserve::{Reservations, Reserve};
pub use spill::SpillDirs;
