//! The one tiled engine under Ares' tensors and data frames.
//!
//! A **tileable** is a lazy value of a tiled library: a tensor, a frame, or an expression
//! mixing both (a frame column turned into a tensor). Running one has three parts, all
//! owned here, whatever the library:
//!
//! - the **session** ([`Session`]): its ID, settings, cancel flag and progress callback;
//!   what it computed is kept on each tileable ([`Results`]), freed with it;
//! - **tiling** into one chunk graph per expression ([`Cx`], [`run`]): a library tiles
//!   its nodes into chunk [`Task`]s of its own type; a step that needs data first (a
//!   mask's lengths, a group-by's method, a sort's bounds) returns [`Tiling::Pending`]
//!   and resumes in the same graph once those tasks have run (Mars' iterative tiling);
//! - the **executor**: depth-first order (the deepest tileable first, then the higher
//!   level of its tiling, then the smaller output), at most `max_in_flight` tasks in
//!   flight with their inputs and outputs within a share of the object store (so what
//!   running tasks pin always fits and the rest can spill), intermediates dropped once
//!   their last consumer is submitted, initial tasks placed by locality after Mars
//!   ([`Graph::assign_initial`]), cancellation between tasks, progress.
//!
//! It also holds what the libraries' kernels share: the scalar-expression core
//! ([`scalar`]: dtypes, numpy's promotion and element-wise kernels), combine trees
//! ([`Trees`]), the sample sort's graph ([`sample_sort`]) and the allocator setting of chunk kernels ([`keep_freed_memory`]).
//!
//! **Must not:** know any library's kernels, value types or tiling rules: a library
//! plugs in its tasks ([`Task`]) and its nodes ([`Node`]). It does no IO of its own
//! beyond submitting tasks and waiting on their results.

mod graph;
mod run;
pub mod scalar;
mod session;
mod sort;
mod task;
mod tree;
mod window;

pub use graph::{Graph, Hints};
pub use run::{Cx, Error, Node, TileResult, Tiling, run};
pub use session::{Progress, ProgressFn, Results, Session, Settings};
pub use sort::{SampleSort, sample_sort};
pub use task::{Obj, Task};
pub use tree::Trees;

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
