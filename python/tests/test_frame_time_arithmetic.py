"""Dates and times as pandas computes them: the ``.dt`` fields, ``floor``/``normalize``,
``strftime``, arithmetic with ``Timedelta``/``DateOffset``, duration columns and their
parts, ``to_datetime`` and ``read_csv(parse_dates=)``, each against pandas on the same
values (hypothesis draws them, missing ones included)."""

from __future__ import annotations

import datetime

import numpy as np
import pandas as pd
import pandas.testing as pdt
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ares.dataframe as ad

# From 1900 to 2100, to the nanosecond, some of them missing.
_NS = st.integers(-2_208_988_800 * 10**9, 4_102_444_800 * 10**9)
_TIMES = st.lists(st.one_of(st.none(), _NS, _NS.map(lambda v: v - v % 86_400_000_000_000)), min_size=0,
                  max_size=40)


def _frame(values, chunk):
    when = pd.Series(pd.array([pd.NaT if v is None else pd.Timestamp(v, unit="ns") for v in values],
                              dtype="datetime64[ns]"))
    pdf = pd.DataFrame({"t": when, "v": np.arange(len(values), dtype=np.int64)})
    return pdf, ad.DataFrame(pdf, chunk_size=chunk)


def _texts(s):
    return [None if pd.isna(x) else x for x in s]


def _same(got, want):
    got, want = got.reset_index(drop=True), pd.Series(want).reset_index(drop=True)
    if want.dtype.kind in "mM" and got.dtype.kind == want.dtype.kind:
        want = want.astype(got.dtype)  # pandas 3 may choose microseconds
    if pd.api.types.is_bool_dtype(want.dtype) or want.dtype == object:
        assert got.tolist() == want.tolist()
    else:
        pdt.assert_series_equal(got, want, check_dtype=False, check_names=False)


FIELDS = ["year", "month", "day", "day_of_week", "day_of_year", "quarter", "hour", "minute", "second",
          "microsecond", "nanosecond", "days_in_month", "is_month_start", "is_month_end", "is_quarter_start",
          "is_quarter_end", "is_year_start", "is_year_end", "is_leap_year"]


@given(_TIMES, st.integers(1, 12))
def test_dt_fields_match_pandas(values, chunk):
    pdf, df = _frame(values, chunk)
    for f in FIELDS:
        want = getattr(pdf.t.dt, f)
        if want.dtype == bool:
            want = want.where(pdf.t.notna(), None).astype(object)  # pandas: False for NaT
            got = getattr(df.t.dt, f).fetch().astype(object).where(pdf.t.notna(), None)
            assert got.tolist() == want.tolist(), f
        else:
            _same(getattr(df.t.dt, f).fetch(), want)
    for alias, name in [("dayofweek", "day_of_week"), ("weekday", "day_of_week"), ("dayofyear", "day_of_year")]:
        _same(getattr(df.t.dt, alias).fetch(), getattr(pdf.t.dt, name))
    iso, want = df.t.dt.isocalendar().fetch(), pdf.t.dt.isocalendar()
    assert list(iso.columns) == list(want.columns) == ["year", "week", "day"]
    for c in iso.columns:
        _same(iso[c].astype("float64"), want[c].astype("float64"))


@given(_TIMES, st.integers(1, 12), st.sampled_from(["D", "h", "15min", "s", "ms", "us", "7D"]))
def test_floor_normalize_date_and_strftime_match_pandas(values, chunk, freq):
    pdf, df = _frame(values, chunk)
    _same(df.t.dt.floor(freq).fetch(), pdf.t.dt.floor(freq))
    _same(df.t.dt.ceil(freq).fetch(), pdf.t.dt.ceil(freq))
    _same(df.t.dt.round(freq).fetch(), pdf.t.dt.round(freq))
    _same(df.t.dt.normalize().fetch(), pdf.t.dt.normalize())
    _same(pd.to_datetime(df.t.dt.date.fetch()), pd.to_datetime(pdf.t.dt.date))
    fmt = "%Y-%m-%d %H:%M:%S.%f %j %a %A %b %B %y %I%p %%"
    assert _texts(df.t.dt.strftime(fmt).fetch()) == _texts(pdf.t.dt.strftime(fmt))
    assert _texts(df.t.dt.day_name().fetch()) == _texts(pdf.t.dt.day_name())
    assert _texts(df.t.dt.month_name().fetch()) == _texts(pdf.t.dt.month_name())


OFFSETS = [pd.Timedelta(days=3), datetime.timedelta(hours=-5, seconds=7), np.timedelta64(90, "m"),
           pd.offsets.Day(2), pd.offsets.Hour(30), pd.DateOffset(months=1), pd.DateOffset(years=-2, months=3),
           pd.DateOffset(months=14, days=3, hours=1), pd.DateOffset(days=10)]


@given(_TIMES, st.integers(1, 12), st.sampled_from(range(len(OFFSETS))))
def test_adding_durations_and_offsets_matches_pandas(values, chunk, k):
    pdf, df = _frame(values, chunk)
    off = OFFSETS[k]
    _same((df.t + off).fetch(), pdf.t + off)
    _same((df.t - off).fetch(), pdf.t - off)
    if not isinstance(off, pd.offsets.BaseOffset) or isinstance(off, pd.offsets.Tick):
        _same((off + df.t).fetch(), off + pdf.t)


@given(_TIMES, _TIMES, st.integers(1, 12), st.integers(-5, 5), st.floats(-3, 3, allow_nan=False))
def test_duration_columns_compute_and_decompose_as_pandas(a, b, chunk, n, x):
    m = min(len(a), len(b))
    a, b = a[:m], b[:m]
    pa_, da = _frame(a, chunk)
    pdf = pa_.assign(u=_frame(b, chunk)[0].t)
    df = ad.DataFrame(pdf, chunk_size=chunk)
    got, want = df.t - df.u, pdf.t - pdf.u
    _same(got.fetch(), want)
    assert str(got.dtype) == "timedelta64[ns]"
    for op in (lambda d: d * n, lambda d: n * d, lambda d: -d, lambda d: abs(d), lambda d: d + pd.Timedelta(1, "h"),
               lambda d: d // pd.Timedelta(hours=1), lambda d: d / pd.Timedelta(days=1),
               lambda d: d % pd.Timedelta(hours=7), lambda d: df.u + d if d is got else pdf.u + d):
        try:
            w = op(want)
        except (OverflowError, pd.errors.OutOfBoundsTimedelta, pd.errors.OutOfBoundsDatetime):
            continue  # pandas refuses what overflows int64; numpy (and the engine) wrap
        _same(op(got).fetch(), w)
    if n:
        _same((got // n).fetch(), want // n)
    if x:
        # numpy truncates the scaled nanoseconds; pandas' float product agrees to a nanosecond.
        g, w = (got * x).fetch(), want * x
        diff = (g - w).abs().dropna()
        assert (diff <= pd.Timedelta(1, "ns")).all() and g.isna().tolist() == w.isna().tolist()
    for part in ("days", "seconds", "microseconds", "nanoseconds"):
        _same(getattr(got.dt, part).fetch(), getattr(want.dt, part))
    _same(got.dt.total_seconds().fetch(), want.dt.total_seconds())
    cut = pd.Timedelta(days=400)
    assert df[got > cut].fetch().v.tolist() == pdf[want > cut].v.tolist()
    assert df[(got <= cut) & (got >= -cut)].fetch().v.tolist() == pdf[(want <= cut) & (want >= -cut)].v.tolist()


def test_durations_group_sort_and_round_trip():
    pdf = pd.DataFrame({"d": pd.to_timedelta([3, 1, None, 2, 1] * 8, unit="h"), "v": np.arange(40)})
    df = ad.DataFrame(pdf, chunk_size=6)
    # Durations come back in nanoseconds (pandas 3 may have made microseconds).
    pdf_ns = pdf.astype({"d": "timedelta64[ns]"})
    pdt.assert_frame_equal(df.fetch(), pdf_ns)
    pdt.assert_frame_equal(df.sort_values(["d", "v"]).fetch(),
                           pdf_ns.sort_values(["d", "v"]).reset_index(drop=True))
    got = df.groupby("d").v.sum().fetch()
    pdt.assert_series_equal(got, pdf_ns.groupby("d").v.sum(), check_dtype=False)
    assert df.d.max().fetch() == pdf.d.max()
    assert df.d.min().fetch() == pdf.d.min()


def test_to_datetime_and_read_csv_parse_dates(tmp_path):
    text = pd.Series(["2024-01-31", "1999-12-31 23:59:59", None, "2000-02-29T12:00:00.5"] * 3)
    pdf = pd.DataFrame({"when": text, "v": np.arange(len(text))})
    df = ad.DataFrame(pdf, chunk_size=5)
    want = pd.to_datetime(pdf.when, format="ISO8601")
    _same(ad.to_datetime(df.when).fetch(), want)
    assert ad.to_datetime("2024-05-06") == pd.Timestamp("2024-05-06")
    pdf.to_csv(tmp_path / "t.csv", index=False)
    got = ad.read_csv(tmp_path / "t.csv", parse_dates=["when"]).fetch()
    assert str(got.when.dtype) == "datetime64[ns]"
    _same(got.when, want)
    bad = ad.DataFrame(pd.DataFrame({"when": ["2024-01-01", "soon"]}))
    with pytest.raises(Exception, match="soon|conversion|parse|cast"):
        ad.to_datetime(bad.when).fetch()


def test_bad_time_arithmetic_is_refused_naming_the_problem():
    pdf = pd.DataFrame({"t": pd.to_datetime(["2024-01-31"]), "v": [1]})
    df = ad.DataFrame(pdf)
    with pytest.raises(TypeError, match="Timedelta|durations"):
        _ = df.t + df.t
    with pytest.raises(TypeError, match="durations"):
        _ = df.t * 2
    with pytest.raises(NotImplementedError, match="MonthEnd"):
        _ = df.t + pd.offsets.MonthEnd()
    with pytest.raises(ValueError, match="%Q"):
        df.t.dt.strftime("%Y %Q")
    with pytest.raises(ValueError, match="non-fixed|floor"):
        df.t.dt.floor("M")
    with pytest.raises(AttributeError, match="datetimelike"):
        _ = df.v.dt


def test_round_takes_halves_to_the_even_multiple_as_pandas():
    s = pd.Series(pd.to_datetime(["2024-01-01 00:30", "2024-01-01 01:30", "2024-01-01 02:30", "1969-12-31 23:30",
                                  "1969-12-31 22:30", None, "2024-01-01 00:00"]))
    df = ad.DataFrame(pd.DataFrame({"t": s}), chunk_size=2)
    for how in ("round", "ceil", "floor"):
        _same(getattr(df.t.dt, how)("h").fetch(), getattr(s.dt, how)("h"))
