//! Length-delimited frames: a little-endian `u32` length, then an rkyv payload.
//!
//! The reader bounds the length before allocating, reads the payload into an aligned
//! buffer and validates it with bytecheck. Any violation is a [`FrameError`], after which
//! the caller closes the connection; nothing here panics on peer input.

use std::io::{self, Read, Write};

use crate::codec::{Bytes, Value};
use crate::error::FrameError;

/// Default bound on one frame. Large values travel through shared memory, never inline,
/// so control frames stay far below this.
pub const DEFAULT_MAX_FRAME: usize = 64 << 20;

/// Largest step by which a frame buffer grows before the bytes to fill it have arrived.
pub const READ_STEP: usize = 256 << 10;

/// The first step: a frame buffer starts this small and at most doubles with each step,
/// so a peer that announces a large frame and stalls costs this, not a whole step.
pub const FIRST_READ_STEP: usize = 16 << 10;

/// Bound on the first frame of a connection whose first message must be a small hello
/// (a registration): a peer that has not said who it is gets no more than this.
pub const MAX_HELLO_FRAME: usize = 64 << 10;

/// How much a frame buffer holding `have` of `len` bytes grows next: at least
/// [`FIRST_READ_STEP`], at most what it holds already and at most [`READ_STEP`].
pub fn next_step(have: usize, len: usize) -> usize {
    (len - have).min(have.clamp(FIRST_READ_STEP, READ_STEP))
}

/// Encodes `msg` into a new aligned buffer (payload only, no length prefix).
pub fn encode<T: Value>(msg: &T) -> Bytes {
    msg.encode().expect("wire messages always serialize")
}

/// Writes one frame holding `payload`. The caller flushes.
pub fn write_frame<W: Write>(w: &mut W, payload: &[u8]) -> io::Result<()> {
    let len = u32::try_from(payload.len()).map_err(|_| io::Error::other("frame longer than u32::MAX"))?;
    w.write_all(&len.to_le_bytes())?;
    w.write_all(payload)
}

/// Encodes `msg` and writes it as one frame. The caller flushes.
pub fn write_msg<W: Write, T: Value>(w: &mut W, msg: &T) -> io::Result<()> {
    write_frame(w, &encode(msg))
}

/// Reads frames from a byte stream into an aligned buffer, bounding their size.
pub struct FrameReader<R: Read> {
    inner: Buffered<R>,
    buf: Bytes,
    max: usize,
    /// The bound of the first frame, until it is read.
    first_max: Option<usize>,
}

impl<R: Read> FrameReader<R> {
    /// A reader that rejects frames over `max` bytes.
    pub fn new(inner: R, max: usize) -> Self {
        FrameReader { inner: Buffered::new(inner), buf: Bytes::new(), max, first_max: None }
    }

    /// A reader that rejects a first frame over `first_max` bytes and later ones over
    /// `max` (see [`MAX_HELLO_FRAME`]).
    pub fn with_first_limit(inner: R, first_max: usize, max: usize) -> Self {
        FrameReader { first_max: Some(first_max.min(max)), ..Self::new(inner, max) }
    }

    /// Whether bytes of a further frame are already buffered (so the caller can delay
    /// flushing its replies until the batch is done).
    pub fn has_buffered(&self) -> bool {
        self.inner.has_buffered()
    }

    /// Reads the next frame's raw payload, bounded and aligned but not yet validated.
    pub fn read_payload(&mut self) -> Result<&[u8], FrameError> {
        let mut len = [0u8; 4];
        match self.inner.read_exact(&mut len[..1]) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Err(FrameError::Closed),
            Err(e) => return Err(e.into()),
        }
        self.inner.read_exact(&mut len[1..])?;
        let len = u32::from_le_bytes(len) as usize;
        let max = self.first_max.take().unwrap_or(self.max);
        if len > max {
            return Err(FrameError::TooLarge { len: len as u64, max: max as u64 });
        }
        // Grow only as bytes arrive: a peer that announces a large frame and sends
        // little costs one small step, not the announced size.
        self.buf.clear();
        while self.buf.len() < len {
            let start = self.buf.len();
            self.buf.resize(start + next_step(start, len), 0);
            self.inner.read_exact(&mut self.buf[start..])?;
        }
        Ok(&self.buf[..])
    }

    /// Reads, validates and decodes the next frame as a `T`.
    pub fn read<T: Value>(&mut self) -> Result<T, FrameError> {
        let payload = self.read_payload()?;
        T::decode_aligned(payload).map_err(|e| FrameError::Malformed { len: payload.len(), reason: e.to_string() })
    }

    /// The underlying stream.
    pub fn get_ref(&self) -> &R {
        &self.inner.inner
    }
}

/// One `read`, retried when a signal interrupts it.
fn read_retrying<R: Read>(r: &mut R, out: &mut [u8]) -> io::Result<usize> {
    loop {
        match r.read(out) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

/// Largest read buffer: pipelined small frames are read a batch per system call.
const MAX_READ_BUFFER: usize = 256 << 10;

/// A read buffer that grows only while the stream keeps it full: it starts at one page
/// and doubles when a read fills it, up to [`MAX_READ_BUFFER`]. (`BufReader` zero-fills
/// its whole capacity on the first read of any stream type outside std, which for a
/// node's 10 000 mostly idle connections would be 256 KiB each.)
struct Buffered<R> {
    inner: R,
    buf: Vec<u8>,
    pos: usize,
    filled: usize,
}

impl<R: Read> Buffered<R> {
    fn new(inner: R) -> Self {
        Buffered { inner, buf: Vec::new(), pos: 0, filled: 0 }
    }

    fn has_buffered(&self) -> bool {
        self.pos < self.filled
    }

    /// Fills `out` entirely: from the buffer, then straight from the stream when what is
    /// left is at least the buffer's size, else through the buffer.
    fn read_exact(&mut self, mut out: &mut [u8]) -> io::Result<()> {
        while !out.is_empty() {
            if self.has_buffered() {
                let n = out.len().min(self.filled - self.pos);
                out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
                self.pos += n;
                out = &mut out[n..];
                continue;
            }
            if out.len() >= self.buf.len().max(4096) {
                let n = read_retrying(&mut self.inner, out)?;
                if n == 0 {
                    return Err(io::ErrorKind::UnexpectedEof.into());
                }
                out = &mut out[n..];
                continue;
            }
            if self.buf.is_empty() {
                self.buf.resize(4096, 0);
            }
            let n = read_retrying(&mut self.inner, &mut self.buf)?;
            if n == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            (self.pos, self.filled) = (0, n);
            if n == self.buf.len() && self.buf.len() < MAX_READ_BUFFER {
                // A full read: the peer is sending fast; read more at once next time.
                let grown = (2 * self.buf.len()).min(MAX_READ_BUFFER);
                self.buf.resize(grown, 0);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::ToRaylet;

    #[test]
    fn an_announced_frame_costs_only_what_arrives() {
        // 60 MiB announced (under the bound), 4 bytes sent.
        let mut bytes = (60u32 << 20).to_le_bytes().to_vec();
        bytes.extend_from_slice(&[1, 2, 3, 4]);
        let mut r = FrameReader::new(io::Cursor::new(bytes.clone()), 64 << 20);
        assert!(matches!(r.read::<ToRaylet>(), Err(FrameError::Io(_))));
        assert!(r.buf.capacity() <= 2 * FIRST_READ_STEP, "{} bytes reserved", r.buf.capacity());
        // Before its hello, a peer may not even announce it.
        let mut r = FrameReader::with_first_limit(io::Cursor::new(bytes), MAX_HELLO_FRAME, 64 << 20);
        assert!(matches!(r.read::<ToRaylet>(), Err(FrameError::TooLarge { max, .. }) if max == MAX_HELLO_FRAME as u64));
        assert_eq!(r.buf.capacity(), 0);
        // Steps double from the first one up to READ_STEP.
        assert_eq!(next_step(0, 1 << 30), FIRST_READ_STEP);
        assert_eq!(next_step(FIRST_READ_STEP, 1 << 30), FIRST_READ_STEP);
        assert_eq!(next_step(100 << 10, 1 << 30), 100 << 10);
        assert_eq!(next_step(10 << 20, 1 << 30), READ_STEP);
        assert_eq!(next_step(10, 12), 2);
        // A real frame longer than a step still arrives whole.
        let big = vec![7u8; 3 * READ_STEP + 5];
        let mut framed = Vec::new();
        write_frame(&mut framed, &big).unwrap();
        let mut r = FrameReader::new(io::Cursor::new(framed), 64 << 20);
        assert_eq!(r.read_payload().unwrap(), &big[..]);
    }

    #[test]
    fn the_read_buffer_grows_only_while_reads_fill_it() {
        // One small frame: one page of buffer.
        let mut one = Vec::new();
        write_msg(&mut one, &ToRaylet::GetStats { request_id: 1 }).unwrap();
        let mut r = FrameReader::new(io::Cursor::new(one), 1024);
        assert!(r.read::<ToRaylet>().is_ok());
        assert_eq!(r.inner.buf.len(), 4096);
        // A stream of them: the buffer doubles up to its bound, and every frame arrives.
        let mut many = Vec::new();
        for i in 0..100_000 {
            write_msg(&mut many, &ToRaylet::GetStats { request_id: i }).unwrap();
        }
        let mut r = FrameReader::new(io::Cursor::new(many), 1024);
        for i in 0..100_000 {
            assert!(matches!(r.read::<ToRaylet>(), Ok(ToRaylet::GetStats { request_id }) if request_id == i));
        }
        assert_eq!(r.inner.buf.len(), MAX_READ_BUFFER);
        assert!(matches!(r.read::<ToRaylet>(), Err(FrameError::Closed)));
    }

    fn read_all(bytes: Vec<u8>, max: usize) -> Vec<Result<ToRaylet, String>> {
        let mut r = FrameReader::new(io::Cursor::new(bytes), max);
        let mut out = Vec::new();
        loop {
            match r.read::<ToRaylet>() {
                Err(FrameError::Closed) => return out,
                Err(e) => {
                    out.push(Err(e.to_string()));
                    return out;
                }
                Ok(m) => out.push(Ok(m)),
            }
        }
    }

    #[test]
    fn round_trip() {
        let mut bytes = Vec::new();
        write_msg(&mut bytes, &ToRaylet::GetStats { request_id: 9 }).unwrap();
        write_msg(&mut bytes, &ToRaylet::ReturnLease { lease_id: crate::LeaseId(3), worker_broken: false }).unwrap();
        let got = read_all(bytes, 1024);
        assert_eq!(got.len(), 2);
        assert!(matches!(got[0], Ok(ToRaylet::GetStats { request_id: 9 })));
    }

    #[test]
    fn malformed_and_oversized_frames_are_typed_errors() {
        let mut bytes = Vec::new();
        write_frame(&mut bytes, &[0xAB; 40]).unwrap();
        let got = read_all(bytes, 1024);
        assert!(matches!(&got[0], Err(e) if e.contains("malformed")), "{got:?}");

        let mut bytes = Vec::new();
        bytes.extend_from_slice(&(1u32 << 30).to_le_bytes());
        let got = read_all(bytes, 1024);
        assert!(matches!(&got[0], Err(e) if e.contains("exceeds the limit")), "{got:?}");

        // A truncated frame is an IO error, not a hang or a panic.
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&100u32.to_le_bytes());
        bytes.extend_from_slice(&[1, 2, 3]);
        let got = read_all(bytes, 1024);
        assert!(got[0].is_err());
    }
}
