"""``ares.tensor.random``: numpy.random's functions on tensors. The same seed gives the
same values whatever the chunking. Without a seed, each call draws a fresh one from a
generator that :func:`seed` resets (as ``numpy.random.seed`` does); the values are not
numpy's own stream (neither are :class:`Generator`'s nor :class:`RandomState`'s).

Most distributions are exact transforms of the counter-based uniform or normal draws
(an inverse distribution function or a fixed formula). The rejection samplers
(``poisson``, ``binomial``, ``negative_binomial`` and the gamma family: ``gamma``,
``chisquare``, ``beta``, ``standard_t``, ``f``, ``dirichlet``) run in the chunk kernels
with numpy's algorithms, each element drawing as many uniforms as it needs from its own
counter-based stream, so they keep that property too; their shape parameters are single
numbers. A function that needs several independent draws (``wald``,
``logseries``) takes draw ``k`` from the sub-seed :func:`_derive` ``(seed, k)`` (a
splitmix64 hash of the call's seed and ``k``), never twice from one seed: two draws of one
seed are the same numbers at the same flat index. The single-draw distributions take
their draw from sub-seed 0 too. :class:`Generator` (:func:`default_rng`) and
:class:`RandomState` draw each call's seed from their own numpy generator, so successive
calls differ and one seed gives one sequence of tensors.

Distribution parameters may be scalars, arrays or tensors, broadcast as numpy does (with
``size`` they must broadcast to ``size``); numpy's checks on them (``scale < 0``, ...)
raise the same ``ValueError``. A tensor parameter is checked by computing the check (a
one-value reduction) when the function is called.
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers
from typing import Any, Callable, List, Optional

import numpy as np

from .. import _native
from . import Tensor, Unsupported, _chunks_of, _shape_of

__all__ = [
    "seed",
    "rand",
    "randn",
    "random",
    "random_sample",
    "uniform",
    "normal",
    "standard_normal",
    "randint",
    "exponential",
    "standard_exponential",
    "permutation",
    "shuffle",
    "choice",
    "laplace",
    "logistic",
    "lognormal",
    "gumbel",
    "rayleigh",
    "pareto",
    "weibull",
    "power",
    "standard_cauchy",
    "triangular",
    "geometric",
    "wald",
    "logseries",
    "poisson",
    "binomial",
    "negative_binomial",
    "standard_gamma",
    "gamma",
    "chisquare",
    "beta",
    "standard_t",
    "f",
    "dirichlet",
    "Generator",
    "default_rng",
    "RandomState",
]

_rng = np.random.default_rng()

_M64 = (1 << 64) - 1
_GOLDEN = 0x9E37_79B9_7F4A_7C15
_INT64_MAX = np.iinfo(np.int64).max
# The largest float64 below 2**63: where a float count is capped before it becomes int64.
_BELOW_2_63 = float(2**63 - 1024)


def seed(s: Optional[int] = None) -> None:
    """Resets the generator the unseeded calls draw their seeds from."""
    global _rng
    _rng = np.random.default_rng(s)


def _seed(s: Optional[int]) -> int:
    if s is None:
        return int(_rng.integers(0, 2**63 - 1))
    if not isinstance(s, numbers.Integral) or s < 0:
        raise ValueError(f"seed must be a non-negative integer, got {s!r}")
    return int(s) % 2**64


def _mix(z: int) -> int:
    """splitmix64's step (the generator the native kernels hash positions with)."""
    z = (z + _GOLDEN) & _M64
    z = ((z ^ (z >> 30)) * 0xBF58_476D_1CE4_E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D0_49BB_1331_11EB) & _M64
    return z ^ (z >> 31)


def _derive(s: int, k: int) -> int:
    """Sub-seed ``k`` of seed ``s``: splitmix64 of splitmix64(s) + (k+1)·golden, so the
    sub-seeds of one call, of other calls and the seeds the native normal stream gives
    its two uniforms (``seed ^ 0x5555…``, ``seed ^ 0xAAAA…``) are unrelated 64-bit
    numbers (equal with probability 2**-64)."""
    return _mix((_mix(s) + (k + 1) * _GOLDEN) & _M64)


def _subseeds(s: Optional[int], n: int) -> List[int]:
    base = _seed(s)
    return [_derive(base, k) for k in range(n)]


def _size(size: Any) -> tuple:
    return () if size is None else _shape_of(size)


def _at() -> Any:
    from .. import tensor

    return tensor


def _make(kind: str, size: Any, chunk_size: Any, seed: Optional[int], low: float, high: float, itemsize: int = 8) -> Tensor:
    shape = _size(size)
    return Tensor(_native.random(kind, list(shape), _chunks_of(chunk_size, shape, itemsize), _seed(seed), low, high))


def _draw(kind: str, shape: tuple, chunk_size: Any, s: int) -> Tensor:
    """The native stream ``kind`` ("uniform" on ``[0, 1)`` or "normal") of seed ``s``."""
    return Tensor(_native.random(kind, list(shape), _chunks_of(chunk_size, shape, 8), s, 0.0, 1.0))


def _open_uniform(shape: tuple, chunk_size: Any, s: int) -> Tensor:
    """Floats uniform on the open ``(0, 1)``: ``(k + 1/2) / 2**52`` for a uniform 52-bit
    ``k`` (every step exact), so never 0 or 1 and symmetric about 1/2 (``1 - w`` is
    exact and has the same distribution)."""
    at = _at()
    u = _draw("uniform", shape, chunk_size, s)
    return (at.floor(u * 2.0**52) + 0.5) * 2.0**-52


# ------------------------------------------------------------ distribution parameters


def _raw(x: Any) -> Any:
    """A parameter as a float, a float64 numpy array or a float64 tensor."""
    if isinstance(x, Tensor):
        x._known_shape("random")
        return x if x.dtype == np.float64 else x.astype(np.float64)
    a = np.asarray(x, dtype=np.float64)
    return float(a) if a.ndim == 0 else a


def _final(x: Any) -> Any:
    """A checked parameter as an operand: arrays become tensors."""
    return _at().tensor(x) if isinstance(x, np.ndarray) else x


def _any(x: Any) -> bool:
    if isinstance(x, Tensor):
        return bool(x.any())
    return bool(np.any(x))


def _check(bad: Any, message: str) -> None:
    if _any(bad):
        raise ValueError(message)


def _negative(x: Any) -> Any:
    # numpy's check: a set sign bit (-0.0 too) that is not NaN's.
    return np.logical_and(np.signbit(x), np.logical_not(np.isnan(x)))


def _out_shape(size: Any, *params: Any) -> tuple:
    """The result's shape: ``size``, to which the parameters must broadcast, or their
    broadcast shape."""
    shapes = [tuple(int(d) for d in np.shape(p)) if not isinstance(p, Tensor) else p.shape for p in params]
    if size is None:
        return np.broadcast_shapes(*shapes) if shapes else ()
    shape = _size(size)
    for i, s in enumerate(shapes):
        try:
            b = np.broadcast_shapes(shape, s)
        except ValueError:
            b = None
        if b != shape:
            raise ValueError(
                "shape mismatch: objects cannot be broadcast to a single shape.  "
                f"Mismatch is between arg {i} with shape {s} and the size {shape}."
            )
    return shape


def _loc_scale(loc: Any, scale: Any, size: Any, seed: Optional[int]) -> tuple:
    """A location-scale family's checked parameters, result shape and sub-seed 0."""
    loc, scale = _raw(loc), _raw(scale)
    _check(_negative(scale), "scale < 0")
    return loc, scale, _out_shape(size, loc, scale), _subseeds(seed, 1)[0]


def _scalars(*params: Any) -> bool:
    return all(isinstance(p, float) for p in params)


# ------------------------------------------------------------ the basic streams


def uniform(low: Any = 0.0, high: Any = 1.0, size: Any = None, chunk_size: Any = None, seed: Optional[int] = None, dtype: Any = None) -> Tensor:
    """Floats uniform on ``[low, high)`` (``low`` and ``high`` broadcast)."""
    lo, hi = _raw(low), _raw(high)
    if _scalars(lo, hi):
        t = _make("uniform", size, chunk_size, seed, lo, hi)
    else:
        shape = _out_shape(size, lo, hi)
        u = _draw("uniform", shape, chunk_size, _seed(seed))
        lo, hi = _final(lo), _final(hi)
        # The native stream's own arithmetic, so scalars in a tensor give the same values.
        t = lo + (hi - lo) * u
    return t if dtype is None else t.astype(dtype)


def rand(*shape: int, chunk_size: Any = None, seed: Optional[int] = None) -> Tensor:
    """Floats uniform on ``[0, 1)`` of the given shape (``rand(3, 4)``)."""
    return uniform(0.0, 1.0, size=shape, chunk_size=chunk_size, seed=seed)


def random_sample(size: Any = None, chunk_size: Any = None, seed: Optional[int] = None) -> Tensor:
    """Floats uniform on ``[0, 1)``."""
    return uniform(0.0, 1.0, size=size, chunk_size=chunk_size, seed=seed)


random = random_sample


def standard_normal(size: Any = None, chunk_size: Any = None, seed: Optional[int] = None) -> Tensor:
    """Standard normal floats."""
    return _make("normal", size, chunk_size, seed, 0.0, 1.0)


def randn(*shape: int, chunk_size: Any = None, seed: Optional[int] = None) -> Tensor:
    """Standard normal floats of the given shape (``randn(3, 4)``)."""
    return standard_normal(size=shape, chunk_size=chunk_size, seed=seed)


def normal(loc: Any = 0.0, scale: Any = 1.0, size: Any = None, chunk_size: Any = None, seed: Optional[int] = None) -> Tensor:
    """Normal floats with mean ``loc`` and standard deviation ``scale`` (broadcast)."""
    loc, scale = _raw(loc), _raw(scale)
    _check(_negative(scale), "scale < 0")
    shape = _out_shape(size, loc, scale)
    return standard_normal(size=shape, chunk_size=chunk_size, seed=seed) * _final(scale) + _final(loc)


def _is_int_scalar(x: Any) -> bool:
    return not isinstance(x, Tensor) and np.ndim(x) == 0


def _randint_scalar(lo: int, hi: int, size: Any, chunk_size: Any, seed: Optional[int]) -> Tensor:
    """The native integer stream on ``[lo, hi)``. It takes its bounds as floats and
    converts them to int64 (saturating at 2**63): bounds it would not get exactly are
    moved into a range it does."""
    span = hi - lo
    if span <= 2**53:
        if float(lo) == lo and float(hi) == hi and hi < 2**63:
            return _make("randint", size, chunk_size, seed, float(lo), float(hi))
        # An exact span, shifted by an exact int64 addition.
        return _make("randint", size, chunk_size, seed, 0.0, float(span)) + lo
    # A range wider than 2**53: its bounds are rounded inward to floats below 2**63,
    # which leaves out at most 2047 of its more than 2**53 values.
    lf, hf = float(lo), float(min(hi, 2**63 - 1024))
    if lf < lo:
        lf = float(np.nextafter(lf, np.inf))
    if hf > hi:
        hf = float(np.nextafter(hf, -np.inf))
    if hi > 2**63 or not -(2**63) <= lf < hf or int(hf) - int(lf) >= 2**63:
        raise NotImplementedError(f"random integers on [{lo}, {hi}): a range of 2**63 or more, or beyond int64")
    return _make("randint", size, chunk_size, seed, lf, hf)


def randint(low: Any, high: Any = None, size: Any = None, dtype: Any = int, chunk_size: Any = None, seed: Optional[int] = None) -> Tensor:
    """Integers on ``[low, high)`` (``[0, low)`` when ``high`` is None), int64. Array or
    tensor bounds broadcast (inside ±2**53: each is ``low + floor(u · (high - low))`` of
    a uniform float ``u``)."""
    if high is None:
        low, high = 0, low
    name = np.dtype(dtype).name
    if _is_int_scalar(low) and _is_int_scalar(high):
        if high <= low:
            raise ValueError("low >= high")
        t = _randint_scalar(int(low), int(high), size, chunk_size, seed)
        return t if name == "int64" else t.astype(dtype)
    lo, hi = _raw(low), _raw(high)
    _check(np.logical_not(np.less(lo, hi)), "low >= high")
    limit = float(2**53)
    # Bounds are computed in floats: exact inside (-2**53, 2**53).
    if _any(np.less_equal(lo, -limit)) or _any(np.greater_equal(hi, limit)):
        raise NotImplementedError("randint with array bounds outside (-2**53, 2**53)")
    shape = _out_shape(size, lo, hi)
    at = _at()
    u = _draw("uniform", shape, chunk_size, _seed(seed))
    lo, hi = _final(lo), _final(hi)
    span = hi - lo
    # u · span can round up to span itself: the minimum keeps it below.
    t = (at.minimum(at.floor(u * span), span - 1.0) + lo).astype(np.int64)
    return t if name == "int64" else t.astype(dtype)


def exponential(scale: Any = 1.0, size: Any = None, chunk_size: Any = None, seed: Optional[int] = None) -> Tensor:
    """Exponential floats of mean ``scale`` (by inverting the distribution of uniform
    floats, so the same seed gives the same values whatever the chunking)."""
    scale = _raw(scale)
    _check(_negative(scale), "scale < 0")
    shape = _out_shape(size, scale)
    u = uniform(0.0, 1.0, size=shape, chunk_size=chunk_size, seed=seed)
    return _neg_log1p(u) * _final(scale)


def _neg_log1p(u: Tensor) -> Tensor:
    from . import log1p

    return -log1p(-u)


def standard_exponential(size: Any = None, chunk_size: Any = None, seed: Optional[int] = None) -> Tensor:
    """Exponential floats of mean 1."""
    return exponential(1.0, size=size, chunk_size=chunk_size, seed=seed)


# ------------------------------------------------------------ continuous distributions


def laplace(loc: Any = 0.0, scale: Any = 1.0, size: Any = None, chunk_size: Any = None, seed: Optional[int] = None) -> Tensor:
    """Laplace (double exponential) floats: ``loc - scale·sign(w - ½)·log(1 - 2|w - ½|)``
    of an open uniform ``w`` (the inverse distribution function)."""
    loc, scale, shape, s = _loc_scale(loc, scale, size, seed)
    at = _at()
    d = _open_uniform(shape, chunk_size, s) - 0.5
    return _final(loc) - _final(scale) * (at.sign(d) * at.log1p(-2.0 * at.absolute(d)))


def logistic(loc: Any = 0.0, scale: Any = 1.0, size: Any = None, chunk_size: Any = None, seed: Optional[int] = None) -> Tensor:
    """Logistic floats: ``loc + scale·log(w / (1 - w))`` of an open uniform ``w``."""
    loc, scale, shape, s = _loc_scale(loc, scale, size, seed)
    at = _at()
    w = _open_uniform(shape, chunk_size, s)
    return _final(loc) + _final(scale) * at.log(w / (1.0 - w))


def lognormal(mean: Any = 0.0, sigma: Any = 1.0, size: Any = None, chunk_size: Any = None, seed: Optional[int] = None) -> Tensor:
    """Log-normal floats: ``exp(mean + sigma·z)`` of a standard normal ``z``."""
    mean, sigma = _raw(mean), _raw(sigma)
    _check(_negative(sigma), "sigma < 0")
    shape = _out_shape(size, mean, sigma)
    (s,) = _subseeds(seed, 1)
    at = _at()
    return at.exp(_draw("normal", shape, chunk_size, s) * _final(sigma) + _final(mean))


def gumbel(loc: Any = 0.0, scale: Any = 1.0, size: Any = None, chunk_size: Any = None, seed: Optional[int] = None) -> Tensor:
    """Gumbel floats: ``loc - scale·log(-log w)`` of an open uniform ``w``."""
    loc, scale, shape, s = _loc_scale(loc, scale, size, seed)
    at = _at()
    w = _open_uniform(shape, chunk_size, s)
    return _final(loc) - _final(scale) * at.log(-at.log(w))


def rayleigh(scale: Any = 1.0, size: Any = None, chunk_size: Any = None, seed: Optional[int] = None) -> Tensor:
    """Rayleigh floats: ``scale·sqrt(-2·log w)`` of an open uniform ``w``."""
    scale = _raw(scale)
    _check(_negative(scale), "scale < 0")
    shape = _out_shape(size, scale)
    (s,) = _subseeds(seed, 1)
    at = _at()
    return _final(scale) * at.sqrt(-2.0 * at.log(_open_uniform(shape, chunk_size, s)))


def _standard_exponential_open(shape: tuple, chunk_size: Any, s: int) -> Tensor:
    """``-log w`` of an open uniform ``w``: exponential, positive and finite."""
    return -_at().log(_open_uniform(shape, chunk_size, s))


def pareto(a: Any, size: Any = None, chunk_size: Any = None, seed: Optional[int] = None) -> Tensor:
    """Pareto II (Lomax) floats, numpy's: ``expm1(E / a)`` of a standard exponential ``E``."""
    a = _raw(a)
    _check(np.less_equal(a, 0), "a <= 0")
    shape = _out_shape(size, a)
    (s,) = _subseeds(seed, 1)
    return _at().expm1(_standard_exponential_open(shape, chunk_size, s) / _final(a))


def weibull(a: Any, size: Any = None, chunk_size: Any = None, seed: Optional[int] = None) -> Tensor:
    """Weibull floats of shape ``a``: ``E ** (1/a)`` of a standard exponential ``E``
    (0 where ``a`` is 0, as numpy)."""
    a = _raw(a)
    _check(_negative(a), "a < 0")
    shape = _out_shape(size, a)
    (s,) = _subseeds(seed, 1)
    at = _at()
    e = _standard_exponential_open(shape, chunk_size, s)
    if isinstance(a, float):
        return e * 0.0 if a == 0 else e ** (1.0 / a)
    a = _final(a)
    return at.where(a == 0, 0.0, e ** (1.0 / a))


def power(a: Any, size: Any = None, chunk_size: Any = None, seed: Optional[int] = None) -> Tensor:
    """Power-function floats on ``[0, 1]``: ``u ** (1/a)`` of a uniform ``u``."""
    a = _raw(a)
    _check(np.less_equal(a, 0), "a <= 0")
    shape = _out_shape(size, a)
    (s,) = _subseeds(seed, 1)
    return _draw("uniform", shape, chunk_size, s) ** (1.0 / _final(a))


def standard_cauchy(size: Any = None, chunk_size: Any = None, seed: Optional[int] = None) -> Tensor:
    """Standard Cauchy floats: ``tan(π(w - ½))`` of an open uniform ``w``."""
    shape = _size(size)
    (s,) = _subseeds(seed, 1)
    at = _at()
    return at.tan(math.pi * (_open_uniform(shape, chunk_size, s) - 0.5))


def triangular(left: Any, mode: Any, right: Any, size: Any = None, chunk_size: Any = None, seed: Optional[int] = None) -> Tensor:
    """Triangular floats on ``[left, right]`` peaking at ``mode`` (the inverse
    distribution function of a uniform ``u``, numpy's formula)."""
    left, mode, right = _raw(left), _raw(mode), _raw(right)
    _check(np.greater(left, mode), "left > mode")
    _check(np.greater(mode, right), "mode > right")
    _check(np.equal(left, right), "left == right")
    shape = _out_shape(size, left, mode, right)
    (s,) = _subseeds(seed, 1)
    at = _at()
    left, mode, right = _final(left), _final(mode), _final(right)
    base = right - left
    leftbase = mode - left
    ratio = leftbase / base
    leftprod = leftbase * base
    rightprod = (right - mode) * base
    u = _draw("uniform", shape, chunk_size, s)
    return at.where(u <= ratio, left + at.sqrt(u * leftprod), right - at.sqrt((1.0 - u) * rightprod))


def wald(mean: Any, scale: Any, size: Any = None, chunk_size: Any = None, seed: Optional[int] = None) -> Tensor:
    """Wald (inverse Gaussian) floats by Michael, Schucany and Haas' transform of one
    normal ``z`` and one uniform ``u`` (independent sub-seeds): with
    ``r = mean·z²/(4·scale)``, ``x = mean / (√r + √(r+1))²`` (numpy's root, written
    without cancellation), then ``x`` if ``u ≤ mean/(mean + x)`` else ``mean²/x``."""
    mean, scale = _raw(mean), _raw(scale)
    _check(np.less_equal(mean, 0), "mean <= 0")
    _check(np.less_equal(scale, 0), "scale <= 0")
    shape = _out_shape(size, mean, scale)
    s0, s1 = _subseeds(seed, 2)
    at = _at()
    mean, scale = _final(mean), _final(scale)
    z = _draw("normal", shape, chunk_size, s0)
    u = _draw("uniform", shape, chunk_size, s1)
    r = z * z * (mean / (4.0 * scale))
    root = at.sqrt(r) + at.sqrt(r + 1.0)
    x = mean / (root * root)
    return at.where(u <= mean / (mean + x), x, mean * mean / x)


# ------------------------------------------------------------ discrete distributions


def _count(z: Tensor) -> Tensor:
    """Whole floats ≥ 1 as int64, numpy's ``INT64_MAX`` from 2**63 up."""
    at = _at()
    return at.where(z >= 2.0**63, _INT64_MAX, at.minimum(z, _BELOW_2_63).astype(np.int64))


def geometric(p: Any, size: Any = None, chunk_size: Any = None, seed: Optional[int] = None) -> Tensor:
    """Trials up to the first success (int64, at least 1): ``ceil(log w / log1p(-p))``
    of an open uniform ``w``."""
    p = _raw(p)
    _check(np.logical_or(np.logical_not(np.greater(p, 0)), np.greater(p, 1)), "p <= 0, p > 1 or p contains NaNs")
    shape = _out_shape(size, p)
    (s,) = _subseeds(seed, 1)
    at = _at()
    if isinstance(p, float):
        with np.errstate(divide="ignore"):
            denom: Any = float(np.log1p(-p))  # -inf for p = 1: every draw is 1
    else:
        denom = at.log1p(-_final(p))
    z = at.maximum(at.ceil(at.log(_open_uniform(shape, chunk_size, s)) / denom), 1.0)
    return _count(z)


def logseries(p: Any, size: Any = None, chunk_size: Any = None, seed: Optional[int] = None) -> Tensor:
    """Logarithmic-series integers (int64, at least 1) by Kemp's (1981) algorithm, exact
    with two uniforms ``v`` (open) and ``u`` (independent sub-seeds), as numpy's:
    1 if ``v ≥ p``; else with ``q = 1 - (1-p)**u``, ``floor(1 + log v / log q)`` if
    ``v ≤ q²``, 1 if ``v ≥ q``, and 2 between."""
    p = _raw(p)
    _check(np.logical_or(np.logical_not(np.greater_equal(p, 0)), np.logical_not(np.less(p, 1))), "p < 0, p >= 1 or p is NaN")
    shape = _out_shape(size, p)
    s0, s1 = _subseeds(seed, 2)
    at = _at()
    p = _final(p)
    r = math.log1p(-p) if isinstance(p, float) else at.log1p(-p)
    v = _open_uniform(shape, chunk_size, s0)
    u = _draw("uniform", shape, chunk_size, s1)
    q = -at.expm1(u * r)
    # q = 0 (u = 0) gives log q = -inf and k = 1, not taken: then v > q².
    k = at.minimum(at.floor(1.0 + at.log(v) / at.log(q)), _BELOW_2_63)
    x = at.where(v >= p, 1.0, at.where(v <= q * q, k, at.where(v >= q, 1.0, 2.0)))
    return x.astype(np.int64)


# ------------------------------------------------- rejection samplers (native kernels)


def _scalar_param(x: Any, fn: str, name: str) -> float:
    """A distribution parameter the native samplers take: one number. (An array of
    them would need a parameter per element inside the kernel; not supported yet.)"""
    if isinstance(x, Tensor) or np.ndim(x) != 0:
        raise NotImplementedError(f"random.{fn} with an array of {name} (give one number)")
    return float(x)


def _native_draw(kind: str, size: Any, chunk_size: Any, s: int, a: float, b: float = 0.0) -> Tensor:
    shape = _size(size)
    return Tensor(_native.random(kind, list(shape), _chunks_of(chunk_size, shape, 8), s, a, b))


def poisson(lam: Any = 1.0, size: Any = None, chunk_size: Any = None, seed: Optional[int] = None) -> Tensor:
    """Poisson counts (int64) of mean ``lam``, drawn in the chunk tasks as numpy draws
    them (multiplied uniforms below a mean of 10, Hörmann's PTRS above): exact, but not
    numpy's stream. ``lam`` is one number."""
    lam = _scalar_param(lam, "poisson", "lam")
    _check(_negative(lam) or math.isnan(lam), "lam < 0 or lam is NaN")
    if lam >= 2.0**62:
        raise ValueError("lam value too large")
    return _native_draw("poisson", size, chunk_size, _seed(seed), lam)


def binomial(n: Any, p: Any, size: Any = None, chunk_size: Any = None, seed: Optional[int] = None) -> Tensor:
    """Successes (int64) in ``n`` trials of probability ``p`` (inversion for small
    ``n·min(p, 1-p)``, Hörmann's BTRD above). ``n`` and ``p`` are single numbers."""
    nf = _scalar_param(n, "binomial", "n")
    pf = _scalar_param(p, "binomial", "p")
    if nf != int(nf):
        raise TypeError("binomial: n must be an integer")
    _check(nf < 0, "n < 0")
    _check(pf < 0, "p < 0")
    _check(pf > 1, "p > 1")
    _check(np.isnan(pf), "p is nan")
    if nf >= 2.0**53:
        raise NotImplementedError("random.binomial with n ≥ 2**53")
    return _native_draw("binomial", size, chunk_size, _seed(seed), nf, pf)


def negative_binomial(n: Any, p: Any, size: Any = None, chunk_size: Any = None, seed: Optional[int] = None) -> Tensor:
    """Failures (int64) before the ``n``-th success of probability ``p``: a Poisson
    count of a gamma mean, as numpy draws it. ``n`` and ``p`` are single numbers."""
    nf = _scalar_param(n, "negative_binomial", "n")
    pf = _scalar_param(p, "negative_binomial", "p")
    _check(not nf > 0, "n <= 0")
    _check(not pf > 0, "p <= 0")
    _check(pf > 1, "p > 1")
    # numpy's limit: the Poisson mean must stay where its sampler is exact.
    if (1 - pf) / pf * (nf + 10 * math.sqrt(nf)) > 2.0**62 or math.isinf(nf):
        raise ValueError("n too large or p too small, see Generator.negative_binomial Notes")
    return _native_draw("negative_binomial", size, chunk_size, _seed(seed), nf, pf)


def standard_gamma(shape: Any, size: Any = None, chunk_size: Any = None, seed: Optional[int] = None, dtype: Any = np.float64) -> Tensor:
    """Gamma floats of ``shape`` and scale 1 (Marsaglia and Tsang's method; below shape
    1 boosted by ``u^(1/shape)``). ``shape`` is one number."""
    k = _scalar_param(shape, "standard_gamma", "shape")
    _check(_negative(k), "shape < 0")
    t = _native_draw("standard_gamma", size, chunk_size, _seed(seed), k)
    return t if np.dtype(dtype) == np.float64 else t.astype(dtype)


def gamma(shape: Any, scale: Any = 1.0, size: Any = None, chunk_size: Any = None, seed: Optional[int] = None) -> Tensor:
    """Gamma floats of ``shape`` (one number) and ``scale`` (broadcast)."""
    scale = _raw(scale)
    _check(_negative(scale), "scale < 0")
    out = _out_shape(size, scale)
    return standard_gamma(shape, out, chunk_size, seed) * _final(scale)


def chisquare(df: Any, size: Any = None, chunk_size: Any = None, seed: Optional[int] = None) -> Tensor:
    """Chi-square floats of ``df`` degrees of freedom: twice a gamma of shape ``df/2``."""
    d = _scalar_param(df, "chisquare", "df")
    _check(d <= 0, "df <= 0")
    return standard_gamma(d / 2.0, size, chunk_size, seed) * 2.0


def beta(a: Any, b: Any, size: Any = None, chunk_size: Any = None, seed: Optional[int] = None) -> Tensor:
    """Beta floats: ``X / (X + Y)`` for independent gammas of shapes ``a`` and ``b``
    (single numbers). numpy switches to Jöhnk's method for ``a, b < 1``; for shapes
    below ~0.01 both gammas can underflow and give NaN here."""
    af = _scalar_param(a, "beta", "a")
    bf = _scalar_param(b, "beta", "b")
    _check(af <= 0, "a <= 0")
    _check(bf <= 0, "b <= 0")
    s0, s1 = _subseeds(seed, 2)
    x = _native_draw("standard_gamma", size, chunk_size, s0, af)
    y = _native_draw("standard_gamma", size, chunk_size, s1, bf)
    return x / (x + y)


def standard_t(df: Any, size: Any = None, chunk_size: Any = None, seed: Optional[int] = None) -> Tensor:
    """Student's t floats: a normal over the root of an independent chi-square / ``df``."""
    d = _scalar_param(df, "standard_t", "df")
    _check(d <= 0, "df <= 0")
    s0, s1 = _subseeds(seed, 2)
    z = _draw("normal", _size(size), chunk_size, s0)
    chi = _native_draw("standard_gamma", size, chunk_size, s1, d / 2.0) * 2.0
    return z / _at().sqrt(chi / d)


def f(dfnum: Any, dfden: Any, size: Any = None, chunk_size: Any = None, seed: Optional[int] = None) -> Tensor:
    """F floats: the ratio of two independent chi-squares, each over its degrees."""
    a = _scalar_param(dfnum, "f", "dfnum")
    b = _scalar_param(dfden, "f", "dfden")
    _check(a <= 0, "dfnum <= 0")
    _check(b <= 0, "dfden <= 0")
    s0, s1 = _subseeds(seed, 2)
    x = _native_draw("standard_gamma", size, chunk_size, s0, a / 2.0) * (2.0 / a)
    y = _native_draw("standard_gamma", size, chunk_size, s1, b / 2.0) * (2.0 / b)
    return x / y


def dirichlet(alpha: Any, size: Any = None, chunk_size: Any = None, seed: Optional[int] = None) -> Tensor:
    """Dirichlet vectors (the last axis, one per ``alpha``): independent gammas of the
    shapes ``alpha``, each vector divided by its sum. numpy switches to a beta-based
    method when every alpha is below 0.1; here, for alphas around 0.001 and below, all
    the gammas of a vector can underflow and give a NaN vector."""
    a = np.asarray(alpha.fetch() if isinstance(alpha, Tensor) else alpha, dtype=np.float64)
    if a.ndim != 1:
        raise ValueError("object too deep for desired array" if a.ndim > 1 else "alpha must be a sequence")
    if np.any(a <= 0) or np.any(np.isnan(a)):
        raise ValueError("alpha <= 0")
    shape = _size(size)
    seeds = _subseeds(seed, len(a))
    gs = [_native_draw("standard_gamma", shape, chunk_size, s, float(k)).reshape(shape + (1,)) for s, k in zip(seeds, a)]
    at = _at()
    g = at.concatenate(gs, axis=-1)
    return g / g.sum(axis=-1, keepdims=True)


# ------------------------------------------------------------ choices


def permutation(x: Any, chunk_size: Any = None, seed: Optional[int] = None) -> Tensor:
    """A random permutation of ``range(x)`` (an int), or of a tensor's first axis: the
    stable argsort of uniform floats, so it is one permutation whatever the chunking
    and the same for a seed."""
    from . import _to_tensor, argsort

    if isinstance(x, numbers.Integral):
        n = int(x)
        if n < 0:
            raise ValueError("negative dimensions are not allowed")
        return argsort(uniform(0.0, 1.0, size=n, chunk_size=chunk_size, seed=seed))
    t = _to_tensor(x)
    if t.ndim == 0:
        raise IndexError("x must be an integer or at least 1-dimensional")
    n = t._known_shape("permutation")[0]
    chunk = chunk_size if chunk_size is not None else (t.chunks[0][0] if t.chunks[0] else 1)
    return t.take(permutation(n, chunk_size=chunk, seed=seed), axis=0)


def shuffle(x: Tensor, seed: Optional[int] = None) -> None:
    """Shuffles a tensor's first axis in place (it is rebound to the shuffled expression,
    as ``Tensor.sort`` does)."""
    from . import Tensor as _Tensor

    if not isinstance(x, _Tensor):
        raise TypeError("shuffle takes an ares tensor (it is shuffled in place)")
    shuffled = permutation(x, seed=seed)
    x._t = shuffled._t
    x._session = None


def choice(
    a: Any,
    size: Any = None,
    replace: bool = True,
    p: Any = None,
    chunk_size: Any = None,
    seed: Optional[int] = None,
) -> Tensor:
    """Random elements of ``a`` (a 1-d tensor or array, or ``range(a)`` for an int):
    uniform with replacement; weighted by ``p`` (the cumulative weights searched for
    uniform floats); without replacement the first of a random permutation."""
    from . import _to_tensor, cumsum, searchsorted

    if isinstance(a, numbers.Integral):
        if a <= 0:
            raise ValueError("a must be a positive integer unless no samples are taken")
        pool = None
        n = int(a)
    else:
        pool = _to_tensor(a)
        if pool.ndim != 1:
            raise ValueError("a must be 1-dimensional")
        n = pool._known_shape("choice")[0]
        if n == 0:
            raise ValueError("a cannot be empty unless no samples are taken")
    shape = _size(size)
    count = int(np.prod(shape)) if shape else 1
    if not replace:
        if count > n:
            raise ValueError("Cannot take a larger sample than population when replace=False")
        if p is not None:
            raise NotImplementedError("choice with replace=False and p=")
        idx = permutation(n, seed=seed)[:count].reshape(shape)
    elif p is not None:
        w = np.asarray(p.fetch() if isinstance(p, Tensor) else p, dtype=np.float64)
        if w.ndim != 1 or w.shape[0] != n:
            raise ValueError("a and p must have same size")
        if (w < 0).any() or not np.isclose(w.sum(), 1.0):
            raise ValueError("probabilities are not non-negative" if (w < 0).any() else "probabilities do not sum to 1")
        edges = cumsum(_to_tensor(w))
        u = uniform(0.0, float(w.sum()), size=shape, chunk_size=chunk_size, seed=seed)
        idx = searchsorted(edges, u, side="right")
        idx = idx.clip(0, n - 1)
    else:
        idx = randint(0, n, size=shape, chunk_size=chunk_size, seed=seed)
    if pool is None:
        return idx if shape else idx.reshape(())
    return pool.take(idx.reshape(-1) if shape else idx.reshape(1), axis=0).reshape(shape)


# ------------------------------------------------------------ generator objects


def _seeded(fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """A method calling the module function ``fn`` with a fresh sub-seed of the object's
    state (``fn``'s signature without ``seed``)."""

    @functools.wraps(fn)
    def method(self: "_Source", *args: Any, **kwargs: Any) -> Tensor:
        if "seed" in kwargs:
            raise TypeError(f"{fn.__name__}() got an unexpected keyword argument 'seed' (the generator seeds it)")
        return fn(*args, seed=self._next(), **kwargs)

    sig = inspect.signature(fn)
    params = [p for p in sig.parameters.values() if p.name != "seed"]
    self_param = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    method.__signature__ = sig.replace(parameters=[self_param] + params)  # type: ignore[attr-defined]
    del method.__wrapped__  # type: ignore[attr-defined]
    return method


class _Source:
    """What :class:`Generator` and :class:`RandomState` share: each call draws a 64-bit
    seed from the object's own numpy generator and passes it to the module function of
    the same name, so calls give different tensors and one seed the same sequence of
    tensors (the tensors' values are not numpy's, see the module's doc)."""

    _proto: Any = None
    _rng: Any

    def _next(self) -> int:
        raise NotImplementedError

    uniform = _seeded(uniform)
    normal = _seeded(normal)
    exponential = _seeded(exponential)
    laplace = _seeded(laplace)
    logistic = _seeded(logistic)
    lognormal = _seeded(lognormal)
    gumbel = _seeded(gumbel)
    rayleigh = _seeded(rayleigh)
    pareto = _seeded(pareto)
    weibull = _seeded(weibull)
    power = _seeded(power)
    standard_cauchy = _seeded(standard_cauchy)
    triangular = _seeded(triangular)
    geometric = _seeded(geometric)
    wald = _seeded(wald)
    logseries = _seeded(logseries)

    def __getattr__(self, name: str) -> Any:
        # numpy's other methods (poisson, gamma, ...) forward to the module function of
        # the same name once it exists, else are named as unsupported (an AttributeError
        # too, so hasattr answers False).
        cls = type(self).__name__
        if name.startswith("_") or not hasattr(self._proto, name):
            raise AttributeError(f"'{cls}' object has no attribute {name!r}")
        fn = globals().get(name)
        if callable(fn) and not isinstance(fn, type):
            return functools.partial(_forward, self, fn)
        raise Unsupported(f"ares.tensor.random.{cls}.{name} is not supported (numpy.random.{cls}.{name} has no tiled form here yet)")


def _forward(source: _Source, fn: Callable[..., Tensor], *args: Any, **kwargs: Any) -> Tensor:
    if "seed" in kwargs:
        raise TypeError(f"{fn.__name__}() got an unexpected keyword argument 'seed' (the generator seeds it)")
    return fn(*args, seed=source._next(), **kwargs)


def _float_dtype(dtype: Any, what: str) -> np.dtype:
    dt = np.dtype(dtype)
    if dt not in (np.dtype(np.float64), np.dtype(np.float32)):
        raise TypeError(f"Unsupported dtype {dt!r} for {what}")
    return dt


def _no_out(out: Any) -> None:
    if out is not None:
        raise NotImplementedError("out=: tensors are immutable; use the result")


def _along(x: Any, axis: int, f: Callable[[Tensor], Tensor]) -> Tensor:
    """``f`` (which permutes the first axis) applied along ``axis``."""
    from . import _axis_of, _to_tensor

    t = _to_tensor(x)
    if t.ndim == 0:
        raise np.exceptions.AxisError(axis, 0)
    (ax,) = _axis_of(axis, t.ndim)  # type: ignore[misc]
    if ax == 0:
        return f(t)
    return f(t.swapaxes(0, ax)).swapaxes(0, ax)


class Generator(_Source):
    """numpy 2's ``Generator`` over lazy tensors (:func:`default_rng` makes one). Its
    state is a numpy ``Generator`` seeded alike (any seed numpy's ``default_rng`` takes);
    each call draws a 64-bit seed from it for the tensor, so the same seed gives the same
    sequence of tensors, whatever their chunking, but not numpy's values. Methods take
    numpy's arguments and ``chunk_size=``. numpy's methods not built here forward to the
    module function of the same name if there is one (``poisson``, ``gamma``, ...), else
    raise :class:`Unsupported`."""

    _proto = np.random.Generator

    def __init__(self, seed: Any = None) -> None:
        self._rng = seed._rng if isinstance(seed, Generator) else np.random.default_rng(seed)

    def __repr__(self) -> str:
        return f"Generator({type(self._rng.bit_generator).__name__}) over ares tensors"

    def _next(self) -> int:
        return int(self._rng.integers(0, 2**64, dtype=np.uint64))

    @property
    def bit_generator(self) -> Any:
        """The numpy bit generator the sub-seeds are drawn from."""
        return self._rng.bit_generator

    def spawn(self, n_children: int) -> List["Generator"]:
        """Independent child generators (numpy's ``spawn`` of the state)."""
        return [Generator(g) for g in self._rng.spawn(n_children)]

    def random(self, size: Any = None, dtype: Any = np.float64, out: Any = None, *, chunk_size: Any = None) -> Tensor:
        """Floats uniform on ``[0, 1)``."""
        _no_out(out)
        dt = _float_dtype(dtype, "random")
        t = random_sample(size=size, chunk_size=chunk_size, seed=self._next())
        return t if dt == np.float64 else t.astype(dt)

    def standard_normal(self, size: Any = None, dtype: Any = np.float64, out: Any = None, *, chunk_size: Any = None) -> Tensor:
        """Standard normal floats."""
        _no_out(out)
        dt = _float_dtype(dtype, "standard_normal")
        t = standard_normal(size=size, chunk_size=chunk_size, seed=self._next())
        return t if dt == np.float64 else t.astype(dt)

    def standard_exponential(
        self, size: Any = None, dtype: Any = np.float64, method: str = "zig", out: Any = None, *, chunk_size: Any = None
    ) -> Tensor:
        """Exponential floats of mean 1 (``method`` is accepted; both give inversion)."""
        _no_out(out)
        if method not in ("zig", "inv"):
            raise ValueError(f"{method} is not a valid method. Valid methods are 'zig' and 'inv'.")
        dt = _float_dtype(dtype, "standard_exponential")
        t = standard_exponential(size=size, chunk_size=chunk_size, seed=self._next())
        return t if dt == np.float64 else t.astype(dt)

    def uniform(self, low: Any = 0.0, high: Any = 1.0, size: Any = None, *, chunk_size: Any = None) -> Tensor:
        """Floats uniform on ``[low, high)`` (``high < low`` raises, as numpy's Generator)."""
        lo, hi = _raw(low), _raw(high)
        _check(np.less(np.subtract(hi, lo), 0), "high - low < 0")
        if _any(np.logical_not(np.isfinite(np.subtract(hi, lo)))):
            raise OverflowError("high - low range exceeds valid bounds")
        return uniform(lo, hi, size=size, chunk_size=chunk_size, seed=self._next())

    def integers(
        self,
        low: Any,
        high: Any = None,
        size: Any = None,
        dtype: Any = np.int64,
        endpoint: bool = False,
        *,
        chunk_size: Any = None,
    ) -> Tensor:
        """Integers on ``[low, high)`` (``[low, high]`` with ``endpoint``; ``[0, low)``
        when ``high`` is None), int64 unless ``dtype`` says otherwise."""
        if high is None:
            low, high = 0, low
            if _is_int_scalar(high) and (high < 0 if endpoint else high <= 0):
                raise ValueError("high < 0" if endpoint else "high <= 0")
        dt = np.dtype(dtype)
        if dt.kind not in "iub":
            raise TypeError(f"Unsupported dtype {dt!r} for integers")
        if _is_int_scalar(low) and _is_int_scalar(high):
            lo, hi = int(low), int(high)
            info = (0, 1) if dt.kind == "b" else (int(np.iinfo(dt).min), int(np.iinfo(dt).max))
            if lo < info[0]:
                raise ValueError(f"low is out of bounds for {dt.name}")
            if (hi if endpoint else hi - 1) > info[1]:
                raise ValueError(f"high is out of bounds for {dt.name}")
            if endpoint:
                if lo > hi:
                    raise ValueError("low > high")
                hi += 1
            elif lo >= hi:
                raise ValueError("low >= high")
            return randint(lo, hi, size=size, dtype=dt, chunk_size=chunk_size, seed=self._next())
        lo, hi = _raw(low), _raw(high)
        if endpoint:
            _check(np.greater(lo, hi), "low > high")
            hi = hi + 1.0
        return randint(lo, hi, size=size, dtype=dt, chunk_size=chunk_size, seed=self._next())

    def choice(
        self,
        a: Any,
        size: Any = None,
        replace: bool = True,
        p: Any = None,
        axis: int = 0,
        shuffle: bool = True,
        *,
        chunk_size: Any = None,
    ) -> Tensor:
        """Random elements (rows along ``axis`` for an n-d ``a``) of ``a``, or of
        ``range(a)`` for an int. ``shuffle=False`` is accepted (the sample is in a
        random order either way)."""
        from . import _axis_of, _to_tensor

        if isinstance(a, numbers.Integral):
            return choice(int(a), size=size, replace=replace, p=p, chunk_size=chunk_size, seed=self._next())
        t = _to_tensor(a)
        if t.ndim == 0:
            raise ValueError("a must be a sequence or an integer, not a 0-d array")
        (ax,) = _axis_of(axis, t.ndim)  # type: ignore[misc]
        if t.ndim == 1:
            return choice(t, size=size, replace=replace, p=p, chunk_size=chunk_size, seed=self._next())
        n = t._known_shape("choice")[ax]
        idx = choice(n, size=size, replace=replace, p=p, chunk_size=chunk_size, seed=self._next())
        shape = _size(size)
        rows = t.take(idx.reshape(-1) if shape else idx.reshape(1), axis=ax)
        out_shape = t.shape[:ax] + shape + t.shape[ax + 1 :]
        return rows.reshape(out_shape)

    def permutation(self, x: Any, axis: int = 0, *, chunk_size: Any = None) -> Tensor:
        """A random permutation of ``range(x)``, or of a tensor along ``axis``."""
        s = self._next()
        if isinstance(x, numbers.Integral):
            return permutation(int(x), chunk_size=chunk_size, seed=s)
        return _along(x, axis, lambda t: permutation(t, chunk_size=chunk_size, seed=s))

    def shuffle(self, x: Tensor, axis: int = 0) -> None:
        """Shuffles a tensor along ``axis`` in place (it is rebound, as ``shuffle`` is)."""
        if not isinstance(x, Tensor):
            raise TypeError("shuffle takes an ares tensor (it is shuffled in place)")
        s = self._next()
        shuffled = _along(x, axis, lambda t: permutation(t, seed=s))
        x._t = shuffled._t
        x._session = None


def default_rng(seed: Any = None) -> Generator:
    """A :class:`Generator` seeded with ``seed`` (anything numpy's ``default_rng`` takes;
    a :class:`Generator` is returned as it is)."""
    if isinstance(seed, Generator):
        return seed
    return Generator(seed)


class RandomState(_Source):
    """numpy's legacy ``RandomState`` over lazy tensors: its state is a numpy
    ``RandomState`` seeded alike (the same seeds accepted), from which each call draws
    the tensor's 64-bit seed; methods have the legacy names (``rand``, ``randn``,
    ``randint``, ``random_sample``, ...) and take ``chunk_size=``. The values are not
    numpy's. numpy's methods not built here forward to the module function of the same
    name if there is one, else raise :class:`Unsupported`."""

    _proto = np.random.RandomState

    def __init__(self, seed: Any = None) -> None:
        self._rng = np.random.RandomState(seed)

    def __repr__(self) -> str:
        return "RandomState(MT19937) over ares tensors"

    def _next(self) -> int:
        return int(self._rng.randint(0, 2**64, dtype=np.uint64))

    def seed(self, seed: Any = None) -> None:
        """Reseeds the state (as numpy's ``RandomState.seed``)."""
        self._rng.seed(seed)

    def rand(self, *shape: int, chunk_size: Any = None) -> Tensor:
        """Floats uniform on ``[0, 1)`` of the given shape."""
        return rand(*shape, chunk_size=chunk_size, seed=self._next())

    def randn(self, *shape: int, chunk_size: Any = None) -> Tensor:
        """Standard normal floats of the given shape."""
        return randn(*shape, chunk_size=chunk_size, seed=self._next())

    randint = _seeded(randint)
    random_sample = _seeded(random_sample)
    random = random_sample
    standard_normal = _seeded(standard_normal)
    standard_exponential = _seeded(standard_exponential)
    choice = _seeded(choice)

    def permutation(self, x: Any, *, chunk_size: Any = None) -> Tensor:
        """A random permutation of ``range(x)`` or of a tensor's first axis."""
        return permutation(x, chunk_size=chunk_size, seed=self._next())

    def shuffle(self, x: Tensor) -> None:
        """Shuffles a tensor's first axis in place."""
        shuffle(x, seed=self._next())


def __getattr__(name: str) -> Any:
    # A np.random function not built here is named as unsupported (an AttributeError too,
    # so hasattr answers False).
    if not name.startswith("_") and hasattr(np.random, name):
        raise Unsupported(f"ares.tensor.random.{name} is not supported (numpy.random.{name} has no tiled form here yet)")
    raise AttributeError(f"module 'ares.tensor.random' has no attribute {name!r}")
