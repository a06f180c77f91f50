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
