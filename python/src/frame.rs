//! The data frame library (`ares-dataframe`) for Python: thin classes over its lazy
//! frames, column expressions and session. The pandas-shaped API (`ares.dataframe`:
//! indexing, operators, keyword arguments, pandas results) is pure Python on top; this
//! layer converts values and maps errors, and computes nothing itself.

use std::sync::Arc;

use ares_dataframe::polars::prelude::{
    Column, DataFrame as PlFrame, DataType, IntoColumn, IntoSeries, ListChunked, NamedFrom, Series, TimeUnit,
};
use ares_dataframe::{
    Agg, DataFrame, DropNa, DtOp, Dtype, Expr, FrameError, How, Method, Scalar, Session, StrOp, UnOp, ZoneOp,
};
use numpy::{IntoPyArray, PyArrayDyn, PyArrayMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyKeyError, PyNotImplementedError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt, PyList, PyString};

use crate::{AresError, PyTensor, interruptible};

/// A frame read from a file, a missing file raised as `FileNotFoundError`.
fn opened(path: &str, read: ares_dataframe::Result<DataFrame>) -> PyResult<PyFrame> {
    match read {
        Err(FrameError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            Err(pyo3::exceptions::PyFileNotFoundError::new_err(format!("{path}: no such file")))
        }
        r => r.map(wrap).or_raise(),
    }
}

/// A separator given as a one-character string, as one byte.
fn separator_byte(separator: &str) -> PyResult<u8> {
    match separator.as_bytes() {
        [sep] => Ok(*sep),
        _ => Err(PyValueError::new_err(format!("sep={separator:?}: give one ASCII character"))),
    }
}

/// pandas' exception for each frame error: a missing column is a `KeyError`, a dtype an
/// operation does not take a `TypeError`, a bad argument a `ValueError`.
fn to_py(e: FrameError) -> PyErr {
    let msg = e.to_string();
    match e {
        FrameError::UnknownColumn { name, .. } => PyKeyError::new_err(format!("{name:?}: {msg}")),
        FrameError::DType(_) => PyTypeError::new_err(msg),
        FrameError::Runtime(_) | FrameError::Tensor(_) => AresError::new_err(msg),
        FrameError::Cancelled => pyo3::exceptions::PyKeyboardInterrupt::new_err(msg),
        _ => PyValueError::new_err(msg),
    }
}

trait OrRaise<T> {
    fn or_raise(self) -> PyResult<T>;
}

impl<T> OrRaise<T> for Result<T, FrameError> {
    fn or_raise(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}

/// numpy's (or pandas') name of a column dtype.
fn dtype_name(d: &DataType) -> String {
    match d {
        DataType::Boolean => "bool".into(),
        DataType::Int32 => "int32".into(),
        DataType::Int64 => "int64".into(),
        DataType::UInt32 => "uint32".into(),
        DataType::UInt64 => "uint64".into(),
        DataType::Float32 => "float32".into(),
        DataType::Float64 => "float64".into(),
        DataType::String => "object".into(),
        DataType::Date => "datetime64[D]".into(),
        DataType::Datetime(u, None) => format!("datetime64[{}]", unit_name(*u)),
        // pandas' name of an aware dtype.
        DataType::Datetime(u, Some(tz)) => format!("datetime64[{}, {tz}]", unit_name(*u)),
        DataType::Duration(u) => format!("timedelta64[{}]", unit_name(*u)),
        // Lists fetch as pandas' object column of lists.
        DataType::List(_) => "list".into(),
        other => other.to_string(),
    }
}

fn unit_name(u: TimeUnit) -> &'static str {
    match u {
        TimeUnit::Nanoseconds => "ns",
        TimeUnit::Microseconds => "us",
        TimeUnit::Milliseconds => "ms",
    }
}

fn parse_dtype(name: &str) -> PyResult<Dtype> {
    Ok(match name {
        "bool" => Dtype::Bool,
        "int32" => Dtype::Int32,
        "int64" | "int" => Dtype::Int64,
        "uint32" => Dtype::UInt32,
        "uint64" => Dtype::UInt64,
        "float32" => Dtype::Float32,
        "float64" | "float" => Dtype::Float64,
        "str" | "object" | "string" => Dtype::String,
        "datetime64[ns]" | "datetime64" => Dtype::Datetime,
        "datetime64[D]" | "date" => Dtype::Date,
        "datetime64[us]" => Dtype::DatetimeUs,
        "datetime64[ms]" => Dtype::DatetimeMs,
        "timedelta64[ns]" | "timedelta64" => Dtype::Duration,
        other => {
            return Err(PyNotImplementedError::new_err(format!(
                "astype({other}): supported dtypes are bool, int32, int64, uint32, uint64, float32, float64, str, datetime64[ns], timedelta64[ns]"
            )));
        }
    })
}

/// A Python `bool`, `int`, `float` or `str` as a literal.
fn scalar(v: &Bound<'_, PyAny>) -> PyResult<Scalar> {
    if v.is_instance_of::<PyBool>() {
        Ok(Scalar::Bool(v.extract()?))
    } else if v.is_instance_of::<PyInt>() {
        v.extract::<i64>()
            .map(Scalar::Int)
            .map_err(|_| PyNotImplementedError::new_err(format!("the integer {v} does not fit in int64")))
    } else if v.is_instance_of::<PyFloat>() {
        Ok(Scalar::Float(v.extract()?))
    } else if v.is_instance_of::<PyString>() {
        Ok(Scalar::Str(v.extract()?))
    } else {
        Err(PyTypeError::new_err(format!("expected a bool, int, float or str, got {}", v.get_type().name()?)))
    }
}

fn agg(name: &str) -> PyResult<Agg> {
    Ok(match name {
        "sum" => Agg::Sum,
        "count" => Agg::Count,
        "min" => Agg::Min,
        "max" => Agg::Max,
        "mean" => Agg::Mean,
        "std" => Agg::Std,
        "var" => Agg::Var,
        "first" => Agg::First,
        "last" => Agg::Last,
        "size" => Agg::Size,
        other => return Err(PyNotImplementedError::new_err(format!("aggregation {other:?} is not supported"))),
    })
}

fn method(name: &str) -> PyResult<Method> {
    Ok(match name {
        "auto" => Method::Auto,
        "tree" => Method::Tree,
        "shuffle" => Method::Shuffle,
        other => return Err(PyValueError::new_err(format!("method={other:?}: give 'auto', 'tree' or 'shuffle'"))),
    })
}

/// A column expression (`df["a"] > 1`); the Python `Series` wraps one with its frame.
#[pyclass(name = "NativeExpr", module = "ares._native", frozen)]
#[derive(Clone)]
pub(crate) struct PyExpr {
    e: Expr,
}

#[pymethods]
impl PyExpr {
    #[staticmethod]
    fn col(name: &str) -> PyExpr {
        PyExpr { e: ares_dataframe::col(name) }
    }

    #[staticmethod]
    fn lit(value: &Bound<'_, PyAny>) -> PyResult<PyExpr> {
        Ok(PyExpr { e: Expr::Lit(scalar(value)?) })
    }

    /// The lazy value of a one-row, one-column frame (a reduction), in every row.
    #[staticmethod]
    fn value(frame: &PyFrame) -> PyResult<PyExpr> {
        Ok(PyExpr { e: Expr::Value(frame.df.as_value().or_raise()?) })
    }

    /// A value of dtype `dtype` in every row, given as its physical integer (days for
    /// `datetime64[D]`, units since the epoch for other datetimes); missing when None.
    #[staticmethod]
    #[pyo3(name = "const")]
    fn constant(value: Option<i64>, dtype: &str) -> PyResult<PyExpr> {
        Ok(PyExpr { e: Expr::Const(value.map(Scalar::Int), parse_dtype(dtype)?) })
    }

    /// Whether each value is among the values of a one-column frame (computed first).
    fn is_in(&self, frame: &PyFrame) -> PyResult<PyExpr> {
        let v = frame.df.as_value().or_raise()?;
        Ok(PyExpr { e: Expr::IsIn(Box::new(self.e.clone()), v) })
    }

    fn binary(&self, op: &str, other: &PyExpr) -> PyResult<PyExpr> {
        use ares_dataframe::BinOp as B;
        let op = match op {
            "add" => B::Add,
            "sub" => B::Sub,
            "mul" => B::Mul,
            "div" => B::Div,
            "floordiv" => B::FloorDiv,
            "mod" => B::Mod,
            "pow" => B::Pow,
            "eq" => B::Eq,
            "ne" => B::Ne,
            "lt" => B::Lt,
            "le" => B::Le,
            "gt" => B::Gt,
            "ge" => B::Ge,
            "and" => B::And,
            "or" => B::Or,
            other => return Err(PyNotImplementedError::new_err(format!("operator {other} on columns"))),
        };
        Ok(PyExpr { e: Expr::Binary(op, Box::new(self.e.clone()), Box::new(other.e.clone())) })
    }

    fn unary(&self, op: &str) -> PyResult<PyExpr> {
        let op = match op {
            "neg" => UnOp::Neg,
            "not" => UnOp::Not,
            "isna" => UnOp::IsNa,
            "notna" => UnOp::NotNa,
            "str_len" => UnOp::StrLen,
            "year" => UnOp::Dt(DtOp::Year),
            "month" => UnOp::Dt(DtOp::Month),
            "day" => UnOp::Dt(DtOp::Day),
            "dayofweek" => UnOp::Dt(DtOp::DayOfWeek),
            "dayofyear" => UnOp::Dt(DtOp::DayOfYear),
            "quarter" => UnOp::Dt(DtOp::Quarter),
            "hour" => UnOp::Dt(DtOp::Hour),
            "minute" => UnOp::Dt(DtOp::Minute),
            "second" => UnOp::Dt(DtOp::Second),
            "microsecond" => UnOp::Dt(DtOp::Microsecond),
            "nanosecond" => UnOp::Dt(DtOp::Nanosecond),
            "days_in_month" => UnOp::Dt(DtOp::DaysInMonth),
            "is_month_start" => UnOp::Dt(DtOp::IsMonthStart),
            "is_month_end" => UnOp::Dt(DtOp::IsMonthEnd),
            "is_quarter_start" => UnOp::Dt(DtOp::IsQuarterStart),
            "is_quarter_end" => UnOp::Dt(DtOp::IsQuarterEnd),
            "is_year_start" => UnOp::Dt(DtOp::IsYearStart),
            "is_year_end" => UnOp::Dt(DtOp::IsYearEnd),
            "is_leap_year" => UnOp::Dt(DtOp::IsLeapYear),
            "date" => UnOp::Dt(DtOp::Date),
            "iso_year" => UnOp::Dt(DtOp::IsoYear),
            "iso_week" => UnOp::Dt(DtOp::IsoWeek),
            "abs" => UnOp::Abs,
            "str_lower" => UnOp::StrLower,
            "str_upper" => UnOp::StrUpper,
            "str_strip" => UnOp::StrStrip,
            "str_lstrip" => UnOp::StrLStrip,
            "str_rstrip" => UnOp::StrRStrip,
            other => return Err(PyNotImplementedError::new_err(format!("{other} on a column"))),
        };
        Ok(PyExpr { e: Expr::Unary(op, Box::new(self.e.clone())) })
    }

    /// `.str.replace(pattern, replacement, regex)`.
    fn str_replace(&self, pattern: &str, replacement: &str, regex: bool) -> PyExpr {
        PyExpr { e: self.e.clone().str_replace(pattern, replacement, regex) }
    }

    /// `self` where `cond` is true, else `other`.
    fn where_(&self, cond: &PyExpr, other: &PyExpr) -> PyExpr {
        PyExpr { e: Expr::Where(Box::new(cond.e.clone()), Box::new(self.e.clone()), Box::new(other.e.clone())) }
    }

    /// Python's `v[start:stop:step]` of each string.
    #[pyo3(signature = (start=None, stop=None, step=None))]
    fn str_slice(&self, start: Option<i64>, stop: Option<i64>, step: Option<i64>) -> PyExpr {
        PyExpr { e: Expr::StrSlice(Box::new(self.e.clone()), start, stop, step) }
    }

    /// Python's `v[i]` of each string, missing out of range.
    fn str_get(&self, i: i64) -> PyExpr {
        PyExpr { e: Expr::StrGet(Box::new(self.e.clone()), i) }
    }

    /// Dates and times rounded to a multiple of `nanos`: down (`"floor"`, pandas'
    /// `.dt.floor`), up (`"ceil"`) or to the nearest, halves to even (`"round"`).
    #[pyo3(signature = (nanos, how="floor"))]
    fn dt_floor(&self, nanos: i64, how: &str) -> PyResult<PyExpr> {
        if nanos <= 0 {
            return Err(PyValueError::new_err(format!("{how}: the frequency must be positive, got {nanos} ns")));
        }
        let op = match how {
            "floor" => DtOp::Floor(nanos),
            "ceil" => DtOp::Ceil(nanos),
            "round" => DtOp::Round(nanos),
            other => return Err(PyValueError::new_err(format!("rounding {other:?}: floor, ceil or round"))),
        };
        Ok(PyExpr { e: Expr::Unary(UnOp::Dt(op), Box::new(self.e.clone())) })
    }

    /// Dates and times `months` calendar months later (pandas' `DateOffset(months=)`).
    fn add_months(&self, months: i32) -> PyExpr {
        PyExpr { e: Expr::Unary(UnOp::Dt(DtOp::AddMonths(months)), Box::new(self.e.clone())) }
    }

    /// Naive datetimes read as wall times in zone `tz`, or an aware column's wall times
    /// as naive ones (`None`) (pandas' `.dt.tz_localize`). Wall times the zone repeats:
    /// `ambiguous` `"raise"`, `"NaT"`, `"earlier"` (pandas' `True`) or `"later"`
    /// (`False`); wall times it skips: `nonexistent` `"raise"`, `"NaT"`,
    /// `"shift_forward"` or `"shift_backward"`.
    #[pyo3(signature = (tz, ambiguous="raise", nonexistent="raise"))]
    fn tz_localize(&self, tz: Option<String>, ambiguous: &str, nonexistent: &str) -> PyResult<PyExpr> {
        use ares_dataframe::{Ambiguous as A, Nonexistent as N};
        let a = match ambiguous {
            "raise" => A::Raise,
            "NaT" => A::NaT,
            "earlier" => A::Earlier,
            "later" => A::Later,
            other => return Err(PyValueError::new_err(format!("ambiguous={other:?}"))),
        };
        let n = match nonexistent {
            "raise" => N::Raise,
            "NaT" => N::NaT,
            "shift_forward" => N::ShiftForward,
            "shift_backward" => N::ShiftBackward,
            other => return Err(PyValueError::new_err(format!("nonexistent={other:?}"))),
        };
        Ok(PyExpr { e: Expr::Zone(Box::new(self.e.clone()), ZoneOp::Localize(a, n), tz) })
    }

    /// An aware column's instants in zone `tz`, or as naive UTC (`None`) (pandas'
    /// `.dt.tz_convert`).
    #[pyo3(signature = (tz))]
    fn tz_convert(&self, tz: Option<String>) -> PyExpr {
        PyExpr { e: Expr::Zone(Box::new(self.e.clone()), ZoneOp::Convert, tz) }
    }

    /// ISO text read as instants in zone `tz`: a UTC offset in the text applied, text
    /// without one read as UTC (pandas' `to_datetime(text, utc=True)`).
    fn tz_read(&self, tz: String) -> PyExpr {
        PyExpr { e: Expr::Zone(Box::new(self.e.clone()), ZoneOp::Read, Some(tz)) }
    }

    /// Dates and times formatted as text (pandas' `.dt.strftime`).
    fn strftime(&self, format: &str) -> PyExpr {
        PyExpr { e: Expr::Strftime(Box::new(self.e.clone()), format.to_string()) }
    }

    /// numpy's `round(x, decimals)`.
    fn round(&self, decimals: i32) -> PyExpr {
        PyExpr { e: self.e.clone().round(decimals) }
    }

    /// `clip(lower, upper)`; `None` for no bound.
    fn clip(&self, lower: Option<&Bound<'_, PyAny>>, upper: Option<&Bound<'_, PyAny>>) -> PyResult<PyExpr> {
        let bound = |b: Option<&Bound<'_, PyAny>>| b.map(scalar).transpose();
        Ok(PyExpr { e: self.e.clone().clip(bound(lower)?, bound(upper)?) })
    }

    fn fill_na(&self, value: &Bound<'_, PyAny>) -> PyResult<PyExpr> {
        Ok(PyExpr { e: self.e.clone().fill_na(scalar(value)?) })
    }

    fn cast(&self, dtype: &str) -> PyResult<PyExpr> {
        Ok(PyExpr { e: self.e.clone().cast(parse_dtype(dtype)?) })
    }

    fn str_test(&self, op: &str, pattern: &str) -> PyResult<PyExpr> {
        let op = match op {
            "contains" => StrOp::Contains,
            "contains_literal" => StrOp::ContainsLiteral,
            "startswith" => StrOp::StartsWith,
            "endswith" => StrOp::EndsWith,
            "split_whitespace" => StrOp::SplitWhitespace,
            "split_literal" => StrOp::SplitLiteral,
            "split_regex" => StrOp::SplitRegex,
            other => return Err(PyNotImplementedError::new_err(format!("str.{other}"))),
        };
        Ok(PyExpr { e: Expr::Str(op, Box::new(self.e.clone()), pattern.to_string()) })
    }
}

/// A lazy, chunked data frame (the Python `ares.dataframe.DataFrame` wraps one).
#[pyclass(name = "NativeFrame", module = "ares._native", frozen)]
#[derive(Clone)]
pub(crate) struct PyFrame {
    df: DataFrame,
}

fn wrap(df: DataFrame) -> PyFrame {
    PyFrame { df }
}

#[pymethods]
impl PyFrame {
    #[getter]
    fn columns(&self) -> Vec<String> {
        self.df.columns()
    }

    #[getter]
    fn dtypes(&self) -> Vec<String> {
        self.df.dtypes().iter().map(dtype_name).collect()
    }

    fn __repr__(&self) -> String {
        format!("{:?}", self.df)
    }

    /// The plan, one operator a line (see `DataFrame::explain`).
    fn explain(&self) -> String {
        self.df.explain()
    }

    /// The dtype name of `e` over this frame's columns (raises if it cannot be computed).
    fn expr_dtype(&self, e: &PyExpr) -> PyResult<String> {
        self.df.dtype_of(&e.e).map(|d| dtype_name(&d)).or_raise()
    }

    fn select(&self, columns: Vec<String>) -> PyResult<PyFrame> {
        self.df.select(&strs(&columns)).map(wrap).or_raise()
    }

    fn drop(&self, columns: Vec<String>) -> PyResult<PyFrame> {
        self.df.drop(&strs(&columns)).map(wrap).or_raise()
    }

    fn rename(&self, pairs: Vec<(String, String)>) -> PyResult<PyFrame> {
        let p: Vec<(&str, &str)> = pairs.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        self.df.rename(&p).map(wrap).or_raise()
    }

    fn filter(&self, mask: &PyExpr) -> PyResult<PyFrame> {
        self.df.filter(mask.e.clone()).map(wrap).or_raise()
    }

    fn assign(&self, columns: Vec<(String, Bound<'_, PyExpr>)>) -> PyResult<PyFrame> {
        let c: Vec<(&str, Expr)> = columns.iter().map(|(n, e)| (n.as_str(), e.get().e.clone())).collect();
        self.df.assign(&c).map(wrap).or_raise()
    }

    /// `columns`: only these (the others, index labels say, are kept); all when None.
    #[pyo3(signature = (value, columns=None))]
    fn fillna(&self, value: &Bound<'_, PyAny>, columns: Option<Vec<String>>) -> PyResult<PyFrame> {
        self.df.fillna_in(scalar(value)?, &strs(&self.or_all(columns))).map(wrap).or_raise()
    }

    fn dropna(&self, subset: Vec<String>, how: &str) -> PyResult<PyFrame> {
        let how = match how {
            "any" => DropNa::Any,
            "all" => DropNa::All,
            other => return Err(PyValueError::new_err(format!("invalid how option: {other} (give 'any' or 'all')"))),
        };
        self.df.dropna(&strs(&subset), how).map(wrap).or_raise()
    }

    #[pyo3(signature = (columns=None))]
    fn isna(&self, columns: Option<Vec<String>>) -> PyResult<PyFrame> {
        self.df.isna_in(&strs(&self.or_all(columns))).map(wrap).or_raise()
    }

    #[pyo3(signature = (columns=None))]
    fn notna(&self, columns: Option<Vec<String>>) -> PyResult<PyFrame> {
        self.df.notna_in(&strs(&self.or_all(columns))).map(wrap).or_raise()
    }

    /// `agg` of every column (numeric ones only when `numeric_only`): a frame of one row.
    fn reduce(&self, how: &str, numeric_only: bool) -> PyResult<PyFrame> {
        self.df.reduce(agg(how)?, numeric_only).map(wrap).or_raise()
    }

    /// Named whole-frame aggregations `(column, agg)`: a frame of one row.
    fn agg(&self, aggs: Vec<(String, String)>) -> PyResult<PyFrame> {
        let a: Vec<(&str, Agg)> = aggs.iter().map(|(c, f)| Ok((c.as_str(), agg(f)?))).collect::<PyResult<_>>()?;
        self.df.agg(&a).map(wrap).or_raise()
    }

    /// A group-by with named aggregations `(column, agg, output name)`.
    fn groupby_agg(&self, keys: Vec<String>, aggs: Vec<(String, String, String)>, how: &str) -> PyResult<PyFrame> {
        let a: Vec<(&str, Agg, &str)> =
            aggs.iter().map(|(c, f, n)| Ok((c.as_str(), agg(f)?, n.as_str()))).collect::<PyResult<_>>()?;
        let g = self.df.group_by(&strs(&keys)).or_raise()?.method(method(how)?);
        g.agg_named(&a).map(wrap).or_raise()
    }

    /// A running `kind` of `column` within groups of `keys` (over the whole frame for
    /// none), appended as `name`: `periods` is a shift's, or a window's rows (then
    /// `min_periods` its least present values).
    #[pyo3(signature = (keys, column, kind, name, periods=1, min_periods=0))]
    fn group_scan(
        &self,
        keys: Vec<String>,
        column: &str,
        kind: &str,
        name: &str,
        periods: u32,
        min_periods: u32,
    ) -> PyResult<PyFrame> {
        use ares_dataframe::{Roll, Scan};
        let kind = match kind {
            "cumsum" => Scan::Sum,
            "cummin" => Scan::Min,
            "cummax" => Scan::Max,
            "cumcount" => Scan::Count,
            "shift" => Scan::Shift(periods),
            "lead" => Scan::Lead(periods),
            "rolling_sum" => Scan::Rolling(periods, min_periods, Roll::Sum),
            "rolling_mean" => Scan::Rolling(periods, min_periods, Roll::Mean),
            "rolling_min" => Scan::Rolling(periods, min_periods, Roll::Min),
            "rolling_max" => Scan::Rolling(periods, min_periods, Roll::Max),
            other => return Err(PyNotImplementedError::new_err(format!("{other}()"))),
        };
        if keys.is_empty() {
            return self.df.scan(column, kind, name).map(wrap).or_raise();
        }
        let g = self.df.group_by(&strs(&keys)).or_raise()?;
        g.scan(column, kind, name).map(wrap).or_raise()
    }

    /// Each row's rank of `column` within the groups of `keys` (over the whole frame
    /// for none), appended as `name`.
    fn rank(
        &self,
        keys: Vec<String>,
        column: &str,
        method: &str,
        ascending: bool,
        pct: bool,
        name: &str,
    ) -> PyResult<PyFrame> {
        use ares_dataframe::Rank;
        let method = match method {
            "average" => Rank::Average,
            "min" => Rank::Min,
            "max" => Rank::Max,
            "first" => Rank::First,
            "dense" => Rank::Dense,
            other => {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "rank(method={other:?}): give 'average', 'min', 'max', 'first' or 'dense'"
                )));
            }
        };
        if keys.is_empty() {
            return self.df.rank(column, method, ascending, pct, name).map(wrap).or_raise();
        }
        let g = self.df.group_by(&strs(&keys)).or_raise()?;
        g.rank(column, method, ascending, pct, name).map(wrap).or_raise()
    }

    /// A group-by's distinct counts of `(column, output name)` pairs.
    fn groupby_nunique(&self, keys: Vec<String>, columns: Vec<(String, String)>, how: &str) -> PyResult<PyFrame> {
        let c: Vec<(&str, &str)> = columns.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        let g = self.df.group_by(&strs(&keys)).or_raise()?.method(method(how)?);
        g.nunique_named(&c).map(wrap).or_raise()
    }

    fn nunique(&self) -> PyResult<PyFrame> {
        self.df.nunique().map(wrap).or_raise()
    }

    /// pandas' `describe` of the numeric columns with these percentiles.
    fn describe(&self, percentiles: Vec<f64>) -> PyResult<PyFrame> {
        self.df.describe_percentiles(&percentiles).map(wrap).or_raise()
    }

    fn sort_values(&self, by: Vec<String>, ascending: Vec<bool>) -> PyResult<PyFrame> {
        self.df.sort_values(&strs(&by), &ascending).map(wrap).or_raise()
    }

    fn head(&self, n: usize) -> PyFrame {
        wrap(self.df.head(n))
    }

    fn tail(&self, n: usize) -> PyFrame {
        wrap(self.df.tail(n))
    }

    fn nlargest(&self, n: usize, by: Vec<String>) -> PyResult<PyFrame> {
        self.df.nlargest(n, &strs(&by)).map(wrap).or_raise()
    }

    fn nsmallest(&self, n: usize, by: Vec<String>) -> PyResult<PyFrame> {
        self.df.nsmallest(n, &strs(&by)).map(wrap).or_raise()
    }

    /// Each list of `column` a row of its own.
    fn explode(&self, column: &str) -> PyResult<PyFrame> {
        self.df.explode(column).map(wrap).or_raise()
    }

    fn drop_duplicates(&self, subset: Vec<String>, how: &str) -> PyResult<PyFrame> {
        self.df.drop_duplicates_by(&strs(&subset), method(how)?).map(wrap).or_raise()
    }

    fn value_counts(&self, column: &str) -> PyResult<PyFrame> {
        self.df.value_counts(column).map(wrap).or_raise()
    }

    fn merge(&self, right: &PyFrame, on: Vec<String>, how: &str) -> PyResult<PyFrame> {
        let how = match how {
            "inner" => How::Inner,
            "left" => How::Left,
            "right" => How::Right,
            "outer" => How::Outer,
            other => {
                return Err(PyValueError::new_err(format!("how={other:?}: give 'inner', 'left', 'right' or 'outer'")));
            }
        };
        self.df.merge(&right.df, &strs(&on), how).map(wrap).or_raise()
    }
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(|s| s.as_str()).collect()
}

impl PyFrame {
    /// `columns`, or every column of the frame when None.
    fn or_all(&self, columns: Option<Vec<String>>) -> Vec<String> {
        columns.unwrap_or_else(|| self.df.columns())
    }
}

/// A frame whose columns are 1-d tensors chunked alike.
#[pyfunction]
pub(crate) fn frame_from_tensors(names: Vec<String>, tensors: Vec<Bound<'_, PyTensor>>) -> PyResult<PyFrame> {
    let ts: Vec<ares_tensor::Tensor> = tensors.iter().map(|t| t.get().t.clone()).collect();
    let cols: Vec<(&str, &ares_tensor::Tensor)> = names.iter().map(|n| n.as_str()).zip(ts.iter()).collect();
    DataFrame::from_tensors(&cols).map(wrap).or_raise()
}

/// One column from Python: a 1-d numpy array of numbers or booleans, a datetime64 array
/// given as `(int64 array, unit)`, or a list of `str`/`None` or of `bool`/`None`.
fn column(name: &str, value: &Bound<'_, PyAny>) -> PyResult<Column> {
    fn nums<T: numpy::Element + Copy>(name: &str, a: &Bound<'_, PyUntypedArray>) -> PyResult<Series>
    where
        Series: NamedFrom<Vec<T>, [T]>,
    {
        let a = a.cast::<PyArrayDyn<T>>()?.readonly();
        Ok(Series::new(name.into(), a.as_array().iter().copied().collect::<Vec<T>>()))
    }
    if let Ok((tag, items)) = value.extract::<(String, Bound<'_, PyList>)>()
        && tag == "list"
    {
        return list_column(name, &items);
    }
    if let Ok(list) = value.cast::<PyList>() {
        // Strings, or booleans with missing values (pandas' object column of True/False/None).
        if let Ok(v) = list.extract::<Vec<Option<String>>>() {
            return Ok(Series::new(name.into(), v).into_column());
        }
        let v: Vec<Option<bool>> = list.extract()?;
        return Ok(Series::new(name.into(), v).into_column());
    }
    if let Ok((ints, unit)) = value.extract::<(Bound<'_, PyUntypedArray>, String)>() {
        // An aware column's unit names its zone after a comma, as pandas' dtype does;
        // its integers are UTC instants.
        let (unit, tz) = match unit.split_once(", ") {
            Some((u, tz)) => (u.to_string(), Some(tz.to_string())),
            None => (unit, None),
        };
        // numpy's NaT (the least int64) is a missing value.
        let a = ints.cast::<PyArrayDyn<i64>>()?.readonly();
        let v: Vec<Option<i64>> = a.as_array().iter().map(|&x| (x != i64::MIN).then_some(x)).collect();
        let s = Series::new(name.into(), v);
        let dt = match unit.as_str() {
            "D" => DataType::Date,
            "ns" => DataType::Datetime(TimeUnit::Nanoseconds, None),
            "us" => DataType::Datetime(TimeUnit::Microseconds, None),
            "ms" => DataType::Datetime(TimeUnit::Milliseconds, None),
            "timedelta64[ns]" => DataType::Duration(TimeUnit::Nanoseconds),
            other => return Err(PyNotImplementedError::new_err(format!("datetime64[{other}] columns"))),
        };
        let s = if dt == DataType::Date { s.cast(&DataType::Int32) } else { Ok(s) };
        let mut s = s.and_then(|s| s.cast(&dt)).map_err(|e| PyValueError::new_err(e.to_string()))?;
        if let Some(tz) = tz {
            s = ares_dataframe::zone_series(&s, &tz)
                .map_err(|e| PyValueError::new_err(format!("column {name:?}: {e}")))?;
        }
        return Ok(s.into_column());
    }
    let a = value.cast::<PyUntypedArray>()?;
    if a.ndim() != 1 {
        return Err(PyValueError::new_err(format!("column {name:?} must be 1-d, it has shape {:?}", a.shape())));
    }
    let s = match a.dtype().str()?.to_string().as_str() {
        "bool" => nums::<bool>(name, a)?,
        "int32" => nums::<i32>(name, a)?,
        "int64" => nums::<i64>(name, a)?,
        "uint32" => nums::<u32>(name, a)?,
        "uint64" => nums::<u64>(name, a)?,
        "float32" => nums::<f32>(name, a)?,
        "float64" => nums::<f64>(name, a)?,
        other => {
            return Err(PyNotImplementedError::new_err(format!(
                "column {name:?} has dtype {other}: give numbers, booleans, datetimes or strings"
            )));
        }
    };
    Ok(s.into_column())
}

/// A column of lists (each `None` or a list of strings, or of numbers) from Python:
/// lists of strings, of integers, or of floats (integers and floats mixed).
fn list_column(name: &str, items: &Bound<'_, PyList>) -> PyResult<Column> {
    let lists: Vec<Option<Bound<'_, PyList>>> = items.extract()?;
    let bad = || {
        PyNotImplementedError::new_err(format!(
            "column {name:?}: lists of one kind only (strings, or numbers), with None for a missing value"
        ))
    };
    let as_strings = |l: &Bound<'_, PyList>| l.extract::<Vec<Option<String>>>();
    let strings = lists.iter().flatten().all(|l| as_strings(l).is_ok());
    let any = lists.iter().flatten().any(|l| !l.is_empty());
    let series: Vec<Option<Series>> = if strings && any {
        lists
            .iter()
            .map(|l| l.as_ref().map(|l| as_strings(l).map(|v| Series::new("".into(), v))))
            .map(Option::transpose)
            .collect::<PyResult<_>>()?
    } else if lists.iter().flatten().all(|l| l.extract::<Vec<Option<i64>>>().is_ok()) {
        let ints = |l: &Bound<'_, PyList>| l.extract::<Vec<Option<i64>>>().map(|v| Series::new("".into(), v));
        lists.iter().map(|l| l.as_ref().map(ints).transpose()).collect::<PyResult<_>>()?
    } else if lists.iter().flatten().all(|l| l.extract::<Vec<Option<f64>>>().is_ok()) {
        let floats = |l: &Bound<'_, PyList>| l.extract::<Vec<Option<f64>>>().map(|v| Series::new("".into(), v));
        lists.iter().map(|l| l.as_ref().map(floats).transpose()).collect::<PyResult<_>>()?
    } else {
        return Err(bad());
    };
    let inner = if strings && any {
        DataType::String
    } else {
        series.iter().flatten().next().map_or(DataType::Int64, |s| s.dtype().clone())
    };
    let mut out = ListChunked::from_iter(series);
    out.rename(name.into());
    let out =
        out.into_series().cast(&DataType::List(Box::new(inner))).map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(out.into_column())
}

/// A CSV file read in byte ranges of `chunk_bytes` by worker tasks.
#[pyfunction]
pub(crate) fn read_csv(
    path: &str,
    separator: &str,
    dtypes: Vec<(String, String)>,
    chunk_bytes: u64,
) -> PyResult<PyFrame> {
    let separator = separator_byte(separator)?;
    let dtypes = dtypes.iter().map(|(c, d)| Ok((c.clone(), parse_dtype(d)?))).collect::<PyResult<_>>()?;
    let opts = ares_dataframe::CsvOptions { chunk_bytes, separator, dtypes };
    opened(path, DataFrame::read_csv(path, &opts))
}

/// The rows of `frames` one after the other (pandas' `concat`).
#[pyfunction]
pub(crate) fn frame_concat(frames: Vec<Bound<'_, PyFrame>>) -> PyResult<PyFrame> {
    let fs: Vec<DataFrame> = frames.iter().map(|f| f.get().df.clone()).collect();
    DataFrame::concat(&fs).map(wrap).or_raise()
}

/// A Parquet file read by worker tasks, a row group each.
#[pyfunction]
#[pyo3(signature = (path, columns=None))]
pub(crate) fn read_parquet(path: &str, columns: Option<Vec<String>>) -> PyResult<PyFrame> {
    opened(path, DataFrame::read_parquet_columns(path, columns.as_deref()))
}

/// A frame of columns from this process, `rows_per_chunk` rows per chunk.
#[pyfunction]
pub(crate) fn frame_from_columns(
    names: Vec<String>,
    columns: Vec<Bound<'_, PyAny>>,
    rows_per_chunk: usize,
) -> PyResult<PyFrame> {
    let cols: Vec<Column> = names.iter().zip(&columns).map(|(n, c)| column(n, c)).collect::<PyResult<_>>()?;
    if let Some(c) = cols.iter().find(|c| c.len() != cols[0].len()) {
        return Err(PyValueError::new_err(format!(
            "all columns must have one length: {:?} has {}, {:?} has {}",
            cols[0].name(),
            cols[0].len(),
            c.name(),
            c.len()
        )));
    }
    let df = PlFrame::new_infer_height(cols).map_err(|e| PyValueError::new_err(e.to_string()))?;
    DataFrame::from_polars(df, rows_per_chunk).map(wrap).or_raise()
}

/// A fetched column for Python: numbers and booleans as numpy arrays (missing values as
/// NaN, which makes an integer column float64, as pandas does), datetimes as
/// `(int64 array, unit)`, strings as a list of `str`/`None`.
fn to_python<'py>(py: Python<'py>, c: &Column) -> PyResult<Bound<'py, PyAny>> {
    let s = c.as_materialized_series();
    let err = |e: ares_dataframe::polars::prelude::PolarsError| PyValueError::new_err(e.to_string());
    let dt = s.dtype().clone();
    if dt == DataType::String {
        let v: Vec<Option<&str>> = s.str().map_err(err)?.iter().collect();
        return Ok(PyList::new(py, v)?.into_any());
    }
    if let DataType::List(_) = dt {
        // Each list as a Python list of its values (as this function gives a column), or
        // None; the pair ("list", ...) says so.
        let mut rows: Vec<Bound<'py, PyAny>> = Vec::with_capacity(s.len());
        for l in s.list().map_err(err)?.amortized_iter() {
            rows.push(match l {
                Some(l) => {
                    let inner = l.as_ref().clone().into_column();
                    let v = to_python(py, &inner)?;
                    // Numbers come as numpy arrays: lists, as pandas holds them.
                    if v.is_instance_of::<PyList>() { v } else { v.call_method0("tolist")? }
                }
                None => py.None().into_bound(py),
            });
        }
        return Ok(("list", PyList::new(py, rows)?).into_pyobject(py)?.into_any());
    }
    if let DataType::Date | DataType::Datetime(..) | DataType::Duration(_) = dt {
        // Durations in nanoseconds, named by their numpy dtype.
        let (s, unit) = match dt {
            DataType::Datetime(u, Some(tz)) => (s.clone(), format!("{}, {tz}", unit_name(u))),
            DataType::Datetime(u, None) => (s.clone(), unit_name(u).to_string()),
            DataType::Duration(_) => {
                (s.cast(&DataType::Duration(TimeUnit::Nanoseconds)).map_err(err)?, "timedelta64[ns]".to_string())
            }
            _ => (s.clone(), "D".to_string()),
        };
        let phys = s.to_physical_repr().cast(&DataType::Int64).map_err(err)?;
        // Missing datetimes are numpy's NaT (the least int64).
        let v: Vec<i64> = phys.i64().map_err(err)?.iter().map(|v| v.unwrap_or(i64::MIN)).collect();
        return Ok((v.into_pyarray(py), unit).into_pyobject(py)?.into_any());
    }
    if dt == DataType::Boolean && s.null_count() > 0 {
        let v: Vec<Option<bool>> = s.bool().map_err(err)?.iter().collect();
        return Ok(PyList::new(py, v)?.into_any());
    }
    macro_rules! array {
        ($ca:ident, $t:ty) => {{
            let v: Vec<$t> = s.$ca().map_err(err)?.into_no_null_iter().collect();
            Ok(v.into_pyarray(py).into_any())
        }};
    }
    if s.null_count() > 0 || dt == DataType::Float64 {
        let f = s.cast(&DataType::Float64).map_err(err)?;
        let v: Vec<f64> = f.f64().map_err(err)?.iter().map(|v| v.unwrap_or(f64::NAN)).collect();
        return Ok(v.into_pyarray(py).into_any());
    }
    match dt {
        DataType::Boolean => {
            let v: Vec<bool> = s.bool().map_err(err)?.iter().map(|v| v.unwrap_or(false)).collect();
            Ok(v.into_pyarray(py).into_any())
        }
        DataType::Int32 => array!(i32, i32),
        DataType::Int64 => array!(i64, i64),
        DataType::UInt32 => array!(u32, u32),
        DataType::UInt64 => array!(u64, u64),
        DataType::Float32 => array!(f32, f32),
        other => Err(PyNotImplementedError::new_err(format!("fetching a column of dtype {other}"))),
    }
}

/// Runs frames: computes them, keeps executed results, and fetches them.
#[pyclass(name = "NativeFrameSession", module = "ares._native", frozen)]
pub(crate) struct PyFrameSession {
    s: Arc<Session>,
}

impl PyFrameSession {
    pub(crate) fn of(s: Session) -> Self {
        PyFrameSession { s: Arc::new(s) }
    }
}

#[pymethods]
impl PyFrameSession {
    #[new]
    fn new() -> Self {
        PyFrameSession { s: Arc::new(Session::new()) }
    }

    /// Computes the frames and keeps their chunks while they live; `progress(done,
    /// total)` is called as chunk tasks finish.
    #[pyo3(signature = (frames, progress=None))]
    fn execute(&self, py: Python<'_>, frames: Vec<Bound<'_, PyFrame>>, progress: Option<Py<PyAny>>) -> PyResult<()> {
        let mut s = Session::clone(&self.s);
        if let Some(cb) = progress {
            s = s.on_progress(crate::progress_fn(cb));
        }
        let frames: Vec<DataFrame> = frames.iter().map(|f| f.get().df.clone()).collect();
        let results = interruptible(py, move |cancel| {
            let s = s.cancelled_by(cancel);
            frames.iter().try_for_each(|f| s.execute(f))
        })?;
        results.or_raise()
    }

    /// Computes the frame and returns `(names, columns)` (see `to_python`); `progress` as
    /// for `execute`.
    #[pyo3(signature = (frame, progress=None))]
    fn fetch<'py>(
        &self,
        py: Python<'py>,
        frame: &PyFrame,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<(Vec<String>, Vec<Bound<'py, PyAny>>)> {
        let (mut s, df) = (Session::clone(&self.s), frame.df.clone());
        if let Some(cb) = progress {
            s = s.on_progress(crate::progress_fn(cb));
        }
        let got = interruptible(py, move |cancel| s.cancelled_by(cancel).fetch(&df))?.or_raise()?;
        let names = got.get_column_names().iter().map(|n| n.to_string()).collect();
        let cols = got.columns().iter().map(|c| to_python(py, c)).collect::<PyResult<_>>()?;
        Ok((names, cols))
    }

    /// Writes the frame to one CSV file (a header line, no index).
    fn to_csv(&self, py: Python<'_>, frame: &PyFrame, path: &str, separator: &str) -> PyResult<()> {
        let sep = separator_byte(separator)?;
        let (s, df, path) = (Session::clone(&self.s), frame.df.clone(), path.to_string());
        interruptible(py, move |cancel| s.cancelled_by(cancel).to_csv(&df, &path, sep))?.or_raise()
    }

    /// Writes the frame to one Parquet file, a row group per chunk.
    fn to_parquet(&self, py: Python<'_>, frame: &PyFrame, path: &str) -> PyResult<()> {
        let (s, df, path) = (Session::clone(&self.s), frame.df.clone(), path.to_string());
        interruptible(py, move |cancel| s.cancelled_by(cancel).to_parquet(&df, &path))?.or_raise()
    }

    /// The frame's values as a 2-d tensor (`column` given: that column as a 1-d one),
    /// computing the frame first.
    #[pyo3(signature = (frame, column=None))]
    fn to_tensor(&self, py: Python<'_>, frame: &PyFrame, column: Option<String>) -> PyResult<PyTensor> {
        let (s, df) = (Session::clone(&self.s), frame.df.clone());
        let t = interruptible(py, move |cancel| {
            let s = s.cancelled_by(cancel);
            match column {
                Some(c) => s.column_to_tensor(&df, &c),
                None => s.to_tensor(&df),
            }
        })?
        .or_raise()?;
        Ok(PyTensor { t })
    }

    /// The rows of a frame computed in this session; `None` if it was not.
    fn rows_if_computed(&self, py: Python<'_>, frame: &PyFrame) -> PyResult<Option<u64>> {
        py.detach(|| self.s.rows_if_computed(&frame.df)).or_raise()
    }

    /// The method a group-by, drop_duplicates or merge was computed with.
    fn method(&self, frame: &PyFrame) -> Option<&'static str> {
        self.s.group_by_method(&frame.df).map(|m| match m {
            Method::Auto => "auto",
            Method::Tree => "tree",
            Method::Shuffle => "shuffle",
            Method::Broadcast => "broadcast",
        })
    }
}
