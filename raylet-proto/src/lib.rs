//! The node daemon's state machines, sans IO (as `quinn-proto` is under `quinn`): what a
//! raylet decides, driven by the `ares-raylet` daemon for real nodes and by the
//! `ares-sim` harness for simulated ones.
//!
//! - [`policy`]: this node's leases (which queued request gets a worker);
//! - [`spillback`]: which node of the cluster a request should go to; [`view`]: the
//!   cluster as the head last described it, and placement on it;
//! - [`clients`]: who is on each connection; [`actors`]: the actor directory; [`owners`]: which owners' objects this node holds;
//! - [`pulls`]: copies of objects being fetched from other nodes;
//! - [`head_link`]: a node's requests to the head and actors it adopts;
//! - [`cluster`], [`kv`]: the head's directory of nodes, jobs and named actors, and its
//!   key-value store;
//! - [`store_side`]: the store index and the control of spilling; [`space`]: waits for
//!   room in the store; [`store_ops`]: creates, pins and
//!   restores carried out step by step around the driver's IO;
//! - [`node`]: glues them with the store index into one machine that takes messages
//!   and hands back what to send.
//!
//! **Must not:** do IO, read the clock (time comes in with each event), spawn threads,
//! or depend on an async runtime or a network crate (`cargo tree -p ares-raylet-proto`
//! shows no tokio, quinn or rustls; CI checks it).
#![warn(missing_docs)]

pub mod actors;
pub mod clients;
pub mod cluster;
pub mod head_link;
pub mod kv;
pub mod node;
pub mod owners;
pub mod policy;
pub mod pulls;
pub mod space;
pub mod spillback;
pub mod store_ops;
pub mod store_side;
pub mod view;
