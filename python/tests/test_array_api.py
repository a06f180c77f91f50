"""The Array API functions built from the tiled operations (``ares.tensor._array_api``)
against numpy: random shapes, dtypes (integers at their extremes) and chunkings (uneven
ones too), the same values, dtypes and shapes; and the namespace's inspection."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from test_elementwise import ALL, values
from test_numpy_parity import axis_args, check, chunkings, make, numpy_ref, shapes

import ares.tensor as at

# numpy's own reference computations warn on inf - inf and overflow; ares does not warn.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

nd_shapes = shapes.filter(lambda s: len(s) >= 1)
matrix_shapes = shapes.filter(lambda s: len(s) >= 2)


@st.composite
def tensors(draw, shape_strategy=shapes, dtypes=ALL):
    """``(numpy array, tensor)`` of one random dtype, shape and chunking."""
    dtype = draw(st.sampled_from(dtypes))
    shape = draw(shape_strategy)
    x = draw(arrays(dtype, shape, elements=values(dtype)))
    return x, make(x, draw(chunkings(shape)))


@given(tensors(nd_shapes), st.data())
def test_flip_roll_and_moveaxis_match_numpy(xt, data):
    x, t = xt
    axis = data.draw(axis_args(x.ndim))
    check(at.flip(t, axis=axis), np.flip(x, axis=axis))
    shift = data.draw(st.integers(-30, 30))
    a = data.draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1)))
    check(at.roll(t, shift, axis=a), np.roll(x, shift, axis=a))
    src = data.draw(st.integers(-x.ndim, x.ndim - 1))
    dst = data.draw(st.integers(-x.ndim, x.ndim - 1))
    check(at.moveaxis(t, src, dst), np.moveaxis(x, src, dst))
    perm = data.draw(st.permutations(range(x.ndim)))
    check(at.permute_dims(t, perm), np.permute_dims(x, perm))


@given(tensors(shapes), st.data())
def test_broadcast_repeat_and_tile_match_numpy(xt, data):
    x, t = xt
    lead = data.draw(st.lists(st.integers(1, 3), max_size=2))
    target = tuple(lead) + tuple(data.draw(st.sampled_from([d, d, 1 if d == 1 else d])) for d in x.shape)
    target = tuple(data.draw(st.integers(1, 3)) if d == 1 else d for d in target)
    check(at.broadcast_to(t, target), np.broadcast_to(x, target))
    reps = data.draw(st.integers(0, 3))
    axis = data.draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1))) if x.ndim else None
    check(at.repeat(t, reps, axis=axis), np.repeat(x, reps, axis=axis))
    tiles = data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=4))
    check(at.tile(t, tiles), np.tile(x, tiles))


def test_broadcast_to_keeps_every_bit_and_refuses_what_numpy_refuses():
    x = np.array([-0.0, np.nan, np.inf])
    got = at.broadcast_to(at.tensor(x), (2, 3)).fetch()
    assert np.signbit(got[1, 0]) and np.isnan(got[0, 1])
    with pytest.raises(ValueError, match="broadcast"):
        at.broadcast_to(at.ones((3, 2)), (3, 3))


@given(tensors(matrix_shapes), st.integers(-13, 13))
def test_triangles_trace_and_diagonals_match_numpy(xt, k):
    x, t = xt
    check(at.tril(t, k=k), np.tril(x, k=k))
    check(at.triu(t, k=k), np.triu(x, k=k))
    want, err = numpy_ref(np.trace, x, offset=k, axis1=-2, axis2=-1)
    if err is None:
        check(at.trace(t, offset=k), want)


@given(tensors(st.integers(1, 12).map(lambda n: (n,))), st.integers(-4, 4))
def test_diag_of_a_vector_and_eye_match_numpy(xt, k):
    x, t = xt
    check(at.diag(t, k=k), np.diag(x, k=k))
    n = x.shape[0]
    check(at.eye(n, n + abs(k) // 2, k=k, dtype=x.dtype, chunk_size=3), np.eye(n, n + abs(k) // 2, k=k, dtype=x.dtype))


@given(tensors(nd_shapes))
def test_nonzero_and_count_nonzero_match_numpy(xt):
    x, t = xt
    got = at.nonzero(t)
    want = np.nonzero(x)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        check(g, w, lazy_shape=False)
    check(at.count_nonzero(t), np.count_nonzero(x))
    for g, w in zip(at.where(t), np.where(x)):
        check(g, w, lazy_shape=False)


@given(tensors(nd_shapes), st.data())
def test_diff_matches_numpy(xt, data):
    x, t = xt
    n = data.draw(st.integers(0, 3))
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    assume(x.dtype.kind != "u")  # numpy's unsigned differences wrap, as ours do: checked below
    check(at.diff(t, n=n, axis=axis), np.diff(x, n=n, axis=axis))


def test_diff_of_unsigned_wraps_and_takes_prepend_append():
    x = np.array([3, 1, 4, 1, 5], np.uint8)
    check(at.diff(at.tensor(x, chunk_size=2)), np.diff(x))
    y = np.arange(6.0).reshape(2, 3)
    check(at.diff(at.tensor(y), axis=1, prepend=0, append=y[:, -1:]), np.diff(y, axis=1, prepend=0, append=y[:, -1:]))


@given(tensors(shapes, dtypes=[np.dtype(np.float32), np.dtype(np.float64)]), st.integers(-3, 4))
def test_round_matches_numpy(xt, decimals):
    x, t = xt
    want = np.round(x, decimals)
    got = at.round(t, decimals)
    # numpy's own algorithm (scale, rint, unscale) in the same dtype: equal to the bit.
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.fetch(), want)
    check(at.rint(t), np.rint(x))


@given(tensors(shapes))
def test_rint_of_every_dtype_types_as_numpy(xt):
    x, t = xt
    want = np.rint(x)
    check(at.rint(t), want, dtype=np.float64 if want.dtype == np.float16 else want.dtype, rtol=0, atol=0)


@given(tensors(nd_shapes), st.data())
def test_unstack_concat_and_vecdot(xt, data):
    x, t = xt
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    parts = at.unstack(t, axis=axis)
    for g, w in zip(parts, np.unstack(x, axis=axis)):
        check(g, w)
    check(at.concat([t, t], axis=axis), np.concat([x, x], axis=axis))
    check(at.concat([t, t], axis=None), np.concat([x, x], axis=None))
    if x.dtype.kind == "f":
        check(at.vecdot(t, t, axis=axis), np.vecdot(x, x, axis=axis))


def test_meshgrid_matches_numpy_for_both_indexings():
    a, b, c = np.arange(3), np.arange(4.0), np.arange(2)
    for indexing in ("xy", "ij"):
        for got, want in zip(at.meshgrid(at.tensor(a), at.tensor(b), at.tensor(c), indexing=indexing), np.meshgrid(a, b, c, indexing=indexing)):
            check(got, want)


def test_std_and_var_take_the_array_apis_correction():
    x = np.arange(24.0).reshape(4, 6)
    t = at.tensor(x, chunk_size=3)
    check(at.std(t, axis=0, correction=1), np.std(x, axis=0, ddof=1))
    check(t.var(correction=1.5), np.var(x, ddof=1.5))
    with pytest.raises(ValueError, match="simultaneously"):
        at.var(t, ddof=1, correction=1)


def test_the_namespace_answers_the_array_apis_inspection():
    t = at.ones((2, 3))
    assert t.__array_namespace__() is at and at.__array_api_version__ == "2023.12"
    with pytest.raises(ValueError):
        t.__array_namespace__(api_version="2099.01")
    info = at.__array_namespace_info__()
    assert info.default_device() == "cpu" and info.devices() == ["cpu"] and t.device == "cpu"
    assert info.default_dtypes()["integral"] == np.int64
    assert set(info.dtypes(kind="unsigned integer")) == {"uint8", "uint16", "uint32", "uint64"}
    assert at.isdtype(at.int8, ("real floating", "signed integer")) and not at.isdtype(at.uint8, "signed integer")
    assert at.result_type(at.ones(2, dtype=at.int8), at.uint8) == np.int16
    assert at.can_cast(at.int8, at.int16) and not at.can_cast(at.float64, at.int64)
    assert at.iinfo(at.ones(2, dtype=at.int16)).max == 32767 and at.finfo(at.float32).bits == 32
    assert t.to_device("cpu") is t
    with pytest.raises(ValueError, match="device"):
        at.ones(3).to_device("cuda")
    with pytest.raises(ValueError, match="device"):
        at.eye(3, device="gpu")
    check(t.mT, np.ones((3, 2)))


def test_dlpack_both_ways():
    x = np.arange(12, dtype=np.int16).reshape(3, 4)
    t = at.tensor(x, chunk_size=2) + 1
    np.testing.assert_array_equal(np.from_dlpack(t), x + 1)
    check(at.from_dlpack(x), x)
    assert t.__dlpack_device__() == (1, 0)


@given(tensors(nd_shapes), st.data())
def test_running_sums_and_products_match_numpy(xt, data):
    x, t = xt
    axis = data.draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1)))
    for name in ("cumsum", "cumprod"):
        want, err = numpy_ref(getattr(np, name), x, axis=axis)
        assert err is None
        # Integers exactly (wrapping as numpy); floats within rounding of the order.
        check(getattr(at, name)(t, axis=axis), want, rtol=1e-5 if x.dtype == np.float32 else 1e-9, atol=1e-3)
    if x.ndim == 1 or axis is not None:
        a = 0 if axis is None else axis
        check(at.cumulative_sum(t, axis=a, include_initial=True), np.cumulative_sum(x, axis=a, include_initial=True), rtol=1e-5, atol=1e-3)
        check(at.cumulative_prod(t, axis=a), np.cumulative_prod(x, axis=a), rtol=1e-5, atol=1e-3)


def test_cumsum_with_a_dtype_and_of_a_mask_result():
    x = np.arange(20, dtype=np.int32) * 1000
    t = at.tensor(x, chunk_size=6)
    check(t.cumsum(dtype=np.int16), np.cumsum(x, dtype=np.int16))
    check(t.cumsum(dtype=np.float32), np.cumsum(x, dtype=np.float32))
    check(np.cumsum(t[t > 5000]), np.cumsum(x[x > 5000]), lazy_shape=False)


def test_standard_spellings_and_helpers():
    x = np.array([-3.0, np.nan, 0.5, 9.0])
    t = at.tensor(x, chunk_size=3)
    lo, hi = np.array([-1.0, 0.0, 1.0, 2.0]), np.array([0.0, 1.0, 2.0, 8.0])
    np.testing.assert_array_equal(at.clip(t, at.tensor(lo), hi).fetch(), np.clip(x, lo, hi))
    np.testing.assert_array_equal(at.clip(t, min=0.0).fetch(), np.clip(x, 0.0, None))
    np.testing.assert_array_equal(at.clip(t, a_max=1.0).fetch(), np.clip(x, None, 1.0))
    np.testing.assert_array_equal(at.clip(t).fetch(), x)
    np.testing.assert_array_equal(at.pow(t, 2).fetch(), x**2)
    assert complex(at.tensor(2.5)) == 2.5 + 0j
    f = at.finfo(at.float32)
    assert type(f.eps) is float and f.eps == float(np.finfo(np.float32).eps) and f.bits == 32
    assert at.reshape(t, (2, 2)).shape == (2, 2) and at.reshape(t, newshape=(4, 1)).shape == (4, 1)
    y = at.asarray(t, copy=True)
    t[0] = 100.0
    assert y.fetch()[0] == -3.0 and t.fetch()[0] == 100.0
    for make in (at.zeros, at.ones, at.empty):
        assert make((2,), device="cpu").shape == (2,)
    with pytest.raises(ValueError):
        at.arange(3, device="gpu")
    np.testing.assert_array_equal(at.linspace(0.0, 1.0, 107, endpoint=False).fetch(), np.linspace(0.0, 1.0, 107, endpoint=False))
    u = np.arange(1, 7, dtype=np.uint8)
    d = at.vecdot(at.tensor(u), at.tensor(u))
    assert d.dtype == np.uint8 and d.fetch() == np.vecdot(u, u)
