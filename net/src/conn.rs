//! Message-level connections over Unix domain sockets, addressed by [`Endpoint`].

use std::io::{self, BufWriter, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ares_common::codec::Value;
use ares_common::error::FrameError;
use ares_common::frame::{self, FrameReader};

use crate::Endpoint;
use crate::outbox::Outbox;

/// How long a reader polls for the next message before it blocks. Waking a blocked
/// thread costs tens of microseconds on virtual machines, more than a whole task round
/// trip, so a reader that expects an answer soon polls briefly first.
pub const SPIN_BEFORE_BLOCKING: Duration = Duration::from_micros(100);

/// Socket buffer size: large enough that pipelined task frames never block a writer that
/// also owes the peer a read.
const SOCKET_BUFFER: usize = 4 << 20;

fn tune(s: &UnixStream) {
    // Best effort: the kernel caps these at net.core.[rw]mem_max.
    let _ = rustix::net::sockopt::set_socket_send_buffer_size(s, SOCKET_BUFFER);
    let _ = rustix::net::sockopt::set_socket_recv_buffer_size(s, SOCKET_BUFFER);
}

fn unix_path(ep: &Endpoint) -> io::Result<&str> {
    ep.unix_path().ok_or_else(|| {
        io::Error::new(io::ErrorKind::Unsupported, format!("{ep}: QUIC endpoints are not served by this build yet"))
    })
}

/// A bound endpoint that accepts connections.
pub struct Listener {
    inner: UnixListener,
    endpoint: Endpoint,
}

impl Listener {
    /// Binds `endpoint`; a Unix socket is made mode 0600.
    pub fn bind(endpoint: &Endpoint) -> io::Result<Listener> {
        let path = unix_path(endpoint)?;
        let inner = UnixListener::bind(path)?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
        Ok(Listener { inner, endpoint: endpoint.clone() })
    }

    /// Waits for the next incoming connection.
    pub fn accept(&self) -> io::Result<Connection> {
        let (s, _) = self.inner.accept()?;
        tune(&s);
        Ok(Connection { stream: s })
    }

    /// Where this listener is bound.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// Stops accepting: a thread blocked in [`Listener::accept`] returns an error.
    pub fn shutdown(&self) {
        let _ = rustix::net::shutdown(&self.inner, rustix::net::Shutdown::Both);
    }
}

/// One bidirectional connection, before it is split into its halves.
pub struct Connection {
    stream: UnixStream,
}

impl Connection {
    /// Connects to `endpoint`.
    pub fn connect(endpoint: &Endpoint) -> io::Result<Connection> {
        let s = UnixStream::connect(unix_path(endpoint)?)?;
        tune(&s);
        Ok(Connection { stream: s })
    }

    /// Two connected ends (for tests).
    pub fn pair() -> io::Result<(Connection, Connection)> {
        let (a, b) = UnixStream::pair()?;
        Ok((Connection { stream: a }, Connection { stream: b }))
    }

    /// A non-blocking sender (closing the connection once more than `outbox_limit` bytes
    /// are queued for a peer that does not read) and a receiver of frames up to
    /// `max_frame` bytes.
    pub fn split(self, max_frame: usize, outbox_limit: usize) -> io::Result<(Sender, Receiver)> {
        let w = self.stream.try_clone()?;
        Ok((
            Sender { out: Outbox::new(w, outbox_limit) },
            Receiver { reader: FrameReader::new(self.stream, max_frame) },
        ))
    }

    /// A buffered, blocking writer (the caller decides when to flush, so a batch of
    /// replies costs one write) and a receiver of frames up to `max_frame` bytes.
    pub fn split_buffered(self, max_frame: usize) -> io::Result<(BufferedWriter, Receiver)> {
        let w = self.stream.try_clone()?;
        Ok((
            BufferedWriter { w: BufWriter::with_capacity(256 << 10, w) },
            Receiver { reader: FrameReader::new(self.stream, max_frame) },
        ))
    }
}

/// The sending half: never blocks its caller (see [`Outbox`]). Clones share the queue.
#[derive(Clone)]
pub struct Sender {
    out: Arc<Outbox>,
}

impl Sender {
    /// Queues bytes that already hold whole frames (see `ares_common::frame::write_frame`).
    pub fn send_framed(&self, frames: &[u8]) -> io::Result<()> {
        self.out.send(frames)
    }

    /// Encodes `msg` and queues it as one frame.
    pub fn send<T: Value>(&self, msg: &T) -> io::Result<()> {
        let payload = frame::encode(msg);
        let mut buf = Vec::with_capacity(payload.len() + 4);
        frame::write_frame(&mut buf, &payload)?;
        self.out.send(&buf)
    }

    /// Closes both directions, waking the connection's reader.
    pub fn close(&self) {
        self.out.close();
    }
}

/// The receiving half: bounded, validated frames.
pub struct Receiver {
    reader: FrameReader<UnixStream>,
}

impl Receiver {
    /// Reads (blocking), validates and decodes the next message.
    pub fn recv<T: Value>(&mut self) -> Result<T, FrameError> {
        self.reader.read()
    }

    /// Whether bytes of a further frame are already buffered.
    pub fn has_buffered(&self) -> bool {
        self.reader.has_buffered()
    }

    /// Polls (yielding the CPU) until a read would not block or `budget` passes; returns
    /// whether one would not block.
    pub fn spin_until_readable(&self, budget: Duration) -> bool {
        if self.reader.has_buffered() {
            return true;
        }
        let stream = self.reader.get_ref();
        let start = Instant::now();
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

    /// Reads one message (polling briefly first), then every further one already
    /// buffered, up to `max` in all. The error, if any, ends the batch; the messages read
    /// before it are returned with it.
    pub fn recv_batch<T: Value>(&mut self, max: usize) -> (Vec<T>, Option<FrameError>) {
        self.spin_until_readable(SPIN_BEFORE_BLOCKING);
        let mut batch = Vec::new();
        match self.recv::<T>() {
            Ok(m) => batch.push(m),
            Err(e) => return (batch, Some(e)),
        }
        while self.has_buffered() && batch.len() < max {
            match self.recv::<T>() {
                Ok(m) => batch.push(m),
                Err(e) => return (batch, Some(e)),
            }
        }
        (batch, None)
    }

    /// Closes both directions of the connection.
    pub fn close(&self) {
        let _ = self.reader.get_ref().shutdown(std::net::Shutdown::Both);
    }
}

/// A buffered, blocking writer of frames.
pub struct BufferedWriter {
    w: BufWriter<UnixStream>,
}

impl BufferedWriter {
    /// Encodes `msg` into the buffer as one frame (written out when the buffer fills).
    pub fn write<T: Value>(&mut self, msg: &T) -> io::Result<()> {
        frame::write_msg(&mut self.w, msg)
    }

    /// Writes out everything buffered.
    pub fn flush(&mut self) -> io::Result<()> {
        self.w.flush()
    }
}

/// Runs `rx` on a thread named `name`: each batch of up to `max_batch` messages goes to
/// `on_batch` (which returns `false` to stop reading silently, e.g. once its owner is
/// gone); when the connection ends or sends a bad frame, `on_closed` gets the reason.
pub fn spawn_reader<T: Value>(
    name: &str,
    mut rx: Receiver,
    max_batch: usize,
    mut on_batch: impl FnMut(Vec<T>) -> bool + Send + 'static,
    on_closed: impl FnOnce(String) + Send + 'static,
) -> io::Result<()> {
    std::thread::Builder::new().name(name.into()).spawn(move || {
        let reason = loop {
            let (batch, error) = rx.recv_batch::<T>(max_batch);
            if !batch.is_empty() && !on_batch(batch) {
                return;
            }
            match error {
                None => {}
                Some(FrameError::Closed) => break "connection closed".to_string(),
                Some(e) => break e.to_string(),
            }
        };
        rx.close();
        on_closed(reason);
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ares_common::wire::ToRaylet;

    #[test]
    fn messages_cross_a_connection_in_order_and_the_end_is_reported() {
        let (a, b) = Connection::pair().unwrap();
        let (tx, _rx_a) = a.split(1 << 20, 1 << 20).unwrap();
        let (_tx_b, rx) = b.split(1 << 20, 1 << 20).unwrap();
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let s = seen.clone();
        spawn_reader::<ToRaylet>(
            "test-reader",
            rx,
            16,
            move |batch| {
                for m in batch {
                    if let ToRaylet::GetStats { request_id } = m {
                        s.lock().unwrap().push(request_id);
                    }
                }
                true
            },
            move |reason| done_tx.send(reason).unwrap(),
        )
        .unwrap();
        for i in 0..100 {
            tx.send(&ToRaylet::GetStats { request_id: i }).unwrap();
        }
        tx.close();
        let reason = done_rx.recv().unwrap();
        assert_eq!(reason, "connection closed");
        assert_eq!(*seen.lock().unwrap(), (0..100).collect::<Vec<_>>());
    }

    #[test]
    fn a_malformed_frame_ends_the_reader_with_the_reason() {
        let (a, b) = Connection::pair().unwrap();
        let (tx, _rx_a) = a.split(1 << 20, 1 << 20).unwrap();
        let (_tx_b, mut rx) = b.split(1 << 20, 1 << 20).unwrap();
        let mut bytes = Vec::new();
        frame::write_frame(&mut bytes, &[0xAB; 40]).unwrap();
        tx.send_framed(&bytes).unwrap();
        let (batch, err) = rx.recv_batch::<ToRaylet>(8);
        assert!(batch.is_empty());
        assert!(matches!(err, Some(FrameError::Malformed { .. })), "{err:?}");
    }

    #[test]
    fn quic_endpoints_are_refused_with_a_clear_error() {
        let ep = Endpoint::Quic { node: Default::default(), addr: "127.0.0.1:1".parse().unwrap() };
        let e = Connection::connect(&ep).err().expect("refused");
        assert_eq!(e.kind(), io::ErrorKind::Unsupported);
        assert!(e.to_string().contains("QUIC"), "{e}");
    }
}
