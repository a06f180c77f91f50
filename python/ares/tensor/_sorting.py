"""Sorting and what is built on it: ``sort``, ``argsort``, the ``unique`` family,
``searchsorted``, ``isin``, and the exact order statistics (``median``,
``percentile``, ``quantile``).

A 1-d tensor in several chunks is sorted by the engine's sample sort (its chunk
lengths are known once it ran, its shape at once); along an axis of a wider tensor the
axis is gathered into one chunk. The order is numpy's: NaN last, equal elements in
their original order (every sort here is stable, whatever ``kind`` asks).
"""

from __future__ import annotations

import builtins
import math
import numbers
from collections import namedtuple
from typing import Any, List, Optional

import numpy as np

from . import Tensor, _axis_of, _check_out, _to_tensor, concatenate, isnan, stack, where

__all__ = [
    "sort",
    "argsort",
    "unique",
    "unique_values",
    "unique_counts",
    "unique_inverse",
    "unique_all",
    "searchsorted",
    "isin",
    "median",
    "percentile",
    "quantile",
]

UniqueCountsResult = namedtuple("UniqueCountsResult", ["values", "counts"])
UniqueInverseResult = namedtuple("UniqueInverseResult", ["values", "inverse_indices"])
UniqueAllResult = namedtuple("UniqueAllResult", ["values", "indices", "inverse_indices", "counts"])


def _sorted(a: Any, axis: Any, kind: Any, order: Any, descending: builtins.bool, arg: builtins.bool, name: str) -> Tensor:
    if order is not None:
        raise NotImplementedError(f"{name} with order= (structured dtypes are not supported)")
    if kind not in (None, "quicksort", "mergesort", "heapsort", "stable"):
        raise ValueError(f"{name}: kind {kind!r} is not one of quicksort, mergesort, heapsort, stable")
    t = _to_tensor(a)
    if axis is None:
        t, axis = t.reshape(-1), 0
    if t.ndim == 0:
        raise np.exceptions.AxisError(axis, 0)
    ax = _axis_of(axis, t.ndim)
    if len(ax) != 1:
        raise TypeError(f"{name} takes one integer axis")
    return Tensor(t._t.sort(ax[0], builtins.bool(descending), arg))


def sort(
    a: Any,
    axis: Any = -1,
    kind: Any = None,
    order: Any = None,
    *,
    stable: Any = None,
    descending: builtins.bool = False,
) -> Tensor:
    """``a`` sorted along ``axis`` (flattened when None), lazily: NaN last, stable
    (``kind`` and ``stable`` are accepted; every sort here is stable). ``descending``
    is the Array API's."""
    return _sorted(a, axis, kind, order, descending, False, "sort")


def argsort(
    a: Any,
    axis: Any = -1,
    kind: Any = None,
    order: Any = None,
    *,
    stable: Any = None,
    descending: builtins.bool = False,
) -> Tensor:
    """The int64 positions along ``axis`` that sort ``a`` (stable: numpy's
    ``kind="stable"``, where numpy's default quicksort may order ties otherwise)."""
    return _sorted(a, axis, kind, order, descending, True, "argsort")


def _flat(x: Any) -> Tensor:
    t = _to_tensor(x)
    return t.reshape(-1) if t.ndim != 1 else t


def unique(
    ar: Any,
    return_index: builtins.bool = False,
    return_inverse: builtins.bool = False,
    return_counts: builtins.bool = False,
    axis: Any = None,
    *,
    equal_nan: builtins.bool = True,
    sorted: builtins.bool = True,  # noqa: A002 - numpy's name
) -> Any:
    """numpy's ``unique`` of the flattened tensor: the sorted distinct values (a lazy
    tensor whose length is known once computed), with the inverse (of ``ar``'s shape)
    and the counts on request; ``return_index`` gives each value's first position (by
    one stable sort, see :func:`unique_all`). ``axis`` is not supported."""
    if axis is not None:
        raise NotImplementedError("unique with axis= (unique rows)")
    t = _to_tensor(ar)
    if return_index:
        r = _unique_all(t, builtins.bool(equal_nan))
        out = [r.values, r.indices]
        if return_inverse:
            out.append(r.inverse_indices)
        if return_counts:
            out.append(r.counts)
        return tuple(out)
    flat = _flat(t)
    values = Tensor(flat._t.unique(False, builtins.bool(equal_nan)))
    out = [values]
    if return_inverse:
        out.append(Tensor(values._t.searchsorted(t._t, False)))
    if return_counts:
        out.append(Tensor(flat._t.unique(True, builtins.bool(equal_nan))))
    return values if len(out) == 1 else tuple(out)


def unique_values(x: Any, /) -> Tensor:
    """The Array API's distinct values (each NaN its own)."""
    return Tensor(_flat(x)._t.unique(False, False))


def unique_counts(x: Any, /) -> UniqueCountsResult:
    """The Array API's distinct values and how many times each occurs."""
    flat = _flat(x)
    return UniqueCountsResult(Tensor(flat._t.unique(False, False)), Tensor(flat._t.unique(True, False)))


def unique_inverse(x: Any, /) -> UniqueInverseResult:
    """The Array API's distinct values and, for each element of ``x`` (its shape), the
    position of its value among them."""
    t = _to_tensor(x)
    values = Tensor(_flat(t)._t.unique(False, False))
    return UniqueInverseResult(values, Tensor(values._t.searchsorted(t._t, False)))


def _unique_all(t: Tensor, equal_nan: builtins.bool) -> UniqueAllResult:
    """Everything ``unique_all`` gives, from one stable argsort of the flattened ``t``:
    a group starts where the sorted value differs from the one before (each NaN its own
    unless ``equal_nan``); its first position is the order's entry there, its count the
    distance to the next start, and the inverse is the running group number sent back
    through the inverse permutation. Lengths are known once computed."""
    from . import arange, cumsum, nonzero, take

    flat = _flat(t)
    n = flat.shape[0]
    order = argsort(flat)
    ordered = take(flat, order)
    if n == 0:
        empty = order[:0]
        return UniqueAllResult(ordered, empty, empty.reshape(t.shape), empty)
    step = ordered[1:] != ordered[:-1]
    if equal_nan and flat.dtype.kind == "f":
        step = step & ~(isnan(ordered[1:]) & isnan(ordered[:-1]))
    starts = concatenate([arange(1) == 0, step])
    values = ordered[starts]
    indices = order[starts]
    # A group ends where the next one starts (or at the end): both position lists have
    # one entry per group.
    ends = concatenate([step, arange(1) == 0])
    counts = nonzero(ends)[0] - nonzero(starts)[0] + 1
    group = cumsum(starts.astype(np.int64)) - 1
    inverse = take(group, argsort(order)).reshape(t.shape)
    return UniqueAllResult(values, indices, inverse, counts)


def unique_all(x: Any, /) -> UniqueAllResult:
    """The Array API's distinct values (sorted, each NaN its own), the position of each
    one's first occurrence in the flattened ``x``, the inverse (``x``'s shape) and the
    counts."""
    return _unique_all(_to_tensor(x), False)


def searchsorted(a: Any, v: Any, side: str = "left", sorter: Any = None) -> Tensor:
    """numpy's ``searchsorted``: where each element of ``v`` would go in the sorted 1-d
    ``a`` (before equal elements; after them with ``side='right'``), as int64 of ``v``'s
    shape. ``a`` must be sorted (NaN last), or ``sorter`` the positions that sort it
    (as :func:`argsort` gives); it is not checked."""
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right' (got {side!r})")
    at = _to_tensor(a)
    if sorter is not None:
        from . import take

        at = take(at, _to_tensor(sorter))
    if at.ndim != 1:
        raise ValueError("object too deep for desired array: searchsorted takes a 1-d a")
    # Compared in the common dtype, as numpy does (searching 1.5 among integers must
    # not truncate it to 1); a Python number is weak (NEP 50).
    if isinstance(v, Tensor):
        vt = v
    elif isinstance(v, (builtins.bool, int, float)):
        try:
            vt = _to_tensor(np.asarray(v, dtype=np.result_type(at.dtype, v)))
        except OverflowError:
            # An int beyond the array's dtype: in its own dtype, then promoted.
            vt = _to_tensor(np.asarray(v))
    else:
        vt = _to_tensor(np.asarray(v))
    common = np.result_type(at.dtype, vt.dtype)
    at = at if at.dtype == common else at.astype(common)
    vt = vt if vt.dtype == common else vt.astype(common)
    return Tensor(at._t.searchsorted(vt._t, side == "right"))


def isin(element: Any, test_elements: Any, assume_unique: builtins.bool = False, invert: builtins.bool = False, *, kind: Any = None) -> Tensor:
    """Whether each element of ``element`` is among ``test_elements`` (numpy's ``isin``;
    NaN is never found), lazily: two binary searches in the sorted distinct test
    elements."""
    e = _to_tensor(element)
    u = Tensor(_flat(test_elements)._t.unique(False, True))
    found = (searchsorted(u, e, "right") - searchsorted(u, e, "left")) > 0
    if e.dtype.kind == "f":
        found = found & ~isnan(e)
    return ~found if invert else found


# ---------------------------------------------------------------- order statistics

_METHODS = ("linear", "lower", "higher", "nearest", "midpoint")


def _fractions(q: Any) -> np.ndarray:
    """Quantile fractions as a float array, checked to lie in [0, 1] as numpy checks."""
    qs = np.asarray(q.fetch() if isinstance(q, Tensor) else q)
    qs = qs.astype(np.float64) if qs.dtype.kind != "f" else qs
    if qs.size and (np.isnan(qs).any() or qs.min() < 0 or qs.max() > 1):
        raise ValueError("Quantiles must be in the range [0, 1]")
    return qs


def _lanes(t: Tensor, axis: Any) -> Any:
    """``(lanes, ax, axes)``: ``t`` with the reduced ``axes`` (all when None) moved last
    and flattened into one, and that axis ``ax``."""
    ndim = t.ndim
    axes = _axis_of(axis, ndim) if axis is not None else list(range(ndim))
    if len(axes) > 1 or axis is None:
        keep = [d for d in range(ndim) if d not in axes]
        t = t.transpose(keep + axes).reshape([t.shape[d] for d in keep] + [-1]) if ndim else t.reshape(1)
        return t, t.ndim - 1, axes
    return t, axes[0], axes


def quantile(
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
    """numpy's ``quantile``, exact: ``a`` sorted along ``axis`` (all of it when None),
    the two neighbouring order statistics of each ``q`` picked and interpolated as
    numpy does (``method`` linear, lower, higher, nearest or midpoint). A NaN along the
    axis makes the result NaN, as numpy's."""
    _check_out("quantile", out, {"weights": weights})
    if method not in _METHODS:
        raise NotImplementedError(f"quantile with method={method!r} (supported: {', '.join(_METHODS)})")
    qs = _fractions(q)
    t = _to_tensor(a)
    if t.dtype.kind == "b":
        raise TypeError("quantile of booleans is not supported (numpy refuses the subtraction too)")
    ndim = t.ndim
    shape0 = t.shape
    t, ax, axes = _lanes(t, axis)
    n = t.shape[ax]
    if isinstance(n, float):
        raise ValueError("quantile of a tensor of unknown length; execute it first")
    if n == 0:
        raise IndexError("quantile of an empty tensor")
    stats = _selected(t, qs, method, n) if t.ndim == 1 and isinstance(a, Tensor) and a._session is not None else None
    s = sort(t, axis=ax) if stats is None else None
    # numpy: lower/higher/nearest pick an element (the input's dtype); linear and
    # midpoint compute integers in float64, floats in their dtype, and an array of q
    # brings its float64 gammas into the arithmetic.
    picks = method in ("lower", "higher", "nearest")
    if picks:
        ft = t.dtype
    elif t.dtype.kind in "iu":
        ft = np.dtype(np.float64)
    else:
        # A Python float q is weak (NEP 50); a numpy q or an array takes part with its dtype.
        ft = t.dtype if _is_python_scalar(q) else np.result_type(t.dtype, qs.dtype)
    if stats is not None:
        # Order statistics found by selection (no NaN in `t`): read them, not a sort.
        s = _Stats(stats)
    last = _take(s, ax, n - 1).astype(ft) if stats is None else None
    results = []
    for qv in qs.reshape(-1):
        pos = float(qv) * (n - 1)
        lo = math.floor(pos)
        g = pos - lo
        hi = builtins.min(lo + 1, n - 1)
        if method == "lower":
            r = _take(s, ax, lo).astype(ft)
        elif method == "higher":
            r = _take(s, ax, math.ceil(pos)).astype(ft)
        elif method == "nearest":
            r = _take(s, ax, builtins.round(pos)).astype(ft)  # half to even, as numpy's around
        else:
            gamma = g if method == "linear" else (0.5 if g > 0 else 0.0)
            r = _lerp(_take(s, ax, lo), _take(s, ax, hi), gamma, ft)
        if ft.kind == "f" and last is not None:
            r = where(isnan(last), last, r)
        results.append(r)
    res = results[0] if qs.ndim == 0 else stack(results, axis=0).reshape(qs.shape + results[0].shape)
    if keepdims:
        res = res.reshape(list(qs.shape) + [1 if d in axes else shape0[d] for d in range(ndim)])
    return res


# Selection (instead of a sort) for quantiles of a computed vector at least this long.
_SELECT_MIN = 1 << 22
# Elements sampled to bracket each order statistic, and the most candidates fetched.
_SAMPLE = 1 << 20
_MAX_CANDIDATES = 1 << 24


class _Stats:
    """Stands in for the sorted vector: element ``k`` of it, from a dict of 0-d tensors."""

    def __init__(self, stats: dict) -> None:
        self.stats = stats
        self.ndim = 1

    def __getitem__(self, index: Any) -> Tensor:
        return self.stats[index[0]]


def _ranks(qs: np.ndarray, method: str, n: int) -> List[int]:
    """The order statistics (0-based ranks) the quantiles ``qs`` read, as the sorting
    path picks them."""
    out = set()
    for qv in qs.reshape(-1):
        pos = float(qv) * (n - 1)
        lo = math.floor(pos)
        if method == "lower":
            out.add(lo)
        elif method == "higher":
            out.add(math.ceil(pos))
        elif method == "nearest":
            out.add(builtins.round(pos))
        else:
            out.update((lo, builtins.min(lo + 1, n - 1)))
    return sorted(out)


def _selected(t: Tensor, qs: np.ndarray, method: str, n: int) -> Optional[dict]:
    """The order statistics the quantiles need, of a computed vector, by selection
    (numpy partitions for the same reason): a strided sample brackets each rank, one
    pass counts the elements below each bracket, another gathers those inside, and a
    sort of those few gives the exact elements. None (sort instead) when the vector is
    short, holds NaN, or a bracket misses or is too full (heavy ties). The vector is read
    a few times (not recomputed: it is computed), never sorted."""
    from . import tensor as _tensor

    if n < _SELECT_MIN or t.dtype.kind not in "iuf":
        return None
    step = builtins.max(n // _SAMPLE, 1)
    sample = np.sort(t[::step].fetch())
    m = sample.size
    if t.dtype.kind == "f" and np.isnan(sample).any():
        return None
    ks = _ranks(qs, method, n)
    # The ends are the minimum and the maximum (a sample rarely holds them).
    stats = {k: (t.min() if k == 0 else t.max()) for k in ks if k in (0, n - 1)}
    inner = [k for k in ks if k not in stats]
    # Each rank's place in the sample, widened by 8 of its sampling error's standard
    # deviations (sqrt(m p (1-p)) <= sqrt(m)/2 places), merged where brackets overlap.
    margin = 4 * math.isqrt(m) + 8
    spans: List[List[Any]] = []
    for k in inner:
        j = int(k * (m - 1) / (n - 1))
        lo, hi = sample[builtins.max(j - margin, 0)], sample[builtins.min(j + margin + 1, m - 1)]
        if spans and lo <= spans[-1][1]:
            spans[-1][1] = builtins.max(spans[-1][1], hi)
            spans[-1][2].append(k)
        else:
            spans.append([lo, hi, [k]])
    # One computation counts the elements below each bracket; the elements inside a
    # bracket are gathered (NaN counts as inside, so a NaN anywhere shows up there). A
    # bracket of one repeated value (ties) counts instead of gathering.
    counts = []
    for lo, hi, _ in spans:
        counts.append((t < lo).sum())
        if lo == hi:
            counts += [(t == lo).sum(), (t != t).sum()]
    got = [int(v) for v in stack(counts).fetch()]
    at = 0
    for lo, hi, wanted in spans:
        below = got[at]
        if lo == hi:
            within, nans = got[at + 1], got[at + 2]
            at += 3
            if nans:
                return None  # NaN: numpy's result is NaN; the sorting path gives it
            cand = np.full(1, lo)
        else:
            at += 1
            # The sample says about how many are inside: too many (heavy ties) sorts instead.
            if np.count_nonzero((sample >= lo) & (sample <= hi)) * step > _MAX_CANDIDATES:
                return None
            cand = np.sort(t[~(t < lo) & ~(t > hi)].fetch())
            if t.dtype.kind == "f" and cand.size and np.isnan(cand[-1]):
                return None
            within = cand.size
        if not builtins.all(below <= k < below + within for k in wanted):
            return None  # a bracket missed: sort instead
        for k in wanted:
            stats[k] = _tensor(np.asarray(cand[builtins.min(k - below, cand.size - 1)], dtype=t.dtype))
    return stats


def _lerp(a: Tensor, b: Tensor, t: float, ft: Any) -> Tensor:
    """numpy's ``_lerp`` in ``ft``: from the nearer end, so a result stays within
    ``[a, b]``. The difference is taken in the elements' own dtype first, as numpy takes
    it (integers wrap there)."""
    d = (b - a).astype(ft)
    a, b = a.astype(ft), b.astype(ft)
    return a + d * t if t < 0.5 else b - d * (1 - t)


def _is_python_scalar(q: Any) -> builtins.bool:
    return isinstance(q, (int, float)) and not isinstance(q, np.generic)


def _take(s: Tensor, axis: int, i: int) -> Tensor:
    """Element ``i`` along ``axis`` (that axis dropped)."""
    index = [slice(None)] * s.ndim
    index[axis] = i
    return s[tuple(index)]


def percentile(
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
    """numpy's ``percentile`` (``q`` in [0, 100]), exact: see :func:`quantile`."""
    qs = np.asarray(q.fetch() if isinstance(q, Tensor) else q, dtype=np.float64)
    if qs.size and (np.isnan(qs).any() or qs.min() < 0 or qs.max() > 100):
        raise ValueError("Percentiles must be in the range [0, 100]")
    # A Python number stays one (weak in promotion), as numpy keeps it.
    fraction = q / 100 if _is_python_scalar(q) else qs / 100
    return quantile(a, fraction, axis=axis, out=out, method=method, keepdims=keepdims, weights=weights)


def median(a: Any, axis: Any = None, out: Any = None, overwrite_input: builtins.bool = False, keepdims: builtins.bool = False) -> Tensor:
    """numpy's ``median``, exact: the middle element, or the mean of the two middle ones
    for an even count (integers in float64); NaN if there is a NaN."""
    _check_out("median", out, {})
    t = _to_tensor(a)
    ndim = t.ndim
    t, ax, axes = _lanes(t, axis)
    n = t.shape[ax]
    if isinstance(n, float):
        raise ValueError("median of a tensor of unknown length; execute it first")
    if n == 0:
        raise IndexError("median of an empty tensor")
    s = sort(t, axis=ax)
    ft = np.dtype(np.float64) if t.dtype.kind in "biu" else t.dtype
    mid = _take(s, ax, n // 2).astype(ft)
    r = mid if n % 2 else (_take(s, ax, n // 2 - 1).astype(ft) + mid) / 2
    if ft.kind == "f":
        last = _take(s, ax, n - 1).astype(ft)
        r = where(isnan(last), last, r)
    if keepdims:
        r = r.reshape([1 if d in axes else t_d for d, t_d in enumerate(_to_tensor(a).shape)])
    return r
