//! The per-node shared-memory object store: one pool file per node, mapped once by every
//! process on the node, with space handed out by `offset-allocator` and objects tracked
//! through create → seal → delete by a sans-IO index.
//!
//! This crate owns *where bytes live on a node*. It must not know about tasks, owners or
//! reference counts: it is told what to create, seal and delete. The server half (the
//! [`StoreIndex`]) is driven by the raylet; the client half is just a [`Pool`] mapping
//! plus offsets received in messages.
#![warn(missing_docs)]

pub mod index;
pub mod pool;

pub use index::{ClientId, StoreError, StoreIndex, StoreStats};
pub use pool::Pool;
