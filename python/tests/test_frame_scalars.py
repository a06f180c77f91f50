"""Lazy scalars (a column's reduction) composed as pandas users write them: arithmetic
among scalars and numbers, comparisons with columns inside filters and ``assign``,
forced by ``float``/``int``/``bool``; each against pandas on random frames (empty,
one-row and many-chunk ones, missing values)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pandas.testing as pdt
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ares.dataframe as ad
from frame_oracle import none_for_missing


@st.composite
def frames(draw, min_rows=0, max_rows=60):
    n = draw(st.integers(min_rows, max_rows))
    f = draw(st.lists(st.one_of(st.none(), st.integers(-40, 40).map(lambda v: v / 4)), min_size=n, max_size=n))
    i = draw(st.lists(st.integers(-2**40, 2**40), min_size=n, max_size=n))
    pdf = pd.DataFrame({
        "f": np.array([np.nan if v is None else v for v in f], dtype=np.float64),
        "i": np.array(i, dtype=np.int64),
    })
    return pdf, draw(st.integers(1, 25))


def same(got: pd.DataFrame, want: pd.DataFrame) -> None:
    got, want = none_for_missing(got), none_for_missing(want)
    pdt.assert_frame_equal(got.reset_index(drop=True), want.reset_index(drop=True), check_dtype=False,
                           check_exact=False, rtol=1e-12, atol=1e-12)


def close(got, want) -> None:
    if want is None or (isinstance(want, float) and math.isnan(want)):
        assert got is None or math.isnan(got), (got, want)
    else:
        assert got == pytest.approx(want, rel=1e-12, abs=1e-12), (got, want)


@given(frames())
def test_filters_and_assignments_with_lazy_scalars_match_pandas(data):
    pdf, chunk = data
    df = ad.DataFrame(pdf, chunk_size=chunk)
    same(df[df.f > df.f.mean()].fetch(), pdf[pdf.f > pdf.f.mean()])
    same(df[df.i == df.i.max()].fetch(), pdf[pdf.i == pdf.i.max()])
    same(df[df.f.mean() <= df.f].fetch(), pdf[pdf.f.mean() <= pdf.f])
    got = df[(df.f > df.f.mean() - df.f.std()) & (df.i < df.i.max())].fetch()
    same(got, pdf[(pdf.f > pdf.f.mean() - pdf.f.std()) & (pdf.i < pdf.i.max())])
    got = df.assign(d=df.f - df.f.mean(), share=df.i / df.i.sum(), z=2 * df.f.min() + df.f).fetch()
    want = pdf.assign(d=pdf.f - pdf.f.mean(), share=pdf.i / pdf.i.sum(), z=2 * pdf.f.min() + pdf.f)
    same(got, want)


@given(frames())
def test_scalar_arithmetic_and_comparisons_are_lazy_and_match_pandas(data):
    pdf, chunk = data
    df = ad.DataFrame(pdf, chunk_size=chunk)
    s = df.f.sum() * 0.2 + df.i.count()
    assert isinstance(s, ad.Scalar) and isinstance(df.f > df.f.mean(), ad.Series)
    close(float(s), pdf.f.sum() * 0.2 + pdf.i.count())
    close((df.f.sum() / df.i.count()).fetch(), pdf.f.sum() / pdf.i.count() if len(pdf) else math.nan)
    close((-df.f.max()).fetch(), -pdf.f.max())
    close((1 - df.f.mean() ** 2).fetch(), 1 - pdf.f.mean() ** 2)
    assert bool(df.i.sum() > 10) == bool(pdf.i.sum() > 10)
    assert bool(df.i.count() == len(pdf))
    if len(pdf):
        assert int(df.i.max() - df.i.min()) == int(pdf.i.max() - pdf.i.min())


def test_a_scalar_keeps_its_dtype_and_dates_compare_with_their_maximum():
    pdf = pd.DataFrame({"d": pd.to_datetime(["2001-01-02", "1999-05-06", "2001-01-02", None]),
                        "x": np.array([1, 2, 3, 4], dtype=np.int32)})
    df = ad.DataFrame(pdf, chunk_size=2)
    same(df[df.d == df.d.max()].fetch(), pdf[pdf.d == pdf.d.max()])
    same(df[df.d > df.d.min()].fetch(), pdf[pdf.d > pdf.d.min()])
    # int32 + an int64 sum is int64, as with numpy scalars.
    assert (df.x + df.x.sum()).dtype == np.int64
    got = df.assign(y=df.x + df.x.sum()).fetch()
    assert got.y.tolist() == [11, 12, 13, 14]


def test_bad_scalars_are_refused_naming_the_problem():
    df = ad.DataFrame(pd.DataFrame({"s": ["a", "b"], "f": [1.0, 2.0]}))
    with pytest.raises(TypeError, match="compare"):
        _ = df.f > df.s.max()
    with pytest.raises(TypeError, match="arithmetic"):
        _ = df.s.max() + 1
    with pytest.raises(NotImplementedError, match="any"):
        _ = (df.f > 0).any() & True


@st.composite
def two_frames(draw):
    def keys(n):
        return draw(st.lists(st.one_of(st.none(), st.integers(0, 12)), min_size=n, max_size=n))

    n, m = draw(st.integers(0, 50)), draw(st.integers(0, 50))
    left = pd.DataFrame({"k": pd.array(keys(n), dtype="Int64").astype("float64"),
                         "s": pd.Series(draw(st.lists(st.sampled_from(["a", "b", "c", None]), min_size=n,
                                                      max_size=n)), dtype=object),
                         "v": np.arange(n, dtype=np.int64)})
    right = pd.DataFrame({"k": np.array([x if x is not None else 99 for x in keys(m)], dtype=np.int64),
                          "s": pd.Series(draw(st.lists(st.sampled_from(["b", "c", "d"]), min_size=m, max_size=m)),
                                         dtype=object)})
    return left, right, draw(st.integers(1, 20))


@given(two_frames())
def test_isin_with_another_frames_column_is_a_semi_join_and_not_isin_an_anti_join(data):
    left, right, chunk = data
    lf, rf = ad.DataFrame(left, chunk_size=chunk), ad.DataFrame(right, chunk_size=chunk)
    same(lf[lf.k.isin(rf.k)].fetch(), left[left.k.isin(right.k)])
    same(lf[~lf.k.isin(rf.k)].fetch(), left[~left.k.isin(right.k)])
    same(lf[lf.s.isin(rf.s) & (lf.v > 3)].fetch(), left[left.s.isin(right.s) & (left.v > 3)])
    # The set may itself be an expression of the other frame, or of this one.
    same(lf[lf.v.isin(rf.k * 2)].fetch(), left[left.v.isin(right.k * 2)])
    same(lf[lf.k.isin(lf.v)].fetch(), left[left.k.isin(left.v)])


def test_isin_refuses_what_cannot_match():
    lf = ad.DataFrame(pd.DataFrame({"k": [1, 2], "s": ["a", "b"]}))
    with pytest.raises(TypeError, match="isin"):
        _ = lf.k.isin(lf.s)
    with pytest.raises(NotImplementedError, match="DataFrame"):
        _ = lf.k.isin(lf)


@given(frames())
def test_where_and_mask_match_pandas(data):
    pdf, chunk = data
    df = ad.DataFrame(pdf, chunk_size=chunk)

    def check(got, want):
        pdt.assert_series_equal(got.reset_index(drop=True), want.reset_index(drop=True), check_dtype=False,
                                check_names=False, rtol=1e-12)

    check(df.f.where(df.f > df.f.mean(), 0).fetch(), pdf.f.where(pdf.f > pdf.f.mean(), 0))
    check(df.i.where(df.i > 0).fetch(), pdf.i.where(pdf.i > 0))
    check(df.i.mask(df.i > 0, df.f).fetch(), pdf.i.mask(pdf.i > 0, pdf.f))
    check(df.f.where(df.i % 2 == 0, df.i.max()).fetch(), pdf.f.where(pdf.i % 2 == 0, pdf.i.max()))
    got = df.assign(g=df.i.where(df.f.notna(), -1)).fetch()
    want = pdf.assign(g=pdf.i.where(pdf.f.notna(), -1))
    same(got, want)
    assert df.i.where(df.i > 0, -1).dtype == np.int64
