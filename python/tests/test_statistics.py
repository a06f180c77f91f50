"""The NaN-ignoring reductions, average, cov, corrcoef, ptp and the linalg extensions
built from tiled operations, against numpy over random shapes and chunkings."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from test_numpy_parity import axis_args, check, chunkings, make

import ares.tensor as at

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

shapes = st.lists(st.integers(1, 7), min_size=1, max_size=3).map(tuple)
with_nan = st.floats(-100, 100, width=64) | st.just(np.nan)


@st.composite
def tensors(draw, dtype=np.float64, shape_strategy=shapes, elements=with_nan):
    shape = draw(shape_strategy)
    x = draw(arrays(dtype, shape, elements=elements))
    return x, make(x, draw(chunkings(shape)))


@given(tensors(), st.data())
def test_nan_reductions_match_numpy(xt, data):
    x, t = xt
    axis = data.draw(axis_args(x.ndim))
    keepdims = data.draw(st.booleans())
    for name in ("nansum", "nanprod", "nanmean", "nanmin", "nanmax", "nanvar", "nanstd"):
        want = getattr(np, name)(x, axis=axis, keepdims=keepdims)
        check(getattr(at, name)(t, axis=axis, keepdims=keepdims), want, rtol=1e-9, atol=1e-9)
    check(at.nanvar(t, axis=axis, ddof=1), np.nanvar(x, axis=axis, ddof=1), rtol=1e-9, atol=1e-9)
    one = data.draw(st.sampled_from([None] + list(range(x.ndim))))
    valid = ~np.isnan(x)
    if np.all(np.any(valid, axis=one)):
        check(at.nanargmax(t, axis=one), np.nanargmax(x, axis=one))
        check(at.nanargmin(t, axis=one), np.nanargmin(x, axis=one))
    elif one is not None:
        # numpy raises on an all-NaN lane; lazily, each such lane gives -1.
        got = at.nanargmin(t, axis=one).fetch()
        assert (got[~np.any(valid, axis=one)] == -1).all()
    check(at.nancumsum(t, axis=one), np.nancumsum(x, axis=one), rtol=1e-9, atol=1e-9)
    check(at.ptp(t, axis=axis), np.ptp(x, axis=axis))


@given(tensors(elements=st.floats(-100, 100)), st.data())
def test_average_cov_and_corrcoef_match_numpy(xt, data):
    x, t = xt
    axis = data.draw(st.sampled_from(list(range(x.ndim))))
    w = data.draw(arrays(np.float64, (x.shape[axis],), elements=st.floats(0.5, 3)))
    check(at.average(t, axis=axis, weights=w), np.average(x, axis=axis, weights=w), rtol=1e-9, atol=1e-9)
    avg, scl = at.average(t, axis=axis, weights=w, returned=True)
    wa, ws = np.average(x, axis=axis, weights=w, returned=True)
    check(scl, ws, rtol=1e-12, atol=1e-12)
    check(at.average(t), np.average(x), rtol=1e-9, atol=1e-9)
    if x.ndim <= 2:
        for rowvar in (True, False):
            check(at.cov(t, rowvar=rowvar), np.cov(x, rowvar=rowvar), rtol=1e-7, atol=1e-7)
            # Zero variance gives NaN, or 1 where numpy's rounding leaves a tiny one.
            if x.size > 1 and np.all(np.ptp(np.atleast_2d(x) if rowvar or x.ndim == 1 else x.T, axis=1) > 1e-6):
                want = np.corrcoef(x, rowvar=rowvar)
                check(at.corrcoef(t, rowvar=rowvar), want, rtol=1e-7, atol=1e-7)


@given(st.data())
def test_linalg_extensions_match_numpy(data):
    n = data.draw(st.integers(1, 6))
    m = data.draw(st.integers(n, 8))
    # Subnormal entries overflow a pseudo-inverse to inf (and numpy to NaN): left out.
    a = data.draw(arrays(np.float64, (m, n), elements=st.floats(-10, 10, allow_subnormal=False)))
    t = make(a, data.draw(chunkings((m, n))))
    tol = dict(rtol=1e-7, atol=1e-7)
    for ord in ("fro", "nuc", 2, 1, -1, np.inf, -np.inf):
        check(at.linalg.matrix_norm(t, ord=ord), np.linalg.matrix_norm(a, ord=ord), **tol)
    for ord in (2, 1, 0, np.inf, -np.inf, 3):
        check(at.linalg.vector_norm(t, ord=ord), np.linalg.vector_norm(a, ord=ord), **tol)
        check(at.linalg.vector_norm(t, axis=0, ord=ord), np.linalg.vector_norm(a, axis=0, ord=ord), **tol)
    check(at.linalg.svdvals(t), np.linalg.svdvals(a), **tol)
    # An ill-conditioned matrix's pseudo-inverse is only as exact as its condition allows.
    want = np.linalg.pinv(a)
    check(at.linalg.pinv(t), want, rtol=1e-6, atol=1e-6 + 1e-12 * np.linalg.cond(a) * np.abs(want).max())
    check(at.linalg.matrix_rank(t), np.linalg.matrix_rank(a))
    sq = make(a[:n, :n], data.draw(chunkings((n, n))))
    for p in (0, 1, 2, 3, 5):
        check(at.linalg.matrix_power(sq, p), np.linalg.matrix_power(a[:n, :n], p), rtol=1e-7, atol=1e-6)
    for k in (-1, 0, 1):
        check(at.linalg.diagonal(t, offset=k), np.diagonal(a, offset=k))
    check(at.linalg.outer(t[:, 0], t[0]), np.outer(a[:, 0], a[0]))


def test_cross_products_of_vectors_along_an_axis():
    a = np.arange(12.0).reshape(4, 3)
    b = np.arange(12.0, 24.0).reshape(4, 3)[::-1]
    check(at.linalg.cross(at.tensor(a, chunk_size=2), at.tensor(b)), np.linalg.cross(a, b))
    check(at.linalg.cross(at.tensor(a.T), at.tensor(b.T), axis=0), np.cross(a.T, b.T, axis=0))


@given(st.data())
def test_stacked_matmul_broadcasts_the_stack_dimensions(data):
    m, k, n = (data.draw(st.integers(1, 4)) for _ in range(3))
    sa = tuple(data.draw(st.lists(st.integers(1, 3), min_size=0, max_size=2)))
    sb = tuple(1 if data.draw(st.booleans()) else d for d in sa)
    a = data.draw(arrays(np.int64, sa + (m, k), elements=st.integers(-9, 9)))
    b = data.draw(arrays(np.int64, sb + (k, n), elements=st.integers(-9, 9)))
    ta, tb = make(a, data.draw(chunkings(a.shape))), make(b, data.draw(chunkings(b.shape)))
    check(ta @ tb, a @ b)
    v = np.arange(k)
    check(ta @ at.tensor(v), a @ v)


@pytest.mark.parametrize(
    "spec,shapes",
    [
        ("ij,jk->ik", [(3, 4), (4, 5)]),
        ("ij,jk", [(3, 4), (4, 2)]),
        ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
        ("i,i->", [(6,), (6,)]),
        ("ij->ji", [(3, 5)]),
        ("ij->", [(3, 5)]),
        ("ii->i", [(4, 4)]),
        ("ii", [(4, 4)]),
        ("ij,kj->ikj", [(2, 3), (4, 3)]),
        ("i,j,k->ijk", [(2,), (3,), (4,)]),
        ("ijk,jl->kil", [(2, 3, 4), (3, 5)]),
    ],
)
def test_einsum_matches_numpy(spec, shapes):
    rng = np.random.default_rng(len(spec))
    arrs = [rng.integers(-5, 5, size=s) for s in shapes]
    ts = [at.tensor(a, chunk_size=2) for a in arrs]
    check(at.einsum(spec, *ts), np.einsum(spec, *arrs))
    check(np.einsum(spec, *ts), np.einsum(spec, *arrs))


@given(st.data())
def test_pad_matches_numpy_in_every_mode(data):
    shape = data.draw(st.lists(st.integers(1, 5), min_size=1, max_size=3).map(tuple))
    x = data.draw(arrays(np.int64, shape, elements=st.integers(-50, 50)))
    t = make(x, data.draw(chunkings(shape)))
    mode = data.draw(st.sampled_from(["constant", "edge", "reflect", "symmetric", "wrap"]))
    limit = {"reflect": min(shape) - 1, "symmetric": min(shape)}.get(mode, 7)
    widths = [(data.draw(st.integers(0, limit)), data.draw(st.integers(0, limit))) for _ in shape]
    kw = {"constant_values": 9} if mode == "constant" else {}
    check(at.pad(t, widths, mode=mode, **kw), np.pad(x, widths, mode=mode, **kw))
