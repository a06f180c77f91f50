//! The ownership table: for every object a process owns, its reference counts and where
//! its value is. This is the sans-IO heart of Ray's ownership design.
//!
//! **Invariant:** this crate does no IO, reads no clock, spawns nothing and has no tokio
//! or quinn dependency. It takes events (a reference was dropped, a task finished) and
//! queues [`Output`]s (`Free`: this value may now be deleted from these places) for its
//! driver to carry out: the core worker's state in the `ares` crate. Maps iterate in a
//! fixed order (`ares_common::det`), so the same events give the same effects.
//!
//! Each entry has room for what many nodes need: copies per node ([`Stored`]), borrowers
//! (other processes holding the ref), contained refs (refs inside the object's value,
//! kept alive while it is) and its [`Lineage`].
//!
//! Reference counting, as in Ray:
//! - the *local* count covers the `ObjectRef` handles of this process;
//! - the *submitted-task* count covers pending tasks that take the object as an argument;
//! - the *contained-in* count covers owned objects whose value holds the ref;
//! - borrowers are other processes that received the ref;
//! - when all reach zero the object is out of scope and its value is freed, at once if it
//!   is ready, or as soon as the task producing it reports.
//!
//! The borrower's side is [`BorrowTable`]: the refs this process holds to objects other
//! processes own, and whether each owner knows (see `borrowed.rs` for the protocol).
//!
//! The path that crosses threads ([`Shared`]) is written against the [`sync`] shim so
//! that `RUSTFLAGS="--cfg loom" cargo test -p ares-ownership --release` model-checks it.
#![warn(missing_docs)]

mod borrowed;
pub mod sync;
mod table;

pub use borrowed::{BorrowOutput, BorrowTable, Owner, Registration};
pub use sync::Shared;
pub use table::{Lineage, Location, Output, OwnershipTable, Status, Stored};
