//! Element-wise nodes on typed buffers, through the engine's scalar core
//! (`ares_tileable::scalar`): its kernels and numpy's dtype rules.

use super::{BinOp, ScanOp, UnOp};
use crate::data::{Buf, DType, Elem};
use crate::with_buf;
use ares_tileable::scalar::Num;

pub(super) fn unary(op: UnOp, x: Buf, out: DType) -> Buf {
    use ares_tileable::scalar::{float_unary, predicate, unary_kernel};
    if op.is_predicate() {
        return Buf::Bool(with_buf!(&x, v => predicate(op, v)));
    }
    if x.dtype().is_complex() && !out.is_complex() && op != UnOp::Not {
        return complex_to_real(op, x).cast(out);
    }
    let x = match op {
        UnOp::Not => x.cast(DType::Bool),
        // numpy rounds integers to tens and above in float64.
        UnOp::Round(d) if d < 0 && !x.dtype().is_float() => {
            return unary(op, x.cast(DType::F64), DType::F64).cast(out);
        }
        // Float functions compute in the result's float; a boolean squares in int8.
        _ => x.cast(out),
    };
    match x {
        Buf::F32(v) => Buf::F32(float_unary(op, v)),
        Buf::F64(v) => Buf::F64(float_unary(op, v)),
        Buf::C64(v) => Buf::C64(complex_unary(op, v)),
        Buf::C128(v) => Buf::C128(complex_unary(op, v)),
        other => with_buf!(other, v => Elem::wrap(unary_kernel(op, v))),
    }
}

/// `op x` of complex numbers whose result is complex.
fn complex_unary<T: Elem + ares_tileable::scalar::Float>(op: UnOp, mut x: Vec<T>) -> Vec<T> {
    if op == UnOp::Conj {
        for v in &mut x {
            let c = v.to_c128();
            *v = T::from_c128(ares_tileable::scalar::C128::new(c.re, -c.im));
        }
        return x;
    }
    ares_tileable::scalar::float_unary(op, x)
}

/// `op x` of complex numbers whose result is real: the magnitude (`abs`) or a part.
fn complex_to_real(op: UnOp, x: Buf) -> Buf {
    fn parts<T: Elem>(op: UnOp, v: &[T]) -> Vec<f64> {
        v.iter()
            .map(|z| {
                let c = z.to_c128();
                match op {
                    UnOp::Abs => c.norm(),
                    UnOp::Real => c.re,
                    UnOp::Imag => c.im,
                    other => unreachable!("{other:?} of a complex number is complex"),
                }
            })
            .collect()
    }
    match &x {
        // complex64's parts are float32: computed in float64 and rounded once.
        Buf::C64(v) => Buf::F64(parts(op, v)).cast(DType::F32),
        other => with_buf!(other, v => Buf::F64(parts(op, v))),
    }
}

/// numpy's refusal of an integer raised to a negative integer power (it has no integer
/// answer); the message is numpy's, with the fix.
pub const NEGATIVE_INTEGER_POWER: &str =
    "Integers to negative integer powers are not allowed (cast the base to float first)";

/// The dtypes `a op b` computes in and returns (numpy's rules, the engine's
/// [`ares_tileable::scalar::binary`]), if numpy accepts it and tensors have them.
pub fn binary_types(op: BinOp, a: DType, b: DType) -> Option<(DType, DType)> {
    use ares_tileable::scalar::Operand;
    let t = ares_tileable::scalar::binary(op, Operand::Array(a), Operand::Array(b)).ok()?;
    Some((Some(t.compute)?, Some(t.out)?))
}

/// The dtype a binary operation computes in.
pub fn compute_dtype(op: BinOp, a: DType, b: DType) -> DType {
    binary_types(op, a, b).map_or_else(|| DType::promote(a, b), |t| t.0)
}

/// The dtype a binary operation returns.
pub fn binary_dtype(op: BinOp, a: DType, b: DType) -> DType {
    binary_types(op, a, b).map_or_else(|| DType::promote(a, b), |t| t.1)
}

/// `a op b`, both cast to the dtype it computes in; a one-element right operand (a
/// constant) is applied as a scalar.
pub(super) fn binary(op: BinOp, a: Buf, b: Buf) -> Result<Buf, ares_tileable::scalar::OpError> {
    use ares_tileable::scalar::{Rhs, arith, compare, logical};
    let t = compute_dtype(op, a.dtype(), b.dtype());
    let (a, b) = (a.cast(t), b.cast(t));
    debug_assert!(b.len() == a.len() || b.len() == 1, "operands of {op:?} differ in length");
    fn typed<T: Elem>(op: BinOp, x: Vec<T>, y: Vec<T>) -> Result<Buf, ares_tileable::scalar::OpError> {
        let rhs = if y.len() == 1 && x.len() != 1 { Rhs::Scalar(y[0]) } else { Rhs::Slice(&y) };
        Ok(if op.is_comparison() { Buf::Bool(compare(op, &x, rhs)) } else { T::wrap(arith(op, x, rhs)?) })
    }
    match (a, b) {
        (Buf::Bool(x), Buf::Bool(y)) if matches!(op, BinOp::And | BinOp::Or) => {
            let rhs = if y.len() == 1 && x.len() != 1 { Rhs::Scalar(y[0]) } else { Rhs::Slice(&y) };
            Ok(Buf::Bool(logical(op, x, rhs)))
        }
        (a, b) => {
            with_buf!(a, x => typed(op, x, Elem::into_vec(b).unwrap_or_else(|| unreachable!("both cast to {t:?}"))))
        }
    }
}

pub(super) fn select(c: Buf, a: Buf, b: Buf, out: DType) -> Buf {
    let Buf::Bool(c) = c.cast(DType::Bool) else { unreachable!("cast to bool") };
    let (a, b) = (a.cast(out), b.cast(out));
    fn pick<T: Elem>(c: &[bool], a: &[T], b: Buf) -> Buf {
        let b = T::into_vec(b).unwrap_or_else(|| unreachable!("both cast to {:?}", T::DTYPE));
        T::wrap(c.iter().zip(a.iter().zip(&b)).map(|(&c, (&x, &y))| if c { x } else { y }).collect())
    }
    with_buf!(&a, x => pick(&c, x, b))
}

/// The running `op` of `x` (laid out as `outer × len × inner`) along its middle axis,
/// each lane starting from `seed`'s value (`outer × inner`) when given. Integers wrap,
/// as numpy's `cumsum` and `cumprod` do.
pub(super) fn scan(op: ScanOp, x: Buf, seed: Option<Buf>, outer: usize, len: usize, inner: usize) -> Buf {
    fn typed<T: Num>(
        op: ScanOp,
        mut v: Vec<T>,
        seed: Option<Vec<T>>,
        outer: usize,
        len: usize,
        inner: usize,
    ) -> Vec<T> {
        let f = |a: T, b: T| match op {
            ScanOp::Sum => a.add(b),
            ScanOp::Prod => a.mul(b),
        };
        for o in 0..outer {
            let base = o * len * inner;
            if let (Some(c), true) = (&seed, len > 0) {
                for i in 0..inner {
                    v[base + i] = f(c[o * inner + i], v[base + i]);
                }
            }
            for k in 1..len {
                let (prev, cur) = (base + (k - 1) * inner, base + k * inner);
                for i in 0..inner {
                    v[cur + i] = f(v[prev + i], v[cur + i]);
                }
            }
        }
        v
    }
    with_buf!(x, v => Elem::wrap(typed(op, v, seed.map(|c| Elem::into_vec(c).unwrap_or_else(|| unreachable!("cast alike"))), outer, len, inner)))
}
