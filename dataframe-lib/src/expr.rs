//! Column expressions: what `filter`, `assign`, `fillna` and friends compute, one value
//! per row. An [`Expr`] is built in the driver (`col("a").gt(3)`, `col("a") + col("b")`)
//! and checked against the frame's schema there, so a wrong column or dtype fails before
//! anything runs. It travels to the chunk tasks flattened into a [`Program`] (operands
//! before the instruction that uses them), which `eval` runs with polars.

use polars::prelude::{DataType, TimeUnit};

use crate::error::{FrameError, Result};

/// A literal value.
#[derive(Clone, Debug, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub enum Scalar {
    /// `True` / `False`.
    Bool(bool),
    /// An integer (takes the other operand's integer dtype, as numpy's scalars do).
    Int(i64),
    /// A float.
    Float(f64),
    /// A string.
    Str(String),
}

impl From<bool> for Scalar {
    fn from(v: bool) -> Self {
        Scalar::Bool(v)
    }
}
impl From<i64> for Scalar {
    fn from(v: i64) -> Self {
        Scalar::Int(v)
    }
}
impl From<i32> for Scalar {
    fn from(v: i32) -> Self {
        Scalar::Int(v.into())
    }
}
impl From<f64> for Scalar {
    fn from(v: f64) -> Self {
        Scalar::Float(v)
    }
}
impl From<&str> for Scalar {
    fn from(v: &str) -> Self {
        Scalar::Str(v.to_string())
    }
}
impl From<String> for Scalar {
    fn from(v: String) -> Self {
        Scalar::Str(v)
    }
}

impl Scalar {
    fn dtype(&self) -> DataType {
        match self {
            Scalar::Bool(_) => DataType::Boolean,
            Scalar::Int(_) => DataType::Int64,
            Scalar::Float(_) => DataType::Float64,
            Scalar::Str(_) => DataType::String,
        }
    }
}

/// A column dtype that can be named in a task (`astype`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub enum Dtype {
    /// `bool`.
    Bool,
    /// `int32`.
    Int32,
    /// `int64`.
    Int64,
    /// `uint32`.
    UInt32,
    /// `uint64`.
    UInt64,
    /// `float32`.
    Float32,
    /// `float64`.
    Float64,
    /// `str` (pandas' `object` of strings, or `string`).
    String,
    /// A calendar date.
    Date,
    /// `datetime64[ns]`.
    Datetime,
    /// `datetime64[us]`.
    DatetimeUs,
    /// `datetime64[ms]`.
    DatetimeMs,
    /// `timedelta64[ns]`.
    Duration,
}

impl Dtype {
    /// The dtype naming polars' `d`, for those a task can name.
    pub(crate) fn of(d: &DataType) -> Option<Dtype> {
        Some(match d {
            DataType::Boolean => Dtype::Bool,
            DataType::Int32 => Dtype::Int32,
            DataType::Int64 => Dtype::Int64,
            DataType::UInt32 => Dtype::UInt32,
            DataType::UInt64 => Dtype::UInt64,
            DataType::Float32 => Dtype::Float32,
            DataType::Float64 => Dtype::Float64,
            DataType::String => Dtype::String,
            DataType::Date => Dtype::Date,
            DataType::Datetime(TimeUnit::Nanoseconds, None) => Dtype::Datetime,
            DataType::Datetime(TimeUnit::Microseconds, None) => Dtype::DatetimeUs,
            DataType::Datetime(TimeUnit::Milliseconds, None) => Dtype::DatetimeMs,
            DataType::Duration(TimeUnit::Nanoseconds) => Dtype::Duration,
            _ => return None,
        })
    }

    /// The polars dtype.
    pub fn to_polars(self) -> DataType {
        match self {
            Dtype::Bool => DataType::Boolean,
            Dtype::Int32 => DataType::Int32,
            Dtype::Int64 => DataType::Int64,
            Dtype::UInt32 => DataType::UInt32,
            Dtype::UInt64 => DataType::UInt64,
            Dtype::Float32 => DataType::Float32,
            Dtype::Float64 => DataType::Float64,
            Dtype::String => DataType::String,
            Dtype::Date => DataType::Date,
            Dtype::Datetime => DataType::Datetime(TimeUnit::Nanoseconds, None),
            Dtype::DatetimeUs => DataType::Datetime(TimeUnit::Microseconds, None),
            Dtype::DatetimeMs => DataType::Datetime(TimeUnit::Milliseconds, None),
            Dtype::Duration => DataType::Duration(TimeUnit::Nanoseconds),
        }
    }
}

/// A binary operation: the engine's (`ares_tileable::scalar::BinOp`), which tensors
/// compute too. `//` of integers by 0 is missing here (see `numeric`); `maximum` and
/// `minimum` are numpy's.
pub use ares_tileable::scalar::BinOp;

/// A function of one value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub enum UnOp {
    /// `-x`
    Neg,
    /// `~x` of booleans.
    Not,
    /// `isna()`: missing (null, or NaN in a float column, as pandas counts it).
    IsNa,
    /// `notna()`.
    NotNa,
    /// `.str.len()`: characters.
    StrLen,
    /// `.str.lower()`.
    StrLower,
    /// `.str.upper()`.
    StrUpper,
    /// `.str.strip()`: whitespace off both ends.
    StrStrip,
    /// `.str.lstrip()`.
    StrLStrip,
    /// `.str.rstrip()`.
    StrRStrip,
    /// `abs()`.
    Abs,
    /// `round(decimals)`: numpy's half to even.
    Round(i32),
    /// A `.dt` computation on dates and datetimes.
    Dt(crate::temporal::DtOp),
}

/// A string test against a pattern.
#[derive(Clone, Copy, Debug, PartialEq, Eq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub enum StrOp {
    /// `.str.contains(pat)`: a regular expression, as pandas' default `regex=True`.
    Contains,
    /// `.str.contains(pat, regex=False)`.
    ContainsLiteral,
    /// `.str.startswith(pat)`.
    StartsWith,
    /// `.str.endswith(pat)`.
    EndsWith,
    /// `.str.split()`: a list of the words between runs of whitespace.
    SplitWhitespace,
    /// `.str.split(pat)` of a literal separator.
    SplitLiteral,
    /// `.str.split(pat)` of a regular expression.
    SplitRegex,
}

impl StrOp {
    /// Whether it makes lists of strings (else booleans).
    pub(crate) fn splits(self) -> bool {
        matches!(self, StrOp::SplitWhitespace | StrOp::SplitLiteral | StrOp::SplitRegex)
    }
}

/// A per-row expression over a frame's columns.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// A column, by name.
    Col(String),
    /// A literal, the same in every row.
    Lit(Scalar),
    /// `a op b`.
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `op(a)`.
    Unary(UnOp, Box<Expr>),
    /// Missing values of `a` replaced by a literal.
    FillNa(Box<Expr>, Scalar),
    /// `a` converted to a dtype.
    Cast(Box<Expr>, Dtype),
    /// A string test.
    Str(StrOp, Box<Expr>, String),
    /// `clip(lower, upper)`: values outside the bounds given set to them.
    Clip(Box<Expr>, Option<Scalar>, Option<Scalar>),
    /// `.str.replace(pattern, replacement, regex)`: every match replaced.
    StrReplace(Box<Expr>, String, String, bool),
    /// A lazy scalar: the one value of a one-row, one-column frame (a reduction), the
    /// same in every row. Tiling computes it first, then runs the expression with it.
    Value(Value),
    /// `a` where `cond` is true, else `b` (pandas' `a.where(cond, b)`; `mask` swaps
    /// them): numbers in the dtype numpy's `where` gives them, a missing `cond` false.
    Where(Box<Expr>, Box<Expr>, Box<Expr>),
    /// Python's `v[start:stop:step]` of each string, by characters (pandas'
    /// `.str.slice` and `.str[a:b]`).
    StrSlice(Box<Expr>, Option<i64>, Option<i64>, Option<i64>),
    /// Python's `v[i]` of each string, missing where `i` is out of range (pandas'
    /// `.str.get(i)` and `.str[i]`).
    StrGet(Box<Expr>, i64),
    /// A value of a set dtype in every row (a date or time literal, as its physical
    /// value: days, or units since the epoch); missing when `None`. Not weak: it
    /// promotes as a column of its dtype would.
    Const(Option<Scalar>, Dtype),
    /// Whether `a` is one of the values of a one-column frame (pandas' `isin` with a
    /// Series: a semi-join); a missing `a` is in it when the frame has a missing value.
    /// Tiling computes the frame first and sends its distinct values to every task.
    IsIn(Box<Expr>, Value),
    /// Each date or datetime formatted as text (pandas' `.dt.strftime(format)`).
    Strftime(Box<Expr>, String),
    /// A datetime's zone set or changed (pandas' `.dt.tz_localize`/`.dt.tz_convert`;
    /// `None`: naive).
    Zone(Box<Expr>, crate::zone::ZoneOp, Option<String>),
}

/// A one-column frame computed before the expression that uses it: its one value
/// ([`Expr::Value`]) or its values ([`Expr::IsIn`]). Made by `DataFrame::as_value`; it
/// holds the frame's node type-erased, so that expressions do not depend on frames.
#[derive(Clone)]
pub struct Value {
    pub(crate) node: std::sync::Arc<dyn std::any::Any + Send + Sync>,
    dtype: DataType,
    /// A set the engine added to cut rows early (not the user's `isin`): when too large
    /// to send to every task it is dropped, every row counting as in it.
    pub(crate) optional: bool,
}

impl Value {
    pub(crate) fn new(node: std::sync::Arc<dyn std::any::Any + Send + Sync>, dtype: DataType) -> Value {
        Value { node, dtype, optional: false }
    }

    /// This set as one the engine may drop (see [`Value::optional`]).
    pub(crate) fn optional(self) -> Value {
        Value { optional: true, ..self }
    }

    /// The column's dtype (a scalar's).
    pub(crate) fn dtype(&self) -> DataType {
        self.dtype.clone()
    }
}

impl std::fmt::Debug for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Value({})", self.dtype)
    }
}

impl PartialEq for Value {
    fn eq(&self, other: &Value) -> bool {
        std::ptr::addr_eq(std::sync::Arc::as_ptr(&self.node), std::sync::Arc::as_ptr(&other.node))
    }
}

/// The one value of a lazy scalar's computed frame, as a constant of `dtype` (the
/// frame's column dtype when the expression was built).
pub(crate) fn constant_of(frame: &polars::prelude::DataFrame, dtype: &DataType) -> Result<Instr> {
    use polars::prelude::AnyValue;
    if frame.height() != 1 || frame.width() != 1 {
        return Err(FrameError::Invalid(format!(
            "a lazy scalar is a frame of one row and one column; this one has {} rows and {} columns",
            frame.height(),
            frame.width()
        )));
    }
    // An aware datetime is its UTC instant, in its zone.
    let zone = crate::zone::zone_of(dtype).map(str::to_string);
    let d = Dtype::of(&crate::zone::naive(dtype))
        .ok_or_else(|| FrameError::DType(format!("a lazy scalar of dtype {dtype}")))?;
    let s = frame.columns()[0].as_materialized_series().strict_cast(dtype)?;
    let v = match s.get(0)? {
        AnyValue::Null => None,
        AnyValue::Boolean(b) => Some(Scalar::Bool(b)),
        AnyValue::Int32(v) => Some(Scalar::Int(v.into())),
        AnyValue::Int64(v) => Some(Scalar::Int(v)),
        AnyValue::UInt32(v) => Some(Scalar::Int(v.into())),
        AnyValue::UInt64(v) => match i64::try_from(v) {
            Ok(v) => Some(Scalar::Int(v)),
            Err(_) => {
                return Err(FrameError::Invalid(format!("a lazy uint64 scalar above 2⁶³ ({v}) is not supported")));
            }
        },
        AnyValue::Float32(v) => Some(Scalar::Float(v.into())),
        AnyValue::Float64(v) => Some(Scalar::Float(v)),
        AnyValue::String(v) => Some(Scalar::Str(v.to_string())),
        AnyValue::StringOwned(v) => Some(Scalar::Str(v.to_string())),
        AnyValue::Date(days) => Some(Scalar::Int(days.into())),
        AnyValue::Datetime(v, ..) | AnyValue::DatetimeOwned(v, ..) | AnyValue::Duration(v, _) => Some(Scalar::Int(v)),
        other => return Err(FrameError::DType(format!("a lazy scalar holding {other:?}"))),
    };
    Ok(match zone {
        Some(tz) => Instr::ZonedConst(v, d, tz),
        None => Instr::Const(v, d),
    })
}

/// The column `name` (pandas' `df["name"]`).
pub fn col(name: &str) -> Expr {
    Expr::Col(name.to_string())
}

/// A literal.
pub fn lit(v: impl Into<Scalar>) -> Expr {
    Expr::Lit(v.into())
}

impl<T: Into<Scalar>> From<T> for Expr {
    fn from(v: T) -> Self {
        Expr::Lit(v.into())
    }
}

macro_rules! binary_method {
    ($($name:ident => $op:ident),* $(,)?) => {$(
        #[doc = concat!("`self ", stringify!($name), " other`, row by row.")]
        pub fn $name(self, other: impl Into<Expr>) -> Expr {
            Expr::Binary(BinOp::$op, Box::new(self), Box::new(other.into()))
        }
    )*};
}

impl Expr {
    binary_method!(eq => Eq, ne => Ne, lt => Lt, le => Le, gt => Gt, ge => Ge, and => And, or => Or);
    binary_method!(floor_div => FloorDiv, pow => Pow);

    /// Absolute values.
    pub fn abs(self) -> Expr {
        Expr::Unary(UnOp::Abs, Box::new(self))
    }

    /// Rounded to `decimals` (numpy's half to even; negative: to tens, hundreds, …).
    pub fn round(self, decimals: i32) -> Expr {
        Expr::Unary(UnOp::Round(decimals), Box::new(self))
    }

    /// Values below `lower` or above `upper` (when given) replaced by them.
    pub fn clip(self, lower: Option<Scalar>, upper: Option<Scalar>) -> Expr {
        Expr::Clip(Box::new(self), lower, upper)
    }

    /// Missing (null, or NaN in a float column).
    pub fn is_na(self) -> Expr {
        Expr::Unary(UnOp::IsNa, Box::new(self))
    }

    /// Not missing.
    pub fn not_na(self) -> Expr {
        Expr::Unary(UnOp::NotNa, Box::new(self))
    }

    /// Missing values replaced by `v`.
    pub fn fill_na(self, v: impl Into<Scalar>) -> Expr {
        Expr::FillNa(Box::new(self), v.into())
    }

    /// Converted to `dtype` (pandas' `astype`); a value that does not convert fails the
    /// task, as pandas raises.
    pub fn cast(self, dtype: Dtype) -> Expr {
        Expr::Cast(Box::new(self), dtype)
    }

    /// `.str.contains(pattern)`: a regular expression.
    pub fn str_contains(self, pattern: &str) -> Expr {
        Expr::Str(StrOp::Contains, Box::new(self), pattern.to_string())
    }

    /// `.str.contains(pattern, regex=False)`.
    pub fn str_contains_literal(self, pattern: &str) -> Expr {
        Expr::Str(StrOp::ContainsLiteral, Box::new(self), pattern.to_string())
    }

    /// `.str.startswith(prefix)`.
    pub fn str_starts_with(self, prefix: &str) -> Expr {
        Expr::Str(StrOp::StartsWith, Box::new(self), prefix.to_string())
    }

    /// `.str.endswith(suffix)`.
    pub fn str_ends_with(self, suffix: &str) -> Expr {
        Expr::Str(StrOp::EndsWith, Box::new(self), suffix.to_string())
    }

    /// `.str.split(pat)`: each string's list of the parts between separators (`None`:
    /// runs of whitespace, as Python's `str.split()`; `regex`: `pat` is a regular
    /// expression).
    pub fn str_split(self, pat: Option<&str>, regex: bool) -> Expr {
        let op = match (pat, regex) {
            (None, _) => StrOp::SplitWhitespace,
            (Some(_), false) => StrOp::SplitLiteral,
            (Some(_), true) => StrOp::SplitRegex,
        };
        Expr::Str(op, Box::new(self), pat.unwrap_or_default().to_string())
    }

    /// `.str.replace(pattern, replacement)`: every occurrence of the literal `pattern`
    /// (a regular expression when `regex`, with `$1`-style groups in `replacement`).
    pub fn str_replace(self, pattern: &str, replacement: &str, regex: bool) -> Expr {
        Expr::StrReplace(Box::new(self), pattern.to_string(), replacement.to_string(), regex)
    }

    /// `.str.lower()`, `upper`, `strip`, `lstrip`, `rstrip`: `op` is one of those.
    pub fn str_map(self, op: UnOp) -> Expr {
        Expr::Unary(op, Box::new(self))
    }

    /// `.str.len()`.
    pub fn str_len(self) -> Expr {
        Expr::Unary(UnOp::StrLen, Box::new(self))
    }

    /// `.dt.year`.
    pub fn year(self) -> Expr {
        Expr::Unary(UnOp::Dt(crate::temporal::DtOp::Year), Box::new(self))
    }

    /// `.dt.month`.
    pub fn month(self) -> Expr {
        Expr::Unary(UnOp::Dt(crate::temporal::DtOp::Month), Box::new(self))
    }

    /// `.dt.day`.
    pub fn day(self) -> Expr {
        Expr::Unary(UnOp::Dt(crate::temporal::DtOp::Day), Box::new(self))
    }

    /// The terms of `a & b & …` (itself when it is no `&`).
    pub(crate) fn and_terms<'a>(&'a self, out: &mut Vec<&'a Expr>) {
        match self {
            Expr::Binary(BinOp::And, a, b) => {
                a.and_terms(out);
                b.and_terms(out);
            }
            e => out.push(e),
        }
    }

    /// A condition this one implies that reads only terms `ok` accepts (its `&` terms
    /// tested one by one, an `|` implying the `|` of what each side implies), or `None`:
    /// `(a & x) | (b & y)` implies `a | b` when `ok` takes `a` and `b`. A filter of one
    /// merge side derived from a filter of both.
    pub(crate) fn implied(&self, ok: &dyn Fn(&Expr) -> bool) -> Option<Expr> {
        match self {
            Expr::Binary(BinOp::Or, a, b) => Some(a.implied(ok)? | b.implied(ok)?),
            Expr::Binary(BinOp::And, a, b) => match (a.implied(ok), b.implied(ok)) {
                (Some(x), Some(y)) => Some(x & y),
                (x, y) => x.or(y),
            },
            e => ok(e).then(|| e.clone()),
        }
    }

    /// Calls `f` with each operand (its sub-expressions one level down).
    fn for_each_operand(&self, f: &mut dyn FnMut(&Expr)) {
        match self {
            Expr::Col(_) | Expr::Lit(_) | Expr::Value(_) | Expr::Const(..) => {}
            Expr::Binary(_, a, b) => {
                f(a);
                f(b);
            }
            Expr::Where(c, a, b) => {
                f(c);
                f(a);
                f(b);
            }
            Expr::Unary(_, a)
            | Expr::FillNa(a, _)
            | Expr::Cast(a, _)
            | Expr::Str(_, a, _)
            | Expr::Clip(a, ..)
            | Expr::StrReplace(a, ..)
            | Expr::StrSlice(a, ..)
            | Expr::StrGet(a, _)
            | Expr::IsIn(a, _)
            | Expr::Strftime(a, _)
            | Expr::Zone(a, ..) => f(a),
        }
    }

    /// Whether it holds an `isin` of a frame's values ([`Expr::IsIn`]).
    pub(crate) fn has_semi_join(&self) -> bool {
        let mut found = matches!(self, Expr::IsIn(..));
        self.for_each_operand(&mut |e| found |= e.has_semi_join());
        found
    }

    /// The columns of its frame it reads, added to `out` once each (a lazy scalar's or
    /// set's own frame is not this one's).
    pub(crate) fn columns(&self, out: &mut Vec<String>) {
        if let Expr::Col(c) = self
            && !out.contains(c)
        {
            out.push(c.clone());
        }
        self.for_each_operand(&mut |e| e.columns(out));
    }

    /// Its dtype over a frame of `schema`, or why it cannot be computed there.
    pub(crate) fn dtype(&self, schema: &[(String, DataType)]) -> Result<DataType> {
        let bad = |m: String| Err(FrameError::DType(m));
        match self {
            Expr::Col(c) => schema.iter().find(|(n, _)| n == c).map(|(_, d)| d.clone()).ok_or_else(|| {
                FrameError::UnknownColumn { name: c.clone(), have: schema.iter().map(|(n, _)| n.clone()).collect() }
            }),
            Expr::Lit(s) => Ok(s.dtype()),
            Expr::Value(v) => Ok(v.dtype()),
            Expr::Const(_, d) => Ok(d.to_polars()),
            Expr::Where(c, a, b) => {
                let dc = c.dtype(schema)?;
                if dc != DataType::Boolean {
                    return bad(format!("where needs a boolean condition, this one is {dc}"));
                }
                let (da, db) = (a.dtype(schema)?, b.dtype(schema)?);
                match where_dtype(&da, lit_of(a), &db, lit_of(b)) {
                    Some(d) => Ok(d),
                    None => bad(format!("where cannot choose between {da} and {db} values")),
                }
            }
            Expr::StrSlice(a, _, _, step) => {
                let d = a.dtype(schema)?;
                if d != DataType::String {
                    return bad(format!("str.slice needs a string column, this one is {d}"));
                }
                if *step == Some(0) {
                    return bad("str.slice: slice step cannot be zero".into());
                }
                Ok(d)
            }
            Expr::Strftime(a, fmt) => {
                let d = a.dtype(schema)?;
                if !crate::temporal::is_datetime(&d) {
                    return bad(format!("strftime needs dates or datetimes, this column is {d}"));
                }
                crate::temporal::check_format(fmt).map_err(FrameError::Invalid)?;
                Ok(DataType::String)
            }
            Expr::Zone(a, op, tz) => {
                let d = a.dtype(schema)?;
                crate::zone::zone_dtype(*op, tz.as_deref(), &d).map_err(FrameError::DType)
            }
            Expr::StrGet(a, _) => {
                let d = a.dtype(schema)?;
                if d == DataType::String {
                    Ok(d)
                } else {
                    bad(format!("str.get needs a string column, this one is {d}"))
                }
            }
            Expr::IsIn(a, v) => {
                let (da, dv) = (a.dtype(schema)?, v.dtype());
                if comparable(&da, &dv) {
                    Ok(DataType::Boolean)
                } else {
                    bad(format!("isin: cannot look for {da} values among {dv} ones"))
                }
            }
            Expr::Binary(op, a, b) => {
                let (da, db) = (a.dtype(schema)?, b.dtype(schema)?);
                let sym = op.symbol();
                if *op == BinOp::Pow
                    && da.is_integer()
                    && let Expr::Lit(Scalar::Int(e)) = &**b
                    && *e < 0
                {
                    return Err(FrameError::Invalid(format!(
                        "Integers to negative integer powers are not allowed ({da} ** {e}): make the base a float first"
                    )));
                }
                if let Some(t) = crate::temporal::arithmetic_dtype(*op, &da, &db)
                    && (op.is_arithmetic() || matches!(op, BinOp::Maximum | BinOp::Minimum))
                {
                    return t.map_err(FrameError::DType);
                }
                if op.is_arithmetic() || matches!(op, BinOp::Maximum | BinOp::Minimum) {
                    // numpy 2 refuses a Python integer its integer operand cannot hold.
                    let to = compute_dtype(*op, &da, lit_of(a), &db, lit_of(b));
                    for side in [a, b] {
                        if let (Expr::Lit(Scalar::Int(v)), Some(to)) = (&**side, &to)
                            && to.is_integer()
                            && !int_fits(*v, to)
                        {
                            return Err(FrameError::Invalid(format!(
                                "Python integer {v} out of bounds for {to} (numpy 2 refuses it): astype the column to a wider integer first"
                            )));
                        }
                    }
                    match arithmetic_dtype(*op, &da, lit_of(a), &db, lit_of(b)) {
                        Some(d) => Ok(d),
                        None => bad(format!("cannot compute {da} {sym} {db}: arithmetic needs numeric operands")),
                    }
                } else if op.is_comparison() {
                    if is_temporal(&da)
                        && is_temporal(&db)
                        && crate::zone::zone_of(&da).is_some() != crate::zone::zone_of(&db).is_some()
                    {
                        bad(format!(
                            "cannot compare {da} {sym} {db}: one is time-zone aware and the other naive (pandas \
                             refuses it); give the literal a zone (pd.Timestamp(..., tz=...)) or localize the \
                             column with .dt.tz_localize(tz)"
                        ))
                    } else if comparable(&da, &db) {
                        Ok(DataType::Boolean)
                    } else {
                        bad(format!(
                            "cannot compare {da} {sym} {db}: compare numbers with numbers, strings with strings"
                        ))
                    }
                } else if da == DataType::Boolean && db == DataType::Boolean {
                    Ok(DataType::Boolean)
                } else {
                    bad(format!("`{sym}` needs boolean operands, got {da} and {db}"))
                }
            }
            Expr::Unary(op, a) => {
                let d = a.dtype(schema)?;
                match op {
                    UnOp::Neg | UnOp::Abs if crate::temporal::is_duration(&d) => Ok(d),
                    UnOp::Neg if d.is_primitive_numeric() => Ok(d),
                    UnOp::Not if d == DataType::Boolean => Ok(d),
                    UnOp::IsNa | UnOp::NotNa => Ok(DataType::Boolean),
                    UnOp::StrLen if d == DataType::String => Ok(DataType::Int64),
                    UnOp::StrLower | UnOp::StrUpper | UnOp::StrStrip | UnOp::StrLStrip | UnOp::StrRStrip
                        if d == DataType::String =>
                    {
                        Ok(d)
                    }
                    UnOp::Dt(op) if let Some(out) = crate::temporal::field_dtype(*op, &d) => Ok(out),
                    UnOp::Abs | UnOp::Round(_) if d.is_primitive_numeric() => Ok(d),
                    other => bad(format!("{other:?} is not defined for dtype {d}")),
                }
            }
            Expr::FillNa(a, v) => {
                let d = a.dtype(schema)?;
                match fill_dtype(&d, v) {
                    Some(out) => Ok(out),
                    None => bad(format!("cannot fill missing values of a {d} column with {v:?}")),
                }
            }
            Expr::Cast(a, to) => {
                let d = a.dtype(schema)?;
                let to = to.to_polars();
                if crate::zone::zone_of(&d).is_some() && is_temporal(&to) {
                    return bad(format!(
                        "cannot convert {d} to {to} with astype (pandas refuses it): use .dt.tz_localize(None) \
                         for its wall times, or .dt.tz_convert(None) for its UTC instants"
                    ));
                }
                let ok = d == to
                    || (d.is_primitive_numeric() || d == DataType::Boolean || d == DataType::String)
                        && (to.is_primitive_numeric() || to == DataType::Boolean || to == DataType::String)
                    || (is_temporal(&d) && (is_temporal(&to) || to == DataType::String || to == DataType::Int64))
                    || (d == DataType::String && is_temporal(&to));
                if ok { Ok(to) } else { bad(format!("cannot convert {d} to {to}")) }
            }
            Expr::Clip(a, lo, hi) => {
                let d = a.dtype(schema)?;
                let mut out = d.clone();
                for bound in [lo, hi].into_iter().flatten() {
                    let bd = bound.dtype();
                    if !d.is_primitive_numeric() || !bd.is_primitive_numeric() {
                        return bad(format!("clip needs numbers: a {d} column and a {bd} bound"));
                    }
                    out = arithmetic_dtype(BinOp::Add, &out, false, &bd, true).unwrap_or(out);
                }
                Ok(out)
            }
            Expr::StrReplace(a, pat, _, regex) => {
                let d = a.dtype(schema)?;
                if d != DataType::String {
                    return bad(format!("str.replace needs a string column, this one is {d}"));
                }
                if *regex && let Err(e) = regex::Regex::new(pat) {
                    return bad(format!(
                        "str.replace: {pat:?} is not a valid regular expression ({e}); pass regex=False to replace it literally"
                    ));
                }
                Ok(d)
            }
            Expr::Str(op, a, pat) => {
                let d = a.dtype(schema)?;
                if d != DataType::String {
                    return bad(format!("{op:?} needs a string column, this one is {d}"));
                }
                if matches!(op, StrOp::Contains | StrOp::SplitRegex)
                    && let Err(e) = regex::Regex::new(pat)
                {
                    return bad(format!(
                        "{op:?}: {pat:?} is not a valid regular expression ({e}); pass regex=False to match it literally"
                    ));
                }
                if *op == StrOp::SplitLiteral && pat.is_empty() {
                    return bad("str.split: an empty separator".into());
                }
                Ok(if op.splits() { DataType::List(Box::new(DataType::String)) } else { DataType::Boolean })
            }
        }
    }
}

fn lit_of(e: &Expr) -> bool {
    matches!(e, Expr::Lit(_))
}

pub(crate) fn is_temporal(d: &DataType) -> bool {
    matches!(d, DataType::Date | DataType::Datetime(..))
}

/// Whether the integer dtype `d` holds `v`.
fn int_fits(v: i64, d: &DataType) -> bool {
    match d {
        DataType::Int32 => i32::try_from(v).is_ok(),
        DataType::UInt32 => u32::try_from(v).is_ok(),
        DataType::UInt64 => v >= 0,
        _ => true,
    }
}

fn comparable(a: &DataType, b: &DataType) -> bool {
    let num = |d: &DataType| d.is_primitive_numeric() || d == &DataType::Boolean;
    (num(a) && num(b))
        || (a == &DataType::String && b == &DataType::String)
        || (is_temporal(a) && is_temporal(b))
        || (crate::temporal::is_duration(a) && crate::temporal::is_duration(b))
}

/// The dtype `where` gives a choice between `a` and `b` (numpy's promotion, a Python
/// literal weak): numbers (booleans included) promote, other kinds must agree, and a
/// missing constant takes the other side's dtype.
pub(crate) fn where_dtype(a: &DataType, a_lit: bool, b: &DataType, b_lit: bool) -> Option<DataType> {
    if a == b {
        return Some(a.clone());
    }
    let num = |d: &DataType| d.is_primitive_numeric() || d == &DataType::Boolean;
    if num(a) && num(b) {
        return arithmetic_dtype(BinOp::Maximum, a, a_lit, b, b_lit);
    }
    if is_temporal(a) && is_temporal(b) {
        // Aware datetimes choose only among their own zone (pandas would fall back to
        // objects).
        let (za, zb) = (crate::zone::zone_of(a), crate::zone::zone_of(b));
        if za != zb {
            return None;
        }
        return Some(crate::zone::with_zone(&DataType::Datetime(TimeUnit::Nanoseconds, None), za));
    }
    None
}

/// The dtype of `a op b` (numpy's rules, with a Python literal taking the dtype of the
/// column it meets when it is of the same kind), or `None` for non-numbers.
pub(crate) fn arithmetic_dtype(op: BinOp, a: &DataType, a_lit: bool, b: &DataType, b_lit: bool) -> Option<DataType> {
    crate::numeric::of_core(typed(op, a, a_lit, b, b_lit)?.out)
}

/// The dtype `a op b` computes in (both operands are cast to it first), for numbers.
pub(crate) fn compute_dtype(op: BinOp, a: &DataType, a_lit: bool, b: &DataType, b_lit: bool) -> Option<DataType> {
    crate::numeric::of_core(typed(op, a, a_lit, b, b_lit)?.compute)
}

/// The engine's typing of `a op b` (numpy 2's rules, NEP 50: a literal is a Python
/// scalar, whose kind alone counts).
fn typed(op: BinOp, a: &DataType, a_lit: bool, b: &DataType, b_lit: bool) -> Option<ares_tileable::scalar::Typed> {
    use ares_tileable::scalar::Operand;
    let operand = |d: &DataType, lit: bool| {
        let c = crate::numeric::core(d)?;
        Some(if lit { Operand::Scalar(c.kind()) } else { Operand::Array(c) })
    };
    ares_tileable::scalar::binary(op, operand(a, a_lit)?, operand(b, b_lit)?).ok()
}

/// The dtype of `a.fillna(v)`: the column's, or float64 for an integer column filled
/// with a float.
pub(crate) fn fill_dtype(d: &DataType, v: &Scalar) -> Option<DataType> {
    match v {
        Scalar::Int(_) if d.is_primitive_numeric() => Some(d.clone()),
        Scalar::Float(_) if d.is_float() => Some(d.clone()),
        Scalar::Float(_) if d.is_integer() => Some(DataType::Float64),
        Scalar::Bool(_) if d == &DataType::Boolean => Some(d.clone()),
        Scalar::Str(_) if d == &DataType::String => Some(d.clone()),
        _ => None,
    }
}

/// An `isin` set's values in the store: a one-column frame chunk of distinct values.
#[derive(Clone, Debug, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub(crate) struct SetRef(pub(crate) ares::ObjectRef<crate::chunk::FrameChunk>);

impl PartialEq for SetRef {
    fn eq(&self, other: &SetRef) -> bool {
        self.0.id() == other.0.id()
    }
}

/// One instruction of a flattened expression; operands are earlier instructions.
#[derive(Clone, Debug, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub(crate) enum Instr {
    Col(String),
    Lit(Scalar),
    Binary(BinOp, u32, u32),
    Unary(UnOp, u32),
    FillNa(u32, Scalar),
    Cast(u32, Dtype),
    Str(StrOp, u32, String),
    Clip(u32, Option<Scalar>, Option<Scalar>),
    StrReplace(u32, String, String, bool),
    /// Lazy scalar `k` of its map (see [`Expr::Value`]); tiling replaces it with a
    /// [`Instr::Const`] before any task runs.
    Value(u32),
    /// A value of a set dtype in every row (not a weak literal: it promotes as a
    /// column of its dtype would); missing when `None`. Numbers of dates and times are
    /// their physical values (days, nanoseconds).
    Const(Option<Scalar>, Dtype),
    StrSlice(u32, Option<i64>, Option<i64>, Option<i64>),
    StrGet(u32, i64),
    Where(u32, u32, u32),
    /// Whether operand `a` is among the values of lazy frame `k` (see [`Expr::IsIn`]);
    /// tiling replaces it with an [`Instr::IsInSet`].
    IsIn(u32, u32),
    /// Whether operand `a` is among these values: one column of distinct values, put in
    /// the store once by tiling (each task carrying them would copy them), with their
    /// bytes' blake3 hash (workers key the hashed set they keep on it).
    IsInSet(u32, [u8; 32], SetRef),
    Strftime(u32, String),
    Zone(u32, crate::zone::ZoneOp, Option<String>),
    /// An aware datetime constant: [`Instr::Const`]'s UTC instant, in a zone.
    ZonedConst(Option<Scalar>, Dtype, String),
}

/// Expressions flattened for a task: each instruction's operands come before it.
#[derive(Clone, Debug, Default, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub(crate) struct Program {
    pub(crate) instrs: Vec<Instr>,
}

/// The place of `v` in `values`, added if new.
fn register(values: &mut Vec<Value>, v: &Value) -> u32 {
    match values.iter().position(|x| x == v) {
        Some(k) => k as u32,
        None => {
            values.push(v.clone());
            (values.len() - 1) as u32
        }
    }
}

impl Program {
    /// Appends `e`; returns the index of its result. Its lazy scalars are added to
    /// `values` (once each) and named by their place there.
    pub(crate) fn push(&mut self, e: &Expr, values: &mut Vec<Value>) -> u32 {
        let i = match e {
            Expr::Col(c) => Instr::Col(c.clone()),
            Expr::Lit(s) => Instr::Lit(s.clone()),
            Expr::Value(v) => Instr::Value(register(values, v)),
            Expr::Const(v, d) => Instr::Const(v.clone(), *d),
            Expr::StrSlice(a, lo, hi, step) => Instr::StrSlice(self.push(a, values), *lo, *hi, *step),
            Expr::Where(c, a, b) => {
                let (c, a, b) = (self.push(c, values), self.push(a, values), self.push(b, values));
                Instr::Where(c, a, b)
            }
            Expr::StrGet(a, i) => Instr::StrGet(self.push(a, values), *i),
            Expr::Strftime(a, f) => Instr::Strftime(self.push(a, values), f.clone()),
            Expr::Zone(a, op, tz) => Instr::Zone(self.push(a, values), *op, tz.clone()),
            Expr::IsIn(a, v) => {
                let a = self.push(a, values);
                Instr::IsIn(a, register(values, v))
            }
            Expr::Binary(op, a, b) => {
                let (a, b) = (self.push(a, values), self.push(b, values));
                Instr::Binary(*op, a, b)
            }
            Expr::Unary(op, a) => Instr::Unary(*op, self.push(a, values)),
            Expr::FillNa(a, v) => Instr::FillNa(self.push(a, values), v.clone()),
            Expr::Cast(a, d) => Instr::Cast(self.push(a, values), *d),
            Expr::Str(op, a, p) => Instr::Str(*op, self.push(a, values), p.clone()),
            Expr::Clip(a, lo, hi) => Instr::Clip(self.push(a, values), lo.clone(), hi.clone()),
            Expr::StrReplace(a, p, r, re) => Instr::StrReplace(self.push(a, values), p.clone(), r.clone(), *re),
        };
        self.instrs.push(i);
        (self.instrs.len() - 1) as u32
    }
}

impl Program {
    /// Adds the columns that instruction `at` reads to `out`.
    pub(crate) fn columns(&self, at: u32, out: &mut Vec<String>) {
        let mut stack = vec![at as usize];
        while let Some(i) = stack.pop() {
            let Some(ins) = self.instrs.get(i) else { continue };
            // Operands come before their user, so the walk ends on any program.
            let mut operand = |o: &u32| {
                if (*o as usize) < i {
                    stack.push(*o as usize)
                }
            };
            match ins {
                Instr::Col(c) => {
                    if !out.contains(c) {
                        out.push(c.clone());
                    }
                }
                Instr::Lit(_) | Instr::Value(_) | Instr::Const(..) | Instr::ZonedConst(..) => {}
                Instr::Binary(_, a, b) => {
                    operand(a);
                    operand(b);
                }
                Instr::Unary(_, a)
                | Instr::FillNa(a, _)
                | Instr::Cast(a, _)
                | Instr::Str(_, a, _)
                | Instr::Clip(a, _, _)
                | Instr::StrReplace(a, ..)
                | Instr::IsIn(a, _)
                | Instr::IsInSet(a, ..)
                | Instr::StrSlice(a, ..)
                | Instr::StrGet(a, _)
                | Instr::Strftime(a, _)
                | Instr::Zone(a, ..) => operand(a),
                Instr::Where(c, a, b) => {
                    operand(c);
                    operand(a);
                    operand(b);
                }
            }
        }
    }
}

macro_rules! operator {
    ($trait:ident, $method:ident, $op:ident) => {
        impl<T: Into<Expr>> std::ops::$trait<T> for Expr {
            type Output = Expr;
            fn $method(self, rhs: T) -> Expr {
                Expr::Binary(BinOp::$op, Box::new(self), Box::new(rhs.into()))
            }
        }
    };
}

operator!(Add, add, Add);
operator!(Sub, sub, Sub);
operator!(Mul, mul, Mul);
operator!(Div, div, Div);
operator!(Rem, rem, Mod);
operator!(BitAnd, bitand, And);
operator!(BitOr, bitor, Or);

impl std::ops::Neg for Expr {
    type Output = Expr;
    fn neg(self) -> Expr {
        Expr::Unary(UnOp::Neg, Box::new(self))
    }
}

impl std::ops::Not for Expr {
    type Output = Expr;
    fn not(self) -> Expr {
        Expr::Unary(UnOp::Not, Box::new(self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Vec<(String, DataType)> {
        vec![
            ("i".into(), DataType::Int64),
            ("j".into(), DataType::Int32),
            ("f".into(), DataType::Float64),
            ("g".into(), DataType::Float32),
            ("s".into(), DataType::String),
            ("b".into(), DataType::Boolean),
        ]
    }

    #[test]
    fn dtypes_follow_numpy_promotion_with_python_literals() {
        let s = schema();
        let d = |e: Expr| e.dtype(&s).unwrap();
        assert_eq!(d(col("i") + col("j")), DataType::Int64);
        assert_eq!(d(col("j") + 1), DataType::Int32);
        assert_eq!(d(col("j") + col("j")), DataType::Int32);
        assert_eq!(d(col("j") + 1.5), DataType::Float64);
        assert_eq!(d(col("g") * 2.0), DataType::Float32);
        assert_eq!(d(col("g") * col("f")), DataType::Float64);
        assert_eq!(d(col("i") / col("i")), DataType::Float64);
        assert_eq!(d(col("g") / 2), DataType::Float32);
        assert_eq!(d(col("i").gt(3) & col("b")), DataType::Boolean);
        assert_eq!(d(col("s").str_len()), DataType::Int64);
        assert_eq!(d(col("i").fill_na(0.5)), DataType::Float64);
        assert_eq!(d(col("i").cast(Dtype::String)), DataType::String);
        assert_eq!(d(col("j").floor_div(2)), DataType::Int32);
        assert_eq!(d(col("j") % 2.5), DataType::Float64);
        assert_eq!(d(col("g").pow(2)), DataType::Float32);
        assert_eq!(d(col("j").abs()), DataType::Int32);
        assert_eq!(d(col("j").clip(Some(0.into()), Some(10.into()))), DataType::Int32);
        assert_eq!(d(col("j").clip(None, Some(1.5.into()))), DataType::Float64);
    }

    #[test]
    fn wrong_operands_are_refused_naming_them() {
        let s = schema();
        let e = |x: Expr| x.dtype(&s).unwrap_err().to_string();
        assert!(e(col("s") + 1).contains("str + i64"), "{}", e(col("s") + 1));
        assert!(e(col("s").gt(1)).contains("compare"));
        assert!(e(col("i") & col("b")).contains("boolean"));
        assert!(e(col("nope") + 1).contains("nope"));
        assert!(e(col("i").str_len()).contains("StrLen"));
        assert!(e(col("s").str_contains("(")).contains("regex=False"));
        assert!(e(col("s").fill_na(1)).contains("fill"));
        assert!(e(col("i").pow(-1)).contains("negative integer powers"));
        assert!(e(col("s").clip(Some(1.into()), None)).contains("clip"));
        assert!(e(col("s").abs()).contains("Abs"));
    }

    #[test]
    fn a_program_puts_operands_before_their_use() {
        let mut p = Program::default();
        let r = p.push(&((col("a") + 1).gt(col("b")) & !col("c")), &mut Vec::new());
        assert_eq!(r as usize, p.instrs.len() - 1);
        for (i, ins) in p.instrs.iter().enumerate() {
            let ops: Vec<u32> = match ins {
                Instr::Binary(_, a, b) => vec![*a, *b],
                Instr::Unary(_, a)
                | Instr::FillNa(a, _)
                | Instr::Cast(a, _)
                | Instr::Str(_, a, _)
                | Instr::Clip(a, _, _)
                | Instr::StrReplace(a, ..) => vec![*a],
                _ => vec![],
            };
            assert!(ops.iter().all(|&o| (o as usize) < i));
        }
    }
}
