"""Discrete Fourier transforms of tensors: ``numpy.fft`` and the Array API's ``fft``
extension.

Every function is lazy and returns a tensor. A transform along a chunked axis first
gathers that axis whole into each chunk (the other axes split further), as Mars and
Dask do; each chunk's lanes are then transformed by rustfft in the chunk kernel.
Results are complex64 for float32 and complex64 inputs (numpy 2's rule) and complex128
otherwise; ``irfft``/``irfftn``/``hfft`` give the matching real dtype. ``norm`` is
numpy's: ``"backward"`` (default: the inverse divides by ``n``), ``"ortho"`` or
``"forward"``.
"""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence

import numpy as np

from . import Tensor, _axis_of, _check_out, _to_tensor, arange, concatenate, zeros
from ._array_api import _check_device, roll

__all__ = [
    "fft",
    "ifft",
    "fftn",
    "ifftn",
    "rfft",
    "irfft",
    "rfftn",
    "irfftn",
    "hfft",
    "ihfft",
    "fft2",
    "ifft2",
    "rfft2",
    "irfft2",
    "fftfreq",
    "rfftfreq",
    "fftshift",
    "ifftshift",
]


def _scale(n: int, norm: Optional[str], inverse: bool) -> float:
    """The factor of a transform of length ``n``: numpy's ``norm`` conventions."""
    if norm is None or norm == "backward":
        return 1.0 / n if inverse and n else 1.0
    if norm == "ortho":
        return 1.0 / math.sqrt(n) if n else 1.0
    if norm == "forward":
        return 1.0 if inverse or not n else 1.0 / n
    raise ValueError(f'Invalid norm value {norm!r}; should be "backward", "ortho" or "forward".')


def _fit(t: Tensor, n: Optional[int], axis: int) -> Tensor:
    """``t`` cut or zero-padded to ``n`` elements along ``axis`` (numpy's ``n``)."""
    if n is None:
        return t
    n = int(n)
    if n < 1:
        raise ValueError(f"Invalid number of FFT data points ({n}) specified.")
    have = t.shape[axis]
    if n < have:
        index = [slice(None)] * t.ndim
        index[axis] = slice(0, n)
        return t[tuple(index)]
    if n > have:
        shape = list(t.shape)
        shape[axis] = n - have
        return concatenate([t, zeros(tuple(shape), dtype=t.dtype)], axis=axis)
    return t


def _complex_input(x: Any) -> Tensor:
    t = _to_tensor(x)
    if t.dtype.kind not in "biufc":
        raise TypeError(f"fft of {t.dtype}")
    return t


def _one(x: Any, n: Optional[int], axis: int, norm: Optional[str], inverse: bool) -> Tensor:
    t = _complex_input(x)
    (ax,) = _axis_of(axis, t.ndim)
    t = _fit(t, n, ax)
    m = t.shape[ax]
    if m < 1:
        raise ValueError(f"Invalid number of FFT data points ({m}) specified.")
    kind = "inverse" if inverse else "forward"
    return Tensor(t._t.fft(ax, kind, _scale(m, norm, inverse)))


def fft(x: Any, /, n: Optional[int] = None, axis: int = -1, norm: Optional[str] = None, *, out: Any = None) -> Tensor:
    """The one-dimensional discrete Fourier transform along ``axis`` (complex)."""
    _check_out("fft", out, {})
    return _one(x, n, axis, norm, False)


def ifft(x: Any, /, n: Optional[int] = None, axis: int = -1, norm: Optional[str] = None, *, out: Any = None) -> Tensor:
    """The inverse of :func:`fft` (complex)."""
    _check_out("ifft", out, {})
    return _one(x, n, axis, norm, True)


def _axes_and_sizes(t: Tensor, s: Optional[Sequence[int]], axes: Optional[Sequence[int]]) -> tuple:
    """numpy's ``s``/``axes`` of an n-dimensional transform, as axis numbers and sizes."""
    if axes is None:
        axes = list(range(t.ndim)) if s is None else list(range(t.ndim - len(s), t.ndim))
    axes = [_axis_of(a, t.ndim)[0] for a in axes]
    if s is None:
        s = [None] * len(axes)
    elif len(s) != len(axes):
        raise ValueError("When given, axes and shape arguments have to be of the same length.")
    return axes, [None if k is None or k == -1 else int(k) for k in s]


def _many(x: Any, s: Any, axes: Any, norm: Optional[str], inverse: bool) -> Tensor:
    t = _complex_input(x)
    axes, sizes = _axes_and_sizes(t, s, axes)
    for a, k in zip(reversed(axes), reversed(sizes)):
        t = _one(t, k, a, norm, inverse)
    return t


def fftn(x: Any, /, s: Any = None, axes: Any = None, norm: Optional[str] = None, *, out: Any = None) -> Tensor:
    """The n-dimensional transform over ``axes`` (all by default), sizes ``s``."""
    _check_out("fftn", out, {})
    return _many(x, s, axes, norm, False)


def ifftn(x: Any, /, s: Any = None, axes: Any = None, norm: Optional[str] = None, *, out: Any = None) -> Tensor:
    """The inverse of :func:`fftn`."""
    _check_out("ifftn", out, {})
    return _many(x, s, axes, norm, True)


def fft2(x: Any, /, s: Any = None, axes: Any = (-2, -1), norm: Optional[str] = None, *, out: Any = None) -> Tensor:
    """The transform over the last two axes."""
    return fftn(x, s=s, axes=axes, norm=norm, out=out)


def ifft2(x: Any, /, s: Any = None, axes: Any = (-2, -1), norm: Optional[str] = None, *, out: Any = None) -> Tensor:
    """The inverse of :func:`fft2`."""
    return ifftn(x, s=s, axes=axes, norm=norm, out=out)


def _real_input(x: Any, name: str) -> Tensor:
    t = _to_tensor(x)
    if t.dtype.kind == "c":
        raise TypeError(f"{name} takes real input, not {t.dtype} (use fft)")
    return t


def rfft(x: Any, /, n: Optional[int] = None, axis: int = -1, norm: Optional[str] = None, *, out: Any = None) -> Tensor:
    """The transform of a real signal: its first ``n // 2 + 1`` coefficients (the rest
    are their conjugates)."""
    _check_out("rfft", out, {})
    t = _real_input(x, "rfft")
    (ax,) = _axis_of(axis, t.ndim)
    full = _one(t, n, ax, norm, False)
    index = [slice(None)] * t.ndim
    index[ax] = slice(0, full.shape[ax] // 2 + 1)
    return full[tuple(index)]


def irfft(x: Any, /, n: Optional[int] = None, axis: int = -1, norm: Optional[str] = None, *, out: Any = None) -> Tensor:
    """The real signal of ``n`` elements (``2 * (m - 1)`` by default) whose half
    spectrum ``x`` holds (the inverse of :func:`rfft`)."""
    _check_out("irfft", out, {})
    t = _complex_input(x)
    (ax,) = _axis_of(axis, t.ndim)
    m = t.shape[ax]
    n = 2 * (m - 1) if n is None else int(n)
    if n < 1:
        raise ValueError(f"Invalid number of FFT data points ({n}) specified.")
    t = _fit(t, n // 2 + 1, ax)
    return Tensor(t._t.fft(ax, "real_inverse", _scale(n, norm, True), n))


def rfftn(x: Any, /, s: Any = None, axes: Any = None, norm: Optional[str] = None, *, out: Any = None) -> Tensor:
    """:func:`rfft` over the last of ``axes``, then :func:`fft` over the others."""
    _check_out("rfftn", out, {})
    t = _real_input(x, "rfftn")
    axes, sizes = _axes_and_sizes(t, s, axes)
    t = rfft(t, sizes[-1], axes[-1], norm)
    for a, k in zip(reversed(axes[:-1]), reversed(sizes[:-1])):
        t = _one(t, k, a, norm, False)
    return t


def irfftn(x: Any, /, s: Any = None, axes: Any = None, norm: Optional[str] = None, *, out: Any = None) -> Tensor:
    """The inverse of :func:`rfftn`: :func:`ifft` over all but the last of ``axes``, then
    :func:`irfft` over it."""
    _check_out("irfftn", out, {})
    t = _complex_input(x)
    axes, sizes = _axes_and_sizes(t, s, axes)
    for a, k in zip(reversed(axes[:-1]), reversed(sizes[:-1])):
        t = _one(t, k, a, norm, True)
    return irfft(t, sizes[-1], axes[-1], norm)


def rfft2(x: Any, /, s: Any = None, axes: Any = (-2, -1), norm: Optional[str] = None, *, out: Any = None) -> Tensor:
    """:func:`rfftn` over the last two axes."""
    return rfftn(x, s=s, axes=axes, norm=norm, out=out)


def irfft2(x: Any, /, s: Any = None, axes: Any = (-2, -1), norm: Optional[str] = None, *, out: Any = None) -> Tensor:
    """The inverse of :func:`rfft2`."""
    return irfftn(x, s=s, axes=axes, norm=norm, out=out)


_SWAP = {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}


def hfft(x: Any, /, n: Optional[int] = None, axis: int = -1, norm: Optional[str] = None, *, out: Any = None) -> Tensor:
    """The transform of a signal with Hermitian symmetry given by its first half: real,
    ``n`` elements (numpy's ``irfft(conj(x), n)`` with the opposite ``norm``)."""
    _check_out("hfft", out, {})
    if norm not in _SWAP:
        _scale(1, norm, False)
    t = _complex_input(x)
    if t.dtype.kind != "c":
        t = t.astype(np.complex64 if t.dtype == np.float32 else np.complex128)
    return irfft(t.conj(), n, axis, _SWAP[norm])


def ihfft(x: Any, /, n: Optional[int] = None, axis: int = -1, norm: Optional[str] = None, *, out: Any = None) -> Tensor:
    """The inverse of :func:`hfft` of a real signal: ``conj(rfft(x))`` with the opposite
    ``norm``."""
    _check_out("ihfft", out, {})
    if norm not in _SWAP:
        _scale(1, norm, False)
    return rfft(x, n, axis, _SWAP[norm]).conj()


def fftfreq(n: int, /, d: float = 1.0, *, dtype: Any = None, device: Any = None) -> Tensor:
    """The sample frequencies of an ``n``-point transform with spacing ``d``:
    ``[0, 1, …, n/2 - 1, -n/2, …, -1] / (d n)`` (float64 unless ``dtype``)."""
    _check_device(device)
    n = int(n)
    if n < 1:
        raise ValueError(f"n must be positive, got {n}")
    k = arange(n, dtype=np.int64)
    k = k - (k >= (n + 1) // 2).astype(np.int64) * n
    out = k.astype(dtype or np.float64) / (d * n)
    return out.astype(dtype) if dtype is not None else out


def rfftfreq(n: int, /, d: float = 1.0, *, dtype: Any = None, device: Any = None) -> Tensor:
    """The non-negative sample frequencies of :func:`rfft`: ``[0, 1, …, n//2] / (d n)``."""
    _check_device(device)
    n = int(n)
    if n < 1:
        raise ValueError(f"n must be positive, got {n}")
    out = arange(n // 2 + 1, dtype=np.int64).astype(dtype or np.float64) / (d * n)
    return out.astype(dtype) if dtype is not None else out


def _shift(x: Any, axes: Any, sign: int) -> Tensor:
    t = _to_tensor(x)
    if axes is None:
        axes = list(range(t.ndim))
    elif isinstance(axes, (int, np.integer)):
        axes = [int(axes)]
    axes = [_axis_of(a, t.ndim)[0] for a in axes]
    if not axes:
        return t
    shifts = [sign * (t.shape[a] // 2) for a in axes]
    return roll(t, tuple(shifts), axis=tuple(axes))


def fftshift(x: Any, /, axes: Any = None) -> Tensor:
    """The zero frequency moved to the centre (``roll`` by ``n // 2`` along ``axes``)."""
    return _shift(x, axes, 1)


def ifftshift(x: Any, /, axes: Any = None) -> Tensor:
    """The inverse of :func:`fftshift` (``roll`` by ``-(n // 2)``)."""
    return _shift(x, axes, -1)

