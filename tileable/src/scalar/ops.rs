//! Element-wise operations with numpy's semantics, on typed slices: the kernels a tensor
//! chunk program and a frame column expression both evaluate. Each kernel chooses its
//! operation once, outside a plain loop over the elements, so the compiler vectorizes
//! the loop where the target has SIMD for it.
//!
//! numpy's rules kept: integers wrap in their width; `//` and `%` are Python's (the floor
//! quotient, the remainder with the divisor's sign; floats as `npy_divmod`); an integer
//! divided by 0 gives 0 (numpy warns; frames make it missing, see their evaluator); an
//! integer to a negative integer power is refused; `maximum`/`minimum` propagate NaN;
//! booleans add as `or` and multiply as `and`.

/// A binary operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub enum BinOp {
    /// `a + b`
    Add,
    /// `a - b`
    Sub,
    /// `a * b`
    Mul,
    /// `a / b` (true division: always a float).
    Div,
    /// `a // b` (floor division, Python's).
    FloorDiv,
    /// `a % b` (the remainder with the divisor's sign, Python's).
    Mod,
    /// `a ** b`
    Pow,
    /// element-wise maximum (NaN wins)
    Maximum,
    /// element-wise minimum (NaN wins)
    Minimum,
    /// `a < b`
    Lt,
    /// `a <= b`
    Le,
    /// `a > b`
    Gt,
    /// `a >= b`
    Ge,
    /// `a == b`
    Eq,
    /// `a != b`
    Ne,
    /// logical and
    And,
    /// logical or
    Or,
    /// `atan2(a, b)`: the angle of the point `(b, a)`
    Atan2,
    /// `hypot(a, b)`: `sqrt(a² + b²)` without overflow
    Hypot,
    /// `a`'s magnitude with `b`'s sign
    CopySign,
    /// `log(exp(a) + exp(b))`
    LogAddExp,
    /// bitwise and (logical for booleans)
    BitAnd,
    /// bitwise or
    BitOr,
    /// bitwise exclusive or
    BitXor,
    /// `a << b` (0 once `b` reaches the width, or is negative)
    Shl,
    /// `a >> b`, arithmetic (the sign fills once `b` reaches the width, or is negative)
    Shr,
}

impl BinOp {
    /// Whether it is a float function of two arguments (`atan2`, `hypot`, `copysign`,
    /// `logaddexp`): integers compute it in floats.
    pub fn is_float_function(self) -> bool {
        matches!(self, BinOp::Atan2 | BinOp::Hypot | BinOp::CopySign | BinOp::LogAddExp)
    }

    /// Whether it is bitwise (integers and booleans only).
    pub fn is_bitwise(self) -> bool {
        matches!(self, BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor | BinOp::Shl | BinOp::Shr)
    }

    /// Whether the result is a boolean comparison.
    pub fn is_comparison(self) -> bool {
        matches!(self, BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::Eq | BinOp::Ne)
    }

    /// Whether it is arithmetic (`+ - * / // % **`).
    pub fn is_arithmetic(self) -> bool {
        matches!(self, BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::FloorDiv | BinOp::Mod | BinOp::Pow)
    }

    /// Python's operator (or numpy's function name).
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::FloorDiv => "//",
            BinOp::Mod => "%",
            BinOp::Pow => "**",
            BinOp::Maximum => "maximum",
            BinOp::Minimum => "minimum",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::And => "&",
            BinOp::Or => "|",
            BinOp::Atan2 => "atan2",
            BinOp::Hypot => "hypot",
            BinOp::CopySign => "copysign",
            BinOp::LogAddExp => "logaddexp",
            BinOp::BitAnd => "&",
            BinOp::BitOr => "|",
            BinOp::BitXor => "^",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
        }
    }
}

/// A numeric unary operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub enum UnOp {
    /// `-x`
    Neg,
    /// `|x|`
    Abs,
    /// `sqrt(x)`
    Sqrt,
    /// `exp(x)`
    Exp,
    /// `ln(x)`
    Log,
    /// `sin(x)`
    Sin,
    /// `cos(x)`
    Cos,
    /// logical not
    Not,
    /// rounded to this many decimals (half to even; negative: to tens, hundreds, …)
    Round(i32),
    /// `tan(x)`
    Tan,
    /// `sinh(x)`
    Sinh,
    /// `cosh(x)`
    Cosh,
    /// `tanh(x)`
    Tanh,
    /// `asin(x)`
    Asin,
    /// `acos(x)`
    Acos,
    /// `atan(x)`
    Atan,
    /// `asinh(x)`
    Asinh,
    /// `acosh(x)`
    Acosh,
    /// `atanh(x)`
    Atanh,
    /// `exp(x) - 1`, exact near 0
    Expm1,
    /// `ln(1 + x)`, exact near 0
    Log1p,
    /// `log2(x)`
    Log2,
    /// `log10(x)`
    Log10,
    /// rounded down (integers and booleans unchanged)
    Floor,
    /// rounded up
    Ceil,
    /// rounded toward 0
    Trunc,
    /// -1, 0 or 1 (NaN for NaN; 0 for -0.0)
    Sign,
    /// `x * x`
    Square,
    /// `+x`
    Positive,
    /// NaN (a boolean)
    IsNan,
    /// ±infinity (a boolean)
    IsInf,
    /// neither NaN nor infinite (a boolean)
    IsFinite,
    /// the sign bit is set (a boolean; -0.0 and -NaN too)
    SignBit,
    /// bitwise not (logical not for booleans)
    Invert,
    /// the real part (a real number is its own)
    Real,
    /// the imaginary part (0 for a real number)
    Imag,
    /// the complex conjugate (a real number is its own)
    Conj,
}

impl UnOp {
    /// Whether it is a float function (integers compute it in floats).
    pub fn is_float_function(self) -> bool {
        matches!(
            self,
            UnOp::Sqrt
                | UnOp::Exp
                | UnOp::Log
                | UnOp::Sin
                | UnOp::Cos
                | UnOp::Tan
                | UnOp::Sinh
                | UnOp::Cosh
                | UnOp::Tanh
                | UnOp::Asin
                | UnOp::Acos
                | UnOp::Atan
                | UnOp::Asinh
                | UnOp::Acosh
                | UnOp::Atanh
                | UnOp::Expm1
                | UnOp::Log1p
                | UnOp::Log2
                | UnOp::Log10
        )
    }

    /// Whether its result is a boolean test of each element.
    pub fn is_predicate(self) -> bool {
        matches!(self, UnOp::IsNan | UnOp::IsInf | UnOp::IsFinite | UnOp::SignBit)
    }
}

/// Why an operation fails on the values it got.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OpError {
    /// An integer raised to a negative integer power (numpy refuses it).
    #[error("Integers to negative integer powers are not allowed (cast the base to float first)")]
    NegativeIntegerPower,
}

/// An element type the kernels compute in.
pub trait Num: Copy + PartialOrd + Send + Sync + 'static {
    /// Its dtype.
    const DTYPE: super::DType;
    #[doc(hidden)]
    fn add(self, o: Self) -> Self;
    #[doc(hidden)]
    fn sub(self, o: Self) -> Self;
    #[doc(hidden)]
    fn mul(self, o: Self) -> Self;
    /// Division in this type (floats only: integers divide in float64).
    #[doc(hidden)]
    fn div(self, o: Self) -> Self;
    #[doc(hidden)]
    fn floor_div(self, o: Self) -> Self;
    #[doc(hidden)]
    fn modulo(self, o: Self) -> Self;
    /// `self ** o`, for a non-negative `o` when an integer.
    #[doc(hidden)]
    fn pow(self, o: Self) -> Self;
    /// Whether it is a negative integer (an exponent numpy refuses).
    #[doc(hidden)]
    fn negative_int(self) -> bool;
    #[doc(hidden)]
    fn maximum(self, o: Self) -> Self;
    #[doc(hidden)]
    fn minimum(self, o: Self) -> Self;
    #[doc(hidden)]
    fn neg(self) -> Self;
    #[doc(hidden)]
    fn abs(self) -> Self;
    /// -1, 0 or 1 (numpy's `sign`: NaN for NaN, +0 for ±0).
    #[doc(hidden)]
    fn signum(self) -> Self;
    /// Bitwise not (logical for booleans; floats have none).
    #[doc(hidden)]
    fn invert(self) -> Self;
    /// A bitwise operation (and, or, xor, shifts) of integers or booleans.
    #[doc(hidden)]
    fn bits(self, op: BinOp, o: Self) -> Self;
    /// A float function of two arguments (floats only: integers compute it in floats).
    #[doc(hidden)]
    fn float2(self, op: BinOp, o: Self) -> Self;
    /// Rounded down, up, or toward zero (integers are already whole).
    #[doc(hidden)]
    fn whole(self, op: UnOp) -> Self {
        let _ = op;
        self
    }
    #[doc(hidden)]
    fn is_nan(self) -> bool {
        false
    }
    #[doc(hidden)]
    fn is_inf(self) -> bool {
        false
    }
    #[doc(hidden)]
    fn sign_bit(self) -> bool;
}

/// numpy's `divmod` of two floats (`npy_divmod`): the floor quotient, and the remainder
/// with the divisor's sign.
pub fn float_divmod(a: f64, b: f64) -> (f64, f64) {
    let mut m = a % b;
    if b == 0.0 {
        return (a / b, m);
    }
    let mut div = (a - m) / b;
    if m != 0.0 {
        if (b < 0.0) != (m < 0.0) {
            m += b;
            div -= 1.0;
        }
    } else {
        m = 0f64.copysign(b);
    }
    let q = if div != 0.0 {
        let f = div.floor();
        if div - f > 0.5 { f + 1.0 } else { f }
    } else {
        0f64.copysign(a / b)
    };
    (q, m)
}

macro_rules! int_num {
    ($($t:ident => $d:ident, $signed:tt);* $(;)?) => {$(
        impl Num for $t {
            const DTYPE: super::DType = super::DType::$d;
            fn add(self, o: Self) -> Self { self.wrapping_add(o) }
            fn sub(self, o: Self) -> Self { self.wrapping_sub(o) }
            fn mul(self, o: Self) -> Self { self.wrapping_mul(o) }
            fn div(self, o: Self) -> Self { if o == 0 { 0 } else { self.wrapping_div(o) } }
            fn floor_div(self, o: Self) -> Self {
                if o == 0 {
                    return 0;
                }
                let (q, r) = (self.wrapping_div(o), self.wrapping_rem(o));
                // Rounds toward minus infinity: one less when the signs differ.
                if $signed && r != 0 && ((r < 0 as $t) != (o < 0 as $t)) { q.wrapping_sub(1) } else { q }
            }
            fn modulo(self, o: Self) -> Self {
                if o == 0 {
                    return 0;
                }
                let r = self.wrapping_rem(o);
                if $signed && r != 0 && ((r < 0 as $t) != (o < 0 as $t)) { r.wrapping_add(o) } else { r }
            }
            fn pow(self, o: Self) -> Self {
                // Square and multiply, wrapping, for any exponent (`wrapping_pow` takes a
                // u32, and truncating a larger one gives other numbers).
                let (mut base, mut acc, mut e): ($t, $t, u64) = (self, 1, o as u64);
                while e > 0 {
                    if e & 1 == 1 {
                        acc = acc.wrapping_mul(base);
                    }
                    base = base.wrapping_mul(base);
                    e >>= 1;
                }
                acc
            }
            #[allow(unused_comparisons)]
            fn negative_int(self) -> bool { self < 0 }
            fn maximum(self, o: Self) -> Self { if self >= o { self } else { o } }
            fn minimum(self, o: Self) -> Self { if self <= o { self } else { o } }
            fn neg(self) -> Self { self.wrapping_neg() }
            fn abs(self) -> Self { int_num!(@abs self, $signed) }
            #[allow(unused_comparisons)]
            fn signum(self) -> Self { if self > 0 { 1 } else if self < 0 { (0 as $t).wrapping_sub(1) } else { 0 } }
            fn invert(self) -> Self { !self }
            #[allow(unused_comparisons)]
            fn bits(self, op: BinOp, o: Self) -> Self {
                let width = (8 * std::mem::size_of::<$t>()) as u64;
                // A count that is negative or reaches the width shifts everything out,
                // as numpy defines it.
                let far = o < 0 || (o as u64) >= width;
                match op {
                    BinOp::BitAnd => self & o,
                    BinOp::BitOr => self | o,
                    BinOp::BitXor => self ^ o,
                    BinOp::Shl => if far { 0 } else { self.wrapping_shl(o as u32) },
                    BinOp::Shr if far => if self < 0 { (0 as $t).wrapping_sub(1) } else { 0 },
                    BinOp::Shr => self.wrapping_shr(o as u32),
                    other => unreachable!("{other:?} is not bitwise"),
                }
            }
            fn float2(self, op: BinOp, _: Self) -> Self { unreachable!("{op:?} computes in floats") }
            #[allow(unused_comparisons)]
            fn sign_bit(self) -> bool { self < 0 }
        }
    )*};
    (@abs $x:expr, true) => { $x.wrapping_abs() };
    (@abs $x:expr, false) => { $x };
}

int_num! {
    i8 => I8, true; i16 => I16, true; i32 => I32, true; i64 => I64, true;
    u8 => U8, false; u16 => U16, false; u32 => U32, false; u64 => U64, false;
}

macro_rules! float_num {
    ($($t:ident => $d:ident);*) => {$(
        impl Num for $t {
            const DTYPE: super::DType = super::DType::$d;
            fn add(self, o: Self) -> Self { self + o }
            fn sub(self, o: Self) -> Self { self - o }
            fn mul(self, o: Self) -> Self { self * o }
            fn div(self, o: Self) -> Self { self / o }
            // float32 computes in float64 and rounds once (numpy computes in float32;
            // the results agree but for the last bit of some).
            fn floor_div(self, o: Self) -> Self { float_divmod(self as f64, o as f64).0 as $t }
            fn modulo(self, o: Self) -> Self { float_divmod(self as f64, o as f64).1 as $t }
            fn pow(self, o: Self) -> Self { self.powf(o) }
            fn negative_int(self) -> bool { false }
            fn maximum(self, o: Self) -> Self { if self.is_nan() || self >= o { self } else { o } }
            fn minimum(self, o: Self) -> Self { if self.is_nan() || self <= o { self } else { o } }
            fn neg(self) -> Self { -self }
            fn abs(self) -> Self { $t::abs(self) }
            fn signum(self) -> Self {
                if self > 0.0 { 1.0 } else if self < 0.0 { -1.0 } else if self == 0.0 { 0.0 } else { self }
            }
            fn invert(self) -> Self { unreachable!("floats have no bitwise not") }
            fn bits(self, op: BinOp, _: Self) -> Self { unreachable!("floats have no {op:?}") }
            fn float2(self, op: BinOp, o: Self) -> Self {
                match op {
                    BinOp::Atan2 => self.atan2(o),
                    BinOp::Hypot => self.hypot(o),
                    BinOp::CopySign => self.copysign(o),
                    BinOp::LogAddExp => {
                        if self == o {
                            // Equal (infinities too): ln 2 more, without inf - inf.
                            self + std::$t::consts::LN_2
                        } else {
                            let (hi, lo) = if self > o || o.is_nan() { (self, o) } else { (o, self) };
                            hi + (lo - hi).exp().ln_1p()
                        }
                    }
                    other => unreachable!("{other:?} is not a float function"),
                }
            }
            fn whole(self, op: UnOp) -> Self {
                match op {
                    UnOp::Floor => self.floor(),
                    UnOp::Ceil => self.ceil(),
                    _ => self.trunc(),
                }
            }
            fn is_nan(self) -> bool { $t::is_nan(self) }
            fn is_inf(self) -> bool { $t::is_infinite(self) }
            fn sign_bit(self) -> bool { self.is_sign_negative() }
        }
    )*};
}

float_num! { f32 => F32; f64 => F64 }

impl Num for bool {
    const DTYPE: super::DType = super::DType::Bool;
    fn add(self, o: Self) -> Self {
        self | o
    }
    fn sub(self, o: Self) -> Self {
        self ^ o
    }
    fn mul(self, o: Self) -> Self {
        self & o
    }
    fn div(self, o: Self) -> Self {
        self & o
    }
    fn floor_div(self, o: Self) -> Self {
        self & o
    }
    fn modulo(self, _: Self) -> Self {
        false
    }
    fn pow(self, o: Self) -> Self {
        self | !o
    }
    fn negative_int(self) -> bool {
        false
    }
    fn maximum(self, o: Self) -> Self {
        self | o
    }
    fn minimum(self, o: Self) -> Self {
        self & o
    }
    fn neg(self) -> Self {
        !self
    }
    fn abs(self) -> Self {
        self
    }
    fn signum(self) -> Self {
        self
    }
    fn invert(self) -> Self {
        !self
    }
    fn bits(self, op: BinOp, o: Self) -> Self {
        match op {
            BinOp::BitAnd => self & o,
            BinOp::BitOr => self | o,
            BinOp::BitXor => self ^ o,
            other => unreachable!("{other:?} of booleans computes in int8"),
        }
    }
    fn float2(self, op: BinOp, _: Self) -> Self {
        unreachable!("{op:?} computes in floats")
    }
    fn sign_bit(self) -> bool {
        false
    }
}

/// The right operand of a binary kernel: a run as long as the left one, or one value.
#[derive(Clone, Copy, Debug)]
pub enum Rhs<'a, T> {
    /// One value per element.
    Slice(&'a [T]),
    /// The same value for every element.
    Scalar(T),
}

/// `a op b` for an arithmetic, `maximum` or `minimum` operation, written over `a`'s
/// buffer (both already in the dtype the operation computes in).
pub fn arith<T: Num>(op: BinOp, mut a: Vec<T>, b: Rhs<'_, T>) -> Result<Vec<T>, OpError> {
    macro_rules! apply {
        ($f:expr) => {{
            let f = $f;
            match b {
                Rhs::Slice(b) => a.iter_mut().zip(b).for_each(|(x, &y)| *x = f(*x, y)),
                Rhs::Scalar(c) => a.iter_mut().for_each(|x| *x = f(*x, c)),
            }
        }};
    }
    match op {
        BinOp::Add => apply!(T::add),
        BinOp::Sub => apply!(T::sub),
        BinOp::Mul => apply!(T::mul),
        BinOp::Div => apply!(T::div),
        BinOp::FloorDiv => apply!(T::floor_div),
        BinOp::Mod => apply!(T::modulo),
        BinOp::Pow => {
            let negative = match b {
                Rhs::Slice(b) => b.iter().any(|y| y.negative_int()),
                Rhs::Scalar(c) => c.negative_int(),
            };
            if negative {
                return Err(OpError::NegativeIntegerPower);
            }
            apply!(T::pow)
        }
        BinOp::Maximum => apply!(T::maximum),
        BinOp::Minimum => apply!(T::minimum),
        BinOp::BitAnd => apply!(|x: T, y: T| x.bits(BinOp::BitAnd, y)),
        BinOp::BitOr => apply!(|x: T, y: T| x.bits(BinOp::BitOr, y)),
        BinOp::BitXor => apply!(|x: T, y: T| x.bits(BinOp::BitXor, y)),
        BinOp::Shl => apply!(|x: T, y: T| x.bits(BinOp::Shl, y)),
        BinOp::Shr => apply!(|x: T, y: T| x.bits(BinOp::Shr, y)),
        BinOp::Atan2 => apply!(|x: T, y: T| x.float2(BinOp::Atan2, y)),
        BinOp::Hypot => apply!(|x: T, y: T| x.float2(BinOp::Hypot, y)),
        BinOp::CopySign => apply!(|x: T, y: T| x.float2(BinOp::CopySign, y)),
        BinOp::LogAddExp => apply!(|x: T, y: T| x.float2(BinOp::LogAddExp, y)),
        other => unreachable!("{other:?} is not arithmetic: compare() or logical() computes it"),
    }
    Ok(a)
}

/// `a op b` for a comparison.
pub fn compare<T: Num>(op: BinOp, a: &[T], b: Rhs<'_, T>) -> Vec<bool> {
    macro_rules! apply {
        ($f:expr) => {{
            let f = $f;
            match b {
                Rhs::Slice(b) => a.iter().zip(b).map(|(&x, &y)| f(x, y)).collect(),
                Rhs::Scalar(c) => a.iter().map(|&x| f(x, c)).collect(),
            }
        }};
    }
    match op {
        BinOp::Lt => apply!(|x: T, y: T| x < y),
        BinOp::Le => apply!(|x: T, y: T| x <= y),
        BinOp::Gt => apply!(|x: T, y: T| x > y),
        BinOp::Ge => apply!(|x: T, y: T| x >= y),
        BinOp::Eq => apply!(|x: T, y: T| x == y),
        BinOp::Ne => apply!(|x: T, y: T| x != y),
        other => unreachable!("{other:?} is not a comparison"),
    }
}

/// `a and b`, `a or b` of booleans, over `a`'s buffer.
pub fn logical(op: BinOp, mut a: Vec<bool>, b: Rhs<'_, bool>) -> Vec<bool> {
    let f = match op {
        BinOp::And => |x: bool, y: bool| x & y,
        BinOp::Or => |x: bool, y: bool| x | y,
        other => unreachable!("{other:?} is not logical"),
    };
    match b {
        Rhs::Slice(b) => a.iter_mut().zip(b).for_each(|(x, &y)| *x = f(*x, y)),
        Rhs::Scalar(c) => a.iter_mut().for_each(|x| *x = f(*x, c)),
    }
    a
}

/// `op x` for the operations that keep integers integers (`Neg`, `Abs`, `Not` and
/// `Invert`, `Round`, `Floor`/`Ceil`/`Trunc`, `Sign`, `Square`, `Positive`), over `x`'s
/// buffer, in any type; the float functions are [`float_unary`].
pub fn unary<T: Num>(op: UnOp, mut x: Vec<T>) -> Vec<T> {
    match op {
        UnOp::Neg | UnOp::Not => x.iter_mut().for_each(|v| *v = v.neg()),
        UnOp::Invert => x.iter_mut().for_each(|v| *v = v.invert()),
        UnOp::Abs => x.iter_mut().for_each(|v| *v = v.abs()),
        UnOp::Sign => x.iter_mut().for_each(|v| *v = v.signum()),
        UnOp::Square => x.iter_mut().for_each(|v| *v = v.mul(*v)),
        UnOp::Floor | UnOp::Ceil | UnOp::Trunc => x.iter_mut().for_each(|v| *v = v.whole(op)),
        // Integers round only to tens and above (numpy's `round` with negative
        // decimals): done by the caller in float64, as numpy does.
        UnOp::Round(_) | UnOp::Positive | UnOp::Real | UnOp::Conj => {}
        UnOp::Imag => x.iter_mut().for_each(|v| *v = v.sub(*v)),
        other => unreachable!("{other:?} is computed by float_unary or predicate"),
    }
    x
}

/// `op x` for a test of each element (`IsNan`, `IsInf`, `IsFinite`, `SignBit`).
pub fn predicate<T: Num>(op: UnOp, x: &[T]) -> Vec<bool> {
    match op {
        UnOp::IsNan => x.iter().map(|v| v.is_nan()).collect(),
        UnOp::IsInf => x.iter().map(|v| v.is_inf()).collect(),
        UnOp::IsFinite => x.iter().map(|v| !v.is_nan() && !v.is_inf()).collect(),
        UnOp::SignBit => x.iter().map(|v| v.sign_bit()).collect(),
        other => unreachable!("{other:?} is not a test"),
    }
}

/// A float type.
pub trait Float: Num {
    #[doc(hidden)]
    fn map_f64(self, f: impl Fn(f64) -> f64) -> Self;
    #[doc(hidden)]
    fn sqrt(self) -> Self;
    #[doc(hidden)]
    fn exp(self) -> Self;
    #[doc(hidden)]
    fn ln(self) -> Self;
    #[doc(hidden)]
    fn sin(self) -> Self;
    #[doc(hidden)]
    fn cos(self) -> Self;
    /// One of the other float functions of one argument.
    #[doc(hidden)]
    fn func(self, op: UnOp) -> Self;
}

macro_rules! float_fns {
    ($($t:ident),*) => {$(
        impl Float for $t {
            fn map_f64(self, f: impl Fn(f64) -> f64) -> Self { f(self as f64) as $t }
            fn sqrt(self) -> Self { $t::sqrt(self) }
            fn exp(self) -> Self { $t::exp(self) }
            fn ln(self) -> Self { $t::ln(self) }
            fn sin(self) -> Self { $t::sin(self) }
            fn cos(self) -> Self { $t::cos(self) }
            fn func(self, op: UnOp) -> Self {
                match op {
                    UnOp::Tan => self.tan(),
                    UnOp::Sinh => self.sinh(),
                    UnOp::Cosh => self.cosh(),
                    UnOp::Tanh => self.tanh(),
                    UnOp::Asin => self.asin(),
                    UnOp::Acos => self.acos(),
                    UnOp::Atan => self.atan(),
                    UnOp::Asinh => self.asinh(),
                    UnOp::Acosh => self.acosh(),
                    UnOp::Atanh => self.atanh(),
                    UnOp::Expm1 => self.exp_m1(),
                    UnOp::Log1p => self.ln_1p(),
                    UnOp::Log2 => self.log2(),
                    UnOp::Log10 => self.log10(),
                    other => unreachable!("{other:?} is not a float function"),
                }
            }
        }
    )*};
}

float_fns!(f32, f64);

/// numpy's `round(x, decimals)` of a float: half to even, after scaling by
/// `10^decimals`.
pub fn round_f64(x: f64, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals.abs());
    if decimals >= 0 { (x * scale).round_ties_even() / scale } else { (x / scale).round_ties_even() * scale }
}

/// `op x` for any unary operation on a float type, over `x`'s buffer.
pub fn float_unary<T: Float>(op: UnOp, mut x: Vec<T>) -> Vec<T> {
    macro_rules! apply {
        ($f:expr) => {{
            let f = $f;
            x.iter_mut().for_each(|v| *v = f(*v));
        }};
    }
    match op {
        UnOp::Neg => apply!(T::neg),
        UnOp::Abs => apply!(T::abs),
        UnOp::Sqrt => apply!(T::sqrt),
        UnOp::Exp => apply!(T::exp),
        UnOp::Log => apply!(T::ln),
        UnOp::Sin => apply!(T::sin),
        UnOp::Cos => apply!(T::cos),
        UnOp::Round(d) => apply!(|v: T| v.map_f64(|f| round_f64(f, d))),
        UnOp::Floor | UnOp::Ceil | UnOp::Trunc => apply!(|v: T| v.whole(op)),
        UnOp::Sign => apply!(T::signum),
        UnOp::Square => apply!(|v: T| v.mul(v)),
        UnOp::Positive | UnOp::Real | UnOp::Conj => {}
        // A real number's imaginary part: +0 (x - x would make NaN of NaN).
        UnOp::Imag => apply!(|v: T| v.map_f64(|_| 0.0)),
        UnOp::Tan => apply!(|v: T| v.func(UnOp::Tan)),
        UnOp::Sinh => apply!(|v: T| v.func(UnOp::Sinh)),
        UnOp::Cosh => apply!(|v: T| v.func(UnOp::Cosh)),
        UnOp::Tanh => apply!(|v: T| v.func(UnOp::Tanh)),
        UnOp::Asin => apply!(|v: T| v.func(UnOp::Asin)),
        UnOp::Acos => apply!(|v: T| v.func(UnOp::Acos)),
        UnOp::Atan => apply!(|v: T| v.func(UnOp::Atan)),
        UnOp::Asinh => apply!(|v: T| v.func(UnOp::Asinh)),
        UnOp::Acosh => apply!(|v: T| v.func(UnOp::Acosh)),
        UnOp::Atanh => apply!(|v: T| v.func(UnOp::Atanh)),
        UnOp::Expm1 => apply!(|v: T| v.func(UnOp::Expm1)),
        UnOp::Log1p => apply!(|v: T| v.func(UnOp::Log1p)),
        UnOp::Log2 => apply!(|v: T| v.func(UnOp::Log2)),
        UnOp::Log10 => apply!(|v: T| v.func(UnOp::Log10)),
        UnOp::Not | UnOp::Invert => unreachable!("not takes booleans, invert integers"),
        UnOp::IsNan | UnOp::IsInf | UnOp::IsFinite | UnOp::SignBit => unreachable!("tests are computed by predicate"),
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floor_division_and_modulo_follow_python() {
        let a = vec![7i64, -7, 6, 1, i64::MIN];
        let b = [-2i64, 2, 3, 0, -1];
        assert_eq!(arith(BinOp::FloorDiv, a.clone(), Rhs::Slice(&b)).unwrap(), [-4, -4, 2, 0, i64::MIN]);
        assert_eq!(arith(BinOp::Mod, a, Rhs::Slice(&b)).unwrap(), [-1, 1, 0, 0, 0]);
        assert_eq!(float_divmod(7.5, -2.0), (-4.0, -0.5));
        assert_eq!(float_divmod(-7.5, 2.0), (-4.0, 0.5));
        let (q, m) = float_divmod(1.0, 0.0);
        assert!(q.is_infinite() && m.is_nan(), "numpy: 1.0 // 0.0 is inf, 1.0 % 0.0 is nan");
        // np.floor_divide(0.3, 0.1) == 2.0 (0.3 is a little under 3 tenths).
        assert_eq!(float_divmod(0.3, 0.1).0, 2.0);
        assert_eq!(arith(BinOp::FloorDiv, vec![7u8, 200], Rhs::Scalar(3)).unwrap(), [2, 66]);
    }

    #[test]
    fn integers_wrap_and_refuse_negative_powers() {
        assert_eq!(arith(BinOp::Add, vec![i32::MAX], Rhs::Scalar(1)).unwrap(), [i32::MIN]);
        assert_eq!(arith(BinOp::Pow, vec![2i64, 3], Rhs::Slice(&[62, 40])).unwrap()[0], 1 << 62);
        assert_eq!(arith(BinOp::Pow, vec![3i8], Rhs::Scalar(5)).unwrap(), [(243u8 as i8)]);
        assert_eq!(arith(BinOp::Pow, vec![2i64], Rhs::Scalar(-1)), Err(OpError::NegativeIntegerPower));
        assert_eq!(arith(BinOp::Pow, vec![2.0f64], Rhs::Scalar(-1.0)).unwrap(), [0.5]);
        assert_eq!(unary(UnOp::Abs, vec![i32::MIN, -4]), [i32::MIN, 4]);
        assert_eq!(unary(UnOp::Neg, vec![5u8]), [251]);
    }

    #[test]
    fn integer_powers_take_exponents_past_32_bits() {
        // Against repeated wrapping multiplication (the ring mod 2^64 gives one answer).
        let slow = |b: i64, e: i64| (0..e).fold(1i64, |acc, _| acc.wrapping_mul(b));
        for (b, e) in [(3i64, 0i64), (3, 1), (-3, 5), (2, 63), (2, 64), (7, 1000), (-5, 4097)] {
            assert_eq!(Num::pow(b, e), slow(b, e), "{b}^{e}");
        }
        // numpy's 3 ** 2**32 in int64; a u32 cast of the exponent would give 3^0 = 1.
        assert_eq!(Num::pow(3i64, 1 << 32), 2_491_309_678_558_969_857);
    }

    #[test]
    fn maximum_propagates_nan_and_booleans_add_as_or() {
        let m = arith(BinOp::Maximum, vec![f64::NAN, 1.0], Rhs::Slice(&[0.0, f64::NAN])).unwrap();
        assert!(m[0].is_nan() && m[1].is_nan());
        assert_eq!(arith(BinOp::Add, vec![true, false], Rhs::Slice(&[false, false])).unwrap(), [true, false]);
        assert_eq!(compare(BinOp::Lt, &[1.0, f64::NAN], Rhs::Scalar(2.0)), [true, false]);
        assert_eq!(logical(BinOp::Or, vec![true, false], Rhs::Scalar(false)), [true, false]);
    }

    #[test]
    fn float_functions_and_rounding_follow_numpy() {
        let r = float_unary(UnOp::Round(0), vec![0.5f64, 1.5, 2.5, -0.5]);
        assert_eq!(r, [0.0, 2.0, 2.0, -0.0]);
        assert_eq!(round_f64(1.234, 2), 1.23);
        assert_eq!(round_f64(25.0, -1), 20.0);
        assert_eq!(float_unary(UnOp::Sqrt, vec![4.0f32]), [2.0]);
    }
}
