"""``ares.tensor.linalg``: numpy.linalg's names on tensors (QR, SVD and Cholesky are
tiled as in Mars; ``solve`` and ``inv`` go through them)."""

from __future__ import annotations

import numbers
from typing import Any, Tuple

import numpy as np

from .. import _native
from . import Tensor, _axis_of, _to_tensor, where

__all__ = [
    "qr",
    "svd",
    "cholesky",
    "solve",
    "inv",
    "norm",
    "LinAlgError",
    "vector_norm",
    "matrix_norm",
    "svdvals",
    "pinv",
    "matrix_rank",
    "matrix_power",
    "outer",
    "cross",
    "diagonal",
    "trace",
    "matmul",
    "matrix_transpose",
    "tensordot",
    "vecdot",
]

LinAlgError = np.linalg.LinAlgError


def _matrix(a: Any) -> Tensor:
    t = _to_tensor(a)
    if t.ndim != 2:
        raise LinAlgError(f"{t.ndim}-dimensional array given. Array must be two-dimensional")
    if t.dtype.kind != "f":
        t = t.astype(np.float64)
    return t


def qr(a: Any, mode: str = "reduced") -> Tuple[Tensor, Tensor]:
    """``Q, R`` with ``a = Q @ R`` (``mode='reduced'`` only): for an ``m × n`` matrix, ``Q``
    is ``m × k`` with orthonormal columns and ``R`` ``k × n`` upper triangular, ``k =
    min(m, n)``."""
    if mode != "reduced":
        raise NotImplementedError(f"qr with mode={mode!r}; only 'reduced' is supported")
    t = _matrix(a)
    q, r = t._t.qr()
    return Tensor(q), Tensor(r)


def svd(a: Any, full_matrices: bool = True, compute_uv: bool = True) -> Any:
    """``U, S, Vh`` with ``a = U @ diag(S) @ Vh``. Of a square matrix either form; of
    another only the reduced one (pass ``full_matrices=False``, as Mars requires)."""
    t = _matrix(a)
    if full_matrices and compute_uv and t.shape[0] != t.shape[1]:
        raise NotImplementedError(
            "svd with full_matrices=True of a non-square matrix (U or Vh would need a completed basis); "
            "pass full_matrices=False"
        )
    if t.shape[0] < t.shape[1]:
        # A wide matrix through its transpose: a.T = U2 S Vh2 gives a = Vh2.T S U2.T.
        u2, s, vh2 = t.T._t.svd()
        u, v = Tensor(vh2).T, Tensor(u2).T
        return (u, Tensor(s), v) if compute_uv else Tensor(s)
    u, s, v = t._t.svd()
    return (Tensor(u), Tensor(s), Tensor(v)) if compute_uv else Tensor(s)


def cholesky(a: Any) -> Tensor:
    """The lower-triangular ``L`` with ``a = L @ L.T`` (``a`` symmetric positive definite)."""
    return Tensor(_matrix(a)._t.cholesky())


def inv(a: Any) -> Tensor:
    """The inverse of a square matrix (in its float dtype, as numpy keeps it)."""
    t = _matrix(a)
    return _as(Tensor(t._t.inv()), t.dtype)


def solve(a: Any, b: Any) -> Tensor:
    """``x`` with ``a @ x = b`` (``b`` a vector or a matrix)."""
    x = _matrix(a)
    y = _to_tensor(b)
    if y.dtype.kind != "f":
        y = y.astype(np.float64)
    vec = y.ndim == 1
    if vec:
        y = y.reshape(-1, 1)
    out = _as(Tensor(_native.solve(x._t, y._t)), np.result_type(x.dtype, y.dtype))
    return out.reshape(-1) if vec else out


def _as(t: Tensor, dtype: Any) -> Tensor:
    """``t`` in ``dtype`` (float32 stays float32 through linalg, as in numpy)."""
    return t if t.dtype == dtype else t.astype(dtype)


def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Tensor:
    """The 2-norm of vectors (``axis`` an int) or the Frobenius norm (``axis`` None or a
    pair); other ``ord`` values are not supported."""
    t = _to_tensor(x)
    if ord not in (None, 2, "fro") or (ord == 2 and (axis is None and t.ndim == 2 or not isinstance(axis, (numbers.Integral, type(None))))):
        raise NotImplementedError(f"norm with ord={ord!r}; only the 2-norm of vectors and the Frobenius norm")
    if ord == "fro" and isinstance(axis, numbers.Integral):
        raise ValueError("Invalid norm order 'fro' for vectors")
    if t.dtype.kind != "f":
        t = t.astype(np.float64)
    axes = _axis_of(axis, t.ndim)
    return (t * t).sum(axis=None if axes is None else tuple(axes), keepdims=keepdims).sqrt()


def vector_norm(x: Any, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Tensor:
    """The ``ord``-norm of the vectors along ``axis`` (all elements when None): 2
    (Euclidean), 1, ±inf (largest or smallest magnitude), 0 (the count of non-zeros) or
    any other p (``(Σ|x|^p)^(1/p)``)."""
    t = _to_tensor(x)
    if t.dtype.kind != "f":
        t = t.astype(np.float64)
    ax = None if axis is None else (tuple(_axis_of(axis, t.ndim)))
    a = abs(t)
    if ord == 2:
        return (a * a).sum(axis=ax, keepdims=keepdims).sqrt()
    if ord == 1:
        return a.sum(axis=ax, keepdims=keepdims)
    if ord == np.inf:
        return a.max(axis=ax, keepdims=keepdims)
    if ord == -np.inf:
        return a.min(axis=ax, keepdims=keepdims)
    if ord == 0:
        return (t != 0).sum(axis=ax, keepdims=keepdims).astype(t.dtype)
    p = float(ord)
    return ((a**p).sum(axis=ax, keepdims=keepdims)) ** (1.0 / p)


def matrix_norm(x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> Tensor:
    """The ``ord``-norm of a matrix: ``'fro'``, ``'nuc'`` (sum of singular values), ±2
    (largest or smallest singular value), ±1 (largest or smallest column sum of
    magnitudes), ±inf (the same of rows)."""
    t = _to_tensor(x)
    if t.ndim != 2:
        raise NotImplementedError("matrix_norm of a stack of matrices (give one matrix)")
    if t.dtype.kind != "f":
        t = t.astype(np.float64)
    a = abs(t)
    if ord == "fro":
        r = (a * a).sum().sqrt()
    elif ord == "nuc":
        r = svdvals(t).sum()
    elif ord in (2, -2):
        s = svdvals(t)
        r = s.max() if ord == 2 else s.min()
    elif ord in (1, -1):
        c = a.sum(axis=0)
        r = c.max() if ord == 1 else c.min()
    elif ord in (np.inf, -np.inf):
        c = a.sum(axis=1)
        r = c.max() if ord == np.inf else c.min()
    else:
        raise ValueError(f"Invalid norm order {ord!r} for matrices.")
    return r.reshape(1, 1) if keepdims else r


def svdvals(x: Any, /) -> Tensor:
    """The singular values of a matrix, largest first."""
    return svd(x, full_matrices=False, compute_uv=False)


def pinv(a: Any, rcond: Any = None, hermitian: bool = False, *, rtol: Any = None) -> Tensor:
    """The Moore-Penrose pseudo-inverse through the SVD: singular values below ``rtol``
    (default ``max(m, n) · eps``) times the largest are treated as zero."""
    t = _matrix(a)
    m, n = t.shape
    tol = rtol if rtol is not None else (rcond if rcond is not None else max(m, n) * np.finfo(t.dtype).eps)
    u, s, vh = svd(t, full_matrices=False)
    cutoff = s.max() * float(tol)
    sinv = where(s > cutoff, 1.0 / where(s > cutoff, s, 1.0), 0.0)
    return _as((vh.T * sinv.reshape(1, -1)) @ u.T, t.dtype)


def matrix_rank(A: Any, tol: Any = None, hermitian: bool = False, *, rtol: Any = None) -> Tensor:
    """The number of singular values above ``tol`` (default ``max(m, n) · eps`` times the
    largest), as int64."""
    t = _matrix(A)
    s = svdvals(t)
    if tol is None:
        r = rtol if rtol is not None else max(t.shape) * np.finfo(t.dtype).eps
        cutoff = s.max() * float(r)
    else:
        cutoff = float(tol)
    return (s > cutoff).sum()


def matrix_power(a: Any, n: int) -> Tensor:
    """``a`` multiplied by itself ``n`` times (by squaring); ``n < 0`` through the
    inverse, ``n == 0`` the identity."""
    from . import eye

    t = _to_tensor(a)
    if t.ndim != 2 or t.shape[0] != t.shape[1]:
        raise LinAlgError("Last 2 dimensions of the array must be square")
    if not isinstance(n, numbers.Integral):
        raise TypeError("exponent must be an integer")
    if n == 0:
        return eye(t.shape[0], dtype=t.dtype, chunk_size=t.chunks[0][0] if t.chunks[0] else 1)
    if n < 0:
        t, n = inv(t), -n
    result, base = None, t
    while n:
        if n & 1:
            result = base if result is None else result @ base
        n >>= 1
        if n:
            base = base @ base
    return result


def outer(x1: Any, x2: Any, /) -> Tensor:
    """The outer product of two vectors."""
    a, b = _to_tensor(x1), _to_tensor(x2)
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError("outer takes two 1-d tensors")
    return a.reshape(-1, 1) * b.reshape(1, -1)


def cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Tensor:
    """The cross product of 3-vectors along ``axis``."""
    from . import stack

    a, b = _to_tensor(x1), _to_tensor(x2)
    ax = _axis_of(axis, a.ndim)[0]
    if a.shape[ax] != 3 or b.shape[_axis_of(axis, b.ndim)[0]] != 3:
        raise ValueError("cross takes vectors of 3 elements along the axis")

    def comp(t: Tensor, i: int) -> Tensor:
        idx = [slice(None)] * t.ndim
        idx[_axis_of(axis, t.ndim)[0]] = i
        return t[tuple(idx)]

    a0, a1, a2 = (comp(a, i) for i in range(3))
    b0, b1, b2 = (comp(b, i) for i in range(3))
    parts = [a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0]
    out = stack(parts, axis=-1)
    nd = out.ndim
    return out if ax == nd - 1 else out.transpose([d for d in range(nd - 1) if d < ax] + [nd - 1] + [d for d in range(nd - 1) if d >= ax])


def diagonal(x: Any, /, *, offset: int = 0) -> Tensor:
    """Diagonal ``offset`` of each matrix (the last two axes): a gather along the rows."""
    from . import arange, take_along_axis

    t = _to_tensor(x)
    if t.ndim != 2:
        raise NotImplementedError("diagonal of a stack of matrices (give one matrix)")
    n, m = t.shape
    rows = range(max(0, -offset), min(n, m - offset)) if m - offset > 0 else range(0)
    k = len(rows)
    if k == 0:
        return t.reshape(-1)[:0]
    r0 = rows.start
    block = t[r0 : r0 + k]
    cols = (arange(k) + (r0 + offset)).reshape(k, 1)
    return take_along_axis(block, cols, axis=1).reshape(k)


def trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Tensor:
    """The sum of diagonal ``offset`` of each matrix."""
    from . import trace as _trace

    return _trace(x, offset=offset, dtype=dtype)


def matmul(x1: Any, x2: Any, /) -> Tensor:
    """The matrix product (``@``)."""
    return _to_tensor(x1) @ _to_tensor(x2)


def matrix_transpose(x: Any, /) -> Tensor:
    """The last two axes exchanged."""
    from . import matrix_transpose as _mt

    return _mt(x)


def tensordot(x1: Any, x2: Any, /, *, axes: Any = 2) -> Tensor:
    """The tensor contraction over ``axes``."""
    from . import tensordot as _td

    return _td(x1, x2, axes=axes)


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> Tensor:
    """The dot product of vectors along ``axis``."""
    from . import vecdot as _vd

    return _vd(x1, x2, axis=axis)


def __getattr__(name: str) -> Any:
    # A np.linalg function not built here is named as unsupported, not missing.
    if not name.startswith("_") and hasattr(np.linalg, name):
        raise NotImplementedError(f"ares.tensor.linalg.{name} is not supported (numpy.linalg.{name} has no tiled form here yet)")
    raise AttributeError(f"module 'ares.tensor.linalg' has no attribute {name!r}")
