"""The Array API standard's functions (and numpy's of the same kind) that are built from
the tiled operations already there: slicing, joining, broadcasting, masks and element-wise
arithmetic. Each returns a lazy tensor and runs as chunk tasks; none fetches.

Kept apart from ``__init__`` (which re-exports everything here) so that the operations
the engine computes and the compositions over them read separately.
"""

from __future__ import annotations

import builtins
import numbers
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from . import (
    Tensor,
    _axis_of,
    _check_out,
    _shape_of,
    _to_tensor,
    arange,
    atan2,
    concatenate,
    full,
    rint,
    sum,
    transpose,
    where,
)

__all__ = [
    "__array_namespace_info__",
    "astype",
    "broadcast_arrays",
    "broadcast_to",
    "can_cast",
    "concat",
    "conj",
    "conjugate",
    "angle",
    "iscomplexobj",
    "isrealobj",
    "diff",
    "finfo",
    "flip",
    "from_dlpack",
    "iinfo",
    "imag",
    "isdtype",
    "matrix_transpose",
    "meshgrid",
    "moveaxis",
    "nonzero",
    "permute_dims",
    "real",
    "repeat",
    "result_type",
    "roll",
    "round",
    "around",
    "tile",
    "trace",
    "tril",
    "triu",
    "unstack",
    "vecdot",
    "diag",
    "count_nonzero",
    "cumsum",
    "cumprod",
    "cumulative_sum",
    "cumulative_prod",
    "take",
    "take_along_axis",
    "pad",
]

_DEVICE = "cpu"


def _check_device(device: Any) -> None:
    """The one device is the CPUs of the cluster: ``"cpu"`` (or None) is accepted."""
    if device is not None and device != _DEVICE:
        raise ValueError(f"device {device!r} is not supported; ares tensors live on 'cpu'")


# ---------------------------------------------------------------- inspection


class _Info:
    """What ``__array_namespace_info__()`` answers: one device, numpy's default dtypes."""

    def capabilities(self) -> dict:
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}

    def default_device(self) -> str:
        return _DEVICE

    def devices(self) -> List[str]:
        return [_DEVICE]

    def default_dtypes(self, *, device: Any = None) -> dict:
        _check_device(device)
        return {
            "real floating": np.dtype(np.float64),
            "complex floating": np.dtype(np.complex128),
            "integral": np.dtype(np.int64),
            "indexing": np.dtype(np.int64),
        }

    def dtypes(self, *, device: Any = None, kind: Any = None) -> dict:
        _check_device(device)
        from . import _SUPPORTED

        names = [n for n in _SUPPORTED if kind is None or isdtype(np.dtype(n), kind)]
        return {n: np.dtype(n) for n in names}


def __array_namespace_info__() -> _Info:
    """The Array API's inspection object for this namespace."""
    return _Info()


def _dtype_of(x: Any) -> Any:
    """A tensor's (or array's) dtype; a dtype or Python scalar as given."""
    return x.dtype if isinstance(x, (Tensor, np.ndarray)) else x


def result_type(*arrays_and_dtypes: Any) -> np.dtype:
    """numpy's ``result_type`` of tensors, arrays, dtypes and Python scalars."""
    if not arrays_and_dtypes:
        raise ValueError("at least one array or dtype is required")
    return np.result_type(*(_dtype_of(x) for x in arrays_and_dtypes))


def can_cast(from_: Any, to: Any) -> builtins.bool:
    """Whether ``from_`` (a dtype or a tensor's) casts to ``to`` safely (numpy's rule)."""
    return builtins.bool(np.can_cast(_dtype_of(from_), to))


class finfo_object:
    """The standard's ``finfo``: its fields as Python numbers (numpy's are numpy
    scalars); numpy's other attributes (``epsneg``, ``nmant``, ...) as numpy has them."""

    def __init__(self, f: np.finfo) -> None:
        self._f = f
        self.bits = int(f.bits)
        self.eps = float(f.eps)
        self.max = float(f.max)
        self.min = float(f.min)
        self.smallest_normal = float(f.smallest_normal)
        self.dtype = f.dtype

    def __getattr__(self, name: str) -> Any:
        return getattr(self._f, name)

    def __repr__(self) -> str:
        return repr(self._f)


def finfo(type: Any) -> finfo_object:  # noqa: A002 - the standard's name
    """numpy's ``finfo`` of a float dtype or a tensor's, with Python floats as the
    standard asks."""
    return finfo_object(np.finfo(_dtype_of(type)))


def iinfo(type: Any) -> np.iinfo:  # noqa: A002
    """numpy's ``iinfo`` of an integer dtype or a tensor's."""
    return np.iinfo(_dtype_of(type))


_KINDS = {
    "bool": "b",
    "signed integer": "i",
    "unsigned integer": "u",
    "integral": "iu",
    "real floating": "f",
    "complex floating": "c",
    "numeric": "iufc",
}


def isdtype(dtype: Any, kind: Any) -> builtins.bool:
    """Whether ``dtype`` is of ``kind``: a dtype, a kind name (``"integral"``, ``"real
    floating"``, ...) or a tuple of either."""
    if isinstance(kind, tuple):
        return builtins.any(isdtype(dtype, k) for k in kind)
    if isinstance(dtype, Tensor):
        raise TypeError("isdtype takes a dtype, not a tensor (use x.dtype)")
    dtype = np.dtype(dtype)
    if isinstance(kind, str):
        if kind not in _KINDS:
            raise ValueError(f"unknown dtype kind {kind!r} (one of {', '.join(_KINDS)})")
        return dtype.kind in _KINDS[kind]
    return dtype == np.dtype(kind)


def astype(x: Any, dtype: Any, /, *, copy: builtins.bool = True, device: Any = None) -> Tensor:
    """``x`` converted to ``dtype`` (a tensor is immutable, so ``copy`` changes nothing)."""
    _check_device(device)
    return _to_tensor(x).astype(dtype)


def from_dlpack(x: Any, /, *, device: Any = None, copy: Any = None) -> Tensor:
    """A tensor of the elements of any DLPack producer on the CPU (numpy, torch, ...),
    copied once into chunks."""
    _check_device(device)
    return _to_tensor(np.from_dlpack(x))


# ---------------------------------------------------------------- element-wise


def round(x: Any, decimals: int = 0) -> Tensor:  # noqa: A001 - numpy's and the standard's name
    """Round half to even, as numpy: integers unchanged (for ``decimals >= 0``), floats
    through ``rint(x * 10**decimals) / 10**decimals`` as numpy computes it."""
    t = _to_tensor(x)
    if t.dtype.kind in "biu":
        if decimals >= 0:
            return t
        raise NotImplementedError("round of integers with negative decimals")
    if decimals == 0:
        return rint(t)
    scale = 10.0**decimals if decimals >= 0 else 10.0 ** (-decimals)
    return rint(t * scale) / scale if decimals >= 0 else rint(t / scale) * scale


around = round


def conj(x: Any) -> Tensor:
    """The complex conjugate (a real tensor is its own)."""
    t = _to_tensor(x)
    return Tensor(t._t.unary("conj")) if t.dtype.kind == "c" else t


conjugate = conj


def real(x: Any) -> Tensor:
    """The real part: float32 of complex64, float64 of complex128; a real tensor itself."""
    t = _to_tensor(x)
    return Tensor(t._t.unary("real")) if t.dtype.kind == "c" else t


def imag(x: Any) -> Tensor:
    """The imaginary part (real-typed, as ``real``); zeros of a real tensor's dtype."""
    t = _to_tensor(x)
    if t.dtype.kind == "b":
        raise TypeError("imag is not supported for booleans")
    return Tensor(t._t.unary("imag"))


def angle(z: Any, deg: builtins.bool = False) -> Tensor:
    """The argument of each element (``atan2(imag, real)``; radians unless ``deg``)."""
    t = _to_tensor(z)
    if t.dtype.kind != "c":
        t = t.astype(np.complex128 if t.dtype != np.float32 else np.complex64)
    a = atan2(imag(t), real(t))
    return a * (180.0 / np.pi) if deg else a


def iscomplexobj(x: Any) -> builtins.bool:
    """Whether ``x`` has a complex dtype."""
    return _dtype_of(x).kind == "c" if isinstance(x, (Tensor, np.ndarray)) else isinstance(x, complex)


def isrealobj(x: Any) -> builtins.bool:
    """Whether ``x`` has no complex dtype."""
    return not iscomplexobj(x)


# ---------------------------------------------------------------- manipulation


def permute_dims(x: Any, /, axes: Sequence[int]) -> Tensor:
    """Axes permuted: output dimension ``d`` is ``x``'s ``axes[d]``."""
    return transpose(x, axes)


def matrix_transpose(x: Any, /) -> Tensor:
    """The last two axes exchanged (a stack of matrices transposed)."""
    t = _to_tensor(x)
    if t.ndim < 2:
        raise ValueError("matrix_transpose needs at least two dimensions")
    return t.swapaxes(-1, -2)


def concat(arrays: Sequence[Any], /, *, axis: Optional[int] = 0) -> Tensor:
    """Tensors joined along ``axis`` (``None``: flattened first)."""
    return concatenate(arrays, axis=axis)


def moveaxis(x: Any, source: Any, destination: Any, /) -> Tensor:
    """Axes moved to new positions, the others keeping their order (numpy's)."""
    t = _to_tensor(x)
    src = _axis_of(source, t.ndim)
    dst = _axis_of(destination, t.ndim)
    if len(src) != len(dst):
        raise ValueError("source and destination must have the same number of elements")
    order = [a for a in range(t.ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return t.transpose(order)


def flip(x: Any, /, *, axis: Any = None) -> Tensor:
    """Elements in reverse order along ``axis`` (every axis by default)."""
    t = _to_tensor(x)
    axes = _axis_of(axis, t.ndim)
    axes = range(t.ndim) if axes is None else axes
    index = [slice(None)] * t.ndim
    for a in axes:
        index[a] = slice(None, None, -1)
    return t[tuple(index)] if t.ndim else t


def roll(x: Any, /, shift: Any, *, axis: Any = None) -> Tensor:
    """Elements shifted along ``axis`` (cyclically); without ``axis`` over the flattened
    tensor, keeping the shape."""
    t = _to_tensor(x)
    if axis is None:
        shape = t._known_shape("roll")
        return roll(t.reshape(-1), shift, axis=0).reshape(shape)
    shifts = [shift] if isinstance(shift, numbers.Integral) else list(shift)
    axes = [axis] if isinstance(axis, numbers.Integral) else list(axis)
    if len(shifts) == 1 and len(axes) > 1:
        shifts = shifts * len(axes)
    if len(shifts) != len(axes):
        raise ValueError("shift and axis must have the same length")
    for s, a in zip(shifts, axes):
        a = _axis_of(a, t.ndim)[0]
        n = t._known_shape("roll")[a]
        k = int(s) % n if n else 0
        if k == 0:
            continue
        head = [slice(None)] * t.ndim
        tail = [slice(None)] * t.ndim
        head[a], tail[a] = slice(n - k, None), slice(None, n - k)
        t = concatenate([t[tuple(head)], t[tuple(tail)]], axis=a)
    return t


def broadcast_to(x: Any, /, shape: Any) -> Tensor:
    """``x`` repeated to ``shape`` by numpy's broadcasting rules (lazy: the chunk tasks
    read the broadcast operand, nothing is materialised before)."""
    t = _to_tensor(x)
    shape = _shape_of(shape)
    if np.broadcast_shapes(t._known_shape("broadcast_to"), shape) != shape:
        raise ValueError(f"operands could not be broadcast from shape {t.shape} to {shape}")
    if t.shape == shape:
        return t
    # `where` over an all-true mask keeps every bit (NaN payloads, signed zeros).
    return where(full(shape, True, chunk_size=_broadcast_chunks(t, shape)), t, t)


def _broadcast_chunks(t: Tensor, shape: Tuple[int, ...]) -> Tuple[int, ...]:
    """Chunk sizes for a broadcast result: ``t``'s along its own axes, whole new axes."""
    own = [c[0] if c else 1 for c in t.chunks]
    lead = len(shape) - len(own)
    out = []
    for i, n in enumerate(shape):
        j = i - lead
        out.append(own[j] if j >= 0 and t.shape[j] == n else builtins.max(n, 1))
    return tuple(out)


def broadcast_arrays(*arrays: Any) -> List[Tensor]:
    """The tensors broadcast to their common shape."""
    ts = [_to_tensor(a) for a in arrays]
    shape = np.broadcast_shapes(*(t._known_shape("broadcast_arrays") for t in ts))
    return [broadcast_to(t, shape) for t in ts]


def repeat(x: Any, repeats: Any, /, *, axis: Optional[int] = None) -> Tensor:
    """Each element repeated ``repeats`` times along ``axis`` (flattened first when None):
    one count for all (a broadcast), or a count per element (a gather of positions made
    from the counts; counts given as a tensor are computed first, as the result's length
    depends on them)."""
    from . import take

    t = _to_tensor(x)
    if axis is None:
        t, axis = t.reshape(-1), 0
    a = _axis_of(axis, t.ndim)[0]
    shape = list(t._known_shape("repeat"))
    if not isinstance(repeats, numbers.Integral):
        r = np.asarray(repeats.fetch() if isinstance(repeats, Tensor) else repeats)
        if r.dtype.kind not in "iub":
            raise TypeError(f"Cannot cast repeats from dtype {r.dtype} to int64 safely")
        if builtins.bool((r < 0).any()):
            raise ValueError("repeats may not contain negative values")
        if r.ndim == 0 or r.size == 1:
            repeats = int(r.reshape(-1)[0])
        elif r.ndim == 1 and r.size == shape[a]:
            return take(t, np.repeat(np.arange(shape[a], dtype=np.int64), r), axis=a)
        else:
            raise ValueError(f"operands could not be broadcast together with shape ({shape[a]},) ({r.size},)")
    wide = broadcast_to(t.reshape(shape[: a + 1] + [1] + shape[a + 1 :]), shape[: a + 1] + [repeats] + shape[a + 1 :])
    return wide.reshape(shape[:a] + [shape[a] * repeats] + shape[a + 1 :])


def tile(x: Any, repetitions: Any, /) -> Tensor:
    """``x`` repeated ``repetitions`` times along each axis (numpy's ``tile``)."""
    t = _to_tensor(x)
    reps = [int(repetitions)] if isinstance(repetitions, numbers.Integral) else [int(r) for r in repetitions]
    if builtins.any(r < 0 for r in reps):
        raise ValueError("negative dimensions are not allowed")
    n = builtins.max(len(reps), t.ndim)
    reps = [1] * (n - len(reps)) + reps
    shape = [1] * (n - t.ndim) + list(t._known_shape("tile"))
    interleaved = [d for s in shape for d in (1, s)]
    wide = broadcast_to(t.reshape(interleaved), [d for r, s in zip(reps, shape) for d in (r, s)])
    return wide.reshape([r * s for r, s in zip(reps, shape)])


def unstack(x: Any, /, *, axis: int = 0) -> Tuple[Tensor, ...]:
    """The slices of ``x`` along ``axis``, as a tuple."""
    t = _to_tensor(x)
    a = _axis_of(axis, t.ndim)[0]
    index = [slice(None)] * t.ndim
    out = []
    for i in range(t._known_shape("unstack")[a]):
        index[a] = i
        out.append(t[tuple(index)])
    return tuple(out)


def meshgrid(*arrays: Any, indexing: str = "xy", sparse: builtins.bool = False) -> List[Tensor]:
    """Coordinate tensors from 1-d coordinate vectors (``indexing='xy'`` or ``'ij'``)."""
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    ts = [_to_tensor(a).reshape(-1) for a in arrays]
    n = len(ts)
    shapes = [t.shape[0] for t in ts]
    out = []
    for i, t in enumerate(ts):
        s = [1] * n
        s[i] = shapes[i]
        if indexing == "xy" and n >= 2 and i < 2:
            s[0], s[1] = s[1], s[0]
        out.append(t.reshape(s))
    if sparse:
        return out
    full_shape = list(shapes)
    if indexing == "xy" and n >= 2:
        full_shape[0], full_shape[1] = full_shape[1], full_shape[0]
    return [broadcast_to(t, full_shape) for t in out]


# ---------------------------------------------------------------- triangles and diagonals


def _position_mask(shape: Tuple[int, ...], k: int, keep: str) -> Tensor:
    """True where column − row ``<= k`` (``keep='lower'``) or ``>= k`` (``'upper'``) over the
    last two axes, lazily from two ranges."""
    n, m = shape[-2], shape[-1]
    rows = arange(n).reshape(n, 1)
    cols = arange(m).reshape(1, m)
    return (cols - rows <= k) if keep == "lower" else (cols - rows >= k)


def tril(x: Any, /, *, k: int = 0) -> Tensor:
    """The lower triangle of each matrix (on and below diagonal ``k``), zeros elsewhere."""
    t = _to_tensor(x)
    if t.ndim < 2:
        raise ValueError("tril needs at least two dimensions")
    return where(_position_mask(t._known_shape("tril"), k, "lower"), t, _zero(t))


def triu(x: Any, /, *, k: int = 0) -> Tensor:
    """The upper triangle of each matrix (on and above diagonal ``k``), zeros elsewhere."""
    t = _to_tensor(x)
    if t.ndim < 2:
        raise ValueError("triu needs at least two dimensions")
    return where(_position_mask(t._known_shape("triu"), k, "upper"), t, _zero(t))


def _zero(t: Tensor) -> Tensor:
    return _to_tensor(np.zeros((), t.dtype))


def _diagonal_mask(n: int, m: int, offset: int) -> Tensor:
    return arange(m).reshape(1, m) - arange(n).reshape(n, 1) == offset


def trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Tensor:
    """The sum along diagonal ``offset`` of each matrix (the last two axes)."""
    t = _to_tensor(x)
    if t.ndim < 2:
        raise ValueError("trace needs at least two dimensions")
    n, m = t._known_shape("trace")[-2:]
    on = where(_diagonal_mask(n, m, offset), t, _zero(t))
    return sum(on, axis=(-2, -1), dtype=dtype)


def diag(v: Any, k: int = 0) -> Tensor:
    """numpy's ``diag`` of a vector: the square matrix with ``v`` on diagonal ``k``. (Of a
    matrix, numpy's extraction is not supported: its length comes from a mask here.)"""
    t = _to_tensor(v)
    if t.ndim != 1:
        raise NotImplementedError("diag of a matrix (extracting a diagonal); use trace or a mask")
    m = t._known_shape("diag")[0]
    n = m + builtins.abs(k)
    # The diagonal's element i sits in row i (k >= 0) or in column i (k < 0): lay v along
    # that axis, padded to n, and let the diagonal mask pick it.
    padded = concatenate([t, full(builtins.abs(k), 0, dtype=t.dtype)])
    along = padded.reshape(n, 1) if k >= 0 else padded.reshape(1, n)
    return where(_diagonal_mask(n, n, k), broadcast_to(along, (n, n)), _zero(t))


# ---------------------------------------------------------------- searching and counting


def nonzero(x: Any, /) -> Tuple[Tensor, ...]:
    """The indices of the non-zero elements, one int64 tensor per axis, row-major (their
    length is known once computed, as for a boolean mask)."""
    t = _to_tensor(x)
    if t.ndim == 0:
        raise ValueError("nonzero of a 0-d tensor is not defined; use atleast_1d (numpy 2 refuses it too)")
    mask = t if t.dtype == np.bool_ else t != 0
    shape = t._known_shape("nonzero")
    out = []
    for a, n in enumerate(shape):
        s = [1] * len(shape)
        s[a] = n
        out.append(broadcast_to(arange(n).reshape(s), shape)[mask])
    return tuple(out)


def count_nonzero(x: Any, axis: Any = None, *, keepdims: builtins.bool = False) -> Tensor:
    """The number of non-zero elements (over ``axis``), as int64."""
    t = _to_tensor(x)
    return sum(t != 0 if t.dtype != np.bool_ else t, axis=axis, keepdims=keepdims)


# ---------------------------------------------------------------- linear algebra


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> Tensor:
    """The dot product of vectors along ``axis`` (broadcast over the others), ``x1``
    conjugated: ``sum(conj(x1) * x2)``."""
    a, b = _to_tensor(x1), _to_tensor(x2)
    if a.shape[axis] != b.shape[axis]:
        raise ValueError(f"vecdot: axis {axis} has {a.shape[axis]} and {b.shape[axis]} elements")
    # The operands' promoted dtype, as numpy's vecdot (sum alone would widen integers).
    return sum(conj(a) * b, axis=axis, dtype=np.result_type(a.dtype, b.dtype))


# ---------------------------------------------------------------- differences


def diff(x: Any, /, n: int = 1, *, axis: int = -1, prepend: Any = None, append: Any = None) -> Tensor:
    """The ``n``-th discrete difference along ``axis`` (booleans: ``!=``, as numpy)."""
    t = _to_tensor(x)
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n}")
    if t.ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    a = _axis_of(axis, t.ndim)[0]
    parts = []
    for extra in (prepend, t, append):
        if extra is None:
            continue
        e = _to_tensor(extra)
        if e.ndim == 0:
            shape = list(t.shape)
            shape[a] = 1
            e = broadcast_to(e, shape)
        parts.append(e)
    if len(parts) > 1:
        t = concatenate(parts, axis=a)
    for _ in range(n):
        m = t._known_shape("diff")[a]
        hi = [slice(None)] * t.ndim
        lo = [slice(None)] * t.ndim
        hi[a], lo[a] = slice(1, None), slice(None, builtins.max(m - 1, 0))
        upper, lower = t[tuple(hi)], t[tuple(lo)]
        t = upper != lower if t.dtype == np.bool_ else upper - lower
    return t


# ---------------------------------------------------------------- running sums and products


def cumsum(a: Any, axis: Optional[int] = None, dtype: Any = None, out: Any = None) -> Tensor:
    """numpy's ``cumsum``: see :meth:`Tensor.cumsum`."""
    return _to_tensor(a).cumsum(axis=axis, dtype=dtype, out=out)


def cumprod(a: Any, axis: Optional[int] = None, dtype: Any = None, out: Any = None) -> Tensor:
    """numpy's ``cumprod``: see :meth:`Tensor.cumprod`."""
    return _to_tensor(a).cumprod(axis=axis, dtype=dtype, out=out)


def cumulative_sum(x: Any, /, *, axis: Optional[int] = None, dtype: Any = None, include_initial: builtins.bool = False) -> Tensor:
    """The Array API's running sum: ``axis`` may be omitted only for 1-d input;
    ``include_initial`` starts with the sum of nothing (0)."""
    return _cumulative(x, "cumsum", 0, axis, dtype, include_initial)


def cumulative_prod(x: Any, /, *, axis: Optional[int] = None, dtype: Any = None, include_initial: builtins.bool = False) -> Tensor:
    """The Array API's running product (``include_initial`` starts with 1)."""
    return _cumulative(x, "cumprod", 1, axis, dtype, include_initial)


def _cumulative(x: Any, name: str, identity: int, axis: Any, dtype: Any, include_initial: builtins.bool) -> Tensor:
    t = _to_tensor(x)
    if axis is None:
        if t.ndim > 1:
            raise ValueError(f"{name}: axis must be given for a tensor of {t.ndim} dimensions")
        if t.ndim == 0:
            raise ValueError(f"{name} of a 0-d tensor")
        axis = 0
    r = getattr(t, name)(axis=axis, dtype=dtype)
    if not include_initial:
        return r
    a = _axis_of(axis, t.ndim)[0]
    shape = list(r._known_shape(name))
    shape[a] = 1
    return concatenate([full(shape, identity, dtype=r.dtype), r], axis=a)


# ---------------------------------------------------------------- gathers and assignment


def take(x: Any, indices: Any, /, *, axis: Optional[int] = None, out: Any = None, mode: str = "raise") -> Tensor:
    """The elements at integer positions ``indices`` along ``axis`` (of the flattened
    tensor when None): numpy's ``take``, lazily. A position out of bounds fails the
    computation with numpy's ``IndexError``; ``mode`` other than ``'raise'`` is not
    supported."""
    _check_out("take", out, {})
    if mode != "raise":
        raise NotImplementedError(f"take with mode={mode!r}")
    t = _to_tensor(x)
    if axis is None:
        t, axis = t.reshape(-1), 0
    a = _axis_of(axis, t.ndim)[0]
    if not isinstance(indices, Tensor):
        given = np.asarray(indices)
        # An empty list is positions too (numpy reads it as int64).
        indices = given.astype(np.int64) if given.size == 0 else given
    idx = _to_tensor(indices)
    if idx.dtype.kind not in "iu":
        raise IndexError("arrays used as indices must be of integer type")
    return Tensor(t._t.take(idx._t, a))


def take_along_axis(arr: Any, indices: Any, axis: Optional[int] = -1) -> Tensor:
    """numpy's ``take_along_axis``: each lane along ``axis`` reordered by ``indices``
    (as :func:`argsort` gives), lazily."""
    t = _to_tensor(arr)
    idx = indices if isinstance(indices, Tensor) else _to_tensor(np.asarray(indices))
    if axis is None:
        t, idx, axis = t.reshape(-1), idx.reshape(-1), 0
    if idx.ndim != t.ndim:
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    a = _axis_of(axis, t.ndim)[0]
    return Tensor(t._t.take_along(idx._t, a))


def _axis_mask(n: int, i: Any) -> Tensor:
    """Which of ``n`` positions an integer or a slice selects, as a lazy boolean vector."""
    r = arange(n)
    if isinstance(i, slice):
        start, stop, step = i.indices(n)
        if step > 0:
            return (r >= start) & (r < stop) & ((r - start) % step == 0)
        return (r <= start) & (r > stop) & ((start - r) % (-step) == 0)
    k = int(i)
    if not -n <= k < n:
        raise IndexError(f"index {k} is out of bounds for axis with size {n}")
    return r == k % n


def _assigned(x: Tensor, index: Any, value: Any) -> Tensor:
    """``x`` with ``x[index] = value`` applied (see ``Tensor.__setitem__``)."""
    from . import _is_bool_array, _is_bool_scalar, _is_int_array, _index_tensor, isin, nonzero  # noqa: F401

    def cast(v: Any) -> Tensor:
        # numpy casts the value to the array's dtype (a Python int it cannot hold raises).
        if isinstance(v, Tensor):
            return v.astype(x.dtype)
        return _to_tensor(np.asarray(v, dtype=x.dtype) if not isinstance(v, np.ndarray) else v.astype(x.dtype))

    v = cast(value)
    shape = x._known_shape("item assignment")
    if _is_bool_scalar(index):
        # x[True] = v writes everything, x[False] = v nothing; a 0-d mask tensor decides lazily.
        if not isinstance(index, Tensor):
            return broadcast_to(v, shape) if builtins.bool(index) else x
        return where(index, broadcast_to(v, shape), x)
    if _is_bool_array(index):
        mask = _to_tensor(index)
        k = mask.ndim
        if k > len(shape) or mask.shape != shape[:k]:
            raise IndexError(f"boolean index of shape {mask.shape} does not match the tensor's shape {shape}")
        mask = broadcast_to(mask.reshape(mask.shape + (1,) * (len(shape) - k)), shape)
        # A value for every selected element alike (it broadcasts to the unmasked axes);
        # one value per selected element would be a scatter.
        try:
            np.broadcast_shapes(v.shape, shape[k:])
        except ValueError:
            raise NotImplementedError("assigning an array of one value per masked element (give a scalar)") from None
        if len(v.shape) > len(shape[k:]):
            raise NotImplementedError("assigning an array of one value per masked element (give a scalar)")
        return where(mask, broadcast_to(v, shape), x)
    if not isinstance(index, tuple):
        index = (index,)
    if len(index) == 1 and _is_int_array(index[0]):
        if v.ndim != 0:
            raise NotImplementedError("assigning an array at integer positions (give a scalar)")
        n = shape[0] if shape else 0
        if isinstance(index[0], Tensor):
            pos = index[0].astype(np.int64)
            # A position out of bounds fails the computation (a gather past the end), as
            # numpy raises; in range, the gather gives the position back.
            from . import take

            pos = take(arange(n), where((pos < -n) | (pos >= n), n, where(pos < 0, pos + n, pos)))
        else:
            given = np.asarray(index[0], dtype=np.int64)
            bad = given[(given < -n) | (given >= n)]
            if bad.size:
                raise IndexError(f"index {int(bad[0])} is out of bounds for axis 0 with size {n}")
            pos = _to_tensor(given % builtins.max(n, 1))
        rows = isin(arange(n), pos)
        return where(broadcast_to(rows.reshape((n,) + (1,) * (len(shape) - 1)), shape), v, x)
    if any(_is_int_array(i) or _is_bool_array(i) or isinstance(i, Tensor) for i in index):
        raise NotImplementedError("item assignment with integer arrays other than one on the first axis")
    # Basic indices: expand the ellipsis, drop newaxis, fill the rest with ':'.
    for i in index:
        if isinstance(i, (builtins.bool, np.bool_)):
            raise NotImplementedError("item assignment with a boolean scalar among other indices")
        if not (i is None or i is Ellipsis or isinstance(i, (slice, numbers.Integral))):
            raise IndexError(
                "only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and integer or boolean arrays are valid indices"
            )
    if builtins.sum(1 for i in index if i is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    index = tuple(i for i in index if i is not None)
    if Ellipsis in index:
        at = index.index(Ellipsis)
        index = index[:at] + (slice(None),) * (len(shape) - len(index) + 1) + index[at + 1 :]
    if len(index) > len(shape):
        raise IndexError(f"too many indices for tensor: tensor is {len(shape)}-dimensional, but {len(index)} were indexed")
    index = index + (slice(None),) * (len(shape) - len(index))
    region = tuple(len(range(*i.indices(n))) if isinstance(i, slice) else None for i, n in zip(index, shape))
    if v.ndim == 0:
        mask = None
        for d, (i, n) in enumerate(zip(index, shape)):
            if isinstance(i, slice) and i == slice(None):
                continue
            m = _axis_mask(n, i).reshape(tuple(n if e == d else 1 for e in range(len(shape))))
            mask = m if mask is None else mask & m
        if mask is None:
            return broadcast_to(v, shape)
        return where(broadcast_to(mask, shape), v, x)
    box = tuple(r if r is not None else 1 for r in region)
    kept = tuple(r for r in region if r is not None)
    v = broadcast_to(v, kept).reshape(box)
    if builtins.any(r == 0 for r in kept):
        return x  # an empty region: nothing to write
    if builtins.any(isinstance(i, slice) and i.indices(n)[2] != 1 for i, n in zip(index, shape)):
        # A strided region: the value spread over the whole shape (each position reads
        # the value's element for its place in the slice), then kept where the region is.
        from . import take

        mask = None
        for d, (i, n) in enumerate(zip(index, shape)):
            if isinstance(i, slice):
                start, _, step = i.indices(n)
                place = np.clip((np.arange(n) - start) // step, 0, region[d] - 1)
            else:
                place = np.zeros(n, dtype=np.int64)
            v = take(v, place, axis=d)
            m = _axis_mask(n, i).reshape(tuple(n if e == d else 1 for e in range(len(shape))))
            mask = m if mask is None else mask & m
        return where(broadcast_to(mask, shape), v, x)
    # An array value of unit steps: its box spliced in along each axis in turn.
    for i, n in zip(index, shape):
        if not isinstance(i, slice) and not -n <= int(i) < n:
            raise IndexError(f"index {int(i)} is out of bounds for axis with size {n}")
    return _splice(x, v, [(i.indices(n)[0] if isinstance(i, slice) else int(i) % n) for i, n in zip(index, shape)], 0)


def _splice(x: Tensor, v: Tensor, starts: List[int], d: int) -> Tensor:
    """``x`` with the box ``v`` at ``starts``, joined along axes ``d`` and on."""
    if d == x.ndim:
        return v
    n, w, s = x.shape[d], v.shape[d], starts[d]
    lo = [slice(None)] * x.ndim
    mid = [slice(None)] * x.ndim
    hi = [slice(None)] * x.ndim
    lo[d], mid[d], hi[d] = slice(0, s), slice(s, s + w), slice(s + w, n)
    inner = _splice(x[tuple(mid)], v, starts, d + 1)
    parts = [p for p in (x[tuple(lo)], inner, x[tuple(hi)]) if p.shape[d] > 0]
    if not parts:
        return x  # an empty axis: nothing to write
    return parts[0] if len(parts) == 1 else concatenate(parts, axis=d)


def pad(array: Any, pad_width: Any, mode: str = "constant", **kwargs: Any) -> Tensor:
    """numpy's ``pad`` with ``mode`` constant (``constant_values``), edge, reflect,
    symmetric or wrap: each axis in turn joined with slices of itself (or constants)."""
    t = _to_tensor(array)
    if mode not in ("constant", "edge", "reflect", "symmetric", "wrap"):
        raise NotImplementedError(f"pad with mode={mode!r} (supported: constant, edge, reflect, symmetric, wrap)")
    widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (t.ndim, 2)) if t.ndim else np.zeros((0, 2), np.int64)
    if (widths < 0).any():
        raise ValueError("index can't contain negative values")
    consts = np.broadcast_to(np.asarray(kwargs.pop("constant_values", 0)), (t.ndim, 2)) if t.ndim else None
    if kwargs:
        raise NotImplementedError(f"pad with {', '.join(kwargs)}")
    for d in range(t.ndim):
        before, after = int(widths[d][0]), int(widths[d][1])
        if before == 0 and after == 0:
            continue
        n = t.shape[d]
        if mode != "constant" and n == 0:
            raise ValueError("can't extend empty axis using modes other than 'constant'")

        def part(start: int, stop: int, step: int = 1) -> Tensor:
            idx = [slice(None)] * t.ndim
            idx[d] = slice(start, stop, step)
            return t[tuple(idx)]

        def side(width: int, lead: bool) -> List[Tensor]:
            if width == 0:
                return []
            if mode == "constant":
                shape = list(t.shape)
                shape[d] = width
                value = np.asarray(consts[d][0 if lead else 1]).astype(t.dtype)
                return [full(shape, value.item(), dtype=t.dtype)]
            if mode == "edge":
                return [broadcast_to(part(0, 1) if lead else part(n - 1, n), tuple(width if e == d else s for e, s in enumerate(t.shape)))]
            # Reflections and wraps repeat as needed for widths beyond the axis.
            pieces: List[Tensor] = []
            left = width
            while left > 0:
                if mode == "wrap":
                    k = min(left, n)
                    pieces.append(part(n - k, n) if lead else part(0, k))
                else:
                    span = n - 1 if mode == "reflect" else n
                    if span == 0:
                        k = left
                        pieces.append(broadcast_to(part(0, 1), tuple(k if e == d else s for e, s in enumerate(t.shape))))
                        left = 0
                        continue
                    k = min(left, span)
                    off = 1 if mode == "reflect" else 0
                    if lead:
                        pieces.append(part(off + k - 1, off - 1 if off >= 1 else None, -1))
                    else:
                        stop = n - 1 - off - k
                        pieces.append(part(n - 1 - off, stop if stop >= 0 else None, -1))
                left -= k
            if lead:
                pieces = pieces[::-1]
            return pieces

        if mode in ("reflect", "symmetric") and (before > n - (mode == "reflect") or after > n - (mode == "reflect")):
            raise NotImplementedError(f"pad with mode={mode!r} wider than the axis")
        parts = side(before, True) + [t] + side(after, False)
        t = concatenate(parts, axis=d)
    return t
