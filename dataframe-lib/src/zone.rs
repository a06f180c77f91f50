//! Time zones of datetime columns, as pandas' `datetime64[unit, tz]`: such a column
//! holds UTC instants (its physical integers are the naive UTC column's), and its zone
//! names how to show them. Comparisons, sorts, keys, sums of durations work on the
//! instants; calendar fields, `floor`, `strftime` and `tz_localize(None)` work on the
//! wall times the zone's offsets give. Zones are IANA names (`Europe/Paris`, `UTC`) or
//! fixed offsets (`+05:30`), resolved by `chrono-tz`'s copy of the tz database.

use chrono::{DateTime, NaiveDateTime, Offset, TimeZone};
use polars::prelude::*;

/// A day in nanoseconds: offsets a day apart straddle any one clock change.
const DAY: i64 = 86_400 * 1_000_000_000;

/// A resolved time zone.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Zone {
    Named(chrono_tz::Tz),
    /// Seconds east of UTC.
    Fixed(i32),
}

/// How a wall time that a zone's clock shows twice is localized (pandas'
/// `ambiguous=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub enum Ambiguous {
    /// Fail the computation naming the wall time (`"raise"`).
    Raise,
    /// A missing value (`"NaT"`).
    NaT,
    /// The first of the two instants, in summer time (`True`).
    Earlier,
    /// The second, in standard time (`False`).
    Later,
}

/// How a wall time that a zone's clock skips is localized (pandas' `nonexistent=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub enum Nonexistent {
    /// Fail the computation naming the wall time (`"raise"`).
    Raise,
    /// A missing value (`"NaT"`).
    NaT,
    /// The instant the clock jumps, the first wall time after the gap
    /// (`"shift_forward"`).
    ShiftForward,
    /// The last nanosecond before it (`"shift_backward"`).
    ShiftBackward,
}

/// A change of a datetime's zone (pandas' `.dt.tz_localize` and `.dt.tz_convert`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub enum ZoneOp {
    /// Naive wall times read in a zone (`tz_localize(tz)`), or an aware column's wall
    /// times as naive ones (`tz_localize(None)`).
    Localize(Ambiguous, Nonexistent),
    /// The same instants shown in another zone (`tz_convert(tz)`), or as naive UTC
    /// (`tz_convert(None)`).
    Convert,
    /// ISO text read as instants shown in a zone: its UTC offset applied, text without
    /// one read as UTC (pandas' `to_datetime(text, utc=True)`).
    Read,
}

impl Zone {
    /// The zone a name gives: an IANA name, `UTC`, or an offset `±HH:MM` (also as
    /// `UTC±HH:MM`, Python's `datetime.timezone` name).
    pub(crate) fn parse(name: &str) -> Result<Zone, String> {
        if let Ok(tz) = name.parse::<chrono_tz::Tz>() {
            return Ok(Zone::Named(tz));
        }
        let t = name.strip_prefix("UTC").unwrap_or(name);
        let sign = match t.as_bytes().first() {
            Some(b'+') => 1,
            Some(b'-') => -1,
            _ => return Err(unknown(name)),
        };
        let (h, m) = t[1..].split_once(':').unwrap_or((&t[1..], "0"));
        match (h.parse::<i32>(), m.parse::<i32>()) {
            (Ok(h), Ok(m)) if (0..24).contains(&h) && (0..60).contains(&m) => {
                Ok(Zone::Fixed(sign * (h * 3600 + m * 60)))
            }
            _ => Err(unknown(name)),
        }
    }

    /// Nanoseconds to add to the UTC instant `utc` for its wall time.
    pub(crate) fn offset_ns(self, utc: i64) -> i64 {
        let secs = match self {
            Zone::Fixed(s) => s,
            Zone::Named(tz) => {
                let t = DateTime::from_timestamp_nanos(utc).naive_utc();
                tz.offset_from_utc_datetime(&t).fix().local_minus_utc()
            }
        };
        i64::from(secs) * 1_000_000_000
    }

    /// The UTC instant of the wall time `wall` (nanoseconds): `Ok(None)` for a missing
    /// one, `Err` saying why when the policy for a wall time the zone skips or repeats
    /// is to fail.
    fn instant(self, wall: i64, ambiguous: Ambiguous, nonexistent: Nonexistent) -> Result<Option<i64>, &'static str> {
        let Zone::Named(tz) = self else { return Ok(Some(wall - self.offset_ns(0))) };
        let at = |offset: chrono::FixedOffset| wall - i64::from(offset.local_minus_utc()) * 1_000_000_000;
        let t: NaiveDateTime = DateTime::from_timestamp_nanos(wall).naive_utc();
        match (tz.from_local_datetime(&t), ambiguous, nonexistent) {
            (chrono::LocalResult::Single(d), ..) => Ok(Some(at(d.offset().fix()))),
            (chrono::LocalResult::Ambiguous(first, second), a, _) => match a {
                Ambiguous::Earlier => Ok(Some(at(first.offset().fix()))),
                Ambiguous::Later => Ok(Some(at(second.offset().fix()))),
                Ambiguous::NaT => Ok(None),
                Ambiguous::Raise => Err("ambiguous (the clock shows it twice)"),
            },
            (chrono::LocalResult::None, _, n) => match n {
                Nonexistent::NaT => Ok(None),
                Nonexistent::Raise => Err("nonexistent (the clock skips it)"),
                shift => {
                    // The clock jumped at an instant between the wall time read with the
                    // offset after the gap and read with the one before it.
                    let (lo, hi) = (wall - self.offset_ns(wall + DAY), wall - self.offset_ns(wall - DAY));
                    let jump = self.jump(lo.min(hi), lo.max(hi));
                    Ok(Some(if shift == Nonexistent::ShiftForward { jump } else { jump - 1 }))
                }
            },
        }
    }

    /// The first instant in `(lo, hi]` whose offset is `hi`'s (the offset changes once
    /// there): a search by halves.
    fn jump(self, mut lo: i64, mut hi: i64) -> i64 {
        let after = self.offset_ns(hi);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if self.offset_ns(mid) == after { hi = mid } else { lo = mid }
        }
        hi
    }
}

fn unknown(name: &str) -> String {
    format!(
        "unknown time zone {name:?}: give an IANA name such as \"Europe/Paris\" or \"UTC\", or an offset such as \"+05:30\""
    )
}

/// The zone of an aware datetime dtype, `None` for any other dtype.
pub(crate) fn zone_of(d: &DataType) -> Option<&str> {
    match d {
        DataType::Datetime(_, Some(tz)) => Some(tz.as_str()),
        _ => None,
    }
}

/// `d` with the zone `tz` (a datetime keeps its unit).
pub(crate) fn with_zone(d: &DataType, tz: Option<&str>) -> DataType {
    let unit = match d {
        DataType::Datetime(u, _) => *u,
        _ => TimeUnit::Nanoseconds,
    };
    // SAFETY (of polars' contract): the name was resolved by `Zone::parse` when typed.
    DataType::Datetime(unit, tz.map(|z| unsafe { polars::prelude::TimeZone::new_unchecked(z) }))
}

/// `d` without its zone (any other dtype as it is).
pub(crate) fn naive(d: &DataType) -> DataType {
    if zone_of(d).is_some() { with_zone(d, None) } else { d.clone() }
}

/// The dtype `op` to `tz` gives a column of dtype `d`, or why there is none (pandas'
/// messages).
pub(crate) fn zone_dtype(op: ZoneOp, tz: Option<&str>, d: &DataType) -> Result<DataType, String> {
    if let Some(z) = tz {
        Zone::parse(z)?;
    }
    let aware = zone_of(d).is_some();
    match (op, d, tz) {
        (ZoneOp::Read, DataType::String, Some(_)) => {
            return Ok(with_zone(&DataType::Datetime(TimeUnit::Nanoseconds, None), tz));
        }
        (ZoneOp::Read, ..) => return Err(format!("reading instants needs a text column and a zone, not {d}")),
        (_, DataType::Datetime(..), _) => {}
        _ => return Err(format!("tz_localize and tz_convert need a datetime column, this one is {d}")),
    }
    match (op, aware, tz) {
        (ZoneOp::Localize(..), true, Some(_)) => Err("Already tz-aware, use tz_convert to convert.".into()),
        (ZoneOp::Convert, false, _) => Err("Cannot convert tz-naive timestamps, use tz_localize to localize".into()),
        _ => Ok(with_zone(d, tz)),
    }
}

/// The physical integers of a datetime column (its unit's count since the epoch).
fn physical(s: &Series) -> PolarsResult<Int64Chunked> {
    Ok(s.to_physical_repr().cast(&DataType::Int64)?.i64()?.clone())
}

fn unit_ns(d: &DataType) -> i64 {
    match d {
        DataType::Datetime(TimeUnit::Microseconds, _) => 1_000,
        DataType::Datetime(TimeUnit::Milliseconds, _) => 1_000_000,
        _ => 1,
    }
}

/// Physical integers as a datetime column of `d`'s unit in zone `tz`. (polars' own
/// `cast` drops a zone unless its `timezones` feature is built, which is not.)
pub(crate) fn datetimes(ca: Int64Chunked, d: &DataType, tz: Option<&str>) -> Series {
    let DataType::Datetime(unit, zone) = with_zone(d, tz) else { unreachable!("with_zone makes datetimes") };
    ca.into_datetime(unit, zone).into_series()
}

/// A datetime column's integers, unchanged, in zone `tz` (naive for `None`).
fn relabeled(s: &Series, tz: Option<&str>) -> PolarsResult<Series> {
    Ok(datetimes(physical(s)?, s.dtype(), tz).with_name(s.name().clone()))
}

/// A naive datetime column as the same integers in zone `tz`.
pub fn zone_series(s: &Series, tz: &str) -> PolarsResult<Series> {
    Zone::parse(tz).map_err(|m| polars_err!(ComputeError: "{m}"))?;
    relabeled(s, Some(tz))
}

/// `c` cast to `to`, keeping an aware target's zone (see [`datetimes`]): the casts
/// that rebuild a column's dtype go through here.
pub(crate) fn cast(c: &Column, to: &DataType) -> PolarsResult<Column> {
    let Some(tz) = zone_of(to) else { return c.cast(to) };
    if c.dtype() == to {
        return Ok(c.clone());
    }
    let naive = utc(c.as_materialized_series())?.cast(&with_zone(to, None))?;
    Ok(zone_series(&naive, tz)?.into_column())
}

/// An aware column's wall times, as a naive column of its unit; any other column as
/// it is.
pub(crate) fn wall(s: &Series) -> PolarsResult<Series> {
    let Some(name) = zone_of(s.dtype()) else { return Ok(s.clone()) };
    let zone = Zone::parse(name).map_err(|m| polars_err!(ComputeError: "{m}"))?;
    let per = unit_ns(s.dtype());
    let ca = physical(s)?.apply_values(|v| v + zone.offset_ns(v.wrapping_mul(per)) / per);
    Ok(datetimes(ca, s.dtype(), None).with_name(s.name().clone()))
}

/// An aware column's instants as a naive UTC column of its unit; any other as it is.
pub(crate) fn utc(s: &Series) -> PolarsResult<Series> {
    if zone_of(s.dtype()).is_none() {
        return Ok(s.clone());
    }
    relabeled(s, None)
}

/// Naive wall times `s` read in the zone `tz` (a datetime of `s`'s unit in that zone).
pub(crate) fn localize(s: &Series, tz: &str, ambiguous: Ambiguous, nonexistent: Nonexistent) -> PolarsResult<Series> {
    let zone = Zone::parse(tz).map_err(|m| polars_err!(ComputeError: "{m}"))?;
    let per = unit_ns(s.dtype());
    let mut out = Vec::with_capacity(s.len());
    for v in physical(s)?.iter() {
        out.push(match v {
            None => None,
            Some(v) => match zone.instant(v.wrapping_mul(per), ambiguous, nonexistent) {
                Ok(ns) => ns.map(|ns| ns.div_euclid(per)),
                Err(why) => {
                    let shown = DateTime::from_timestamp_nanos(v.wrapping_mul(per)).naive_utc();
                    polars_bail!(ComputeError:
                        "{shown} is {why} in {tz}: pass ambiguous=\"NaT\" (or True/False) and nonexistent=\"NaT\" \
                         (or \"shift_forward\"/\"shift_backward\") to choose")
                }
            },
        });
    }
    let ca = Int64Chunked::from_iter_options(s.name().clone(), out.into_iter());
    Ok(datetimes(ca, s.dtype(), Some(tz)))
}

/// `op` to `tz` of a datetime column (typed by [`zone_dtype`]).
pub(crate) fn apply(op: ZoneOp, tz: Option<&str>, s: &Series) -> PolarsResult<Series> {
    match (op, tz) {
        (ZoneOp::Localize(a, n), Some(tz)) => localize(s, tz, a, n),
        (ZoneOp::Localize(..), None) => wall(s),
        (ZoneOp::Convert, tz) => relabeled(s, tz),
        // Text is read by `temporal::parse_column` into the dtype `zone_dtype` gives.
        (ZoneOp::Read, _) => polars_bail!(ComputeError: "reading text as instants is temporal's"),
    }
}

/// The result of a computation on an aware column's wall times (`floor`, a month
/// offset), back to instants in its zone: pandas localizes them again, and raises on a
/// wall time the zone skips or repeats.
pub(crate) fn relocalize(wall: &Series, like: &DataType) -> PolarsResult<Series> {
    match zone_of(like) {
        Some(tz) => localize(wall, tz, Ambiguous::Raise, Nonexistent::Raise),
        None => Ok(wall.clone()),
    }
}

/// Each value's UTC offset in nanoseconds in `s`'s zone (`None`: missing, or a naive
/// column).
pub(crate) fn offsets(s: &Series) -> PolarsResult<Vec<Option<i64>>> {
    let Some(name) = zone_of(s.dtype()) else { return Ok(vec![None; s.len()]) };
    let zone = Zone::parse(name).map_err(|m| polars_err!(ComputeError: "{m}"))?;
    let per = unit_ns(s.dtype());
    Ok(physical(s)?.iter().map(|v| v.map(|v| zone.offset_ns(v.wrapping_mul(per)))).collect())
}

/// An offset in nanoseconds as `+HH:MM` (`sep` `":"`) or `+HHMM` (`""`), with its
/// seconds when it has some (old local mean times: Paris was +00:09:21), as Python
/// prints them.
pub(crate) fn offset_text(ns: i64, sep: &str) -> String {
    let secs = ns / 1_000_000_000;
    let sign = if secs < 0 { '-' } else { '+' };
    let a = secs.abs();
    let mut out = format!("{sign}{:02}{sep}{:02}", a / 3600, a / 60 % 60);
    if a % 60 != 0 {
        out.push_str(&format!("{sep}{:02}", a % 60));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zones_parse_by_name_and_offset_and_refuse_the_rest() {
        assert!(matches!(Zone::parse("Europe/Paris"), Ok(Zone::Named(_))));
        assert!(matches!(Zone::parse("UTC"), Ok(Zone::Named(_))));
        assert!(matches!(Zone::parse("+05:30"), Ok(Zone::Fixed(19_800))));
        assert!(matches!(Zone::parse("UTC-03:00"), Ok(Zone::Fixed(-10_800))));
        assert!(Zone::parse("Mars/Olympus").unwrap_err().contains("IANA"));
        assert!(Zone::parse("+25:00").is_err());
    }

    #[test]
    fn paris_wall_times_follow_summer_time() {
        let paris = Zone::parse("Europe/Paris").unwrap();
        let h = 3_600_000_000_000i64;
        // 2024-01-15 12:00 UTC is 13:00 in Paris; 2024-07-15 12:00 UTC is 14:00.
        let winter = 1_705_320_000_000_000_000i64;
        let summer = 1_721_044_800_000_000_000i64;
        assert_eq!(paris.offset_ns(winter), h);
        assert_eq!(paris.offset_ns(summer), 2 * h);
        let (raise, skip) = (Ambiguous::Raise, Nonexistent::Raise);
        assert_eq!(paris.instant(winter + h, raise, skip), Ok(Some(winter)));
        // 2024-03-31 02:30 does not exist in Paris (clocks jump from 02:00 to 03:00 at
        // 01:00 UTC); 2024-10-27 02:30 happens twice (00:30 and 01:30 UTC).
        let skipped = 1_711_852_200_000_000_000i64;
        let repeated = 1_729_996_200_000_000_000i64;
        assert!(paris.instant(skipped, raise, skip).unwrap_err().contains("nonexistent"));
        assert!(paris.instant(repeated, raise, skip).unwrap_err().contains("ambiguous"));
        let jump = skipped - 3 * h / 2;
        assert_eq!(paris.instant(skipped, raise, Nonexistent::ShiftForward), Ok(Some(jump)));
        assert_eq!(paris.instant(skipped, raise, Nonexistent::ShiftBackward), Ok(Some(jump - 1)));
        assert_eq!(paris.instant(skipped, raise, Nonexistent::NaT), Ok(None));
        assert_eq!(paris.instant(repeated, Ambiguous::Earlier, skip), Ok(Some(repeated - 2 * h)));
        assert_eq!(paris.instant(repeated, Ambiguous::Later, skip), Ok(Some(repeated - h)));
        assert_eq!(paris.instant(repeated, Ambiguous::NaT, skip), Ok(None));
    }

    #[test]
    fn offsets_print_as_strftime_and_iso_do() {
        assert_eq!(offset_text(19_800_000_000_000, ""), "+0530");
        assert_eq!(offset_text(-10_800_000_000_000, ":"), "-03:00");
        assert_eq!(offset_text(561_000_000_000, ":"), "+00:09:21");
    }
}
