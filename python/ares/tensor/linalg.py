"""``ares.tensor.linalg``: numpy.linalg's names on tensors (QR, SVD and Cholesky are
tiled as in Mars; ``solve`` and ``inv`` by blocked LU; ``det``, ``slogdet`` and
``eigh`` factor the whole matrix in one task). A stack of matrices (``ndim > 2``) is
taken matrix by matrix, each its own tiled computation, as numpy broadcasts them."""

from __future__ import annotations

import functools
import math
import numbers
from typing import Any, Callable, NamedTuple, Tuple

import numpy as np

from .. import _native
from . import _MAX_STACK, Tensor, Unsupported, _axis_of, _check_out, _to_tensor, where

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
    "det",
    "slogdet",
    "eigh",
    "eigvalsh",
    "eig",
    "eigvals",
    "cond",
    "lstsq",
    "multi_dot",
    "tensorinv",
    "tensorsolve",
    "QRResult",
    "SVDResult",
    "SlogdetResult",
    "EighResult",
    "EigResult",
]

LinAlgError = np.linalg.LinAlgError



class QRResult(NamedTuple):
    Q: Tensor
    R: Tensor


class SVDResult(NamedTuple):
    U: Tensor
    S: Tensor
    Vh: Tensor


class SlogdetResult(NamedTuple):
    sign: Tensor
    logabsdet: Tensor


class EighResult(NamedTuple):
    eigenvalues: Tensor
    eigenvectors: Tensor


def _over_stack(fn: Callable[[Tensor], Any], t: Tensor) -> Any:
    """``fn`` of each matrix of a stack (the last two axes), the results stacked with the
    stack's leading shape; tuples of results stack element-wise."""
    from . import stack, zeros

    shape = t.shape[:-2]
    count = math.prod(shape)
    if count > _MAX_STACK:
        raise NotImplementedError(f"a stack of {count} matrices (at most {_MAX_STACK}: each is computed on its own)")
    if count == 0:
        # The results' shapes from one matrix's (lazy, never computed), then empty.
        probe = fn(zeros(t.shape[-2:], dtype=t.dtype))
        empty = lambda r: zeros(shape + r.shape, dtype=r.dtype)  # noqa: E731
        if isinstance(probe, tuple):
            return type(probe)(*map(empty, probe)) if hasattr(probe, "_fields") else tuple(map(empty, probe))
        return empty(probe)
    results = [fn(t[pos]) for pos in np.ndindex(*shape)]

    def join(parts: list) -> Tensor:
        return stack(parts, axis=0).reshape(shape + parts[0].shape)

    first = results[0]
    if isinstance(first, tuple):
        joined = [join([r[i] for r in results]) for i in range(len(first))]
        return type(first)(*joined) if hasattr(first, "_fields") else tuple(joined)
    return join(results)


def _stacked(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Lets a function of one matrix take a stack of them (first argument)."""

    @functools.wraps(fn)
    def wrapper(a: Any, *args: Any, **kwargs: Any) -> Any:
        t = _to_tensor(a)
        if t.ndim > 2:
            return _over_stack(lambda m: fn(m, *args, **kwargs), t)
        return fn(t, *args, **kwargs)

    return wrapper


def _square(a: Any) -> Tensor:
    t = _matrix(a)
    if t.shape[0] != t.shape[1]:
        raise LinAlgError("Last 2 dimensions of the array must be square")
    return t


@_stacked
def slogdet(a: Any) -> SlogdetResult:
    """``(sign, logabsdet)`` of the determinant, 0-d tensors in ``a``'s float dtype
    (singular: ``(0, -inf)``): LU with partial pivoting of the whole matrix in one task.
    Of a complex matrix the sign is complex (of modulus 1) and ``logabsdet`` real."""
    t = _square(a)
    sign, log, _ = t._t.slogdet()
    return SlogdetResult(_as(Tensor(sign), t.dtype), _as(Tensor(log), _real(t.dtype)))


@_stacked
def det(a: Any) -> Tensor:
    """The determinant, a 0-d tensor in ``a``'s float dtype (the product of the LU
    factor's diagonal, as numpy computes it)."""
    t = _square(a)
    return _as(Tensor(t._t.slogdet()[2]), t.dtype)


@_stacked
def eigh(a: Any, UPLO: str = "L") -> EighResult:
    """``(eigenvalues, eigenvectors)`` of a symmetric matrix, read from its lower
    (``UPLO='L'``) or upper triangle: eigenvalues ascending, eigenvectors as columns
    (each determined up to sign, as numpy's). The matrix is decomposed whole in one task."""
    t = _square(a)
    if UPLO not in ("L", "U"):
        raise ValueError("UPLO argument must be 'L' or 'U'")
    # The upper triangle of a Hermitian matrix is the lower one of its adjoint.
    w, v = (t if UPLO == "L" else _adjoint(t))._t.eigh()
    return EighResult(_as(Tensor(w), _real(t.dtype)), _as(Tensor(v), t.dtype))


class EigResult(NamedTuple):
    eigenvalues: Tensor
    eigenvectors: Tensor


@_stacked
def eig(a: Any) -> EigResult:
    """``(eigenvalues, eigenvectors)`` of a general square matrix, eigenvectors as
    columns of unit norm, decomposed whole in one task. Always complex (the Array API's
    rule); numpy gives real arrays when every eigenvalue is real, a dtype known only
    after computing: take ``.real`` then."""
    t = _square(a)
    w, v = t._t.eig()
    return EigResult(Tensor(w), Tensor(v))


def eigvals(a: Any) -> Tensor:
    """The eigenvalues of a general square matrix (see :func:`eig`)."""
    return eig(a).eigenvalues


def eigvalsh(a: Any, UPLO: str = "L") -> Tensor:
    """The eigenvalues of a symmetric matrix, ascending (see :func:`eigh`)."""
    return eigh(a, UPLO).eigenvalues


def cond(x: Any, p: Any = None) -> Tensor:
    """The condition number in the ``p``-norm: the ratio of the extreme singular values
    for ``None``/±2, else ``norm(x, p) · norm(inv(x), p)``."""
    t = _to_tensor(x)
    if t.ndim > 2:
        return _over_stack(lambda m: cond(m, p), t)
    if p is None or p in (2, -2):
        s = svdvals(t)
        return s.max() / s.min() if p != -2 else s.min() / s.max()
    return matrix_norm(t, ord=p) * matrix_norm(inv(t), ord=p)


def lstsq(a: Any, b: Any, rcond: Any = None) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    """``(x, residuals, rank, s)`` minimising ``‖b - a·x‖₂`` through the pseudo-inverse
    (singular values below ``rcond`` times the largest cut, default ``eps · max(m, n)``
    as numpy 2's). ``residuals`` are the squared norms of the columns of ``b - a·x`` when
    ``a`` has full column rank and more rows than columns, else empty, as numpy's; as
    the rank is lazy, that case is decided when the residuals are computed."""
    from . import broadcast_to, zeros

    t = _matrix(a)
    y = _to_tensor(b)
    m, n = t.shape
    if y.shape[0] != m:
        raise LinAlgError("Incompatible dimensions")
    ft = np.result_type(t.dtype, y.dtype, np.float32 if t.dtype == np.float32 else np.float64)
    tol = np.finfo(ft).eps * max(m, n) if rcond is None else float(rcond)
    x = _as(pinv(t, rtol=tol) @ _as(y, ft), ft)
    s = svdvals(t)
    rank = matrix_rank(t, rtol=tol)
    if m > n:
        r = abs(_as(y, ft) - t @ x)
        residuals = (r * r).sum(axis=0)
        residuals = residuals if residuals.ndim else residuals.reshape(1)
        # Empty unless full column rank: a mask that keeps all or none (so the length is
        # known once computed, shown as nan before).
        residuals = residuals[broadcast_to(rank == n, residuals.shape)]
    else:
        residuals = zeros((0,), dtype=_real(ft))
    return x, residuals, rank, s


def multi_dot(arrays: Any, *, out: Any = None) -> Tensor:
    """The product of a sequence of matrices in the cheapest order (the classic
    dynamic programme over the chain's shapes); a leading or trailing vector is a row
    or column, as numpy takes it."""
    _check_out("multi_dot", out, {})
    ts = [_to_tensor(a) for a in arrays]
    if len(ts) < 2:
        raise ValueError("Expecting at least two arrays.")
    first_vec, last_vec = ts[0].ndim == 1, ts[-1].ndim == 1
    if first_vec:
        ts[0] = ts[0].reshape(1, -1)
    if last_vec:
        ts[-1] = ts[-1].reshape(-1, 1)
    dims = [ts[0].shape[0]] + [t.shape[1] for t in ts]
    k = len(ts)
    cost = [[0] * k for _ in range(k)]
    split = [[0] * k for _ in range(k)]
    for length in range(1, k):
        for i in range(k - length):
            j = i + length
            cost[i][j] = None
            for c in range(i, j):
                q = cost[i][c] + cost[c + 1][j] + dims[i] * dims[c + 1] * dims[j + 1]
                if cost[i][j] is None or q < cost[i][j]:
                    cost[i][j], split[i][j] = q, c

    def chain(i: int, j: int) -> Tensor:
        return ts[i] if i == j else chain(i, split[i][j]) @ chain(split[i][j] + 1, j)

    r = chain(0, k - 1)
    if first_vec and last_vec:
        return r.reshape(())
    if first_vec or last_vec:
        return r.reshape(-1)
    return r


def tensorinv(a: Any, ind: int = 2) -> Tensor:
    """The inverse of ``a`` taken as a matrix of its first ``ind`` axes by the rest."""
    t = _to_tensor(a)
    rows, cols = t.shape[:ind], t.shape[ind:]
    if math.prod(rows) != math.prod(cols):
        raise LinAlgError("Last 2 dimensions of the array must be square")
    return inv(t.reshape(math.prod(rows), -1)).reshape(cols + rows)


def tensorsolve(a: Any, b: Any, axes: Any = None) -> Tensor:
    """``x`` with ``tensordot(a, x, x.ndim) = b``."""
    t, y = _to_tensor(a), _to_tensor(b)
    if axes is not None:
        order = list(range(t.ndim))
        for k in axes:
            order.remove(k)
            order.append(k)
        t = t.transpose(order)
    xshape = t.shape[y.ndim :]
    n = math.prod(xshape)
    if math.prod(t.shape) != n * n:
        raise LinAlgError(f"tensorsolve: {t.shape} does not make a square system for a solution of shape {xshape}")
    return solve(t.reshape(n, n), y.reshape(-1)).reshape(xshape)


def _matrix(a: Any) -> Tensor:
    t = _to_tensor(a)
    if t.ndim != 2:
        raise LinAlgError(f"{t.ndim}-dimensional array given. Array must be two-dimensional")
    if t.dtype.kind not in "fc":
        t = t.astype(np.float64)
    return t


@_stacked
def qr(a: Any, mode: str = "reduced") -> QRResult:
    """``Q, R`` with ``a = Q @ R`` (``mode='reduced'`` only): for an ``m × n`` matrix, ``Q``
    is ``m × k`` with orthonormal columns and ``R`` ``k × n`` upper triangular, ``k =
    min(m, n)``."""
    if mode != "reduced":
        raise NotImplementedError(f"qr with mode={mode!r}; only 'reduced' is supported")
    t = _matrix(a)
    q, r = t._t.qr()
    return QRResult(Tensor(q), Tensor(r))


@_stacked
def svd(a: Any, full_matrices: bool = True, compute_uv: bool = True) -> Any:
    """``U, S, Vh`` with ``a = U @ diag(S) @ Vh``. ``full_matrices=False`` (Mars' form)
    is tiled for a tall matrix (TSQR); ``full_matrices=True`` of a non-square matrix
    completes ``U`` (``m × m``) and ``Vh`` (``n × n``) by decomposing the matrix whole in
    one task, so it must fit one worker."""
    t = _matrix(a)
    if full_matrices and compute_uv and t.shape[0] != t.shape[1]:
        u, s, vh = t._t.svd_full()
        return SVDResult(Tensor(u), Tensor(s), Tensor(vh))
    if t.shape[0] < t.shape[1] and t.dtype.kind != "c":
        # A wide matrix through its transpose: a.T = U2 S Vh2 gives a = Vh2.T S U2.T.
        u2, s, vh2 = t.T._t.svd()
        u, v = Tensor(vh2).T, Tensor(u2).T
        return SVDResult(u, Tensor(s), v) if compute_uv else Tensor(s)
    u, s, v = t._t.svd()
    return SVDResult(Tensor(u), Tensor(s), Tensor(v)) if compute_uv else Tensor(s)


@_stacked
def cholesky(a: Any, /, *, upper: bool = False) -> Tensor:
    """The lower-triangular ``L`` with ``a = L @ L.H`` (``a`` Hermitian positive
    definite), or with ``upper=True`` the upper ``U = L.H`` with ``a = U.H @ U``."""
    t = _matrix(a)
    if t.shape[0] != t.shape[1]:
        raise LinAlgError("Last 2 dimensions of the array must be square")
    low = Tensor(t._t.cholesky())
    return _adjoint(low) if upper else low


@_stacked
def inv(a: Any) -> Tensor:
    """The inverse of a square matrix (in its float dtype, as numpy keeps it)."""
    t = _matrix(a)
    return _as(Tensor(t._t.inv()), t.dtype)


def solve(a: Any, b: Any) -> Tensor:
    """``x`` with ``a @ x = b`` (``b`` a vector or a matrix). Stacks broadcast as numpy
    2's: ``b`` of one dimension is a vector for every matrix, else ``(..., M, K)``."""
    x = _to_tensor(a)
    y = _to_tensor(b)
    if x.ndim > 2 or y.ndim > 2:
        return _solve_stacked(x, y)
    x = _matrix(x)
    if y.dtype.kind not in "fc":
        y = y.astype(np.float64)
    vec = y.ndim == 1
    if vec:
        y = y.reshape(-1, 1)
    out = _as(Tensor(_native.solve(x._t, y._t)), np.result_type(x.dtype, y.dtype))
    return out.reshape(-1) if vec else out


def _solve_stacked(x: Tensor, y: Tensor) -> Tensor:
    from . import _pairs_over_stack

    if x.ndim < 2:
        raise LinAlgError(f"{x.ndim}-dimensional array given. Array must be at least two-dimensional")
    # A vector b is one for every matrix (numpy 2); else b's stack broadcasts with a's.
    y_core = 1 if y.ndim == 1 else 2
    core = (x.shape[-1],) if y_core == 1 else (x.shape[-1], y.shape[-1])
    return _pairs_over_stack(
        solve, x, y, y_core, core, np.result_type(x.dtype, y.dtype, np.float64),
        "a stack of {count} systems (at most {limit}: each is solved on its own)",
    )


def _as(t: Tensor, dtype: Any) -> Tensor:
    """``t`` in ``dtype`` (float32 stays float32 through linalg, as in numpy)."""
    return t if t.dtype == dtype else t.astype(dtype)


def _real(dtype: Any) -> np.dtype:
    """The real dtype of ``dtype``'s parts (float32 of complex64); a real one itself."""
    return np.empty(0, dtype=dtype).real.dtype


def _adjoint(t: Tensor) -> Tensor:
    """The conjugate transpose of each matrix (the transpose of a real one)."""
    from . import matrix_transpose

    m = matrix_transpose(t)
    return m.conj() if m.dtype.kind == "c" else m


def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Tensor:
    """numpy's ``norm``: a vector norm (1-d, or ``axis`` an int; ``ord=None`` is the
    2-norm of all elements), or a matrix norm (2-d, or ``axis`` a pair; ``ord=None`` is
    Frobenius); see :func:`vector_norm` and :func:`matrix_norm` for the orders."""
    t = _to_tensor(x)
    if axis is None:
        if ord is None:
            r = vector_norm(t)
            return r.reshape((1,) * t.ndim) if keepdims else r
        if t.ndim == 1:
            return vector_norm(t, ord=ord, keepdims=keepdims)
        if t.ndim == 2:
            return matrix_norm(t, ord=ord, keepdims=keepdims)
        raise ValueError("Improper number of dimensions to norm.")
    axes = _axis_of(axis, t.ndim)
    if len(axes) == 1:
        if isinstance(ord, str):
            raise ValueError(f"Invalid norm order '{ord}' for vectors")
        return vector_norm(t, axis=axes[0], ord=2 if ord is None else ord, keepdims=keepdims)
    if len(axes) == 2:
        if axes[0] == axes[1]:
            raise ValueError("Duplicate axes given.")
        rest = [d for d in range(t.ndim) if d not in axes]
        m = t.transpose(rest + list(axes)) if rest or list(axes) != [0, 1] else t
        r = matrix_norm(m, ord="fro" if ord is None else ord)
        if keepdims:
            shape = list(t.shape)
            for d in axes:
                shape[d] = 1
            r = r.reshape(tuple(shape))
        return r
    raise ValueError("Improper number of dimensions to norm.")


def vector_norm(x: Any, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Tensor:
    """The ``ord``-norm of the vectors along ``axis`` (all elements when None): 2
    (Euclidean), 1, ±inf (largest or smallest magnitude), 0 (the count of non-zeros) or
    any other p (``(Σ|x|^p)^(1/p)``)."""
    t = _to_tensor(x)
    if t.dtype.kind not in "fc":
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
    if t.ndim > 2:
        r = _over_stack(lambda m: matrix_norm(m, ord=ord), t)
        return r.reshape(r.shape + (1, 1)) if keepdims else r
    if t.ndim != 2:
        raise ValueError("matrix_norm needs at least two dimensions")
    if t.dtype.kind not in "fc":
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


def _cutoff(s: Tensor, tol: Any) -> Tensor:
    """Singular values at or below which a stack's matrices count as rank-deficient:
    ``tol`` (a number, or an array over the stack) times each matrix's largest one,
    kept as a trailing axis of 1 to compare with ``s``."""
    from . import asarray

    rel = tol if isinstance(tol, Tensor) else asarray(np.asarray(tol, dtype=s.dtype))
    return s.max(axis=-1, keepdims=True) * rel.reshape(rel.shape + (1,))


def _default_rtol(t: Tensor) -> float:
    return max(t.shape[-2:]) * np.finfo(t.dtype).eps


_UNSET = object()


def pinv(a: Any, rcond: Any = None, hermitian: bool = False, *, rtol: Any = _UNSET) -> Tensor:
    """The Moore-Penrose pseudo-inverse through the SVD: singular values at or below a
    cutoff times the largest are treated as zero. The cutoff is numpy's: ``rcond``, else
    ``rtol`` (``None`` meaning ``max(m, n) · eps``), else 1e-15; a number or an array over
    the stack. Stacks go matrix by matrix."""
    t = _to_tensor(a)
    if t.ndim < 2:
        raise LinAlgError(f"{t.ndim}-dimensional array given. Array must be at least two-dimensional")
    if t.dtype.kind not in "fc":
        t = t.astype(np.float64)
    if rcond is not None:
        tol = rcond
    elif rtol is _UNSET:
        tol = 1e-15
    else:
        tol = _default_rtol(t) if rtol is None else rtol
    if 0 in t.shape:
        from . import zeros

        return zeros(t.shape[:-2] + (t.shape[-1], t.shape[-2]), dtype=t.dtype)
    u, s, vh = svd(t, full_matrices=False)
    keep = s > _cutoff(s, tol)
    sinv = where(keep, 1.0 / where(keep, s, 1.0), 0.0)
    return _as((_adjoint(vh) * sinv.reshape(sinv.shape[:-1] + (1, sinv.shape[-1]))) @ _adjoint(u), t.dtype)


def matrix_rank(A: Any, tol: Any = None, hermitian: bool = False, *, rtol: Any = None) -> Tensor:
    """The number of singular values above ``tol`` (absolute), or above ``rtol``
    (default ``max(m, n) · eps``) times the largest, as int64 (per matrix of a stack)."""
    from . import asarray

    t = _to_tensor(A)
    if t.ndim < 2:
        raise LinAlgError(f"{t.ndim}-dimensional array given. Array must be at least two-dimensional")
    if t.dtype.kind not in "fc":
        t = t.astype(np.float64)
    if 0 in t.shape:
        from . import zeros

        return zeros(t.shape[:-2], dtype=np.int64)
    s = svdvals(t)
    if tol is None:
        cutoff = _cutoff(s, rtol if rtol is not None else _default_rtol(t))
    else:
        lim = tol if isinstance(tol, Tensor) else asarray(np.asarray(tol, dtype=s.dtype))
        cutoff = lim.reshape(lim.shape + (1,))
    return (s > cutoff).sum(axis=-1)


def matrix_power(a: Any, n: int) -> Tensor:
    """``a`` multiplied by itself ``n`` times (by squaring); ``n < 0`` through the
    inverse, ``n == 0`` the identity."""
    from . import eye

    t = _to_tensor(a)
    if t.ndim < 2 or t.shape[-1] != t.shape[-2]:
        raise LinAlgError("Last 2 dimensions of the array must be square")
    if not isinstance(n, numbers.Integral):
        raise TypeError("exponent must be an integer")
    if t.ndim > 2:
        return _over_stack(lambda m: matrix_power(m, n), t)
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

    from . import broadcast_arrays

    a, b = _to_tensor(x1), _to_tensor(x2)
    if a.shape[_axis_of(axis, a.ndim)[0]] != 3 or b.shape[_axis_of(axis, b.ndim)[0]] != 3:
        raise ValueError("cross takes vectors of 3 elements along the axis")
    a, b = broadcast_arrays(a, b)
    ax = _axis_of(axis, a.ndim)[0]

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
    if t.ndim > 2:
        return _over_stack(lambda mat: diagonal(mat, offset=offset), t)
    if t.ndim < 2:
        raise ValueError("diagonal needs at least two dimensions")
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
    # A np.linalg function not built here is named as unsupported (an AttributeError too,
    # so hasattr answers False).
    if not name.startswith("_") and hasattr(np.linalg, name):
        raise Unsupported(f"ares.tensor.linalg.{name} is not supported (numpy.linalg.{name} has no tiled form here yet)")
    raise AttributeError(f"module 'ares.tensor.linalg' has no attribute {name!r}")
