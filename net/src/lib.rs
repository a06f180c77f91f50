//! The Ares transport: message-level connections between processes.
//!
//! A [`Connection`] carries length-delimited rkyv frames (see `ares_common::frame`). It is
//! split into a [`Sender`], which never blocks its caller (bytes the socket cannot take at
//! once are queued and flushed by a short-lived thread, in order), and a [`Receiver`],
//! which reads validated messages one at a time or in batches, polling briefly before it
//! blocks. [`spawn_reader`] runs a receiver on a thread of its own and reports batches and
//! the connection's end to callbacks.
//!
//! A server with many mostly idle Unix connections hands a quiet [`Receiver`] to a
//! [`Parker`] (one epoll thread) and gets it back, on a new thread, when bytes arrive.
//! Frames carry their message type, and every receiver bounds a frame by its type
//! before reading it (see `ares_common::frame`).
//!
//! Addresses are [`Endpoint`]s: `Unix(path)` within a node, `Quic { node, addr }` between
//! nodes. Both give the same [`Sender`] and [`Receiver`]; QUIC connections are
//! authenticated by the cluster's join token first (see [`quic`]). Large objects move
//! between nodes over [`bulk`] connections: TLS over kernel TCP, under the same trust.
//!
//! **Owns:** sockets, framing IO, session directories. **Must not:** know what a message
//! means, or be a dependency of `ares-ownership` or `ares-object-store` (loom checks those
//! crates, so they stay free of tokio and quinn; async IO lives here and above).
#![warn(missing_docs)]

pub mod bulk;
mod conn;
mod outbox;
mod park;
pub mod quic;
mod session;

pub use ares_common::address::{Address, Endpoint};
pub use bulk::{BulkHandler, BulkListener, BulkPeer, BulkStream};
pub use conn::{BufferedWriter, Connection, Listener, Receiver, SPIN_BEFORE_BLOCKING, Sender, spawn_reader};
pub use outbox::Outbox;
pub use park::{PARK_AFTER, Parker, Resume};
pub use quic::{
    Credentials, JoinToken, QuicPeer, RawStream, StreamHandler, drain_outgoing, install_crypto_provider, join_token,
    set_join_token,
};
pub use session::{
    DaemonInfo, check_session_root, create_session_dir, daemons, process_alive, remove_stale_session_dirs,
    resolve_driver_address, worker_socket_path,
};
