//! QUIC between nodes (quinn 0.11, rustls 0.23 with the ring provider), behind the same
//! blocking message-level halves as the Unix transport.
//!
//! **Trust.** The head makes a self-signed cluster certificate and a random secret when it
//! starts ([`Credentials::generate`]). The join token it prints carries both the secret
//! and a hash of the certificate, so a joining node checks the server's certificate
//! against the token (no CA, no file to copy) and then proves it knows the secret in the
//! first bytes of its first stream. A connection that fails either check is closed with
//! a logged reason before any message is read from it.
//!
//! **IO.** One small tokio runtime per process runs quinn; callers stay on plain
//! threads. Sending never blocks (frames queue to a writer task, bounded in bytes);
//! receiving blocks on a bounded channel fed by a reader task that bounds each frame
//! before reading it and grows its buffer only as bytes arrive, so a peer that announces
//! a huge frame and sends nothing costs nothing.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

use ares_common::codec::Bytes;
use ares_common::error::FrameError;
use ares_common::frame::{HEADER, Kinds, next_step, parse_header};
use ares_common::hex;

/// Bytes a client sends first on its first stream: a magic tag, the secret, then what
/// the connection is for ([`FOR_MESSAGES`] or [`FOR_STREAMS`]).
const HELLO_MAGIC: &[u8; 5] = b"ARES2";
/// The first stream carries messages: the connection queues for [`QuicListener::accept`].
const FOR_MESSAGES: u8 = 0;
/// Only further streams are used (bulk pulls): the connection is never queued, so no
/// registration is expected of it.
const FOR_STREAMS: u8 = 1;
/// The server's answer once the secret checks out.
const HELLO_OK: &[u8; 2] = b"OK";
/// A refusal: followed by a `u16` length and the reason (at most [`MAX_REASON`] bytes).
const HELLO_NO: &[u8; 2] = b"NO";
const MAX_REASON: usize = 1024;
/// How long an accepted connection may take to prove it knows the secret.
pub(crate) const AUTH_TIMEOUT: Duration = Duration::from_secs(5);
/// The name the cluster certificate is issued for (checked by hash, not by name).
pub(crate) const SERVER_NAME: &str = "ares-cluster";
/// Application close codes.
const CLOSE_OK: u32 = 0;
const CLOSE_REFUSED: u32 = 1;
const CLOSE_PROTOCOL: u32 = 2;
/// Frames buffered between a reader task and its receiving thread.
const RECV_QUEUE: usize = 64;

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        install_crypto_provider();
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("ares-quic")
            .enable_all()
            .build()
            .expect("the QUIC runtime starts (one thread, timers and IO)")
    })
}

/// Installs rustls' ring provider as the process default. Every binary calls this first
/// thing: a second provider (aws-lc) linked in by another crate would otherwise make
/// rustls panic when it has to choose. Calling it again is harmless.
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

fn cert_hash(cert_der: &[u8]) -> [u8; 16] {
    let mut h = [0u8; 16];
    h.copy_from_slice(&blake3::hash(cert_der).as_bytes()[..16]);
    h
}

/// What a node or driver needs to join a cluster: the secret, and the hash of the
/// certificate the head serves. Printed as 64 hex digits.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct JoinToken {
    pub(crate) secret: [u8; 16],
    pub(crate) cert: [u8; 16],
}

impl std::fmt::Debug for JoinToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never log the secret.
        write!(f, "JoinToken(cert {})", hex::encode(&self.cert))
    }
}

impl std::fmt::Display for JoinToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}{}", hex::encode(&self.secret), hex::encode(&self.cert))
    }
}

impl std::str::FromStr for JoinToken {
    type Err = io::Error;

    fn from_str(s: &str) -> io::Result<JoinToken> {
        let s = s.trim();
        let bad = || {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "malformed join token: expected the 64 hex digits `ares start --head` printed",
            )
        };
        if s.len() != 64 {
            return Err(bad());
        }
        let secret = hex::decode_array::<16>(&s[..32]).ok_or_else(bad)?;
        let cert = hex::decode_array::<16>(&s[32..]).ok_or_else(bad)?;
        Ok(JoinToken { secret, cert })
    }
}

/// The head's cluster certificate, its key, and the join secret.
#[derive(Clone)]
pub struct Credentials {
    cert: Vec<u8>,
    key: Vec<u8>,
    secret: [u8; 16],
}

impl Credentials {
    /// A new self-signed certificate and the given random secret.
    pub fn generate(secret: [u8; 16]) -> io::Result<Credentials> {
        let ck = rcgen::generate_simple_self_signed(vec![SERVER_NAME.to_string()])
            .map_err(|e| io::Error::other(format!("making the cluster certificate: {e}")))?;
        Ok(Credentials { cert: ck.cert.der().to_vec(), key: ck.signing_key.serialize_der(), secret })
    }

    /// The certificate and key (DER), which the head hands to nodes that joined so that
    /// they serve QUIC under the same certificate.
    pub fn cert_and_key(&self) -> (Vec<u8>, Vec<u8>) {
        (self.cert.clone(), self.key.clone())
    }

    /// Credentials from a certificate and key received from the head, with the secret of
    /// `token`. Fails if the certificate is not the one the token names.
    pub fn from_parts(cert: Vec<u8>, key: Vec<u8>, token: &JoinToken) -> io::Result<Credentials> {
        if cert_hash(&cert) != token.cert {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "the certificate is not the one the join token names",
            ));
        }
        Ok(Credentials { cert, key, secret: token.secret })
    }

    /// The join secret (the bulk plane's listener checks proofs of it).
    pub(crate) fn secret(&self) -> [u8; 16] {
        self.secret
    }

    /// The token that lets a node join.
    pub fn token(&self) -> JoinToken {
        JoinToken { secret: self.secret, cert: cert_hash(&self.cert) }
    }

    /// Writes the credentials to `path` (mode 0600): nodes started on this machine later
    /// (`ares status`, `ares stop`, `ARES_ADDRESS=auto`) read the token from it.
    pub fn save(&self, path: &std::path::Path) -> io::Result<()> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)?;
        writeln!(f, "{}\n{}\n{}", hex::encode(&self.secret), hex::encode(&self.cert), hex::encode(&self.key))
    }

    /// Reads credentials written by [`Credentials::save`].
    pub fn load(path: &std::path::Path) -> io::Result<Credentials> {
        let text = std::fs::read_to_string(path)?;
        let bad =
            || io::Error::new(io::ErrorKind::InvalidData, format!("{}: not an ares credentials file", path.display()));
        let mut lines = text.lines();
        let secret = lines.next().and_then(hex::decode_array::<16>).ok_or_else(bad)?;
        let mut field = || lines.next().and_then(hex::decode).ok_or_else(bad);
        let cert = field()?;
        let key = field()?;
        Ok(Credentials { cert, key, secret })
    }
}

/// Transport settings for bulk transfer: windows large enough to keep a loopback or LAN
/// path full, many streams, keep-alives so an idle control connection stays up, and
/// path MTU discovery up to what loopback allows (quinn uses GSO where the OS has it).
fn transport() -> Arc<quinn::TransportConfig> {
    let mut t = quinn::TransportConfig::default();
    t.stream_receive_window(quinn::VarInt::from_u32(64 << 20));
    t.receive_window(quinn::VarInt::from_u32(256 << 20));
    t.send_window(256 << 20);
    t.max_concurrent_bidi_streams(quinn::VarInt::from_u32(MAX_STREAMS + 1));
    t.max_concurrent_uni_streams(quinn::VarInt::from_u32(0));
    t.keep_alive_interval(Some(Duration::from_secs(2)));
    t.max_idle_timeout(Some(
        quinn::IdleTimeout::try_from(Duration::from_secs(10)).expect("10 s is a valid idle timeout"),
    ));
    let mut mtu = quinn::MtuDiscoveryConfig::default();
    mtu.upper_bound(MAX_UDP_PAYLOAD);
    t.mtu_discovery_config(Some(mtu));
    Arc::new(t)
}

/// Largest UDP payload: loopback carries 64 KiB datagrams and path MTU discovery finds
/// what a LAN allows; quinn's default caps every path at 1472 bytes.
const MAX_UDP_PAYLOAD: u16 = 65_000;
/// UDP socket buffers: a burst of large datagrams must not overflow the receiver's queue
/// (dropped datagrams cost a retransmission and a congestion-window cut).
const UDP_BUFFER: usize = 8 << 20;

/// A quinn endpoint on `addr` with large datagrams and socket buffers.
fn endpoint(addr: SocketAddr, server: Option<quinn::ServerConfig>) -> io::Result<quinn::Endpoint> {
    let socket = std::net::UdpSocket::bind(addr)?;
    // Best effort: the kernel caps these at net.core.[rw]mem_max.
    let _ = rustix::net::sockopt::set_socket_recv_buffer_size(&socket, UDP_BUFFER);
    let _ = rustix::net::sockopt::set_socket_send_buffer_size(&socket, UDP_BUFFER);
    let mut cfg = quinn::EndpointConfig::default();
    cfg.max_udp_payload_size(MAX_UDP_PAYLOAD).map_err(|e| io::Error::other(e.to_string()))?;
    let _guard = runtime().enter();
    quinn::Endpoint::new(cfg, server, socket, Arc::new(quinn::TokioRuntime))
}

/// Accepts a server certificate only if its hash is the one in the join token; the TLS
/// handshake signatures are still checked with the ring provider.
#[derive(Debug)]
struct PinnedCert {
    hash: [u8; 16],
    provider: Arc<rustls::crypto::CryptoProvider>,
}

impl rustls::client::danger::ServerCertVerifier for PinnedCert {
    fn verify_server_cert(
        &self,
        end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        if cert_hash(end_entity.as_ref()) == self.hash {
            Ok(rustls::client::danger::ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::General("the server's certificate is not the one the join token names".into()))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}

/// rustls' ring provider with AES-128-GCM first (QUIC and the bulk plane alike): the
/// server follows the client's order, and ring lists AES-256 first, which costs about a
/// third more per byte for a margin rustls' own docs call marginal.
fn provider() -> rustls::crypto::CryptoProvider {
    use rustls::crypto::ring::cipher_suite as cs;
    rustls::crypto::CryptoProvider {
        cipher_suites: vec![
            cs::TLS13_AES_128_GCM_SHA256,
            cs::TLS13_AES_256_GCM_SHA384,
            cs::TLS13_CHACHA20_POLY1305_SHA256,
        ],
        ..rustls::crypto::ring::default_provider()
    }
}

/// TLS 1.3 for a client that accepts only the certificate `token` names (QUIC and the
/// bulk plane).
pub(crate) fn tls_client(token: &JoinToken) -> io::Result<rustls::ClientConfig> {
    let provider = Arc::new(provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(io::Error::other)?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(PinnedCert { hash: token.cert, provider }))
        .with_no_client_auth())
}

/// TLS 1.3 for a server presenting the cluster certificate (QUIC and the bulk plane).
pub(crate) fn tls_server(creds: &Credentials) -> io::Result<rustls::ServerConfig> {
    let cert = rustls::pki_types::CertificateDer::from(creds.cert.clone());
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(creds.key.clone().into());
    rustls::ServerConfig::builder_with_provider(Arc::new(provider()))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(io::Error::other)?
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .map_err(io::Error::other)
}

fn client_config(token: &JoinToken) -> io::Result<quinn::ClientConfig> {
    let quic = quinn::crypto::rustls::QuicClientConfig::try_from(tls_client(token)?).map_err(io::Error::other)?;
    let mut cfg = quinn::ClientConfig::new(Arc::new(quic));
    cfg.transport_config(transport());
    Ok(cfg)
}

fn server_config(creds: &Credentials) -> io::Result<quinn::ServerConfig> {
    let quic = quinn::crypto::rustls::QuicServerConfig::try_from(tls_server(creds)?).map_err(io::Error::other)?;
    let mut cfg = quinn::ServerConfig::with_crypto(Arc::new(quic));
    cfg.transport_config(transport());
    Ok(cfg)
}

/// The join token outgoing QUIC connections of this process present.
static TOKEN: RwLock<Option<JoinToken>> = RwLock::new(None);

/// Sets the join token this process presents when it connects to other nodes.
pub fn set_join_token(token: JoinToken) {
    *TOKEN.write().unwrap_or_else(|p| p.into_inner()) = Some(token);
}

/// The join token set by [`set_join_token`], if any.
pub fn join_token() -> Option<JoinToken> {
    *TOKEN.read().unwrap_or_else(|p| p.into_inner())
}

/// The process's client endpoint, once made.
static EP: OnceLock<quinn::Endpoint> = OnceLock::new();

/// Waits, at most `limit`, until every connection this process opened and has closed
/// has told its peer so. A process that exits right after closing would otherwise leave
/// its peers to notice at the idle timeout, holding its leases that long.
pub fn drain_outgoing(limit: Duration) {
    if let Some(ep) = EP.get() {
        let ep = ep.clone();
        runtime().block_on(async move {
            let _ = tokio::time::timeout(limit, ep.wait_idle()).await;
        });
    }
}

/// The process's client endpoint (one UDP socket for every outgoing connection).
fn client_endpoint() -> io::Result<quinn::Endpoint> {
    if let Some(ep) = EP.get() {
        return Ok(ep.clone());
    }
    let ep = endpoint("0.0.0.0:0".parse().expect("a valid wildcard address"), None)?;
    Ok(EP.get_or_init(|| ep).clone())
}

/// One authenticated QUIC connection and its first (control) stream.
pub(crate) struct QuicStream {
    conn: quinn::Connection,
    send: quinn::SendStream,
    recv: quinn::RecvStream,
}

fn refused(e: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionRefused, e.to_string())
}

/// Connects to `addr` with this process's join token.
pub(crate) fn connect(addr: SocketAddr) -> io::Result<QuicStream> {
    connect_with(addr, &current_token(addr)?)
}

/// This process's join token, set by [`set_join_token`].
fn current_token(addr: SocketAddr) -> io::Result<JoinToken> {
    TOKEN.read().unwrap_or_else(|p| p.into_inner()).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("connecting to {addr}: no join token (set ARES_TOKEN or pass --token)"),
        )
    })
}

/// Connects to `addr` presenting `token`.
pub(crate) fn connect_with(addr: SocketAddr, token: &JoinToken) -> io::Result<QuicStream> {
    open(addr, token, FOR_MESSAGES, None)
}

/// Like [`connect_with`], giving up on a connection not made and authenticated within
/// `limit` (rather than the idle timeout and the join handshake's own timeout): for
/// callers that try again soon, as a member retrying its head.
pub(crate) fn connect_within(addr: SocketAddr, token: &JoinToken, limit: Duration) -> io::Result<QuicStream> {
    open(addr, token, FOR_MESSAGES, Some(limit))
}

fn open(addr: SocketAddr, token: &JoinToken, purpose: u8, limit: Option<Duration>) -> io::Result<QuicStream> {
    let ep = client_endpoint()?;
    let cfg = client_config(token)?;
    let secret = token.secret;
    let opening = async move {
        let conn = ep
            .connect_with(cfg, addr, SERVER_NAME)
            .map_err(|e| refused(format!("connecting to {addr}: {e}")))?
            .await
            .map_err(|e| refused(format!("connecting to {addr}: {e}")))?;
        let (mut send, mut recv) = conn.open_bi().await.map_err(|e| refused(format!("{addr}: {e}")))?;
        let mut hello = HELLO_MAGIC.to_vec();
        hello.extend_from_slice(&secret);
        hello.push(purpose);
        send.write_all(&hello).await.map_err(|e| refused(format!("{addr}: {e}")))?;
        let mut ok = [0u8; 2];
        match tokio::time::timeout(AUTH_TIMEOUT, recv.read_exact(&mut ok)).await {
            Ok(Ok(())) if &ok == HELLO_OK => Ok(QuicStream { conn, send, recv }),
            Ok(Ok(())) if &ok == HELLO_NO => {
                // The reason comes in-band: a close frame can lose the race with a reset.
                let mut len = [0u8; 2];
                let reason = match tokio::time::timeout(AUTH_TIMEOUT, recv.read_exact(&mut len)).await {
                    Ok(Ok(())) => {
                        let mut text = vec![0u8; (u16::from_le_bytes(len) as usize).min(MAX_REASON)];
                        match tokio::time::timeout(AUTH_TIMEOUT, recv.read_exact(&mut text)).await {
                            Ok(Ok(())) => String::from_utf8_lossy(&text).into_owned(),
                            _ => "no reason given".to_string(),
                        }
                    }
                    _ => "no reason given".to_string(),
                };
                Err(refused(format!("{addr} refused this connection: {reason}")))
            }
            Ok(Ok(())) => Err(refused(format!("{addr}: not an ares node"))),
            Ok(Err(_)) => Err(refused(format!(
                "{addr} refused this connection: {}",
                conn.close_reason().map_or_else(|| "no reason given".to_string(), |r| close_reason(&r))
            ))),
            Err(_) => Err(refused(format!("{addr}: no answer to the join handshake within {AUTH_TIMEOUT:?}"))),
        }
    };
    runtime().block_on(async move {
        match limit {
            None => opening.await,
            Some(limit) => tokio::time::timeout(limit, opening).await.unwrap_or_else(|_| {
                Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("connecting to {addr}: no answer within {limit:?}"),
                ))
            }),
        }
    })
}

fn close_reason(e: &quinn::ConnectionError) -> String {
    match e {
        quinn::ConnectionError::ApplicationClosed(c) => String::from_utf8_lossy(&c.reason).into_owned(),
        other => other.to_string(),
    }
}

/// Runs on a thread of its own for every further bidirectional stream a peer opens on an
/// authenticated connection (bulk transfers; the first stream is the message stream).
pub type StreamHandler = Arc<dyn Fn(RawStream) + Send + Sync>;

/// Further streams a peer may have open at once on one connection.
const MAX_STREAMS: u32 = 64;

/// A QUIC listener: authenticated connections queue for [`QuicListener::accept`].
pub(crate) struct QuicListener {
    endpoint: quinn::Endpoint,
    accepted: std::sync::Mutex<std::sync::mpsc::Receiver<QuicStream>>,
    local: SocketAddr,
}

impl QuicListener {
    /// `queue`: whether authenticated connections queue for `accept` (a listener that only
    /// serves streams keeps them open without queueing). `on_stream` serves further streams.
    pub(crate) fn bind(
        addr: SocketAddr,
        creds: &Credentials,
        queue: bool,
        on_stream: Option<StreamHandler>,
    ) -> io::Result<QuicListener> {
        let cfg = server_config(creds)?;
        let endpoint = endpoint(addr, Some(cfg))?;
        let local = endpoint.local_addr()?;
        let (tx, rx) = std::sync::mpsc::channel();
        let ep = endpoint.clone();
        let secret = creds.secret;
        runtime().spawn(async move {
            while let Some(incoming) = ep.accept().await {
                let tx = tx.clone();
                let on_stream = on_stream.clone();
                tokio::spawn(async move {
                    let peer = incoming.remote_address();
                    let (s, purpose) = match authenticate(incoming, secret).await {
                        Ok(s) => s,
                        Err(reason) => {
                            tracing::warn!(%peer, "refused a QUIC connection: {reason}");
                            return;
                        }
                    };
                    let conn = s.conn.clone();
                    if queue && purpose == FOR_MESSAGES {
                        let _ = tx.send(s);
                    }
                    let Some(handler) = on_stream else { return };
                    while let Ok((send, recv)) = conn.accept_bi().await {
                        let h = handler.clone();
                        let stream = RawStream { send, recv };
                        if std::thread::Builder::new().name("ares-quic-stream".into()).spawn(move || h(stream)).is_err()
                        {
                            tracing::warn!(%peer, "no thread for a QUIC stream; closing the connection");
                            conn.close(quinn::VarInt::from_u32(CLOSE_PROTOCOL), b"out of threads");
                            return;
                        }
                    }
                });
            }
        });
        Ok(QuicListener { endpoint, accepted: std::sync::Mutex::new(rx), local })
    }

    pub(crate) fn local_addr(&self) -> SocketAddr {
        self.local
    }

    pub(crate) fn accept(&self) -> io::Result<QuicStream> {
        let rx = self.accepted.lock().unwrap_or_else(|p| p.into_inner());
        rx.recv().map_err(|_| io::Error::new(io::ErrorKind::NotConnected, "the QUIC listener was shut down"))
    }

    pub(crate) fn shutdown(&self) {
        self.endpoint.close(quinn::VarInt::from_u32(CLOSE_OK), b"node shutting down");
    }
}

/// Checks a new connection's first stream for the magic and the secret; closes it with
/// the reason otherwise.
async fn authenticate(incoming: quinn::Incoming, secret: [u8; 16]) -> Result<(QuicStream, u8), String> {
    let conn = incoming.await.map_err(|e| format!("handshake failed: {e}"))?;
    let first = tokio::time::timeout(AUTH_TIMEOUT, async {
        let (send, mut recv) = conn.accept_bi().await.map_err(|e| e.to_string())?;
        let mut hello = [0u8; HELLO_MAGIC.len() + 17];
        recv.read_exact(&mut hello).await.map_err(|e| format!("short hello: {e}"))?;
        Ok::<_, String>((send, recv, hello))
    })
    .await;
    let (mut send, recv, hello) = match first {
        Ok(Ok(x)) => x,
        Ok(Err(e)) => {
            conn.close(quinn::VarInt::from_u32(CLOSE_PROTOCOL), b"no join handshake");
            return Err(e);
        }
        Err(_) => {
            conn.close(quinn::VarInt::from_u32(CLOSE_PROTOCOL), b"no join handshake in time");
            return Err(format!("no join handshake within {AUTH_TIMEOUT:?}"));
        }
    };
    if &hello[..HELLO_MAGIC.len()] != HELLO_MAGIC {
        conn.close(quinn::VarInt::from_u32(CLOSE_PROTOCOL), b"not an ares client");
        return Err("not an ares client (bad magic)".into());
    }
    // Compare without an early exit, so timing does not reveal how much matched.
    let diff = hello[HELLO_MAGIC.len()..HELLO_MAGIC.len() + 16].iter().zip(&secret).fold(0u8, |d, (a, b)| d | (a ^ b));
    if diff != 0 {
        let reason = "wrong join token";
        let mut answer = HELLO_NO.to_vec();
        answer.extend_from_slice(&(reason.len() as u16).to_le_bytes());
        answer.extend_from_slice(reason.as_bytes());
        if send.write_all(&answer).await.is_ok() && send.finish().is_ok() {
            let _ = tokio::time::timeout(AUTH_TIMEOUT, send.stopped()).await;
        }
        conn.close(quinn::VarInt::from_u32(CLOSE_REFUSED), reason.as_bytes());
        return Err(reason.into());
    }
    let purpose = hello[HELLO_MAGIC.len() + 16];
    if purpose != FOR_MESSAGES && purpose != FOR_STREAMS {
        conn.close(quinn::VarInt::from_u32(CLOSE_PROTOCOL), b"unknown connection purpose");
        return Err(format!("unknown connection purpose {purpose}"));
    }
    send.write_all(HELLO_OK).await.map_err(|e| e.to_string())?;
    Ok((QuicStream { conn, send, recv }, purpose))
}

/// The sending half of a QUIC stream: frames queue to a writer task.
#[derive(Clone)]
pub(crate) struct QuicSender {
    tx: tokio::sync::mpsc::UnboundedSender<Vec<u8>>,
    queued: Arc<AtomicUsize>,
    limit: usize,
    conn: quinn::Connection,
}

impl QuicSender {
    /// Whether the connection has ended.
    pub(crate) fn peer_closed(&self) -> bool {
        self.conn.close_reason().is_some()
    }

    pub(crate) fn send(&self, bytes: &[u8]) -> io::Result<()> {
        let now = self.queued.fetch_add(bytes.len(), Ordering::AcqRel) + bytes.len();
        if now > self.limit {
            self.close();
            return Err(io::Error::other(format!("peer is not reading: over {} bytes queued", self.limit)));
        }
        self.tx.send(bytes.to_vec()).map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "QUIC connection closed"))
    }

    pub(crate) fn close(&self) {
        self.conn.close(quinn::VarInt::from_u32(CLOSE_OK), b"closed");
    }

    /// Asks the writer task to finish the stream after what is queued, wait (at most a
    /// second) for the peer to acknowledge it, then close the connection.
    pub(crate) fn close_flushed(&self) {
        if self.tx.send(Vec::new()).is_err() {
            self.close();
        }
    }

    /// [`Self::close_flushed`], then waits (at most `limit`) for the connection to close.
    pub(crate) fn close_flushed_wait(&self, limit: Duration) {
        self.close_flushed();
        let conn = self.conn.clone();
        runtime().block_on(async move {
            let _ = tokio::time::timeout(limit, conn.closed()).await;
        });
    }
}

/// The receiving half: validated-size frames from a reader task.
pub(crate) struct QuicReceiver {
    rx: tokio::sync::mpsc::Receiver<Result<(u16, Bytes), FrameError>>,
    peeked: Option<Result<(u16, Bytes), FrameError>>,
    conn: quinn::Connection,
}

impl QuicReceiver {
    /// The next frame's type and payload (blocking).
    pub(crate) fn next(&mut self) -> Result<(u16, Bytes), FrameError> {
        if let Some(p) = self.peeked.take() {
            return p;
        }
        self.rx.blocking_recv().unwrap_or(Err(FrameError::Closed))
    }

    /// The next frame's type and payload, waiting at most `limit`.
    pub(crate) fn next_timeout(&mut self, limit: Duration) -> Result<(u16, Bytes), FrameError> {
        if let Some(p) = self.peeked.take() {
            return p;
        }
        // The timer must be made inside the runtime.
        let rx = &mut self.rx;
        match runtime().block_on(async { tokio::time::timeout(limit, rx.recv()).await }) {
            Ok(Some(f)) => f,
            Ok(None) => Err(FrameError::Closed),
            Err(_) => {
                Err(FrameError::Io(io::Error::new(io::ErrorKind::TimedOut, format!("no message within {limit:?}"))))
            }
        }
    }

    /// Whether a frame is ready without blocking.
    pub(crate) fn ready(&mut self) -> bool {
        if self.peeked.is_some() {
            return true;
        }
        match self.rx.try_recv() {
            Ok(f) => {
                self.peeked = Some(f);
                true
            }
            Err(tokio::sync::mpsc::error::TryRecvError::Empty) => false,
            Err(tokio::sync::mpsc::error::TryRecvError::Disconnected) => {
                self.peeked = Some(Err(FrameError::Closed));
                true
            }
        }
    }

    pub(crate) fn close(&self) {
        self.conn.close(quinn::VarInt::from_u32(CLOSE_OK), b"closed");
    }
}

impl QuicStream {
    /// The other end's address.
    pub(crate) fn remote_address(&self) -> SocketAddr {
        self.conn.remote_address()
    }

    /// Splits into halves; see the module docs.
    pub(crate) fn split(
        self,
        kinds: Kinds,
        first_max: usize,
        max_frame: usize,
        outbox_limit: usize,
    ) -> (QuicSender, QuicReceiver) {
        let QuicStream { conn, mut send, recv } = self;
        let (tx, mut wrx) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
        let queued = Arc::new(AtomicUsize::new(0));
        let q = queued.clone();
        let c = conn.clone();
        runtime().spawn(async move {
            while let Some(bytes) = wrx.recv().await {
                let n = bytes.len();
                if n == 0 {
                    // `close_flushed`: everything before is written.
                    let _ = send.finish();
                    let _ = tokio::time::timeout(Duration::from_secs(1), send.stopped()).await;
                    c.close(quinn::VarInt::from_u32(CLOSE_OK), b"closed");
                    return;
                }
                if send.write_all(&bytes).await.is_err() {
                    c.close(quinn::VarInt::from_u32(CLOSE_OK), b"write failed");
                    return;
                }
                q.fetch_sub(n, Ordering::AcqRel);
            }
            let _ = send.finish();
        });
        let (ftx, frx) = tokio::sync::mpsc::channel(RECV_QUEUE);
        let c = conn.clone();
        runtime().spawn(read_frames(recv, kinds, first_max.min(max_frame), max_frame, ftx, c));
        (
            QuicSender { tx, queued, limit: outbox_limit, conn: conn.clone() },
            QuicReceiver { rx: frx, peeked: None, conn },
        )
    }
}

/// Reads frames of `kinds` into aligned buffers; a bad header (an unknown type, a length
/// over its type's bound) or a reset ends the stream with the error (and closes the
/// connection, so its writer stops too).
async fn read_frames(
    mut recv: quinn::RecvStream,
    kinds: Kinds,
    first_max: usize,
    max: usize,
    out: tokio::sync::mpsc::Sender<Result<(u16, Bytes), FrameError>>,
    conn: quinn::Connection,
) {
    let end = |e: FrameError| {
        let conn = conn.clone();
        let out = out.clone();
        async move {
            if !matches!(e, FrameError::Closed) {
                conn.close(quinn::VarInt::from_u32(CLOSE_PROTOCOL), e.to_string().as_bytes());
            }
            let _ = out.send(Err(e)).await;
        }
    };
    let mut bound = first_max;
    loop {
        let mut header = [0u8; HEADER];
        match recv.read_exact(&mut header).await {
            Ok(()) => {}
            Err(quinn::ReadExactError::FinishedEarly(0)) => return end(FrameError::Closed).await,
            Err(quinn::ReadExactError::FinishedEarly(_)) => {
                return end(FrameError::Io(io::Error::other("stream ended inside a frame header"))).await;
            }
            Err(quinn::ReadExactError::ReadError(e)) => {
                let closed = matches!(
                    e,
                    quinn::ReadError::ConnectionLost(quinn::ConnectionError::ApplicationClosed(_))
                        | quinn::ReadError::ConnectionLost(quinn::ConnectionError::LocallyClosed)
                );
                return end(if closed { FrameError::Closed } else { FrameError::Io(io::Error::other(e.to_string())) })
                    .await;
            }
        }
        let (len, kind) = parse_header(&header);
        if let Err(e) = kinds.check(kind, len, bound) {
            return end(e).await;
        }
        bound = max;
        let mut buf = Bytes::new();
        while buf.len() < len {
            let start = buf.len();
            buf.resize(start + next_step(start, len), 0);
            match recv.read_exact(&mut buf[start..]).await {
                Ok(()) => {}
                Err(e) => {
                    return end(FrameError::Io(io::Error::other(format!("stream ended inside a frame: {e}")))).await;
                }
            }
        }
        if out.send(Ok((kind, buf))).await.is_err() {
            return;
        }
    }
}

/// A bidirectional QUIC stream for bulk bytes, used with blocking calls from plain
/// threads (never from the QUIC runtime's own thread).
pub struct RawStream {
    send: quinn::SendStream,
    recv: quinn::RecvStream,
}

/// How long a bulk stream may make no progress before its call fails (the connection's
/// keep-alives would otherwise keep a stuck transfer waiting forever).
pub(crate) const STALL_TIMEOUT: Duration = Duration::from_secs(30);

fn stalled() -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, format!("the stream made no progress for {STALL_TIMEOUT:?}"))
}

impl RawStream {
    /// Writes all of `bytes`.
    pub fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        for part in bytes.chunks(1 << 20) {
            let send = &mut self.send;
            match runtime().block_on(async { tokio::time::timeout(STALL_TIMEOUT, send.write_all(part)).await }) {
                Ok(r) => r.map_err(|e| io::Error::new(io::ErrorKind::BrokenPipe, e))?,
                Err(_) => return Err(stalled()),
            }
        }
        Ok(())
    }

    /// Sends `data` without copying it: the stream keeps `data` (and whatever owns its
    /// memory) until the peer has acknowledged it.
    pub fn write_owned(&mut self, data: bytes::Bytes) -> io::Result<()> {
        let send = &mut self.send;
        match runtime().block_on(async { tokio::time::timeout(STALL_TIMEOUT, send.write_chunk(data)).await }) {
            Ok(r) => r.map_err(|e| io::Error::new(io::ErrorKind::BrokenPipe, e)),
            Err(_) => Err(stalled()),
        }
    }

    /// Ends the sending side (the peer reads to the end).
    pub fn finish(&mut self) -> io::Result<()> {
        self.send.finish().map_err(|e| io::Error::new(io::ErrorKind::BrokenPipe, e))
    }

    /// Reads exactly `buf.len()` bytes straight into `buf` (a pool allocation, say).
    /// Fails if no byte arrives for [`STALL_TIMEOUT`].
    pub fn read_exact(&mut self, buf: &mut [u8]) -> io::Result<()> {
        let recv = &mut self.recv;
        // One wait on the runtime for the whole buffer: each hand-over between threads
        // costs a wake-up.
        runtime().block_on(async {
            let mut at = 0;
            while at < buf.len() {
                match tokio::time::timeout(STALL_TIMEOUT, recv.read(&mut buf[at..])).await {
                    Ok(Ok(Some(n))) => at += n,
                    Ok(Ok(None)) => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the stream ended early")),
                    Ok(Err(e)) => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, e)),
                    Err(_) => return Err(stalled()),
                }
            }
            Ok(())
        })
    }
}

/// An authenticated connection used only to open bulk streams (a node pulling objects
/// from another). Cheap to clone; closes when the last clone is dropped.
#[derive(Clone)]
pub struct QuicPeer {
    conn: quinn::Connection,
    _control: Arc<std::sync::Mutex<(quinn::SendStream, quinn::RecvStream)>>,
}

impl QuicPeer {
    /// Connects to `addr` with this process's join token.
    pub fn connect(addr: SocketAddr) -> io::Result<QuicPeer> {
        Self::connect_with(addr, &current_token(addr)?)
    }

    /// Connects to `addr` presenting `token`.
    pub fn connect_with(addr: SocketAddr, token: &JoinToken) -> io::Result<QuicPeer> {
        Ok(Self::from_stream(open(addr, token, FOR_STREAMS, None)?))
    }

    fn from_stream(s: QuicStream) -> QuicPeer {
        QuicPeer { conn: s.conn, _control: Arc::new(std::sync::Mutex::new((s.send, s.recv))) }
    }

    /// Opens a new stream.
    pub fn open_stream(&self) -> io::Result<RawStream> {
        let conn = self.conn.clone();
        let (send, recv) = runtime()
            .block_on(async move { conn.open_bi().await })
            .map_err(|e| io::Error::new(io::ErrorKind::ConnectionAborted, e))?;
        Ok(RawStream { send, recv })
    }

    /// The path's current MTU, round-trip time and congestion window (for logs).
    pub fn path_stats(&self) -> String {
        let p = self.conn.stats().path;
        format!("mtu {} rtt {:?} cwnd {} lost {} sent {}", p.current_mtu, p.rtt, p.cwnd, p.lost_packets, p.sent_packets)
    }

    /// Whether the connection has ended.
    pub fn is_closed(&self) -> bool {
        self.conn.close_reason().is_some()
    }
}
