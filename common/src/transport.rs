//! Byte-stream transports behind one small trait, so that the same framed protocol can run
//! over Unix domain sockets inside a node and over QUIC streams between nodes later.

use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

/// A way to open and accept byte streams between Ares processes.
pub trait Transport: Send + Sync + 'static {
    /// One bidirectional connection.
    type Stream: Read + Write + Send + Sync + 'static;
    /// A bound listening endpoint.
    type Listener: Send + Sync + 'static;

    /// Binds a listener at `addr`.
    fn bind(&self, addr: &str) -> io::Result<Self::Listener>;
    /// Waits for the next incoming connection.
    fn accept(&self, listener: &Self::Listener) -> io::Result<Self::Stream>;
    /// Connects to `addr`.
    fn connect(&self, addr: &str) -> io::Result<Self::Stream>;
    /// A second handle on the same connection (one for reading, one for writing).
    fn try_clone(&self, stream: &Self::Stream) -> io::Result<Self::Stream>;
    /// Closes both directions, waking any thread blocked on the stream.
    fn close(&self, stream: &Self::Stream);
}

/// Unix domain sockets. Addresses are paths inside a session directory of mode 0700.
#[derive(Clone, Copy, Debug, Default)]
pub struct UnixTransport;

/// Socket buffer size: large enough that pipelined task frames never block a writer that
/// also owes the peer a read.
const SOCKET_BUFFER: usize = 4 << 20;

fn tune(s: &UnixStream) {
    // Best effort: the kernel caps these at net.core.[rw]mem_max.
    let _ = rustix::net::sockopt::set_socket_send_buffer_size(s, SOCKET_BUFFER);
    let _ = rustix::net::sockopt::set_socket_recv_buffer_size(s, SOCKET_BUFFER);
}

impl Transport for UnixTransport {
    type Stream = UnixStream;
    type Listener = UnixListener;

    fn bind(&self, addr: &str) -> io::Result<UnixListener> {
        let l = UnixListener::bind(addr)?;
        std::fs::set_permissions(addr, std::fs::Permissions::from_mode(0o600))?;
        Ok(l)
    }

    fn accept(&self, listener: &UnixListener) -> io::Result<UnixStream> {
        let (s, _) = listener.accept()?;
        tune(&s);
        Ok(s)
    }

    fn connect(&self, addr: &str) -> io::Result<UnixStream> {
        let s = UnixStream::connect(addr)?;
        tune(&s);
        Ok(s)
    }

    fn try_clone(&self, stream: &UnixStream) -> io::Result<UnixStream> {
        stream.try_clone()
    }

    fn close(&self, stream: &UnixStream) {
        let _ = stream.shutdown(std::net::Shutdown::Both);
    }
}

/// Creates a fresh session directory `<root>/session_<pid>_<tag>` with mode 0700.
pub fn create_session_dir(root: &Path, tag: &str) -> io::Result<PathBuf> {
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(root)?;
    let dir = root.join(format!("session_{}_{tag}", std::process::id()));
    std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
    // The mode above is filtered by the umask; make it exact.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?;
    Ok(dir)
}

/// Removes session directories under `root` whose creating process no longer exists
/// (left behind by a driver that was killed with SIGKILL).
pub fn remove_stale_session_dirs(root: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix("session_")) else {
            continue;
        };
        let Some(pid) = rest.split('_').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// Spins (yielding the CPU between checks) until `stream` has bytes to read or `budget`
/// passes. Waking a blocked thread costs tens of microseconds on virtual machines, more
/// than a whole task round trip, so a reader that expects an answer soon polls briefly
/// before it blocks. Returns whether bytes are ready.
pub fn spin_until_readable(stream: &UnixStream, budget: std::time::Duration) -> bool {
    let start = std::time::Instant::now();
    let mut probe = [0u8; 1];
    loop {
        let flags = rustix::net::RecvFlags::PEEK | rustix::net::RecvFlags::DONTWAIT;
        match rustix::net::recv(stream, &mut probe[..], flags) {
            // Data, or EOF (0 bytes): either way a read will not block.
            Ok(_) => return true,
            Err(rustix::io::Errno::AGAIN) | Err(rustix::io::Errno::INTR) => {}
            Err(_) => return true,
        }
        if start.elapsed() >= budget {
            return false;
        }
        std::thread::yield_now();
    }
}

/// An ordered outgoing byte queue on a Unix stream that never blocks its caller.
///
/// `send` writes at once with `MSG_DONTWAIT`; whatever the socket cannot take is queued
/// and written by a short-lived flusher thread. So a thread that also has to read from
/// the same peer (or holds a lock a reader needs) can never be stuck behind a peer that
/// is itself blocked writing to us. Bytes are delivered in `send` order. If more than
/// `limit` bytes are queued the peer is not reading: the stream is closed.
pub struct Outbox {
    stream: UnixStream,
    state: std::sync::Mutex<OutboxState>,
    limit: usize,
}

#[derive(Default)]
struct OutboxState {
    pending: Vec<u8>,
    flushing: bool,
    closed: bool,
}

impl Outbox {
    /// An outbox writing to `stream` (a handle of its own, e.g. from `try_clone`).
    pub fn new(stream: UnixStream, limit: usize) -> std::sync::Arc<Outbox> {
        std::sync::Arc::new(Outbox { stream, state: Default::default(), limit })
    }

    /// The stream written to.
    pub fn stream(&self) -> &UnixStream {
        &self.stream
    }

    /// Queues `bytes` for the peer; fails only if the connection is closed.
    pub fn send(self: &std::sync::Arc<Self>, bytes: &[u8]) -> io::Result<()> {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if st.closed {
            return Err(io::Error::new(io::ErrorKind::BrokenPipe, "connection closed"));
        }
        let mut rest = bytes;
        if !st.flushing {
            while !rest.is_empty() {
                match rustix::net::send(&self.stream, rest, rustix::net::SendFlags::DONTWAIT) {
                    Ok(n) => rest = &rest[n..],
                    Err(rustix::io::Errno::INTR) => {}
                    Err(rustix::io::Errno::AGAIN) => break,
                    Err(e) => {
                        st.closed = true;
                        drop(st);
                        self.close();
                        return Err(e.into());
                    }
                }
            }
            if rest.is_empty() {
                return Ok(());
            }
        }
        st.pending.extend_from_slice(rest);
        if st.pending.len() > self.limit {
            st.closed = true;
            drop(st);
            tracing::warn!(limit = self.limit, "peer is not reading; closing the connection");
            self.close();
            return Err(io::Error::new(io::ErrorKind::BrokenPipe, "peer is not reading"));
        }
        if !st.flushing {
            st.flushing = true;
            let me = self.clone();
            if std::thread::Builder::new().name("ares-outbox-flush".into()).spawn(move || me.flush_loop()).is_err() {
                st.flushing = false;
                st.closed = true;
                drop(st);
                self.close();
                return Err(io::Error::other("could not start a flusher thread"));
            }
        }
        Ok(())
    }

    fn flush_loop(&self) {
        loop {
            let chunk = {
                let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
                if st.pending.is_empty() || st.closed {
                    st.flushing = false;
                    return;
                }
                std::mem::take(&mut st.pending)
            };
            if (&self.stream).write_all(&chunk).is_err() {
                let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
                st.closed = true;
                st.flushing = false;
                drop(st);
                self.close();
                return;
            }
        }
    }

    /// Closes both directions of the stream (wakes its reader).
    pub fn close(&self) {
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn outbox_never_blocks_and_keeps_order() {
        let (a, mut b) = UnixStream::pair().unwrap();
        let out = Outbox::new(a, 1 << 30);
        // Far more than a socket buffer holds, while nobody reads yet.
        let total: usize = 8 << 20;
        let mut sent = Vec::with_capacity(total);
        for i in 0..(total / 4096) {
            let chunk = vec![(i % 251) as u8; 4096];
            out.send(&chunk).unwrap();
            sent.extend_from_slice(&chunk);
        }
        let mut got = vec![0u8; total];
        b.read_exact(&mut got).unwrap();
        assert!(got == sent);
    }

    #[test]
    fn outbox_closes_when_the_peer_does_not_read() {
        let (a, _b) = UnixStream::pair().unwrap();
        let out = Outbox::new(a, 1 << 20);
        let chunk = vec![0u8; 64 << 10];
        let failed = (0..200).any(|_| out.send(&chunk).is_err());
        assert!(failed, "the limit must close a connection whose peer never reads");
    }
}
