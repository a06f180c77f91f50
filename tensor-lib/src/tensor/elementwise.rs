//! Element-wise operations: unary and binary ones with numpy's broadcasting and
//! promotion, comparisons, `where`, casts, and the operators on `&Tensor`.

use super::{Op, Result, Tensor, TensorError, UNKNOWN};
use crate::data::{DType, Scalar};
use crate::kernel::{BinOp, UnOp};

impl Tensor {
    /// `op` of each element (numpy's ufunc of that name: `floor`, `tanh`, `isnan`, …),
    /// with numpy's result dtype, or [`TensorError::BadDType`] where numpy refuses it.
    pub fn unary_op(&self, op: UnOp) -> Result<Tensor> {
        self.unary(op)
    }

    pub(super) fn unary(&self, op: UnOp) -> Result<Tensor> {
        let d = self.dtype();
        let bad = |e: String| TensorError::BadDType { op: e, dtype: d };
        let out = ares_tileable::scalar::unary(op, d).map_err(|e| bad(e.0))?;
        let out = Some(out).ok_or_else(|| bad(format!("{op:?} giving {}", out.name())))?;
        Ok(Tensor::new(Op::Unary(op, self.clone()), self.shape().to_vec(), out, self.chunks().to_vec()))
    }

    /// Element-wise `a op b` with numpy broadcasting and type promotion.
    pub fn binary(&self, op: BinOp, other: &Tensor) -> Result<Tensor> {
        use ares_tileable::scalar::Operand;
        let (da, db) = (self.dtype(), other.dtype());
        let bad = |e: String| TensorError::BadDType { op: e, dtype: self.dtype() };
        let typed = ares_tileable::scalar::binary(op, Operand::Array(da), Operand::Array(db)).map_err(|e| bad(e.0))?;
        // numpy gives int8 for `//`, `%` and `**` of booleans, not a dtype here yet.
        let dtype = Some(typed.out).ok_or_else(|| {
            bad(format!("{} of {} and {} (numpy gives {})", op.symbol(), da.name(), db.name(), typed.out.name()))
        })?;
        let [a, b] = unify_all([self, other]);
        let (shape, chunks) = broadcast(&a, &b)?;
        Ok(Tensor::new(Op::Binary(op, a, b), shape, dtype, chunks))
    }

    /// Element-wise with a scalar.
    pub fn binary_scalar(&self, op: BinOp, s: Scalar) -> Result<Tensor> {
        self.binary(op, &full_like_scalar(self.python_scalar(s), self))
    }

    /// `s op x` for a Python scalar `s` on the left (`2 - x`), with the same value-based
    /// casting as [`Tensor::binary_scalar`].
    pub fn rbinary_scalar(&self, op: BinOp, s: Scalar) -> Result<Tensor> {
        full_like_scalar(self.python_scalar(s), self).binary(op, self)
    }

    /// A Python scalar in an expression with this tensor: Python scalars do not upcast
    /// arrays (numpy's value-based casting), so it takes the array's kind unless it is a
    /// float and the array is not.
    fn python_scalar(&self, s: Scalar) -> Scalar {
        match (s, self.dtype()) {
            (Scalar::F64(v), DType::F32) => Scalar::F32(v as f32),
            // An int the array's integer dtype cannot hold stays int64 (numpy 2 refuses
            // it; wrapping would compare and compute with another number).
            (Scalar::I64(v), d) if d.is_integer() => match d.int_range() {
                Some((lo, hi)) if (lo..=hi).contains(&i128::from(v)) => s.cast(d),
                _ => s,
            },
            (Scalar::I64(v), DType::F32) => Scalar::F32(v as f32),
            (Scalar::I64(v), DType::F64) => Scalar::F64(v as f64),
            // A real with complex64, or a complex with float32, stays 32-bit.
            (Scalar::F64(_) | Scalar::I64(_) | Scalar::C128(_), DType::C64 | DType::F32) => s.cast(DType::C64),
            (s, _) => s,
        }
    }

    /// The complex tensor `re + im·i` of two real tensors (broadcast together; complex64
    /// when both are float32, else complex128).
    pub fn complex(re: &Tensor, im: &Tensor) -> Result<Tensor> {
        let dtype = DType::promote(re.dtype().real(), im.dtype().real()).complex();
        if re.dtype().is_complex() || im.dtype().is_complex() {
            return Err(TensorError::BadDType { op: "complex(re, im) of real parts".into(), dtype });
        }
        // (x + 0i)·i is exactly (±0 + xi) for a finite x; the parts then add exactly.
        let i = Scalar::C128(crate::data::C128::new(0.0, 1.0)).cast(dtype);
        re.astype_if(dtype).binary(BinOp::Add, &im.astype_if(dtype).binary(BinOp::Mul, &full_like_scalar(i, im))?)
    }

    /// Floor division `self // y` (Python's: rounded toward minus infinity; an integer
    /// divided by 0 is 0, as numpy gives it).
    pub fn floor_divide(&self, y: &Tensor) -> Result<Tensor> {
        self.binary(BinOp::FloorDiv, y)
    }

    /// The remainder `self % y`, with the divisor's sign (Python's; 0 for an integer
    /// divided by 0, as numpy).
    pub fn remainder(&self, y: &Tensor) -> Result<Tensor> {
        self.binary(BinOp::Mod, y)
    }

    /// `sqrt(x)`.
    pub fn sqrt(&self) -> Tensor {
        self.unary(UnOp::Sqrt).expect("unary ops accept every dtype")
    }
    /// `exp(x)`.
    pub fn exp(&self) -> Tensor {
        self.unary(UnOp::Exp).expect("unary ops accept every dtype")
    }
    /// `ln(x)`.
    pub fn log(&self) -> Tensor {
        self.unary(UnOp::Log).expect("unary ops accept every dtype")
    }
    /// `sin(x)`.
    pub fn sin(&self) -> Tensor {
        self.unary(UnOp::Sin).expect("unary ops accept every dtype")
    }
    /// `cos(x)`.
    pub fn cos(&self) -> Tensor {
        self.unary(UnOp::Cos).expect("unary ops accept every dtype")
    }
    /// `|x|`.
    pub fn abs(&self) -> Tensor {
        self.unary(UnOp::Abs).expect("unary ops accept every dtype")
    }
    /// Logical not.
    pub fn not(&self) -> Tensor {
        self.unary(UnOp::Not).expect("unary ops accept every dtype")
    }
    /// `x ** p`.
    pub fn pow(&self, p: &Tensor) -> Result<Tensor> {
        self.binary(BinOp::Pow, p)
    }
    /// `x < y`.
    pub fn lt(&self, y: &Tensor) -> Result<Tensor> {
        self.binary(BinOp::Lt, y)
    }
    /// `x <= y`.
    pub fn le(&self, y: &Tensor) -> Result<Tensor> {
        self.binary(BinOp::Le, y)
    }
    /// `x > y`.
    pub fn gt(&self, y: &Tensor) -> Result<Tensor> {
        self.binary(BinOp::Gt, y)
    }
    /// `x >= y`.
    pub fn ge(&self, y: &Tensor) -> Result<Tensor> {
        self.binary(BinOp::Ge, y)
    }
    /// `x == y`.
    pub fn equal(&self, y: &Tensor) -> Result<Tensor> {
        self.binary(BinOp::Eq, y)
    }
    /// `x != y`.
    pub fn not_equal(&self, y: &Tensor) -> Result<Tensor> {
        self.binary(BinOp::Ne, y)
    }
    /// Logical and.
    pub fn and(&self, y: &Tensor) -> Result<Tensor> {
        self.binary(BinOp::And, y)
    }
    /// Logical or.
    pub fn or(&self, y: &Tensor) -> Result<Tensor> {
        self.binary(BinOp::Or, y)
    }
    /// Element-wise maximum.
    pub fn maximum(&self, y: &Tensor) -> Result<Tensor> {
        self.binary(BinOp::Maximum, y)
    }
    /// Element-wise minimum.
    pub fn minimum(&self, y: &Tensor) -> Result<Tensor> {
        self.binary(BinOp::Minimum, y)
    }
    /// `x < s` for a scalar.
    pub fn lt_scalar(&self, s: f64) -> Tensor {
        self.binary_scalar(BinOp::Lt, Scalar::F64(s)).expect("a scalar broadcasts to anything")
    }
    /// `x > s` for a scalar.
    pub fn gt_scalar(&self, s: f64) -> Tensor {
        self.binary_scalar(BinOp::Gt, Scalar::F64(s)).expect("a scalar broadcasts to anything")
    }
    /// `x >= s` for a scalar.
    pub fn ge_scalar(&self, s: f64) -> Tensor {
        self.binary_scalar(BinOp::Ge, Scalar::F64(s)).expect("a scalar broadcasts to anything")
    }
    /// `x <= s` for a scalar.
    pub fn le_scalar(&self, s: f64) -> Tensor {
        self.binary_scalar(BinOp::Le, Scalar::F64(s)).expect("a scalar broadcasts to anything")
    }
    /// `x == s` for a scalar.
    pub fn eq_scalar(&self, s: f64) -> Tensor {
        self.binary_scalar(BinOp::Eq, Scalar::F64(s)).expect("a scalar broadcasts to anything")
    }
    /// Clips to `[lo, hi]`.
    pub fn clip(&self, lo: f64, hi: f64) -> Tensor {
        let lo_t = self.binary_scalar(BinOp::Maximum, Scalar::F64(lo)).expect("scalar");
        lo_t.binary_scalar(BinOp::Minimum, Scalar::F64(hi)).expect("scalar")
    }
    pub(super) fn astype_if(&self, dtype: DType) -> Tensor {
        if self.dtype() == dtype { self.clone() } else { self.astype(dtype) }
    }

    /// Cast to `dtype` (numpy `astype`).
    pub fn astype(&self, dtype: DType) -> Tensor {
        Tensor::new(Op::Cast(self.clone()), self.shape().to_vec(), dtype, self.chunks().to_vec())
    }
}

fn full_like_scalar(s: Scalar, like: &Tensor) -> Tensor {
    // A 0-d tensor broadcasts to anything.
    let _ = like;
    Tensor::new(Op::Full(s), Vec::new(), s.dtype(), Vec::new())
}

/// Operands chunked differently along a dimension of the same length (`x[1:] - x[:-1]`,
/// a reversed view plus the original, a mask combined with another tensor) are rechunked
/// alike, as Dask does: along each dimension of the broadcast shape, every operand
/// spanning it takes the chunks of the largest such operand (most dimensions, then most
/// elements, the first on a tie), so the one with fewer elements moves; operands of
/// extent 1 there broadcast and keep theirs. All operands at once: unifying pair by
/// pair could undo an earlier pair's rechunk. While a length is not known the operands
/// are returned unchanged (they are unified again when the expression is rebuilt).
fn unify_all<const N: usize>(ts: [&Tensor; N]) -> [Tensor; N] {
    if ts.iter().any(|t| t.has_unknown_shape()) {
        return ts.map(|t| t.clone());
    }
    let nd = ts.iter().map(|t| t.ndim()).max().unwrap_or(0);
    // Operand `i`'s dimension for output dimension `d`, when it has one.
    let dim = |t: &Tensor, d: usize| (d + t.ndim()).checked_sub(nd);
    let mut grids: Vec<Vec<Vec<u64>>> = ts.iter().map(|t| t.chunks().to_vec()).collect();
    for d in 0..nd {
        let extent = ts.iter().filter_map(|t| dim(t, d).map(|k| t.shape()[k])).max().unwrap_or(1);
        if extent <= 1 {
            continue;
        }
        let leader = ts
            .iter()
            .filter(|t| dim(t, d).is_some_and(|k| t.shape()[k] == extent))
            .rev()
            .max_by_key(|t| (t.ndim(), t.size()))
            .expect("some operand has the extent");
        let chunks = leader.chunks()[dim(leader, d).expect("leads")].clone();
        for (t, grid) in ts.iter().zip(grids.iter_mut()) {
            if let Some(k) = dim(t, d).filter(|&k| t.shape()[k] == extent) {
                grid[k] = chunks.clone();
            }
        }
    }
    let mut i = 0;
    ts.map(|t| {
        let grid = std::mem::take(&mut grids[i]);
        i += 1;
        if grid == t.chunks() { t.clone() } else { t.rechunk_to(grid) }
    })
}

/// numpy broadcasting of two operands' shapes and chunk grids.
fn broadcast(a: &Tensor, b: &Tensor) -> Result<(Vec<u64>, Vec<Vec<u64>>)> {
    let nd = a.ndim().max(b.ndim());
    let pad = |t: &Tensor| -> (Vec<u64>, Vec<Vec<u64>>) {
        let k = nd - t.ndim();
        let mut s = vec![1; k];
        s.extend_from_slice(t.shape());
        let mut c = vec![vec![1]; k];
        c.extend_from_slice(t.chunks());
        (s, c)
    };
    let (sa, ca) = pad(a);
    let (sb, cb) = pad(b);
    let mut shape = Vec::with_capacity(nd);
    let mut chunks = Vec::with_capacity(nd);
    for d in 0..nd {
        match (sa[d], sb[d]) {
            (x, y) if (x == UNKNOWN) != (y == UNKNOWN) && x != 1 && y != 1 => {
                return Err(TensorError::UnknownShape { op: "broadcasting against a known length".into() });
            }
            // Length 1 in one chunk broadcasts against any split of length 1 (a mask's
            // result can come out as `[1, 0]`).
            (1, 1) if ca[d] != cb[d] && (ca[d].len() == 1 || cb[d].len() == 1) => {
                shape.push(1);
                chunks.push(if ca[d].len() == 1 { cb[d].clone() } else { ca[d].clone() });
            }
            (x, y) if x == y => {
                // Two unknown lengths (two masks' results), or chunks of unknown lengths
                // (a sample sort's), are lined up, or found to differ, when the
                // expression is rebuilt on the known ones.
                let pending = x == UNKNOWN || ca[d].contains(&UNKNOWN) || cb[d].contains(&UNKNOWN);
                if ca[d] != cb[d] && !pending {
                    return Err(TensorError::ChunkMismatch { dim: d, a: ca[d].clone(), b: cb[d].clone() });
                }
                shape.push(x);
                chunks.push(ca[d].clone());
            }
            (1, y) => {
                shape.push(y);
                chunks.push(cb[d].clone());
            }
            (x, 1) => {
                shape.push(x);
                chunks.push(ca[d].clone());
            }
            _ => return Err(TensorError::ShapeMismatch { a: a.shape().to_vec(), b: b.shape().to_vec() }),
        }
    }
    Ok((shape, chunks))
}

macro_rules! ops {
    ($trait:ident, $method:ident, $op:expr) => {
        impl std::ops::$trait<&Tensor> for &Tensor {
            type Output = Tensor;
            /// Panics if the operands cannot be broadcast; use [`Tensor::binary`] for a `Result`.
            fn $method(self, rhs: &Tensor) -> Tensor {
                self.binary($op, rhs).unwrap_or_else(|e| panic!("{e}"))
            }
        }
        impl std::ops::$trait<Tensor> for Tensor {
            type Output = Tensor;
            fn $method(self, rhs: Tensor) -> Tensor {
                (&self).$method(&rhs)
            }
        }
        impl std::ops::$trait<&Tensor> for Tensor {
            type Output = Tensor;
            fn $method(self, rhs: &Tensor) -> Tensor {
                (&self).$method(rhs)
            }
        }
        impl std::ops::$trait<Tensor> for &Tensor {
            type Output = Tensor;
            fn $method(self, rhs: Tensor) -> Tensor {
                self.$method(&rhs)
            }
        }
        impl std::ops::$trait<f64> for &Tensor {
            type Output = Tensor;
            fn $method(self, rhs: f64) -> Tensor {
                self.binary_scalar($op, Scalar::F64(rhs)).unwrap_or_else(|e| panic!("{e}"))
            }
        }
        impl std::ops::$trait<f64> for Tensor {
            type Output = Tensor;
            fn $method(self, rhs: f64) -> Tensor {
                (&self).$method(rhs)
            }
        }
    };
}
ops!(Add, add, BinOp::Add);
ops!(Sub, sub, BinOp::Sub);
ops!(Mul, mul, BinOp::Mul);
ops!(Div, div, BinOp::Div);
ops!(Rem, rem, BinOp::Mod);

impl std::ops::Neg for &Tensor {
    type Output = Tensor;
    /// Panics for a boolean tensor, as numpy refuses it; use [`Tensor::negate`] for a `Result`.
    fn neg(self) -> Tensor {
        self.negate().unwrap_or_else(|e| panic!("{e}"))
    }
}

impl Tensor {
    /// `-x` (numpy refuses booleans).
    pub fn negate(&self) -> Result<Tensor> {
        self.unary(UnOp::Neg)
    }
}

/// `c ? a : b`, element-wise with broadcasting.
pub fn where_(c: &Tensor, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    // All three on one grid: pairwise unifying can undo an earlier pair's rechunk.
    let [c, a, b] = unify_all([c, a, b]);
    let (a, b) = (&a, &b);
    let c = &c;
    let ab = a.binary(BinOp::Add, b)?;
    let probe = Tensor::new(Op::Full(Scalar::Bool(false)), ab.shape().to_vec(), DType::Bool, ab.chunks().to_vec());
    let (shape, chunks) = broadcast(c, &probe)?;
    let dtype = DType::promote(a.dtype(), b.dtype());
    Ok(Tensor::new(Op::Where(c.clone(), a.clone(), b.clone()), shape, dtype, chunks))
}
