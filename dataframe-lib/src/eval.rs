//! Running a fused per-chunk map (projections, filters, new columns) on one chunk, and
//! the expression evaluator under it, with pandas' rules for missing values: NaN and
//! null are both "missing"; a comparison with a missing value is false (`!=` true).

use polars::prelude::*;

use crate::expr::{BinOp, Dtype, Instr, Program, Scalar, StrOp, UnOp, arithmetic_dtype, compute_dtype, fill_dtype};
use crate::spec::{MapSpec, MapStep};

/// Deeper expressions are refused (they would only come from a malformed task).
const MAX_DEPTH: usize = 512;

/// `spec`'s steps applied to `df` in order.
pub(crate) fn map(spec: &MapSpec, mut df: DataFrame) -> PolarsResult<DataFrame> {
    for step in &spec.steps {
        match step {
            MapStep::Select(cols) => df = df.select(cols.iter().map(|c| c.as_str()))?,
            MapStep::Filter(e) => {
                let m = eval(&spec.program, *e, &df)?;
                let m = m.bool()?.fill_null_with_values(false)?;
                df = df.filter(&m)?;
            }
            MapStep::Assign(name, e) => {
                let s = eval(&spec.program, *e, &df)?.with_name(name.as_str().into());
                df.with_column(s.into_column())?;
            }
            MapStep::Rename(pairs) => {
                for (from, to) in pairs {
                    df.rename(from, to.as_str().into())?;
                }
            }
        }
    }
    Ok(df)
}

/// Instruction `at` of `p` over the rows of `df`.
pub(crate) fn eval(p: &Program, at: u32, df: &DataFrame) -> PolarsResult<Series> {
    Eval { p, df, n: df.height() }.run(at as usize, 0)
}

struct Eval<'a> {
    p: &'a Program,
    df: &'a DataFrame,
    n: usize,
}

impl Eval<'_> {
    fn operand(&self, of: usize, i: u32, depth: usize) -> PolarsResult<Series> {
        // Operands come strictly before their user: evaluation always ends.
        polars_ensure!((i as usize) < of, ComputeError: "malformed expression: operand {i} of instruction {of}");
        self.run(i as usize, depth + 1)
    }

    /// `(column operand, text)` when one of `a`, `b` is a string literal and the other
    /// is not a literal.
    fn string_literal(&self, a: u32, b: u32) -> Option<(u32, &str)> {
        let text = |i: u32| match self.p.instrs.get(i as usize) {
            Some(Instr::Lit(Scalar::Str(v))) => Some(v.as_str()),
            _ => None,
        };
        match (text(a), text(b)) {
            (None, Some(v)) if !self.is_lit(a) => Some((a, v)),
            (Some(v), None) if !self.is_lit(b) => Some((b, v)),
            _ => None,
        }
    }

    fn is_lit(&self, i: u32) -> bool {
        matches!(self.p.instrs.get(i as usize), Some(Instr::Lit(_)))
    }

    fn run(&self, at: usize, depth: usize) -> PolarsResult<Series> {
        polars_ensure!(depth < MAX_DEPTH, ComputeError: "expression deeper than {MAX_DEPTH}");
        let Some(ins) = self.p.instrs.get(at) else {
            polars_bail!(ComputeError: "malformed expression: no instruction {at}")
        };
        match ins {
            Instr::Col(c) => Ok(self.df.column(c)?.as_materialized_series().clone()),
            Instr::Lit(s) => Ok(literal(s, self.n)),
            Instr::Const(v, d) => constant(v.as_ref(), *d, self.n),
            Instr::ZonedConst(v, d, tz) => crate::zone::zone_series(&constant(v.as_ref(), *d, self.n)?, tz),
            Instr::Value(k) | Instr::IsIn(_, k) => {
                polars_bail!(ComputeError: "lazy frame {k} reached a task unresolved")
            }
            Instr::Where(c, a, b) => {
                let (x, y) = (self.operand(at, *a, depth)?, self.operand(at, *b, depth)?);
                let Some(to) = crate::expr::where_dtype(x.dtype(), self.is_lit(*a), y.dtype(), self.is_lit(*b)) else {
                    polars_bail!(ComputeError: "where cannot choose between {} and {} values", x.dtype(), y.dtype())
                };
                let cond = self.operand(at, *c, depth)?;
                let cond = cond.bool()?.fill_null_with_values(false)?;
                let cast = |s: Series| crate::zone::cast(&s.into_column(), &to).map(Column::take_materialized_series);
                cast(x)?.zip_with(&cond, &cast(y)?)
            }
            Instr::StrSlice(a, lo, hi, step) => {
                let s = self.operand(at, *a, depth)?;
                map_str(&s, |v| py_slice(v, *lo, *hi, step.unwrap_or(1)))
            }
            Instr::Strftime(a, fmt) => crate::temporal::strftime(&self.operand(at, *a, depth)?, fmt),
            Instr::Zone(a, op, tz) => {
                let s = self.operand(at, *a, depth)?;
                if *op != crate::zone::ZoneOp::Read {
                    return crate::zone::apply(*op, tz.as_deref(), &s);
                }
                // Text is parsed by temporal (which reads zones; zone does not read text).
                let to = crate::zone::zone_dtype(*op, tz.as_deref(), s.dtype())
                    .map_err(|m| polars_err!(ComputeError: "{m}"))?;
                crate::temporal::parse_column(&s, &to)
            }
            Instr::StrGet(a, i) => {
                let s = self.operand(at, *a, depth)?;
                let out: StringChunked = s.str()?.iter().map(|v| v.and_then(|v| py_get(v, *i))).collect();
                Ok(out.with_name(s.name().clone()).into_series())
            }
            Instr::IsInSet(a, key, values) => {
                let x = self.operand(at, *a, depth)?;
                let set = Set::cached(key, values, x.dtype())?;
                set.probe(&x)
            }
            Instr::Binary(op @ (BinOp::Eq | BinOp::Ne), a, b)
                if let Some((col, text)) = self.string_literal(*a, *b)
                    && let s = self.operand(at, col, depth)?
                    && s.dtype() == &DataType::String =>
            {
                equals_text(&s, text, *op == BinOp::Ne)
            }
            Instr::Binary(op, a, b) => {
                let (x, y) = (self.operand(at, *a, depth)?, self.operand(at, *b, depth)?);
                binary(*op, x, self.is_lit(*a), y, self.is_lit(*b))
            }
            Instr::Unary(op, a) => unary(*op, self.operand(at, *a, depth)?),
            Instr::FillNa(a, v) => fill_na(self.operand(at, *a, depth)?, v),
            Instr::Cast(a, d) => {
                let (s, to) = (self.operand(at, *a, depth)?, d.to_polars());
                if s.dtype() == &DataType::String && crate::temporal::is_datetime(&to) {
                    crate::temporal::parse_column(&s, &to)
                } else if matches!(s.dtype(), DataType::Datetime(..)) && to == DataType::String {
                    crate::temporal::datetime_text(&s)
                } else {
                    s.strict_cast(&to)
                }
            }
            Instr::Str(op, a, pat) => string_test(*op, &self.operand(at, *a, depth)?, pat),
            Instr::StrReplace(a, pat, repl, regex) => {
                let s = self.operand(at, *a, depth)?;
                if *regex {
                    let re = regex::Regex::new(pat).map_err(|e| polars_err!(ComputeError: "str.replace: {e}"))?;
                    map_str(&s, |v| re.replace_all(v, repl.as_str()).into_owned())
                } else {
                    map_str(&s, |v| v.replace(pat.as_str(), repl))
                }
            }
            Instr::Clip(a, lo, hi) => {
                let s = self.operand(at, *a, depth)?;
                // The result's dtype: the column's, widened by a bound as arithmetic is.
                let mut to = s.dtype().clone();
                for b in [lo, hi].into_iter().flatten() {
                    to = arithmetic_dtype(BinOp::Add, &to, false, &literal(b, 1).dtype().clone(), true).unwrap_or(to);
                }
                let bound = |b: &Option<Scalar>| match b {
                    Some(Scalar::Int(v)) => Some(*v as f64),
                    Some(Scalar::Float(v)) => Some(*v),
                    _ => None,
                };
                crate::numeric::clip(&s.cast(&to)?, bound(lo), bound(hi))
            }
        }
    }
}

/// Whether each string of `s` is `text` (`!=`: is not), a missing one counting as
/// different (as pandas compares NaN). Compared by the 16-byte views: a string of at
/// most 12 bytes lies in its view, so one masked comparison decides; a longer one is
/// compared only where its length and first four bytes match. (polars compares a
/// column with a literal broadcast to every row, view by view through its buffers: 3%
/// of TPC-H Q10's samples.)
fn equals_text(s: &Series, text: &str, ne: bool) -> PolarsResult<Series> {
    use polars_arrow::array::{Array, BooleanArray, View};
    use polars_arrow::bitmap::Bitmap;
    let want = View::new_from_bytes(text.as_bytes(), 0, 0);
    let inline = text.len() <= View::MAX_INLINE_SIZE as usize;
    // The length (4 bytes, little-endian first) and the string's own bytes.
    let used = 4 + if inline { text.len() } else { 4 };
    let mask = if used >= 16 { u128::MAX } else { (1u128 << (8 * used)) - 1 };
    let want_bits = want.as_u128() & mask;
    let chunks = s.str()?.downcast_iter().map(|arr| {
        let views = arr.views();
        let hits: Bitmap = views
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let head = v.as_u128() & mask == want_bits;
                // SAFETY: `i` indexes the array's own views.
                let hit = head && (inline || unsafe { arr.value_unchecked(i) } == text);
                hit != ne
            })
            .collect();
        let bits = match arr.validity() {
            Some(valid) if ne => &hits | &!valid,
            Some(valid) => &hits & valid,
            None => hits,
        };
        BooleanArray::new(polars_arrow::datatypes::ArrowDataType::Boolean, bits, None)
    });
    Ok(BooleanChunked::from_chunk_iter(s.name().clone(), chunks).into_series())
}

/// `s` repeated `n` times.
fn literal(s: &Scalar, n: usize) -> Series {
    let one = match s {
        Scalar::Bool(v) => Series::new(PlSmallStr::EMPTY, [*v]),
        Scalar::Int(v) => Series::new(PlSmallStr::EMPTY, [*v]),
        Scalar::Float(v) => Series::new(PlSmallStr::EMPTY, [*v]),
        Scalar::Str(v) => Series::new(PlSmallStr::EMPTY, [v.as_str()]),
    };
    one.new_from_index(0, n)
}

/// The values of an `isin` set, hashed for lookups of one kind of value: numbers
/// compare as numbers whatever their dtypes, dates and times as the same instant.
enum SetIndex {
    Ints(IntSet),
    /// Float bits, -0.0 as 0.0 (NaN is missing, handled apart).
    Floats(hashbrown::HashSet<u64>),
    Strs(hashbrown::HashSet<String>),
    Bools(hashbrown::HashSet<bool>),
    /// Temporal values as instants in the probed column's dtype.
    Instants(IntSet, DataType),
}

/// The set a value is probed in, and whether it holds a missing value.
struct Set {
    index: SetIndex,
    has_missing: bool,
}

fn float_key(f: f64) -> u64 {
    (f + 0.0).to_bits()
}

impl Set {
    /// The set of a stored column of distinct values for probing values of dtype `dx`.
    /// A map's tasks all carry the same set: each worker process builds it once and
    /// keeps it (keyed by its bytes' hash and `dx`), so a large set is hashed per
    /// process, not per chunk.
    fn cached(key: &[u8; 32], values: &crate::expr::SetRef, dx: &DataType) -> PolarsResult<std::sync::Arc<Set>> {
        static SETS: crate::kept::Kept<Set> = crate::kept::Kept::new(256 << 20);
        let mut h = blake3::Hasher::new();
        h.update(key);
        h.update(format!("{dx:?}").as_bytes());
        SETS.get_or_make(h.finalize().as_bytes(), || {
            let chunk = ares::get(&values.0).map_err(|e| polars_err!(ComputeError: "reading an isin set: {e}"))?;
            let frame = crate::chunk::decode(&chunk.ipc)?;
            let Some(col) = frame.columns().first() else { polars_bail!(ComputeError: "isin: a set of no column") };
            // About what the hashed set takes: its values and a table slot each.
            let bytes = chunk.ipc.len() + 16 * frame.height();
            Ok((Set::build(col.as_materialized_series(), dx)?, bytes))
        })
    }

    fn build(set: &Series, dx: &DataType) -> PolarsResult<Set> {
        let ds = set.dtype();
        let index = if crate::expr::is_temporal(dx) && crate::expr::is_temporal(ds) {
            // Aware datetimes meet as UTC instants.
            let dx = &crate::zone::naive(dx);
            let phys = crate::zone::utc(set)?.cast(dx)?.to_physical_repr().cast(&DataType::Int64)?;
            SetIndex::Instants(IntSet::new(phys.i64()?.iter().flatten().collect()), dx.clone())
        } else if dx.is_integer() && ds.is_integer() {
            SetIndex::Ints(IntSet::new(set.cast(&DataType::Int64)?.i64()?.iter().flatten().collect()))
        } else if dx.is_primitive_numeric() && ds.is_primitive_numeric() {
            SetIndex::Floats(set.cast(&DataType::Float64)?.f64()?.iter().flatten().map(float_key).collect())
        } else if dx == &DataType::String && ds == &DataType::String {
            SetIndex::Strs(set.str()?.iter().flatten().map(str::to_string).collect())
        } else if dx == &DataType::Boolean && ds == &DataType::Boolean {
            SetIndex::Bools(set.bool()?.iter().flatten().collect())
        } else {
            polars_bail!(ComputeError: "isin: cannot look for {dx} values among {ds} ones")
        };
        Ok(Set { index, has_missing: missing(set)?.any() })
    }

    /// Whether each value of `x` is in the set (pandas' `isin`); a missing `x` is in it
    /// when the set has a missing value (null or NaN alike), else it is not.
    fn probe(&self, x: &Series) -> PolarsResult<Series> {
        let ints = |s: &Series, set: &IntSet| -> PolarsResult<BooleanChunked> {
            let ca = s.i64()?;
            Ok(if ca.null_count() == 0 {
                BooleanChunked::from_iter_values(PlSmallStr::EMPTY, ca.into_no_null_iter().map(|v| set.contains(v)))
            } else {
                ca.iter().map(|v| Some(v.is_some_and(|v| set.contains(v)))).collect()
            })
        };
        let hits: BooleanChunked = match &self.index {
            SetIndex::Instants(set, d) => {
                ints(&crate::zone::utc(x)?.cast(d)?.to_physical_repr().cast(&DataType::Int64)?, set)?
            }
            SetIndex::Ints(set) => ints(&x.cast(&DataType::Int64)?, set)?,
            SetIndex::Floats(set) => {
                let v = x.cast(&DataType::Float64)?;
                v.f64()?.iter().map(|v| Some(v.is_some_and(|v| !v.is_nan() && set.contains(&float_key(v))))).collect()
            }
            SetIndex::Strs(set) => x.str()?.iter().map(|v| Some(v.is_some_and(|v| set.contains(v)))).collect(),
            SetIndex::Bools(set) => x.bool()?.iter().map(|v| Some(v.is_some_and(|v| set.contains(&v)))).collect(),
        };
        let hits = if self.has_missing { &hits | &missing(x)? } else { hits };
        Ok(hits.with_name(x.name().clone()).into_series())
    }
}

/// A set of integers: a bitmap over their range where it is at most 128 bits a value
/// (what a hashed set takes; TPC-H's order keys of one nation's suppliers: 70 000 of
/// 6M), else hashed. A lookup in the bitmap is a bit test, not a hash and a probe.
enum IntSet {
    Dense { min: i64, bits: Vec<u64> },
    Hashed(hashbrown::HashSet<i64>),
}

impl IntSet {
    fn new(values: Vec<i64>) -> IntSet {
        let (Some(&min), Some(&max)) = (values.iter().min(), values.iter().max()) else {
            return IntSet::Hashed(hashbrown::HashSet::new());
        };
        let span = (max as i128 - min as i128 + 1) as u128;
        if span > 128 * values.len() as u128 + 4096 {
            return IntSet::Hashed(values.into_iter().collect());
        }
        // At most 128 bits a value (and 4096 more): the span fits memory's sizes.
        let mut bits = vec![0u64; (span as usize).div_ceil(64)];
        for v in values {
            let at = v.wrapping_sub(min) as u64;
            bits[(at / 64) as usize] |= 1 << (at % 64);
        }
        IntSet::Dense { min, bits }
    }

    fn contains(&self, v: i64) -> bool {
        match self {
            IntSet::Dense { min, bits } => match v.checked_sub(*min) {
                // Below the least value, or so far above it that the difference overflows.
                Some(at) if at >= 0 => bits.get(at as usize / 64).is_some_and(|w| w >> (at % 64) & 1 == 1),
                _ => false,
            },
            IntSet::Hashed(set) => set.contains(&v),
        }
    }
}

/// `v` (physical, for dates and times) as dtype `d` in each of `n` rows.
fn constant(v: Option<&Scalar>, d: Dtype, n: usize) -> PolarsResult<Series> {
    let to = d.to_polars();
    let Some(v) = v else { return Ok(Series::full_null(PlSmallStr::EMPTY, n, &to)) };
    let one = literal(v, 1);
    let one = match d {
        Dtype::Date => one.strict_cast(&DataType::Int32)?.strict_cast(&to)?,
        _ => one.strict_cast(&to)?,
    };
    Ok(one.new_from_index(0, n))
}

/// NaN values of a float series made null (pandas counts both as missing).
pub(crate) fn nan_to_null(s: Series) -> PolarsResult<Series> {
    if !s.dtype().is_float() {
        return Ok(s);
    }
    let nan = s.is_nan()?.fill_null_with_values(false)?;
    if !nan.any() {
        return Ok(s);
    }
    let nulls = Series::full_null(s.name().clone(), s.len(), s.dtype());
    s.zip_with(&!&nan, &nulls)
}

/// Missing per row: null, or NaN.
pub(crate) fn missing(s: &Series) -> PolarsResult<BooleanChunked> {
    let null = s.is_null();
    if s.dtype().is_float() { Ok(&null | &s.is_nan()?.fill_null_with_values(false)?) } else { Ok(null) }
}

fn binary(op: BinOp, a: Series, a_lit: bool, b: Series, b_lit: bool) -> PolarsResult<Series> {
    if (op.is_arithmetic() || matches!(op, BinOp::Maximum | BinOp::Minimum))
        && crate::temporal::arithmetic_dtype(op, a.dtype(), b.dtype()).is_some()
    {
        return crate::temporal::binary(op, &a, &b);
    }
    if op.is_arithmetic() || matches!(op, BinOp::Maximum | BinOp::Minimum) {
        let Some(to) = arithmetic_dtype(op, a.dtype(), a_lit, b.dtype(), b_lit) else {
            polars_bail!(ComputeError: "cannot compute {} {} {}", a.dtype(), op.symbol(), b.dtype())
        };
        // The engine's kernels, as a tensor computes them. A literal converts exactly or
        // fails (a column's cast to the promoted dtype always converts).
        let cast = |s: &Series, lit: bool| if lit { s.strict_cast(&to) } else { s.cast(&to) };
        return crate::numeric::binary(op, &cast(&a, a_lit)?, &cast(&b, b_lit)?);
    }
    if op.is_comparison() {
        // Numbers compare through the engine's kernels, in the dtype numpy compares in.
        if let Some(to) = compute_dtype(op, a.dtype(), a_lit, b.dtype(), b_lit) {
            return crate::numeric::compare(op, &a.cast(&to)?, &b.cast(&to)?);
        }
        let (a, b) = comparable(a, b)?;
        let out = match op {
            BinOp::Eq => a.equal(&b)?,
            BinOp::Ne => a.not_equal(&b)?,
            BinOp::Lt => a.lt(&b)?,
            BinOp::Le => a.lt_eq(&b)?,
            BinOp::Gt => a.gt(&b)?,
            _ => a.gt_eq(&b)?,
        };
        // A missing operand: false, except `!=`, as NaN compares in pandas.
        return Ok(out.fill_null_with_values(op == BinOp::Ne)?.into_series());
    }
    let (x, y) = (a.bool()?.fill_null_with_values(false)?, b.bool()?.fill_null_with_values(false)?);
    Ok(if op == BinOp::And { &x & &y } else { &x | &y }.into_series())
}

/// Both sides in one dtype to compare, NaN made null; dates and times of different
/// kinds or units as nanosecond timestamps (a date is its midnight).
fn comparable(a: Series, b: Series) -> PolarsResult<(Series, Series)> {
    // Aware datetimes (of any zones) compare as instants.
    let (a, b) = (crate::zone::utc(&a)?, crate::zone::utc(&b)?);
    if crate::temporal::is_duration(a.dtype()) && a.dtype() != b.dtype() {
        let ns = DataType::Duration(TimeUnit::Nanoseconds);
        return Ok((a.cast(&ns)?, b.cast(&ns)?));
    }
    if a.dtype() != b.dtype() && crate::expr::is_temporal(a.dtype()) && crate::expr::is_temporal(b.dtype()) {
        let ns = DataType::Datetime(TimeUnit::Nanoseconds, None);
        return Ok((a.cast(&ns)?, b.cast(&ns)?));
    }
    let num = |d: &DataType| d.is_primitive_numeric() || d == &DataType::Boolean;
    if num(a.dtype()) && num(b.dtype()) && a.dtype() != b.dtype() {
        let to = if a.dtype().is_float() || b.dtype().is_float() { DataType::Float64 } else { DataType::Int64 };
        return Ok((nan_to_null(a.cast(&to)?)?, nan_to_null(b.cast(&to)?)?));
    }
    Ok((nan_to_null(a)?, nan_to_null(b)?))
}

fn unary(op: UnOp, s: Series) -> PolarsResult<Series> {
    let name = s.name().clone();
    Ok(match op {
        // numpy's negative (the sign of zero kept, integers wrapping).
        UnOp::Neg | UnOp::Abs if crate::temporal::is_duration(s.dtype()) => {
            crate::temporal::duration_unary(op == UnOp::Abs, &s)?
        }
        UnOp::Neg => crate::numeric::unary(ares_tileable::scalar::UnOp::Neg, &s)?,
        UnOp::Not => (!s.bool()?).into_series(),
        UnOp::IsNa => missing(&s)?.into_series(),
        UnOp::NotNa => (!&missing(&s)?).into_series(),
        UnOp::StrLower => map_str(&s, |v| v.to_lowercase())?,
        UnOp::StrUpper => map_str(&s, |v| v.to_uppercase())?,
        UnOp::StrStrip => map_str(&s, |v| v.trim_matches(py_space).to_string())?,
        UnOp::StrLStrip => map_str(&s, |v| v.trim_start_matches(py_space).to_string())?,
        UnOp::StrRStrip => map_str(&s, |v| v.trim_end_matches(py_space).to_string())?,
        UnOp::Abs => crate::numeric::abs(&s)?,
        UnOp::Round(d) => crate::numeric::round(&s, d)?,
        UnOp::StrLen => {
            s.str()?.iter().map(|v| v.map(|v| v.chars().count() as i64)).collect::<Int64Chunked>().into_series()
        }
        UnOp::Dt(op) => crate::temporal::field(op, &s)?,
    }
    .with_name(name))
}

fn fill_na(s: Series, v: &Scalar) -> PolarsResult<Series> {
    let Some(to) = fill_dtype(s.dtype(), v) else {
        polars_bail!(ComputeError: "cannot fill missing values of a {} column with {v:?}", s.dtype())
    };
    let s = nan_to_null(s.cast(&to)?)?;
    let fill = literal(v, s.len()).cast(&to)?;
    s.zip_with(&s.is_not_null(), &fill)
}

/// Whitespace as Python's `str.strip` sees it: Unicode's, and the ASCII separators
/// 0x1C–0x1F that Python counts too.
fn py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// `f` of every present string of `s`.
/// Python's `v[lo:hi:step]` over the characters of `v` (`step` is not 0).
fn py_slice(v: &str, lo: Option<i64>, hi: Option<i64>, step: i64) -> String {
    let chars: Vec<char> = v.chars().collect();
    let n = chars.len() as i64;
    // Python's slice.indices: negative bounds count from the end, then clamp.
    let fix = |b: Option<i64>, default: i64, min: i64, max: i64| match b {
        None => default,
        Some(b) if b < 0 => (b + n).max(min),
        Some(b) => b.min(max),
    };
    let (lo, hi) = if step > 0 {
        (fix(lo, 0, 0, n), fix(hi, n, 0, n))
    } else {
        (fix(lo, n - 1, -1, n - 1), fix(hi, -1, -1, n - 1))
    };
    let mut out = String::new();
    let mut i = lo;
    while (step > 0 && i < hi) || (step < 0 && i > hi) {
        out.push(chars[i as usize]);
        i += step;
    }
    out
}

/// Python's `v[i]` over the characters of `v`, `None` out of range.
fn py_get(v: &str, i: i64) -> Option<&str> {
    let n = v.chars().count() as i64;
    let i = if i < 0 { i + n } else { i };
    if i < 0 || i >= n {
        return None;
    }
    v.char_indices().nth(i as usize).map(|(b, c)| &v[b..b + c.len_utf8()])
}

fn map_str(s: &Series, f: impl Fn(&str) -> String) -> PolarsResult<Series> {
    let out: StringChunked = s.str()?.iter().map(|v| v.map(&f)).collect();
    Ok(out.with_name(s.name().clone()).into_series())
}

/// Each string's list of parts (see [`StrOp::SplitWhitespace`] and the others).
fn split(op: StrOp, s: &Series, pat: &str) -> PolarsResult<Series> {
    let re = if op == StrOp::SplitRegex {
        Some(regex::Regex::new(pat).map_err(|e| polars_err!(ComputeError: "str.split: {e}"))?)
    } else {
        None
    };
    let parts = |v: &str| -> Series {
        let words: Vec<&str> = match (op, &re) {
            (StrOp::SplitWhitespace, _) => v.split_whitespace().collect(),
            (_, Some(re)) => re.split(v).collect(),
            _ => v.split(pat).collect(),
        };
        Series::new(PlSmallStr::EMPTY, words)
    };
    let lists: Vec<Option<Series>> = s.str()?.iter().map(|v| v.map(parts)).collect();
    let mut out = ListChunked::from_iter(lists);
    out.rename(s.name().clone());
    // An all-missing column's lists still hold strings.
    out.cast(&DataType::List(Box::new(DataType::String)))
}

fn string_test(op: StrOp, s: &Series, pat: &str) -> PolarsResult<Series> {
    let ca = s.str()?;
    let out: BooleanChunked = match op {
        StrOp::Contains => {
            let re = regex::Regex::new(pat).map_err(|e| polars_err!(ComputeError: "str.contains: {e}"))?;
            ca.iter().map(|v| v.map(|v| re.is_match(v))).collect()
        }
        StrOp::ContainsLiteral => ca.iter().map(|v| v.map(|v| v.contains(pat))).collect(),
        StrOp::StartsWith => ca.iter().map(|v| v.map(|v| v.starts_with(pat))).collect(),
        StrOp::EndsWith => ca.iter().map(|v| v.map(|v| v.ends_with(pat))).collect(),
        StrOp::SplitWhitespace | StrOp::SplitLiteral | StrOp::SplitRegex => return split(op, s, pat),
    };
    Ok(out.with_name(s.name().clone()).into_series())
}

#[cfg(test)]
mod text_equality {
    use super::equals_text;
    use polars::prelude::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn equality_with_a_literal_is_the_strings_equality_missing_as_different(
            values in prop::collection::vec(prop::option::of(prop_oneof![
                Just(String::new()), Just("R".to_string()), Just("abcdefghijkl".to_string()),
                Just("abcdefghijklm".to_string()), Just("abcdXXXXXXXXXXXXXX".to_string()), "[a-d]{0,20}",
            ]), 0..40),
            text in prop_oneof![Just(String::new()), Just("R".to_string()), Just("abcdefghijkl".to_string()),
                Just("abcdefghijklm".to_string()), "[a-d]{0,20}"],
            split in 0usize..40,
        ) {
            // Two chunks, as a stacked frame has them.
            let at = split.min(values.len());
            let mut s = Series::new("s".into(), &values[..at]);
            s.append(&Series::new("s".into(), &values[at..])).unwrap();
            for ne in [false, true] {
                let got: Vec<Option<bool>> = equals_text(&s, &text, ne).unwrap().bool().unwrap().iter().collect();
                let want: Vec<Option<bool>> = values.iter().map(|v| Some(v.as_deref().is_some_and(|v| v == text) != ne)).collect();
                prop_assert_eq!(got, want);
            }
        }
    }
}

#[cfg(test)]
mod int_sets {
    use super::IntSet;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn an_int_set_holds_exactly_its_values_dense_or_hashed(
            values in prop::collection::vec(prop_oneof![-300i64..300, any::<i64>()], 0..50),
            probes in prop::collection::vec(prop_oneof![-400i64..400, any::<i64>(), Just(i64::MIN), Just(i64::MAX)], 0..80),
        ) {
            let set = IntSet::new(values.clone());
            for v in probes.iter().chain(&values) {
                prop_assert_eq!(set.contains(*v), values.contains(v), "{}", v);
            }
        }
    }

    #[test]
    fn a_narrow_span_is_a_bitmap_and_a_wide_one_is_hashed() {
        assert!(matches!(IntSet::new((0..1000).map(|v| v * 7).collect()), IntSet::Dense { .. }));
        assert!(matches!(IntSet::new(vec![i64::MIN, 0, i64::MAX]), IntSet::Hashed(_)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::{Dtype, col};

    fn run(e: crate::expr::Expr, df: &DataFrame) -> Series {
        let mut p = Program::default();
        let at = p.push(&e, &mut Vec::new());
        eval(&p, at, df).unwrap()
    }

    fn frame() -> DataFrame {
        df!(
            "f" => [Some(1.5), None, Some(f64::NAN), Some(-2.0)],
            "i" => [Some(3i64), Some(4), None, Some(-1)],
            "s" => [Some("apple"), None, Some("banana"), Some("cherry pie")],
        )
        .unwrap()
    }

    #[test]
    fn string_slices_and_gets_are_pythons() {
        let words = ["", "a", "héllo", "wörld!"];
        // (start, stop, step) against Python's own answers for "héllo".
        let cases: [(Option<i64>, Option<i64>, i64, &str); 8] = [
            (None, Some(2), 1, "hé"),
            (Some(-3), None, 1, "llo"),
            (Some(1), Some(-1), 1, "éll"),
            (None, None, -1, "olléh"),
            (Some(3), Some(0), -1, "llé"),
            (Some(10), Some(20), 1, ""),
            (Some(-10), Some(2), 1, "hé"),
            (None, None, 2, "hlo"),
        ];
        for (lo, hi, step, want) in cases {
            assert_eq!(py_slice(words[2], lo, hi, step), want, "{lo:?}:{hi:?}:{step}");
        }
        assert_eq!(py_slice(words[0], Some(-1), None, 1), "");
        assert_eq!(py_get(words[3], 1), Some("ö"));
        assert_eq!(py_get(words[3], -1), Some("!"));
        assert_eq!(py_get(words[1], 1), None);
        assert_eq!(py_get(words[0], 0), None);
    }

    #[test]
    fn comparisons_treat_nan_and_null_as_pandas_does() {
        let df = frame();
        let gt: Vec<Option<bool>> = run(col("f").gt(0), &df).bool().unwrap().iter().collect();
        assert_eq!(gt, [Some(true), Some(false), Some(false), Some(false)]);
        let ne: Vec<Option<bool>> = run(col("f").ne(1.5), &df).bool().unwrap().iter().collect();
        assert_eq!(ne, [Some(false), Some(true), Some(true), Some(true)]);
        let na: Vec<Option<bool>> = run(col("f").is_na(), &df).bool().unwrap().iter().collect();
        assert_eq!(na, [Some(false), Some(true), Some(true), Some(false)]);
    }

    #[test]
    fn arithmetic_fill_cast_and_strings() {
        let df = frame();
        let s = run((col("i") + col("f")) * 2, &df);
        let v: Vec<Option<f64>> = s.f64().unwrap().iter().collect();
        assert_eq!(v[0], Some(9.0));
        assert_eq!(v[1], None);
        let div: Vec<Option<f64>> = run(col("i") / 2, &df).f64().unwrap().iter().collect();
        assert_eq!(div[0], Some(1.5));
        let filled: Vec<Option<f64>> = run(col("f").fill_na(0.0), &df).f64().unwrap().iter().collect();
        assert_eq!(filled, [Some(1.5), Some(0.0), Some(0.0), Some(-2.0)]);
        let neg: Vec<Option<i64>> = run(-col("i"), &df).i64().unwrap().iter().collect();
        assert_eq!(neg, [Some(-3), Some(-4), None, Some(1)]);
        let st = run(col("i").cast(Dtype::String), &df);
        let st: Vec<Option<&str>> = st.str().unwrap().iter().collect();
        assert_eq!(st, [Some("3"), Some("4"), None, Some("-1")]);
        let c = run(col("s").str_contains("an+a$"), &df);
        assert_eq!(c.bool().unwrap().iter().collect::<Vec<_>>(), [Some(false), None, Some(true), Some(false)]);
        let l = run(col("s").str_len(), &df);
        assert_eq!(l.i64().unwrap().iter().collect::<Vec<_>>(), [Some(5), None, Some(6), Some(10)]);
        let strs = |e| run(e, &df).str().unwrap().iter().map(|v| v.map(str::to_string)).collect::<Vec<_>>();
        let up = strs(col("s").str_map(UnOp::StrUpper));
        assert_eq!(up[3].as_deref(), Some("CHERRY PIE"));
        assert_eq!(up[1], None);
        let lit = strs(col("s").str_replace("an", "AN", false));
        assert_eq!(lit[2].as_deref(), Some("bANANa"));
        let re = strs(col("s").str_replace(r"(\w+) (\w+)", "$2-$1", true));
        assert_eq!(re[3].as_deref(), Some("pie-cherry"));
        let padded = df!("w" => [" a b  "]).unwrap();
        let st = run(col("w").str_map(UnOp::StrStrip), &padded);
        assert_eq!(st.str().unwrap().get(0), Some("a b"));
    }

    #[test]
    fn a_malformed_program_is_an_error_not_a_loop() {
        let p = Program { instrs: vec![Instr::Unary(UnOp::Neg, 0)] };
        assert!(eval(&p, 0, &frame()).is_err());
        assert!(eval(&p, 7, &frame()).is_err());
    }
}
