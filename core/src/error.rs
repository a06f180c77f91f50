//! The errors of the public API.

pub use ares_common::error::{TaskError, Unrecoverable};

/// What can go wrong in an `ares` call.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The task producing the value failed; see [`TaskError`] for the cases.
    #[error(transparent)]
    Task(#[from] TaskError),
    /// `init` was not called, or `shutdown` already was.
    #[error("ares is not initialized: call ares::init() first")]
    NotInitialized,
    /// `init` was called twice without `shutdown` in between.
    #[error("ares is already initialized in this process; call ares::shutdown() before init again")]
    AlreadyInitialized,
    /// The value could not be encoded.
    #[error("could not encode the value: {0}")]
    Encode(String),
    /// The stored bytes are not a valid value of the requested type.
    #[error("could not decode object {object} as the requested type: {reason}")]
    Decode {
        /// The object, rendered.
        object: String,
        /// The validator's message.
        reason: String,
    },
    /// The ref is tracked neither as owned nor as borrowed by this process: it is an
    /// uncounted copy (decoded from a value read as a raw view, or by a runtime that has
    /// since shut down).
    #[error(
        "object {object} (owned by {owner}) is not tracked by this process: the ref is an uncounted \
         copy; read the value holding it with ares::get (which counts the refs inside), not a view"
    )]
    NotOwned {
        /// The object, rendered.
        object: String,
        /// Its owner, rendered.
        owner: String,
    },
    /// The cluster's key-value store refused the operation (the reason says which bound),
    /// or its head could not be reached.
    #[error("key-value store: {0}")]
    Kv(String),
    /// The connection to the raylet failed.
    #[error("lost the connection to the raylet: {0}")]
    RayletUnavailable(String),
    /// Starting the runtime failed.
    #[error("could not start the runtime: {0}")]
    Startup(#[source] std::io::Error),
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
