//! Mars-style tiled data frames on Ares, with pandas' names and semantics.
//!
//! A [`DataFrame`] is lazy: a node with a known schema (names and dtypes) whose rows are
//! split into chunks. A [`Session`] runs it as chunk tasks on the cluster through
//! `ares-tileable`'s graph executor: each chunk is a polars frame computed in a worker
//! and stored in the object store as an Arrow IPC file, read in place by the tasks that
//! consume it. Group-bys combine per-chunk partial aggregations in a tree (few groups) or
//! through a hash shuffle (many groups), chosen from the first chunk (Mars' `auto`);
//! sorts are sample sorts (range partitions from sampled bounds, each sorted); merges
//! broadcast a one-chunk side or shuffle both. Per-chunk steps (column [`Expr`]essions,
//! filters, conversions) fuse into one task, and operations ask their input only for
//! the columns they read, down to the CSV and Parquet readers.
//!
//! **Owns:** the frame graph, its operations, their chunk kernels, the file readers and
//! writers. **Must not:** copy the
//! tileable engine or reach into tensor-lib's internals (it uses the tensor library's
//! public API to read tensor columns); polars stays inside this crate.

mod chunk;
mod csv;
mod describe;
mod error;
mod eval;
mod expr;
mod frame;
mod hashagg;
mod kept;
mod kernels;
mod numeric;
mod order;
mod parquet;
mod prune;
mod relational;
mod session;
mod spec;
mod tasks;
mod temporal;
mod tile;
mod zone;

pub use chunk::{ArchivedFrameChunk, FrameChunk, decode, decode_archived};
pub use error::{FrameError, Result};
pub use expr::{BinOp, Dtype, Expr, Scalar, StrOp, UnOp, Value, col, lit};
pub use frame::{CsvOptions, DataFrame, DropNa, GroupBy};
pub use polars;
pub use session::Session;
pub use temporal::DtOp;
pub use zone::{Ambiguous, Nonexistent, ZoneOp, zone_series};

/// Keeps the chunk kernels in a program that runs them for others without calling the
/// library itself (the `ares` binary's worker mode, the Python extension's workers):
/// they are registered through link-time tables, which the linker keeps only for code
/// that is linked.
pub fn link_kernels() {
    tasks::link();
}
pub use spec::{Agg, How, Method, Rank, Roll, Scan};

/// What the unit tests share.
#[cfg(test)]
mod testing {
    /// A small deterministic generator of test data (no dependency for a unit test).
    pub(crate) struct Lcg(pub(crate) u64);

    impl Lcg {
        /// The next 53 random bits.
        pub(crate) fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            self.0 >> 11
        }
    }
}
