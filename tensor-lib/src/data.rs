//! Element types, typed buffers and chunks: the values chunk tasks exchange.

use std::borrow::Cow;

use ndarray::{ArrayD, IxDyn};

/// An element type (numpy's names).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize,
)]
#[rkyv(derive(Debug, PartialEq))]
pub enum DType {
    /// `bool`
    Bool,
    /// `int32`
    I32,
    /// `int64`
    I64,
    /// `float32`
    F32,
    /// `float64`
    F64,
}

impl DType {
    /// Whether this is a floating-point type.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64)
    }

    /// numpy's `result_type` for two arrays (the engine's rule,
    /// [`ares_tileable::scalar::result_type`]).
    pub fn promote(a: DType, b: DType) -> DType {
        let c = ares_tileable::scalar::result_type(a.core(), b.core());
        DType::of_core(c).expect("tensor dtypes promote to a tensor dtype")
    }

    /// The type of a true division (`/`) of these operands.
    pub fn true_div(a: DType, b: DType) -> DType {
        match DType::promote(a, b) {
            DType::F32 => DType::F32,
            _ => DType::F64,
        }
    }

    /// The engine's dtype (its scalar core's) of this one.
    pub fn core(self) -> ares_tileable::scalar::DType {
        use ares_tileable::scalar::DType as C;
        match self {
            DType::Bool => C::Bool,
            DType::I32 => C::I32,
            DType::I64 => C::I64,
            DType::F32 => C::F32,
            DType::F64 => C::F64,
        }
    }

    /// The tensor dtype of an engine dtype, if tensors have it.
    pub fn of_core(d: ares_tileable::scalar::DType) -> Option<DType> {
        use ares_tileable::scalar::DType as C;
        Some(match d {
            C::Bool => DType::Bool,
            C::I32 => DType::I32,
            C::I64 => DType::I64,
            C::F32 => DType::F32,
            C::F64 => DType::F64,
            _ => return None,
        })
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::Bool => 1,
            DType::I32 | DType::F32 => 4,
            DType::I64 | DType::F64 => 8,
        }
    }
}

/// A scalar of some dtype.
#[derive(Clone, Copy, Debug, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub enum Scalar {
    /// A bool.
    Bool(bool),
    /// An int32.
    I32(i32),
    /// An int64.
    I64(i64),
    /// A float32.
    F32(f32),
    /// A float64.
    F64(f64),
}

impl Scalar {
    /// Its dtype.
    pub fn dtype(self) -> DType {
        match self {
            Scalar::Bool(_) => DType::Bool,
            Scalar::I32(_) => DType::I32,
            Scalar::I64(_) => DType::I64,
            Scalar::F32(_) => DType::F32,
            Scalar::F64(_) => DType::F64,
        }
    }

    /// As a float64.
    pub fn as_f64(self) -> f64 {
        match self {
            Scalar::Bool(b) => f64::from(u8::from(b)),
            Scalar::I32(v) => f64::from(v),
            Scalar::I64(v) => v as f64,
            Scalar::F32(v) => f64::from(v),
            Scalar::F64(v) => v,
        }
    }
}

/// A typed, contiguous run of elements.
#[derive(Clone, Debug, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub enum Buf {
    /// bools
    Bool(Vec<bool>),
    /// int32s
    I32(Vec<i32>),
    /// int64s
    I64(Vec<i64>),
    /// float32s
    F32(Vec<f32>),
    /// float64s
    F64(Vec<f64>),
}

/// Runs `$body` with `$v` bound to the buffer's vector, whatever its type.
#[macro_export]
#[doc(hidden)]
macro_rules! with_buf {
    ($buf:expr, $v:ident => $body:expr) => {
        match $buf {
            $crate::data::Buf::Bool($v) => $body,
            $crate::data::Buf::I32($v) => $body,
            $crate::data::Buf::I64($v) => $body,
            $crate::data::Buf::F32($v) => $body,
            $crate::data::Buf::F64($v) => $body,
        }
    };
}

/// Conversion between element types, with numpy's casting semantics (`astype`).
pub trait Elem: Copy + Send + Sync + 'static + std::fmt::Debug + PartialOrd {
    /// Its dtype.
    const DTYPE: DType;
    /// From a float64.
    fn from_f64(v: f64) -> Self;
    /// To a float64.
    fn to_f64(self) -> f64;
    /// From an int64.
    fn from_i64(v: i64) -> Self;
    /// To an int64.
    fn to_i64(self) -> i64;
    /// From a bool.
    fn from_bool(v: bool) -> Self;
    /// To a bool (non-zero).
    fn to_bool(self) -> bool;
    /// The buffer holding these.
    fn wrap(v: Vec<Self>) -> Buf;
    /// The vector inside a buffer of this type.
    fn unwrap(b: &Buf) -> Option<&Vec<Self>>;
    /// The vector of a buffer of this type, taken out.
    fn into_vec(b: Buf) -> Option<Vec<Self>>;
}

macro_rules! num_elem {
    ($t:ty, $d:ident) => {
        impl Elem for $t {
            const DTYPE: DType = DType::$d;
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn from_i64(v: i64) -> Self {
                v as $t
            }
            fn to_i64(self) -> i64 {
                self as i64
            }
            fn from_bool(v: bool) -> Self {
                u8::from(v) as $t
            }
            fn to_bool(self) -> bool {
                self != (0 as $t)
            }
            fn wrap(v: Vec<Self>) -> Buf {
                Buf::$d(v)
            }
            fn unwrap(b: &Buf) -> Option<&Vec<Self>> {
                match b {
                    Buf::$d(v) => Some(v),
                    _ => None,
                }
            }
            fn into_vec(b: Buf) -> Option<Vec<Self>> {
                match b {
                    Buf::$d(v) => Some(v),
                    _ => None,
                }
            }
        }
    };
}
num_elem!(i32, I32);
num_elem!(i64, I64);
num_elem!(f32, F32);
num_elem!(f64, F64);

impl Elem for bool {
    const DTYPE: DType = DType::Bool;
    fn from_f64(v: f64) -> Self {
        v != 0.0
    }
    fn to_f64(self) -> f64 {
        f64::from(u8::from(self))
    }
    fn from_i64(v: i64) -> Self {
        v != 0
    }
    fn to_i64(self) -> i64 {
        i64::from(self)
    }
    fn from_bool(v: bool) -> Self {
        v
    }
    fn to_bool(self) -> bool {
        self
    }
    fn wrap(v: Vec<Self>) -> Buf {
        Buf::Bool(v)
    }
    fn into_vec(b: Buf) -> Option<Vec<Self>> {
        match b {
            Buf::Bool(v) => Some(v),
            _ => None,
        }
    }
    fn unwrap(b: &Buf) -> Option<&Vec<Self>> {
        match b {
            Buf::Bool(v) => Some(v),
            _ => None,
        }
    }
}

impl Buf {
    /// Its dtype.
    pub fn dtype(&self) -> DType {
        match self {
            Buf::Bool(_) => DType::Bool,
            Buf::I32(_) => DType::I32,
            Buf::I64(_) => DType::I64,
            Buf::F32(_) => DType::F32,
            Buf::F64(_) => DType::F64,
        }
    }

    /// Its length.
    pub fn len(&self) -> usize {
        with_buf!(self, v => v.len())
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `n` copies of `s`.
    pub fn filled(s: Scalar, n: usize) -> Buf {
        match s {
            Scalar::Bool(v) => Buf::Bool(vec![v; n]),
            Scalar::I32(v) => Buf::I32(vec![v; n]),
            Scalar::I64(v) => Buf::I64(vec![v; n]),
            Scalar::F32(v) => Buf::F32(vec![v; n]),
            Scalar::F64(v) => Buf::F64(vec![v; n]),
        }
    }

    /// Converted to `to` (numpy `astype`); no copy if it already is.
    pub fn cast(self, to: DType) -> Buf {
        if self.dtype() == to {
            return self;
        }
        fn conv<S: Elem, T: Elem>(v: &[S]) -> Vec<T> {
            match T::DTYPE {
                DType::Bool => v.iter().map(|x| T::from_bool(x.to_bool())).collect(),
                DType::I32 | DType::I64 if !S::DTYPE.is_float() => v.iter().map(|x| T::from_i64(x.to_i64())).collect(),
                _ => v.iter().map(|x| T::from_f64(x.to_f64())).collect(),
            }
        }
        with_buf!(&self, v => match to {
            DType::Bool => Buf::Bool(conv(v)),
            DType::I32 => Buf::I32(conv(v)),
            DType::I64 => Buf::I64(conv(v)),
            DType::F32 => Buf::F32(conv(v)),
            DType::F64 => Buf::F64(conv(v)),
        })
    }

    /// `n` copies of the first element.
    pub fn repeat_first(&self, n: usize) -> Buf {
        with_buf!(self, v => Elem::wrap(vec![v[0]; n]))
    }

    /// The elements at `idx`.
    pub fn gather(&self, idx: &[usize]) -> Buf {
        match self {
            Buf::Bool(v) => Buf::Bool(idx.iter().map(|&i| v[i]).collect()),
            Buf::I32(v) => Buf::I32(idx.iter().map(|&i| v[i]).collect()),
            Buf::I64(v) => Buf::I64(idx.iter().map(|&i| v[i]).collect()),
            Buf::F32(v) => Buf::F32(idx.iter().map(|&i| v[i]).collect()),
            Buf::F64(v) => Buf::F64(idx.iter().map(|&i| v[i]).collect()),
        }
    }

    /// Elements `start..end`.
    pub fn slice(&self, start: usize, end: usize) -> Buf {
        match self {
            Buf::Bool(v) => Buf::Bool(v[start..end].to_vec()),
            Buf::I32(v) => Buf::I32(v[start..end].to_vec()),
            Buf::I64(v) => Buf::I64(v[start..end].to_vec()),
            Buf::F32(v) => Buf::F32(v[start..end].to_vec()),
            Buf::F64(v) => Buf::F64(v[start..end].to_vec()),
        }
    }

    /// Writes `src[k]` at position `dst[k]` (same dtype).
    pub fn scatter(&mut self, dst: &[usize], src: &Buf) {
        fn put<T: Copy>(out: &mut [T], dst: &[usize], src: &[T]) {
            for (&d, &v) in dst.iter().zip(src) {
                out[d] = v;
            }
        }
        match (self, src) {
            (Buf::Bool(a), Buf::Bool(b)) => put(a, dst, b),
            (Buf::I32(a), Buf::I32(b)) => put(a, dst, b),
            (Buf::I64(a), Buf::I64(b)) => put(a, dst, b),
            (Buf::F32(a), Buf::F32(b)) => put(a, dst, b),
            (Buf::F64(a), Buf::F64(b)) => put(a, dst, b),
            (a, b) => unreachable!("scatter {:?} into {:?}", b.dtype(), a.dtype()),
        }
    }

    /// Appends `other` (of the same dtype).
    pub fn extend(&mut self, other: &Buf) {
        match (self, other) {
            (Buf::Bool(a), Buf::Bool(b)) => a.extend_from_slice(b),
            (Buf::I32(a), Buf::I32(b)) => a.extend_from_slice(b),
            (Buf::I64(a), Buf::I64(b)) => a.extend_from_slice(b),
            (Buf::F32(a), Buf::F32(b)) => a.extend_from_slice(b),
            (Buf::F64(a), Buf::F64(b)) => a.extend_from_slice(b),
            (a, b) => unreachable!("extend {:?} with {:?}", a.dtype(), b.dtype()),
        }
    }

    /// An empty buffer of `dtype` with room for `n`.
    pub fn with_capacity(dtype: DType, n: usize) -> Buf {
        match dtype {
            DType::Bool => Buf::Bool(Vec::with_capacity(n)),
            DType::I32 => Buf::I32(Vec::with_capacity(n)),
            DType::I64 => Buf::I64(Vec::with_capacity(n)),
            DType::F32 => Buf::F32(Vec::with_capacity(n)),
            DType::F64 => Buf::F64(Vec::with_capacity(n)),
        }
    }
}

/// One chunk of a tensor: its shape and its elements in C order.
#[derive(Clone, Debug, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct Chunk {
    /// Extent of each dimension.
    pub shape: Vec<u64>,
    /// The elements, row-major.
    pub data: Buf,
}

impl Chunk {
    /// The chunk's dtype.
    pub fn dtype(&self) -> DType {
        self.data.dtype()
    }

    /// As an ndarray of `T` (cast if needed).
    pub fn to_array<T: Elem>(&self) -> ArrayD<T> {
        let shape: Vec<usize> = self.shape.iter().map(|&d| d as usize).collect();
        let data = self.data.clone().cast(T::DTYPE);
        let v = T::unwrap(&data).expect("cast to T").clone();
        ArrayD::from_shape_vec(IxDyn(&shape), v).expect("a chunk's data matches its shape")
    }

    /// From an ndarray.
    pub fn from_array<T: Elem>(a: &ArrayD<T>) -> Chunk {
        Chunk { shape: a.shape().iter().map(|&d| d as u64).collect(), data: T::wrap(a.iter().copied().collect()) }
    }
}

/// The elements of an archived chunk (read in place from the object store) as a slice
/// of `T`, without a copy: `None` if the chunk holds another dtype, or on a big-endian
/// machine (where archived numbers are not laid out as native ones).
pub fn elements_in_place<T: Elem>(c: &ArchivedChunk) -> Option<&[T]> {
    let (ptr, len, dtype): (*const u8, usize, DType) = match &c.data {
        ArchivedBuf::Bool(v) => (v.as_ptr().cast(), v.len(), DType::Bool),
        ArchivedBuf::I32(v) => (v.as_ptr().cast(), v.len(), DType::I32),
        ArchivedBuf::I64(v) => (v.as_ptr().cast(), v.len(), DType::I64),
        ArchivedBuf::F32(v) => (v.as_ptr().cast(), v.len(), DType::F32),
        ArchivedBuf::F64(v) => (v.as_ptr().cast(), v.len(), DType::F64),
    };
    if dtype != T::DTYPE || cfg!(target_endian = "big") || (ptr as usize) % std::mem::align_of::<T>() != 0 {
        return None;
    }
    // SAFETY: the archived vector holds `len` elements of `T`'s dtype; on a little-endian
    // machine rkyv's archived primitives (`f64_le`, …, and `bool`) have the size and bit
    // layout of the native type, and the pointer was checked to be aligned for `T`. The
    // slice borrows `c`, which the caller keeps alive.
    Some(unsafe { std::slice::from_raw_parts(ptr.cast::<T>(), len) })
}

/// A chunk a kernel reads: decoded, or archived where it lies (in the object store, when
/// a task declares its input `InPlace`), so a large input is not copied out whole first.
#[derive(Clone, Copy)]
pub enum ChunkRef<'a> {
    /// A decoded chunk.
    Owned(&'a Chunk),
    /// An archived chunk, read in place.
    Archived(&'a ArchivedChunk),
}

impl<'a> From<&'a Chunk> for ChunkRef<'a> {
    fn from(c: &'a Chunk) -> Self {
        ChunkRef::Owned(c)
    }
}

impl<'a> From<&'a ArchivedChunk> for ChunkRef<'a> {
    fn from(c: &'a ArchivedChunk) -> Self {
        ChunkRef::Archived(c)
    }
}

impl<'a> ChunkRef<'a> {
    /// The extent of each dimension.
    pub fn shape(&self) -> Vec<u64> {
        match self {
            ChunkRef::Owned(c) => c.shape.clone(),
            ChunkRef::Archived(c) => c.shape.iter().map(|d| d.to_native()).collect(),
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            ChunkRef::Owned(c) => c.data.len(),
            ChunkRef::Archived(c) => match &c.data {
                ArchivedBuf::Bool(v) => v.len(),
                ArchivedBuf::I32(v) => v.len(),
                ArchivedBuf::I64(v) => v.len(),
                ArchivedBuf::F32(v) => v.len(),
                ArchivedBuf::F64(v) => v.len(),
            },
        }
    }

    /// Whether it has no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether its shape is `shape`.
    pub fn shape_is(&self, shape: &[u64]) -> bool {
        match self {
            ChunkRef::Owned(c) => c.shape == shape,
            ChunkRef::Archived(c) => {
                c.shape.len() == shape.len() && c.shape.iter().zip(shape).all(|(a, b)| a.to_native() == *b)
            }
        }
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        match self {
            ChunkRef::Owned(c) => c.dtype(),
            ChunkRef::Archived(c) => match &c.data {
                ArchivedBuf::Bool(_) => DType::Bool,
                ArchivedBuf::I32(_) => DType::I32,
                ArchivedBuf::I64(_) => DType::I64,
                ArchivedBuf::F32(_) => DType::F32,
                ArchivedBuf::F64(_) => DType::F64,
            },
        }
    }

    /// Elements `start..end`, copied.
    pub fn slice(&self, start: usize, end: usize) -> Buf {
        match self {
            ChunkRef::Owned(c) => c.data.slice(start, end),
            ChunkRef::Archived(c) => match &c.data {
                ArchivedBuf::Bool(v) => Buf::Bool(v[start..end].to_vec()),
                ArchivedBuf::I32(v) => Buf::I32(v[start..end].iter().map(|x| x.to_native()).collect()),
                ArchivedBuf::I64(v) => Buf::I64(v[start..end].iter().map(|x| x.to_native()).collect()),
                ArchivedBuf::F32(v) => Buf::F32(v[start..end].iter().map(|x| x.to_native()).collect()),
                ArchivedBuf::F64(v) => Buf::F64(v[start..end].iter().map(|x| x.to_native()).collect()),
            },
        }
    }

    /// All elements as `T`: borrowed where they already are `T` in native layout,
    /// otherwise converted (numpy's `astype`).
    pub fn elements<T: Elem>(&self) -> Cow<'a, [T]> {
        let whole = match *self {
            ChunkRef::Owned(c) => match T::unwrap(&c.data) {
                Some(v) => return Cow::Borrowed(v),
                None => c.data.clone(),
            },
            ChunkRef::Archived(c) => match elements_in_place::<T>(c) {
                Some(v) => return Cow::Borrowed(v),
                None => self.slice(0, self.len()),
            },
        };
        Cow::Owned(T::into_vec(whole.cast(T::DTYPE)).expect("cast to T"))
    }
}

/// Number of elements of `shape`.
pub fn numel(shape: &[u64]) -> usize {
    shape.iter().product::<u64>() as usize
}
