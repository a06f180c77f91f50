"""``.str`` slicing and indexing against pandas on random strings (empty ones, non-ASCII
characters, missing values) and random bounds, steps and indices."""

from __future__ import annotations

import pandas as pd
import pandas.testing as pdt
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ares.dataframe as ad

bound = st.one_of(st.none(), st.integers(-8, 8))


@given(st.lists(st.one_of(st.none(), st.text(alphabet="abé€😀", max_size=7)), max_size=20),
       bound, bound, st.one_of(st.none(), st.integers(-3, 3).filter(lambda s: s != 0)), st.integers(-8, 8),
       st.integers(1, 6))
def test_str_slices_and_gets_match_pandas(values, start, stop, step, i, chunk):
    ps = pd.Series(values, dtype=object, name="s")
    df = ad.DataFrame(pd.DataFrame({"s": ps}), chunk_size=chunk)

    def check(got, want):
        got, want = got.astype(object), want.astype(object)
        pdt.assert_series_equal(got.where(got.notna(), None), want.where(want.notna(), None), check_dtype=False,
                                check_index_type=False)

    check(df.s.str.slice(start, stop, step).fetch(), ps.str.slice(start, stop, step))
    check(df.s.str[start:stop:step].fetch(), ps.str[start:stop:step])
    check(df.s.str.get(i).fetch(), ps.str.get(i))
    check(df.s.str[i].fetch(), ps.str[i])


def test_str_slicing_refuses_what_pandas_refuses():
    df = ad.DataFrame(pd.DataFrame({"s": ["abc"], "n": [1]}))
    with pytest.raises(ValueError, match="zero"):
        df.s.str.slice(0, 2, 0)
    with pytest.raises(TypeError, match="str.slice"):
        df.n.str.slice(0, 2)


def test_reset_index_names_a_series_value_column_as_pandas():
    pdf = pd.DataFrame({"k": [1, 2, 1, 3], "v": [1.0, 2.0, 3.0, 4.0]})
    df = ad.DataFrame(pdf, chunk_size=2)
    got = df.groupby("k")["v"].sum().reset_index(name="total").fetch()
    want = pdf.groupby("k")["v"].sum().reset_index(name="total")
    pdt.assert_frame_equal(got, want, check_dtype=False)
    got = df.k.value_counts().reset_index(name="n").fetch().sort_values("k").reset_index(drop=True)
    want = pdf.k.value_counts().reset_index(name="n").sort_values("k").reset_index(drop=True)
    pdt.assert_frame_equal(got, want, check_dtype=False)
    with pytest.raises(TypeError, match="name"):
        df.reset_index(name="x")
