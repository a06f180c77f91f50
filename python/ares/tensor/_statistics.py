"""numpy's statistics beyond the standard's reductions: the NaN-ignoring reductions
(``nansum``, ``nanmean``, ``nanmax``, ...), ``average``, ``cov``, ``corrcoef`` and
``ptp``. Each is built from the tiled reductions, masks and sorts: lazy, and run as
chunk tasks.
"""

from __future__ import annotations

import builtins
import math
from typing import Any, Optional

import numpy as np

from . import (
    Tensor,
    _axis_of,
    _check_out,
    _to_tensor,
    isnan,
    matmul,
    sqrt,
    where,
)

__all__ = [
    "nansum",
    "nanprod",
    "nanmean",
    "nanvar",
    "nanstd",
    "nanmin",
    "nanmax",
    "nanargmin",
    "nanargmax",
    "nancumsum",
    "nancumprod",
    "average",
    "cov",
    "corrcoef",
    "ptp",
]


def _float(t: Tensor) -> bool:
    return t.dtype.kind == "f"


def _filled(a: Any, value: float) -> Tensor:
    """``a`` with NaN replaced by ``value`` (integers and booleans have no NaN)."""
    t = _to_tensor(a)
    return where(isnan(t), value, t) if _float(t) else t


def nansum(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False) -> Tensor:
    """The sum treating NaN as zero."""
    return _filled(a, 0.0).sum(axis=axis, dtype=dtype, out=out, keepdims=keepdims)


def nanprod(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False) -> Tensor:
    """The product treating NaN as one."""
    return _filled(a, 1.0).prod(axis=axis, dtype=dtype, out=out, keepdims=keepdims)


def nancumsum(a: Any, axis: Optional[int] = None, dtype: Any = None, out: Any = None) -> Tensor:
    """The running sum treating NaN as zero."""
    return _filled(a, 0.0).cumsum(axis=axis, dtype=dtype, out=out)


def nancumprod(a: Any, axis: Optional[int] = None, dtype: Any = None, out: Any = None) -> Tensor:
    """The running product treating NaN as one."""
    return _filled(a, 1.0).cumprod(axis=axis, dtype=dtype, out=out)


def _count(t: Tensor, axis: Any, keepdims: bool) -> Tensor:
    """How many elements are not NaN (over ``axis``)."""
    if _float(t):
        return (~isnan(t)).sum(axis=axis, keepdims=keepdims)
    axes = _axis_of(axis, t.ndim)
    n = math.prod(t.shape[a] for a in (axes if axes is not None else range(t.ndim)))
    shape = [1 if (axes is None or d in axes) else s for d, s in enumerate(t.shape)] if keepdims else None
    c = t.sum(axis=axis, keepdims=keepdims) * 0 + n
    return c if shape is None else c.reshape(shape)


def nanmean(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False) -> Tensor:
    """The mean of the elements that are not NaN (NaN where there are none, as numpy)."""
    t = _to_tensor(a)
    if not _float(t):
        return t.mean(axis=axis, dtype=dtype, out=out, keepdims=keepdims)
    _check_out("nanmean", out, {})
    x = t if dtype is None else t.astype(dtype)
    return nansum(x, axis=axis, keepdims=keepdims) / _count(x, axis, keepdims)


def nanvar(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: Any = 0, keepdims: bool = False, *, correction: Any = None) -> Tensor:
    """The variance of the elements that are not NaN, over ``n - ddof`` (NaN where that
    is not positive, as numpy)."""
    t = _to_tensor(a)
    if correction is not None:
        if ddof != 0:
            raise ValueError("ddof and correction can't be provided simultaneously.")
        ddof = correction
    if not _float(t):
        return t.var(axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims)
    _check_out("nanvar", out, {})
    x = t if dtype is None else t.astype(dtype)
    n = _count(x, axis, True)
    mean = nansum(x, axis=axis, keepdims=True) / n
    d = _filled(x - mean, 0.0)
    ss = (d * d).sum(axis=axis, keepdims=keepdims)
    dof = _count(x, axis, keepdims) - ddof
    return where(dof > 0, ss / where(dof > 0, dof, 1), np.nan).astype(ss.dtype)


def nanstd(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: Any = 0, keepdims: bool = False, *, correction: Any = None) -> Tensor:
    """The standard deviation of the elements that are not NaN."""
    return sqrt(nanvar(a, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims, correction=correction))


def nanmin(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False) -> Tensor:
    """The minimum of the elements that are not NaN (NaN where all are, as numpy)."""
    t = _to_tensor(a)
    if not _float(t):
        return t.min(axis=axis, out=out, keepdims=keepdims)
    m = _filled(t, np.inf).min(axis=axis, out=out, keepdims=keepdims)
    return where(_count(t, axis, keepdims) == 0, np.nan, m)


def nanmax(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False) -> Tensor:
    """The maximum of the elements that are not NaN (NaN where all are)."""
    t = _to_tensor(a)
    if not _float(t):
        return t.max(axis=axis, out=out, keepdims=keepdims)
    m = _filled(t, -np.inf).max(axis=axis, out=out, keepdims=keepdims)
    return where(_count(t, axis, keepdims) == 0, np.nan, m)


def nanargmin(a: Any, axis: Optional[int] = None, out: Any = None, keepdims: bool = False) -> Tensor:
    """The position of the minimum ignoring NaN. numpy raises for a lane of NaN only;
    here such a lane gives -1 (known only once computed)."""
    t = _to_tensor(a)
    if not _float(t):
        return t.argmin(axis=axis, out=out, keepdims=keepdims)
    i = _filled(t, np.inf).argmin(axis=axis, keepdims=keepdims)
    return where(_count(t, axis, keepdims) == 0, -1, i)


def nanargmax(a: Any, axis: Optional[int] = None, out: Any = None, keepdims: bool = False) -> Tensor:
    """The position of the maximum ignoring NaN (-1 for a lane of NaN only)."""
    t = _to_tensor(a)
    if not _float(t):
        return t.argmax(axis=axis, out=out, keepdims=keepdims)
    i = _filled(t, -np.inf).argmax(axis=axis, keepdims=keepdims)
    return where(_count(t, axis, keepdims) == 0, -1, i)


def ptp(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False) -> Tensor:
    """The range (maximum minus minimum) over ``axis``."""
    _check_out("ptp", out, {})
    t = _to_tensor(a)
    return t.max(axis=axis, keepdims=keepdims) - t.min(axis=axis, keepdims=keepdims)


def average(a: Any, axis: Any = None, weights: Any = None, returned: bool = False, *, keepdims: bool = False) -> Any:
    """numpy's ``average``: the mean, or with ``weights`` the weighted mean
    ``sum(a * w) / sum(w)`` (a 1-d ``weights`` along a single ``axis``); with
    ``returned`` also the sum of the weights."""
    t = _to_tensor(a)
    if weights is None:
        avg = t.mean(axis=axis, keepdims=keepdims)
        if not returned:
            return avg
        axes = _axis_of(axis, t.ndim)
        n = math.prod(t.shape[d] for d in (axes if axes is not None else range(t.ndim)))
        return avg, avg * 0 + n
    w = _to_tensor(weights)
    if w.shape != t.shape:
        if axis is None:
            raise TypeError("Axis must be specified when shapes of a and weights differ.")
        axes = _axis_of(axis, t.ndim)
        if w.ndim != 1 or len(axes) != 1 or w.shape[0] != t.shape[axes[0]]:
            raise ValueError("Shape of weights must be consistent with shape of a along specified axis.")
        w = w.reshape([t.shape[axes[0]] if d == axes[0] else 1 for d in range(t.ndim)])
    from . import broadcast_to

    ft = np.result_type(t.dtype, w.dtype, np.float64 if t.dtype.kind in "biu" else t.dtype)
    scl = broadcast_to(w.astype(ft), t.shape).sum(axis=axis, keepdims=keepdims)
    avg = (t.astype(ft) * w.astype(ft)).sum(axis=axis, keepdims=keepdims) / scl
    return (avg, scl) if returned else avg


def cov(
    m: Any,
    y: Any = None,
    rowvar: bool = True,
    bias: bool = False,
    ddof: Optional[int] = None,
    fweights: Any = None,
    aweights: Any = None,
    *,
    dtype: Any = None,
) -> Tensor:
    """numpy's covariance matrix: variables in rows (columns with ``rowvar=False``),
    the centred product of the observations over ``n - 1`` (``n`` with ``bias``, ``n -
    ddof`` given ``ddof``). Weights are not supported."""
    if fweights is not None or aweights is not None:
        raise NotImplementedError("cov with fweights= or aweights=")
    x = _to_tensor(m)
    if x.ndim > 2:
        raise ValueError("m has more than 2 dimensions")
    ft = np.result_type(x.dtype, np.float64) if dtype is None else np.dtype(dtype)
    x = x.astype(ft)
    if x.ndim < 2:
        x = x.reshape(1, -1)
    elif not rowvar:
        x = x.T
    if y is not None:
        yt = _to_tensor(y).astype(ft)
        if yt.ndim < 2:
            yt = yt.reshape(1, -1)
        if not rowvar and yt.shape[0] != 1:
            yt = yt.T
        from . import concatenate

        x = concatenate([x, yt], axis=0)
    n = x.shape[1]
    if ddof is None:
        ddof = 0 if bias else 1
    centred = x - x.mean(axis=1, keepdims=True)
    c = matmul(centred, centred.T) / builtins.max(n - ddof, 0)
    return c.reshape(()) if x.shape[0] == 1 else c


def corrcoef(x: Any, y: Any = None, rowvar: bool = True, *, dtype: Any = None) -> Tensor:
    """numpy's correlation coefficients: the covariance over the outer product of the
    standard deviations, clipped to [-1, 1] as numpy clips."""
    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim == 0:
        return c / c
    s = sqrt(_diag(c))
    r = c / s.reshape(-1, 1) / s.reshape(1, -1)
    return r.clip(-1, 1)


def _diag(c: Tensor) -> Tensor:
    """The diagonal of a square matrix: a gather along its rows."""
    from . import arange, take_along_axis

    n = c.shape[0]
    return take_along_axis(c, arange(n).reshape(n, 1), axis=1).reshape(n)
