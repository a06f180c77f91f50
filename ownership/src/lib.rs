//! The ownership table: for every object a process owns, its reference counts and where
//! its value is. This is the sans-IO heart of Ray's ownership design.
//!
//! **Invariant:** this crate does no IO, reads no clock, spawns nothing and has no tokio
//! or quinn dependency. It takes events (a reference was dropped, a task finished) and
//! returns decisions ([`Free`]: this value may now be deleted from these places). The core
//! worker in the `ares` crate carries those decisions out.
//!
//! Reference counting, as in Ray:
//! - the *local* count covers the `ObjectRef` handles of this process;
//! - the *submitted-task* count covers pending tasks that take the object as an argument;
//! - when both reach zero the object is out of scope and its value is freed, at once if it
//!   is ready, or as soon as the task producing it reports.
//!
//! The path that crosses threads ([`SharedTable`]) is written against the [`sync`] shim so
//! that `RUSTFLAGS="--cfg loom" cargo test -p ares-ownership --release` model-checks it.
#![warn(missing_docs)]

pub mod sync;
mod table;

pub use sync::SharedTable;
pub use table::{Free, Location, OwnershipTable, Status};
