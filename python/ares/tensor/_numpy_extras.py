"""numpy's functions beyond the Array API that converted programs use, built from the
tiled operations of ``ares.tensor``: lazy, and run as chunk tasks.

Every function here is a composition of operations that already exist (slices, joins,
broadcasts, masks, gathers, sorts, searches, running sums and element-wise arithmetic);
none fetches data to compute it in numpy. Where a result's *shape* depends on the data
and no lazy form has it, a few numbers are computed first, as their docstrings say:
:func:`bincount` computes ``x.min()`` and ``x.max()`` (its length), :func:`trim_zeros`
along several axes the bounds of the non-zero box, and positions given as a tensor to
:func:`split` or as a 0-d tensor to :func:`insert` are fetched. Other results whose
length depends on the data (``union1d``, ``flatnonzero``, ``trim_zeros`` along one
axis, ...) are lazy tensors whose length is known once computed, as a boolean mask's.

numpy's in-place functions (``fill_diagonal``, ``put``, ``place``, ``putmask``,
``copyto``) rebind the tensor to a new expression, as ``Tensor.__setitem__`` does:
tensors computed from it before keep the old values.

The element-wise ones that are ufuncs in numpy (``fmax``, ``gcd``, ``ldexp``, ...) are
also registered for ``Tensor.__array_ufunc__``, so ``np.fmax(t, u)`` builds the same
lazy tensor as ``at.fmax(t, u)``.
"""

from __future__ import annotations

import builtins
import math
import numbers
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from . import (
    _UFUNCS,
    Tensor,
    _axis_of,
    _check_out,
    _to_tensor,
    absolute,
    arange,
    arctan2,
    argsort,
    broadcast_to,
    ceil,
    clip,
    concatenate,
    copysign,
    cos,
    diff,
    exp,
    flip,
    floor,
    floor_divide,
    full,
    isfinite,
    isin,
    isinf,
    isnan,
    linalg,
    linspace,
    log1p,
    log2,
    matmul,
    maximum,
    minimum,
    nonzero,
    quantile,
    remainder,
    rint,
    searchsorted,
    signbit,
    sin,
    sort,
    sqrt,
    stack,
    take,
    take_along_axis,
    tensordot,
    trunc,
    unique,
    where,
    zeros,
)
from ._sorting import _fractions, _lanes

__all__ = [
    # shapes, joins and splits
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "dstack",
    "column_stack",
    "row_stack",
    "split",
    "array_split",
    "hsplit",
    "vsplit",
    "dsplit",
    "swapaxes",
    "rollaxis",
    "rot90",
    "fliplr",
    "flipud",
    "append",
    "insert",
    "delete",
    "resize",
    "trim_zeros",
    "block",
    # products
    "kron",
    "inner",
    "vdot",
    # creation and index helpers
    "logspace",
    "geomspace",
    "tri",
    "tril_indices",
    "triu_indices",
    "tril_indices_from",
    "triu_indices_from",
    "diag_indices",
    "diag_indices_from",
    "indices",
    "ix_",
    "unravel_index",
    "ravel_multi_index",
    "mgrid",
    "ogrid",
    # searching and selecting
    "flatnonzero",
    "argwhere",
    "compress",
    "extract",
    "select",
    "choose",
    "piecewise",
    # element-wise
    "nan_to_num",
    "fix",
    "modf",
    "frexp",
    "ldexp",
    "nextafter",
    "spacing",
    "heaviside",
    "gcd",
    "lcm",
    "fmax",
    "fmin",
    "fmod",
    "divmod",
    "float_power",
    "logaddexp2",
    "cbrt",
    "reciprocal",
    "deg2rad",
    "rad2deg",
    "degrees",
    "radians",
    "sinc",
    "isposinf",
    "isneginf",
    "isreal",
    "iscomplex",
    "isrealobj",
    "iscomplexobj",
    "angle",
    "i0",
    # differences, sets, counting and interpolation
    "ediff1d",
    "union1d",
    "intersect1d",
    "setdiff1d",
    "setxor1d",
    "in1d",
    "histogram",
    "histogram_bin_edges",
    "digitize",
    "bincount",
    "interp",
    "convolve",
    "correlate",
    "polyval",
    "polyfit",
    "vander",
    "gradient",
    "trapezoid",
    "unwrap",
    # order statistics and sorting
    "nanmedian",
    "nanpercentile",
    "nanquantile",
    "partition",
    "argpartition",
    "lexsort",
    # windows
    "bartlett",
    "hanning",
    "hamming",
    "blackman",
    "kaiser",
    # in place (by rebinding)
    "fill_diagonal",
    "put",
    "place",
    "putmask",
    "copyto",
]


# ---------------------------------------------------------------- helpers


def _chunk_size(t: Tensor) -> Optional[Tuple[int, ...]]:
    """``t``'s chunk size per dimension, to lay a new tensor out like it (None when a
    chunk length is unknown)."""
    out = []
    for c in t.chunks:
        if not c or builtins.any(isinstance(n, float) for n in c):
            return None
        out.append(builtins.max(c[0], 1))
    return tuple(out)


def _full_like(t: Tensor, value: Any, dtype: Any) -> Tensor:
    """A tensor of ``t``'s shape (and chunks) filled with ``value``."""
    return full(t._known_shape("full_like"), value, dtype=dtype, chunk_size=_chunk_size(t))


def _weak(x: Any) -> Any:
    """What numpy's promotion sees: a tensor's or array's dtype, a Python scalar as is."""
    if isinstance(x, (Tensor, np.ndarray, np.generic)):
        return x.dtype
    if isinstance(x, (builtins.bool, int, float)):
        return x
    return np.asarray(x).dtype


def _as_dtype(x: Any, dt: Any) -> Tensor:
    """``x`` as a tensor of dtype ``dt`` (a Python int that ``dt`` cannot hold raises
    ``OverflowError``, as numpy 2)."""
    if isinstance(x, Tensor):
        return x.astype(dt)
    if isinstance(x, np.ndarray):
        return _to_tensor(x.astype(dt))
    return _to_tensor(np.asarray(x, dtype=dt) if isinstance(x, (builtins.bool, int, float)) else np.asarray(x).astype(dt))


def _aligned(ts: List[Tensor]) -> List[Tensor]:
    """The tensors broadcast to their common shape. (The engine's fused element-wise
    programs can mis-broadcast an operand that is used twice against one chunked
    differently, so operands used several times are broadcast first.)"""
    shape = np.broadcast_shapes(*(t._known_shape("broadcast") for t in ts))
    return [t if t.shape == shape else broadcast_to(t, shape) for t in ts]


def _common(*xs: Any) -> Tuple[np.dtype, List[Tensor]]:
    """numpy's result dtype of the operands (Python scalars weak) and the operands as
    tensors of it, broadcast to one shape."""
    dt = np.result_type(*(_weak(x) for x in xs))
    return dt, _aligned([_as_dtype(x, dt) for x in xs])


def _float_dtype(dt: Any) -> np.dtype:
    """The float dtype numpy's float ufuncs compute an input dtype in: integers and
    booleans as the smallest float that holds them, float64 where numpy's is float16
    (not supported here)."""
    dt = np.dtype(dt)
    if dt.kind in "biu":
        f = np.result_type(dt, np.float16)
        return np.dtype(np.float64) if f == np.float16 else f
    return dt


def _floats(*xs: Any) -> Tuple[np.dtype, List[Tensor]]:
    """The operands as tensors of their common float dtype (see :func:`_float_dtype`)."""
    dt = _float_dtype(np.result_type(*(_weak(x) for x in xs)))
    return dt, _aligned([_as_dtype(x, dt) for x in xs])


def _guarded(idx: Tensor, bad: Tensor) -> Tensor:
    """``idx`` unchanged, except that the computation fails with an ``IndexError`` where
    ``bad`` holds (a gather from a one-element tensor at position 1): numpy's check of
    positions, lazily."""
    return idx + take(zeros(1, dtype=idx.dtype), bad.astype(np.int64))


def _rebind(a: Any, new: Tensor, name: str) -> None:
    """numpy's in-place update of ``a``: the tensor rebound to ``new`` (as
    ``Tensor.__setitem__`` does)."""
    if not isinstance(a, Tensor):
        raise TypeError(f"{name} works in place on an ares tensor, not on {type(a).__name__}")
    a._t = new._t
    a._session = None


def _known_positions(x: Any) -> Optional[np.ndarray]:
    """Positions given as data in hand (a list, a numpy array or a scalar), or None for a
    tensor (whose positions are lazy)."""
    return None if isinstance(x, Tensor) else np.asarray(x)


def _index_along(t: Tensor, axis: int, index: Any) -> Tensor:
    """``t`` indexed along one axis (the others whole)."""
    ix = [slice(None)] * t.ndim
    ix[axis] = index
    return t[tuple(ix)]


# ---------------------------------------------------------------- shapes, joins and splits


def _atleast(x: Any, n: int) -> Tensor:
    t = _to_tensor(x)
    if t.ndim >= n:
        return t
    s = t._known_shape("atleast_nd")
    if n == 1:
        return t.reshape(1)
    if n == 2:
        return t.reshape((1,) + s if t.ndim == 1 else (1, 1))
    if t.ndim == 0:
        return t.reshape(1, 1, 1)
    return t.reshape((1,) + s + (1,) if t.ndim == 1 else s + (1,))


def atleast_1d(*arys: Any) -> Any:
    """Each input as a tensor of at least one dimension (a 0-d one becomes ``(1,)``):
    one tensor for one input, else a tuple."""
    res = tuple(_atleast(a, 1) for a in arys)
    return res[0] if len(res) == 1 else res


def atleast_2d(*arys: Any) -> Any:
    """Each input with at least two dimensions (``(N,)`` becomes ``(1, N)``)."""
    res = tuple(_atleast(a, 2) for a in arys)
    return res[0] if len(res) == 1 else res


def atleast_3d(*arys: Any) -> Any:
    """Each input with at least three dimensions, as numpy places them: ``(N,)`` becomes
    ``(1, N, 1)`` and ``(M, N)`` becomes ``(M, N, 1)``."""
    res = tuple(_atleast(a, 3) for a in arys)
    return res[0] if len(res) == 1 else res


def dstack(tup: Sequence[Any]) -> Tensor:
    """Tensors joined along the third axis (after :func:`atleast_3d`)."""
    return concatenate([_atleast(a, 3) for a in tup], axis=2)


def column_stack(tup: Sequence[Any]) -> Tensor:
    """1-d tensors as columns (and 2-d ones as they are) joined along the second axis."""
    parts = []
    for a in tup:
        t = _to_tensor(a)
        parts.append(_atleast(t, 2).T if t.ndim < 2 else t)
    return concatenate(parts, axis=1)


def row_stack(tup: Sequence[Any]) -> Tensor:
    """Tensors joined along the first axis, 0-d and 1-d ones as rows (numpy's ``vstack``,
    which numpy 2 deprecates this name for)."""
    return concatenate([_atleast(a, 2) for a in tup], axis=0)


def array_split(ary: Any, indices_or_sections: Any, axis: int = 0) -> List[Tensor]:
    """``ary`` split along ``axis`` into a list of lazy slices: ``indices_or_sections``
    equal parts (the first ``N % sections`` one longer, as numpy), or at the given
    positions. Positions given as a tensor are fetched first (the pieces' shapes depend
    on them)."""
    t = _to_tensor(ary)
    a = _axis_of(axis, t.ndim)[0]
    n = t._known_shape("array_split")[a]
    ios = indices_or_sections.fetch() if isinstance(indices_or_sections, Tensor) else indices_or_sections
    if np.ndim(ios) == 0:
        sections = int(ios)
        if sections <= 0:
            raise ValueError("number sections must be larger than 0.")
        each, extras = builtins.divmod(n, sections)
        sizes = [0] + extras * [each + 1] + (sections - extras) * [each]
        points = np.cumsum(sizes).tolist()
    else:
        points = [0] + [int(i) for i in np.asarray(ios).reshape(-1)] + [n]
    return [_index_along(t, a, slice(points[i], points[i + 1])) for i in range(len(points) - 1)]


def split(ary: Any, indices_or_sections: Any, axis: int = 0) -> List[Tensor]:
    """As :func:`array_split`, but a number of sections must divide the axis exactly
    (``ValueError`` otherwise, as numpy)."""
    t = _to_tensor(ary)
    ios = indices_or_sections
    if not isinstance(ios, Tensor) and np.ndim(ios) == 0:
        n = t._known_shape("split")[_axis_of(axis, t.ndim)[0]]
        if int(ios) != 0 and n % int(ios):
            raise ValueError("array split does not result in an equal division")
    return array_split(t, ios, axis=axis)


def hsplit(ary: Any, indices_or_sections: Any) -> List[Tensor]:
    """:func:`split` along the second axis (the first for 1-d tensors)."""
    t = _to_tensor(ary)
    if t.ndim == 0:
        raise ValueError("hsplit only works on arrays of 1 or more dimensions")
    return split(t, indices_or_sections, axis=1 if t.ndim > 1 else 0)


def vsplit(ary: Any, indices_or_sections: Any) -> List[Tensor]:
    """:func:`split` along the first axis (of a tensor of at least two dimensions)."""
    t = _to_tensor(ary)
    if t.ndim < 2:
        raise ValueError("vsplit only works on arrays of 2 or more dimensions")
    return split(t, indices_or_sections, axis=0)


def dsplit(ary: Any, indices_or_sections: Any) -> List[Tensor]:
    """:func:`split` along the third axis (of a tensor of at least three dimensions)."""
    t = _to_tensor(ary)
    if t.ndim < 3:
        raise ValueError("dsplit only works on arrays of 3 or more dimensions")
    return split(t, indices_or_sections, axis=2)


def swapaxes(a: Any, axis1: int, axis2: int) -> Tensor:
    """Two axes exchanged."""
    return _to_tensor(a).swapaxes(axis1, axis2)


def rollaxis(a: Any, axis: int, start: int = 0) -> Tensor:
    """``axis`` moved to before position ``start`` (numpy's older form of ``moveaxis``)."""
    t = _to_tensor(a)
    n = t.ndim
    axis = _axis_of(axis, n)[0]
    if start < 0:
        start += n
    if not 0 <= start < n + 1:
        raise np.exceptions.AxisError(f"'start' arg requires {-n} <= start < {n + 1}, but {start} was passed in")
    if axis < start:
        start -= 1
    if axis == start:
        return t
    order = [d for d in range(n) if d != axis]
    order.insert(start, axis)
    return t.transpose(order)


def rot90(m: Any, k: int = 1, axes: Sequence[int] = (0, 1)) -> Tensor:
    """``m`` rotated by 90 degrees ``k`` times in the plane of ``axes`` (from the first
    towards the second): flips and a transpose."""
    t = _to_tensor(m)
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    if axes[0] == axes[1] or builtins.abs(axes[0] - axes[1]) == t.ndim:
        raise ValueError("Axes must be different.")
    if axes[0] >= t.ndim or axes[0] < -t.ndim or axes[1] >= t.ndim or axes[1] < -t.ndim:
        raise ValueError(f"Axes={axes} out of range for array of ndim={t.ndim}.")
    k %= 4
    if k == 0:
        return t
    if k == 2:
        return flip(flip(t, axis=axes[0]), axis=axes[1])
    perm = list(range(t.ndim))
    a0, a1 = axes[0] % t.ndim, axes[1] % t.ndim
    perm[a0], perm[a1] = perm[a1], perm[a0]
    if k == 1:
        return flip(t, axis=axes[1]).transpose(perm)
    return flip(t.transpose(perm), axis=axes[1])


def fliplr(m: Any) -> Tensor:
    """Columns in reverse order (the second axis flipped)."""
    t = _to_tensor(m)
    if t.ndim < 2:
        raise ValueError("Input must be >= 2-d.")
    return flip(t, axis=1)


def flipud(m: Any) -> Tensor:
    """Rows in reverse order (the first axis flipped)."""
    t = _to_tensor(m)
    if t.ndim < 1:
        raise ValueError("Input must be >= 1-d.")
    return flip(t, axis=0)


def append(arr: Any, values: Any, axis: Optional[int] = None) -> Tensor:
    """``values`` joined after ``arr`` along ``axis`` (both flattened when None)."""
    t = _to_tensor(arr)
    if axis is None:
        return concatenate([t.reshape(-1), _to_tensor(values).reshape(-1)], axis=0)
    return concatenate([t, _to_tensor(values)], axis=axis)


def _values_block(values: Any, t: Tensor, axis: int, count: Optional[int], scalar_index: builtins.bool) -> Tensor:
    """numpy's ``insert`` values: cast to ``t``'s dtype and broadcast to the inserted block
    (``count`` slices along ``axis``; None: as many as the values give)."""
    v = _as_dtype(values, t.dtype) if not isinstance(values, Tensor) else values.astype(t.dtype)
    shape = list(t._known_shape("insert"))
    if count is None:
        # One position: `array(values, ndmin=arr.ndim)`, its first axis moved to `axis`
        # for a scalar position.
        if v.ndim < t.ndim:
            v = v.reshape((1,) * (t.ndim - v.ndim) + v.shape)
        if scalar_index:
            v = _move_first(v, axis)
        count = v.shape[axis]
    shape[axis] = count
    return broadcast_to(v, tuple(shape))


def _move_first(v: Tensor, axis: int) -> Tensor:
    order = list(range(1, v.ndim))
    order.insert(axis, 0)
    return v.transpose(order)


def insert(arr: Any, obj: Any, values: Any, axis: Optional[int] = None) -> Tensor:
    """``values`` inserted before the positions ``obj`` along ``axis`` (of the flattened
    tensor when None), as numpy's ``insert``: an int, a slice, a sequence of positions
    (several at one position keep their order) or a boolean mask. Known positions give a
    join of slices or one gather; positions in a 1-d integer tensor are placed lazily by
    a stable sort (they are not checked against the axis; a 0-d one is fetched)."""
    t = _to_tensor(arr)
    if axis is None:
        t, axis = (t.reshape(-1) if t.ndim != 1 else t), 0
    a = _axis_of(axis, t.ndim)[0]
    n = t._known_shape("insert")[a]
    if isinstance(obj, Tensor) and obj.ndim == 1:
        if obj.dtype == np.bool_:
            raise NotImplementedError("insert at a boolean mask in a tensor (the number of insertions depends on the data); give it as a numpy array")
        idx = obj.astype(np.int64)
        if idx.shape[0] == 1:
            # One position takes all the values (numpy's `ndmin` reading of them).
            v = _values_block(values, t, a, None, False)
            idx = broadcast_to(idx, (v.shape[a],))
        else:
            v = _values_block(values, t, a, idx.shape[0], False)
        idx = where(idx < 0, idx + n, idx)
        keys = concatenate([arange(n) * 2 + 1, idx * 2])
        return take(concatenate([t, v], axis=a), argsort(keys), axis=a)
    if isinstance(obj, slice):
        positions = np.arange(*obj.indices(n), dtype=np.int64)
    else:
        positions = np.array(obj.fetch() if isinstance(obj, Tensor) else obj)
        if positions.dtype == np.bool_:
            if positions.ndim != 1:
                raise ValueError("boolean array argument obj to insert must be one dimensional")
            positions = np.flatnonzero(positions)
        elif positions.ndim > 1:
            raise ValueError("index array argument obj to insert must be one dimensional or scalar")
    if positions.size == 1:
        index = int(positions.reshape(-1)[0])
        if index < -n or index > n:
            raise IndexError(f"index {index} is out of bounds for axis {a} with size {n}")
        if index < 0:
            index += n
        v = _values_block(values, t, a, None, positions.ndim == 0)
        parts = [_index_along(t, a, slice(0, index)), v, _index_along(t, a, slice(index, n))]
        return concatenate([p for p in parts if p.shape[a] > 0] or [v], axis=a)
    positions = positions.astype(np.int64)
    if ((positions < -n) | (positions > n)).any():
        bad = positions[(positions < -n) | (positions > n)][0]
        raise IndexError(f"index {bad} is out of bounds for axis {a} with size {n}")
    positions[positions < 0] += n
    k = len(positions)
    order = positions.argsort(kind="mergesort")
    positions[order] += np.arange(k)
    perm = np.empty(n + k, dtype=np.int64)
    old = np.ones(n + k, dtype=bool)
    old[positions] = False
    perm[old] = np.arange(n)
    perm[positions] = n + np.arange(k)
    v = _values_block(values, t, a, k, False)
    return take(concatenate([t, v], axis=a), _to_tensor(perm), axis=a)


def delete(arr: Any, obj: Any, axis: Optional[int] = None) -> Tensor:
    """``arr`` without the positions ``obj`` along ``axis`` (of the flattened tensor when
    None): an int, a slice, a sequence of positions or a boolean mask of the axis. Known
    positions give a gather of a known length (one out of bounds raises ``IndexError``
    at once); positions in a tensor are removed lazily (the length is then known once
    computed, and one out of bounds fails the computation with an ``IndexError``)."""
    t = _to_tensor(arr)
    if axis is None:
        t, axis = (t.reshape(-1) if t.ndim != 1 else t), 0
    a = _axis_of(axis, t.ndim)[0]
    n = t._known_shape("delete")[a]
    if isinstance(obj, Tensor):
        if obj.dtype == np.bool_:
            if obj.shape != (n,):
                raise ValueError(f"boolean array argument obj to delete must be one dimensional and match the axis length of {n}")
            keep = ~obj
        else:
            pos = obj.astype(np.int64).reshape(-1)
            pos = _guarded(where(pos < 0, pos + n, pos), (pos < -n) | (pos >= n))
            keep = ~isin(arange(n), pos)
        return take(t, nonzero(keep)[0], axis=a)
    keep = np.ones(n, dtype=bool)
    if isinstance(obj, slice):
        keep[obj] = False
    else:
        pos = np.asarray(obj)
        if pos.dtype == np.bool_:
            if pos.shape != (n,):
                raise ValueError(f"boolean array argument obj to delete must be one dimensional and match the axis length of {n}")
            keep = ~pos
        else:
            if pos.size == 0:
                pos = pos.astype(np.int64)
            if pos.dtype.kind not in "iu":
                raise IndexError("arrays used as indices must be of integer (or boolean) type")
            if ((pos < -n) | (pos >= n)).any():
                bad = pos[(pos < -n) | (pos >= n)].reshape(-1)[0]
                raise IndexError(f"index {bad} is out of bounds for axis {a} with size {n}")
            keep[pos.reshape(-1)] = False
    if keep.all():
        return t
    return take(t, _to_tensor(np.flatnonzero(keep)), axis=a)


def resize(a: Any, new_shape: Any) -> Tensor:
    """A tensor of ``new_shape`` filled with ``a``'s elements repeated in row-major
    order (zeros when ``a`` is empty), as numpy's function (not the method's zero fill)."""
    t = _to_tensor(a).reshape(-1)
    shape = (int(new_shape),) if isinstance(new_shape, (numbers.Integral, np.integer)) else tuple(int(d) for d in new_shape)
    if builtins.any(d < 0 for d in shape):
        raise ValueError("all elements of `new_shape` must be non-negative")
    size = math.prod(shape)
    n = t._known_shape("resize")[0]
    if n == 0 or size == 0:
        return zeros(shape, dtype=t.dtype)
    reps = -(-size // n)
    flat = concatenate([t] * reps) if reps > 1 else t
    return flat[:size].reshape(shape)


def trim_zeros(filt: Any, trim: str = "fb", axis: Any = None) -> Tensor:
    """``filt`` without its leading (``'f'``) and/or trailing (``'b'``) zeros, along
    ``axis`` (every axis when None: the smallest box holding the non-zero elements), as
    numpy 2.2+. Along one axis (a 1-d ``filt`` included) it is lazy: the kept positions
    are a mask, so the length is known once computed. Along several axes of an n-d
    tensor the shape depends on the data: the first and last non-zero position of each
    axis are computed first (one small fetch), then the box is sliced lazily."""
    t = _to_tensor(filt)
    trim = trim.lower()
    if trim not in {"fb", "bf", "f", "b"}:
        raise ValueError(f"unexpected character(s) in `trim`: {trim!r}")
    axes = list(range(t.ndim)) if axis is None else _axis_of(axis, t.ndim)
    if not axes:
        return t
    nz = t != 0
    lanes = []
    for ax in axes:
        others = tuple(d for d in range(t.ndim) if d != ax)
        lanes.append(nz.any(axis=others) if others else nz)
    if len(axes) == 1:
        lane = lanes[0]
        keep = None
        if "f" in trim:
            keep = lane.cumsum() > 0
        if "b" in trim:
            back = flip(flip(lane, axis=0).cumsum(), axis=0) > 0
            keep = back if keep is None else keep & back
        return take(t, nonzero(keep)[0], axis=axes[0])
    shape = t._known_shape("trim_zeros")
    bounds = []
    for ax, lane in zip(axes, lanes):
        n = shape[ax]
        bounds += [lane.argmax(), n - 1 - flip(lane, axis=0).argmax()]
    found, *ends = (int(v) for v in stack([nz.any().astype(np.int64)] + bounds).fetch())
    index = [slice(None)] * t.ndim
    for i, ax in enumerate(axes):
        if not found:
            index[ax] = slice(0, 0)
            continue
        start, stop = ends[2 * i], ends[2 * i + 1] + 1
        index[ax] = slice(start if "f" in trim else None, stop if "b" in trim else None)
    return t[tuple(index)]


def block(arrays: Any) -> Tensor:
    """A tensor assembled from nested lists of blocks, as numpy's ``block``: the innermost
    lists joined along the last axis, the next along the second last, and so on (blocks
    of fewer dimensions get leading ones)."""

    def depth(x: Any, path: str) -> int:
        if type(x) is tuple:
            raise TypeError(
                f"{path or 'arrays'} is a tuple. Only lists can be used to arrange blocks, "
                "and np.block does not allow implicit conversion from tuple to ndarray."
            )
        if type(x) is list:
            if not x:
                raise ValueError(f"List at {path or 'arrays'} cannot be empty")
            ds = [depth(e, f"{path}[{i}]") for i, e in enumerate(x)]
            if builtins.any(d != ds[0] for d in ds):
                raise ValueError("List depths are mismatched.")
            return ds[0] + 1
        return 0

    def leaves(x: Any) -> List[Tensor]:
        return [t for e in x for t in leaves(e)] if type(x) is list else [_to_tensor(x)]

    d = depth(arrays, "")
    if d == 0:
        return _to_tensor(arrays)
    nd = builtins.max([d] + [t.ndim for t in leaves(arrays)])

    def build(x: Any, level: int) -> Tensor:
        if type(x) is list:
            return concatenate([build(e, level + 1) for e in x], axis=-(d - level))
        t = _to_tensor(x)
        return t.reshape((1,) * (nd - t.ndim) + t._known_shape("block"))

    return build(arrays, 0)


# ---------------------------------------------------------------- products


def kron(a: Any, b: Any) -> Tensor:
    """The Kronecker product: blocks ``a[i, j] * b``, lazily as one broadcast product of
    ``a`` and ``b`` with their axes interleaved."""
    x, y = _to_tensor(a), _to_tensor(b)
    if x.ndim < y.ndim:
        x = x.reshape((1,) * (y.ndim - x.ndim) + x._known_shape("kron"))
    if x.ndim == 0 or y.ndim == 0:
        return x * y
    y = y.reshape((1,) * (x.ndim - y.ndim) + y._known_shape("kron"))
    sa, sb = x.shape, y.shape
    xa = x.reshape([d for s in sa for d in (s, 1)])
    yb = y.reshape([d for s in sb for d in (1, s)])
    return (xa * yb).reshape([p * q for p, q in zip(sa, sb)])


def inner(a: Any, b: Any) -> Tensor:
    """The sum of products over the last axes of ``a`` and ``b`` (the product for a
    0-d operand)."""
    x, y = _to_tensor(a), _to_tensor(b)
    if x.ndim == 0 or y.ndim == 0:
        return x * y
    if x.shape[-1] != y.shape[-1]:
        raise ValueError(f"shapes {x.shape} and {y.shape} not aligned: {x.shape[-1]} (dim {x.ndim - 1}) != {y.shape[-1]} (dim {y.ndim - 1})")
    return tensordot(x, y, axes=([x.ndim - 1], [y.ndim - 1]))


def vdot(a: Any, b: Any, /) -> Tensor:
    """The dot product of the flattened operands (a 0-d tensor; real dtypes only, so
    there is nothing to conjugate)."""
    x, y = _to_tensor(a).reshape(-1), _to_tensor(b).reshape(-1)
    if x.shape[0] != y.shape[0]:
        raise ValueError("vectors have different lengths")
    return matmul(x, y)


# ---------------------------------------------------------------- creation and index helpers


def _scalar_arg(v: Any, name: str) -> Any:
    if isinstance(v, Tensor) or np.ndim(v) != 0:
        raise NotImplementedError(f"{name} with array start/stop/base (give scalars)")
    return v.item() if isinstance(v, np.generic) else v


def logspace(start: Any, stop: Any, num: int = 50, endpoint: builtins.bool = True, base: Any = 10.0, dtype: Any = None, axis: int = 0) -> Tensor:
    """``base ** linspace(start, stop, num)``, as numpy (scalar ``start``, ``stop`` and
    ``base``; an integer ``dtype`` truncates, as numpy's cast)."""
    start, stop, base = (_scalar_arg(v, "logspace") for v in (start, stop, base))
    y = linspace(start, stop, num, endpoint=endpoint)
    r = float(base) ** y
    return r if dtype is None else r.astype(dtype)


def geomspace(start: Any, stop: Any, num: int = 50, endpoint: builtins.bool = True, dtype: Any = None, axis: int = 0) -> Tensor:
    """Numbers spaced evenly on a log scale from ``start`` to ``stop`` (both ends exact),
    as numpy: negative ends give negative numbers; ends of different signs give NaN
    inside (numpy's real result, complex dtypes not being supported)."""
    start, stop = _scalar_arg(start, "geomspace"), _scalar_arg(stop, "geomspace")
    if start == 0 or stop == 0:
        raise ValueError("Geometric sequence cannot include zero")
    s0, s1 = np.asarray(start) * 1.0, np.asarray(stop) * 1.0
    dt = np.result_type(s0, s1, float(num), np.zeros((), dtype) if dtype is not None else np.float64)
    if dt.kind == "c":
        raise NotImplementedError("geomspace with complex values")
    s0, s1 = s0.astype(dt), s1.astype(dt)
    sign = np.sign(s0)
    s0, s1 = s0 / sign, s1 / sign
    with np.errstate(invalid="ignore"):
        lo, hi = np.log10(s0), np.log10(s1)
    r = logspace(float(lo), float(hi), num=num, endpoint=endpoint, base=10.0).astype(dt)
    if num > 0:
        pos = arange(num)
        r = where(pos == 0, _to_tensor(s0), r)
        if num > 1 and endpoint:
            r = where(pos == num - 1, _to_tensor(s1), r)
    r = r * _to_tensor(sign.astype(dt))
    return r.astype(dtype if dtype is not None else dt)


def tri(N: int, M: Optional[int] = None, k: int = 0, dtype: Any = float) -> Tensor:
    """The ``N × M`` matrix with ones on and below diagonal ``k``, lazily from two ranges."""
    M = N if M is None else M
    m = arange(M).reshape(1, M) - arange(N).reshape(N, 1) <= k
    return m.astype(dtype)


def _triangle_indices(n: int, m: int, k: int, lower: builtins.bool) -> Tuple[Tensor, Tensor]:
    """The row and column positions of a triangle of an ``n × m`` matrix, row-major. The
    number of positions per row follows from ``n, m, k`` alone, so the length is known:
    position ``j`` lies in the last row starting at or before it (a search among the
    row starts)."""
    rows = np.arange(n, dtype=np.int64)
    if lower:
        first = np.zeros(n, dtype=np.int64)
        count = np.clip(rows + k + 1, 0, m)
    else:
        first = np.clip(rows + k, 0, m)
        count = m - first
    starts = np.concatenate([[0], np.cumsum(count)[:-1]]).astype(np.int64) if n else np.zeros(0, np.int64)
    total = int(count.sum()) if n else 0
    if total == 0:
        return zeros(0, dtype=np.int64), zeros(0, dtype=np.int64)
    j = arange(total)
    row = searchsorted(_to_tensor(starts), j, side="right") - 1
    col = j - take(_to_tensor(starts - first), row)
    return row, col


def tril_indices(n: int, k: int = 0, m: Optional[int] = None) -> Tuple[Tensor, Tensor]:
    """The (row, column) positions of the lower triangle (on and below diagonal ``k``) of
    an ``n × m`` matrix, row-major, as int64 tensors of known length."""
    return _triangle_indices(int(n), int(n if m is None else m), int(k), True)


def triu_indices(n: int, k: int = 0, m: Optional[int] = None) -> Tuple[Tensor, Tensor]:
    """The (row, column) positions of the upper triangle (on and above diagonal ``k``)."""
    return _triangle_indices(int(n), int(n if m is None else m), int(k), False)


def tril_indices_from(arr: Any, k: int = 0) -> Tuple[Tensor, Tensor]:
    """:func:`tril_indices` for a 2-d tensor's shape."""
    t = _to_tensor(arr)
    if t.ndim != 2:
        raise ValueError("input array must be 2-d")
    return tril_indices(t.shape[-2], k=k, m=t.shape[-1])


def triu_indices_from(arr: Any, k: int = 0) -> Tuple[Tensor, Tensor]:
    """:func:`triu_indices` for a 2-d tensor's shape."""
    t = _to_tensor(arr)
    if t.ndim != 2:
        raise ValueError("input array must be 2-d")
    return triu_indices(t.shape[-2], k=k, m=t.shape[-1])


def diag_indices(n: int, ndim: int = 2) -> Tuple[Tensor, ...]:
    """The positions of the main diagonal of an ``n × ... × n`` tensor: ``ndim`` copies
    of ``arange(n)``."""
    idx = arange(n)
    return (idx,) * ndim


def diag_indices_from(arr: Any) -> Tuple[Tensor, ...]:
    """:func:`diag_indices` for a tensor whose dimensions are all equal."""
    t = _to_tensor(arr)
    if t.ndim < 2:
        raise ValueError("input array must be at least 2-d")
    if builtins.any(d != t.shape[0] for d in t.shape):
        raise ValueError("All dimensions of input must be of equal length")
    return diag_indices(t.shape[0], t.ndim)


def indices(dimensions: Sequence[int], dtype: Any = int, sparse: builtins.bool = False) -> Any:
    """A grid of positions: a tensor of shape ``(len(dimensions), *dimensions)`` whose
    ``i``-th slice holds each element's position along axis ``i`` (with ``sparse``, a
    tuple of broadcastable ranges)."""
    dims = tuple(int(d) for d in dimensions)
    nd = len(dims)
    ranges = []
    for i, d in enumerate(dims):
        ranges.append(arange(d, dtype=dtype).reshape((1,) * i + (d,) + (1,) * (nd - i - 1)))
    if sparse:
        return tuple(ranges)
    if nd == 0:
        return zeros((0,), dtype=dtype)
    return stack([broadcast_to(r, dims) for r in ranges], axis=0)


def ix_(*args: Any) -> Tuple[Tensor, ...]:
    """Open-mesh index tensors from 1-d sequences (boolean ones as their positions):
    the ``k``-th reshaped to lie along axis ``k``."""
    out = []
    nd = len(args)
    for k, new in enumerate(args):
        if isinstance(new, Tensor):
            t = new
        else:
            a = np.asarray(new)
            if a.size == 0:
                a = a.astype(np.int64)
            if a.dtype == np.bool_ and a.ndim == 1:
                a = np.flatnonzero(a)
            t = _to_tensor(a)
        if t.ndim != 1:
            raise ValueError("Cross index must be 1 dimensional")
        if t.dtype == np.bool_:
            t = nonzero(t)[0]
        out.append(t.reshape((1,) * k + (-1,) + (1,) * (nd - k - 1)))
    return tuple(out)


def _strides(dims: Tuple[int, ...], order: str) -> List[int]:
    if order not in ("C", "F"):
        raise ValueError("only 'C' or 'F' order is permitted")
    strides, s = [0] * len(dims), 1
    for d in range(len(dims)) if order == "F" else range(len(dims) - 1, -1, -1):
        strides[d] = s
        s *= dims[d]
    return strides


def unravel_index(indices: Any, shape: Any, order: str = "C") -> Tuple[Tensor, ...]:
    """The coordinates in ``shape`` of flat positions ``indices`` (one int64 tensor per
    dimension, of ``indices``' shape). A position outside ``[0, size)`` raises
    ``ValueError`` at once when given as data; in a tensor it fails the computation with
    an ``IndexError``."""
    dims = (int(shape),) if isinstance(shape, (numbers.Integral, np.integer)) else tuple(int(d) for d in shape)
    size = math.prod(dims)
    known = _known_positions(indices)
    if known is not None:
        if known.dtype.kind not in "iu":
            raise TypeError("only int indices permitted")
        if known.size and ((known < 0) | (known >= size)).any():
            bad = known[(known < 0) | (known >= size)].reshape(-1)[0]
            raise ValueError(f"index {bad} is out of bounds for array with size {size}")
        idx = _to_tensor(known.astype(np.int64))
    else:
        if indices.dtype.kind not in "iu":
            raise TypeError("only int indices permitted")
        idx = indices.astype(np.int64)
        idx = _guarded(idx, (idx < 0) | (idx >= size))
    strides = _strides(dims, order)
    return tuple((idx // s) % d if d else idx * 0 for s, d in zip(strides, dims))


def ravel_multi_index(multi_index: Any, dims: Any, mode: Any = "raise", order: str = "C") -> Tensor:
    """The flat positions (int64) of coordinate tensors in ``dims``; ``mode`` ``'raise'``
    (a coordinate out of its dimension raises ``ValueError`` at once when given as data,
    fails the computation with an ``IndexError`` in a tensor), ``'wrap'`` or ``'clip'``,
    one for all dimensions or one each."""
    dims = (int(dims),) if isinstance(dims, (numbers.Integral, np.integer)) else tuple(int(d) for d in dims)
    coords = list(multi_index)
    if len(coords) != len(dims):
        raise ValueError(f"parameter multi_index must be a sequence of length {len(dims)}")
    modes = [mode] * len(dims) if isinstance(mode, str) else list(mode)
    strides = _strides(dims, order)
    flat = None
    bad = None
    for c, d, s, md in zip(coords, dims, strides, modes):
        known = _known_positions(c)
        if known is not None and known.dtype.kind not in "iu" and known.size:
            raise TypeError("only int indices permitted")
        if isinstance(c, Tensor) and c.dtype.kind not in "iu":
            raise TypeError("only int indices permitted")
        t = _to_tensor(known.astype(np.int64)) if known is not None else c.astype(np.int64)
        if md == "wrap":
            t = t % d
        elif md == "clip":
            t = clip(t, 0, builtins.max(d - 1, 0))
        elif md == "raise":
            if known is not None:
                if known.size and ((known < 0) | (known >= d)).any():
                    raise ValueError("invalid entry in coordinates array")
            else:
                out = (t < 0) | (t >= d)
                bad = out if bad is None else bad | out
        else:
            raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {md!r})")
        term = t * s
        flat = term if flat is None else flat + term
    if flat is None:
        raise ValueError("ravel_multi_index needs at least one coordinate")
    shape = np.broadcast_shapes(*(_to_tensor(c).shape if isinstance(c, Tensor) else np.shape(c) for c in coords))
    flat = broadcast_to(flat, shape)
    return _guarded(flat, broadcast_to(bad, shape)) if bad is not None else flat


class _Grid:
    """numpy's ``mgrid`` (dense) and ``ogrid`` (sparse): ``grid[start:stop:step, ...]``
    gives ranges (a complex step ``5j`` asks for that many points, stop included), as
    lazy tensors."""

    def __init__(self, sparse: builtins.bool) -> None:
        self.sparse = sparse

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, slice):
            start = 0 if key.start is None else key.start
            step, stop = key.step, key.stop
            if isinstance(step, (complex, np.complexfloating)):
                length = int(builtins.abs(step))
                typ = np.result_type(start, stop, builtins.abs(step))
                st = (stop - start) / float(length - 1) if length != 1 else length
                return arange(0, length, 1, dtype=typ) * st + start
            return arange(start, stop, 1 if step is None else step)
        key = tuple(key)
        size, nums = [], [0]
        for k in key:
            start = 0 if k.start is None else k.start
            step = 1 if k.step is None else k.step
            if isinstance(step, (complex, np.complexfloating)):
                step = builtins.abs(step)
                size.append(int(step))
            else:
                size.append(math.ceil((k.stop - start) / step))
            nums += [start, k.stop, step]
        typ = np.result_type(*nums)
        nd = len(size)
        out = []
        for i, (k, n) in enumerate(zip(key, size)):
            start = 0 if k.start is None else k.start
            step = 1 if k.step is None else k.step
            if isinstance(step, (complex, np.complexfloating)):
                step = int(builtins.abs(step))
                if step != 1:
                    step = (k.stop - start) / float(step - 1)
            r = arange(n, dtype=typ) * step + start
            out.append(r.reshape((1,) * i + (n,) + (1,) * (nd - i - 1)))
        if self.sparse:
            return tuple(out)
        return stack([broadcast_to(r, tuple(size)).astype(typ) for r in out], axis=0)


mgrid = _Grid(sparse=False)
ogrid = _Grid(sparse=True)


# ---------------------------------------------------------------- searching and selecting


def flatnonzero(a: Any) -> Tensor:
    """The positions of the non-zero elements of the flattened tensor (lazy: the length
    is known once computed)."""
    return nonzero(_to_tensor(a).reshape(-1))[0]


def argwhere(a: Any) -> Tensor:
    """The coordinates of the non-zero elements, one row each (``(count, ndim)``, the
    count known once computed)."""
    t = _to_tensor(a)
    if t.ndim == 0:
        # One row of no coordinates if the element is non-zero, else none.
        hit = nonzero(t.reshape(1))[0]
        return take(zeros((1, 0), dtype=np.int64), hit, axis=0)
    return concatenate([i.reshape(-1, 1) for i in nonzero(t)], axis=1)


def compress(condition: Any, a: Any, axis: Optional[int] = None, out: Any = None) -> Tensor:
    """The slices of ``a`` along ``axis`` (of the flattened tensor when None) where the
    1-d ``condition`` holds; a condition shorter than the axis counts as false beyond its
    end. A condition in hand gives a known length; a tensor one, a lazy length."""
    _check_out("compress", out, {})
    t = _to_tensor(a)
    if axis is None:
        t, axis = t.reshape(-1), 0
    ax = _axis_of(axis, t.ndim)[0]
    if isinstance(condition, Tensor):
        if condition.ndim != 1:
            raise ValueError("condition must be a 1-d array")
        return take(t, nonzero(condition)[0], axis=ax)
    c = np.asarray(condition)
    if c.ndim != 1:
        raise ValueError("condition must be a 1-d array")
    return take(t, _to_tensor(np.flatnonzero(c).astype(np.int64)), axis=ax)


def extract(condition: Any, arr: Any) -> Tensor:
    """The elements of the flattened ``arr`` where the flattened ``condition`` is
    non-zero."""
    t = _to_tensor(arr).reshape(-1)
    if isinstance(condition, Tensor):
        return take(t, nonzero(condition.reshape(-1))[0])
    return take(t, _to_tensor(np.flatnonzero(np.asarray(condition)).astype(np.int64)))


def select(condlist: Sequence[Any], choicelist: Sequence[Any], default: Any = 0) -> Tensor:
    """From each choice where its condition (the first that holds) holds, else
    ``default``: a chain of :func:`where` in numpy's result dtype."""
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    if len(condlist) == 0:
        raise ValueError("select with an empty condition list is not possible")
    dt = np.result_type(*(_weak(c) for c in list(choicelist) + [default]))
    conds = [_to_tensor(c) for c in condlist]
    for i, c in enumerate(conds):
        if c.dtype != np.bool_:
            raise TypeError(f"invalid entry {i} in condlist: should be boolean ndarray")
    choices = [_as_dtype(c, dt) for c in list(choicelist) + [default]]
    both = _aligned(conds + choices)
    conds, choices = both[: len(conds)], both[len(conds) :]
    r = choices[-1]
    for c, v in zip(reversed(conds), reversed(choices[:-1])):
        r = where(c, v, r)
    return r.astype(dt)


def choose(a: Any, choices: Sequence[Any], out: Any = None, mode: str = "raise") -> Tensor:
    """``choices[a[i]][i]`` for each position (broadcast): a chain of :func:`where`.
    ``mode='raise'`` checks ``a`` (at once for data in hand; for a tensor the
    computation fails with an ``IndexError``), ``'wrap'`` and ``'clip'`` as numpy."""
    _check_out("choose", out, {})
    if isinstance(choices, Tensor):
        choices = [choices[i] for i in range(choices.shape[0])]
    n = len(choices)
    if n == 0:
        raise ValueError("0-length sequence.")
    known = _known_positions(a)
    idx = _to_tensor(known) if known is not None else a
    if idx.dtype.kind not in "biu":
        raise TypeError("Cannot cast array data to int64 according to the rule 'safe'")
    idx = idx.astype(np.int64)
    if mode == "raise":
        if known is not None:
            if known.size and ((known < 0) | (known >= n)).any():
                raise ValueError("invalid entry in choice array")
        else:
            idx = _guarded(idx, (idx < 0) | (idx >= n))
    elif mode == "wrap":
        idx = idx % n
    elif mode == "clip":
        idx = clip(idx, 0, n - 1)
    else:
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})")
    _, cs = _common(*choices)
    idx, *cs = _aligned([idx] + cs)
    r = cs[-1]
    for i in range(n - 2, -1, -1):
        r = where(idx == i, cs[i], r)
    if n == 1:
        # The positions must take part (their check fails the computation).
        r = where(idx == 0, r, r)
    return r


def piecewise(x: Any, condlist: Any, funclist: Sequence[Any], *args: Any, **kw: Any) -> Tensor:
    """numpy's ``piecewise``: where each condition holds (a later one overriding), the
    value of its function (or constant), in ``x``'s dtype; one more function than
    conditions covers the rest; elsewhere 0. Lazy: each function is applied to the whole
    of ``x`` (it must accept a tensor, as ``at.sin`` or a lambda of arithmetic does) and
    its values kept where its condition holds, where numpy calls it on the selected
    elements only."""
    t = _to_tensor(x)
    if isinstance(condlist, (Tensor, np.ndarray)):
        # numpy's reading of an array: its first axis lists the conditions, unless it is
        # one 1-d condition (for an ``x`` that is not 0-d).
        c = _to_tensor(condlist)
        conds = [c] if c.ndim == 0 or (c.ndim == 1 and t.ndim != 0) else [c[i] for i in range(c.shape[0])]
    elif isinstance(condlist, (builtins.bool, np.bool_)) or (
        isinstance(condlist, list) and condlist and not isinstance(condlist[0], (list, np.ndarray, Tensor)) and t.ndim != 0
    ):
        conds = [_to_tensor(np.asarray(condlist))]
    else:
        conds = [_to_tensor(c) for c in condlist]
    conds = _aligned([t] + [c if c.dtype == np.bool_ else c != 0 for c in conds])[1:]
    n, n2 = len(conds), len(funclist)
    if n == n2 - 1:
        covered = conds[0]
        for c in conds[1:]:
            covered = covered | c
        conds.append(~covered)
        n += 1
    elif n != n2:
        raise ValueError(f"with {n} condition(s), either {n} or {n + 1} functions are expected")
    y = _full_like(t, 0, t.dtype)
    for c, f in zip(conds, funclist):
        v = f(t, *args, **kw) if callable(f) else f
        y = where(c, _as_dtype(v, t.dtype), y)
    return y


# ---------------------------------------------------------------- element-wise


def nan_to_num(x: Any, copy: builtins.bool = True, nan: float = 0.0, posinf: Optional[float] = None, neginf: Optional[float] = None) -> Tensor:
    """NaN replaced by ``nan``, infinities by ``posinf``/``neginf`` (by default the
    largest and smallest finite values of the dtype); integers and booleans unchanged."""
    t = _to_tensor(x)
    if t.dtype.kind != "f":
        return t
    info = np.finfo(t.dtype)
    hi = info.max if posinf is None else posinf
    lo = info.min if neginf is None else neginf
    fill = [_as_dtype(np.asarray(v).astype(t.dtype), t.dtype) for v in (nan, hi, lo)]
    r = where(isnan(t), fill[0], t)
    r = where(isinf(t) & ~signbit(t), fill[1], r)
    return where(isinf(t) & signbit(t), fill[2], r)


def fix(x: Any, out: Any = None) -> Tensor:
    """Rounded toward zero (numpy's ``fix``, which equals ``trunc``; integers keep their
    dtype)."""
    _check_out("fix", out, {})
    return trunc(x)


def modf(x: Any, /) -> Tuple[Tensor, Tensor]:
    """The fractional and integral parts, both with ``x``'s sign (``modf(inf)`` is
    ``(0, inf)``), exactly: ``x - trunc(x)`` is exact in floating point. Integers give
    floats (float64 where numpy gives float16)."""
    _, (t,) = _floats(x)
    whole = trunc(t)
    frac = copysign(where(isinf(t), 0.0, t - whole), t)
    return frac, whole


def _frexp64(w: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
    """``(m, e, special)`` with ``|w| = m · 2**e``, ``1 <= m < 2``, for a float64 tensor
    ``w`` (``special``: zero, infinite or NaN, where ``m = 1, e = 0``). The exponent is
    ``floor(log2|w|)`` corrected by one step either way (the logarithm may round across
    an integer); dividing by the power of two is exact."""
    a = absolute(w)
    special = (a == 0) | ~isfinite(a)
    a = where(special, 1.0, a)
    e = clip(floor(log2(a)), -1074.0, 1023.0)
    m = a / 2.0**e
    up = m >= 2.0
    e, m = where(up, e + 1.0, e), where(up, m / 2.0, m)
    down = m < 1.0
    e, m = where(down, e - 1.0, e), where(down, m * 2.0, m)
    return m, e, special


def frexp(x: Any, /) -> Tuple[Tensor, Tensor]:
    """The mantissa (``0.5 <= |m| < 1``, ``x``'s float dtype) and the int32 exponent with
    ``x = m · 2**e``, exactly (subnormals included); zero, infinities and NaN give
    themselves and exponent 0. Integers give float64 mantissas (float16 in numpy for
    8-bit ones)."""
    dt, (t,) = _floats(x)
    w = t.astype(np.float64)
    m, e, special = _frexp64(w)
    mant = where(special, w, copysign(m / 2.0, w)).astype(dt)
    exp_ = where(special, 0.0, e + 1.0).astype(np.int32)
    return mant, exp_


def ldexp(x1: Any, x2: Any, /) -> Tensor:
    """``x1 · 2**x2`` (``x2`` integers), exactly, with numpy's overflow to infinity and
    rounding into the subnormals: float32 in float64 (where the product is exact) and
    one rounding cast back; float64 as its mantissa times powers of two that cannot
    overflow or underflow before the last product."""
    x1t = _to_tensor(x1) if isinstance(x1, (Tensor, np.ndarray)) else _to_tensor(np.asarray(x1, dtype=_float_dtype(np.asarray(x1).dtype)))
    dt = _float_dtype(x1t.dtype)
    t = x1t.astype(dt)
    e = _to_tensor(x2) if isinstance(x2, (Tensor, np.ndarray)) else _to_tensor(np.asarray(x2))
    if e.dtype.kind not in "biu" or e.dtype == np.uint64:
        raise TypeError(f"ufunc 'ldexp' not supported for the input types ({t.dtype}, {e.dtype})")
    t, e = _aligned([t, e.astype(np.int64)])
    if dt == np.float32:
        p = clip(e, -400, 400).astype(np.float64)
        return (t.astype(np.float64) * 2.0**p).astype(np.float32)
    m, k, special = _frexp64(t)
    # |t| = m · 2**k with 1 <= m < 2; the result is m · 2**E.
    big = clip(e, -2200, 2200).astype(np.float64) + k
    E = clip(big, -1200.0, 1100.0)
    s = where(E < -1000.0, -60.0, 0.0)
    y = copysign(m, t) * 2.0**s * 2.0 ** (E - s)
    return where(special, t, y)


def _float_parts(dt: np.dtype) -> Tuple[int, int, float, float]:
    """(mantissa bits, exponent of the smallest subnormal, its value, the largest
    finite) of a float dtype."""
    if dt == np.float32:
        return 24, -149, float(np.finfo(np.float32).smallest_subnormal), float(np.finfo(np.float32).max)
    return 53, -1074, float(np.finfo(np.float64).smallest_subnormal), float(np.finfo(np.float64).max)


def nextafter(x1: Any, x2: Any, /) -> Tensor:
    """The next representable float after ``x1`` towards ``x2``, exactly: ``x1`` plus or
    minus its unit in the last place (half of it stepping down in magnitude from a power
    of two), computed from :func:`frexp`'s exponent; ``x2`` itself where they are
    equal."""
    dt, (a, b) = _floats(x1, x2)
    bits, tiny_exp, tiny, big = _float_parts(dt)
    w, z = a.astype(np.float64), b.astype(np.float64)
    m, e, _ = _frexp64(w)
    # |w| = m · 2**e, 1 <= m < 2: the ulp is 2**(e - bits + 1), at least the smallest
    # subnormal; below a power of two (m == 1) the spacing halves.
    ulp = 2.0 ** maximum(e - (bits - 1), float(tiny_exp))
    half = 2.0 ** maximum(e - bits, float(tiny_exp))
    up = z > w
    away = up == (w > 0)
    step = where(away | (m != 1.0), ulp, half)
    r = where(up, w + step, w - step)
    r = where(w == 0, where(up, tiny, -tiny), r)
    r = where(isinf(w), copysign(big, w), r)
    # A step onto zero keeps the sign it came from (numpy's -0.0 above -tiny).
    r = where(r == 0, copysign(0.0, w), r)
    r = where(w == z, z, r)
    r = where(isnan(w) | isnan(z), w + z, r)
    return r.astype(dt)


def spacing(x: Any, /) -> Tensor:
    """The distance from ``x`` to the next float away from zero (negative for negative
    ``x``; the smallest subnormal at zero, NaN at infinities), exactly (see
    :func:`nextafter`)."""
    dt, (t,) = _floats(x)
    w = t.astype(np.float64)
    _, _, tiny, _ = _float_parts(dt)
    toward = copysign(math.inf, w)
    nxt = nextafter(t, toward.astype(dt)).astype(np.float64)
    r = where(w == 0, tiny, nxt - w)
    r = where(isinf(w), math.nan, r)
    return r.astype(dt)


def heaviside(x1: Any, x2: Any, /) -> Tensor:
    """0 where ``x1 < 0``, 1 where ``x1 > 0``, ``x2`` where ``x1 == 0`` (NaN for NaN), in
    numpy's float dtype."""
    dt, (a, h) = _floats(x1, x2)
    r = where(a < 0, _as_dtype(0, dt), where(a > 0, _as_dtype(1, dt), h))
    return where(isnan(a), a, r)


def _integers(name: str, x1: Any, x2: Any) -> Tuple[np.dtype, Tensor, Tensor]:
    dt, (a, b) = _common(x1, x2)
    if dt.kind not in "iu":
        raise TypeError(f"ufunc '{name}' did not contain a loop with signature matching types ({dt}, {dt})")
    return dt, a, b


def _euclid_steps(bits: int) -> int:
    """Remainder steps that Euclid's algorithm may need on ``bits``-bit unsigned values:
    consecutive Fibonacci numbers are the worst case, about 1.44 steps per bit."""
    return math.ceil(bits * 1.4405) + 2


def _gcd_unsigned(a: Tensor, b: Tensor) -> Tensor:
    """The greatest common divisor of unsigned tensors: a fixed number of Euclid's
    remainder steps (a pair already at ``(g, 0)`` stays there)."""
    for _ in range(_euclid_steps(a.dtype.itemsize * 8)):
        nz = b != 0
        a, b = where(nz, b, a), where(nz, remainder(a, where(nz, b, 1)), b)
    return a


def _magnitudes(dt: np.dtype, a: Tensor, b: Tensor) -> Tuple[np.dtype, Tensor, Tensor]:
    """``|a|, |b|`` in the unsigned dtype of ``dt``'s width (the most negative value's
    magnitude fits there)."""
    ut = np.dtype(f"u{dt.itemsize}")
    if dt.kind == "u":
        return ut, a, b
    return ut, absolute(a).astype(ut), absolute(b).astype(ut)


def gcd(x1: Any, x2: Any, /) -> Tensor:
    """The greatest common divisor of integers (``gcd(0, 0) = 0``), as numpy computes it:
    on the magnitudes, by a fixed number of Euclid's steps (about 1.44 per bit: 95 for
    64-bit integers), each an element-wise remainder; the most negative value gives
    itself where numpy's does."""
    dt, a, b = _integers("gcd", x1, x2)
    _, ua, ub = _magnitudes(dt, a, b)
    return _gcd_unsigned(ua, ub).astype(dt)


def lcm(x1: Any, x2: Any, /) -> Tensor:
    """The least common multiple of integers (0 if either is 0): ``|a| / gcd · |b|``,
    wrapping on overflow as numpy's does (so an overflowed result may be negative)."""
    dt, a, b = _integers("lcm", x1, x2)
    ut, ua, ub = _magnitudes(dt, a, b)
    g = _gcd_unsigned(ua, ub)
    safe = where(g == 0, 1, g).astype(ut)
    return where(g == 0, 0, floor_divide(ua, safe) * ub).astype(ut).astype(dt)


def fmax(x1: Any, x2: Any, /) -> Tensor:
    """Element-wise maximum ignoring NaN (NaN only where both are)."""
    dt, (a, b) = _common(x1, x2)
    if dt.kind != "f":
        return maximum(a, b)
    return where(isnan(b), a, where(isnan(a), b, maximum(a, b)))


def fmin(x1: Any, x2: Any, /) -> Tensor:
    """Element-wise minimum ignoring NaN (NaN only where both are)."""
    dt, (a, b) = _common(x1, x2)
    if dt.kind != "f":
        return minimum(a, b)
    return where(isnan(b), a, where(isnan(a), b, minimum(a, b)))


def fmod(x1: Any, x2: Any, /) -> Tensor:
    """C's remainder, with the dividend's sign (numpy's ``fmod``): for floats the
    remainder of the magnitudes with ``x1``'s sign (exact), for integers the floored
    remainder moved to the dividend's sign (an integer divided by 0 gives 0, as
    numpy)."""
    dt, (a, b) = _common(x1, x2)
    if dt.kind == "b":
        raise TypeError("ufunc 'fmod' not supported for booleans")
    if dt.kind == "f":
        return copysign(remainder(absolute(a), absolute(b)), a)
    r = remainder(a, b)
    if dt.kind == "u":
        return r
    return where((r != 0) & ((r < 0) != (a < 0)), r - b, r)


def divmod(x1: Any, x2: Any, /) -> Tuple[Tensor, Tensor]:  # noqa: A001 - numpy's name
    """``(x1 // x2, x1 % x2)``, as numpy's ``divmod``."""
    return floor_divide(x1, x2), remainder(x1, x2)


def float_power(x1: Any, x2: Any, /) -> Tensor:
    """``x1 ** x2`` computed in float64 (numpy's ``float_power``)."""
    _, (a, b) = _common(x1, x2)
    return a.astype(np.float64) ** b.astype(np.float64)


_LOG2E = 1.442695040888963407359924681001892137


def logaddexp2(x1: Any, x2: Any, /) -> Tensor:
    """``log2(2**x1 + 2**x2)`` without overflow, as numpy computes it: the larger plus
    ``log2(1 + 2**-|x1 - x2|)``; ``x1 + 1`` where they are equal."""
    _, (a, b) = _floats(x1, x2)
    d = a - b
    hi = where(d > 0, a, b)
    r = hi + log1p(2.0 ** (-absolute(d))) * _LOG2E
    r = where(a == b, a + 1, r)
    return where(isnan(d) & (a != b), d, r)


def cbrt(x: Any, /) -> Tensor:
    """The real cube root: ``|x| ** (1/3)`` with ``x``'s sign, refined by one Newton step
    in float64 (within an ulp of numpy's ``cbrt``, not always equal to it)."""
    dt, (t,) = _floats(x)
    w = t.astype(np.float64)
    # Tiny values are scaled up by 2**300 (and the root down by 2**100), exactly, so
    # that the Newton step does not lose bits to subnormal intermediates.
    tiny = absolute(w) < 2.0**-900
    w = where(tiny, w * 2.0**300, w)
    r = copysign(absolute(w) ** (1.0 / 3.0), w)
    ok = (r != 0) & isfinite(r)
    rs = where(ok, r, 1.0)
    refined = where(ok, rs - (rs * rs * rs - w) / (3.0 * rs * rs), r)
    return where(tiny, refined * 2.0**-100, refined).astype(dt)


def reciprocal(x: Any, /) -> Tensor:
    """``1 / x`` in ``x``'s dtype; for integers numpy's truncated ``1 / x`` (1, -1 or 0;
    an integer 0 gives 0 here, where numpy's C conversion of infinity is undefined)."""
    t = _to_tensor(x)
    if t.dtype.kind == "f":
        return 1 / t
    if t.dtype.kind == "b":
        t = t.astype(np.int8)
    r = where(t == 1, _as_dtype(1, t.dtype), _as_dtype(0, t.dtype))
    return where(t == -1, _as_dtype(-1, t.dtype), r) if t.dtype.kind == "i" else r


def _scaled(x: Any, num: float, den: float) -> Tensor:
    """``x · (num / den)`` with the factor computed in ``x``'s float dtype, as numpy's C
    loops do."""
    dt, (t,) = _floats(x)
    c = dt.type(num) / dt.type(den)
    return t * c


def deg2rad(x: Any, /) -> Tensor:
    """Degrees to radians: ``x · (π/180)``."""
    return _scaled(x, np.pi, 180.0)


def rad2deg(x: Any, /) -> Tensor:
    """Radians to degrees: ``x · (180/π)``."""
    return _scaled(x, 180.0, np.pi)


def radians(x: Any, /) -> Tensor:
    """Degrees to radians (:func:`deg2rad`)."""
    return deg2rad(x)


def degrees(x: Any, /) -> Tensor:
    """Radians to degrees (:func:`rad2deg`)."""
    return rad2deg(x)


def sinc(x: Any) -> Tensor:
    """``sin(πx) / (πx)`` (1 at 0), as numpy computes it."""
    t = _to_tensor(x)
    y = np.pi * where(t == 0, 1.0e-20, t)
    return sin(y) / y


def isposinf(x: Any, out: Any = None) -> Tensor:
    """Whether each element is +inf (false for integers and booleans)."""
    _check_out("isposinf", out, {})
    t = _to_tensor(x)
    if t.dtype.kind != "f":
        return _full_like(t, False, np.bool_)
    return isinf(t) & ~signbit(t)


def isneginf(x: Any, out: Any = None) -> Tensor:
    """Whether each element is -inf (false for integers and booleans)."""
    _check_out("isneginf", out, {})
    t = _to_tensor(x)
    if t.dtype.kind != "f":
        return _full_like(t, False, np.bool_)
    return isinf(t) & signbit(t)


def isreal(x: Any) -> Tensor:
    """Whether each element has no imaginary part: all true (complex dtypes are not
    supported)."""
    return _full_like(_to_tensor(x), True, np.bool_)


def iscomplex(x: Any) -> Tensor:
    """Whether each element has an imaginary part: all false."""
    return _full_like(_to_tensor(x), False, np.bool_)


def isrealobj(x: Any) -> builtins.bool:
    """Whether ``x``'s dtype is not complex: always (complex dtypes are not supported)."""
    return not np.issubdtype(_to_tensor(x).dtype, np.complexfloating)


def iscomplexobj(x: Any) -> builtins.bool:
    """Whether ``x``'s dtype is complex: never."""
    return not isrealobj(x)


def angle(z: Any, deg: builtins.bool = False) -> Tensor:
    """The argument of each (real) element: 0 for positive ones and +0, π for negative
    ones and -0 (``arctan2(0, z)``); in degrees with ``deg``."""
    t = _to_tensor(z)
    a = arctan2(0, t)
    return a * (180 / np.pi) if deg else a


_I0A = [
    -4.41534164647933937950e-18, 3.33079451882223809783e-17, -2.43127984654795469359e-16,
    1.71539128555513303061e-15, -1.16853328779934516808e-14, 7.67618549860493561688e-14,
    -4.85644678311192946090e-13, 2.95505266312963983461e-12, -1.72682629144155570723e-11,
    9.67580903537323691224e-11, -5.18979560163526290666e-10, 2.65982372468238665035e-9,
    -1.30002500998624804212e-8, 6.04699502254191894932e-8, -2.67079385394061173391e-7,
    1.11738753912010371815e-6, -4.41673835845875056359e-6, 1.64484480707288970893e-5,
    -5.75419501008210370398e-5, 1.88502885095841655729e-4, -5.76375574538582365885e-4,
    1.63947561694133579842e-3, -4.32430999505057594430e-3, 1.05464603945949983183e-2,
    -2.37374148058994688156e-2, 4.93052842396707084878e-2, -9.49010970480476444210e-2,
    1.71620901522208775349e-1, -3.04682672343198398683e-1, 6.76795274409476084995e-1,
]  # fmt: skip

_I0B = [
    -7.23318048787475395456e-18, -4.83050448594418207126e-18, 4.46562142029675999901e-17,
    3.46122286769746109310e-17, -2.82762398051658348494e-16, -3.42548561967721913462e-16,
    1.77256013305652638360e-15, 3.81168066935262242075e-15, -9.55484669882830764870e-15,
    -4.15056934728722208663e-14, 1.54008621752140982691e-14, 3.85277838274214270114e-13,
    7.18012445138366623367e-13, -1.79417853150680611778e-12, -1.32158118404477131188e-11,
    -3.14991652796324136454e-11, 1.18891471078464383424e-11, 4.94060238822496958910e-10,
    3.39623202570838634515e-9, 2.26666899049817806459e-8, 2.04891858946906374183e-7,
    2.89137052083475648297e-6, 6.88975834691682398426e-5, 3.36911647825569408990e-3,
    8.04490411014108831608e-1,
]  # fmt: skip


def _chbevl(x: Tensor, vals: List[float]) -> Tensor:
    """Clenshaw's sum of a Chebyshev series, as numpy's ``_chbevl``."""
    b0: Any = vals[0]
    b1: Any = 0.0
    b2: Any = 0.0
    for v in vals[1:]:
        b2 = b1
        b1 = b0
        b0 = x * b1 - b2 + v
    return 0.5 * (b0 - b2)


def i0(x: Any) -> Tensor:
    """The modified Bessel function of the first kind, order 0, by numpy's Chebyshev
    series (Cephes): both pieces computed and the one for ``|x| <= 8`` or beyond kept."""
    t = _to_tensor(x)
    if t.dtype.kind != "f":
        t = t.astype(np.float64)
    a = absolute(t)
    small = exp(a) * _chbevl(a / 2.0 - 2, _I0A)
    safe = where(a == 0, 1.0, a)
    large = exp(a) * _chbevl(32.0 / safe - 2.0, _I0B) / sqrt(safe)
    return where(a <= 8.0, small, large)


# ---------------------------------------------------------------- differences and sets


def ediff1d(ary: Any, to_end: Any = None, to_begin: Any = None) -> Tensor:
    """The differences of consecutive elements of the flattened tensor, in its dtype,
    with ``to_begin`` and ``to_end`` (cast to it under numpy's ``same_kind`` rule) around
    them."""
    t = _to_tensor(ary).reshape(-1)
    n = t._known_shape("ediff1d")[0]
    d = t[1:] - t[: builtins.max(n - 1, 0)]
    parts = [d]
    for extra, name, first in ((to_begin, "to_begin", True), (to_end, "to_end", False)):
        if extra is None:
            continue
        e = _to_tensor(extra)
        if not np.can_cast(e.dtype, t.dtype, casting="same_kind"):
            raise TypeError(f"dtype of `{name}` must be compatible with input `ary` under the `same_kind` rule.")
        e = e.astype(t.dtype).reshape(-1)
        parts = [e] + parts if first else parts + [e]
    return concatenate(parts).astype(t.dtype) if len(parts) > 1 else d


def union1d(ar1: Any, ar2: Any) -> Tensor:
    """The sorted distinct values of both inputs (flattened): :func:`unique` of their
    join (lazy length)."""
    return unique(concatenate([_to_tensor(ar1).reshape(-1), _to_tensor(ar2).reshape(-1)]))


def intersect1d(ar1: Any, ar2: Any, assume_unique: builtins.bool = False, return_indices: builtins.bool = False) -> Any:
    """The sorted values found in both inputs (flattened; NaN never matches), lazily: the
    distinct values of ``ar1`` kept where :func:`isin` finds them in ``ar2``. With
    ``return_indices``, also the positions of their first occurrences in each input (a
    stable sort and a search)."""
    a, b = _to_tensor(ar1).reshape(-1), _to_tensor(ar2).reshape(-1)
    ua = sort(a) if assume_unique else unique(a)
    common = ua[isin(ua, b)]
    if not return_indices:
        return common

    def first(x: Tensor) -> Tensor:
        order = argsort(x, kind="stable")
        return take(order, searchsorted(take(x, order), common, side="left"))

    return common, first(a), first(b)


def setdiff1d(ar1: Any, ar2: Any, assume_unique: builtins.bool = False) -> Tensor:
    """The distinct values of ``ar1`` not in ``ar2`` (sorted); with ``assume_unique``
    ``ar1``'s elements not in ``ar2`` in their order, as numpy."""
    a = _to_tensor(ar1).reshape(-1)
    if not assume_unique:
        a = unique(a)
    return a[isin(a, ar2, invert=True)]


def setxor1d(ar1: Any, ar2: Any, assume_unique: builtins.bool = False) -> Tensor:
    """The sorted values in exactly one of the inputs (a NaN from each counts as
    different, as numpy's)."""
    a, b = _to_tensor(ar1).reshape(-1), _to_tensor(ar2).reshape(-1)
    if not assume_unique:
        a, b = unique(a), unique(b)
    return sort(concatenate([a[isin(a, b, invert=True)], b[isin(b, a, invert=True)]]))


def in1d(ar1: Any, ar2: Any, assume_unique: builtins.bool = False, invert: builtins.bool = False, *, kind: Any = None) -> Tensor:
    """:func:`isin` of the flattened ``ar1`` (numpy's former ``in1d``, removed in numpy
    2.4)."""
    return isin(_to_tensor(ar1).reshape(-1), ar2, assume_unique=assume_unique, invert=invert)


# ---------------------------------------------------------------- counting and histograms


def _search(a: Tensor, v: Tensor, side: str) -> Tensor:
    """:func:`searchsorted` with both operands in their common dtype, as numpy compares
    them (``at.searchsorted`` casts ``v`` to ``a``'s dtype, truncating floats searched
    among integers)."""
    dt = np.result_type(a.dtype, v.dtype)
    return searchsorted(a.astype(dt), v.astype(dt), side=side)


def _counts(sorted_x: Tensor, edges: Tensor, last_closed: builtins.bool) -> Tensor:
    """How many elements of the sorted ``sorted_x`` fall in each bin ``[e_i, e_i+1)`` (the
    last bin closed with ``last_closed``): the differences of searches of the edges."""
    k = edges.shape[0]
    lo = _search(sorted_x, edges[: k - 1], "left")
    hi = _search(sorted_x, edges[k - 1 :], "right" if last_closed else "left")
    return diff(concatenate([lo, hi]))


def _np_linspace(start: Tensor, stop: Tensor, num: int, dt: np.dtype) -> Tensor:
    """numpy's ``linspace(start, stop, num)`` of 0-d tensors, computed as numpy does in
    ``dt``: ``arange · step + start``, the last value set to ``stop``."""
    start, stop = start.astype(dt), stop.astype(dt)
    div = num - 1
    y = arange(num).astype(dt)
    delta = stop - start
    step = delta / div
    y = where(step == 0, y / div * delta, y * step) + start
    return where(arange(num) == num - 1, stop, y)


def _bin_edges(t: Tensor, bins: Any, range: Any) -> Tuple[Tensor, Optional[int]]:
    """The bin edges and, for equal bins, their number."""
    if isinstance(bins, str):
        raise NotImplementedError(f"histogram with bins={bins!r} (the number of bins would depend on the data); give a number or the edges")
    if np.ndim(bins) == 0 and not isinstance(bins, Tensor):
        n = bins.__index__() if hasattr(bins, "__index__") else None
        if n is None:
            raise TypeError("`bins` must be an integer, a string, or an array")
        if n < 1:
            raise ValueError("`bins` must be positive, when an integer")
        if range is not None:
            first, last = range
            if first > last:
                raise ValueError("max must be larger than min in range parameter.")
            if not (np.isfinite(first) and np.isfinite(last)):
                raise ValueError(f"supplied range of [{first}, {last}] is not finite")
            if first == last:
                first, last = first - 0.5, last + 0.5
            bin_type = np.result_type(first, last, t.dtype)
            if bin_type.kind in "biu":
                bin_type = np.result_type(bin_type, float)
            with np.errstate(all="ignore"):
                edges = np.linspace(first, last, n + 1, endpoint=True, dtype=bin_type)
            if (edges[:-1] >= edges[1:]).any():
                raise ValueError(f"Too many bins for data range. Cannot create {n} finite-sized bins.")
            return _to_tensor(edges), n
        size = t._known_shape("histogram")[0]
        bin_type = np.result_type(t.dtype, float) if t.dtype.kind in "biu" else t.dtype
        if size == 0:
            with np.errstate(all="ignore"):
                return _to_tensor(np.linspace(0, 1, n + 1, dtype=bin_type)), n
        # The range of the data, lazily (numpy computes it first); an empty range is
        # widened by 1/2 each way. The edges are numpy's linspace in the range's dtype.
        dt = np.dtype(np.float32) if t.dtype == np.float32 else np.dtype(np.float64)
        lo, hi = t.min(), t.max()
        same = lo == hi
        first = where(same, lo.astype(dt) - 0.5, lo.astype(dt))
        last = where(same, hi.astype(dt) + 0.5, hi.astype(dt))
        return _np_linspace(first, last, n + 1, dt).astype(bin_type), n
    edges = _to_tensor(bins)
    if edges.ndim != 1:
        raise ValueError("`bins` must be 1d, when an array")
    if not isinstance(bins, Tensor) and (np.asarray(bins)[:-1] > np.asarray(bins)[1:]).any():
        raise ValueError("`bins` must increase monotonically, when an array")
    return edges, None


def histogram_bin_edges(a: Any, bins: Any = 10, range: Any = None, weights: Any = None) -> Tensor:  # noqa: A002
    """The edges :func:`histogram` uses: ``bins`` equal bins over ``range`` (by default the
    data's minimum to maximum, computed lazily), or the given edges. NaN or infinities
    in the data without ``range`` give NaN edges (numpy raises ``ValueError``)."""
    t = _to_tensor(a).reshape(-1)
    return _bin_edges(t, bins, range)[0]


def histogram(a: Any, bins: Any = 10, range: Any = None, density: Optional[builtins.bool] = None, weights: Any = None) -> Tuple[Tensor, Tensor]:  # noqa: A002
    """``(hist, edges)`` as numpy's ``histogram``: the count (or the sum of ``weights``,
    in their dtype) of the elements in each bin ``[e_i, e_i+1)``, the last bin closed;
    with ``density``, normalised to integrate to 1. Counts are differences of searches of
    the edges in the sorted data; weights of equal bins are summed per bin as numpy's
    ``bincount`` does (a broadcast comparison with the bins: work ``len(a) × bins``),
    weights of given edges through the running sum of the sorted weights, as numpy's.
    ``bins`` as a string (data-dependent count) is not supported. Edges from the data's
    range (no ``range=``) are not checked: numpy raises for a non-finite range or bins
    too narrow to separate, here the edges are NaN or repeated."""
    t = _to_tensor(a).reshape(-1)
    edges, n_equal = _bin_edges(t, bins, range)
    nb = edges.shape[0] - 1
    if weights is None:
        s = sort(t)
        hist = _counts(s, edges, True)
    else:
        w = _to_tensor(weights)
        if w.shape != _to_tensor(a).shape:
            raise ValueError("weights should have the same shape as a.")
        w = w.reshape(-1)
        ntype = w.dtype
        if n_equal is not None:
            x = t.astype(edges.dtype)
            first, last = edges[0], edges[nb]
            inside = (t >= first) & (t <= last)
            pos = minimum(_search(edges, x, "right") - 1, nb - 1)
            pos = where(inside, pos, -1)
            hist = _onehot_sum(pos, w.astype(np.float64), nb).astype(ntype)
        else:
            order = argsort(t)
            s = take(t, order)
            cw = concatenate([zeros(1, dtype=ntype), take(w, order).cumsum()])
            k = edges.shape[0]
            at_edges = concatenate([_search(s, edges[: k - 1], "left"), _search(s, edges[k - 1 :], "right")])
            hist = diff(take(cw, at_edges))
    if density:
        db = diff(edges).astype(np.float64)
        return hist / db / hist.sum(), edges
    return hist, edges


# Elements per chunk of the broadcast comparison of positions with bins.
_ONEHOT_CHUNK = 1 << 20


def _onehot_sum(pos: Tensor, w: Tensor, nbins: int) -> Tensor:
    """The sum of ``w`` at each position ``0 <= p < nbins`` (others dropped): a broadcast
    comparison with the bins, reduced over the elements (float64, as numpy's
    ``bincount``)."""
    n = pos._known_shape("bincount")[0]
    if n == 0 or nbins == 0:
        return zeros(nbins, dtype=np.float64)
    cb = builtins.min(builtins.max(nbins, 1), 4096)
    cn = builtins.max(_ONEHOT_CHUNK // cb, 1)
    p = pos.rechunk(cn).reshape(n, 1)
    b = arange(nbins, chunk_size=cb).reshape(1, nbins)
    return where(p == b, w.rechunk(cn).reshape(n, 1), 0.0).sum(axis=0)


def bincount(x: Any, /, weights: Any = None, minlength: int = 0) -> Tensor:
    """How many times each value ``0 .. max(x)`` occurs in the non-negative integers
    ``x`` (with ``weights``, their float64 sums; for an empty ``x`` int64 zeros either
    way, as numpy), at least ``minlength`` long. The
    length depends on the data: ``x.min()`` and ``x.max()`` are computed first (one
    small fetch; a negative value raises ``ValueError`` as numpy). Counts come from a
    sort and a search; weights from a broadcast comparison with the bins (work ``len(x)
    × length``)."""
    t = _to_tensor(x)
    if t.ndim != 1:
        raise ValueError("object too deep for desired array" if t.ndim > 1 else "object of too small depth for desired array")
    if t.dtype.kind not in "biu" or t.dtype == np.uint64:
        raise TypeError(f"Cannot cast array data from dtype('{t.dtype}') to dtype('int64') according to the rule 'safe'")
    if minlength is None or int(minlength) < 0:
        raise ValueError("'minlength' must not be negative")
    t = t.astype(np.int64)
    n = t._known_shape("bincount")[0]
    length = int(minlength)
    if n == 0:
        # numpy's answer for no data is int64 zeros, weights or not.
        if weights is not None and _to_tensor(weights).shape != t.shape:
            raise ValueError("The weights and list don't have the same length.")
        return zeros(length, dtype=np.int64)
    if n:
        lo, hi = (int(v) for v in stack([t.min(), t.max()]).fetch())
        if lo < 0:
            raise ValueError("'list' argument must have no negative elements")
        length = builtins.max(length, hi + 1)
    if weights is None:
        return _counts(sort(t), arange(length + 1), False)
    w = _to_tensor(weights)
    if w.shape != t.shape:
        raise ValueError("The weights and list don't have the same length.")
    return _onehot_sum(t, w.astype(np.float64), length)


def digitize(x: Any, bins: Any, right: builtins.bool = False) -> Tensor:
    """The index of the bin each element of ``x`` falls in (int64): a search in
    ``bins``, increasing or decreasing. Edges in hand are checked for monotonicity at
    once; edges in a tensor choose the direction lazily (non-monotonic ones are not
    detected)."""
    xt = _to_tensor(x)
    side = "left" if right else "right"
    if not isinstance(bins, Tensor):
        b = np.asarray(bins)
        if b.ndim != 1:
            raise ValueError("bins must be 1d")
        d = np.diff(b)
        if (d >= 0).all():
            return _search(_to_tensor(b), xt, side)
        if (d <= 0).all():
            return len(b) - _search(_to_tensor(b[::-1].copy()), xt, side)
        raise ValueError("bins must be monotonically increasing or decreasing")
    bt = bins
    if bt.ndim != 1:
        raise ValueError("bins must be 1d")
    n = bt._known_shape("digitize")[0]
    inc = (bt[1:] >= bt[: builtins.max(n - 1, 0)]).all()
    up = _search(bt, xt, side)
    down = n - _search(flip(bt), xt, side)
    return where(inc, up, down)


def interp(x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None, period: Any = None) -> Tensor:
    """numpy's 1-d linear interpolation, lazily and with its arithmetic: the interval of
    each ``x`` found by a search in the increasing ``xp``, its ends gathered, ``slope ·
    (x - xp[j]) + fp[j]`` (from the other end if that is NaN); ``left``/``right``
    outside; float64."""
    xt = _to_tensor(x).astype(np.float64)
    xpt = _to_tensor(xp).astype(np.float64)
    fpt = _to_tensor(fp)
    if fpt.dtype.kind == "c":
        raise NotImplementedError("interp of complex values")
    fpt = fpt.astype(np.float64)
    if xpt.ndim != 1 or fpt.ndim != 1:
        raise ValueError("Data points must be 1-D sequences")
    if xpt.shape[0] != fpt.shape[0]:
        raise ValueError("fp and xp are not of the same length")
    if xpt.shape[0] == 0:
        raise ValueError("array of sample points is empty")
    if period is not None:
        if period == 0:
            raise ValueError("period must be a non-zero value")
        period = builtins.abs(period)
        left = right = None
        xt = xt % period
        xpt = xpt % period
        order = argsort(xpt)
        xpt, fpt = take(xpt, order), take(fpt, order)
        k = xpt.shape[0]
        xpt = concatenate([xpt[k - 1 :] - period, xpt, xpt[0:1] + period])
        fpt = concatenate([fpt[k - 1 :], fpt, fpt[0:1]])
    n = xpt.shape[0]
    lval = fpt[0] if left is None else _as_dtype(left, np.float64)
    rval = fpt[n - 1] if right is None else _as_dtype(right, np.float64)
    if n == 1:
        r = where(xt < xpt[0], lval, where(xt > xpt[0], rval, fpt[0]))
        return r
    j = searchsorted(xpt, xt, side="right") - 1
    jc = clip(j, 0, n - 2)
    x0, x1 = take(xpt, jc), take(xpt, jc + 1)
    y0, y1 = take(fpt, jc), take(fpt, jc + 1)
    slope = (y1 - y0) / (x1 - x0)
    r1 = slope * (xt - x0) + y0
    r2 = slope * (xt - x1) + y1
    r = where(isnan(r1), where(isnan(r2) & (y0 == y1), y0, r2), r1)
    r = where(xt == x0, y0, r)
    r = where(j >= n - 1, fpt[n - 1], r)
    r = where(xt < xpt[0], lval, r)
    r = where(xt > xpt[n - 1], rval, r)
    return where(isnan(xt), xt, r)


# ---------------------------------------------------------------- convolution and polynomials

# Up to this many terms a correlation is a sum of shifted slices; past it, one gather
# of the shifted windows (a Toeplitz matrix) and a matrix product.
_SHIFTED_MAX = 32


def _correlate_full(a: Tensor, v: Tensor) -> Tensor:
    """``c[t] = Σ_j a[t - (m-1) + j] · v[j]`` for ``t`` in ``[0, n+m-1)``: with the
    shorter operand's elements as factors of shifted slices of the other (padded with
    zeros), or as a matrix product with the gathered windows."""
    n, m = a.shape[0], v.shape[0]
    dt = np.result_type(a.dtype, v.dtype)
    a, v = a.astype(dt), v.astype(dt)
    length = n + m - 1
    if builtins.min(n, m) <= _SHIFTED_MAX:
        if m <= n:
            # c[t] = Σ_j v[j] · a_pad[t + j], a_pad = (m-1 zeros, a, m-1 zeros).
            pad = zeros(m - 1, dtype=dt)
            wide, factors, k = concatenate([pad, a, pad]), v, m
        else:
            # c[t] = Σ_i a[i] · w[t + n-1-i], w = v padded with n-1 zeros and reversed.
            pad = zeros(n - 1, dtype=dt)
            wide, factors, k = flip(concatenate([pad, v, pad])), flip(a), n
        acc: Optional[Tensor] = None
        for j in range(k):
            term = wide[j : j + length] * factors[j]
            if dt == np.bool_:
                acc = term if acc is None else acc | term
            else:
                acc = term if acc is None else acc + term
        assert acc is not None
        return acc
    pad = zeros(m - 1, dtype=dt)
    wide = concatenate([pad, a, pad])
    windows = take(wide, arange(length).reshape(length, 1) + arange(m).reshape(1, m))
    return matmul(windows, v)


def _conv_args(a: Any, v: Any, mode: str) -> Tuple[Tensor, Tensor]:
    x, y = _to_tensor(a), _to_tensor(v)
    if x.ndim != 1 or y.ndim != 1:
        raise ValueError("object too deep for desired array")
    if x.shape[0] == 0:
        raise ValueError("a cannot be empty")
    if y.shape[0] == 0:
        raise ValueError("v cannot be empty")
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"mode must be one of 'full', 'same', or 'valid' (got {mode!r})")
    return x, y


def correlate(a: Any, v: Any, mode: str = "valid") -> Tensor:
    """The cross-correlation of 1-d sequences, ``c[k] = Σ_n a[n+k] · v[n]`` (real
    dtypes), over numpy's ranges of ``k`` for ``mode`` ``'valid'``, ``'same'`` or
    ``'full'``. Up to 32 terms per output (the shorter length) it is a sum of shifted
    slices; longer, a gather of the shifted windows and a matrix product (work ``n ·
    m``)."""
    x, y = _conv_args(a, v, mode)
    n, m = x.shape[0], y.shape[0]
    full_ = _correlate_full(x, y)
    if mode == "full":
        return full_
    if mode == "valid":
        lo = builtins.min(n, m) - 1
        return full_[lo : lo + builtins.max(n, m) - builtins.min(n, m) + 1]
    k = builtins.min(n, m) - 1
    lo = k // 2 if n >= m else k - k // 2
    return full_[lo : lo + builtins.max(n, m)]


def convolve(a: Any, v: Any, mode: str = "full") -> Tensor:
    """The discrete linear convolution of 1-d sequences (numpy's, through
    :func:`correlate` with ``v`` reversed): ``'full'``, ``'same'`` (the length of the
    longer, centred as numpy's) or ``'valid'``."""
    x, y = _conv_args(a, v, mode)
    n, m = x.shape[0], y.shape[0]
    full_ = _correlate_full(x, flip(y))
    if mode == "full":
        return full_
    k = builtins.min(n, m) - 1
    if mode == "valid":
        return full_[k : k + builtins.max(n, m) - builtins.min(n, m) + 1]
    lo = k // 2
    return full_[lo : lo + builtins.max(n, m)]


def polyval(p: Any, x: Any) -> Tensor:
    """The polynomial with coefficients ``p`` (highest power first) at ``x``, by
    Horner's scheme as numpy: ``y = y · x + p[i]`` from ``y = zeros_like(x)``."""
    xt = _to_tensor(x)
    if isinstance(p, Tensor):
        if p.ndim != 1:
            raise ValueError("polyval takes a 1-d sequence of coefficients")
        coeffs: List[Any] = [p[i] for i in range(p.shape[0])]
    else:
        pa = np.asarray(p)
        coeffs = list(pa.reshape(-1)) if pa.ndim else [pa[()]]
    y = _full_like(xt, 0, xt.dtype)
    for c in coeffs:
        y = y * xt + c
    return y


def vander(x: Any, N: Optional[int] = None, increasing: builtins.bool = False) -> Tensor:
    """The Vandermonde matrix of a 1-d ``x``: columns ``x**(N-1), ..., x, 1`` (or the other
    way round), built as numpy does by running products along each row (so the powers
    equal numpy's bit for bit), in ``x``'s dtype promoted with int64."""
    t = _to_tensor(x)
    if t.ndim != 1:
        raise ValueError("x must be a one-dimensional array or sequence.")
    n = t._known_shape("vander")[0]
    N = n if N is None else int(N)
    dt = np.promote_types(t.dtype, np.int64)
    if N == 0:
        return zeros((n, 0), dtype=dt)
    parts = [full((n, 1), 1, dtype=dt, chunk_size=(_chunk_size(t) or (builtins.max(n, 1),))[0:1] + (1,))]
    if N > 1:
        cols = broadcast_to(t.astype(dt).reshape(n, 1), (n, N - 1))
        parts.append(cols.cumprod(axis=1))
    v = concatenate(parts, axis=1)
    return v if increasing else flip(v, axis=1)


def polyfit(x: Any, y: Any, deg: int, rcond: Any = None, full: builtins.bool = False, w: Any = None, cov: Any = False) -> Any:  # noqa: A002
    """The least-squares polynomial of degree ``deg`` through ``(x, y)`` (coefficients
    highest power first; ``y`` 2-d fits each column), as numpy: the Vandermonde matrix
    (weighted by ``w``) with its columns scaled to unit norm, solved by least squares
    (``linalg.lstsq``: the pseudo-inverse, singular values below ``rcond`` times the
    largest dropped). ``full`` also returns residuals, rank, singular values and
    ``rcond``; ``cov`` is not supported. numpy's warning for a rank-deficient fit is
    not given (the rank is lazy)."""
    if cov:
        raise NotImplementedError("polyfit with cov=True")
    order = int(deg) + 1
    xt, yt = _to_tensor(x), _to_tensor(y)
    if deg < 0:
        raise ValueError("expected deg >= 0")
    if xt.ndim != 1:
        raise TypeError("expected 1D vector for x")
    if xt.shape[0] == 0:
        raise TypeError("expected non-empty vector for x")
    if yt.ndim < 1 or yt.ndim > 2:
        raise TypeError("expected 1D or 2D array for y")
    if xt.shape[0] != yt.shape[0]:
        raise TypeError("expected x and y to have same length")
    xt = xt.astype(np.result_type(xt.dtype, 0.0))
    yt = yt.astype(np.result_type(yt.dtype, 0.0))
    if rcond is None:
        rcond = xt.shape[0] * np.finfo(xt.dtype).eps
    lhs = vander(xt, order)
    rhs = yt
    if w is not None:
        wt = _to_tensor(w)
        wt = wt.astype(np.result_type(wt.dtype, 0.0))
        if wt.ndim != 1:
            raise TypeError("expected a 1-d array for weights")
        if wt.shape[0] != yt.shape[0]:
            raise TypeError("expected w and y to have the same length")
        lhs = lhs * wt.reshape(-1, 1)
        rhs = rhs * (wt.reshape(-1, 1) if rhs.ndim == 2 else wt)
    scale = sqrt((lhs * lhs).sum(axis=0))
    lhs = lhs / scale
    lstsq = getattr(linalg, "lstsq", None)
    if lstsq is not None:
        c, resids, rank, s = lstsq(lhs, rhs, rcond)
    else:
        c = matmul(linalg.pinv(lhs, rcond), rhs)
        if full:
            raise NotImplementedError("polyfit with full=True needs linalg.lstsq")
    c = (c.T / scale).T
    if full:
        return c, resids, rank, s, rcond
    return c


def gradient(f: Any, *varargs: Any, axis: Any = None, edge_order: int = 1) -> Any:
    """numpy's ``gradient``: second-order central differences inside, first- or
    second-order (``edge_order``) one-sided ones at the ends, along each of ``axis``
    (all by default), with uniform spacings (scalars) or coordinates (1-d, one per
    axis), in numpy's arithmetic. One tensor for one axis, else a tuple. Coordinates in a
    tensor always take numpy's non-uniform formulas (numpy checks for equal steps
    first: the values agree to rounding)."""
    t = _to_tensor(f)
    N = t.ndim
    axes = list(range(N)) if axis is None else _axis_of(axis, N)
    n = len(varargs)
    if n == 0:
        dx: List[Any] = [1.0] * len(axes)
    elif n == 1 and not isinstance(varargs[0], Tensor) and np.ndim(varargs[0]) == 0:
        dx = list(varargs) * len(axes)
    elif n == len(axes):
        dx = []
        for i, d in enumerate(varargs):
            if not isinstance(d, Tensor) and np.ndim(d) == 0:
                dx.append(d)
                continue
            if isinstance(d, Tensor):
                if d.ndim != 1:
                    raise ValueError("distances must be either scalars or 1d")
                if d.shape[0] != t.shape[axes[i]]:
                    raise ValueError("when 1d, distances must match the length of the corresponding dimension")
                dx.append(diff(d.astype(np.float64) if d.dtype.kind in "iu" else d))
                continue
            da = np.asarray(d)
            if da.ndim != 1:
                raise ValueError("distances must be either scalars or 1d")
            if len(da) != t.shape[axes[i]]:
                raise ValueError("when 1d, distances must match the length of the corresponding dimension")
            if da.dtype.kind in "iu":
                da = da.astype(np.float64)
            dd = np.diff(da)
            dx.append(dd[0] if (dd == dd[0]).all() else _to_tensor(dd))
    else:
        raise TypeError("invalid number of arguments")
    if edge_order > 2:
        raise ValueError("'edge_order' greater than 2 not supported")
    otype = t.dtype
    if otype.kind in "iu":
        t = t.astype(np.float64)
        otype = np.dtype(np.float64)
    elif otype.kind == "b":
        otype = np.dtype(np.float64)
    outs = []
    for ax, ax_dx in zip(axes, dx):
        size = t._known_shape("gradient")[ax]
        if size < edge_order + 1:
            raise ValueError("Shape of array too small to calculate a numerical gradient, at least (edge_order + 1) elements are required.")

        def sl(start: Any, stop: Any, ax: int = ax) -> Tensor:
            return _index_along(t, ax, slice(start, stop))

        def one(i: int, ax: int = ax) -> Tensor:
            return _index_along(t, ax, slice(i % size, i % size + 1))

        uniform = not isinstance(ax_dx, Tensor)
        shape = [1] * N
        shape[ax] = -1
        if uniform:
            inner_ = (sl(2, None) - sl(None, -2)) / (2.0 * ax_dx)
        else:
            dx1, dx2 = ax_dx[0 : size - 2], ax_dx[1 : size - 1]
            a = (-(dx2) / (dx1 * (dx1 + dx2))).reshape(shape)
            b = ((dx2 - dx1) / (dx1 * dx2)).reshape(shape)
            c = (dx1 / (dx2 * (dx1 + dx2))).reshape(shape)
            inner_ = a * sl(None, -2) + b * sl(1, -1) + c * sl(2, None)
        if edge_order == 1:
            d0 = ax_dx if uniform else ax_dx[0]
            dn = ax_dx if uniform else ax_dx[size - 2]
            first = (one(1) - one(0)) / d0
            last = (one(-1) - one(-2)) / dn
        else:
            if uniform:
                a, b, c = -1.5 / ax_dx, 2.0 / ax_dx, -0.5 / ax_dx
            else:
                dx1, dx2 = ax_dx[0], ax_dx[1]
                a = -(2.0 * dx1 + dx2) / (dx1 * (dx1 + dx2))
                b = (dx1 + dx2) / (dx1 * dx2)
                c = -dx1 / (dx2 * (dx1 + dx2))
            first = a * one(0) + b * one(1) + c * one(2)
            if uniform:
                a, b, c = 0.5 / ax_dx, -2.0 / ax_dx, 1.5 / ax_dx
            else:
                dx1, dx2 = ax_dx[size - 3], ax_dx[size - 2]
                a = dx2 / (dx1 * (dx1 + dx2))
                b = -(dx2 + dx1) / (dx1 * dx2)
                c = (2.0 * dx2 + dx1) / (dx2 * (dx1 + dx2))
            last = a * one(-3) + b * one(-2) + c * one(-1)
        parts = [first.astype(otype), inner_.astype(otype), last.astype(otype)]
        outs.append(concatenate([p for p in parts if p.shape[ax] > 0], axis=ax))
    return outs[0] if len(axes) == 1 else tuple(outs)


def trapezoid(y: Any, x: Any = None, dx: float = 1.0, axis: int = -1) -> Tensor:
    """The integral of ``y`` along ``axis`` by the trapezoidal rule, ``Σ d · (y[i+1] +
    y[i]) / 2``, with spacing ``dx`` or the differences of the sample points ``x``."""
    t = _to_tensor(y)
    nd = t.ndim
    ax = _axis_of(axis, nd)[0]
    n = t._known_shape("trapezoid")[ax]
    if x is None:
        d: Any = dx
    else:
        xt = _to_tensor(x)
        if xt.ndim == 1:
            d = diff(xt)
            shape = [1] * nd
            shape[ax] = d.shape[0]
            d = d.reshape(shape)
        else:
            d = diff(xt, axis=ax)
    hi = _index_along(t, ax, slice(1, None))
    lo = _index_along(t, ax, slice(0, builtins.max(n - 1, 0)))
    return (d * (hi + lo) / 2.0).sum(axis=ax)


def unwrap(p: Any, discont: Any = None, axis: int = -1, *, period: float = 2 * np.pi) -> Tensor:
    """Phases with jumps larger than ``discont`` (``period / 2`` by default) between
    neighbours along ``axis`` replaced by their complement modulo ``period``, as numpy's
    ``unwrap``: the corrections' running sum added from the second element on."""
    t = _to_tensor(p)
    ax = _axis_of(axis, t.ndim)[0]
    dd = diff(t, axis=ax)
    if discont is None:
        discont = period / 2
    dt = np.result_type(dd.dtype, period)
    if dt.kind in "iu":
        high, rem = builtins.divmod(period, 2)
        ambiguous = rem == 0
    else:
        high = period / 2
        ambiguous = True
    low = -high
    ddmod = remainder(dd - low, period) + low
    if ambiguous:
        ddmod = where((ddmod == low) & (dd > 0), _as_dtype(high, ddmod.dtype), ddmod)
    correct = ddmod - dd
    correct = where(absolute(dd) < discont, _as_dtype(0, correct.dtype), correct)
    up = t.astype(dt)
    n = t._known_shape("unwrap")[ax]
    if n < 2:
        return up
    head = _index_along(up, ax, slice(0, 1))
    rest = (_index_along(t, ax, slice(1, None)) + correct.cumsum(axis=ax)).astype(dt)
    return concatenate([head, rest], axis=ax)


# ---------------------------------------------------------------- order statistics and sorting

_PICKS = ("lower", "higher", "nearest")


def _nan_quantile(a: Any, q: Any, axis: Any, method: str, keepdims: builtins.bool, weak_q: builtins.bool, name: str) -> Tensor:
    t = _to_tensor(a)
    if method not in _PICKS + ("linear", "midpoint"):
        raise NotImplementedError(f"{name} with method={method!r} (supported: linear, lower, higher, nearest, midpoint)")
    qs = _fractions(q)
    if t.dtype.kind != "f":
        return quantile(t, q, axis=axis, method=method, keepdims=keepdims)
    shape0 = t.shape
    ndim = t.ndim
    lanes, ax, axes = _lanes(t, axis)
    n = lanes._known_shape(name)[ax]
    if n == 0:
        raise IndexError(f"{name} of an empty tensor")
    s = sort(lanes, axis=ax)
    count = (~isnan(lanes)).sum(axis=ax, keepdims=True)
    last = count - 1
    ft = t.dtype if (method in _PICKS or weak_q) else np.result_type(t.dtype, qs.dtype)
    empty = count == 0

    def pick(i: Tensor) -> Tensor:
        return take_along_axis(s, clip(i, 0, n - 1), axis=ax)

    results = []
    for qv in qs.reshape(-1):
        pos = last.astype(np.float64) * float(qv)
        if method == "lower":
            r = pick(floor(pos).astype(np.int64))
        elif method == "higher":
            r = pick(ceil(pos).astype(np.int64))
        elif method == "nearest":
            r = pick(rint(pos).astype(np.int64))
        else:
            lo = floor(pos)
            above = pos >= last
            lo_i = where(above, last, lo.astype(np.int64))
            hi_i = where(above, last, lo.astype(np.int64) + 1)
            gamma = pos - lo
            if method == "midpoint":
                gamma = where(gamma == 0, 0.0, 0.5)
            av, bv = pick(lo_i), pick(hi_i)
            d = (bv - av).astype(ft)
            av, bv = av.astype(ft), bv.astype(ft)
            g = gamma.astype(ft)
            r = where(gamma >= 0.5, bv - d * (1.0 - gamma).astype(ft), av + d * g)
        r = where(empty, math.nan, r.astype(ft)).astype(ft)
        results.append(r.reshape([d for i, d in enumerate(r.shape) if i != ax]))
    res = results[0] if qs.ndim == 0 else stack(results, axis=0).reshape(qs.shape + results[0].shape)
    if keepdims:
        res = res.reshape(list(qs.shape) + [1 if d in axes else shape0[d] for d in range(ndim)])
    return res


def _weak_q(q: Any) -> builtins.bool:
    return isinstance(q, (int, float)) and not isinstance(q, (np.generic, builtins.bool))


def nanquantile(
    a: Any,
    q: Any,
    axis: Any = None,
    out: Any = None,
    overwrite_input: builtins.bool = False,
    method: str = "linear",
    keepdims: builtins.bool = False,
    *,
    weights: Any = None,
) -> Tensor:
    """numpy's ``nanquantile``, exact: the axis sorted (NaN last), the non-NaN count of
    each lane, and the order statistics of each ``q`` among them picked per lane and
    interpolated as numpy's ``quantile`` does (``method`` linear, lower, higher, nearest
    or midpoint); NaN for a lane of NaN only. The dtype follows :func:`quantile`'s rule
    (numpy's is the input's when the first lane it computes is all NaN: data-dependent).
    Integers: :func:`quantile`."""
    _check_out("nanquantile", out, {"weights": weights})
    return _nan_quantile(a, q, axis, method, keepdims, _weak_q(q), "nanquantile")


def nanpercentile(
    a: Any,
    q: Any,
    axis: Any = None,
    out: Any = None,
    overwrite_input: builtins.bool = False,
    method: str = "linear",
    keepdims: builtins.bool = False,
    *,
    weights: Any = None,
) -> Tensor:
    """numpy's ``nanpercentile`` (``q`` in [0, 100]): see :func:`nanquantile`."""
    _check_out("nanpercentile", out, {"weights": weights})
    qs = np.asarray(q.fetch() if isinstance(q, Tensor) else q, dtype=np.float64)
    if qs.size and (np.isnan(qs).any() or qs.min() < 0 or qs.max() > 100):
        raise ValueError("Percentiles must be in the range [0, 100]")
    fraction = q / 100 if _weak_q(q) else qs / 100
    return _nan_quantile(a, fraction, axis, method, keepdims, _weak_q(q), "nanpercentile")


def nanmedian(a: Any, axis: Any = None, out: Any = None, overwrite_input: builtins.bool = False, keepdims: builtins.bool = False) -> Tensor:
    """The median of the non-NaN elements of each lane (NaN for a lane of NaN only): the
    axis sorted, the middle one or the mean of the two middle ones picked per lane by its
    count. Integers: :func:`median` (float64)."""
    _check_out("nanmedian", out, {})
    t = _to_tensor(a)
    if t.dtype.kind != "f":
        from . import median

        return median(t, axis=axis, keepdims=keepdims)
    shape0, ndim = t.shape, t.ndim
    lanes, ax, axes = _lanes(t, axis)
    n = lanes._known_shape("nanmedian")[ax]
    if n == 0:
        raise IndexError("nanmedian of an empty tensor")
    s = sort(lanes, axis=ax)
    count = (~isnan(lanes)).sum(axis=ax, keepdims=True)
    lo = clip((count - 1) // 2, 0, n - 1)
    hi = clip(count // 2, 0, n - 1)
    av, bv = take_along_axis(s, lo, axis=ax), take_along_axis(s, hi, axis=ax)
    r = where(lo == hi, av, (av + bv) / 2)
    r = where(count == 0, math.nan, r).astype(t.dtype)
    r = r.reshape([d for i, d in enumerate(r.shape) if i != ax])
    if keepdims:
        r = r.reshape([1 if d in axes else shape0[d] for d in range(ndim)])
    return r


def _check_kth(kth: Any, n: int) -> None:
    for k in np.asarray(kth).reshape(-1):
        if not -n <= int(k) < n:
            raise ValueError(f"kth(={int(k)}) out of bounds ({n})")


def partition(a: Any, kth: Any, axis: Any = -1, kind: str = "introselect", order: Any = None) -> Tensor:
    """A partition of ``a`` around the ``kth`` elements: here a full (stable) sort along
    ``axis``, which is one valid answer (numpy may order the other elements
    differently)."""
    t = _to_tensor(a)
    if axis is None:
        t, axis = t.reshape(-1), 0
    _check_kth(kth, t._known_shape("partition")[_axis_of(axis, t.ndim)[0]])
    return sort(t, axis=axis, order=order)


def argpartition(a: Any, kth: Any, axis: Any = -1, kind: str = "introselect", order: Any = None) -> Tensor:
    """Positions that partition ``a`` around the ``kth`` elements: here the stable
    :func:`argsort` along ``axis`` (a valid answer; numpy may order the others
    differently)."""
    t = _to_tensor(a)
    if axis is None:
        t, axis = t.reshape(-1), 0
    _check_kth(kth, t._known_shape("argpartition")[_axis_of(axis, t.ndim)[0]])
    return argsort(t, axis=axis, order=order)


def lexsort(keys: Any, axis: int = -1) -> Tensor:
    """The positions that sort by several keys, the last one primary: stable argsorts,
    from the first key to the last, each of the previous order's keys."""
    if isinstance(keys, (Tensor, np.ndarray)):
        kt = _to_tensor(keys)
        if kt.ndim == 0:
            raise TypeError("need sequence of keys with len > 0 in lexsort")
        ks = [kt[i] for i in range(kt.shape[0])]
    else:
        ks = [_to_tensor(k) for k in keys]
    if not ks:
        raise TypeError("need sequence of keys with len > 0 in lexsort")
    if builtins.any(k.shape != ks[0].shape for k in ks):
        raise ValueError("all keys need to be the same shape")
    if ks[0].ndim == 0:
        return _to_tensor(np.int64(0))
    if axis is None:
        ks, axis = [k.reshape(-1) for k in ks], 0
    ax = _axis_of(axis, ks[0].ndim)[0]
    perm = argsort(ks[0], axis=ax)
    for k in ks[1:]:
        perm = take_along_axis(perm, argsort(take_along_axis(k, perm, axis=ax), axis=ax), axis=ax)
    return perm


# ---------------------------------------------------------------- windows


def _window_range(M: int) -> Optional[Tensor]:
    """``arange(1 - M, M, 2)`` (float64, as numpy's windows compute it), or None for
    ``M < 2``."""
    return arange(1.0 - M, float(M), 2.0) if M >= 2 else None


def _short_window(M: int) -> Tensor:
    return zeros(0, dtype=np.float64) if M < 1 else full(1, 1.0, dtype=np.float64)


def bartlett(M: int) -> Tensor:
    """The triangular Bartlett window of ``M`` points (float64)."""
    n = _window_range(M)
    if n is None:
        return _short_window(M)
    return where(n <= 0, 1 + n / (M - 1), 1 - n / (M - 1))


def hanning(M: int) -> Tensor:
    """The Hann window: ``0.5 + 0.5 cos(πn / (M-1))``."""
    n = _window_range(M)
    return _short_window(M) if n is None else 0.5 + 0.5 * cos(np.pi * n / (M - 1))


def hamming(M: int) -> Tensor:
    """The Hamming window: ``0.54 + 0.46 cos(πn / (M-1))``."""
    n = _window_range(M)
    return _short_window(M) if n is None else 0.54 + 0.46 * cos(np.pi * n / (M - 1))


def blackman(M: int) -> Tensor:
    """The Blackman window: ``0.42 + 0.5 cos(πn / (M-1)) + 0.08 cos(2πn / (M-1))``."""
    n = _window_range(M)
    if n is None:
        return _short_window(M)
    return 0.42 + 0.5 * cos(np.pi * n / (M - 1)) + 0.08 * cos(2.0 * np.pi * n / (M - 1))


def kaiser(M: int, beta: float) -> Tensor:
    """The Kaiser window: ``i0(β √(1 - ((n - α)/α)²)) / i0(β)``, ``α = (M-1)/2``, with
    numpy's series for :func:`i0`."""
    if M == 1:
        return full(1, 1.0, dtype=np.float64)
    if M < 1:
        return zeros(0, dtype=np.float64)
    beta = float(beta)
    n = arange(0.0, float(M), 1.0)
    alpha = (M - 1) / 2.0
    return i0(beta * sqrt(1 - ((n - alpha) / alpha) ** 2.0)) / i0(_to_tensor(np.float64(beta)))


# ---------------------------------------------------------------- in place (by rebinding)


def fill_diagonal(a: Tensor, val: Any, wrap: builtins.bool = False) -> None:
    """numpy's ``fill_diagonal``, in place by rebinding ``a``: the main diagonal (of a
    tall matrix, repeating every ``ncols + 1`` rows with ``wrap``) set to ``val`` (an
    array cycles along it), lazily over the flattened positions."""
    if not isinstance(a, Tensor):
        raise TypeError("fill_diagonal works in place on an ares tensor")
    if a.ndim < 2:
        raise ValueError("array must be at least 2-d")
    shape = a._known_shape("fill_diagonal")
    end = None
    if a.ndim == 2:
        step = shape[1] + 1
        if not wrap:
            end = shape[1] * shape[1]
    else:
        if builtins.any(d != shape[0] for d in shape):
            raise ValueError("All dimensions of input must be of equal length")
        step = 1 + int(np.cumprod(shape[:-1]).sum())
    size = math.prod(shape)
    p = arange(size)
    on = p % step == 0
    if end is not None:
        on = on & (p < end)
    v = _as_dtype(val, a.dtype).reshape(-1)
    k = v.shape[0]
    if k == 0:
        return
    fill = v.reshape(()) if k == 1 else take(v, (p // step) % k)
    _rebind(a, where(on, fill, a.reshape(-1)).reshape(shape), "fill_diagonal")


def put(a: Tensor, ind: Any, v: Any, mode: str = "raise") -> None:
    """numpy's ``put``, in place by rebinding ``a``: the flat positions ``ind`` set to the
    values ``v`` (cycled; the last of repeated positions wins), lazily by a stable sort
    of the positions and a search. ``mode='raise'`` checks positions in hand at once
    and those in a tensor when computed (an ``IndexError``); ``'wrap'``, ``'clip'`` as
    numpy."""
    if not isinstance(a, Tensor):
        raise TypeError("put works in place on an ares tensor")
    shape = a._known_shape("put")
    size = math.prod(shape)
    known = _known_positions(ind)
    idx = _to_tensor(known.astype(np.int64) if known is not None and known.size == 0 else known) if known is not None else ind
    if idx.dtype.kind not in "iu":
        raise TypeError("put: indices must be integers")
    idx = idx.astype(np.int64).reshape(-1)
    vals = _as_dtype(v, a.dtype).reshape(-1)
    k, nv = idx.shape[0], vals.shape[0]
    if k == 0 or nv == 0:
        return
    if mode == "raise":
        if known is not None:
            bad = (known < -size) | (known >= size)
            if bad.any():
                raise IndexError(f"index {known[bad].reshape(-1)[0]} is out of bounds for axis 0 with size {size}")
            idx = where(idx < 0, idx + size, idx)
        else:
            bad_t = (idx < -size) | (idx >= size)
            idx = _guarded(where(idx < 0, idx + size, idx), bad_t)
    elif mode == "wrap":
        idx = idx % size
    elif mode == "clip":
        idx = clip(idx, 0, size - 1)
    else:
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})")
    per_entry = take(vals, arange(k) % nv) if nv != k else vals
    order = argsort(idx, kind="stable")
    sidx, svals = take(idx, order), take(per_entry, order)
    p = arange(size)
    j = searchsorted(sidx, p, side="right") - 1
    jc = clip(j, 0, k - 1)
    hit = (j >= 0) & (take(sidx, jc) == p)
    _rebind(a, where(hit, take(svals, jc), a.reshape(-1)).reshape(shape), "put")


def place(arr: Tensor, mask: Any, vals: Any) -> None:
    """numpy's ``place``, in place by rebinding ``arr``: the elements where ``mask`` holds
    set, in order, to the values ``vals`` (cycled): the ``i``-th true position takes
    ``vals[i % len(vals)]``, its rank from a running count of the mask."""
    if not isinstance(arr, Tensor):
        raise TypeError("place works in place on an ares tensor")
    shape = arr._known_shape("place")
    m = _to_tensor(mask)
    if m.size != arr.size:
        raise ValueError("place: mask and data must be the same size")
    m = (m if m.dtype == np.bool_ else m != 0).reshape(-1)
    v = _as_dtype(vals, arr.dtype).reshape(-1)
    nv = v.shape[0]
    flat = arr.reshape(-1)
    if nv == 0:
        if not isinstance(mask, Tensor):
            if np.asarray(mask).astype(bool).any():
                raise ValueError("Cannot insert from an empty array!")
            return
        # Fails the computation if the mask holds anywhere, as numpy raises.
        _rebind(arr, where(m, take(zeros(1, dtype=arr.dtype), m.astype(np.int64)), flat).reshape(shape), "place")
        return
    rank = m.cumsum() - 1
    fill = take(v, rank % nv)
    _rebind(arr, where(m, fill, flat).reshape(shape), "place")


def putmask(a: Tensor, mask: Any, values: Any) -> None:
    """numpy's ``putmask``, in place by rebinding ``a``: where ``mask`` holds, the value
    at the same flat position of ``values`` (cycled over ``a``'s size)."""
    if not isinstance(a, Tensor):
        raise TypeError("putmask works in place on an ares tensor")
    shape = a._known_shape("putmask")
    m = _to_tensor(mask)
    if m.size != a.size:
        raise ValueError("putmask: mask and data must be the same size")
    m = (m if m.dtype == np.bool_ else m != 0).reshape(-1)
    v = _as_dtype(values, a.dtype).reshape(-1)
    nv = v.shape[0]
    if nv == 0:
        return
    size = math.prod(shape)
    fill = v if nv == size else take(v, arange(size) % nv)
    _rebind(a, where(m, fill, a.reshape(-1)).reshape(shape), "putmask")


def copyto(dst: Tensor, src: Any, casting: str = "same_kind", where: Any = True) -> None:  # noqa: A002
    """numpy's ``copyto``, in place by rebinding ``dst``: ``src`` broadcast and cast to
    ``dst``'s dtype (checked under ``casting``), copied where ``where`` holds."""
    if not isinstance(dst, Tensor):
        raise TypeError("copyto works in place on an ares tensor")
    shape = dst._known_shape("copyto")
    if isinstance(src, (builtins.bool, int, float)):
        kind = "b" if isinstance(src, builtins.bool) else ("i" if isinstance(src, int) else "f")
        order = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}
        if casting != "unsafe" and order[kind] > order.get(dst.dtype.kind, 3):
            raise TypeError(f"Cannot cast scalar from {type(src).__name__} to dtype('{dst.dtype}') according to the rule '{casting}'")
    else:
        st = _to_tensor(src)
        if not np.can_cast(st.dtype, dst.dtype, casting=casting):
            raise TypeError(f"Cannot cast array data from dtype('{st.dtype}') to dtype('{dst.dtype}') according to the rule '{casting}'")
    value = broadcast_to(_as_dtype(src, dst.dtype), shape)
    from . import where as _where

    if isinstance(where, (builtins.bool, np.bool_)):
        if where:
            _rebind(dst, value, "copyto")
        return
    _rebind(dst, _where(broadcast_to(_to_tensor(where), shape), value, dst), "copyto")


# numpy's ufuncs among these, for Tensor.__array_ufunc__ (np.fmax(t, u) and the like).
_UFUNCS.update(
    {
        "fmax": fmax,
        "fmin": fmin,
        "fmod": fmod,
        "divmod": divmod,
        "float_power": float_power,
        "logaddexp2": logaddexp2,
        "cbrt": cbrt,
        "reciprocal": reciprocal,
        "deg2rad": deg2rad,
        "rad2deg": rad2deg,
        "degrees": degrees,
        "radians": radians,
        "heaviside": heaviside,
        "gcd": gcd,
        "lcm": lcm,
        "nextafter": nextafter,
        "spacing": spacing,
        "modf": modf,
        "frexp": frexp,
        "ldexp": ldexp,
    }
)
