"""complex64/complex128 tensors and ``ares.tensor.fft`` against numpy, over random
shapes and chunkings (uneven ones too): element-wise functions with the special values
of C99's Annex G, reductions, sorting, matmul, the factorizations of complex matrices,
and every transform with its ``n``, ``axis``/``axes`` and ``norm``."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from test_numpy_parity import check, chunkings, make

import ares.tensor as at

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

shapes = st.lists(st.integers(1, 6), min_size=1, max_size=3).map(tuple)
parts = st.floats(-50, 50, width=32)
special = st.sampled_from([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0])
cdtypes = st.sampled_from([np.complex64, np.complex128])


@st.composite
def complex_tensors(draw, shape_strategy=shapes, specials=False):
    shape = draw(shape_strategy)
    dtype = np.dtype(draw(cdtypes))
    part = (parts | special) if specials else parts
    re = draw(arrays(np.float64, shape, elements=part))
    im = draw(arrays(np.float64, shape, elements=part))
    x = (re + 1j * im).astype(dtype)
    return x, make(x, draw(chunkings(shape)))


UNARY = [
    "exp", "log", "sqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh", "arcsin", "arccos", "arctan",
    "arcsinh", "arccosh", "arctanh", "expm1", "log1p", "log2", "log10", "square", "negative",
    "positive", "sign", "conj", "abs", "isnan", "isinf", "isfinite", "real", "imag",
]  # fmt: skip


@given(complex_tensors(specials=True), st.sampled_from(UNARY))
def test_element_wise_functions_match_numpy_with_special_values(xt, name):
    x, t = xt
    with np.errstate(all="ignore"):
        want = getattr(np, name)(x)
    tol = 1e-5 if x.dtype == np.complex64 else 1e-12
    check(getattr(at, name)(t), want, rtol=tol, atol=tol)


@given(complex_tensors(), st.data())
def test_arithmetic_and_promotion_match_numpy(xt, data):
    x, t = xt
    other = data.draw(st.sampled_from([2.5, 3, 1 - 2j, np.float32(1.5), True]))
    tol = 1e-5 if x.dtype == np.complex64 else 1e-12
    with np.errstate(all="ignore"):
        for op in ("__add__", "__sub__", "__mul__", "__truediv__", "__pow__", "__radd__", "__rsub__", "__rtruediv__"):
            check(getattr(t, op)(other), getattr(x, op)(other), rtol=tol, atol=tol)
        check(t * t, x * x, rtol=tol, atol=tol)
        check(t / (t + 1), x / (x + 1), rtol=tol, atol=tol)
        check(t == t.conj(), x == x.conj())
    f = data.draw(arrays(np.float32, x.shape, elements=st.floats(-10, 10, width=32)))
    check(t + make(f, tuple(c[0] for c in t.chunks)), x + f, rtol=tol, atol=tol)


@given(complex_tensors(), st.data())
def test_reductions_sorts_and_scans_match_numpy(xt, data):
    x, t = xt
    axis = data.draw(st.sampled_from([None] + list(range(x.ndim))))
    tol = 1e-4 if x.dtype == np.complex64 else 1e-9
    for name in ("sum", "mean", "prod", "var", "std"):
        check(getattr(t, name)(axis=axis), getattr(x, name)(axis=axis), rtol=tol, atol=tol * 10)
    check(t.max(axis=axis), x.max(axis=axis))
    check(t.min(axis=axis), x.min(axis=axis))
    ax = data.draw(st.integers(0, x.ndim - 1))
    check(at.sort(t, axis=ax), np.sort(x, axis=ax, kind="stable"))
    check(at.cumsum(t, axis=ax), np.cumsum(x, axis=ax), rtol=tol, atol=tol * 10)
    check(at.where(t.real > 0, t, 0), np.where(x.real > 0, x, 0))


@given(st.integers(1, 7), st.integers(1, 7), st.integers(1, 7), st.data())
def test_matmul_of_complex_matrices_matches_numpy(m, k, n, data):
    a = (np.arange(m * k).reshape(m, k) % 5 - 2) + 1j * (np.arange(m * k).reshape(m, k) % 3)
    b = (np.arange(k * n).reshape(k, n) % 7 - 3) - 0.5j
    ca, cb = data.draw(chunkings((m, k))), data.draw(chunkings((k, n)))
    check(make(a, ca) @ make(b, cb), a @ b, rtol=1e-12, atol=1e-12)
    check(make(a.real, ca) @ make(b, cb), a.real @ b, rtol=1e-12, atol=1e-12)


@given(st.integers(1, 5), st.integers(1, 5), cdtypes, st.data())
def test_factorizations_of_complex_matrices_match_numpy(m, n, dtype, data):
    rng = np.random.default_rng(m * 7 + n)
    a = (rng.normal(size=(m, n)) + 1j * rng.normal(size=(m, n))).astype(dtype)
    t = make(a, data.draw(chunkings((m, n))))
    tol = 1e-3 if dtype == np.complex64 else 1e-9
    s = np.linalg.svd(a, compute_uv=False)
    check(at.linalg.svdvals(t), s, rtol=tol, atol=tol)
    u, sv, vh = at.linalg.svd(t, full_matrices=False)
    check((u * sv[None, :]) @ vh, a, rtol=tol, atol=tol)
    q, r = at.linalg.qr(t)
    check(q @ r, a, rtol=tol, atol=tol)
    check(at.linalg.pinv(t), np.linalg.pinv(a), rtol=tol * 100, atol=tol * 100)
    check(at.linalg.matrix_rank(t), np.linalg.matrix_rank(a))
    sq = a[:, :1] @ a[:, :1].conj().T + np.eye(m, dtype=dtype) * 3  # Hermitian positive definite
    ts = make(sq, data.draw(chunkings((m, m))))
    check(at.linalg.inv(ts), np.linalg.inv(sq), rtol=tol, atol=tol)
    check(at.linalg.det(ts), np.linalg.det(sq), rtol=tol, atol=tol)
    sign, logdet = at.linalg.slogdet(ts)
    want = np.linalg.slogdet(sq)
    check(sign, want.sign, rtol=tol, atol=tol)
    check(logdet, want.logabsdet, rtol=tol, atol=tol)
    check(at.linalg.cholesky(ts), np.linalg.cholesky(sq), rtol=tol, atol=tol)
    check(at.linalg.cholesky(ts, upper=True), np.linalg.cholesky(sq).conj().T, rtol=tol, atol=tol)
    check(at.linalg.eigvalsh(ts), np.linalg.eigvalsh(sq), rtol=tol, atol=tol)
    check(at.linalg.eigvalsh(ts, UPLO="U"), np.linalg.eigvalsh(sq, UPLO="U"), rtol=tol, atol=tol)
    w, v = at.linalg.eigh(ts)
    check(v @ (w[:, None] * v.conj().T), sq, rtol=tol, atol=tol)
    b = a[:, :1] * (2 - 1j)
    check(at.linalg.solve(ts, make(b, (m, 1))), np.linalg.solve(sq, b), rtol=tol, atol=tol)


fft_shapes = st.lists(st.integers(1, 9), min_size=1, max_size=3).map(tuple)
norms = st.sampled_from([None, "backward", "ortho", "forward"])


def same(ours, theirs, tol):
    """``ours()`` computes ``theirs()``, or both refuse with a ValueError (an ``irfft``
    of one coefficient has no default length)."""
    try:
        want = theirs()
    except ValueError:
        with pytest.raises(ValueError):
            ours()
        return
    check(ours(), want, rtol=tol, atol=tol)


@given(complex_tensors(shape_strategy=fft_shapes), st.data(), norms)
def test_one_dimensional_transforms_match_numpy(xt, data, norm):
    x, t = xt
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    n = data.draw(st.none() | st.integers(1, 12))
    tol = 1e-3 if x.dtype == np.complex64 else 1e-9
    r, tr = x.real.copy(), t.real
    for name, ours, theirs in [("fft", t, x), ("ifft", t, x), ("irfft", t, x), ("hfft", t, x), ("rfft", tr, r), ("ihfft", tr, r)]:
        f, g = getattr(at.fft, name), getattr(np.fft, name)
        same(lambda: f(ours, n=n, axis=axis, norm=norm), lambda: g(theirs, n=n, axis=axis, norm=norm), tol)


@given(complex_tensors(shape_strategy=fft_shapes), st.data(), norms)
def test_n_dimensional_transforms_match_numpy(xt, data, norm):
    x, t = xt
    axes = data.draw(st.none() | st.lists(st.integers(0, x.ndim - 1), min_size=1, max_size=x.ndim, unique=True))
    s = None if axes is None or data.draw(st.booleans()) else [data.draw(st.integers(1, 8)) for _ in axes]
    tol = 1e-3 if x.dtype == np.complex64 else 1e-9
    r = x.real.copy()
    for name, ours, theirs in [("fftn", t, x), ("ifftn", t, x), ("irfftn", t, x), ("rfftn", t.real, r)]:
        f, g = getattr(at.fft, name), getattr(np.fft, name)
        same(lambda: f(ours, s=s, axes=axes, norm=norm), lambda: g(theirs, s=s, axes=axes, norm=norm), tol)
    check(at.fft.fftshift(t, axes=axes), np.fft.fftshift(x, axes=axes))
    check(at.fft.ifftshift(t, axes=axes), np.fft.ifftshift(x, axes=axes))


@given(st.integers(1, 20), st.floats(0.1, 10))
def test_sample_frequencies_match_numpy(n, d):
    check(at.fft.fftfreq(n, d), np.fft.fftfreq(n, d), rtol=1e-15, atol=0)
    check(at.fft.rfftfreq(n, d), np.fft.rfftfreq(n, d), rtol=1e-15, atol=0)


def test_numpy_fft_functions_dispatch_to_lazy_tensors_and_bad_input_is_refused():
    x = np.arange(12.0).reshape(3, 4)
    t = at.asarray(x, chunk_size=2)
    assert isinstance(np.fft.fft2(t), at.Tensor)
    check(np.fft.fft2(t), np.fft.fft2(x), rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="norm"):
        at.fft.fft(t, norm="sideways")
    with pytest.raises(ValueError, match="data points"):
        at.fft.fft(t, n=0)
    with pytest.raises(TypeError, match="real input"):
        at.fft.rfft(t * 1j)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_empty_complex_tensors_compute_as_numpy(dtype):
    x = np.zeros((0, 3), dtype=dtype)
    t = at.asarray(x, chunk_size=(1, 2))
    check(t, x)
    check(t.sum(axis=0), x.sum(axis=0))
    check(abs(t), abs(x))
    check(t * (1 + 2j), x * (1 + 2j))
    check(at.fft.fft(t, axis=1), np.fft.fft(x, axis=1))
    with pytest.raises(ValueError, match="data points"):
        at.fft.fft(t, axis=0)
