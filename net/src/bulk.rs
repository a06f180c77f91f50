//! The bulk data plane: large objects between nodes over kernel TCP with rustls (TLS 1.3,
//! AES-128-GCM first), beside QUIC, which keeps control messages and small objects.
//!
//! **Why TCP.** QUIC in user space costs a copy and an AEAD pass per datagram on one
//! runtime thread; TCP leaves segmentation, acknowledgements and loss recovery to the
//! kernel, and TLS seals 16 KiB records. Each pulling thread holds a connection of its
//! own (see [`BulkPeer`]), so a transfer runs on several connections and cores.
//!
//! **Trust.** Exactly the QUIC side's: the server presents the cluster certificate (the
//! client pins it by the join token's hash), and the client proves it knows the secret
//! by a keyed hash of the TLS session's exported keying material, so a proof is good for
//! that one connection only and never shows the secret itself. Every step of the
//! handshake has a deadline; a listener runs at most [`MAX_HANDSHAKES`] handshakes and
//! serves at most [`MAX_CONNECTIONS`] connections at once, and closes the rest at once.
//!
//! **IO.** Plain blocking sockets on the caller's threads (no runtime hand-off). Reads go
//! through a 1 MiB buffer, so a 1 GiB object is a thousand `read` calls rather than the
//! quarter-million that rustls' 4 KiB reads would make.

use std::io::{self, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::quic::{AUTH_TIMEOUT, Credentials, JoinToken, SERVER_NAME, STALL_TIMEOUT, tls_client, tls_server};

/// What a client sends once TLS is up: a magic tag, then its 32-byte proof.
const MAGIC: &[u8; 5] = b"ARESB";
/// The server's answers to the proof.
const OK: &[u8; 2] = b"OK";
const NO: &[u8; 2] = b"NO";
/// The exporter label of the proof (RFC 8446 section 7.5).
const EXPORTER_LABEL: &[u8] = b"EXPORTER-ares-bulk-proof";
/// Authenticated connections a listener serves at once; more are closed.
pub const MAX_CONNECTIONS: usize = 256;
/// Handshakes a listener runs at once (each has [`AUTH_TIMEOUT`]); more connections are
/// closed as they arrive.
pub const MAX_HANDSHAKES: usize = 32;
/// How long a server keeps a connection that asks nothing; the client retires its idle
/// connections well before ([`CLIENT_IDLE`]).
const SERVER_IDLE: Duration = Duration::from_secs(25);
const CLIENT_IDLE: Duration = Duration::from_secs(10);
/// Connections a client keeps idle per peer.
const KEEP_IDLE: usize = 8;
/// Socket reads and the TLS writer's buffer: large, so a transfer makes few system calls.
const IO_BUFFER: usize = 1 << 20;

fn proof(secret: &[u8; 16], exported: &[u8; 32]) -> [u8; 32] {
    let key = blake3::derive_key("ares bulk data plane 2026-12 proof of the join secret", secret);
    *blake3::keyed_hash(&key, exported).as_bytes()
}

/// The socket under TLS: buffered reads, direct writes. Until the handshake is done,
/// every read and write must end by `deadline`: rustls reads a handshake in several
/// calls, and a per-call timeout alone would let a peer that trickles a byte at a time
/// hold a connection for as long as it likes.
struct Sock {
    read: BufReader<TcpStream>,
    deadline: Option<Instant>,
}

impl Sock {
    fn before_io(&self) -> io::Result<()> {
        if let Some(d) = self.deadline {
            set_deadline(self.tcp(), d)?;
        }
        Ok(())
    }
}

impl Read for Sock {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.before_io()?;
        self.read.read(buf)
    }
}

impl Write for Sock {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.before_io()?;
        self.read.get_mut().write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.read.get_mut().flush()
    }
}

impl Sock {
    fn new(tcp: TcpStream, deadline: Instant) -> Sock {
        Sock { read: BufReader::with_capacity(IO_BUFFER, tcp), deadline: Some(deadline) }
    }
    fn tcp(&self) -> &TcpStream {
        self.read.get_ref()
    }
}

enum Tls {
    Client(rustls::StreamOwned<rustls::ClientConnection, Sock>),
    Server(rustls::StreamOwned<rustls::ServerConnection, Sock>),
}

/// One authenticated TLS-over-TCP connection, used with blocking calls. Reads and writes
/// fail after [`STALL_TIMEOUT`] without progress.
pub struct BulkStream {
    tls: Tls,
    peer: SocketAddr,
}

impl Read for BulkStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match &mut self.tls {
            Tls::Client(s) => s.read(buf),
            Tls::Server(s) => s.read(buf),
        }
    }
}

impl Write for BulkStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.tls {
            Tls::Client(s) => s.write(buf),
            Tls::Server(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match &mut self.tls {
            Tls::Client(s) => s.flush(),
            Tls::Server(s) => s.flush(),
        }
    }
}

/// Runs `conn`'s handshake on `sock` (within the socket's deadline).
fn handshake<C, S>(conn: &mut C, sock: &mut Sock) -> io::Result<()>
where
    C: std::ops::DerefMut<Target = rustls::ConnectionCommon<S>>,
    S: rustls::SideData,
{
    while conn.is_handshaking() {
        conn.complete_io(sock)?;
    }
    // Send what the last step queued (the client's Finished).
    while conn.wants_write() {
        conn.write_tls(sock)?;
    }
    Ok(())
}

fn set_deadline(tcp: &TcpStream, deadline: Instant) -> io::Result<()> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(io::Error::new(io::ErrorKind::TimedOut, format!("no bulk handshake within {AUTH_TIMEOUT:?}")));
    }
    tcp.set_read_timeout(Some(left))?;
    tcp.set_write_timeout(Some(left))
}

fn refused(addr: SocketAddr, e: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionRefused, format!("bulk connection to {addr}: {e}"))
}

impl BulkStream {
    /// Connects to the bulk listener at `addr` presenting `token`; the connection and
    /// the whole handshake must be done within `limit`.
    pub fn connect(addr: SocketAddr, token: &JoinToken, limit: Duration) -> io::Result<BulkStream> {
        let deadline = Instant::now() + limit;
        let tcp = TcpStream::connect_timeout(&addr, limit).map_err(|e| refused(addr, e))?;
        tcp.set_nodelay(true)?;
        let cfg = tls_client(token)?;
        let name = rustls::pki_types::ServerName::try_from(SERVER_NAME).map_err(io::Error::other)?;
        let mut conn = rustls::ClientConnection::new(Arc::new(cfg), name).map_err(io::Error::other)?;
        let mut sock = Sock::new(tcp, deadline);
        handshake(&mut conn, &mut sock).map_err(|e| refused(addr, e))?;
        let exported = conn.export_keying_material([0u8; 32], EXPORTER_LABEL, None).map_err(io::Error::other)?;
        let mut hello = MAGIC.to_vec();
        hello.extend_from_slice(&proof(&token.secret, &exported));
        let mut s = BulkStream { tls: Tls::Client(rustls::StreamOwned::new(conn, sock)), peer: addr };
        s.write_all(&hello).map_err(|e| refused(addr, e))?;
        let mut answer = [0u8; 2];
        s.read_exact(&mut answer).map_err(|e| refused(addr, e))?;
        match &answer {
            a if a == OK => {}
            a if a == NO => return Err(refused(addr, "wrong join token")),
            _ => return Err(refused(addr, "not an ares node")),
        }
        s.set_stall_timeouts()?;
        Ok(s)
    }

    fn tcp(&self) -> &TcpStream {
        match &self.tls {
            Tls::Client(s) => s.sock.tcp(),
            Tls::Server(s) => s.sock.tcp(),
        }
    }

    /// Ends the handshake's deadline: from now on each read and write has
    /// [`STALL_TIMEOUT`] to make progress.
    fn set_stall_timeouts(&mut self) -> io::Result<()> {
        match &mut self.tls {
            Tls::Client(s) => s.sock.deadline = None,
            Tls::Server(s) => s.sock.deadline = None,
        }
        self.tcp().set_read_timeout(Some(STALL_TIMEOUT))?;
        self.tcp().set_write_timeout(Some(STALL_TIMEOUT))
    }

    /// The address of the other end.
    pub fn peer(&self) -> SocketAddr {
        self.peer
    }

    /// Reads the next request's first bytes into `buf`, waiting up to the server's idle
    /// time; `Ok(false)` if the client closed the connection cleanly before asking.
    pub fn read_request(&mut self, buf: &mut [u8]) -> io::Result<bool> {
        self.tcp().set_read_timeout(Some(SERVER_IDLE))?;
        let mut at = 0;
        while at < buf.len() {
            match self.read(&mut buf[at..]) {
                Ok(0) if at == 0 => return Ok(false),
                Ok(0) => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "a request ended early")),
                Ok(n) => {
                    at += n;
                    self.tcp().set_read_timeout(Some(STALL_TIMEOUT))?;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }
}

/// Serves each authenticated connection on a thread of its own.
pub type BulkHandler = Arc<dyn Fn(BulkStream) + Send + Sync>;

/// A TCP listener for the bulk plane.
pub struct BulkListener {
    listener: Arc<TcpListener>,
    local: SocketAddr,
    stopped: Arc<AtomicBool>,
}

/// One of a bounded number of places, given back when dropped (a panicking handler
/// included).
struct Place(Arc<AtomicUsize>);

impl Place {
    fn take(count: &Arc<AtomicUsize>, max: usize) -> Option<Place> {
        count.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < max).then_some(n + 1)).ok()?;
        Some(Place(count.clone()))
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Warns about a refused connection at most once every 30 s (a flood must not flood the
/// log too).
fn warn_limited(last: &mut Option<Instant>, peer: SocketAddr, why: std::fmt::Arguments<'_>) {
    if last.is_none_or(|t| t.elapsed() >= Duration::from_secs(30)) {
        *last = Some(Instant::now());
        tracing::warn!(%peer, "refused a bulk connection: {why} (further refusals for 30 s are not logged)");
    }
}

impl BulkListener {
    /// Listens on `addr` (a node binds the address and port of its QUIC endpoint, so its
    /// peers need no second address) and serves each connection that proves the
    /// secret of `creds` with `handler`, on a thread of its own.
    pub fn bind(addr: SocketAddr, creds: &Credentials, handler: BulkHandler) -> io::Result<BulkListener> {
        let listener = Arc::new(TcpListener::bind(addr)?);
        let local = listener.local_addr()?;
        let mut cfg = tls_server(creds)?;
        // Connections are kept, not resumed.
        cfg.send_tls13_tickets = 0;
        let cfg = Arc::new(cfg);
        let secret = creds.secret();
        let stopped = Arc::new(AtomicBool::new(false));
        // Handshakes and authenticated connections are counted apart, so that clients
        // that never authenticate cannot take the places of the cluster's own.
        let (handshaking, serving) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let (l, stop) = (listener.clone(), stopped.clone());
        std::thread::Builder::new().name("ares-bulk-accept".into()).spawn(move || {
            let mut warned = None;
            for tcp in l.incoming() {
                if stop.load(Ordering::Acquire) {
                    return;
                }
                let Ok(tcp) = tcp else {
                    // Out of file descriptors, say: wait a little rather than spin on it.
                    std::thread::sleep(Duration::from_millis(50));
                    continue;
                };
                let peer = tcp.peer_addr().unwrap_or(local);
                let Some(place) = Place::take(&handshaking, MAX_HANDSHAKES) else {
                    warn_limited(&mut warned, peer, format_args!("{MAX_HANDSHAKES} handshakes under way"));
                    continue;
                };
                let (cfg, handler, serving) = (cfg.clone(), handler.clone(), serving.clone());
                let spawned = std::thread::Builder::new().name("ares-bulk-conn".into()).spawn(move || {
                    let conn = accept(tcp, peer, cfg, &secret);
                    drop(place);
                    match conn {
                        Ok(s) => match Place::take(&serving, MAX_CONNECTIONS) {
                            Some(_place) => handler(s),
                            None => {
                                tracing::debug!(%peer, "closed a bulk connection: {MAX_CONNECTIONS} already served")
                            }
                        },
                        Err(e) => tracing::debug!(%peer, "refused a bulk connection: {e}"),
                    }
                });
                if spawned.is_err() {
                    warn_limited(&mut warned, peer, format_args!("no thread for it"));
                }
            }
        })?;
        Ok(BulkListener { listener, local, stopped })
    }

    /// Where it listens.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Stops accepting (connections being served finish their request).
    pub fn shutdown(&self) {
        self.stopped.store(true, Ordering::Release);
        // Wakes the accepting thread: accept() on a shut-down socket fails at once.
        let _ = rustix::net::shutdown(&*self.listener, rustix::net::Shutdown::Both);
    }
}

impl Drop for BulkListener {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The server side of the handshake: TLS, then the client's proof, within
/// [`AUTH_TIMEOUT`] in all.
fn accept(
    tcp: TcpStream,
    peer: SocketAddr,
    cfg: Arc<rustls::ServerConfig>,
    secret: &[u8; 16],
) -> io::Result<BulkStream> {
    let deadline = Instant::now() + AUTH_TIMEOUT;
    tcp.set_nodelay(true)?;
    let mut conn = rustls::ServerConnection::new(cfg).map_err(io::Error::other)?;
    let mut sock = Sock::new(tcp, deadline);
    handshake(&mut conn, &mut sock)?;
    let exported = conn.export_keying_material([0u8; 32], EXPORTER_LABEL, None).map_err(io::Error::other)?;
    let want = proof(secret, &exported);
    let mut s = BulkStream { tls: Tls::Server(rustls::StreamOwned::new(conn, sock)), peer };
    let mut hello = [0u8; MAGIC.len() + 32];
    s.read_exact(&mut hello)?;
    if &hello[..MAGIC.len()] != MAGIC {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "not an ares client (bad magic)"));
    }
    // Compared without an early exit, so timing does not reveal how much matched.
    let diff = hello[MAGIC.len()..].iter().zip(&want).fold(0u8, |d, (a, b)| d | (a ^ b));
    if diff != 0 {
        let _ = s.write_all(NO);
        return Err(io::Error::new(io::ErrorKind::PermissionDenied, "wrong join token"));
    }
    s.write_all(OK)?;
    if let Tls::Server(t) = &mut s.tls {
        t.conn.set_buffer_limit(Some(IO_BUFFER));
    }
    s.set_stall_timeouts()?;
    Ok(s)
}

/// Bulk connections to one node, kept for reuse: each pulling thread takes one and gives
/// it back when its chunk is read.
pub struct BulkPeer {
    addr: SocketAddr,
    token: JoinToken,
    idle: Mutex<Vec<(BulkStream, Instant)>>,
    /// Until when no new connection is tried, after one failed: a node without a bulk
    /// listener (or behind a filter) costs a pull one attempt, not one per chunk.
    down_until: Mutex<Option<Instant>>,
}

/// How long a peer whose bulk connection failed is left alone.
const DOWN_FOR: Duration = Duration::from_secs(30);

impl BulkPeer {
    /// Connections to `addr`, presenting `token`; none is made until [`BulkPeer::take`].
    pub fn new(addr: SocketAddr, token: JoinToken) -> BulkPeer {
        BulkPeer { addr, token, idle: Mutex::new(Vec::new()), down_until: Mutex::new(None) }
    }

    /// A new connection made within `limit` (none is tried for a while after one failed).
    pub fn connect(&self, limit: Duration) -> io::Result<BulkStream> {
        let now = Instant::now();
        let mut down = self.down_until.lock().unwrap_or_else(|p| p.into_inner());
        if down.is_some_and(|t| now < t) {
            return Err(io::Error::new(
                io::ErrorKind::ConnectionRefused,
                format!("{} did not take a bulk connection lately", self.addr),
            ));
        }
        *down = None;
        drop(down);
        match BulkStream::connect(self.addr, &self.token, limit) {
            Ok(mut s) => {
                if let Tls::Client(t) = &mut s.tls {
                    t.conn.set_buffer_limit(Some(IO_BUFFER));
                }
                Ok(s)
            }
            Err(e) => {
                tracing::debug!(addr = %self.addr, "no bulk connection ({e}); pulls use QUIC for {DOWN_FOR:?}");
                *self.down_until.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now() + DOWN_FOR);
                Err(e)
            }
        }
    }

    /// An idle connection, or a new one made within `limit`. The flag says whether it
    /// was reused (a reused connection the server may have closed meanwhile).
    pub fn take(&self, limit: Duration) -> io::Result<(BulkStream, bool)> {
        self.close_expired();
        let reused = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop().map(|(s, _)| s);
        match reused {
            Some(s) => Ok((s, true)),
            None => Ok((self.connect(limit)?, false)),
        }
    }

    /// Gives back a connection whose last exchange ended cleanly.
    pub fn give_back(&self, s: BulkStream) {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        if idle.len() < KEEP_IDLE {
            idle.push((s, Instant::now()));
        }
    }

    /// Closes the kept connections that idled too long.
    pub fn close_expired(&self) {
        let now = Instant::now();
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        idle.retain(|(_, since)| now.saturating_duration_since(*since) < CLIENT_IDLE);
    }

    /// Whether it keeps any connection.
    pub fn keeps_any(&self) -> bool {
        !self.idle.lock().unwrap_or_else(|p| p.into_inner()).is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn creds() -> Credentials {
        Credentials::generate([7u8; 16]).unwrap()
    }

    /// A listener that echoes each request of 8 bytes back reversed, until the client
    /// closes.
    fn echo(creds: &Credentials) -> BulkListener {
        let handler: BulkHandler = Arc::new(|mut s: BulkStream| {
            let mut b = [0u8; 8];
            while let Ok(true) = s.read_request(&mut b) {
                b.reverse();
                if s.write_all(&b).and_then(|()| s.flush()).is_err() {
                    return;
                }
            }
        });
        BulkListener::bind("127.0.0.1:0".parse().unwrap(), creds, handler).unwrap()
    }

    #[test]
    fn a_client_with_the_token_is_served_over_tls_and_its_connection_is_reused() {
        crate::install_crypto_provider();
        let c = creds();
        let l = echo(&c);
        let peer = BulkPeer::new(l.local_addr(), c.token());
        for round in 0..3 {
            let (mut s, reused) = peer.take(Duration::from_secs(5)).unwrap();
            assert_eq!(reused, round > 0, "round {round}");
            s.write_all(&[1, 2, 3, 4, 5, 6, 7, round]).unwrap();
            s.flush().unwrap();
            let mut b = [0u8; 8];
            s.read_exact(&mut b).unwrap();
            assert_eq!(b, [round, 7, 6, 5, 4, 3, 2, 1]);
            peer.give_back(s);
        }
        l.shutdown();
    }

    #[test]
    fn a_wrong_secret_or_a_wrong_certificate_is_refused_with_the_reason() {
        crate::install_crypto_provider();
        let c = creds();
        let l = echo(&c);
        let other = Credentials::generate([8u8; 16]).unwrap();
        // Same certificate, wrong secret: the server refuses the proof.
        let t: JoinToken = format!("{}{}", "09".repeat(16), &c.token().to_string()[32..]).parse().unwrap();
        let e = BulkStream::connect(l.local_addr(), &t, Duration::from_secs(5)).err().unwrap();
        assert!(e.to_string().contains("wrong join token"), "{e}");
        // Another cluster's certificate: the client refuses the server.
        let e = BulkStream::connect(l.local_addr(), &other.token(), Duration::from_secs(5)).err().unwrap();
        assert!(e.to_string().contains("certificate"), "{e}");
    }

    #[test]
    fn a_silent_or_garbage_client_is_dropped_within_the_handshake_deadline() {
        crate::install_crypto_provider();
        let c = creds();
        let l = echo(&c);
        // Plain bytes that are not TLS: the server closes at once.
        let mut raw = TcpStream::connect(l.local_addr()).unwrap();
        raw.write_all(&[0xff; 64]).unwrap();
        raw.set_read_timeout(Some(AUTH_TIMEOUT * 3)).unwrap();
        let mut b = [0u8; 64];
        let n = loop {
            match raw.read(&mut b) {
                Ok(0) => break 0,
                Ok(_) => continue, // the TLS alert
                Err(e) if e.kind() == io::ErrorKind::ConnectionReset => break 0,
                Err(e) => panic!("the server kept a garbage connection open: {e}"),
            }
        };
        assert_eq!(n, 0);
        // A client that trickles a handshake a byte at a time is closed all the same
        // (each byte would reset a per-read timeout).
        let mut slow = TcpStream::connect(l.local_addr()).unwrap();
        let mut hello = vec![0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03];
        hello.resize(2048, 0);
        let closed = hello.iter().any(|b| {
            std::thread::sleep(Duration::from_millis(250));
            slow.write_all(&[*b]).is_err()
        });
        assert!(closed, "a trickling client was kept for 2048 bytes at 4 a second");
        // A client that connects and says nothing is closed after the deadline.
        let mut quiet = TcpStream::connect(l.local_addr()).unwrap();
        quiet.set_read_timeout(Some(AUTH_TIMEOUT * 3)).unwrap();
        match quiet.read(&mut b) {
            Ok(0) => {}
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => {}
            other => panic!("a silent client was kept: {other:?}"),
        }
    }
}
