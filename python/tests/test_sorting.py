"""Sorting and what is built on it (sort, argsort, unique, searchsorted, isin, median,
percentile, quantile) against numpy: random shapes, dtypes (integers at their extremes,
floats with NaN, infinities and signed zeros) and chunkings; a vector in several chunks
goes through the sample sort."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from test_elementwise import ALL, INTS, values
from test_numpy_parity import check, chunkings, make

import ares.tensor as at

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

vectors = st.integers(0, 60).map(lambda n: (n,))
small_shapes = st.lists(st.integers(1, 9), min_size=1, max_size=3).map(tuple)
FLOATS = [np.dtype(np.float32), np.dtype(np.float64)]


@st.composite
def tensors(draw, shape_strategy=small_shapes, dtypes=ALL, elements=None):
    dtype = draw(st.sampled_from(dtypes))
    shape = draw(shape_strategy)
    x = draw(arrays(dtype, shape, elements=elements(dtype) if elements else values(dtype)))
    return x, make(x, draw(chunkings(shape)))


def numpy_key(v):
    """numpy's order as a Python sort key: NaN after every number."""
    f = float(v) if not isinstance(v, (bool, np.bool_)) else int(v)
    return (1, 0.0) if f != f else (0, f)


def stable_argsort(lane, descending):
    return sorted(range(len(lane)), key=lambda i: numpy_key(lane[i]), reverse=descending)


@given(tensors(), st.data())
def test_sort_and_argsort_match_a_stable_numpy_sort(xt, data):
    x, t = xt
    axis = data.draw(st.sampled_from([None, -1] + list(range(x.ndim))))
    check(at.sort(t, axis=axis), np.sort(x, axis=axis, kind="stable"))
    check(at.argsort(t, axis=axis), np.argsort(x, axis=axis, kind="stable"))
    check(np.sort(t, axis=axis), np.sort(x, axis=axis, kind="stable"))


@given(tensors(vectors), st.booleans())
def test_descending_is_stable_among_equal_elements(xt, descending):
    x, t = xt
    want = np.array(stable_argsort(list(x), descending), dtype=np.int64)
    check(at.argsort(t, descending=descending), want)
    check(at.sort(t, descending=descending), x[want] if len(want) else x)


@given(tensors(vectors))
def test_in_place_sort_rebinds_the_tensor(xt):
    x, t = xt
    before = t * 1
    t.sort()
    check(t, np.sort(x, kind="stable"))
    check(before, x * 1)


@given(tensors())
def test_unique_family_matches_numpy(xt):
    x, t = xt
    check(at.unique(t), np.unique(x), lazy_shape=False)
    u, inv, cnt = at.unique(t, return_inverse=True, return_counts=True)
    wu, winv, wcnt = np.unique(x, return_inverse=True, return_counts=True)
    check(u, wu, lazy_shape=False)
    check(inv, winv.reshape(x.shape))
    check(cnt, wcnt, lazy_shape=False)
    # numpy 2.3+ leaves the Array API's unique_* unsorted (the standard allows any
    # order); ares returns them sorted: compare in sorted order.
    check(at.unique_values(t), np.sort(np.unique_values(x)), lazy_shape=False)
    got = at.unique_counts(t)
    want = np.unique_counts(x)
    order = np.argsort(want.values, kind="stable")
    check(got.values, want.values[order], lazy_shape=False)
    check(got.counts, want.counts[order], lazy_shape=False)


@given(tensors(vectors, dtypes=INTS + FLOATS), st.data())
def test_searchsorted_and_isin_match_numpy(xt, data):
    x, t = xt
    a = np.sort(x, kind="stable")
    q = data.draw(arrays(x.dtype, data.draw(small_shapes), elements=values(x.dtype)))
    qt = make(q, data.draw(chunkings(q.shape)))
    for side in ("left", "right"):
        check(at.searchsorted(at.sort(t), qt, side=side), np.searchsorted(a, q, side=side))
    check(at.isin(qt, t), np.isin(q, x))
    check(at.isin(qt, t, invert=True), np.isin(q, x, invert=True))


order_elements = lambda d: values(d) if np.dtype(d).kind in "iu" else st.floats(-1e6, 1e6, width=np.dtype(d).itemsize * 8)  # noqa: E731


@given(tensors(small_shapes, dtypes=INTS + FLOATS, elements=order_elements), st.data())
def test_order_statistics_match_numpy(xt, data):
    x, t = xt
    axis = data.draw(st.sampled_from([None] + list(range(x.ndim))))
    method = data.draw(st.sampled_from(["linear", "lower", "higher", "nearest", "midpoint"]))
    q = data.draw(st.one_of(st.floats(0, 1), st.lists(st.floats(0, 1), min_size=1, max_size=3)))
    keepdims = data.draw(st.booleans())
    tol = dict(rtol=1e-6 if x.dtype == np.float32 else 1e-12, atol=0)
    if x.dtype.kind in "iu" and np.abs(x.astype(np.float64)).max(initial=0) > 2**52:
        tol = dict(rtol=1e-9, atol=0)  # numpy's float64 arithmetic on huge integers rounds too
    check(at.quantile(t, q, axis=axis, method=method, keepdims=keepdims), np.quantile(x, q, axis=axis, method=method, keepdims=keepdims), **tol)
    check(at.percentile(t, np.multiply(q, 100), axis=axis, method=method), np.percentile(x, np.multiply(q, 100), axis=axis, method=method), **tol)
    check(at.median(t, axis=axis, keepdims=keepdims), np.median(x, axis=axis, keepdims=keepdims), **tol)


def test_order_statistics_of_nan_and_of_a_large_vector():
    x = np.array([3.0, np.nan, 1.0, 2.0])
    check(at.median(at.tensor(x, chunk_size=3)), np.median(x))
    check(at.percentile(at.tensor(x, chunk_size=1), 20), np.percentile(x, 20))
    y = np.random.default_rng(7).normal(size=100_000)
    t = at.tensor(y, chunk_size=7_000)
    check(at.percentile(t, [1, 50, 99.9]), np.percentile(y, [1, 50, 99.9]), rtol=0, atol=0)
    check(at.sort(t), np.sort(y))
    with pytest.raises(ValueError, match="range"):
        at.percentile(t, 101)
    with pytest.raises(NotImplementedError, match="order"):
        at.sort(t, order="x")


@given(st.data())
def test_unique_all_and_return_index_match_numpy(data):
    n = data.draw(st.integers(0, 40))
    x = data.draw(arrays(np.float64, (n,), elements=st.sampled_from([0.0, 1.5, -2.0, 7.0, np.nan])))
    t = at.tensor(x, chunk_size=data.draw(st.integers(1, 9)))
    values, index, inverse, counts = np.unique(x, return_index=True, return_inverse=True, return_counts=True)
    got = at.unique(t, return_index=True, return_inverse=True, return_counts=True)
    for g, w in zip(got, (values, index, inverse, counts)):
        np.testing.assert_array_equal(g.fetch(), w)
    r = at.unique_all(t)
    # The standard's: each NaN its own value, in order after the others.
    keep = ~np.isnan(x)
    uv, ui, uc = np.unique(x[keep], return_index=True, return_counts=True)
    nan_at = np.flatnonzero(~keep)
    np.testing.assert_array_equal(r.values.fetch(), np.concatenate([uv, x[nan_at]]))
    np.testing.assert_array_equal(r.indices.fetch(), np.concatenate([np.flatnonzero(keep)[ui], nan_at]))
    np.testing.assert_array_equal(r.counts.fetch(), np.concatenate([uc, np.ones(len(nan_at), np.int64)]))
    np.testing.assert_array_equal(r.values.fetch()[r.inverse_indices.fetch()][keep], x[keep])


def test_searchsorted_with_a_sorter_and_repeat_per_element():
    a = np.array([5, 1, 4, 2, 3])
    order = np.argsort(a)
    v = np.array([0, 3, 6, 2])
    check(at.searchsorted(at.tensor(a, chunk_size=2), v, sorter=at.tensor(order)), np.searchsorted(a, v, sorter=order))
    check(at.searchsorted(at.tensor(a), v, side="right", sorter=order), np.searchsorted(a, v, side="right", sorter=order))
    x = np.arange(12).reshape(3, 4)
    for counts, axis in [([0, 2, 1], 0), ([1, 0, 3, 2], 1), (np.arange(12) % 3, None)]:
        check(at.repeat(at.tensor(x, chunk_size=2), counts, axis=axis), np.repeat(x, counts, axis=axis))
    check(at.repeat(at.tensor(x), at.tensor(np.array([2, 0, 1])), axis=0), np.repeat(x, [2, 0, 1], axis=0))
    with pytest.raises(ValueError):
        at.repeat(at.tensor(x), [1, 2], axis=0)


def test_searchsorted_compares_in_the_common_dtype():
    a = np.array([1, 2, 3])
    for v in ([1.5, 2.5], np.array([0.5, 3.5]), 1.5, 2):
        check(at.searchsorted(at.tensor(a), v), np.searchsorted(a, v))
    check(at.searchsorted(at.tensor(a.astype(np.float32)), np.array([2], dtype=np.int64)), np.searchsorted(a.astype(np.float32), np.array([2])))


def test_searchsorted_with_ints_beyond_the_dtype():
    a = np.array([1, 2, 3], dtype=np.int8)
    check(at.searchsorted(at.tensor(a), 1000), np.searchsorted(a, 1000))
    check(at.searchsorted(at.tensor(a.astype(np.uint8)), -1), np.searchsorted(a.astype(np.uint8), -1))
    f = at.finfo(np.float32)
    assert f.epsneg == np.finfo(np.float32).epsneg and type(f.eps) is float


@pytest.mark.parametrize("kind", ["uniform", "ties", "ints", "nan"])
def test_quantiles_of_a_computed_vector_by_selection_are_numpys(kind):
    # Past _SELECT_MIN elements a computed vector's order statistics come by selection
    # (a sample brackets each rank); every path must give numpy's exact answers.
    n = (1 << 22) + 12345
    rng = np.random.default_rng(3)
    x = {
        "uniform": rng.standard_normal(n),
        "ties": np.round(rng.standard_normal(n), 1),
        "ints": rng.integers(-(2**62), 2**62, n),
        "nan": np.where(rng.random(n) < 1e-6, np.nan, rng.random(n)),
    }[kind]
    t = at.tensor(x, chunk_size=1 << 20).execute()
    q = [0.0, 0.1, 0.5, 0.9, 0.999999, 1.0]
    for method in ("linear", "lower", "nearest", "midpoint"):
        np.testing.assert_array_equal(at.quantile(t, q, method=method).fetch(), np.quantile(x, q, method=method))
    np.testing.assert_array_equal(at.median(t).fetch(), np.median(x))
    np.testing.assert_array_equal(at.percentile(t, 37.5).fetch(), np.percentile(x, 37.5))
