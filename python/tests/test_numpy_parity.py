"""``ares.tensor`` against numpy: the same inputs, random shapes and random chunkings give
the same values, dtypes and shapes.

Every property draws a numpy array, splits it into chunks of a random size per
dimension (1, an uneven split, or the whole dimension), computes with ares and compares
with numpy: exactly for bool and integer results, with ``rtol`` 1e-6 (float64) or 1e-4
(float32) otherwise. The number of chunks per tensor is capped (see
``MAX_CHUNKS_PER_DIM``) so each example runs a few dozen chunk tasks at most.

Where ares deliberately differs from numpy (documented in its docstrings) the tests
follow ares' documentation; cases where numpy itself raises check that ares raises the
same exception type.
"""

from __future__ import annotations

import math
import operator
import warnings

import numpy as np
import numpy.testing as npt
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra.numpy import (
    array_shapes,
    arrays,
    basic_indices,
    broadcastable_shapes,
    mutually_broadcastable_shapes,
)

import ares
import ares.tensor as at

# --------------------------------------------------------------------------- helpers

DTYPES = [np.dtype(d) for d in (np.bool_, np.int32, np.int64, np.float32, np.float64)]
NUMERIC = [d for d in DTYPES if d.kind != "b"]
FLOATS = [np.dtype(np.float32), np.dtype(np.float64)]

# At most this many chunks along each dimension, by number of dimensions: at most 12
# chunks for a vector and 64 for a matrix or a 3-d tensor.
MAX_CHUNKS_PER_DIM = {0: 1, 1: 12, 2: 8, 3: 4}  # 2 past three dimensions

dtypes = st.sampled_from(DTYPES)
shapes = array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=12)
shapes_with_empty = array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=12)


def rtol_for(dtype) -> float:
    return 1e-4 if np.dtype(dtype) == np.float32 else 1e-6


def atol_for(dtype) -> float:
    return 1e-6 if np.dtype(dtype) == np.float32 else 1e-12


def _bound(v: float, width: int) -> float:
    """``v`` made exactly representable at ``width`` bits (hypothesis requires it)."""
    return float(np.float32(v)) if width == 32 else float(v)


def elements(dtype, lo: float = -100, hi: float = 100):
    """Element values of ``dtype`` in ``[lo, hi]`` (no NaN, infinities or subnormals)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return st.booleans()
    if dtype.kind in "iu":
        return st.integers(math.ceil(lo), math.floor(hi))
    width = dtype.itemsize * 8
    return st.floats(
        _bound(lo, width),
        _bound(hi, width),
        width=width,
        allow_nan=False,
        allow_infinity=False,
        allow_subnormal=False,
    )


def split(n: int, c: int) -> tuple:
    """The chunk lengths of a dimension of ``n`` in chunks of ``c`` (Dask's layout)."""
    if n == 0:
        return (0,)
    return (c,) * (n // c) + ((n % c,) if n % c else ())


@st.composite
def chunkings(draw, shape):
    """A chunk size per dimension: anything from 1 to the whole dimension (uneven splits
    included), with at most ``MAX_CHUNKS_PER_DIM`` chunks per dimension."""
    cap = MAX_CHUNKS_PER_DIM.get(len(shape), 2)
    out = []
    for n in shape:
        lo = max(1, -(-n // cap))
        out.append(draw(st.integers(lo, max(n, 1))))
    return tuple(out)


@st.composite
def chunked_arrays(draw, dtype=None, shape=None, elems=None, lo=-100, hi=100):
    """``(array, chunk_size)``: a numpy array and a chunking for it."""
    dtype = np.dtype(draw(dtypes) if dtype is None else dtype)
    shape = draw(shapes) if shape is None else tuple(shape)
    x = draw(arrays(dtype, shape, elements=elems if elems is not None else elements(dtype, lo, hi)))
    return x, draw(chunkings(shape))


@st.composite
def axis_args(draw, ndim, allow_tuple=True):
    """numpy's ``axis``: None, an int (maybe negative) or a tuple of distinct axes (maybe
    empty, maybe negative)."""
    kinds = ["none"]
    if ndim > 0:
        kinds.append("int")
    if allow_tuple:
        kinds.append("tuple")
    kind = draw(st.sampled_from(kinds))
    if kind == "none":
        return None
    if kind == "int":
        a = draw(st.integers(0, ndim - 1))
        return a - ndim if draw(st.booleans()) else a
    chosen = draw(st.lists(st.integers(0, max(ndim - 1, 0)), unique=True, max_size=ndim))
    return tuple(a - ndim if draw(st.booleans()) else a for a in chosen)


def numpy_ref(f, *args, **kwargs):
    """``(result, None)``, or ``(None, exception)`` when numpy raises; numpy's warnings
    (division by zero, empty means) are silenced."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return np.asarray(f(*args, **kwargs)), None
        except (TypeError, ValueError, IndexError) as e:
            return None, e


def error_type(err: Exception) -> type:
    """The builtin exception class numpy's error is an instance of (numpy raises
    subclasses such as ``UFuncTypeError``; ares raises the builtin ones)."""
    for cls in (IndexError, TypeError, ValueError):
        if isinstance(err, cls):
            return cls
    return type(err)


def check(result, expected, *, dtype=None, rtol=None, atol=None, lazy_shape=True):
    """Asserts that the tensor ``result`` computes ``expected``: its dtype (``dtype``, by
    default ``expected``'s) and shape before and after computing, then its values
    (exactly for bools and integers). Returns the computed array."""
    expected = np.asarray(expected)
    want = np.dtype(dtype) if dtype is not None else expected.dtype
    assert isinstance(result, at.Tensor), f"expected an ares Tensor, got {type(result).__name__}"
    assert result.dtype == want, f"dtype {result.dtype}, numpy gives {want}"
    if lazy_shape:
        assert result.shape == expected.shape, f"shape {result.shape}, numpy gives {expected.shape}"
    got = result.fetch()
    assert isinstance(got, np.ndarray)
    assert got.dtype == want, f"fetched dtype {got.dtype}, numpy gives {want}"
    assert got.shape == expected.shape, f"fetched shape {got.shape}, numpy gives {expected.shape}"
    if want.kind in "biu":
        npt.assert_array_equal(got, expected)
    else:
        npt.assert_allclose(
            got,
            expected.astype(np.complex128 if want.kind == "c" else np.float64),
            rtol=rtol_for(want) if rtol is None else rtol,
            atol=atol_for(want) if atol is None else atol,
            equal_nan=True,
        )
    return got


def make(x, chunks):
    return at.tensor(x, chunk_size=chunks)


def absmax(x) -> float:
    x = np.asarray(x, dtype=np.float64)
    return float(np.max(np.abs(x))) if x.size else 0.0


# --------------------------------------------------------------------------- round trip


@given(data=st.data(), shape=shapes_with_empty, dtype=dtypes)
def test_round_trip_keeps_values_dtype_shape_and_chunks(data, shape, dtype):
    x = data.draw(arrays(dtype, shape, elements=elements(dtype)))
    chunks = data.draw(chunkings(shape))
    layout = data.draw(st.sampled_from(["c", "fortran", "strided", "big-endian"]))
    if layout == "fortran" and x.ndim:  # (asfortranarray makes a 0-d array 1-d)
        src = np.asfortranarray(x)
    elif layout == "strided" and x.ndim:
        src = np.stack([x, np.zeros_like(x)], axis=-1)[..., 0]  # every other element
    elif layout == "big-endian" and dtype.kind != "b":
        src = x.astype(dtype.newbyteorder(">"))
    else:
        src = x
    t = at.tensor(src, chunk_size=chunks)
    assert t.shape == shape
    assert t.dtype == dtype
    assert t.ndim == len(shape)
    assert t.size == x.size
    assert t.itemsize == dtype.itemsize
    assert t.nbytes == x.nbytes
    assert t.chunks == tuple(split(n, c) for n, c in zip(shape, chunks))
    got = t.fetch()
    assert got.dtype == dtype and got.shape == shape
    npt.assert_array_equal(got, x)
    npt.assert_array_equal(np.asarray(t), x)


@given(data=st.data())
def test_auto_and_int_chunk_sizes(data):
    x, _ = data.draw(chunked_arrays())
    auto = at.tensor(x)
    assert auto.chunks == tuple((n,) for n in x.shape)  # small arrays stay one chunk
    npt.assert_array_equal(auto.fetch(), x)
    c = data.draw(st.integers(1, 12))
    if x.ndim:
        c = max(c, -(-max(x.shape) // MAX_CHUNKS_PER_DIM[x.ndim]))
    t = at.tensor(x, chunk_size=c)
    assert t.chunks == tuple(split(n, c) for n in x.shape)
    npt.assert_array_equal(t.fetch(), x)


# --------------------------------------------------------------------------- element-wise

BINARY = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
}


@pytest.mark.parametrize("op", sorted(BINARY))
@given(data=st.data(), dta=dtypes, dtb=dtypes)
def test_binary_between_tensors_with_broadcasting(op, data, dta, dtb):
    f = BINARY[op]
    shape_a = data.draw(shapes)
    shape_b = data.draw(broadcastable_shapes(shape_a, min_dims=0, max_dims=3, min_side=1, max_side=12))
    x, ca = data.draw(chunked_arrays(dta, shape_a))
    y, cb = data.draw(chunked_arrays(dtb, shape_b))
    expected, err = numpy_ref(f, x, y)
    a, b = make(x, ca), make(y, cb)
    if err is not None:  # bool - bool
        with pytest.raises(error_type(err)):
            f(a, b).fetch()
        return
    check(f(a, b), expected)


SCALARS = st.one_of(
    st.integers(-100, 100),
    st.floats(-100, 100, allow_nan=False, allow_infinity=False, allow_subnormal=False),
    st.booleans(),
)


@pytest.mark.parametrize("op", sorted(BINARY))
@given(data=st.data(), dtype=dtypes, scalar=SCALARS, left=st.booleans())
def test_binary_with_python_scalar_on_either_side(op, data, dtype, scalar, left):
    """Python scalars do not upcast a tensor (numpy 2's weak scalars): ``int32 + 1`` is
    int32, ``float32 * 2.5`` is float32."""
    f = BINARY[op]
    x, c = data.draw(chunked_arrays(dtype))
    t = make(x, c)
    g = (lambda u: f(scalar, u)) if left else (lambda u: f(u, scalar))
    expected, err = numpy_ref(g, x)
    if err is not None:
        with pytest.raises(error_type(err)):
            g(t).fetch()
        return
    check(g(t), expected)


FUNCTIONS = {
    "add": (at.add, np.add),
    "subtract": (at.subtract, np.subtract),
    "multiply": (at.multiply, np.multiply),
    "divide": (at.divide, np.divide),
    "true_divide": (at.true_divide, np.true_divide),
    "maximum": (at.maximum, np.maximum),
    "minimum": (at.minimum, np.minimum),
    "less": (at.less, np.less),
    "less_equal": (at.less_equal, np.less_equal),
    "greater": (at.greater, np.greater),
    "greater_equal": (at.greater_equal, np.greater_equal),
    "equal": (at.equal, np.equal),
    "not_equal": (at.not_equal, np.not_equal),
}


@given(
    data=st.data(),
    name=st.sampled_from(sorted(FUNCTIONS)),
    dta=st.sampled_from(NUMERIC),
    dtb=st.sampled_from(NUMERIC),
    kinds=st.sampled_from(["tensor-tensor", "tensor-numpy", "numpy-tensor", "tensor-scalar", "scalar-tensor"]),
)
def test_ufunc_functions_accept_tensors_arrays_and_scalars(data, name, dta, dtb, kinds):
    af, nf = FUNCTIONS[name]
    shape_a = data.draw(shapes)
    shape_b = data.draw(broadcastable_shapes(shape_a, min_dims=0, max_dims=3, max_side=12))
    x, ca = data.draw(chunked_arrays(dta, shape_a))
    y, cb = data.draw(chunked_arrays(dtb, shape_b))
    left, right = kinds.split("-")
    if left == "scalar":
        x = y.flat[0].item() if y.size else 1
    if right == "scalar":
        y = x.flat[0].item() if np.size(x) else 1
    ax = make(x, ca) if left == "tensor" else x
    ay = make(y, cb) if right == "tensor" else y
    expected, err = numpy_ref(nf, x, y)
    assert err is None
    check(af(ax, ay), expected)


@given(data=st.data(), dta=dtypes, dtb=dtypes)
def test_power_between_tensors(data, dta, dtb):
    assume(not (dta.kind == "b" and dtb.kind == "b"))  # numpy gives int8 (unsupported)
    int_result = dta.kind in "bi" and dtb.kind in "bi"
    shape_a = data.draw(shapes)
    shape_b = data.draw(broadcastable_shapes(shape_a, min_dims=0, max_dims=3, max_side=12))
    x, ca = data.draw(chunked_arrays(dta, shape_a, lo=-6, hi=6))
    # Integers to negative integer powers are an error in numpy: exponents >= 0 then.
    y, cb = data.draw(chunked_arrays(dtb, shape_b, lo=0 if int_result else -3, hi=4 if int_result else 3))
    expected, err = numpy_ref(operator.pow, x, y)
    assert err is None
    check(make(x, ca) ** make(y, cb), expected)
    check(at.power(make(x, ca), y), expected)


@given(data=st.data(), dtype=dtypes, kind=st.sampled_from(["int", "float", "bool"]), left=st.booleans())
def test_power_with_python_scalar(data, dtype, kind, left):
    assume(not (dtype.kind == "b" and kind == "bool"))  # numpy gives int8 (unsupported)
    int_result = dtype.kind in "bi" and kind in ("int", "bool")
    if left:  # scalar ** tensor
        base = data.draw({"int": st.integers(-6, 6), "float": st.floats(-6, 6, allow_nan=False), "bool": st.booleans()}[kind])
        x, c = data.draw(chunked_arrays(dtype, lo=0 if int_result else -3, hi=4 if int_result else 3))
        t = make(x, c)
        expected, err = numpy_ref(lambda u: base**u, x)
        assert err is None
        check(base**t, expected)
    else:  # tensor ** scalar
        if kind == "int":
            # numpy squares for `** 2`, which gives int8 for booleans.
            choices = [0, 1, 3, 4] if dtype.kind == "b" else list(range(0 if int_result else -3, 5))
            exp = data.draw(st.sampled_from(choices))
        elif kind == "float":
            exp = data.draw(st.floats(-3, 3, allow_nan=False))
        else:
            exp = data.draw(st.booleans())
        x, c = data.draw(chunked_arrays(dtype, lo=-6, hi=6))
        t = make(x, c)
        expected, err = numpy_ref(lambda u: u**exp, x)
        assert err is None
        check(t**exp, expected)


@given(data=st.data(), dtype=dtypes)
def test_negative_and_absolute(data, dtype):
    x, c = data.draw(chunked_arrays(dtype))
    t = make(x, c)
    check(abs(t), np.abs(x))
    check(at.abs(t), np.abs(x))
    check(at.absolute(t), np.absolute(x))
    if dtype.kind == "b":  # numpy 2 refuses `-` and `+` on booleans
        with pytest.raises(TypeError):
            -t
        with pytest.raises(TypeError):
            at.negative(t)
        with pytest.raises(TypeError):
            +t
    else:
        check(+t, +x)
        check(-t, -x)
        check(at.negative(t), np.negative(x))
        check(at.square(t), np.square(x))


UNARY = {"sqrt": np.sqrt, "exp": np.exp, "log": np.log, "sin": np.sin, "cos": np.cos}


@given(data=st.data(), name=st.sampled_from(sorted(UNARY)), dtype=st.sampled_from(NUMERIC))
def test_unary_math_on_positive_values(data, name, dtype):
    x, c = data.draw(chunked_arrays(dtype, lo=2**-8 if dtype.kind == "f" else 1, hi=20))
    t = make(x, c)
    expected = UNARY[name](x)
    check(getattr(at, name)(t), expected)
    if name == "sqrt":
        check(t.sqrt(), expected)


@given(data=st.data(), scalar=st.booleans(), left=st.booleans())
def test_logical_operators_on_bools(data, scalar, left):
    shape_a = data.draw(shapes)
    shape_b = data.draw(broadcastable_shapes(shape_a, min_dims=0, max_dims=3, max_side=12))
    x, ca = data.draw(chunked_arrays(np.bool_, shape_a))
    y, cb = data.draw(chunked_arrays(np.bool_, shape_b))
    a, b = make(x, ca), make(y, cb)
    check(a & b, x & y)
    check(a | b, x | y)
    check(~a, ~x)
    check(at.invert(a), np.invert(x))
    check(at.logical_not(a), np.logical_not(x))
    check(at.logical_and(a, b), np.logical_and(x, y))
    check(at.logical_or(a, b), np.logical_or(x, y))
    if left:
        check(scalar & a, scalar & x)
        check(scalar | a, scalar | x)
    else:
        check(a & scalar, x & scalar)
        check(a | scalar, x | scalar)


@given(data=st.data(), dta=st.sampled_from(NUMERIC), dtb=st.sampled_from(NUMERIC))
def test_logical_functions_on_numbers(data, dta, dtb):
    shape_a = data.draw(shapes)
    shape_b = data.draw(broadcastable_shapes(shape_a, min_dims=0, max_dims=3, max_side=12))
    x, ca = data.draw(chunked_arrays(dta, shape_a, lo=-2, hi=2))
    y, cb = data.draw(chunked_arrays(dtb, shape_b, lo=-2, hi=2))
    a, b = make(x, ca), make(y, cb)
    check(at.logical_not(a), np.logical_not(x))
    check(at.logical_and(a, b), np.logical_and(x, y))
    check(at.logical_or(a, b), np.logical_or(x, y))


@given(data=st.data())
def test_chained_expression_over_different_chunkings(data):
    shape = data.draw(shapes)
    x, ca = data.draw(chunked_arrays(np.float64, shape, lo=-10, hi=10))
    y, cb = data.draw(chunked_arrays(np.float64, shape, lo=-10, hi=10))
    z, cz = data.draw(chunked_arrays(np.int32, shape, lo=-10, hi=10))
    a, b, c = make(x, ca), make(y, cb), make(z, cz)
    expected = ((x + y) * z - y / 4) ** 2
    result = ((a + b) * c - b / 4) ** 2
    check(result, expected, atol=1e-9)
    check(result.sum(), expected.sum(), atol=1e-9 * max(1.0, float(np.abs(expected).sum())))
    check(at.where(a > b, result, -result), np.where(x > y, expected, -expected), atol=1e-9)


# --------------------------------------------------------------------------- reductions


def _f64_ref(name, x, **kw):
    """numpy's reduction computed in float64 (ares accumulates means and moments in
    float64, then casts to the result dtype)."""
    return getattr(np, name)(np.asarray(x, dtype=np.float64), **kw)


@pytest.mark.parametrize("name", ["sum", "mean", "min", "max", "any", "all"])
@given(data=st.data(), dtype=dtypes, keepdims=st.booleans(), as_function=st.booleans())
def test_reductions(name, data, dtype, keepdims, as_function):
    x, c = data.draw(chunked_arrays(dtype))
    axis = data.draw(axis_args(x.ndim))
    t = make(x, c)
    expected, err = numpy_ref(getattr(np, name), x, axis=axis, keepdims=keepdims)
    assert err is None
    result = getattr(at, name)(t, axis=axis, keepdims=keepdims) if as_function else getattr(t, name)(axis=axis, keepdims=keepdims)
    if expected.dtype.kind in "biu" or name in ("min", "max"):
        # Selections and integer sums are exact.
        check(result, expected, rtol=0, atol=0)
    else:
        ref = _f64_ref(name, x, axis=axis, keepdims=keepdims)
        scale = absmax(x) * (max(x.size, 1) if name == "sum" else 1)
        check(result, ref, dtype=expected.dtype, atol=rtol_for(expected.dtype) * scale + atol_for(expected.dtype))


@pytest.mark.parametrize("name", ["var", "std"])
@given(data=st.data(), dtype=dtypes, keepdims=st.booleans(), ddof=st.sampled_from([0, 1]))
def test_var_std(name, data, dtype, keepdims, ddof):
    x, c = data.draw(chunked_arrays(dtype))
    axis = data.draw(axis_args(x.ndim))
    t = make(x, c)
    expected, err = numpy_ref(getattr(np, name), x, axis=axis, keepdims=keepdims, ddof=ddof)
    assert err is None
    ref = numpy_ref(_f64_ref, name, x, axis=axis, keepdims=keepdims, ddof=ddof)[0]
    scale = absmax(x) ** (2 if name == "var" else 1)
    tol = rtol_for(expected.dtype)
    check(getattr(t, name)(axis=axis, keepdims=keepdims, ddof=ddof), ref, dtype=expected.dtype, atol=tol * scale + atol_for(expected.dtype))
    if ddof == 0:
        check(getattr(at, name)(t, axis=axis, keepdims=keepdims), ref, dtype=expected.dtype, atol=tol * scale + atol_for(expected.dtype))


_PROD_FLOATS = st.one_of(st.floats(0.8, 1.25), st.floats(-1.25, -0.8), st.just(0.0))


@given(data=st.data(), dtype=dtypes, keepdims=st.booleans())
def test_prod_of_small_values(data, dtype, keepdims):
    shape = data.draw(array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=6))
    elems = _PROD_FLOATS.map(lambda v: float(dtype.type(v))) if dtype.kind == "f" else None
    x, c = data.draw(chunked_arrays(dtype, shape, elems=elems, lo=-2, hi=2))
    axis = data.draw(axis_args(x.ndim))
    t = make(x, c)
    expected = np.asarray(np.prod(x, axis=axis, keepdims=keepdims))
    result = t.prod(axis=axis, keepdims=keepdims)
    if dtype.kind == "f":
        check(result, np.prod(x.astype(np.float64), axis=axis, keepdims=keepdims), dtype=expected.dtype)
    else:
        check(result, expected)
    check(at.prod(t, axis=axis, keepdims=keepdims), expected, rtol=rtol_for(expected.dtype))


@pytest.mark.parametrize("name", ["argmin", "argmax"])
@given(data=st.data(), dtype=dtypes, keepdims=st.booleans(), as_function=st.booleans())
def test_argmin_argmax(name, data, dtype, keepdims, as_function):
    # Few distinct values, so ties (the first position wins) are common.
    x, c = data.draw(chunked_arrays(dtype, lo=-3, hi=3))
    axis = data.draw(axis_args(x.ndim, allow_tuple=False))
    t = make(x, c)
    expected = np.asarray(getattr(np, name)(x, axis=axis, keepdims=keepdims))
    result = getattr(at, name)(t, axis=axis, keepdims=keepdims) if as_function else getattr(t, name)(axis=axis, keepdims=keepdims)
    check(result, expected)


@given(
    data=st.data(),
    name=st.sampled_from(["sum", "prod", "mean", "var", "std", "any", "all", "min", "max"]),
    dtype=st.sampled_from([np.dtype(np.int64), np.dtype(np.float64), np.dtype(np.bool_)]),
    keepdims=st.booleans(),
)
def test_reductions_of_empty_tensors(data, name, dtype, keepdims):
    """Sums of nothing are 0, products 1, means NaN; where numpy raises (the minimum of
    nothing) ares raises the same type."""
    shape = list(data.draw(array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=5)))
    shape[data.draw(st.integers(0, len(shape) - 1))] = 0
    x, c = data.draw(chunked_arrays(dtype, shape))
    axis = data.draw(axis_args(x.ndim))
    expected, err = numpy_ref(getattr(np, name), x, axis=axis, keepdims=keepdims)
    t = make(x, c)
    if err is not None:
        with pytest.raises(error_type(err)):
            getattr(t, name)(axis=axis, keepdims=keepdims).fetch()
        return
    check(getattr(t, name)(axis=axis, keepdims=keepdims), expected)


# --------------------------------------------------------------------------- shapes


def _factors(n: int) -> list:
    out, p = [], 2
    while n > 1 and p * p <= n:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    if n > 1:
        out.append(n)
    return out


@st.composite
def reshape_targets(draw, shape):
    """A shape with the same number of elements (one entry maybe -1)."""
    size = math.prod(shape)
    ndim = draw(st.integers(0 if size == 1 else 1, 4))
    dims = [1] * ndim
    for f in _factors(size):
        dims[draw(st.integers(0, ndim - 1))] *= f
    if ndim and draw(st.booleans()):
        dims[draw(st.integers(0, ndim - 1))] = -1
    return tuple(dims)


@given(data=st.data())
def test_reshape(data):
    x, c = data.draw(chunked_arrays())
    target = data.draw(reshape_targets(x.shape))
    t = make(x, c)
    expected = x.reshape(target)
    check(t.reshape(target), expected)
    check(t.reshape(*target) if target else t.reshape(()), expected)
    check(at.reshape(t, target), expected)
    check(t.ravel(), x.ravel())
    check(t.flatten(), x.flatten())
    check(at.ravel(t), np.ravel(x))
    # The reshaped tensor computes with others as any tensor does.
    check(t.reshape(target) * 2, expected * 2)


@given(data=st.data())
def test_transpose(data):
    x, c = data.draw(chunked_arrays())
    t = make(x, c)
    perm = tuple(data.draw(st.permutations(range(x.ndim))))
    neg = tuple(p - x.ndim if data.draw(st.booleans()) else p for p in perm)
    check(t.T, x.T)
    check(t.transpose(), x.transpose())
    check(t.transpose(perm), x.transpose(perm))
    check(t.transpose(neg), x.transpose(neg))
    if perm:
        check(t.transpose(*perm), x.transpose(*perm))
    check(at.transpose(t, perm), np.transpose(x, perm))
    check(at.transpose(t), np.transpose(x))
    if x.ndim >= 2:
        i, j = data.draw(st.permutations(range(x.ndim)))[:2]
        check(t.swapaxes(i, j), x.swapaxes(i, j))
    # A transposed tensor combines with one chunked another way.
    y, cy = data.draw(chunked_arrays(x.dtype, x.transpose(perm).shape))
    check(t.transpose(perm) == make(y, cy), x.transpose(perm) == y)


@given(data=st.data())
def test_expand_dims_and_squeeze(data):
    x, c = data.draw(chunked_arrays(shape=data.draw(array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=3))))
    t = make(x, c)
    axis = data.draw(st.integers(-x.ndim - 1, x.ndim))
    check(at.expand_dims(t, axis), np.expand_dims(x, axis))
    check(t.squeeze(), x.squeeze())
    check(at.squeeze(t), np.squeeze(x))
    ones = [i for i, n in enumerate(x.shape) if n == 1]
    if ones:
        ax = data.draw(st.sampled_from(ones))
        check(t.squeeze(ax), x.squeeze(ax))


@given(data=st.data())
def test_basic_indexing(data):
    x, c = data.draw(chunked_arrays())
    index = data.draw(basic_indices(x.shape, allow_newaxis=True, allow_ellipsis=True))
    t = make(x, c)
    check(t[index], x[index])


@given(data=st.data())
def test_indexing_with_steps_negative_indices_ellipsis_and_newaxis(data):
    shape = data.draw(array_shapes(min_dims=2, max_dims=3, min_side=1, max_side=12))
    x, c = data.draw(chunked_arrays(shape=shape))
    t = make(x, c)
    n0 = x.shape[0]
    i = data.draw(st.integers(-n0, n0 - 1))
    check(t[1:10:2, ::-1], x[1:10:2, ::-1])
    check(t[::-3], x[::-3])
    check(t[-1], x[-1])
    check(t[i], x[i])
    check(t[i, ...], x[i, ...])
    check(t[..., -1], x[..., -1])
    check(t[None], x[None])
    check(t[:, None, ::2], x[:, None, ::2])
    check(t[at.newaxis, ..., at.newaxis], x[np.newaxis, ..., np.newaxis])
    check(t[-100:100], x[-100:100])
    check(t[5:2], x[5:2])
    check(t[np.int64(i)], x[np.int64(i)])
    check(t[(i,) + (0,) * (x.ndim - 1)], x[(i,) + (0,) * (x.ndim - 1)])


@given(data=st.data(), dtype=dtypes)
def test_iteration_matches_numpy(data, dtype):
    shape = data.draw(array_shapes(min_dims=1, max_dims=2, min_side=1, max_side=6))
    x, c = data.draw(chunked_arrays(dtype, shape))
    t = make(x, c)
    assert len(t) == len(x)
    rows = list(t)
    assert len(rows) == len(x)
    for r, xr in zip(rows, x):
        check(r, xr)


@given(data=st.data())
def test_boolean_mask_of_full_shape(data):
    shape = data.draw(array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=12))
    x, c = data.draw(chunked_arrays(shape=shape))
    t = make(x, c)
    r = t[t > 0]
    # The length is known only once the mask has been computed (NaN, as in Dask).
    assert r.ndim == 1 and math.isnan(r.shape[0])
    expected = x[x > 0]
    check(r, expected, lazy_shape=False)
    r.execute()
    assert r.shape == expected.shape
    assert len(r) == len(expected)

    # A numpy mask, and a mask tensor chunked differently from the tensor.
    m, cm = data.draw(chunked_arrays(np.bool_, shape))
    check(t[m], x[m], lazy_shape=False)
    check(t[make(m, cm)], x[m], lazy_shape=False)
    # Computing on with the unknown length.
    scale = absmax(x) * max(x.size, 1)
    check((t[make(m, cm)] * 2 + 1).sum(), (x[m] * 2 + 1).sum(), atol=rtol_for(x.dtype) * 3 * scale + 1e-6)


# --------------------------------------------------------------------------- joins


@given(data=st.data())
def test_concatenate(data):
    ndim = data.draw(st.integers(1, 3))
    base = list(data.draw(array_shapes(min_dims=ndim, max_dims=ndim, min_side=1, max_side=6)))
    axis = data.draw(st.one_of(st.integers(-ndim, ndim - 1), st.none()))
    parts = []
    for _ in range(data.draw(st.integers(1, 3))):
        shape = list(base)
        if axis is not None:
            shape[axis] = data.draw(st.integers(1, 6))
        parts.append(data.draw(chunked_arrays(shape=tuple(shape))))
    tensors = [make(x, c) for x, c in parts]
    arrs = [x for x, _ in parts]
    check(at.concatenate(tensors, axis=axis), np.concatenate(arrs, axis=axis))
    # numpy arrays mixed in.
    check(at.concatenate([arrs[0]] + tensors[1:], axis=axis), np.concatenate(arrs, axis=axis))


@given(data=st.data())
def test_stack(data):
    shape = data.draw(array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=6))
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    parts = [data.draw(chunked_arrays(shape=shape)) for _ in range(data.draw(st.integers(1, 3)))]
    tensors = [make(x, c) for x, c in parts]
    arrs = [x for x, _ in parts]
    check(at.stack(tensors, axis=axis), np.stack(arrs, axis=axis))


def test_vstack_hstack():
    a = np.arange(6.0).reshape(2, 3)
    b = np.arange(6.0, 12.0).reshape(2, 3)
    ta, tb = at.tensor(a, chunk_size=(1, 2)), at.tensor(b, chunk_size=(2, 1))
    check(at.vstack([ta, tb]), np.vstack([a, b]))
    check(at.hstack([ta, tb]), np.hstack([a, b]))
    v = np.arange(4)
    check(at.vstack([at.tensor(v, chunk_size=3), v]), np.vstack([v, v]))
    check(at.hstack([at.tensor(v, chunk_size=3), v]), np.hstack([v, v]))


def test_concatenate_with_an_empty_part():
    a = np.arange(12.0).reshape(3, 4)
    e = np.zeros((0, 4))
    check(at.concatenate([at.tensor(a, chunk_size=2), at.tensor(e)]), np.concatenate([a, e]))


@given(data=st.data(), x_scalar=st.booleans(), y_scalar=st.booleans())
def test_where(data, x_scalar, y_scalar):
    shapes3 = data.draw(mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=3, max_side=8))
    sc, sx, sy = shapes3.input_shapes
    cdt = data.draw(st.sampled_from([np.dtype(np.bool_)] * 3 + NUMERIC))
    cond, cc = data.draw(chunked_arrays(cdt, sc, lo=-1, hi=1))
    if x_scalar:
        xv = data.draw(SCALARS)
    else:
        xv, cx = data.draw(chunked_arrays(shape=sx))
    if y_scalar:
        yv = data.draw(SCALARS)
    else:
        yv, cy = data.draw(chunked_arrays(shape=sy))
    expected = np.where(cond, xv, yv)
    result = at.where(make(cond, cc), xv if x_scalar else make(xv, cx), yv if y_scalar else make(yv, cy))
    check(result, expected)


@given(data=st.data(), dtype=dtypes)
def test_clip_with_float_bounds(data, dtype):
    x, c = data.draw(chunked_arrays(dtype))
    t = make(x, c)
    bound = st.floats(-50, 50, allow_nan=False)
    lo = data.draw(st.one_of(st.none(), bound))
    hi = data.draw(bound if lo is None else st.one_of(st.none(), bound))
    expected = np.clip(x, lo, hi)
    check(at.clip(t, lo, hi), expected)
    check(t.clip(lo, hi), expected)


@given(data=st.data(), src=dtypes, dst=dtypes)
def test_astype(data, src, dst):
    # Values that every dtype holds (floats cast to integers truncate, as in numpy).
    x, c = data.draw(chunked_arrays(src, lo=-1000, hi=1000))
    t = make(x, c)
    check(t.astype(dst), x.astype(dst))
    check(at.tensor(x, dtype=dst, chunk_size=c), x.astype(dst))
    assert t.astype(src, copy=False) is t


@given(data=st.data())
def test_rechunk(data):
    x, c = data.draw(chunked_arrays())
    new = data.draw(chunkings(x.shape))
    t = make(x, c)
    r = t.rechunk(new)
    assert r.chunks == tuple(split(n, k) for n, k in zip(x.shape, new))
    check(r, x)
    r2 = at.rechunk(t, new)
    assert r2.chunks == r.chunks
    check(r2 + t, x + x)
    # -1 and None take a whole dimension.
    whole = t.rechunk(tuple(-1 if i % 2 else None for i in range(x.ndim)))
    assert whole.chunks == tuple((n,) for n in x.shape)
    check(whole, x)


# --------------------------------------------------------------------------- creation


@given(data=st.data(), shape=shapes_with_empty, dtype=st.one_of(st.none(), dtypes))
def test_ones_zeros_full_empty(data, shape, dtype):
    chunks = data.draw(chunkings(shape))
    check(at.ones(shape, dtype=dtype, chunk_size=chunks), np.ones(shape, dtype=dtype))
    check(at.zeros(shape, dtype=dtype, chunk_size=chunks), np.zeros(shape, dtype=dtype))
    e = at.empty(shape, dtype=dtype, chunk_size=chunks)
    ref = np.empty(shape, dtype=dtype)
    assert e.shape == ref.shape and e.dtype == ref.dtype
    assert e.fetch().shape == ref.shape
    fill = data.draw(SCALARS)
    check(at.full(shape, fill, dtype=dtype, chunk_size=chunks), np.full(shape, fill, dtype=dtype))


@given(data=st.data(), dtype=st.one_of(st.none(), dtypes))
def test_like_functions(data, dtype):
    x, c = data.draw(chunked_arrays())
    t = make(x, c)
    fill = data.draw(st.integers(-5, 5))
    for af, nf, args in (
        (at.ones_like, np.ones_like, ()),
        (at.zeros_like, np.zeros_like, ()),
        (at.full_like, np.full_like, (fill,)),
    ):
        r = af(t, *args, dtype=dtype)
        check(r, nf(x, *args, dtype=dtype))
        assert r.chunks == t.chunks
    assert at.empty_like(t).shape == x.shape


def test_like_functions_of_empty_tensors():
    for shape in [(0,), (0, 3), (2, 0, 4)]:
        t = at.zeros(shape)
        check(at.ones_like(t), np.ones(shape))
        check(at.zeros_like(t), np.zeros(shape))
        check(at.full_like(t, 3), np.full(shape, 3.0))


@given(
    start=st.integers(-20, 20),
    stop=st.one_of(st.none(), st.integers(-20, 20)),
    step=st.integers(-5, 5).filter(bool),
    chunk=st.integers(1, 12),
)
def test_arange_of_ints(start, stop, step, chunk):
    if stop is None:
        check(at.arange(start, chunk_size=chunk), np.arange(start))
    else:
        check(at.arange(start, stop, step, chunk_size=chunk), np.arange(start, stop, step))


@given(
    start=st.integers(-40, 40).map(lambda v: v / 4),
    stop=st.integers(-40, 40).map(lambda v: v / 4),
    step=st.sampled_from([-1.5, -0.5, -0.25, 0.25, 0.5, 0.75, 2.0]),
    chunk=st.integers(1, 12),
    dtype=st.sampled_from([None, np.float32, np.float64]),
)
def test_arange_of_floats(start, stop, step, chunk, dtype):
    check(at.arange(start, stop, step, dtype=dtype, chunk_size=chunk), np.arange(start, stop, step, dtype=dtype), atol=1e-9)


@given(
    start=st.floats(-100, 100, allow_nan=False),
    stop=st.floats(-100, 100, allow_nan=False),
    num=st.integers(0, 30),
    endpoint=st.booleans(),
    chunk=st.integers(1, 12),
)
def test_linspace(start, stop, num, endpoint, chunk):
    expected = np.linspace(start, stop, num, endpoint=endpoint)
    check(at.linspace(start, stop, num, endpoint=endpoint, chunk_size=chunk), expected, atol=1e-9)


@given(n=st.integers(0, 12), chunk=st.integers(1, 12), dtype=st.one_of(st.none(), dtypes))
def test_eye_and_identity(n, chunk, dtype):
    check(at.eye(n, chunk_size=chunk, dtype=dtype), np.eye(n, dtype=dtype))
    check(at.identity(n, dtype=dtype, chunk_size=chunk), np.identity(n, dtype=dtype))


# --------------------------------------------------------------------------- linear algebra


@given(data=st.data(), dta=st.sampled_from(FLOATS), dtb=st.sampled_from(FLOATS), form=st.sampled_from(["@", "matmul", "dot", "method"]))
def test_matmul_of_matrices(data, dta, dtb, form):
    m, k, n = (data.draw(st.integers(1, 12)) for _ in range(3))
    x, ca = data.draw(chunked_arrays(dta, (m, k), lo=-1, hi=1))
    y, cb = data.draw(chunked_arrays(dtb, (k, n), lo=-1, hi=1))
    a, b = make(x, ca), make(y, cb)
    result = {"@": lambda: a @ b, "matmul": lambda: at.matmul(a, b), "dot": lambda: at.dot(a, b), "method": lambda: a.dot(b)}[form]()
    expected = x @ y
    check(result, expected, atol=k * (1e-5 if expected.dtype == np.float32 else 1e-12))
    # A numpy matrix on either side.
    check(x @ b, expected, atol=k * (1e-5 if expected.dtype == np.float32 else 1e-12))


@given(data=st.data(), case=st.sampled_from(["vec@mat", "mat@vec", "vec@vec"]))
def test_matmul_with_vectors(data, case):
    m, k = data.draw(st.integers(1, 10)), data.draw(st.integers(1, 10))
    sa = (k,) if case.startswith("vec") else (m, k)
    sb = (k,) if case.endswith("vec") else (k, m)
    x, ca = data.draw(chunked_arrays(np.float64, sa, lo=-1, hi=1))
    y, cb = data.draw(chunked_arrays(np.float64, sb, lo=-1, hi=1))
    check(make(x, ca) @ make(y, cb), x @ y, atol=1e-12 * k)


@given(data=st.data(), dtype=dtypes, keepdims=st.booleans())
def test_norm(data, dtype, keepdims):
    x, c = data.draw(chunked_arrays(dtype))
    t = make(x, c)
    axis = data.draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1)) if x.ndim else st.none())
    expected = np.linalg.norm(x, axis=axis, keepdims=keepdims)
    check(at.linalg.norm(t, axis=axis, keepdims=keepdims), expected, atol=rtol_for(expected.dtype) * absmax(x))
    if x.ndim >= 2:
        pair = tuple(data.draw(st.permutations(range(x.ndim)))[:2])
        check(at.linalg.norm(t, axis=pair), np.linalg.norm(x, axis=pair), atol=rtol_for(expected.dtype) * absmax(x))


@st.composite
def well_conditioned(draw, max_n=10):
    """A diagonally dominant ``n × n`` matrix (far from singular) and a chunking."""
    n = draw(st.integers(1, max_n))
    x = draw(arrays(np.float64, (n, n), elements=elements(np.float64, -1, 1)))
    return x + (n + 1) * np.eye(n), draw(chunkings((n, n)))


@given(data=st.data(), ac=well_conditioned())
def test_inv(data, ac):
    a, c = ac
    inv = check(at.linalg.inv(make(a, c)), np.linalg.inv(a), atol=1e-9)
    npt.assert_allclose(a @ inv, np.eye(len(a)), atol=1e-9)


@given(data=st.data(), ac=well_conditioned(), vector=st.booleans(), bdt=st.sampled_from([np.float64, np.int64]))
def test_solve(data, ac, vector, bdt):
    a, c = ac
    n = len(a)
    shape = (n,) if vector else (n, data.draw(st.integers(1, 4)))
    b, cb = data.draw(chunked_arrays(bdt, shape, lo=-10, hi=10))
    x = check(at.linalg.solve(make(a, c), make(b, cb)), np.linalg.solve(a, b), atol=1e-9)
    npt.assert_allclose(a @ x, b, atol=1e-8)


@st.composite
def tall_matrices(draw):
    """An ``m × n`` matrix with ``m >= n`` of full column rank, and a chunking."""
    n = draw(st.integers(1, 6))
    m = draw(st.integers(n, 12))
    x = draw(arrays(np.float64, (m, n), elements=elements(np.float64, -1, 1)))
    x[:n] += (n + 1) * np.eye(n)
    return x, draw(chunkings((m, n)))


@given(xc=tall_matrices())
def test_qr(xc):
    x, c = xc
    m, n = x.shape
    q, r = at.linalg.qr(make(x, c))
    assert q.shape == (m, n) and r.shape == (n, n)
    assert q.dtype == r.dtype == np.float64
    qv, rv = q.fetch(), r.fetch()
    npt.assert_allclose(qv @ rv, x, atol=1e-9)
    npt.assert_allclose(qv.T @ qv, np.eye(n), atol=1e-9)
    npt.assert_allclose(np.tril(rv, -1), 0, atol=1e-12)
    # R is unique up to the signs of its rows.
    npt.assert_allclose(np.abs(np.diag(rv)), np.abs(np.diag(np.linalg.qr(x)[1])), rtol=1e-6)


@given(xc=tall_matrices())
def test_svd(xc):
    x, c = xc
    m, n = x.shape
    u, s, vt = at.linalg.svd(make(x, c), full_matrices=False)
    assert u.shape == (m, n) and s.shape == (n,) and vt.shape == (n, n)
    uv, sv, vtv = u.fetch(), s.fetch(), vt.fetch()
    npt.assert_allclose(sv, np.linalg.svd(x, compute_uv=False), rtol=1e-6, atol=1e-9)
    assert np.all(np.diff(sv) <= 1e-9)
    npt.assert_allclose((uv * sv) @ vtv, x, atol=1e-9)
    npt.assert_allclose(uv.T @ uv, np.eye(n), atol=1e-9)
    npt.assert_allclose(vtv @ vtv.T, np.eye(n), atol=1e-9)
    check(at.linalg.svd(make(x, c), full_matrices=False, compute_uv=False), np.linalg.svd(x, compute_uv=False), atol=1e-9)


@given(data=st.data(), n=st.integers(1, 10))
def test_cholesky(data, n):
    b = data.draw(arrays(np.float64, (n, n), elements=elements(np.float64, -1, 1)))
    a = b @ b.T + n * np.eye(n)
    c = data.draw(chunkings((n, n)))
    l = check(at.linalg.cholesky(make(a, c)), np.linalg.cholesky(a), atol=1e-9)
    npt.assert_allclose(np.triu(l, 1), 0, atol=1e-12)
    npt.assert_allclose(l @ l.T, a, atol=1e-9)


# --------------------------------------------------------------------------- random


@given(data=st.data(), seed=st.integers(0, 2**32))
def test_random_is_the_same_whatever_the_chunking(data, seed):
    shape = data.draw(shapes)
    c1, c2 = data.draw(chunkings(shape)), data.draw(chunkings(shape))
    for f in (
        lambda c: at.random.rand(*shape, chunk_size=c, seed=seed),
        lambda c: at.random.random_sample(shape, chunk_size=c, seed=seed),
        lambda c: at.random.randn(*shape, chunk_size=c, seed=seed),
        lambda c: at.random.normal(1.5, 2.0, size=shape, chunk_size=c, seed=seed),
        lambda c: at.random.uniform(-3, 5, size=shape, chunk_size=c, seed=seed),
        lambda c: at.random.randint(-4, 9, size=shape, chunk_size=c, seed=seed),
    ):
        a, b = f(c1), f(c2)
        assert a.shape == b.shape == shape
        npt.assert_array_equal(a.fetch(), b.fetch())


@given(data=st.data(), seed=st.integers(0, 2**32), low=st.integers(-50, 50), span=st.integers(1, 100))
def test_random_values_are_in_range(data, seed, low, span):
    shape = data.draw(shapes)
    c = data.draw(chunkings(shape))
    u = at.random.uniform(low, low + span / 7, size=shape, chunk_size=c, seed=seed)
    assert u.dtype == np.float64
    uv = u.fetch()
    assert uv.shape == shape
    assert np.all((uv >= low) & (uv < low + span / 7))
    r = at.random.rand(*shape, chunk_size=c, seed=seed).fetch()
    assert np.all((r >= 0) & (r < 1))
    i = at.random.randint(low, low + span, size=shape, chunk_size=c, seed=seed)
    assert i.dtype == np.int64
    iv = i.fetch()
    assert iv.dtype == np.int64 and iv.shape == shape
    assert np.all((iv >= low) & (iv < low + span))
    j = at.random.randint(span, size=shape, chunk_size=c, seed=seed, dtype=np.int32)
    assert j.dtype == np.int32
    jv = j.fetch()
    assert np.all((jv >= 0) & (jv < span))


def test_random_statistics_and_seeding():
    u = at.random.rand(100, 100, chunk_size=25, seed=7).fetch()
    assert abs(u.mean() - 0.5) < 0.02 and abs(u.std() - math.sqrt(1 / 12)) < 0.02
    z = at.random.randn(100, 100, chunk_size=(30, 40), seed=7).fetch()
    assert abs(z.mean()) < 0.05 and abs(z.std() - 1) < 0.05
    i = at.random.randint(0, 4, size=10_000, chunk_size=999, seed=7).fetch()
    assert set(np.unique(i).tolist()) == {0, 1, 2, 3}
    # Different seeds, different values; at.random.seed resets the unseeded calls.
    assert not np.array_equal(at.random.rand(50, seed=1).fetch(), at.random.rand(50, seed=2).fetch())
    at.random.seed(123)
    first = at.random.rand(50, chunk_size=7).fetch()
    second = at.random.rand(50, chunk_size=7).fetch()
    at.random.seed(123)
    npt.assert_array_equal(at.random.rand(50, chunk_size=7).fetch(), first)
    assert not np.array_equal(first, second)


# --------------------------------------------------------------------------- what is not supported


def _t():
    return at.tensor(np.arange(12.0).reshape(3, 4), chunk_size=2)


def _ti():
    return at.tensor(np.arange(12).reshape(3, 4), chunk_size=2)


def _setitem(x):
    x[0] = 1.0
    x[1:, ::2] = -2.0
    return x


# Indexes that once stopped a program here: each gives numpy's answer.
ONCE_UNSUPPORTED = {
    "fancy list index": lambda x: x[[0, 2]],
    "fancy array index": lambda x: x[np.array([0, 2])],
    "fancy tuple index": lambda x: x[np.array([0, 2]), 1],
    "mask over the first axis only": lambda x: x[np.array([True, False, True])],
    "setitem": _setitem,
}


def _clip_bounds(x):
    return x.clip(x[:, :1], 5)


ONCE_UNSUPPORTED["clip with tensor bounds"] = _clip_bounds
ONCE_UNSUPPORTED["boolean scalar index"] = lambda x: x[True]
ONCE_UNSUPPORTED["mask over two leading axes"] = lambda x: x[np.arange(12).reshape(3, 4) % 3 == 0]


@pytest.mark.parametrize("name", sorted(ONCE_UNSUPPORTED))
def test_indexes_once_unsupported_match_numpy(name):
    want = ONCE_UNSUPPORTED[name](np.arange(12.0).reshape(3, 4))
    check(ONCE_UNSUPPORTED[name](_t()), want)
    check(_t()[at.tensor(np.array([0, 2]))], np.arange(12.0).reshape(3, 4)[[0, 2]])


UNSUPPORTED = {
    "float16 array": lambda: at.tensor(np.zeros(3, np.float16)),
    "float16 ones": lambda: at.ones(3, dtype=np.float16),
    "float16 astype": lambda: _t().astype(np.float16),
    "int beyond int64": lambda: _t() + 2**70,
    "explicit uneven chunks": lambda: at.tensor(np.zeros(4), chunk_size=((1, 3),)),
    "full with an array": lambda: at.full(3, [1, 2, 3]),
    "reshape order F": lambda: _t().reshape(12, order="F"),
    "qr complete": lambda: at.linalg.qr(_t().T, mode="complete"),
    "std ddof of unknown length": lambda: (lambda t: t[t > 3].std(ddof=1))(_t()),
}


@pytest.mark.parametrize("name", sorted(UNSUPPORTED))
def test_unsupported_raises_not_implemented(name):
    with pytest.raises(NotImplementedError):
        r = UNSUPPORTED[name]()
        if isinstance(r, at.Tensor):
            r.fetch()


# --------------------------------------------------------------------------- errors as numpy's


def _v(n=10):
    return at.tensor(np.arange(float(n)), chunk_size=3)


ERRORS = {
    # shapes: ValueError
    "broadcast mismatch": (ValueError, lambda: _v(3) + _v(4)),
    "broadcast mismatch with numpy": (ValueError, lambda: _t() + np.ones(3)),
    "reshape to another size": (ValueError, lambda: _t().reshape(5, 2)),
    "reshape with two -1": (ValueError, lambda: _t().reshape(-1, -1)),
    "concatenate mismatch": (ValueError, lambda: at.concatenate([_t(), at.ones((3, 5))], axis=0)),
    "concatenate of 0-d": (ValueError, lambda: at.concatenate([at.tensor(1.0), at.tensor(2.0)])),
    "stack mismatch": (ValueError, lambda: at.stack([_t(), _t().T])),
    "matmul mismatch": (ValueError, lambda: _t() @ _t()),
    "matmul of a scalar": (ValueError, lambda: at.matmul(at.tensor(2.0), _t())),
    "zero chunk size": (ValueError, lambda: at.tensor(np.zeros(4), chunk_size=0)),
    "chunk_size for other ndim": (ValueError, lambda: at.tensor(np.zeros(4), chunk_size=(2, 2))),
    "negative dimension": (ValueError, lambda: at.zeros((2, -1))),
    "negative linspace num": (ValueError, lambda: at.linspace(0, 1, -1)),
    "truth value of many": (ValueError, lambda: bool(_t())),
    "duplicate axis": (ValueError, lambda: _t().sum(axis=(0, -2))),
    "squeeze non-1 axis": (ValueError, lambda: _t().squeeze(0)),
    "slice step zero": (ValueError, lambda: _t()[::0]),
    # axes: numpy.exceptions.AxisError
    "sum axis too big": (np.exceptions.AxisError, lambda: _t().sum(axis=2)),
    "mean axis too negative": (np.exceptions.AxisError, lambda: _t().mean(axis=-3)),
    "argmax axis": (np.exceptions.AxisError, lambda: _t().argmax(axis=2)),
    "reduction of 0-d over axis 0": (np.exceptions.AxisError, lambda: at.tensor(1.0).sum(axis=0)),
    "concatenate axis": (np.exceptions.AxisError, lambda: at.concatenate([_t(), _t()], axis=2)),
    "stack axis": (np.exceptions.AxisError, lambda: at.stack([_t(), _t()], axis=4)),
    "transpose axes": (np.exceptions.AxisError, lambda: _t().transpose((0, 2))),
    "expand_dims axis": (np.exceptions.AxisError, lambda: at.expand_dims(_t(), 4)),
    "norm axis": (np.exceptions.AxisError, lambda: at.linalg.norm(_t(), axis=2)),
    # indices: IndexError
    "index past the end": (IndexError, lambda: _v()[10]),
    "negative index past the start": (IndexError, lambda: _v()[-11]),
    "index of second axis": (IndexError, lambda: _t()[1, 4]),
    "too many indices": (IndexError, lambda: _v()[0, 0]),
    "two ellipses": (IndexError, lambda: _t()[..., ...]),
    "index of a 0-d tensor": (IndexError, lambda: at.tensor(1.0)[0]),
    "mask of another shape": (IndexError, lambda: _t()[np.ones((4, 3), bool)]),
    "float index": (IndexError, lambda: _v()[1.5]),
    # dtypes: TypeError, as in numpy
    "bool minus bool": (TypeError, lambda: at.tensor(np.array([True])) - at.tensor(np.array([False]))),
    "negative of bool": (TypeError, lambda: -at.tensor(np.array([True, False]))),
    "argmax over a tuple": (TypeError, lambda: _t().argmax(axis=(0, 1))),
    "len of 0-d": (TypeError, lambda: len(at.tensor(1.0))),
    "index with a float tensor": (TypeError, lambda: range(10)[at.tensor(1.5)]),
    # matrices: numpy.linalg.LinAlgError
    "inv of non-square": (np.linalg.LinAlgError, lambda: at.linalg.inv(_t())),
    "cholesky of non-square": (np.linalg.LinAlgError, lambda: at.linalg.cholesky(_t())),
    "solve with non-square": (np.linalg.LinAlgError, lambda: at.linalg.solve(_t(), _v(3))),
    "qr of a vector": (np.linalg.LinAlgError, lambda: at.linalg.qr(_v())),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_have_numpy_types(name):
    exc, f = ERRORS[name]
    with pytest.raises(exc):
        r = f()
        if isinstance(r, at.Tensor):
            r.fetch()


def test_axis_error_is_also_value_and_index_error():
    with pytest.raises(ValueError):
        _t().sum(axis=5)
    with pytest.raises(IndexError):
        _t().sum(axis=5)


# --------------------------------------------------------------------------- divergences
#
# Each test below pins one case where an earlier reading of the implementation showed
# ares differing from numpy without saying so.


def test_min_of_an_empty_axis_raises_value_error_like_numpy():
    x = np.zeros((0, 3))
    with pytest.raises(ValueError):
        x.min(axis=0)
    with pytest.raises(ValueError):
        at.tensor(x).min(axis=0).fetch()
    with pytest.raises(ValueError):
        at.tensor(x).argmax().fetch()


def test_var_std_of_bools_over_no_axis():
    x = np.array([[True, False, True], [False, False, True]])
    for name in ("var", "std"):
        check(getattr(at.tensor(x, chunk_size=2), name)(axis=()), getattr(np, name)(x, axis=()))


def test_clip_of_integers_with_integer_bounds_keeps_the_dtype():
    for dtype in (np.int32, np.int64):
        x = np.arange(-5, 7, dtype=dtype).reshape(3, 4)
        t = at.tensor(x, chunk_size=(2, 3))
        check(at.clip(t, -2, 3), np.clip(x, -2, 3))
        check(t.clip(None, 3), np.clip(x, None, 3))
        check(t.clip(0), np.clip(x, 0, None))


def test_where_of_three_differently_chunked_operands():
    """``where`` lines up the condition with ``x`` and with ``y`` in turn, then ``x`` with
    ``y``; the last step can change ``x``'s chunks after the condition was lined up."""
    c = np.array([True, False, True, False])
    x = np.arange(12.0).reshape(3, 4)
    y = -np.arange(12.0).reshape(3, 4)
    result = at.where(at.tensor(c, chunk_size=1), at.tensor(x, chunk_size=(3, 2)), at.tensor(y, chunk_size=(3, 3)))
    check(result, np.where(c, x, y))


def test_singular_matrix_raises_linalg_error():
    a = np.array([[1.0, 2.0], [2.0, 4.0]])
    with pytest.raises(np.linalg.LinAlgError):
        at.linalg.inv(at.tensor(a, chunk_size=1)).fetch()
    with pytest.raises(np.linalg.LinAlgError):
        at.linalg.solve(at.tensor(a), at.tensor(np.ones(2))).fetch()


def test_integer_to_a_negative_integer_power_raises_value_error():
    x = np.arange(1, 5)
    with pytest.raises(ValueError):
        x**-1
    with pytest.raises(ValueError):
        (at.tensor(x, chunk_size=3) ** -1).fetch()


@pytest.mark.parametrize(
    "dtype, scalar",
    [(np.float32, np.float64(0.5)), (np.int32, np.int64(3)), (np.int32, np.float32(0.5)), (np.float32, np.float32(2.0))],
)
def test_numpy_scalars_promote_as_in_numpy(dtype, scalar):
    """numpy 2 (NEP 50) treats numpy scalars as typed, unlike Python scalars:
    ``float32 array + np.float64(0.5)`` is float64."""
    x = np.arange(6, dtype=dtype)
    t = at.tensor(x, chunk_size=4)
    check(t + scalar, x + scalar)
    check(scalar * t, scalar * x)


def test_runtime_still_works_after_errors():
    # Whatever failed above, the session computes on.
    check(at.ones((4, 4), chunk_size=3).sum(), np.float64(16.0))
    assert ares.is_initialized()


@given(data=st.data())
def test_svd_of_a_wide_matrix_goes_through_its_transpose(data):
    m = data.draw(st.integers(1, 6))
    n = data.draw(st.integers(m + 1, 12))
    x = data.draw(arrays(np.float64, (m, n), elements=elements(np.float64, -1, 1)))
    x[:, :m] += (m + 1) * np.eye(m)
    c = data.draw(chunkings((m, n)))
    u, s, vt = at.linalg.svd(make(x, c), full_matrices=False)
    assert u.shape == (m, m) and s.shape == (m,) and vt.shape == (m, n)
    uv, sv, vtv = u.fetch(), s.fetch(), vt.fetch()
    npt.assert_allclose(sv, np.linalg.svd(x, compute_uv=False), rtol=1e-6, atol=1e-9)
    npt.assert_allclose((uv * sv) @ vtv, x, atol=1e-9)


@given(data=st.data(), dta=st.sampled_from([np.bool_, np.int32, np.int64]), dtb=st.sampled_from([np.bool_, np.int32, np.int64]))
def test_integer_and_boolean_matmul_are_exact(data, dta, dtb):
    m, k, n = (data.draw(st.integers(1, 9)) for _ in range(3))
    x, ca = data.draw(chunked_arrays(dta, (m, k), lo=-1000, hi=1000))
    y, cb = data.draw(chunked_arrays(dtb, (k, n), lo=-1000, hi=1000))
    check(make(x, ca) @ make(y, cb), x @ y)
    check(at.dot(make(x, ca), make(y, cb)), np.dot(x, y))


def test_int32_products_wrap_as_numpy_does():
    x = np.full((2, 3), 100_000, dtype=np.int32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = x @ x.T
    check(at.tensor(x, chunk_size=1) @ at.tensor(x.T, chunk_size=2), expected)


@st.composite
def wide_matrices(draw):
    """An ``m × n`` matrix with ``m < n`` whose leading square block is well conditioned."""
    m = draw(st.integers(1, 6))
    n = draw(st.integers(m + 1, 12))
    x = draw(arrays(np.float64, (m, n), elements=elements(np.float64, -1, 1)))
    x[:, :m] += (m + 1) * np.eye(m)
    return x, draw(chunkings((m, n)))


@given(xc=wide_matrices())
def test_qr_of_wide_matrices(xc):
    x, c = xc
    m, n = x.shape
    q, r = at.linalg.qr(make(x, c))
    assert q.shape == (m, m) and r.shape == (m, n)
    qv, rv = q.fetch(), r.fetch()
    npt.assert_allclose(qv @ rv, x, atol=1e-9)
    npt.assert_allclose(qv.T @ qv, np.eye(m), atol=1e-9)
    npt.assert_allclose(np.tril(rv, -1), 0, atol=1e-12)
    npt.assert_allclose(np.abs(rv), np.abs(np.linalg.qr(x)[1]), atol=1e-9)


@given(data=st.data(), dtype=st.sampled_from([np.int64, np.float64]))
def test_tensordot(data, dtype):
    shape_a = tuple(data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    n = data.draw(st.integers(0, len(shape_a)))
    shape_b = shape_a[len(shape_a) - n :] + tuple(data.draw(st.lists(st.integers(1, 4), max_size=2)))
    x, ca = data.draw(chunked_arrays(dtype, shape_a, lo=-10, hi=10))
    y, cb = data.draw(chunked_arrays(dtype, shape_b, lo=-10, hi=10))
    check(at.tensordot(make(x, ca), make(y, cb), axes=n), np.tensordot(x, y, axes=n), atol=1e-9)
    if n:
        pairs = (list(range(len(shape_a) - n, len(shape_a))), list(range(n)))
        check(at.tensordot(make(x, ca), make(y, cb), axes=pairs), np.tensordot(x, y, axes=pairs), atol=1e-9)
    with pytest.raises(ValueError):
        at.tensordot(at.ones((2, 3)), at.ones((4, 5)), axes=1)

# --------------------------------------------------------------------------- a probe's findings
#
# Each test below pins a case a probe with ordinary numpy code found differing.


def test_numpy_ufuncs_compute_tensors():
    x = np.array([[-2.0, -1.0, 0.5], [1.0, 2.0, 3.0]])
    t = at.tensor(x, chunk_size=(1, 2))
    for f in (np.exp, np.abs, np.negative, np.sin, np.cos, np.square, np.positive):
        check(f(t), f(x))
    check(np.add(t, 1), np.add(x, 1))
    check(np.maximum(x, t * 2), np.maximum(x, x * 2))
    check(np.matmul(t, t.T), x @ x.T)
    check(x + t, x + x)  # a numpy array on the left stays a tensor
    check(np.less(t, 0.7), x < 0.7)


def test_numpy_ufuncs_without_a_tiled_form_name_themselves():
    t = at.tensor(np.arange(4.0))
    for call, name in ((lambda: np.bitwise_count(t.astype(np.int64)), "bitwise_count"), (lambda: np.add.accumulate(t), "add.accumulate"), (lambda: np.exp(t, out=np.empty(4)), "out=")):
        with pytest.raises(NotImplementedError, match=name.replace(".", r"\.")):
            call()


@given(data=st.data(), shape=shapes.filter(lambda s: len(s) >= 1))
def test_ufunc_reduce_is_the_reduction_of_the_same_name(data, shape):
    x = data.draw(arrays(np.int64, shape, elements=st.integers(-1000, 1000)))
    chunks = data.draw(chunkings(shape))
    t = make(x, chunks)
    for uf in (np.add, np.multiply, np.maximum, np.minimum):
        check(uf.reduce(t), uf.reduce(x))
        check(uf.reduce(t, axis=-1, keepdims=True), uf.reduce(x, axis=-1, keepdims=True))
    check(np.logical_and.reduce(t > 0), np.logical_and.reduce(x > 0))
    check(np.logical_or.reduce(t > 0, axis=None), np.logical_or.reduce(x > 0, axis=None))


def test_negative_integer_powers_raise_from_tensors_and_numpy_scalars():
    x = np.array([2, 3])
    with pytest.raises(ValueError, match="negative integer powers"):
        (2 ** at.tensor(np.array([-1, 2]), chunk_size=1)).fetch()
    with pytest.raises(ValueError, match="negative integer powers"):
        (at.tensor(x) ** np.int64(-1)).fetch()
    with pytest.raises(ValueError, match="negative integer powers"):
        (at.tensor(x, chunk_size=1) ** at.tensor(np.array([-1, 2]), chunk_size=1)).fetch()
    check(at.tensor(x) ** at.tensor(np.array([0, 2])), x ** np.array([0, 2]))  # and the session goes on


def test_integer_powers_past_32_bits_wrap_as_numpy():
    x = np.array([0, 2, 3, -3])
    for e in (2**32, 2**32 + 1, 2**40 + 7):
        check(at.tensor(x, chunk_size=3) ** e, x**e)
    b = np.array([True, False])
    check(at.tensor(b) ** 2**40, b ** 2**40)


def test_python_ints_out_of_the_dtypes_range_overflow_as_in_numpy():
    x = np.arange(3, dtype=np.int32)
    with pytest.raises(OverflowError):
        x + 2**31
    with pytest.raises(OverflowError):
        at.tensor(x) + 2**31
    with pytest.raises(OverflowError):
        at.tensor(np.array([True])) * 2**63
    # Comparisons with such ints are answered, as numpy 2 does.
    check(at.tensor(x) < 2**31, x < 2**31)


@pytest.mark.parametrize("dtype, scalar", [(np.float32, np.float64(0.5)), (np.bool_, np.float32(2.0)), (np.int32, np.int64(1))])
def test_numpy_scalars_keep_their_dtype_in_where_clip_full_and_functions(dtype, scalar):
    x = np.array([1, 0, 3], dtype=dtype)
    t = at.tensor(x, chunk_size=2)
    check(at.where(t > 0, t, scalar), np.where(x > 0, x, scalar))
    check(at.where(x > 0, scalar, scalar), np.where(x > 0, scalar, scalar))
    if dtype != np.bool_:
        check(at.clip(t, scalar, None), np.clip(x, scalar, None))
    check(at.full(2, scalar), np.full(2, scalar))
    check(at.add(scalar, scalar), np.add(scalar, scalar))
    check(at.exp(np.float32(1)), np.exp(np.float32(1)))


def test_clip_takes_numpys_min_and_max_keywords():
    x = np.arange(-3.0, 4.0)
    check(at.clip(at.tensor(x), min=-1, max=2), np.clip(x, -1, 2))
    check(at.clip(at.tensor(x), max=2), np.clip(x, None, 2))
    with pytest.raises(TypeError):
        at.clip(at.tensor(x), 0, 1, bogus=3)


def test_mean_with_an_integer_dtype_truncates_like_numpy():
    x = np.array([[1, 2], [4, 4]])
    for axis in (None, 0, 1):
        check(at.tensor(x, chunk_size=1).mean(axis=axis, dtype=np.int64), x.mean(axis=axis, dtype=np.int64))


def test_var_with_ddof_at_least_n_divides_by_zero_like_numpy():
    x = np.array([1.0, 2.0, 4.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        check(at.tensor(x, chunk_size=2).var(ddof=3), x.var(ddof=3))
        check(at.tensor(np.ones(2)).var(ddof=2), np.ones(2).var(ddof=2))


def test_svd_of_a_square_matrix_in_numpys_default_form():
    x = np.array([[4.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 2.0]])
    u, s, vh = at.linalg.svd(at.tensor(x, chunk_size=2))
    npt.assert_allclose(s.fetch(), np.linalg.svd(x, compute_uv=False))
    npt.assert_allclose((u.fetch() * s.fetch()) @ vh.fetch(), x, atol=1e-12)


def test_inv_and_solve_keep_float32():
    a = np.array([[2.0, 1.0], [1.0, 3.0]], dtype=np.float32)
    assert at.linalg.inv(at.tensor(a)).fetch().dtype == np.linalg.inv(a).dtype
    b = np.ones(2, dtype=np.float32)
    assert at.linalg.solve(at.tensor(a), at.tensor(b)).fetch().dtype == np.linalg.solve(a, b).dtype
