//! Complex elements (`complex64`, `complex128`) and their arithmetic and functions.
//!
//! The transcendental functions call the C library's (`cexp`, `clog`, `casinh`, …):
//! glibc implements C99's Annex G, whose special cases (infinities, NaNs, signed
//! zeros) the Array API standard lists, and numpy on Linux calls the same functions.
//! Where the standard signs a zero otherwise (`tanh(inf + iy)`), its sign is taken.
//! `expm1`, `log1p`, `log2`, `log10`, `sign` and powers have no C function and are
//! written here as numpy writes them.

use super::ops::{BinOp, Float, Num, UnOp};

macro_rules! complex_type {
    ($name:ident, $t:ident, $d:ident, $doc:literal,
     [$exp:ident, $log:ident, $sqrt:ident, $sin:ident, $cos:ident, $tan:ident, $sinh:ident, $cosh:ident,
      $tanh:ident, $asin:ident, $acos:ident, $atan:ident, $asinh:ident, $acosh:ident, $atanh:ident, $pow:ident]) => {
        #[doc = $doc]
        #[repr(C)]
        #[derive(Clone, Copy, Debug, Default, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
        #[rkyv(derive(Clone, Copy, Debug, PartialEq))]
        pub struct $name {
            /// The real part.
            pub re: $t,
            /// The imaginary part.
            pub im: $t,
        }

        impl $name {
            /// `re + im·i`.
            pub const fn new(re: $t, im: $t) -> Self {
                Self { re, im }
            }

            /// `|z|`, without overflow (C's `cabs`: infinite if a part is, even beside NaN).
            pub fn norm(self) -> $t {
                self.re.hypot(self.im)
            }

            /// Whether a part is NaN.
            pub fn has_nan(self) -> bool {
                self.re.is_nan() || self.im.is_nan()
            }

            /// The complex conjugate.
            pub fn conj(self) -> Self {
                Self::new(self.re, -self.im)
            }

            fn libm(self, f: unsafe extern "C" fn($name) -> $name) -> Self {
                // SAFETY: `f` is one of the C library's complex functions declared below;
                // the type is `repr(C)` with the layout (and, by the x86-64 and AArch64
                // ABIs, the calling convention) of C's `_Complex`.
                unsafe { f(self) }
            }
        }

        /// numpy's order of complex numbers: by real part, then imaginary part; a NaN
        /// part makes two numbers unordered.
        impl PartialOrd for $name {
            fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
                if self.has_nan() || o.has_nan() {
                    return None;
                }
                match self.re.partial_cmp(&o.re)? {
                    std::cmp::Ordering::Equal => self.im.partial_cmp(&o.im),
                    other => Some(other),
                }
            }
        }

        impl Num for $name {
            const DTYPE: super::DType = super::DType::$d;
            fn add(self, o: Self) -> Self {
                Self::new(self.re + o.re, self.im + o.im)
            }
            fn sub(self, o: Self) -> Self {
                Self::new(self.re - o.re, self.im - o.im)
            }
            fn mul(self, o: Self) -> Self {
                Self::new(self.re * o.re - self.im * o.im, self.re * o.im + self.im * o.re)
            }
            /// Smith's algorithm (numpy's), which neither overflows nor underflows where
            /// the quotient does not.
            fn div(self, o: Self) -> Self {
                let (a, b, c, d) = (self.re, self.im, o.re, o.im);
                if c.abs() >= d.abs() {
                    if c == 0.0 && d == 0.0 {
                        // numpy: a zero divisor divides each part by |c|.
                        return Self::new(a / c.abs(), b / c.abs());
                    }
                    let r = d / c;
                    let den = c + d * r;
                    Self::new((a + b * r) / den, (b - a * r) / den)
                } else {
                    let r = c / d;
                    let den = c * r + d;
                    Self::new((a * r + b) / den, (b * r - a) / den)
                }
            }
            fn floor_div(self, _: Self) -> Self {
                unreachable!("numpy refuses // of complex numbers (typing rejects it)")
            }
            fn modulo(self, _: Self) -> Self {
                unreachable!("numpy refuses % of complex numbers (typing rejects it)")
            }
            /// numpy's: small integer exponents by repeated squaring, 0 to a power by
            /// its real part (0 if positive, else NaN), the rest through `cpow`.
            fn pow(self, o: Self) -> Self {
                let one = Self::new(1.0, 0.0);
                if o.re == 0.0 && o.im == 0.0 {
                    return one;
                }
                if self.re == 0.0 && self.im == 0.0 {
                    return if o.re > 0.0 { Self::new(0.0, 0.0) } else { Self::new($t::NAN, $t::NAN) };
                }
                if o.im == 0.0 && o.re == o.re.trunc() && o.re.abs() < 100.0 {
                    // numpy multiplies out 1, 2 and 3 without a leading 1 (whose zero
                    // imaginary part would turn an infinite part into NaN).
                    match o.re {
                        1.0 => return self,
                        2.0 => return self.mul(self),
                        3.0 => return self.mul(self).mul(self),
                        _ => {}
                    }
                    let mut n = o.re.abs() as u32;
                    let (mut base, mut acc) = (self, one);
                    while n > 0 {
                        if n & 1 == 1 {
                            acc = acc.mul(base);
                        }
                        base = base.mul(base);
                        n >>= 1;
                    }
                    return if o.re < 0.0 { one.div(acc) } else { acc };
                }
                // SAFETY: as in `libm`: C's `cpow` on two `_Complex` values.
                unsafe { libm::$pow(self, o) }
            }
            fn negative_int(self) -> bool {
                false
            }
            /// numpy's: NaN wins (the first operand's), else the larger in numpy's order.
            fn maximum(self, o: Self) -> Self {
                if self.has_nan() || !(o.has_nan() || self < o) { self } else { o }
            }
            fn minimum(self, o: Self) -> Self {
                if self.has_nan() || !(o.has_nan() || self > o) { self } else { o }
            }
            fn neg(self) -> Self {
                Self::new(-self.re, -self.im)
            }
            fn abs(self) -> Self {
                Self::new(self.norm(), 0.0)
            }
            /// numpy 2's: `z / |z|`, 0 for 0, NaN if a part is.
            fn signum(self) -> Self {
                if self.has_nan() {
                    return Self::new($t::NAN, $t::NAN);
                }
                if self.re == 0.0 && self.im == 0.0 {
                    return Self::new(0.0, 0.0);
                }
                if self.re.is_infinite() || self.im.is_infinite() {
                    // Only directions survive: infinite parts as ±1, finite ones as 0.
                    let unit = |x: $t| if x.is_infinite() { x.signum() } else { 0.0 };
                    let (r, i) = (unit(self.re), unit(self.im));
                    let n = r.hypot(i);
                    return Self::new(r / n, i / n);
                }
                let n = self.norm();
                Self::new(self.re / n, self.im / n)
            }
            fn invert(self) -> Self {
                unreachable!("complex numbers have no bitwise not")
            }
            fn bits(self, op: BinOp, _: Self) -> Self {
                unreachable!("complex numbers have no {op:?}")
            }
            fn float2(self, op: BinOp, _: Self) -> Self {
                unreachable!("{op:?} takes real numbers")
            }
            fn whole(self, op: UnOp) -> Self {
                unreachable!("numpy refuses {op:?} of complex numbers")
            }
            fn is_nan(self) -> bool {
                self.has_nan()
            }
            fn is_inf(self) -> bool {
                self.re.is_infinite() || self.im.is_infinite()
            }
            fn sign_bit(self) -> bool {
                unreachable!("numpy refuses signbit of complex numbers")
            }
        }

        impl Float for $name {
            /// Each part through `f` (rounding).
            fn map_f64(self, f: impl Fn(f64) -> f64) -> Self {
                Self::new(f(self.re as f64) as $t, f(self.im as f64) as $t)
            }
            fn sqrt(self) -> Self {
                self.libm(libm::$sqrt)
            }
            fn exp(self) -> Self {
                self.libm(libm::$exp)
            }
            fn ln(self) -> Self {
                self.libm(libm::$log)
            }
            fn sin(self) -> Self {
                self.libm(libm::$sin)
            }
            fn cos(self) -> Self {
                self.libm(libm::$cos)
            }
            fn func(self, op: UnOp) -> Self {
                match op {
                    UnOp::Tan => self.libm(libm::$tan),
                    UnOp::Sinh => self.libm(libm::$sinh),
                    UnOp::Cosh => self.libm(libm::$cosh),
                    // The standard's tanh(±inf + iy) = ±1 + 0i with the sign of y: C99 signs
                    // that zero as sin(2y), which the standard's special case does not.
                    UnOp::Tanh if self.re.is_infinite() && self.im.is_finite() => {
                        Self::new((1.0 as $t).copysign(self.re), (0.0 as $t).copysign(self.im))
                    }
                    UnOp::Tanh => self.libm(libm::$tanh),
                    UnOp::Asin => self.libm(libm::$asin),
                    UnOp::Acos => self.libm(libm::$acos),
                    UnOp::Atan => self.libm(libm::$atan),
                    UnOp::Asinh => self.libm(libm::$asinh),
                    UnOp::Acosh => self.libm(libm::$acosh),
                    UnOp::Atanh => self.libm(libm::$atanh),
                    UnOp::Log2 => {
                        let l = self.ln();
                        Self::new(l.re / std::$t::consts::LN_2, l.im / std::$t::consts::LN_2)
                    }
                    UnOp::Log10 => {
                        let l = self.ln();
                        Self::new(l.re / std::$t::consts::LN_10, l.im / std::$t::consts::LN_10)
                    }
                    UnOp::Expm1 => {
                        let (x, y) = (self.re, self.im);
                        if !x.is_finite() || !y.is_finite() {
                            // exp's special cases, less one: only the real part moves.
                            let e = self.exp();
                            return Self::new(e.re - 1.0, e.im);
                        }
                        if x == 0.0 && y == 0.0 {
                            // The standard's +0 real part for either zero (the formula
                            // below gives -0 for -0).
                            return Self::new(0.0, y);
                        }
                        // e^x cos y - 1 = expm1(x) cos y - 2 sin²(y/2), exact near 0.
                        let s = (y / 2.0).sin();
                        let im = if y == 0.0 { y } else { x.exp() * y.sin() };
                        Self::new(x.exp_m1() * y.cos() - 2.0 * s * s, im)
                    }
                    UnOp::Log1p => {
                        let (x, y) = (self.re, self.im);
                        if !x.is_finite() || !y.is_finite() || x.abs() > 0.5 || y.abs() > 0.5 {
                            return Self::new(x + 1.0, y).ln();
                        }
                        // ln|1+z| = ½ ln(1 + 2x + x² + y²), exact near 0.
                        let re = 0.5 * (x * (2.0 + x) + y * y).ln_1p();
                        Self::new(re, y.atan2(1.0 + x))
                    }
                    other => unreachable!("{other:?} is not a float function"),
                }
            }
        }
    };
}

complex_type!(
    C64,
    f32,
    C64,
    "A `complex64`: two float32 parts.",
    [
        cexpf, clogf, csqrtf, csinf, ccosf, ctanf, csinhf, ccoshf, ctanhf, casinf, cacosf, catanf, casinhf, cacoshf,
        catanhf, cpowf
    ]
);
complex_type!(
    C128,
    f64,
    C128,
    "A `complex128`: two float64 parts.",
    [cexp, clog, csqrt, csin, ccos, ctan, csinh, ccosh, ctanh, casin, cacos, catan, casinh, cacosh, catanh, cpow]
);

impl From<C64> for C128 {
    fn from(z: C64) -> C128 {
        C128::new(z.re.into(), z.im.into())
    }
}

impl From<C128> for C64 {
    fn from(z: C128) -> C64 {
        C64::new(z.re as f32, z.im as f32)
    }
}

/// The C library's complex functions (libm, linked by the standard library on Unix).
mod libm {
    use super::{C64, C128};

    unsafe extern "C" {
        pub(super) fn cexp(z: C128) -> C128;
        pub(super) fn clog(z: C128) -> C128;
        pub(super) fn csqrt(z: C128) -> C128;
        pub(super) fn csin(z: C128) -> C128;
        pub(super) fn ccos(z: C128) -> C128;
        pub(super) fn ctan(z: C128) -> C128;
        pub(super) fn csinh(z: C128) -> C128;
        pub(super) fn ccosh(z: C128) -> C128;
        pub(super) fn ctanh(z: C128) -> C128;
        pub(super) fn casin(z: C128) -> C128;
        pub(super) fn cacos(z: C128) -> C128;
        pub(super) fn catan(z: C128) -> C128;
        pub(super) fn casinh(z: C128) -> C128;
        pub(super) fn cacosh(z: C128) -> C128;
        pub(super) fn catanh(z: C128) -> C128;
        pub(super) fn cpow(z: C128, w: C128) -> C128;
        pub(super) fn cexpf(z: C64) -> C64;
        pub(super) fn clogf(z: C64) -> C64;
        pub(super) fn csqrtf(z: C64) -> C64;
        pub(super) fn csinf(z: C64) -> C64;
        pub(super) fn ccosf(z: C64) -> C64;
        pub(super) fn ctanf(z: C64) -> C64;
        pub(super) fn csinhf(z: C64) -> C64;
        pub(super) fn ccoshf(z: C64) -> C64;
        pub(super) fn ctanhf(z: C64) -> C64;
        pub(super) fn casinf(z: C64) -> C64;
        pub(super) fn cacosf(z: C64) -> C64;
        pub(super) fn catanf(z: C64) -> C64;
        pub(super) fn casinhf(z: C64) -> C64;
        pub(super) fn cacoshf(z: C64) -> C64;
        pub(super) fn catanhf(z: C64) -> C64;
        pub(super) fn cpowf(z: C64, w: C64) -> C64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_and_order_follow_numpy() {
        let (a, b) = (C128::new(1.0, 2.0), C128::new(3.0, -1.0));
        assert_eq!(a.mul(b), C128::new(5.0, 5.0));
        let q = a.div(b);
        assert!((q.re - 0.1).abs() < 1e-15 && (q.im - 0.7).abs() < 1e-15, "{q:?}");
        assert!(C128::new(1.0, 5.0) < C128::new(2.0, 0.0));
        assert!(C128::new(1.0, 0.0) < C128::new(1.0, 1.0));
        assert_eq!(C128::new(f64::NAN, 0.0).partial_cmp(&C128::new(1.0, 0.0)), None);
        assert!(C128::new(1.0, f64::NAN).maximum(C128::new(5.0, 0.0)).has_nan());
        assert_eq!(C128::new(0.0, 2.0).pow(C128::new(2.0, 0.0)), C128::new(-4.0, 0.0));
        assert_eq!(C128::new(3.0, 4.0).signum(), C128::new(0.6, 0.8));
    }

    #[test]
    fn functions_keep_annex_g_special_cases() {
        let e = C128::new(0.0, 0.0).exp();
        assert_eq!((e.re, e.im), (1.0, 0.0));
        let l = C128::new(-0.0, 0.0).ln();
        assert!(l.re == f64::NEG_INFINITY && l.im == std::f64::consts::PI, "{l:?}");
        let s = C128::new(f64::NEG_INFINITY, 1.0).sqrt();
        assert!(s.re == 0.0 && s.im == f64::INFINITY, "{s:?}");
        let m = C128::new(1e-20, 1e-20).func(UnOp::Expm1);
        assert!((m.re - 1e-20).abs() < 1e-35 && (m.im - 1e-20).abs() < 1e-35, "{m:?}");
        let p = C128::new(1e-20, 0.0).func(UnOp::Log1p);
        assert_eq!(p.re, 1e-20);
        let f = C64::new(0.0, 1.0).func(UnOp::Asinh);
        assert!((f.im - std::f32::consts::FRAC_PI_2).abs() < 1e-6, "{f:?}");
    }
}
