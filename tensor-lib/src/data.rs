//! Element types, typed buffers and chunks: the values chunk tasks exchange.

use std::borrow::Cow;

use ndarray::{ArrayD, IxDyn};

/// An element type (numpy's names): the engine's ([`ares_tileable::scalar::DType`]),
/// whose promotion rules frames share.
pub use ares_tileable::scalar::DType;
/// Complex elements (`complex64`, `complex128`).
pub use ares_tileable::scalar::{C64, C128};

/// Runs `$body` with `$v` bound to the scalar's value, whatever its type.
macro_rules! with_scalar {
    ($s:expr, $v:ident => $body:expr) => {
        match $s {
            Scalar::Bool($v) => $body,
            Scalar::I8($v) => $body,
            Scalar::I16($v) => $body,
            Scalar::I32($v) => $body,
            Scalar::I64($v) => $body,
            Scalar::U8($v) => $body,
            Scalar::U16($v) => $body,
            Scalar::U32($v) => $body,
            Scalar::U64($v) => $body,
            Scalar::F32($v) => $body,
            Scalar::F64($v) => $body,
            Scalar::C64($v) => $body,
            Scalar::C128($v) => $body,
        }
    };
}

/// Runs `$body` with `$v` bound to the buffer's vector, whatever its type.
#[macro_export]
#[doc(hidden)]
macro_rules! with_buf {
    ($buf:expr, $v:ident => $body:expr) => {
        match $buf {
            $crate::data::Buf::Bool($v) => $body,
            $crate::data::Buf::I8($v) => $body,
            $crate::data::Buf::I16($v) => $body,
            $crate::data::Buf::I32($v) => $body,
            $crate::data::Buf::I64($v) => $body,
            $crate::data::Buf::U8($v) => $body,
            $crate::data::Buf::U16($v) => $body,
            $crate::data::Buf::U32($v) => $body,
            $crate::data::Buf::U64($v) => $body,
            $crate::data::Buf::F32($v) => $body,
            $crate::data::Buf::F64($v) => $body,
            $crate::data::Buf::C64($v) => $body,
            $crate::data::Buf::C128($v) => $body,
        }
    };
}

/// Runs `$body` with `$T` bound to the element type of `$dtype`.
#[macro_export]
#[doc(hidden)]
macro_rules! with_dtype {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            $crate::data::DType::Bool => {
                type $T = bool;
                $body
            }
            $crate::data::DType::I8 => {
                type $T = i8;
                $body
            }
            $crate::data::DType::I16 => {
                type $T = i16;
                $body
            }
            $crate::data::DType::I32 => {
                type $T = i32;
                $body
            }
            $crate::data::DType::I64 => {
                type $T = i64;
                $body
            }
            $crate::data::DType::U8 => {
                type $T = u8;
                $body
            }
            $crate::data::DType::U16 => {
                type $T = u16;
                $body
            }
            $crate::data::DType::U32 => {
                type $T = u32;
                $body
            }
            $crate::data::DType::U64 => {
                type $T = u64;
                $body
            }
            $crate::data::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::data::DType::F64 => {
                type $T = f64;
                $body
            }
            $crate::data::DType::C64 => {
                type $T = $crate::data::C64;
                $body
            }
            $crate::data::DType::C128 => {
                type $T = $crate::data::C128;
                $body
            }
        }
    };
}

/// A scalar of some dtype.
#[derive(Clone, Copy, Debug, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub enum Scalar {
    /// A bool.
    Bool(bool),
    /// An int8.
    I8(i8),
    /// An int16.
    I16(i16),
    /// An int32.
    I32(i32),
    /// An int64.
    I64(i64),
    /// A uint8.
    U8(u8),
    /// A uint16.
    U16(u16),
    /// A uint32.
    U32(u32),
    /// A uint64.
    U64(u64),
    /// A float32.
    F32(f32),
    /// A float64.
    F64(f64),
    /// A complex64.
    C64(C64),
    /// A complex128.
    C128(C128),
}

impl Scalar {
    /// Its dtype.
    pub fn dtype(self) -> DType {
        with_scalar!(self, v => Elem::dtype_of(v))
    }

    /// As a float64.
    pub fn as_f64(self) -> f64 {
        with_scalar!(self, v => v.to_f64())
    }

    /// As an int64 (wrapping as numpy's `astype` does; floats truncated).
    pub fn as_i64(self) -> i64 {
        with_scalar!(self, v => if Elem::dtype_of(v).is_float() { v.to_f64() as i64 } else { v.to_i64() })
    }

    /// `v` as a scalar of `dtype` (numpy's `astype` of one element).
    pub fn cast(self, dtype: DType) -> Scalar {
        let b = with_scalar!(self, v => Elem::wrap(vec![v])).cast(dtype);
        with_buf!(b, v => Elem::scalar(v[0]))
    }
}

/// A typed, contiguous run of elements.
#[derive(Clone, Debug, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub enum Buf {
    /// bools
    Bool(Vec<bool>),
    /// int8s
    I8(Vec<i8>),
    /// int16s
    I16(Vec<i16>),
    /// int32s
    I32(Vec<i32>),
    /// int64s
    I64(Vec<i64>),
    /// uint8s
    U8(Vec<u8>),
    /// uint16s
    U16(Vec<u16>),
    /// uint32s
    U32(Vec<u32>),
    /// uint64s
    U64(Vec<u64>),
    /// float32s
    F32(Vec<f32>),
    /// float64s
    F64(Vec<f64>),
    /// complex64s
    C64(Vec<C64>),
    /// complex128s
    C128(Vec<C128>),
}

/// Conversion between element types, with numpy's casting semantics (`astype`).
///
/// Its dtype is `Num::DTYPE` (the engine's element trait, whose kernels it runs).
pub trait Elem: Copy + Send + Sync + 'static + std::fmt::Debug + PartialOrd + ares_tileable::scalar::Num {
    /// From a float64.
    fn from_f64(v: f64) -> Self;
    /// To a float64.
    fn to_f64(self) -> f64;
    /// From an int64 (wrapping).
    fn from_i64(v: i64) -> Self;
    /// To an int64 (wrapping).
    fn to_i64(self) -> i64;
    /// From a bool.
    fn from_bool(v: bool) -> Self;
    /// To a bool (non-zero).
    fn to_bool(self) -> bool;
    /// From a complex128 (a real type keeps the real part, as numpy's `astype`).
    fn from_c128(v: C128) -> Self {
        Self::from_f64(v.re)
    }
    /// To a complex128.
    fn to_c128(self) -> C128 {
        C128::new(self.to_f64(), 0.0)
    }
    /// The buffer holding these.
    fn wrap(v: Vec<Self>) -> Buf;
    /// The vector inside a buffer of this type.
    fn unwrap(b: &Buf) -> Option<&Vec<Self>>;
    /// The vector inside a buffer of this type, to write.
    fn unwrap_mut(b: &mut Buf) -> Option<&mut Vec<Self>>;
    /// The vector of a buffer of this type, taken out.
    fn into_vec(b: Buf) -> Option<Vec<Self>>;
    /// It as a scalar.
    fn scalar(self) -> Scalar;
    /// Its dtype (from a value, for macros).
    fn dtype_of(self) -> DType {
        Self::DTYPE
    }
}

/// The `Elem` methods that move between an element type and its `Buf`/`Scalar` variant.
macro_rules! buf_access {
    ($v:ident) => {
        fn wrap(v: Vec<Self>) -> Buf {
            Buf::$v(v)
        }
        fn unwrap(b: &Buf) -> Option<&Vec<Self>> {
            match b {
                Buf::$v(v) => Some(v),
                _ => None,
            }
        }
        fn unwrap_mut(b: &mut Buf) -> Option<&mut Vec<Self>> {
            match b {
                Buf::$v(v) => Some(v),
                _ => None,
            }
        }
        fn into_vec(b: Buf) -> Option<Vec<Self>> {
            match b {
                Buf::$v(v) => Some(v),
                _ => None,
            }
        }
        fn scalar(self) -> Scalar {
            Scalar::$v(self)
        }
    };
}

macro_rules! num_elem {
    ($($t:ty => $d:ident),* $(,)?) => {$(
        impl Elem for $t {
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
            buf_access!($d);
        }
    )*};
}
num_elem!(i8 => I8, i16 => I16, i32 => I32, i64 => I64, u8 => U8, u16 => U16, u32 => U32, u64 => U64, f32 => F32, f64 => F64);

macro_rules! complex_elem {
    ($($t:ident => $f:ty),*) => {$(
        impl Elem for $t {
            fn from_f64(v: f64) -> Self {
                $t::new(v as $f, 0.0)
            }
            /// The real part (numpy's cast of a complex to a real type).
            fn to_f64(self) -> f64 {
                self.re.into()
            }
            fn from_i64(v: i64) -> Self {
                $t::new(v as $f, 0.0)
            }
            fn to_i64(self) -> i64 {
                self.re as i64
            }
            fn from_bool(v: bool) -> Self {
                $t::new(f32::from(u8::from(v)).into(), 0.0)
            }
            fn to_bool(self) -> bool {
                self.re != 0.0 || self.im != 0.0
            }
            fn from_c128(v: C128) -> Self {
                $t::new(v.re as $f, v.im as $f)
            }
            fn to_c128(self) -> C128 {
                C128::new(self.re.into(), self.im.into())
            }
            buf_access!($t);
        }
    )*};
}
complex_elem!(C64 => f32, C128 => f64);

impl Elem for bool {
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
    buf_access!(Bool);
}

impl Buf {
    /// Its dtype.
    pub fn dtype(&self) -> DType {
        fn of<T: Elem>(_: &[T]) -> DType {
            T::DTYPE
        }
        with_buf!(self, v => of(v))
    }

    /// Its length.
    pub fn len(&self) -> usize {
        with_buf!(self, v => v.len())
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `n` zeros of `dtype` (false for bool), without a pass of writes where the
    /// allocator hands out zeroed pages.
    pub fn zeros(dtype: DType, n: usize) -> Buf {
        crate::with_dtype!(dtype, T => T::wrap(vec![T::from_bool(false); n]))
    }

    /// `n` copies of `s`.
    pub fn filled(s: Scalar, n: usize) -> Buf {
        with_scalar!(s, v => Elem::wrap(vec![v; n]))
    }

    /// Converted to `to` (numpy `astype`); no copy if it already is.
    pub fn cast(self, to: DType) -> Buf {
        if self.dtype() == to {
            return self;
        }
        with_buf!(&self, v => cast_slice(v, to))
    }

    /// `n` copies of the first element.
    pub fn repeat_first(&self, n: usize) -> Buf {
        with_buf!(self, v => Elem::wrap(vec![v[0]; n]))
    }

    /// The elements at `idx`.
    pub fn gather(&self, idx: &[usize]) -> Buf {
        with_buf!(self, v => Elem::wrap(idx.iter().map(|&i| v[i]).collect()))
    }

    /// Elements `start..end`.
    pub fn slice(&self, start: usize, end: usize) -> Buf {
        with_buf!(self, v => Elem::wrap(v[start..end].to_vec()))
    }

    /// Writes `src[from..from + len]` at `at` (same dtype).
    pub fn write_at(&mut self, at: usize, src: &Buf, from: usize, len: usize) {
        fn put<T: Elem>(out: &mut [T], at: usize, src: &Buf, from: usize, len: usize) {
            let src = T::unwrap(src).unwrap_or_else(|| unreachable!("write {:?} into {:?}", src.dtype(), T::DTYPE));
            out[at..at + len].copy_from_slice(&src[from..from + len]);
        }
        with_buf!(self, out => put(out, at, src, from, len))
    }

    /// Writes `src[k]` at position `dst[k]` (same dtype).
    pub fn scatter(&mut self, dst: &[usize], src: &Buf) {
        fn put<T: Elem>(out: &mut [T], dst: &[usize], src: &Buf) {
            let src = T::unwrap(src).unwrap_or_else(|| unreachable!("scatter {:?} into {:?}", src.dtype(), T::DTYPE));
            for (&d, &v) in dst.iter().zip(src) {
                out[d] = v;
            }
        }
        with_buf!(self, out => put(out, dst, src))
    }

    /// Appends `other` (of the same dtype).
    pub fn extend(&mut self, other: &Buf) {
        fn ext<T: Elem>(a: &mut Vec<T>, other: &Buf) {
            let b = T::unwrap(other).unwrap_or_else(|| unreachable!("extend {:?} with {:?}", T::DTYPE, other.dtype()));
            a.extend_from_slice(b);
        }
        with_buf!(self, a => ext(a, other))
    }

    /// An empty buffer of `dtype` with room for `n`.
    pub fn with_capacity(dtype: DType, n: usize) -> Buf {
        crate::with_dtype!(dtype, T => Elem::wrap(Vec::<T>::with_capacity(n)))
    }
}

/// The elements of `v` converted to `to` (numpy's `astype`).
pub fn cast_slice<S: Elem>(v: &[S], to: DType) -> Buf {
    fn conv<S: Elem, T: Elem>(v: &[S]) -> Vec<T> {
        if T::DTYPE == DType::Bool {
            v.iter().map(|x| T::from_bool(x.to_bool())).collect()
        } else if S::DTYPE.is_complex() || T::DTYPE.is_complex() && S::DTYPE.is_float() {
            v.iter().map(|x| T::from_c128(x.to_c128())).collect()
        } else if !T::DTYPE.is_float() && !S::DTYPE.is_float() {
            // Integers convert exactly, wrapping (through int64's bits: a uint64 above
            // int64's range comes back whole).
            v.iter().map(|x| T::from_i64(x.to_i64())).collect()
        } else {
            v.iter().map(|x| T::from_f64(x.to_f64())).collect()
        }
    }
    crate::with_dtype!(to, T => Elem::wrap(conv::<_, T>(v)))
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

/// An archived element: its native value.
trait Native: Copy {
    type N: Elem;
    fn native(self) -> Self::N;
}

macro_rules! native_identity {
    ($($t:ty),*) => {$(
        impl Native for $t {
            type N = $t;
            fn native(self) -> $t {
                self
            }
        }
    )*};
}
native_identity!(bool, i8, u8);

macro_rules! native_complex {
    ($($a:ident => $t:ident),*) => {$(
        impl Native for ares_tileable::scalar::$a {
            type N = $t;
            fn native(self) -> $t {
                $t::new(self.re.to_native(), self.im.to_native())
            }
        }
    )*};
}
native_complex!(ArchivedC64 => C64, ArchivedC128 => C128);

macro_rules! native_archived {
    ($($a:ident => $t:ty),*) => {$(
        impl Native for rkyv::primitive::$a {
            type N = $t;
            fn native(self) -> $t {
                self.to_native()
            }
        }
    )*};
}
native_archived!(
    ArchivedI16 => i16, ArchivedI32 => i32, ArchivedI64 => i64, ArchivedU16 => u16, ArchivedU32 => u32,
    ArchivedU64 => u64, ArchivedF32 => f32, ArchivedF64 => f64
);

/// Runs `$body` with `$v` bound to the archived vector and `$D` to its dtype.
macro_rules! with_archived {
    ($buf:expr, $v:ident, $D:ident => $body:expr) => {
        match $buf {
            ArchivedBuf::Bool($v) => {
                let $D = DType::Bool;
                $body
            }
            ArchivedBuf::I8($v) => {
                let $D = DType::I8;
                $body
            }
            ArchivedBuf::I16($v) => {
                let $D = DType::I16;
                $body
            }
            ArchivedBuf::I32($v) => {
                let $D = DType::I32;
                $body
            }
            ArchivedBuf::I64($v) => {
                let $D = DType::I64;
                $body
            }
            ArchivedBuf::U8($v) => {
                let $D = DType::U8;
                $body
            }
            ArchivedBuf::U16($v) => {
                let $D = DType::U16;
                $body
            }
            ArchivedBuf::U32($v) => {
                let $D = DType::U32;
                $body
            }
            ArchivedBuf::U64($v) => {
                let $D = DType::U64;
                $body
            }
            ArchivedBuf::F32($v) => {
                let $D = DType::F32;
                $body
            }
            ArchivedBuf::F64($v) => {
                let $D = DType::F64;
                $body
            }
            ArchivedBuf::C64($v) => {
                let $D = DType::C64;
                $body
            }
            ArchivedBuf::C128($v) => {
                let $D = DType::C128;
                $body
            }
        }
    };
}

/// The elements of an archived chunk (read in place from the object store) as a slice
/// of `T`, without a copy: `None` if the chunk holds another dtype, or on a big-endian
/// machine (where archived numbers are not laid out as native ones).
pub fn elements_in_place<T: Elem>(c: &ArchivedChunk) -> Option<&[T]> {
    let (ptr, len, dtype): (*const u8, usize, DType) = with_archived!(&c.data, v, d => (v.as_ptr().cast(), v.len(), d));
    if dtype != T::DTYPE || cfg!(target_endian = "big") || (ptr as usize) % std::mem::align_of::<T>() != 0 {
        return None;
    }
    // SAFETY: the archived vector holds `len` elements of `T`'s dtype; on a little-endian
    // machine rkyv's archived primitives (`f64_le`, …, and `bool`) have the size and bit
    // layout of the native type (archived complex numbers are `repr(C)` pairs of them),
    // and the pointer was checked to be aligned for `T`. The slice borrows `c`, which the
    // caller keeps alive.
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
            ChunkRef::Archived(c) => with_archived!(&c.data, v, _d => v.len()),
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
            ChunkRef::Archived(c) => with_archived!(&c.data, _v, d => d),
        }
    }

    /// The whole chunk, copied.
    pub fn to_chunk(&self) -> Chunk {
        Chunk { shape: self.shape(), data: self.slice(0, self.len()) }
    }

    /// Elements `start..end`, copied.
    pub fn slice(&self, start: usize, end: usize) -> Buf {
        match self {
            ChunkRef::Owned(c) => c.data.slice(start, end),
            ChunkRef::Archived(c) => crate::with_dtype!(self.dtype(), T => match elements_in_place::<T>(c) {
                // Native layout: one copy of the bytes.
                Some(v) => T::wrap(v[start..end].to_vec()),
                None => with_archived!(&c.data, v, _d => Elem::wrap(v[start..end].iter().map(|x| x.native()).collect())),
            }),
        }
    }

    /// Elements `start..end` as `dtype`, converted straight from where they lie.
    pub fn slice_as(&self, start: usize, end: usize, dtype: DType) -> Buf {
        if self.dtype() == dtype {
            return self.slice(start, end);
        }
        match self {
            ChunkRef::Owned(c) => with_buf!(&c.data, v => cast_slice(&v[start..end], dtype)),
            ChunkRef::Archived(c) => crate::with_dtype!(self.dtype(), S => match elements_in_place::<S>(c) {
                Some(v) => cast_slice(&v[start..end], dtype),
                None => self.slice(start, end).cast(dtype),
            }),
        }
    }

    /// Copies the runs `start..start + len` of `starts` into `out` (of this dtype) at
    /// the positions `at`, read in place when archived.
    pub fn copy_runs(&self, out: &mut Buf, starts: &[usize], at: &[usize], len: usize) {
        fn put<T: Elem>(out: &mut Buf, v: &[T], starts: &[usize], at: &[usize], len: usize) {
            let d = out.dtype();
            let out = T::unwrap_mut(out).unwrap_or_else(|| unreachable!("runs of {:?} into {d:?}", T::DTYPE));
            for (&s, &a) in starts.iter().zip(at) {
                out[a..a + len].copy_from_slice(&v[s..s + len]);
            }
        }
        match self {
            ChunkRef::Owned(c) => with_buf!(&c.data, v => put(out, v, starts, at, len)),
            ChunkRef::Archived(c) => crate::with_dtype!(self.dtype(), T => match elements_in_place::<T>(c) {
                Some(v) => put(out, v, starts, at, len),
                None => {
                    let copied = self.slice(0, self.len());
                    with_buf!(&copied, v => put(out, v, starts, at, len))
                }
            }),
        }
    }

    /// The runs `start..start + len` for each `start` of `starts`, copied one after the
    /// other (a block of a chunk, row by row), read in place when archived.
    pub fn runs(&self, starts: &[usize], len: usize) -> Buf {
        fn copy<T: Elem>(v: &[T], starts: &[usize], len: usize) -> Buf {
            let mut out = Vec::with_capacity(starts.len() * len);
            for &s in starts {
                out.extend_from_slice(&v[s..s + len]);
            }
            T::wrap(out)
        }
        match self {
            ChunkRef::Owned(c) => with_buf!(&c.data, v => copy(v, starts, len)),
            ChunkRef::Archived(c) => crate::with_dtype!(self.dtype(), T => match elements_in_place::<T>(c) {
                Some(v) => copy(v, starts, len),
                None => {
                    let mut out = Buf::with_capacity(self.dtype(), starts.len() * len);
                    for &s in starts {
                        out.extend(&self.slice(s, s + len));
                    }
                    out
                }
            }),
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
