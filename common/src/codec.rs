//! rkyv encoding shared by wire messages and user values.
//!
//! Every received buffer is validated with bytecheck before it is read, and is first
//! copied into an aligned buffer if it is not already aligned. Values can be serialized
//! into a counting sink (to learn their size), straight into a caller's slice (such as a
//! shared-memory allocation, so a large `put` is written exactly once), or into a vector.

use rkyv::api::high::{HighSerializer, HighValidator};
use rkyv::bytecheck::CheckBytes;
use rkyv::de::Pool;
use rkyv::rancor::{self, Strategy};
use rkyv::ser::allocator::ArenaHandle;
use rkyv::ser::{Positional, Writer};
use rkyv::util::AlignedVec;
use rkyv::{Archive, Deserialize, Serialize};

/// Alignment of every buffer handed to rkyv, in bytes.
pub const ALIGN: usize = 16;

/// An aligned byte buffer.
pub type Bytes = AlignedVec<ALIGN>;

/// The error type of encoding and decoding.
pub type CodecError = rancor::Error;

/// Where serialized bytes go: nowhere (only counted), a fixed slice, or a growable buffer.
pub enum Sink<'b> {
    /// Counts bytes without storing them.
    Count(usize),
    /// Writes into a slice that must be large enough (as measured by `Count`).
    Slice {
        /// Destination.
        buf: &'b mut [u8],
        /// Bytes written so far.
        pos: usize,
    },
    /// Appends to an aligned vector.
    Vec(Bytes),
}

impl Positional for Sink<'_> {
    fn pos(&self) -> usize {
        match self {
            Sink::Count(n) => *n,
            Sink::Slice { pos, .. } => *pos,
            Sink::Vec(v) => v.len(),
        }
    }
}

impl Writer<CodecError> for Sink<'_> {
    fn write(&mut self, bytes: &[u8]) -> Result<(), CodecError> {
        match self {
            Sink::Count(n) => *n += bytes.len(),
            Sink::Slice { buf, pos } => {
                let end = *pos + bytes.len();
                let Some(dst) = buf.get_mut(*pos..end) else {
                    return Err(rancor::Source::new(SliceOverflow { need: end, have: buf.len() }));
                };
                copy_large(dst, bytes);
                *pos = end;
            }
            Sink::Vec(v) => v.extend_from_slice(bytes),
        }
        Ok(())
    }
}

/// Copies of at least this many bytes are split over threads.
const PARALLEL_COPY_MIN: usize = 8 << 20;

/// Copies `src` into `dst` (equal lengths). A large copy (a big `put` into the pool) is
/// split over up to 4 threads: one core cannot saturate memory bandwidth on the VMs we
/// run on (2 threads copy ~1.8× faster than 1 here), and Ray's plasma client does the
/// same with its memcopy threads.
fn copy_large(dst: &mut [u8], src: &[u8]) {
    // Asked once: the answer reads cgroup files.
    static THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let threads = *THREADS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()).min(4));
    if src.len() < PARALLEL_COPY_MIN || threads < 2 {
        dst.copy_from_slice(src);
        return;
    }
    let chunk = src.len().div_ceil(threads);
    let mut failed = Vec::new();
    std::thread::scope(|s| {
        let mut parts = dst.chunks_mut(chunk).zip(src.chunks(chunk)).enumerate();
        let first = parts.next();
        for (i, (d, c)) in parts {
            if std::thread::Builder::new().spawn_scoped(s, || d.copy_from_slice(c)).is_err() {
                failed.push(i);
            }
        }
        if let Some((_, (d, c))) = first {
            d.copy_from_slice(c);
        }
    });
    // A thread the OS refused: copy its part here.
    for i in failed {
        let r = i * chunk..((i + 1) * chunk).min(src.len());
        dst[r.clone()].copy_from_slice(&src[r]);
    }
}

#[derive(Debug, thiserror::Error)]
#[error("serialized value needs {need} bytes but the destination holds {have}")]
struct SliceOverflow {
    need: usize,
    have: usize,
}

/// A type that can be stored as an Ares object or sent in a message: anything rkyv can
/// serialize, validate and deserialize. Implemented for all such types automatically.
pub trait Value: Archive + Sized + 'static {
    /// Serializes `self` into `sink`.
    fn serialize_into<'b>(&self, sink: Sink<'b>) -> Result<Sink<'b>, CodecError>;

    /// Validates `bytes` (which must be [`ALIGN`]-aligned) and returns the archived root.
    fn access(bytes: &[u8]) -> Result<&Self::Archived, CodecError>;

    /// Validates and deserializes `bytes` (which must be [`ALIGN`]-aligned).
    fn decode_aligned(bytes: &[u8]) -> Result<Self, CodecError>;

    /// The exact serialized size of `self`.
    fn encoded_len(&self) -> Result<usize, CodecError> {
        Ok(self.serialize_into(Sink::Count(0))?.pos())
    }

    /// Serializes `self` into a new aligned buffer.
    fn encode(&self) -> Result<Bytes, CodecError> {
        match self.serialize_into(Sink::Vec(Bytes::new()))? {
            Sink::Vec(v) => Ok(v),
            _ => unreachable!("serialize_into returns the sink it was given"),
        }
    }

    /// Serializes `self` into `buf`, which must be exactly [`Value::encoded_len`] long
    /// or longer; returns the number of bytes written.
    fn encode_into_slice(&self, buf: &mut [u8]) -> Result<usize, CodecError> {
        Ok(self.serialize_into(Sink::Slice { buf, pos: 0 })?.pos())
    }

    /// Validates and deserializes `bytes`, copying them into an aligned buffer first if
    /// they are not aligned.
    fn decode(bytes: &[u8]) -> Result<Self, CodecError> {
        if (bytes.as_ptr() as usize) % ALIGN == 0 {
            Self::decode_aligned(bytes)
        } else {
            let mut copy = Bytes::with_capacity(bytes.len());
            copy.extend_from_slice(bytes);
            Self::decode_aligned(&copy)
        }
    }
}

impl<T> Value for T
where
    T: Archive + 'static + for<'a, 'b> Serialize<HighSerializer<Sink<'b>, ArenaHandle<'a>, CodecError>>,
    T::Archived: for<'a> CheckBytes<HighValidator<'a, CodecError>> + Deserialize<T, Strategy<Pool, CodecError>>,
{
    fn serialize_into<'b>(&self, sink: Sink<'b>) -> Result<Sink<'b>, CodecError> {
        rkyv::api::high::to_bytes_in::<_, CodecError>(self, sink)
    }

    fn access(bytes: &[u8]) -> Result<&Self::Archived, CodecError> {
        rkyv::access::<T::Archived, CodecError>(bytes)
    }

    fn decode_aligned(bytes: &[u8]) -> Result<Self, CodecError> {
        rkyv::from_bytes::<T, CodecError>(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_copies_split_over_threads_copy_every_byte() {
        // Lengths around the threshold and not divisible by the thread count.
        for len in [PARALLEL_COPY_MIN - 1, PARALLEL_COPY_MIN, PARALLEL_COPY_MIN * 3 + 7] {
            let src: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            let mut dst = vec![0u8; len];
            copy_large(&mut dst, &src);
            assert!(dst == src, "copy of {len} bytes differs");
        }
        // And through the serializer, into a slice as a `put` does.
        let v: Vec<u8> = (0..(PARALLEL_COPY_MIN * 2 + 3)).map(|i| (i % 13) as u8).collect();
        let mut buf = vec![0u8; v.encoded_len().unwrap() + ALIGN];
        let off = buf.as_ptr().align_offset(ALIGN);
        let n = v.encode_into_slice(&mut buf[off..]).unwrap();
        assert_eq!(Vec::<u8>::decode_aligned(&buf[off..off + n]).unwrap(), v);
    }

    #[test]
    fn count_slice_and_vec_agree() {
        let v: Vec<u64> = (0..1000).collect();
        let n = v.encoded_len().unwrap();
        let bytes = v.encode().unwrap();
        assert_eq!(bytes.len(), n);
        let mut buf = Bytes::with_capacity(n);
        buf.resize(n, 0);
        assert_eq!(v.encode_into_slice(&mut buf).unwrap(), n);
        assert_eq!(&buf[..], &bytes[..]);
        assert_eq!(Vec::<u64>::decode(&bytes).unwrap(), v);
    }

    #[test]
    fn too_small_slice_is_an_error_not_a_panic() {
        let v = vec![1u8; 100];
        let mut buf = [0u8; 10];
        assert!(v.encode_into_slice(&mut buf).is_err());
    }

    #[test]
    fn garbage_is_rejected() {
        let junk = [0xffu8; 64];
        assert!(Vec::<String>::decode(&junk).is_err());
        // Unaligned input is copied, not rejected or misread.
        let s = String::from("hello").encode().unwrap();
        let mut shifted = vec![0u8; s.len() + 1];
        shifted[1..].copy_from_slice(&s);
        assert_eq!(String::decode(&shifted[1..]).unwrap(), "hello");
    }
}
