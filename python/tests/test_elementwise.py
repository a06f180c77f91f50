"""``ares.tensor``'s element-wise functions and integer dtypes against numpy: random shapes,
chunkings and dtypes (int8–uint64 at their extremes too), the same values and dtypes.

Where numpy gives float16 (float functions of booleans and 8-bit integers), which is not a
dtype of ares yet, ares gives float64: the tests expect that and compare the values.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from test_numpy_parity import check, chunkings, error_type, make, numpy_ref, shapes

import ares.tensor as at

INTS = [np.dtype(d) for d in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64)]
ALL = [np.dtype(np.bool_)] + INTS + [np.dtype(np.float32), np.dtype(np.float64)]


def values(dtype, extremes=True):
    """Elements of ``dtype``: for integers the whole range (extremes included), for floats
    moderate values plus the special ones."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return st.booleans()
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return st.integers(int(info.min), int(info.max)) if extremes else st.integers(-50, 50).filter(
            lambda v: info.min <= v <= info.max
        )
    width = dtype.itemsize * 8
    return st.floats(-1e3, 1e3, width=width) | st.sampled_from([0.0, -0.0, np.inf, -np.inf, np.nan])


def expected_dtype(result: np.ndarray) -> np.dtype:
    """numpy's dtype, with float16 (not an ares dtype) as float64."""
    return np.dtype(np.float64) if result.dtype == np.float16 else result.dtype


UNARY = [
    "tan", "sinh", "cosh", "tanh", "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh", "expm1",
    "log1p", "log2", "log10", "floor", "ceil", "trunc", "sign", "square", "positive", "isnan", "isinf",
    "isfinite", "signbit", "invert", "sqrt", "exp", "log", "sin", "cos", "absolute", "negative",
]


@given(data=st.data(), name=st.sampled_from(UNARY), dtype=st.sampled_from(ALL), shape=shapes)
def test_unary_functions_match_numpy(data, name, dtype, shape):
    x = data.draw(arrays(dtype, shape, elements=values(dtype)))
    chunks = data.draw(chunkings(shape))
    want, err = numpy_ref(getattr(np, name), x)
    if err is not None:
        with pytest.raises(error_type(err)):
            getattr(at, name)(make(x, chunks)).fetch()
        return
    got = getattr(at, name)(make(x, chunks))
    if want.dtype == np.float16:
        # ares computes in float64 where numpy rounds to float16: compare with numpy's
        # float64 answer.
        want = numpy_ref(getattr(np, name), x.astype(np.float64))[0]
    check(got, want, dtype=expected_dtype(want), rtol=1e-3 if want.dtype == np.float32 else 1e-12, atol=1e-30)


BINARY = [
    "floor_divide", "remainder", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift",
    "arctan2", "hypot", "copysign", "logaddexp", "add", "subtract", "multiply", "maximum", "minimum",
]


@given(data=st.data(), name=st.sampled_from(BINARY), da=st.sampled_from(ALL), db=st.sampled_from(ALL), shape=shapes)
def test_binary_functions_match_numpy_with_its_promotions(data, name, da, db, shape):
    x = data.draw(arrays(da, shape, elements=values(da)))
    shift = name in ("left_shift", "right_shift")
    # Shift counts around the width (numpy shifts everything out past it).
    y = data.draw(arrays(db, shape, elements=st.integers(0, 70).filter(lambda v: v <= np.iinfo(db).max) if shift and db.kind in "iu" else values(db)))
    chunks = data.draw(chunkings(shape))
    want, err = numpy_ref(getattr(np, name), x, y)
    if err is not None:
        with pytest.raises(error_type(err)):
            getattr(at, name)(make(x, chunks), make(y, chunks)).fetch()
        return
    if want.dtype == np.float16:
        want = numpy_ref(getattr(np, name), x.astype(np.float64), y.astype(np.float64))[0]
    got = getattr(at, name)(make(x, chunks), make(y, chunks))
    check(got, want, dtype=expected_dtype(want), rtol=1e-3 if want.dtype == np.float32 else 1e-12, atol=1e-30)


@given(data=st.data(), dtype=st.sampled_from(INTS), shape=shapes)
def test_operators_divmod_and_shifts_of_integers_match_numpy(data, dtype, shape):
    x = data.draw(arrays(dtype, shape, elements=values(dtype)))
    y = data.draw(arrays(dtype, shape, elements=values(dtype)))
    chunks = data.draw(chunkings(shape))
    a, b = make(x, chunks), make(y, chunks)
    with np.errstate(all="ignore"):
        check(a // b, x // y)
        check(a % b, x % y)
        q, r = divmod(a, b)
        check(q, np.floor_divide(x, y))
        check(r, np.remainder(x, y))
        check(a & b, x & y)
        check(a | b, x | y)
        check(a ^ b, x ^ y)
        check(~a, ~x)
        count = np.full(shape, 3, dtype)
        check(a << make(count, chunks), x << count)
        check(a >> make(count, chunks), x >> count)
        # A Python int that fits the dtype takes part in it (NEP 50).
        check(a // 3, x // 3)
        check(7 % (b | 1), 7 % (y | 1))


def test_integer_dtypes_round_trip_and_refuse_python_ints_they_cannot_hold():
    for d in INTS:
        info = np.iinfo(d)
        x = np.array([info.min, 0, 1, info.max], d)
        check(at.tensor(x, chunk_size=3), x)
        check(at.tensor(x, chunk_size=2).sum(), x.sum())
        with pytest.raises(OverflowError):
            at.tensor(x) + (int(info.max) + 1)
    check(at.tensor(np.array([True, False])) ** at.tensor(np.array([True, True])), np.array([True, False]) ** np.array([True, True]))
    check(at.square(at.tensor(np.array([True, False]))), np.square(np.array([True, False])))
    big = 2**53
    check(at.arange(big, big + 4), np.arange(big, big + 4))


def test_the_module_answers_hasattr_and_names_what_it_lacks():
    assert hasattr(at, "isnan") and hasattr(at, "uint8") and hasattr(at, "bool")
    assert not hasattr(at, "histogramdd"), "a numpy name without a tiled form here"
    assert getattr(at, "histogramdd", None) is None
    with pytest.raises(NotImplementedError, match="histogramdd"):
        at.histogramdd
    t = at.tensor(np.arange(4.0))
    check(np.isnan(t), np.isnan(np.arange(4.0)))
    check(np.floor_divide(t, 3), np.arange(4.0) // 3)
