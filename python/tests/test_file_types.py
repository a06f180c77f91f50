"""Files as they come from elsewhere: every Arrow type a Parquet file may hold is read
or refused with a typed error naming the column, and no truncated or corrupted Parquet
or CSV file gets anything but a typed error (the workers and the driver keep running)."""

from __future__ import annotations

import datetime
import decimal

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ares.dataframe as ad


def _typed_file(path) -> pa.Table:
    t = pa.table({
        "price": pa.array([decimal.Decimal("1.25"), decimal.Decimal("-2.50"), None, decimal.Decimal("9999999.99")],
                          pa.decimal128(15, 2)),
        # Unscaled values beyond 64 bits take the software conversion.
        "wide": pa.array([decimal.Decimal("12345678901234567890123.45"), decimal.Decimal("-0.01"), None,
                          decimal.Decimal("1")], pa.decimal128(38, 2)),
        "small": pa.array([1, -2, None, 127], pa.int8()),
        "short": pa.array([1, 2, 3, 65535], pa.uint16()),
        "day": pa.array([datetime.date(1998, 12, 1), None, datetime.date(1970, 1, 1), datetime.date(2024, 2, 29)],
                        pa.date32()),
        "at": pa.array([0, 1_000, None, 86_400], pa.timestamp("s")),
        "name": pa.array(["a", None, "c", "d"], pa.large_string()),
        "tags": pa.array([[1], [], None, [2, 3]], pa.list_(pa.int64())),
        "zoned": pa.array([0, 1, None, 3_600_000_000], pa.timestamp("us", tz="Asia/Kolkata")),
        "clock": pa.array([0, 1, 2, 3], pa.time64("us")),
    })
    pq.write_table(t, path, row_group_size=2)
    return t


def test_decimals_narrow_integers_dates_and_timestamps_are_read(tmp_path):
    path = tmp_path / "typed.parquet"
    _typed_file(path)
    readable = ["price", "wide", "small", "short", "day", "at", "name", "zoned"]
    df = ad.read_parquet(path, columns=readable)
    got = df.fetch()
    want = pd.read_parquet(path, columns=readable)
    assert got["price"].tolist()[:2] == [1.25, -2.5] and np.isnan(got["price"][2])
    assert got["price"][3] == 9999999.99
    assert got["wide"][0] == pytest.approx(12345678901234567890123.45, rel=1e-15)
    assert got["wide"][1] == -0.01 and np.isnan(got["wide"][2]) and got["wide"][3] == 1.0
    assert got["small"].tolist()[:2] == [1, -2] and np.isnan(got["small"][2]) and got["small"][3] == 127
    assert got["short"].tolist() == [1, 2, 3, 65535]
    assert got["name"][0] == "a" and pd.isna(got["name"][1])
    assert str(got["zoned"].dtype) == str(want["zoned"].dtype) == "datetime64[us, Asia/Kolkata]"
    assert got["zoned"].dt.hour.tolist()[:2] == [5, 5] and pd.isna(got["zoned"][2])
    for c in ("day", "at", "zoned"):
        assert [pd.Timestamp(x) if not pd.isna(x) else None for x in got[c]] == \
               [pd.Timestamp(x) if not pd.isna(x) else None for x in want[c]]
    # Decimals compute as float64 (sums, filters, group-bys).
    assert float(df.price.sum()) == pytest.approx(1.25 - 2.5 + 9999999.99)
    assert len(df[df.price > 0].fetch()) == 2


@pytest.mark.parametrize("column,kind", [("tags", "list"), ("clock", "time")])
def test_types_frames_do_not_hold_are_refused_naming_the_column(tmp_path, column, kind):
    path = tmp_path / "typed.parquet"
    _typed_file(path)
    with pytest.raises(TypeError) as e:
        ad.read_parquet(path)
    assert "tags" in str(e.value) or "clock" in str(e.value)
    with pytest.raises(TypeError) as e:
        ad.read_parquet(path, columns=["price", column])
    assert column in str(e.value) and kind in str(e.value).lower() and "columns=" in str(e.value)


def _good_parquet(path) -> bytes:
    pdf = pd.DataFrame({"k": np.arange(200) % 7, "f": np.linspace(0, 1, 200), "s": ["x", "yy"] * 100})
    pdf.to_parquet(path, index=False, row_group_size=50)
    return path.read_bytes()


def _good_csv(path) -> bytes:
    pd.DataFrame({"k": np.arange(200) % 7, "f": np.linspace(0, 1, 200), "s": ["x", "yy"] * 100}) \
        .to_csv(path, index=False)
    return path.read_bytes()


def _damaged(raw: bytes, cut: int, flips: list) -> bytes:
    b = bytearray(raw[:max(1, cut)])
    for at, byte in flips:
        b[at % len(b)] = byte
    return bytes(b)


def _read_all(reader, path) -> None:
    """Reads the file through the engine; only a typed error may come out."""
    try:
        df = reader(path)
        df.fetch()
        float(df.k.sum()) if "k" in df.columns else None
    except (ValueError, TypeError, OSError, NotImplementedError, KeyError, RuntimeError) as e:
        assert "panic" not in str(e).lower(), e


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=6),
       st.booleans())
def test_truncated_and_corrupted_files_give_typed_errors(tmp_path_factory, cut, flips, parquet):
    d = tmp_path_factory.mktemp("fuzz")
    good = d / ("good.parquet" if parquet else "good.csv")
    raw = _good_parquet(good) if parquet else _good_csv(good)
    bad = d / ("bad.parquet" if parquet else "bad.csv")
    bad.write_bytes(_damaged(raw, cut % (len(raw) + 1), flips))
    _read_all(ad.read_parquet if parquet else ad.read_csv, bad)
    # The cluster still works after whatever the damaged file did.
    assert float(ad.read_parquet(good).f.sum() if parquet else ad.read_csv(good).f.sum()) == pytest.approx(100.0)
