//! Length-delimited frames: a little-endian `u32` payload length, a little-endian `u16`
//! message type (the variant of the wire enum, see [`Message`]), then an rkyv payload.
//!
//! The reader bounds the length by the message type before reading the payload (control
//! messages to [`CONTROL_FRAME`], messages that carry values or lists to the connection's
//! frame limit), reads it into an aligned buffer, validates it with bytecheck, and checks
//! that it holds the variant the header named. Any violation is a [`FrameError`], after
//! which the caller closes the connection; nothing here panics on peer input.

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

/// Bound on a control message: fixed-size fields, IDs, endpoints, short names (an
/// actor's is at most [`crate::wire::MAX_ACTOR_NAME`]), a resource table, a certificate.
pub const CONTROL_FRAME: usize = 64 << 10;

/// Bytes before a frame's payload: its length and its message type.
pub const HEADER: usize = 6;

/// How large one type of message may be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    /// At most [`CONTROL_FRAME`].
    Control,
    /// At most the connection's frame limit (values, lists, error reports).
    Bulk,
}

/// A wire enum sent in frames: each variant has a type number and a size bound.
pub trait Message: Value {
    /// The enum's name, for errors.
    const FAMILY: &'static str;
    /// This message's type number (its variant).
    fn kind(&self) -> u16;
    /// The name and bound of type `kind`; `None` if no variant has that number.
    fn describe(kind: u16) -> Option<(&'static str, Bound)>;
}

/// What a reader that does not know the message type at compile time (the QUIC reader
/// task) needs to bound a frame by its type.
#[derive(Clone, Copy)]
pub struct Kinds {
    family: &'static str,
    describe: fn(u16) -> Option<(&'static str, Bound)>,
}

impl Kinds {
    /// The kinds of `T`.
    pub fn of<T: Message>() -> Kinds {
        Kinds { family: T::FAMILY, describe: T::describe }
    }

    /// Checks a header: type `kind`, `len` payload bytes, on a connection whose bound is
    /// `max` now. Refuses an unknown type, or a length over the type's bound.
    pub fn check(&self, kind: u16, len: usize, max: usize) -> Result<(), FrameError> {
        let Some((name, bound)) = (self.describe)(kind) else {
            return Err(FrameError::Malformed { len, reason: format!("{} has no message type {kind}", self.family) });
        };
        let limit = match bound {
            Bound::Control => CONTROL_FRAME.min(max),
            Bound::Bulk => max,
        };
        if len > limit {
            return Err(FrameError::TooLarge {
                what: format!("{}::{name}", self.family),
                len: len as u64,
                max: limit as u64,
            });
        }
        Ok(())
    }
}

/// How much a frame buffer holding `have` of `len` bytes grows next: at least
/// [`FIRST_READ_STEP`], at most what it holds already and at most [`READ_STEP`].
pub fn next_step(have: usize, len: usize) -> usize {
    (len - have).min(have.clamp(FIRST_READ_STEP, READ_STEP))
}

/// Encodes `msg` into a new aligned buffer (payload only, no header).
pub fn encode<T: Value>(msg: &T) -> Bytes {
    msg.encode().expect("wire messages always serialize")
}

/// Writes one frame holding `payload`, a message of type `kind`. The caller flushes.
pub fn write_frame<W: Write>(w: &mut W, kind: u16, payload: &[u8]) -> io::Result<()> {
    let len = u32::try_from(payload.len()).map_err(|_| io::Error::other("frame longer than u32::MAX"))?;
    let mut header = [0u8; HEADER];
    header[..4].copy_from_slice(&len.to_le_bytes());
    header[4..].copy_from_slice(&kind.to_le_bytes());
    w.write_all(&header)?;
    w.write_all(payload)
}

/// Encodes `msg` and writes it as one frame. The caller flushes.
pub fn write_msg<W: Write, T: Message>(w: &mut W, msg: &T) -> io::Result<()> {
    write_encoded(w, msg, &encode(msg))
}

/// Writes `payload`, the encoding of `msg`, as one frame. A control message over
/// [`CONTROL_FRAME`] is refused here (its receiver would close the connection): the
/// sender's own call fails instead, naming the message.
pub fn write_encoded<W: Write, T: Message>(w: &mut W, msg: &T, payload: &[u8]) -> io::Result<()> {
    if let Some((name, Bound::Control)) = T::describe(msg.kind())
        && payload.len() > CONTROL_FRAME
    {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "a {}::{name} message of {} bytes is over its limit of {CONTROL_FRAME} bytes",
                T::FAMILY,
                payload.len()
            ),
        ));
    }
    write_frame(w, msg.kind(), payload)
}

/// A frame header's payload length and message type.
pub fn parse_header(header: &[u8; HEADER]) -> (usize, u16) {
    let len = u32::from_le_bytes([header[0], header[1], header[2], header[3]]) as usize;
    (len, u16::from_le_bytes([header[4], header[5]]))
}

/// Decodes a frame's payload as a `T`, checking it holds the type its header named.
pub fn decode<T: Message>(kind: u16, payload: &[u8]) -> Result<T, FrameError> {
    let msg =
        T::decode_aligned(payload).map_err(|e| FrameError::Malformed { len: payload.len(), reason: e.to_string() })?;
    if msg.kind() != kind {
        let reason = format!("the header says message type {kind} but the payload holds type {}", msg.kind());
        return Err(FrameError::Malformed { len: payload.len(), reason });
    }
    Ok(msg)
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

    /// Reads the next frame of one of `kinds`: its type and raw payload, bounded by the
    /// type and aligned, but not yet validated.
    pub fn read_payload(&mut self, kinds: Kinds) -> Result<(u16, &[u8]), FrameError> {
        let mut header = [0u8; HEADER];
        match self.inner.read_exact(&mut header[..1]) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Err(FrameError::Closed),
            Err(e) => return Err(e.into()),
        }
        self.inner.read_exact(&mut header[1..])?;
        let (len, kind) = parse_header(&header);
        let max = self.first_max.take().unwrap_or(self.max);
        kinds.check(kind, len, max)?;
        // Grow only as bytes arrive: a peer that announces a large frame and sends
        // little costs one small step, not the announced size.
        self.buf.clear();
        while self.buf.len() < len {
            let start = self.buf.len();
            self.buf.resize(start + next_step(start, len), 0);
            self.inner.read_exact(&mut self.buf[start..])?;
        }
        Ok((kind, &self.buf[..]))
    }

    /// Reads, validates and decodes the next frame as a `T`.
    pub fn read<T: Message>(&mut self) -> Result<T, FrameError> {
        let (kind, payload) = self.read_payload(Kinds::of::<T>())?;
        decode(kind, payload)
    }

    /// The underlying stream.
    pub fn get_ref(&self) -> &R {
        &self.inner.inner
    }
}

/// One `read` of at least a byte, retried when a signal interrupts it; the stream's end
/// is `UnexpectedEof` (the caller wants more).
fn read_some<R: Read>(r: &mut R, out: &mut [u8]) -> io::Result<usize> {
    loop {
        match r.read(out) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

/// A read buffer's first size: one page.
const FIRST_READ_BUFFER: usize = 4096;

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
            if out.len() >= self.buf.len().max(FIRST_READ_BUFFER) {
                let n = read_some(&mut self.inner, out)?;
                out = &mut out[n..];
                continue;
            }
            if self.buf.is_empty() {
                self.buf.resize(FIRST_READ_BUFFER, 0);
            }
            let n = read_some(&mut self.inner, &mut self.buf)?;
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
    use crate::RequestId;
    use crate::wire::ToRaylet;

    /// A header announcing `len` bytes of message type `kind`.
    fn header(len: u32, kind: u16) -> Vec<u8> {
        let mut h = len.to_le_bytes().to_vec();
        h.extend_from_slice(&kind.to_le_bytes());
        h
    }

    fn kind_of(name: &str) -> u16 {
        (0..u16::MAX).find(|k| ToRaylet::describe(*k).is_some_and(|(n, _)| n == name)).expect("a ToRaylet variant")
    }

    #[test]
    fn an_announced_frame_costs_only_what_arrives() {
        // 60 MiB of a bulk message type announced (under the bound), 4 bytes sent.
        let mut bytes = header(60 << 20, kind_of("DeleteObjects"));
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
        write_frame(&mut framed, 3, &big).unwrap();
        let mut r = FrameReader::new(io::Cursor::new(framed), 64 << 20);
        assert_eq!(r.read_payload(Kinds::of::<ToRaylet>()).unwrap(), (3, &big[..]));
    }

    #[test]
    fn each_message_type_has_its_bound_checked_before_reading() {
        // A control message may not announce more than CONTROL_FRAME, even under the
        // connection's limit; a bulk one may, up to that limit.
        let pin = kind_of("PinObject");
        assert_eq!(ToRaylet::describe(pin), Some(("PinObject", Bound::Control)));
        let mut r = FrameReader::new(io::Cursor::new(header(CONTROL_FRAME as u32 + 1, pin)), 64 << 20);
        match r.read::<ToRaylet>() {
            Err(FrameError::TooLarge { what, max, .. }) => {
                assert_eq!((what.as_str(), max), ("ToRaylet::PinObject", CONTROL_FRAME as u64));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(r.buf.capacity(), 0, "refused before reading");
        let mut r = FrameReader::new(io::Cursor::new(header(1 << 20, kind_of("DeleteObjects"))), 64 << 20);
        assert!(matches!(r.read::<ToRaylet>(), Err(FrameError::Io(_))), "a bulk type may be that large");
        // An unknown type is refused by name of the family.
        let mut r = FrameReader::new(io::Cursor::new(header(8, 999)), 64 << 20);
        assert!(
            matches!(r.read::<ToRaylet>(), Err(FrameError::Malformed { reason, .. }) if reason.contains("ToRaylet has no message type 999"))
        );
        // A sender cannot send a control message over its bound.
        let huge = ToRaylet::LookupActor {
            request_id: RequestId(1),
            by: crate::wire::ActorKey::Name("n".repeat(CONTROL_FRAME)),
        };
        let e = write_msg(&mut Vec::new(), &huge).unwrap_err();
        assert!(e.to_string().contains("ToRaylet::LookupActor message of"), "{e}");
        // A payload of another type than its header says is malformed.
        let mut bytes = Vec::new();
        write_frame(&mut bytes, pin, &encode(&ToRaylet::GetStats { request_id: RequestId(1) })).unwrap();
        let mut r = FrameReader::new(io::Cursor::new(bytes), 64 << 20);
        assert!(
            matches!(r.read::<ToRaylet>(), Err(FrameError::Malformed { reason, .. }) if reason.contains("header says"))
        );
        // Every type of every family round-trips its own number.
        use crate::wire::{FromHead, FromRaylet, ToHead};
        for (family, n) in [
            (ToRaylet::FAMILY, (0..).take_while(|k| ToRaylet::describe(*k).is_some()).count()),
            (FromRaylet::FAMILY, (0..).take_while(|k| FromRaylet::describe(*k).is_some()).count()),
            (ToHead::FAMILY, (0..).take_while(|k| ToHead::describe(*k).is_some()).count()),
            (FromHead::FAMILY, (0..).take_while(|k| FromHead::describe(*k).is_some()).count()),
        ] {
            assert!(n > 5, "{family} lists its types");
        }
        assert_eq!(ToRaylet::GetStats { request_id: RequestId(0) }.kind(), kind_of("GetStats"));
        assert_eq!(ToRaylet::TaskUnblocked.kind(), kind_of("TaskUnblocked"));
    }

    #[test]
    fn the_read_buffer_grows_only_while_reads_fill_it() {
        // One small frame: one page of buffer.
        let mut one = Vec::new();
        write_msg(&mut one, &ToRaylet::GetStats { request_id: RequestId(1) }).unwrap();
        let mut r = FrameReader::new(io::Cursor::new(one), 1024);
        assert!(r.read::<ToRaylet>().is_ok());
        assert_eq!(r.inner.buf.len(), FIRST_READ_BUFFER);
        // A stream of them: the buffer doubles up to its bound, and every frame arrives.
        let mut many = Vec::new();
        for i in 0..100_000 {
            write_msg(&mut many, &ToRaylet::GetStats { request_id: RequestId(i) }).unwrap();
        }
        let mut r = FrameReader::new(io::Cursor::new(many), 1024);
        for i in 0..100_000 {
            assert!(
                matches!(r.read::<ToRaylet>(), Ok(ToRaylet::GetStats { request_id }) if request_id == RequestId(i))
            );
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
        write_msg(&mut bytes, &ToRaylet::GetStats { request_id: RequestId(9) }).unwrap();
        write_msg(&mut bytes, &ToRaylet::ReturnLease { lease_id: crate::LeaseId(3), worker_broken: false }).unwrap();
        let got = read_all(bytes, 1024);
        assert_eq!(got.len(), 2);
        assert!(matches!(got[0], Ok(ToRaylet::GetStats { request_id: RequestId(9) })));
    }

    #[test]
    fn malformed_and_oversized_frames_are_typed_errors() {
        let mut bytes = Vec::new();
        write_frame(&mut bytes, 0, &[0xAB; 40]).unwrap();
        let got = read_all(bytes, 1024);
        assert!(matches!(&got[0], Err(e) if e.contains("malformed")), "{got:?}");

        let bytes = header(1 << 30, kind_of("DeleteObjects"));
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
