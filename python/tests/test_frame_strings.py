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
