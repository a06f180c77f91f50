//! The errors of building and running frames.

/// What went wrong, and where possible how to fix it.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// A column name the frame does not have.
    #[error("no column named {name:?}: the frame has {have:?}")]
    UnknownColumn {
        /// The name asked for.
        name: String,
        /// The frame's columns.
        have: Vec<String>,
    },
    /// Columns whose chunks do not line up.
    #[error(
        "column {name:?} is chunked {got:?} but column {first:?} is chunked {want:?}: \
         give every column the same chunk_size (or rechunk them alike)"
    )]
    ChunkMismatch {
        /// The column that differs.
        name: String,
        /// Its chunk lengths.
        got: Vec<u64>,
        /// The first column.
        first: String,
        /// Its chunk lengths.
        want: Vec<u64>,
    },
    /// A column given as a tensor that is not 1-d.
    #[error("column {name:?} must be a 1-d tensor, it has shape {shape:?}")]
    NotOneDimensional {
        /// The column.
        name: String,
        /// Its shape.
        shape: Vec<u64>,
    },
    /// An argument that cannot be used, with why.
    #[error("{0}")]
    Invalid(String),
    /// An operation given a column (or value) of a dtype it does not take (pandas raises
    /// `TypeError`).
    #[error("{0}")]
    DType(String),
    /// A tensor's error (making the columns).
    #[error(transparent)]
    Tensor(#[from] ares_tensor::TensorError),
    /// The runtime's error (a task failed, the daemon went away, …).
    #[error(transparent)]
    Runtime(#[from] ares::Error),
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// polars refused something in the driver.
    #[error("polars: {0}")]
    Polars(#[from] polars::prelude::PolarsError),
    /// The computation was cancelled (`Session::cancelled_by`).
    #[error("cancelled")]
    Cancelled,
    /// One chunk task's inputs and output together exceed the object store: found
    /// before anything runs. Fix: smaller chunks, or a larger store.
    #[error(
        "object store full: the chunk task {task} needs {needs} bytes of the object store at once (its inputs and its output), more than the pool's {capacity} bytes; use smaller chunks or raise object_store_memory"
    )]
    StoreFull {
        /// The task.
        task: String,
        /// Bytes its inputs and output take together.
        needs: u64,
        /// The pool's capacity.
        capacity: u64,
    },
}

impl From<ares_tileable::Error> for FrameError {
    fn from(e: ares_tileable::Error) -> Self {
        match e {
            ares_tileable::Error::Cancelled => FrameError::Cancelled,
            ares_tileable::Error::StoreFull { task, needs, capacity } => {
                FrameError::StoreFull { task, needs, capacity }
            }
            ares_tileable::Error::Runtime(e) => FrameError::Runtime(e),
        }
    }
}

/// A frame operation's result.
pub type Result<T> = std::result::Result<T, FrameError>;
