//! Dates, datetimes and durations as pandas computes them: the `.dt` fields, rounding
//! down (`floor`, `normalize`), calendar months (`DateOffset(months=)`), `strftime`,
//! and arithmetic with durations (`Timedelta`). Values are computed on their physical
//! integers (days; units since the epoch; nanoseconds), time-zone naive, in the
//! proleptic Gregorian calendar; an aware column's fields are its wall times' (see
//! `zone`). Results of datetime arithmetic are nanosecond datetimes (in the zone of
//! the datetime operand) and durations, as pandas makes them.

use ares_tileable::scalar::BinOp;
use polars::prelude::*;

/// A `.dt` computation on dates and datetimes (held by `UnOp::Dt`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub enum DtOp {
    /// `.dt.year`.
    Year,
    /// `.dt.month`.
    Month,
    /// `.dt.day`.
    Day,
    /// `.dt.dayofweek` (Monday 0).
    DayOfWeek,
    /// `.dt.dayofyear` (from 1).
    DayOfYear,
    /// `.dt.quarter`.
    Quarter,
    /// `.dt.hour`.
    Hour,
    /// `.dt.minute`.
    Minute,
    /// `.dt.second`.
    Second,
    /// `.dt.microsecond`.
    Microsecond,
    /// `.dt.nanosecond`.
    Nanosecond,
    /// `.dt.days_in_month`.
    DaysInMonth,
    /// `.dt.is_month_start`.
    IsMonthStart,
    /// `.dt.is_month_end`.
    IsMonthEnd,
    /// `.dt.is_quarter_start`.
    IsQuarterStart,
    /// `.dt.is_quarter_end`.
    IsQuarterEnd,
    /// `.dt.is_year_start`.
    IsYearStart,
    /// `.dt.is_year_end`.
    IsYearEnd,
    /// `.dt.is_leap_year`.
    IsLeapYear,
    /// `.dt.date`: the calendar date.
    Date,
    /// The ISO 8601 year (of the week's Thursday: `isocalendar().year`).
    IsoYear,
    /// The ISO 8601 week, 1 to 53 (`isocalendar().week`).
    IsoWeek,
    /// `.dt.floor(freq)`, `freq` in nanoseconds (`normalize()` is a day's).
    Floor(i64),
    /// `.dt.ceil(freq)`: up to a multiple of `freq` nanoseconds.
    Ceil(i64),
    /// `.dt.round(freq)`: to the nearest multiple, halves to the even one (pandas').
    Round(i64),
    /// `+ DateOffset(months=n)`: `n` calendar months later, the day clipped to the month.
    AddMonths(i32),
}

pub(crate) const NS_PER_DAY: i64 = 86_400 * 1_000_000_000;
const NS: TimeUnit = TimeUnit::Nanoseconds;

/// A date or a datetime (naive or aware).
pub(crate) fn is_datetime(d: &DataType) -> bool {
    matches!(d, DataType::Date | DataType::Datetime(..))
}

pub(crate) fn is_duration(d: &DataType) -> bool {
    matches!(d, DataType::Duration(_))
}

fn is_number(d: &DataType) -> bool {
    d.is_primitive_numeric()
}

fn unit_ns(u: TimeUnit) -> i64 {
    match u {
        TimeUnit::Nanoseconds => 1,
        TimeUnit::Microseconds => 1_000,
        TimeUnit::Milliseconds => 1_000_000,
    }
}

/// Nanoseconds per physical unit of a date (a day), datetime or duration.
fn ns_per(d: &DataType) -> Option<i64> {
    match d {
        DataType::Date => Some(NS_PER_DAY),
        DataType::Datetime(u, _) | DataType::Duration(u) => Some(unit_ns(*u)),
        _ => None,
    }
}

/// The dtype of `a op b` when either operand is a date, datetime or duration: `None`
/// when neither is, else the result's dtype or why there is none.
pub(crate) fn arithmetic_dtype(op: BinOp, a: &DataType, b: &DataType) -> Option<Result<DataType, String>> {
    let (ta, tb) = (is_datetime(a), is_datetime(b));
    let (da, db) = (is_duration(a), is_duration(b));
    if !(ta || tb || da || db) {
        return None;
    }
    let (za, zb) = (crate::zone::zone_of(a), crate::zone::zone_of(b));
    if ta && tb && za.is_some() != zb.is_some() {
        return Some(Err(format!(
            "cannot compute {a} {} {b}: one is time-zone aware and the other naive (pandas refuses it); \
             localize the naive one with .dt.tz_localize(tz)",
            op.symbol()
        )));
    }
    let ns_in = |z: Option<&str>| crate::zone::with_zone(&DataType::Datetime(NS, None), z);
    let out = match op {
        BinOp::Add if (ta && db) || (da && tb) => Some(ns_in(za.or(zb))),
        BinOp::Sub if ta && db => Some(ns_in(za)),
        BinOp::Sub if ta && tb => Some(DataType::Duration(NS)),
        BinOp::Add | BinOp::Sub | BinOp::Mod if da && db => Some(DataType::Duration(NS)),
        BinOp::Div if da && db => Some(DataType::Float64),
        BinOp::FloorDiv if da && db => Some(DataType::Int64),
        BinOp::Mul if (da && is_number(b)) || (is_number(a) && db) => Some(DataType::Duration(NS)),
        BinOp::Div | BinOp::FloorDiv if da && is_number(b) => Some(DataType::Duration(NS)),
        BinOp::Maximum | BinOp::Minimum if a == b => Some(a.clone()),
        _ => None,
    };
    Some(out.ok_or_else(|| {
        format!(
            "cannot compute {a} {} {b}: dates and times take durations (pd.Timedelta) added or subtracted, \
             durations take numbers as factors",
            op.symbol()
        )
    }))
}

/// Each value as nanoseconds (dates at midnight), wrapping as numpy's do.
fn nanos(s: &Series) -> PolarsResult<Int64Chunked> {
    let Some(per) = ns_per(s.dtype()) else {
        polars_bail!(ComputeError: "{} is not a date, time or duration", s.dtype())
    };
    let phys = s.to_physical_repr().cast(&DataType::Int64)?;
    Ok(phys.i64()?.apply_values(|v| v.wrapping_mul(per)))
}

fn to_datetime(ca: Int64Chunked, zone: Option<&str>) -> PolarsResult<Series> {
    Ok(crate::zone::datetimes(ca, &DataType::Datetime(NS, None), zone))
}

fn to_duration(ca: Int64Chunked) -> Series {
    ca.into_duration(NS).into_series()
}

/// `a op b` with a date, datetime or duration operand (typed by [`arithmetic_dtype`]).
pub(crate) fn binary(op: BinOp, a: &Series, b: &Series) -> PolarsResult<Series> {
    let name = a.name().clone();
    let (da, db) = (a.dtype().clone(), b.dtype().clone());
    let zone = crate::zone::zone_of(&da).or(crate::zone::zone_of(&db));
    match arithmetic_dtype(op, &da, &db) {
        Some(Ok(_)) => {}
        Some(Err(m)) => polars_bail!(ComputeError: "{m}"),
        None => polars_bail!(ComputeError: "{da} {} {db} has no date or time operand", op.symbol()),
    }
    let ints = |x: &Int64Chunked, y: &Int64Chunked, f: &dyn Fn(i64, i64) -> Option<i64>| -> Int64Chunked {
        x.iter().zip(y.iter()).map(|(x, y)| x.zip(y).and_then(|(x, y)| f(x, y))).collect()
    };
    let out = match op {
        BinOp::Add | BinOp::Sub | BinOp::Mod if is_duration(&da) && is_duration(&db) || is_datetime(&da) => {
            let (x, y) = (nanos(a)?, nanos(b)?);
            let r = ints(&x, &y, &|x, y| match op {
                BinOp::Add => Some(x.wrapping_add(y)),
                BinOp::Sub => Some(x.wrapping_sub(y)),
                // Python's modulo: the divisor's sign.
                _ => (y != 0).then(|| x.rem_euclid(y) + if y < 0 && x.rem_euclid(y) != 0 { y } else { 0 }),
            });
            if is_datetime(&da) && !is_datetime(&db) { to_datetime(r, zone)? } else { to_duration(r) }
        }
        BinOp::Add => to_datetime(ints(&nanos(a)?, &nanos(b)?, &|x, y| Some(x.wrapping_add(y))), zone)?,
        BinOp::Div | BinOp::FloorDiv if is_duration(&db) => {
            let (x, y) = (nanos(a)?, nanos(b)?);
            if op == BinOp::Div {
                let r: Float64Chunked =
                    x.iter().zip(y.iter()).map(|(x, y)| x.zip(y).map(|(x, y)| x as f64 / y as f64)).collect();
                r.into_series()
            } else {
                ints(&x, &y, &|x, y| (y != 0).then(|| x.div_euclid(y) - i64::from(y < 0 && x.rem_euclid(y) != 0)))
                    .into_series()
            }
        }
        BinOp::Maximum | BinOp::Minimum => {
            let (x, y) = (nanos(a)?, nanos(b)?);
            let r = ints(&x, &y, &|x, y| Some(if op == BinOp::Maximum { x.max(y) } else { x.min(y) }));
            if is_duration(&da) { to_duration(r) } else { to_datetime(r, zone)? }
        }
        _ => {
            // A duration and a number: scaled in floating point, truncated toward zero
            // (pandas'), missing where the result is not finite.
            let (d, n) = if is_duration(&da) { (a, b) } else { (b, a) };
            let d = nanos(d)?;
            if n.dtype().is_integer() && (op == BinOp::Mul || is_duration(&da)) {
                // By an integer: exactly, as numpy's timedelta64 does (through a float,
                // durations beyond 2^53 ns lost their last digits): a product wrapping, a
                // quotient (`/` and `//` alike) truncated toward zero, missing by 0.
                let n = n.cast(&DataType::Int64)?;
                let r: Int64Chunked = d
                    .iter()
                    .zip(n.i64()?.iter())
                    .map(|(d, n)| {
                        let (d, n) = (d?, n?);
                        if op == BinOp::Mul { Some(d.wrapping_mul(n)) } else { d.checked_div(n) }
                    })
                    .collect();
                return Ok(to_duration(r).with_name(name));
            }
            let n = n.cast(&DataType::Float64)?;
            let r: Int64Chunked = d
                .iter()
                .zip(n.f64()?.iter())
                .map(|(d, n)| {
                    let (d, n) = (d? as f64, n?);
                    // `//` too truncates: pandas' floor division of durations by numbers.
                    let v = if op == BinOp::Mul { d * n } else { d / n };
                    v.is_finite().then_some(v as i64)
                })
                .collect();
            to_duration(r)
        }
    };
    Ok(out.with_name(name))
}

/// `abs(x)` (`abs`), else `-x`, of a duration.
pub(crate) fn duration_unary(abs: bool, s: &Series) -> PolarsResult<Series> {
    let v = nanos(s)?;
    let r = if abs { v.apply_values(i64::wrapping_abs) } else { v.apply_values(i64::wrapping_neg) };
    Ok(to_duration(r).with_name(s.name().clone()))
}

/// The dtype `op` gives a date or datetime, or `None` for another dtype.
pub(crate) fn field_dtype(op: DtOp, input: &DataType) -> Option<DataType> {
    if !is_datetime(input) {
        return None;
    }
    Some(match op {
        DtOp::Year
        | DtOp::Month
        | DtOp::Day
        | DtOp::DayOfWeek
        | DtOp::DayOfYear
        | DtOp::Quarter
        | DtOp::Hour
        | DtOp::Minute
        | DtOp::Second
        | DtOp::Microsecond
        | DtOp::Nanosecond
        | DtOp::DaysInMonth
        | DtOp::IsoYear
        | DtOp::IsoWeek => DataType::Int32,
        DtOp::IsMonthStart
        | DtOp::IsMonthEnd
        | DtOp::IsQuarterStart
        | DtOp::IsQuarterEnd
        | DtOp::IsYearStart
        | DtOp::IsYearEnd
        | DtOp::IsLeapYear => DataType::Boolean,
        DtOp::Date => DataType::Date,
        DtOp::Floor(unit) | DtOp::Ceil(unit) | DtOp::Round(unit) if unit > 0 => input.clone(),
        DtOp::Floor(_) | DtOp::Ceil(_) | DtOp::Round(_) => return None,
        DtOp::AddMonths(_) => input.clone(),
    })
}

/// Each value's day (since 1970-01-01) and time of day in nanoseconds.
fn day_and_time(s: &Series) -> PolarsResult<Vec<Option<(i64, i64)>>> {
    let phys = s.to_physical_repr().cast(&DataType::Int64)?;
    let per = ns_per(s.dtype()).unwrap_or(1);
    let per_day = NS_PER_DAY / per;
    Ok(phys.i64()?.iter().map(|v| v.map(|v| (v.div_euclid(per_day), v.rem_euclid(per_day) * per))).collect())
}

/// A `.dt` field, `date`, `floor`/`normalize` or a month offset of a date or datetime.
pub(crate) fn field(op: DtOp, s: &Series) -> PolarsResult<Series> {
    let name = s.name().clone();
    let Some(out) = field_dtype(op, s.dtype()) else {
        polars_bail!(ComputeError: ".dt: {op:?} is not defined for dtype {}", s.dtype())
    };
    if crate::zone::zone_of(s.dtype()).is_some() {
        // On the wall times; a datetime result is localized again.
        let r = field(op, &crate::zone::wall(s)?)?;
        return if out == *s.dtype() { crate::zone::relocalize(&r, s.dtype()) } else { Ok(r) };
    }
    let parts = day_and_time(s)?;
    let per = ns_per(s.dtype()).unwrap_or(1);
    let r = match out {
        DataType::Int32 => {
            parts.iter().map(|p| p.map(|(d, t)| int_field(op, d, t))).collect::<Int32Chunked>().into_series()
        }
        DataType::Boolean => {
            parts.iter().map(|p| p.map(|(d, _)| flag(op, d))).collect::<BooleanChunked>().into_series()
        }
        DataType::Date => {
            parts.iter().map(|p| p.map(|(d, _)| d as i32)).collect::<Int32Chunked>().into_date().into_series()
        }
        _ => {
            // Same dtype: back to its physical unit.
            let phys: Int64Chunked = parts
                .iter()
                .map(|p| {
                    p.map(|(d, t)| {
                        let (d, t) = match op {
                            DtOp::Floor(unit) | DtOp::Ceil(unit) | DtOp::Round(unit) => {
                                let ns = d.wrapping_mul(NS_PER_DAY).wrapping_add(t);
                                let (q, r) = (ns.div_euclid(unit), ns.rem_euclid(unit));
                                let up = match op {
                                    DtOp::Ceil(_) => r != 0,
                                    DtOp::Round(_) => {
                                        2 * (r as i128) > unit as i128
                                            || (2 * (r as i128) == unit as i128 && q % 2 != 0)
                                    }
                                    _ => false,
                                };
                                let f = (q + i64::from(up)).wrapping_mul(unit);
                                (f.div_euclid(NS_PER_DAY), f.rem_euclid(NS_PER_DAY))
                            }
                            DtOp::AddMonths(n) => (add_months(d, n), t),
                            _ => (d, t),
                        };
                        if s.dtype() == &DataType::Date { d } else { d * (NS_PER_DAY / per) + t / per }
                    })
                })
                .collect();
            phys.cast(&out.to_physical())?.cast(&out)?
        }
    };
    Ok(r.with_name(name))
}

fn int_field(op: DtOp, day: i64, t: i64) -> i32 {
    let (y, m, d) = civil_from_days(day);
    let v = match op {
        DtOp::Year => y,
        DtOp::Month => m.into(),
        DtOp::Day => d.into(),
        // Monday is 0; 1970-01-01 was a Thursday.
        DtOp::DayOfWeek => (day + 3).rem_euclid(7),
        DtOp::DayOfYear => day - days_from_civil(y, 1, 1) + 1,
        DtOp::Quarter => i64::from((m - 1) / 3 + 1),
        DtOp::Hour => t / 3_600_000_000_000,
        DtOp::Minute => t / 60_000_000_000 % 60,
        DtOp::Second => t / 1_000_000_000 % 60,
        DtOp::Microsecond => t / 1_000 % 1_000_000,
        DtOp::Nanosecond => t % 1_000,
        DtOp::IsoYear | DtOp::IsoWeek => {
            // The week's Thursday decides its year; weeks count from that year's first.
            let thursday = day - (day + 3).rem_euclid(7) + 3;
            let year = civil_from_days(thursday).0;
            if op == DtOp::IsoYear { year } else { (thursday - days_from_civil(year, 1, 1)) / 7 + 1 }
        }
        _ => days_in_month(y, m).into(),
    };
    v as i32
}

fn flag(op: DtOp, day: i64) -> bool {
    let (y, m, d) = civil_from_days(day);
    let last = d == days_in_month(y, m);
    match op {
        DtOp::IsMonthStart => d == 1,
        DtOp::IsMonthEnd => last,
        DtOp::IsQuarterStart => d == 1 && m % 3 == 1,
        DtOp::IsQuarterEnd => last && m % 3 == 0,
        DtOp::IsYearStart => d == 1 && m == 1,
        DtOp::IsYearEnd => d == 31 && m == 12,
        _ => is_leap(y),
    }
}

fn is_leap(y: i64) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// `day` moved by `n` calendar months, its day of month clipped to the new month's
/// last (pandas' `DateOffset(months=n)`: Jan 31 + 1 month is Feb 28 or 29).
fn add_months(day: i64, n: i32) -> i64 {
    let (y, m, d) = civil_from_days(day);
    let total = y * 12 + i64::from(m) - 1 + i64::from(n);
    let (y2, m2) = (total.div_euclid(12), (total.rem_euclid(12) + 1) as u32);
    days_from_civil(y2, m2, d.min(days_in_month(y2, m2)))
}

/// The proleptic Gregorian (year, month, day) of a day count from 1970-01-01 (Howard
/// Hinnant's `civil_from_days`).
pub(crate) fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Days from 1970-01-01 of a proleptic Gregorian date (Hinnant's `days_from_civil`).
pub(crate) fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = i64::from(if m > 2 { m - 3 } else { m + 9 });
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Nanoseconds since the epoch of ISO 8601 text: `YYYY-MM-DD`, optionally followed by
/// `T` or a space and `HH:MM`, `:SS` and a fraction of up to nine digits. Surrounding
/// whitespace is ignored; a UTC offset (`Z`, `+01:00`) is not read
/// here (see [`parse_iso_offset`]).
pub(crate) fn parse_iso(text: &str) -> Option<i64> {
    fn num(b: &[u8]) -> Option<i64> {
        (!b.is_empty() && b.iter().all(u8::is_ascii_digit))
            .then(|| b.iter().fold(0i64, |a, d| a * 10 + i64::from(d - b'0')))
    }
    let b = text.trim().as_bytes();
    if b.len() < 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let (y, m, d) = (num(&b[..4])?, num(&b[5..7])?, num(&b[8..10])?);
    if !(1..=12).contains(&m) || d < 1 || d > i64::from(days_in_month(y, m as u32)) {
        return None;
    }
    let mut ns = days_from_civil(y, m as u32, d as u32) * NS_PER_DAY;
    let rest = &b[10..];
    if rest.is_empty() {
        return Some(ns);
    }
    if !(rest[0] == b'T' || rest[0] == b' ') || rest.len() < 6 || rest[3] != b':' {
        return None;
    }
    let (h, mi) = (num(&rest[1..3])?, num(&rest[4..6])?);
    let mut sec = 0;
    let mut frac = 0;
    let mut tail = &rest[6..];
    if let [b':', s1, s2, more @ ..] = tail {
        sec = num(&[*s1, *s2])?;
        tail = more;
        if let [b'.', digits @ ..] = tail {
            if digits.is_empty() || digits.len() > 9 {
                return None;
            }
            frac = num(digits)? * 10i64.pow(9 - digits.len() as u32);
            tail = &[];
        }
    }
    if !tail.is_empty() || h > 23 || mi > 59 || sec > 59 {
        return None;
    }
    ns += ((h * 60 + mi) * 60 + sec) * 1_000_000_000 + frac;
    Some(ns)
}

/// ISO 8601 text as [`parse_iso`] reads it, with a UTC offset after its time (`Z`,
/// `+05:30`, `+0530`, `-03`) taken apart: the wall time, and the offset in nanoseconds.
pub(crate) fn parse_iso_offset(text: &str) -> Option<(i64, Option<i64>)> {
    let t = text.trim();
    if let Some(wall) = t.strip_suffix('Z') {
        return Some((parse_iso(wall)?, Some(0)));
    }
    // A sign after the time of day (the date's own dashes come before position 11).
    let Some(at) = t.rfind(['+', '-']).filter(|&i| i > 10) else { return Some((parse_iso(t)?, None)) };
    let (wall, off) = t.split_at(at);
    let digits: String = off[1..].chars().filter(|c| *c != ':').collect();
    if !(digits.len() == 2 || digits.len() == 4) || !digits.bytes().all(|d| d.is_ascii_digit()) {
        return None;
    }
    let (h, m) =
        (digits[..2].parse::<i64>().ok()?, if digits.len() == 4 { digits[2..].parse::<i64>().ok()? } else { 0 });
    if h > 23 || m > 59 {
        return None;
    }
    let sign = if off.starts_with('-') { -1 } else { 1 };
    Some((parse_iso(wall)?, Some(sign * (h * 60 + m) * 60_000_000_000)))
}

/// Datetimes as text, as pandas' `astype(str)` shows them: `2024-01-31 12:00:00`, with
/// as many fraction digits (3, 6 or 9) as the chunk's values need, and an aware
/// column's offset (`+01:00`). (pandas counts the digits over the whole column.)
pub(crate) fn datetime_text(s: &Series) -> PolarsResult<Series> {
    use std::fmt::Write;
    // Offsets are whole seconds: the instants' fractions are the wall times'.
    let digits = day_and_time(s)?
        .iter()
        .flatten()
        .map(|&(_, t)| match t % 1_000_000_000 {
            0 => 0,
            f if f % 1_000_000 == 0 => 3,
            f if f % 1_000 == 0 => 6,
            _ => 9,
        })
        .max()
        .unwrap_or(0);
    each_wall_time(s, |out, w| {
        let _ = write!(out, "{:04}-{:02}-{:02} {:02}:{:02}:{:02}", w.y, w.m, w.d, w.h, w.mi, w.sec);
        let frac = w.t % 1_000_000_000;
        let _ = match digits {
            3 => write!(out, ".{:03}", frac / 1_000_000),
            6 => write!(out, ".{:06}", frac / 1_000),
            9 => write!(out, ".{frac:09}"),
            _ => Ok(()),
        };
        if let Some(o) = w.offset {
            out.push_str(&crate::zone::offset_text(o, ":"));
        }
    })
}

/// A date or time's wall-clock parts, to format it: its day since the epoch, time of
/// day in nanoseconds, calendar date, hour, minute, second, and an aware one's UTC
/// offset.
#[derive(Clone, Copy)]
struct Wall {
    day: i64,
    t: i64,
    y: i64,
    m: u32,
    d: u32,
    h: i64,
    mi: i64,
    sec: i64,
    offset: Option<i64>,
}

/// Each value of a date or datetime column as text `write` makes from its wall time
/// (an aware one's instant plus its offset, found once).
fn each_wall_time(s: &Series, mut write: impl FnMut(&mut String, &Wall)) -> PolarsResult<Series> {
    let offsets = crate::zone::offsets(s)?;
    let mut out = String::new();
    let ca: StringChunked = day_and_time(s)?
        .into_iter()
        .zip(offsets)
        .map(|(p, offset)| {
            p.map(|(day, t)| {
                out.clear();
                let ns = day.wrapping_mul(NS_PER_DAY).wrapping_add(t).wrapping_add(offset.unwrap_or(0));
                let (day, t) = (ns.div_euclid(NS_PER_DAY), ns.rem_euclid(NS_PER_DAY));
                let (y, m, d) = civil_from_days(day);
                let (h, mi, sec) = (t / 3_600_000_000_000, t / 60_000_000_000 % 60, t / 1_000_000_000 % 60);
                write(&mut out, &Wall { day, t, y, m, d, h, mi, sec, offset });
                out.clone()
            })
        })
        .collect();
    Ok(ca.with_name(s.name().clone()).into_series())
}

/// Text read as dates or datetimes of dtype `to` by [`parse_iso`]; text that is not one
/// fails, naming it (as pandas' `to_datetime` raises).
pub(crate) fn parse_column(s: &Series, to: &DataType) -> PolarsResult<Series> {
    let Some(per) = ns_per(to) else { polars_bail!(ComputeError: "cannot read text as {to}") };
    let mut out = Vec::with_capacity(s.len());
    let aware = crate::zone::zone_of(to).is_some();
    for v in s.str()?.iter() {
        out.push(match v {
            None => None,
            Some(v) => match parse_iso_offset(v) {
                // Into an aware column: the instant (text without an offset is UTC).
                Some((wall, off)) if aware => Some((wall - off.unwrap_or(0)).div_euclid(per)),
                Some((ns, None)) => Some(ns.div_euclid(per)),
                Some((_, Some(_))) => polars_bail!(ComputeError:
                    "{v:?} has a UTC offset: read such text with to_datetime(column, utc=True)"),
                None => polars_bail!(ComputeError:
                    "cannot read {v:?} as a date or time: give ISO 8601 text such as 2024-01-31 or 2024-01-31 12:00:00"),
            },
        });
    }
    let phys = Int64Chunked::from_iter_options(s.name().clone(), out.into_iter());
    if aware {
        return crate::zone::cast(&phys.into_series().into_column(), to).map(|c| c.take_materialized_series());
    }
    phys.into_series().cast(&to.to_physical())?.cast(to)
}

const DAYS: [&str; 7] = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"];
const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// The `strftime` directives this formats (Python's, in the C locale).
pub(crate) const STRFTIME_DIRECTIVES: &str = "%Y %y %m %d %e %H %I %M %S %f %p %j %a %A %b %B %h %F %T %z %%";

/// Why `fmt` cannot be formatted, if it cannot.
pub(crate) fn check_format(fmt: &str) -> Result<(), String> {
    let mut it = fmt.chars();
    while let Some(c) = it.next() {
        if c == '%' {
            match it.next() {
                Some(d) if "YymdeHIMSfpjaAbBhFTz%".contains(d) => {}
                Some(d) => {
                    return Err(format!("strftime: %{d} is not supported (supported: {STRFTIME_DIRECTIVES})"));
                }
                None => return Err("strftime: the format ends with a lone %".into()),
            }
        }
    }
    Ok(())
}

/// Each date or datetime formatted by `fmt` (checked by [`check_format`]).
pub(crate) fn strftime(s: &Series, fmt: &str) -> PolarsResult<Series> {
    use std::fmt::Write;
    check_format(fmt).map_err(|m| polars_err!(ComputeError: "{m}"))?;
    if !is_datetime(s.dtype()) {
        polars_bail!(ComputeError: "strftime needs dates or datetimes, got {}", s.dtype());
    }
    each_wall_time(s, |out, w| {
        let Wall { day, t, y, m, d, h, mi, sec, offset } = *w;
        let mut it = fmt.chars();
        while let Some(c) = it.next() {
            if c != '%' {
                out.push(c);
                continue;
            }
            let _ = match it.next().unwrap_or('%') {
                'Y' => write!(out, "{y:04}"),
                'y' => write!(out, "{:02}", y.rem_euclid(100)),
                'm' => write!(out, "{m:02}"),
                'd' => write!(out, "{d:02}"),
                'e' => write!(out, "{d:2}"),
                'H' => write!(out, "{h:02}"),
                'I' => write!(out, "{:02}", if h % 12 == 0 { 12 } else { h % 12 }),
                'M' => write!(out, "{mi:02}"),
                'S' => write!(out, "{sec:02}"),
                'f' => write!(out, "{:06}", t / 1_000 % 1_000_000),
                'p' => write!(out, "{}", if h < 12 { "AM" } else { "PM" }),
                'j' => write!(out, "{:03}", day - days_from_civil(y, 1, 1) + 1),
                'a' => write!(out, "{}", &DAYS[(day + 3).rem_euclid(7) as usize][..3]),
                'A' => write!(out, "{}", DAYS[(day + 3).rem_euclid(7) as usize]),
                'b' | 'h' => write!(out, "{}", &MONTHS[m as usize - 1][..3]),
                'B' => write!(out, "{}", MONTHS[m as usize - 1]),
                'F' => write!(out, "{y:04}-{m:02}-{d:02}"),
                'T' => write!(out, "{h:02}:{mi:02}:{sec:02}"),
                // Naive times have no offset: Python prints nothing.
                'z' => write!(out, "{}", offset.map(|o| crate::zone::offset_text(o, "")).unwrap_or_default()),
                _ => write!(out, "%"),
            };
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_days_round_trip_over_centuries_and_leap_days() {
        for day in (-800_000..800_000).step_by(37) {
            let (y, m, d) = civil_from_days(day);
            assert_eq!(days_from_civil(y, m, d), day, "{y}-{m}-{d}");
        }
        assert_eq!(civil_from_days(days_from_civil(2000, 2, 29)), (2000, 2, 29));
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
    }

    #[test]
    fn iso_weeks_belong_to_their_thursdays_year() {
        let iso = |y, m, d| {
            let day = days_from_civil(y, m, d);
            (int_field(DtOp::IsoYear, day, 0), int_field(DtOp::IsoWeek, day, 0))
        };
        assert_eq!(iso(2024, 12, 30), (2025, 1));
        assert_eq!(iso(2021, 1, 3), (2020, 53));
        assert_eq!(iso(2021, 1, 4), (2021, 1));
        assert_eq!(iso(1969, 12, 31), (1970, 1));
        assert_eq!(iso(2015, 12, 31), (2015, 53));
    }

    #[test]
    fn month_offsets_clip_to_the_last_day() {
        let jan31 = days_from_civil(2020, 1, 31);
        assert_eq!(civil_from_days(add_months(jan31, 1)), (2020, 2, 29));
        assert_eq!(civil_from_days(add_months(jan31, 13)), (2021, 2, 28));
        assert_eq!(civil_from_days(add_months(jan31, -2)), (2019, 11, 30));
        assert_eq!(civil_from_days(add_months(jan31, -12 * 3)), (2017, 1, 31));
    }

    #[test]
    fn offsets_after_the_time_are_taken_apart() {
        let wall = parse_iso("2024-01-31 12:00:00").unwrap();
        let h = 3_600_000_000_000;
        assert_eq!(parse_iso_offset("2024-01-31T12:00:00Z"), Some((wall, Some(0))));
        assert_eq!(parse_iso_offset("2024-01-31 12:00:00+05:30"), Some((wall, Some(5 * h + h / 2))));
        assert_eq!(parse_iso_offset("2024-01-31 12:00:00-0300"), Some((wall, Some(-3 * h))));
        assert_eq!(parse_iso_offset("2024-01-31 12:00:00+01"), Some((wall, Some(h))));
        assert_eq!(parse_iso_offset("2024-01-31"), Some((parse_iso("2024-01-31").unwrap(), None)));
        assert_eq!(parse_iso_offset("2024-01-31 12:00:00+25:00"), None);
        assert_eq!(parse_iso_offset("2024-01-31 12:00:00+1"), None);
    }

    #[test]
    fn iso_text_parses_to_the_nanosecond_and_refuses_the_rest() {
        let day = days_from_civil(2000, 2, 29) * NS_PER_DAY;
        assert_eq!(parse_iso("2000-02-29"), Some(day));
        assert_eq!(parse_iso(" 2000-02-29T01:02 "), Some(day + 3_720_000_000_000));
        assert_eq!(parse_iso("2000-02-29 01:02:03.5"), Some(day + 3_723_500_000_000));
        assert_eq!(parse_iso("1969-12-31 23:59:59.999999999"), Some(-1));
        for bad in ["2001-02-29", "2000-13-01", "2000-01-01X", "2000-01-01 24:00", "soon", "2000-01-01T01:02Z", ""] {
            assert_eq!(parse_iso(bad), None, "{bad}");
        }
    }

    #[test]
    fn formats_refuse_unknown_directives_by_name() {
        assert!(check_format("%Y-%m-%d %H:%M:%S.%f %%").is_ok());
        let e = check_format("%Y %Q").unwrap_err();
        assert!(e.contains("%Q") && e.contains("%Y"), "{e}");
        assert!(check_format("50%").is_err());
    }
}
