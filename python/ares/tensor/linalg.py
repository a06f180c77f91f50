"""``ares.tensor.linalg``: numpy.linalg's names on tensors (QR, SVD and Cholesky are
tiled as in Mars; ``solve`` and ``inv`` go through them)."""

from __future__ import annotations

import numbers
from typing import Any, Tuple

import numpy as np

from .. import _native
from . import Tensor, _axis_of, _to_tensor

__all__ = ["qr", "svd", "cholesky", "solve", "inv", "norm", "LinAlgError"]

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


def __getattr__(name: str) -> Any:
    # A np.linalg function not built here is named as unsupported, not missing.
    if not name.startswith("_") and hasattr(np.linalg, name):
        raise NotImplementedError(f"ares.tensor.linalg.{name} is not supported (numpy.linalg.{name} has no tiled form here yet)")
    raise AttributeError(f"module 'ares.tensor.linalg' has no attribute {name!r}")
