//! Numeric dtypes and numpy 2's promotion rules (NEP 50), shared by tensors and frames:
//! what dtype an operation of two operands computes in and returns.
//!
//! Operands are arrays (a tensor, a column: their dtype is strong) or Python scalars
//! (a literal: only its kind counts, it takes the array's dtype when of the same kind).
//! Where numpy would give `float16` (square roots of booleans and 8-bit integers),
//! which is not a dtype here yet, the result is `float64`. Complex dtypes promote as
//! numpy's: a complex holds a float of half its width (`complex64` with `float64` is
//! `complex128`).

/// A numeric dtype (numpy's names).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize,
)]
#[rkyv(derive(Debug, PartialEq))]
pub enum DType {
    /// `bool`
    Bool,
    /// `int8`
    I8,
    /// `int16`
    I16,
    /// `int32`
    I32,
    /// `int64`
    I64,
    /// `uint8`
    U8,
    /// `uint16`
    U16,
    /// `uint32`
    U32,
    /// `uint64`
    U64,
    /// `float32`
    F32,
    /// `float64`
    F64,
    /// `complex64` (two float32 parts)
    C64,
    /// `complex128` (two float64 parts)
    C128,
}

/// The kind of a dtype, or of a Python scalar (which has no width).
#[derive(Clone, Copy, Debug, PartialEq, Eq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub enum Kind {
    /// `bool`
    Bool,
    /// An integer (signed or not).
    Int,
    /// A float.
    Float,
    /// A complex number.
    Complex,
}

impl DType {
    /// numpy's name.
    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::I8 => "int8",
            DType::I16 => "int16",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::U8 => "uint8",
            DType::U16 => "uint16",
            DType::U32 => "uint32",
            DType::U64 => "uint64",
            DType::F32 => "float32",
            DType::F64 => "float64",
            DType::C64 => "complex64",
            DType::C128 => "complex128",
        }
    }

    /// Its kind.
    pub fn kind(self) -> Kind {
        match self {
            DType::Bool => Kind::Bool,
            DType::F32 | DType::F64 => Kind::Float,
            DType::C64 | DType::C128 => Kind::Complex,
            _ => Kind::Int,
        }
    }

    /// Whether it is a float.
    pub fn is_float(self) -> bool {
        self.kind() == Kind::Float
    }

    /// Whether it is complex.
    pub fn is_complex(self) -> bool {
        self.kind() == Kind::Complex
    }

    /// Whether it is a float or complex (numpy's "inexact").
    pub fn is_inexact(self) -> bool {
        self.is_float() || self.is_complex()
    }

    /// The dtype of a complex dtype's parts (`float32` for `complex64`); others are
    /// their own.
    pub fn real(self) -> DType {
        match self {
            DType::C64 => DType::F32,
            DType::C128 => DType::F64,
            d => d,
        }
    }

    /// The complex dtype whose parts are this float (`complex64` for `float32`, else
    /// `complex128`).
    pub fn complex(self) -> DType {
        match self {
            DType::F32 | DType::C64 => DType::C64,
            _ => DType::C128,
        }
    }

    /// Whether it is an integer (signed or not).
    pub fn is_integer(self) -> bool {
        self.kind() == Kind::Int
    }

    /// Whether it is an unsigned integer.
    pub fn is_unsigned(self) -> bool {
        matches!(self, DType::U8 | DType::U16 | DType::U32 | DType::U64)
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::Bool | DType::I8 | DType::U8 => 1,
            DType::I16 | DType::U16 => 2,
            DType::I32 | DType::U32 | DType::F32 => 4,
            DType::I64 | DType::U64 | DType::F64 | DType::C64 => 8,
            DType::C128 => 16,
        }
    }

    /// The range of an integer dtype (`None` for bool and floats).
    pub fn int_range(self) -> Option<(i128, i128)> {
        Some(match self {
            DType::I8 => (i8::MIN.into(), i8::MAX.into()),
            DType::I16 => (i16::MIN.into(), i16::MAX.into()),
            DType::I32 => (i32::MIN.into(), i32::MAX.into()),
            DType::I64 => (i64::MIN.into(), i64::MAX.into()),
            DType::U8 => (0, u8::MAX.into()),
            DType::U16 => (0, u16::MAX.into()),
            DType::U32 => (0, u32::MAX.into()),
            DType::U64 => (0, u64::MAX.into()),
            _ => return None,
        })
    }

    /// numpy's `result_type` of two arrays ([`result_type`]).
    pub fn promote(a: DType, b: DType) -> DType {
        result_type(a, b)
    }

    /// The dtype of a true division (`/`) of arrays of these dtypes: float64, or float32
    /// for float32 operands; complex stays complex.
    pub fn true_div(a: DType, b: DType) -> DType {
        match result_type(a, b) {
            d @ (DType::F32 | DType::C64 | DType::C128) => d,
            _ => DType::F64,
        }
    }

    /// The signed integer of `bytes` bytes, if there is one.
    fn signed(bytes: usize) -> Option<DType> {
        Some(match bytes {
            1 => DType::I8,
            2 => DType::I16,
            4 => DType::I32,
            8 => DType::I64,
            _ => return None,
        })
    }
}

/// numpy's `result_type` of two arrays: the smallest dtype both cast to safely.
pub fn result_type(a: DType, b: DType) -> DType {
    use DType::*;
    if a == b {
        return a;
    }
    match (a.kind(), b.kind()) {
        (Kind::Bool, _) => b,
        (_, Kind::Bool) => a,
        (Kind::Complex, _) | (_, Kind::Complex) => {
            // The complex whose parts hold both operands' reals.
            let part = |d: DType| if d.is_complex() { d.real() } else { d };
            let r = result_type(part(a), part(b));
            // An integer beside complex64 widens it as beside float32.
            if r.is_float() { r.complex() } else { DType::C128 }
        }
        (Kind::Float, Kind::Float) => F64,
        (Kind::Float, Kind::Int) | (Kind::Int, Kind::Float) => {
            let (f, i) = if a.is_float() { (a, b) } else { (b, a) };
            // float32 holds integers of up to 16 bits exactly.
            if f == F32 && i.size() <= 2 { F32 } else { F64 }
        }
        (Kind::Int, Kind::Int) => match (a.is_unsigned(), b.is_unsigned()) {
            (false, false) | (true, true) => {
                if a.size() >= b.size() {
                    a
                } else {
                    b
                }
            }
            _ => {
                let (s, u) = if a.is_unsigned() { (b, a) } else { (a, b) };
                if s.size() > u.size() { s } else { DType::signed(2 * u.size()).unwrap_or(F64) }
            }
        },
    }
}

/// An operand of an operation: an array (its dtype counts) or a Python scalar (only its
/// kind counts: NEP 50's "weak" scalars).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operand {
    /// An array of this dtype.
    Array(DType),
    /// A Python scalar of this kind.
    Scalar(Kind),
}

impl Operand {
    /// The dtype it has on its own (a Python int is `int64`, a float `float64`).
    pub fn default_dtype(self) -> DType {
        match self {
            Operand::Array(d) => d,
            Operand::Scalar(Kind::Bool) => DType::Bool,
            Operand::Scalar(Kind::Int) => DType::I64,
            Operand::Scalar(Kind::Float) => DType::F64,
            Operand::Scalar(Kind::Complex) => DType::C128,
        }
    }
}

/// NEP 50: the dtype of an array of `a` with a Python scalar of kind `k`: the array's,
/// unless the scalar's kind is higher (an integer with a bool array gives `int64`, a
/// float with an integer array `float64`).
pub fn result_type_weak(a: DType, k: Kind) -> DType {
    match (a.kind(), k) {
        (Kind::Bool, Kind::Int) => DType::I64,
        (Kind::Bool | Kind::Int, Kind::Float) => DType::F64,
        (Kind::Bool | Kind::Int, Kind::Complex) => DType::C128,
        (Kind::Float, Kind::Complex) => a.complex(),
        _ => a,
    }
}

/// The common dtype of two operands.
pub fn common(a: Operand, b: Operand) -> DType {
    match (a, b) {
        (Operand::Array(x), Operand::Array(y)) => result_type(x, y),
        (Operand::Array(x), Operand::Scalar(k)) | (Operand::Scalar(k), Operand::Array(x)) => result_type_weak(x, k),
        (x, y) => result_type(x.default_dtype(), y.default_dtype()),
    }
}

use super::ops::{BinOp, UnOp};

/// Why an operation refuses its operands (numpy raises `TypeError`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TypeError(pub String);

/// What a binary operation computes in and returns, as numpy decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Typed {
    /// Both operands are cast to this first.
    pub compute: DType,
    /// The result's dtype.
    pub out: DType,
}

/// The dtypes of `a op b` (numpy's type resolution), or why numpy refuses it.
pub fn binary(op: BinOp, a: Operand, b: Operand) -> Result<Typed, TypeError> {
    let c = common(a, b);
    let typed = |compute: DType, out: DType| Ok(Typed { compute, out });
    match op {
        _ if op.is_comparison() => typed(c, DType::Bool),
        BinOp::And | BinOp::Or => typed(DType::Bool, DType::Bool),
        // Integers and booleans divide in float64; float32 stays float32.
        BinOp::Div => {
            let f = if c.is_inexact() { c } else { DType::F64 };
            typed(f, f)
        }
        _ if c.is_complex() && (op.is_float_function() || matches!(op, BinOp::FloorDiv | BinOp::Mod)) => {
            Err(TypeError(format!(
                "{} is not supported for {}: it takes real numbers (numpy refuses it)",
                op.symbol(),
                c.name()
            )))
        }
        _ if op.is_bitwise() && c.is_inexact() => Err(TypeError(format!(
            "{} is not supported for {}: bitwise operations take integers and booleans",
            op.symbol(),
            c.name()
        ))),
        // numpy shifts booleans in int8.
        BinOp::Shl | BinOp::Shr if c == DType::Bool => typed(DType::I8, DType::I8),
        _ if op.is_bitwise() => typed(c, c),
        _ if op.is_float_function() => {
            let f = match (a, b) {
                // numpy picks the smallest float both arrays cast to safely, which is not
                // always the float of their promotion (int8 and uint16: float32, not the
                // float64 of int32).
                (Operand::Array(x), Operand::Array(y)) => float_of_pair(x, y),
                _ => float_of(c),
            };
            typed(f, f)
        }
        BinOp::Sub if c == DType::Bool => Err(TypeError(
            "numpy boolean subtract, the `-` operator, is not supported, use the bitwise_xor, the `^` operator, or the logical_xor function instead".into(),
        )),
        // numpy computes these on booleans in int8.
        BinOp::FloorDiv | BinOp::Mod | BinOp::Pow if c == DType::Bool => typed(DType::I8, DType::I8),
        _ => typed(c, c),
    }
}

/// The float dtype a float function of `x` computes in: `x`'s if a float, float32 for
/// 16-bit integers (numpy's), float64 for the others. Decision: numpy gives float16 for
/// booleans and 8-bit integers, not a dtype here yet: float64, as for wider integers.
fn float_of(x: DType) -> DType {
    match x {
        DType::F32 | DType::F64 | DType::C64 | DType::C128 => x,
        DType::I16 | DType::U16 => DType::F32,
        _ => DType::F64,
    }
}

/// The smallest float that both `x` and `y` cast to safely (float16, for two booleans or
/// 8-bit integers, is float64 here as in [`float_of`]).
fn float_of_pair(x: DType, y: DType) -> DType {
    let rank = |d: DType| match d {
        DType::Bool | DType::I8 | DType::U8 => 0,
        DType::I16 | DType::U16 | DType::F32 => 1,
        _ => 2,
    };
    if rank(x).max(rank(y)) == 1 { DType::F32 } else { DType::F64 }
}

/// The dtype of `op x` (numpy's), or why numpy refuses it.
pub fn unary(op: UnOp, x: DType) -> Result<DType, TypeError> {
    let refuse = |what: &str| Err(TypeError(format!("{what} is not supported for {} (numpy refuses it)", x.name())));
    match op {
        UnOp::Neg if x == DType::Bool => Err(TypeError(
            "The numpy boolean negative, the `-` operator, is not supported, use the `~` operator or the logical_not function instead".into(),
        )),
        UnOp::Sign | UnOp::Positive if x == DType::Bool => refuse(if op == UnOp::Sign { "sign" } else { "positive (+)" }),
        UnOp::Invert if x.is_inexact() => refuse("bitwise_invert (~)"),
        UnOp::Floor | UnOp::Ceil | UnOp::Trunc | UnOp::SignBit if x.is_complex() => refuse(match op {
            UnOp::Floor => "floor",
            UnOp::Ceil => "ceil",
            UnOp::Trunc => "trunc",
            _ => "signbit",
        }),
        // The magnitude and the parts of a complex number are real.
        UnOp::Abs | UnOp::Real | UnOp::Imag => Ok(x.real()),
        // numpy squares booleans in int8.
        UnOp::Square if x == DType::Bool => Ok(DType::I8),
        UnOp::Not | UnOp::IsNan | UnOp::IsInf | UnOp::IsFinite | UnOp::SignBit => Ok(DType::Bool),
        _ if op.is_float_function() => Ok(float_of(x)),
        _ => Ok(x),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use DType::*;

    #[test]
    fn arrays_promote_as_numpys_result_type() {
        // Cases from numpy 2's promotion table.
        let cases = [
            (Bool, I8, I8),
            (I8, U8, I16),
            (I16, U8, I16),
            (I8, U16, I32),
            (I32, U32, I64),
            (I64, U32, I64),
            (I64, U64, F64),
            (U8, U64, U64),
            (I8, I64, I64),
            (F32, I16, F32),
            (F32, U16, F32),
            (F32, I32, F64),
            (F32, U64, F64),
            (F32, F64, F64),
            (Bool, F32, F32),
            (C64, F32, C64),
            (C64, F64, C128),
            (C64, I16, C64),
            (C64, I32, C128),
            (C64, C128, C128),
            (Bool, C64, C64),
            (U8, C64, C64),
        ];
        for (a, b, want) in cases {
            assert_eq!(result_type(a, b), want, "{a:?} with {b:?}");
            assert_eq!(result_type(b, a), want, "{b:?} with {a:?}");
        }
    }

    #[test]
    fn python_scalars_take_the_arrays_dtype_unless_their_kind_is_higher() {
        assert_eq!(result_type_weak(I8, Kind::Int), I8);
        assert_eq!(result_type_weak(F32, Kind::Float), F32);
        assert_eq!(result_type_weak(F32, Kind::Int), F32);
        assert_eq!(result_type_weak(I32, Kind::Float), F64);
        assert_eq!(result_type_weak(Bool, Kind::Int), I64);
        assert_eq!(result_type_weak(U8, Kind::Bool), U8);
        assert_eq!(common(Operand::Scalar(Kind::Int), Operand::Scalar(Kind::Float)), F64);
        assert_eq!(result_type_weak(F32, Kind::Complex), C64);
        assert_eq!(result_type_weak(I8, Kind::Complex), C128);
        assert_eq!(result_type_weak(C64, Kind::Float), C64);
    }

    #[test]
    fn operations_type_as_numpy() {
        let arr = Operand::Array;
        let t = |op, a, b| binary(op, a, b).unwrap();
        assert_eq!(t(BinOp::Div, arr(I32), arr(I32)).out, F64);
        assert_eq!(t(BinOp::Div, arr(F32), Operand::Scalar(Kind::Int)).out, F32);
        assert_eq!(t(BinOp::Lt, arr(I32), arr(F32)), Typed { compute: F64, out: Bool });
        assert_eq!(t(BinOp::Add, arr(Bool), arr(Bool)).out, Bool);
        assert_eq!(t(BinOp::FloorDiv, arr(Bool), arr(Bool)).out, I8);
        assert!(binary(BinOp::Sub, arr(Bool), arr(Bool)).is_err());
        assert_eq!(unary(UnOp::Sqrt, I64), Ok(F64));
        assert_eq!(unary(UnOp::Sqrt, F32), Ok(F32));
        assert!(unary(UnOp::Neg, Bool).is_err());
        // Float functions of two arrays: the smallest float both cast to safely.
        assert_eq!(t(BinOp::Atan2, arr(I8), arr(U16)).out, F32);
        assert_eq!(t(BinOp::Atan2, arr(I8), arr(U8)).out, F64, "numpy's float16");
        assert_eq!(t(BinOp::Hypot, arr(I16), arr(F32)).out, F32);
        assert_eq!(t(BinOp::Hypot, arr(I32), arr(F32)).out, F64);
        assert_eq!(t(BinOp::Atan2, arr(I16), Operand::Scalar(Kind::Float)).out, F64);
        assert_eq!(t(BinOp::Div, arr(C64), arr(I8)).out, C64);
        assert!(binary(BinOp::FloorDiv, arr(C64), arr(F32)).is_err());
        assert!(binary(BinOp::BitAnd, arr(C128), arr(I8)).is_err());
        assert_eq!(unary(UnOp::Abs, C64), Ok(F32));
        assert_eq!(unary(UnOp::Exp, C128), Ok(C128));
        assert!(unary(UnOp::Floor, C128).is_err());
    }
}
