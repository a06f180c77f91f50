//! Moves object bytes between nodes over QUIC: serves pulls of this node's objects, and
//! pulls other nodes' objects into this node's pool. Which pulls run is decided by
//! [`crate::pulls`]; this module only moves bytes.
//!
//! An object travels in chunks of [`CHUNK`] bytes, each on a stream of its own, up to
//! [`STREAMS`] at once, read straight into the allocation in this node's pool (no
//! intermediate buffer). A chunk request is 36 bytes: the object ID (20), the offset (8)
//! and the length (8). The answer is a status byte and the object's size (8), then the
//! chunk's bytes; or, on failure, a status byte, a 2-byte length and a reason of at most
//! [`MAX_REASON`] bytes.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;

use ares_common::{ObjectId, TaskId};
use ares_net::{QuicPeer, RawStream};
use ares_object_store::Pool;

/// Bytes per chunk request.
pub(crate) const CHUNK: u64 = 8 << 20;
/// Chunks in flight per pull.
pub(crate) const STREAMS: usize = 4;
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

fn fail(stream: &mut RawStream, reason: &str) {
    let r = &reason.as_bytes()[..reason.len().min(MAX_REASON)];
    let mut b = vec![FAILED];
    b.extend_from_slice(&(r.len() as u16).to_le_bytes());
    b.extend_from_slice(r);
    let _ = stream.write_all(&b);
    let _ = stream.finish();
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

/// Serves one chunk request on `stream` (the source side of a pull).
pub(crate) fn serve(host: Arc<dyn TransferHost>, mut stream: RawStream) {
    let mut req = [0u8; 36];
    if stream.read_exact(&mut req).is_err() {
        return;
    }
    let (id, offset, len) = decode_request(&req);
    if len > CHUNK {
        return fail(&mut stream, &format!("chunk of {len} bytes asked; at most {CHUNK}"));
    }
    let (at, size) = match host.pin(id) {
        Ok(p) => p,
        Err(e) => return fail(&mut stream, &e),
    };
    if offset > size {
        host.release(id, 0);
        return fail(&mut stream, &format!("offset {offset} is past the object's {size} bytes"));
    }
    let n = len.min(size - offset);
    // SAFETY: the object is sealed and pinned (the pin moves into `PinnedRange` and is
    // released when QUIC lets go of the bytes); the range is inside it.
    let bytes = match unsafe { host.pool().slice(at + offset, n) } {
        Ok(b) => b,
        Err(e) => {
            host.release(id, 0);
            return fail(&mut stream, &e.to_string());
        }
    };
    let range = PinnedRange { ptr: bytes.as_ptr(), len: bytes.len(), host, id };
    let mut head = vec![OK];
    head.extend_from_slice(&size.to_le_bytes());
    let _ = stream
        .write_all(&head)
        .and_then(|()| stream.write_owned(Bytes::from_owner(range)))
        .and_then(|()| stream.finish());
}

/// Reads a chunk answer's header: the object's size, or the source's reason.
fn read_header(stream: &mut RawStream) -> Result<u64, String> {
    let mut status = [0u8; 1];
    stream.read_exact(&mut status).map_err(|e| format!("reading the answer: {e}"))?;
    match status[0] {
        OK => {
            let mut size = [0u8; 8];
            stream.read_exact(&mut size).map_err(|e| format!("reading the size: {e}"))?;
            Ok(u64::from_le_bytes(size))
        }
        FAILED => {
            let mut n = [0u8; 2];
            stream.read_exact(&mut n).map_err(|e| format!("reading the reason: {e}"))?;
            let n = (u16::from_le_bytes(n) as usize).min(MAX_REASON);
            let mut r = vec![0u8; n];
            stream.read_exact(&mut r).map_err(|e| format!("reading the reason: {e}"))?;
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
    first.write_all(&encode_request(id, 0, CHUNK)).map_err(|e| e.to_string())?;
    let size = read_header(&mut first)?;
    let Some(local) = host.create_copy(id, size)? else {
        return Ok(0);
    };
    let result = fill(host, &peer, &mut first, id, size, local);
    host.finish_copy(id, result.is_ok());
    tracing::debug!(object = %id, "pull ended: {}", peer.path_stats());
    result.map(|()| size)
}

/// Reads the first chunk from `first` and the rest on up to [`STREAMS`] streams, each
/// straight into the pool allocation at `local`.
fn fill(
    host: &dyn TransferHost,
    peer: &QuicPeer,
    first: &mut RawStream,
    id: ObjectId,
    size: u64,
    local: u64,
) -> Result<(), String> {
    let pool = host.pool();
    let into = |offset: u64, n: u64, s: &mut RawStream| -> Result<(), String> {
        // SAFETY: this node created the allocation at `local` for this pull and seals it
        // only after every chunk is read; chunks are disjoint ranges inside it.
        let dst = unsafe { pool.slice_mut(local + offset, n) }.map_err(|e| e.to_string())?;
        s.read_exact(dst).map_err(|e| format!("reading bytes {offset}..{}: {e}", offset + n))
    };
    into(0, size.min(CHUNK), first)?;
    let next = AtomicU64::new(CHUNK);
    let chunk = |offset: u64| -> Result<(), String> {
        let n = CHUNK.min(size - offset);
        let mut s = peer.open_stream().map_err(|e| e.to_string())?;
        s.write_all(&encode_request(id, offset, n)).map_err(|e| e.to_string())?;
        let got = read_header(&mut s)?;
        if got != size {
            return Err(format!("the source's copy changed size ({size} then {got} bytes)"));
        }
        into(offset, n, &mut s)
    };
    let worker = || -> Result<(), String> {
        loop {
            let offset = next.fetch_add(CHUNK, Ordering::Relaxed);
            if offset >= size {
                return Ok(());
            }
            chunk(offset)?;
        }
    };
    let streams = STREAMS.min(size.div_ceil(CHUNK) as usize).max(1);
    std::thread::scope(|s| {
        // A thread the OS refuses only means fewer streams.
        let handles: Vec<_> =
            (1..streams).filter_map(|_| std::thread::Builder::new().spawn_scoped(s, worker).ok()).collect();
        let mine = worker();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("a transfer thread panicked".into())))
            .fold(mine, Result::and)
    })
}
