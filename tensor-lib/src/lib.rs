//! `ares-tensor`: Mars-style tiled tensors on Ares.
//!
//! A [`Tensor`] is a lazy expression with a shape, a dtype and a chunk grid. Executing it
//! in a [`Session`] tiles it into a graph of chunk tasks: element-wise chains, creation
//! operations, slicing, rechunking, reshapes and a trailing reduction are fused into one
//! [`kernel::Program`] per chunk, evaluated over cache-sized blocks; reductions run as
//! trees of partial results; products and decompositions are blocked by chunks. The graph
//! runs depth-first with a bounded number of tasks in flight, and intermediates die as
//! soon as their consumers have run. A boolean mask's length is known only once it ran:
//! tiling resumes then (Mars' iterative tiling). Chunk tasks are ordinary
//! `#[ares::remote]` tasks whose arguments are the `ObjectRef`s of input chunks.
//!
//! ```no_run
//! use ares_tensor::{Session, random};
//!
//! fn main() -> anyhow::Result<()> {
//!     ares::init()?;
//!     let s = Session::new();
//!     let a = random::rand(&[100_000_000], &[10_000_000], 42)?;
//!     let total = s.scalar(&((&a + 1.0) * 2.0).sum())?; // never materializes `a`
//!     println!("{total}");
//!     ares::shutdown();
//!     Ok(())
//! }
//! ```
//!
//! This crate owns the tensor expression graph, tiling, fusion, the chunk kernels and the
//! executor. It must not reach into the runtime's internals: it uses only the public `ares`
//! API, and only `exec.rs` submits tasks.
#![warn(missing_docs)]

#[allow(missing_docs)] // rkyv generates undocumented archived twins.
pub mod data;
#[allow(missing_docs)]
pub mod kernel;
mod linalg;
mod linalg_complex;
mod session;
mod tasks;
mod tensor;
mod tile;

pub use ares_tileable::Progress;
pub use data::{Chunk, ChunkRef, DType, Elem, Scalar, elements_in_place};
pub use session::{Session, chunk_programs, tile_chunks};
pub use tasks::ReduceSpec;

/// `a · b` of two 2-d float chunks: the kernel every GEMM chunk task runs (faer,
/// single-threaded), exposed for benchmarks.
pub fn chunk_matmul(a: &Chunk, b: &Chunk) -> Chunk {
    linalg::gemm(None, &[(a.into(), b.into(), 0)])
}
pub use kernel::{ReduceOp, ScanOp};

/// Keeps the chunk kernels in a program that runs them for others without calling the
/// library itself (the `ares` binary's worker mode): they are registered through
/// link-time tables, which the linker keeps only for code that is linked.
pub fn link_kernels() {
    tasks::link();
}
pub use tensor::{
    ChunkSource, Result, Slice, Tensor, TensorError, UNKNOWN, arange, arange_int, concatenate, eye, from_array,
    from_chunk_refs, from_source, from_view, full, inner, linspace, ones, random, scalar, solve, stack, tensordot,
    where_, zeros,
};
