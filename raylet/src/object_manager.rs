//! Moves object bytes between nodes: serves pulls of this node's objects, and pulls
//! other nodes' objects into this node's pool. Which pulls run is decided by
//! [`crate::pulls`]; this module only moves bytes.
//!
//! A pull asks for the object's first [`FIRST`] bytes on a QUIC stream: the answer gives
//! its size, and an object that small is done (QUIC keeps small objects and control).
//! The rest travels in chunks of [`CHUNK`] bytes over the bulk plane (TLS over kernel TCP,
//! see `ares_net::bulk`), up to [`STREAMS`] connections at once, each read straight into
//! the allocation in this node's pool; over QUIC streams (one per chunk) when the source
//! has no bulk listener or cannot be reached on it. A chunk request is 36 bytes: the
//! object ID (20), the offset (8) and the length (8). The answer is a status byte and the
//! object's size (8), then the chunk's bytes; or, on failure, a status byte, a 2-byte
//! length and a reason of at most [`MAX_REASON`] bytes. A bulk connection serves one
//! request after another.

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;

use ares_common::{ObjectId, TaskId};
use ares_net::{BulkPeer, BulkStream, QuicPeer, RawStream};
use ares_object_store::Pool;

/// Bytes per chunk request.
pub(crate) const CHUNK: u64 = 8 << 20;
/// What the first request of a pull asks for, over QUIC: objects up to this size never
/// touch the bulk plane (a first TCP and TLS handshake would cost more than they take).
pub(crate) const FIRST: u64 = 1 << 20;
/// Chunks in flight per pull (bulk connections, or QUIC streams).
pub(crate) const STREAMS: usize = 4;
/// How long a pull waits for a new bulk connection before it moves over QUIC instead.
const BULK_CONNECT: Duration = Duration::from_secs(2);
/// Longest failure reason sent.
const MAX_REASON: usize = 1024;
const OK: u8 = 0;
const FAILED: u8 = 1;

/// What the transfer code needs from its node.
pub(crate) trait TransferHost: Send + Sync + 'static {
    /// The node's pool.
    fn pool(&self) -> &Pool;
    /// Pins `id` for a transfer (restoring it if spilled): its offset and size.
    fn pin(&self, id: ObjectId) -> Result<(u64, u64), String>;
    /// Releases a transfer's pin after `bytes` were sent.
    fn release(&self, id: ObjectId, bytes: u64);
    /// Allocates a secondary copy of `size` bytes (waiting for space as a create does);
    /// `None` if a sealed primary copy is here already (there is nothing to pull).
    fn create_copy(&self, id: ObjectId, size: u64) -> Result<Option<u64>, String>;
    /// Seals the copy, or drops it when `ok` is false.
    fn finish_copy(&self, id: ObjectId, ok: bool);
    /// A connection to the node serving at `addr` (cached).
    fn peer(&self, addr: SocketAddr) -> io::Result<QuicPeer>;
    /// The bulk connections to the node serving at `addr` (cached); `None` if this process
    /// has no join token (a node that took no bulk connection lately is refused by the
    /// peer's `take`, at once).
    fn bulk(&self, addr: SocketAddr) -> Option<Arc<BulkPeer>>;
}

/// Request and answer bytes over either transport.
trait ChunkIo {
    fn send(&mut self, bytes: &[u8]) -> io::Result<()>;
    fn recv(&mut self, buf: &mut [u8]) -> io::Result<()>;
}

impl ChunkIo for RawStream {
    fn send(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.write_all(bytes)
    }
    fn recv(&mut self, buf: &mut [u8]) -> io::Result<()> {
        self.read_exact(buf)
    }
}

impl ChunkIo for BulkStream {
    fn send(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.write_all(bytes).and_then(|()| self.flush())
    }
    fn recv(&mut self, buf: &mut [u8]) -> io::Result<()> {
        self.read_exact(buf)
    }
}

fn encode_request(id: ObjectId, offset: u64, len: u64) -> [u8; 36] {
    let mut b = [0u8; 36];
    b[..16].copy_from_slice(&id.task.0);
    b[16..20].copy_from_slice(&id.index.to_le_bytes());
    b[20..28].copy_from_slice(&offset.to_le_bytes());
    b[28..36].copy_from_slice(&len.to_le_bytes());
    b
}

fn decode_request(b: &[u8; 36]) -> (ObjectId, u64, u64) {
    let mut task = [0u8; 16];
    task.copy_from_slice(&b[..16]);
    let index = u32::from_le_bytes(b[16..20].try_into().expect("4 bytes"));
    let offset = u64::from_le_bytes(b[20..28].try_into().expect("8 bytes"));
    let len = u64::from_le_bytes(b[28..36].try_into().expect("8 bytes"));
    (ObjectId { task: TaskId(task), index }, offset, len)
}

fn failure(reason: &str) -> Vec<u8> {
    let r = &reason.as_bytes()[..reason.len().min(MAX_REASON)];
    let mut b = vec![FAILED];
    b.extend_from_slice(&(r.len() as u16).to_le_bytes());
    b.extend_from_slice(r);
    b
}

fn answer_head(size: u64) -> [u8; 9] {
    let mut b = [OK; 9];
    b[1..].copy_from_slice(&size.to_le_bytes());
    b
}

/// Pins the asked range of `id`: the object's size and the range (at most [`CHUNK`]
/// bytes, cut at the object's end). The pin is the caller's to release; on failure
/// nothing stays pinned.
fn pin_range(host: &dyn TransferHost, id: ObjectId, offset: u64, len: u64) -> Result<(u64, &[u8]), String> {
    if len > CHUNK {
        return Err(format!("chunk of {len} bytes asked; at most {CHUNK}"));
    }
    let (at, size) = host.pin(id)?;
    if offset > size {
        host.release(id, 0);
        return Err(format!("offset {offset} is past the object's {size} bytes"));
    }
    let n = len.min(size - offset);
    // SAFETY: the object is sealed and pinned until the caller releases it; the range is
    // inside it.
    match unsafe { host.pool().slice(at + offset, n) } {
        Ok(bytes) => Ok((size, bytes)),
        Err(e) => {
            host.release(id, 0);
            Err(e.to_string())
        }
    }
}

/// A pinned range of the pool handed to QUIC without a copy: the pin is released when
/// the stream drops the last reference (once the peer acknowledged the bytes, or the
/// connection died).
struct PinnedRange {
    ptr: *const u8,
    len: usize,
    host: Arc<dyn TransferHost>,
    id: ObjectId,
}

// SAFETY: the range is sealed pool memory that nobody writes while pinned; the pointer
// is only read.
unsafe impl Send for PinnedRange {}

impl AsRef<[u8]> for PinnedRange {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: in bounds of the pool (checked when made) and pinned until drop.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl Drop for PinnedRange {
    fn drop(&mut self) {
        self.host.release(self.id, self.len as u64);
    }
}

/// Serves one chunk request on a QUIC `stream` (the source side of a pull).
pub(crate) fn serve(host: Arc<dyn TransferHost>, mut stream: RawStream) {
    let mut req = [0u8; 36];
    if stream.read_exact(&mut req).is_err() {
        return;
    }
    let (id, offset, len) = decode_request(&req);
    let (size, bytes) = match pin_range(&*host, id, offset, len) {
        Ok(r) => r,
        Err(e) => {
            let _ = stream.write_all(&failure(&e)).and_then(|()| stream.finish());
            return;
        }
    };
    // The pin moves into `PinnedRange`, released when QUIC lets go of the bytes.
    let range = PinnedRange { ptr: bytes.as_ptr(), len: bytes.len(), host: host.clone(), id };
    let _ = stream
        .write_all(&answer_head(size))
        .and_then(|()| stream.write_owned(Bytes::from_owner(range)))
        .and_then(|()| stream.finish());
}

/// Serves chunk requests on a bulk connection, one after another, until the puller
/// closes it (or it fails or idles out, or the node is gone: `host` gives the node for
/// one request at a time, so an idle connection does not keep a stopped node alive).
pub(crate) fn serve_bulk(host: impl Fn() -> Option<Arc<dyn TransferHost>>, mut conn: BulkStream) {
    let mut req = [0u8; 36];
    while let Ok(true) = conn.read_request(&mut req) {
        let Some(host) = host() else { return };
        let (id, offset, len) = decode_request(&req);
        let sent = match pin_range(&*host, id, offset, len) {
            Err(e) => conn.send(&failure(&e)),
            Ok((size, bytes)) => {
                // TLS seals the pinned range into its records as it writes: once written,
                // the pool's bytes are no longer needed.
                let n = bytes.len() as u64;
                let r = conn.write_all(&answer_head(size)).and_then(|()| conn.send(bytes));
                host.release(id, if r.is_ok() { n } else { 0 });
                r
            }
        };
        if let Err(e) = sent {
            tracing::debug!(peer = %conn.peer(), "bulk connection ended: {e}");
            return;
        }
    }
}

/// Reads a chunk answer's header: the object's size, or the source's reason.
fn read_header(stream: &mut dyn ChunkIo) -> Result<u64, String> {
    let mut status = [0u8; 1];
    stream.recv(&mut status).map_err(|e| format!("reading the answer: {e}"))?;
    match status[0] {
        OK => {
            let mut size = [0u8; 8];
            stream.recv(&mut size).map_err(|e| format!("reading the size: {e}"))?;
            Ok(u64::from_le_bytes(size))
        }
        FAILED => {
            let mut n = [0u8; 2];
            stream.recv(&mut n).map_err(|e| format!("reading the reason: {e}"))?;
            let n = (u16::from_le_bytes(n) as usize).min(MAX_REASON);
            let mut r = vec![0u8; n];
            stream.recv(&mut r).map_err(|e| format!("reading the reason: {e}"))?;
            Err(String::from_utf8_lossy(&r).into_owned())
        }
        other => Err(format!("unknown answer status {other}")),
    }
}

/// Pulls `id` from the node serving at `addr` into a secondary copy in this node's pool.
/// Returns the bytes moved.
pub(crate) fn pull(host: &dyn TransferHost, id: ObjectId, addr: SocketAddr) -> Result<u64, String> {
    let peer = host.peer(addr).map_err(|e| format!("connecting to {addr}: {e}"))?;
    let mut first = peer.open_stream().map_err(|e| e.to_string())?;
    first.write_all(&encode_request(id, 0, FIRST)).map_err(|e| e.to_string())?;
    let size = read_header(&mut first)?;
    let Some(local) = host.create_copy(id, size)? else {
        return Ok(0);
    };
    let over = [AtomicU64::new(0), AtomicU64::new(0)];
    // Dropped as a failure unless the fill succeeds (a panic included).
    let copy = Unsealed { host, id };
    let result = fill(host, &peer, addr, &mut first, id, size, local, &over);
    std::mem::forget(copy);
    host.finish_copy(id, result.is_ok());
    let [bulk, quic] = over.map(AtomicU64::into_inner);
    tracing::debug!(object = %id, size, "pull ended: {bulk} chunks over the bulk plane, {quic} over QUIC streams; QUIC {}", peer.path_stats());
    result.map(|()| size)
}

/// A secondary copy being filled: dropped (by a panic) before the pull ends, it is
/// dropped from the pool rather than left unsealed.
struct Unsealed<'a> {
    host: &'a dyn TransferHost,
    id: ObjectId,
}

impl Drop for Unsealed<'_> {
    fn drop(&mut self) {
        self.host.finish_copy(self.id, false);
    }
}

/// Reads the first [`FIRST`] bytes from `first` and the rest in chunks, on up to
/// [`STREAMS`] bulk connections (or QUIC streams), each straight into the pool
/// allocation at `local`. Counts the chunks that went over each in `over` (bulk, QUIC).
#[allow(clippy::too_many_arguments)]
fn fill(
    host: &dyn TransferHost,
    peer: &QuicPeer,
    addr: SocketAddr,
    first: &mut RawStream,
    id: ObjectId,
    size: u64,
    local: u64,
    over: &[AtomicU64; 2],
) -> Result<(), String> {
    let pool = host.pool();
    let into = |offset: u64, n: u64, s: &mut dyn ChunkIo| -> Result<(), String> {
        // SAFETY: this node created the allocation at `local` for this pull and seals it
        // only after every chunk is read; chunks are disjoint ranges inside it.
        let dst = unsafe { pool.slice_mut(local + offset, n) }.map_err(|e| e.to_string())?;
        s.recv(dst).map_err(|e| format!("reading bytes {offset}..{}: {e}", offset + n))
    };
    into(0, size.min(FIRST), first)?;
    if size <= FIRST {
        return Ok(());
    }
    let next = AtomicU64::new(FIRST);
    // Asks for the chunk at `offset` on `s` and reads it; `Err(_, true)` if nothing of
    // the answer arrived (a reused connection the source had closed may be retried).
    let chunk = |offset: u64, s: &mut dyn ChunkIo| -> Result<(), (String, bool)> {
        let n = CHUNK.min(size - offset);
        s.send(&encode_request(id, offset, n)).map_err(|e| (e.to_string(), true))?;
        let got = read_header(s).map_err(|e| (e, true))?;
        if got != size {
            return Err((format!("the source's copy changed size ({size} then {got} bytes)"), false));
        }
        into(offset, n, s).map_err(|e| (e, false))
    };
    let over_quic = |offset: u64| -> Result<(), String> {
        let mut s = peer.open_stream().map_err(|e| e.to_string())?;
        chunk(offset, &mut s).map_err(|(e, _)| e)
    };
    let bulk = host.bulk(addr);
    let work = || -> Result<(), String> {
        // Each worker holds one bulk connection for the whole pull; without one, every
        // chunk takes a QUIC stream of its own.
        let mut conn: Option<(BulkStream, bool)> = bulk.as_ref().and_then(|b| b.take(BULK_CONNECT).ok());
        loop {
            let offset = next.fetch_add(CHUNK, Ordering::Relaxed);
            if offset >= size {
                if let (Some(b), Some((c, _))) = (&bulk, conn) {
                    b.give_back(c);
                }
                return Ok(());
            }
            let Some((c, reused)) = conn.as_mut() else {
                over_quic(offset)?;
                over[1].fetch_add(1, Ordering::Relaxed);
                continue;
            };
            match chunk(offset, c) {
                Ok(()) => {
                    *reused = false;
                    over[0].fetch_add(1, Ordering::Relaxed);
                }
                Err((e, retry)) if retry && *reused => {
                    // Taken idle from the pool and closed by the source meanwhile: once
                    // more on a new connection, or over QUIC if none is to be had.
                    tracing::debug!(%addr, "a kept bulk connection failed ({e}); trying a new one");
                    let b = bulk.as_ref().expect("a connection came from the bulk peer");
                    match b.connect(BULK_CONNECT) {
                        Ok(mut fresh) => {
                            chunk(offset, &mut fresh).map_err(|(e, _)| e)?;
                            over[0].fetch_add(1, Ordering::Relaxed);
                            conn = Some((fresh, false));
                        }
                        Err(_) => {
                            conn = None;
                            over_quic(offset)?;
                            over[1].fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
                Err((e, _)) => return Err(e),
            }
        }
    };
    // One worker's failure ends the others' work too: no chunk is left to take.
    let worker = || {
        work().inspect_err(|_| {
            next.fetch_max(size, Ordering::Relaxed);
        })
    };
    let streams = STREAMS.min((size - FIRST).div_ceil(CHUNK) as usize).max(1);
    std::thread::scope(|s| {
        // A thread the OS refuses only means fewer connections.
        let handles: Vec<_> =
            (1..streams).filter_map(|_| std::thread::Builder::new().spawn_scoped(s, worker).ok()).collect();
        let mine = worker();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("a transfer thread panicked".into())))
            .fold(mine, Result::and)
    })
}
