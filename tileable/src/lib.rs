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
//! It also holds the one allocator setting chunk kernels share ([`keep_freed_memory`]).
//!
//! **Must not:** know any library's kernels, value types or tiling rules: those are the
//! `T` (task) and `O` (result handle) a library plugs in. It does no IO of its own beyond
//! submitting through the library's closure and waiting on results.

mod graph;
mod tree;
mod window;

pub use graph::{Graph, Output};

/// Tunes this process's allocator for chunk kernels, once: they allocate and free many
/// large buffers, so freed memory stays in the heap instead of going back to the kernel
/// each time (the page faults of getting it again cost more than the work). Called by a
/// library's kernels in worker processes.
pub fn keep_freed_memory() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: mallopt only tunes the allocator; these parameters take any value.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, 512 << 20);
            libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 30);
        }
    });
}
pub use tree::Trees;
pub use window::{Progress, ProgressFn, Settings};
