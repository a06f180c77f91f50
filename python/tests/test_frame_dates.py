"""Date and time columns compared with every literal form pandas users write
(``datetime.date``, ``datetime``, ``pd.Timestamp``, ``np.datetime64``, ISO strings,
``NaT``), in filters and ``between``, against pandas on the same values."""

from __future__ import annotations

import datetime

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ares.dataframe as ad

DAYS = ["1992-01-02", "1998-09-02", "1998-09-03", None, "1995-03-15", "1969-12-31"]
FORMS = [
    lambda s: datetime.date.fromisoformat(s),
    lambda s: pd.Timestamp(s),
    lambda s: np.datetime64(s),
    lambda s: s,
    lambda s: datetime.datetime.fromisoformat(s),
]


def _date_file(path) -> pd.DataFrame:
    when = pd.to_datetime(pd.Series(DAYS))
    t = pa.table({"d": pa.array([None if pd.isna(x) else x.date() for x in when], pa.date32()),
                  "v": pa.array(range(len(DAYS)), pa.int64())})
    pq.write_table(t, path, row_group_size=2)
    # The oracle: the same days as pandas' datetime64 (a date is its midnight).
    return pd.DataFrame({"d": when, "v": np.arange(len(DAYS))})


@pytest.mark.parametrize("form", range(len(FORMS)))
def test_date_columns_compare_with_every_literal_form(tmp_path, form):
    pdf = _date_file(tmp_path / "d.parquet")
    df = ad.read_parquet(tmp_path / "d.parquet")
    lit = FORMS[form]("1998-09-02")
    ts = pd.Timestamp(lit)
    for op in ("__le__", "__lt__", "__gt__", "__ge__", "__eq__", "__ne__"):
        got = df[getattr(df.d, op)(lit)].fetch().v.tolist()
        want = pdf[getattr(pdf.d, op)(ts)].v.tolist()
        assert got == want, (op, lit)
    got = df[df.d.between(FORMS[form]("1995-01-01"), lit)].fetch().v.tolist()
    assert got == pdf[pdf.d.between(pd.Timestamp("1995-01-01"), ts)].v.tolist()


def test_a_time_of_day_compares_as_an_instant_and_datetime_columns_take_dates(tmp_path):
    pdf = _date_file(tmp_path / "d.parquet")
    df = ad.read_parquet(tmp_path / "d.parquet")
    noon = datetime.datetime(1998, 9, 2, 12)
    assert df[df.d < noon].fetch().v.tolist() == pdf[pdf.d < pd.Timestamp(noon)].v.tolist()
    assert df[df.d > noon].fetch().v.tolist() == pdf[pdf.d > pd.Timestamp(noon)].v.tolist()
    # A datetime64[ns] column (from pandas) against dates and strings.
    tf = ad.DataFrame(pdf, chunk_size=4)
    for lit in (datetime.date(1995, 3, 15), "1995-03-15", np.datetime64("1995-03-15T00:00")):
        assert tf[tf.d >= lit].fetch().v.tolist() == pdf[pdf.d >= pd.Timestamp(lit)].v.tolist()
    # NaT matches nothing (and != everything), as in pandas.
    assert tf[tf.d == pd.NaT].fetch().v.tolist() == []
    assert tf[tf.d != pd.NaT].fetch().v.tolist() == pdf.v.tolist()


def test_bad_date_literals_are_refused_naming_them(tmp_path):
    _date_file(tmp_path / "d.parquet")
    df = ad.read_parquet(tmp_path / "d.parquet")
    with pytest.raises(TypeError, match="not-a-date"):
        _ = df.d < "not-a-date"
    # As pandas: a naive column and an aware instant do not compare.
    with pytest.raises(TypeError, match="time-zone aware and the other naive.*tz_localize"):
        _ = df.d < pd.Timestamp("1998-01-01", tz="UTC")


def test_dates_sort_group_merge_and_shuffle_as_pandas_does():
    days = pd.to_datetime(pd.Series(["2001-01-02", "1999-05-06", None, "2000-01-01", "1969-07-20"] * 40))
    pdf = pd.DataFrame({"d": days, "k": np.arange(200) % 3, "v": np.arange(200, dtype=np.float64)})
    df = ad.DataFrame(pdf, chunk_size=30)
    got = df.sort_values(["d", "v"]).fetch()
    want = pdf.sort_values(["d", "v"], kind="stable").reset_index(drop=True)
    pd.testing.assert_frame_equal(got, want, check_dtype=False)
    got = df.sort_values(["k", "d"], ascending=[True, False]).fetch()
    want = pdf.sort_values(["k", "d"], ascending=[True, False], kind="stable").reset_index(drop=True)
    pd.testing.assert_frame_equal(got, want, check_dtype=False)
    for method in ("tree", "shuffle"):
        got = df.groupby("d", method=method)[["v"]].sum().fetch().sort_index()
        pd.testing.assert_frame_equal(got, pdf.groupby("d")[["v"]].sum(), check_dtype=False, check_index_type=False)
    # A merge on a date key (two sides of several chunks: shuffled by the key's hash).
    other = ad.DataFrame(pdf[["d", "k"]].rename(columns={"k": "k2"}), chunk_size=30)
    got = df.merge(other, on="d").fetch()
    want = pdf.merge(pdf[["d", "k"]].rename(columns={"k": "k2"}), on="d")
    assert len(got) == len(want)
    assert sorted(got.v.tolist()) == sorted(want.v.tolist())
