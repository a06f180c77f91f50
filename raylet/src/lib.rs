//! The node daemon (raylet): it grants worker leases, runs the worker pool and serves the
//! node's shared-memory object store.
//!
//! The scheduling decisions live in the pure [`policy`] module (this node's leases),
//! [`spillback`] (which node of the cluster) and the actor directory's in the pure
//! [`actors`] module; [`node`] glues them with the store index, and [`store_ops`] runs
//! its creates, pins and restores step by step; [`server`] is the thin IO driver around
//! them. In the embedded default the raylet runs on threads inside the driver
//! process; it speaks to every local client, the driver included, over the same Unix
//! socket protocol, and to owners on other nodes over QUIC. In a cluster, [`membership`]
//! joins the head (or, on the head, serves the [`cluster`] directory with its [`kv`] store
//! and job table) and [`pulls`] copies objects from other nodes.
//!
//! **Must not:** put policy inside IO code, or know what tasks compute.
#![warn(missing_docs)]

pub mod membership;
mod object_manager;
pub mod server;
mod spawner;
pub mod tool_client;

// The decisions, in their own crate without IO.
pub use ares_raylet_proto::{
    actors, cluster, head_link, kv, node, owners, policy, pulls, space, spillback, store_ops, store_side, view,
};

pub use membership::Role;
pub use server::{Raylet, RayletConfig, raise_fd_limit};
