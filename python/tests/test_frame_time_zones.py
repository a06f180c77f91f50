"""Time-zone aware datetimes (pandas' ``datetime64[unit, tz]``) as pandas computes them:
fields and ``floor`` on wall times, comparisons and arithmetic on instants,
``tz_localize``/``tz_convert``, sort, group-by, merge and lazy scalars, text, Parquet and
CSV; each against pandas on the same values (hypothesis draws them, missing ones
included, around summer-time changes and in half-hour zones)."""

from __future__ import annotations

import datetime

import numpy as np
import pandas as pd
import pandas.testing as pdt
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ares
import ares.dataframe as ad

ZONES = ["Europe/Paris", "America/New_York", "Asia/Kolkata", "UTC", "Australia/Lord_Howe",
         datetime.timezone(datetime.timedelta(hours=-3, minutes=-30))]

# From 1900 to 2100, to the microsecond, some of them missing; and hours around the
# 2024 summer-time changes in Europe and America.
_US = st.integers(-2_208_988_800 * 10**6, 4_102_444_800 * 10**6)
_CHANGES = st.sampled_from([1_711_846_800, 1_729_990_800, 1_710_054_000, 1_730_613_600]).flatmap(
    lambda s: st.integers(-3 * 3600, 3 * 3600).map(lambda d: (s + d) * 10**6))
_TIMES = st.lists(st.one_of(st.none(), _US, _CHANGES), min_size=0, max_size=30)


def _frame(values, tz, chunk):
    utc = pd.Series(pd.array([pd.NaT if v is None else pd.Timestamp(v, unit="us") for v in values],
                             dtype="datetime64[us]"))
    pdf = pd.DataFrame({"t": utc.dt.tz_localize("UTC").dt.tz_convert(tz),
                        "v": np.arange(len(values), dtype=np.int64), "k": np.arange(len(values)) % 3})
    return pdf, ad.DataFrame(pdf, chunk_size=chunk)


def _same(got, want):
    got, want = got.reset_index(drop=True), pd.Series(want).reset_index(drop=True)
    if isinstance(want.dtype, pd.DatetimeTZDtype) or want.dtype.kind in "mM":
        want = want.astype(got.dtype) if str(got.dtype).split(",")[-1] == str(want.dtype).split(",")[-1] \
            or want.dtype.kind == "m" else want
    if pd.api.types.is_bool_dtype(want.dtype) or want.dtype == object or pd.api.types.is_string_dtype(want):
        assert [None if pd.isna(x) else x for x in got] == [None if pd.isna(x) else x for x in want]
    else:
        pdt.assert_series_equal(got, want, check_dtype=False, check_names=False)


@given(_TIMES, st.sampled_from(ZONES), st.integers(1, 12))
def test_round_trip_fields_text_and_comparisons_match_pandas(values, tz, chunk):
    pdf, df = _frame(values, tz, chunk)
    got = df.fetch()
    assert got.t.dtype == pdf.t.dtype
    pdt.assert_frame_equal(got, pdf)
    assert df.t.dt.tz == pdf.t.dt.tz or str(df.t.dt.tz) == str(pdf.t.dt.tz)
    for f in ["year", "month", "day", "hour", "minute", "day_of_week", "day_of_year", "is_month_end"]:
        want = getattr(pdf.t.dt, f)
        got = getattr(df.t.dt, f).fetch()
        if want.dtype == bool:
            assert got[pdf.t.notna()].tolist() == want[pdf.t.notna()].tolist(), f
        else:
            _same(got, want)
    _same(pd.to_datetime(df.t.dt.date.fetch()), pd.to_datetime(pdf.t.dt.date))
    _same(df.t.dt.isocalendar().fetch().week.astype("float64"), pdf.t.dt.isocalendar().week.astype("float64"))
    fmt = "%Y-%m-%d %H:%M:%S %z"
    _same(df.t.dt.strftime(fmt).fetch(), pdf.t.dt.strftime(fmt))
    # Fraction digits are counted per chunk (pandas: per column): one chunk here.
    whole = ad.DataFrame(pdf)
    _same(whole.t.astype(str).fetch().where(pdf.t.notna(), None), pdf.t.astype(str).where(pdf.t.notna(), None))
    when = pd.Timestamp("2024-03-31 01:30", tz="UTC")
    for op in ["__lt__", "__ge__", "__eq__", "__ne__"]:
        _same(getattr(df.t, op)(when).fetch(), getattr(pdf.t, op)(when))
    # A fill value in another zone is the same instant in the column's, as in pandas.
    fill = pd.Timestamp("2000-01-01", tz="Asia/Tokyo")
    _same(df.t.fillna(fill).fetch(), pdf.t.fillna(fill))
    _same(df.t.where(df.v % 2 == 0).fetch(), pdf.t.where(pdf.v % 2 == 0))
    # Text is read in the column's zone, as pandas reads it.
    _same((df.t > "2024-03-31 03:00").fetch(), pdf.t > "2024-03-31 03:00")
    _same(df[df.t.between(pd.Timestamp("1990-01-01", tz="Asia/Tokyo"), when)].fetch().v,
          pdf[pdf.t.between(pd.Timestamp("1990-01-01", tz="Asia/Tokyo"), when)].v)


@given(_TIMES, st.sampled_from(ZONES), st.integers(1, 12), st.sampled_from(["D", "h", "15min", "s"]))
def test_floor_on_wall_times_and_instant_arithmetic_match_pandas(values, tz, chunk, freq):
    pdf, df = _frame(values, tz, chunk)
    for how in ("floor", "ceil", "round"):
        try:
            want = getattr(pdf.t.dt, how)(freq)
        except (ValueError, pd.errors.OutOfBoundsDatetime) as e:
            # A rounded wall time the zone skips or repeats: pandas raises, so do we.
            with pytest.raises(ares.AresError, match="ambiguous|nonexistent"):
                getattr(df.t.dt, how)(freq).fetch()
            assert "ambiguous" in str(e).lower() or "nonexistent" in str(e).lower() or "exist" in str(e).lower()
        else:
            _same(getattr(df.t.dt, how)(freq).fetch(), want)
    _same((df.t + pd.Timedelta(hours=5, minutes=1)).fetch(), pdf.t + pd.Timedelta(hours=5, minutes=1))
    # Calendar offsets move wall times (a day is a calendar day), timedeltas instants.
    for off in [pd.DateOffset(months=1), pd.offsets.Day(2), pd.DateOffset(days=1, hours=1)]:
        try:
            want = pdf.t + off
        except (ValueError, pd.errors.OutOfBoundsDatetime):
            with pytest.raises(ares.AresError, match="ambiguous|nonexistent"):
                (df.t + off).fetch()
        else:
            _same((df.t + off).fetch(), want)
    if pdf.t.notna().any():
        _same((df.t - df.t.min()).fetch(), pdf.t - pdf.t.min())
        assert df.t.max().fetch() == pdf.t.max()
    _same((df.t - df.t.dt.tz_convert("Asia/Tokyo")).fetch(), pdf.t - pdf.t.dt.tz_convert("Asia/Tokyo"))


@given(_TIMES, st.sampled_from(ZONES), st.integers(1, 12))
def test_converting_and_localizing_match_pandas(values, tz, chunk):
    pdf, df = _frame(values, tz, chunk)
    for to in ["UTC", "America/Los_Angeles", None]:
        _same(df.t.dt.tz_convert(to).fetch(), pdf.t.dt.tz_convert(to))
    wall = pdf.t.dt.tz_localize(None)
    _same(df.t.dt.tz_localize(None).fetch(), wall)
    naive = ad.DataFrame(pd.DataFrame({"w": wall}), chunk_size=chunk)
    for ambiguous, nonexistent in [("NaT", "NaT"), (True, "shift_forward"), (False, "shift_backward"),
                                   ("NaT", "shift_forward")]:
        _same(naive.w.dt.tz_localize(tz, ambiguous=ambiguous, nonexistent=nonexistent).fetch(),
              wall.dt.tz_localize(tz, ambiguous=ambiguous, nonexistent=nonexistent))
    _same(ad.to_datetime(naive.w, utc=True).fetch(), pd.to_datetime(wall, utc=True))


@given(_TIMES, st.sampled_from(ZONES), st.integers(1, 12))
def test_sort_group_by_and_merge_on_aware_keys_match_pandas(values, tz, chunk):
    pdf, df = _frame(values, tz, chunk)
    pdt.assert_frame_equal(df.sort_values(["t", "v"]).fetch().reset_index(drop=True),
                           pdf.sort_values(["t", "v"]).reset_index(drop=True))
    if pdf.t.notna().any():
        pdt.assert_series_equal(df.groupby("k").t.max().fetch().sort_index(),
                                pdf.groupby("k").t.max(), check_names=False, check_index_type=False)
    got = df.groupby("t").v.sum().fetch().sort_index()
    pdt.assert_series_equal(got, pdf.groupby("t").v.sum(), check_names=False)
    right = pdf[["t", "k"]].rename(columns={"k": "k2"}).iloc[::2]
    got = df.merge(ad.DataFrame(right, chunk_size=chunk), on="t").fetch()
    want = pdf.merge(right, on="t")
    pdt.assert_frame_equal(got.sort_values(["v", "k2"]).reset_index(drop=True),
                           want.sort_values(["v", "k2"]).reset_index(drop=True))
    got = df[df.t.isin(df[df.v % 2 == 0].t)].fetch()
    want = pdf[pdf.t.isin(pdf.t[pdf.v % 2 == 0])]
    assert got.v.tolist() == want.v.tolist()


def test_files_keep_the_zone(tmp_path):
    pdf, df = _frame([0, 1_711_846_800 * 10**6, None, 4_000_000_000 * 10**6], "Europe/Paris", 2)
    pdf.to_parquet(tmp_path / "p.parquet")
    got = ad.read_parquet(tmp_path / "p.parquet").fetch()
    pdt.assert_frame_equal(got, pdf)
    df.to_parquet(tmp_path / "a.parquet")
    pdt.assert_frame_equal(pd.read_parquet(tmp_path / "a.parquet"), pdf)
    df.to_csv(tmp_path / "a.csv")
    pdf.to_csv(tmp_path / "p.csv", index=False)
    assert (tmp_path / "a.csv").read_text() == (tmp_path / "p.csv").read_text()


def test_mixing_naive_and_aware_or_unknown_zones_is_refused_as_pandas_does():
    pdf, df = _frame([0, 1], "Europe/Paris", 1)
    with pytest.raises(TypeError, match="aware and the other naive"):
        _ = df.t < pd.Timestamp("2024-01-01")
    with pytest.raises(TypeError, match="aware and the other naive"):
        _ = df.t - df.t.dt.tz_localize(None)
    with pytest.raises(TypeError, match="Already tz-aware"):
        df.t.dt.tz_localize("UTC")
    with pytest.raises(TypeError, match="tz_localize to localize"):
        df.t.dt.tz_localize(None).dt.tz_convert("UTC")
    with pytest.raises(TypeError, match="unknown time zone.*Mars/Olympus.*IANA"):
        df.t.dt.tz_convert("Mars/Olympus")
    with pytest.raises(TypeError, match=r"astype.*tz_localize\(None\)"):
        df.t.astype("datetime64[ns]")
    naive = ad.DataFrame(pd.DataFrame({"w": pd.to_datetime(["2024-10-27 02:30", "2024-03-31 02:30"])}))
    with pytest.raises(ares.AresError, match="2024-10-27 02:30:00 is ambiguous.*Europe/Paris.*NaT"):
        naive.w.dt.tz_localize("Europe/Paris").fetch()


@given(_TIMES, st.sampled_from(ZONES), st.integers(1, 12))
def test_text_with_offsets_reads_as_instants_as_pandas_does(values, tz, chunk):
    pdf, _ = _frame(values, tz, chunk)
    # As to_csv writes aware datetimes: wall time and offset.
    text = pd.DataFrame({"s": pdf.t.astype(str).where(pdf.t.notna(), None).astype(object)})
    got = ad.to_datetime(ad.DataFrame(text, chunk_size=chunk).s, utc=True).fetch()
    _same(got, pd.to_datetime(text.s, utc=True, format="ISO8601"))


def test_csv_round_trip_of_aware_datetimes_and_offset_text_refused_without_utc(tmp_path):
    pdf, df = _frame([0, 1_711_846_800 * 10**6, None, 1_729_990_800 * 10**6], "Europe/Paris", 2)
    df.to_csv(tmp_path / "a.csv")
    back = ad.read_csv(tmp_path / "a.csv")
    got = ad.to_datetime(back.t, utc=True).dt.tz_convert("Europe/Paris").fetch()
    _same(got, pdf.t)
    texts = ad.DataFrame(pd.DataFrame({"s": ["2024-01-31T12:00:00Z", "2024-01-31 12:00:00-03:00"]}))
    assert ad.to_datetime(texts.s, utc=True).dt.hour.fetch().tolist() == [12, 15]
    with pytest.raises(ares.AresError, match=r"has a UTC offset.*utc=True"):
        ad.to_datetime(texts.s).fetch()


@pytest.mark.parametrize("tz", ["Europe/Paris", "America/New_York", "Australia/Lord_Howe"])
def test_skipped_and_repeated_wall_times_follow_each_policy_as_pandas(tz):
    # Every 10 minutes over the days of 2024's clock changes, in the north and south.
    days = ["2024-03-10", "2024-03-31", "2024-04-07", "2024-10-06", "2024-10-27", "2024-11-03"]
    wall = pd.Series(pd.concat([pd.Series(pd.date_range(d, periods=144, freq="10min")) for d in days],
                               ignore_index=True))
    df = ad.DataFrame(pd.DataFrame({"w": wall}), chunk_size=100)
    for ambiguous in ["NaT", True, False]:
        for nonexistent in ["NaT", "shift_forward", "shift_backward"]:
            got = df.w.dt.tz_localize(tz, ambiguous=ambiguous, nonexistent=nonexistent).fetch()
            want = wall.dt.tz_localize(tz, ambiguous=ambiguous, nonexistent=nonexistent)
            if tz == "Australia/Lord_Howe" and nonexistent == "shift_forward":
                # Its clocks skip half an hour (02:00 to 02:30): the first time after the
                # gap is 02:30, where pandas gives 03:00 (it shifts by a whole hour).
                skipped = (wall >= "2024-10-06 02:00") & (wall < "2024-10-06 02:30")
                assert (got[skipped].dt.strftime("%H:%M %z") == "02:30 +1100").all()
                got, want = got[~skipped], want[~skipped]
            _same(got, want)
    with pytest.raises(NotImplementedError, match="infer"):
        df.w.dt.tz_localize(tz, ambiguous="infer")
