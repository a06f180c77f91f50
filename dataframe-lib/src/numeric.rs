//! Column arithmetic through the engine's scalar core (`ares_tileable::scalar`): the
//! same kernels and numpy rules a tensor chunk computes with (`+ - * / // % **`,
//! maximum, minimum, `abs`, `round`), on the columns' Arrow buffers, and `clip`. Missing
//! values (null) stay missing.
//!
//! Where pandas differs from numpy it is said here: an integer divided (`//`, `%`) by 0
//! is missing (pandas makes the column float with `inf` or `NaN` there, a dtype that
//! depends on the values; numpy gives 0).

use ares_tileable::scalar::{self, BinOp, Num, Rhs, UnOp};
use polars::prelude::*;
use polars_arrow::bitmap::Bitmap;
use polars_arrow::compute::utils::combine_validities_and;

/// The engine's dtype of a numeric (or boolean) polars dtype.
pub(crate) fn core(d: &DataType) -> Option<scalar::DType> {
    use scalar::DType as C;
    Some(match d {
        DataType::Boolean => C::Bool,
        DataType::Int32 => C::I32,
        DataType::Int64 => C::I64,
        DataType::UInt32 => C::U32,
        DataType::UInt64 => C::U64,
        DataType::Float32 => C::F32,
        DataType::Float64 => C::F64,
        _ => return None,
    })
}

/// The polars dtype of an engine dtype, for those frames hold.
pub(crate) fn of_core(d: scalar::DType) -> Option<DataType> {
    use scalar::DType as C;
    Some(match d {
        C::Bool => DataType::Boolean,
        C::I32 => DataType::Int32,
        C::I64 => DataType::Int64,
        C::U32 => DataType::UInt32,
        C::U64 => DataType::UInt64,
        C::F32 => DataType::Float32,
        C::F64 => DataType::Float64,
        _ => return None,
    })
}

fn failed(e: scalar::OpError) -> PolarsError {
    polars_err!(ComputeError: "{e} (numpy's rule): make the base a float first (astype(float))")
}

/// `a op b` for an arithmetic operation, `maximum` or `minimum`, both columns already
/// of the dtype it computes in.
pub(crate) fn binary(op: BinOp, a: &Series, b: &Series) -> PolarsResult<Series> {
    let name = a.name().clone();
    macro_rules! typed {
        ($get:ident, $t:ty, $native:ty) => {{
            let (x, y) = (a.$get()?.rechunk(), b.$get()?.rechunk());
            let (x, y) = (x.downcast_as_array(), y.downcast_as_array());
            let mut validity = combine_validities_and(x.validity(), y.validity());
            let valid = |i: usize| validity.as_ref().is_none_or(|v| v.get_bit(i));
            let mut ys: std::borrow::Cow<'_, [$native]> = y.values().as_slice().into();
            if op == BinOp::Pow && validity.is_some() {
                // A missing exponent is no negative one.
                ys = ys.iter().enumerate().map(|(i, &v)| if valid(i) { v } else { 0 as $native }).collect();
            }
            if <$native as Num>::DTYPE.is_integer() && matches!(op, BinOp::FloorDiv | BinOp::Mod) {
                // An integer divided by 0 is missing (pandas), not numpy's 0.
                if ys.iter().any(|&v| v == 0 as $native) {
                    let keep: Bitmap = ys.iter().map(|&v| v != 0 as $native).collect();
                    validity = combine_validities_and(validity.as_ref(), Some(&keep));
                }
            }
            let out = scalar::arith(op, x.values().as_slice().to_vec(), Rhs::Slice(&ys)).map_err(failed)?;
            ChunkedArray::<$t>::from_vec_validity(name.clone(), out, validity).into_series()
        }};
    }
    Ok(match a.dtype() {
        DataType::Int32 => typed!(i32, Int32Type, i32),
        DataType::Int64 => typed!(i64, Int64Type, i64),
        DataType::UInt32 => typed!(u32, UInt32Type, u32),
        DataType::UInt64 => typed!(u64, UInt64Type, u64),
        DataType::Float32 => typed!(f32, Float32Type, f32),
        DataType::Float64 => typed!(f64, Float64Type, f64),
        DataType::Boolean => {
            let (x, y) = (a.bool()?, b.bool()?);
            let xs: Vec<bool> = x.iter().map(|v| v.unwrap_or(false)).collect();
            let ys: Vec<bool> = y.iter().map(|v| v.unwrap_or(false)).collect();
            let out = scalar::arith(op, xs, Rhs::Slice(&ys)).map_err(failed)?;
            let missing: Vec<bool> = x.iter().zip(y.iter()).map(|(p, q)| p.is_none() || q.is_none()).collect();
            out.into_iter().zip(missing).map(|(v, m)| (!m).then_some(v)).collect::<BooleanChunked>().into_series()
        }
        other => polars_bail!(ComputeError: "{} of {other} columns is not supported", op.symbol()),
    }
    .with_name(name))
}

/// `a op b` for a comparison, both columns already of the dtype it compares in: pandas'
/// answer for a missing operand (null, or NaN by IEEE's rules) is false, but true for
/// `!=`.
pub(crate) fn compare(op: BinOp, a: &Series, b: &Series) -> PolarsResult<Series> {
    let name = a.name().clone();
    let missing = op == BinOp::Ne;
    macro_rules! typed {
        ($get:ident) => {{
            let (x, y) = (a.$get()?.rechunk(), b.$get()?.rechunk());
            let (x, y) = (x.downcast_as_array(), y.downcast_as_array());
            let mut out = scalar::compare(op, x.values().as_slice(), Rhs::Slice(y.values().as_slice()));
            if let Some(v) = combine_validities_and(x.validity(), y.validity()) {
                out.iter_mut().enumerate().filter(|(i, _)| !v.get_bit(*i)).for_each(|(_, o)| *o = missing);
            }
            out
        }};
    }
    let out = match a.dtype() {
        DataType::Int32 => typed!(i32),
        DataType::Int64 => typed!(i64),
        DataType::UInt32 => typed!(u32),
        DataType::UInt64 => typed!(u64),
        DataType::Float32 => typed!(f32),
        DataType::Float64 => typed!(f64),
        DataType::Boolean => {
            let (x, y) = (a.bool()?, b.bool()?);
            let xs: Vec<bool> = x.iter().map(|v| v.unwrap_or(false)).collect();
            let ys: Vec<bool> = y.iter().map(|v| v.unwrap_or(false)).collect();
            let mut out = scalar::compare(op, &xs, Rhs::Slice(&ys));
            for (o, (p, q)) in out.iter_mut().zip(x.iter().zip(y.iter())) {
                if p.is_none() || q.is_none() {
                    *o = missing;
                }
            }
            out
        }
        other => polars_bail!(ComputeError: "{} of {other} columns is not supported", op.symbol()),
    };
    Ok(BooleanChunked::from_slice(name, &out).into_series())
}

/// `op s` for `abs` or `round` (numpy's: half to even; integers are unchanged unless
/// rounded to tens or above, done in float64), keeping the dtype.
pub(crate) fn unary(op: UnOp, s: &Series) -> PolarsResult<Series> {
    let name = s.name().clone();
    if let UnOp::Round(d) = op {
        if s.dtype().is_integer() {
            if d >= 0 {
                return Ok(s.clone());
            }
            let f = unary(op, &s.cast(&DataType::Float64)?)?;
            return Ok(f.cast(s.dtype())?.with_name(name));
        }
    }
    macro_rules! typed {
        ($get:ident, $t:ty, $kernel:path) => {{
            let x = s.$get()?.rechunk();
            let x = x.downcast_as_array();
            let out = $kernel(op, x.values().as_slice().to_vec());
            ChunkedArray::<$t>::from_vec_validity(name.clone(), out, x.validity().cloned()).into_series()
        }};
    }
    Ok(match s.dtype() {
        DataType::Int32 => typed!(i32, Int32Type, scalar::unary_kernel),
        DataType::Int64 => typed!(i64, Int64Type, scalar::unary_kernel),
        DataType::UInt32 => typed!(u32, UInt32Type, scalar::unary_kernel),
        DataType::UInt64 => typed!(u64, UInt64Type, scalar::unary_kernel),
        DataType::Float32 => typed!(f32, Float32Type, scalar::float_unary),
        DataType::Float64 => typed!(f64, Float64Type, scalar::float_unary),
        other => polars_bail!(ComputeError: "{op:?} of a {other} column"),
    }
    .with_name(name))
}

/// `abs` (numpy's: the most negative integer stays itself).
pub(crate) fn abs(s: &Series) -> PolarsResult<Series> {
    unary(UnOp::Abs, s)
}

/// numpy's `round(x, decimals)`.
pub(crate) fn round(s: &Series, decimals: i32) -> PolarsResult<Series> {
    unary(UnOp::Round(decimals), s)
}

/// Values below `lo` become `lo`, above `hi` become `hi` (either bound may be absent);
/// missing values stay missing. `s` already has the result's dtype.
pub(crate) fn clip(s: &Series, lo: Option<f64>, hi: Option<f64>) -> PolarsResult<Series> {
    let f = move |x: f64| {
        let x = lo.map_or(x, |l| if x < l { l } else { x });
        hi.map_or(x, |h| if x > h { h } else { x })
    };
    let dt = s.dtype().clone();
    let out = if dt.is_float() {
        let v = s.cast(&DataType::Float64)?;
        v.f64()?.apply_values(f).into_series()
    } else if dt == DataType::Int32 {
        s.i32()?.apply_values(|x| f(x as f64) as i32).into_series()
    } else if dt.is_integer() {
        let v = s.cast(&DataType::Int64)?;
        v.i64()?.apply_values(|x| f(x as f64) as i64).into_series()
    } else {
        polars_bail!(ComputeError: "clip of a {dt} column")
    };
    Ok(out.cast(&dt)?.with_name(s.name().clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_division_by_zero_is_missing_and_nulls_stay_missing() {
        let a = Series::new("a".into(), [Some(7i64), Some(-7), None, Some(1)]);
        let b = Series::new("b".into(), [Some(-2i64), Some(2), Some(3), Some(0)]);
        let q = binary(BinOp::FloorDiv, &a, &b).unwrap();
        assert_eq!(q.i64().unwrap().iter().collect::<Vec<_>>(), [Some(-4), Some(-4), None, None]);
        let m = binary(BinOp::Mod, &a, &b).unwrap();
        assert_eq!(m.i64().unwrap().iter().collect::<Vec<_>>(), [Some(-1), Some(1), None, None]);
        let f = binary(BinOp::FloorDiv, &Series::new("f".into(), [1.0f64]), &Series::new("g".into(), [0.0f64]));
        assert!(f.unwrap().f64().unwrap().get(0).unwrap().is_infinite(), "numpy: 1.0 // 0.0 is inf");
    }

    #[test]
    fn comparisons_with_a_missing_value_are_false_but_not_equal_is_true() {
        let a = Series::new("a".into(), [Some(1.0f64), None, Some(f64::NAN), Some(3.0)]);
        let b = Series::new("b".into(), [2.0f64, 2.0, 2.0, 2.0]);
        let lt = compare(BinOp::Lt, &a, &b).unwrap();
        assert_eq!(lt.bool().unwrap().iter().collect::<Vec<_>>(), [Some(true), Some(false), Some(false), Some(false)]);
        let ne = compare(BinOp::Ne, &a, &b).unwrap();
        assert_eq!(ne.bool().unwrap().iter().collect::<Vec<_>>(), [Some(true); 4]);
    }

    #[test]
    fn powers_round_and_abs_follow_numpy() {
        let i = Series::new("i".into(), [Some(2i64), None, Some(-3)]);
        let p = binary(BinOp::Pow, &i, &Series::new("".into(), [Some(3i64), None, Some(2)])).unwrap();
        assert_eq!(p.i64().unwrap().iter().collect::<Vec<_>>(), [Some(8), None, Some(9)]);
        let e = binary(BinOp::Pow, &i, &Series::new("".into(), [-1i64, 1, 1])).unwrap_err();
        assert!(e.to_string().contains("negative integer powers"), "{e}");
        let f = Series::new("f".into(), [0.5, 1.5, 2.5, -0.5, 1.234]);
        let r = round(&f, 0).unwrap();
        assert_eq!(r.f64().unwrap().into_no_null_iter().collect::<Vec<_>>(), [0.0, 2.0, 2.0, -0.0, 1.0]);
        assert_eq!(round(&f, 2).unwrap().f64().unwrap().get(4), Some(1.23));
        let tens = round(&Series::new("n".into(), [15i64, 25, -35]), -1).unwrap();
        assert_eq!(tens.i64().unwrap().into_no_null_iter().collect::<Vec<_>>(), [20, 20, -40]);
        let a = abs(&Series::new("a".into(), [i32::MIN, -4])).unwrap();
        assert_eq!(a.i32().unwrap().into_no_null_iter().collect::<Vec<_>>(), [i32::MIN, 4]);
        let c = clip(&Series::new("c".into(), [Some(1.0), None, Some(f64::NAN), Some(9.0)]), Some(2.0), Some(5.0));
        let c: Vec<Option<f64>> = c.unwrap().f64().unwrap().iter().collect();
        assert_eq!((c[0], c[1], c[3]), (Some(2.0), None, Some(5.0)));
        assert!(c[2].unwrap().is_nan(), "NaN stays NaN, as pandas' clip");
    }
}
