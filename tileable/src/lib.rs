//! The chunk-graph engine shared by Ares' tiled libraries (tensors, dataframes).
//!
//! A library tiles its lazy expression into a [`Graph`] of chunk tasks: each node holds a
//! task of the library's own type (what kernel to run, with which parameters), the nodes
//! whose results it reads, and the hints the scheduler orders by (the depth of the
//! expression it belongs to, its level inside that expression's tiling, its output size).
//! This crate owns what is the same for every library:
//!
//! - the **depth-first order** ([`Graph::order`]): among tasks whose inputs are submitted,
//!   the one of the deepest expression first, then the higher tree level, then the
//!   smaller output, so consumers run as soon as they can and intermediates die early;
//! - the **initial placement** by locality, after Mars ([`Graph::assign_initial`]);
//! - **combine trees** built eagerly ([`Trees`]), so partials die as soon as their
//!   combiner has run;
//! - the **executor** ([`Graph::run`]): submits in that order with at most
//!   `max_in_flight` tasks unfinished, frees each intermediate once its last consumer is
//!   submitted, reports progress and stops between tasks when cancelled.
//!
//! **Must not:** know any library's kernels, value types or tiling rules: those are the
//! `T` (task) and `O` (result handle) a library plugs in. It does no IO of its own beyond
//! submitting through the library's closure and waiting on results.

mod graph;
mod tree;
mod window;

pub use graph::{Graph, Output};
pub use tree::Trees;
pub use window::{Progress, ProgressFn, Settings};
