//! numpy's rules for the column arithmetic pandas delegates to it: floor division,
//! modulo and powers (`//`, `%`, `**`), `abs`, `round` and `clip`, on columns already cast
//! to their result dtype. Missing values (null) stay missing.
//!
//! Where pandas differs from numpy it is said here: an integer divided (`//`, `%`) by 0
//! is missing (pandas makes the column float with `inf` or `NaN` there, a dtype that
//! depends on the values; numpy gives 0).

use polars::prelude::*;

/// numpy's `divmod` of two floats (`npy_divmod`): the floor quotient and the modulo
/// with the divisor's sign.
fn float_divmod(a: f64, b: f64) -> (f64, f64) {
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

/// Python's floor division and modulo of two integers (wrapping as numpy does);
/// `None` for a zero divisor.
fn int_divmod(a: i64, b: i64) -> Option<(i64, i64)> {
    if b == 0 {
        return None;
    }
    let (mut q, mut r) = (a.wrapping_div(b), a.wrapping_rem(b));
    if r != 0 && ((r < 0) != (b < 0)) {
        q = q.wrapping_sub(1);
        r += b;
    }
    Some((q, r))
}

/// An arithmetic operator of `expr` numpy computes itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    FloorDiv,
    Mod,
    Pow,
}

/// `a op b` for two series of the same numeric dtype (`to`).
pub(crate) fn binary(op: Op, a: &Series, b: &Series, to: &DataType) -> PolarsResult<Series> {
    let name = a.name().clone();
    Ok(match to {
        DataType::Float64 | DataType::Float32 => {
            let (x, y) = (a.cast(&DataType::Float64)?, b.cast(&DataType::Float64)?);
            let out: Float64Chunked = x
                .f64()?
                .iter()
                .zip(y.f64()?.iter())
                .map(|(x, y)| {
                    let (x, y) = (x?, y?);
                    Some(match op {
                        Op::FloorDiv => float_divmod(x, y).0,
                        Op::Mod => float_divmod(x, y).1,
                        Op::Pow => x.powf(y),
                    })
                })
                .collect();
            // float32 columns compute in float64 and round once to float32 (numpy
            // computes in float32; the results agree but for the last bit of some).
            out.into_series().cast(to)?
        }
        DataType::Int32 | DataType::Int64 => {
            let (x, y) = (a.cast(&DataType::Int64)?, b.cast(&DataType::Int64)?);
            let wide = to == &DataType::Int64;
            let mut negative_power = false;
            let out: Int64Chunked = x
                .i64()?
                .iter()
                .zip(y.i64()?.iter())
                .map(|(x, y)| {
                    let (x, y) = (x?, y?);
                    match op {
                        Op::FloorDiv => int_divmod(x, y).map(|d| d.0),
                        Op::Mod => int_divmod(x, y).map(|d| d.1),
                        Op::Pow if y < 0 => {
                            negative_power = true;
                            None
                        }
                        // Wrapping in the column's width, as numpy's integers do.
                        Op::Pow if wide => Some(x.wrapping_pow(y.min(u32::MAX as i64) as u32)),
                        Op::Pow => Some((x as i32).wrapping_pow(y.min(u32::MAX as i64) as u32) as i64),
                    }
                })
                .collect();
            polars_ensure!(!negative_power, ComputeError: "Integers to negative integer powers are not allowed (numpy's rule): make the base a float first (astype(float))");
            if wide {
                out.into_series()
            } else {
                // Wrapping in 32 bits (int32's MIN // -1 is MIN), as numpy's int32 does.
                out.iter().map(|v| v.map(|x| x as i32)).collect::<Int32Chunked>().into_series()
            }
        }
        other => polars_bail!(ComputeError: "{op:?} of {other} columns is not supported"),
    }
    .with_name(name))
}

/// `abs` (numpy's: the most negative integer stays itself).
pub(crate) fn abs(s: &Series) -> PolarsResult<Series> {
    map_numeric(s, f64::abs, i64::wrapping_abs)
}

/// numpy's `round(x, decimals)`: half to even, after scaling by `10^decimals` (integers
/// are unchanged unless `decimals` is negative).
pub(crate) fn round(s: &Series, decimals: i32) -> PolarsResult<Series> {
    let scale = 10f64.powi(decimals.abs());
    let float = move |x: f64| {
        if decimals >= 0 { (x * scale).round_ties_even() / scale } else { (x / scale).round_ties_even() * scale }
    };
    if s.dtype().is_integer() && decimals >= 0 {
        return Ok(s.clone());
    }
    map_numeric(s, float, move |x| float(x as f64) as i64)
}

/// Values below `lo` become `lo`, above `hi` become `hi` (either bound may be absent);
/// missing values stay missing. `s` already has the result's dtype.
pub(crate) fn clip(s: &Series, lo: Option<f64>, hi: Option<f64>) -> PolarsResult<Series> {
    let f = move |x: f64| {
        let x = lo.map_or(x, |l| if x < l { l } else { x });
        hi.map_or(x, |h| if x > h { h } else { x })
    };
    map_numeric(s, f, move |x| f(x as f64) as i64)
}

/// `float` over a float column or `int` over an integer one, keeping the dtype.
fn map_numeric(s: &Series, float: impl Fn(f64) -> f64, int: impl Fn(i64) -> i64) -> PolarsResult<Series> {
    let dt = s.dtype().clone();
    let out = if dt.is_float() {
        let v = s.cast(&DataType::Float64)?;
        v.f64()?.apply_values(&float).into_series()
    } else if dt == DataType::Int32 {
        // Wrapping in 32 bits, as numpy's int32 does.
        s.i32()?.apply_values(|x| int(x as i64) as i32).into_series()
    } else if dt.is_integer() {
        let v = s.cast(&DataType::Int64)?;
        v.i64()?.apply_values(&int).into_series()
    } else {
        polars_bail!(ComputeError: "a numeric function of a {dt} column")
    };
    Ok(out.cast(&dt)?.with_name(s.name().clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floor_division_and_modulo_follow_python() {
        // Python: 7 // -2 == -4, 7 % -2 == -1, -7 // 2 == -4, -7 % 2 == 1.
        assert_eq!(int_divmod(7, -2), Some((-4, -1)));
        assert_eq!(int_divmod(-7, 2), Some((-4, 1)));
        assert_eq!(int_divmod(6, 3), Some((2, 0)));
        assert_eq!(int_divmod(1, 0), None);
        assert_eq!(int_divmod(i64::MIN, -1), Some((i64::MIN, 0)), "wraps as numpy");
        assert_eq!(float_divmod(7.5, -2.0), (-4.0, -0.5));
        assert_eq!(float_divmod(-7.5, 2.0), (-4.0, 0.5));
        let (q, m) = float_divmod(1.0, 0.0);
        assert!(q.is_infinite() && m.is_nan(), "numpy: 1.0 // 0.0 is inf, 1.0 % 0.0 is nan");
        // np.floor_divide(0.3, 0.1) == 2.0 (0.3 is a little under 3 tenths).
        assert_eq!(float_divmod(0.3, 0.1).0, 2.0);
    }

    #[test]
    fn powers_round_abs_and_clip_follow_numpy() {
        let i = Series::new("i".into(), [Some(2i64), None, Some(-3)]);
        let p = binary(Op::Pow, &i, &Series::new("".into(), [3i64, 3, 2]), &DataType::Int64).unwrap();
        assert_eq!(p.i64().unwrap().iter().collect::<Vec<_>>(), [Some(8), None, Some(9)]);
        let e = binary(Op::Pow, &i, &Series::new("".into(), [-1i64, 1, 1]), &DataType::Int64).unwrap_err();
        assert!(e.to_string().contains("negative integer powers"), "{e}");
        let f = Series::new("f".into(), [0.5, 1.5, 2.5, -0.5, 1.234]);
        let r = round(&f, 0).unwrap();
        assert_eq!(r.f64().unwrap().into_no_null_iter().collect::<Vec<_>>(), [0.0, 2.0, 2.0, -0.0, 1.0]);
        let r = round(&f, 2).unwrap();
        assert_eq!(r.f64().unwrap().get(4), Some(1.23));
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
