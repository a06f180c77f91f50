//! Message-level connections addressed by [`Endpoint`]: Unix domain sockets within a
//! node, QUIC (see [`crate::quic`]) between nodes, behind the same halves.

use std::io::{self, BufWriter, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ares_common::error::FrameError;
use ares_common::frame::{self, FrameReader, Kinds, Message};

use crate::Endpoint;
use crate::outbox::Outbox;
use crate::quic::{self, Credentials, QuicListener, QuicReceiver, QuicSender, QuicStream};

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

/// The reading handle of a Unix connection, sharing its socket with the connection's
/// [`Outbox`] (one file descriptor per connection, not two: a node's 10 000 clients
/// must fit under common open-file limits).
pub(crate) struct SharedStream(Arc<UnixStream>);

impl io::Read for SharedStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        (&*self.0).read(buf)
    }
}

impl std::os::fd::AsFd for SharedStream {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.0.as_fd()
    }
}

impl std::ops::Deref for SharedStream {
    type Target = UnixStream;
    fn deref(&self) -> &UnixStream {
        &self.0
    }
}

/// A bound endpoint that accepts connections.
pub struct Listener {
    inner: ListenerInner,
    endpoint: Endpoint,
}

enum ListenerInner {
    Unix(UnixListener),
    Quic(QuicListener),
}

impl Listener {
    /// Binds a Unix `endpoint`, made mode 0600. A QUIC endpoint needs the cluster's
    /// credentials: use [`Listener::bind_quic`].
    pub fn bind(endpoint: &Endpoint) -> io::Result<Listener> {
        let Some(path) = endpoint.unix_path() else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{endpoint}: a QUIC listener needs the cluster credentials (Listener::bind_quic)"),
            ));
        };
        let inner = UnixListener::bind(path)?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
        Ok(Listener { inner: ListenerInner::Unix(inner), endpoint: endpoint.clone() })
    }

    /// Binds a QUIC listener for node `node` at `addr` (port 0 picks one); only peers
    /// holding the join token of `creds` get through [`Listener::accept`].
    pub fn bind_quic(
        node: ares_common::NodeId,
        addr: std::net::SocketAddr,
        creds: &Credentials,
    ) -> io::Result<Listener> {
        Self::bind_quic_with(node, addr, creds, true, None)
    }

    /// Like [`Listener::bind_quic`]; `queue`: whether connections queue for `accept`
    /// (false for a listener that only serves streams), `on_stream` serves every further
    /// stream a peer opens.
    pub fn bind_quic_with(
        node: ares_common::NodeId,
        addr: std::net::SocketAddr,
        creds: &Credentials,
        queue: bool,
        on_stream: Option<quic::StreamHandler>,
    ) -> io::Result<Listener> {
        let l = QuicListener::bind(addr, creds, queue, on_stream)?;
        let endpoint = Endpoint::Quic { node, addr: l.local_addr() };
        Ok(Listener { inner: ListenerInner::Quic(l), endpoint })
    }

    /// Waits for the next incoming (for QUIC: authenticated) connection.
    pub fn accept(&self) -> io::Result<Connection> {
        match &self.inner {
            ListenerInner::Unix(l) => {
                let (s, _) = l.accept()?;
                tune(&s);
                Ok(Connection { inner: ConnInner::Unix(s) })
            }
            ListenerInner::Quic(l) => Ok(Connection { inner: ConnInner::Quic(l.accept()?) }),
        }
    }

    /// Where this listener is bound (for QUIC, with the port actually chosen).
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// Stops accepting: a thread blocked in [`Listener::accept`] returns an error.
    pub fn shutdown(&self) {
        match &self.inner {
            ListenerInner::Unix(l) => {
                let _ = rustix::net::shutdown(l, rustix::net::Shutdown::Both);
            }
            ListenerInner::Quic(l) => l.shutdown(),
        }
    }
}

/// One bidirectional connection, before it is split into its halves.
pub struct Connection {
    inner: ConnInner,
}

enum ConnInner {
    Unix(UnixStream),
    Quic(QuicStream),
}

impl Connection {
    /// Connects to `endpoint`. A QUIC endpoint is reached with the join token set by
    /// [`quic::set_join_token`].
    pub fn connect(endpoint: &Endpoint) -> io::Result<Connection> {
        match endpoint {
            Endpoint::Unix(path) => {
                let s = UnixStream::connect(path)?;
                tune(&s);
                Ok(Connection { inner: ConnInner::Unix(s) })
            }
            Endpoint::Quic { addr, .. } => Ok(Connection { inner: ConnInner::Quic(quic::connect(*addr)?) }),
        }
    }

    /// The address of the other end of a QUIC connection (`None` for a Unix socket).
    pub fn peer_addr(&self) -> Option<std::net::SocketAddr> {
        match &self.inner {
            ConnInner::Unix(_) => None,
            ConnInner::Quic(q) => Some(q.remote_address()),
        }
    }

    /// Connects to the QUIC endpoint at `addr`, presenting `token`.
    pub fn connect_quic(addr: std::net::SocketAddr, token: &quic::JoinToken) -> io::Result<Connection> {
        Ok(Connection { inner: ConnInner::Quic(quic::connect_with(addr, token)?) })
    }

    /// Like [`Connection::connect_quic`], failing with `TimedOut` when the handshake is not
    /// done within `limit`.
    pub fn connect_quic_within(
        addr: std::net::SocketAddr,
        token: &quic::JoinToken,
        limit: std::time::Duration,
    ) -> io::Result<Connection> {
        Ok(Connection { inner: ConnInner::Quic(quic::connect_within(addr, token, limit)?) })
    }

    /// Two connected ends (for tests).
    pub fn pair() -> io::Result<(Connection, Connection)> {
        let (a, b) = UnixStream::pair()?;
        Ok((Connection { inner: ConnInner::Unix(a) }, Connection { inner: ConnInner::Unix(b) }))
    }

    /// A non-blocking sender (closing the connection once more than `outbox_limit` bytes
    /// are queued for a peer that does not read) and a receiver of frames up to
    /// `max_frame` bytes.
    pub fn split<In: Message>(self, max_frame: usize, outbox_limit: usize) -> io::Result<(Sender, Receiver)> {
        self.split_hello_first::<In>(max_frame, max_frame, outbox_limit)
    }

    /// Like [`Connection::split`], but the first frame received may be at most
    /// `first_max` bytes: for servers whose clients must first send a small hello
    /// (`ares_common::frame::MAX_HELLO_FRAME`), so a peer that has not said who it is can
    /// make them hold no more than that.
    pub fn split_hello_first<In: Message>(
        self,
        first_max: usize,
        max_frame: usize,
        outbox_limit: usize,
    ) -> io::Result<(Sender, Receiver)> {
        match self.inner {
            ConnInner::Unix(stream) => {
                let stream = Arc::new(stream);
                let r = SharedStream(stream.clone());
                Ok((
                    Sender { out: SendInner::Unix(Outbox::new(stream, outbox_limit)) },
                    Receiver { inner: RecvInner::Unix(FrameReader::with_first_limit(r, first_max, max_frame)) },
                ))
            }
            ConnInner::Quic(q) => {
                let (tx, rx) = q.split(Kinds::of::<In>(), first_max, max_frame, outbox_limit);
                Ok((Sender { out: SendInner::Quic(tx) }, Receiver { inner: RecvInner::Quic(rx) }))
            }
        }
    }

    /// Whether this connection runs over QUIC (to or from another node).
    pub fn is_quic(&self) -> bool {
        matches!(self.inner, ConnInner::Quic(_))
    }

    /// A buffered, blocking writer (the caller decides when to flush, so a batch of
    /// replies costs one write) and a receiver of frames up to `max_frame` bytes. Unix
    /// connections only (a worker's replies to its local owner).
    pub fn split_buffered<In: Message>(self, max_frame: usize) -> io::Result<(BufferedWriter, Receiver)> {
        let ConnInner::Unix(stream) = self.inner else {
            return Err(io::Error::new(io::ErrorKind::Unsupported, "buffered writers are for Unix connections"));
        };
        let stream = Arc::new(stream);
        Ok((
            BufferedWriter { w: BufWriter::with_capacity(256 << 10, SharedWriter(stream.clone())) },
            Receiver { inner: RecvInner::Unix(FrameReader::new(SharedStream(stream), max_frame)) },
        ))
    }
}

/// The sending half: never blocks its caller (see [`Outbox`]). Clones share the queue.
#[derive(Clone)]
pub struct Sender {
    out: SendInner,
}

#[derive(Clone)]
enum SendInner {
    Unix(Arc<Outbox>),
    Quic(QuicSender),
}

impl Sender {
    /// Queues bytes that already hold whole frames (see `ares_common::frame::write_frame`).
    pub fn send_framed(&self, frames: &[u8]) -> io::Result<()> {
        match &self.out {
            SendInner::Unix(o) => o.send(frames),
            SendInner::Quic(q) => q.send(frames),
        }
    }

    /// Encodes `msg` and queues it as one frame.
    pub fn send<T: Message>(&self, msg: &T) -> io::Result<()> {
        let payload = frame::encode(msg);
        let mut buf = Vec::with_capacity(payload.len() + frame::HEADER);
        frame::write_encoded(&mut buf, msg, &payload)?;
        self.send_framed(&buf)
    }

    /// Whether the peer has closed the connection (checked without reading it: for a
    /// thread busy with one of the peer's requests).
    pub fn peer_closed(&self) -> bool {
        match &self.out {
            SendInner::Unix(o) => o.peer_closed(),
            SendInner::Quic(q) => q.peer_closed(),
        }
    }

    /// Closes both directions, waking the connection's reader.
    pub fn close(&self) {
        match &self.out {
            SendInner::Unix(o) => o.close(),
            SendInner::Quic(q) => q.close(),
        }
    }

    /// Closes once what was sent before has been written out (QUIC: and acknowledged,
    /// for at most a second), so a goodbye such as a returned lease arrives before the
    /// connection's end. Does not block.
    pub fn close_flushed(&self) {
        match &self.out {
            SendInner::Unix(o) => o.close(),
            SendInner::Quic(q) => q.close_flushed(),
        }
    }

    /// [`Sender::close_flushed`] that returns only once the connection is closed (QUIC:
    /// the peer read what was sent), or after `limit`: for a goodbye sent just before
    /// the process exits, which would otherwise take the unsent bytes with it.
    pub fn close_flushed_wait(&self, limit: std::time::Duration) {
        match &self.out {
            SendInner::Unix(o) => o.close(),
            SendInner::Quic(q) => q.close_flushed_wait(limit),
        }
    }
}

/// The receiving half: bounded, validated frames.
pub struct Receiver {
    inner: RecvInner,
}

enum RecvInner {
    Unix(FrameReader<SharedStream>),
    Quic(QuicReceiver),
}

impl Receiver {
    /// Reads (blocking), validates and decodes the next message.
    pub fn recv<T: Message>(&mut self) -> Result<T, FrameError> {
        match &mut self.inner {
            RecvInner::Unix(r) => r.read(),
            RecvInner::Quic(q) => {
                let (kind, payload) = q.next()?;
                frame::decode(kind, &payload)
            }
        }
    }

    /// Like [`Receiver::recv`], failing with a `TimedOut` IO error when no message
    /// arrives within `limit` (the connection should then be closed: a partly read frame
    /// is lost).
    pub fn recv_timeout<T: Message>(&mut self, limit: Duration) -> Result<T, FrameError> {
        match &mut self.inner {
            RecvInner::Unix(r) => {
                r.get_ref().set_read_timeout(Some(limit))?;
                let m = r.read();
                let _ = r.get_ref().set_read_timeout(None);
                m
            }
            RecvInner::Quic(q) => {
                let (kind, payload) = q.next_timeout(limit)?;
                frame::decode(kind, &payload)
            }
        }
    }

    /// Whether bytes of a further frame are already buffered.
    pub fn has_buffered(&mut self) -> bool {
        match &mut self.inner {
            RecvInner::Unix(r) => r.has_buffered(),
            RecvInner::Quic(q) => q.ready(),
        }
    }

    /// Polls (yielding the CPU) until a read would not block or `budget` passes; returns
    /// whether one would not block.
    pub fn spin_until_readable(&mut self, budget: Duration) -> bool {
        let reader = match &mut self.inner {
            RecvInner::Unix(r) => r,
            // Frames arrive through the runtime's thread; blocking on the channel is as
            // cheap as polling it.
            RecvInner::Quic(q) => return q.ready(),
        };
        if reader.has_buffered() {
            return true;
        }
        let stream = reader.get_ref();
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

    /// Waits up to `limit` for a read that would not block (bytes, or the peer's end);
    /// returns whether one would not block. QUIC receivers answer true at once (their
    /// reads are meant to block).
    pub fn wait_readable(&mut self, limit: Duration) -> bool {
        let reader = match &mut self.inner {
            RecvInner::Unix(r) => r,
            RecvInner::Quic(_) => return true,
        };
        if reader.has_buffered() {
            return true;
        }
        let mut fds = [rustix::event::PollFd::new(reader.get_ref(), rustix::event::PollFlags::IN)];
        let timeout = rustix::event::Timespec::try_from(limit)
            .unwrap_or(rustix::event::Timespec { tv_sec: i64::MAX, tv_nsec: 0 });
        match rustix::event::poll(&mut fds, Some(&timeout)) {
            Ok(n) => n > 0,
            // Interrupted, say: let the caller read (and block) as before.
            Err(_) => true,
        }
    }

    /// The socket of a Unix receiver with nothing buffered (one [`crate::Parker`] can
    /// wait on), else `None`.
    pub(crate) fn unix_fd(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        use std::os::fd::AsFd;
        match &self.inner {
            RecvInner::Unix(r) if !r.has_buffered() => Some(r.get_ref().as_fd()),
            _ => None,
        }
    }

    /// Reads one message (polling briefly first), then every further one already
    /// buffered, up to `max` in all. The error, if any, ends the batch; the messages read
    /// before it are returned with it.
    pub fn recv_batch<T: Message>(&mut self, max: usize) -> (Vec<T>, Option<FrameError>) {
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
        match &self.inner {
            RecvInner::Unix(r) => {
                let _ = r.get_ref().shutdown(std::net::Shutdown::Both);
            }
            RecvInner::Quic(q) => q.close(),
        }
    }
}

/// A buffered, blocking writer of frames.
pub struct BufferedWriter {
    w: BufWriter<SharedWriter>,
}

/// The writing handle of a buffered connection (see [`SharedStream`]).
struct SharedWriter(Arc<UnixStream>);

impl Write for SharedWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        (&*self.0).write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl BufferedWriter {
    /// Encodes `msg` into the buffer as one frame (written out when the buffer fills).
    pub fn write<T: Message>(&mut self, msg: &T) -> io::Result<()> {
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
pub fn spawn_reader<T: Message>(
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
        let (tx, _rx_a) = a.split::<ToRaylet>(1 << 20, 1 << 20).unwrap();
        let (_tx_b, rx) = b.split::<ToRaylet>(1 << 20, 1 << 20).unwrap();
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
                        s.lock().unwrap().push(request_id.0);
                    }
                }
                true
            },
            move |reason| done_tx.send(reason).unwrap(),
        )
        .unwrap();
        for i in 0..100 {
            tx.send(&ToRaylet::GetStats { request_id: ares_common::RequestId(i) }).unwrap();
        }
        tx.close();
        let reason = done_rx.recv().unwrap();
        assert_eq!(reason, "connection closed");
        assert_eq!(*seen.lock().unwrap(), (0..100).collect::<Vec<_>>());
    }

    #[test]
    fn a_sender_sees_its_peer_go_without_reading() {
        let (a, b) = Connection::pair().unwrap();
        let (tx, _rx) = a.split::<ToRaylet>(1 << 20, 1 << 20).unwrap();
        let (tx_b, rx_b) = b.split::<ToRaylet>(1 << 20, 1 << 20).unwrap();
        assert!(!tx.peer_closed());
        // Unread data from the peer is not an end.
        tx_b.send(&ToRaylet::GetStats { request_id: ares_common::RequestId(1) }).unwrap();
        assert!(!tx.peer_closed());
        drop((tx_b, rx_b));
        assert!(tx.peer_closed());
    }

    #[test]
    fn a_malformed_frame_ends_the_reader_with_the_reason() {
        let (a, b) = Connection::pair().unwrap();
        let (tx, _rx_a) = a.split::<ToRaylet>(1 << 20, 1 << 20).unwrap();
        let (_tx_b, mut rx) = b.split::<ToRaylet>(1 << 20, 1 << 20).unwrap();
        let mut bytes = Vec::new();
        frame::write_frame(&mut bytes, 0, &[0xAB; 40]).unwrap();
        tx.send_framed(&bytes).unwrap();
        let (batch, err) = rx.recv_batch::<ToRaylet>(8);
        assert!(batch.is_empty());
        assert!(matches!(err, Some(FrameError::Malformed { .. })), "{err:?}");
    }
}
